/*
 * test_golden.c - golden vectors that pin the on-disk format.
 *
 * ANY CHANGE TO THE IDS BELOW IS A FORMAT CHANGE: stored trees would no longer be found by their
 * ids and two builds would disagree about the same records. Such a change must bump
 * PROLLY_FORMAT_VERSION (src/internal.h), document the new layout at the top of src/node.c and
 * in docs/format.md, and only then update these constants.
 *
 * What is pinned:
 *   - the empty tree id (SHA-256 of the 20-byte empty leaf);
 *   - the exact bytes of a 2-record leaf and of a 2-child internal node, written out by hand from
 *     the layout table at the top of src/node.c;
 *   - the root ids of keys "k%06d" -> values "v%d" for n = 1, 10, 1000, 100000;
 *   - agreement, on random record sets, between the engine and an independent re-implementation
 *     here of the documented encoding and tree assembly (the boundary rule from the independent
 *     reference in tests/lib/boundary_ref.c, nothing from the library).
 */
#include "internal.h"
#include "lib/boundary_ref.h"
#include "lib/model.h"
#include "ptest.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

/* ---- the constants ------------------------------------------------------------------------- */

#define GOLDEN_EMPTY "7f29bea50c8d74c95852ac1695923ff73615411d342a78b11e46a048f20256ab"

static const struct {
	unsigned n;
	const char *root;
} golden_k06d[] = {
    {1, "fa3461e61ea55879cc0997389944de16ef59b353fc18840b69c938c7c9281836"},
    {10, "e952b937b7ed3c4ded8f377cd7a0d02f7d088896b809b4814690f31d47bffb96"},
    {1000, "0a729fa1866fff8fddc13cf0928ea9c587b1a121a063f82e15c17f4f570abcc4"},
    {100000, "a3fc490bbfbc300f9ec4455137e2b64619a8e2f4b6caa55cc542385af834446e"},
};

/* ---- helpers ------------------------------------------------------------------------------- */

static void sha256(prolly_id *out, const void *p, size_t n)
{
	unsigned int len = 0;
	EVP_Digest(p, n, out->bytes, &len, EVP_sha256(), NULL);
}

static prolly_db *open_mem(void)
{
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	if (prolly_store_mem_new(&st) != 0)
		return NULL;
	if (prolly_db_new(&db, st, NULL) != 0)
		return NULL;
	return db;
}

typedef struct fetched {
	unsigned char *p;
	size_t n;
} fetched;

static int fetch_cb(void *payload, size_t index, const void *data, size_t size)
{
	fetched *f = payload;
	(void)index;
	f->p = malloc(size);
	memcpy(f->p, data, size);
	f->n = size;
	return 0;
}

/* The stored bytes of a node (the db's store, after commit). */
static fetched fetch(prolly_db *db, const prolly_id *id)
{
	fetched f = {NULL, 0};
	prolly_store *st = prolly_db_store(db);
	st->get_nodes(st, id, 1, fetch_cb, &f);
	return f;
}

static void put32(unsigned char **p, uint32_t v)
{
	prolly__wr32(*p, v);
	*p += 4;
}

static void put_bytes(unsigned char **p, const void *d, size_t n)
{
	memcpy(*p, d, n);
	*p += n;
}

/* ---- the empty tree ------------------------------------------------------------------------ */

PT_TEST(golden_empty_tree)
{
	prolly_id e, h, g;
	prolly_id_empty_tree(&e);
	static const unsigned char bytes[20] = {'P', 'R', 'L', 'Y', 1, 0, 0, 0, 0, 0,
	                                        0,   0,   0,   0,   0, 0, 0, 0, 0, 0};
	sha256(&h, bytes, sizeof(bytes));
	PT_CHECK_RC(prolly_id_from_hex(&g, GOLDEN_EMPTY), 0);
	PT_CHECKF(prolly_id_equal(&e, &g), "empty tree %s, golden %s", tm_hex(&e), GOLDEN_EMPTY);
	PT_CHECKF(prolly_id_equal(&h, &g), "SHA-256 of the documented empty leaf is %s", tm_hex(&h));
	/* Building nothing and deleting everything give the same id. */
	prolly_db *db = open_mem();
	PT_REQUIRE(db);
	prolly_txn *txn = NULL;
	prolly_id r;
	tm_model m;
	tm_model_init(&m);
	PT_CHECK_RC(prolly_txn_begin(&txn, db), 0);
	PT_CHECK_RC(tm_build(&r, txn, &m), 0);
	PT_CHECK(prolly_id_equal(&r, &g));
	prolly_edit ed = {PROLLY_PUT, {"x", 1}, {"y", 1}};
	PT_CHECK_RC(prolly_edit_tree(&r, txn, &g, &ed, 1), 0);
	ed.op = PROLLY_DEL;
	PT_CHECK_RC(prolly_edit_tree(&r, txn, &r, &ed, 1), 0);
	PT_CHECK(prolly_id_equal(&r, &g));
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &g, 0), 0);
	PT_CHECK(ts.records == 0 && ts.height == 1 && ts.nodes == 1 && ts.bytes == 20);
	prolly_txn_free(txn);
	prolly_close(db);
}

