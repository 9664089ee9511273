/*
 * fixture.c - the scale engine's workload and measurement pieces: records, read and edit
 * samples, the store of a fixture (opened, and closed with all it holds, the history cells' local
 * clone included), and what every cell does around its timed part. The engine's other files
 * build on it; it calls none of them.
 *
 * Records: the key of slot s is "k" + the 23-digit zero-padded decimal of s (24 bytes, so byte
 * order is numeric order); record i of the base tree has slot 16 i. The value of (slot,
 * generation) is vlen bytes: for vlen >= 3, 'v', two decimal digits of the generation, then hex
 * digits of a hash chain of (seed, slot, generation) (27 bytes: 24 hex digits, the historical
 * format); for vlen 1 or 2, binary bytes of a hash of (seed, slot) with the generation added to
 * the first, so that any two generations below 256 differ. Generation 0 is the base tree; run r
 * of an edit cell writes generation r + 1 (+ 32 for the merge's own edit set).
 *
 * Samples come from splitmix64 streams seeded by (seed, size, what, pattern, run): the same
 * configuration reads and edits the same keys.
 */
#include "engine.h"

/* ------------------------------------------------------------------------------------------ */
/* Records                                                                                    */
/* ------------------------------------------------------------------------------------------ */

void sc_make_key(unsigned char *out, uint64_t slot)
{
	out[0] = 'k';
	for (int i = KEY_LEN - 1; i >= 1; i--) {
		out[i] = (unsigned char)('0' + slot % 10);
		slot /= 10;
	}
}

void sc_make_value(unsigned char *out, size_t vlen, uint64_t seed, uint64_t slot, unsigned gen)
{
	static const char hex[] = "0123456789abcdef";
	if (vlen < 3) {
		uint64_t h = bench_mix64(seed ^ bench_mix64(slot));
		out[0] = (unsigned char)((h & 0xff) + gen);
		if (vlen == 2)
			out[1] = (unsigned char)(h >> 8);
		return;
	}
	uint64_t w = bench_mix64(seed ^ bench_mix64(slot) ^ ((uint64_t)gen << 48));
	out[0] = 'v';
	out[1] = (unsigned char)('0' + gen / 10 % 10);
	out[2] = (unsigned char)('0' + gen % 10);
	for (size_t p = 3, i = 0; p < vlen; p++, i++) {
		if (i == 12) { /* 12 hex digits from each word of the chain */
			w = bench_mix64(w);
			i = 0;
		}
		out[p] = (unsigned char)hex[(w >> (4 * i)) & 15];
	}
}

uint64_t sc_key_slot(const unsigned char *k)
{
	uint64_t v = 0;
	for (int i = 1; i < KEY_LEN; i++)
		v = v * 10 + (uint64_t)(k[i] - '0');
	return v;
}

/* ------------------------------------------------------------------------------------------ */
/* The store of a fixture                                                                     */
/* ------------------------------------------------------------------------------------------ */

static void drop_schema_now(fixture *fx, const char *schema)
{
	char q[160], sql[256];
	if (!fx->admin || !schema[0] || bench_pg_ident(q, sizeof(q), schema) != 0)
		return;
	snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE", q);
	if (bench_pg_exec(fx->admin, sql, NULL) != 0)
		fprintf(stderr, "warning: %s\n", prolly_last_error());
}

void sc_drop_schema(fixture *fx, const char *schema)
{
	if (!fx->cfg->keep)
		drop_schema_now(fx, schema);
}

/* What the history cells (history.c) keep in the fixture: the "laptop" clone, closed and its
 * directory removed, and the base commit, forgotten (it lives in the store being closed). */
static void close_history(fixture *fx)
{
	prolly_close(fx->local);
	fx->local = NULL;
	if (fx->local_path[0] && !fx->cfg->keep)
		bench_rm_tree(fx->local_path);
	fx->local_path[0] = '\0';
	fx->have_base_commit = 0;
}

void sc_fixture_close(fixture *fx)
{
	close_history(fx);
	prolly_close(fx->db);
	fx->db = NULL;
	fx->ts = NULL;
	if (fx->path[0] && !fx->cfg->keep)
		bench_rm_tree(fx->path);
	fx->path[0] = '\0';
	sc_drop_schema(fx, fx->schema);
	fx->schema[0] = '\0';
	fx->have_base = 0;
	memset(fx->have_edited, 0, sizeof(fx->have_edited));
}

