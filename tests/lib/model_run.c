/*
 * model_run.c - the model tests' runs (model_run.h): setup, the generators of edits, the steps
 * but merges (model_merge.c), and the run of random steps with the checks (model_check.c) after
 * each.
 */
#include "model_run.h"

#include "store.h" /* bench/lib: bench_store_open_local */
#include "store/pg.h"

#include <stdlib.h>
#include <string.h>

unsigned char *mr_own(mr_run *r, const void *p, size_t n)
{
	if (r->n_owned == r->cap_owned) {
		r->cap_owned = r->cap_owned ? r->cap_owned * 2 : 256;
		r->owned = realloc(r->owned, sizeof(*r->owned) * r->cap_owned);
		if (!r->owned)
			abort();
	}
	unsigned char *d = malloc(n ? n : 1);
	if (!d)
		abort();
	if (n)
		memcpy(d, p, n);
	r->owned[r->n_owned++] = d;
	return d;
}

void mr_free_owned(mr_run *r)
{
	for (size_t i = 0; i < r->n_owned; i++)
		free(r->owned[i]);
	r->n_owned = 0;
}

/* ---- setup --------------------------------------------------------------------------------- */

static int open_db(mr_run *r)
{
	prolly_store *st = NULL;
	int rc;
	if (r->kind == MR_LMDB) {
		rc = bench_store_open_local(&st, r->dir, r->node_size);
	} else if (r->kind == MR_PG) {
		const char *url = getenv("PROLLY_PG_URL");
		if (!url) {
			MR_FAILF(r, "PROLLY_PG_URL is not set");
			return -1;
		}
		r->pgo.schema = r->schema;
		rc = prolly_store_pg_open(&st, url, &r->pgo);
	} else if ((rc = bench_store_open_local(&st, NULL, r->node_size)) == 0) {
		/* The memory store dressed as a server store, so that the edits' read probes (taken
		 * only with PROLLY_STORE_REMOTE) are checked against the model too; the LMDB runs
		 * check the edits without them. tm_tap_new closes st if it fails. */
		tm_tap *tap;
		if ((rc = tm_tap_new(&tap, st)) == 0) {
			tap->tp.base.flags = PROLLY_STORE_REMOTE;
			st = &tap->tp.base;
		}
	}
	if (rc) {
		MR_FAILF(r, "opening the store: %d (%s)", rc, prolly_last_error());
		return rc;
	}
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.cache_bytes = r->cache_bytes;
	rc = prolly_db_new(&r->db, st, &o);
	if (rc)
		MR_FAILF(r, "prolly_db_new: %d (%s)", rc, prolly_last_error());
	return rc;
}

/* pg (MR_PG only, may be NULL): batch_items, read_chunk and pool_size for the store. */
int mr_init(mr_run *r, const char *name, uint64_t base_seed, uint64_t salt, int kind,
            size_t cache_bytes, const prolly_pg_options *pg)
{
	memset(r, 0, sizeof(*r));
	r->name = name;
	r->base_seed = base_seed;
	r->prog = "the test program";
	r->seed = base_seed ^ salt;
	tm_rng_seed(&r->rng, r->seed);
	r->kind = kind;
	r->cache_bytes = cache_bytes;
	/* The node size, from the seed: each run of a program, and each seed of a sweep, may make
	 * trees of any size (PostgreSQL runs keep the caller's options). */
	static const unsigned sizes[] = {0, 1024, 2048, 8192};
	r->node_size = kind == MR_PG ? 0 : sizes[r->seed % 4];
	prolly_pg_options_init(&r->pgo, PROLLY_PG_OPTIONS_VERSION);
	if (pg)
		r->pgo = *pg;
	if (kind == MR_PG)
		tm_pg_schema_name(r->schema, "model");
	tm_model_init(&r->m);
	for (int i = 0; i < MR_MAXV; i++)
		tm_model_init(&r->v[i].m);
	r->vbuf = malloc(TM_VAL_BIG);
	prolly_id_empty_tree(&r->root);
	if (kind == MR_LMDB && !(r->dir = tm_tmpdir("model"))) {
		MR_FAILF(r, "no temp dir");
		return -1;
	}
	return open_db(r);
}

