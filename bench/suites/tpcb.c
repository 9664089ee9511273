/*
 * tpcb.c - the tpcb suite (htpcb_*): pgbench's TPC-B-like transaction on accounts, tellers,
 * branches and history kept as versioned tables, swept over clients at two or more scales,
 * against Debian's real pgbench (tpcb_int.h lists the pieces; docs/harness.md "tpcb").
 *
 * Matrix, in run order: scales x modes ("tpcb", "select-only") x clients x contenders
 * (plain, client, sql: adjacent in time, so that they share the machine's conditions).
 * Cell id "s<scale>-<mode>-c<clients>-<contender>", one row each (cell_rows 1); column group
 * "s<scale>-<mode>" groups the relative-QPS report (gate_qps "tps": with --baseline, each cell's
 * TPS over the baseline's same cell).
 *
 * Fixture per scale (untimed, skipped when every cell of the scale is on disk): the prolly
 * store in schema <run schema>_tpcb (branch "tpcb", loaded through the first prolly contender
 * selected, both prolly contenders then run on the same data) and pgbench's tables in schema
 * <run schema>_pgbench (`pgbench -i -s SCALE`). Both schemas are dropped after the scale's cells.
 * The server's shared_buffers is read once; each row says whether the contender's data
 * (tables and indexes of its schema, before the cell) fit in it.
 *
 * Validation (the row's validated is "1" only if all hold), on the sums read after the cell:
 *   sum(account balances) == sum(teller balances) == sum(branch balances) == sum(history
 *   deltas), the TPC-B consistency conditions;
 *   history rows added by the cell == its committed transactions (warmup included; none in
 *   select-only);
 *   prolly: the balances moved by exactly the deltas of the committed transactions, and every
 *   read found its row (the read-back saw the balance before or after its own delta);
 *   at least one transaction in the window.
 * Lost races (BT_CONFLICT) are retried and counted (retries, retry_rate), never failures of the
 * cell; a transaction still losing after max_retries is counted in failed.
 */
#include "tpcb_int.h"

#include "clock.h"
#include "pgconn.h"
#include "proc.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- names -------------------------------------------------------------------------------- */

const char *const tpcb_mode_names[TPCB_N_MODES] = {"tpcb", "select-only"};
static const char *const mode_list[] = {"tpcb", "select-only", NULL};
static const char *const contender_list[] = {"plain", "client", "sql", NULL};

/* ---- the [tpcb] section ------------------------------------------------------------------- */

static const hw_key tpcb_keys[] = {
    {"enabled", HW_K_BOOL, offsetof(tpcb_cfg, enabled), 0, 0, "false", NULL, "run the tpcb suite"},
    {"scales", HW_K_U64_LIST, offsetof(tpcb_cfg, scales), 1, 100000, "[1, 30]", NULL,
     "pgbench scale factors (100,000 accounts, 10 tellers, 1 branch each): one whose data fits "
     "in shared_buffers, one several times larger"},
    {"clients", HW_K_U64_LIST, offsetof(tpcb_cfg, clients), 1, 256, "[1, 2, 4, 8, 16, 32]", NULL,
     "concurrent clients (threads; pgbench -c C -j C)"},
    {"modes", HW_K_NAME_LIST, offsetof(tpcb_cfg, modes), 0, 0, "[\"tpcb\", \"select-only\"]",
     mode_list, "transactions: the TPC-B-like one and pgbench's -S select-only"},
    {"contenders", HW_K_NAME_LIST, offsetof(tpcb_cfg, contenders), 0, 0,
     "[\"plain\", \"client\", \"sql\"]", contender_list,
     "plain: pgbench itself; client: prolly through the C library; sql: through the extension"},
    {"warmup_s", HW_K_U64, offsetof(tpcb_cfg, warmup_s), 0, 3600, "2", NULL,
     "seconds of each cell run before the measured window (not recorded)"},
    {"duration_s", HW_K_U64, offsetof(tpcb_cfg, duration_s), 1, 86400, "10", NULL,
     "seconds of each cell's measured window (pgbench -T)"},
    {"load_batch", HW_K_U64, offsetof(tpcb_cfg, load_batch), 1, 10000000, "50000", NULL,
     "rows per commit of the prolly load"},
    {"max_retries", HW_K_U64, offsetof(tpcb_cfg, max_retries), 0, 1000000, "1000", NULL,
     "times a transaction that lost its race (BT_CONFLICT) is run again before it counts as "
     "failed"},
    {NULL, 0, 0, 0, 0, NULL, NULL, NULL}};

