/*
 * test_history.c - history independence and the pitfalls listed in docs/prior-art (shared):
 *
 *   - the same records give the same root whatever the history: one-at-a-time inserts, random
 *     batch sizes, shuffled and reversed orders, extra keys inserted then deleted, values
 *     overwritten and restored, bulk build of a part then edits;
 *   - the shape of every tree is the one the boundary rule prescribes (every node but the last of
 *     its level ends exactly at its first boundary; sizes within the limits; no single-child root);
 *   - a mutation reads O(height) nodes, not O(N) (no walk from the start of the tree);
 *   - edits at the very start and the very end; deleting everything gives the empty tree id;
 *     deleting down to one leaf collapses the root to that leaf;
 *   - 2 KiB keys and 64 KiB values; PROLLY_ETOOBIG for bigger ones, with nothing changed.
 *
 * Re-run with a seed: PROLLY_TEST_SEED=0x... build/tests/test_history [NAME].
 */
#include "internal.h"
#include "lib/boundary_ref.h"
#include "lib/model.h"
#include "ptest.h"

#include <stdlib.h>
#include <string.h>

static prolly_db *open_mem(size_t cache_bytes)
{
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	prolly_options o;
	if (prolly_store_mem_new(&st) != 0)
		return NULL;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.cache_bytes = cache_bytes;
	if (prolly_db_new(&db, st, &o) != 0)
		return NULL;
	return db;
}

/* ---- the shape check ----------------------------------------------------------------------- */

/*
 * Walks root level by level (internal API) and checks the chunking invariants:
 *   - every node except the last of its level ends where the boundary rule first says so, and
 *     the last one has no boundary before its last item (the rule and the item sizes from the
 *     independent reference, tests/lib/boundary_ref.c, not from the library);
 *   - node sizes: at most PROLLY_CHUNK_MAX + the last item + the fixed overhead; the nodes that
 *     end at a boundary hold at least PROLLY_CHUNK_MIN bytes of items;
 *   - an internal root has at least 2 children; all levels decrease by one; child counts add up.
 * Returns 0 or -1 (details on stderr).
 */
static int check_shape(prolly_db *db, const prolly_id *root, const char *what)
{
	prolly__nodeset ws;
	prolly__nodeset_init(&ws);
	pnode *rn = NULL;
	pnode **cur = NULL, **next = NULL;
	size_t ncur = 0, nnext = 0;
	int bad = 0;
	int rc = prolly__load_root(db, &ws, root, &rn);
	if (rc) {
		fprintf(stderr, "  %s: load root: %d (%s)\n", what, rc, prolly_last_error());
		prolly__nodeset_dispose(&ws);
		return -1;
	}
	if (rn->level > 0 && rn->n < 2) {
		fprintf(stderr, "  %s: internal root %s has %u child(ren)\n", what, tm_hex(root), rn->n);
		bad = 1;
	}
	cur = malloc(sizeof(*cur));
	cur[0] = rn;
	ncur = 1;
	while (!bad) {
		unsigned level = cur[0]->level;
		for (size_t i = 0; i < ncur && !bad; i++) {
			pnode *nd = cur[i];
			if (nd->level != level) {
				fprintf(stderr, "  %s: node %s at level %u, want %u\n", what, tm_hex(&nd->id),
				        nd->level, level);
				bad = 1;
				break;
			}
			if (nd->n == 0) {
				if (!(ncur == 1 && level == 0 && nd == rn)) {
					fprintf(stderr, "  %s: empty node %s inside a tree\n", what, tm_hex(&nd->id));
					bad = 1;
				}
				break;
			}
			size_t s = 0, maxr = 0;
			for (uint32_t j = 0; j < nd->n; j++) {
				prolly_slice k = prolly__node_key(nd, j);
				size_t r = level == 0 ? tb_leaf_item_size(k.size, prolly__node_value(nd, j).size)
				                      : tb_child_item_size(k.size);
				s += r;
				maxr = r > maxr ? r : maxr;
				int b = tb_boundary_decide(level, k.data, k.size, s, r);
				int last_item = j + 1 == nd->n, last_node = i + 1 == ncur;
				if (b && !last_item) {
					fprintf(
					    stderr,
					    "  %s: node %s (level %u, %zu of %zu) has a boundary at item %u of %u\n",
					    what, tm_hex(&nd->id), level, i, ncur, j, nd->n);
					bad = 1;
					break;
				}
				if (!b && last_item && !last_node) {
					fprintf(stderr,
					        "  %s: node %s (level %u, %zu of %zu) ends without a boundary "
					        "(%u items, %zu bytes)\n",
					        what, tm_hex(&nd->id), level, i, ncur, nd->n, s);
					bad = 1;
					break;
				}
			}
			if (!bad && s > PROLLY_CHUNK_MAX + maxr) {
				fprintf(stderr, "  %s: node %s holds %zu bytes of items\n", what, tm_hex(&nd->id),
				        s);
				bad = 1;
			}
			if (!bad && i + 1 < ncur && s < PROLLY_CHUNK_MIN) {
				fprintf(stderr, "  %s: node %s holds only %zu bytes of items\n", what,
				        tm_hex(&nd->id), s);
				bad = 1;
			}
		}
		if (bad || level == 0)
			break;
		/* Next level down: every child of every node, in order. */
		size_t total = 0;
		for (size_t i = 0; i < ncur; i++)
			total += cur[i]->n;
		prolly_id *ids = malloc(sizeof(*ids) * total);
		next = malloc(sizeof(*next) * total);
		nnext = 0;
		for (size_t i = 0; i < ncur; i++)
			for (uint32_t j = 0; j < cur[i]->n; j++)
				ids[nnext++] = *prolly__node_child(cur[i], j);
		rc = prolly__load(db, &ws, ids, nnext, next);
		if (rc) {
			fprintf(stderr, "  %s: load level %u: %d (%s)\n", what, level - 1, rc,
			        prolly_last_error());
			bad = 1;
		}
		/* Counts and separator keys agree with the children. */
		size_t c = 0;
		for (size_t i = 0; i < ncur && !bad; i++)
			for (uint32_t j = 0; j < cur[i]->n && !bad; j++, c++) {
				prolly_slice sep = prolly__node_key(cur[i], j),
				             last = prolly__node_last_key(next[c]);
				if (prolly__node_child_count(cur[i], j) != next[c]->count ||
				    prolly__keycmp(sep.data, sep.size, last.data, last.size) != 0) {
					fprintf(stderr, "  %s: child %u of %s: count or last key disagrees\n", what, j,
					        tm_hex(&cur[i]->id));
					bad = 1;
				}
			}
		free(ids);
		free(cur);
		cur = next;
		ncur = nnext;
		next = NULL;
	}
	free(cur);
	prolly__nodeset_dispose(&ws);
	return bad ? -1 : 0;
}

