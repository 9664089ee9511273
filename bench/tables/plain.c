/*
 * plain.c - the plain contender: each table a PostgreSQL table in the run's schema (INT columns
 * bigint, TEXT columns text, all NOT NULL), its primary key, and a B-tree index on each
 * secondary index's columns followed by the primary key (so an index range is index-only and
 * ordered like the prolly contenders' entries). Every operation is one prepared statement on the
 * session's connection (prepared on first use), binary parameters and results:
 *
 *   load           per batch: BEGIN; COPY t FROM STDIN (FORMAT binary); COMMIT
 *   create_index   CREATE INDEX IF NOT EXISTS
 *   get            SELECT cols FROM t WHERE pk = $1
 *   get_many       SELECT cols FROM t WHERE pk = ANY($1::int8[])
 *   range          SELECT index cols, pk (or every column, or count(*), or sum(col)) FROM t
 *                  WHERE (key cols) >= (lo) AND (key cols) <= (hi) ORDER BY key cols LIMIT n
 *   insert, update, delete   INSERT / UPDATE ... WHERE pk = / DELETE ... WHERE pk =
 *   delete_oldest  DELETE FROM t WHERE pk IN (SELECT pk ... WHERE pk >= $1 ORDER BY pk LIMIT $2)
 *   begin, commit  BEGIN / COMMIT; 40001 and 40P01 (a deadlock) are BT_CONFLICT
 *
 * This file: the schema, sessions, the statements' SQL pieces and the reads; the writes are in
 * plain_write.c.
 */
#include "tables_int.h"

#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INT8_OID 20

/* "schema"."table" */
int bt__plain_qname(char *out, size_t n, const bt_db *db, const char *table)
{
	char qt[160];
	if (bench_pg_ident(qt, sizeof(qt), table))
		return -1;
	return snprintf(out, n, "%s.%s", db->qschema, qt) >= (int)n ? -1 : 0;
}

/* Appends the quoted name of column c of t. */
void bt__plain_col(bench_buf *b, const bt_table *t, int c)
{
	char q[160];
	if (bench_pg_ident(q, sizeof(q), t->cols[c].name))
		b->oom = 1;
	else
		bench_buf_puts(b, q);
}

static int db_exec(PGconn *c, const char *sql, char *err, size_t errn)
{
	if (bench_pg_exec(c, sql, NULL)) {
		bench_seterr(err, errn, "tables: plain: %s", prolly_last_error());
		return -1;
	}
	return 0;
}

int bt__plain_index_sql(bench_buf *b, const bt_db *db, const bt_table *t, int index)
{
	char q[400], qi[160];
	const bt_index *ix = &t->indexes[index - 1];
	if (bt__plain_qname(q, sizeof(q), db, t->name) || bench_pg_ident(qi, sizeof(qi), ix->name))
		return -1;
	bench_buf_clear(b);
	bench_buf_printf(b, "CREATE INDEX IF NOT EXISTS %s ON %s (", qi, q);
	for (int c = 0; c < ix->ncols; c++) {
		bt__plain_col(b, t, ix->cols[c]);
		bench_buf_puts(b, ", ");
	}
	bt__plain_col(b, t, t->pk);
	bench_buf_puts(b, ")");
	return b->oom ? -1 : 0;
}

