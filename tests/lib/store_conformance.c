/*
 * store_conformance.c - the store conformance suite (see store_conformance.h).
 *
 * Every case works through the prolly_store function table only, so any backend can run it.
 * Node ids are made up (stores do not verify hashes), bytes come from a seeded generator.
 */
#include "store_conformance.h"

#include "passthru.h"
#include "rng.h"

#include "format.h"
#include "internal.h" /* prolly__commit_layout, what the engine passes get_ancestors */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- checking --------------------------------------------------------------------------------- */

typedef struct sc {
	const char *label;
	const char *name;
	int bad;
	const char *skip; /* non-NULL: the case was skipped for this reason */
} sc;

static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER;

static void sc_fail(sc *t, int line, const char *what, int rc, int want)
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

#define CHECK(t, cond)                                                                             \
	do {                                                                                           \
		if (!(cond))                                                                               \
			sc_fail((t), __LINE__, #cond, 0, 0);                                                   \
	} while (0)

#define CHECK_RC(t, expr, want)                                                                    \
	do {                                                                                           \
		int rc_ = (expr);                                                                          \
		if (rc_ != (want))                                                                         \
			sc_fail((t), __LINE__, #expr, rc_, (want));                                            \
	} while (0)

/* Stops the case when it has failed so far. */
#define REQUIRE(t, cond)                                                                           \
	do {                                                                                           \
		CHECK(t, cond);                                                                            \
		if ((t)->bad)                                                                              \
			return;                                                                                \
	} while (0)

/* ---- data ------------------------------------------------------------------------------------- */

/* One splitmix64 output for state x (a pure function of x). */
static uint64_t mix(uint64_t x)
{
	return bench_splitmix64(&x);
}

/* A made-up id: distinct for distinct (tag, i). */
static prolly_id make_id(uint64_t tag, uint64_t i)
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

static void fill(unsigned char *buf, size_t size, uint64_t seed)
{
	uint64_t s = mix(seed);
	for (size_t i = 0; i < size; i++) {
		if (i % 8 == 0)
			s = mix(s + i);
		buf[i] = (unsigned char)(s >> (8 * (i % 8)));
	}
}

/* A node with its own buffer. */
typedef struct tnode {
	prolly_id id;
	unsigned char *data;
	size_t size;
} tnode;

static tnode tnode_make(uint64_t tag, uint64_t i, size_t size)
{
	tnode n;
	n.id = make_id(tag, i);
	n.size = size;
	n.data = malloc(size ? size : 1);
	if (n.data)
		fill(n.data, size, tag * 7919 + i);
	return n;
}

static void tnode_free(tnode *n)
{
	free(n->data);
	n->data = NULL;
}

static prolly_store_node as_store_node(const tnode *n)
{
	prolly_store_node s = {n->id, n->data, n->size};
	return s;
}

/* ---- store helpers ---------------------------------------------------------------------------- */

static int write_nodes(prolly_store *st, const tnode *nodes, size_t n, int durable)
{
	prolly_store_node *sn = calloc(n ? n : 1, sizeof(*sn));
	if (!sn)
		return PROLLY_ENOMEM;
	for (size_t i = 0; i < n; i++)
		sn[i] = as_store_node(&nodes[i]);
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = sn;
	w.n_nodes = n;
	w.durable = durable;
	int rc = st->write(st, &w);
	free(sn);
	return rc;
}

static prolly_ref_update ref_update(const char *name, prolly_ref_expect expect,
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

static int write_refs(prolly_store *st, prolly_ref_update *refs, size_t n, uint64_t *epoch_out)
{
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.refs = refs;
	w.n_refs = n;
	w.durable = 1;
	int rc = st->write(st, &w);
	if (epoch_out)
		*epoch_out = w.current_epoch;
	return rc;
}

static int set_ref(prolly_store *st, const char *name, const prolly_id *value)
{
	prolly_ref_update u = ref_update(name, PROLLY_REF_EXPECT_ANY, NULL, 0, value);
	return write_refs(st, &u, 1, NULL);
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
static int has_node(prolly_store *st, const tnode *n)
{
	got1 g;
	memset(&g, 0, sizeof(g));
	int rc = st->get_nodes(st, &n->id, 1, got1_fn, &g);
	int ok = rc == 0 && g.calls == 1 && g.index == 0 && g.size == n->size &&
	         (n->size == 0 || memcmp(g.buf, n->data, n->size) == 0);
	free(g.buf);
	return ok;
}

static int lacks_node(prolly_store *st, const prolly_id *id)
{
	got1 g;
	memset(&g, 0, sizeof(g));
	int rc = st->get_nodes(st, id, 1, got1_fn, &g);
	free(g.buf);
	return rc == 0 && g.calls == 0;
}

static int ref_is(prolly_store *st, const char *name, const prolly_id *want)
{
	prolly_id got;
	int rc = st->get_ref(st, name, &got, NULL);
	if (!want)
		return rc == PROLLY_ENOTFOUND;
	return rc == 0 && prolly_id_equal(&got, want);
}

/* ---- cases ------------------------------------------------------------------------------------ */

static int count_fn(void *payload, size_t index, const void *data, size_t size)
{
	(void)index;
	(void)data;
	(void)size;
	(*(int *)payload)++;
	return 0;
}

static void case_missing(sc *t, prolly_store *st)
{
	prolly_id ids[3] = {make_id(1, 1), make_id(1, 2), make_id(1, 3)};
	int calls = 0;
	CHECK_RC(t, st->get_nodes(st, ids, 3, count_fn, &calls), 0);
	CHECK(t, calls == 0);
	CHECK_RC(t, st->get_nodes(st, ids, 0, count_fn, &calls), 0);
	CHECK(t, calls == 0);
	prolly_id v;
	CHECK_RC(t, st->get_ref(st, "refs/heads/none", &v, NULL), PROLLY_ENOTFOUND);
}

static void case_put_get(sc *t, prolly_store *st)
{
	tnode n[4] = {tnode_make(2, 0, 1), tnode_make(2, 1, 100), tnode_make(2, 2, 4096),
	              tnode_make(2, 3, 12)};
	REQUIRE(t, n[0].data && n[1].data && n[2].data && n[3].data);
	CHECK_RC(t, write_nodes(st, n, 3, 1), 0);
	for (int i = 0; i < 3; i++)
		CHECK(t, has_node(st, &n[i]));
	CHECK(t, lacks_node(st, &n[3].id));
	for (int i = 0; i < 4; i++)
		tnode_free(&n[i]);
}

typedef struct by_index {
	int calls[8];
	size_t size[8];
	int same[8];
	const tnode *want[8];
	int stop_after; /* 0: never */
	int total;
} by_index;

static int by_index_fn(void *payload, size_t index, const void *data, size_t size)
{
	by_index *b = payload;
	b->total++;
	if (index < 8) {
		b->calls[index]++;
		b->size[index] = size;
		b->same[index] = b->want[index] && b->want[index]->size == size &&
		                 memcmp(b->want[index]->data, data, size) == 0;
	}
	if (b->stop_after && b->total >= b->stop_after)
		return 77;
	return 0;
}

static void case_duplicates(sc *t, prolly_store *st)
{
	tnode a = tnode_make(3, 0, 300), b = tnode_make(3, 1, 50);
	prolly_id x = make_id(3, 2), y = make_id(3, 3);
	REQUIRE(t, a.data && b.data);
	tnode both[2] = {a, b};
	CHECK_RC(t, write_nodes(st, both, 2, 0), 0);
	/* A, X, B, A, Y, B, A */
	prolly_id req[7] = {a.id, x, b.id, a.id, y, b.id, a.id};
	const tnode *want[7] = {&a, NULL, &b, &a, NULL, &b, &a};
	by_index r;
	memset(&r, 0, sizeof(r));
	for (int i = 0; i < 7; i++)
		r.want[i] = want[i];
	CHECK_RC(t, st->get_nodes(st, req, 7, by_index_fn, &r), 0);
	for (int i = 0; i < 7; i++) {
		if (want[i]) {
			CHECK(t, r.calls[i] == 1);
			CHECK(t, r.same[i]);
		} else {
			CHECK(t, r.calls[i] == 0);
		}
	}
	CHECK(t, r.total == 5);

	/* A non-zero callback result stops the call and is returned. */
	memset(&r, 0, sizeof(r));
	for (int i = 0; i < 7; i++)
		r.want[i] = want[i];
	r.stop_after = 2;
	CHECK_RC(t, st->get_nodes(st, req, 7, by_index_fn, &r), 77);
	CHECK(t, r.total == 2);
	tnode_free(&a);
	tnode_free(&b);
}

static void case_reput(sc *t, prolly_store *st)
{
	tnode a = tnode_make(4, 0, 500), b = tnode_make(4, 1, 40);
	REQUIRE(t, a.data && b.data);
	CHECK_RC(t, write_nodes(st, &a, 1, 1), 0);
	CHECK_RC(t, write_nodes(st, &a, 1, 1), 0);
	/* The same id twice in one write, and again with other bytes: the first bytes stay. */
	tnode twice[3] = {b, b, a};
	CHECK_RC(t, write_nodes(st, twice, 3, 0), 0);
	tnode other = tnode_make(4, 99, 500);
	REQUIRE(t, other.data);
	other.id = a.id;
	CHECK_RC(t, write_nodes(st, &other, 1, 0), 0);
	CHECK(t, has_node(st, &a));
	CHECK(t, has_node(st, &b));
	if (st->stat) {
		uint64_t nodes = 0, bytes = 0;
		CHECK_RC(t, st->stat(st, &nodes, &bytes), 0);
		CHECK(t, nodes == 2);
		CHECK(t, bytes == 540);
	}
	tnode_free(&a);
	tnode_free(&b);
	tnode_free(&other);
}

static void case_atomic_write(sc *t, prolly_store *st)
{
	tnode n[2] = {tnode_make(5, 0, 64), tnode_make(5, 1, 128)};
	REQUIRE(t, n[0].data && n[1].data);
	prolly_store_node sn[2] = {as_store_node(&n[0]), as_store_node(&n[1])};
	/* in name order (the engine sorts: S1 in store.h) */
	prolly_ref_update u[2] = {
	    ref_update("refs/heads/dev", PROLLY_REF_EXPECT_ANY, NULL, 0, &n[1].id),
	    ref_update("refs/heads/main", PROLLY_REF_EXPECT_ABSENT, NULL, 0, &n[0].id)};
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = sn;
	w.n_nodes = 2;
	w.refs = u;
	w.n_refs = 2;
	w.durable = 1;
	CHECK_RC(t, st->write(st, &w), 0);
	CHECK(t, u[0].conflict == 0 && u[1].conflict == 0);
	CHECK(t, w.current_epoch != 0);
	CHECK(t, has_node(st, &n[0]) && has_node(st, &n[1]));
	CHECK(t, ref_is(st, "refs/heads/main", &n[0].id));
	CHECK(t, ref_is(st, "refs/heads/dev", &n[1].id));
	uint64_t epoch = 0;
	prolly_id v;
	CHECK_RC(t, st->get_ref(st, "refs/heads/main", &v, &epoch), 0);
	CHECK(t, epoch == w.current_epoch);
	/* An empty write is fine and reports the epoch. */
	prolly_store_write empty;
	memset(&empty, 0, sizeof(empty));
	CHECK_RC(t, st->write(st, &empty), 0);
	CHECK(t, empty.current_epoch == epoch);
	tnode_free(&n[0]);
	tnode_free(&n[1]);
}

static void case_cas(sc *t, prolly_store *st)
{
	const char *r = "refs/heads/cas";
	prolly_id v1 = make_id(6, 1), v2 = make_id(6, 2), v3 = make_id(6, 3), v4 = make_id(6, 4);
	prolly_ref_update u;

	/* create */
	u = ref_update(r, PROLLY_REF_EXPECT_ABSENT, NULL, 0, &v1);
	CHECK_RC(t, write_refs(st, &u, 1, NULL), 0);
	CHECK(t, ref_is(st, r, &v1));
	u = ref_update(r, PROLLY_REF_EXPECT_ABSENT, NULL, 0, &v2);
	CHECK_RC(t, write_refs(st, &u, 1, NULL), PROLLY_ECONFLICT);
	CHECK(t, u.conflict == 1 && u.current_exists == 1 && prolly_id_equal(&u.current, &v1));
	CHECK(t, ref_is(st, r, &v1));

	/* move */
	u = ref_update(r, PROLLY_REF_EXPECT_VALUE, &v1, 0, &v2);
	CHECK_RC(t, write_refs(st, &u, 1, NULL), 0);
	CHECK(t, u.conflict == 0);
	CHECK(t, ref_is(st, r, &v2));
	u = ref_update(r, PROLLY_REF_EXPECT_VALUE, &v1, 0, &v3);
	CHECK_RC(t, write_refs(st, &u, 1, NULL), PROLLY_ECONFLICT);
	CHECK(t, u.conflict == 1 && u.current_exists == 1 && prolly_id_equal(&u.current, &v2));
	CHECK(t, ref_is(st, r, &v2));

	/* delete */
	u = ref_update(r, PROLLY_REF_EXPECT_VALUE, &v1, 1, NULL);
	CHECK_RC(t, write_refs(st, &u, 1, NULL), PROLLY_ECONFLICT);
	CHECK(t, ref_is(st, r, &v2));
	u = ref_update(r, PROLLY_REF_EXPECT_VALUE, &v2, 1, NULL);
	CHECK_RC(t, write_refs(st, &u, 1, NULL), 0);
	CHECK(t, ref_is(st, r, NULL));

	/* expecting a value of an absent ref */
	u = ref_update(r, PROLLY_REF_EXPECT_VALUE, &v2, 0, &v3);
	CHECK_RC(t, write_refs(st, &u, 1, NULL), PROLLY_ECONFLICT);
	CHECK(t, u.conflict == 1 && u.current_exists == 0);
	CHECK(t, ref_is(st, r, NULL));

	/* unconditional set, overwrite, delete, delete of an absent ref */
	u = ref_update(r, PROLLY_REF_EXPECT_ANY, NULL, 0, &v3);
	CHECK_RC(t, write_refs(st, &u, 1, NULL), 0);
	CHECK(t, ref_is(st, r, &v3));
	u = ref_update(r, PROLLY_REF_EXPECT_ANY, NULL, 0, &v4);
	CHECK_RC(t, write_refs(st, &u, 1, NULL), 0);
	CHECK(t, ref_is(st, r, &v4));
	u = ref_update(r, PROLLY_REF_EXPECT_ANY, NULL, 1, NULL);
	CHECK_RC(t, write_refs(st, &u, 1, NULL), 0);
	CHECK(t, ref_is(st, r, NULL));
	u = ref_update(r, PROLLY_REF_EXPECT_ANY, NULL, 1, NULL);
	CHECK_RC(t, write_refs(st, &u, 1, NULL), 0);
	CHECK(t, ref_is(st, r, NULL));
}

static void case_conflict_writes_nothing(sc *t, prolly_store *st)
{
	const char *r = "refs/heads/main";
	prolly_id v1 = make_id(7, 1), wrong = make_id(7, 2);
	tnode n = tnode_make(7, 3, 700);
	REQUIRE(t, n.data);
	CHECK_RC(t, set_ref(st, r, &v1), 0);
	prolly_store_node sn = as_store_node(&n);
	prolly_ref_update u = ref_update(r, PROLLY_REF_EXPECT_VALUE, &wrong, 0, &n.id);
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = &sn;
	w.n_nodes = 1;
	w.refs = &u;
	w.n_refs = 1;
	w.durable = 1;
	CHECK_RC(t, st->write(st, &w), PROLLY_ECONFLICT);
	CHECK(t, w.current_epoch != 0);
	CHECK(t, u.conflict == 1 && u.current_exists == 1 && prolly_id_equal(&u.current, &v1));
	CHECK(t, strlen(prolly_last_error()) > 0);
	CHECK(t, lacks_node(st, &n.id));
	CHECK(t, ref_is(st, r, &v1));
	tnode_free(&n);
}

static void case_two_refs_one_fails(sc *t, prolly_store *st)
{
	prolly_id v1 = make_id(8, 1), v2 = make_id(8, 2), v9 = make_id(8, 9);
	CHECK_RC(t, set_ref(st, "refs/heads/a", &v1), 0);
	prolly_ref_update u[2] = {ref_update("refs/heads/a", PROLLY_REF_EXPECT_VALUE, &v1, 0, &v2),
	                          ref_update("refs/heads/b", PROLLY_REF_EXPECT_VALUE, &v9, 0, &v2)};
	CHECK_RC(t, write_refs(st, u, 2, NULL), PROLLY_ECONFLICT);
	CHECK(t, u[1].conflict == 1 && u[1].current_exists == 0);
	CHECK(t, u[0].conflict == 0);
	CHECK(t, ref_is(st, "refs/heads/a", &v1));
	CHECK(t, ref_is(st, "refs/heads/b", NULL));

	/* Both failing: both reported. */
	prolly_ref_update w[2] = {ref_update("refs/heads/a", PROLLY_REF_EXPECT_ABSENT, NULL, 0, &v2),
	                          ref_update("refs/heads/b", PROLLY_REF_EXPECT_VALUE, &v1, 1, NULL)};
	CHECK_RC(t, write_refs(st, w, 2, NULL), PROLLY_ECONFLICT);
	CHECK(t, w[0].conflict == 1 && w[0].current_exists == 1 && prolly_id_equal(&w[0].current, &v1));
	CHECK(t, w[1].conflict == 1 && w[1].current_exists == 0);
	CHECK(t, ref_is(st, "refs/heads/a", &v1));
}

typedef struct listed {
	int n;
	char names[16][64];
	prolly_id values[16];
	int stop_after;
} listed;

static int listed_fn(void *payload, const char *name, const prolly_id *value)
{
	listed *l = payload;
	if (l->n < 16) {
		snprintf(l->names[l->n], sizeof(l->names[l->n]), "%s", name);
		l->values[l->n] = *value;
	}
	l->n++;
	if (l->stop_after && l->n >= l->stop_after)
		return 55;
	return 0;
}

static void case_list_refs(sc *t, prolly_store *st)
{
	/* Inserted in scrambled order; the expected order is memcmp order of the bytes. */
	const char *names[] = {"refs/heads/b",
	                       "z",
	                       "refs/heads/a/x",
	                       "refs/tags/v1",
	                       "refs/heads/a",
	                       "refs/heads/a-1",
	                       "refs/heads/\xc3\xa9",
	                       "refs/heads",
	                       "\xff\xffz"};
	const char *sorted[] = {
	    "refs/heads",   "refs/heads/a",        "refs/heads/a-1", "refs/heads/a/x",
	    "refs/heads/b", "refs/heads/\xc3\xa9", "refs/tags/v1",   "z",
	    "\xff\xffz"};
	size_t n = sizeof(names) / sizeof(names[0]);
	for (size_t i = 0; i < n; i++) {
		prolly_id v = make_id(9, i);
		CHECK_RC(t, set_ref(st, names[i], &v), 0);
	}
	listed l;
	memset(&l, 0, sizeof(l));
	CHECK_RC(t, st->list_refs(st, "", listed_fn, &l), 0);
	REQUIRE(t, l.n == (int)n);
	for (size_t i = 0; i < n; i++) {
		CHECK(t, strcmp(l.names[i], sorted[i]) == 0);
		for (size_t j = 0; j < n; j++)
			if (strcmp(names[j], l.names[i]) == 0) {
				prolly_id v = make_id(9, j);
				CHECK(t, prolly_id_equal(&l.values[i], &v));
			}
	}

	memset(&l, 0, sizeof(l));
	CHECK_RC(t, st->list_refs(st, "refs/heads/", listed_fn, &l), 0);
	REQUIRE(t, l.n == 5);
	for (int i = 0; i < 5; i++)
		CHECK(t, strcmp(l.names[i], sorted[i + 1]) == 0);

	memset(&l, 0, sizeof(l));
	CHECK_RC(t, st->list_refs(st, "refs/heads/a", listed_fn, &l), 0);
	REQUIRE(t, l.n == 3);
	CHECK(t, strcmp(l.names[0], "refs/heads/a") == 0);
	CHECK(t, strcmp(l.names[1], "refs/heads/a-1") == 0);
	CHECK(t, strcmp(l.names[2], "refs/heads/a/x") == 0);

	memset(&l, 0, sizeof(l));
	CHECK_RC(t, st->list_refs(st, "refs/heads/a/x", listed_fn, &l), 0);
	CHECK(t, l.n == 1);
	memset(&l, 0, sizeof(l));
	CHECK_RC(t, st->list_refs(st, "nothing", listed_fn, &l), 0);
	CHECK(t, l.n == 0);
	memset(&l, 0, sizeof(l));
	CHECK_RC(t, st->list_refs(st, "zz", listed_fn, &l), 0);
	CHECK(t, l.n == 0);
	/* Prefixes made of 0xff bytes have no successor: everything from them on. */
	memset(&l, 0, sizeof(l));
	CHECK_RC(t, st->list_refs(st, "\xff\xff", listed_fn, &l), 0);
	CHECK(t, l.n == 1 && strcmp(l.names[0], "\xff\xffz") == 0);
	memset(&l, 0, sizeof(l));
	CHECK_RC(t, st->list_refs(st, "\xff\xff\xff", listed_fn, &l), 0);
	CHECK(t, l.n == 0);
	memset(&l, 0, sizeof(l));
	CHECK_RC(t, st->list_refs(st, "\xff\xffz", listed_fn, &l), 0);
	CHECK(t, l.n == 1);

	/* A non-zero callback result stops the listing and is returned. */
	memset(&l, 0, sizeof(l));
	l.stop_after = 2;
	CHECK_RC(t, st->list_refs(st, "", listed_fn, &l), 55);
	CHECK(t, l.n == 2);
}

/* get_refs (interface version 7, optional): every name answered by position, duplicates
 * and absent refs included; more names than one statement of a server store takes (the
 * PostgreSQL store's read_chunk is 4,096); the longest name. (The engine checks the names:
 * S3.) */
static void case_get_refs(sc *t, prolly_store *st)
{
	enum { N = 5000, STEP = 7 };
	if (st->version < 7 || !st->get_refs) {
		t->skip = "the store has no get_refs";
		return;
	}
	char(*names)[40] = calloc(N, sizeof(*names));
	const char **ask = calloc(N, sizeof(*ask));
	prolly_ref_update *u = calloc(N, sizeof(*u));
	prolly_id *out = calloc(N, sizeof(*out));
	unsigned char *found = malloc(N);
	size_t k = 0;
	REQUIRE(t, names && ask && u && out && found);
	for (unsigned i = 0; i < N; i++)
		snprintf(names[i], sizeof(names[i]), "refs/heads/gr/b%04u", i);
	for (unsigned i = 0; i < N; i += STEP) {
		u[k].name = names[i];
		u[k].expect = PROLLY_REF_EXPECT_ABSENT;
		u[k++].value = make_id(34, i);
	}
	CHECK_RC(t, write_refs(st, u, k, NULL), 0);

	/* in reverse order, so that answers by position are checked */
	for (unsigned i = 0; i < N; i++)
		ask[i] = names[N - 1 - i];
	uint64_t epoch = 0;
	memset(found, 0xee, N);
	CHECK_RC(t, st->get_refs(st, ask, N, out, found, &epoch), 0);
	CHECK(t, epoch >= 1);
	size_t bad = 0;
	for (unsigned i = 0; i < N; i++) {
		unsigned j = N - 1 - i;
		prolly_id want = make_id(34, j);
		if (j % STEP == 0 ? found[i] != 1 || !prolly_id_equal(&out[i], &want) : found[i] != 0)
			bad++;
	}
	CHECK(t, bad == 0);

	/* duplicates, and a name no ref has */
	prolly_id v0 = make_id(34, 0), v7 = make_id(34, 7);
	const char *dup[4] = {names[7], "refs/heads/gr/none", names[0], names[7]};
	memset(found, 0xee, 4);
	CHECK_RC(t, st->get_refs(st, dup, 4, out, found, NULL), 0);
	CHECK(t, found[0] == 1 && found[1] == 0 && found[2] == 1 && found[3] == 1);
	CHECK(t, prolly_id_equal(&out[0], &v7) && prolly_id_equal(&out[2], &v0) &&
	             prolly_id_equal(&out[3], &v7));

	/* the longest valid name */
	char longname[PROLLY_MAX_REF_NAME + 1];
	memset(longname, 'x', PROLLY_MAX_REF_NAME);
	longname[PROLLY_MAX_REF_NAME] = 0;
	prolly_id lv = make_id(34, 1);
	CHECK_RC(t, set_ref(st, longname, &lv), 0);
	const char *one[1] = {longname};
	found[0] = 0;
	CHECK_RC(t, st->get_refs(st, one, 1, out, found, NULL), 0);
	CHECK(t, found[0] == 1 && prolly_id_equal(&out[0], &lv));
	free(names);
	free(ask);
	free(u);
	free(out);
	free(found);
}

static void case_ref_names(sc *t, prolly_store *st)
{
	char longname[PROLLY_MAX_REF_NAME + 2];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0; /* 256 bytes */
	prolly_id v = make_id(10, 1), out;
	tnode n = tnode_make(10, 2, 33);
	REQUIRE(t, n.data);

	CHECK_RC(t, st->get_ref(st, "", &out, NULL), PROLLY_EINVAL);
	CHECK_RC(t, st->get_ref(st, longname, &out, NULL), PROLLY_EINVAL);
	/* (A write's names, order and duplicates are the engine's to check: test_store.c.) */

	/* The longest valid name works. */
	longname[PROLLY_MAX_REF_NAME] = 0;
	CHECK_RC(t, set_ref(st, longname, &v), 0);
	CHECK(t, ref_is(st, longname, &v));
	tnode_free(&n);
}

static void case_epoch(sc *t, prolly_store *st)
{
	prolly_id v = make_id(11, 1);
	uint64_t epoch = 0;
	CHECK_RC(t, write_refs(st, NULL, 0, &epoch), 0);
	REQUIRE(t, epoch != 0);

	tnode n = tnode_make(11, 2, 90);
	REQUIRE(t, n.data);
	prolly_store_node sn = as_store_node(&n);
	prolly_ref_update u = ref_update("refs/heads/e", PROLLY_REF_EXPECT_ANY, NULL, 0, &v);
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = &sn;
	w.n_nodes = 1;
	w.refs = &u;
	w.n_refs = 1;
	w.check_epoch = 1;
	w.epoch = epoch + 1;
	CHECK_RC(t, st->write(st, &w), PROLLY_ECONFLICT);
	CHECK(t, w.current_epoch == epoch);
	CHECK(t, u.conflict == 0);
	CHECK(t, lacks_node(st, &n.id));
	CHECK(t, ref_is(st, "refs/heads/e", NULL));

	w.epoch = epoch;
	w.current_epoch = 0;
	CHECK_RC(t, st->write(st, &w), 0);
	CHECK(t, w.current_epoch == epoch);
	CHECK(t, has_node(st, &n));
	CHECK(t, ref_is(st, "refs/heads/e", &v));
	tnode_free(&n);
}

/* gc */

#define GC_NODES 200

typedef struct gc_ctx {
	sc *t;
	prolly_store *st;
	tnode nodes[GC_NODES];
	int marked;
	int keep_calls;
	int keep_before_mark;
	uint64_t old_epoch;
	/* a writer started during mark() */
	pthread_t writer;
	int writer_started;
	_Atomic int writer_done;
	int writer_rc;
	uint64_t writer_epoch;
} gc_ctx;

static void *gc_writer(void *arg)
{
	gc_ctx *g = arg;
	tnode n = tnode_make(12, 5000, 77);
	prolly_store_node sn = as_store_node(&n);
	prolly_id v = make_id(12, 5001);
	prolly_ref_update u = ref_update("refs/heads/late", PROLLY_REF_EXPECT_ANY, NULL, 0, &v);
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = &sn;
	w.n_nodes = 1;
	w.refs = &u;
	w.n_refs = 1;
	w.check_epoch = 1;
	w.epoch = g->old_epoch;
	w.durable = 1;
	g->writer_rc = g->st->write(g->st, &w);
	g->writer_epoch = w.current_epoch;
	g->writer_done = 1;
	tnode_free(&n);
	return NULL;
}

static int gc_mark(void *payload)
{
	gc_ctx *g = payload;
	sc *t = g->t;
	prolly_store *st = g->st;
	/* mark() may read the store from the gc's own thread. */
	prolly_id v;
	CHECK_RC(t, st->get_ref(st, "refs/heads/main", &v, NULL), 0);
	CHECK(t, prolly_id_equal(&v, &g->nodes[0].id));
	CHECK(t, has_node(st, &g->nodes[0]));
	listed l;
	memset(&l, 0, sizeof(l));
	CHECK_RC(t, st->list_refs(st, "", listed_fn, &l), 0);
	CHECK(t, l.n == 1 || g->writer_started);
	/* Writers are excluded while mark() runs, or fail: a write begun now waits for the gc or is
	 * refused with PROLLY_ECONFLICT. (A store may
	 * call mark() again when it retries a gc; only the first call starts the writer.) */
	if (!g->writer_started && pthread_create(&g->writer, NULL, gc_writer, g) == 0) {
		g->writer_started = 1;
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
		/* A store whose gc lets writers run while it marks (PostgreSQL) fails them instead. */
		CHECK(t, !g->writer_done || g->writer_rc == PROLLY_ECONFLICT);
	}
	g->marked = 1;
	return 0;
}

static int gc_keep(void *payload, const prolly_id *id)
{
	gc_ctx *g = payload;
	g->keep_calls++; /* counted over every attempt */
	if (!g->marked)
		g->keep_before_mark = 1;
	for (int i = 0; i < GC_NODES; i++)
		if (prolly_id_equal(id, &g->nodes[i].id))
			return i % 3 == 0;
	return 0;
}

static int keep_all(void *payload, const prolly_id *id)
{
	(void)payload;
	(void)id;
	return 1;
}

static void case_gc(sc *t, prolly_store *st)
{
	if (!st->gc) {
		t->skip = "the store has no gc";
		return;
	}
	gc_ctx *g = calloc(1, sizeof(*g));
	REQUIRE(t, g);
	g->t = t;
	g->st = st;
	uint64_t removed_bytes = 0, kept = 0;
	for (int i = 0; i < GC_NODES; i++) {
		g->nodes[i] = tnode_make(12, (uint64_t)i, 20 + (size_t)i * 3);
		if (!g->nodes[i].data)
			t->bad = 1;
		if (i % 3 == 0)
			kept++;
		else
			removed_bytes += g->nodes[i].size;
	}
	if (t->bad)
		goto cleanup;
	CHECK_RC(t, write_nodes(st, g->nodes, GC_NODES, 1), 0);
	CHECK_RC(t, set_ref(st, "refs/heads/main", &g->nodes[0].id), 0);
	prolly_id v;
	CHECK_RC(t, st->get_ref(st, "refs/heads/main", &v, &g->old_epoch), 0);

	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	CHECK_RC(t, st->gc(st, gc_mark, gc_keep, g, &res), 0);
	if (g->writer_started)
		pthread_join(g->writer, NULL);
	CHECK(t, g->marked && !g->keep_before_mark);
	CHECK(t, g->keep_calls >= GC_NODES);
	CHECK(t, res.nodes_kept == kept);
	CHECK(t, res.nodes_removed == GC_NODES - kept);
	CHECK(t, res.bytes_removed == removed_bytes);
	for (int i = 0; i < GC_NODES; i++) {
		if (i % 3 == 0)
			CHECK(t, has_node(st, &g->nodes[i]));
		else
			CHECK(t, lacks_node(st, &g->nodes[i].id));
	}
	if (st->stat) {
		uint64_t nodes = 0;
		CHECK_RC(t, st->stat(st, &nodes, NULL), 0);
		CHECK(t, nodes == kept);
	}

	/* The epoch moved; the write that waited for the gc was refused; so is any write still
	 * carrying the old epoch. */
	uint64_t new_epoch = 0;
	CHECK_RC(t, st->get_ref(st, "refs/heads/main", &v, &new_epoch), 0);
	CHECK(t, new_epoch > g->old_epoch);
	CHECK(t, g->writer_started);
	CHECK(t, g->writer_rc == PROLLY_ECONFLICT);
	CHECK(t, g->writer_epoch > g->old_epoch && g->writer_epoch <= new_epoch);
	CHECK(t, ref_is(st, "refs/heads/late", NULL));
	prolly_id late = make_id(12, 5000);
	CHECK(t, lacks_node(st, &late));

	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	prolly_ref_update u = ref_update("refs/heads/x", PROLLY_REF_EXPECT_ANY, NULL, 0, &v);
	w.refs = &u;
	w.n_refs = 1;
	w.check_epoch = 1;
	w.epoch = g->old_epoch;
	CHECK_RC(t, st->write(st, &w), PROLLY_ECONFLICT);
	CHECK(t, w.current_epoch == new_epoch);
	CHECK(t, ref_is(st, "refs/heads/x", NULL));
	w.epoch = new_epoch;
	CHECK_RC(t, st->write(st, &w), 0);
	CHECK(t, ref_is(st, "refs/heads/x", &v));

	/* A gc that keeps everything removes nothing and still bumps the epoch. */
	prolly_gc_result_init(&res, PROLLY_GC_RESULT_VERSION);
	CHECK_RC(t, st->gc(st, NULL, keep_all, NULL, &res), 0);
	CHECK(t, res.nodes_kept == kept && res.nodes_removed == 0 && res.bytes_removed == 0);
	uint64_t third = 0;
	CHECK_RC(t, st->get_ref(st, "refs/heads/main", &v, &third), 0);
	CHECK(t, third > new_epoch);

cleanup:
	for (int i = 0; i < GC_NODES; i++)
		tnode_free(&g->nodes[i]);
	free(g);
}

static void case_stat(sc *t, prolly_store *st)
{
	if (!st->stat) {
		t->skip = "the store has no stat";
		return;
	}
	uint64_t nodes = 99, bytes = 99;
	CHECK_RC(t, st->stat(st, &nodes, &bytes), 0);
	CHECK(t, nodes == 0 && bytes == 0);
	tnode n[3] = {tnode_make(13, 0, 10), tnode_make(13, 1, 20), tnode_make(13, 2, 30)};
	REQUIRE(t, n[0].data && n[1].data && n[2].data);
	CHECK_RC(t, write_nodes(st, n, 3, 0), 0);
	CHECK_RC(t, write_nodes(st, n, 2, 0), 0);
	prolly_id v = make_id(13, 9);
	CHECK_RC(t, set_ref(st, "refs/heads/s", &v), 0);
	CHECK_RC(t, st->stat(st, &nodes, &bytes), 0);
	CHECK(t, nodes == 3 && bytes == 60);
	for (int i = 0; i < 3; i++)
		tnode_free(&n[i]);
}

typedef struct objs {
	int calls;
	size_t index[4];
	size_t size[4];
	unsigned char first[4];
} objs;

static int objs_fn(void *payload, size_t index, const void *data, size_t size)
{
	objs *o = payload;
	if (o->calls < 4) {
		o->index[o->calls] = index;
		o->size[o->calls] = size;
		o->first[o->calls] = size ? ((const unsigned char *)data)[0] : 0;
	}
	o->calls++;
	return 0;
}

/* get_ref_objects_known where the store has it (known NULL is then get_ref_objects), else
 * get_ref_objects. */
static int ref_objects(prolly_store *st, const char *name, size_t follow, const prolly_id *known,
                       prolly_id *out, uint64_t *epoch, objs *o)
{
	if (st->version >= 6 && st->get_ref_objects_known)
		return st->get_ref_objects_known(st, name, follow, known, out, epoch, objs_fn, o);
	return st->get_ref_objects(st, name, follow, out, epoch, objs_fn, o);
}

/* get_ref_objects (interface version 2, optional) and get_ref_objects_known (version 6,
 * optional): the ref, the object it names and the object named at offset `follow` of that one,
 * from one snapshot; nothing but the ref when it names the known id. */
static void case_ref_objects(sc *t, prolly_store *st)
{
	int known_too = st->version >= 6 && st->get_ref_objects_known;
	if (!known_too && (st->version < 2 || !st->get_ref_objects)) {
		t->skip = "the store has neither get_ref_objects nor get_ref_objects_known";
		return;
	}
	/* head -> a 60-byte object whose bytes 5..37 are the id of a 3000-byte object */
	tnode leaf = tnode_make(15, 1, 3000);
	REQUIRE(t, leaf.data);
	unsigned char commit[60];
	memset(commit, 'c', sizeof(commit));
	memcpy(commit + 5, leaf.id.bytes, PROLLY_ID_SIZE);
	tnode head = {make_id(15, 2), commit, sizeof(commit)};
	prolly_store_node sn[2] = {as_store_node(&leaf), as_store_node(&head)};
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = sn;
	w.n_nodes = 2;
	CHECK_RC(t, st->write(st, &w), 0);
	CHECK_RC(t, set_ref(st, "refs/heads/o", &head.id), 0);

	objs o;
	prolly_id got;
	uint64_t epoch = 0;
	memset(&o, 0, sizeof(o));
	CHECK_RC(t, ref_objects(st, "refs/heads/o", 5, NULL, &got, &epoch, &o), 0);
	CHECK(t, prolly_id_equal(&got, &head.id) && epoch >= 1);
	CHECK(t, o.calls == 2 && o.index[0] == 0 && o.size[0] == 60 && o.first[0] == 'c');
	CHECK(t, o.index[1] == 1 && o.size[1] == 3000 && o.first[1] == leaf.data[0]);

	/* the followed id names nothing: only the first object */
	memset(&o, 0, sizeof(o));
	CHECK_RC(t, ref_objects(st, "refs/heads/o", 6, NULL, &got, NULL, &o), 0);
	CHECK(t, o.calls == 1 && o.index[0] == 0);
	/* the first object is too short to hold the id at that offset */
	memset(&o, 0, sizeof(o));
	CHECK_RC(t, ref_objects(st, "refs/heads/o", 40, NULL, &got, NULL, &o), 0);
	CHECK(t, o.calls == 1);
	/* the ref names an object that is not stored: no call */
	prolly_id nowhere = make_id(15, 3);
	CHECK_RC(t, set_ref(st, "refs/heads/p", &nowhere), 0);
	memset(&o, 0, sizeof(o));
	CHECK_RC(t, ref_objects(st, "refs/heads/p", 5, NULL, &got, NULL, &o), 0);
	CHECK(t, o.calls == 0 && prolly_id_equal(&got, &nowhere));
	/* no such ref */
	memset(&o, 0, sizeof(o));
	CHECK_RC(t, ref_objects(st, "refs/heads/none", 5, NULL, &got, NULL, &o), PROLLY_ENOTFOUND);
	CHECK(t, o.calls == 0);
	if (known_too) {
		/* the ref names the known id: the ref and the epoch, no object */
		memset(&o, 0, sizeof(o));
		epoch = 0;
		got = nowhere;
		CHECK_RC(t, ref_objects(st, "refs/heads/o", 5, &head.id, &got, &epoch, &o), 0);
		CHECK(t, o.calls == 0 && prolly_id_equal(&got, &head.id) && epoch >= 1);
		/* another known id: both objects, as without one */
		memset(&o, 0, sizeof(o));
		CHECK_RC(t, ref_objects(st, "refs/heads/o", 5, &nowhere, &got, NULL, &o), 0);
		CHECK(t, o.calls == 2 && o.size[0] == 60 && o.size[1] == 3000);
		memset(&o, 0, sizeof(o));
		CHECK_RC(t, ref_objects(st, "refs/heads/none", 5, &head.id, &got, NULL, &o),
		         PROLLY_ENOTFOUND);
		CHECK(t, o.calls == 0);
	}
	tnode_free(&leaf);
}

static void case_round_trips(sc *t, prolly_store *st)
{
	prolly_id id = make_id(14, 1), v;
	int calls = 0;
	listed l;
	memset(&l, 0, sizeof(l));
	prolly_stats s = PROLLY_STATS_INIT;
	prolly_thread_stats_reset();
	CHECK_RC(t, set_ref(st, "refs/heads/r", &id), 0);
	CHECK_RC(t, st->get_nodes(st, &id, 1, count_fn, &calls), 0);
	CHECK_RC(t, st->get_ref(st, "refs/heads/r", &v, NULL), 0);
	CHECK_RC(t, st->list_refs(st, "", listed_fn, &l), 0);
	prolly_thread_stats(&s);
	CHECK(t, s.store_round_trips >= 4);
}

/* The race: RACERS threads move one ref by compare-and-swap each round; a writer moves another
 * ref the whole time, and a reader reads. */

#define RACERS 16
#define ROUNDS 30

typedef struct race {
	prolly_store *st;
	pthread_barrier_t start, end;
	prolly_id prev; /* the ref's value before the round (set by the coordinator) */
	int rc[RACERS];
	int conflict[RACERS], exists[RACERS];
	prolly_id current[RACERS];
	_Atomic int stop;
	int other_writes, other_refused, reads, read_errors;
	char other_error[256], read_error[256];
} race;

typedef struct racer_arg {
	race *r;
	int idx;
} racer_arg;

static void *racer(void *arg)
{
	racer_arg *a = arg;
	race *r = a->r;
	for (int round = 0; round < ROUNDS; round++) {
		pthread_barrier_wait(&r->start);
		prolly_id mine = make_id(15, (uint64_t)round * RACERS + (uint64_t)a->idx);
		unsigned char bytes[40];
		fill(bytes, sizeof(bytes), (uint64_t)round * RACERS + (uint64_t)a->idx);
		prolly_store_node sn = {mine, bytes, sizeof(bytes)};
		prolly_ref_update u =
		    round == 0 ? ref_update("refs/heads/race", PROLLY_REF_EXPECT_ABSENT, NULL, 0, &mine)
		               : ref_update("refs/heads/race", PROLLY_REF_EXPECT_VALUE, &r->prev, 0, &mine);
		prolly_store_write w;
		memset(&w, 0, sizeof(w));
		w.nodes = &sn;
		w.n_nodes = 1;
		w.refs = &u;
		w.n_refs = 1;
		w.durable = round % 4 == 0;
		r->rc[a->idx] = r->st->write(r->st, &w);
		r->conflict[a->idx] = u.conflict;
		r->exists[a->idx] = u.current_exists;
		r->current[a->idx] = u.current;
		pthread_barrier_wait(&r->end);
	}
	return NULL;
}

static void *other_writer(void *arg)
{
	race *r = arg;
	prolly_id last;
	int have = 0;
	for (uint64_t i = 0; !r->stop; i++) {
		prolly_id next = make_id(16, i);
		unsigned char bytes[24];
		fill(bytes, sizeof(bytes), 16000 + i);
		prolly_store_node sn = {next, bytes, sizeof(bytes)};
		prolly_ref_update u =
		    have ? ref_update("refs/heads/other", PROLLY_REF_EXPECT_VALUE, &last, 0, &next)
		         : ref_update("refs/heads/other", PROLLY_REF_EXPECT_ABSENT, NULL, 0, &next);
		prolly_store_write w;
		memset(&w, 0, sizeof(w));
		w.nodes = &sn;
		w.n_nodes = 1;
		w.refs = &u;
		w.n_refs = 1;
		int rc = r->st->write(r->st, &w);
		if (rc) {
			if (!r->other_refused)
				snprintf(r->other_error, sizeof(r->other_error), "%d: %s", rc, prolly_last_error());
			r->other_refused++;
		} else {
			last = next;
			have = 1;
			r->other_writes++;
		}
	}
	return NULL;
}

static void *reader(void *arg)
{
	race *r = arg;
	while (!r->stop) {
		prolly_id v;
		int rc = r->st->get_ref(r->st, "refs/heads/race", &v, NULL);
		if (rc == 0) {
			int calls = 0;
			rc = r->st->get_nodes(r->st, &v, 1, count_fn, &calls);
			if (rc == 0 && calls != 1)
				rc = -1000; /* the ref names a node that is not visible */
		} else if (rc == PROLLY_ENOTFOUND) {
			rc = 0;
		}
		if (rc) {
			if (!r->read_errors)
				snprintf(r->read_error, sizeof(r->read_error), "%d: %s", rc, prolly_last_error());
			r->read_errors++;
		}
		r->reads++;
	}
	return NULL;
}

static void case_race(sc *t, prolly_store *st)
{
	race *r = calloc(1, sizeof(*r));
	racer_arg args[RACERS];
	pthread_t th[RACERS], ow, rd;
	int ow_started = 0, rd_started = 0;
	REQUIRE(t, r);
	r->st = st;
	pthread_barrier_init(&r->start, NULL, RACERS + 1);
	pthread_barrier_init(&r->end, NULL, RACERS + 1);
	if (pthread_create(&ow, NULL, other_writer, r) == 0)
		ow_started = 1;
	if (pthread_create(&rd, NULL, reader, r) == 0)
		rd_started = 1;
	for (int i = 0; i < RACERS; i++) {
		args[i].r = r;
		args[i].idx = i;
		if (pthread_create(&th[i], NULL, racer, &args[i]) != 0) {
			/* The rounds need every racer (they meet at barriers): nothing sensible is left. */
			printf("# %s: race: cannot start thread %d: %s\n", t->label, i, strerror(errno));
			fflush(stdout);
			abort();
		}
	}
	/* Every round runs in lock step whatever happens, so the threads can always be joined. */
	for (int round = 0; round < ROUNDS; round++) {
		pthread_barrier_wait(&r->start);
		pthread_barrier_wait(&r->end);
		int winners = 0, winner = 0;
		for (int i = 0; i < RACERS; i++)
			if (r->rc[i] == 0) {
				winners++;
				winner = i;
			}
		CHECK(t, winners == 1);
		prolly_id won = make_id(15, (uint64_t)round * RACERS + (uint64_t)winner);
		prolly_id ids[RACERS];
		for (int i = 0; i < RACERS; i++) {
			ids[i] = make_id(15, (uint64_t)round * RACERS + (uint64_t)i);
			if (i == winner) {
				CHECK(t, r->conflict[i] == 0);
				continue;
			}
			CHECK_RC(t, r->rc[i], PROLLY_ECONFLICT);
			CHECK(t, r->conflict[i] == 1 && r->exists[i] == 1);
			CHECK(t, prolly_id_equal(&r->current[i], &won));
		}
		CHECK(t, ref_is(st, "refs/heads/race", &won));
		/* Only the winner's node became visible. */
		int calls = 0;
		CHECK_RC(t, st->get_nodes(st, ids, RACERS, count_fn, &calls), 0);
		CHECK(t, calls == 1);
		r->prev = won;
	}
	r->stop = 1;
	for (int i = 0; i < RACERS; i++)
		pthread_join(th[i], NULL);
	if (ow_started)
		pthread_join(ow, NULL);
	if (rd_started)
		pthread_join(rd, NULL);
	CHECK(t, ow_started && rd_started);
	CHECK(t, r->other_writes > 0);
	if (r->other_refused)
		printf("# %s: race: the other writer was refused %d times, first: %s\n", t->label,
		       r->other_refused, r->other_error);
	CHECK(t, r->other_refused == 0);
	if (r->read_errors)
		printf("# %s: race: %d reads failed, first: %s\n", t->label, r->read_errors, r->read_error);
	CHECK(t, r->read_errors == 0);
	pthread_barrier_destroy(&r->start);
	pthread_barrier_destroy(&r->end);
	free(r);
}

static void case_large(sc *t, prolly_store *st)
{
	size_t sizes[3] = {65536, 65537, (1u << 20) + 3};
	tnode n[3];
	for (int i = 0; i < 3; i++)
		n[i] = tnode_make(17, (uint64_t)i, sizes[i]);
	REQUIRE(t, n[0].data && n[1].data && n[2].data);
	CHECK_RC(t, write_nodes(st, n, 3, 1), 0);
	for (int i = 0; i < 3; i++)
		CHECK(t, has_node(st, &n[i]));
	for (int i = 0; i < 3; i++)
		tnode_free(&n[i]);
}

#define MANY 10000

typedef struct many_ctx {
	int calls;
	int wrong;
	unsigned char *scratch;
} many_ctx;

static size_t many_size(size_t i)
{
	return 50 + (i * 37) % 251;
}

static int many_fn(void *payload, size_t index, const void *data, size_t size)
{
	many_ctx *m = payload;
	m->calls++;
	if (size != many_size(index)) {
		m->wrong++;
		return 0;
	}
	fill(m->scratch, size, 18 * 7919 + index);
	if (memcmp(m->scratch, data, size) != 0)
		m->wrong++;
	return 0;
}

static void case_many(sc *t, prolly_store *st)
{
	tnode *n = calloc(MANY, sizeof(*n));
	prolly_id *ids = calloc(MANY + 1, sizeof(*ids));
	many_ctx m = {0, 0, malloc(512)};
	uint64_t total = 0;
	if (!n || !ids || !m.scratch) {
		t->bad = 1;
		goto cleanup;
	}
	for (size_t i = 0; i < MANY; i++) {
		n[i] = tnode_make(18, i, many_size(i));
		if (!n[i].data) {
			t->bad = 1;
			goto cleanup;
		}
		ids[i] = n[i].id;
		total += n[i].size;
	}
	ids[MANY] = make_id(18, MANY + 5); /* absent */
	CHECK_RC(t, write_nodes(st, n, MANY, 1), 0);
	CHECK_RC(t, st->get_nodes(st, ids, MANY + 1, many_fn, &m), 0);
	CHECK(t, m.calls == MANY);
	CHECK(t, m.wrong == 0);
	if (st->stat) {
		uint64_t nodes = 0, bytes = 0;
		CHECK_RC(t, st->stat(st, &nodes, &bytes), 0);
		CHECK(t, nodes == MANY && bytes == total);
	}

cleanup:
	if (n)
		for (size_t i = 0; i < MANY; i++)
			tnode_free(&n[i]);
	free(n);
	free(ids);
	free(m.scratch);
}

/* ---- the runner ------------------------------------------------------------------------------- */

typedef void (*case_fn)(sc *t, prolly_store *st);

/* Bytes in the commit layout of src/commit.c, at the offsets of src/format.h ("PRLC", version 1,
 * a tree id, a u32 parent count, the parents, a time, an empty message) with the given parents;
 * returns the size. */
static size_t commit_bytes(unsigned char *out, const prolly_id *parents, uint32_t np)
{
	size_t tail = PROLLY__COMMIT_OFF_PARENTS + PROLLY_ID_SIZE * (size_t)np;
	memcpy(out, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE);
	out[PROLLY__COMMIT_OFF_VERSION] = PROLLY_FORMAT_VERSION;
	memset(out + PROLLY__COMMIT_OFF_TREE, 't', PROLLY_ID_SIZE);
	for (int i = 0; i < 4; i++)
		out[PROLLY__COMMIT_OFF_NPARENTS + i] = (unsigned char)(np >> (8 * i));
	if (np)
		memcpy(out + PROLLY__COMMIT_OFF_PARENTS, parents, np * sizeof(*parents));
	memset(out + tail, 0, PROLLY__COMMIT_TAIL_MESSAGE); /* time 0, message length 0 */
	return tail + PROLLY__COMMIT_TAIL_MESSAGE;
}

typedef struct anc {
	int calls;
	prolly_id id[8];
} anc;

static int anc_fn(void *payload, const prolly_id *id, const void *data, size_t size)
{
	anc *a = payload;
	(void)data;
	(void)size;
	if (a->calls < 8)
		a->id[a->calls] = *id;
	a->calls++;
	return 0;
}

static int anc_has(const anc *a, const prolly_id *id)
{
	for (int i = 0; i < a->calls && i < 8; i++)
		if (prolly_id_equal(&a->id[i], id))
			return 1;
	return 0;
}

/* A commit layout of another shape than the engine's: the store must follow what it is given
 * (offsets and magic), not assume the engine's format. */
static const unsigned char other_magic[3] = {'Q', 'Z', '!'};
static const prolly_store_commit_layout other_layout = {other_magic, 3, 9, 17};

/* Bytes of a "commit" in other_layout: magic, filler, the u32 count at 9, parents from 17. */
static size_t other_commit_bytes(unsigned char *out, const prolly_id *parents, uint32_t np)
{
	memset(out, '.', 17);
	memcpy(out, other_magic, sizeof(other_magic));
	for (int i = 0; i < 4; i++)
		out[9 + i] = (unsigned char)(np >> (8 * i));
	if (np)
		memcpy(out + 17, parents, np * sizeof(*parents));
	return 17 + PROLLY_ID_SIZE * (size_t)np;
}

/* Many refs in one write, as gc's reflog expiry and a sync make: b0000..b0598 (even) created at
 * once; then one write removes those = 0 mod 4, moves those = 2 mod 4 (expecting their values)
 * and creates the odd ones between them; the listing is then exactly what it should be, in
 * order, and a small write after it still lands. */
typedef struct refcheck {
	int n, bad;
} refcheck;

static int refcheck_fn(void *payload, const char *name, const prolly_id *value)
{
	refcheck *r = payload;
	unsigned k;
	/* the n-th listed ref: the n-th number of the expected set, in order */
	unsigned want = 0, seen = 0;
	for (unsigned i = 0; i < 600; i++) {
		if (i % 4 == 0)
			continue;
		if (seen++ == (unsigned)r->n) {
			want = i;
			break;
		}
	}
	if (sscanf(name, "refs/heads/many/b%4u", &k) != 1 || k != want)
		r->bad++;
	else {
		prolly_id v = make_id(k % 2 ? 31 : 32, k);
		if (!prolly_id_equal(value, &v))
			r->bad++;
	}
	r->n++;
	return 0;
}

static void case_many_refs(sc *t, prolly_store *st)
{
	enum { N = 600 };
	char(*names)[40] = calloc(N, sizeof(*names));
	prolly_ref_update *u = calloc(N, sizeof(*u));
	size_t k = 0;
	REQUIRE(t, names && u);
	for (unsigned i = 0; i < N; i++)
		snprintf(names[i], sizeof(names[i]), "refs/heads/many/b%04u", i);
	for (unsigned i = 0; i < N; i += 2) {
		u[k].name = names[i];
		u[k].expect = PROLLY_REF_EXPECT_ABSENT;
		u[k++].value = make_id(30, i);
	}
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.refs = u;
	w.n_refs = k;
	w.durable = 1;
	CHECK_RC(t, st->write(st, &w), 0);

	memset(u, 0, N * sizeof(*u));
	k = 0;
	for (unsigned i = 0; i < N; i++) { /* in name order (S1) */
		u[k].name = names[i];
		if (i % 4 == 0) {
			u[k].expect = PROLLY_REF_EXPECT_VALUE;
			u[k].expected = make_id(30, i);
			u[k].remove = 1;
		} else if (i % 4 == 2) {
			u[k].expect = PROLLY_REF_EXPECT_VALUE;
			u[k].expected = make_id(30, i);
			u[k].value = make_id(32, i);
		} else {
			u[k].expect = PROLLY_REF_EXPECT_ABSENT;
			u[k].value = make_id(31, i);
		}
		k++;
	}
	memset(&w, 0, sizeof(w));
	w.refs = u;
	w.n_refs = k;
	w.durable = 1;
	CHECK_RC(t, st->write(st, &w), 0);
	refcheck r = {0, 0};
	CHECK_RC(t, st->list_refs(st, "refs/heads/many/", refcheck_fn, &r), 0);
	CHECK(t, r.n == N - N / 4 && r.bad == 0);

	prolly_id v = make_id(33, 0);
	CHECK_RC(t, set_ref(st, "refs/heads/many/b0000x", &v), 0);
	CHECK(t, ref_is(st, "refs/heads/many/b0000x", &v));
	prolly_id w2 = make_id(32, 2);
	CHECK(t, ref_is(st, "refs/heads/many/b0002", &w2));
	prolly_id got;
	CHECK_RC(t, st->get_ref(st, "refs/heads/many/b0004", &got, NULL), PROLLY_ENOTFOUND);
	free(names);
	free(u);
}

/* get_ancestors (interface version 4, optional): objects and the commits they descend from,
 * along the commit layout passed. */
static void case_ancestors(sc *t, prolly_store *st)
{
	const prolly_store_commit_layout *cl = &prolly__commit_layout;
	if (st->version < 4 || !st->get_ancestors) {
		t->skip = "the store has no get_ancestors";
		return;
	}
	/* c0 <- c1 <- c2 <- m -> c0 (two paths to c0), and a leaf-like object that is no commit */
	unsigned char b[4][53 + 64];
	tnode n[5];
	n[0].id = make_id(17, 0);
	n[1].id = make_id(17, 1);
	n[2].id = make_id(17, 2);
	n[3].id = make_id(17, 3);
	prolly_id mp[2] = {n[2].id, n[0].id};
	n[0].size = commit_bytes(b[0], NULL, 0);
	n[1].size = commit_bytes(b[1], &n[0].id, 1);
	n[2].size = commit_bytes(b[2], &n[1].id, 1);
	n[3].size = commit_bytes(b[3], mp, 2);
	for (int i = 0; i < 4; i++)
		n[i].data = b[i];
	n[4] = tnode_make(17, 4, 100);
	REQUIRE(t, n[4].data);
	CHECK_RC(t, write_nodes(st, n, 5, 1), 0);

	anc a;
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &n[3].id, 1, 100, cl, anc_fn, &a), 0);
	CHECK(t, a.calls == 4 && anc_has(&a, &n[0].id) && anc_has(&a, &n[1].id) &&
	             anc_has(&a, &n[2].id) && anc_has(&a, &n[3].id));
	/* at most `limit` objects, the asked one among them */
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &n[3].id, 1, 2, cl, anc_fn, &a), 0);
	CHECK(t, a.calls >= 1 && a.calls <= 2 && anc_has(&a, &n[3].id));
	/* a duplicate answered once, an absent id not at all */
	prolly_id ask[3] = {n[1].id, n[1].id, make_id(17, 99)};
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, ask, 3, 10, cl, anc_fn, &a), 0);
	CHECK(t, a.calls == 2 && anc_has(&a, &n[1].id) && anc_has(&a, &n[0].id));
	/* an object that is no commit is reported, not followed */
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &n[4].id, 1, 10, cl, anc_fn, &a), 0);
	CHECK(t, a.calls == 1 && anc_has(&a, &n[4].id));
	/* the same history read with another layout: these objects are no commits in it */
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &n[3].id, 1, 100, &other_layout, anc_fn, &a), 0);
	CHECK(t, a.calls == 1 && anc_has(&a, &n[3].id));

	/* objects in the other layout: o2 -> o1 -> o0, followed with that layout only */
	unsigned char ob[3][17 + 32];
	tnode o[3];
	for (int i = 0; i < 3; i++)
		o[i].id = make_id(17, 10 + i);
	o[0].size = other_commit_bytes(ob[0], NULL, 0);
	o[1].size = other_commit_bytes(ob[1], &o[0].id, 1);
	o[2].size = other_commit_bytes(ob[2], &o[1].id, 1);
	for (int i = 0; i < 3; i++)
		o[i].data = ob[i];
	CHECK_RC(t, write_nodes(st, o, 3, 1), 0);
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &o[2].id, 1, 10, &other_layout, anc_fn, &a), 0);
	CHECK(t,
	      a.calls == 3 && anc_has(&a, &o[0].id) && anc_has(&a, &o[1].id) && anc_has(&a, &o[2].id));
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &o[2].id, 1, 10, cl, anc_fn, &a), 0);
	CHECK(t, a.calls == 1);
	/* a parent count larger than the object holds is cut to what it holds: o3 claims three
	 * parents and holds one (o2), whose history is followed */
	unsigned char o3b[17 + 32];
	tnode o3;
	o3.id = make_id(17, 13);
	o3.size = other_commit_bytes(o3b, &o[2].id, 1);
	o3b[9] = 3;
	o3.data = o3b;
	CHECK_RC(t, write_nodes(st, &o3, 1, 1), 0);
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &o3.id, 1, 10, &other_layout, anc_fn, &a), 0);
	CHECK(t, a.calls == 4 && anc_has(&a, &o3.id) && anc_has(&a, &o[0].id));
	/* a layout whose count overlaps the parents is refused */
	prolly_store_commit_layout bad = {other_magic, 3, 15, 17};
	CHECK_RC(t, st->get_ancestors(st, &o[2].id, 1, 10, &bad, anc_fn, &a), PROLLY_EINVAL);
	tnode_free(&n[4]);

	/* A long history where every commit is met twice: h[i] has parents h[i-1] and h[i-2]. Each
	 * object is reported once however often it is met, and never more than limit of them. */
	enum { LONG = 3000 };
	unsigned char(
	    *hb)[PROLLY__COMMIT_OFF_PARENTS + 2 * PROLLY_ID_SIZE + PROLLY__COMMIT_TAIL_MESSAGE] =
	    calloc(LONG, sizeof(*hb));
	tnode *h = calloc(LONG, sizeof(*h));
	REQUIRE(t, hb && h);
	for (int i = 0; i < LONG; i++)
		h[i].id = make_id(18, (uint64_t)i);
	for (int i = 0; i < LONG; i++) {
		prolly_id hp[2] = {h[i ? i - 1 : 0].id, h[i > 1 ? i - 2 : 0].id};
		h[i].size = commit_bytes(hb[i], hp, (uint32_t)(i < 2 ? i : 2));
		h[i].data = hb[i];
	}
	CHECK_RC(t, write_nodes(st, h, LONG, 1), 0);
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &h[LONG - 1].id, 1, 2 * LONG, cl, anc_fn, &a), 0);
	CHECK(t, a.calls == LONG);
	memset(&a, 0, sizeof(a));
	CHECK_RC(t, st->get_ancestors(st, &h[LONG - 1].id, 1, LONG / 3, cl, anc_fn, &a), 0);
	CHECK(t, a.calls >= 1 && a.calls <= LONG / 3);
	free(hb);
	free(h);
}