/* ---- helpers ------------------------------------------------------------------------------- */

/* n random records (binary or key24 keys, values 0..200 bytes, big ones 1/big_den). In rounds of
 * the records still missing, each put as one batch (tm_model_apply): a round can reach n only at
 * its last record, so the records and the generator's state afterwards are those of one
 * tm_model_put per record until m holds n, without moving the model's tail for every record. */
static void gen_records(tm_model *m, tm_rng *rng, size_t n, int key24, unsigned big_den)
{
	unsigned char *vb = malloc(TM_VAL_BIG);
	while (m->n < n) {
		size_t want = n - m->n;
		prolly_edit *e = calloc(want, sizeof(*e));
		unsigned char *kb = malloc(want * TM_KEY_MAX);
		if (!vb || !e || !kb)
			abort();
		for (size_t i = 0; i < want; i++) {
			unsigned char *k = kb + i * TM_KEY_MAX;
			size_t kl;
			if (key24) {
				tm_key24(k, tm_rng_below(rng, 1u << 30));
				kl = TM_KEY24;
			} else {
				kl = tm_gen_key(rng, k);
			}
			size_t vl = tm_gen_value(rng, vb, big_den);
			unsigned char *v = malloc(vl ? vl : 1);
			if (!v)
				abort();
			memcpy(v, vb, vl);
			e[i] = (prolly_edit){PROLLY_PUT, {k, kl}, {v, vl}};
		}
		tm_model_apply(m, e, want);
		for (size_t i = 0; i < want; i++)
			free((void *)e[i].value.data);
		free(kb);
		free(e);
	}
	free(vb);
}

/* Puts of records [idx[0..n)] of m, or deletes. */
static prolly_edit *edits_of(const tm_model *m, const size_t *idx, size_t n, prolly_op op)
{
	prolly_edit *e = calloc(n + 1, sizeof(*e));
	for (size_t i = 0; i < n; i++) {
		const tm_rec *r = &m->r[idx[i]];
		e[i].op = op;
		e[i].key.data = r->k;
		e[i].key.size = r->klen;
		e[i].value.data = r->v;
		e[i].value.size = r->vlen;
	}
	return e;
}

static size_t *iota(size_t n)
{
	size_t *p = malloc(sizeof(*p) * (n + 1));
	for (size_t i = 0; i < n; i++)
		p[i] = i;
	return p;
}

/* Applies edits e[0..n) to *root in batches of random sizes up to maxb, committing each txn with
 * probability 1/2 (else all in one txn), so later batches read both committed and pinned nodes. */
