/*
 * test_workload.c - the workload file contract (bench/harness/workload.c):
 *
 *   - the shipped smoke.toml and default.toml load and resolve to the values docs/harness.md
 *     documents;
 *   - a minimal file (schema = 1) gets every default, and its resolved document says so;
 *   - every kind of rejection names file, line and key: unknown keys (with a suggestion), wrong
 *     types, out-of-range values, a mix not totalling 100, unknown operation and pattern names,
 *     duplicate list entries, a bad or missing schema, impossible combinations;
 *   - command-line overrides, good and bad, directly and through hw_flag_to_toml for every flag;
 *   - the resolved document round-trips (write, load, resolve: same hash), and the hash follows
 *     the values, not comments or key order.
 *
 * Run from the repository root (the shipped files are read from bench/workloads/). Re-run one test:
 * build/tests/test_workload NAME.
 */
#include "../bench/harness/harness.h"
#include "ptest.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SMOKE "bench/workloads/smoke.toml"
#define DEFAULT "bench/workloads/default.toml"

static char tmpdir[256];

/* A scratch directory shared by the tests, removed at exit. */
static void rm_tmpdir(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "  could not remove %s\n", tmpdir);
}

static const char *scratch(void)
{
	if (!tmpdir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(tmpdir, sizeof(tmpdir), "%s/test_workload.XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			exit(2);
		}
		atexit(rm_tmpdir);
	}
	return tmpdir;
}

/* Writes text to name in the scratch directory; returns the path (static buffer per call site). */
static const char *write_file(char *path, size_t n, const char *name, const char *text)
{
	snprintf(path, n, "%s/%s", scratch(), name);
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) == EOF || fclose(f)) {
		perror(path);
		exit(2);
	}
	return path;
}

/* Loads and resolves text; returns 0 or -1 with err. */
static int load_text(hw_workload *w, const char *name, const char *text, toml_error *err)
{
	char path[512];
	write_file(path, sizeof(path), name, text);
	if (hw_workload_load(w, path, err))
		return -1;
	return hw_workload_resolve(w, err);
}

/* ---- the shipped files ---------------------------------------------------------------------- */

