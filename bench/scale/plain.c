/*
 * plain.c - the scale engine's plain-table baseline (PostgreSQL store only).
 *
 * The same records in an ordinary table (key bytea PRIMARY KEY, value bytea NOT NULL) in a
 * schema of its own, through libpq directly with binary parameters and results, on the
 * fixture's admin connection. Every cell reuses the Prolly cell's sample (same keys, same edits,
 * same range), so the two rows of a pair did the same logical work. Statements and round trips
 * are counted into the thread's prolly counters like the store counts its own. Cells that
 * change the table undo their change afterwards (untimed), so every cell starts from the base
 * records.
 *
 * Rows: store "pg-plain", op the plain name (scale_plain_op_names): build, full_scan, get, query,
 * scan, batch, put, put_nosync.
 */
#include "engine.h"

/* ---- connection and schema ----------------------------------------------------------------- */

int sc_plain_connect(fixture *fx)
{
	const scale_config *cfg = fx->cfg;
	if (bench_pg_connect(&fx->admin, cfg->pg_url) != 0) {
		fprintf(stderr, "[%" PRIu64 " pg] %s\n", fx->n, prolly_last_error());
		return -1;
	}
	if (cfg->pg_statements) { /* per fixture; needs the superuser or pg_read_all_stats */
		PGresult *res = NULL;
		char fn[200], sql[256];
		/* Named with its schema: the session's search_path is pg_catalog's alone. */
		int rc = bench_pg_ext_object(fn, sizeof(fn), fx->admin, "pg_stat_statements",
		                             "pg_stat_statements_reset()");
		snprintf(sql, sizeof(sql), "SELECT %s", fn);
		if (rc != 0 || !fn[0] || bench_pg_exec(fx->admin, sql, &res) != 0)
			fprintf(stderr, "note: pg_stat_statements_reset: %s\n",
			        rc == 0 && !fn[0] ? "the extension is not installed" : prolly_last_error());
		PQclear(res);
	}
	return 0;
}

int sc_plain_schema(fixture *fx)
{
	const scale_config *cfg = fx->cfg;
	char q[160], sql[256];
	if (cfg->pg_schema[0])
		snprintf(fx->plain_schema, sizeof(fx->plain_schema), "%s_plain", cfg->pg_schema);
	else
		snprintf(fx->plain_schema, sizeof(fx->plain_schema), "prolly_bench_plain_%ld_%" PRIu64,
		         (long)getpid(), fx->n);
	if (bench_pg_ident(q, sizeof(q), fx->plain_schema) != 0) {
		fx->plain_schema[0] = '\0';
		return -1;
	}
	snprintf(fx->plain_table, sizeof(fx->plain_table), "%s.kv", q);
	fx->plain_prepared = 0;
	if (cfg->pg_schema[0]) { /* a fixed name: what an interrupted run left goes first */
		snprintf(sql, sizeof(sql), "DROP SCHEMA IF EXISTS %s CASCADE", q);
		(void)bench_pg_exec(fx->admin, sql, NULL);
	}
	snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", q);
	if (bench_pg_exec(fx->admin, sql, NULL) != 0) {
		fprintf(stderr, "[%" PRIu64 " pg] %s\n", fx->n, prolly_last_error());
		fx->plain_schema[0] = '\0';
		return -1;
	}
	return 0;
}

void sc_plain_end(fixture *fx)
{
	if (fx->plain_schema[0])
		sc_drop_schema(fx, fx->plain_schema);
	fx->plain_schema[0] = '\0';
	PQfinish(fx->admin);
	fx->admin = NULL;
}

