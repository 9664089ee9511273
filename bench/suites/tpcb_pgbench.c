/*
 * tpcb_pgbench.c - the tpcb suite's plain contender: Debian's real pgbench, run as a child
 * process against the run's server, its tables in their own schema.
 *
 *   init   pgbench -i -q -s SCALE                       (drops and creates pgbench_* tables)
 *   warmup pgbench -n -c C -j C -T WARMUP [-S]           (not recorded)
 *   cell   pgbench -n -c C -j C -T DURATION [-S] -l --log-prefix=TMP/pgb
 *
 * The connection reaches pgbench through the environment only: the run's URL is split with
 * PQconninfoParse and each setting goes into the libpq variable that stands for it (PGHOST,
 * PGPORT, PGUSER, PGPASSWORD, PGDATABASE, ...) in place of the harness's own, which pass on for
 * the rest, so no password is on a command line or in any output; PGOPTIONS gains
 * "-c search_path=SCHEMA". The cell's figures come from pgbench's own
 * report (transactions processed, tps without the initial connection time, failed and retried
 * transactions) and from its per-transaction log (-l: one line per transaction, latency in
 * microseconds and the finish time), which gives the same HDR latency histogram and
 * per-second series as the prolly contenders. Client CPU and context switches are pgbench's
 * own (wait4's rusage); the server's are read from /proc as for the other contenders, polled
 * every 50 ms while pgbench runs (its backends come and go with it: a backend's switches of
 * its last 50 ms before exit can be missed).
 * pgbench's stderr is kept in TMP/err.txt; its first "error:" line (else its last line), redacted,
 * is the error message (tpcb_pgbench_reason).
 */
#include "tpcb_int.h"

#include "clock.h"
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int tpcb_pgbench_find(tpcb_ctx *ctx, char *err, size_t errn)
{
	char dir[4000] = "";
	FILE *p = popen("pg_config --bindir 2>/dev/null", "r");
	if (p) {
		if (!fgets(dir, sizeof(dir), p))
			dir[0] = '\0';
		pclose(p);
		dir[strcspn(dir, "\r\n")] = '\0';
	}
	if (dir[0]) {
		snprintf(ctx->pgbench, sizeof(ctx->pgbench), "%s/pgbench", dir);
		if (access(ctx->pgbench, X_OK) == 0)
			return 0;
	}
	const char *path = getenv("PATH");
	while (path && *path) {
		size_t n = strcspn(path, ":");
		snprintf(ctx->pgbench, sizeof(ctx->pgbench), "%.*s/pgbench", (int)n, path);
		if (n && access(ctx->pgbench, X_OK) == 0)
			return 0;
		path += n + (path[n] == ':');
	}
	ctx->pgbench[0] = '\0';
	snprintf(err, errn,
	         "tpcb: the plain contender needs pgbench (pg_config --bindir has none, nor PATH): "
	         "install postgresql-client or drop \"plain\" from [tpcb] contenders");
	return -1;
}

/* The option of opts whose environment variable is var, if the URL sets it. */
static const char *url_sets(const PQconninfoOption *opts, const char *var, size_t len)
{
	for (const PQconninfoOption *o = opts; o->keyword; o++)
		if (o->envvar && o->val && o->val[0] && strlen(o->envvar) == len &&
		    strncmp(o->envvar, var, len) == 0)
			return o->val;
	return NULL;
}

/* The child's environment: ours, with each setting of the URL in the libpq variable that stands
 * for it instead of ours, and PGOPTIONS (the URL's, else ours) gaining the schema. So pgbench
 * connects as the harness's own libpq does, where a URL's setting wins over the environment and
 * the environment fills the rest: PGPASSWORD or PGPASSFILE given for a URL without a password
 * among them (they were dropped with every PG variable, and pgbench failed "no password
 * supplied" where the prolly contenders connected). */