/* find_ids (interface version 3, optional): the objects whose id lies in [lo, hi], in order. */
typedef struct fid {
	int calls, bad_head;
	prolly_id id[16];
	const tnode *nodes;
	size_t n_nodes;
} fid;

static int fid_fn(void *payload, const prolly_id *id, const void *data, size_t size)
{
	fid *f = payload;
	if (f->calls < 16)
		f->id[f->calls] = *id;
	f->calls++;
	for (size_t i = 0; i < f->n_nodes; i++) {
		const tnode *n = &f->nodes[i];
		size_t head = n->size < PROLLY_STORE_ID_HEAD ? n->size : PROLLY_STORE_ID_HEAD;
		if (prolly_id_equal(&n->id, id) &&
		    (size < head || size > n->size || memcmp(data, n->data, head) != 0))
			f->bad_head = 1;
	}
	return 0;
}

/* has_nodes (version 5) answers what get_nodes would find, by position, duplicates included. */
static void case_has_nodes(sc *t, prolly_store *st)
{
	if (st->version < 5 || !st->has_nodes) {
		t->skip = "the store has no has_nodes";
		return;
	}
	tnode a = tnode_make(29, 0, 200), b = tnode_make(29, 1, 5000);
	REQUIRE(t, a.data && b.data);
	tnode both[2] = {a, b};
	CHECK_RC(t, write_nodes(st, both, 2, 1), 0);
	prolly_id ids[5] = {make_id(29, 7), a.id, b.id, a.id, make_id(29, 8)};
	unsigned char out[5];
	memset(out, 9, sizeof(out));
	CHECK_RC(t, st->has_nodes(st, ids, 5, out), 0);
	CHECK(t, out[0] == 0 && out[1] == 1 && out[2] == 1 && out[3] == 1 && out[4] == 0);
	CHECK_RC(t, st->has_nodes(st, ids, 0, out), 0);
	tnode_free(&a);
	tnode_free(&b);
}

