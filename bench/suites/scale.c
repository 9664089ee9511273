/*
 * suites/scale.c - the harness's scale suite (hsc_*): the [scale] section of the workload run
 * through the scale engine (bench/scale/scale.h), one engine run per size, rows appended to
 * scale-raw.csv with the server-side counters around each cell.
 *
 * Names. The workload's operations and patterns are the engine's own (one vocabulary): put
 * (min(changes, 1000) commits of one edit each), batch, get_cold (each get after a cache clear),
 * get_warm, query (one get_many), concurrent_query, scan (read_samples records in key order),
 * full_scan (every record, cold cache), diff, merge; and, when a workload names them, build,
 * full_scan_warm, get_cold_start and put_nosync (bench/scale/scale.h).
 *
 * put, put_nosync, batch, diff and merge run once per pattern; the others have no pattern: they run
 * once per size and their rows say pattern "-". get_cold, get_warm and query read read_samples
 * keys; concurrent_query runs `concurrency` queries of read_samples keys each at once (ops =
 * concurrency x read_samples, the time is the wall time of the whole set). changes 0 (auto) is 1%
 * of the size, clamped to [10, 10000].
 *
 * Rows. One row per cell (cell_rows 1), cell_id "s<size>-<op>[-<pattern>]" with the harness's
 * names ("s1000-batch-random", "s1000-get_cold"). With the PostgreSQL store the engine first runs
 * the plain-table baseline (the same work on an ordinary table): rows with store "pg-plain", op
 * the name of the op they stand beside ("build", "full_scan", "get" for the three gets, "query",
 * "scan", "batch", "put", "put_nosync") and cell_id
 * "s<size>-pg-plain-<op>[-<pattern>]"; then, after the pg cells, the prolly extension's
 * contender (each operation one SQL statement on the same store): rows with store "pg-sql", op
 * the pg op they stand beside (get_warm, query, scan, batch, put, diff) and cell_id
 * "s<size>-pg-sql-<op>[-<pattern>]". Neither is counted in hsc_cells. Columns: hsc_columns.
 * p50_us, p99_us and samples are per-operation latencies of the median run, set for cells made
 * of many operations (the gets, put, concurrent_query and the plain get and put);
 * empty elsewhere.
 *
 * Processes. The engine runs with no_fork: everything in this process. The engine's default of
 * one child per fixture would run the hooks in the child, where h_emit's counters (measured,
 * skipped) and its set of done cells would be updated in a copy the parent never sees, and the
 * pgstat monitoring connection would be shared across a fork. Resume makes the crash isolation of
 * a child unnecessary here: a crash loses at most the cell in progress.
 *
 * Resume. The engine asks the skip hook about every cell before a fixture starts; done cells
 * (h_cell_done) are skipped and counted (h_cell_skipped), and a size whose cells are all done is
 * not built at all. A done plain cell is still measured (without a row) when a PostgreSQL cell
 * that compares with it is not done, so vs_plain is always filled.
 *
 * Disk guard. Before each size (LMDB and PostgreSQL stores) the free space of the scratch
 * directory must cover an estimate of the size's footprint plus min_free_gb; a size that does
 * not fit is refused with an error naming the numbers (the other sizes still run; hsc_run then
 * fails).
 */
#include "harness.h"

#include "../scale/scale.h"
#include "clock.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#define RAW "scale-raw.csv"
#define PUT_MAX 1000 /* most single-edit commits in a put cell */

/* The engine's index of a name in its table (the harness and the engine share one vocabulary),
 * or -1. */
static int engine_index(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (names[i] && !strcmp(names[i], name))
			return i;
	return -1;
}

static int engine_op(int op)
{
	return engine_index(scale_op_names, SCALE_N_OPS, hw_scale_op_names[op]);
}

const char *const hsc_columns[] = {
    "cell_id", "cell_rows", "suite", "store", "size", "op", "engine_op", "pattern", "runs", "ops",
    "changes", "value_bytes", "concurrency", "ms_median", "ms_min", "ms_max", "ops_per_s",
    "us_per_op", "p50_us", "p99_us", "samples", "cpu_ms", "server_cpu_ms", "cache_hits",
    "cache_misses", "cache_evictions", "nodes_read", "bytes_read", "nodes_written", "bytes_written",
    "store_reads", "store_read_items", "store_writes", "store_round_trips", "store_statements",
    "pool_waits", "pool_wait_ms", "store_read_ms", "store_write_ms", "durable_writes",
    "minor_faults", "peak_rss_mib", "rss_anon_mib", "rss_file_mib", "load1", "statements_per_op",
    "round_trips_per_op", "vs_plain", "validated", "note", "started", "finished",
    /* hp_columns (pgstat.c), in its order */
    "pg_calls", "pg_exec_ms", "wal_bytes", "xact_commit", "xact_rollback", "blks_hit", "blks_read",
    "db_bytes_before", "db_bytes_after", "table_bytes_before", "table_bytes_after",
    "index_bytes_before", "index_bytes_after", NULL};