static char **child_env(const char *url, const char *schema, char *err, size_t errn)
{
	char *perr = NULL;
	PQconninfoOption *opts = PQconninfoParse(url, &perr);
	size_t n = 0, k = 0, extra = 2;
	char **env = NULL;
	if (!opts) {
		char shown[400];
		prolly_redact_message(shown, sizeof(shown), perr ? perr : "out of memory", url);
		snprintf(err, errn, "tpcb: the store URL cannot be parsed: %s", shown);
		PQfreemem(perr);
		return NULL;
	}
	while (environ[n])
		n++;
	for (PQconninfoOption *o = opts; o->keyword; o++)
		extra++;
	if (!(env = calloc(n + extra + 1, sizeof(char *))))
		goto oom;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t len = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		if (url_sets(opts, environ[i], len) ||
		    (len == 9 && strncmp(environ[i], "PGOPTIONS", 9) == 0))
			continue;
		if (!(env[k++] = strdup(environ[i])))
			goto oom;
	}
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!o->envvar || !o->val || !o->val[0] || strcmp(o->envvar, "PGOPTIONS") == 0)
			continue;
		size_t len = strlen(o->envvar) + strlen(o->val) + 2;
		if (!(env[k] = malloc(len)))
			goto oom;
		snprintf(env[k++], len, "%s=%s", o->envvar, o->val);
	}
	const char *old = url_sets(opts, "PGOPTIONS", 9);
	if (!old)
		old = getenv("PGOPTIONS");
	size_t len = strlen(schema) + (old ? strlen(old) : 0) + 64;
	if (!(env[k] = malloc(len)))
		goto oom;
	snprintf(env[k++], len, "PGOPTIONS=%s%s-c search_path=%s", old ? old : "", old ? " " : "",
	         schema);
	PQconninfoFree(opts);
	return env;
oom:
	snprintf(err, errn, "tpcb: out of memory");
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
	PQconninfoFree(opts);
	return NULL;
}

static void free_env(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

/* Why pgbench failed, from its stderr text, redacted into out: its first "error:" line (pgbench
 * writes the cause first; what follows is a "detail: Query was: ..." line or "Run was aborted"),
 * else its last non-empty line; "" for none. */
void tpcb_pgbench_reason(char *out, size_t n, const char *text, const char *url)
{
	const char *best = NULL, *last = NULL;
	size_t best_len = 0, last_len = 0;
	out[0] = '\0';
	for (const char *p = text; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		size_t t = len;
		while (t && p[t - 1] == '\r')
			t--;
		if (t) {
			last = p;
			last_len = t;
			if (!best && memmem(p, t, "error:", 6)) {
				best = p;
				best_len = t;
			}
		}
		p = e ? e + 1 : NULL;
	}
	if (!best) {
		best = last;
		best_len = last_len;
	}
	if (!best)
		return;
	char *line = strndup(best, best_len);
	if (line)
		prolly_redact_message(out, n, line, url);
	free(line);
}

/* tpcb_pgbench_reason of the file's text. */
static void failure_reason(const char *file, const char *url, char *out, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	out[0] = '\0';
	if (bench_read_file(&text, &len, file))
		return;
	tpcb_pgbench_reason(out, n, text, url);
	free(text);
}

/* Runs pgbench with argv (argv[0] ignored) and the child environment; stdout to TMP/out.txt,
 * stderr to TMP/err.txt. 0 when it exited 0 (ru: its resource usage). */
static int run_pgbench(tpcb_ctx *ctx, char *const *argv, struct rusage *ru, bench_csw *csw,
                       char *err, size_t errn)
{
	char out[4300], errf[4300];
	char **env = child_env(ctx->run->url, ctx->schema, err, errn);
	int status = 0;
	if (!env)
		return -1;
	snprintf(out, sizeof(out), "%s/out.txt", ctx->tmp);
	snprintf(errf, sizeof(errf), "%s/err.txt", ctx->tmp);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errn, "tpcb: fork: %s", strerror(errno));
		free_env(env);
		return -1;
	}
	if (pid == 0) {
		int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
			_exit(126);
		execve(ctx->pgbench, argv, env);
		_exit(127);
	}
	free_env(env);
	memset(ru, 0, sizeof(*ru));
	for (;;) {
		pid_t w = wait4(pid, &status, csw ? WNOHANG : 0, ru);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			snprintf(err, errn, "tpcb: wait4: %s", strerror(errno));
			return -1;
		}
		if (w == 0) { /* still running: sample the server's processes */
			struct timespec ts = {0, 50000000};
			nanosleep(&ts, NULL);
			bench_csw_poll(csw);
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	char line[400];
	failure_reason(errf, ctx->run->url, line, sizeof(line));
	snprintf(err, errn, "tpcb: pgbench %s %s: %s", argv[1],
	         WIFEXITED(status) ? "failed" : "was killed", line[0] ? line : "no message");
	return -1;
}