void mr_dispose(mr_run *r)
{
	prolly_close(r->db);
	r->db = NULL;
	if (r->dir) {
		tm_rmtree(r->dir);
		free(r->dir);
	}
	if (r->schema[0] && tm_pg_schema_drop(r->schema) != 0)
		MR_FAILF(r, "could not drop schema %s", r->schema);
	tm_model_dispose(&r->m);
	for (int i = 0; i < MR_MAXV; i++)
		tm_model_dispose(&r->v[i].m);
	free(r->vbuf);
	mr_free_owned(r);
	free(r->owned);
}

/* ---- generators ---------------------------------------------------------------------------- */

/* A key for a new record: random binary, or a key24 at a random or appending position. */
size_t mr_new_key(mr_run *r, unsigned char *out)
{
	if (!r->key24)
		return tm_gen_key(&r->rng, out);
	uint64_t i = tm_rng_chance(&r->rng, 1, 3) ? r->append_next++ : tm_rng_below(&r->rng, 1u << 24);
	tm_key24(out, i);
	return TM_KEY24;
}

void mr_add_edit(mr_run *r, prolly_edit *e, prolly_op op, const void *k, size_t klen)
{
	e->op = op;
	e->key.data = mr_own(r, k, klen);
	e->key.size = klen;
	if (op == PROLLY_PUT) {
		size_t vlen = tm_gen_value(&r->rng, r->vbuf, r->big_den);
		e->value.data = mr_own(r, r->vbuf, vlen);
		e->value.size = vlen;
	} else {
		e->value.data = NULL;
		e->value.size = 0;
	}
}

/* A random batch against model m: n edits into *out (malloc'd). */
size_t mr_gen_batch(mr_run *r, const tm_model *m, prolly_edit **out)
{
	size_t n;
	uint64_t shape = tm_rng_below(&r->rng, 20);
	if (shape < 4)
		n = 1;
	else if (shape < 16)
		n = (size_t)tm_rng_range(&r->rng, 2, 64);
	else if (shape < 19)
		n = (size_t)tm_rng_range(&r->rng, 65, 400);
	else
		n = (size_t)tm_rng_range(&r->rng, 400, 1500);
	if (r->max_batch && n > r->max_batch)
		n = 1 + (size_t)tm_rng_below(&r->rng, r->max_batch);
	prolly_edit *e = calloc(n, sizeof(*e));
	/* Grow when small, shrink when big. */
	unsigned put_new = m->n < r->target ? 50 : m->n > r->target * 3 / 2 ? 10 : 30;
	unsigned char kb[TM_KEY_MAX];
	for (size_t i = 0; i < n; i++) {
		uint64_t what = tm_rng_below(&r->rng, 100);
		if (what < put_new || (m->n == 0 && what < 80)) {
			size_t kl = mr_new_key(r, kb);
			mr_add_edit(r, &e[i], PROLLY_PUT, kb, kl);
		} else if (what < 80 && m->n) {
			const tm_rec *rec = &m->r[tm_rng_below(&r->rng, m->n)];
			mr_add_edit(r, &e[i], what < 55 ? PROLLY_PUT : PROLLY_DEL, rec->k, rec->klen);
		} else if (what < 88 || i == 0) {
			size_t kl = mr_new_key(r, kb);
			mr_add_edit(r, &e[i], PROLLY_DEL, kb, kl);
		} else {
			/* Same key as an earlier edit of this batch: the later one must win. */
			const prolly_edit *p = &e[tm_rng_below(&r->rng, i)];
			mr_add_edit(r, &e[i], tm_rng_chance(&r->rng, 1, 2) ? PROLLY_PUT : PROLLY_DEL,
			            p->key.data, p->key.size);
		}
	}
	*out = e;
	return n;
}

/* ---- steps --------------------------------------------------------------------------------- */

/* The model of a new kept version: a free slot, or a random one replaced. */
static tm_model *version_slot(mr_run *r, const prolly_id *id)
{
	int slot = -1;
	for (int i = 0; i < MR_MAXV; i++)
		if (!r->v[i].used) {
			slot = i;
			break;
		}
	if (slot < 0)
		slot = (int)tm_rng_below(&r->rng, MR_MAXV);
	r->v[slot].id = *id;
	r->v[slot].used = 1;
	return &r->v[slot].m;
}