static void case_find_ids(sc *t, prolly_store *st)
{
	if (st->version < 3 || !st->find_ids) {
		t->skip = "the store has no find_ids";
		return;
	}
	/* Ids 0xab 0xcd ..., around the prefix "abc": below, inside (4), exactly at both ends, above. */
	static const unsigned char first[7][3] = {
	    {0xab, 0xbf, 0xff}, {0xab, 0xc0, 0x00}, {0xab, 0xc3, 0x10}, {0xab, 0xc3, 0x11},
	    {0xab, 0xcf, 0xff}, {0xab, 0xd0, 0x00}, {0x00, 0x00, 0x00}};
	tnode n[7];
	for (int i = 0; i < 7; i++) {
		n[i] = tnode_make(23, (uint64_t)i, i == 6 ? 3 : 40 + (size_t)i);
		REQUIRE(t, n[i].data);
		memcpy(n[i].id.bytes, first[i], 3);
	}
	memset(n[1].id.bytes + 3, 0, PROLLY_ID_SIZE - 3);
	memset(n[4].id.bytes + 3, 0xff, PROLLY_ID_SIZE - 3);
	CHECK_RC(t, write_nodes(st, n, 7, 1), 0);
	prolly_id lo, hi;
	memset(lo.bytes, 0, sizeof lo.bytes);
	memset(hi.bytes, 0xff, sizeof hi.bytes);
	lo.bytes[0] = hi.bytes[0] = 0xab;
	lo.bytes[1] = 0xc0;
	hi.bytes[1] = 0xcf;
	fid f;
	memset(&f, 0, sizeof f);
	f.nodes = n;
	f.n_nodes = 7;
	CHECK_RC(t, st->find_ids(st, &lo, &hi, 100, fid_fn, &f), 0);
	CHECK(t, f.calls == 4 && !f.bad_head);
	CHECK(t, f.calls < 4 ||
	             (prolly_id_equal(&f.id[0], &n[1].id) && prolly_id_equal(&f.id[1], &n[2].id) &&
	              prolly_id_equal(&f.id[2], &n[3].id) && prolly_id_equal(&f.id[3], &n[4].id)));
	/* the limit keeps the first ones */
	memset(&f, 0, sizeof f);
	CHECK_RC(t, st->find_ids(st, &lo, &hi, 2, fid_fn, &f), 0);
	CHECK(t, f.calls == 2 && prolly_id_equal(&f.id[0], &n[1].id) &&
	             prolly_id_equal(&f.id[1], &n[2].id));
	/* a range with nothing in it; a short object is reported whole */
	lo.bytes[1] = 0xe0;
	hi.bytes[1] = 0xef;
	memset(&f, 0, sizeof f);
	CHECK_RC(t, st->find_ids(st, &lo, &hi, 100, fid_fn, &f), 0);
	CHECK(t, f.calls == 0);
	memset(lo.bytes, 0, sizeof lo.bytes);
	hi = lo;
	hi.bytes[0] = 0x0f;
	memset(&f, 0, sizeof f);
	f.nodes = n;
	f.n_nodes = 7;
	CHECK_RC(t, st->find_ids(st, &lo, &hi, 100, fid_fn, &f), 0);
	CHECK(t, f.calls == 1 && !f.bad_head);
	for (int i = 0; i < 7; i++)
		tnode_free(&n[i]);
}

