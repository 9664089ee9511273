/*
 * test_pg_epoch.c - the gc epoch as the PostgreSQL store reports it (src/store/pg_epoch.c), on
 * versions of meta's epoch row given by hand: no server needed. The store's epoch across a
 * restore in place, against a real server: tests/test_pg_life.c.
 */
#include "ptest.h"
#include "store/pg_int.h"

#include <stdlib.h>

/* The epochs reported for versions of the row read in any order (pg_epoch.c), without a server:
 * a gc's versions keep their epochs, an older version read late is not taken for a restore, and
 * a version written by something else (same value, or lower, with a newer xmin) gets an epoch
 * above every earlier one, which a write goes back from to that version. */
/* A write's function that read the row after its statement's snapshot saw another version
 * reports the value without its xmin. Reported by one connection after another reported a later
 * gc (13 before 12), it is a gc's version this store skipped, not a restore (test_pg_reads'
 * gc_while_engine_writes failed now and then on this); it is not recorded, so its next read with
 * its xmin is judged whole: an older xmin is the gc's, a newer one a restore's. */
PT_TEST(epoch_moved_during_a_write)
{
	pg_store *st = calloc(1, sizeof(*st));
	PT_REQUIRE(st);
	pthread_mutex_init(&st->epoch_mu, NULL);
	PT_CHECK(prolly__pg_epoch_seen(st, 11, 200) == 11);
	PT_CHECK(prolly__pg_epoch_seen(st, 13, 220) == 13);
	PT_CHECK(prolly__pg_epoch_moved(st, 12) == 12);
	PT_CHECK(prolly__pg_epoch_moved(st, 13) == 13);
	PT_CHECK(st->cnt.epoch_rewrites == 0);
	PT_CHECK(prolly__pg_epoch_seen(st, 12, 210) == 12); /* the gc's, read late */
	PT_CHECK(st->cnt.epoch_rewrites == 0);
	PT_CHECK(prolly__pg_epoch_moved(st, 14) == 14); /* above: recorded, as a read without xmin */
	PT_CHECK(prolly__pg_epoch_seen(st, 14, 230) == 14);
	PT_CHECK(st->cnt.epoch_rewrites == 0);
	PT_CHECK(prolly__pg_epoch_moved(st, 9) == 9);      /* skipped long ago */
	PT_CHECK(prolly__pg_epoch_seen(st, 9, 240) == 15); /* but this version is a restore's */
	PT_CHECK(st->cnt.epoch_rewrites == 1);
	pthread_mutex_destroy(&st->epoch_mu);
	free(st);
}

PT_TEST(epochs_reported_across_versions)
{
	pg_store *st = calloc(1, sizeof(*st));
	PT_REQUIRE(st);
	pthread_mutex_init(&st->epoch_mu, NULL);
	uint64_t x;
	PT_CHECK(prolly__pg_epoch_seen(st, 5, 100) == 5);
	PT_CHECK(prolly__pg_epoch_seen(st, 5, 0) == 5); /* a write's, without its xmin */
	PT_CHECK(prolly__pg_epoch_seen(st, 7, 120) == 7);
	PT_CHECK(prolly__pg_epoch_seen(st, 6, 110) == 6); /* read before the bump to 7, done after */
	PT_CHECK(prolly__pg_epoch_seen(st, 5, 100) == 5);
	PT_CHECK(st->cnt.epoch_rewrites == 0);
	PT_CHECK(prolly__pg_epoch_seen(st, 7, 130) == 8); /* restored at the same value */
	PT_CHECK(prolly__pg_epoch_seen(st, 3, 140) == 9); /* restored at a lower one */
	PT_CHECK(prolly__pg_epoch_seen(st, 3, 0) == 9);
	PT_CHECK(prolly__pg_epoch_seen(st, 4, 150) == 10); /* a gc after the restore */
	PT_CHECK(st->cnt.epoch_rewrites == 2);
	PT_CHECK(prolly__pg_epoch_of(st, 9, &x) == 3 && x == 140);
	PT_CHECK(prolly__pg_epoch_of(st, 7, &x) == 7 && x == 120);
	PT_CHECK(prolly__pg_epoch_rewritten(st, 4) == 11); /* a write found 4 written again */
	PT_CHECK(prolly__pg_epoch_seen(st, 4, 160) == 11); /* and the next read learns its xmin */
	PT_CHECK(prolly__pg_epoch_of(st, 11, &x) == 4 && x == 160);
	PT_CHECK(st->cnt.epoch_rewrites == 3);
	/* Never reported: the value under the current offset (epochs of an older one stay below) */
	PT_CHECK(prolly__pg_epoch_of(st, 12, &x) == 5 && x == 0);
	PT_CHECK(prolly__pg_epoch_of(st, 2, &x) == 0);
	pthread_mutex_destroy(&st->epoch_mu);
	free(st);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