static int apply_batched(prolly_db *db, prolly_id *root, const prolly_edit *e, size_t n,
                         tm_rng *rng, size_t maxb)
{
	prolly_txn *txn = NULL;
	int rc = prolly_txn_begin(&txn, db);
	for (size_t i = 0; i < n && !rc;) {
		size_t b = (size_t)tm_rng_range(rng, 1, maxb);
		if (b > n - i)
			b = n - i;
		rc = prolly_edit_tree(root, txn, root, e + i, b);
		i += b;
		if (!rc && tm_rng_chance(rng, 1, 2)) {
			rc = prolly_txn_commit(txn, NULL, 0);
			prolly_txn_free(txn);
			txn = NULL;
			if (!rc)
				rc = prolly_txn_begin(&txn, db);
		}
	}
	if (!rc)
		rc = prolly_txn_commit(txn, NULL, 0);
	prolly_txn_free(txn);
	if (rc)
		fprintf(stderr, "  apply_batched: %d (%s)\n", rc, prolly_last_error());
	return rc;
}

#define SAME_ROOT(what, got, want)                                                                 \
	PT_CHECKF(prolly_id_equal((got), (want)), "%s: root %s, want %s (seed 0x%llx)", (what),        \
	          tm_hex(got), tm_hex(want), (unsigned long long)seed)

