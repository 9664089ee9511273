/*
 * sync_int.h - what the files of prolly_sync share: sync.c (the trees, the writes, the refs,
 * the whole), sync_history.c (the walk of the commits the destination lacks, in windows: SY2,
 * SY5, SY8) and sync_io.c below both (asking the destination, reading the source, the trees
 * known, the memory held). Not installed; included by those files (and the test of the bound,
 * SY8).
 */
#ifndef PROLLY_SYNC_INT_H
#define PROLLY_SYNC_INT_H

#include "internal.h"

/* What the last prolly_sync of the calling thread held, at most (SY8): for the test that checks
 * the bound, read after the call. */
typedef struct prolly__sync_held {
	size_t ids_peak;    /* ids in the walk's tables at once: the window, its frontier, the
	                        read-ahead, the trees known, a merge's comparison set */
	size_t window_peak; /* commits in one window */
	size_t windows;     /* windows of the history (1: it fit in one, no replay) */
	size_t checkpoints; /* ids held by the checkpoints, all windows together, at most */
	size_t rounds;      /* walks from the start (SY9: more than 1 when checkpoints were dropped) */
} prolly__sync_held;
extern _Thread_local prolly__sync_held prolly__sync_last_held;

/* SY9: the most ids the checkpoints keep (SYNC_CP_LIMIT; a test may lower it, before a sync). */
#define SYNC_CP_LIMIT 32768
extern size_t prolly__sync_cp_limit;

typedef struct sync_ctx {
	prolly_db *dst, *src;
	size_t batch;       /* ids per question and per read; commits per window (SY8) */
	size_t wbatch;      /* objects per write (SY6) */
	uint64_t epoch;     /* SY4 */
	uint64_t src_epoch; /* SY11: the source's, when the sync began */
	int dst_gc;         /* SY17: SY4 failed this attempt */
	prolly_sync_stats st;
	/* SY6: the write being gathered, in the order objects must reach the destination */
	prolly_store_node *pend; /* data NULL: read from the source when the write goes */
	unsigned char *pend_commit;
	size_t n_pend;
	prolly__idmap pending; /* ids in pend */
	prolly_buf req;        /* what pend builds on (less what it carries, at the write) */
	/* SY7: commits whose trees the destination is known to hold (id -> index + 1 in ktree):
	 * the known heads, then per window (SY8) what the window copies or finds present */
	int local;         /* some are known: trees are compared locally, history asked by time */
	int64_t base_time; /* the oldest known commit's time (µs) */
	prolly__idmap known;
	prolly_id *ktree;
	size_t n_known, cap_known;
	prolly_id *head, *head_tree; /* the known heads (find_known) */
	size_t n_heads;
	int ask_writes;         /* SY14: whether a write asks the destination about its objects first */
	prolly__sync_held held; /* SY8 */
	size_t merge_ids;       /* ids of a merge's comparison set held now */
	const struct history *hist; /* the walk's tables, for held */
	/* SY10: the refs' new commits (id -> index + 1 in refs) */
	prolly__idmap heads_of_refs;
	const prolly_ref_update *refs;
	const prolly_ref_update *guard; /* SY13: checked in the refs' write, or NULL */
} sync_ctx;

/* Objects read from the source: copies of their bytes, slot i for request i (NULL: absent). */
typedef struct fetched {
	prolly_store_node *nodes; /* data NULL when absent */
	size_t n;
	uint64_t bytes;
} fetched;

/* A commit of the window, which the destination lacks: its id, tree and parents (as indexes
 * into parents). */
typedef struct mcommit {
	prolly_id id, tree;
	size_t first_parent, n_parents;
	int state; /* post-order walk: 0 new, 1 on the stack, 2 placed */
} mcommit;

/* A commit of the frontier: read, missing from the destination, not taken yet (SY8). */
typedef struct front_obj {
	prolly_id id;
	int64_t time;
	void *data;
	size_t size;
} front_obj;

/* Values of history.index besides a window commit's index + 1. */
#define SYNC_PRESENT ((uintptr_t)-1) /* in the destination */
#define SYNC_PRUNED ((uintptr_t)-2)  /* in neither: retention removed it from the source */
#define SYNC_QUEUED ((uintptr_t)-3)  /* to ask about and read */
#define SYNC_FRONT ((uintptr_t)-4)   /* in the frontier */

