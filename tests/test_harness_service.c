/*
 * test_harness_service.c - the harness's service suite (bench/suites/service.c, service_ops.c):
 *
 *   - the value codec and key space the suite validates results with;
 *   - a merged tree that lost one of side-b's changes fails the merge check, a diff that missed
 *     a change the diff check; a commit whose store write left its branch where it was, the
 *     commit check;
 *   - hsvc_columns carries every PostgreSQL counter column of hp_columns;
 *   - a tiny workload (200 records, clients [1, 3], pool [2], 300 ms, every class) on the memory
 *     store, LMDB and PostgreSQL: six rows per cell, all validated, successful operations, store
 *     counters; on PostgreSQL statements per operation and the server's counters;
 *   - resume: a second hsvc_run into the same directory measures nothing and skips every cell;
 *   - contention: every operation a commit to one hot root from several clients gives CAS
 *     conflicts and retries;
 *   - [service] access: "client" by default, "sql" read, any other value refused naming the key;
 *     "sql" on a store other than PostgreSQL refused;
 *   - access = ["client", "sql"] on PostgreSQL (the prolly extension must be installed; under
 *     CI=true it must be, elsewhere its absence skips the test with a note): both modes side by
 *     side (c1-p2, c1-p2-sql, ...), every row validated, in sql mode exactly one statement per
 *     operation and no conflict; the contention run in sql mode: every commit queued, none
 *     retried; a database whose extension is in another schema refused, the extension kept.
 *
 * Re-run one test: build/tests/test_harness_service NAME.
 */
#include "../bench/harness/harness.h"
#include "../bench/suites/service_int.h"
#include "clock.h"
#include "harness_fixture.h"
#include "lib/model.h"
#include "lib/passthru.h"
#include "pgconn.h"
#include "prolly.h"
#include "ptest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char base_toml[] = "schema = 1\n"
                                "seed = 7\n"
                                "[service]\n"
                                "enabled = true\n"
                                "records = 200\n"
                                "value_bytes = 64\n"
                                "clients = [1, 3]\n"
                                "pool_sizes = [2]\n"
                                "tenants = 2\n"
                                "hot_roots = 1\n"
                                "hot_root_share = 0.25\n"
                                "warmup_ms = 50\n"
                                "duration_ms = 300\n"
                                "operation_timeout_ms = 5000\n"
                                "multi_read_keys = 8\n"
                                "commit_keys = 4\n"
                                "retained_versions = 4\n"
                                "cas_retries = 3\n"
                                "adapter_batch_items = 128\n"
                                "[service.operation_mix]\n"
                                "point_read = 40\n"
                                "multi_read = 15\n"
                                "commit = 25\n"
                                "diff = 10\n"
                                "merge = 10\n"
                                "[scale]\n"
                                "enabled = false\n";

typedef th_run trun;

/* Loads base_toml with the overrides (dotted key, TOML text; NULL-terminated pairs). */
static int trun_open(trun *t, const char *store, const char *const *sets)
{
	return th_run_open(t, "svc", store, base_toml, sets) ? -1 : th_run_results(t, &hsvc_suite);
}

static int read_raw(bench_csv *tab, const trun *t)
{
	return th_read_csv(tab, t->out, "service-raw.csv");
}

static double num(const bench_csv *tab, size_t r, const char *col)
{
	return bench_csv_num(tab, r, col);
}

/* The checks every run must pass: 6 validated rows per cell, successes, sane counters. With sql
 * (access = "sql") every operation is one statement of the extension: the C client's decoded
 * cache is not used in the timed part, and nothing conflicts. */