/* The main history independence check over one record set. */
static void orders(const char *name, uint64_t salt, size_t n, int key24, unsigned big_den)
{
	uint64_t seed = PT_SEED() ^ salt;
	tm_rng rng;
	tm_rng_seed(&rng, seed);
	prolly_db *db = open_mem(32u << 20);
	PT_REQUIRE(db);
	tm_model m, extra;
	tm_model_init(&m);
	tm_model_init(&extra);
	gen_records(&m, &rng, n, key24, big_den);
	gen_records(&extra, &rng, n / 4 + 1, key24, big_den);

	prolly_id want, got, empty;
	prolly_id_empty_tree(&empty);
	PT_CHECK_RC(tm_build_commit(&want, db, &m), 0);
	PT_CHECK(tm_tree_check(db, &want, &m, name) == 0);
	PT_CHECK(check_shape(db, &want, name) == 0);

	size_t *idx = iota(m.n);
	prolly_edit *e;

	/* 1. One at a time, shuffled. */
	tm_shuffle(&rng, idx, m.n, sizeof(*idx));
	e = edits_of(&m, idx, m.n, PROLLY_PUT);
	got = empty;
	PT_CHECK_RC(apply_batched(db, &got, e, m.n, &rng, 1), 0);
	SAME_ROOT("one at a time, shuffled", &got, &want);
	PT_CHECK(check_shape(db, &got, "one at a time") == 0);
	free(e);

	/* 2. Ascending order, random batch sizes; 3. descending. */
	for (int dir = 0; dir < 2; dir++) {
		for (size_t i = 0; i < m.n; i++)
			idx[i] = dir ? m.n - 1 - i : i;
		e = edits_of(&m, idx, m.n, PROLLY_PUT);
		got = empty;
		PT_CHECK_RC(apply_batched(db, &got, e, m.n, &rng, 1 + m.n / 7), 0);
		SAME_ROOT(dir ? "descending batches" : "ascending batches", &got, &want);
		free(e);
	}

	/* 4. Shuffled, random batch sizes, with extra keys put in along the way and deleted after. */
	{
		size_t ne = m.n + extra.n;
		prolly_edit *all = calloc(ne + 1, sizeof(*all));
		tm_shuffle(&rng, idx, m.n, sizeof(*idx));
		prolly_edit *a = edits_of(&m, idx, m.n, PROLLY_PUT);
		size_t *xi = iota(extra.n);
		prolly_edit *x = edits_of(&extra, xi, extra.n, PROLLY_PUT);
		memcpy(all, a, m.n * sizeof(*all));
		memcpy(all + m.n, x, extra.n * sizeof(*all));
		tm_shuffle(&rng, all, ne, sizeof(*all));
		got = empty;
		PT_CHECK_RC(apply_batched(db, &got, all, ne, &rng, 50), 0);
		/* Delete the extra keys that are not in m (a random key may collide with one of m's). */
		size_t nd = 0;
		for (size_t i = 0; i < extra.n; i++)
			if (tm_model_find(&m, extra.r[i].k, extra.r[i].klen) < 0)
				xi[nd++] = i;
		free(x);
		x = edits_of(&extra, xi, extra.n, PROLLY_DEL); /* room for extra.n edits */
		tm_shuffle(&rng, x, nd, sizeof(*x));
		/* Colliding extras overwrote m's values: restore them. */
		for (size_t i = 0; i < extra.n; i++) {
			long j = tm_model_find(&m, extra.r[i].k, extra.r[i].klen);
			if (j >= 0) {
				x[nd].op = PROLLY_PUT;
				x[nd].key.data = m.r[j].k;
				x[nd].key.size = m.r[j].klen;
				x[nd].value.data = m.r[j].v;
				x[nd].value.size = m.r[j].vlen;
				nd++;
			}
		}
		PT_CHECK_RC(apply_batched(db, &got, x, nd, &rng, 40), 0);
		SAME_ROOT("with extra keys inserted and deleted", &got, &want);
		PT_CHECK(check_shape(db, &got, "extra keys") == 0);
		free(all);
		free(a);
		free(x);
		free(xi);
	}

	/* 5. Bulk build of every other record, then the rest as edits. */
	{
		tm_model half;
		tm_model_init(&half);
		size_t nr = 0;
		for (size_t i = 0; i < m.n; i++) {
			if (i % 2 == 0)
				tm_model_put(&half, m.r[i].k, m.r[i].klen, m.r[i].v, m.r[i].vlen);
			else
				idx[nr++] = i;
		}
		PT_CHECK_RC(tm_build_commit(&got, db, &half), 0);
		tm_shuffle(&rng, idx, nr, sizeof(*idx));
		e = edits_of(&m, idx, nr, PROLLY_PUT);
		PT_CHECK_RC(apply_batched(db, &got, e, nr, &rng, 100), 0);
		SAME_ROOT("half built, half edited", &got, &want);
		free(e);
		tm_model_dispose(&half);
	}

	/* 6. Overwrite every value, then restore them; 7. delete everything. */
	{
		tm_model junk;
		tm_model_init(&junk);
		for (size_t i = 0; i < m.n; i++)
			tm_model_put(&junk, m.r[i].k, m.r[i].klen, "junk value", 1 + i % 10);
		size_t *ji = iota(m.n);
		tm_shuffle(&rng, ji, m.n, sizeof(*ji));
		prolly_edit *j = edits_of(&junk, ji, m.n, PROLLY_PUT);
		got = want;
		PT_CHECK_RC(apply_batched(db, &got, j, m.n, &rng, 200), 0);
		PT_CHECK(tm_tree_check(db, &got, &junk, "overwritten") == 0);
		PT_CHECK(check_shape(db, &got, "overwritten") == 0);
		for (size_t i = 0; i < m.n; i++)
			idx[i] = i;
		tm_shuffle(&rng, idx, m.n, sizeof(*idx));
		e = edits_of(&m, idx, m.n, PROLLY_PUT);
		PT_CHECK_RC(apply_batched(db, &got, e, m.n, &rng, 300), 0);
		SAME_ROOT("values overwritten and restored", &got, &want);
		free(e);
		e = edits_of(&m, idx, m.n, PROLLY_DEL);
		PT_CHECK_RC(apply_batched(db, &got, e, m.n, &rng, 1 + m.n / 3), 0);
		SAME_ROOT("everything deleted", &got, &empty);
		free(e);
		free(j);
		free(ji);
		tm_model_dispose(&junk);
	}
	if (pt_failed_now)
		fprintf(stderr, "  re-run: PROLLY_TEST_SEED=0x%llx build/tests/test_history %s\n",
		        (unsigned long long)PT_SEED(), name);
	free(idx);
	tm_model_dispose(&m);
	tm_model_dispose(&extra);
	prolly_close(db);
}

PT_TEST(history_binary_keys)
{
	orders("history_binary_keys", 0xa1, 2500 * tm_scale(), 0, 0);
}

PT_TEST(history_key24)
{
	orders("history_key24", 0xa2, 3000 * tm_scale(), 1, 0);
}

PT_TEST(history_big_values)
{
	orders("history_big_values", 0xa3, 300 * tm_scale(), 0, 20);
}

PT_TEST(history_tiny)
{
	/* A handful of records: single leaves and the first splits. */
	for (size_t n = 1; n <= 64 && !pt_failed_now; n = n * 2 + 1)
		orders("history_tiny", 0xa4 + n, n, 0, 0);
}

/* ---- the cost of a mutation ---------------------------------------------------------------- */

static void edit_cost(prolly_db *db, const prolly_id *root, const prolly_edit *e, size_t n,
                      unsigned height, uint64_t max_reads, const char *what, prolly_id *out)
{
	prolly_txn *txn = NULL;
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_id r;
	prolly_db_cache_clear(db);
	PT_CHECK_RC(prolly_txn_begin(&txn, db), 0);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_edit_tree(&r, txn, root, e, n), 0);
	prolly_thread_stats(&st);
	PT_CHECKF(st.nodes_read <= max_reads, "%s: %llu nodes read (tree height %u), want <= %llu",
	          what, (unsigned long long)st.nodes_read, height, (unsigned long long)max_reads);
	PT_CHECKF(txn->nodes.len <= max_reads, "%s: %zu nodes made, want <= %llu", what, txn->nodes.len,
	          (unsigned long long)max_reads);
	PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
	prolly_txn_free(txn);
	if (out)
		*out = r;
}

