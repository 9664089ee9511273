/*
 * service_ops.c - the service suite's fixture, operations, value codec and shared-store wrapper.
 *
 * The fixture (service.c says what it is) is built by svc_fixture_build in one txn and restored
 * before every cell by svc_fixture_restore in one store write.
 *
 * Each operation runs on its worker's own prolly_db (whose decoded cache the caller cleared) and
 * does what a stateless service would do for one request, in as few store round trips as the
 * library allows:
 *
 *   point_read  head of a branch, its commit and its tree's root (prolly_branch_commit: one
 *               statement on PostgreSQL), one prolly_get (one get_nodes per tree level below the
 *               root); the value is checked against its key.
 *   multi_read  the same with one prolly_get_many of multi_read_keys random keys (still one
 *               get_nodes per level); every value is checked.
 *   commit      head, commit and root (one call), prolly_edit_tree of commit_keys updates, a
 *               commit object, and
 *               ONE store write that publishes the nodes and moves the branch by compare-and-swap
 *               (what prolly_commit_edits does, done by hand so that the new tree's id is known
 *               for the diff ring, and a retry after a lost race starts from the winning head the
 *               failed write reported instead of reading the ref again). Up to cas_retries
 *               retries. Checked: the new tree holds `records` records and the last edit.
 *   diff        head, its commit, prolly_diff against a tree retained from an earlier commit of
 *               the branch (the fixture's base tree while none is retained). Every entry must be
 *               a change of a key of the key space whose two values are well formed for it.
 *   merge       both side branches of a tenant with ONE list_refs, their merge base, the three
 *               commits, prolly_merge (side-b's changes onto side-a), a merge commit, and ONE
 *               store write that publishes it as a new scratch branch "t<t>/merge-c<cell>-w<w>-<n>"
 *               (created, expecting it absent). Creating the branch in the merge's own write
 *               spares the separate create (get_ref, commit read, write) and delete (get_ref,
 *               write) of a scratch branch that prolly_merge_branches would need; the scratch
 *               branches are removed, untimed, when the fixture is restored. Checked: the merged
 *               tree has `records` records, side-b's changes were all applied, and a key of each
 *               side holds that side's value.
 *
 * Validation runs after svc_timed_end() (service_int.h S2), except the per-value checks of
 * multi_read and diff, which run inside the library's callbacks (a checksum per value).
 */
#include "service_int.h"

#include "buf.h"
#include "clock.h"
#include "rng.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const svc_err_names[SVC_N_ERR] = {
    "timeout",  "conflict_exhausted", "store",      "corrupt",
    "notfound", "merge_conflict",     "validation", "other"};

/* ------------------------------------------------------------------------------------------ */
/* Randomness, keys, values                                                                   */
/* ------------------------------------------------------------------------------------------ */

uint64_t svc_rand(svc_worker *w)
{
	return bench_splitmix64(&w->rs);
}

uint64_t svc_below(svc_worker *w, uint64_t n)
{
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	for (;;) {
		uint64_t x = svc_rand(w);
		if (x < limit)
			return x % n;
	}
}

void svc_key(unsigned char out[SVC_KEY_LEN], uint64_t slot)
{
	out[0] = 'k';
	for (int i = SVC_KEY_DIGITS; i >= 1; i--) {
		out[i] = (unsigned char)('0' + slot % 10);
		slot /= 10;
	}
}

