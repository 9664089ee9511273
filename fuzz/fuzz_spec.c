/*
 * fuzz_spec.c - libFuzzer target for the parsers of names and revision specs a user types,
 * through the public API only: prolly_resolve and prolly_resolve_commit (BRANCH~N^M, tags,
 * remote-tracking branches, short and full ids, BRANCH@{N} and BRANCH@{TIME}), prolly_branch_name_valid and the functions
 * that take a branch or tag name, and prolly_reflog's ref names. A memory store holding a small
 * fixed history (spec_history.h) is opened on the first call and kept. Each input is tried as a
 * C string (cut at its first NUL byte) and, when it holds one, so is what follows that byte.
 * Checked for every string:
 *   - each function returns 0 or one of the codes its documentation gives (PROLLY_EPRUNED from
 *     a spec with "@{": a scratch branch made and deleted at the history's fixed clock keeps
 *     one reflog entry for its identical moves, so what came before cannot be told);
 *   - a resolved spec names a commit that can be read, and prolly_resolve_commit agrees with
 *     prolly_resolve (same code, same commit);
 *   - a name prolly_branch_name_valid accepts can be created as a branch and a tag (unless one
 *     of that name exists), read back at the commit given and deleted again, and has a reflog;
 *     a name it refuses is refused (PROLLY_EINVAL) by branch and tag creation and by the reflog;
 *   - a hex string of 4 to 64 digits that is no branch or tag resolves to the one commit of the
 *     history it begins, is ambiguous (PROLLY_EINVAL) when it begins several, else not found;
 *   - a ref refs/heads/NAME or refs/tags/NAME that another client wrote under a refused name
 *     is not listed as a branch or tag and changes nothing prolly_resolve gives for that name;
 *     but one of 64 hex digits, as older libraries made, is read and deleted by that name;
 *   - every failure leaves a non-empty message, whose control bytes (below 0x20) all come from
 *     the input (the library quotes what it was given; the CLI escapes it when printing).
 * Never a crash, a leak or a sanitizer report.
 */
#include "spec_history.h"

#include <stdlib.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static prolly_db *db;
static prolly_id main_head, older; /* main's head, and main~1 */
static prolly_id commits[64];      /* every commit of the history */
static size_t n_commits;
static unsigned long writes; /* scratch refs made since the history was built */

static void die(const char *what, const char *s, int rc)
{
	fprintf(stderr, "%s: '%s' -> %d (%s)\n", what, s, rc, prolly_last_error());
	abort();
}

/* A failure's message: not empty, and no control byte that the input s did not hold. */
static void check_message(const char *what, const char *s, int rc)
{
	const char *m = prolly_last_error();
	if (!*m)
		die(what, s, rc);
	for (const char *p = m; *p; p++)
		if ((unsigned char)*p < 0x20 && !strchr(s, *p)) {
			fprintf(stderr, "%s: '%s': message holds byte 0x%02x: %s\n", what, s, (unsigned char)*p,
			        m);
			abort();
		}
}

/* rc is 0, a, b or c (each failure with its message). */
static void expect3(const char *what, const char *s, int rc, int a, int b, int c)
{
	if (rc != 0 && rc != a && rc != b && rc != c)
		die(what, s, rc);
	if (rc)
		check_message(what, s, rc);
}

static void expect(const char *what, const char *s, int rc, int a, int b)
{
	expect3(what, s, rc, a, b, b);
}

static int on_entry(void *payload, const prolly_reflog_entry *e)
{
	(void)e;
	++*(unsigned *)payload;
	return 0;
}

static int on_commit(void *payload, const prolly_commit *c)
{
	(void)payload;
	for (size_t i = 0; i < n_commits; i++)
		if (prolly_id_equal(&commits[i], &c->id))
			return 0;
	if (n_commits == sizeof(commits) / sizeof(commits[0]))
		return PROLLY_ENOMEM;
	commits[n_commits++] = c->id;
	return 0;
}

static int on_head(void *payload, const char *name, const prolly_id *commit)
{
	(void)name;
	return prolly_log(payload, commit, on_commit, NULL);
}

/* What a hex spec must give: the number of history commits it begins (*one: the last). */
static size_t commits_with_prefix(prolly_id *one, const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < n_commits; i++) {
		char hex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hex, &commits[i]);
		if (strncasecmp(hex, s, len) == 0) {
			*one = commits[i];
			n++;
		}
	}
	return n;
}

static void check_short_id(const char *s, int rc, const prolly_id *got)
{
	size_t len = strlen(s);
	prolly_id want;
	if (len < 4 || len > 64 || strspn(s, "0123456789abcdefABCDEF") != len ||
	    prolly_branch_head(NULL, db, s) != PROLLY_ENOTFOUND ||
	    prolly_tag_get(NULL, db, s) != PROLLY_ENOTFOUND)
		return;
	size_t n = commits_with_prefix(&want, s, len);
	if ((n == 1 && (rc != 0 || !prolly_id_equal(got, &want))) || (n > 1 && rc != PROLLY_EINVAL) ||
	    (n == 0 && rc == 0))
		die("a short id resolved against the history's commits", s, rc);
}

