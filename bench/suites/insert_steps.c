/*
 * insert_steps.c - the insert benchmark's steps on one contender's data (insert_int.h), one
 * thread per client (two in the query steps), all through bench/tables/table.h:
 *
 *   l.i0   each client inserts `rows` rows in primary-key order into its table without secondary
 *          indexes, rows_per_commit per transaction, through each contender's bulk path
 *          (bt_load of one batch: plain one COPY per transaction, which PostgreSQL takes faster
 *          than the benchmark's multi-row INSERT; prolly one commit of the batch); one latency
 *          sample per commit, its rows counted in the second it ended in
 *   l.x    each client creates the three secondary indexes (bt_create_index), one after the
 *          other; one latency sample per index
 *   l.i1   each client inserts l1_rows rows, l1_rows_per_commit per transaction (bt_begin,
 *          bt_insert per row, bt_commit: plain one INSERT statement per row), and in the same
 *          transaction deletes as many of its oldest rows (bt_delete_oldest): the table keeps
 *          its size, the indexes are maintained
 *   l.i2   the same with l2_rows and l2_rows_per_commit
 *   qrN    each client's query thread runs index-only range queries of range_rows entries, as
 *          fast as it can, for query_seconds, on the secondary indexes in turn (1, 2, 3, 1, ...),
 *          from a random first column (index 2: a random cash register and price); meanwhile the
 *          client's writer thread inserts and deletes N rows/s in transactions of
 *          writer_rows_per_commit rows (paced: transaction j starts at j * rows / N seconds, at
 *          once when behind)
 *   qpN    the same with point queries (bt_get) of a random live primary key, at least 5 s of
 *          the writer's deletes from the oldest one (so a query never asks for a row the writer
 *          is deleting): every row must be found and equal the row made again from its key
 *
 * After each step (untimed) the check: per client the table holds exactly its `rows` rows, the
 * keys [oldest, next), and after l.x each index holds one entry per row. A step's first failing
 * operation stops that client (its error is the row's first_error); the check then fails too.
 */
#include "insert_int.h"

#include "clock.h"
#include "rng.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CONFLICT_RETRIES 10

/* ---- rows ------------------------------------------------------------------------------------ */

void hins_row(bt_row *r, char *buf, const hins_config *cfg, uint64_t seed, int64_t i)
{
	uint64_t h = bench_mix64(seed ^ bench_mix64((uint64_t)i));
	memset(r, 0, sizeof(*r));
	r->ints[0] = i;
	r->ints[1] = HINS_EPOCH_MS + i;
	r->ints[2] = (int64_t)(h % HINS_CASHREGISTERS);
	h = bench_mix64(h);
	r->ints[3] = (int64_t)(h % HINS_CUSTOMERS);
	h = bench_mix64(h);
	r->ints[4] = (int64_t)(h % HINS_PRODUCTS);
	h = bench_mix64(h);
	r->ints[5] = (int64_t)(h % HINS_PRICES);
	for (uint64_t k = 0; k < cfg->data_bytes; k++) {
		if (k % 10 == 0)
			h = bench_mix64(h);
		buf[k] = (char)('a' + (h >> (6 * (k % 10))) % 26);
	}
	r->text[6] = buf;
	r->text_len[6] = (uint16_t)cfg->data_bytes;
}

static int row_equal(const bt_row *a, const bt_row *b)
{
	for (int c = 0; c < 6; c++)
		if (a->ints[c] != b->ints[c])
			return 0;
	return a->text_len[6] == b->text_len[6] && !memcmp(a->text[6], b->text[6], a->text_len[6]);
}

