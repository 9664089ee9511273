/*
 * test_sync_remote.c - remotes (remote.c, RM1-RM8): records and the URLs they refuse, fetch into
 * remotes/NAME/BRANCH and push through a recorded remote, a remote removed while a fetch or
 * push runs, the tracking ref's name limit; and the refs a fetch copies: names that are no
 * branch or tag, an older library's branches and tags named by 64 hex digits. The stores and
 * histories: tests/lib/sync_fix.h; the other sync tests: test_sync.c.
 */
#include "internal.h"
#include "lib/k6.h"
#include "lib/passthru.h"
#include "lib/sync_fix.h"
#include "ptest.h"

#include <stdio.h>

/* ---- remotes, fetch and push ---------------------------------------------------------------- */

static int collect_remote(void *payload, const char *name, const char *url)
{
	char *out = payload;
	size_t at = strlen(out);
	snprintf(out + at, 256 - at, "%s=%s;", name, url);
	return 0;
}

static int count_fetched(void *payload, const char *branch, const prolly_id *o, const prolly_id *n)
{
	(void)branch;
	(void)o;
	(void)n;
	++*(int *)payload;
	return 0;
}

/* A remote's URL never stores a password (remote.c RM4): the record would travel with every
 * copy of the store and outlive a password change. Refused, with a message that names the
 * remedy and not the secret; the store is unchanged. */
PT_TEST(remote_url_with_password_refused)
{
	static const char *const refused[] = {
	    "postgresql://me:hunter2@/db?host=/tmp",
	    "POSTGRES://me:hunter2@h:5432/db",
	    "postgresql://h/db?sslmode=require&password=hunter2",
	    "postgresql://h/db?PassWord=hunter2",
	    "postgresql://h/db?sslpassword=hunter2",
	    "host=h dbname=d password=hunter2",
	    "host=h dbname=d PASSWORD = 'hunter2 x'",
	    "host=h SSLPassword=hunter2 dbname=d",
	    /* a password holding a quote or a space, which libpq takes whole (it was not seen) */
	    "postgresql://me:hun\"ter2@h/db",
	    "postgresql://me:hun ter2@h/db",
	    "postgresql://me:hun?ter2@h/db",
	    /* a query key libpq percent-decodes to password or sslpassword */
	    "postgresql://h/db?pass%77ord=hunter2",
	    "postgresql://h/db?port=5&%70assword=hunter2",
	    "postgresql://h/db?%73slpassword=hunter2",
	    /* a connection string's value holding '?' and then what reads as a query's KEY=VALUE or
	     * a word naming a password: the redactor's walk hid the password that follows with it
	     * and did not see it (fuzz finding: host=p?pass%7\377h password=/Sek) */
	    "host=p?pass%7\377h password=hunter2",
	    "host=p?x=a password=hunter2",
	    "host=h?pass sslpassword=hunter2 dbname=d",
	};
	static const char *const allowed[] = {
	    "lmdb:/data/passwords",
	    "postgresql://me@h/db?sslmode=require",
	    "postgresql://me:@h/db",
	    "host=h dbname=d user=me passfile=/home/me/.pgpass",
	};
	prolly_db *db = sf_new_db(SF_MEM);
	char listed[512] = "";
	PT_REQUIRE(db);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		PT_CHECK_RC(prolly_remote_url_valid(refused[i]), PROLLY_EINVAL);
		PT_CHECKF(prolly_remote_add(db, "r", refused[i]) == PROLLY_EINVAL, "accepted %s",
		          refused[i]);
		const char *msg = prolly_last_error();
		PT_CHECKF(strstr(msg, "password") && strstr(msg, ".pgpass") && strstr(msg, "PGPASSFILE") &&
		              strstr(msg, "PGPASSWORD") && !strstr(msg, "hunter2"),
		          "%s", msg);
	}
	PT_CHECK_RC(prolly_remote_list(db, collect_remote, listed), 0);
	PT_CHECKF(listed[0] == 0, "%s", listed);
	char name[8];
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		snprintf(name, sizeof(name), "ok%zu", i);
		PT_CHECK_RC(prolly_remote_url_valid(allowed[i]), 0);
		PT_CHECKF(prolly_remote_add(db, name, allowed[i]) == 0, "%s: %s", allowed[i],
		          prolly_last_error());
	}
	prolly_close(db);
}

