/*
 * insert.c - the insert suite (hins_*): the insert benchmark's steps (l.i0, l.x, l.i1, l.i2,
 * then qrN and qpN for each background writer rate N) on three contenders in the same run:
 * plain PostgreSQL tables with a primary key and three secondary B-tree indexes, prolly through
 * the C client, prolly through SQL (bench/tables/table.h). docs/harness.md, "The suites" (insert)
 * says what each step does and what each column means; insert_steps.c how.
 *
 * Order: step by step, and within a step the contenders in turn (plain, client, sql), so the
 * three meet the same machine at about the same time. Each contender has its own data, one table
 * per client: plain tables in schema "<schema>_ins_plain", prolly branches "insert-c<i>" in the
 * stores "<schema>_ins_client" and "<schema>_ins_sql" (the prolly extension is installed in the
 * last for the suite and dropped after it). The three schemas are dropped at the start, and at
 * the end of a run that completed.
 *
 * Cells: one per (step, contender), cell_id "<step>-<contender>" ("l.i0-plain", "qr100-sql"),
 * one row each. Resume: a contender whose every cell is on disk is not run; otherwise its data
 * is built again from l.i0 (each step needs the ones before it) and only the cells not on disk
 * are written.
 *
 * Needs the postgres store: on another store the suite says so and runs nothing.
 */
#include "insert_int.h"

#include "clock.h"
#include "pgconn.h"
#include "proc.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RAW_FILE "insert-raw.csv"
#define MAX_STEPS (4 + 2 * HW_MAX_LIST)

const char *const hins_contender_names[] = {"plain", "client", "sql", NULL};

#define K(field) offsetof(hins_config, field)
const hw_key hins_keys[] = {
    {"enabled", HW_K_BOOL, K(enabled), 0, 1, "false", NULL, "run the insert suite"},
    {"rows", HW_K_U64, K(rows), 1, 1e10, "1000000", NULL,
     "l.i0: rows inserted into each client's table, in primary-key order"},
    {"rows_per_commit", HW_K_U64, K(rows_per_commit), 1, 1e6, "1000", NULL,
     "l.i0: rows per transaction"},
    {"l1_rows", HW_K_U64, K(l1_rows), 1, 1e10, "50000", NULL,
     "l.i1: rows each client inserts, deleting as many of its oldest"},
    {"l1_rows_per_commit", HW_K_U64, K(l1_rows_per_commit), 1, 1e6, "50", NULL,
     "l.i1: rows inserted (and deleted) per transaction"},
    {"l2_rows", HW_K_U64, K(l2_rows), 1, 1e10, "10000", NULL,
     "l.i2: rows each client inserts, deleting as many of its oldest"},
    {"l2_rows_per_commit", HW_K_U64, K(l2_rows_per_commit), 1, 1e6, "5", NULL,
     "l.i2: rows inserted (and deleted) per transaction"},
    {"query_seconds", HW_K_U64, K(query_seconds), 1, 86400, "15", NULL,
     "each qr/qp step: seconds of queries"},
    {"writer_rates", HW_K_U64_LIST, K(writer_rates), 1, 1e6, "[100, 500, 1000]", NULL,
     "rows/s each client's background writer inserts and deletes: steps qrN and qpN per rate"},
    {"writer_rows_per_commit", HW_K_U64, K(writer_rows_per_commit), 1, 1e5, "10", NULL,
     "rows per background writer transaction"},
    {"range_rows", HW_K_U64, K(range_rows), 1, 1e5, "10", NULL,
     "qr: index entries each range query reads"},
    {"clients", HW_K_U64, K(clients), 1, HINS_MAX_CLIENTS, "1", NULL,
     "clients, each with its own table (prolly: branch)"},
    {"data_bytes", HW_K_U64, K(data_bytes), 1, HINS_DATA_MAX, "20", NULL,
     "bytes of each row's data column"},
    {"contenders", HW_K_NAME_LIST, K(contenders), 0, 0, "[\"plain\", \"client\", \"sql\"]",
     hins_contender_names, "the contenders, run in this order within each step"},
    {NULL, 0, 0, 0, 0, NULL, NULL, NULL},
};
#undef K

