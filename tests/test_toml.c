/*
 * test_toml.c - the workload-file TOML reader and writer (bench/lib/toml.{c,h}):
 *
 *   - every supported feature parses to the expected tree (tables, dotted keys, all string forms
 *     and escapes, integers in every base, floats, booleans, arrays, inline tables, comments,
 *     CRLF, a byte order mark), and a workload file like the smoke profile;
 *   - every error kind, with the exact line and column, the key and the message;
 *   - typed getters: expected vs found with the value's line; missing keys; unknown keys;
 *   - setters, overrides from text, removal;
 *   - serialisation round trips (fixed documents and random ones), file round trip.
 *
 * Re-run one test: build/tests/test_toml NAME.
 */
#include "../bench/lib/toml.h"
#include "prolly.h"
#include "ptest.h"
#include "rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static toml_doc *parse(const char *text, toml_error *err)
{
	toml_doc *doc = NULL;
	if (toml_parse_buffer(&doc, text, strlen(text), "t.toml", err))
		return NULL;
	return doc;
}

/* Parses, writes, parses the output again: the trees must be equal and the output stable. */
static int round_trips(const toml_doc *doc)
{
	char *s1 = toml_to_string(doc, "generated\nby test_toml"), *s2 = NULL;
	toml_doc *back = NULL;
	toml_error err;
	int ok = 0;
	if (!s1)
		goto cleanup;
	if (toml_parse_buffer(&back, s1, strlen(s1), "out.toml", &err)) {
		fprintf(stderr, "  re-parse failed: %s\n--- output:\n%s---\n", err.text, s1);
		goto cleanup;
	}
	if (!toml_equal(toml_root(doc), toml_root(back))) {
		fprintf(stderr, "  re-parsed tree differs\n--- output:\n%s---\n", s1);
		goto cleanup;
	}
	if (!(s2 = toml_to_string(back, "generated\nby test_toml")) || strcmp(s1, s2) != 0) {
		fprintf(stderr, "  output not stable:\n%s---\n%s---\n", s1, s2 ? s2 : "(null)");
		goto cleanup;
	}
	ok = 1;
cleanup:
	free(s1);
	free(s2);
	toml_free(back);
	return ok;
}

/* ---- valid documents ------------------------------------------------------------------------ */

static const char *const every_feature = "# a workload file\n"
                                         "schema = 1\n"
                                         "seed = 42 # trailing comment\n"
                                         "name = \"smoke\"\n"
                                         "\"quoted key\" = 'literal \\n stays'\n"
                                         "'lit.key' = true\n"
                                         "site.region = \"eu\"   # dotted key in the root\n"
                                         "site.\"zone id\" = 3\n"
                                         "\n"
                                         "[service]\n"
                                         "enabled = true\n"
                                         "records = 1_000_000\n"
                                         "hot_root_share = 0.25\n"
                                         "clients = [1, 4, 32]\n"
                                         "pool_sizes = [\n"
                                         "  2,  # small\n"
                                         "  8,\n"
                                         "]\n"
                                         "empty = []\n"
                                         "nested = [[1, 2], [\"a\"], []]\n"
                                         "mixed = [1, 2.5, \"x\", false, { a = 1 }]\n"
                                         "point = { x = 1, y.z = -2, s = { t = \"u\" } }\n"
                                         "  [service.operation_mix]\n"
                                         "  point_read = 45\n"
                                         "  multi_read = +15\n"
                                         "\n"
                                         "[ scale . \"deep key\" ]\n"
                                         "x = -0\n"
                                         "[scale]\n"
                                         "sizes = [1000, 10_000]\n";

PT_TEST(valid_every_feature)
{
	toml_error err;
	toml_doc *doc = parse(every_feature, &err);
	int64_t i;
	double f;
	int b;
	const char *s;
	const toml_node *n, *a;
	PT_REQUIRE(doc != NULL);
	PT_CHECK(toml_get_int(doc, "schema", &i, &err) == TOML_OK && i == 1);
	PT_CHECK(toml_get_int(doc, "seed", &i, &err) == TOML_OK && i == 42);
	PT_CHECK(toml_get_string(doc, "name", &s, &err) == TOML_OK && strcmp(s, "smoke") == 0);
	PT_CHECK(toml_get_string(doc, "\"quoted key\"", &s, &err) == TOML_OK &&
	         strcmp(s, "literal \\n stays") == 0);
	PT_CHECK(toml_get_bool(doc, "'lit.key'", &b, &err) == TOML_OK && b == 1);
	PT_CHECK(toml_get_string(doc, "site.region", &s, &err) == TOML_OK && strcmp(s, "eu") == 0);
	PT_CHECK(toml_get_int(doc, "site.\"zone id\"", &i, &err) == TOML_OK && i == 3);
	PT_CHECK(toml_get_bool(doc, "service.enabled", &b, &err) == TOML_OK && b == 1);
	PT_CHECK(toml_get_int(doc, "service.records", &i, &err) == TOML_OK && i == 1000000);
	PT_CHECK(toml_get_float(doc, "service.hot_root_share", &f, &err) == TOML_OK && f == 0.25);
	PT_CHECK(toml_get_int(doc, "service.operation_mix.point_read", &i, &err) == TOML_OK && i == 45);
	PT_CHECK(toml_get_int(doc, "service.operation_mix.multi_read", &i, &err) == TOML_OK && i == 15);
	PT_CHECK(toml_get_int(doc, "scale.\"deep key\".x", &i, &err) == TOML_OK && i == 0);
	PT_CHECK(toml_get_int(doc, "service.point.y.z", &i, &err) == TOML_OK && i == -2);
	PT_CHECK(toml_get_string(doc, "service.point.s.t", &s, &err) == TOML_OK && strcmp(s, "u") == 0);

	PT_CHECK(toml_get_array(doc, "service.clients", &a, &err) == TOML_OK && toml_len(a) == 3);
	PT_CHECK(toml_node_int(toml_at(a, 2), &i, &err) == TOML_OK && i == 32);
	PT_CHECK(toml_get_array(doc, "service.pool_sizes", &a, &err) == TOML_OK && toml_len(a) == 2);
	PT_CHECK(toml_node_line(toml_at(a, 1)) == 17 && toml_node_col(toml_at(a, 1)) == 3);
	PT_CHECK(toml_get_array(doc, "service.empty", &a, &err) == TOML_OK && toml_len(a) == 0);
	PT_CHECK(toml_get_array(doc, "service.nested", &a, &err) == TOML_OK && toml_len(a) == 3 &&
	         toml_len(toml_at(a, 0)) == 2 && toml_len(toml_at(a, 2)) == 0);
	PT_CHECK(toml_get_array(doc, "service.mixed", &a, &err) == TOML_OK && toml_len(a) == 5 &&
	         toml_node_type(toml_at(a, 1)) == TOML_FLOAT &&
	         toml_node_type(toml_at(a, 4)) == TOML_TABLE);

	/* Keys in written order, with positions. */
	PT_CHECK(toml_get_table(doc, "service", &n, &err) == TOML_OK);
	PT_CHECK(toml_node_line(n) == 10);
	PT_CHECK(toml_len(n) == 10);
	PT_CHECK(strcmp(toml_node_key(toml_at(n, 0)), "enabled") == 0);
	PT_CHECK(strcmp(toml_node_key(toml_at(n, 9)), "operation_mix") == 0);
	PT_CHECK(toml_node_line(toml_at(n, 1)) == 12 && toml_node_col(toml_at(n, 1)) == 1);
	PT_CHECK(toml_node_line(toml_at(n, 9)) == 23 && toml_node_col(toml_at(n, 9)) == 3);
	/* [scale."deep key"] came first, [scale] then defined the implicit table: its line. */
	PT_CHECK(toml_get_table(doc, "scale", &n, &err) == TOML_OK && toml_node_line(n) == 29);
	char path[128];
	n = toml_find(toml_root(doc), "service.clients");
	PT_CHECK(strcmp(toml_node_path(toml_at(n, 1), path, sizeof(path)), "service.clients[1]") == 0);
	n = toml_find(toml_root(doc), "site.\"zone id\"");
	PT_CHECK(strcmp(toml_node_path(n, path, sizeof(path)), "site.\"zone id\"") == 0);
	PT_CHECK(round_trips(doc));
	toml_free(doc);
}

