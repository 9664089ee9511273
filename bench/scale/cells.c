/*
 * cells.c - the scale engine's Prolly cells: one function per op, each running one run of its
 * cell on the fixture's base tree (see engine.h for the shape of a cell function and
 * docs/benchmarks.md for what each op times and checks).
 *
 * Trees are immutable, so every mutating cell edits the base root again in a fresh txn and
 * commits the result (publishing a ref): each run really writes nodes. The root of base + the
 * whole edit set of (pattern, run) is remembered in the fixture (made by batch, or on demand by
 * diff), so that batch can check that the same edits always give the same root.
 *
 * Per-operation latencies (cells of many operations: gets, single commits, concurrent queries)
 * go to c->lat when the run records them (cfg->op_latency).
 */
#include "engine.h"

#include <pthread.h>

/* ---- build --------------------------------------------------------------------------------- */

/* Builds the base tree into a fresh store (the previous one of this fixture is dropped). */
static int cell_build(cell *c)
{
	fixture *fx = c->fx;
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	unsigned char *recs = NULL;
	size_t vlen = fx->vlen, rec = KEY_LEN + vlen;
	/* Records are generated (untimed) in chunks of about 4 MiB, at most 65536 of them. */
	size_t chunk = ((size_t)4 << 20) / rec;
	chunk = chunk > 65536 ? 65536 : chunk ? chunk : 1;
	int rc;
	/* The previous run's root, to check that the same records build the same tree. */
	prolly_id prev = fx->base;
	int had = fx->have_base;
	if (fx->db)
		sc_fixture_close(fx); /* clears have_base: the base lives only in the store just closed */
	CK(sc_fixture_open(fx), "opening the store");
	recs = malloc(chunk * rec);
	if (!recs) {
		rc = sc_fail(c, PROLLY_ENOMEM, "allocating the record buffer");
		goto out;
	}
	prolly_id root;
	sc_measure_begin(c);
	CK(prolly_txn_begin(&txn, fx->db), "prolly_txn_begin");
	CK(prolly_builder_new(&b, txn), "prolly_builder_new");
	for (uint64_t i = 0; i < fx->n;) {
		bench_sw_pause(&c->sw);
		uint64_t m = fx->n - i < chunk ? fx->n - i : chunk;
		for (uint64_t j = 0; j < m; j++) {
			unsigned char *p = recs + j * rec;
			sc_make_key(p, (i + j) * SLOT_STEP);
			sc_make_value(p + KEY_LEN, vlen, fx->cfg->seed, (i + j) * SLOT_STEP, 0);
		}
		bench_sw_resume(&c->sw);
		for (uint64_t j = 0; j < m; j++) {
			const unsigned char *p = recs + j * rec;
			CK(prolly_builder_add(b, p, KEY_LEN, p + KEY_LEN, vlen), "prolly_builder_add");
		}
		i += m;
	}
	CK(prolly_builder_finish(b, &root), "prolly_builder_finish");
	prolly_builder_free(b);
	b = NULL;
	CK(sc_publish(txn, "refs/bench/base", &root), "committing the built tree");
	prolly_txn_free(txn);
	txn = NULL;
	sc_measure_end(c);
	c->ops = fx->n;

	uint64_t count;
	CK(prolly_count(&count, fx->db, &root), "prolly_count");
	if (count != fx->n)
		sc_invalid(c, "built tree has %" PRIu64 " records, expected %" PRIu64, count, fx->n);
	if (had && !prolly_id_equal(&prev, &root))
		sc_invalid(c, "the same records built a different root than the previous run");
	fx->base = root;
	fx->have_base = 1;
	if (!fx->shape[0]) {
		prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
		CK(prolly_tree_stats_get(&ts, fx->db, &root, 0), "prolly_tree_stats_get");
		snprintf(fx->shape, sizeof(fx->shape),
		         "height %u, %" PRIu64 " nodes (%" PRIu64 " leaves), %.1f MiB", ts.height, ts.nodes,
		         ts.leaves, (double)ts.bytes / 1048576.0);
	}
out:
	prolly_builder_free(b);
	prolly_txn_free(txn);
	free(recs);
	return rc;
}

