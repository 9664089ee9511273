/*
 * scale.c - the `scale` program: the serial large-tree benchmark, a matrix of sizes x stores x
 * operations x patterns, run by `make bench`.
 *
 * The matrix itself (fixtures, cells, validation, the plain-table baseline, one child process
 * per fixture) is the scale engine in bench/scale/ (scale.h), which the harness's scale suite
 * shares. This file is the command line around it: options into a scale_config, rows from the
 * engine's after_cell hook to the CSV file (appended, flushed row by row) and to a Markdown table
 * on stdout, the throwaway PostgreSQL cluster, and at the end the tables comparing the measured
 * values with the targets. Progress goes to stderr. See docs/benchmarks.md.
 */
#include "scale/scale.h"
#include "bench_util.h"
#include "pg_baseline.h"
#include "prolly.h"

#include <getopt.h>
#include <signal.h>
#include <sys/wait.h>

/* Program-only settings next to the engine's configuration. */
typedef struct config {
	scale_config e;
	const char *csv;
	char pg_dir[4096]; /* pg: the throwaway cluster's directory, "" when PROLLY_PG_URL was given */
} config;

static FILE *csv_file;
static scale_rows all_rows; /* every row, for the target tables */

/* The engine's after_cell hook (runs in each fixture's process): CSV and Markdown. */
static int print_row(void *payload, const bench_row *r)
{
	(void)payload;
	csv_row(csv_file, r);
	fflush(csv_file);
	md_row(stdout, r);
	fflush(stdout);
	return 0;
}

static const bench_row *find_row(uint64_t size, const char *store, const char *op,
                                 const char *pattern)
{
	return scale_rows_find(&all_rows, size, store, op, pattern);
}

/* ------------------------------------------------------------------------------------------ */
/* Target table                                                                               */
/* ------------------------------------------------------------------------------------------ */

/*
 * M_ENGINE_US: per-operation time spent outside the store's write call (the edit, encoding,
 * hashing, txn bookkeeping), i.e. the commit "before the disk sync". The LMDB store cannot skip
 * its sync: every LMDB commit flushes the data pages (MDB_NOMETASYNC), and a durable write adds a
 * second flush for the meta page, so the wrapper's nosync variant only removes the second one.
 */
enum { M_RATE, M_MS, M_US_PER_OP, M_ENGINE_US, M_RSS, M_ANON, M_RT_PER_OP };

typedef struct target {
	const char *what;
	const char *store, *op, *pattern;
	int metric;
	double goal; /* rate: at least; others: at most; 0: information only */
	const char *goal_text;
} target;

static const target targets[] = {
    {"build", "lmdb", "build", "-", M_RATE, 1.5e6, ">= 1.5M records/s"},
    {"full scan (cold cache)", "lmdb", "scan", "-", M_RATE, 10e6, ">= 10M records/s"},
    {"full scan (warm cache, info)", "lmdb", "scan_warm", "-", M_RATE, 0, "-"},
    {"10k point gets, cold cache", "lmdb", "get_cold", "-", M_MS, 20, "<= 20 ms"},
    {"10k random updates", "lmdb", "batch", "update", M_MS, 100, "<= 100 ms"},
    {"10k random updates", "mem", "batch", "update", M_MS, 40, "<= 40 ms"},
    {"10k random inserts", "lmdb", "batch", "insert", M_MS, 120, "<= 120 ms"},
    {"10k random deletes", "lmdb", "batch", "delete", M_MS, 120, "<= 120 ms"},
    {"single-edit commit, before the store write (sync)", "lmdb", "single", "update", M_ENGINE_US,
     200, "<= 0.2 ms"},
    {"single-edit commit, durable (info)", "lmdb", "single", "update", M_US_PER_OP, 0, "-"},
    {"single-edit commit, one sync instead of two (info)", "lmdb", "single_nosync", "update",
     M_US_PER_OP, 0, "-"},
    {"diff after 10k random updates", "lmdb", "diff", "update", M_MS, 40, "<= 40 ms"},
    {"merge of two disjoint 5k branches", "lmdb", "merge", "update", M_MS, 100, "<= 100 ms"},
    {"peak memory (peak RSS of the LMDB process)", "lmdb", NULL, NULL, M_RSS, 600, "<= 600 MiB"},
    {"anonymous (private) memory, highest at a cell's end (info)", "lmdb", NULL, NULL, M_ANON, 0,
     "-"},
};