int sc_fixture_open(fixture *fx)
{
	const scale_config *cfg = fx->cfg;
	prolly_store *inner = NULL;
	int rc;
	if (fx->store == SCALE_STORE_LMDB) {
		snprintf(fx->path, sizeof(fx->path), "%s/lmdb-%" PRIu64 "-%u", fx->workdir, fx->n,
		         fx->seq++);
		rc = bench_store_open_local(&inner, fx->path, cfg->node_size);
	} else if (fx->store == SCALE_STORE_PG) {
		if (cfg->pg_schema[0]) {
			/* A fixed name: whatever an earlier (interrupted) run left there goes first. */
			snprintf(fx->schema, sizeof(fx->schema), "%s", cfg->pg_schema);
			drop_schema_now(fx, fx->schema);
		} else { /* a fresh schema per store: dropped by sc_fixture_close */
			snprintf(fx->schema, sizeof(fx->schema), "prolly_bench_%ld_%" PRIu64 "_%u",
			         (long)getpid(), fx->n, fx->seq++);
		}
		prolly_pg_options po = PROLLY_PG_OPTIONS_INIT;
		po.schema = fx->schema;
		po.node_size = cfg->node_size;
		/* concurrent_query: one connection per query, so none waits for the pool. */
		if (((cfg->ops >> SCALE_OP_CONCURRENT) & 1) && cfg->concurrency > 8)
			po.pool_size = cfg->concurrency;
		rc = prolly_store_pg_open(&inner, cfg->pg_url, &po);
	} else {
		fx->path[0] = '\0';
		rc = bench_store_open_local(&inner, NULL, cfg->node_size);
	}
	if (rc != 0)
		return rc;
	rc = bench_store_wrap(&fx->ts, inner, BENCH_STORE_TIMED);
	if (rc != 0)
		return rc;
	prolly_options opts;
	prolly_options_init(&opts, PROLLY_OPTIONS_VERSION);
	opts.cache_bytes = cfg->cache_mb ? cfg->cache_mb * 1024 * 1024 : PROLLY_CACHE_AUTO;
	if (cfg->flush_mb)
		opts.flush_bytes = cfg->flush_mb * 1024 * 1024;
	prolly_store *wrapped = bench_store_base(fx->ts);
	rc = prolly_db_new(&fx->db, wrapped, &opts);
	if (rc != 0) {
		fx->ts = NULL; /* owned (and closed) by prolly_db_new */
		fx->db = NULL;
	}
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Cells: errors and measurement                                                              */
/* ------------------------------------------------------------------------------------------ */

int sc_fail(cell *c, int rc, const char *what)
{
	c->valid = 0;
	if (!c->note[0])
		snprintf(c->note, sizeof(c->note), "run %u: %s: %s (%s)", c->run + 1, what,
		         prolly_strerror(rc), prolly_last_error());
	return rc;
}

void sc_invalid(cell *c, const char *fmt, ...)
{
	c->valid = 0;
	if (c->note[0])
		return;
	int k = snprintf(c->note, sizeof(c->note), "run %u: ", c->run + 1);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->note + k, sizeof(c->note) - (size_t)k, fmt, ap);
	va_end(ap);
}

void sc_measure_begin(cell *c)
{
	if (c->lat)
		hdr_reset(c->lat);
	prolly_thread_stats_reset();
	bench_store_reset(c->fx->ts);
	c->srv0 = c->fx->store == SCALE_STORE_PG ? bench_server_cpu_ms(c->fx->cfg->pg_postmaster) : -1;
	c->cpu0 = bench_cpu_ns();
	c->flt0 = bench_minor_faults();
	bench_sw_start(&c->sw);
}

