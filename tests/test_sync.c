/*
 * test_sync.c - prolly_sync: history copied between stores, and a source or a request it must
 * refuse.
 *
 * Every direction between memory, LMDB and PostgreSQL (a throwaway cluster when PROLLY_PG_URL is
 * unset, tm_pg_guard; a fresh schema per store), a destination without has_nodes, a fetch of a
 * branch that moved, an update another sync already made (SY12); bad arguments, a ref to move
 * to a tree or a missing commit, a source that lost a head's tree or holds damaged bytes. The
 * rest of the sync tests: test_sync_fail.c (a failure at each write, then a rerun; gc after it;
 * checkpoints in rounds), test_sync_race.c (other writers and gc during a sync or a push),
 * test_sync_remote.c (remotes, fetch and push through them, the refs they copy),
 * test_sync_cost.c (what a sync costs and holds). The stores and histories:
 * tests/lib/sync_fix.h.
 */
#include "internal.h"
#include "lib/k6.h"
#include "lib/model.h"
#include "lib/passthru.h"
#include "lib/sync_fix.h"
#include "ptest.h"

#include <stdio.h>

/* ---- every direction ---------------------------------------------------------------------- */

static void one_direction(int from, int to)
{
	prolly_db *src = sf_new_db(from), *dst = sf_new_db(to);
	prolly_id heads[2], c;
	const char *names[2] = {"main", "feature"};
	prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
	PT_REQUIRE(src && dst);
	PT_REQUIRE(sf_make_history(src, &heads[0], &heads[1]) == 0);

	PT_CHECK_RC(sf_sync_branches(&st, dst, src, names, heads, 2, NULL), 0);
	PT_CHECKF(st.commits_copied == 6, "%s -> %s: %llu commits", sf_kind_name[from],
	          sf_kind_name[to], (unsigned long long)st.commits_copied);
	PT_CHECK(prolly_branch_head(&c, dst, "main") == 0 && prolly_id_equal(&c, &heads[0]));
	PT_CHECK(prolly_branch_head(&c, dst, "feature") == 0 && prolly_id_equal(&c, &heads[1]));
	PT_CHECK(sf_same_history(src, dst, &heads[0]));
	PT_CHECK(sf_same_history(src, dst, &heads[1]));
	PT_CHECK_RC(k6_holds(dst), 0);

	/* Again: nothing is missing, one question. */
	prolly_sync_stats again = PROLLY_SYNC_STATS_INIT;
	PT_CHECK_RC(sf_sync_branches(&again, dst, src, names, heads, 2, NULL), 0);
	PT_CHECK(again.commits_copied == 0 && again.nodes_copied == 0 && again.has_calls == 1);

	/* And back, after a commit in dst: only the new commit and its path travel. */
	PT_REQUIRE(sf_put_range(&c, dst, "main", 7, 1, 9) == 0);
	prolly_sync_stats back = PROLLY_SYNC_STATS_INIT;
	PT_CHECK_RC(sf_sync_branches(&back, src, dst, names, &c, 1, NULL), 0);
	PT_CHECK(back.commits_copied == 1 && back.nodes_copied >= 1 && back.nodes_copied <= 4);
	PT_CHECK(sf_same_history(dst, src, &c));
	PT_CHECK_RC(k6_holds(src), 0);

	/* A push onto the head dst holds (SY7): no question, the same trees. */
	prolly_id c2;
	PT_REQUIRE(sf_put_range(&c2, src, "main", 40, 30, 10) == 0);
	prolly_sync_stats push = PROLLY_SYNC_STATS_INIT;
	PT_CHECK_RC(sf_push_main(&push, dst, src, &c, &c2, NULL), 0);
	PT_CHECKF(push.has_calls == 0 && push.commits_copied == 1 && push.nodes_copied >= 1,
	          "%s -> %s: %llu questions, %llu commits, %llu nodes", sf_kind_name[from],
	          sf_kind_name[to], (unsigned long long)push.has_calls,
	          (unsigned long long)push.commits_copied, (unsigned long long)push.nodes_copied);
	PT_CHECK(prolly_branch_head(&c, dst, "main") == 0 && prolly_id_equal(&c, &c2));
	PT_CHECK(sf_same_history(src, dst, &c2));
	PT_CHECK_RC(k6_holds(dst), 0);
	prolly_close(src);
	prolly_close(dst);
}

PT_TEST(sync_every_direction)
{
	for (int from = 0; from < SF_KINDS; from++)
		for (int to = 0; to < SF_KINDS; to++) {
			if ((from == SF_PG || to == SF_PG) && !sf_have_pg) {
				PT_CHECKF(0, "no PostgreSQL server");
				continue;
			}
			one_direction(from, to);
		}
}

