/*
 * service_sql.c - the service suite's operations with [service] access = "sql": each worker holds
 * ONE libpq connection of its own and every operation is ONE statement through the prolly
 * extension (ext/postgres, docs/sql.md), prepared once per connection, binary parameters and
 * results (bench/lib/pgconn.h, the helpers the scale suite's sql cells use too):
 *
 *   point_read  prolly_get(branch, key)                          the value checked against its key
 *   multi_read  prolly_get_many(branch, keys)                    every row checked, all n present
 *   commit      prolly_commit(branch, keys, vals)                last-write-wins: the extension
 *               queues writers to one branch on its ref row, so a commit never loses a race
 *               (cas_attempts 1, conflicts 0 by construction, not by luck). The commit id it
 *               returns goes to the branch's ring; checked like the client's commit: the new
 *               tree holds every record and the last edit.
 *   diff        prolly_diff(retained commit id, head of branch)  the rings hold COMMIT ids in this
 *               mode (prolly_diff takes refs, not tree ids); the base commit while none is
 *               retained; the statement also returns the head it diffed against
 *               (prolly_resolve, the same statement). Every row must be a change ('~') of a key
 *               of the space, both values well formed, and the rows complete: as edits on the
 *               old commit's tree they give the head's tree.
 *   merge       prolly_merge(scratch, side-b) FROM (prolly_branch(scratch, side-a)): the
 *               scratch branch is created at side-a and side-b merged into it, one statement
 *               (one transaction). Checked like the client's merge, side-b's applied changes
 *               counted by a diff of side-a's tree against the merged one.
 *
 * The statements are counted by bench_pg_run into the thread's PostgreSQL statement counter, the
 * one client mode's statements_per_op comes from: 1 per operation here. Validation reads the
 * store through the worker's C handle after svc_timed_end() (service_int.h S2).
 */
#include "service_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int svc_sql_install(PGconn *conn, const char *schema, char *err, size_t errn)
{
	char q[160], sql[256], in[128];
	if (bench_pg_ident(q, sizeof(q), schema) != 0) {
		snprintf(err, errn, "service: schema name %.64s: too long", schema);
		return -1;
	}
	/* One extension per database, bound to its schema's tables: installed for another schema,
	 * it would read that schema's store. */
	if (bench_pg_ext_schema(in, sizeof(in), conn) != 0) {
		snprintf(err, errn, "service: looking for the prolly extension: %.200s",
		         prolly_last_error());
		return -1;
	}
	if (in[0] && strcmp(in, schema) != 0) {
		snprintf(err, errn,
		         "service: the prolly extension of this database is installed in schema "
		         "\"%.64s\", not in the store's \"%.64s\" (DROP EXTENSION prolly, or use "
		         "another database)",
		         in, schema);
		return -1;
	}
	snprintf(sql, sizeof(sql), "CREATE EXTENSION IF NOT EXISTS prolly SCHEMA %s", q);
	if (bench_pg_exec(conn, sql, NULL) != 0) {
		snprintf(err, errn,
		         "service: access = \"sql\" needs the prolly extension in this server "
		         "(make -C ext/postgres install): %.200s",
		         prolly_last_error());
		return -1;
	}
	return 0;
}

int svc_sql_open(svc_worker *w, const char *url, const char *schema)
{
	static const struct {
		const char *name, *fmt;
		int nparams;
	} stmts[] = {
	    {"svc_get", "SELECT %s.prolly_get($1::text, $2::bytea)", 2},
	    {"svc_many", "SELECT ord, value FROM %s.prolly_get_many($1::text, $2::bytea[])", 2},
	    {"svc_commit", "SELECT %s.prolly_commit($1::text, $2::bytea[], $3::bytea[])", 3},
	    {"svc_diff",
	     "SELECT h.c, d.op, d.key, d.old_value, d.new_value FROM (SELECT "
	     "%1$s.prolly_resolve($2::text)) AS h(c) LEFT JOIN LATERAL %1$s.prolly_diff($1::text, h.c) "
	     "AS d ON true",
	     2},
	    {"svc_merge",
	     "SELECT %1$s.prolly_merge($1::text, $3::text) FROM "
	     "(SELECT %1$s.prolly_branch($1::text, $2::text)) AS b(c)",
	     3},
	};
	char q[160], sql[512];
	int rc;
	if (bench_pg_ident(q, sizeof(q), schema) != 0)
		return prolly_set_error(PROLLY_EINVAL, "schema name too long");
	if ((rc = bench_pg_connect(&w->pg, url)) != 0)
		return rc;
	for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
		snprintf(sql, sizeof(sql), stmts[i].fmt, q);
		if ((rc = bench_pg_prepare(w->pg, stmts[i].name, sql, stmts[i].nparams)) != 0)
			return rc;
	}
	return 0;
}

