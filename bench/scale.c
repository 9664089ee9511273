/*
 * scale.c - the serial large-tree benchmark: a matrix of sizes x stores x operations x patterns.
 *
 * Workload (see docs/benchmarks.md): the base tree of a size N holds records i = 0..N-1 with the
 * 24-byte key "k" + 23-digit zero-padded (16 i) and a 27-byte value derived from the seed, the
 * key and a generation. The spacing of 16 leaves room for inserts between existing keys.
 *
 * For each size and store a child process builds the base tree (the fixture) and runs every
 * selected cell on it; each mutating cell edits the base root again in a fresh txn and commits
 * the result, so every run writes real nodes. A cell runs --runs times; its row reports the
 * median, min and max wall time and the counters of the median run. Rows go to the CSV file
 * (appended, flushed row by row) and as a Markdown table to stdout; progress goes to stderr.
 * A second table compares the measured values with the targets.
 *
 * Running each (size, store) in its own process isolates the peak RSS of that fixture and keeps
 * a crash in one fixture from losing the others (--no-fork runs everything in one process).
 */
#include "bench_util.h"
#include "pg_baseline.h"
#include "prolly.h"

#include <getopt.h>
#include <signal.h>
#include <sys/wait.h>

#define KEY_LEN 24
#define VAL_LEN 27
#define SLOT_STEP 16
#define MAX_SIZES 16
#define MAX_RUNS 64
#define BUILD_CHUNK 65536

/* ------------------------------------------------------------------------------------------ */
/* The matrix                                                                                 */
/* ------------------------------------------------------------------------------------------ */

enum {
	OP_BUILD,
	OP_SCAN,
	OP_SCAN_WARM,
	OP_GET_COLD,
	OP_GET_WARM,
	OP_GET_NOCACHE,
	OP_GET_MANY,
	OP_RANGE,
	OP_BATCH,
	OP_SINGLE,
	OP_SINGLE_NOSYNC,
	OP_DIFF,
	OP_MERGE,
	N_OPS
};
static const char *const op_names[N_OPS] = {
	"build", "scan", "scan_warm", "get_cold", "get_warm", "get_nocache", "get_many",
	"range", "batch", "single", "single_nosync", "diff", "merge",
};
#define FIRST_PATTERN_OP OP_BATCH

enum { PAT_APPEND, PAT_UPDATE, PAT_CLUSTERED, PAT_INSERT, PAT_DELETE, N_PATTERNS };
static const char *const pattern_names[N_PATTERNS] = {
	"append", "update", "clustered", "insert", "delete",
};

enum { STORE_MEM, STORE_LMDB, STORE_PG, N_STORES };
static const char *const store_names[N_STORES] = {"mem", "lmdb", "pg"};
#define PLAIN_STORE "pg-plain" /* store column of the plain-table baseline rows */

/* The plain-table baseline's name for each operation it has an analogue of (NULL: none). The
 * Prolly pg row of op X is compared with the plain row named plain_op_names[X], same pattern. */
static const char *const plain_op_names[] = {
	"copy", "scan", "scan", "get", "get", "get", "get_any",
	"range", "batch", "single", "single_nosync", NULL, NULL,
};

typedef struct config {
	uint64_t sizes[MAX_SIZES];
	int n_sizes;
	unsigned stores;   /* bit mask over store_names */
	unsigned ops;      /* bit mask over op_names */
	unsigned patterns; /* bit mask over pattern_names */
	unsigned runs;
	uint64_t changes;  /* edits per batch / diff / merge (split in two halves) */
	uint64_t reads;    /* keys per get / get_many / range cell */
	uint64_t singles;  /* single-edit commits per single cell */
	uint64_t seed;
	const char *dir;
	const char *csv;
	size_t cache_mb;
	size_t flush_mb;   /* builder flush size; 0: the library default */
	double max_cell_s;
	int no_fork;
	int keep;
	int no_baseline;     /* pg: skip the plain-table baseline */
	int pg_statements;   /* pg: print this many top pg_stat_statements entries per fixture */
	char pg_url[4096];   /* pg: the conninfo (never printed) */
	char pg_dir[4096];   /* pg: the throwaway cluster's directory, "" when PROLLY_PG_URL was given */
	long pg_postmaster;  /* pg: the throwaway server's postmaster pid (server CPU time), or 0 */
	char workdir[4096]; /* scratch directory made under dir */
	char stamp[32];
} config;