void mr_keep_version(mr_run *r, const prolly_id *id, const tm_model *m)
{
	tm_model_copy(version_slot(r, id), m);
}

void mr_keep_version_move(mr_run *r, const prolly_id *id, tm_model *m)
{
	tm_model_move(version_slot(r, id), m);
}

static void diff_versions(mr_run *r)
{
	/* Current against a kept version, and two kept versions against each other. */
	int a = (int)tm_rng_below(&r->rng, MR_MAXV), b = (int)tm_rng_below(&r->rng, MR_MAXV);
	if (r->v[a].used) {
		if (tm_rng_chance(&r->rng, 1, 2))
			mr_check_diff(r, &r->v[a].id, &r->v[a].m, &r->root, &r->m);
		else
			mr_check_diff(r, &r->root, &r->m, &r->v[a].id, &r->v[a].m);
	}
	if (!r->failed && r->v[a].used && r->v[b].used)
		mr_check_diff(r, &r->v[a].id, &r->v[a].m, &r->v[b].id, &r->v[b].m);
	if (!r->failed && tm_rng_chance(&r->rng, 1, 8)) {
		tm_model empty;
		prolly_id e;
		tm_model_init(&empty);
		prolly_id_empty_tree(&e);
		mr_check_diff(r, &e, &empty, &r->root, &r->m);
		if (!r->failed)
			mr_check_diff(r, &r->root, &r->m, &r->root, &r->m);
	}
}

static void step_edit(mr_run *r)
{
	prolly_edit *e = NULL;
	size_t n = mr_gen_batch(r, &r->m, &e);
	int discard = tm_rng_chance(&r->rng, 1, 10);
	/* Sometimes edit twice in one txn (reading the first result's unpublished nodes). */
	int twice = tm_rng_chance(&r->rng, 1, 6);
	prolly_txn *txn = NULL;
	prolly_id out;
	/* The edits' model: a copy only when the txn is thrown away (the old tree is checked against
	 * the old model then); otherwise the current model itself, whose old records nothing needs
	 * after this step (a copy of every record per step was a large part of the runs' CPU). */
	tm_model copy, *next = &r->m;
	tm_model_init(&copy);
	if (discard) {
		tm_model_copy(&copy, &r->m);
		next = &copy;
	}
	tm_model_apply(next, e, n);
	MR_RC_OK(r, prolly_txn_begin(&txn, r->db));
	if (!r->failed)
		MR_RC_OK(r, prolly_edit_tree(&out, txn, &r->root, e, n));
	free(e);
	mr_free_owned(r);
	if (!r->failed && twice) {
		prolly_id out2;
		n = mr_gen_batch(r, next, &e);
		tm_model_apply(next, e, n);
		MR_RC_OK(r, prolly_edit_tree(&out2, txn, &out, e, n));
		out = out2;
		free(e);
		mr_free_owned(r);
	}
	if (!r->failed && discard) {
		mr_check_tree_v(r, &out, next, "edit (txn open)", 0);
		mr_check_reads(r, &out, next);
		prolly_txn_free(txn);
		txn = NULL;
		/* The old tree must be intact after throwing the txn away. */
		mr_check_tree(r, &r->root, &r->m, "after discarding a txn");
	} else if (!r->failed) {
		mr_check_tree_v(r, &out, next, "edit (before commit)", 0);
		MR_RC_OK(r, prolly_txn_commit(txn, NULL, 0));
		if (!r->failed)
			mr_check_tree(r, &out, next, "edit");
		r->root = out; /* next is r->m */
	}
	prolly_txn_free(txn);
	tm_model_dispose(&copy);
}

