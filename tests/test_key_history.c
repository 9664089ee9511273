/*
 * test_key_history.c - prolly_key_history against a model of every commit's records:
 *
 *   - random histories (linear runs, branches, merge commits with two parents, commits that
 *     change nothing, deletes and re-puts): for every key, the reported commits and values equal
 *     those computed from the models in prolly_log's order (a commit is reported when its value
 *     differs from each parent's, a root when the key exists; only along the simplified
 *     history: from a commit whose value equals a parent's, only the first such parent);
 *   - a branch that left at the first commit and was merged after 300 commits on main (a
 *     long wait at the head of the walk's queue, across batches of lookups);
 *   - stopping early returns the callback's value;
 *   - cost: on a 60,000-record tree, 40 commits of history read O(height) nodes per commit from
 *     a cold cache, not a tree diff, in a store call per tree level for all of them.
 *
 * Re-run with a seed: PROLLY_TEST_SEED=0x... build/tests/test_key_history [NAME].
 */
#include "lib/model.h"
#include "ptest.h"

#include <stdlib.h>
#include <string.h>

#define MAXC 400

typedef struct hcommit {
	prolly_id id, tree;
	tm_model m;
} hcommit;

typedef struct hist {
	hcommit c[MAXC];
	size_t n;
} hist;

static const tm_model *model_of(const hist *h, const prolly_id *id)
{
	for (size_t i = 0; i < h->n; i++)
		if (prolly_id_equal(&h->c[i].id, id))
			return &h->c[i].m;
	return NULL;
}

/* A commit on top of parents[0]'s records with a few random edits over a small key space. */
static int add_commit(hist *h, prolly_db *db, tm_rng *r, const size_t *par, size_t np)
{
	hcommit *c = &h->c[h->n];
	prolly_txn *txn = NULL;
	prolly_id pids[2];
	prolly_edit e[4];
	char kb[4][8], vb[4][8];
	size_t ne = tm_rng_below(r, 4); /* sometimes none: a commit that changes nothing */
	tm_model_init(&c->m);
	if (np)
		tm_model_copy(&c->m, &h->c[par[0]].m);
	for (size_t i = 0; i < ne; i++) {
		snprintf(kb[i], sizeof kb[i], "k%02u", (unsigned)tm_rng_below(r, 12));
		snprintf(vb[i], sizeof vb[i], "v%u", (unsigned)tm_rng_below(r, 3));
		e[i].op = tm_rng_chance(r, 1, 3) ? PROLLY_DEL : PROLLY_PUT;
		e[i].key = (prolly_slice){kb[i], strlen(kb[i])};
		e[i].value = (prolly_slice){vb[i], strlen(vb[i])};
	}
	tm_model_apply(&c->m, e, ne);
	for (size_t i = 0; i < np; i++)
		pids[i] = h->c[par[i]].id;
	int64_t t = 1000000 * (int64_t)(h->n + 1);
	int rc = prolly_txn_begin(&txn, db);
	if (!rc)
		rc = tm_build(&c->tree, txn, &c->m);
	if (!rc)
		rc = prolly_commit_create(&c->id, txn, &c->tree, pids, np, t, "c");
	if (!rc)
		rc = prolly_txn_commit(txn, NULL, 0);
	prolly_txn_free(txn);
	h->n++;
	return rc;
}

typedef struct got {
	prolly_id id[MAXC];
	int exists[MAXC];
	char val[MAXC][8];
	size_t n;
	size_t stop_after; /* 0: never */
} got;

static int on_change(void *payload, const prolly_commit *c, const void *value, size_t vlen)
{
	got *g = payload;
	if (g->n == MAXC)
		return -100;
	g->id[g->n] = c->id;
	g->exists[g->n] = value != NULL;
	memset(g->val[g->n], 0, sizeof g->val[g->n]);
	if (value)
		memcpy(g->val[g->n], value, vlen < 7 ? vlen : 7);
	g->n++;
	return g->stop_after && g->n == g->stop_after ? 77 : 0;
}

typedef struct order {
	prolly_commit *c[MAXC];
	size_t n;
} order;

static int on_log(void *payload, const prolly_commit *c)
{
	order *o = payload;
	prolly_commit *d = calloc(1, sizeof(*d));
	d->id = c->id;
	d->n_parents = c->n_parents;
	d->parents = calloc(c->n_parents + 1, sizeof(prolly_id));
	if (c->n_parents)
		memcpy(d->parents, c->parents, c->n_parents * sizeof(prolly_id));
	o->c[o->n++] = d;
	return 0;
}