/* ------------------------------------------------------------------------------------------ */
/* Records                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static void make_key(unsigned char *out, uint64_t slot)
{
	out[0] = 'k';
	for (int i = KEY_LEN - 1; i >= 1; i--) {
		out[i] = (unsigned char)('0' + slot % 10);
		slot /= 10;
	}
}

/* 'v', two digits of the generation, 24 hex digits of a hash of (seed, slot, generation). */
static void make_value(unsigned char *out, uint64_t seed, uint64_t slot, unsigned gen)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t a = mix64(seed ^ mix64(slot) ^ ((uint64_t)gen << 48));
	uint64_t b = mix64(a);
	out[0] = 'v';
	out[1] = (unsigned char)('0' + gen / 10 % 10);
	out[2] = (unsigned char)('0' + gen % 10);
	for (int i = 0; i < 12; i++) {
		out[3 + i] = (unsigned char)hex[(a >> (4 * i)) & 15];
		out[15 + i] = (unsigned char)hex[(b >> (4 * i)) & 15];
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Fixture: one store with the base tree of one size                                          */
/* ------------------------------------------------------------------------------------------ */

typedef struct fixture {
	const config *cfg;
	int store;
	uint64_t n;
	prolly_db *db;
	timed_store *ts;
	char path[4200]; /* directory of the open LMDB store, "" otherwise */
	char schema[96]; /* schema of the open pg store, "" otherwise */
	char plain_schema[96]; /* schema of the plain baseline table, "" when none */
	PGconn *admin;   /* pg: connection for the baseline and for dropping schemas */
	char plain_table[200]; /* "schema".kv */
	int plain_prepared;
	unsigned seq;
	prolly_id base;
	int have_base;
	char shape[160]; /* "height 3, 7719 nodes, 30.2 MiB" of the base tree */
	/* Root of base + the whole edit set of (pattern, run), made by batch or on demand. */
	prolly_id edited[N_PATTERNS][MAX_RUNS];
	unsigned char have_edited[N_PATTERNS][MAX_RUNS];
} fixture;

/* Drops a schema of this run (warning only: the cluster is thrown away anyway). */
static void drop_schema(fixture *fx, const char *schema)
{
	char q[160], sql[256];
	if (!fx->admin || !schema[0] || fx->cfg->keep)
		return;
	if (pgb_ident(q, sizeof(q), schema) != 0)
		return;
	snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE", q);
	if (pgb_exec(fx->admin, sql, NULL) != 0)
		fprintf(stderr, "warning: %s\n", prolly_last_error());
}

static void fixture_close(fixture *fx)
{
	prolly_close(fx->db);
	fx->db = NULL;
	fx->ts = NULL;
	if (fx->path[0] && !fx->cfg->keep)
		rm_tree(fx->path);
	fx->path[0] = '\0';
	drop_schema(fx, fx->schema);
	fx->schema[0] = '\0';
	fx->have_base = 0;
	memset(fx->have_edited, 0, sizeof(fx->have_edited));
}

/* Opens an empty store of fx->store (an LMDB store in a new directory of the workdir). */
static int fixture_open(fixture *fx)
{
	prolly_store *inner = NULL;
	int rc;
	if (fx->store == STORE_LMDB) {
		snprintf(fx->path, sizeof(fx->path), "%s/lmdb-%" PRIu64 "-%u", fx->cfg->workdir, fx->n,
		         fx->seq++);
		rc = prolly_store_lmdb_open(&inner, fx->path, 0);
	} else if (fx->store == STORE_PG) {
		/* A fresh schema per store: dropped by fixture_close. */
		snprintf(fx->schema, sizeof(fx->schema), "prolly_bench_%ld_%" PRIu64 "_%u",
		         (long)getpid(), fx->n, fx->seq++);
		prolly_pg_options po;
		memset(&po, 0, sizeof(po));
		po.schema = fx->schema;
		rc = prolly_store_pg_open(&inner, fx->cfg->pg_url, &po);
	} else {
		fx->path[0] = '\0';
		rc = prolly_store_mem_new(&inner);
	}
	if (rc != 0)
		return rc;
	rc = timed_store_wrap(&fx->ts, inner);
	if (rc != 0)
		return rc;
	prolly_options opts;
	prolly_options_init(&opts);
	opts.cache_bytes = fx->cfg->cache_mb * 1024 * 1024;
	if (fx->cfg->flush_mb)
		opts.flush_bytes = fx->cfg->flush_mb * 1024 * 1024;
	prolly_store *wrapped = &fx->ts->base;
	rc = prolly_db_new(&fx->db, wrapped, &opts);
	if (rc != 0) {
		fx->ts = NULL; /* owned (and closed) by prolly_db_new */
		fx->db = NULL;
	}
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Cells                                                                                      */
/* ------------------------------------------------------------------------------------------ */

typedef struct sample {
	double ms;
	double cpu_ms;
	prolly_stats st;
	uint64_t read_ns, write_ns, durable_writes;
	uint64_t minflt;
	double srv_ms; /* server CPU ms, -1 if unknown */
} sample;

typedef struct cell {
	fixture *fx;
	int op, pattern; /* pattern -1 for cells without one */
	int plain;       /* the plain-table baseline's analogue of op */
	unsigned run;
	uint64_t ops;    /* operations in one run */
	int valid;
	char note[200];
	stopwatch sw;
	uint64_t cpu0, flt0;
	double srv0;
	sample cur;
} cell;

/* Records an error (keeps the first one) and returns rc. */
static int fail(cell *c, int rc, const char *what)
{
	c->valid = 0;
	if (!c->note[0])
		snprintf(c->note, sizeof(c->note), "run %u: %s: %s (%s)", c->run + 1, what,
		         prolly_strerror(rc), prolly_last_error());
	return rc;
}

/* Marks the run invalid with a reason (validation failure, not an engine error). */
static void invalid(cell *c, const char *fmt, ...)
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

#define CK(call, what)                     \
	do {                               \
		rc = (call);               \
		if (rc != 0) {             \
			fail(c, rc, what); \
			goto out;          \
		}                          \
	} while (0)

static void measure_begin(cell *c)
{
	prolly_thread_stats_reset();
	timed_store_reset(c->fx->ts);
	c->srv0 = c->fx->store == STORE_PG ? server_cpu_ms(c->fx->cfg->pg_postmaster) : -1;
	c->cpu0 = cpu_ns();
	c->flt0 = minor_faults();
	sw_start(&c->sw);
}

static void measure_end(cell *c)
{
	c->cur.ms = sw_ms(&c->sw);
	c->cur.cpu_ms = (double)(cpu_ns() - c->cpu0) / 1e6;
	c->cur.minflt = minor_faults() - c->flt0;
	prolly_thread_stats(&c->cur.st);
	double srv = c->srv0 >= 0 ? server_cpu_ms(c->fx->cfg->pg_postmaster) : -1;
	c->cur.srv_ms = srv >= 0 ? srv - c->srv0 : -1;
	if (c->fx->ts) { /* no store during the plain baseline */
		c->cur.read_ns = atomic_load(&c->fx->ts->read_ns);
		c->cur.write_ns = atomic_load(&c->fx->ts->write_ns);
		c->cur.durable_writes = atomic_load(&c->fx->ts->durable_writes);
	}
}

/* A deterministic stream per (seed, size, what, pattern, run). */
static void cell_rng(rng *r, const cell *c, uint64_t what)
{
	uint64_t s = c->fx->cfg->seed;
	s = mix64(s ^ c->fx->n);
	s = mix64(s ^ what);
	s = mix64(s ^ (uint64_t)(c->pattern + 1));
	rng_seed(r, s ^ c->run);
}

static int publish(prolly_txn *txn, const char *ref, const prolly_id *root)
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

/* ---- build --------------------------------------------------------------------------------- */

/* Builds the base tree into a fresh store (the previous one of this fixture is dropped). */
static int cell_build(cell *c)
{
	fixture *fx = c->fx;
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	unsigned char *recs = NULL;
	int rc;
	/* The previous run's root, to check that the same records build the same tree. */
	prolly_id prev = fx->base;
	int had = fx->have_base;
	if (fx->db)
		fixture_close(fx); /* clears have_base: the base lives only in the store just closed */
	CK(fixture_open(fx), "opening the store");
	recs = malloc((size_t)BUILD_CHUNK * (KEY_LEN + VAL_LEN));
	if (!recs) {
		rc = fail(c, PROLLY_ENOMEM, "allocating the record buffer");
		goto out;
	}
	prolly_id root;
	measure_begin(c);
	CK(prolly_txn_begin(&txn, fx->db), "prolly_txn_begin");
	CK(prolly_builder_new(&b, txn), "prolly_builder_new");
	for (uint64_t i = 0; i < fx->n;) {
		sw_pause(&c->sw);
		uint64_t m = fx->n - i < BUILD_CHUNK ? fx->n - i : BUILD_CHUNK;
		for (uint64_t j = 0; j < m; j++) {
			unsigned char *p = recs + j * (KEY_LEN + VAL_LEN);
			make_key(p, (i + j) * SLOT_STEP);
			make_value(p + KEY_LEN, fx->cfg->seed, (i + j) * SLOT_STEP, 0);
		}
		sw_resume(&c->sw);
		for (uint64_t j = 0; j < m; j++) {
			const unsigned char *p = recs + j * (KEY_LEN + VAL_LEN);
			CK(prolly_builder_add(b, p, KEY_LEN, p + KEY_LEN, VAL_LEN), "prolly_builder_add");
		}
		i += m;
	}
	CK(prolly_builder_finish(b, &root), "prolly_builder_finish");
	prolly_builder_free(b);
	b = NULL;
	CK(publish(txn, "refs/bench/base", &root), "committing the built tree");
	prolly_txn_free(txn);
	txn = NULL;
	measure_end(c);
	c->ops = fx->n;

	uint64_t count;
	CK(prolly_count(&count, fx->db, &root), "prolly_count");
	if (count != fx->n)
		invalid(c, "built tree has %" PRIu64 " records, expected %" PRIu64, count, fx->n);
	if (had && !prolly_id_equal(&prev, &root))
		invalid(c, "the same records built a different root than the previous run");
	fx->base = root;
	fx->have_base = 1;
	if (!fx->shape[0]) {
		prolly_tree_stats ts;
		CK(prolly_tree_stats_get(&ts, fx->db, &root, 0), "prolly_tree_stats_get");
		snprintf(fx->shape, sizeof(fx->shape),
		         "height %u, %" PRIu64 " nodes (%" PRIu64 " leaves), %.1f MiB", ts.height,
		         ts.nodes, ts.leaves, (double)ts.bytes / 1048576.0);
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
		if (k.size != KEY_LEN || v.size != VAL_LEN) {
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
		return fail(c, rc, "prolly_cursor_next");
	if (bad)
		invalid(c, "scan returned records out of order or of the wrong size");
	*count = n;
	return 0;
}

/* A full scan must have seen every record of the fixture, from its first key to its last. */
static void check_full_scan(cell *c, const fixture *fx, uint64_t count, const unsigned char *first,
                            const unsigned char *last)
{
	unsigned char want[KEY_LEN];
	if (count != fx->n) {
		invalid(c, "scan saw %" PRIu64 " records, expected %" PRIu64, count, fx->n);
	} else if (count) {
		make_key(want, 0);
		if (memcmp(first, want, KEY_LEN) != 0)
			invalid(c, "first key differs");
		make_key(want, (fx->n - 1) * SLOT_STEP);
		if (memcmp(last, want, KEY_LEN) != 0)
			invalid(c, "last key differs");
	}
}

static int cell_scan(cell *c)
{
	fixture *fx = c->fx;
	prolly_cursor *cur = NULL;
	unsigned char first[KEY_LEN], last[KEY_LEN];
	uint64_t count = 0;
	int rc;
	if (c->op == OP_SCAN_WARM) { /* one untimed pass fills the cache */
		CK(prolly_cursor_open(&cur, fx->db, &fx->base, NULL), "prolly_cursor_open");
		CK(scan_all(c, cur, &count, first, last), "warming scan");
		prolly_cursor_free(cur);
		cur = NULL;
	} else {
		prolly_db_cache_clear(fx->db);
	}
	measure_begin(c);
	CK(prolly_cursor_open(&cur, fx->db, &fx->base, NULL), "prolly_cursor_open");
	CK(scan_all(c, cur, &count, first, last), "scan");
	prolly_cursor_free(cur);
	cur = NULL;
	measure_end(c);
	c->ops = fx->n;
	check_full_scan(c, fx, count, first, last);
out:
	prolly_cursor_free(cur);
	return rc;
}

/* ---- point reads --------------------------------------------------------------------------- */

typedef struct readset {
	size_t n;
	unsigned char *keys; /* n * KEY_LEN */
	unsigned char *vals; /* n * VAL_LEN: the expected values */
	prolly_slice *slices;
	size_t mismatches, found;
} readset;

static void readset_free(readset *r)
{
	free(r->keys);
	free(r->vals);
	free(r->slices);
	memset(r, 0, sizeof(*r));
}

/* n random base records (with repetition), the same sample for every read cell of a run. */
static int readset_random(readset *r, cell *c, size_t n)
{
	memset(r, 0, sizeof(*r));
	r->keys = malloc(n * KEY_LEN + 1);
	r->vals = malloc(n * VAL_LEN + 1);
	r->slices = malloc(n * sizeof(*r->slices) + 1);
	if (!r->keys || !r->vals || !r->slices)
		return fail(c, PROLLY_ENOMEM, "allocating the read sample");
	r->n = n;
	rng g;
	cell_rng(&g, c, 0x7265616473ull); /* "reads" */
	for (size_t i = 0; i < n; i++) {
		uint64_t slot = rng_below(&g, c->fx->n) * SLOT_STEP;
		make_key(r->keys + i * KEY_LEN, slot);
		make_value(r->vals + i * VAL_LEN, c->fx->cfg->seed, slot, 0);
		r->slices[i].data = r->keys + i * KEY_LEN;
		r->slices[i].size = KEY_LEN;
	}
	return 0;
}

static int get_each(cell *c, readset *r)
{
	prolly_buf buf = PROLLY_BUF_INIT;
	int rc = 0;
	for (size_t i = 0; i < r->n; i++) {
		rc = prolly_get(&buf, c->fx->db, &c->fx->base, r->keys + i * KEY_LEN, KEY_LEN);
		if (rc == PROLLY_ENOTFOUND) {
			r->mismatches++;
			rc = 0;
			continue;
		}
		if (rc != 0) {
			fail(c, rc, "prolly_get");
			break;
		}
		r->found++;
		if (buf.size != VAL_LEN || memcmp(buf.ptr, r->vals + i * VAL_LEN, VAL_LEN) != 0)
			r->mismatches++;
	}
	prolly_buf_dispose(&buf);
	return rc;
}

static int cell_get(cell *c)
{
	readset r;
	int rc;
	CK(readset_random(&r, c, (size_t)c->fx->cfg->reads), "preparing reads");
	if (c->op == OP_GET_WARM) {
		CK(get_each(c, &r), "warming gets");
	} else {
		prolly_db_cache_clear(c->fx->db);
	}
	r.found = r.mismatches = 0;
	measure_begin(c);
	CK(get_each(c, &r), "gets");
	measure_end(c);
	c->ops = r.n;
	if (r.mismatches)
		invalid(c, "%zu of %zu gets missing or wrong", r.mismatches, r.n);
out:
	readset_free(&r);
	return rc;
}

static int many_cb(void *payload, size_t index, const void *value, size_t vlen)
{
	readset *r = payload;
	if (!value) {
		r->mismatches++;
		return 0;
	}
	r->found++;
	if (index >= r->n || vlen != VAL_LEN || memcmp(value, r->vals + index * VAL_LEN, VAL_LEN))
		r->mismatches++;
	return 0;
}

/* --reads / 10 gets (at least 1), each with the node cache cleared just before it (untimed):
 * every get reads its whole root-to-leaf path from the store, the "cold point get". */
static int cell_get_nocache(cell *c)
{
	readset r;
	prolly_buf buf = PROLLY_BUF_INIT;
	int rc;
	CK(readset_random(&r, c, (size_t)c->fx->cfg->reads), "preparing reads");
	size_t n = r.n / 10 ? r.n / 10 : r.n;
	measure_begin(c);
	for (size_t i = 0; i < n; i++) {
		sw_pause(&c->sw);
		prolly_db_cache_clear(c->fx->db);
		sw_resume(&c->sw);
		rc = prolly_get(&buf, c->fx->db, &c->fx->base, r.keys + i * KEY_LEN, KEY_LEN);
		if (rc != 0) {
			fail(c, rc, "prolly_get");
			goto out;
		}
		if (buf.size != VAL_LEN || memcmp(buf.ptr, r.vals + i * VAL_LEN, VAL_LEN) != 0)
			r.mismatches++;
	}
	measure_end(c);
	c->ops = n;
	if (r.mismatches)
		invalid(c, "%zu of %zu gets wrong", r.mismatches, n);
out:
	prolly_buf_dispose(&buf);
	readset_free(&r);
	return rc;
}

static int cell_get_many(cell *c)
{
	readset r;
	int rc;
	CK(readset_random(&r, c, (size_t)c->fx->cfg->reads), "preparing reads");
	prolly_db_cache_clear(c->fx->db);
	measure_begin(c);
	CK(prolly_get_many(c->fx->db, &c->fx->base, r.slices, r.n, many_cb, &r), "prolly_get_many");
	measure_end(c);
	c->ops = r.n;
	if (r.mismatches || r.found != r.n)
		invalid(c, "get_many: %zu answers, %zu missing or wrong of %zu", r.found, r.mismatches,
		        r.n);
out:
	readset_free(&r);
	return rc;
}

static int cell_range(cell *c)
{
	fixture *fx = c->fx;
	readset r;
	prolly_cursor *cur = NULL;
	unsigned char lo[KEY_LEN], hi[KEY_LEN];
	int rc;
	memset(&r, 0, sizeof(r));
	size_t len = (size_t)(fx->cfg->reads < fx->n ? fx->cfg->reads : fx->n);
	rng g;
	cell_rng(&g, c, 0x72616e6765ull); /* "range" */
	uint64_t start = rng_below(&g, fx->n - len + 1);
	r.keys = malloc(len * KEY_LEN + 1);
	r.vals = malloc(len * VAL_LEN + 1);
	if (!r.keys || !r.vals) {
		rc = fail(c, PROLLY_ENOMEM, "allocating the expected range");
		goto out;
	}
	r.n = len;
	for (size_t i = 0; i < len; i++) {
		make_key(r.keys + i * KEY_LEN, (start + i) * SLOT_STEP);
		make_value(r.vals + i * VAL_LEN, fx->cfg->seed, (start + i) * SLOT_STEP, 0);
	}
	make_key(lo, start * SLOT_STEP);
	make_key(hi, (start + len) * SLOT_STEP);
	prolly_range range;
	memset(&range, 0, sizeof(range));
	range.lo.data = lo;
	range.lo.size = KEY_LEN;
	range.has_lo = 1;
	range.hi.data = hi;
	range.hi.size = KEY_LEN;
	range.has_hi = 1;
	prolly_db_cache_clear(fx->db);

	prolly_slice k, v;
	size_t i = 0;
	measure_begin(c);
	CK(prolly_cursor_open(&cur, fx->db, &fx->base, &range), "prolly_cursor_open");
	while ((rc = prolly_cursor_next(cur, &k, &v)) == 0) {
		if (i >= len || k.size != KEY_LEN || v.size != VAL_LEN ||
		    memcmp(k.data, r.keys + i * KEY_LEN, KEY_LEN) != 0 ||
		    memcmp(v.data, r.vals + i * VAL_LEN, VAL_LEN) != 0)
			r.mismatches++;
		i++;
	}
	if (rc != PROLLY_ITEROVER) {
		fail(c, rc, "prolly_cursor_next");
		goto out;
	}
	rc = 0;
	prolly_cursor_free(cur);
	cur = NULL;
	measure_end(c);
	c->ops = len;
	if (i != len || r.mismatches)
		invalid(c, "range returned %zu records (%zu wrong), expected %zu", i, r.mismatches, len);
out:
	prolly_cursor_free(cur);
	readset_free(&r);
	return rc;
}

/* ---- edit patterns ------------------------------------------------------------------------- */

typedef struct editset {
	size_t n;
	uint64_t *slots;
	unsigned char *keys; /* n * KEY_LEN */
	unsigned char *vals; /* n * VAL_LEN */
	prolly_edit *edits;
	prolly_diff_kind kind; /* what a diff from base reports per edit */
	int64_t per_edit;      /* record count change per edit: +1, 0, -1 */
} editset;

static void editset_free(editset *e)
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
static int editset_make(editset *e, cell *c, unsigned variant)
{
	fixture *fx = c->fx;
	uint64_t n = fx->cfg->changes;
	memset(e, 0, sizeof(*e));
	if (c->pattern != PAT_APPEND && n > fx->n)
		n = fx->n;
	e->n = (size_t)n;
	e->slots = malloc(e->n * sizeof(*e->slots) + 1);
	e->keys = malloc(e->n * KEY_LEN + 1);
	e->vals = malloc(e->n * VAL_LEN + 1);
	e->edits = malloc(e->n * sizeof(*e->edits) + 1);
	if (!e->slots || !e->keys || !e->vals || !e->edits)
		return fail(c, PROLLY_ENOMEM, "allocating the edit set");
	rng g;
	cell_rng(&g, c, 0x6564697473ull + variant); /* "edits" */
	unsigned gen = c->run + 1 + 32 * variant;
	switch (c->pattern) {
	case PAT_APPEND:
		for (size_t i = 0; i < e->n; i++)
			e->slots[i] = (fx->n + i) * SLOT_STEP;
		e->kind = PROLLY_DIFF_ADDED;
		e->per_edit = 1;
		break;
	case PAT_CLUSTERED: {
		uint64_t start = (fx->n - e->n) / 2;
		for (size_t i = 0; i < e->n; i++)
			e->slots[i] = (start + i) * SLOT_STEP;
		e->kind = PROLLY_DIFF_CHANGED;
		e->per_edit = 0;
		break;
	}
	case PAT_UPDATE:
	case PAT_INSERT:
	case PAT_DELETE:
		if (rng_sample_distinct(&g, fx->n, e->slots, e->n) != 0)
			return fail(c, PROLLY_ENOMEM, "sampling the edited keys");
		for (size_t i = 0; i < e->n; i++)
			e->slots[i] = e->slots[i] * SLOT_STEP + (c->pattern == PAT_INSERT ? SLOT_STEP / 2 : 0);
		e->kind = c->pattern == PAT_UPDATE   ? PROLLY_DIFF_CHANGED
		          : c->pattern == PAT_INSERT ? PROLLY_DIFF_ADDED
		                                     : PROLLY_DIFF_REMOVED;
		e->per_edit = c->pattern == PAT_UPDATE ? 0 : c->pattern == PAT_INSERT ? 1 : -1;
		break;
	default:
		return fail(c, PROLLY_EINVAL, "unknown pattern");
	}
	for (size_t i = 0; i < e->n; i++) {
		unsigned char *k = e->keys + i * KEY_LEN, *v = e->vals + i * VAL_LEN;
		make_key(k, e->slots[i]);
		make_value(v, fx->cfg->seed, e->slots[i], gen);
		e->edits[i].op = c->pattern == PAT_DELETE ? PROLLY_DEL : PROLLY_PUT;
		e->edits[i].key.data = k;
		e->edits[i].key.size = KEY_LEN;
		e->edits[i].value.data = v;
		e->edits[i].value.size = c->pattern == PAT_DELETE ? 0 : VAL_LEN;
	}
	return 0;
}

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
		return fail(c, rc, "prolly_count");
	if (got != want)
		invalid(c, "%s has %" PRIu64 " records, expected %" PRIu64, what, got, want);
	return 0;
}

/* Root of base + all of e, committed; made once per (pattern, run) and remembered. */
static int edited_root(cell *c, const editset *e, prolly_id *out)
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
	CK(publish(txn, "refs/bench/edited", &root), "committing the edited tree");
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
	CK(editset_make(&e, c, 0), "making the edit set");
	measure_begin(c);
	CK(prolly_txn_begin(&txn, fx->db), "prolly_txn_begin");
	CK(prolly_edit_tree(&root, txn, &fx->base, e.edits, e.n), "prolly_edit_tree");
	CK(publish(txn, "refs/bench/batch", &root), "committing the batch");
	prolly_txn_free(txn);
	txn = NULL;
	measure_end(c);
	c->ops = e.n;
	CK(check_count(c, &root, expected_count(fx, &e, e.n), "edited tree"), "prolly_count");
	if (fx->have_edited[c->pattern][c->run] &&
	    !prolly_id_equal(&fx->edited[c->pattern][c->run], &root))
		invalid(c, "the same edits gave a different root than before");
	fx->edited[c->pattern][c->run] = root;
	fx->have_edited[c->pattern][c->run] = 1;
out:
	prolly_txn_free(txn);
	editset_free(&e);
	return rc;
}

/* --singles commits of one edit each, every one from the base root. */
static int cell_single(cell *c)
{
	fixture *fx = c->fx;
	editset e;
	prolly_txn *txn = NULL;
	prolly_id *roots = NULL;
	size_t k = (size_t)fx->cfg->singles;
	int rc;
	CK(editset_make(&e, c, 0), "making the edit set");
	if (e.n == 0) {
		rc = fail(c, PROLLY_EINVAL, "no edits to commit (--changes 0?)");
		goto out;
	}
	roots = malloc(k * sizeof(*roots) + 1);
	if (!roots) {
		rc = fail(c, PROLLY_ENOMEM, "allocating roots");
		goto out;
	}
	size_t first = c->op == OP_SINGLE_NOSYNC ? k : 0; /* different keys for the two variants */
	if (c->op == OP_SINGLE_NOSYNC)
		atomic_store(&fx->ts->nosync, 1);
	measure_begin(c);
	for (size_t i = 0; i < k; i++) {
		const prolly_edit *ed = &e.edits[(first + i) % e.n];
		CK(prolly_txn_begin(&txn, fx->db), "prolly_txn_begin");
		CK(prolly_edit_tree(&roots[i], txn, &fx->base, ed, 1), "prolly_edit_tree");
		CK(publish(txn, "refs/bench/single", &roots[i]), "committing a single edit");
		prolly_txn_free(txn);
		txn = NULL;
	}
	measure_end(c);
	atomic_store(&fx->ts->nosync, 0);
	c->ops = k;
	for (size_t i = 0; i < k; i++)
		CK(check_count(c, &roots[i], expected_count(fx, &e, 1), "single-edit tree"),
		   "prolly_count");
out:
	atomic_store(&fx->ts->nosync, 0);
	prolly_txn_free(txn);
	free(roots);
	editset_free(&e);
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

static int slot_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cell_diff(cell *c)
{
	fixture *fx = c->fx;
	editset e;
	unsigned char *sorted = NULL;
	prolly_id to;
	int rc;
	CK(editset_make(&e, c, 0), "making the edit set");
	CK(edited_root(c, &e, &to), "making the edited tree");
	sorted = malloc(e.n * KEY_LEN + 1);
	if (!sorted) {
		rc = fail(c, PROLLY_ENOMEM, "allocating expected keys");
		goto out;
	}
	qsort(e.slots, e.n, sizeof(*e.slots), slot_cmp);
	for (size_t i = 0; i < e.n; i++)
		make_key(sorted + i * KEY_LEN, e.slots[i]);
	diffcheck dc = {sorted, e.n, 0, 0, e.kind};
	measure_begin(c);
	CK(prolly_diff(fx->db, &fx->base, &to, NULL, diff_cb, &dc), "prolly_diff");
	measure_end(c);
	c->ops = e.n;
	if (dc.seen != e.n || dc.wrong)
		invalid(c, "diff reported %zu entries (%zu unexpected), expected %zu", dc.seen, dc.wrong,
		        e.n);
out:
	free(sorted);
	editset_free(&e);
	return rc;
}

static int cell_merge(cell *c)
{
	fixture *fx = c->fx;
	editset e;
	prolly_txn *txn = NULL;
	prolly_id want, ours, theirs, merged;
	int rc;
	CK(editset_make(&e, c, 1), "making the edit set");
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
	CK(publish(txn, "refs/bench/ours", &ours), "committing the branches");
	prolly_txn_free(txn);
	txn = NULL;

	prolly_merge_options mo;
	memset(&mo, 0, sizeof(mo));
	mo.resolve = PROLLY_RESOLVE_FAIL;
	prolly_merge_stats ms;
	memset(&ms, 0, sizeof(ms));
	measure_begin(c);
	CK(prolly_txn_begin(&txn, fx->db), "prolly_txn_begin");
	CK(prolly_merge(&merged, &ms, txn, &fx->base, &ours, &theirs, &mo), "prolly_merge");
	CK(publish(txn, "refs/bench/merged", &merged), "committing the merge");
	prolly_txn_free(txn);
	txn = NULL;
	measure_end(c);
	c->ops = e.n;
	CK(check_count(c, &merged, expected_count(fx, &e, e.n), "merged tree"), "prolly_count");
	if (!prolly_id_equal(&merged, &want))
		invalid(c, "merged root differs from base + all edits");
	if (ms.conflicts)
		invalid(c, "%" PRIu64 " conflicts in a disjoint merge", ms.conflicts);
out:
	prolly_txn_free(txn);
	editset_free(&e);
	return rc;
}


/* ---- the plain-table baseline (pg only) ---------------------------------------------------- */

/*
 * The same records in an ordinary table (key bytea PRIMARY KEY, value bytea), through libpq
 * directly with binary parameters and results, on the fixture's admin connection. Every cell
 * reuses the Prolly cell's sample (same keys, same edits, same range), so the two rows of a pair
 * did the same logical work. Statements and round trips are counted into the thread's prolly
 * counters like the store counts its own.
 */

static int plain_sql(char *out, size_t n, const fixture *fx, const char *fmt)
{
	int k = snprintf(out, n, fmt, fx->plain_table);
	return k < 0 || (size_t)k >= n ? prolly_set_error(PROLLY_EINVAL, "statement too long") : 0;
}

static int plain_prepare(cell *c)
{
	fixture *fx = c->fx;
	static const struct {
		const char *name, *fmt;
		int nparams;
	} stmts[] = {
		{"plain_get", "SELECT value FROM %s WHERE key = $1", 1},
		{"plain_any", "SELECT key, value FROM %s WHERE key = ANY($1::bytea[])", 1},
		{"plain_range", "SELECT key, value FROM %s WHERE key >= $1 AND key < $2 ORDER BY key", 2},
		{"plain_upsert",
		 "INSERT INTO %s (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[]) "
		 "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
		 2},
		{"plain_delete", "DELETE FROM %s WHERE key = ANY($1::bytea[])", 1},
		{"plain_upsert1",
		 "INSERT INTO %s (key, value) VALUES ($1, $2) "
		 "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
		 2},
		{"plain_delete1", "DELETE FROM %s WHERE key = $1", 1},
	};
	char sql[512];
	int rc;
	if (fx->plain_prepared)
		return 0;
	for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
		rc = plain_sql(sql, sizeof(sql), fx, stmts[i].fmt);
		if (rc == 0)
			rc = pgb_prepare(fx->admin, stmts[i].name, sql, stmts[i].nparams);
		if (rc != 0)
			return fail(c, rc, "preparing the plain-table statements");
	}
	fx->plain_prepared = 1;
	return 0;
}

/* Slot of a benchmark key (its 23 digits). */
static uint64_t key_slot(const unsigned char *k)
{
	uint64_t v = 0;
	for (int i = 1; i < KEY_LEN; i++)
		v = v * 10 + (uint64_t)(k[i] - '0');
	return v;
}

/* Does (k, v) hold the base record of k's slot (generation 0)? */
static int plain_base_record(const fixture *fx, const void *k, size_t klen, const void *v,
                             size_t vlen)
{
	unsigned char want[VAL_LEN];
	if (klen != KEY_LEN || vlen != VAL_LEN)
		return 0;
	make_value(want, fx->cfg->seed, key_slot(k), 0);
	return memcmp(want, v, VAL_LEN) == 0;
}

/* CREATE TABLE + COPY of the N base records (a fresh table each run), then (untimed) VACUUM
 * ANALYZE as any loaded table gets, and a count. */
static int plain_build(cell *c)
{
	fixture *fx = c->fx;
	PGconn *pc = fx->admin;
	pgb_buf b = {0};
	PGresult *res = NULL;
	unsigned char rec[KEY_LEN + VAL_LEN];
	char sql[512];
	int rc;
	CK(plain_sql(sql, sizeof(sql), fx, "DROP TABLE IF EXISTS %s"), "DROP TABLE");
	CK(pgb_exec(pc, sql, NULL), "dropping the previous plain table");
	if (fx->plain_prepared) /* they named the dropped table */
		CK(pgb_exec(pc, "DEALLOCATE ALL", NULL), "DEALLOCATE");
	fx->plain_prepared = 0;
	if (pgb_exec(pc, "CHECKPOINT", NULL) != 0) /* untimed; needs pg_checkpoint or superuser */
		fprintf(stderr, "note: CHECKPOINT before the plain build failed: %s\n",
		        prolly_last_error());
	measure_begin(c);
	CK(plain_sql(sql, sizeof(sql), fx,
	             "CREATE TABLE %s (key bytea PRIMARY KEY, value bytea NOT NULL)"),
	   "CREATE TABLE");
	CK(pgb_exec(pc, sql, NULL), "creating the plain table");
	CK(plain_sql(sql, sizeof(sql), fx, "COPY %s (key, value) FROM STDIN (FORMAT binary)"), "COPY");
	res = PQexec(pc, sql);
	pgb_count(1, 1);
	if (!res || PQresultStatus(res) != PGRES_COPY_IN) {
		rc = fail(c, pgb_error(pc, res, "starting COPY"), "COPY");
		goto out;
	}
	PQclear(res);
	res = NULL;
	sw_pause(&c->sw);
	CK(pgb_copy_header(&b), "encoding COPY");
	for (uint64_t i = 0; i < fx->n; i++) {
		make_key(rec, i * SLOT_STEP);
		make_value(rec + KEY_LEN, fx->cfg->seed, i * SLOT_STEP, 0);
		CK(pgb_copy_row2(&b, rec, KEY_LEN, rec + KEY_LEN, VAL_LEN), "encoding COPY");
		if (b.n >= (1u << 20)) { /* record generation is untimed, sending is timed */
			sw_resume(&c->sw);
			CK(pgb_copy_send(pc, &b), "COPY");
			sw_pause(&c->sw);
		}
	}
	CK(pgb_copy_trailer(&b), "encoding COPY");
	sw_resume(&c->sw);
	CK(pgb_copy_send(pc, &b), "COPY");
	CK(pgb_copy_end(pc), "COPY");
	measure_end(c);
	c->ops = fx->n;
	CK(plain_sql(sql, sizeof(sql), fx, "VACUUM ANALYZE %s"), "VACUUM");
	CK(pgb_exec(pc, sql, NULL), "VACUUM ANALYZE of the plain table");
	CK(plain_sql(sql, sizeof(sql), fx, "SELECT count(*)::bigint FROM %s"), "count");
	CK(pgb_exec(pc, sql, &res), "counting the plain table");
	if (PQntuples(res) != 1 || PQgetlength(res, 0, 0) != 8) {
		invalid(c, "count(*) gave no bigint");
	} else {
		const unsigned char *p = (const unsigned char *)PQgetvalue(res, 0, 0);
		uint64_t cnt = (uint64_t)pgb_get32(p) << 32 | pgb_get32(p + 4);
		if (cnt != fx->n)
			invalid(c, "plain table has %" PRIu64 " rows, expected %" PRIu64, cnt, fx->n);
	}
out:
	if (rc != 0 && PQtransactionStatus(pc) == PQTRANS_ACTIVE) /* a COPY in flight */
		(void)pgb_copy_end(pc);
	PQclear(res);
	pgb_buf_free(&b);
	return rc;
}

/* SELECT key, value ... ORDER BY key through a cursor, FETCH 100000 rows at a time. */
static int plain_scan(cell *c)
{
	fixture *fx = c->fx;
	PGconn *pc = fx->admin;
	PGresult *res = NULL;
	unsigned char first[KEY_LEN], last[KEY_LEN];
	char sql[512];
	uint64_t count = 0;
	int rc, bad = 0, in_txn = 0;
	measure_begin(c);
	CK(pgb_exec(pc, "BEGIN", NULL), "BEGIN");
	in_txn = 1;
	CK(plain_sql(sql, sizeof(sql), fx,
	             "DECLARE plain_scan NO SCROLL CURSOR FOR SELECT key, value FROM %s ORDER BY key"),
	   "DECLARE");
	CK(pgb_exec(pc, sql, NULL), "DECLARE");
	for (;;) {
		CK(pgb_exec(pc, "FETCH FORWARD 100000 FROM plain_scan", &res), "FETCH");
		int rows = PQntuples(res);
		for (int i = 0; i < rows; i++) {
			const char *k = PQgetvalue(res, i, 0);
			if (PQgetlength(res, i, 0) != KEY_LEN || PQgetlength(res, i, 1) != VAL_LEN) {
				bad = 1;
				continue;
			}
			if (count == 0)
				memcpy(first, k, KEY_LEN);
			else if (memcmp(last, k, KEY_LEN) >= 0)
				bad = 1;
			memcpy(last, k, KEY_LEN);
			count++;
		}
		PQclear(res);
		res = NULL;
		if (rows == 0)
			break;
	}
	CK(pgb_exec(pc, "COMMIT", NULL), "COMMIT");
	in_txn = 0;
	measure_end(c);
	c->ops = fx->n;
	if (bad)
		invalid(c, "scan returned rows out of order or of the wrong size");
	check_full_scan(c, fx, count, first, last);
out:
	PQclear(res);
	if (in_txn)
		(void)pgb_exec(pc, "ROLLBACK", NULL);
	return rc;
}

/* --reads point selects one after another (the keys of get_cold / get_warm). */
static int plain_get(cell *c)
{
	readset r;
	PGresult *res = NULL;
	int rc;
	memset(&r, 0, sizeof(r));
	CK(plain_prepare(c), "preparing");
	CK(readset_random(&r, c, (size_t)c->fx->cfg->reads), "preparing reads");
	measure_begin(c);
	for (size_t i = 0; i < r.n; i++) {
		const char *v[1] = {(const char *)r.keys + i * KEY_LEN};
		const int l[1] = {KEY_LEN};
		CK(pgb_run(c->fx->admin, "plain_get", 1, v, l, &res), "point select");
		if (PQntuples(res) != 1 || PQgetlength(res, 0, 0) != VAL_LEN ||
		    memcmp(PQgetvalue(res, 0, 0), r.vals + i * VAL_LEN, VAL_LEN) != 0)
			r.mismatches++;
		PQclear(res);
		res = NULL;
	}
	measure_end(c);
	c->ops = r.n;
	if (r.mismatches)
		invalid(c, "%zu of %zu point selects missing or wrong", r.mismatches, r.n);
out:
	PQclear(res);
	readset_free(&r);
	return rc;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* One SELECT ... WHERE key = ANY($1) of the get_many keys (the answer is a set: duplicates
 * in the request come back once, in no particular order). */
static int plain_get_any(cell *c)
{
	readset r;
	PGresult *res = NULL;
	pgb_buf b = {0};
	uint64_t *slots = NULL;
	int rc;
	memset(&r, 0, sizeof(r));
	CK(plain_prepare(c), "preparing");
	CK(readset_random(&r, c, (size_t)c->fx->cfg->reads), "preparing reads");
	slots = malloc(r.n * sizeof(*slots) + 1);
	if (!slots) {
		rc = fail(c, PROLLY_ENOMEM, "allocating slots");
		goto out;
	}
	size_t distinct = 0;
	for (size_t i = 0; i < r.n; i++)
		slots[i] = key_slot(r.keys + i * KEY_LEN);
	qsort(slots, r.n, sizeof(*slots), u64_cmp);
	for (size_t i = 0; i < r.n; i++)
		distinct += i == 0 || slots[i] != slots[i - 1];
	measure_begin(c);
	CK(pgb_array_begin(&b, r.n), "encoding keys");
	for (size_t i = 0; i < r.n; i++)
		CK(pgb_array_add(&b, r.keys + i * KEY_LEN, KEY_LEN), "encoding keys");
	const char *v[1] = {(const char *)b.p};
	const int l[1] = {(int)b.n};
	CK(pgb_run(c->fx->admin, "plain_any", 1, v, l, &res), "= ANY select");
	int rows = PQntuples(res);
	for (int i = 0; i < rows; i++)
		if (!plain_base_record(c->fx, PQgetvalue(res, i, 0), (size_t)PQgetlength(res, i, 0),
		                       PQgetvalue(res, i, 1), (size_t)PQgetlength(res, i, 1)))
			r.mismatches++;
	measure_end(c);
	c->ops = r.n;
	if ((size_t)rows != distinct || r.mismatches)
		invalid(c, "= ANY gave %d rows (%zu wrong), expected %zu distinct keys", rows,
		        r.mismatches, distinct);
out:
	PQclear(res);
	pgb_buf_free(&b);
	free(slots);
	readset_free(&r);
	return rc;
}

/* SELECT ... WHERE key >= lo AND key < hi ORDER BY key over the range cell's records. */
static int plain_range(cell *c)
{
	fixture *fx = c->fx;
	PGresult *res = NULL;
	unsigned char lo[KEY_LEN], hi[KEY_LEN], want[KEY_LEN];
	int rc;
	CK(plain_prepare(c), "preparing");
	size_t len = (size_t)(fx->cfg->reads < fx->n ? fx->cfg->reads : fx->n);
	rng g;
	cell_rng(&g, c, 0x72616e6765ull); /* "range": the same start as the Prolly cell */
	uint64_t start = rng_below(&g, fx->n - len + 1);
	make_key(lo, start * SLOT_STEP);
	make_key(hi, (start + len) * SLOT_STEP);
	size_t wrong = 0;
	measure_begin(c);
	const char *v[2] = {(const char *)lo, (const char *)hi};
	const int l[2] = {KEY_LEN, KEY_LEN};
	CK(pgb_run(fx->admin, "plain_range", 2, v, l, &res), "range select");
	int rows = PQntuples(res);
	for (int i = 0; i < rows; i++) {
		make_key(want, (start + (uint64_t)i) * SLOT_STEP);
		if (PQgetlength(res, i, 0) != KEY_LEN || memcmp(PQgetvalue(res, i, 0), want, KEY_LEN) ||
		    !plain_base_record(fx, want, KEY_LEN, PQgetvalue(res, i, 1),
		                       (size_t)PQgetlength(res, i, 1)))
			wrong++;
	}
	measure_end(c);
	c->ops = len;
	if ((size_t)rows != len || wrong)
		invalid(c, "range gave %d rows (%zu wrong), expected %zu", rows, wrong, len);
out:
	PQclear(res);
	return rc;
}

/* Puts (upsert) or deletes of edits[0..n) in one autocommit statement; *affected gets the
 * statement's row count. */
static int plain_apply(cell *c, const prolly_edit *edits, size_t n, int del, uint64_t *affected)
{
	pgb_buf kb = {0}, vb = {0};
	PGresult *res = NULL;
	int rc = 0;
	if (pgb_array_begin(&kb, n) || (!del && pgb_array_begin(&vb, n))) {
		rc = PROLLY_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (pgb_array_add(&kb, edits[i].key.data, edits[i].key.size) ||
		    (!del && pgb_array_add(&vb, edits[i].value.data, edits[i].value.size))) {
			rc = PROLLY_ENOMEM;
			goto out;
		}
	}
	const char *v[2] = {(const char *)kb.p, (const char *)vb.p};
	const int l[2] = {(int)kb.n, (int)vb.n};
	rc = pgb_run(c->fx->admin, del ? "plain_delete" : "plain_upsert", del ? 1 : 2, v, l, &res);
	if (rc == 0)
		*affected = strtoull(PQcmdTuples(res), NULL, 10);
out:
	PQclear(res);
	pgb_buf_free(&kb);
	pgb_buf_free(&vb);
	return rc;
}

/* Untimed: brings the table back to the base records for the keys of edits (deletes what an
 * insert added, re-inserts what a delete removed; updated values stay, reads ran before). */
static int plain_undo(cell *c, const editset *e, size_t n)
{
	uint64_t affected = 0;
	if (c->pattern == PAT_INSERT || c->pattern == PAT_APPEND)
		return plain_apply(c, e->edits, n, 1, &affected);
	if (c->pattern != PAT_DELETE)
		return 0;
	prolly_edit *puts = malloc(n * sizeof(*puts) + 1);
	unsigned char *vals = malloc(n * VAL_LEN + 1);
	int rc = PROLLY_ENOMEM;
	if (puts && vals) {
		for (size_t i = 0; i < n; i++) {
			make_value(vals + i * VAL_LEN, c->fx->cfg->seed, e->slots[i], 0);
			puts[i].op = PROLLY_PUT;
			puts[i].key = e->edits[i].key;
			puts[i].value.data = vals + i * VAL_LEN;
			puts[i].value.size = VAL_LEN;
		}
		rc = plain_apply(c, puts, n, 0, &affected);
	}
	free(puts);
	free(vals);
	return rc;
}

/* The batch analogue: one INSERT ... SELECT FROM unnest ... ON CONFLICT DO UPDATE of the edit
 * set (DELETE ... = ANY for the delete pattern), autocommit (a durable commit). */
static int plain_batch(cell *c)
{
	editset e;
	uint64_t affected = 0;
	int rc;
	memset(&e, 0, sizeof(e));
	CK(plain_prepare(c), "preparing");
	CK(editset_make(&e, c, 0), "making the edit set");
	measure_begin(c);
	CK(plain_apply(c, e.edits, e.n, c->pattern == PAT_DELETE, &affected), "batch statement");
	measure_end(c);
	c->ops = e.n;
	if (affected != e.n)
		invalid(c, "the statement affected %" PRIu64 " rows, expected %zu", affected, e.n);
	CK(plain_undo(c, &e, e.n), "undoing the batch");
out:
	editset_free(&e);
	return rc;
}

/* --singles autocommit statements of one edit each (the keys of the single cells); the
 * nosync variant runs them with synchronous_commit off, as the store does for durable = 0. */
static int plain_single(cell *c)
{
	editset e;
	PGresult *res = NULL;
	size_t k = (size_t)c->fx->cfg->singles;
	int rc, nosync = c->op == OP_SINGLE_NOSYNC, wrong = 0;
	memset(&e, 0, sizeof(e));
	CK(plain_prepare(c), "preparing");
	CK(editset_make(&e, c, 0), "making the edit set");
	if (e.n == 0) {
		rc = fail(c, PROLLY_EINVAL, "no edits (--changes 0?)");
		goto out;
	}
	if (k > e.n)
		k = e.n; /* distinct keys, so that the undo below is exact */
	size_t first = nosync ? k : 0;
	if (nosync)
		CK(pgb_exec(c->fx->admin, "SET synchronous_commit TO off", NULL), "SET");
	measure_begin(c);
	for (size_t i = 0; i < k; i++) {
		const prolly_edit *ed = &e.edits[(first + i) % e.n];
		const char *v[2] = {(const char *)ed->key.data, (const char *)ed->value.data};
		const int l[2] = {(int)ed->key.size, (int)ed->value.size};
		int del = ed->op == PROLLY_DEL;
		CK(pgb_run(c->fx->admin, del ? "plain_delete1" : "plain_upsert1", del ? 1 : 2, v, l,
		           &res),
		   "single statement");
		wrong += strcmp(PQcmdTuples(res), "1") != 0;
		PQclear(res);
		res = NULL;
	}
	measure_end(c);
	c->ops = k;
	if (wrong)
		invalid(c, "%d single statements did not affect exactly one row", wrong);
	if (nosync)
		CK(pgb_exec(c->fx->admin, "RESET synchronous_commit", NULL), "RESET");
	nosync = 0;
	/* Undo exactly the keys used (a window of the edit set, wrapping). */
	if (first % e.n + k <= e.n) {
		editset w = e;
		w.edits += first % e.n;
		w.slots += first % e.n;
		CK(plain_undo(c, &w, k), "undoing the singles");
	} else {
		CK(plain_undo(c, &e, e.n), "undoing the singles");
	}
out:
	if (nosync)
		(void)pgb_exec(c->fx->admin, "RESET synchronous_commit", NULL);
	PQclear(res);
	editset_free(&e);
	return rc;
}

typedef int (*cell_fn)(cell *c);
static const cell_fn cell_fns[N_OPS] = {
	cell_build, cell_scan,  cell_scan,   cell_get,   cell_get,    cell_get_nocache, cell_get_many,
	cell_range, cell_batch, cell_single, cell_single, cell_diff, cell_merge,
};
/* The plain-table analogue of each op (NULL: none); one cell serves two ops where the plain
 * table makes no difference (scan and scan_warm, get_cold and get_warm). */
static const cell_fn plain_fns[N_OPS] = {
	plain_build, plain_scan,  NULL,         plain_get, NULL, NULL, plain_get_any,
	plain_range, plain_batch, plain_single, plain_single, NULL, NULL,
};

/* ------------------------------------------------------------------------------------------ */
/* Running cells, emitting rows                                                               */
/* ------------------------------------------------------------------------------------------ */

static FILE *csv_file;
static volatile pid_t fixture_child; /* the running fixture's process (parent side), or 0 */
static int row_fd = -1;       /* child: rows go to the parent through this pipe */
static bench_row *all_rows;   /* parent (or --no-fork): every row, for the target table */
static size_t n_rows, cap_rows;

static void keep_row(const bench_row *r)
{
	if (n_rows == cap_rows) {
		size_t cap = cap_rows ? cap_rows * 2 : 64;
		bench_row *p = realloc(all_rows, cap * sizeof(*p));
		if (!p) {
			fprintf(stderr, "warning: out of memory keeping rows for the target table\n");
			return;
		}
		all_rows = p;
		cap_rows = cap;
	}
	all_rows[n_rows++] = *r;
}

static void emit_row(const bench_row *r)
{
	csv_row(csv_file, r);
	fflush(csv_file);
	md_row(stdout, r);
	fflush(stdout);
	if (row_fd >= 0) {
		const char *p = (const char *)r;
		size_t left = sizeof(*r);
		while (left) {
			ssize_t w = write(row_fd, p, left);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				fprintf(stderr, "warning: cannot pass a row to the parent: %s\n",
				        strerror(errno));
				break;
			}
			p += w;
			left -= (size_t)w;
		}
	}
	/* A fixture's process keeps its plain-table rows too: its pg rows compare with them. */
	if (row_fd < 0 || !strcmp(r->store, PLAIN_STORE))
		keep_row(r);
}

static void row_init(bench_row *r, const fixture *fx, int op, int pattern)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->stamp, sizeof(r->stamp), "%s", fx->cfg->stamp);
	r->seed = fx->cfg->seed;
	r->size = fx->n;
	snprintf(r->store, sizeof(r->store), "%s", store_names[fx->store]);
	snprintf(r->op, sizeof(r->op), "%s", op_names[op]);
	snprintf(r->pattern, sizeof(r->pattern), "%s", pattern < 0 ? "-" : pattern_names[pattern]);
	r->server_cpu_ms = -1;
}

