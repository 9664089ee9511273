/*
 * pgcells.c - what the scale engine's two PostgreSQL contenders share: the plain table
 * (plain.c) and the prolly extension (sql.c) both prepare a table of statements on the
 * fixture's admin connection, send keys and edits as bytea[] parameters, and have the same
 * point-read, range and count cells, which differ only in the statement they run and in the
 * extension's leading ref parameter (an sc_pg_side says which).
 */
#include "engine.h"

int sc_pg_prepare(PGconn *pc, const sc_pg_stmt *stmts, size_t n, const char *arg,
                  const char **failed)
{
	char sql[512];
	for (size_t i = 0; i < n; i++) {
		int k = snprintf(sql, sizeof(sql), stmts[i].fmt, arg);
		int rc = k < 0 || (size_t)k >= sizeof(sql)
		             ? prolly_set_error(PROLLY_EINVAL, "statement too long")
		             : bench_pg_prepare(pc, stmts[i].name, sql, stmts[i].nparams);
		if (rc != 0) {
			*failed = stmts[i].name;
			return rc;
		}
	}
	return 0;
}

int sc_pg_run(cell *c, const sc_pg_side *s, const char *name, int n, const char *const *v,
              const int *l, PGresult **res)
{
	const char *pv[4];
	int pl[4], k = 0;
	if (n + (s->ref != NULL) > 4)
		return prolly_set_error(PROLLY_EINVAL, "%s: more than 4 parameters", name);
	if (s->ref) {
		pv[k] = s->ref;
		pl[k++] = (int)strlen(s->ref);
	}
	for (int i = 0; i < n; i++, k++) {
		pv[k] = v[i];
		pl[k] = l[i];
	}
	return bench_pg_run(c->fx->admin, name, k, pv, pl, res);
}

int sc_pg_keys_array(bench_buf *b, const readset *r)
{
	int rc = bench_pg_array_begin(b, r->n);
	for (size_t i = 0; rc == 0 && i < r->n; i++)
		rc = bench_pg_array_add(b, r->keys + i * KEY_LEN, KEY_LEN);
	return rc;
}

int sc_pg_edit_arrays(bench_buf *kb, bench_buf *vb, const prolly_edit *edits, size_t n)
{
	int rc;
	if ((rc = bench_pg_array_begin(kb, n)) != 0 || (vb && (rc = bench_pg_array_begin(vb, n)) != 0))
		return rc;
	for (size_t i = 0; i < n; i++) {
		if ((rc = bench_pg_array_add(kb, edits[i].key.data, edits[i].key.size)) != 0)
			return rc;
		if (!vb)
			continue;
		rc = edits[i].op == PROLLY_DEL
		         ? bench_pg_array_add_null(vb)
		         : bench_pg_array_add(vb, edits[i].value.data, edits[i].value.size);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int sc_pg_put_edits(cell *c, editset *e, size_t *k)
{
	int rc = sc_editset_make(e, c, 0);
	*k = 0;
	if (rc != 0)
		return sc_fail(c, rc, "making the edit set");
	if (e->n == 0)
		return sc_fail(c, PROLLY_EINVAL, "no edits (--changes 0?)");
	*k = (size_t)c->fx->cfg->puts;
	if (*k > e->n)
		*k = e->n; /* distinct keys */
	return 0;
}

/* ---- cells --------------------------------------------------------------------------------- */

int sc_pg_get(cell *c, const sc_pg_side *s, const char *name, const char *what)
{
	size_t vlen = c->fx->vlen;
	readset r;
	PGresult *res = NULL;
	int rc;
	memset(&r, 0, sizeof(r));
	CK(s->ready(c), s->ready_what);
	CK(sc_readset_random(&r, c, (size_t)c->fx->cfg->reads, SC_READS), "preparing reads");
	sc_measure_begin(c);
	for (size_t i = 0; i < r.n; i++) {
		const char *v[1] = {(const char *)r.keys + i * KEY_LEN};
		const int l[1] = {KEY_LEN};
		uint64_t t = sc_lat_start(c);
		CK(sc_pg_run(c, s, name, 1, v, l, &res), what);
		sc_lat_stop(c, t);
		if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0) ||
		    (size_t)PQgetlength(res, 0, 0) != vlen ||
		    memcmp(PQgetvalue(res, 0, 0), r.vals + i * vlen, vlen) != 0)
			r.mismatches++;
		PQclear(res);
		res = NULL;
	}
	sc_measure_end(c);
	c->ops = r.n;
	if (r.mismatches)
		sc_invalid(c, "%s: %zu of %zu missing or wrong", what, r.mismatches, r.n);
out:
	PQclear(res);
	sc_readset_free(&r);
	return rc;
}

int sc_pg_scan(cell *c, const sc_pg_side *s, const char *name, const char *what)
{
	fixture *fx = c->fx;
	PGresult *res = NULL;
	unsigned char lo[KEY_LEN], hi[KEY_LEN], want[KEY_LEN];
	unsigned char *val = NULL;
	char max[24];
	int rc;
	CK(s->ready(c), s->ready_what);
	if (!(val = malloc(fx->vlen + 1))) {
		rc = sc_fail(c, PROLLY_ENOMEM, "allocating a value");
		goto out;
	}
	size_t len = (size_t)(fx->cfg->reads < fx->n ? fx->cfg->reads : fx->n);
	uint64_t start = sc_range_start(c, len); /* the same window as the other contenders */
	sc_make_key(lo, start * SLOT_STEP);
	sc_make_key(hi, (start + len) * SLOT_STEP);
	snprintf(max, sizeof(max), "%zu", len);
	size_t wrong = 0;
	sc_measure_begin(c);
	const char *v[3] = {(const char *)lo, (const char *)hi, max};
	const int l[3] = {KEY_LEN, KEY_LEN, (int)strlen(max)};
	CK(sc_pg_run(c, s, name, s->scan_max ? 3 : 2, v, l, &res), what);
	int rows = PQntuples(res);
	for (int i = 0; i < rows; i++) {
		uint64_t slot = (start + (uint64_t)i) * SLOT_STEP;
		sc_make_key(want, slot);
		sc_make_value(val, fx->vlen, fx->cfg->seed, slot, 0);
		if (PQgetlength(res, i, 0) != KEY_LEN || memcmp(PQgetvalue(res, i, 0), want, KEY_LEN) ||
		    (size_t)PQgetlength(res, i, 1) != fx->vlen ||
		    memcmp(PQgetvalue(res, i, 1), val, fx->vlen))
			wrong++;
	}
	sc_measure_end(c);
	c->ops = len;
	if ((size_t)rows != len || wrong)
		sc_invalid(c, "%s gave %d rows (%zu wrong), expected %zu", what, rows, wrong, len);
out:
	PQclear(res);
	free(val);
	return rc;
}

int sc_pg_count(cell *c, const sc_pg_side *s, const char *name, const char *what)
{
	PGresult *res = NULL;
	unsigned char lo[KEY_LEN], hi[KEY_LEN];
	uint64_t got = 0;
	int rc;
	CK(s->ready(c), s->ready_what);
	uint64_t len = sc_count_range(c, lo, hi);
	sc_measure_begin(c);
	const char *v[2] = {(const char *)lo, (const char *)hi};
	const int l[2] = {KEY_LEN, KEY_LEN};
	CK(sc_pg_run(c, s, name, 2, v, l, &res), what);
	if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
		got = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
	sc_measure_end(c);
	c->ops = 1;
	if (got != len)
		sc_invalid(c, "%s gave %" PRIu64 ", expected %" PRIu64, what, got, len);
out:
	PQclear(res);
	return rc;
}
