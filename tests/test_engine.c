/*
 * test_engine.c - unit tests of the engine's internals: node encoding and validation, the chunk
 * rule, the cache, txn visibility, batched loading, and threads sharing one handle.
 */
#include "internal.h"
#include "lib/boundary_ref.h"
#include "lib/model.h"
#include "ptest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void key_of(char *buf, size_t cap, uint64_t i)
{
	snprintf(buf, cap, "key%012llu", (unsigned long long)i);
}

/* Builds keys 0..n-1 (step `step`), values "v<i>", and commits the nodes. */
static prolly_id build_range(prolly_db *db, uint64_t n, uint64_t step)
{
	prolly_txn *txn;
	prolly_builder *b;
	prolly_id root;
	char k[32], v[32];
	memset(&root, 0, sizeof(root));
	if (prolly_txn_begin(&txn, db) || prolly_builder_new(&b, txn))
		return root;
	for (uint64_t i = 0; i < n; i++) {
		key_of(k, sizeof(k), i * step);
		int vl = snprintf(v, sizeof(v), "v%llu", (unsigned long long)i);
		if (prolly_builder_add(b, k, strlen(k), v, (size_t)vl))
			break;
	}
	prolly_builder_finish(b, &root);
	prolly_builder_free(b);
	prolly_txn_commit(txn, NULL, 0);
	prolly_txn_free(txn);
	return root;
}

PT_TEST(node_roundtrip_leaf_and_internal)
{
	prolly__enc e;
	prolly_buf out = PROLLY_BUF_INIT;
	prolly_id id, child;
	pnode *nd;
	prolly__enc_init(&e, 0);
	PT_CHECK_RC(prolly__enc_add_leaf(&e, "a", 1, "1", 1), 0);
	PT_CHECK_RC(prolly__enc_add_leaf(&e, "bb", 2, "", 0), 0);
	PT_CHECK_RC(prolly__enc_add_leaf(&e, "c", 1, "333", 3), 0);
	PT_CHECK_RC(prolly__enc_finish(&e, &out), 0);
	PT_CHECK(out.size == 12 + 16 + 16 + 4 + 4);
	prolly__hash(&id, out.ptr, out.size);
	PT_REQUIRE(prolly__node_decode(&nd, &id, out.ptr, out.size, 1) == 0);
	PT_CHECK(nd->n == 3 && nd->level == 0 && nd->count == 3);
	PT_CHECK(prolly__node_key(nd, 1).size == 2 && !memcmp(prolly__node_key(nd, 1).data, "bb", 2));
	PT_CHECK(prolly__node_value(nd, 2).size == 3);
	PT_CHECK(prolly__node_lower_bound(nd, "b", 1) == 1);
	PT_CHECK(prolly__node_lower_bound(nd, "bb", 2) == 1);
	PT_CHECK(prolly__node_lower_bound(nd, "bc", 2) == 2);
	PT_CHECK(prolly__node_lower_bound(nd, "d", 1) == 3);
	prolly__node_unref(nd);

	prolly__enc_dispose(&e);
	prolly__enc_init(&e, 1);
	memset(&child, 7, sizeof(child));
	PT_CHECK_RC(prolly__enc_add_child(&e, "m", 1, &child, 10), 0);
	PT_CHECK_RC(prolly__enc_add_child(&e, "z", 1, &child, 5), 0);
	PT_CHECK_RC(prolly__enc_finish(&e, &out), 0);
	prolly__hash(&id, out.ptr, out.size);
	PT_REQUIRE(prolly__node_decode(&nd, &id, out.ptr, out.size, 1) == 0);
	PT_CHECK(nd->level == 1 && nd->n == 2 && nd->count == 15);
	PT_CHECK(prolly__node_child_count(nd, 1) == 5);
	PT_CHECK(prolly_id_equal(prolly__node_child(nd, 0), &child));
	prolly__node_unref(nd);

	/* A wrong id is refused when verifying. */
	id.bytes[0] ^= 1;
	PT_CHECK_RC(prolly__node_decode(&nd, &id, out.ptr, out.size, 1), PROLLY_ECORRUPT);
	/* A newer format version is PROLLY_EVERSION. */
	out.ptr[4] = PROLLY_FORMAT_VERSION + 1;
	PT_CHECK_RC(prolly__node_decode(&nd, &id, out.ptr, out.size, 0), PROLLY_EVERSION);
	prolly__enc_dispose(&e);
	prolly_buf_dispose(&out);
}

PT_TEST(node_rejects_unsorted_keys)
{
	prolly__enc e;
	prolly_buf out = PROLLY_BUF_INIT;
	prolly_id id;
	pnode *nd;
	prolly__enc_init(&e, 0);
	prolly__enc_add_leaf(&e, "b", 1, "", 0);
	prolly__enc_add_leaf(&e, "a", 1, "", 0);
	prolly__enc_finish(&e, &out);
	prolly__hash(&id, out.ptr, out.size);
	PT_CHECK_RC(prolly__node_decode(&nd, &id, out.ptr, out.size, 1), PROLLY_ECORRUPT);
	PT_CHECK(strstr(prolly_last_error(), "order") != NULL);
	prolly__enc_dispose(&e);
	prolly_buf_dispose(&out);
}

PT_TEST(chunk_rule_limits)
{
	/* Against the independent reference (tests/lib/boundary_ref.c, from docs/format.md): the
	 * limits of C1 and C2 exactly, then C3 over many keys and levels. test_boundary.c covers the
	 * edges at length. */
	static const size_t edges[] = {511, 512, 513, 4096, 16383, 16384, 16385, 70000};
	int differ = 0, near = 0;
	for (int i = 0; i < 20000; i++) {
		char k[16];
		int kl = snprintf(k, sizeof(k), "%d", i);
		for (size_t e = 0; e < sizeof(edges) / sizeof(edges[0]); e++) {
			size_t s = edges[e], r = i % 3 == 0 ? s : (size_t)(9 + i % 200);
			int nr, want = tb_boundary((unsigned)i % 5, k, (size_t)kl, s, r, &nr);
			near += nr;
			if (!nr &&
			    prolly__boundary(tb_library_rule4(), (unsigned)i % 5, k, (size_t)kl, s, r) !=
			        want &&
			    ++differ <= 3)
				fprintf(stderr, "  key %s level %d s %zu r %zu: library differs from reference\n",
				        k, i % 5, s, r);
		}
	}
	PT_CHECKF(differ == 0 && near == 0, "%d calls differ, %d near", differ, near);
	PT_CHECK(prolly__boundary(tb_library_rule4(), 0, "x", 1, 511, 100) == 0);
	PT_CHECK(prolly__boundary(tb_library_rule4(), 0, "x", 1, 16385, 100) == 1);
	/* Over many keys, the split rate at 4 KiB for 60-byte items is near the Weibull hazard:
	 * x = (4096^4 - 4036^4) / 4096^4 ~= 0.0568, p = 1 - exp(-x) ~= 0.0552. */
	int splits = 0;
	for (int i = 0; i < 100000; i++) {
		char k[16];
		snprintf(k, sizeof(k), "k%d", i);
		splits += prolly__boundary(tb_library_rule4(), 0, k, strlen(k), 4096, 60);
	}
	PT_CHECKF(splits > 5000 && splits < 6100, "splits %d", splits);
	/* Levels are salted: decisions differ between levels for some keys. */
	int salted = 0;
	for (int i = 0; i < 10000; i++) {
		char k[16];
		snprintf(k, sizeof(k), "k%d", i);
		salted += prolly__boundary(tb_library_rule4(), 0, k, strlen(k), 8000, 60) !=
		          prolly__boundary(tb_library_rule4(), 1, k, strlen(k), 8000, 60);
	}
	PT_CHECK(salted > 0);
}

