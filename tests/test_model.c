/*
 * test_model.c - seeded randomized tests of every tree operation against a reference model
 * (tests/lib/model.c), on the memory store (default cache, no cache, a tiny cache) and on LMDB.
 * tests/test_pg_model.c compiles this file again with TEST_MODEL_PG defined: the same runs on
 * the PostgreSQL store, and only those (see the end of this file).
 *
 * Each run is a random sequence of steps: batch edits (puts, overwrites, deletes of present and
 * absent keys, duplicate keys in one batch where the last edit wins), bulk builds, three-way
 * merges of two branches edited from a common base, edits inside a txn that is then discarded,
 * and (LMDB, PostgreSQL) closing and reopening the store. After every step the tree is compared with the
 * model: every record (cursor scan), count, a verifying stats walk, and the root id must equal
 * the id of a tree bulk-built from the model's records (history independence). Random reads
 * follow: get, get_many (request order, missing and duplicate keys), rank, select, cursors
 * (bounds, prefix, reverse, early stop), and diffs between versions kept along the way.
 *
 * Re-run a failure with the seed it prints: PROLLY_TEST_SEED=0x... build/tests/test_model [NAME].
 * PROLLY_TEST_SCALE=N multiplies the number of steps and the tree sizes.
 */
#include "lib/model.h"
#include "ptest.h"

#include <stdlib.h>
#include <string.h>

#define MAXV 8 /* versions kept for diffs */

#ifdef TEST_MODEL_PG
#define PROG "build/tests/test_pg_model"
#else
#define PROG "build/tests/test_model"
#endif

/* Store kinds. */
enum { K_MEM = 0, K_LMDB = 1, K_PG = 2 };

typedef struct version {
	prolly_id id;
	tm_model m;
	int used;
} version;

typedef struct run {
	const char *name;
	uint64_t seed;
	unsigned step;
	tm_rng rng;
	prolly_db *db;
	int kind;              /* K_MEM, K_LMDB, K_PG */
	char *dir;             /* K_LMDB: the environment's directory */
	char schema[64];       /* K_PG: this run's schema on $PROLLY_PG_URL, dropped at the end */
	prolly_pg_options pgo; /* K_PG: batch sizes and pool */
	size_t cache_bytes;
	int key24;            /* keys are tm_key24(i) instead of random binary keys */
	uint64_t append_next; /* for key24 runs: the next key of the appending stream */
	unsigned big_den;     /* 1/big_den of values are big */
	size_t target;        /* tree size the edits hover around */
	size_t max_batch;     /* 0: no cap */
	tm_model m;           /* the current tree's records */
	prolly_id root;
	version v[MAXV];
	unsigned char *vbuf; /* TM_VAL_BIG scratch */
	/* Edits of the current batch own their bytes here. */
	unsigned char **owned;
	size_t n_owned, cap_owned;
	int failed;
	/* What the run covered (printed at the end). */
	size_t max_n;
	unsigned max_height;
	unsigned n_edits, n_builds, n_merges, n_conflicts, n_diffs, n_diff_entries, n_cursors, n_reopen;
} run;

#define FAILF(r, ...)                                                                              \
	do {                                                                                           \
		fprintf(stderr, "  [%s seed=0x%llx step=%u] ", (r)->name, (unsigned long long)(r)->seed,   \
		        (r)->step);                                                                        \
		fprintf(stderr, __VA_ARGS__);                                                              \
		fputc('\n', stderr);                                                                       \
		(r)->failed = 1;                                                                           \
		pt_failed_now = 1;                                                                         \
	} while (0)

#define RC_OK(r, expr)                                                                             \
	do {                                                                                           \
		int rc_ = (expr);                                                                          \
		if (rc_ != 0) {                                                                            \
			FAILF(r, "%s:%d: %s returned %d (%s)", __FILE__, __LINE__, #expr, rc_,                 \
			      prolly_last_error());                                                            \
		}                                                                                          \
	} while (0)

static unsigned char *own(run *r, const void *p, size_t n)
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

static void free_owned(run *r)
{
	for (size_t i = 0; i < r->n_owned; i++)
		free(r->owned[i]);
	r->n_owned = 0;
}

/* ---- setup --------------------------------------------------------------------------------- */

static int open_db(run *r)
{
	prolly_store *st = NULL;
	int rc;
	if (r->kind == K_LMDB) {
		rc = prolly_store_lmdb_open(&st, r->dir, 0);
	} else if (r->kind == K_PG) {
		const char *url = getenv("PROLLY_PG_URL");
		if (!url) {
			FAILF(r, "PROLLY_PG_URL is not set");
			return -1;
		}
		r->pgo.schema = r->schema;
		rc = prolly_store_pg_open(&st, url, &r->pgo);
	} else if ((rc = prolly_store_mem_new(&st)) == 0) {
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
		FAILF(r, "opening the store: %d (%s)", rc, prolly_last_error());
		return rc;
	}
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.cache_bytes = r->cache_bytes;
	rc = prolly_db_new(&r->db, st, &o);
	if (rc)
		FAILF(r, "prolly_db_new: %d (%s)", rc, prolly_last_error());
	return rc;
}

/* pg (K_PG only, may be NULL): batch_items, read_chunk and pool_size for the store. */
static int run_init(run *r, const char *name, uint64_t salt, int kind, size_t cache_bytes,
                    const prolly_pg_options *pg)
{
	memset(r, 0, sizeof(*r));
	r->name = name;
	r->seed = PT_SEED() ^ salt;
	tm_rng_seed(&r->rng, r->seed);
	r->kind = kind;
	r->cache_bytes = cache_bytes;
	prolly_pg_options_init(&r->pgo, PROLLY_PG_OPTIONS_VERSION);
	if (pg)
		r->pgo = *pg;
	if (kind == K_PG)
		tm_pg_schema_name(r->schema, "model");
	tm_model_init(&r->m);
	for (int i = 0; i < MAXV; i++)
		tm_model_init(&r->v[i].m);
	r->vbuf = malloc(TM_VAL_BIG);
	prolly_id_empty_tree(&r->root);
	if (kind == K_LMDB && !(r->dir = tm_tmpdir("model"))) {
		FAILF(r, "no temp dir");
		return -1;
	}
	return open_db(r);
}

static void run_dispose(run *r)
{
	prolly_close(r->db);
	r->db = NULL;
	if (r->dir) {
		tm_rmtree(r->dir);
		free(r->dir);
	}
	if (r->schema[0] && tm_pg_schema_drop(r->schema) != 0)
		FAILF(r, "could not drop schema %s", r->schema);
	tm_model_dispose(&r->m);
	for (int i = 0; i < MAXV; i++)
		tm_model_dispose(&r->v[i].m);
	free(r->vbuf);
	free_owned(r);
	free(r->owned);
}

/* ---- generators ---------------------------------------------------------------------------- */

/* A key for a new record: random binary, or a key24 at a random or appending position. */
static size_t new_key(run *r, unsigned char *out)
{
	if (!r->key24)
		return tm_gen_key(&r->rng, out);
	uint64_t i = tm_rng_chance(&r->rng, 1, 3) ? r->append_next++ : tm_rng_below(&r->rng, 1u << 24);
	tm_key24(out, i);
	return TM_KEY24;
}

