/*
 * sql.c - the sql contender's primitives (tables_int.h): prolly through the extension's
 * functions (ext/postgres, docs/sql.md), one statement per primitive on the session's own
 * connection, prepared once, binary parameters and results (bench/lib/pgconn.h). A read names
 * the branch outside a transaction and the commit id read at bt_begin inside one, so a
 * transaction's reads all see one commit.
 *
 *   head      SELECT prolly_resolve(branch)
 *   get       SELECT prolly_get(ref, key)
 *   get_many  SELECT value FROM prolly_get_many(ref, keys)
 *   scan      SELECT key, value FROM prolly_scan(ref, lo, hi, NULL, max_rows), in pages of
 *             PAGE rows (each page one statement) so that a long range never sits whole in
 *             one result
 *   count     SELECT prolly_count(ref, lo, hi)                        O(height) in the server
 *   commit    SELECT prolly_commit(branch, keys, vals, message, expected, true): under the
 *             branch's row lock, the extension commits on expected or merges into the head that
 *             moved meanwhile (snapshot isolation, as the client contender); 40001 (a key written
 *             since expected) is BT_CONFLICT
 *
 * The store is created, and the branch made, through the C library at bt_db_open (the same
 * layout the client contender uses); the extension must be installed in the store's schema.
 */
#include "tables_int.h"

#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 10000 /* rows per prolly_scan statement */

static int sq_db_open(bt_db *db, int create, char *err, size_t errn)
{
	PGconn *c = NULL;
	char sql[256], in[128];
	int rc = -1;
	/* The store and the branch, as the client contender makes them. */
	if (bt__client_ops.db_open(db, create, err, errn))
		return -1;
	bt__client_ops.db_close(db);
	if (bench_pg_connect(&c, db->url)) {
		bench_seterr(err, errn, "tables: sql: %s", prolly_last_error());
		return -1;
	}
	if (bench_pg_ext_schema(in, sizeof(in), c)) {
		bench_seterr(err, errn, "tables: sql: %s", prolly_last_error());
		goto cleanup;
	}
	if (in[0] && strcmp(in, db->schema) != 0) {
		bench_seterr(err, errn,
		             "tables: sql: the prolly extension of this database is in schema "
		             "\"%.64s\", not in the store's \"%.64s\"",
		             in, db->schema);
		goto cleanup;
	}
	if (!in[0]) {
		snprintf(sql, sizeof(sql), "CREATE EXTENSION prolly SCHEMA %s", db->qschema);
		if (bench_pg_exec(c, sql, NULL)) {
			bench_seterr(err, errn,
			             "tables: sql needs the prolly extension in this server "
			             "(make -C ext/postgres install): %s",
			             prolly_last_error());
			goto cleanup;
		}
	}
	rc = 0;
cleanup:
	PQfinish(c);
	return rc;
}

static void sq_db_close(bt_db *db)
{
	(void)db;
}

static int sq_session_open(bt_session *s)
{
	static const struct {
		const char *name, *fmt;
		int nparams;
	} stmts[] = {
	    {"bt_head", "SELECT %s.prolly_resolve($1::text)", 1},
	    {"bt_get", "SELECT %s.prolly_get($1::text, $2::bytea)", 2},
	    {"bt_many", "SELECT value FROM %s.prolly_get_many($1::text, $2::bytea[])", 2},
	    {"bt_scan",
	     "SELECT key, value FROM %s.prolly_scan($1::text, $2::bytea, $3::bytea, NULL, "
	     "$4::int8)",
	     4},
	    {"bt_count", "SELECT %s.prolly_count($1::text, $2::bytea, $3::bytea)", 3},
	    {"bt_commit",
	     "SELECT %s.prolly_commit($1::text, $2::bytea[], $3::bytea[], '" BT_COMMIT_MESSAGE
	     "', $4::text, true)",
	     4},
	};
	char sql[512];
	if (bench_pg_connect(&s->pg, s->db->url))
		return bt__fail_prolly(s, "tables: sql: connecting");
	for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
		snprintf(sql, sizeof(sql), stmts[i].fmt, s->db->qschema);
		if (bench_pg_prepare(s->pg, stmts[i].name, sql, stmts[i].nparams))
			return bt__fail_prolly(s, "tables: sql: preparing");
	}
	return 0;
}