static void plain_row_init(bench_row *r, const fixture *fx, int op, int pattern)
{
	row_init(r, fx, op, pattern);
	snprintf(r->store, sizeof(r->store), "%s", PLAIN_STORE);
	snprintf(r->op, sizeof(r->op), "%s", plain_op_names[op]);
}

static const bench_row *find_row(uint64_t size, const char *store, const char *op,
                                 const char *pattern);

/* The plain-table row a Prolly pg row compares with, or NULL. */
static const bench_row *plain_match(const bench_row *r)
{
	for (int op = 0; op < N_OPS; op++)
		if (!strcmp(r->op, op_names[op]))
			return plain_op_names[op] ? find_row(r->size, PLAIN_STORE, plain_op_names[op], r->pattern)
			                          : NULL;
	return NULL;
}

static int sample_cmp(const void *a, const void *b)
{
	const sample *x = a, *y = b;
	return dbl_cmp(&x->ms, &y->ms);
}

/* Runs one cell --runs times and emits its row. Returns 0, or the engine error of the last
 * run (the row is then invalid). With emit 0 (an untimed fixture build) nothing is printed.
 * With plain set it runs the plain-table analogue of op instead (pg fixtures only). */
static int run_cell(fixture *fx, int op, int pattern, int emit, int plain)
{
	const config *cfg = fx->cfg;
	static sample samples[MAX_RUNS];
	cell c;
	memset(&c, 0, sizeof(c));
	c.fx = fx;
	c.op = op;
	c.pattern = pattern;
	c.plain = plain;
	c.valid = 1;
	unsigned runs = emit ? cfg->runs : 1, done = 0;
	int rc = 0;
	char label[64];
	snprintf(label, sizeof(label), "%s%s%s%s", plain ? "plain " : "",
	         plain ? plain_op_names[op] : op_names[op], pattern < 0 ? "" : "/",
	         pattern < 0 ? "" : pattern_names[pattern]);
	for (unsigned run = 0; run < runs; run++) {
		c.run = run;
		memset(&c.cur, 0, sizeof(c.cur));
		rc = (plain ? plain_fns : cell_fns)[op](&c);
		if (rc != 0) {
			fprintf(stderr, "[%" PRIu64 " %s] %s run %u/%u FAILED: %s\n", fx->n,
			        store_names[fx->store], label, run + 1, runs, c.note);
			break;
		}
		samples[done++] = c.cur;
		fprintf(stderr, "[%" PRIu64 " %s] %s run %u/%u: %.3f ms%s\n", fx->n,
		        store_names[fx->store], label, run + 1, runs, c.cur.ms,
		        c.valid ? "" : " (INVALID)");
		if (c.cur.ms > cfg->max_cell_s * 1000.0 && run + 1 < runs) {
			if (!c.note[0])
				snprintf(c.note, sizeof(c.note),
				         "stopped after %u of %u runs: a run took longer than %.0f s", done,
				         runs, cfg->max_cell_s);
			break;
		}
	}
	if (!emit)
		return rc;
	bench_row r;
	if (plain)
		plain_row_init(&r, fx, op, pattern);
	else
		row_init(&r, fx, op, pattern);
	r.runs = done;
	r.ops = c.ops;
	r.valid = c.valid && done > 0;
	if (done) {
		qsort(samples, done, sizeof(samples[0]), sample_cmp);
		const sample *m = &samples[(done - 1) / 2];
		r.ms_min = samples[0].ms;
		r.ms_max = samples[done - 1].ms;
		/* Even count: the mean of the two middle runs; counters of the lower one. */
		r.ms_median = done % 2 ? m->ms : (m->ms + samples[done / 2].ms) / 2;
		r.ops_per_s = r.ms_median > 0 ? (double)c.ops * 1000.0 / r.ms_median : 0;
		r.us_per_op = c.ops ? r.ms_median * 1000.0 / (double)c.ops : 0;
		r.st = m->st;
		r.cpu_ms = m->cpu_ms;
		r.minor_faults = m->minflt;
		r.store_read_ms = (double)m->read_ns / 1e6;
		r.store_write_ms = (double)m->write_ns / 1e6;
		r.durable_writes = m->durable_writes;
		r.server_cpu_ms = m->srv_ms;
	}
	snprintf(r.note, sizeof(r.note), "%s", c.note);
	if (op == OP_BUILD && !plain && !r.note[0])
		snprintf(r.note, sizeof(r.note), "%s", fx->shape);
	if (fx->store == STORE_PG && !plain && r.valid) {
		const bench_row *p = plain_match(&r);
		if (p && p->valid && p->us_per_op > 0) /* per operation: get_nocache does fewer gets */
			r.vs_plain = r.us_per_op / p->us_per_op;
	}
	r.peak_rss_mib = peak_rss_mib();
	current_rss_mib(&r.rss_anon_mib, &r.rss_file_mib);
	r.load1 = load1();
	emit_row(&r);
	return rc;
}