/* The target's metric from wall time (by_cpu 0) or process CPU time (1); -1 if none. */
static double metric_of(const target *g, const bench_row *r, int by_cpu)
{
	double ms = by_cpu ? r->cpu_ms : r->ms_median;
	if (ms <= 0 || !r->ops)
		return -1;
	switch (g->metric) {
	case M_RATE: return (double)r->ops * 1000.0 / ms;
	case M_MS: return ms;
	case M_US_PER_OP: return ms * 1000.0 / (double)r->ops;
	case M_ENGINE_US: return by_cpu ? -1 : (ms - r->store_write_ms) * 1000.0 / (double)r->ops;
	case M_RT_PER_OP: return by_cpu ? -1 : (double)r->st.store_round_trips / (double)r->ops;
	default: return -1;
	}
}

static void format_metric(char *buf, size_t n, int metric, double v)
{
	if (v < 0) {
		snprintf(buf, n, "-");
		return;
	}
	switch (metric) {
	case M_RATE: snprintf(buf, n, "%.2fM records/s", v / 1e6); break;
	case M_MS: snprintf(buf, n, "%.2f ms", v); break;
	case M_US_PER_OP:
	case M_ENGINE_US: snprintf(buf, n, "%.3f ms", v / 1000.0); break;
	case M_RT_PER_OP: snprintf(buf, n, "%.2f round trips", v); break;
	default: snprintf(buf, n, "%.0f MiB", v); break;
	}
}

static void print_targets(const config *cfg)
{
	uint64_t size = 0;
	for (int i = 0; i < cfg->e.n_sizes; i++)
		if (cfg->e.sizes[i] == 1000000 || (size != 1000000 && cfg->e.sizes[i] > size))
			size = cfg->e.sizes[i];
	char hs[32];
	printf("\n### Targets vs measured (%s records%s)\n\n",
	       human_count(hs, sizeof(hs), (double)size),
	       size == 1000000 ? "" : "; the targets are stated for 1M");
	printf("Status is judged on wall time; the CPU column gives the same figure computed from the\n"
	       "process CPU time of the same run (lower when the run waited for the disk or for a\n"
	       "busy CPU).\n\n");
	int comparable = size == 1000000 && cfg->e.changes == 10000 && cfg->e.reads == 10000;
	if (!comparable)
		printf("The workload differs from the one the targets state (1M records, 10k changes and\n"
		       "reads), so each status is shown in parentheses.\n\n");
	printf("| target | store | goal | measured (wall) | from CPU time | status |\n"
	       "|---|---|---|---:|---:|---|\n");
	for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
		const target *g = &targets[t];
		double v = -1, vc = -1;
		int valid = 1;
		if (g->metric == M_RSS || g->metric == M_ANON) {
			for (size_t i = 0; i < all_rows.n; i++) {
				const bench_row *r = &all_rows.rows[i];
				double m = g->metric == M_RSS ? r->peak_rss_mib : r->rss_anon_mib;
				if (r->size == size && !strcmp(r->store, g->store) && m > v)
					v = m;
			}
		} else {
			const bench_row *r = find_row(size, g->store, g->op, g->pattern);
			if (r && r->runs) {
				valid = r->valid;
				v = metric_of(g, r, 0);
				vc = metric_of(g, r, 1);
			}
		}
		char meas[64], cpu[64];
		const char *status;
		format_metric(meas, sizeof(meas), g->metric, v);
		format_metric(cpu, sizeof(cpu), g->metric, vc);
		if (v < 0) {
			snprintf(meas, sizeof(meas), "not measured");
			status = "-";
		} else if (!valid) {
			status = "INVALID";
		} else if (g->goal == 0) {
			status = "info";
		} else if (g->metric == M_RATE) {
			status = v >= g->goal ? "met" : "missed";
		} else {
			status = v <= g->goal ? "met" : "missed";
		}
		printf("| %s | %s | %s | %s | %s | %s%s%s |\n", g->what, g->store, g->goal_text, meas, cpu,
		       comparable || v < 0 ? "" : "(", status, comparable || v < 0 ? "" : ")");
	}
	fflush(stdout);
}

