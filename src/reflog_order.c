/*
 * reflog_order.c - the order prolly_reflog lists entries in: the order each ref's moves were
 * written, not the order of their writers' clocks.
 *
 * A logged ref moves only by compare-and-swap, so the old value of each move is the new value of
 * the move written just before it (for a creation, "absent": the move before was a deletion, or
 * there was none). An entry's time is its writer's clock, which may run fast or slow, and two
 * moves may read the same microsecond. So a ref's entries are put in a chain, newest first:
 *
 *   RO1 the last move written is one into the value that more entries move into than out of
 *       (the ref's value now, when nothing is missing), the newest by time of those; if there
 *       is none (the ref is back at the value it started from, absent say), the newest entry;
 *   RO2 the move before an entry is an unused one whose new value is that entry's old value, the
 *       newest by time if several (a value the ref held more than once); if there is none (gc
 *       expired the entries before, or the move was queued with PROLLY_REF_EXPECT_ANY and so
 *       records no old value), the chain goes on from the newest entry left.
 * Where the ref held a value more than once, the entries' times decide between the moves that
 * fit the chain equally: a ref deleted and made again twice ends in two chains of moves whose
 * order only the clocks tell.
 *
 *   RO3 the listing of several refs keeps each ref's order, and goes newest first by time
 *       otherwise: an entry counts as no newer than the one written after it on its ref.
 *
 * Cost: sorting, O(n log n) for n entries; no store call.
 */
#include "internal.h"

#include <stdlib.h>

typedef struct item {
	const prolly__reflog *e;
	size_t i;    /* index in the caller's array */
	size_t rank; /* in its ref's entries, newest first by (time, id) */
	size_t pos;  /* in its ref's chain, newest first */
	int64_t eff; /* its time, no newer than that of the entry written after it (RO3) */
	int used;
} item;

static int state_cmp(int ha, const prolly_id *a, int hb, const prolly_id *b)
{
	if (ha != hb)
		return ha - hb;
	return ha ? memcmp(a->bytes, b->bytes, PROLLY_ID_SIZE) : 0;
}

static int newer_cmp(const prolly__reflog *x, const prolly__reflog *y)
{
	if (x->time_us != y->time_us)
		return x->time_us > y->time_us ? -1 : 1;
	return -memcmp(x->id.bytes, y->id.bytes, PROLLY_ID_SIZE);
}

/* By ref, then newest first. */
static int by_ref_time(const void *a, const void *b)
{
	const item *x = a, *y = b;
	int c = strcmp(x->e->ref, y->e->ref);
	return c ? c : newer_cmp(x->e, y->e);
}

/* Pointers into a ref's items by new value (or old value), then rank. */
static int by_new(const void *a, const void *b)
{
	const item *x = *(item *const *)a, *y = *(item *const *)b;
	int c = state_cmp(x->e->has_new, &x->e->new_id, y->e->has_new, &y->e->new_id);
	return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

static int by_old(const void *a, const void *b)
{
	const item *x = *(item *const *)a, *y = *(item *const *)b;
	int c = state_cmp(x->e->has_old, &x->e->old_id, y->e->has_old, &y->e->old_id);
	return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

/* The listing order (RO3). */
static int by_eff(const void *a, const void *b)
{
	const item *x = a, *y = b;
	if (x->eff != y->eff)
		return x->eff > y->eff ? -1 : 1;
	int c = strcmp(x->e->ref, y->e->ref);
	return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* First index in s[0..n) (sorted by by_new, or by_old when old) whose value is not below (has,
 * id), or (upper) above it. */
static size_t bound(item *const *s, size_t n, int old, int has, const prolly_id *id, int upper)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const prolly__reflog *e = s[mid]->e;
		int c = old ? state_cmp(e->has_old, &e->old_id, has, id)
		            : state_cmp(e->has_new, &e->new_id, has, id);
		if (c < 0 || (upper && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* How many of s[0..n) have the value (has, id). */
static size_t count(item *const *s, size_t n, int old, int has, const prolly_id *id)
{
	return bound(s, n, old, has, id, 1) - bound(s, n, old, has, id, 0);
}

/* Orders one ref's items v[0..n) (sorted newest first) into a chain: sets pos and eff. */
static int chain(item *v, size_t n)
{
	item **bynew = malloc(n * sizeof(*bynew)), **byold = malloc(n * sizeof(*byold)), *cur = NULL;
	size_t *skip = malloc(n * sizeof(*skip)), newest = 0;
	int rc = 0;
	if (!bynew || !byold || !skip) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory ordering %zu reflog entries", n);
		goto cleanup;
	}
	for (size_t k = 0; k < n; k++) {
		v[k].rank = k;
		bynew[k] = byold[k] = &v[k];
		skip[k] = k;
	}
	qsort(bynew, n, sizeof(*bynew), by_new);
	qsort(byold, n, sizeof(*byold), by_old);
	for (size_t pos = 0; pos < n; pos++) {
		item *next = NULL;
		if (cur) { /* RO2: the newest unused move into cur's old value */
			const prolly__reflog *c = cur->e;
			size_t a = bound(bynew, n, 0, c->has_old, &c->old_id, 0);
			size_t z = a + count(bynew, n, 0, c->has_old, &c->old_id);
			/* skip[a]: where the run starting at a has no used item before (amortized); an
			 * empty run (no move into that value) may start at n, past skip's end */
			while (a < z && skip[a] < z && bynew[skip[a]]->used)
				skip[a]++;
			if (a < z && skip[a] < z)
				next = bynew[skip[a]];
		} else { /* RO1: into the value more entries move into than out of */
			for (size_t k = 0; k < n && !next; k++) {
				const prolly__reflog *e = v[k].e;
				if (!v[k].used && count(bynew, n, 0, e->has_new, &e->new_id) >
				                      count(byold, n, 1, e->has_new, &e->new_id))
					next = &v[k];
			}
		}
		if (!next) { /* none, or a gap in the chain: the newest entry left */
			while (v[newest].used)
				newest++;
			next = &v[newest];
		}
		next->used = 1;
		next->pos = pos;
		next->eff = cur ? PROLLY_MIN(next->e->time_us, cur->eff) : next->e->time_us;
		cur = next;
	}
cleanup:
	free(bynew);
	free(byold);
	free(skip);
	return rc;
}

int prolly__reflog_order(prolly__reflog *e, size_t n)
{
	item *v = NULL;
	prolly__reflog *tmp = NULL;
	int rc = 0;
	if (n < 2)
		return 0;
	v = calloc(n, sizeof(*v));
	tmp = malloc(n * sizeof(*tmp));
	if (!v || !tmp) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory ordering %zu reflog entries", n);
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		v[i].e = &e[i];
		v[i].i = i;
	}
	qsort(v, n, sizeof(*v), by_ref_time);
	for (size_t g = 0, end; g < n; g = end) {
		for (end = g + 1; end < n && strcmp(v[end].e->ref, v[g].e->ref) == 0; end++)
			;
		if ((rc = chain(v + g, end - g)))
			goto cleanup;
	}
	qsort(v, n, sizeof(*v), by_eff);
	for (size_t k = 0; k < n; k++)
		tmp[k] = e[v[k].i];
	memcpy(e, tmp, n * sizeof(*e));
cleanup:
	free(v);
	free(tmp);
	return rc;
}
