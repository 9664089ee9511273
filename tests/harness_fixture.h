/*
 * harness_fixture.h - a workload for the harness's suite tests (test_harness_service.c,
 * test_harness_scale.c, test_harness_runner.c, test_harness_insert.c, test_harness_sysbench.c,
 * test_harness_tpcb.c...): written to a file, loaded, overridden and resolved as the harness
 * does; the result directory of a test run; whether the test cluster has the prolly extension.
 * Header-only (static inline) because only the programs that link libharness.a include it.
 */
#ifndef TESTS_HARNESS_FIXTURE_H
#define TESTS_HARNESS_FIXTURE_H

#include "../bench/harness/harness.h"
#include "clock.h"
#include "lib/model.h"
#include "pgconn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes text to path, loads it into w, applies the overrides (NULL-terminated pairs of dotted
 * key and TOML text) and resolves. 0, or -1 with the reason on stderr. */
static inline int th_workload(hw_workload *w, const char *path, const char *text,
                              const char *const *sets)
{
	toml_error te;
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		fprintf(stderr, "  cannot write %s\n", path);
		return -1;
	}
	if (hw_workload_load(w, path, &te)) {
		fprintf(stderr, "  workload: %s\n", te.text);
		return -1;
	}
	for (size_t i = 0; sets && sets[i]; i += 2)
		if (hw_workload_set(w, sets[i], sets[i + 1], "test", &te)) {
			fprintf(stderr, "  workload: %s\n", te.text);
			return -1;
		}
	if (hw_workload_resolve(w, &te)) {
		fprintf(stderr, "  workload: %s\n", te.text);
		return -1;
	}
	return 0;
}

/* Opens the result directory dir (a new one, or resumes it) with a test run's manifest: suite
 * and store as named, w's config hash and seed, revision "test". 0, or -1 with the reason on
 * stderr. */
static inline int th_open_results(hr_dir **d, const char *dir, const hw_workload *w,
                                  const char *suite, const char *store)
{
	hr_manifest m;
	char err[H_ERR];
	memset(&m, 0, sizeof(m));
	m.schema = HW_SCHEMA;
	snprintf(m.config_hash, sizeof(m.config_hash), "%s", w->hash);
	snprintf(m.revision, sizeof(m.revision), "test");
	m.seed = w->seed;
	snprintf(m.suites, sizeof(m.suites), "%s", suite);
	snprintf(m.store, sizeof(m.store), "%s", store);
	if (hr_open(d, dir, &m, w, err, sizeof(err))) {
		fprintf(stderr, "  hr_open: %s\n", err);
		return -1;
	}
	return 0;
}

/* Reads DIR/FILE (a result CSV) into tab. 0, or -1 with the reason on stderr. */
static inline int th_read_csv(bench_csv *tab, const char *dir, const char *file)
{
	char path[4300], err[H_ERR];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (bench_csv_read(tab, path, err, sizeof(err))) {
		fprintf(stderr, "  %s\n", err);
		return -1;
	}
	return 0;
}

/* A suite test's run (test_harness_service.c, _insert.c, _sysbench.c, _tpcb.c): a scratch
 * directory tmp
 * holding the workload file (toml) and the result directory (out), the workload w, the result
 * directory d the caller opens, the h_run handed to the suite and, on PostgreSQL, a schema of
 * its own on PROLLY_PG_URL. */
typedef struct th_run {
	char *tmp;
	char toml[4200], out[4200];
	hw_workload w;
	hr_dir *d;
	h_run run;
	char schema[64];
} th_run;

/* Makes t's scratch directory (named after tag), loads text with the overrides sets into t->w
 * (th_workload) and fills t->run for store: the run's scratch is tmp; on "postgres" the URL is
 * PROLLY_PG_URL and the schema a fresh one named after tag. The result directory is left to the
 * caller (th_run_results). 0 or -1; th_run_close(t) either way. */
static inline int th_run_open(th_run *t, const char *tag, const char *store, const char *text,
                              const char *const *sets)
{
	memset(t, 0, sizeof(*t));
	if (!(t->tmp = tm_tmpdir(tag)))
		return -1;
	snprintf(t->toml, sizeof(t->toml), "%s/w.toml", t->tmp);
	snprintf(t->out, sizeof(t->out), "%s/out", t->tmp);
	if (th_workload(&t->w, t->toml, text, sets))
		return -1;
	t->run.w = &t->w;
	t->run.started_ns = bench_now_ns();
	t->run.store = store;
	t->run.scratch = t->tmp;
	if (!strcmp(store, "postgres")) {
		t->run.url = getenv("PROLLY_PG_URL");
		tm_pg_schema_name(t->schema, tag);
		t->run.schema = t->schema;
	}
	return 0;
}

/* Opens t's result directory for suite (th_open_results; a new one, or resumes it, after
 * closing the one open) and hands it to t->run with the cells suite counts in t->w and none of
 * them done yet. 0 or -1. */
static inline int th_run_results(th_run *t, const h_suite *suite)
{
	hr_close(t->d);
	t->d = NULL;
	if (th_open_results(&t->d, t->out, &t->w, suite->name, t->run.store))
		return -1;
	t->run.out = t->d;
	t->run.cells_total = suite->cells(&t->w);
	t->run.cells_done = 0;
	return 0;
}

/* Closes the result directory, frees the workload, drops the schema and removes the scratch
 * directory. */
static inline void th_run_close(th_run *t)
{
	hr_close(t->d);
	hw_workload_free(&t->w);
	if (t->schema[0])
		tm_pg_schema_drop(t->schema);
	if (t->tmp)
		tm_rmtree(t->tmp);
	free(t->tmp);
}

/* Whether the test cluster's server (PROLLY_PG_URL) has the prolly extension available. */
static inline int th_have_extension(void)
{
	PGconn *c = NULL;
	PGresult *res = NULL;
	int have = 0;
	if (bench_pg_connect(&c, getenv("PROLLY_PG_URL")) == 0 &&
	    bench_pg_exec(c, "SELECT 1 FROM pg_available_extensions WHERE name = 'prolly'", &res) == 0)
		have = PQntuples(res) == 1;
	PQclear(res);
	if (c)
		PQfinish(c);
	return have;
}

/* The main of a suite test that needs a PostgreSQL server: tm_pg_guard (its own throwaway
 * cluster unless PROLLY_PG_URL is set), then the cases ptest.h registered (include it first). */
#define TH_PG_MAIN()                                                                               \
	int main(int argc, char **argv)                                                                \
	{                                                                                              \
		if (tm_pg_guard() != 0) {                                                                  \
			printf("not ok 1 - no PostgreSQL server could be started\n");                          \
			return 1;                                                                              \
		}                                                                                          \
		return pt_run(argc, argv);                                                                 \
	}

#endif
