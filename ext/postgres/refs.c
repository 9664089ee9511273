/*
 * refs.c - the SQL write functions that move a branch or a tag other than by edits (declared by
 * prolly--0.1.sql and, for version 0.2, prolly--0.1--0.2.sql; documented in docs/sql.md):
 *
 *   prolly_branch(name, from_ref)                    a new ref naming from_ref's commit
 *   prolly_delete_branch(name)                       the branch's ref removed (0.2)
 *   prolly_restore_branch(name)                      a deleted branch made again from the
 *                                                    reflog (0.3)
 *   prolly_reset(branch, ref)                        the branch moved to ref's commit (0.2)
 *   prolly_tag(name, ref), prolly_delete_tag(name)   a tag's ref created or removed (0.2)
 *   prolly_merge(into, from_ref, resolve)            fast-forward, or a three-way merge commit
 *   prolly_revert(branch, commit_ref, resolve, mainline, message), prolly_cherry_pick(...)
 *                                                    one commit's change undone or applied on
 *                                                    the head, as a three-way merge (0.2)
 *
 * Each follows write.c's protocol (arguments, pgx_open_write, pgx_write_lock on the ref written,
 * the engine, pgx_write_unlock, pgx_check) and is reflogged sql-branch, sql-merge,
 * sql-fast-forward, sql-revert or sql-cherry-pick; a deleted branch or tag with delete, a new tag
 * with tag, a reset with reset, a restored branch with restore (the engine's own, as from the
 * CLI).
 */
#include "prolly_ext.h"

#include "utils/builtins.h"

#include <stdlib.h>

#define TAGS "refs/tags/"

/* ---- prolly_branch ---- */

PG_FUNCTION_INFO_V1(pgx_branch);
Datum pgx_branch(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *name = pgx_branch_arg(fcinfo, 0, "name", ref);
	char *from = pgx_text_arg(fcinfo, 1, "from_ref");
	pgx_tables t;
	prolly_db *db = pgx_open_write(fcinfo, &t, "prolly_branch");
	prolly_txn *txn = NULL;
	prolly_id cur, cid;
	int rc, exists = 0;

	pgx_write_lock(ref);
	rc = prolly_branch_head(&cur, db, name);
	if (rc == 0)
		exists = 1;
	else if (rc == PROLLY_ENOTFOUND && !pgx_failed())
		rc = prolly_resolve(&cid, db, from);
	if (rc == 0 && !exists && (rc = prolly_txn_begin(&txn, db)) == 0 &&
	    (rc = prolly_txn_move_branch(txn, name, NULL, &cid)) == 0 &&
	    (rc = prolly_txn_set_reason(txn, "sql-branch", NULL)) == 0)
		rc = pgx_publish(txn);
	prolly_txn_free(txn);
	pgx_write_unlock();
	if (exists || (rc == PROLLY_ECONFLICT && !pgx_failed()))
		ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
		                errmsg("prolly: branch \"%s\" already exists", name)));
	if (rc) {
		char *what = psprintf("ref \"%s\"", pgx_shown(from));
		pgx_check(rc, what);
	}
	PG_RETURN_TEXT_P(pgx_hex_text(&cid));
}

/* ---- prolly_delete_branch, prolly_tag, prolly_delete_tag (version 0.2) ---- */

/* A tag's name; ref receives "refs/tags/NAME". A tag to create must have a valid name (22023
 * otherwise); one to delete is left to the engine, which also deletes an old tag of 64 hex digits
 * by name and refuses a bad name with the same message (22023). */
static char *tag_arg(FunctionCallInfo fcinfo, int argno, bool creating,
                     char ref[PROLLY_MAX_REF_NAME + 1])
{
	char *name = pgx_text_arg(fcinfo, argno, "name");
	int rc = creating ? prolly_tag_name_valid(name) : 0;
	if (rc)
		ereport(ERROR, (errcode(pgx_sqlstate(rc)),
		                errmsg("prolly: name \"%s\": %s", pgx_shown(name), pgx_engine_message())));
	snprintf(ref, PROLLY_MAX_REF_NAME + 1, TAGS "%s", name);
	return name;
}

