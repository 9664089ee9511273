/*
 * store_int.h - what the built-in stores (src/store/) share: the small utilities of the library
 * they use, and helpers of their own. Not installed; not part of the contract.
 *
 * A store is written against include/prolly/store.h and this header, and includes nothing else
 * of the library's (scripts/check-includes.sh enforces it): it never sees the engine's
 * internals (src/internal.h) or the stored formats (src/format.h), which the engine passes it
 * where it needs them (get_ref_objects' offset, get_ancestors' commit layout). The engine
 * includes this header too (internal.h), so each utility is declared once, here; they are
 * defined in src/util.c, src/alloc.c and src/abi.c, but for the memory store's entry points
 * for the engine (src/store/mem.c).
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

/* Node memory shared by reference count (alloc.c). A block from prolly__node_mem_alloc that
 * begins with this header lives until its last reference goes: the engine's decoded nodes
 * begin with one, and the memory store keeps a reference to a node the engine made instead of
 * a copy of its bytes (prolly__mem_store_write_shared). */
typedef struct prolly__shared {
	atomic_int refs;
	uint8_t mem_class; /* the class prolly__node_mem_alloc returned */
} prolly__shared;

void prolly__shared_init(prolly__shared *s, uint8_t mem_class); /* one reference */
void prolly__shared_ref(prolly__shared *s);
void prolly__shared_unref(prolly__shared *s); /* NULL ok; frees the block at zero */

/* The memory store's write with node memory handed over (store/mem.c): owners[i], when not
 * NULL, is a shared block that holds nodes[i].data unchanged for as long as a reference is held;
 * the store keeps a reference to it instead of a copy. 1 (nothing done) if st is not a memory
 * store, else what its write() returns. */
int prolly__mem_store_write_shared(prolly_store *st, prolly_store_write *w,
                                   prolly__shared *const *owners);

/* The memory store's get_nodes as the engine reads it: found() is also given the shared block a
 * node was handed over in (NULL for a node the store copied), with the store's read lock held as
 * in get_nodes. 1 (nothing done) if st is not a memory store, else what get_nodes returns. */
typedef int (*prolly__shared_found_fn)(void *payload, size_t index, const void *data, size_t size,
                                       prolly__shared *owner);
int prolly__mem_store_get_shared(prolly_store *st, const prolly_id *ids, size_t n,
                                 prolly__shared_found_fn found, void *payload);

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

#endif /* PROLLY_STORE_INT_H */