/* Does harness operation op run once per pattern? */
static int has_pattern(int op)
{
	return engine_op(op) >= SCALE_FIRST_PATTERN_OP;
}

/* Cells of one operation without a pattern: one, or one per part (sync, proof). */
static unsigned op_parts(int op)
{
	int e = engine_op(op);
	const char *const *parts = e >= 0 ? scale_op_parts[e] : NULL;
	unsigned n = 0;
	while (parts && parts[n])
		n++;
	return n ? n : 1;
}

unsigned hsc_cells(const hw_workload *w)
{
	const hw_scale *s = &w->scale;
	unsigned np = 0, per = 0;
	for (int p = 0; p < HW_N_PATTERNS; p++)
		np += (s->patterns >> p) & 1;
	for (int op = 0; op < HW_N_SCALE_OPS; op++)
		if ((s->operations >> op) & 1)
			per += has_pattern(op) ? np : op_parts(op);
	return per * (unsigned)s->n_sizes;
}

/* ---- names ----------------------------------------------------------------------------------- */

/* A contender beside the store's own cells (the plain table, the extension): its rows keep their
 * store name and are not counted in hsc_cells. */
static int beside(const char *store)
{
	return !strcmp(store, SCALE_PLAIN_STORE) || !strcmp(store, SCALE_SQL_STORE);
}

/* cell_id of an engine cell: "s<size>-<op>[-<pattern>]", "s<size>-pg-plain-<op>[-<pattern>]",
 * "s<size>-pg-sql-<op>[-<pattern>]". */
static int cell_id(char *out, size_t n, uint64_t size, const char *store, const char *op,
                   const char *pattern)
{
	int pat = strcmp(pattern, "-") != 0;
	int k = snprintf(out, n, "s%" PRIu64 "-%s%s%s%s%s", size, beside(store) ? store : "",
	                 beside(store) ? "-" : "", op, pat ? "-" : "", pat ? pattern : "");
	return k < 0 || (size_t)k >= n ? -1 : 0;
}

/* ---- the hooks ------------------------------------------------------------------------------- */

typedef struct suite {
	h_run *run;
	const char *store;  /* run->store */
	hp_conn *mon;       /* PostgreSQL: the monitor of the Prolly store's schema */
	hp_conn *mon_plain; /* PostgreSQL: the monitor of the plain table's schema */
	hp_snapshot before;
	char started[32];
	uint64_t changes; /* of the size being run */
	hrow *row;
	char err[H_ERR]; /* why a hook stopped the engine */
	int warned;      /* a snapshot failure was reported */
} suite;

static hp_conn *monitor_of(suite *s, const char *store)
{
	return !strcmp(store, SCALE_PLAIN_STORE) ? s->mon_plain : s->mon;
}

static void snap(suite *s, const char *store, hp_snapshot *out)
{
	char e[H_ERR];
	hp_conn *c = monitor_of(s, store);
	memset(out, 0, sizeof(*out));
	if (c && hp_snap(c, out, e, sizeof(e)) != 0 && !s->warned) {
		fprintf(stderr, "harness: scale: no server counters for this cell: %s\n", e);
		s->warned = 1;
	}
}

static int hook_skip(void *payload, uint64_t size, const char *store, const char *op,
                     const char *pattern)
{
	suite *s = payload;
	char id[160];
	if (cell_id(id, sizeof(id), size, store, op, pattern) != 0 ||
	    !h_cell_done(s->run, &hsc_suite, id))
		return 0;
	h_cell_skipped(s->run);
	/* Progress counts the cells this invocation measures. */
	if (!beside(store) && s->run->cells_total > s->run->cells_done)
		s->run->cells_total--;
	return 1;
}

static void hook_before(void *payload, uint64_t size, const char *store, const char *op,
                        const char *pattern)
{
	suite *s = payload;
	if (!beside(store)) {
		char what[200];
		snprintf(what, sizeof(what), "size=%" PRIu64 " op=%s pattern=%s", size, op, pattern);
		h_progress(s->run, "scale", what);
	} else if (s->run->verbose) {
		fprintf(stderr, "[scale] size=%" PRIu64 " %s: %s %s\n", size, store, op, pattern);
	}
	bench_utc_now(s->started, sizeof(s->started));
	snap(s, store, &s->before);
}