/* An absent branch or tag to delete: 42704 with the engine's message ("no branch 'x'"). */
static void check_removed(int rc, const char *kind, const char *name)
{
	if (rc == PROLLY_ENOTFOUND && !pgx_failed())
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
		                errmsg("prolly: no %s \"%s\"", kind, pgx_shown(name))));
	if (rc) {
		char *what = psprintf("%s \"%s\"", kind, pgx_shown(name));
		pgx_check(rc, what);
	}
}

/* prolly_delete_branch and prolly_delete_tag: the ref removed under its row lock; returns the
 * commit it named. */
static Datum delete_ref(FunctionCallInfo fcinfo, bool tag)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *name = tag ? tag_arg(fcinfo, 0, false, ref) : pgx_branch_arg(fcinfo, 0, "name", ref);
	pgx_tables t;
	prolly_db *db = pgx_open_write(fcinfo, &t, tag ? "prolly_delete_tag" : "prolly_delete_branch");
	prolly_id was;
	int rc;
	pgx_write_lock(ref);
	rc = tag ? prolly_tag_delete(&was, db, name) : prolly_branch_remove(&was, db, name);
	pgx_write_unlock();
	check_removed(rc, tag ? "tag" : "branch", name);
	PG_RETURN_TEXT_P(pgx_hex_text(&was));
}

PG_FUNCTION_INFO_V1(pgx_delete_branch);
Datum pgx_delete_branch(PG_FUNCTION_ARGS)
{
	return delete_ref(fcinfo, false);
}

/* prolly_restore_branch (0.3): a deleted branch made again at the head its newest deletion
 * removed (the reflog's), under the branch's row lock; returns that commit. */
PG_FUNCTION_INFO_V1(pgx_restore_branch);
Datum pgx_restore_branch(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *name = pgx_branch_arg(fcinfo, 0, "name", ref);
	pgx_tables t;
	prolly_db *db = pgx_open_write(fcinfo, &t, "prolly_restore_branch");
	prolly_id cid;
	int rc;
	pgx_write_lock(ref);
	rc = prolly_branch_restore(&cid, db, name);
	pgx_write_unlock();
	if (rc == PROLLY_ECONFLICT && !pgx_failed())
		ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
		                errmsg("prolly: branch \"%s\" exists; nothing was restored", name)));
	if (rc == PROLLY_ENOTFOUND && !pgx_failed())
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
		                errmsg("prolly: branch \"%s\" cannot be restored: %s", name,
		                       pgx_engine_message())));
	if (rc) {
		char *what = psprintf("restore of \"%s\"", name);
		pgx_check(rc, what);
	}
	PG_RETURN_TEXT_P(pgx_hex_text(&cid));
}

PG_FUNCTION_INFO_V1(pgx_reset);
Datum pgx_reset(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *branch = pgx_branch_arg(fcinfo, 0, "branch", ref);
	char *to = pgx_text_arg(fcinfo, 1, "ref");
	pgx_tables t;
	prolly_db *db = pgx_open_write(fcinfo, &t, "prolly_reset");
	prolly_id cid;
	int rc, to_bad = 0;
	pgx_write_lock(ref);
	if ((rc = prolly_resolve(&cid, db, to)))
		to_bad = 1;
	else
		rc = prolly_branch_reset(NULL, db, branch, &cid);
	pgx_write_unlock();
	if (rc) {
		char *what = to_bad ? psprintf("ref \"%s\"", pgx_shown(to))
		                    : psprintf("reset of \"%s\"", branch);
		pgx_check(rc, what);
	}
	PG_RETURN_TEXT_P(pgx_hex_text(&cid));
}