int svc_key_parse(const void *key, size_t len, uint64_t records, uint64_t *slot)
{
	const unsigned char *k = key;
	uint64_t s = 0;
	if (len != SVC_KEY_LEN || k[0] != 'k')
		return -1;
	for (int i = 1; i <= SVC_KEY_DIGITS; i++) {
		if (k[i] < '0' || k[i] > '9')
			return -1;
		s = s * 10 + (uint64_t)(k[i] - '0');
	}
	if (s >= records)
		return -1;
	*slot = s;
	return 0;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;
	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* FNV-1a over p[0..n), folded to 32 bits. */
static uint32_t checksum(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return (uint32_t)(h ^ (h >> 32));
}

void svc_value(unsigned char *out, uint32_t n, uint64_t slot, uint32_t gen)
{
	uint64_t x = bench_mix64(slot * 0x2545f4914f6cdd1dull ^ ((uint64_t)gen << 32 | gen));
	put_le(out, slot, 8);
	put_le(out + 8, gen, 4);
	for (uint32_t i = 12; i < n - 4; i++) {
		if ((i - 12) % 8 == 0)
			x = bench_mix64(x);
		out[i] = (unsigned char)(x >> (8 * ((i - 12) % 8)));
	}
	put_le(out + n - 4, checksum(out, n - 4), 4);
}

int svc_value_check(const void *v, size_t len, uint32_t n, uint64_t slot, uint32_t *gen)
{
	const unsigned char *p = v;
	if (!v || len != n || n < SVC_VALUE_MIN)
		return -1;
	if (get_le(p, 8) != slot || (uint32_t)get_le(p + n - 4, 4) != checksum(p, n - 4))
		return -1;
	if (gen)
		*gen = (uint32_t)get_le(p + 8, 4);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Branches and rings                                                                         */
/* ------------------------------------------------------------------------------------------ */

void svc_main_branch(char *out, size_t n, const svc_fixture *fx, uint32_t b)
{
	if (b < fx->tenants)
		snprintf(out, n, "t%u/main", b);
	else
		snprintf(out, n, "hot%u/main", b - fx->tenants);
}

void svc_ring_push(svc_ring *r, const prolly_id *tree)
{
	if (!r->cap)
		return;
	pthread_mutex_lock(&r->mu);
	r->trees[r->next] = *tree;
	r->next = (r->next + 1) % r->cap;
	if (r->n < r->cap)
		r->n++;
	pthread_mutex_unlock(&r->mu);
}

int svc_ring_pick(svc_ring *r, svc_worker *w, prolly_id *out)
{
	int rc = -1;
	if (!r->cap)
		return -1;
	pthread_mutex_lock(&r->mu);
	if (r->n) {
		/* The ring's slots [next - n, next) modulo cap hold the retained trees. */
		uint32_t back = 1 + (uint32_t)svc_below(w, r->n);
		*out = r->trees[(r->next + r->cap - back) % r->cap];
		rc = 0;
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

int svc_err_kind(int rc)
{
	switch (rc) {
	case PROLLY_ETIMEOUT: return SVC_E_TIMEOUT;
	case PROLLY_ECONFLICT: return SVC_E_CONFLICT;
	case PROLLY_ESTORE:
	case PROLLY_EFULL: return SVC_E_STORE;
	case PROLLY_ECORRUPT: return SVC_E_CORRUPT;
	case PROLLY_ENOTFOUND: return SVC_E_NOTFOUND;
	case PROLLY_EMERGE: return SVC_E_MERGE;
	default: return SVC_E_OTHER;
	}
}

int svc_oom(char *err, size_t errn)
{
	snprintf(err, errn, "service: out of memory");
	return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Fixture                                                                                    */
/* ------------------------------------------------------------------------------------------ */

void svc_fixture_dispose(svc_fixture *fx)
{
	uint32_t n = fx->tenants + fx->hot_roots;
	if (fx->rings) {
		for (uint32_t i = 0; i < n; i++) {
			pthread_mutex_destroy(&fx->rings[i].mu);
			free(fx->rings[i].trees);
		}
	}
	free(fx->rings);
	free(fx->side_commit);
	free(fx->merged_tree);
	free(fx->side_slots);
	memset(fx, 0, sizeof(*fx));
}

int svc_fixture_init(svc_fixture *fx, const hw_service *cfg, char *err, size_t errn)
{
	memset(fx, 0, sizeof(*fx));
	fx->cfg = cfg;
	fx->records = cfg->records;
	fx->value_bytes = cfg->value_bytes;
	fx->tenants = cfg->tenants;
	fx->hot_roots = cfg->hot_roots;
	fx->side_keys = cfg->commit_keys;
	if ((uint64_t)fx->side_keys * 2 > fx->records)
		fx->side_keys = (uint32_t)(fx->records / 2); /* disjoint sides need 2 keys per edit */
	uint32_t n = fx->tenants + fx->hot_roots;
	fx->side_commit = calloc((size_t)fx->tenants * 2, sizeof(*fx->side_commit));
	fx->merged_tree = calloc((size_t)fx->tenants + 1, sizeof(*fx->merged_tree));
	fx->side_slots = calloc((size_t)fx->tenants * 2 * fx->side_keys + 1, sizeof(*fx->side_slots));
	fx->rings = calloc(n, sizeof(*fx->rings));
	if (!fx->side_commit || !fx->merged_tree || !fx->side_slots || !fx->rings) {
		free(fx->rings);
		fx->rings = NULL;
		svc_fixture_dispose(fx);
		return svc_oom(err, errn);
	}
	for (uint32_t i = 0; i < n; i++)
		pthread_mutex_init(&fx->rings[i].mu, NULL);
	for (uint32_t i = 0; i < n; i++) {
		svc_ring *r = &fx->rings[i];
		r->cap = cfg->retained_versions;
		if (r->cap && !(r->trees = calloc(r->cap, sizeof(*r->trees)))) {
			svc_fixture_dispose(fx);
			return svc_oom(err, errn);
		}
	}
	return 0;
}

int svc_prolly_fail(char *err, size_t errn, const char *what, int rc)
{
	snprintf(err, errn, "service: %s: %s: %s", what, prolly_strerror(rc), prolly_last_error());
	return -1;
}

/* Builds the base tree, the base commit and every tenant's side commits (one txn), and the tree
 * every merge of a tenant's sides must give (side-a's tree with side-b's edits). */
int svc_fixture_build(svc_fixture *fx, prolly_db *db, uint64_t seed, char *err, size_t errn)
{
	uint32_t vb = fx->value_bytes, sk = fx->side_keys;
	unsigned char key[SVC_KEY_LEN];
	unsigned char *val = malloc(vb), *keys = malloc((size_t)sk * SVC_KEY_LEN + 1);
	unsigned char *vals = malloc((size_t)sk * vb + 1);
	prolly_edit *edits = calloc((size_t)sk + 1, sizeof(*edits));
	uint64_t *pick = malloc(((size_t)sk * 2 + 1) * sizeof(*pick));
	prolly_builder *b = NULL;
	prolly_txn *txn = NULL;
	bench_rng r;
	int rc, ret = -1;

	if (!val || !keys || !vals || !edits || !pick) {
		svc_oom(err, errn);
		goto cleanup;
	}
	if ((rc = prolly_txn_begin(&txn, db)) || (rc = prolly_builder_new(&b, txn))) {
		svc_prolly_fail(err, errn, "fixture", rc);
		goto cleanup;
	}
	for (uint64_t slot = 0; slot < fx->records; slot++) {
		svc_key(key, slot);
		svc_value(val, vb, slot, 0);
		if ((rc = prolly_builder_add(b, key, sizeof(key), val, vb))) {
			svc_prolly_fail(err, errn, "fixture: building the base tree", rc);
			goto cleanup;
		}
	}
	rc = prolly_builder_finish(b, &fx->base_tree);
	prolly_builder_free(b);
	b = NULL;
	int64_t t0 = bench_wall_us();
	if (rc || (rc = prolly_commit_create(&fx->base_commit, txn, &fx->base_tree, NULL, 0, t0,
	                                     "service fixture: base"))) {
		svc_prolly_fail(err, errn, "fixture: base commit", rc);
		goto cleanup;
	}
	bench_rng_seed(&r, seed ^ 0x5e71ce0000000000ull);
	for (uint32_t t = 0; t < fx->tenants; t++) {
		if (bench_rng_sample_distinct(&r, fx->records, pick, (size_t)sk * 2)) {
			svc_oom(err, errn);
			goto cleanup;
		}
		prolly_id tree[2];
		for (uint32_t side = 0; side < 2; side++) {
			uint64_t *slots = fx->side_slots + ((size_t)t * 2 + side) * sk;
			uint32_t gen = side ? SVC_GEN_SIDE_B : SVC_GEN_SIDE_A;
			char msg[64];
			for (uint32_t i = 0; i < sk; i++) {
				slots[i] = pick[side * sk + i];
				svc_key(keys + (size_t)i * SVC_KEY_LEN, slots[i]);
				svc_value(vals + (size_t)i * vb, vb, slots[i], gen);
				edits[i].op = PROLLY_PUT;
				edits[i].key.data = keys + (size_t)i * SVC_KEY_LEN;
				edits[i].key.size = SVC_KEY_LEN;
				edits[i].value.data = vals + (size_t)i * vb;
				edits[i].value.size = vb;
			}
			snprintf(msg, sizeof(msg), "service fixture: t%u/side-%c", t, side ? 'b' : 'a');
			if ((rc = prolly_edit_tree(&tree[side], txn, &fx->base_tree, edits, sk)) ||
			    (rc = prolly_commit_create(&fx->side_commit[t * 2 + side], txn, &tree[side],
			                               &fx->base_commit, 1, t0 + 1, msg))) {
				svc_prolly_fail(err, errn, "fixture: side commits", rc);
				goto cleanup;
			}
		}
		/* edits holds side-b's: the merged tree is side-a's with them (a tree's id is its records) */
		if ((rc = prolly_edit_tree(&fx->merged_tree[t], txn, &tree[0], edits, sk))) {
			svc_prolly_fail(err, errn, "fixture: the merged tree", rc);
			goto cleanup;
		}
	}
	if ((rc = prolly_txn_commit(txn, NULL, 0))) {
		svc_prolly_fail(err, errn, "fixture: writing", rc);
		goto cleanup;
	}
	ret = 0;
cleanup:
	prolly_builder_free(b);
	prolly_txn_free(txn);
	free(val);
	free(keys);
	free(vals);
	free(edits);
	free(pick);
	return ret;
}

/* The fixture commit of a branch ref ("refs/heads/..."), or NULL if it is not a fixture ref. */
static const prolly_id *fixture_ref(const svc_fixture *fx, const char *name)
{
	static const char *const kinds[3] = {"main", "side-a", "side-b"};
	const char *b = name + 11;
	char want[PROLLY_MAX_REF_NAME + 1];
	unsigned n;
	int used = 0;
	if (strncmp(name, "refs/heads/", 11) != 0)
		return NULL;
	if (sscanf(b, "t%u/%n", &n, &used) == 1 && used && n < fx->tenants) {
		for (int k = 0; k < 3; k++) {
			snprintf(want, sizeof(want), "t%u/%s", n, kinds[k]);
			if (strcmp(want, b) == 0)
				return k ? &fx->side_commit[n * 2 + (unsigned)(k - 1)] : &fx->base_commit;
		}
	}
	used = 0;
	if (sscanf(b, "hot%u/%n", &n, &used) == 1 && used && n < fx->hot_roots) {
		snprintf(want, sizeof(want), "hot%u/main", n);
		if (strcmp(want, b) == 0)
			return &fx->base_commit;
	}
	return NULL;
}

typedef struct extra_refs {
	const svc_fixture *fx;
	char **names;
	size_t n, cap;
	int oom;
} extra_refs;

static int on_ref(void *payload, const char *name, const prolly_id *value)
{
	extra_refs *x = payload;
	(void)value;
	if (fixture_ref(x->fx, name))
		return 0;
	if (bench_grow((void **)&x->names, &x->cap, x->n + 1, sizeof(*x->names)) != 0)
		return x->oom = 1;
	if (!(x->names[x->n] = strdup(name)))
		return x->oom = 1;
	x->n++;
	return 0;
}

static int set_ref(prolly_txn *txn, const char *name, const prolly_id *value)
{
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = name;
	u.expect = PROLLY_REF_EXPECT_ANY;
	if (value)
		u.value = *value;
	else
		u.remove = 1;
	return prolly_txn_set_ref(txn, &u);
}

/* Sets every fixture branch to its commit and removes every other branch: one store write. */
int svc_fixture_restore(svc_fixture *fx, prolly_db *db, char *err, size_t errn)
{
	prolly_store *st = prolly_db_store(db);
	extra_refs x = {fx, NULL, 0, 0, 0};
	prolly_txn *txn = NULL;
	char name[PROLLY_MAX_REF_NAME + 1];
	int rc, ret = -1;

	if ((rc = st->list_refs(st, "refs/heads/", on_ref, &x)) && !x.oom) {
		svc_prolly_fail(err, errn, "restoring the fixture: listing branches", rc);
		goto cleanup;
	}
	if (x.oom) {
		svc_oom(err, errn);
		goto cleanup;
	}
	if ((rc = prolly_txn_begin(&txn, db)))
		goto fail;
	for (uint32_t t = 0; t < fx->tenants && !rc; t++) {
		snprintf(name, sizeof(name), "refs/heads/t%u/main", t);
		rc = set_ref(txn, name, &fx->base_commit);
		snprintf(name, sizeof(name), "refs/heads/t%u/side-a", t);
		rc = rc ? rc : set_ref(txn, name, &fx->side_commit[t * 2]);
		snprintf(name, sizeof(name), "refs/heads/t%u/side-b", t);
		rc = rc ? rc : set_ref(txn, name, &fx->side_commit[t * 2 + 1]);
	}
	for (uint32_t h = 0; h < fx->hot_roots && !rc; h++) {
		snprintf(name, sizeof(name), "refs/heads/hot%u/main", h);
		rc = set_ref(txn, name, &fx->base_commit);
	}
	for (size_t i = 0; i < x.n && !rc; i++)
		rc = set_ref(txn, x.names[i], NULL);
	if (rc || (rc = prolly_txn_commit(txn, NULL, 0)))
		goto fail;
	for (uint32_t i = 0; i < fx->tenants + fx->hot_roots; i++) {
		svc_ring *r = &fx->rings[i];
		pthread_mutex_lock(&r->mu);
		r->n = r->next = 0;
		pthread_mutex_unlock(&r->mu);
	}
	ret = 0;
	goto cleanup;
fail:
	svc_prolly_fail(err, errn, "restoring the fixture", rc);
cleanup:
	prolly_txn_free(txn);
	for (size_t i = 0; i < x.n; i++)
		free(x.names[i]);
	free(x.names);
	return ret;
}

/* A prolly_db on the shared store (service_int.h S1). */
int svc_open_db(prolly_db **out, prolly_store *store)
{
	bench_store *sh;
	prolly_options o;
	int rc = bench_store_wrap(&sh, store, BENCH_STORE_BORROW);
	if (rc)
		return rc;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.cache_bytes = (size_t)64 << 20; /* cleared before every operation anyway */
	return prolly_db_new(out, bench_store_base(sh), &o);
}

/* ------------------------------------------------------------------------------------------ */
/* Shared steps                                                                               */
/* ------------------------------------------------------------------------------------------ */

void svc_timed_end(svc_result *r)
{
	r->t_end = bench_now_ns();
	prolly_stats_init(&r->st, PROLLY_STATS_VERSION);
	prolly_thread_stats(&r->st);
	prolly_pg_stats_init(&r->pg, PROLLY_PG_STATS_VERSION);
	prolly_store_pg_thread_stats(&r->pg);
}

void svc_fail(svc_result *r, int rc, const char *what)
{
	r->rc = rc;
	snprintf(r->msg, sizeof(r->msg), "%s: %s: %s", what, prolly_strerror(rc), prolly_last_error());
}

void svc_invalid(svc_result *r, const char *fmt, const char *detail)
{
	r->bad = 1;
	if (!r->msg[0])
		snprintf(r->msg, sizeof(r->msg), fmt, detail);
}

/* The branch an operation works on: a hot root with probability hot_root_share, else a random
 * tenant's main branch. */
uint32_t svc_pick_branch(svc_worker *w)
{
	const svc_fixture *fx = w->fx;
	double u = (double)(svc_rand(w) >> 11) * 0x1.0p-53;
	if (fx->hot_roots && u < fx->cfg->hot_root_share)
		return fx->tenants + (uint32_t)svc_below(w, fx->hot_roots);
	return (uint32_t)svc_below(w, fx->tenants);
}

/* Head commit of branch and its tree: one store call with a store that has get_ref_objects
 * (PostgreSQL: ref, commit and the tree's root in one statement; the root is then cached). */
static int head_tree(prolly_id *head, prolly_id *tree, int64_t *time_us, prolly_db *db,
                     const char *branch)
{
	prolly_commit *c = NULL;
	int rc = prolly_branch_commit(&c, db, branch);
	if (rc == 0) {
		*head = c->id;
		*tree = c->tree;
		if (time_us)
			*time_us = c->time_us;
	}
	prolly_commit_free(c);
	return rc;
}

static int64_t next_time_us(int64_t parent)
{
	int64_t now = bench_wall_us();
	return now > parent ? now : parent + 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Reads                                                                                      */
/* ------------------------------------------------------------------------------------------ */

static void op_point_read(svc_worker *w, svc_result *r)
{
	const svc_fixture *fx = w->fx;
	char branch[64];
	unsigned char key[SVC_KEY_LEN];
	prolly_id head, tree;
	uint64_t slot = svc_below(w, fx->records);
	int rc;

	svc_main_branch(branch, sizeof(branch), fx, svc_pick_branch(w));
	svc_key(key, slot);
	if ((rc = head_tree(&head, &tree, NULL, w->db, branch)) == 0)
		rc = prolly_get(&w->buf, w->db, &tree, key, sizeof(key));
	svc_timed_end(r);
	if (rc) {
		svc_fail(r, rc, branch);
		return;
	}
	r->checked = 1;
	if (svc_value_check(w->buf.ptr, w->buf.size, fx->value_bytes, slot, NULL))
		svc_invalid(r, "point_read on %s: malformed value", branch);
}

typedef struct many_ctx {
	const svc_fixture *fx;
	const uint64_t *slots;
	size_t bad, seen;
} many_ctx;

static int on_value(void *payload, size_t index, const void *value, size_t vlen)
{
	many_ctx *m = payload;
	m->seen++;
	if (svc_value_check(value, vlen, m->fx->value_bytes, m->slots[index], NULL))
		m->bad++;
	return 0;
}

static void op_multi_read(svc_worker *w, svc_result *r)
{
	const svc_fixture *fx = w->fx;
	uint32_t n = fx->cfg->multi_read_keys;
	uint64_t slots[256], *sl = slots;
	char branch[64];
	prolly_id head, tree;
	int rc;

	if (n > 256 && !(sl = malloc(n * sizeof(*sl)))) {
		svc_timed_end(r);
		svc_fail(r, PROLLY_ENOMEM, "multi_read");
		return;
	}
	svc_main_branch(branch, sizeof(branch), fx, svc_pick_branch(w));
	for (uint32_t i = 0; i < n; i++) {
		sl[i] = svc_below(w, fx->records);
		svc_key(w->keys + (size_t)i * SVC_KEY_LEN, sl[i]);
		w->slices[i].data = w->keys + (size_t)i * SVC_KEY_LEN;
		w->slices[i].size = SVC_KEY_LEN;
	}
	many_ctx m = {fx, sl, 0, 0};
	if ((rc = head_tree(&head, &tree, NULL, w->db, branch)) == 0)
		rc = prolly_get_many(w->db, &tree, w->slices, n, on_value, &m);
	svc_timed_end(r);
	if (rc) {
		svc_fail(r, rc, branch);
	} else {
		r->checked = 1;
		if (m.bad || m.seen != n)
			svc_invalid(r, "multi_read on %s: a value is missing or malformed", branch);
	}
	if (sl != slots)
		free(sl);
}

/* ------------------------------------------------------------------------------------------ */
/* Commit                                                                                     */
/* ------------------------------------------------------------------------------------------ */

uint32_t svc_commit_edits(svc_worker *w)
{
	const svc_fixture *fx = w->fx;
	uint32_t n = fx->cfg->commit_keys, vb = fx->value_bytes, gen = w->gen++;
	if (gen < SVC_GEN_FIRST_WORKER) { /* wrapped around */
		gen = SVC_GEN_FIRST_WORKER;
		w->gen = gen + 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t slot = svc_below(w, fx->records);
		unsigned char *k = w->keys + (size_t)i * SVC_KEY_LEN, *v = w->vals + (size_t)i * vb;
		svc_key(k, slot);
		svc_value(v, vb, slot, gen);
		w->edits[i].op = PROLLY_PUT;
		w->edits[i].key.data = k;
		w->edits[i].key.size = SVC_KEY_LEN;
		w->edits[i].value.data = v;
		w->edits[i].value.size = vb;
	}
	return gen;
}

static void op_commit(svc_worker *w, svc_result *r)
{
	const svc_fixture *fx = w->fx;
	uint32_t n = fx->cfg->commit_keys, vb = fx->value_bytes;
	uint32_t b = svc_pick_branch(w);
	char branch[64], msg[64];
	prolly_id head, root, cid;
	prolly_commit *hc = NULL;
	prolly_txn *txn = NULL;
	int have_head = 0, rc = 0;

	svc_main_branch(branch, sizeof(branch), fx, b);
	snprintf(msg, sizeof(msg), "service w%u op %llu", w->index, (unsigned long long)w->seq);
	svc_commit_edits(w);
	for (uint32_t attempt = 0;; attempt++) {
		prolly_ref_update conf;
		r->cas_attempts++;
		/* The head, its commit and the tree's root in one store call (prolly_branch_commit);
		 * after a lost race, the winning head the failed write reported, and its commit. */
		if (!have_head) {
			if ((rc = prolly_branch_commit(&hc, w->db, branch)))
				break;
			head = hc->id;
		} else if ((rc = prolly_commit_read(&hc, w->db, &head)))
			break;
		if ((rc = prolly_txn_begin(&txn, w->db)) ||
		    (rc = prolly_edit_tree(&root, txn, &hc->tree, w->edits, n)) ||
		    (rc = prolly_commit_create(&cid, txn, &root, &head, 1, next_time_us(hc->time_us),
		                               msg)) ||
		    (rc = prolly_txn_move_branch(txn, branch, &head, &cid)))
			break;
		memset(&conf, 0, sizeof(conf));
		rc = prolly_txn_commit(txn, &conf, 1);
		prolly_commit_free(hc);
		hc = NULL;
		if (rc != PROLLY_ECONFLICT)
			break; /* the txn is kept until the check: its new nodes are in the cache */
		prolly_txn_free(txn);
		txn = NULL;
		r->conflicts++;
		if (attempt >= fx->cfg->cas_retries)
			break;
		r->retries++;
		/* Start again from the head that won, as the failed write reported it. */
		have_head = conf.conflict && conf.current_exists;
		if (have_head)
			head = conf.current;
	}
	prolly_commit_free(hc);
	svc_timed_end(r);
	if (rc) {
		svc_fail(r, rc, branch);
		goto cleanup;
	}
	svc_ring_push(&fx->rings[b], &root);

	/* Check: the tree still holds every record, and the last edit landed (its nodes were just
	 * made, so this normally reads nothing from the store); the branch holds the commit. */
	uint64_t count = 0;
	r->checked = 1;
	if (prolly_count(&count, w->db, &root) || count != fx->records) {
		svc_invalid(r, "commit on %s: the new tree does not hold every record", branch);
		goto cleanup;
	}
	/* The last edit of a key wins: check the last one. */
	const prolly_edit *e = &w->edits[n - 1];
	if (prolly_get(&w->buf, w->db, &root, e->key.data, e->key.size) || w->buf.size != vb ||
	    memcmp(w->buf.ptr, e->value.data, vb) != 0)
		svc_invalid(r, "commit on %s: an edit is missing from the new tree", branch);
	else
		svc_check_published(w, r, &cid, branch);
cleanup:
	prolly_txn_free(txn);
}

void svc_check_published(svc_worker *w, svc_result *r, const prolly_id *commit, const char *branch)
{
	prolly_id head, base;
	r->checked = 1;
	if (prolly_branch_head(&head, w->db, branch) ||
	    (!prolly_id_equal(&head, commit) &&
	     (prolly_merge_base(&base, w->db, &head, commit) || !prolly_id_equal(&base, commit))))
		svc_invalid(r, "commit on %s: the branch does not hold the new commit", branch);
}

/* ------------------------------------------------------------------------------------------ */
/* Diff                                                                                       */
/* ------------------------------------------------------------------------------------------ */

typedef struct diff_ctx {
	const svc_fixture *fx;
	uint64_t entries, bad;
} diff_ctx;

static int on_diff(void *payload, const prolly_diff_entry *e)
{
	diff_ctx *d = payload;
	uint64_t slot;
	d->entries++;
	/* Workers only update existing keys: every difference is a change of a key in the space. */
	if (e->kind != PROLLY_DIFF_CHANGED ||
	    svc_key_parse(e->key.data, e->key.size, d->fx->records, &slot) ||
	    svc_value_check(e->old_value.data, e->old_value.size, d->fx->value_bytes, slot, NULL) ||
	    svc_value_check(e->new_value.data, e->new_value.size, d->fx->value_bytes, slot, NULL))
		d->bad++;
	return 0;
}

/* The changes of a diff as records key, new value (SVC_KEY_LEN + value_bytes bytes each). */
typedef struct redo_ctx {
	bench_buf b;
	uint32_t vb;
	uint64_t n;
	int odd; /* an entry that is not a change of the right sizes */
} redo_ctx;

static int on_redo(void *payload, const prolly_diff_entry *e)
{
	redo_ctx *x = payload;
	if (e->kind != PROLLY_DIFF_CHANGED || e->key.size != SVC_KEY_LEN ||
	    e->new_value.size != x->vb) {
		x->odd = 1;
		return 0;
	}
	x->n++;
	bench_buf_put(&x->b, e->key.data, SVC_KEY_LEN);
	return bench_buf_put(&x->b, e->new_value.data, x->vb) ? PROLLY_ENOMEM : 0;
}

int svc_changes_make(svc_worker *w, const prolly_id *old, const prolly_id *tree,
                     const prolly_edit *ed, size_t n)
{
	prolly_txn *txn = NULL;
	prolly_id got;
	int rc;
	/* Never committed: the edited tree's nodes stay in memory. */
	if ((rc = prolly_txn_begin(&txn, w->db)) == 0 &&
	    (rc = prolly_edit_tree(&got, txn, old, ed, n)) == 0 && !prolly_id_equal(&got, tree))
		rc = 1;
	prolly_txn_free(txn);
	return rc;
}

void svc_check_diff(svc_worker *w, svc_result *r, const prolly_id *old, const prolly_id *tree,
                    uint64_t entries, const char *branch)
{
	redo_ctx x = {{0}, w->fx->value_bytes, 0, 0};
	size_t rec = SVC_KEY_LEN + (size_t)x.vb;
	prolly_edit *ed = NULL;

	r->checked = 1;
	if (prolly_diff(w->db, old, tree, NULL, on_redo, &x) || x.odd ||
	    !(ed = calloc(x.n + 1, sizeof(*ed)))) {
		svc_invalid(r, "diff on %s: the diff cannot be read again as changes", branch);
		goto cleanup;
	}
	for (uint64_t i = 0; i < x.n; i++) {
		const unsigned char *p = (const unsigned char *)x.b.p + i * rec;
		ed[i].op = PROLLY_PUT;
		ed[i].key = (prolly_slice){p, SVC_KEY_LEN};
		ed[i].value = (prolly_slice){p + SVC_KEY_LEN, x.vb};
	}
	if (svc_changes_make(w, old, tree, ed, (size_t)x.n) || x.n != entries)
		svc_invalid(r, "diff on %s: the diff's changes do not turn the old tree into the new one",
		            branch);
cleanup:
	free(ed);
	bench_buf_free(&x.b);
}

static void op_diff(svc_worker *w, svc_result *r)
{
	const svc_fixture *fx = w->fx;
	uint32_t b = svc_pick_branch(w);
	char branch[64];
	prolly_id head, tree, old;
	diff_ctx d = {fx, 0, 0};
	int rc;

	svc_main_branch(branch, sizeof(branch), fx, b);
	if (svc_ring_pick(&fx->rings[b], w, &old))
		old = fx->base_tree;
	if ((rc = head_tree(&head, &tree, NULL, w->db, branch)) == 0)
		rc = prolly_diff(w->db, &old, &tree, NULL, on_diff, &d);
	svc_timed_end(r);
	r->entries = d.entries;
	if (rc) {
		svc_fail(r, rc, branch);
		return;
	}
	r->checked = 1;
	if (d.bad)
		svc_invalid(r, "diff on %s: an entry is not a well-formed change", branch);
	else
		svc_check_diff(w, r, &old, &tree, d.entries, branch);
}

/* ------------------------------------------------------------------------------------------ */
/* Merge                                                                                      */
/* ------------------------------------------------------------------------------------------ */

typedef struct sides_ctx {
	size_t prefix_len;
	prolly_id head[2];
	int have[2];
} sides_ctx;

static int on_side(void *payload, const char *name, const prolly_id *value)
{
	sides_ctx *s = payload;
	const char *rest = name + s->prefix_len; /* "a" or "b" */
	if (rest[0] >= 'a' && rest[0] <= 'b' && rest[1] == '\0') {
		s->head[rest[0] - 'a'] = *value;
		s->have[rest[0] - 'a'] = 1;
	}
	return 0;
}

/* Checks a merged tree: every record, side-b's changes applied, each side's first key. */
void svc_check_merge(svc_worker *w, svc_result *r, uint32_t t, const prolly_id *root,
                     const prolly_merge_stats *ms, const char *branch)
{
	const svc_fixture *fx = w->fx;
	unsigned char key[SVC_KEY_LEN];
	uint64_t count = 0;
	uint32_t gen;

	r->checked = 1;
	if (prolly_count(&count, w->db, root) || count != fx->records) {
		svc_invalid(r, "merge into %s: the merged tree does not hold every record", branch);
		return;
	}
	if (ms->applied != fx->side_keys || ms->conflicts) {
		svc_invalid(r, "merge into %s: not every change of side-b was applied", branch);
		return;
	}
	if (!prolly_id_equal(root, &fx->merged_tree[t])) {
		svc_invalid(r, "merge into %s: the merged tree is not side-a with side-b's changes",
		            branch);
		return;
	}
	for (int side = 0; side < 2 && fx->side_keys; side++) {
		uint64_t slot = fx->side_slots[((size_t)t * 2 + (size_t)side) * fx->side_keys];
		svc_key(key, slot);
		if (prolly_get(&w->buf, w->db, root, key, sizeof(key)) ||
		    svc_value_check(w->buf.ptr, w->buf.size, fx->value_bytes, slot, &gen) ||
		    gen != (side ? SVC_GEN_SIDE_B : SVC_GEN_SIDE_A)) {
			svc_invalid(r, "merge into %s: a side's change is missing from the merged tree",
			            branch);
			return;
		}
	}
}

static void op_merge(svc_worker *w, svc_result *r)
{
	const svc_fixture *fx = w->fx;
	uint32_t t = (uint32_t)svc_below(w, fx->tenants);
	char prefix[64], branch[96], msg[128];
	prolly_store *st = prolly_db_store(w->db);
	prolly_commit *cs[3] = {NULL, NULL, NULL}; /* side-a (ours), side-b (theirs), base */
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	prolly_merge_stats ms = PROLLY_MERGE_STATS_INIT;
	prolly_id base, root, mc;
	prolly_txn *txn = NULL;
	sides_ctx sc;
	int rc;

	memset(&sc, 0, sizeof(sc));
	mo.resolve = PROLLY_RESOLVE_FAIL;
	snprintf(prefix, sizeof(prefix), "refs/heads/t%u/side-", t);
	snprintf(branch, sizeof(branch), "t%u/merge-c%u-w%u-%llu", t, w->cell_index, w->index,
	         (unsigned long long)w->seq);
	sc.prefix_len = strlen(prefix);

	/* Both heads with one store call. */
	if ((rc = st->list_refs(st, prefix, on_side, &sc)))
		goto done;
	if (!sc.have[0] || !sc.have[1]) {
		rc = prolly_set_error(PROLLY_ENOTFOUND, "a side branch of tenant %u is missing", t);
		goto done;
	}
	if ((rc = prolly_txn_begin(&txn, w->db)) ||
	    (rc = prolly_merge_base(&base, w->db, &sc.head[0], &sc.head[1])) ||
	    (rc = prolly_commit_read(&cs[0], w->db, &sc.head[0])) ||
	    (rc = prolly_commit_read(&cs[1], w->db, &sc.head[1])) ||
	    (rc = prolly_commit_read(&cs[2], w->db, &base)) ||
	    (rc = prolly_merge(&root, &ms, txn, &cs[2]->tree, &cs[0]->tree, &cs[1]->tree, &mo)))
		goto done;
	snprintf(msg, sizeof(msg), "merge 't%u/side-b' into 't%u/side-a'", t, t);
	int64_t tp = cs[0]->time_us > cs[1]->time_us ? cs[0]->time_us : cs[1]->time_us;
	if ((rc = prolly_commit_create(&mc, txn, &root, sc.head, 2, next_time_us(tp), msg)) ||
	    (rc = prolly_txn_move_branch(txn, branch, NULL, &mc)))
		goto done;
	r->cas_attempts = 1;
	rc = prolly_txn_commit(txn, NULL, 0);
done:
	svc_timed_end(r);
	for (int i = 0; i < 3; i++)
		prolly_commit_free(cs[i]);
	r->entries = ms.applied;
	if (rc) {
		if (rc == PROLLY_ECONFLICT)
			r->conflicts = 1;
		svc_fail(r, rc, branch);
	} else {
		svc_check_merge(w, r, t, &root, &ms, branch);
	}
	prolly_txn_free(txn);
}

const svc_op_fn svc_ops[HW_N_SERVICE_OPS] = {op_point_read, op_multi_read, op_commit, op_diff,
                                             op_merge};