static void step_build(mr_run *r)
{
	/* A fresh random record set (sometimes the current one plus some more). */
	tm_model nm;
	tm_model_init(&nm);
	if (tm_rng_chance(&r->rng, 1, 2))
		tm_model_copy(&nm, &r->m);
	size_t add = (size_t)tm_rng_below(&r->rng, r->target + 1);
	unsigned char kb[TM_KEY_MAX];
	for (size_t i = 0; i < add; i++) {
		size_t kl = mr_new_key(r, kb);
		size_t vl = tm_gen_value(&r->rng, r->vbuf, r->big_den);
		tm_model_put(&nm, kb, kl, r->vbuf, vl);
	}
	prolly_id id;
	MR_RC_OK(r, tm_build_commit(&id, r->db, &nm));
	if (!r->failed) {
		mr_check_tree(r, &id, &nm, "bulk build");
		r->root = id;
		tm_model_move(&r->m, &nm);
	}
	tm_model_dispose(&nm);
}

static void step_delete_range(mr_run *r)
{
	/* Deletes a contiguous run of records (sometimes all of them) in one batch. */
	if (r->m.n == 0)
		return;
	size_t lo = tm_rng_chance(&r->rng, 1, 4) ? 0 : (size_t)tm_rng_below(&r->rng, r->m.n);
	size_t hi = tm_rng_chance(&r->rng, 1, 3) ? r->m.n
	                                         : lo + (size_t)tm_rng_below(&r->rng, r->m.n - lo + 1);
	size_t n = hi - lo;
	prolly_edit *e = calloc(n + 1, sizeof(*e));
	for (size_t i = 0; i < n; i++) {
		e[i].op = PROLLY_DEL;
		e[i].key.data = r->m.r[lo + i].k;
		e[i].key.size = r->m.r[lo + i].klen;
	}
	tm_shuffle(&r->rng, e, n, sizeof(*e));
	prolly_txn *txn = NULL;
	prolly_id out;
	MR_RC_OK(r, prolly_txn_begin(&txn, r->db));
	if (!r->failed)
		MR_RC_OK(r, prolly_edit_tree(&out, txn, &r->root, e, n));
	if (!r->failed)
		MR_RC_OK(r, prolly_txn_commit(txn, NULL, 0));
	prolly_txn_free(txn);
	if (!r->failed) {
		tm_model next;
		tm_model_init(&next);
		tm_model_copy(&next, &r->m);
		tm_model_apply(&next, e, n);
		mr_check_tree(r, &out, &next, "delete range");
		r->root = out;
		tm_model_move(&r->m, &next);
	}
	free(e);
}

static void step_range_delete_lib(mr_run *r)
{
	/* prolly_delete_range over [m[lo], m[hi]) (an open end sometimes, a bound between keys
	 * sometimes): the subtrees inside are dropped unread; the root must still be canonical. */
	unsigned char fb[TM_KEY_MAX + 1], tb[TM_KEY_MAX + 1];
	prolly_slice f = {fb, 0}, t = {tb, 0};
	size_t lo = r->m.n ? (size_t)tm_rng_below(&r->rng, r->m.n) : 0;
	size_t hi = lo + (size_t)tm_rng_below(&r->rng, r->m.n - lo + 1);
	int open_lo = tm_rng_chance(&r->rng, 1, 6), open_hi = tm_rng_chance(&r->rng, 1, 6);
	if (lo < r->m.n) {
		memcpy(fb, r->m.r[lo].k, f.size = r->m.r[lo].klen);
		if (f.size < TM_KEY_MAX && tm_rng_chance(&r->rng, 1, 4))
			fb[f.size++] = 0; /* just after the key: m[lo] stays */
	}
	if (hi < r->m.n)
		memcpy(tb, r->m.r[hi].k, t.size = r->m.r[hi].klen);
	else
		open_hi = 1;
	prolly_txn *txn = NULL;
	prolly_id out;
	const prolly_slice *fp = open_lo ? NULL : &f, *tp = open_hi ? NULL : &t;
	if (fp && tp && memcmp(fb, tb, f.size < t.size ? f.size : t.size) == 0 && f.size > t.size)
		fp = tp; /* an empty range */
	MR_RC_OK(r, prolly_txn_begin(&txn, r->db));
	if (!r->failed)
		MR_RC_OK(r, prolly_delete_range(&out, txn, &r->root, fp, tp));
	if (!r->failed)
		MR_RC_OK(r, prolly_txn_commit(txn, NULL, 0));
	prolly_txn_free(txn);
	if (r->failed)
		return;
	size_t a = fp ? tm_model_lower_bound(&r->m, fp->data, fp->size) : 0;
	size_t b = tp ? tm_model_lower_bound(&r->m, tp->data, tp->size) : r->m.n;
	tm_model_cut(&r->m, a, b < a ? a : b); /* from > to: an empty range */
	mr_check_tree(r, &out, &r->m, "prolly_delete_range");
	r->root = out;
}

