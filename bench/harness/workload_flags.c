/*
 * workload_flags.c - the harness's command-line shortcuts of workload keys (harness.h,
 * hw_override_flags): each flag names one key of the workload file, and hw_flag_to_toml turns
 * its argument (an integer with an optional k/M/G, a float, a boolean, or a comma list of
 * integers or names) into the TOML text hw_workload_set reads.
 */
#include "harness.h"

#include "count.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const hw_override_flag hw_override_flags[] = {
    {"node-size", "node_size", HW_FLAG_INT,
     "node size of every prolly store the run creates: 1024, 2048, 4096 (default) or 8192"},
    {"clients", "service.clients", HW_FLAG_INT_LIST, "client counts of the service sweep: 1,8,32"},
    {"pool-sizes", "service.pool_sizes", HW_FLAG_INT_LIST, "connection pool sizes: 8,32"},
    {"records", "service.records", HW_FLAG_INT, "records in each tenant's base tree (1M = 10^6)"},
    {"value-bytes", "service.value_bytes", HW_FLAG_INT, "service value size in bytes"},
    {"tenants", "service.tenants", HW_FLAG_INT, "tenants, each with its own branches"},
    {"hot-roots", "service.hot_roots", HW_FLAG_INT, "shared hot branches"},
    {"hot-root-share", "service.hot_root_share", HW_FLAG_FLOAT,
     "share (0..1) of operations that go to a hot branch"},
    {"warmup-ms", "service.warmup_ms", HW_FLAG_INT, "unmeasured warmup of each service cell"},
    {"duration-ms", "service.duration_ms", HW_FLAG_INT, "measured length of each service cell"},
    {"operation-timeout-ms", "service.operation_timeout_ms", HW_FLAG_INT,
     "an operation taking longer counts as a timeout"},
    {"multi-read-keys", "service.multi_read_keys", HW_FLAG_INT, "keys per multi read"},
    {"commit-keys", "service.commit_keys", HW_FLAG_INT, "keys edited per commit"},
    {"retained-versions", "service.retained_versions", HW_FLAG_INT,
     "older versions kept per branch for diffs"},
    {"cas-retries", "service.cas_retries", HW_FLAG_INT, "retries of a commit whose CAS lost"},
    {"batch-items", "service.adapter_batch_items", HW_FLAG_INT,
     "nodes per INSERT statement of the PostgreSQL store"},
    {"sizes", "scale.sizes", HW_FLAG_INT_LIST, "record counts of the scale matrix: 1M,10M"},
    {"scale-value-bytes", "scale.value_bytes", HW_FLAG_INT, "scale value size in bytes"},
    {"runs", "scale.runs", HW_FLAG_INT, "runs of each scale cell (the median is reported)"},
    {"changes", "scale.changes", HW_FLAG_INT,
     "edits per batch, diff and merge, or auto (1% of the size, 10..10000)"},
    {"read-samples", "scale.read_samples", HW_FLAG_INT, "reads per get, query and scan cell"},
    {"concurrency", "scale.concurrency", HW_FLAG_INT, "queries at once in concurrent_query"},
    {"operations", "scale.operations", HW_FLAG_NAME_LIST,
     "scale operations: put,batch,get_cold,get_warm,query,concurrent_query,scan,full_scan,diff,"
     "merge or all (these ten, the default); also build,full_scan_warm,get_cold_start,put_nosync,"
     "count,sync,proof"},
    {"patterns", "scale.patterns", HW_FLAG_NAME_LIST,
     "scale patterns: append,random,clustered,random_insert,random_delete or all"},
    {"min-free-gb", "scale.min_free_gb", HW_FLAG_FLOAT,
     "free disk (GB) a scale fixture must leave"},
    {"seed", "seed", HW_FLAG_INT, "seed of every random choice"},
    {"service-enabled", "service.enabled", HW_FLAG_BOOL, "run the service suite (true/false)"},
    {"scale-enabled", "scale.enabled", HW_FLAG_BOOL, "run the scale suite (true/false)"},
    {"max-throughput-loss", "regression.max_throughput_loss_percent", HW_FLAG_FLOAT,
     "gate: largest throughput loss against the baseline, percent"},
    {"max-p99-increase", "regression.max_p99_increase_percent", HW_FLAG_FLOAT,
     "gate: largest p99 latency increase, percent"},
    {"max-conflict-rate", "regression.max_conflict_rate", HW_FLAG_FLOAT,
     "gate: largest conflicts / CAS attempts (0..1)"},
    {"max-error-rate", "regression.max_error_rate", HW_FLAG_FLOAT,
     "gate: largest errors / attempted operations (0..1)"},
    {"max-statements-per-op", "regression.max_pg_statements_per_operation", HW_FLAG_FLOAT,
     "gate: most PostgreSQL statements per operation"},
    {"min-percentile-samples", "regression.minimum_percentile_samples", HW_FLAG_INT,
     "p99 gate only on cells with at least this many samples"},
    {"max-relative-qps-loss", "regression.max_relative_qps_loss_percent", HW_FLAG_FLOAT,
     "gate: largest loss of relative QPS against the baseline, percent"},
    {NULL, NULL, HW_FLAG_INT, NULL},
};

