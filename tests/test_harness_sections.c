/*
 * test_harness_sections.c - the suites' own workload sections (hw_key, h_suite.keys,
 * hw_section; bench/harness/sections.c) with a toy suite "toy" that declares a key of every
 * kind:
 *
 *   - the defaults fill the config struct, and the resolved document holds the section with
 *     every key in list order (help lines in the resolved file's header);
 *   - a file's values of every kind are read; every rejection names file, line and key: an
 *     unknown key (with "did you mean"), a wrong type, out of range numbers and list entries,
 *     unknown names, empty and duplicate lists, a section that is not a table;
 *   - a key without a default must be given; a bad default fails like a bad file;
 *   - `--set toy.KEY=VALUE` overrides, and an unknown one fails with a suggestion;
 *   - the config hash changes with a value and not with its spelling; the resolved file reads
 *     back to the same hash;
 *   - the harness's own suites resolve with an empty file (every shipped default is valid).
 *
 * Re-run one test: build/tests/test_harness_sections NAME.
 */
#include "../bench/harness/harness.h"
#include "lib/model.h"
#include "ptest.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct toy_config {
	int enabled;
	uint64_t rows;
	double share;
	hw_u64_list clients;
	unsigned mode;
	unsigned steps;
	uint64_t required;
} toy_config;

static const char *const toy_modes[] = {"fast", "slow", NULL};
static const char *const toy_steps[] = {"load", "index", "query", NULL};

static const hw_key toy_keys[] = {
    {"enabled", HW_K_BOOL, offsetof(toy_config, enabled), 0, 0, "true", NULL, "run the toy suite"},
    {"rows", HW_K_U64, offsetof(toy_config, rows), 1, 1e6, "1000", NULL, "rows to load"},
    {"share", HW_K_FLOAT, offsetof(toy_config, share), 0, 1, "0.25", NULL, "a share, 0..1"},
    {"clients", HW_K_U64_LIST, offsetof(toy_config, clients), 1, 64, "[1, 4]", NULL,
     "client counts"},
    {"mode", HW_K_NAME, offsetof(toy_config, mode), 0, 0, "\"fast\"", toy_modes, "fast or slow"},
    {"steps", HW_K_NAME_LIST, offsetof(toy_config, steps), 0, 0, "[\"load\", \"query\"]", toy_steps,
     "steps to run"},
    {"required", HW_K_U64, offsetof(toy_config, required), 0, 100, "7", NULL, "a plain number"},
    {NULL, 0, 0, 0, 0, NULL, NULL, NULL},
};

static unsigned toy_cells(const hw_workload *w)
{
	(void)w;
	return 0;
}
static int toy_enabled(const hw_workload *w);
static int toy_run(h_run *run, char *err, size_t errn)
{
	(void)run, (void)err, (void)errn;
	return 0;
}
static const char *const toy_columns[] = {"cell_id", "cell_rows", "validated", NULL};

static const h_suite toy_suite = {
    .name = "toy",
    .raw_file = "toy-raw.csv",
    .columns = toy_columns,
    .enabled = toy_enabled,
    .cells = toy_cells,
    .run = toy_run,
    .keys = toy_keys,
    .config_size = sizeof(toy_config),
};

static int toy_enabled(const hw_workload *w)
{
	const toy_config *c = hw_section(w, &toy_suite);
	return c && c->enabled;
}

/* A second suite: one key without a default, and a suite without keys beside them. */
typedef struct strict_config {
	uint64_t n;
} strict_config;
static const hw_key strict_keys[] = {
    {"n", HW_K_U64, offsetof(strict_config, n), 1, 10, NULL, NULL, "must be given"},
    {NULL, 0, 0, 0, 0, NULL, NULL, NULL},
};
static const h_suite strict_suite = {
    .name = "strict",
    .raw_file = "strict-raw.csv",
    .columns = toy_columns,
    .enabled = toy_enabled,
    .cells = toy_cells,
    .run = toy_run,
    .keys = strict_keys,
    .config_size = sizeof(strict_config),
};
static const h_suite plain_suite = {
    .name = "plain",
    .raw_file = "plain-raw.csv",
    .columns = toy_columns,
    .enabled = toy_enabled,
    .cells = toy_cells,
    .run = toy_run,
};

static const h_suite *const toys[] = {&plain_suite, &toy_suite, NULL};
static const h_suite *const toys_strict[] = {&toy_suite, &strict_suite, NULL};

