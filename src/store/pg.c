/*
 * pg.c - the PostgreSQL store, through libpq: open and close, the reads, the counters.
 *
 * Tables (in a configurable schema, default public; DDL in init_tmpl in pg_sql.c and
 * docs/postgres.md):
 *   nodes (id bytea primary key, node bytea)   STORAGE MAIN, COMPRESSION lz4: compressed, in-line
 *   refs  (name bytea primary key, value bytea) names as bytes: byte order is memcmp order
 *   meta  (key text primary key, value bigint)  rows schema_version (6) and epoch, and
 *                                               node_size in a store of another node size than
 *                                               4096 (schema version 7)
 * plus small PL/pgSQL functions for the write (pg_write.c).
 *
 * The store is split by concern (shared declarations in pg_int.h): this file holds the vtable's
 * node reads (get_nodes, has_nodes, get_ancestors, find_ids) and stat, open and close, the
 * counters and the test hook; pg_refs.c the ref reads; pg_sql.c the statements, the schema and
 * its migration; pg_pipe.c pipelines; pg_pool.c connections and the pool; pg_write.c the write;
 * pg_gc.c the gc.
 *
 * Open connects once: the server answers, the schema exists (a missing one is created unless
 * no_create), an older version is migrated (unless no_create, or the role may not) and a newer
 * one refused; it decides whether writes use prolly_write (version 2 and later) or the version-1
 * pipeline. Every read is one round trip on a connection from the pool (get_nodes: one statement
 * per read_chunk ids). get_nodes and get_ref_objects hand rows to found() as they arrive; list_refs
 * calls back from a copy, after giving the connection back (and, on the gc's thread while mark()
 * runs, reports what it listed to the gc).
 */
#include "pg_int.h"

#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------------------------ */
/* Reads                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* A node read and its rows: (ordinality, node) answering ids by index (get_nodes), or (id, node)
 * reported by id (get_ancestors, found_obj set). Statement q for each chunk of ids, with the
 * n_more parameters more[] after the ids. */
typedef struct gctx {
	pg_store *st;
	int q, n_more;
	const char *what;
	const prolly_id *ids;
	const char *const *more;
	const int *more_len;
	size_t n, chunk;
	prolly_store_found_fn found;
	prolly_store_obj_fn found_obj;
	void *payload;
	uint64_t rows, bytes;
} gctx;

static int get_fn(void *ctx, size_t qi, const PGresult *r)
{
	gctx *g = ctx;
	int rows = PQntuples(r);
	for (int i = 0; i < rows; i++) {
		uint64_t ord;
		prolly_id id;
		int rc;
		if (PQgetisnull(r, i, 1))
			return prolly_set_error(PROLLY_ESTORE, "postgres: a node row without its node");
		size_t len = (size_t)PQgetlength(r, i, 1);
		const char *node = PQgetvalue(r, i, 1);
		if (g->found_obj) {
			if (PQgetisnull(r, i, 0) || PQgetlength(r, i, 0) != PROLLY_ID_SIZE)
				return prolly_set_error(PROLLY_ESTORE, "postgres: get_ancestors: a malformed row");
			memcpy(id.bytes, PQgetvalue(r, i, 0), PROLLY_ID_SIZE);
			rc = g->found_obj(g->payload, &id, node, len);
		} else {
			if (prolly__pg_read_int8(r, i, 0, &ord) || ord == 0)
				return prolly_set_error(PROLLY_ESTORE, "postgres: get_nodes: a malformed row");
			size_t idx = qi * g->chunk + (size_t)(ord - 1);
			if (idx >= g->n)
				return prolly_set_error(PROLLY_ESTORE, "postgres: get_nodes: a row out of range");
			rc = g->found(g->payload, idx, node, len);
		}
		g->rows++;
		g->bytes += len;
		if (rc)
			return rc;
	}
	return 0;
}

/* One run of a node read (read_once_fn): the ids in statements of at most g->chunk ids each, all
 * in one round trip; rows go to get_fn. */