static int same_value(const tm_rec *a, const tm_rec *b)
{
	if (!a || !b)
		return !a && !b;
	return a->vlen == b->vlen && memcmp(a->v, b->v, a->vlen) == 0;
}

static void check_key(const hist *h, prolly_db *db, const prolly_id *head, const char *key,
                      uint64_t seed)
{
	order o = {{0}, 0};
	got g;
	memset(&g, 0, sizeof g);
	PT_CHECK_RC(prolly_log(db, head, on_log, &o), 0);
	PT_CHECK_RC(prolly_key_history(db, head, key, strlen(key), on_change, &g), 0);
	size_t k = 0;
	int wanted[MAXC] = {1}; /* the simplified history: the start commit, then... */
	for (size_t i = 0; i < o.n; i++) {
		if (!wanted[i])
			continue;
		const tm_model *m = model_of(h, &o.c[i]->id);
		const tm_rec *v = tm_model_get(m, key, strlen(key));
		int changed = o.c[i]->n_parents ? 1 : v != NULL;
		size_t same_parent = o.c[i]->n_parents;
		for (size_t p = 0; p < o.c[i]->n_parents; p++) {
			const tm_model *pm = model_of(h, &o.c[i]->parents[p]);
			if (same_value(v, tm_model_get(pm, key, strlen(key)))) {
				changed = 0;
				if (same_parent == o.c[i]->n_parents)
					same_parent = p;
			}
		}
		/* ...the first parent with the same value, or every parent when none has it. */
		for (size_t p = 0; p < o.c[i]->n_parents; p++)
			if (same_parent == o.c[i]->n_parents || p == same_parent)
				for (size_t j = i + 1; j < o.n; j++)
					if (prolly_id_equal(&o.c[j]->id, &o.c[i]->parents[p]))
						wanted[j] = 1;
		if (!changed)
			continue;
		PT_CHECKF(k < g.n && prolly_id_equal(&g.id[k], &o.c[i]->id),
		          "seed 0x%llx key %s: report %zu is not commit %s", (unsigned long long)seed, key,
		          k, tm_hex(&o.c[i]->id));
		if (k < g.n) {
			PT_CHECK(g.exists[k] == (v != NULL));
			if (v)
				PT_CHECK(v->vlen == strlen(g.val[k]) && memcmp(v->v, g.val[k], v->vlen) == 0);
		}
		k++;
	}
	PT_CHECKF(k == g.n, "seed 0x%llx key %s: %zu reports, expected %zu", (unsigned long long)seed,
	          key, g.n, k);
	/* The first report holds the key's value at the head. */
	const tm_rec *now = tm_model_get(model_of(h, head), key, strlen(key));
	if (now)
		PT_CHECKF(g.n > 0 && g.exists[0] && now->vlen == strlen(g.val[0]) &&
		              memcmp(now->v, g.val[0], now->vlen) == 0,
		          "seed 0x%llx key %s: the newest report is not the head's value",
		          (unsigned long long)seed, key);
	for (size_t i = 0; i < o.n; i++)
		prolly_commit_free(o.c[i]);
}

PT_TEST(key_history_random)
{
	for (unsigned round = 0; round < 12 && !pt_failed_now; round++) {
		uint64_t seed = PT_SEED() + round;
		tm_rng r;
		tm_rng_seed(&r, seed);
		prolly_db *db = tm_open_mem(round % 3 == 0 ? 0 : (size_t)8 << 20);
		hist *h = calloc(1, sizeof(*h));
		size_t heads[3] = {0, 0, 0};
		PT_REQUIRE(add_commit(h, db, &r, NULL, 0) == 0);
		for (int b = 1; b < 3; b++)
			heads[b] = 0;
		while (h->n < 100 && !pt_failed_now) {
			size_t b = tm_rng_below(&r, 3), par[2] = {heads[b], 0}, np = 1;
			if (tm_rng_chance(&r, 1, 6)) { /* merge another line in */
				size_t o = (b + 1 + tm_rng_below(&r, 2)) % 3;
				if (heads[o] != heads[b]) {
					par[1] = heads[o];
					np = 2;
				}
			}
			PT_REQUIRE(add_commit(h, db, &r, par, np) == 0);
			heads[b] = h->n - 1;
		}
		for (int b = 0; b < 3; b++) {
			for (unsigned k = 0; k < 12; k++) {
				char key[8];
				snprintf(key, sizeof key, "k%02u", k);
				check_key(h, db, &h->c[heads[b]].id, key, seed);
			}
			check_key(h, db, &h->c[heads[b]].id, "never", seed);
		}
		for (size_t i = 0; i < h->n; i++)
			tm_model_dispose(&h->c[i].m);
		free(h);
		prolly_close(db);
	}
}

