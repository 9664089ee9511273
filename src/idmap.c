/*
 * idmap.c - the library's one table keyed by id: from a node or commit id to an entry number
 * (0, 1, 2... in the order the ids were added) and a value (a pointer, an index + 1, or 0).
 *
 * The ids live in a dense array, one per entry (ids[], vals[]); the hash part is open
 * addressing with linear probing over small slots that hold only an entry number and a tag,
 * so a probe reads 8 bytes a slot and an id only when its tag matches. Ids are SHA-256, so
 * their bytes are already uniform: the first 8 choose the slot, the next 4 are the tag.
 *
 *   I1  cap is 0 or a power of two; len * 2 <= cap whenever cap > 0 (at most half full).
 *   I2  a slot is empty iff its at is 0; otherwise at - 1 < len is an entry number and its tag
 *       is tag_of(ids[at - 1]); every entry has exactly one slot, and an id at most one entry.
 *   I3  an id's probe starts at start_of(id) and walks forward without passing an empty slot.
 *   I4  len < UINT32_MAX (an entry number + 1 fits a slot).
 *
 * The slot order is a function of the insertion order and the ids alone, so walking the slots
 * (the node sets do) gives the same order on every run.
 */
#include "internal.h"

#include <stdlib.h>

#define FIRST_CAP 64

static size_t start_of(const prolly_id *id, size_t cap)
{
	return (size_t)prolly__rd64(id->bytes) & (cap - 1); /* I3 */
}

static uint32_t tag_of(const prolly_id *id)
{
	uint32_t t;
	memcpy(&t, id->bytes + 8, sizeof(t));
	return t;
}

static void place(prolly__idmap_slot *slots, size_t cap, const prolly_id *id, size_t entry)
{
	size_t i = start_of(id, cap);
	while (slots[i].at)
		i = (i + 1) & (cap - 1);
	slots[i].tag = tag_of(id);
	slots[i].at = (uint32_t)(entry + 1);
}

void prolly__idmap_init(prolly__idmap *m)
{
	memset(m, 0, sizeof(*m));
}

void prolly__idmap_dispose(prolly__idmap *m)
{
	free(m->slots);
	free(m->ids);
	free(m->vals);
	prolly__idmap_init(m);
}

size_t prolly__idmap_find(const prolly__idmap *m, const prolly_id *id)
{
	if (!m->cap)
		return PROLLY__IDMAP_NONE;
	uint32_t tag = tag_of(id);
	for (size_t i = start_of(id, m->cap);; i = (i + 1) & (m->cap - 1)) {
		const prolly__idmap_slot *s = &m->slots[i];
		if (!s->at)
			return PROLLY__IDMAP_NONE; /* I2, I3: the id would be before the first empty slot */
		if (s->tag == tag && memcmp(m->ids[s->at - 1].bytes, id->bytes, PROLLY_ID_SIZE) == 0)
			return s->at - 1;
	}
}

int prolly__idmap_add(prolly__idmap *m, const prolly_id *id, size_t *entry)
{
	size_t at = prolly__idmap_find(m, id);
	if (at != PROLLY__IDMAP_NONE) {
		*entry = at;
		return 0;
	}
	if (m->len >= UINT32_MAX - 1) /* I4 */
		return prolly_set_error(PROLLY_ENOMEM, "an id table is full (%zu ids)", m->len);
	if (PROLLY__GROW(m->ids, m->idcap, m->len + 1, FIRST_CAP / 2) ||
	    PROLLY__GROW(m->vals, m->valcap, m->len + 1, FIRST_CAP / 2))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory growing an id table to %zu ids",
		                        m->len + 1);
	if ((m->len + 1) * 2 > m->cap) { /* I1 */
		size_t ncap = m->cap ? m->cap * 2 : FIRST_CAP;
		prolly__idmap_slot *ns = ncap <= SIZE_MAX / sizeof(*ns) ? calloc(ncap, sizeof(*ns)) : NULL;
		if (!ns)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory growing an id table to %zu ids",
			                        ncap / 2);
		for (size_t e = 0; e < m->len; e++)
			place(ns, ncap, &m->ids[e], e);
		free(m->slots);
		m->slots = ns;
		m->cap = ncap;
	}
	m->ids[m->len] = *id;
	m->vals[m->len] = 0;
	place(m->slots, m->cap, id, m->len);
	*entry = m->len++;
	assert(m->len * 2 <= m->cap && m->len < UINT32_MAX); /* I1, I4 */
	return 1;
}

uintptr_t prolly__idmap_get(const prolly__idmap *m, const prolly_id *id)
{
	size_t at = prolly__idmap_find(m, id);
	return at == PROLLY__IDMAP_NONE ? 0 : m->vals[at];
}

int prolly__idmap_put(prolly__idmap *m, const prolly_id *id, uintptr_t val)
{
	size_t at;
	int rc = prolly__idmap_add(m, id, &at);
	if (rc < 0)
		return rc;
	m->vals[at] = val;
	return 0;
}
