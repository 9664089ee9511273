/*
 * txn.c - table.h's writes: loads, index builds and transactions. The plain contender runs
 * them as SQL (plain.c, plain_write.c); for the two prolly contenders this file keeps the
 * transaction's edit list (a row's put or delete and its index entries', in an arena of the
 * session) and sends it with the contender's commit primitive (tables_int.h).
 */
#include "tables_int.h"

#include <stdlib.h>
#include <string.h>

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
	int rc = s->nedits ? bt__kv(s)->commit(s, s->edits, s->nedits, expect) : 0;
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
		rc = bt__kv(s)->scan(s, &lo, &hi, INDEX_CHUNK, index_entry, &b);
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
		if (bt__kv(s)->head(s))
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
	int rc = bt__kv(s)->scan(s, &lo, &hi, n, oldest_entry, &o);
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