PT_TEST(history_edit_cost_is_height)
{
	/* 200k records of 24-byte keys: a single-key edit must read O(height) nodes. */
	size_t n = 200000 * tm_scale();
	prolly_db *db = open_mem(64u << 20);
	PT_REQUIRE(db);
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	prolly_id root;
	unsigned char k[TM_KEY24], v[16];
	PT_CHECK_RC(prolly_txn_begin(&txn, db), 0);
	PT_CHECK_RC(prolly_builder_new(&b, txn), 0);
	PT_REQUIRE(b);
	for (size_t i = 0; i < n; i++) {
		tm_key24(k, 2 * i + 2); /* even: odd keys are absent */
		memset(v, (int)(i & 0xff), sizeof(v));
		PT_CHECK_RC(prolly_builder_add(b, k, sizeof(k), v, sizeof(v)), 0);
	}
	PT_CHECK_RC(prolly_builder_finish(b, &root), 0);
	prolly_builder_free(b);
	PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
	prolly_txn_free(txn);
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &root, 0), 0);
	PT_CHECK(ts.records == n && ts.height >= 3);
	PT_REQUIRE(!pt_failed_now);
	/* A re-chunked run may spill into a few neighbours before it resynchronises. */
	uint64_t lim = 3 * (uint64_t)ts.height + 6;

	unsigned char lo[1] = {0}, hi[TM_KEY24 + 1];
	tm_key24(hi, 2 * n + 10);
	hi[TM_KEY24] = 0;
	unsigned char mid[TM_KEY24], mid2[TM_KEY24];
	tm_key24(mid, n + 1); /* odd: absent, in the middle */
	tm_key24(mid2, n);    /* even: present */
	prolly_edit e;
	prolly_id r2;
	e = (prolly_edit){PROLLY_PUT, {mid, sizeof(mid)}, {"x", 1}};
	edit_cost(db, &root, &e, 1, ts.height, lim, "insert in the middle", &r2);
	e = (prolly_edit){PROLLY_PUT, {mid2, sizeof(mid2)}, {"y", 1}};
	edit_cost(db, &root, &e, 1, ts.height, lim, "overwrite in the middle", NULL);
	e = (prolly_edit){PROLLY_DEL, {mid2, sizeof(mid2)}, {NULL, 0}};
	edit_cost(db, &root, &e, 1, ts.height, lim, "delete in the middle", NULL);
	e = (prolly_edit){PROLLY_DEL, {mid, sizeof(mid)}, {NULL, 0}};
	edit_cost(db, &r2, &e, 1, ts.height, lim, "delete the inserted key", &r2);
	PT_CHECKF(prolly_id_equal(&r2, &root), "insert then delete: %s, want %s", tm_hex(&r2),
	          tm_hex(&root));
	e = (prolly_edit){PROLLY_PUT, {lo, sizeof(lo)}, {"first", 5}};
	edit_cost(db, &root, &e, 1, ts.height, lim, "insert at the start", NULL);
	e = (prolly_edit){PROLLY_PUT, {hi, sizeof(hi)}, {"last", 4}};
	edit_cost(db, &root, &e, 1, ts.height, lim, "insert at the end", NULL);
	e = (prolly_edit){PROLLY_DEL, {mid, sizeof(mid)}, {NULL, 0}};
	edit_cost(db, &root, &e, 1, ts.height, lim, "delete an absent key", &r2);
	PT_CHECK(prolly_id_equal(&r2, &root));

	/* 100 scattered edits read far fewer nodes than the tree has. */
	prolly_edit many[100];
	unsigned char keys[100][TM_KEY24];
	tm_rng rng;
	tm_rng_seed(&rng, PT_SEED());
	for (int i = 0; i < 100; i++) {
		tm_key24(keys[i], tm_rng_below(&rng, 2 * n + 4));
		many[i] = (prolly_edit){i % 3 ? PROLLY_PUT : PROLLY_DEL, {keys[i], TM_KEY24}, {"z", 1}};
	}
	edit_cost(db, &root, many, 100, ts.height, 100 * 3 + 3 * ts.height + 6, "100 scattered edits",
	          NULL);
	PT_CHECKF(100 * 3 + 3 * ts.height + 6 < ts.nodes / 2,
	          "tree too small for the bound: %llu nodes", (unsigned long long)ts.nodes);

	/* First and last records: delete and put back. */
	prolly_buf fk = PROLLY_BUF_INIT, fv = PROLLY_BUF_INIT;
	for (int end = 0; end < 2; end++) {
		PT_CHECK_RC(prolly_select(&fk, &fv, db, &root, end ? n - 1 : 0), 0);
		e = (prolly_edit){PROLLY_DEL, {fk.ptr, fk.size}, {NULL, 0}};
		edit_cost(db, &root, &e, 1, ts.height, lim,
		          end ? "delete the last record" : "delete the first record", &r2);
		uint64_t c = 0;
		PT_CHECK_RC(prolly_count(&c, db, &r2), 0);
		PT_CHECK(c == n - 1);
		e = (prolly_edit){PROLLY_PUT, {fk.ptr, fk.size}, {fv.ptr, fv.size}};
		edit_cost(db, &r2, &e, 1, ts.height, lim, "put it back", &r2);
		PT_CHECK(prolly_id_equal(&r2, &root));
	}
	prolly_buf_dispose(&fk);
	prolly_buf_dispose(&fv);
	PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &root, 1), 0);
	prolly_close(db);
}