/* ---- scans --------------------------------------------------------------------------------- */

/* Walks the cursor, checking order and sizes; returns the count in *count. */
static int scan_all(cell *c, prolly_cursor *cur, uint64_t *count, unsigned char *first,
                    unsigned char *last)
{
	prolly_slice k, v;
	uint64_t n = 0;
	int rc, bad = 0;
	while ((rc = prolly_cursor_next(cur, &k, &v)) == 0) {
		if (k.size != KEY_LEN || v.size != c->fx->vlen) {
			bad = 1;
			continue;
		}
		if (n == 0)
			memcpy(first, k.data, KEY_LEN);
		else if (memcmp(last, k.data, KEY_LEN) >= 0)
			bad = 1;
		memcpy(last, k.data, KEY_LEN);
		n++;
	}
	if (rc != PROLLY_ITEROVER)
		return sc_fail(c, rc, "prolly_cursor_next");
	if (bad)
		sc_invalid(c, "scan returned records out of order or of the wrong size");
	*count = n;
	return 0;
}

static int cell_full_scan(cell *c)
{
	fixture *fx = c->fx;
	prolly_cursor *cur = NULL;
	unsigned char first[KEY_LEN], last[KEY_LEN];
	uint64_t count = 0;
	int rc;
	if (c->op == SCALE_OP_FULL_SCAN_WARM) { /* one untimed pass fills the cache */
		CK(prolly_cursor_open(&cur, fx->db, &fx->base, NULL), "prolly_cursor_open");
		CK(scan_all(c, cur, &count, first, last), "warming scan");
		prolly_cursor_free(cur);
		cur = NULL;
	} else {
		prolly_db_cache_clear(fx->db);
	}
	sc_measure_begin(c);
	CK(prolly_cursor_open(&cur, fx->db, &fx->base, NULL), "prolly_cursor_open");
	CK(scan_all(c, cur, &count, first, last), "scan");
	prolly_cursor_free(cur);
	cur = NULL;
	sc_measure_end(c);
	c->ops = fx->n;
	sc_check_full_scan(c, fx, count, first, last);
out:
	prolly_cursor_free(cur);
	return rc;
}

/* ---- point reads --------------------------------------------------------------------------- */

static int get_each(cell *c, readset *r)
{
	prolly_buf buf = PROLLY_BUF_INIT;
	size_t vlen = c->fx->vlen;
	int rc = 0;
	for (size_t i = 0; i < r->n; i++) {
		uint64_t t = sc_lat_start(c);
		rc = prolly_get(&buf, c->fx->db, &c->fx->base, r->keys + i * KEY_LEN, KEY_LEN);
		sc_lat_stop(c, t);
		if (rc == PROLLY_ENOTFOUND) {
			r->mismatches++;
			rc = 0;
			continue;
		}
		if (rc != 0) {
			sc_fail(c, rc, "prolly_get");
			break;
		}
		r->found++;
		if (buf.size != vlen || memcmp(buf.ptr, r->vals + i * vlen, vlen) != 0)
			r->mismatches++;
	}
	prolly_buf_dispose(&buf);
	return rc;
}

static int cell_get(cell *c)
{
	readset r;
	int rc;
	CK(sc_readset_random(&r, c, (size_t)c->fx->cfg->reads, SC_READS), "preparing reads");
	if (c->op == SCALE_OP_GET_WARM) {
		CK(get_each(c, &r), "warming gets");
	} else {
		prolly_db_cache_clear(c->fx->db);
	}
	r.found = r.mismatches = 0;
	sc_measure_begin(c);
	CK(get_each(c, &r), "gets");
	sc_measure_end(c);
	c->ops = r.n;
	if (r.mismatches)
		sc_invalid(c, "%zu of %zu gets missing or wrong", r.mismatches, r.n);
out:
	sc_readset_free(&r);
	return rc;
}

/* get_many answers: counts the keys found and the wrong values. */
typedef struct many_check {
	readset *r;
	size_t vlen;
} many_check;

static int many_check_cb(void *payload, size_t index, const void *value, size_t vlen)
{
	many_check *m = payload;
	readset *r = m->r;
	if (!value) {
		r->mismatches++;
		return 0;
	}
	r->found++;
	if (index >= r->n || vlen != m->vlen || memcmp(value, r->vals + index * m->vlen, m->vlen))
		r->mismatches++;
	return 0;
}