PG_FUNCTION_INFO_V1(pgx_tag);
Datum pgx_tag(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *name = tag_arg(fcinfo, 0, true, ref);
	char *from = pgx_text_arg(fcinfo, 1, "ref");
	pgx_tables t;
	prolly_db *db = pgx_open_write(fcinfo, &t, "prolly_tag");
	prolly_id cid;
	int rc;
	pgx_write_lock(ref);
	rc = prolly_resolve(&cid, db, from);
	if (rc) {
		char *what;
		pgx_write_unlock();
		what = psprintf("ref \"%s\"", pgx_shown(from));
		pgx_check(rc, what);
	}
	rc = prolly_tag_create(db, name, &cid);
	pgx_write_unlock();
	if (rc == PROLLY_ECONFLICT && !pgx_failed())
		ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
		                errmsg("prolly: tag \"%s\" already exists", name)));
	if (rc) {
		char *what = psprintf("tag \"%s\"", pgx_shown(name));
		pgx_check(rc, what);
	}
	PG_RETURN_TEXT_P(pgx_hex_text(&cid));
}

PG_FUNCTION_INFO_V1(pgx_delete_tag);
Datum pgx_delete_tag(PG_FUNCTION_ARGS)
{
	return delete_ref(fcinfo, true);
}

/* ---- prolly_merge ---- */

/* The conflicting keys of a failed merge, for the error's detail: the first few, escaped, and
 * how many there were. Plain C (called inside the engine). */
#define MAX_LISTED 20

typedef struct conflicts {
	char *text; /* malloc'd, "k1, k2, ..." */
	size_t len, cap;
	uint64_t n;
	int rc;
} conflicts;

static int append(conflicts *c, const char *s, size_t n)
{
	if (c->len + n + 1 > c->cap) {
		size_t cap = (c->len + n + 1) * 2;
		char *p = realloc(c->text, cap);
		if (!p)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory listing merge conflicts");
		c->text = p;
		c->cap = cap;
	}
	memcpy(c->text + c->len, s, n);
	c->len += n;
	c->text[c->len] = '\0';
	return 0;
}

static int on_conflict(void *payload, const prolly_conflict *k)
{
	conflicts *c = payload;
	const unsigned char *p = k->key.data;
	int rc = 0;
	if (c->n++ >= MAX_LISTED)
		return 0;
	if (c->n > 1)
		rc = append(c, ", ", 2);
	for (size_t i = 0; i < k->key.size && rc == 0; i++) {
		char buf[5];
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\' && p[i] != ',')
			rc = append(c, (const char *)&p[i], 1);
		else
			rc = append(c, buf, (size_t)snprintf(buf, sizeof(buf), "\\x%02x", p[i]));
	}
	return rc;
}

static prolly_resolver resolver_arg(FunctionCallInfo fcinfo, int argno)
{
	const char *s = PG_ARGISNULL(argno) ? "fail" : text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (strcmp(s, "fail") == 0)
		return PROLLY_RESOLVE_FAIL;
	if (strcmp(s, "ours") == 0)
		return PROLLY_RESOLVE_OURS;
	if (strcmp(s, "theirs") == 0)
		return PROLLY_RESOLVE_THEIRS;
	ereport(ERROR,
	        (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
	         errmsg("prolly: resolve must be 'fail', 'ours' or 'theirs', not '%s'", pgx_shown(s))));
	return PROLLY_RESOLVE_FAIL;
}

/* PY001 for the conflicts cf collected while doing what ("merging ... into ..."): nothing was
 * done_word ("merged"); the detail lists the keys. Frees cf's text. */
static void raise_conflicts(conflicts *cf, const char *what, const char *done_word)
{
	char *detail = psprintf("%llu conflicting key%s: %s%s", (unsigned long long)cf->n,
	                        cf->n == 1 ? "" : "s", cf->text ? cf->text : "",
	                        cf->n > MAX_LISTED ? ", ..." : "");
	uint64_t n = cf->n;
	free(cf->text);
	cf->text = NULL;
	ereport(ERROR,
	        (errcode(PGX_ERRCODE_MERGE_CONFLICT),
	         errmsg("prolly: %s left %llu conflict%s; nothing was %s", what, (unsigned long long)n,
	                n == 1 ? "" : "s", done_word),
	         errdetail("%s", detail), errhint("resolve => 'ours' or 'theirs' settles them.")));
}