int bt__plain_db_open(bt_db *db, int create, char *err, size_t errn)
{
	PGconn *c = NULL;
	bench_buf b = {0};
	int rc = -1;
	if (bench_pg_connect(&c, db->url)) {
		bench_seterr(err, errn, "tables: plain: %s", prolly_last_error());
		goto cleanup;
	}
	if (!create) {
		rc = 0;
		goto cleanup;
	}
	bench_buf_printf(&b, "DROP SCHEMA IF EXISTS %s CASCADE", db->qschema);
	if (b.oom || db_exec(c, b.p, err, errn))
		goto cleanup;
	bench_buf_clear(&b);
	bench_buf_printf(&b, "CREATE SCHEMA %s", db->qschema);
	if (db_exec(c, b.p, err, errn))
		goto cleanup;
	for (size_t i = 0; i < db->ntables; i++) {
		const bt_table *t = db->tables[i];
		char q[400];
		if (bt__plain_qname(q, sizeof(q), db, t->name))
			goto toolong;
		bench_buf_clear(&b);
		bench_buf_printf(&b, "CREATE TABLE %s (", q);
		for (int col = 0; col < t->ncols; col++) {
			bt__plain_col(&b, t, col);
			bench_buf_puts(&b,
			               t->cols[col].type == BT_INT ? " bigint NOT NULL, " : " text NOT NULL, ");
		}
		bench_buf_puts(&b, "PRIMARY KEY (");
		bt__plain_col(&b, t, t->pk);
		bench_buf_puts(&b, "))");
		if (b.oom)
			goto toolong;
		if (db_exec(c, b.p, err, errn))
			goto cleanup;
		for (int ix = 1; ix <= t->nindexes; ix++)
			if (bt__plain_index_sql(&b, db, t, ix))
				goto toolong;
			else if (db_exec(c, b.p, err, errn))
				goto cleanup;
	}
	rc = 0;
	goto cleanup;
toolong:
	bench_seterr(err, errn, "tables: plain: a name too long, or out of memory");
cleanup:
	bench_buf_free(&b);
	PQfinish(c);
	return rc;
}

int bt__plain_session_open(bt_session *s)
{
	if (bench_pg_connect(&s->pg, s->db->url))
		return bt__fail_prolly(s, "tables: plain: connecting");
	return 0;
}

void bt__plain_session_close(bt_session *s)
{
	(void)s;
}

/* ---- statements ---------------------------------------------------------------------------- */

/* Prepares statement name (once per session) from the SQL in b. */
int bt__plain_prepare(bt_session *s, const char *name, const bench_buf *b, int nparams)
{
	char key[80];
	snprintf(key, sizeof(key), "\n%s\n", name);
	if (s->prepared.p && strstr(s->prepared.p, key))
		return 0;
	if (b->oom)
		return bt__fail(s, "tables: plain: out of memory");
	if (bench_pg_prepare(s->pg, name, b->p, nparams))
		return bt__fail_prolly(s, "tables: plain: preparing");
	if (!s->prepared.n)
		bench_buf_putc(&s->prepared, '\n');
	bench_buf_puts(&s->prepared, key + 1);
	return 0;
}

/* Runs a prepared statement; its result becomes s->last. 40001 and 40P01: BT_CONFLICT. */
int bt__plain_run(bt_session *s, const char *name, int n, const char *const *v, const int *l)
{
	bt__clear_last(s);
	if (bench_pg_run(s->pg, name, n, v, l, &s->last)) {
		const char *st = bench_pg_sqlstate();
		if (!strcmp(st, "40001") || !strcmp(st, "40P01"))
			return BT_CONFLICT;
		return bt__fail_prolly(s, "tables: plain");
	}
	return 0;
}

void bt__plain_int8(char out[8], int64_t v)
{
	uint64_t u = (uint64_t)v;
	for (int i = 7; i >= 0; i--, u >>= 8)
		out[i] = (char)(u & 0xff);
}

static int64_t get_int8(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	return (int64_t)((uint64_t)bench_pg_get32(u) << 32 | bench_pg_get32(u + 4));
}

/* The SELECT list of every column, in column order. */
void bt__plain_cols(bench_buf *b, const bt_table *t)
{
	for (int c = 0; c < t->ncols; c++) {
		if (c)
			bench_buf_puts(b, ", ");
		bt__plain_col(b, t, c);
	}
}

/* Statement sql of table t, named "bt<id>_<kind>": built by the caller into b when new. */
int bt__plain_stmt(bt_session *s, const bt_table *t, char *name, size_t n, const char *kind,
                   char *q, size_t qn)
{
	snprintf(name, n, "bt%u_%s", t->id, kind);
	bench_buf_clear(&s->v);
	if (bt__plain_qname(q, qn, s->db, t->name))
		return bt__fail(s, "tables: plain: table name too long");
	return 0;
}