/*
 * The targets set for the PostgreSQL store at 10M records (PostgreSQL on the same machine;
 * docs/benchmarks.md, "PostgreSQL", compares each run with them).
 * The round-trip target is "at most one per tree level": its goal is the base tree's height,
 * read from the build row's note. Random inserts and deletes have no goal ("measured").
 */
static const target pg_targets[] = {
    {"build", "pg", "build", "-", M_MS, 6000, "<= 6 s"},
    {"full scan (cold cache)", "pg", "scan", "-", M_MS, 3000, "<= 3 s"},
    {"cold point get (cache cleared before each get)", "pg", "get_nocache", "-", M_US_PER_OP, 400,
     "<= 0.4 ms"},
    {"cold point get: store round trips per get", "pg", "get_nocache", "-", M_RT_PER_OP, -1,
     "<= 1 per level"},
    {"10k point gets after one cache clear, per get (info)", "pg", "get_cold", "-", M_US_PER_OP, 0,
     "-"},
    {"10k random get_many", "pg", "get_many", "-", M_MS, 200, "<= 200 ms"},
    {"10k random update batch", "pg", "batch", "update", M_MS, 600, "<= 0.6 s"},
    {"single random put committed", "pg", "single", "update", M_US_PER_OP, 1500, "<= 1.5 ms"},
    {"diff after 10k random updates", "pg", "diff", "update", M_MS, 300, "<= 0.3 s"},
    {"merge of two disjoint 5k branches", "pg", "merge", "update", M_MS, 800, "<= 0.8 s"},
    {"append merge (10k appended keys)", "pg", "merge", "append", M_MS, 50, "<= 50 ms"},
    {"10k random inserts (measured)", "pg", "batch", "insert", M_MS, 0, "-"},
    {"10k random deletes (measured)", "pg", "batch", "delete", M_MS, 0, "-"},
};

static void print_pg_targets(const config *cfg)
{
	uint64_t size = 0;
	for (size_t i = 0; i < all_rows.n; i++)
		if (!strcmp(all_rows.rows[i].store, "pg") && all_rows.rows[i].size > size)
			size = all_rows.rows[i].size;
	if (!size)
		return;
	unsigned height = 0;
	const bench_row *b = find_row(size, "pg", "build", "-");
	if (!b || sscanf(b->note, "height %u", &height) != 1)
		height = 0;
	char hs[32];
	int comparable = size == 10000000 && cfg->e.changes == 10000 && cfg->e.reads == 10000;
	printf("\n### PostgreSQL targets vs measured (%s records%s)\n\n",
	       human_count(hs, sizeof(hs), (double)size),
	       size == 10000000 ? "" : "; the targets are stated for 10M");
	if (!comparable)
		printf("The workload differs from the one the targets state (10M records, 10k changes and\n"
		       "reads), so each status is shown in parentheses.\n\n");
	printf("Wall time decides the status. \"vs plain\" is the Prolly cell's time over the plain\n"
	       "table's for the same work (see the pg-plain rows).\n\n");
	printf("| target | store | goal | measured (wall) | from CPU time | vs plain | status |\n"
	       "|---|---|---|---:|---:|---:|---|\n");
	for (size_t t = 0; t < sizeof(pg_targets) / sizeof(pg_targets[0]); t++) {
		target g = pg_targets[t];
		char goal_text[64];
		snprintf(goal_text, sizeof(goal_text), "%s", g.goal_text);
		if (g.goal < 0) {
			g.goal = height;
			if (height)
				snprintf(goal_text, sizeof(goal_text), "<= %u (height)", height);
		}
		double v = -1, vc = -1, vp = 0;
		int valid = 1;
		const bench_row *r = find_row(size, g.store, g.op, g.pattern);
		if (r && r->runs) {
			valid = r->valid;
			v = metric_of(&g, r, 0);
			vc = metric_of(&g, r, 1);
			vp = r->vs_plain;
		}
		char meas[64], cpu[64], vps[32];
		const char *status;
		format_metric(meas, sizeof(meas), g.metric, v);
		format_metric(cpu, sizeof(cpu), g.metric, vc);
		if (vp > 0 && g.metric != M_RT_PER_OP)
			snprintf(vps, sizeof(vps), "%.2fx", vp);
		else
			snprintf(vps, sizeof(vps), "-");
		if (v < 0) {
			snprintf(meas, sizeof(meas), "not measured");
			status = "-";
		} else if (!valid) {
			status = "INVALID";
		} else if (g.goal == 0) {
			status = "info";
		} else {
			status = v <= g.goal ? "met" : "missed";
		}
		printf("| %s | %s | %s | %s | %s | %s | %s%s%s |\n", g.what, g.store, goal_text, meas, cpu,
		       vps, comparable || v < 0 ? "" : "(", status, comparable || v < 0 ? "" : ")");
	}
	fflush(stdout);
}

