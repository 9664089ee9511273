/*
 * args.c - what the SQL functions share about their arguments and results: text, branch and key
 * arguments (SQL NULL is 22004, a bad branch name 22023, a key over the limit 54000), whether an
 * argument was given at all, refs resolved to commits, commit ids as text, and the publishing of
 * a write's txn.
 */
#include "prolly_ext.h"

#include "utils/builtins.h"

#define HEADS "refs/heads/"

char *pgx_text_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
		                errmsg("prolly: %s must not be NULL", what)));
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

bool pgx_arg_given(FunctionCallInfo fcinfo, int argno)
{
	return PG_NARGS() > argno && !PG_ARGISNULL(argno);
}

char *pgx_branch_arg(FunctionCallInfo fcinfo, int argno, const char *what,
                     char ref[PROLLY_MAX_REF_NAME + 1])
{
	char *name = pgx_text_arg(fcinfo, argno, what);
	int rc = prolly_branch_name_valid(name);
	if (rc)
		ereport(ERROR, (errcode(pgx_sqlstate(rc)), errmsg("prolly: %s \"%s\": %s", what,
		                                                  pgx_shown(name), pgx_engine_message())));
	snprintf(ref, PROLLY_MAX_REF_NAME + 1, HEADS "%s", name);
	return name;
}

text *pgx_hex_text(const prolly_id *id)
{
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, id);
	return cstring_to_text(hex);
}

int pgx_publish(prolly_txn *txn)
{
	prolly_ref_update conf;
	memset(&conf, 0, sizeof(conf));
	return prolly_txn_commit(txn, &conf, 1);
}

bytea *pgx_key_arg(FunctionCallInfo fcinfo, int argno, const char *what, bool nullable)
{
	bytea *k;
	if (PG_ARGISNULL(argno)) {
		if (!nullable)
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			                errmsg("prolly: %s must not be NULL", what)));
		return NULL;
	}
	k = PG_GETARG_BYTEA_PP(argno);
	if (VARSIZE_ANY_EXHDR(k) > PROLLY_MAX_KEY)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
		                errmsg("prolly: %s of %zu bytes is longer than the limit of %d bytes", what,
		                       (size_t)VARSIZE_ANY_EXHDR(k), PROLLY_MAX_KEY)));
	return k;
}

void pgx_resolve_ref(prolly_db *db, const char *ref, prolly_id *commit, prolly_id *tree)
{
	prolly_commit *c = NULL;
	prolly_id kept;
	int rc;
	memset(&kept, 0, sizeof(kept));
	rc = prolly_resolve(commit, db, ref);
	if (rc == 0 && tree && !pgx_commit_tree(commit, &kept) &&
	    (rc = prolly_commit_read(&c, db, commit)) == 0) {
		kept = c->tree;
		pgx_commit_tree_keep(commit, &kept);
	}
	prolly_commit_free(c);
	if (rc) {
		char *what = psprintf("ref \"%s\"", pgx_shown(ref));
		pgx_check(rc, what);
	}
	if (tree)
		*tree = kept;
}