PT_TEST(smoke_file)
{
	hw_workload w;
	toml_error err;
	int rc = hw_workload_load(&w, SMOKE, &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	rc = rc ? rc : hw_workload_resolve(&w, &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	PT_REQUIRE(rc == 0);
	const hw_service *s = &w.service;
	const hw_scale *c = &w.scale;
	PT_CHECK(w.schema == 1 && w.seed == 42);
	PT_CHECK(s->enabled && s->records == 1000 && s->value_bytes == 64);
	PT_CHECK(s->n_clients == 2 && s->clients[0] == 1 && s->clients[1] == 4);
	PT_CHECK(s->n_pool_sizes == 1 && s->pool_sizes[0] == 2);
	PT_CHECK(s->tenants == 4 && s->hot_roots == 1 && s->hot_root_share == 0.25);
	PT_CHECK(s->warmup_ms == 200 && s->duration_ms == 2000 && s->operation_timeout_ms == 5000);
	PT_CHECK(s->multi_read_keys == 8 && s->commit_keys == 4 && s->retained_versions == 8);
	PT_CHECK(s->cas_retries == 3 && s->adapter_batch_items == 128);
	PT_CHECK(s->mix[HW_POINT_READ] == 45 && s->mix[HW_MULTI_READ] == 15 &&
	         s->mix[HW_COMMIT] == 25 && s->mix[HW_DIFF] == 10 && s->mix[HW_MERGE] == 5);
	PT_CHECK(c->enabled && c->n_sizes == 1 && c->sizes[0] == 1000 && c->value_bytes == 27);
	PT_CHECK(c->runs == 1 && c->changes == 100 && c->read_samples == 100 && c->concurrency == 32);
	/* the ten default operations, and the history between stores (cheap at 1000 records) */
	PT_CHECK(c->operations == (HW_DEFAULT_SCALE_OPS | 1u << HW_S_SYNC | 1u << HW_S_PROOF));
	PT_CHECK(c->patterns == (1u << HW_P_APPEND | 1u << HW_P_RANDOM | 1u << HW_P_CLUSTERED));
	PT_CHECK(w.regression.max_pg_statements_per_operation == 6.0);
	PT_CHECK(strlen(w.hash) == 64);
	PT_CHECK(w.given && w.resolved && w.given != w.resolved);
	hw_workload_free(&w);
	PT_CHECK(w.given == NULL && w.resolved == NULL && w.hash[0] == 0);
}

PT_TEST(default_file)
{
	hw_workload w;
	toml_error err;
	int rc = hw_workload_load(&w, DEFAULT, &err);
	rc = rc ? rc : hw_workload_resolve(&w, &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	PT_REQUIRE(rc == 0);
	const hw_service *s = &w.service;
	const hw_scale *c = &w.scale;
	PT_CHECK(s->records == 1000000 && s->value_bytes == 256 && s->tenants == 64);
	PT_CHECK(s->n_clients == 4 && s->clients[3] == 64 && s->n_pool_sizes == 2 &&
	         s->pool_sizes[1] == 32);
	PT_CHECK(s->hot_root_share == 0.20 && s->warmup_ms == 15000 && s->duration_ms == 60000);
	PT_CHECK(c->n_sizes == 2 && c->sizes[0] == 1000000 && c->sizes[1] == 10000000);
	PT_CHECK(c->runs == 3 && c->read_samples == 10000 && c->changes == 10000);
	hw_workload_free(&w);
}

/* ---- defaults ------------------------------------------------------------------------------- */

PT_TEST(defaults_for_minimal_file)
{
	hw_workload w;
	toml_error err;
	const char *s;
	int rc = load_text(&w, "minimal.toml", "schema = 1\n", &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	PT_REQUIRE(rc == 0);
	PT_CHECK(w.seed == 42);
	PT_CHECK(w.service.enabled && w.service.records == 1000000 && w.service.value_bytes == 256);
	PT_CHECK(w.service.n_clients == 4 && w.service.clients[0] == 1 && w.service.clients[1] == 8 &&
	         w.service.clients[2] == 32 && w.service.clients[3] == 64);
	PT_CHECK(w.service.n_pool_sizes == 2 && w.service.pool_sizes[0] == 8 &&
	         w.service.pool_sizes[1] == 32);
	PT_CHECK(w.service.tenants == 64 && w.service.hot_roots == 1 &&
	         w.service.hot_root_share == 0.20);
	PT_CHECK(w.service.warmup_ms == 15000 && w.service.duration_ms == 60000 &&
	         w.service.operation_timeout_ms == 5000);
	PT_CHECK(w.service.multi_read_keys == 8 && w.service.commit_keys == 4 &&
	         w.service.retained_versions == 8 && w.service.cas_retries == 3 &&
	         w.service.adapter_batch_items == 1024);
	PT_CHECK(w.service.mix[0] == 45 && w.service.mix[1] == 15 && w.service.mix[2] == 25 &&
	         w.service.mix[3] == 10 && w.service.mix[4] == 5);
	PT_CHECK(w.scale.enabled && w.scale.n_sizes == 2 && w.scale.sizes[0] == 1000000 &&
	         w.scale.sizes[1] == 10000000);
	PT_CHECK(w.scale.value_bytes == 27 && w.scale.runs == 3 && w.scale.changes == 0 &&
	         w.scale.read_samples == 10000 && w.scale.concurrency == 32);
	PT_CHECK(w.scale.operations == HW_DEFAULT_SCALE_OPS);
	PT_CHECK(w.scale.patterns == 7u && w.scale.min_free_gb == 2.0);
	PT_CHECK(w.regression.max_throughput_loss_percent == 10 &&
	         w.regression.max_p99_increase_percent == 25 && w.regression.max_conflict_rate == 0.5 &&
	         w.regression.max_error_rate == 0.01 &&
	         w.regression.max_pg_statements_per_operation == 6 &&
	         w.regression.minimum_percentile_samples == 100 &&
	         w.regression.max_relative_qps_loss_percent == 10);
	/* The resolved document holds every key; changes is written "auto". */
	PT_CHECK(toml_get_string(w.resolved, "scale.changes", &s, NULL) == TOML_OK &&
	         strcmp(s, "auto") == 0);
	PT_CHECK(toml_len(toml_find(toml_root(w.resolved), "service")) == 17);
	PT_CHECK(toml_len(toml_find(toml_root(w.resolved), "service.operation_mix")) == 5);
	PT_CHECK(toml_len(toml_find(toml_root(w.resolved), "scale")) == 10);
	PT_CHECK(toml_len(toml_find(toml_root(w.resolved), "regression")) == 7);
	/* The given document is the file as written. */
	PT_CHECK(toml_len(toml_root(w.given)) == 1);
	hw_workload_free(&w);
}

PT_TEST(partial_tables_and_auto)
{
	hw_workload w;
	toml_error err;
	int rc = load_text(&w, "partial.toml",
	                   "schema = 1\nseed = 7\n[service]\nclients = [3]\n"
	                   "[service.operation_mix]\npoint_read = 100\n"
	                   "[scale]\nchanges = \"auto\"\nsizes = [100]\n",
	                   &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	PT_REQUIRE(rc == 0);
	PT_CHECK(w.seed == 7 && w.service.n_clients == 1 && w.service.clients[0] == 3);
	PT_CHECK(w.service.mix[HW_POINT_READ] == 100 && w.service.mix[HW_COMMIT] == 0);
	PT_CHECK(w.service.records == 1000000 && w.scale.changes == 0 && w.scale.sizes[0] == 100);
	hw_workload_free(&w);
}

/* ---- rejections ----------------------------------------------------------------------------- */

typedef struct bad_case {
	const char *text;
	int line;        /* expected err.line (0: none) */
	const char *key; /* expected err.key */
	const char *msg; /* a substring of err.msg */
} bad_case;

static const bad_case bad_cases[] = {
    /* unknown keys, with suggestions */
    {"schema = 1\n[service]\nrecordz = 5\n", 3, "service.recordz", "did you mean 'records'"},
    {"schema = 1\nsed = 4\n", 2, "sed", "did you mean 'seed'"},
    {"schema = 1\nnode_size = 3000\n", 2, "node_size", "not a power of two"},
    {"schema = 1\nnode_size = 512\n", 2, "node_size", ""},
    {"schema = 1\nnode_size = 16384\n", 2, "node_size", ""},
    {"schema = 1\n[servic]\n", 2, "servic", "did you mean 'service'"},
    {"schema = 1\n[service.operation_mix]\npoint_reads = 100\n", 3,
     "service.operation_mix.point_reads", "did you mean 'point_read'"},
    {"schema = 1\n[scale]\noperation = [\"put\"]\n", 3, "scale.operation",
     "did you mean 'operations'"},
    {"schema = 1\n[regression]\nmax_error = 0.1\n", 3, "regression.max_error", "unknown key"},
    {"schema = 1\n[service]\nzzzzzzzzzzzzzzzz = 1\n", 3, "service.zzzzzzzzzzzzzzzz", "unknown key"},
    /* wrong types */
    {"schema = 1\n[service]\nrecords = \"1000\"\n", 3, "service.records", "expected an integer"},
    {"schema = 1\n[service]\nrecords = 1.5\n", 3, "service.records", "expected an integer"},
    {"schema = 1\n[service]\nclients = 4\n", 3, "service.clients", "expected an array"},
    {"schema = 1\n[service]\nclients = [1, \"4\"]\n", 3, "service.clients[1]",
     "expected an integer"},
    {"schema = 1\n[service]\nenabled = 1\n", 3, "service.enabled", "expected a boolean"},
    {"schema = 1\n[service]\nhot_root_share = \"x\"\n", 3, "service.hot_root_share",
     "expected a float"},
    {"schema = 1\nservice = 5\n", 2, "service", "expected a table"},
    {"schema = 1\n[scale]\noperations = [1]\n", 3, "scale.operations[0]", "expected a string"},
    {"schema = 1\n[scale]\nchanges = true\n", 3, "scale.changes",
     "expected an integer or \"auto\""},
    {"schema = 1\n[scale]\nchanges = \"lots\"\n", 3, "scale.changes", "\"auto\""},
    {"schema = \"1\"\n", 1, "schema", "expected an integer"},
    /* out of range */
    {"schema = 1\n[service]\nclients = [1, 0]\n", 3, "service.clients[1]",
     "0 is out of range (expected 1 to 4096)"},
    {"schema = 1\n[service]\nclients = []\n", 3, "service.clients", "empty"},
    {"schema = 1\n[service]\nrecords = 10\n", 3, "service.records", "10 is out of range"},
    {"schema = 1\n[service]\nvalue_bytes = 0\n", 3, "service.value_bytes", "out of range"},
    /* the library's largest value (PROLLY_MAX_VALUE); the service's values carry a 16-byte
     * slot, generation and checksum: both were refused only once the run had started */
    {"schema = 1\n[service]\nvalue_bytes = 65537\n", 3, "service.value_bytes",
     "65537 is out of range (expected 16 to 65536)"},
    {"schema = 1\n[service]\nvalue_bytes = 15\n", 3, "service.value_bytes",
     "15 is out of range (expected 16 to 65536)"},
    {"schema = 1\n[scale]\nvalue_bytes = 65537\n", 3, "scale.value_bytes",
     "65537 is out of range (expected 1 to 65536)"},
    {"schema = 1\n[service]\nhot_root_share = 1.5\n", 3, "service.hot_root_share",
     "1.5 is out of range"},
    {"schema = 1\n[service]\nhot_root_share = -0.1\n", 3, "service.hot_root_share", "out of range"},
    {"schema = 1\n[service]\nhot_root_share = nan\n", 3, "service.hot_root_share", "out of range"},
    {"schema = 1\n[service]\ntenants = 0\n", 3, "service.tenants", "out of range"},
    {"schema = 1\n[service]\nduration_ms = 0\n", 3, "service.duration_ms", "out of range"},
    {"schema = 1\nseed = -1\n", 2, "seed", "out of range"},
    {"schema = 1\n[scale]\nsizes = [1000, 5]\n", 3, "scale.sizes[1]", "out of range"},
    {"schema = 1\n[scale]\nruns = 0\n", 3, "scale.runs", "out of range"},
    {"schema = 1\n[scale]\nchanges = 0\n", 3, "scale.changes", "out of range"},
    {"schema = 1\n[scale]\nmin_free_gb = -1\n", 3, "scale.min_free_gb", "out of range"},
    {"schema = 1\n[regression]\nmax_error_rate = 2\n", 3, "regression.max_error_rate",
     "out of range"},
    {"schema = 1\n[regression]\nminimum_percentile_samples = 0\n", 3,
     "regression.minimum_percentile_samples", "out of range"},
    {"schema = 1\n[regression]\nmax_relative_qps_loss_percent = 101\n", 3,
     "regression.max_relative_qps_loss_percent", "out of range"},
    /* the mix */
    {"schema = 1\n[service.operation_mix]\npoint_read = 50\n", 2, "service.operation_mix",
     "total 50, not 100"},
    {"schema = 1\n[service.operation_mix]\npoint_read = 45\nmulti_read = 15\ncommit = 25\n"
     "diff = 10\nmerge = 6\n",
     2, "service.operation_mix", "total 101"},
    {"schema = 1\n[service.operation_mix]\npoint_read = 101\n", 3,
     "service.operation_mix.point_read", "out of range"},
    /* names */
    {"schema = 1\n[scale]\noperations = [\"put\", \"gett\"]\n", 3, "scale.operations[1]",
     "unknown operation 'gett' (expected one of: put, batch,"},
    {"schema = 1\n[scale]\npatterns = [\"append\", \"sorted\"]\n", 3, "scale.patterns[1]",
     "unknown pattern 'sorted'"},
    {"schema = 1\n[scale]\noperations = [\"put\", \"put\"]\n", 3, "scale.operations[1]",
     "listed twice"},
    {"schema = 1\n[scale]\npatterns = []\n", 3, "scale.patterns", "empty"},
    /* duplicates */
    {"schema = 1\n[service]\nclients = [1, 4, 1]\n", 3, "service.clients[2]", "listed twice"},
    {"schema = 1\n[service]\npool_sizes = [8,\n  8]\n", 4, "service.pool_sizes[1]", "listed twice"},
    {"schema = 1\n[scale]\nsizes = [1000, 1000]\n", 3, "scale.sizes[1]", "listed twice"},
    /* schema */
    {"schema = 2\n", 1, "schema", "schema 2 is not supported"},
    {"seed = 1\n", 0, "schema", "is missing"},
    /* combinations */
    {"schema = 1\n[service]\nrecords = 16\ncommit_keys = 20\n", 4, "service.commit_keys",
     "more than records"},
    {"schema = 1\n[service]\nrecords = 16\nmulti_read_keys = 17\n", 4, "service.multi_read_keys",
     "multi_read_keys (17) is more than records (16)"},
    {"schema = 1\n[service]\nmulti_read_keys = 2000000\n", 3, "service.multi_read_keys",
     "out of range"},
    {"schema = 1\n[service]\nhot_roots = 0\n", 3, "service.hot_roots",
     "hot_root_share is 0.2 but hot_roots is 0"},
    {"schema = 1\n[service]\nhot_root_share = 0.5\nhot_roots = 0\n", 4, "service.hot_roots",
     "hot_roots is 0"},
    {"schema = 1\n[scale]\nsizes = [1000]\nchanges = 5000\n", 4, "scale.changes",
     "more than the smallest size (1000)"},
    /* what the service holds at once: every client's keys, values and edits, and each
     * tenant's side-commit keys, were allocated once the fixture was built */
    {"schema = 1\n[service]\nclients = [1, 4096]\ncommit_keys = 10000\nvalue_bytes = 65536\n", 4,
     "service.commit_keys",
     "4096 clients x (10000 + 8 keys) x (65536 + 64 bytes) is 2564550 MiB (at most 1024: what the "
     "clients hold at once)"},
    {"schema = 1\n[service]\ntenants = 1000000\ncommit_keys = 10000\n", 3, "service.tenants",
     "1000000 tenants x 2 sides x 10000 keys x 8 bytes is 152587 MiB (at most 1024"},
    /* the read samples a scale cell holds in memory at once: gigabytes were allocated (and
     * touched) once the fixture was built */
    {"schema = 1\n[scale]\nread_samples = 1000000\nconcurrency = 1024\n", 3, "scale.read_samples",
     "1000000 samples of 67 bytes x 1024 threads of concurrent_query is 65429 MiB (at most 1024: "
     "the read samples a cell holds at once)"},
    {"schema = 1\n[scale]\nvalue_bytes = 65536\noperations = [\"get_warm\"]\n"
     "read_samples = 20000\n",
     5, "scale.read_samples", "20000 samples of 65576 bytes is 1250 MiB (at most 1024:"},
    {"schema = 1\n[scale]\nvalue_bytes = 65536\nconcurrency = 1024\n", 3, "scale.value_bytes",
     "x 1024 threads of concurrent_query is 640390 MiB"},
    /* syntax */
    {"schema = 1\n[service]\nclients = [1, 4\n", 3, "service.clients", "unterminated array"},
};

PT_TEST(rejections_name_file_line_and_key)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const bad_case *b = &bad_cases[i];
		char path[512], want[600];
		hw_workload w;
		toml_error err;
		memset(&err, 0, sizeof(err));
		write_file(path, sizeof(path), "bad.toml", b->text);
		int rc = hw_workload_load(&w, path, &err);
		PT_CHECKF(rc == -1, "case %zu accepted:\n%s", i, b->text);
		if (rc == 0) {
			hw_workload_free(&w);
			continue;
		}
		PT_CHECK(w.given == NULL && w.resolved == NULL);
		PT_CHECKF(strcmp(err.file, path) == 0, "case %zu: file '%s'", i, err.file);
		PT_CHECKF(err.line == b->line, "case %zu: line %d, want %d (%s)", i, err.line, b->line,
		          err.text);
		PT_CHECKF(strcmp(err.key, b->key) == 0, "case %zu: key '%s', want '%s' (%s)", i, err.key,
		          b->key, err.text);
		PT_CHECKF(strstr(err.msg, b->msg) != NULL, "case %zu: message '%s', want '%s'", i, err.msg,
		          b->msg);
		/* The one-line text names all three. */
		if (b->line)
			snprintf(want, sizeof(want), "%s:%d:", path, b->line);
		else
			snprintf(want, sizeof(want), "%s: ", path);
		PT_CHECKF(strncmp(err.text, want, strlen(want)) == 0, "case %zu: text '%s'", i, err.text);
		PT_CHECKF(strstr(err.text, b->key) != NULL, "case %zu: text '%s'", i, err.text);
	}
}

PT_TEST(missing_file)
{
	hw_workload w;
	toml_error err;
	PT_CHECK(hw_workload_load(&w, "/nonexistent/w.toml", &err) == -1);
	PT_CHECK(strstr(err.text, "/nonexistent/w.toml") != NULL);
	PT_CHECK(w.given == NULL && w.resolved == NULL);
}

/* ---- overrides ------------------------------------------------------------------------------ */

PT_TEST(overrides_good)
{
	hw_workload w;
	toml_error err;
	int64_t v;
	PT_REQUIRE(hw_workload_load(&w, SMOKE, &err) == 0);
	PT_CHECK(hw_workload_set(&w, "service.clients", "[2, 3, 5]", "--clients", &err) == 0);
	PT_CHECK(hw_workload_set(&w, "service.operation_mix.commit", "30", "--set", &err) == 0);
	PT_CHECK(hw_workload_set(&w, "service.operation_mix.point_read", "40", "--set", &err) == 0);
	PT_CHECK(hw_workload_set(&w, "scale.changes", "\"auto\"", "--changes", &err) == 0);
	PT_CHECK(hw_workload_set(&w, "seed", "9", "--seed", &err) == 0);
	PT_CHECK(hw_workload_set(&w, "regression.max_error_rate", "0", "--set", &err) == 0);
	int rc = hw_workload_resolve(&w, &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	PT_REQUIRE(rc == 0);
	PT_CHECK(w.service.n_clients == 3 && w.service.clients[2] == 5);
	PT_CHECK(w.service.mix[HW_COMMIT] == 30 && w.service.mix[HW_POINT_READ] == 40);
	PT_CHECK(w.scale.changes == 0 && w.seed == 9 && w.regression.max_error_rate == 0);
	/* given is untouched */
	PT_CHECK(toml_get_int(w.given, "seed", &v, NULL) == TOML_OK && v == 42);
	PT_CHECK(toml_len(toml_find(toml_root(w.given), "service.clients")) == 2);
	/* set after resolve edits the resolved document; resolve again */
	PT_CHECK(hw_workload_set(&w, "service.records", "2000", "--records", &err) == 0);
	PT_CHECK(w.hash[0] == 0);
	PT_CHECK(hw_workload_resolve(&w, &err) == 0 && w.service.records == 2000 &&
	         w.service.n_clients == 3);
	hw_workload_free(&w);

	/* without a file: defaults plus overrides */
	memset(&w, 0, sizeof(w));
	PT_CHECK(hw_workload_set(&w, "service.tenants", "3", "--tenants", &err) == 0);
	rc = hw_workload_resolve(&w, &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	PT_CHECK(w.service.tenants == 3 && w.service.records == 1000000 && w.given == NULL);
	hw_workload_free(&w);
	memset(&w, 0, sizeof(w));
	PT_CHECK(hw_workload_resolve(&w, &err) == 0 && w.seed == 42 && strlen(w.hash) == 64);
	hw_workload_free(&w);
}

PT_TEST(overrides_bad)
{
	hw_workload w;
	toml_error err;
	PT_REQUIRE(hw_workload_load(&w, SMOKE, &err) == 0);
	/* unknown keys, with a suggestion when there is one */
	PT_CHECK(hw_workload_set(&w, "service.recordz", "5", "--set service.recordz", &err) == -1);
	PT_CHECKF(strcmp(err.file, "--set service.recordz") == 0 &&
	              strcmp(err.key, "service.recordz") == 0 &&
	              strstr(err.msg, "did you mean 'records'"),
	          "%s", err.text);
	PT_CHECK(hw_workload_set(&w, "sede", "5", "--set", &err) == -1);
	PT_CHECKF(strstr(err.text, "did you mean 'seed'") != NULL, "%s", err.text);
	PT_CHECK(hw_workload_set(&w, "service", "{ records = 5 }", "--set", &err) == -1);
	PT_CHECKF(strstr(err.text, "not a workload setting") != NULL, "%s", err.text);
	PT_CHECK(hw_workload_set(&w, "service.operation_mix", "1", "--set", &err) == -1);
	PT_CHECK(hw_workload_set(&w, "service.clients.x", "1", "--set", &err) == -1);
	PT_CHECK(hw_workload_set(&w, "nope.clients", "1", "--set", &err) == -1);
	PT_CHECKF(strcmp(err.key, "nope") == 0 || strcmp(err.key, "nope.clients") == 0, "%s", err.text);
	/* a malformed value: rejected by set, the document unchanged */
	PT_CHECK(hw_workload_set(&w, "service.clients", "[1, ", "--clients", &err) == -1);
	PT_CHECKF(strcmp(err.file, "--clients") == 0 && strcmp(err.key, "service.clients") == 0, "%s",
	          err.text);
	PT_CHECK(hw_workload_resolve(&w, &err) == 0 && w.service.n_clients == 2);
	/* a well-formed impossible value: rejected by resolve, naming the flag */
	PT_CHECK(hw_workload_set(&w, "service.clients", "[1, 0]", "--clients", &err) == 0);
	PT_CHECK(hw_workload_resolve(&w, &err) == -1);
	PT_CHECKF(strcmp(err.file, "--clients") == 0 && strcmp(err.key, "service.clients[1]") == 0 &&
	              err.line == 1 && strstr(err.msg, "out of range"),
	          "%s", err.text);
	PT_CHECK(hw_workload_set(&w, "service.clients", "[1]", "--clients", &err) == 0);
	PT_CHECK(
	    hw_workload_set(&w, "scale.operations", "[\"put\", \"bogus\"]", "--operations", &err) == 0);
	PT_CHECK(hw_workload_resolve(&w, &err) == -1);
	PT_CHECKF(strcmp(err.file, "--operations") == 0 && strstr(err.msg, "unknown operation"), "%s",
	          err.text);
	PT_CHECK(hw_workload_set(&w, "scale.operations", "[\"put\"]", "--operations", &err) == 0);
	PT_CHECK(hw_workload_set(&w, "service.records", "\"many\"", "--records", &err) == 0);
	PT_CHECK(hw_workload_resolve(&w, &err) == -1 && strcmp(err.file, "--records") == 0 &&
	         strstr(err.msg, "expected an integer"));
	hw_workload_free(&w);
}

/* Every flag: an argument, the TOML text it must become; each is set and resolved. */
typedef struct flag_case {
	const char *flag, *arg, *toml;
} flag_case;

static const flag_case flag_cases[] = {
    {"clients", "1,4", "[1, 4]"},
    {"node-size", "1024", "1024"},
    {"pool-sizes", " 2 , 8 ", "[2, 8]"},
    {"records", "2k", "2000"},
    {"value-bytes", "100", "100"},
    {"tenants", "8", "8"},
    {"hot-roots", "2", "2"},
    {"hot-root-share", "0.5", "0.5"},
    {"warmup-ms", "0", "0"},
    {"duration-ms", "1.5k", "1500"},
    {"operation-timeout-ms", "2000", "2000"},
    {"multi-read-keys", "4", "4"},
    {"commit-keys", "2", "2"},
    {"retained-versions", "3", "3"},
    {"cas-retries", "0", "0"},
    {"batch-items", "512", "512"},
    {"sizes", "1M,10M", "[1000000, 10000000]"},
    {"scale-value-bytes", "32", "32"},
    {"runs", "2", "2"},
    {"changes", "auto", "\"auto\""},
    {"read-samples", "1k", "1000"},
    {"concurrency", "4", "4"},
    {"operations", "put,batch", "[\"put\", \"batch\"]"},
    {"patterns", "all",
     "[\"append\", \"random\", \"clustered\", \"random_insert\", "
     "\"random_delete\"]"},
    {"min-free-gb", "1", "1.0"},
    {"seed", "7", "7"},
    {"service-enabled", "false", "false"},
    {"scale-enabled", "1", "true"},
    {"max-throughput-loss", "5", "5.0"},
    {"max-p99-increase", "12.5", "12.5"},
    {"max-conflict-rate", "0.25", "0.25"},
    {"max-error-rate", "1e-3", "0.001"},
    {"max-statements-per-op", "8", "8.0"},
    {"min-percentile-samples", "50", "50"},
    {"max-relative-qps-loss", "2.5", "2.5"},
};

static const hw_override_flag *find_flag(const char *name)
{
	for (const hw_override_flag *f = hw_override_flags; f->flag; f++)
		if (strcmp(f->flag, name) == 0)
			return f;
	return NULL;
}

/* Whether help text names NAME as a whole word of a list ("get_cold" is not "get_cold_start"). */
static int help_names(const char *help, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = strstr(help, name); p; p = strstr(p + 1, name)) {
		int before = p == help || p[-1] == ' ' || p[-1] == ',';
		int after = p[n] == '\0' || p[n] == ' ' || p[n] == ',';
		if (before && after)
			return 1;
	}
	return 0;
}

PT_TEST(every_flag)
{
	size_t ncases = sizeof(flag_cases) / sizeof(flag_cases[0]);
	/* every flag in the table has a case here, and has a key, a help line */
	for (const hw_override_flag *f = hw_override_flags; f->flag; f++) {
		int found = 0;
		for (size_t i = 0; i < ncases; i++)
			found |= strcmp(flag_cases[i].flag, f->flag) == 0;
		PT_CHECKF(found, "flag --%s has no test case", f->flag);
		PT_CHECK(f->key && f->help && *f->help);
	}
	/* the help of --operations and --patterns names every value they take */
	for (int i = 0; i < HW_N_SCALE_OPS; i++)
		PT_CHECKF(help_names(find_flag("operations")->help, hw_scale_op_names[i]),
		          "--operations' help does not name %s", hw_scale_op_names[i]);
	for (int i = 0; i < HW_N_PATTERNS; i++)
		PT_CHECKF(help_names(find_flag("patterns")->help, hw_pattern_names[i]),
		          "--patterns' help does not name %s", hw_pattern_names[i]);
	static const char *const required[] = {"clients",
	                                       "pool-sizes",
	                                       "records",
	                                       "value-bytes",
	                                       "tenants",
	                                       "hot-roots",
	                                       "hot-root-share",
	                                       "warmup-ms",
	                                       "duration-ms",
	                                       "operation-timeout-ms",
	                                       "multi-read-keys",
	                                       "commit-keys",
	                                       "retained-versions",
	                                       "cas-retries",
	                                       "batch-items",
	                                       "sizes",
	                                       "scale-value-bytes",
	                                       "runs",
	                                       "changes",
	                                       "read-samples",
	                                       "concurrency",
	                                       "operations",
	                                       "patterns",
	                                       "min-free-gb",
	                                       "seed",
	                                       "service-enabled",
	                                       "scale-enabled"};
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		PT_CHECKF(find_flag(required[i]) != NULL, "no flag --%s", required[i]);

	hw_workload w;
	toml_error err;
	PT_REQUIRE(hw_workload_load(&w, SMOKE, &err) == 0);
	for (size_t i = 0; i < ncases; i++) {
		const hw_override_flag *f = find_flag(flag_cases[i].flag);
		char text[256], e[H_ERR], src[64];
		PT_CHECKF(f != NULL, "flag %s", flag_cases[i].flag);
		if (!f)
			continue;
		int rc = hw_flag_to_toml(f, flag_cases[i].arg, text, sizeof(text), e, sizeof(e));
		PT_CHECKF(rc == 0, "--%s %s: %s", f->flag, flag_cases[i].arg, e);
		if (rc)
			continue;
		PT_CHECKF(strcmp(text, flag_cases[i].toml) == 0, "--%s %s -> '%s', want '%s'", f->flag,
		          flag_cases[i].arg, text, flag_cases[i].toml);
		snprintf(src, sizeof(src), "--%s", f->flag);
		rc = hw_workload_set(&w, f->key, text, src, &err);
		PT_CHECKF(rc == 0, "%s", err.text);
	}
	int rc = hw_workload_resolve(&w, &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	PT_REQUIRE(rc == 0);
	PT_CHECK(w.service.n_clients == 2 && w.service.clients[1] == 4);
	PT_CHECK(w.service.n_pool_sizes == 2 && w.service.pool_sizes[1] == 8);
	PT_CHECK(w.service.records == 2000 && w.service.duration_ms == 1500 &&
	         w.service.hot_root_share == 0.5 && w.service.adapter_batch_items == 512);
	PT_CHECK(!w.service.enabled && w.scale.enabled);
	PT_CHECK(w.scale.n_sizes == 2 && w.scale.sizes[1] == 10000000 && w.scale.changes == 0);
	PT_CHECK(w.scale.operations == (1u << HW_S_PUT | 1u << HW_S_BATCH));
	PT_CHECK(w.scale.patterns == (1u << HW_N_PATTERNS) - 1 && w.scale.read_samples == 1000);
	PT_CHECK(w.scale.min_free_gb == 1.0 && w.seed == 7);
	PT_CHECK(w.regression.max_error_rate == 0.001 &&
	         w.regression.max_pg_statements_per_operation == 8 &&
	         w.regression.minimum_percentile_samples == 50);
	hw_workload_free(&w);
}

PT_TEST(flag_to_toml_conversions)
{
	static const struct {
		const char *flag, *arg, *toml; /* toml NULL: must fail */
	} cases[] = {
	    {"records", "1M", "1000000"},
	    {"records", "3G", "3000000000"},
	    {"records", "2.5M", "2500000"},
	    {"records", "100K", "100000"},
	    {"records", "0.001k", "1"},
	    {"records", "1.0001k", NULL},
	    {"records", "1.5", NULL},
	    {"records", "-1", NULL},
	    {"records", "1T", NULL},
	    {"records", "x", NULL},
	    {"records", "", NULL},
	    {"records", "auto", NULL},
	    {"records", "9223372036854775807", "9223372036854775807"},
	    {"records", "9223372036854775808", NULL},
	    {"records", "99999999999G", NULL},
	    {"changes", "2k", "2000"},
	    {"clients", "7", "[7]"},
	    {"clients", "1,,4", NULL},
	    {"clients", "1,4,", NULL},
	    {"clients", "1,a", NULL},
	    {"sizes", "100k, 1M", "[100000, 1000000]"},
	    {"operations", "put, get_cold", "[\"put\", \"get_cold\"]"},
	    {"operations", "all",
	     "[\"put\", \"batch\", \"get_cold\", \"get_warm\", \"query\", \"concurrent_query\", "
	     "\"scan\", \"full_scan\", \"diff\", \"merge\"]"},
	    {"operations", "pu\"t", NULL},
	    {"operations", "pu t", NULL},
	    {"operations", "", NULL},
	    {"hot-root-share", "0.2", "0.2"},
	    {"hot-root-share", ".5", "0.5"},
	    {"max-p99-increase", "10", "10.0"},
	    {"max-p99-increase", "250", "250.0"},
	    {"max-p99-increase", "1e20", "1e+20"},
	    {"max-error-rate", "0.0001", "0.0001"},
	    {"hot-root-share", "abc", NULL},
	    {"hot-root-share", "inf", NULL},
	    {"hot-root-share", "0x1p3", NULL},
	    {"hot-root-share", "1e400", NULL},
	    {"service-enabled", "TRUE", "true"},
	    {"service-enabled", "no", "false"},
	    {"service-enabled", "off", "false"},
	    {"service-enabled", "0", "false"},
	    {"service-enabled", "maybe", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const hw_override_flag *f = find_flag(cases[i].flag);
		char out[512], e[H_ERR] = "";
		PT_CHECKF(f != NULL, "%s", cases[i].flag);
		if (!f)
			continue;
		int rc = hw_flag_to_toml(f, cases[i].arg, out, sizeof(out), e, sizeof(e));
		if (cases[i].toml) {
			PT_CHECKF(rc == 0 && strcmp(out, cases[i].toml) == 0, "--%s '%s' -> rc %d '%s' (%s)",
			          f->flag, cases[i].arg, rc, out, e);
		} else {
			PT_CHECKF(rc == -1, "--%s '%s' accepted as '%s'", f->flag, cases[i].arg, out);
			PT_CHECKF(strstr(e, f->flag) != NULL, "--%s '%s': error '%s'", f->flag, cases[i].arg,
			          e);
		}
	}
	/* too small an output buffer fails cleanly */
	char small[4], e[H_ERR];
	PT_CHECK(hw_flag_to_toml(find_flag("clients"), "1,2,3", small, sizeof(small), e, sizeof(e)) ==
	         -1);
	PT_CHECK(hw_flag_to_toml(find_flag("records"), "1000", small, sizeof(small), e, sizeof(e)) ==
	         -1);
	/* every name list the flags can make is accepted by resolve */
	hw_workload w;
	toml_error err;
	char text[512];
	memset(&w, 0, sizeof(w));
	PT_CHECK(hw_flag_to_toml(find_flag("operations"), "all", text, sizeof(text), e, sizeof(e)) ==
	         0);
	PT_CHECK(hw_workload_set(&w, "scale.operations", text, "--operations", &err) == 0);
	PT_CHECK(hw_workload_resolve(&w, &err) == 0 && w.scale.operations == HW_DEFAULT_SCALE_OPS);
	hw_workload_free(&w);
}

/* ---- the resolved document and the hash ----------------------------------------------------- */

PT_TEST(resolved_round_trip)
{
	hw_workload a, b;
	toml_error err;
	char path[512];
	snprintf(path, sizeof(path), "%s/resolved-workload.toml", scratch());
	PT_REQUIRE(hw_workload_load(&a, SMOKE, &err) == 0);
	PT_CHECK(hw_workload_write_resolved(&a, path, &err) == -1); /* not resolved yet */
	PT_CHECK(hw_workload_set(&a, "service.clients", "[2, 6]", "--clients", &err) == 0);
	PT_REQUIRE(hw_workload_resolve(&a, &err) == 0);
	int rc = hw_workload_write_resolved(&a, path, &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	rc = hw_workload_load(&b, path, &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	PT_REQUIRE(rc == 0);
	PT_REQUIRE(hw_workload_resolve(&b, &err) == 0);
	PT_CHECKF(strcmp(a.hash, b.hash) == 0, "%s vs %s", a.hash, b.hash);
	PT_CHECK(toml_equal(toml_root(a.resolved), toml_root(b.resolved)));
	PT_CHECK(toml_equal(toml_root(b.given), toml_root(b.resolved)));
	PT_CHECK(b.service.n_clients == 2 && b.service.clients[1] == 6);
	/* the file says where it came from and its hash */
	FILE *f = fopen(path, "r");
	char head[4096] = "";
	PT_REQUIRE(f != NULL);
	size_t n = fread(head, 1, sizeof(head) - 1, f);
	head[n] = 0;
	fclose(f);
	PT_CHECK(strstr(head, a.hash) != NULL && strstr(head, SMOKE) != NULL);
	/* resolving twice changes nothing */
	char h[65];
	memcpy(h, b.hash, sizeof(h));
	PT_CHECK(hw_workload_resolve(&b, &err) == 0 && strcmp(h, b.hash) == 0);
	hw_workload_free(&a);
	hw_workload_free(&b);
	hw_workload_free(NULL);
}

static void hash_of(const char *name, const char *text, char out[65])
{
	hw_workload w;
	toml_error err;
	out[0] = 0;
	if (load_text(&w, name, text, &err)) {
		fprintf(stderr, "  %s: %s\n", name, err.text);
		return;
	}
	memcpy(out, w.hash, 65);
	hw_workload_free(&w);
}

PT_TEST(hash_follows_values_only)
{
	char h1[65], h3[65], h4[65], h5[65], h6[65];
	hash_of("a.toml",
	        "schema = 1\n[service]\nrecords = 1000\nclients = [1, 4]\n"
	        "[scale]\nsizes = [1000]\noperations = [\"put\", \"scan\"]\n",
	        h1);
	/* a root key written after a table belongs to that table: this file has no schema */
	hw_workload w;
	toml_error err;
	PT_CHECK(load_text(&w, "b.toml",
	                   "# a comment\n[scale]\noperations = [\"scan\", \"put\"]\nsizes = [1000]\n"
	                   "[service]\nclients = [1, 4]\nrecords = 1000\nschema = 1\n",
	                   &err) == -1);
	/* comments, blank lines, key and table order, number spelling, order of names */
	hash_of("c.toml",
	        "schema = 1 # first\n\n[scale]\noperations = [\"scan\", \"put\"]\nsizes = [1000]\n"
	        "[service]\nclients = [1, 4]  # clients\nrecords = 1_000\n",
	        h3);
	/* one value changed */
	hash_of("d.toml",
	        "schema = 1\n[service]\nrecords = 1001\nclients = [1, 4]\n"
	        "[scale]\nsizes = [1000]\noperations = [\"put\", \"scan\"]\n",
	        h4);
	/* defaults written out explicitly equal defaults left out */
	hash_of("e.toml", "schema = 1\n", h5);
	hash_of("f.toml",
	        "schema = 1\nseed = 42\n[service]\nhot_root_share = 0.2\nrecords = 1000000\n"
	        "[service.operation_mix]\nmerge = 5\ndiff = 10\ncommit = 25\nmulti_read = 15\n"
	        "point_read = 45\n[scale]\nchanges = \"auto\"\nmin_free_gb = 2\n",
	        h6);
	PT_CHECK(h1[0] && h3[0] && h4[0] && h5[0] && h6[0]);
	PT_CHECK(strcmp(h1, h3) == 0);
	PT_CHECK(strcmp(h1, h4) != 0);
	PT_CHECK(strcmp(h5, h6) == 0);
	PT_CHECK(strcmp(h1, h5) != 0);
	/* the default node size is left out of the resolved file (hashes of earlier runs stay);
	 * another one is in it */
	char h8[65], h9[65];
	hash_of("h.toml", "schema = 1\nnode_size = 4096\n", h8);
	hash_of("i.toml", "schema = 1\nnode_size = 1024\n", h9);
	PT_CHECK(h8[0] && h9[0] && strcmp(h5, h8) == 0 && strcmp(h5, h9) != 0);
	PT_REQUIRE(load_text(&w, "j.toml", "schema = 1\nnode_size = 2048\n", &err) == 0);
	PT_CHECK(w.node_size == 2048);
	PT_CHECK(hw_workload_set(&w, "node_size", "8192", "--node-size", &err) == 0 &&
	         hw_workload_resolve(&w, &err) == 0 && w.node_size == 8192);
	hw_workload_free(&w);
	PT_REQUIRE(load_text(&w, "k.toml", "schema = 1\n", &err) == 0);
	PT_CHECK(w.node_size == PROLLY_NODE_SIZE_DEFAULT);
	hw_workload_free(&w);
	/* [regression] only judges results: it is not part of the hash */
	char h7[65];
	hash_of("g.toml", "schema = 1\n[regression]\nmax_error_rate = 0.5\n", h7);
	PT_CHECK(h7[0] && strcmp(h5, h7) == 0);
}

PT_TEST(hash_changes_with_override)
{
	hw_workload w;
	toml_error err;
	char h[65];
	PT_REQUIRE(hw_workload_load(&w, SMOKE, &err) == 0);
	PT_REQUIRE(hw_workload_resolve(&w, &err) == 0);
	memcpy(h, w.hash, sizeof(h));
	PT_CHECK(hw_workload_set(&w, "service.duration_ms", "2001", "--duration-ms", &err) == 0);
	PT_CHECK(hw_workload_resolve(&w, &err) == 0 && strcmp(h, w.hash) != 0);
	PT_CHECK(hw_workload_set(&w, "service.duration_ms", "2000", "--duration-ms", &err) == 0);
	PT_CHECK(hw_workload_resolve(&w, &err) == 0 && strcmp(h, w.hash) == 0);
	hw_workload_free(&w);
}

/* On the memory store the harness holds the scale suite's base trees in its own process: sizes
 * of 100M or 1G records were accepted and built until the machine ran out of memory. With the
 * memory the process may use given (mem_store_ram, as the harness sets it for --store mem from
 * bench_mem_limit), resolve refuses
 * a size whose tree alone (HW_SCALE_RECORD_BYTES a record) exceeds it, at the size's line. */
PT_TEST(memory_store_size_beyond_the_machine_is_refused)
{
	hw_workload w;
	toml_error err;
	char path[512];
	const uint64_t ram = UINT64_C(8) << 30; /* 8 GiB: 100M records of 27 bytes fit, 1G do not */
	write_file(path, sizeof(path), "mem.toml",
	           "schema = 1\n[scale]\nsizes = [100000000,\n  1000000000]\n");
	PT_REQUIRE(hw_workload_load(&w, path, &err) == 0);
	PT_CHECKF(hw_workload_resolve(&w, &err) == 0, "%s", err.text); /* no limit given */
	hw_workload_free(&w);
	PT_REQUIRE(hw_workload_load(&w, path, &err) == 0);
	w.mem_store_ram = ram;
	PT_CHECK(hw_workload_resolve(&w, &err) == -1);
	PT_CHECKF(strstr(err.file, "mem.toml") && err.line == 4 &&
	              strcmp(err.key, "scale.sizes[1]") == 0 &&
	              strstr(err.msg, "1000000000 records of 67 bytes (key, value, node) is 63896 MiB "
	                              "on the memory store, more than this process may use (MemTotal "
	                              "8192 MiB)"),
	          "%s", err.text);
	/* a flag's size is named by the flag; a larger value makes a smaller size too large */
	PT_CHECK(hw_workload_set(&w, "scale.sizes", "[1000000]", "--sizes", &err) == 0);
	PT_CHECKF(hw_workload_resolve(&w, &err) == 0, "%s", err.text);
	PT_CHECK(hw_workload_set(&w, "scale.sizes", "[200000000]", "--sizes", &err) == 0);
	PT_CHECK(hw_workload_resolve(&w, &err) == -1);
	PT_CHECKF(strcmp(err.file, "--sizes") == 0 && strstr(err.msg, "MemTotal 8192 MiB"), "%s",
	          err.text);
	/* a control group's limit lower than MemTotal is named as such (bench_mem_limit) */
	w.mem_store_ram_source = "cgroup memory limit";
	PT_CHECK(hw_workload_resolve(&w, &err) == -1);
	PT_CHECKF(strstr(err.msg, "(cgroup memory limit 8192 MiB)"), "%s", err.text);
	w.mem_store_ram_source = NULL;
	PT_CHECK(hw_workload_set(&w, "scale.sizes", "[100000000]", "--sizes", &err) == 0);
	PT_CHECKF(hw_workload_resolve(&w, &err) == 0, "%s", err.text);
	PT_CHECK(hw_workload_set(&w, "scale.value_bytes", "100", "--scale-value-bytes", &err) == 0);
	PT_CHECK(hw_workload_resolve(&w, &err) == -1 && strstr(err.msg, "of 140 bytes"));
	/* a scale suite the workload turns off is not held to it */
	PT_CHECK(hw_workload_set(&w, "scale.enabled", "false", "--set", &err) == 0);
	PT_CHECKF(hw_workload_resolve(&w, &err) == 0, "%s", err.text);
	hw_workload_free(&w);
}

/* The same for the service suite: its one base tree of `records` records lives in the process
 * on the memory store; 1G records were accepted and built until memory ran out. */
PT_TEST(memory_store_service_records_beyond_the_machine_are_refused)
{
	hw_workload w;
	toml_error err;
	char path[512];
	const uint64_t ram = UINT64_C(8) << 30;
	write_file(path, sizeof(path), "svc.toml",
	           "schema = 1\n[service]\nvalue_bytes = 100\nrecords = 1000000000\n");
	PT_REQUIRE(hw_workload_load(&w, path, &err) == 0);
	PT_CHECKF(hw_workload_resolve(&w, &err) == 0, "%s", err.text); /* no limit given */
	hw_workload_free(&w);
	PT_REQUIRE(hw_workload_load(&w, path, &err) == 0);
	w.mem_store_ram = ram; /* the scale suite's limit does not judge the service */
	PT_CHECKF(hw_workload_resolve(&w, &err) == 0, "%s", err.text);
	hw_workload_free(&w);
	PT_REQUIRE(hw_workload_load(&w, path, &err) == 0);
	w.mem_store_ram_service = ram;
	PT_CHECK(hw_workload_resolve(&w, &err) == -1);
	PT_CHECKF(strstr(err.file, "svc.toml") && err.line == 4 &&
	              strcmp(err.key, "service.records") == 0 &&
	              strstr(err.msg, "1000000000 records of 127 bytes (key, value, node) is 121116 "
	                              "MiB on the memory store, more than this process may use "
	                              "(MemTotal 8192 MiB)"),
	          "%s", err.text);
	PT_CHECK(hw_workload_set(&w, "service.records", "1000000", "--records", &err) == 0);
	PT_CHECKF(hw_workload_resolve(&w, &err) == 0, "%s", err.text);
	PT_CHECK(hw_workload_set(&w, "service.enabled", "false", "--set", &err) == 0);
	PT_CHECK(hw_workload_set(&w, "service.records", "1000000000", "--records", &err) == 0);
	PT_CHECKF(hw_workload_resolve(&w, &err) == 0, "%s", err.text);
	hw_workload_free(&w);
}

/* The workload path must name a regular file of at most TOML_MAX_FILE_BYTES: a FIFO with no
 * writer blocked the load in open(), /dev/zero was read until memory ran out, and a 2 GB sparse
 * file was read whole (gigabytes) before its first line was looked at. */
PT_TEST(workload_path_that_is_not_a_small_file_is_refused)
{
	hw_workload w;
	toml_error err;
	char fifo[512], big[512], ok[512];
	snprintf(fifo, sizeof(fifo), "%s/fifo.toml", scratch());
	PT_REQUIRE(mkfifo(fifo, 0600) == 0);
	PT_CHECK(hw_workload_load(&w, fifo, &err) == -1);
	PT_CHECKF(strstr(err.text, "fifo.toml: not a regular file") != NULL, "%s", err.text);
	PT_CHECK(hw_workload_load(&w, "/dev/zero", &err) == -1);
	PT_CHECKF(strstr(err.text, "/dev/zero: not a regular file") == err.text, "%s", err.text);
	PT_CHECK(hw_workload_load(&w, scratch(), &err) == -1);
	PT_CHECKF(strstr(err.text, "not a regular file") != NULL, "%s", err.text);
	snprintf(big, sizeof(big), "%s/big.toml", scratch());
	PT_REQUIRE(
	    truncate(write_file(big, sizeof(big), "big.toml", "schema = 1\n"), INT64_C(2) << 30) == 0);
	PT_CHECK(hw_workload_load(&w, big, &err) == -1);
	PT_CHECKF(strstr(err.text, "big.toml: 2147483648 bytes is too large (a workload file is "
	                           "at most 1048576 bytes)") != NULL,
	          "%s", err.text);
	/* at the limit it is read (and parsed: a comment pads it) */
	snprintf(ok, sizeof(ok), "%s/limit.toml", scratch());
	FILE *f = fopen(ok, "w");
	PT_REQUIRE(f != NULL);
	fputs("schema = 1\n#", f);
	for (long i = 13; i < TOML_MAX_FILE_BYTES; i++)
		fputc('x', f);
	fputc('\n', f);
	PT_REQUIRE(fclose(f) == 0);
	PT_CHECKF(hw_workload_load(&w, ok, &err) == 0, "%s", err.text);
	hw_workload_free(&w);
	unlink(fifo);
	unlink(big);
	unlink(ok);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