const char *const htpcb_columns[] = {
    "cell_id", "cell_rows", "suite", "group", "contender", "mode", "scale", "accounts", "clients",
    "shared_buffers_bytes", "data_bytes", "fits_shared_buffers", "warmup_s", "duration_s", "seed",
    "started", "finished", "load_s", "elapsed_s", "transactions", "tps", "latency_avg_ms",
    "latency_p50_ms", "latency_p99_ms", "latency_max_ms", "hdr", "attempts", "retries",
    "retry_rate", "failed", "client_cpu_ms", "server_cpu_ms", "cpu_us_per_txn", "client_csw",
    "server_csw", "csw_per_txn", "wal_bytes_per_txn", "pg_calls_per_txn", "sum_accounts",
    "sum_tellers", "sum_branches", "sum_history", "history_rows", "history_added",
    "read_mismatches", "validated", "check", "per_second_tps", "first_error", "load1",
    /* hp_columns */
    "pg_calls", "pg_exec_ms", "wal_bytes", "xact_commit", "xact_rollback", "blks_hit", "blks_read",
    "db_bytes_before", "db_bytes_after", "table_bytes_before", "table_bytes_after",
    "index_bytes_before", "index_bytes_after", NULL};

static const tpcb_cfg *cfg_of(const hw_workload *w)
{
	return hw_section(w, &htpcb_suite);
}

static unsigned bits(unsigned v)
{
	unsigned n = 0;
	for (; v; v &= v - 1)
		n++;
	return n;
}

unsigned htpcb_cells(const hw_workload *w)
{
	const tpcb_cfg *c = cfg_of(w);
	if (!c || !c->enabled)
		return 0;
	return (unsigned)c->scales.n * bits(c->modes) * (unsigned)c->clients.n * bits(c->contenders);
}

/* ---- cells -------------------------------------------------------------------------------- */

static void fmt_id(char *out, size_t n, uint64_t scale, int mode, uint64_t clients, int k)
{
	snprintf(out, n, "s%llu-%s-c%llu-%s", (unsigned long long)scale, tpcb_mode_names[mode],
	         (unsigned long long)clients, bt_contender_names[k]);
}

static int scale_done(const h_run *run, const tpcb_cfg *cfg, uint64_t scale)
{
	char id[128];
	for (int m = 0; m < TPCB_N_MODES; m++)
		for (int ci = 0; ci < cfg->clients.n; ci++)
			for (int k = 0; k < BT_N_CONTENDERS; k++) {
				if (!(cfg->modes & (1u << m)) || !(cfg->contenders & (1u << k)))
					continue;
				fmt_id(id, sizeof(id), scale, m, cfg->clients.v[ci], k);
				if (!h_cell_done(run, &htpcb_suite, id))
					return 0;
			}
	return 1;
}

static char *per_second_text(const tpcb_result *r)
{
	bench_buf b = {0};
	for (uint32_t i = 0; r->per_second && i < r->nsec; i++)
		bench_buf_printf(&b, "%s%llu", i ? ";" : "", (unsigned long long)r->per_second[i]);
	bench_buf_putc(&b, '\0');
	return b.oom ? NULL : b.p;
}

static double per_txn(double v, uint64_t n)
{
	return v >= 0 && n ? v / (double)n : NAN;
}

