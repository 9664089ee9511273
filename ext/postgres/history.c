/*
 * history.c - the SQL reads of history (declared by prolly--0.1.sql, prolly--0.1--0.2.sql and
 * prolly--0.2--0.3.sql; documented in docs/sql.md); read.c has the reads of one tree.
 *
 *   prolly_log(ref, max_rows)                 prolly_log, into a tuplestore
 *   prolly_history(ref, key, max_rows)        prolly_key_history, into a tuplestore (0.2)
 *   prolly_reflog(ref, max_rows)              prolly_reflog: the moves of a ref, or of every
 *                                             ref, newest first (0.3)
 *   prolly_merge_base(a, b) -> text           prolly_merge_base; NULL for unrelated histories
 *                                             (0.3)
 *   prolly_merge_conflicts(into_ref, from_ref)  what prolly_merge would report: the three-way
 *                                             merge decided by prolly_merge_preview (no node
 *                                             made), its conflicts as rows (0.3)
 *
 * Rows go through rows.c (a tuplestore, from the engine's callbacks under the guard).
 */
#include "prolly_ext.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

/* ---- prolly_log ---- */

static void fill_commit(void *payload, const void *item, Datum *v, bool *n)
{
	const prolly_commit *c = item;
	Datum *parents = palloc(sizeof(Datum) * (c->n_parents ? c->n_parents : 1));
	(void)payload;
	for (size_t i = 0; i < c->n_parents; i++)
		parents[i] = PointerGetDatum(pgx_hex_text(&c->parents[i]));
	n[0] = n[1] = n[2] = n[3] = n[4] = false;
	v[0] = PointerGetDatum(pgx_hex_text(&c->id));
	v[1] = PointerGetDatum(
	    construct_array(parents, (int)c->n_parents, TEXTOID, -1, false, TYPALIGN_INT));
	v[2] = PointerGetDatum(pgx_hex_text(&c->tree));
	v[3] = TimestampTzGetDatum(pgx_timestamp_of(c->time_us));
	v[4] = pgx_message_datum(c->message ? c->message : "");
}

static int on_commit(void *payload, const prolly_commit *c)
{
	return pgx_rows_counted(payload, fill_commit, NULL, c);
}

PG_FUNCTION_INFO_V1(pgx_log);
Datum pgx_log(PG_FUNCTION_ARGS)
{
	pgx_tables t;
	char *ref = pgx_text_arg(fcinfo, 0, "ref");
	prolly_db *db;
	prolly_id commit;
	pgx_rows r;
	int64 max = pgx_max_rows_arg(fcinfo, 1);
	int rc;
	db = pgx_open(fcinfo, &t);
	pgx_resolve_ref(db, ref, &commit, NULL);
	pgx_rows_init(&r, fcinfo);
	r.left = max;
	rc = max == 0 ? 0 : prolly_log(db, &commit, on_commit, &r);
	pgx_check(rc, "log"); /* 1: stopped at max_rows */
	return (Datum)0;
}

/* ---- prolly_history (version 0.2) ---- */

typedef struct key_change {
	const prolly_commit *c;
	const void *value; /* NULL: the commit deleted the key */
	size_t vlen;
} key_change;

static void fill_change(void *payload, const void *item, Datum *v, bool *n)
{
	const key_change *k = item;
	(void)payload;
	n[0] = n[2] = n[3] = false;
	n[1] = k->value == NULL;
	v[0] = PointerGetDatum(pgx_hex_text(&k->c->id));
	v[1] = k->value ? PointerGetDatum(pgx_bytea(k->value, k->vlen)) : (Datum)0;
	v[2] = TimestampTzGetDatum(pgx_timestamp_of(k->c->time_us));
	v[3] = pgx_message_datum(k->c->message ? k->c->message : "");
}

static int on_change(void *payload, const prolly_commit *c, const void *value, size_t vlen)
{
	key_change k = {c, value, vlen};
	return pgx_rows_counted(payload, fill_change, NULL, &k);
}

PG_FUNCTION_INFO_V1(pgx_history);
Datum pgx_history(PG_FUNCTION_ARGS)
{
	pgx_tables t;
	char *ref = pgx_text_arg(fcinfo, 0, "ref");
	bytea *key = pgx_key_arg(fcinfo, 1, "key", false);
	int64 max = pgx_max_rows_arg(fcinfo, 2);
	prolly_db *db = pgx_open(fcinfo, &t);
	prolly_id commit;
	pgx_rows r;
	int rc;
	pgx_resolve_ref(db, ref, &commit, NULL);
	pgx_rows_init(&r, fcinfo);
	r.left = max;
	rc = max == 0 ? 0
	              : prolly_key_history(db, &commit, VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key),
	                                   on_change, &r);
	pgx_check(rc, "history"); /* 1: stopped at max_rows */
	return (Datum)0;
}

/* ---- prolly_reflog (version 0.3) ---- */

static Datum opt_id(bool has, const prolly_id *id, bool *null)
{
	*null = !has;
	return has ? PointerGetDatum(pgx_hex_text(id)) : (Datum)0;
}

/* The entry's names and message are the store's bytes, which another client may have written:
 * text through pgx_message_datum, valid in the database's encoding whatever they hold. */