static void check_rows(const bench_csv *tab, size_t cells, int pg)
{
	PT_CHECKF(tab->nrows == cells * 6, "%zu rows for %zu cells", tab->nrows, cells);
	for (size_t r = 0; r < tab->nrows; r++) {
		const char *cls = bench_csv_get(tab, r, "op_class");
		int all = !strcmp(cls, "all");
		int sql = !strcmp(bench_csv_get(tab, r, "access"), "sql");
		PT_CHECKF(num(tab, r, "cell_rows") == 6, "row %zu", r);
		PT_CHECKF(num(tab, r, "validated") == 1, "row %zu (%s %s): not validated: %s", r,
		          bench_csv_get(tab, r, "cell_id"), cls, bench_csv_get(tab, r, "first_error"));
		PT_CHECKF(num(tab, r, "validation_failures") == 0, "row %zu", r);
		PT_CHECKF(!strcmp(bench_csv_get(tab, r, "suite"), "service"), "row %zu", r);
		PT_CHECKF(num(tab, r, "samples") == num(tab, r, "attempted"), "row %zu", r);
		PT_CHECKF(strncmp(bench_csv_get(tab, r, "hdr"), "hdr1:", 5) == 0, "row %zu", r);
		/* The only failure allowed: a commit that lost its race cas_retries + 1 times. */
		const char *errs = bench_csv_get(tab, r, "errors");
		PT_CHECKF(!errs[0] || (!strncmp(errs, "conflict_exhausted:", 19) && !strchr(errs, ';')),
		          "row %zu (%s): errors %s: %s", r, cls, errs,
		          bench_csv_get(tab, r, "first_error"));
		if (!all && num(tab, r, "attempted") == 0)
			continue; /* a class the short run happened not to draw */
		PT_CHECKF(num(tab, r, "succeeded") > 0, "row %zu (%s %s): nothing succeeded: %s", r,
		          bench_csv_get(tab, r, "cell_id"), cls, bench_csv_get(tab, r, "first_error"));
		PT_CHECKF(num(tab, r, "p99_ms") > 0 && num(tab, r, "p99_ms") <= num(tab, r, "max_ms"),
		          "row %zu", r);
		PT_CHECKF(num(tab, r, "store_round_trips") > 0, "row %zu", r);
		if (sql) {
			PT_CHECKF(num(tab, r, "statements_per_op") == 1, "row %zu (%s): %g statements", r, cls,
			          num(tab, r, "statements_per_op"));
			PT_CHECKF(num(tab, r, "conflicts") == 0, "row %zu", r);
			PT_CHECK(pg && strstr(bench_csv_get(tab, r, "cell_id"), "-sql"));
		} else {
			PT_CHECK(!strcmp(bench_csv_get(tab, r, "access"), "client"));
			PT_CHECKF(num(tab, r, "cache_misses") > 0, "row %zu (cold cache)", r);
		}
		if (sql) {
			; /* one statement each: checked above */
		} else if (pg) {
			/* every operation reaches the server: at least its head (one statement for head,
			 * commit and root together) */
			PT_CHECKF(num(tab, r, "statements_per_op") >= 1, "row %zu (%s): %g statements", r, cls,
			          num(tab, r, "statements_per_op"));
		} else {
			PT_CHECKF(num(tab, r, "store_statements") == 0, "row %zu", r);
		}
		if (all) {
			const char *ps = bench_csv_get(tab, r, "per_second_ops");
			PT_CHECKF(ps[0] != '\0' && strchr(ps, ';') == NULL, "row %zu: '%s' (one second)", r,
			          ps);
			PT_CHECKF(num(tab, r, "per_second_p99_ms") > 0, "row %zu", r);
			PT_CHECKF(num(tab, r, "diff_entries") >= 0, "row %zu", r);
			PT_CHECKF(num(tab, r, "merge_applied") == 4 * num(tab, r - 1, "succeeded"),
			          "row %zu: %g merged changes for %g merges", r, num(tab, r, "merge_applied"),
			          num(tab, r - 1, "succeeded"));
			if (pg)
				PT_CHECKF(num(tab, r, "pg_calls") > 0 && num(tab, r, "wal_bytes") > 0,
				          "row %zu: pg counters %s %s", r, bench_csv_get(tab, r, "pg_calls"),
				          bench_csv_get(tab, r, "wal_bytes"));
		}
	}
}