/* A remote URL that no fetch could open: one libpq refuses to parse (an unknown keyword, a
 * missing '=', an open quote, an unknown query parameter), or of no store's form. remote add
 * used to record them, and with them a password under a misspelled key ("passwd=") that the
 * password rule (RM4) does not know. Refused (RM8), with libpq's reason, redacted: the message
 * never holds the value. */
PT_TEST(remote_url_libpq_refuses_is_refused)
{
	static const char *const refused[] = {
	    "host=h dbname=d passwd=hunter2",
	    "host=h dbname=d pwd = 'hunter2 x'",
	    "host=h dbname=d hunter2",
	    "host=h dbname='hunter2",
	    "postgresql://h/db?passwd=hunter2",
	    "postgresql://h/db?sslmode=require&pass=hunter2",
	    "lmdb:",
	    "hunter2",
	    "ftp://h/hunter2",
	};
	static const char *const allowed[] = {
	    "mem:",
	    "lmdb:relative/dir",
	    "host=h dbname=d sslmode=require application_name=x",
	    "postgres://h:5432/db?connect_timeout=3",
	    "dbname = 'a b'",
	};
	prolly_db *db = sf_new_db(SF_MEM);
	char listed[512] = "";
	PT_REQUIRE(db);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		PT_CHECKF(prolly_remote_url_valid(refused[i]) == PROLLY_EINVAL, "valid: %s", refused[i]);
		PT_CHECKF(prolly_remote_add(db, "r", refused[i]) == PROLLY_EINVAL, "accepted %s",
		          refused[i]);
		const char *msg = prolly_last_error();
		PT_CHECKF(strstr(msg, "remote URL") && !strstr(msg, "hunter2"), "%s: %s", refused[i], msg);
	}
	PT_CHECK_RC(prolly_remote_add(db, "r", "host=h passwd=x"), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "\"passwd\""), "%s", prolly_last_error());
	PT_CHECK_RC(prolly_remote_list(db, collect_remote, listed), 0);
	PT_CHECKF(listed[0] == 0, "%s", listed);
	char name[8];
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		snprintf(name, sizeof(name), "ok%zu", i);
		PT_CHECKF(prolly_remote_add(db, name, allowed[i]) == 0, "%s: %s", allowed[i],
		          prolly_last_error());
	}
	prolly_close(db);
}

/* A URL holding a control byte is refused (remote.c RM5): it would be printed back to a
 * terminal by every listing. Before, "lmdb:/tmp/x\x1b]0;t\x07" was stored as given. */
PT_TEST(remote_url_with_control_byte_refused)
{
	static const char *const refused[] = {"lmdb:/tmp/x\x1b]0;t\x07", "host=h\ndbname=d",
	                                      "lmdb:/tmp/\x7f", "postgresql://h/db\t"};
	prolly_db *db = sf_new_db(SF_MEM);
	char listed[512] = "";
	PT_REQUIRE(db);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		PT_CHECK_RC(prolly_remote_add(db, "r", refused[i]), PROLLY_EINVAL);
		PT_CHECKF(strstr(prolly_last_error(), "control byte"), "%s", prolly_last_error());
	}
	PT_CHECK_RC(prolly_remote_list(db, collect_remote, listed), 0);
	PT_CHECKF(listed[0] == 0, "%s", listed);
	PT_CHECK_RC(prolly_remote_url_valid("lmdb:/tmp/caf\xc3\xa9 x"), 0); /* UTF-8 and spaces: fine */
	prolly_close(db);
}

/* Sets ref name to *value straight in db's store, past the library's rules, as another client
 * or a SQL user could. */
static int raw_ref(prolly_db *db, const char *name, const prolly_id *value)
{
	prolly_store *st = prolly_db_store(db);
	prolly_ref_update u;
	prolly_store_write w;
	memset(&u, 0, sizeof(u));
	memset(&w, 0, sizeof(w));
	u.name = name;
	u.expect = PROLLY_REF_EXPECT_ANY;
	u.value = *value;
	w.refs = &u;
	w.n_refs = 1;
	w.durable = 1;
	return st->write(st, &w);
}

static int count_entries(void *payload, const prolly_reflog_entry *e)
{
	(void)e;
	++*(int *)payload;
	return 0;
}

static int count_named(void *payload, const char *name, const prolly_id *commit)
{
	(void)name;
	(void)commit;
	++*(int *)payload;
	return 0;
}

