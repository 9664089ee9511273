/*
 * main.c - the benchmark harness program (build/bench/harness).
 *
 *   harness --config FILE --output DIR [--suite all|NAME,NAME..] [--store postgres|lmdb|mem]
 *           [--url URL] [--baseline DIR] [--allow-environment-mismatch] [--revision REV]
 *           [--set KEY=VALUE]... [--clients 1,4] [--sizes 1M] ... [--compare-only] [--dry-run]
 *
 * Order of work: read and validate the workload (nothing runs if it is wrong), apply the
 * command-line overrides, resolve; check the environment against --baseline (a material
 * mismatch stops here unless --allow-environment-mismatch); open the output directory (resume,
 * or refuse a run of another revision or configuration without touching it); write the
 * provenance files; run the suites (cells already complete are skipped); write the summaries and
 * the report; apply the regression gates.
 *
 * Exit status: 0 done (and every gate passed); 1 a regression gate tripped; 2 bad usage, a bad
 * workload file or an output directory that cannot be used (not a directory, read-only: hr_open's
 * and hr_check_dir's -3); 3 the output directory belongs to another run; 4 the environments differ
 * materially and --allow-environment-mismatch was not given; 5 a suite failed or a row did not
 * validate.
 *
 * The PostgreSQL URL comes from --url or $PROLLY_PG_URL (the script passes it in the
 * environment so that it never appears in a process listing); it is never printed.
 */
#include "harness.h"

#include "clock.h"
#include "pgconn.h"
#include "proc.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { EXIT_OK = 0, EXIT_GATE = 1, EXIT_USAGE = 2, EXIT_DIR = 3, EXIT_ENV = 4, EXIT_FAIL = 5 };

/* ---- options ---------------------------------------------------------------------------------- */

typedef struct opts {
	const char *config, *output, *baseline, *url, *revision, *schema, *scratch;
	const char *store;
	unsigned suites; /* bit i: h_suites[i] */
	int allow_mismatch, compare_only, dry_run, verbose;
	/* --set and the override flags, as KEY=VALUE, applied after the file is read, in order */
	char **pending, **pending_src;
	int n_pending;
	struct option *longopts;
} opts;

enum {
	O_CONFIG = 256,
	O_SUITE,
	O_OUTPUT,
	O_BASELINE,
	O_ALLOW,
	O_URL,
	O_STORE,
	O_REVISION,
	O_SET,
	O_SCHEMA,
	O_SCRATCH,
	O_COMPARE,
	O_DRY,
	O_HELP,
	O_VERBOSE,
	O_FLAG0 = 1000
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: harness --config FILE --output DIR [options]\n"
	        "\n"
	        "Runs the suites of a TOML workload file against one store and leaves the results\n"
	        "in DIR (see docs/harness.md). Running again into the same DIR resumes: completed\n"
	        "cells are skipped.\n"
	        "\n"
	        "  --config FILE        the workload file (schema = 1)\n"
	        "  --output DIR         result directory (created; resumed if it holds this run)\n"
	        "  --suite LIST         a comma list of suites (service,scale,...) or all (the\n"
	        "                       default; both is the same); a suite disabled in the\n"
	        "                       workload is skipped; they run in the order listed below\n"
	        "  --store S            postgres (default), lmdb or mem\n"
	        "  --url URL            PostgreSQL URL or conninfo (default $PROLLY_PG_URL); never "
	        "printed\n"
	        "  --schema NAME        PostgreSQL schema for the benchmark's tables (prolly_bench);\n"
	        "                       at most 40 bytes, not ending in a suffix the suites add\n"
	        "  --scratch DIR        scratch directory for LMDB files (default DIR/scratch)\n"
	        "  --baseline DIR       compare with an earlier result directory; a gate that trips\n"
	        "                       exits 1\n"
	        "  --allow-environment-mismatch\n"
	        "                       compare even if machine or PostgreSQL differ materially (the\n"
	        "                       comparison is then exploratory: no gates)\n"
	        "  --revision REV       source revision recorded in the manifest (default: git HEAD)\n"
	        "  --compare-only       measure nothing: rewrite summaries and report of DIR, compare\n"
	        "                       with --baseline\n"
	        "  --dry-run            validate the workload, print the resolved form and the cells\n"
	        "  --set KEY=VALUE      override any workload key (TOML value: --set "
	        "service.clients=[1,2])\n"
	        "  -v, --verbose        more progress output\n"
	        "  -h, --help           this text\n"
	        "\n"
	        "Suites, in run order:");
	for (size_t i = 0; h_suites[i]; i++)
		fprintf(f, " %s", h_suites[i]->name);
	fprintf(f, "\n\nOverrides of common settings (each equals --set KEY=...):\n");
	for (const hw_override_flag *o = hw_override_flags; o->flag; o++) {
		char left[64];
		snprintf(left, sizeof left, "--%s %s", o->flag,
		         o->kind == HW_FLAG_INT_LIST    ? "N,N.."
		         : o->kind == HW_FLAG_NAME_LIST ? "A,B.."
		         : o->kind == HW_FLAG_BOOL      ? "BOOL"
		         : o->kind == HW_FLAG_FLOAT     ? "X"
		                                        : "N");
		fprintf(f, "  %-26s %s (%s)\n", left, o->help, o->key);
	}
	for (size_t i = 0; h_suites[i]; i++) {
		const h_suite *s = h_suites[i];
		if (!s->keys)
			continue;
		fprintf(f, "\nThe %s suite's section [%s] (--set %s.KEY=VALUE):\n", s->name, s->name,
		        s->name);
		for (const hw_key *k = s->keys; k->name; k++)
			fprintf(f, "  %-26s %s (default %s)\n", k->name, k->help ? k->help : "",
			        k->def ? k->def : "none: required");
	}
	fprintf(f, "\nExit status: 0 done; 1 a regression gate tripped; 2 usage or workload error, or\n"
	           "a DIR that cannot be used (not a directory, read-only); 3 DIR belongs to another\n"
	           "run; 4 environment mismatch with --baseline; 5 a suite failed or a row did not\n"
	           "validate.\n");
}

