/*
 * internal.h - what the engine's files share. Not installed; not part of the contract.
 *
 * Naming: prolly__ for functions shared across files, no prefix for static ones.
 */
#ifndef PROLLY_INTERNAL_H
#define PROLLY_INTERNAL_H

#include "format.h"
#include "prolly.h"
#include "prolly/store.h"
#include "store/store_int.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------------------------------ */
/* Small utilities (util.c)                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* PROLLY_MIN, PROLLY_MAX, the little-endian integers, prolly__keycmp, the growth rule and the
 * buffers, the clocks: in store/store_int.h, which the stores share with the engine. */

/* The value of one hex digit (0-9, a-f, A-F), or -1. The library's only hex decoder; ids are
 * encoded by prolly_id_to_hex. */
int prolly__hexval(int c);
/* How many of s[0..len) are hex digits before the first that is not (lower_only: a-f only). */
size_t prolly__hex_span(const char *s, size_t len, int lower_only);
/* Writes the n hex digits of hex (checked by prolly__hex_span) into out as nibbles, high nibble
 * first; with n odd the low nibble of the last byte keeps its value. */
void prolly__hex_nibbles(unsigned char *out, const char *hex, size_t n);

/* SHA-256 of data (OpenSSL libcrypto). */
void prolly__hash(prolly_id *out, const void *data, size_t size);
/* hash_many.c: the SHA-256 of data[i][0..size[i]) into out[i], for i < n: prolly__hash's
 * digests, sixteen buffers at a time where the CPU has AVX-512. No error; any thread. */
void prolly__hash_many(prolly_id *out, const unsigned char *const *data, const size_t *size,
                       size_t n);
/* Tests: on 0, prolly__hash_many takes the one-at-a-time path; on 1 (the default), the AVX-512
 * one where the CPU has it. Returns whether the AVX-512 path is now taken. */
int prolly__hash_many_simd(int on);
/* 0 if data hashes to id, else PROLLY_ECORRUPT naming the object (db.c). */
int prolly__check_hash(const prolly_id *id, const void *data, size_t size);

/* Tables keyed by id (idmap.c, its invariants at the top); use it for any new table of ids.
 * Each id added is an entry, numbered 0, 1, 2... in the order added, with its id in ids[] and
 * a value in vals[] (0 until put). Walk the entries 0..len, or the slots 0..cap (a slot with
 * at 0 is empty; else its entry is at - 1). */
typedef struct prolly__idmap_slot {
	uint32_t tag; /* 4 bytes of the id: most probes that miss never read an id */
	uint32_t at;  /* entry + 1; 0: empty */
} prolly__idmap_slot;
typedef struct prolly__idmap {
	prolly__idmap_slot *slots;
	size_t cap; /* slots: power of two, or 0 */
	size_t len; /* entries */
	prolly_id *ids;
	uintptr_t *vals;
	size_t idcap, valcap;
} prolly__idmap;
#define PROLLY__IDMAP_NONE SIZE_MAX
void prolly__idmap_init(prolly__idmap *m);
void prolly__idmap_dispose(prolly__idmap *m); /* frees the table; the values are the caller's */
/* id's entry, or PROLLY__IDMAP_NONE when id is not in m. */
size_t prolly__idmap_find(const prolly__idmap *m, const prolly_id *id);
/* *entry: id's entry, added (value 0) if id is new. 1 if added, 0 if it was there, or
 * PROLLY_ENOMEM (m unchanged). */
int prolly__idmap_add(prolly__idmap *m, const prolly_id *id, size_t *entry);
/* id's value, or 0 when id is not in m. */
uintptr_t prolly__idmap_get(const prolly__idmap *m, const prolly_id *id);
/* Sets id's value, adding id if it is new. 0 or PROLLY_ENOMEM (m unchanged). */
int prolly__idmap_put(prolly__idmap *m, const prolly_id *id, uintptr_t val);

/* Adds delta to the calling thread's counters and (when db is not NULL) to db's. The version
 * field of an internal prolly_stats is not read. */
struct prolly_db;
void prolly__stats_add(struct prolly_db *db, const prolly_stats *delta);
/* The calling thread's counters, for direct increments. */
prolly_stats *prolly__thread_stats(void);
/* Everything a thread counts: the engine's counters and the stores' slots
 * (prolly_store_counters_add). The library's own threads hand theirs to the thread they worked
 * for: read with prolly__thread_counters at the end of the work, added with
 * prolly__thread_counters_add on the waiting thread. */
typedef struct prolly__counters {
	prolly_stats s;
	uint64_t store[PROLLY_STORE_COUNTERS];
} prolly__counters;
void prolly__thread_counters(prolly__counters *out);
void prolly__thread_counters_add(const prolly__counters *delta);

/* The versioned structs (abi.c): the one version check of each, and the copy-out of output
 * structs that writes only the fields of the caller's version. NULL passes the checks where the
 * public function accepts NULL. prolly__options_check is declared in store_int.h, for
 * prolly_open (store/open.c). */
int prolly__options_load(prolly_options *dst, const prolly_options *src); /* src may be NULL */
int prolly__stats_check(const prolly_stats *s);
int prolly__stats_put(prolly_stats *out, const prolly_stats *full); /* checks out first */
int prolly__range_check(const prolly_range *r);
int prolly__tree_stats_check(const prolly_tree_stats *s); /* NULL is PROLLY_EINVAL */
void prolly__tree_stats_put(prolly_tree_stats *out, const prolly_tree_stats *full);
int prolly__merge_check(const prolly_merge_options *opts, const prolly_merge_stats *stats);
void prolly__merge_stats_put(prolly_merge_stats *out, const prolly_merge_stats *full);
int prolly__gc_result_check(const prolly_gc_result *r);
void prolly__gc_result_put(prolly_gc_result *out, const prolly_gc_result *full);
int prolly__sync_check(const prolly_sync_options *opts, const prolly_sync_stats *stats);
void prolly__sync_stats_put(prolly_sync_stats *out, const prolly_sync_stats *full);
/* Adds the counts of one (an attempt of a sync) to total. */
void prolly__sync_stats_add(prolly_sync_stats *total, const prolly_sync_stats *one);
/* The source's gc epoch as its handle last saw it (at the latest, its open's): the "since" of
 * prolly__sync_src_gc, with no round trip (0: a store without epochs). */
uint64_t prolly__sync_src_epoch(prolly_db *src);
/* rc of a sync from src that failed on something the source lacks (PROLLY_ENOTFOUND,
 * PROLLY_ECORRUPT), turned into PROLLY_ECONFLICT ("a gc ran on the source meanwhile; run it
 * again") when src's gc epoch, read again (one ref read, on failure only), has risen past since,
 * the epoch taken before the sync read the source's refs or objects (sync.c, SY11). Other codes,
 * and since 0, are returned as they are. */