const char *const hins_columns[] = {
    "cell_id", "cell_rows", "suite", "store", "step", "contender", "unit", "clients", "rows",
    "rows_per_commit", "writer_rate", "writer_rows_per_commit", "range_rows", "data_bytes",
    "query_seconds", "seed", "started", "finished", "elapsed_s",
    /* the step's operations: rows (l.i*), indexes (l.x) or queries (q*) */
    "ops", "ops_per_s", "samples", "p50_ms", "p99_ms", "max_ms", "mean_ms", "hdr", "per_second_ops",
    "per_second_p50_ms", "per_second_p99_ms", "per_second_max_ms",
    /* q steps: the background writers (rows; latency per transaction) */
    "writer_ops", "writer_ops_per_s", "writer_samples", "writer_p50_ms", "writer_p99_ms",
    "writer_max_ms", "writer_mean_ms", "writer_hdr", "writer_per_second_ops",
    "writer_per_second_p50_ms", "writer_per_second_p99_ms", "writer_per_second_max_ms",
    "writer_target_rows_per_s", "inserted", "deleted", "errors", "conflicts", "retries", "found",
    "missing", "range_entries", "short_ranges",
    /* per operation */
    "client_cpu_us_per_op", "backend_cpu_us_per_op", "server_cpu_us_per_op", "client_csw_per_op",
    "backend_csw_per_op", "backends", "wal_bytes_per_op", "nodes_written_per_op",
    "node_bytes_written_per_op", "round_trips_per_op", "contender_bytes", "client_rss_mib",
    "client_peak_rss_mib", "load1", "validated", "check", "first_error",
    /* hp_columns */
    "pg_calls", "pg_exec_ms", "wal_bytes", "xact_commit", "xact_rollback", "blks_hit", "blks_read",
    "db_bytes_before", "db_bytes_after", "table_bytes_before", "table_bytes_after",
    "index_bytes_before", "index_bytes_after", NULL};

static const hins_config *config(const hw_workload *w)
{
	return hw_section(w, &hins_suite);
}

static size_t steps(const hins_config *cfg, hins_step *out)
{
	size_t n = 0;
	static const char *const names[4] = {"l.i0", "l.x", "l.i1", "l.i2"};
	for (int k = HINS_LI0; k <= HINS_LI2; k++) {
		out[n].kind = k;
		out[n].rate = 0;
		snprintf(out[n].name, sizeof(out[n].name), "%s", names[k]);
		n++;
	}
	for (int i = 0; i < cfg->writer_rates.n; i++)
		for (int k = HINS_QR; k <= HINS_QP; k++) {
			out[n].kind = k;
			out[n].rate = cfg->writer_rates.v[i];
			snprintf(out[n].name, sizeof(out[n].name), "%s%" PRIu64, k == HINS_QR ? "qr" : "qp",
			         out[n].rate);
			n++;
		}
	return n;
}

static unsigned ncontenders(const hins_config *cfg)
{
	unsigned n = 0;
	for (int k = 0; k < BT_N_CONTENDERS; k++)
		n += (cfg->contenders >> k) & 1u;
	return n;
}

unsigned hins_cells(const hw_workload *w)
{
	const hins_config *cfg = config(w);
	hins_step st[MAX_STEPS];
	if (!cfg || !cfg->enabled)
		return 0;
	return (unsigned)steps(cfg, st) * ncontenders(cfg);
}

static void cell_name(char *out, size_t n, const hins_step *st, int kind)
{
	snprintf(out, n, "%s-%s", st->name, bt_contender_names[kind]);
}

/* ---- PostgreSQL set-up ----------------------------------------------------------------------- */