/* ---- the reflog through the engine ---------------------------------------------------------- */

typedef struct rl {
	int n;
	char op[8][16];
	int has_old[8], has_new[8];
	prolly_id old_id[8], new_id[8];
} rl;

static int rl_fn(void *payload, const prolly_reflog_entry *e)
{
	rl *r = payload;
	if (r->n < 8) {
		snprintf(r->op[r->n], sizeof(r->op[0]), "%s", e->operation);
		r->has_old[r->n] = e->has_old;
		r->has_new[r->n] = e->has_new;
		r->old_id[r->n] = e->old_id;
		r->new_id[r->n] = e->new_id;
	}
	r->n++;
	return 0;
}

/* A handle on st through a pass-through store (owned by the handle) that leaves st open (the
 * suite closes it), at interface version 1: the engine must do with the oldest interface. */
static int open_fwd(prolly_db **db, prolly_store *st, unsigned reflog_days)
{
	tp_store *f = tp_new(sizeof(*f), st);
	prolly_options o;
	if (!f)
		return PROLLY_ENOMEM;
	f->keep_inner = 1;
	f->base.version = 1;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.clock_us = 1700000000000000;
	o.reflog_days = reflog_days;
	return prolly_db_new(db, &f->base, &o);
}

/* Commits, a branch, a delete and a restore, each with its reflog entry in the same write; gc
 * keeps the entries within the horizon and expires them after it. */