/* A store without has_nodes is asked with get_nodes. */
PT_TEST(sync_without_has_nodes)
{
	prolly_store *mem = NULL;
	prolly_db *src = sf_new_db(SF_MEM), *dst = NULL;
	prolly_id heads[2];
	const char *names[2] = {"main", "feature"};
	PT_REQUIRE(src && prolly_store_mem_new(&mem) == 0);
	tp_store *w = tp_new(sizeof(tp_store), mem);
	PT_REQUIRE(w);
	w->base.has_nodes = NULL;
	PT_REQUIRE(prolly_db_new(&dst, &w->base, NULL) == 0);
	PT_REQUIRE(sf_make_history(src, &heads[0], &heads[1]) == 0);
	PT_CHECK_RC(sf_sync_branches(NULL, dst, src, names, heads, 2, NULL), 0);
	PT_CHECK(sf_same_history(src, dst, &heads[0]));
	prolly_close(src);
	prolly_close(dst);
}

/* ---- fetch of a branch that moved ------------------------------------------------------------ */

PT_TEST(sync_fetch_moved_branch)
{
	prolly_db *remote = sf_new_db(SF_LMDB), *local = sf_new_db(SF_MEM);
	prolly_id h1, h2, c;
	prolly_ref_update u;
	PT_REQUIRE(remote && local);
	PT_REQUIRE(sf_put_range(&h1, remote, "main", 0, 2000, 1) == 0);
	memset(&u, 0, sizeof(u));
	u.name = "remotes/origin/main";
	u.value = h1;
	PT_CHECK_RC(prolly_sync(NULL, local, remote, NULL, 0, &u, 1, NULL), 0);
	PT_CHECK(prolly__get_ref(local, "remotes/origin/main", &c) == 0 && prolly_id_equal(&c, &h1));
	PT_REQUIRE(sf_put_range(&h2, remote, "main", 50, 10, 2) == 0);
	prolly_sync_stats st = PROLLY_SYNC_STATS_INIT;
	u.expect = PROLLY_REF_EXPECT_VALUE;
	u.expected = h1;
	u.value = h2;
	PT_CHECK_RC(prolly_sync(&st, local, remote, NULL, 0, &u, 1, NULL), 0);
	PT_CHECK(st.commits_copied == 1);
	PT_CHECK(st.has_calls == 0); /* the tracking ref's commit is a known head (SY7) */
	PT_CHECK(prolly__get_ref(local, "remotes/origin/main", &c) == 0 && prolly_id_equal(&c, &h2));
	PT_CHECK(sf_same_history(remote, local, &h2));
	/* A stale expectation: the move is done when the ref already holds its new value (SY12);
	 * otherwise it changes nothing and says what the ref holds. */
	u.expected = h1;
	PT_CHECK_RC(prolly_sync(NULL, local, remote, NULL, 0, &u, 1, NULL), 0);
	PT_CHECK(!u.conflict);
	u.value = h1;
	u.expected = h1;
	PT_CHECK_RC(prolly_sync(NULL, local, remote, NULL, 0, &u, 1, NULL), PROLLY_ECONFLICT);
	PT_CHECK(u.conflict && u.current_exists && prolly_id_equal(&u.current, &h2));
	prolly_close(remote);
	prolly_close(local);
}

/* ---- errors ---------------------------------------------------------------------------------- */

PT_TEST(sync_errors)
{
	prolly_db *a = sf_new_db(SF_MEM), *b = sf_new_db(SF_MEM);
	prolly_id h, bogus;
	PT_REQUIRE(a && b && sf_put_range(&h, a, "main", 0, 10, 1) == 0);
	memset(bogus.bytes, 7, sizeof(bogus.bytes));
	PT_CHECK_RC(prolly_sync(NULL, NULL, a, &h, 1, NULL, 0, NULL), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_sync(NULL, b, a, &bogus, 1, NULL, 0, NULL), PROLLY_ENOTFOUND);
	prolly_commit *c = NULL;
	PT_REQUIRE(prolly_commit_read(&c, a, &h) == 0);
	PT_CHECK_RC(prolly_sync(NULL, b, a, &c->tree, 1, NULL, 0, NULL), PROLLY_EINVAL); /* a tree */
	prolly_commit_free(c);
	prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
	o.version = 99;
	PT_CHECK_RC(prolly_sync(NULL, b, a, &h, 1, NULL, 0, &o), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_sync_options_init(&o, 2), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_sync_options_init(&o, PROLLY_SYNC_OPTIONS_VERSION), 0);
	/* Objects only: copied, no ref. */
	PT_CHECK_RC(prolly_sync(NULL, b, a, &h, 1, NULL, 0, NULL), 0);
	prolly_id x;
	PT_CHECK(prolly_branch_head(&x, b, "main") == PROLLY_ENOTFOUND);
	PT_CHECK(prolly_commit_read(&c, b, &h) == 0);
	prolly_commit_free(c);
	prolly_close(a);
	prolly_close(b);
}

