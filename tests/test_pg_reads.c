/*
 * test_pg_reads.c - the PostgreSQL store's reads against a real server, and the engine on top:
 * the plans of the array reads on a new store's empty tables (index probes), get_ref_objects in
 * one statement, the history read ahead, a broken connection mid-read, a corrupted node row, a
 * malformed refs row, and gc while the engine writes. The server and what the programs share:
 * tests/lib/pgt.h.
 */
#include "lib/model.h"
#include "lib/pgt.h"
#include "ptest.h"
#include "rng.h"

#include <openssl/sha.h>
#include <pthread.h>
#include <stdlib.h>

/* ---- get_ref_objects -------------------------------------------------------------------------- */

/* The statements that look an array of ids or names up, prepared as the store prepares them (a
 * generic plan) on the tables of a new store, which are empty: each must probe the primary key
 * per element, never scan the table. A plain join made a hash join over a sequential scan there,
 * and the plan stayed as the table grew (every get_nodes and has_nodes of a clone into a new
 * store read the whole node table). */
PT_TEST(pg_array_statements_probe_the_index)
{
	prolly_store *st = pgt_open(pgt_new_schema(), 0, 0, 1, 0);
	PGconn *c = pgt_admin();
	PT_REQUIRE(st && c);
	static const struct {
		const char *what, *args;
	} stmts[] = {
	    {"get_nodes", "('{}')"},
	    {"has_nodes", "('{}')"},
	    {"get_refs", "('{}')"},
	    {"get_ancestors", "('{}', 10, '\\x50524c43', 4, 12)"},
	};
	PT_CHECK(pgt_sql1(c, "SET plan_cache_mode = force_generic_plan") == -1);
	for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
		char name[16], sql[256];
		snprintf(name, sizeof(name), "probe%zu", i);
		const char *text = prolly_store_pg_statement(st, stmts[i].what);
		PT_CHECKF(text, "%s", stmts[i].what);
		if (!text)
			continue;
		PGresult *r = PQprepare(c, name, text, 0, NULL);
		PT_CHECKF(PQresultStatus(r) == PGRES_COMMAND_OK, "prepare %s: %s", stmts[i].what,
		          PQresultErrorMessage(r));
		PQclear(r);
		snprintf(sql, sizeof(sql), "EXPLAIN EXECUTE %s%s", name, stmts[i].args);
		r = PQexec(c, sql);
		PT_CHECKF(PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", sql, PQresultErrorMessage(r));
		char plan[4096] = "";
		size_t at = 0;
		for (int row = 0; PQresultStatus(r) == PGRES_TUPLES_OK && row < PQntuples(r); row++)
			at += (size_t)snprintf(plan + at, at < sizeof(plan) ? sizeof(plan) - at : 0, "%s\n",
			                       PQgetvalue(r, row, 0));
		PQclear(r);
		PT_CHECKF(!strstr(plan, "Seq Scan") && !strstr(plan, "Hash"), "%s:\n%s", stmts[i].what,
		          plan);
		PT_CHECKF(strstr(plan, "Index"), "%s:\n%s", stmts[i].what, plan);
	}
	PQfinish(c);
	prolly_store_close(st);
}

/* The history walk's recursive statement: UNION keeps a hash table of the rows seen, which
 * PostgreSQL makes at the start of every execution with room for the planner's estimate of the
 * rows. Over generate_series of unknown bounds (taken for 1000 rows a call) that estimate was
 * 1,000,010 and the table megabytes (capped by hash_mem), zeroed per execution: the first log
 * of each new connection spent about 50 ms in its bind. The estimate must stay small, whatever the table holds. */
PT_TEST(pg_ancestors_statement_estimates_few_rows)
{
	prolly_store *st = pgt_open(pgt_new_schema(), 0, 0, 1, 0);
	PGconn *c = pgt_admin();
	PT_REQUIRE(st && c);
	const char *text = prolly_store_pg_statement(st, "get_ancestors");
	PT_REQUIRE(text);
	PT_CHECK(pgt_sql1(c, "SET plan_cache_mode = force_generic_plan") == -1);
	PGresult *r = PQprepare(c, "anc", text, 0, NULL);
	PT_CHECKF(PQresultStatus(r) == PGRES_COMMAND_OK, "%s", PQresultErrorMessage(r));
	PQclear(r);
	r = PQexec(c, "EXPLAIN EXECUTE anc('{}', 10, '\\x50524c43', 4, 12)");
	PT_REQUIRE(PQresultStatus(r) == PGRES_TUPLES_OK);
	int found = 0;
	for (int row = 0; row < PQntuples(r); row++) {
		const char *line = PQgetvalue(r, row, 0), *at = strstr(line, "Recursive Union");
		const char *rows = at ? strstr(at, "rows=") : NULL;
		if (!rows)
			continue;
		found = 1;
		long long n = strtoll(rows + 5, NULL, 10);
		PT_CHECKF(n > 0 && n <= 20000, "estimated %lld rows: %s", n, line);
	}
	PT_CHECK(found);
	PQclear(r);
	PQfinish(c);
	prolly_store_close(st);
}