static int read_ids_once(pg_store *st, void *ctx, uint64_t *handed)
{
	gctx *g = ctx;
	prolly_buf a = PROLLY_BUF_INIT;
	pgconn *c = NULL;
	pipe p;
	int rc;
	g->rows = g->bytes = 0;
	if ((rc = prolly__pg_pool_acquire(st, &c)))
		return rc;
	prolly__pg_pipe_init(&p, st, c, g->what, get_fn, g);
	for (size_t at = 0; at < g->n; at += g->chunk) {
		size_t m = PROLLY_MIN(g->chunk, g->n - at);
		if ((rc = prolly__pg_array_begin(&a, m, BYTEA_OID)))
			goto cleanup;
		for (size_t i = at; i < at + m; i++)
			if ((rc = prolly__pg_array_add(&a, g->ids[i].bytes, PROLLY_ID_SIZE)))
				goto cleanup;
		const char *vals[5] = {(const char *)a.ptr};
		int lens[5] = {(int)a.size};
		for (int i = 0; i < g->n_more && i < 4; i++) {
			vals[1 + i] = g->more[i];
			lens[1 + i] = g->more_len[i];
		}
		prolly__pg_pipe_send(&p, g->q, 1 + g->n_more, vals, lens);
	}
	rc = prolly__pg_pipe_run(&p);
	prolly__pg_cnt_add(&st->cnt.rows_read, g->rows);
	prolly__pg_cnt_add(&st->cnt.bytes_read, g->bytes);
	*handed = g->rows;
cleanup:
	prolly__pg_pool_done(st, c, &p);
	prolly_buf_dispose(&a);
	return rc;
}

static int pg_get_nodes(prolly_store *base, const prolly_id *ids, size_t n,
                        prolly_store_found_fn found, void *payload)
{
	pg_store *st = (pg_store *)base;
	gctx g;
	if (!n)
		return 0;
	if (!ids || !found)
		return prolly_set_error(PROLLY_EINVAL, "postgres: get_nodes without ids or callback");
	memset(&g, 0, sizeof(g));
	g.st = st;
	g.q = Q_GETNODES;
	g.what = "get_nodes";
	g.ids = ids;
	g.n = n;
	g.chunk = st->read_chunk;
	g.found = found;
	g.payload = payload;
	return prolly__pg_read(st, read_ids_once, &g);
}

/* has_nodes: the ids as one bytea[] (arr), the answers into out (one byte per id). */
typedef struct hctx {
	size_t n;
	unsigned char *out;
	const prolly_buf *arr;
} hctx;

static int has_fn(void *ctx, size_t qi, const PGresult *r)
{
	hctx *h = ctx;
	int rows = PQntuples(r);
	(void)qi;
	for (int i = 0; i < rows; i++) {
		uint64_t ord;
		if (prolly__pg_read_int8(r, i, 0, &ord) || ord == 0 || ord > h->n)
			return prolly_set_error(PROLLY_ESTORE, "postgres: has_nodes: a malformed row");
		h->out[ord - 1] = 1;
	}
	return 0;
}

/* One run of has_nodes (read_once_fn); its answers reach the caller only when it returns. */
static int has_once(pg_store *st, void *ctx, uint64_t *handed)
{
	hctx *h = ctx;
	const char *vals[1] = {(const char *)h->arr->ptr};
	int lens[1] = {(int)h->arr->size};
	(void)handed;
	memset(h->out, 0, h->n);
	return prolly__pg_run1(st, "has_nodes", Q_HASNODES, NULL, 1, vals, lens, has_fn, h);
}

/* One statement, one round trip, for the whole batch (Q_HASNODES: = ANY of an array). */
static int pg_has_nodes(prolly_store *base, const prolly_id *ids, size_t n, unsigned char *out)
{
	pg_store *st = (pg_store *)base;
	prolly_buf a = PROLLY_BUF_INIT;
	hctx h = {n, out, &a};
	int rc;
	if (!n)
		return 0;
	if (!ids || !out)
		return prolly_set_error(PROLLY_EINVAL, "postgres: has_nodes without ids or out");
	if ((rc = prolly__pg_array_begin(&a, n, BYTEA_OID)))
		goto cleanup;
	for (size_t i = 0; i < n; i++)
		if ((rc = prolly__pg_array_add(&a, ids[i].bytes, PROLLY_ID_SIZE)))
			goto cleanup;
	rc = prolly__pg_read(st, has_once, &h);
cleanup:
	prolly_buf_dispose(&a);
	return rc;
}

