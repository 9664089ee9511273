/*
 * workload.c - the workload file, the harness's contract (docs/harness.md, "The workload file"):
 *
 *   schema = 1                      required; the only schema this harness reads
 *   seed = 42
 *   node_size = 4096                the node size of every prolly store the run creates (1024,
 *                                   2048, 4096 or 8192); written to the resolved file only when
 *                                   not 4096
 *   [service]                       enabled, records, value_bytes, clients, pool_sizes, tenants,
 *                                   hot_roots, hot_root_share, warmup_ms, duration_ms,
 *                                   operation_timeout_ms, multi_read_keys, commit_keys,
 *                                   retained_versions, cas_retries, adapter_batch_items,
 *                                   access ("client", "sql" or a list of both)
 *   [service.operation_mix]         point_read, multi_read, commit, diff, merge (percent,
 *                                   total 100)
 *   [scale]                         enabled, sizes, value_bytes, runs, changes (integer or "auto"),
 *                                   read_samples, concurrency, operations, patterns, min_free_gb
 *   [NAME]                          a suite's own section, from its key list (h_suite.keys;
 *                                   sections.c reads, checks and writes it)
 *   [regression]                    max_throughput_loss_percent, max_p99_increase_percent,
 *                                   max_conflict_rate, max_error_rate,
 *                                   max_pg_statements_per_operation, minimum_percentile_samples,
 *                                   max_relative_qps_loss_percent
 *
 * Any key but schema may be left out: it gets the default profile's value (set_defaults). A
 * missing [service.operation_mix] table gets the default mix; a present one, even partial, must
 * total 100 (its missing keys count 0). An unknown key (with a "did you mean"), a value of the
 * wrong type, or an impossible value fails, naming file, line and key (toml_error).
 *
 * The two documents of a hw_workload (harness.h has no spare field, so they are used thus):
 *   given     the file as parsed; never changed.
 *   resolved  until hw_workload_resolve: the working document, the file parsed a second time
 *             (so its errors keep the file's lines) with the command-line overrides of
 *             hw_workload_set applied; w->hash[0] == 0 marks this state.
 *             After hw_workload_resolve: the canonical document, rebuilt from the validated
 *             values in a fixed key order with every default filled in (lists of names in the
 *             order of the hw_*_names tables, floats as floats), so its text depends on the
 *             values only, not on the file's order, comments or spelling ("auto", 1 vs 1.0).
 *             w->hash is the SHA-256 of toml_to_string() of that document without its
 *             [regression] table (limits judge results; they do not change what is measured,
 *             so re-judging a result directory with other limits is not "another run"). A
 *             later hw_workload_set edits this document (it is a valid workload) and clears the
 *             hash until the next resolve.
 * Without hw_workload_load, hw_workload_set and hw_workload_resolve start from an empty document
 * ("schema = 1" only), that is the defaults.
 */
#include "workload_int.h"

#include <inttypes.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const hw_access_names[HW_N_ACCESS] = {"client", "sql"};
const char *const hw_service_op_names[HW_N_SERVICE_OPS] = {"point_read", "multi_read", "commit",
                                                           "diff", "merge"};
const char *const hw_scale_op_names[HW_N_SCALE_OPS] = {"put",
                                                       "batch",
                                                       "get_cold",
                                                       "get_warm",
                                                       "query",
                                                       "concurrent_query",
                                                       "scan",
                                                       "full_scan",
                                                       "diff",
                                                       "merge",
                                                       "build",
                                                       "full_scan_warm",
                                                       "get_cold_start",
                                                       "put_nosync",
                                                       "count",
                                                       "sync",
                                                       "proof"};
const char *const hw_pattern_names[HW_N_PATTERNS] = {"append", "random", "clustered",
                                                     "random_insert", "random_delete"};

static const char *const root_keys[] = {"schema", "seed",       "node_size", "service",
                                        "scale",  "regression", NULL};
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
                                           "multi_read_keys",
                                           "commit_keys",
                                           "retained_versions",
                                           "cas_retries",
                                           "adapter_batch_items",
                                           "operation_mix",
                                           "access",
                                           NULL};
static const char *const mix_keys[] = {"point_read", "multi_read", "commit", "diff", "merge", NULL};
static const char *const scale_keys[] = {"enabled",  "sizes",        "value_bytes", "runs",
                                         "changes",  "read_samples", "concurrency", "operations",
                                         "patterns", "min_free_gb",  NULL};
static const char *const regression_keys[] = {"max_throughput_loss_percent",
                                              "max_p99_increase_percent",
                                              "max_conflict_rate",
                                              "max_error_rate",
                                              "max_pg_statements_per_operation",
                                              "minimum_percentile_samples",
                                              "max_relative_qps_loss_percent",
                                              NULL};