/* A branch that left at the first commit, merged after 300 commits on main: the merge waits at
 * the head of the walk's queue until the walk reaches the branch's old commits, so everything in
 * between queues behind it (found by id, not by scanning the queue: key_history.c), across
 * more than one batch of lookups (KH_BATCH, 256). Every key checked against the models, from
 * the merge and from the commit before it. */
PT_TEST(key_history_old_branch_merged_late)
{
	for (unsigned round = 0; round < 3 && !pt_failed_now; round++) {
		uint64_t seed = PT_SEED() + 100 + round;
		tm_rng r;
		tm_rng_seed(&r, seed);
		prolly_db *db = tm_open_mem((size_t)8 << 20);
		hist *h = calloc(1, sizeof(*h));
		PT_REQUIRE(db && h && add_commit(h, db, &r, NULL, 0) == 0);
		size_t side = 0, main_head = 0;
		for (int i = 0; i < 3; i++) { /* the side branch: older than all of main's */
			PT_REQUIRE(add_commit(h, db, &r, &side, 1) == 0);
			side = h->n - 1;
		}
		for (int i = 0; i < 300; i++) {
			PT_REQUIRE(add_commit(h, db, &r, &main_head, 1) == 0);
			main_head = h->n - 1;
		}
		size_t par[2] = {main_head, side};
		PT_REQUIRE(add_commit(h, db, &r, par, 2) == 0);
		for (unsigned k = 0; k < 12; k++) {
			char key[8];
			snprintf(key, sizeof key, "k%02u", k);
			check_key(h, db, &h->c[h->n - 1].id, key, seed);
			check_key(h, db, &h->c[main_head].id, key, seed);
		}
		for (size_t i = 0; i < h->n; i++)
			tm_model_dispose(&h->c[i].m);
		free(h);
		prolly_close(db);
	}
}

PT_TEST(key_history_stop_and_errors)
{
	prolly_db *db = tm_open_mem((size_t)8 << 20);
	tm_rng r;
	tm_rng_seed(&r, PT_SEED());
	hist *h = calloc(1, sizeof(*h));
	PT_REQUIRE(add_commit(h, db, &r, NULL, 0) == 0);
	for (size_t i = 1; i < 30; i++) {
		size_t p = i - 1;
		PT_REQUIRE(add_commit(h, db, &r, &p, 1) == 0);
	}
	got g;
	memset(&g, 0, sizeof g);
	g.stop_after = 1;
	int rc = 0;
	for (unsigned k = 0; k < 12 && g.n == 0; k++) {
		char key[8];
		snprintf(key, sizeof key, "k%02u", k);
		rc = prolly_key_history(db, &h->c[h->n - 1].id, key, strlen(key), on_change, &g);
	}
	PT_CHECK(g.n == 1 && rc == 77);
	prolly_id bogus;
	memset(&bogus, 7, sizeof bogus);
	PT_CHECK_RC(prolly_key_history(db, &bogus, "k", 1, on_change, &g), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_key_history(db, &bogus, "k", 1, NULL, &g), PROLLY_EINVAL);
	char big[PROLLY_MAX_KEY + 1];
	memset(big, 'x', sizeof big);
	PT_CHECK_RC(prolly_key_history(db, &h->c[0].id, big, sizeof big, on_change, &g),
	            PROLLY_ETOOBIG);
	for (size_t i = 0; i < h->n; i++)
		tm_model_dispose(&h->c[i].m);
	free(h);
	prolly_close(db);
}

/* After a gc with retention, the commits between a merge base and the heads are kept without
 * their trees (docs/commits.md, K3): the history reads past them as if retention had removed
 * them (KH5), it does not fail on their missing trees. */