static void add_edit(run *r, prolly_edit *e, prolly_op op, const void *k, size_t klen)
{
	e->op = op;
	e->key.data = own(r, k, klen);
	e->key.size = klen;
	if (op == PROLLY_PUT) {
		size_t vlen = tm_gen_value(&r->rng, r->vbuf, r->big_den);
		e->value.data = own(r, r->vbuf, vlen);
		e->value.size = vlen;
	} else {
		e->value.data = NULL;
		e->value.size = 0;
	}
}

/* A random batch against model m: n edits into *out (malloc'd). */
static size_t gen_batch(run *r, const tm_model *m, prolly_edit **out)
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
			size_t kl = new_key(r, kb);
			add_edit(r, &e[i], PROLLY_PUT, kb, kl);
		} else if (what < 80 && m->n) {
			const tm_rec *rec = &m->r[tm_rng_below(&r->rng, m->n)];
			add_edit(r, &e[i], what < 55 ? PROLLY_PUT : PROLLY_DEL, rec->k, rec->klen);
		} else if (what < 88 || i == 0) {
			size_t kl = new_key(r, kb);
			add_edit(r, &e[i], PROLLY_DEL, kb, kl);
		} else {
			/* Same key as an earlier edit of this batch: the later one must win. */
			const prolly_edit *p = &e[tm_rng_below(&r->rng, i)];
			add_edit(r, &e[i], tm_rng_chance(&r->rng, 1, 2) ? PROLLY_PUT : PROLLY_DEL, p->key.data,
			         p->key.size);
		}
	}
	*out = e;
	return n;
}

/* ---- checks -------------------------------------------------------------------------------- */

/* The full comparison of root with m. verify: re-hash every node in the stats walk (only for
 * committed trees; see model_txn_tree_stats_verify). */
static void check_tree_v(run *r, const prolly_id *root, const tm_model *m, const char *what,
                         int verify)
{
	if (tm_tree_check(r->db, root, m, what) != 0)
		FAILF(r, "%s: tree %s differs from the model (%zu records)", what, tm_hex(root), m->n);
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	int rc = prolly_tree_stats_get(&ts, r->db, root, verify);
	if (m->n > r->max_n)
		r->max_n = m->n;
	if (rc)
		FAILF(r, "%s: stats verify: %d (%s)", what, rc, prolly_last_error());
	else if (ts.height > r->max_height)
		r->max_height = ts.height;
	if (!rc && (ts.records != m->n || ts.height < 1 || ts.nodes < ts.leaves || ts.leaves < 1 ||
	            (ts.height == 1) != (ts.nodes == 1)))
		FAILF(r, "%s: stats: records %llu (model %zu) height %u nodes %llu leaves %llu", what,
		      (unsigned long long)ts.records, m->n, ts.height, (unsigned long long)ts.nodes,
		      (unsigned long long)ts.leaves);
	/* History independence: the same records give the same root whatever the history. */
	prolly_txn *txn = NULL;
	prolly_id built;
	RC_OK(r, prolly_txn_begin(&txn, r->db));
	if (txn) {
		rc = tm_build(&built, txn, m);
		if (rc)
			FAILF(r, "%s: bulk build of the model: %d (%s)", what, rc, prolly_last_error());
		else if (!prolly_id_equal(&built, root))
			FAILF(r, "%s: history independence: tree %s, bulk build of the same %zu records %s",
			      what, tm_hex(root), m->n, tm_hex(&built));
		prolly_txn_free(txn);
	}
	if (m->n == 0) {
		prolly_id e;
		prolly_id_empty_tree(&e);
		if (!prolly_id_equal(&e, root))
			FAILF(r, "%s: empty tree id %s, want %s", what, tm_hex(root), tm_hex(&e));
	}
}

static void check_tree(run *r, const prolly_id *root, const tm_model *m, const char *what)
{
	check_tree_v(r, root, m, what, 1);
}

static size_t probe_key(run *r, const tm_model *m, unsigned char *kb)
{
	/* A present key, an absent one, or an absent neighbour of a present one. */
	uint64_t w = tm_rng_below(&r->rng, 10);
	if (m->n && w < 5) {
		const tm_rec *rec = &m->r[tm_rng_below(&r->rng, m->n)];
		memcpy(kb, rec->k, rec->klen);
		return rec->klen;
	}
	if (m->n && w < 8) {
		const tm_rec *rec = &m->r[tm_rng_below(&r->rng, m->n)];
		size_t kl = rec->klen;
		memcpy(kb, rec->k, kl);
		if (w == 5 && kl < TM_KEY_MAX)
			kb[kl++] = 0; /* just after */
		else if (w == 6 && kl > 1)
			kl--; /* a prefix: just before (or equal to another key) */
		else
			kb[kl - 1] ^= 1;
		return kl;
	}
	return new_key(r, kb);
}

static void check_gets(run *r, const prolly_id *root, const tm_model *m)
{
	prolly_buf out = PROLLY_BUF_INIT;
	unsigned char kb[TM_KEY_MAX + 1];
	for (int i = 0; i < 16 && !r->failed; i++) {
		size_t kl = probe_key(r, m, kb);
		const tm_rec *rec = tm_model_get(m, kb, kl);
		int rc = prolly_get(&out, r->db, root, kb, kl);
		if (rec && rc != 0)
			FAILF(r, "get %s: %d (%s), model has it", tm_bhex(kb, kl), rc, prolly_last_error());
		else if (!rec && rc != PROLLY_ENOTFOUND)
			FAILF(r, "get %s: %d, want ENOTFOUND", tm_bhex(kb, kl), rc);
		else if (rec && (out.size != rec->vlen || (out.size && memcmp(out.ptr, rec->v, out.size))))
			FAILF(r, "get %s: value differs (%zu vs model %zu bytes)", tm_bhex(kb, kl), out.size,
			      rec->vlen);
	}
	prolly_buf_dispose(&out);
}

typedef struct gm_ctx {
	run *r;
	const tm_model *m;
	const prolly_slice *keys;
	size_t next;
	size_t stop_at; /* return 99 at this index (SIZE_MAX: never) */
} gm_ctx;

static int gm_cb(void *payload, size_t index, const void *value, size_t vlen)
{
	gm_ctx *g = payload;
	run *r = g->r;
	if (index != g->next) {
		FAILF(r, "get_many: callback index %zu, want %zu (request order)", index, g->next);
		return 1;
	}
	g->next++;
	const tm_rec *rec = tm_model_get(g->m, g->keys[index].data, g->keys[index].size);
	if (!rec && value)
		FAILF(r, "get_many: key %zu %s absent in model, got a value", index,
		      tm_bhex(g->keys[index].data, g->keys[index].size));
	else if (rec && !value)
		FAILF(r, "get_many: key %zu %s present in model, reported absent", index,
		      tm_bhex(g->keys[index].data, g->keys[index].size));
	else if (rec && (vlen != rec->vlen || (vlen && memcmp(value, rec->v, vlen))))
		FAILF(r, "get_many: key %zu value differs", index);
	if (index == g->stop_at)
		return 99;
	return r->failed;
}