/* The library's largest value: a larger one was accepted here and failed the run once started. */
#define MAX_VALUE_BYTES PROLLY_MAX_VALUE
#define MAX_COUNT INT64_C(10000000000) /* records, sizes, samples: 10 billion */
/* Most bytes a suite may hold at once for what the settings multiply: the service's clients'
 * keys, values and edits, and its tenants' side-commit keys; a scale cell's read samples. 1 GiB
 * keeps them, and the copies the library makes of them (a get_many's result, the PostgreSQL
 * key array), within the memory of the machines this runs on; the default profile needs
 * 21 MiB at most. Past it the allocation came (and was touched) once the fixture was built. */
#define MAX_HELD_BYTES (UINT64_C(1) << 30)
/* A scale sample: a key (24 bytes) and a slice (16) beside its expected value. */
#define SAMPLE_OVERHEAD 40

/* Of two keys an impossible combination involves, the one to point at: a, if the file has it. */
static const char *either(const toml_doc *d, const char *a, const char *b)
{
	return toml_find(toml_root(d), a) ? a : b;
}

/* ---- defaults ----------------------------------------------------------------------------- */

/* The default profile (bench/workloads/default.toml spells it out), and what
 * a key left out of the file gets. */
static void set_defaults(hw_workload *v)
{
	static const uint32_t clients[] = {1, 8, 32, 64}, pools[] = {8, 32};
	static const uint32_t mix[HW_N_SERVICE_OPS] = {45, 15, 25, 10, 5};
	hw_service *s = &v->service;
	hw_scale *c = &v->scale;
	hw_regression *g = &v->regression;

	v->schema = HW_SCHEMA;
	v->seed = 42;
	v->node_size = PROLLY_NODE_SIZE_DEFAULT;

	s->enabled = 1;
	s->records = 1000000;
	s->value_bytes = 256;
	memcpy(s->clients, clients, sizeof(clients));
	s->n_clients = 4;
	memcpy(s->pool_sizes, pools, sizeof(pools));
	s->n_pool_sizes = 2;
	s->tenants = 64;
	s->hot_roots = 1;
	s->hot_root_share = 0.20;
	s->warmup_ms = 15000;
	s->duration_ms = 60000;
	s->operation_timeout_ms = 5000;
	s->multi_read_keys = 8;
	s->commit_keys = 4;
	s->retained_versions = 8;
	s->cas_retries = 3;
	s->adapter_batch_items = 1024;
	memcpy(s->mix, mix, sizeof(mix));
	s->access = 1u << HW_ACCESS_CLIENT;

	c->enabled = 1;
	c->sizes[0] = 1000000;
	c->sizes[1] = 10000000;
	c->n_sizes = 2;
	c->value_bytes = 27;
	c->runs = 3;
	c->changes = 0; /* auto */
	c->read_samples = 10000;
	c->concurrency = 32;
	c->operations = HW_DEFAULT_SCALE_OPS;
	c->patterns = 1u << HW_P_APPEND | 1u << HW_P_RANDOM | 1u << HW_P_CLUSTERED;
	c->min_free_gb = 2.0;

	g->max_throughput_loss_percent = 10.0;
	g->max_p99_increase_percent = 25.0;
	g->max_conflict_rate = 0.5;
	g->max_error_rate = 0.01;
	g->max_pg_statements_per_operation = 6.0;
	g->minimum_percentile_samples = 100;
	g->max_relative_qps_loss_percent = 10.0;
}

/* ---- reading a whole document ------------------------------------------------------------- */