int tpcb_pgbench_init(tpcb_ctx *ctx, double *load_s, char *err, size_t errn)
{
	char q[300], s[32], v[8];
	struct rusage ru;
	snprintf(q, sizeof(q), "CREATE SCHEMA IF NOT EXISTS %s", ctx->schema);
	if (tpcb_query_value(ctx->run->url, NULL, q, v, sizeof(v), err, errn))
		return -1;
	snprintf(s, sizeof(s), "%llu", (unsigned long long)ctx->scale);
	char *argv[] = {"pgbench", "-i", "-q", "-s", s, NULL};
	uint64_t t0 = bench_now_ns();
	if (run_pgbench(ctx, argv, &ru, NULL, err, errn))
		return -1;
	*load_s = (double)(bench_now_ns() - t0) / 1e9;
	return 0;
}

/* "KEY<number>" in text: the number after the first occurrence of key, else NaN. */
static double after(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	return p ? strtod(p + strlen(key), NULL) : __builtin_nan("");
}

/* Reads the per-transaction logs TMP/pgb.* into r (latency histogram, per second), removing
 * them. Returns the number of transactions logged. */
static uint64_t read_logs(tpcb_ctx *ctx, tpcb_result *r, double duration_s)
{
	DIR *d = opendir(ctx->tmp);
	struct dirent *de;
	uint64_t n = 0;
	typedef struct {
		double end_us, lat_us;
	} ent;
	ent *v = NULL;
	size_t cap = 0;
	double first = 0;
	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "pgb.", 4) != 0)
			continue;
		char path[4600];
		snprintf(path, sizeof(path), "%s/%s", ctx->tmp, de->d_name);
		FILE *f = fopen(path, "r");
		char line[256];
		while (f && fgets(line, sizeof(line), f)) {
			long client, tx, script;
			char lat[32];
			long long epoch, us;
			if (sscanf(line, "%ld %ld %31s %ld %lld %lld", &client, &tx, lat, &script, &epoch,
			           &us) != 6)
				continue;
			if (lat[0] < '0' || lat[0] > '9') /* "failed" or "skipped" */
				continue;
			if (bench_grow((void **)&v, &cap, n + 1, sizeof(ent)))
				break;
			v[n].end_us = (double)epoch * 1e6 + (double)us;
			v[n].lat_us = strtod(lat, NULL);
			double start = v[n].end_us - v[n].lat_us;
			if (!n || start < first)
				first = start;
			n++;
		}
		if (f)
			fclose(f);
		unlink(path);
	}
	closedir(d);
	r->nsec = (uint32_t)duration_s;
	r->per_second = calloc(r->nsec + 1, sizeof(uint64_t));
	for (uint64_t i = 0; i < n; i++) {
		hdr_record(r->lat, (uint64_t)(v[i].lat_us * 1000.0));
		uint64_t sec = (uint64_t)((v[i].end_us - first) / 1e6);
		if (r->per_second && sec < r->nsec)
			r->per_second[sec]++;
	}
	free(v);
	return n;
}