void sc_pg_top_statements(fixture *fx)
{
	PGresult *res = NULL;
	char sql[768], rel[200];
	if (!fx->cfg->pg_statements || !fx->admin)
		return;
	int rc = bench_pg_ext_object(rel, sizeof(rel), fx->admin, "pg_stat_statements",
	                             "pg_stat_statements");
	if (rc != 0 || !rel[0]) {
		fprintf(stderr, "note: pg_stat_statements: %s\n",
		        rc == 0 ? "the extension is not installed" : prolly_last_error());
		return;
	}
	snprintf(sql, sizeof(sql),
	         "SELECT calls::text, round(total_exec_time::numeric, 1)::text, "
	         "round(mean_exec_time::numeric, 4)::text, rows::text, "
	         "(shared_blks_hit + shared_blks_read)::text, shared_blks_read::text, "
	         "left(regexp_replace(query, '\\s+', ' ', 'g'), 110) "
	         "FROM %s ORDER BY total_exec_time DESC LIMIT %d",
	         rel, fx->cfg->pg_statements);
	if (bench_pg_exec(fx->admin, sql, &res) != 0) {
		fprintf(stderr, "note: pg_stat_statements: %s\n", prolly_last_error());
		return;
	}
	fprintf(stderr,
	        "\n[%" PRIu64 " pg] pg_stat_statements, top %d by total time "
	        "(whole fixture, baseline included):\n"
	        "| calls | total ms | mean ms | rows | blocks | read | query |\n"
	        "|---:|---:|---:|---:|---:|---:|---|\n",
	        fx->n, fx->cfg->pg_statements);
	for (int i = 0; i < PQntuples(res); i++) {
		fprintf(stderr, "|");
		for (int j = 0; j < 7; j++)
			fprintf(stderr, " %.*s |", PQgetlength(res, i, j), PQgetvalue(res, i, j));
		fprintf(stderr, "\n");
	}
	fprintf(stderr, "\n");
	PQclear(res);
}

/* ---- statements ---------------------------------------------------------------------------- */

static int plain_sql(char *out, size_t n, const fixture *fx, const char *fmt)
{
	int k = snprintf(out, n, fmt, fx->plain_table);
	return k < 0 || (size_t)k >= n ? prolly_set_error(PROLLY_EINVAL, "statement too long") : 0;
}

static int plain_prepare(cell *c)
{
	fixture *fx = c->fx;
	static const sc_pg_stmt stmts[] = {
	    {"plain_get", "SELECT value FROM %s WHERE key = $1", 1},
	    {"plain_any", "SELECT key, value FROM %s WHERE key = ANY($1::bytea[])", 1},
	    {"plain_scan_range", "SELECT key, value FROM %s WHERE key >= $1 AND key < $2 ORDER BY key",
	     2},
	    {"plain_upsert",
	     "INSERT INTO %s (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[]) "
	     "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
	     2},
	    {"plain_delete", "DELETE FROM %s WHERE key = ANY($1::bytea[])", 1},
	    {"plain_upsert1",
	     "INSERT INTO %s (key, value) VALUES ($1, $2) "
	     "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
	     2},
	    {"plain_delete1", "DELETE FROM %s WHERE key = $1", 1},
	    {"plain_count", "SELECT count(*)::text FROM %s WHERE key >= $1 AND key < $2", 2},
	};
	const char *failed = NULL;
	int rc;
	if (fx->plain_prepared)
		return 0;
	rc = sc_pg_prepare(fx->admin, stmts, sizeof(stmts) / sizeof(stmts[0]), fx->plain_table,
	                   &failed);
	if (rc != 0)
		return sc_fail(c, rc, "preparing the plain-table statements");
	fx->plain_prepared = 1;
	return 0;
}

/* Does (k, v) hold the base record of k's slot (generation 0)? */
static int plain_base_record(const fixture *fx, const void *k, size_t klen, const void *v,
                             size_t vlen)
{
	unsigned char stackbuf[64];
	if (klen != KEY_LEN || vlen != fx->vlen)
		return 0;
	unsigned char *want = vlen <= sizeof(stackbuf) ? stackbuf : malloc(vlen);
	if (!want)
		return 0;
	sc_make_value(want, vlen, fx->cfg->seed, sc_key_slot(k), 0);
	int same = memcmp(want, v, vlen) == 0;
	if (want != stackbuf)
		free(want);
	return same;
}

