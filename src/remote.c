/*
 * remote.c - remotes: named URLs of other stores recorded in the store itself, and fetch and
 * push between a store and one of them, built on prolly_sync (sync.c).
 *
 * Where things live (docs/commits.md, "Remotes"):
 *   RM1 A remote NAME is the ref "config/remotes/NAME" naming a one-record tree whose key "url"
 *       holds the URL's bytes. A tree, so that gc keeps it like any tree a ref names, and a
 *       clone or sync never mistakes it for history.
 *   RM2 What a fetch saw of the remote's branch B is the ref "remotes/NAME/B" naming that
 *       commit: a remote-tracking ref, read wherever a REF is read as NAME/B (resolve.c), kept
 *       by gc like every ref that names a commit, moved only by fetch and push, never reflogged.
 *   RM3 Remote names are branch names without '/' (so NAME/B splits at the first '/').
 *   RM4 A remote's URL never holds a password, as the redactor finds one (redact.c, RX5) or as
 *       libpq's parse of it does (a connection string's value may hold what the redactor's walk
 *       reads as a query or a word naming a password, and hides with the password after it,
 *       unseen: "host=p?x=a password=SECRET"): the record is a tree that gc
 *       keeps and a copy of the store would carry, so a secret in it would travel and be hard to
 *       delete. prolly_remote_add refuses such a URL; the password belongs in ~/.pgpass,
 *       PGPASSFILE or PGPASSWORD. Remotes are this store's configuration: a clone does not copy
 *       them (the CLI's clone copies branches and tags only).
 *   RM5 A remote's URL holds no control byte (0x00-0x1f, 0x7f): no store address needs one, and
 *       a URL is printed back to terminals (a listing of another client's store still escapes
 *       them: the CLI's escape_puts).
 *   RM6 prolly_remote_add takes names of at most MAX_REMOTE_NAME (46) bytes, so that
 *       "remotes/NAME/B" fits PROLLY_MAX_REF_NAME for every branch name B (200 bytes at most).
 *       A longer remote recorded before, or named to prolly_fetch directly, fails a fetch that
 *       meets a branch too long to track, with PROLLY_EINVAL naming the ref, before anything is
 *       copied: a fetch copies every branch or none (a push leaves that tracking ref unwritten).
 *   RM7 Fetch and push take only a recorded remote (PROLLY_ENOTFOUND otherwise), so that every
 *       tracking ref belongs to a name prolly_remote_list lists and prolly_remote_remove takes.
 *       They used to take any name and leave refs no call listed or removed. Their write of
 *       tracking refs holds only while the record is the one they read (a guard in the same
 *       write, SY13 in sync.c): a remote removed meanwhile gets none back. prolly_remote_remove
 *       still takes the tracking refs of a name without a record (an older library's), and
 *       after its write takes those a fetch that read the record before wrote meanwhile.
 *   RM8 A remote's URL has a form prolly_open can try (prolly__store_url_check in
 *       store/open.c): a PostgreSQL one must parse with libpq. libpq refuses an unknown
 *       keyword, so "passwd=SECRET" (which RM4 does not know as a password) is never stored,
 *       and the message quotes libpq's reason only through the redactor, never the URL.
 *   RM9 A fetch or push that a gc of its source overtook (SY11 in sync.c: the remote's gc for a
 *       fetch, this store's for a push, removing a head read before it, as when the branch moved
 *       on and retention took its old head) runs again from the refs as they are then, up to
 *       SRC_GC_ATTEMPTS attempts in all, copying only what is still missing; its counters add up
 *       every attempt. A lost compare-and-swap of a ref is not retried: it is the caller's to
 *       judge (another push won, another fetch moved a tracking ref).
 */
#include "internal.h"
#include "store/redact.h"

#include <stdio.h>
#include <stdlib.h>

