/*
 * session.c - table.h's entry points: argument checks, the session's error, the dispatch to the
 * contender, and for the two prolly contenders the table logic on top of their key-value
 * primitives (tables_int.h): a transaction's edit list, loads in batches, index builds, ranges
 * and deletes of the oldest rows.
 */
#include "tables_int.h"

#include "err.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const bt_contender_names[BT_N_CONTENDERS] = {"plain", "client", "sql"};

static const bt_kv_ops *kv(const bt_session *s)
{
	return s->db->kind == BT_CLIENT ? &bt__client_ops : &bt__sql_ops;
}

int bt__fail(bt_session *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	return -1;
}

int bt__fail_prolly(bt_session *s, const char *what)
{
	return bt__fail(s, "%s: %s", what, prolly_last_error());
}

void bt__clear_last(bt_session *s)
{
	PQclear(s->last);
	s->last = NULL;
}

/* ---- databases and sessions ---------------------------------------------------------------- */

int bt_db_open(bt_db **out, bt_kind kind, const char *url, const char *schema, const char *branch,
               const bt_table *const *tables, size_t n, int create, char *err, size_t errn)
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
	rc = db->kind == BT_PLAIN ? bt__plain_session_open(s) : kv(s)->session_open(s);
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
		kv(s)->session_close(s);
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

/* ---- the edit list (client, sql) ----------------------------------------------------------- */

static void edits_clear(bt_session *s)
{
	bench_buf_clear(&s->arena);
	s->nedits = 0;
}

static int edit_add(bt_session *s, const void *k, size_t klen, const void *v, size_t vlen, int del)
{
	bt_edit *e;
	if (bench_grow((void **)&s->edits, &s->edits_cap, s->nedits + 1, sizeof(*s->edits)))
		return bt__fail(s, "tables: out of memory");
	e = &s->edits[s->nedits];
	e->koff = s->arena.n;
	e->klen = klen;
	if (bench_buf_put(&s->arena, k, klen))
		return bt__fail(s, "tables: out of memory");
	e->voff = s->arena.n;
	e->vlen = del ? SIZE_MAX : vlen;
	if (!del && bench_buf_put(&s->arena, v, vlen))
		return bt__fail(s, "tables: out of memory");
	s->nedits++;
	return 0;
}

/* The puts (or deletes) of row r: the row and its entries in every index of t. */
static int edit_row(bt_session *s, const bt_table *t, const bt_row *r, int del)
{
	bench_buf_clear(&s->k);
	bench_buf_clear(&s->v);
	if (bt_key_pk(&s->k, t, r->ints[t->pk]) || (!del && bt_value(&s->v, t, r)))
		return bt__fail(s, "tables: %s: a row that does not fit (text over %d bytes?)", t->name,
		                BT_MAX_TEXT);
	if (edit_add(s, s->k.p, s->k.n, s->v.p, s->v.n, del))
		return -1;
	for (int i = 1; i <= t->nindexes; i++) {
		bench_buf_clear(&s->k);
		if (bt_key_index(&s->k, t, i, r) || edit_add(s, s->k.p, s->k.n, "", 0, del))
			return bt__fail(s, "tables: out of memory");
	}
	return 0;
}

/* Commits the edit list (expect: on the head read at begin) and empties it. */
static int edits_commit(bt_session *s, int expect)
{
	int rc = s->nedits ? kv(s)->commit(s, s->edits, s->nedits, expect) : 0;
	edits_clear(s);
	return rc;
}

/* The rows of t from primary key `from` on: lo and hi in s->k2. */
static int pk_bounds(bt_session *s, const bt_table *t, int64_t from, prolly_slice *lo,
                     prolly_slice *hi)
{
	bench_buf_clear(&s->k2);
	if (bt_key_pk(&s->k2, t, from))
		return bt__fail(s, "tables: out of memory");
	size_t lolen = s->k2.n;
	if (bt_key_prefix_end(&s->k2, t, 0, NULL, 0))
		return bt__fail(s, "tables: out of memory");
	lo->data = s->k2.p;
	lo->size = lolen;
	hi->data = s->k2.p + lolen;
	hi->size = s->k2.n - lolen;
	return 0;
}

/* ---- loads and index builds ---------------------------------------------------------------- */

int bt_load(bt_session *s, const bt_table *t, uint64_t n, uint64_t batch, bt_row_fn fn,
            void *payload)
{
	bt_row r;
	if (s->in_txn)
		return bt__fail(s, "tables: bt_load inside a transaction");
	if (!batch)
		batch = n ? n : 1;
	if (s->db->kind == BT_PLAIN)
		return bt__plain_load(s, t, n, batch, fn, payload);
	edits_clear(s);
	for (uint64_t i = 0; i < n; i++) {
		memset(&r, 0, sizeof(r));
		if (fn(payload, i, &r))
			return bt__fail(s, "tables: %s: the row function failed at row %llu", t->name,
			                (unsigned long long)i);
		if (edit_row(s, t, &r, 0))
			return -1;
		if ((i + 1) % batch == 0 || i + 1 == n) {
			int rc = edits_commit(s, 0);
			if (rc)
				return rc == BT_CONFLICT ? bt__fail(s, "tables: a load lost a race") : -1;
		}
	}
	return 0;
}