static void fill_move(void *payload, const void *item, Datum *v, bool *n)
{
	const prolly_reflog_entry *e = item;
	(void)payload;
	n[0] = n[1] = n[2] = n[5] = false;
	v[0] = TimestampTzGetDatum(pgx_timestamp_of(e->time_us));
	v[1] = pgx_message_datum(e->ref);
	v[2] = pgx_message_datum(e->operation);
	v[3] = opt_id(e->has_old, &e->old_id, &n[3]);
	v[4] = opt_id(e->has_new, &e->new_id, &n[4]);
	v[5] = pgx_message_datum(e->message);
}

static int on_move(void *payload, const prolly_reflog_entry *e)
{
	return pgx_rows_counted(payload, fill_move, NULL, e);
}

PG_FUNCTION_INFO_V1(pgx_reflog);
Datum pgx_reflog(PG_FUNCTION_ARGS)
{
	pgx_tables t;
	char *ref = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
	int64 max = pgx_max_rows_arg(fcinfo, 1);
	prolly_db *db = pgx_open(fcinfo, &t);
	pgx_rows r;
	int rc;
	pgx_rows_init(&r, fcinfo);
	r.left = max;
	rc = max == 0 ? 0 : prolly_reflog(db, ref, on_move, &r);
	if (rc && rc != 1) {
		char *what = ref ? psprintf("reflog of \"%s\"", pgx_shown(ref)) : "reflog";
		pgx_check(rc, what);
	}
	return (Datum)0;
}

/* ---- prolly_merge_base (version 0.3) ---- */

PG_FUNCTION_INFO_V1(pgx_merge_base);
Datum pgx_merge_base(PG_FUNCTION_ARGS)
{
	pgx_tables t;
	char *a = pgx_text_arg(fcinfo, 0, "a");
	char *b = pgx_text_arg(fcinfo, 1, "b");
	prolly_db *db = pgx_open(fcinfo, &t);
	prolly_id ca, cb, base;
	int rc;
	pgx_resolve_ref(db, a, &ca, NULL);
	pgx_resolve_ref(db, b, &cb, NULL);
	rc = prolly_merge_base(&base, db, &ca, &cb);
	if (rc == PROLLY_ENOTFOUND && !pgx_failed())
		PG_RETURN_NULL(); /* both were read: they share no history */
	pgx_check(rc, "merge base");
	PG_RETURN_TEXT_P(pgx_hex_text(&base));
}

/* ---- prolly_merge_conflicts (version 0.3) ---- */

static Datum side(const prolly_slice *s, int exists, bool *null)
{
	*null = !exists;
	return exists ? PointerGetDatum(pgx_bytea(s->data, s->size)) : (Datum)0;
}

static void fill_conflict(void *payload, const void *item, Datum *v, bool *n)
{
	const prolly_conflict *c = item;
	(void)payload;
	n[0] = false;
	v[0] = PointerGetDatum(pgx_bytea(c->key.data, c->key.size));
	v[1] = side(&c->base, c->base_exists, &n[1]);
	v[2] = side(&c->ours, c->ours_exists, &n[2]);
	v[3] = side(&c->theirs, c->theirs_exists, &n[3]);
}

static int on_conflict(void *payload, const prolly_conflict *c)
{
	return pgx_rows_emit(payload, fill_conflict, NULL, c);
}

PG_FUNCTION_INFO_V1(pgx_merge_conflicts);
Datum pgx_merge_conflicts(PG_FUNCTION_ARGS)
{
	pgx_tables t;
	char *into = pgx_text_arg(fcinfo, 0, "into_ref");
	char *from = pgx_text_arg(fcinfo, 1, "from_ref");
	prolly_db *db = pgx_open(fcinfo, &t);
	prolly_id ours, theirs, base, trees[3]; /* trees: base, ours, theirs */
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	prolly_commit *bc = NULL;
	pgx_rows r;
	int rc;

	pgx_resolve_ref(db, into, &ours, &trees[1]);
	pgx_resolve_ref(db, from, &theirs, &trees[2]);
	pgx_rows_init(&r, fcinfo);
	if (prolly_id_equal(&ours, &theirs))
		return (Datum)0;
	rc = prolly_merge_base(&base, db, &ours, &theirs);
	if (rc == PROLLY_ENOTFOUND && !pgx_failed())
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("prolly: \"%s\" and \"%s\" share no history; they cannot be merged",
		                       pgx_shown(into), pgx_shown(from))));
	pgx_check(rc, "merge base");
	if (prolly_id_equal(&base, &ours) || prolly_id_equal(&base, &theirs))
		return (Datum)0; /* a fast-forward, or merged already */
	mo.on_conflict = on_conflict;
	mo.payload = &r;
	if ((rc = prolly_commit_read(&bc, db, &base)) == 0) {
		trees[0] = bc->tree;
		rc = prolly_merge_preview(NULL, db, &trees[0], &trees[1], &trees[2], &mo);
	}
	prolly_commit_free(bc);
	if (rc == PROLLY_EMERGE && !pgx_failed())
		rc = 0; /* the conflicts are the rows */
	pgx_check(rc, "merge");
	return (Datum)0;
}