static void table_init(hins_client *c, unsigned i)
{
	static const bt_column cols[7] = {{"transactionid", BT_INT},  {"dateandtime", BT_INT},
	                                  {"cashregisterid", BT_INT}, {"customerid", BT_INT},
	                                  {"productid", BT_INT},      {"price", BT_INT},
	                                  {"data", BT_TEXT}};
	snprintf(c->name, sizeof(c->name), "ins_c%u", i);
	bt_table *t = &c->t;
	memset(t, 0, sizeof(*t));
	t->name = c->name;
	t->id = (uint8_t)(i + 1);
	t->ncols = 7;
	memcpy(t->cols, cols, sizeof(cols));
	t->pk = 0;
	t->nindexes = HINS_INDEXES;
	snprintf(c->ixname[0], sizeof(c->ixname[0]), "ins_c%u_price_customer", i);
	snprintf(c->ixname[1], sizeof(c->ixname[1]), "ins_c%u_register_price_customer", i);
	snprintf(c->ixname[2], sizeof(c->ixname[2]), "ins_c%u_price_date_customer", i);
	t->indexes[0] = (bt_index){c->ixname[0], 2, {5, 3}};
	t->indexes[1] = (bt_index){c->ixname[1], 3, {2, 5, 3}};
	t->indexes[2] = (bt_index){c->ixname[2], 3, {5, 1, 3}};
	c->t0 = *t;
	c->t0.nindexes = 0;
}

void hins_schema(char *out, size_t n, const h_run *run, bt_kind kind)
{
	snprintf(out, n, "%.40s_ins_%s", run->schema, bt_contender_names[kind]);
}

/* ---- data ------------------------------------------------------------------------------------ */

int hins_data_open(hins_data *d, const hins_config *cfg, bt_kind kind, const h_run *run, char *err,
                   size_t errn)
{
	char schema[64], branch[32], e[H_ERR];
	memset(d, 0, sizeof(*d));
	d->cfg = cfg;
	d->kind = kind;
	d->n = (unsigned)cfg->clients;
	hins_schema(schema, sizeof(schema), run, kind);
	for (unsigned i = 0; i < d->n; i++) {
		hins_client *c = &d->c[i];
		table_init(c, i);
		/* l.i0 writes the tables without secondary indexes: plain creates none at open */
		c->tabs[0] = d->tabs[i] = &c->t0;
		c->seed = bench_mix64(run->w->seed + i + 1);
	}
	if (kind == BT_PLAIN && bt_db_open(&d->db, kind, run->url, schema, NULL, d->tabs, d->n, 1,
	                                   run->w->node_size, e, sizeof(e)) != 0) {
		bench_seterr(err, errn, "insert: opening the plain contender: %s", e);
		d->db = NULL;
		return -1;
	}
	for (unsigned i = 0; i < d->n; i++) {
		hins_client *c = &d->c[i];
		snprintf(branch, sizeof(branch), "insert-c%u", i);
		if (kind == BT_PLAIN)
			c->db = d->db;
		else if (bt_db_open(&c->db, kind, run->url, schema, branch, c->tabs, 1, 1,
		                    run->w->node_size, e, sizeof(e)) != 0) {
			bench_seterr(err, errn, "insert: opening the %s contender (client %u): %s",
			             bt_contender_names[kind], i, e);
			c->db = NULL;
			return -1;
		}
		if (bt_session_open(&c->s, c->db, e, sizeof(e)) != 0) {
			bench_seterr(err, errn, "insert: a %s session (client %u): %s",
			             bt_contender_names[kind], i, e);
			c->s = NULL;
			return -1;
		}
	}
	return 0;
}

void hins_data_close(hins_data *d)
{
	for (unsigned i = 0; i < d->n; i++) {
		bt_session_close(d->c[i].s);
		if (d->c[i].db != d->db)
			bt_db_close(d->c[i].db);
		d->c[i].s = NULL;
		d->c[i].db = NULL;
	}
	bt_db_close(d->db);
	d->db = NULL;
}

/* ---- results --------------------------------------------------------------------------------- */

int hins_result_init(hins_result *r)
{
	memset(r, 0, sizeof(*r));
	if (bench_series_init(&r->main) != 0 || bench_series_init(&r->writer) != 0)
		return -1;
	return 0;
}

void hins_result_dispose(hins_result *r)
{
	bench_series_dispose(&r->main);
	bench_series_dispose(&r->writer);
}