/* One recursive statement (pg_sql.c, Q_ANCESTORS). */
static int pg_get_ancestors(prolly_store *base, const prolly_id *ids, size_t n, size_t limit,
                            const prolly_store_commit_layout *commit, prolly_store_obj_fn found,
                            void *payload)
{
	pg_store *st = (pg_store *)base;
	unsigned char lim[8], count_at[4], parents_at[4];
	gctx g;
	int rc;
	if (!n)
		return 0;
	if (!ids || !found || !commit)
		return prolly_set_error(PROLLY_EINVAL,
		                        "postgres: get_ancestors without ids, layout or callback");
	if ((rc = prolly__store_layout_check(commit, "postgres")))
		return rc;
	prolly__pg_put_be64(lim, (uint64_t)PROLLY_MAX(limit, n));
	prolly__pg_put_be32(count_at, (uint32_t)commit->count_at);
	prolly__pg_put_be32(parents_at, (uint32_t)commit->parents_at);
	/* $2 the limit, $3 the magic, $4 and $5 the offsets (pg_sql.c, Q_ANCESTORS) */
	const char *more[4] = {(const char *)lim, (const char *)commit->magic, (const char *)count_at,
	                       (const char *)parents_at};
	int more_len[4] = {8, (int)commit->magic_size, 4, 4};
	memset(&g, 0, sizeof(g));
	g.st = st;
	g.q = Q_ANCESTORS;
	g.what = "get_ancestors";
	g.ids = ids;
	g.more = more;
	g.more_len = more_len;
	g.n_more = 4;
	g.n = g.chunk = n;
	g.found_obj = found;
	g.payload = payload;
	return prolly__pg_read(st, read_ids_once, &g);
}

int prolly__pg_two_int8_fn(void *ctx, size_t qi, const PGresult *r)
{
	sctx *x = ctx;
	(void)qi;
	if (PQntuples(r) == 1 && prolly__pg_read_int8(r, 0, 0, &x->a) == 0 &&
	    prolly__pg_read_int8(r, 0, 1, &x->b) == 0)
		x->have = 1;
	return 0;
}

/* One run of stat (read_once_fn): the count and bytes into the sctx. */
static int stat_once(pg_store *st, void *ctx, uint64_t *handed)
{
	sctx *x = ctx;
	(void)handed;
	memset(x, 0, sizeof(*x));
	return prolly__pg_run1(st, "stat", Q_STAT, NULL, 0, NULL, NULL, prolly__pg_two_int8_fn, x);
}

static int pg_stat(prolly_store *base, uint64_t *nodes, uint64_t *bytes)
{
	sctx x;
	int rc;
	if ((rc = prolly__pg_read((pg_store *)base, stat_once, &x)))
		return rc;
	if (!x.have)
		return prolly_set_error(PROLLY_ESTORE, "postgres: stat: a malformed row");
	if (nodes)
		*nodes = x.a;
	if (bytes)
		*bytes = x.b;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Open and close                                                                             */
/* ------------------------------------------------------------------------------------------ */

static void pg_close(prolly_store *base)
{
	pg_store *st = (pg_store *)base;
	if (!st)
		return;
	if (st->conns)
		for (unsigned i = 0; i < st->pool_size; i++)
			prolly__pg_conn_close(st, &st->conns[i], 0);
	free(st->conns);
	free(st->idle);
	for (int q = 0; q < N_QUERIES; q++)
		free(st->sql[q]);
	free(st->init_sql);
	free(st->validate_sql);
	free(st->version_sql);
	free(st->meta_literal);
	free(st->conninfo);
	free(st->password);
	free(st->sslpassword);
	free(st->target);
	free(st->schema);
	free(st->qs);
	pthread_mutex_destroy(&st->mu);
	pthread_mutex_destroy(&st->gc_mu);
	pthread_mutex_destroy(&st->epoch_mu);
	free(st);
}

/* Password (for scrubbing) and a printable target, from the connection string. */
static int parse_conninfo(pg_store *st, const char *conninfo)
{
	char *err = NULL, msg[600];
	PQconninfoOption *opts = PQconninfoParse(conninfo, &err);
	const char *host = NULL, *port = NULL, *db = NULL, *user = NULL, *hostaddr = NULL;
	if (!opts) {
		prolly_redact_message(msg, sizeof(msg), err ? err : "out of memory", conninfo);
		PQfreemem(err);
		return prolly_set_error(PROLLY_EINVAL, "postgres: cannot parse the connection string: %s",
		                        msg);
	}
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!o->val || !o->val[0])
			continue;
		if (strcmp(o->keyword, "password") == 0)
			st->password = strdup(o->val);
		else if (strcmp(o->keyword, "sslpassword") == 0)
			st->sslpassword = strdup(o->val);
		else if (strcmp(o->keyword, "host") == 0)
			host = o->val;
		else if (strcmp(o->keyword, "hostaddr") == 0)
			hostaddr = o->val;
		else if (strcmp(o->keyword, "port") == 0)
			port = o->val;
		else if (strcmp(o->keyword, "dbname") == 0)
			db = o->val;
		else if (strcmp(o->keyword, "user") == 0)
			user = o->val;
	}
	char t[512];
	snprintf(t, sizeof(t), "%s%s%s%s%s%s%s%s%s%s", db ? "database " : "the default database",
	         db ? db : "", host || hostaddr ? " on " : "",
	         host       ? host
	         : hostaddr ? hostaddr
	                    : "",
	         port ? ":" : "", port ? port : "", user ? " as " : "", user ? user : "", "", "");
	prolly__pg_redact(msg, sizeof(msg), t, st);
	st->target = strdup(msg);
	PQconninfoFree(opts);
	if (!st->target)
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
	return 0;
}

