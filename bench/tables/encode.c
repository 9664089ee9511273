/*
 * encode.c - the encoding of versioned tables' rows and index entries (table.h states it; this
 * is its one implementation).
 *
 *   key     offset 0  table id (1 byte)
 *           offset 1  index id (1 byte): 0 the row, i >= 1 secondary index i
 *           offset 2  key columns, 8 bytes each: the primary key (index 0), or the index's
 *                     columns then the primary key (index i)
 *   value   index 0: every column but the primary key, in column order; index i: empty
 *   INT     8 bytes big-endian of the value with its sign bit flipped
 *   TEXT    2 bytes big-endian length (<= BT_MAX_TEXT), then the bytes
 *
 * Invariants (checked by assert where a table is used):
 *   1. the primary key and every index column are INT columns of the table;
 *   2. ncols <= BT_MAX_COLS, nindexes <= BT_MAX_INDEXES, an index has 1..BT_MAX_INDEX_COLS
 *      columns, so every key is at most 2 + 8 * (BT_MAX_INDEX_COLS + 1) bytes;
 *   3. memcmp order of two keys of one index is the order of their key-column tuples (INT
 *      encoding above, fixed width: no column's bytes can run into the next one).
 */
#include "table.h"

#include <assert.h>
#include <string.h>

#define HEAD 2    /* table id, index id */
#define INT_LEN 8 /* an encoded INT */

static void check_table(const bt_table *t)
{
	assert(t->ncols > 0 && t->ncols <= BT_MAX_COLS);
	assert(t->pk >= 0 && t->pk < t->ncols && t->cols[t->pk].type == BT_INT);
	assert(t->nindexes >= 0 && t->nindexes <= BT_MAX_INDEXES);
	for (int i = 0; i < t->nindexes; i++) {
		assert(t->indexes[i].ncols > 0 && t->indexes[i].ncols <= BT_MAX_INDEX_COLS);
		for (int c = 0; c < t->indexes[i].ncols; c++) {
			assert(t->indexes[i].cols[c] >= 0 && t->indexes[i].cols[c] < t->ncols);
			assert(t->cols[t->indexes[i].cols[c]].type == BT_INT);
		}
	}
	(void)t;
}

static void put_int(unsigned char out[INT_LEN], int64_t v)
{
	uint64_t u = (uint64_t)v ^ ((uint64_t)1 << 63);
	for (int i = INT_LEN - 1; i >= 0; i--, u >>= 8)
		out[i] = (unsigned char)u;
}

static int64_t get_int(const unsigned char *p)
{
	uint64_t u = 0;
	for (int i = 0; i < INT_LEN; i++)
		u = u << 8 | p[i];
	return (int64_t)(u ^ ((uint64_t)1 << 63));
}

static int add_int(bench_buf *out, int64_t v)
{
	unsigned char b[INT_LEN];
	put_int(b, v);
	return bench_buf_put(out, b, sizeof(b));
}

static int add_head(bench_buf *out, const bt_table *t, int index)
{
	unsigned char h[HEAD] = {t->id, (unsigned char)index};
	check_table(t);
	assert(index >= 0 && index <= t->nindexes);
	return bench_buf_put(out, h, sizeof(h));
}

int bt_key_pk(bench_buf *out, const bt_table *t, int64_t pk)
{
	return add_head(out, t, 0) || add_int(out, pk) ? -1 : 0;
}

int bt_key_index(bench_buf *out, const bt_table *t, int index, const bt_row *r)
{
	if (index < 1 || index > t->nindexes || add_head(out, t, index))
		return -1;
	const bt_index *ix = &t->indexes[index - 1];
	for (int c = 0; c < ix->ncols; c++)
		if (add_int(out, r->ints[ix->cols[c]]))
			return -1;
	return add_int(out, r->ints[t->pk]);
}