/* ---- collapse, empty, shape ------------------------------------------------------------------ */

PT_TEST(history_collapse_to_one_leaf)
{
	uint64_t seed = PT_SEED() ^ 0xc011;
	tm_rng rng;
	tm_rng_seed(&rng, seed);
	prolly_db *db = open_mem(8u << 20);
	PT_REQUIRE(db);
	tm_model m;
	tm_model_init(&m);
	prolly_id root, empty;
	prolly_id_empty_tree(&empty);
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	/* 3000 records make a tree of height 3 for most seeds, of height 2 for some (1 in 200 seeds:
	 * 1010 and 178 among them): more records until it is 3 */
	for (size_t n = 3000; ts.height < 3 && n <= 48000; n *= 2) {
		gen_records(&m, &rng, n, 0, 0);
		PT_CHECK_RC(tm_build_commit(&root, db, &m), 0);
		PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &root, 1), 0);
	}
	PT_REQUIRE(ts.height >= 3);

	/* Keep only the records of one leaf (the first, the last, one in the middle): the result is
	 * a tree of height 1 whose root is that very leaf. */
	for (int which = 0; which < 3; which++) {
		prolly__nodeset ws;
		prolly__nodeset_init(&ws);
		pnode *nd;
		PT_CHECK_RC(prolly__load_root(db, &ws, &root, &nd), 0);
		while (!pt_failed_now && nd->level > 0) {
			uint32_t c = which == 0 ? 0 : which == 1 ? nd->n - 1 : nd->n / 2;
			PT_CHECK_RC(prolly__load1(db, &ws, prolly__node_child(nd, c), &nd), 0);
		}
		PT_REQUIRE(!pt_failed_now);
		prolly_id leaf = nd->id;
		prolly_slice first = prolly__node_key(nd, 0), last = prolly__node_last_key(nd);
		size_t lo = tm_model_lower_bound(&m, first.data, first.size);
		size_t hi = tm_model_lower_bound(&m, last.data, last.size) + 1;
		prolly__nodeset_dispose(&ws);
		size_t nd_ = 0, *idx = malloc(sizeof(*idx) * m.n);
		tm_model keep;
		tm_model_init(&keep);
		for (size_t i = 0; i < m.n; i++) {
			if (i < lo || i >= hi)
				idx[nd_++] = i;
			else
				tm_model_put(&keep, m.r[i].k, m.r[i].klen, m.r[i].v, m.r[i].vlen);
		}
		tm_shuffle(&rng, idx, nd_, sizeof(*idx));
		prolly_edit *e = edits_of(&m, idx, nd_, PROLLY_DEL);
		prolly_id got = root;
		PT_CHECK_RC(apply_batched(db, &got, e, nd_, &rng, nd_ / 3 + 1), 0);
		PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &got, 1), 0);
		PT_CHECKF(ts.height == 1 && ts.nodes == 1, "kept leaf %d: height %u, %llu nodes", which,
		          ts.height, (unsigned long long)ts.nodes);
		/* The last leaf may have ended without a boundary only because it was last; any other
		 * leaf ends at a boundary and so is, alone, exactly the same node. */
		PT_CHECKF(prolly_id_equal(&got, &leaf), "kept leaf %d: root %s, the leaf was %s", which,
		          tm_hex(&got), tm_hex(&leaf));
		PT_CHECK(tm_tree_check(db, &got, &keep, "collapsed") == 0);
		/* Down to one record, then none. */
		size_t left = keep.n;
		prolly_edit *d = calloc(left, sizeof(*d));
		for (size_t i = 0; i + 1 < left; i++)
			d[i] = (prolly_edit){PROLLY_DEL, {keep.r[i].k, keep.r[i].klen}, {NULL, 0}};
		PT_CHECK_RC(apply_batched(db, &got, d, left - 1, &rng, left), 0);
		PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &got, 1), 0);
		PT_CHECK(ts.height == 1 && ts.records == 1);
		d[0] = (prolly_edit){PROLLY_DEL, {keep.r[left - 1].k, keep.r[left - 1].klen}, {NULL, 0}};
		PT_CHECK_RC(apply_batched(db, &got, d, 1, &rng, 1), 0);
		PT_CHECKF(prolly_id_equal(&got, &empty), "all deleted: %s, want the empty tree %s",
		          tm_hex(&got), tm_hex(&empty));
		PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &got, 1), 0);
		PT_CHECK(ts.records == 0 && ts.height == 1 && ts.nodes == 1);
		free(d);
		free(e);
		free(idx);
		tm_model_dispose(&keep);
	}
	/* Everything deleted in one batch. */
	size_t *idx = iota(m.n);
	prolly_edit *e = edits_of(&m, idx, m.n, PROLLY_DEL);
	prolly_id got = root;
	PT_CHECK_RC(apply_batched(db, &got, e, m.n, &rng, m.n), 0);
	PT_CHECK(prolly_id_equal(&got, &empty));
	free(e);
	free(idx);
	tm_model_dispose(&m);
	prolly_close(db);
}

