/*
 * sysbench_ops.c - the events of the sysbench suite's microbenchmarks, and the checks after a
 * write cell (sysbench_int.h; the statements are docs/benchmarks/sysbench.md's table).
 *
 * Every event validates what it read: a point select finds its row with the loaded k, an in-list
 * finds all its keys, a range of L ids returns L rows (Y1), a count is L, a sum is the prefix-sum
 * difference of the loaded k (Y2; inside read-write, where k moves, only the row counts are
 * checked). Writes run as one transaction (bt_begin .. bt_commit); a lost race (BT_CONFLICT) is
 * retried from bt_begin, up to max_retries times, and counted; the writes of a committed
 * transaction go to the worker's log, which sb_check_writes traces after the cell.
 *
 * Y3 (no starving): a transaction that lost SB_STARVE_AFTER races in a row takes the cell's turn
 * (when no other has it); until it commits or fails, no other worker begins a transaction, so
 * the ones already running finish and it then runs alone. Without the turn, two clients writing
 * one hot row (update-one) could leave the same one losing every time: the winner begins its
 * next transaction on the new head while the loser is still rolling back, and commits first
 * again. PostgreSQL's row lock queue gives the plain contender the same fairness.
 */
#include "sysbench_int.h"

#include "buf.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- rows --------------------------------------------------------------------------------- */

static uint64_t row_hash(const sb_data *d, unsigned t, int64_t id, uint64_t salt)
{
	return bench_mix64(d->seed ^ bench_mix64(((uint64_t)t << 40) ^ (uint64_t)id) ^ salt);
}

/* n characters of sysbench's "###########-" groups, digits from the stream h. */
static void fill_groups(char *out, size_t n, uint64_t h)
{
	uint64_t st = h;
	for (size_t i = 0; i < n; i++)
		out[i] = (i % 12 == 11) ? '-' : (char)('0' + bench_splitmix64(&st) % 10);
	out[n] = '\0';
}

void sb_gen_row(const sb_data *d, unsigned t, int64_t id, bt_row *r, char *c, char *pad)
{
	memset(r, 0, sizeof(*r));
	r->ints[0] = id;
	r->ints[1] = 1 + (int64_t)(row_hash(d, t, id, 1) % d->cfg->table_size);
	fill_groups(c, SB_C_LEN, row_hash(d, t, id, 2));
	fill_groups(pad, SB_PAD_LEN, row_hash(d, t, id, 3));
	r->text[2] = c;
	r->text_len[2] = SB_C_LEN;
	r->text[3] = pad;
	r->text_len[3] = SB_PAD_LEN;
}

/* c of a write: "w<cell>.<client>.<seq>." then digit groups. */
static void tag_c(sb_worker *w, char *out)
{
	int n = snprintf(out, SB_C_LEN + 1, "w%u.%u.%" PRIu64 ".", w->cell->index, w->index, w->seq);
	fill_groups(out + n, SB_C_LEN - (size_t)n, bench_rng_next(&w->rng));
}

/* The tag of a c read back: 1 and (cell, client, seq), or 0 when untagged. */
static int parse_tag(const char *c, size_t len, unsigned *cell, unsigned *client, uint64_t *seq)
{
	char tmp[64];
	if (!len || c[0] != 'w')
		return 0;
	if (len >= sizeof(tmp))
		len = sizeof(tmp) - 1;
	memcpy(tmp, c, len);
	tmp[len] = '\0';
	return sscanf(tmp, "w%u.%u.%" SCNu64 ".", cell, client, seq) == 3;
}

/* ---- picking ------------------------------------------------------------------------------ */

static unsigned pick_table(sb_worker *w)
{
	return (unsigned)bench_rng_below(&w->rng, w->cell->d->cfg->tables);
}

/* A uniform id in [1, table_size - span + 1] (the first id of a range of span ids). */
static int64_t pick_id(sb_worker *w, uint64_t span)
{
	uint64_t n = w->cell->d->cfg->table_size;
	return 1 + (int64_t)bench_rng_below(&w->rng, span < n ? n - span + 1 : 1);
}