static int read_service(hw_workload *v, const toml_doc *d, toml_error *err)
{
	hw_service *s = &v->service;
	const toml_node *t;
	int rc = hw__get_table(d, "service", service_keys, &t, err);
	if (rc)
		return rc < 0 ? -1 : 0;
	if (hw__get_bool(d, "service.enabled", &s->enabled, err) ||
	    hw__get_u64(d, "service.records", 16, MAX_COUNT, &s->records, err) ||
	    hw__get_u32(d, "service.value_bytes", HW_SERVICE_VALUE_MIN, MAX_VALUE_BYTES,
	                &s->value_bytes, err) ||
	    hw__get_u32_list(d, "service.clients", 4096, s->clients, &s->n_clients, err) ||
	    hw__get_u32_list(d, "service.pool_sizes", 1024, s->pool_sizes, &s->n_pool_sizes, err) ||
	    hw__get_u32(d, "service.tenants", 1, 1000000, &s->tenants, err) ||
	    hw__get_u32(d, "service.hot_roots", 0, 4096, &s->hot_roots, err) ||
	    hw__get_float(d, "service.hot_root_share", 0.0, 1.0, &s->hot_root_share, err) ||
	    hw__get_u64(d, "service.warmup_ms", 0, 86400000, &s->warmup_ms, err) ||
	    hw__get_u64(d, "service.duration_ms", 1, 7 * INT64_C(86400000), &s->duration_ms, err) ||
	    hw__get_u64(d, "service.operation_timeout_ms", 1, 3600000, &s->operation_timeout_ms, err) ||
	    hw__get_u32(d, "service.multi_read_keys", 1, 1000000, &s->multi_read_keys, err) ||
	    hw__get_u32(d, "service.commit_keys", 1, 1000000, &s->commit_keys, err) ||
	    hw__get_u32(d, "service.retained_versions", 1, 4096, &s->retained_versions, err) ||
	    hw__get_u32(d, "service.cas_retries", 0, 1000, &s->cas_retries, err) ||
	    hw__get_u32(d, "service.adapter_batch_items", 1, 1000000, &s->adapter_batch_items, err))
		return -1;

	const toml_node *mix;
	rc = hw__get_table(d, "service.operation_mix", mix_keys, &mix, err);
	if (rc < 0)
		return -1;
	if (rc == TOML_OK) {
		char path[64];
		unsigned total = 0;
		for (int i = 0; i < HW_N_SERVICE_OPS; i++) {
			snprintf(path, sizeof(path), "service.operation_mix.%s", hw_service_op_names[i]);
			s->mix[i] = 0;
			if (hw__get_u32(d, path, 0, 100, &s->mix[i], err))
				return -1;
			total += s->mix[i];
		}
		if (total != 100)
			return toml_error_at(
			    err, mix, "the percentages total %u, not 100 (a key left out counts 0)", total);
	}

	/* access: one mode ("client", "sql") or a list of them (the cells of each, side by side). */
	const toml_node *an = toml_find(toml_root(d), "service.access");
	if (an && toml_node_type(an) == TOML_ARRAY) {
		if (hw__get_name_list(d, "service.access", hw_access_names, HW_N_ACCESS, "access",
		                      &s->access, err))
			return -1;
	} else if (an) {
		const char *acc;
		if (toml_node_string(an, &acc, NULL, err))
			return -1;
		int k = hw__name_index(hw_access_names, HW_N_ACCESS, acc);
		if (k < 0)
			return toml_error_at(err, an,
			                     "unknown access '%.64s' (expected \"client\", \"sql\" or a "
			                     "list of them)",
			                     acc);
		s->access = 1u << k;
	}
	if (s->commit_keys > s->records)
		return hw__fail_at(err, d, either(d, "service.commit_keys", "service.records"),
		                   "commit_keys (%" PRIu32 ") is more than records (%" PRIu64 ")",
		                   s->commit_keys, s->records);
	if (s->multi_read_keys > s->records)
		return hw__fail_at(err, d, either(d, "service.multi_read_keys", "service.records"),
		                   "multi_read_keys (%" PRIu32 ") is more than records (%" PRIu64 ")",
		                   s->multi_read_keys, s->records);
	/* Each client: commit_keys values and edits, multi_read_keys slices and a get_many's
	 * values (64 bytes: a key, a slice and an edit); the fixture: two sides of side keys per
	 * tenant (svc_fixture_init). At most 4096 x 2e6 x 65600 and 1e6 x 2e6 x 16: no overflow. */
	uint32_t most = 1;
	for (int i = 0; i < s->n_clients; i++)
		if (s->clients[i] > most)
			most = s->clients[i];
	uint64_t keys = (uint64_t)s->commit_keys + s->multi_read_keys;
	uint64_t held = most * keys * ((uint64_t)s->value_bytes + 64);
	if (held > MAX_HELD_BYTES)
		return hw__fail_at(err, d,
		                   either(d, "service.commit_keys",
		                          either(d, "service.multi_read_keys",
		                                 either(d, "service.value_bytes", "service.clients"))),
		                   "%" PRIu32 " clients x (%" PRIu32 " + %" PRIu32 " keys) x (%" PRIu32
		                   " + 64 bytes) is %" PRIu64 " MiB (at most %" PRIu64
		                   ": what the clients hold at once)",
		                   most, s->commit_keys, s->multi_read_keys, s->value_bytes, held >> 20,
		                   MAX_HELD_BYTES >> 20);
	uint64_t side = s->commit_keys < s->records / 2 ? s->commit_keys : s->records / 2;
	held = (uint64_t)s->tenants * 2 * side * 8;
	if (held > MAX_HELD_BYTES)
		return hw__fail_at(err, d, either(d, "service.tenants", "service.commit_keys"),
		                   "%" PRIu32 " tenants x 2 sides x %" PRIu64 " keys x 8 bytes is %" PRIu64
		                   " MiB (at most %" PRIu64 ": the fixture's side-commit keys)",
		                   s->tenants, side, held >> 20, MAX_HELD_BYTES >> 20);
	/* The memory store keeps the base tree in this process (as for the scale suite below). */
	uint64_t tree = s->records * HW_SERVICE_RECORD_BYTES(s->value_bytes);
	if (v->mem_store_ram_service && s->enabled && tree > v->mem_store_ram_service)
		return hw__fail_at(err, d, either(d, "service.records", "service.value_bytes"),
		                   "%" PRIu64 " records of %" PRIu64 " bytes (key, value, node) is %" PRIu64
		                   " MiB on the memory store, more than this process may use (%s "
		                   "%" PRIu64 " MiB): use fewer records, or the lmdb or postgres store",
		                   s->records, HW_SERVICE_RECORD_BYTES(s->value_bytes), tree >> 20,
		                   v->mem_store_ram_source, v->mem_store_ram_service >> 20);
	if (s->hot_root_share > 0 && s->hot_roots == 0)
		return hw__fail_at(
		    err, d, either(d, "service.hot_roots", "service.hot_root_share"),
		    "hot_root_share is %g but hot_roots is 0 (hot operations need at least one "
		    "hot root; set hot_root_share = 0 for none)",
		    s->hot_root_share);
	return 0;
}