PT_TEST(get_ref_objects_one_statement)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PT_REQUIRE(st && st->get_ref_objects);
	/* A commit-like object: 5 bytes, the 32-byte id of a "root", 20 more bytes. */
	pgt_tn root;
	pgt_tn_make(&root, 24, 1);
	unsigned char commit[57];
	memset(commit, 'C', sizeof(commit));
	memcpy(commit + 5, root.sn.id.bytes, PROLLY_ID_SIZE);
	prolly_store_node sn[2] = {root.sn, {{{0}}, commit, sizeof(commit)}};
	SHA256(commit, sizeof(commit), sn[1].id.bytes);
	prolly_ref_update u = pgt_upd("refs/heads/o", PROLLY_REF_EXPECT_ABSENT, NULL, &sn[1].id);
	PT_CHECK_RC(pgt_write1(st, sn, 2, &u), 0);

	pgt_seen s;
	prolly_id got;
	uint64_t epoch = 0;
	memset(&s, 0, sizeof(s));
	pgt_cost_begin(st);
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", 5, &got, &epoch, pgt_seen_fn, &s), 0);
	pgt_cost k = pgt_cost_end(st);
	PT_CHECKF(k.stmts == 1 && k.trips == 1 && k.store_stmts == 1, "%llu statements",
	          (unsigned long long)k.stmts);
	PT_CHECK(prolly_id_equal(&got, &sn[1].id) && epoch == 1);
	PT_CHECK(s.calls == 2 && s.index[0] == 0 && s.size[0] == sizeof(commit) && s.first[0] == 'C');
	PT_CHECK(s.index[1] == 1 && s.size[1] == root.sn.size && s.first[1] == root.buf[0]);
	/* found() stopping the call: its code comes back, nothing more is reported. */
	memset(&s, 0, sizeof(s));
	s.stop_at = 1;
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", 5, &got, NULL, pgt_seen_fn, &s), 99);
	PT_CHECK(s.calls == 1);
	/* The followed id names nothing stored. */
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", 6, &got, NULL, pgt_seen_fn, &s), 0);
	PT_CHECK(s.calls == 1 && s.index[0] == 0);
	/* The first object is too short to hold an id at that offset (26 + 32 > 57), or far too
	 * short. */
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", 26, &got, NULL, pgt_seen_fn, &s), 0);
	PT_CHECK(s.calls == 1);
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", (size_t)-1, &got, NULL, pgt_seen_fn, &s),
	            0);
	PT_CHECK(s.calls == 1);
	/* An id that just fits (bytes 25..56) but names nothing. */
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", 25, &got, NULL, pgt_seen_fn, &s), 0);
	PT_CHECK(s.calls == 1);
	/* A ref naming an object that is not stored: the ref, no object. */
	prolly_id nowhere = pgt_mkid(24, 3);
	prolly_ref_update u2 = pgt_upd("refs/heads/p", PROLLY_REF_EXPECT_ANY, NULL, &nowhere);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u2), 0);
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/p", 5, &got, NULL, pgt_seen_fn, &s), 0);
	PT_CHECK(s.calls == 0 && prolly_id_equal(&got, &nowhere));
	/* No such ref: ENOTFOUND, found() not called, still one statement; bad arguments. */
	memset(&s, 0, sizeof(s));
	pgt_cost_begin(st);
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/none", 5, &got, &epoch, pgt_seen_fn, &s),
	            PROLLY_ENOTFOUND);
	k = pgt_cost_end(st);
	PT_CHECK(s.calls == 0 && k.stmts == 1 && k.trips == 1);
	PT_CHECK_RC(st->get_ref_objects(st, "", 5, &got, NULL, pgt_seen_fn, &s), PROLLY_EINVAL);
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/o", 5, &got, NULL, NULL, NULL), PROLLY_EINVAL);
	prolly_store_close(st);
}

/* A handle that reads a branch head it read before tells the store which commit it holds: one
 * statement that reads no node while the branch has not moved, the new commit and root when
 * another handle moved it (src/head_memo.c). */