/* The commit id in a row's first column (a text column in binary format: the hex digits). */
static int id_at(prolly_id *out, const PGresult *res, int row)
{
	char hex[PROLLY_ID_HEX_SIZE];
	int len;
	if (row >= PQntuples(res) || PQgetisnull(res, row, 0) ||
	    (len = PQgetlength(res, row, 0)) != PROLLY_ID_HEX_SIZE - 1)
		return prolly_set_error(PROLLY_ECORRUPT, "the statement did not return a commit id");
	memcpy(hex, PQgetvalue(res, row, 0), (size_t)len);
	hex[len] = '\0';
	return prolly_id_from_hex(out, hex);
}

/* The commit id a statement returned (one row, one text column). */
static int result_id(prolly_id *out, const PGresult *res)
{
	if (PQntuples(res) != 1)
		return prolly_set_error(PROLLY_ECORRUPT, "the statement did not return one commit id");
	return id_at(out, res, 0);
}

/* ---- reads ----------------------------------------------------------------------------------- */

static void sql_point_read(svc_worker *w, svc_result *r)
{
	const svc_fixture *fx = w->fx;
	char branch[64];
	unsigned char key[SVC_KEY_LEN];
	uint64_t slot = svc_below(w, fx->records);
	PGresult *res = NULL;

	svc_main_branch(branch, sizeof(branch), fx, svc_pick_branch(w));
	svc_key(key, slot);
	const char *v[2] = {branch, (const char *)key};
	const int l[2] = {(int)strlen(branch), SVC_KEY_LEN};
	int rc = bench_pg_run(w->pg, "svc_get", 2, v, l, &res);
	svc_timed_end(r);
	if (rc) {
		svc_fail(r, rc, branch);
		return;
	}
	r->checked = 1;
	if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0) ||
	    svc_value_check(PQgetvalue(res, 0, 0), (size_t)PQgetlength(res, 0, 0), fx->value_bytes,
	                    slot, NULL))
		svc_invalid(r, "point_read on %s: malformed value", branch);
	PQclear(res);
}

static void sql_multi_read(svc_worker *w, svc_result *r)
{
	const svc_fixture *fx = w->fx;
	uint32_t n = fx->cfg->multi_read_keys;
	uint64_t slots[256], *sl = slots;
	char branch[64];
	PGresult *res = NULL;
	int rc;

	if (n > 256 && !(sl = malloc(n * sizeof(*sl)))) {
		svc_timed_end(r);
		svc_fail(r, PROLLY_ENOMEM, "multi_read");
		return;
	}
	svc_main_branch(branch, sizeof(branch), fx, svc_pick_branch(w));
	rc = bench_pg_array_begin(&w->arr[0], n);
	for (uint32_t i = 0; i < n && !rc; i++) {
		unsigned char key[SVC_KEY_LEN];
		sl[i] = svc_below(w, fx->records);
		svc_key(key, sl[i]);
		rc = bench_pg_array_add(&w->arr[0], key, sizeof(key));
	}
	if (!rc) {
		const char *v[2] = {branch, (const char *)w->arr[0].p};
		const int l[2] = {(int)strlen(branch), (int)w->arr[0].n};
		rc = bench_pg_run(w->pg, "svc_many", 2, v, l, &res);
	}
	svc_timed_end(r);
	if (rc) {
		svc_fail(r, rc, branch);
	} else {
		size_t bad = 0, rows = (size_t)PQntuples(res);
		for (size_t i = 0; i < rows; i++) {
			uint32_t ord = PQgetlength(res, (int)i, 0) == 4
			                   ? bench_pg_get32((const unsigned char *)PQgetvalue(res, (int)i, 0))
			                   : 0;
			if (ord != i + 1 || PQgetisnull(res, (int)i, 1) ||
			    svc_value_check(PQgetvalue(res, (int)i, 1), (size_t)PQgetlength(res, (int)i, 1),
			                    fx->value_bytes, sl[i], NULL))
				bad++;
		}
		r->checked = 1;
		if (bad || rows != n)
			svc_invalid(r, "multi_read on %s: a value is missing or malformed", branch);
	}
	PQclear(res);
	if (sl != slots)
		free(sl);
}