typedef struct history {
	mcommit *c; /* the window */
	size_t n, cap;
	prolly_id *parents;
	size_t n_parents, cap_parents;
	prolly__idmap index; /* commit id -> index + 1 in the window, or SYNC_* */
	prolly_id *queue;    /* commits to ask about */
	size_t q_head, q_len, q_cap;
	size_t n_start;   /* the first n_start queued must exist in one of the stores */
	front_obj *front; /* a heap, newest first */
	size_t n_front, cap_front;
	prolly__idmap stop;  /* replaying a window: where the older windows start (copied) */
	prolly__idmap ahead; /* SY5: commit id -> its ahead_obj, read ahead, known missing */
	size_t n_ahead;      /* entries whose bytes are still held */
	prolly_id *cp;       /* checkpoints: window k starts at cp[cp_at[k] .. cp_at[k + 1]) */
	size_t n_cp, cap_cp;
	size_t *cp_at;
	size_t n_windows, cap_windows;
	int dropped; /* SY9: the walk let go of the checkpoints of its newest windows */
} history;

/* A commit read ahead of the walk that the destination was found to lack (SY5). */
typedef struct ahead_obj {
	void *data; /* NULL once the walk took it */
	size_t size;
} ahead_obj;

/* sync.c: the name of a ref the sync is to point at id (SY10's map), or NULL: for messages. */
const char *prolly__sync_ref_of(const sync_ctx *s, const prolly_id *id);

/* sync_io.c: rc of a read from db (the sync's source or destination): a PROLLY_ECORRUPT whose
 * message does not begin "sync: " (the sync's own, which name their side) is said again as
 * "sync: in the source (KIND store): MESSAGE" (or the destination), so that damage names the
 * store that holds it. Other codes pass as they are. */
int prolly__sync_side(const sync_ctx *s, const prolly_db *db, int rc);
/* sync_io.c: out[i] = whether the destination holds ids[i] (prolly__has_nodes). */
int prolly__sync_has(sync_ctx *s, const prolly_id *ids, size_t n, unsigned char *out);
/* sync_io.c: reads ids from the source in one call, hash-checked, into f (slot i for ids[i]). */
int prolly__sync_fetch(sync_ctx *s, fetched *f, const prolly_id *ids, size_t n);
/* sync_io.c: keeps a copy of an object read for slot index of f (a prolly_store_found_fn). */
int prolly__sync_on_fetched(void *payload, size_t index, const void *data, size_t size);
void prolly__sync_fetched_dispose(fetched *f);

/* sync_io.c: adds commit id, whose tree the destination holds, to the known ones (SY7). */
int prolly__sync_know(sync_ctx *s, const prolly_id *id, const prolly_id *tree);
/* sync_io.c: notes the ids the sync holds now in its high-water mark (SY8). */
void prolly__sync_note_held(sync_ctx *s);

/* sync_history.c: starts the walk at ids[0..n) (each must exist in one of the stores): the
 * first window's start (SY8). */
int prolly__sync_start(sync_ctx *s, history *h, const prolly_id *ids, size_t n);
/* sync_history.c: walks from the queue, newest first, taking the commits the destination lacks
 * into the window until the history below is exhausted (*full 0) or the window holds limit
 * commits (*full 1: the frontier is the next window's start, recorded by
 * prolly__sync_next_window). */
int prolly__sync_walk(sync_ctx *s, history *h, size_t limit, int *full);
/* sync_history.c: records the frontier as the next window's start and empties the window
 * (the frontier and the read-ahead stay) for the walk to go on. */
int prolly__sync_next_window(sync_ctx *s, history *h);
/* sync_history.c: empties everything but the checkpoints and walks window k again, from its
 * start to the next window's (copied by then), to its end (SY8). */
int prolly__sync_replay(sync_ctx *s, history *h, size_t k);
/* sync_history.c: the window's commits, parents first, into order[0..h->n). */
int prolly__sync_order(history *h, size_t *order);
/* sync_history.c: whether a window commit's parent pid stays with it (not pruned). */
int prolly__sync_parent_kept(const history *h, const prolly_id *pid);
void prolly__sync_history_init(history *h);
void prolly__sync_history_dispose(history *h);

#endif /* PROLLY_SYNC_INT_H */