#define CONFIG_PREFIX "config/remotes/"
#define TRACK_PREFIX "remotes/"
#define URL_KEY "url"
#define MAX_URL 4096
#define TRACK_ATTEMPTS 8  /* writes of a pushed branch's tracking ref that lose to a gc */
#define SRC_GC_ATTEMPTS 3 /* RM9 */
/* RM6: the longest remote name whose tracking refs fit every branch name (46 bytes). */
#define MAX_REMOTE_NAME                                                                            \
	(PROLLY_MAX_REF_NAME - (int)(sizeof(TRACK_PREFIX) - 1) - 1 - PROLLY__MAX_BRANCH_NAME)

static int check_name(const char *name)
{
	int rc;
	if (!name)
		return prolly_set_error(PROLLY_EINVAL, "a remote name is NULL");
	if ((rc = prolly_branch_name_valid(name))) {
		size_t n = strlen(name); /* quoted by its first 40 bytes, as branch.c quotes a name */
		return prolly_set_error(rc,
		                        "'%.*s%s' is not a valid remote name (remote names follow the "
		                        "branch name rules)",
		                        (int)(n > 40 ? 40 : n), name, n > 40 ? "..." : "");
	}
	if (strchr(name, '/')) /* RM3 */
		return prolly_set_error(PROLLY_EINVAL, "a remote name has no '/' ('%s')", name);
	return 0;
}

static void config_ref(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, CONFIG_PREFIX "%s", name);
}

/* The record of remote name (RM1): its ref in ref (PROLLY_MAX_REF_NAME + 1 bytes), its tree in
 * *root. PROLLY_ENOTFOUND, saying so, if there is none. */
static int read_record(prolly_db *db, const char *name, char *ref, prolly_id *root)
{
	config_ref(ref, PROLLY_MAX_REF_NAME + 1, name);
	int rc = prolly__get_ref(db, ref, root);
	return rc == PROLLY_ENOTFOUND ? prolly_set_error(PROLLY_ENOTFOUND, "no remote '%s'", name) : rc;
}

/* The update that moves nothing and holds while ref still names root (RM7). */
static void guard_of(prolly_ref_update *g, const char *ref, const prolly_id *root)
{
	memset(g, 0, sizeof(*g));
	g->name = ref;
	g->expect = PROLLY_REF_EXPECT_VALUE;
	g->expected = *root;
	g->value = *root;
}

int prolly_remote_url_valid(const char *url)
{
	if (!url)
		return prolly_set_error(PROLLY_EINVAL, "a remote URL is NULL");
	size_t len = strlen(url);
	if (len == 0 || len > MAX_URL)
		return prolly_set_error(PROLLY_EINVAL, "a remote URL has 1 to %d bytes (got %zu)", MAX_URL,
		                        len);
	for (size_t i = 0; i < len; i++) /* RM5 */
		if ((unsigned char)url[i] < 0x20 || url[i] == 0x7F)
			return prolly_set_error(PROLLY_EINVAL,
			                        "a remote URL holds the control byte 0x%02x at offset %zu",
			                        (unsigned char)url[i], i);
	/* RM4: the redactor's walk first (it knows a password in a URL libpq would refuse), then
	 * libpq's own parse, which is what a connection would send (RM8) */
	int pw = prolly__redact_has_password(url), rc;
	if (!pw && (rc = prolly__store_url_check(&pw, url, "remote URL")))
		return rc;
	if (pw)
		return prolly_set_error(PROLLY_EINVAL,
		                        "the remote URL carries a password, which would be stored in the "
		                        "store and copied with it: give the URL without the password and "
		                        "keep it in ~/.pgpass, PGPASSFILE or PGPASSWORD instead");
	return 0;
}

