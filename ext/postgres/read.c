/*
 * read.c - the SQL reads of one tree or of the refs (declared by prolly--0.1.sql and, for version
 * 0.2, prolly--0.1--0.2.sql; documented in docs/sql.md); history.c has the reads of history.
 *
 *   prolly_get(ref, key) -> bytea                       prolly_get
 *   prolly_get_many(ref, keys[]) -> (ord, key, value)   prolly_get_many, into a tuplestore
 *   prolly_scan(ref, from, to, prefix, max, reverse)    a cursor, one row per call
 *   prolly_count(ref, from, to) -> bigint               prolly_rank / prolly_count, O(height)
 *   prolly_diff(from_ref, to_ref, from, to)             prolly_diff, into a tuplestore
 *   prolly_branches()                                   prolly_branch_list + the heads' trees
 *   prolly_tags()                                       prolly_tag_list, the same way (0.2)
 *   prolly_resolve(ref) -> text                         prolly_resolve
 *
 * The scan holds one leaf path of the cursor at a time and the others' rows go to a tuplestore
 * (rows.c), so memory stays bounded whatever the size.
 */
#include "prolly_ext.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include <stdlib.h>

PG_MODULE_MAGIC;

void _PG_init(void);

void _PG_init(void)
{
	pgx_define_settings();
}

/* ---- prolly_get ---- */

PG_FUNCTION_INFO_V1(pgx_get);
Datum pgx_get(PG_FUNCTION_ARGS)
{
	pgx_tables t;
	char *ref = pgx_text_arg(fcinfo, 0, "ref");
	bytea *key = pgx_key_arg(fcinfo, 1, "key", false);
	prolly_db *db = pgx_open(fcinfo, &t);
	prolly_id commit, tree;
	prolly_buf val = PROLLY_BUF_INIT;
	bytea *out = NULL;
	uint64_t n;
	int rc;
	pgx_resolve_ref(db, ref, &commit, &tree);
	rc = prolly_get(&val, db, &tree, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
	if (rc == 0) {
		/* palloc may fail: copy the value out of the engine's buffer under the guard */
		MemoryContext cxt = CurrentMemoryContext;
		PG_TRY();
		{
			out = pgx_bytea(val.ptr, val.size);
		}
		PG_CATCH();
		{
			rc = pgx_keep_error(cxt);
		}
		PG_END_TRY();
	}
	prolly_buf_dispose(&val);
	/* PROLLY_ENOTFOUND is an absent key or a root that is not in the store: the root's count
	 * tells them apart (read from the cache, where prolly_get left the root it found) */
	if (rc == PROLLY_ENOTFOUND && !pgx_failed() && (rc = prolly_count(&n, db, &tree)) == 0)
		PG_RETURN_NULL();
	pgx_check(rc, "get");
	PG_RETURN_BYTEA_P(out);
}

/* The from/to bounds of a range (SQL NULL: unbounded). */
static void range_bounds(prolly_range *range, bytea *from, bytea *to)
{
	if (from) {
		range->has_lo = 1;
		range->lo.data = VARDATA_ANY(from);
		range->lo.size = VARSIZE_ANY_EXHDR(from);
	}
	if (to) {
		range->has_hi = 1;
		range->hi.data = VARDATA_ANY(to);
		range->hi.size = VARSIZE_ANY_EXHDR(to);
	}
}

/* ---- prolly_get_many ---- */

typedef struct many_ctx {
	pgx_rows r;
	Datum *keys;
} many_ctx;

typedef struct many_value {
	size_t index;
	const void *value;
	size_t vlen;
} many_value;

static void fill_value(void *payload, const void *item, Datum *v, bool *n)
{
	const many_ctx *m = payload;
	const many_value *x = item;
	n[0] = n[1] = false;
	n[2] = x->value == NULL;
	v[0] = Int32GetDatum((int32)x->index + 1);
	v[1] = m->keys[x->index];
	v[2] = x->value ? PointerGetDatum(pgx_bytea(x->value, x->vlen)) : (Datum)0;
}

static int on_value(void *payload, size_t index, const void *value, size_t vlen)
{
	many_ctx *m = payload;
	many_value x = {index, value, vlen};
	return pgx_rows_emit(&m->r, fill_value, m, &x);
}

PG_FUNCTION_INFO_V1(pgx_get_many);
Datum pgx_get_many(PG_FUNCTION_ARGS)
{
	pgx_tables t;
	char *ref = pgx_text_arg(fcinfo, 0, "ref");
	ArrayType *arr;
	Datum *elems;
	bool *nulls;
	int n;
	prolly_slice *keys;
	prolly_db *db;
	prolly_id commit, tree;
	many_ctx m;
	int rc;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
		        (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("prolly: keys must not be NULL")));
	arr = PG_GETARG_ARRAYTYPE_P(1);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
		                errmsg("prolly: keys must be a one-dimensional array")));
	deconstruct_array(arr, BYTEAOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	keys = palloc(sizeof(prolly_slice) * (n ? n : 1));
	for (int i = 0; i < n; i++) {
		bytea *k;
		if (nulls[i])
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			                errmsg("prolly: keys[%d] must not be NULL", i + 1)));
		k = DatumGetByteaPP(elems[i]);
		if (VARSIZE_ANY_EXHDR(k) > PROLLY_MAX_KEY)
			ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			                errmsg("prolly: keys[%d] of %zu bytes is longer than the limit of %d "
			                       "bytes",
			                       i + 1, (size_t)VARSIZE_ANY_EXHDR(k), PROLLY_MAX_KEY)));
		elems[i] = PointerGetDatum(k);
		keys[i].data = VARDATA_ANY(k);
		keys[i].size = VARSIZE_ANY_EXHDR(k);
	}
	db = pgx_open(fcinfo, &t);
	pgx_resolve_ref(db, ref, &commit, &tree);
	pgx_rows_init(&m.r, fcinfo);
	m.keys = elems;
	rc = n ? prolly_get_many(db, &tree, keys, (size_t)n, on_value, &m) : 0;
	pgx_check(rc, "get_many");
	return (Datum)0;
}

