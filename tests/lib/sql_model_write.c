/*
 * sql_model_write.c - the write steps of the SQL model test (sql_model.h): each picks its
 * arguments, computes what the model expects, runs the function and checks and records the
 * commit it returns.
 */
#include "sql_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* prolly_resolver's values 0, 1, 2, as SQL spells them. */
static const char *const resolves[3] = {"fail", "ours", "theirs"};

/* n random edits as parameters 2 .. 2n+1 of p (its first, the branch, already there): n keys,
 * then n values, NULL (a delete) one time in del_den (0: never); the values' bytes in vbuf (n x
 * 256 bytes) or, for one big value now and then, t->val. Each is applied to m in order. Then
 * "ARRAY[keys]::bytea[], ARRAY[values]::bytea[]" into arrays. */
static void make_edits(sm_run *t, sm_params *p, size_t n, unsigned del_den, unsigned char *vbuf,
                       tm_model *m, char *arrays, size_t cap)
{
	int big = 0;
	char keys_sql[1024], vals_sql[1024];
	for (size_t i = 0; i < n; i++) {
		const unsigned char *k;
		size_t kn;
		sm_pick_key(t, &k, &kn);
		sm_p_bytes(p, k, kn);
	}
	for (size_t i = 0; i < n; i++) {
		const unsigned char *k = (const unsigned char *)p->v[1 + i];
		size_t kn = (size_t)p->len[1 + i];
		if (del_den && tm_rng_chance(&t->r, 1, del_den)) {
			sm_p_null(p, SM_BYTEA);
			tm_model_del(m, k, kn);
			continue;
		}
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
		sm_p_bytes(p, v, vn);
		tm_model_put(m, k, kn, v, vn);
	}
	sm_array_sql(keys_sql, sizeof(keys_sql), 2, n);
	sm_array_sql(vals_sql, sizeof(vals_sql), 2 + (int)n, n);
	snprintf(arrays, cap, "%s, %s", keys_sql, vals_sql);
}

/* prolly_commit of n edits to branch b, each a delete one time in del_den (0: never). */
void sm_commit_n(sm_run *t, int b, size_t n, unsigned del_den)
{
	sm_params p = {0};
	tm_model m;
	char arrays[2100], sql[2200];
	unsigned char *vbuf = malloc(n * 256);
	SM_REQUIRE(t, vbuf);
	tm_model_init(&m);
	tm_model_copy(&m, &t->commits[t->head[b]].m);
	sm_p_text(&p, sm_names[b]);
	make_edits(t, &p, n, del_den, vbuf, &m, arrays, sizeof(arrays));
	snprintf(sql, sizeof(sql), "SELECT prolly_commit($1, %s)", arrays);
	snprintf(t->step, sizeof(t->step), "prolly_commit of %zu edits to %s", n, sm_names[b]);
	PGresult *res = sm_q(t, sql, &p, NULL);
	sm_land_result(t, res, b, &m, t->head[b]);
	PQclear(res);
	free(vbuf);
}

/* prolly_commit with expected: the head (a plain commit), or another commit. Without merge, a
 * head that is not expected is 40001. With merge, the edits are made on expected's tree and
 * merged into the head's: 40001 when a key they change was also changed between expected and
 * the head (to any value), else a commit on the head. An error expected inside a transaction
 * runs behind a savepoint, so that it does not take the transaction with it. */
