/*
 * prolly/store.h - the interface a store implements, for whoever writes one.
 *
 * Users of the built-in stores (memory, LMDB, PostgreSQL) need only prolly.h. This header adds
 * what an implementer needs: the table of functions a store fills in (struct prolly_store), the
 * shapes of what the engine hands it, the rules it may rely on and those it must keep, and the
 * helpers it may call. The built-in stores are written against this header alone (and a small
 * header of their own inside the library), so it is complete: anything they need is here.
 *
 * WRITING A STORE
 *   Make a struct whose first member is a prolly_store, initialise that member with
 *   PROLLY_STORE_INIT (or prolly_store_init(&s->base, PROLLY_STORE_VERSION)), fill in kind and
 *   the functions, and hand &s->base to prolly_db_new(), which owns the store from then on and
 *   calls close() once when the handle closes. prolly_db_new copies the table: changing a
 *   member after that has no effect. Every function returns 0 or a negative PROLLY_E* code and,
 *   on failure, sets the calling thread's message with prolly_set_error() (prolly.h) in the
 *   store's own words (which never include a password). Optional members may be NULL.
 *
 * VERSIONS
 *   version says which members the struct has and how they are called. This library speaks
 *   versions 1 to PROLLY_STORE_VERSION; prolly_db_new refuses any other with PROLLY_EVERSION. A
 *   store built against an older header keeps working: the engine reads only the members its
 *   version has, and does without the rest (version 3's get_ancestors, which took no commit
 *   layout, is not called: history walks then read one generation of commits per call).
 *
 * WHAT THE ENGINE GUARANTEES (a store may rely on these)
 *   S1 A write's ref updates are valid and in order: every name is 1..PROLLY_MAX_REF_NAME bytes,
 *      NUL-terminated; the updates are sorted by name in byte order (strcmp), no name twice;
 *      every expect is one of PROLLY_REF_EXPECT_*; conflict, current_exists are 0 on entry.
 *   S2 A write's node array is non-NULL when n_nodes > 0, each node has data when size > 0,
 *      and every node hashes to its id (the engine made or checked it). A node may appear twice
 *      in one write.
 *   S3 A ref name passed to get_ref or get_ref_objects may come from the engine's caller
 *      unchecked: a store checks it with prolly_store_ref_name_check() (PROLLY_EINVAL).
 *      list_refs' prefix may be any string, "" included. The names passed to get_refs are
 *      checked (1..PROLLY_MAX_REF_NAME bytes, NUL-terminated, names non-NULL when n > 0).
 *   S4 The engine verifies the hash of everything a store returns; a store need not.
 *
 * WHAT A STORE MUST KEEP (the engine relies on these)
 *   K1 Atomic writes: everything in a prolly_store_write becomes visible at once, or nothing
 *      does; a failed write leaves the store as it was.
 *   K2 Refs move only by compare-and-swap: every expectation of a write is checked against one
 *      snapshot before any update applies; one failing expectation fails the whole write with
 *      PROLLY_ECONFLICT and fills the failing updates' conflict/current_* members.
 *   K3 Nodes are immutable: a node is stored once under its id; a write of an id already stored
 *      leaves the stored bytes as they are.
 *   K4 The gc epoch (a positive integer) only grows, and grows at the start of every gc; a write
 *      with check_epoch fails with PROLLY_ECONFLICT, writing nothing, unless the epoch equals
 *      its epoch. A node that survives a gc stays until the next one.
 *   K5 Reads see every write that returned before they began (read-your-writes across threads
 *      and, for a shared store, across processes).
 *   K6 A store holds a tree node only together with its whole subtree, and a commit only
 *      together with its tree and its parents (as far as retention kept them): the engine writes
 *      children before parents, or both in one write (K1), and a store's gc never removes a
 *      node while keeping a node that references it (gc keeps what is reachable, so a kept
 *      node's children are kept too). This is what lets a sync (prolly_sync) skip every subtree
 *      the destination already has after asking about its root alone.
 *
 * CALLBACKS
 *   A store calls a callback on the thread that called the store function (which may be one of
 *   the library's own threads), within that call and never after it. Data a callback receives
 *   (node bytes, ids, ref names) is owned by the store and valid only during that call: the
 *   engine copies what it keeps. A callback's non-zero return stops the function, which returns
 *   that value as it is (the callback has set its message). These rules are narrower than the
 *   user's callbacks' (CALLBACKS in prolly.h): a callback of get_nodes, get_ref_objects,
 *   get_ancestors or find_ids may call the store's read functions (get_nodes, get_ref,
 *   list_refs, ...) on any thread, but never write() or gc() of the same store, so a store may
 *   hold its read locks while it calls back. list_refs is the exception: the engine hands it
 *   callbacks of its caller's (prolly_branch_list), which may move refs, so a store calls its
 *   callback with none of its locks held (it copies the matching refs first), and the callback
 *   may call any function of the same store. gc's mark() and keep() have rules of their own,
 *   stated with prolly_gc_mark_fn.
 *
 * THREADS
 *   Every function but close() may be called by several threads at once, including threads the
 *   library starts itself (commit flushes, cursor read-ahead: see THREADS in prolly.h), and, for
 *   a store that several processes open, by other processes. close() is called once, after
 *   every other call has returned.
 */