static void check_get_many(run *r, const prolly_id *root, const tm_model *m)
{
	size_t n = (size_t)tm_rng_range(&r->rng, 0, 80);
	prolly_slice *keys = calloc(n + 1, sizeof(*keys));
	unsigned char kb[TM_KEY_MAX + 1];
	for (size_t i = 0; i < n; i++) {
		if (i && tm_rng_chance(&r->rng, 1, 8)) {
			keys[i] = keys[tm_rng_below(&r->rng, i)]; /* duplicate */
			continue;
		}
		size_t kl = probe_key(r, m, kb);
		keys[i].data = own(r, kb, kl);
		keys[i].size = kl;
	}
	gm_ctx g = {r, m, keys, 0, SIZE_MAX};
	int stop = n > 2 && tm_rng_chance(&r->rng, 1, 6);
	if (stop)
		g.stop_at = (size_t)tm_rng_below(&r->rng, n);
	int rc = prolly_get_many(r->db, root, keys, n, gm_cb, &g);
	if (!r->failed) {
		if (stop && rc != 99)
			FAILF(r, "get_many stopped at %zu returned %d, want 99", g.stop_at, rc);
		else if (!stop && rc != 0)
			FAILF(r, "get_many: %d (%s)", rc, prolly_last_error());
		else if (!stop && g.next != n)
			FAILF(r, "get_many: %zu callbacks for %zu keys", g.next, n);
		else if (stop && g.next != g.stop_at + 1)
			FAILF(r, "get_many: %zu callbacks, stopped at index %zu", g.next, g.stop_at);
	}
	free(keys);
	free_owned(r);
}

static void check_rank_select(run *r, const prolly_id *root, const tm_model *m)
{
	prolly_buf kbuf = PROLLY_BUF_INIT, vbuf = PROLLY_BUF_INIT;
	unsigned char kb[TM_KEY_MAX + 1];
	for (int i = 0; i < 8 && !r->failed; i++) {
		size_t kl = probe_key(r, m, kb);
		uint64_t rank = 12345;
		int rc = prolly_rank(&rank, r->db, root, kb, kl);
		size_t want = tm_model_lower_bound(m, kb, kl);
		if (rc || rank != want)
			FAILF(r, "rank %s: %d (%s) %llu, want %zu", tm_bhex(kb, kl), rc,
			      rc ? prolly_last_error() : "", (unsigned long long)rank, want);
		uint64_t idx = tm_rng_below(&r->rng, m->n + 2);
		rc = prolly_select(&kbuf, &vbuf, r->db, root, idx);
		if (idx >= m->n) {
			if (rc != PROLLY_ENOTFOUND)
				FAILF(r, "select %llu of %zu: %d, want ENOTFOUND", (unsigned long long)idx, m->n,
				      rc);
		} else {
			const tm_rec *rec = &m->r[idx];
			if (rc)
				FAILF(r, "select %llu: %d (%s)", (unsigned long long)idx, rc, prolly_last_error());
			else if (kbuf.size != rec->klen || memcmp(kbuf.ptr, rec->k, rec->klen) ||
			         vbuf.size != rec->vlen || (rec->vlen && memcmp(vbuf.ptr, rec->v, rec->vlen)))
				FAILF(r, "select %llu: got key %s, want %s", (unsigned long long)idx,
				      tm_bhex(kbuf.ptr, kbuf.size), tm_bhex(rec->k, rec->klen));
			/* Key-only select. */
			rc = prolly_select(&kbuf, NULL, r->db, root, idx);
			if (rc || kbuf.size != rec->klen || memcmp(kbuf.ptr, rec->k, rec->klen))
				FAILF(r, "select %llu (key only): %d", (unsigned long long)idx, rc);
		}
	}
	prolly_buf_dispose(&kbuf);
	prolly_buf_dispose(&vbuf);
}

/* A random range over m: bounds from present or absent keys, flags, a prefix, reverse. */
static void gen_range(run *r, const tm_model *m, prolly_range *rg, int for_diff)
{
	unsigned char kb[TM_KEY_MAX + 1];
	prolly_range_init(rg, PROLLY_RANGE_VERSION);
	if (tm_rng_chance(&r->rng, 2, 3)) {
		size_t kl = probe_key(r, m, kb);
		rg->lo.data = own(r, kb, kl);
		rg->lo.size = kl;
		rg->has_lo = 1;
		rg->lo_exclusive = (int)tm_rng_below(&r->rng, 2);
	}
	if (tm_rng_chance(&r->rng, 2, 3)) {
		size_t kl = probe_key(r, m, kb);
		rg->hi.data = own(r, kb, kl);
		rg->hi.size = kl;
		rg->has_hi = 1;
		rg->hi_inclusive = (int)tm_rng_below(&r->rng, 2);
	}
	if (!for_diff && tm_rng_chance(&r->rng, 1, 4)) {
		size_t kl;
		if (m->n) {
			const tm_rec *rec = &m->r[tm_rng_below(&r->rng, m->n)];
			kl = (size_t)tm_rng_range(&r->rng, 1, rec->klen < 3 ? rec->klen : 3);
			memcpy(kb, rec->k, kl);
		} else {
			kl = 1;
			kb[0] = 'a';
		}
		rg->prefix.data = own(r, kb, kl);
		rg->prefix.size = kl;
	}
	if (!for_diff)
		rg->reverse = (int)tm_rng_below(&r->rng, 2);
}

static void check_cursors(run *r, const prolly_id *root, const tm_model *m)
{
	for (int it = 0; it < 4 && !r->failed; it++) {
		prolly_range rg = PROLLY_RANGE_INIT;
		gen_range(r, m, &rg, 0);
		int whole = it == 0 && tm_rng_chance(&r->rng, 1, 4);
		size_t *idx = NULL;
		size_t want = tm_model_range(m, whole ? NULL : &rg, &idx);
		size_t limit = tm_rng_chance(&r->rng, 1, 3) ? (size_t)tm_rng_below(&r->rng, 20) : SIZE_MAX;
		prolly_cursor *cur = NULL;
		int rc = prolly_cursor_open(&cur, r->db, root, whole ? NULL : &rg);
		if (rc) {
			FAILF(r, "cursor_open: %d (%s)", rc, prolly_last_error());
			free(idx);
			break;
		}
		size_t got = 0;
		prolly_slice k, v;
		r->n_cursors++;
		while (got < limit && (rc = prolly_cursor_next(cur, &k, &v)) == 0) {
			if (got >= want) {
				FAILF(r, "cursor (lo %d hi %d prefix %zu rev %d): extra record %s after %zu",
				      rg.has_lo, rg.has_hi, rg.prefix.size, rg.reverse, tm_bhex(k.data, k.size),
				      want);
				break;
			}
			const tm_rec *rec = &m->r[idx[got]];
			if (k.size != rec->klen || memcmp(k.data, rec->k, k.size) || v.size != rec->vlen ||
			    (v.size && memcmp(v.data, rec->v, v.size))) {
				FAILF(r, "cursor (lo %s%s hi %s%s prefix %s rev %d) record %zu: key %s, want %s",
				      rg.has_lo ? tm_bhex(rg.lo.data, rg.lo.size) : "-",
				      rg.lo_exclusive ? "(x)" : "",
				      rg.has_hi ? tm_bhex(rg.hi.data, rg.hi.size) : "-",
				      rg.hi_inclusive ? "(i)" : "", tm_bhex(rg.prefix.data, rg.prefix.size),
				      rg.reverse, got, tm_bhex(k.data, k.size), tm_bhex(rec->k, rec->klen));
				break;
			}
			got++;
		}
		if (!r->failed && got < limit) {
			if (rc != PROLLY_ITEROVER)
				FAILF(r, "cursor_next: %d (%s)", rc, prolly_last_error());
			else if (got != want)
				FAILF(r, "cursor (lo %d hi %d prefix %zu rev %d): %zu records, want %zu", rg.has_lo,
				      rg.has_hi, rg.prefix.size, rg.reverse, got, want);
			else if (prolly_cursor_next(cur, &k, &v) != PROLLY_ITEROVER)
				FAILF(r, "cursor_next after the end is not ITEROVER");
		}
		prolly_cursor_free(cur);
		free(idx);
	}
	free_owned(r);
}