/* ---- cells --------------------------------------------------------------------------------- */

/* CREATE TABLE + COPY of the N base records (a fresh table each run), then (untimed) VACUUM
 * ANALYZE as any loaded table gets, and a count. */
static int plain_build(cell *c)
{
	fixture *fx = c->fx;
	PGconn *pc = fx->admin;
	size_t vlen = fx->vlen;
	bench_buf b = {0};
	PGresult *res = NULL;
	unsigned char *rec = malloc(KEY_LEN + vlen);
	char sql[512];
	int rc;
	if (!rec) {
		rc = sc_fail(c, PROLLY_ENOMEM, "allocating a record");
		goto out;
	}
	CK(plain_sql(sql, sizeof(sql), fx, "DROP TABLE IF EXISTS %s"), "DROP TABLE");
	CK(bench_pg_exec(pc, sql, NULL), "dropping the previous plain table");
	if (fx->plain_prepared) /* they named the dropped table */
		CK(bench_pg_exec(pc, "DEALLOCATE ALL", NULL), "DEALLOCATE");
	fx->plain_prepared = 0;
	if (bench_pg_exec(pc, "CHECKPOINT", NULL) != 0) /* untimed; needs pg_checkpoint or superuser */
		fprintf(stderr, "note: CHECKPOINT before the plain build failed: %s\n",
		        prolly_last_error());
	sc_measure_begin(c);
	CK(plain_sql(sql, sizeof(sql), fx,
	             "CREATE TABLE %s (key bytea PRIMARY KEY, value bytea NOT NULL)"),
	   "CREATE TABLE");
	CK(bench_pg_exec(pc, sql, NULL), "creating the plain table");
	CK(plain_sql(sql, sizeof(sql), fx, "COPY %s (key, value) FROM STDIN (FORMAT binary)"), "COPY");
	res = PQexec(pc, sql);
	bench_pg_count(1, 1);
	if (!res || PQresultStatus(res) != PGRES_COPY_IN) {
		rc = sc_fail(c, bench_pg_error(pc, res, "starting COPY"), "COPY");
		goto out;
	}
	PQclear(res);
	res = NULL;
	bench_sw_pause(&c->sw);
	CK(bench_pg_copy_header(&b), "encoding COPY");
	for (uint64_t i = 0; i < fx->n; i++) {
		sc_make_key(rec, i * SLOT_STEP);
		sc_make_value(rec + KEY_LEN, vlen, fx->cfg->seed, i * SLOT_STEP, 0);
		CK(bench_pg_copy_row2(&b, rec, KEY_LEN, rec + KEY_LEN, vlen), "encoding COPY");
		if (b.n >= (1u << 20)) { /* record generation is untimed, sending is timed */
			bench_sw_resume(&c->sw);
			CK(bench_pg_copy_send(pc, &b), "COPY");
			bench_sw_pause(&c->sw);
		}
	}
	CK(bench_pg_copy_trailer(&b), "encoding COPY");
	bench_sw_resume(&c->sw);
	CK(bench_pg_copy_send(pc, &b), "COPY");
	CK(bench_pg_copy_end(pc), "COPY");
	sc_measure_end(c);
	c->ops = fx->n;
	CK(plain_sql(sql, sizeof(sql), fx, "VACUUM ANALYZE %s"), "VACUUM");
	CK(bench_pg_exec(pc, sql, NULL), "VACUUM ANALYZE of the plain table");
	CK(plain_sql(sql, sizeof(sql), fx, "SELECT count(*)::bigint FROM %s"), "count");
	CK(bench_pg_exec(pc, sql, &res), "counting the plain table");
	if (PQntuples(res) != 1 || PQgetlength(res, 0, 0) != 8) {
		sc_invalid(c, "count(*) gave no bigint");
	} else {
		const unsigned char *p = (const unsigned char *)PQgetvalue(res, 0, 0);
		uint64_t cnt = (uint64_t)bench_pg_get32(p) << 32 | bench_pg_get32(p + 4);
		if (cnt != fx->n)
			sc_invalid(c, "plain table has %" PRIu64 " rows, expected %" PRIu64, cnt, fx->n);
	}
out:
	if (rc != 0 && PQtransactionStatus(pc) == PQTRANS_ACTIVE) /* a COPY in flight */
		(void)bench_pg_copy_end(pc);
	PQclear(res);
	bench_buf_free(&b);
	free(rec);
	return rc;
}