PT_TEST(head_read_again_reads_no_objects)
{
	const char *schema = pgt_new_schema();
	prolly_store *st1 = pgt_open(schema, 0, 0, 0, 0), *st2 = pgt_open(schema, 0, 0, 0, 0);
	prolly_db *w = NULL, *r = NULL;
	PT_REQUIRE(st1 && st2 && st2->get_ref_objects_known);
	PT_REQUIRE(prolly_db_new(&w, st1, NULL) == 0);
	PT_REQUIRE(prolly_db_new(&r, st2, NULL) == 0);
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v1", 2}};
	prolly_id c1, c2;
	PT_REQUIRE(prolly_commit_edits(&c1, w, "m", &e, 1, "one") == 0);

	prolly_commit *c = NULL;
	prolly_pg_counters a, b;
	PT_CHECK_RC(prolly_branch_commit(&c, r, "m"), 0); /* the first read: commit and root */
	PT_CHECK(c && prolly_id_equal(&c->id, &c1));
	prolly_commit_free(c);
	prolly_store_pg_counters(st2, &a);
	PT_CHECK_RC(prolly_branch_commit(&c, r, "m"), 0); /* again: the ref alone */
	prolly_store_pg_counters(st2, &b);
	PT_CHECK(c && prolly_id_equal(&c->id, &c1));
	PT_CHECKF(b.statements - a.statements == 1 && b.rows_read == a.rows_read,
	          "%llu statements, %llu node rows", (unsigned long long)(b.statements - a.statements),
	          (unsigned long long)(b.rows_read - a.rows_read));
	prolly_buf v = PROLLY_BUF_INIT;
	PT_CHECK_RC(prolly_get(&v, r, &c->tree, "k", 1), 0);
	PT_CHECK(v.size == 2 && memcmp(v.ptr, "v1", 2) == 0);
	prolly_commit_free(c);
	/* With the root evicted the memo is not offered: the commit and the root come back in the
	 * one statement, and the get that follows reads nothing (it took a second statement for the
	 * root when the ref came back alone). */
	prolly_db_cache_clear(r);
	prolly_store_pg_counters(st2, &a);
	PT_CHECK_RC(prolly_branch_commit(&c, r, "m"), 0);
	PT_CHECK(c && prolly_id_equal(&c->id, &c1));
	PT_CHECK_RC(prolly_get(&v, r, &c->tree, "k", 1), 0);
	prolly_store_pg_counters(st2, &b);
	PT_CHECKF(b.statements - a.statements == 1 && b.rows_read - a.rows_read == 2,
	          "%llu statements, %llu node rows", (unsigned long long)(b.statements - a.statements),
	          (unsigned long long)(b.rows_read - a.rows_read));
	prolly_commit_free(c);

	/* Another handle moves the branch: the next read gets the new commit and its root. */
	e.value.data = "v2";
	PT_REQUIRE(prolly_commit_edits(&c2, w, "m", &e, 1, "two") == 0);
	prolly_store_pg_counters(st2, &a);
	PT_CHECK_RC(prolly_branch_commit(&c, r, "m"), 0);
	prolly_store_pg_counters(st2, &b);
	PT_CHECK(c && prolly_id_equal(&c->id, &c2) && b.rows_read - a.rows_read == 2);
	PT_CHECK_RC(prolly_get(&v, r, &c->tree, "k", 1), 0);
	PT_CHECK(v.size == 2 && memcmp(v.ptr, "v2", 2) == 0);
	prolly_commit_free(c);
	prolly_buf_dispose(&v);
	prolly_close(r);
	prolly_close(w);
}

/* H6 (head_memo.c): once reads of a branch head seldom find it moved (here after three reads
 * that found it still), it is read as the ref alone, in a statement that does not join the nodes
 * table; when that finds the ref moved, the ref, commit and root follow in a second statement,
 * and the next reads ask for all three at once until enough of them found the ref still. After a
 * quiet commit of the handle's own the ref is read alone still. */