int prolly_remote_add(prolly_db *db, const char *name, const char *url)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	prolly_txn *txn = NULL;
	prolly_id root;
	int rc;
	if (!db || !url)
		return prolly_set_error(PROLLY_EINVAL, "prolly_remote_add: NULL db or url");
	if ((rc = check_name(name)))
		return rc;
	if (strlen(name) > MAX_REMOTE_NAME) /* RM6 */
		return prolly_set_error(PROLLY_EINVAL,
		                        "remote name '%s' has %zu bytes; at most %d, so that its "
		                        "remote-tracking refs (remotes/NAME/BRANCH) fit in %d bytes for "
		                        "every branch name",
		                        name, strlen(name), MAX_REMOTE_NAME, PROLLY_MAX_REF_NAME);
	if ((rc = prolly_remote_url_valid(url)))
		return rc;
	size_t len = strlen(url);
	config_ref(ref, sizeof(ref), name);
	prolly_edit e = {PROLLY_PUT, {URL_KEY, sizeof(URL_KEY) - 1}, {url, len}};
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = ref;
	u.expect = PROLLY_REF_EXPECT_ABSENT;
	if ((rc = prolly_txn_begin(&txn, db)))
		return rc;
	if ((rc = prolly_edit_tree(&root, txn, &db->empty_tree, &e, 1)))
		goto cleanup;
	u.value = root;
	if ((rc = prolly_txn_set_ref(txn, &u)))
		goto cleanup;
	rc = prolly_txn_commit(txn, NULL, 0);
	if (rc == PROLLY_ECONFLICT)
		rc = prolly_set_error(PROLLY_ECONFLICT, "remote '%s' exists", name);

cleanup:
	prolly_txn_free(txn);
	return rc;
}

/* The URL in record root of remote name; a record without one (its tree gone, or no "url")
 * is PROLLY_ECORRUPT naming the remote. */
static int read_url(prolly_buf *out, prolly_db *db, const char *name, const prolly_id *root)
{
	int rc = prolly_get(out, db, root, URL_KEY, sizeof(URL_KEY) - 1);
	if (rc == PROLLY_ENOTFOUND)
		return prolly_set_error(
		    PROLLY_ECORRUPT,
		    "remote '%s' has no URL (its record is damaged; prolly_remote_remove "
		    "removes it)",
		    name);
	return rc;
}

int prolly_remote_url(prolly_buf *out, prolly_db *db, const char *name)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	prolly_id root;
	int rc;
	if (!out || !db)
		return prolly_set_error(PROLLY_EINVAL, "prolly_remote_url: NULL out or db");
	if ((rc = check_name(name)) || (rc = read_record(db, name, ref, &root)))
		return rc;
	return read_url(out, db, name, &root);
}

/* Refs under a prefix, copied: names and values. With named set, only those whose rest after
 * the prefix (at offset named) passes the branch name rules (BR1 in branch.c). */
typedef struct reflist {
	char **names;
	prolly_id *ids;
	size_t n, cap, named;
} reflist;

static int on_listed(void *payload, const char *name, const prolly_id *value)
{
	reflist *l = payload;
	if (l->named && prolly__branch_name_check(name + l->named, 1))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **nn = realloc(l->names, cap * sizeof(*nn));
		if (nn)
			l->names = nn;
		prolly_id *ni = nn ? realloc(l->ids, cap * sizeof(*ni)) : NULL;
		if (!ni)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory listing refs");
		l->ids = ni;
		l->cap = cap;
	}
	if (!(l->names[l->n] = strdup(name)))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory listing refs");
	l->ids[l->n++] = *value;
	return 0;
}

static void reflist_dispose(reflist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	free(l->ids);
	memset(l, 0, sizeof(*l));
}

/* named: keep only the refs whose rest is a valid name (a remote's, or another store's branch). */
static int list_prefix(reflist *out, prolly_db *db, const char *prefix, int named)
{
	memset(out, 0, sizeof(*out));
	out->named = named ? strlen(prefix) : 0;
	return db->vt.list_refs(db->store, prefix, on_listed, out);
}

int prolly_remote_list(prolly_db *db, prolly_remote_fn fn, void *payload)
{
	reflist l;
	prolly_buf url = PROLLY_BUF_INIT;
	int rc;
	if (!db || !fn)
		return prolly_set_error(PROLLY_EINVAL, "prolly_remote_list: NULL db or fn");
	if ((rc = list_prefix(&l, db, CONFIG_PREFIX, 1)))
		goto cleanup;
	for (size_t i = 0; i < l.n && !rc; i++) {
		const char *name = l.names[i] + sizeof(CONFIG_PREFIX) - 1;
		if ((rc = read_url(&url, db, name, &l.ids[i])))
			break;
		if ((rc = prolly__buf_put(&url, "", 1)))
			break;
		rc = fn(payload, name, (const char *)url.ptr);
	}

cleanup:
	reflist_dispose(&l);
	prolly_buf_dispose(&url);
	return rc;
}