static int pg_find_ids(prolly_store *base, const prolly_id *lo, const prolly_id *hi, size_t limit,
                       prolly_store_obj_fn found, void *payload);

static int pg_options_version(unsigned v);

/* The open's reads, each run again as any read (prolly__pg_read): its first round trip
 * (prolly__pg_open_pipeline) on a connection acquired into c, and on the long way (a schema just
 * created or migrated) the setup of c's session (setup set), or of a new connection's when it ran
 * again. On failure c is given back, closed. */
typedef struct octx {
	pgconn *c;
	uint64_t version;
	int missing, setup;
} octx;

static int open_once(pg_store *st, void *ctx, uint64_t *handed)
{
	octx *o = ctx;
	int rc;
	(void)handed;
	if (!o->c) {
		if ((rc = prolly__pg_pool_acquire(st, &o->c)))
			return rc;
		if (o->setup)
			return 0; /* a run again: the acquire set the new connection's session up */
	}
	if (!o->setup)
		rc = prolly__pg_open_pipeline(st, o->c, &o->version, &o->missing);
	else
		rc = prolly__pg_conn_setup(st, o->c);
	if (rc) {
		prolly__pg_pool_release(st, o->c, 1);
		o->c = NULL;
	}
	return rc;
}

int prolly_store_pg_open(prolly_store **out, const char *conninfo, const prolly_pg_options *opts)
{
	pg_store *st = NULL;
	pgconn *c = NULL;
	int rc = 0;

	if (!out)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_pg_open: out is NULL");
	if (!conninfo)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_pg_open: conninfo is NULL");
	if (opts && (rc = pg_options_version(opts->version)))
		return rc;
	if ((rc = prolly__pq_load())) /* PQ1 */
		return rc;
	if (!(st = calloc(1, sizeof(*st))))
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
	pthread_mutex_init(&st->mu, NULL);
	pthread_mutex_init(&st->gc_mu, NULL);
	pthread_mutex_init(&st->epoch_mu, NULL);
	st->base.version = PROLLY_STORE_VERSION;
	st->base.flags = PROLLY_STORE_REMOTE;
	st->base.get_ancestors = pg_get_ancestors;
	st->base.kind = "postgres";
	st->base.get_nodes = pg_get_nodes;
	st->base.has_nodes = pg_has_nodes;
	st->base.write = prolly__pg_write;
	st->base.get_ref = prolly__pg_get_ref;
	st->base.get_refs = prolly__pg_get_refs;
	st->base.list_refs = prolly__pg_list_refs;
	st->base.gc = prolly__pg_gc;
	st->base.stat = pg_stat;
	st->base.close = pg_close;
	st->base.get_ref_objects = prolly__pg_get_ref_objects;
	st->base.get_ref_objects_known = prolly__pg_get_ref_objects_known;
	st->base.find_ids = pg_find_ids;

	const char *schema = opts && opts->schema && opts->schema[0] ? opts->schema : "public";
	st->pool_size = opts && opts->pool_size ? opts->pool_size : 8;
	st->pool_timeout_ms = opts && opts->pool_timeout_ms ? opts->pool_timeout_ms : 5000;
	st->batch_items = opts && opts->batch_items ? opts->batch_items : 1024;
	st->read_chunk = opts && opts->read_chunk ? opts->read_chunk : 4096;
	st->gc_batch = opts && opts->gc_batch ? opts->gc_batch : 10000;
	st->no_create = opts ? opts->no_create : 0;
	st->node_size = opts && opts->version >= 2 ? opts->node_size : 0;
	if (!prolly_node_size_valid(st->node_size)) {
		rc = prolly_set_error(PROLLY_EINVAL,
		                      "postgres: node size %u is not a power of two from %u to %u",
		                      st->node_size, PROLLY_NODE_SIZE_MIN, PROLLY_NODE_SIZE_MAX);
		goto cleanup;
	}
	if (strlen(schema) > 63 || strchr(schema, '\\')) {
		rc = prolly_set_error(PROLLY_EINVAL,
		                      "postgres: schema name '%s' is longer than 63 bytes or has a "
		                      "backslash",
		                      schema);
		goto cleanup;
	}
	if (st->pool_size > 10000) {
		rc = prolly_set_error(PROLLY_EINVAL, "postgres: pool_size %u is too large", st->pool_size);
		goto cleanup;
	}
	if (!(st->conninfo = strdup(conninfo)) || !(st->schema = strdup(schema))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
		goto cleanup;
	}
	if ((rc = parse_conninfo(st, conninfo)))
		goto cleanup;
	if ((rc = prolly__pg_sql_init(st)))
		goto cleanup;
	st->conns = calloc(st->pool_size, sizeof(*st->conns));
	st->idle = calloc(st->pool_size, sizeof(*st->idle));
	if (!st->conns || !st->idle) {
		rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
		goto cleanup;
	}
	for (unsigned i = 0; i < st->pool_size; i++)
		st->idle[st->n_idle++] = &st->conns[st->pool_size - 1 - i];

	/* Connect once: the server is there, the schema exists (or is created) and is not newer.
	 * That first round trip only reads and sets the session up: run again if a hot standby
	 * cancels it. */
	octx o = {NULL, 0, 0, 0};
	rc = prolly__pg_read(st, open_once, &o);
	c = o.c;
	if (rc)
		goto cleanup;
	uint64_t version = o.version;
	if (o.missing && st->no_create) {
		rc = prolly_set_error(PROLLY_ENOTFOUND,
		                      "postgres: schema \"%s\" on %s has no prolly tables (create them "
		                      "with 'prolly init')",
		                      st->schema, st->target);
		goto cleanup;
	}
	/* A missing schema is created at the current version; an older one is migrated unless
	 * no_create (or the role may not), else used as it is. */
	if (o.missing || (!st->no_create && version >= 1 && version < SCHEMA_VERSION))
		rc = prolly__pg_init_on(st, c, &version, !o.missing, 0);
	else
		rc = prolly__pg_check_version(st, version);
	if (rc)
		goto cleanup;
	/* The schema's node size (prolly__pg_check_version checked the row of version 7). */
	st->base.node_size = version == SCHEMA_NODE_SIZE ? (unsigned)st->meta_node_size : 0;
	unsigned have = prolly__node_size_of(st->base.node_size);
	if (st->node_size && st->node_size != have) {
		rc = prolly_set_error(PROLLY_EINVAL,
		                      "postgres: schema \"%s\" on %s holds a store of %u-byte nodes; %u "
		                      "was asked for (a store's node size is chosen when it is made)",
		                      st->schema, st->target, have, st->node_size);
		goto cleanup;
	}
	atomic_store(&st->ready, 1);
	atomic_store(&st->fast, version >= 2);
	if (!c->session) {
		o.c = c;
		o.setup = 1;
		rc = prolly__pg_read(st, open_once, &o);
		c = o.c;
		if (rc)
			goto cleanup;
	}
	prolly__pg_pool_release(st, c, 0);
	c = NULL;
	*out = &st->base;
	st = NULL;

cleanup:
	if (c)
		prolly__pg_pool_release(st, c, 1);
	pg_close(st ? &st->base : NULL);
	return rc;
}