static int decode_row(bt_session *s, const bt_table *t, int row, bt_row *r)
{
	memset(r, 0, sizeof(*r));
	for (int c = 0; c < t->ncols; c++) {
		const char *p = PQgetvalue(s->last, row, c);
		int len = PQgetlength(s->last, row, c);
		if (t->cols[c].type == BT_INT) {
			if (len != 8)
				return bt__fail(s, "tables: plain: column %s is not a bigint", t->cols[c].name);
			r->ints[c] = get_int8(p);
		} else {
			if (len > BT_MAX_TEXT)
				return bt__fail(s, "tables: plain: column %s longer than %d bytes", t->cols[c].name,
				                BT_MAX_TEXT);
			r->text[c] = p;
			r->text_len[c] = (uint16_t)len;
		}
	}
	return 0;
}

int bt__plain_get(bt_session *s, const bt_table *t, int64_t pk, bt_row *r, int *found)
{
	char name[64], q[400], k[8];
	if (bt__plain_stmt(s, t, name, sizeof(name), "get", q, sizeof(q)))
		return -1;
	bench_buf_puts(&s->v, "SELECT ");
	bt__plain_cols(&s->v, t);
	bench_buf_printf(&s->v, " FROM %s WHERE ", q);
	bt__plain_col(&s->v, t, t->pk);
	bench_buf_puts(&s->v, " = $1");
	if (bt__plain_prepare(s, name, &s->v, 1))
		return -1;
	bt__plain_int8(k, pk);
	const char *v[1] = {k};
	const int l[1] = {8};
	int rc = bt__plain_run(s, name, 1, v, l);
	if (rc)
		return rc;
	*found = PQntuples(s->last) > 0;
	return *found ? decode_row(s, t, 0, r) : 0;
}

int bt__plain_get_many(bt_session *s, const bt_table *t, const int64_t *pks, size_t n,
                       size_t *found)
{
	char name[64], q[400], k[8];
	if (!n)
		return 0;
	if (bt__plain_stmt(s, t, name, sizeof(name), "many", q, sizeof(q)))
		return -1;
	bench_buf_puts(&s->v, "SELECT ");
	bt__plain_cols(&s->v, t);
	bench_buf_printf(&s->v, " FROM %s WHERE ", q);
	bt__plain_col(&s->v, t, t->pk);
	bench_buf_puts(&s->v, " = ANY($1::int8[])");
	if (bt__plain_prepare(s, name, &s->v, 1))
		return -1;
	if (bench_pg_array_begin_type(&s->arr[0], n, INT8_OID))
		return bt__fail_prolly(s, "tables: plain");
	for (size_t i = 0; i < n; i++) {
		bt__plain_int8(k, pks[i]);
		if (bench_pg_array_add(&s->arr[0], k, 8))
			return bt__fail_prolly(s, "tables: plain");
	}
	const char *v[1] = {s->arr[0].p};
	const int l[1] = {(int)s->arr[0].n};
	int rc = bt__plain_run(s, name, 1, v, l);
	if (rc)
		return rc;
	*found = (size_t)PQntuples(s->last);
	return 0;
}

/* The first n key columns of index `index` (the primary key last): "a, b, pk", or as a row
 * value "(a, b, pk)" with row set. A select list and an ORDER BY name the columns themselves:
 * PostgreSQL sorts by a row value as one opaque expression, which no index provides, so
 * "ORDER BY (a, b, pk) LIMIT 10" would scan and sort the whole table. A bound compares row
 * values, which an index scan does take ("(a, b) >= ($1, $2)"). */
