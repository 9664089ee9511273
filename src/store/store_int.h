/*
 * store_int.h - what the built-in stores (src/store/) share: the small utilities of the library
 * they use, and helpers of their own. Not installed; not part of the contract.
 *
 * A store is written against include/prolly/store.h and this header, and includes nothing else
 * of the library's (scripts/check-includes.sh enforces it): it never sees the engine's
 * internals (src/internal.h) or the stored formats (src/format.h), which the engine passes it
 * where it needs them (get_ref_objects' offset, get_ancestors' commit layout). The engine
 * includes this header too (internal.h), so each utility is declared once, here; they are
 * defined in src/util.c, src/alloc.c and src/abi.c.
 */
#ifndef PROLLY_STORE_INT_H
#define PROLLY_STORE_INT_H

#include "prolly.h"
#include "prolly/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* A macro's value as a string literal: PROLLY__STR(PROLLY_ID_SIZE) is "32". */
#define PROLLY__STR_(x) #x
#define PROLLY__STR(x) PROLLY__STR_(x)

/* ------------------------------------------------------------------------------------------ */
/* Small utilities (util.c)                                                                   */
/* ------------------------------------------------------------------------------------------ */

#define PROLLY_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PROLLY_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Little-endian fixed-width integers. */
static inline uint32_t prolly__rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t prolly__rd64(const unsigned char *p)
{
	return (uint64_t)prolly__rd32(p) | (uint64_t)prolly__rd32(p + 4) << 32;
}
static inline void prolly__wr32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}
static inline void prolly__wr64(unsigned char *p, uint64_t v)
{
	prolly__wr32(p, (uint32_t)v);
	prolly__wr32(p + 4, (uint32_t)(v >> 32));
}

