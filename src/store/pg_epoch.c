/*
 * pg_epoch.c - the gc epoch as the PostgreSQL store reports it: one that only grows (K4 in
 * prolly/store.h), also when the database is restored in place under an open handle.
 *
 * The store's epoch is the row 'epoch' of meta, and only a gc raises it. A restore in place
 * (pg_restore --clean over the live schema, or TRUNCATE and a data-only restore) writes that row
 * again with the dump's value: the one a handle last saw, or a lower one. The engine takes a
 * commit it read at epoch e as still stored while the store reports e (H4 in src/head_memo.c), and
 * keeps the greatest epoch it saw: after such a restore a long-lived handle trusted commits and
 * nodes the restore had removed (a branch created at one of them), or failed every epoch-checked
 * write for as long as the store's epoch stayed below the old one.
 *
 * Every version of a row carries the transaction that wrote it (xmin), which a restore cannot
 * keep. So each statement that reads the epoch reads its row's xmin with it, in the same snapshot,
 * and the pair (value, xmin) names one version of the row. The store reports value + off. A pair
 * it has not seen whose value is not above every value it reported under the current offset was
 * written by something other than a gc: off grows so that the epoch reported is above every one
 * reported before. The engine then sees what it sees after a gc: writes begun before fail their
 * epoch check, the heads are read again. A write's epoch check goes back from the reported epoch
 * to its pair, and its statement passes the value to the schema's function only while the row is
 * still that version (else 0, which no epoch equals: they start at 1). Costs no statement and no
 * round trip: the xmin is one more subquery of statements that read the epoch anyway.
 *
 * A pair with xmin 0 was read without its xmin (a write's epoch, when the row changed between
 * the statement's snapshot and the function's read): it stands for the version of that value seen
 * last, and the next read of that value fills the xmin in. Such a version was written while the
 * statement held meta locked, so by a gc, never by a restore (DROP or TRUNCATE waits for the
 * lock): one at or below every epoch reported is a gc's version this store skipped (another
 * connection reported a later one first), reported under the offset and not recorded, where it
 * was taken for a restore before (test_pg_reads' gc_while_engine_writes, under load, now and
 * then); its next read, with its xmin, is judged as any (prolly__pg_epoch_moved).
 */
#include "pg_int.h"

/* The slot of the newest pair with value and xmin (either may be unknown: 0); NULL. */
static epoch_pair *find(pg_store *st, uint64_t value, uint64_t xmin)
{
	for (size_t k = 1; k <= PG_EPOCHS; k++) {
		epoch_pair *e = &st->epochs[(st->epoch_next + PG_EPOCHS - k) % PG_EPOCHS];
		if (e->reported && e->value == value && (!xmin || !e->xmin || e->xmin == xmin))
			return e;
	}
	return NULL;
}

/* 1 when transaction id a is older than b (32-bit ids, compared as the server compares them). */
static int xid_older(uint64_t a, uint64_t b)
{
	return (int32_t)((uint32_t)a - (uint32_t)b) < 0;
}

/* 1 when some pair stands for the epoch r (another version of the same value). */
static int reported(const pg_store *st, uint64_t r)
{
	for (size_t k = 0; k < PG_EPOCHS; k++)
		if (st->epochs[k].reported == r)
			return 1;
	return 0;
}

/*
 * Records a version of the row not seen before (the caller holds epoch_mu); its reported epoch.
 * A value above every one reported under the offset is a gc's. One at or below it is an older
 * version this store had not read yet (a read that began before a gc's bump, done after a read
 * of the bump: each version a gc writes has a newer xmin than the one before, and nothing else
 * stands for its epoch), or was written by something other than a gc, always with the newest
 * xmin: then (and when forced) the offset moves past every epoch reported.
 */
static uint64_t add(pg_store *st, uint64_t value, uint64_t xmin, int force)
{
	uint64_t r = value + st->epoch_off;
	int stale = xmin && st->epoch_xmax && xid_older(xmin, st->epoch_xmax) && !reported(st, r);
	if (force || (r <= st->epoch_top && !stale)) {
		if (r <= st->epoch_top) { /* value <= epoch_top: no wrap */
			st->epoch_off = st->epoch_top + 1 - value;
			r = st->epoch_top + 1;
		}
		prolly__pg_cnt_add(&st->cnt.epoch_rewrites, 1);
	}
	if (r > st->epoch_top) {
		st->epoch_top = r;
		st->epoch_xmax = xmin;
	}
	st->epochs[st->epoch_next] = (epoch_pair){value, xmin, r};
	st->epoch_next = (st->epoch_next + 1) % PG_EPOCHS;
	return r;
}

uint64_t prolly__pg_epoch_seen(pg_store *st, uint64_t value, uint64_t xmin)
{
	uint64_t r;
	if (!value)
		return 0;
	pthread_mutex_lock(&st->epoch_mu);
	epoch_pair *e = find(st, value, xmin);
	if (e && !e->xmin)
		e->xmin = xmin;
	r = e ? e->reported : add(st, value, xmin, 0);
	pthread_mutex_unlock(&st->epoch_mu);
	return r;
}

uint64_t prolly__pg_epoch_moved(pg_store *st, uint64_t value)
{
	uint64_t r;
	if (!value)
		return 0;
	pthread_mutex_lock(&st->epoch_mu);
	epoch_pair *e = find(st, value, 0);
	if (e)
		r = e->reported;
	else if (value + st->epoch_off > st->epoch_top)
		r = add(st, value, 0, 0);
	else /* a gc's version this store skipped: judged whole when read with its xmin */
		r = value + st->epoch_off;
	pthread_mutex_unlock(&st->epoch_mu);
	return r;
}

uint64_t prolly__pg_epoch_rewritten(pg_store *st, uint64_t value)
{
	uint64_t r;
	if (!value)
		return 0;
	pthread_mutex_lock(&st->epoch_mu);
	r = add(st, value, 0, 1);
	pthread_mutex_unlock(&st->epoch_mu);
	return r;
}

uint64_t prolly__pg_epoch_of(pg_store *st, uint64_t reported, uint64_t *xmin)
{
	uint64_t value = 0;
	*xmin = 0;
	pthread_mutex_lock(&st->epoch_mu);
	for (size_t k = 0; k < PG_EPOCHS && !value; k++)
		if (reported && st->epochs[k].reported == reported) {
			value = st->epochs[k].value;
			*xmin = st->epochs[k].xmin;
		}
	/* Forgotten, or never reported: the value under the current offset, which an epoch
	 * reported before the offset last moved never reaches (below the row's value since). */
	if (!value && reported > st->epoch_off)
		value = reported - st->epoch_off;
	pthread_mutex_unlock(&st->epoch_mu);
	return value;
}
