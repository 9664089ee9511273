/*
 * store_conformance_int.h - what the files of the store conformance suite share
 * (store_conformance.c: the checks, the data, the store helpers and the runner;
 * store_conformance_nodes.c, _refs.c and _history.c: the cases). Not for the backends' tests,
 * which see store_conformance.h only.
 *
 * Every case works through the prolly_store function table only, so any backend can run it.
 * Node ids are made up (stores do not verify hashes), bytes come from a seeded generator.
 */
#ifndef STORE_CONFORMANCE_INT_H
#define STORE_CONFORMANCE_INT_H

#include "store_conformance.h"

#include "prolly.h"
#include "prolly/store.h"

#include <stddef.h>
#include <stdint.h>

/* ---- checking ------------------------------------------------------------------------------ */

/* One case's state: a failed check sets bad (the case reports "not ok"); a case that cannot run
 * on this store sets skip. */
typedef struct cf_case {
	const char *label;
	const char *name;
	int bad;
	const char *skip; /* non-NULL: the case was skipped for this reason */
} cf_case;

/* Reports a failed check of case t (thread-safe: cases' threads check too) and marks it bad. */
void cf_fail(cf_case *t, int line, const char *what, int rc, int want);

#define CHECK(t, cond)                                                                             \
	do {                                                                                           \
		if (!(cond))                                                                               \
			cf_fail((t), __LINE__, #cond, 0, 0);                                                   \
	} while (0)

#define CHECK_RC(t, expr, want)                                                                    \
	do {                                                                                           \
		int rc_ = (expr);                                                                          \
		if (rc_ != (want))                                                                         \
			cf_fail((t), __LINE__, #expr, rc_, (want));                                            \
	} while (0)

/* Stops the case when it has failed so far. */
#define REQUIRE(t, cond)                                                                           \
	do {                                                                                           \
		CHECK(t, cond);                                                                            \
		if ((t)->bad)                                                                              \
			return;                                                                                \
	} while (0)

/* ---- data ---------------------------------------------------------------------------------- */

/* A made-up id: distinct for distinct (tag, i). */
prolly_id cf_make_id(uint64_t tag, uint64_t i);
/* size bytes of a generator seeded with seed. */
void cf_fill(unsigned char *buf, size_t size, uint64_t seed);

/* A node with its own buffer (cf_tnode_make: size bytes of the generator under
 * cf_make_id(tag, i); data NULL when out of memory); cf_tnode_free frees it. */
typedef struct cf_tnode {
	prolly_id id;
	unsigned char *data;
	size_t size;
} cf_tnode;
cf_tnode cf_tnode_make(uint64_t tag, uint64_t i, size_t size);
void cf_tnode_free(cf_tnode *n);
prolly_store_node cf_as_store_node(const cf_tnode *n);

/* ---- store helpers ------------------------------------------------------------------------- */

/* A write of the nodes and the ref updates given (NULL and 0 for none), every other field 0:
 * the caller sets the flags it tests. */
prolly_store_write cf_write_of(prolly_store_node *nodes, size_t n_nodes, prolly_ref_update *refs,
                               size_t n_refs);
/* A write of nodes alone; a write of refs alone (durable; the store's epoch into *epoch_out if
 * not NULL); an unconditional set of one ref. The store's return code. */
int cf_write_nodes(prolly_store *st, const cf_tnode *nodes, size_t n, int durable);
int cf_write_refs(prolly_store *st, prolly_ref_update *refs, size_t n, uint64_t *epoch_out);
int cf_set_ref(prolly_store *st, const char *name, const prolly_id *value);
prolly_ref_update cf_ref_update(const char *name, prolly_ref_expect expect,
                                const prolly_id *expected, int remove, const prolly_id *value);
/* Whether st holds node n with exactly its bytes; whether it lacks id; whether ref name is want
 * (NULL: absent). */
int cf_has_node(prolly_store *st, const cf_tnode *n);
int cf_lacks_node(prolly_store *st, const prolly_id *id);
int cf_ref_is(prolly_store *st, const char *name, const prolly_id *want);
/* A get_nodes callback counting its calls (payload: int). */
int cf_count_fn(void *payload, size_t index, const void *data, size_t size);

/* A list_refs callback keeping the first 16 refs' names and values (payload: cf_listed), counting
 * all; returns 55 at the stop_after-th ref when stop_after is set. */
typedef struct cf_listed {
	int n;
	char names[16][64];
	prolly_id values[16];
	int stop_after;
} cf_listed;
int cf_listed_fn(void *payload, const char *name, const prolly_id *value);

/* ---- the cases, each on a fresh store ------------------------------------------------------ */

/* store_conformance_nodes.c */
void cf_case_missing(cf_case *t, prolly_store *st);
void cf_case_put_get(cf_case *t, prolly_store *st);
void cf_case_duplicates(cf_case *t, prolly_store *st);
void cf_case_reput(cf_case *t, prolly_store *st);
void cf_case_stat(cf_case *t, prolly_store *st);
void cf_case_round_trips(cf_case *t, prolly_store *st);
void cf_case_large(cf_case *t, prolly_store *st);
void cf_case_many(cf_case *t, prolly_store *st);
void cf_case_has_nodes(cf_case *t, prolly_store *st);
void cf_case_find_ids(cf_case *t, prolly_store *st);
/* store_conformance_refs.c */
void cf_case_atomic_write(cf_case *t, prolly_store *st);
void cf_case_cas(cf_case *t, prolly_store *st);
void cf_case_conflict_writes_nothing(cf_case *t, prolly_store *st);
void cf_case_two_refs_one_fails(cf_case *t, prolly_store *st);
void cf_case_list_refs(cf_case *t, prolly_store *st);
void cf_case_get_refs(cf_case *t, prolly_store *st);
void cf_case_ref_names(cf_case *t, prolly_store *st);
void cf_case_race(cf_case *t, prolly_store *st);
void cf_case_many_refs(cf_case *t, prolly_store *st);
/* store_conformance_history.c */
void cf_case_epoch(cf_case *t, prolly_store *st);
void cf_case_gc(cf_case *t, prolly_store *st);
void cf_case_ref_objects(cf_case *t, prolly_store *st);
void cf_case_ancestors(cf_case *t, prolly_store *st);
void cf_case_reflog(cf_case *t, prolly_store *st);

#endif