/* An id of this worker's residue class (Y3). */
static int64_t pick_own(sb_worker *w)
{
	uint64_t n = w->cell->d->cfg->table_size, k = w->cell->clients, i = w->index;
	return 1 + (int64_t)i + (int64_t)(k * bench_rng_below(&w->rng, (n - 1 - i) / k + 1));
}

unsigned sb_queries_per_event(int b)
{
	switch (b) {
	case SB_DELETE_INSERT: return 2;
	case SB_READ_ONLY: return 14; /* 10 point selects, 4 ranges */
	case SB_READ_WRITE:
		return 18; /* and an index update, a non-index update, a delete, an insert */
	default: return 1;
	}
}

/* ---- failures ----------------------------------------------------------------------------- */

static void fail(sb_worker *w, sb_ev *e, const char *what)
{
	e->rc = -1;
	snprintf(e->msg, sizeof(e->msg), "%s: %s", what, bt_session_error(w->s));
}

static void bad(sb_ev *e, const char *fmt, int64_t a, int64_t b)
{
	if (!e->bad)
		snprintf(e->msg, sizeof(e->msg), fmt, a, b);
	e->bad = 1;
}

/* ---- reads -------------------------------------------------------------------------------- */

static int point(sb_worker *w, sb_ev *e, unsigned t, int64_t id, int check_k)
{
	bt_row r;
	int found = 0;
	if (bt_get(w->s, w->cell->d->tptr[t], id, &r, &found)) {
		fail(w, e, "point select");
		return -1;
	}
	e->checked++;
	if (!found) {
		bad(e, "point select of id %" PRId64 ": not found (%" PRId64 ")", id, 0);
	} else if (r.ints[0] != id || r.text_len[2] != SB_C_LEN || r.text_len[3] != SB_PAD_LEN) {
		bad(e, "point select of id %" PRId64 ": read id %" PRId64, id, r.ints[0]);
	} else if (check_k) {
		bt_row g;
		sb_gen_row(w->cell->d, t, id, &g, w->obuf, w->opad);
		if (g.ints[1] != r.ints[1])
			bad(e, "point select: k %" PRId64 ", loaded %" PRId64, r.ints[1], g.ints[1]);
	}
	return 0;
}

static int in_list(sb_worker *w, sb_ev *e, size_t n)
{
	unsigned t = pick_table(w);
	uint64_t size = w->cell->d->cfg->table_size;
	size_t found = 0;
	/* distinct ids: a random start and a stride coprime with nothing in particular, wrapped */
	int64_t first = pick_id(w, 1);
	uint64_t stride = 1 + bench_rng_below(&w->rng, size / (n ? n : 1));
	for (size_t i = 0; i < n; i++)
		w->pks[i] = 1 + (int64_t)(((uint64_t)(first - 1) + i * stride) % size);
	if (bt_get_many(w->s, w->cell->d->tptr[t], w->pks, n, &found)) {
		fail(w, e, "in-list select");
		return -1;
	}
	e->checked++;
	if (found != n)
		bad(e, "in-list of %" PRId64 " ids found %" PRId64, (int64_t)n, (int64_t)found);
	return 0;
}

/* A range of len ids by primary key: rows, count or sum of k; checked (sum when check_sum). */
static int range(sb_worker *w, sb_ev *e, uint64_t len, bt_agg agg, int check_sum)
{
	const sb_data *d = w->cell->d;
	unsigned t = pick_table(w);
	int64_t lo = pick_id(w, len), out = 0;
	uint64_t n = len < d->cfg->table_size ? len : d->cfg->table_size;
	bt_range_q q;
	memset(&q, 0, sizeof(q));
	q.index = 0;
	q.lo[0] = lo;
	q.nlo = 1;
	q.hi[0] = lo + (int64_t)n - 1;
	q.nhi = 1;
	q.agg = agg;
	q.col = 1;
	if (bt_range(&out, w->s, d->tptr[t], &q)) {
		fail(w, e, agg == BT_ROWS ? "range select" : agg == BT_COUNT ? "range count" : "range sum");
		return -1;
	}
	e->checked++;
	if (agg == BT_SUM) {
		int64_t want = d->prefix[t][lo + (int64_t)n - 1] - d->prefix[t][lo - 1];
		if (check_sum && out != want)
			bad(e, "range sum %" PRId64 ", loaded %" PRId64, out, want);
	} else if (out != (int64_t)n) {
		bad(e, "range of %" PRId64 " ids gave %" PRId64, (int64_t)n, out);
	}
	return 0;
}