/* ---- jobs: one thread's part of a step ------------------------------------------------------- */

typedef struct job {
	hins_data *d;
	hins_client *c;
	const hins_step *st;
	hins_result *r;
	int writer;               /* q steps: the writer thread, else the query thread */
	bt_session *s;            /* the session this thread uses */
	uint64_t end_ns;          /* q steps */
	_Atomic int64_t *lo, *hi; /* q steps: the keys queries may ask for, [lo, hi) */
	int64_t margin;
	bench_rng rng;
	pthread_t th;
	char buf[HINS_DATA_MAX + 1], buf2[HINS_DATA_MAX + 1];
	/* this thread's counts, added to r at the end */
	uint64_t errors, conflicts, retries, inserted, deleted, found, missing;
	uint64_t range_entries, short_ranges, long_ranges;
	prolly_stats pst; /* the thread's prolly counters over the step */
	char first_error[256];
} job;

static void fail(job *j, const char *what)
{
	j->errors++;
	if (!j->first_error[0])
		snprintf(j->first_error, sizeof(j->first_error), "client %s %s: %s", j->c->name, what,
		         bt_session_error(j->s));
}

/* One transaction: insert k rows from *next, delete k oldest from *oldest (del != 0), commit,
 * retrying a lost race. 0, or -1 after fail(). */
static int churn(job *j, const bt_table *t, uint64_t k, int del, int64_t *next, int64_t *oldest)
{
	bt_row row;
	for (int attempt = 0;; attempt++) {
		uint64_t deleted = 0;
		if (bt_begin(j->s) != 0) {
			fail(j, "begin");
			return -1;
		}
		for (uint64_t i = 0; i < k; i++) {
			hins_row(&row, j->buf, j->d->cfg, j->c->seed, *next + (int64_t)i);
			if (bt_insert(j->s, t, &row) != 0) {
				fail(j, "insert");
				bt_rollback(j->s);
				return -1;
			}
		}
		if (del && bt_delete_oldest(j->s, t, *oldest, k, &deleted) != 0) {
			fail(j, "delete_oldest");
			bt_rollback(j->s);
			return -1;
		}
		int rc = bt_commit(j->s);
		if (rc == BT_CONFLICT && attempt < CONFLICT_RETRIES) {
			j->conflicts++;
			j->retries++;
			continue;
		}
		if (rc != 0) {
			if (rc == BT_CONFLICT)
				j->conflicts++;
			fail(j, "commit");
			return -1;
		}
		j->inserted += k;
		j->deleted += deleted;
		*next += (int64_t)k;
		*oldest += (int64_t)deleted;
		return 0;
	}
}

/* bt_load's rows: row i of a batch is the job's client's row next + i. */
typedef struct batch {
	job *j;
	int64_t first;
} batch;

static int batch_row(void *payload, uint64_t i, bt_row *row)
{
	batch *b = payload;
	hins_row(row, b->j->buf, b->j->d->cfg, b->j->c->seed, b->first + (int64_t)i);
	return 0;
}

/* l.i0's transaction: k rows appended in one commit through the bulk path (bt_load). */
static int append(job *j, uint64_t k)
{
	batch b = {j, j->c->next};
	if (bt_load(j->s, &j->c->t0, k, k, batch_row, &b) != 0) {
		fail(j, "load");
		return -1;
	}
	j->inserted += k;
	j->c->next += (int64_t)k;
	return 0;
}

