/*
 * test_sql_model.c - the extension's SQL functions against the reference model, seeded and
 * randomized.
 *
 * Each case makes a database of its own on the program's server (a throwaway cluster unless
 * $PROLLY_PG_URL is set: tm_pg_guard), a store in its schema public through the library, and
 * CREATE EXTENSION prolly there. Then a random run of steps, each checked against a model of
 * every commit made (tests/lib/model.h):
 *   - writes through SQL: prolly_commit with repeated keys and NULL values (a delete),
 *     prolly_put, prolly_delete, prolly_delete_range, prolly_branch, prolly_delete_branch,
 *     prolly_reset, prolly_tag, prolly_delete_tag, prolly_merge with each resolve (its merge base
 *     asked of prolly_merge_base, the result computed by the three-way rule of
 *     docs/diff-merge.md; 'fail' with conflicts must be PY001), prolly_revert and
 *     prolly_cherry_pick; some inside an explicit transaction or savepoint that commits or rolls
 *     back;
 *   - writes through the C client on the same store (prolly_commit_edits), which SQL must see;
 *   - a gc through the C client now and then: what branches and tags reach stays, the rest is
 *     gone for SQL too;
 *   - reads through SQL of a branch, a tag, a full or short commit id, with steps ~N and ^N:
 *     prolly_get, prolly_get_many (repeated and missing keys), prolly_scan (random bounds,
 *     prefix, max_rows, direction), prolly_count, prolly_diff of two refs in a key window,
 *     prolly_resolve;
 *   - reads through the C client of what SQL wrote (tm_tree_check of a branch's tree);
 *   - REFs spliced from pieces of the grammar and junk: resolved, or refused with a documented
 *     SQLSTATE.
 * Without the extension installed in the server the cases skip (a failure under CI=true).
 * Re-run a failure with the seed it prints: PROLLY_TEST_SEED=0x... build/tests/test_sql_model NAME;
 * PROLLY_TEST_TRACE=1 prints every statement with its step. docs/testing.md describes the cases.
 */
#include "lib/model.h"
#include "ptest.h"

#include <libpq-fe.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NBRANCH 4 /* names[0..NBRANCH) are branches, the rest tags */
#define NREFS 6
#define NKEYS 1200 /* the key pool's room; a case uses up to its maxkeys of it */
#define MAXP 130
#define BYTEA_OID 17
#define TEXT_OID 25

static const char *const branch_names[NREFS] = {"main", "b1", "b2", "b3", "t1", "t2"};

typedef struct crec {
	char id[PROLLY_ID_HEX_SIZE];
	tm_model m;
	long parent;  /* index of the first parent, -1 for the root commit */
	long parent2; /* a merge's second parent (the commit merged), -1 for others */
	int dead;     /* unreachable from every branch and tag at a gc, which removed it */
} crec;

/* What a run did, counted for its summary line. */
enum {
	D_WRITE,
	D_CONFLICT,
	D_MERGE3,
	D_FAST,
	D_TXN,
	D_ROLLBACK,
	D_CLIENT,
	D_READ,
	D_GC,
	D_GC_GONE,
	D_BAD_REF,
	D_COUNT
};

typedef struct run {
	PGconn *c;
	prolly_db *db;
	tm_rng r;
	crec *commits;
	size_t ncommits, cap;
	long head[NREFS]; /* index into commits of each branch and tag, -1: not there */
	unsigned char keys[NKEYS][TM_KEY_MAX];
	size_t klen[NKEYS], nkeys, maxkeys;
	unsigned char *val; /* TM_VAL_BIG bytes */
	unsigned big_den;
	int fresh;  /* pick_key makes a new key while the pool has room */
	int in_txn; /* inside BEGIN: the C client must not write (it would wait for our locks) */
	char step[200];
	uint64_t seed;
	unsigned done[D_COUNT];
} run;

typedef struct sqlp {
	const char *v[MAXP];
	int len[MAXP], fmt[MAXP];
	Oid type[MAXP];
	int n;
} sqlp;

/* ---- SQL ------------------------------------------------------------------------------------ */

/* Parameter p->n: v NULL is SQL NULL; n bytes of v in binary form otherwise. */
static void p_add(sqlp *p, Oid type, const void *v, size_t n)
{
	p->type[p->n] = type;
	p->v[p->n] = v;
	p->len[p->n] = (int)n;
	p->fmt[p->n] = 1;
	p->n++;
}
static void p_text(sqlp *p, const char *s)
{
	p_add(p, TEXT_OID, s, s ? strlen(s) : 0);
}
static void p_bytes(sqlp *p, const void *b, size_t n)
{
	p_add(p, BYTEA_OID, b ? b : "", n);
}
static void p_null(sqlp *p, Oid type)
{
	p_add(p, type, NULL, 0);
}
/* A bound or prefix: k[0..n) when has, else SQL NULL. */
static void p_bound(sqlp *p, int has, const void *k, size_t n)
{
	if (has)
		p_bytes(p, k, n);
	else
		p_null(p, BYTEA_OID);
}

/* Runs sql with p's parameters, results in binary. A result whose status is not want (or an
 * error whose SQLSTATE is not want_state, when given) fails the case, naming the step. */
static PGresult *q(run *t, const char *sql, const sqlp *p, const char *want_state)
{
	static const sqlp none;
	if (!p)
		p = &none;
	if (getenv("PROLLY_TEST_TRACE"))
		fprintf(stderr, "  [%s] %s\n", t->step, sql);
	PGresult *res = PQexecParams(t->c, sql, p->n, p->type, p->v, p->len, p->fmt, 1);
	ExecStatusType st = PQresultStatus(res);
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	int ok = want_state ? (st == PGRES_FATAL_ERROR && state && !strcmp(state, want_state))
	                    : (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK);
	PT_CHECKF(ok, "seed %#llx, step %s: %s: %s%s", (unsigned long long)t->seed, t->step, sql,
	          want_state ? "expected SQLSTATE " : "",
	          want_state ? want_state : PQresultErrorMessage(res));
	if (!ok && want_state)
		fprintf(stderr, "  got: %s", PQresultErrorMessage(res));
	return res;
}

static void q0(run *t, const char *sql)
{
	PQclear(q(t, sql, NULL, NULL));
}

/* Value (row, col) of a binary result, its length in *n; NULL for SQL NULL. */
static const unsigned char *val_at(const PGresult *res, int row, int col, size_t *n)
{
	if (PQgetisnull(res, row, col))
		return NULL;
	*n = (size_t)PQgetlength(res, row, col);
	return (const unsigned char *)PQgetvalue(res, row, col);
}

