/*
 * test_boundary.c - the chunk boundary rule against its independent reference
 * (tests/lib/boundary_ref.c, written from docs/format.md), exactly at its edges:
 *
 *   - C1/C2 edges: running sizes 511, 512, 513 and 16383, 16384, 16385 for small, middling and
 *     whole-chunk items, at several levels, over many keys: the library gives the reference's
 *     answer every time, and the keys used do reach both answers where the rule allows both (a
 *     boundary at exactly 512, none at exactly 16384), so `s <= 512` or `s >= 16384` is caught;
 *   - random sizes, items and levels (0..63): the same answers;
 *   - item sizes and the level seeds of C4, against the documented values;
 *   - through the chunker: leaves whose items bring the running size to exactly 512 and to
 *     exactly 16384 end (or do not) where the reference says.
 *
 * Re-run one test: build/tests/test_boundary NAME.
 */
#include "internal.h"
#include "lib/boundary_ref.h"
#include "lib/model.h"
#include "ptest.h"

#include <stdlib.h>
#include <string.h>

/* Compares library and reference for one call; counts outcomes. */
typedef struct tally {
	uint64_t calls, yes, no, near, differ;
} tally;

static void compare1(tally *t, unsigned level, const void *k, size_t klen, size_t s, size_t r)
{
	int near;
	int want = tb_boundary(level, k, klen, s, r, &near);
	int got = prolly__boundary(tb_library_rule4(), level, k, klen, s, r);
	t->calls++;
	if (near) {
		t->near++;
		return;
	}
	if (want)
		t->yes++;
	else
		t->no++;
	if (got != want) {
		if (t->differ < 5)
			fprintf(stderr, "  level %u key %s s %zu r %zu: library %d, reference %d\n", level,
			        tm_bhex(k, klen), s, r, got, want);
		t->differ++;
	}
}

static size_t key_of(char *buf, size_t cap, uint64_t i)
{
	return (size_t)snprintf(buf, cap, "key-%llu", (unsigned long long)i);
}

PT_TEST(boundary_edges_exact)
{
	static const size_t sizes[] = {511, 512, 513, 16383, 16384, 16385};
	static const unsigned levels[] = {0, 1, 2, 7, 63};
	/* item sizes: the smallest leaf item of a 1-byte key, typical ones, and the whole chunk */
	static const size_t items[] = {9, 44, 60, 300, 0 /* r = s */};
	char k[32];
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		size_t s = sizes[si];
		tally all;
		memset(&all, 0, sizeof(all));
		for (size_t li = 0; li < sizeof(levels) / sizeof(levels[0]); li++) {
			for (size_t ri = 0; ri < sizeof(items) / sizeof(items[0]); ri++) {
				size_t r = items[ri] ? items[ri] : s;
				/* at 512 a boundary has a chance of about 1e-4 per key: look at many */
				uint64_t nkeys = s <= 513 ? 60000 : 4000;
				for (uint64_t i = 0; i < nkeys; i++)
					compare1(&all, levels[li], k, key_of(k, sizeof(k), i), s, r);
			}
		}
		PT_CHECKF(all.differ == 0, "s=%zu: %llu of %llu calls differ", s,
		          (unsigned long long)all.differ, (unsigned long long)all.calls);
		PT_CHECKF(all.near == 0, "s=%zu: %llu calls in the near band", s,
		          (unsigned long long)all.near);
		/* What the edges must show (C1, C2), and that the keys reach both answers where the
		 * rule allows both. */
		if (s < TB_MIN)
			PT_CHECKF(all.yes == 0, "s=%zu: %llu boundaries below the minimum", s,
			          (unsigned long long)all.yes);
		else if (s > TB_MAX)
			PT_CHECKF(all.no == 0, "s=%zu: %llu missing forced boundaries", s,
			          (unsigned long long)all.no);
		else
			PT_CHECKF(all.yes > 0 && all.no > 0, "s=%zu: %llu boundaries, %llu not", s,
			          (unsigned long long)all.yes, (unsigned long long)all.no);
		fprintf(stderr, "  # s=%zu: %llu calls, %llu boundaries\n", s,
		        (unsigned long long)all.calls, (unsigned long long)all.yes);
	}
}

/* One key of each answer at exactly s for item size r, at level 0, if the first `tries` keys
 * have them: the library and the reference must give those answers for those keys. */