static int drop_schemas(PGconn *pg, const h_run *run, char *err, size_t errn)
{
	char s[64], q[160], sql[256];
	for (int k = 0; k < BT_N_CONTENDERS; k++) {
		hins_schema(s, sizeof(s), run, (bt_kind)k);
		if (bench_pg_ident(q, sizeof(q), s) != 0)
			return -1;
		snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE", q);
		if (bench_pg_exec(pg, sql, NULL) != 0) {
			bench_seterr(err, errn, "insert: dropping schema %s: %.300s", s, prolly_last_error());
			return -1;
		}
	}
	return 0;
}

/* The sql contender's schema with the extension in it. */
static int install_extension(PGconn *pg, const h_run *run, char *err, size_t errn)
{
	char s[64], q[160], sql[256], in[128];
	hins_schema(s, sizeof(s), run, BT_SQL);
	if (bench_pg_ident(q, sizeof(q), s) != 0 || bench_pg_ext_schema(in, sizeof(in), pg) != 0) {
		bench_seterr(err, errn, "insert: looking for the prolly extension: %.300s",
		             prolly_last_error());
		return -1;
	}
	if (in[0]) {
		bench_seterr(err, errn,
		             "insert: the prolly extension of this database is installed in schema "
		             "\"%.64s\"; the sql contender installs it in \"%.64s\" (DROP EXTENSION "
		             "prolly, or leave \"sql\" out of [insert] contenders)",
		             in, s);
		return -1;
	}
	snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", q);
	if (bench_pg_exec(pg, sql, NULL) != 0) {
		bench_seterr(err, errn, "insert: creating schema %s: %.300s", s, prolly_last_error());
		return -1;
	}
	snprintf(sql, sizeof(sql), "CREATE EXTENSION prolly SCHEMA %s", q);
	if (bench_pg_exec(pg, sql, NULL) != 0) {
		bench_seterr(err, errn,
		             "insert: the sql contender needs the prolly extension in this server (make "
		             "-C ext/postgres install): %.300s",
		             prolly_last_error());
		return -1;
	}
	return 0;
}

/* ---- rows ------------------------------------------------------------------------------------ */