PG_FUNCTION_INFO_V1(pgx_merge);
Datum pgx_merge(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *into = pgx_branch_arg(fcinfo, 0, "into_branch", ref);
	char *from = pgx_text_arg(fcinfo, 1, "from_ref");
	prolly_resolver how = resolver_arg(fcinfo, 2);
	pgx_tables t;
	prolly_db *db = pgx_open_write(fcinfo, &t, "prolly_merge");
	prolly_commit *cs[3] = {NULL, NULL, NULL}; /* base, ours, theirs */
	prolly_txn *txn = NULL;
	prolly_id ours, theirs, base, root, result;
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	conflicts cf;
	int rc, unrelated = 0, from_bad = 0;
	char *message = psprintf("merge %s into %s", from, into);

	memset(&cf, 0, sizeof(cf));
	mo.resolve = how;
	mo.on_conflict = on_conflict;
	mo.payload = &cf;
	pgx_write_lock(ref);
	rc = prolly_branch_head(&ours, db, into);
	if (rc == 0 && (rc = prolly_resolve(&theirs, db, from)))
		from_bad = 1;
	result = ours;
	if (rc == 0 && !prolly_id_equal(&ours, &theirs)) {
		rc = prolly_merge_base(&base, db, &ours, &theirs);
		if (rc == PROLLY_ENOTFOUND && !pgx_failed())
			unrelated = 1;
		else if (rc == 0 && prolly_id_equal(&base, &theirs))
			; /* already merged */
		else if (rc == 0 && prolly_id_equal(&base, &ours)) {
			if ((rc = prolly_txn_begin(&txn, db)) == 0 &&
			    (rc = prolly_txn_move_branch(txn, into, &ours, &theirs)) == 0 &&
			    (rc = prolly_txn_set_reason(txn, "sql-fast-forward", NULL)) == 0 &&
			    (rc = pgx_publish(txn)) == 0)
				result = theirs;
		} else if (rc == 0) {
			prolly_id ids[3];
			ids[0] = base;
			ids[1] = ours;
			ids[2] = theirs;
			for (int i = 0; i < 3 && rc == 0; i++)
				rc = prolly_commit_read(&cs[i], db, &ids[i]);
			if (rc == 0 && (rc = prolly_txn_begin(&txn, db)) == 0 &&
			    (rc = prolly_merge(&root, NULL, txn, &cs[0]->tree, &cs[1]->tree, &cs[2]->tree,
			                       &mo)) == 0) {
				const prolly_commit *parents[2];
				prolly_id pids[2];
				parents[0] = cs[1];
				parents[1] = cs[2];
				pids[0] = ours;
				pids[1] = theirs;
				if ((rc = prolly_commit_create(&result, txn, &root, pids, 2,
				                               prolly_next_commit_time(db, parents, 2), message)) ==
				        0 &&
				    (rc = prolly_txn_move_branch(txn, into, &ours, &result)) == 0 &&
				    (rc = prolly_txn_set_reason(txn, "sql-merge", NULL)) == 0)
					rc = pgx_publish(txn);
			}
		}
	}
	prolly_txn_free(txn);
	for (int i = 0; i < 3; i++)
		prolly_commit_free(cs[i]);
	pgx_write_unlock();
	if (rc == PROLLY_EMERGE && !pgx_failed())
		raise_conflicts(&cf, psprintf("merging \"%s\" into \"%s\"", pgx_shown(from), into),
		                "merged");
	free(cf.text);
	if (unrelated)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("prolly: \"%s\" and \"%s\" share no history; nothing was merged",
		                       into, pgx_shown(from))));
	if (rc) {
		char *what = from_bad ? psprintf("ref \"%s\"", pgx_shown(from))
		                      : psprintf("merge into \"%s\"", into);
		pgx_check(rc, what);
	}
	PG_RETURN_TEXT_P(pgx_hex_text(&result));
}

/* ---- prolly_revert, prolly_cherry_pick (version 0.2) ---- */

/* One commit's change undone (revert) or applied (cherry-pick) on the head of branch, as a
 * three-way merge (prolly_revert, prolly_cherry_pick), committed with the head as its one
 * parent; no change, no commit (the head is returned). */