/* cfg->cold_gets gets (0: reads / 10, at least 1), each with the node cache cleared just
 * before it (untimed): every get reads its whole root-to-leaf path from the store, the "cold
 * point get". */
static int cell_get_cold(cell *c)
{
	const scale_config *cfg = c->fx->cfg;
	readset r;
	prolly_buf buf = PROLLY_BUF_INIT;
	size_t vlen = c->fx->vlen;
	size_t n = cfg->cold_gets ? (size_t)cfg->cold_gets
	                          : (cfg->reads / 10 ? (size_t)(cfg->reads / 10) : (size_t)cfg->reads);
	int rc;
	/* The first keys of the reads sample (the stream is the same whatever its length). */
	CK(sc_readset_random(&r, c, n > cfg->reads ? n : (size_t)cfg->reads, SC_READS),
	   "preparing reads");
	sc_measure_begin(c);
	for (size_t i = 0; i < n; i++) {
		bench_sw_pause(&c->sw);
		prolly_db_cache_clear(c->fx->db);
		bench_sw_resume(&c->sw);
		uint64_t t = sc_lat_start(c);
		rc = prolly_get(&buf, c->fx->db, &c->fx->base, r.keys + i * KEY_LEN, KEY_LEN);
		sc_lat_stop(c, t);
		if (rc != 0) {
			sc_fail(c, rc, "prolly_get");
			goto out;
		}
		if (buf.size != vlen || memcmp(buf.ptr, r.vals + i * vlen, vlen) != 0)
			r.mismatches++;
	}
	sc_measure_end(c);
	c->ops = n;
	if (r.mismatches)
		sc_invalid(c, "%zu of %zu gets wrong", r.mismatches, n);
out:
	prolly_buf_dispose(&buf);
	sc_readset_free(&r);
	return rc;
}

static int cell_query(cell *c)
{
	readset r;
	int rc;
	CK(sc_readset_random(&r, c, (size_t)c->fx->cfg->reads, SC_READS), "preparing reads");
	many_check m = {&r, c->fx->vlen};
	prolly_db_cache_clear(c->fx->db);
	sc_measure_begin(c);
	CK(prolly_get_many(c->fx->db, &c->fx->base, r.slices, r.n, many_check_cb, &m),
	   "prolly_get_many");
	sc_measure_end(c);
	c->ops = r.n;
	if (r.mismatches || r.found != r.n)
		sc_invalid(c, "get_many: %zu answers, %zu missing or wrong of %zu", r.found, r.mismatches,
		           r.n);
out:
	sc_readset_free(&r);
	return rc;
}