/* The arguments, for say(). */
static int arg_count;
static char **args;

/* The part of args[i] that may be a URL typed where it does not go: of --set's KEY=VALUE only
 * the VALUE. The whole of it looked like a connection string's keyword=value that does not
 * parse, so every double-quoted piece of the message was hidden: a refused --set
 * service.access="x" printed (expected "***", "***" ...) for the names it takes. */
static const char *set_value(int i)
{
	const char *a = args[i], *eq = NULL;
	if (strncmp(a, "--set=", 6) == 0)
		eq = strchr(a + 6, '=');
	else if (i > 1 && strcmp(args[i - 1], "--set") == 0)
		eq = strchr(a, '=');
	return eq ? eq + 1 : a;
}

/* Prints "harness: MESSAGE" on stderr with the password of every argument that carries one
 * hidden, wherever the message quotes it, whole or cut short (prolly_redact_message with the
 * argument as the connection string): an argument or a flag's value may be a URL typed where it
 * does not go. */
static void say(const char *fmt, ...)
{
	char a[3 * 4096 + 16], b[sizeof a], shown[sizeof a], *line = a, *next = b;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, 4096, fmt, ap);
	va_end(ap);
	for (int i = 1; i < arg_count; i++) {
		const char *arg = set_value(i);
		prolly_redact_url(shown, sizeof shown, arg);
		if (strcmp(shown, arg) == 0)
			continue; /* no password */
		prolly_redact_message(next, sizeof b, line, arg);
		char *t = line;
		line = next;
		next = t;
	}
	fprintf(stderr, "harness: %s\n", line);
}

static int set_override(hw_workload *w, const char *kv, const char *source)
{
	toml_error e;
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv) {
		say("%s: expected KEY=VALUE, got '%s'", source, kv);
		return -1;
	}
	char key[256];
	size_t kl = (size_t)(eq - kv);
	if (kl >= sizeof key) {
		fprintf(stderr, "harness: %s: key too long\n", source);
		return -1;
	}
	memcpy(key, kv, kl);
	key[kl] = 0;
	if (hw_workload_set(w, key, eq + 1, source, &e) != 0) {
		say("%s", e.text);
		return -1;
	}
	return 0;
}

/* ---- provenance ------------------------------------------------------------------------------- */

