/*
 * pg_gc.c - the PostgreSQL store's gc: mark, snapshot, sweep batches, while others write.
 *
 * See prolly__pg_gc() and docs/postgres.md ("gc while others write", with the argument that it
 * is safe). On two connections of the pool (a and b):
 *
 *   1. a session advisory lock on b (LOCK_GC and a hash of the schema): one gc per schema,
 *      across processes (and gc_mu: one per store). On b, the session that also takes the write
 *      lock exclusive: a writer that waited lock_timeout for it can tell a gc from any other
 *      holder (prolly__pg_gc_advancing);
 *   2. the epoch bump on b (the write lock exclusive, then meta's epoch + 1): writes begun
 *      before the gc fail their epoch check;
 *   3. a REPEATABLE READ, READ ONLY transaction on a: the snapshot; nodes inserted after it are
 *      never candidates;
 *   4. mark() with the gc thread's store calls pinned to a (pg_pool.c), so it reads refs and
 *      nodes through the snapshot; the refs its list_refs calls return are recorded
 *      (prolly__pg_refs_capture);
 *   5. candidates read from the snapshot with a cursor, gc_batch at a time, filtered by keep();
 *      each batch with something to delete is one short transaction on b (sweep): bump the
 *      epoch (waiting for the writes in flight, holding new ones back until commit), read the
 *      refs; if one names a value the mark did not start from, roll back, mark again and retry
 *      (after GC_REMARKS_OUTSIDE such retries, mark again while holding the lock, on b); then
 *      delete what keep() still refuses and commit.
 *
 * Sweep batches and writes are thus serialised by the write lock, and every batch bumps the
 * epoch: a write that commits never references a node a batch removed (docs/postgres.md, claim
 * 2), and a node published after the mark began is never swept (claim 1).
 */
#include "pg_int.h"

#include <stdio.h>
#include <stdlib.h>

#define GC_REMARKS_OUTSIDE 2 /* sweeps retried after a re-mark without the lock, then with it */

static int cmp_pref(const void *a, const void *b)
{
	const pref *x = a, *y = b;
	int c = prolly__keycmp(x->name, x->len, y->name, y->len);
	return c ? c : memcmp(x->value.bytes, y->value.bytes, PROLLY_ID_SIZE);
}

/* 1 if every (name, value) of now is in seen (sorted): the marked set covers every tree the refs
 * name now, since what is reachable from an id depends on the id alone. */
static int refs_covered(const preflist *now, const preflist *seen)
{
	for (size_t i = 0; i < now->n; i++)
		if (!seen->n || !bsearch(&now->v[i], seen->v, seen->n, sizeof(pref), cmp_pref))
			return 0;
	return 1;
}

/* Calls mark() with the thread's store calls going to c (NULL: the pool), recording the refs it
 * lists into seen (sorted afterwards). */
static int run_mark(pg_store *st, pgconn *c, prolly_gc_mark_fn mark, void *payload, preflist *seen)
{
	int rc;
	prolly__pg_preflist_dispose(seen);
	prolly__pg_refs_capture(st, seen);
	if (c)
		prolly__pg_pin(st, c);
	rc = mark(payload);
	prolly__pg_refs_capture(NULL, NULL);
	prolly__pg_pin(NULL, NULL);
	if (seen->n)
		qsort(seen->v, seen->n, sizeof(pref), cmp_pref);
	return rc;
}

typedef struct candctx {
	prolly_buf ids;   /* n * 32 bytes */
	prolly_buf sizes; /* n * uint64 */
	size_t n;
} candctx;

static int cand_fn(void *ctx, size_t qi, const PGresult *r)
{
	candctx *x = ctx;
	int rows = PQntuples(r), rc;
	(void)qi;
	for (int i = 0; i < rows; i++) {
		uint64_t size;
		if (PQgetlength(r, i, 0) != PROLLY_ID_SIZE || prolly__pg_read_int8(r, i, 1, &size))
			continue; /* not a node id this library wrote: never removed */
		if ((rc = prolly__buf_put(&x->ids, PQgetvalue(r, i, 0), PROLLY_ID_SIZE)) ||
		    (rc = prolly__buf_put(&x->sizes, &size, sizeof(size))))
			return rc;
		x->n++;
	}
	return 0;
}