static int emit(const h_run *run, const hins_config *cfg, const hins_step *st, int kind,
                const char *cell_id, const char *started, const char *finished,
                const hins_result *r, const hins_usage *u, const hp_snapshot *before, double bytes,
                char *err, size_t errn)
{
	static const char *const units[] = {"rows", "indexes", "rows", "rows", "queries", "queries"};
	hrow *row = hrow_new();
	int q = st->kind == HINS_QR || st->kind == HINS_QP, ret = -1;
	if (!row)
		goto oom;
	hrow_str(row, "cell_id", cell_id);
	hrow_u64(row, "cell_rows", 1);
	hrow_str(row, "suite", "insert");
	hrow_str(row, "store", run->store);
	hrow_str(row, "step", st->name);
	hrow_str(row, "contender", bt_contender_names[kind]);
	hrow_str(row, "unit", units[st->kind]);
	hrow_u64(row, "clients", cfg->clients);
	hrow_u64(row, "rows", cfg->rows);
	hrow_u64(row, "rows_per_commit",
	         st->kind == HINS_LI0   ? cfg->rows_per_commit
	         : st->kind == HINS_LI1 ? cfg->l1_rows_per_commit
	         : st->kind == HINS_LI2 ? cfg->l2_rows_per_commit
	         : q                    ? cfg->writer_rows_per_commit
	                                : 0);
	hrow_u64(row, "writer_rate", st->rate);
	hrow_u64(row, "writer_rows_per_commit", cfg->writer_rows_per_commit);
	hrow_u64(row, "range_rows", cfg->range_rows);
	hrow_u64(row, "data_bytes", cfg->data_bytes);
	hrow_u64(row, "query_seconds", cfg->query_seconds);
	hrow_u64(row, "seed", run->w->seed);
	hrow_str(row, "started", started);
	hrow_str(row, "finished", finished);
	hrow_f64(row, "elapsed_s", r->elapsed_s);
	if (hins_series_row(row, &r->main, "", r->elapsed_s) != 0)
		goto oom;
	if (q) {
		if (hins_series_row(row, &r->writer, "writer_", r->elapsed_s) != 0)
			goto oom;
		hrow_u64(row, "writer_target_rows_per_s", st->rate * cfg->clients);
	}
	hrow_u64(row, "inserted", r->inserted);
	hrow_u64(row, "deleted", r->deleted);
	hrow_u64(row, "errors", r->errors);
	hrow_u64(row, "conflicts", r->conflicts);
	hrow_u64(row, "retries", r->retries);
	hrow_u64(row, "found", r->found);
	hrow_u64(row, "missing", r->missing);
	hrow_u64(row, "range_entries", r->range_entries);
	hrow_u64(row, "short_ranges", r->short_ranges);
	hins_usage_row(row, u, before, r->main.ops);
	{
		double ops = r->main.ops ? (double)r->main.ops : 1;
		hrow_f64(row, "nodes_written_per_op", (double)r->nodes_written / ops);
		hrow_f64(row, "node_bytes_written_per_op", (double)r->node_bytes_written / ops);
		hrow_f64(row, "round_trips_per_op", (double)r->round_trips / ops);
	}
	hrow_f64(row, "contender_bytes", bytes);
	hrow_f64(row, "load1", bench_load1());
	/* Validated: no operation failed, every point query found its row as written, no range
	 * read more than range_rows entries, and the check after the step passed. */
	hrow_u64(row, "validated",
	         r->errors == 0 && r->missing == 0 && r->long_ranges == 0 && r->checked_ok);
	hrow_str(row, "check", r->check);
	hrow_str(row, "first_error", r->first_error);
	ret = h_emit(run, &hins_suite, &row, 1, err, errn);
	goto cleanup;
oom:
	bench_seterr(err, errn, "insert: out of memory writing the row of %s", cell_id);
cleanup:
	hrow_free(row);
	return ret;
}

/* ---- the suite ------------------------------------------------------------------------------- */