static int read_scale(hw_workload *v, const toml_doc *d, toml_error *err)
{
	hw_scale *c = &v->scale;
	const toml_node *t;
	int rc = hw__get_table(d, "scale", scale_keys, &t, err);
	if (rc)
		return rc < 0 ? -1 : 0;
	if (hw__get_bool(d, "scale.enabled", &c->enabled, err) ||
	    hw__get_int_list(d, "scale.sizes", 16, MAX_COUNT, c->sizes, &c->n_sizes, err) ||
	    hw__get_u32(d, "scale.value_bytes", 1, MAX_VALUE_BYTES, &c->value_bytes, err) ||
	    hw__get_u32(d, "scale.runs", 1, 64, &c->runs, err) ||
	    hw__get_u64(d, "scale.read_samples", 1, MAX_COUNT, &c->read_samples, err) ||
	    hw__get_u32(d, "scale.concurrency", 1, 1024, &c->concurrency, err) ||
	    hw__get_name_list(d, "scale.operations", hw_scale_op_names, HW_N_SCALE_OPS, "operation",
	                      &c->operations, err) ||
	    hw__get_name_list(d, "scale.patterns", hw_pattern_names, HW_N_PATTERNS, "pattern",
	                      &c->patterns, err) ||
	    hw__get_float(d, "scale.min_free_gb", 0.0, 1e6, &c->min_free_gb, err))
		return -1;

	/* changes: an integer, or "auto" (0 in the struct) */
	const toml_node *ch = toml_child(t, "changes");
	const char *str;
	int64_t x;
	if (toml_node_type(ch) == TOML_STRING) {
		toml_node_string(ch, &str, NULL, NULL);
		if (strcmp(str, "auto") != 0)
			return toml_error_at(err, ch, "expected an integer or \"auto\", found \"%.64s\"", str);
		c->changes = 0;
	} else if (toml_node_type(ch) == TOML_INT) {
		toml_node_int(ch, &x, NULL);
		if (x < 1 || x > 1000000000)
			return toml_error_at(
			    err, ch, "%" PRId64 " is out of range (expected 1 to 1000000000, or \"auto\")", x);
		c->changes = (uint64_t)x;
	} else if (ch) {
		return toml_error_at(err, ch, "expected an integer or \"auto\", found %s",
		                     toml_type_name(toml_node_type(ch)));
	}
	/* At most 1e10 x (65536 + 40) x 1024 < 2^63: the product cannot overflow. */
	uint64_t one = (uint64_t)c->value_bytes + SAMPLE_OVERHEAD;
	uint64_t threads = (c->operations & 1u << HW_S_CONCURRENT_QUERY) ? (uint64_t)c->concurrency : 1;
	uint64_t bytes = c->read_samples * one * threads;
	if (bytes > MAX_HELD_BYTES) {
		char many[64] = "";
		if (threads > 1)
			snprintf(many, sizeof(many), " x %" PRIu64 " threads of concurrent_query", threads);
		return hw__fail_at(
		    err, d,
		    either(d, "scale.read_samples", either(d, "scale.value_bytes", "scale.concurrency")),
		    "%" PRIu64 " samples of %" PRIu64 " bytes%s is %" PRIu64 " MiB (at most %" PRIu64
		    ": the read samples a cell holds at once)",
		    c->read_samples, one, many, bytes >> 20, MAX_HELD_BYTES >> 20);
	}
	/* The memory store keeps every node in this process: a size whose base tree alone exceeds
	 * the machine's memory was built until the OOM killer came. At most 1e10 x (65536 + 40). */
	for (int i = 0; v->mem_store_ram && c->enabled && i < c->n_sizes; i++) {
		uint64_t tree = c->sizes[i] * HW_SCALE_RECORD_BYTES(c->value_bytes);
		if (tree <= v->mem_store_ram)
			continue;
		char msg[320];
		snprintf(msg, sizeof(msg),
		         "%" PRIu64 " records of %" PRIu64 " bytes (key, value, node) is %" PRIu64
		         " MiB on the memory store, more than this process may use (%s %" PRIu64
		         " MiB): use a smaller size, or the lmdb or postgres store",
		         c->sizes[i], HW_SCALE_RECORD_BYTES(c->value_bytes), tree >> 20,
		         v->mem_store_ram_source, v->mem_store_ram >> 20);
		const toml_node *at = toml_at(toml_find(toml_root(d), "scale.sizes"), (size_t)i);
		return at ? toml_error_at(err, at, "%s", msg)
		          : hw__fail_at(err, d, "scale.value_bytes", "%s", msg);
	}
	if (c->changes) {
		uint64_t smallest = c->sizes[0];
		for (int i = 1; i < c->n_sizes; i++)
			if (c->sizes[i] < smallest)
				smallest = c->sizes[i];
		if (c->changes > smallest)
			return hw__fail_at(err, d, ch ? "scale.changes" : "scale.sizes",
			                   "changes (%" PRIu64 ") is more than the smallest size (%" PRIu64 ")",
			                   c->changes, smallest);
	}
	return 0;
}

