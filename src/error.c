/*
 * error.c - stable error codes and the per-thread last-error message.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

const char *prolly_strerror(int err)
{
	switch (err) {
	case PROLLY_OK: return "success";
	case PROLLY_ENOTFOUND: return "not found";
	case PROLLY_ECONFLICT: return "conflict: the ref moved or a gc ran meanwhile";
	case PROLLY_ECORRUPT: return "corrupt data";
	case PROLLY_ETOOBIG: return "key or value too large";
	case PROLLY_EINVAL: return "invalid argument";
	case PROLLY_ENOMEM: return "out of memory";
	case PROLLY_ESTORE: return "store failure";
	case PROLLY_EFULL: return "store full";
	case PROLLY_EVERSION: return "format or schema version not supported";
	case PROLLY_ETIMEOUT: return "timed out";
	case PROLLY_EMERGE: return "merge conflict";
	case PROLLY_EUNSUPPORTED: return "not supported by this store";
	case PROLLY_EPRUNED: return "history was removed by retention";
	case PROLLY_ITEROVER: return "no more items";
	default: return "unknown error";
	}
}

const char *prolly_last_error(void)
{
	return last_error;
}

int prolly_set_error(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}