void sm_w_commit_expected(sm_run *t, int may_fail)
{
	int b = sm_pick_branch(t, 1), merge = tm_rng_chance(&t->r, 1, 2);
	long head = t->head[b], exp = head;
	if (tm_rng_chance(&t->r, 1, 2))
		exp = t->commits[head].parent >= 0 && tm_rng_chance(&t->r, 1, 2) ? t->commits[head].parent
		                                                                 : sm_live_commit(t);
	if (!may_fail && !merge)
		exp = head;
	size_t n = 1 + (size_t)tm_rng_below(&t->r, 8);
	sm_params p = {0};
	tm_model theirs, result;
	char arrays[2100], sql[2300];
	unsigned char *vbuf = malloc(n * 256);
	SM_REQUIRE(t, vbuf);
	tm_model_init(&theirs);
	tm_model_copy(&theirs, &t->commits[exp].m);
	sm_p_text(&p, sm_names[b]);
	make_edits(t, &p, n, 4, vbuf, &theirs, arrays, sizeof(arrays));
	const tm_model *base = &t->commits[exp].m, *ours = &t->commits[head].m;
	int conflict = exp != head && !merge;
	for (size_t i = 0; i < n && exp != head && merge && !conflict; i++) {
		const void *k = p.v[1 + i];
		size_t kn = (size_t)p.len[1 + i];
		const tm_rec *x = tm_model_get(base, k, kn), *o = tm_model_get(ours, k, kn);
		const tm_rec *th = tm_model_get(&theirs, k, kn);
		int changed = x ? !sm_same_val(x, th ? th->v : NULL, th ? th->vlen : 0) : th != NULL;
		int written = x ? !sm_same_val(x, o ? o->v : NULL, o ? o->vlen : 0) : o != NULL;
		conflict = changed && written;
	}
	if (exp == head) {
		tm_model_init(&result);
		tm_model_move(&result, &theirs);
	} else {
		prolly_merge_stats st;
		tm_model conflicts;
		tm_model_init(&conflicts);
		tm_model_init(&result);
		tm_model_merge(&result, &st, &conflicts, base, ours, &theirs, PROLLY_RESOLVE_OURS);
		tm_model_dispose(&conflicts);
	}
	tm_model_dispose(&theirs);
	sm_p_text(&p, t->commits[exp].id);
	sm_p_text(&p, merge ? "t" : "f");
	snprintf(sql, sizeof(sql), "SELECT prolly_commit($1, %s, NULL, $%d, $%d::boolean)", arrays,
	         p.n - 1, p.n);
	snprintf(t->step, sizeof(t->step), "prolly_commit of %zu edits to %s, expected %s%s%s", n,
	         sm_names[b], exp == head ? "the head" : t->commits[exp].id, merge ? ", merge" : "",
	         conflict ? " (40001)" : "");
	if (conflict) {
		if (t->in_txn)
			sm_q0(t, "SAVEPOINT expected");
		PQclear(sm_q(t, sql, &p, "40001"));
		if (t->in_txn)
			sm_q0(t, "ROLLBACK TO SAVEPOINT expected");
		tm_model_dispose(&result);
	} else {
		PGresult *res = sm_q(t, sql, &p, NULL);
		sm_land_result(t, res, b, &result, head);
		PQclear(res);
	}
	free(vbuf);
	t->done[SM_D_EXPECTED] += !conflict;
}

void sm_w_commit(sm_run *t)
{
	int b = sm_pick_branch(t, 1);
	sm_commit_n(t, b, 1 + (size_t)tm_rng_below(&t->r, tm_rng_chance(&t->r, 1, 4) ? 60 : 8), 4);
}

void sm_w_put_delete(sm_run *t)
{
	int b = sm_pick_branch(t, 1), del = tm_rng_chance(&t->r, 1, 3);
	const unsigned char *k;
	size_t kn, vn = (size_t)tm_rng_below(&t->r, 100);
	unsigned char v[100];
	sm_params p = {0};
	tm_model m;
	sm_pick_key(t, &k, &kn);
	tm_rng_bytes(&t->r, v, vn);
	tm_model_init(&m);
	tm_model_copy(&m, &t->commits[t->head[b]].m);
	sm_p_text(&p, sm_names[b]);
	sm_p_bytes(&p, k, kn);
	if (del) {
		tm_model_del(&m, k, kn);
	} else {
		sm_p_bytes(&p, v, vn);
		tm_model_put(&m, k, kn, v, vn);
	}
	snprintf(t->step, sizeof(t->step), "prolly_%s of %s on %s", del ? "delete" : "put",
	         tm_bhex(k, kn), sm_names[b]);
	PGresult *res = sm_q(t, del ? "SELECT prolly_delete($1, $2)" : "SELECT prolly_put($1, $2, $3)",
	                     &p, NULL);
	sm_land_result(t, res, b, &m, t->head[b]);
	PQclear(res);
}