/* A ref under refs/heads/ or refs/tags/ whose rest is no valid name (written past the library)
 * is no branch or tag (branch.c BR1): not listed, not fetched, and a tracking ref so named goes
 * at the next fetch; the listing leaves the caller's last error alone. Before, `prolly
 * branches`, clone and fetch printed and copied "e\x1b[31m" (a terminal escape) as it came. */
PT_TEST(refs_with_bad_names_are_not_branches)
{
	prolly_db *local = sf_new_db(SF_MEM), *remote = sf_new_db(SF_MEM);
	prolly_id h, got;
	int n = 0, fetched = 0;
	PT_REQUIRE(local && remote);
	PT_REQUIRE(sf_put_range(&h, remote, "main", 0, 3, 0) == 0);
	PT_CHECK_RC(raw_ref(remote, "refs/heads/e\x1b[31m", &h), 0);
	PT_CHECK_RC(raw_ref(remote, "refs/heads/a b", &h), 0);
	PT_CHECK_RC(raw_ref(remote, "refs/tags/t\x07", &h), 0);
	PT_CHECK_RC(raw_ref(remote, "refs/tags/ok", &h), 0);
	prolly_set_error(PROLLY_EINVAL, "the caller's message");
	PT_CHECK_RC(prolly_branch_list(remote, count_named, &n), 0);
	PT_CHECKF(n == 1, "%d branches listed", n);
	n = 0;
	PT_CHECK_RC(prolly_tag_list(remote, count_named, &n), 0);
	PT_CHECKF(n == 1, "%d tags listed", n);
	PT_CHECKF(strcmp(prolly_last_error(), "the caller's message") == 0, "%s", prolly_last_error());

	PT_CHECK_RC(raw_ref(local, "remotes/up/x\x1b", &h), 0);
	PT_REQUIRE(prolly_remote_add(local, "up", "mem:") == 0);
	PT_CHECK_RC(prolly_fetch(NULL, local, remote, "up", count_fetched, &fetched), 0);
	PT_CHECKF(fetched == 2, "%d tracking refs moved (up/main made, up/x\\x1b removed)", fetched);
	PT_CHECK_RC(prolly_resolve(&got, local, "up/main"), 0);
	prolly_store *st = prolly_db_store(local);
	PT_CHECK_RC(st->get_ref(st, "remotes/up/e\x1b[31m", &got, NULL), PROLLY_ENOTFOUND);
	PT_CHECK_RC(st->get_ref(st, "remotes/up/x\x1b", &got, NULL), PROLLY_ENOTFOUND);
	prolly_close(local);
	prolly_close(remote);
}

/* Libraries before the 64-hex rule of BR1 created branches named with 64 hex digits. Such a
 * branch of an old store is the user's data, not junk: it is listed, fetched, and read by name
 * when no commit has that id. Before, the new library hid it from the listing, left it out of
 * clone and fetch, and read its name as a missing commit only. */