/* A key whose default is not valid for it. */
static const hw_key bad_default_keys[] = {
    {"n", HW_K_U64, 0, 1, 10, "11", NULL, "out of range by default"},
    {NULL, 0, 0, 0, 0, NULL, NULL, NULL},
};
static const h_suite bad_default_suite = {
    .name = "baddef",
    .raw_file = "baddef-raw.csv",
    .columns = toy_columns,
    .enabled = toy_enabled,
    .cells = toy_cells,
    .run = toy_run,
    .keys = bad_default_keys,
    .config_size = sizeof(uint64_t),
};
static const h_suite *const toys_bad[] = {&bad_default_suite, NULL};

static char *tmp;

/* Writes text to tmp/name and loads it with the suite table t (NULL: the harness's); resolves
 * unless the load failed. 0, or -1 with err. */
static int load(hw_workload *w, const h_suite *const *t, const char *name, const char *text,
                toml_error *err)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		return -1;
	if (hw_workload_load_suites(w, path, t, err))
		return -1;
	return hw_workload_resolve(w, err);
}

/* Loads text, expecting a rejection whose text holds every one of the NULL-terminated want. */
static int rejects(const h_suite *const *t, const char *text, const char *const *want)
{
	hw_workload w;
	toml_error err;
	int ok = load(&w, t, "bad.toml", text, &err) != 0;
	if (!ok)
		fprintf(stderr, "  accepted: %s\n", text);
	for (size_t i = 0; ok && want[i]; i++)
		if (!strstr(err.text, want[i])) {
			fprintf(stderr, "  '%s' lacks '%s'\n", err.text, want[i]);
			ok = 0;
		}
	hw_workload_free(&w);
	return ok;
}
#define REJECTS(t, text, ...) rejects(t, text, (const char *const[]){__VA_ARGS__, NULL})

PT_TEST(defaults_fill_the_config_and_the_resolved_document)
{
	hw_workload w;
	toml_error err;
	int rc = load(&w, toys, "min.toml", "schema = 1\n", &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	PT_REQUIRE(rc == 0);
	const toy_config *c = hw_section(&w, &toy_suite);
	PT_REQUIRE(c != NULL);
	PT_CHECK(c->enabled == 1 && c->rows == 1000 && c->share == 0.25 && c->required == 7);
	PT_CHECK(c->clients.n == 2 && c->clients.v[0] == 1 && c->clients.v[1] == 4);
	PT_CHECK(c->mode == 0 && c->steps == (1u << 0 | 1u << 2));
	PT_CHECK(hw_section(&w, &plain_suite) == NULL); /* no keys of its own */
	PT_CHECK(hw_section(&w, &hsvc_suite) == NULL);  /* not in this table */
	PT_CHECK(toy_enabled(&w));

	/* The section, every key in list order, between [scale] and [regression]. */
	char *text = toml_to_string(w.resolved, NULL);
	PT_REQUIRE(text != NULL);
	const char *sec = strstr(text, "[toy]\n");
	PT_CHECKF(sec && strstr(text, "[scale]") < sec && strstr(text, "[regression]") > sec, "%s",
	          text);
	if (sec) {
		const char *order[] = {"enabled = true",  "rows = 1000",
		                       "share = 0.25",    "clients = [1, 4]",
		                       "mode = \"fast\"", "steps = [\"load\", \"query\"]",
		                       "required = 7"};
		const char *at = sec;
		for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
			const char *p = strstr(at, order[i]);
			PT_CHECKF(p != NULL, "'%s' after '%.40s'", order[i], at);
			if (p)
				at = p;
		}
	}
	PT_CHECK(strstr(text, "[plain]") == NULL);
	free(text);

	/* The resolved file carries the help lines and reads back to the same hash. */
	char path[4200], hash[65];
	snprintf(path, sizeof(path), "%s/resolved.toml", tmp);
	PT_CHECK(hw_workload_write_resolved(&w, path, &err) == 0);
	memcpy(hash, w.hash, sizeof(hash));
	FILE *f = fopen(path, "r");
	char buf[8192] = "";
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = 0;
	if (f)
		fclose(f);
	PT_CHECKF(strstr(buf, "# The suites' own keys:") && strstr(buf, "#   toy.rows: rows to load"),
	          "%s", buf);
	hw_workload_free(&w);
	PT_REQUIRE(hw_workload_load_suites(&w, path, toys, &err) == 0);
	PT_CHECKF(hw_workload_resolve(&w, &err) == 0, "%s", err.text);
	PT_CHECK(strcmp(w.hash, hash) == 0);
	hw_workload_free(&w);
	PT_CHECK(w.sections[1] == NULL);
}