static void case_reflog(sc *t, prolly_store *st)
{
	prolly_db *db = NULL;
	prolly_id c1, c2, back;
	prolly_edit e;
	rl r;
	CHECK_RC(t, open_fwd(&db, st, 14), 0);
	REQUIRE(t, db);
	memset(&e, 0, sizeof(e));
	e.op = PROLLY_PUT;
	e.key.data = "k";
	e.key.size = 1;
	e.value.data = "v";
	e.value.size = 1;
	CHECK_RC(t, prolly_commit_edits(&c1, db, "main", &e, 1, "one"), 0);
	e.value.data = "w";
	CHECK_RC(t, prolly_commit_edits(&c2, db, "main", &e, 1, "two"), 0);
	CHECK_RC(t, prolly_branch_create(db, "dev", &c1), 0);
	CHECK_RC(t, prolly_branch_delete(db, "dev"), 0);
	/* (One fixed clock: entries of equal time come in entry id order, so look for each.) */
	memset(&r, 0, sizeof(r));
	CHECK_RC(t, prolly_reflog(db, "main", rl_fn, &r), 0);
	REQUIRE(t, r.n == 2);
	int k = r.has_old[0] ? 0 : 1;
	CHECK(t, strcmp(r.op[k], "commit") == 0 && r.has_old[k] && prolly_id_equal(&r.old_id[k], &c1) &&
	             prolly_id_equal(&r.new_id[k], &c2) && !r.has_old[1 - k] &&
	             prolly_id_equal(&r.new_id[1 - k], &c1));
	memset(&r, 0, sizeof(r));
	CHECK_RC(t, prolly_reflog(db, "dev", rl_fn, &r), 0);
	REQUIRE(t, r.n == 2);
	k = r.has_new[0] ? 1 : 0;
	CHECK(t, strcmp(r.op[k], "delete") == 0 && !r.has_new[k] && strcmp(r.op[1 - k], "branch") == 0);
	if (st->gc) {
		prolly_gc_result res = PROLLY_GC_RESULT_INIT;
		CHECK_RC(t, prolly_gc(db, &res), 0);
		CHECK(t, res.reflog_expired == 0);
	}
	CHECK_RC(t, prolly_branch_restore(&back, db, "dev"), 0);
	CHECK(t, prolly_id_equal(&back, &c1));
	prolly_close(db);
	db = NULL;
	if (st->gc) { /* a handle whose horizon is 0 days expires every entry */
		prolly_gc_result res = PROLLY_GC_RESULT_INIT;
		CHECK_RC(t, open_fwd(&db, st, 0), 0);
		REQUIRE(t, db);
		CHECK_RC(t, prolly_gc(db, &res), 0);
		CHECK(t, res.reflog_expired == 5);
		memset(&r, 0, sizeof(r));
		CHECK_RC(t, prolly_reflog(db, NULL, rl_fn, &r), 0);
		CHECK(t, r.n == 0);
		prolly_close(db);
	}
}