PT_TEST(valid_strings)
{
	toml_error err;
	const char *s;
	size_t len;
	const char *text =
	    "a = \"tab\\t nl\\n cr\\r bs\\b ff\\f q\\\" bsl\\\\ e\\u00e9 g\\U0001F600 \"\n"
	    "b = 'C:\\path\\\"x\"'\n"
	    "c = \"\"\"\nfirst\n  second\"\"\"\n"
	    "d = \"\"\"one \\\n     two \\  \n\n   three\"\"\"\n"
	    "e = '''\nraw \\n ''quote'' '''\n"
	    "f = \"\"\"ends with quotes\"\"\"\"\"\n"
	    "g = \"utf-8 \xc3\xa9\xe2\x82\xac\"\n"
	    "h = \"nul\\u0000in\"\n"
	    "i = \"\"\n"
	    "j = ''\n"
	    "k = \"tab\tinside\"\n"
	    "l = \"\"\"crlf\r\nline\"\"\"\n";
	toml_doc *doc = parse(text, &err);
	PT_REQUIRE(doc != NULL);
	PT_CHECK(toml_get_string(doc, "a", &s, &err) == 0 &&
	         strcmp(s, "tab\t nl\n cr\r bs\b ff\f q\" bsl\\ e\xc3\xa9 g\xf0\x9f\x98\x80 ") == 0);
	PT_CHECK(toml_get_string(doc, "b", &s, &err) == 0 && strcmp(s, "C:\\path\\\"x\"") == 0);
	PT_CHECK(toml_get_string(doc, "c", &s, &err) == 0 && strcmp(s, "first\n  second") == 0);
	PT_CHECK(toml_get_string(doc, "d", &s, &err) == 0 && strcmp(s, "one two three") == 0);
	PT_CHECK(toml_get_string(doc, "e", &s, &err) == 0 && strcmp(s, "raw \\n ''quote'' ") == 0);
	PT_CHECK(toml_get_string(doc, "f", &s, &err) == 0 && strcmp(s, "ends with quotes\"\"") == 0);
	PT_CHECK(toml_get_string(doc, "g", &s, &err) == 0 &&
	         strcmp(s, "utf-8 \xc3\xa9\xe2\x82\xac") == 0);
	PT_CHECK(toml_node_string(toml_find(toml_root(doc), "h"), &s, &len, &err) == 0 && len == 6 &&
	         memcmp(s, "nul\0in", 6) == 0);
	PT_CHECK(toml_get_string(doc, "i", &s, &err) == 0 && strcmp(s, "") == 0);
	PT_CHECK(toml_get_string(doc, "j", &s, &err) == 0 && strcmp(s, "") == 0);
	PT_CHECK(toml_get_string(doc, "k", &s, &err) == 0 && strcmp(s, "tab\tinside") == 0);
	PT_CHECK(toml_get_string(doc, "l", &s, &err) == 0 && strcmp(s, "crlf\nline") == 0);
	PT_CHECK(round_trips(doc));
	toml_free(doc);
}

