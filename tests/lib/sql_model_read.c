/*
 * sql_model_read.c - the read steps of the SQL model test (sql_model.h): each reads through SQL
 * (or the C client) and compares with the model of the commit its REF names.
 */
#include "sql_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sm_r_get(sm_run *t)
{
	char ref[80];
	long at = sm_pick_ref(t, ref);
	const unsigned char *k;
	size_t kn, n = 0;
	sm_pick_key(t, &k, &kn);
	sm_params p = {0};
	sm_p_text(&p, ref);
	sm_p_bytes(&p, k, kn);
	snprintf(t->step, sizeof(t->step), "prolly_get(%s, %s)", ref, tm_bhex(k, kn));
	PGresult *res = sm_q(t, "SELECT prolly_get($1, $2)", &p, NULL);
	const unsigned char *v = PQntuples(res) == 1 ? sm_val_at(res, 0, 0, &n) : NULL;
	SM_CHECK(t, sm_same_val(tm_model_get(&t->commits[at].m, k, kn), v, n), "%s", "");
	PQclear(res);
}

void sm_r_get_many(sm_run *t)
{
	char ref[80], sql[1200], arr[1024];
	long at = sm_pick_ref(t, ref);
	size_t n = 1 + (size_t)tm_rng_below(&t->r, 40);
	sm_params p = {0};
	sm_p_text(&p, ref);
	for (size_t i = 0; i < n; i++) {
		if (i && tm_rng_chance(&t->r, 1, 5)) { /* a key asked for again */
			size_t j = 1 + (size_t)tm_rng_below(&t->r, i);
			sm_p_bytes(&p, p.v[j], (size_t)p.len[j]);
		} else {
			const unsigned char *k;
			size_t kn;
			sm_pick_key(t, &k, &kn);
			sm_p_bytes(&p, k, kn);
		}
	}
	sm_array_sql(arr, sizeof(arr), 2, n);
	snprintf(sql, sizeof(sql), "SELECT ord, key, value FROM prolly_get_many($1, %s)", arr);
	snprintf(t->step, sizeof(t->step), "prolly_get_many(%s, %zu keys)", ref, n);
	PGresult *res = sm_q(t, sql, &p, NULL);
	SM_CHECK(t, (size_t)PQntuples(res) == n, "%d rows", PQntuples(res));
	for (int i = 0; i < PQntuples(res) && (size_t)i < n; i++) {
		size_t on = 0, kn = 0, vn = 0;
		const unsigned char *o = sm_val_at(res, i, 0, &on), *k = sm_val_at(res, i, 1, &kn);
		const unsigned char *v = sm_val_at(res, i, 2, &vn);
		const char *want = p.v[1 + i];
		size_t wn = (size_t)p.len[1 + i];
		SM_CHECK(t,
		         o && on == 4 && sm_be_uint(o, 4) == (uint64_t)i + 1 && k && kn == wn &&
		             !memcmp(k, want, wn) &&
		             sm_same_val(tm_model_get(&t->commits[at].m, want, wn), v, vn),
		         "row %d", i);
	}
	PQclear(res);
}