PT_TEST(chunk_sizes_cluster_near_target)
{
	prolly_db *db = tm_open_mem((size_t)64 << 20);
	prolly_id root = build_range(db, 200000, 1);
	prolly_tree_stats st = PROLLY_TREE_STATS_INIT;
	PT_REQUIRE(prolly_tree_stats_get(&st, db, &root, 1) == 0);
	PT_CHECK(st.records == 200000);
	double avg = (double)st.bytes / (double)st.nodes;
	PT_CHECKF(avg > 2500 && avg < 6500, "average node size %.0f", avg);
	PT_CHECK(st.height == 3);
	prolly_close(db);
}

PT_TEST(empty_tree_needs_no_store)
{
	prolly_db *db = tm_open_mem(0);
	prolly_id empty;
	uint64_t n = 1;
	prolly_buf v = PROLLY_BUF_INIT;
	prolly_id_empty_tree(&empty);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_count(&n, db, &empty), 0);
	PT_CHECK(n == 0);
	PT_CHECK_RC(prolly_get(&v, db, &empty, "a", 1), PROLLY_ENOTFOUND);
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_thread_stats(&s);
	PT_CHECK(s.store_reads == 0);
	/* An unknown root is ENOTFOUND, not a crash. */
	prolly_id bogus;
	memset(&bogus, 0xab, sizeof(bogus));
	PT_CHECK_RC(prolly_count(&n, db, &bogus), PROLLY_ENOTFOUND);
	prolly_buf_dispose(&v);
	prolly_close(db);
}

PT_TEST(txn_nodes_readable_before_commit_and_gone_after_free)
{
	prolly_db *db = tm_open_mem(0); /* cache off: pinning alone keeps txn nodes readable */
	prolly_txn *txn;
	prolly_id empty, root;
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v", 1}};
	prolly_buf v = PROLLY_BUF_INIT;
	prolly_id_empty_tree(&empty);
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_CHECK_RC(prolly_edit_tree(&root, txn, &empty, &e, 1), 0);
	PT_CHECK_RC(prolly_get(&v, db, &root, "k", 1), 0);
	PT_CHECK(v.size == 1 && v.ptr[0] == 'v');
	prolly_txn_free(txn); /* discarded: never written */
	PT_CHECK_RC(prolly_get(&v, db, &root, "k", 1), PROLLY_ENOTFOUND);
	prolly_buf_dispose(&v);
	prolly_close(db);
}

static int cb(void *p, size_t i, const void *v, size_t vl)
{
	(void)i;
	(void)vl;
	if (v)
		++*(int *)p;
	return 0;
}

PT_TEST(get_many_one_store_call_per_level)
{
	prolly_db *db = tm_open_mem((size_t)64 << 20);
	prolly_id root = build_range(db, 100000, 2);
	prolly_slice keys[1000];
	char kb[1000][32];
	for (int i = 0; i < 1000; i++) {
		key_of(kb[i], sizeof(kb[i]), (uint64_t)(i * 197) % 200000);
		keys[i].data = kb[i];
		keys[i].size = strlen(kb[i]);
	}
	prolly_tree_stats st = PROLLY_TREE_STATS_INIT;
	PT_REQUIRE(prolly_tree_stats_get(&st, db, &root, 0) == 0);
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	int found = 0;
	PT_CHECK_RC(prolly_get_many(db, &root, keys, 1000, cb, &found), 0);
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_thread_stats(&s);
	PT_CHECKF(s.store_reads == st.height, "%llu store calls for height %u",
	          (unsigned long long)s.store_reads, st.height);
	PT_CHECK(found == 500); /* odd multiples of 197 mod 200000 hit odd keys: absent */
	prolly_close(db);
}

typedef struct held_check {
	size_t before, at_answers; /* node memory in use before the call, at its first answer */
	size_t answers, wrong;
	const uint64_t *want; /* the record each request names, or UINT64_MAX for an absent key */
} held_check;

static int held_cb(void *p, size_t i, const void *v, size_t vl)
{
	held_check *h = p;
	char want[32];
	if (h->answers++ == 0)
		h->at_answers = prolly__node_mem_in_use();
	if (h->want[i] == UINT64_MAX) {
		h->wrong += v != NULL;
		return 0;
	}
	int wl = snprintf(want, sizeof(want), "v%llu", (unsigned long long)h->want[i]);
	h->wrong += !v || vl != (size_t)wl || memcmp(v, want, vl) != 0;
	return 0;
}

/* get_many loads a level's children a window at a time (GM1 of src/read.c) and lets each window
 * go before the next: with the window lowered to 512 nodes, keys spread over every leaf of a tree
 * of several windows hold no more than the cache's budget once their answers come, where the
 * whole tree's leaves were held until the end before (10 MB here); each level is still read in
 * as few store calls as its windows; and the answers are right across the windows: request
 * order, duplicates, absent keys. Through LMDB (no node memory of its own) with a small cache;
 * where node memory comes from malloc (sanitizer builds) there is no count. */
PT_TEST(get_many_holds_a_window_at_a_time)
{
	const size_t budget = (size_t)1 << 20, n = 12000, records = 300000, window = 512;
	char *dir = tm_tmpdir("get-many-window");
	PT_REQUIRE(dir != NULL);
	prolly_db *db = tm_open_lmdb(dir, budget);
	prolly_id root = build_range(db, records, 2);
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	PT_REQUIRE(prolly_tree_stats_get(&ts, db, &root, 0) == 0);
	PT_CHECKF(ts.leaves > 3 * window && ts.height == 3, "%llu leaves, height %u",
	          (unsigned long long)ts.leaves, ts.height);
	prolly_slice *keys = calloc(n, sizeof(*keys));
	char(*kb)[32] = calloc(n, sizeof(*kb));
	uint64_t *want = calloc(n, sizeof(*want));
	PT_REQUIRE(keys && kb && want);
	for (size_t i = 0; i < n; i++) { /* descending, every 5th absent, every 7th a repeat */
		uint64_t r = i % 7 == 6 ? (n - i) * 25 : (n - 1 - i) * 25;
		key_of(kb[i], sizeof(kb[i]), i % 5 == 4 ? 2 * r + 1 : 2 * r);
		keys[i].data = kb[i];
		keys[i].size = strlen(kb[i]);
		want[i] = i % 5 == 4 ? UINT64_MAX : r;
	}
	prolly_db_cache_clear(db);
	prolly__get_many_window = window;
	prolly_thread_stats_reset();
	held_check h = {prolly__node_mem_in_use(), 0, 0, 0, want};
	PT_CHECK_RC(prolly_get_many(db, &root, keys, n, held_cb, &h), 0);
	prolly__get_many_window = 16384;
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_thread_stats(&s);
	PT_CHECKF(h.answers == n && h.wrong == 0, "%zu answers, %zu wrong", h.answers, h.wrong);
	/* the root, its children (one window), then the leaves a window at a time */
	uint64_t calls = 2 + (ts.leaves + window - 1) / window;
	PT_CHECKF(s.store_reads >= calls - 1 && s.store_reads <= calls, "%llu store calls, %llu leaves",
	          (unsigned long long)s.store_reads, (unsigned long long)ts.leaves);
	if (h.before != SIZE_MAX)
		PT_CHECKF(h.at_answers - h.before <= budget + PROLLY_CHUNK_MAX,
		          "%zu bytes of node memory held at the answers, budget %zu",
		          h.at_answers - h.before, budget);
	free(keys);
	free(kb);
	free(want);
	prolly_close(db);
	tm_rmtree(dir);
	free(dir);
}