void sc_measure_end(cell *c)
{
	c->cur.ms = bench_sw_ms(&c->sw);
	c->cur.cpu_ms = (double)(bench_cpu_ns() - c->cpu0) / 1e6;
	c->cur.minflt = bench_minor_faults() - c->flt0;
	prolly_stats_init(&c->cur.st, PROLLY_STATS_VERSION);
	prolly_thread_stats(&c->cur.st);
	prolly_pg_stats_init(&c->cur.pg, PROLLY_PG_STATS_VERSION);
	prolly_store_pg_thread_stats(&c->cur.pg);
	double srv = c->srv0 >= 0 ? bench_server_cpu_ms(c->fx->cfg->pg_postmaster) : -1;
	c->cur.srv_ms = srv >= 0 ? srv - c->srv0 : -1;
	if (c->fx->ts) { /* no store during the plain baseline */
		c->cur.read_ns = atomic_load(&c->fx->ts->read_ns);
		c->cur.write_ns = atomic_load(&c->fx->ts->write_ns);
		c->cur.durable_writes = atomic_load(&c->fx->ts->durable_writes);
	}
	if (c->lat && hdr_count(c->lat)) {
		c->cur.lat_n = hdr_count(c->lat);
		c->cur.p50_us = (double)hdr_percentile(c->lat, 50.0) / 1e3;
		c->cur.p99_us = (double)hdr_percentile(c->lat, 99.0) / 1e3;
	}
}

void sc_cell_rng(bench_rng *r, const cell *c, uint64_t what)
{
	uint64_t s = c->fx->cfg->seed;
	s = bench_mix64(s ^ c->fx->n);
	s = bench_mix64(s ^ what);
	s = bench_mix64(s ^ (uint64_t)(c->pattern + 1));
	bench_rng_seed(r, s ^ c->run);
}