/* l.i0, l.i1, l.i2 */
static void load_loop(job *j)
{
	const hins_config *cfg = j->d->cfg;
	hins_client *c = j->c;
	uint64_t total, per;
	int del = j->st->kind != HINS_LI0;
	const bt_table *t = del ? &c->t : &c->t0;
	if (j->st->kind == HINS_LI0) {
		total = cfg->rows;
		per = cfg->rows_per_commit;
	} else if (j->st->kind == HINS_LI1) {
		total = cfg->l1_rows;
		per = cfg->l1_rows_per_commit;
	} else {
		total = cfg->l2_rows;
		per = cfg->l2_rows_per_commit;
	}
	for (uint64_t done = 0; done < total;) {
		uint64_t k = total - done < per ? total - done : per;
		uint64_t t0 = bench_now_ns();
		if (del ? churn(j, t, k, 1, &c->next, &c->oldest) : append(j, k))
			return;
		uint64_t t1 = bench_now_ns();
		bench_series_add(&j->r->main, t1, t1 - t0, k);
		done += k;
	}
}

/* l.x */
static void index_loop(job *j)
{
	for (int i = 1; i <= HINS_INDEXES; i++) {
		uint64_t t0 = bench_now_ns();
		if (bt_create_index(j->s, &j->c->t, i) != 0) {
			fail(j, "create_index");
			return;
		}
		uint64_t t1 = bench_now_ns();
		bench_series_add(&j->r->main, t1, t1 - t0, 1);
	}
}

