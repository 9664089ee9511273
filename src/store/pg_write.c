/*
 * pg_write.c - the PostgreSQL store's write: nodes and ref compare-and-swaps published
 * atomically, against the gc's epoch.
 *
 * prolly_write (schema version 2; version 3 checks the refs before it inserts) publishes a whole
 * write in ONE statement run in its own implicit transaction: epoch check, requires check, every
 * ref compare-and-swap, then the node insert -- only if every compare-and-swap applied, so a
 * write that loses a race costs the server no insert (with several refs, inside a BEGIN ...
 * EXCEPTION block that a failed compare-and-swap rolls back while the per-ref outcome survives
 * in local variables). Writes
 * larger than one INSERT chunk (batch_items nodes), and stores on a version-1 schema, use the
 * version-1 pipeline instead: BEGIN, prolly_write_begin (takes the write lock shared -- a
 * transaction-level advisory lock the gc's epoch bump takes exclusive; version-1 schemas lock the
 * epoch row FOR SHARE instead -- and raises PLY01 if the epoch moved), [prolly_write_requires
 * (PLY03 if a required node is missing)], one prolly_ref_cas per ref (one conditional
 * INSERT/UPDATE/DELETE, reporting whether it applied and the current value, flagging a failure
 * in a transaction-local setting), prolly_write_finish (PLY02 if any ref update failed, so the
 * queued INSERT chunks and COMMIT are skipped), the INSERT chunks, COMMIT: one round trip either
 * way. Every writer thus takes its ref row locks before it inserts nodes. (The functions' text is
 * in pg_sql.c.)
 *
 * Before sending, a write is planned: nodes in id order without duplicates (concurrent
 * publishers lock ids in the same order), refs in the name order the engine gives them (unique:
 * S1 in store.h), requires sorted without duplicates (sent only by a write that does not check the
 * epoch). A write with nothing to send only reads the epoch. PLY01 and PLY03 become
 * PROLLY_ECONFLICT with the gc explained, PLY02 the first failing ref's expectation; on any failure
 * nothing was written, but a write cut off with its connection while committing may or may not have
 * been applied. prolly_store_pg_fail_chunk arms a test hook that makes one INSERT chunk fail on the
 * server. The statement that takes the write lock bounds the transaction's lock waits first
 * (LOCK_BOUND, pg_int.h: any role may hold that advisory lock); a wait that times out (55P03) is
 * PROLLY_ETIMEOUT naming the sessions that hold the lock (prolly__pg_lock_timeout), unless the
 * holder is a gc that keeps working (prolly__pg_gc_advancing): then the write is sent again.
 * The epoch a write checks is the store's reported one (pg_epoch.c): the statement gets the row's
 * value it stands for, and passes it on only while the row is still that version (EPOCH_GUARD
 * in pg_sql.c: a restore in place writes the row again), else 0, a PLY01 said as such.
 */
#include "pg_int.h"

#include <stdlib.h>

static int cmp_node_ptr(const void *a, const void *b)
{
	const prolly_store_node *x = *(const prolly_store_node *const *)a;
	const prolly_store_node *y = *(const prolly_store_node *const *)b;
	return memcmp(x->id.bytes, y->id.bytes, PROLLY_ID_SIZE);
}

static int cmp_id(const void *a, const void *b)
{
	return memcmp(a, b, PROLLY_ID_SIZE);
}

typedef struct wctx {
	prolly_store_write *w;
	prolly_ref_update **refs; /* in name order */
	int fast;                 /* one prolly_write statement (else the version-1 pipeline) */
	size_t q_begin, q_ins0, n_ins, q_cas0;
	uint64_t epoch, xmin; /* the epoch row's value and xmin (0: unknown; pg_epoch.c) */
	int have_epoch;
	uint64_t inserted;
	int conflict; /* a ref update failed its expectation */
	int bad;
} wctx;

