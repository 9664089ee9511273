/*
 * service.c - the service suite (hsvc_*): closed-loop concurrent clients against one store, per
 * (clients, pool size) cell, as docs/harness.md ("The suites") describes.
 *
 * Fixture (untimed; built once per hsvc_run, skipped when every cell is already done):
 *   ONE base tree of `records` records (service_int.h: keys, values, generations) built with
 *   prolly_builder, one base commit, and per tenant two side commits on top of it (side-a and
 *   side-b, `commit_keys` updates each, at disjoint random keys), all in one txn. The branches
 *   t<t>/main, t<t>/side-a, t<t>/side-b and hot<h>/main are set by the restore.
 *   Restore (before every cell): ONE store write that sets every fixture branch back to its
 *   fixture commit and removes every other branch (the merges' scratch branches). Nodes written
 *   by earlier cells stay: the node store only grows, which does not change what a cell reads.
 *   The PostgreSQL fixture lives in schema run->schema, dropped and created again at the start;
 *   LMDB in run->scratch/service-lmdb (removed at the end); mem in memory.
 *
 * Cell: a fresh store handle for PostgreSQL (a pool of `pool` connections; lmdb and mem share one
 * store across cells and have no pool: pool_size is recorded but limits nothing), the restore,
 * then `clients` worker threads, each with its own prolly_db on the shared store (service_ops.c
 * svc_open_db): warmup_ms of the closed loop (not recorded), a pause while the PostgreSQL
 * counters are read, duration_ms measured (operations started before the end are completed and
 * recorded), the counters read again. Each operation starts with a cold decoded cache
 * (prolly_db_cache_clear before it; PostgreSQL's and the OS's caches stay warm, as in the
 * reference system's runs that docs/benchmarks/service-scale.md compares with);
 * its latency includes any wait for a pooled connection. Operation class by
 * [service.operation_mix], target branch a hot root with probability hot_root_share, else a random
 * tenant's main (merges always go to a random tenant: only tenants have side branches); per-worker
 * PRNG seeded from the workload seed, the cell's index in the matrix and the worker's index.
 *
 * Access (service_sql.c): with access = "sql" a cell's workers each also hold one libpq
 * connection and run every operation as one statement of the prolly extension, created in the
 * store's schema at the start of the suite and dropped at its end. A list of modes runs, per
 * (clients, pool), the cell of each (client first, "-sql" appended to the cell id), with the
 * same cell index and so the same seeds.
 *
 * Failures are data: an operation that fails is counted by kind (svc_err_names), one whose result
 * does not validate as "validation", one that took longer than operation_timeout_ms as "timeout"
 * (measured after the fact: the library call is not interrupted; the PostgreSQL pool's wait is
 * bounded by the same timeout), and the run goes on. A failure that stops the suite (a store that
 * cannot be opened, the fixture, a result that cannot be written) returns -1.
 *
 * Rows (service-raw.csv, hsvc_columns): per cell one row per class and one "all" row, written as
 * one cell by hr_append (cell_id "c<clients>-p<pool>", cell_rows 6); a cell already complete in
 * the file is skipped (resume). Latency: HDR histograms of every operation, failed ones included.
 * Store counters: the worker thread's prolly counters over each operation's timed part, summed
 * per class. Per-second series (successful operations and p99 by the second the operation
 * finished in) and the PostgreSQL server's deltas (pgstat.c) are on the "all" row.
 */
#include "service_int.h"

#include "clock.h"
#include "proc.h"
#include "rng.h"
#include "series.h"
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CELL_ROWS (HW_N_SERVICE_OPS + 1)
#define HIST_HIGHEST 600000000000ULL /* 10 minutes: longer latencies saturate (and are counted) */
#define RAW_FILE "service-raw.csv"

/* Must list every column of hp_columns (pgstat.c); the test checks it. */
const char *const hsvc_columns[] = {
    "cell_id", "cell_rows", "suite", "store", "op_class", "records", "value_bytes", "clients",
    "pool_size", "tenants", "hot_roots", "hot_root_share", "mix_percent", "warmup_ms",
    "duration_ms", "operation_timeout_ms", "multi_read_keys", "commit_keys", "retained_versions",
    "cas_retries", "adapter_batch_items", "seed", "started", "finished", "elapsed_ms", "attempted",
    "succeeded", "failed", "attempted_per_s", "succeeded_per_s", "p50_ms", "p95_ms", "p99_ms",
    "p999_ms", "max_ms", "mean_ms", "samples", "hdr", "cas_attempts", "conflicts", "retries",
    "conflict_rate", "timeouts", "errors_total", "error_rate", "errors", "validation_failures",
    "validated", "checked", "diff_entries", "merge_applied", "cache_hits", "cache_misses",
    "nodes_read", "nodes_written", "bytes_read", "bytes_written", "store_reads", "store_writes",
    "store_round_trips", "store_statements", "statements_per_op", "round_trips_per_op",
    "pool_waits", "pool_wait_ms", "per_second_ops", "per_second_p99_ms", "pg_statements_per_op",
    "first_error",
    /* hp_columns */
    "pg_calls", "pg_exec_ms", "wal_bytes", "xact_commit", "xact_rollback", "blks_hit", "blks_read",
    "db_bytes_before", "db_bytes_after", "table_bytes_before", "table_bytes_after",
    "index_bytes_before", "index_bytes_after",
    /* added later: kept last so that older files' columns keep their places */
    "access", NULL};

