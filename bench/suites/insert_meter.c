/*
 * insert_meter.c - what an insert-suite cell measures besides its own operations (insert_int.h):
 *
 *   series   the row of a per-second series (bench/lib/series.h: operation counts and
 *            latencies, shared by a cell's threads; the whole cell's histogram beside them)
 *   meter    the client process's CPU (every thread) and context switches (getrusage), the
 *            PostgreSQL backends' CPU and context switches (/proc/PID/stat and status of every
 *            client backend of the database but the monitors, listed from pg_stat_activity at
 *            the start and at the end of the cell), the whole server's CPU (the postmaster, the
 *            parent of the monitor's own backend, and its children), and the server counters
 *            of pgstat.c (WAL bytes, commits, database size)
 *
 * A backend seen only at the end (a connection opened during the cell) counts all its CPU; one
 * gone by the end (closed during the cell) counts none: the suite opens its sessions before a
 * cell and closes them after, so neither happens in its cells.
 */
#include "insert_int.h"

#include "clock.h"
#include "pgconn.h"
#include "proc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BACKENDS 256

/* ---- series ---------------------------------------------------------------------------------- */

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static void put(hrow *row, const char *prefix, const char *name, const char *v)
{
	char col[64];
	snprintf(col, sizeof(col), "%s%s", prefix, name);
	hrow_str(row, col, v);
}

static void putf(hrow *row, const char *prefix, const char *name, double v)
{
	char col[64];
	snprintf(col, sizeof(col), "%s%s", prefix, name);
	hrow_f64(row, col, v);
}

int hins_series_row(hrow *row, const bench_series *s, const char *prefix, double elapsed_s)
{
	size_t nsec = s->max_sec ? s->max_sec : elapsed_s > 0 ? (size_t)(elapsed_s + 0.999) : 1;
	bench_buf b[4] = {{0}};
	static const char *const names[4] = {"per_second_ops", "per_second_p50_ms", "per_second_p99_ms",
	                                     "per_second_max_ms"};
	int ret = -1;
	if (s->oom)
		return -1;
	putf(row, prefix, "ops", (double)s->ops);
	putf(row, prefix, "ops_per_s", elapsed_s > 0 ? (double)s->ops / elapsed_s : 0);
	putf(row, prefix, "samples", (double)hdr_count(s->all));
	putf(row, prefix, "p50_ms", ms(hdr_percentile(s->all, 50)));
	putf(row, prefix, "p99_ms", ms(hdr_percentile(s->all, 99)));
	putf(row, prefix, "max_ms", ms(hdr_max(s->all)));
	putf(row, prefix, "mean_ms", hdr_mean(s->all) / 1e6);
	char *text = hdr_to_text(s->all);
	if (!text)
		return -1;
	put(row, prefix, "hdr", text);
	free(text);
	for (size_t i = 0; i < nsec; i++) {
		uint64_t ops, p50, p99, max;
		const char *sep = i ? ";" : "";
		bench_series_second(s, i, &ops, &p50, &p99, &max);
		bench_buf_printf(&b[0], "%s%" PRIu64, sep, ops);
		bench_buf_printf(&b[1], "%s%.3f", sep, ms(p50));
		bench_buf_printf(&b[2], "%s%.3f", sep, ms(p99));
		bench_buf_printf(&b[3], "%s%.3f", sep, ms(max));
	}
	for (int i = 0; i < 4; i++) {
		if (b[i].oom)
			goto cleanup;
		put(row, prefix, names[i], b[i].p ? b[i].p : "");
	}
	ret = 0;
cleanup:
	for (int i = 0; i < 4; i++)
		bench_buf_free(&b[i]);
	return ret;
}

/* ---- meter ----------------------------------------------------------------------------------- */

typedef struct pid_use {
	long pid;
	double cpu_ms;
	uint64_t csw;
} pid_use;

struct hins_meter {
	PGconn *pg;
	hp_conn *hp;
	long postmaster;
	/* at hins_meter_start */
	uint64_t cpu0, csw0;
	double server0;
	pid_use b0[MAX_BACKENDS];
	size_t nb0;
	hp_snapshot pg0;
};

#define MONITOR_NAME "prolly-harness-monitor" /* pgstat.c's application_name, and ours */

int hins_meter_open(hins_meter **out, const char *url, const char *schema, char *err, size_t errn)
{
	hins_meter *m = calloc(1, sizeof(*m));
	*out = NULL;
	if (!m) {
		bench_seterr(err, errn, "insert: out of memory");
		return -1;
	}
	if (bench_pg_connect(&m->pg, url) != 0 ||
	    bench_pg_exec(m->pg, "SET application_name = '" MONITOR_NAME "'", NULL) != 0 ||
	    bench_pg_postmaster(&m->postmaster, m->pg) != 0) {
		bench_seterr(err, errn, "insert: the monitoring connection: %.300s", prolly_last_error());
		hins_meter_close(m);
		return -1;
	}
	char perr[H_ERR];
	if (hp_connect(&m->hp, url, schema, perr, sizeof(perr)) != 0) {
		fprintf(stderr, "insert: warning: no PostgreSQL counters: %s\n", perr);
		m->hp = NULL;
	}
	*out = m;
	return 0;
}