/* A ref update's outcome from the columns (applied, cur_exists, cur) starting at col. */
static void ref_outcome(wctx *x, prolly_ref_update *u, const PGresult *r, int row, int col)
{
	if (prolly__pg_read_bool(r, row, col))
		return;
	u->conflict = 1;
	x->conflict = 1;
	u->current_exists = prolly__pg_read_bool(r, row, col + 1);
	if (u->current_exists) {
		if (PQgetisnull(r, row, col + 2) || PQgetlength(r, row, col + 2) != PROLLY_ID_SIZE)
			x->bad = 1;
		else
			memcpy(u->current.bytes, PQgetvalue(r, row, col + 2), PROLLY_ID_SIZE);
	}
}

/* prolly_write's rows: (epoch, inserted, applied, cur_exists, cur, the epoch row's xmin), one
 * per ref in name order, or one with NULL ref columns when the write has no ref. */
static void fast_rows(wctx *x, const PGresult *r)
{
	size_t n = x->w->n_refs;
	if (PQnfields(r) != 6 || (size_t)PQntuples(r) != (n ? n : 1) ||
	    prolly__pg_read_int8(r, 0, 0, &x->epoch) || prolly__pg_read_int8(r, 0, 1, &x->inserted)) {
		x->bad = 1;
		return;
	}
	x->have_epoch = 1;
	prolly__pg_read_int8(r, 0, 5, &x->xmin);
	for (size_t i = 0; i < n; i++) {
		if (PQgetisnull(r, (int)i, 2)) {
			x->bad = 1;
			return;
		}
		ref_outcome(x, x->refs[i], r, (int)i, 2);
	}
}

static int write_fn(void *ctx, size_t qi, const PGresult *r)
{
	wctx *x = ctx;
	if (x->fast) {
		fast_rows(x, r);
	} else if (qi == x->q_begin) {
		if (PQntuples(r) == 1 && prolly__pg_read_int8(r, 0, 0, &x->epoch) == 0) {
			x->have_epoch = 1;
			prolly__pg_read_int8(r, 0, 1, &x->xmin);
		}
	} else if (qi >= x->q_ins0 && qi < x->q_ins0 + x->n_ins) {
		x->inserted += strtoull(PQcmdTuples((PGresult *)r), NULL, 10);
	} else if (qi >= x->q_cas0 && qi < x->q_cas0 + x->w->n_refs) {
		if (PQntuples(r) != 1 || PQnfields(r) != 3)
			x->bad = 1;
		else
			ref_outcome(x, x->refs[qi - x->q_cas0], r, 0, 0);
	}
	return 0;
}

static int conflict_message(const prolly_store_write *w)
{
	size_t failing = 0;
	const prolly_ref_update *first = NULL;
	for (size_t i = 0; i < w->n_refs; i++)
		if (w->refs[i].conflict) {
			if (!first)
				first = &w->refs[i];
			failing++;
		}
	if (!first)
		return prolly_set_error(PROLLY_ECONFLICT,
		                        "postgres: a ref update failed its expectation; nothing was "
		                        "written");
	return prolly__store_conflict("postgres", first, failing);
}

/* A write with nothing to write: reads the epoch (one statement, no transaction), unless it is
 * the first since the open read it (st->open_epoch: prolly_db_new's empty write costs no round
 * trip) and checks nothing. */