unsigned hsvc_cells(const hw_workload *w)
{
	const hw_service *s = &w->service;
	if (!s->enabled)
		return 0;
	unsigned modes = 0;
	for (int a = 0; a < HW_N_ACCESS; a++)
		modes += (s->access >> a) & 1u;
	return modes * (unsigned)s->n_clients * (unsigned)s->n_pool_sizes;
}

typedef struct svc_cell {
	const h_run *run;
	svc_fixture *fx;
	prolly_store *store;
	unsigned index, clients, pool;
	int access; /* HW_ACCESS_* */
	uint64_t timeout_ns;
	/* Phases: the main thread moves them on once every worker has arrived. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int phase; /* PH_* */
	unsigned arrived;
	uint64_t warm_end, start, end; /* bench_now_ns() */
	uint32_t nsec;                 /* seconds of the measured window */
	bench_series series; /* per second: successful operations, every operation's latency */
	svc_worker *workers;
} svc_cell;

enum { PH_OPEN, PH_WARM, PH_MEASURE, PH_ABORT };

static void stats_add(prolly_stats *d, const prolly_stats *s)
{
	d->cache_hits += s->cache_hits;
	d->cache_misses += s->cache_misses;
	d->cache_evictions += s->cache_evictions;
	d->nodes_read += s->nodes_read;
	d->bytes_read += s->bytes_read;
	d->nodes_written += s->nodes_written;
	d->bytes_written += s->bytes_written;
	d->store_reads += s->store_reads;
	d->store_read_items += s->store_read_items;
	d->store_writes += s->store_writes;
	d->store_round_trips += s->store_round_trips;
}

static void pg_stats_add(prolly_pg_stats *d, const prolly_pg_stats *s)
{
	d->statements += s->statements;
	d->pool_waits += s->pool_waits;
	d->pool_wait_ns += s->pool_wait_ns;
}

/* ------------------------------------------------------------------------------------------ */
/* Workers                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Waits until the main thread has moved past `phase`; returns the phase it moved to. */
static int checkpoint(svc_cell *c, int phase)
{
	pthread_mutex_lock(&c->mu);
	c->arrived++;
	pthread_cond_broadcast(&c->cv);
	while (c->phase <= phase)
		pthread_cond_wait(&c->cv, &c->mu);
	int now = c->phase;
	pthread_mutex_unlock(&c->mu);
	return now;
}

static int pick_class(svc_worker *w)
{
	uint64_t u = svc_below(w, 100), acc = 0;
	for (int i = 0; i < HW_N_SERVICE_OPS; i++) {
		acc += w->fx->cfg->mix[i];
		if (u < acc)
			return i;
	}
	return HW_POINT_READ; /* the mix totals 100 (workload.c); never reached */
}

static void account(svc_worker *w, int cls, uint64_t t0, const svc_result *r)
{
	svc_cell *c = w->cell;
	svc_class *k = &w->cls[cls];
	uint64_t lat = r->t_end - t0;
	int kind = -1;

	if (r->rc)
		kind = svc_err_kind(r->rc);
	else if (r->bad)
		kind = SVC_E_VALIDATION;
	else if (c->timeout_ns && lat > c->timeout_ns)
		kind = SVC_E_TIMEOUT; /* measured after the fact: the call was not interrupted */
	k->attempted++;
	if (kind < 0) {
		k->succeeded++;
	} else {
		k->errors[kind]++;
		if (kind == SVC_E_TIMEOUT)
			k->timeouts++;
		if (!w->first_err[0]) {
			if (r->msg[0])
				snprintf(w->first_err, sizeof(w->first_err), "%s: %s", hw_service_op_names[cls],
				         r->msg);
			else
				snprintf(w->first_err, sizeof(w->first_err), "%s: took %.1f ms",
				         hw_service_op_names[cls], (double)lat / 1e6);
		}
	}
	if (!r->rc)
		k->completed++;
	if (!r->rc && r->checked)
		k->checked++;
	if (r->bad)
		k->bad++;
	k->cas_attempts += r->cas_attempts;
	k->conflicts += r->conflicts;
	k->retries += r->retries;
	k->entries += r->entries;
	stats_add(&k->st, &r->st);
	pg_stats_add(&k->pg, &r->pg);
	hdr_record(k->h, lat);

	bench_series_add(&c->series, r->t_end, lat, kind < 0);
}

/* The closed loop until `until`; records into the worker's totals when `record`. */
static void loop(svc_worker *w, uint64_t until, int record)
{
	for (;;) {
		svc_result r;
		int cls = pick_class(w);
		memset(&r, 0, sizeof(r));
		prolly_db_cache_clear(w->db); /* every operation starts cold */
		prolly_thread_stats_reset();
		uint64_t t0 = bench_now_ns();
		if (t0 >= until)
			break;
		w->seq++;
		(w->pg ? svc_sql_ops : svc_ops)[cls](w, &r);
		if (record)
			account(w, cls, t0, &r);
	}
}