/* SELECT key, value ... ORDER BY key through a cursor, FETCH 100000 rows at a time. */
static int plain_full_scan(cell *c)
{
	fixture *fx = c->fx;
	PGconn *pc = fx->admin;
	PGresult *res = NULL;
	unsigned char first[KEY_LEN], last[KEY_LEN];
	char sql[512];
	uint64_t count = 0;
	int rc, bad = 0, in_txn = 0;
	sc_measure_begin(c);
	CK(bench_pg_exec(pc, "BEGIN", NULL), "BEGIN");
	in_txn = 1;
	CK(plain_sql(
	       sql, sizeof(sql), fx,
	       "DECLARE plain_full_scan NO SCROLL CURSOR FOR SELECT key, value FROM %s ORDER BY key"),
	   "DECLARE");
	CK(bench_pg_exec(pc, sql, NULL), "DECLARE");
	for (;;) {
		CK(bench_pg_exec(pc, "FETCH FORWARD 100000 FROM plain_full_scan", &res), "FETCH");
		int rows = PQntuples(res);
		for (int i = 0; i < rows; i++) {
			const char *k = PQgetvalue(res, i, 0);
			if (PQgetlength(res, i, 0) != KEY_LEN || (size_t)PQgetlength(res, i, 1) != fx->vlen) {
				bad = 1;
				continue;
			}
			if (count == 0)
				memcpy(first, k, KEY_LEN);
			else if (memcmp(last, k, KEY_LEN) >= 0)
				bad = 1;
			memcpy(last, k, KEY_LEN);
			count++;
		}
		PQclear(res);
		res = NULL;
		if (rows == 0)
			break;
	}
	CK(bench_pg_exec(pc, "COMMIT", NULL), "COMMIT");
	in_txn = 0;
	sc_measure_end(c);
	c->ops = fx->n;
	if (bad)
		sc_invalid(c, "scan returned rows out of order or of the wrong size");
	sc_check_full_scan(c, fx, count, first, last);
out:
	PQclear(res);
	if (in_txn)
		(void)bench_pg_exec(pc, "ROLLBACK", NULL);
	return rc;
}

static const sc_pg_side side = {plain_prepare, "preparing", NULL, 0};

/* cfg->reads point selects one after another (the keys of get_cold / get_warm). */
static int plain_get(cell *c)
{
	return sc_pg_get(c, &side, "plain_get", "point select");
}

/* One SELECT ... WHERE key = ANY($1) of the get_many keys (the answer is a set: duplicates
 * in the request come back once, in no particular order). */