/* Index entries per commit of an index build: bounds the memory of a build over many rows. */
#define INDEX_CHUNK 1000000u

typedef struct index_build {
	bt_session *s;
	const bt_table *t;
	int index;
	int64_t last_pk;
	int bad;
} index_build;

static int index_entry(void *payload, const void *key, size_t klen, const void *val, size_t vlen)
{
	index_build *b = payload;
	bt_row r;
	if (bt_decode_row(&r, b->t, key, klen, val, vlen)) {
		b->bad = 1;
		return 1;
	}
	bench_buf_clear(&b->s->k);
	if (bt_key_index(&b->s->k, b->t, b->index, &r) ||
	    edit_add(b->s, b->s->k.p, b->s->k.n, "", 0, 0))
		return 1;
	b->last_pk = r.ints[b->t->pk];
	return 0;
}

int bt_create_index(bt_session *s, const bt_table *t, int index)
{
	if (index < 1 || index > t->nindexes)
		return bt__fail(s, "tables: %s has no index %d", t->name, index);
	if (s->in_txn)
		return bt__fail(s, "tables: bt_create_index inside a transaction");
	if (s->db->kind == BT_PLAIN)
		return bt__plain_create_index(s, t, index);
	/* Pages of the rows in key order; the entries committed every INDEX_CHUNK rows. */
	index_build b = {s, t, index, 0, 0};
	int64_t from = INT64_MIN;
	for (;;) {
		prolly_slice lo, hi;
		size_t before = s->nedits;
		int rc;
		if (pk_bounds(s, t, from, &lo, &hi))
			return -1;
		rc = kv(s)->scan(s, &lo, &hi, INDEX_CHUNK, index_entry, &b);
		if (b.bad)
			return bt__fail(s, "tables: %s: a malformed row", t->name);
		if (rc)
			return rc < 0 && s->err[0] ? -1 : bt__fail(s, "tables: building an index");
		size_t got = s->nedits - before;
		if ((rc = edits_commit(s, 0)))
			return rc == BT_CONFLICT ? bt__fail(s, "tables: an index build lost a race") : -1;
		if (got < INDEX_CHUNK || b.last_pk == INT64_MAX)
			return 0;
		from = b.last_pk + 1;
	}
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
	if (kv(s)->get(s, s->k.p, s->k.n, &v, &vlen, found))
		return -1;
	if (*found && bt_decode_row(r, t, s->k.p, s->k.n, v, vlen))
		return bt__fail(s, "tables: %s: the row of key %lld is malformed", t->name, (long long)pk);
	return 0;
}

int bt_get_many(bt_session *s, const bt_table *t, const int64_t *pks, size_t n, size_t *found)
{
	prolly_slice *keys;
	int rc;
	*found = 0;
	if (s->db->kind == BT_PLAIN)
		return bt__plain_get_many(s, t, pks, n, found);
	if (!n)
		return 0;
	/* The keys are fixed-size: one buffer of n keys, then the slices into it. */
	bench_buf_clear(&s->k2);
	for (size_t i = 0; i < n; i++)
		if (bt_key_pk(&s->k2, t, pks[i]))
			return bt__fail(s, "tables: out of memory");
	if (!(keys = malloc(n * sizeof(*keys))))
		return bt__fail(s, "tables: out of memory");
	size_t kl = s->k2.n / n;
	for (size_t i = 0; i < n; i++) {
		keys[i].data = s->k2.p + i * kl;
		keys[i].size = kl;
	}
	rc = kv(s)->get_many(s, keys, n, found);
	free(keys);
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
		a->sum += r.ints[a->q->col];
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
		if (kv(s)->count(s, &lo, &hi, &c))
			return -1;
		if (q->limit && c > q->limit)
			c = q->limit;
		*out = (int64_t)c;
		return 0;
	}
	range_acc a = {t, q, 0, 0, 0};
	int rc = kv(s)->scan(s, &lo, &hi, q->limit, range_entry, &a);
	if (a.bad)
		return bt__fail(s, "tables: %s: a malformed entry in a range", t->name);
	if (rc)
		return -1;
	*out = q->agg == BT_SUM ? a.sum : a.n;
	return 0;
}

/* ---- transactions -------------------------------------------------------------------------- */