static uint64_t be_uint(const unsigned char *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* "ARRAY[$a,...,$b]::bytea[]" for parameters first..first+n-1 (1-based), into out. */
static void array_sql(char *out, size_t cap, int first, size_t n)
{
	size_t o = (size_t)snprintf(out, cap, "ARRAY[");
	for (size_t i = 0; i < n && o < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s$%d", i ? "," : "", first + (int)i);
	if (o < cap)
		snprintf(out + o, cap - o, "]::bytea[]");
}

/* ---- the model's commits -------------------------------------------------------------------- */

static long find_commit(const run *t, const char *id)
{
	for (size_t i = 0; i < t->ncommits; i++)
		if (!strcmp(t->commits[i].id, id))
			return (long)i;
	return -1;
}

/* Branch b now points at commit id, whose records are m (moved from): an id seen before must
 * hold the same records; a new one is recorded with parent. */
static void land(run *t, int b, const char *id, size_t idlen, tm_model *m, long parent)
{
	char hex[PROLLY_ID_HEX_SIZE];
	PT_CHECKF(idlen == PROLLY_ID_HEX_SIZE - 1, "step %s: commit id of %zu bytes", t->step, idlen);
	snprintf(hex, sizeof(hex), "%.*s", (int)(idlen < sizeof(hex) ? idlen : sizeof(hex) - 1), id);
	long at = find_commit(t, hex);
	if (at >= 0) {
		PT_CHECKF(tm_model_equal(&t->commits[at].m, m),
		          "seed %#llx, step %s: commit %s came back with other records than it had",
		          (unsigned long long)t->seed, t->step, hex);
		tm_model_dispose(m);
	} else {
		if (t->ncommits == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 64;
			t->commits = realloc(t->commits, t->cap * sizeof(*t->commits));
			PT_REQUIRE(t->commits);
		}
		crec *c = &t->commits[t->ncommits];
		memcpy(c->id, hex, sizeof(hex));
		tm_model_init(&c->m);
		tm_model_move(&c->m, m);
		tm_model_dispose(m);
		c->parent = parent;
		c->parent2 = -1;
		c->dead = 0;
		at = (long)t->ncommits++;
	}
	if (b >= 0)
		t->head[b] = at;
}

/* Back to ncommits records (the ones a rolled-back transaction made go). */
static void forget_after(run *t, size_t ncommits)
{
	while (t->ncommits > ncommits)
		tm_model_dispose(&t->commits[--t->ncommits].m);
}

/* ---- random choices ------------------------------------------------------------------------- */

/* A key of the pool (or, 1 time in 5 while it has room, a new one added to it), into *k, *n. */
static void pick_key(run *t, const unsigned char **k, size_t *n)
{
	size_t i;
	if (t->nkeys < t->maxkeys && (t->fresh || t->nkeys < 8 || tm_rng_chance(&t->r, 1, 5))) {
		i = t->nkeys++;
		t->klen[i] = tm_gen_key(&t->r, t->keys[i]);
	} else {
		i = (size_t)tm_rng_below(&t->r, t->nkeys);
	}
	*k = t->keys[i];
	*n = t->klen[i];
}

static int pick_branch(run *t, int live)
{
	for (int tries = 0; tries < 64; tries++) {
		int b = (int)tm_rng_below(&t->r, NBRANCH);
		if ((t->head[b] >= 0) == live)
			return b;
	}
	return live ? 0 : -1;
}

/* A random commit that no gc removed (main's head is one). */
static long live_commit(run *t)
{
	for (int tries = 0; tries < 64; tries++) {
		long i = (long)tm_rng_below(&t->r, t->ncommits);
		if (!t->commits[i].dead)
			return i;
	}
	return t->head[0];
}

/* A REF for a read into ref, and its commit's index: a live branch (most often), a tag, a full
 * or a short commit id (8 to 16 hex digits of a live commit), then, one time in three, up to
 * three steps of ~N or ^N (^ alone, ^0, ^1, ^2 of a merge) that the model can follow. */
static long pick_ref(run *t, char ref[80])
{
	uint64_t how = tm_rng_below(&t->r, 10);
	long at = -1;
	if (how < 2) {
		at = live_commit(t);
		int len = how == 0 ? PROLLY_ID_HEX_SIZE - 1 : 8 + (int)tm_rng_below(&t->r, 9);
		snprintf(ref, 80, "%.*s", len, t->commits[at].id);
	} else if (how == 2) {
		int g = NBRANCH + (int)tm_rng_below(&t->r, NREFS - NBRANCH);
		if (t->head[g] >= 0) {
			snprintf(ref, 80, "%s", branch_names[g]);
			at = t->head[g];
		}
	}
	if (at < 0) {
		int b = pick_branch(t, 1);
		snprintf(ref, 80, "%s", branch_names[b]);
		at = t->head[b];
	}
	for (int steps = tm_rng_chance(&t->r, 1, 3) ? 1 + (int)tm_rng_below(&t->r, 3) : 0; steps > 0;
	     steps--) {
		size_t len = strlen(ref);
		const crec *c = &t->commits[at];
		if (tm_rng_chance(&t->r, 1, 2)) {
			unsigned n = 0, want = (unsigned)tm_rng_below(&t->r, 4);
			while (n < want && t->commits[at].parent >= 0) {
				at = t->commits[at].parent;
				n++;
			}
			snprintf(ref + len, 80 - len, "~%u", n);
		} else if (c->parent2 >= 0 && tm_rng_chance(&t->r, 1, 2)) {
			snprintf(ref + len, 80 - len, "^2");
			at = c->parent2;
		} else if (c->parent >= 0 && tm_rng_chance(&t->r, 1, 2)) {
			snprintf(ref + len, 80 - len, tm_rng_chance(&t->r, 1, 2) ? "^" : "^1");
			at = c->parent;
		} else {
			snprintf(ref + len, 80 - len, "^0");
		}
	}
	return at;
}

/* A bound: NULL one time in three, else a pool key, sometimes cut short. */
static int pick_bound(run *t, const unsigned char **k, size_t *n)
{
	if (tm_rng_chance(&t->r, 1, 3))
		return 0;
	pick_key(t, k, n);
	if (tm_rng_chance(&t->r, 1, 3))
		*n = (size_t)tm_rng_below(&t->r, *n + 1);
	return 1;
}

static int bytes_cmp(const void *a, size_t an, const void *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	return c ? c : (an > bn) - (an < bn);
}

static int same_val(const tm_rec *a, const unsigned char *v, size_t n)
{
	return a ? (v && a->vlen == n && !memcmp(a->v, v, n)) : v == NULL;
}

/* ---- writes --------------------------------------------------------------------------------- */

/* The result's one value is the id of commit at. */
static void check_id(run *t, const PGresult *res, long at)
{
	size_t n = 0;
	const unsigned char *id = PQntuples(res) == 1 ? val_at(res, 0, 0, &n) : NULL;
	PT_CHECKF(id && n == PROLLY_ID_HEX_SIZE - 1 && !memcmp(id, t->commits[at].id, n),
	          "seed %#llx, step %s: not commit %s", (unsigned long long)t->seed, t->step,
	          t->commits[at].id);
}

/* The result's one text value, checked as a commit id; lands branch b there with m. */
static void land_result(run *t, PGresult *res, int b, tm_model *m, long parent)
{
	size_t n = 0;
	const unsigned char *id = PQntuples(res) == 1 ? val_at(res, 0, 0, &n) : NULL;
	PT_CHECKF(id != NULL, "step %s: no commit id", t->step);
	if (id)
		land(t, b, (const char *)id, n, m, parent);
	else
		tm_model_dispose(m);
}

/* prolly_commit of n edits to branch b, each a delete one time in del_den (0: never). */
static void commit_n(run *t, int b, size_t n, unsigned del_den)
{
	int big = 0;
	sqlp p = {0};
	tm_model m;
	char keys_sql[1024], vals_sql[1024], sql[2200];
	unsigned char *vbuf = malloc(n * 256);
	PT_REQUIRE(vbuf);
	tm_model_init(&m);
	tm_model_copy(&m, &t->commits[t->head[b]].m);
	p_text(&p, branch_names[b]);
	for (size_t i = 0; i < n; i++) {
		const unsigned char *k;
		size_t kn;
		pick_key(t, &k, &kn);
		p_bytes(&p, k, kn);
	}
	for (size_t i = 0; i < n; i++) {
		const unsigned char *k = (const unsigned char *)p.v[1 + i];
		size_t kn = (size_t)p.len[1 + i];
		if (del_den && tm_rng_chance(&t->r, 1, del_den)) {
			p_null(&p, BYTEA_OID);
			tm_model_del(&m, k, kn);
		} else {
			/* Small values in vbuf; now and then a big one in t->val (one per commit). */
			size_t vn;
			const unsigned char *v;
			if (t->big_den && !big && tm_rng_chance(&t->r, 1, t->big_den)) {
				vn = tm_gen_value(&t->r, t->val, 2);
				v = t->val;
				big = 1;
			} else {
				vn = (size_t)tm_rng_below(&t->r, 200);
				tm_rng_bytes(&t->r, vbuf + i * 256, vn);
				v = vbuf + i * 256;
			}
			p_bytes(&p, v, vn);
			tm_model_put(&m, k, kn, v, vn);
		}
	}
	array_sql(keys_sql, sizeof(keys_sql), 2, n);
	array_sql(vals_sql, sizeof(vals_sql), 2 + (int)n, n);
	snprintf(sql, sizeof(sql), "SELECT prolly_commit($1, %s, %s)", keys_sql, vals_sql);
	snprintf(t->step, sizeof(t->step), "prolly_commit of %zu edits to %s", n, branch_names[b]);
	PGresult *res = q(t, sql, &p, NULL);
	land_result(t, res, b, &m, t->head[b]);
	PQclear(res);
	free(vbuf);
}

static void w_commit(run *t)
{
	int b = pick_branch(t, 1);
	commit_n(t, b, 1 + (size_t)tm_rng_below(&t->r, tm_rng_chance(&t->r, 1, 4) ? 60 : 8), 4);
}

static void w_put_delete(run *t)
{
	int b = pick_branch(t, 1), del = tm_rng_chance(&t->r, 1, 3);
	const unsigned char *k;
	size_t kn, vn = (size_t)tm_rng_below(&t->r, 100);
	unsigned char v[100];
	sqlp p = {0};
	tm_model m;
	pick_key(t, &k, &kn);
	tm_rng_bytes(&t->r, v, vn);
	tm_model_init(&m);
	tm_model_copy(&m, &t->commits[t->head[b]].m);
	p_text(&p, branch_names[b]);
	p_bytes(&p, k, kn);
	if (del) {
		tm_model_del(&m, k, kn);
	} else {
		p_bytes(&p, v, vn);
		tm_model_put(&m, k, kn, v, vn);
	}
	snprintf(t->step, sizeof(t->step), "prolly_%s of %s on %s", del ? "delete" : "put",
	         tm_bhex(k, kn), branch_names[b]);
	PGresult *res = q(t, del ? "SELECT prolly_delete($1, $2)" : "SELECT prolly_put($1, $2, $3)", &p,
	                  NULL);
	land_result(t, res, b, &m, t->head[b]);
	PQclear(res);
}

static void w_delete_range(run *t)
{
	int b = pick_branch(t, 1);
	const unsigned char *lo = NULL, *hi = NULL;
	size_t lon = 0, hin = 0;
	int has_lo = pick_bound(t, &lo, &lon), has_hi = pick_bound(t, &hi, &hin);
	unsigned char narrow[TM_KEY_MAX + 1];
	if (!has_lo && !has_hi)
		has_lo = 1, lo = (const unsigned char *)"", lon = 0;
	if (has_lo && tm_rng_chance(&t->r, 1, 2)) {
		/* A narrow range: lo and the keys that extend it with a byte below 0xff. */
		memcpy(narrow, lo, lon);
		narrow[lon] = 0xff;
		has_hi = 1, hi = narrow, hin = lon + 1;
	}
	if (has_lo && has_hi && bytes_cmp(lo, lon, hi, hin) > 0) {
		const unsigned char *x = lo;
		size_t xn = lon;
		lo = hi, lon = hin, hi = x, hin = xn;
	}
	sqlp p = {0};
	tm_model m;
	tm_model_init(&m);
	tm_model_copy(&m, &t->commits[t->head[b]].m);
	size_t from = has_lo ? tm_model_lower_bound(&m, lo, lon) : 0;
	size_t to = has_hi ? tm_model_lower_bound(&m, hi, hin) : m.n;
	if (to > from)
		tm_model_cut(&m, from, to);
	p_text(&p, branch_names[b]);
	p_bound(&p, has_lo, lo, lon);
	p_bound(&p, has_hi, hi, hin);
	snprintf(t->step, sizeof(t->step), "prolly_delete_range on %s (%zu keys)", branch_names[b],
	         to > from ? to - from : 0);
	PGresult *res = q(t, "SELECT prolly_delete_range($1, $2, $3)", &p, NULL);
	long was = t->head[b];
	land_result(t, res, b, &m, t->head[b]);
	PT_CHECKF(to > from || t->head[b] == was,
	          "seed %#llx, step %s: a commit made where no key was in the range",
	          (unsigned long long)t->seed, t->step);
	PQclear(res);
}

/* SELECT FN(the name of b, a random REF), which returns the commit the REF names; b then names
 * it (prolly_branch, prolly_reset, prolly_tag). */
static void point_at(run *t, const char *fn, int b)
{
	char ref[80], sql[64];
	long at = pick_ref(t, ref);
	sqlp p = {0};
	p_text(&p, branch_names[b]);
	p_text(&p, ref);
	snprintf(sql, sizeof(sql), "SELECT %s($1, $2)", fn);
	snprintf(t->step, sizeof(t->step), "%s(%s, %s)", fn, branch_names[b], ref);
	PGresult *res = q(t, sql, &p, NULL);
	check_id(t, res, at);
	t->head[b] = at;
	PQclear(res);
}

/* SELECT FN(the name of b), which removes it and returns the commit it named (prolly_delete_branch,
 * prolly_delete_tag). */
static void drop(run *t, const char *fn, int b)
{
	char sql[64];
	sqlp p = {0};
	p_text(&p, branch_names[b]);
	snprintf(sql, sizeof(sql), "SELECT %s($1)", fn);
	snprintf(t->step, sizeof(t->step), "%s(%s)", fn, branch_names[b]);
	PGresult *res = q(t, sql, &p, NULL);
	check_id(t, res, t->head[b]);
	t->head[b] = -1;
	PQclear(res);
}

/* Creates an absent branch at a random REF, or (one time in three, or when every name is taken)
 * deletes one other than main. */
static void w_branch(run *t)
{
	int b = pick_branch(t, 0);
	if (b < 0 || tm_rng_chance(&t->r, 1, 3)) {
		int d = 1 + (int)tm_rng_below(&t->r, NBRANCH - 1);
		if (t->head[d] >= 0) {
			drop(t, "prolly_delete_branch", d);
			return;
		}
		if (b < 0)
			return;
	}
	point_at(t, "prolly_branch", b);
}

/* tm_model_merge into out with resolve (0 fail, 1 ours, 2 theirs: prolly_resolver's values); the
 * conflicts it found. */
static size_t merge_models(tm_model *out, const tm_model *base, const tm_model *ours,
                           const tm_model *theirs, int resolve)
{
	prolly_merge_stats st;
	tm_model conflicts;
	tm_model_init(&conflicts);
	tm_model_init(out);
	tm_model_merge(out, &st, &conflicts, base, ours, theirs, (prolly_resolver)resolve);
	size_t n = conflicts.n;
	tm_model_dispose(&conflicts);
	return n;
}

static void w_merge(run *t, int may_fail)
{
	static const char *const resolves[3] = {"fail", "ours", "theirs"};
	int into = pick_branch(t, 1);
	char ref[80], base_id[PROLLY_ID_HEX_SIZE];
	long from = pick_ref(t, ref);
	int resolve = (int)tm_rng_below(&t->r, 3);
	if (!may_fail && resolve == 0)
		resolve = 1;
	sqlp p = {0};
	p_text(&p, branch_names[into]);
	p_text(&p, ref);
	snprintf(t->step, sizeof(t->step), "prolly_merge_base of %s and %s", branch_names[into], ref);
	PGresult *res = q(t, "SELECT prolly_merge_base($1, $2)", &p, NULL);
	size_t n = 0;
	const unsigned char *id = PQntuples(res) == 1 ? val_at(res, 0, 0, &n) : NULL;
	long base = -1;
	if (id && n == PROLLY_ID_HEX_SIZE - 1) {
		memcpy(base_id, id, n);
		base_id[n] = 0;
		base = find_commit(t, base_id);
	}
	PQclear(res);
	/* Every branch grows from main's first commit: a merge base always exists and is known. */
	PT_CHECKF(base >= 0, "seed %#llx, step %s: no merge base, or one never made",
	          (unsigned long long)t->seed, t->step);
	if (base < 0)
		return;
	tm_model m;
	size_t conflicts = merge_models(&m, &t->commits[base].m, &t->commits[t->head[into]].m,
	                                &t->commits[from].m, resolve);
	p_text(&p, resolves[resolve]);
	snprintf(t->step, sizeof(t->step), "prolly_merge %s into %s, resolve %s (%zu conflicts)", ref,
	         branch_names[into], resolves[resolve], conflicts);
	if (conflicts && resolve == 0) {
		t->done[D_CONFLICT]++;
		PQclear(q(t, "SELECT prolly_merge($1, $2, $3)", &p, "PY001"));
		tm_model_dispose(&m);
		return;
	}
	res = q(t, "SELECT prolly_merge($1, $2, $3)", &p, NULL);
	size_t before = t->ncommits;
	long was = t->head[into];
	land_result(t, res, into, &m, t->head[into]);
	t->done[t->ncommits > before ? D_MERGE3 : t->head[into] != was ? D_FAST : D_WRITE]++;
	if (t->ncommits > before)
		t->commits[t->ncommits - 1].parent2 = from;
	PQclear(res);
}

/* Moves a live branch to a random REF (prolly_reset). */
static void w_reset(run *t)
{
	point_at(t, "prolly_reset", pick_branch(t, 1));
}

/* Creates an absent tag at a random REF, or deletes one (which returns the commit it named). */
static void w_tag(run *t)
{
	int g = NBRANCH + (int)tm_rng_below(&t->r, NREFS - NBRANCH);
	if (t->head[g] < 0) {
		point_at(t, "prolly_tag", g);
		return;
	}
	drop(t, "prolly_delete_tag", g);
}

/* prolly_revert or prolly_cherry_pick of a random commit that has one parent onto a live branch:
 * the three-way merge of the commit's change into the head. Nothing changed: the head back. */
static void w_pick(run *t, int may_fail)
{
	static const char *const resolves[3] = {"fail", "ours", "theirs"};
	int b = pick_branch(t, 1), revert = tm_rng_chance(&t->r, 1, 2);
	int resolve = (int)tm_rng_below(&t->r, may_fail ? 3 : 2) + !may_fail;
	char ref[80];
	long at = pick_ref(t, ref), first = at;
	for (int tries = 0; tries < 8 && (t->commits[at].parent < 0 || t->commits[at].parent2 >= 0);
	     tries++)
		at = live_commit(t);
	if (t->commits[at].parent < 0 || t->commits[at].parent2 >= 0)
		return;
	if (at != first)
		snprintf(ref, 80, "%s", t->commits[at].id);
	const tm_model *c = &t->commits[at].m, *parent = &t->commits[t->commits[at].parent].m;
	const tm_model *ours = &t->commits[t->head[b]].m;
	tm_model m;
	size_t conflicts = merge_models(&m, revert ? c : parent, ours, revert ? parent : c, resolve);
	int unchanged = tm_model_equal(&m, ours);
	sqlp p = {0};
	p_text(&p, branch_names[b]);
	p_text(&p, ref);
	p_text(&p, resolves[resolve]);
	snprintf(t->step, sizeof(t->step), "prolly_%s of %s onto %s, resolve %s (%zu conflicts)",
	         revert ? "revert" : "cherry_pick", ref, branch_names[b], resolves[resolve], conflicts);
	const char *sql = revert ? "SELECT prolly_revert($1, $2, $3)"
	                         : "SELECT prolly_cherry_pick($1, $2, $3)";
	if (conflicts && resolve == 0) {
		t->done[D_CONFLICT]++;
		PQclear(q(t, sql, &p, "PY001"));
		tm_model_dispose(&m);
		return;
	}
	PGresult *res = q(t, sql, &p, NULL);
	long was = t->head[b];
	land_result(t, res, b, &m, t->head[b]);
	PT_CHECKF(!unchanged || t->head[b] == was,
	          "seed %#llx, step %s: a commit made where nothing changed",
	          (unsigned long long)t->seed, t->step);
	PQclear(res);
}

/* A commit through the C client, which SQL then reads. */
static void w_client(run *t)
{
	int b = pick_branch(t, 1);
	size_t n = 1 + (size_t)tm_rng_below(&t->r, 20);
	prolly_edit e[20];
	unsigned char v[20][64];
	tm_model m;
	tm_model_init(&m);
	tm_model_copy(&m, &t->commits[t->head[b]].m);
	for (size_t i = 0; i < n; i++) {
		const unsigned char *k;
		size_t kn, vn = (size_t)tm_rng_below(&t->r, 64);
		pick_key(t, &k, &kn);
		tm_rng_bytes(&t->r, v[i], vn);
		e[i].op = tm_rng_chance(&t->r, 1, 4) ? PROLLY_DEL : PROLLY_PUT;
		e[i].key = (prolly_slice){k, kn};
		e[i].value = (prolly_slice){v[i], vn};
		if (e[i].op == PROLLY_DEL)
			tm_model_del(&m, k, kn);
		else
			tm_model_put(&m, k, kn, v[i], vn);
	}
	prolly_id cid;
	char hex[PROLLY_ID_HEX_SIZE];
	snprintf(t->step, sizeof(t->step), "C client commit of %zu edits to %s", n, branch_names[b]);
	int rc = prolly_commit_edits(&cid, t->db, branch_names[b], e, n, "client");
	PT_CHECKF(rc == 0, "seed %#llx, step %s: %s", (unsigned long long)t->seed, t->step,
	          prolly_last_error());
	if (rc) {
		tm_model_dispose(&m);
		return;
	}
	prolly_id_to_hex(hex, &cid);
	land(t, b, hex, strlen(hex), &m, t->head[b]);
}

/* A gc through the C client (reflog_days 0: what only the reflog names goes too). Every commit
 * a branch or tag reaches through its parents stays and reads as before; one that none reaches
 * is gone, for SQL too (42704). */
static void w_gc(run *t)
{
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	snprintf(t->step, sizeof(t->step), "gc");
	int rc = prolly_gc(t->db, &res);
	PT_CHECKF(rc == 0, "seed %#llx, step %s: %s", (unsigned long long)t->seed, t->step,
	          prolly_last_error());
	if (rc)
		return;
	char *seen = calloc(t->ncommits, 1);
	long *stack = malloc(t->ncommits * 2 * sizeof(*stack) + sizeof(*stack) * NREFS);
	size_t n = 0;
	PT_REQUIRE(seen && stack);
	for (int b = 0; b < NREFS; b++)
		if (t->head[b] >= 0)
			stack[n++] = t->head[b];
	while (n) {
		long i = stack[--n];
		if (i < 0 || seen[i])
			continue;
		seen[i] = 1;
		stack[n++] = t->commits[i].parent;
		stack[n++] = t->commits[i].parent2;
	}
	long gone = -1;
	for (size_t i = 0; i < t->ncommits; i++) {
		if (!seen[i] && !t->commits[i].dead) {
			t->commits[i].dead = 1;
			t->done[D_GC_GONE]++;
			if (gone < 0 || tm_rng_chance(&t->r, 1, 2))
				gone = (long)i;
		}
	}
	free(seen);
	free(stack);
	t->done[D_GC]++;
	if (gone >= 0) {
		sqlp p = {0};
		p_text(&p, t->commits[gone].id);
		snprintf(t->step, sizeof(t->step), "prolly_resolve of %s, which gc removed",
		         t->commits[gone].id);
		PQclear(q(t, "SELECT prolly_resolve($1)", &p, "42704"));
	}
}

/* ---- reads ---------------------------------------------------------------------------------- */

static void r_get(run *t)
{
	char ref[80];
	long at = pick_ref(t, ref);
	const unsigned char *k;
	size_t kn, n = 0;
	pick_key(t, &k, &kn);
	sqlp p = {0};
	p_text(&p, ref);
	p_bytes(&p, k, kn);
	snprintf(t->step, sizeof(t->step), "prolly_get(%s, %s)", ref, tm_bhex(k, kn));
	PGresult *res = q(t, "SELECT prolly_get($1, $2)", &p, NULL);
	const unsigned char *v = PQntuples(res) == 1 ? val_at(res, 0, 0, &n) : NULL;
	PT_CHECKF(same_val(tm_model_get(&t->commits[at].m, k, kn), v, n), "seed %#llx, step %s",
	          (unsigned long long)t->seed, t->step);
	PQclear(res);
}

static void r_get_many(run *t)
{
	char ref[80], sql[1200], arr[1024];
	long at = pick_ref(t, ref);
	size_t n = 1 + (size_t)tm_rng_below(&t->r, 40);
	sqlp p = {0};
	p_text(&p, ref);
	for (size_t i = 0; i < n; i++) {
		if (i && tm_rng_chance(&t->r, 1, 5)) { /* a key asked for again */
			size_t j = 1 + (size_t)tm_rng_below(&t->r, i);
			p_bytes(&p, p.v[j], (size_t)p.len[j]);
		} else {
			const unsigned char *k;
			size_t kn;
			pick_key(t, &k, &kn);
			p_bytes(&p, k, kn);
		}
	}
	array_sql(arr, sizeof(arr), 2, n);
	snprintf(sql, sizeof(sql), "SELECT ord, key, value FROM prolly_get_many($1, %s)", arr);
	snprintf(t->step, sizeof(t->step), "prolly_get_many(%s, %zu keys)", ref, n);
	PGresult *res = q(t, sql, &p, NULL);
	PT_CHECKF((size_t)PQntuples(res) == n, "seed %#llx, step %s: %d rows",
	          (unsigned long long)t->seed, t->step, PQntuples(res));
	for (int i = 0; i < PQntuples(res) && (size_t)i < n; i++) {
		size_t on = 0, kn = 0, vn = 0;
		const unsigned char *o = val_at(res, i, 0, &on), *k = val_at(res, i, 1, &kn);
		const unsigned char *v = val_at(res, i, 2, &vn);
		const char *want = p.v[1 + i];
		size_t wn = (size_t)p.len[1 + i];
		PT_CHECKF(o && on == 4 && be_uint(o, 4) == (uint64_t)i + 1 && k && kn == wn &&
		              !memcmp(k, want, wn) &&
		              same_val(tm_model_get(&t->commits[at].m, want, wn), v, vn),
		          "seed %#llx, step %s: row %d", (unsigned long long)t->seed, t->step, i);
	}
	PQclear(res);
}

static void r_scan(run *t)
{
	char ref[80];
	long at = pick_ref(t, ref);
	const tm_model *m = &t->commits[at].m;
	prolly_range rg = PROLLY_RANGE_INIT;
	const unsigned char *lo = NULL, *hi = NULL, *pre = NULL;
	size_t lon = 0, hin = 0, pren = 0;
	rg.has_lo = pick_bound(t, &lo, &lon);
	rg.has_hi = pick_bound(t, &hi, &hin);
	rg.lo = (prolly_slice){lo, lon};
	rg.hi = (prolly_slice){hi, hin};
	if (tm_rng_chance(&t->r, 1, 3)) {
		pick_key(t, &pre, &pren);
		pren = (size_t)tm_rng_below(&t->r, pren < 3 ? pren + 1 : 4);
		rg.prefix = (prolly_slice){pren ? pre : NULL, pren};
	}
	rg.reverse = tm_rng_chance(&t->r, 1, 2);
	long max_rows = tm_rng_chance(&t->r, 1, 3) ? (long)tm_rng_below(&t->r, 30) : -1;
	size_t *idx = NULL, want = tm_model_range(m, &rg, &idx);
	if (max_rows >= 0 && want > (size_t)max_rows)
		want = (size_t)max_rows;
	char maxs[24];
	snprintf(maxs, sizeof(maxs), "%ld", max_rows);
	sqlp p = {0};
	p_text(&p, ref);
	p_bound(&p, rg.has_lo, lo, lon);
	p_bound(&p, rg.has_hi, hi, hin);
	p_bound(&p, pren, pre, pren);
	p_text(&p, maxs);
	p_text(&p, rg.reverse ? "t" : "f");
	/* The select-list form (a row per call) or the FROM form (the tuplestore), at random. */
	int in_from = tm_rng_chance(&t->r, 1, 2);
	const char *sql =
	    in_from ? "SELECT key, value FROM prolly_scan($1, $2, $3, $4, nullif($5::bigint, -1), "
	              "$6::boolean)"
	            : "SELECT (s).key, (s).value FROM (SELECT prolly_scan($1, $2, $3, $4, "
	              "nullif($5::bigint, -1), $6::boolean) AS s) x";
	snprintf(t->step, sizeof(t->step),
	         "prolly_scan(%s, lo %d, hi %d, prefix %zu, max %ld, rev %d, %s)", ref, rg.has_lo,
	         rg.has_hi, pren, max_rows, rg.reverse, in_from ? "from" : "select list");
	PGresult *res = q(t, sql, &p, NULL);
	PT_CHECKF((size_t)PQntuples(res) == want, "seed %#llx, step %s: %d rows, want %zu",
	          (unsigned long long)t->seed, t->step, PQntuples(res), want);
	for (int i = 0; i < PQntuples(res) && (size_t)i < want; i++) {
		size_t kn = 0, vn = 0;
		const unsigned char *k = val_at(res, i, 0, &kn), *v = val_at(res, i, 1, &vn);
		const tm_rec *w = &m->r[idx[i]];
		PT_CHECKF(k && kn == w->klen && !memcmp(k, w->k, kn) && same_val(w, v, vn),
		          "seed %#llx, step %s: row %d", (unsigned long long)t->seed, t->step, i);
	}
	free(idx);
	PQclear(res);
}

static void r_count(run *t)
{
	char ref[80];
	long at = pick_ref(t, ref);
	const tm_model *m = &t->commits[at].m;
	const unsigned char *lo = NULL, *hi = NULL;
	size_t lon = 0, hin = 0, n = 0;
	int has_lo = pick_bound(t, &lo, &lon), has_hi = pick_bound(t, &hi, &hin);
	size_t from = has_lo ? tm_model_lower_bound(m, lo, lon) : 0;
	size_t to = has_hi ? tm_model_lower_bound(m, hi, hin) : m->n;
	sqlp p = {0};
	p_text(&p, ref);
	p_bound(&p, has_lo, lo, lon);
	p_bound(&p, has_hi, hi, hin);
	snprintf(t->step, sizeof(t->step), "prolly_count(%s, lo %d, hi %d)", ref, has_lo, has_hi);
	PGresult *res = q(t, "SELECT prolly_count($1, $2, $3)", &p, NULL);
	const unsigned char *v = PQntuples(res) == 1 ? val_at(res, 0, 0, &n) : NULL;
	uint64_t want = to > from ? to - from : 0;
	PT_CHECKF(v && n == 8 && be_uint(v, 8) == want, "seed %#llx, step %s: want %llu",
	          (unsigned long long)t->seed, t->step, (unsigned long long)want);
	PQclear(res);
}

static void r_diff(run *t)
{
	char a[80], b[80];
	long ia = pick_ref(t, a), ib = pick_ref(t, b);
	const tm_model *ma = &t->commits[ia].m, *mb = &t->commits[ib].m;
	const unsigned char *lo = NULL, *hi = NULL;
	size_t lon = 0, hin = 0;
	int has_lo = pick_bound(t, &lo, &lon), has_hi = pick_bound(t, &hi, &hin);
	sqlp p = {0};
	p_text(&p, a);
	p_text(&p, b);
	p_bound(&p, has_lo, lo, lon);
	p_bound(&p, has_hi, hi, hin);
	snprintf(t->step, sizeof(t->step), "prolly_diff(%s, %s, lo %d, hi %d)", a, b, has_lo, has_hi);
	PGresult *res = q(t, "SELECT op, key, old_value, new_value FROM prolly_diff($1, $2, $3, $4)",
	                  &p, NULL);
	/* The model's diff: a merge walk of both in the window. */
	size_t i = has_lo ? tm_model_lower_bound(ma, lo, lon) : 0;
	size_t j = has_lo ? tm_model_lower_bound(mb, lo, lon) : 0;
	size_t ie = has_hi ? tm_model_lower_bound(ma, hi, hin) : ma->n;
	size_t je = has_hi ? tm_model_lower_bound(mb, hi, hin) : mb->n;
	int row = 0, rows = PQntuples(res), bad = 0;
	while ((i < ie || j < je) && !bad) {
		const tm_rec *x = i < ie ? &ma->r[i] : NULL, *y = j < je ? &mb->r[j] : NULL;
		int c = !x ? 1 : !y ? -1 : bytes_cmp(x->k, x->klen, y->k, y->klen);
		char op = c < 0 ? '-' : c > 0 ? '+' : '~';
		const tm_rec *k = c <= 0 ? x : y;
		i += c <= 0;
		j += c >= 0;
		if (c == 0 && x->vlen == y->vlen && !memcmp(x->v, y->v, x->vlen))
			continue;
		size_t on = 0, kn = 0, oldn = 0, newn = 0;
		const unsigned char *o = row < rows ? val_at(res, row, 0, &on) : NULL;
		const unsigned char *key = row < rows ? val_at(res, row, 1, &kn) : NULL;
		const unsigned char *ov = row < rows ? val_at(res, row, 2, &oldn) : NULL;
		const unsigned char *nv = row < rows ? val_at(res, row, 3, &newn) : NULL;
		bad = !o || on != 1 || o[0] != op || !key || kn != k->klen || memcmp(key, k->k, kn) ||
		      !same_val(op == '+' ? NULL : x, ov, oldn) ||
		      !same_val(op == '-' ? NULL : y, nv, newn);
		PT_CHECKF(!bad, "seed %#llx, step %s: row %d, want %c %s", (unsigned long long)t->seed,
		          t->step, row, op, tm_bhex(k->k, k->klen));
		row++;
	}
	PT_CHECKF(bad || row == rows, "seed %#llx, step %s: %d rows, want %d",
	          (unsigned long long)t->seed, t->step, rows, row);
	PQclear(res);
}

static void r_resolve(run *t)
{
	char ref[80];
	long at = pick_ref(t, ref);
	sqlp p = {0};
	p_text(&p, ref);
	snprintf(t->step, sizeof(t->step), "prolly_resolve(%s)", ref);
	PGresult *res = q(t, "SELECT prolly_resolve($1)", &p, NULL);
	check_id(t, res, at);
	PQclear(res);
}

/* A REF spliced at random from pieces of the grammar and junk: whatever it is, it resolves or is
 * refused with a documented SQLSTATE (22023 malformed, 42704 unknown, 55000 beyond the reflog);
 * never another error, never a lost connection. */
static void r_bad_ref(run *t)
{
	static const char *const pieces[] = {"main",
	                                     "b1",
	                                     "t1",
	                                     "zz",
	                                     "~",
	                                     "^",
	                                     "@{",
	                                     "}",
	                                     "{",
	                                     "..",
	                                     "/",
	                                     "-",
	                                     "0",
	                                     "1",
	                                     "2",
	                                     "99999999999999999999",
	                                     "-1",
	                                     " ",
	                                     "\xc3\xa9",
	                                     "\x01",
	                                     "HEAD",
	                                     ":",
	                                     "@{1}",
	                                     "@{-1}",
	                                     "@{2026-12-01}",
	                                     "@{9999-99-99}",
	                                     "refs/heads/main",
	                                     "*",
	                                     "%",
	                                     "'",
	                                     "\\",
	                                     NULL};
	size_t np = 0;
	while (pieces[np])
		np++;
	char ref[200] = "";
	size_t len = 0;
	for (int k = 1 + (int)tm_rng_below(&t->r, 5); k > 0 && len < 120; k--) {
		if (tm_rng_chance(&t->r, 1, 4)) { /* hex digits, some of a live commit's id */
			const char *id = t->commits[live_commit(t)].id;
			size_t n = 1 + (size_t)tm_rng_below(&t->r, 70);
			for (size_t i = 0; i < n && len < sizeof(ref) - 1; i++)
				ref[len++] = tm_rng_chance(&t->r, 1, 2) && i < 64
				                 ? id[i]
				                 : "0123456789abcdefABCDEF"[tm_rng_below(&t->r, 22)];
			ref[len] = 0;
		} else {
			const char *pc = pieces[tm_rng_below(&t->r, np)];
			len += (size_t)snprintf(ref + len, sizeof(ref) - len, "%s", pc);
		}
	}
	/* The escapes above are for the C source only: make them bytes. */
	for (char *x; (x = strstr(ref, "\\x")) != NULL;)
		memmove(x, x + 1, strlen(x));
	char *w = ref;
	for (const char *r = ref; *r; r++) {
		if (r[0] == '\\' && r[1] == 'x' && r[2] && r[3]) {
			char hex[3] = {r[2], r[3], 0};
			*w++ = (char)strtol(hex, NULL, 16);
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
	sqlp p = {0};
	p_text(&p, ref);
	snprintf(t->step, sizeof(t->step), "a spliced REF %s", tm_bhex(ref, strlen(ref)));
	if (t->in_txn) /* an error must not take the transaction's writes with it */
		q0(t, "SAVEPOINT bad_ref");
	PGresult *res = PQexecParams(
	    t->c, tm_rng_chance(&t->r, 1, 2) ? "SELECT prolly_resolve($1)" : "SELECT prolly_count($1)",
	    p.n, p.type, p.v, p.len, p.fmt, 1);
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	int ok = PQresultStatus(res) == PGRES_TUPLES_OK ||
	         (state && (!strcmp(state, "22023") || !strcmp(state, "42704") ||
	                    !strcmp(state, "55000") || !strcmp(state, "22021")));
	PT_CHECKF(ok, "seed %#llx, step %s: %s", (unsigned long long)t->seed, t->step,
	          PQresultErrorMessage(res));
	if (getenv("PROLLY_TEST_TRACE"))
		fprintf(stderr, "  [%s] -> %s\n", t->step, state ? state : "ok");
	PQclear(res);
	if (t->in_txn)
		q0(t, "ROLLBACK TO SAVEPOINT bad_ref");
	t->done[D_BAD_REF]++;
}

/* The C client reads a branch SQL wrote (outside any transaction of ours). */
static void r_client(run *t, int b)
{
	prolly_commit *c = NULL;
	snprintf(t->step, sizeof(t->step), "C client read of %s", branch_names[b]);
	int rc = prolly_branch_commit(&c, t->db, branch_names[b]);
	PT_CHECKF(rc == 0, "seed %#llx, step %s: %s", (unsigned long long)t->seed, t->step,
	          prolly_last_error());
	if (rc)
		return;
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, &c->id);
	PT_CHECKF(!strcmp(hex, t->commits[t->head[b]].id), "seed %#llx, step %s: head %s, want %s",
	          (unsigned long long)t->seed, t->step, hex, t->commits[t->head[b]].id);
	PT_CHECKF(tm_tree_check(t->db, &c->tree, &t->commits[t->head[b]].m, t->step) == 0,
	          "seed %#llx, step %s", (unsigned long long)t->seed, t->step);
	prolly_commit_free(c);
}

/* ---- the run -------------------------------------------------------------------------------- */

static void one_write(run *t, int may_fail)
{
	uint64_t w = tm_rng_below(&t->r, 24);
	t->done[w < 22 || t->in_txn ? D_WRITE : D_CLIENT]++;
	if (w < 7)
		w_commit(t);
	else if (w < 10)
		w_put_delete(t);
	else if (w < 12)
		w_delete_range(t);
	else if (w < 14)
		w_branch(t);
	else if (w < 17)
		w_merge(t, may_fail);
	else if (w < 18)
		w_reset(t);
	else if (w < 19)
		w_tag(t);
	else if (w < 22)
		w_pick(t, may_fail);
	else if (!t->in_txn)
		w_client(t);
	else
		w_commit(t);
}

static void one_read(run *t)
{
	t->done[D_READ]++;
	switch (tm_rng_below(&t->r, 7)) {
	case 6: r_bad_ref(t); break;
	case 0: r_get(t); break;
	case 1: r_get_many(t); break;
	case 2: r_scan(t); break;
	case 3: r_count(t); break;
	case 4: r_diff(t); break;
	default: r_resolve(t); break;
	}
}

/* Writes and reads inside BEGIN ... COMMIT or ROLLBACK, or a savepoint rolled back. */
static void one_txn(run *t)
{
	size_t ncommits = t->ncommits;
	long head[NREFS];
	memcpy(head, t->head, sizeof(head));
	int rollback = tm_rng_chance(&t->r, 1, 2), savepoint = tm_rng_chance(&t->r, 1, 3);
	t->in_txn = 1;
	t->done[D_TXN]++;
	t->done[D_ROLLBACK] += rollback;
	snprintf(t->step, sizeof(t->step), "BEGIN");
	q0(t, "BEGIN");
	if (savepoint) {
		one_write(t, 0);
		ncommits = t->ncommits;
		memcpy(head, t->head, sizeof(head));
		q0(t, "SAVEPOINT s");
	}
	for (int i = 0, n = 1 + (int)tm_rng_below(&t->r, 4); i < n && !pt_failed_now; i++) {
		one_write(t, 0);
		one_read(t);
	}
	if (savepoint && rollback) {
		q0(t, "ROLLBACK TO SAVEPOINT s");
		forget_after(t, ncommits);
		memcpy(t->head, head, sizeof(head));
	}
	if (!pt_failed_now)
		one_read(t); /* what the transaction sees now */
	snprintf(t->step, sizeof(t->step), "end of transaction");
	q0(t, savepoint || !rollback ? "COMMIT" : "ROLLBACK");
	if (!savepoint && rollback) {
		forget_after(t, ncommits);
		memcpy(t->head, head, sizeof(head));
	}
	t->in_txn = 0;
}

/* A connection string for database dbname on $PROLLY_PG_URL's server, into out. */
static int conninfo_for(char *out, size_t cap, const char *dbname)
{
	char *err = NULL;
	PQconninfoOption *o = PQconninfoParse(getenv("PROLLY_PG_URL"), &err);
	if (!o) {
		fprintf(stderr, "  cannot parse PROLLY_PG_URL: %s\n", err ? err : "?");
		PQfreemem(err);
		return -1;
	}
	size_t at = 0;
	for (PQconninfoOption *x = o; x->keyword && at < cap; x++) {
		const char *v = !strcmp(x->keyword, "dbname") ? dbname : x->val;
		if (!v)
			continue;
		at += (size_t)snprintf(out + at, cap - at, "%s%s='", at ? " " : "", x->keyword);
		for (; *v && at + 3 < cap; v++) {
			if (*v == '\'' || *v == '\\')
				out[at++] = '\\';
			out[at++] = *v;
		}
		at += (size_t)snprintf(out + at, cap - at, "'");
	}
	PQconninfoFree(o);
	return at < cap ? 0 : -1;
}

static int have_extension(PGconn *c)
{
	PGresult *res = PQexec(c, "SELECT 1 FROM pg_available_extensions WHERE name = 'prolly'");
	int have = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
	PQclear(res);
	return have;
}

static void quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

static void sql_model_run(const char *name, uint64_t salt, unsigned node_size, int cache_off,
                          unsigned big_den, size_t maxkeys, unsigned steps)
{
	static unsigned seq;
	char dbname[64], conn[2048], sql[200];
	run t;
	memset(&t, 0, sizeof(t));
	t.seed = PT_SEED() ^ salt;
	t.big_den = big_den;
	t.maxkeys = maxkeys < NKEYS ? maxkeys : NKEYS;
	tm_rng_seed(&t.r, t.seed);
	for (int b = 0; b < NREFS; b++)
		t.head[b] = -1;
	snprintf(dbname, sizeof(dbname), "prolly_sqlmodel_%d_%u", (int)getpid(), seq++);
	PGconn *admin = PQconnectdb(getenv("PROLLY_PG_URL"));
	PT_REQUIRE(PQstatus(admin) == CONNECTION_OK);
	PQsetNoticeProcessor(admin, quiet, NULL);
	if (!have_extension(admin)) {
		PQfinish(admin);
		PT_SKIP("the prolly extension is not installed in the server (make -C ext/postgres "
		        "install)");
		return;
	}
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", dbname);
	PGresult *res = PQexec(admin, sql);
	int made = PQresultStatus(res) == PGRES_COMMAND_OK;
	PT_CHECKF(made, "%s: %s", sql, PQresultErrorMessage(res));
	PQclear(res);
	t.val = malloc(TM_VAL_BIG);
	prolly_store *st = NULL;
	prolly_pg_options po = PROLLY_PG_OPTIONS_INIT;
	po.node_size = node_size;
	if (!made || !t.val || conninfo_for(conn, sizeof(conn), dbname) != 0)
		goto cleanup;
	PT_CHECK_RC(prolly_store_pg_open(&st, conn, &po), 0);
	if (!st)
		goto cleanup;
	prolly_options o = PROLLY_OPTIONS_INIT;
	o.reflog_days = 0; /* a gc keeps what branches and tags reach, nothing for the reflog */
	PT_CHECK_RC(prolly_db_new(&t.db, st, &o), 0);
	if (!t.db)
		goto cleanup;
	prolly_id init;
	PT_CHECK_RC(prolly_commit_edits(&init, t.db, "main", NULL, 0, "init"), 0);
	{
		char hex[PROLLY_ID_HEX_SIZE];
		tm_model m;
		tm_model_init(&m);
		prolly_id_to_hex(hex, &init);
		land(&t, 0, hex, strlen(hex), &m, -1);
	}
	t.c = PQconnectdb(conn);
	PT_CHECKF(PQstatus(t.c) == CONNECTION_OK, "%s", PQerrorMessage(t.c));
	if (PQstatus(t.c) != CONNECTION_OK)
		goto cleanup;
	PQsetNoticeProcessor(t.c, quiet, NULL);
	snprintf(t.step, sizeof(t.step), "setup");
	q0(&t, "CREATE EXTENSION prolly");
	if (cache_off)
		q0(&t, "SET prolly.cache_size = 0");
	/* main starts with half the key pool, so that the trees have some height from the start. */
	t.fresh = 1;
	while (t.nkeys < t.maxkeys / 2 && !pt_failed_now)
		commit_n(&t, 0, 60, 0);
	t.fresh = 0;
	for (unsigned s = 0; s < steps && !pt_failed_now; s++) {
		uint64_t what = tm_rng_below(&t.r, 40);
		if (what < 18)
			one_write(&t, 1);
		else if (what < 34)
			one_read(&t);
		else if (what < 38)
			one_txn(&t);
		else if (what < 39)
			r_client(&t, pick_branch(&t, 1));
		else
			w_gc(&t);
	}
	for (int b = 0; b < NBRANCH && !pt_failed_now; b++)
		if (t.head[b] >= 0)
			r_client(&t, b);
	if (pt_failed_now)
		fprintf(stderr, "  %s: re-run with PROLLY_TEST_SEED=%#llx\n", name,
		        (unsigned long long)PT_SEED());
	res = PQexec(t.c, "SELECT records || ' records, height ' || height FROM prolly_stats('main')");
	printf("# %s: %u writes (%u through the C client), %u reads, %u transactions (%u rolled "
	       "back), merges: %u three-way, %u fast-forward, %u refused for conflicts; %zu commits, "
	       "%u gone in %u gc runs; %zu keys; main: %s\n",
	       name, t.done[D_WRITE] + t.done[D_CLIENT], t.done[D_CLIENT], t.done[D_READ],
	       t.done[D_TXN], t.done[D_ROLLBACK], t.done[D_MERGE3], t.done[D_FAST], t.done[D_CONFLICT],
	       t.ncommits, t.done[D_GC_GONE], t.done[D_GC], t.nkeys,
	       PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : "?");
	PQclear(res);
cleanup:
	PQfinish(t.c);
	prolly_close(t.db);
	forget_after(&t, 0);
	free(t.commits);
	free(t.val);
	if (made) {
		snprintf(sql, sizeof(sql), "DROP DATABASE %s WITH (FORCE)", dbname);
		PQclear(PQexec(admin, sql));
	}
	PQfinish(admin);
}

PT_TEST(sql_model_default)
{
	/* 4 KiB nodes, the backend's node cache on, a big value now and then. */
	sql_model_run("sql_model_default", 0x5a1, 0, 0, 40, 300, 260 * tm_scale());
}

PT_TEST(sql_model_no_cache)
{
	/* prolly.cache_size = 0: every node the functions read comes from the table. */
	sql_model_run("sql_model_no_cache", 0x5a2, 0, 1, 0, 300, 200 * tm_scale());
}

PT_TEST(sql_model_small_nodes)
{
	/* 1 KiB nodes and a larger key pool: trees of three levels and more. */
	sql_model_run("sql_model_small_nodes", 0x5a3, 1024, 0, 0, 1200, 300 * tm_scale());
}

int main(int argc, char **argv)
{
	if (tm_pg_guard_tap() != 0)
		return 1;
	return pt_run(argc, argv);
}