static void *worker_main(void *arg)
{
	svc_worker *w = arg;
	svc_cell *c = w->cell;
	int rc = svc_open_db(&w->db, c->store);
	if (rc) {
		w->db = NULL;
		w->failed = 1;
		snprintf(w->err, sizeof(w->err), "service: worker %u: opening a handle: %s: %s", w->index,
		         prolly_strerror(rc), prolly_last_error());
	} else if (c->access == HW_ACCESS_SQL && (rc = svc_sql_open(w, c->run->url, c->run->schema))) {
		w->failed = 1;
		snprintf(w->err, sizeof(w->err), "service: worker %u: its SQL connection: %s: %s", w->index,
		         prolly_strerror(rc), prolly_last_error());
	}
	if (checkpoint(c, PH_OPEN) != PH_WARM)
		return NULL;
	loop(w, c->warm_end, 0);
	if (checkpoint(c, PH_WARM) != PH_MEASURE)
		return NULL;
	loop(w, c->end, 1);
	return NULL;
}

static void class_dispose(svc_class *k)
{
	hdr_free(k->h);
	memset(k, 0, sizeof(*k));
}

static int class_merge(svc_class *d, const svc_class *s)
{
	d->attempted += s->attempted;
	d->succeeded += s->succeeded;
	d->completed += s->completed;
	d->checked += s->checked;
	d->bad += s->bad;
	d->timeouts += s->timeouts;
	d->cas_attempts += s->cas_attempts;
	d->conflicts += s->conflicts;
	d->retries += s->retries;
	d->entries += s->entries;
	for (int i = 0; i < SVC_N_ERR; i++)
		d->errors[i] += s->errors[i];
	stats_add(&d->st, &s->st);
	pg_stats_add(&d->pg, &s->pg);
	return hdr_merge(d->h, s->h);
}

static int worker_init(svc_worker *w, svc_cell *c, unsigned i, uint64_t seed)
{
	const hw_service *cfg = c->fx->cfg;
	size_t nk = cfg->multi_read_keys > cfg->commit_keys ? cfg->multi_read_keys : cfg->commit_keys;
	memset(w, 0, sizeof(*w));
	w->cell = c;
	w->fx = c->fx;
	w->index = i;
	w->cell_index = c->index;
	w->rs = bench_mix64(seed) ^ bench_mix64(((uint64_t)c->index << 32) + i + 1);
	w->gen = SVC_GEN_FIRST_WORKER + (uint32_t)(bench_mix64(w->rs) & 0xffffff) * 256u;
	w->keys = malloc(nk * SVC_KEY_LEN + 1);
	w->vals = malloc((size_t)cfg->commit_keys * c->fx->value_bytes + 1);
	w->slices = calloc((size_t)cfg->multi_read_keys + 1, sizeof(*w->slices));
	w->edits = calloc((size_t)cfg->commit_keys + 1, sizeof(*w->edits));
	if (!w->keys || !w->vals || !w->slices || !w->edits)
		return -1;
	for (int k = 0; k < HW_N_SERVICE_OPS; k++)
		if (hdr_new(&w->cls[k].h, HIST_HIGHEST, 3))
			return -1;
	return 0;
}

static void worker_dispose(svc_worker *w)
{
	prolly_close(w->db);
	if (w->pg)
		PQfinish(w->pg);
	bench_buf_free(&w->arr[0]);
	bench_buf_free(&w->arr[1]);
	for (int k = 0; k < HW_N_SERVICE_OPS; k++)
		class_dispose(&w->cls[k]);
	prolly_buf_dispose(&w->buf);
	free(w->keys);
	free(w->vals);
	free(w->slices);
	free(w->edits);
	memset(w, 0, sizeof(*w));
}