PT_TEST(head_read_of_a_still_branch_reads_the_ref_alone)
{
	const char *schema = pgt_new_schema();
	prolly_store *st1 = pgt_open(schema, 0, 0, 0, 0), *st2 = pgt_open(schema, 0, 0, 0, 0);
	PGconn *a = pgt_admin();
	prolly_db *w = NULL, *r = NULL;
	char nodes_like[96];
	PT_REQUIRE(st1 && st2 && a);
	snprintf(nodes_like, sizeof(nodes_like), "%%\"%s\".nodes%%", schema);
	PT_REQUIRE(prolly_db_new(&w, st1, NULL) == 0);
	PT_REQUIRE(prolly_db_new(&r, st2, NULL) == 0);
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v1", 2}};
	prolly_id c1, c2, c3;
	PT_REQUIRE(prolly_commit_edits(&c1, w, "m", &e, 1, "one") == 0);

	/* reads: the commit each found, its statements, node rows and joins of the nodes table */
	enum { N = 9, MOVE = 4 };
	const long long stmts[N] = {1, 1, 1, 1, 2, 1, 1, 1, 1}, rows[N] = {2, 0, 0, 0, 2, 0, 0, 0, 0},
	                joins[N] = {1, 1, 1, 0, 1, 1, 1, 1, 0};
	prolly_buf v = PROLLY_BUF_INIT;
	for (int i = 0; i < N; i++) {
		if (i == MOVE) { /* another handle moves the branch */
			e.value.data = "v2";
			PT_REQUIRE(prolly_commit_edits(&c2, w, "m", &e, 1, "two") == 0);
		}
		prolly_pg_counters p0, p1;
		prolly_commit *c = NULL;
		long long j0 = pgt_pss_calls(a, nodes_like);
		prolly_store_pg_counters(st2, &p0);
		PT_CHECK_RC(prolly_branch_commit(&c, r, "m"), 0);
		prolly_store_pg_counters(st2, &p1);
		long long j1 = pgt_pss_calls(a, nodes_like);
		PT_CHECKF(c && prolly_id_equal(&c->id, i < MOVE ? &c1 : &c2), "read %d: not the head", i);
		PT_CHECKF((long long)(p1.statements - p0.statements) == stmts[i] &&
		              (long long)(p1.rows_read - p0.rows_read) == rows[i] && j0 >= 0 &&
		              j1 - j0 == joins[i],
		          "read %d: %llu statements, %llu node rows, %lld joining nodes", i,
		          (unsigned long long)(p1.statements - p0.statements),
		          (unsigned long long)(p1.rows_read - p0.rows_read), j1 - j0);
		if (c) {
			PT_CHECK_RC(prolly_get(&v, r, &c->tree, "k", 1), 0);
			PT_CHECK(v.size == 2 && memcmp(v.ptr, i < MOVE ? "v1" : "v2", 2) == 0);
		}
		prolly_commit_free(c);
	}
	/* The handle's own commit on a head it found still: the next read reads the ref alone. */
	e.value.data = "v3";
	PT_REQUIRE(prolly_commit_edits(&c3, r, "m", &e, 1, "three") == 0);
	prolly_commit *c = NULL;
	long long j0 = pgt_pss_calls(a, nodes_like);
	PT_CHECK_RC(prolly_branch_commit(&c, r, "m"), 0);
	PT_CHECK(c && prolly_id_equal(&c->id, &c3) && pgt_pss_calls(a, nodes_like) == j0);
	prolly_commit_free(c);
	prolly_buf_dispose(&v);
	PQfinish(a);
	prolly_close(r);
	prolly_close(w);
}

/* A point read of a branch from a fresh handle (what every CLI get is): the open, then the ref,
 * its commit and the root in one round trip, then one per level below the root. Before
 * prolly_resolve_commit the CLI read the ref, the commit and the root in three, and before the
 * open read the gc epoch, prolly_db_new took one more. Then a put of the key read: one. */
PT_TEST(point_read_of_a_branch_round_trips)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	prolly_db *w = NULL, *r = NULL;
	PT_REQUIRE(st && prolly_db_new(&w, st, NULL) == 0);
	enum { N = 20000 };
	prolly_edit *e = calloc(N, sizeof(*e));
	char(*k)[16] = calloc(N, sizeof(*k));
	PT_REQUIRE(e && k);
	for (int i = 0; i < N; i++) {
		snprintf(k[i], sizeof(k[i]), "key%08d", i);
		e[i] = (prolly_edit){PROLLY_PUT, {k[i], strlen(k[i])}, {k[i], 8}};
	}
	prolly_id c1;
	prolly_commit *wc = NULL;
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	PT_REQUIRE(prolly_commit_edits(&c1, w, "m", e, N, "load") == 0);
	PT_REQUIRE(prolly_commit_read(&wc, w, &c1) == 0);
	PT_REQUIRE(prolly_tree_stats_get(&ts, w, &wc->tree, 0) == 0);
	unsigned height = ts.height;
	PT_REQUIRE(height >= 2);
	prolly_commit_free(wc);
	prolly_close(w);

	prolly_store *st2 = pgt_open(schema, 0, 0, 0, 0);
	PT_REQUIRE(st2);
	prolly_thread_stats_reset();
	PT_REQUIRE(prolly_db_new(&r, st2, NULL) == 0);
	prolly_commit *c = NULL;
	PT_CHECK_RC(prolly_resolve_commit(&c, r, "m"), 0);
	PT_REQUIRE(c && prolly_id_equal(&c->id, &c1));
	prolly_stats s = PROLLY_STATS_INIT;
	PT_CHECK_RC(prolly_thread_stats(&s), 0);
	PT_CHECKF(s.store_round_trips == 1, "%llu round trips for the handle and the head",
	          (unsigned long long)s.store_round_trips);
	prolly_buf v = PROLLY_BUF_INIT;
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_get(&v, r, &c->tree, k[N / 2], strlen(k[N / 2])), 0);
	PT_CHECK(v.size == 8 && memcmp(v.ptr, k[N / 2], 8) == 0);
	PT_CHECK_RC(prolly_thread_stats(&s), 0);
	PT_CHECKF(s.store_round_trips == height - 1, "%llu round trips below a root of height %u",
	          (unsigned long long)s.store_round_trips, height);
	/* A write of that key on the commit just read (what the CLI's put and del do): the write
	 * alone, the head not read again (CO4 of commit_on.c; 2 round trips before). The value
	 * keeps its size: one that resizes the leaf reads the next leaf too (edit.c, prefetch). */
	prolly_edit pe = {PROLLY_PUT, {k[N / 2], strlen(k[N / 2])}, {"newvalue", 8}};
	prolly_id c2;
	unsigned rebased = 9;
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_commit_edits_on(&c2, &rebased, r, "m", &c->id, &pe, 1, "put", 1), 0);
	PT_CHECK_RC(prolly_thread_stats(&s), 0);
	PT_CHECKF(s.store_round_trips == 1 && rebased == 0, "%llu round trips for the commit",
	          (unsigned long long)s.store_round_trips);
	prolly_commit_free(c);
	prolly_buf_dispose(&v);
	prolly_close(r);
	free(e);
	free(k);
}