static void sq_session_close(bt_session *s)
{
	(void)s;
}

/* The ref a read names: the transaction's commit id, or the branch. */
static const char *ref(const bt_session *s)
{
	return s->in_txn ? s->head_hex : s->db->branch;
}

/* Runs a prepared statement; its result becomes s->last. */
static int run(bt_session *s, const char *name, int n, const char *const *v, const int *l)
{
	bt__clear_last(s);
	if (bench_pg_run(s->pg, name, n, v, l, &s->last))
		return bt__fail_prolly(s, "tables: sql");
	return 0;
}

static int sq_head(bt_session *s)
{
	const char *v[1] = {s->db->branch};
	const int l[1] = {(int)strlen(s->db->branch)};
	if (run(s, "bt_head", 1, v, l))
		return -1;
	if (PQntuples(s->last) != 1 || PQgetlength(s->last, 0, 0) != PROLLY_ID_HEX_SIZE - 1)
		return bt__fail(s, "tables: sql: prolly_resolve did not return a commit id");
	memcpy(s->head_hex, PQgetvalue(s->last, 0, 0), PROLLY_ID_HEX_SIZE - 1);
	s->head_hex[PROLLY_ID_HEX_SIZE - 1] = '\0';
	if (prolly_id_from_hex(&s->head, s->head_hex))
		return bt__fail(s, "tables: sql: prolly_resolve returned a malformed id");
	return 0;
}

static int sq_get(bt_session *s, const void *key, size_t klen, const void **val, size_t *vlen,
                  int *found)
{
	const char *r = ref(s);
	const char *v[2] = {r, key};
	const int l[2] = {(int)strlen(r), (int)klen};
	*found = 0;
	if (run(s, "bt_get", 2, v, l))
		return -1;
	if (PQntuples(s->last) != 1)
		return bt__fail(s, "tables: sql: prolly_get returned %d rows", PQntuples(s->last));
	if (PQgetisnull(s->last, 0, 0))
		return 0;
	*found = 1;
	*val = PQgetvalue(s->last, 0, 0);
	*vlen = (size_t)PQgetlength(s->last, 0, 0);
	return 0;
}

static int sq_get_many(bt_session *s, const prolly_slice *keys, size_t n, size_t *found)
{
	const char *r = ref(s);
	if (bench_pg_array_begin(&s->arr[0], n))
		return bt__fail_prolly(s, "tables: sql");
	for (size_t i = 0; i < n; i++)
		if (bench_pg_array_add(&s->arr[0], keys[i].data, keys[i].size))
			return bt__fail_prolly(s, "tables: sql");
	const char *v[2] = {r, s->arr[0].p};
	const int l[2] = {(int)strlen(r), (int)s->arr[0].n};
	if (run(s, "bt_many", 2, v, l))
		return -1;
	if ((size_t)PQntuples(s->last) != n)
		return bt__fail(s, "tables: sql: prolly_get_many returned %d rows for %zu keys",
		                PQntuples(s->last), n);
	for (size_t i = 0; i < n; i++)
		*found += !PQgetisnull(s->last, (int)i, 0);
	return 0;
}

static void int8_be(char out[8], uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		out[i] = (char)(v & 0xff);
}