#ifndef PROLLY_STORE_H
#define PROLLY_STORE_H

#include "prolly.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The interface version this header describes. Version 4 passes get_ancestors the commit
 * layout (prolly_store_commit_layout); version 5 adds has_nodes; version 6 adds
 * get_ref_objects_known; version 7 adds get_refs; version 8 adds node_size. */
#define PROLLY_STORE_VERSION 8

/* A node handed to a store for writing. */
typedef struct prolly_store_node {
	prolly_id id;
	const void *data;
	size_t size;
} prolly_store_node;

/* One atomic write: all of it becomes visible at once, or none of it (K1). */
typedef struct prolly_store_write {
	const prolly_store_node *nodes; /* written if absent; identical rows are never rewritten */
	size_t n_nodes;
	prolly_ref_update *refs; /* sorted by name, unique, valid (S1); applied after checking every
	                            expectation (K2) */
	size_t n_refs;
	int check_epoch;           /* non-zero: fail with PROLLY_ECONFLICT unless the store's */
	uint64_t epoch;            /*   gc epoch still equals `epoch` */
	uint64_t current_epoch;    /* out: the store's epoch (always set on success and conflict) */
	int durable;               /* non-zero: durable when write returns (fsync); node-only
	                                   flushes of a bulk build pass 0 */
	const prolly_id *requires; /* ids this write builds on without writing them (children of
	                                   its new nodes, trees of its new commits): a store whose gc
	                                   can run concurrently with writers must fail the write with
	                                   PROLLY_ECONFLICT if one is gone, and keep them from being
	                                   removed until the write commits. Stores whose gc excludes
	                                   writers and bumps the epoch may ignore this list, unless
	                                   a non-durable write that returned can be lost otherwise
	                                   (a database server's crash). */
	size_t n_requires;
} prolly_store_write;

/* Where a commit object keeps its parents, as get_ancestors follows them: an object is a commit
 * when it is at least parents_at bytes long and begins with the magic_size bytes of magic; its
 * parent count is the little-endian u32 at count_at, its parent ids are PROLLY_ID_SIZE bytes each,
 * back to back from parents_at (a count larger than the object holds is cut to what it holds).
 * The engine owns the commit format (docs/commits.md) and passes this; a store never assumes it. */
typedef struct prolly_store_commit_layout {
	const unsigned char *magic;
	size_t magic_size;
	size_t count_at;
	size_t parents_at;
} prolly_store_commit_layout;

/* Called by get_nodes (and get_ref_objects) for each id found, on the thread that called
 * get_nodes (which may be one of the library's own threads). data is valid only during the call
 * (CALLBACKS). index is the position in the request. Return 0 to go on, non-zero to stop
 * (get_nodes then returns it). The store may hold a lock of its own meanwhile: found() never
 * calls write() or gc() of the same store. */
typedef int (*prolly_store_found_fn)(void *payload, size_t index, const void *data, size_t size);
/* Called by get_ancestors and find_ids for each object, with the id the store has it under. id
 * and data are valid only during the call. Same thread, return and lock rules as
 * prolly_store_found_fn. */
typedef int (*prolly_store_obj_fn)(void *payload, const prolly_id *id, const void *data,
                                   size_t size);