/* H5 (head_memo.c): a handle committing to a branch again builds on its own last commit without
 * reading the ref (one round trip, two before); another writer in between costs the guess one
 * failed write, the commit lands on the other writer's head with nothing lost, and the next
 * commit reads the head once before guessing again; a gc in between is a lost guess too. */
PT_TEST(commit_edits_again_skips_the_head_read)
{
	const char *schema = pgt_new_schema();
	prolly_store *st1 = pgt_open(schema, 0, 0, 0, 0), *st2 = pgt_open(schema, 0, 0, 0, 0);
	prolly_db *w = NULL, *o = NULL;
	PT_REQUIRE(st1 && st2 && prolly_db_new(&w, st1, NULL) == 0 &&
	           prolly_db_new(&o, st2, NULL) == 0);
	prolly_id c[8];
	int rc;
	unsigned long long rt = tm_commit_put_trips(&c[0], w, "m", "a", "1", &rc);
	PT_CHECKF(rc == 0 && rt == 2, "first commit: %d, %llu round trips", rc, rt);
	rt = tm_commit_put_trips(&c[1], w, "m", "b", "2", &rc);
	PT_CHECKF(rc == 0 && rt == 1, "second commit: %d, %llu round trips", rc, rt);
	rt = tm_commit_put_trips(&c[2], w, "m", "c", "3", &rc);
	PT_CHECKF(rc == 0 && rt == 1, "third commit: %d, %llu round trips", rc, rt);

	/* Another writer: the guess loses, the commit is made again on its head. */
	PT_REQUIRE(tm_commit_put_trips(&c[3], o, "m", "o", "other", &rc) && rc == 0);
	rt = tm_commit_put_trips(&c[4], w, "m", "d", "4", &rc);
	PT_CHECKF(rc == 0 && rt == 3, "commit after another writer's: %d, %llu round trips", rc, rt);
	prolly_commit *hc = NULL;
	PT_REQUIRE(prolly_branch_commit(&hc, o, "m") == 0);
	PT_CHECK(prolly_id_equal(&hc->id, &c[4]) && hc->n_parents == 1 &&
	         prolly_id_equal(&hc->parents[0], &c[3]));
	const char *keys[] = {"a", "b", "c", "o", "d"}, *vals[] = {"1", "2", "3", "other", "4"};
	for (int i = 0; i < 5; i++) {
		prolly_buf v = PROLLY_BUF_INIT;
		PT_CHECK_RC(prolly_get(&v, o, &hc->tree, keys[i], 1), 0);
		PT_CHECK(v.size == strlen(vals[i]) && memcmp(v.ptr, vals[i], v.size) == 0);
		prolly_buf_dispose(&v);
	}
	prolly_commit_free(hc);
	/* The next commit reads the head (no guess after a lost one), finds it where this handle
	 * left it, and the one after guesses again. */
	rt = tm_commit_put_trips(&c[5], w, "m", "e", "5", &rc);
	PT_CHECKF(rc == 0 && rt == 2, "commit after a lost guess: %d, %llu round trips", rc, rt);
	rt = tm_commit_put_trips(&c[6], w, "m", "f", "6", &rc);
	PT_CHECKF(rc == 0 && rt == 1, "quiet again: %d, %llu round trips", rc, rt);

	/* A gc by the other handle: the guess's epoch check fails, and the commit is made again. */
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_REQUIRE(prolly_gc(o, &res) == 0);
	rt = tm_commit_put_trips(&c[7], w, "m", "g", "7", &rc);
	PT_CHECKF(rc == 0 && rt >= 3, "commit after a gc: %d (%s), %llu round trips", rc,
	          rc ? prolly_last_error() : "", rt);
	PT_REQUIRE(prolly_branch_commit(&hc, o, "m") == 0);
	PT_CHECK(prolly_id_equal(&hc->id, &c[7]) && prolly_id_equal(&hc->parents[0], &c[6]));
	prolly_commit_free(hc);
	prolly_close(o);
	prolly_close(w);
}