static void key_cols(bench_buf *b, const bt_table *t, int index, int n, int row)
{
	if (row)
		bench_buf_putc(b, '(');
	for (int i = 0; i < n; i++) {
		if (i)
			bench_buf_puts(b, ", ");
		if (index > 0 && i < t->indexes[index - 1].ncols)
			bt__plain_col(b, t, t->indexes[index - 1].cols[i]);
		else
			bt__plain_col(b, t, t->pk);
	}
	if (row)
		bench_buf_putc(b, ')');
}

void bt__plain_params(bench_buf *b, int from, int n)
{
	bench_buf_putc(b, '(');
	for (int i = 0; i < n; i++)
		bench_buf_printf(b, "%s$%d", i ? ", " : "", from + i);
	bench_buf_putc(b, ')');
}

int bt__plain_range(int64_t *out, bt_session *s, const bt_table *t, const bt_range_q *q)
{
	char name[64], qt[400], kind[32], vals[2 * BT_MAX_INDEX_COLS + 1][8];
	const char *v[2 * BT_MAX_INDEX_COLS + 1];
	int l[2 * BT_MAX_INDEX_COLS + 1], np = 0;
	int ncols = q->index == 0 ? 1 : t->indexes[q->index - 1].ncols + 1;
	snprintf(kind, sizeof(kind), "r%d_%d_%d_%d_%d_%d", q->index, q->nlo, q->nhi, q->limit != 0,
	         (int)q->agg, q->agg == BT_SUM ? q->col : 0);
	if (bt__plain_stmt(s, t, name, sizeof(name), kind, qt, sizeof(qt)))
		return -1;
	bench_buf *b = &s->v;
	if (q->agg == BT_COUNT)
		bench_buf_puts(b, "SELECT count(*) FROM (SELECT 1");
	else if (q->agg == BT_SUM) {
		bench_buf_puts(b, "SELECT coalesce(sum(x), 0)::int8 FROM (SELECT ");
		bt__plain_col(b, t, q->col);
		bench_buf_puts(b, " AS x");
	} else if (q->index == 0) {
		bench_buf_puts(b, "SELECT ");
		bt__plain_cols(b, t);
	} else {
		bench_buf_puts(b, "SELECT ");
		key_cols(b, t, q->index, ncols, 0);
	}
	bench_buf_printf(b, " FROM %s WHERE true", qt);
	if (q->nlo) {
		bench_buf_puts(b, " AND ");
		key_cols(b, t, q->index, q->nlo, 1);
		bench_buf_puts(b, " >= ");
		bt__plain_params(b, np + 1, q->nlo);
		for (int i = 0; i < q->nlo; i++, np++) {
			bt__plain_int8(vals[np], q->lo[i]);
			v[np] = vals[np];
			l[np] = 8;
		}
	}
	if (q->nhi) {
		bench_buf_puts(b, " AND ");
		key_cols(b, t, q->index, q->nhi, 1);
		bench_buf_puts(b, " <= ");
		bt__plain_params(b, np + 1, q->nhi);
		for (int i = 0; i < q->nhi; i++, np++) {
			bt__plain_int8(vals[np], q->hi[i]);
			v[np] = vals[np];
			l[np] = 8;
		}
	}
	bench_buf_puts(b, " ORDER BY ");
	key_cols(b, t, q->index, ncols, 0);
	if (q->limit) {
		bench_buf_printf(b, " LIMIT $%d", np + 1);
		bt__plain_int8(vals[np], (int64_t)q->limit);
		v[np] = vals[np];
		l[np++] = 8;
	}
	if (q->agg != BT_ROWS)
		bench_buf_puts(b, ") AS r");
	if (bt__plain_prepare(s, name, b, np))
		return -1;
	int rc = bt__plain_run(s, name, np, v, l);
	if (rc)
		return rc;
	if (q->agg == BT_ROWS) {
		*out = PQntuples(s->last);
		return 0;
	}
	if (PQntuples(s->last) != 1 || PQgetlength(s->last, 0, 0) != 8)
		return bt__fail(s, "tables: plain: an aggregate without its value");
	*out = get_int8(PQgetvalue(s->last, 0, 0));
	return 0;
}