typedef struct sweepctx {
	preflist now;
	sctx del;
	size_t q_refs, q_del;
} sweepctx;

static int sweep_fn(void *ctx, size_t qi, const PGresult *r)
{
	sweepctx *x = ctx;
	if (qi == x->q_refs)
		return prolly__pg_list_fn(&x->now, qi, r);
	if (qi == x->q_del)
		return prolly__pg_two_int8_fn(&x->del, qi, r);
	return 0;
}

/* Keeps in ids/sizes (n entries) only those keep() refuses; returns the new count. */
static size_t filter_doomed(prolly_gc_keep_fn keep, void *payload, prolly_id *ids, uint64_t *sizes,
                            size_t n)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (!keep(payload, &ids[i])) {
			ids[m] = ids[i];
			sizes[m] = sizes[i];
			m++;
		}
	return m;
}

/*
 * One sweep transaction on connection b: lock the epoch row (waiting for writes in flight,
 * holding new ones back) and bump it, read the refs; if they name anything the mark did not start
 * from, roll back, mark again and retry (after GC_REMARKS_OUTSIDE such retries, mark again while
 * holding the lock, on this connection); then delete what is still unmarked and commit.
 */
static int sweep(pg_store *st, pgconn *b, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep,
                 void *payload, preflist *seen, prolly_id *ids, uint64_t *sizes, size_t n,
                 uint64_t *removed, uint64_t *removed_bytes)
{
	prolly_buf arr = PROLLY_BUF_INIT;
	sweepctx x;
	pipe p;
	int rc = 0;
	memset(&x, 0, sizeof(x));
	for (int attempt = 0;; attempt++) {
		if (!n)
			goto cleanup;
		prolly__pg_preflist_dispose(&x.now);
		x.q_refs = 2;
		x.q_del = SIZE_MAX;
		prolly__pg_pipe_init(&p, st, b, "gc sweep", sweep_fn, &x);
		prolly__pg_pipe_send(&p, Q_BEGIN, 0, NULL, NULL);
		prolly__pg_pipe_send(&p, Q_GCBUMP, 0, NULL, NULL);
		prolly__pg_pipe_send(&p, Q_GCREFS, 0, NULL, NULL);
		if ((rc = prolly__pg_pipe_run(&p))) {
			if (p.failed && strcmp(p.sqlstate, "55P03") == 0)
				rc = prolly__pg_lock_timeout(st, b, &p, LOCK_WRITE, 0, "nothing more was removed");
			goto cleanup;
		}
		if (!mark || refs_covered(&x.now, seen))
			break;
		prolly__pg_cnt_add(&st->cnt.gc_remarks, 1);
		if (attempt < GC_REMARKS_OUTSIDE) {
			prolly__pg_pipe_init(&p, st, b, "gc sweep", NULL, NULL);
			prolly__pg_pipe_send(&p, Q_ROLLBACK, 0, NULL, NULL);
			if ((rc = prolly__pg_pipe_run(&p)) || (rc = run_mark(st, NULL, mark, payload, seen)))
				goto cleanup;
			n = filter_doomed(keep, payload, ids, sizes, n);
			continue;
		}
		/* Writers are held back now: the refs cannot move while mark() runs. */
		if ((rc = run_mark(st, b, mark, payload, seen)))
			goto cleanup;
		n = filter_doomed(keep, payload, ids, sizes, n);
		break;
	}
	if (!n) {
		prolly__pg_pipe_init(&p, st, b, "gc sweep", NULL, NULL);
		prolly__pg_pipe_send(&p, Q_ROLLBACK, 0, NULL, NULL);
		rc = prolly__pg_pipe_run(&p);
		goto cleanup;
	}
	if ((rc = prolly__pg_array_begin(&arr, n, BYTEA_OID)))
		goto cleanup;
	for (size_t i = 0; i < n && !rc; i++)
		rc = prolly__pg_array_add(&arr, ids[i].bytes, PROLLY_ID_SIZE);
	if (rc)
		goto cleanup;
	x.q_refs = SIZE_MAX;
	x.q_del = 0;
	prolly__pg_pipe_init(&p, st, b, "gc sweep", sweep_fn, &x);
	const char *vals[1] = {(const char *)arr.ptr};
	int lens[1] = {(int)arr.size};
	prolly__pg_pipe_send(&p, Q_GCDELETE, 1, vals, lens);
	prolly__pg_pipe_send(&p, Q_COMMIT, 0, NULL, NULL);
	if ((rc = prolly__pg_pipe_run(&p)))
		goto cleanup;
	*removed += x.del.a;
	*removed_bytes += x.del.b;
	prolly__pg_cnt_add(&st->cnt.gc_batches, 1);
cleanup:
	if (rc && b->pg && PQstatus(b->pg) == CONNECTION_OK &&
	    PQtransactionStatus(b->pg) != PQTRANS_IDLE) {
		prolly__pg_pipe_init(&p, st, b, "gc sweep", NULL, NULL);
		prolly__pg_pipe_send(&p, Q_ROLLBACK, 0, NULL, NULL);
		prolly__pg_pipe_run(&p);
	}
	prolly__pg_preflist_dispose(&x.now);
	prolly_buf_dispose(&arr);
	return rc;
}