static void fill_row(hrow *row, const tpcb_ctx *ctx, int k, int mode, unsigned clients,
                     const tpcb_result *r, const tpcb_sums *s, int64_t history_added,
                     double shared_buffers, double data_bytes, double load_s, const hp_snapshot *sa,
                     const hp_snapshot *sb)
{
	const tpcb_cfg *cfg = ctx->cfg;
	char *hdr = hdr_to_text(r->lat);
	char *ps = per_second_text(r);
	char group[64];
	snprintf(group, sizeof(group), "s%llu-%s", (unsigned long long)ctx->scale,
	         tpcb_mode_names[mode]);
	hrow_str(row, "suite", "tpcb");
	hrow_str(row, "group", group);
	hrow_str(row, "contender", bt_contender_names[k]);
	hrow_str(row, "mode", tpcb_mode_names[mode]);
	hrow_u64(row, "scale", ctx->scale);
	hrow_u64(row, "accounts", ctx->scale * TPCB_ACCOUNTS);
	hrow_u64(row, "clients", clients);
	if (shared_buffers > 0)
		hrow_f64(row, "shared_buffers_bytes", shared_buffers);
	if (data_bytes > 0) {
		hrow_f64(row, "data_bytes", data_bytes);
		if (shared_buffers > 0)
			hrow_u64(row, "fits_shared_buffers", data_bytes <= shared_buffers);
	}
	hrow_u64(row, "warmup_s", cfg->warmup_s);
	hrow_u64(row, "duration_s", cfg->duration_s);
	hrow_u64(row, "seed", ctx->run->w->seed);
	hrow_f64(row, "load_s", load_s);
	hrow_f64(row, "elapsed_s", r->elapsed_s);
	hrow_u64(row, "transactions", r->transactions);
	hrow_f64(row, "tps", r->tps);
	hrow_f64(row, "latency_avg_ms", hdr_mean(r->lat) / 1e6);
	hrow_f64(row, "latency_p50_ms", (double)hdr_percentile(r->lat, 50) / 1e6);
	hrow_f64(row, "latency_p99_ms", (double)hdr_percentile(r->lat, 99) / 1e6);
	hrow_f64(row, "latency_max_ms", (double)hdr_max(r->lat) / 1e6);
	hrow_str(row, "hdr", hdr ? hdr : "");
	hrow_u64(row, "attempts", r->attempts);
	hrow_u64(row, "retries", r->retries);
	hrow_f64(row, "retry_rate", r->attempts ? (double)r->retries / (double)r->attempts : 0);
	hrow_u64(row, "failed", r->failed);
	hrow_f64(row, "client_cpu_ms", r->client_cpu_ms);
	if (r->server_cpu_ms >= 0)
		hrow_f64(row, "server_cpu_ms", r->server_cpu_ms);
	double cpu = r->client_cpu_ms + (r->server_cpu_ms >= 0 ? r->server_cpu_ms : 0);
	hrow_f64(row, "cpu_us_per_txn", per_txn(cpu * 1e3, r->transactions));
	hrow_f64(row, "client_csw", r->client_csw);
	if (r->server_csw >= 0)
		hrow_f64(row, "server_csw", r->server_csw);
	hrow_f64(row, "csw_per_txn",
	         per_txn(r->client_csw + (r->server_csw >= 0 ? r->server_csw : 0), r->transactions));
	if (sa->valid && sb->valid) {
		hrow_f64(row, "wal_bytes_per_txn", per_txn(sb->wal_bytes - sa->wal_bytes, r->transactions));
		if (!isnan(sa->stmt_calls) && !isnan(sb->stmt_calls))
			hrow_f64(row, "pg_calls_per_txn",
			         per_txn(sb->stmt_calls - sa->stmt_calls, r->transactions));
		hp_delta_row(row, sa, sb);
	}
	hrow_i64(row, "sum_accounts", s->accounts);
	hrow_i64(row, "sum_tellers", s->tellers);
	hrow_i64(row, "sum_branches", s->branches);
	hrow_i64(row, "sum_history", s->history);
	hrow_i64(row, "history_rows", s->history_rows);
	hrow_i64(row, "history_added", history_added);
	hrow_u64(row, "read_mismatches", r->read_mismatches);
	hrow_str(row, "per_second_tps", ps ? ps : "");
	hrow_f64(row, "load1", bench_load1());
	free(hdr);
	free(ps);
}