PT_TEST(old_branch_named_by_64_hex_digits)
{
	prolly_db *local = sf_new_db(SF_MEM), *remote = sf_new_db(SF_MEM);
	char name[2 * PROLLY_ID_SIZE + 3], ref[64 + 2 * PROLLY_ID_SIZE];
	prolly_id h, m, got;
	int n = 0, fetched = 0;
	PT_REQUIRE(local && remote);
	memset(name, 'a', 2 * PROLLY_ID_SIZE);
	name[2 * PROLLY_ID_SIZE] = 0;
	PT_REQUIRE(prolly_remote_add(local, "up", "mem:") == 0);
	PT_REQUIRE(sf_put_range(&m, remote, "main", 0, 3, 0) == 0);
	PT_REQUIRE(sf_put_range(&h, remote, "side", 10, 3, 1) == 0);
	snprintf(ref, sizeof(ref), "refs/heads/%s", name);
	PT_CHECK_RC(raw_ref(remote, ref, &h), 0);
	PT_CHECK_RC(prolly_branch_name_valid(name), PROLLY_EINVAL); /* no new one */
	PT_CHECK_RC(prolly_branch_list(remote, count_named, &n), 0);
	PT_CHECKF(n == 3, "%d branches listed", n);
	PT_CHECK_RC(prolly_resolve(&got, remote, name), 0);
	PT_CHECK(prolly_id_equal(&got, &h));
	strcat(name, "~0");
	PT_CHECK_RC(prolly_resolve(&got, remote, name), 0);
	PT_CHECK(prolly_id_equal(&got, &h));
	name[2 * PROLLY_ID_SIZE] = 0;
	PT_CHECK_RC(prolly_resolve(&got, remote,
	                           "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"),
	            PROLLY_ENOTFOUND);
	PT_CHECKF(strstr(prolly_last_error(), "no commit bbbb"), "%s", prolly_last_error());

	PT_CHECK_RC(prolly_fetch(NULL, local, remote, "up", count_fetched, &fetched), 0);
	PT_CHECKF(fetched == 3, "%d tracking refs made", fetched);
	snprintf(ref, sizeof(ref), "up/%s", name);
	PT_CHECK_RC(prolly_resolve(&got, local, ref), 0);
	PT_CHECK(prolly_id_equal(&got, &h));
	PT_CHECK(sf_same_history(remote, local, &h));

	/* its reflog is listed by its name and full ref name, as it is read by name (it was
	 * refused as a bad name): a raw ref write leaves no entry, so none here, and one after the
	 * removal below */
	n = 0;
	PT_CHECK_RC(prolly_reflog(remote, name, count_entries, &n), 0);
	PT_CHECKF(n == 0, "%d reflog entries", n);
	snprintf(ref, sizeof(ref), "refs/heads/%s", name);
	PT_CHECK_RC(prolly_reflog(remote, ref, count_entries, &n), 0);

	/* read by prolly_branch_head, and deleted by name (it was refused as a new name's would be,
	 * so the branch could not be removed at all); a new one is still refused */
	PT_CHECK_RC(prolly_branch_head(&got, remote, name), 0);
	PT_CHECK(prolly_id_equal(&got, &h));
	memset(&got, 0, sizeof(got));
	PT_CHECK_RC(prolly_branch_remove(&got, remote, name), 0);
	PT_CHECK(prolly_id_equal(&got, &h));
	n = 0;
	PT_CHECK_RC(prolly_branch_list(remote, count_named, &n), 0);
	PT_CHECKF(n == 2, "%d branches listed", n);
	n = 0;
	PT_CHECK_RC(prolly_reflog(remote, name, count_entries, &n), 0);
	PT_CHECKF(n == 1, "%d reflog entries after the removal", n);
	PT_CHECK_RC(prolly_reflog(remote, "bad..name", count_entries, &n), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_branch_remove(NULL, remote, name), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_branch_head(&got, remote, name), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_branch_create(remote, name, &h), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_branch_remove(NULL, remote, "bad..name"), PROLLY_EINVAL);

	/* A tag so named (tags came before the 64-hex rule) is listed, so it is read and deleted by
	 * name too: it was listed and then refused, and kept its commit from gc for good */
	snprintf(ref, sizeof(ref), "refs/tags/%s", name);
	PT_CHECK_RC(raw_ref(remote, ref, &m), 0);
	n = 0;
	PT_CHECK_RC(prolly_tag_list(remote, count_named, &n), 0);
	PT_CHECKF(n == 1, "%d tags listed", n);
	memset(&got, 0, sizeof(got));
	PT_CHECK_RC(prolly_tag_get(&got, remote, name), 0);
	PT_CHECK(prolly_id_equal(&got, &m));
	memset(&got, 0, sizeof(got));
	PT_CHECK_RC(prolly_tag_delete(&got, remote, name), 0);
	PT_CHECK(prolly_id_equal(&got, &m));
	n = 0;
	PT_CHECK_RC(prolly_tag_list(remote, count_named, &n), 0);
	PT_CHECKF(n == 0, "%d tags listed", n);
	PT_CHECK_RC(prolly_tag_delete(NULL, remote, name), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_tag_get(NULL, remote, name), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_tag_create(remote, name, &m), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_tag_get(NULL, remote, "bad..name"), PROLLY_EINVAL);
	prolly_close(local);
	prolly_close(remote);
}

/* A record whose tree is gone (written past the library, or damage): prolly_remote_url said
 * "remote 'NAME' has no URL" (PROLLY_ECORRUPT), but prolly_remote_list failed with the object
 * store's "tree ... not found" (PROLLY_ENOTFOUND), naming no remote, so that no listing showed
 * which one to remove. It now fails as prolly_remote_url does, naming the remote. */
