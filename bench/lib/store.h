/*
 * store.h - the benchmarks' one pass-through store (bench_store_*).
 *
 * Wraps any prolly_store and forwards every call. Options (flags of bench_store_wrap):
 *
 *   BENCH_STORE_TIMED   adds the time spent inside get_nodes, get_ref_objects(_known),
 *                       get_ancestors (read_ns) and write (write_ns) to the wrapper's counters,
 *                       and counts the writes passed on durable; with nosync set, hands writes
 *                       to the inner store with durable = 0 (the caller's request is restored
 *                       afterwards), to measure a commit "before the disk sync". The scale engine uses this.
 *   BENCH_STORE_BORROW  closing the wrapper leaves the inner store open: many handles share
 *                       one store that outlives them. The service suite uses this.
 *
 * The counters and nosync are atomics: threads may share one wrapper. The wrapper is what the
 * engine sees (bench_store_base); prolly_db_new takes it over like any store.
 */
#ifndef BENCH_STORE_H
#define BENCH_STORE_H

#include "prolly.h"
#include "prolly/store.h"

#include <stdatomic.h>
#include <stdint.h>

enum { BENCH_STORE_TIMED = 1u << 0, BENCH_STORE_BORROW = 1u << 1 };

typedef struct bench_store {
	prolly_store base; /* first member: the engine sees a prolly_store */
	prolly_store *inner;
	unsigned flags;
	_Atomic uint64_t read_ns;
	_Atomic uint64_t write_ns;
	_Atomic uint64_t durable_writes; /* writes passed on with durable = 1 */
	atomic_int nosync;               /* BENCH_STORE_TIMED: pass writes on non-durable */
} bench_store;

/* Wraps inner. Without BENCH_STORE_BORROW the wrapper owns inner from now on, also on failure
 * (PROLLY_ENOMEM). */
int bench_store_wrap(bench_store **out, prolly_store *inner, unsigned flags);

/* A store of the benchmarks' own making: the LMDB store in directory dir (created if missing),
 * or a new memory store (dir NULL), made with nodes of node_size (0: the default; an existing
 * LMDB store of another size is PROLLY_EINVAL). */
int bench_store_open_local(prolly_store **out, const char *dir, unsigned node_size);
/* The prolly_store to hand to the engine. */
prolly_store *bench_store_base(bench_store *s);
/* Zeroes read_ns, write_ns and durable_writes (NULL ok). */
void bench_store_reset(bench_store *s);

#endif /* BENCH_STORE_H */
