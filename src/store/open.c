/*
 * open.c - opening a store (and a handle on it: prolly_open) by URL.
 *
 *   "mem:"                          a new memory store
 *   "lmdb:PATH"                     the LMDB store in directory PATH (created if missing and
 *                                   PROLLY_OPEN_CREATE)
 *   "postgres://...", "postgresql://...", or a libpq conninfo string ("host=... dbname=...")
 *                                   PostgreSQL (pg.c; the schema is created if missing)
 */
#include "pq.h"
#include "store_int.h"

#include <stdlib.h>

static int has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The store a URL names, by its form alone. */
enum { URL_OTHER, URL_MEM, URL_LMDB, URL_PG };

static int url_kind(const char *url)
{
	if (has_prefix(url, "lmdb:"))
		return URL_LMDB;
	if (strcmp(url, "mem:") == 0)
		return URL_MEM;
	if (has_prefix(url, "postgres://") || has_prefix(url, "postgresql://") || strchr(url, '='))
		return URL_PG;
	return URL_OTHER;
}

/* Whether libpq's parse of a connection string holds a non-empty password or sslpassword. */
static int parsed_password(const PQconninfoOption *opts)
{
	for (const PQconninfoOption *o = opts; o->keyword; o++)
		if (o->val && o->val[0] &&
		    (strcmp(o->keyword, "password") == 0 || strcmp(o->keyword, "sslpassword") == 0))
			return 1;
	return 0;
}

int prolly__store_url_check(int *has_password, const char *url, const char *what)
{
	char *err = NULL, msg[600];
	PQconninfoOption *opts;
	int rc, pw = 0;
	switch (url_kind(url)) {
	case URL_MEM: break;
	case URL_LMDB:
		if (!url[strlen("lmdb:")])
			return prolly_set_error(PROLLY_EINVAL, "the %s names no directory (use lmdb:PATH)",
			                        what);
		break;
	case URL_PG:
		if ((rc = prolly__pq_load())) /* PQ1 */
			return rc;
		if ((opts = PQconninfoParse(url, &err))) {
			pw = parsed_password(opts);
			PQconninfoFree(opts);
			break;
		}
		/* libpq's reason may quote pieces of url: through the one redactor */
		prolly_redact_message(msg, sizeof(msg), err ? err : "out of memory", url);
		PQfreemem(err);
		return prolly_set_error(PROLLY_EINVAL, "the %s is no connection string libpq accepts: %s",
		                        what, msg);
	default: /* not quoted: without a known form, nothing says where a secret in it would be */
		return prolly_set_error(PROLLY_EINVAL,
		                        "the %s names no store: use mem:, lmdb:PATH, postgres://..., "
		                        "postgresql://... or a libpq conninfo string (host=... dbname=...)",
		                        what);
	}
	if (has_password)
		*has_password = pw;
	return 0;
}

static int options_version(unsigned got)
{
	return prolly_set_error(PROLLY_EINVAL,
	                        "prolly_store_options.version is %u, which this library (prolly %s) "
	                        "does not know (it knows 1 to %u): initialise the struct with "
	                        "PROLLY_STORE_OPTIONS_INIT or prolly_store_options_init()",
	                        got, PROLLY_VERSION_STRING, PROLLY_STORE_OPTIONS_VERSION);
}

/* ---- a read-only view of another store (PROLLY_OPEN_READONLY where the store has no read-only
 * mode of its own: PostgreSQL, memory). Reads pass through; writes that carry nodes or refs, and
 * gc, are refused. The empty write the engine sends to learn the gc epoch passes through. ---- */

typedef struct ro_store {
	prolly_store base;
	prolly_store *inner;
} ro_store;

static prolly_store *inner_of(prolly_store *st)
{
	return ((ro_store *)st)->inner;
}

static int ro_refuse(prolly_store *st, const char *what)
{
	return prolly_set_error(PROLLY_EUNSUPPORTED,
	                        "%s: the store was opened read-only (PROLLY_OPEN_READONLY): %s refused",
	                        inner_of(st)->kind, what);
}

static int ro_get_nodes(prolly_store *st, const prolly_id *ids, size_t n,
                        prolly_store_found_fn found, void *payload)
{
	return inner_of(st)->get_nodes(inner_of(st), ids, n, found, payload);
}