/* Called by list_refs for each ref, in name order. name and value are valid only during the
 * call. Same return rule. A store calls it with none of its locks held (it copies the refs
 * first): it may call any function of the same store, write() included (CALLBACKS). */
typedef int (*prolly_store_ref_fn)(void *payload, const char *name, const prolly_id *value);
/* gc: mark() is called while the store excludes every writer; keep() then says, per stored node
 * id (valid during the call only), whether it survives (non-zero: keep). Both run on the thread
 * that called gc(), within it; mark() may read the store (get_nodes, get_ref, list_refs),
 * neither may write it. Non-zero from mark() stops the gc, which returns it having removed
 * nothing. */
typedef int (*prolly_gc_mark_fn)(void *payload);
typedef int (*prolly_gc_keep_fn)(void *payload, const prolly_id *id);

struct prolly_store {
	unsigned version; /* PROLLY_STORE_VERSION (VERSIONS above) */
	const char *kind; /* "mem", "lmdb", "postgres", ...: named in the engine's messages */

	/* Looks up n ids (duplicates allowed) in one round trip where the store can. Calls found()
	 * for each id present, in any order; absent ids are simply not reported. Does not verify
	 * hashes (S4). */
	int (*get_nodes)(prolly_store *st, const prolly_id *ids, size_t n, prolly_store_found_fn found,
	                 void *payload);

	/* One atomic transaction, see prolly_store_write (S1, S2, K1-K4). Sets w->current_epoch. On
	 * PROLLY_ECONFLICT nothing was written and the failing ref updates carry conflict and
	 * current_*; a conflict of the epoch alone marks no update. */
	int (*write)(prolly_store *st, prolly_store_write *w);

	/* Reads one ref. PROLLY_ENOTFOUND if absent. epoch (may be NULL) receives the gc epoch of
	 * the same snapshot. out may be NULL. */
	int (*get_ref)(prolly_store *st, const char *name, prolly_id *out, uint64_t *epoch);

	/* Lists refs whose name starts with prefix ("" or NULL for all), in byte order of name. */
	int (*list_refs)(prolly_store *st, const char *prefix, prolly_store_ref_fn fn, void *payload);

	/* Mark and sweep: excludes writers, bumps the gc epoch (so a write begun before the gc and
	 * checking the epoch fails with PROLLY_ECONFLICT), calls mark(payload), deletes every node for
	 * which keep() returns 0. No read may return an epoch that the store still has after a node
	 * that read could see was deleted: bump it in the transaction that deletes, or again after
	 * deleting (the engine takes a node it read while the epoch was e as present for a write
	 * whose check of e passes). A store may call mark() more than once (for instance to retry
	 * after growing its map); each call starts over from the current refs. mark() may read the
	 * store from the calling thread; keep() may read the store but must not write. Sets the
	 * counts nodes_kept, nodes_removed and bytes_removed of *out (may be NULL; version and
	 * reflog_expired untouched: the engine passes its own initialised prolly_gc_result).
	 * Optional (NULL: prolly_gc is PROLLY_EUNSUPPORTED). */
	int (*gc)(prolly_store *st, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep, void *payload,
	          prolly_gc_result *out);

	/* Counts stored nodes and their bytes (either pointer may be NULL). Optional. */
	int (*stat)(prolly_store *st, uint64_t *nodes, uint64_t *bytes);

	/* Releases everything. Called once, by prolly_close (or prolly_store_close). */
	void (*close)(prolly_store *st);

	/* ---- version 2: read only when version >= 2 ---- */

	/* Optional (NULL: the engine reads the ref, then the objects, in separate calls). Reads ref
	 * `name` like get_ref and, from the same snapshot in the same round trip, the stored object
	 * the ref names (reported to found() with index 0) and the object whose id is the
	 * PROLLY_ID_SIZE bytes at offset `follow` of that first object (index 1). The engine passes
	 * the offset of a commit's tree id, so a branch head, its commit and its tree's root node
	 * arrive in one round trip. Absent objects, or a first object too short to hold the followed
	 * id, are simply not reported; found() is called in index order, and the same rules as for
	 * get_nodes apply. PROLLY_ENOTFOUND (found() not called) if the ref is absent. */
	int (*get_ref_objects)(prolly_store *st, const char *name, size_t follow, prolly_id *out,
	                       uint64_t *epoch, prolly_store_found_fn found, void *payload);