void sm_w_delete_range(sm_run *t)
{
	int b = sm_pick_branch(t, 1);
	const unsigned char *lo = NULL, *hi = NULL;
	size_t lon = 0, hin = 0;
	int has_lo = sm_pick_bound(t, &lo, &lon), has_hi = sm_pick_bound(t, &hi, &hin);
	unsigned char narrow[TM_KEY_MAX + 1];
	if (!has_lo && !has_hi)
		has_lo = 1, lo = (const unsigned char *)"", lon = 0;
	if (has_lo && tm_rng_chance(&t->r, 1, 2)) {
		/* A narrow range: lo and the keys that extend it with a byte below 0xff. */
		memcpy(narrow, lo, lon);
		narrow[lon] = 0xff;
		has_hi = 1, hi = narrow, hin = lon + 1;
	}
	if (has_lo && has_hi && sm_bytes_cmp(lo, lon, hi, hin) > 0) {
		const unsigned char *x = lo;
		size_t xn = lon;
		lo = hi, lon = hin, hi = x, hin = xn;
	}
	sm_params p = {0};
	tm_model m;
	tm_model_init(&m);
	tm_model_copy(&m, &t->commits[t->head[b]].m);
	size_t from = has_lo ? tm_model_lower_bound(&m, lo, lon) : 0;
	size_t to = has_hi ? tm_model_lower_bound(&m, hi, hin) : m.n;
	if (to > from)
		tm_model_cut(&m, from, to);
	sm_p_text(&p, sm_names[b]);
	sm_p_bound(&p, has_lo, lo, lon);
	sm_p_bound(&p, has_hi, hi, hin);
	snprintf(t->step, sizeof(t->step), "prolly_delete_range on %s (%zu keys)", sm_names[b],
	         to > from ? to - from : 0);
	PGresult *res = sm_q(t, "SELECT prolly_delete_range($1, $2, $3)", &p, NULL);
	long was = t->head[b];
	sm_land_result(t, res, b, &m, t->head[b]);
	SM_CHECK(t, to > from || t->head[b] == was, "a commit made where no key was in the range");
	PQclear(res);
}

/* SELECT FN(the name of b, a random REF), which returns the commit the REF names; b then names
 * it (prolly_branch, prolly_reset, prolly_tag). */
static void point_at(sm_run *t, const char *fn, int b)
{
	char ref[80], sql[64];
	long at = sm_pick_ref(t, ref);
	sm_params p = {0};
	sm_p_text(&p, sm_names[b]);
	sm_p_text(&p, ref);
	snprintf(sql, sizeof(sql), "SELECT %s($1, $2)", fn);
	snprintf(t->step, sizeof(t->step), "%s(%s, %s)", fn, sm_names[b], ref);
	PGresult *res = sm_q(t, sql, &p, NULL);
	sm_check_id(t, res, at);
	t->head[b] = at;
	PQclear(res);
}

/* SELECT FN(the name of b), which removes it and returns the commit it named (prolly_delete_branch,
 * prolly_delete_tag). */
static void drop(sm_run *t, const char *fn, int b)
{
	char sql[64];
	sm_params p = {0};
	sm_p_text(&p, sm_names[b]);
	snprintf(sql, sizeof(sql), "SELECT %s($1)", fn);
	snprintf(t->step, sizeof(t->step), "%s(%s)", fn, sm_names[b]);
	PGresult *res = sm_q(t, sql, &p, NULL);
	sm_check_id(t, res, t->head[b]);
	t->head[b] = -1;
	PQclear(res);
}

/* Creates an absent branch at a random REF, or (one time in three, or when every name is taken)
 * deletes one other than main. */