void hins_meter_close(hins_meter *m)
{
	if (!m)
		return;
	if (m->pg)
		PQfinish(m->pg);
	hp_close(m->hp);
	free(m);
}

/* The client backends of this database but the monitors, with their usage now. */
static size_t backends(hins_meter *m, pid_use *out, size_t max)
{
	PGresult *res = NULL;
	size_t n = 0;
	if (bench_pg_exec(m->pg,
	                  "SELECT pid::text FROM pg_stat_activity WHERE datname = current_database() "
	                  "AND backend_type = 'client backend' AND pid <> pg_backend_pid() "
	                  "AND application_name IS DISTINCT FROM '" MONITOR_NAME "'",
	                  &res) != 0)
		return 0;
	for (int i = 0; i < PQntuples(res) && n < max; i++) {
		pid_use *u = &out[n];
		u->pid = strtol(PQgetvalue(res, i, 0), NULL, 10);
		if (bench_pid_usage(u->pid, &u->cpu_ms, &u->csw) == 0)
			n++;
	}
	PQclear(res);
	return n;
}

void hins_meter_start(hins_meter *m)
{
	char perr[H_ERR];
	memset(&m->pg0, 0, sizeof(m->pg0));
	if (m->hp && hp_snap(m->hp, &m->pg0, perr, sizeof(perr)) != 0)
		fprintf(stderr, "insert: warning: PostgreSQL counters: %s\n", perr);
	m->nb0 = backends(m, m->b0, MAX_BACKENDS);
	m->server0 = bench_server_cpu_ms(m->postmaster);
	m->csw0 = bench_self_csw();
	m->cpu0 = bench_cpu_ns();
}

void hins_meter_stop(hins_meter *m, hins_usage *u)
{
	pid_use b1[MAX_BACKENDS];
	char perr[H_ERR];
	memset(u, 0, sizeof(*u));
	u->client_cpu_ns = bench_cpu_ns() - m->cpu0;
	u->client_csw = bench_self_csw() - m->csw0;
	double server1 = bench_server_cpu_ms(m->postmaster);
	u->server_cpu_ms = m->server0 >= 0 && server1 >= 0 ? server1 - m->server0 : -1;
	size_t n1 = backends(m, b1, MAX_BACKENDS);
	for (size_t i = 0; i < n1; i++) {
		double cpu = b1[i].cpu_ms;
		uint64_t csw = b1[i].csw;
		for (size_t j = 0; j < m->nb0; j++)
			if (m->b0[j].pid == b1[i].pid) {
				cpu -= m->b0[j].cpu_ms;
				csw -= m->b0[j].csw;
				break;
			}
		u->backend_cpu_ms += cpu;
		u->backend_csw += csw;
	}
	u->backends = (int)n1;
	if (m->hp && hp_snap(m->hp, &u->pg, perr, sizeof(perr)) != 0)
		fprintf(stderr, "insert: warning: PostgreSQL counters: %s\n", perr);
	u->pg.valid = u->pg.valid && m->pg0.valid;
}

const hp_snapshot *hins_meter_before(const hins_meter *m)
{
	return &m->pg0;
}

double hins_meter_schema_bytes(hins_meter *m, const char *schema)
{
	const char *v[1] = {schema};
	PGresult *res = PQexecParams(
	    m->pg,
	    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::float8 FROM pg_class c "
	    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN "
	    "('r', 'm')",
	    1, NULL, v, NULL, NULL, 0);
	double bytes = -1;
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
		bytes = strtod(PQgetvalue(res, 0, 0), NULL);
	PQclear(res);
	return bytes;
}

static double per(double a, uint64_t ops)
{
	return ops ? a / (double)ops : 0;
}

void hins_usage_row(hrow *row, const hins_usage *u, const hp_snapshot *before, uint64_t ops)
{
	double anon, file;
	hrow_f64(row, "client_cpu_us_per_op", per((double)u->client_cpu_ns / 1e3, ops));
	hrow_f64(row, "backend_cpu_us_per_op", per(u->backend_cpu_ms * 1e3, ops));
	hrow_f64(row, "server_cpu_us_per_op",
	         u->server_cpu_ms >= 0 ? per(u->server_cpu_ms * 1e3, ops) : -1);
	hrow_f64(row, "client_csw_per_op", per((double)u->client_csw, ops));
	hrow_f64(row, "backend_csw_per_op", per((double)u->backend_csw, ops));
	hrow_u64(row, "backends", (uint64_t)u->backends);
	if (before && before->valid && u->pg.valid) {
		hp_delta_row(row, before, &u->pg);
		hrow_f64(row, "wal_bytes_per_op", per(u->pg.wal_bytes - before->wal_bytes, ops));
	}
	bench_rss_mib(&anon, &file);
	hrow_f64(row, "client_rss_mib", anon >= 0 && file >= 0 ? anon + file : -1);
	hrow_f64(row, "client_peak_rss_mib", bench_peak_rss_mib());
}
