/*
 * tpcb_prolly.c - the tpcb suite's client and sql contenders: pgbench's TPC-B-like transaction
 * on versioned tables (bench/tables, table.h), one worker thread and one bt_session per client.
 *
 * Transaction (mode "tpcb"), as pgbench's builtin script, as ONE commit:
 *   bt_begin; account aid: read, balance += delta, bt_update; account aid read back; teller
 *   tid: read, balance += delta, update; branch bid the same; history insert (hid, tid, bid,
 *   aid, delta, mtime); bt_commit.
 * aid, tid, bid and delta are uniform as in pgbench (aid in [1, 100000 * scale], tid in
 * [1, 10 * scale], bid in [1, scale], delta in [-5000, 5000]), drawn per transaction from a
 * worker's own stream (seed, cell, client). A commit is merged into the branch head when
 * another client moved it since bt_begin (snapshot isolation, table.h); one that wrote a row also
 * written since bt_begin (BT_CONFLICT: at scale 1 every transaction writes the one branch row)
 * runs the same transaction again, up to max_retries times, each counted as a retry; its latency
 * runs from the first begin to the commit that landed. The read-back reads the transaction's
 * snapshot (table.h: reads in a transaction see the head it began on): it must find the balance
 * before or after the delta. Mode "select-only" is pgbench's -S: one point read of a random
 * account, no commit.
 *
 * Window: every worker runs from the cell's start; transactions that finish inside
 * [start + warmup, start + warmup + duration) are the measured ones (latency, per second),
 * those after it are not; history rows and deltas count every commit (the validation's
 * bookkeeping).
 */
#include "tpcb_int.h"

#include "clock.h"
#include "proc.h"
#include "rng.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIST_HIGHEST 600000000000ULL /* 10 minutes */

static const char spaces[89] = "                                                               "
                               "                          ";

typedef struct tw_cell tw_cell;

typedef struct tw {
	tw_cell *c;
	pthread_t th;
	unsigned idx;
	bt_session *s;
	bench_rng rng;
	hdr_hist *lat;
	uint64_t commits_window, commits_all, attempts, retries, failed, mismatches;
	int64_t delta_sum;
	uint64_t seq;
	char first_error[256];
} tw;

struct tw_cell {
	tpcb_ctx *ctx;
	int mode;
	uint64_t cell_no;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned ready;
	int go; /* 1 run, -1 abort */
	uint64_t ms, me;
	uint32_t nsec;
	uint64_t *per_second; /* nsec counters, updated atomically */
};

static void note(tw *w, const char *what, const char *msg)
{
	if (!w->first_error[0])
		snprintf(w->first_error, sizeof(w->first_error), "%s: %s", what, msg ? msg : "");
}

static void fill_filler(bt_row *r, int col, int width)
{
	r->text[col] = spaces;
	r->text_len[col] = (uint16_t)width;
}

/* Reads row pk of t into *r and adds delta to column col (the filler is made anew: a decoded
 * row's text points into the session's buffer, which the next call reuses). */
static int read_bump(tw *w, const bt_table *t, int64_t pk, int col, int filler, int width,
                     int64_t delta, int64_t *old_bal)
{
	bt_row r, n;
	int found = 0;
	if (bt_get(w->s, t, pk, &r, &found))
		return -1;
	if (!found) {
		char m[96];
		snprintf(m, sizeof(m), "%s %lld not found", t->name, (long long)pk);
		note(w, "read", m);
		w->mismatches++;
		return -1;
	}
	n = r;
	fill_filler(&r, filler, width);
	fill_filler(&n, filler, width);
	*old_bal = r.ints[col];
	n.ints[col] += delta;
	return bt_update(w->s, t, &r, &n);
}