void sm_r_scan(sm_run *t)
{
	char ref[80];
	long at = sm_pick_ref(t, ref);
	const tm_model *m = &t->commits[at].m;
	prolly_range rg = PROLLY_RANGE_INIT;
	const unsigned char *lo = NULL, *hi = NULL, *pre = NULL;
	size_t lon = 0, hin = 0, pren = 0;
	rg.has_lo = sm_pick_bound(t, &lo, &lon);
	rg.has_hi = sm_pick_bound(t, &hi, &hin);
	rg.lo = (prolly_slice){lo, lon};
	rg.hi = (prolly_slice){hi, hin};
	if (tm_rng_chance(&t->r, 1, 3)) {
		sm_pick_key(t, &pre, &pren);
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
	sm_params p = {0};
	sm_p_text(&p, ref);
	sm_p_bound(&p, rg.has_lo, lo, lon);
	sm_p_bound(&p, rg.has_hi, hi, hin);
	sm_p_bound(&p, pren, pre, pren);
	sm_p_text(&p, maxs);
	sm_p_text(&p, rg.reverse ? "t" : "f");
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
	PGresult *res = sm_q(t, sql, &p, NULL);
	SM_CHECK(t, (size_t)PQntuples(res) == want, "%d rows, want %zu", PQntuples(res), want);
	for (int i = 0; i < PQntuples(res) && (size_t)i < want; i++) {
		size_t kn = 0, vn = 0;
		const unsigned char *k = sm_val_at(res, i, 0, &kn), *v = sm_val_at(res, i, 1, &vn);
		const tm_rec *w = &m->r[idx[i]];
		SM_CHECK(t, k && kn == w->klen && !memcmp(k, w->k, kn) && sm_same_val(w, v, vn), "row %d",
		         i);
	}
	free(idx);
	PQclear(res);
}

void sm_r_count(sm_run *t)
{
	char ref[80];
	long at = sm_pick_ref(t, ref);
	const tm_model *m = &t->commits[at].m;
	const unsigned char *lo = NULL, *hi = NULL;
	size_t lon = 0, hin = 0, n = 0;
	int has_lo = sm_pick_bound(t, &lo, &lon), has_hi = sm_pick_bound(t, &hi, &hin);
	size_t from = has_lo ? tm_model_lower_bound(m, lo, lon) : 0;
	size_t to = has_hi ? tm_model_lower_bound(m, hi, hin) : m->n;
	sm_params p = {0};
	sm_p_text(&p, ref);
	sm_p_bound(&p, has_lo, lo, lon);
	sm_p_bound(&p, has_hi, hi, hin);
	snprintf(t->step, sizeof(t->step), "prolly_count(%s, lo %d, hi %d)", ref, has_lo, has_hi);
	PGresult *res = sm_q(t, "SELECT prolly_count($1, $2, $3)", &p, NULL);
	const unsigned char *v = PQntuples(res) == 1 ? sm_val_at(res, 0, 0, &n) : NULL;
	uint64_t want = to > from ? to - from : 0;
	SM_CHECK(t, v && n == 8 && sm_be_uint(v, 8) == want, "want %llu", (unsigned long long)want);
	PQclear(res);
}

void sm_r_diff(sm_run *t)
{
	char a[80], b[80];
	long ia = sm_pick_ref(t, a), ib = sm_pick_ref(t, b);
	const tm_model *ma = &t->commits[ia].m, *mb = &t->commits[ib].m;
	const unsigned char *lo = NULL, *hi = NULL;
	size_t lon = 0, hin = 0;
	int has_lo = sm_pick_bound(t, &lo, &lon), has_hi = sm_pick_bound(t, &hi, &hin);
	sm_params p = {0};
	sm_p_text(&p, a);
	sm_p_text(&p, b);
	sm_p_bound(&p, has_lo, lo, lon);
	sm_p_bound(&p, has_hi, hi, hin);
	snprintf(t->step, sizeof(t->step), "prolly_diff(%s, %s, lo %d, hi %d)", a, b, has_lo, has_hi);
	PGresult *res = sm_q(t, "SELECT op, key, old_value, new_value FROM prolly_diff($1, $2, $3, $4)",
	                     &p, NULL);
	/* The model's diff: a merge walk of both in the window. */
	size_t i = has_lo ? tm_model_lower_bound(ma, lo, lon) : 0;
	size_t j = has_lo ? tm_model_lower_bound(mb, lo, lon) : 0;
	size_t ie = has_hi ? tm_model_lower_bound(ma, hi, hin) : ma->n;
	size_t je = has_hi ? tm_model_lower_bound(mb, hi, hin) : mb->n;
	int row = 0, rows = PQntuples(res), bad = 0;
	while ((i < ie || j < je) && !bad) {
		const tm_rec *x = i < ie ? &ma->r[i] : NULL, *y = j < je ? &mb->r[j] : NULL;
		int c = !x ? 1 : !y ? -1 : sm_bytes_cmp(x->k, x->klen, y->k, y->klen);
		char op = c < 0 ? '-' : c > 0 ? '+' : '~';
		const tm_rec *k = c <= 0 ? x : y;
		i += c <= 0;
		j += c >= 0;
		if (c == 0 && x->vlen == y->vlen && !memcmp(x->v, y->v, x->vlen))
			continue;
		size_t on = 0, kn = 0, oldn = 0, newn = 0;
		const unsigned char *o = row < rows ? sm_val_at(res, row, 0, &on) : NULL;
		const unsigned char *key = row < rows ? sm_val_at(res, row, 1, &kn) : NULL;
		const unsigned char *ov = row < rows ? sm_val_at(res, row, 2, &oldn) : NULL;
		const unsigned char *nv = row < rows ? sm_val_at(res, row, 3, &newn) : NULL;
		bad = !o || on != 1 || o[0] != op || !key || kn != k->klen || memcmp(key, k->k, kn) ||
		      !sm_same_val(op == '+' ? NULL : x, ov, oldn) ||
		      !sm_same_val(op == '-' ? NULL : y, nv, newn);
		SM_CHECK(t, !bad, "row %d, want %c %s", row, op, tm_bhex(k->k, k->klen));
		row++;
	}
	SM_CHECK(t, bad || row == rows, "%d rows, want %d", rows, row);
	PQclear(res);
}

void sm_r_resolve(sm_run *t)
{
	char ref[80];
	long at = sm_pick_ref(t, ref);
	sm_params p = {0};
	sm_p_text(&p, ref);
	snprintf(t->step, sizeof(t->step), "prolly_resolve(%s)", ref);
	PGresult *res = sm_q(t, "SELECT prolly_resolve($1)", &p, NULL);
	sm_check_id(t, res, at);
	PQclear(res);
}

/* prolly_log of a REF: each commit its history holds once, all of them without max_rows. */
void sm_r_log(sm_run *t)
{
	char ref[80], maxs[24];
	long at = sm_pick_ref(t, ref);
	long max = tm_rng_chance(&t->r, 1, 2) ? (long)tm_rng_below(&t->r, 12) : -1;
	char *seen = calloc(t->ncommits, 1), *got = calloc(t->ncommits, 1);
	SM_REQUIRE(t, seen && got);
	size_t want = sm_ancestors(t, at, seen);
	if (max >= 0 && want > (size_t)max)
		want = (size_t)max;
	snprintf(maxs, sizeof(maxs), "%ld", max);
	sm_params p = {0};
	sm_p_text(&p, ref);
	sm_p_text(&p, maxs);
	snprintf(t->step, sizeof(t->step), "prolly_log(%s, max %ld)", ref, max);
	PGresult *res = sm_q(t, "SELECT commit_id FROM prolly_log($1, nullif($2::int, -1))", &p, NULL);
	SM_CHECK(t, (size_t)PQntuples(res) == want, "%d rows, want %zu", PQntuples(res), want);
	for (int i = 0; i < PQntuples(res); i++) {
		size_t n = 0;
		const unsigned char *id = sm_val_at(res, i, 0, &n);
		char hex[PROLLY_ID_HEX_SIZE] = "";
		if (id && n == PROLLY_ID_HEX_SIZE - 1)
			memcpy(hex, id, n);
		long c = sm_find_commit(t, hex);
		SM_CHECK(t, c >= 0 && seen[c] && !got[c], "row %d: %s, not in the history or twice", i,
		         hex);
		if (c >= 0)
			got[c] = 1;
	}
	PQclear(res);
	free(seen);
	free(got);
}

/* 1 when records a and b (NULL: absent) are both absent or hold the same bytes. */
static int rec_eq(const tm_rec *a, const tm_rec *b)
{
	return a && b ? sm_same_val(a, b->v, b->vlen) : a == b;
}

/* prolly_history of a REF and a key: the commits src/key_history.c says changed it (the value
 * differs from every parent's, or a root that has the key; from a commit equal to a parent only
 * that first such parent is followed), each with its value. */
void sm_r_history(sm_run *t)
{
	char ref[80], maxs[24];
	long at = sm_pick_ref(t, ref);
	const unsigned char *k;
	size_t kn;
	sm_pick_key(t, &k, &kn);
	long max = tm_rng_chance(&t->r, 1, 3) ? (long)tm_rng_below(&t->r, 6) : -1;
	char *want = calloc(t->ncommits, 1), *done = calloc(t->ncommits, 1),
	     *got = calloc(t->ncommits, 1);
	long *stack = malloc((t->ncommits * 2 + 1) * sizeof(*stack));
	SM_REQUIRE(t, want && done && got && stack);
	size_t n = 0, nwant = 0;
	stack[n++] = at;
	while (n) {
		long c = stack[--n];
		if (c < 0 || done[c])
			continue;
		done[c] = 1;
		const tm_rec *v = tm_model_get(&t->commits[c].m, k, kn);
		long par[2] = {t->commits[c].parent, t->commits[c].parent2}, same = -1;
		for (int i = 0; i < 2 && same < 0; i++)
			if (par[i] >= 0 && rec_eq(tm_model_get(&t->commits[par[i]].m, k, kn), v))
				same = par[i];
		if (same >= 0) {
			stack[n++] = same;
			continue;
		}
		if (par[0] >= 0 || par[1] >= 0 || v) {
			want[c] = 1;
			nwant++;
		}
		stack[n++] = par[0];
		stack[n++] = par[1];
	}
	snprintf(maxs, sizeof(maxs), "%ld", max);
	sm_params p = {0};
	sm_p_text(&p, ref);
	sm_p_bytes(&p, k, kn);
	sm_p_text(&p, maxs);
	snprintf(t->step, sizeof(t->step), "prolly_history(%s, %s, max %ld): %zu commits", ref,
	         tm_bhex(k, kn), max, nwant);
	PGresult *res = sm_q(
	    t, "SELECT commit_id, value FROM prolly_history($1, $2, nullif($3::int, -1))", &p, NULL);
	size_t rows = max >= 0 && nwant > (size_t)max ? (size_t)max : nwant;
	SM_CHECK(t, (size_t)PQntuples(res) == rows, "%d rows, want %zu", PQntuples(res), rows);
	for (int i = 0; i < PQntuples(res); i++) {
		size_t idn = 0, vn = 0;
		const unsigned char *id = sm_val_at(res, i, 0, &idn), *v = sm_val_at(res, i, 1, &vn);
		char hex[PROLLY_ID_HEX_SIZE] = "";
		if (id && idn == PROLLY_ID_HEX_SIZE - 1)
			memcpy(hex, id, idn);
		long c = sm_find_commit(t, hex);
		SM_CHECK(t,
		         c >= 0 && want[c] && !got[c] &&
		             sm_same_val(tm_model_get(&t->commits[c].m, k, kn), v, vn),
		         "row %d: commit %s", i, hex);
		if (c >= 0)
			got[c] = 1;
	}
	PQclear(res);
	free(want);
	free(done);
	free(got);
	free(stack);
}

/* prolly_merge_conflicts of two REFs: the model's conflicts against their merge base, with the
 * three values, in key order. */
void sm_r_conflicts(sm_run *t)
{
	char a[80], b[80], base_id[PROLLY_ID_HEX_SIZE] = "";
	long ia = sm_pick_ref(t, a), ib = sm_pick_ref(t, b);
	sm_params p = {0};
	sm_p_text(&p, a);
	sm_p_text(&p, b);
	snprintf(t->step, sizeof(t->step), "prolly_merge_base(%s, %s)", a, b);
	PGresult *res = sm_q(t, "SELECT prolly_merge_base($1, $2)", &p, NULL);
	size_t n = 0;
	const unsigned char *id = PQntuples(res) == 1 ? sm_val_at(res, 0, 0, &n) : NULL;
	if (id && n == PROLLY_ID_HEX_SIZE - 1)
		memcpy(base_id, id, n);
	PQclear(res);
	long base = sm_find_commit(t, base_id);
	SM_REQUIRE(t, base >= 0);
	tm_model merged, conflicts;
	prolly_merge_stats st;
	tm_model_init(&merged);
	tm_model_init(&conflicts);
	tm_model_merge(&merged, &st, &conflicts, &t->commits[base].m, &t->commits[ia].m,
	               &t->commits[ib].m, PROLLY_RESOLVE_FAIL);
	snprintf(t->step, sizeof(t->step), "prolly_merge_conflicts(%s, %s): %zu conflicts", a, b,
	         conflicts.n);
	res = sm_q(t,
	           "SELECT key, base_value, ours_value, theirs_value FROM "
	           "prolly_merge_conflicts($1, $2)",
	           &p, NULL);
	SM_CHECK(t, (size_t)PQntuples(res) == conflicts.n, "%d rows", PQntuples(res));
	const tm_model *side[3] = {&t->commits[base].m, &t->commits[ia].m, &t->commits[ib].m};
	for (int i = 0; i < PQntuples(res) && (size_t)i < conflicts.n; i++) {
		const tm_rec *want = &conflicts.r[i];
		size_t kn = 0;
		const unsigned char *k = sm_val_at(res, i, 0, &kn);
		int ok = k && kn == want->klen && !memcmp(k, want->k, kn);
		for (int c = 0; c < 3 && ok; c++) {
			size_t vn = 0;
			const unsigned char *v = sm_val_at(res, i, 1 + c, &vn);
			ok = sm_same_val(tm_model_get(side[c], want->k, want->klen), v, vn);
		}
		SM_CHECK(t, ok, "row %d, want %s", i, tm_bhex(want->k, want->klen));
	}
	PQclear(res);
	tm_model_dispose(&merged);
	tm_model_dispose(&conflicts);
}

/* prolly_stats of a REF: its records. */
void sm_r_stats(sm_run *t)
{
	char ref[80];
	long at = sm_pick_ref(t, ref);
	sm_params p = {0};
	size_t n = 0;
	sm_p_text(&p, ref);
	snprintf(t->step, sizeof(t->step), "prolly_stats(%s)", ref);
	PGresult *res = sm_q(t, "SELECT records FROM prolly_stats($1)", &p, NULL);
	const unsigned char *v = PQntuples(res) == 1 ? sm_val_at(res, 0, 0, &n) : NULL;
	SM_CHECK(t, v && n == 8 && sm_be_uint(v, 8) == t->commits[at].m.n, "want %zu records",
	         t->commits[at].m.n);
	PQclear(res);
}

/* A REF spliced at random from pieces of the grammar and junk: whatever it is, it resolves or is
 * refused with a documented SQLSTATE (22023 malformed, 42704 unknown, 55000 beyond the reflog);
 * never another error, never a lost connection. */
void sm_r_bad_ref(sm_run *t)
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
			const char *id = t->commits[sm_live_commit(t)].id;
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
	sm_params p = {0};
	sm_p_text(&p, ref);
	snprintf(t->step, sizeof(t->step), "a spliced REF %s", tm_bhex(ref, strlen(ref)));
	if (t->in_txn) /* an error must not take the transaction's writes with it */
		sm_q0(t, "SAVEPOINT bad_ref");
	PGresult *res = PQexecParams(
	    t->c, tm_rng_chance(&t->r, 1, 2) ? "SELECT prolly_resolve($1)" : "SELECT prolly_count($1)",
	    p.n, p.type, p.v, p.len, p.fmt, 1);
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	int ok = PQresultStatus(res) == PGRES_TUPLES_OK ||
	         (state && (!strcmp(state, "22023") || !strcmp(state, "42704") ||
	                    !strcmp(state, "55000") || !strcmp(state, "22021")));
	SM_CHECK(t, ok, "%s", PQresultErrorMessage(res));
	if (getenv("PROLLY_TEST_TRACE"))
		fprintf(stderr, "  [%s] -> %s\n", t->step, state ? state : "ok");
	PQclear(res);
	if (t->in_txn)
		sm_q0(t, "ROLLBACK TO SAVEPOINT bad_ref");
	t->done[SM_D_BAD_REF]++;
}

/* The C client reads a branch SQL wrote (outside any transaction of ours). */
void sm_r_client(sm_run *t, int b)
{
	prolly_commit *c = NULL;
	snprintf(t->step, sizeof(t->step), "C client read of %s", sm_names[b]);
	int rc = prolly_branch_commit(&c, t->db, sm_names[b]);
	SM_CHECK(t, rc == 0, "%s", prolly_last_error());
	if (rc)
		return;
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, &c->id);
	SM_CHECK(t, !strcmp(hex, t->commits[t->head[b]].id), "head %s, want %s", hex,
	         t->commits[t->head[b]].id);
	SM_CHECK(t, tm_tree_check(t->db, &c->tree, &t->commits[t->head[b]].m, t->step) == 0, "%s", "");
	prolly_commit_free(c);
}
