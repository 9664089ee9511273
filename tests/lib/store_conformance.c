/*
 * store_conformance.c - the store conformance suite (see store_conformance.h): the checks, the
 * data, the store helpers the cases share (store_conformance_int.h) and the runner. The cases are
 * in store_conformance_nodes.c, store_conformance_refs.c and store_conformance_history.c.
 */
#include "store_conformance_int.h"

#include "rng.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- checking --------------------------------------------------------------------------------- */

static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER;

void cf_fail(cf_case *t, int line, const char *what, int rc, int want)
{
	pthread_mutex_lock(&report_mu);
	if (rc == want)
		printf("# %s: %s: line %d: check failed: %s\n", t->label, t->name, line, what);
	else
		printf("# %s: %s: line %d: %s returned %d (%s), want %d; last error: %s\n", t->label,
		       t->name, line, what, rc, prolly_strerror(rc), want, prolly_last_error());
	fflush(stdout);
	t->bad = 1;
	pthread_mutex_unlock(&report_mu);
}

/* ---- data ------------------------------------------------------------------------------------- */

/* One splitmix64 output for state x (a pure function of x). */
static uint64_t mix(uint64_t x)
{
	return bench_splitmix64(&x);
}

/* A made-up id: distinct for distinct (tag, i). */
prolly_id cf_make_id(uint64_t tag, uint64_t i)
{
	prolly_id id;
	uint64_t s = mix(tag * 0x100000001b3ULL ^ mix(i));
	for (int k = 0; k < PROLLY_ID_SIZE; k += 8) {
		s = mix(s);
		for (int j = 0; j < 8; j++)
			id.bytes[k + j] = (unsigned char)(s >> (8 * j));
	}
	return id;
}

void cf_fill(unsigned char *buf, size_t size, uint64_t seed)
{
	uint64_t s = mix(seed);
	for (size_t i = 0; i < size; i++) {
		if (i % 8 == 0)
			s = mix(s + i);
		buf[i] = (unsigned char)(s >> (8 * (i % 8)));
	}
}

cf_tnode cf_tnode_make(uint64_t tag, uint64_t i, size_t size)
{
	cf_tnode n;
	n.id = cf_make_id(tag, i);
	n.size = size;
	n.data = malloc(size ? size : 1);
	if (n.data)
		cf_fill(n.data, size, tag * 7919 + i);
	return n;
}

void cf_tnode_free(cf_tnode *n)
{
	free(n->data);
	n->data = NULL;
}

prolly_store_node cf_as_store_node(const cf_tnode *n)
{
	prolly_store_node s = {n->id, n->data, n->size};
	return s;
}

/* ---- store helpers ---------------------------------------------------------------------------- */

prolly_store_write cf_write_of(prolly_store_node *nodes, size_t n_nodes, prolly_ref_update *refs,
                               size_t n_refs)
{
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = nodes;
	w.n_nodes = n_nodes;
	w.refs = refs;
	w.n_refs = n_refs;
	return w;
}

int cf_write_nodes(prolly_store *st, const cf_tnode *nodes, size_t n, int durable)
{
	prolly_store_node *sn = calloc(n ? n : 1, sizeof(*sn));
	if (!sn)
		return PROLLY_ENOMEM;
	for (size_t i = 0; i < n; i++)
		sn[i] = cf_as_store_node(&nodes[i]);
	prolly_store_write w = cf_write_of(sn, n, NULL, 0);
	w.durable = durable;
	int rc = st->write(st, &w);
	free(sn);
	return rc;
}

prolly_ref_update cf_ref_update(const char *name, prolly_ref_expect expect,
                                const prolly_id *expected, int remove, const prolly_id *value)
{
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = name;
	u.expect = expect;
	if (expected)
		u.expected = *expected;
	u.remove = remove;
	if (value)
		u.value = *value;
	return u;
}

int cf_write_refs(prolly_store *st, prolly_ref_update *refs, size_t n, uint64_t *epoch_out)
{
	prolly_store_write w = cf_write_of(NULL, 0, refs, n);
	w.durable = 1;
	int rc = st->write(st, &w);
	if (epoch_out)
		*epoch_out = w.current_epoch;
	return rc;
}

int cf_set_ref(prolly_store *st, const char *name, const prolly_id *value)
{
	prolly_ref_update u = cf_ref_update(name, PROLLY_REF_EXPECT_ANY, NULL, 0, value);
	return cf_write_refs(st, &u, 1, NULL);
}

/* One node fetched: 1 found (copied into got, up to cap bytes; size in *size), 0 absent. */
typedef struct got1 {
	int calls;
	size_t size;
	size_t index;
	unsigned char *buf;
	size_t cap;
} got1;