int prolly_store_pg_counters(prolly_store *base, prolly_pg_counters *out)
{
	pg_store *st = (pg_store *)base;
	if (!st || !out || !st->base.kind || strcmp(st->base.kind, "postgres") != 0)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_pg_counters: not a PostgreSQL store");
	out->round_trips = atomic_load(&st->cnt.round_trips);
	out->statements = atomic_load(&st->cnt.statements);
	out->insert_statements = atomic_load(&st->cnt.insert_statements);
	out->rows_inserted = atomic_load(&st->cnt.rows_inserted);
	out->rows_read = atomic_load(&st->cnt.rows_read);
	out->bytes_read = atomic_load(&st->cnt.bytes_read);
	out->bytes_sent = atomic_load(&st->cnt.bytes_sent);
	out->pool_waits = atomic_load(&st->cnt.pool_waits);
	out->pool_wait_ns = atomic_load(&st->cnt.pool_wait_ns);
	out->pool_timeouts = atomic_load(&st->cnt.pool_timeouts);
	out->connects = atomic_load(&st->cnt.connects);
	out->broken = atomic_load(&st->cnt.broken);
	out->gc_batches = atomic_load(&st->cnt.gc_batches);
	out->gc_remarks = atomic_load(&st->cnt.gc_remarks);
	out->read_retries = atomic_load(&st->cnt.read_retries);
	out->epoch_rewrites = atomic_load(&st->cnt.epoch_rewrites);
	out->prepares = atomic_load(&st->cnt.prepares);
	return 0;
}

