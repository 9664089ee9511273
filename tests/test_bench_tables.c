/*
 * test_bench_tables.c - versioned tables (bench/tables/table.h): the encoding, and the three
 * contenders against one reference model.
 *
 *   encoding   seeded random INT tuples (negative, zero, the extremes): the order of encoded keys
 *              is the order of the tuples, for the primary key and a two-column index; rows and
 *              index entries round-trip; prefix ends bound exactly their prefix; malformed keys
 *              and values (truncated, extended, another table or index, a TEXT length past the
 *              value or the limit) are refused.
 *   contenders plain, client and sql each run the same seeded sequence: a load, transactions of
 *              inserts, updates, deletes and delete_oldest, gets, get_many and ranges (rows,
 *              count, sum; primary and secondary; bounds and limits), every answer checked
 *              against an in-memory model, so the three agree with each other.
 *   races      two sessions begin on one head (client, sql): writing other rows, the second
 *              commit merges into the head the first made; updating the same row (to the same
 *              value), it is BT_CONFLICT and writes nothing, and begun again it lands; threads
 *              incrementing one row retry and lose no increment.
 * PostgreSQL: $PROLLY_PG_URL, or a throwaway cluster (tm_pg_guard). The sql contender needs the
 * extension installed (make -C ext/postgres install); without it, its cases fail.
 */
#include "clock.h"
#include "lib/model.h"
#include "ptest.h"
#include "rng.h"
#include "table.h"
#include "tables_int.h"

#include "prolly.h"

#include <pthread.h>
#include <stdint.h>

/* ---- schema ---------------------------------------------------------------------------- */

enum { C_ID, C_A, C_B, C_TXT, C_D, NCOLS };

static const bt_table items = {
    "items",
    7,
    NCOLS,
    {{"id", BT_INT}, {"a", BT_INT}, {"b", BT_INT}, {"txt", BT_TEXT}, {"d", BT_INT}},
    C_ID,
    2,
    {{"items_a", 1, {C_A}}, {"items_bd", 2, {C_B, C_D}}},
};
static const bt_table *const tables[] = {&items};

/* ---- encoding -------------------------------------------------------------------------- */

static int64_t some_int(bench_rng *r)
{
	static const int64_t edge[] = {INT64_MIN, INT64_MIN + 1, -256,          -1,       0, 1,
	                               255,       256,           INT64_MAX - 1, INT64_MAX};
	switch (bench_rng_below(r, 4)) {
	case 0: return edge[bench_rng_below(r, sizeof(edge) / sizeof(edge[0]))];
	case 1: return (int64_t)bench_rng_below(r, 2001) - 1000;
	default: return (int64_t)bench_rng_next(r);
	}
}

static int cmp_bytes(const bench_buf *x, const bench_buf *y)
{
	size_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(x->p, y->p, n);
	return c ? (c < 0 ? -1 : 1) : (x->n < y->n ? -1 : x->n > y->n);
}