/* Expected diff of two models, restricted to range. */
typedef struct dent {
	prolly_diff_kind kind;
	size_t a, b; /* indexes into from / to */
} dent;

static size_t model_diff(const tm_model *from, const tm_model *to, const prolly_range *rg,
                         dent **out)
{
	dent *d = malloc(sizeof(*d) * (from->n + to->n + 1));
	size_t i = 0, j = 0, k = 0;
	while (i < from->n || j < to->n) {
		int c;
		if (i == from->n)
			c = 1;
		else if (j == to->n)
			c = -1;
		else {
			const tm_rec *x = &from->r[i], *y = &to->r[j];
			size_t mm = x->klen < y->klen ? x->klen : y->klen;
			c = mm ? memcmp(x->k, y->k, mm) : 0;
			if (!c)
				c = x->klen < y->klen ? -1 : x->klen > y->klen;
		}
		if (c < 0) {
			if (tm_model_in_range(from, i, rg))
				d[k++] = (dent){PROLLY_DIFF_REMOVED, i, 0};
			i++;
		} else if (c > 0) {
			if (tm_model_in_range(to, j, rg))
				d[k++] = (dent){PROLLY_DIFF_ADDED, 0, j};
			j++;
		} else {
			const tm_rec *x = &from->r[i], *y = &to->r[j];
			if ((x->vlen != y->vlen || (x->vlen && memcmp(x->v, y->v, x->vlen))) &&
			    tm_model_in_range(from, i, rg))
				d[k++] = (dent){PROLLY_DIFF_CHANGED, i, j};
			i++;
			j++;
		}
	}
	*out = d;
	return k;
}

typedef struct diff_ctx {
	run *r;
	const tm_model *from, *to;
	const dent *want;
	size_t n_want, got, stop_at;
} diff_ctx;

static int slice_eq(prolly_slice s, const void *p, size_t n)
{
	return s.size == n && (n == 0 || memcmp(s.data, p, n) == 0);
}

static int diff_cb(void *payload, const prolly_diff_entry *e)
{
	diff_ctx *c = payload;
	run *r = c->r;
	if (c->got >= c->n_want) {
		FAILF(r, "diff: extra entry kind %d key %s (want %zu entries)", e->kind,
		      tm_bhex(e->key.data, e->key.size), c->n_want);
		return 1;
	}
	const dent *w = &c->want[c->got];
	const tm_rec *fr = &c->from->r[w->a], *tr = &c->to->r[w->b];
	const tm_rec *kr = w->kind == PROLLY_DIFF_ADDED ? tr : fr;
	int ok = e->kind == w->kind && slice_eq(e->key, kr->k, kr->klen);
	if (ok && w->kind != PROLLY_DIFF_ADDED)
		ok = slice_eq(e->old_value, fr->v, fr->vlen);
	if (ok && w->kind != PROLLY_DIFF_REMOVED)
		ok = slice_eq(e->new_value, tr->v, tr->vlen);
	if (!ok) {
		FAILF(r, "diff entry %zu: kind %d key %s, want kind %d key %s", c->got, e->kind,
		      tm_bhex(e->key.data, e->key.size), w->kind, tm_bhex(kr->k, kr->klen));
		return 1;
	}
	c->got++;
	return c->got == c->stop_at ? 77 : 0;
}

static void check_diff(run *r, const prolly_id *a, const tm_model *ma, const prolly_id *b,
                       const tm_model *mb)
{
	prolly_range rg = PROLLY_RANGE_INIT;
	int ranged = tm_rng_chance(&r->rng, 1, 3);
	if (ranged)
		gen_range(r, tm_rng_chance(&r->rng, 1, 2) ? ma : mb, &rg, 1);
	dent *want = NULL;
	size_t n = model_diff(ma, mb, ranged ? &rg : NULL, &want);
	diff_ctx c = {r, ma, mb, want, n, 0, SIZE_MAX};
	int stop = n > 1 && tm_rng_chance(&r->rng, 1, 5);
	if (stop)
		c.stop_at = (size_t)tm_rng_range(&r->rng, 1, n);
	int rc = prolly_diff(r->db, a, b, ranged ? &rg : NULL, diff_cb, &c);
	r->n_diffs++;
	r->n_diff_entries += (unsigned)c.got;
	if (!r->failed) {
		if (stop && rc != 77)
			FAILF(r, "diff stopped after %zu entries returned %d, want 77", c.stop_at, rc);
		else if (!stop && rc)
			FAILF(r, "diff %s -> %s: %d (%s)", tm_hex(a), tm_hex(b), rc, prolly_last_error());
		else if (!stop && c.got != n)
			FAILF(r, "diff %s -> %s%s: %zu entries, want %zu", tm_hex(a), tm_hex(b),
			      ranged ? " (ranged)" : "", c.got, n);
	}
	free(want);
	/* prefix and reverse are not supported by diff. */
	if (tm_rng_chance(&r->rng, 1, 10)) {
		prolly_range bad = PROLLY_RANGE_INIT;
		bad.reverse = 1;
		c = (diff_ctx){r, ma, mb, NULL, 0, 0, SIZE_MAX};
		rc = prolly_diff(r->db, a, b, &bad, diff_cb, &c);
		if (rc != PROLLY_EINVAL)
			FAILF(r, "diff with reverse: %d, want EINVAL", rc);
	}
	free_owned(r);
}

static void check_reads(run *r, const prolly_id *root, const tm_model *m)
{
	if (!r->failed)
		check_gets(r, root, m);
	if (!r->failed)
		check_get_many(r, root, m);
	if (!r->failed)
		check_rank_select(r, root, m);
	if (!r->failed)
		check_cursors(r, root, m);
}

/* ---- steps --------------------------------------------------------------------------------- */

static void keep_version(run *r, const prolly_id *id, const tm_model *m)
{
	int slot = -1;
	for (int i = 0; i < MAXV; i++)
		if (!r->v[i].used) {
			slot = i;
			break;
		}
	if (slot < 0)
		slot = (int)tm_rng_below(&r->rng, MAXV);
	r->v[slot].id = *id;
	tm_model_copy(&r->v[slot].m, m);
	r->v[slot].used = 1;
}