/* ------------------------------------------------------------------------------------------ */
/* Options                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: scale [options]\n"
	        "Serial large-tree benchmark of prolly: sizes x stores x operations x patterns.\n"
	        "Rows are appended to the CSV file and printed as a Markdown table on stdout;\n"
	        "progress goes to stderr.\n\n"
	        "  --sizes LIST        base tree sizes (default 100000,1000000; k/M suffixes ok)\n"
	        "  --stores LIST       mem,lmdb,pg (default all three). pg uses $PROLLY_PG_URL, or\n"
	        "                      a throwaway cluster from scripts/pg-cluster.sh (stopped at\n"
	        "                      the end); each store in a fresh schema, dropped afterwards;\n"
	        "                      pg fixtures also run the plain-table baseline (pg-plain rows)\n"
	        "  --ops LIST          operations (default all but concurrent_query):\n"
	        "                      build scan scan_warm get_cold get_warm get_nocache get_many\n"
	        "                      range concurrent_query\n"
	        "                      batch single single_nosync diff merge\n"
	        "  --patterns LIST     edit patterns for batch..merge (default all):\n"
	        "                      append update clustered insert delete\n"
	        "  --runs N            runs per cell, median reported (default 3, max %d)\n"
	        "  --changes N         edits per batch, diff and merge (default 10000)\n"
	        "  --reads N           keys per get/get_many/range cell (default 10000)\n"
	        "  --singles N         commits per single-edit cell (default 100)\n"
	        "  --value-bytes N     value size in bytes (default 27, max %u)\n"
	        "  --concurrency N     queries at once in concurrent_query, each of --reads keys\n"
	        "                      (default 8, max %d)\n"
	        "  --seed N            workload seed (default 42)\n"
	        "  --dir DIR           scratch directory for LMDB stores (default /tmp)\n"
	        "  --cache-mb N        decoded-node cache budget in MiB (default 256)\n"
	        "  --flush-mb N        builder flush size in MiB (default: the library's, 4)\n"
	        "  --csv FILE          CSV output, appended (default build/bench/scale.csv)\n"
	        "  --max-cell-seconds S  skip a cell's remaining runs after a run this long (60)\n"
	        "  --no-fork           run every fixture in this process\n"
	        "  --keep              keep the LMDB directories and the pg schemas\n"
	        "  --no-baseline       pg: skip the plain-table baseline\n"
	        "  --pg-statements N   pg: print the top N pg_stat_statements entries of each\n"
	        "                      fixture on stderr (default 0: none)\n"
	        "  --help              this text\n",
	        SCALE_MAX_RUNS, SCALE_MAX_VALUE_BYTES, SCALE_MAX_CONCURRENCY);
}

static int parse_u64_opt(const char *name, const char *arg, uint64_t *out)
{
	if (parse_count(arg, out) != 0) {
		fprintf(stderr, "error: %s: not a count: %s\n", name, arg);
		return -1;
	}
	return 0;
}

/* Returns 0 to go on, 1 to exit successfully (--help), -1 on a bad option. */
static int parse_args(config *cfg, int argc, char **argv)
{
	enum {
		O_SIZES = 256,
		O_STORES,
		O_OPS,
		O_PATTERNS,
		O_RUNS,
		O_CHANGES,
		O_READS,
		O_SINGLES,
		O_SEED,
		O_DIR,
		O_CACHE,
		O_FLUSH,
		O_CSV,
		O_MAXCELL,
		O_NOFORK,
		O_KEEP,
		O_HELP,
		O_NOBASE,
		O_PGSTMTS,
		O_VALUE,
		O_CONC
	};
	static const struct option longs[] = {
	    {"sizes", required_argument, NULL, O_SIZES},
	    {"stores", required_argument, NULL, O_STORES},
	    {"ops", required_argument, NULL, O_OPS},
	    {"patterns", required_argument, NULL, O_PATTERNS},
	    {"runs", required_argument, NULL, O_RUNS},
	    {"changes", required_argument, NULL, O_CHANGES},
	    {"reads", required_argument, NULL, O_READS},
	    {"singles", required_argument, NULL, O_SINGLES},
	    {"seed", required_argument, NULL, O_SEED},
	    {"dir", required_argument, NULL, O_DIR},
	    {"cache-mb", required_argument, NULL, O_CACHE},
	    {"flush-mb", required_argument, NULL, O_FLUSH},
	    {"csv", required_argument, NULL, O_CSV},
	    {"max-cell-seconds", required_argument, NULL, O_MAXCELL},
	    {"no-fork", no_argument, NULL, O_NOFORK},
	    {"keep", no_argument, NULL, O_KEEP},
	    {"no-baseline", no_argument, NULL, O_NOBASE},
	    {"pg-statements", required_argument, NULL, O_PGSTMTS},
	    {"value-bytes", required_argument, NULL, O_VALUE},
	    {"concurrency", required_argument, NULL, O_CONC},
	    {"help", no_argument, NULL, O_HELP},
	    {NULL, 0, NULL, 0},
	};
	char bad[64];
	uint64_t v;
	int o;
	while ((o = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (o) {
		case O_SIZES:
			cfg->e.n_sizes = parse_count_list(optarg, cfg->e.sizes, SCALE_MAX_SIZES);
			if (cfg->e.n_sizes < 0) {
				fprintf(stderr, "error: --sizes: expected up to %d positive counts: %s\n",
				        SCALE_MAX_SIZES, optarg);
				return -1;
			}
			break;
		case O_STORES:
			if (parse_name_list(optarg, scale_store_names, SCALE_N_STORES, &cfg->e.stores, bad,
			                    sizeof(bad))) {
				fprintf(stderr, "error: --stores: unknown store '%s' (mem, lmdb, pg)\n", bad);
				return -1;
			}
			break;
		case O_OPS:
			if (parse_name_list(optarg, scale_op_names, SCALE_N_OPS, &cfg->e.ops, bad,
			                    sizeof(bad))) {
				fprintf(stderr, "error: --ops: unknown operation '%s' (see --help)\n", bad);
				return -1;
			}
			break;
		case O_PATTERNS:
			if (parse_name_list(optarg, scale_pattern_names, SCALE_N_PATTERNS, &cfg->e.patterns,
			                    bad, sizeof(bad))) {
				fprintf(stderr, "error: --patterns: unknown pattern '%s' (see --help)\n", bad);
				return -1;
			}
			break;
		case O_RUNS:
			if (parse_u64_opt("--runs", optarg, &v) || v < 1 || v > SCALE_MAX_RUNS) {
				fprintf(stderr, "error: --runs must be 1..%d\n", SCALE_MAX_RUNS);
				return -1;
			}
			cfg->e.runs = (unsigned)v;
			break;
		case O_CHANGES:
			if (parse_u64_opt("--changes", optarg, &cfg->e.changes))
				return -1;
			break;
		case O_READS:
			if (parse_u64_opt("--reads", optarg, &cfg->e.reads))
				return -1;
			break;
		case O_SINGLES:
			if (parse_u64_opt("--singles", optarg, &cfg->e.singles) || cfg->e.singles == 0) {
				fprintf(stderr, "error: --singles must be at least 1\n");
				return -1;
			}
			break;
		case O_SEED:
			if (parse_u64_opt("--seed", optarg, &cfg->e.seed))
				return -1;
			break;
		case O_DIR: cfg->e.dir = optarg; break;
		case O_CACHE:
			if (parse_u64_opt("--cache-mb", optarg, &v) || v > (1u << 20)) {
				fprintf(stderr, "error: --cache-mb: 0..%u\n", 1u << 20);
				return -1;
			}
			cfg->e.cache_mb = (size_t)v;
			break;
		case O_FLUSH:
			if (parse_u64_opt("--flush-mb", optarg, &v) || v > (1u << 20)) {
				fprintf(stderr, "error: --flush-mb: 0..%u\n", 1u << 20);
				return -1;
			}
			cfg->e.flush_mb = (size_t)v;
			break;
		case O_CSV: cfg->csv = optarg; break;
		case O_MAXCELL: {
			char *end;
			cfg->e.max_cell_s = strtod(optarg, &end);
			if (*end || cfg->e.max_cell_s <= 0) {
				fprintf(stderr, "error: --max-cell-seconds: not a positive number: %s\n", optarg);
				return -1;
			}
			break;
		}
		case O_NOFORK: cfg->e.no_fork = 1; break;
		case O_KEEP: cfg->e.keep = 1; break;
		case O_NOBASE: cfg->e.no_baseline = 1; break;
		case O_PGSTMTS:
			if (parse_u64_opt("--pg-statements", optarg, &v) || v > 1000) {
				fprintf(stderr, "error: --pg-statements: 0..1000\n");
				return -1;
			}
			cfg->e.pg_statements = (int)v;
			break;
		case O_VALUE:
			if (parse_u64_opt("--value-bytes", optarg, &v) || v < 1 || v > SCALE_MAX_VALUE_BYTES) {
				fprintf(stderr, "error: --value-bytes: 1..%u\n", SCALE_MAX_VALUE_BYTES);
				return -1;
			}
			cfg->e.value_bytes = (uint32_t)v;
			break;
		case O_CONC:
			if (parse_u64_opt("--concurrency", optarg, &v) || v < 1 || v > SCALE_MAX_CONCURRENCY) {
				fprintf(stderr, "error: --concurrency: 1..%d\n", SCALE_MAX_CONCURRENCY);
				return -1;
			}
			cfg->e.concurrency = (unsigned)v;
			break;
		case O_HELP:
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "error: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return -1;
	}
	return 0;
}

static void print_machine(const config *cfg, int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
	char model[128] = "?";
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f) {
		char line[256];
		while (fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':');
			if (strncmp(line, "model name", 10) == 0 && colon) {
				snprintf(model, sizeof(model), "%s", colon + 2);
				model[strcspn(model, "\n")] = '\0';
				break;
			}
		}
		fclose(f);
	}
	printf("## prolly scale benchmark\n\n");
	printf("- date: %s\n", cfg->e.stamp);
	printf("- machine: %ld CPUs (%s), %.1f GiB memory\n", cpus, model, mem / 1073741824.0);
	printf("- command:");
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n- workload: %d-byte keys, %" PRIu32 "-byte values, seed %" PRIu64 ", %u run(s) per "
	       "cell, %" PRIu64 " changes, %" PRIu64 " reads, %" PRIu64
	       " single commits, cache %zu MiB\n",
	       SCALE_KEY_LEN, cfg->e.value_bytes, cfg->e.seed, cfg->e.runs, cfg->e.changes,
	       cfg->e.reads, cfg->e.singles, cfg->e.cache_mb);
	if (cfg->e.flush_mb)
		printf("- builder flush: %zu MiB\n", cfg->e.flush_mb);
	printf("- load average at start: %.2f (other processes compete for the CPUs when high)\n",
	       load1());
	printf("- csv: %s\n\n", cfg->csv);
	fflush(stdout);
}