int tpcb_pgbench_cell(tpcb_ctx *ctx, int mode, unsigned clients, hp_conn *pc, hp_snapshot *sa,
                      hp_snapshot *sb, tpcb_result *r, char *err, size_t errn)
{
	char c[16], t[32], prefix[4300], perr[H_ERR];
	struct rusage ru;
	const char *sel = mode == TPCB_MODE_SELECT ? "-S" : NULL;
	char *text = NULL;
	size_t len = 0;
	double warm_processed = 0;

	snprintf(c, sizeof(c), "%u", clients);
	if (ctx->cfg->warmup_s) {
		snprintf(t, sizeof(t), "%llu", (unsigned long long)ctx->cfg->warmup_s);
		char *argv[] = {"pgbench", "-n", "-c", c, "-j", c, "-T", t, (char *)sel, NULL};
		if (run_pgbench(ctx, argv, &ru, NULL, err, errn))
			return -1;
		char out[4300];
		snprintf(out, sizeof(out), "%s/out.txt", ctx->tmp);
		if (bench_read_file(&text, &len, out) == 0)
			warm_processed = after(text, "number of transactions actually processed: ");
		free(text);
		text = NULL;
	}
	snprintf(t, sizeof(t), "%llu", (unsigned long long)ctx->cfg->duration_s);
	snprintf(prefix, sizeof(prefix), "--log-prefix=%s/pgb", ctx->tmp);
	char *argv[] = {"pgbench", "-n", "-c", c, "-j", c, "-T", t, "-l", prefix, (char *)sel, NULL};
	if (pc && hp_snap(pc, sa, perr, sizeof(perr)))
		sa->valid = 0;
	double srv0 = bench_server_cpu_ms(ctx->postmaster);
	bench_csw *scsw = bench_csw_start(ctx->postmaster);
	int rc = run_pgbench(ctx, argv, &ru, scsw, err, errn);
	double srv1 = bench_server_cpu_ms(ctx->postmaster);
	r->server_csw = bench_csw_total(scsw);
	if (pc && hp_snap(pc, sb, perr, sizeof(perr)))
		sb->valid = 0;
	if (rc)
		return -1;
	char out[4300];
	snprintf(out, sizeof(out), "%s/out.txt", ctx->tmp);
	if (bench_read_file(&text, &len, out)) {
		snprintf(err, errn, "tpcb: cannot read pgbench's report: %s", strerror(errno));
		return -1;
	}
	double processed = after(text, "number of transactions actually processed: ");
	double failed = after(text, "number of failed transactions: ");
	double retried = after(text, "number of transactions retried: ");
	r->tps = after(text, "tps = ");
	free(text);
	if (!(processed >= 0) || !(r->tps >= 0)) {
		snprintf(err, errn, "tpcb: pgbench's report has no transaction count or tps");
		return -1;
	}
	r->elapsed_s = (double)ctx->cfg->duration_s;
	r->transactions = (uint64_t)processed;
	r->all_commits = (uint64_t)processed + (uint64_t)(warm_processed >= 0 ? warm_processed : 0);
	r->failed = failed >= 0 ? (uint64_t)failed : 0;
	r->retries = retried >= 0 ? (uint64_t)retried : 0;
	r->attempts = r->transactions + r->failed + r->retries;
	r->client_cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	                   (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
	r->client_csw = (double)(ru.ru_nvcsw + ru.ru_nivcsw);
	r->server_cpu_ms = srv0 >= 0 && srv1 >= 0 ? srv1 - srv0 : -1;
	uint64_t logged = read_logs(ctx, r, r->elapsed_s);
	if (logged != r->transactions) {
		snprintf(r->first_error, sizeof(r->first_error),
		         "pgbench logged %llu transactions but reported %llu", (unsigned long long)logged,
		         (unsigned long long)r->transactions);
		r->read_mismatches++;
	}
	return 0;
}

int tpcb_pgbench_sums(tpcb_ctx *ctx, tpcb_sums *s, char *err, size_t errn)
{
	char v[256];
	long long a, t, b, h, n;
	if (tpcb_query_value(
	        ctx->run->url, ctx->schema,
	        "SELECT concat_ws(' ', (SELECT coalesce(sum(abalance), 0) FROM "
	        "pgbench_accounts), (SELECT coalesce(sum(tbalance), 0) FROM "
	        "pgbench_tellers), (SELECT coalesce(sum(bbalance), 0) FROM "
	        "pgbench_branches), (SELECT coalesce(sum(delta), 0) FROM pgbench_history), "
	        "(SELECT count(*) FROM pgbench_history))",
	        v, sizeof(v), err, errn))
		return -1;
	if (sscanf(v, "%lld %lld %lld %lld %lld", &a, &t, &b, &h, &n) != 5) {
		snprintf(err, errn, "tpcb: unexpected sums from pgbench's tables");
		return -1;
	}
	s->accounts = a;
	s->tellers = t;
	s->branches = b;
	s->history = h;
	s->history_rows = n;
	return 0;
}
