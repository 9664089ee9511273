/*
 * tpcb_common.c - what the tpcb suite's contenders and its runner share (tpcb_int.h), below all
 * of them: the four tables as versioned tables (pgbench's schema, tpcb_int.h), a one-value
 * query on the server (tpcb_query_value), the server's context switches sampled while a cell
 * runs (bench_csw_* of bench/lib/proc.h), this process's CPU and context switches, and a sleep that keeps sampling.
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

/* ---- this process and waiting ------------------------------------------------------------- */

void tpcb_self_counters(double *cpu_ms, double *csw)
{
	*cpu_ms = (double)bench_cpu_ns() / 1e6;
	*csw = (double)bench_self_csw();
}

void tpcb_sleep_until(uint64_t until, bench_csw *c)
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
		bench_csw_poll(c);
	}
}