static int write_empty(pg_store *st, prolly_store_write *w)
{
	pgconn *c = NULL;
	wctx x;
	pipe p;
	int rc;
	if (!w->check_epoch) {
		uint64_t e = atomic_exchange(&st->open_epoch, 0);
		if (e) {
			w->current_epoch = e;
			return 0;
		}
	}
	memset(&x, 0, sizeof(x));
	x.w = w;
	x.q_begin = 0;
	x.q_ins0 = x.q_cas0 = SIZE_MAX;
	if ((rc = prolly__pg_pool_acquire(st, &c)))
		return rc;
	prolly__pg_pipe_init(&p, st, c, "reading the gc epoch", write_fn, &x);
	prolly__pg_pipe_send(&p, Q_EPOCH, 0, NULL, NULL);
	rc = prolly__pg_pipe_run(&p);
	prolly__pg_pool_done(st, c, &p);
	if (rc)
		return rc;
	if (!x.have_epoch)
		return prolly_set_error(PROLLY_ECORRUPT, "postgres: the meta table has no epoch row");
	w->current_epoch = prolly__pg_epoch_seen(st, x.epoch, x.xmin);
	if (w->check_epoch && w->epoch != w->current_epoch)
		return prolly_set_error(
		    PROLLY_ECONFLICT,
		    "postgres: a gc ran meanwhile (the write expected gc epoch %llu, the "
		    "store is at %llu); nothing was written",
		    (unsigned long long)w->epoch, (unsigned long long)w->current_epoch);
	return 0;
}

/* A write ready to send: nodes in id order without duplicates (concurrent publishers lock ids in
 * the same order), refs in name order (each at most once), requires sorted without duplicates
 * (only for a write that does not check the epoch, as every sweep batch of the gc bumps it, unless
 * the server restarted while the store was open: a crash loses non-durable writes that returned,
 * and leaves the epoch as it was). */
typedef struct wplan {
	const prolly_store_node **nodes;
	size_t n;
	prolly_ref_update **refs;
	prolly_id *req;
	size_t n_req;
} wplan;

static void plan_dispose(wplan *pl)
{
	free(pl->nodes);
	free(pl->refs);
	free(pl->req);
	memset(pl, 0, sizeof(*pl));
}

static int plan_write(wplan *pl, const prolly_store_write *w, int restarted)
{
	memset(pl, 0, sizeof(*pl));
	if (w->n_nodes) {
		if (!(pl->nodes = malloc(w->n_nodes * sizeof(*pl->nodes))))
			return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory writing %zu nodes",
			                        w->n_nodes);
		for (size_t i = 0; i < w->n_nodes; i++)
			pl->nodes[i] = &w->nodes[i];
		qsort(pl->nodes, w->n_nodes, sizeof(*pl->nodes), cmp_node_ptr);
		for (size_t i = 0; i < w->n_nodes; i++)
			if (!pl->n ||
			    memcmp(pl->nodes[pl->n - 1]->id.bytes, pl->nodes[i]->id.bytes, PROLLY_ID_SIZE))
				pl->nodes[pl->n++] = pl->nodes[i];
	}
	if (w->n_refs) {
		if (!(pl->refs = malloc(w->n_refs * sizeof(*pl->refs))))
			return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory writing %zu refs",
			                        w->n_refs);
		for (size_t i = 0; i < w->n_refs; i++) /* in name order, unique (S1 in store.h) */
			pl->refs[i] = &w->refs[i];
	}
	if (w->n_requires && (!w->check_epoch || restarted)) {
		if (!(pl->req = malloc(w->n_requires * sizeof(*pl->req))))
			return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
		memcpy(pl->req, w->requires, w->n_requires * sizeof(*pl->req));
		qsort(pl->req, w->n_requires, sizeof(*pl->req), cmp_id);
		for (size_t i = 0; i < w->n_requires; i++)
			if (!pl->n_req || memcmp(&pl->req[pl->n_req - 1], &pl->req[i], PROLLY_ID_SIZE))
				pl->req[pl->n_req++] = pl->req[i];
	}
	return 0;
}

/* The id array (a) and node array (b) of nodes [at, at + m) of pl; b gets a wrong element type
 * when the test hook wants this chunk to fail. */
static int encode_nodes(prolly_buf *a, prolly_buf *b, const wplan *pl, size_t at, size_t m,
                        int fail, uint64_t *sent)
{
	int rc;
	if ((rc = prolly__pg_array_begin(a, m, BYTEA_OID)) ||
	    (rc = prolly__pg_array_begin(b, m, fail ? INT4_OID : BYTEA_OID)))
		return rc;
	for (size_t i = at; i < at + m; i++) {
		if ((rc = prolly__pg_array_add(a, pl->nodes[i]->id.bytes, PROLLY_ID_SIZE)) ||
		    (rc = prolly__pg_array_add(b, pl->nodes[i]->data, pl->nodes[i]->size)))
			return rc;
		*sent += pl->nodes[i]->size;
	}
	return prolly__pg_array_too_big(b->size);
}