/* ---- prolly_scan: from a cursor, into a tuplestore or one row per call ---- */

/* In FROM (a function scan) the executor stores every row in a tuplestore before it reads the
 * first, whatever the mode, and says that it prefers to be given the tuplestore
 * (SFRM_Materialize_Preferred): the scan then fills it in one call, which spares each row a
 * function call and a copy. Elsewhere (a select list, where a LIMIT stops the calls early) rows
 * come one per call. Both hold one leaf path of the cursor at a time. */

typedef struct scan_state {
	pgx_tables t;
	prolly_cursor *cur;
	int64 left;      /* -1: no limit */
	prolly_db *held; /* the handle the cursor reads through, held (pgx_hold) until freed */
} scan_state;

/* Frees the cursor however the scan ends: done, stopped early by the executor, or an error
 * (the multi-call context is deleted then, and this runs). */
static void scan_free(void *arg)
{
	scan_state *s = arg;
	prolly_cursor_free(s->cur);
	s->cur = NULL;
	if (s->held)
		pgx_release(s->held);
	s->held = NULL;
}

/* Checks the arguments, opens the store and the cursor into s (in the current memory context),
 * with scan_free registered on cxt. */
static void scan_open(FunctionCallInfo fcinfo, scan_state *s, MemoryContext cxt)
{
	MemoryContextCallback *cb = MemoryContextAllocZero(cxt, sizeof(*cb));
	char *ref = pgx_text_arg(fcinfo, 0, "ref");
	bytea *from = pgx_key_arg(fcinfo, 1, "from_key", true);
	bytea *to = pgx_key_arg(fcinfo, 2, "to_key", true);
	bytea *prefix = pgx_key_arg(fcinfo, 3, "prefix", true);
	prolly_range range = PROLLY_RANGE_INIT;
	prolly_db *db;
	prolly_id commit, tree;
	int rc;

	s->left = -1;
	if (!PG_ARGISNULL(4)) {
		s->left = PG_GETARG_INT64(4);
		if (s->left < 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			                errmsg("prolly: max_rows must not be negative (got %lld)",
			                       (long long)s->left)));
	}
	range_bounds(&range, from, to);
	if (prefix) {
		range.prefix.data = VARDATA_ANY(prefix);
		range.prefix.size = VARSIZE_ANY_EXHDR(prefix);
	}
	range.reverse = !PG_ARGISNULL(5) && PG_GETARG_BOOL(5);

	db = pgx_open(fcinfo, &s->t);
	pgx_resolve_ref(db, ref, &commit, &tree);
	cb->func = scan_free;
	cb->arg = s;
	MemoryContextRegisterResetCallback(cxt, cb);
	pgx_hold(db);
	s->held = db;
	rc = prolly_cursor_open(&s->cur, db, &tree, &range);
	pgx_check(rc, "scan");
}