/* The checks of the file comment; "" when all hold, else the first that failed in why. */
static void check(char *why, size_t n, int k, int mode, const tpcb_result *r, const tpcb_sums *b,
                  const tpcb_sums *a)
{
	int64_t added = a->history_rows - b->history_rows;
	int64_t want = mode == TPCB_MODE_RW ? (int64_t)r->all_commits : 0;
	why[0] = '\0';
	if (a->accounts != a->tellers || a->tellers != a->branches || a->branches != a->history)
		snprintf(why, n, "sums differ: accounts %lld tellers %lld branches %lld history %lld",
		         (long long)a->accounts, (long long)a->tellers, (long long)a->branches,
		         (long long)a->history);
	else if (added != want)
		snprintf(why, n, "history rows added %lld, committed transactions %lld", (long long)added,
		         (long long)want);
	else if (k != BT_PLAIN && mode == TPCB_MODE_RW && a->accounts - b->accounts != r->delta_sum)
		snprintf(why, n, "balances moved by %lld, the committed deltas sum to %lld",
		         (long long)(a->accounts - b->accounts), (long long)r->delta_sum);
	else if (k != BT_PLAIN && mode == TPCB_MODE_SELECT && a->accounts != b->accounts)
		snprintf(why, n, "a select-only cell changed the balances");
	else if (r->read_mismatches)
		snprintf(why, n, "%llu reads did not see what they should: %s",
		         (unsigned long long)r->read_mismatches, r->first_error);
	else if (!r->transactions)
		snprintf(why, n, "no transaction in the measured window: %s", r->first_error);
}

static int sums_of(tpcb_ctx *ctx, int k, tpcb_sums *s, char *err, size_t errn)
{
	return k == BT_PLAIN ? tpcb_pgbench_sums(ctx, s, err, errn)
	                     : tpcb_prolly_sums(ctx, s, err, errn);
}

/* A CHECKPOINT before each cell (untimed), so that no cell pays for the dirty pages and the
 * full-page images of what ran before it: the loads and the cells of the other contenders. Seen
 * without it: pgbench's WAL per transaction 0.5 KB after a load of 4 KiB nodes, 1.4-6.2 KB
 * after one of 1 or 2 KiB nodes (more rows, a checkpoint during its cell), its TPS lower with
 * it. Needs superuser or pg_checkpoint (PostgreSQL 15); without, a warning once, and the cells
 * run as before. */
static void checkpoint(const char *url)
{
	static int warned;
	char v[8], err[H_ERR];
	if (tpcb_query_value(url, NULL, "CHECKPOINT", v, sizeof(v), err, sizeof(err)) && !warned) {
		warned = 1;
		fprintf(stderr, "tpcb: warning: no CHECKPOINT before the cells: %s\n", err);
	}
}

/* One cell: measure, read the sums, check, emit. prev holds the contender's sums before it and
 * the ones after it on return. */