PT_TEST(valid_numbers)
{
	toml_error err;
	int64_t i;
	double f;
	const char *text = "a = 0\nb = +17\nc = -1_024\nd = 9223372036854775807\n"
	                   "e = -9223372036854775808\nf = 0xDEAD_beef\ng = 0o755\nh = 0b1101\n"
	                   "i = 0x7fffffffffffffff\n"
	                   "fa = 3.14\nfb = -0.5e-3\nfc = 1e6\nfd = 6.626E+34\nfe = 1_000.000_1\n"
	                   "ff = inf\nfg = -inf\nfh = nan\nfi = +nan\nfj = -0.0\nfk = 0e0\n"
	                   "fl = 1e-400\n";
	toml_doc *doc = parse(text, &err);
	PT_REQUIRE(doc != NULL);
	PT_CHECK(toml_get_int(doc, "a", &i, &err) == 0 && i == 0);
	PT_CHECK(toml_get_int(doc, "b", &i, &err) == 0 && i == 17);
	PT_CHECK(toml_get_int(doc, "c", &i, &err) == 0 && i == -1024);
	PT_CHECK(toml_get_int(doc, "d", &i, &err) == 0 && i == INT64_MAX);
	PT_CHECK(toml_get_int(doc, "e", &i, &err) == 0 && i == INT64_MIN);
	PT_CHECK(toml_get_int(doc, "f", &i, &err) == 0 && i == 0xdeadbeef);
	PT_CHECK(toml_get_int(doc, "g", &i, &err) == 0 && i == 0755);
	PT_CHECK(toml_get_int(doc, "h", &i, &err) == 0 && i == 13);
	PT_CHECK(toml_get_int(doc, "i", &i, &err) == 0 && i == INT64_MAX);
	PT_CHECK(toml_get_float(doc, "fa", &f, &err) == 0 && f == 3.14);
	PT_CHECK(toml_get_float(doc, "fb", &f, &err) == 0 && f == -0.5e-3);
	PT_CHECK(toml_get_float(doc, "fc", &f, &err) == 0 && f == 1e6);
	PT_CHECK(toml_get_float(doc, "fd", &f, &err) == 0 && f == 6.626e34);
	PT_CHECK(toml_get_float(doc, "fe", &f, &err) == 0 && f == 1000.0001);
	PT_CHECK(toml_get_float(doc, "ff", &f, &err) == 0 && isinf(f) && f > 0);
	PT_CHECK(toml_get_float(doc, "fg", &f, &err) == 0 && isinf(f) && f < 0);
	PT_CHECK(toml_get_float(doc, "fh", &f, &err) == 0 && isnan(f));
	PT_CHECK(toml_get_float(doc, "fi", &f, &err) == 0 && isnan(f));
	PT_CHECK(toml_get_float(doc, "fj", &f, &err) == 0 && f == 0 && signbit(f));
	PT_CHECK(toml_get_float(doc, "fk", &f, &err) == 0 && f == 0);
	PT_CHECK(toml_get_float(doc, "fl", &f, &err) == 0 && f == 0); /* underflow is not an error */
	/* A float getter takes an integer. */
	PT_CHECK(toml_get_float(doc, "b", &f, &err) == 0 && f == 17.0);
	PT_CHECK(toml_node_type(toml_find(toml_root(doc), "fk")) == TOML_FLOAT);
	PT_CHECK(round_trips(doc));
	toml_free(doc);
}

PT_TEST(valid_table_rules)
{
	toml_error err;
	int64_t i;
	/* Each is valid TOML 1.0. */
	const char *docs[] = {
	    "[a.b]\nx = 1\n[a]\ny = 2\n",              /* implicit table defined later */
	    "[a]\nb.c = 1\nb.d = 2\n[a.b.e]\nz = 3\n", /* header below dotted tables */
	    "a.b.c = 1\na.b.d = 2\na.e = 3\n",         /* dotted keys extend their own tables */
	    "[a]\n[b]\n[a.c]\n",                       /* empty tables, out of order */
	    "x = { a.b = 1, a.c = 2 }\n",              /* dotted keys inside an inline table */
	    "\xef\xbb\xbf"
	    "a = 1\r\n[b]\r\nc = 2 # crlf\r\n", /* byte order mark, CRLF */
	    "",
	    "# only a comment",
	    "a=1#no space\n\n\n",
	};
	for (size_t k = 0; k < sizeof(docs) / sizeof(docs[0]); k++) {
		toml_doc *doc = parse(docs[k], &err);
		PT_CHECKF(doc != NULL, "doc %zu: %s", k, err.text);
		if (doc)
			PT_CHECKF(round_trips(doc), "doc %zu", k);
		toml_free(doc);
	}
	toml_doc *doc = parse(docs[1], &err);
	PT_REQUIRE(doc != NULL);
	PT_CHECK(toml_get_int(doc, "a.b.e.z", &i, &err) == 0 && i == 3);
	PT_CHECK(toml_get_int(doc, "a.b.d", &i, &err) == 0 && i == 2);
	toml_free(doc);
	doc = parse(docs[5], &err);
	PT_REQUIRE(doc != NULL);
	PT_CHECK(toml_get_int(doc, "b.c", &i, &err) == 0 && i == 2);
	PT_CHECK(toml_node_line(toml_find(toml_root(doc), "b.c")) == 3);
	toml_free(doc);
}

/* The two smoke-profile tables the harness reads, in the shape of the workload file
 * (docs/harness.md). */
PT_TEST(valid_workload_file)
{
	const char *text = "schema = 1\n"
	                   "seed = 42\n\n"
	                   "[service]\n"
	                   "enabled = true\nrecords = 1000\nvalue_bytes = 64\nclients = [1, 4]\n"
	                   "pool_sizes = [2]\ntenants = 4\nhot_roots = 1\nhot_root_share = 0.25\n"
	                   "warmup_ms = 200\nduration_ms = 2000\noperation_timeout_ms = 5000\n\n"
	                   "[service.operation_mix]\n"
	                   "point_read = 45\nmulti_read = 15\ncommit = 25\ndiff = 10\nmerge = 5\n\n"
	                   "[scale]\n"
	                   "sizes = [1000]\nchanges = \"auto\"\n"
	                   "operations = [\"put\", \"batch\", \"get_cold\"]\n"
	                   "patterns = [\"append\", \"random\", \"clustered\"]\nmin_free_gb = 1.5\n";
	static const char *const service_keys[] = {"enabled",
	                                           "records",
	                                           "value_bytes",
	                                           "clients",
	                                           "pool_sizes",
	                                           "tenants",
	                                           "hot_roots",
	                                           "hot_root_share",
	                                           "warmup_ms",
	                                           "duration_ms",
	                                           "operation_timeout_ms",
	                                           "operation_mix",
	                                           NULL};
	toml_error err;
	toml_doc *doc = parse(text, &err);
	const toml_node *mix, *ops;
	int64_t sum = 0, v;
	PT_REQUIRE(doc != NULL);
	PT_CHECK(toml_check_keys(toml_find(toml_root(doc), "service"), service_keys, &err) == 0);
	PT_REQUIRE(toml_get_table(doc, "service.operation_mix", &mix, &err) == 0);
	for (size_t i = 0; i < toml_len(mix); i++) {
		PT_CHECK(toml_node_int(toml_at(mix, i), &v, &err) == 0);
		sum += v;
	}
	PT_CHECK(sum == 100);
	PT_REQUIRE(toml_get_array(doc, "scale.operations", &ops, &err) == 0);
	const char *s;
	PT_CHECK(toml_node_string(toml_at(ops, 2), &s, NULL, &err) == 0 && strcmp(s, "get_cold") == 0);
	PT_CHECK(round_trips(doc));
	toml_free(doc);
}

