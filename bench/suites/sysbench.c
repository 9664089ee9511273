/*
 * sysbench.c - the sysbench suite (hsb_*): sysbench's microbenchmarks and OLTP transactions on
 * sbtest tables, run by three contenders in the same run on the same data (bench/tables/table.h:
 * plain PostgreSQL tables, prolly through the C client, prolly through SQL), as
 * docs/benchmarks/sysbench.md and docs/harness.md describe.
 *
 * Fixture (untimed, once per hsb_run when a cell is left to do): `tables` sbtest tables of
 * `table_size` rows (sysbench_int.h) loaded into the plain contender's tables and into one
 * prolly branch ("sysbench") that the client and sql contenders share, in commits of
 * load_batch rows.
 *
 * Cells, in this order (Y2: reads before writes): per microbenchmark of sb_benches (range ones
 * per range length, random-points per in-list size), per client count, per contender. A cell:
 * `clients` threads, each with its own session (table.h), warmup_ms of the closed loop
 * (unrecorded), a pause while the client's and the server's CPU time and context switches and
 * the PostgreSQL counters are read, duration_ms recorded (an event started before the end is
 * completed and recorded), the counters read again. A write cell is then checked
 * (sb_check_writes) through a session of its own contender.
 *
 * Rows (sysbench-raw.csv, hsb_columns): one per cell, cell_id
 * "<microbenchmark>[-<range length or in-list size>]-c<clients>-<contender>", cell_rows 1.
 * QPS counts the statements of sysbench's event (sb_queries_per_event): a read-write
 * transaction is 18 queries. Latency is per event, lost races and their retries included.
 */
#include "sysbench_int.h"

#include "clock.h"
#include "pgconn.h"
#include "proc.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RAW_FILE "sysbench-raw.csv"
#define BRANCH "sysbench"
#define HIST_HIGHEST 600000000000ULL /* 10 minutes */

const char *const sb_bench_names[SB_N_BENCHES + 1] = {
    "point-query",  "random-points",   "range",      "range-count",   "range-sum",  "read-only",
    "update-index", "update-nonindex", "update-one", "delete-insert", "read-write", NULL};
const char *const sb_bench_groups[SB_N_BENCHES] = {"point",     "point", "range", "range-agg",
                                                   "range-agg", "oltp",  "write", "write",
                                                   "write",     "write", "oltp"};
const char *const sb_contender_names[BT_N_CONTENDERS + 1] = {"plain", "client", "sql", NULL};

const hw_key hsb_keys[] = {
    {"enabled", HW_K_BOOL, offsetof(sb_config, enabled), 0, 1, "false", NULL,
     "run the sysbench suite"},
    {"tables", HW_K_U64, offsetof(sb_config, tables), 1, SB_MAX_TABLES, "1", NULL,
     "sbtest tables (each event picks one at random)"},
    {"table_size", HW_K_U64, offsetof(sb_config, table_size), 10, 1e9, "10000", NULL,
     "rows per table (ids 1..table_size)"},
    {"load_batch", HW_K_U64, offsetof(sb_config, load_batch), 1, 1e7, "10000", NULL,
     "rows per commit when loading"},
    {"clients", HW_K_U64_LIST, offsetof(sb_config, clients), 1, 1024, "[1, 4]", NULL,
     "client threads: one cell per count"},
    {"warmup_ms", HW_K_U64, offsetof(sb_config, warmup_ms), 0, 3.6e6, "1000", NULL,
     "unrecorded warmup of each cell"},
    {"duration_ms", HW_K_U64, offsetof(sb_config, duration_ms), 10, 3.6e6, "3000", NULL,
     "recorded length of each cell"},
    {"range_lengths", HW_K_U64_LIST, offsetof(sb_config, range_lengths), 1, 32000,
     "[10, 100, 1000, 10000]", NULL, "ids per range, range-count and range-sum query"},
    {"inlist_sizes", HW_K_U64_LIST, offsetof(sb_config, inlist_sizes), 1, 10000, "[10, 100]", NULL,
     "ids per random-points in-list"},
    {"oltp_range_size", HW_K_U64, offsetof(sb_config, oltp_range_size), 1, 32000, "100", NULL,
     "ids per range query of read-only and read-write"},
    {"max_retries", HW_K_U64, offsetof(sb_config, max_retries), 0, 1e6, "100", NULL,
     "retries of a transaction that lost its race before it counts as an error"},
    {"microbenchmarks", HW_K_NAME_LIST, offsetof(sb_config, microbenchmarks), 0, 0,
     "[\"point-query\", \"random-points\", \"range\", \"range-count\", \"range-sum\", "
     "\"read-only\", \"update-index\", \"update-nonindex\", \"update-one\", \"delete-insert\", "
     "\"read-write\"]",
     sb_bench_names, "microbenchmarks to run (they run in this order whatever the list's)"},
    {"contenders", HW_K_NAME_LIST, offsetof(sb_config, contenders), 0, 0,
     "[\"plain\", \"client\", \"sql\"]", sb_contender_names,
     "plain PostgreSQL tables, prolly through the C client, prolly through SQL"},
    {NULL, 0, 0, 0, 0, NULL, NULL, NULL}};