/* The one version check of prolly_pg_options and prolly_pg_stats (see src/abi.c for the
 * convention). */
static int pg_version(const char *type, const char *macro, unsigned got, unsigned newest)
{
	if (got >= 1 && got <= newest)
		return 0;
	return prolly_set_error(PROLLY_EINVAL,
	                        "%s.version is %u, which this library (prolly %s) does not know (it "
	                        "knows 1 to %u): initialise the struct with %s or %s_init()",
	                        type, got, PROLLY_VERSION_STRING, newest, macro, type);
}

static int pg_options_version(unsigned v)
{
	return pg_version("prolly_pg_options", "PROLLY_PG_OPTIONS_INIT", v, PROLLY_PG_OPTIONS_VERSION);
}

static int pg_stats_version(unsigned v)
{
	return pg_version("prolly_pg_stats", "PROLLY_PG_STATS_INIT", v, PROLLY_PG_STATS_VERSION);
}

int prolly_pg_options_init(prolly_pg_options *opts, unsigned version)
{
	int rc;
	if (!opts)
		return prolly_set_error(PROLLY_EINVAL, "prolly_pg_options_init: NULL argument");
	if ((rc = pg_options_version(version)))
		return rc;
	/* version 1 ends before node_size (abi.c's convention: no byte past the caller's version) */
	memset(opts, 0, version >= 2 ? sizeof(*opts) : offsetof(prolly_pg_options, node_size));
	opts->version = version;
	return 0;
}

int prolly_pg_stats_init(prolly_pg_stats *stats, unsigned version)
{
	int rc;
	if (!stats)
		return prolly_set_error(PROLLY_EINVAL, "prolly_pg_stats_init: NULL argument");
	if ((rc = pg_stats_version(version)))
		return rc;
	memset(stats, 0, sizeof(*stats));
	stats->version = version;
	return 0;
}

int prolly_store_pg_thread_stats(prolly_pg_stats *out)
{
	int rc;
	uint64_t slot[PG_SLOTS];
	if (!out)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_pg_thread_stats: NULL argument");
	if ((rc = pg_stats_version(out->version)))
		return rc;
	prolly_store_thread_counters(slot, PG_SLOTS);
	out->statements = slot[PG_SLOT_STATEMENTS]; /* version 1: every field */
	out->pool_waits = slot[PG_SLOT_POOL_WAITS];
	out->pool_wait_ns = slot[PG_SLOT_POOL_WAIT_NS];
	return 0;
}

int prolly_store_pg_stats(prolly_pg_stats *out, prolly_store *base)
{
	pg_store *st = (pg_store *)base;
	int rc;
	if (!out || !st)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_pg_stats: NULL argument");
	if ((rc = pg_stats_version(out->version)))
		return rc;
	if (!st->base.kind || strcmp(st->base.kind, "postgres") != 0)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_pg_stats: not a PostgreSQL store");
	out->statements = atomic_load(&st->cnt.statements); /* version 1: every field */
	out->pool_waits = atomic_load(&st->cnt.pool_waits);
	out->pool_wait_ns = atomic_load(&st->cnt.pool_wait_ns);
	return 0;
}