PT_TEST(boundary_both_answers_at_the_limits)
{
	static const struct {
		size_t s, r;
	} cases[] = {{512, 9}, {512, 100}, {512, 512}, {16384, 9}, {16384, 60}};
	char k[32];
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		int seen[2] = {0, 0};
		for (uint64_t i = 0; i < 2000000 && !(seen[0] && seen[1]); i++) {
			size_t kl = key_of(k, sizeof(k), i);
			int near, want = tb_boundary(0, k, kl, cases[c].s, cases[c].r, &near);
			if (near || seen[want])
				continue;
			seen[want] = 1;
			PT_CHECKF(prolly__boundary(tb_library_rule4(), 0, k, kl, cases[c].s, cases[c].r) ==
			              want,
			          "s=%zu r=%zu key %s: the reference says %d", cases[c].s, cases[c].r, k, want);
		}
		PT_CHECKF(seen[0] && seen[1], "s=%zu r=%zu: keys with both answers not found", cases[c].s,
		          cases[c].r);
	}
}

PT_TEST(boundary_random_agreement)
{
	tm_rng rng;
	tm_rng_seed(&rng, PT_SEED() ^ 0xb0da);
	tally t;
	memset(&t, 0, sizeof(t));
	unsigned char k[TM_KEY_MAX];
	uint64_t n = 400000 * (uint64_t)tm_scale();
	for (uint64_t i = 0; i < n; i++) {
		size_t kl = tm_gen_key(&rng, k);
		unsigned level = tm_rng_chance(&rng, 1, 2) ? 0 : (unsigned)tm_rng_below(&rng, 64);
		size_t r = tm_rng_chance(&rng, 1, 8) ? (size_t)tm_rng_range(&rng, 9, 70000)
		                                     : (size_t)tm_rng_range(&rng, 9, 400);
		size_t s;
		switch (tm_rng_below(&rng, 4)) {
		case 0: /* near the lower limit */ s = (size_t)tm_rng_range(&rng, 500, 530); break;
		case 1: /* near the upper limit */ s = (size_t)tm_rng_range(&rng, 16370, 16400); break;
		default: s = (size_t)tm_rng_range(&rng, 1, 20000);
		}
		if (r > s)
			r = s;
		compare1(&t, level, k, kl, s, r);
	}
	PT_CHECKF(t.differ == 0, "%llu of %llu calls differ (seed 0x%llx)",
	          (unsigned long long)t.differ, (unsigned long long)t.calls,
	          (unsigned long long)PT_SEED());
	PT_CHECKF(t.near <= 1, "%llu calls in the near band", (unsigned long long)t.near);
	PT_CHECK(t.yes > 0 && t.no > 0);
}

PT_TEST(boundary_item_sizes_and_seeds)
{
	PT_CHECK(prolly__leaf_item_size(0, 0) == 8 && tb_leaf_item_size(0, 0) == 8);
	PT_CHECK(prolly__leaf_item_size(3, 100) == tb_leaf_item_size(3, 100));
	PT_CHECK(prolly__leaf_item_size(PROLLY_MAX_KEY, PROLLY_MAX_VALUE) == 8 + 2048 + 65536);
	PT_CHECK(prolly__child_item_size(0) == 44 && tb_child_item_size(0) == 44);
	PT_CHECK(prolly__child_item_size(2048) == tb_child_item_size(2048));
	PT_CHECK(PROLLY_CHUNK_MIN == TB_MIN && PROLLY_CHUNK_MAX == TB_MAX);
	/* C4: levels are salted (the seeds themselves are checked by the random comparison over
	 * levels 0..63). */
	PT_CHECK(tb_key_hash(0, "k", 1) != tb_key_hash(1, "k", 1));
}

/* ---- through the chunker ------------------------------------------------------------------- */

/* Bulk-builds the records and returns the record count of the first leaf (0 on error). */
static uint32_t first_leaf_items(const tm_model *m)
{
	prolly_db *db = tm_open_mem(8 << 20);
	prolly_id root;
	uint32_t n = 0;
	if (tm_build_commit(&root, db, m) == 0) {
		prolly__nodeset ws;
		pnode *nd = NULL, *leaf = NULL;
		prolly__nodeset_init(&ws);
		if (prolly__load_root(db, &ws, &root, &nd) == 0) {
			if (nd->level == 0)
				n = nd->n;
			else if (prolly__load1(db, &ws, prolly__node_child(nd, 0), &leaf) == 0)
				n = leaf->level == 0 ? leaf->n : 0;
		}
		prolly__nodeset_dispose(&ws);
	}
	prolly_close(db);
	return n;
}

/* Fills m with records "m%08d" (increasing from *next) whose items add up to exactly `target`
 * bytes without a boundary on the way, the keys picked with the reference. Items are 100 bytes,
 * the first one 100..199 so that the sizes add up. Returns the number of records. */