static int encode_requires(prolly_buf *a, const wplan *pl)
{
	int rc = prolly__pg_array_begin(a, pl->n_req, BYTEA_OID);
	for (size_t i = 0; i < pl->n_req && !rc; i++)
		rc = prolly__pg_array_add(a, pl->req[i].bytes, PROLLY_ID_SIZE);
	return rc ? rc : prolly__pg_array_too_big(a->size);
}

/* The epoch a write checks, as its statement's parameters (EPOCH_GUARD in pg_sql.c): the value
 * of the row version w->epoch stands for, and that version's xmin (NULL: unknown); both NULL for
 * a write that checks nothing. */
typedef struct epoch_arg {
	uint64_t value;
	char ebuf[8], xbuf[8];
	const char *vals[2];
	int lens[2];
} epoch_arg;

static void epoch_arg_init(epoch_arg *ea, pg_store *st, const prolly_store_write *w)
{
	uint64_t xmin = 0;
	memset(ea, 0, sizeof(*ea));
	ea->lens[0] = ea->lens[1] = 8;
	if (!w->check_epoch)
		return;
	ea->value = prolly__pg_epoch_of(st, w->epoch, &xmin);
	prolly__pg_put_be64((unsigned char *)ea->ebuf, ea->value);
	prolly__pg_put_be64((unsigned char *)ea->xbuf, xmin);
	ea->vals[0] = ea->ebuf;
	ea->vals[1] = xmin ? ea->xbuf : NULL;
}

/* The version-1 pipeline: BEGIN, [SET LOCAL synchronous_commit], prolly_write_begin,
 * [prolly_write_requires], one prolly_ref_cas per ref, [prolly_write_finish], one INSERT per
 * chunk of batch nodes, COMMIT. The compare-and-swaps come first: a write that loses one is
 * aborted by prolly_write_finish before the server inserts any node (and every writer locks
 * refs before it inserts nodes, so two writers never wait for each other in opposite orders).
 * Chunks are sent as they are encoded. */
static int send_pipeline(pipe *p, wctx *x, const wplan *pl, const epoch_arg *ea,
                         const prolly_store_write *w, size_t batch, unsigned fail, prolly_buf *a,
                         prolly_buf *b, uint64_t *sent)
{
	const char *vals[5];
	int lens[5], rc;
	prolly__pg_pipe_send(p, Q_BEGIN, 0, NULL, NULL);
	if (!w->durable)
		prolly__pg_pipe_send(p, Q_ASYNC, 0, NULL, NULL);
	x->q_begin = p->queued;
	prolly__pg_pipe_send(p, Q_WBEGIN, 2, ea->vals, ea->lens);
	if (pl->n_req) {
		if ((rc = encode_requires(a, pl)))
			return rc;
		vals[0] = (const char *)a->ptr;
		lens[0] = (int)a->size;
		prolly__pg_pipe_send(p, Q_WREQUIRES, 1, vals, lens);
	}
	x->q_cas0 = p->queued;
	for (size_t i = 0; i < w->n_refs; i++) {
		prolly_ref_update *u = pl->refs[i];
		unsigned char expect[4], remove = u->remove ? 1 : 0;
		prolly__pg_put_be32(expect, (uint32_t)u->expect);
		vals[0] = u->name;
		lens[0] = (int)strlen(u->name);
		vals[1] = (const char *)expect;
		lens[1] = 4;
		vals[2] = u->expect == PROLLY_REF_EXPECT_VALUE ? (const char *)u->expected.bytes : NULL;
		lens[2] = PROLLY_ID_SIZE;
		vals[3] = (const char *)&remove;
		lens[3] = 1;
		vals[4] = u->remove ? NULL : (const char *)u->value.bytes;
		lens[4] = PROLLY_ID_SIZE;
		prolly__pg_pipe_send(p, Q_WCAS, 5, vals, lens);
	}
	if (w->n_refs)
		prolly__pg_pipe_send(p, Q_WFINISH, 0, NULL, NULL);
	x->q_ins0 = p->queued;
	for (size_t k = 0; k < x->n_ins; k++) {
		size_t at = k * batch;
		if ((rc = encode_nodes(a, b, pl, at, PROLLY_MIN(batch, pl->n - at), fail == k + 1, sent)))
			return rc;
		vals[0] = (const char *)a->ptr;
		lens[0] = (int)a->size;
		vals[1] = (const char *)b->ptr;
		lens[1] = (int)b->size;
		/* Out to the socket before the next chunk is queued ("libpq's output buffer",
		 * pg_pipe.c). */
		prolly__pg_pipe_send_out(p, Q_WINSERT, 2, vals, lens);
	}
	prolly__pg_pipe_send(p, Q_COMMIT, 0, NULL, NULL);
	return 0;
}