void sm_w_branch(sm_run *t)
{
	int b = sm_pick_branch(t, 0);
	if (b < 0 || tm_rng_chance(&t->r, 1, 3)) {
		int d = 1 + (int)tm_rng_below(&t->r, SM_NBRANCH - 1);
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

void sm_w_merge(sm_run *t, int may_fail)
{
	int into = sm_pick_branch(t, 1);
	char ref[80], base_id[PROLLY_ID_HEX_SIZE];
	long from = sm_pick_ref(t, ref);
	int resolve = (int)tm_rng_below(&t->r, 3);
	if (!may_fail && resolve == 0)
		resolve = 1;
	sm_params p = {0};
	sm_p_text(&p, sm_names[into]);
	sm_p_text(&p, ref);
	snprintf(t->step, sizeof(t->step), "prolly_merge_base of %s and %s", sm_names[into], ref);
	PGresult *res = sm_q(t, "SELECT prolly_merge_base($1, $2)", &p, NULL);
	size_t n = 0;
	const unsigned char *id = PQntuples(res) == 1 ? sm_val_at(res, 0, 0, &n) : NULL;
	long base = -1;
	if (id && n == PROLLY_ID_HEX_SIZE - 1) {
		memcpy(base_id, id, n);
		base_id[n] = 0;
		base = sm_find_commit(t, base_id);
	}
	PQclear(res);
	/* Every branch grows from main's first commit: a merge base always exists and is known. */
	SM_CHECK(t, base >= 0, "no merge base, or one never made");
	if (base < 0)
		return;
	tm_model m;
	size_t conflicts = merge_models(&m, &t->commits[base].m, &t->commits[t->head[into]].m,
	                                &t->commits[from].m, resolve);
	sm_p_text(&p, resolves[resolve]);
	snprintf(t->step, sizeof(t->step), "prolly_merge %s into %s, resolve %s (%zu conflicts)", ref,
	         sm_names[into], resolves[resolve], conflicts);
	if (conflicts && resolve == 0) {
		t->done[SM_D_CONFLICT]++;
		PQclear(sm_q(t, "SELECT prolly_merge($1, $2, $3)", &p, "PY001"));
		tm_model_dispose(&m);
		return;
	}
	res = sm_q(t, "SELECT prolly_merge($1, $2, $3)", &p, NULL);
	size_t before = t->ncommits;
	long was = t->head[into];
	sm_land_result(t, res, into, &m, t->head[into]);
	t->done[t->ncommits > before ? SM_D_MERGE3 : t->head[into] != was ? SM_D_FAST : SM_D_WRITE]++;
	if (t->ncommits > before)
		t->commits[t->ncommits - 1].parent2 = from;
	PQclear(res);
}

/* Moves a live branch to a random REF (prolly_reset). */
void sm_w_reset(sm_run *t)
{
	point_at(t, "prolly_reset", sm_pick_branch(t, 1));
}

/* Creates an absent tag at a random REF, or deletes one (which returns the commit it named). */
void sm_w_tag(sm_run *t)
{
	int g = SM_NBRANCH + (int)tm_rng_below(&t->r, SM_NREFS - SM_NBRANCH);
	if (t->head[g] < 0) {
		point_at(t, "prolly_tag", g);
		return;
	}
	drop(t, "prolly_delete_tag", g);
}

/* prolly_revert or prolly_cherry_pick of a random commit that has one parent onto a live branch:
 * the three-way merge of the commit's change into the head. Nothing changed: the head back. */
void sm_w_pick(sm_run *t, int may_fail)
{
	int b = sm_pick_branch(t, 1), revert = tm_rng_chance(&t->r, 1, 2);
	int resolve = (int)tm_rng_below(&t->r, may_fail ? 3 : 2) + !may_fail;
	char ref[80];
	long at = sm_pick_ref(t, ref), first = at;
	for (int tries = 0; tries < 8 && (t->commits[at].parent < 0 || t->commits[at].parent2 >= 0);
	     tries++)
		at = sm_live_commit(t);
	if (t->commits[at].parent < 0 || t->commits[at].parent2 >= 0)
		return;
	if (at != first)
		snprintf(ref, 80, "%s", t->commits[at].id);
	const tm_model *c = &t->commits[at].m, *parent = &t->commits[t->commits[at].parent].m;
	const tm_model *ours = &t->commits[t->head[b]].m;
	tm_model m;
	size_t conflicts = merge_models(&m, revert ? c : parent, ours, revert ? parent : c, resolve);
	int unchanged = tm_model_equal(&m, ours);
	sm_params p = {0};
	sm_p_text(&p, sm_names[b]);
	sm_p_text(&p, ref);
	sm_p_text(&p, resolves[resolve]);
	snprintf(t->step, sizeof(t->step), "prolly_%s of %s onto %s, resolve %s (%zu conflicts)",
	         revert ? "revert" : "cherry_pick", ref, sm_names[b], resolves[resolve], conflicts);
	const char *sql = revert ? "SELECT prolly_revert($1, $2, $3)"
	                         : "SELECT prolly_cherry_pick($1, $2, $3)";
	if (conflicts && resolve == 0) {
		t->done[SM_D_CONFLICT]++;
		PQclear(sm_q(t, sql, &p, "PY001"));
		tm_model_dispose(&m);
		return;
	}
	PGresult *res = sm_q(t, sql, &p, NULL);
	long was = t->head[b];
	sm_land_result(t, res, b, &m, t->head[b]);
	SM_CHECK(t, !unchanged || t->head[b] == was, "a commit made where nothing changed");
	PQclear(res);
}

/* A commit through the C client, which SQL then reads. */
void sm_w_client(sm_run *t)
{
	int b = sm_pick_branch(t, 1);
	size_t n = 1 + (size_t)tm_rng_below(&t->r, 20);
	prolly_edit e[20];
	unsigned char v[20][64];
	tm_model m;
	tm_model_init(&m);
	tm_model_copy(&m, &t->commits[t->head[b]].m);
	for (size_t i = 0; i < n; i++) {
		const unsigned char *k;
		size_t kn, vn = (size_t)tm_rng_below(&t->r, 64);
		sm_pick_key(t, &k, &kn);
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
	snprintf(t->step, sizeof(t->step), "C client commit of %zu edits to %s", n, sm_names[b]);
	int rc = prolly_commit_edits(&cid, t->db, sm_names[b], e, n, "client");
	SM_CHECK(t, rc == 0, "%s", prolly_last_error());
	if (rc) {
		tm_model_dispose(&m);
		return;
	}
	prolly_id_to_hex(hex, &cid);
	sm_land(t, b, hex, strlen(hex), &m, t->head[b]);
}

/* A gc through the C client (reflog_days 0: what only the reflog names goes too). Every commit
 * a branch or tag reaches through its parents stays and reads as before; one that none reaches
 * is gone, for SQL too (42704). */
void sm_w_gc(sm_run *t)
{
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	snprintf(t->step, sizeof(t->step), "gc");
	int rc = prolly_gc(t->db, &res);
	SM_CHECK(t, rc == 0, "%s", prolly_last_error());
	if (rc)
		return;
	char *seen = calloc(t->ncommits, 1);
	SM_REQUIRE(t, seen);
	for (int b = 0; b < SM_NREFS; b++)
		if (t->head[b] >= 0)
			sm_ancestors(t, t->head[b], seen);
	long gone = -1;
	for (size_t i = 0; i < t->ncommits; i++) {
		if (!seen[i] && !t->commits[i].dead) {
			t->commits[i].dead = 1;
			t->done[SM_D_GC_GONE]++;
			if (gone < 0 || tm_rng_chance(&t->r, 1, 2))
				gone = (long)i;
		}
	}
	free(seen);
	t->done[SM_D_GC]++;
	if (gone >= 0) {
		sm_params p = {0};
		sm_p_text(&p, t->commits[gone].id);
		snprintf(t->step, sizeof(t->step), "prolly_resolve of %s, which gc removed",
		         t->commits[gone].id);
		PQclear(sm_q(t, "SELECT prolly_resolve($1)", &p, "42704"));
	}
}