static void try_resolve(const char *s)
{
	prolly_id id;
	prolly_commit *c = NULL, *c2 = NULL;
	int rc = prolly_resolve(&id, db, s);
	/* @{...}: a scratch branch made and deleted again at the fixed clock has one entry for
	 * its repeated identical moves, so what came before may not be told (PROLLY_EPRUNED) */
	int pruned = strstr(s, "@{") ? PROLLY_EPRUNED : PROLLY_EINVAL;
	expect3("prolly_resolve", s, rc, PROLLY_EINVAL, PROLLY_ENOTFOUND, pruned);
	if (rc == 0) {
		int r = prolly_commit_read(&c, db, &id);
		if (r)
			die("prolly_commit_read of what prolly_resolve gave", s, r);
		prolly_commit_free(c);
	}
	check_short_id(s, rc, &id);
	int rc2 = prolly_resolve_commit(&c2, db, s);
	expect3("prolly_resolve_commit", s, rc2, PROLLY_EINVAL, PROLLY_ENOTFOUND, pruned);
	if (rc2 != rc || (rc2 == 0 && (!c2 || !prolly_id_equal(&c2->id, &id))) || (rc2 != 0 && c2)) {
		fprintf(stderr, "'%s': prolly_resolve %d, prolly_resolve_commit %d disagree\n", s, rc, rc2);
		abort();
	}
	prolly_commit_free(c2);
}

static void try_reflog(const char *s, int valid)
{
	unsigned n = 0;
	int rc = prolly_reflog(db, s, on_entry, &n);
	expect("prolly_reflog", s, rc, PROLLY_EINVAL, PROLLY_EINVAL);
	if (strncmp(s, "refs/", 5) == 0)
		return;
	size_t len = strlen(s); /* 64 hex digits: an older library's name, whose reflog is listed */
	if ((rc == 0) != (valid == 0) && !(len == 64 && strspn(s, "0123456789abcdefABCDEF") == len))
		die("prolly_reflog and prolly_branch_name_valid disagree", s, rc);
}

/* A valid name: a branch and a tag of it can be made at main's head, read back and removed. */
static void try_valid_name(const char *s)
{
	prolly_id got, old;
	int rc = prolly_branch_create(db, s, &main_head);
	if (rc == PROLLY_ECONFLICT) /* a branch of the history */
		return;
	if (rc)
		die("prolly_branch_create of a valid name", s, rc);
	writes++;
	if ((rc = prolly_branch_head(&got, db, s)) || !prolly_id_equal(&got, &main_head))
		die("prolly_branch_head of a branch just made", s, rc);
	/* A branch named "refs/..." has its reflog under its full name ("refs/tags/v" is a tag's). */
	char full[PROLLY_MAX_REF_NAME + 1];
	snprintf(full, sizeof(full), "refs/heads/%s", s);
	unsigned n = 0;
	if ((rc = prolly_reflog(db, full, on_entry, &n)) || n == 0)
		die("prolly_reflog of a branch just made", s, rc);
	if ((rc = prolly_resolve(&got, db, s)) || !prolly_id_equal(&got, &main_head))
		die("prolly_resolve of a branch just made", s, rc);
	if ((rc = prolly_branch_remove(&old, db, s)) || !prolly_id_equal(&old, &main_head))
		die("prolly_branch_remove of a branch just made", s, rc);
	if ((rc = prolly_branch_head(NULL, db, s)) != PROLLY_ENOTFOUND)
		die("prolly_branch_head of a deleted branch", s, rc);
	rc = prolly_tag_create(db, s, &main_head);
	if (rc == PROLLY_ECONFLICT)
		return;
	if (rc)
		die("prolly_tag_create of a valid name", s, rc);
	if ((rc = prolly_tag_get(&got, db, s)) || !prolly_id_equal(&got, &main_head))
		die("prolly_tag_get of a tag just made", s, rc);
	if ((rc = prolly_tag_delete(&old, db, s)) || !prolly_id_equal(&old, &main_head))
		die("prolly_tag_delete of a tag just made", s, rc);
}

/* A refused name: refused by everything that makes a branch or tag of it. */
static void try_bad_name(const char *s)
{
	int rc = prolly_branch_create(db, s, &main_head);
	if (rc != PROLLY_EINVAL)
		die("prolly_branch_create of a refused name", s, rc);
	check_message("prolly_branch_create", s, rc);
	if ((rc = prolly_tag_create(db, s, &main_head)) != PROLLY_EINVAL)
		die("prolly_tag_create of a refused name", s, rc);
	check_message("prolly_tag_create", s, rc);
	/* 64 hex digits: looked up (older libraries made such branches and tags) */
	rc = prolly_tag_get(NULL, db, s);
	expect("prolly_tag_get of a refused name", s, rc, PROLLY_EINVAL, PROLLY_ENOTFOUND);
	rc = prolly_branch_head(NULL, db, s);
	expect("prolly_branch_head of a refused name", s, rc, PROLLY_EINVAL, PROLLY_ENOTFOUND);
	prolly_edit e = {PROLLY_PUT, {"k", 1}, {"v", 1}};
	if ((rc = prolly_commit_edits(NULL, db, s, &e, 1, "x")) != PROLLY_EINVAL)
		die("prolly_commit_edits on a refused name", s, rc);
}