/* Is the plain analogue of op wanted (op or its sibling selected)? */
static int plain_wanted(const config *cfg, int op)
{
	unsigned m = cfg->ops;
	switch (op) {
	case OP_SCAN:
		return ((m >> OP_SCAN) | (m >> OP_SCAN_WARM)) & 1;
	case OP_GET_COLD:
		return ((m >> OP_GET_COLD) | (m >> OP_GET_WARM) | (m >> OP_GET_NOCACHE)) & 1;
	default:
		return plain_fns[op] && ((m >> op) & 1);
	}
}

/* pg fixture, before the Prolly cells: the admin connection, then the plain-table baseline
 * (in its own schema, dropped when done). 0, or 1 when the server cannot be reached. */
static int pg_fixture_begin(fixture *fx)
{
	const config *cfg = fx->cfg;
	char q[160], sql[256];
	if (pgb_connect(&fx->admin, cfg->pg_url) != 0) {
		fprintf(stderr, "[%" PRIu64 " pg] %s\n", fx->n, prolly_last_error());
		return 1;
	}
	if (cfg->pg_statements) { /* per fixture; needs the superuser or pg_read_all_stats */
		PGresult *res = NULL;
		if (pgb_exec(fx->admin, "SELECT pg_stat_statements_reset()", &res) != 0)
			fprintf(stderr, "note: pg_stat_statements_reset: %s\n", prolly_last_error());
		PQclear(res);
	}
	if (cfg->no_baseline)
		return 0;
	snprintf(fx->plain_schema, sizeof(fx->plain_schema), "prolly_bench_plain_%ld_%" PRIu64,
	         (long)getpid(), fx->n);
	if (pgb_ident(q, sizeof(q), fx->plain_schema) != 0)
		return 1;
	snprintf(fx->plain_table, sizeof(fx->plain_table), "%s.kv", q);
	snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", q);
	if (pgb_exec(fx->admin, sql, NULL) != 0) {
		fprintf(stderr, "[%" PRIu64 " pg] %s\n", fx->n, prolly_last_error());
		fx->plain_schema[0] = '\0';
		return 1;
	}
	fprintf(stderr, "[%" PRIu64 " pg] plain-table baseline\n", fx->n);
	int rc = run_cell(fx, OP_BUILD, -1, (cfg->ops >> OP_BUILD) & 1, 1);
	if (rc == 0) {
		for (int op = OP_BUILD + 1; op < FIRST_PATTERN_OP; op++)
			if (plain_fns[op] && plain_wanted(cfg, op))
				run_cell(fx, op, -1, 1, 1);
		for (int p = 0; p < N_PATTERNS; p++) {
			if (!((cfg->patterns >> p) & 1))
				continue;
			for (int op = FIRST_PATTERN_OP; op < N_OPS; op++)
				if (plain_fns[op] && plain_wanted(cfg, op))
					run_cell(fx, op, p, 1, 1);
		}
	} else {
		fprintf(stderr, "[%" PRIu64 " pg] no plain table: the baseline is skipped\n", fx->n);
	}
	drop_schema(fx, fx->plain_schema);
	fx->plain_schema[0] = '\0';
	if (pgb_exec(fx->admin, "CHECKPOINT", NULL) != 0) /* the Prolly build starts clean too */
		fprintf(stderr, "note: CHECKPOINT: %s\n", prolly_last_error());
	return 0;
}

