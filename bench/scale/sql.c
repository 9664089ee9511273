/*
 * sql.c - the scale engine's third contender on the PostgreSQL store: the prolly extension
 * (ext/postgres), every operation one SQL statement on the fixture's admin connection, on the
 * same store and base tree the C client's cells used.
 *
 * Setup (untimed, once per fixture, after the pg cells): CREATE EXTENSION prolly in the store's
 * schema (dropped with it), a commit of the base tree on the branch "bench-sql-base" (what the
 * read statements name) and the prepared statements. When the extension is not installed in the
 * server the sql cells are skipped with a note on stderr; under CI=true they run anyway and fail
 * with that note (invalid rows), so CI cannot pass without them.
 *
 * Rows: store "pg-sql", op the pg op they stand beside; vs_plain from the same plain row as the
 * pg row of that op:
 *   get_warm  cfg->reads statements `SELECT prolly_get(ref, key)`, prepared once (plain: get)
 *   query     one `prolly_get_many(ref, keys)` of the reads sample (plain: query)
 *   scan      one `prolly_scan(ref, from, to, max_rows => reads)` of the range cell's window
 *             (plain: scan)
 *   batch     one `prolly_commit(branch, keys, vals)` of the edit set (plain: batch)
 *   put       cfg->puts statements `prolly_commit` of one edit each (plain: put)
 *   diff      one `prolly_diff(base, edited)` read to the end (no plain analogue)
 * Writes go to the branch "bench-sql-work", moved back to the base commit (untimed) before each
 * run. Every cell checks its answer: values against the model, commit trees against the root the
 * C client made from the same edits (byte-identical trees), diff entries against the edit set.
 */
#include "engine.h"

#define SQL_BASE "bench-sql-base"
#define SQL_WORK "bench-sql-work"
#define SQL_EDITED "bench-sql-edited"

/* Points branch at a new commit of tree (untimed setup); *out gets the commit. */
static int sql_branch_to(fixture *fx, const char *branch, const prolly_id *tree, prolly_id *out)
{
	prolly_txn *txn = NULL;
	prolly_id head, cid;
	int rc = prolly_branch_head(&head, fx->db, branch);
	int have = rc == 0;
	if (rc != 0 && rc != PROLLY_ENOTFOUND)
		return rc;
	if ((rc = prolly_txn_begin(&txn, fx->db)) != 0)
		goto cleanup;
	if ((rc = prolly_commit_create(&cid, txn, tree, have ? &head : NULL, have, 0, "bench")) != 0 ||
	    (rc = prolly_txn_move_branch(txn, branch, have ? &head : NULL, &cid)) != 0 ||
	    (rc = prolly_txn_commit(txn, NULL, 0)) != 0)
		goto cleanup;
	if (out)
		*out = cid;
cleanup:
	prolly_txn_free(txn);
	return rc;
}

/* The tree of branch's head. */
static int sql_branch_tree(fixture *fx, const char *branch, prolly_id *tree)
{
	prolly_commit *cm = NULL;
	int rc = prolly_branch_commit(&cm, fx->db, branch);
	if (rc == 0)
		*tree = cm->tree;
	prolly_commit_free(cm);
	return rc;
}

int sc_sql_setup(fixture *fx)
{
	char q[160], sql[512];
	fx->sql_ready = 0;
	fx->sql_why[0] = '\0';
	if (!fx->admin || !fx->db || !fx->have_base || bench_pg_ident(q, sizeof(q), fx->schema) != 0) {
		snprintf(fx->sql_why, sizeof(fx->sql_why), "no pg store to install the extension in");
		return -1;
	}
	snprintf(sql, sizeof(sql), "CREATE EXTENSION IF NOT EXISTS prolly SCHEMA %s", q);
	if (bench_pg_exec(fx->admin, sql, NULL) != 0) {
		snprintf(fx->sql_why, sizeof(fx->sql_why),
		         "the prolly extension is not installed in this server "
		         "(make -C ext/postgres install): %.80s",
		         prolly_last_error());
		return -1;
	}
	static const sc_pg_stmt stmts[] = {
	    {"sql_get", "SELECT %s.prolly_get($1::text, $2::bytea)", 2},
	    {"sql_many", "SELECT ord, key, value FROM %s.prolly_get_many($1::text, $2::bytea[])", 2},
	    {"sql_scan",
	     "SELECT key, value FROM %s.prolly_scan($1::text, $2::bytea, $3::bytea, NULL, "
	     "$4::text::bigint)",
	     4},
	    {"sql_commit", "SELECT %s.prolly_commit($1::text, $2::bytea[], $3::bytea[])", 3},
	    {"sql_diff", "SELECT op, key FROM %s.prolly_diff($1::text, $2::text)", 2},
	    {"sql_count", "SELECT %s.prolly_count($1::text, $2::bytea, $3::bytea)::text", 3},
	};
	const char *failed = NULL;
	if (sc_pg_prepare(fx->admin, stmts, sizeof(stmts) / sizeof(stmts[0]), q, &failed) != 0) {
		snprintf(fx->sql_why, sizeof(fx->sql_why), "preparing %s: %.120s", failed,
		         prolly_last_error());
		return -1;
	}
	int rc = sql_branch_to(fx, SQL_BASE, &fx->base, &fx->sql_base_commit);
	if (rc != 0) {
		snprintf(fx->sql_why, sizeof(fx->sql_why), "committing the base tree: %.120s",
		         prolly_last_error());
		return -1;
	}
	fx->sql_ready = 1;
	return 0;
}