/* An edit of more distinct keys than a batch (E9 of src/edit.c, lowered to 1,000 here) is made a
 * key-ordered batch at a time, the txn's nodes written between batches: the same tree as one
 * pass, the txn holding only the last batch's nodes where one pass holds all of them, and once
 * committed every node of it is in the store (read back without the cache, hashes checked). */
PT_TEST(edit_in_batches_holds_a_batch)
{
	char *dir = tm_tmpdir("edit-batches");
	PT_REQUIRE(dir != NULL);
	prolly_db *db = tm_open_lmdb(dir, (size_t)1 << 20);
	prolly_id base = build_range(db, 200000, 2);
	const size_t n = 24000;
	prolly_edit *e = calloc(n, sizeof(*e));
	char(*kb)[32] = calloc(n, sizeof(*kb));
	PT_REQUIRE(e && kb);
	for (size_t i = 0; i < n; i++) { /* updates, inserts and deletes over the whole tree */
		uint64_t k = (uint64_t)(n - 1 - i) * 16 + (i % 3 == 1);
		key_of(kb[i], sizeof(kb[i]), k);
		e[i].op = i % 3 == 2 ? PROLLY_DEL : PROLLY_PUT;
		e[i].key = (prolly_slice){kb[i], strlen(kb[i])};
		e[i].value = (prolly_slice){"new", 3};
	}
	prolly_txn *one, *batched;
	prolly_id r1, r2;
	PT_REQUIRE(prolly_txn_begin(&one, db) == 0);
	PT_CHECK_RC(prolly_edit_tree(&r1, one, &base, e, n), 0);
	size_t held_one = one->nodes.len;
	prolly_txn_free(one);
	prolly__edit_batch = 1000;
	PT_REQUIRE(prolly_txn_begin(&batched, db) == 0);
	PT_CHECK_RC(prolly_edit_tree(&r2, batched, &base, e, n), 0);
	prolly__edit_batch = 65536;
	PT_CHECK(prolly_id_equal(&r1, &r2));
	PT_CHECKF(batched->nodes.len * 8 < held_one, "%zu nodes held after the batches, %zu in one",
	          batched->nodes.len, held_one);
	PT_CHECK_RC(prolly_txn_commit(batched, NULL, 0), 0);
	prolly_txn_free(batched);
	prolly_db_cache_clear(db);
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &r2, 1), 0);
	PT_CHECK(ts.records == 200000 + n / 3 - n / 3);
	prolly_buf v = PROLLY_BUF_INIT;
	PT_CHECK_RC(prolly_get(&v, db, &r2, kb[0], strlen(kb[0])), 0);
	PT_CHECK(v.size == 3 && memcmp(v.ptr, "new", 3) == 0);
	prolly_buf_dispose(&v);
	prolly_close(db);
	/* On a handle that cannot write, the batches' writes fail, and so does the edit (it never
	 * returns a root whose nodes were not written). */
	char url[600];
	snprintf(url, sizeof(url), "lmdb:%s", dir);
	PT_REQUIRE(prolly_open_ex(&db, url, NULL, PROLLY_OPEN_READONLY) == 0);
	prolly__edit_batch = 1000;
	PT_REQUIRE(prolly_txn_begin(&batched, db) == 0);
	prolly_id r3 = base;
	int rc = prolly_edit_tree(&r3, batched, &base, e, n);
	prolly__edit_batch = 65536;
	PT_CHECKF(rc != 0 && prolly_id_equal(&r3, &base), "read-only: %d %s", rc, prolly_last_error());
	printf("# read-only: %d %s\n", rc, prolly_last_error());
	prolly_txn_free(batched);
	free(e);
	free(kb);
	prolly_close(db);
	tm_rmtree(dir);
	free(dir);
}

PT_TEST(edit_cost_follows_edits_not_size)
{
	prolly_db *db = tm_open_mem((size_t)256 << 20);
	prolly_id root = build_range(db, 300000, 2);
	prolly_txn *txn;
	prolly_id out;
	char k[32];
	key_of(k, sizeof(k), 300001);
	prolly_edit e = {PROLLY_PUT, {k, strlen(k)}, {"new", 3}};
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_CHECK_RC(prolly_edit_tree(&out, txn, &root, &e, 1), 0);
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_thread_stats(&s);
	PT_CHECKF(s.store_read_items <= 12, "%llu nodes read for one edit",
	          (unsigned long long)s.store_read_items);
	PT_CHECKF(s.store_reads <= 6, "%llu store calls for one edit",
	          (unsigned long long)s.store_reads);
	prolly_txn_free(txn);
	prolly_close(db);
}

/* Applies inserts (odd keys) and deletes (even keys) spread over a 300k-record tree, from a cold
 * cache; returns the new root and the store calls and nodes read. */
static prolly_id probe_case(int remote, uint64_t *calls, uint64_t *nodes)
{
	prolly_store *mem;
	tm_tap *tap;
	prolly_db *db;
	prolly_id root, out;
	prolly_txn *txn;
	enum { N = 400 };
	static char kb[N][32];
	static prolly_edit e[N];
	memset(&out, 0, sizeof(out));
	if (prolly_store_mem_new(&mem) || tm_tap_new(&tap, mem))
		return out;
	tap->tp.base.flags = remote ? PROLLY_STORE_REMOTE : 0;
	if (prolly_db_new(&db, &tap->tp.base, NULL))
		return out;
	root = build_range(db, 300000, 2);
	for (int i = 0; i < N; i++) { /* ascending, one per ~7 leaves: key 2 * (749 i) + (i odd) */
		key_of(kb[i], sizeof(kb[i]), (uint64_t)i * 1498 + (uint64_t)(i & 1));
		e[i].op = i & 1 ? PROLLY_PUT : PROLLY_DEL;
		e[i].key = (prolly_slice){kb[i], strlen(kb[i])};
		e[i].value = (prolly_slice){"inserted value", 14};
	}
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	if (prolly_txn_begin(&txn, db) == 0) {
		if (prolly_edit_tree(&out, txn, &root, e, N))
			memset(&out, 0, sizeof(out));
		prolly_txn_free(txn);
	}
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	*calls = st.store_reads;
	*nodes = st.store_read_items;
	prolly_close(db);
	return out;
}

PT_TEST(edit_probe_batches_sibling_reads_on_a_remote_store)
{
	uint64_t lc, ln, rcalls, rn;
	prolly_id local = probe_case(0, &lc, &ln);
	prolly_id remote = probe_case(1, &rcalls, &rn);
	prolly_id zero;
	memset(&zero, 0, sizeof(zero));
	PT_REQUIRE(!prolly_id_equal(&local, &zero) && !prolly_id_equal(&remote, &zero));
	printf("# 200 inserts + 200 deletes in 300k records: local %llu store calls (%llu nodes), "
	       "remote %llu calls (%llu nodes)\n",
	       (unsigned long long)lc, (unsigned long long)ln, (unsigned long long)rcalls,
	       (unsigned long long)rn);
	PT_CHECK(prolly_id_equal(&local, &remote)); /* E6: the probe changes no result */
	PT_CHECKF(rn == ln, "the probe read %llu nodes, the local edit %llu", (unsigned long long)rn,
	          (unsigned long long)ln);
	/* Each edit is in a leaf of its own (one in ~7 leaves) and its run ends within a leaf or
	 * two: no leaf is read on a guess (loading the next leaf of every resized one read 850). */
	PT_CHECKF(ln < 2 * 400, "%llu nodes read for 400 edits", (unsigned long long)ln);
	PT_CHECKF(rcalls < lc, "remote %llu calls, local %llu", (unsigned long long)rcalls,
	          (unsigned long long)lc);
	PT_CHECKF(rcalls <= 24, "%llu store calls", (unsigned long long)rcalls);
}