/* ---- a source that lost a head's tree ---------------------------------------------------- */

/* A source store that answers as if one object were absent (hidden), as a store damaged or
 * edited by hand would. */
typedef struct hiding {
	tp_store tp;
	prolly_id hidden;
	int on;
} hiding;

typedef struct hiding_call {
	const hiding *h;
	const prolly_id *ids;
	prolly_store_found_fn found;
	void *payload;
} hiding_call;

static int hiding_found(void *payload, size_t index, const void *data, size_t size)
{
	hiding_call *c = payload;
	if (c->h->on && prolly_id_equal(&c->ids[index], &c->h->hidden))
		return 0;
	return c->found(c->payload, index, data, size);
}

static int hiding_get_nodes(prolly_store *st, const prolly_id *ids, size_t n,
                            prolly_store_found_fn found, void *payload)
{
	hiding_call c = {(const hiding *)(void *)st, ids, found, payload};
	prolly_store *in = tp_inner(st);
	return in->get_nodes(in, ids, n, hiding_found, &c);
}

static int hiding_has_nodes(prolly_store *st, const prolly_id *ids, size_t n, unsigned char *has)
{
	hiding *h = (hiding *)(void *)st;
	prolly_store *in = tp_inner(st);
	int rc = in->has_nodes(in, ids, n, has);
	for (size_t i = 0; i < n && !rc && h->on; i++)
		if (prolly_id_equal(&ids[i], &h->hidden))
			has[i] = 0;
	return rc;
}

/* Retention may take an old commit's tree, never a head's: a source whose branch head has lost
 * its tree is damaged, and a sync of that branch fails (PROLLY_ECORRUPT) without moving the
 * branch, on a clone (every tree asked about) and on a fetch onto a known head (SY7); once the
 * source is whole again a rerun copies it. */
PT_TEST(sync_head_tree_missing_in_source)
{
	prolly_store *mem = NULL;
	prolly_db *src = NULL, *dst = sf_new_db(SF_MEM);
	prolly_id heads[2], tree, c, old;
	const char *names[1] = {"main"};
	PT_REQUIRE(dst && prolly_store_mem_new(&mem) == 0);
	hiding *h = tp_new(sizeof(hiding), mem);
	PT_REQUIRE(h);
	h->tp.base.get_nodes = hiding_get_nodes;
	if (h->tp.base.has_nodes)
		h->tp.base.has_nodes = hiding_has_nodes;
	h->tp.base.get_ref_objects = NULL; /* its reads go through get_nodes */
	PT_REQUIRE(prolly_db_new(&src, &h->tp.base, NULL) == 0);
	PT_CHECK_RC(sf_make_history(src, &heads[0], &heads[1]), 0);
	PT_REQUIRE(sf_tree_of(&tree, src, &heads[0]) == 0);
	h->hidden = tree;
	h->on = 1;
	prolly_db_cache_clear(src);
	PT_CHECK_RC(sf_sync_branches(NULL, dst, src, names, heads, 1, NULL), PROLLY_ECORRUPT);
	PT_CHECK(strstr(prolly_last_error(), "refs/heads/main") != NULL);
	PT_CHECK_RC(prolly_branch_head(&c, dst, "main"), PROLLY_ENOTFOUND);
	h->on = 0;
	PT_CHECK_RC(sf_sync_branches(NULL, dst, src, names, heads, 1, NULL), 0);
	PT_CHECK(prolly_branch_head(&c, dst, "main") == 0 && prolly_id_equal(&c, &heads[0]));
	/* A fetch onto the head dst holds now. */
	old = heads[0];
	PT_REQUIRE(sf_put_range(&heads[0], src, "main", 500, 3, 9) == 0);
	PT_REQUIRE(sf_tree_of(&tree, src, &heads[0]) == 0);
	h->hidden = tree;
	h->on = 1;
	prolly_db_cache_clear(src);
	PT_CHECK_RC(sf_push_main(NULL, dst, src, &old, &heads[0], NULL), PROLLY_ECORRUPT);
	PT_CHECK(prolly_branch_head(&c, dst, "main") == 0 && prolly_id_equal(&c, &old));
	h->on = 0;
	PT_CHECK_RC(sf_push_main(NULL, dst, src, &old, &heads[0], NULL), 0);
	PT_CHECK(prolly_branch_head(&c, dst, "main") == 0 && prolly_id_equal(&c, &heads[0]));
	PT_CHECK(sf_same_history(src, dst, &heads[0]));
	prolly_close(src);
	prolly_close(dst);
}