typedef struct listed {
	const char *s;
	int branches;
} listed;

static int on_listed(void *payload, const char *name, const prolly_id *commit)
{
	listed *l = payload;
	(void)commit;
	size_t len = strlen(name), hex = strspn(name, "0123456789abcdefABCDEF");
	if (strcmp(name, l->s) == 0 || (prolly_branch_name_valid(name) && !(len == 64 && hex == len))) {
		fprintf(stderr, "'%s': listed as a %s: '%s'\n", l->s, l->branches ? "branch" : "tag", name);
		abort();
	}
	return 0;
}

/* Writes (or removes) refs/heads/s and refs/tags/s as another client could. */
static int set_raw(const char *s, int remove)
{
	char heads[PROLLY_MAX_REF_NAME + 1], tags[PROLLY_MAX_REF_NAME + 1];
	prolly_ref_update u[2];
	prolly_txn *txn = NULL;
	snprintf(heads, sizeof(heads), "refs/heads/%s", s);
	snprintf(tags, sizeof(tags), "refs/tags/%s", s);
	memset(u, 0, sizeof(u));
	u[0].name = heads;
	u[1].name = tags;
	for (int i = 0; i < 2; i++) {
		u[i].remove = remove;
		u[i].value = older;
	}
	int rc = prolly_txn_begin(&txn, db);
	for (int i = 0; i < 2 && !rc; i++)
		rc = prolly_txn_set_ref(txn, &u[i]);
	if (!rc)
		rc = prolly_txn_commit(txn, NULL, 0);
	prolly_txn_free(txn);
	return rc;
}

/* Refs another client wrote under the refused name s are no branch or tag of the library's. */
static void try_hostile_refs(const char *s)
{
	size_t len = strlen(s);
	prolly_id before, after;
	if (len == 64 && strspn(s, "0123456789abcdefABCDEF") == len) {
		/* what an older library named so: listed, so read and deleted by that name */
		int rc = set_raw(s, 0);
		if (rc)
			die("writing refs of 64 hex digits", s, rc);
		writes++;
		if ((rc = prolly_branch_head(&after, db, s)) || !prolly_id_equal(&after, &older))
			die("prolly_branch_head of an older library's branch", s, rc);
		if ((rc = prolly_tag_get(&after, db, s)) || !prolly_id_equal(&after, &older))
			die("prolly_tag_get of an older library's tag", s, rc);
		if ((rc = prolly_tag_delete(NULL, db, s)) || (rc = prolly_branch_remove(NULL, db, s)))
			die("deleting an older library's branch and tag", s, rc);
		return;
	}
	if (len == 0 || len > 200)
		return;
	int rc0 = prolly_resolve(&before, db, s), rc;
	if ((rc = set_raw(s, 0)))
		die("writing refs under a refused name", s, rc);
	writes++;
	listed l = {s, 1};
	if ((rc = prolly_branch_list(db, on_listed, &l)))
		die("prolly_branch_list", s, rc);
	l.branches = 0;
	if ((rc = prolly_tag_list(db, on_listed, &l)))
		die("prolly_tag_list", s, rc);
	rc = prolly_resolve(&after, db, s);
	if (rc != rc0 || (rc == 0 && !prolly_id_equal(&before, &after)))
		die("prolly_resolve changed by a ref under a refused name", s, rc);
	unsigned n = 0; /* every entry: now and then, as the listing grows with the history */
	if (writes % 64 == 0 && (rc = prolly_reflog(db, NULL, on_entry, &n)))
		die("prolly_reflog of every ref", s, rc);
	if ((rc = set_raw(s, 1)))
		die("removing refs under a refused name", s, rc);
}

static void one(const char *s)
{
	try_resolve(s);
	int valid = prolly_branch_name_valid(s);
	expect("prolly_branch_name_valid", s, valid, PROLLY_EINVAL, PROLLY_EINVAL);
	try_reflog(s, valid);
	if (valid == 0)
		try_valid_name(s);
	else {
		try_bad_name(s);
		try_hostile_refs(s);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int rc;
	if (size > 4096)
		return 0;
	/* The reflog keeps every scratch move: start afresh now and then so the store stays small. */
	if (db && writes >= 1000) {
		prolly_close(db);
		db = NULL;
	}
	if (!db) {
		if ((rc = spec_history_open(&db)) || (rc = prolly_branch_head(&main_head, db, "main")) ||
		    (rc = prolly_resolve(&older, db, "main~1")))
			die("building the history", "", rc);
		n_commits = 0;
		if ((rc = prolly_branch_list(db, on_head, db)) || (rc = prolly_tag_list(db, on_head, db)))
			die("listing the history", "", rc);
		if (n_commits < 20)
			die("the history has fewer commits than spec_history.h makes", "", (int)n_commits);
		writes = 0;
	}
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	one(s);
	size_t cut = strlen(s);
	if (cut < size)
		one(s + cut + 1);
	free(s);
	return 0;
}
