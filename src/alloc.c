/*
 * alloc.c - memory for decoded nodes.
 *
 * Nodes come and go at high rates: an edit of 10k random keys makes thousands, and the cache
 * evicts as many. Fresh memory costs a page fault per page, which is expensive on virtual
 * machines, so node memory comes from large regions carved into size classes whose freed blocks
 * are reused by the next node of that class: a process pays for fresh memory only while its
 * working set grows. The memory is kept for reuse, not returned to the system: it is bounded by
 * the peak of the cache budget plus the nodes operations hold at once.
 *
 * The regions do not ask for transparent huge pages (no MADV_HUGEPAGE): on virtual machines whose
 * balloon device reports free memory to the host, a fresh 2 MiB page is memory the host must back
 * again, and the memory store's 10k-edit batch ran 2-3x slower with them
 * (docs/benchmarks/engine.md, "Huge pages on another machine"). The regions stay 2 MiB aligned, so a system whose THP setting
 * is "always" still backs them with huge pages: the system's setting decides.
 *
 * A refill's blocks are mapped in with one madvise(MADV_POPULATE_WRITE) (Linux 5.14 and later;
 * elsewhere, or where it fails, the page faults happen as the blocks are first written): a page
 * fault per 4 KiB page costs an exception each, and on some virtual machines that is most of an
 * edit's time (10.5 against 5.5 us a page populated, on the AMD machine of
 * docs/benchmarks/engine.md, "Node memory populated a refill at a time").
 *
 * Sizes above the largest class, and every size in sanitizer builds (so that AddressSanitizer
 * still sees each block), go to malloc.
 *
 * Invariants:
 *   A1  class_size[] is strictly increasing and every class size is a multiple of 64.
 *   A2  a block on a class's free list is at least class_size bytes and not in use.
 *   A3  in_use is the sum of the class sizes of the class blocks handed out and not yet freed.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define USE_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define USE_MALLOC 1
#endif
#endif

#define MAX_CLASSES 64
#define MAX_CLASS_SIZE (256u << 10)
#define REGION_SIZE ((size_t)64 << 20)
#define HUGE_PAGE ((size_t)2 << 20)
#define REFILL_BYTES ((size_t)64 << 10)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux's value, for C libraries whose headers predate it */
#endif

#ifndef USE_MALLOC
typedef struct freeblock {
	struct freeblock *next;
} freeblock;

static size_t class_size[MAX_CLASSES];
static unsigned nclasses;
static struct {
	pthread_mutex_t lock;
	freeblock *free;
} classes[MAX_CLASSES];
static atomic_size_t in_use; /* A3 */
static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *region_cur, *region_end;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_classes(void)
{
	size_t s = 256;
	while (s <= MAX_CLASS_SIZE && nclasses < MAX_CLASSES) { /* A1: eight classes per doubling */
		pthread_mutex_init(&classes[nclasses].lock, NULL);
		class_size[nclasses++] = s;
		size_t step = s / 8;
		s += step < 64 ? 64 : (step + 63) / 64 * 64;
	}
}