int hins_run(h_run *run, char *err, size_t errn)
{
	const hins_config *cfg = config(run->w);
	hins_step st[MAX_STEPS];
	hins_data *data = NULL;
	hins_meter *meter = NULL;
	PGconn *admin = NULL;
	char cell_id[64], what[128], started[32], finished[32], schema[64];
	int todo[BT_N_CONTENDERS] = {0}, any = 0, ret = -1, ext = 0;

	if (!cfg || !cfg->enabled || !hins_cells(run->w))
		return 0;
	if (strcmp(run->store, "postgres") != 0) {
		fprintf(stderr,
		        "insert: skipped: the insert suite compares prolly with plain PostgreSQL "
		        "tables and needs --store postgres (this run's store is %s)\n",
		        run->store);
		return 0;
	}
	if (!run->url || !run->schema) {
		bench_seterr(err, errn, "insert: the postgres store needs a URL and a schema");
		return -1;
	}
	size_t nst = steps(cfg, st);
	for (int k = 0; k < BT_N_CONTENDERS; k++)
		for (size_t i = 0; (cfg->contenders >> k & 1u) && i < nst; i++) {
			cell_name(cell_id, sizeof(cell_id), &st[i], k);
			if (!h_cell_done(run, &hins_suite, cell_id))
				todo[k] = any = 1;
		}
	if (!any) {
		for (size_t i = 0; i < nst; i++)
			for (int k = 0; k < BT_N_CONTENDERS; k++)
				if (cfg->contenders >> k & 1u) {
					h_cell_skipped(run);
					snprintf(what, sizeof(what), "%s %s (done: skipped)", st[i].name,
					         bt_contender_names[k]);
					h_progress(run, "insert", what);
				}
		return 0;
	}

	if (bench_pg_connect(&admin, run->url) != 0) {
		bench_seterr(err, errn, "insert: connecting: %.300s", prolly_last_error());
		goto cleanup;
	}
	if (drop_schemas(admin, run, err, errn) != 0)
		goto cleanup;
	if (todo[BT_SQL]) {
		if (install_extension(admin, run, err, errn) != 0)
			goto cleanup;
		ext = 1;
	}
	if (hins_meter_open(&meter, run->url, run->schema, err, errn) != 0)
		goto cleanup;
	if (!(data = calloc(BT_N_CONTENDERS, sizeof(*data)))) {
		bench_seterr(err, errn, "insert: out of memory");
		goto cleanup;
	}
	for (int k = 0; k < BT_N_CONTENDERS; k++)
		if (todo[k] && hins_data_open(&data[k], cfg, (bt_kind)k, run, err, errn) != 0)
			goto cleanup;

	for (size_t i = 0; i < nst; i++)
		for (int k = 0; k < BT_N_CONTENDERS; k++) {
			if (!(cfg->contenders >> k & 1u))
				continue;
			cell_name(cell_id, sizeof(cell_id), &st[i], k);
			int done = h_cell_done(run, &hins_suite, cell_id);
			snprintf(what, sizeof(what), "%s %s%s", st[i].name, bt_contender_names[k],
			         !done     ? ""
			         : todo[k] ? " (done: replayed, not written)"
			                   : " (done: skipped)");
			h_progress(run, "insert", what);
			if (done)
				h_cell_skipped(run);
			if (!todo[k])
				continue;
			hins_result r;
			hins_usage u;
			hp_snapshot before;
			if (hins_result_init(&r) != 0) {
				hins_result_dispose(&r);
				bench_seterr(err, errn, "insert: out of memory");
				goto cleanup;
			}
			bench_utc_now(started, sizeof(started));
			hins_meter_start(meter);
			before = *hins_meter_before(meter);
			int rc = hins_step_run(&data[k], &st[i], run, &r, err, errn);
			hins_meter_stop(meter, &u);
			bench_utc_now(finished, sizeof(finished));
			hins_schema(schema, sizeof(schema), run, (bt_kind)k);
			double bytes = hins_meter_schema_bytes(meter, schema);
			if (rc == 0 && !done)
				rc = emit(run, cfg, &st[i], k, cell_id, started, finished, &r, &u, &before, bytes,
				          err, errn);
			if (rc == 0)
				fprintf(stderr, "insert %s: %.1f %s/s, p99 %.2f ms, max %.2f ms%s%s%s\n", cell_id,
				        r.elapsed_s > 0 ? (double)r.main.ops / r.elapsed_s : 0,
				        st[i].kind == HINS_LX   ? "indexes"
				        : st[i].kind >= HINS_QR ? "queries"
				                                : "rows",
				        (double)hdr_percentile(r.main.all, 99) / 1e6,
				        (double)hdr_max(r.main.all) / 1e6, r.check[0] ? ", CHECK: " : "", r.check,
				        r.first_error[0] ? ", an operation failed" : "");
			hins_result_dispose(&r);
			if (rc != 0)
				goto cleanup;
		}
	ret = 0;
cleanup:
	if (data)
		for (int k = 0; k < BT_N_CONTENDERS; k++)
			hins_data_close(&data[k]);
	free(data);
	hins_meter_close(meter);
	if (admin) {
		char e[H_ERR];
		if (ext)
			bench_pg_drop_prolly(admin, NULL);
		if (ret == 0)
			drop_schemas(admin, run, e, sizeof(e));
		PQfinish(admin);
	}
	return ret;
}

const h_suite hins_suite = {
    .name = "insert",
    .raw_file = RAW_FILE,
    .columns = hins_columns,
    .cells = hins_cells,
    .run = hins_run,
    .gate_throughput = "ops_per_s",
    .gate_p99 = "p99_ms",
    .gate_p99_unit = "ms",
    .report = hins_report,
    .keys = hins_keys,
    .config_size = sizeof(hins_config),
    .gate_qps = "ops_per_s",
};