/* A double column, empty when the value is not a finite number. */
static void put_f64(hrow *r, const char *col, double v)
{
	if (isfinite(v))
		hrow_f64(r, col, v);
	else
		hrow_str(r, col, "");
}

static double per_op(uint64_t v, uint64_t ops)
{
	return ops ? (double)v / (double)ops : NAN;
}

static void fill_row(suite *s, hrow *o, const scale_row *r, const char *id)
{
	const prolly_stats *st = &r->st;
	const hw_scale *sc = &s->run->w->scale;
	char finished[32];
	bench_utc_now(finished, sizeof(finished));
	hrow_str(o, "cell_id", id);
	hrow_u64(o, "cell_rows", 1);
	hrow_str(o, "suite", "scale");
	hrow_str(o, "store", beside(r->store) ? r->store : s->store);
	hrow_u64(o, "size", r->size);
	hrow_str(o, "op", r->op);
	hrow_str(o, "engine_op", r->op); /* the same name since the vocabularies became one */
	hrow_str(o, "pattern", r->pattern);
	hrow_u64(o, "runs", r->runs);
	hrow_u64(o, "ops", r->ops);
	hrow_u64(o, "changes", s->changes);
	hrow_u64(o, "value_bytes", sc->value_bytes);
	if (!strcmp(r->op, scale_op_names[SCALE_OP_CONCURRENT]))
		hrow_u64(o, "concurrency", sc->concurrency);
	hrow_f64(o, "ms_median", r->ms_median);
	hrow_f64(o, "ms_min", r->ms_min);
	hrow_f64(o, "ms_max", r->ms_max);
	hrow_f64(o, "ops_per_s", r->ops_per_s);
	hrow_f64(o, "us_per_op", r->us_per_op);
	if (r->lat_samples) {
		hrow_f64(o, "p50_us", r->p50_us);
		hrow_f64(o, "p99_us", r->p99_us);
		hrow_u64(o, "samples", r->lat_samples);
	}
	hrow_f64(o, "cpu_ms", r->cpu_ms);
	put_f64(o, "server_cpu_ms", r->server_cpu_ms >= 0 ? r->server_cpu_ms : NAN);
	hrow_u64(o, "cache_hits", st->cache_hits);
	hrow_u64(o, "cache_misses", st->cache_misses);
	hrow_u64(o, "cache_evictions", st->cache_evictions);
	hrow_u64(o, "nodes_read", st->nodes_read);
	hrow_u64(o, "bytes_read", st->bytes_read);
	hrow_u64(o, "nodes_written", st->nodes_written);
	hrow_u64(o, "bytes_written", st->bytes_written);
	hrow_u64(o, "store_reads", st->store_reads);
	hrow_u64(o, "store_read_items", st->store_read_items);
	hrow_u64(o, "store_writes", st->store_writes);
	hrow_u64(o, "store_round_trips", st->store_round_trips);
	hrow_u64(o, "store_statements", r->pg.statements);
	hrow_u64(o, "pool_waits", r->pg.pool_waits);
	hrow_f64(o, "pool_wait_ms", (double)r->pg.pool_wait_ns / 1e6);
	hrow_f64(o, "store_read_ms", r->store_read_ms);
	hrow_f64(o, "store_write_ms", r->store_write_ms);
	hrow_u64(o, "durable_writes", r->durable_writes);
	hrow_u64(o, "minor_faults", r->minor_faults);
	put_f64(o, "peak_rss_mib", r->peak_rss_mib >= 0 ? r->peak_rss_mib : NAN);
	put_f64(o, "rss_anon_mib", r->rss_anon_mib >= 0 ? r->rss_anon_mib : NAN);
	put_f64(o, "rss_file_mib", r->rss_file_mib >= 0 ? r->rss_file_mib : NAN);
	put_f64(o, "load1", r->load1 >= 0 ? r->load1 : NAN);
	put_f64(o, "statements_per_op", per_op(r->pg.statements, r->ops));
	put_f64(o, "round_trips_per_op", per_op(st->store_round_trips, r->ops));
	put_f64(o, "vs_plain", r->vs_plain > 0 ? r->vs_plain : NAN);
	hrow_str(o, "validated", r->valid ? "1" : "0");
	hrow_str(o, "note", r->note);
	hrow_str(o, "started", s->started);
	hrow_str(o, "finished", finished);
}