/* The whole flow on one store: run, check, run again (everything skipped). */
static void flow(const char *store)
{
	trun t;
	bench_csv tab;
	char err[H_ERR] = "";
	unsigned measured, skipped;
	int pg = !strcmp(store, "postgres");

	memset(&tab, 0, sizeof(tab));
	if (trun_open(&t, store, NULL) != 0) {
		PT_CHECKF(0, "cannot set up a run on %s", store);
		th_run_close(&t);
		return;
	}
	PT_CHECK(hsvc_cells(&t.w) == 2);
	PT_CHECKF(hsvc_run(&t.run, err, sizeof(err)) == 0, "%s", err);
	hr_counts(t.d, &measured, &skipped);
	PT_CHECKF(measured == 2 && skipped == 0, "measured %u skipped %u", measured, skipped);
	PT_CHECK(t.run.cells_done == 2);
	if (read_raw(&tab, &t) == 0) {
		check_rows(&tab, 2, pg);
		PT_CHECK(!strcmp(bench_csv_get(&tab, 0, "cell_id"), "c1-p2"));
		PT_CHECK(!strcmp(bench_csv_get(&tab, 6, "cell_id"), "c3-p2"));
		PT_CHECK(!strcmp(bench_csv_get(&tab, 0, "store"), store));
		PT_CHECK(num(&tab, 6, "clients") == 3 && num(&tab, 6, "pool_size") == 2);
		/* One client never conflicts with itself. */
		PT_CHECK(num(&tab, 5, "conflicts") == 0);
	}
	bench_csv_free(&tab);

	/* A second invocation: every cell is done. */
	if (th_run_results(&t, &hsvc_suite) == 0) {
		PT_CHECKF(hsvc_run(&t.run, err, sizeof(err)) == 0, "%s", err);
		hr_counts(t.d, &measured, &skipped);
		PT_CHECKF(measured == 0 && skipped == 2, "measured %u skipped %u", measured, skipped);
		PT_CHECK(t.run.cells_done == 2);
		if (read_raw(&tab, &t) == 0)
			PT_CHECK(tab.nrows == 12);
	} else {
		PT_CHECK(0);
	}
	bench_csv_free(&tab);
	th_run_close(&t);
}

PT_TEST(value_codec)
{
	unsigned char v[300], k[SVC_KEY_LEN];
	uint64_t slot;
	uint32_t gen;
	for (uint32_t n = SVC_VALUE_MIN; n <= 300; n += 41) {
		svc_value(v, n, 123456, 77);
		PT_CHECK(svc_value_check(v, n, n, 123456, &gen) == 0 && gen == 77);
		PT_CHECK(svc_value_check(v, n, n, 123457, NULL) != 0); /* another key's value */
		PT_CHECK(svc_value_check(v, n - 1, n, 123456, NULL) != 0);
		v[n / 2] ^= 1;
		PT_CHECK(svc_value_check(v, n, n, 123456, NULL) != 0); /* a flipped bit */
	}
	svc_key(k, 42);
	PT_CHECK(memcmp(k, "k0000000042", SVC_KEY_LEN) == 0);
	PT_CHECK(svc_key_parse(k, SVC_KEY_LEN, 43, &slot) == 0 && slot == 42);
	PT_CHECK(svc_key_parse(k, SVC_KEY_LEN, 42, &slot) != 0); /* outside the key space */
	PT_CHECK(svc_key_parse(k, SVC_KEY_LEN - 1, 100, &slot) != 0);
}