static const struct {
	const char *name;
	case_fn fn;
} cases[] = {
    {"missing ids are not reported", case_missing},
    {"put then get", case_put_get},
    {"duplicate and missing ids answered by index", case_duplicates},
    {"re-putting a node is idempotent", case_reput},
    {"nodes and refs are written atomically", case_atomic_write},
    {"ref create, move, delete and unconditional set", case_cas},
    {"a conflict reports the current value and writes nothing", case_conflict_writes_nothing},
    {"two refs, one expectation fails: neither applies", case_two_refs_one_fails},
    {"list_refs order and prefix", case_list_refs},
    {"hundreds of refs created, moved and removed in one write", case_many_refs},
    {"ref names are validated", case_ref_names},
    {"get_refs: many refs by position in one call", case_get_refs},
    {"the gc epoch check", case_epoch},
    {"gc keeps what keep() keeps and bumps the epoch", case_gc},
    {"stat counts nodes and bytes", case_stat},
    {"round trips are counted", case_round_trips},
    {"a ref and the objects it leads to in one call", case_ref_objects},
    {"objects and the commits they descend from in one call", case_ancestors},
    {"ids in a range, in order, in one call", case_find_ids},
    {"which ids are stored, in one call", case_has_nodes},
    {"16 threads race on one ref", case_race},
    {"a large node round trip", case_large},
    {"10000 nodes in one write", case_many},
    {"the reflog through the engine", case_reflog},
};

int store_conformance_run(const char *label, store_open_fresh_fn open_fresh, void *ctx, int *passed,
                          int *failed)
{
	int bad_here = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sc t = {label, cases[i].name, 0, NULL};
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
