/*
 * store_conformance_refs.c - the store conformance suite's cases on refs: atomic writes with
 * nodes, compare-and-swap, conflicts that write nothing, listing, get_refs, names validated,
 * hundreds in one write and 16 threads racing on one.
 */
#include "store_conformance_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cf_case_atomic_write(cf_case *t, prolly_store *st)
{
	cf_tnode n[2] = {cf_tnode_make(5, 0, 64), cf_tnode_make(5, 1, 128)};
	REQUIRE(t, n[0].data && n[1].data);
	prolly_store_node sn[2] = {cf_as_store_node(&n[0]), cf_as_store_node(&n[1])};
	/* in name order (the engine sorts: S1 in store.h) */
	prolly_ref_update u[2] = {
	    cf_ref_update("refs/heads/dev", PROLLY_REF_EXPECT_ANY, NULL, 0, &n[1].id),
	    cf_ref_update("refs/heads/main", PROLLY_REF_EXPECT_ABSENT, NULL, 0, &n[0].id)};
	prolly_store_write w = cf_write_of(sn, 2, u, 2);
	w.durable = 1;
	CHECK_RC(t, st->write(st, &w), 0);
	CHECK(t, u[0].conflict == 0 && u[1].conflict == 0);
	CHECK(t, w.current_epoch != 0);
	CHECK(t, cf_has_node(st, &n[0]) && cf_has_node(st, &n[1]));
	CHECK(t, cf_ref_is(st, "refs/heads/main", &n[0].id));
	CHECK(t, cf_ref_is(st, "refs/heads/dev", &n[1].id));
	uint64_t epoch = 0;
	prolly_id v;
	CHECK_RC(t, st->get_ref(st, "refs/heads/main", &v, &epoch), 0);
	CHECK(t, epoch == w.current_epoch);
	/* An empty write is fine and reports the epoch. */
	prolly_store_write empty;
	memset(&empty, 0, sizeof(empty));
	CHECK_RC(t, st->write(st, &empty), 0);
	CHECK(t, empty.current_epoch == epoch);
	cf_tnode_free(&n[0]);
	cf_tnode_free(&n[1]);
}

void cf_case_cas(cf_case *t, prolly_store *st)
{
	const char *r = "refs/heads/cas";
	prolly_id v1 = cf_make_id(6, 1), v2 = cf_make_id(6, 2), v3 = cf_make_id(6, 3),
	          v4 = cf_make_id(6, 4);
	prolly_ref_update u;

	/* create */
	u = cf_ref_update(r, PROLLY_REF_EXPECT_ABSENT, NULL, 0, &v1);
	CHECK_RC(t, cf_write_refs(st, &u, 1, NULL), 0);
	CHECK(t, cf_ref_is(st, r, &v1));
	u = cf_ref_update(r, PROLLY_REF_EXPECT_ABSENT, NULL, 0, &v2);
	CHECK_RC(t, cf_write_refs(st, &u, 1, NULL), PROLLY_ECONFLICT);
	CHECK(t, u.conflict == 1 && u.current_exists == 1 && prolly_id_equal(&u.current, &v1));
	CHECK(t, cf_ref_is(st, r, &v1));

	/* move */
	u = cf_ref_update(r, PROLLY_REF_EXPECT_VALUE, &v1, 0, &v2);
	CHECK_RC(t, cf_write_refs(st, &u, 1, NULL), 0);
	CHECK(t, u.conflict == 0);
	CHECK(t, cf_ref_is(st, r, &v2));
	u = cf_ref_update(r, PROLLY_REF_EXPECT_VALUE, &v1, 0, &v3);
	CHECK_RC(t, cf_write_refs(st, &u, 1, NULL), PROLLY_ECONFLICT);
	CHECK(t, u.conflict == 1 && u.current_exists == 1 && prolly_id_equal(&u.current, &v2));
	CHECK(t, cf_ref_is(st, r, &v2));

	/* delete */
	u = cf_ref_update(r, PROLLY_REF_EXPECT_VALUE, &v1, 1, NULL);
	CHECK_RC(t, cf_write_refs(st, &u, 1, NULL), PROLLY_ECONFLICT);
	CHECK(t, cf_ref_is(st, r, &v2));
	u = cf_ref_update(r, PROLLY_REF_EXPECT_VALUE, &v2, 1, NULL);
	CHECK_RC(t, cf_write_refs(st, &u, 1, NULL), 0);
	CHECK(t, cf_ref_is(st, r, NULL));

	/* expecting a value of an absent ref */
	u = cf_ref_update(r, PROLLY_REF_EXPECT_VALUE, &v2, 0, &v3);
	CHECK_RC(t, cf_write_refs(st, &u, 1, NULL), PROLLY_ECONFLICT);
	CHECK(t, u.conflict == 1 && u.current_exists == 0);
	CHECK(t, cf_ref_is(st, r, NULL));

	/* unconditional set, overwrite, delete, delete of an absent ref */
	u = cf_ref_update(r, PROLLY_REF_EXPECT_ANY, NULL, 0, &v3);
	CHECK_RC(t, cf_write_refs(st, &u, 1, NULL), 0);
	CHECK(t, cf_ref_is(st, r, &v3));
	u = cf_ref_update(r, PROLLY_REF_EXPECT_ANY, NULL, 0, &v4);
	CHECK_RC(t, cf_write_refs(st, &u, 1, NULL), 0);
	CHECK(t, cf_ref_is(st, r, &v4));
	u = cf_ref_update(r, PROLLY_REF_EXPECT_ANY, NULL, 1, NULL);
	CHECK_RC(t, cf_write_refs(st, &u, 1, NULL), 0);
	CHECK(t, cf_ref_is(st, r, NULL));
	u = cf_ref_update(r, PROLLY_REF_EXPECT_ANY, NULL, 1, NULL);
	CHECK_RC(t, cf_write_refs(st, &u, 1, NULL), 0);
	CHECK(t, cf_ref_is(st, r, NULL));
}