/* Arrays of the fast write: requires, ids, nodes, names, expects, expected, removes, values. */
enum { FA_REQ, FA_IDS, FA_NODES, FA_NAMES, FA_EXPECTS, FA_EXPECTED, FA_REMOVES, FA_VALUES, N_FA };

/*
 * One statement, run in its own implicit transaction: SELECT ... FROM prolly_write(epoch, async,
 * requires, ids, nodes, names, expects, expected, removes, values), all of a write that fits one
 * INSERT chunk. Everything is encoded before anything is sent. NULL array elements stand where
 * prolly_ref_cas takes NULL (expected unless EXPECT_VALUE, the value of a removal).
 */
static int send_fast(pipe *p, const wplan *pl, const epoch_arg *ea, const prolly_store_write *w,
                     unsigned fail, prolly_buf *fa, uint64_t *sent)
{
	size_t r = w->n_refs;
	char async = w->durable ? 0 : 1;
	const char *vals[3 + N_FA];
	int lens[3 + N_FA], rc;
	if (pl->n_req && (rc = encode_requires(&fa[FA_REQ], pl)))
		return rc;
	if (pl->n && (rc = encode_nodes(&fa[FA_IDS], &fa[FA_NODES], pl, 0, pl->n, fail == 1, sent)))
		return rc;
	if (r && ((rc = prolly__pg_array_begin(&fa[FA_NAMES], r, BYTEA_OID)) ||
	          (rc = prolly__pg_array_begin(&fa[FA_EXPECTS], r, INT4_OID)) ||
	          (rc = prolly__pg_array_begin(&fa[FA_EXPECTED], r, BYTEA_OID)) ||
	          (rc = prolly__pg_array_begin(&fa[FA_REMOVES], r, BOOL_OID)) ||
	          (rc = prolly__pg_array_begin(&fa[FA_VALUES], r, BYTEA_OID))))
		return rc;
	for (size_t i = 0; i < r; i++) {
		const prolly_ref_update *u = pl->refs[i];
		unsigned char expect[4], remove = u->remove ? 1 : 0;
		prolly__pg_put_be32(expect, (uint32_t)u->expect);
		if ((rc = prolly__pg_array_add(&fa[FA_NAMES], u->name, strlen(u->name))) ||
		    (rc = prolly__pg_array_add(&fa[FA_EXPECTS], expect, 4)) ||
		    (rc = u->expect == PROLLY_REF_EXPECT_VALUE
		              ? prolly__pg_array_add(&fa[FA_EXPECTED], u->expected.bytes, PROLLY_ID_SIZE)
		              : prolly__pg_array_add_null(&fa[FA_EXPECTED])) ||
		    (rc = prolly__pg_array_add(&fa[FA_REMOVES], &remove, 1)) ||
		    (rc = u->remove ? prolly__pg_array_add_null(&fa[FA_VALUES])
		                    : prolly__pg_array_add(&fa[FA_VALUES], u->value.bytes, PROLLY_ID_SIZE)))
			return rc;
	}
	vals[0] = ea->vals[0];
	lens[0] = 8;
	vals[1] = &async;
	lens[1] = 1;
	for (int k = 0; k < N_FA; k++) {
		int used = k == FA_REQ ? pl->n_req > 0 : k <= FA_NODES ? pl->n > 0 : r > 0;
		vals[2 + k] = used ? (const char *)fa[k].ptr : NULL;
		lens[2 + k] = used ? (int)fa[k].size : 0;
	}
	vals[2 + N_FA] = ea->vals[1];
	lens[2 + N_FA] = 8;
	prolly__pg_pipe_send(p, Q_WRITE, 3 + N_FA, vals, lens);
	return 0;
}