static unsigned class_of(size_t size)
{
	unsigned lo = 0, hi = nclasses;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (class_size[mid] < size)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Carves `count` blocks of `size` bytes from the current region; NULL if memory is exhausted. */
static unsigned char *carve(size_t size, size_t *count)
{
	unsigned char *p = NULL;
	pthread_mutex_lock(&region_lock);
	if ((size_t)(region_end - region_cur) < size) {
		void *m = mmap(NULL, REGION_SIZE + HUGE_PAGE, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			goto out;
		uintptr_t a = ((uintptr_t)m + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
		region_cur = (unsigned char *)a;
		region_end = region_cur + REGION_SIZE;
	}
	size_t fit = (size_t)(region_end - region_cur) / size;
	if (*count > fit)
		*count = fit;
	p = region_cur;
	region_cur += *count * size;
out:
	pthread_mutex_unlock(&region_lock);
	return p;
}

/* Maps in [p, p + len) with one call where the system can (see the top of the file). */
static void populate(unsigned char *p, size_t len)
{
	static atomic_int unsupported;
	if (atomic_load_explicit(&unsupported, memory_order_relaxed))
		return;
	long ps = sysconf(_SC_PAGESIZE);
	uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096, a = (uintptr_t)p & ~(page - 1);
	uintptr_t end = ((uintptr_t)p + len + page - 1) & ~(page - 1);
	if (madvise((void *)a, end - a, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
		atomic_store_explicit(&unsupported, 1, memory_order_relaxed);
}

#endif /* USE_MALLOC */

void *prolly__node_mem_alloc(size_t size, uint8_t *cls)
{
#ifndef USE_MALLOC
	pthread_once(&once, init_classes);
	if (size <= MAX_CLASS_SIZE) {
		unsigned c = class_of(size);
		void *p = NULL;
		pthread_mutex_lock(&classes[c].lock);
		if (classes[c].free) {
			p = classes[c].free;
			classes[c].free = classes[c].free->next;
		} else {
			size_t bs = class_size[c], count = REFILL_BYTES / bs ? REFILL_BYTES / bs : 1;
			unsigned char *blk = carve(bs, &count);
			if (blk) {
				populate(blk, count * bs);
				p = blk;
				for (size_t i = 1; i < count; i++) { /* A2 */
					freeblock *f = (freeblock *)(void *)(blk + i * bs);
					f->next = classes[c].free;
					classes[c].free = f;
				}
			}
		}
		pthread_mutex_unlock(&classes[c].lock);
		if (p)
			atomic_fetch_add_explicit(&in_use, class_size[c], memory_order_relaxed);
		*cls = (uint8_t)c;
		return p;
	}
#endif
	*cls = UINT8_MAX;
	return malloc(size);
}

void prolly__node_mem_free(void *p, uint8_t cls)
{
	if (!p)
		return;
#ifndef USE_MALLOC
	if (cls != UINT8_MAX) {
		freeblock *f = p;
		atomic_fetch_sub_explicit(&in_use, class_size[cls], memory_order_relaxed);
		pthread_mutex_lock(&classes[cls].lock);
		f->next = classes[cls].free;
		classes[cls].free = f;
		pthread_mutex_unlock(&classes[cls].lock);
		return;
	}
#endif
	(void)cls;
	free(p);
}

size_t prolly__node_mem_footprint(uint8_t cls, size_t size)
{
#ifndef USE_MALLOC
	if (cls != UINT8_MAX)
		return class_size[cls];
#endif
	(void)cls;
	return size;
}

size_t prolly__node_mem_in_use(void)
{
#ifndef USE_MALLOC
	return atomic_load_explicit(&in_use, memory_order_relaxed);
#else
	return SIZE_MAX;
#endif
}

void prolly__shared_init(prolly__shared *s, uint8_t mem_class)
{
	atomic_init(&s->refs, 1);
	s->mem_class = mem_class;
}

void prolly__shared_ref(prolly__shared *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void prolly__shared_unref(prolly__shared *s)
{
	if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
		prolly__node_mem_free(s, s->mem_class);
}

/* The handover of store_int.h: this thread's write and read in progress. */
static _Thread_local struct {
	const prolly_store_node *nodes;
	size_t n;
	prolly__shared *const *owners;
	prolly__shared *read_owner;
} handover;

void prolly__handover_write(const prolly_store_node *nodes, size_t n, prolly__shared *const *owners)
{
	handover.nodes = owners ? nodes : NULL;
	handover.n = owners ? n : 0;
	handover.owners = owners;
}

prolly__shared *prolly__handover_owner(const prolly_store_node *nodes, size_t n, size_t i)
{
	if (!handover.owners || nodes != handover.nodes || n != handover.n || i >= n)
		return NULL;
	return handover.owners[i];
}

void prolly__handover_read(prolly__shared *owner)
{
	handover.read_owner = owner;
}

prolly__shared *prolly__handover_read_owner(void)
{
	return handover.read_owner;
}