static void pg_fixture_end(fixture *fx)
{
	if (fx->plain_schema[0])
		drop_schema(fx, fx->plain_schema);
	fx->plain_schema[0] = '\0';
	PQfinish(fx->admin);
	fx->admin = NULL;
}

/* --pg-statements N: the fixture's top statements by total execution time (stderr). */
static void pg_top_statements(fixture *fx)
{
	PGresult *res = NULL;
	char sql[512];
	if (!fx->cfg->pg_statements || !fx->admin)
		return;
	snprintf(sql, sizeof(sql),
	         "SELECT calls::text, round(total_exec_time::numeric, 1)::text, "
	         "round(mean_exec_time::numeric, 4)::text, rows::text, "
	         "(shared_blks_hit + shared_blks_read)::text, shared_blks_read::text, "
	         "left(regexp_replace(query, '\\s+', ' ', 'g'), 110) "
	         "FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT %d",
	         fx->cfg->pg_statements);
	if (pgb_exec(fx->admin, sql, &res) != 0) {
		fprintf(stderr, "note: pg_stat_statements: %s\n", prolly_last_error());
		return;
	}
	fprintf(stderr, "\n[%" PRIu64 " pg] pg_stat_statements, top %d by total time "
	                "(whole fixture, baseline included):\n"
	                "| calls | total ms | mean ms | rows | blocks | read | query |\n"
	                "|---:|---:|---:|---:|---:|---:|---|\n",
	        fx->n, fx->cfg->pg_statements);
	for (int i = 0; i < PQntuples(res); i++) {
		fprintf(stderr, "|");
		for (int j = 0; j < 7; j++)
			fprintf(stderr, " %.*s |", PQgetlength(res, i, j), PQgetvalue(res, i, j));
		fprintf(stderr, "\n");
	}
	fprintf(stderr, "\n");
	PQclear(res);
}