static void sleep_until(uint64_t when)
{
	uint64_t now = bench_now_ns();
	if (when <= now)
		return;
	uint64_t d = when - now;
	struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The q steps' background writer: rate rows/s, writer_rows_per_commit per transaction. */
static void writer_loop(job *j)
{
	const hins_config *cfg = j->d->cfg;
	hins_client *c = j->c;
	uint64_t k = cfg->writer_rows_per_commit, start = bench_now_ns();
	double period_ns = (double)k * 1e9 / (double)j->st->rate;
	int64_t next = c->next, oldest = c->oldest;
	for (uint64_t n = 0;; n++) {
		uint64_t due = start + (uint64_t)((double)n * period_ns);
		if (due >= j->end_ns)
			break;
		sleep_until(due);
		if (bench_now_ns() >= j->end_ns)
			break;
		/* queries stop asking for the rows about to go before they go */
		atomic_store(j->lo, oldest + (int64_t)k + j->margin);
		uint64_t t0 = bench_now_ns();
		if (churn(j, &c->t, k, 1, &next, &oldest) != 0)
			break;
		uint64_t t1 = bench_now_ns();
		atomic_store(j->hi, next);
		bench_series_add(&j->r->writer, t1, t1 - t0, k);
	}
	c->next = next;
	c->oldest = oldest;
}

/* The q steps' query thread. */
static void query_loop(job *j)
{
	const hins_config *cfg = j->d->cfg;
	hins_client *c = j->c;
	int point = j->st->kind == HINS_QP;
	bt_row row, want;
	for (uint64_t q = 0;; q++) {
		uint64_t t0 = bench_now_ns();
		if (t0 >= j->end_ns)
			break;
		if (point) {
			int64_t lo = atomic_load(j->lo), hi = atomic_load(j->hi);
			int64_t pk = hi > lo ? lo + (int64_t)bench_rng_below(&j->rng, (uint64_t)(hi - lo)) : lo;
			int found = 0;
			if (bt_get(j->s, &c->t, pk, &row, &found) != 0) {
				fail(j, "get");
				break;
			}
			uint64_t t1 = bench_now_ns();
			bench_series_add(&j->r->main, t1, t1 - t0, 1);
			if (!found) {
				j->missing++;
				continue;
			}
			j->found++;
			hins_row(&want, j->buf2, cfg, c->seed, pk);
			if (!row_equal(&row, &want)) {
				j->errors++;
				if (!j->first_error[0])
					snprintf(j->first_error, sizeof(j->first_error),
					         "client %s: row %" PRId64 " read back differs", c->name, pk);
			}
		} else {
			bt_range_q rq;
			int64_t got = 0;
			memset(&rq, 0, sizeof(rq));
			rq.index = (int)(q % HINS_INDEXES) + 1;
			if (rq.index == 2) {
				rq.lo[0] = (int64_t)bench_rng_below(&j->rng, HINS_CASHREGISTERS);
				rq.lo[1] = (int64_t)bench_rng_below(&j->rng, HINS_PRICES);
				rq.nlo = 2;
			} else {
				rq.lo[0] = (int64_t)bench_rng_below(&j->rng, HINS_PRICES);
				rq.nlo = 1;
			}
			rq.limit = cfg->range_rows;
			rq.agg = BT_ROWS;
			if (bt_range(&got, j->s, &c->t, &rq) != 0) {
				fail(j, "range");
				break;
			}
			uint64_t t1 = bench_now_ns();
			bench_series_add(&j->r->main, t1, t1 - t0, 1);
			j->range_entries += (uint64_t)got;
			if (got < 0 || (uint64_t)got > cfg->range_rows)
				j->long_ranges++;
			else if ((uint64_t)got < cfg->range_rows)
				j->short_ranges++;
		}
	}
}

static void *job_main(void *arg)
{
	job *j = arg;
	prolly_thread_stats_reset();
	switch (j->st->kind) {
	case HINS_LI0:
	case HINS_LI1:
	case HINS_LI2: load_loop(j); break;
	case HINS_LX: index_loop(j); break;
	default:
		if (j->writer)
			writer_loop(j);
		else
			query_loop(j);
	}
	prolly_stats_init(&j->pst, PROLLY_STATS_VERSION);
	prolly_thread_stats(&j->pst);
	return NULL;
}

/* ---- the check after a step ------------------------------------------------------------------ */

static int count(int64_t *out, bt_session *s, const bt_table *t, int index, int64_t from, int nlo)
{
	bt_range_q q;
	memset(&q, 0, sizeof(q));
	q.index = index;
	q.lo[0] = from;
	q.nlo = nlo;
	q.agg = BT_COUNT;
	return bt_range(out, s, t, &q);
}

static int check(hins_data *d, hins_result *r)
{
	const uint64_t want = d->cfg->rows;
	for (unsigned i = 0; i < d->n; i++) {
		hins_client *c = &d->c[i];
		int64_t all = -1, from_oldest = -1, past = -1;
		if (count(&all, c->s, &c->t0, 0, 0, 0) != 0 ||
		    count(&from_oldest, c->s, &c->t0, 0, c->oldest, 1) != 0 ||
		    count(&past, c->s, &c->t0, 0, c->next, 1) != 0) {
			snprintf(r->check, sizeof(r->check), "client %u: counting rows: %s", i,
			         bt_session_error(c->s));
			return -1;
		}
		if ((uint64_t)all != want || from_oldest != all || past != 0 ||
		    c->next - c->oldest != (int64_t)want) {
			snprintf(r->check, sizeof(r->check),
			         "client %u: %" PRId64 " rows (%" PRId64 " from the oldest key %" PRId64
			         ", %" PRId64 " at or past %" PRId64 "), want %" PRIu64,
			         i, all, from_oldest, c->oldest, past, c->next, want);
			return -1;
		}
		for (int x = 1; d->indexed && x <= HINS_INDEXES; x++) {
			int64_t n = -1;
			if (count(&n, c->s, &c->t, x, 0, 0) != 0) {
				snprintf(r->check, sizeof(r->check), "client %u: counting index %d: %s", i, x,
				         bt_session_error(c->s));
				return -1;
			}
			if ((uint64_t)n != want) {
				snprintf(r->check, sizeof(r->check),
				         "client %u: index %d holds %" PRId64 " entries for %" PRIu64 " rows", i, x,
				         n, want);
				return -1;
			}
		}
	}
	return 0;
}

/* ---- a step ---------------------------------------------------------------------------------- */

int hins_step_run(hins_data *d, const hins_step *st, const h_run *run, hins_result *r, char *err,
                  size_t errn)
{
	const hins_config *cfg = d->cfg;
	int q = st->kind == HINS_QR || st->kind == HINS_QP;
	unsigned nj = d->n * (q ? 2u : 1u), started = 0;
	job *jobs = calloc(nj, sizeof(*jobs));
	bt_session **extra = calloc(d->n, sizeof(*extra)); /* the writers' sessions */
	_Atomic int64_t *lo = calloc(d->n, sizeof(*lo)), *hi = calloc(d->n, sizeof(*hi));
	int ret = -1;
	char e[H_ERR];

	if (!jobs || !extra || !lo || !hi) {
		bench_seterr(err, errn, "insert: out of memory");
		goto cleanup;
	}
	for (unsigned i = 0; q && i < d->n; i++) {
		if (bt_session_open(&extra[i], d->c[i].db, e, sizeof(e)) != 0) {
			extra[i] = NULL;
			bench_seterr(err, errn, "insert: the writer's session (client %u): %s", i, e);
			goto cleanup;
		}
		/* 5 s of the writer's deletes, and two of its transactions, between the oldest row and
		 * the keys a point query asks for (at most half the table) */
		int64_t margin = (int64_t)(st->rate * 5 + 2 * cfg->writer_rows_per_commit);
		if (margin > (int64_t)cfg->rows / 2)
			margin = (int64_t)cfg->rows / 2;
		atomic_store(&lo[i], d->c[i].oldest + margin);
		atomic_store(&hi[i], d->c[i].next);
	}
	uint64_t start = bench_now_ns();
	r->main.start_ns = r->writer.start_ns = start;
	if (q) /* the query steps' series cover their window; the load steps' as long as they run */
		r->main.max_sec = r->writer.max_sec = (size_t)cfg->query_seconds;
	uint64_t end = start + cfg->query_seconds * 1000000000u;
	for (unsigned k = 0; k < nj; k++) {
		job *j = &jobs[k];
		unsigned i = q ? k / 2 : k;
		j->d = d;
		j->c = &d->c[i];
		j->st = st;
		j->r = r;
		j->writer = q && (k & 1);
		j->s = j->writer ? extra[i] : d->c[i].s;
		j->end_ns = end;
		j->lo = &lo[i];
		j->hi = &hi[i];
		bench_rng_seed(&j->rng, run->w->seed ^
		                            bench_mix64(((uint64_t)st->kind << 40) ^ (st->rate << 20) ^ k));
		if (q && j->writer) {
			int64_t margin = atomic_load(&lo[i]) - d->c[i].oldest;
			j->margin = margin - (int64_t)cfg->writer_rows_per_commit;
			if (j->margin < 0)
				j->margin = 0;
		}
	}
	for (; started < nj; started++)
		if ((errno = pthread_create(&jobs[started].th, NULL, job_main, &jobs[started])) != 0) {
			bench_seterr(err, errn, "insert: cannot start a thread: %s", strerror(errno));
			break;
		}
	for (unsigned k = 0; k < started; k++)
		pthread_join(jobs[k].th, NULL);
	if (started < nj)
		goto cleanup;
	r->elapsed_s = (double)(bench_now_ns() - start) / 1e9;
	for (unsigned k = 0; k < nj; k++) {
		job *j = &jobs[k];
		r->errors += j->errors;
		r->conflicts += j->conflicts;
		r->retries += j->retries;
		r->inserted += j->inserted;
		r->deleted += j->deleted;
		r->found += j->found;
		r->missing += j->missing;
		r->range_entries += j->range_entries;
		r->short_ranges += j->short_ranges;
		r->long_ranges += j->long_ranges;
		r->nodes_written += j->pst.nodes_written;
		r->node_bytes_written += j->pst.bytes_written;
		r->round_trips += j->pst.store_round_trips;
		if (!r->first_error[0] && j->first_error[0])
			snprintf(r->first_error, sizeof(r->first_error), "%s", j->first_error);
	}
	if (st->kind == HINS_LX && r->errors == 0)
		d->indexed = 1;
	r->checked_ok = check(d, r) == 0;
	ret = 0;
cleanup:
	for (unsigned i = 0; extra && i < d->n; i++)
		bt_session_close(extra[i]);
	free(extra);
	free(jobs);
	free((void *)lo);
	free((void *)hi);
	return ret;
}