/* ---- commit ---------------------------------------------------------------------------------- */

static void sql_commit(svc_worker *w, svc_result *r)
{
	const svc_fixture *fx = w->fx;
	uint32_t n = fx->cfg->commit_keys, vb = fx->value_bytes;
	uint32_t b = svc_pick_branch(w);
	char branch[64];
	prolly_id cid;
	prolly_commit *cm = NULL;
	PGresult *res = NULL;
	int rc;

	svc_main_branch(branch, sizeof(branch), fx, b);
	svc_commit_edits(w);
	rc = bench_pg_array_begin(&w->arr[0], n);
	if (!rc)
		rc = bench_pg_array_begin(&w->arr[1], n);
	for (uint32_t i = 0; i < n && !rc; i++)
		if (!(rc = bench_pg_array_add(&w->arr[0], w->edits[i].key.data, SVC_KEY_LEN)))
			rc = bench_pg_array_add(&w->arr[1], w->edits[i].value.data, vb);
	if (!rc) {
		const char *v[3] = {branch, (const char *)w->arr[0].p, (const char *)w->arr[1].p};
		const int l[3] = {(int)strlen(branch), (int)w->arr[0].n, (int)w->arr[1].n};
		r->cas_attempts = 1; /* the extension queues writers to a branch: nothing to retry */
		rc = bench_pg_run(w->pg, "svc_commit", 3, v, l, &res);
	}
	svc_timed_end(r);
	if (!rc)
		rc = result_id(&cid, res);
	PQclear(res);
	if (rc) {
		svc_fail(r, rc, branch);
		return;
	}
	svc_ring_push(&fx->rings[b], &cid);

	/* Check, through the C handle: every record, the last edit (the last of a key wins), and the
	 * branch holding the commit. */
	uint64_t count = 0;
	const prolly_edit *e = &w->edits[n - 1];
	r->checked = 1;
	if (prolly_commit_read(&cm, w->db, &cid) || prolly_count(&count, w->db, &cm->tree) ||
	    count != fx->records)
		svc_invalid(r, "commit on %s: the new tree does not hold every record", branch);
	else if (prolly_get(&w->buf, w->db, &cm->tree, e->key.data, e->key.size) || w->buf.size != vb ||
	         memcmp(w->buf.ptr, e->value.data, vb) != 0)
		svc_invalid(r, "commit on %s: an edit is missing from the new tree", branch);
	else
		svc_check_published(w, r, &cid, branch);
	prolly_commit_free(cm);
}

/* ---- diff ------------------------------------------------------------------------------------ */

/* Column c of row i as a slice (the result's memory). */
static prolly_slice cell(const PGresult *res, int i, int c)
{
	return (prolly_slice){PQgetvalue(res, i, c), (size_t)PQgetlength(res, i, c)};
}

/* The diff's rows are complete (untimed): as edits on the old commit's tree they give the tree
 * of the head the statement diffed against, which it returned in every row. */
static void sql_diff_complete(svc_worker *w, svc_result *r, const prolly_id *old,
                              const PGresult *res, size_t n, const char *branch)
{
	prolly_commit *co = NULL, *ch = NULL;
	prolly_edit *ed = NULL;
	prolly_id head;
	if (id_at(&head, res, 0) || !(ed = calloc(n + 1, sizeof(*ed))) ||
	    prolly_commit_read(&co, w->db, old) || prolly_commit_read(&ch, w->db, &head)) {
		svc_invalid(r, "diff on %s: the old commit or the head diffed against cannot be read",
		            branch);
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		ed[i].op = PROLLY_PUT;
		ed[i].key = cell(res, (int)i, 2);
		ed[i].value = cell(res, (int)i, 4);
	}
	if (svc_changes_make(w, &co->tree, &ch->tree, ed, n))
		svc_invalid(r, "diff on %s: the diff's changes do not turn the old tree into the new one",
		            branch);
cleanup:
	prolly_commit_free(co);
	prolly_commit_free(ch);
	free(ed);
}