PT_TEST(a_file_sets_every_kind)
{
	hw_workload w;
	toml_error err;
	int rc = load(&w, toys, "all.toml",
	              "schema = 1\n[toy]\nenabled = false\nrows = 5\nshare = 1\n"
	              "clients = [8, 2, 64]\nmode = \"slow\"\nsteps = [\"query\", \"index\"]\n",
	              &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	PT_REQUIRE(rc == 0);
	const toy_config *c = hw_section(&w, &toy_suite);
	PT_REQUIRE(c != NULL);
	PT_CHECK(!c->enabled && c->rows == 5 && c->share == 1.0 && c->mode == 1);
	PT_CHECK(c->clients.n == 3 && c->clients.v[0] == 8 && c->clients.v[2] == 64);
	PT_CHECK(c->steps == (1u << 1 | 1u << 2) && c->required == 7);
	PT_CHECK(!toy_enabled(&w));
	/* Names are written in the order of the suite's list, floats as floats. */
	const toml_node *a = toml_find(toml_root(w.resolved), "toy.steps");
	const char *s0 = NULL;
	PT_CHECK(toml_len(a) == 2 && toml_node_string(toml_at(a, 0), &s0, NULL, NULL) == 0 &&
	         strcmp(s0, "index") == 0);
	PT_CHECK(toml_node_type(toml_find(toml_root(w.resolved), "toy.share")) == TOML_FLOAT);
	hw_workload_free(&w);
}

PT_TEST(rejections_name_file_line_and_key)
{
	PT_CHECK(REJECTS(toys, "schema = 1\n[toy]\nrowz = 5\n", "bad.toml:3:", "toy.rowz: unknown key",
	                 "did you mean 'rows'"));
	PT_CHECK(REJECTS(toys, "schema = 1\n[toy]\nrows = \"5\"\n", "bad.toml:3:", "toy.rows",
	                 "expected an integer"));
	PT_CHECK(
	    REJECTS(toys, "schema = 1\n[toy]\nrows = 0\n", "bad.toml:3:", "toy.rows", "out of range"));
	PT_CHECK(REJECTS(toys, "schema = 1\n[toy]\nrows = 1000001\n", "toy.rows", "1 to 1000000"));
	PT_CHECK(REJECTS(toys, "schema = 1\n[toy]\nshare = 1.5\n", "bad.toml:3:", "toy.share",
	                 "out of range"));
	PT_CHECK(REJECTS(toys, "schema = 1\n[toy]\nenabled = 1\n", "bad.toml:3:", "toy.enabled",
	                 "expected a boolean"));
	PT_CHECK(REJECTS(toys, "schema = 1\n[toy]\nclients = [1, 65]\n",
	                 "bad.toml:3:", "toy.clients[1]", "out of range"));
	PT_CHECK(
	    REJECTS(toys, "schema = 1\n[toy]\nclients = []\n", "bad.toml:3:", "toy.clients", "empty"));
	PT_CHECK(
	    REJECTS(toys, "schema = 1\n[toy]\nclients = [4, 4]\n", "toy.clients[1]", "listed twice"));
	PT_CHECK(REJECTS(toys, "schema = 1\n[toy]\nclients = 4\n", "bad.toml:3:", "toy.clients",
	                 "expected an array"));
	PT_CHECK(REJECTS(toys, "schema = 1\n[toy]\nmode = \"medium\"\n", "bad.toml:3:", "toy.mode",
	                 "unknown mode 'medium'", "\"fast\", \"slow\""));
	PT_CHECK(REJECTS(toys, "schema = 1\n[toy]\nmode = 1\n", "toy.mode", "expected a string"));
	PT_CHECK(REJECTS(toys, "schema = 1\n[toy]\nsteps = [\"load\", \"scan\"]\n",
	                 "bad.toml:3:", "toy.steps[1]", "unknown steps 'scan'", "load, index, query"));
	PT_CHECK(REJECTS(toys, "schema = 1\n[toy]\nsteps = []\n", "toy.steps", "empty"));
	PT_CHECK(REJECTS(toys, "schema = 1\ntoy = 3\n", "bad.toml:2:", "toy", "expected a table"));
	PT_CHECK(REJECTS(toys, "schema = 1\n[toyy]\n", "bad.toml:2:", "toyy: unknown key",
	                 "did you mean 'toy'"));
	/* A suite without keys owns no table. */
	PT_CHECK(REJECTS(toys, "schema = 1\n[plain]\n", "plain: unknown key"));
	/* The harness's own suites do not know [toy]. */
	PT_CHECK(REJECTS(NULL, "schema = 1\n[toy]\n", "toy: unknown key"));
	/* No default: the key must be given. */
	PT_CHECK(REJECTS(toys_strict, "schema = 1\n", "strict.n", "is missing"));
	/* A bad default fails like a bad file, naming the default. */
	PT_CHECK(REJECTS(toys_bad, "schema = 1\n", "default of baddef.n", "out of range"));
	hw_workload w;
	toml_error err;
	int rc = load(&w, toys_strict, "strict.toml", "schema = 1\n[strict]\nn = 3\n", &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	const strict_config *sc = rc == 0 ? hw_section(&w, &strict_suite) : NULL;
	PT_CHECK(sc && sc->n == 3);
	hw_workload_free(&w);
}

PT_TEST(overrides_and_the_hash)
{
	hw_workload w, v;
	toml_error err;
	char hash[65];
	PT_REQUIRE(load(&w, toys, "a.toml", "schema = 1\n", &err) == 0);
	memcpy(hash, w.hash, sizeof(hash));
	/* The same values spelled out: the same hash. */
	PT_REQUIRE(
	    load(&v, toys, "b.toml",
	         "schema = 1\n[toy]\nsteps = [\"query\", \"load\"]\nshare = 0.250\nrows = 1_000\n",
	         &err) == 0);
	PT_CHECK(strcmp(v.hash, hash) == 0);
	hw_workload_free(&v);

	PT_CHECKF(hw_workload_set(&w, "toy.rows", "2000", "--set", &err) == 0, "%s", err.text);
	PT_CHECK(hw_workload_set(&w, "toy.mode", "\"slow\"", "--set", &err) == 0);
	PT_CHECK(hw_workload_set(&w, "toy.clients", "[2]", "--set", &err) == 0);
	PT_CHECK(w.hash[0] == 0);
	PT_CHECKF(hw_workload_resolve(&w, &err) == 0, "%s", err.text);
	const toy_config *c = hw_section(&w, &toy_suite);
	PT_CHECK(c && c->rows == 2000 && c->mode == 1 && c->clients.n == 1 && c->clients.v[0] == 2);
	PT_CHECK(strcmp(w.hash, hash) != 0);
	/* Back to the defaults' values: the first hash again. */
	PT_CHECK(hw_workload_set(&w, "toy.rows", "1000", "--set", &err) == 0 &&
	         hw_workload_set(&w, "toy.mode", "\"fast\"", "--set", &err) == 0 &&
	         hw_workload_set(&w, "toy.clients", "[1, 4]", "--set", &err) == 0 &&
	         hw_workload_resolve(&w, &err) == 0);
	PT_CHECK(strcmp(w.hash, hash) == 0);

	/* Bad overrides. */
	PT_CHECK(hw_workload_set(&w, "toy.rowz", "1", "--set", &err) != 0 &&
	         strstr(err.text, "did you mean 'rows'"));
	PT_CHECK(hw_workload_set(&w, "toy.rows", "0", "--set", &err) == 0 &&
	         hw_workload_resolve(&w, &err) != 0 && strstr(err.text, "toy.rows") &&
	         strstr(err.text, "out of range"));
	hw_workload_free(&w);

	/* Without a file: a zeroed workload with the table, then overrides. */
	memset(&w, 0, sizeof(w));
	w.suites = toys;
	PT_CHECK(hw_workload_set(&w, "toy.share", "0.5", "--set", &err) == 0);
	PT_CHECKF(hw_workload_resolve(&w, &err) == 0, "%s", err.text);
	c = hw_section(&w, &toy_suite);
	PT_CHECK(c && c->share == 0.5 && c->rows == 1000);
	hw_workload_free(&w);
}

PT_TEST(the_harness_suites_resolve_from_an_empty_file)
{
	hw_workload w;
	toml_error err;
	int rc = load(&w, NULL, "empty.toml", "schema = 1\n", &err);
	PT_CHECKF(rc == 0, "%s", err.text);
	for (size_t i = 0; rc == 0 && h_suites[i]; i++)
		PT_CHECKF((hw_section(&w, h_suites[i]) != NULL) == (h_suites[i]->keys != NULL), "%s",
		          h_suites[i]->name);
	hw_workload_free(&w);
}

int main(int argc, char **argv)
{
	tmp = tm_tmpdir("hsec");
	if (!tmp)
		return 2;
	int rc = pt_run(argc, argv);
	tm_rmtree(tmp);
	free(tmp);
	return rc;
}