static int plain_query(cell *c)
{
	readset r;
	PGresult *res = NULL;
	bench_buf b = {0};
	uint64_t *slots = NULL;
	int rc;
	memset(&r, 0, sizeof(r));
	CK(plain_prepare(c), "preparing");
	CK(sc_readset_random(&r, c, (size_t)c->fx->cfg->reads, SC_READS), "preparing reads");
	slots = malloc(r.n * sizeof(*slots) + 1);
	if (!slots) {
		rc = sc_fail(c, PROLLY_ENOMEM, "allocating slots");
		goto out;
	}
	size_t distinct = 0;
	for (size_t i = 0; i < r.n; i++)
		slots[i] = sc_key_slot(r.keys + i * KEY_LEN);
	qsort(slots, r.n, sizeof(*slots), sc_u64_cmp);
	for (size_t i = 0; i < r.n; i++)
		distinct += i == 0 || slots[i] != slots[i - 1];
	sc_measure_begin(c);
	CK(sc_pg_keys_array(&b, &r), "encoding keys");
	const char *v[1] = {(const char *)b.p};
	const int l[1] = {(int)b.n};
	CK(sc_pg_run(c, &side, "plain_any", 1, v, l, &res), "= ANY select");
	int rows = PQntuples(res);
	for (int i = 0; i < rows; i++)
		if (!plain_base_record(c->fx, PQgetvalue(res, i, 0), (size_t)PQgetlength(res, i, 0),
		                       PQgetvalue(res, i, 1), (size_t)PQgetlength(res, i, 1)))
			r.mismatches++;
	sc_measure_end(c);
	c->ops = r.n;
	if ((size_t)rows != distinct || r.mismatches)
		sc_invalid(c, "= ANY gave %d rows (%zu wrong), expected %zu distinct keys", rows,
		           r.mismatches, distinct);
out:
	PQclear(res);
	bench_buf_free(&b);
	free(slots);
	sc_readset_free(&r);
	return rc;
}

/* SELECT ... WHERE key >= lo AND key < hi ORDER BY key over the range cell's records. */
static int plain_scan_range(cell *c)
{
	return sc_pg_scan(c, &side, "plain_scan_range", "range select");
}

/* count(*) over the count cell's range (one operation per run). */
static int plain_count(cell *c)
{
	return sc_pg_count(c, &side, "plain_count", "count(*)");
}

/* Puts (upsert) or deletes of edits[0..n) in one autocommit statement; *affected gets the
 * statement's row count. */
static int plain_apply(cell *c, const prolly_edit *edits, size_t n, int del, uint64_t *affected)
{
	bench_buf kb = {0}, vb = {0};
	PGresult *res = NULL;
	int rc = sc_pg_edit_arrays(&kb, del ? NULL : &vb, edits, n); /* !del: every edit a put */
	if (rc != 0)
		goto out;
	const char *v[2] = {(const char *)kb.p, (const char *)vb.p};
	const int l[2] = {(int)kb.n, (int)vb.n};
	rc = bench_pg_run(c->fx->admin, del ? "plain_delete" : "plain_upsert", del ? 1 : 2, v, l, &res);
	if (rc == 0)
		*affected = strtoull(PQcmdTuples(res), NULL, 10);
out:
	PQclear(res);
	bench_buf_free(&kb);
	bench_buf_free(&vb);
	return rc;
}

/* Untimed: brings the table back to the base records for the keys of edits (deletes what an
 * insert added, re-inserts what a delete removed; updated values stay, reads ran before). */
static int plain_undo(cell *c, const editset *e, size_t n)
{
	size_t vlen = c->fx->vlen;
	uint64_t affected = 0;
	if (c->pattern == SCALE_PAT_RANDOM_INSERT || c->pattern == SCALE_PAT_APPEND)
		return plain_apply(c, e->edits, n, 1, &affected);
	if (c->pattern != SCALE_PAT_RANDOM_DELETE)
		return 0;
	prolly_edit *puts = malloc(n * sizeof(*puts) + 1);
	unsigned char *vals = malloc(n * vlen + 1);
	int rc = PROLLY_ENOMEM;
	if (puts && vals) {
		for (size_t i = 0; i < n; i++) {
			sc_make_value(vals + i * vlen, vlen, c->fx->cfg->seed, e->slots[i], 0);
			puts[i].op = PROLLY_PUT;
			puts[i].key = e->edits[i].key;
			puts[i].value.data = vals + i * vlen;
			puts[i].value.size = vlen;
		}
		rc = plain_apply(c, puts, n, 0, &affected);
	}
	free(puts);
	free(vals);
	return rc;
}

/* The batch analogue: one INSERT ... SELECT FROM unnest ... ON CONFLICT DO UPDATE of the edit
 * set (DELETE ... = ANY for the delete pattern), autocommit (a durable commit). */