static int read_regression(hw_workload *v, const toml_doc *d, toml_error *err)
{
	hw_regression *g = &v->regression;
	const toml_node *t;
	int rc = hw__get_table(d, "regression", regression_keys, &t, err);
	if (rc)
		return rc < 0 ? -1 : 0;
	if (hw__get_float(d, "regression.max_throughput_loss_percent", 0.0, 100.0,
	                  &g->max_throughput_loss_percent, err) ||
	    hw__get_float(d, "regression.max_p99_increase_percent", 0.0, 1e6,
	                  &g->max_p99_increase_percent, err) ||
	    hw__get_float(d, "regression.max_conflict_rate", 0.0, 1.0, &g->max_conflict_rate, err) ||
	    hw__get_float(d, "regression.max_error_rate", 0.0, 1.0, &g->max_error_rate, err) ||
	    hw__get_float(d, "regression.max_pg_statements_per_operation", 0.0, 1e6,
	                  &g->max_pg_statements_per_operation, err) ||
	    hw__get_u64(d, "regression.minimum_percentile_samples", 1, MAX_COUNT,
	                &g->minimum_percentile_samples, err) ||
	    hw__get_float(d, "regression.max_relative_qps_loss_percent", 0.0, 100.0,
	                  &g->max_relative_qps_loss_percent, err))
		return -1;
	return 0;
}

/* Validates doc and fills v (defaults first, then the document's values). */
static int read_doc(hw_workload *v, const toml_doc *d, toml_error *err)
{
	int64_t schema = 0, seed = 42;
	const char *roots[sizeof(root_keys) / sizeof(root_keys[0]) + HW_MAX_SUITES];
	int nroots = 0;
	set_defaults(v);
	for (; root_keys[nroots]; nroots++)
		roots[nroots] = root_keys[nroots];
	hw__section_names(v, roots, &nroots, (int)(sizeof(roots) / sizeof(roots[0])) - 1);
	roots[nroots] = NULL;
	if (toml_check_keys(toml_root(d), roots, err))
		return -1;
	int rc = toml_get_int(d, "schema", &schema, err);
	if (rc == TOML_ERR)
		return -1;
	if (rc == TOML_MISSING)
		return hw__errorf(err, toml_doc_name(d), "schema",
		                  "is missing (a workload file starts with schema = %d)", HW_SCHEMA);
	if (schema != HW_SCHEMA)
		return hw__fail_at(err, d, "schema",
		                   "schema %" PRId64 " is not supported (this harness reads schema %d)",
		                   schema, HW_SCHEMA);
	if (hw__get_i64(d, "seed", 0, INT64_MAX, &seed, err))
		return -1;
	v->seed = (uint64_t)seed;
	int64_t node_size = PROLLY_NODE_SIZE_DEFAULT;
	if (hw__get_i64(d, "node_size", PROLLY_NODE_SIZE_MIN, PROLLY_NODE_SIZE_MAX, &node_size, err))
		return -1;
	if (!prolly_node_size_valid((unsigned)node_size))
		return hw__fail_at(err, d, "node_size",
		                   "node_size %" PRId64 " is not a power of two (1024, 2048, 4096 or 8192)",
		                   node_size);
	v->node_size = (unsigned)node_size;
	if (read_service(v, d, err) || read_scale(v, d, err) || read_regression(v, d, err) ||
	    hw__sections_read(v, d, err))
		return -1;
	return 0;
}

