/*
 * sync_int.h - what the two files of prolly_sync share: sync.c (the trees, the writes, the refs,
 * the whole) and sync_history.c (the walk of the commits the destination lacks, SY2 and SY5).
 * Not installed; included by those two files only.
 */
#ifndef PROLLY_SYNC_INT_H
#define PROLLY_SYNC_INT_H

#include "internal.h"

typedef struct sync_ctx {
	prolly_db *dst, *src;
	size_t batch;   /* ids per question and per read */
	size_t wbatch;  /* objects per write (SY6) */
	uint64_t epoch; /* SY4 */
	prolly_sync_stats st;
	/* SY6: the write being gathered, in the order objects must reach the destination */
	prolly_store_node *pend; /* data NULL: read from the source when the write goes */
	unsigned char *pend_commit;
	size_t n_pend;
	prolly__idmap pending; /* ids in pend */
	prolly_buf req;        /* what pend builds on (less what it carries, at the write) */
	/* SY7: commits whose trees the destination is known to hold (id -> index + 1 in ktree) */
	int local;         /* some are known: trees are compared locally, history asked by time */
	int64_t base_time; /* the oldest known commit's time (µs) */
	prolly__idmap known;
	prolly_id *ktree;
	size_t n_known, cap_known;
} sync_ctx;

/* Objects read from the source: copies of their bytes, slot i for request i (NULL: absent). */
typedef struct fetched {
	prolly_store_node *nodes; /* data NULL when absent */
	size_t n;
	uint64_t bytes;
} fetched;

/* A commit the destination lacks: its id, tree and parents (as indexes into parents). */
typedef struct mcommit {
	prolly_id id, tree;
	size_t first_parent, n_parents;
	int state; /* post-order walk: 0 new, 1 on the stack, 2 placed */
} mcommit;

#define SYNC_PRESENT ((uintptr_t)-1) /* in the destination (or not asked yet) */
#define SYNC_PRUNED ((uintptr_t)-2)  /* in neither: retention removed it from the source */

typedef struct history {
	mcommit *c;
	size_t n, cap;
	prolly_id *parents;
	size_t n_parents, cap_parents;
	prolly__idmap index; /* commit id -> index + 1 of a missing one, SYNC_PRESENT, or SYNC_PRUNED */
	prolly_id *queue;    /* commits to ask about */
	size_t q_head, q_len, q_cap;
	prolly__idmap ahead; /* SY5: commit id -> its ahead_obj, read ahead, known missing */
	size_t n_ahead;      /* entries whose bytes are still held */
} history;

/* A commit read ahead of the walk that the destination was found to lack (SY5). */
typedef struct ahead_obj {
	void *data; /* NULL once the walk took it */
	size_t size;
} ahead_obj;

/* sync.c: out[i] = whether the destination holds ids[i] (has_nodes, else get_nodes). */
int prolly__sync_has(sync_ctx *s, const prolly_id *ids, size_t n, unsigned char *out);
/* sync.c: reads ids from the source in one call, hash-checked, into f (slot i for ids[i]). */
int prolly__sync_fetch(sync_ctx *s, fetched *f, const prolly_id *ids, size_t n);
/* sync.c: keeps a copy of an object read for slot index of f (a prolly_store_found_fn). */
int prolly__sync_on_fetched(void *payload, size_t index, const void *data, size_t size);
void prolly__sync_fetched_dispose(fetched *f);

/* sync.c: adds commit id, whose tree the destination holds, to the known ones (SY7). */
int prolly__sync_know(sync_ctx *s, const prolly_id *id, const prolly_id *tree);
/* sync_history.c: queues a commit id to ask about (once). */
int prolly__sync_queue(history *h, const prolly_id *id);
/* sync_history.c: finds the commits the destination lacks (SY2, SY5); the first n_start queued
 * must exist in one of the stores. */
int prolly__sync_find_missing(sync_ctx *s, history *h, size_t n_start);
/* sync_history.c: the missing commits' indexes, parents first, into order[0..h->n). */
int prolly__sync_order(history *h, size_t *order);
void prolly__sync_history_init(history *h);
void prolly__sync_history_dispose(history *h);

#endif /* PROLLY_SYNC_INT_H */