PT_TEST(remote_list_names_a_broken_record)
{
	prolly_db *db = sf_new_db(SF_MEM);
	char listed[256] = "";
	prolly_id gone;
	prolly_buf url = PROLLY_BUF_INIT;
	PT_REQUIRE(db);
	memset(&gone, 0x5a, sizeof(gone));
	PT_CHECK_RC(prolly_remote_add(db, "good", "mem:"), 0);
	PT_CHECK_RC(raw_ref(db, "config/remotes/broken", &gone), 0);
	PT_CHECK_RC(prolly_remote_url(&url, db, "broken"), PROLLY_ECORRUPT);
	PT_CHECK_RC(prolly_remote_list(db, collect_remote, listed), PROLLY_ECORRUPT);
	PT_CHECKF(strstr(prolly_last_error(), "remote 'broken'"), "%s", prolly_last_error());
	PT_CHECK_RC(prolly_remote_remove(db, "broken"), 0);
	listed[0] = 0;
	PT_CHECK_RC(prolly_remote_list(db, collect_remote, listed), 0);
	PT_CHECKF(strcmp(listed, "good=mem:;") == 0, "%s", listed);
	prolly_buf_dispose(&url);
	prolly_close(db);
}

PT_TEST(remotes_fetch_push)
{
	prolly_db *local = sf_new_db(SF_MEM), *remote = sf_new_db(SF_LMDB);
	prolly_id h, c, r;
	prolly_buf url = PROLLY_BUF_INIT;
	char listed[256] = "";
	PT_REQUIRE(local && remote);
	PT_CHECK_RC(prolly_remote_add(local, "origin", "lmdb:/somewhere"), 0);
	PT_CHECK_RC(prolly_remote_add(local, "origin", "lmdb:/else"), PROLLY_ECONFLICT);
	PT_CHECK_RC(prolly_remote_add(local, "a/b", "lmdb:/x"), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_remote_add(local, "zz", ""), PROLLY_EINVAL);
	/* A name far over the limit: the message quotes its start and keeps its reason (it used to
	 * repeat the whole name, cut off by the message's size before the reason). */
	char *longname = malloc(100001);
	PT_REQUIRE(longname);
	memset(longname, 'x', 100000);
	longname[100000] = 0;
	PT_CHECK_RC(prolly_remote_add(local, longname, "lmdb:/x"), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "...' is not a valid remote name") &&
	              strlen(prolly_last_error()) < 200,
	          "%.300s", prolly_last_error());
	free(longname);
	PT_CHECK_RC(prolly_remote_add(local, "up", "postgresql://u@h/db"), 0);
	PT_CHECK_RC(prolly_remote_url(&url, local, "origin"), 0);
	PT_CHECK(url.size == 15 && memcmp(url.ptr, "lmdb:/somewhere", 15) == 0);
	PT_CHECK_RC(prolly_remote_url(&url, local, "nosuch"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_remote_list(local, collect_remote, listed), 0);
	PT_CHECKF(strcmp(listed, "origin=lmdb:/somewhere;up=postgresql://u@h/db;") == 0, "%s", listed);
	/* gc keeps the record (a tree a ref names) */
	prolly_gc_result gr = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(local, &gr), 0);
	PT_CHECK_RC(prolly_remote_url(&url, local, "up"), 0);

	/* fetch: remote-tracking refs, read as origin/BRANCH */
	PT_REQUIRE(sf_put_range(&h, remote, "main", 0, 300, 1) == 0);
	PT_REQUIRE(prolly_branch_create(remote, "dev", &h) == 0);
	int moved = 0;
	PT_CHECK_RC(prolly_fetch(NULL, local, remote, "origin", count_fetched, &moved), 0);
	PT_CHECK(moved == 2);
	PT_CHECK(prolly_resolve(&c, local, "origin/main") == 0 && prolly_id_equal(&c, &h));
	PT_CHECK(prolly_resolve(&c, local, "origin/dev~0") == 0 && prolly_id_equal(&c, &h));
	PT_CHECK_RC(prolly_resolve(&c, local, "origin/nosuch"), PROLLY_ENOTFOUND);
	PT_CHECK(prolly_branch_head(&c, local, "main") == PROLLY_ENOTFOUND); /* no local branch */
	moved = 0;
	PT_CHECK_RC(prolly_fetch(NULL, local, remote, "origin", count_fetched, &moved), 0);
	PT_CHECK(moved == 0);
	PT_CHECK_RC(prolly_gc(local, &gr), 0); /* keeps what tracking refs name */
	PT_CHECK(sf_same_history(remote, local, &h));

	/* push: fast-forward, then one that is not */
	PT_REQUIRE(prolly_branch_create(local, "main", &h) == 0);
	PT_REQUIRE(sf_put_range(&c, local, "main", 5, 1, 2) == 0);
	PT_CHECK_RC(prolly_push(NULL, local, remote, "origin", "main", 0), 0);
	PT_CHECK(prolly_branch_head(&r, remote, "main") == 0 && prolly_id_equal(&r, &c));
	PT_CHECK(prolly_resolve(&r, local, "origin/main") == 0 && prolly_id_equal(&r, &c));
	PT_REQUIRE(sf_put_range(&r, remote, "main", 6, 1, 3) == 0);
	PT_REQUIRE(sf_put_range(&c, local, "main", 7, 1, 4) == 0);
	PT_CHECK_RC(prolly_push(NULL, local, remote, "origin", "main", 0), PROLLY_ECONFLICT);
	prolly_id now;
	PT_CHECK(prolly_branch_head(&now, remote, "main") == 0 && prolly_id_equal(&now, &r));
	PT_CHECK_RC(prolly_push(NULL, local, remote, "origin", "main", 1), 0);
	PT_CHECK(prolly_branch_head(&now, remote, "main") == 0 && prolly_id_equal(&now, &c));
	PT_CHECK_RC(prolly_push(NULL, local, remote, "origin", "nosuch", 0), PROLLY_ENOTFOUND);

	/* remove: the record and the tracking refs */
	PT_CHECK_RC(prolly_remote_remove(local, "origin"), 0);
	PT_CHECK_RC(prolly_resolve(&c, local, "origin/main"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_remote_remove(local, "origin"), PROLLY_ENOTFOUND);
	PT_CHECK_RC(k6_holds(local), 0);
	prolly_buf_dispose(&url);
	prolly_close(local);
	prolly_close(remote);
}