/*
 * E7: where a run's chunk is as long as the old leaf's at the same item (after updates to values
 * of the same length, or a delete and an insert of the same size), the edit adds the old items
 * up to the next edit without the boundary rule. The tree must still be the one a build of the
 * same records makes: on a local store, and on a remote one, whose probe (E6) skips the same
 * way. Returns the edited root; *built the built one.
 */
static prolly_id same_size_case(int remote, prolly_id *built)
{
	prolly_store *mem;
	tm_tap *tap;
	prolly_db *db;
	prolly_id root, out;
	prolly_txn *txn;
	tm_model m;
	enum { N = 20000, E = 1200 };
	static char kb[E][32], vb[E][32];
	static prolly_edit e[E];
	char k[32], v[32];
	memset(&out, 0, sizeof(out));
	memset(built, 0, sizeof(*built));
	if (prolly_store_mem_new(&mem) || tm_tap_new(&tap, mem))
		return out;
	tap->tp.base.flags = remote ? PROLLY_STORE_REMOTE : 0;
	if (prolly_db_new(&db, &tap->tp.base, NULL))
		return out;
	root = build_range(db, N, 2); /* even keys, values v<i> */
	tm_model_init(&m);
	for (uint64_t i = 0; i < N; i++) {
		key_of(k, sizeof(k), 2 * i);
		snprintf(v, sizeof(v), "v%llu", (unsigned long long)i);
		tm_model_put(&m, k, strlen(k), v, strlen(v));
	}
	size_t n = 0;
	for (uint64_t i = 0; i + 3 < N && n + 4 <= E; i += 37) {
		/* record i gets a value of the same length */
		key_of(kb[n], sizeof(kb[n]), 2 * i);
		snprintf(vb[n], sizeof(vb[n]), "w%llu", (unsigned long long)i);
		e[n] = tm_put(kb[n], vb[n]);
		n++;
		if (i % 3 == 0) { /* record i + 1 deleted, a record of the same size inserted after it */
			key_of(kb[n], sizeof(kb[n]), 2 * (i + 1));
			e[n] = tm_put(kb[n], "");
			e[n++].op = PROLLY_DEL;
			key_of(kb[n], sizeof(kb[n]), 2 * (i + 1) + 1);
			snprintf(vb[n], sizeof(vb[n]), "x%llu", (unsigned long long)(i + 1));
			e[n] = tm_put(kb[n], vb[n]);
			n++;
		}
		if (i % 2 == 0) { /* and record i + 3, one record after the last edit */
			key_of(kb[n], sizeof(kb[n]), 2 * (i + 3));
			snprintf(vb[n], sizeof(vb[n]), "y%llu", (unsigned long long)(i + 3));
			e[n] = tm_put(kb[n], vb[n]);
			n++;
		}
	}
	tm_model_apply(&m, e, n);
	prolly_db_cache_clear(db);
	if (prolly_txn_begin(&txn, db) == 0) {
		if (prolly_edit_tree(&out, txn, &root, e, n) || prolly_txn_commit(txn, NULL, 0))
			memset(&out, 0, sizeof(out));
		prolly_txn_free(txn);
	}
	if (tm_build_commit(built, db, &m))
		memset(built, 0, sizeof(*built));
	tm_model_dispose(&m);
	prolly_close(db);
	return out;
}

PT_TEST(edit_keeping_item_sizes_makes_the_built_tree)
{
	prolly_id zero;
	memset(&zero, 0, sizeof(zero));
	for (int remote = 0; remote < 2; remote++) {
		prolly_id built, edited = same_size_case(remote, &built);
		PT_CHECKF(!prolly_id_equal(&edited, &zero) && !prolly_id_equal(&built, &zero),
		          "remote %d: the edit or the build failed", remote);
		PT_CHECKF(prolly_id_equal(&edited, &built),
		          "remote %d: the edited tree is not the built one", remote);
	}
}

/* T5: a commit of at least 2048 nodes writes them in two halves before the publishing write on a
 * remote store only; on a local store nodes and refs go in the commit's one write. */
static uint64_t commit_writes(int remote, prolly_id *root, uint64_t *nodes)
{
	prolly_store *mem;
	tm_tap *tap;
	prolly_db *db;
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.flush_bytes = (size_t)1 << 30; /* no builder flush: every node waits for the commit */
	if (prolly_store_mem_new(&mem) || tm_tap_new(&tap, mem))
		return 0;
	tap->tp.base.flags = remote ? PROLLY_STORE_REMOTE : 0;
	if (prolly_db_new(&db, &tap->tp.base, &o))
		return 0;
	uint64_t before = tap->writes;
	prolly_thread_stats_reset();
	*root = build_range(db, 400000, 1);
	uint64_t writes = tap->writes - before;
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_thread_stats(&s);
	*nodes = s.nodes_written;
	uint64_t n = 0;
	if (prolly_count(&n, db, root) || n != 400000)
		writes = 0;
	prolly_close(db);
	return writes;
}

PT_TEST(large_commit_is_one_write_on_a_local_store)
{
	prolly_id local, remote;
	uint64_t ln, rn;
	uint64_t lw = commit_writes(0, &local, &ln), rw = commit_writes(1, &remote, &rn);
	PT_CHECKF(ln >= 2048, "%llu nodes", (unsigned long long)ln);
	PT_CHECKF(lw == 1, "%llu writes on a local store", (unsigned long long)lw);
	PT_CHECKF(rw == 3, "%llu writes on a remote store", (unsigned long long)rw);
	PT_CHECK(ln == rn);
	PT_CHECK(prolly_id_equal(&local, &remote));
}

/* A store of interface version 1 or 2 has no flags member to read: the engine must not look at
 * it (here it holds PROLLY_STORE_REMOTE, as garbage would); version 3 reads it. */
PT_TEST(store_flags_read_only_from_version_3)
{
	for (unsigned v = 1; v <= PROLLY_STORE_VERSION; v++) {
		prolly_store *mem;
		tm_tap *tap;
		prolly_db *db;
		PT_REQUIRE(prolly_store_mem_new(&mem) == 0 && tm_tap_new(&tap, mem) == 0);
		tap->tp.base.version = v;
		tap->tp.base.flags = PROLLY_STORE_REMOTE;
		PT_REQUIRE(prolly_db_new(&db, &tap->tp.base, NULL) == 0);
		PT_CHECKF(prolly__store_remote(db) == (v >= 3), "version %u", v);
		prolly_id root = build_range(db, 20000, 2);
		uint64_t n = 0;
		PT_CHECK_RC(prolly_count(&n, db, &root), 0);
		PT_CHECK(n == 20000);
		prolly_close(db);
	}
}

/* The engine adopts a store's table by its version (store_api.c): members a version lacks are
 * never read, and version 3's get_ancestors (no commit layout) is not called. */