typedef struct bgr {
	prolly_store *st;
	int rc, calls;
	char err[512];
} bgr;

static void *bg_ref_objects(void *arg)
{
	bgr *b = arg;
	pgt_seen s;
	prolly_id got;
	memset(&s, 0, sizeof(s));
	b->rc = b->st->get_ref_objects(b->st, "refs/heads/b", 5, &got, NULL, pgt_seen_fn, &s);
	b->calls = s.calls;
	snprintf(b->err, sizeof(b->err), "%s", b->rc ? prolly_last_error() : "");
	return NULL;
}

/* A backend killed while the call waits (on a lock held here): the call fails like get_ref
 * does, and the next one reconnects. */
static int count_commits(void *payload, const prolly_commit *c)
{
	(void)c;
	(*(int *)payload)++;
	return 0;
}

/* A history walk on PostgreSQL reads ahead with get_ancestors: a 300-commit log in 2 statements
 * (256 commits a call), the recursive statement (docs/postgres.md). */
PT_TEST(log_reads_history_ahead)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	prolly_db *db = NULL;
	PT_REQUIRE(st && st->version >= 3 && st->get_ancestors);
	PT_REQUIRE(prolly_db_new(&db, st, NULL) == 0);
	prolly_id e, head = {{0}}, prev = {{0}};
	prolly_id_empty_tree(&e);
	for (int i = 0; i < 300; i++) {
		prolly_txn *txn = NULL;
		PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
		PT_REQUIRE(
		    prolly_commit_create(&head, txn, &e, i ? &prev : NULL, i ? 1 : 0, 1000 + i, "c") == 0);
		PT_REQUIRE(prolly_txn_commit(txn, NULL, 0) == 0);
		prolly_txn_free(txn);
		prev = head;
	}
	int n = 0;
	pgt_cost_begin(st);
	PT_CHECK_RC(prolly_log(db, &head, count_commits, &n), 0);
	pgt_cost k = pgt_cost_end(st);
	printf("# log of 300 commits: %llu statements, %llu round trips\n", (unsigned long long)k.stmts,
	       (unsigned long long)k.trips);
	PT_CHECK(n == 300);
	PT_CHECKF(k.trips <= 3 && k.stmts <= 3, "%llu round trips", (unsigned long long)k.trips);
	prolly_close(db);
}

PT_TEST(get_ref_objects_broken_connection)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	prolly_id v = pgt_mkid(25, 1), got;
	prolly_ref_update u = pgt_upd("refs/heads/b", PROLLY_REF_EXPECT_ANY, NULL, &v);
	PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);
	char q[256];
	snprintf(q, sizeof(q), "BEGIN; LOCK TABLE \"%s\".refs IN ACCESS EXCLUSIVE MODE", schema);
	pgt_sql1(a, q);
	bgr b;
	memset(&b, 0, sizeof(b));
	b.st = st;
	pthread_t th;
	PT_REQUIRE(pthread_create(&th, NULL, bg_ref_objects, &b) == 0);
	long long pid = pgt_blocked_pid(a);
	PT_CHECK(pid > 0);
	char k[128];
	snprintf(k, sizeof(k), "SELECT pg_terminate_backend(%lld)", pid);
	pgt_sql1(a, k);
	pthread_join(th, NULL);
	pgt_sql1(a, "COMMIT");
	PT_CHECK(b.rc == PROLLY_ESTORE && b.calls == 0);
	printf("# get_ref_objects cut off: %s\n", b.err);
	PT_CHECK(strstr(b.err, "get_ref_objects") != NULL);
	pgt_seen s;
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/b", 5, &got, NULL, pgt_seen_fn, &s), 0);
	PT_CHECK(prolly_id_equal(&got, &v) && s.calls == 0);
	prolly_pg_counters c;
	PT_CHECK_RC(prolly_store_pg_counters(st, &c), 0);
	PT_CHECK(c.broken >= 1);
	prolly_store_close(st);
	PQfinish(a);
}

/* ---- the engine on top ------------------------------------------------------------------------ */