int prolly__pg_gc(prolly_store *base, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep, void *payload,
                  prolly_gc_result *out)
{
	pg_store *st = (pg_store *)base;
	pgconn *a = NULL, *b = NULL;
	preflist seen = {NULL, 0, 0};
	candctx cand;
	pipe p;
	char *lock_sql = NULL, fetch_sql[64], keep_msg[1024];
	uint64_t listed = 0, removed = 0, removed_bytes = 0;
	int rc = 0, locked = 0, a_bad = 0, b_bad = 0;

	memset(&cand, 0, sizeof(cand));
	if (!keep)
		return prolly_set_error(PROLLY_EINVAL, "postgres: gc without a keep callback");
	atomic_store(&st->open_epoch, 0); /* about to move: the next empty write reads it */
	if (st->pool_size < 2)
		return prolly_set_error(PROLLY_EINVAL,
		                        "postgres: gc needs two connections (pool_size >= 2)");
	pthread_mutex_lock(&st->gc_mu);
	if ((rc = prolly__pg_pool_acquire(st, &a)) || (rc = prolly__pg_pool_acquire(st, &b)))
		goto cleanup;

	/* 1. One gc at a time on this schema, across processes (a session advisory lock on b, which
	 * takes the write lock exclusive too; the wait for it bounded as a write's: any role may hold
	 * the key). */
	if (!(lock_sql = prolly__pg_subst("SELECT pg_advisory_lock(CASE WHEN " LOCK_BOUND
	                                  " THEN " PROLLY__STR(LOCK_GC) " END, hashtext(#))",
	                                  st->qs, st->meta_literal))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
		goto cleanup;
	}
	prolly__pg_pipe_init(&p, st, b, "gc lock", NULL, NULL);
	prolly__pg_pipe_send_sql(&p, lock_sql);
	if ((rc = prolly__pg_pipe_run(&p))) {
		b_bad = p.broken;
		if (p.failed && strcmp(p.sqlstate, "55P03") == 0)
			rc = prolly__pg_lock_timeout(st, b, &p, LOCK_GC, 0, "nothing was removed");
		goto cleanup;
	}
	locked = 1;
	b->beat = 1; /* writers waiting for the write lock it takes can tell it is working */
	b->beat_ns = 0;
	/* 2. Bump the epoch: writes begun before the gc now fail their epoch check. */
	prolly__pg_pipe_init(&p, st, b, "gc epoch", NULL, NULL);
	prolly__pg_pipe_send(&p, Q_GCBUMP, 0, NULL, NULL);
	if ((rc = prolly__pg_pipe_run(&p))) {
		if (p.failed && strcmp(p.sqlstate, "55P03") == 0)
			rc = prolly__pg_lock_timeout(st, b, &p, LOCK_WRITE, 0, "nothing was removed");
		goto cleanup;
	}
	/* 3. The snapshot candidates come from: nodes inserted after it are never candidates. */
	prolly__pg_pipe_init(&p, st, a, "gc snapshot", NULL, NULL);
	prolly__pg_pipe_send_sql(&p, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
	prolly__pg_pipe_send_sql(&p, "SELECT 1");
	if ((rc = prolly__pg_pipe_run(&p))) {
		a_bad = p.broken;
		goto cleanup;
	}
	/* 4. Mark, reading refs and nodes through that same snapshot. */
	if (mark && (rc = run_mark(st, a, mark, payload, &seen)))
		goto cleanup;
	/* 5. Sweep: candidates from the snapshot, gc_batch at a time, each batch in one short
	 * transaction on b. */
	prolly__pg_pipe_init(&p, st, a, "gc candidates", NULL, NULL);
	{
		char *decl = prolly__pg_subst("DECLARE prolly_gc NO SCROLL CURSOR FOR SELECT id, "
		                              "octet_length(node)::int8 FROM @.nodes",
		                              st->qs, "");
		if (!decl) {
			rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
			goto cleanup;
		}
		prolly__pg_pipe_send_sql(&p, decl);
		free(decl);
	}
	if ((rc = prolly__pg_pipe_run(&p))) {
		a_bad = p.broken;
		goto cleanup;
	}
	snprintf(fetch_sql, sizeof(fetch_sql), "FETCH FORWARD %zu FROM prolly_gc", st->gc_batch);
	for (;;) {
		cand.ids.size = cand.sizes.size = 0;
		cand.n = 0;
		prolly__pg_pipe_init(&p, st, a, "gc candidates", cand_fn, &cand);
		prolly__pg_pipe_send_sql(&p, fetch_sql);
		if ((rc = prolly__pg_pipe_run(&p))) {
			a_bad = p.broken;
			goto cleanup;
		}
		if (!cand.n)
			break;
		listed += cand.n;
		prolly_id *ids = (prolly_id *)(void *)cand.ids.ptr;
		uint64_t *sizes = (uint64_t *)(void *)cand.sizes.ptr;
		size_t n = filter_doomed(keep, payload, ids, sizes, cand.n);
		if ((rc = sweep(st, b, mark, keep, payload, &seen, ids, sizes, n, &removed,
		                &removed_bytes)))
			goto cleanup;
	}
	prolly__pg_pipe_init(&p, st, a, "gc end", NULL, NULL);
	prolly__pg_pipe_send_sql(&p, "CLOSE prolly_gc");
	prolly__pg_pipe_send_sql(&p, "COMMIT");
	if ((rc = prolly__pg_pipe_run(&p))) {
		a_bad = p.broken;
		goto cleanup;
	}
	if (out) {
		out->nodes_kept = listed - removed;
		out->nodes_removed = removed;
		out->bytes_removed = removed_bytes;
	}

cleanup:
	if (b)
		b->beat = 0;
	snprintf(keep_msg, sizeof(keep_msg), "%s", rc ? prolly_last_error() : "");
	if (a && a->pg && PQstatus(a->pg) == CONNECTION_OK &&
	    PQtransactionStatus(a->pg) != PQTRANS_IDLE) {
		prolly__pg_pipe_init(&p, st, a, "gc end", NULL, NULL);
		prolly__pg_pipe_send_sql(&p, "ROLLBACK");
		if (prolly__pg_pipe_run(&p))
			a_bad = 1;
	}
	if (locked && b && b->pg && PQstatus(b->pg) == CONNECTION_OK) {
		free(lock_sql);
		lock_sql = prolly__pg_subst(
		    "SELECT pg_advisory_unlock(" PROLLY__STR(LOCK_GC) ", hashtext(#))", st->qs,
		    st->meta_literal);
		prolly__pg_pipe_init(&p, st, b, "gc end", NULL, NULL);
		if (lock_sql)
			prolly__pg_pipe_send_sql(&p, lock_sql);
		if (!lock_sql || prolly__pg_pipe_run(&p))
			b_bad = 1; /* closing the session releases its advisory lock */
	}
	if (rc)
		prolly_set_error(rc, "%s", keep_msg);
	free(lock_sql);
	prolly__pg_pool_release(st, a, a_bad);
	prolly__pg_pool_release(st, b, b_bad);
	pthread_mutex_unlock(&st->gc_mu);
	prolly__pg_preflist_dispose(&seen);
	prolly_buf_dispose(&cand.ids);
	prolly_buf_dispose(&cand.sizes);
	return rc;
}