/* ---- errors --------------------------------------------------------------------------------- */

/* A header's parts plus a key's parts may not pass TOML_MAX_DEPTH: the writer would put the
 * deepest table in one [header] that could not be read back (found by fuzz/fuzz_toml.c). */
PT_TEST(nesting_across_header_and_key)
{
	char text[1024];
	for (int key_parts = 4; key_parts <= 5; key_parts++) {
		size_t n = 0;
		text[n++] = '[';
		for (int i = 0; i < 60; i++)
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%sh", i ? "." : "");
		n += (size_t)snprintf(text + n, sizeof(text) - n, "]\n");
		for (int i = 0; i < key_parts; i++)
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%sk", i ? "." : "");
		snprintf(text + n, sizeof(text) - n, " = 1\n");
		toml_error err;
		toml_doc *d = parse(text, &err);
		if (key_parts == 4) { /* 64 parts: the limit */
			PT_CHECKF(d != NULL, "%s", err.text);
			PT_CHECK(d && round_trips(d));
		} else {
			PT_CHECK(d == NULL);
			PT_CHECKF(strstr(err.text, "nests tables more than 64 deep") && err.line == 2 &&
			              err.col == 1,
			          "%s", err.text);
		}
		toml_free(d);
	}
}

typedef struct bad {
	const char *text;
	int line, col;
	const char *key; /* the exact key reported */
	const char *msg; /* a part of the message */
} bad;

static const bad bads[] = {
    /* duplicates and redefinitions */
    {"a = 1\nb = 2\na = 3\n", 3, 1, "a", "duplicate key (first defined at line 1)"},
    {"[s]\nx = 1\n x = 2\n", 3, 2, "s.x", "duplicate key"},
    {"[a]\nx = 1\n[b]\n[a]\n", 4, 1, "a", "table defined twice (first at line 1)"},
    {"[a.b]\n[a.b]\n", 2, 1, "a.b", "defined twice"},
    {"[a]\nb.c = 1\n[a.b]\n", 3, 1, "a.b", "already defined by dotted keys at line 2"},
    {"a = 1\n[a]\n", 2, 1, "a", "is already an integer (line 1), so it cannot be a table"},
    {"a = [1]\n[a.b]\n", 2, 1, "a", "arrays of tables are not supported"},
    {"a = 1\na.b = 2\n", 2, 1, "a", "is already an integer (line 1), so it cannot hold keys"},
    {"[a.b]\nx = 1\n[a]\nb.y = 2\n", 4, 1, "a.b", "cannot be extended with dotted keys"},
    {"a.b = 1\n[c]\n[a]\n", 3, 1, "a", "already defined by dotted keys at line 1"},
    {"a = { x = 1 }\n[a]\n", 2, 1, "a", "inline table at line 1 cannot be extended"},
    {"a = { x = 1 }\n[a.y]\n", 2, 1, "a", "inline table at line 1 cannot be extended"},
    {"a = { x = 1 }\na.y = 2\n", 2, 1, "a", "inline table at line 1 cannot be extended"},
    {"a = { x = 1, x = 2 }\n", 1, 14, "a.x", "duplicate key"},
    {"a = { b.c = 1, b = 2 }\n", 1, 16, "a.b", "duplicate key"},
    /* structure */
    {"[[a]]\n", 1, 1, "", "arrays of tables ([[...]]) are not supported"},
    {"[a\nx = 1\n", 1, 3, "a", "expected ']' to close the table header, found end of line"},
    {"[]\n", 1, 2, "", "expected a key, found ']'"},
    {"x = 1\n  [a] junk\n", 2, 7, "a", "expected the end of the line after the table header"},
    {"a = \n", 1, 5, "a", "expected a value, found end of line"},
    {"a =", 1, 4, "a", "expected a value, found end of file"},
    {"a 1\n", 1, 3, "a", "expected '=' after the key, found '1'"},
    {"= 1\n", 1, 1, "", "expected a key, found '='"},
    {"a.= 1\n", 1, 3, "", "expected a key, found '='"},
    {"[s]\nrecords = 1000 2000\n", 2, 16, "s.records",
     "expected the end of the line after the value, found '2'"},
    {"a = 1,\n", 1, 6, "a", "found ','"},
    {"a = [1, 2\n", 1, 5, "a", "unterminated array"},
    {"a = [1 2]\n", 1, 8, "a", "expected ',' or ']' in the array, found '2'"},
    {"a = {x = 1,}\n", 1, 12, "a", "trailing comma is not allowed in an inline table"},
    {"a = {x = 1\n}\n", 1, 11, "a", "must be written on one line"},
    {"a = {x = 1 y = 2}\n", 1, 12, "a", "expected ',' or '}' in the inline table, found 'y'"},
    {"a = {x = }\n", 1, 10, "a.x", "expected a value, found '}'"},
    /* strings */
    {"a = \"abc\nb = 1\n", 1, 5, "a",
     "unterminated string (found end of line before the closing \")"},
    {"a = 'abc", 1, 5, "a", "unterminated string"},
    {"a = \"\"\"abc\n", 1, 5, "a", "unterminated multi-line string"},
    {"a = '''abc\n''", 1, 5, "a", "unterminated multi-line string"},
    {"a = \"x\\qy\"\n", 1, 7, "a", "invalid escape sequence '\\q'"},
    {"a = \"\\u12\"\n", 1, 6, "a", "\\u needs 4 hexadecimal digits"},
    {"a = \"\\uD800\"\n", 1, 6, "a", "is not a Unicode scalar value"},
    {"a = \"\\U00110000\"\n", 1, 6, "a", "is not a Unicode scalar value"},
    {"a = \"x\x01\"\n", 1, 7, "a", "control character U+0001 in a string"},
    {"a = \"\"\"x\"\"\"\"\"\"\n", 1, 9, "a", "too many quotes"},
    {"a = \"\"\"x \\ y\"\"\"\n", 1, 10, "a", "invalid escape sequence (backslash before a space)"},
    {"\"\"\"k\"\"\" = 1\n", 1, 1, "", "a multi-line string cannot be a key"},
    {"\"a\\u0000b\" = 1\n", 1, 1, "", "a key cannot contain U+0000"},
    /* integers */
    {"a = 9223372036854775808\n", 1, 5, "a", "does not fit in 64 bits"},
    {"a = -9_223_372_036_854_775_809\n", 1, 5, "a", "does not fit in 64 bits"},
    {"a = 0x8000000000000000\n", 1, 5, "a", "does not fit in 64 bits"},
    {"a = 01\n", 1, 5, "a", "leading zeros are not allowed in '01'"},
    {"a = 1__0\n", 1, 5, "a", "'_' must be between two digits in '1__0'"},
    {"a = 1_\n", 1, 5, "a", "'_' must be between two digits"},
    {"a = +0x10\n", 1, 5, "a", "cannot have a sign"},
    {"a = 0b102\n", 1, 5, "a", "invalid digit '2' in '0b102'"},
    {"a = 0x\n", 1, 5, "a", "expected digits in '0x'"},
    {"a = +\n", 1, 5, "a", "expected digits in '+'"},
    {"a = 12abc\n", 1, 5, "a", "invalid number '12abc'"},
    /* floats */
    {"a = 1.\n", 1, 5, "a", "a float needs digits after the '.'"},
    {"a = 1.e5\n", 1, 5, "a", "a float needs digits after the '.'"},
    {"a = 1e\n", 1, 5, "a", "an exponent needs digits"},
    {"a = 1e400\n", 1, 5, "a", "float 1e400 is out of range"},
    {"a = .5\n", 1, 5, "a", "invalid value '.5'"},
    {"a = 00.5\n", 1, 5, "a", "leading zeros"},
    /* other values */
    {"a = 1979-05-27\n", 1, 5, "a", "dates and times are not supported"},
    {"a = 07:32:00\n", 1, 5, "a", "dates and times are not supported"},
    {"a = yes\n", 1, 5, "a", "invalid value 'yes' (strings need quotes"},
    {"a = True\n", 1, 5, "a", "invalid value 'True'"},
    /* characters */
    {"a = 1 # c\x01\n", 1, 10, "a", "control character U+0001 in a comment"},
    {"a = 1\rb = 2\n", 1, 6, "", "carriage return not followed by a line feed"},
    {"a = 1\nb = \"\xff\"\n", 2, 6, "", "invalid UTF-8 (byte 0xFF)"},
    {"a = \"\xc0\xaf\"\n", 1, 6, "", "overlong"},
    {"a = \"\xe2\x82\"\n", 1, 6, "", "invalid UTF-8"},
    {"\xc3\xa9 = 1\n", 1, 1, "", "expected a key, found '\xc3\xa9'"},
    {"k = \"\xc3\xa9\" x\n", 1, 9, "k", "found 'x'"}, /* columns count characters */
};