/* ------------------------------------------------------------------------------------------ */
/* The throwaway PostgreSQL cluster                                                           */
/* ------------------------------------------------------------------------------------------ */

#define PG_SCRIPT "scripts/pg-cluster.sh"

static char cluster_dir[4096]; /* set while this process owns a running cluster */
static pid_t cluster_owner;

static void cluster_stop(void)
{
	if (!cluster_dir[0] || getpid() != cluster_owner)
		return;
	if (pgb_cluster_stop(PG_SCRIPT, cluster_dir) != 0) {
		static const char m[] = "warning: " PG_SCRIPT " stop failed\n";
		(void)!write(2, m, sizeof(m) - 1);
	}
	cluster_dir[0] = '\0';
}

/* SIGINT / SIGTERM / SIGHUP: stop the cluster (parent only), then die of the signal. */
static void cluster_signal(int sig)
{
	pid_t child = scale_child_pid();
	if (child > 0 && getpid() == cluster_owner) { /* the fixture first: it uses the server */
		kill(child, SIGKILL);
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
	}
	cluster_stop();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int cluster_start(config *cfg)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = cluster_signal;
	sigemptyset(&sa.sa_mask);
	cluster_owner = getpid();
	/* The handlers go in first: a signal during the start still stops what was started. */
	if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL) ||
	    sigaction(SIGHUP, &sa, NULL)) {
		fprintf(stderr, "error: sigaction: %s\n", strerror(errno));
		return -1;
	}
	if (atexit(cluster_stop) != 0) {
		fprintf(stderr, "error: atexit failed\n");
		return -1;
	}
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	int rc = pgb_cluster_start(PG_SCRIPT, cfg->e.pg_url, sizeof(cfg->e.pg_url), cfg->pg_dir,
	                           sizeof(cfg->pg_dir));
	sigprocmask(SIG_BLOCK, &block, &old);
	if (cfg->pg_dir[0])
		snprintf(cluster_dir, sizeof(cluster_dir), "%s", cfg->pg_dir);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return -1;
	char pidfile[4200];
	snprintf(pidfile, sizeof(pidfile), "%s/data/postmaster.pid", cfg->pg_dir);
	FILE *f = fopen(pidfile, "r");
	if (f) {
		if (fscanf(f, "%ld", &cfg->e.pg_postmaster) != 1)
			cfg->e.pg_postmaster = 0;
		fclose(f);
	}
	return 0;
}

