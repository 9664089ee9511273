/*
 * tpcb_common.c - what the tpcb suite's contenders and its runner share (tpcb_int.h), below all
 * of them: the four tables as versioned tables (pgbench's schema, tpcb_int.h), a one-value
 * query on the server (tpcb_query_value), the server's context switches sampled while a cell
 * runs (tpcb_csw_*), this process's CPU and context switches, and a sleep that keeps sampling.
 * It uses no other tpcb file: tpcb.c, tpcb_prolly.c and tpcb_pgbench.c call into it, never
 * the other way.
 */
#include "tpcb_int.h"

#include "clock.h"
#include "pgconn.h"
#include "proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* ---- the four tables ---------------------------------------------------------------------- */

const bt_table tpcb_accounts = {
    .name = "pgbench_accounts",
    .id = 1,
    .ncols = 4,
    .cols = {{"aid", BT_INT}, {"bid", BT_INT}, {"abalance", BT_INT}, {"filler", BT_TEXT}},
    .pk = TA_AID};
const bt_table tpcb_tellers = {
    .name = "pgbench_tellers",
    .id = 2,
    .ncols = 4,
    .cols = {{"tid", BT_INT}, {"bid", BT_INT}, {"tbalance", BT_INT}, {"filler", BT_TEXT}},
    .pk = TT_TID};
const bt_table tpcb_branches = {
    .name = "pgbench_branches",
    .id = 3,
    .ncols = 3,
    .cols = {{"bid", BT_INT}, {"bbalance", BT_INT}, {"filler", BT_TEXT}},
    .pk = TB_BID};
const bt_table tpcb_history = {.name = "pgbench_history",
                               .id = 4,
                               .ncols = 6,
                               .cols = {{"hid", BT_INT},
                                        {"tid", BT_INT},
                                        {"bid", BT_INT},
                                        {"aid", BT_INT},
                                        {"delta", BT_INT},
                                        {"mtime", BT_INT}},
                               .pk = TH_HID};
const bt_table *const tpcb_tables[4] = {&tpcb_branches, &tpcb_tellers, &tpcb_accounts,
                                        &tpcb_history};

/* ---- server queries ----------------------------------------------------------------------- */

int tpcb_query_value(const char *url, const char *schema, const char *sql, char *out, size_t n,
                     char *err, size_t errn)
{
	PGconn *pg = NULL;
	PGresult *res = NULL;
	int ret = -1;
	out[0] = '\0';
	if (bench_pg_connect(&pg, url)) {
		snprintf(err, errn, "tpcb: %s", prolly_last_error());
		return -1;
	}
	if (schema) {
		char q[300], id[140];
		if (bench_pg_ident(id, sizeof(id), schema) < 0)
			goto fail;
		snprintf(q, sizeof(q), "SET search_path = %s", id);
		if (bench_pg_exec(pg, q, NULL))
			goto fail;
	}
	if (bench_pg_exec(pg, sql, &res))
		goto fail;
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) > 0)
		snprintf(out, n, "%s", PQgetvalue(res, 0, 0));
	ret = 0;
	goto cleanup;
fail:
	snprintf(err, errn, "tpcb: %s", prolly_last_error());
cleanup:
	PQclear(res);
	PQfinish(pg);
	return ret;
}

/* ---- the server's context switches -------------------------------------------------------- */

#define CSW_MAX 1024
struct tpcb_csw {
	long ppid;
	size_t n;
	long pid[CSW_MAX];
	uint64_t first[CSW_MAX], last[CSW_MAX];
};

static void csw_sample(tpcb_csw *c, int at_start)
{
	long pids[CSW_MAX];
	uint64_t sw[CSW_MAX];
	size_t n = bench_children_csw(c->ppid, pids, sw, CSW_MAX);
	if (n > CSW_MAX)
		n = CSW_MAX;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < c->n && c->pid[j] != pids[i])
			j++;
		if (j == c->n) {
			if (c->n == CSW_MAX)
				continue;
			c->pid[j] = pids[i];
			c->first[j] = at_start ? sw[i] : 0; /* born in the window: all of it counts */
			c->n++;
		}
		c->last[j] = sw[i];
	}
}

tpcb_csw *tpcb_csw_start(long postmaster)
{
	tpcb_csw *c;
	if (postmaster <= 0 || !(c = calloc(1, sizeof(*c))))
		return NULL;
	c->ppid = postmaster;
	csw_sample(c, 1);
	return c;
}

void tpcb_csw_poll(tpcb_csw *c)
{
	if (c)
		csw_sample(c, 0);
}

double tpcb_csw_total(tpcb_csw *c)
{
	if (!c)
		return -1;
	csw_sample(c, 0);
	double t = 0;
	for (size_t i = 0; i < c->n; i++)
		t += (double)(c->last[i] - c->first[i]);
	free(c);
	return t;
}

/* ---- this process and waiting ------------------------------------------------------------- */

void tpcb_self_counters(double *cpu_ms, double *csw)
{
	*cpu_ms = (double)bench_cpu_ns() / 1e6;
	*csw = (double)bench_self_csw();
}

void tpcb_sleep_until(uint64_t until, tpcb_csw *c)
{
	for (;;) {
		uint64_t now = bench_now_ns();
		if (now >= until)
			return;
		uint64_t step = until - now;
		if (step > 100000000ULL)
			step = 100000000ULL;
		struct timespec ts = {(time_t)(step / 1000000000ULL), (long)(step % 1000000000ULL)};
		nanosleep(&ts, NULL);
		tpcb_csw_poll(c);
	}
}