/* ---- exact node bytes ---------------------------------------------------------------------- */

PT_TEST(golden_leaf_bytes)
{
	/* Records "a" -> "1" and "bc" -> "23", laid out by hand from the table in src/node.c. */
	static const unsigned char want[] = {
	    'P', 'R', 'L', 'Y',                         /* magic */
	    1,                                          /* format version */
	    0,                                          /* level */
	    0,   0,                                     /* flags */
	    2,   0,   0,   0,                           /* n */
	    0,   0,   0,   0,   1, 0, 0, 0, 3, 0, 0, 0, /* koff */
	    0,   0,   0,   0,   1, 0, 0, 0, 3, 0, 0, 0, /* voff */
	    'a', 'b', 'c',                              /* key heap */
	    '1', '2', '3',                              /* value heap */
	};
	prolly_id wid, root;
	sha256(&wid, want, sizeof(want));
	prolly_db *db = open_mem();
	PT_REQUIRE(db);
	tm_model m;
	tm_model_init(&m);
	tm_model_put(&m, "bc", 2, "23", 2);
	tm_model_put(&m, "a", 1, "1", 1);
	PT_CHECK_RC(tm_build_commit(&root, db, &m), 0);
	PT_CHECKF(prolly_id_equal(&root, &wid),
	          "2-record leaf: root %s, hash of the documented bytes %s", tm_hex(&root),
	          tm_hex(&wid));
	fetched f = fetch(db, &root);
	PT_CHECKF(f.n == sizeof(want) && memcmp(f.p, want, f.n) == 0, "stored leaf is %zu bytes: %s",
	          f.n, tm_bhex(f.p, f.n));
	free(f.p);
	/* The same through an edit. */
	prolly_txn *txn = NULL;
	prolly_id e, r;
	prolly_id_empty_tree(&e);
	prolly_edit ed[2] = {{PROLLY_PUT, {"bc", 2}, {"23", 2}}, {PROLLY_PUT, {"a", 1}, {"1", 1}}};
	PT_CHECK_RC(prolly_txn_begin(&txn, db), 0);
	PT_CHECK_RC(prolly_edit_tree(&r, txn, &e, ed, 2), 0);
	PT_CHECK(prolly_id_equal(&r, &wid));
	prolly_txn_free(txn);
	tm_model_dispose(&m);
	prolly_close(db);
}