PT_TEST(altered_row_is_corrupt)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	prolly_db *db = NULL;
	PT_REQUIRE(prolly_db_new(&db, st, NULL) == 0);
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	prolly_id root;
	PT_REQUIRE(prolly_txn_begin(&txn, db) == 0);
	PT_REQUIRE(prolly_builder_new(&b, txn) == 0);
	for (int i = 0; i < 2000; i++) {
		char k[32], v[64];
		snprintf(k, sizeof(k), "key%06d", i);
		snprintf(v, sizeof(v), "value number %d", i);
		PT_CHECK_RC(prolly_builder_add(b, k, strlen(k), v, strlen(v)), 0);
	}
	PT_CHECK_RC(prolly_builder_finish(b, &root), 0);
	prolly_builder_free(b);
	prolly_ref_update u = pgt_upd("refs/trees/t", PROLLY_REF_EXPECT_ABSENT, NULL, &root);
	PT_CHECK_RC(prolly_txn_set_ref(txn, &u), 0);
	PT_CHECK_RC(prolly_txn_commit(txn, NULL, 0), 0);
	prolly_txn_free(txn);
	prolly_buf out = PROLLY_BUF_INIT;
	PT_CHECK_RC(prolly_get(&out, db, &root, "key000500", 9), 0);
	/* Flip one byte of every leaf in SQL: the schema's constraint refuses it, even to the
	 * owner (a superuser here); without the constraint (damage below SQL, or rows of a schema
	 * older than version 4) the engine's hash check is what catches it. */
	char q[512], flip[512];
	snprintf(flip, sizeof(flip),
	         "UPDATE \"%s\".nodes SET node = set_byte(node, length(node) - 1, "
	         "get_byte(node, length(node) - 1) # 1) WHERE get_byte(node, 5) = 0",
	         schema);
	PT_CHECK(pgt_sql_state(a, flip, "23514"));
	snprintf(q, sizeof(q), "ALTER TABLE \"%s\".nodes DROP CONSTRAINT nodes_id_is_sha256", schema);
	PT_CHECK(pgt_sql1(a, q) == -1 && pgt_sql_state(a, flip, ""));
	prolly_db_cache_clear(db);
	int rc = prolly_get(&out, db, &root, "key000500", 9);
	PT_CHECK(rc == PROLLY_ECORRUPT);
	printf("# altered row: %s\n", prolly_last_error());
	prolly_buf_dispose(&out);
	prolly_close(db);
	PQfinish(a);
}

static int no_ref(void *payload, const char *name, const prolly_id *value)
{
	(void)payload;
	(void)name;
	(void)value;
	return 0;
}

/* A refs row written past the store (SQL) with a value that is no id: listing refuses it as
 * corrupt and names the row, so that it can be found and removed. Before, the message was only
 * "the refs table holds a malformed row". */
PT_TEST(malformed_ref_row_named)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PGconn *a = pgt_admin();
	char q[256];
	PT_REQUIRE(st && a);
	snprintf(q, sizeof(q),
	         "INSERT INTO \"%s\".refs VALUES ('refs/heads/short'::bytea, '\\x0102'::bytea)",
	         schema);
	PT_CHECK(pgt_sql1(a, q) == -1);
	PT_CHECK_RC(st->list_refs(st, "refs/heads/", no_ref, NULL), PROLLY_ECORRUPT);
	const char *msg = prolly_last_error();
	PT_CHECKF(strstr(msg, "'refs/heads/short'") && strstr(msg, "value of 2 bytes"), "%s", msg);
	prolly_store_close(st);
	PQfinish(a);
}

/* A meta table without its epoch row (every schema has one from its init on) is damage, named
 * as such by both ref reads; before, the ref read alone said the ref was not found. */
PT_TEST(missing_epoch_row_is_corrupt)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PGconn *a = pgt_admin();
	prolly_db *db = NULL;
	char q[256];
	PT_REQUIRE(st && a && prolly_db_new(&db, st, NULL) == 0);
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v", 1}};
	prolly_id c1, got;
	PT_REQUIRE(prolly_commit_edits(&c1, db, "m", &e, 1, "one") == 0);
	snprintf(q, sizeof(q), "DELETE FROM \"%s\".meta WHERE key = 'epoch'", schema);
	PT_CHECK(pgt_sql1(a, q) == -1); /* no row to return: -1, and no error printed */
	PT_CHECK_RC(st->get_ref(st, "refs/heads/m", &got, NULL), PROLLY_ECORRUPT);
	PT_CHECKF(strstr(prolly_last_error(), "no epoch row"), "%s", prolly_last_error());
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/m", 5, &got, NULL, pgt_seen_fn, NULL),
	            PROLLY_ECORRUPT);
	PT_CHECKF(strstr(prolly_last_error(), "no epoch row"), "%s", prolly_last_error());
	prolly_close(db);
	PQfinish(a);
}

/* gc with the real engine while two writers commit: values flip between two states, so old
 * nodes come back to life (re-inserted rows that already exist) while the sweep runs. Every
 * branch's head tree must be complete afterwards. */

typedef struct gw {
	prolly_db *db;
	char branch[32];
	_Atomic int *stop;
	int commits, conflicts, errors;
	char err[256];
	unsigned seed;
} gw;