/* First step of every sql cell: the setup's failure becomes the cell's error. */
static int sql_ready(cell *c)
{
	if (c->fx->sql_ready)
		return 0;
	return prolly_set_error(PROLLY_ENOTFOUND, "%s", c->fx->sql_why);
}

/* Untimed: the work branch back on the base commit. */
static int sql_reset_work(cell *c)
{
	return sql_branch_to(c->fx, SQL_WORK, &c->fx->base, NULL);
}

/* ---- reads --------------------------------------------------------------------------------- */

static const sc_pg_side side = {sql_ready, "the extension", SQL_BASE, 1};

static int sql_get(cell *c)
{
	return sc_pg_get(c, &side, "sql_get", "prolly_get");
}

/* Every requested key comes back in request order (ord 1..n), duplicates kept. */
static int sql_get_many(cell *c)
{
	size_t vlen = c->fx->vlen;
	readset r;
	PGresult *res = NULL;
	bench_buf b = {0};
	int rc;
	memset(&r, 0, sizeof(r));
	CK(sql_ready(c), "the extension");
	CK(sc_readset_random(&r, c, (size_t)c->fx->cfg->reads, SC_READS), "preparing reads");
	sc_measure_begin(c);
	CK(sc_pg_keys_array(&b, &r), "encoding keys");
	const char *v[1] = {(const char *)b.p};
	const int l[1] = {(int)b.n};
	CK(sc_pg_run(c, &side, "sql_many", 1, v, l, &res), "prolly_get_many");
	int rows = PQntuples(res);
	for (int i = 0; i < rows && (size_t)i < r.n; i++) {
		size_t ord = PQgetlength(res, i, 0) == 4
		                 ? bench_pg_get32((const unsigned char *)PQgetvalue(res, i, 0))
		                 : 0;
		if (ord != (size_t)i + 1 || PQgetisnull(res, i, 2) ||
		    (size_t)PQgetlength(res, i, 2) != vlen ||
		    memcmp(PQgetvalue(res, i, 2), r.vals + (size_t)i * vlen, vlen) != 0)
			r.mismatches++;
	}
	sc_measure_end(c);
	c->ops = r.n;
	if ((size_t)rows != r.n || r.mismatches)
		sc_invalid(c, "prolly_get_many gave %d rows (%zu wrong), expected %zu", rows, r.mismatches,
		           r.n);
out:
	PQclear(res);
	bench_buf_free(&b);
	sc_readset_free(&r);
	return rc;
}

/* The range cell's window: from its first key, to the key after it, at most reads rows. */
static int sql_scan(cell *c)
{
	return sc_pg_scan(c, &side, "sql_scan", "prolly_scan");
}

/* prolly_count over the count cell's range (one statement per run). */
static int sql_count(cell *c)
{
	return sc_pg_count(c, &side, "sql_count", "prolly_count");
}

/* ---- writes -------------------------------------------------------------------------------- */

/* One prolly_commit of edits[0..n) to the work branch (a delete is a NULL value). */
static int sql_commit(cell *c, const prolly_edit *edits, size_t n, bench_buf *kb, bench_buf *vb)
{
	PGresult *res = NULL;
	int rc = sc_pg_edit_arrays(kb, vb, edits, n);
	if (rc != 0)
		return rc;
	const char *v[3] = {SQL_WORK, (const char *)kb->p, (const char *)vb->p};
	const int l[3] = {(int)strlen(SQL_WORK), (int)kb->n, (int)vb->n};
	rc = bench_pg_run(c->fx->admin, "sql_commit", 3, v, l, &res);
	if (rc == 0 && (PQntuples(res) != 1 || PQgetlength(res, 0, 0) != PROLLY_ID_HEX_SIZE - 1))
		sc_invalid(c, "prolly_commit did not return a commit id");
	PQclear(res);
	return rc;
}

/* The work branch's tree must be want (the C client's root for the same edits). */
static int sql_check_tree(cell *c, const prolly_id *want, const char *what)
{
	prolly_id got;
	int rc = sql_branch_tree(c->fx, SQL_WORK, &got);
	if (rc != 0)
		return sc_fail(c, rc, "reading the work branch");
	if (!prolly_id_equal(&got, want))
		sc_invalid(c, "%s: the tree differs from the C client's for the same edits", what);
	return 0;
}