/* A bytea of p[0..n) in *buf (grown as needed, kept across rows: the tuplestore copies it). */
static Datum scan_bytea(bytea **buf, size_t *cap, const void *p, size_t n)
{
	if (!*buf || *cap < n) {
		size_t want = Max(n, 256);
		if (*buf)
			pfree(*buf);
		*buf = palloc(VARHDRSZ + want);
		*cap = want;
	}
	SET_VARSIZE(*buf, VARHDRSZ + n);
	if (n)
		memcpy(VARDATA(*buf), p, n);
	return PointerGetDatum(*buf);
}

/* Every row into the tuplestore of a materialized call. */
static void scan_materialize(FunctionCallInfo fcinfo)
{
	scan_state *s = palloc0(sizeof(*s));
	ReturnSetInfo *rsi;
	bytea *kbuf = NULL, *vbuf = NULL;
	size_t kcap = 0, vcap = 0;
	prolly_slice k, v;
	int rc = 0;

	InitMaterializedSRF(fcinfo, 0);
	rsi = (ReturnSetInfo *)fcinfo->resultinfo;
	/* scan_free runs when the per-query context goes, at the latest; sooner below */
	scan_open(fcinfo, s, CurrentMemoryContext);
	while (s->left != 0 && (rc = prolly_cursor_next(s->cur, &k, &v)) == 0) {
		Datum vals[2];
		bool nulls[2] = {false, false};
		CHECK_FOR_INTERRUPTS();
		vals[0] = scan_bytea(&kbuf, &kcap, k.data, k.size);
		vals[1] = scan_bytea(&vbuf, &vcap, v.data, v.size);
		tuplestore_putvalues(rsi->setResult, rsi->setDesc, vals, nulls);
		if (s->left > 0)
			s->left--;
	}
	scan_free(s);
	if (s->left == 0 || (rc == PROLLY_ITEROVER && !pgx_failed()))
		return;
	pgx_check(rc, "scan");
}

static void scan_first(FunctionCallInfo fcinfo, FuncCallContext *fc)
{
	MemoryContext old = MemoryContextSwitchTo(fc->multi_call_memory_ctx);
	scan_state *s = palloc0(sizeof(*s));
	TupleDesc desc;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "prolly_scan: the result type is not a row");
	fc->tuple_desc = BlessTupleDesc(desc);
	scan_open(fcinfo, s, fc->multi_call_memory_ctx);
	fc->user_fctx = s;
	MemoryContextSwitchTo(old);
}