static void step_reopen(mr_run *r)
{
	/* LMDB, PostgreSQL: everything committed must survive closing and reopening the store. */
	prolly_close(r->db);
	r->db = NULL;
	if (open_db(r))
		return;
	mr_check_tree(r, &r->root, &r->m, "after reopen");
	for (int i = 0; i < MR_MAXV && !r->failed; i++)
		if (r->v[i].used)
			mr_check_tree(r, &r->v[i].id, &r->v[i].m, "kept version after reopen");
}

static void run_steps(mr_run *r, unsigned steps)
{
	for (r->step = 0; r->step < steps && !r->failed; r->step++) {
		uint64_t w = tm_rng_below(&r->rng, 100);
		if (w < 55)
			step_edit(r), r->n_edits++;
		else if (w < 62)
			step_build(r), r->n_builds++;
		else if (w < 64)
			step_delete_range(r), r->n_edits++;
		else if (w < 67)
			step_range_delete_lib(r), r->n_edits++;
		else if (w < 87)
			mr_step_merge(r);
		else if (w < 89 && r->kind != MR_MEM)
			step_reopen(r), r->n_reopen++;
		else
			step_edit(r), r->n_edits++;
		if (!r->failed && r->kind != MR_MEM && r->step % 16 == 15)
			step_reopen(r), r->n_reopen++;
		if (!r->failed)
			mr_check_reads(r, &r->root, &r->m);
		if (!r->failed)
			diff_versions(r);
		if (!r->failed && tm_rng_chance(&r->rng, 1, 3))
			mr_keep_version(r, &r->root, &r->m);
		if (!r->failed && r->cache_bytes && tm_rng_chance(&r->rng, 1, 20))
			prolly_db_cache_clear(r->db);
	}
	printf("# %s: %u steps: %u edits, %u builds, %u merges (%u conflicts), %u diffs (%u entries), "
	       "%u cursors, %u reopens; up to %zu records, height %u, nodes of %u bytes\n",
	       r->name, r->step, r->n_edits, r->n_builds, r->n_merges, r->n_conflicts, r->n_diffs,
	       r->n_diff_entries, r->n_cursors, r->n_reopen, r->max_n, r->max_height,
	       prolly_db_node_size(r->db));
	if (r->failed)
		fprintf(stderr, "  re-run: PROLLY_TEST_SEED=0x%llx %s %s\n",
		        (unsigned long long)r->base_seed, r->prog, r->name);
}

int mr_model_run(const char *prog, const char *name, uint64_t base_seed, uint64_t salt, int kind,
                 size_t cache_bytes, int key24, unsigned steps, size_t target, unsigned big_den,
                 const prolly_pg_options *pg)
{
	mr_run r;
	int failed;
	if (mr_init(&r, name, base_seed, salt, kind, cache_bytes, pg) == 0) {
		r.prog = prog;
		r.key24 = key24;
		r.target = target * tm_scale();
		r.big_den = big_den;
		if (target < 100)
			r.max_batch = 2 * target + 2;
		prolly_stats s0 = PROLLY_STATS_INIT, s1 = PROLLY_STATS_INIT;
		prolly_pg_stats p0 = PROLLY_PG_STATS_INIT, p1 = PROLLY_PG_STATS_INIT;
		prolly_thread_stats(&s0);
		prolly_store_pg_thread_stats(&p0);
		run_steps(&r, steps * tm_scale());
		prolly_thread_stats(&s1);
		prolly_store_pg_thread_stats(&p1);
		if (kind == MR_PG)
			printf("# %s: %llu store round trips, %llu SQL statements\n", name,
			       (unsigned long long)(s1.store_round_trips - s0.store_round_trips),
			       (unsigned long long)(p1.statements - p0.statements));
	}
	mr_dispose(&r);
	failed = r.failed;
	return failed;
}