PT_TEST(store_table_adopted_by_version)
{
	for (unsigned v = 1; v <= PROLLY_STORE_VERSION; v++) {
		prolly_store *mem;
		tm_tap *tap;
		prolly_db *db;
		PT_REQUIRE(prolly_store_mem_new(&mem) == 0 && tm_tap_new(&tap, mem) == 0);
		PT_REQUIRE(tap->tp.base.get_ancestors != NULL);
		tap->tp.base.version = v;
		PT_REQUIRE(prolly_db_new(&db, &tap->tp.base, NULL) == 0);
		PT_CHECKF((db->vt.get_ancestors != NULL) == (v >= 4), "version %u", v);
		PT_CHECK(db->vt.get_ref_objects == NULL && db->vt.find_ids == NULL); /* the tap's */
		prolly_close(db);
	}
	prolly_store *mem;
	prolly_db *db = NULL;
	PT_REQUIRE(prolly_store_mem_new(&mem) == 0);
	unsigned keep = mem->version;
	mem->version = PROLLY_STORE_VERSION + 1; /* closed by prolly_db_new, which refuses it */
	PT_CHECK_RC(prolly_db_new(&db, mem, NULL), PROLLY_EVERSION);
	(void)keep;
	PT_CHECK(db == NULL);

	/* prolly_store_init and PROLLY_STORE_INIT */
	prolly_store st = PROLLY_STORE_INIT, z;
	PT_CHECK(st.version == PROLLY_STORE_VERSION && !st.get_nodes && !st.get_ancestors);
	memset(&z, 0xab, sizeof(z));
	PT_CHECK_RC(prolly_store_init(&z, 2), 0);
	PT_CHECK(z.version == 2 && !z.kind && !z.write && !z.flags && !z.find_ids);
	PT_CHECK_RC(prolly_store_init(&z, 0), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_store_init(&z, PROLLY_STORE_VERSION + 1), PROLLY_EINVAL);
	PT_CHECK(z.version == 2);
	PT_CHECK_RC(prolly_store_init(NULL, 1), PROLLY_EINVAL);
	/* a table without a required function is refused */
	PT_REQUIRE(prolly_store_mem_new(&mem) == 0);
	tm_tap *tap;
	PT_REQUIRE(tm_tap_new(&tap, mem) == 0);
	tap->tp.base.list_refs = NULL;
	PT_CHECK_RC(prolly_db_new(&db, &tap->tp.base, NULL), PROLLY_EINVAL);
}

/* What the store's write receives: a copy of the ref names in order. */
typedef struct seen_write {
	tp_store tp;
	int calls;
	char names[4][32];
	size_t n;
} seen_write;

static int seen_write_fn(prolly_store *st, prolly_store_write *w)
{
	seen_write *s = (seen_write *)st;
	s->calls++;
	s->n = w->n_refs;
	for (size_t i = 0; i < w->n_refs && i < 4; i++) {
		snprintf(s->names[i], sizeof(s->names[i]), "%s", w->refs[i].name);
		if (w->refs[i].conflict || w->refs[i].current_exists)
			s->n = 99; /* S1: the outputs are cleared */
	}
	return tp_write(st, w);
}

/* S1 in store.h: the engine checks, sorts and de-duplicates every write's ref updates once, so
 * that no store does; a store's outcome comes back in the caller's order. */
PT_TEST(store_write_refs_checked_and_sorted_by_engine)
{
	prolly_store *mem;
	seen_write *s;
	prolly_db *db;
	PT_REQUIRE(prolly_store_mem_new(&mem) == 0 && (s = tp_new(sizeof(*s), mem)) != NULL);
	s->tp.base.write = seen_write_fn;
	PT_REQUIRE(prolly_db_new(&db, &s->tp.base, NULL) == 0);
	prolly_id v1, v2;
	memset(&v1, 1, sizeof(v1));
	memset(&v2, 2, sizeof(v2));
	prolly_ref_update u[3];
	memset(u, 0, sizeof(u));
	u[0].name = "refs/heads/c";
	u[0].value = v1;
	u[1].name = "refs/heads/a";
	u[1].value = v1;
	u[2].name = "refs/heads/b";
	u[2].value = v1;
	u[2].conflict = 1; /* stale: cleared */
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.refs = u;
	w.n_refs = 3;
	s->calls = 0;
	PT_CHECK_RC(prolly__store_write(db, &w), 0);
	PT_CHECK(s->calls == 1 && s->n == 3);
	PT_CHECK(strcmp(s->names[0], "refs/heads/a") == 0 && strcmp(s->names[1], "refs/heads/b") == 0 &&
	         strcmp(s->names[2], "refs/heads/c") == 0);
	PT_CHECK(u[2].conflict == 0 && strcmp(u[0].name, "refs/heads/c") == 0);

	/* a conflict is reported on the caller's update, not on the sorted copy's position */
	u[0].expect = PROLLY_REF_EXPECT_VALUE; /* c is v1, not v2 */
	u[0].expected = v2;
	u[1].expect = PROLLY_REF_EXPECT_VALUE; /* a is v1 */
	u[1].expected = v1;
	u[2].expect = PROLLY_REF_EXPECT_ANY;
	PT_CHECK_RC(prolly__store_write(db, &w), PROLLY_ECONFLICT);
	PT_CHECK(u[0].conflict == 1 && u[0].current_exists == 1 && prolly_id_equal(&u[0].current, &v1));
	PT_CHECK(u[1].conflict == 0 && u[2].conflict == 0);

	/* refused before the store is called: a name twice, a bad name, a bad expectation */
	char longname[PROLLY_MAX_REF_NAME + 2];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	u[0].expect = u[1].expect = PROLLY_REF_EXPECT_ANY;
	u[2].name = "refs/heads/c";
	s->calls = 0;
	PT_CHECK_RC(prolly__store_write(db, &w), PROLLY_EINVAL);
	PT_CHECK(strstr(prolly_last_error(), "twice") != NULL);
	u[2].name = "";
	PT_CHECK_RC(prolly__store_write(db, &w), PROLLY_EINVAL);
	u[2].name = longname;
	PT_CHECK_RC(prolly__store_write(db, &w), PROLLY_EINVAL);
	u[2].name = "refs/heads/b";
	u[2].expect = (prolly_ref_expect)7;
	PT_CHECK_RC(prolly__store_write(db, &w), PROLLY_EINVAL);
	PT_CHECK(s->calls == 0);
	prolly_id out;
	PT_CHECK_RC(prolly_store_ref_name_check(longname), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_store_ref_name_check(NULL), PROLLY_EINVAL);
	longname[PROLLY_MAX_REF_NAME] = 0;
	PT_CHECK_RC(prolly_store_ref_name_check(longname), 0);
	PT_CHECK_RC(prolly__get_ref(db, "refs/heads/b", &out), 0);
	PT_CHECK(prolly_id_equal(&out, &v1));
	prolly_close(db);
}

/* prolly_store_check_node: the hash check offered to stores. */
PT_TEST(store_check_node)
{
	const char data[] = "some node bytes";
	prolly_id id;
	prolly__hash(&id, data, sizeof(data));
	PT_CHECK_RC(prolly_store_check_node(&id, data, sizeof(data)), 0);
	id.bytes[0] ^= 1;
	PT_CHECK_RC(prolly_store_check_node(&id, data, sizeof(data)), PROLLY_ECORRUPT);
	PT_CHECK_RC(prolly_store_check_node(NULL, data, 1), PROLLY_EINVAL);
}

typedef struct worker {
	prolly_db *db;
	prolly_id base;
	int id;
	int errors;
} worker;