int prolly__sync_src_gc(prolly_db *src, uint64_t since, int rc);
/* 0 when dst and src build trees of one node size, else PROLLY_EINVAL naming both (sync.c,
 * SY15): what prolly_sync, prolly_fetch and prolly_push check before they read anything. */
int prolly__sync_same_size(const prolly_db *dst, const prolly_db *src);
/* prolly_sync, with guard (NULL: none) added to the refs' write as one more compare-and-swap
 * that must hold for any ref to move (sync.c, SY13). */
int prolly__sync_guarded(prolly_sync_stats *out, prolly_db *dst, prolly_db *src,
                         const prolly_id *commits, size_t n_commits, prolly_ref_update *refs,
                         size_t n_refs, const prolly_sync_options *opts,
                         const prolly_ref_update *guard);

/* ------------------------------------------------------------------------------------------ */
/* Nodes (node.c): the byte format is documented at the top of node.c and in docs/format.md   */
/* ------------------------------------------------------------------------------------------ */

/* The magic numbers, the format version and the node sizes are in format.h. */

/*
 * A decoded, verified, immutable node, shared by reference count. `bytes` is the node's exact
 * encoding (hash(bytes) == id); the table pointers point into it. Lookups binary-search the
 * encoded bytes directly.
 */
typedef struct pnode {
	prolly__shared mem; /* first: the reference count and size class of this block (alloc.c) */
	prolly_id id;
	unsigned level;             /* 0: leaf */
	uint32_t n;                 /* items */
	uint64_t count;             /* records in this subtree */
	size_t size;                /* bytes */
	const unsigned char *bytes; /* the encoding (allocated with the struct) */
	const unsigned char *koff;  /* u32[n+1] key offsets into kheap */
	const unsigned char *voff;  /* leaf: u32[n+1] value offsets into vheap */
	const unsigned char *kids;  /* internal: n entries of (id 32, count u64) */
	const unsigned char *kheap;
	const unsigned char *vheap; /* leaf only */
} pnode;

/* Memory for decoded nodes (alloc.c): prolly__node_mem_alloc and prolly__node_mem_free, in
 * store/store_int.h. */

/* Decodes and validates bytes as a tree node. Checks (each a numbered invariant in node.c):
 * magic, version (PROLLY_EVERSION if newer), level, all offsets in bounds and monotonic, keys
 * strictly increasing, exact total size, internal counts summing without overflow. When `verify`
 * is set, also that hash(bytes) == *id. The node is returned with one reference.
 * PROLLY_ECORRUPT naming the id on any failure. */
int prolly__node_decode(pnode **out, const prolly_id *id, const void *bytes, size_t size,
                        int verify);

/* The node whose block s heads: the memory store hands back the blocks of nodes the engine
 * wrote, and those are always pnodes (txn.c passes &nd->mem, its first member). */
static inline pnode *prolly__node_of(prolly__shared *s)
{
	_Static_assert(offsetof(pnode, mem) == 0, "a node's block begins with its header");
	return (pnode *)(void *)s;
}

void prolly__node_ref(pnode *n);
void prolly__node_unref(pnode *n); /* NULL ok; frees at zero */

static inline prolly_slice prolly__node_key(const pnode *nd, uint32_t i)
{
	uint32_t a = prolly__rd32(nd->koff + 4 * i), b = prolly__rd32(nd->koff + 4 * (i + 1));
	prolly_slice s = {nd->kheap + a, b - a};
	return s;
}
static inline prolly_slice prolly__node_value(const pnode *nd, uint32_t i)
{
	uint32_t a = prolly__rd32(nd->voff + 4 * i), b = prolly__rd32(nd->voff + 4 * (i + 1));
	prolly_slice s = {nd->vheap + a, b - a};
	return s;
}
static inline const prolly_id *prolly__node_child(const pnode *nd, uint32_t i)
{
	return (const prolly_id *)(const void *)(nd->kids + (size_t)PROLLY_CHILD_ENTRY * i +
	                                         PROLLY__CHILD_OFF_ID);
}
static inline uint64_t prolly__node_child_count(const pnode *nd, uint32_t i)
{
	return prolly__rd64(nd->kids + (size_t)PROLLY_CHILD_ENTRY * i + PROLLY__CHILD_OFF_COUNT);
}
/* The node's last key (every node but the empty leaf has one). */
static inline prolly_slice prolly__node_last_key(const pnode *nd)
{
	return prolly__node_key(nd, nd->n - 1);
}

/* Index of the first item whose key is >= key (n if none). Binary search over the encoding. */
uint32_t prolly__node_lower_bound(const pnode *nd, const void *key, size_t klen);
/* The same, when every item before `from` (<= n) is known to be < key, as for keys searched in
 * ascending order in one node (the answer for the previous key is `from`): gallops from `from`,
 * so a key next to the previous one costs one or two comparisons. */
uint32_t prolly__node_lower_bound_from(const pnode *nd, const void *key, size_t klen,
                                       uint32_t from);

/* edit.c: the most distinct keys an edit applies in one batch (E9 there). Tests lower it, before
 * any thread reads it. */
extern size_t prolly__edit_batch;
/* read.c: get_many's window (GM1 there): the most ids it loads per store call, and holds per
 * level at once. Tests lower it, before any thread reads it. */
extern size_t prolly__get_many_window;

/* keysort.c: fills order[0..n) with 0..n-1 in the order of (key, index), the keys being the
 * slices at first, first + stride bytes, ... (stride: the size of the struct each is in). A
 * batch already in that order costs n - 1 comparisons. 0, or PROLLY_ENOMEM. */
int prolly__key_order(size_t *order, const prolly_slice *first, size_t stride, size_t n);
/* keysort.c: sorts ids[0..n) in byte order, as qsort with memcmp would. 0, or PROLLY_ENOMEM
 * (ids unchanged). */
int prolly__ids_sort(prolly_id *ids, size_t n);

/* Encoder: accumulates items, then writes one node. Used by the chunker. */
typedef struct prolly__enc {
	unsigned level;
	uint32_t n;
	prolly_buf keys;  /* concatenated key bytes */
	prolly_buf vals;  /* leaf: concatenated values; internal: n child entries of 40 bytes */
	prolly_buf koffs; /* u32 end offset per item */
	prolly_buf voffs; /* leaf: u32 end offset per item */
	uint64_t count;   /* records below */
} prolly__enc;

void prolly__enc_init(prolly__enc *e, unsigned level);
void prolly__enc_dispose(prolly__enc *e);
void prolly__enc_reset(prolly__enc *e);
int prolly__enc_add_leaf(prolly__enc *e, const void *k, size_t klen, const void *v, size_t vlen);
int prolly__enc_add_child(prolly__enc *e, const void *k, size_t klen, const prolly_id *child,
                          uint64_t count);