int prolly__pg_write(prolly_store *base, prolly_store_write *w)
{
	pg_store *st = (pg_store *)base;
	prolly_buf fa[N_FA];
	wplan pl;
	epoch_arg ea;
	pgconn *c = NULL;
	uint64_t sent = 0;
	wctx x;
	pipe p;
	int rc = 0, have_pipe = 0, unsent = 0, freed = 0;

	memset(fa, 0, sizeof(fa));
	memset(&pl, 0, sizeof(pl));
	memset(&x, 0, sizeof(x));
	if (!w)
		return prolly_set_error(PROLLY_EINVAL, "postgres: write without a write");
	if (!w->n_nodes && !w->n_refs && !(w->n_requires && !w->check_epoch))
		return write_empty(st, w);
	epoch_arg_init(&ea, st, w);
	/* The connection first: a new one tells whether the server restarted (plan_write). */
	if ((rc = prolly__pg_pool_acquire(st, &c)) ||
	    (rc = plan_write(&pl, w, atomic_load(&st->restarted))))
		goto cleanup;

	size_t chunks = (pl.n + st->batch_items - 1) / st->batch_items;
	unsigned fail = 0;
#ifdef PROLLY_TEST_HOOKS /* prolly_store_pg_fail_chunk, in the test build only */
	fail = atomic_load(&st->fail_chunk);
	if (fail && fail <= chunks)
		atomic_store(&st->fail_chunk, 0);
	else
		fail = 0;
#endif
	for (;;) {
		memset(&x, 0, sizeof(x));
		x.w = w;
		x.refs = pl.refs;
		x.fast = atomic_load(&st->fast) && chunks <= 1;
		x.q_begin = x.q_ins0 = x.q_cas0 = SIZE_MAX;
		x.n_ins = chunks;
		sent = 0;
		prolly__pg_pipe_init(&p, st, c, "write", write_fn, &x);
		have_pipe = 1;
		if (x.fast)
			rc = send_fast(&p, &pl, &ea, w, fail, fa, &sent);
		else
			rc = send_pipeline(&p, &x, &pl, &ea, w, st->batch_items, fail, &fa[0], &fa[1], &sent);
		if (rc) {
			unsent = p.queued > 0; /* queued without a Sync: the connection is not reusable */
			goto cleanup;
		}
		rc = prolly__pg_pipe_run(&p);
		/* Nothing was written. A gc that holds the write lock longer than lock_timeout while
		 * it works (a mark under the lock on a large store) is waited for again, and so, once
		 * in a row, is a lock that a running gc released just after the wait gave up; any
		 * other holder (one that went idle) fails the write, below. */
		if (!rc || !p.failed || strcmp(p.sqlstate, "55P03") != 0)
			break;
		int how = prolly__pg_gc_advancing(st, c);
		if (how == 1)
			freed = 0;
		else if (how == 2 && !freed)
			freed = 1;
		else
			break;
	}

	prolly__pg_cnt_add(&st->cnt.insert_statements, chunks);
	if (x.have_epoch) /* no xmin: the row changed while the statement ran (pg_epoch.c) */
		w->current_epoch = x.xmin ? prolly__pg_epoch_seen(st, x.epoch, x.xmin)
		                          : prolly__pg_epoch_moved(st, x.epoch);
	if (rc == 0 && x.bad)
		rc = prolly_set_error(PROLLY_ECORRUPT, "postgres: a ref update returned a malformed row");
	else if (rc == 0 && x.conflict) /* the fast path reports failed refs in its rows */
		rc = conflict_message(w);
	if (rc == 0) {
		prolly__pg_cnt_add(&st->cnt.rows_inserted, x.inserted);
		prolly__pg_cnt_add(&st->cnt.bytes_sent, sent);
	}
	if (rc && p.failed && strcmp(p.sqlstate, "PLY01") == 0 && ea.value &&
	    strtoull(p.detail, NULL, 10) == ea.value) {
		/* The value was the one expected: the row's version was not (EPOCH_GUARD). */
		w->current_epoch = prolly__pg_epoch_rewritten(st, ea.value);
		rc = prolly_set_error(
		    PROLLY_ECONFLICT,
		    "postgres: the store's gc epoch was written again by something other "
		    "than a gc since this write read it (the database restored in place?); "
		    "nothing was written (retry from the current refs)");
	} else if (rc && p.failed && strcmp(p.sqlstate, "PLY01") == 0) {
		w->current_epoch = prolly__pg_epoch_seen(st, strtoull(p.detail, NULL, 10), 0);
		rc = prolly_set_error(PROLLY_ECONFLICT,
		                      "postgres: a gc ran meanwhile (the write expected gc epoch %llu, the "
		                      "store is at %llu); nothing was written",
		                      (unsigned long long)w->epoch, (unsigned long long)w->current_epoch);
	} else if (rc && p.failed && strcmp(p.sqlstate, "PLY02") == 0) {
		rc = conflict_message(w);
	} else if (rc && p.failed && strcmp(p.sqlstate, "PLY03") == 0) {
		rc = prolly_set_error(PROLLY_ECONFLICT,
		                      "postgres: %s node(s) this write builds on are gone (a gc removed "
		                      "them, or a server crash lost a write that was not durable); nothing "
		                      "was written (retry from the current refs)",
		                      p.detail);
	} else if (rc && p.failed && strcmp(p.sqlstate, "55P03") == 0) {
		rc = prolly__pg_lock_timeout(st, c, &p, LOCK_WRITE, 1, "nothing was written");
	} else if (rc && p.failed && (p.guard_failed || strcmp(p.sqlstate, "26000") == 0)) {
		/* pipe_run's message stands: it names the pooler that handed this connection another
		 * server session (the session guard before a Parse failed there, or a prepared statement
		 * was missing), which is not a failure of the statement it stopped at */
	} else if (rc && p.failed && !p.broken && x.fast) {
		rc = prolly_set_error(rc, "postgres: write: %s (SQLSTATE %s); nothing was written", p.msg,
		                      p.sqlstate);
	} else if (rc && p.failed && !p.broken && p.err_qi >= x.q_ins0 &&
	           p.err_qi < x.q_ins0 + x.n_ins) {
		rc = prolly_set_error(rc,
		                      "postgres: write: node insert statement %zu of %zu failed: %s "
		                      "(SQLSTATE %s); nothing was written",
		                      p.err_qi - x.q_ins0 + 1, x.n_ins, p.msg, p.sqlstate);
	}
	if (rc && rc != PROLLY_ECONFLICT)
		for (size_t i = 0; i < w->n_refs; i++)
			w->refs[i].conflict = 0;

cleanup:
	if (c)
		prolly__pg_pool_release(st, c, unsent || (have_pipe && p.broken));
	for (int k = 0; k < N_FA; k++)
		prolly_buf_dispose(&fa[k]);
	plan_dispose(&pl);
	return rc;
}