PT_TEST(columns)
{
	for (size_t i = 0; hp_columns[i]; i++) {
		int found = 0;
		for (size_t j = 0; hsvc_columns[j] && !found; j++)
			found = !strcmp(hp_columns[i], hsvc_columns[j]);
		PT_CHECKF(found, "%s is not in hsvc_columns", hp_columns[i]);
	}
	static const char *const need[] = {"cell_id",        "cell_rows", "op_class",
	                                   "p99_ms",         "hdr",       "statements_per_op",
	                                   "per_second_ops", "validated", NULL};
	for (size_t i = 0; need[i]; i++) {
		int found = 0;
		for (size_t j = 0; hsvc_columns[j] && !found; j++)
			found = !strcmp(need[i], hsvc_columns[j]);
		PT_CHECKF(found, "%s", need[i]);
	}
}

/* The side-b edits of tenant 0 (only the first n of them) applied to side-a's tree. */
static int side_b_on_a(prolly_id *out, prolly_db *db, const svc_fixture *fx, uint32_t n)
{
	unsigned char keys[8][SVC_KEY_LEN], vals[8][64];
	prolly_edit ed[8];
	prolly_commit *a = NULL;
	prolly_txn *txn = NULL;
	int rc = prolly_commit_read(&a, db, &fx->side_commit[0]);
	for (uint32_t i = 0; i < n && i < 8; i++) {
		uint64_t slot = fx->side_slots[fx->side_keys + i];
		svc_key(keys[i], slot);
		svc_value(vals[i], fx->value_bytes, slot, SVC_GEN_SIDE_B);
		ed[i].op = PROLLY_PUT;
		ed[i].key = (prolly_slice){keys[i], SVC_KEY_LEN};
		ed[i].value = (prolly_slice){vals[i], fx->value_bytes};
	}
	if (!rc && !(rc = prolly_txn_begin(&txn, db)))
		rc = prolly_edit_tree(out, txn, &a->tree, ed, n);
	prolly_txn_free(txn);
	prolly_commit_free(a);
	return rc;
}

/* A merged tree that lost one of side-b's changes (not a side's first: those are read back) is
 * not validated, though it holds every record and the merge reported every change applied. A
 * diff that reported fewer changes than the trees differ by is not validated either. */
/* A diff's changes as PUT edits (copies: the entries' memory is the diff's). */
typedef struct edits_ctx {
	prolly_edit *ed;
	size_t n;
} edits_ctx;

static int collect_edit(void *payload, const prolly_diff_entry *e)
{
	edits_ctx *c = payload;
	if (c->n >= 16 || e->kind != PROLLY_DIFF_CHANGED)
		return PROLLY_EINVAL;
	void *k = malloc(e->key.size), *v = malloc(e->new_value.size ? e->new_value.size : 1);
	if (!k || !v) {
		free(k);
		free(v);
		return PROLLY_ENOMEM;
	}
	memcpy(k, e->key.data, e->key.size);
	memcpy(v, e->new_value.data, e->new_value.size);
	c->ed[c->n].op = PROLLY_PUT;
	c->ed[c->n].key = (prolly_slice){k, e->key.size};
	c->ed[c->n].value = (prolly_slice){v, e->new_value.size};
	c->n++;
	return 0;
}