/* Everything for one size and store. Returns 0, or 1 if the fixture could not be built. */
static int run_fixture(const config *cfg, uint64_t n, int store)
{
	fixture *fx = calloc(1, sizeof(*fx));
	if (!fx) {
		fprintf(stderr, "error: out of memory\n");
		return 1;
	}
	fx->cfg = cfg;
	fx->n = n;
	fx->store = store;
	fprintf(stderr, "[%" PRIu64 " %s] fixture\n", n, store_names[store]);
	if (store == STORE_PG && pg_fixture_begin(fx) != 0) {
		pg_fixture_end(fx);
		free(fx);
		return 1;
	}
	int rc = run_cell(fx, OP_BUILD, -1, (cfg->ops >> OP_BUILD) & 1, 0);
	if (rc != 0 || !fx->have_base || !fx->db) {
		fprintf(stderr, "[%" PRIu64 " %s] no base tree: skipping this fixture\n", n,
		        store_names[store]);
		fixture_close(fx);
		pg_fixture_end(fx);
		free(fx);
		return 1;
	}
	for (int op = OP_BUILD + 1; op < FIRST_PATTERN_OP; op++)
		if ((cfg->ops >> op) & 1)
			run_cell(fx, op, -1, 1, 0);
	for (int p = 0; p < N_PATTERNS; p++) {
		if (!((cfg->patterns >> p) & 1))
			continue;
		for (int op = FIRST_PATTERN_OP; op < N_OPS; op++)
			if ((cfg->ops >> op) & 1)
				run_cell(fx, op, p, 1, 0);
	}
	if (store == STORE_PG)
		pg_top_statements(fx);
	fixture_close(fx);
	pg_fixture_end(fx);
	free(fx);
	return 0;
}

