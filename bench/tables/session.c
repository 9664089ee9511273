/*
 * session.c - table.h's databases, sessions and reads: argument checks, the dispatch to the
 * contender, and for the two prolly contenders gets and ranges on top of their key-value
 * primitives (tables_int.h). Writes: txn.c; setting the session's error and dropping its last
 * result: session_state.c.
 */
#include "tables_int.h"

#include "err.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

const char *const bt_contender_names[BT_N_CONTENDERS] = {"plain", "client", "sql"};

/* ---- databases and sessions ---------------------------------------------------------------- */

int bt_db_open(bt_db **out, bt_kind kind, const char *url, const char *schema, const char *branch,
               const bt_table *const *tables, size_t n, int create, unsigned node_size, char *err,
               size_t errn)
{
	bt_db *db = NULL;
	int rc = -1;
	*out = NULL;
	if (kind < 0 || kind >= BT_N_CONTENDERS || !url || !schema || !tables || !n ||
	    (kind != BT_PLAIN && !branch)) {
		bench_seterr(err, errn, "tables: bt_db_open: bad arguments");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (tables[i]->id == tables[j]->id) {
				bench_seterr(err, errn, "tables: %s and %s share table id %u", tables[i]->name,
				             tables[j]->name, tables[i]->id);
				return -1;
			}
	if (!(db = calloc(1, sizeof(*db))) || !(db->url = strdup(url)) ||
	    !(db->schema = strdup(schema)) || (branch && !(db->branch = strdup(branch)))) {
		bench_seterr(err, errn, "tables: out of memory");
		goto cleanup;
	}
	if (bench_pg_ident(db->qschema, sizeof(db->qschema), schema)) {
		bench_seterr(err, errn, "tables: schema name %.64s: too long", schema);
		goto cleanup;
	}
	db->kind = kind;
	db->node_size = node_size;
	db->tables = tables;
	db->ntables = n;
	if (kind == BT_PLAIN)
		rc = bt__plain_db_open(db, create, err, errn);
	else
		rc = (kind == BT_CLIENT ? &bt__client_ops : &bt__sql_ops)->db_open(db, create, err, errn);
cleanup:
	if (rc) {
		bt_db_close(db);
		return -1;
	}
	*out = db;
	return 0;
}

void bt_db_close(bt_db *db)
{
	if (!db)
		return;
	if (db->kind == BT_CLIENT)
		bt__client_ops.db_close(db);
	else if (db->kind == BT_SQL)
		bt__sql_ops.db_close(db);
	free(db->url);
	free(db->schema);
	free(db->branch);
	free(db);
}

bt_kind bt_db_kind(const bt_db *db)
{
	return db->kind;
}

int bt_session_open(bt_session **out, bt_db *db, char *err, size_t errn)
{
	bt_session *s = calloc(1, sizeof(*s));
	int rc;
	*out = NULL;
	if (!s) {
		bench_seterr(err, errn, "tables: out of memory");
		return -1;
	}
	s->db = db;
	rc = db->kind == BT_PLAIN ? bt__plain_session_open(s) : bt__kv(s)->session_open(s);
	if (rc) {
		bench_seterr(err, errn, "%s", s->err);
		bt_session_close(s);
		return -1;
	}
	*out = s;
	return 0;
}

void bt_session_close(bt_session *s)
{
	if (!s)
		return;
	if (s->db->kind == BT_PLAIN)
		bt__plain_session_close(s);
	else
		bt__kv(s)->session_close(s);
	bt__clear_last(s);
	if (s->pg)
		PQfinish(s->pg);
	bench_buf_free(&s->arena);
	free(s->edits);
	bench_buf_free(&s->k);
	bench_buf_free(&s->k2);
	bench_buf_free(&s->v);
	bench_buf_free(&s->arr[0]);
	bench_buf_free(&s->arr[1]);
	bench_buf_free(&s->prepared);
	prolly_buf_dispose(&s->val);
	free(s);
}

const char *bt_session_error(const bt_session *s)
{
	return s->err;
}

uint64_t bt_session_rebased(const bt_session *s)
{
	return s ? s->rebased : 0;
}

/* ---- reads --------------------------------------------------------------------------------- */

int bt_get(bt_session *s, const bt_table *t, int64_t pk, bt_row *r, int *found)
{
	const void *v;
	size_t vlen;
	*found = 0;
	if (s->db->kind == BT_PLAIN)
		return bt__plain_get(s, t, pk, r, found);
	bench_buf_clear(&s->k);
	if (bt_key_pk(&s->k, t, pk))
		return bt__fail(s, "tables: out of memory");
	if (bt__kv(s)->get(s, s->k.p, s->k.n, &v, &vlen, found))
		return -1;
	if (*found && bt_decode_row(r, t, s->k.p, s->k.n, v, vlen))
		return bt__fail(s, "tables: %s: the row of key %lld is malformed", t->name, (long long)pk);
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

int bt_get_many(bt_session *s, const bt_table *t, const int64_t *pks, size_t n, size_t *found)
{
	prolly_slice *keys = NULL;
	int64_t *u = NULL;
	size_t nu = 0;
	int rc = -1;
	*found = 0;
	if (s->db->kind == BT_PLAIN)
		return bt__plain_get_many(s, t, pks, n, found);
	if (!n)
		return 0;
	/* As an IN list: each key once (sorted, which also suits the tree walk). */
	if (!(u = malloc(n * sizeof(*u))) || !(keys = malloc(n * sizeof(*keys)))) {
		bt__fail(s, "tables: out of memory");
		goto cleanup;
	}
	memcpy(u, pks, n * sizeof(*u));
	qsort(u, n, sizeof(*u), cmp_i64);
	for (size_t i = 0; i < n; i++)
		if (!nu || u[i] != u[nu - 1])
			u[nu++] = u[i];
	/* The keys are fixed-size: one buffer of the keys, then the slices into it. */
	bench_buf_clear(&s->k2);
	for (size_t i = 0; i < nu; i++)
		if (bt_key_pk(&s->k2, t, u[i])) {
			bt__fail(s, "tables: out of memory");
			goto cleanup;
		}
	size_t kl = s->k2.n / nu;
	for (size_t i = 0; i < nu; i++) {
		keys[i].data = s->k2.p + i * kl;
		keys[i].size = kl;
	}
	rc = bt__kv(s)->get_many(s, keys, nu, found);
cleanup:
	free(keys);
	free(u);
	return rc;
}

typedef struct range_acc {
	const bt_table *t;
	const bt_range_q *q;
	int64_t n, sum;
	int bad;
} range_acc;

static int range_entry(void *payload, const void *key, size_t klen, const void *val, size_t vlen)
{
	range_acc *a = payload;
	bt_row r;
	int rc = a->q->index == 0 ? bt_decode_row(&r, a->t, key, klen, val, vlen)
	                          : bt_decode_index(&r, a->t, a->q->index, key, klen);
	if (rc || (a->q->index && vlen)) {
		a->bad = 1;
		return 1;
	}
	a->n++;
	if (a->q->agg == BT_SUM)
		a->sum = (int64_t)((uint64_t)a->sum + (uint64_t)r.ints[a->q->col]); /* wraps: no UB */
	return 0;
}

/* Whether column col is readable from an entry of index `index` (index-only ranges). */
static int col_covered(const bt_table *t, int index, int col)
{
	if (col < 0 || col >= t->ncols || t->cols[col].type != BT_INT)
		return 0;
	if (index == 0 || col == t->pk)
		return 1;
	for (int c = 0; c < t->indexes[index - 1].ncols; c++)
		if (t->indexes[index - 1].cols[c] == col)
			return 1;
	return 0;
}

int bt_range(int64_t *out, bt_session *s, const bt_table *t, const bt_range_q *q)
{
	int ncols;
	*out = 0;
	if (q->index < 0 || q->index > t->nindexes)
		return bt__fail(s, "tables: %s has no index %d", t->name, q->index);
	ncols = q->index == 0 ? 1 : t->indexes[q->index - 1].ncols + 1;
	if (q->nlo < 0 || q->nlo > ncols || q->nhi < 0 || q->nhi > ncols)
		return bt__fail(s, "tables: a range bound of more columns than the index has");
	if (q->agg == BT_SUM && !col_covered(t, q->index, q->col))
		return bt__fail(s, "tables: sum of column %d, which index %d does not hold", q->col,
		                q->index);
	if (s->db->kind == BT_PLAIN)
		return bt__plain_range(out, s, t, q);

	prolly_slice lo, hi;
	bench_buf_clear(&s->k2);
	if (bt_key_prefix(&s->k2, t, q->index, q->lo, q->nlo))
		return bt__fail(s, "tables: out of memory");
	size_t lolen = s->k2.n;
	if (bt_key_prefix_end(&s->k2, t, q->index, q->hi, q->nhi))
		return bt__fail(s, "tables: out of memory");
	lo.data = s->k2.p;
	lo.size = lolen;
	hi.data = s->k2.p + lolen;
	hi.size = s->k2.n - lolen;
	if (q->agg == BT_COUNT) {
		uint64_t c;
		if (bt__kv(s)->count(s, &lo, &hi, &c))
			return -1;
		if (q->limit && c > q->limit)
			c = q->limit;
		*out = (int64_t)c;
		return 0;
	}
	range_acc a = {t, q, 0, 0, 0};
	int rc = bt__kv(s)->scan(s, &lo, &hi, q->limit, range_entry, &a);
	if (a.bad)
		return bt__fail(s, "tables: %s: a malformed entry in a range", t->name);
	if (rc)
		return -1;
	*out = q->agg == BT_SUM ? a.sum : a.n;
	return 0;
}