PT_TEST(history_chunk_sizes)
{
	uint64_t seed = PT_SEED() ^ 0xc5;
	tm_rng rng;
	tm_rng_seed(&rng, seed);
	prolly_db *db = open_mem(16u << 20);
	PT_REQUIRE(db);
	tm_model m;
	tm_model_init(&m);
	gen_records(&m, &rng, 20000 * tm_scale(), 1, 0);
	prolly_id root;
	PT_CHECK_RC(tm_build_commit(&root, db, &m), 0);
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &root, 1), 0);
	double avg = (double)ts.bytes / (double)ts.nodes;
	/* Sizes cluster near 4 KiB; the mean stays well inside the limits. */
	PT_CHECKF(avg > 2048 && avg < 8192, "mean node size %.0f bytes (%llu nodes, %llu bytes)", avg,
	          (unsigned long long)ts.nodes, (unsigned long long)ts.bytes);
	PT_CHECKF(ts.leaves * 2 > ts.nodes, "%llu leaves of %llu nodes", (unsigned long long)ts.leaves,
	          (unsigned long long)ts.nodes);
	PT_CHECK(check_shape(db, &root, "20k key24 records") == 0);
	/* Random edits keep the shape. */
	for (int round = 0; round < 20 && !pt_failed_now; round++) {
		prolly_edit e[64];
		unsigned char kb[64][TM_KEY24];
		for (int i = 0; i < 64; i++) {
			tm_key24(kb[i], tm_rng_below(&rng, 1u << 30));
			if (i % 2 && m.n) {
				const tm_rec *r = &m.r[tm_rng_below(&rng, m.n)];
				memcpy(kb[i], r->k, TM_KEY24);
			}
			e[i] = (prolly_edit){i % 4 == 1 ? PROLLY_DEL : PROLLY_PUT,
			                     {kb[i], TM_KEY24},
			                     {kb[i], (size_t)tm_rng_below(&rng, TM_KEY24)}};
		}
		tm_model_apply(&m, e, 64);
		PT_CHECK_RC(apply_batched(db, &root, e, 64, &rng, 64), 0);
		PT_CHECK(check_shape(db, &root, "after random edits") == 0);
	}
	PT_CHECK(tm_tree_check(db, &root, &m, "after random edits") == 0);
	if (pt_failed_now)
		fprintf(stderr, "  seed 0x%llx\n", (unsigned long long)PT_SEED());
	tm_model_dispose(&m);
	prolly_close(db);
}

/* ---- big keys and values ------------------------------------------------------------------- */