/* Runs a fixture in a child process, collecting its rows through a pipe. */
static void run_fixture_forked(const config *cfg, uint64_t n, int store)
{
	int fds[2];
	fflush(stdout);
	fflush(stderr);
	fflush(csv_file);
	if (pipe(fds) != 0) {
		fprintf(stderr, "warning: pipe failed (%s): running in this process\n", strerror(errno));
		run_fixture(cfg, n, store);
		return;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "warning: fork failed (%s): running in this process\n", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		run_fixture(cfg, n, store);
		return;
	}
	if (pid == 0) {
		fixture_child = 0;
		close(fds[0]);
		row_fd = fds[1];
		int bad = run_fixture(cfg, n, store);
		fflush(stdout);
		fflush(stderr);
		fflush(csv_file);
		close(row_fd);
		_exit(bad ? 3 : 0);
	}
	fixture_child = pid;
	close(fds[1]);
	bench_row r;
	size_t got = 0;
	for (;;) {
		ssize_t k = read(fds[0], (char *)&r + got, sizeof(r) - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
		if (got == sizeof(r)) {
			keep_row(&r);
			got = 0;
		}
	}
	close(fds[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	fixture_child = 0;
	if (WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
	                            WEXITSTATUS(status) != 3)) {
		fixture dummy;
		memset(&dummy, 0, sizeof(dummy));
		dummy.cfg = cfg;
		dummy.n = n;
		dummy.store = store;
		bench_row f;
		row_init(&f, &dummy, OP_BUILD, -1);
		snprintf(f.op, sizeof(f.op), "(fixture)");
		if (WIFSIGNALED(status))
			snprintf(f.note, sizeof(f.note), "benchmark process died of signal %d (%s)",
			         WTERMSIG(status), strsignal(WTERMSIG(status)));
		else
			snprintf(f.note, sizeof(f.note), "benchmark process exited with status %d",
			         WEXITSTATUS(status));
		fprintf(stderr, "[%" PRIu64 " %s] %s\n", n, store_names[store], f.note);
		row_fd = -1;
		emit_row(&f);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Target table                                                                               */
/* ------------------------------------------------------------------------------------------ */

/*
 * M_ENGINE_US: per-operation time spent outside the store's write call (the edit, encoding,
 * hashing, txn bookkeeping), i.e. the commit "before the disk sync". The LMDB store cannot skip
 * its sync: every LMDB commit flushes the data pages (MDB_NOMETASYNC), and a durable write adds a
 * second flush for the meta page, so the wrapper's nosync variant only removes the second one.
 */
enum { M_RATE, M_MS, M_US_PER_OP, M_ENGINE_US, M_RSS, M_ANON, M_RT_PER_OP };

typedef struct target {
	const char *what;
	const char *store, *op, *pattern;
	int metric;
	double goal;     /* rate: at least; others: at most; 0: information only */
	const char *goal_text;
} target;

static const target targets[] = {
	{"build", "lmdb", "build", "-", M_RATE, 1.5e6, ">= 1.5M records/s"},
	{"full scan (cold cache)", "lmdb", "scan", "-", M_RATE, 10e6, ">= 10M records/s"},
	{"full scan (warm cache, info)", "lmdb", "scan_warm", "-", M_RATE, 0, "-"},
	{"10k point gets, cold cache", "lmdb", "get_cold", "-", M_MS, 20, "<= 20 ms"},
	{"10k random updates", "lmdb", "batch", "update", M_MS, 100, "<= 100 ms"},
	{"10k random updates", "mem", "batch", "update", M_MS, 40, "<= 40 ms"},
	{"10k random inserts", "lmdb", "batch", "insert", M_MS, 120, "<= 120 ms"},
	{"10k random deletes", "lmdb", "batch", "delete", M_MS, 120, "<= 120 ms"},
	{"single-edit commit, before the store write (sync)", "lmdb", "single", "update",
	 M_ENGINE_US, 200, "<= 0.2 ms"},
	{"single-edit commit, durable (info)", "lmdb", "single", "update", M_US_PER_OP, 0, "-"},
	{"single-edit commit, one sync instead of two (info)", "lmdb", "single_nosync", "update",
	 M_US_PER_OP, 0, "-"},
	{"diff after 10k random updates", "lmdb", "diff", "update", M_MS, 40, "<= 40 ms"},
	{"merge of two disjoint 5k branches", "lmdb", "merge", "update", M_MS, 100, "<= 100 ms"},
	{"peak memory (peak RSS of the LMDB process)", "lmdb", NULL, NULL, M_RSS, 600, "<= 600 MiB"},
	{"anonymous (private) memory, highest at a cell's end (info)", "lmdb", NULL, NULL, M_ANON, 0,
	 "-"},
};

static const bench_row *find_row(uint64_t size, const char *store, const char *op,
                                 const char *pattern)
{
	for (size_t i = 0; i < n_rows; i++) {
		const bench_row *r = &all_rows[i];
		if (r->size == size && !strcmp(r->store, store) && !strcmp(r->op, op) &&
		    !strcmp(r->pattern, pattern))
			return r;
	}
	return NULL;
}

/* The target's metric from wall time (by_cpu 0) or process CPU time (1); -1 if none. */
static double metric_of(const target *g, const bench_row *r, int by_cpu)
{
	double ms = by_cpu ? r->cpu_ms : r->ms_median;
	if (ms <= 0 || !r->ops)
		return -1;
	switch (g->metric) {
	case M_RATE:
		return (double)r->ops * 1000.0 / ms;
	case M_MS:
		return ms;
	case M_US_PER_OP:
		return ms * 1000.0 / (double)r->ops;
	case M_ENGINE_US:
		return by_cpu ? -1 : (ms - r->store_write_ms) * 1000.0 / (double)r->ops;
	case M_RT_PER_OP:
		return by_cpu ? -1 : (double)r->st.store_round_trips / (double)r->ops;
	default:
		return -1;
	}
}

static void format_metric(char *buf, size_t n, int metric, double v)
{
	if (v < 0) {
		snprintf(buf, n, "-");
		return;
	}
	switch (metric) {
	case M_RATE:
		snprintf(buf, n, "%.2fM records/s", v / 1e6);
		break;
	case M_MS:
		snprintf(buf, n, "%.2f ms", v);
		break;
	case M_US_PER_OP:
	case M_ENGINE_US:
		snprintf(buf, n, "%.3f ms", v / 1000.0);
		break;
	case M_RT_PER_OP:
		snprintf(buf, n, "%.2f round trips", v);
		break;
	default:
		snprintf(buf, n, "%.0f MiB", v);
		break;
	}
}

static void print_targets(const config *cfg)
{
	uint64_t size = 0;
	for (int i = 0; i < cfg->n_sizes; i++)
		if (cfg->sizes[i] == 1000000 || (size != 1000000 && cfg->sizes[i] > size))
			size = cfg->sizes[i];
	char hs[32];
	printf("\n### Targets vs measured (%s records%s)\n\n", human_count(hs, sizeof(hs), (double)size),
	       size == 1000000 ? "" : "; the targets are stated for 1M");
	printf("Status is judged on wall time; the CPU column gives the same figure computed from the\n"
	       "process CPU time of the same run (lower when the run waited for the disk or for a\n"
	       "busy CPU).\n\n");
	int comparable = size == 1000000 && cfg->changes == 10000 && cfg->reads == 10000;
	if (!comparable)
		printf("The workload differs from the one the targets state (1M records, 10k changes and\n"
		       "reads), so each status is shown in parentheses.\n\n");
	printf("| target | store | goal | measured (wall) | from CPU time | status |\n"
	       "|---|---|---|---:|---:|---|\n");
	for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
		const target *g = &targets[t];
		double v = -1, vc = -1;
		int valid = 1;
		if (g->metric == M_RSS || g->metric == M_ANON) {
			for (size_t i = 0; i < n_rows; i++) {
				const bench_row *r = &all_rows[i];
				double m = g->metric == M_RSS ? r->peak_rss_mib : r->rss_anon_mib;
				if (r->size == size && !strcmp(r->store, g->store) && m > v)
					v = m;
			}
		} else {
			const bench_row *r = find_row(size, g->store, g->op, g->pattern);
			if (r && r->runs) {
				valid = r->valid;
				v = metric_of(g, r, 0);
				vc = metric_of(g, r, 1);
			}
		}
		char meas[64], cpu[64];
		const char *status;
		format_metric(meas, sizeof(meas), g->metric, v);
		format_metric(cpu, sizeof(cpu), g->metric, vc);
		if (v < 0) {
			snprintf(meas, sizeof(meas), "not measured");
			status = "-";
		} else if (!valid) {
			status = "INVALID";
		} else if (g->goal == 0) {
			status = "info";
		} else if (g->metric == M_RATE) {
			status = v >= g->goal ? "met" : "missed";
		} else {
			status = v <= g->goal ? "met" : "missed";
		}
		printf("| %s | %s | %s | %s | %s | %s%s%s |\n", g->what, g->store, g->goal_text, meas, cpu,
		       comparable || v < 0 ? "" : "(", status, comparable || v < 0 ? "" : ")");
	}
	fflush(stdout);
}


/*
 * Issue 3's targets for the PostgreSQL store at 10M records (PostgreSQL on the same machine).
 * The round-trip target is "at most one per tree level": its goal is the base tree's height,
 * read from the build row's note. Random inserts and deletes have no goal ("measured").
 */
static const target pg_targets[] = {
	{"build", "pg", "build", "-", M_MS, 6000, "<= 6 s"},
	{"full scan (cold cache)", "pg", "scan", "-", M_MS, 3000, "<= 3 s"},
	{"cold point get (cache cleared before each get)", "pg", "get_nocache", "-", M_US_PER_OP, 400,
	 "<= 0.4 ms"},
	{"cold point get: store round trips per get", "pg", "get_nocache", "-", M_RT_PER_OP, -1,
	 "<= 1 per level"},
	{"10k point gets after one cache clear, per get (info)", "pg", "get_cold", "-", M_US_PER_OP,
	 0, "-"},
	{"10k random get_many", "pg", "get_many", "-", M_MS, 200, "<= 200 ms"},
	{"10k random update batch", "pg", "batch", "update", M_MS, 600, "<= 0.6 s"},
	{"single random put committed", "pg", "single", "update", M_US_PER_OP, 1500, "<= 1.5 ms"},
	{"diff after 10k random updates", "pg", "diff", "update", M_MS, 300, "<= 0.3 s"},
	{"merge of two disjoint 5k branches", "pg", "merge", "update", M_MS, 800, "<= 0.8 s"},
	{"append merge (10k appended keys)", "pg", "merge", "append", M_MS, 50, "<= 50 ms"},
	{"10k random inserts (measured)", "pg", "batch", "insert", M_MS, 0, "-"},
	{"10k random deletes (measured)", "pg", "batch", "delete", M_MS, 0, "-"},
};

static void print_pg_targets(const config *cfg)
{
	uint64_t size = 0;
	for (size_t i = 0; i < n_rows; i++)
		if (!strcmp(all_rows[i].store, "pg") && all_rows[i].size > size)
			size = all_rows[i].size;
	if (!size)
		return;
	unsigned height = 0;
	const bench_row *b = find_row(size, "pg", "build", "-");
	if (!b || sscanf(b->note, "height %u", &height) != 1)
		height = 0;
	char hs[32];
	int comparable = size == 10000000 && cfg->changes == 10000 && cfg->reads == 10000;
	printf("\n### PostgreSQL targets vs measured (%s records%s)\n\n",
	       human_count(hs, sizeof(hs), (double)size),
	       size == 10000000 ? "" : "; the targets are stated for 10M");
	if (!comparable)
		printf("The workload differs from the one the targets state (10M records, 10k changes and\n"
		       "reads), so each status is shown in parentheses.\n\n");
	printf("Wall time decides the status. \"vs plain\" is the Prolly cell's time over the plain\n"
	       "table's for the same work (see the pg-plain rows).\n\n");
	printf("| target | store | goal | measured (wall) | from CPU time | vs plain | status |\n"
	       "|---|---|---|---:|---:|---:|---|\n");
	for (size_t t = 0; t < sizeof(pg_targets) / sizeof(pg_targets[0]); t++) {
		target g = pg_targets[t];
		char goal_text[64];
		snprintf(goal_text, sizeof(goal_text), "%s", g.goal_text);
		if (g.goal < 0) {
			g.goal = height;
			if (height)
				snprintf(goal_text, sizeof(goal_text), "<= %u (height)", height);
		}
		double v = -1, vc = -1, vp = 0;
		int valid = 1;
		const bench_row *r = find_row(size, g.store, g.op, g.pattern);
		if (r && r->runs) {
			valid = r->valid;
			v = metric_of(&g, r, 0);
			vc = metric_of(&g, r, 1);
			vp = r->vs_plain;
		}
		char meas[64], cpu[64], vps[32];
		const char *status;
		format_metric(meas, sizeof(meas), g.metric, v);
		format_metric(cpu, sizeof(cpu), g.metric, vc);
		if (vp > 0 && g.metric != M_RT_PER_OP)
			snprintf(vps, sizeof(vps), "%.2fx", vp);
		else
			snprintf(vps, sizeof(vps), "-");
		if (v < 0) {
			snprintf(meas, sizeof(meas), "not measured");
			status = "-";
		} else if (!valid) {
			status = "INVALID";
		} else if (g.goal == 0) {
			status = "info";
		} else {
			status = v <= g.goal ? "met" : "missed";
		}
		printf("| %s | %s | %s | %s | %s | %s | %s%s%s |\n", g.what, g.store, goal_text, meas, cpu,
		       vps, comparable || v < 0 ? "" : "(", status, comparable || v < 0 ? "" : ")");
	}
	fflush(stdout);
}

/* ------------------------------------------------------------------------------------------ */
/* Options                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: scale [options]\n"
	        "Serial large-tree benchmark of prolly: sizes x stores x operations x patterns.\n"
	        "Rows are appended to the CSV file and printed as a Markdown table on stdout;\n"
	        "progress goes to stderr.\n\n"
	        "  --sizes LIST        base tree sizes (default 100000,1000000; k/M suffixes ok)\n"
	        "  --stores LIST       mem,lmdb,pg (default all three). pg uses $PROLLY_PG_URL, or\n"
	        "                      a throwaway cluster from scripts/pg-cluster.sh (stopped at\n"
	        "                      the end); each store in a fresh schema, dropped afterwards;\n"
	        "                      pg fixtures also run the plain-table baseline (pg-plain rows)\n"
	        "  --ops LIST          operations (default all):\n"
	        "                      build scan scan_warm get_cold get_warm get_nocache get_many\n"
	        "                      range\n"
	        "                      batch single single_nosync diff merge\n"
	        "  --patterns LIST     edit patterns for batch..merge (default all):\n"
	        "                      append update clustered insert delete\n"
	        "  --runs N            runs per cell, median reported (default 3, max %d)\n"
	        "  --changes N         edits per batch, diff and merge (default 10000)\n"
	        "  --reads N           keys per get/get_many/range cell (default 10000)\n"
	        "  --singles N         commits per single-edit cell (default 100)\n"
	        "  --seed N            workload seed (default 42)\n"
	        "  --dir DIR           scratch directory for LMDB stores (default /tmp)\n"
	        "  --cache-mb N        decoded-node cache budget in MiB (default 256)\n"
	        "  --flush-mb N        builder flush size in MiB (default: the library's, 4)\n"
	        "  --csv FILE          CSV output, appended (default build/bench/scale.csv)\n"
	        "  --max-cell-seconds S  skip a cell's remaining runs after a run this long (60)\n"
	        "  --no-fork           run every fixture in this process\n"
	        "  --keep              keep the LMDB directories and the pg schemas\n"
	        "  --no-baseline       pg: skip the plain-table baseline\n"
	        "  --pg-statements N   pg: print the top N pg_stat_statements entries of each\n"
	        "                      fixture on stderr (default 0: none)\n"
	        "  --help              this text\n",
	        MAX_RUNS);
}

static int parse_u64_opt(const char *name, const char *arg, uint64_t *out)
{
	if (parse_count(arg, out) != 0) {
		fprintf(stderr, "error: %s: not a count: %s\n", name, arg);
		return -1;
	}
	return 0;
}

/* Returns 0 to go on, 1 to exit successfully (--help), -1 on a bad option. */
static int parse_args(config *cfg, int argc, char **argv)
{
	enum {
		O_SIZES = 256, O_STORES, O_OPS, O_PATTERNS, O_RUNS, O_CHANGES, O_READS, O_SINGLES,
		O_SEED, O_DIR, O_CACHE, O_FLUSH, O_CSV, O_MAXCELL, O_NOFORK, O_KEEP, O_HELP,
		O_NOBASE, O_PGSTMTS
	};
	static const struct option longs[] = {
		{"sizes", required_argument, NULL, O_SIZES},
		{"stores", required_argument, NULL, O_STORES},
		{"ops", required_argument, NULL, O_OPS},
		{"patterns", required_argument, NULL, O_PATTERNS},
		{"runs", required_argument, NULL, O_RUNS},
		{"changes", required_argument, NULL, O_CHANGES},
		{"reads", required_argument, NULL, O_READS},
		{"singles", required_argument, NULL, O_SINGLES},
		{"seed", required_argument, NULL, O_SEED},
		{"dir", required_argument, NULL, O_DIR},
		{"cache-mb", required_argument, NULL, O_CACHE},
		{"flush-mb", required_argument, NULL, O_FLUSH},
		{"csv", required_argument, NULL, O_CSV},
		{"max-cell-seconds", required_argument, NULL, O_MAXCELL},
		{"no-fork", no_argument, NULL, O_NOFORK},
		{"keep", no_argument, NULL, O_KEEP},
		{"no-baseline", no_argument, NULL, O_NOBASE},
		{"pg-statements", required_argument, NULL, O_PGSTMTS},
		{"help", no_argument, NULL, O_HELP},
		{NULL, 0, NULL, 0},
	};
	char bad[64];
	uint64_t v;
	int o;
	while ((o = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (o) {
		case O_SIZES:
			cfg->n_sizes = parse_count_list(optarg, cfg->sizes, MAX_SIZES);
			if (cfg->n_sizes < 0) {
				fprintf(stderr, "error: --sizes: expected up to %d positive counts: %s\n",
				        MAX_SIZES, optarg);
				return -1;
			}
			break;
		case O_STORES:
			if (parse_name_list(optarg, store_names, N_STORES, &cfg->stores, bad, sizeof(bad))) {
				fprintf(stderr, "error: --stores: unknown store '%s' (mem, lmdb, pg)\n", bad);
				return -1;
			}
			break;
		case O_OPS:
			if (parse_name_list(optarg, op_names, N_OPS, &cfg->ops, bad, sizeof(bad))) {
				fprintf(stderr, "error: --ops: unknown operation '%s' (see --help)\n", bad);
				return -1;
			}
			break;
		case O_PATTERNS:
			if (parse_name_list(optarg, pattern_names, N_PATTERNS, &cfg->patterns, bad,
			                    sizeof(bad))) {
				fprintf(stderr, "error: --patterns: unknown pattern '%s' (see --help)\n", bad);
				return -1;
			}
			break;
		case O_RUNS:
			if (parse_u64_opt("--runs", optarg, &v) || v < 1 || v > MAX_RUNS) {
				fprintf(stderr, "error: --runs must be 1..%d\n", MAX_RUNS);
				return -1;
			}
			cfg->runs = (unsigned)v;
			break;
		case O_CHANGES:
			if (parse_u64_opt("--changes", optarg, &cfg->changes))
				return -1;
			break;
		case O_READS:
			if (parse_u64_opt("--reads", optarg, &cfg->reads))
				return -1;
			break;
		case O_SINGLES:
			if (parse_u64_opt("--singles", optarg, &cfg->singles) || cfg->singles == 0) {
				fprintf(stderr, "error: --singles must be at least 1\n");
				return -1;
			}
			break;
		case O_SEED:
			if (parse_u64_opt("--seed", optarg, &cfg->seed))
				return -1;
			break;
		case O_DIR:
			cfg->dir = optarg;
			break;
		case O_CACHE:
			if (parse_u64_opt("--cache-mb", optarg, &v) || v > (1u << 20)) {
				fprintf(stderr, "error: --cache-mb: 0..%u\n", 1u << 20);
				return -1;
			}
			cfg->cache_mb = (size_t)v;
			break;
		case O_FLUSH:
			if (parse_u64_opt("--flush-mb", optarg, &v) || v > (1u << 20)) {
				fprintf(stderr, "error: --flush-mb: 0..%u\n", 1u << 20);
				return -1;
			}
			cfg->flush_mb = (size_t)v;
			break;
		case O_CSV:
			cfg->csv = optarg;
			break;
		case O_MAXCELL: {
			char *end;
			cfg->max_cell_s = strtod(optarg, &end);
			if (*end || cfg->max_cell_s <= 0) {
				fprintf(stderr, "error: --max-cell-seconds: not a positive number: %s\n",
				        optarg);
				return -1;
			}
			break;
		}
		case O_NOFORK:
			cfg->no_fork = 1;
			break;
		case O_KEEP:
			cfg->keep = 1;
			break;
		case O_NOBASE:
			cfg->no_baseline = 1;
			break;
		case O_PGSTMTS:
			if (parse_u64_opt("--pg-statements", optarg, &v) || v > 1000) {
				fprintf(stderr, "error: --pg-statements: 0..1000\n");
				return -1;
			}
			cfg->pg_statements = (int)v;
			break;
		case O_HELP:
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "error: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return -1;
	}
	return 0;
}

static void print_machine(const config *cfg, int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
	char model[128] = "?";
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f) {
		char line[256];
		while (fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':');
			if (strncmp(line, "model name", 10) == 0 && colon) {
				snprintf(model, sizeof(model), "%s", colon + 2);
				model[strcspn(model, "\n")] = '\0';
				break;
			}
		}
		fclose(f);
	}
	printf("## prolly scale benchmark\n\n");
	printf("- date: %s\n", cfg->stamp);
	printf("- machine: %ld CPUs (%s), %.1f GiB memory\n", cpus, model, mem / 1073741824.0);
	printf("- command:");
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n- workload: %d-byte keys, %d-byte values, seed %" PRIu64 ", %u run(s) per cell, "
	       "%" PRIu64 " changes, %" PRIu64 " reads, %" PRIu64 " single commits, cache %zu MiB\n",
	       KEY_LEN, VAL_LEN, cfg->seed, cfg->runs, cfg->changes, cfg->reads, cfg->singles,
	       cfg->cache_mb);
	if (cfg->flush_mb)
		printf("- builder flush: %zu MiB\n", cfg->flush_mb);
	printf("- load average at start: %.2f (other processes compete for the CPUs when high)\n",
	       load1());
	printf("- csv: %s\n\n", cfg->csv);
	fflush(stdout);
}


/* ------------------------------------------------------------------------------------------ */
/* The throwaway PostgreSQL cluster                                                           */
/* ------------------------------------------------------------------------------------------ */

#define PG_SCRIPT "scripts/pg-cluster.sh"

static char cluster_dir[4096]; /* set while this process owns a running cluster */
static pid_t cluster_owner;

static void cluster_stop(void)
{
	if (!cluster_dir[0] || getpid() != cluster_owner)
		return;
	if (pgb_cluster_stop(PG_SCRIPT, cluster_dir) != 0) {
		static const char m[] = "warning: " PG_SCRIPT " stop failed\n";
		(void)!write(2, m, sizeof(m) - 1);
	}
	cluster_dir[0] = '\0';
}

/* SIGINT / SIGTERM / SIGHUP: stop the cluster (parent only), then die of the signal. */
static void cluster_signal(int sig)
{
	pid_t child = fixture_child;
	if (child > 0 && getpid() == cluster_owner) { /* the fixture first: it uses the server */
		kill(child, SIGKILL);
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
	}
	cluster_stop();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int cluster_start(config *cfg)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = cluster_signal;
	sigemptyset(&sa.sa_mask);
	cluster_owner = getpid();
	/* The handlers go in first: a signal during the start still stops what was started. */
	if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL) ||
	    sigaction(SIGHUP, &sa, NULL)) {
		fprintf(stderr, "error: sigaction: %s\n", strerror(errno));
		return -1;
	}
	if (atexit(cluster_stop) != 0) {
		fprintf(stderr, "error: atexit failed\n");
		return -1;
	}
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	int rc = pgb_cluster_start(PG_SCRIPT, cfg->pg_url, sizeof(cfg->pg_url), cfg->pg_dir,
	                           sizeof(cfg->pg_dir));
	sigprocmask(SIG_BLOCK, &block, &old);
	if (cfg->pg_dir[0])
		snprintf(cluster_dir, sizeof(cluster_dir), "%s", cfg->pg_dir);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return -1;
	char pidfile[4200];
	snprintf(pidfile, sizeof(pidfile), "%s/data/postmaster.pid", cfg->pg_dir);
	FILE *f = fopen(pidfile, "r");
	if (f) {
		if (fscanf(f, "%ld", &cfg->pg_postmaster) != 1)
			cfg->pg_postmaster = 0;
		fclose(f);
	}
	return 0;
}