/* Must list every column of hp_columns (pgstat.c); the test checks it. */
const char *const hsb_columns[] = {
    "cell_id", "cell_rows", "suite", "store", "group", "microbenchmark", "param", "label",
    "clients", "contender", "tables", "table_size", "warmup_ms", "duration_ms", "seed", "started",
    "finished", "elapsed_ms", "events", "queries_per_event", "queries", "errors", "retries", "tps",
    "qps", "lat_avg_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms", "samples", "hdr",
    "client_cpu_us_per_query", "server_cpu_us_per_query", "client_cs_per_query",
    "server_cs_per_query", "load1", "checked", "validation_failures", "validated", "first_error",
    "per_second_qps",
    /* hp_columns */
    "pg_calls", "pg_exec_ms", "wal_bytes", "xact_commit", "xact_rollback", "blks_hit", "blks_read",
    "db_bytes_before", "db_bytes_after", "table_bytes_before", "table_bytes_after",
    "index_bytes_before", "index_bytes_after", NULL};

static const sb_config *config(const hw_workload *w)
{
	return hw_section(w, &hsb_suite);
}

/* The parameters of bench b: range lengths, in-list sizes, or the single 0. */
static const uint64_t *params(const sb_config *c, int b, int *n)
{
	static const uint64_t none = 0;
	if (b == SB_RANGE || b == SB_RANGE_COUNT || b == SB_RANGE_SUM) {
		*n = c->range_lengths.n;
		return c->range_lengths.v;
	}
	if (b == SB_RANDOM_POINTS) {
		*n = c->inlist_sizes.n;
		return c->inlist_sizes.v;
	}
	*n = 1;
	return &none;
}

static unsigned n_contenders(const sb_config *c)
{
	unsigned n = 0;
	for (int k = 0; k < BT_N_CONTENDERS; k++)
		n += (c->contenders >> k) & 1u;
	return n;
}

unsigned hsb_cells(const hw_workload *w)
{
	const sb_config *c = config(w);
	unsigned n = 0;
	if (!c || !c->enabled)
		return 0;
	for (int b = 0; b < SB_N_BENCHES; b++) {
		int np;
		if (!(c->microbenchmarks >> b & 1u))
			continue;
		params(c, b, &np);
		n += (unsigned)np * (unsigned)c->clients.n * n_contenders(c);
	}
	return n;
}

static void cell_name(char *out, size_t n, int b, uint64_t param, uint64_t clients, int kind)
{
	char p[32] = "";
	if (param)
		snprintf(p, sizeof(p), "-%" PRIu64, param);
	snprintf(out, n, "%s%s-c%" PRIu64 "-%s", sb_bench_names[b], p, clients,
	         sb_contender_names[kind]);
}

/* ------------------------------------------------------------------------------------------ */
/* Tables and loading                                                                         */
/* ------------------------------------------------------------------------------------------ */