PT_TEST(golden_internal_bytes)
{
	/* Two records with 10000-byte values: each fills a leaf past the point where the boundary
	 * rule all but certainly splits (checked below), so the tree is two leaves under one
	 * internal root. */
	enum { VL = 10000 };
	unsigned char *val = malloc(VL);
	memset(val, 'v', VL);
	PT_CHECK(tb_boundary(0, "a", 1, 8 + 1 + VL, 8 + 1 + VL, NULL) == 1);
	size_t lsz = 12 + 8 + 8 + 1 + VL;
	unsigned char *leaf[2];
	prolly_id lid[2];
	for (int i = 0; i < 2; i++) {
		unsigned char *p = leaf[i] = malloc(lsz);
		put_bytes(&p, "PRLY\x01\x00\x00\x00", 8);
		put32(&p, 1);
		put32(&p, 0);
		put32(&p, 1);
		put32(&p, 0);
		put32(&p, VL);
		put_bytes(&p, i ? "b" : "a", 1);
		put_bytes(&p, val, VL);
		sha256(&lid[i], leaf[i], lsz);
	}
	unsigned char root[12 + 12 + 80 + 2], *p = root;
	put_bytes(&p, "PRLY\x01\x01\x00\x00", 8); /* level 1 */
	put32(&p, 2);
	put32(&p, 0);
	put32(&p, 1);
	put32(&p, 2);
	for (int i = 0; i < 2; i++) {
		put_bytes(&p, lid[i].bytes, 32);
		prolly__wr64(p, 1);
		p += 8;
	}
	put_bytes(&p, "ab", 2);
	PT_CHECK(p == root + sizeof(root));
	prolly_id wid, got;
	sha256(&wid, root, sizeof(root));

	prolly_db *db = open_mem();
	PT_REQUIRE(db);
	tm_model m;
	tm_model_init(&m);
	tm_model_put(&m, "a", 1, val, VL);
	tm_model_put(&m, "b", 1, val, VL);
	PT_CHECK_RC(tm_build_commit(&got, db, &m), 0);
	PT_CHECKF(prolly_id_equal(&got, &wid), "2-leaf tree: root %s, documented %s", tm_hex(&got),
	          tm_hex(&wid));
	fetched f = fetch(db, &got);
	PT_CHECKF(f.n == sizeof(root) && memcmp(f.p, root, f.n) == 0, "stored root is %zu bytes: %s",
	          f.n, tm_bhex(f.p, f.n));
	free(f.p);
	for (int i = 0; i < 2; i++) {
		f = fetch(db, &lid[i]);
		PT_CHECKF(f.n == lsz && memcmp(f.p, leaf[i], lsz) == 0, "leaf %d differs", i);
		free(f.p);
		free(leaf[i]);
	}
	free(val);
	tm_model_dispose(&m);
	prolly_close(db);
}

/* ---- golden roots -------------------------------------------------------------------------- */

static int build_k06d(prolly_id *out, prolly_db *db, unsigned n)
{
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	char k[16], v[16];
	int rc = prolly_txn_begin(&txn, db);
	if (!rc)
		rc = prolly_builder_new(&b, txn);
	for (unsigned i = 0; i < n && !rc; i++) {
		int kl = snprintf(k, sizeof(k), "k%06u", i), vl = snprintf(v, sizeof(v), "v%u", i);
		rc = prolly_builder_add(b, k, (size_t)kl, v, (size_t)vl);
	}
	if (!rc)
		rc = prolly_builder_finish(b, out);
	prolly_builder_free(b);
	if (!rc)
		rc = prolly_txn_commit(txn, NULL, 0);
	prolly_txn_free(txn);
	return rc;
}

PT_TEST(golden_roots)
{
	prolly_db *db = open_mem();
	PT_REQUIRE(db);
	for (size_t i = 0; i < sizeof(golden_k06d) / sizeof(golden_k06d[0]); i++) {
		prolly_id got, want;
		PT_CHECK_RC(build_k06d(&got, db, golden_k06d[i].n), 0);
		int ok = prolly_id_from_hex(&want, golden_k06d[i].root) == 0 &&
		         prolly_id_equal(&got, &want);
		PT_CHECKF(ok,
		          "k%%06d x %u: root %s, golden %s -- a format change? see the top of this file",
		          golden_k06d[i].n, tm_hex(&got), golden_k06d[i].root);
	}
	prolly_close(db);
}

/* ---- an independent re-implementation of the format ---------------------------------------- */

typedef struct ritem {
	const unsigned char *k;
	size_t klen;
	const unsigned char *v; /* leaf: value; internal: NULL */
	size_t vlen;
	prolly_id child;
	uint64_t count;
} ritem;

/* Encodes items [a, b) of one level as the documented node; returns its size in *size. */
static unsigned char *ref_encode(const ritem *it, size_t a, size_t b, unsigned level, size_t *size)
{
	size_t n = b - a, kh = 0, vh = 0;
	for (size_t i = a; i < b; i++) {
		kh += it[i].klen;
		vh += it[i].vlen;
	}
	size_t sz = 12 + 4 * (n + 1) + (level ? 40 * n : 4 * (n + 1) + vh) + kh;
	unsigned char *out = malloc(sz), *p = out;
	put_bytes(&p, "PRLY", 4);
	*p++ = 1;
	*p++ = (unsigned char)level;
	*p++ = 0;
	*p++ = 0;
	put32(&p, (uint32_t)n);
	uint32_t off = 0;
	put32(&p, 0);
	for (size_t i = a; i < b; i++)
		put32(&p, off += (uint32_t)it[i].klen);
	if (level == 0) {
		off = 0;
		put32(&p, 0);
		for (size_t i = a; i < b; i++)
			put32(&p, off += (uint32_t)it[i].vlen);
	} else {
		for (size_t i = a; i < b; i++) {
			put_bytes(&p, it[i].child.bytes, 32);
			prolly__wr64(p, it[i].count);
			p += 8;
		}
	}
	for (size_t i = a; i < b; i++)
		put_bytes(&p, it[i].k, it[i].klen);
	if (level == 0)
		for (size_t i = a; i < b; i++)
			if (it[i].vlen)
				put_bytes(&p, it[i].v, it[i].vlen);
	*size = sz;
	return out;
}