static void *gc_engine_writer(void *arg)
{
	gw *w = arg;
	char keys[40][16];
	prolly_edit e[40];
	uint64_t rs = w->seed, x;
	while (!*w->stop) {
		for (int i = 0; i < 40; i++) {
			x = bench_splitmix64(&rs);
			snprintf(keys[i], sizeof(keys[i]), "k%05u", (unsigned)(x % 3000));
			e[i].op = PROLLY_PUT;
			e[i].key.data = keys[i];
			e[i].key.size = strlen(keys[i]);
			e[i].value.data = (x >> 40) & 1 ? "state-one-value-xxxxxxxx"
			                                : "state-two-value-yyyyyyyy";
			e[i].value.size = 24;
		}
		prolly_id c;
		int rc = prolly_commit_edits(&c, w->db, w->branch, e, 40, "flip");
		if (rc == 0)
			w->commits++;
		else if (rc == PROLLY_ECONFLICT)
			w->conflicts++;
		else {
			if (!w->errors)
				snprintf(w->err, sizeof(w->err), "%d: %s", rc, prolly_last_error());
			w->errors++;
		}
	}
	return NULL;
}

PT_TEST(gc_while_engine_writes)
{
	prolly_store *st = pgt_open(pgt_new_schema(), 0, 0, 0, 0);
	PT_REQUIRE(st);
	prolly_db *db = NULL;
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	o.retain_commits = 2;
	o.reflog_days = 0; /* retention by commits alone: the reflog would keep every recent head */
	PT_REQUIRE(prolly_db_new(&db, st, &o) == 0);
	_Atomic int stop = 0;
	gw w[2];
	pthread_t th[2];
	/* Both branches start with 3000 keys. */
	for (int b = 0; b < 2; b++) {
		prolly_edit *e = calloc(3000, sizeof(*e));
		char(*k)[16] = calloc(3000, 16);
		PT_REQUIRE(e && k);
		for (int i = 0; i < 3000; i++) {
			snprintf(k[i], 16, "k%05d", i);
			e[i].op = PROLLY_PUT;
			e[i].key.data = k[i];
			e[i].key.size = strlen(k[i]);
			e[i].value.data = "state-one-value-xxxxxxxx";
			e[i].value.size = 24;
		}
		memset(&w[b], 0, sizeof(w[b]));
		snprintf(w[b].branch, sizeof(w[b].branch), "w%d", b);
		prolly_id c;
		PT_CHECK_RC(prolly_commit_edits(&c, db, w[b].branch, e, 3000, "base"), 0);
		free(e);
		free(k);
		w[b].db = db;
		w[b].stop = &stop;
		w[b].seed = (unsigned)b;
	}
	for (int b = 0; b < 2; b++)
		PT_REQUIRE(pthread_create(&th[b], NULL, gc_engine_writer, &w[b]) == 0);
	uint64_t removed = 0;
	int gcs = 0;
	double t0 = pgt_now_s();
	for (int i = 0; i < 6; i++) {
		prolly_gc_result r = PROLLY_GC_RESULT_INIT;
		pgt_sleep_ms(150);
		int rc = prolly_gc(db, &r);
		PT_CHECKF(rc == 0, "gc %d: %s", i, prolly_last_error());
		if (rc == 0) {
			removed += r.nodes_removed;
			gcs++;
		}
	}
	double secs = pgt_now_s() - t0;
	stop = 1;
	for (int b = 0; b < 2; b++) {
		pthread_join(th[b], NULL);
		PT_CHECKF(w[b].errors == 0, "writer %d: %d errors, first %s", b, w[b].errors, w[b].err);
	}
	/* Every head's tree is complete and hashes right, read from the store. */
	prolly_db_cache_clear(db);
	for (int b = 0; b < 2; b++) {
		prolly_id head;
		prolly_commit *c = NULL;
		PT_CHECK_RC(prolly_branch_head(&head, db, w[b].branch), 0);
		PT_CHECK_RC(prolly_commit_read(&c, db, &head), 0);
		if (c) {
			prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
			PT_CHECK_RC(prolly_tree_stats_get(&ts, db, &c->tree, 1), 0);
			PT_CHECK(ts.records == 3000);
			prolly_commit_free(c);
		}
	}
	prolly_pg_counters pc;
	PT_CHECK_RC(prolly_store_pg_counters(st, &pc), 0);
	printf("# %d gcs in %.2f s removed %llu nodes in %llu sweep batches (%llu re-marks) while "
	       "writers committed %d + %d times (%d + %d conflicts)\n",
	       gcs, secs, (unsigned long long)removed, (unsigned long long)pc.gc_batches,
	       (unsigned long long)pc.gc_remarks, w[0].commits, w[1].commits, w[0].conflicts,
	       w[1].conflicts);
	PT_CHECK(w[0].commits > 0 && w[1].commits > 0 && removed > 0);
	/* Epochs read in any order, by writers and gcs at once, are never taken for a restore. */
	PT_CHECKF(pc.epoch_rewrites == 0, "%llu", (unsigned long long)pc.epoch_rewrites);
	prolly_close(db);
}

PGT_MAIN(NULL, NULL)
