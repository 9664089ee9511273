/*
 * matrix.c - the scale engine's matrix: which cells run (the plan of a fixture, with the
 * caller's skip hook), running a cell cfg->runs times and turning the runs into a scale_row,
 * the hooks around cells, and fixtures in child processes.
 *
 * Plan: every cell of a fixture gets a mode before the fixture starts. EMIT cells run cfg->runs
 * times and make a row (hooks called, row kept); MEASURE cells (plain-table cells the caller
 * skipped but a pg cell still compares with) run the same way but make no row; SETUP cells run
 * once, untimed as far as the caller is concerned (the build of a fixture whose build cell is not
 * wanted). A fixture with nothing to EMIT is not started at all.
 *
 * Rows: a fixture's child process writes each EMIT row, as raw bytes (scale_row holds no
 * pointers), to a pipe the parent reads into the caller's list; without a child the row goes to
 * the list directly. Plain rows of the current fixture are also kept apart (ctx->plain) for the
 * vs_plain column of the pg rows.
 */
#include "engine.h"

#include <sys/wait.h>

/* One vocabulary with the harness's workload files: the first ten are the [scale] operations of
 * the TOML contract; build, full_scan_warm, get_cold_start, put_nosync, count, sync and proof are
 * the engine's extra cells, which a workload may name too. */
const char *const scale_op_names[SCALE_N_OPS] = {
    [SCALE_OP_BUILD] = "build",
    [SCALE_OP_FULL_SCAN] = "full_scan",
    [SCALE_OP_FULL_SCAN_WARM] = "full_scan_warm",
    [SCALE_OP_GET_COLD_START] = "get_cold_start",
    [SCALE_OP_GET_WARM] = "get_warm",
    [SCALE_OP_GET_COLD] = "get_cold",
    [SCALE_OP_QUERY] = "query",
    [SCALE_OP_SCAN] = "scan",
    [SCALE_OP_COUNT] = "count",
    [SCALE_OP_SYNC] = "sync",
    [SCALE_OP_PROOF] = "proof",
    [SCALE_OP_CONCURRENT] = "concurrent_query",
    [SCALE_OP_BATCH] = "batch",
    [SCALE_OP_PUT] = "put",
    [SCALE_OP_PUT_NOSYNC] = "put_nosync",
    [SCALE_OP_DIFF] = "diff",
    [SCALE_OP_MERGE] = "merge",
};
const char *const scale_pattern_names[SCALE_N_PATTERNS] = {
    "append", "random", "clustered", "random_insert", "random_delete",
};
const char *const scale_store_names[SCALE_N_STORES] = {"mem", "lmdb", "pg"};
static const char *const sync_parts[] = {"clone", "push", NULL};
static const char *const proof_parts[] = {"prove_key", "verify_key", "prove_range", "verify_range",
                                          NULL};
_Static_assert(sizeof(sync_parts) / sizeof(*sync_parts) - 1 <= SCALE_MAX_PARTS &&
                   sizeof(proof_parts) / sizeof(*proof_parts) - 1 <= SCALE_MAX_PARTS,
               "an op has more parts than plan.part holds (SCALE_MAX_PARTS)");
const char *const *const scale_op_parts[SCALE_N_OPS] = {
    [SCALE_OP_SYNC] = sync_parts,
    [SCALE_OP_PROOF] = proof_parts,
};
/* The plain table's cells take the name of the op they stand beside ("get" serves the three
 * get ops: a table has no cache to warm or clear). */
const char *const scale_plain_op_names[SCALE_N_OPS] = {
    [SCALE_OP_BUILD] = "build",
    [SCALE_OP_FULL_SCAN] = "full_scan",
    [SCALE_OP_FULL_SCAN_WARM] = "full_scan",
    [SCALE_OP_GET_COLD_START] = "get",
    [SCALE_OP_GET_WARM] = "get",
    [SCALE_OP_GET_COLD] = "get",
    [SCALE_OP_QUERY] = "query",
    [SCALE_OP_SCAN] = "scan",
    [SCALE_OP_COUNT] = "count",
    [SCALE_OP_BATCH] = "batch",
    [SCALE_OP_PUT] = "put",
    [SCALE_OP_PUT_NOSYNC] = "put_nosync",
};