/* memcmp order on byte strings, shorter prefix first. <0, 0, >0. */
static inline int prolly__keycmp(const void *a, size_t alen, const void *b, size_t blen)
{
	size_t m = alen < blen ? alen : blen;
	int c = m ? memcmp(a, b, m) : 0;
	if (c)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* Growable arrays, the one growth rule of the library: makes room for `need` elements of `elem`
 * bytes in the array *arrp (the address of a T *, passed as void *) whose capacity is *cap,
 * doubling from `first` (when *cap is 0) until need fits. 0, or PROLLY_ENOMEM with the array
 * and *cap untouched and no message set: the caller says what it was growing. Use the macro,
 * which skips the call when there is room; it evaluates its arguments more than once. */
int prolly__grow(void *arrp, size_t *cap, size_t need, size_t elem, size_t first);
#define PROLLY__GROW(arr, cap, need, first)                                                        \
	((need) <= (cap) ? 0 : prolly__grow(&(arr), &(cap), (need), sizeof(*(arr)), (first)))

/* Buffers: ensure room for `need` bytes in total, append bytes. ENOMEM on failure. */
int prolly__buf_grow(prolly_buf *b, size_t need);
int prolly__buf_set(prolly_buf *b, const void *data, size_t size);
int prolly__buf_put(prolly_buf *b, const void *data, size_t size);

/* Wall clock in microseconds, and a monotonic clock in nanoseconds. */
int64_t prolly__now_us(void);
uint64_t prolly__mono_ns(void);
/* The time ms milliseconds from now on clock, for pthread_cond_timedwait (CLOCK_REALTIME for a
 * default condition variable, CLOCK_MONOTONIC for one set up with pthread_condattr_setclock). */
void prolly__deadline(struct timespec *out, clockid_t clock, uint64_t ms);

/* The one version check of prolly_options (abi.c): 0 for NULL or a known version, else
 * PROLLY_EINVAL naming the struct. prolly_open (open.c) calls it before it opens (or creates) a
 * store; prolly_db_new calls it again. */
int prolly__options_check(const prolly_options *opts);

/* Memory for decoded nodes (alloc.c): size classes carved from huge-page regions and reused.
 * Free with the class that alloc returned. The memory store keeps its nodes there too. */
void *prolly__node_mem_alloc(size_t size, uint8_t *cls);
void prolly__node_mem_free(void *p, uint8_t cls);
/* The bytes a block of `size` bytes from class cls occupies: its class's size (a block from
 * malloc, UINT8_MAX: size). What the node cache charges for a node's memory. */
size_t prolly__node_mem_footprint(uint8_t cls, size_t size);
/* Bytes of class blocks handed out and not freed, process-wide; SIZE_MAX where every block
 * comes from malloc (sanitizer builds). For tests. */
size_t prolly__node_mem_in_use(void);

/* Node memory shared by reference count (alloc.c). A block from prolly__node_mem_alloc that
 * begins with this header lives until its last reference goes: the engine's decoded nodes
 * begin with one, and the memory store keeps a reference to a node the engine made instead of
 * a copy of its bytes (prolly__handover_write). */
typedef struct prolly__shared {
	atomic_int refs;
	uint8_t mem_class; /* the class prolly__node_mem_alloc returned */
} prolly__shared;

void prolly__shared_init(prolly__shared *s, uint8_t mem_class); /* one reference */
void prolly__shared_ref(prolly__shared *s);
void prolly__shared_unref(prolly__shared *s); /* NULL ok; frees the block at zero */

/* Node memory handed over across the store interface, which has no member for it, so that it
 * also passes through a store that wraps the memory store and forwards its calls (alloc.c; per
 * thread).
 *   Writing: around the store's write() the engine names each node's block (owners[i] holds
 *   nodes[i].data, NULL for none) and clears it after; the memory store asks for the owner of
 *   node i of the write it was given and gets one only when that write carries the engine's
 *   very array, so it keeps a reference instead of a copy.
 *   Reading: around each found() call the memory store names the block the bytes lie in (NULL
 *   for a copy); the engine takes that node back when found() got exactly its bytes. */
void prolly__handover_write(const prolly_store_node *nodes, size_t n,
                            prolly__shared *const *owners);
prolly__shared *prolly__handover_owner(const prolly_store_node *nodes, size_t n, size_t i);
void prolly__handover_read(prolly__shared *owner);
prolly__shared *prolly__handover_read_owner(void);

/* ------------------------------------------------------------------------------------------ */
/* Helpers of the stores                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* Checks a commit layout passed to get_ancestors before a store reads objects by it: the magic
 * and the parent count lie before the parent ids, and the offsets fit an int4 (the PostgreSQL
 * store passes them as statement parameters). 0 or PROLLY_EINVAL naming who. */
static inline int prolly__store_layout_check(const prolly_store_commit_layout *c, const char *who)
{
	if (!c->magic || !c->magic_size || c->magic_size > c->parents_at ||
	    c->count_at > c->parents_at || c->parents_at - c->count_at < 4 ||
	    c->parents_at > INT32_MAX / 2)
		return prolly_set_error(PROLLY_EINVAL, "%s: get_ancestors with a malformed commit layout",
		                        who);
	return 0;
}

/* A lost compare-and-swap of ref update u, in every built-in store's words (conflict.c): sets the message (who, the ref, what was
 * expected, what is there, `failing` of the write's updates failed, nothing written) and returns
 * PROLLY_ECONFLICT. */
int prolly__store_conflict(const char *who, const prolly_ref_update *u, size_t failing);

/* How prolly__store_ancestors fetches one object: 0 with *data and *size set (valid until the
 * next call of get in the same walk), PROLLY_ENOTFOUND when the store has no object id, or
 * another error (message set), which stops the walk. */
typedef int (*prolly__store_get_fn)(void *gp, const prolly_id *id, const unsigned char **data,
                                    size_t *size);

/* get_ancestors for a store that reads an object by id (ancestors.c): checks the arguments and
 * the layout as the contract asks (PROLLY_EINVAL naming who), then walks breadth first from
 * ids[0..n) along the parents `commit` describes, at most max(limit, n) ids met, each fetched
 * once by get(gp, ...) and, when present, reported to found(). The caller holds whatever get
 * needs (a read lock, a read transaction) for the whole call. Returns 0, PROLLY_ENOMEM, get's
 * error or found()'s non-zero return. */
int prolly__store_ancestors(const char *who, const prolly_id *ids, size_t n, size_t limit,
                            const prolly_store_commit_layout *commit, prolly__store_get_fn get,
                            void *gp, prolly_store_obj_fn found, void *payload);

/* 0 if url has the form of a store URL that prolly_store_open_ex can try: "mem:", "lmdb:PATH"
 * (PATH not empty), or a PostgreSQL URL or connection string that libpq's PQconninfoParse
 * accepts (no unknown keyword or query parameter, no missing '=', no open quote). Else
 * PROLLY_EINVAL, with a message that names url as what ("remote URL") and quotes libpq's reason
 * only through prolly_redact_message, never url itself; PROLLY_EUNSUPPORTED when libpq cannot be
 * loaded (PQ1). On 0, *has_password (when not NULL) is 1 if libpq found a non-empty password or
 * sslpassword in url, else 0; it is untouched on an error. Opens nothing. (open.c) */
int prolly__store_url_check(int *has_password, const char *url, const char *what);

/* The node size a prolly_store.node_size member stands for (0: the default), and the member for a
 * size (the default as 0, as every built-in store reports it). */
static inline unsigned prolly__node_size_of(unsigned member)
{
	return member ? member : PROLLY_NODE_SIZE_DEFAULT;
}
static inline unsigned prolly__node_size_member(unsigned size)
{
	return size == PROLLY_NODE_SIZE_DEFAULT ? 0 : size;
}

/* prolly_store_lmdb_open_ex, making a store it creates with nodes of node_size and refusing an
 * existing store of another size unless node_size is 0 (prolly_store_open_opts; lmdb_open.c). */
int prolly__lmdb_open(prolly_store **out, const char *path, size_t map_size, unsigned flags,
                      unsigned node_size);

#ifdef PROLLY_TEST_HOOKS
/* Test hook, only in the test build (mem.c compiled with -DPROLLY_TEST_HOOKS into the tests'
 * archive): the memory store's node count and hash-table size. PROLLY_EINVAL for another store. */
int prolly_store_mem_table(prolly_store *st, size_t *nodes, size_t *buckets);
#endif

#endif /* PROLLY_STORE_INT_H */