PT_TEST(merge_diff_checks)
{
	trun t;
	svc_fixture fx;
	svc_worker w;
	svc_result r;
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	prolly_id good, lost;
	prolly_merge_stats ms = PROLLY_MERGE_STATS_INIT;
	char err[H_ERR] = "";

	memset(&fx, 0, sizeof(fx));
	memset(&w, 0, sizeof(w));
	int rc = trun_open(&t, "mem", NULL) || prolly_store_mem_new(&st);
	if (!rc) {
		rc = prolly_db_new(&db, st, NULL);
		st = NULL; /* the handle owns it (closed on failure) */
	}
	if (rc) {
		PT_CHECK(0);
		goto cleanup;
	}
	PT_CHECKF(svc_fixture_init(&fx, &t.w.service, err, sizeof(err)) == 0, "%s", err);
	PT_CHECKF(svc_fixture_build(&fx, db, 7, err, sizeof(err)) == 0, "%s", err);
	PT_CHECK(fx.side_keys == 4 && fx.value_bytes == 64);
	PT_CHECK(side_b_on_a(&good, db, &fx, fx.side_keys) == 0);
	PT_CHECK(side_b_on_a(&lost, db, &fx, fx.side_keys - 1) == 0);
	w.fx = &fx;
	w.db = db;
	ms.applied = fx.side_keys;

	memset(&r, 0, sizeof(r));
	svc_check_merge(&w, &r, 0, &good, &ms, "t0/m");
	PT_CHECKF(r.checked && !r.bad, "%s", r.msg);
	memset(&r, 0, sizeof(r));
	svc_check_merge(&w, &r, 0, &lost, &ms, "t0/m");
	PT_CHECKF(r.checked && r.bad, "a merge that lost a change validated");
	PT_CHECKF(strstr(r.msg, "side-b's changes") != NULL, "%s", r.msg);

	/* base -> good: both sides' changes. */
	memset(&r, 0, sizeof(r));
	svc_check_diff(&w, &r, &fx.base_tree, &good, 2 * fx.side_keys, "t0/main");
	PT_CHECKF(r.checked && !r.bad, "%s", r.msg);
	memset(&r, 0, sizeof(r));
	svc_check_diff(&w, &r, &fx.base_tree, &good, 2 * fx.side_keys - 1, "t0/main");
	PT_CHECKF(r.checked && r.bad, "a diff that missed a change validated");

	/* What the sql diff's rows are checked with: all of base -> good's changes make good, the
	 * same less one do not. */
	prolly_edit ed[16];
	edits_ctx ec = {ed, 0};
	PT_CHECK(prolly_diff(db, &fx.base_tree, &good, NULL, collect_edit, &ec) == 0);
	PT_CHECK(ec.n == 2 * fx.side_keys);
	PT_CHECK(svc_changes_make(&w, &fx.base_tree, &good, ed, ec.n) == 0);
	PT_CHECKF(svc_changes_make(&w, &fx.base_tree, &good, ed, ec.n - 1) != 0,
	          "changes one short made the new tree");
	for (size_t i = 0; i < ec.n; i++) {
		free((void *)ed[i].key.data);
		free((void *)ed[i].value.data);
	}
cleanup:
	prolly_buf_dispose(&w.buf);
	svc_fixture_dispose(&fx);
	prolly_close(db);
	prolly_store_close(st);
	th_run_close(&t);
}

/* A store whose writes report success but leave every branch where it was (other refs, such as
 * the reflog's, are written). */
typedef struct stuck_store {
	tp_store tp;
	int stuck;
} stuck_store;

static int stuck_write(prolly_store *st, prolly_store_write *w)
{
	stuck_store *s = (stuck_store *)(void *)st;
	prolly_ref_update keep[16], *all = w->refs;
	size_t n = w->n_refs, m = 0;
	if (!s->stuck || n > 16)
		return tp_write(st, w);
	for (size_t i = 0; i < n; i++)
		if (strncmp(all[i].name, "refs/heads/", 11) != 0)
			keep[m++] = all[i];
	w->refs = keep;
	w->n_refs = m;
	int rc = tp_write(st, w);
	w->refs = all;
	w->n_refs = n;
	return rc;
}