static int cell_scan_range(cell *c)
{
	fixture *fx = c->fx;
	size_t vlen = fx->vlen;
	readset r;
	prolly_cursor *cur = NULL;
	unsigned char lo[KEY_LEN], hi[KEY_LEN];
	int rc;
	memset(&r, 0, sizeof(r));
	size_t len = (size_t)(fx->cfg->reads < fx->n ? fx->cfg->reads : fx->n);
	uint64_t start = sc_range_start(c, len);
	r.keys = malloc(len * KEY_LEN + 1);
	r.vals = malloc(len * vlen + 1);
	if (!r.keys || !r.vals) {
		rc = sc_fail(c, PROLLY_ENOMEM, "allocating the expected range");
		goto out;
	}
	r.n = len;
	for (size_t i = 0; i < len; i++) {
		sc_make_key(r.keys + i * KEY_LEN, (start + i) * SLOT_STEP);
		sc_make_value(r.vals + i * vlen, vlen, fx->cfg->seed, (start + i) * SLOT_STEP, 0);
	}
	sc_make_key(lo, start * SLOT_STEP);
	sc_make_key(hi, (start + len) * SLOT_STEP);
	prolly_range range = PROLLY_RANGE_INIT;
	range.lo.data = lo;
	range.lo.size = KEY_LEN;
	range.has_lo = 1;
	range.hi.data = hi;
	range.hi.size = KEY_LEN;
	range.has_hi = 1;
	prolly_db_cache_clear(fx->db);

	prolly_slice k, v;
	size_t i = 0;
	sc_measure_begin(c);
	CK(prolly_cursor_open(&cur, fx->db, &fx->base, &range), "prolly_cursor_open");
	while ((rc = prolly_cursor_next(cur, &k, &v)) == 0) {
		if (i >= len || k.size != KEY_LEN || v.size != vlen ||
		    memcmp(k.data, r.keys + i * KEY_LEN, KEY_LEN) != 0 ||
		    memcmp(v.data, r.vals + i * vlen, vlen) != 0)
			r.mismatches++;
		i++;
	}
	if (rc != PROLLY_ITEROVER) {
		sc_fail(c, rc, "prolly_cursor_next");
		goto out;
	}
	rc = 0;
	prolly_cursor_free(cur);
	cur = NULL;
	sc_measure_end(c);
	c->ops = len;
	if (i != len || r.mismatches)
		sc_invalid(c, "range returned %zu records (%zu wrong), expected %zu", i, r.mismatches, len);

	/* Untimed: the same range walked backwards gives the same records in the other order. */
	range.reverse = 1;
	r.mismatches = 0;
	i = 0;
	CK(prolly_cursor_open(&cur, fx->db, &fx->base, &range), "prolly_cursor_open (reverse)");
	while ((rc = prolly_cursor_next(cur, &k, &v)) == 0) {
		if (i >= len || k.size != KEY_LEN || v.size != vlen ||
		    memcmp(k.data, r.keys + (len - 1 - i) * KEY_LEN, KEY_LEN) != 0 ||
		    memcmp(v.data, r.vals + (len - 1 - i) * vlen, vlen) != 0)
			r.mismatches++;
		i++;
	}
	if (rc != PROLLY_ITEROVER) {
		sc_fail(c, rc, "prolly_cursor_next (reverse)");
		goto out;
	}
	rc = 0;
	if (i != len || r.mismatches)
		sc_invalid(c, "the range backwards returned %zu records (%zu wrong), expected %zu", i,
		           r.mismatches, len);
out:
	prolly_cursor_free(cur);
	sc_readset_free(&r);
	return rc;
}

/* ---- concurrent queries -------------------------------------------------------------------- */

/*
 * cfg->concurrency threads, each with its own sample of cfg->reads random keys, wait for one
 * start signal and then each run one prolly_get_many on the shared handle. Untimed rounds open
 * the store's connections; then the cache is cleared and the timed round runs: from the
 * signal until the last thread has been joined. Each query's own time is a latency sample; the
 * counters are the sum over the threads (each thread has its own).
 */

typedef struct cq_gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int go; /* 1: start, -1: give up (a thread could not be created) */
} cq_gate;

typedef struct cq_worker {
	cell *c;
	cq_gate *gate;
	readset r;
	many_check m;
	int rc;
	char err[160];
	prolly_stats st;
	prolly_pg_stats pg;
	uint64_t ns;
} cq_worker;

static void *cq_main(void *arg)
{
	cq_worker *w = arg;
	pthread_mutex_lock(&w->gate->mu);
	while (!w->gate->go)
		pthread_cond_wait(&w->gate->cv, &w->gate->mu);
	int go = w->gate->go;
	pthread_mutex_unlock(&w->gate->mu);
	if (go < 0)
		return NULL;
	prolly_thread_stats_reset();
	uint64_t t0 = bench_now_ns();
	w->rc = prolly_get_many(w->c->fx->db, &w->c->fx->base, w->r.slices, w->r.n, many_check_cb,
	                        &w->m);
	w->ns = bench_now_ns() - t0;
	prolly_stats_init(&w->st, PROLLY_STATS_VERSION);
	prolly_thread_stats(&w->st);
	prolly_pg_stats_init(&w->pg, PROLLY_PG_STATS_VERSION);
	prolly_store_pg_thread_stats(&w->pg);
	if (w->rc != 0)
		snprintf(w->err, sizeof(w->err), "%s (%s)", prolly_strerror(w->rc), prolly_last_error());
	return NULL;
}