static int hook_after(void *payload, const scale_row *r)
{
	suite *s = payload;
	hp_snapshot after;
	char id[160], e[H_ERR];
	snap(s, r->store, &after);
	if (cell_id(id, sizeof(id), r->size, r->store, r->op, r->pattern) != 0) {
		snprintf(s->err, sizeof(s->err), "scale: a row the suite has no name for: %s %s %s",
		         r->store, r->op, r->pattern);
		return 1;
	}
	hrow_clear(s->row);
	fill_row(s, s->row, r, id);
	hp_delta_row(s->row, &s->before, &after);
	if (!r->valid)
		fprintf(stderr, "harness: scale: cell %s is NOT validated: %s\n", id, r->note);
	if (h_emit(s->run, &hsc_suite, &s->row, 1, e, sizeof(e)) != 0) {
		snprintf(s->err, sizeof(s->err), "%s", e);
		return 1;
	}
	return 0;
}

/* ---- the run --------------------------------------------------------------------------------- */

/* Bytes a size needs on disk, roughly: the base tree and what the cells add (LMDB reclaims
 * nothing during the run); PostgreSQL also holds WAL, the plain table and its index. */
static double footprint(int store, uint64_t size, uint32_t value_bytes)
{
	_Static_assert(HW_SCALE_RECORD_BYTES(0) == SCALE_KEY_LEN + 16, "a record's key is 24 bytes");
	double rec = (double)size * (double)HW_SCALE_RECORD_BYTES(value_bytes);
	return store == SCALE_STORE_PG ? 6.0 * rec : store == SCALE_STORE_LMDB ? 3.0 * rec : 0.0;
}

/* 0, or -1 with err when the scratch directory lacks room for size. */
static int disk_guard(const h_run *run, int store, uint64_t size, char *err, size_t errn)
{
	struct statvfs v;
	double need = footprint(store, size, run->w->scale.value_bytes);
	double floor_b = run->w->scale.min_free_gb * 1e9;
	if (need <= 0 && floor_b <= 0)
		return 0;
	if (statvfs(run->scratch, &v) != 0) {
		snprintf(err, errn, "scale: cannot check the free space of %s: %s", run->scratch,
		         strerror(errno));
		return -1;
	}
	double avail = (double)v.f_bavail * (double)v.f_frsize;
	if (avail >= need + floor_b)
		return 0;
	snprintf(err, errn,
	         "scale: size %" PRIu64 " refused: it needs about %.2f GB on disk and min_free_gb is "
	         "%.2f, but %s has %.2f GB free",
	         size, need / 1e9, run->w->scale.min_free_gb, run->scratch, avail / 1e9);
	return -1;
}

/* The engine configuration of the workload and store (sizes and changes are set per size). */
static int engine_config(scale_config *cfg, int *store, const h_run *run, char *err, size_t errn)
{
	const hw_scale *sc = &run->w->scale;
	const char *schema = run->schema && *run->schema ? run->schema : "prolly_bench";
	scale_config_init(cfg);
	if (!strcmp(run->store, "postgres"))
		*store = SCALE_STORE_PG;
	else if (!strcmp(run->store, "lmdb"))
		*store = SCALE_STORE_LMDB;
	else if (!strcmp(run->store, "mem"))
		*store = SCALE_STORE_MEM;
	else {
		snprintf(err, errn, "scale: unknown store '%s' (postgres, lmdb, mem)", run->store);
		return -1;
	}
	if (*store == SCALE_STORE_PG) {
		if (!run->url || strlen(run->url) >= sizeof(cfg->pg_url)) {
			snprintf(err, errn, "scale: the postgres store needs a URL");
			return -1;
		}
		snprintf(cfg->pg_url, sizeof(cfg->pg_url), "%s", run->url);
		int k = snprintf(cfg->pg_schema, sizeof(cfg->pg_schema), "%s_scale", schema);
		if (k < 0 || (size_t)k > 50) {
			snprintf(err, errn, "scale: schema name too long for the scale suite: %s", schema);
			return -1;
		}
	}
	if (sc->runs < 1 || sc->runs > SCALE_MAX_RUNS) {
		snprintf(err, errn, "scale: runs is %u; the scale engine runs 1 to %d", sc->runs,
		         SCALE_MAX_RUNS);
		return -1;
	}
	if (sc->value_bytes < 1 || sc->value_bytes > SCALE_MAX_VALUE_BYTES || sc->concurrency < 1 ||
	    sc->concurrency > SCALE_MAX_CONCURRENCY) {
		snprintf(err, errn, "scale: value_bytes or concurrency out of the engine's range");
		return -1;
	}
	cfg->stores = 1u << *store;
	cfg->ops = 0;
	for (int op = 0; op < HW_N_SCALE_OPS; op++) {
		int e = engine_op(op);
		if (e < 0) {
			snprintf(err, errn, "scale: the engine has no operation '%s'", hw_scale_op_names[op]);
			return -1;
		}
		if ((sc->operations >> op) & 1)
			cfg->ops |= 1u << e;
	}
	cfg->patterns = 0;
	for (int p = 0; p < HW_N_PATTERNS; p++) {
		int e = engine_index(scale_pattern_names, SCALE_N_PATTERNS, hw_pattern_names[p]);
		if (e < 0) {
			snprintf(err, errn, "scale: the engine has no pattern '%s'", hw_pattern_names[p]);
			return -1;
		}
		if ((sc->patterns >> p) & 1)
			cfg->patterns |= 1u << e;
	}
	cfg->runs = sc->runs;
	cfg->reads = sc->read_samples;
	cfg->cold_gets = sc->read_samples;
	cfg->value_bytes = sc->value_bytes;
	cfg->concurrency = sc->concurrency;
	cfg->seed = run->w->seed;
	cfg->node_size = run->w->node_size;
	cfg->dir = run->scratch;
	cfg->max_cell_s = 3600; /* every run of a cell counts: no early stop */
	cfg->no_fork = 1;
	cfg->op_latency = 1;
	cfg->quiet = !run->verbose;
	return 0;
}