/* Appends items [from, to) of node x (of the encoder's level) in one go. */
int prolly__enc_add_items(prolly__enc *e, const pnode *x, uint32_t from, uint32_t to);
/* The encoded size of the node of the accumulated items. */
size_t prolly__enc_size(const prolly__enc *e);
/* Encodes the accumulated items into out (replacing its contents). */
int prolly__enc_finish(prolly__enc *e, prolly_buf *out);
/* The node of the accumulated items, encoded into node memory, hashed, with one reference; not
 * validated again (node.c): only for items the engine itself put in key order. */
int prolly__enc_node(pnode **out, const prolly__enc *e);

/* Encoded size an item adds to a node: leaf 8 + klen + vlen, internal 4 + 40 + klen. */
static inline size_t prolly__leaf_item_size(size_t klen, size_t vlen)
{
	return 8 + klen + vlen;
}
static inline size_t prolly__child_item_size(size_t klen)
{
	return 4 + PROLLY_CHILD_ENTRY + klen;
}
/* The encoded item size of items [0, p) of node x: the sum of the sizes above. */
static inline size_t prolly__prefix_size(const pnode *x, uint32_t p)
{
	size_t keys = prolly__rd32(x->koff + 4 * (size_t)p);
	if (x->level == 0)
		return 8 * (size_t)p + keys + prolly__rd32(x->voff + 4 * (size_t)p);
	return (4 + (size_t)PROLLY_CHILD_ENTRY) * p + keys;
}

/* ------------------------------------------------------------------------------------------ */
/* Chunk boundaries (chunk.c)                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* The rule's node size: chunks aim at 2^shift bytes of items (C3), never end below an eighth of
 * it (C1) and always end above four times it (C2). The default is PROLLY_CHUNK_SHIFT (4 KiB
 * nodes); the rule is defined for PROLLY_CHUNK_SHIFT_LO to PROLLY_CHUNK_SHIFT_HI (1 to 8 KiB,
 * PROLLY_NODE_SIZE_MIN..MAX of prolly.h), a size a store chooses once, when it is made
 * (prolly_store.node_size: the same records make another tree under another size). */
#define PROLLY_CHUNK_SHIFT 12
#define PROLLY_CHUNK_SHIFT_LO 10
#define PROLLY_CHUNK_SHIFT_HI 13
#define PROLLY_CHUNK_MIN (1u << (PROLLY_CHUNK_SHIFT - 3))  /* 512, C1 at the default */
#define PROLLY_CHUNK_TARGET (1u << PROLLY_CHUNK_SHIFT)     /* 4096 */
#define PROLLY_CHUNK_MAX (4u << PROLLY_CHUNK_SHIFT)        /* 16384, C2 at the default */
#define PROLLY_CHUNK_MAX_ANY (4u << PROLLY_CHUNK_SHIFT_HI) /* C2 at the largest size */

typedef struct prolly__chunk_rule {
	uint32_t min; /* C1: 2^(shift - 3) */
	uint32_t max; /* C2: 2^(shift + 2) */
	double scale; /* C3: 2^(-4 shift), so that x = (s^4 - (s-r)^4) * scale exactly */
	unsigned shift;
} prolly__chunk_rule;

/* The rule for nodes of 2^shift bytes; shift within PROLLY_CHUNK_SHIFT_LO..HI. */
void prolly__chunk_rule_init(prolly__chunk_rule *rule, unsigned shift);

/* The shift of a node size prolly_node_size_valid accepts (0: PROLLY_CHUNK_SHIFT). */
unsigned prolly__node_shift(unsigned node_size);

/* After appending an item of encoded size r with key `key` to a chunk at `level`, making the
 * chunk's running size s (r included): 1 if the chunk ends here under rule. Depends on nothing
 * else. */
int prolly__boundary(const prolly__chunk_rule *rule, unsigned level, const void *key, size_t klen,
                     size_t s, size_t r);

/*
 * A chunker builds the nodes of one level: items go in, and whenever prolly__boundary says so the
 * pending items become a node, added to the txn. It is the only place nodes are made (chunker.c).
 */
typedef struct prolly__chunker {
	prolly_txn *txn;
	prolly__chunk_rule rule; /* txn's handle's, copied: read at every item */
	prolly__enc enc;
	size_t s;                    /* running encoded size of the pending chunk */
	uint64_t emitted;            /* nodes made so far */
	size_t bytes;                /* their bytes */
	struct prolly__maker *maker; /* NULL: nodes are made here; else handed to it (maker.c) */
	int queued;                  /* the last call handed a node to the maker instead of making it */
} prolly__chunker;

void prolly__chunker_init(prolly__chunker *ch, prolly_txn *txn, unsigned level);
void prolly__chunker_dispose(prolly__chunker *ch);
/* Add an item; *made receives the node made by this item's boundary (borrowed from the txn,
 * valid until the txn flushes) or NULL. */
int prolly__chunker_leaf(prolly__chunker *ch, const void *k, size_t klen, const void *v,
                         size_t vlen, pnode **made);
int prolly__chunker_child(prolly__chunker *ch, const void *k, size_t klen, const prolly_id *id,
                          uint64_t count, pnode **made);
/* Adds items [from, to) of old node x, from < to < x->n, without asking the boundary rule; only
 * when the pending items' size ch->s is x's own size before item `from` (prolly__prefix_size:
 * always so at x's first item with nothing pending). x was made by a chunker that started at
 * its first item (chunk.c, C5) and ended no chunk before its last; the rule depends on nothing
 * but an item's key and size and the running size, all the same now, so none of those items
 * ends a chunk now either (H4). */
