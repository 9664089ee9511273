/*
 * ancestors.c - the breadth-first walk of get_ancestors (include/prolly/store.h) for the stores
 * that read an object by id in memory (LMDB, memory): one walk, the store saying only how an
 * object is fetched.
 *
 * The list of ids met is also the queue: ids[0..n) without repeats, then the parents of every
 * commit reported, in the order met, each once, at most `limit` ids in all (absent ones
 * included). Which ids were met is a hash set of indexes into the queue (open addressing,
 * linear probing, at most half full), so a walk of `limit` ids costs O(limit) lookups; the ids
 * are SHA-256, so their first eight bytes are already spread.
 */
#include "store_int.h"

#include <stdlib.h>

typedef struct walk {
	prolly_id *q;     /* the queue: the ids met, in order */
	size_t nq, limit; /* nq <= limit */
	uint32_t *slots;  /* 0: empty, else 1 + an index into q */
	size_t mask;      /* slots has mask + 1 entries, a power of two >= 2 * limit */
} walk;

/* Adds id to the queue unless it is there or the queue is full. */
static void meet(walk *w, const prolly_id *id)
{
	size_t s = (size_t)prolly__rd64(id->bytes) & w->mask;
	for (; w->slots[s]; s = (s + 1) & w->mask)
		if (prolly_id_equal(&w->q[w->slots[s] - 1], id))
			return;
	if (w->nq == w->limit)
		return;
	w->q[w->nq] = *id;
	w->slots[s] = (uint32_t)++w->nq;
}

int prolly__store_ancestors(const char *who, const prolly_id *ids, size_t n, size_t limit,
                            const prolly_store_commit_layout *commit, prolly__store_get_fn get,
                            void *gp, prolly_store_obj_fn found, void *payload)
{
	walk w = {NULL, 0, 0, NULL, 0};
	size_t nslots = 2;
	int rc;

	if (!found || !commit || (n && !ids) || !get)
		return prolly_set_error(PROLLY_EINVAL, "%s: get_ancestors without ids, layout or callback",
		                        who);
	if ((rc = prolly__store_layout_check(commit, who)))
		return rc;
	w.limit = PROLLY_MAX(limit, n);
	if (!w.limit)
		return 0;
	if (w.limit > UINT32_MAX / 4)
		return prolly_set_error(PROLLY_ENOMEM, "%s: a history read of %zu objects is too large",
		                        who, w.limit);
	while (nslots < 2 * w.limit)
		nslots *= 2;
	w.mask = nslots - 1;
	w.q = malloc(w.limit * sizeof(*w.q));
	w.slots = calloc(nslots, sizeof(*w.slots));
	if (!w.q || !w.slots) {
		rc = prolly_set_error(PROLLY_ENOMEM, "%s: out of memory reading history", who);
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		meet(&w, &ids[i]);
	for (size_t head = 0; head < w.nq && !rc; head++) {
		const unsigned char *b;
		size_t size;
		if ((rc = get(gp, &w.q[head], &b, &size)) == PROLLY_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc || (rc = found(payload, &w.q[head], b, size)))
			break;
		if (size < commit->parents_at || memcmp(b, commit->magic, commit->magic_size) != 0)
			continue;
		uint32_t np = prolly__rd32(b + commit->count_at);
		for (uint32_t j = 0; j < np && w.nq < w.limit &&
		                     commit->parents_at + PROLLY_ID_SIZE * ((size_t)j + 1) <= size;
		     j++) {
			prolly_id pid;
			memcpy(pid.bytes, b + commit->parents_at + PROLLY_ID_SIZE * (size_t)j, PROLLY_ID_SIZE);
			meet(&w, &pid);
		}
	}
cleanup:
	free(w.q);
	free(w.slots);
	return rc;
}