static int plain_batch(cell *c)
{
	editset e;
	uint64_t affected = 0;
	int rc;
	memset(&e, 0, sizeof(e));
	CK(plain_prepare(c), "preparing");
	CK(sc_editset_make(&e, c, 0), "making the edit set");
	sc_measure_begin(c);
	CK(plain_apply(c, e.edits, e.n, c->pattern == SCALE_PAT_RANDOM_DELETE, &affected),
	   "batch statement");
	sc_measure_end(c);
	c->ops = e.n;
	if (affected != e.n)
		sc_invalid(c, "the statement affected %" PRIu64 " rows, expected %zu", affected, e.n);
	CK(plain_undo(c, &e, e.n), "undoing the batch");
out:
	sc_editset_free(&e);
	return rc;
}

/* cfg->puts autocommit statements of one edit each (the keys of the single cells); the
 * nosync variant runs them with synchronous_commit off, as the store does for durable = 0. */
static int plain_put(cell *c)
{
	editset e;
	PGresult *res = NULL;
	size_t k;
	int rc, nosync = c->op == SCALE_OP_PUT_NOSYNC, wrong = 0;
	memset(&e, 0, sizeof(e));
	CK(plain_prepare(c), "preparing");
	CK(sc_pg_put_edits(c, &e, &k), "making the edit set"); /* distinct: the undo is exact */
	size_t first = nosync ? k : 0;
	if (nosync)
		CK(bench_pg_exec(c->fx->admin, "SET synchronous_commit TO off", NULL), "SET");
	sc_measure_begin(c);
	for (size_t i = 0; i < k; i++) {
		const prolly_edit *ed = &e.edits[(first + i) % e.n];
		const char *v[2] = {(const char *)ed->key.data, (const char *)ed->value.data};
		const int l[2] = {(int)ed->key.size, (int)ed->value.size};
		int del = ed->op == PROLLY_DEL;
		uint64_t t = sc_lat_start(c);
		CK(bench_pg_run(c->fx->admin, del ? "plain_delete1" : "plain_upsert1", del ? 1 : 2, v, l,
		                &res),
		   "single statement");
		sc_lat_stop(c, t);
		wrong += strcmp(PQcmdTuples(res), "1") != 0;
		PQclear(res);
		res = NULL;
	}
	sc_measure_end(c);
	c->ops = k;
	if (wrong)
		sc_invalid(c, "%d single statements did not affect exactly one row", wrong);
	if (nosync)
		CK(bench_pg_exec(c->fx->admin, "RESET synchronous_commit", NULL), "RESET");
	nosync = 0;
	/* Undo exactly the keys used (a window of the edit set, wrapping). */
	if (first % e.n + k <= e.n) {
		editset w = e;
		w.edits += first % e.n;
		w.slots += first % e.n;
		CK(plain_undo(c, &w, k), "undoing the puts");
	} else {
		CK(plain_undo(c, &e, e.n), "undoing the puts");
	}
out:
	if (nosync)
		(void)bench_pg_exec(c->fx->admin, "RESET synchronous_commit", NULL);
	PQclear(res);
	sc_editset_free(&e);
	return rc;
}

/* The plain-table analogue of each op (NULL: none); one cell serves two ops where the plain
 * table makes no difference (full_scan and full_scan_warm; get_cold_start, get_warm and get_cold),
 * so only the first op of such a group has a function here (see matrix.c). */
const sc_cell_fn sc_plain_fns[SCALE_N_OPS] = {
    [SCALE_OP_BUILD] = plain_build,        [SCALE_OP_FULL_SCAN] = plain_full_scan,
    [SCALE_OP_GET_COLD_START] = plain_get, [SCALE_OP_QUERY] = plain_query,
    [SCALE_OP_SCAN] = plain_scan_range,    [SCALE_OP_COUNT] = plain_count,
    [SCALE_OP_BATCH] = plain_batch,        [SCALE_OP_PUT] = plain_put,
    [SCALE_OP_PUT_NOSYNC] = plain_put,
};