/* The number of key columns of index `index` (the primary key included). */
static int key_cols(const bt_table *t, int index)
{
	return index == 0 ? 1 : t->indexes[index - 1].ncols + 1;
}

int bt_key_prefix(bench_buf *out, const bt_table *t, int index, const int64_t *vals, int n)
{
	if (index < 0 || index > t->nindexes || n < 0 || n > key_cols(t, index) ||
	    add_head(out, t, index))
		return -1;
	for (int i = 0; i < n; i++)
		if (add_int(out, vals[i]))
			return -1;
	return 0;
}

int bt_key_prefix_end(bench_buf *out, const bt_table *t, int index, const int64_t *vals, int n)
{
	size_t start = out->n;
	if (bt_key_prefix(out, t, index, vals, n))
		return -1;
	/* The prefix plus one, as a big number: trailing 0xff bytes drop, the last other byte
	 * grows. The head's index byte is at most BT_MAX_INDEXES, so this always ends inside. */
	unsigned char *p = (unsigned char *)out->p + start;
	size_t len = out->n - start;
	while (len > 0 && p[len - 1] == 0xff)
		len--;
	assert(len > 0);
	p[len - 1]++;
	out->n = start + len;
	out->p[out->n] = '\0';
	return 0;
}

int bt_value(bench_buf *out, const bt_table *t, const bt_row *r)
{
	check_table(t);
	for (int c = 0; c < t->ncols; c++) {
		if (c == t->pk)
			continue;
		if (t->cols[c].type == BT_INT) {
			if (add_int(out, r->ints[c]))
				return -1;
		} else {
			if (r->text_len[c] > BT_MAX_TEXT || (r->text_len[c] && !r->text[c]) ||
			    bench_buf_put16be(out, r->text_len[c]) ||
			    bench_buf_put(out, r->text[c], r->text_len[c]))
				return -1;
		}
	}
	return 0;
}

/* The head of a key of table t, index `index`, with exactly the key's length. */
static int head_ok(const bt_table *t, int index, const unsigned char *k, size_t klen)
{
	check_table(t);
	return klen == HEAD + (size_t)INT_LEN * (size_t)key_cols(t, index) && k[0] == t->id &&
	       k[1] == index;
}

int bt_decode_row(bt_row *r, const bt_table *t, const void *key, size_t klen, const void *val,
                  size_t vlen)
{
	const unsigned char *k = key, *v = val, *end = v + vlen;
	if (!k || !head_ok(t, 0, k, klen) || (vlen && !v))
		return -1;
	memset(r, 0, sizeof(*r));
	r->ints[t->pk] = get_int(k + HEAD);
	for (int c = 0; c < t->ncols; c++) {
		if (c == t->pk)
			continue;
		if (t->cols[c].type == BT_INT) {
			if (end - v < INT_LEN)
				return -1;
			r->ints[c] = get_int(v);
			v += INT_LEN;
		} else {
			if (end - v < 2)
				return -1;
			size_t n = (size_t)v[0] << 8 | v[1];
			v += 2;
			if (n > BT_MAX_TEXT || (size_t)(end - v) < n)
				return -1;
			r->text[c] = (const char *)v;
			r->text_len[c] = (uint16_t)n;
			v += n;
		}
	}
	return v == end ? 0 : -1;
}

int bt_decode_index(bt_row *r, const bt_table *t, int index, const void *key, size_t klen)
{
	const unsigned char *k = key;
	if (!k || index < 1 || index > t->nindexes || !head_ok(t, index, k, klen))
		return -1;
	const bt_index *ix = &t->indexes[index - 1];
	memset(r, 0, sizeof(*r));
	for (int c = 0; c < ix->ncols; c++)
		r->ints[ix->cols[c]] = get_int(k + HEAD + (size_t)INT_LEN * (size_t)c);
	r->ints[t->pk] = get_int(k + HEAD + (size_t)INT_LEN * (size_t)ix->ncols);
	return 0;
}