static void *work(void *arg)
{
	worker *w = arg;
	prolly_buf v = PROLLY_BUF_INIT;
	prolly_id cur = w->base;
	char k[32], val[32];
	for (int round = 0; round < 30; round++) {
		prolly_txn *txn;
		prolly_edit e[20];
		char kb[20][32];
		if (prolly_txn_begin(&txn, w->db)) {
			w->errors++;
			break;
		}
		for (int i = 0; i < 20; i++) {
			key_of(kb[i], sizeof(kb[i]), (uint64_t)(w->id * 100000 + round * 20 + i) * 2 + 1);
			e[i] = (prolly_edit){PROLLY_PUT, {kb[i], strlen(kb[i])}, {"t", 1}};
		}
		prolly_id next;
		if (prolly_edit_tree(&next, txn, &cur, e, 20) || prolly_txn_commit(txn, NULL, 0))
			w->errors++;
		prolly_txn_free(txn);
		cur = next;
		for (int i = 0; i < 20; i++) {
			key_of(k, sizeof(k), (uint64_t)(round * 37 + i) * 2);
			int vl = snprintf(val, sizeof(val), "v%d", round * 37 + i);
			if (prolly_get(&v, w->db, &cur, k, strlen(k)) || v.size != (size_t)vl ||
			    memcmp(v.ptr, val, (size_t)vl))
				w->errors++;
			if (prolly_get(&v, w->db, &cur, kb[i], strlen(kb[i])))
				w->errors++;
		}
	}
	prolly_buf_dispose(&v);
	return NULL;
}

PT_TEST(threads_share_one_handle)
{
	prolly_db *db = tm_open_mem((size_t)1 << 20); /* small cache: evictions under contention */
	prolly_id base = build_range(db, 50000, 2);
	pthread_t th[4];
	worker w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (worker){db, base, i, 0};
		pthread_create(&th[i], NULL, work, &w[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		PT_CHECKF(w[i].errors == 0, "worker %d: %d errors", i, w[i].errors);
	}
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_db_stats(db, &s);
	PT_CHECK(s.cache_evictions > 0);
	prolly_close(db);
}

/* The cache's budget bounds the memory its nodes take (each node's whole block: header and
 * size-class rounding), not only their encoded bytes. Through LMDB, whose copy of a node is the
 * file, a scan of a tree several times the budget leaves the cache full; the node memory then
 * in use stays within the budget (it exceeded it by the blocks' overhead when the cache counted
 * encoded bytes). Where node memory comes from malloc (sanitizer builds) there is no count. */
PT_TEST(cache_budget_bounds_node_memory)
{
	const size_t budget = (size_t)1 << 20;
	char *dir = tm_tmpdir("cache-budget");
	PT_REQUIRE(dir != NULL);
	size_t before = prolly__node_mem_in_use();
	prolly_db *db = tm_open_lmdb(dir, budget);
	prolly_id root = build_range(db, 200000, 1);
	prolly_db_cache_clear(db);
	prolly_cursor *cur;
	uint64_t n = 0;
	PT_REQUIRE(prolly_cursor_open(&cur, db, &root, NULL) == 0);
	while (prolly_cursor_next(cur, NULL, NULL) == 0)
		n++;
	prolly_cursor_free(cur);
	PT_CHECK(n == 200000);
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_db_stats(db, &s);
	PT_CHECKF(s.bytes_read > 3 * budget, "%llu bytes read", (unsigned long long)s.bytes_read);
	size_t after = prolly__node_mem_in_use();
	if (before != SIZE_MAX)
		PT_CHECKF(after - before <= budget, "%zu bytes of node memory for a %zu-byte budget",
		          after - before, budget);
	prolly_close(db);
	tm_rmtree(dir);
	free(dir);
}

/* PROLLY_CACHE_AUTO, the default, picks the budget by store: 128 MiB on LMDB, whose nodes are
 * in its file mapping (PROLLY_STORE_MAPPED), 256 MiB on the memory store; a budget the caller
 * sets is kept as it is, on any store. */
PT_TEST(default_cache_budget_by_store)
{
	char *dir = tm_tmpdir("cache-auto");
	PT_REQUIRE(dir != NULL);
	prolly_store *st;
	prolly_db *db;
	prolly_options o;
	PT_REQUIRE(prolly_store_lmdb_open(&st, dir, 0) == 0);
	PT_CHECK(st->flags & PROLLY_STORE_MAPPED);
	PT_REQUIRE(prolly_db_new(&db, st, NULL) == 0);
	PT_CHECK(db->opts.cache_bytes == (size_t)128 << 20);
	prolly_close(db);
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.cache_bytes = (size_t)300 << 20;
	PT_REQUIRE(prolly_store_lmdb_open(&st, dir, 0) == 0 && prolly_db_new(&db, st, &o) == 0);
	PT_CHECK(db->opts.cache_bytes == (size_t)300 << 20);
	prolly_close(db);
	PT_REQUIRE(prolly_store_mem_new(&st) == 0 && prolly_db_new(&db, st, NULL) == 0);
	PT_CHECK(!(st->flags & PROLLY_STORE_MAPPED) && db->opts.cache_bytes == (size_t)256 << 20);
	prolly_close(db);
	tm_rmtree(dir);
	free(dir);
}

PT_TEST(builder_rejects_bad_input)
{
	prolly_db *db = tm_open_mem(0);
	prolly_txn *txn;
	prolly_builder *b;
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0 && prolly_builder_new(&b, txn) == 0);
	PT_CHECK_RC(prolly_builder_add(b, "b", 1, "", 0), 0);
	PT_CHECK_RC(prolly_builder_add(b, "a", 1, "", 0), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_builder_add(b, "b", 1, "", 0), PROLLY_EINVAL);
	static char big[PROLLY_MAX_VALUE + 1];
	PT_CHECK_RC(prolly_builder_add(b, "c", 1, big, sizeof(big)), PROLLY_ETOOBIG);
	prolly_builder_free(b);
	prolly_txn_free(txn);
	prolly_close(db);
}

PT_TEST(flush_keeps_build_memory_bounded)
{
	prolly_store *st;
	prolly_db *db;
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.cache_bytes = 0;
	o.flush_bytes = 64 << 10;
	PT_REQUIRE(prolly_store_mem_new(&st) == 0 && prolly_db_new(&db, st, &o) == 0);
	prolly_thread_stats_reset();
	prolly_id root = build_range(db, 100000, 1);
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_thread_stats(&s);
	PT_CHECKF(s.store_writes > 20, "%llu writes", (unsigned long long)s.store_writes);
	uint64_t n = 0;
	PT_CHECK_RC(prolly_count(&n, db, &root), 0);
	PT_CHECK(n == 100000);
	prolly_close(db);
}

static int held_bytes(void *payload, size_t index, const void *data, size_t size)
{
	(void)index;
	(void)size;
	*(const void **)payload = data;
	return 0;
}

/* The memory store keeps a reference to each node the engine wrote instead of a copy, also
 * behind a pass-through store, and hands it back on a read: the nodes must outlive the cache's
 * entries (a db with no cache reads them back from the store), and the
 * cache's entries must outlive the store's (a gc removes the nodes a warm cache still holds).
 * Under the sanitizer build (malloc'd node memory) a use after free or double free fails here. */