	/* ---- version 3: read only when version >= 3 ---- */

	/* PROLLY_STORE_* flags (0 for none). A bit this library does not define is refused by
	 * prolly_db_new (PROLLY_EINVAL naming the bits). */
	unsigned flags;

	/* Optional (NULL: history walks read one generation of commits per call). Version 4 and
	 * later only: the engine does not call a version-3 store's get_ancestors. Reads, in one
	 * round trip, the stored objects ids[0..n) and the commits they descend from: breadth first
	 * along the parent ids that `commit` describes, at most `limit` objects in all (limit >= n).
	 * found() gets every object once, in no particular order, with its id; objects that are not
	 * commits by `commit` are reported and not followed; absent ids are simply not reported.
	 * Hashes are not verified (S4). commit is valid during the call. */
	int (*get_ancestors)(prolly_store *st, const prolly_id *ids, size_t n, size_t limit,
	                     const prolly_store_commit_layout *commit, prolly_store_obj_fn found,
	                     void *payload);

	/* Optional (NULL: short commit ids are found by walking the history reachable from the
	 * refs). Reports, in increasing id order (byte order), the stored objects whose id lies in
	 * [lo, hi], at most `limit` of them, in one round trip where the store can (an index range
	 * scan). found() gets each id and at least the first PROLLY_STORE_ID_HEAD bytes of the object
	 * (all of it when shorter; a store may pass the whole object): enough to tell a commit from
	 * a tree node. Hashes are not verified. */
	int (*find_ids)(prolly_store *st, const prolly_id *lo, const prolly_id *hi, size_t limit,
	                prolly_store_obj_fn found, void *payload);

	/* ---- version 5: read only when version >= 5 ---- */

	/* Optional (NULL: the engine asks get_nodes and ignores the bytes). Says which of ids[0..n)
	 * the store holds, in one round trip where the store can, without reading the objects: sets
	 * out[i] to 1 when ids[i] is stored, 0 when not (duplicates allowed). What a sync asks the
	 * destination, a batch per tree level; with K6 a 1 stands for the object's whole subtree. */
	int (*has_nodes)(prolly_store *st, const prolly_id *ids, size_t n, unsigned char *out);

	/* ---- version 6: read only when version >= 6 ---- */

	/* Optional (NULL: the engine calls get_ref_objects, if any). get_ref_objects for a caller
	 * that may hold the objects already: when known is not NULL and the ref's value equals
	 * *known, found() is not called and the store need read nothing but the ref and the epoch
	 * (a branch head read again while no one moved it costs one small read); otherwise exactly
	 * get_ref_objects. A store that fills this member may leave get_ref_objects NULL: the
	 * engine calls this one alone. known is valid during the call. */
	int (*get_ref_objects_known)(prolly_store *st, const char *name, size_t follow,
	                             const prolly_id *known, prolly_id *out, uint64_t *epoch,
	                             prolly_store_found_fn found, void *payload);

	/* ---- version 7: read only when version >= 7 ---- */

	/* Optional (NULL: the engine calls get_ref once per name). Reads the refs names[0..n)
	 * (valid, S3; duplicates allowed; n > 0) in one round trip where the store can: found[i] is set
	 * to 1 and out[i] to the value of names[i] when that ref exists, found[i] to 0 (out[i]
	 * untouched) when it does not. A missing ref is not an error. epoch (may be NULL) receives the
	 * gc epoch read with them (the newest, if the store read them in several snapshots). What a
	 * sync asks the destination about the refs it will compare and swap. names and its strings are
	 * valid during the call. */
	int (*get_refs)(prolly_store *st, const char *const *names, size_t n, prolly_id *out,
	                unsigned char *found, uint64_t *epoch);

	/* ---- version 8: read only when version >= 8 ---- */

	/* The node size of the trees this store holds (prolly.h, "Node size"): 0 for
	 * PROLLY_NODE_SIZE_DEFAULT, else a power of two from PROLLY_NODE_SIZE_MIN to
	 * PROLLY_NODE_SIZE_MAX (prolly_node_size_valid). Chosen when the store is made and kept with
	 * it, so that every handle on it builds the same trees (an edit made with another size than
	 * the tree's reads and writes correctly but makes a tree that the same records built at
	 * once would not: root ids would stop being a function of the records). A store sets it
	 * before handing itself to prolly_db_new, which refuses another value with PROLLY_EINVAL;
	 * older versions are taken as 0. */
	unsigned node_size;
};