static int run_cell(tpcb_ctx *ctx, int k, int mode, unsigned clients, uint64_t cell_no, hp_conn *pc,
                    tpcb_sums *prev, double shared_buffers, double load_s, char *err, size_t errn)
{
	tpcb_result r;
	tpcb_sums after;
	hp_snapshot sa, sb;
	char started[32], finished[32], why[512], id[128];
	hrow *row = NULL;
	int ret = -1, rc;

	memset(&r, 0, sizeof(r));
	memset(&sa, 0, sizeof(sa));
	memset(&sb, 0, sizeof(sb));
	memset(&after, 0, sizeof(after));
	r.client_csw = r.server_csw = -1;
	if (hdr_new(&r.lat, 600000000000ULL, 3) || !(row = hrow_new())) {
		snprintf(err, errn, "tpcb: out of memory");
		goto cleanup;
	}
	fmt_id(id, sizeof(id), ctx->scale, mode, clients, k);
	checkpoint(ctx->run->url);
	bench_utc_now(started, sizeof(started));
	if (k == BT_PLAIN)
		rc = tpcb_pgbench_cell(ctx, mode, clients, pc, &sa, &sb, &r, err, errn);
	else
		rc = tpcb_prolly_cell(ctx, (bt_kind)k, mode, clients, cell_no, ctx->run->w->seed, pc, &sa,
		                      &sb, &r, err, errn);
	bench_utc_now(finished, sizeof(finished));
	if (rc)
		goto cleanup;
	if (sums_of(ctx, k, &after, err, errn))
		goto cleanup;
	check(why, sizeof(why), k, mode, &r, prev, &after);
	hrow_str(row, "cell_id", id);
	hrow_u64(row, "cell_rows", 1);
	hrow_str(row, "started", started);
	hrow_str(row, "finished", finished);
	fill_row(row, ctx, k, mode, clients, &r, &after, after.history_rows - prev->history_rows,
	         shared_buffers, sa.valid ? sa.table_bytes + sa.index_bytes : -1, load_s, &sa, &sb);
	hrow_str(row, "validated", why[0] ? "0" : "1");
	hrow_str(row, "check", why[0] ? why : "sums equal; history rows = commits");
	hrow_str(row, "first_error", r.first_error);
	if (why[0])
		fprintf(stderr, "tpcb: %s did not validate: %s\n", id, why);
	*prev = after;
	ret = h_emit(ctx->run, &htpcb_suite, &row, 1, err, errn);
cleanup:
	hrow_free(row);
	hdr_free(r.lat);
	free(r.per_second);
	return ret;
}

static void drop_schema(const char *url, const char *schema)
{
	char q[300], v[8], err[H_ERR], id[140];
	if (bench_pg_ident(id, sizeof(id), schema) < 0)
		return;
	snprintf(q, sizeof(q), "DROP SCHEMA IF EXISTS %s CASCADE", id);
	if (tpcb_query_value(url, NULL, q, v, sizeof(v), err, sizeof(err)))
		fprintf(stderr, "tpcb: warning: %s\n", err);
}