/* A commit the store reported written but that is not on its branch is not validated. */
PT_TEST(commit_published)
{
	trun t;
	svc_fixture fx;
	svc_worker w;
	svc_result r;
	prolly_store *mem = NULL;
	stuck_store *ss = NULL;
	prolly_db *db = NULL;
	unsigned char keys[8 * SVC_KEY_LEN], vals[4 * 64];
	prolly_edit edits[4];
	char err[H_ERR] = "";

	memset(&fx, 0, sizeof(fx));
	memset(&w, 0, sizeof(w));
	int rc = trun_open(&t, "mem", NULL) || prolly_store_mem_new(&mem);
	if (!rc && !(ss = tp_new(sizeof(*ss), mem)))
		rc = -1;
	if (!rc) {
		ss->tp.base.write = stuck_write;
		rc = prolly_db_new(&db, &ss->tp.base, NULL); /* the handle owns the store */
	}
	if (rc) {
		PT_CHECK(0);
		goto cleanup;
	}
	PT_CHECKF(svc_fixture_init(&fx, &t.w.service, err, sizeof(err)) == 0, "%s", err);
	PT_CHECKF(svc_fixture_build(&fx, db, 7, err, sizeof(err)) == 0, "%s", err);
	PT_CHECKF(svc_fixture_restore(&fx, db, err, sizeof(err)) == 0, "%s", err);
	w.fx = &fx;
	w.db = db;
	w.rs = 7;
	w.gen = SVC_GEN_FIRST_WORKER;
	w.keys = keys;
	w.vals = vals;
	w.edits = edits;
	PT_CHECK(fx.cfg->commit_keys == 4 && fx.value_bytes == 64);

	memset(&r, 0, sizeof(r));
	svc_ops[HW_COMMIT](&w, &r);
	PT_CHECKF(r.rc == 0 && r.checked && !r.bad, "%s", r.msg);
	ss->stuck = 1;
	memset(&r, 0, sizeof(r));
	svc_ops[HW_COMMIT](&w, &r);
	PT_CHECKF(r.rc == 0 && r.checked && r.bad, "a commit left off its branch validated");
	PT_CHECKF(strstr(r.msg, "does not hold the new commit") != NULL, "%s", r.msg);
cleanup:
	prolly_buf_dispose(&w.buf);
	svc_fixture_dispose(&fx);
	prolly_close(db);
	th_run_close(&t);
}

PT_TEST(mem_flow)
{
	flow("mem");
}

PT_TEST(lmdb_flow)
{
	flow("lmdb");
}

PT_TEST(postgres_flow)
{
	flow("postgres");
}

/* Overrides (see trun_open) of the contention runs: four clients, every operation a commit to
 * the one hot root. */
/* clang-format off */
#define HOT_ROOT_COMMITS                                                                           \
	"service.clients", "[4]",                                                                      \
	"service.hot_root_share", "1.0",                                                               \
	"service.operation_mix.point_read", "0",                                                       \
	"service.operation_mix.multi_read", "0",                                                       \
	"service.operation_mix.commit", "100",                                                         \
	"service.operation_mix.diff", "0",                                                             \
	"service.operation_mix.merge", "0"
/* clang-format on */

/* Every operation a commit to the one hot root, several clients: lost races. */
static void contention(const char *store)
{
	static const char *const sets[] = {HOT_ROOT_COMMITS, NULL};
	trun t;
	bench_csv tab;
	char err[H_ERR] = "";
	memset(&tab, 0, sizeof(tab));
	if (trun_open(&t, store, sets) != 0) {
		PT_CHECKF(0, "cannot set up a run on %s", store);
		th_run_close(&t);
		return;
	}
	PT_CHECKF(hsvc_run(&t.run, err, sizeof(err)) == 0, "%s", err);
	if (read_raw(&tab, &t) == 0 && tab.nrows == 6) {
		size_t r = 2; /* commit */
		PT_CHECK(!strcmp(bench_csv_get(&tab, r, "op_class"), "commit"));
		PT_CHECK(num(&tab, 5, "attempted") == num(&tab, r, "attempted"));
		PT_CHECKF(num(&tab, r, "conflicts") > 0 && num(&tab, r, "retries") > 0,
		          "%s: conflicts %g retries %g of %g CAS attempts", store,
		          num(&tab, r, "conflicts"), num(&tab, r, "retries"), num(&tab, r, "cas_attempts"));
		PT_CHECK(num(&tab, r, "cas_attempts") >=
		         num(&tab, r, "attempted") + num(&tab, r, "retries"));
		PT_CHECK(num(&tab, r, "succeeded") > 0 && num(&tab, r, "validated") == 1);
		PT_CHECK(num(&tab, r, "conflict_rate") > 0 && num(&tab, r, "conflict_rate") <= 1);
	} else {
		PT_CHECKF(0, "%s: no rows, or not 6", store);
	}
	bench_csv_free(&tab);
	th_run_close(&t);
}

