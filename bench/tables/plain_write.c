/*
 * plain_write.c - the plain contender's writes (plain.c describes the contender): loads by COPY,
 * CREATE INDEX, and the statements of a transaction.
 */
#include "tables_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writes -------------------------------------------------------------------------------- */

int bt__plain_exec(bt_session *s, const char *sql)
{
	bt__clear_last(s);
	if (bench_pg_exec(s->pg, sql, &s->last)) {
		const char *st = bench_pg_sqlstate();
		if (!strcmp(st, "40001") || !strcmp(st, "40P01"))
			return BT_CONFLICT;
		return bt__fail_prolly(s, "tables: plain");
	}
	/* A COMMIT of a transaction a failed statement aborted succeeds, as a ROLLBACK. */
	if (!strcmp(sql, "COMMIT") && !strcmp(PQcmdStatus(s->last), "ROLLBACK"))
		return bt__fail(s, "tables: plain: the transaction had failed; it was rolled back");
	return 0;
}

/* The parameters of row r: every column (skip: -1, or a column left out), in column order. */
static int row_params(const bt_table *t, const bt_row *r, int skip, char ints[][8], const char **v,
                      int *l)
{
	int n = 0;
	for (int c = 0; c < t->ncols; c++) {
		if (c == skip)
			continue;
		if (t->cols[c].type == BT_INT) {
			bt__plain_int8(ints[c], r->ints[c]);
			v[n] = ints[c];
			l[n++] = 8;
		} else {
			v[n] = r->text[c] ? r->text[c] : "";
			l[n++] = r->text_len[c];
		}
	}
	return n;
}

int bt__plain_insert(bt_session *s, const bt_table *t, const bt_row *r)
{
	char name[64], q[400], ints[BT_MAX_COLS][8];
	const char *v[BT_MAX_COLS];
	int l[BT_MAX_COLS];
	if (bt__plain_stmt(s, t, name, sizeof(name), "ins", q, sizeof(q)))
		return -1;
	bench_buf_printf(&s->v, "INSERT INTO %s (", q);
	bt__plain_cols(&s->v, t);
	bench_buf_puts(&s->v, ") VALUES ");
	bt__plain_params(&s->v, 1, t->ncols);
	if (bt__plain_prepare(s, name, &s->v, t->ncols))
		return -1;
	int n = row_params(t, r, -1, ints, v, l);
	return bt__plain_run(s, name, n, v, l);
}

int bt__plain_update(bt_session *s, const bt_table *t, const bt_row *r)
{
	char name[64], q[400], ints[BT_MAX_COLS][8];
	const char *v[BT_MAX_COLS];
	int l[BT_MAX_COLS], p = 1;
	if (t->ncols < 2)
		return 0;
	if (bt__plain_stmt(s, t, name, sizeof(name), "upd", q, sizeof(q)))
		return -1;
	bench_buf_printf(&s->v, "UPDATE %s SET ", q);
	for (int c = 0; c < t->ncols; c++) {
		if (c == t->pk)
			continue;
		if (p > 1)
			bench_buf_puts(&s->v, ", ");
		bt__plain_col(&s->v, t, c);
		bench_buf_printf(&s->v, " = $%d", p++);
	}
	bench_buf_puts(&s->v, " WHERE ");
	bt__plain_col(&s->v, t, t->pk);
	bench_buf_printf(&s->v, " = $%d", p);
	if (bt__plain_prepare(s, name, &s->v, t->ncols))
		return -1;
	int n = row_params(t, r, t->pk, ints, v, l);
	bt__plain_int8(ints[t->pk], r->ints[t->pk]);
	v[n] = ints[t->pk];
	l[n++] = 8;
	return bt__plain_run(s, name, n, v, l);
}

int bt__plain_delete(bt_session *s, const bt_table *t, const bt_row *r)
{
	char name[64], q[400], k[8];
	if (bt__plain_stmt(s, t, name, sizeof(name), "del", q, sizeof(q)))
		return -1;
	bench_buf_printf(&s->v, "DELETE FROM %s WHERE ", q);
	bt__plain_col(&s->v, t, t->pk);
	bench_buf_puts(&s->v, " = $1");
	if (bt__plain_prepare(s, name, &s->v, 1))
		return -1;
	bt__plain_int8(k, r->ints[t->pk]);
	const char *v[1] = {k};
	const int l[1] = {8};
	return bt__plain_run(s, name, 1, v, l);
}

