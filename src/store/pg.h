/*
 * pg.h - the PostgreSQL store's extras for tests and benchmarks; its public part (options, open,
 * init, and its counters as prolly_pg_stats) is in prolly.h. These are not part of the contract: libprolly.so does not export them
 * (the library is built with hidden visibility); programs that need them link libprolly.a.
 *
 * See docs/postgres.md for the schema, the privileges a runtime role needs, the write pipeline,
 * the gc protocol and the pool. The store itself is pg.c and the pg_*.c files beside it (their
 * shared declarations: pg_int.h).
 */
#ifndef PROLLY_STORE_PG_H
#define PROLLY_STORE_PG_H

#include "prolly/store.h"

#include <stdint.h>

/* The store's own cumulative counters (all connections, all threads). */
typedef struct prolly_pg_counters {
	uint64_t round_trips;       /* pipeline syncs waited for */
	uint64_t statements;        /* statements sent */
	uint64_t insert_statements; /* node INSERT statements (a one-statement write counts 1 if it
	                               has nodes) */
	uint64_t rows_inserted;     /* node rows actually inserted (not already present) */
	uint64_t rows_read;         /* node rows returned by get_nodes and get_ref_objects */
	uint64_t bytes_read;        /* their bytes */
	uint64_t bytes_sent;        /* node bytes sent by writes */
	uint64_t pool_waits;        /* acquisitions that had to wait */
	uint64_t pool_wait_ns;      /* time spent waiting */
	uint64_t pool_timeouts;     /* waits that gave up */
	uint64_t connects;          /* connections opened (first ones and reconnects) */
	uint64_t broken;            /* connections found broken and dropped */
	uint64_t gc_batches;        /* sweep transactions committed */
	uint64_t gc_remarks;        /* times a sweep found refs moved and called mark() again */
	uint64_t read_retries;      /* reads run again after a hot standby cancelled them */
	uint64_t epoch_rewrites;    /* epoch row versions not written by a gc (a restore in place):
	                               the epochs reported moved past every earlier one */
	uint64_t prepares;          /* statements prepared: each the first time a connection sent it */
} prolly_pg_counters;

/* PROLLY_EINVAL if st is not a PostgreSQL store. */
int prolly_store_pg_counters(prolly_store *st, prolly_pg_counters *out);

#ifdef PROLLY_TEST_HOOKS
/* Test hook, only in the test build (compiled with -DPROLLY_TEST_HOOKS into the tests' archive;
 * libprolly.a and libprolly.so do not have it): the next write that sends at least `chunk` INSERT chunks makes its chunk number
 * `chunk` (1-based) fail on the server (a malformed array); with chunk 1 that includes a
 * one-statement write (prolly_write), whose nodes are one chunk. 0 disarms. */
void prolly_store_pg_fail_chunk(prolly_store *st, unsigned chunk);
/* Test hook, the same build only: the text (schema substituted) of the statement the store runs
 * for a read, `what` one of "get_nodes", "has_nodes", "get_refs", "get_ancestors"; NULL for
 * another name or store. Owned by the store, valid until it closes. */
const char *prolly_store_pg_statement(prolly_store *st, const char *what);
#endif

#endif /* PROLLY_STORE_PG_H */