PT_TEST(mem_contention)
{
	contention("mem");
}

PT_TEST(postgres_contention)
{
	contention("postgres");
}

PT_TEST(access_key)
{
	static const char *const sql[] = {"service.access", "\"sql\"", NULL};
	static const char *const odbc[] = {"service.access", "\"odbc\"", NULL};
	static const char *const both[] = {"service.access", "[\"client\", \"sql\"]", NULL};
	static const char *const twice[] = {"service.access", "[\"sql\", \"sql\"]", NULL};
	trun t;
	char err[H_ERR] = "";
	if (trun_open(&t, "mem", NULL) == 0)
		PT_CHECK(t.w.service.access == 1u << HW_ACCESS_CLIENT);
	else
		PT_CHECK(0);
	th_run_close(&t);
	if (trun_open(&t, "mem", sql) == 0) {
		PT_CHECK(t.w.service.access == 1u << HW_ACCESS_SQL && hsvc_cells(&t.w) == 2);
		/* sql runs through the extension: PostgreSQL only. */
		PT_CHECK(hsvc_run(&t.run, err, sizeof(err)) != 0);
		PT_CHECKF(strstr(err, "--store postgres") != NULL, "%s", err);
	} else {
		PT_CHECK(0);
	}
	th_run_close(&t);
	PT_CHECK(trun_open(&t, "mem", odbc) != 0);
	th_run_close(&t);
	if (trun_open(&t, "mem", both) == 0)
		PT_CHECK(t.w.service.access == 3u && hsvc_cells(&t.w) == 4);
	else
		PT_CHECK(0);
	th_run_close(&t);
	PT_CHECK(trun_open(&t, "mem", twice) != 0);
	th_run_close(&t);

	/* In the file, too: the error names the key and the value. */
	hw_workload w;
	toml_error te;
	char *tmp = tm_tmpdir("svc"), path[4200], text[sizeof(base_toml) + 64];
	snprintf(path, sizeof(path), "%s/w.toml", tmp ? tmp : "/tmp");
	snprintf(text, sizeof(text), "%.*s\naccess = \"odbc\"\n%s",
	         (int)(strstr(base_toml, "[service.operation_mix]") - base_toml - 1), base_toml,
	         strstr(base_toml, "[service.operation_mix]"));
	FILE *f = tmp ? fopen(path, "w") : NULL;
	PT_CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
	memset(&w, 0, sizeof(w));
	PT_CHECK(hw_workload_load(&w, path, &te) != 0);
	PT_CHECKF(strstr(te.text, "service.access") && strstr(te.text, "odbc"), "%s", te.text);
	hw_workload_free(&w);
	if (tmp)
		tm_rmtree(tmp);
	free(tmp);
}

/* access = "sql" on PostgreSQL: the flow and the contention run of client mode, one statement
 * per operation. Without the extension: a skip, except under CI=true (CI installs it). */