/* ---- a source whose bytes are damaged ------------------------------------------------------- */

/* A store whose get_nodes hands out the object damaged with one byte flipped (when on). */
typedef struct damaging {
	tp_store tp;
	prolly_id bad;
	int on;
} damaging;

typedef struct damaging_call {
	const damaging *d;
	const prolly_id *ids;
	prolly_store_found_fn found;
	void *payload;
} damaging_call;

static int damaging_found(void *payload, size_t index, const void *data, size_t size)
{
	damaging_call *c = payload;
	if (!c->d->on || !size || !prolly_id_equal(&c->ids[index], &c->d->bad))
		return c->found(c->payload, index, data, size);
	unsigned char *copy = malloc(size);
	if (!copy)
		return PROLLY_ENOMEM;
	memcpy(copy, data, size);
	copy[size - 1] ^= 0x01;
	int rc = c->found(c->payload, index, copy, size);
	free(copy);
	return rc;
}

static int damaging_get_nodes(prolly_store *st, const prolly_id *ids, size_t n,
                              prolly_store_found_fn found, void *payload)
{
	damaging_call c = {(const damaging *)(void *)st, ids, found, payload};
	prolly_store *in = tp_inner(st);
	return in->get_nodes(in, ids, n, damaging_found, &c);
}

/* An object of the source that does not hash to its id fails the sync (PROLLY_ECORRUPT) with a
 * message that says the source holds it, and which kind of store that is: it said only "object
 * X is corrupt", and a push or a fetch between two stores of one kind left the user guessing
 * which store to repair. On a clone (every tree asked about) and on a push onto a known head
 * (the tree compared in the source, SY7). */
PT_TEST(sync_damaged_source_object_names_the_source)
{
	prolly_store *mem = NULL;
	prolly_db *src = NULL, *dst = sf_new_db(SF_MEM);
	prolly_id heads[2], tree, c, old;
	const char *names[1] = {"main"};
	PT_REQUIRE(dst && prolly_store_mem_new(&mem) == 0);
	damaging *d = tp_new(sizeof(damaging), mem);
	PT_REQUIRE(d);
	d->tp.base.get_nodes = damaging_get_nodes;
	d->tp.base.get_ref_objects = NULL; /* its reads go through get_nodes */
	d->tp.base.get_ref_objects_known = NULL;
	PT_REQUIRE(prolly_db_new(&src, &d->tp.base, NULL) == 0);
	PT_CHECK_RC(sf_make_history(src, &heads[0], &heads[1]), 0);
	PT_REQUIRE(sf_tree_of(&tree, src, &heads[0]) == 0);
	d->bad = tree;
	d->on = 1;
	prolly_db_cache_clear(src);
	PT_CHECK_RC(sf_sync_branches(NULL, dst, src, names, heads, 1, NULL), PROLLY_ECORRUPT);
	PT_CHECKF(strstr(prolly_last_error(), "source (mem store)") != NULL, "%s", prolly_last_error());
	PT_CHECK(strstr(prolly_last_error(), "destination") == NULL);
	PT_CHECK_RC(prolly_branch_head(&c, dst, "main"), PROLLY_ENOTFOUND);
	d->on = 0;
	PT_CHECK_RC(sf_sync_branches(NULL, dst, src, names, heads, 1, NULL), 0);
	/* A push onto the head dst holds: the new tree's root is read to be compared. */
	old = heads[0];
	PT_REQUIRE(sf_put_range(&heads[0], src, "main", 500, 3, 9) == 0);
	PT_REQUIRE(sf_tree_of(&tree, src, &heads[0]) == 0);
	d->bad = tree;
	d->on = 1;
	prolly_db_cache_clear(src);
	PT_CHECK_RC(sf_push_main(NULL, dst, src, &old, &heads[0], NULL), PROLLY_ECORRUPT);
	PT_CHECKF(strstr(prolly_last_error(), "source (mem store)") != NULL, "%s", prolly_last_error());
	PT_CHECK(prolly_branch_head(&c, dst, "main") == 0 && prolly_id_equal(&c, &old));
	d->on = 0;
	PT_CHECK_RC(sf_push_main(NULL, dst, src, &old, &heads[0], NULL), 0);
	PT_CHECK(sf_same_history(src, dst, &heads[0]));
	prolly_close(src);
	prolly_close(dst);
}