/* First line of a shell command's output, or "" (the harness only asks git). */
static void command_line(char *out, size_t n, const char *cmd)
{
	out[0] = 0;
	FILE *p = popen(cmd, "r");
	if (!p)
		return;
	if (fgets(out, (int)n, p))
		out[strcspn(out, "\r\n")] = 0;
	else
		out[0] = 0;
	pclose(p);
}

/* The revision is git's HEAD in $PROLLY_SOURCE_DIR (set by the script) or else the current
 * directory; dirty when tracked files differ from it. */
static void revision_of(hr_manifest *m, const char *given)
{
	char head[128], git[4200] = "git";
	const char *src = getenv("PROLLY_SOURCE_DIR");
	if (src && *src && !strchr(src, '\''))
		snprintf(git, sizeof git, "git -C '%s'", src);
	char cmd[4400];
	snprintf(cmd, sizeof cmd, "%s rev-parse HEAD 2>/dev/null", git);
	command_line(head, sizeof head, cmd);
	if (given)
		snprintf(m->revision, sizeof m->revision, "%s", given);
	else
		snprintf(m->revision, sizeof m->revision, "%s", head[0] ? head : "unknown");
	m->dirty = -1;
	if (head[0] && strcmp(head, m->revision) == 0) {
		char st[8];
		snprintf(cmd, sizeof cmd,
		         "%s status --porcelain --untracked-files=no 2>/dev/null | head -n 1", git);
		command_line(st, sizeof st, cmd);
		m->dirty = st[0] != 0;
	}
}

/* Compares the material keys of the environment files in dir and baseline. Returns the number of
 * differences, printing each. The current run's files must exist already. */
static int environment_diff(const char *dir, const char *baseline, FILE *f)
{
	static const char *const files[] = {"machine.txt", "postgres.txt"};
	const char *const *keys[] = {he_material_machine, he_material_postgres};
	int diffs = 0;
	for (int i = 0; i < 2; i++) {
		char a[4096], b[4096];
		snprintf(a, sizeof a, "%s/%s", dir, files[i]);
		snprintf(b, sizeof b, "%s/%s", baseline, files[i]);
		for (const char *const *k = keys[i]; *k; k++) {
			char *va = he_read_value(a, *k), *vb = he_read_value(b, *k);
			if ((va || vb) && (!va || !vb || strcmp(va, vb) != 0)) {
				fprintf(f, "  %s %s: this run '%s', baseline '%s'\n", files[i], *k,
				        va ? va : "(none)", vb ? vb : "(none)");
				diffs++;
			}
			free(va);
			free(vb);
		}
	}
	return diffs;
}

/* ---- flags ------------------------------------------------------------------------------------ */

static unsigned all_suites(void)
{
	unsigned m = 0;
	for (size_t i = 0; h_suites[i]; i++)
		m |= 1u << i;
	return m;
}

/* --suite LIST: a comma list of suite names and "all" (every suite; "both" is its old name),
 * e.g. "insert,sysbench". 0 with *bad (the first unknown or empty entry, as given) if any is
 * unknown. Runs follow h_suites's order whatever the list's. */
static unsigned suite_mask(const char *arg, char *bad, size_t badn)
{
	unsigned m = 0;
	for (const char *p = arg;; p++) {
		size_t len = strcspn(p, ","), b = 0, e = len, i;
		while (b < e && (p[b] == ' ' || p[b] == '\t'))
			b++;
		while (e > b && (p[e - 1] == ' ' || p[e - 1] == '\t'))
			e--;
		if ((e - b == 3 && !strncmp(p + b, "all", 3)) || (e - b == 4 && !strncmp(p + b, "both", 4)))
			m |= all_suites();
		else {
			for (i = 0; h_suites[i]; i++)
				if (strlen(h_suites[i]->name) == e - b && !strncmp(h_suites[i]->name, p + b, e - b))
					break;
			if (e == b || !h_suites[i]) {
				snprintf(bad, badn, "%.*s", (int)(e - b), p + b);
				return 0;
			}
			m |= 1u << i;
		}
		p += len;
		if (!*p)
			break;
	}
	return m;
}

static void opts_free(opts *o)
{
	for (int i = 0; i < o->n_pending; i++) {
		free(o->pending[i]);
		free(o->pending_src[i]);
	}
	free(o->pending);
	free(o->pending_src);
	free(o->longopts);
}