/* ------------------------------------------------------------------------------------------ */
/* Rows                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static double per(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static void row_common(hrow *row, const svc_cell *c, const char *cell_id, const char *cls,
                       uint32_t mix)
{
	const hw_service *s = c->fx->cfg;
	hrow_str(row, "cell_id", cell_id);
	hrow_u64(row, "cell_rows", CELL_ROWS);
	hrow_str(row, "suite", "service");
	hrow_str(row, "store", c->run->store);
	hrow_str(row, "op_class", cls);
	hrow_u64(row, "records", s->records);
	hrow_u64(row, "value_bytes", s->value_bytes);
	hrow_u64(row, "clients", c->clients);
	hrow_u64(row, "pool_size", c->pool);
	hrow_str(row, "access", hw_access_names[c->access]);
	hrow_u64(row, "tenants", s->tenants);
	hrow_u64(row, "hot_roots", s->hot_roots);
	hrow_f64(row, "hot_root_share", s->hot_root_share);
	hrow_u64(row, "mix_percent", mix);
	hrow_u64(row, "warmup_ms", s->warmup_ms);
	hrow_u64(row, "duration_ms", s->duration_ms);
	hrow_u64(row, "operation_timeout_ms", s->operation_timeout_ms);
	hrow_u64(row, "multi_read_keys", s->multi_read_keys);
	hrow_u64(row, "commit_keys", s->commit_keys);
	hrow_u64(row, "retained_versions", s->retained_versions);
	hrow_u64(row, "cas_retries", s->cas_retries);
	hrow_u64(row, "adapter_batch_items", s->adapter_batch_items);
	hrow_u64(row, "seed", c->run->w->seed);
}

static int row_class(hrow *row, const svc_class *k, double elapsed_s)
{
	const prolly_stats *st = &k->st;
	uint64_t errors = 0;
	char buf[512] = "";
	size_t at = 0;
	for (int i = 0; i < SVC_N_ERR; i++) {
		errors += k->errors[i];
		if (k->errors[i] && at < sizeof(buf))
			at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s:%" PRIu64, at ? ";" : "",
			                       svc_err_names[i], k->errors[i]);
	}
	hrow_u64(row, "attempted", k->attempted);
	hrow_u64(row, "succeeded", k->succeeded);
	hrow_u64(row, "failed", k->attempted - k->succeeded);
	hrow_f64(row, "attempted_per_s", elapsed_s > 0 ? (double)k->attempted / elapsed_s : 0);
	hrow_f64(row, "succeeded_per_s", elapsed_s > 0 ? (double)k->succeeded / elapsed_s : 0);
	hrow_f64(row, "p50_ms", ms(hdr_percentile(k->h, 50)));
	hrow_f64(row, "p95_ms", ms(hdr_percentile(k->h, 95)));
	hrow_f64(row, "p99_ms", ms(hdr_percentile(k->h, 99)));
	hrow_f64(row, "p999_ms", ms(hdr_percentile(k->h, 99.9)));
	hrow_f64(row, "max_ms", ms(hdr_max(k->h)));
	hrow_f64(row, "mean_ms", hdr_mean(k->h) / 1e6);
	hrow_u64(row, "samples", hdr_count(k->h));
	char *text = hdr_to_text(k->h);
	if (!text)
		return -1;
	hrow_str(row, "hdr", text);
	free(text);
	hrow_u64(row, "cas_attempts", k->cas_attempts);
	hrow_u64(row, "conflicts", k->conflicts);
	hrow_u64(row, "retries", k->retries);
	hrow_f64(row, "conflict_rate", per(k->conflicts, k->cas_attempts));
	hrow_u64(row, "timeouts", k->timeouts);
	hrow_u64(row, "errors_total", errors);
	hrow_f64(row, "error_rate", per(errors, k->attempted));
	hrow_str(row, "errors", buf);
	hrow_u64(row, "validation_failures", k->bad);
	/* Validated: every operation the library completed had its result checked, and passed. */
	hrow_u64(row, "validated", k->bad == 0 && k->checked == k->completed);
	hrow_u64(row, "checked", k->checked);
	hrow_u64(row, "cache_hits", st->cache_hits);
	hrow_u64(row, "cache_misses", st->cache_misses);
	hrow_u64(row, "nodes_read", st->nodes_read);
	hrow_u64(row, "nodes_written", st->nodes_written);
	hrow_u64(row, "bytes_read", st->bytes_read);
	hrow_u64(row, "bytes_written", st->bytes_written);
	hrow_u64(row, "store_reads", st->store_reads);
	hrow_u64(row, "store_writes", st->store_writes);
	hrow_u64(row, "store_round_trips", st->store_round_trips);
	hrow_u64(row, "store_statements", k->pg.statements);
	hrow_f64(row, "statements_per_op", per(k->pg.statements, k->attempted));
	hrow_f64(row, "round_trips_per_op", per(st->store_round_trips, k->attempted));
	hrow_u64(row, "pool_waits", k->pg.pool_waits);
	hrow_f64(row, "pool_wait_ms", ms(k->pg.pool_wait_ns));
	return 0;
}

/* The "all" row's per-second series: successful operations, and p99 in ms, per second. */
static int row_seconds(hrow *row, const svc_cell *c)
{
	char *a = NULL, *b = NULL;
	size_t an = 0, bn = 0;
	FILE *fa = open_memstream(&a, &an), *fb = open_memstream(&b, &bn);
	int ret = -1;
	if (!fa || !fb || c->series.oom) /* a second the series could not hold: out of memory */
		goto cleanup;
	for (uint32_t i = 0; i < c->nsec; i++) {
		uint64_t ok, p50, p99, max;
		bench_series_second(&c->series, i, &ok, &p50, &p99, &max);
		fprintf(fa, "%s%" PRIu64, i ? ";" : "", ok);
		fprintf(fb, "%s%.3f", i ? ";" : "", ms(p99));
	}
	if (fclose(fa) | fclose(fb)) {
		fa = fb = NULL;
		goto cleanup;
	}
	fa = fb = NULL;
	hrow_str(row, "per_second_ops", a);
	hrow_str(row, "per_second_p99_ms", b);
	ret = 0;
cleanup:
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	free(a);
	free(b);
	return ret;
}