static int ro_has_nodes(prolly_store *st, const prolly_id *ids, size_t n, unsigned char *out)
{
	return inner_of(st)->has_nodes(inner_of(st), ids, n, out);
}

static int ro_write(prolly_store *st, prolly_store_write *w)
{
	if (w && (w->n_nodes || w->n_refs))
		return ro_refuse(st, "a write is");
	return inner_of(st)->write(inner_of(st), w);
}

static int ro_get_ref(prolly_store *st, const char *name, prolly_id *out, uint64_t *epoch)
{
	return inner_of(st)->get_ref(inner_of(st), name, out, epoch);
}

static int ro_get_refs(prolly_store *st, const char *const *names, size_t n, prolly_id *out,
                       unsigned char *found, uint64_t *epoch)
{
	return inner_of(st)->get_refs(inner_of(st), names, n, out, found, epoch);
}

static int ro_list_refs(prolly_store *st, const char *prefix, prolly_store_ref_fn fn, void *payload)
{
	return inner_of(st)->list_refs(inner_of(st), prefix, fn, payload);
}

static int ro_gc(prolly_store *st, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep, void *payload,
                 prolly_gc_result *out)
{
	(void)mark, (void)keep, (void)payload, (void)out;
	return ro_refuse(st, "gc is");
}

static int ro_stat(prolly_store *st, uint64_t *nodes, uint64_t *bytes)
{
	return inner_of(st)->stat(inner_of(st), nodes, bytes);
}

static int ro_get_ref_objects(prolly_store *st, const char *name, size_t follow, prolly_id *out,
                              uint64_t *epoch, prolly_store_found_fn found, void *payload)
{
	return inner_of(st)->get_ref_objects(inner_of(st), name, follow, out, epoch, found, payload);
}

static int ro_get_ref_objects_known(prolly_store *st, const char *name, size_t follow,
                                    const prolly_id *known, prolly_id *out, uint64_t *epoch,
                                    prolly_store_found_fn found, void *payload)
{
	return inner_of(st)->get_ref_objects_known(inner_of(st), name, follow, known, out, epoch, found,
	                                           payload);
}

static int ro_get_ancestors(prolly_store *st, const prolly_id *ids, size_t n, size_t limit,
                            const prolly_store_commit_layout *commit, prolly_store_obj_fn found,
                            void *payload)
{
	return inner_of(st)->get_ancestors(inner_of(st), ids, n, limit, commit, found, payload);
}

static int ro_find_ids(prolly_store *st, const prolly_id *lo, const prolly_id *hi, size_t limit,
                       prolly_store_obj_fn found, void *payload)
{
	return inner_of(st)->find_ids(inner_of(st), lo, hi, limit, found, payload);
}

static void ro_close(prolly_store *st)
{
	prolly_store_close(inner_of(st));
	free(st);
}

/* Wraps *st, a built-in store of this library's interface version (so every member is there to
 * read), taking it over, also on failure. */
static int wrap_readonly(prolly_store **st)
{
	prolly_store *in = *st;
	ro_store *r = calloc(1, sizeof(*r));
	if (!r) {
		prolly_store_close(in);
		*st = NULL;
		return prolly_set_error(PROLLY_ENOMEM, "out of memory");
	}
	r->inner = in;
	r->base.version = PROLLY_STORE_VERSION;
	r->base.kind = in->kind;
	r->base.get_nodes = ro_get_nodes;
	r->base.write = ro_write;
	r->base.get_ref = ro_get_ref;
	r->base.list_refs = ro_list_refs;
	r->base.gc = ro_gc;
	r->base.stat = in->stat ? ro_stat : NULL;
	r->base.close = ro_close;
	r->base.get_ref_objects = in->get_ref_objects ? ro_get_ref_objects : NULL;
	r->base.flags = in->flags;
	r->base.get_ancestors = in->get_ancestors ? ro_get_ancestors : NULL;
	r->base.find_ids = in->find_ids ? ro_find_ids : NULL;
	r->base.has_nodes = in->has_nodes ? ro_has_nodes : NULL;
	r->base.get_ref_objects_known = in->get_ref_objects_known ? ro_get_ref_objects_known : NULL;
	r->base.get_refs = in->get_refs ? ro_get_refs : NULL;
	r->base.node_size = in->node_size;
	*st = &r->base;
	return 0;
}