enum { M_NONE, M_EMIT, M_MEASURE, M_SETUP };
enum {
	K_PROLLY,
	K_PLAIN,
	K_SQL
}; /* whose cell: the engine's, the plain table's, the extension's */

/* Modes of every cell of one fixture; column 0 is "no pattern", p + 1 pattern p. */
typedef struct plan {
	unsigned char run[SCALE_N_OPS][SCALE_N_PATTERNS + 1];
	unsigned char plain[SCALE_N_OPS][SCALE_N_PATTERNS + 1];
	unsigned char sql[SCALE_N_OPS][SCALE_N_PATTERNS + 1]; /* EMIT only */
	unsigned char part[SCALE_N_OPS][SCALE_MAX_PARTS];     /* ops with parts: EMIT or NONE */
} plan;

struct sc_ctx {
	scale_config cfg; /* the caller's, with the stamp filled in */
	const scale_hooks *hooks;
	scale_rows *out;    /* the caller's rows (parent or no-fork) */
	scale_rows plain;   /* plain rows of the current fixture (vs_plain) */
	int row_fd;         /* child: rows go to the parent through this pipe */
	int stop;           /* after_cell asked to stop */
	char workdir[4096]; /* LMDB scratch directory, "" when none */
	char fail[300];     /* the first fixture failure */
};

static volatile pid_t child_pid; /* the running fixture's process (parent side), or 0 */

pid_t scale_child_pid(void)
{
	return child_pid;
}