/* The root id the documented rules give for m's records. */
static void ref_root(prolly_id *out, const tm_model *m)
{
	if (m->n == 0) {
		prolly_id_empty_tree(out);
		return;
	}
	size_t n = m->n;
	ritem *it = calloc(n, sizeof(*it));
	for (size_t i = 0; i < n; i++)
		it[i] = (ritem){m->r[i].k, m->r[i].klen, m->r[i].v, m->r[i].vlen, {{0}}, 1};
	/* Keys of the next level point into the current level's items, which stay alive. */
	ritem *levels[PROLLY_MAX_LEVEL + 1];
	unsigned nl = 0;
	for (unsigned level = 0;; level++) {
		ritem *up = calloc(n, sizeof(*up));
		size_t nup = 0, start = 0, s = 0;
		for (size_t i = 0; i < n; i++) {
			size_t r = level ? 4 + 40 + it[i].klen : 8 + it[i].klen + it[i].vlen;
			s += r;
			if (tb_boundary_decide(level, it[i].k, it[i].klen, s, r) || i + 1 == n) {
				size_t sz;
				unsigned char *node = ref_encode(it, start, i + 1, level, &sz);
				uint64_t cnt = 0;
				for (size_t j = start; j <= i; j++)
					cnt += it[j].count;
				up[nup].k = it[i].k;
				up[nup].klen = it[i].klen;
				sha256(&up[nup].child, node, sz);
				up[nup].count = cnt;
				nup++;
				free(node);
				start = i + 1;
				s = 0;
			}
		}
		levels[nl++] = it;
		if (nup == 1) {
			*out = up[0].child;
			free(up);
			break;
		}
		it = up;
		n = nup;
	}
	for (unsigned i = 0; i < nl; i++)
		free(levels[i]);
}

PT_TEST(golden_independent_encoding)
{
	uint64_t seed = PT_SEED() ^ 0x601d;
	tm_rng rng;
	tm_rng_seed(&rng, seed);
	prolly_db *db = open_mem();
	PT_REQUIRE(db);
	unsigned char kb[TM_KEY_MAX], *vb = malloc(TM_VAL_BIG);
	static const size_t sizes[] = {0, 1, 2, 30, 200, 1000, 5000, 20000};
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]) && !pt_failed_now; si++) {
		for (int key24 = 0; key24 < 2; key24++) {
			tm_model m;
			tm_model_init(&m);
			while (m.n < sizes[si]) {
				size_t kl = TM_KEY24;
				if (key24)
					tm_key24(kb, tm_rng_below(&rng, 1u << 30));
				else
					kl = tm_gen_key(&rng, kb);
				size_t vl = tm_gen_value(&rng, vb, 500);
				tm_model_put(&m, kb, kl, vb, vl);
			}
			prolly_id got, want;
			PT_CHECK_RC(tm_build_commit(&got, db, &m), 0);
			ref_root(&want, &m);
			PT_CHECKF(prolly_id_equal(&got, &want),
			          "%zu records (key24 %d): engine %s, documented format %s (seed 0x%llx)", m.n,
			          key24, tm_hex(&got), tm_hex(&want), (unsigned long long)PT_SEED());
			tm_model_dispose(&m);
		}
	}
	/* The k%06d vectors through the reference too (so the constants are the documented ones). */
	tm_model m;
	tm_model_init(&m);
	char k[16], v[16];
	for (unsigned i = 0; i < 1000; i++) {
		int kl = snprintf(k, sizeof(k), "k%06u", i), vl = snprintf(v, sizeof(v), "v%u", i);
		tm_model_put(&m, k, (size_t)kl, v, (size_t)vl);
	}
	prolly_id want, gold;
	ref_root(&want, &m);
	PT_CHECK_RC(prolly_id_from_hex(&gold, golden_k06d[2].root), 0);
	PT_CHECKF(prolly_id_equal(&want, &gold), "reference k%%06d x 1000: %s", tm_hex(&want));
	tm_model_dispose(&m);
	free(vb);
	prolly_close(db);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