/* A store that removes remote "origin" (on another handle) when its first write comes: a
 * remote removed while a fetch or push into this store runs. With fetch set, it fetches
 * "origin" from fetch instead: a fetch that lands while a remove runs. */
typedef struct remove_midway {
	tp_store tp;
	prolly_db *other; /* another handle of this store */
	prolly_db *fetch;
	int armed;
} remove_midway;

static void remove_midway_call(tp_store *w, const char *what)
{
	remove_midway *r = (remove_midway *)(void *)w;
	if (!r->armed || strcmp(what, "write"))
		return;
	r->armed = 0;
	if (r->fetch)
		PT_CHECK_RC(prolly_fetch(NULL, r->other, r->fetch, "origin", NULL, NULL), 0);
	else
		PT_CHECK_RC(prolly_remote_remove(r->other, "origin"), 0);
}

static int any_ref(void *payload, const char *name, const prolly_id *value)
{
	(void)value;
	PT_CHECKF(0, "ref '%s' left behind", name);
	++*(int *)payload;
	return 0;
}

/* fetch and push took any remote name, recorded or not, and made remotes/NAME/BRANCH refs for
 * it that prolly_remote_list never listed and prolly_remote_remove refused (PROLLY_ENOTFOUND),
 * and that the CLI's rule against a branch NAME/x hiding them did not cover. A remote name must
 * now be recorded (PROLLY_ENOTFOUND, nothing copied or moved); remove takes the tracking refs of
 * a name with no record (an older library's); and a remote removed while a fetch or push runs
 * gets no tracking ref back. */