static void diff_versions(run *r)
{
	/* Current against a kept version, and two kept versions against each other. */
	int a = (int)tm_rng_below(&r->rng, MAXV), b = (int)tm_rng_below(&r->rng, MAXV);
	if (r->v[a].used) {
		if (tm_rng_chance(&r->rng, 1, 2))
			check_diff(r, &r->v[a].id, &r->v[a].m, &r->root, &r->m);
		else
			check_diff(r, &r->root, &r->m, &r->v[a].id, &r->v[a].m);
	}
	if (!r->failed && r->v[a].used && r->v[b].used)
		check_diff(r, &r->v[a].id, &r->v[a].m, &r->v[b].id, &r->v[b].m);
	if (!r->failed && tm_rng_chance(&r->rng, 1, 8)) {
		tm_model empty;
		prolly_id e;
		tm_model_init(&empty);
		prolly_id_empty_tree(&e);
		check_diff(r, &e, &empty, &r->root, &r->m);
		if (!r->failed)
			check_diff(r, &r->root, &r->m, &r->root, &r->m);
	}
}

static void step_edit(run *r)
{
	prolly_edit *e = NULL;
	size_t n = gen_batch(r, &r->m, &e);
	int discard = tm_rng_chance(&r->rng, 1, 10);
	/* Sometimes edit twice in one txn (reading the first result's unpublished nodes). */
	int twice = tm_rng_chance(&r->rng, 1, 6);
	prolly_txn *txn = NULL;
	prolly_id out;
	tm_model next;
	tm_model_init(&next);
	tm_model_copy(&next, &r->m);
	tm_model_apply(&next, e, n);
	RC_OK(r, prolly_txn_begin(&txn, r->db));
	if (!r->failed)
		RC_OK(r, prolly_edit_tree(&out, txn, &r->root, e, n));
	free(e);
	free_owned(r);
	if (!r->failed && twice) {
		prolly_id out2;
		n = gen_batch(r, &next, &e);
		tm_model_apply(&next, e, n);
		RC_OK(r, prolly_edit_tree(&out2, txn, &out, e, n));
		out = out2;
		free(e);
		free_owned(r);
	}
	if (!r->failed && discard) {
		check_tree_v(r, &out, &next, "edit (txn open)", 0);
		check_reads(r, &out, &next);
		prolly_txn_free(txn);
		txn = NULL;
		/* The old tree must be intact after throwing the txn away. */
		check_tree(r, &r->root, &r->m, "after discarding a txn");
	} else if (!r->failed) {
		check_tree_v(r, &out, &next, "edit (before commit)", 0);
		RC_OK(r, prolly_txn_commit(txn, NULL, 0));
		if (!r->failed)
			check_tree(r, &out, &next, "edit");
		r->root = out;
		tm_model_copy(&r->m, &next);
	}
	prolly_txn_free(txn);
	tm_model_dispose(&next);
}

static void step_build(run *r)
{
	/* A fresh random record set (sometimes the current one plus some more). */
	tm_model nm;
	tm_model_init(&nm);
	if (tm_rng_chance(&r->rng, 1, 2))
		tm_model_copy(&nm, &r->m);
	size_t add = (size_t)tm_rng_below(&r->rng, r->target + 1);
	unsigned char kb[TM_KEY_MAX];
	for (size_t i = 0; i < add; i++) {
		size_t kl = new_key(r, kb);
		size_t vl = tm_gen_value(&r->rng, r->vbuf, r->big_den);
		tm_model_put(&nm, kb, kl, r->vbuf, vl);
	}
	prolly_id id;
	RC_OK(r, tm_build_commit(&id, r->db, &nm));
	if (!r->failed) {
		check_tree(r, &id, &nm, "bulk build");
		r->root = id;
		tm_model_copy(&r->m, &nm);
	}
	tm_model_dispose(&nm);
}

static void step_delete_range(run *r)
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
	RC_OK(r, prolly_txn_begin(&txn, r->db));
	if (!r->failed)
		RC_OK(r, prolly_edit_tree(&out, txn, &r->root, e, n));
	if (!r->failed)
		RC_OK(r, prolly_txn_commit(txn, NULL, 0));
	prolly_txn_free(txn);
	if (!r->failed) {
		tm_model next;
		tm_model_init(&next);
		tm_model_copy(&next, &r->m);
		tm_model_apply(&next, e, n);
		check_tree(r, &out, &next, "delete range");
		r->root = out;
		tm_model_copy(&r->m, &next);
		tm_model_dispose(&next);
	}
	free(e);
}

static void step_range_delete_lib(run *r)
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
	RC_OK(r, prolly_txn_begin(&txn, r->db));
	if (!r->failed)
		RC_OK(r, prolly_delete_range(&out, txn, &r->root, fp, tp));
	if (!r->failed)
		RC_OK(r, prolly_txn_commit(txn, NULL, 0));
	prolly_txn_free(txn);
	if (r->failed)
		return;
	tm_model next;
	tm_model_init(&next);
	size_t a = fp ? tm_model_lower_bound(&r->m, fp->data, fp->size) : 0;
	size_t b = tp ? tm_model_lower_bound(&r->m, tp->data, tp->size) : r->m.n;
	for (size_t i = 0; i < r->m.n; i++)
		if (i < a || i >= b)
			tm_model_put(&next, r->m.r[i].k, r->m.r[i].klen, r->m.r[i].v, r->m.r[i].vlen);
	check_tree(r, &out, &next, "prolly_delete_range");
	r->root = out;
	tm_model_copy(&r->m, &next);
	tm_model_dispose(&next);
}

/* ---- merge --------------------------------------------------------------------------------- */

typedef struct side {
	const unsigned char *v;
	size_t vlen;
	int exists;
} side;

static side side_of(const tm_model *m, const void *k, size_t klen)
{
	const tm_rec *rec = tm_model_get(m, k, klen);
	side s = {rec ? rec->v : NULL, rec ? rec->vlen : 0, rec != NULL};
	return s;
}

static int side_eq(side a, side b)
{
	if (a.exists != b.exists)
		return 0;
	return !a.exists || (a.vlen == b.vlen && (a.vlen == 0 || memcmp(a.v, b.v, a.vlen) == 0));
}

static int slice_side_eq(prolly_slice s, int exists, side want)
{
	if (exists != want.exists)
		return 0;
	if (!exists)
		return s.data == NULL;
	return s.data != NULL && slice_eq(s, want.v, want.vlen);
}

/* The callback resolver's rule, applied identically to the model: keys whose last byte is even
 * take a value made of the three sides' sizes; odd ones are deleted. */
static size_t resolved_value(unsigned char out[32], const side *b, const side *o, const side *t)
{
	return (size_t)snprintf((char *)out, 32, "R%d.%zu/%d.%zu/%d.%zu", b->exists, b->vlen, o->exists,
	                        o->vlen, t->exists, t->vlen);
}

static int resolve_keeps(const void *k, size_t klen)
{
	return klen == 0 || (((const unsigned char *)k)[klen - 1] & 1) == 0;
}

