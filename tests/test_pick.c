/*
 * test_pick.c - prolly_cherry_pick and prolly_revert against a model three-way merge:
 *
 *   - random trees and edits: cherry-picking commit C (parent P) onto a head H equals the model
 *     merge (base P, ours H, theirs C); reverting C on a descendant D equals the merge (base C,
 *     ours D, theirs P); conflicts (keys both sides changed differently) are reported exactly,
 *     and with RESOLVE_OURS the root equals the root built from the model's records;
 *   - merge commits need a mainline (PROLLY_EINVAL without), which picks the base parent;
 *   - a root commit's parent tree is the empty tree.
 *
 * Re-run with a seed: PROLLY_TEST_SEED=0x... build/tests/test_pick [NAME].
 */
#include "lib/model.h"
#include "ptest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const tm_rec *get(const tm_model *m, const tm_rec *r)
{
	return tm_model_get(m, r->k, r->klen);
}

static int same(const tm_rec *a, const tm_rec *b)
{
	if (!a || !b)
		return !a && !b;
	return a->vlen == b->vlen && memcmp(a->v, b->v, a->vlen) == 0;
}

/* out = the three-way merge with conflicts kept as ours; returns the number of conflicts. */
static size_t model_merge(tm_model *out, const tm_model *b, const tm_model *o, const tm_model *t)
{
	size_t conflicts = 0;
	tm_model_copy(out, o);
	const tm_model *all[3] = {b, o, t};
	for (int s = 0; s < 3; s++) {
		for (size_t i = 0; i < all[s]->n; i++) {
			const tm_rec *r = &all[s]->r[i];
			const tm_rec *vb = get(b, r), *vo = get(o, r), *vt = get(t, r);
			if (same(vo, vt) || same(vt, vb))
				continue;
			if (same(vo, vb)) {
				if (vt)
					tm_model_put(out, vt->k, vt->klen, vt->v, vt->vlen);
				else
					tm_model_del(out, r->k, r->klen);
				continue;
			}
			if (s == 0 || (s == 1 && !vb) || (s == 2 && !vb && !vo))
				conflicts++; /* each conflicting key counted once: in the first model holding it */
		}
	}
	return conflicts;
}

typedef struct owned {
	unsigned char **p;
	size_t n;
} owned;

/* A random batch over m's keys and new ones; m gets the batch applied. */
static void random_edits(tm_model *m, tm_rng *r, size_t n, owned *keep)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char *k = malloc(TM_KEY_MAX), *v = malloc(16);
		size_t kl;
		keep->p = realloc(keep->p, (keep->n + 2) * sizeof(*keep->p));
		keep->p[keep->n++] = k;
		keep->p[keep->n++] = v;
		if (m->n && tm_rng_chance(r, 2, 3)) {
			const tm_rec *x = &m->r[tm_rng_below(r, m->n)];
			memcpy(k, x->k, kl = x->klen);
		} else {
			kl = tm_gen_key(r, k);
		}
		if (tm_rng_chance(r, 1, 3)) {
			tm_model_del(m, k, kl);
		} else {
			size_t vl = (size_t)snprintf((char *)v, 16, "v%u", (unsigned)tm_rng_below(r, 1000));
			tm_model_put(m, k, kl, v, vl);
		}
	}
}

static void owned_free(owned *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->p[i]);
	free(o->p);
	o->n = 0;
	o->p = NULL;
}

static int commit_model(prolly_id *out, prolly_txn *txn, const tm_model *m, const prolly_id *par,
                        size_t np, int64_t t)
{
	prolly_id tree;
	int rc = tm_build(&tree, txn, m);
	return rc ? rc : prolly_commit_create(out, txn, &tree, par, np, t, "m");
}

static int count_conflict(void *payload, const prolly_conflict *c)
{
	(void)c;
	++*(size_t *)payload;
	return 0;
}

static void check(prolly_txn *txn, int revert, const prolly_id *onto_tree, const prolly_id *cid,
                  unsigned mainline, const tm_model *want, size_t want_conflicts, uint64_t seed)
{
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	prolly_id got, expect;
	size_t seen = 0;
	mo.on_conflict = count_conflict;
	mo.payload = &seen;
	int rc = revert ? prolly_revert(&got, NULL, txn, onto_tree, cid, mainline, &mo)
	                : prolly_cherry_pick(&got, NULL, txn, onto_tree, cid, mainline, &mo);
	PT_CHECKF(rc == (want_conflicts ? PROLLY_EMERGE : 0) && seen == want_conflicts,
	          "seed 0x%llx %s: rc %d, %zu conflicts reported, want %zu", (unsigned long long)seed,
	          revert ? "revert" : "pick", rc, seen, want_conflicts);
	mo.resolve = PROLLY_RESOLVE_OURS;
	rc = revert ? prolly_revert(&got, NULL, txn, onto_tree, cid, mainline, &mo)
	            : prolly_cherry_pick(&got, NULL, txn, onto_tree, cid, mainline, &mo);
	PT_CHECK_RC(rc, 0);
	PT_CHECK_RC(tm_build(&expect, txn, want), 0);
	PT_CHECKF(prolly_id_equal(&got, &expect), "seed 0x%llx %s: root differs from the model",
	          (unsigned long long)seed, revert ? "revert" : "pick");
}