static uint32_t fill(tm_model *m, size_t target, uint64_t *next)
{
	static unsigned char val[256];
	char k[32];
	size_t s = 0;
	uint32_t n = 0;
	memset(val, 'v', sizeof(val));
	while (s < target) {
		size_t r = s == 0 ? 100 + target % 100 : 100;
		for (;; (*next)++) {
			snprintf(k, sizeof(k), "m%08llu", (unsigned long long)*next);
			int near;
			if (!tb_boundary(0, k, strlen(k), s + r, r, &near) && !near)
				break;
		}
		tm_model_put(m, k, strlen(k), val, r - tb_leaf_item_size(strlen(k), 0));
		(*next)++;
		s += r;
		n++;
	}
	return n;
}

PT_TEST(boundary_chunker_at_the_limits)
{
	/* Records whose items bring the running size to exactly 512 or 16384 with a last item of
	 * 100 bytes whose key the reference splits on (the first leaf ends there) or not (it takes
	 * the next record too: at 16384 that one is forced, C2), then "zz". */
	static const size_t sizes[] = {512, 16384};
	const size_t r2 = 100;
	static unsigned char val[256];
	char k[32];
	memset(val, 'v', sizeof(val));
	for (int si = 0; si < 2; si++) {
		size_t s = sizes[si];
		for (int want = 0; want < 2; want++) {
			tm_model m;
			tm_model_init(&m);
			uint64_t next = 0;
			uint32_t nfill = fill(&m, s - r2, &next);
			int found = 0;
			for (uint64_t tries = 0; tries < 2000000 && !found; tries++, next++) {
				snprintf(k, sizeof(k), "m%08llu", (unsigned long long)next);
				int near;
				found = tb_boundary(0, k, strlen(k), s, r2, &near) == want && !near;
			}
			PT_CHECKF(found, "s=%zu: no key with answer %d", s, want);
			if (found) {
				tm_model_put(&m, k, strlen(k), val, r2 - tb_leaf_item_size(strlen(k), 0));
				tm_model_put(&m, "zz", 2, val, 100);
				uint32_t n = first_leaf_items(&m);
				PT_CHECKF(n == nfill + (want ? 1u : 2u),
				          "s=%zu key %s: the first leaf has %u records, want %u (reference: %s)", s,
				          k, n, nfill + (want ? 1u : 2u), want ? "a boundary" : "none");
			}
			tm_model_dispose(&m);
		}
	}
}

/* ---- other node sizes ---------------------------------------------------------------------- */

/* The rule for 1, 2 and 8 KiB nodes (not used by any store yet: every tree so far is of 4 KiB
 * nodes) against the reference at its edges and at random, and 4 KiB's rule as the engine makes
 * it. */
PT_TEST(boundary_other_node_sizes)
{
	static const unsigned shifts[] = {10, 11, 13};
	prolly__chunk_rule rule;
	prolly__chunk_rule_init(&rule, PROLLY_CHUNK_SHIFT);
	PT_CHECK(rule.min == TB_MIN && rule.max == TB_MAX && rule.scale == 0x1p-48);
	tm_rng rng;
	tm_rng_seed(&rng, PT_SEED() ^ 0x512e);
	for (size_t si = 0; si < sizeof(shifts) / sizeof(shifts[0]); si++) {
		unsigned sh = shifts[si];
		prolly__chunk_rule_init(&rule, sh);
		size_t lo = (size_t)1 << (sh - 3), hi = (size_t)4 << sh;
		PT_CHECK(rule.min == lo && rule.max == hi);
		const size_t edges[] = {lo - 1, lo, lo + 1, (size_t)1 << sh, hi - 1, hi, hi + 1};
		uint64_t calls = 0, yes = 0, differ = 0, near_ = 0, below = 0, above = 0;
		unsigned char k[TM_KEY_MAX];
		for (uint64_t i = 0; i < 200000; i++) {
			size_t kl = tm_gen_key(&rng, k);
			unsigned level = (unsigned)tm_rng_below(&rng, 8);
			size_t s = i % 2 ? edges[i / 2 % 7] : (size_t)tm_rng_range(&rng, 1, hi + 100);
			size_t r = tm_rng_chance(&rng, 1, 4) ? s : (size_t)tm_rng_range(&rng, 9, 300);
			if (r > s)
				r = s;
			int nr, want = tb_boundary_at(sh, level, k, kl, s, r, &nr);
			int got = prolly__boundary(&rule, level, k, kl, s, r);
			calls++;
			if (nr) {
				near_++;
				continue;
			}
			yes += (uint64_t)want;
			differ += got != want;
			below += s < lo && got;
			above += s > hi && !got;
		}
		PT_CHECKF(differ == 0 && below == 0 && above == 0 && near_ <= 1 && yes > 0 && yes < calls,
		          "nodes of %u bytes: %llu of %llu calls differ, %llu below C1, %llu above C2, "
		          "%llu near, %llu boundaries",
		          1u << sh, (unsigned long long)differ, (unsigned long long)calls,
		          (unsigned long long)below, (unsigned long long)above, (unsigned long long)near_,
		          (unsigned long long)yes);
	}
}