static int sq_scan(bt_session *s, const prolly_slice *lo, const prolly_slice *hi, uint64_t limit,
                   bt_entry_fn fn, void *payload)
{
	const char *r = ref(s);
	uint64_t done = 0;
	char lim[8];
	/* The next page starts just past the last key read: that key and a 0 byte. */
	bench_buf from = {0};
	int rc = 0;
	if (bench_buf_put(&from, lo->data, lo->size))
		return bt__fail(s, "tables: out of memory");
	for (;;) {
		uint64_t want = limit ? limit - done : PAGE;
		if (want > PAGE)
			want = PAGE;
		int8_be(lim, want);
		const char *v[4] = {r, from.p, hi->data, lim};
		const int l[4] = {(int)strlen(r), (int)from.n, (int)hi->size, 8};
		PGresult *res;
		if (run(s, "bt_scan", 4, v, l)) {
			rc = -1;
			break;
		}
		/* The callback may run statements of its own: the page is ours. */
		res = s->last;
		s->last = NULL;
		int rows = PQntuples(res);
		for (int i = 0; i < rows && rc == 0; i++)
			if (fn(payload, PQgetvalue(res, i, 0), (size_t)PQgetlength(res, i, 0),
			       PQgetvalue(res, i, 1), (size_t)PQgetlength(res, i, 1)))
				rc = -1;
		done += (uint64_t)rows;
		if (rc == 0 && rows > 0) {
			bench_buf_clear(&from);
			if (bench_buf_put(&from, PQgetvalue(res, rows - 1, 0),
			                  (size_t)PQgetlength(res, rows - 1, 0)) ||
			    bench_buf_putc(&from, '\0'))
				rc = bt__fail(s, "tables: out of memory");
		}
		PQclear(res);
		if (rc || (uint64_t)rows < want || (limit && done >= limit))
			break;
	}
	bench_buf_free(&from);
	return rc;
}

static int sq_count(bt_session *s, const prolly_slice *lo, const prolly_slice *hi, uint64_t *out)
{
	const char *r = ref(s);
	const char *v[3] = {r, lo->data, hi->data};
	const int l[3] = {(int)strlen(r), (int)lo->size, (int)hi->size};
	*out = 0;
	if (run(s, "bt_count", 3, v, l))
		return -1;
	if (PQntuples(s->last) != 1 || PQgetlength(s->last, 0, 0) != 8)
		return bt__fail(s, "tables: sql: prolly_count returned no count");
	const unsigned char *p = (const unsigned char *)PQgetvalue(s->last, 0, 0);
	*out = (uint64_t)bench_pg_get32(p) << 32 | bench_pg_get32(p + 4);
	return 0;
}

static int sq_commit(bt_session *s, const bt_edit *edits, size_t n, int expect)
{
	if (bench_pg_array_begin(&s->arr[0], n) || bench_pg_array_begin(&s->arr[1], n))
		return bt__fail_prolly(s, "tables: sql");
	for (size_t i = 0; i < n; i++) {
		int rc = bench_pg_array_add(&s->arr[0], s->arena.p + edits[i].koff, edits[i].klen);
		if (!rc)
			rc = edits[i].vlen == SIZE_MAX
			         ? bench_pg_array_add_null(&s->arr[1])
			         : bench_pg_array_add(&s->arr[1], s->arena.p + edits[i].voff, edits[i].vlen);
		if (rc)
			return bt__fail_prolly(s, "tables: sql");
	}
	const char *v[4] = {s->db->branch, s->arr[0].p, s->arr[1].p, expect ? s->head_hex : NULL};
	const int l[4] = {(int)strlen(s->db->branch), (int)s->arr[0].n, (int)s->arr[1].n,
	                  expect ? PROLLY_ID_HEX_SIZE - 1 : 0};
	bt__clear_last(s);
	if (bench_pg_run(s->pg, "bt_commit", 4, v, l, NULL)) {
		if (!strcmp(bench_pg_sqlstate(), "40001"))
			return BT_CONFLICT;
		return bt__fail_prolly(s, "tables: sql: commit");
	}
	return 0;
}

const bt_kv_ops bt__sql_ops = {sq_db_open, sq_db_close, sq_session_open, sq_session_close,
                               sq_head,    sq_get,      sq_get_many,     sq_scan,
                               sq_count,   sq_commit};
