/*
 * cache.c - decoded nodes shared between threads, bounded by bytes.
 *
 * The cache is split into stripes by the first byte of the id, each with its own mutex, hash
 * chains and LRU list, so threads rarely contend. Each stripe keeps at most budget/STRIPES bytes
 * of unpinned nodes, counted as the memory they take: an entry's charge is the whole block of
 * its node (header and size-class rounding, alloc.c) and the entry itself, so that the budget
 * bounds the process's memory and not only the nodes' encoded bytes. An entry holds one reference
 * to its node; a reader gets a reference of its own, so eviction never frees a node in use.
 *
 * Pinned entries (nodes a txn created and has not yet written) are outside the LRU list and are
 * never evicted or cleared; their bytes do not count against the budget.
 *
 * Invariants:
 *   CA1 an entry is in its stripe's LRU list iff pins == 0.
 *   CA2 stripe->bytes is the sum of the charges of the stripe's unpinned entries.
 *   CA3 after put/unpin returns, stripe->bytes <= stripe budget unless every entry is pinned.
 */
#include "internal.h"

#include <stdlib.h>

#define STRIPES 16

typedef struct centry {
	prolly_id id; /* node->id, here so that a lookup does not touch the node */
	pnode *node;
	size_t charge; /* the memory this entry holds: see charge_of() */
	struct centry *hnext;
	struct centry *prev, *next; /* LRU: head is most recent */
	unsigned pins;
} centry;

typedef struct stripe {
	pthread_mutex_t lock;
	centry **table;
	size_t cap, len;
	centry *head, *tail;
	size_t bytes, budget;
} stripe;

struct prolly__cache {
	stripe s[STRIPES];
};

static size_t slot_of(const prolly_id *id, size_t cap)
{
	uint64_t h;
	memcpy(&h, id->bytes + 8, sizeof(h));
	return (size_t)(h & (cap - 1));
}

/* What an entry for n costs: its node's block, as allocated (node.c), and the entry. */
static size_t charge_of(const pnode *n)
{
	return prolly__node_mem_footprint(n->mem.mem_class, sizeof(*n) + n->size) + sizeof(centry);
}

static stripe *stripe_of(prolly__cache *c, const prolly_id *id)
{
	return &c->s[id->bytes[0] % STRIPES];
}

int prolly__cache_new(prolly__cache **out, size_t budget_bytes)
{
	prolly__cache *c = calloc(1, sizeof(*c));
	if (!c)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory creating the node cache");
	for (int i = 0; i < STRIPES; i++) {
		pthread_mutex_init(&c->s[i].lock, NULL);
		c->s[i].budget = budget_bytes / STRIPES;
	}
	*out = c;
	return 0;
}