static int cmp_int(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

PT_TEST(key_order_is_tuple_order)
{
	bench_rng r;
	bench_buf x = {0}, y = {0};
	bench_rng_seed(&r, PT_SEED());
	for (int i = 0; i < 20000; i++) {
		bt_row a, b;
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		for (int c = 0; c < NCOLS; c++) {
			a.ints[c] = some_int(&r);
			b.ints[c] = bench_rng_below(&r, 3) ? some_int(&r) : a.ints[c];
		}
		bench_buf_clear(&x);
		bench_buf_clear(&y);
		PT_REQUIRE(bt_key_pk(&x, &items, a.ints[C_ID]) == 0 &&
		           bt_key_pk(&y, &items, b.ints[C_ID]) == 0);
		PT_CHECKF(cmp_bytes(&x, &y) == cmp_int(a.ints[C_ID], b.ints[C_ID]), "pk %lld %lld",
		          (long long)a.ints[C_ID], (long long)b.ints[C_ID]);
		bench_buf_clear(&x);
		bench_buf_clear(&y);
		PT_REQUIRE(bt_key_index(&x, &items, 2, &a) == 0 && bt_key_index(&y, &items, 2, &b) == 0);
		int want = cmp_int(a.ints[C_B], b.ints[C_B]);
		if (!want)
			want = cmp_int(a.ints[C_D], b.ints[C_D]);
		if (!want)
			want = cmp_int(a.ints[C_ID], b.ints[C_ID]);
		PT_CHECKF(cmp_bytes(&x, &y) == want, "index (b, d, id), seed %" PRIu64, PT_SEED());
		/* the entry decodes to its columns */
		bt_row d;
		PT_REQUIRE(bt_decode_index(&d, &items, 2, x.p, x.n) == 0);
		PT_CHECK(d.ints[C_B] == a.ints[C_B] && d.ints[C_D] == a.ints[C_D] &&
		         d.ints[C_ID] == a.ints[C_ID]);
		/* a prefix end is past every key of the prefix and not past the next prefix */
		bench_buf_clear(&y);
		PT_REQUIRE(bt_key_prefix_end(&y, &items, 2, &a.ints[C_B], 1) == 0);
		PT_CHECK(cmp_bytes(&x, &y) < 0);
		if (a.ints[C_B] != INT64_MAX) {
			int64_t next = a.ints[C_B] + 1;
			bench_buf_clear(&x);
			PT_REQUIRE(bt_key_prefix(&x, &items, 2, &next, 1) == 0);
			PT_CHECK(cmp_bytes(&y, &x) <= 0);
		}
	}
	bench_buf_free(&x);
	bench_buf_free(&y);
}

PT_TEST(rows_round_trip_and_malformed_refused)
{
	bench_rng r;
	bench_buf k = {0}, v = {0}, bad = {0};
	char text[BT_MAX_TEXT + 1];
	bench_rng_seed(&r, PT_SEED() + 1);
	for (int i = 0; i < 2000; i++) {
		bt_row a, d;
		memset(&a, 0, sizeof(a));
		for (int c = 0; c < NCOLS; c++)
			a.ints[c] = some_int(&r);
		a.ints[C_TXT] = 0;
		size_t tl = bench_rng_below(&r, 4) ? bench_rng_below(&r, 40) : BT_MAX_TEXT;
		for (size_t j = 0; j < tl; j++)
			text[j] = (char)bench_rng_below(&r, 256);
		a.text[C_TXT] = text;
		a.text_len[C_TXT] = (uint16_t)tl;
		bench_buf_clear(&k);
		bench_buf_clear(&v);
		PT_REQUIRE(bt_key_pk(&k, &items, a.ints[C_ID]) == 0 && bt_value(&v, &items, &a) == 0);
		PT_REQUIRE(bt_decode_row(&d, &items, k.p, k.n, v.p, v.n) == 0);
		for (int c = 0; c < NCOLS; c++)
			PT_CHECK(c == C_TXT || d.ints[c] == a.ints[c]);
		PT_CHECK(d.text_len[C_TXT] == tl && memcmp(d.text[C_TXT], text, tl) == 0);
		/* every truncation and an extension of the value is refused */
		for (size_t cut = 0; cut < v.n; cut += 1 + cut / 4)
			PT_CHECKF(bt_decode_row(&d, &items, k.p, k.n, v.p, cut) != 0, "cut %zu", cut);
		bench_buf_clear(&bad);
		bench_buf_put(&bad, v.p, v.n);
		bench_buf_putc(&bad, 0);
		PT_CHECK(bt_decode_row(&d, &items, k.p, k.n, bad.p, bad.n) != 0);
		/* keys: truncated, extended, another table, another index */
		PT_CHECK(bt_decode_row(&d, &items, k.p, k.n - 1, v.p, v.n) != 0);
		bench_buf_clear(&bad);
		bench_buf_put(&bad, k.p, k.n);
		bench_buf_putc(&bad, 0);
		PT_CHECK(bt_decode_row(&d, &items, bad.p, bad.n, v.p, v.n) != 0);
		bad.p[0] ^= 1;
		PT_CHECK(bt_decode_row(&d, &items, bad.p, k.n, v.p, v.n) != 0);
		bad.p[0] ^= 1;
		bad.p[1] = 1;
		PT_CHECK(bt_decode_row(&d, &items, bad.p, k.n, v.p, v.n) != 0);
		PT_CHECK(bt_decode_index(&d, &items, 1, k.p, k.n) != 0);
		PT_CHECK(bt_decode_index(&d, &items, 3, k.p, k.n) != 0);
	}
	/* a TEXT length past the limit, in a value and when encoding */
	bt_row a, d;
	memset(&a, 0, sizeof(a));
	bench_buf_clear(&k);
	bench_buf_clear(&bad);
	PT_REQUIRE(bt_key_pk(&k, &items, 5) == 0);
	for (int c = 1; c < NCOLS; c++)
		if (c == C_TXT) {
			bench_buf_put16be(&bad, BT_MAX_TEXT + 1);
			for (int j = 0; j <= BT_MAX_TEXT; j++)
				bench_buf_putc(&bad, 'x');
		} else {
			bench_buf_put(&bad, "\x80\0\0\0\0\0\0\0", 8);
		}
	PT_CHECK(bt_decode_row(&d, &items, k.p, k.n, bad.p, bad.n) != 0);
	a.text[C_TXT] = text;
	a.text_len[C_TXT] = BT_MAX_TEXT + 1;
	bench_buf_clear(&v);
	PT_CHECK(bt_value(&v, &items, &a) != 0);
	PT_CHECK(bt_decode_row(&d, &items, NULL, 0, NULL, 0) != 0);
	bench_buf_free(&k);
	bench_buf_free(&v);
	bench_buf_free(&bad);
}

/* ---- the model ------------------------------------------------------------------------- */

#define SPAN 600 /* primary keys in [-SPAN/2, SPAN/2) */
#define OFF (SPAN / 2)

typedef struct model {
	int present[SPAN];
	bt_row rows[SPAN];
	char text[SPAN][24];
} model;

static void make_row(bt_row *r, char *text, int64_t pk, uint64_t x)
{
	memset(r, 0, sizeof(*r));
	r->ints[C_ID] = pk;
	r->ints[C_A] = (int64_t)(x % 41) - 20;
	r->ints[C_B] = (int64_t)(x >> 8) % 7 - 3;
	r->ints[C_D] = (int64_t)(x >> 16) % 1000 - 500;
	size_t n = (x >> 32) % 20;
	for (size_t i = 0; i < n; i++)
		text[i] = (char)('a' + (x >> (i % 32)) % 26);
	r->text[C_TXT] = text;
	r->text_len[C_TXT] = (uint16_t)n;
}

static void model_put(model *m, const bt_row *r)
{
	int i = (int)(r->ints[C_ID] + OFF);
	m->present[i] = 1;
	m->rows[i] = *r;
	memcpy(m->text[i], r->text[C_TXT], r->text_len[C_TXT]);
	m->rows[i].text[C_TXT] = m->text[i];
}

typedef struct load_ctx {
	uint64_t seed;
	char text[24];
} load_ctx;

static int load_row(void *payload, uint64_t i, bt_row *row)
{
	load_ctx *c = payload;
	make_row(row, c->text, (int64_t)i - 150, bench_mix64(c->seed + i));
	return 0;
}

/* The key columns of row r in index ix (0: the primary key). */
static int tuple(int64_t *out, int ix, const bt_row *r)
{
	if (ix == 0) {
		out[0] = r->ints[C_ID];
		return 1;
	}
	const bt_index *x = &items.indexes[ix - 1];
	for (int c = 0; c < x->ncols; c++)
		out[c] = r->ints[x->cols[c]];
	out[x->ncols] = r->ints[C_ID];
	return x->ncols + 1;
}

static int cmp_tuple(const int64_t *a, const int64_t *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

static int64_t sort_ix;
static int cmp_rows(const void *x, const void *y)
{
	int64_t a[BT_MAX_INDEX_COLS + 1], b[BT_MAX_INDEX_COLS + 1];
	int n = tuple(a, (int)sort_ix, *(const bt_row *const *)x);
	tuple(b, (int)sort_ix, *(const bt_row *const *)y);
	return cmp_tuple(a, b, n);
}

static int64_t model_range(const model *m, const bt_range_q *q)
{
	const bt_row *sel[SPAN];
	size_t n = 0;
	int64_t t[BT_MAX_INDEX_COLS + 1], out = 0;
	for (int i = 0; i < SPAN; i++) {
		if (!m->present[i])
			continue;
		tuple(t, q->index, &m->rows[i]);
		if (cmp_tuple(t, q->lo, q->nlo) < 0 || cmp_tuple(t, q->hi, q->nhi) > 0)
			continue;
		sel[n++] = &m->rows[i];
	}
	sort_ix = q->index;
	qsort(sel, n, sizeof(sel[0]), cmp_rows);
	if (q->limit && n > q->limit)
		n = q->limit;
	if (q->agg != BT_SUM)
		return (int64_t)n;
	for (size_t i = 0; i < n; i++)
		out += sel[i]->ints[q->col];
	return out;
}

static int rows_equal(const bt_row *a, const bt_row *b)
{
	for (int c = 0; c < NCOLS; c++)
		if (c != C_TXT && a->ints[c] != b->ints[c])
			return 0;
	return a->text_len[C_TXT] == b->text_len[C_TXT] &&
	       memcmp(a->text[C_TXT], b->text[C_TXT], a->text_len[C_TXT]) == 0;
}

/* A present primary key, or SPAN if none. */
static int pick_present(const model *m, bench_rng *r)
{
	int start = (int)bench_rng_below(r, SPAN);
	for (int i = 0; i < SPAN; i++)
		if (m->present[(start + i) % SPAN])
			return (start + i) % SPAN;
	return SPAN;
}

/* ---- the contenders -------------------------------------------------------------------- */

static char schema[64];

static bt_table bare; /* items without its indexes: loaded first, indexed after (l.x) */
static const bt_table *const bare_tables[] = {&bare};

static bt_db *open_db_with(bt_kind kind, int create, const bt_table *const *with)
{
	bt_db *db = NULL;
	char err[512] = "";
	int rc = bt_db_open(&db, kind, getenv("PROLLY_PG_URL"), schema,
	                    kind == BT_PLAIN ? NULL : "tables", with, 1, create, 0, err, sizeof(err));
	PT_CHECKF(rc == 0, "%s: %s", bt_contender_names[kind], err);
	return rc ? NULL : db;
}

static bt_db *open_db(bt_kind kind, int create)
{
	return open_db_with(kind, create, tables);
}

static void run_sequence(bt_kind kind)
{
	static model m, w; /* the committed state and the transaction's */
	bench_rng r;
	bt_db *db;
	bt_session *s = NULL;
	char err[512], text[24];
	load_ctx lc = {PT_SEED(), {0}};

	tm_pg_schema_name(schema, bt_contender_names[kind]);
	if (kind == BT_SQL) { /* the store first, then the extension in it */
		PT_REQUIRE((db = open_db(BT_CLIENT, 1)) != NULL);
		bt_db_close(db);
	}
	bare = items;
	bare.nindexes = 0;
	if (!(db = open_db_with(kind, 1, bare_tables)))
		return;
	PT_REQUIRE(bt_session_open(&s, db, err, sizeof(err)) == 0);
	memset(&m, 0, sizeof(m));
	PT_REQUIRE(bt_load(s, &bare, 300, 64, load_row, &lc) == 0);
	for (int ix = 1; ix <= items.nindexes; ix++)
		PT_CHECKF(bt_create_index(s, &items, ix) == 0, "%s", bt_session_error(s));
	int64_t none = 0;
	size_t zero = 1;
	PT_CHECK(bt_get_many(s, &items, &none, 0, &zero) == 0 && zero == 0);
	for (uint64_t i = 0; i < 300; i++) {
		bt_row row;
		load_row(&lc, i, &row);
		model_put(&m, &row);
	}
	bench_rng_seed(&r, PT_SEED() + 7);
	for (int step = 0; step < 150 && !pt_failed_now; step++) {
		uint64_t what = bench_rng_below(&r, 10);
		if (what < 3) { /* a transaction */
			w = m;
			for (int i = 0; i < SPAN; i++)
				if (w.present[i])
					w.rows[i].text[C_TXT] = w.text[i];
			PT_REQUIRE(bt_begin(s) == 0);
			int nops = 1 + (int)bench_rng_below(&r, 6);
			for (int op = 0; op < nops; op++) {
				uint64_t o = bench_rng_below(&r, op == 0 ? 4 : 3);
				int i = (int)bench_rng_below(&r, SPAN);
				bt_row row;
				if (o == 3) { /* delete_oldest: first in a transaction only */
					int64_t from = (int64_t)bench_rng_below(&r, SPAN) - OFF;
					uint64_t n = bench_rng_below(&r, 6), got = 0, want = 0;
					PT_CHECKF(bt_delete_oldest(s, &items, from, n, &got) == 0, "%s",
					          bt_session_error(s));
					for (int j = (int)(from + OFF); j < SPAN && want < n; j++)
						if (w.present[j]) {
							w.present[j] = 0;
							want++;
						}
					PT_CHECKF(got == want, "delete_oldest %llu, want %llu", (unsigned long long)got,
					          (unsigned long long)want);
				} else if (o == 0 && !w.present[i]) {
					make_row(&row, text, i - OFF, bench_rng_next(&r));
					PT_CHECKF(bt_insert(s, &items, &row) == 0, "%s", bt_session_error(s));
					model_put(&w, &row);
				} else if (o == 1 && (i = pick_present(&w, &r)) < SPAN) {
					make_row(&row, text, i - OFF, bench_rng_next(&r));
					PT_CHECKF(bt_update(s, &items, &w.rows[i], &row) == 0, "%s",
					          bt_session_error(s));
					model_put(&w, &row);
				} else if (o == 2 && (i = pick_present(&w, &r)) < SPAN) {
					PT_CHECKF(bt_delete(s, &items, &w.rows[i]) == 0, "%s", bt_session_error(s));
					w.present[i] = 0;
				}
			}
			PT_CHECKF(bt_commit(s) == 0, "%s", bt_session_error(s));
			m = w;
			for (int i = 0; i < SPAN; i++)
				if (m.present[i])
					m.rows[i].text[C_TXT] = m.text[i];
		} else if (what < 5) { /* get */
			int i = (int)bench_rng_below(&r, SPAN), found = -1;
			bt_row row;
			PT_CHECKF(bt_get(s, &items, i - OFF, &row, &found) == 0, "%s", bt_session_error(s));
			PT_CHECKF(found == m.present[i], "get %d: found %d", i - OFF, found);
			if (found == 1 && m.present[i])
				PT_CHECKF(rows_equal(&row, &m.rows[i]), "get %d: another row", i - OFF);
		} else if (what < 6) { /* get_many: some keys twice, counted once */
			uint64_t idx[32];
			int64_t pks[40];
			size_t n = 1 + bench_rng_below(&r, 32), want = 0, got = 0, dup;
			PT_REQUIRE(bench_rng_sample_distinct(&r, SPAN, idx, n) == 0);
			for (size_t j = 0; j < n; j++) {
				pks[j] = (int64_t)idx[j] - OFF;
				want += (size_t)m.present[idx[j]];
			}
			for (dup = bench_rng_below(&r, 8); dup > 0; dup--, n++)
				pks[n] = pks[bench_rng_below(&r, n)];
			PT_CHECKF(bt_get_many(s, &items, pks, n, &got) == 0, "%s", bt_session_error(s));
			PT_CHECKF(got == want, "get_many: %zu, want %zu", got, want);
		} else { /* a range */
			bt_range_q q;
			int64_t got = 0, want;
			memset(&q, 0, sizeof(q));
			q.index = (int)bench_rng_below(&r, 3);
			int ncols = q.index == 0 ? 1 : items.indexes[q.index - 1].ncols + 1;
			q.nlo = (int)bench_rng_below(&r, (uint64_t)ncols + 1);
			q.nhi = (int)bench_rng_below(&r, (uint64_t)ncols + 1);
			for (int c = 0; c < ncols; c++) {
				int64_t span = c == ncols - 1 ? SPAN : (q.index == 1 ? 41 : c == 0 ? 7 : 1000);
				q.lo[c] = (int64_t)bench_rng_below(&r, (uint64_t)span) - span / 2;
				q.hi[c] = q.lo[c] + (int64_t)bench_rng_below(&r, (uint64_t)span);
			}
			q.limit = bench_rng_below(&r, 2) ? bench_rng_below(&r, 50) : 0;
			q.agg = (bt_agg)bench_rng_below(&r, 3);
			static const int sum_cols[3][3] = {
			    {C_A, C_D, C_ID}, {C_A, C_ID, C_A}, {C_B, C_D, C_ID}};
			q.col = sum_cols[q.index][bench_rng_below(&r, 3)];
			PT_CHECKF(bt_range(&got, s, &items, &q) == 0, "%s", bt_session_error(s));
			want = model_range(&m, &q);
			PT_CHECKF(got == want,
			          "%s step %d: range index %d nlo %d nhi %d limit %llu agg %d col %d: %lld, "
			          "want %lld",
			          bt_contender_names[kind], step, q.index, q.nlo, q.nhi,
			          (unsigned long long)q.limit, (int)q.agg, q.col, (long long)got,
			          (long long)want);
		}
	}
	/* a last full comparison: every row */
	for (int i = 0; i < SPAN; i++) {
		int found = -1;
		bt_row row;
		PT_CHECK(bt_get(s, &items, i - OFF, &row, &found) == 0);
		PT_CHECKF(found == m.present[i] && (!found || rows_equal(&row, &m.rows[i])), "row %d",
		          i - OFF);
	}
	bt_session_close(s);
	bt_db_close(db);
}

PT_TEST(plain_follows_the_model)
{
	run_sequence(BT_PLAIN);
	tm_pg_schema_drop(schema);
}

PT_TEST(client_follows_the_model)
{
	run_sequence(BT_CLIENT);
	tm_pg_schema_drop(schema);
}

PT_TEST(sql_follows_the_model)
{
	run_sequence(BT_SQL);
	tm_pg_schema_drop(schema);
}

/* Two sessions of contender kind on a fresh store with row 1 (a = -20): *db, *a, *b; 0, or -1
 * after a failed check (then nothing is left open). */
static int two_sessions(bt_kind kind, bt_db **db, bt_session **a, bt_session **b)
{
	char err[512] = "", text[24];
	bt_row r;
	tm_pg_schema_name(schema, "btx");
	if (kind == BT_SQL) {
		/* the store first, then the extension in it */
		if (!(*db = open_db(BT_CLIENT, 1)))
			return -1;
		bt_db_close(*db);
	}
	if (!(*db = open_db(kind, 1)))
		return -1;
	*a = *b = NULL;
	make_row(&r, text, 1, 0);
	if (bt_session_open(a, *db, err, sizeof(err)) || bt_session_open(b, *db, err, sizeof(err)) ||
	    bt_begin(*a) || bt_insert(*a, &items, &r) || bt_commit(*a)) {
		PT_CHECKF(0, "%s: %s", bt_contender_names[kind],
		          err[0] ? err
		          : *a   ? bt_session_error(*a)
		                 : "");
		bt_session_close(*a);
		bt_session_close(*b);
		bt_db_close(*db);
		return -1;
	}
	return 0;
}

/* Two transactions begin on one head and write different rows: the second to commit finds the
 * head moved and merges into it (snapshot isolation: no conflict, nothing redone). */
static void lost_race_merges(bt_kind kind)
{
	bt_db *db;
	bt_session *a = NULL, *b = NULL;
	char text[24];
	bt_row r1, r2;
	int found = 0;
	PT_REQUIRE(two_sessions(kind, &db, &a, &b) == 0);
	make_row(&r1, text, 2, 11);
	PT_CHECK(bt_begin(a) == 0 && bt_begin(b) == 0);
	PT_CHECK(bt_insert(a, &items, &r1) == 0);
	make_row(&r2, text, 3, 22);
	PT_CHECK(bt_insert(b, &items, &r2) == 0);
	PT_CHECKF(bt_commit(a) == 0, "%s", bt_session_error(a));
	PT_CHECK(bt_session_rebased(a) == 0);
	PT_CHECKF(bt_commit(b) == 0, "%s", bt_session_error(b));
	PT_CHECK(bt_session_rebased(b) == (kind == BT_CLIENT)); /* sql: the server does not say */
	PT_CHECK(bt_get(a, &items, 2, &r1, &found) == 0 && found == 1);
	PT_CHECK(bt_get(a, &items, 3, &r1, &found) == 0 && found == 1);
	PT_CHECK(bt_get(a, &items, 1, &r1, &found) == 0 && found == 1);
	bt_session_close(a);
	bt_session_close(b);
	bt_db_close(db);
	tm_pg_schema_drop(schema);
}

PT_TEST(client_lost_race_on_other_rows_merges)
{
	lost_race_merges(BT_CLIENT);
}

PT_TEST(sql_lost_race_on_other_rows_merges)
{
	lost_race_merges(BT_SQL);
}

/* Two transactions begin on one head and update the same row (by the same delta: the same new
 * value, which a merge would take as one change): the second commit is BT_CONFLICT and writes
 * nothing; begun again, it reads the first one's update and lands, so neither update is lost. */
static void same_row_conflicts(bt_kind kind)
{
	bt_db *db;
	bt_session *a = NULL, *b = NULL;
	bt_row old, row;
	int found = 0;
	PT_REQUIRE(two_sessions(kind, &db, &a, &b) == 0);
	PT_CHECK(bt_begin(a) == 0 && bt_begin(b) == 0);
	for (int i = 0; i < 2; i++) {
		bt_session *s = i ? b : a;
		PT_REQUIRE(bt_get(s, &items, 1, &old, &found) == 0 && found);
		row = old;
		row.ints[C_A] += 5;
		PT_CHECK(bt_update(s, &items, &old, &row) == 0);
	}
	PT_CHECKF(bt_commit(a) == 0, "%s", bt_session_error(a));
	PT_CHECKF(bt_commit(b) == BT_CONFLICT, "%s", bt_session_error(b));
	PT_CHECK(bt_begin(b) == 0 && bt_get(b, &items, 1, &old, &found) == 0 && found);
	PT_CHECK(old.ints[C_A] == -15);
	row = old;
	row.ints[C_A] += 5;
	PT_CHECK(bt_update(b, &items, &old, &row) == 0);
	PT_CHECKF(bt_commit(b) == 0, "%s", bt_session_error(b));
	PT_CHECK(bt_get(a, &items, 1, &old, &found) == 0 && found && old.ints[C_A] == -10);
	bt_session_close(a);
	bt_session_close(b);
	bt_db_close(db);
	tm_pg_schema_drop(schema);
}

PT_TEST(client_same_row_conflicts)
{
	same_row_conflicts(BT_CLIENT);
}

PT_TEST(sql_same_row_conflicts)
{
	same_row_conflicts(BT_SQL);
}

/* A plain range of ten entries reads ten index entries, not the table: its ORDER BY must be the
 * index's columns, not a row value of them (PostgreSQL sorts a row value: a scan of the whole
 * table per range). 100k rows; after the ranges have run, the plan each prepared range statement
 * runs now (EXPLAIN EXECUTE on the session's connection) is an index scan without a sort. */
static int wide_row(void *payload, uint64_t i, bt_row *row)
{
	(void)payload;
	memset(row, 0, sizeof(*row));
	row->ints[C_ID] = (int64_t)i;
	row->ints[C_A] = (int64_t)(bench_mix64(i) % 100000);
	row->ints[C_B] = (int64_t)(bench_mix64(i + 1) % 1000);
	row->ints[C_D] = (int64_t)(bench_mix64(i + 2) % 100000);
	row->text[C_TXT] = "x";
	row->text_len[C_TXT] = 1;
	return 0;
}

PT_TEST(plain_range_reads_the_index)
{
	bt_db *db;
	bt_session *s = NULL;
	char err[512];
	tm_pg_schema_name(schema, "btr");
	if (!(db = open_db(BT_PLAIN, 1)))
		return;
	PT_REQUIRE(bt_session_open(&s, db, err, sizeof(err)) == 0);
	PT_CHECKF(bt_load(s, &items, 100000, 20000, wide_row, NULL) == 0, "%s", bt_session_error(s));
	bench_rng r;
	bench_rng_seed(&r, PT_SEED());
	for (int i = 0; i < 60; i++) {
		bt_range_q q;
		int64_t got = 0;
		memset(&q, 0, sizeof(q));
		q.index = 1 + i % 2;
		q.lo[0] = (int64_t)bench_rng_below(&r, q.index == 1 ? 90000 : 900);
		q.nlo = 1;
		q.limit = 10;
		PT_CHECKF(bt_range(&got, s, &items, &q) == 0 && got == 10, "%s", bt_session_error(s));
	}
	for (int index = 1; index <= 2; index++) {
		/* bt__plain_range's statement for one lower bound and a limit (plain.c) */
		char sql[128], plan[2048] = "";
		snprintf(sql, sizeof(sql), "EXPLAIN EXECUTE bt%u_r%d_1_0_1_0_0(5, 10)", (unsigned)items.id,
		         index);
		PGresult *res = PQexec(s->pg, sql);
		int ok = PQresultStatus(res) == PGRES_TUPLES_OK;
		size_t used = 0;
		for (int row = 0; ok && row < PQntuples(res) && used + 1 < sizeof(plan); row++) {
			int w = snprintf(plan + used, sizeof(plan) - used, "%s\n", PQgetvalue(res, row, 0));
			used = w < 0 ? sizeof(plan) : used + (size_t)w;
		}
		PQclear(res);
		PT_CHECKF(ok && strstr(plan, "Index") && !strstr(plan, "Sort") && !strstr(plan, "Seq Scan"),
		          "index %d's range of ten: %s", index, ok ? plan : PQerrorMessage(s->pg));
	}
	bt_session_close(s);
	bt_db_close(db);
	tm_pg_schema_drop(schema);
}

/* Threads that each add 1 to one row's column a, N times, retrying on BT_CONFLICT: with the
 * compare-and-swap no increment is lost. */
#define INCS 15

typedef struct incr {
	bt_db *db;
	int64_t pk; /* the row incremented */
	int ok, conflicts;
} incr;

static void *increment(void *arg)
{
	incr *c = arg;
	bt_session *s = NULL;
	char err[512];
	if (bt_session_open(&s, c->db, err, sizeof(err)))
		return NULL;
	for (int i = 0; i < INCS;) {
		bt_row old, row;
		int found = 0;
		if (bt_begin(s) || bt_get(s, &items, c->pk, &old, &found) || !found)
			break;
		row = old;
		row.ints[C_A]++;
		if (bt_update(s, &items, &old, &row))
			break;
		int rc = bt_commit(s);
		if (rc == BT_CONFLICT)
			c->conflicts++;
		else if (rc)
			break;
		else
			i++, c->ok++;
	}
	bt_session_close(s);
	return NULL;
}

static void no_lost_update(bt_kind kind)
{
	bt_db *db;
	bt_session *s = NULL;
	char err[512], text[24];
	bt_row r;
	int found = 0;
	incr c[3];
	pthread_t th[3];
	tm_pg_schema_name(schema, "bti");
	if (kind == BT_SQL) {
		PT_REQUIRE((db = open_db(BT_CLIENT, 1)) != NULL);
		bt_db_close(db);
	}
	PT_REQUIRE((db = open_db(kind, 1)) != NULL);
	PT_REQUIRE(bt_session_open(&s, db, err, sizeof(err)) == 0);
	make_row(&r, text, 1, 0); /* a = -20 */
	PT_REQUIRE(bt_begin(s) == 0 && bt_insert(s, &items, &r) == 0 && bt_commit(s) == 0);
	for (int i = 0; i < 3; i++) {
		c[i] = (incr){db, 1, 0, 0};
		PT_REQUIRE(pthread_create(&th[i], NULL, increment, &c[i]) == 0);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	PT_CHECK(c[0].ok == INCS && c[1].ok == INCS && c[2].ok == INCS);
	printf("# %s: %d commits lost a race and were retried\n", bt_contender_names[kind],
	       c[0].conflicts + c[1].conflicts + c[2].conflicts);
	PT_CHECK(bt_get(s, &items, 1, &r, &found) == 0 && found);
	PT_CHECKF(r.ints[C_A] == -20 + 3 * INCS, "a = %lld after %d increments (%d conflicts)",
	          (long long)r.ints[C_A], 3 * INCS, c[0].conflicts + c[1].conflicts + c[2].conflicts);
	/* the index entry moved with the row: one entry, at the last value */
	bt_range_q q;
	int64_t n = 0;
	memset(&q, 0, sizeof(q));
	q.index = 1;
	q.agg = BT_COUNT;
	PT_CHECK(bt_range(&n, s, &items, &q) == 0 && n == 1);
	q.nlo = q.nhi = 1;
	q.lo[0] = q.hi[0] = -20 + 3 * INCS;
	PT_CHECK(bt_range(&n, s, &items, &q) == 0 && n == 1);
	bt_session_close(s);
	bt_db_close(db);
	tm_pg_schema_drop(schema);
}

PT_TEST(client_concurrent_increments_none_lost)
{
	no_lost_update(BT_CLIENT);
}

PT_TEST(sql_concurrent_increments_none_lost)
{
	no_lost_update(BT_SQL);
}

/* Threads that each increment their own row, at once: their commits race for the one branch
 * head, and every lost race merges (none is BT_CONFLICT), and every increment is there. */
static void disjoint_rows_merge(bt_kind kind)
{
	bt_db *db;
	bt_session *s = NULL;
	char err[512], text[24];
	bt_row r;
	int found = 0, conflicts = 0;
	incr c[3];
	pthread_t th[3];
	tm_pg_schema_name(schema, "btd");
	if (kind == BT_SQL) {
		PT_REQUIRE((db = open_db(BT_CLIENT, 1)) != NULL);
		bt_db_close(db);
	}
	PT_REQUIRE((db = open_db(kind, 1)) != NULL);
	PT_REQUIRE(bt_session_open(&s, db, err, sizeof(err)) == 0);
	PT_REQUIRE(bt_begin(s) == 0);
	for (int i = 0; i < 3; i++) {
		make_row(&r, text, i + 1, 0); /* a = -20 */
		PT_REQUIRE(bt_insert(s, &items, &r) == 0);
	}
	PT_REQUIRE(bt_commit(s) == 0);
	for (int i = 0; i < 3; i++) {
		c[i] = (incr){db, i + 1, 0, 0};
		PT_REQUIRE(pthread_create(&th[i], NULL, increment, &c[i]) == 0);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 3; i++) {
		PT_CHECK(c[i].ok == INCS);
		conflicts += c[i].conflicts;
		PT_CHECK(bt_get(s, &items, i + 1, &r, &found) == 0 && found);
		PT_CHECKF(r.ints[C_A] == -20 + INCS, "row %d: a = %lld", i + 1, (long long)r.ints[C_A]);
	}
	PT_CHECKF(conflicts == 0, "%d commits of disjoint rows were sent back", conflicts);
	bt_session_close(s);
	bt_db_close(db);
	tm_pg_schema_drop(schema);
}

PT_TEST(client_concurrent_disjoint_rows_merge)
{
	disjoint_rows_merge(BT_CLIENT);
}

PT_TEST(sql_concurrent_disjoint_rows_merge)
{
	disjoint_rows_merge(BT_SQL);
}

/* plain: a statement that fails inside a transaction fails its commit too (PostgreSQL's COMMIT
 * of an aborted transaction succeeds as a ROLLBACK), and nothing of it stays. */
PT_TEST(plain_failed_statement_fails_the_commit)
{
	bt_db *db;
	bt_session *s = NULL;
	char err[512], text[24];
	bt_row r, got;
	int found = 1;
	tm_pg_schema_name(schema, "btf");
	PT_REQUIRE((db = open_db(BT_PLAIN, 1)) != NULL);
	PT_REQUIRE(bt_session_open(&s, db, err, sizeof(err)) == 0);
	make_row(&r, text, 1, 11);
	PT_CHECK(bt_begin(s) == 0 && bt_insert(s, &items, &r) == 0);
	PT_CHECK(bt_insert(s, &items, &r) == -1 && strstr(bt_session_error(s), "duplicate"));
	PT_CHECK(bt_commit(s) == -1 && strstr(bt_session_error(s), "rolled back"));
	PT_CHECK(bt_get(s, &items, 1, &got, &found) == 0 && found == 0);
	PT_CHECK(bt_begin(s) == 0 && bt_insert(s, &items, &r) == 0 && bt_commit(s) == 0);
	PT_CHECK(bt_get(s, &items, 1, &got, &found) == 0 && found == 1 && rows_equal(&got, &r));
	bt_session_close(s);
	bt_db_close(db);
	tm_pg_schema_drop(schema);
}

PT_TEST(hostile_arguments_refused)
{
	bt_db *db = NULL;
	char err[512] = "";
	bt_table twin = items;
	const bt_table *two[] = {&items, &twin};
	PT_CHECK(bt_db_open(&db, BT_PLAIN, getenv("PROLLY_PG_URL"), "x", NULL, two, 2, 0, 0, err,
	                    sizeof(err)) != 0 &&
	         strstr(err, "share table id"));
	PT_CHECK(bt_db_open(&db, BT_CLIENT, getenv("PROLLY_PG_URL"), "x", "bad..name", tables, 1, 1, 0,
	                    err, sizeof(err)) != 0 &&
	         db == NULL);
	/* a password in the URL never shows */
	PT_CHECK(bt_db_open(&db, BT_PLAIN, "postgresql://u:s3cretpw@127.0.0.1:1/none", "x", NULL,
	                    tables, 1, 0, 0, err, sizeof(err)) != 0);
	PT_CHECKF(!strstr(err, "s3cretpw"), "%s", err);
}

int main(int argc, char **argv)
{
	if (tm_pg_guard_tap() != 0)
		return 1;
	return pt_run(argc, argv);
}