static int oltp_reads(sb_worker *w, sb_ev *e, int pristine)
{
	uint64_t len = w->cell->d->cfg->oltp_range_size;
	for (int i = 0; i < 10; i++)
		if (point(w, e, pick_table(w), pick_id(w, 1), pristine))
			return -1;
	/* sysbench's simple, sum, order and distinct ranges: ordered rows are what a key range
	 * returns anyway; the fourth is a count */
	if (range(w, e, len, BT_ROWS, 0) || range(w, e, len, BT_SUM, pristine) ||
	    range(w, e, len, BT_ROWS, 0) || range(w, e, len, BT_COUNT, 0))
		return -1;
	return 0;
}

/* ---- writes ------------------------------------------------------------------------------- */

static int log_pending(sb_worker *w, unsigned t, int64_t id, int64_t k, int tagged)
{
	if (w->npend == w->cappend &&
	    bench_grow((void **)&w->pend, &w->cappend, w->npend + 1, sizeof(*w->pend)))
		return -1;
	sb_logent *l = &w->pend[w->npend++];
	l->table = t;
	l->id = id;
	l->k = k;
	l->tagged = tagged;
	l->seq = w->seq;
	return 0;
}

/* Reads row id of table t for a change; copies its texts (the session reuses the value). */
static int read_for_write(sb_worker *w, sb_ev *e, unsigned t, int64_t id, bt_row *r)
{
	int found = 0;
	if (bt_get(w->s, w->cell->d->tptr[t], id, r, &found)) {
		fail(w, e, "select for a write");
		return -1;
	}
	if (!found) {
		bad(e, "row %" PRId64 " to write is missing (%" PRId64 ")", id, 0);
		e->rc = -1;
		return -1;
	}
	memcpy(w->obuf, r->text[2], r->text_len[2] < SB_C_LEN ? r->text_len[2] : SB_C_LEN);
	memcpy(w->opad, r->text[3], r->text_len[3] < SB_PAD_LEN ? r->text_len[3] : SB_PAD_LEN);
	r->text[2] = w->obuf;
	r->text[3] = w->opad;
	if (r->text_len[2] > SB_C_LEN)
		r->text_len[2] = SB_C_LEN;
	if (r->text_len[3] > SB_PAD_LEN)
		r->text_len[3] = SB_PAD_LEN;
	return 0;
}

/* UPDATE sbtest SET k = k + 1 WHERE id = ? */
static int update_index(sb_worker *w, sb_ev *e, unsigned t, int64_t id)
{
	bt_row old, nw;
	if (read_for_write(w, e, t, id, &old))
		return -1;
	nw = old;
	nw.ints[1] = old.ints[1] + 1;
	if (bt_update(w->s, w->cell->d->tptr[t], &old, &nw)) {
		fail(w, e, "index update");
		return -1;
	}
	w->pend_ksum[t] += 1;
	return log_pending(w, t, id, nw.ints[1], 0);
}

/* UPDATE sbtest SET c = ? WHERE id = ? */
static int update_nonindex(sb_worker *w, sb_ev *e, unsigned t, int64_t id)
{
	bt_row old, nw;
	if (read_for_write(w, e, t, id, &old))
		return -1;
	nw = old;
	tag_c(w, w->cbuf);
	nw.text[2] = w->cbuf;
	nw.text_len[2] = SB_C_LEN;
	if (bt_update(w->s, w->cell->d->tptr[t], &old, &nw)) {
		fail(w, e, "non-index update");
		return -1;
	}
	return log_pending(w, t, id, nw.ints[1], 1);
}