void cf_case_conflict_writes_nothing(cf_case *t, prolly_store *st)
{
	const char *r = "refs/heads/main";
	prolly_id v1 = cf_make_id(7, 1), wrong = cf_make_id(7, 2);
	cf_tnode n = cf_tnode_make(7, 3, 700);
	REQUIRE(t, n.data);
	CHECK_RC(t, cf_set_ref(st, r, &v1), 0);
	prolly_store_node sn = cf_as_store_node(&n);
	prolly_ref_update u = cf_ref_update(r, PROLLY_REF_EXPECT_VALUE, &wrong, 0, &n.id);
	prolly_store_write w = cf_write_of(&sn, 1, &u, 1);
	w.durable = 1;
	CHECK_RC(t, st->write(st, &w), PROLLY_ECONFLICT);
	CHECK(t, w.current_epoch != 0);
	CHECK(t, u.conflict == 1 && u.current_exists == 1 && prolly_id_equal(&u.current, &v1));
	CHECK(t, strlen(prolly_last_error()) > 0);
	CHECK(t, cf_lacks_node(st, &n.id));
	CHECK(t, cf_ref_is(st, r, &v1));
	cf_tnode_free(&n);
}

void cf_case_two_refs_one_fails(cf_case *t, prolly_store *st)
{
	prolly_id v1 = cf_make_id(8, 1), v2 = cf_make_id(8, 2), v9 = cf_make_id(8, 9);
	CHECK_RC(t, cf_set_ref(st, "refs/heads/a", &v1), 0);
	prolly_ref_update u[2] = {cf_ref_update("refs/heads/a", PROLLY_REF_EXPECT_VALUE, &v1, 0, &v2),
	                          cf_ref_update("refs/heads/b", PROLLY_REF_EXPECT_VALUE, &v9, 0, &v2)};
	CHECK_RC(t, cf_write_refs(st, u, 2, NULL), PROLLY_ECONFLICT);
	CHECK(t, u[1].conflict == 1 && u[1].current_exists == 0);
	CHECK(t, u[0].conflict == 0);
	CHECK(t, cf_ref_is(st, "refs/heads/a", &v1));
	CHECK(t, cf_ref_is(st, "refs/heads/b", NULL));

	/* Both failing: both reported. */
	prolly_ref_update w[2] = {cf_ref_update("refs/heads/a", PROLLY_REF_EXPECT_ABSENT, NULL, 0, &v2),
	                          cf_ref_update("refs/heads/b", PROLLY_REF_EXPECT_VALUE, &v1, 1, NULL)};
	CHECK_RC(t, cf_write_refs(st, w, 2, NULL), PROLLY_ECONFLICT);
	CHECK(t, w[0].conflict == 1 && w[0].current_exists == 1 && prolly_id_equal(&w[0].current, &v1));
	CHECK(t, w[1].conflict == 1 && w[1].current_exists == 0);
	CHECK(t, cf_ref_is(st, "refs/heads/a", &v1));
}