#ifdef PROLLY_TEST_HOOKS /* the test build only (pg.h) */
void prolly_store_pg_fail_chunk(prolly_store *base, unsigned chunk)
{
	pg_store *st = (pg_store *)base;
	if (st && st->base.kind && strcmp(st->base.kind, "postgres") == 0)
		atomic_store(&st->fail_chunk, chunk);
}

const char *prolly_store_pg_statement(prolly_store *base, const char *what)
{
	static const struct {
		const char *what;
		int q;
	} reads[] = {{"get_nodes", Q_GETNODES},
	             {"has_nodes", Q_HASNODES},
	             {"get_refs", Q_GETREFS},
	             {"get_ancestors", Q_ANCESTORS}};
	pg_store *st = (pg_store *)base;
	if (!st || !st->base.kind || strcmp(st->base.kind, "postgres") != 0 || !what)
		return NULL;
	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++)
		if (strcmp(what, reads[i].what) == 0)
			return st->sql[reads[i].q];
	return NULL;
}
#endif

/* ------------------------------------------------------------------------------------------ */
/* find_ids (store interface version 3): one index range scan on the nodes' primary key        */
/* ------------------------------------------------------------------------------------------ */

/* find_ids: its statement (sql), and the rows handed to found() so far. */
typedef struct fidctx {
	const char *sql;
	prolly_store_obj_fn found;
	void *payload;
	uint64_t rows;
} fidctx;

static int find_ids_fn(void *ctx, size_t qi, const PGresult *r)
{
	fidctx *f = ctx;
	(void)qi;
	for (int i = 0; i < PQntuples(r); i++) {
		prolly_id id;
		if (PQgetisnull(r, i, 0) || PQgetlength(r, i, 0) != PROLLY_ID_SIZE || PQgetisnull(r, i, 1))
			return prolly_set_error(PROLLY_ESTORE, "postgres: find_ids: a malformed row");
		memcpy(id.bytes, PQgetvalue(r, i, 0), PROLLY_ID_SIZE);
		f->rows++;
		int rc = f->found(f->payload, &id, PQgetvalue(r, i, 1), (size_t)PQgetlength(r, i, 1));
		if (rc)
			return rc;
	}
	return 0;
}

/* One run of find_ids (read_once_fn). */
static int find_ids_once(pg_store *st, void *ctx, uint64_t *handed)
{
	fidctx *f = ctx;
	f->rows = 0;
	int rc = prolly__pg_run1(st, "find_ids", -1, f->sql, 0, NULL, NULL, find_ids_fn, f);
	*handed = f->rows;
	return rc;
}

static int pg_find_ids(prolly_store *base, const prolly_id *lo, const prolly_id *hi, size_t limit,
                       prolly_store_obj_fn found, void *payload)
{
	pg_store *st = (pg_store *)base;
	char lhex[PROLLY_ID_HEX_SIZE], hhex[PROLLY_ID_HEX_SIZE], tmpl[400];
	char *sql = NULL;
	fidctx f = {NULL, found, payload, 0};
	int rc;
	if (!lo || !hi || !found)
		return prolly_set_error(PROLLY_EINVAL, "postgres: find_ids without bounds or callback");
	if (!limit)
		return 0;
	/* The bounds are hex digits made here, so they can be literals: no statement to prepare. */
	prolly_id_to_hex(lhex, lo);
	prolly_id_to_hex(hhex, hi);
	snprintf(tmpl, sizeof(tmpl),
	         "SELECT id, substring(node FROM 1 FOR %d) FROM @.nodes WHERE id BETWEEN "
	         "decode('%s', 'hex') AND decode('%s', 'hex') ORDER BY id LIMIT %zu",
	         PROLLY_STORE_ID_HEAD, lhex, hhex, limit);
	if (!(sql = prolly__pg_subst(tmpl, st->qs, st->meta_literal)))
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
	f.sql = sql;
	rc = prolly__pg_read(st, find_ids_once, &f);
	free(sql);
	return rc;
}