/* DELETE FROM sbtest WHERE id = ?; INSERT INTO sbtest (id, k, c, pad) VALUES (?, ?, ?, ?) */
static int delete_insert(sb_worker *w, sb_ev *e, unsigned t, int64_t id)
{
	const bt_table *tb = w->cell->d->tptr[t];
	bt_row old, nw;
	if (read_for_write(w, e, t, id, &old))
		return -1;
	if (bt_delete(w->s, tb, &old)) {
		fail(w, e, "delete");
		return -1;
	}
	memset(&nw, 0, sizeof(nw));
	nw.ints[0] = id;
	nw.ints[1] = 1 + (int64_t)bench_rng_below(&w->rng, w->cell->d->cfg->table_size);
	tag_c(w, w->cbuf);
	fill_groups(w->padbuf, SB_PAD_LEN, bench_rng_next(&w->rng));
	nw.text[2] = w->cbuf;
	nw.text_len[2] = SB_C_LEN;
	nw.text[3] = w->padbuf;
	nw.text_len[3] = SB_PAD_LEN;
	if (bt_insert(w->s, tb, &nw)) {
		fail(w, e, "insert");
		return -1;
	}
	w->pend_ksum[t] += nw.ints[1] - old.ints[1];
	return log_pending(w, t, id, nw.ints[1], 1);
}

/* The transaction body of bench b (between bt_begin and bt_commit). */
static int body(sb_worker *w, sb_ev *e, int b)
{
	switch (b) {
	case SB_UPDATE_INDEX: return update_index(w, e, pick_table(w), pick_own(w));
	case SB_UPDATE_NONINDEX: return update_nonindex(w, e, pick_table(w), pick_own(w));
	case SB_UPDATE_ONE: return update_nonindex(w, e, 0, 1);
	case SB_DELETE_INSERT: return delete_insert(w, e, pick_table(w), pick_own(w));
	case SB_READ_ONLY: return oltp_reads(w, e, 1);
	case SB_READ_WRITE: {
		/* three distinct ids of this worker's class for the three writes */
		int64_t a = pick_own(w), b2, c;
		do
			b2 = pick_own(w);
		while (b2 == a && w->cell->d->cfg->table_size / w->cell->clients > 2);
		do
			c = pick_own(w);
		while ((c == a || c == b2) && w->cell->d->cfg->table_size / w->cell->clients > 2);
		if (oltp_reads(w, e, 0) || update_index(w, e, pick_table(w), a) ||
		    update_nonindex(w, e, pick_table(w), b2) || delete_insert(w, e, pick_table(w), c))
			return -1;
		return 0;
	}
	}
	return 0;
}

enum { SB_STARVE_AFTER = 3 }; /* lost races in a row that earn a transaction the turn (Y3) */