PT_TEST(errors_every_kind)
{
	for (size_t k = 0; k < sizeof(bads) / sizeof(bads[0]); k++) {
		const bad *b = &bads[k];
		toml_error err;
		toml_doc *doc = NULL;
		memset(&err, 0, sizeof(err));
		int rc = toml_parse_buffer(&doc, b->text, strlen(b->text), "w.toml", &err);
		PT_CHECKF(rc == TOML_ERR && doc == NULL, "case %zu parsed", k);
		toml_free(doc);
		PT_CHECKF(strcmp(err.file, "w.toml") == 0, "case %zu: file '%s'", k, err.file);
		PT_CHECKF(err.line == b->line && err.col == b->col, "case %zu: at %d:%d, want %d:%d (%s)",
		          k, err.line, err.col, b->line, b->col, err.text);
		PT_CHECKF(strcmp(err.key, b->key) == 0, "case %zu: key '%s', want '%s' (%s)", k, err.key,
		          b->key, err.text);
		PT_CHECKF(strstr(err.msg, b->msg) != NULL, "case %zu: message '%s', want '%s'", k, err.msg,
		          b->msg);
	}
}

PT_TEST(errors_text_format)
{
	toml_error err;
	toml_doc *doc = NULL;
	const char *t = "[service]\nrecords 1000\n";
	PT_CHECK(toml_parse_buffer(&doc, t, strlen(t), "smoke.toml", &err) == TOML_ERR);
	PT_CHECKF(strcmp(err.text, "smoke.toml:2:9: service.records: expected '=' after the key, "
	                           "found '1'") == 0,
	          "%s", err.text);
	t = "[service]\nrecords = \"1000\"\n";
	doc = parse(t, &err);
	PT_REQUIRE(doc != NULL);
	int64_t v = 7;
	PT_CHECK(toml_get_int(doc, "service.records", &v, &err) == TOML_ERR && v == 7);
	PT_CHECKF(strcmp(err.text, "t.toml:2:11: service.records: expected an integer, found a "
	                           "string (\"1000\")") == 0,
	          "%s", err.text);
	toml_free(doc);
	/* No name: "<buffer>". */
	PT_CHECK(toml_parse_buffer(&doc, "x", 1, NULL, &err) == TOML_ERR);
	PT_CHECKF(strncmp(err.text, "<buffer>:1:2: x: ", 17) == 0, "%s", err.text);
	/* A NULL err is allowed. */
	PT_CHECK(toml_parse_buffer(&doc, "x", 1, NULL, NULL) == TOML_ERR);
}

/* "a = " and `depth` nested empty arrays into text; returns the length. */
static size_t nested_arrays(char *text, size_t cap, int depth)
{
	size_t n = (size_t)snprintf(text, cap, "a = ");
	for (int i = 0; i < depth; i++)
		text[n++] = '[';
	for (int i = 0; i < depth; i++)
		text[n++] = ']';
	text[n] = 0;
	return n;
}

PT_TEST(errors_nesting_limit)
{
	char text[512];
	size_t n = nested_arrays(text, sizeof(text), TOML_MAX_DEPTH + 1);
	toml_error err;
	toml_doc *doc = NULL;
	PT_CHECK(toml_parse_buffer(&doc, text, n, "deep", &err) == TOML_ERR);
	PT_CHECKF(strstr(err.msg, "nested more than") && err.line == 1 && err.col == 5 + TOML_MAX_DEPTH,
	          "%s", err.text);
	/* Exactly the limit parses. */
	n = nested_arrays(text, sizeof(text), TOML_MAX_DEPTH);
	PT_CHECKF(toml_parse_buffer(&doc, text, n, "deep", &err) == TOML_OK, "%s", err.text);
	PT_CHECK(round_trips(doc));
	toml_free(doc);
}