/* Appends to out[*used..n); -1 if it does not fit. */
static int put(char *out, size_t n, size_t *used, const char *s, size_t len)
{
	if (*used + len >= n)
		return -1;
	memcpy(out + *used, s, len);
	*used += len;
	out[*used] = 0;
	return 0;
}

static int too_long(const hw_override_flag *f, char *err, size_t errn)
{
	snprintf(err, errn, "--%s: the value is too long", f->flag);
	return -1;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* The shortest text that reads back as v, without an exponent for ordinary magnitudes ("10.0",
 * not "1e+01"), always with a '.' or an exponent so that TOML reads a float. */
static void shortest_float(char *buf, size_t n, double v)
{
	int prec = 1;
	for (double a = fabs(v); a >= 10 && a < 1e15 && prec < 17; a /= 10)
		prec++; /* at least the integer digits, so %g does not switch to an exponent */
	for (; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (!strpbrk(buf, ".e") && strlen(buf) + 2 < n)
		strcat(buf, ".0");
}

/* A list flag: "1,4" -> [1, 4], "put, batch" -> ["put", "batch"], "all" -> every pattern, or
 * the ten default operations (HW_DEFAULT_SCALE_OPS). */
static int list_text(const hw_override_flag *f, const char *arg, size_t len, char *out, size_t n,
                     char *err, size_t errn)
{
	const char *const *names = NULL;
	int nnames = 0;
	size_t used = 0;
	char num[32];
	if (f->kind == HW_FLAG_NAME_LIST && len == 3 && memcmp(arg, "all", 3) == 0) {
		if (strcmp(f->key, "scale.operations") == 0) /* the default ten, not the extra cells */
			names = hw_scale_op_names, nnames = HW_S_MERGE + 1;
		else if (strcmp(f->key, "scale.patterns") == 0)
			names = hw_pattern_names, nnames = HW_N_PATTERNS;
	}
	if (put(out, n, &used, "[", 1))
		return too_long(f, err, errn);
	for (int i = 0; i < nnames; i++)
		if ((i && put(out, n, &used, ", ", 2)) || put(out, n, &used, "\"", 1) ||
		    put(out, n, &used, names[i], strlen(names[i])) || put(out, n, &used, "\"", 1))
			return too_long(f, err, errn);
	for (const char *p = arg, *end = arg + len; !names; p++) {
		const char *q = memchr(p, ',', (size_t)(end - p)), *e = q ? q : end, *b = p;
		uint64_t v;
		while (b < e && is_space(*b))
			b++;
		while (e > b && is_space(e[-1]))
			e--;
		if (b == e) {
			snprintf(err, errn, "--%s: an empty entry in '%.*s'", f->flag, (int)len, arg);
			return -1;
		}
		if (p != arg && put(out, n, &used, ", ", 2))
			return too_long(f, err, errn);
		if (f->kind == HW_FLAG_INT_LIST) {
			if (bench_parse_count(b, (size_t)(e - b), &v)) {
				snprintf(err, errn,
				         "--%s: '%.*s' is not a count (digits with an optional k, M or G)", f->flag,
				         (int)(e - b), b);
				return -1;
			}
			snprintf(num, sizeof(num), "%" PRIu64, v);
			if (put(out, n, &used, num, strlen(num)))
				return too_long(f, err, errn);
		} else {
			for (const char *c = b; c < e; c++)
				if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
				      (*c >= '0' && *c <= '9') || *c == '_' || *c == '-')) {
					snprintf(err, errn, "--%s: '%.*s' is not a name (letters, digits, _ and -)",
					         f->flag, (int)(e - b), b);
					return -1;
				}
			if (put(out, n, &used, "\"", 1) || put(out, n, &used, b, (size_t)(e - b)) ||
			    put(out, n, &used, "\"", 1))
				return too_long(f, err, errn);
		}
		if (!q)
			break;
		p = q;
	}
	return put(out, n, &used, "]", 1) ? too_long(f, err, errn) : 0;
}