int prolly__chunker_items(prolly__chunker *ch, const pnode *x, uint32_t from, uint32_t to);
/* Makes a node of whatever is pending (end of the level); *made NULL if nothing was pending. */
int prolly__chunker_finish(prolly__chunker *ch, pnode **made);
static inline int prolly__chunker_empty(const prolly__chunker *ch)
{
	return ch->enc.n == 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Making nodes on a second thread (maker.c)                                                  */
/* ------------------------------------------------------------------------------------------ */

typedef struct prolly__maker prolly__maker;

/* Starts a maker and its worker thread; *out is NULL (and 0 returned) if no thread could be
 * started. Only for handles without PROLLY_DB_NO_THREADS. */
int prolly__maker_start(prolly__maker **out);
/* Hands the encoder's pending items to the maker, which makes their node; *e is left empty
 * (same level) with another encoder's buffers. The node's ticket is the number of submits since
 * the last collect. While every slot is in flight the caller makes a waiting node itself.
 * PROLLY_ENOMEM (nothing handed over). */
int prolly__maker_submit(prolly__maker *m, prolly__enc *e);
/* Waits for every node submitted; *nodes[t] is ticket t's node, one reference each for the
 * caller (NULL where making it failed), *n the number of tickets. The array belongs to the maker
 * and is valid until the next submit. Returns the first failure since the last collect (its
 * message set on this thread); the nodes made are handed over even then. */
int prolly__maker_collect(prolly__maker *m, pnode ***nodes, size_t *n);
/* Stops the worker and releases what it made and nobody collected. NULL is fine. */
void prolly__maker_free(prolly__maker *m);

/* ------------------------------------------------------------------------------------------ */
/* Node cache (cache.c)                                                                       */
/* ------------------------------------------------------------------------------------------ */

typedef struct prolly__cache prolly__cache;

int prolly__cache_new(prolly__cache **out, size_t budget_bytes);
void prolly__cache_free(prolly__cache *c);
/* A new reference to the cached node, or NULL. Counts a hit or miss in *st. */
pnode *prolly__cache_get(prolly__cache *c, const prolly_id *id);
/* Whether id is cached now (a hint: it may be evicted the next moment). Touches neither the
 * node nor the LRU, and counts no hit or miss. */
int prolly__cache_has(prolly__cache *c, const prolly_id *id);
/* The same for a pinned entry only (a node an open txn holds, or a flush in flight: made here
 * and maybe not stored yet); NULL for an entry that is merely cached. Does not touch the LRU. */
pnode *prolly__cache_get_pinned(prolly__cache *c, const prolly_id *id);
/* Inserts n (the cache takes its own reference; an existing entry wins). Evicts to budget;
 * evictions are added to *evicted. */
void prolly__cache_put(prolly__cache *c, pnode *n, uint64_t *evicted);
/* Pinned nodes are never evicted or cleared. Pins nest. pin inserts the node if absent. */
void prolly__cache_pin(prolly__cache *c, pnode *n);
/* Returns the number of nodes evicted to make room. */
uint64_t prolly__cache_unpin(prolly__cache *c, const prolly_id *id);
void prolly__cache_clear(prolly__cache *c);
/* Drops every unpinned entry for which keep() returns 0 (after a gc removed those nodes). */
void prolly__cache_retain(prolly__cache *c, int (*keep)(void *payload, const prolly_id *id),
                          void *payload);

/* ------------------------------------------------------------------------------------------ */
/* The handle and node loading (db.c)                                                         */
/* ------------------------------------------------------------------------------------------ */

/* The branch heads a handle read last (head_memo.c): a ref, the commit it named and the commit's
 * bytes, hash-checked. */
#define PROLLY__HEAD_MEMO 8
typedef struct prolly__head_slot {
	char name[PROLLY_MAX_REF_NAME + 1];
	prolly_id commit;
	unsigned char *bytes; /* NULL: an empty slot */
	size_t size;
	uint64_t used;  /* the memo's clock when last read or written */
	uint64_t epoch; /* the gc epoch of the read or write that last saw ref name commit */
	int guess;      /* H5: prolly_commit_edits may build on commit without reading the ref */
	unsigned moves; /* H6: how often reads found the ref moved, in 1/256 (a moving average) */
} prolly__head_slot;
/* Commits a handle read as branch heads, each with the gc epoch of that read (H4 in
 * head_memo.c). */
#define PROLLY__SEEN 8
typedef struct prolly__seen {
	prolly_id commit;
	uint64_t epoch; /* 0: an empty entry */
} prolly__seen;
typedef struct prolly__head_memo {
	pthread_mutex_t lock;
	uint64_t clock;
	prolly__head_slot slot[PROLLY__HEAD_MEMO];
	prolly__seen seen[PROLLY__SEEN];
	size_t seen_next; /* the entry the next prolly__seen_put replaces */
} prolly__head_memo;
void prolly__head_memo_init(prolly__head_memo *m);
void prolly__head_memo_dispose(prolly__head_memo *m);
/* A decoded copy of the commit remembered for ref (the caller frees it), or NULL; *ref_first
 * (may be NULL) is set to 1 when the next head read should read the ref alone first (H6). */
prolly_commit *prolly__head_memo_get(prolly__head_memo *m, const char *ref, int *ref_first);
/* A decoded copy of commit if a slot holds it (whatever ref it was read for), or NULL: for a
 * reader that needs the commit's contents only (H3: never stale), not its presence in the store
 * now. */
prolly_commit *prolly__head_memo_find(prolly__head_memo *m, const prolly_id *commit);
/* Remembers that ref names commit, seen at gc epoch epoch by a read of this handle (guess 0: the
 * read found the ref moved, or had no slot) or by its own write, which passed its epoch check
 * (guess: whether prolly_commit_edits may build its next commit of ref on it without reading
 * the ref, H5). The commit's bytes (hash-checked, or made by this handle) are copied. Best
 * effort: a commit that is too large, or no memory, leaves the memo as it was. */
void prolly__head_memo_put(prolly__head_memo *m, const char *ref, const prolly_id *commit,
                           const void *bytes, size_t size, uint64_t epoch, int guess);
/* A read found ref still naming the commit its slot holds, at gc epoch epoch: the slot's epoch
 * becomes epoch (H5), and its H6 average counts a read that found the ref still. */
void prolly__head_memo_unmoved(prolly__head_memo *m, const char *ref, const prolly_id *commit,
                               uint64_t epoch);
/* The commit ref's slot holds (*commit) if there is a slot: 1, else 0. */
int prolly__head_memo_peek(prolly__head_memo *m, const char *ref, prolly_id *commit);
/* H5: a decoded copy of the commit prolly_commit_edits may build on without reading ref, and
 * the epoch it was seen at, or NULL when the slot is absent, not flagged, or has no epoch. */
prolly_commit *prolly__head_memo_guess(prolly__head_memo *m, const char *ref, uint64_t *epoch);
/* A read that was told the commit ref's slot held found ref naming another (H6). */
void prolly__head_memo_moved(prolly__head_memo *m, const char *ref);
/* A guess for ref (NULL: every ref) lost its compare-and-swap, or the handle was made cold: no
 * more guesses until a quiet commit (H5); a lost guess (ref not NULL) counts as a move (H6). */
void prolly__head_memo_distrust(prolly__head_memo *m, const char *ref);
/* Remembers that a ref named commit in a read whose snapshot had gc epoch epoch (a head read,
 * or a write that moved the ref there: gc keeps a ref's commit and its whole tree). epoch 0 (a
 * store without epochs) is not remembered. */
void prolly__seen_put(prolly__head_memo *m, const prolly_id *commit, uint64_t epoch);
/* 1 if commit was remembered with exactly epoch (H4: a write whose epoch check passes against
 * epoch finds it and its tree still stored), else 0. */
int prolly__seen_at(prolly__head_memo *m, const prolly_id *commit, uint64_t epoch);

struct prolly_db {
	prolly_store *store; /* the store, passed to its functions */
	prolly_store vt; /* its functions, adopted by prolly__store_adopt: call db->vt.X(db->store) */
	prolly__cache *cache;
	prolly_options opts;
	prolly__chunk_rule rule; /* where this handle's edits end their nodes (chunk.c) */
	prolly_id empty_tree;    /* id of the empty leaf, never fetched from the store */
	pnode *empty_node;
	_Atomic uint64_t epoch; /* last gc epoch seen from the store */
	pthread_mutex_t stats_lock;
	prolly_stats stats;      /* cumulative, under stats_lock */
	prolly__head_memo heads; /* branch heads read last (head_memo.c) */
};

/* The caller's interrupt (prolly_options version 2), asked: 0 to go on, else its value, which
 * the call returns. prolly__load_ex asks it before each batch of loads. */
static inline int prolly__interrupted(prolly_db *db)
{
	return db->opts.interrupt ? db->opts.interrupt(db->opts.interrupt_payload) : 0;
}

/* The interrupt where a call handles many records or keys between two batches of loads (a
 * diff's leaf merge, get_many's levels, a merge's decisions): asked once every
 * PROLLY__TICK_EVERY steps counted in *ticks (zeroed by the caller before its loop). About a
 * millisecond of work between two asks, so a statement_timeout stops a call of any size
 * promptly. */
#define PROLLY__TICK_EVERY 4096u
static inline int prolly__tick(prolly_db *db, unsigned *ticks)
{
	if (++*ticks < PROLLY__TICK_EVERY)
		return 0;
	*ticks = 0;
	return prolly__interrupted(db);
}

/*
 * An operation's working set: nodes an operation has loaded and holds references to, so that it
 * does not depend on the cache keeping them (cache_bytes may be 0). An id table whose values
 * are the nodes (one reference each); walk it with prolly__nodeset_at(s, 0..cap).
 */
typedef prolly__idmap prolly__nodeset;
/* The node in slot i (< s->cap), or NULL for an empty slot. */
static inline pnode *prolly__nodeset_at(const prolly__nodeset *s, size_t i)
{
	return s->slots[i].at ? (pnode *)s->vals[s->slots[i].at - 1] : NULL;
}

void prolly__nodeset_init(prolly__nodeset *s);
void prolly__nodeset_dispose(prolly__nodeset *s); /* drops every reference */
/* Borrowed pointer (valid while the set holds it) or NULL. */
pnode *prolly__nodeset_find(const prolly__nodeset *s, const prolly_id *id);
/* Adds a reference to n (no-op if present). */
int prolly__nodeset_add(prolly__nodeset *s, pnode *n);

/*
 * Loads n nodes with at most one store call for all of those not in ws or the cache
 * (duplicates asked once). Every node read from the store is hash-verified and decoded, put in
 * the cache and in ws; but for a node this process made and handed to the memory store, which
 * comes back as that node, unchecked (no copy, no decoding), unless PROLLY__LOAD_FRESH. If out is
 * not NULL, out[i] is a pointer borrowed from ws. A missing id is PROLLY_ECORRUPT ("node <hex>
 * missing") since a tree referenced it; a root that is missing is reported the same way by the
 * caller's context. ws must not be NULL.
 */
int prolly__load(prolly_db *db, prolly__nodeset *ws, const prolly_id *ids, size_t n, pnode **out);

/* prolly__load with flags: PROLLY__LOAD_FRESH ignores the cache and reads every id not in ws
 * from the store (re-verifying its hash), for `verify`; PROLLY__LOAD_ROOTS reports a missing id
 * as PROLLY_ENOTFOUND ("tree ... not found": the caller named it, no tree referenced it);
 * PROLLY__LOAD_IN_GC: the caller is a gc's mark, which the store runs holding its writers'
 * exclusion, so a missing id must not ask the store for its epoch (a write, which would wait
 * for that exclusion: the memory store deadlocked) and nothing can have removed it meanwhile. */
#define PROLLY__LOAD_FRESH 1
#define PROLLY__LOAD_ROOTS 2
#define PROLLY__LOAD_IN_GC 4
int prolly__load_ex(prolly_db *db, prolly__nodeset *ws, const prolly_id *ids, size_t n, pnode **out,
                    int flags);

/* One node, borrowed from ws (loaded if needed). */
int prolly__load1(prolly_db *db, prolly__nodeset *ws, const prolly_id *id, pnode **out);

/* The store interface's engine side (store_api.c). Copies store's table into *vt, a table of this
 * library's version whose members the store's version lacks (or calls differently) are NULL:
 * the one place that looks at a store's version. PROLLY_EVERSION for an unknown version,
 * PROLLY_EINVAL when a required function is missing. */
int prolly__store_adopt(prolly_store *vt, const prolly_store *store);
/* Every write the engine makes goes through here: checks the ref updates (names, expectations,
 * none twice: PROLLY_EINVAL) and hands the store a copy sorted by name (S1 in store.h); the
 * outcome (conflict, current_*, current_epoch) comes back in the caller's order. */
int prolly__store_write(prolly_db *db, prolly_store_write *w);
/* The same with owners[i] &nd->mem of the node nd whose bytes w->nodes[i].data are (or NULL),
 * handed over (prolly__handover_write): the memory store keeps a reference to the node instead
 * of a copy; any other store just reads the bytes. */
int prolly__store_write_nodes(prolly_db *db, prolly_store_write *w, prolly__shared *const *owners);
/* One ref update's name (prolly_store_ref_name_check) and expectation (one of
 * PROLLY_REF_EXPECT_*): 0 or PROLLY_EINVAL, as prolly__store_write checks every update. */
int prolly__ref_update_check(const prolly_ref_update *u);
/* The commit format's parents, as get_ancestors follows them. */
extern const prolly_store_commit_layout prolly__commit_layout;

/* Whether the db's store declares PROLLY_STORE_REMOTE. */
int prolly__store_remote(const prolly_db *db);

/* The node if it is in ws or in the cache (then added to ws), borrowed from ws; NULL if it is in
 * neither or ws cannot grow. Never reads the store. */
pnode *prolly__peek(prolly_db *db, prolly__nodeset *ws, const prolly_id *id);

/* Fetches raw objects (commits) without decoding them as tree nodes: fn is called per found
 * id with verified bytes (hash checked; PROLLY_ECORRUPT on mismatch). Missing ids are skipped. */
int prolly__load_raw(prolly_db *db, const prolly_id *ids, size_t n, prolly_store_found_fn fn,
                     void *payload);
/* out[i] = whether the store holds ids[i] (1) or not (0), with one store call: has_nodes where
 * the store has it, else get_nodes with the bytes ignored. Nothing is hash-checked. */
int prolly__has_nodes(prolly_db *db, const prolly_id *ids, size_t n, unsigned char *out);

/* Reads ref with its gc epoch and, in the same store call where the store can
 * (get_ref_objects), the commit it names (decoded into *out, hash-checked) and that commit's tree
 * root (decoded into the cache). *out is NULL when the store could not return the commit. */
int prolly__head_read(prolly_db *db, const char *ref, prolly_id *head, uint64_t *epoch,
                      prolly_commit **out);
/* prolly__head_read, the handle's epoch raised to the one read (prolly__raise_epoch): how a
 * branch is read outside a txn (prolly_branch_commit, prolly_resolve_commit). */
int prolly__head_read_raise(prolly_db *db, const char *ref, prolly_id *head, prolly_commit **out);
/* Raises the handle's idea of the store's gc epoch to at least epoch. */
void prolly__raise_epoch(prolly_db *db, uint64_t epoch);
/* The store's gc epoch now, learnt with an empty write (one round trip on a remote store); the
 * handle's epoch is raised to it. 0 or the store's error. */
int prolly__store_epoch(prolly_db *db, uint64_t *epoch);
/* Reads a ref, remembering the gc epoch it came with. */
int prolly__get_ref(prolly_db *db, const char *name, prolly_id *out);
/* Reads the refs names[0..n) as the store's get_refs does (found[i] 0 for an absent one, not an
 * error), in one store call where the store has get_refs, else one get_ref each; remembers the
 * gc epoch as prolly__get_ref. */
int prolly__get_refs(prolly_db *db, const char *const *names, size_t n, prolly_id *out,
                     unsigned char *found);
/* Reads ref as the first read of txn (head.c) and adopts the gc epoch the store returned with it
 * (raising txn->epoch); with hc, also the commit and its tree's root where the store can, as
 * prolly__head_read. *exists is set to 0 when the ref is absent (not an error here). */
int prolly__txn_read_head(prolly_txn *txn, const char *ref, prolly_id *head, int *exists,
                          prolly_commit **hc);

/* ------------------------------------------------------------------------------------------ */
/* Transactions (txn.c)                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Builder flushes in flight at once per txn (T4): two, so that with PostgreSQL two server
 * backends (two cores) insert while the builder makes the next batch. */
#define PROLLY__FLUSH_DEPTH 2
/* Longest reflog operation name (reflog.c, R5). */
#define PROLLY__REASON_MAX 32

struct prolly_txn {
	prolly_db *db;
	uint64_t epoch;        /* gc epoch when the txn began */
	prolly__nodeset nodes; /* new nodes, pinned in the cache until commit/free */
	prolly_buf raw;        /* raw objects (commits): concatenated (id, u32 size, bytes) */
	size_t raw_count;
	prolly__idmap raw_at; /* a raw object's id -> 1 + its record's offset in raw (0: none) */
	prolly_ref_update *refs;
	char **ref_names;                   /* owned copies of refs[i].name */
	prolly__idmap ref_at;               /* the SHA-256 of each queued ref's name (value 1) */
	size_t n_refs, cap_refs, cap_names; /* capacities of refs and ref_names */
	int flush_failed;                   /* T9: a write before the commit's failed (its code) */
	int done;
	struct prolly__flush *pending[PROLLY__FLUSH_DEPTH]; /* builder flushes being written by
	                                                      background threads, oldest first */
	unsigned n_pending;
	char reason[PROLLY__REASON_MAX + 1]; /* prolly_txn_set_reason ("" : the default) */
	char *reason_msg;                    /* owned; NULL: none */
};

/* Adds a tree node the engine made (prolly__enc_node), taking over the caller's reference: pinned,
 * or dropped if the txn has that node already. *out (if not NULL) receives the txn's node,
 * borrowed. */
int prolly__txn_add_node(prolly_txn *txn, pnode *nd, pnode **out);
/* Adds a raw object (a commit) to be written with the txn. */
int prolly__txn_add_raw(prolly_txn *txn, const prolly_id *id, const void *bytes, size_t size);
/* Finds a raw object added to the txn (commit objects made and read before commit). */
int prolly__txn_find_raw(prolly_txn *txn, const prolly_id *id, const void **bytes, size_t *size);
/* Writes the nodes collected so far to the store (not durable, no refs) and unpins them. */
int prolly__txn_flush(prolly_txn *txn);
/* Waits for every background flush of the txn; returns the first failure (T4). */
int prolly__txn_flush_wait(prolly_txn *txn);
/* T10: 0 if txn may take new nodes, objects and ref moves; else the error fn returns. */
int prolly__txn_usable(const prolly_txn *txn, const char *fn);

/* ------------------------------------------------------------------------------------------ */
/* Tree internals shared by read.c, edit.c, cursor.c, diff.c, merge.c                         */
/* ------------------------------------------------------------------------------------------ */

/* Called by prolly__diff_nodes for each node of `to` that `from` lacks, children before their
 * parent: nd is the decoded node of an internal one (borrowed for the call; its bytes are
 * nd->bytes), NULL for a leaf, which the walk does not read. Non-zero stops the walk. */
typedef int (*prolly__diff_node_fn)(void *payload, const prolly_id *id, const pnode *nd);
/* The nodes of tree `to` that tree `from` lacks, each once, children before parents (diff.c
 * D6), reading both trees from db level by level as prolly_diff does (a store call per level
 * of the changed region, memory bounded by its window). Errors as prolly_diff, fn's return. */
int prolly__diff_nodes(prolly_db *db, const prolly_id *from, const prolly_id *to,
                       prolly__diff_node_fn fn, void *payload);

/* The root node (the empty tree is answered without a store call). Borrowed from ws. */
int prolly__load_root(prolly_db *db, prolly__nodeset *ws, const prolly_id *root, pnode **out);

/* prolly_edit_tree's checks of every edit (n > 0: edits not NULL): PROLLY_EINVAL for a NULL key
 * or value with a size or an unknown op, PROLLY_ETOOBIG for a key or value over the limits,
 * naming the edit. edit.c. */
int prolly__edits_check(const prolly_edit *edits, size_t n);

/* Applies sorted, de-duplicated edits (strictly increasing keys) to root in txn. edit.c. */
int prolly__apply_sorted(prolly_id *out_root, prolly_txn *txn, const prolly_id *root,
                         const prolly_edit *edits, size_t n);

/* Commit object encoding (commit.c). */
int prolly__commit_encode(prolly_buf *out, const prolly_id *tree, const prolly_id *parents,
                          size_t n_parents, int64_t time_us, const char *message);
int prolly__commit_decode(prolly_commit **out, const prolly_id *id, const void *bytes, size_t size);
/* 1 if bytes begin with the commit magic (a commit object, not a tree node or reflog entry). */
int prolly__is_commit_bytes(const void *bytes, size_t size);
/* prolly_commit_create, leaving the commit's bytes in *bytes (empty on entry; the caller
 * disposes of it whatever the result). */
int prolly__commit_make(prolly_id *out, prolly_buf *bytes, prolly_txn *txn, const prolly_id *tree,
                        const prolly_id *parents, size_t n_parents, int64_t time_us,
                        const char *message);

/* ------------------------------------------------------------------------------------------ */
/* Reflog (reflog.c): the format is documented at the top of reflog.c and in docs/format.md    */
/* ------------------------------------------------------------------------------------------ */

#define PROLLY__LOGS_PREFIX "logs/"
#define PROLLY__LOGS_PREFIX_LEN 5

/* A decoded reflog entry (strings owned, free with prolly__reflog_entry_free). */
typedef struct prolly__reflog {
	prolly_id id;
	int64_t time_us;
	int has_old, has_new;
	prolly_id old_id, new_id;
	char *ref, *op, *message;
} prolly__reflog;

/* Encodes an entry (old_id / new_id NULL when absent; msg may be NULL). The caller has checked
 * the operation, ref and message against R5-R7. */
int prolly__reflog_encode(prolly_buf *out, int64_t time_us, const prolly_id *old_id,
                          const prolly_id *new_id, const char *op, const char *ref,
                          const char *msg);
int prolly__reflog_decode(prolly__reflog *out, const prolly_id *id, const void *bytes, size_t size);
void prolly__reflog_dispose(prolly__reflog *e);
/* Puts e[0..n) in prolly_reflog's order: each ref's entries in the order they were written,
 * newest first (reflog_order.c, RO1-RO3). PROLLY_ENOMEM, e unchanged, on failure. */
int prolly__reflog_order(prolly__reflog *e, size_t n);
/* The time encoded in an entry's ref name "logs/<ref>@<16 hex time><8 hex id>"; 0 if the name
 * is not one. */
int prolly__reflog_name_time(const char *name, int64_t *time_us);
/* Makes a reflog entry for every update of a refs/heads/ or refs/tags/ ref queued in txn: its
 * object joins txn's raw objects, and *refs receives a malloc'd array of *n_refs updates (txn's
 * own first, then one per entry, creating its ref) whose new names live in *names (malloc'd).
 * The caller frees both, also on failure. */
int prolly__reflog_record(prolly_txn *txn, prolly_ref_update **refs, size_t *n_refs, char **names);
/* Ref moves with a reflog operation (refs.c). Create: PROLLY_ECONFLICT if ref exists,
 * PROLLY_ENOTFOUND if commit does not. Delete: PROLLY_ENOTFOUND if absent; *out_old (may be
 * NULL) receives the value removed. Both retry (a few times) when only a gc got in the way. */
int prolly__ref_create(prolly_db *db, const char *ref, const prolly_id *commit, const char *op);
int prolly__ref_delete(prolly_id *out_old, prolly_db *db, const char *ref, const char *op);
/* Calls fn once per ref under prefix (e.g. "refs/tags/") with its name less the prefix, in the
 * store's list_refs order; stops at fn's first non-zero return, which it returns (refs.c). */
int prolly__list_under(prolly_db *db, const char *prefix, prolly_branch_fn fn, void *payload);
/* 0 when commit c's tree is stored (or empty); PROLLY_EPRUNED, naming ref, when a gc removed it
 * (a commit kept for the history walks only): no ref may name such a commit (refs.c). */
int prolly__commit_tree_stored(prolly_db *db, const prolly_commit *c, const char *ref);
/* gc_history.c: the commits (objects) and tree roots that retention keeps, walking all history
 * from heads[0..n); the first n_protected heads (branch heads, tags) get their pairwise merge
 * bases kept too (K1-K3 there). The arrays are malloc'd; the caller frees them. */
int prolly__gc_history(prolly_db *db, const prolly_id *heads, size_t n, size_t n_protected,
                       unsigned retain, prolly_id **commits, size_t *n_commits, prolly_id **trees,
                       size_t *n_trees);
/* The library's clock: opts.clock_us when set, else (also for db NULL) the wall clock. */
int64_t prolly__db_now(const prolly_db *db);

/* resolve_at.c: the "@{...}" of a revision spec. A selector: a count of moves back, or a time. */
typedef struct prolly__reflog_sel {
	int is_count;
	uint64_t count;  /* when is_count */
	int64_t time_us; /* otherwise: microseconds since the epoch, UTC */
} prolly__reflog_sel;
/* Parses the text between "@{" and "}" (s[0..n)) of spec; PROLLY_EINVAL naming spec if it is
 * neither a count nor a time. */
int prolly__reflog_sel_parse(prolly__reflog_sel *out, const char *s, size_t n, const char *spec);
/* The value branch or tag `name` had at sel, from its reflog (RA1-RA4 of resolve_at.c):
 * PROLLY_ENOTFOUND when it did not exist then or has no reflog, PROLLY_EPRUNED when the entries
 * that would tell have expired, PROLLY_EINVAL for a bad name; prolly_reflog's errors. */
int prolly__resolve_at(prolly_id *out, prolly_db *db, const char *name,
                       const prolly__reflog_sel *sel, const char *spec);

/* ------------------------------------------------------------------------------------------ */
/* Branches (branch.c) and commits read together (commit.c)                                   */
/* ------------------------------------------------------------------------------------------ */

#define PROLLY__MAX_BRANCH_NAME 200

/* prolly_branch_name_valid; with quiet, for a name read back, no message is set (a listing skips
 * a name it refuses without disturbing the caller's last error) and a name of 64 hex digits,
 * which libraries before that rule created, passes. */
int prolly__branch_name_check(const char *name, int quiet);
/* The same rules for the names that follow them (tags, remotes): the message calls the name a
 * kind name ("tag name 'x' contains ..."), so that it says what was wrong. */
int prolly__name_check(const char *name, const char *kind, int quiet);
/* "refs/heads/NAME" into buf, once prolly_branch_name_valid accepts NAME (BR1 in branch.c). */
int prolly__branch_ref(char buf[PROLLY_MAX_REF_NAME + 1], const char *branch);
/* The time for a commit made on parents whose newest time is newest_parent: now (db's clock,
 * prolly__db_now), or one more than newest_parent when the clock is behind it (BR2 in branch.c). */
int64_t prolly__branch_time(const prolly_db *db, int64_t newest_parent);
/* Moves branch (ref its ref name) from expected (NULL: create it) to commit in txn and commits
 * txn. A lost race is PROLLY_ECONFLICT with a message saying what happened; *winner (may be NULL)
 * then receives the head that won, when it is known. Other errors as prolly_txn_commit. */
int prolly__branch_publish(prolly_db *db, prolly_txn *txn, const char *branch, const char *ref,
                           const prolly_id *expected, const prolly_id *commit, prolly_id *winner);
/* Reads n commits (out[] zeroed by the caller) with one store call; a missing one is
 * PROLLY_ENOTFOUND. */
int prolly__commits_read(prolly_db *db, const prolly_id *ids, size_t n, prolly_commit **out);
/* Reads the commit a caller named (what: how it was named, for the messages): an id of a tree or
 * a reflog entry is PROLLY_EINVAL ("'WHAT': ID is a tree, not a commit"), bad input rather than
 * damage; an absent one PROLLY_ENOTFOUND; a damaged commit PROLLY_ECORRUPT. One store call. */
int prolly__commit_read_as(prolly_commit **out, prolly_db *db, const prolly_id *id,
                           const char *what);
/* rc, an error of a history walk that started at id as the caller named it (what: the caller's
 * word for it): when id names a tree or a reflog entry, which the walk's decoder can only call a
 * corrupt commit, PROLLY_EINVAL as prolly__commit_read_as says; else rc with its message. Reads
 * id once, and only when rc is PROLLY_ECORRUPT (an error path: a walk pays nothing for it). */
int prolly__commit_named_error(prolly_db *db, int rc, const prolly_id *id, const char *what);
/* prolly_merge_base for ids the library read from refs: a non-commit there is damage, so its
 * PROLLY_ECORRUPT stays as the walk reports it. */
int prolly__merge_base(prolly_id *out, prolly_db *db, const prolly_id *a, const prolly_id *b);
/* prolly_log's walk; what names the caller's commit in a bad-input message (the function's
 * word: "log", "history"), or is NULL for a walk of ids that may name other objects (refs of
 * any kind), which takes a non-commit's PROLLY_ECORRUPT as it comes, without a second read. */
int prolly__log_walk(prolly_db *db, const prolly_id *commit, prolly_commit_fn fn, void *payload,
                     const char *what);
/* The same walk from several heads at once (n may be 0): every commit reachable from any of them,
 * each once, newest first across them. A head that is not stored is passed over as a commit that
 * retention removed; a damaged commit fails the walk (PROLLY_ECORRUPT), as it fails
 * prolly__log_walk. */
int prolly__log_walk_heads(prolly_db *db, const prolly_id *heads, size_t n, prolly_commit_fn fn,
                           void *payload);

/* ------------------------------------------------------------------------------------------ */
/* The commit graph of a history walk (commit_graph.c), walked by merge_base.c and log.c      */
/* ------------------------------------------------------------------------------------------ */

enum { PROLLY__G_NEW = 0, PROLLY__G_LOADED = 1, PROLLY__G_MISSING = 2 };

typedef struct prolly__gnode { /* its id is the graph's index.ids[its index] */
	int64_t time;
	size_t poff; /* first parent in graph.par */
	uint32_t np;
	unsigned char state;  /* PROLLY__G_* */
	unsigned char queued; /* in a work list */
	unsigned flags, done; /* walk flags, and the flags last expanded (W1, merge_base.c) */
	int64_t ctime;        /* time of the child it was first reached from (INT64_MIN: a start) */
	size_t since;         /* the merge base's paint: the step it was first reached in */
	prolly_commit *c;     /* the decoded commit, when the graph keeps them (log) */
} prolly__gnode;

typedef struct prolly__graph {
	prolly_db *db;
	int keep; /* nodes keep their decoded commit in .c */
	prolly__gnode *v;
	size_t n, cap;
	prolly__idmap index; /* node i is entry i */
	prolly_id *par;
	size_t npar, cappar;
	size_t ahead; /* ancestors the next load reads ahead (commit_graph.c); 0: the first */
} prolly__graph;

/* A growable list of node indexes. */
typedef struct prolly__ilist {
	size_t *v;
	size_t n, cap;
} prolly__ilist;

/* Appends x; PROLLY_ENOMEM on failure. */
int prolly__ilist_push(prolly__ilist *l, size_t x);
/* An empty graph over db's store; keep: nodes keep their decoded commit in .c (the log). */
void prolly__graph_init(prolly__graph *g, prolly_db *db, int keep);
void prolly__graph_dispose(prolly__graph *g);
/* Index of id in the graph, adding an unloaded (PROLLY__G_NEW) node if absent. Indexes stay
 * valid; node pointers do not survive a call that adds nodes. */
int prolly__graph_get(prolly__graph *g, const prolly_id *id, size_t *out);
/* Loads the unloaded nodes among idx[0..n) with one store call (reading ahead where the store
 * has get_ancestors). Those not found become PROLLY__G_MISSING. */
int prolly__graph_load(prolly__graph *g, const size_t *idx, size_t n);
/* 1 if node a is newer than node b: greater time, then greater id. */
static inline int prolly__graph_newer(const prolly__graph *g, size_t a, size_t b)
{
	if (g->v[a].time != g->v[b].time)
		return g->v[a].time > g->v[b].time;
	return memcmp(g->index.ids[a].bytes, g->index.ids[b].bytes, PROLLY_ID_SIZE) > 0;
}
/* The id of node i. */
static inline const prolly_id *prolly__graph_id(const prolly__graph *g, size_t i)
{
	return &g->index.ids[i];
}
/* The i-th parent of a loaded node. */
static inline const prolly_id *prolly__graph_parent(const prolly__graph *g, const prolly__gnode *nd,
                                                    uint32_t i)
{
	return &g->par[nd->poff + i];
}
/* One store call of a history walk (the graph's loads here, gc's walk in gc_history.c) whose
 * nodes are the entries of an id table (node i is entry i of *index). */
typedef struct prolly__walk_reader {
	prolly_db *db;
	const prolly__idmap *index;
	size_t ahead; /* where the store has get_ancestors: read up to this many ancestors ahead */
	/* Adds a node for a commit read ahead (not in *index yet); *out its index. */
	int (*add)(void *walk, const prolly_id *id, size_t *out);
	/* Fills node k from its object's verified bytes (id's, hash checked). */
	int (*fill)(void *walk, size_t k, const prolly_id *id, const void *data, size_t size);
	void *walk;
} prolly__walk_reader;
/* Reads ids[0..n) (nodes idx[0..n)) with one store call: each object found goes to fill; where
 * the store has get_ancestors, their ancestors too (a commit not in the table through add, then
 * fill; one that does not decode is left unfilled). A missing id is skipped: the caller sees
 * its node unfilled. A get_ancestors call is counted in db's stats here (prolly__load_raw counts
 * its own). */
int prolly__walk_read(const prolly__walk_reader *r, const prolly_id *ids, const size_t *idx,
                      size_t n);
/* Sets and returns PROLLY_ENOTFOUND, "commit <hex> not found". */
int prolly__commit_not_found(const prolly_id *id);

#endif /* PROLLY_INTERNAL_H */