/* ---- getters, key checks -------------------------------------------------------------------- */

PT_TEST(getters_types_and_missing)
{
	toml_error err;
	const char *text = "[service]\nrecords = 1000\nshare = 0.5\nname = \"x\"\n"
	                   "clients = [1, \"two\", 3]\non = true\n[service.mix]\n";
	toml_doc *doc = parse(text, &err);
	int64_t i = -1;
	double f;
	int b;
	const char *s;
	const toml_node *n;
	PT_REQUIRE(doc != NULL);
	/* Missing: TOML_MISSING, value untouched, a message naming the key. */
	PT_CHECK(toml_get_int(doc, "service.nope", &i, &err) == TOML_MISSING && i == -1);
	PT_CHECKF(strcmp(err.text, "t.toml: service.nope: is missing") == 0, "%s", err.text);
	PT_CHECK(toml_get_int(doc, "other.records", &i, &err) == TOML_MISSING);
	/* Wrong types, at the value's position. */
	struct {
		int rc;
		const char *want;
		int line, col;
	} cases[6];
	cases[0].rc = toml_get_int(doc, "service.share", &i, &err);
	PT_CHECKF(cases[0].rc == TOML_ERR && err.line == 3 && err.col == 9 &&
	              strcmp(err.msg, "expected an integer, found a float (0.5)") == 0,
	          "%s", err.text);
	PT_CHECK(toml_get_float(doc, "service.name", &f, &err) == TOML_ERR && err.line == 4 &&
	         strcmp(err.msg, "expected a float, found a string (\"x\")") == 0);
	PT_CHECK(toml_get_bool(doc, "service.records", &b, &err) == TOML_ERR && err.line == 2 &&
	         strcmp(err.msg, "expected a boolean, found an integer (1000)") == 0);
	PT_CHECK(toml_get_string(doc, "service.on", &s, &err) == TOML_ERR && err.line == 6 &&
	         strcmp(err.msg, "expected a string, found a boolean (true)") == 0);
	PT_CHECK(toml_get_array(doc, "service.mix", &n, &err) == TOML_ERR && err.line == 7 &&
	         strcmp(err.msg, "expected an array, found a table") == 0);
	PT_CHECK(toml_get_table(doc, "service.clients", &n, &err) == TOML_ERR && err.line == 5 &&
	         strcmp(err.msg, "expected a table, found an array") == 0);
	/* A path through a value. */
	PT_CHECKF(toml_get_int(doc, "service.records.x", &i, &err) == TOML_ERR && err.line == 2 &&
	              strstr(err.msg, "is an integer, not a table"),
	          "%s", err.text);
	/* A bad path. */
	PT_CHECKF(toml_get_int(doc, "service..x", &i, &err) == TOML_ERR &&
	              strstr(err.msg, "invalid key path"),
	          "%s", err.text);
	PT_CHECK(toml_get_int(doc, "service.records x", &i, &err) == TOML_ERR);
	PT_CHECK(toml_find(toml_root(doc), "a b") == NULL);
	/* Array elements: their own position and path. */
	PT_REQUIRE(toml_get_array(doc, "service.clients", &n, &err) == TOML_OK);
	PT_CHECKF(toml_node_int(toml_at(n, 1), &i, &err) == TOML_ERR && err.line == 5 &&
	              err.col == 15 && strcmp(err.key, "service.clients[1]") == 0,
	          "%s", err.text);
	/* Range checks. */
	PT_CHECK(toml_get_int_range(doc, "service.records", 1, 1000, &i, &err) == 0 && i == 1000);
	PT_CHECKF(toml_get_int_range(doc, "service.records", 1, 999, &i, &err) == TOML_ERR &&
	              strcmp(err.text, "t.toml:2:11: service.records: 1000 is out of range "
	                               "(expected 1 to 999)") == 0,
	          "%s", err.text);
	/* toml_error_at for the caller's own checks: at the key. */
	PT_CHECK(toml_error_at(&err, toml_find(toml_root(doc), "service.mix"),
	                       "must total 100, "
	                       "not %d",
	                       0) == TOML_ERR);
	PT_CHECKF(strcmp(err.text, "t.toml:7:1: service.mix: must total 100, not 0") == 0, "%s",
	          err.text);
	PT_CHECK(toml_node_type(NULL) == TOML_NONE && toml_len(NULL) == 0 && toml_at(NULL, 0) == NULL);
	PT_CHECK(strcmp(toml_type_name(TOML_FLOAT), "float") == 0);
	toml_free(doc);
}

PT_TEST(check_keys_unknown)
{
	static const char *const allowed[] = {"records", "value_bytes", "clients", NULL};
	toml_error err;
	toml_doc *doc = parse("[service]\nrecords = 1\n\nrecods = 2\n", &err);
	PT_REQUIRE(doc != NULL);
	PT_CHECK(toml_check_keys(toml_find(toml_root(doc), "service"), allowed, &err) == TOML_ERR);
	PT_CHECKF(strcmp(err.text, "t.toml:4:1: service.recods: unknown key (did you mean "
	                           "'records'?)") == 0,
	          "%s", err.text);
	toml_free(doc);
	doc = parse("[service]\n  zzzzzzzz = 1\n", &err);
	PT_REQUIRE(doc != NULL);
	PT_CHECK(toml_check_keys(toml_find(toml_root(doc), "service"), allowed, &err) == TOML_ERR);
	PT_CHECKF(strcmp(err.text, "t.toml:2:3: service.zzzzzzzz: unknown key") == 0, "%s", err.text);
	toml_free(doc);
	/* A sub-table counts as a key of its parent; its position is its header. */
	doc = parse("[service]\nrecords = 1\n[service.mx]\n", &err);
	PT_REQUIRE(doc != NULL);
	PT_CHECK(toml_check_keys(toml_find(toml_root(doc), "service"), allowed, &err) == TOML_ERR &&
	         err.line == 3 && strcmp(err.key, "service.mx") == 0);
	toml_free(doc);
}

/* ---- setters -------------------------------------------------------------------------------- */