PG_FUNCTION_INFO_V1(pgx_scan);
Datum pgx_scan(PG_FUNCTION_ARGS)
{
	FuncCallContext *fc;
	scan_state *s;
	prolly_slice k, v;
	int rc;

	if (SRF_IS_FIRSTCALL()) {
		ReturnSetInfo *rsi = (ReturnSetInfo *)fcinfo->resultinfo;
		if (rsi && IsA(rsi, ReturnSetInfo) && (rsi->allowedModes & SFRM_Materialize) &&
		    (rsi->allowedModes & SFRM_Materialize_Preferred)) {
			scan_materialize(fcinfo);
			return (Datum)0;
		}
		fc = SRF_FIRSTCALL_INIT();
		scan_first(fcinfo, fc);
	}
	fc = SRF_PERCALL_SETUP();
	s = fc->user_fctx;
	CHECK_FOR_INTERRUPTS();
	if (s->left == 0 || !s->cur) {
		scan_free(s);
		SRF_RETURN_DONE(fc);
	}
	pgx_resume(&s->t);
	rc = prolly_cursor_next(s->cur, &k, &v);
	if (rc == 0) {
		Datum vals[2];
		bool nulls[2] = {false, false};
		vals[0] = PointerGetDatum(pgx_bytea(k.data, k.size));
		vals[1] = PointerGetDatum(pgx_bytea(v.data, v.size));
		if (s->left > 0)
			s->left--;
		SRF_RETURN_NEXT(fc, HeapTupleGetDatum(heap_form_tuple(fc->tuple_desc, vals, nulls)));
	}
	scan_free(s);
	if (rc == PROLLY_ITEROVER && !pgx_failed())
		SRF_RETURN_DONE(fc);
	pgx_check(rc, "scan");
	SRF_RETURN_DONE(fc);
}

/* ---- prolly_count ---- */

PG_FUNCTION_INFO_V1(pgx_count);
Datum pgx_count(PG_FUNCTION_ARGS)
{
	pgx_tables t;
	char *ref = pgx_text_arg(fcinfo, 0, "ref");
	bytea *from = pgx_key_arg(fcinfo, 1, "from_key", true);
	bytea *to = pgx_key_arg(fcinfo, 2, "to_key", true);
	prolly_db *db = pgx_open(fcinfo, &t);
	prolly_id commit, tree;
	uint64_t lo = 0, hi = 0;
	int rc;
	pgx_resolve_ref(db, ref, &commit, &tree);
	rc = to ? prolly_rank(&hi, db, &tree, VARDATA_ANY(to), VARSIZE_ANY_EXHDR(to))
	        : prolly_count(&hi, db, &tree);
	if (rc == 0 && from)
		rc = prolly_rank(&lo, db, &tree, VARDATA_ANY(from), VARSIZE_ANY_EXHDR(from));
	pgx_check(rc, "count");
	PG_RETURN_INT64(hi > lo ? (int64)(hi - lo) : 0);
}

/* ---- prolly_diff ---- */

static Datum slice_datum(prolly_slice s)
{
	return PointerGetDatum(pgx_bytea(s.data, s.size));
}

static void fill_diff(void *payload, const void *item, Datum *v, bool *n)
{
	const prolly_diff_entry *e = item;
	(void)payload;
	n[0] = n[1] = false;
	n[2] = n[3] = true;
	v[0] = CStringGetTextDatum(e->kind == PROLLY_DIFF_ADDED     ? "+"
	                           : e->kind == PROLLY_DIFF_REMOVED ? "-"
	                                                            : "~");
	v[1] = slice_datum(e->key);
	if (e->kind != PROLLY_DIFF_ADDED) {
		v[2] = slice_datum(e->old_value);
		n[2] = false;
	}
	if (e->kind != PROLLY_DIFF_REMOVED) {
		v[3] = slice_datum(e->new_value);
		n[3] = false;
	}
}

static int on_diff(void *payload, const prolly_diff_entry *e)
{
	return pgx_rows_emit(payload, fill_diff, NULL, e);
}

PG_FUNCTION_INFO_V1(pgx_diff);
Datum pgx_diff(PG_FUNCTION_ARGS)
{
	pgx_tables t;
	char *from_ref = pgx_text_arg(fcinfo, 0, "from_ref");
	char *to_ref = pgx_text_arg(fcinfo, 1, "to_ref");
	bytea *from = pgx_key_arg(fcinfo, 2, "from_key", true);
	bytea *to = pgx_key_arg(fcinfo, 3, "to_key", true);
	prolly_db *db = pgx_open(fcinfo, &t);
	prolly_id c1, t1, c2, t2;
	prolly_range range = PROLLY_RANGE_INIT;
	pgx_rows r;
	int rc;
	pgx_resolve_ref(db, from_ref, &c1, &t1);
	pgx_resolve_ref(db, to_ref, &c2, &t2);
	range_bounds(&range, from, to);
	pgx_rows_init(&r, fcinfo);
	rc = prolly_diff(db, &t1, &t2, &range, on_diff, &r);
	pgx_check(rc, "diff");
	return (Datum)0;
}