typedef struct merge_ctx {
	run *r;
	const tm_model *base, *ours, *theirs;
	unsigned char (*vals)[32];
	size_t n_vals;
	/* Expected conflicts (keys, in order), for FAIL. */
	const tm_model *conflicts;
	size_t seen;
} merge_ctx;

static void check_conflict_sides(merge_ctx *c, const prolly_conflict *cf)
{
	side b = side_of(c->base, cf->key.data, cf->key.size);
	side o = side_of(c->ours, cf->key.data, cf->key.size);
	side t = side_of(c->theirs, cf->key.data, cf->key.size);
	if (!slice_side_eq(cf->base, cf->base_exists, b) ||
	    !slice_side_eq(cf->ours, cf->ours_exists, o) ||
	    !slice_side_eq(cf->theirs, cf->theirs_exists, t))
		FAILF(
		    c->r,
		    "merge conflict %s: sides differ from the model (exists b%d o%d t%d, want b%d o%d t%d)",
		    tm_bhex(cf->key.data, cf->key.size), cf->base_exists, cf->ours_exists,
		    cf->theirs_exists, b.exists, o.exists, t.exists);
	if (side_eq(o, t) || side_eq(o, b) || side_eq(t, b))
		FAILF(c->r, "merge reported a conflict for %s, which is not one",
		      tm_bhex(cf->key.data, cf->key.size));
}

static int resolve_cb(void *payload, const prolly_conflict *cf, prolly_slice *out_value,
                      int *out_exists)
{
	merge_ctx *c = payload;
	check_conflict_sides(c, cf);
	if (!resolve_keeps(cf->key.data, cf->key.size)) {
		*out_exists = 0;
		return 0;
	}
	side b = side_of(c->base, cf->key.data, cf->key.size);
	side o = side_of(c->ours, cf->key.data, cf->key.size);
	side t = side_of(c->theirs, cf->key.data, cf->key.size);
	unsigned char *slot = c->vals[c->n_vals++];
	out_value->size = resolved_value(slot, &b, &o, &t);
	out_value->data = slot;
	*out_exists = 1;
	return 0;
}

static int conflict_cb(void *payload, const prolly_conflict *cf)
{
	merge_ctx *c = payload;
	check_conflict_sides(c, cf);
	if (c->seen >= c->conflicts->n) {
		FAILF(c->r, "merge: unexpected conflict %s", tm_bhex(cf->key.data, cf->key.size));
		return 0;
	}
	const tm_rec *w = &c->conflicts->r[c->seen++];
	if (!slice_eq(cf->key, w->k, w->klen))
		FAILF(c->r, "merge conflict %zu: key %s, want %s (key order)", c->seen - 1,
		      tm_bhex(cf->key.data, cf->key.size), tm_bhex(w->k, w->klen));
	return 0;
}

/* DELETE_WINS / UPDATE_WINS on a conflict: when one side deleted the key, applies the winner to
 * out and returns 1; when both sides hold values, returns 0 (the conflict stays). */
static int model_one_side_deleted(tm_model *out, side *res, const void *k, size_t kl, const side *o,
                                  const side *t, prolly_resolver how)
{
	if (o->exists && t->exists)
		return 0;
	int del = how == PROLLY_RESOLVE_DELETE_WINS;
	*res = o->exists ? *o : *t; /* the side that still has a value */
	if (del)
		tm_model_del(out, k, kl);
	else
		tm_model_put(out, k, kl, res->v, res->vlen);
	return 1;
}

/* The model's three-way merge. */
static void model_merge(tm_model *out, prolly_merge_stats *st, tm_model *conflicts,
                        const tm_model *base, const tm_model *ours, const tm_model *theirs,
                        prolly_resolver how)
{
	tm_model keys;
	tm_model_init(&keys);
	tm_model_copy(out, ours);
	for (size_t i = 0; i < base->n; i++)
		tm_model_put(&keys, base->r[i].k, base->r[i].klen, "", 0);
	for (size_t i = 0; i < ours->n; i++)
		tm_model_put(&keys, ours->r[i].k, ours->r[i].klen, "", 0);
	for (size_t i = 0; i < theirs->n; i++)
		tm_model_put(&keys, theirs->r[i].k, theirs->r[i].klen, "", 0);
	memset(st, 0, sizeof(*st));
	for (size_t i = 0; i < keys.n; i++) {
		const void *k = keys.r[i].k;
		size_t kl = keys.r[i].klen;
		side b = side_of(base, k, kl), o = side_of(ours, k, kl), t = side_of(theirs, k, kl);
		side res;
		if (side_eq(o, t)) {
			if (!side_eq(o, b))
				st->convergent++;
			continue;
		} else if (side_eq(o, b)) {
			res = t;
			st->applied++;
		} else if (side_eq(t, b)) {
			continue;
		} else {
			st->conflicts++;
			if (how == PROLLY_RESOLVE_DELETE_WINS || how == PROLLY_RESOLVE_UPDATE_WINS) {
				if (model_one_side_deleted(out, &res, k, kl, &o, &t, how))
					continue;
				tm_model_put(conflicts, k, kl, "", 0); /* both set: left a conflict */
				continue;
			}
			tm_model_put(conflicts, k, kl, "", 0);
			if (how == PROLLY_RESOLVE_OURS)
				continue;
			if (how == PROLLY_RESOLVE_THEIRS) {
				res = t;
			} else if (how == PROLLY_RESOLVE_CALLBACK) {
				unsigned char tmp[32];
				if (resolve_keeps(k, kl))
					tm_model_put(out, k, kl, tmp, resolved_value(tmp, &b, &o, &t));
				else
					tm_model_del(out, k, kl);
				continue;
			} else {
				continue;
			}
		}
		if (res.exists)
			tm_model_put(out, k, kl, res.v, res.vlen);
		else
			tm_model_del(out, k, kl);
	}
	tm_model_dispose(&keys);
}

/* Their batch: some of our edits repeated (convergent), some of our keys edited differently
 * (conflicts), the rest new. */
static size_t gen_their_batch(run *r, const prolly_edit *ours, size_t n_ours, prolly_edit **out)
{
	prolly_edit *mine = NULL;
	size_t n = gen_batch(r, &r->m, &mine);
	size_t extra = n_ours ? (size_t)tm_rng_below(&r->rng, n_ours / 2 + 2) : 0;
	prolly_edit *e = calloc(n + extra + 1, sizeof(*e));
	memcpy(e, mine, n * sizeof(*e));
	free(mine);
	for (size_t i = 0; i < extra; i++) {
		const prolly_edit *src = &ours[tm_rng_below(&r->rng, n_ours)];
		if (tm_rng_chance(&r->rng, 1, 2))
			e[n++] = *src; /* the same edit: convergent */
		else
			add_edit(r, &e[n++], tm_rng_chance(&r->rng, 3, 4) ? PROLLY_PUT : PROLLY_DEL,
			         src->key.data, src->key.size);
	}
	tm_shuffle(&r->rng, e, n, sizeof(*e));
	*out = e;
	return n;
}