PT_TEST(fetch_push_need_a_recorded_remote)
{
	prolly_db *local = sf_new_db(SF_MEM), *remote = sf_new_db(SF_LMDB);
	prolly_id h, mine, c;
	prolly_commit *cm = NULL;
	int n = 0;
	PT_REQUIRE(local && remote);
	PT_REQUIRE(sf_put_range(&h, remote, "main", 0, 50, 1) == 0);
	PT_CHECK_RC(prolly_fetch(NULL, local, remote, "ghost", NULL, NULL), PROLLY_ENOTFOUND);
	PT_CHECKF(strstr(prolly_last_error(), "no remote 'ghost'"), "%s", prolly_last_error());
	PT_CHECK_RC(prolly__get_ref(local, "remotes/ghost/main", &c), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_commit_read(&cm, local, &h), PROLLY_ENOTFOUND);
	PT_REQUIRE(sf_put_range(&mine, local, "main", 0, 10, 2) == 0);
	PT_CHECK_RC(prolly_push(NULL, local, remote, "ghost", "main", 1), PROLLY_ENOTFOUND);
	PT_CHECKF(strstr(prolly_last_error(), "no remote 'ghost'"), "%s", prolly_last_error());
	PT_CHECK(prolly_branch_head(&c, remote, "main") == 0 && prolly_id_equal(&c, &h));
	prolly_store *st = prolly_db_store(local);
	PT_CHECK_RC(st->list_refs(st, "remotes/", any_ref, &n), 0);
	PT_CHECK(n == 0);

	/* tracking refs an older library made for a name never recorded: remove takes them */
	PT_CHECK_RC(raw_ref(local, "remotes/old/main", &mine), 0);
	PT_CHECK_RC(raw_ref(local, "remotes/old/dev", &mine), 0);
	PT_CHECK_RC(prolly_remote_remove(local, "old"), 0);
	PT_CHECK_RC(st->list_refs(st, "remotes/", any_ref, &n), 0);
	PT_CHECK(n == 0);
	PT_CHECK_RC(prolly_remote_remove(local, "old"), PROLLY_ENOTFOUND);
	PT_CHECKF(strstr(prolly_last_error(), "no remote 'old'"), "%s", prolly_last_error());
	prolly_close(local);

	/* removed while a fetch, then a push, runs: no tracking ref comes back */
	prolly_store *mem = NULL;
	prolly_db *other = NULL;
	local = NULL;
	PT_REQUIRE(prolly_store_mem_new(&mem) == 0);
	remove_midway *r = tp_new(sizeof(remove_midway), mem);
	tp_store *o = r ? tp_new(sizeof(tp_store), mem) : NULL;
	PT_REQUIRE(o && prolly_db_new(&local, &r->tp.base, NULL) == 0);
	o->keep_inner = 1;
	PT_REQUIRE(prolly_db_new(&other, &o->base, NULL) == 0);
	r->other = other;
	r->tp.on_call = remove_midway_call;
	PT_CHECK_RC(prolly_remote_add(local, "origin", "lmdb:/x"), 0);
	r->armed = 1;
	PT_CHECK_RC(prolly_fetch(NULL, local, remote, "origin", NULL, NULL), PROLLY_ENOTFOUND);
	PT_CHECKF(strstr(prolly_last_error(), "'origin' was removed"), "%s", prolly_last_error());
	PT_CHECK(!r->armed);
	st = prolly_db_store(local);
	PT_CHECK_RC(st->list_refs(st, "remotes/", any_ref, &n), 0);
	PT_CHECK(n == 0);
	PT_REQUIRE(sf_put_range(&mine, local, "main", 0, 10, 2) == 0);
	PT_CHECK_RC(prolly_remote_add(local, "origin", "lmdb:/x"), 0);
	r->armed = 1;
	/* the remote's branch moves (the push is done there), but no tracking ref is made here */
	PT_CHECK_RC(prolly_push(NULL, local, remote, "origin", "main", 1), 0);
	PT_CHECK(!r->armed);
	PT_CHECK(prolly_branch_head(&c, remote, "main") == 0 && prolly_id_equal(&c, &mine));
	PT_CHECK_RC(st->list_refs(st, "remotes/", any_ref, &n), 0);
	PT_CHECK(n == 0);

	/* a fetch that lands after remove listed the tracking refs, before its write: the refs it
	 * made are removed too (it read the record before the remove, so its write held) */
	PT_CHECK_RC(prolly_remote_add(local, "origin", "lmdb:/x"), 0);
	PT_REQUIRE(sf_put_range(&c, remote, "dev", 0, 5, 3) == 0);
	r->fetch = remote;
	r->armed = 1;
	PT_CHECK_RC(prolly_remote_remove(local, "origin"), 0);
	PT_CHECK(!r->armed);
	PT_CHECK_RC(st->list_refs(st, "remotes/", any_ref, &n), 0);
	PT_CHECK(n == 0);
	prolly_commit_free(cm);
	prolly_close(other);
	prolly_close(local);
	prolly_close(remote);
}

/* remotes/NAME/BRANCH has at most PROLLY_MAX_REF_NAME bytes (RM6 in remote.c). remote add took
 * any remote name of up to 200 bytes, and a fetch from one whose tracking ref of some branch did
 * not fit failed as a whole, also for the branches that fit, every time, with no way out but
 * renaming the remote: now no remote name too long for a branch of the longest name is recorded,
 * and a fetch under such a name (one an older library recorded) still refuses before copying
 * anything, naming the ref and the way out. */