static void lru_unlink(stripe *s, centry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		s->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		s->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(stripe *s, centry *e)
{
	e->prev = NULL;
	e->next = s->head;
	if (s->head)
		s->head->prev = e;
	s->head = e;
	if (!s->tail)
		s->tail = e;
}

static centry **find_slot(stripe *s, const prolly_id *id)
{
	if (!s->cap)
		return NULL;
	centry **pp = &s->table[slot_of(id, s->cap)];
	while (*pp && memcmp((*pp)->id.bytes, id->bytes, PROLLY_ID_SIZE) != 0)
		pp = &(*pp)->hnext;
	return pp;
}

static void remove_entry(stripe *s, centry *e)
{
	centry **pp = find_slot(s, &e->id);
	assert(pp && *pp == e);
	*pp = e->hnext;
	s->len--;
	if (!e->pins) {
		lru_unlink(s, e);
		s->bytes -= e->charge;
	}
	prolly__node_unref(e->node);
	free(e);
}

static uint64_t evict(stripe *s)
{
	uint64_t n = 0;
	while (s->bytes > s->budget && s->tail) { /* CA3 */
		assert(s->tail->pins == 0);           /* CA1: only unpinned entries are on the LRU list */
		remove_entry(s, s->tail);
		n++;
	}
	return n;
}

static int grow(stripe *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 256;
	centry **nt = calloc(ncap, sizeof(*nt));
	if (!nt)
		return -1;
	for (size_t i = 0; i < s->cap; i++) {
		centry *e = s->table[i];
		while (e) {
			centry *next = e->hnext;
			size_t j = slot_of(&e->id, ncap);
			e->hnext = nt[j];
			nt[j] = e;
			e = next;
		}
	}
	free(s->table);
	s->table = nt;
	s->cap = ncap;
	return 0;
}

/* Inserts (or finds) the entry for n; caller holds the lock. NULL on allocation failure. */
static centry *insert(stripe *s, pnode *n)
{
	centry **pp = find_slot(s, &n->id);
	if (pp && *pp)
		return *pp;
	if (s->len + 1 > s->cap * 3 / 4 && grow(s) != 0)
		return NULL;
	centry *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	prolly__node_ref(n);
	e->id = n->id;
	e->node = n;
	e->charge = charge_of(n);
	size_t j = slot_of(&n->id, s->cap);
	e->hnext = s->table[j];
	s->table[j] = e;
	s->len++;
	lru_push(s, e);
	s->bytes += e->charge;
	return e;
}

pnode *prolly__cache_get(prolly__cache *c, const prolly_id *id)
{
	stripe *s = stripe_of(c, id);
	pnode *n = NULL;
	pthread_mutex_lock(&s->lock);
	centry **pp = find_slot(s, id);
	if (pp && *pp) {
		centry *e = *pp;
		if (!e->pins && s->head != e) {
			lru_unlink(s, e);
			lru_push(s, e);
		}
		n = e->node;
		prolly__node_ref(n);
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

int prolly__cache_has(prolly__cache *c, const prolly_id *id)
{
	stripe *s = stripe_of(c, id);
	pthread_mutex_lock(&s->lock);
	centry **pp = find_slot(s, id);
	int has = pp && *pp;
	pthread_mutex_unlock(&s->lock);
	return has;
}

pnode *prolly__cache_get_pinned(prolly__cache *c, const prolly_id *id)
{
	stripe *s = stripe_of(c, id);
	pnode *n = NULL;
	pthread_mutex_lock(&s->lock);
	centry **pp = find_slot(s, id);
	if (pp && *pp && (*pp)->pins) {
		n = (*pp)->node;
		prolly__node_ref(n);
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

void prolly__cache_put(prolly__cache *c, pnode *n, uint64_t *evicted)
{
	stripe *s = stripe_of(c, &n->id);
	pthread_mutex_lock(&s->lock);
	if (s->budget >= charge_of(n)) /* a node larger than the stripe budget is not worth caching */
		insert(s, n);
	*evicted += evict(s);
	pthread_mutex_unlock(&s->lock);
}

void prolly__cache_pin(prolly__cache *c, pnode *n)
{
	stripe *s = stripe_of(c, &n->id);
	pthread_mutex_lock(&s->lock);
	centry *e = insert(s, n);
	if (e) {
		if (!e->pins) { /* CA1, CA2 */
			lru_unlink(s, e);
			s->bytes -= e->charge;
		}
		e->pins++;
	}
	pthread_mutex_unlock(&s->lock);
}

uint64_t prolly__cache_unpin(prolly__cache *c, const prolly_id *id)
{
	stripe *s = stripe_of(c, id);
	uint64_t evicted = 0;
	pthread_mutex_lock(&s->lock);
	centry **pp = find_slot(s, id);
	if (pp && *pp && (*pp)->pins) {
		centry *e = *pp;
		if (--e->pins == 0) {
			lru_push(s, e);
			s->bytes += e->charge;
			evicted = evict(s);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return evicted;
}

void prolly__cache_retain(prolly__cache *c, int (*keep)(void *payload, const prolly_id *id),
                          void *payload)
{
	for (int i = 0; i < STRIPES; i++) {
		stripe *s = &c->s[i];
		pthread_mutex_lock(&s->lock);
		centry *e = s->tail;
		while (e) {
			centry *prev = e->prev; /* only unpinned entries are on the LRU list (CA1) */
			if (!keep(payload, &e->node->id))
				remove_entry(s, e);
			e = prev;
		}
		pthread_mutex_unlock(&s->lock);
	}
}

void prolly__cache_clear(prolly__cache *c)
{
	for (int i = 0; i < STRIPES; i++) {
		stripe *s = &c->s[i];
		pthread_mutex_lock(&s->lock);
		while (s->tail)
			remove_entry(s, s->tail);
		pthread_mutex_unlock(&s->lock);
	}
}

void prolly__cache_free(prolly__cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < STRIPES; i++) {
		stripe *s = &c->s[i];
		for (size_t j = 0; j < s->cap; j++) {
			centry *e = s->table[j];
			while (e) {
				centry *next = e->hnext;
				prolly__node_unref(e->node);
				free(e);
				e = next;
			}
		}
		free(s->table);
		pthread_mutex_destroy(&s->lock);
	}
	free(c);
}