static Datum pick(FunctionCallInfo fcinfo, bool revert)
{
	const char *fname = revert ? "prolly_revert" : "prolly_cherry_pick";
	char ref[PROLLY_MAX_REF_NAME + 1], hex[PROLLY_ID_HEX_SIZE];
	char *branch = pgx_branch_arg(fcinfo, 0, "branch", ref);
	char *which = pgx_text_arg(fcinfo, 1, "commit_ref");
	prolly_resolver how = resolver_arg(fcinfo, 2);
	int32 mainline = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT32(3);
	char *message = pgx_arg_given(fcinfo, 4) ? text_to_cstring(PG_GETARG_TEXT_PP(4)) : NULL;
	pgx_tables t;
	prolly_db *db;
	prolly_commit *head_c = NULL, *picked = NULL;
	prolly_txn *txn = NULL;
	prolly_id target, root, result;
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	conflicts cf;
	int rc, which_bad = 0;

	if (mainline < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		                errmsg("prolly: mainline must be a parent number from 1 (got %d)",
		                       (int)mainline)));
	db = pgx_open_write(fcinfo, &t, fname);
	memset(&cf, 0, sizeof(cf));
	mo.resolve = how;
	mo.on_conflict = on_conflict;
	mo.payload = &cf;
	pgx_write_lock(ref);
	rc = prolly_branch_commit(&head_c, db, branch);
	if (rc == 0 && (rc = prolly_resolve(&target, db, which)))
		which_bad = 1;
	if (rc == 0) {
		result = head_c->id;
		prolly_id_to_hex(hex, &target);
	}
	if (rc == 0 && (rc = prolly_txn_begin(&txn, db)) == 0)
		rc = revert
		         ? prolly_revert(&root, NULL, txn, &head_c->tree, &target, (unsigned)mainline, &mo)
		         : prolly_cherry_pick(&root, NULL, txn, &head_c->tree, &target, (unsigned)mainline,
		                              &mo);
	/* the CLI's message by default: the picked commit was read (and checked) by the pick */
	if (rc == 0 && !prolly_id_equal(&root, &head_c->tree) && !message &&
	    (rc = prolly_commit_read(&picked, db, &target)) == 0) {
		size_t n = prolly_pick_message(NULL, 0, picked, revert);
		message = palloc(n + 1);
		prolly_pick_message(message, n + 1, picked, revert);
	}
	if (rc == 0 && !prolly_id_equal(&root, &head_c->tree)) {
		const prolly_commit *parent = head_c;
		if ((rc = prolly_commit_create(&result, txn, &root, &head_c->id, 1,
		                               prolly_next_commit_time(db, &parent, 1), message)) == 0 &&
		    (rc = prolly_txn_move_branch(txn, branch, &head_c->id, &result)) == 0 &&
		    (rc = prolly_txn_set_reason(txn, revert ? "sql-revert" : "sql-cherry-pick", hex)) == 0)
			rc = pgx_publish(txn);
	}
	prolly_txn_free(txn);
	prolly_commit_free(head_c);
	prolly_commit_free(picked);
	pgx_write_unlock();
	if (rc == PROLLY_EMERGE && !pgx_failed())
		raise_conflicts(&cf,
		                psprintf("%s \"%s\" on \"%s\"", revert ? "reverting" : "picking",
		                         pgx_shown(which), branch),
		                "committed");
	free(cf.text);
	if (rc) {
		char *what = which_bad
		                 ? psprintf("ref \"%s\"", pgx_shown(which))
		                 : psprintf("%s on \"%s\"", revert ? "revert" : "cherry-pick", branch);
		pgx_check(rc, what);
	}
	PG_RETURN_TEXT_P(pgx_hex_text(&result));
}

PG_FUNCTION_INFO_V1(pgx_revert);
Datum pgx_revert(PG_FUNCTION_ARGS)
{
	return pick(fcinfo, true);
}

PG_FUNCTION_INFO_V1(pgx_cherry_pick);
Datum pgx_cherry_pick(PG_FUNCTION_ARGS)
{
	return pick(fcinfo, false);
}