/* One write that removes the record ref (when root is not NULL: by compare-and-swap against
 * it) and every ref under prefix (each against the value listed); *found is how many of those
 * there were. Nothing to remove: no write. */
static int remove_once(prolly_db *db, const char *ref, const prolly_id *root, const char *prefix,
                       size_t *found)
{
	prolly_txn *txn = NULL;
	prolly_ref_update u;
	reflist l;
	int rc;
	memset(&u, 0, sizeof(u));
	if ((rc = list_prefix(&l, db, prefix, 0)))
		goto cleanup;
	*found = l.n;
	if ((!root && !l.n) || (rc = prolly_txn_begin(&txn, db)))
		goto cleanup;
	u.expect = PROLLY_REF_EXPECT_VALUE;
	u.remove = 1;
	if (root) {
		u.name = ref;
		u.expected = *root;
		rc = prolly_txn_set_ref(txn, &u);
	}
	for (size_t i = 0; i < l.n && !rc; i++) {
		u.name = l.names[i];
		u.expected = l.ids[i];
		rc = prolly_txn_set_ref(txn, &u);
	}
	if (!rc)
		rc = prolly_txn_commit(txn, NULL, 0);

cleanup:
	prolly_txn_free(txn);
	reflist_dispose(&l);
	return rc;
}

int prolly_remote_remove(prolly_db *db, const char *name)
{
	char ref[PROLLY_MAX_REF_NAME + 1], prefix[PROLLY_MAX_REF_NAME + 1];
	prolly_id root;
	size_t found = 0;
	int rc;
	if (!db)
		return prolly_set_error(PROLLY_EINVAL, "prolly_remote_remove: NULL db");
	if ((rc = check_name(name)))
		return rc;
	snprintf(prefix, sizeof(prefix), TRACK_PREFIX "%s/", name);
	/* RM7: tracking refs without a record (an older library's fetch) go too */
	int recorded = (rc = read_record(db, name, ref, &root)) == 0;
	if (rc && rc != PROLLY_ENOTFOUND)
		return rc;
	if ((rc = remove_once(db, ref, recorded ? &root : NULL, prefix, &found)))
		return rc;
	if (!recorded && !found)
		return prolly_set_error(PROLLY_ENOTFOUND, "no remote '%s'", name);
	/* RM7: a fetch that read the record before this write may have made tracking refs after
	 * they were listed (its guard held: the record was still there). With the record gone no
	 * fetch makes more, so one more pass takes those; if the remote was added again meanwhile,
	 * what is there is the new remote's (listed and removable), and stays. */
	if (!recorded || (rc = prolly__get_ref(db, ref, &root)) != PROLLY_ENOTFOUND)
		return rc == PROLLY_ENOTFOUND ? 0 : rc;
	rc = remove_once(db, ref, NULL, prefix, &found);
	return rc == PROLLY_ECONFLICT ? 0 : rc; /* one moved: the remote was added again */
}

/* ---- fetch ---------------------------------------------------------------------------------- */

/* RM9: whether a fetch or push that failed (rc) lost to a gc of its source (src: the remote for
 * a fetch, this store for a push) and may run again: SY11 said so (PROLLY_ECONFLICT, the source's
 * epoch risen past since, the one read before its refs were) and no ref update of the sync lost
 * its compare-and-swap (n of them in u). */
static int src_gc_again(prolly_db *src, uint64_t since, int rc, const prolly_ref_update *u,
                        size_t n)
{
	if (rc != PROLLY_ECONFLICT || prolly__sync_src_epoch(src) <= since)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (u[i].conflict)
			return 0;
	return 1;
}