/* One TPC-B transaction attempt: 0 committed, BT_CONFLICT, -1 failed. */
static int txn_once(tw *w, int64_t aid, int64_t tid, int64_t bid, int64_t delta, int64_t hid)
{
	bt_session *s = w->s;
	int64_t old;
	bt_row r;
	int found = 0;
	if (bt_begin(s))
		return -1;
	if (read_bump(w, &tpcb_accounts, aid, TA_BALANCE, TA_FILLER, 84, delta, &old))
		goto fail;
	if (bt_get(s, &tpcb_accounts, aid, &r, &found))
		goto fail;
	if (!found || (r.ints[TA_BALANCE] != old && r.ints[TA_BALANCE] != old + delta)) {
		w->mismatches++;
		note(w, "read back", "the account's balance is neither before nor after the delta");
	}
	int64_t ignored;
	if (read_bump(w, &tpcb_tellers, tid, TT_BALANCE, TT_FILLER, 84, delta, &ignored) ||
	    read_bump(w, &tpcb_branches, bid, TB_BALANCE, TB_FILLER, 88, delta, &ignored))
		goto fail;
	memset(&r, 0, sizeof(r));
	r.ints[TH_HID] = hid;
	r.ints[TH_TID] = tid;
	r.ints[TH_BID] = bid;
	r.ints[TH_AID] = aid;
	r.ints[TH_DELTA] = delta;
	r.ints[TH_MTIME] = bench_wall_us();
	if (bt_insert(s, &tpcb_history, &r))
		goto fail;
	return bt_commit(s);
fail:
	bt_rollback(s);
	return -1;
}

static void record(tw *w, uint64_t t0, uint64_t t1)
{
	tw_cell *c = w->c;
	if (t1 < c->ms || t1 >= c->me)
		return;
	w->commits_window++;
	hdr_record(w->lat, t1 - t0);
	uint64_t sec = (t1 - c->ms) / 1000000000ULL;
	if (sec < c->nsec)
		__atomic_fetch_add(&c->per_second[sec], 1, __ATOMIC_RELAXED);
}

static void *worker_main(void *p)
{
	tw *w = p;
	tw_cell *c = w->c;
	const tpcb_cfg *cfg = c->ctx->cfg;
	uint64_t scale = c->ctx->scale;

	pthread_mutex_lock(&c->mu);
	c->ready++;
	pthread_cond_broadcast(&c->cv);
	while (!c->go)
		pthread_cond_wait(&c->cv, &c->mu);
	int go = c->go;
	pthread_mutex_unlock(&c->mu);
	if (go < 0)
		return NULL;

	for (;;) {
		uint64_t t0 = bench_now_ns();
		if (t0 >= c->me)
			break;
		if (c->mode == TPCB_MODE_SELECT) {
			int64_t aid = 1 + (int64_t)bench_rng_below(&w->rng, scale * TPCB_ACCOUNTS);
			bt_row r;
			int found = 0;
			w->attempts++;
			if (bt_get(w->s, &tpcb_accounts, aid, &r, &found)) {
				w->failed++;
				note(w, "select", bt_session_error(w->s));
				continue;
			}
			if (!found) {
				w->mismatches++;
				note(w, "select", "account not found");
			}
			w->commits_all++;
			record(w, t0, bench_now_ns());
			continue;
		}
		int64_t aid = 1 + (int64_t)bench_rng_below(&w->rng, scale * TPCB_ACCOUNTS);
		int64_t bid = 1 + (int64_t)bench_rng_below(&w->rng, scale * TPCB_BRANCHES);
		int64_t tid = 1 + (int64_t)bench_rng_below(&w->rng, scale * TPCB_TELLERS);
		int64_t delta = (int64_t)bench_rng_below(&w->rng, 2 * TPCB_DELTA + 1) - TPCB_DELTA;
		int64_t hid = tpcb_hid(c->cell_no, w->idx, ++w->seq);
		int rc;
		uint64_t tries = 0;
		for (;;) {
			w->attempts++;
			rc = txn_once(w, aid, tid, bid, delta, hid);
			if (rc != BT_CONFLICT || tries >= cfg->max_retries)
				break;
			tries++;
			w->retries++;
		}
		if (rc == 0) {
			w->commits_all++;
			w->delta_sum += delta;
			record(w, t0, bench_now_ns());
		} else {
			w->failed++;
			note(w, "transaction",
			     rc == BT_CONFLICT ? "lost its race max_retries + 1 times"
			                       : bt_session_error(w->s));
		}
	}
	return NULL;
}