/* ---- the canonical document --------------------------------------------------------------- */

static int set_u32_list(toml_doc *d, const char *path, const uint32_t *v, int n)
{
	toml_node *a;
	if (toml_set_array(d, path, &a, NULL))
		return -1;
	for (int i = 0; i < n; i++)
		if (toml_array_push_int(a, v[i]))
			return -1;
	return 0;
}

static int set_names(toml_doc *d, const char *path, const char *const *names, int n, unsigned mask)
{
	toml_node *a;
	if (toml_set_array(d, path, &a, NULL))
		return -1;
	for (int i = 0; i < n; i++)
		if ((mask & 1u << i) && toml_array_push_string(a, names[i]))
			return -1;
	return 0;
}

/* Builds the resolved document from validated values, every key in a fixed order. */
static int build_doc(toml_doc **out, const hw_workload *v, const char *name, toml_error *err)
{
	const hw_service *s = &v->service;
	const hw_scale *c = &v->scale;
	const hw_regression *g = &v->regression;
	toml_doc *d = NULL;
	toml_node *a;
	char path[64];
	int rc = -1;
	*out = NULL;
	if (toml_doc_new(&d, name))
		goto cleanup;
	if (toml_set_int(d, "schema", v->schema, NULL) ||
	    toml_set_int(d, "seed", (int64_t)v->seed, NULL) ||
	    (v->node_size != PROLLY_NODE_SIZE_DEFAULT &&
	     toml_set_int(d, "node_size", (int64_t)v->node_size, NULL)) ||
	    toml_set_bool(d, "service.enabled", s->enabled, NULL) ||
	    toml_set_int(d, "service.records", (int64_t)s->records, NULL) ||
	    toml_set_int(d, "service.value_bytes", s->value_bytes, NULL) ||
	    set_u32_list(d, "service.clients", s->clients, s->n_clients) ||
	    set_u32_list(d, "service.pool_sizes", s->pool_sizes, s->n_pool_sizes) ||
	    toml_set_int(d, "service.tenants", s->tenants, NULL) ||
	    toml_set_int(d, "service.hot_roots", s->hot_roots, NULL) ||
	    toml_set_float(d, "service.hot_root_share", s->hot_root_share, NULL) ||
	    toml_set_int(d, "service.warmup_ms", (int64_t)s->warmup_ms, NULL) ||
	    toml_set_int(d, "service.duration_ms", (int64_t)s->duration_ms, NULL) ||
	    toml_set_int(d, "service.operation_timeout_ms", (int64_t)s->operation_timeout_ms, NULL) ||
	    toml_set_int(d, "service.multi_read_keys", s->multi_read_keys, NULL) ||
	    toml_set_int(d, "service.commit_keys", s->commit_keys, NULL) ||
	    toml_set_int(d, "service.retained_versions", s->retained_versions, NULL) ||
	    toml_set_int(d, "service.cas_retries", s->cas_retries, NULL) ||
	    toml_set_int(d, "service.adapter_batch_items", s->adapter_batch_items, NULL))
		goto cleanup;
	/* Written only when not the default, so the resolved files of client runs stay as they were. */
	if (s->access == 1u << HW_ACCESS_SQL) {
		if (toml_set_string(d, "service.access", "sql", NULL))
			goto cleanup;
	} else if (s->access != 1u << HW_ACCESS_CLIENT &&
	           set_names(d, "service.access", hw_access_names, HW_N_ACCESS, s->access)) {
		goto cleanup;
	}
	for (int i = 0; i < HW_N_SERVICE_OPS; i++) {
		snprintf(path, sizeof(path), "service.operation_mix.%s", hw_service_op_names[i]);
		if (toml_set_int(d, path, s->mix[i], NULL))
			goto cleanup;
	}
	if (toml_set_bool(d, "scale.enabled", c->enabled, NULL) ||
	    toml_set_array(d, "scale.sizes", &a, NULL))
		goto cleanup;
	for (int i = 0; i < c->n_sizes; i++)
		if (toml_array_push_int(a, (int64_t)c->sizes[i]))
			goto cleanup;
	if (toml_set_int(d, "scale.value_bytes", c->value_bytes, NULL) ||
	    toml_set_int(d, "scale.runs", c->runs, NULL) ||
	    (c->changes ? toml_set_int(d, "scale.changes", (int64_t)c->changes, NULL)
	                : toml_set_string(d, "scale.changes", "auto", NULL)) ||
	    toml_set_int(d, "scale.read_samples", (int64_t)c->read_samples, NULL) ||
	    toml_set_int(d, "scale.concurrency", c->concurrency, NULL) ||
	    set_names(d, "scale.operations", hw_scale_op_names, HW_N_SCALE_OPS, c->operations) ||
	    set_names(d, "scale.patterns", hw_pattern_names, HW_N_PATTERNS, c->patterns) ||
	    toml_set_float(d, "scale.min_free_gb", c->min_free_gb, NULL) || hw__sections_build(d, v) ||
	    toml_set_float(d, "regression.max_throughput_loss_percent", g->max_throughput_loss_percent,
	                   NULL) ||
	    toml_set_float(d, "regression.max_p99_increase_percent", g->max_p99_increase_percent,
	                   NULL) ||
	    toml_set_float(d, "regression.max_conflict_rate", g->max_conflict_rate, NULL) ||
	    toml_set_float(d, "regression.max_error_rate", g->max_error_rate, NULL) ||
	    toml_set_float(d, "regression.max_pg_statements_per_operation",
	                   g->max_pg_statements_per_operation, NULL) ||
	    toml_set_int(d, "regression.minimum_percentile_samples",
	                 (int64_t)g->minimum_percentile_samples, NULL) ||
	    toml_set_float(d, "regression.max_relative_qps_loss_percent",
	                   g->max_relative_qps_loss_percent, NULL))
		goto cleanup;
	*out = d;
	d = NULL;
	rc = 0;
cleanup:
	toml_free(d);
	if (rc)
		hw__errorf(err, name, "", "out of memory building the resolved workload");
	return rc;
}

