/*
 * spec_history.h - the fixed history fuzz_spec.c resolves its inputs against, built through the
 * public API with a fixed clock so that every build gives the same commit ids (gen_corpus.c
 * builds it too, to write seeds that name those commits by short and full id).
 *
 *   main     8 commits, then merges of feature and dev/x (merge commits, second parents)
 *   feature  5 commits from main~3        dev/x  3 commits from main~5
 *   beef     a branch of 4 hex digits (wins over a short id spelled the same)
 *   tags     v1 (main~2 before the merges), feature (a tag spelled as a branch), abcd (all hex)
 *   remotes/origin/main   a remote-tracking ref, as a fetch leaves it
 * 8 + 5 + 3 + 2 merges = 18 commits, plus the root of the empty branch "solo" and one on it: 20.
 */
#ifndef SPEC_HISTORY_H
#define SPEC_HISTORY_H

#include "prolly.h"

#include <stdio.h>
#include <string.h>

#define SPEC_CLOCK_US 1700000000000000LL

static int spec_put(prolly_db *db, const char *branch, unsigned i)
{
	char k[32], v[32];
	snprintf(k, sizeof(k), "k%04u", i % 7);
	snprintf(v, sizeof(v), "%s-%u", branch, i);
	prolly_edit e = {PROLLY_PUT, {k, strlen(k)}, {v, strlen(v)}};
	return prolly_commit_edits(NULL, db, branch, &e, 1, v);
}

/* Opens a memory store holding the history above in *out. 0 or a PROLLY_E* code. */
static int spec_history_open(prolly_db **out)
{
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	prolly_options o = PROLLY_OPTIONS_INIT;
	prolly_id id;
	prolly_txn *txn = NULL;
	int rc;
	o.clock_us = SPEC_CLOCK_US;
	o.flags = PROLLY_DB_NO_THREADS;
	if ((rc = prolly_store_mem_new(&st)) || (rc = prolly_db_new(&db, st, &o)))
		return rc;
	for (unsigned i = 0; i < 8 && !rc; i++)
		rc = spec_put(db, "main", i);
	if (!rc && !(rc = prolly_resolve(&id, db, "main~3")))
		rc = prolly_branch_create(db, "feature", &id);
	for (unsigned i = 0; i < 5 && !rc; i++)
		rc = spec_put(db, "feature", 100 + i);
	if (!rc && !(rc = prolly_resolve(&id, db, "main~5")))
		rc = prolly_branch_create(db, "dev/x", &id);
	for (unsigned i = 0; i < 3 && !rc; i++)
		rc = spec_put(db, "dev/x", 200 + i);
	if (!rc && !(rc = prolly_resolve(&id, db, "main~2")))
		rc = prolly_tag_create(db, "v1", &id);
	if (!rc && !(rc = prolly_resolve(&id, db, "main~6")))
		rc = prolly_tag_create(db, "abcd", &id);
	if (!rc && !(rc = prolly_resolve(&id, db, "feature~1")))
		rc = prolly_tag_create(db, "feature", &id);
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	mo.resolve = PROLLY_RESOLVE_OURS;
	if (!rc)
		rc = prolly_merge_branches(NULL, NULL, db, "main", "feature", &mo, "merge feature");
	if (!rc)
		rc = prolly_merge_branches(NULL, NULL, db, "main", "dev/x", &mo, "merge dev/x");
	if (!rc && !(rc = prolly_resolve(&id, db, "main^2~2")))
		rc = prolly_branch_create(db, "beef", &id);
	for (unsigned i = 0; i < 2 && !rc; i++)
		rc = spec_put(db, "solo", 300 + i);
	if (!rc && !(rc = prolly_resolve(&id, db, "main~1")) && !(rc = prolly_txn_begin(&txn, db))) {
		prolly_ref_update u;
		memset(&u, 0, sizeof(u));
		u.name = "remotes/origin/main";
		u.value = id;
		if (!(rc = prolly_txn_set_ref(txn, &u)))
			rc = prolly_txn_commit(txn, NULL, 0);
		prolly_txn_free(txn);
	}
	if (rc) {
		prolly_close(db);
		return rc;
	}
	*out = db;
	return 0;
}

#endif