PT_TEST(mem_store_shares_node_memory)
{
	for (int round = 0; round < 4; round++) {
		int cached = round & 1, wrapped = round >> 1; /* also through a pass-through store */
		prolly_store *st, *mem;
		prolly_db *db;
		prolly_options o;
		prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
		o.cache_bytes = cached ? (size_t)64 << 20 : 0;
		o.flush_bytes = 64 << 10; /* builder flushes as well as the commit's write */
		PT_REQUIRE(prolly_store_mem_new(&mem) == 0);
		st = mem;
		if (wrapped) {
			tp_store *tp = tp_new(sizeof(*tp), mem);
			PT_REQUIRE(tp != NULL);
			st = &tp->base;
		}
		PT_REQUIRE(prolly_db_new(&db, st, &o) == 0);
		prolly_id root = build_range(db, 20000, 1);
		uint64_t n = 0, nodes = 0, bytes = 0;
		PT_CHECK_RC(prolly_count(&n, db, &root), 0);
		PT_CHECK(n == 20000);
		char k[32];
		prolly_buf v = PROLLY_BUF_INIT;
		key_of(k, sizeof(k), 12345);
		PT_CHECK_RC(prolly_get(&v, db, &root, k, strlen(k)), 0);
		PT_CHECK(v.size == 6 && memcmp(v.ptr, "v12345", 6) == 0);
		/* One copy: the node the engine loads is the memory the store holds. */
		const void *held = NULL;
		PT_CHECK_RC(mem->get_nodes(mem, &root, 1, held_bytes, &held), 0);
		prolly__nodeset ws;
		pnode *nd = NULL;
		prolly__nodeset_init(&ws);
		PT_CHECK_RC(prolly__load1(db, &ws, &root, &nd), 0);
		PT_CHECKF(held && nd && (const void *)nd->bytes == held, "round %d: store %p, node %p",
		          round, held, nd ? (const void *)nd->bytes : NULL);
		prolly__nodeset_dispose(&ws);
		PT_CHECK_RC(st->stat(st, &nodes, &bytes), 0);
		PT_CHECKF(nodes > 20 && bytes > 20000 * 10, "%llu nodes, %llu bytes",
		          (unsigned long long)nodes, (unsigned long long)bytes);
		prolly_gc_result r;
		prolly_gc_result_init(&r, PROLLY_GC_RESULT_VERSION);
		PT_CHECK_RC(prolly_gc(db, &r), 0); /* no ref names the tree: every node goes */
		PT_CHECK_RC(st->stat(st, &nodes, &bytes), 0);
		PT_CHECKF(nodes <= 1, "%llu nodes left", (unsigned long long)nodes);
		int rc = prolly_count(&n, db, &root); /* from what the cache still holds, or gone */
		PT_CHECK(rc == 0 || rc == PROLLY_ENOTFOUND || rc == PROLLY_ECORRUPT);
		prolly_buf_dispose(&v);
		prolly_close(db);
	}
}

/* A mem store whose write number fail_at (1-based) fails, for the background-flush test. */
typedef struct failing_store {
	tp_store tp;        /* must be first: passes everything through but write */
	_Atomic int writes; /* the flushes write from threads of their own, at once */
	int fail_at;
} failing_store;

static int fs_write(prolly_store *st, prolly_store_write *w)
{
	failing_store *f = (failing_store *)st;
	int n = ++f->writes;
	if (n == f->fail_at)
		return prolly_set_error(PROLLY_ESTORE, "injected failure of write %d", n);
	return tp_write(st, w);
}

/* T4: a builder flush is written in the background; its failure is reported by a later builder
 * call or by the commit, with the store's message, and nothing is published. */
PT_TEST(background_flush_failure_is_reported)
{
	failing_store *f;
	prolly_store *mem;
	PT_REQUIRE(prolly_store_mem_new(&mem) == 0 && (f = tp_new(sizeof(*f), mem)) != NULL);
	f->tp.base.write = fs_write;
	f->fail_at = 3;
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.flush_bytes = 16 << 10;
	prolly_db *db;
	PT_REQUIRE(prolly_db_new(&db, &f->tp.base, &o) == 0);
	prolly_txn *txn;
	prolly_builder *b;
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0 && prolly_builder_new(&b, txn) == 0);
	int rc = 0;
	char key[32], val[64];
	for (int i = 0; i < 50000 && rc == 0; i++) {
		snprintf(key, sizeof key, "key%08d", i);
		snprintf(val, sizeof val, "value %d", i * 7);
		rc = prolly_builder_add(b, key, strlen(key), val, strlen(val));
	}
	prolly_id root;
	if (rc == 0)
		rc = prolly_builder_finish(b, &root);
	if (rc == 0) {
		prolly_ref_update u = {
		    .name = "refs/heads/x", .expect = PROLLY_REF_EXPECT_ABSENT, .value = root};
		PT_CHECK_RC(prolly_txn_set_ref(txn, &u), 0);
		rc = prolly_txn_commit(txn, NULL, 0);
	}
	PT_CHECK_RC(rc, PROLLY_ESTORE);
	PT_CHECKF(strstr(prolly_last_error(), "injected failure of write 3") != NULL, "%s",
	          prolly_last_error());
	prolly_builder_free(b);
	prolly_txn_free(txn);
	prolly_id head;
	PT_CHECK_RC(prolly_branch_head(&head, db, "x"), PROLLY_ENOTFOUND);
	prolly_close(db);
}

/* One large edit on a handle that may use threads (its new nodes are made by a second thread,
 * edit.c E8) and on one with PROLLY_DB_NO_THREADS (made one by one, inline): the same root, and
 * the same number of records read back. */
static prolly_id edited_root(unsigned flags, uint64_t *count)
{
	prolly_store *mem = NULL;
	prolly_db *db = NULL;
	prolly_txn *txn = NULL;
	prolly_options o;
	prolly_id root, out;
	enum { N = 60000, E = 6000 };
	static char keys[E][32], vals[E][32];
	prolly_edit *ed = calloc(E, sizeof(*ed));
	memset(&out, 0, sizeof(out));
	*count = 0;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.flags = flags;
	if (!ed || prolly_store_mem_new(&mem) || prolly_db_new(&db, mem, &o))
		goto cleanup;
	root = build_range(db, N, 2); /* even keys */
	for (int i = 0; i < E; i++) { /* inserts of odd keys, updates, deletes, in no order */
		uint64_t k = (uint64_t)(i * 7919 % E) * 13;
		key_of(keys[i], sizeof(keys[i]), k);
		snprintf(vals[i], sizeof(vals[i]), "edited value %d", i);
		ed[i].op = k % 3 == 0 && k % 2 == 0 ? PROLLY_DEL : PROLLY_PUT;
		ed[i].key = (prolly_slice){keys[i], strlen(keys[i])};
		ed[i].value = (prolly_slice){vals[i], strlen(vals[i])};
	}
	if (prolly_txn_begin(&txn, db) || prolly_edit_tree(&root, txn, &root, ed, E) ||
	    prolly_txn_commit(txn, NULL, 0) || prolly_count(count, db, &root))
		goto cleanup;
	out = root;
cleanup:
	prolly_txn_free(txn);
	prolly_close(db);
	free(ed);
	return out;
}

PT_TEST(edit_with_node_maker_same_root)
{
	uint64_t n1, n2;
	prolly_id a = edited_root(0, &n1), b = edited_root(PROLLY_DB_NO_THREADS, &n2);
	prolly_id zero;
	memset(&zero, 0, sizeof(zero));
	PT_CHECK(!prolly_id_equal(&a, &zero));
	PT_CHECK(prolly_id_equal(&a, &b));
	PT_CHECK(n1 == n2 && n1 > 60000);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}

/* prolly_options.interrupt (version 2): asked before each batch of node loads, from the cache
 * too, so a long diff, merge, get_many, edit or walk stops within a batch with the value it
 * returned, holding nothing (the sanitizer suite checks for leaks), and works again after. */
typedef struct interrupter {
	int armed;   /* non-zero: answer stop once asked this many more times */
	long asked;  /* times asked */
	int stop_rc; /* what to answer */
} interrupter;