PT_TEST(pick_and_revert_random)
{
	for (unsigned round = 0; round < 40 && !pt_failed_now; round++) {
		uint64_t seed = PT_SEED() + 31 * round;
		tm_rng r;
		tm_rng_seed(&r, seed);
		prolly_db *db = tm_open_mem((size_t)16 << 20);
		prolly_txn *txn = NULL;
		tm_model base, c, h, d, want;
		owned keep = {NULL, 0};
		tm_model_init(&base);
		tm_model_init(&c);
		tm_model_init(&h);
		tm_model_init(&d);
		tm_model_init(&want);
		tm_random_model(&base, &r, 1 + tm_rng_below(&r, round % 4 == 0 ? 30 : 3000));
		tm_model_copy(&c, &base);
		random_edits(&c, &r, 1 + tm_rng_below(&r, 40), &keep);
		tm_model_copy(&h, &base);
		random_edits(&h, &r, tm_rng_below(&r, 40), &keep);
		tm_model_copy(&d, &c);
		random_edits(&d, &r, tm_rng_below(&r, 40), &keep);
		prolly_id p_id, c_id, h_tree, d_tree;
		PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
		PT_REQUIRE(commit_model(&p_id, txn, &base, NULL, 0, 1) == 0);
		PT_REQUIRE(commit_model(&c_id, txn, &c, &p_id, 1, 2) == 0);
		PT_REQUIRE(tm_build(&h_tree, txn, &h) == 0 && tm_build(&d_tree, txn, &d) == 0);
		/* cherry-pick C onto H: merge(base P, ours H, theirs C) */
		size_t k = model_merge(&want, &base, &h, &c);
		check(txn, 0, &h_tree, &c_id, 0, &want, k, seed);
		check(txn, 0, &h_tree, &c_id, 1, &want, k, seed);
		/* revert C on D (a descendant): merge(base C, ours D, theirs P) */
		k = model_merge(&want, &c, &d, &base);
		check(txn, 1, &d_tree, &c_id, 0, &want, k, seed);
		/* a root commit: its parent tree is the empty tree */
		tm_model empty;
		tm_model_init(&empty);
		k = model_merge(&want, &empty, &h, &base);
		check(txn, 0, &h_tree, &p_id, 0, &want, k, seed);
		tm_model_dispose(&empty);
		prolly_txn_free(txn);
		owned_free(&keep);
		tm_model_dispose(&base);
		tm_model_dispose(&c);
		tm_model_dispose(&h);
		tm_model_dispose(&d);
		tm_model_dispose(&want);
		prolly_close(db);
	}
}

PT_TEST(pick_merge_commit_needs_mainline)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	prolly_txn *txn = NULL;
	tm_model x, y, m, want;
	tm_model_init(&x);
	tm_model_init(&y);
	tm_model_init(&m);
	tm_model_init(&want);
	tm_model_put(&x, "a", 1, "x", 1);
	tm_model_put(&y, "b", 1, "y", 1);
	tm_model_put(&m, "a", 1, "x", 1);
	tm_model_put(&m, "b", 1, "y", 1);
	tm_model_put(&m, "c", 1, "m", 1);
	prolly_id xi, yi, mi, par[2], got, ht;
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_REQUIRE(commit_model(&xi, txn, &x, NULL, 0, 1) == 0);
	PT_REQUIRE(commit_model(&yi, txn, &y, NULL, 0, 2) == 0);
	par[0] = xi;
	par[1] = yi;
	PT_REQUIRE(commit_model(&mi, txn, &m, par, 2, 3) == 0);
	PT_REQUIRE(tm_build(&ht, txn, &x) == 0);
	PT_CHECK_RC(prolly_cherry_pick(&got, NULL, txn, &ht, &mi, 0, NULL), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_cherry_pick(&got, NULL, txn, &ht, &mi, 3, NULL), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_cherry_pick(&got, NULL, txn, &ht, &xi, 2, NULL), PROLLY_EINVAL);
	/* mainline 1: the change from x (adds b and c) onto x */
	prolly_id expect;
	PT_CHECK_RC(prolly_cherry_pick(&got, NULL, txn, &ht, &mi, 1, NULL), 0);
	PT_CHECK_RC(tm_build(&expect, txn, &m), 0);
	PT_CHECK(prolly_id_equal(&got, &expect));
	/* mainline 2: the change from y (adds a and c) onto x: a is already x there */
	PT_CHECK_RC(prolly_cherry_pick(&got, NULL, txn, &ht, &mi, 2, NULL), 0);
	tm_model_copy(&want, &x);
	tm_model_put(&want, "c", 1, "m", 1);
	PT_CHECK_RC(tm_build(&expect, txn, &want), 0);
	PT_CHECK(prolly_id_equal(&got, &expect));
	prolly_id bogus;
	memset(&bogus, 3, sizeof bogus);
	PT_CHECK_RC(prolly_revert(&got, NULL, txn, &ht, &bogus, 0, NULL), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_revert(NULL, NULL, txn, &ht, &mi, 1, NULL), PROLLY_EINVAL);
	/* a stored tree given as the commit: bad input, as prolly_resolve says of it, not a
	 * corrupt commit (it used to be PROLLY_ECORRUPT, "commit ... is corrupt") */
	PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
	prolly_txn_free(txn);
	txn = NULL;
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_CHECK_RC(prolly_cherry_pick(&got, NULL, txn, &ht, &ht, 0, NULL), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "is a tree, not a commit") != NULL, "%s",
	          prolly_last_error());
	PT_CHECK_RC(prolly_revert(&got, NULL, txn, &ht, &ht, 0, NULL), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_revert(&got, NULL, txn, &ht, &mi, 1, NULL), 0);
	prolly_txn_free(txn);
	tm_model_dispose(&x);
	tm_model_dispose(&y);
	tm_model_dispose(&m);
	tm_model_dispose(&want);
	prolly_close(db);
}