int bt__plain_delete_oldest(bt_session *s, const bt_table *t, int64_t from_pk, uint64_t n,
                            uint64_t *deleted)
{
	char name[64], q[400], k[2][8];
	if (bt__plain_stmt(s, t, name, sizeof(name), "old", q, sizeof(q)))
		return -1;
	bench_buf_printf(&s->v, "DELETE FROM %s WHERE ", q);
	bt__plain_col(&s->v, t, t->pk);
	bench_buf_puts(&s->v, " IN (SELECT ");
	bt__plain_col(&s->v, t, t->pk);
	bench_buf_printf(&s->v, " FROM %s WHERE ", q);
	bt__plain_col(&s->v, t, t->pk);
	bench_buf_puts(&s->v, " >= $1 ORDER BY ");
	bt__plain_col(&s->v, t, t->pk);
	bench_buf_puts(&s->v, " LIMIT $2)");
	if (bt__plain_prepare(s, name, &s->v, 2))
		return -1;
	bt__plain_int8(k[0], from_pk);
	bt__plain_int8(k[1], (int64_t)n);
	const char *v[2] = {k[0], k[1]};
	const int l[2] = {8, 8};
	int rc = bt__plain_run(s, name, 2, v, l);
	if (rc)
		return rc;
	*deleted = strtoull(PQcmdTuples(s->last), NULL, 10);
	return 0;
}

/* ---- loads and indexes --------------------------------------------------------------------- */

int bt__plain_load(bt_session *s, const bt_table *t, uint64_t n, uint64_t batch, bt_row_fn fn,
                   void *payload)
{
	char q[400], k[BT_MAX_COLS][8];
	bench_buf b = {0};
	PGresult *res = NULL;
	bt_row r;
	int rc = -1, in_copy = 0;
	if (bt__plain_qname(q, sizeof(q), s->db, t->name))
		return bt__fail(s, "tables: plain: table name too long");
	bench_buf_clear(&s->v);
	bench_buf_printf(&s->v, "COPY %s (", q);
	bt__plain_cols(&s->v, t);
	bench_buf_puts(&s->v, ") FROM STDIN (FORMAT binary)");
	for (uint64_t i = 0; i < n; i++) {
		if (!in_copy) {
			if (bt__plain_exec(s, "BEGIN"))
				goto cleanup;
			res = PQexec(s->pg, s->v.p);
			bench_pg_count(1, 1);
			if (!res || PQresultStatus(res) != PGRES_COPY_IN) {
				bench_pg_error(s->pg, res, "starting COPY");
				bt__fail_prolly(s, "tables: plain");
				goto cleanup;
			}
			PQclear(res);
			res = NULL;
			in_copy = 1;
			if (bench_pg_copy_header(&b))
				goto oom;
		}
		memset(&r, 0, sizeof(r));
		if (fn(payload, i, &r)) {
			bt__fail(s, "tables: %s: the row function failed at row %llu", t->name,
			         (unsigned long long)i);
			goto cleanup;
		}
		if (bench_pg_copy_row_begin(&b, (uint16_t)t->ncols))
			goto oom;
		for (int c = 0; c < t->ncols; c++) {
			int e;
			if (t->cols[c].type == BT_INT) {
				bt__plain_int8(k[c], r.ints[c]);
				e = bench_pg_array_add(&b, k[c], 8);
			} else {
				e = bench_pg_array_add(&b, r.text[c] ? r.text[c] : "", r.text_len[c]);
			}
			if (e)
				goto oom;
		}
		if (b.n >= (1u << 20) && bench_pg_copy_send(s->pg, &b))
			goto pgfail;
		if ((i + 1) % batch == 0 || i + 1 == n) {
			if (bench_pg_copy_trailer(&b))
				goto oom;
			if (bench_pg_copy_send(s->pg, &b) || bench_pg_copy_end(s->pg))
				goto pgfail;
			in_copy = 0;
			if (bt__plain_exec(s, "COMMIT"))
				goto cleanup;
		}
	}
	rc = 0;
	goto cleanup;
oom:
	bt__fail(s, "tables: plain: out of memory encoding COPY data");
	goto cleanup;
pgfail:
	bt__fail_prolly(s, "tables: plain");
cleanup:
	PQclear(res);
	if (in_copy)
		(void)bench_pg_copy_end(s->pg);
	if (rc)
		(void)bench_pg_exec(s->pg, "ROLLBACK", NULL);
	bench_buf_free(&b);
	return rc;
}

int bt__plain_create_index(bt_session *s, const bt_table *t, int index)
{
	bench_buf b = {0};
	int rc;
	if (bt__plain_index_sql(&b, s->db, t, index)) {
		bench_buf_free(&b);
		return bt__fail(s, "tables: plain: an index name too long");
	}
	rc = bt__plain_exec(s, b.p);
	bench_buf_free(&b);
	return rc;
}