int sb_data_init(sb_data *d, const sb_config *cfg, uint64_t seed)
{
	memset(d, 0, sizeof(*d));
	d->cfg = cfg;
	d->seed = seed;
	for (unsigned t = 0; t < cfg->tables; t++) {
		bt_table *tb = &d->tables[t];
		snprintf(d->names[t][0], sizeof(d->names[t][0]), "sbtest%u", t + 1);
		snprintf(d->names[t][1], sizeof(d->names[t][1]), "k_%u", t + 1);
		tb->name = d->names[t][0];
		tb->id = (uint8_t)(t + 1);
		tb->ncols = 4;
		tb->cols[0] = (bt_column){"id", BT_INT};
		tb->cols[1] = (bt_column){"k", BT_INT};
		tb->cols[2] = (bt_column){"c", BT_TEXT};
		tb->cols[3] = (bt_column){"pad", BT_TEXT};
		tb->pk = 0;
		tb->nindexes = 1;
		tb->indexes[0].name = d->names[t][1];
		tb->indexes[0].ncols = 1;
		tb->indexes[0].cols[0] = 1;
		d->tptr[t] = tb;
		if (!(d->prefix[t] = malloc((cfg->table_size + 1) * sizeof(int64_t))))
			return -1;
		d->prefix[t][0] = 0;
		char c[SB_C_LEN + 1], pad[SB_PAD_LEN + 1];
		for (uint64_t id = 1; id <= cfg->table_size; id++) {
			bt_row r;
			sb_gen_row(d, t, (int64_t)id, &r, c, pad);
			d->prefix[t][id] = d->prefix[t][id - 1] + r.ints[1];
		}
	}
	return 0;
}

void sb_data_dispose(sb_data *d)
{
	for (unsigned t = 0; t < SB_MAX_TABLES; t++)
		free(d->prefix[t]);
	memset(d, 0, sizeof(*d));
}

typedef struct load_ctx {
	const sb_data *d;
	unsigned t;
	char c[SB_C_LEN + 1], pad[SB_PAD_LEN + 1];
} load_ctx;

static int load_row(void *payload, uint64_t i, bt_row *row)
{
	load_ctx *l = payload;
	sb_gen_row(l->d, l->t, (int64_t)i + 1, row, l->c, l->pad);
	return 0;
}

/* Opens every enabled contender's data, loading it where it was created: plain always; the
 * prolly branch once (by the first of client and sql). */