int tpcb_prolly_cell(tpcb_ctx *ctx, bt_kind kind, int mode, unsigned clients, uint64_t cell_no,
                     uint64_t seed, hp_conn *pc, hp_snapshot *sa, hp_snapshot *sb, tpcb_result *r,
                     char *err, size_t errn)
{
	tw_cell c;
	tw *ws = NULL;
	unsigned started = 0;
	int ret = -1;
	char perr[H_ERR];
	double cpu0 = 0, csw0 = 0, cpu1 = 0, csw1 = 0, srv0 = -1, srv1 = -1;
	bench_csw *scsw = NULL;

	memset(&c, 0, sizeof(c));
	c.ctx = ctx;
	c.mode = mode;
	c.cell_no = cell_no;
	c.nsec = (uint32_t)ctx->cfg->duration_s + 1;
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	if (!(c.per_second = calloc(c.nsec, sizeof(uint64_t))) ||
	    !(ws = calloc(clients, sizeof(*ws)))) {
		snprintf(err, errn, "tpcb: out of memory");
		goto cleanup;
	}
	for (unsigned i = 0; i < clients; i++) {
		tw *w = &ws[i];
		w->c = &c;
		w->idx = i;
		bench_rng_seed(&w->rng, bench_mix64(seed ^ bench_mix64(cell_no * 1000003u + i)));
		if (hdr_new(&w->lat, HIST_HIGHEST, 3)) {
			snprintf(err, errn, "tpcb: out of memory");
			goto cleanup;
		}
		if (bt_session_open(&w->s, ctx->db[kind], perr, sizeof(perr))) {
			snprintf(err, errn, "tpcb: %s session %u: %s", bt_contender_names[kind], i, perr);
			goto cleanup;
		}
	}
	for (unsigned i = 0; i < clients; i++) {
		if ((errno = pthread_create(&ws[i].th, NULL, worker_main, &ws[i])) != 0) {
			snprintf(err, errn, "tpcb: cannot start a worker: %s", strerror(errno));
			goto cleanup;
		}
		started++;
	}
	pthread_mutex_lock(&c.mu);
	while (c.ready < clients)
		pthread_cond_wait(&c.cv, &c.mu);
	uint64_t t = bench_now_ns();
	c.ms = t + ctx->cfg->warmup_s * 1000000000ULL;
	c.me = c.ms + ctx->cfg->duration_s * 1000000000ULL;
	c.go = 1;
	pthread_cond_broadcast(&c.cv);
	pthread_mutex_unlock(&c.mu);

	tpcb_sleep_until(c.ms, NULL);
	if (pc && hp_snap(pc, sa, perr, sizeof(perr)))
		sa->valid = 0;
	tpcb_self_counters(&cpu0, &csw0);
	srv0 = bench_server_cpu_ms(ctx->postmaster);
	scsw = bench_csw_start(ctx->postmaster);
	tpcb_sleep_until(c.me, scsw);
	tpcb_self_counters(&cpu1, &csw1);
	srv1 = bench_server_cpu_ms(ctx->postmaster);
	r->server_csw = bench_csw_total(scsw);
	scsw = NULL;
	if (pc && hp_snap(pc, sb, perr, sizeof(perr)))
		sb->valid = 0;
	ret = 0;

cleanup:
	if (ret && started < clients) {
		pthread_mutex_lock(&c.mu);
		c.go = c.go ? c.go : -1;
		pthread_cond_broadcast(&c.cv);
		pthread_mutex_unlock(&c.mu);
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(ws[i].th, NULL);
	if (scsw)
		bench_csw_total(scsw);
	if (!ret) {
		r->elapsed_s = (double)(c.me - c.ms) / 1e9;
		r->client_cpu_ms = cpu1 - cpu0;
		r->client_csw = csw1 - csw0;
		r->server_cpu_ms = srv0 >= 0 && srv1 >= 0 ? srv1 - srv0 : -1;
		for (unsigned i = 0; i < clients; i++) {
			tw *w = &ws[i];
			r->transactions += w->commits_window;
			r->all_commits += w->commits_all;
			r->delta_sum += w->delta_sum;
			r->attempts += w->attempts;
			r->retries += w->retries;
			r->failed += w->failed;
			r->read_mismatches += w->mismatches;
			hdr_merge(r->lat, w->lat);
			if (!r->first_error[0] && w->first_error[0])
				snprintf(r->first_error, sizeof(r->first_error), "%s", w->first_error);
		}
		r->tps = r->elapsed_s > 0 ? (double)r->transactions / r->elapsed_s : 0;
		r->per_second = c.per_second;
		r->nsec = c.nsec - 1; /* the last slot holds nothing: the window ends at me */
		c.per_second = NULL;
	}
	for (unsigned i = 0; ws && i < clients; i++) {
		bt_session_close(ws[i].s);
		hdr_free(ws[i].lat);
	}
	free(ws);
	free(c.per_second);
	pthread_mutex_destroy(&c.mu);
	pthread_cond_destroy(&c.cv);
	return ret;
}

/* ---- fixture ------------------------------------------------------------------------------ */

typedef struct load_arg {
	uint64_t per; /* rows of the table per branch (bid) */
	int balance, filler, width;
	int bid_col; /* -1: none */
} load_arg;

static int load_row(void *payload, uint64_t i, bt_row *r)
{
	const load_arg *a = payload;
	memset(r, 0, sizeof(*r));
	r->ints[0] = (int64_t)i + 1;
	if (a->bid_col >= 0)
		r->ints[a->bid_col] = (int64_t)(i / a->per) + 1;
	r->ints[a->balance] = 0;
	fill_filler(r, a->filler, a->width);
	return 0;
}

int tpcb_prolly_open(tpcb_ctx *ctx, double *load_s, char *err, size_t errn)
{
	char perr[H_ERR];
	int loaded = 0;
	bt_session *s = NULL;
	*load_s = 0;
	for (int k = BT_CLIENT; k <= BT_SQL; k++) {
		if (!(ctx->cfg->contenders & (1u << k)))
			continue;
		if (bt_db_open(&ctx->db[k], (bt_kind)k, ctx->run->url, ctx->schema, "tpcb", tpcb_tables, 4,
		               !loaded, ctx->run->w->node_size, perr, sizeof(perr))) {
			snprintf(err, errn, "tpcb: %s contender: %s", bt_contender_names[k], perr);
			return -1;
		}
		if (loaded)
			continue;
		uint64_t t0 = bench_now_ns();
		if (bt_session_open(&s, ctx->db[k], perr, sizeof(perr))) {
			snprintf(err, errn, "tpcb: %s session: %s", bt_contender_names[k], perr);
			return -1;
		}
		uint64_t sc = ctx->scale, batch = ctx->cfg->load_batch;
		load_arg br = {1, TB_BALANCE, TB_FILLER, 88, -1};
		load_arg te = {TPCB_TELLERS, TT_BALANCE, TT_FILLER, 84, TT_BID};
		load_arg ac = {TPCB_ACCOUNTS, TA_BALANCE, TA_FILLER, 84, TA_BID};
		if (bt_load(s, &tpcb_branches, sc * TPCB_BRANCHES, batch, load_row, &br) ||
		    bt_load(s, &tpcb_tellers, sc * TPCB_TELLERS, batch, load_row, &te) ||
		    bt_load(s, &tpcb_accounts, sc * TPCB_ACCOUNTS, batch, load_row, &ac)) {
			snprintf(err, errn, "tpcb: loading scale %llu: %s", (unsigned long long)sc,
			         bt_session_error(s));
			bt_session_close(s);
			return -1;
		}
		bt_session_close(s);
		s = NULL;
		*load_s = (double)(bench_now_ns() - t0) / 1e9;
		loaded = 1;
	}
	return 0;
}

void tpcb_prolly_close(tpcb_ctx *ctx)
{
	for (int k = 0; k < BT_N_CONTENDERS; k++) {
		bt_db_close(ctx->db[k]);
		ctx->db[k] = NULL;
	}
}

static int sum_of(int64_t *out, bt_session *s, const bt_table *t, bt_agg agg, int col)
{
	bt_range_q q;
	memset(&q, 0, sizeof(q));
	q.agg = agg;
	q.col = col;
	return bt_range(out, s, t, &q);
}

int tpcb_prolly_sums(tpcb_ctx *ctx, tpcb_sums *sm, char *err, size_t errn)
{
	bt_db *db = ctx->db[BT_CLIENT] ? ctx->db[BT_CLIENT] : ctx->db[BT_SQL];
	bt_session *s = NULL;
	char perr[H_ERR];
	int ret = -1;
	if (!db || bt_session_open(&s, db, perr, sizeof(perr))) {
		snprintf(err, errn, "tpcb: sums: %s", db ? perr : "no prolly contender open");
		return -1;
	}
	if (sum_of(&sm->accounts, s, &tpcb_accounts, BT_SUM, TA_BALANCE) ||
	    sum_of(&sm->tellers, s, &tpcb_tellers, BT_SUM, TT_BALANCE) ||
	    sum_of(&sm->branches, s, &tpcb_branches, BT_SUM, TB_BALANCE) ||
	    sum_of(&sm->history, s, &tpcb_history, BT_SUM, TH_DELTA) ||
	    sum_of(&sm->history_rows, s, &tpcb_history, BT_COUNT, 0)) {
		snprintf(err, errn, "tpcb: sums: %s", bt_session_error(s));
		goto cleanup;
	}
	ret = 0;
cleanup:
	bt_session_close(s);
	return ret;
}