static int sha256_hex(char out[65], const char *s)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	if (!EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL) || n != 32)
		return -1;
	for (unsigned i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/* ---- the API ------------------------------------------------------------------------------ */

int hw_workload_load(hw_workload *w, const char *path, toml_error *err)
{
	return hw_workload_load_suites(w, path, NULL, err);
}

int hw_workload_load_suites(hw_workload *w, const char *path, const struct h_suite *const *suites,
                            toml_error *err)
{
	hw_workload v;
	memset(w, 0, sizeof(*w));
	memset(&v, 0, sizeof(v));
	w->suites = v.suites = suites;
	if (strlen(path) >= sizeof(w->path))
		return hw__errorf(err, "", "", "the workload path is too long (%zu bytes)", strlen(path));
	snprintf(w->path, sizeof(w->path), "%s", path);
	if (toml_parse_file(&w->given, path, err) || toml_parse_file(&w->resolved, path, err) ||
	    read_doc(&v, w->resolved, err)) {
		hw__sections_free(&v);
		hw_workload_free(w);
		w->suites = suites;
		return -1;
	}
	hw__sections_free(&v); /* validated; filled by hw_workload_resolve */
	w->schema = v.schema;
	w->seed = v.seed;
	w->node_size = v.node_size;
	w->service = v.service;
	w->scale = v.scale;
	w->regression = v.regression;
	return 0;
}

/* The working document: the one loaded, or a new one holding only "schema = 1". */
static int working_doc(hw_workload *w, toml_error *err)
{
	if (w->resolved)
		return 0;
	if (toml_doc_new(&w->resolved, w->path[0] ? w->path : "<defaults>") ||
	    toml_set_int(w->resolved, "schema", HW_SCHEMA, err)) {
		toml_free(w->resolved);
		w->resolved = NULL;
		return hw__errorf(err, w->path, "", "out of memory");
	}
	w->hash[0] = 0;
	return 0;
}

/* A settable key: a value (not a table) the file may hold. */
static int known_key(const hw_workload *w, const char *key)
{
	const char *const *list = NULL;
	const char *rest = NULL;
	if (strcmp(key, "schema") == 0 || strcmp(key, "seed") == 0 || strcmp(key, "node_size") == 0 ||
	    hw__section_key(w, key))
		return 1;
	if (strncmp(key, "service.operation_mix.", 22) == 0)
		list = mix_keys, rest = key + 22;
	else if (strncmp(key, "service.", 8) == 0)
		list = service_keys, rest = key + 8;
	else if (strncmp(key, "scale.", 6) == 0)
		list = scale_keys, rest = key + 6;
	else if (strncmp(key, "regression.", 11) == 0)
		list = regression_keys, rest = key + 11;
	if (!list || strcmp(rest, "operation_mix") == 0)
		return 0;
	for (; *list; list++)
		if (strcmp(*list, rest) == 0)
			return 1;
	return 0;
}

/* The error for an unknown key: the file's own key check gives "did you mean". */
static int unknown_key(const hw_workload *w, const char *key, const char *text, const char *source,
                       toml_error *err)
{
	toml_doc *tmp = NULL;
	const toml_node *t;
	int found = 0;
	if (toml_doc_new(&tmp, source) == TOML_OK &&
	    toml_set_value(tmp, key, text, source, NULL) == TOML_OK) {
		const char *roots[sizeof(root_keys) / sizeof(root_keys[0]) + HW_MAX_SUITES];
		int nroots = 0;
		for (; root_keys[nroots]; nroots++)
			roots[nroots] = root_keys[nroots];
		hw__section_names(w, roots, &nroots, (int)(sizeof(roots) / sizeof(roots[0])) - 1);
		roots[nroots] = NULL;
		const char *const *const lists[] = {roots, service_keys, mix_keys, scale_keys,
		                                    regression_keys};
		static const char *const tables[] = {NULL, "service", "service.operation_mix", "scale",
		                                     "regression"};
		found = hw__section_unknown(w, tmp, err);
		for (int i = 0; i < 5 && !found; i++) {
			t = tables[i] ? toml_find(toml_root(tmp), tables[i]) : toml_root(tmp);
			found = toml_node_type(t) == TOML_TABLE && toml_check_keys(t, lists[i], err);
		}
	}
	toml_free(tmp);
	if (!found)
		hw__errorf(err, source, key,
		           "not a workload setting (an override sets one value, such as service.clients or "
		           "service.operation_mix.commit)");
	return -1;
}

int hw_workload_set(hw_workload *w, const char *key, const char *text, const char *source,
                    toml_error *err)
{
	if (!source)
		source = key;
	if (!known_key(w, key))
		return unknown_key(w, key, text, source, err);
	if (working_doc(w, err))
		return -1;
	if (toml_set_value(w->resolved, key, text, source, err))
		return -1;
	w->hash[0] = 0;
	return 0;
}

int hw_workload_resolve(hw_workload *w, toml_error *err)
{
	hw_workload v;
	toml_doc *out = NULL, *hashed = NULL;
	char *text = NULL;
	int rc = -1;
	memset(&v, 0, sizeof(v));
	v.suites = w->suites;
	v.mem_store_ram = w->mem_store_ram;
	v.mem_store_ram_service = w->mem_store_ram_service;
	v.mem_store_ram_source = w->mem_store_ram_source ? w->mem_store_ram_source : "MemTotal";
	if (working_doc(w, err) || read_doc(&v, w->resolved, err))
		goto cleanup;
	if (build_doc(&out, &v, toml_doc_name(w->resolved), err))
		goto cleanup;
	/* The hash covers what is measured: everything but [regression], whose limits only judge
	 * results, so a directory can be re-judged with other limits without being refused. */
	if (build_doc(&hashed, &v, toml_doc_name(w->resolved), err))
		goto cleanup;
	toml_remove(hashed, "regression", NULL);
	if (!(text = toml_to_string(hashed, NULL)) || sha256_hex(v.hash, text)) {
		hw__errorf(err, w->path, "", "cannot hash the resolved workload");
		goto cleanup;
	}
	toml_free(w->resolved);
	w->resolved = out;
	out = NULL;
	w->schema = v.schema;
	w->seed = v.seed;
	w->node_size = v.node_size;
	w->service = v.service;
	w->scale = v.scale;
	w->regression = v.regression;
	memcpy(w->hash, v.hash, sizeof(w->hash));
	hw__sections_free(w);
	memcpy(w->sections, v.sections, sizeof(w->sections));
	memset(v.sections, 0, sizeof(v.sections));
	rc = 0;
cleanup:
	hw__sections_free(&v);
	free(text);
	toml_free(out);
	toml_free(hashed);
	return rc;
}

int hw_workload_write_resolved(const hw_workload *w, const char *path, toml_error *err)
{
	bench_buf c = {0};
	int rc;
	if (!w->resolved || !w->hash[0])
		return hw__errorf(err, path, "", "the workload has not been resolved");
	bench_buf_printf(&c,
	                 "resolved-workload.toml: the workload as run, every default filled in and "
	                 "every\n"
	                 "command-line override applied. Read from:\n"
	                 "  %s\n"
	                 "Config hash (SHA-256 of this file without these comment lines and without\n"
	                 "[regression]):\n"
	                 "  %s",
	                 w->path[0] ? w->path : "(defaults only)", w->hash);
	hw__sections_help(w, &c);
	if (c.oom)
		rc = hw__errorf(err, path, "", "out of memory");
	else
		rc = toml_write_file(w->resolved, path, c.p, err) ? -1 : 0;
	bench_buf_free(&c);
	return rc;
}

void hw_workload_free(hw_workload *w)
{
	if (!w)
		return;
	toml_free(w->given);
	toml_free(w->resolved);
	hw__sections_free(w);
	memset(w, 0, sizeof(*w));
}