/* The server's version and the settings that matter for these numbers, in the header. */
static int print_pg_settings(const config *cfg)
{
	PGconn *c = NULL;
	PGresult *res = NULL;
	if (pgb_connect(&c, cfg->pg_url) != 0) {
		fprintf(stderr, "error: %s\n", prolly_last_error());
		return -1;
	}
	int rc = pgb_exec(c,
	                  "SELECT string_agg(name || '=' || setting || coalesce(unit, ''), ', ' "
	                  "ORDER BY name) FROM pg_settings WHERE name IN ('shared_buffers', "
	                  "'work_mem', 'synchronous_commit', 'fsync', 'full_page_writes', "
	                  "'wal_level', 'max_wal_size', 'checkpoint_timeout', 'track_io_timing', "
	                  "'shared_preload_libraries', 'default_toast_compression', 'jit', "
	                  "'effective_cache_size', 'wal_compression', 'max_connections')",
	                  &res);
	if (rc != 0) {
		fprintf(stderr, "error: %s\n", prolly_last_error());
		PQfinish(c);
		return -1;
	}
	int v = PQserverVersion(c);
	printf("- PostgreSQL: server %d.%d, libpq %d, %s, same machine; settings: %.*s\n", v / 10000,
	       v % 10000, PQlibVersion(),
	       cfg->pg_dir[0] ? "throwaway cluster from " PG_SCRIPT " (Unix socket)"
	                      : "PROLLY_PG_URL (not printed)",
	       PQgetlength(res, 0, 0), PQgetvalue(res, 0, 0));
	PQclear(res);
	PQfinish(c);
	return 0;
}

int main(int argc, char **argv)
{
	config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.sizes[0] = 100000;
	cfg.sizes[1] = 1000000;
	cfg.n_sizes = 2;
	cfg.stores = (1u << N_STORES) - 1; /* mem, lmdb, pg */
	cfg.ops = (1u << N_OPS) - 1;
	cfg.patterns = (1u << N_PATTERNS) - 1;
	cfg.runs = 3;
	cfg.changes = 10000;
	cfg.reads = 10000;
	cfg.singles = 100;
	cfg.seed = 42;
	cfg.dir = "/tmp";
	cfg.cache_mb = 256;
	cfg.csv = "build/bench/scale.csv";
	cfg.max_cell_s = 60;

	int a = parse_args(&cfg, argc, argv);
	if (a != 0)
		return a > 0 ? 0 : 2;

	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(cfg.stamp, sizeof(cfg.stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);

	if ((cfg.stores >> STORE_LMDB) & 1) {
		snprintf(cfg.workdir, sizeof(cfg.workdir), "%s/prolly-scale-XXXXXX", cfg.dir);
		if (!mkdtemp(cfg.workdir)) {
			fprintf(stderr, "error: cannot create a scratch directory in %s: %s\n", cfg.dir,
			        strerror(errno));
			return 1;
		}
	}
	csv_file = csv_open(cfg.csv);
	if (!csv_file) {
		if (cfg.workdir[0])
			rm_tree(cfg.workdir);
		return 1;
	}

	int use_pg = (cfg.stores >> STORE_PG) & 1, pg_missing = 0;
	if (use_pg) {
		const char *url = getenv("PROLLY_PG_URL");
		int bad = 0;
		if (url && *url) {
			if (strlen(url) >= sizeof(cfg.pg_url)) {
				fprintf(stderr, "error: PROLLY_PG_URL is too long\n");
				bad = 1;
			} else {
				snprintf(cfg.pg_url, sizeof(cfg.pg_url), "%s", url);
			}
		} else {
			bad = cluster_start(&cfg) != 0;
		}
		PGconn *probe = NULL;
		if (!bad && pgb_connect(&probe, cfg.pg_url) != 0) {
			fprintf(stderr, "error: %s\n", prolly_last_error());
			bad = 1;
		}
		PQfinish(probe);
		if (bad) {
			/* The other stores still run; the exit status says that pg did not. */
			cluster_stop();
			cfg.stores &= ~(1u << STORE_PG);
			use_pg = 0;
			pg_missing = 1;
			fprintf(stderr, "error: no PostgreSQL server: the pg store is skipped%s\n",
			        cfg.stores ? "" : " (nothing else to run)");
			if (!cfg.stores) {
				fclose(csv_file);
				if (cfg.workdir[0])
					rm_tree(cfg.workdir);
				return 1;
			}
		}
	}

	print_machine(&cfg, argc, argv);
	if (use_pg && print_pg_settings(&cfg) != 0)
		printf("- PostgreSQL: settings could not be read (see stderr)\n");
	if (use_pg)
		printf("\n");
	md_header(stdout);
	uint64_t t0 = now_ns();
	for (int s = 0; s < cfg.n_sizes; s++) {
		for (int st = 0; st < N_STORES; st++) {
			if (!((cfg.stores >> st) & 1))
				continue;
			if (cfg.no_fork)
				run_fixture(&cfg, cfg.sizes[s], st);
			else
				run_fixture_forked(&cfg, cfg.sizes[s], st);
		}
	}
	if (cfg.stores & ((1u << STORE_MEM) | (1u << STORE_LMDB)))
		print_targets(&cfg);
	if (use_pg)
		print_pg_targets(&cfg);
	struct rusage self, kids;
	if (getrusage(RUSAGE_SELF, &self) == 0 && getrusage(RUSAGE_CHILDREN, &kids) == 0) {
		double cpu_s = (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
		                        kids.ru_stime.tv_sec) +
		               (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec +
		                        kids.ru_utime.tv_usec + kids.ru_stime.tv_usec) / 1e6;
		double srv = use_pg ? server_cpu_ms(cfg.pg_postmaster) : -1;
		printf("\n- wall %.1f s; CPU of the benchmark processes %.1f s", (double)(now_ns() - t0) / 1e9,
		       cpu_s);
		if (srv >= 0)
			printf("; CPU of the PostgreSQL server %.1f s", srv / 1000.0);
		printf("; load average at the end %.2f\n", load1());
		fflush(stdout);
	}

	size_t invalid_rows = 0;
	for (size_t i = 0; i < n_rows; i++)
		invalid_rows += !all_rows[i].valid;
	fprintf(stderr, "done in %.1f s: %zu rows, %zu invalid; csv: %s\n",
	        (double)(now_ns() - t0) / 1e9, n_rows, invalid_rows, cfg.csv);
	if (fclose(csv_file) != 0)
		fprintf(stderr, "warning: closing %s: %s\n", cfg.csv, strerror(errno));
	if (cfg.workdir[0] && !cfg.keep)
		rm_tree(cfg.workdir);
	free(all_rows);
	cluster_stop();
	return invalid_rows || pg_missing ? 1 : 0;
}