/* The arguments of a fetch or a push, for their attempts (RM9). */
typedef struct remote_op {
	prolly_db *db, *remote;
	const char *name, *branch;
	int force;
	prolly_fetch_fn fn;
	void *payload;
} remote_op;

/* One attempt: its counters into *stats, *again set when it may run again (RM9). */
typedef int (*attempt_fn)(prolly_sync_stats *stats, int *again, const remote_op *op);

/* Runs once() up to SRC_GC_ATTEMPTS times while it says it may run again; *stats (may be NULL)
 * receives the counters of all of them. */
static int with_attempts(prolly_sync_stats *stats, attempt_fn once, const remote_op *op)
{
	prolly_sync_stats total = PROLLY_SYNC_STATS_INIT;
	int rc, again;
	if ((rc = prolly__sync_check(NULL, stats)))
		return rc;
	for (int attempt = 0;; attempt++) {
		prolly_sync_stats one = PROLLY_SYNC_STATS_INIT;
		again = 0;
		rc = once(&one, &again, op);
		prolly__sync_stats_add(&total, &one);
		if (!again || attempt + 1 >= SRC_GC_ATTEMPTS)
			break;
	}
	prolly__sync_stats_put(stats, &total);
	return rc;
}

static int fetch_once(prolly_sync_stats *stats, int *again, const remote_op *op)
{
	prolly_db *db = op->db, *remote = op->remote;
	const char *name = op->name;
	prolly_fetch_fn fn = op->fn;
	void *payload = op->payload;
	char prefix[PROLLY_MAX_REF_NAME + 1], ref[PROLLY_MAX_REF_NAME + 1];
	prolly_ref_update guard;
	prolly_id rec;
	reflist theirs, mine;
	prolly_ref_update *u = NULL;
	char **names = NULL;
	size_t n = 0;
	uint64_t since = 0;
	int rc;
	memset(&theirs, 0, sizeof(theirs));
	memset(&mine, 0, sizeof(mine));
	if (!db || !remote)
		return prolly_set_error(PROLLY_EINVAL, "prolly_fetch: NULL db or remote");
	if ((rc = prolly__sync_check(NULL, stats)) || (rc = check_name(name)) ||
	    (rc = prolly__sync_same_size(db, remote)) ||
	    (rc = read_record(db, name, ref, &rec))) /* RM7 */
		return rc;
	guard_of(&guard, ref, &rec);
	snprintf(prefix, sizeof(prefix), TRACK_PREFIX "%s/", name);
	/* The remote's gc epoch before its branches are read: a gc there that removes a head read
	 * here is a conflict, not a commit in neither store (SY11 in sync.c). */
	since = prolly__sync_src_epoch(remote);
	/* Theirs by the name rules (BR1); all of mine, so that a bad one, not theirs, goes. */
	if ((rc = list_prefix(&theirs, remote, "refs/heads/", 1)) ||
	    (rc = list_prefix(&mine, db, prefix, 0)))
		goto cleanup;
	u = calloc(theirs.n + mine.n + 1, sizeof(*u));
	names = calloc(theirs.n + 1, sizeof(*names));
	if (!u || !names) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory fetching");
		goto cleanup;
	}
	/* Both lists are in name order, and "refs/heads/B" and "remotes/NAME/B" order the same way
	 * by B: a merge of the two lists. */
	size_t i = 0, j = 0, pl = strlen(prefix);
	while (i < theirs.n || j < mine.n) {
		const char *tb = i < theirs.n ? theirs.names[i] + 11 : NULL;
		const char *mb = j < mine.n ? mine.names[j] + pl : NULL;
		int c = !tb ? 1 : !mb ? -1 : strcmp(tb, mb);
		prolly_ref_update *x = &u[n];
		if (c > 0) { /* gone from the remote: the tracking ref goes too */
			x->name = mine.names[j];
			x->expect = PROLLY_REF_EXPECT_VALUE;
			x->expected = mine.ids[j++];
			x->remove = 1;
			n++;
			continue;
		}
		if (c == 0 && prolly_id_equal(&theirs.ids[i], &mine.ids[j])) {
			i++, j++;
			continue;
		}
		if (pl + strlen(tb) > PROLLY_MAX_REF_NAME) { /* RM6: before anything is copied */
			rc = prolly_set_error(PROLLY_EINVAL,
			                      "the remote's branch '%s' would be tracked as '%s%s', %zu bytes "
			                      "(at most %d); nothing was fetched: remove the remote and add "
			                      "it again under a name of at most %d bytes",
			                      tb, prefix, tb, pl + strlen(tb), PROLLY_MAX_REF_NAME,
			                      MAX_REMOTE_NAME);
			goto cleanup;
		}
		size_t nl = strlen(prefix) + strlen(tb) + 1;
		if (!(names[i] = malloc(nl))) {
			rc = prolly_set_error(PROLLY_ENOMEM, "out of memory fetching");
			goto cleanup;
		}
		memcpy(names[i], prefix, pl);
		memcpy(names[i] + pl, tb, nl - pl);
		x->name = names[i];
		x->value = theirs.ids[i++];
		if (c == 0) {
			x->expect = PROLLY_REF_EXPECT_VALUE;
			x->expected = mine.ids[j++];
		} else {
			x->expect = PROLLY_REF_EXPECT_ABSENT;
		}
		n++;
	}
	if (!n) {
		const prolly_sync_stats none = PROLLY_SYNC_STATS_INIT;
		prolly__sync_stats_put(stats, &none);
		goto cleanup;
	}
	if ((rc = prolly__sync_guarded(stats, db, remote, NULL, 0, u, n, NULL, &guard))) {
		rc = prolly__sync_src_gc(remote, since, rc);
		prolly_id now;
		if (rc == PROLLY_ECONFLICT && prolly__get_ref(db, ref, &now) == PROLLY_ENOTFOUND)
			rc = prolly_set_error(PROLLY_ENOTFOUND,
			                      "remote '%s' was removed during the fetch; no remote-tracking "
			                      "ref moved",
			                      name);
		*again = src_gc_again(remote, since, rc, u, n);
		goto cleanup;
	}
	for (size_t k = 0; fn && k < n && !rc; k++) {
		const char *branch = u[k].name + pl;
		rc = fn(payload, branch, u[k].expect == PROLLY_REF_EXPECT_VALUE ? &u[k].expected : NULL,
		        u[k].remove ? NULL : &u[k].value);
	}