void cf_case_list_refs(cf_case *t, prolly_store *st)
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
		prolly_id v = cf_make_id(9, i);
		CHECK_RC(t, cf_set_ref(st, names[i], &v), 0);
	}
	cf_listed l;
	memset(&l, 0, sizeof(l));
	CHECK_RC(t, st->list_refs(st, "", cf_listed_fn, &l), 0);
	REQUIRE(t, l.n == (int)n);
	for (size_t i = 0; i < n; i++) {
		CHECK(t, strcmp(l.names[i], sorted[i]) == 0);
		for (size_t j = 0; j < n; j++)
			if (strcmp(names[j], l.names[i]) == 0) {
				prolly_id v = cf_make_id(9, j);
				CHECK(t, prolly_id_equal(&l.values[i], &v));
			}
	}

	/* Each prefix lists sorted[first, first + count). Prefixes made of 0xff bytes have no
	 * successor: everything from them on. */
	static const struct {
		const char *prefix;
		size_t first, count;
	} prefixes[] = {
	    {"refs/heads/", 1, 5},  {"refs/heads/a", 1, 3}, {"refs/heads/a/x", 3, 1},
	    {"nothing", 0, 0},      {"zz", 0, 0},           {"\xff\xff", 8, 1},
	    {"\xff\xff\xff", 0, 0}, {"\xff\xffz", 8, 1},
	};
	for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
		memset(&l, 0, sizeof(l));
		CHECK_RC(t, st->list_refs(st, prefixes[p].prefix, cf_listed_fn, &l), 0);
		CHECK(t, l.n == (int)prefixes[p].count);
		for (size_t i = 0; i < prefixes[p].count && i < (size_t)l.n; i++)
			CHECK(t, strcmp(l.names[i], sorted[prefixes[p].first + i]) == 0);
	}

	/* A non-zero callback result stops the listing and is returned. */
	memset(&l, 0, sizeof(l));
	l.stop_after = 2;
	CHECK_RC(t, st->list_refs(st, "", cf_listed_fn, &l), 55);
	CHECK(t, l.n == 2);
}

/* get_refs (interface version 7, optional): every name answered by position, duplicates
 * and absent refs included; more names than one statement of a server store takes (the
 * PostgreSQL store's read_chunk is 4,096); the longest name. (The engine checks the names:
 * S3.) */
void cf_case_get_refs(cf_case *t, prolly_store *st)
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
		u[k++].value = cf_make_id(34, i);
	}
	CHECK_RC(t, cf_write_refs(st, u, k, NULL), 0);

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
		prolly_id want = cf_make_id(34, j);
		if (j % STEP == 0 ? found[i] != 1 || !prolly_id_equal(&out[i], &want) : found[i] != 0)
			bad++;
	}
	CHECK(t, bad == 0);

	/* duplicates, and a name no ref has */
	prolly_id v0 = cf_make_id(34, 0), v7 = cf_make_id(34, 7);
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
	prolly_id lv = cf_make_id(34, 1);
	CHECK_RC(t, cf_set_ref(st, longname, &lv), 0);
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