static void stats_add(prolly_stats *a, const prolly_stats *b)
{
	a->cache_hits += b->cache_hits;
	a->cache_misses += b->cache_misses;
	a->cache_evictions += b->cache_evictions;
	a->nodes_read += b->nodes_read;
	a->bytes_read += b->bytes_read;
	a->nodes_written += b->nodes_written;
	a->bytes_written += b->bytes_written;
	a->store_reads += b->store_reads;
	a->store_read_items += b->store_read_items;
	a->store_writes += b->store_writes;
	a->store_round_trips += b->store_round_trips;
}

static void pg_stats_add(prolly_pg_stats *a, const prolly_pg_stats *b)
{
	a->statements += b->statements;
	a->pool_waits += b->pool_waits;
	a->pool_wait_ns += b->pool_wait_ns;
}

static void cq_release(cq_gate *g, int go)
{
	pthread_mutex_lock(&g->mu);
	g->go = go;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* One round: k threads wait at the gate, start together and are joined. Timed: the measurement
 * runs from the release to the last join, and each query's time is a latency sample. Returns 0,
 * or an error when a thread could not be started (the others are released and joined). */
static int cq_round(cell *c, cq_worker *w, size_t k, int timed)
{
	cq_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
	pthread_t *tids = calloc(k, sizeof(*tids));
	size_t started = 0;
	int rc = 0;
	if (!tids) {
		rc = sc_fail(c, PROLLY_ENOMEM, "allocating the query threads");
		goto out;
	}
	for (size_t i = 0; i < k; i++) {
		w[i].gate = &gate;
		w[i].r.found = w[i].r.mismatches = 0;
		w[i].rc = 0;
		w[i].ns = 0;
		prolly_stats_init(&w[i].st, PROLLY_STATS_VERSION);
		prolly_pg_stats_init(&w[i].pg, PROLLY_PG_STATS_VERSION);
	}
	for (; started < k; started++) {
		int e = pthread_create(&tids[started], NULL, cq_main, &w[started]);
		if (e != 0) {
			rc = sc_fail(c, prolly_set_error(PROLLY_ENOMEM, "pthread_create: %s", strerror(e)),
			             "starting the query threads");
			cq_release(&gate, -1);
			goto out;
		}
	}
	if (timed)
		sc_measure_begin(c);
	cq_release(&gate, 1);
out:
	for (size_t i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	if (timed && rc == 0) {
		bench_sw_pause(&c->sw);
		for (size_t i = 0; i < k && c->lat; i++)
			hdr_record(c->lat, w[i].ns);
		sc_measure_end(c);
	}
	free(tids);
	pthread_mutex_destroy(&gate.mu);
	pthread_cond_destroy(&gate.cv);
	return rc;
}

/* The first failed query of a round as the cell's error, or 0. */
static int cq_failed(cell *c, const cq_worker *w, size_t k, const char *round)
{
	for (size_t i = 0; i < k; i++) {
		if (w[i].rc == 0)
			continue;
		c->valid = 0;
		if (!c->note[0])
			snprintf(c->note, sizeof(c->note),
			         "run %u: %s query %zu of %zu: prolly_get_many: %.120s", c->run + 1, round,
			         i + 1, k, w[i].err);
		return w[i].rc;
	}
	return 0;
}

static int cell_concurrent(cell *c)
{
	const scale_config *cfg = c->fx->cfg;
	size_t k = cfg->concurrency ? cfg->concurrency : 1;
	cq_worker *w = calloc(k, sizeof(*w));
	int rc = 0;
	if (!w) {
		rc = sc_fail(c, PROLLY_ENOMEM, "allocating the query threads");
		goto out;
	}
	for (size_t i = 0; i < k; i++) {
		w[i].c = c;
		/* Thread i's keys: its own stream ("cquery" + i). */
		CK(sc_readset_random(&w[i].r, c, (size_t)cfg->reads, 0x6371756572790000ull + i),
		   "preparing reads");
		w[i].m.r = &w[i].r;
		w[i].m.vlen = c->fx->vlen;
	}
	/* Untimed rounds first, each from a cold cache like the timed one, so that the store's
	 * connections are open: the PostgreSQL store connects lazily, when more callers need one at
	 * once than are connected. A round that opened none (no round trips beyond its reads) ends
	 * the warm-up; at most 5 rounds. */
	for (int round = 0; round < 5; round++) {
		uint64_t reads = 0, trips = 0;
		prolly_db_cache_clear(c->fx->db);
		if ((rc = cq_round(c, w, k, 0)) != 0 || (rc = cq_failed(c, w, k, "warm-up")) != 0)
			goto out;
		for (size_t i = 0; i < k; i++) {
			reads += w[i].st.store_reads;
			trips += w[i].st.store_round_trips;
		}
		if (trips <= reads)
			break;
	}
	prolly_db_cache_clear(c->fx->db);
	if ((rc = cq_round(c, w, k, 1)) != 0 || (rc = cq_failed(c, w, k, "timed")) != 0)
		goto out;
	size_t found = 0, wrong = 0, n = 0;
	for (size_t i = 0; i < k; i++) {
		stats_add(&c->cur.st, &w[i].st);
		pg_stats_add(&c->cur.pg, &w[i].pg);
		found += w[i].r.found;
		wrong += w[i].r.mismatches;
		n += w[i].r.n;
	}
	c->ops = n;
	if (wrong || found != n)
		sc_invalid(c, "%zu concurrent queries: %zu answers, %zu missing or wrong of %zu", k, found,
		           wrong, n);
out:
	for (size_t i = 0; w && i < k; i++)
		sc_readset_free(&w[i].r);
	free(w);
	return rc;
}

/* ---- edit patterns ------------------------------------------------------------------------- */

static uint64_t expected_count(const fixture *fx, const editset *e, size_t edits)
{
	return (uint64_t)((int64_t)fx->n + e->per_edit * (int64_t)edits);
}

/* Checks the record count of root. */
static int check_count(cell *c, const prolly_id *root, uint64_t want, const char *what)
{
	uint64_t got;
	int rc = prolly_count(&got, c->fx->db, root);
	if (rc != 0)
		return sc_fail(c, rc, "prolly_count");
	if (got != want)
		sc_invalid(c, "%s has %" PRIu64 " records, expected %" PRIu64, what, got, want);
	return 0;
}

/* Root of base + all of e, committed; made once per (pattern, run) and remembered. */
int sc_edited_root(cell *c, const editset *e, prolly_id *out)
{
	fixture *fx = c->fx;
	if (fx->have_edited[c->pattern][c->run]) {
		*out = fx->edited[c->pattern][c->run];
		return 0;
	}
	prolly_txn *txn = NULL;
	prolly_id root;
	int rc;
	CK(prolly_txn_begin(&txn, fx->db), "prolly_txn_begin");
	CK(prolly_edit_tree(&root, txn, &fx->base, e->edits, e->n), "prolly_edit_tree");
	CK(sc_publish(txn, "refs/bench/edited", &root), "committing the edited tree");
	CK(check_count(c, &root, expected_count(fx, e, e->n), "edited tree"), "prolly_count");
	fx->edited[c->pattern][c->run] = root;
	fx->have_edited[c->pattern][c->run] = 1;
	*out = root;
out:
	prolly_txn_free(txn);
	return rc;
}

static int cell_batch(cell *c)
{
	fixture *fx = c->fx;
	editset e;
	prolly_txn *txn = NULL;
	prolly_id root;
	int rc;
	CK(sc_editset_make(&e, c, 0), "making the edit set");
	sc_measure_begin(c);
	CK(prolly_txn_begin(&txn, fx->db), "prolly_txn_begin");
	CK(prolly_edit_tree(&root, txn, &fx->base, e.edits, e.n), "prolly_edit_tree");
	CK(sc_publish(txn, "refs/bench/batch", &root), "committing the batch");
	prolly_txn_free(txn);
	txn = NULL;
	sc_measure_end(c);
	c->ops = e.n;
	CK(check_count(c, &root, expected_count(fx, &e, e.n), "edited tree"), "prolly_count");
	if (fx->have_edited[c->pattern][c->run] &&
	    !prolly_id_equal(&fx->edited[c->pattern][c->run], &root))
		sc_invalid(c, "the same edits gave a different root than before");
	fx->edited[c->pattern][c->run] = root;
	fx->have_edited[c->pattern][c->run] = 1;
out:
	prolly_txn_free(txn);
	sc_editset_free(&e);
	return rc;
}

/* cfg->puts commits of one edit each, every one from the base root. */
static int cell_put(cell *c)
{
	fixture *fx = c->fx;
	editset e;
	prolly_txn *txn = NULL;
	prolly_id *roots = NULL;
	size_t k = (size_t)fx->cfg->puts;
	int rc;
	CK(sc_editset_make(&e, c, 0), "making the edit set");
	if (e.n == 0) {
		rc = sc_fail(c, PROLLY_EINVAL, "no edits to commit (--changes 0?)");
		goto out;
	}
	roots = malloc(k * sizeof(*roots) + 1);
	if (!roots) {
		rc = sc_fail(c, PROLLY_ENOMEM, "allocating roots");
		goto out;
	}
	size_t first = c->op == SCALE_OP_PUT_NOSYNC ? k : 0; /* other keys for the variant */
	if (c->op == SCALE_OP_PUT_NOSYNC)
		atomic_store(&fx->ts->nosync, 1);
	sc_measure_begin(c);
	for (size_t i = 0; i < k; i++) {
		const prolly_edit *ed = &e.edits[(first + i) % e.n];
		uint64_t t = sc_lat_start(c);
		CK(prolly_txn_begin(&txn, fx->db), "prolly_txn_begin");
		CK(prolly_edit_tree(&roots[i], txn, &fx->base, ed, 1), "prolly_edit_tree");
		CK(sc_publish(txn, "refs/bench/single", &roots[i]), "committing a single edit");
		prolly_txn_free(txn);
		txn = NULL;
		sc_lat_stop(c, t);
	}
	sc_measure_end(c);
	atomic_store(&fx->ts->nosync, 0);
	c->ops = k;
	for (size_t i = 0; i < k; i++)
		CK(check_count(c, &roots[i], expected_count(fx, &e, 1), "single-edit tree"),
		   "prolly_count");
out:
	if (fx->ts)
		atomic_store(&fx->ts->nosync, 0);
	prolly_txn_free(txn);
	free(roots);
	sc_editset_free(&e);
	return rc;
}

typedef struct diffcheck {
	const unsigned char *keys; /* expected keys in order */
	size_t n, seen, wrong;
	prolly_diff_kind kind;
} diffcheck;

static int diff_cb(void *payload, const prolly_diff_entry *d)
{
	diffcheck *dc = payload;
	if (dc->seen >= dc->n || d->kind != dc->kind || d->key.size != KEY_LEN ||
	    memcmp(d->key.data, dc->keys + dc->seen * KEY_LEN, KEY_LEN) != 0)
		dc->wrong++;
	dc->seen++;
	return 0;
}

static int cell_diff(cell *c)
{
	fixture *fx = c->fx;
	editset e;
	unsigned char *sorted = NULL;
	prolly_id to;
	int rc;
	CK(sc_editset_make(&e, c, 0), "making the edit set");
	CK(sc_edited_root(c, &e, &to), "making the edited tree");
	sorted = malloc(e.n * KEY_LEN + 1);
	if (!sorted) {
		rc = sc_fail(c, PROLLY_ENOMEM, "allocating expected keys");
		goto out;
	}
	qsort(e.slots, e.n, sizeof(*e.slots), sc_u64_cmp);
	for (size_t i = 0; i < e.n; i++)
		sc_make_key(sorted + i * KEY_LEN, e.slots[i]);
	diffcheck dc = {sorted, e.n, 0, 0, e.kind};
	sc_measure_begin(c);
	CK(prolly_diff(fx->db, &fx->base, &to, NULL, diff_cb, &dc), "prolly_diff");
	sc_measure_end(c);
	c->ops = e.n;
	if (dc.seen != e.n || dc.wrong)
		sc_invalid(c, "diff reported %zu entries (%zu unexpected), expected %zu", dc.seen, dc.wrong,
		           e.n);
out:
	free(sorted);
	sc_editset_free(&e);
	return rc;
}

static int cell_merge(cell *c)
{
	fixture *fx = c->fx;
	editset e;
	prolly_txn *txn = NULL;
	prolly_id want, ours, theirs, merged;
	int rc;
	CK(sc_editset_make(&e, c, 1), "making the edit set");
	/* Untimed: the expected result, in a txn that is never committed (so the merge's commit
	 * writes new nodes), then the two branches, committed. */
	CK(prolly_txn_begin(&txn, fx->db), "prolly_txn_begin");
	CK(prolly_edit_tree(&want, txn, &fx->base, e.edits, e.n), "prolly_edit_tree (expected)");
	prolly_txn_free(txn);
	txn = NULL;
	size_t half = e.n / 2;
	CK(prolly_txn_begin(&txn, fx->db), "prolly_txn_begin");
	CK(prolly_edit_tree(&ours, txn, &fx->base, e.edits, half), "prolly_edit_tree (ours)");
	CK(prolly_edit_tree(&theirs, txn, &fx->base, e.edits + half, e.n - half),
	   "prolly_edit_tree (theirs)");
	CK(sc_publish(txn, "refs/bench/ours", &ours), "committing the branches");
	prolly_txn_free(txn);
	txn = NULL;

	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	mo.resolve = PROLLY_RESOLVE_FAIL;
	prolly_merge_stats ms = PROLLY_MERGE_STATS_INIT;
	sc_measure_begin(c);
	CK(prolly_txn_begin(&txn, fx->db), "prolly_txn_begin");
	CK(prolly_merge(&merged, &ms, txn, &fx->base, &ours, &theirs, &mo), "prolly_merge");
	CK(sc_publish(txn, "refs/bench/merged", &merged), "committing the merge");
	prolly_txn_free(txn);
	txn = NULL;
	sc_measure_end(c);
	c->ops = e.n;
	CK(check_count(c, &merged, expected_count(fx, &e, e.n), "merged tree"), "prolly_count");
	if (!prolly_id_equal(&merged, &want))
		sc_invalid(c, "merged root differs from base + all edits");
	if (ms.conflicts)
		sc_invalid(c, "%" PRIu64 " conflicts in a disjoint merge", ms.conflicts);
out:
	prolly_txn_free(txn);
	sc_editset_free(&e);
	return rc;
}

/* The records of the count range: the rank of its end less the rank of its start, O(height)
 * each (one operation per run). */
static int cell_count(cell *c)
{
	fixture *fx = c->fx;
	unsigned char lo[KEY_LEN], hi[KEY_LEN];
	uint64_t a = 0, b = 0;
	int rc;
	uint64_t len = sc_count_range(c, lo, hi);
	sc_measure_begin(c);
	CK(prolly_rank(&a, fx->db, &fx->base, lo, KEY_LEN), "prolly_rank of the range's start");
	CK(prolly_rank(&b, fx->db, &fx->base, hi, KEY_LEN), "prolly_rank of the range's end");
	sc_measure_end(c);
	c->ops = 1;
	if (b - a != len)
		sc_invalid(c, "the range counted %" PRIu64 " records, expected %" PRIu64, b - a, len);
out:
	return rc;
}

const sc_cell_fn sc_cell_fns[SCALE_N_OPS] = {
    [SCALE_OP_BUILD] = cell_build,
    [SCALE_OP_FULL_SCAN] = cell_full_scan,
    [SCALE_OP_FULL_SCAN_WARM] = cell_full_scan,
    [SCALE_OP_GET_COLD_START] = cell_get,
    [SCALE_OP_GET_WARM] = cell_get,
    [SCALE_OP_GET_COLD] = cell_get_cold,
    [SCALE_OP_QUERY] = cell_query,
    [SCALE_OP_SCAN] = cell_scan_range,
    [SCALE_OP_COUNT] = cell_count,
    [SCALE_OP_SYNC] = sc_cell_sync,
    [SCALE_OP_PROOF] = sc_cell_proof,
    [SCALE_OP_CONCURRENT] = cell_concurrent,
    [SCALE_OP_BATCH] = cell_batch,
    [SCALE_OP_PUT] = cell_put,
    [SCALE_OP_PUT_NOSYNC] = cell_put,
    [SCALE_OP_DIFF] = cell_diff,
    [SCALE_OP_MERGE] = cell_merge,
};