TM_BOTH_STORES(key_history_pruned_trees)
{
	tm_db t;
	prolly_id base, m, d;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	char k[16];
	PT_REQUIRE(tm_db_open(&t, lmdb, "kh", 0, 2, 0) == 0);
	PT_REQUIRE(tm_commit_put(&base, t.db, "main", "a", "1", "base") == 0);
	PT_REQUIRE(prolly_branch_create(t.db, "dev", &base) == 0);
	for (int i = 0; i < 4; i++) {
		snprintf(k, sizeof k, "m%d", i);
		PT_REQUIRE(tm_commit_put(&m, t.db, "main", k, "x", "m") == 0);
		snprintf(k, sizeof k, "d%d", i);
		PT_REQUIRE(tm_commit_put(&d, t.db, "dev", k, "x", "d") == 0);
	}
	PT_REQUIRE(prolly_gc(t.db, &res) == 0);
	prolly_db_cache_clear(t.db);
	got g;
	memset(&g, 0, sizeof g);
	PT_CHECK_RC(prolly_key_history(t.db, &m, "m3", 2, on_change, &g), 0);
	PT_CHECK(g.n == 1 && prolly_id_equal(&g.id[0], &m) && g.exists[0]);
	/* m2 was set by main~1, the oldest commit with a tree: it counts as a root there. */
	memset(&g, 0, sizeof g);
	PT_CHECK_RC(prolly_key_history(t.db, &m, "m2", 2, on_change, &g), 0);
	PT_CHECK(g.n == 1 && g.exists[0] && strcmp(g.val[0], "x") == 0);
	tm_db_close(&t);
}

/* Per commit, O(height) node reads: the lookups share the path nodes the commits' trees share. */
PT_TEST(key_history_cost)
{
	prolly_db *db = tm_open_mem((size_t)64 << 20);
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	prolly_id tree, head, prev;
	unsigned char k[TM_KEY24], v[64];
	const uint64_t n = 60000;
	const unsigned commits = 40;
	memset(v, 'v', sizeof v);
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0 && prolly_builder_new(&b, txn) == 0);
	for (uint64_t i = 0; i < n; i++) {
		tm_key24(k, i);
		PT_REQUIRE(prolly_builder_add(b, k, sizeof k, v, sizeof v) == 0);
	}
	PT_REQUIRE(prolly_builder_finish(b, &tree) == 0);
	PT_REQUIRE(prolly_commit_create(&head, txn, &tree, NULL, 0, 1, "build") == 0);
	PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_builder_free(b);
	prolly_txn_free(txn);
	for (unsigned c = 0; c < commits; c++) { /* each commit edits 50 random keys */
		prolly_edit e[50];
		unsigned char kb[50][TM_KEY24];
		char val[16];
		snprintf(val, sizeof val, "c%u", c);
		for (int i = 0; i < 50; i++) {
			tm_key24(kb[i], (uint64_t)(c * 7919 + (unsigned)i * 1201) % n);
			e[i] = (prolly_edit){PROLLY_PUT, {kb[i], sizeof kb[i]}, {val, strlen(val)}};
		}
		prev = head;
		PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
		PT_REQUIRE(prolly_edit_tree(&tree, txn, &tree, e, 50) == 0);
		PT_REQUIRE(prolly_commit_create(&head, txn, &tree, &prev, 1, 2 + c, "edit") == 0);
		PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
		prolly_txn_free(txn);
	}
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	PT_REQUIRE(prolly_tree_stats_get(&ts, db, &tree, 0) == 0);
	got g;
	memset(&g, 0, sizeof g);
	tm_key24(k, 1201);
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_key_history(db, &head, k, sizeof k, on_change, &g), 0);
	prolly_stats st = PROLLY_STATS_INIT;
	prolly_thread_stats(&st);
	printf("# %u commits over %llu records (height %u, %llu leaves): %zu changes, %llu nodes "
	       "read\n",
	       commits + 1, (unsigned long long)ts.records, ts.height, (unsigned long long)ts.leaves,
	       g.n, (unsigned long long)st.nodes_read);
	/* Tree nodes (at most height per commit) plus the commits themselves. */
	PT_CHECK(st.nodes_read <= (uint64_t)(commits + 1) * (ts.height + 1));
	/* The lookups of the 41 commits go as one batch: a store call per level of the trees, plus
	 * the walk's reads of the commits. */
	printf("# %llu store reads\n", (unsigned long long)st.store_reads);
	PT_CHECK(st.store_reads <= ts.height + 3);
	PT_CHECK(g.n >= 2);
	prolly_close(db);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