void cf_case_ref_names(cf_case *t, prolly_store *st)
{
	char longname[PROLLY_MAX_REF_NAME + 2];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0; /* 256 bytes */
	prolly_id v = cf_make_id(10, 1), out;
	cf_tnode n = cf_tnode_make(10, 2, 33);
	REQUIRE(t, n.data);

	CHECK_RC(t, st->get_ref(st, "", &out, NULL), PROLLY_EINVAL);
	CHECK_RC(t, st->get_ref(st, longname, &out, NULL), PROLLY_EINVAL);
	/* (A write's names, order and duplicates are the engine's to check: test_store.c.) */

	/* The longest valid name works. */
	longname[PROLLY_MAX_REF_NAME] = 0;
	CHECK_RC(t, cf_set_ref(st, longname, &v), 0);
	CHECK(t, cf_ref_is(st, longname, &v));
	cf_tnode_free(&n);
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
		prolly_id mine = cf_make_id(15, (uint64_t)round * RACERS + (uint64_t)a->idx);
		unsigned char bytes[40];
		cf_fill(bytes, sizeof(bytes), (uint64_t)round * RACERS + (uint64_t)a->idx);
		prolly_store_node sn = {mine, bytes, sizeof(bytes)};
		prolly_ref_update u =
		    round == 0
		        ? cf_ref_update("refs/heads/race", PROLLY_REF_EXPECT_ABSENT, NULL, 0, &mine)
		        : cf_ref_update("refs/heads/race", PROLLY_REF_EXPECT_VALUE, &r->prev, 0, &mine);
		prolly_store_write w = cf_write_of(&sn, 1, &u, 1);
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
		prolly_id next = cf_make_id(16, i);
		unsigned char bytes[24];
		cf_fill(bytes, sizeof(bytes), 16000 + i);
		prolly_store_node sn = {next, bytes, sizeof(bytes)};
		prolly_ref_update u =
		    have ? cf_ref_update("refs/heads/other", PROLLY_REF_EXPECT_VALUE, &last, 0, &next)
		         : cf_ref_update("refs/heads/other", PROLLY_REF_EXPECT_ABSENT, NULL, 0, &next);
		prolly_store_write w = cf_write_of(&sn, 1, &u, 1);
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
			rc = r->st->get_nodes(r->st, &v, 1, cf_count_fn, &calls);
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

void cf_case_race(cf_case *t, prolly_store *st)
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
		prolly_id won = cf_make_id(15, (uint64_t)round * RACERS + (uint64_t)winner);
		prolly_id ids[RACERS];
		for (int i = 0; i < RACERS; i++) {
			ids[i] = cf_make_id(15, (uint64_t)round * RACERS + (uint64_t)i);
			if (i == winner) {
				CHECK(t, r->conflict[i] == 0);
				continue;
			}
			CHECK_RC(t, r->rc[i], PROLLY_ECONFLICT);
			CHECK(t, r->conflict[i] == 1 && r->exists[i] == 1);
			CHECK(t, prolly_id_equal(&r->current[i], &won));
		}
		CHECK(t, cf_ref_is(st, "refs/heads/race", &won));
		/* Only the winner's node became visible. */
		int calls = 0;
		CHECK_RC(t, st->get_nodes(st, ids, RACERS, cf_count_fn, &calls), 0);
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
	/* the n-th cf_listed ref: the n-th number of the expected set, in order */
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
		prolly_id v = cf_make_id(k % 2 ? 31 : 32, k);
		if (!prolly_id_equal(value, &v))
			r->bad++;
	}
	r->n++;
	return 0;
}

void cf_case_many_refs(cf_case *t, prolly_store *st)
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
		u[k++].value = cf_make_id(30, i);
	}
	prolly_store_write w = cf_write_of(NULL, 0, u, k);
	w.durable = 1;
	CHECK_RC(t, st->write(st, &w), 0);

	memset(u, 0, N * sizeof(*u));
	k = 0;
	for (unsigned i = 0; i < N; i++) { /* in name order (S1) */
		u[k].name = names[i];
		if (i % 4 == 0) {
			u[k].expect = PROLLY_REF_EXPECT_VALUE;
			u[k].expected = cf_make_id(30, i);
			u[k].remove = 1;
		} else if (i % 4 == 2) {
			u[k].expect = PROLLY_REF_EXPECT_VALUE;
			u[k].expected = cf_make_id(30, i);
			u[k].value = cf_make_id(32, i);
		} else {
			u[k].expect = PROLLY_REF_EXPECT_ABSENT;
			u[k].value = cf_make_id(31, i);
		}
		k++;
	}
	w = cf_write_of(NULL, 0, u, k);
	w.durable = 1;
	CHECK_RC(t, st->write(st, &w), 0);
	refcheck r = {0, 0};
	CHECK_RC(t, st->list_refs(st, "refs/heads/many/", refcheck_fn, &r), 0);
	CHECK(t, r.n == N - N / 4 && r.bad == 0);

	prolly_id v = cf_make_id(33, 0);
	CHECK_RC(t, cf_set_ref(st, "refs/heads/many/b0000x", &v), 0);
	CHECK(t, cf_ref_is(st, "refs/heads/many/b0000x", &v));
	prolly_id w2 = cf_make_id(32, 2);
	CHECK(t, cf_ref_is(st, "refs/heads/many/b0002", &w2));
	prolly_id got;
	CHECK_RC(t, st->get_ref(st, "refs/heads/many/b0004", &got, NULL), PROLLY_ENOTFOUND);
	free(names);
	free(u);
}