/* ------------------------------------------------------------------------------------------ */
/* Rows                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static int rows_add(scale_rows *l, const scale_row *r)
{
	if (bench_grow((void **)&l->rows, &l->cap, l->n + 1, sizeof(*l->rows)) != 0) {
		fprintf(stderr, "warning: out of memory keeping a row\n");
		return -1;
	}
	l->rows[l->n++] = *r;
	return 0;
}

void scale_rows_free(scale_rows *l)
{
	if (!l)
		return;
	free(l->rows);
	memset(l, 0, sizeof(*l));
}

const scale_row *scale_rows_find(const scale_rows *l, uint64_t size, const char *store,
                                 const char *op, const char *pattern)
{
	for (size_t i = 0; l && i < l->n; i++) {
		const scale_row *r = &l->rows[i];
		if (r->size == size && !strcmp(r->store, store) && !strcmp(r->op, op) &&
		    !strcmp(r->pattern, pattern))
			return r;
	}
	return NULL;
}

static void row_init(scale_row *r, const sc_ctx *ctx, uint64_t n, const char *store, const char *op,
                     const char *pattern)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->stamp, sizeof(r->stamp), "%s", ctx->cfg.stamp);
	r->seed = ctx->cfg.seed;
	r->size = n;
	snprintf(r->store, sizeof(r->store), "%s", store);
	snprintf(r->op, sizeof(r->op), "%s", op);
	snprintf(r->pattern, sizeof(r->pattern), "%s", pattern);
	r->server_cpu_ms = -1;
}

static void send_row(sc_ctx *ctx, const scale_row *r)
{
	const char *p = (const char *)r;
	size_t left = sizeof(*r);
	while (left) {
		ssize_t w = write(ctx->row_fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fprintf(stderr, "warning: cannot pass a row to the parent: %s\n", strerror(errno));
			break;
		}
		p += w;
		left -= (size_t)w;
	}
}

/* A finished EMIT row: to the parent (child) or the caller's list, then to after_cell. */
static void emit_row(sc_ctx *ctx, const scale_row *r)
{
	if (ctx->row_fd >= 0)
		send_row(ctx, r);
	else if (ctx->out)
		rows_add(ctx->out, r);
	if (ctx->hooks && ctx->hooks->after_cell && ctx->hooks->after_cell(ctx->hooks->payload, r))
		ctx->stop = 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Running a cell                                                                             */
/* ------------------------------------------------------------------------------------------ */

static int sample_cmp(const void *a, const void *b)
{
	const sample *x = a, *y = b;
	return x->ms < y->ms ? -1 : x->ms > y->ms ? 1 : 0;
}

static const char *pattern_name(int pattern)
{
	return pattern < 0 ? "-" : scale_pattern_names[pattern];
}

/* Runs one cell (cfg->runs times, once for M_SETUP) and makes its row (M_EMIT, M_MEASURE).
 * Returns 0, or the engine error of the last run (the row is then invalid). With plain set it
 * runs the plain-table analogue of op instead, with kind K_SQL the extension's (pg fixtures
 * only). part: the part of an op with parts (its name goes in the row's pattern column), else
 * -1. */
static int run_cell(fixture *fx, int op, int pattern, int part, int mode, int kind)
{
	sc_ctx *ctx = fx->ctx;
	const scale_config *cfg = fx->cfg;
	int plain = kind == K_PLAIN;
	const char *store = plain           ? SCALE_PLAIN_STORE
	                    : kind == K_SQL ? SCALE_SQL_STORE
	                                    : scale_store_names[fx->store];
	const char *opname = plain ? scale_plain_op_names[op] : scale_op_names[op];
	const char *patname = part >= 0 ? scale_op_parts[op][part] : pattern_name(pattern);
	sample samples[SCALE_MAX_RUNS];
	cell c;
	memset(&c, 0, sizeof(c));
	c.fx = fx;
	c.op = op;
	c.pattern = pattern;
	c.part = part;
	c.plain = plain;
	c.sql = kind == K_SQL;
	c.valid = 1;
	unsigned runs = mode == M_SETUP ? 1 : cfg->runs, done = 0;
	int rc = 0;
	char label[64];
	snprintf(label, sizeof(label), "%s%s%s%s",
	         plain           ? "plain "
	         : kind == K_SQL ? "sql "
	                         : "",
	         opname, strcmp(patname, "-") ? "/" : "", strcmp(patname, "-") ? patname : "");
	if (cfg->op_latency && mode != M_SETUP && hdr_new(&c.lat, 0, 0) != 0)
		c.lat = NULL; /* no memory: the row has no percentiles */
	if (mode == M_EMIT && ctx->hooks && ctx->hooks->before_cell)
		ctx->hooks->before_cell(ctx->hooks->payload, fx->n, store, opname, patname);
	for (unsigned run = 0; run < runs; run++) {
		c.run = run;
		memset(&c.cur, 0, sizeof(c.cur));
		rc = (plain ? sc_plain_fns : kind == K_SQL ? sc_sql_fns : sc_cell_fns)[op](&c);
		if (rc != 0) {
			fprintf(stderr, "[%" PRIu64 " %s] %s run %u/%u FAILED: %s\n", fx->n,
			        scale_store_names[fx->store], label, run + 1, runs, c.note);
			if (!ctx->fail[0])
				snprintf(ctx->fail, sizeof(ctx->fail), "size %" PRIu64 ", store %s: %s: %s", fx->n,
				         scale_store_names[fx->store], label, c.note);
			break;
		}
		samples[done++] = c.cur;
		if (!cfg->quiet)
			fprintf(stderr, "[%" PRIu64 " %s] %s run %u/%u: %.3f ms%s\n", fx->n,
			        scale_store_names[fx->store], label, run + 1, runs, c.cur.ms,
			        c.valid ? "" : " (INVALID)");
		if (c.cur.ms > cfg->max_cell_s * 1000.0 && run + 1 < runs) {
			if (!c.note[0])
				snprintf(c.note, sizeof(c.note),
				         "stopped after %u of %u runs: a run took longer than %.0f s", done, runs,
				         cfg->max_cell_s);
			break;
		}
	}
	hdr_free(c.lat);
	if (mode == M_SETUP)
		return rc;
	scale_row r;
	row_init(&r, ctx, fx->n, store, opname, patname);
	r.runs = done;
	r.ops = c.ops;
	r.valid = c.valid && done > 0;
	if (done) {
		qsort(samples, done, sizeof(samples[0]), sample_cmp);
		const sample *m = &samples[(done - 1) / 2];
		r.ms_min = samples[0].ms;
		r.ms_max = samples[done - 1].ms;
		/* Even count: the mean of the two middle runs; counters of the lower one. */
		r.ms_median = done % 2 ? m->ms : (m->ms + samples[done / 2].ms) / 2;
		r.ops_per_s = r.ms_median > 0 ? (double)c.ops * 1000.0 / r.ms_median : 0;
		r.us_per_op = c.ops ? r.ms_median * 1000.0 / (double)c.ops : 0;
		r.st = m->st;
		r.pg = m->pg;
		r.cpu_ms = m->cpu_ms;
		r.minor_faults = m->minflt;
		r.store_read_ms = (double)m->read_ns / 1e6;
		r.store_write_ms = (double)m->write_ns / 1e6;
		r.durable_writes = m->durable_writes;
		r.server_cpu_ms = m->srv_ms;
		r.p50_us = m->p50_us;
		r.p99_us = m->p99_us;
		r.lat_samples = m->lat_n;
	}
	snprintf(r.note, sizeof(r.note), "%s", c.note);
	if (op == SCALE_OP_BUILD && !plain && !r.note[0])
		snprintf(r.note, sizeof(r.note), "%s", fx->shape);
	if (done && !r.note[0]) /* what the median run found */
		snprintf(r.note, sizeof(r.note), "%s", samples[(done - 1) / 2].info);
	if (op == SCALE_OP_FULL_SCAN && kind == K_PROLLY && r.valid)
		fx->scan_ms = r.ms_median; /* the clone cell's yardstick */
	if (fx->store == SCALE_STORE_PG && !plain && r.valid && scale_plain_op_names[op]) {
		const scale_row *p = scale_rows_find(&ctx->plain, fx->n, SCALE_PLAIN_STORE,
		                                     scale_plain_op_names[op], r.pattern);
		if (p && p->valid && p->us_per_op > 0) /* per operation: get_cold does fewer gets */
			r.vs_plain = r.us_per_op / p->us_per_op;
	}
	r.peak_rss_mib = bench_peak_rss_mib();
	bench_rss_mib(&r.rss_anon_mib, &r.rss_file_mib);
	r.load1 = bench_load1();
	if (plain)
		rows_add(&ctx->plain, &r);
	if (mode == M_EMIT)
		emit_row(ctx, &r);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* The plan of a fixture                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* Is the plain analogue of op wanted (op or a sibling it stands for selected)? */
static int plain_wanted(const scale_config *cfg, int op)
{
	unsigned m = cfg->ops;
	switch (op) {
	case SCALE_OP_FULL_SCAN:
		return ((m >> SCALE_OP_FULL_SCAN) | (m >> SCALE_OP_FULL_SCAN_WARM)) & 1;
	case SCALE_OP_GET_COLD_START:
		return ((m >> SCALE_OP_GET_COLD_START) | (m >> SCALE_OP_GET_WARM) |
		        (m >> SCALE_OP_GET_COLD)) &
		       1;
	default: return sc_plain_fns[op] && ((m >> op) & 1);
	}
}

static int skipped_as(sc_ctx *ctx, uint64_t n, const char *store, const char *op,
                      const char *pattern)
{
	const scale_hooks *h = ctx->hooks;
	return h && h->skip && h->skip(h->payload, n, store, op, pattern);
}

static int skipped(sc_ctx *ctx, uint64_t n, const char *store, const char *op, int pattern)
{
	return skipped_as(ctx, n, store, op, pattern_name(pattern));
}

/* Does a pg cell that runs (M_EMIT) compare with the plain cell of op in column col? */
static int compared(const plan *pl, int op, int col)
{
	for (int x = 0; x < SCALE_N_OPS; x++)
		if (pl->run[x][col] == M_EMIT && scale_plain_op_names[x] &&
		    !strcmp(scale_plain_op_names[x], scale_plain_op_names[op]))
			return 1;
	return 0;
}

/* Fills pl; returns non-zero if the fixture has anything to do. */
static int make_plan(plan *pl, sc_ctx *ctx, uint64_t n, int store)
{
	const scale_config *cfg = &ctx->cfg;
	const char *sn = scale_store_names[store];
	int any = 0;
	memset(pl, 0, sizeof(*pl));
	for (int op = 0; op < SCALE_N_OPS; op++) {
		if (!((cfg->ops >> op) & 1))
			continue;
		for (int p = -1; p < SCALE_N_PATTERNS; p++) {
			if ((op < SCALE_FIRST_PATTERN_OP) != (p < 0))
				continue;
			if (p >= 0 && !((cfg->patterns >> p) & 1))
				continue;
			const char *const *parts = scale_op_parts[op];
			for (int i = 0; parts && parts[i]; i++) {
				if (skipped_as(ctx, n, sn, scale_op_names[op], parts[i]))
					continue;
				pl->part[op][i] = M_EMIT;
				pl->run[op][0] = M_EMIT;
				any = 1;
			}
			if (!parts && !skipped(ctx, n, sn, scale_op_names[op], p)) {
				pl->run[op][p + 1] = M_EMIT;
				any |= op != SCALE_OP_BUILD;
			}
			/* The extension's cell of op (pg), on the same store after the pg cells. */
			if (store == SCALE_STORE_PG && sc_sql_fns[op] &&
			    !skipped(ctx, n, SCALE_SQL_STORE, scale_op_names[op], p)) {
				pl->sql[op][p + 1] = M_EMIT;
				any = 1;
			}
		}
	}
	if (any && !pl->run[SCALE_OP_BUILD][0])
		pl->run[SCALE_OP_BUILD][0] = M_SETUP;
	if (store != SCALE_STORE_PG || cfg->no_baseline)
		return pl->run[SCALE_OP_BUILD][0] != M_NONE;

	int plain_any = 0;
	for (int op = 0; op < SCALE_N_OPS; op++) {
		if (!sc_plain_fns[op] || !plain_wanted(cfg, op))
			continue;
		for (int p = -1; p < SCALE_N_PATTERNS; p++) {
			if ((op < SCALE_FIRST_PATTERN_OP) != (p < 0))
				continue;
			if (p >= 0 && !((cfg->patterns >> p) & 1))
				continue;
			int mode = M_NONE;
			if (!skipped(ctx, n, SCALE_PLAIN_STORE, scale_plain_op_names[op], p))
				mode = M_EMIT;
			else if (compared(pl, op, p + 1))
				mode = M_MEASURE;
			pl->plain[op][p + 1] = (unsigned char)mode;
			plain_any |= mode != M_NONE && op != SCALE_OP_BUILD;
		}
	}
	if (plain_any && !pl->plain[SCALE_OP_BUILD][0])
		pl->plain[SCALE_OP_BUILD][0] = M_SETUP;
	return pl->run[SCALE_OP_BUILD][0] != M_NONE || pl->plain[SCALE_OP_BUILD][0] != M_NONE;
}

/* ------------------------------------------------------------------------------------------ */
/* Fixtures                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* Runs the cells of kind (pl->run, pl->plain or pl->sql) after the build: the read cells (an
 * op with parts: each part that is wanted), then every pattern's edit cells. */
static void run_cells(fixture *fx, const plan *pl, int kind)
{
	sc_ctx *ctx = fx->ctx;
	const unsigned char(*modes)[SCALE_N_PATTERNS + 1] = kind == K_PLAIN ? pl->plain
	                                                    : kind == K_SQL ? pl->sql
	                                                                    : pl->run;
	for (int op = SCALE_OP_BUILD + 1; op < SCALE_FIRST_PATTERN_OP && !ctx->stop; op++) {
		if (!modes[op][0])
			continue;
		const char *const *parts = kind == K_PROLLY ? scale_op_parts[op] : NULL;
		if (!parts)
			run_cell(fx, op, -1, -1, modes[op][0], kind);
		for (int i = 0; parts && parts[i] && !ctx->stop; i++)
			if (pl->part[op][i])
				run_cell(fx, op, -1, i, pl->part[op][i], kind);
	}
	for (int p = 0; p < SCALE_N_PATTERNS; p++)
		for (int op = SCALE_FIRST_PATTERN_OP; op < SCALE_N_OPS && !ctx->stop; op++)
			if (modes[op][p + 1])
				run_cell(fx, op, p, -1, modes[op][p + 1], kind);
}

/* The plain-table baseline of a pg fixture, in its own schema (dropped when done). 0, or -1
 * when its schema cannot be made. */
static int run_baseline(fixture *fx, const plan *pl)
{
	if (sc_plain_schema(fx) != 0)
		return -1;
	if (!fx->cfg->quiet)
		fprintf(stderr, "[%" PRIu64 " pg] plain-table baseline\n", fx->n);
	if (run_cell(fx, SCALE_OP_BUILD, -1, -1, pl->plain[SCALE_OP_BUILD][0], K_PLAIN) == 0)
		run_cells(fx, pl, K_PLAIN);
	else
		fprintf(stderr, "[%" PRIu64 " pg] no plain table: the baseline is skipped\n", fx->n);
	sc_drop_schema(fx, fx->plain_schema);
	fx->plain_schema[0] = '\0';
	if (bench_pg_exec(fx->admin, "CHECKPOINT", NULL) != 0) /* the Prolly build starts clean too */
		fprintf(stderr, "note: CHECKPOINT: %s\n", prolly_last_error());
	return 0;
}

/* The extension's cells on the pg fixture's store, after its pg cells. Without the extension
 * they are skipped with a note, except under CI=true, where they run and fail with it. */
static void run_sql(fixture *fx, const plan *pl)
{
	int any = 0;
	for (int op = 0; op < SCALE_N_OPS; op++)
		for (int p = 0; p <= SCALE_N_PATTERNS; p++)
			any |= pl->sql[op][p];
	if (!any)
		return;
	if (sc_sql_setup(fx) != 0) {
		const char *ci = getenv("CI");
		if (!ci || strcmp(ci, "true") != 0) {
			fprintf(stderr, "[%" PRIu64 " pg] note: the pg-sql rows are skipped: %s\n", fx->n,
			        fx->sql_why);
			return;
		}
		fprintf(stderr, "[%" PRIu64 " pg] the pg-sql rows fail (CI=true): %s\n", fx->n,
		        fx->sql_why);
	} else if (!fx->cfg->quiet) {
		fprintf(stderr, "[%" PRIu64 " pg] the prolly extension (pg-sql)\n", fx->n);
	}
	run_cells(fx, pl, K_SQL);
}

/* Everything for one size and store. Returns 0, or 1 if the fixture could not be built. */
static int run_fixture(sc_ctx *ctx, uint64_t n, int store, const plan *pl)
{
	const scale_config *cfg = &ctx->cfg;
	const char *sn = scale_store_names[store];
	int bad = 0;
	fixture *fx = calloc(1, sizeof(*fx));
	if (!fx) {
		fprintf(stderr, "error: out of memory\n");
		snprintf(ctx->fail, sizeof(ctx->fail), "size %" PRIu64 ", store %s: out of memory", n, sn);
		return 1;
	}
	fx->cfg = cfg;
	fx->ctx = ctx;
	fx->n = n;
	fx->store = store;
	fx->vlen = cfg->value_bytes;
	snprintf(fx->workdir, sizeof(fx->workdir), "%s", ctx->workdir);
	if (!cfg->quiet)
		fprintf(stderr, "[%" PRIu64 " %s] fixture\n", n, sn);
	if (store == SCALE_STORE_PG) {
		if (sc_plain_connect(fx) != 0 ||
		    (pl->plain[SCALE_OP_BUILD][0] && run_baseline(fx, pl) != 0)) {
			if (!ctx->fail[0])
				snprintf(ctx->fail, sizeof(ctx->fail), "size %" PRIu64 ", store pg: %s", n,
				         prolly_last_error());
			bad = 1;
			goto out;
		}
	}
	if (pl->run[SCALE_OP_BUILD][0] && !ctx->stop) {
		int rc = run_cell(fx, SCALE_OP_BUILD, -1, -1, pl->run[SCALE_OP_BUILD][0], K_PROLLY);
		if (rc != 0 || !fx->have_base || !fx->db) {
			fprintf(stderr, "[%" PRIu64 " %s] no base tree: skipping this fixture\n", n, sn);
			if (!ctx->fail[0])
				snprintf(ctx->fail, sizeof(ctx->fail), "size %" PRIu64 ", store %s: no base tree",
				         n, sn);
			bad = 1;
			goto out;
		}
		run_cells(fx, pl, K_PROLLY);
		if (store == SCALE_STORE_PG && !ctx->stop)
			run_sql(fx, pl);
	}
	if (store == SCALE_STORE_PG)
		sc_pg_top_statements(fx);
out:
	sc_fixture_close(fx);
	sc_plain_end(fx);
	free(fx);
	scale_rows_free(&ctx->plain);
	return bad;
}

/* Runs a fixture in a child process, collecting its rows through a pipe. */
static int run_fixture_forked(sc_ctx *ctx, uint64_t n, int store, const plan *pl)
{
	int fds[2];
	fflush(NULL);
	if (pipe(fds) != 0) {
		fprintf(stderr, "warning: pipe failed (%s): running in this process\n", strerror(errno));
		return run_fixture(ctx, n, store, pl);
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "warning: fork failed (%s): running in this process\n", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return run_fixture(ctx, n, store, pl);
	}
	if (pid == 0) {
		child_pid = 0;
		close(fds[0]);
		ctx->row_fd = fds[1];
		int bad = run_fixture(ctx, n, store, pl);
		fflush(NULL);
		close(ctx->row_fd);
		_exit(ctx->stop ? 4 : bad ? 3 : 0);
	}
	child_pid = pid;
	close(fds[1]);
	scale_row r;
	size_t got = 0;
	for (;;) {
		ssize_t k = read(fds[0], (char *)&r + got, sizeof(r) - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
		if (got == sizeof(r)) {
			if (ctx->out)
				rows_add(ctx->out, &r);
			got = 0;
		}
	}
	close(fds[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	child_pid = 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
		if (!ctx->fail[0])
			snprintf(ctx->fail, sizeof(ctx->fail),
			         "size %" PRIu64 ", store %s: the fixture failed (see stderr)", n,
			         scale_store_names[store]);
		return 1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 4) {
		ctx->stop = 1;
		return 0;
	}
	scale_row f;
	row_init(&f, ctx, n, scale_store_names[store], "(fixture)", "-");
	if (WIFSIGNALED(status))
		snprintf(f.note, sizeof(f.note), "benchmark process died of signal %d (%s)",
		         WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(f.note, sizeof(f.note), "benchmark process exited with status %d",
		         WEXITSTATUS(status));
	fprintf(stderr, "[%" PRIu64 " %s] %s\n", n, scale_store_names[store], f.note);
	if (!ctx->fail[0])
		snprintf(ctx->fail, sizeof(ctx->fail), "size %" PRIu64 ", store %s: %s", n,
		         scale_store_names[store], f.note);
	emit_row(ctx, &f);
	return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* The run                                                                                    */
/* ------------------------------------------------------------------------------------------ */

void scale_config_init(scale_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->sizes[0] = 100000;
	cfg->sizes[1] = 1000000;
	cfg->n_sizes = 2;
	cfg->stores = (1u << SCALE_N_STORES) - 1;
	cfg->ops = SCALE_DEFAULT_OPS;
	cfg->patterns = (1u << SCALE_N_PATTERNS) - 1;
	cfg->runs = 3;
	cfg->changes = 10000;
	cfg->reads = 10000;
	cfg->puts = 100;
	cfg->value_bytes = 27;
	cfg->concurrency = 8;
	cfg->seed = 42;
	cfg->dir = "/tmp";
	cfg->cache_mb = 0; /* the library's default for the store (PROLLY_CACHE_AUTO) */
	cfg->max_cell_s = 60;
}

static int check_config(const scale_config *cfg, char *err, size_t errn)
{
	const char *why = NULL;
	if (cfg->n_sizes < 1 || cfg->n_sizes > SCALE_MAX_SIZES)
		why = "sizes: 1 to 16 of them";
	else if (cfg->runs < 1 || cfg->runs > SCALE_MAX_RUNS)
		why = "runs: 1 to 64";
	else if (cfg->value_bytes < 1 || cfg->value_bytes > SCALE_MAX_VALUE_BYTES)
		why = "value_bytes: 1 to 1048576";
	else if (((cfg->ops >> SCALE_OP_CONCURRENT) & 1) &&
	         (cfg->concurrency < 1 || cfg->concurrency > SCALE_MAX_CONCURRENCY))
		why = "concurrency: 1 to 1024";
	else if (!cfg->stores || cfg->stores >> SCALE_N_STORES)
		why = "stores: none or unknown";
	else if (!cfg->ops || cfg->ops >> SCALE_N_OPS)
		why = "ops: none or unknown";
	else if (cfg->patterns >> SCALE_N_PATTERNS)
		why = "patterns: unknown";
	else if (strlen(cfg->pg_schema) > 50)
		why = "pg_schema: longer than 50 characters";
	else if ((((cfg->stores >> SCALE_STORE_LMDB) | (cfg->ops >> SCALE_OP_SYNC)) & 1) && !cfg->dir)
		why = "dir: needed for the lmdb store and the sync cells";
	for (int i = 0; !why && i < cfg->n_sizes; i++)
		if (!cfg->sizes[i])
			why = "sizes: 0 records";
	if (why)
		snprintf(err, errn, "scale: bad configuration: %s", why);
	return why ? -1 : 0;
}

int scale_run(scale_rows *rows, const scale_config *cfg, const scale_hooks *hooks, char *err,
              size_t errn)
{
	int rc = 0;
	sc_ctx *ctx = NULL;
	if (check_config(cfg, err, errn) != 0)
		return -1;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		snprintf(err, errn, "scale: out of memory");
		return -1;
	}
	ctx->cfg = *cfg;
	ctx->hooks = hooks;
	ctx->out = rows;
	ctx->row_fd = -1;
	if (!ctx->cfg.stamp[0])
		bench_utc_now(ctx->cfg.stamp, sizeof(ctx->cfg.stamp));
	if (((cfg->stores >> SCALE_STORE_LMDB) | (cfg->ops >> SCALE_OP_SYNC)) & 1) {
		snprintf(ctx->workdir, sizeof(ctx->workdir), "%s/prolly-scale-XXXXXX", cfg->dir);
		if (!mkdtemp(ctx->workdir)) {
			snprintf(err, errn, "scale: cannot create a scratch directory in %s: %s", cfg->dir,
			         strerror(errno));
			ctx->workdir[0] = '\0';
			rc = -1;
			goto cleanup;
		}
	}
	for (int s = 0; s < cfg->n_sizes && !ctx->stop; s++) {
		for (int st = 0; st < SCALE_N_STORES && !ctx->stop; st++) {
			plan pl;
			if (!((cfg->stores >> st) & 1) || !make_plan(&pl, ctx, cfg->sizes[s], st))
				continue;
			int bad = cfg->no_fork ? run_fixture(ctx, cfg->sizes[s], st, &pl)
			                       : run_fixture_forked(ctx, cfg->sizes[s], st, &pl);
			if (bad)
				rc = 1;
		}
	}
	if (ctx->stop) {
		snprintf(err, errn, "scale: stopped by the caller");
		rc = -1;
	} else if (rc) {
		snprintf(err, errn, "scale: %s", ctx->fail[0] ? ctx->fail : "a fixture failed");
	}
cleanup:
	if (ctx->workdir[0] && !cfg->keep)
		bench_rm_tree(ctx->workdir);
	scale_rows_free(&ctx->plain);
	free(ctx);
	return rc;
}