PT_TEST(fetch_tracking_ref_name_limit)
{
	prolly_db *local = sf_new_db(SF_MEM), *remote = sf_new_db(SF_LMDB);
	char name[64], branch[201], ref[300];
	prolly_id h, c;
	prolly_commit *cm = NULL;
	prolly_buf url = PROLLY_BUF_INIT;
	PT_REQUIRE(local && remote);
	memset(name, 'o', sizeof(name));
	memset(branch, 'b', sizeof(branch));
	branch[200] = 0;
	PT_REQUIRE(sf_put_range(&h, remote, "main", 0, 50, 1) == 0);
	PT_REQUIRE(prolly_branch_create(remote, branch, &h) == 0);
	/* 47 bytes: remotes/ + 47 + / + 200 = 256 */
	name[47] = 0;
	PT_CHECK_RC(prolly_remote_add(local, name, "lmdb:/x"), PROLLY_EINVAL);
	PT_CHECKF(strstr(prolly_last_error(), "at most 46") != NULL, "%s", prolly_last_error());
	PT_CHECK_RC(prolly_remote_url(&url, local, name), PROLLY_ENOTFOUND);
	/* recorded by an older library (the record of a remote of 46 bytes, copied) */
	PT_REQUIRE(prolly_remote_add(local, "short", "lmdb:/x") == 0);
	PT_REQUIRE(prolly__get_ref(local, "config/remotes/short", &c) == 0);
	snprintf(ref, sizeof(ref), "config/remotes/%s", name);
	PT_CHECK_RC(raw_ref(local, ref, &c), 0);
	/* a fetch under it: refused, the ref named, nothing copied */
	PT_CHECK_RC(prolly_fetch(NULL, local, remote, name, NULL, NULL), PROLLY_EINVAL);
	snprintf(ref, sizeof(ref), "remotes/%s/%s", name, branch);
	PT_CHECKF(strstr(prolly_last_error(), ref) != NULL, "%s", prolly_last_error());
	snprintf(ref, sizeof(ref), "remotes/%s/main", name);
	PT_CHECK_RC(prolly__get_ref(local, ref, &c), PROLLY_ENOTFOUND);
	PT_CHECK_RC(prolly_commit_read(&cm, local, &h), PROLLY_ENOTFOUND);
	/* 46 bytes: every branch fits, the longest exactly */
	name[46] = 0;
	PT_CHECK_RC(prolly_remote_add(local, name, "lmdb:/x"), 0);
	PT_CHECK_RC(prolly_fetch(NULL, local, remote, name, NULL, NULL), 0);
	snprintf(ref, sizeof(ref), "remotes/%s/%s", name, branch);
	PT_CHECK(strlen(ref) == PROLLY_MAX_REF_NAME);
	PT_CHECK(prolly__get_ref(local, ref, &c) == 0 && prolly_id_equal(&c, &h));
	/* and read as NAME/BRANCH (247 bytes), with steps too: the spec's base was once cut at the
	 * 200 bytes of a branch name, so that `prolly pull` of such a branch failed as a bad spec */
	snprintf(ref, sizeof(ref), "%s/%s", name, branch);
	PT_CHECK_RC(prolly_resolve(&c, local, ref), 0);
	PT_CHECK(prolly_id_equal(&c, &h));
	snprintf(ref, sizeof(ref), "%s/%s~0", name, branch);
	PT_CHECK_RC(prolly_resolve(&c, local, ref), 0);
	PT_CHECK(prolly_id_equal(&c, &h));
	snprintf(ref, sizeof(ref), "%s/%sx", name, branch); /* 248 bytes: longer than any ref */
	PT_CHECK_RC(prolly_resolve(&c, local, ref), PROLLY_EINVAL);
	snprintf(ref, sizeof(ref), "%s/%s", name, branch);
	ref[strlen(ref) - 1] = 'c'; /* 247 bytes, no such ref */
	PT_CHECK_RC(prolly_resolve(&c, local, ref), PROLLY_ENOTFOUND);
	prolly_commit_free(cm);
	prolly_buf_dispose(&url);
	prolly_close(local);
	prolly_close(remote);
}

SF_MAIN_LOCAL