cleanup:
	for (size_t k = 0; names && k < theirs.n; k++)
		free(names[k]);
	free(names);
	free(u);
	reflist_dispose(&theirs);
	reflist_dispose(&mine);
	return rc;
}

int prolly_fetch(prolly_sync_stats *stats, prolly_db *db, prolly_db *remote, const char *name,
                 prolly_fetch_fn fn, void *payload)
{
	remote_op op = {db, remote, name, NULL, 0, fn, payload};
	return with_attempts(stats, fetch_once, &op);
}

/* ---- push ----------------------------------------------------------------------------------- */

static int push_once(prolly_sync_stats *stats, int *again, const remote_op *op)
{
	prolly_db *db = op->db, *remote = op->remote;
	const char *name = op->name, *branch = op->branch;
	int force = op->force;
	char head_ref[PROLLY_MAX_REF_NAME + 1], track[PROLLY_MAX_REF_NAME + 1];
	char rec_ref[PROLLY_MAX_REF_NAME + 1];
	prolly_ref_update guard;
	prolly_id mine, theirs, base, was, rec;
	prolly_sync_stats copied = PROLLY_SYNC_STATS_INIT;
	int rc, exists, track_exists = 0;
	if (!db || !remote || !branch)
		return prolly_set_error(PROLLY_EINVAL, "prolly_push: NULL db, remote or branch");
	if ((rc = prolly__sync_check(NULL, stats)) || (rc = check_name(name)) ||
	    (rc = prolly_branch_name_valid(branch)) || (rc = prolly__sync_same_size(remote, db)))
		return rc;
	/* One local read: the branch's head, the remote's record (RM7) and the tracking ref as it
	 * was before the remote's head is read, for its compare-and-swap (RM2; track empty: too long
	 * a name, never written). */
	const char *names[3] = {head_ref, rec_ref, track};
	prolly_id got[3];
	unsigned char found[3] = {0, 0, 0};
	size_t n = 2;
	if ((rc = prolly__branch_ref(head_ref, branch)))
		return rc;
	config_ref(rec_ref, sizeof(rec_ref), name);
	track[0] = 0;
	if (strlen(TRACK_PREFIX) + strlen(name) + 1 + strlen(branch) <= PROLLY_MAX_REF_NAME) {
		snprintf(track, sizeof(track), TRACK_PREFIX "%s/%s", name, branch);
		n = 3;
	}
	/* This store's gc epoch before its head is read: a gc that removes the head (the branch
	 * moved on meanwhile) is a conflict, not damage (SY11 in sync.c), and costs an attempt. */
	uint64_t since = prolly__sync_src_epoch(db);
	if ((rc = prolly__get_refs(db, names, n, got, found)))
		return rc;
	if (!found[0])
		return prolly_set_error(PROLLY_ENOTFOUND, "no branch '%s'", branch);
	if (!found[1])
		return prolly_set_error(PROLLY_ENOTFOUND, "no remote '%s'", name);
	mine = got[0];
	rec = got[1];
	if ((track_exists = found[2]))
		was = got[2];
	rc = prolly_branch_head(&theirs, remote, branch);
	if (rc && rc != PROLLY_ENOTFOUND)
		return rc;
	exists = rc == 0;
	if (exists && !force && !prolly_id_equal(&mine, &theirs)) {
		/* Fast-forward only: their head must be an ancestor of ours (and so be here). */
		rc = prolly__merge_base(&base, db, &mine, &theirs);
		if (rc && rc != PROLLY_ENOTFOUND && rc != PROLLY_EPRUNED)
			return rc;
		if (rc || !prolly_id_equal(&base, &theirs)) {
			char hex[PROLLY_ID_HEX_SIZE];
			unsigned char here = 1;
			/* Their head may be missing here (another push, or retention removed it: a remote
			 * added, then a gc with --keep before the first push), or retention may have cut
			 * the history between it and ours: "not an ancestor" would then be a guess. */
			if (rc == PROLLY_ENOTFOUND) {
				int hrc = prolly__has_nodes(db, &theirs, 1, &here);
				if (hrc)
					return hrc;
			}
			prolly_id_to_hex(hex, &theirs);
			if (!here)
				return prolly_set_error(PROLLY_ECONFLICT,
				                        "the remote's '%s' (%s) is not in this store: fetch and "
				                        "merge first (or force); nothing was pushed",
				                        branch, hex);
			if (rc == PROLLY_EPRUNED)
				return prolly_set_error(
				    PROLLY_ECONFLICT,
				    "the remote's '%s' (%s) is not in what retention (gc) kept of your "
				    "history, so nothing here shows it to be an ancestor of yours: fetch and "
				    "merge first (naming it as the merge's base where no merge base is left), "
				    "or force; nothing was pushed",
				    branch, hex);
			return prolly_set_error(PROLLY_ECONFLICT,
			                        "the remote's '%s' (%s) is not an ancestor of yours: fetch "
			                        "and merge first (or force); nothing was pushed",
			                        branch, hex);
		}
	}
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = head_ref;
	u.expect = exists ? PROLLY_REF_EXPECT_VALUE : PROLLY_REF_EXPECT_ABSENT;
	u.expected = theirs;
	u.value = mine;
	prolly_sync_options o = PROLLY_SYNC_OPTIONS_INIT;
	o.operation = "push";
	rc = prolly_sync(&copied, remote, db, NULL, 0, &u, 1, &o);
	prolly__sync_stats_put(stats, &copied);
	if (rc) {
		rc = prolly__sync_src_gc(db, since, rc);
		*again = src_gc_again(db, since, rc, &u, 1);
		/* The objects went in before the branch's compare-and-swap lost: say so. */
		if (rc == PROLLY_ECONFLICT && u.conflict)
			rc = prolly_set_error(
			    PROLLY_ECONFLICT,
			    "the remote's '%s' moved meanwhile (another push won): %llu commits and %llu "
			    "nodes were copied to the remote, but its branch was not moved; the copies "
			    "are harmless and pushing again is safe (fetch and merge first if the "
			    "remote's head is no longer an ancestor of yours)",
			    branch, (unsigned long long)copied.commits_copied,
			    (unsigned long long)copied.nodes_copied);
		return rc;
	}
	/* What we now know the remote holds (RM2), by compare-and-swap against the value read
	 * before the remote's head was: a fetch (or push) that moved the ref meanwhile saw the
	 * remote after that read. Its value stays, unless it is the head our push replaced or an
	 * ancestor of ours (that fetch read the remote before our push landed): never moved back.
	 * The remote has moved: the push is done, so a gc here since our head was read (another
	 * process's) costs another attempt, not a failure. The commit is read again under the new
	 * epoch, and its tree looked for: if that gc removed either (our branch moved away
	 * meanwhile; retention may keep the commit alone, between a merge base and a head), the
	 * tracking ref stays as it was: a ref must not name a commit without its tree, which every
	 * later gc keeping that history would stop at. */
	if (!track[0])
		return 0;
	memset(&u, 0, sizeof(u));
	u.name = track;
	u.value = mine;
	rc = PROLLY_ECONFLICT;
	for (int attempt = 0; attempt < TRACK_ATTEMPTS && rc == PROLLY_ECONFLICT; attempt++) {
		prolly_txn *txn = NULL;
		prolly_commit *c = NULL;
		prolly_ref_update confs[2], conf;
		memset(confs, 0, sizeof(confs));
		memset(&conf, 0, sizeof(conf));
		u.expect = track_exists ? PROLLY_REF_EXPECT_VALUE : PROLLY_REF_EXPECT_ABSENT;
		u.expected = was;
		guard_of(&guard, rec_ref, &rec);
		if ((rc = prolly_txn_begin(&txn, db)) == 0 &&
		    (attempt == 0 || ((rc = prolly_commit_read(&c, db, &mine)) == 0 &&
		                      (rc = prolly__commit_tree_stored(db, c, track)) == 0)) &&
		    (rc = prolly_txn_set_ref(txn, &u)) == 0 && (rc = prolly_txn_set_ref(txn, &guard)) == 0)
			rc = prolly_txn_commit(txn, confs, 2);
		int gone = 0; /* names point into the txn: read before it is freed */
		for (int k = 0; k < 2 && rc == PROLLY_ECONFLICT; k++) {
			if (confs[k].conflict && strcmp(confs[k].name, rec_ref) == 0)
				gone = 1;
			else if (confs[k].conflict)
				conf = confs[k];
		}
		prolly_commit_free(c);
		prolly_txn_free(txn);
		if (gone)
			return 0; /* RM7: the remote was removed (or replaced): no tracking ref */
		if (rc == PROLLY_ECONFLICT && conf.conflict) { /* moved meanwhile: by whom, above */
			if (!conf.current_exists || prolly_id_equal(&conf.current, &mine))
				return 0;
			if (!exists || !prolly_id_equal(&conf.current, &theirs)) {
				rc = prolly__merge_base(&base, db, &mine, &conf.current);
				if (rc == PROLLY_ENOTFOUND || rc == PROLLY_EPRUNED ||
				    (rc == 0 && !prolly_id_equal(&base, &conf.current)))
					return 0; /* newer, or another line: the other writer's stays */
				if (rc)
					return rc;
				rc = PROLLY_ECONFLICT;
			}
			track_exists = 1;
			was = conf.current;
		}
	}
	return rc == PROLLY_ENOTFOUND || rc == PROLLY_EPRUNED ? 0 : rc;
}

int prolly_push(prolly_sync_stats *stats, prolly_db *db, prolly_db *remote, const char *name,
                const char *branch, int force)
{
	remote_op op = {db, remote, name, branch, force, NULL, NULL};
	return with_attempts(stats, push_once, &op);
}
