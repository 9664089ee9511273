/*
 * log.c - the history of a commit, newest first (prolly_log): a walk of the commit graph
 * (commit_graph.c) that always reports the newest commit of its frontier, each commit once.
 */
#include "internal.h"

#include <stdlib.h>

static void heap_push(const prolly__graph *g, size_t *h, size_t *n, size_t x)
{
	size_t i = (*n)++;
	h[i] = x;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!prolly__graph_newer(g, h[i], h[p]))
			break;
		size_t t = h[i];
		h[i] = h[p];
		h[p] = t;
		i = p;
	}
}

static size_t heap_pop(const prolly__graph *g, size_t *h, size_t *n)
{
	size_t top = h[0], i = 0;
	h[0] = h[--*n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < *n && prolly__graph_newer(g, h[l], h[m]))
			m = l;
		if (r < *n && prolly__graph_newer(g, h[r], h[m]))
			m = r;
		if (m == i)
			break;
		size_t t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
	return top;
}

/* The walk from heads[0..n). With one head (n 1, strict) a head that is not stored is an error;
 * without strict, a head that cannot be read is passed over like a commit retention removed. */
static int walk(prolly_db *db, const prolly_id *heads, size_t n, int strict, prolly_commit_fn fn,
                void *payload, const char *what)
{
	prolly__graph g;
	prolly__ilist load = {0}, heap = {0};
	size_t start = 0;
	int rc = 0, reported = 0;

	prolly__graph_init(&g, db, 1);
	if (!db || (!heads && n) || !fn) {
		rc = prolly_set_error(PROLLY_EINVAL, "prolly_log needs a handle, a commit and a callback");
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		size_t k;
		if ((rc = prolly__graph_get(&g, &heads[i], &k)))
			goto cleanup;
		if (i == 0)
			start = k;
		if (!g.v[k].queued) {
			g.v[k].queued = 1;
			if ((rc = prolly__ilist_push(&load, k)))
				goto cleanup;
		}
	}
	for (;;) {
		/* Every commit known but not yet loaded is loaded (one call) before the next is chosen,
		 * so the one chosen is the newest of the whole frontier. */
		if (load.n) {
			if ((rc = prolly__graph_load(&g, load.v, load.n)))
				goto cleanup;
			for (size_t i = 0; i < load.n; i++) {
				size_t j = load.v[i];
				if (g.v[j].state != PROLLY__G_LOADED) {
					if (strict && j == start) {
						rc = prolly__commit_not_found(heads);
						goto cleanup;
					}
					continue; /* removed by retention: history stops here, quietly */
				}
				if (PROLLY__GROW(heap.v, heap.cap, heap.n + 1, 16)) {
					rc = prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
					goto cleanup;
				}
				heap_push(&g, heap.v, &heap.n, j);
			}
			load.n = 0;
		}
		if (!heap.n)
			break;
		size_t j = heap_pop(&g, heap.v, &heap.n);
		prolly_commit *c = g.v[j].c;
		g.v[j].c = NULL;
		reported = 1;
		rc = fn(payload, c);
		for (size_t p = 0; !rc && p < c->n_parents; p++) {
			size_t k;
			if ((rc = prolly__graph_get(&g, &c->parents[p], &k)))
				break;
			if (!g.v[k].queued) {
				g.v[k].queued = 1; /* visited once */
				rc = prolly__ilist_push(&load, k);
			}
		}
		prolly_commit_free(c);
		if (rc)
			goto cleanup;
	}
cleanup:
	/* Before the first commit is reported, a "corrupt commit" may be the caller's wrong id. */
	if (!reported && what)
		rc = prolly__commit_named_error(db, rc, heads, what);
	free(load.v);
	free(heap.v);
	prolly__graph_dispose(&g);
	return rc;
}

int prolly__log_walk(prolly_db *db, const prolly_id *commit, prolly_commit_fn fn, void *payload,
                     const char *what)
{
	return walk(db, commit, 1, 1, fn, payload, what);
}

int prolly__log_walk_heads(prolly_db *db, const prolly_id *heads, size_t n, prolly_commit_fn fn,
                           void *payload)
{
	return walk(db, heads, n, 0, fn, payload, NULL);
}

int prolly_log(prolly_db *db, const prolly_id *commit, prolly_commit_fn fn, void *payload)
{
	return prolly__log_walk(db, commit, fn, payload, "log");
}