static int open_all(bt_db **dbs, const h_run *run, const sb_data *d, char *err, size_t errn)
{
	const sb_config *cfg = d->cfg;
	int prolly_loaded = 0;
	for (int k = 0; k < BT_N_CONTENDERS; k++) {
		char e[H_ERR] = "";
		if (!(cfg->contenders >> k & 1u))
			continue;
		int create = k == BT_PLAIN || !prolly_loaded;
		if (bt_db_open(&dbs[k], (bt_kind)k, run->url, run->schema, BRANCH, d->tptr,
		               (size_t)cfg->tables, create, run->w->node_size, e, sizeof(e))) {
			snprintf(err, errn, "sysbench: opening the %s contender: %s", sb_contender_names[k], e);
			return -1;
		}
		if (!create)
			continue;
		bt_session *s = NULL;
		uint64_t t0 = bench_now_ns();
		if (bt_session_open(&s, dbs[k], e, sizeof(e))) {
			snprintf(err, errn, "sysbench: a %s session: %s", sb_contender_names[k], e);
			return -1;
		}
		for (unsigned t = 0; t < cfg->tables; t++) {
			load_ctx l = {.d = d, .t = t};
			if (bt_load(s, d->tptr[t], cfg->table_size, cfg->load_batch, load_row, &l) ||
			    bt_create_index(s, d->tptr[t], 1)) {
				snprintf(err, errn, "sysbench: loading %s (%s): %s", d->tptr[t]->name,
				         sb_contender_names[k], bt_session_error(s));
				bt_session_close(s);
				return -1;
			}
		}
		bt_session_close(s);
		prolly_loaded |= k != BT_PLAIN;
		fprintf(stderr, "sysbench: %" PRIu64 " x %" PRIu64 " rows loaded for %s in %.1f s\n",
		        cfg->tables, cfg->table_size, k == BT_PLAIN ? "plain" : "client and sql",
		        (double)(bench_now_ns() - t0) / 1e9);
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Cells                                                                                      */
/* ------------------------------------------------------------------------------------------ */

static void account(sb_worker *w, uint64_t t0, uint64_t t1, const sb_ev *e)
{
	sb_cell *c = w->cell;
	w->events++;
	w->retries += e->retries;
	w->checked += e->checked;
	if (e->rc)
		w->errors++;
	if (e->bad)
		w->bad++;
	if ((e->rc || e->bad) && !w->first_err[0])
		snprintf(w->first_err, sizeof(w->first_err), "%s", e->msg);
	hdr_record(w->h, t1 - t0);
	uint64_t sec = t1 > c->start ? (t1 - c->start) / 1000000000u : 0;
	w->per_second[sec < c->nsec ? sec : c->nsec - 1]++;
}

static void loop(sb_worker *w, uint64_t until, int record)
{
	for (;;) {
		uint64_t t0 = bench_now_ns();
		if (t0 >= until)
			break;
		sb_ev e;
		memset(&e, 0, sizeof(e));
		sb_event(w, &e);
		if (record)
			account(w, t0, bench_now_ns(), &e);
	}
}

/* Waits until c->need threads (the workers and the main thread) have arrived. */
static void meet(sb_cell *c)
{
	pthread_mutex_lock(&c->mu);
	unsigned gen = c->gen;
	if (++c->arrived >= c->need) {
		c->arrived = 0;
		c->gen++;
		pthread_cond_broadcast(&c->cv);
	} else {
		while (c->gen == gen)
			pthread_cond_wait(&c->cv, &c->mu);
	}
	pthread_mutex_unlock(&c->mu);
}

/* Four meeting points with the main thread: sessions open, warmup may start, warmup done,
 * measurement may start. */
static void *worker_main(void *arg)
{
	sb_worker *w = arg;
	sb_cell *c = w->cell;
	if (bt_session_open(&w->s, c->db, w->err, sizeof(w->err)))
		w->failed = 1;
	meet(c);
	meet(c);
	if (!c->abort)
		loop(w, c->warm_end, 0);
	meet(c);
	meet(c);
	if (!c->abort)
		loop(w, c->end, 1);
	return NULL;
}

static int worker_init(sb_worker *w, sb_cell *c, unsigned i, uint64_t seed)
{
	memset(w, 0, sizeof(*w));
	w->cell = c;
	w->index = i;
	bench_rng_seed(&w->rng, seed ^ bench_mix64(((uint64_t)c->index << 20) + i + 1));
	size_t npk = 1;
	for (int j = 0; j < c->d->cfg->inlist_sizes.n; j++)
		if (c->d->cfg->inlist_sizes.v[j] > npk)
			npk = (size_t)c->d->cfg->inlist_sizes.v[j];
	w->pks = calloc(npk, sizeof(*w->pks));
	w->per_second = calloc(c->nsec, sizeof(*w->per_second));
	if (!w->pks || !w->per_second || hdr_new(&w->h, HIST_HIGHEST, 3))
		return -1;
	return 0;
}

static void worker_dispose(sb_worker *w)
{
	bt_session_close(w->s);
	hdr_free(w->h);
	free(w->pks);
	free(w->per_second);
	free(w->log);
	free(w->pend);
	memset(w, 0, sizeof(*w));
}

/* What one cell measured (all workers). */
typedef struct cell_totals {
	hdr_hist *h;
	uint64_t events, errors, bad, retries, checked, check_failed;
	uint64_t *per_second;
	double elapsed_s, client_cpu_ms, server_cpu_ms, client_cs, server_cs, load1;
	const char *first_err;
	char check_msg[256];
	char started[32], finished[32];
	hp_snapshot sa, sb;
} cell_totals;

static double per_q(double v, uint64_t q)
{
	return q && v >= 0 ? v / (double)q : NAN;
}

static int write_row(const h_run *run, const sb_cell *c, int kind, const char *cell_id,
                     const cell_totals *t, char *err, size_t errn)
{
	const sb_config *cfg = c->d->cfg;
	hrow *row = hrow_new();
	char *text = NULL, *ps = NULL;
	size_t psn = 0;
	FILE *pf = NULL;
	unsigned qpe = sb_queries_per_event(c->bench);
	uint64_t queries = t->events * qpe;
	int ret = -1;
	if (!row || !(text = hdr_to_text(t->h)) || !(pf = open_memstream(&ps, &psn)))
		goto oom;
	for (uint32_t i = 0; i < c->nsec; i++)
		fprintf(pf, "%s%.1f", i ? ";" : "", (double)t->per_second[i] * qpe);
	if (fclose(pf)) {
		pf = NULL;
		goto oom;
	}
	pf = NULL;
	hrow_str(row, "cell_id", cell_id);
	hrow_u64(row, "cell_rows", 1);
	hrow_str(row, "suite", "sysbench");
	hrow_str(row, "store", run->store);
	hrow_str(row, "group", sb_bench_groups[c->bench]);
	hrow_str(row, "microbenchmark", sb_bench_names[c->bench]);
	hrow_u64(row, "param", c->param);
	char label[64], pv[24] = "";
	if (c->param)
		snprintf(pv, sizeof(pv), "-%" PRIu64, c->param);
	snprintf(label, sizeof(label), "%s%s c%u", sb_bench_names[c->bench], pv, c->clients);
	hrow_str(row, "label", label);
	hrow_u64(row, "clients", c->clients);
	hrow_str(row, "contender", sb_contender_names[kind]);
	hrow_u64(row, "tables", cfg->tables);
	hrow_u64(row, "table_size", cfg->table_size);
	hrow_u64(row, "warmup_ms", cfg->warmup_ms);
	hrow_u64(row, "duration_ms", cfg->duration_ms);
	hrow_u64(row, "seed", run->w->seed);
	hrow_str(row, "started", t->started);
	hrow_str(row, "finished", t->finished);
	hrow_f64(row, "elapsed_ms", t->elapsed_s * 1e3);
	hrow_u64(row, "events", t->events);
	hrow_u64(row, "queries_per_event", qpe);
	hrow_u64(row, "queries", queries);
	hrow_u64(row, "errors", t->errors);
	hrow_u64(row, "retries", t->retries);
	hrow_f64(row, "tps", t->elapsed_s > 0 ? (double)t->events / t->elapsed_s : 0);
	hrow_f64(row, "qps", t->elapsed_s > 0 ? (double)queries / t->elapsed_s : 0);
	hrow_f64(row, "lat_avg_ms", hdr_mean(t->h) / 1e6);
	hrow_f64(row, "p50_ms", (double)hdr_percentile(t->h, 50) / 1e6);
	hrow_f64(row, "p95_ms", (double)hdr_percentile(t->h, 95) / 1e6);
	hrow_f64(row, "p99_ms", (double)hdr_percentile(t->h, 99) / 1e6);
	hrow_f64(row, "max_ms", (double)hdr_max(t->h) / 1e6);
	hrow_u64(row, "samples", hdr_count(t->h));
	hrow_str(row, "hdr", text);
	hrow_f64(row, "client_cpu_us_per_query", per_q(t->client_cpu_ms * 1e3, queries));
	hrow_f64(row, "server_cpu_us_per_query", per_q(t->server_cpu_ms * 1e3, queries));
	hrow_f64(row, "client_cs_per_query", per_q(t->client_cs, queries));
	hrow_f64(row, "server_cs_per_query", per_q(t->server_cs, queries));
	hrow_f64(row, "load1", t->load1);
	hrow_u64(row, "checked", t->checked);
	hrow_u64(row, "validation_failures", t->bad + t->check_failed);
	/* Validated: events completed and checked, none of their checks failed, and (writes) the
	 * re-read after the cell passed. */
	hrow_u64(row, "validated",
	         t->events > t->errors && t->checked > 0 && t->bad == 0 && t->check_failed == 0);
	hrow_str(row, "first_error", t->check_msg[0] ? t->check_msg : t->first_err);
	hrow_str(row, "per_second_qps", ps);
	if (t->sa.valid && t->sb.valid)
		hp_delta_row(row, &t->sa, &t->sb);
	ret = h_emit(run, &hsb_suite, &row, 1, err, errn);
	goto cleanup;
oom:
	snprintf(err, errn, "sysbench: out of memory writing the row of %s", cell_id);
cleanup:
	if (pf)
		fclose(pf);
	free(ps);
	free(text);
	hrow_free(row);
	return ret;
}

/* The suite's handles shared by every cell. */
typedef struct sb_env {
	const h_run *run;
	const sb_data *d;
	bt_db *dbs[BT_N_CONTENDERS];
	hp_conn *pc;
	long postmaster;
} sb_env;

static int run_cell(sb_env *env, int b, uint64_t param, unsigned clients, int kind, unsigned index,
                    const char *cell_id, char *err, size_t errn)
{
	const sb_config *cfg = env->d->cfg;
	int writes = b >= SB_UPDATE_INDEX;
	sb_cell c;
	cell_totals t;
	bt_session *chk = NULL;
	int64_t before[SB_MAX_TABLES];
	char perr[H_ERR];
	unsigned n_started = 0;
	int ret = -1, bar = 0;
	bench_csw *scs = NULL;

	memset(&c, 0, sizeof(c));
	memset(&t, 0, sizeof(t));
	c.d = env->d;
	c.db = env->dbs[kind];
	c.bench = b;
	c.param = param;
	c.clients = clients;
	c.index = index;
	c.nsec = (uint32_t)((cfg->duration_ms + 999) / 1000);
	if (!c.nsec)
		c.nsec = 1;
	if (writes) {
		if (bt_session_open(&chk, c.db, perr, sizeof(perr))) {
			snprintf(err, errn, "sysbench %s: a checking session: %s", cell_id, perr);
			goto cleanup;
		}
		if (sb_table_sums(chk, c.d, before, err, errn))
			goto cleanup;
	}
	if (!(c.workers = calloc(clients, sizeof(*c.workers))) ||
	    !(t.per_second = calloc(c.nsec, sizeof(*t.per_second))) || hdr_new(&t.h, HIST_HIGHEST, 3))
		goto oom;
	for (unsigned i = 0; i < clients; i++)
		if (worker_init(&c.workers[i], &c, i, env->run->w->seed))
			goto oom;
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	bar = 1;
	c.need = clients + 1;
	for (; n_started < clients; n_started++) {
		sb_worker *w = &c.workers[n_started];
		int rc = pthread_create(&w->th, NULL, worker_main, w);
		if (rc != 0) {
			/* the threads that did start meet with the main thread only */
			pthread_mutex_lock(&c.mu);
			c.need = n_started + 1;
			c.abort = 1;
			pthread_mutex_unlock(&c.mu);
			snprintf(err, errn, "sysbench: cannot start client thread %u: %s", n_started,
			         strerror(rc));
			break;
		}
		w->started = 1;
	}
	meet(&c); /* sessions open */
	for (unsigned i = 0; i < clients; i++)
		if (c.workers[i].failed && !c.abort) {
			snprintf(err, errn, "sysbench %s: client %u: %s", cell_id, i, c.workers[i].err);
			c.abort = 1;
		}
	c.warm_end = bench_now_ns() + cfg->warmup_ms * 1000000u;
	meet(&c); /* warmup */
	meet(&c); /* warmup done */
	if (env->pc && hp_snap(env->pc, &t.sa, perr, sizeof(perr)))
		fprintf(stderr, "sysbench %s: warning: PostgreSQL counters: %s\n", cell_id, perr);
	bench_utc_now(t.started, sizeof(t.started));
	double srv0 = bench_server_cpu_ms(env->postmaster);
	scs = bench_csw_start(env->postmaster);
	uint64_t cpu0 = bench_cpu_ns(), ccs0 = bench_self_csw();
	c.start = bench_now_ns();
	c.end = c.start + cfg->duration_ms * 1000000u;
	meet(&c); /* measure */
	for (unsigned i = 0; i < n_started; i++)
		pthread_join(c.workers[i].th, NULL);
	n_started = 0;
	if (c.abort)
		goto cleanup;
	uint64_t stop = bench_now_ns();
	t.client_cpu_ms = (double)(bench_cpu_ns() - cpu0) / 1e6;
	t.client_cs = (double)(bench_self_csw() - ccs0);
	double srv1 = bench_server_cpu_ms(env->postmaster);
	t.server_cpu_ms = srv0 >= 0 && srv1 >= 0 ? srv1 - srv0 : -1;
	/* per backend: one that ends inside the window (a pool closing a connection) takes its
	 * count away from a plain total, which could then fall */
	t.server_cs = bench_csw_total(scs);
	scs = NULL;
	t.load1 = bench_load1();
	t.elapsed_s = (double)(stop - c.start) / 1e9;
	bench_utc_now(t.finished, sizeof(t.finished));
	if (env->pc && hp_snap(env->pc, &t.sb, perr, sizeof(perr)))
		fprintf(stderr, "sysbench %s: warning: PostgreSQL counters: %s\n", cell_id, perr);

	t.first_err = "";
	for (unsigned i = 0; i < clients; i++) {
		sb_worker *w = &c.workers[i];
		if (hdr_merge(t.h, w->h))
			goto oom;
		t.events += w->events;
		t.errors += w->errors;
		t.bad += w->bad;
		t.retries += w->retries;
		t.checked += w->checked;
		for (uint32_t s = 0; s < c.nsec; s++)
			t.per_second[s] += w->per_second[s];
		if (!t.first_err[0] && w->first_err[0])
			t.first_err = w->first_err;
	}
	if (writes)
		t.checked += sb_check_writes(chk, &c, before, &t.check_failed, t.check_msg,
		                             sizeof(t.check_msg));
	if (write_row(env->run, &c, kind, cell_id, &t, err, errn))
		goto cleanup;
	fprintf(stderr,
	        "sysbench %s: %.1f qps, avg %.3f ms, p95 %.3f ms, %" PRIu64 " retries, %" PRIu64
	        " errors%s\n",
	        cell_id, t.elapsed_s > 0 ? (double)t.events * sb_queries_per_event(b) / t.elapsed_s : 0,
	        hdr_mean(t.h) / 1e6, (double)hdr_percentile(t.h, 95) / 1e6, t.retries, t.errors,
	        t.bad || t.check_failed ? ", VALIDATION FAILURES" : "");
	if ((t.bad || t.check_failed || t.errors) && env->run->verbose)
		fprintf(stderr, "sysbench %s: first error: %s\n", cell_id,
		        t.check_msg[0] ? t.check_msg : t.first_err);
	ret = 0;
	goto cleanup;
oom:
	snprintf(err, errn, "sysbench: out of memory in cell %s", cell_id);
cleanup:
	for (unsigned i = 0; i < n_started; i++)
		pthread_join(c.workers[i].th, NULL);
	if (bar) {
		pthread_mutex_destroy(&c.mu);
		pthread_cond_destroy(&c.cv);
	}
	for (unsigned i = 0; c.workers && i < clients; i++)
		worker_dispose(&c.workers[i]);
	free(c.workers);
	free(t.per_second);
	hdr_free(t.h);
	bt_session_close(chk);
	bench_csw_total(scs); /* frees it (NULL: nothing) */
	return ret;
}

/* ------------------------------------------------------------------------------------------ */
/* The suite                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* Most bytes of the tables' k prefix sums (sb_data_init: 8 bytes a row, held for the whole
 * suite): 1 GiB is 134 million rows, ten times the largest sysbench profile run here, while 64
 * tables of a billion rows asked for 512 GB. */
#define SB_MAX_PREFIX_BYTES (UINT64_C(1) << 30)

/* h_suite.check: what the keys ask for together (the workload refuses it, naming the key). */
static int check_config(const void *config, const char *at[2], char *msg, size_t msgn)
{
	const sb_config *cfg = config;
	uint64_t most = cfg->oltp_range_size;
	at[0] = "oltp_range_size";
	if (!cfg->enabled)
		return 0;
	for (int i = 0; i < cfg->range_lengths.n; i++)
		if (cfg->range_lengths.v[i] > most)
			most = cfg->range_lengths.v[i], at[0] = "range_lengths";
	for (int i = 0; i < cfg->inlist_sizes.n; i++)
		if (cfg->inlist_sizes.v[i] > most)
			most = cfg->inlist_sizes.v[i], at[0] = "inlist_sizes";
	at[1] = "table_size";
	if (most > cfg->table_size) {
		snprintf(msg, msgn,
		         "a range or in-list of %" PRIu64 " ids does not fit in table_size = %" PRIu64,
		         most, cfg->table_size);
		return -1;
	}
	at[0] = "clients";
	for (int i = 0; i < cfg->clients.n; i++)
		if (cfg->clients.v[i] * 3 > cfg->table_size) {
			snprintf(msg, msgn,
			         "%" PRIu64 " clients need table_size >= %" PRIu64
			         " (each writes three distinct ids of its own)",
			         cfg->clients.v[i], cfg->clients.v[i] * 3);
			return -1;
		}
	/* tables <= 64 and table_size <= 1e9: the product cannot overflow. */
	uint64_t bytes = cfg->tables * (cfg->table_size + 1) * sizeof(int64_t);
	at[0] = "table_size";
	at[1] = "tables";
	if (bytes > SB_MAX_PREFIX_BYTES) {
		snprintf(msg, msgn,
		         "%" PRIu64 " tables of %" PRIu64 " rows need %" PRIu64
		         " MiB of prefix sums (8 bytes a row; at most %" PRIu64 " MiB)",
		         cfg->tables, cfg->table_size, bytes >> 20, SB_MAX_PREFIX_BYTES >> 20);
		return -1;
	}
	return 0;
}

/* One cell of the configuration: microbenchmark, its parameter, clients, contender. */
typedef int (*cell_fn)(void *payload, int bench, uint64_t param, unsigned clients, int contender);

/* Calls fn for every cell the configuration asks for, in run order; stops at fn's first
 * non-zero return and returns it. */
static int each_cell(const sb_config *cfg, cell_fn fn, void *payload)
{
	for (int b = 0; b < SB_N_BENCHES; b++) {
		int np, rc;
		const uint64_t *pv = params(cfg, b, &np);
		if (!(cfg->microbenchmarks >> b & 1u))
			continue;
		for (int p = 0; p < np; p++)
			for (int ci = 0; ci < cfg->clients.n; ci++)
				for (int k = 0; k < BT_N_CONTENDERS; k++)
					if (cfg->contenders >> k & 1u &&
					    (rc = fn(payload, b, pv[p], (unsigned)cfg->clients.v[ci], k)))
						return rc;
	}
	return 0;
}

typedef struct cells_walk {
	h_run *run;
	sb_env *env;
	unsigned todo, index; /* cells not yet done; cells met so far */
	char *err;
	size_t errn;
} cells_walk;

static int count_todo(void *payload, int b, uint64_t param, unsigned clients, int k)
{
	cells_walk *w = payload;
	char cell_id[96];
	cell_name(cell_id, sizeof(cell_id), b, param, clients, k);
	w->todo += !h_cell_done(w->run, &hsb_suite, cell_id);
	return 0;
}

/* Runs a cell, or says it is done already (resume). */
static int run_one(void *payload, int b, uint64_t param, unsigned clients, int k)
{
	cells_walk *w = payload;
	char cell_id[96], what[128];
	w->index++;
	cell_name(cell_id, sizeof(cell_id), b, param, clients, k);
	if (h_cell_done(w->run, &hsb_suite, cell_id)) {
		h_cell_skipped(w->run);
		snprintf(what, sizeof(what), "%s (done: skipped)", cell_id);
		h_progress(w->run, "sysbench", what);
		return 0;
	}
	h_progress(w->run, "sysbench", cell_id);
	return run_cell(w->env, b, param, clients, k, w->index, cell_id, w->err, w->errn);
}

int hsb_run(h_run *run, char *err, size_t errn)
{
	const sb_config *cfg = config(run->w);
	sb_data d;
	sb_env env;
	int ret = -1;

	memset(&d, 0, sizeof(d));
	memset(&env, 0, sizeof(env));
	if (!cfg || !cfg->enabled || !hsb_cells(run->w))
		return 0;
	if (strcmp(run->store, "postgres") != 0) {
		fprintf(stderr,
		        "sysbench: skipped: its contenders are PostgreSQL tables and prolly on "
		        "PostgreSQL (--store postgres), not %s\n",
		        run->store);
		return 0;
	}
	if (!run->url || !run->schema) {
		snprintf(err, errn, "sysbench: the postgres store needs a URL and a schema");
		return -1;
	}
	/* The workload checked it already; a caller that filled cfg itself has not. */
	const char *at[2];
	char why[400];
	if (check_config(cfg, at, why, sizeof(why))) {
		snprintf(err, errn, "sysbench: %s", why);
		return -1;
	}
	cells_walk w = {run, &env, 0, 0, err, errn};
	each_cell(cfg, count_todo, &w);
	env.run = run;
	env.d = &d;
	if (w.todo) {
		char perr[H_ERR];
		if (sb_data_init(&d, cfg, run->w->seed)) {
			snprintf(err, errn, "sysbench: out of memory for the tables' sums");
			goto cleanup;
		}
		if (open_all(env.dbs, run, &d, err, errn))
			goto cleanup;
		if (hp_connect(&env.pc, run->url, run->schema, perr, sizeof(perr))) {
			fprintf(stderr, "sysbench: warning: no PostgreSQL counters: %s\n", perr);
			env.pc = NULL;
		}
		env.postmaster = bench_pg_postmaster_at(run->url);
		if (!env.postmaster)
			fprintf(stderr, "sysbench: warning: the server's process is not on this machine: "
			                "no server CPU time or context switches\n");
	}
	if (each_cell(cfg, run_one, &w))
		goto cleanup;
	ret = 0;
cleanup:
	if (env.dbs[BT_SQL])
		bench_pg_drop_prolly_at(run->url); /* installed by the sql contender's open */
	for (int k = 0; k < BT_N_CONTENDERS; k++)
		bt_db_close(env.dbs[k]);
	hp_close(env.pc);
	sb_data_dispose(&d);
	return ret;
}

const h_suite hsb_suite = {
    .name = "sysbench",
    .raw_file = RAW_FILE,
    .columns = hsb_columns,
    .cells = hsb_cells,
    .run = hsb_run,
    .gate_throughput = "qps",
    .gate_p99 = "p99_ms",
    .gate_p99_unit = "ms",
    .report = hsb_report,
    .keys = hsb_keys,
    .config_size = sizeof(sb_config),
    .check = check_config,
    .gate_qps = "qps",
};