/* ---- prolly_branches ---- */

typedef struct branch_list {
	char **names;
	prolly_id *heads;
	size_t n, cap;
} branch_list;

/* Called inside the engine's listing: plain C only (malloc), no PostgreSQL call. */
static int on_branch(void *payload, const char *name, const prolly_id *commit)
{
	branch_list *b = payload;
	char *copy;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;
		char **nn = realloc(b->names, cap * sizeof(*nn));
		prolly_id *nh;
		if (!nn)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory listing branches");
		b->names = nn;
		if (!(nh = realloc(b->heads, cap * sizeof(*nh))))
			return prolly_set_error(PROLLY_ENOMEM, "out of memory listing branches");
		b->heads = nh;
		b->cap = cap;
	}
	if (!(copy = strdup(name)))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory listing branches");
	b->names[b->n] = copy;
	b->heads[b->n++] = *commit;
	return 0;
}

/* prolly_branches and prolly_tags: the refs that list names, each with its commit and the
 * commit's tree, in name order. */
static Datum list_refs(FunctionCallInfo fcinfo, int (*list)(prolly_db *, prolly_branch_fn, void *),
                       const char *what)
{
	pgx_tables t;
	prolly_db *db = pgx_open(fcinfo, &t);
	branch_list b = {NULL, NULL, 0, 0};
	prolly_id *trees = NULL;
	pgx_rows r;
	int rc = list(db, on_branch, &b);
	if (rc == 0 && b.n && !(trees = malloc(b.n * sizeof(*trees))))
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory listing %s", what);
	for (size_t i = 0; rc == 0 && i < b.n; i++) {
		prolly_commit *c = NULL;
		if ((rc = prolly_commit_read(&c, db, &b.heads[i])) == 0)
			trees[i] = c->tree;
		prolly_commit_free(c);
	}
	if (rc == 0) {
		/* PostgreSQL work from here on: keep the engine's lists until it is done */
		MemoryContext cxt = CurrentMemoryContext;
		PG_TRY();
		{
			pgx_rows_init(&r, fcinfo);
			for (size_t i = 0; i < b.n; i++) {
				Datum v[3];
				bool n[3] = {false, false, false};
				v[0] = CStringGetTextDatum(b.names[i]);
				v[1] = PointerGetDatum(pgx_hex_text(&b.heads[i]));
				v[2] = PointerGetDatum(pgx_hex_text(&trees[i]));
				pgx_rows_put(&r, v, n);
			}
		}
		PG_CATCH();
		{
			rc = pgx_keep_error(cxt);
		}
		PG_END_TRY();
	}
	for (size_t i = 0; i < b.n; i++)
		free(b.names[i]);
	free(b.names);
	free(b.heads);
	free(trees);
	pgx_check(rc, what);
	return (Datum)0;
}

PG_FUNCTION_INFO_V1(pgx_branches);
Datum pgx_branches(PG_FUNCTION_ARGS)
{
	return list_refs(fcinfo, prolly_branch_list, "branches");
}

/* ---- prolly_tags (version 0.2) ---- */

PG_FUNCTION_INFO_V1(pgx_tags);
Datum pgx_tags(PG_FUNCTION_ARGS)
{
	return list_refs(fcinfo, prolly_tag_list, "tags");
}

/* ---- prolly_resolve ---- */

PG_FUNCTION_INFO_V1(pgx_resolve);
Datum pgx_resolve(PG_FUNCTION_ARGS)
{
	pgx_tables t;
	char *ref = pgx_text_arg(fcinfo, 0, "ref");
	prolly_db *db = pgx_open(fcinfo, &t);
	prolly_id commit, tree;
	pgx_resolve_ref(db, ref, &commit, &tree);
	PG_RETURN_TEXT_P(pgx_hex_text(&commit));
}