static void step_merge(run *r)
{
	prolly_edit *eo = NULL, *et = NULL;
	size_t no = tm_rng_chance(&r->rng, 1, 10) ? 0 : gen_batch(r, &r->m, &eo);
	size_t nt = tm_rng_chance(&r->rng, 1, 10) ? 0 : gen_their_batch(r, eo, no, &et);
	tm_model mo, mt, want, conflicts;
	tm_model_init(&mo);
	tm_model_init(&mt);
	tm_model_init(&want);
	tm_model_init(&conflicts);
	tm_model_copy(&mo, &r->m);
	tm_model_apply(&mo, eo, no);
	tm_model_copy(&mt, &r->m);
	tm_model_apply(&mt, et, nt);
	prolly_resolver how = (prolly_resolver)tm_rng_below(&r->rng, 6); /* FAIL .. UPDATE_WINS */
	prolly_merge_stats wst = PROLLY_MERGE_STATS_INIT, gst = PROLLY_MERGE_STATS_INIT;
	model_merge(&want, &wst, &conflicts, &r->m, &mo, &mt, how);
	r->n_merges++;
	r->n_conflicts += (unsigned)conflicts.n;

	prolly_txn *txn = NULL;
	prolly_id ido, idt, res;
	RC_OK(r, prolly_txn_begin(&txn, r->db));
	if (!r->failed)
		RC_OK(r, prolly_edit_tree(&ido, txn, &r->root, eo, no));
	if (!r->failed)
		RC_OK(r, prolly_edit_tree(&idt, txn, &r->root, et, nt));
	/* Commit the branches first sometimes, so the merge reads them from the store. */
	if (!r->failed && tm_rng_chance(&r->rng, 1, 2)) {
		RC_OK(r, prolly_txn_commit(txn, NULL, 0));
		prolly_txn_free(txn);
		txn = NULL;
		RC_OK(r, prolly_txn_begin(&txn, r->db));
	}
	if (!r->failed) {
		unsigned char(*vals)[32] = calloc(conflicts.n + 1, 32);
		merge_ctx c = {r, &r->m, &mo, &mt, vals, 0, &conflicts, 0};
		prolly_merge_options opts = PROLLY_MERGE_OPTIONS_INIT;
		opts.resolve = how;
		opts.resolve_fn = resolve_cb;
		opts.on_conflict = conflict_cb;
		opts.payload = &c;
		prolly_id untouched;
		memset(&untouched, 0xab, sizeof(untouched));
		res = untouched;
		int rc = prolly_merge(&res, &gst, txn, &r->root, &ido, &idt, &opts);
		int leaves = how == PROLLY_RESOLVE_FAIL || how == PROLLY_RESOLVE_DELETE_WINS ||
		             how == PROLLY_RESOLVE_UPDATE_WINS; /* conflicts left unresolved */
		if (leaves && conflicts.n) {
			if (rc != PROLLY_EMERGE)
				FAILF(r, "merge with %zu unresolved conflicts (resolver %d): %d, want EMERGE",
				      conflicts.n, how, rc);
			else if (!prolly_id_equal(&res, &untouched))
				FAILF(r, "merge failed but changed out_root");
			else if (c.seen != conflicts.n)
				FAILF(r, "merge: %zu conflicts reported, want %zu", c.seen, conflicts.n);
			/* Then settle it by taking ours. */
			if (!r->failed) {
				how = PROLLY_RESOLVE_OURS;
				model_merge(&want, &wst, &conflicts, &r->m, &mo, &mt, how);
				opts.resolve = how;
				opts.on_conflict = NULL;
				rc = prolly_merge(&res, &gst, txn, &r->root, &ido, &idt, &opts);
			}
		}
		if (!r->failed && rc)
			FAILF(r, "merge (resolver %d): %d (%s)", how, rc, prolly_last_error());
		if (!r->failed && (gst.conflicts != wst.conflicts || gst.applied != wst.applied ||
		                   gst.convergent != wst.convergent))
			FAILF(r,
			      "merge stats: applied %llu convergent %llu conflicts %llu, model %llu %llu %llu",
			      (unsigned long long)gst.applied, (unsigned long long)gst.convergent,
			      (unsigned long long)gst.conflicts, (unsigned long long)wst.applied,
			      (unsigned long long)wst.convergent, (unsigned long long)wst.conflicts);
		if (!r->failed)
			check_tree_v(r, &res, &want, "merge result (before commit)", 0);
		if (!r->failed)
			RC_OK(r, prolly_txn_commit(txn, NULL, 0));
		if (!r->failed)
			check_tree(r, &res, &want, "merge result");
		free(vals);
	}
	prolly_txn_free(txn);
	free(eo);
	free(et);
	free_owned(r);
	if (!r->failed) {
		check_tree(r, &ido, &mo, "merge: ours");
		check_tree(r, &idt, &mt, "merge: theirs");
		keep_version(r, &ido, &mo);
		keep_version(r, &idt, &mt);
		r->root = res;
		tm_model_copy(&r->m, &want);
	}
	tm_model_dispose(&mo);
	tm_model_dispose(&mt);
	tm_model_dispose(&want);
	tm_model_dispose(&conflicts);
}

static void step_reopen(run *r)
{
	/* LMDB, PostgreSQL: everything committed must survive closing and reopening the store. */
	prolly_close(r->db);
	r->db = NULL;
	if (open_db(r))
		return;
	check_tree(r, &r->root, &r->m, "after reopen");
	for (int i = 0; i < MAXV && !r->failed; i++)
		if (r->v[i].used)
			check_tree(r, &r->v[i].id, &r->v[i].m, "kept version after reopen");
}

static void run_steps(run *r, unsigned steps)
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
			step_merge(r);
		else if (w < 89 && r->kind != K_MEM)
			step_reopen(r), r->n_reopen++;
		else
			step_edit(r), r->n_edits++;
		if (!r->failed && r->kind != K_MEM && r->step % 16 == 15)
			step_reopen(r), r->n_reopen++;
		if (!r->failed)
			check_reads(r, &r->root, &r->m);
		if (!r->failed)
			diff_versions(r);
		if (!r->failed && tm_rng_chance(&r->rng, 1, 3))
			keep_version(r, &r->root, &r->m);
		if (!r->failed && r->cache_bytes && tm_rng_chance(&r->rng, 1, 20))
			prolly_db_cache_clear(r->db);
	}
	printf("# %s: %u steps: %u edits, %u builds, %u merges (%u conflicts), %u diffs (%u entries), "
	       "%u cursors, %u reopens; up to %zu records, height %u\n",
	       r->name, r->step, r->n_edits, r->n_builds, r->n_merges, r->n_conflicts, r->n_diffs,
	       r->n_diff_entries, r->n_cursors, r->n_reopen, r->max_n, r->max_height);
	if (r->failed)
		fprintf(stderr, "  re-run: PROLLY_TEST_SEED=0x%llx " PROG " %s\n",
		        (unsigned long long)PT_SEED(), r->name);
}

static void model_run_pg(const char *name, uint64_t salt, int kind, size_t cache_bytes, int key24,
                         unsigned steps, size_t target, unsigned big_den,
                         const prolly_pg_options *pg)
{
	run r;
	if (run_init(&r, name, salt, kind, cache_bytes, pg) == 0) {
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
		if (kind == K_PG)
			printf("# %s: %llu store round trips, %llu SQL statements\n", name,
			       (unsigned long long)(s1.store_round_trips - s0.store_round_trips),
			       (unsigned long long)(p1.statements - p0.statements));
	}
	run_dispose(&r);
}