static int sql_batch(cell *c)
{
	editset e;
	bench_buf kb = {0}, vb = {0};
	prolly_id want;
	int rc;
	memset(&e, 0, sizeof(e));
	CK(sql_ready(c), "the extension");
	CK(sc_editset_make(&e, c, 0), "making the edit set");
	CK(sc_edited_root(c, &e, &want), "the C client's edited tree");
	CK(sql_reset_work(c), "resetting the work branch");
	sc_measure_begin(c);
	CK(sql_commit(c, e.edits, e.n, &kb, &vb), "prolly_commit");
	sc_measure_end(c);
	c->ops = e.n;
	CK(sql_check_tree(c, &want, "prolly_commit"), "checking the tree");
out:
	bench_buf_free(&kb);
	bench_buf_free(&vb);
	sc_editset_free(&e);
	return rc;
}

/* cfg->puts statements of one edit each, one after another on the work branch. */
static int sql_put(cell *c)
{
	fixture *fx = c->fx;
	editset e;
	bench_buf kb = {0}, vb = {0};
	prolly_txn *txn = NULL;
	prolly_id want;
	size_t k;
	int rc;
	memset(&e, 0, sizeof(e));
	CK(sql_ready(c), "the extension");
	CK(sc_pg_put_edits(c, &e, &k), "making the edit set"); /* the result: base + edits[0..k) */
	CK(prolly_txn_begin(&txn, fx->db), "prolly_txn_begin");
	CK(prolly_edit_tree(&want, txn, &fx->base, e.edits, k), "the C client's tree");
	prolly_txn_free(txn); /* never committed: only the root id is wanted */
	txn = NULL;
	CK(sql_reset_work(c), "resetting the work branch");
	sc_measure_begin(c);
	for (size_t i = 0; i < k; i++) {
		uint64_t t = sc_lat_start(c);
		CK(sql_commit(c, &e.edits[i], 1, &kb, &vb), "prolly_commit");
		sc_lat_stop(c, t);
	}
	sc_measure_end(c);
	c->ops = k;
	CK(sql_check_tree(c, &want, "single-edit commits"), "checking the tree");
out:
	prolly_txn_free(txn);
	bench_buf_free(&kb);
	bench_buf_free(&vb);
	sc_editset_free(&e);
	return rc;
}

/* ---- diff ---------------------------------------------------------------------------------- */

static int sql_diff(cell *c)
{
	fixture *fx = c->fx;
	editset e;
	PGresult *res = NULL;
	prolly_id to;
	unsigned char want[KEY_LEN];
	int rc;
	memset(&e, 0, sizeof(e));
	CK(sql_ready(c), "the extension");
	CK(sc_editset_make(&e, c, 0), "making the edit set");
	CK(sc_edited_root(c, &e, &to), "making the edited tree");
	CK(sql_branch_to(fx, SQL_EDITED, &to, NULL), "committing the edited tree");
	qsort(e.slots, e.n, sizeof(*e.slots), sc_u64_cmp);
	const char *op = e.kind == PROLLY_DIFF_ADDED ? "+" : e.kind == PROLLY_DIFF_REMOVED ? "-" : "~";
	size_t wrong = 0;
	sc_measure_begin(c);
	const char *v[2] = {SQL_BASE, SQL_EDITED};
	const int l[2] = {(int)strlen(SQL_BASE), (int)strlen(SQL_EDITED)};
	CK(bench_pg_run(fx->admin, "sql_diff", 2, v, l, &res), "prolly_diff");
	int rows = PQntuples(res);
	for (int i = 0; i < rows && (size_t)i < e.n; i++) {
		sc_make_key(want, e.slots[i]);
		if (PQgetlength(res, i, 0) != 1 || PQgetvalue(res, i, 0)[0] != op[0] ||
		    PQgetlength(res, i, 1) != KEY_LEN || memcmp(PQgetvalue(res, i, 1), want, KEY_LEN))
			wrong++;
	}
	sc_measure_end(c);
	c->ops = e.n;
	if ((size_t)rows != e.n || wrong)
		sc_invalid(c, "prolly_diff gave %d rows (%zu unexpected), expected %zu", rows, wrong, e.n);
out:
	PQclear(res);
	sc_editset_free(&e);
	return rc;
}

const sc_cell_fn sc_sql_fns[SCALE_N_OPS] = {
    [SCALE_OP_GET_WARM] = sql_get, [SCALE_OP_QUERY] = sql_get_many, [SCALE_OP_SCAN] = sql_scan,
    [SCALE_OP_COUNT] = sql_count,  [SCALE_OP_BATCH] = sql_batch,    [SCALE_OP_PUT] = sql_put,
    [SCALE_OP_DIFF] = sql_diff,
};