/* Bytes of each object find_ids reports at least. */
#define PROLLY_STORE_ID_HEAD 8

/* Store flag: every get_nodes call costs a network round trip (a server store). The engine then
 * spends some CPU to make fewer calls: a batch edit that changes leaf sizes first works out
 * which neighbouring leaves its re-chunking will read and loads them together. Without it, the
 * engine reads those few leaves when it reaches them, which is cheaper for a local store. */
#define PROLLY_STORE_REMOTE 1u

/* Store flag: the store reads nodes from a memory mapping of its file (the LMDB store), so a
 * node read again costs a lookup and a hash check but no I/O, and a node kept in the engine's
 * decoded cache is a second copy of bytes already in memory. A handle opened with
 * cache_bytes = PROLLY_CACHE_AUTO then gets the smaller default budget (prolly.h). */
#define PROLLY_STORE_MAPPED 2u

/* A prolly_store of the current version with every other member zero (NULL). */
/* clang-format off */
#define PROLLY_STORE_INIT {PROLLY_STORE_VERSION, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0u, NULL, NULL, NULL, NULL, NULL, 0u}
/* clang-format on */

/* ------------------------------------------------------------------------------------------ */
/* Helpers for stores                                                                         */
/* ------------------------------------------------------------------------------------------ */

/* Zero-fills *st (sizeof(prolly_store) as this header declares it) and sets st->version to
 * version. Errors: PROLLY_EINVAL (st NULL, or a version outside 1..PROLLY_STORE_VERSION; *st is
 * then untouched). Allocates nothing; thread-safe. */
PROLLY_API int prolly_store_init(prolly_store *st, unsigned version);

/* Checks a ref name as every store must before reading by it (S3): 0 when name is 1 to
 * PROLLY_MAX_REF_NAME bytes before its NUL, else PROLLY_EINVAL with a message naming the length.
 * name NULL is PROLLY_EINVAL. Reads only name; thread-safe. */
PROLLY_API int prolly_store_ref_name_check(const char *name);

/* Checks that data[0..size) hashes (SHA-256) to *id: 0, or PROLLY_ECORRUPT with a message naming
 * the id. For a store that verifies what it reads or receives (the engine does it anyway, S4).
 * Reads only its arguments; thread-safe. */
PROLLY_API int prolly_store_check_node(const prolly_id *id, const void *data, size_t size);

/* Adds delta to the calling thread's counters (prolly_thread_stats) and nothing else: how a
 * store reports its round trips (one per statement pipeline or transaction that went to a
 * server; one per call for an in-process store). Initialise delta with PROLLY_STATS_INIT, then
 * set the counts. delta is read during the call only. PROLLY_EINVAL (delta NULL, an unknown
 * delta->version; nothing added). Thread-safe (the counters are per thread). */
PROLLY_API int prolly_stats_add(const prolly_stats *delta);

/* Per-thread counters a store defines for itself: PROLLY_STORE_COUNTERS slots beside the
 * engine's prolly_stats, kept per thread like them (zeroed by prolly_thread_stats_reset, and
 * work the library's own threads do for a thread is counted for that thread). What slot i
 * counts is the store's to say; every store a thread uses adds into the same slots, so a store
 * that uses them documents which (the PostgreSQL store: 0 statements, 1 pool waits, 2 pool wait
 * nanoseconds) and reads them back through a function of its own (prolly_store_pg_thread_stats).
 * prolly_store_counters_add adds delta[i] to slot i for i < n (slots from PROLLY_STORE_COUNTERS
 * on are ignored); prolly_store_thread_counters copies slot i into out[i] for i < n (0 from
 * PROLLY_STORE_COUNTERS on). No error; the calling thread only; allocates nothing. */
#define PROLLY_STORE_COUNTERS 8
PROLLY_API void prolly_store_counters_add(const uint64_t *delta, size_t n);
PROLLY_API void prolly_store_thread_counters(uint64_t *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* PROLLY_STORE_H */