PT_TEST(setters_and_overrides)
{
	toml_error err;
	toml_doc *doc = parse("schema = 1\n[service]\nrecords = 1000\nclients = [1, 4]\n", &err);
	toml_node *arr;
	int64_t i;
	double f;
	const char *s;
	const toml_node *n;
	PT_REQUIRE(doc != NULL);
	/* Defaults fill in; existing values are replaced (any type). */
	PT_CHECK(toml_set_int(doc, "service.tenants", 4, &err) == 0);
	PT_CHECK(toml_set_float(doc, "service.hot_root_share", 0.25, &err) == 0);
	PT_CHECK(toml_set_bool(doc, "service.enabled", 1, &err) == 0);
	PT_CHECK(toml_set_string(doc, "scale.changes", "auto", &err) == 0);
	PT_CHECK(toml_set_int(doc, "service.records", 5000, &err) == 0);
	PT_CHECK(toml_set_string(doc, "service.records", "many", &err) == 0);
	PT_CHECK(toml_get_string(doc, "service.records", &s, &err) == 0 && strcmp(s, "many") == 0);
	PT_CHECK(toml_set_array(doc, "regression.list", &arr, &err) == 0);
	PT_CHECK(toml_array_push_int(arr, 3) == 0 && toml_array_push_float(arr, 1.5) == 0 &&
	         toml_array_push_bool(arr, 0) == 0 && toml_array_push_string(arr, "q\"") == 0);
	PT_CHECK(toml_array_push_string(arr, "\xff") == TOML_ERR && toml_len(arr) == 4);
	PT_CHECK(toml_set_string(doc, "bad", "\xc3", &err) == TOML_ERR &&
	         toml_find(toml_root(doc), "bad") == NULL);
	PT_CHECK(toml_get_int(doc, "service.tenants", &i, &err) == 0 && i == 4);
	PT_CHECK(toml_get_float(doc, "service.hot_root_share", &f, &err) == 0 && f == 0.25);
	/* Not through a value, not over a table. */
	PT_CHECK(toml_set_int(doc, "schema.x", 1, &err) == TOML_ERR &&
	         strstr(err.msg, "is an integer, not a table") && err.line == 1);
	PT_CHECK(toml_set_int(doc, "service", 1, &err) == TOML_ERR &&
	         strstr(err.msg, "is a table; it cannot be replaced"));

	/* Overrides from text, with their own source name in errors. */
	PT_CHECK(toml_set_value(doc, "service.clients", "[1, 8, 32]", "--set", &err) == 0);
	PT_CHECK(toml_get_array(doc, "service.clients", &n, &err) == 0 && toml_len(n) == 3);
	PT_CHECK(toml_set_value(doc, "service.mix", " { read = 50, write = 50 } ", "--set", &err) == 0);
	PT_CHECK(toml_get_int(doc, "service.mix.write", &i, &err) == 0 && i == 50);
	PT_CHECK(toml_set_value(doc, "service.records", "100_000", "--records", &err) == 0);
	PT_CHECK(toml_get_int(doc, "service.records", &i, &err) == 0 && i == 100000);
	n = toml_find(toml_root(doc), "service.clients");
	PT_CHECK(toml_node_int(toml_at(n, 1), &i, &err) == 0 && i == 8);
	PT_CHECK(toml_node_string(toml_at(n, 1), &s, NULL, &err) == TOML_ERR);
	PT_CHECKF(strcmp(err.text, "--set:1:5: service.clients[1]: expected a string, found an "
	                           "integer (8)") == 0,
	          "%s", err.text);
	PT_CHECK(toml_set_value(doc, "service.clients", "[1, 2", "--set", &err) == TOML_ERR);
	PT_CHECKF(strcmp(err.file, "--set") == 0 && err.line == 1 && err.col == 1 &&
	              strcmp(err.key, "service.clients") == 0,
	          "%s", err.text);
	PT_CHECK(toml_set_value(doc, "service.records", "12 13", "--records", &err) == TOML_ERR);
	PT_CHECKF(strstr(err.text, "--records:1:4: service.records: unexpected '1' after the value"),
	          "%s", err.text);
	/* A failed override leaves the old value. */
	PT_CHECK(toml_get_int(doc, "service.records", &i, &err) == 0 && i == 100000);
	PT_CHECK(toml_get_array(doc, "service.clients", &n, &err) == 0 && toml_len(n) == 3);

	/* Removal. */
	PT_CHECK(toml_remove(doc, "service.tenants", &err) == 0);
	PT_CHECK(toml_find(toml_root(doc), "service.tenants") == NULL);
	PT_CHECK(toml_remove(doc, "service.tenants", &err) == TOML_MISSING);
	PT_CHECK(round_trips(doc));
	toml_free(doc);

	/* A document built from nothing. */
	PT_REQUIRE(toml_doc_new(&doc, "resolved") == 0);
	PT_CHECK(toml_set_int(doc, "a.b.c", 1, &err) == 0 && toml_set_int(doc, "a.d", 2, &err) == 0);
	PT_CHECK(strcmp(toml_doc_name(doc), "resolved") == 0);
	char *out = toml_to_string(doc, NULL);
	PT_CHECKF(out && strcmp(out, "[a]\nd = 2\n\n[a.b]\nc = 1\n") == 0, "%s", out);
	free(out);
	PT_CHECK(round_trips(doc));
	toml_free(doc);
}

/* ---- serialisation -------------------------------------------------------------------------- */

PT_TEST(write_exact_output)
{
	toml_error err;
	const char *text = "top = 1\n[b]\n\"k y\" = 'v'\nf = 0.1\ng = 1e300\nh = 2.0\n"
	                   "i = { x = [1, {}], \"\" = -inf }\n[b.c]\n[a]\nz.w = \"\\u0001\\t\"\n";
	toml_doc *doc = parse(text, &err);
	PT_REQUIRE(doc != NULL);
	char *out = toml_to_string(doc, "resolved workload");
	const char *want = "# resolved workload\n"
	                   "top = 1\n\n[b]\n\"k y\" = \"v\"\nf = 0.1\ng = 1e+300\nh = 2.0\n"
	                   "i = { x = [1, {}], \"\" = -inf }\n\n[b.c]\n\n[a.z]\nw = \"\\u0001\\t\"\n";
	PT_CHECKF(out && strcmp(out, want) == 0, "got:\n%s", out);
	free(out);
	PT_CHECK(round_trips(doc));
	toml_free(doc);
}