int bt_begin(bt_session *s)
{
	if (s->in_txn)
		return bt__fail(s, "tables: bt_begin inside a transaction");
	if (s->db->kind == BT_PLAIN) {
		if (bt__plain_exec(s, "BEGIN"))
			return -1;
	} else {
		edits_clear(s);
		if (kv(s)->head(s))
			return -1;
	}
	s->in_txn = 1;
	return 0;
}

int bt_insert(bt_session *s, const bt_table *t, const bt_row *r)
{
	if (s->db->kind == BT_PLAIN)
		return bt__plain_insert(s, t, r);
	if (!s->in_txn)
		return bt__fail(s, "tables: bt_insert outside a transaction");
	return edit_row(s, t, r, 0);
}

int bt_delete(bt_session *s, const bt_table *t, const bt_row *r)
{
	if (s->db->kind == BT_PLAIN)
		return bt__plain_delete(s, t, r);
	if (!s->in_txn)
		return bt__fail(s, "tables: bt_delete outside a transaction");
	return edit_row(s, t, r, 1);
}

int bt_update(bt_session *s, const bt_table *t, const bt_row *old, const bt_row *new_row)
{
	if (old->ints[t->pk] != new_row->ints[t->pk])
		return bt__fail(s, "tables: bt_update may not change the primary key");
	if (s->db->kind == BT_PLAIN)
		return bt__plain_update(s, t, new_row);
	if (!s->in_txn)
		return bt__fail(s, "tables: bt_update outside a transaction");
	bench_buf_clear(&s->k);
	bench_buf_clear(&s->v);
	if (bt_key_pk(&s->k, t, new_row->ints[t->pk]) || bt_value(&s->v, t, new_row))
		return bt__fail(s, "tables: %s: a row that does not fit", t->name);
	if (edit_add(s, s->k.p, s->k.n, s->v.p, s->v.n, 0))
		return -1;
	for (int i = 1; i <= t->nindexes; i++) {
		const bt_index *ix = &t->indexes[i - 1];
		int same = 1;
		for (int c = 0; c < ix->ncols; c++)
			same &= old->ints[ix->cols[c]] == new_row->ints[ix->cols[c]];
		if (same)
			continue;
		bench_buf_clear(&s->k);
		if (bt_key_index(&s->k, t, i, old) || edit_add(s, s->k.p, s->k.n, "", 0, 1))
			return bt__fail(s, "tables: out of memory");
		bench_buf_clear(&s->k);
		if (bt_key_index(&s->k, t, i, new_row) || edit_add(s, s->k.p, s->k.n, "", 0, 0))
			return bt__fail(s, "tables: out of memory");
	}
	return 0;
}

typedef struct oldest {
	bt_session *s;
	const bt_table *t;
	uint64_t n;
	int bad;
	size_t nrows;
} oldest;

static int oldest_entry(void *payload, const void *key, size_t klen, const void *val, size_t vlen)
{
	oldest *o = payload;
	bt_row r;
	if (bt_decode_row(&r, o->t, key, klen, val, vlen)) {
		o->bad = 1;
		return 1;
	}
	o->nrows++;
	return edit_row(o->s, o->t, &r, 1) ? 1 : 0;
}

int bt_delete_oldest(bt_session *s, const bt_table *t, int64_t from_pk, uint64_t n,
                     uint64_t *deleted)
{
	*deleted = 0;
	if (s->db->kind == BT_PLAIN)
		return bt__plain_delete_oldest(s, t, from_pk, n, deleted);
	if (!s->in_txn)
		return bt__fail(s, "tables: bt_delete_oldest outside a transaction");
	if (!n)
		return 0;
	prolly_slice lo, hi;
	if (pk_bounds(s, t, from_pk, &lo, &hi))
		return -1;
	oldest o = {s, t, n, 0, 0};
	int rc = kv(s)->scan(s, &lo, &hi, n, oldest_entry, &o);
	if (o.bad)
		return bt__fail(s, "tables: %s: a malformed row", t->name);
	if (rc)
		return -1;
	*deleted = o.nrows;
	return 0;
}

int bt_commit(bt_session *s)
{
	int rc;
	if (!s->in_txn)
		return bt__fail(s, "tables: bt_commit outside a transaction");
	s->in_txn = 0;
	if (s->db->kind == BT_PLAIN) {
		rc = bt__plain_exec(s, "COMMIT");
		if (rc == BT_CONFLICT || rc == 0)
			return rc;
		bt__plain_exec(s, "ROLLBACK");
		return rc;
	}
	rc = edits_commit(s, 1);
	return rc;
}

void bt_rollback(bt_session *s)
{
	if (!s->in_txn)
		return;
	s->in_txn = 0;
	if (s->db->kind == BT_PLAIN)
		bt__plain_exec(s, "ROLLBACK");
	else
		edits_clear(s);
}
