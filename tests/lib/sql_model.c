/*
 * sql_model.c - the SQL helpers, the model's commits and the random choices of the SQL model test
 * (sql_model.h).
 */
#include "sql_model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const sm_names[SM_NREFS] = {"main", "b1", "b2", "b3", "t1", "t2"};

void sm_fail(sm_run *t, const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "  %s:%d: check failed: %s\n    seed %#llx, step %s: ", file, line, cond,
	        (unsigned long long)t->seed, t->step);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	t->failed = 1;
}

/* ---- SQL ------------------------------------------------------------------------------------ */

/* Parameter p->n: v NULL is SQL NULL; n bytes of v in binary form otherwise. */
static void p_add(sm_params *p, Oid type, const void *v, size_t n)
{
	p->type[p->n] = type;
	p->v[p->n] = v;
	p->len[p->n] = (int)n;
	p->fmt[p->n] = 1;
	p->n++;
}
void sm_p_text(sm_params *p, const char *s)
{
	p_add(p, SM_TEXT, s, s ? strlen(s) : 0);
}
void sm_p_bytes(sm_params *p, const void *b, size_t n)
{
	p_add(p, SM_BYTEA, b ? b : "", n);
}
void sm_p_null(sm_params *p, Oid type)
{
	p_add(p, type, NULL, 0);
}
/* A bound or prefix: k[0..n) when has, else SQL NULL. */
void sm_p_bound(sm_params *p, int has, const void *k, size_t n)
{
	if (has)
		sm_p_bytes(p, k, n);
	else
		sm_p_null(p, SM_BYTEA);
}

/* Runs sql with p's parameters, results in binary. A result whose status is not want (or an
 * error whose SQLSTATE is not want_state, when given) fails the case, naming the step. */
PGresult *sm_q(sm_run *t, const char *sql, const sm_params *p, const char *want_state)
{
	static const sm_params none;
	if (!p)
		p = &none;
	if (getenv("PROLLY_TEST_TRACE"))
		fprintf(stderr, "  [%s] %s\n", t->step, sql);
	PGresult *res = PQexecParams(t->c, sql, p->n, p->type, p->v, p->len, p->fmt, 1);
	ExecStatusType st = PQresultStatus(res);
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	int ok = want_state ? (st == PGRES_FATAL_ERROR && state && !strcmp(state, want_state))
	                    : (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK);
	SM_CHECK(t, ok, "%s: %s%s", sql, want_state ? "expected SQLSTATE " : "",
	         want_state ? want_state : PQresultErrorMessage(res));
	if (!ok && want_state)
		fprintf(stderr, "    got: %s\n",
		        st == PGRES_FATAL_ERROR ? PQresultErrorMessage(res) : "no error");
	return res;
}

void sm_q0(sm_run *t, const char *sql)
{
	PQclear(sm_q(t, sql, NULL, NULL));
}

/* Value (row, col) of a binary result, its length in *n; NULL for SQL NULL. */
const unsigned char *sm_val_at(const PGresult *res, int row, int col, size_t *n)
{
	if (PQgetisnull(res, row, col))
		return NULL;
	*n = (size_t)PQgetlength(res, row, col);
	return (const unsigned char *)PQgetvalue(res, row, col);
}