/* The server's version and the settings that matter for these numbers, in the header. */
static int print_pg_settings(const config *cfg)
{
	PGconn *c = NULL;
	PGresult *res = NULL;
	if (pgb_connect(&c, cfg->e.pg_url) != 0) {
		fprintf(stderr, "error: %s\n", prolly_last_error());
		return -1;
	}
	int rc = pgb_exec(c,
	                  "SELECT string_agg(name || '=' || setting || coalesce(unit, ''), ', ' "
	                  "ORDER BY name) FROM pg_settings WHERE name IN ('shared_buffers', "
	                  "'work_mem', 'synchronous_commit', 'fsync', 'full_page_writes', "
	                  "'wal_level', 'max_wal_size', 'checkpoint_timeout', 'track_io_timing', "
	                  "'shared_preload_libraries', 'default_toast_compression', 'jit', "
	                  "'effective_cache_size', 'wal_compression', 'max_connections')",
	                  &res);
	if (rc != 0) {
		fprintf(stderr, "error: %s\n", prolly_last_error());
		PQfinish(c);
		return -1;
	}
	int v = PQserverVersion(c);
	printf("- PostgreSQL: server %d.%d, libpq %d, %s, same machine; settings: %.*s\n", v / 10000,
	       v % 10000, PQlibVersion(),
	       cfg->pg_dir[0] ? "throwaway cluster from " PG_SCRIPT " (Unix socket)"
	                      : "PROLLY_PG_URL (not printed)",
	       PQgetlength(res, 0, 0), PQgetvalue(res, 0, 0));
	PQclear(res);
	PQfinish(c);
	return 0;
}

