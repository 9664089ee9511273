/*
 * error.c - stable error codes and the per-thread last-error message.
 */
#include "internal.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Where a message longer than the buffer is cut: its head and its tail are kept around " ... "
 * (a message puts its reason last, after the names it repeats, which may be long), each cut
 * moved back to the start of a UTF-8 character. */
#define TAIL_KEPT 320
#define ELLIPSIS " ... "

static size_t char_start(const char *s, size_t at)
{
	/* At most 3 back: a UTF-8 character has at most 3 continuation bytes (other bytes are cut
	 * where they fall, which also bounds the tail below). */
	for (int i = 0; i < 3 && at > 0 && ((unsigned char)s[at] & 0xC0) == 0x80; i++)
		at--;
	return at;
}

int prolly_set_error(int err, const char *fmt, ...)
{
	/* Formatted apart from last_error, so that an argument may be prolly_last_error() itself
	 * ("proof: %s" of the message before). */
	char head[sizeof(last_error)];
	va_list ap, again;
	va_start(ap, fmt);
	va_copy(again, ap);
	int n = vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	if (n < 0) { /* an output error: no message rather than an undefined one */
		head[0] = 0;
		n = 0;
	}
	if ((size_t)n < sizeof(head)) {
		memcpy(last_error, head, (size_t)n + 1);
		va_end(again);
		return err;
	}
	/* Too long: the whole message once more for its tail (without it, the head alone). */
	char *whole = malloc((size_t)n + 1);
	if (whole)
		vsnprintf(whole, (size_t)n + 1, fmt, again);
	va_end(again);
	if (!whole) {
		memcpy(last_error, head, sizeof(last_error));
		return err;
	}
	size_t t = char_start(whole, (size_t)n - TAIL_KEPT), tail = (size_t)n - t;
	size_t h = char_start(whole, sizeof(last_error) - 1 - (sizeof(ELLIPSIS) - 1) - tail);
	assert(h + sizeof(ELLIPSIS) - 1 + tail < sizeof(last_error) && h < t);
	memcpy(last_error, whole, h);
	memcpy(last_error + h, ELLIPSIS, sizeof(ELLIPSIS) - 1);
	memcpy(last_error + h + sizeof(ELLIPSIS) - 1, whole + t, tail + 1);
	free(whole);
	return err;
}