static void model_run(const char *name, uint64_t salt, int kind, size_t cache_bytes, int key24,
                      unsigned steps, size_t target, unsigned big_den)
{
	model_run_pg(name, salt, kind, cache_bytes, key24, steps, target, big_den, NULL);
}

/* ---- tests --------------------------------------------------------------------------------- */

#ifndef TEST_MODEL_PG

PT_TEST(model_mem_binary_keys)
{
	model_run("model_mem_binary_keys", 0x1111, K_MEM, 64u << 20, 0, 100, 1500, 300);
}

PT_TEST(model_mem_key24)
{
	model_run("model_mem_key24", 0x2222, K_MEM, 64u << 20, 1, 100, 3000, 0);
}

PT_TEST(model_mem_no_cache)
{
	model_run("model_mem_no_cache", 0x3333, K_MEM, 0, 0, 80, 1200, 400);
}

PT_TEST(model_mem_tiny_cache)
{
	model_run("model_mem_tiny_cache", 0x4444, K_MEM, 20000, 1, 80, 1500, 500);
}

PT_TEST(model_small_trees)
{
	/* Trees of a few records: single leaves, the empty tree, collapses to a leaf. */
	model_run("model_small_trees", 0x5555, K_MEM, 1u << 20, 0, 300, 8, 0);
}

PT_TEST(model_lmdb)
{
	model_run("model_lmdb", 0x6666, K_LMDB, 8u << 20, 0, 80, 1500, 300);
}

PT_TEST(model_lmdb_no_cache)
{
	model_run("model_lmdb_no_cache", 0x7777, K_LMDB, 0, 1, 50, 1500, 0);
}

/* Deterministic edge cases that random runs reach only by chance. */
PT_TEST(model_edge_batches)
{
	run r;
	if (run_init(&r, "model_edge_batches", 0x8888, K_MEM, 0, NULL) != 0) {
		run_dispose(&r);
		return;
	}
	prolly_txn *txn = NULL;
	prolly_id out;
	tm_model m;
	tm_model_init(&m);
	/* Empty batch: same root. */
	RC_OK(&r, prolly_txn_begin(&txn, r.db));
	RC_OK(&r, prolly_edit_tree(&out, txn, &r.root, NULL, 0));
	PT_CHECK(prolly_id_equal(&out, &r.root));
	/* Deleting absent keys from the empty tree: still empty. */
	prolly_edit d[3] = {{PROLLY_DEL, {"a", 1}, {NULL, 0}},
	                    {PROLLY_DEL, {"b", 1}, {NULL, 0}},
	                    {PROLLY_DEL, {"a", 1}, {NULL, 0}}};
	RC_OK(&r, prolly_edit_tree(&out, txn, &r.root, d, 3));
	PT_CHECK(prolly_id_equal(&out, &r.root));
	/* put then del of one key in one batch: absent; del then put: present with the last value. */
	prolly_edit pd[4] = {{PROLLY_PUT, {"k", 1}, {"1", 1}},
	                     {PROLLY_DEL, {"k", 1}, {NULL, 0}},
	                     {PROLLY_DEL, {"j", 1}, {NULL, 0}},
	                     {PROLLY_PUT, {"j", 1}, {"2", 1}}};
	RC_OK(&r, prolly_edit_tree(&out, txn, &r.root, pd, 4));
	tm_model_apply(&m, pd, 4);
	check_tree_v(&r, &out, &m, "put/del in one batch", 0);
	/* Overwrite with an identical value: same root. */
	prolly_id same;
	prolly_edit ov = {PROLLY_PUT, {"j", 1}, {"2", 1}};
	RC_OK(&r, prolly_edit_tree(&same, txn, &out, &ov, 1));
	PT_CHECK(prolly_id_equal(&same, &out));
	/* Empty value and a key of zero bytes. */
	prolly_edit ev[2] = {{PROLLY_PUT, {"\0", 1}, {"", 0}}, {PROLLY_PUT, {"\0\0", 2}, {NULL, 0}}};
	RC_OK(&r, prolly_edit_tree(&out, txn, &out, ev, 2));
	tm_model_apply(&m, ev, 2);
	check_tree_v(&r, &out, &m, "empty values", 0);
	RC_OK(&r, prolly_txn_commit(txn, NULL, 0));
	check_tree(&r, &out, &m, "empty values (committed)");
	prolly_txn_free(txn);
	tm_model_dispose(&m);
	run_dispose(&r);
}

/* The header: "Until then its nodes are readable through the same prolly_db ... so trees made in
 * a txn can be read". That includes a verifying stats walk. */
PT_TEST(model_txn_tree_stats_verify)
{
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	PT_CHECK_RC(prolly_store_mem_new(&st), 0);
	PT_CHECK_RC(prolly_db_new(&db, st, NULL), 0);
	PT_REQUIRE(db);
	prolly_txn *txn = NULL;
	prolly_id empty, out;
	prolly_id_empty_tree(&empty);
	PT_CHECK_RC(prolly_txn_begin(&txn, db), 0);
	prolly_edit e = {PROLLY_PUT, {"key", 3}, {"value", 5}};
	PT_CHECK_RC(prolly_edit_tree(&out, txn, &empty, &e, 1), 0);
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &out, 0), 0);
	PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &out, 1), 0);
	prolly_txn_free(txn);
	prolly_close(db);
}

#else /* TEST_MODEL_PG: the same runs on the PostgreSQL store, a fresh schema each. */

PT_TEST(model_pg_binary_keys)
{
	/* Random binary keys, some big values, the default batch sizes. */
	model_run("model_pg_binary_keys", 0x9191, K_PG, 8u << 20, 0, 50, 1500, 300);
}

PT_TEST(model_pg_no_cache)
{
	/* Every node read goes to the server. */
	model_run("model_pg_no_cache", 0x9292, K_PG, 0, 1, 24, 1000, 0);
}

PT_TEST(model_pg_small_chunks)
{
	/* A write is several INSERT statements and a read several SELECTs (in one round trip), with
	 * a pool of two connections. */
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.batch_items = 3;
	o.read_chunk = 4;
	o.pool_size = 2;
	model_run_pg("model_pg_small_chunks", 0x9393, K_PG, 20000, 0, 30, 500, 200, &o);
}

PT_TEST(model_pg_small_trees)
{
	/* Many small commits: single leaves, the empty tree, collapses to a leaf. */
	model_run("model_pg_small_trees", 0x9494, K_PG, 1u << 20, 0, 80, 8, 0);
}

#endif

int main(int argc, char **argv)
{
#ifdef TEST_MODEL_PG
	if (tm_pg_guard() != 0) {
		printf("not ok 1 - could not start a PostgreSQL cluster with scripts/pg-cluster.sh (set "
		       "PROLLY_PG_URL to use an existing server)\n# 0 passed, 1 failed\n");
		return 1;
	}
#endif
	return pt_run(argc, argv);
}