int main(int argc, char **argv)
{
	config cfg;
	char err[512];
	memset(&cfg, 0, sizeof(cfg));
	scale_config_init(&cfg.e);
	cfg.csv = "build/bench/scale.csv";

	int a = parse_args(&cfg, argc, argv);
	if (a != 0)
		return a > 0 ? 0 : 2;

	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(cfg.e.stamp, sizeof(cfg.e.stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);

	csv_file = csv_open(cfg.csv);
	if (!csv_file)
		return 1;

	int use_pg = (cfg.e.stores >> SCALE_STORE_PG) & 1, pg_missing = 0;
	if (use_pg) {
		const char *url = getenv("PROLLY_PG_URL");
		int bad = 0;
		if (url && *url) {
			if (strlen(url) >= sizeof(cfg.e.pg_url)) {
				fprintf(stderr, "error: PROLLY_PG_URL is too long\n");
				bad = 1;
			} else {
				snprintf(cfg.e.pg_url, sizeof(cfg.e.pg_url), "%s", url);
			}
		} else {
			bad = cluster_start(&cfg) != 0;
		}
		PGconn *probe = NULL;
		if (!bad && pgb_connect(&probe, cfg.e.pg_url) != 0) {
			fprintf(stderr, "error: %s\n", prolly_last_error());
			bad = 1;
		}
		PQfinish(probe);
		if (bad) {
			/* The other stores still run; the exit status says that pg did not. */
			cluster_stop();
			cfg.e.stores &= ~(1u << SCALE_STORE_PG);
			use_pg = 0;
			pg_missing = 1;
			fprintf(stderr, "error: no PostgreSQL server: the pg store is skipped%s\n",
			        cfg.e.stores ? "" : " (nothing else to run)");
			if (!cfg.e.stores) {
				fclose(csv_file);
				return 1;
			}
		}
	}

	print_machine(&cfg, argc, argv);
	if (use_pg && print_pg_settings(&cfg) != 0)
		printf("- PostgreSQL: settings could not be read (see stderr)\n");
	if (use_pg)
		printf("\n");
	md_header(stdout);
	uint64_t t0 = now_ns();
	scale_hooks hooks = {NULL, NULL, NULL, print_row};
	/* 1 (a fixture failed) is reported on stderr by the engine and, as before, does not change
	 * the exit status by itself; -1 is a setup failure. */
	if (scale_run(&all_rows, &cfg.e, &hooks, err, sizeof(err)) < 0) {
		fprintf(stderr, "error: %s\n", err);
		fclose(csv_file);
		scale_rows_free(&all_rows);
		cluster_stop();
		return 1;
	}
	if (cfg.e.stores & ((1u << SCALE_STORE_MEM) | (1u << SCALE_STORE_LMDB)))
		print_targets(&cfg);
	if (use_pg)
		print_pg_targets(&cfg);
	struct rusage self, kids;
	if (getrusage(RUSAGE_SELF, &self) == 0 && getrusage(RUSAGE_CHILDREN, &kids) == 0) {
		double cpu_s = (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
		                        kids.ru_stime.tv_sec) +
		               (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec +
		                        kids.ru_utime.tv_usec + kids.ru_stime.tv_usec) /
		                   1e6;
		double srv = use_pg ? server_cpu_ms(cfg.e.pg_postmaster) : -1;
		printf("\n- wall %.1f s; CPU of the benchmark processes %.1f s",
		       (double)(now_ns() - t0) / 1e9, cpu_s);
		if (srv >= 0)
			printf("; CPU of the PostgreSQL server %.1f s", srv / 1000.0);
		printf("; load average at the end %.2f\n", load1());
		fflush(stdout);
	}

	size_t invalid_rows = 0;
	for (size_t i = 0; i < all_rows.n; i++)
		invalid_rows += !all_rows.rows[i].valid;
	fprintf(stderr, "done in %.1f s: %zu rows, %zu invalid; csv: %s\n",
	        (double)(now_ns() - t0) / 1e9, all_rows.n, invalid_rows, cfg.csv);
	if (fclose(csv_file) != 0)
		fprintf(stderr, "warning: closing %s: %s\n", cfg.csv, strerror(errno));
	scale_rows_free(&all_rows);
	cluster_stop();
	return invalid_rows || pg_missing ? 1 : 0;
}