/* Through the engine: a handle whose rule is of 1 KiB nodes builds the same records into about
 * four times the leaves of 4 KiB's, another tree (another root), and its edits keep to its rule:
 * random batches of puts and deletes give the root a bulk build of the result gives (history
 * independence holds under each size). */
PT_TEST(engine_at_one_kib_nodes)
{
	tm_rng rng;
	tm_rng_seed(&rng, PT_SEED() ^ 0x1c1b);
	tm_model m, cur;
	tm_model_init(&m);
	tm_model_init(&cur);
	tm_random_model(&m, &rng, 6000);
	prolly_db *d4 = tm_open_mem((size_t)64 << 20), *d1 = tm_open_mem((size_t)64 << 20);
	prolly__chunk_rule_init(&d1->rule, 10);
	prolly_id r4, r1, edited, rebuilt;
	prolly_tree_stats s4 = PROLLY_TREE_STATS_INIT, s1 = PROLLY_TREE_STATS_INIT;
	PT_REQUIRE(tm_build_commit(&r4, d4, &m) == 0 && tm_build_commit(&r1, d1, &m) == 0);
	PT_REQUIRE(prolly_tree_stats_get(&s4, d4, &r4, 0) == 0);
	PT_REQUIRE(prolly_tree_stats_get(&s1, d1, &r1, 0) == 0);
	PT_CHECK(!prolly_id_equal(&r4, &r1));
	PT_CHECKF(s1.leaves * 10 >= s4.leaves * 25 && s1.leaves * 10 <= s4.leaves * 60,
	          "%llu leaves of 1 KiB against %llu of 4 KiB", (unsigned long long)s1.leaves,
	          (unsigned long long)s4.leaves);
	PT_CHECK(tm_tree_check(d1, &r1, &m, "1 KiB build") == 0);
	/* Edits in random batches, at 1 KiB, from the 1 KiB tree. */
	edited = r1;
	tm_model_copy(&cur, &m);
	for (int round = 0; round < 8; round++) {
		prolly_edit e[300];
		unsigned char kb[300][TM_KEY_MAX];
		size_t n = (size_t)tm_rng_range(&rng, 1, 300);
		for (size_t i = 0; i < n; i++) {
			size_t kl;
			if (cur.n && tm_rng_chance(&rng, 1, 2)) {
				const tm_rec *x = &cur.r[tm_rng_below(&rng, cur.n)];
				kl = x->klen;
				memcpy(kb[i], x->k, kl);
			} else {
				kl = tm_gen_key(&rng, kb[i]);
			}
			e[i].op = tm_rng_chance(&rng, 1, 3) ? PROLLY_DEL : PROLLY_PUT;
			e[i].key.data = kb[i];
			e[i].key.size = kl;
			e[i].value.data = e[i].op == PROLLY_PUT ? "v" : NULL;
			e[i].value.size = e[i].op == PROLLY_PUT ? 1 : 0;
		}
		prolly_txn *txn = NULL;
		PT_REQUIRE(prolly_txn_begin(&txn, d1) == 0);
		PT_REQUIRE(prolly_edit_tree(&edited, txn, &edited, e, n) == 0);
		PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
		prolly_txn_free(txn);
		tm_model_apply(&cur, e, n);
	}
	PT_REQUIRE(tm_build_commit(&rebuilt, d1, &cur) == 0);
	PT_CHECKF(prolly_id_equal(&edited, &rebuilt), "edited %s, built %s", tm_hex(&edited),
	          tm_hex(&rebuilt));
	PT_CHECK(tm_tree_check(d1, &edited, &cur, "1 KiB edits") == 0);
	printf("# %llu records: %llu leaves of 1 KiB (height %u), %llu of 4 KiB (height %u)\n",
	       (unsigned long long)m.n, (unsigned long long)s1.leaves, s1.height,
	       (unsigned long long)s4.leaves, s4.height);
	prolly_close(d4);
	prolly_close(d1);
	tm_model_dispose(&m);
	tm_model_dispose(&cur);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