/* The default message of a revert or cherry-pick: its two shapes, snprintf's rules for cap, and
 * a message too long to keep whole cut within PROLLY_MAX_MESSAGE at a character boundary. */
PT_TEST(pick_message)
{
	prolly_commit c;
	char hex[PROLLY_ID_HEX_SIZE], want[256], out[256];
	memset(&c, 0, sizeof(c));
	memset(&c.id, 0xab, sizeof(c.id));
	prolly_id_to_hex(hex, &c.id);
	c.message = "add p1";

	snprintf(want, sizeof(want), "revert %s: add p1", hex);
	PT_CHECK(prolly_pick_message(out, sizeof(out), &c, 1) == strlen(want));
	PT_CHECK(strcmp(out, want) == 0);
	snprintf(want, sizeof(want), "add p1 (cherry picked from %s)", hex);
	PT_CHECK(prolly_pick_message(out, sizeof(out), &c, 0) == strlen(want));
	PT_CHECK(strcmp(out, want) == 0);
	/* cap: the whole length returned, at most cap - 1 bytes written and a NUL */
	PT_CHECK(prolly_pick_message(NULL, 0, &c, 0) == strlen(want));
	memset(out, 'x', sizeof(out));
	PT_CHECK(prolly_pick_message(out, 5, &c, 0) == strlen(want));
	PT_CHECK(strcmp(out, "add ") == 0);
	PT_CHECK(prolly_pick_message(out, sizeof(out), NULL, 1) == 0 && out[0] == '\0');
	c.message = "";
	snprintf(want, sizeof(want), "revert %s: ", hex);
	PT_CHECK(prolly_pick_message(out, sizeof(out), &c, 1) == strlen(want));
	PT_CHECK(strcmp(out, want) == 0);

	/* a message of PROLLY_MAX_MESSAGE bytes, 3-byte characters ("\xe2\x82\xac") after one 'a':
	 * the cut lands before a character, never inside one */
	size_t n = PROLLY_MAX_MESSAGE;
	char *msg = malloc(n + 1), *big = malloc(PROLLY_MAX_MESSAGE + 1);
	PT_REQUIRE(msg && big);
	msg[0] = 'a';
	for (size_t i = 1; i + 3 <= n; i += 3)
		memcpy(msg + i, "\xe2\x82\xac", 3);
	msg[1 + (n - 1) / 3 * 3] = '\0';
	c.message = msg;
	for (int revert = 0; revert <= 1; revert++) {
		size_t len = prolly_pick_message(big, PROLLY_MAX_MESSAGE + 1, &c, revert);
		PT_CHECKF(len <= PROLLY_MAX_MESSAGE && len > PROLLY_MAX_MESSAGE - 3 - 100 &&
		              strlen(big) == len,
		          "revert %d: %zu bytes", revert, len);
		const char *kept = revert ? big + strlen("revert : ") + PROLLY_ID_HEX_SIZE - 1 : big;
		const char *end = revert ? big + len : strstr(big, " (cherry picked from ");
		PT_REQUIRE(end != NULL);
		PT_CHECKF((size_t)(end - kept - 1) % 3 == 0, "revert %d: %zu bytes kept", revert,
		          (size_t)(end - kept));
		snprintf(want, sizeof(want), " (cherry picked from %s)", hex);
		if (!revert)
			PT_CHECK(strcmp(end, want) == 0);
	}
	free(msg);
	free(big);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
