/*
 * workload_read.c - reading a workload document's values (workload_int.h), for workload.c and
 * the suites' sections (sections.c): typed reads with ranges, where a missing key leaves the
 * default as it is, and errors that point at the file, line and key.
 */
#include "workload_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- errors ------------------------------------------------------------------------------- */

/* Fills err for a problem with no node to point at: "file: key: msg". */
int hw__errorf(toml_error *err, const char *file, const char *key, const char *fmt, ...)
{
	va_list ap;
	if (!err)
		return -1;
	memset(err, 0, sizeof(*err));
	snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
	snprintf(err->key, sizeof(err->key), "%s", key ? key : "");
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	snprintf(err->text, sizeof(err->text), "%s%s%s%s%s", err->file, err->file[0] ? ": " : "",
	         err->key, err->key[0] ? ": " : "", err->msg);
	return -1;
}

/* An error about the value at path in doc: at its node if it is there, else naming the file. */
int hw__fail_at(toml_error *err, const toml_doc *doc, const char *path, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	const toml_node *n = toml_find(toml_root(doc), path);
	if (n)
		return toml_error_at(err, n, "%s", msg);
	return hw__errorf(err, toml_doc_name(doc), path, "%s", msg);
}

/* ---- typed reads: a missing key leaves *out (the default) as it is --------------------------- */

int hw__get_i64(const toml_doc *d, const char *path, int64_t min, int64_t max, int64_t *out,
                toml_error *err)
{
	int64_t v;
	int rc = toml_get_int_range(d, path, min, max, &v, err);
	if (rc == TOML_OK)
		*out = v;
	return rc == TOML_ERR ? -1 : 0;
}

int hw__get_u64(const toml_doc *d, const char *path, int64_t min, int64_t max, uint64_t *out,
                toml_error *err)
{
	int64_t v = 0;
	int rc = toml_get_int_range(d, path, min, max, &v, err);
	if (rc == TOML_OK)
		*out = (uint64_t)v;
	return rc == TOML_ERR ? -1 : 0;
}

int hw__get_u32(const toml_doc *d, const char *path, int64_t min, int64_t max, uint32_t *out,
                toml_error *err)
{
	uint64_t v = *out;
	if (hw__get_u64(d, path, min, max, &v, err))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int hw__get_bool(const toml_doc *d, const char *path, int *out, toml_error *err)
{
	return toml_get_bool(d, path, out, err) == TOML_ERR ? -1 : 0;
}

int hw__get_float(const toml_doc *d, const char *path, double min, double max, double *out,
                  toml_error *err)
{
	double v;
	int rc = toml_get_float(d, path, &v, err);
	if (rc == TOML_MISSING)
		return 0;
	if (rc)
		return -1;
	if (!(v >= min && v <= max))
		return hw__fail_at(err, d, path, "%g is out of range (expected %g to %g)", v, min, max);
	*out = v;
	return 0;
}

/* A list of distinct integers in [min, max], 1 to HW_MAX_LIST of them. */
int hw__get_int_list(const toml_doc *d, const char *path, int64_t min, int64_t max, uint64_t *out,
                     int *n, toml_error *err)
{
	const toml_node *a;
	uint64_t tmp[HW_MAX_LIST];
	int rc = toml_get_array(d, path, &a, err);
	if (rc == TOML_MISSING)
		return 0;
	if (rc)
		return -1;
	size_t len = toml_len(a);
	if (len == 0)
		return toml_error_at(err, a, "the list is empty (it needs at least one entry)");
	if (len > HW_MAX_LIST)
		return toml_error_at(err, a, "the list has %zu entries (at most %d)", len, HW_MAX_LIST);
	for (size_t i = 0; i < len; i++) {
		const toml_node *e = toml_at(a, i);
		int64_t v;
		if (toml_node_int(e, &v, err))
			return -1;
		if (v < min || v > max)
			return toml_error_at(
			    err, e, "%" PRId64 " is out of range (expected %" PRId64 " to %" PRId64 ")", v, min,
			    max);
		for (size_t j = 0; j < i; j++)
			if (tmp[j] == (uint64_t)v)
				return toml_error_at(err, e, "%" PRId64 " is listed twice (also at [%zu])", v, j);
		tmp[i] = (uint64_t)v;
	}
	memcpy(out, tmp, len * sizeof(*tmp));
	*n = (int)len;
	return 0;
}

int hw__get_u32_list(const toml_doc *d, const char *path, int64_t max, uint32_t *out, int *n,
                     toml_error *err)
{
	uint64_t tmp[HW_MAX_LIST];
	int m = -1;
	if (hw__get_int_list(d, path, 1, max, tmp, &m, err))
		return -1;
	for (int i = 0; i < m; i++)
		out[i] = (uint32_t)tmp[i];
	if (m >= 0)
		*n = m;
	return 0;
}

int hw__name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

/* A list of distinct names from names[0..n) as a bit mask; `what` is "operation", "pattern". */
int hw__get_name_list(const toml_doc *d, const char *path, const char *const *names, int n,
                      const char *what, unsigned *mask, toml_error *err)
{
	const toml_node *a;
	unsigned m = 0;
	int rc = toml_get_array(d, path, &a, err);
	if (rc == TOML_MISSING)
		return 0;
	if (rc)
		return -1;
	if (toml_len(a) == 0)
		return toml_error_at(err, a,
		                     "the list is empty (it needs at least one %s; to skip the suite, "
		                     "set enabled = false)",
		                     what);
	for (size_t i = 0; i < toml_len(a); i++) {
		const toml_node *e = toml_at(a, i);
		const char *s;
		if (toml_node_string(e, &s, NULL, err))
			return -1;
		int k = hw__name_index(names, n, s);
		if (k < 0) {
			char all[256] = "";
			size_t used = 0;
			for (int j = 0; j < n && used < sizeof(all); j++)
				used += (size_t)snprintf(all + used, sizeof(all) - used, "%s%s", j ? ", " : "",
				                         names[j]);
			return toml_error_at(err, e, "unknown %s '%.64s' (expected one of: %s)", what, s, all);
		}
		if (m & 1u << k)
			return toml_error_at(err, e, "'%s' is listed twice", s);
		m |= 1u << k;
	}
	*mask = m;
	return 0;
}

/* A table at path: TOML_OK with *t (checked against allowed keys), TOML_MISSING, or -1. */
int hw__get_table(const toml_doc *d, const char *path, const char *const *allowed,
                  const toml_node **t, toml_error *err)
{
	int rc = toml_get_table(d, path, t, err);
	if (rc == TOML_ERR)
		return -1;
	if (rc == TOML_OK && toml_check_keys(*t, allowed, err))
		return -1;
	return rc;
}
