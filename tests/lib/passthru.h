/*
 * passthru.h - the tests' one pass-through store: a prolly_store that forwards every call to
 * another store, for a test that wants to watch, slow down, damage or fail a few of them.
 *
 * Embed a tp_store as the first member of your struct, call tp_init, then replace the members of
 * base you want to change; your functions reach the wrapped store through tp_inner(st) (its
 * functions are called as tp_inner(st)->get_nodes(tp_inner(st), ...)). on_call, when set, runs
 * before every forwarded call (also those you replaced, if they call tp_note). The wrapper owns
 * the inner store unless keep_inner is set; tp_close closes it (and frees the wrapper with
 * free() when it was made by tp_new).
 */
#ifndef TESTS_PASSTHRU_H
#define TESTS_PASSTHRU_H

#include "prolly/store.h"

typedef struct tp_store {
	prolly_store base; /* must be first: what the engine sees */
	prolly_store *inner;
	int keep_inner; /* non-zero: tp_close leaves inner open (its owner closes it) */
	int owned;      /* made by tp_new: tp_close frees it */
	/* If set, called first by every forwarding function, with the member's name. */
	void (*on_call)(struct tp_store *w, const char *what);
} tp_store;

/* Makes w (zeroed first) forward every member inner has, at this library's interface version;
 * members inner lacks (or its version does not have) stay NULL. kind is inner's, flags too. */
void tp_init(tp_store *w, prolly_store *inner);

/* calloc(size) (size >= sizeof(tp_store)), tp_init, and marks it for tp_close to free. NULL on
 * failure (inner is then closed). */
void *tp_new(size_t size, prolly_store *inner);

/* The wrapped store. */
static inline prolly_store *tp_inner(prolly_store *st)
{
	return ((tp_store *)(void *)st)->inner;
}

/* Calls on_call, if set. */
void tp_note(prolly_store *st, const char *what);

/* The forwarders, for a replacement that wants to call the default after its own work. */
int tp_get_nodes(prolly_store *st, const prolly_id *ids, size_t n, prolly_store_found_fn found,
                 void *payload);
int tp_write(prolly_store *st, prolly_store_write *w);
void tp_close(prolly_store *st);

#endif