/* A random valid UTF-8 string, with control characters, quotes, backslashes, and non-ASCII. */
static void random_string(uint64_t *rng, char *buf, size_t cap)
{
	static const char *const pieces[] = {
	    "a",  "Z",  "_",    "-",    ".", " ", "\"", "'",        "\\",           "\t",
	    "\n", "\r", "\x01", "\x7f", "#", "=", "[",  "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
	    "0"};
	size_t n = 0, want = bench_splitmix64(rng) % 12;
	for (size_t i = 0; i < want; i++) {
		const char *p = pieces[bench_splitmix64(rng) % (sizeof(pieces) / sizeof(pieces[0]))];
		size_t l = strlen(p);
		if (n + l + 1 >= cap)
			break;
		memcpy(buf + n, p, l);
		n += l;
	}
	buf[n] = 0;
}

static void random_fill(uint64_t *rng, toml_doc *doc, const char *prefix, int depth)
{
	int nkeys = 1 + (int)(bench_splitmix64(rng) % 6);
	for (int k = 0; k < nkeys; k++) {
		char key[64], path[512], str[128];
		toml_node *arr;
		double f;
		random_string(rng, key, sizeof(key));
		snprintf(path, sizeof(path), "%s%s\"", prefix, prefix[0] ? ".\"" : "\"");
		for (const char *c = key; *c; c++) {
			char esc[8];
			if (*c == '"' || *c == '\\')
				snprintf(esc, sizeof(esc), "\\%c", *c);
			else if ((unsigned char)*c < 0x20 || *c == 0x7f)
				snprintf(esc, sizeof(esc), "\\u%04x", (unsigned char)*c);
			else
				snprintf(esc, sizeof(esc), "%c", *c);
			strncat(path, esc, sizeof(path) - strlen(path) - 2);
		}
		strcat(path, "\"");
		if (toml_find(toml_root(doc), path))
			continue;
		switch (bench_splitmix64(rng) % 7) {
		case 0: toml_set_int(doc, path, (int64_t)bench_splitmix64(rng), NULL); break;
		case 1:
			do {
				uint64_t bits = bench_splitmix64(rng);
				memcpy(&f, &bits, sizeof(f));
			} while (isnan(f));
			toml_set_float(doc, path, f, NULL);
			break;
		case 2: toml_set_bool(doc, path, (int)(bench_splitmix64(rng) & 1), NULL); break;
		case 3:
			random_string(rng, str, sizeof(str));
			toml_set_string(doc, path, str, NULL);
			break;
		case 4:
			if (toml_set_array(doc, path, &arr, NULL) == 0)
				for (int i = (int)(bench_splitmix64(rng) % 4); i > 0; i--) {
					random_string(rng, str, sizeof(str));
					toml_array_push_string(arr, str);
					toml_array_push_float(arr, (double)(int64_t)bench_splitmix64(rng) / 7.0);
				}
			break;
		case 5: toml_set_value(doc, path, "{ a = [1, 2], b.c = 'x', d = {} }", "gen", NULL); break;
		default:
			if (depth < 4)
				random_fill(rng, doc, path, depth + 1);
			else
				toml_set_int(doc, path, 0, NULL);
		}
	}
}

PT_TEST(round_trip_random)
{
	uint64_t rng = PT_SEED();
	for (int iter = 0; iter < 300; iter++) {
		toml_doc *doc;
		PT_REQUIRE(toml_doc_new(&doc, "random") == 0);
		random_fill(&rng, doc, "", 0);
		PT_CHECKF(round_trips(doc), "seed 0x%" PRIx64 " iteration %d", PT_SEED(), iter);
		toml_free(doc);
		if (pt_failed_now)
			return;
	}
}

PT_TEST(file_round_trip)
{
	char dir[] = "/tmp/test_toml.XXXXXX", path[64], path2[64];
	toml_error err;
	toml_doc *doc = NULL, *back = NULL;
	PT_REQUIRE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/workload.toml", dir);
	snprintf(path2, sizeof(path2), "%s/resolved-workload.toml", dir);
	FILE *f = fopen(path, "w");
	PT_REQUIRE(f != NULL);
	fputs(every_feature, f);
	fclose(f);
	PT_CHECKF(toml_parse_file(&doc, path, &err) == 0, "%s", err.text);
	PT_CHECK(doc && strcmp(toml_doc_name(doc), path) == 0);
	PT_CHECK(doc && toml_write_file(doc, path2, "resolved", &err) == 0);
	PT_CHECKF(toml_parse_file(&back, path2, &err) == 0, "%s", err.text);
	PT_CHECK(doc && back && toml_equal(toml_root(doc), toml_root(back)));
	PT_CHECK(strcmp(toml_node_source(toml_find(toml_root(back), "seed")), path2) == 0);
	PT_CHECK(doc && toml_write_file(doc, "/nonexistent/y.toml", NULL, &err) == TOML_ERR &&
	         strstr(err.text, "/nonexistent/y.toml: cannot create: ") == err.text);
	toml_free(doc);
	toml_free(back);
	/* A file that is not there; an error in a file names it. */
	PT_CHECK(toml_parse_file(&doc, "/nonexistent/x.toml", &err) == TOML_ERR && doc == NULL);
	PT_CHECKF(strstr(err.text, "/nonexistent/x.toml: cannot open: ") == err.text, "%s", err.text);
	f = fopen(path, "w");
	PT_REQUIRE(f != NULL);
	fputs("[service]\nrecords = 1\n\n[service]\n", f);
	fclose(f);
	PT_CHECK(toml_parse_file(&doc, path, &err) == TOML_ERR);
	PT_CHECK(strcmp(err.file, path) == 0 && err.line == 4 && err.col == 1);
	unlink(path);
	unlink(path2);
	rmdir(dir);
}

/* Every prefix of a valid document parses or fails cleanly (no crash, no leak; under ASan). */
PT_TEST(prefixes_never_crash)
{
	size_t len = strlen(every_feature);
	for (size_t n = 0; n <= len; n++) {
		toml_doc *doc = NULL;
		toml_error err;
		int rc = toml_parse_buffer(&doc, every_feature, n, "prefix", &err);
		PT_CHECK(rc == TOML_OK || (rc == TOML_ERR && err.line >= 1 && doc == NULL));
		toml_free(doc);
	}
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