uint64_t sm_be_uint(const unsigned char *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* "ARRAY[$a,...,$b]::bytea[]" for parameters first..first+n-1 (1-based), into out. */
void sm_array_sql(char *out, size_t cap, int first, size_t n)
{
	size_t o = (size_t)snprintf(out, cap, "ARRAY[");
	for (size_t i = 0; i < n && o < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s$%d", i ? "," : "", first + (int)i);
	if (o < cap)
		snprintf(out + o, cap - o, "]::bytea[]");
}

/* ---- the model's commits -------------------------------------------------------------------- */

long sm_find_commit(const sm_run *t, const char *id)
{
	for (size_t i = 0; i < t->ncommits; i++)
		if (!strcmp(t->commits[i].id, id))
			return (long)i;
	return -1;
}

/* Branch b now points at commit id, whose records are m (moved from): an id seen before must
 * hold the same records; a new one is recorded with parent. */
void sm_land(sm_run *t, int b, const char *id, size_t idlen, tm_model *m, long parent)
{
	char hex[PROLLY_ID_HEX_SIZE];
	SM_CHECK(t, idlen == PROLLY_ID_HEX_SIZE - 1, "commit id of %zu bytes", idlen);
	snprintf(hex, sizeof(hex), "%.*s", (int)(idlen < sizeof(hex) ? idlen : sizeof(hex) - 1), id);
	long at = sm_find_commit(t, hex);
	if (at >= 0) {
		SM_CHECK(t, tm_model_equal(&t->commits[at].m, m),
		         "commit %s came back with other records than it had", hex);
		tm_model_dispose(m);
	} else {
		if (t->ncommits == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 64;
			t->commits = realloc(t->commits, t->cap * sizeof(*t->commits));
			SM_REQUIRE(t, t->commits);
		}
		sm_commit *c = &t->commits[t->ncommits];
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

size_t sm_ancestors(const sm_run *t, long at, char *seen)
{
	long *stack = malloc((t->ncommits * 2 + 1) * sizeof(*stack));
	size_t n = 0, count = 0;
	if (!stack)
		abort();
	stack[n++] = at;
	while (n) {
		long i = stack[--n];
		if (i < 0 || seen[i])
			continue;
		seen[i] = 1;
		count++;
		stack[n++] = t->commits[i].parent;
		stack[n++] = t->commits[i].parent2;
	}
	free(stack);
	return count;
}

/* Back to ncommits records (the ones a rolled-back transaction made go). */
void sm_forget_after(sm_run *t, size_t ncommits)
{
	while (t->ncommits > ncommits)
		tm_model_dispose(&t->commits[--t->ncommits].m);
}

/* ---- random choices ------------------------------------------------------------------------- */

/* A key of the pool (or, 1 time in 5 while it has room, a new one added to it), into *k, *n. */
void sm_pick_key(sm_run *t, const unsigned char **k, size_t *n)
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

int sm_pick_branch(sm_run *t, int live)
{
	for (int tries = 0; tries < 64; tries++) {
		int b = (int)tm_rng_below(&t->r, SM_NBRANCH);
		if ((t->head[b] >= 0) == live)
			return b;
	}
	return live ? 0 : -1;
}

/* A random commit that no gc removed (main's head is one). */
long sm_live_commit(sm_run *t)
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
long sm_pick_ref(sm_run *t, char ref[80])
{
	uint64_t how = tm_rng_below(&t->r, 10);
	long at = -1;
	if (how < 2) {
		at = sm_live_commit(t);
		int len = how == 0 ? PROLLY_ID_HEX_SIZE - 1 : 8 + (int)tm_rng_below(&t->r, 9);
		snprintf(ref, 80, "%.*s", len, t->commits[at].id);
	} else if (how == 2) {
		int g = SM_NBRANCH + (int)tm_rng_below(&t->r, SM_NREFS - SM_NBRANCH);
		if (t->head[g] >= 0) {
			snprintf(ref, 80, "%s", sm_names[g]);
			at = t->head[g];
		}
	}
	if (at < 0) {
		int b = sm_pick_branch(t, 1);
		snprintf(ref, 80, "%s", sm_names[b]);
		at = t->head[b];
	}
	for (int steps = tm_rng_chance(&t->r, 1, 3) ? 1 + (int)tm_rng_below(&t->r, 3) : 0; steps > 0;
	     steps--) {
		size_t len = strlen(ref);
		const sm_commit *c = &t->commits[at];
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
int sm_pick_bound(sm_run *t, const unsigned char **k, size_t *n)
{
	if (tm_rng_chance(&t->r, 1, 3))
		return 0;
	sm_pick_key(t, k, n);
	if (tm_rng_chance(&t->r, 1, 3))
		*n = (size_t)tm_rng_below(&t->r, *n + 1);
	return 1;
}

int sm_bytes_cmp(const void *a, size_t an, const void *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	return c ? c : (an > bn) - (an < bn);
}

int sm_same_val(const tm_rec *a, const unsigned char *v, size_t n)
{
	return a ? (v && a->vlen == n && !memcmp(a->v, v, n)) : v == NULL;
}

/* ---- writes --------------------------------------------------------------------------------- */

/* The result's one value is the id of commit at. */
void sm_check_id(sm_run *t, const PGresult *res, long at)
{
	size_t n = 0;
	const unsigned char *id = PQntuples(res) == 1 ? sm_val_at(res, 0, 0, &n) : NULL;
	SM_CHECK(t, id && n == PROLLY_ID_HEX_SIZE - 1 && !memcmp(id, t->commits[at].id, n),
	         "not commit %s", t->commits[at].id);
}

/* The result's one text value, checked as a commit id; lands branch b there with m. */
void sm_land_result(sm_run *t, PGresult *res, int b, tm_model *m, long parent)
{
	size_t n = 0;
	const unsigned char *id = PQntuples(res) == 1 ? sm_val_at(res, 0, 0, &n) : NULL;
	SM_CHECK(t, id != NULL, "no commit id");
	if (id)
		sm_land(t, b, (const char *)id, n, m, parent);
	else
		tm_model_dispose(m);
}