PT_TEST(history_large_keys_and_values)
{
	uint64_t seed = PT_SEED() ^ 0xb16;
	tm_rng rng;
	tm_rng_seed(&rng, seed);
	prolly_db *db = open_mem(32u << 20);
	PT_REQUIRE(db);
	tm_model m;
	tm_model_init(&m);
	unsigned char *kb = malloc(PROLLY_MAX_KEY), *vb = malloc(PROLLY_MAX_VALUE);
	for (int i = 0; i < 300; i++) {
		size_t kl = i % 3 == 0 ? PROLLY_MAX_KEY : (size_t)tm_rng_range(&rng, 1, PROLLY_MAX_KEY);
		size_t vl = i % 7 == 0 ? PROLLY_MAX_VALUE : (size_t)tm_rng_below(&rng, 3000);
		tm_rng_bytes(&rng, kb, kl);
		memset(vb, i, vl);
		tm_model_put(&m, kb, kl, vb, vl);
	}
	prolly_id want, got, empty;
	prolly_id_empty_tree(&empty);
	PT_CHECK_RC(tm_build_commit(&want, db, &m), 0);
	PT_CHECK(tm_tree_check(db, &want, &m, "large") == 0);
	PT_CHECK(check_shape(db, &want, "large") == 0);
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &want, 1), 0);
	PT_CHECKF(ts.height >= 3, "height %u", ts.height);
	size_t *idx = iota(m.n);
	tm_shuffle(&rng, idx, m.n, sizeof(*idx));
	prolly_edit *e = edits_of(&m, idx, m.n, PROLLY_PUT);
	got = empty;
	PT_CHECK_RC(apply_batched(db, &got, e, m.n, &rng, 30), 0);
	SAME_ROOT("large records, shuffled batches", &got, &want);
	free(e);

	/* Oversized keys and values: PROLLY_ETOOBIG, nothing changes. */
	prolly_txn *txn = NULL;
	PT_CHECK_RC(prolly_txn_begin(&txn, db), 0);
	prolly_id out, before;
	memset(&out, 0x5a, sizeof(out));
	before = out;
	memset(kb, 'k', PROLLY_MAX_KEY);
	unsigned char *bigk = malloc(PROLLY_MAX_KEY + 1), *bigv = malloc(PROLLY_MAX_VALUE + 1);
	memset(bigk, 'K', PROLLY_MAX_KEY + 1);
	memset(bigv, 'V', PROLLY_MAX_VALUE + 1);
	prolly_edit bad[3] = {{PROLLY_PUT, {"fine", 4}, {"ok", 2}},
	                      {PROLLY_PUT, {bigk, PROLLY_MAX_KEY + 1}, {"v", 1}},
	                      {PROLLY_PUT, {"fine2", 5}, {"ok", 2}}};
	PT_CHECK_RC(prolly_edit_tree(&out, txn, &want, bad, 3), PROLLY_ETOOBIG);
	PT_CHECK(prolly_id_equal(&out, &before));
	bad[1] = (prolly_edit){PROLLY_PUT, {"bigvalue", 8}, {bigv, PROLLY_MAX_VALUE + 1}};
	PT_CHECK_RC(prolly_edit_tree(&out, txn, &want, bad, 3), PROLLY_ETOOBIG);
	PT_CHECK(prolly_id_equal(&out, &before));
	PT_CHECK_RC(prolly_edit_tree(&out, txn, &empty, bad, 3), PROLLY_ETOOBIG);
	PT_CHECK(prolly_id_equal(&out, &before));
	/* Exactly at the limits is fine. */
	prolly_edit limit = {PROLLY_PUT, {bigk, PROLLY_MAX_KEY}, {bigv, PROLLY_MAX_VALUE}};
	PT_CHECK_RC(prolly_edit_tree(&out, txn, &want, &limit, 1), 0);
	tm_model_put(&m, bigk, PROLLY_MAX_KEY, bigv, PROLLY_MAX_VALUE);
	PT_CHECK(tm_tree_check(db, &out, &m, "at the limits") == 0);
	PT_CHECK(check_shape(db, &out, "at the limits") == 0);
	/* The builder refuses them too. */
	prolly_builder *b = NULL;
	PT_CHECK_RC(prolly_builder_new(&b, txn), 0);
	PT_CHECK_RC(prolly_builder_add(b, bigk, PROLLY_MAX_KEY + 1, "v", 1), PROLLY_ETOOBIG);
	PT_CHECK_RC(prolly_builder_add(b, "a", 1, bigv, PROLLY_MAX_VALUE + 1), PROLLY_ETOOBIG);
	PT_CHECK_RC(prolly_builder_add(b, "a", 1, "v", 1), 0);
	PT_CHECK_RC(prolly_builder_add(b, "a", 1, "v", 1), PROLLY_EINVAL); /* not increasing */
	PT_CHECK_RC(prolly_builder_finish(b, &out), 0);
	prolly_builder_free(b);
	prolly_txn_free(txn);
	/* The original tree is intact. */
	tm_model_del(&m, bigk, PROLLY_MAX_KEY);
	PT_CHECK(tm_tree_check(db, &want, &m, "after the refused edits") == 0);
	free(bigk);
	free(bigv);
	free(kb);
	free(vb);
	free(idx);
	tm_model_dispose(&m);
	prolly_close(db);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
