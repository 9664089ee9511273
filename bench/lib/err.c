/*
 * err.c - bench_seterr (err.h).
 */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

void bench_seterr(char *err, size_t errn, const char *fmt, ...)
{
	va_list ap;
	if (!err || !errn)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errn, fmt, ap);
	va_end(ap);
}