int sc_publish(prolly_txn *txn, const char *ref, const prolly_id *root)
{
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = ref;
	u.expect = PROLLY_REF_EXPECT_ANY;
	u.value = *root;
	int rc = prolly_txn_set_ref(txn, &u);
	if (rc != 0)
		return rc;
	return prolly_txn_commit(txn, NULL, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Samples                                                                                    */
/* ------------------------------------------------------------------------------------------ */

void sc_readset_free(readset *r)
{
	free(r->keys);
	free(r->vals);
	free(r->slices);
	memset(r, 0, sizeof(*r));
}

int sc_readset_random(readset *r, cell *c, size_t n, uint64_t what)
{
	size_t vlen = c->fx->vlen;
	memset(r, 0, sizeof(*r));
	r->keys = malloc(n * KEY_LEN + 1);
	r->vals = malloc(n * vlen + 1);
	r->slices = malloc(n * sizeof(*r->slices) + 1);
	if (!r->keys || !r->vals || !r->slices)
		return sc_fail(c, PROLLY_ENOMEM, "allocating the read sample");
	r->n = n;
	bench_rng g;
	sc_cell_rng(&g, c, what);
	for (size_t i = 0; i < n; i++) {
		uint64_t slot = bench_rng_below(&g, c->fx->n) * SLOT_STEP;
		sc_make_key(r->keys + i * KEY_LEN, slot);
		sc_make_value(r->vals + i * vlen, vlen, c->fx->cfg->seed, slot, 0);
		r->slices[i].data = r->keys + i * KEY_LEN;
		r->slices[i].size = KEY_LEN;
	}
	return 0;
}

void sc_editset_free(editset *e)
{
	free(e->slots);
	free(e->keys);
	free(e->vals);
	free(e->edits);
	memset(e, 0, sizeof(*e));
}

/*
 * The edits of (pattern, run), distinct keys, in the order a client would send them (random for
 * the random patterns). Values carry generation run + 1, so every run writes a different tree.
 * Variant 1 (the merge cell) samples other keys and writes generation run + 33, so that the
 * merged tree is not the tree the batch cell already stored.
 */
int sc_editset_make(editset *e, cell *c, unsigned variant)
{
	fixture *fx = c->fx;
	size_t vlen = fx->vlen;
	uint64_t n = fx->cfg->changes;
	memset(e, 0, sizeof(*e));
	if (c->pattern != SCALE_PAT_APPEND && n > fx->n)
		n = fx->n;
	e->n = (size_t)n;
	e->slots = malloc(e->n * sizeof(*e->slots) + 1);
	e->keys = malloc(e->n * KEY_LEN + 1);
	e->vals = malloc(e->n * vlen + 1);
	e->edits = malloc(e->n * sizeof(*e->edits) + 1);
	if (!e->slots || !e->keys || !e->vals || !e->edits)
		return sc_fail(c, PROLLY_ENOMEM, "allocating the edit set");
	bench_rng g;
	sc_cell_rng(&g, c, 0x6564697473ull + variant); /* "edits" */
	unsigned gen = c->run + 1 + 32 * variant;
	switch (c->pattern) {
	case SCALE_PAT_APPEND:
		for (size_t i = 0; i < e->n; i++)
			e->slots[i] = (fx->n + i) * SLOT_STEP;
		e->kind = PROLLY_DIFF_ADDED;
		e->per_edit = 1;
		break;
	case SCALE_PAT_CLUSTERED: {
		uint64_t start = (fx->n - e->n) / 2;
		for (size_t i = 0; i < e->n; i++)
			e->slots[i] = (start + i) * SLOT_STEP;
		e->kind = PROLLY_DIFF_CHANGED;
		e->per_edit = 0;
		break;
	}
	case SCALE_PAT_RANDOM:
	case SCALE_PAT_RANDOM_INSERT:
	case SCALE_PAT_RANDOM_DELETE:
		if (bench_rng_sample_distinct(&g, fx->n, e->slots, e->n) != 0)
			return sc_fail(c, PROLLY_ENOMEM, "sampling the edited keys");
		for (size_t i = 0; i < e->n; i++)
			e->slots[i] = e->slots[i] * SLOT_STEP +
			              (c->pattern == SCALE_PAT_RANDOM_INSERT ? SLOT_STEP / 2 : 0);
		e->kind = c->pattern == SCALE_PAT_RANDOM          ? PROLLY_DIFF_CHANGED
		          : c->pattern == SCALE_PAT_RANDOM_INSERT ? PROLLY_DIFF_ADDED
		                                                  : PROLLY_DIFF_REMOVED;
		e->per_edit = c->pattern == SCALE_PAT_RANDOM          ? 0
		              : c->pattern == SCALE_PAT_RANDOM_INSERT ? 1
		                                                      : -1;
		break;
	default: return sc_fail(c, PROLLY_EINVAL, "unknown pattern");
	}
	int del = c->pattern == SCALE_PAT_RANDOM_DELETE;
	for (size_t i = 0; i < e->n; i++) {
		unsigned char *k = e->keys + i * KEY_LEN, *v = e->vals + i * vlen;
		sc_make_key(k, e->slots[i]);
		sc_make_value(v, vlen, fx->cfg->seed, e->slots[i], gen);
		e->edits[i].op = del ? PROLLY_DEL : PROLLY_PUT;
		e->edits[i].key.data = k;
		e->edits[i].key.size = KEY_LEN;
		e->edits[i].value.data = v;
		e->edits[i].value.size = del ? 0 : vlen;
	}
	return 0;
}

uint64_t sc_range_start(const cell *c, size_t len)
{
	bench_rng g;
	sc_cell_rng(&g, c, 0x72616e6765ull); /* "range" */
	return bench_rng_below(&g, c->fx->n - len + 1);
}

uint64_t sc_count_range(const cell *c, unsigned char *lo, unsigned char *hi)
{
	uint64_t len = c->fx->n < SCALE_COUNT_RANGE ? c->fx->n : SCALE_COUNT_RANGE;
	uint64_t start = sc_range_start(c, (size_t)len);
	sc_make_key(lo, start * SLOT_STEP);
	sc_make_key(hi, (start + len) * SLOT_STEP);
	return len;
}

void sc_check_full_scan(cell *c, const fixture *fx, uint64_t count, const unsigned char *first,
                        const unsigned char *last)
{
	unsigned char want[KEY_LEN];
	if (count != fx->n) {
		sc_invalid(c, "scan saw %" PRIu64 " records, expected %" PRIu64, count, fx->n);
	} else if (count) {
		sc_make_key(want, 0);
		if (memcmp(first, want, KEY_LEN) != 0)
			sc_invalid(c, "first key differs");
		sc_make_key(want, (fx->n - 1) * SLOT_STEP);
		if (memcmp(last, want, KEY_LEN) != 0)
			sc_invalid(c, "last key differs");
	}
}

int sc_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}