/* Keeps an override (KEY=VALUE) for after the file is read. */
static int pend(opts *o, char *kv, const char *source)
{
	char *src = strdup(source);
	if (!kv || !src) {
		free(kv);
		free(src);
		fprintf(stderr, "harness: out of memory\n");
		return -1;
	}
	o->pending[o->n_pending] = kv;
	o->pending_src[o->n_pending++] = src;
	return 0;
}

/* Parses argv into o. Returns -1 when the flags are good, else the exit status (EXIT_OK after
 * --help). */
static int parse_flags(opts *o, int argc, char **argv)
{
	static const struct option fixed[] = {
	    {"config", required_argument, 0, O_CONFIG},
	    {"suite", required_argument, 0, O_SUITE},
	    {"output", required_argument, 0, O_OUTPUT},
	    {"baseline", required_argument, 0, O_BASELINE},
	    {"allow-environment-mismatch", no_argument, 0, O_ALLOW},
	    {"url", required_argument, 0, O_URL},
	    {"store", required_argument, 0, O_STORE},
	    {"revision", required_argument, 0, O_REVISION},
	    {"set", required_argument, 0, O_SET},
	    {"schema", required_argument, 0, O_SCHEMA},
	    {"scratch", required_argument, 0, O_SCRATCH},
	    {"compare-only", no_argument, 0, O_COMPARE},
	    {"dry-run", no_argument, 0, O_DRY},
	    {"verbose", no_argument, 0, 'v'},
	    {"help", no_argument, 0, 'h'},
	};
	size_t n_fixed = sizeof fixed / sizeof fixed[0];
	int n_flags = 0, c;
	char err[H_ERR];
	for (const hw_override_flag *f = hw_override_flags; f->flag; f++)
		n_flags++;
	o->longopts = calloc(n_fixed + (size_t)n_flags + 1, sizeof *o->longopts);
	o->pending = calloc((size_t)argc + 1, sizeof *o->pending);
	o->pending_src = calloc((size_t)argc + 1, sizeof *o->pending_src);
	if (!o->longopts || !o->pending || !o->pending_src) {
		fprintf(stderr, "harness: out of memory\n");
		return EXIT_FAIL;
	}
	memcpy(o->longopts, fixed, sizeof fixed);
	for (int i = 0; i < n_flags; i++)
		o->longopts[n_fixed + (size_t)i] = (struct option){hw_override_flags[i].flag,
		                                                   required_argument, 0, O_FLAG0 + i};

	opterr = 0; /* getopt's own messages print an argument as given: say() hides passwords */
	arg_count = argc;
	args = argv;
	while ((c = getopt_long(argc, argv, "vh", o->longopts, NULL)) != -1) {
		switch (c) {
		case '?':
			say("unknown option, or one missing its value: '%s'", argv[optind - 1]);
			usage(stderr);
			return EXIT_USAGE;
		case O_CONFIG: o->config = optarg; break;
		case O_OUTPUT: o->output = optarg; break;
		case O_BASELINE: o->baseline = optarg; break;
		case O_ALLOW: o->allow_mismatch = 1; break;
		case O_URL: o->url = optarg; break;
		case O_REVISION: o->revision = optarg; break;
		case O_SCHEMA: o->schema = optarg; break;
		case O_SCRATCH: o->scratch = optarg; break;
		case O_COMPARE: o->compare_only = 1; break;
		case O_DRY: o->dry_run = 1; break;
		case 'v': o->verbose = 1; break;
		case 'h': usage(stdout); return EXIT_OK;
		case O_STORE:
			if (strcmp(optarg, "postgres") && strcmp(optarg, "lmdb") && strcmp(optarg, "mem")) {
				say("--store: expected postgres, lmdb or mem, not '%s'", optarg);
				return EXIT_USAGE;
			}
			o->store = optarg;
			break;
		case O_SUITE: {
			char bad[64];
			if (!(o->suites = suite_mask(optarg, bad, sizeof bad))) {
				char names[256] = "";
				for (size_t i = 0; h_suites[i]; i++)
					snprintf(names + strlen(names), sizeof names - strlen(names), "%s, ",
					         h_suites[i]->name);
				say("--suite: %s%s%s: expected a comma list of %sor all",
				    bad[0] ? "unknown suite '" : "an empty entry", bad, bad[0] ? "'" : "", names);
				return EXIT_USAGE;
			}
			break;
		}
		case O_SET:
			if (pend(o, strdup(optarg), "--set") != 0)
				return EXIT_FAIL;
			break;
		default:
			if (c >= O_FLAG0 && c < O_FLAG0 + n_flags) {
				const hw_override_flag *f = &hw_override_flags[c - O_FLAG0];
				char text[2048], src[80];
				if (hw_flag_to_toml(f, optarg, text, sizeof text, err, sizeof err) != 0) {
					say("%s", err); /* it names the flag */
					return EXIT_USAGE;
				}
				size_t need = strlen(f->key) + strlen(text) + 2;
				char *kv = malloc(need);
				if (kv)
					snprintf(kv, need, "%s=%s", f->key, text);
				snprintf(src, sizeof src, "--%s", f->flag);
				if (pend(o, kv, src) != 0)
					return EXIT_FAIL;
				break;
			}
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		say("unexpected argument '%s' (see --help)", argv[optind]);
		return EXIT_USAGE;
	}
	if (!o->config || (!o->output && !o->dry_run)) {
		fprintf(stderr, "harness: --config and --output are required (see --help)\n");
		return EXIT_USAGE;
	}
	if (!o->url)
		o->url = getenv("PROLLY_PG_URL");
	return -1;
}

/* ---- steps ------------------------------------------------------------------------------------ */

/* Step 1: reads, overrides and resolves the workload; drops the suites it disables. */
static int load_workload(hw_workload *w, opts *o)
{
	toml_error te;
	if (hw_workload_load(w, o->config, &te) != 0) {
		say("%s", te.text);
		return EXIT_USAGE;
	}
	/* The memory store holds the scale and service suites' trees in this process: resolve
	 * refuses a size that cannot fit in the memory this process may use. */
	for (size_t i = 0; h_suites[i] && strcmp(o->store, "mem") == 0; i++) {
		if (!((o->suites >> i) & 1))
			continue;
		if (h_suites[i] == &hsc_suite)
			w->mem_store_ram = bench_mem_limit(&w->mem_store_ram_source);
		if (h_suites[i] == &hsvc_suite)
			w->mem_store_ram_service = bench_mem_limit(&w->mem_store_ram_source);
	}
	for (int i = 0; i < o->n_pending; i++)
		if (set_override(w, o->pending[i], o->pending_src[i]) != 0)
			return EXIT_USAGE;
	if (hw_workload_resolve(w, &te) != 0) {
		say("%s", te.text);
		return EXIT_USAGE;
	}
	for (size_t i = 0; h_suites[i]; i++)
		if (!hw_suite_enabled(w, h_suites[i]))
			o->suites &= ~(1u << i);
	return EXIT_OK;
}

/* --dry-run: the resolved workload and the cells each suite would run. */
static void dry_run(const hw_workload *w, unsigned suites)
{
	toml_write(w->resolved, stdout, "resolved workload");
	printf("# config hash %s\n# cells: ", w->hash);
	for (size_t i = 0; h_suites[i]; i++)
		printf("%s%s %u", i ? ", " : "", h_suites[i]->name,
		       (suites >> i) & 1 ? h_suites[i]->cells(w) : 0);
	printf("\n");
}

/* Step 2: the manifest of this run. */
static void make_manifest(hr_manifest *m, const hw_workload *w, const opts *o)
{
	size_t k = 0;
	memset(m, 0, sizeof(*m));
	m->schema = HW_SCHEMA;
	m->seed = w->seed;
	snprintf(m->config_hash, sizeof m->config_hash, "%s", w->hash);
	revision_of(m, o->revision);
	for (size_t i = 0; h_suites[i]; i++)
		if ((o->suites >> i) & 1)
			k += (size_t)snprintf(m->suites + k, k < sizeof m->suites ? sizeof m->suites - k : 0,
			                      "%s%s", k ? "," : "", h_suites[i]->name);
	if (!k)
		snprintf(m->suites, sizeof m->suites, "none");
	snprintf(m->store, sizeof m->store, "%s", o->store);
	snprintf(m->baseline, sizeof m->baseline, "%s", o->baseline ? o->baseline : "");
	bench_utc_now(m->started, sizeof m->started);
}

/* Step 4: the suites, then the counts. */
static int run_suites(hr_dir *out, const hw_workload *w, const opts *o, const hr_manifest *m,
                      const char *url)
{
	char scratch[4096], err[H_ERR];
	int rc = EXIT_OK;
	if (o->scratch)
		snprintf(scratch, sizeof scratch, "%s", o->scratch);
	else
		snprintf(scratch, sizeof scratch, "%s/scratch", o->output);
	mkdir(scratch, 0755);
	h_run run = {.w = w,
	             .out = out,
	             .store = o->store,
	             .url = url,
	             .schema = o->schema,
	             .scratch = scratch,
	             .verbose = o->verbose,
	             .started_ns = bench_now_ns()};
	for (size_t i = 0; h_suites[i]; i++)
		if ((o->suites >> i) & 1)
			run.cells_total += h_suites[i]->cells(w);
	fprintf(stderr, "harness: %s store, suites %s, %u cells, config %.12s, revision %.12s%s\n",
	        o->store, m->suites, run.cells_total, w->hash, m->revision,
	        m->dirty == 1 ? " (dirty)" : "");
	if (h_run_suites(&run, o->suites, err, sizeof err) != 0) {
		fprintf(stderr, "harness: %s\n", err);
		rc = EXIT_FAIL;
	}
	if (!o->scratch)
		rmdir(scratch); /* only if the suites left it empty */
	return rc;
}

/* Step 5: summaries, manifest, the count of rows that did not validate. */
static int finish(hr_dir *out, const opts *o, int rc)
{
	char err[H_ERR], rows[256] = "";
	unsigned measured = 0, skipped = 0;
	int bad = 0;
	size_t k = 0;
	hr_counts(out, &measured, &skipped);
	if (hr_write_summaries(out, err, sizeof err) != 0) {
		fprintf(stderr, "harness: summaries: %s\n", err);
		rc = EXIT_FAIL;
	}
	if (rc == EXIT_OK && hr_finish(out, err, sizeof err) != 0) {
		fprintf(stderr, "harness: manifest: %s\n", err);
		rc = EXIT_FAIL;
	}
	for (size_t i = 0; h_suites[i]; i++) {
		size_t n = 0;
		bad += h_unvalidated_rows(o->output, h_suites[i], &n);
		k += (size_t)snprintf(rows + k, k < sizeof rows ? sizeof rows - k : 0, "%s%s %zu",
		                      i ? ", " : "", h_suites[i]->name, n);
	}
	fprintf(stderr,
	        "harness: measured %u cells, skipped %u completed cells; rows: %s, not validated %d\n",
	        measured, skipped, rows, bad);
	if (bad > 0 && rc == EXIT_OK)
		rc = EXIT_FAIL;
	return rc;
}

/* Step 6: the comparison with --baseline and the report. */
static int compare_and_report(const hw_workload *w, const opts *o, int rc)
{
	char err[H_ERR];
	if (!o->baseline && o->output) {
		/* A comparison left by an earlier invocation would be linked from the report. */
		char stale[4200];
		snprintf(stale, sizeof stale, "%s/regression.md", o->output);
		unlink(stale);
	}
	if (o->baseline) {
		int g = hg_compare(o->output, o->baseline, &w->regression, o->allow_mismatch, stderr, err,
		                   sizeof err);
		if (g < 0) {
			fprintf(stderr, "harness: comparison: %s\n", err);
			if (rc == EXIT_OK)
				rc = EXIT_FAIL;
		} else if (g == 1 && rc == EXIT_OK)
			rc = EXIT_GATE;
		else if (g == 2 && rc == EXIT_OK)
			rc = EXIT_ENV;
	}
	if (hrep_write(o->output, err, sizeof err) != 0)
		fprintf(stderr, "harness: report: %s\n", err);
	else
		fprintf(stderr, "harness: report %s/report.md\n", o->output);
	return rc;
}

/* ---- main ------------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	opts o = {.store = "postgres", .suites = all_suites(), .schema = "prolly_bench"};
	hw_workload w = {0};
	hr_dir *out = NULL;
	PGconn *lock = NULL;
	hr_manifest m;
	char err[H_ERR] = "";
	int rc = parse_flags(&o, argc, argv);
	if (rc >= 0)
		goto cleanup;

	/* 1. The workload: nothing runs if it is wrong. */
	if ((rc = load_workload(&w, &o)) != EXIT_OK)
		goto cleanup;
	if (o.dry_run) {
		dry_run(&w, o.suites);
		goto cleanup;
	}
	if (strcmp(o.store, "postgres") == 0 && !o.url && !o.compare_only) {
		fprintf(stderr, "harness: the postgres store needs --url or $PROLLY_PG_URL "
		                "(scripts/run_postgres_scale_benchmark.sh starts a throwaway server)\n");
		rc = EXIT_USAGE;
		goto cleanup;
	}
	/* A --baseline that is not a directory read as a run of another environment (exit 4, every
	 * material key absent) or as one with no cell in common (exit 5): it is bad usage. */
	struct stat bst;
	int bad = !o.baseline                   ? 0
	          : stat(o.baseline, &bst) != 0 ? errno
	          : S_ISDIR(bst.st_mode)        ? 0
	                                        : ENOTDIR;
	if (bad) {
		say("--baseline %s: %s", o.baseline, strerror(bad));
		rc = EXIT_USAGE;
		goto cleanup;
	}
	const char *url = strcmp(o.store, "postgres") == 0 ? o.url : NULL;
	if (o.compare_only) {
		if (!o.baseline) {
			fprintf(stderr, "harness: --compare-only needs --baseline\n");
			rc = EXIT_USAGE;
			goto cleanup;
		}
		/* It writes regression.md and report.md there: a directory it cannot write in is a
		 * usage error, as for a run, not a failed comparison. */
		if (hr_check_dir(o.output, err, sizeof err) != 0) {
			fprintf(stderr, "harness: %s: %s\n", o.output, err);
			rc = EXIT_USAGE;
			goto cleanup;
		}
		rc = compare_and_report(&w, &o, EXIT_OK);
		goto cleanup;
	}

	/* 2. The schema and the output directory: one run each at a time; resume, or refuse
	 * another run's directory untouched. */
	if (url) {
		int lrc = h_schema_lock(&lock, url, o.schema, err, sizeof err);
		if (lrc != 0) {
			fprintf(stderr, "harness: %s\n", err);
			rc = lrc == -2 ? EXIT_DIR : lrc == -3 ? EXIT_USAGE : EXIT_FAIL;
			goto cleanup;
		}
		if (h_schema_reclaim(lock, o.schema, err, sizeof err) != 0)
			fprintf(stderr, "harness: warning: looking for a leftover prolly extension: %s\n",
			        prolly_last_error());
		else if (err[0])
			fprintf(stderr, "harness: %s\n", err);
	}
	make_manifest(&m, &w, &o);
	int orc = hr_open(&out, o.output, &m, &w, err, sizeof err);
	if (orc != 0) {
		fprintf(stderr, "harness: %s: %s\n", o.output, err);
		rc = orc == -2 ? EXIT_DIR : orc == -3 ? EXIT_USAGE : EXIT_FAIL;
		goto cleanup;
	}
	if (he_write_all(o.output, url, o.schema, err, sizeof err) != 0)
		fprintf(stderr, "harness: warning: environment files: %s\n", err);

	/* 3. A baseline from another environment is refused before anything is measured. */
	if (o.baseline && !o.allow_mismatch) {
		fprintf(stderr, "harness: checking the environment against %s\n", o.baseline);
		if (environment_diff(o.output, o.baseline, stderr) > 0) {
			fprintf(stderr, "harness: the environments differ materially (above); refusing the "
			                "comparison (--allow-environment-mismatch makes it exploratory)\n");
			rc = EXIT_ENV;
			goto cleanup;
		}
	}

	/* 4-6. The suites; summaries, report, manifest; the gates. */
	rc = run_suites(out, &w, &o, &m, url);
	rc = finish(out, &o, rc);
	rc = compare_and_report(&w, &o, rc);

cleanup:
	hr_close(out);
	PQfinish(lock); /* the schema's run lock */
	hw_workload_free(&w);
	opts_free(&o);
	return rc;
}