int htpcb_run(h_run *run, char *err, size_t errn)
{
	const tpcb_cfg *cfg = cfg_of(run->w);
	tpcb_ctx pctx, bctx; /* prolly, pgbench */
	char v[64], id[128], perr[H_ERR];
	double shared_buffers = -1;
	long postmaster = 0;
	int ret = -1;
	hp_conn *pc_prolly = NULL, *pc_plain = NULL;
	int want_prolly = (cfg->contenders & ((1u << BT_CLIENT) | (1u << BT_SQL))) != 0;
	int want_plain = (cfg->contenders & (1u << BT_PLAIN)) != 0;

	memset(&pctx, 0, sizeof(pctx));
	memset(&bctx, 0, sizeof(bctx));
	if (!run->url || strcmp(run->store, "postgres") != 0) {
		fprintf(stderr,
		        "tpcb: skipped: the suite runs on the postgres store only (pgbench and the "
		        "prolly store on the same server); this run's store is %s\n",
		        run->store);
		return 0;
	}
	if (tpcb_query_value(run->url, NULL,
	                     "SELECT pg_size_bytes(current_setting('shared_buffers'))::text", v,
	                     sizeof(v), err, errn))
		return -1;
	shared_buffers = strtod(v, NULL);
	postmaster = bench_pg_postmaster_at(run->url);
	pctx.run = bctx.run = run;
	pctx.cfg = bctx.cfg = cfg;
	pctx.postmaster = bctx.postmaster = postmaster;
	snprintf(pctx.schema, sizeof(pctx.schema), "%s_tpcb", run->schema ? run->schema : "prolly");
	snprintf(bctx.schema, sizeof(bctx.schema), "%s_pgbench", run->schema ? run->schema : "prolly");
	if (want_plain) {
		if (tpcb_pgbench_find(&bctx, err, errn))
			return -1;
		snprintf(bctx.tmp, sizeof(bctx.tmp), "%s/tpcb-XXXXXX",
		         run->scratch ? run->scratch : "/tmp");
		if (!mkdtemp(bctx.tmp)) {
			snprintf(err, errn, "tpcb: cannot make a scratch directory under %s: %s",
			         run->scratch ? run->scratch : "/tmp", strerror(errno));
			return -1;
		}
	}

	uint64_t cell_no = 0;
	for (int si = 0; si < cfg->scales.n; si++) {
		uint64_t scale = cfg->scales.v[si];
		unsigned ncells = bits(cfg->modes) * (unsigned)cfg->clients.n * bits(cfg->contenders);
		double pload = 0, bload = 0;
		tpcb_sums psums, bsums;
		memset(&psums, 0, sizeof(psums));
		memset(&bsums, 0, sizeof(bsums));
		if (scale_done(run, cfg, scale)) {
			for (unsigned i = 0; i < ncells; i++)
				h_cell_skipped(run);
			cell_no += ncells;
			continue;
		}
		pctx.scale = bctx.scale = scale;
		fprintf(stderr, "[tpcb] loading scale %llu\n", (unsigned long long)scale);
		if (want_prolly && (tpcb_prolly_open(&pctx, &pload, err, errn) ||
		                    tpcb_prolly_sums(&pctx, &psums, err, errn)))
			goto cleanup;
		if (want_plain && (tpcb_pgbench_init(&bctx, &bload, err, errn) ||
		                   tpcb_pgbench_sums(&bctx, &bsums, err, errn)))
			goto cleanup;
		if ((want_prolly && hp_connect(&pc_prolly, run->url, pctx.schema, perr, sizeof(perr))) ||
		    (want_plain && hp_connect(&pc_plain, run->url, bctx.schema, perr, sizeof(perr))))
			fprintf(stderr, "tpcb: warning: no server counters: %s\n", perr);
		for (int m = 0; m < TPCB_N_MODES; m++) {
			if (!(cfg->modes & (1u << m)))
				continue;
			for (int ci = 0; ci < cfg->clients.n; ci++) {
				unsigned clients = (unsigned)cfg->clients.v[ci];
				for (int k = 0; k < BT_N_CONTENDERS; k++) {
					if (!(cfg->contenders & (1u << k)))
						continue;
					cell_no++;
					fmt_id(id, sizeof(id), scale, m, clients, k);
					if (h_cell_done(run, &htpcb_suite, id)) {
						h_cell_skipped(run);
						continue;
					}
					h_progress(run, "tpcb", id);
					int rc = k == BT_PLAIN ? run_cell(&bctx, k, m, clients, cell_no, pc_plain,
					                                  &bsums, shared_buffers, bload, err, errn)
					                       : run_cell(&pctx, k, m, clients, cell_no, pc_prolly,
					                                  &psums, shared_buffers, pload, err, errn);
					if (rc)
						goto cleanup;
				}
			}
		}
		hp_close(pc_prolly);
		hp_close(pc_plain);
		pc_prolly = pc_plain = NULL;
		tpcb_prolly_close(&pctx);
		if (want_prolly)
			drop_schema(run->url, pctx.schema);
		if (want_plain)
			drop_schema(run->url, bctx.schema);
	}
	ret = 0;
cleanup:
	hp_close(pc_prolly);
	hp_close(pc_plain);
	tpcb_prolly_close(&pctx);
	if (bctx.tmp[0])
		bench_rm_tree(bctx.tmp);
	return ret;
}

const h_suite htpcb_suite = {
    .name = "tpcb",
    .raw_file = "tpcb-raw.csv",
    .columns = htpcb_columns,
    .cells = htpcb_cells,
    .run = htpcb_run,
    .gate_throughput = "tps",
    .gate_p99 = "latency_p99_ms",
    .gate_p99_unit = "ms",
    .report = tpcb_report,
    .keys = tpcb_keys,
    .config_size = sizeof(tpcb_cfg),
    .gate_qps = "tps",
};