static void sql_diff(svc_worker *w, svc_result *r)
{
	const svc_fixture *fx = w->fx;
	uint32_t b = svc_pick_branch(w);
	char branch[64], from[PROLLY_ID_HEX_SIZE];
	prolly_id old;
	PGresult *res = NULL;

	svc_main_branch(branch, sizeof(branch), fx, b);
	if (svc_ring_pick(&fx->rings[b], w, &old))
		old = fx->base_commit;
	prolly_id_to_hex(from, &old);
	const char *v[2] = {from, branch};
	const int l[2] = {(int)strlen(from), (int)strlen(branch)};
	int rc = bench_pg_run(w->pg, "svc_diff", 2, v, l, &res);
	svc_timed_end(r);
	if (rc) {
		svc_fail(r, rc, branch);
		return;
	}
	/* One row per change, each with the head's commit id; one row of NULLs but the id when
	 * there is none (the LEFT JOIN). */
	size_t bad = 0, rows = (size_t)PQntuples(res);
	if (rows == 1 && PQgetisnull(res, 0, 1))
		rows = 0;
	for (size_t i = 0; i < rows; i++) {
		int row = (int)i;
		uint64_t slot;
		/* Workers only update existing keys: every row is a change of a key in the space. */
		if (PQgetlength(res, row, 1) != 1 || PQgetvalue(res, row, 1)[0] != '~' ||
		    svc_key_parse(PQgetvalue(res, row, 2), (size_t)PQgetlength(res, row, 2), fx->records,
		                  &slot) ||
		    PQgetisnull(res, row, 3) || PQgetisnull(res, row, 4) ||
		    svc_value_check(PQgetvalue(res, row, 3), (size_t)PQgetlength(res, row, 3),
		                    fx->value_bytes, slot, NULL) ||
		    svc_value_check(PQgetvalue(res, row, 4), (size_t)PQgetlength(res, row, 4),
		                    fx->value_bytes, slot, NULL))
			bad++;
	}
	r->entries = rows;
	r->checked = 1;
	if (bad)
		svc_invalid(r, "diff on %s: an entry is not a well-formed change", branch);
	else
		sql_diff_complete(w, r, &old, res, rows, branch);
	PQclear(res);
}

/* ---- merge ----------------------------------------------------------------------------------- */

static int count_entry(void *payload, const prolly_diff_entry *e)
{
	(void)e;
	(*(uint64_t *)payload)++;
	return 0;
}

static void sql_merge(svc_worker *w, svc_result *r)
{
	const svc_fixture *fx = w->fx;
	uint32_t t = (uint32_t)svc_below(w, fx->tenants);
	char branch[96], side_a[64], side_b[64];
	prolly_commit *cm = NULL, *ca = NULL;
	prolly_merge_stats ms = PROLLY_MERGE_STATS_INIT;
	prolly_id mc;
	PGresult *res = NULL;

	snprintf(branch, sizeof(branch), "t%u/merge-c%u-w%u-%llu", t, w->cell_index, w->index,
	         (unsigned long long)w->seq);
	snprintf(side_a, sizeof(side_a), "t%u/side-a", t);
	snprintf(side_b, sizeof(side_b), "t%u/side-b", t);
	const char *v[3] = {branch, side_a, side_b};
	const int l[3] = {(int)strlen(branch), (int)strlen(side_a), (int)strlen(side_b)};
	r->cas_attempts = 1;
	int rc = bench_pg_run(w->pg, "svc_merge", 3, v, l, &res);
	svc_timed_end(r);
	if (!rc)
		rc = result_id(&mc, res);
	PQclear(res);
	if (rc) {
		svc_fail(r, rc, branch);
		return;
	}
	/* side-b's changes in the merged tree: what a diff of side-a's tree against it finds. */
	if ((rc = prolly_commit_read(&cm, w->db, &mc)) ||
	    (rc = prolly_commit_read(&ca, w->db, &fx->side_commit[t * 2])) ||
	    (rc = prolly_diff(w->db, &ca->tree, &cm->tree, NULL, count_entry, &ms.applied))) {
		r->checked = 1;
		svc_invalid(r, "merge into %s: the merged commit cannot be read", branch);
	} else {
		r->entries = ms.applied;
		svc_check_merge(w, r, t, &cm->tree, &ms, branch);
	}
	prolly_commit_free(cm);
	prolly_commit_free(ca);
}

const svc_op_fn svc_sql_ops[HW_N_SERVICE_OPS] = {sql_point_read, sql_multi_read, sql_commit,
                                                 sql_diff, sql_merge};