int prolly_store_options_init(prolly_store_options *opts, unsigned version)
{
	if (!opts)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_options_init: NULL argument");
	if (version != PROLLY_STORE_OPTIONS_VERSION)
		return options_version(version);
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	return 0;
}

int prolly_store_open_opts(prolly_store **out, const char *url, const prolly_store_options *opts)
{
	prolly_store *st = NULL;
	int rc;
	unsigned flags = opts ? opts->flags : 0, node_size = opts ? opts->node_size : 0;
	if (opts && opts->version != PROLLY_STORE_OPTIONS_VERSION)
		return options_version(opts->version);
	if (!prolly_node_size_valid(node_size))
		return prolly_set_error(PROLLY_EINVAL,
		                        "prolly_store_open: node size %u is not a power of two from %u to "
		                        "%u",
		                        node_size, PROLLY_NODE_SIZE_MIN, PROLLY_NODE_SIZE_MAX);
	if (!out)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_open: out is NULL");
	if (!url)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_open: the store URL is NULL");
	if (flags & ~(PROLLY_OPEN_READONLY | PROLLY_OPEN_CREATE | PROLLY_OPEN_PREVIOUS))
		return prolly_set_error(
		    PROLLY_EINVAL,
		    "prolly_store_open: flags 0x%x hold bits this library does not know (0x%x)", flags,
		    flags & ~(PROLLY_OPEN_READONLY | PROLLY_OPEN_CREATE | PROLLY_OPEN_PREVIOUS));
	if ((flags & PROLLY_OPEN_READONLY) && (flags & PROLLY_OPEN_CREATE))
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_open: PROLLY_OPEN_READONLY and "
		                                       "PROLLY_OPEN_CREATE exclude each other");
	int kind = url_kind(url);
	if (kind == URL_LMDB) {
		const char *path = url + strlen("lmdb:");
		if (!*path)
			return prolly_set_error(PROLLY_EINVAL,
			                        "store URL '%s' names no directory (use lmdb:PATH)", url);
		return prolly__lmdb_open(out, path, 0, flags, node_size);
	}
	if (flags & PROLLY_OPEN_PREVIOUS)
		return prolly_set_error(PROLLY_EINVAL,
		                        "prolly_store_open: PROLLY_OPEN_PREVIOUS is for LMDB stores only");
	if (kind == URL_MEM) {
		if ((rc = prolly_store_mem_new(&st)) == 0)
			st->node_size = prolly__node_size_member(node_size);
	} else if (kind == URL_PG) {
		/* Only a creating open creates (or migrates) the schema. */
		prolly_pg_options po = PROLLY_PG_OPTIONS_INIT;
		po.no_create = !(flags & PROLLY_OPEN_CREATE);
		po.node_size = node_size;
		rc = prolly_store_pg_open(&st, url, &po);
	} else {
		char shown[512]; /* it may still hold a password, as in "POSTGRESQL://u:SECRET@h" */
		prolly_redact_url(shown, sizeof(shown), url);
		return prolly_set_error(PROLLY_EINVAL,
		                        "unknown store URL '%s': use mem:, lmdb:PATH, postgres://..., "
		                        "postgresql://... or a libpq conninfo string (host=... dbname=...)",
		                        shown);
	}
	if (!rc && (flags & PROLLY_OPEN_READONLY))
		rc = wrap_readonly(&st);
	if (!rc)
		*out = st;
	return rc;
}

int prolly_store_open_ex(prolly_store **out, const char *url, unsigned flags)
{
	prolly_store_options o = PROLLY_STORE_OPTIONS_INIT;
	o.flags = flags;
	return prolly_store_open_opts(out, url, &o);
}

int prolly_store_open(prolly_store **out, const char *url)
{
	return prolly_store_open_ex(out, url, PROLLY_OPEN_CREATE);
}

int prolly_open_ex(prolly_db **out, const char *url, const prolly_options *opts, unsigned flags)
{
	prolly_store *st;
	if (!out)
		return prolly_set_error(PROLLY_EINVAL, "prolly_open: NULL out");
	int rc = prolly__options_check(opts); /* before the store is opened (or created) */
	if (rc || (rc = prolly_store_open_ex(&st, url, flags)))
		return rc;
	return prolly_db_new(out, st, opts);
}

int prolly_open(prolly_db **out, const char *url, const prolly_options *opts)
{
	return prolly_open_ex(out, url, opts, PROLLY_OPEN_CREATE);
}