int hsc_run(h_run *run, char *err, size_t errn)
{
	const hw_scale *sc = &run->w->scale;
	scale_config cfg;
	suite s;
	int store, rc = 0;
	char e[H_ERR];
	memset(&s, 0, sizeof(s));
	s.run = run;
	s.store = run->store;
	err[0] = '\0';
	if (engine_config(&cfg, &store, run, err, errn) != 0)
		return -1;
	if (!(s.row = hrow_new())) {
		snprintf(err, errn, "scale: out of memory");
		return -1;
	}
	if (store == SCALE_STORE_PG) {
		char plain[80];
		snprintf(plain, sizeof(plain), "%s_plain", cfg.pg_schema);
		if (hp_connect(&s.mon, run->url, cfg.pg_schema, e, sizeof(e)) != 0 ||
		    hp_connect(&s.mon_plain, run->url, plain, e, sizeof(e)) != 0)
			fprintf(stderr, "harness: scale: no server counters: %s\n", e);
	}
	scale_hooks hooks = {&s, hook_skip, hook_before, hook_after};
	for (int i = 0; i < sc->n_sizes; i++) {
		uint64_t size = sc->sizes[i];
		uint64_t ch = sc->changes ? sc->changes : size / 100;
		if (!sc->changes)
			ch = ch < 10 ? 10 : ch > 10000 ? 10000 : ch;
		s.changes = ch;
		cfg.sizes[0] = size;
		cfg.n_sizes = 1;
		cfg.changes = ch;
		cfg.puts = ch < PUT_MAX ? ch : PUT_MAX;
		if (disk_guard(run, store, size, e, sizeof(e)) != 0) {
			fprintf(stderr, "harness: %s\n", e);
			if (!err[0])
				snprintf(err, errn, "%s", e);
			rc = -1;
			continue;
		}
		int r = scale_run(NULL, &cfg, &hooks, e, sizeof(e));
		if (r < 0) {
			snprintf(err, errn, "%s", s.err[0] ? s.err : e);
			rc = -1;
			break;
		}
		if (r > 0) { /* a fixture failed: its cells did not run; the next size still does */
			fprintf(stderr, "harness: %s\n", e);
			if (!err[0])
				snprintf(err, errn, "%s", e);
			rc = -1;
		}
	}
	hp_close(s.mon);
	hp_close(s.mon_plain);
	hrow_free(s.row);
	return rc;
}

static int enabled(const hw_workload *w)
{
	return w->scale.enabled;
}

const h_suite hsc_suite = {
    .name = "scale",
    .raw_file = RAW,
    .columns = hsc_columns,
    .enabled = enabled,
    .cells = hsc_cells,
    .run = hsc_run,
    .summary_columns = hr_scale_summary_columns,
    .summary = hr_scale_summary,
    .gate_throughput = "ops_per_s",
    .gate_p99 = "p99_us",
    .gate_p99_unit = "us",
    .report = hrep_scale_section,
};