/* Waits while another worker's starving transaction has the turn (Y3). */
static void wait_turn(sb_worker *w)
{
	sb_cell *c = w->cell;
	pthread_mutex_lock(&c->mu);
	while (c->turn && c->turn != w->index + 1 && !c->abort)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

/* Takes the turn if no one has it (take) or gives it back if w has it (!take). */
static void set_turn(sb_worker *w, int take)
{
	sb_cell *c = w->cell;
	pthread_mutex_lock(&c->mu);
	if (take && !c->turn) {
		c->turn = w->index + 1;
	} else if (!take && c->turn == w->index + 1) {
		c->turn = 0;
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
}

/* One transaction, retried from bt_begin while it loses races; -1 if it failed. */
static int attempts(sb_worker *w, sb_ev *e, int b)
{
	const sb_config *cfg = w->cell->d->cfg;
	for (uint64_t attempt = 0;; attempt++) {
		wait_turn(w);
		w->npend = 0;
		memset(w->pend_ksum, 0, sizeof(w->pend_ksum));
		w->seq++;
		if (bt_begin(w->s)) {
			fail(w, e, "begin");
			return -1;
		}
		if (body(w, e, b)) {
			bt_rollback(w->s);
			return -1;
		}
		int rc = bt_commit(w->s);
		if (rc == 0)
			return 0;
		if (rc != BT_CONFLICT) {
			fail(w, e, "commit");
			return -1;
		}
		if (attempt >= cfg->max_retries) {
			e->rc = -1;
			snprintf(e->msg, sizeof(e->msg), "commit lost its race %" PRIu64 " times", attempt + 1);
			return -1;
		}
		e->retries++;
		e->bad = 0; /* what a lost attempt read is not this event's result */
		e->checked = 0;
		if (attempt + 1 >= SB_STARVE_AFTER)
			set_turn(w, 1);
	}
}

/* One transaction; on commit its writes join the worker's log. */
static void transaction(sb_worker *w, sb_ev *e, int b)
{
	int rc = attempts(w, e, b);
	set_turn(w, 0);
	if (rc)
		return;
	for (unsigned t = 0; t < SB_MAX_TABLES; t++)
		w->ksum[t] += w->pend_ksum[t];
	if (w->npend) {
		size_t want = w->nlog + w->npend;
		if (want > w->caplog && bench_grow((void **)&w->log, &w->caplog, want, sizeof(*w->log))) {
			e->rc = -1;
			snprintf(e->msg, sizeof(e->msg), "out of memory for the write log");
			return;
		}
		memcpy(w->log + w->nlog, w->pend, w->npend * sizeof(*w->pend));
		w->nlog = want;
	}
}

void sb_event(sb_worker *w, sb_ev *e)
{
	const sb_cell *c = w->cell;
	switch (c->bench) {
	case SB_POINT_QUERY: point(w, e, pick_table(w), pick_id(w, 1), 1); break;
	case SB_RANDOM_POINTS: in_list(w, e, (size_t)c->param); break;
	case SB_RANGE: range(w, e, c->param, BT_ROWS, 0); break;
	case SB_RANGE_COUNT: range(w, e, c->param, BT_COUNT, 0); break;
	case SB_RANGE_SUM: range(w, e, c->param, BT_SUM, 1); break;
	default: transaction(w, e, c->bench); break;
	}
}

/* ---- after a write cell ------------------------------------------------------------------- */

int sb_table_sums(bt_session *s, const sb_data *d, int64_t *sums, char *err, size_t errn)
{
	for (unsigned t = 0; t < d->cfg->tables; t++) {
		bt_range_q q;
		memset(&q, 0, sizeof(q));
		q.agg = BT_SUM;
		q.col = 1;
		if (bt_range(&sums[t], s, d->tptr[t], &q)) {
			snprintf(err, errn, "sysbench: the k sum of %s: %s", d->tptr[t]->name,
			         bt_session_error(s));
			return -1;
		}
	}
	return 0;
}

/* The seq of client j's last tagged write of (t, id) in this cell, or 0. */
static uint64_t last_tagged(const sb_worker *w, unsigned t, int64_t id)
{
	for (size_t i = w->nlog; i-- > 0;)
		if (w->log[i].tagged && w->log[i].table == t && w->log[i].id == id)
			return w->log[i].seq;
	return 0;
}

/* The k client j's log last wrote to (t, id), or INT64_MIN. */
static int64_t last_k(const sb_worker *w, unsigned t, int64_t id)
{
	for (size_t i = w->nlog; i-- > 0;)
		if (w->log[i].table == t && w->log[i].id == id)
			return w->log[i].k;
	return INT64_MIN;
}

#define CHECK_FAIL(...)                                                                            \
	do {                                                                                           \
		if (!*failed)                                                                              \
			snprintf(msg, msgn, __VA_ARGS__);                                                      \
		(*failed)++;                                                                               \
	} while (0)

/* Row (t, id) as a write left it: traced to the commit that wrote c, k as that client wrote
 * it (rows only one client writes, Y3), its index entry present. */
static uint64_t check_row(bt_session *s, const sb_cell *c, unsigned t, int64_t id, uint64_t *failed,
                          char *msg, size_t msgn)
{
	const bt_table *tb = c->d->tptr[t];
	bt_row r;
	int found = 0;
	unsigned cell, client;
	uint64_t seq, checks = 1;
	if (bt_get(s, tb, id, &r, &found) || !found) {
		CHECK_FAIL("re-read of %s id %" PRId64 ": %s", tb->name, id,
		           found ? bt_session_error(s) : "not found");
		return checks;
	}
	int64_t k = r.ints[1];
	if (parse_tag(r.text[2], r.text_len[2], &cell, &client, &seq) && cell == c->index) {
		checks++;
		if (client >= c->clients || last_tagged(&c->workers[client], t, id) != seq)
			CHECK_FAIL("%s id %" PRId64 ": c names write %u.%" PRIu64
			           ", not the last commit of that client",
			           tb->name, id, client, seq);
	}
	if (c->bench != SB_UPDATE_ONE) {
		unsigned owner = (unsigned)((id - 1) % c->clients);
		int64_t want = last_k(&c->workers[owner], t, id);
		checks++;
		if (want != INT64_MIN && want != k)
			CHECK_FAIL("%s id %" PRId64 ": k %" PRId64 ", its last commit wrote %" PRId64, tb->name,
			           id, k, want);
	}
	bt_range_q q;
	int64_t n = 0;
	memset(&q, 0, sizeof(q));
	q.index = 1;
	q.lo[0] = q.hi[0] = k;
	q.lo[1] = q.hi[1] = id;
	q.nlo = q.nhi = 2;
	q.agg = BT_COUNT;
	checks++;
	if (bt_range(&n, s, tb, &q) || n != 1)
		CHECK_FAIL("%s id %" PRId64 ": %" PRId64 " index entries (k %" PRId64 ")", tb->name, id, n,
		           k);
	return checks;
}

uint64_t sb_check_writes(bt_session *s, const sb_cell *c, const int64_t *before, uint64_t *failed,
                         char *msg, size_t msgn)
{
	const sb_data *d = c->d;
	uint64_t checks = 0;
	int64_t after[SB_MAX_TABLES];
	char err[256];
	*failed = 0;
	for (unsigned i = 0; i < c->clients; i++) {
		const sb_worker *w = &c->workers[i];
		size_t from = w->nlog > SB_CHECK_ROWS ? w->nlog - SB_CHECK_ROWS : 0;
		for (size_t j = from; j < w->nlog; j++)
			checks += check_row(s, c, w->log[j].table, w->log[j].id, failed, msg, msgn);
	}
	for (unsigned t = 0; t < d->cfg->tables; t++) {
		const bt_table *tb = d->tptr[t];
		for (int index = 0; index <= 1; index++) {
			bt_range_q q;
			int64_t n = 0;
			memset(&q, 0, sizeof(q));
			q.index = index;
			q.agg = BT_COUNT;
			checks++;
			if (bt_range(&n, s, tb, &q) || n != (int64_t)d->cfg->table_size)
				CHECK_FAIL("%s holds %" PRId64 " %s, not %" PRIu64, tb->name, n,
				           index ? "index entries" : "rows", d->cfg->table_size);
		}
	}
	checks++;
	if (sb_table_sums(s, d, after, err, sizeof(err))) {
		CHECK_FAIL("%s", err);
	} else {
		for (unsigned t = 0; t < d->cfg->tables; t++) {
			int64_t moved = 0;
			for (unsigned i = 0; i < c->clients; i++)
				moved += c->workers[i].ksum[t];
			if (after[t] - before[t] != moved)
				CHECK_FAIL("%s: the k sum moved by %" PRId64 ", the commits by %" PRId64,
				           d->tptr[t]->name, after[t] - before[t], moved);
		}
	}
	return checks;
}
