/*
 * open.c - opening a store by URL, and closing one that no handle owns.
 *
 *   "mem:"                          a new memory store
 *   "lmdb:PATH"                     the LMDB store in directory PATH (created if missing)
 *   "postgres://...", "postgresql://...", or a libpq conninfo string ("host=... dbname=...")
 *                                   PostgreSQL (pg.c; the schema is created if missing)
 */
#include "internal.h"

static int has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

int prolly_store_open(prolly_store **out, const char *url)
{
	if (!out)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_open: out is NULL");
	if (!url)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_open: the store URL is NULL");
	if (strcmp(url, "mem:") == 0)
		return prolly_store_mem_new(out);
	if (has_prefix(url, "lmdb:")) {
		const char *path = url + strlen("lmdb:");
		if (!*path)
			return prolly_set_error(PROLLY_EINVAL,
			                        "store URL '%s' names no directory (use lmdb:PATH)", url);
		return prolly_store_lmdb_open(out, path, 0);
	}
	if (has_prefix(url, "postgres://") || has_prefix(url, "postgresql://") || strchr(url, '='))
		return prolly_store_pg_open(out, url, NULL);
	char shown[512]; /* it may still hold a password, as in "POSTGRESQL://u:SECRET@h" */
	prolly_redact_url(shown, sizeof(shown), url);
	return prolly_set_error(PROLLY_EINVAL,
	                        "unknown store URL '%s': use mem:, lmdb:PATH, postgres://..., "
	                        "postgresql://... or a libpq conninfo string (host=... dbname=...)",
	                        shown);
}

void prolly_store_close(prolly_store *st)
{
	if (st && st->close)
		st->close(st);
}