static void sql_run(const char *const *sets, int contended)
{
	trun t;
	bench_csv tab;
	char err[H_ERR] = "";
	const char *ci = getenv("CI");
	memset(&tab, 0, sizeof(tab));
	if (!th_have_extension()) {
		PT_CHECKF(!(ci && !strcmp(ci, "true")),
		          "the prolly extension is not installed in the server (make -C ext/postgres "
		          "install)");
		if (!(ci && !strcmp(ci, "true")))
			printf("# skipped: the prolly extension is not installed in the server\n");
		return;
	}
	if (trun_open(&t, "postgres", sets) != 0) {
		PT_CHECKF(0, "cannot set up a sql run");
		th_run_close(&t);
		return;
	}
	PT_CHECKF(hsvc_run(&t.run, err, sizeof(err)) == 0, "%s", err);
	if (read_raw(&tab, &t) == 0) {
		size_t cells = contended ? 1 : 4;
		check_rows(&tab, cells, 1);
		if (contended) {
			PT_CHECK(!strcmp(bench_csv_get(&tab, 0, "cell_id"), "c4-p2-sql"));
			/* Four writers on one branch: queued by the extension, none lost, none retried. */
			PT_CHECK(num(&tab, 2, "attempted") == num(&tab, 5, "attempted"));
			PT_CHECK(num(&tab, 2, "succeeded") == num(&tab, 2, "attempted"));
			PT_CHECK(num(&tab, 2, "retries") == 0);
			PT_CHECK(num(&tab, 2, "cas_attempts") == num(&tab, 2, "attempted"));
		} else {
			/* Both modes side by side: per (clients, pool) the client cell, then the sql one. */
			static const char *const ids[4] = {"c1-p2", "c1-p2-sql", "c3-p2", "c3-p2-sql"};
			for (size_t c = 0; c < 4 && tab.nrows == 24; c++)
				PT_CHECKF(!strcmp(bench_csv_get(&tab, c * 6, "cell_id"), ids[c]), "cell %zu: %s", c,
				          bench_csv_get(&tab, c * 6, "cell_id"));
		}
	}
	bench_csv_free(&tab);
	th_run_close(&t);
}

PT_TEST(postgres_sql_flow)
{
	static const char *const sets[] = {"service.access", "[\"client\", \"sql\"]", NULL};
	sql_run(sets, 0);
}

PT_TEST(postgres_sql_contention)
{
	static const char *const sets[] = {"service.access", "\"sql\"", HOT_ROOT_COMMITS, NULL};
	sql_run(sets, 1);
}

/* A database whose extension lives in another schema: refused, naming both, nothing dropped. */
PT_TEST(postgres_sql_other_schema)
{
	static const char *const sets[] = {"service.access", "\"sql\"", NULL};
	char other[64], q[160], sql[400], err[H_ERR] = "";
	PGconn *c = NULL;
	PGresult *res = NULL;
	trun t;
	if (!th_have_extension()) {
		printf("# skipped: the prolly extension is not installed in the server\n");
		return;
	}
	tm_pg_schema_name(other, "svcext");
	PT_CHECK(bench_pg_ident(q, sizeof(q), other) == 0);
	snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", q);
	if (bench_pg_connect(&c, getenv("PROLLY_PG_URL")) != 0 || bench_pg_exec(c, sql, NULL) != 0 ||
	    (snprintf(sql, sizeof(sql), "CREATE EXTENSION prolly SCHEMA %s", q) < 0) ||
	    bench_pg_exec(c, sql, NULL) != 0) {
		PT_CHECKF(0, "%s", prolly_last_error());
		goto cleanup;
	}
	if (trun_open(&t, "postgres", sets) == 0) {
		PT_CHECK(hsvc_run(&t.run, err, sizeof(err)) != 0);
		PT_CHECKF(strstr(err, "installed in schema") && strstr(err, other), "%s", err);
	} else {
		PT_CHECK(0);
	}
	th_run_close(&t);
	/* Still there: the suite drops only an extension of its own schema. */
	PT_CHECK(bench_pg_exec(c, "SELECT 1 FROM pg_extension WHERE extname = 'prolly'", &res) == 0 &&
	         PQntuples(res) == 1);
cleanup:
	PQclear(res);
	tm_pg_schema_drop(other); /* with the extension */
	if (c)
		PQfinish(c);
}

TH_PG_MAIN()