int hw_flag_to_toml(const hw_override_flag *f, const char *arg, char *out, size_t n, char *err,
                    size_t errn)
{
	size_t used = 0, len = strlen(arg);
	const char *text = NULL;
	char num[48];
	uint64_t v;
	if (n)
		out[0] = 0;
	while (len && is_space(arg[len - 1]))
		len--;
	while (len && is_space(*arg))
		arg++, len--;
	switch (f->kind) {
	case HW_FLAG_INT:
		if (strcmp(f->key, "scale.changes") == 0 && len == 4 && memcmp(arg, "auto", 4) == 0) {
			text = "\"auto\"";
		} else if (bench_parse_count(arg, len, &v) == 0) {
			snprintf(num, sizeof(num), "%" PRIu64, v);
			text = num;
		} else {
			snprintf(err, errn, "--%s: '%.*s' is not a count (digits with an optional k, M or G)",
			         f->flag, (int)len, arg);
			return -1;
		}
		break;
	case HW_FLAG_INT_LIST:
	case HW_FLAG_NAME_LIST: return list_text(f, arg, len, out, n, err, errn);
	case HW_FLAG_FLOAT: {
		char buf[64], *endp;
		double x = 0;
		if (len && len < sizeof(buf)) {
			memcpy(buf, arg, len);
			buf[len] = 0;
			x = strtod(buf, &endp);
		}
		if (!len || len >= sizeof(buf) || *endp || !isfinite(x) || strpbrk(buf, "xXpP")) {
			snprintf(err, errn, "--%s: '%.*s' is not a number", f->flag, (int)len, arg);
			return -1;
		}
		shortest_float(num, sizeof(num), x);
		text = num;
		break;
	}
	case HW_FLAG_BOOL: {
		static const char *const yes[] = {"true", "1", "yes", "on"};
		static const char *const no[] = {"false", "0", "no", "off"};
		for (int i = 0; i < 4 && !text; i++) {
			if (strlen(yes[i]) == len && strncasecmp(arg, yes[i], len) == 0)
				text = "true";
			else if (strlen(no[i]) == len && strncasecmp(arg, no[i], len) == 0)
				text = "false";
		}
		if (!text) {
			snprintf(err, errn, "--%s: '%.*s' is not a boolean (true, false, 1, 0, yes, no)",
			         f->flag, (int)len, arg);
			return -1;
		}
		break;
	}
	}
	if (!text) {
		snprintf(err, errn, "--%s: unknown flag kind", f->flag);
		return -1;
	}
	return put(out, n, &used, text, strlen(text)) ? too_long(f, err, errn) : 0;
}