/* ------------------------------------------------------------------------------------------ */
/* Cells                                                                                      */
/* ------------------------------------------------------------------------------------------ */

static void cell_dispose(svc_cell *c)
{
	if (c->workers)
		for (unsigned i = 0; i < c->clients; i++)
			worker_dispose(&c->workers[i]);
	free(c->workers);
	bench_series_dispose(&c->series);
	c->workers = NULL;
}

/* Moves the workers to phase `to` once all n have arrived at the current checkpoint. */
static void advance(svc_cell *c, unsigned n, int to, int wait)
{
	pthread_mutex_lock(&c->mu);
	while (wait && c->arrived < n)
		pthread_cond_wait(&c->cv, &c->mu);
	c->arrived = 0;
	if (to == PH_WARM)
		c->warm_end = bench_now_ns() + c->fx->cfg->warmup_ms * 1000000u;
	if (to == PH_MEASURE) {
		c->start = c->series.start_ns = bench_now_ns(); /* before any worker records */
		c->end = c->start + c->fx->cfg->duration_ms * 1000000u;
	}
	c->phase = to;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

static void wait_arrivals(svc_cell *c, unsigned n)
{
	pthread_mutex_lock(&c->mu);
	while (c->arrived < n)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

/* Writes the cell's six rows (one h_emit). */
static int write_rows(const svc_cell *c, svc_class *tot, const char *cell_id, const char *started,
                      const char *finished, double elapsed_s, const hp_snapshot *sa,
                      const hp_snapshot *sb, const char *first_err, char *err, size_t errn)
{
	hrow *rows[CELL_ROWS] = {NULL};
	int ret = -1;
	for (int i = 0; i < CELL_ROWS; i++) {
		int all = i == HW_N_SERVICE_OPS;
		hrow *row = rows[i] = hrow_new();
		if (!row)
			goto oom;
		row_common(row, c, cell_id, all ? "all" : hw_service_op_names[i],
		           all ? 100 : c->fx->cfg->mix[i]);
		hrow_str(row, "started", started);
		hrow_str(row, "finished", finished);
		hrow_f64(row, "elapsed_ms", elapsed_s * 1e3);
		if (row_class(row, &tot[i], elapsed_s))
			goto oom;
		if (i == HW_DIFF || all)
			hrow_u64(row, "diff_entries", all ? tot[HW_DIFF].entries : tot[i].entries);
		if (i == HW_MERGE || all)
			hrow_u64(row, "merge_applied", all ? tot[HW_MERGE].entries : tot[i].entries);
		if (!all)
			continue;
		if (row_seconds(row, c))
			goto oom;
		hrow_str(row, "first_error", first_err);
		if (sa->valid && sb->valid) {
			hp_delta_row(row, sa, sb);
			hrow_f64(row, "pg_statements_per_op",
			         tot[i].attempted ? (sb->stmt_calls - sa->stmt_calls) / (double)tot[i].attempted
			                          : 0);
		}
	}
	ret = h_emit(c->run, &hsvc_suite, rows, CELL_ROWS, err, errn);
	goto cleanup;
oom:
	snprintf(err, errn, "service: out of memory writing the rows of %s", cell_id);
cleanup:
	for (int i = 0; i < CELL_ROWS; i++)
		hrow_free(rows[i]);
	return ret;
}

static void summary(const char *cell_id, const svc_class *all, double elapsed_s)
{
	uint64_t errors = 0;
	for (int i = 0; i < SVC_N_ERR; i++)
		errors += all->errors[i];
	fprintf(stderr,
	        "service %s: %.1f ok/s of %.1f attempted/s, p99 %.2f ms, %.2f statements/op, "
	        "%" PRIu64 " conflicts, %" PRIu64 " errors%s\n",
	        cell_id, elapsed_s > 0 ? (double)all->succeeded / elapsed_s : 0,
	        elapsed_s > 0 ? (double)all->attempted / elapsed_s : 0, ms(hdr_percentile(all->h, 99)),
	        per(all->pg.statements, all->attempted), all->conflicts, errors,
	        all->bad ? ", VALIDATION FAILURES" : "");
}

/*
 * One cell: store, restore, threads, rows. shared is the lmdb/mem store (NULL: PostgreSQL, a
 * fresh pool is opened here); pc the PostgreSQL monitoring connection or NULL.
 */
static int run_cell(const h_run *run, svc_fixture *fx, prolly_store *shared, hp_conn *pc,
                    int access, unsigned index, unsigned clients, unsigned pool,
                    const char *cell_id, char *err, size_t errn)
{
	const hw_service *cfg = fx->cfg;
	svc_cell c;
	svc_class tot[CELL_ROWS];
	prolly_store *pg = NULL;
	prolly_db *setup = NULL;
	hp_snapshot sa, sb;
	char started[32] = "", finished[32] = "", perr[H_ERR];
	const char *first_err = "";
	unsigned n_started = 0;
	int rc, ret = -1, sync = 0;

	memset(&c, 0, sizeof(c));
	memset(tot, 0, sizeof(tot));
	memset(&sa, 0, sizeof(sa));
	memset(&sb, 0, sizeof(sb));
	c.run = run;
	c.fx = fx;
	c.index = index;
	c.clients = clients;
	c.pool = pool;
	c.access = access;
	c.timeout_ns = cfg->operation_timeout_ms * 1000000u;
	c.nsec = (uint32_t)((cfg->duration_ms + 999) / 1000);
	if (!c.nsec)
		c.nsec = 1;

	if (!shared) {
		prolly_pg_options po = PROLLY_PG_OPTIONS_INIT;
		po.schema = run->schema;
		po.pool_size = pool;
		po.batch_items = cfg->adapter_batch_items;
		/* A wait for a connection longer than an operation may take is a timeout anyway. */
		po.pool_timeout_ms = cfg->operation_timeout_ms > UINT32_MAX
		                         ? UINT32_MAX
		                         : (unsigned)cfg->operation_timeout_ms;
		po.no_create = 1;
		if ((rc = prolly_store_pg_open(&pg, run->url, &po))) {
			svc_prolly_fail(err, errn, "opening the PostgreSQL store", rc);
			goto cleanup;
		}
		c.store = pg;
	} else {
		c.store = shared;
	}
	if ((rc = svc_open_db(&setup, c.store))) {
		svc_prolly_fail(err, errn, "opening a handle", rc);
		goto cleanup;
	}
	if (svc_fixture_restore(fx, setup, err, errn))
		goto cleanup;
	prolly_close(setup);
	setup = NULL;

	c.workers = calloc(clients, sizeof(*c.workers));
	if (!c.workers || bench_series_init(&c.series))
		goto oom;
	c.series.max_sec = c.nsec;
	for (int i = 0; i < CELL_ROWS; i++)
		if (hdr_new(&tot[i].h, HIST_HIGHEST, 3))
			goto oom;
	for (unsigned i = 0; i < clients; i++)
		if (worker_init(&c.workers[i], &c, i, run->w->seed))
			goto oom;

	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	sync = 1;
	for (; n_started < clients; n_started++) {
		svc_worker *w = &c.workers[n_started];
		if ((errno = pthread_create(&w->th, NULL, worker_main, w)) != 0) {
			snprintf(err, errn, "service: cannot start worker thread %u: %s", n_started,
			         strerror(errno));
			break;
		}
		w->started = 1;
	}
	wait_arrivals(&c, n_started);
	int failed = n_started < clients;
	for (unsigned i = 0; i < n_started && !failed; i++)
		if (c.workers[i].failed) {
			snprintf(err, errn, "%s", c.workers[i].err);
			failed = 1;
		}
	if (failed) {
		advance(&c, n_started, PH_ABORT, 0);
		goto join;
	}
	advance(&c, n_started, PH_WARM, 0);
	wait_arrivals(&c, n_started); /* warmup done: every worker is idle */
	if (pc && hp_snap(pc, &sa, perr, sizeof(perr)))
		fprintf(stderr, "service %s: warning: PostgreSQL counters: %s\n", cell_id, perr);
	bench_utc_now(started, sizeof(started));
	advance(&c, n_started, PH_MEASURE, 0);
join:
	for (unsigned i = 0; i < n_started; i++)
		pthread_join(c.workers[i].th, NULL);
	if (failed)
		goto cleanup;
	uint64_t stop = bench_now_ns();
	bench_utc_now(finished, sizeof(finished));
	if (pc && hp_snap(pc, &sb, perr, sizeof(perr)))
		fprintf(stderr, "service %s: warning: PostgreSQL counters: %s\n", cell_id, perr);

	for (unsigned i = 0; i < clients; i++) {
		svc_worker *w = &c.workers[i];
		for (int k = 0; k < HW_N_SERVICE_OPS; k++)
			if (class_merge(&tot[k], &w->cls[k]) || class_merge(&tot[HW_N_SERVICE_OPS], &w->cls[k]))
				goto oom;
		if (!first_err[0] && w->first_err[0])
			first_err = w->first_err;
	}
	double elapsed_s = (double)((stop > c.end ? stop : c.end) - c.start) / 1e9;
	if (write_rows(&c, tot, cell_id, started, finished, elapsed_s, &sa, &sb, first_err, err, errn))
		goto cleanup;
	summary(cell_id, &tot[HW_N_SERVICE_OPS], elapsed_s);
	if (run->verbose && first_err[0])
		fprintf(stderr, "service %s: first error: %s\n", cell_id, first_err);
	ret = 0;
	goto cleanup;
oom:
	snprintf(err, errn, "service: out of memory in cell %s", cell_id);
cleanup:
	cell_dispose(&c); /* closes the workers' handles before their store */
	if (sync) {
		pthread_mutex_destroy(&c.mu);
		pthread_cond_destroy(&c.cv);
	}
	for (int i = 0; i < CELL_ROWS; i++)
		class_dispose(&tot[i]);
	prolly_close(setup);
	prolly_store_close(pg);
	return ret;
}

/* ------------------------------------------------------------------------------------------ */
/* The suite                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* DROP SCHEMA ... CASCADE: the fixture starts from an empty schema. */
static int pg_drop_schema(const char *url, const char *schema, char *err, size_t errn)
{
	char shown[1024];
	PGconn *pg = NULL;
	PGresult *r = NULL;
	char *q = NULL, *sql = NULL;
	int ret = -1;

	prolly_redact_url(shown, sizeof(shown), url);
	if (bench_pg_connect_as(&pg, url, NULL, 0)) {
		snprintf(err, errn, "service: cannot connect to %s: %s", shown, prolly_last_error());
		goto cleanup;
	}
	if (!(q = PQescapeIdentifier(pg, schema, strlen(schema))) || !(sql = malloc(strlen(q) + 64))) {
		snprintf(err, errn, "service: schema name %s: %s", schema, PQerrorMessage(pg));
		goto cleanup;
	}
	sprintf(sql, "DROP SCHEMA IF EXISTS %s CASCADE", q);
	r = PQexec(pg, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		snprintf(err, errn, "service: dropping schema %s on %s: %s", schema, shown,
		         PQerrorMessage(pg));
		goto cleanup;
	}
	ret = 0;
cleanup:
	PQclear(r);
	PQfreemem(q);
	free(sql);
	PQfinish(pg);
	/* libpq error messages end with a newline: keep err on one line. */
	for (char *p = err; ret && *p; p++)
		if (*p == '\n')
			*p = *(p + 1) ? ' ' : '\0';
	return ret;
}

/* "c4-p2"; "c4-p2-sql" with access = "sql", so both modes' cells can share one results file. */
static void cell_name(char *out, size_t n, int access, uint32_t clients, uint32_t pool)
{
	snprintf(out, n, "c%" PRIu32 "-p%" PRIu32 "%s", clients, pool,
	         access == HW_ACCESS_SQL ? "-sql" : "");
}

/* The memory store's check of the workload (harness.h) counts a record as these key bytes. */
_Static_assert(HW_SERVICE_RECORD_BYTES(0) == SVC_KEY_LEN + 16, "service key length");

static int check_config(const h_run *run, char *err, size_t errn)
{
	const hw_service *s = &run->w->service;
	if (s->value_bytes < SVC_VALUE_MIN || s->value_bytes > PROLLY_MAX_VALUE) {
		snprintf(err, errn,
		         "service: value_bytes must be %d to %d (a value carries its key's slot, a "
		         "generation and a checksum), not %" PRIu32,
		         SVC_VALUE_MIN, PROLLY_MAX_VALUE, s->value_bytes);
		return -1;
	}
	if (!s->records || !s->tenants || !s->commit_keys || !s->multi_read_keys) {
		snprintf(err, errn,
		         "service: records, tenants, commit_keys and multi_read_keys must "
		         "be at least 1");
		return -1;
	}
	if (s->records > 9999999999ull) {
		snprintf(err, errn, "service: at most 9999999999 records (10-digit keys)");
		return -1;
	}
	if (strcmp(run->store, "postgres") && strcmp(run->store, "lmdb") && strcmp(run->store, "mem")) {
		snprintf(err, errn, "service: unknown store '%s'", run->store);
		return -1;
	}
	if (!strcmp(run->store, "postgres") && (!run->url || !run->schema)) {
		snprintf(err, errn, "service: the postgres store needs a URL and a schema");
		return -1;
	}
	if ((s->access & 1u << HW_ACCESS_SQL) && strcmp(run->store, "postgres")) {
		snprintf(err, errn,
		         "service: access = \"sql\" runs through the PostgreSQL extension: it needs "
		         "--store postgres, not %s",
		         run->store);
		return -1;
	}
	if (!strcmp(run->store, "lmdb") && !run->scratch) {
		snprintf(err, errn, "service: the lmdb store needs a scratch directory");
		return -1;
	}
	return 0;
}

int hsvc_run(h_run *run, char *err, size_t errn)
{
	const hw_service *cfg = &run->w->service;
	svc_fixture fx;
	prolly_store *st = NULL; /* lmdb, mem: shared by every cell; postgres: the fixture's */
	prolly_db *setup = NULL;
	hp_conn *pc = NULL;
	PGconn *ext = NULL; /* access = "sql": installed the extension, drops it at the end */
	char lmdb_dir[4200] = "", cell_id[64], what[96];
	unsigned todo = 0;
	int is_pg, rc, ret = -1;

	memset(&fx, 0, sizeof(fx));

	if (!cfg->enabled || !hsvc_cells(run->w))
		return 0;
	if (check_config(run, err, errn))
		return -1;
	is_pg = strcmp(run->store, "postgres") == 0;
	for (int i = 0; i < cfg->n_clients; i++)
		for (int j = 0; j < cfg->n_pool_sizes; j++)
			for (int a = 0; a < HW_N_ACCESS; a++) {
				if (!(cfg->access & 1u << a))
					continue;
				cell_name(cell_id, sizeof(cell_id), a, cfg->clients[i], cfg->pool_sizes[j]);
				todo += !h_cell_done(run, &hsvc_suite, cell_id);
			}

	if (todo) {
		uint64_t t0 = bench_now_ns();
		if (svc_fixture_init(&fx, cfg, err, errn))
			goto cleanup;
		if (is_pg) {
			prolly_pg_options po = PROLLY_PG_OPTIONS_INIT;
			po.schema = run->schema;
			po.pool_size = 2;
			po.batch_items = cfg->adapter_batch_items;
			po.node_size = run->w->node_size;
			if (pg_drop_schema(run->url, run->schema, err, errn))
				goto cleanup;
			if ((rc = prolly_store_pg_open(&st, run->url, &po))) {
				svc_prolly_fail(err, errn, "opening the PostgreSQL store", rc);
				goto cleanup;
			}
			if (cfg->access & 1u << HW_ACCESS_SQL) {
				if (bench_pg_connect(&ext, run->url) != 0) {
					svc_prolly_fail(err, errn, "connecting to install the extension",
					                PROLLY_ESTORE);
					goto cleanup;
				}
				if (svc_sql_install(ext, run->schema, err, errn))
					goto cleanup;
			}
			char perr[H_ERR];
			if (hp_connect(&pc, run->url, run->schema, perr, sizeof(perr))) {
				fprintf(stderr, "service: warning: no PostgreSQL counters: %s\n", perr);
				pc = NULL;
			}
		} else if (!strcmp(run->store, "lmdb")) {
			snprintf(lmdb_dir, sizeof(lmdb_dir), "%s/service-lmdb", run->scratch);
			bench_rm_tree(lmdb_dir);
			if ((rc = bench_store_open_local(&st, lmdb_dir, run->w->node_size))) {
				svc_prolly_fail(err, errn, "opening the LMDB store", rc);
				goto cleanup;
			}
		} else if ((rc = bench_store_open_local(&st, NULL, run->w->node_size))) {
			svc_prolly_fail(err, errn, "opening the memory store", rc);
			goto cleanup;
		}
		if ((rc = svc_open_db(&setup, st))) {
			svc_prolly_fail(err, errn, "opening a handle", rc);
			goto cleanup;
		}
		if (svc_fixture_build(&fx, setup, run->w->seed, err, errn))
			goto cleanup;
		prolly_close(setup);
		setup = NULL;
		if (is_pg) { /* every cell opens its own pool */
			prolly_store_close(st);
			st = NULL;
		}
		fprintf(stderr,
		        "service: fixture of %" PRIu64 " records x %" PRIu32 " bytes, %" PRIu32
		        " tenants, %" PRIu32 " hot roots built in %.1f s\n",
		        cfg->records, cfg->value_bytes, cfg->tenants, cfg->hot_roots,
		        (double)(bench_now_ns() - t0) / 1e9);
	}

	/* Per (clients, pool): the cell of each access mode, client first. Both modes' cells of one
	 * (clients, pool) have the same index, hence the same seeds: the same operations. */
	for (int i = 0; i < cfg->n_clients; i++)
		for (int j = 0; j < cfg->n_pool_sizes; j++)
			for (int a = 0; a < HW_N_ACCESS; a++) {
				uint32_t c = cfg->clients[i], p = cfg->pool_sizes[j];
				if (!(cfg->access & 1u << a))
					continue;
				cell_name(cell_id, sizeof(cell_id), a, c, p);
				if (h_cell_done(run, &hsvc_suite, cell_id)) {
					h_cell_skipped(run);
					snprintf(what, sizeof(what),
					         "clients=%" PRIu32 " pool=%" PRIu32 "%s (done: skipped)", c, p,
					         a == HW_ACCESS_SQL ? " access=sql" : "");
					h_progress(run, "service", what);
					continue;
				}
				snprintf(what, sizeof(what), "clients=%" PRIu32 " pool=%" PRIu32 "%s", c, p,
				         a == HW_ACCESS_SQL ? " access=sql" : "");
				h_progress(run, "service", what);
				if (run_cell(run, &fx, is_pg ? NULL : st, pc, a,
				             (unsigned)(i * cfg->n_pool_sizes + j), c, p, cell_id, err, errn))
					goto cleanup;
			}
	ret = 0;
cleanup:
	if (ext) {
		bench_pg_drop_prolly(ext, run->schema); /* the scale suite installs it next */
		PQfinish(ext);
	}
	prolly_close(setup);
	prolly_store_close(st);
	hp_close(pc);
	if (lmdb_dir[0])
		bench_rm_tree(lmdb_dir);
	svc_fixture_dispose(&fx);
	return ret;
}

static int enabled(const hw_workload *w)
{
	return w->service.enabled;
}

const h_suite hsvc_suite = {
    .name = "service",
    .raw_file = RAW_FILE,
    .columns = hsvc_columns,
    .enabled = enabled,
    .cells = hsvc_cells,
    .run = hsvc_run,
    .summary_columns = hr_service_summary_columns,
    .summary = hr_service_summary,
    .gate_throughput = "succeeded_per_s",
    .gate_p99 = "p99_ms",
    .gate_p99_unit = "ms",
    .gate_rates = 1,
    .report = hrep_service_section,
};