/* SY12: an update that loses its compare-and-swap to a ref already at its new value (another
 * sync made the same move) is done; the others of the same sync go through. A loss to any other
 * value still fails the whole sync, nothing moved. Before, both were PROLLY_ECONFLICT: of two
 * fetches of one remote into one store, the one that lost failed (and a pull stopped). */
PT_TEST(sync_update_already_made_is_done)
{
	prolly_db *src = sf_new_db(SF_MEM), *dst = sf_new_db(SF_MEM);
	prolly_id heads[2], got, other;
	prolly_ref_update u[2];
	PT_REQUIRE(src && dst);
	PT_CHECK_RC(sf_make_history(src, &heads[0], &heads[1]), 0);
	memset(u, 0, sizeof(u));
	u[0].name = "refs/remotes/origin/feature";
	u[0].expect = PROLLY_REF_EXPECT_ABSENT;
	u[0].value = heads[1];
	PT_CHECK_RC(prolly_sync(NULL, dst, src, NULL, 0, u, 1, NULL), 0);
	/* The same move again, expecting what the first sync saw (absent): already made. */
	memset(u, 0, sizeof(u));
	u[0].name = "refs/remotes/origin/feature";
	u[0].expect = PROLLY_REF_EXPECT_ABSENT;
	u[0].value = heads[1];
	u[1].name = "refs/remotes/origin/main";
	u[1].expect = PROLLY_REF_EXPECT_ABSENT;
	u[1].value = heads[0];
	PT_CHECK_RC(prolly_sync(NULL, dst, src, NULL, 0, u, 2, NULL), 0);
	PT_CHECK(!u[0].conflict && !u[1].conflict);
	PT_CHECK(prolly__get_ref(dst, "refs/remotes/origin/main", &got) == 0 &&
	         prolly_id_equal(&got, &heads[0]));
	/* A loss to another value: the sync fails and the other update does not land. */
	PT_REQUIRE(sf_put_range(&other, src, "main", 9000, 2, 6) == 0);
	memset(u, 0, sizeof(u));
	u[0].name = "refs/remotes/origin/feature";
	u[0].expect = PROLLY_REF_EXPECT_ABSENT;
	u[0].value = heads[0]; /* not what the ref holds */
	u[1].name = "refs/remotes/origin/main";
	u[1].expect = PROLLY_REF_EXPECT_VALUE;
	u[1].expected = heads[0];
	u[1].value = other;
	PT_CHECK_RC(prolly_sync(NULL, dst, src, NULL, 0, u, 2, NULL), PROLLY_ECONFLICT);
	PT_CHECK(u[0].conflict);
	PT_CHECK(prolly__get_ref(dst, "refs/remotes/origin/main", &got) == 0 &&
	         prolly_id_equal(&got, &heads[0]));
	prolly_close(src);
	prolly_close(dst);
}

/* A ref to move to a tree, or to a commit neither store has: the sync fails before any ref moves
 * and its message names the ref (it named only the id). */
PT_TEST(sync_names_the_ref_at_a_non_commit)
{
	prolly_db *src = sf_new_db(SF_MEM), *dst = sf_new_db(SF_MEM);
	prolly_id heads[2], bad[1], c;
	const char *names[1] = {"dev"};
	PT_REQUIRE(src && dst);
	PT_CHECK_RC(sf_make_history(src, &heads[0], &heads[1]), 0);
	PT_REQUIRE(sf_tree_of(&bad[0], src, &heads[0]) == 0);
	PT_CHECK_RC(sf_sync_branches(NULL, dst, src, names, bad, 1, NULL), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "refs/heads/dev names") != NULL, "%s",
	          prolly_last_error());
	bad[0] = tm_fake_id(0xab);
	PT_CHECK_RC(sf_sync_branches(NULL, dst, src, names, bad, 1, NULL), PROLLY_ENOTFOUND);
	PT_CHECKF(strstr(prolly_last_error(), "refs/heads/dev names commit") != NULL, "%s",
	          prolly_last_error());
	PT_CHECK_RC(prolly_branch_head(&c, dst, "dev"), PROLLY_ENOTFOUND);
	prolly_close(src);
	prolly_close(dst);
}

SF_MAIN