static int ask_interrupt(void *payload)
{
	interrupter *x = payload;
	x->asked++;
	if (x->armed && --x->armed == 0)
		return x->stop_rc;
	return 0;
}

static int count_entry(void *payload, const prolly_diff_entry *e)
{
	(void)e;
	++*(uint64_t *)payload;
	return 0;
}

static int count_value(void *payload, size_t index, const void *value, size_t vlen)
{
	(void)index;
	(void)value;
	(void)vlen;
	++*(uint64_t *)payload;
	return 0;
}

/* What the interrupt tests work on: a memory store's handle that asks an interrupter, trees a
 * (N keys of step 2) and b (step 3) with every node cached (the calls read nothing from the
 * store), and keys[i] the key of i * kstep. */
enum { N_INT = 40000 };
typedef struct int_fixture {
	prolly_db *db;
	prolly_id a, b;
	prolly_slice keys[N_INT];
	char kbuf[N_INT][32];
} int_fixture;

static int int_fixture_open(int_fixture *f, interrupter *x, uint64_t kstep)
{
	prolly_options o;
	prolly_store *st = NULL;
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	if (prolly_options_init(&o, PROLLY_OPTIONS_VERSION) || o.interrupt || o.interrupt_payload)
		return -1;
	o.interrupt = ask_interrupt;
	o.interrupt_payload = x;
	if (prolly_store_mem_new(&st) || prolly_db_new(&f->db, st, &o))
		return -1;
	f->a = build_range(f->db, N_INT, 2);
	f->b = build_range(f->db, N_INT, 3);
	if (prolly_tree_stats_get(&ts, f->db, &f->a, 0) || prolly_tree_stats_get(&ts, f->db, &f->b, 0))
		return -1;
	for (int i = 0; i < N_INT; i++) {
		key_of(f->kbuf[i], sizeof f->kbuf[i], (uint64_t)i * kstep);
		f->keys[i] = (prolly_slice){f->kbuf[i], strlen(f->kbuf[i])};
	}
	return 0;
}

PT_TEST(interrupt_stops_long_calls)
{
	enum { N = N_INT };
	interrupter x = {0, 0, -77};
	static int_fixture f;
	PT_REQUIRE(int_fixture_open(&f, &x, 5) == 0);
	prolly_db *db = f.db;
	prolly_id a = f.a, b = f.b;
	const prolly_slice *keys = f.keys;
	static prolly_edit edits[N];
	for (int i = 0; i < N; i++)
		edits[i] = (prolly_edit){PROLLY_PUT, keys[i], {"x", 1}};
	for (int op = 0; op < 4; op++) {
		uint64_t n = 0;
		prolly_txn *txn = NULL;
		prolly_id out;
		int rc[2];
		for (int pass = 0; pass < 2; pass++) {
			/* the first pass stops at a later batch: the fifth, or for a diff or get_many (a
			 * batch per level and window, here a few) the second */
			int at = op <= 1 ? 2 : 5;
			x.armed = pass == 0 ? at : 0;
			x.asked = 0;
			n = 0;
			switch (op) {
			case 0: rc[pass] = prolly_diff(db, &a, &b, NULL, count_entry, &n); break;
			case 1: rc[pass] = prolly_get_many(db, &a, keys, N, count_value, &n); break;
			case 2:
				PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
				rc[pass] = prolly_merge(&out, NULL, txn, &a, &b, &a, NULL) == 0
				               ? prolly_edit_tree(&out, txn, &a, edits, N)
				               : -1;
				prolly_txn_free(txn);
				break;
			default: {
				prolly_id theirs, ours;
				prolly_edit one = {PROLLY_PUT, {"zz", 2}, {"y", 1}};
				PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
				/* a clean three-way merge: base a, ours a and one key, theirs a edited */
				x.armed = 0;
				rc[pass] = prolly_edit_tree(&theirs, txn, &a, edits, N / 4);
				if (rc[pass] == 0)
					rc[pass] = prolly_edit_tree(&ours, txn, &a, &one, 1);
				x.armed = pass == 0 ? at : 0;
				x.asked = 0;
				if (rc[pass] == 0)
					rc[pass] = prolly_merge(&out, NULL, txn, &a, &ours, &theirs, NULL);
				prolly_txn_free(txn);
				break;
			}
			}
			if (pass == 0)
				PT_CHECKF(rc[0] == -77 && x.asked == at, "op %d: rc %d after %ld asks", op, rc[0],
				          x.asked);
			else
				PT_CHECKF(rc[1] == 0 && x.asked >= at, "op %d: rc %d, %ld asks, n %llu", op, rc[1],
				          x.asked, (unsigned long long)n);
		}
	}
	/* an edit stopped at each of its batches in turn leaves nothing behind */
	for (int at = 1; at <= 8; at++) {
		prolly_txn *txn = NULL;
		prolly_id out;
		PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
		x.armed = at;
		x.asked = 0;
		int rc = prolly_edit_tree(&out, txn, &a, edits, N / 4);
		PT_CHECKF(rc == -77 || (rc == 0 && x.asked < at), "stopped at %d: rc %d", at, rc);
		prolly_txn_free(txn);
	}
	x.armed = 0;
	prolly_close(db);
}

/* Between two batches of loads a call may handle many records: a diff's leaf merge of a window
 * (up to 2,048 leaves), get_many's keys at each level, a merge's decisions. Each asks the
 * interrupt every 4,096 of them, so a statement_timeout stops a merge over cached nodes
 * promptly (it ran to its end in PostgreSQL: 100 ms of work past a 10 ms timeout). a (keys of
 * step 2) and b (step 3) differ in most records, and all their nodes are cached: before, these
 * calls asked a few times in all, once per level. */
PT_TEST(interrupt_asked_within_records)
{
	enum { N = N_INT, EVERY = 4096 };
	interrupter x = {0, 0, -77};
	static int_fixture f;
	PT_REQUIRE(int_fixture_open(&f, &x, 2) == 0);
	prolly_id empty;
	prolly_id_empty_tree(&empty);
	for (int op = 0; op < 3; op++) {
		uint64_t n = 0;
		int rc = -1;
		x.armed = 0;
		x.asked = 0;
		switch (op) {
		case 0: rc = prolly_diff(f.db, &f.a, &f.b, NULL, count_entry, &n); break;
		case 1: rc = prolly_get_many(f.db, &f.a, f.keys, N, count_value, &n); break;
		default: /* base empty, ours a, theirs b: b's keys added, a's values at both conflicting */
		{
			prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
			mo.resolve = PROLLY_RESOLVE_THEIRS;
			rc = prolly_merge_preview(NULL, f.db, &empty, &f.a, &f.b, &mo);
			n = N;
			break;
		}
		}
		PT_CHECKF(rc == 0 && n >= N && x.asked >= N / EVERY, "op %d: rc %d, n %llu, %ld asks", op,
		          rc, (unsigned long long)n, x.asked);
		/* stopped at its third ask: past any load's, inside the records */
		x.armed = 3;
		x.asked = 0;
		n = 0;
		switch (op) {
		case 0: rc = prolly_diff(f.db, &f.a, &f.b, NULL, count_entry, &n); break;
		case 1: rc = prolly_get_many(f.db, &f.a, f.keys, N, count_value, &n); break;
		default: rc = prolly_merge_preview(NULL, f.db, &empty, &f.a, &f.b, NULL); break;
		}
		PT_CHECKF(rc == -77 && x.asked == 3 && n < N, "op %d stopped: rc %d, n %llu", op, rc,
		          (unsigned long long)n);
	}
	x.armed = 0;
	prolly_close(f.db);
}
