/*
 * idmap.c - the library's one table keyed by id: open addressing with linear probing, from a
 * node or commit id to a non-zero value (a pointer, an index + 1, or just 1 for a set).
 *
 *   I1  cap is 0 or a power of two; len < cap whenever cap > 0 (at most 3/4 full).
 *   I2  a slot is empty iff its val is 0; an id is in at most one slot.
 *   I3  an id's probe starts at the first 8 bytes of the id (ids are SHA-256: already uniform)
 *       masked to cap, and walks forward without passing an empty slot.
 *
 * The slot order is a function of the insertion order and the ids alone, so walking the slots
 * (prolly__idmap's users may) gives the same order on every run.
 */
#include "internal.h"

#include <stdlib.h>

#define FIRST_CAP 64

static size_t start_of(const prolly_id *id, size_t cap)
{
	uint64_t h;
	memcpy(&h, id->bytes, sizeof(h));
	return (size_t)h & (cap - 1); /* I3 */
}

static void place(prolly__idmap_slot *slots, size_t cap, const prolly_id *id, uintptr_t val)
{
	size_t i = start_of(id, cap);
	while (slots[i].val)
		i = (i + 1) & (cap - 1);
	slots[i].id = *id;
	slots[i].val = val;
}

void prolly__idmap_init(prolly__idmap *m)
{
	m->slots = NULL;
	m->cap = m->len = 0;
}

void prolly__idmap_dispose(prolly__idmap *m)
{
	free(m->slots);
	prolly__idmap_init(m);
}

static prolly__idmap_slot *find(const prolly__idmap *m, const prolly_id *id)
{
	if (!m->cap)
		return NULL;
	for (size_t i = start_of(id, m->cap);; i = (i + 1) & (m->cap - 1)) {
		prolly__idmap_slot *s = &m->slots[i];
		if (!s->val)
			return NULL; /* I2, I3: the id would be before the first empty slot */
		if (prolly_id_equal(&s->id, id))
			return s;
	}
}

uintptr_t prolly__idmap_get(const prolly__idmap *m, const prolly_id *id)
{
	const prolly__idmap_slot *s = find(m, id);
	return s ? s->val : 0;
}

int prolly__idmap_put(prolly__idmap *m, const prolly_id *id, uintptr_t val)
{
	assert(val != 0); /* I2 */
	prolly__idmap_slot *s = find(m, id);
	if (s) {
		s->val = val;
		return 0;
	}
	if ((m->len + 1) * 4 > m->cap * 3) { /* I1 */
		size_t ncap = m->cap ? m->cap * 2 : FIRST_CAP;
		prolly__idmap_slot *ns = ncap <= SIZE_MAX / sizeof(*ns) ? calloc(ncap, sizeof(*ns)) : NULL;
		if (!ns)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory growing an id table to %zu ids",
			                        ncap);
		for (size_t i = 0; i < m->cap; i++)
			if (m->slots[i].val)
				place(ns, ncap, &m->slots[i].id, m->slots[i].val);
		free(m->slots);
		m->slots = ns;
		m->cap = ncap;
	}
	place(m->slots, m->cap, id, val);
	m->len++;
	return 0;
}