static int got1_fn(void *payload, size_t index, const void *data, size_t size)
{
	got1 *g = payload;
	g->calls++;
	g->index = index;
	g->size = size;
	free(g->buf);
	g->buf = malloc(size ? size : 1);
	if (!g->buf)
		return PROLLY_ENOMEM;
	memcpy(g->buf, data, size);
	return 0;
}

/* Checks that node n is stored with exactly its bytes. */
int cf_has_node(prolly_store *st, const cf_tnode *n)
{
	got1 g;
	memset(&g, 0, sizeof(g));
	int rc = st->get_nodes(st, &n->id, 1, got1_fn, &g);
	int ok = rc == 0 && g.calls == 1 && g.index == 0 && g.size == n->size &&
	         (n->size == 0 || memcmp(g.buf, n->data, n->size) == 0);
	free(g.buf);
	return ok;
}

int cf_lacks_node(prolly_store *st, const prolly_id *id)
{
	got1 g;
	memset(&g, 0, sizeof(g));
	int rc = st->get_nodes(st, id, 1, got1_fn, &g);
	free(g.buf);
	return rc == 0 && g.calls == 0;
}

int cf_ref_is(prolly_store *st, const char *name, const prolly_id *want)
{
	prolly_id got;
	int rc = st->get_ref(st, name, &got, NULL);
	if (!want)
		return rc == PROLLY_ENOTFOUND;
	return rc == 0 && prolly_id_equal(&got, want);
}

/* A get_nodes callback counting its calls (payload: int). */
int cf_count_fn(void *payload, size_t index, const void *data, size_t size)
{
	(void)index;
	(void)data;
	(void)size;
	(*(int *)payload)++;
	return 0;
}

/* A list_refs callback keeping the first 16 refs (payload: cf_listed). */
int cf_listed_fn(void *payload, const char *name, const prolly_id *value)
{
	cf_listed *l = payload;
	if (l->n < 16) {
		snprintf(l->names[l->n], sizeof(l->names[l->n]), "%s", name);
		l->values[l->n] = *value;
	}
	l->n++;
	if (l->stop_after && l->n >= l->stop_after)
		return 55;
	return 0;
}

/* ---- the runner ------------------------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(cf_case *t, prolly_store *st);
} cases[] = {
    {"missing ids are not reported", cf_case_missing},
    {"put then get", cf_case_put_get},
    {"duplicate and missing ids answered by index", cf_case_duplicates},
    {"re-putting a node is idempotent", cf_case_reput},
    {"nodes and refs are written atomically", cf_case_atomic_write},
    {"ref create, move, delete and unconditional set", cf_case_cas},
    {"a conflict reports the current value and writes nothing", cf_case_conflict_writes_nothing},
    {"two refs, one expectation fails: neither applies", cf_case_two_refs_one_fails},
    {"list_refs order and prefix", cf_case_list_refs},
    {"hundreds of refs created, moved and removed in one write", cf_case_many_refs},
    {"ref names are validated", cf_case_ref_names},
    {"get_refs: many refs by position in one call", cf_case_get_refs},
    {"the gc epoch check", cf_case_epoch},
    {"gc keeps what keep() keeps and bumps the epoch", cf_case_gc},
    {"stat counts nodes and bytes", cf_case_stat},
    {"round trips are counted", cf_case_round_trips},
    {"a ref and the objects it leads to in one call", cf_case_ref_objects},
    {"objects and the commits they descend from in one call", cf_case_ancestors},
    {"ids in a range, in order, in one call", cf_case_find_ids},
    {"which ids are stored, in one call", cf_case_has_nodes},
    {"16 threads race on one ref", cf_case_race},
    {"a large node round trip", cf_case_large},
    {"10000 nodes in one write", cf_case_many},
    {"the reflog through the engine", cf_case_reflog},
};

int store_conformance_run(const char *label, store_open_fresh_fn open_fresh, void *ctx, int *passed,
                          int *failed)
{
	int bad_here = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cf_case t = {label, cases[i].name, 0, NULL};
		prolly_store *st = open_fresh(ctx);
		if (!st) {
			printf("# %s: %s: cannot open a fresh store: %s\n", label, cases[i].name,
			       prolly_last_error());
			t.bad = 1;
		} else {
			cases[i].fn(&t, st);
			prolly_store_close(st);
		}
		int n = *passed + *failed + 1;
		if (t.bad) {
			printf("not ok %d - %s: %s\n", n, label, cases[i].name);
			(*failed)++;
			bad_here++;
		} else if (t.skip) {
			printf("ok %d - %s: %s # SKIP %s\n", n, label, cases[i].name, t.skip);
			(*passed)++;
		} else {
			printf("ok %d - %s: %s\n", n, label, cases[i].name);
			(*passed)++;
		}
		fflush(stdout);
	}
	return bad_here;
}
