/*
 * test_contract.c - the documented errors of every exported function of include/prolly.h and
 * include/prolly/store.h, checked against the code:
 *
 *   - each pointer argument NULL in turn, a bad branch, tag, ref or remote name, an id that is
 *     absent, a count of zero where it is allowed: the return code the header documents;
 *   - on failure prolly_last_error() is non-empty and names the function or what was wrong;
 *   - output parameters are left untouched on failure (or set to NULL where documented);
 *   - every free and close accepts NULL.
 *
 * The versions of the caller-allocated structs are tested in test_abi.c. Every case runs in a
 * child process (a NULL that the code dereferences fails that case, not the program), on a
 * memory store holding branch "main" (two commits) and the tag "t", or on LMDB where the
 * function is LMDB's.
 *
 * Re-run one test: build/tests/test_contract NAME.
 */
#include "lib/model.h"
#include "prolly.h"
#include "prolly/store.h"
#include "ptest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the fixture ----------------------------------------------------------------------------- */

static prolly_db *db;       /* memory store, no threads of its own (the cases fork) */
static prolly_db *other;    /* another, empty memory store */
static prolly_store *bare;  /* a memory store never handed to a handle */
static prolly_id root;      /* main's tree: {"a": "1", "k": "v"} */
static prolly_id head;      /* main's head; its parent is first */
static prolly_id first;     /* main's root commit */
static prolly_id absent;    /* an id nothing has */
static prolly_id empty;     /* the empty tree */
static prolly_id untouched; /* what out-parameters hold before a failing call */
static prolly_txn *txn;     /* an open txn on db */
static char lmdb_dir[512];  /* an LMDB store */
static char nowhere[512];   /* a directory that does not exist */
static char fresh[512];     /* where a case makes an LMDB store and writes nothing */

static const prolly_slice key_k = {"k", 1};
static const prolly_slice no_data = {NULL, 3}; /* a size without bytes */
static char long_key[PROLLY_MAX_KEY + 1];
static char long_name[PROLLY_MAX_REF_NAME + 2];

static int fixture(void)
{
	if (db)
		return 0;
	prolly_options o = PROLLY_OPTIONS_INIT;
	o.flags = PROLLY_DB_NO_THREADS;
	prolly_edit e[2] = {{PROLLY_PUT, {"a", 1}, {"1", 1}}, {PROLLY_PUT, {"k", 1}, {"v", 1}}};
	char *dir = tm_tmpdir("contract");
	prolly_db *l = NULL;
	int rc = prolly_open(&db, "mem:", &o);
	rc = rc ? rc : prolly_commit_edits(&first, db, "main", e, 1, "one");
	rc = rc ? rc : prolly_commit_edits(&head, db, "main", e + 1, 1, "two");
	rc = rc ? rc : prolly_tag_create(db, "t", &first);
	rc = rc ? rc : prolly_open(&other, "mem:", &o);
	rc = rc ? rc : prolly_store_mem_new(&bare);
	rc = rc ? rc : prolly_txn_begin(&txn, db);
	snprintf(lmdb_dir, sizeof(lmdb_dir), "%s/lmdb", dir);
	snprintf(nowhere, sizeof(nowhere), "%s/nowhere", dir);
	snprintf(fresh, sizeof(fresh), "%s/fresh", dir);
	char url[600];
	snprintf(url, sizeof(url), "lmdb:%s", lmdb_dir);
	rc = rc ? rc : prolly_open(&l, url, NULL);
	rc = rc ? rc : prolly_commit_edits(NULL, l, "main", e, 2, "lmdb");
	prolly_close(l);
	free(dir);
	prolly_commit *c = NULL;
	rc = rc ? rc : prolly_commit_read(&c, db, &head);
	if (!rc)
		root = c->tree;
	prolly_commit_free(c);
	memset(&absent, 0x11, sizeof(absent));
	prolly_id_empty_tree(&empty);
	memset(&untouched, 0xab, sizeof(untouched));
	memset(long_key, 'q', PROLLY_MAX_KEY + 1);
	memset(long_name, 'n', PROLLY_MAX_REF_NAME + 1);
	if (rc)
		printf("# fixture: %s\n", prolly_last_error());
	return rc;
}

/* ---- one case: a call in a child process ------------------------------------------------------ */

static int ncases;

/* In the parent: runs the case in a child and returns 0 once the child is done (recording a
 * failure if it failed or died). In the child: returns 1, and the case's code runs. */
static int child(const char *call, int line)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		PT_CHECKF(0, "fork for %s", call);
		return 0;
	}
	if (pid == 0) {
		prolly_set_error(0, "%s", "");
		return 1;
	}
	int status = 0;
	ncases++;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (WIFSIGNALED(status))
			fprintf(stderr, "  line %d: %s died of signal %d\n", line, call, WTERMSIG(status));
		pt_failed_now = 1;
	}
	return 0;
}

/* In the child: checks rc against want and, on failure, the message; exits. needle: what the
 * message must name, beside the function's name ("" for nothing more than a message). */
static void finish(int rc, int want, const char *needle, int out_ok, const char *call, int line)
{
	int bad = 0;
	const char *msg = prolly_last_error();
	char fn[64];
	size_t n = strcspn(call, "(");
	snprintf(fn, sizeof(fn), "%.*s", (int)(n < sizeof(fn) ? n : sizeof(fn) - 1), call);
	if (rc != want) {
		fprintf(stderr, "  line %d: %s returned %d, want %d (%s)\n", line, call, rc, want, msg);
		bad = 1;
	} else if (rc < 0 && rc != PROLLY_ITEROVER && !*msg) {
		fprintf(stderr, "  line %d: %s: %d with no message\n", line, call, rc);
		bad = 1;
	} else if (rc < 0 && rc != PROLLY_ITEROVER && *needle && !strstr(msg, needle) &&
	           !strstr(msg, fn)) {
		fprintf(stderr, "  line %d: %s: message '%s' names neither %s nor '%s'\n", line, call, msg,
		        fn, needle);
		bad = 1;
	}
	if (!out_ok) {
		fprintf(stderr, "  line %d: %s: the check after the call failed (output or message)\n",
		        line, call);
		bad = 1;
	}
	if (getenv("CONTRACT_SHOW"))
		fprintf(stderr, "MSG %d %s => %s\n", line, fn, msg);
	fflush(stderr);
	_exit(bad);
}

/* CASE(want, needle, call): call returns want; on failure its message names the function or
 * needle. OUT(want, needle, call, out_check): and out_check holds afterwards. */
#define OUT(want, needle, call, out_check)                                                         \
	do {                                                                                           \
		if (child(#call, __LINE__)) {                                                              \
			int rc_ = (call);                                                                      \
			finish(rc_, want, needle, (out_check), #call, __LINE__);                               \
		}                                                                                          \
	} while (0)
#define CASE(want, needle, call) OUT(want, needle, call, 1)
/* A call that returns nothing (or nothing checked): it must not crash. */
#define VOID(call)                                                                                 \
	do {                                                                                           \
		if (child(#call, __LINE__)) {                                                              \
			call;                                                                                  \
			_exit(0);                                                                              \
		}                                                                                          \
	} while (0)

#define EINV PROLLY_EINVAL
#define ENOTF PROLLY_ENOTFOUND
#define SAME(id) (memcmp(&(id), &untouched, sizeof(untouched)) == 0)

/* ---- values, errors, counters, versioned structs: NULL ---------------------------------------- */

PT_TEST(plain_values_and_structs)
{
	PT_REQUIRE(fixture() == 0);
	prolly_id id = untouched;
	prolly_stats st = PROLLY_STATS_INIT;
	for (int e = PROLLY_ITEROVER; e <= 0; e++)
		PT_CHECK(prolly_strerror(e) != NULL);
	PT_CHECK(prolly_strerror(12345) != NULL);
	VOID(prolly_buf_dispose(NULL));
	OUT(EINV, "", prolly_id_from_hex(NULL, "00"), 1);
	OUT(EINV, "", prolly_id_from_hex(&id, NULL), SAME(id));
	OUT(EINV, "", prolly_id_from_hex(&id, "abc"), SAME(id));
	OUT(EINV, "", prolly_id_from_hex(&id, "zz"), SAME(id));
	CASE(EINV, "", prolly_stats_init(NULL, PROLLY_STATS_VERSION));
	CASE(EINV, "", prolly_thread_stats(NULL));
	CASE(EINV, "", prolly_gc_result_init(NULL, PROLLY_GC_RESULT_VERSION));
	CASE(EINV, "", prolly_pg_options_init(NULL, PROLLY_PG_OPTIONS_VERSION));
	CASE(EINV, "", prolly_pg_stats_init(NULL, PROLLY_PG_STATS_VERSION));
	CASE(EINV, "", prolly_store_pg_thread_stats(NULL));
	CASE(EINV, "", prolly_lmdb_snapshot_init(NULL, PROLLY_LMDB_SNAPSHOT_VERSION));
	CASE(EINV, "", prolly_options_init(NULL, PROLLY_OPTIONS_VERSION));
	CASE(EINV, "", prolly_tree_stats_init(NULL, PROLLY_TREE_STATS_VERSION));
	CASE(EINV, "", prolly_range_init(NULL, PROLLY_RANGE_VERSION));
	CASE(EINV, "", prolly_merge_options_init(NULL, PROLLY_MERGE_OPTIONS_VERSION));
	CASE(EINV, "", prolly_merge_stats_init(NULL, PROLLY_MERGE_STATS_VERSION));
	CASE(EINV, "", prolly_sync_options_init(NULL, PROLLY_SYNC_OPTIONS_VERSION));
	CASE(EINV, "", prolly_sync_stats_init(NULL, PROLLY_SYNC_STATS_VERSION));
	CASE(EINV, "", prolly_db_stats(NULL, &st));
	CASE(EINV, "", prolly_db_stats(db, NULL));
	CASE(EINV, "", prolly_store_pg_stats(NULL, bare));
	CASE(EINV, "", prolly_store_pg_stats(&(prolly_pg_stats)PROLLY_PG_STATS_INIT, NULL));
	CASE(EINV, "", prolly_store_pg_stats(&(prolly_pg_stats)PROLLY_PG_STATS_INIT, bare));
	CASE(0, "", (int)prolly_redact_url(NULL, 0, "postgresql://u:pw@h/d"));
	CASE(0, "", (int)prolly_redact_message(NULL, 0, "x", NULL));
	CASE(0, "", (int)prolly_redact_url((char[8]){0}, 8, NULL));
	CASE(EINV, "", prolly_remote_url_valid(NULL));
	CASE(EINV, "", prolly_remote_url_valid(""));
}

PT_TEST(frees_accept_null)
{
	PT_REQUIRE(fixture() == 0);
	VOID(prolly_store_close(NULL));
	VOID(prolly_close(NULL));
	VOID(prolly_txn_free(NULL));
	VOID(prolly_builder_free(NULL));
	VOID(prolly_cursor_free(NULL));
	VOID(prolly_commit_free(NULL));
	VOID(prolly_buf_dispose(NULL));
	VOID(prolly_db_cache_clear(NULL));
	CASE(0, "", prolly_db_store(NULL) != NULL);
}

/* ---- store.h ----------------------------------------------------------------------------------- */

PT_TEST(store_helpers)
{
	PT_REQUIRE(fixture() == 0);
	prolly_store s;
	memset(&s, 0xab, sizeof(s));
	unsigned char data[1] = {0};
	prolly_stats bad = PROLLY_STATS_INIT;
	bad.version = 1000;
	CASE(EINV, "", prolly_store_init(NULL, PROLLY_STORE_VERSION));
	OUT(EINV, "", prolly_store_init(&s, 0), s.version == 0xabababab);
	OUT(EINV, "", prolly_store_init(&s, PROLLY_STORE_VERSION + 1), s.version == 0xabababab);
	CASE(EINV, "", prolly_store_ref_name_check(NULL));
	CASE(EINV, "", prolly_store_ref_name_check(""));
	CASE(EINV, "", prolly_store_ref_name_check(long_name));
	CASE(0, "", prolly_store_ref_name_check("refs/heads/main"));
	CASE(EINV, "", prolly_store_check_node(NULL, data, 1));
	CASE(EINV, "", prolly_store_check_node(&absent, NULL, 1));
	CASE(PROLLY_ECORRUPT, "", prolly_store_check_node(&absent, data, 1));
	CASE(PROLLY_ECORRUPT, "", prolly_store_check_node(&absent, NULL, 0));
	CASE(EINV, "", prolly_stats_add(NULL));
	CASE(EINV, "", prolly_stats_add(&bad));
	prolly_db *h = (prolly_db *)&untouched;
	prolly_store none = PROLLY_STORE_INIT, newer = PROLLY_STORE_INIT;
	none.kind = "none"; /* no function at all */
	newer.version = PROLLY_STORE_VERSION + 1;
	OUT(EINV, "get_nodes", prolly_db_new(&h, &none, NULL), h == (prolly_db *)&untouched);
	OUT(PROLLY_EVERSION, "version", prolly_db_new(&h, &newer, NULL), h == (prolly_db *)&untouched);
	VOID(prolly_store_counters_add(NULL, 0));
	VOID(prolly_store_thread_counters(NULL, 0));
}

/* ---- opening stores and handles ----------------------------------------------------------------- */

PT_TEST(open_stores)
{
	const prolly_edit edit1 = {PROLLY_PUT, {"x", 1}, {"y", 1}};
	PT_REQUIRE(fixture() == 0);
	prolly_store *st = (prolly_store *)&untouched;
	prolly_db *h = (prolly_db *)&untouched;
	prolly_lmdb_snapshot snaps[2] = {PROLLY_LMDB_SNAPSHOT_INIT, PROLLY_LMDB_SNAPSHOT_INIT};
	prolly_lmdb_snapshot bad[2] = {PROLLY_LMDB_SNAPSHOT_INIT, PROLLY_LMDB_SNAPSHOT_INIT};
	bad[1].version = 1000;
	char url[600];
	snprintf(url, sizeof(url), "lmdb:%s", nowhere);
#define ST_SAME (st == (prolly_store *)&untouched)
#define H_SAME (h == (prolly_db *)&untouched)
	CASE(EINV, "", prolly_store_mem_new(NULL));
	CASE(EINV, "", prolly_store_lmdb_open(NULL, lmdb_dir, 0));
	OUT(EINV, "", prolly_store_lmdb_open(&st, NULL, 0), ST_SAME);
	OUT(EINV, "", prolly_store_lmdb_open(&st, "", 0), ST_SAME);
	CASE(EINV, "", prolly_store_lmdb_open_ex(NULL, lmdb_dir, 0, 0));
	OUT(EINV, "", prolly_store_lmdb_open_ex(&st, NULL, 0, 0), ST_SAME);
	OUT(EINV, "flags", prolly_store_lmdb_open_ex(&st, lmdb_dir, 0, 0x80), ST_SAME);
	OUT(ENOTF, nowhere, prolly_store_lmdb_open_ex(&st, nowhere, 0, 0), ST_SAME);
	char file[600]; /* a file where the directory should be */
	snprintf(file, sizeof(file), "%s/data.mdb", lmdb_dir);
	OUT(EINV, "not a directory", prolly_store_lmdb_open(&st, file, 0), ST_SAME);
	OUT(EINV, "", prolly_store_lmdb_open_ex(&st, lmdb_dir, 0, PROLLY_OPEN_PREVIOUS), ST_SAME);
	CASE(EINV, "", prolly_store_open(NULL, "mem:"));
	OUT(EINV, "", prolly_store_open(&st, NULL), ST_SAME);
	OUT(EINV, "", prolly_store_open(&st, "nosuch:x"), ST_SAME);
	CASE(EINV, "", prolly_store_open_ex(NULL, "mem:", 0));
	OUT(EINV, "", prolly_store_open_ex(&st, NULL, 0), ST_SAME);
	OUT(EINV, "flags", prolly_store_open_ex(&st, "mem:", 0x80), ST_SAME);
	OUT(EINV, "", prolly_store_open_ex(&st, url, PROLLY_OPEN_READONLY | PROLLY_OPEN_CREATE),
	    ST_SAME);
	OUT(EINV, "", prolly_store_open_ex(&st, "mem:", PROLLY_OPEN_PREVIOUS | PROLLY_OPEN_READONLY),
	    ST_SAME);
	OUT(ENOTF, nowhere, prolly_store_open_ex(&st, url, 0), ST_SAME);
	CASE(0, "", prolly_store_open_ex(&st, "mem:", 0));
	CASE(PROLLY_EUNSUPPORTED, "read-only",
	     (prolly_open_ex(&h, "mem:", NULL, PROLLY_OPEN_READONLY),
	      prolly_commit_edits(NULL, h, "main", &edit1, 1, "m")));
	CASE(EINV, "", prolly_store_pg_open(NULL, "host=/nonexistent", NULL));
	OUT(EINV, "", prolly_store_pg_open(&st, NULL, NULL), ST_SAME);
	/* No server: the connection fails fast, and the message keeps the password out. */
	OUT(PROLLY_ESTORE, "",
	    prolly_store_pg_open(&st, "postgresql://u:secretpw@/db?host=/nonexistent-contract", NULL),
	    ST_SAME && !strstr(prolly_last_error(), "secretpw"));
	OUT(EINV, "",
	    prolly_store_pg_open(&st, "host=/nonexistent-contract password=secretpw bogus=1", NULL),
	    ST_SAME && !strstr(prolly_last_error(), "secretpw"));
	/* Refused before any connection: the options' own limits. */
	OUT(EINV, "schema name",
	    prolly_store_pg_open(
	        &st, "host=/nonexistent-contract",
	        &(prolly_pg_options){.version = PROLLY_PG_OPTIONS_VERSION, .schema = "a\\b"}),
	    ST_SAME);
	OUT(EINV, "schema name",
	    prolly_store_pg_open(&st, "host=/nonexistent-contract",
	                         &(prolly_pg_options){.version = PROLLY_PG_OPTIONS_VERSION,
	                                              .schema = "s234567890123456789012345678901234567"
	                                                        "890123456789012345678901234"}),
	    ST_SAME);
	OUT(EINV, "pool_size",
	    prolly_store_pg_open(
	        &st, "host=/nonexistent-contract",
	        &(prolly_pg_options){.version = PROLLY_PG_OPTIONS_VERSION, .pool_size = 10001}),
	    ST_SAME);
	CASE(EINV, "", prolly_store_pg_init(NULL));
	CASE(EINV, "", prolly_store_pg_init(bare));
	CASE(EINV, "", prolly_lmdb_snapshots(NULL, lmdb_dir));
	OUT(EINV, "", prolly_lmdb_snapshots(snaps, NULL), snaps[0].txnid == 0);
	OUT(EINV, "version", prolly_lmdb_snapshots(bad, lmdb_dir), bad[0].txnid == 0);
	OUT(ENOTF, "", prolly_lmdb_snapshots(snaps, nowhere), snaps[0].txnid == 0);
	/* A store just made: its previous snapshot is the environment before it (no store). The
	 * message names the store, not the temporary copy the open reads. */
	snprintf(url, sizeof(url), "lmdb:%s", fresh);
	OUT(ENOTF, "previous snapshot",
	    (prolly_store_lmdb_open(&st, fresh, 0), prolly_store_close(st),
	     prolly_store_open_ex(&st, url, PROLLY_OPEN_READONLY | PROLLY_OPEN_PREVIOUS)),
	    !strstr(prolly_last_error(), ".prolly-previous"));
	snprintf(url, sizeof(url), "lmdb:%s", nowhere);
	CASE(EINV, "", prolly_lmdb_restore_previous(NULL));
	CASE(ENOTF, "", prolly_lmdb_restore_previous(nowhere));
	snprintf(url, sizeof(url), "lmdb:%s", lmdb_dir);
	CASE(PROLLY_ECONFLICT, "open",
	     (prolly_open(&h, url, NULL), prolly_lmdb_restore_previous(lmdb_dir)));
	snprintf(url, sizeof(url), "lmdb:%s", nowhere);
	CASE(EINV, "", prolly_open(NULL, "mem:", NULL));
	OUT(EINV, "", prolly_open(&h, NULL, NULL), H_SAME);
	OUT(EINV, "", prolly_open(&h, "nosuch:x", NULL), H_SAME);
	CASE(EINV, "", prolly_open_ex(NULL, "mem:", NULL, 0));
	OUT(EINV, "", prolly_open_ex(&h, NULL, NULL, 0), H_SAME);
	OUT(ENOTF, "", prolly_open_ex(&h, url, NULL, 0), H_SAME);
	CASE(EINV, "", prolly_db_new(NULL, (prolly_store_mem_new(&st), st), NULL));
	OUT(EINV, "", prolly_db_new(&h, NULL, NULL), H_SAME);
	/* A flag of a newer header, the handle's or the store's, is refused, naming its bits (the
	 * open flags' are above). */
	prolly_options newer = PROLLY_OPTIONS_INIT;
	newer.flags = PROLLY_DB_NO_THREADS | 0x40u;
	OUT(EINV, "0x40", prolly_open(&h, "mem:", &newer), H_SAME);
	OUT(EINV, "0x40", prolly_open_ex(&h, url, &newer, PROLLY_OPEN_CREATE), H_SAME);
	OUT(EINV, "0x40", prolly_db_new(&h, (prolly_store_mem_new(&st), st), &newer), H_SAME);
	OUT(EINV, "0x80", prolly_db_new(&h, (prolly_store_mem_new(&st), st->flags |= 0x80u, st), NULL),
	    H_SAME);
	OUT(EINV, "0x80", prolly_store_open_ex(&st, "mem:", PROLLY_OPEN_CREATE | 0x80u), ST_SAME);
	CASE(EINV, "", prolly_txn_begin(NULL, db));
	CASE(EINV, "", prolly_txn_begin((prolly_txn **)&h, NULL));
	PT_CHECK(prolly_db_store(db) != NULL);
#undef ST_SAME
#undef H_SAME
}

/* ---- out of memory: outputs untouched ------------------------------------------------------------ */

/* In a case's child: a tree whose one record ("big") has a value of 60000 bytes. */
static prolly_id big_tree(void)
{
	static char v[60000];
	prolly_edit e = {PROLLY_PUT, {"big", 3}, {v, sizeof(v)}};
	prolly_commit *c = NULL;
	prolly_id id;
	if (prolly_commit_edits(NULL, db, "big", &e, 1, "big") || prolly_branch_commit(&c, db, "big"))
		_exit(2);
	id = c->tree;
	prolly_commit_free(c);
	return id;
}

/* In a case's child: no more address space (ulimit -v at what is mapped now) and the heap's free
 * blocks taken, but for a few of 4 KiB apart: small allocations still succeed, one of tens of
 * KiB fails. */
static void starve(void)
{
	struct rlimit rl;
	void **kept = NULL, **p;
	getrlimit(RLIMIT_AS, &rl);
	rl.rlim_cur = tm_vm_size();
	if (setrlimit(RLIMIT_AS, &rl))
		_exit(2);
	while ((p = malloc(4096)) != NULL) { /* a list through the blocks themselves */
		*p = kept;
		kept = p;
	}
	while (malloc(64) != NULL)
		;
	for (int i = 0; i < 32 && kept && *kept; i++) { /* every other one: none adjoins another */
		void **next = *kept;
		*kept = *next;
		free(next);
		kept = *kept;
	}
}

/* A value copied into the caller's buffer needs memory: failing for it must leave the buffer as
 * it was (the header's rule for outputs), not emptied, nor the key's buffer of prolly_select
 * filled when the value's then fails. */
PT_TEST(out_of_memory_outputs_untouched)
{
#if defined(__SANITIZE_ADDRESS__)
	printf("# skipped: AddressSanitizer's malloc stops the process rather than return NULL\n");
	return;
#endif
	PT_REQUIRE(fixture() == 0);
	prolly_buf b = PROLLY_BUF_INIT, v = PROLLY_BUF_INIT;
	prolly_id big;
	PT_REQUIRE((b.ptr = malloc(16)) != NULL);
	memcpy(b.ptr, "untouched", 9);
	b.size = 9;
	b.asize = 16;
	OUT(PROLLY_ENOMEM, "", (big = big_tree(), starve(), prolly_get(&b, db, &big, "big", 3)),
	    b.size == 9 && memcmp(b.ptr, "untouched", 9) == 0);
	OUT(PROLLY_ENOMEM, "", (big = big_tree(), starve(), prolly_select(&b, &v, db, &big, 0)),
	    b.size == 9 && memcmp(b.ptr, "untouched", 9) == 0 && v.size == 0);
	prolly_buf_dispose(&b);
}

/* ---- reading a tree ----------------------------------------------------------------------------- */

static int on_value(void *p, size_t i, const void *v, size_t n)
{
	(void)p, (void)i, (void)v, (void)n;
	return 0;
}

PT_TEST(tree_reads)
{
	PT_REQUIRE(fixture() == 0);
	prolly_buf b = PROLLY_BUF_INIT;
	uint64_t n = 77;
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	prolly_cursor *cur = (prolly_cursor *)&untouched;
	prolly_slice k = {0}, v = {0};
#define N_SAME (n == 77)
#define B_SAME (b.ptr == NULL && b.size == 0)
	OUT(EINV, "", prolly_get(NULL, db, &root, "k", 1), 1);
	OUT(EINV, "", prolly_get(&b, NULL, &root, "k", 1), B_SAME);
	OUT(EINV, "", prolly_get(&b, db, NULL, "k", 1), B_SAME);
	OUT(EINV, "", prolly_get(&b, db, &root, NULL, 1), B_SAME);
	OUT(ENOTF, "", prolly_get(&b, db, &root, "z", 1), B_SAME);
	OUT(ENOTF, "", prolly_get(&b, db, &root, NULL, 0), B_SAME);
	OUT(ENOTF, "not found", prolly_get(&b, db, &absent, "k", 1), B_SAME);
	OUT(ENOTF, "", prolly_get(&b, db, &root, long_key, sizeof(long_key)), B_SAME);
	CASE(EINV, "", prolly_get_many(NULL, &root, &key_k, 1, on_value, NULL));
	CASE(EINV, "", prolly_get_many(db, NULL, &key_k, 1, on_value, NULL));
	CASE(EINV, "", prolly_get_many(db, &root, NULL, 1, on_value, NULL));
	CASE(EINV, "", prolly_get_many(db, &root, &key_k, 1, NULL, NULL));
	CASE(EINV, "", prolly_get_many(db, &root, &no_data, 1, on_value, NULL));
	CASE(0, "", prolly_get_many(db, &root, NULL, 0, on_value, NULL));
	CASE(ENOTF, "", prolly_get_many(db, &absent, &key_k, 1, on_value, NULL));
	CASE(ENOTF, "", prolly_get_many(db, &absent, NULL, 0, on_value, NULL));
	OUT(EINV, "", prolly_count(NULL, db, &root), 1);
	OUT(EINV, "", prolly_count(&n, NULL, &root), N_SAME);
	OUT(EINV, "", prolly_count(&n, db, NULL), N_SAME);
	OUT(ENOTF, "", prolly_count(&n, db, &absent), N_SAME);
	OUT(EINV, "", prolly_rank(NULL, db, &root, "k", 1), 1);
	OUT(EINV, "", prolly_rank(&n, NULL, &root, "k", 1), N_SAME);
	OUT(EINV, "", prolly_rank(&n, db, NULL, "k", 1), N_SAME);
	OUT(EINV, "", prolly_rank(&n, db, &root, NULL, 1), N_SAME);
	OUT(ENOTF, "", prolly_rank(&n, db, &absent, "k", 1), N_SAME);
	OUT(0, "", prolly_rank(&n, db, &root, NULL, 0), n == 0);
	OUT(EINV, "", prolly_select(&b, &b, NULL, &root, 0), B_SAME);
	OUT(EINV, "", prolly_select(&b, &b, db, NULL, 0), B_SAME);
	OUT(0, "", prolly_select(NULL, NULL, db, &root, 0), 1);
	OUT(ENOTF, "", prolly_select(&b, &b, db, &root, 2), B_SAME);
	OUT(ENOTF, "", prolly_select(&b, &b, db, &absent, 0), B_SAME);
	CASE(EINV, "", prolly_tree_stats_get(NULL, db, &root, 0));
	OUT(EINV, "", prolly_tree_stats_get(&ts, NULL, &root, 0), ts.records == 0);
	OUT(EINV, "", prolly_tree_stats_get(&ts, db, NULL, 0), ts.records == 0);
	OUT(ENOTF, "", prolly_tree_stats_get(&ts, db, &absent, 1), ts.records == 0);
	CASE(EINV, "prolly_trees_verify", prolly_trees_verify(NULL, &root, 1, NULL, NULL));
	CASE(EINV, "prolly_trees_verify", prolly_trees_verify(db, NULL, 1, NULL, NULL));
	CASE(0, "", prolly_trees_verify(db, NULL, 0, NULL, NULL));
	CASE(0, "", prolly_trees_verify(db, &absent, 1, NULL, NULL)); /* reported to fn, not an error */
	CASE(EINV, "", prolly_cursor_open(NULL, db, &root, NULL));
	OUT(EINV, "", prolly_cursor_open(&cur, NULL, &root, NULL), cur == (void *)&untouched);
	OUT(EINV, "", prolly_cursor_open(&cur, db, NULL, NULL), cur == (void *)&untouched);
	OUT(ENOTF, "", prolly_cursor_open(&cur, db, &absent, NULL), cur == (void *)&untouched);
	OUT(EINV, "", prolly_cursor_next(NULL, &k, &v), k.data == NULL && v.data == NULL);
	/* A commit id where a tree is wanted: damage as the readers see it, outputs untouched. */
	OUT(PROLLY_ECORRUPT, "commit", prolly_count(&n, db, &head), N_SAME);
	OUT(PROLLY_ECORRUPT, "commit", prolly_rank(&n, db, &head, "k", 1), N_SAME);
	OUT(PROLLY_ECORRUPT, "commit", prolly_select(&b, &b, db, &head, 0), B_SAME);
	OUT(PROLLY_ECORRUPT, "commit", prolly_cursor_open(&cur, db, &head, NULL),
	    cur == (void *)&untouched);
	prolly_range bad = PROLLY_RANGE_INIT, none = PROLLY_RANGE_INIT;
	bad.has_lo = 1;
	bad.lo = no_data;
	none.has_lo = none.has_hi = 1;
	none.lo = key_k; /* lo "k" > hi "": no key fits */
	OUT(EINV, "no data", prolly_cursor_open(&cur, db, &root, &bad), cur == (void *)&untouched);
	/* An empty range reads nothing, not even the root: an absent one is no error. */
	CASE(PROLLY_ITEROVER, "",
	     (prolly_cursor_open(&cur, db, &absent, &none) ? -100 : prolly_cursor_next(cur, &k, &v)));
#undef N_SAME
#undef B_SAME
}

/* ---- writing: txns, edits, builds, merges ------------------------------------------------------- */

PT_TEST(txn_edits_builds)
{
	const prolly_edit edit1 = {PROLLY_PUT, {"x", 1}, {"y", 1}};
	PT_REQUIRE(fixture() == 0);
	prolly_id id = untouched;
	prolly_ref_update u = {"refs/heads/x", PROLLY_REF_EXPECT_ABSENT, {{0}}, 0, {{0}}, 0, 0, {{0}}};
	prolly_ref_update noname = u, longname = u, badexpect = u;
	noname.name = NULL;
	longname.name = long_name;
	badexpect.expect = (prolly_ref_expect)7;
	prolly_edit nokey = {PROLLY_PUT, {NULL, 1}, {"v", 1}};
	prolly_edit bigkey = {PROLLY_PUT, {long_key, sizeof(long_key)}, {"v", 1}};
	prolly_edit badop = {(prolly_op)9, {"k", 1}, {"v", 1}};
	prolly_slice from = {"z", 1}, to = {"a", 1}, big = {long_key, sizeof(long_key)};
	prolly_builder *bld = (prolly_builder *)&untouched;
	CASE(EINV, "", prolly_txn_set_ref(NULL, &u));
	CASE(EINV, "", prolly_txn_set_ref(txn, NULL));
	CASE(EINV, "", prolly_txn_set_ref(txn, &noname));
	CASE(EINV, "", prolly_txn_set_ref(txn, &longname));
	CASE(EINV, "", prolly_txn_set_ref(txn, &badexpect));
	CASE(EINV, "", prolly_txn_commit(NULL, NULL, 0));
	CASE(EINV, "", prolly_txn_set_reason(NULL, "commit", NULL));
	CASE(EINV, "", prolly_txn_set_reason(txn, NULL, NULL));
	CASE(EINV, "", prolly_txn_set_reason(txn, "Bad Op", NULL));
	CASE(EINV, "", prolly_txn_set_reason(txn, "", NULL));
	OUT(EINV, "", prolly_edit_tree(NULL, txn, &root, &edit1, 1), 1);
	OUT(EINV, "", prolly_edit_tree(&id, NULL, &root, &edit1, 1), SAME(id));
	OUT(EINV, "", prolly_edit_tree(&id, txn, NULL, &edit1, 1), SAME(id));
	OUT(EINV, "", prolly_edit_tree(&id, txn, &root, NULL, 1), SAME(id));
	OUT(EINV, "", prolly_edit_tree(&id, txn, &root, &nokey, 1), SAME(id));
	OUT(EINV, "", prolly_edit_tree(&id, txn, &root, &badop, 1), SAME(id));
	OUT(PROLLY_ETOOBIG, "", prolly_edit_tree(&id, txn, &root, &bigkey, 1), SAME(id));
	OUT(ENOTF, "", prolly_edit_tree(&id, txn, &absent, &edit1, 1), SAME(id));
	OUT(0, "", prolly_edit_tree(&id, txn, &root, NULL, 0), prolly_id_equal(&id, &root));
	OUT(EINV, "", prolly_delete_range(NULL, txn, &root, NULL, NULL), 1);
	OUT(EINV, "", prolly_delete_range(&id, NULL, &root, NULL, NULL), SAME(id));
	OUT(EINV, "", prolly_delete_range(&id, txn, NULL, NULL, NULL), SAME(id));
	OUT(EINV, "", prolly_delete_range(&id, txn, &root, &from, &to), SAME(id));
	OUT(PROLLY_ETOOBIG, "", prolly_delete_range(&id, txn, &root, &big, NULL), SAME(id));
	OUT(EINV, "", prolly_delete_range(&id, txn, &root, &no_data, NULL), SAME(id));
	OUT(EINV, "", prolly_delete_range(&id, txn, &root, NULL, &no_data), SAME(id));
	OUT(ENOTF, "", prolly_delete_range(&id, txn, &absent, NULL, NULL), SAME(id));
	CASE(EINV, "", prolly_builder_new(NULL, txn));
	OUT(EINV, "", prolly_builder_new(&bld, NULL), bld == (void *)&untouched);
	CASE(EINV, "", prolly_builder_add(NULL, "k", 1, "v", 1));
	CASE(EINV, "", (prolly_builder_new(&bld, txn), prolly_builder_add(bld, NULL, 1, "v", 1)));
	CASE(EINV, "", (prolly_builder_new(&bld, txn), prolly_builder_add(bld, "k", 1, NULL, 1)));
	CASE(PROLLY_ETOOBIG, "",
	     (prolly_builder_new(&bld, txn),
	      prolly_builder_add(bld, long_key, sizeof(long_key), "", 0)));
	CASE(EINV, "", prolly_builder_finish(NULL, &id));
	CASE(EINV, "", (prolly_builder_new(&bld, txn), prolly_builder_finish(bld, NULL)));
	OUT(EINV, "", prolly_commit_create(NULL, txn, &root, NULL, 0, 0, "m"), 1);
	OUT(EINV, "", prolly_commit_create(&id, NULL, &root, NULL, 0, 0, "m"), SAME(id));
	OUT(EINV, "", prolly_commit_create(&id, txn, NULL, NULL, 0, 0, "m"), SAME(id));
	OUT(EINV, "", prolly_commit_create(&id, txn, &root, NULL, 1, 0, "m"), SAME(id));
	OUT(ENOTF, "tree", prolly_commit_create(&id, txn, &absent, NULL, 0, 0, "m"), SAME(id));
	OUT(PROLLY_ECORRUPT, "", prolly_commit_create(&id, txn, &head, NULL, 0, 0, "m"), SAME(id));
	OUT(ENOTF, "parent", prolly_commit_create(&id, txn, &root, &absent, 1, 0, NULL), SAME(id));
	OUT(0, "", prolly_commit_create(&id, txn, &root, &head, 1, 0, NULL), !SAME(id));
	CASE(EINV, "", prolly_txn_move_branch(NULL, "x", NULL, &head));
	CASE(EINV, "", prolly_txn_move_branch(txn, NULL, NULL, &head));
	CASE(EINV, "", prolly_txn_move_branch(txn, "..", NULL, &head));
	CASE(EINV, "", prolly_txn_move_branch(txn, "x", NULL, NULL));
	OUT(EINV, "", prolly_rebase_edits(NULL, txn, &root, &root, &edit1, 1), 1);
	OUT(EINV, "", prolly_rebase_edits(&id, NULL, &root, &root, &edit1, 1), SAME(id));
	OUT(EINV, "", prolly_rebase_edits(&id, txn, NULL, &root, &edit1, 1), SAME(id));
	OUT(EINV, "", prolly_rebase_edits(&id, txn, &root, NULL, &edit1, 1), SAME(id));
	OUT(EINV, "", prolly_rebase_edits(&id, txn, &root, &root, NULL, 1), SAME(id));
	OUT(ENOTF, "", prolly_rebase_edits(&id, txn, &absent, &root, &edit1, 1), SAME(id));
}

/* A txn committed in the case's child: every call that would add to it is refused (what it
 * took would never be written), as is a second commit; a builder made before the commit too. */
static prolly_txn *committed(prolly_builder **bld)
{
	prolly_txn *t = NULL;
	if (prolly_txn_begin(&t, db) || (bld && prolly_builder_new(bld, t)) ||
	    prolly_txn_commit(t, NULL, 0))
		_exit(2);
	return t;
}

PT_TEST(txn_after_commit)
{
	const prolly_edit edit1 = {PROLLY_PUT, {"x", 1}, {"y", 1}};
	PT_REQUIRE(fixture() == 0);
	prolly_id id = untouched;
	prolly_ref_update u = {"refs/heads/x", PROLLY_REF_EXPECT_ABSENT, {{0}}, 0, {{0}}, 0, 0, {{0}}};
	prolly_slice from = {"a", 1};
	prolly_builder *bld = (prolly_builder *)&untouched;
	const char *done = "already committed";
	CASE(EINV, done, prolly_txn_commit(committed(NULL), NULL, 0));
	CASE(EINV, done, prolly_txn_set_ref(committed(NULL), &u));
	CASE(EINV, done, prolly_txn_move_branch(committed(NULL), "x", NULL, &head));
	CASE(EINV, done, prolly_txn_set_reason(committed(NULL), "commit", NULL));
	OUT(EINV, done, prolly_edit_tree(&id, committed(NULL), &root, &edit1, 1), SAME(id));
	OUT(EINV, done, prolly_delete_range(&id, committed(NULL), &root, &from, NULL), SAME(id));
	OUT(EINV, done, prolly_rebase_edits(&id, committed(NULL), &root, &root, &edit1, 1), SAME(id));
	OUT(EINV, done, prolly_commit_create(&id, committed(NULL), &root, &head, 1, 0, "m"), SAME(id));
	OUT(EINV, done, prolly_merge(&id, NULL, committed(NULL), &empty, &root, &root, NULL), SAME(id));
	OUT(EINV, done, prolly_cherry_pick(&id, NULL, committed(NULL), &root, &head, 0, NULL),
	    SAME(id));
	OUT(EINV, done, prolly_revert(&id, NULL, committed(NULL), &root, &head, 0, NULL), SAME(id));
	OUT(EINV, done, prolly_builder_new(&bld, committed(NULL)), bld == (void *)&untouched);
	CASE(EINV, done, prolly_builder_add((committed(&bld), bld), "k", 1, "v", 1));
	OUT(EINV, done, prolly_builder_finish((committed(&bld), bld), &id), SAME(id));
	VOID(prolly_txn_free(committed(NULL)));
}

/* ---- diff and merge -------------------------------------------------------------------------- */

static int on_diff(void *p, const prolly_diff_entry *e)
{
	(void)p, (void)e;
	return 0;
}

PT_TEST(diff_and_merge)

{
	PT_REQUIRE(fixture() == 0);
	prolly_id id = untouched;
	prolly_range pre = PROLLY_RANGE_INIT, rev = PROLLY_RANGE_INIT;
	pre.prefix = key_k;
	rev.reverse = 1;
	prolly_merge_options bad_res = PROLLY_MERGE_OPTIONS_INIT, no_fn = PROLLY_MERGE_OPTIONS_INIT;
	bad_res.resolve = (prolly_resolver)99;
	no_fn.resolve = PROLLY_RESOLVE_CALLBACK;
	CASE(EINV, "", prolly_diff(NULL, &root, &root, NULL, on_diff, NULL));
	CASE(EINV, "", prolly_diff(db, NULL, &root, NULL, on_diff, NULL));
	CASE(EINV, "", prolly_diff(db, &root, NULL, NULL, on_diff, NULL));
	CASE(EINV, "", prolly_diff(db, &root, &root, NULL, NULL, NULL));
	CASE(EINV, "prefix", prolly_diff(db, &root, &root, &pre, on_diff, NULL));
	CASE(EINV, "reverse", prolly_diff(db, &root, &root, &rev, on_diff, NULL));
	CASE(ENOTF, "", prolly_diff(db, &absent, &root, NULL, on_diff, NULL));
	CASE(ENOTF, "", prolly_diff(db, &root, &absent, NULL, on_diff, NULL));
	CASE(PROLLY_ECORRUPT, "commit", prolly_diff(db, &head, &root, NULL, on_diff, NULL));
	CASE(0, "", prolly_diff(db, &absent, &absent, NULL, on_diff, NULL)); /* equal: nothing read */
	prolly_range nodata = PROLLY_RANGE_INIT;
	nodata.has_hi = 1;
	nodata.hi = no_data;
	CASE(EINV, "no data", prolly_diff(db, &root, &empty, &nodata, on_diff, NULL));
	OUT(EINV, "", prolly_merge(NULL, NULL, txn, &root, &root, &root, NULL), 1);
	OUT(EINV, "", prolly_merge(&id, NULL, NULL, &root, &root, &root, NULL), SAME(id));
	OUT(EINV, "", prolly_merge(&id, NULL, txn, NULL, &root, &root, NULL), SAME(id));
	OUT(EINV, "", prolly_merge(&id, NULL, txn, &root, NULL, &root, NULL), SAME(id));
	OUT(EINV, "", prolly_merge(&id, NULL, txn, &root, &root, NULL, NULL), SAME(id));
	OUT(EINV, "", prolly_merge(&id, NULL, txn, &root, &root, &root, &bad_res), SAME(id));
	OUT(EINV, "", prolly_merge(&id, NULL, txn, &root, &root, &root, &no_fn), SAME(id));
	OUT(ENOTF, "", prolly_merge(&id, NULL, txn, &absent, &root, &empty, NULL), SAME(id));
	OUT(EINV, "", prolly_cherry_pick(NULL, NULL, txn, &root, &head, 0, NULL), 1);
	OUT(EINV, "", prolly_cherry_pick(&id, NULL, NULL, &root, &head, 0, NULL), SAME(id));
	OUT(EINV, "", prolly_cherry_pick(&id, NULL, txn, NULL, &head, 0, NULL), SAME(id));
	OUT(EINV, "", prolly_cherry_pick(&id, NULL, txn, &root, NULL, 0, NULL), SAME(id));
	OUT(EINV, "parent 2", prolly_cherry_pick(&id, NULL, txn, &root, &head, 2, NULL), SAME(id));
	OUT(ENOTF, "", prolly_cherry_pick(&id, NULL, txn, &root, &absent, 0, NULL), SAME(id));
	OUT(EINV, "", prolly_revert(&id, NULL, NULL, &root, &head, 0, NULL), SAME(id));
	OUT(EINV, "", prolly_revert(&id, NULL, txn, &root, NULL, 0, NULL), SAME(id));
	OUT(ENOTF, "", prolly_revert(&id, NULL, txn, &root, &absent, 0, NULL), SAME(id));
	OUT(EINV, "", prolly_revert(&id, NULL, txn, &root, &head, 0, &bad_res), SAME(id));
}

/* ---- commits, branches, history ------------------------------------------------------------------ */

static int on_commit(void *p, const prolly_commit *c)
{
	(void)p, (void)c;
	return 0;
}
static int on_key_value(void *p, const prolly_commit *c, const void *v, size_t n)
{
	(void)p, (void)c, (void)v, (void)n;
	return 0;
}
static int on_branch(void *p, const char *name, const prolly_id *id)
{
	(void)p, (void)name, (void)id;
	return 0;
}

PT_TEST(commits_and_branches)
{
	const prolly_edit edit1 = {PROLLY_PUT, {"x", 1}, {"y", 1}};
	PT_REQUIRE(fixture() == 0);
	prolly_id id = untouched;
	prolly_commit *c = (prolly_commit *)&untouched;
	prolly_commit *cs[2] = {(prolly_commit *)&untouched, (prolly_commit *)&untouched};
	prolly_id ids[2] = {head, absent};
	unsigned reb = 77;
	const char *hex64 = "1111111111111111111111111111111111111111111111111111111111111111";
#define C_SAME (c == (prolly_commit *)&untouched)
	OUT(EINV, "", prolly_commit_read(NULL, db, &head), 1);
	OUT(EINV, "", prolly_commit_read(&c, NULL, &head), C_SAME);
	OUT(EINV, "", prolly_commit_read(&c, db, NULL), C_SAME);
	OUT(ENOTF, "", prolly_commit_read(&c, db, &absent), C_SAME);
	OUT(PROLLY_ECORRUPT, "", prolly_commit_read(&c, db, &root), C_SAME);
	CASE(EINV, "", prolly_commits_read(NULL, db, ids, 1));
	CASE(EINV, "", prolly_commits_read(cs, NULL, ids, 1));
	OUT(EINV, "", prolly_commits_read(cs, db, NULL, 1), cs[0] == NULL);
	OUT(0, "", prolly_commits_read(NULL, db, NULL, 0), 1);
	OUT(ENOTF, "", prolly_commits_read(cs, db, ids, 2), cs[0] == NULL && cs[1] == NULL);
	CASE(EINV, "", prolly_branch_name_valid(NULL));
	CASE(EINV, "", prolly_branch_name_valid(""));
	CASE(EINV, "", prolly_branch_name_valid("a..b"));
	CASE(EINV, "", prolly_branch_name_valid(hex64));
	OUT(0, "", prolly_branch_head(NULL, db, "main"), 1);
	OUT(EINV, "", prolly_branch_head(&id, NULL, "main"), SAME(id));
	OUT(EINV, "", prolly_branch_head(&id, db, NULL), SAME(id));
	OUT(EINV, "", prolly_branch_head(&id, db, "-x"), SAME(id));
	OUT(ENOTF, "nope", prolly_branch_head(&id, db, "nope"), SAME(id));
	CASE(EINV, "", prolly_branch_commit(NULL, db, "main"));
	OUT(EINV, "", prolly_branch_commit(&c, NULL, "main"), c == NULL);
	OUT(EINV, "", (c = (prolly_commit *)&untouched, prolly_branch_commit(&c, db, NULL)), c == NULL);
	OUT(EINV, "", (c = (prolly_commit *)&untouched, prolly_branch_commit(&c, db, "a~b")),
	    c == NULL);
	OUT(ENOTF, "nope", (c = (prolly_commit *)&untouched, prolly_branch_commit(&c, db, "nope")),
	    c == NULL);
	OUT(EINV, "out_commit", prolly_resolve(NULL, db, "main"), 1);
	OUT(EINV, "db", prolly_resolve(&id, NULL, "main"), SAME(id));
	OUT(EINV, "spec", prolly_resolve(&id, db, NULL), SAME(id));
	OUT(EINV, "", prolly_resolve(&id, db, "main~"), SAME(id));
	OUT(EINV, "'-'", prolly_resolve(&id, db, "main~1^-1"), SAME(id)); /* before the walk */
	OUT(EINV, "'x'", prolly_resolve(&id, db, "nope~1x"), SAME(id));
	OUT(ENOTF, "nope", prolly_resolve(&id, db, "nope"), SAME(id));
	OUT(ENOTF, "", prolly_resolve(&id, db, "main~5"), SAME(id));
	OUT(ENOTF, "", prolly_resolve(&id, db, hex64), SAME(id));
	CASE(EINV, "", prolly_resolve_commit(NULL, db, "main"));
	OUT(EINV, "db", prolly_resolve_commit(&c, NULL, "main"), c == NULL);
	OUT(EINV, "", (c = (prolly_commit *)&untouched, prolly_resolve_commit(&c, db, NULL)),
	    c == NULL);
	OUT(ENOTF, "", (c = (prolly_commit *)&untouched, prolly_resolve_commit(&c, db, "main^2")),
	    c == NULL);
	OUT(EINV, "", prolly_commit_edits(&id, NULL, "main", &edit1, 1, "m"), SAME(id));
	OUT(0, "", prolly_commit_edits(NULL, db, "main", NULL, 0, "m"), 1);
	OUT(EINV, "", prolly_commit_edits(&id, db, NULL, &edit1, 1, "m"), SAME(id));
	OUT(EINV, "", prolly_commit_edits(&id, db, "a b", &edit1, 1, "m"), SAME(id));
	OUT(EINV, "", prolly_commit_edits(&id, db, "main", NULL, 1, "m"), SAME(id));
	OUT(EINV, "", prolly_commit_edits_on(NULL, &reb, db, "main", &head, &edit1, 1, "m", 1), 1);
	OUT(EINV, "", prolly_commit_edits_on(&id, &reb, NULL, "main", &head, &edit1, 1, "m", 1),
	    SAME(id) && reb == 77);
	OUT(EINV, "", prolly_commit_edits_on(&id, &reb, db, NULL, &head, &edit1, 1, "m", 1),
	    SAME(id) && reb == 77);
	OUT(EINV, "", prolly_commit_edits_on(&id, &reb, db, "..", &head, &edit1, 1, "m", 1),
	    SAME(id) && reb == 77);
	OUT(EINV, "", prolly_commit_edits_on(&id, &reb, db, "main", NULL, &edit1, 1, "m", 1),
	    SAME(id) && reb == 77);
	OUT(EINV, "", prolly_commit_edits_on(&id, &reb, db, "main", &head, NULL, 1, "m", 1),
	    SAME(id) && reb == 77);
	OUT(ENOTF, "", prolly_commit_edits_on(&id, &reb, db, "main", &absent, &edit1, 1, "m", 1),
	    SAME(id));
	OUT(PROLLY_ECONFLICT, "does not exist",
	    prolly_commit_edits_on(&id, &reb, db, "nope", &head, &edit1, 1, "m", 1), SAME(id));
	OUT(EINV, "tree", prolly_commit_edits_on(&id, &reb, db, "main", &root, &edit1, 1, "m", 1),
	    SAME(id));
	CASE(EINV, "db", prolly_branch_create(NULL, "x", &head));
	CASE(EINV, "", prolly_branch_create(db, NULL, &head));
	CASE(EINV, "", prolly_branch_create(db, "x y", &head));
	CASE(EINV, "", prolly_branch_create(db, "x", NULL));
	CASE(ENOTF, "", prolly_branch_create(db, "x", &absent));
	CASE(PROLLY_ECONFLICT, "main", prolly_branch_create(db, "main", &head));
	CASE(EINV, "db", prolly_branch_delete(NULL, "main"));
	CASE(EINV, "", prolly_branch_delete(db, NULL));
	CASE(EINV, "", prolly_branch_delete(db, "~"));
	CASE(ENOTF, "nope", prolly_branch_delete(db, "nope"));
	OUT(EINV, "db", prolly_branch_remove(&id, NULL, "main"), SAME(id));
	OUT(EINV, "", prolly_branch_remove(&id, db, NULL), SAME(id));
	OUT(ENOTF, "nope", prolly_branch_remove(&id, db, "nope"), SAME(id));
	CASE(EINV, "", prolly_branch_list(NULL, on_branch, NULL));
	CASE(EINV, "", prolly_branch_list(db, NULL, NULL));
	OUT(EINV, "", prolly_merge_base(NULL, db, &head, &first), 1);
	OUT(EINV, "", prolly_merge_base(&id, NULL, &head, &first), SAME(id));
	OUT(EINV, "", prolly_merge_base(&id, db, NULL, &first), SAME(id));
	OUT(EINV, "", prolly_merge_base(&id, db, &head, NULL), SAME(id));
	OUT(ENOTF, "", prolly_merge_base(&id, db, &head, &absent), SAME(id));
	CASE(EINV, "", prolly_log(NULL, &head, on_commit, NULL));
	CASE(EINV, "", prolly_log(db, NULL, on_commit, NULL));
	CASE(EINV, "", prolly_log(db, &head, NULL, NULL));
	CASE(ENOTF, "", prolly_log(db, &absent, on_commit, NULL));
	CASE(EINV, "", prolly_key_history(NULL, &head, "k", 1, on_key_value, NULL));
	CASE(EINV, "", prolly_key_history(db, NULL, "k", 1, on_key_value, NULL));
	CASE(EINV, "", prolly_key_history(db, &head, NULL, 1, on_key_value, NULL));
	CASE(EINV, "", prolly_key_history(db, &head, "k", 1, NULL, NULL));
	CASE(PROLLY_ETOOBIG, "",
	     prolly_key_history(db, &head, long_key, sizeof(long_key), on_key_value, NULL));
	CASE(ENOTF, "", prolly_key_history(db, &absent, "k", 1, on_key_value, NULL));
	CASE(EINV, "tree", prolly_key_history(db, &root, "k", 1, on_key_value, NULL));
	CASE(EINV, "tree", prolly_log(db, &root, on_commit, NULL));
	CASE(0, "", prolly_key_history(db, &head, NULL, 0, on_key_value, NULL)); /* the empty key */
	OUT(EINV, "db", prolly_merge_branches(&id, NULL, NULL, "main", "main", NULL, "m"), SAME(id));
	OUT(EINV, "", prolly_merge_branches(&id, NULL, db, NULL, "main", NULL, "m"), SAME(id));
	OUT(EINV, "", prolly_merge_branches(&id, NULL, db, "main", NULL, NULL, "m"), SAME(id));
	OUT(EINV, "", prolly_merge_branches(&id, NULL, db, "main", "a..", NULL, "m"), SAME(id));
	OUT(ENOTF, "nope", prolly_merge_branches(&id, NULL, db, "main", "nope", NULL, "m"), SAME(id));
	OUT(ENOTF, "nope", prolly_merge_branches(&id, NULL, db, "nope", "main", NULL, "m"), SAME(id));
	/* An explicit base (branch b2 at main's parent): absent, or the id of a tree (bad input, as
	 * for every commit argument). */
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	OUT(ENOTF, "",
	    (prolly_branch_create(db, "b2", &first), mo.base = &absent,
	     prolly_merge_branches(&id, NULL, db, "b2", "main", &mo, NULL)),
	    SAME(id));
	OUT(EINV, "tree",
	    (prolly_branch_create(db, "b2", &first), mo.base = &root,
	     prolly_merge_branches(&id, NULL, db, "b2", "main", &mo, NULL)),
	    SAME(id));
	CASE(EINV, "", prolly_gc(NULL, NULL));
#undef C_SAME
}

/* ---- reflog, tags, reset --------------------------------------------------------------------- */

static int on_reflog(void *p, const prolly_reflog_entry *e)
{
	(void)p, (void)e;
	return 0;
}

PT_TEST(reflog_tags_reset)
{
	PT_REQUIRE(fixture() == 0);
	prolly_id id = untouched;
	CASE(EINV, "", prolly_reflog(NULL, NULL, on_reflog, NULL));
	CASE(EINV, "", prolly_reflog(db, NULL, NULL, NULL));
	CASE(EINV, "", prolly_reflog(db, "..", on_reflog, NULL));
	CASE(0, "", prolly_reflog(db, "nope", on_reflog, NULL));
	/* a full name's branch or tag part follows the name rules (it listed nothing, no error) */
	CASE(EINV, "refs/heads/a..b", prolly_reflog(db, "refs/heads/a..b", on_reflog, NULL));
	CASE(EINV, "refs/heads/", prolly_reflog(db, "refs/heads/", on_reflog, NULL));
	CASE(EINV, "refs/tags/x y", prolly_reflog(db, "refs/tags/x y", on_reflog, NULL));
	CASE(0, "", prolly_reflog(db, "refs/tags/nope", on_reflog, NULL));
	CASE(0, "", prolly_reflog(db, "refs/heads/main", on_reflog, NULL));
	OUT(EINV, "", prolly_branch_restore(&id, NULL, "x"), SAME(id));
	OUT(EINV, "", prolly_branch_restore(&id, db, NULL), SAME(id));
	OUT(EINV, "", prolly_branch_restore(&id, db, "x y"), SAME(id));
	OUT(ENOTF, "", prolly_branch_restore(&id, db, "nope"), SAME(id));
	OUT(PROLLY_ECONFLICT, "main", prolly_branch_restore(&id, db, "main"), SAME(id));
	OUT(EINV, "db", prolly_branch_reset(&id, NULL, "main", &first), SAME(id));
	OUT(EINV, "", prolly_branch_reset(&id, db, NULL, &first), SAME(id));
	OUT(EINV, "", prolly_branch_reset(&id, db, "main", NULL), SAME(id));
	OUT(EINV, "", prolly_branch_reset(&id, db, "/main", &first), SAME(id));
	OUT(ENOTF, "nope", prolly_branch_reset(&id, db, "nope", &first), SAME(id));
	OUT(ENOTF, "", prolly_branch_reset(&id, db, "main", &absent), SAME(id));
	CASE(0, "", prolly_tag_name_valid("v1.0"));
	CASE(EINV, "tag name", prolly_tag_name_valid(NULL));
	CASE(EINV, "tag name", prolly_tag_name_valid("a..b"));
	CASE(EINV, "tag name",
	     prolly_tag_name_valid("2222222222222222222222222222222222222222222222222222222222222222"));
	CASE(EINV, "db", prolly_tag_create(NULL, "u", &head));
	CASE(EINV, "tag name", prolly_tag_create(db, NULL, &head));
	CASE(EINV, "", prolly_tag_create(db, "u", NULL));
	CASE(EINV, "tag name", prolly_tag_create(db, "u..v", &head));
	CASE(ENOTF, "", prolly_tag_create(db, "u", &absent));
	CASE(PROLLY_ECONFLICT, "t", prolly_tag_create(db, "t", &head));
	OUT(EINV, "", prolly_tag_delete(&id, NULL, "t"), SAME(id));
	OUT(EINV, "", prolly_tag_delete(&id, db, NULL), SAME(id));
	OUT(EINV, "tag name", prolly_tag_delete(&id, db, "~t"), SAME(id));
	OUT(ENOTF, "nope", prolly_tag_delete(&id, db, "nope"), SAME(id));
	OUT(0, "", prolly_tag_get(NULL, db, "t"), 1);
	OUT(EINV, "", prolly_tag_get(&id, NULL, "t"), SAME(id));
	OUT(EINV, "", prolly_tag_get(&id, db, NULL), SAME(id));
	OUT(EINV, "tag name", prolly_tag_get(&id, db, ".."), SAME(id));
	OUT(ENOTF, "nope", prolly_tag_get(&id, db, "nope"), SAME(id));
	CASE(EINV, "", prolly_tag_list(NULL, on_branch, NULL));
	CASE(EINV, "", prolly_tag_list(db, NULL, NULL));
}

/* ---- sync, remotes, proofs ------------------------------------------------------------------- */

static int on_remote(void *p, const char *name, const char *url)
{
	(void)p, (void)name, (void)url;
	return 0;
}

PT_TEST(sync_remotes_proofs)
{
	PT_REQUIRE(fixture() == 0);
	prolly_buf b = PROLLY_BUF_INIT;
	prolly_slice k = {"k", 1}, a = {"a", 1};
	prolly_proof_claim claim;
	memset(&claim, 0xab, sizeof(claim));
	int claim_same = 1;
	prolly_sync_options so = PROLLY_SYNC_OPTIONS_INIT;
	so.batch = 65537;
	unsigned char junk[16] = {0};
	CASE(EINV, "", prolly_sync(NULL, NULL, db, &head, 1, NULL, 0, NULL));
	CASE(EINV, "", prolly_sync(NULL, db, NULL, &head, 1, NULL, 0, NULL));
	CASE(EINV, "", prolly_sync(NULL, db, db, NULL, 1, NULL, 0, NULL));
	CASE(EINV, "", prolly_sync(NULL, db, db, NULL, 0, NULL, 1, NULL));
	CASE(EINV, "batch", prolly_sync(NULL, db, db, &head, 1, NULL, 0, &so));
	CASE(0, "", prolly_sync(NULL, db, db, NULL, 0, NULL, 0, NULL));
	CASE(ENOTF, "", prolly_sync(NULL, db, db, &absent, 1, NULL, 0, NULL));
	CASE(EINV, "not a commit", prolly_sync(NULL, other, db, &root, 1, NULL, 0, NULL));
	CASE(0, "", prolly_sync(NULL, db, db, &root, 1, NULL, 0, NULL)); /* dst has it: not read */
	CASE(EINV, "", prolly_remote_add(NULL, "o", "mem:"));
	CASE(EINV, "", prolly_remote_add(db, NULL, "mem:"));
	CASE(EINV, "", prolly_remote_add(db, "o", NULL));
	CASE(EINV, "", prolly_remote_add(db, "o/p", "mem:"));
	CASE(EINV, "", prolly_remote_add(db, "o", "postgresql://u:secret@h/d"));
	OUT(EINV, "", prolly_remote_url(NULL, db, "o"), 1);
	OUT(EINV, "", prolly_remote_url(&b, NULL, "o"), b.ptr == NULL);
	OUT(EINV, "", prolly_remote_url(&b, db, NULL), b.ptr == NULL);
	OUT(EINV, "", prolly_remote_url(&b, db, "a..b"), b.ptr == NULL);
	OUT(ENOTF, "nope", prolly_remote_url(&b, db, "nope"), b.ptr == NULL);
	CASE(EINV, "", prolly_remote_list(NULL, on_remote, NULL));
	CASE(EINV, "", prolly_remote_list(db, NULL, NULL));
	CASE(EINV, "", prolly_remote_remove(NULL, "o"));
	CASE(EINV, "", prolly_remote_remove(db, NULL));
	CASE(EINV, "", prolly_remote_remove(db, "o/p"));
	CASE(ENOTF, "nope", prolly_remote_remove(db, "nope"));
	CASE(EINV, "", prolly_fetch(NULL, NULL, db, "o", NULL, NULL));
	CASE(EINV, "", prolly_fetch(NULL, db, NULL, "o", NULL, NULL));
	CASE(EINV, "", prolly_fetch(NULL, db, db, NULL, NULL, NULL));
	CASE(EINV, "", prolly_fetch(NULL, db, db, "o/p", NULL, NULL));
	CASE(EINV, "", prolly_push(NULL, NULL, db, "o", "main", 0));
	CASE(EINV, "", prolly_push(NULL, db, NULL, "o", "main", 0));
	CASE(EINV, "", prolly_push(NULL, db, db, NULL, "main", 0));
	CASE(EINV, "", prolly_push(NULL, db, db, "o", NULL, 0));
	CASE(EINV, "", prolly_push(NULL, db, db, "o", "..", 0));
	CASE(ENOTF, "nope", prolly_push(NULL, db, db, "o", "nope", 0));
	OUT(EINV, "", prolly_prove(NULL, db, &root, &k, NULL), 1);
	OUT(EINV, "", prolly_prove(&b, NULL, &root, &k, NULL), b.ptr == NULL);
	OUT(EINV, "", prolly_prove(&b, db, NULL, &k, NULL), b.ptr == NULL);
	OUT(EINV, "", prolly_prove(&b, db, &root, NULL, NULL), b.ptr == NULL);
	OUT(EINV, "", prolly_prove(&b, db, &root, &k, &a), b.ptr == NULL);
	OUT(ENOTF, "", prolly_prove(&b, db, &absent, &k, NULL), b.ptr == NULL);
	OUT(EINV, "", prolly_proof_verify(&claim, NULL, junk, sizeof(junk), NULL, NULL), claim_same);
	OUT(EINV, "", prolly_proof_verify(&claim, &root, NULL, 1, NULL, NULL),
	    claim.range == (int)0xabababab);
	OUT(PROLLY_ECORRUPT, "", prolly_proof_verify(&claim, &root, junk, sizeof(junk), NULL, NULL),
	    claim.range == (int)0xabababab);
	OUT(PROLLY_ECORRUPT, "", prolly_proof_verify(NULL, &root, NULL, 0, NULL, NULL), 1);
	/* A well-formed proof of another tree: the claim is filled before the walk (fn may read it),
	 * so it holds the proof's unproven claim when the walk then fails, as the header says. */
	OUT(PROLLY_ECORRUPT, "not of this tree",
	    (prolly_prove(&b, db, &root, &k, NULL),
	     prolly_proof_verify(&claim, &empty, b.ptr, b.size, NULL, NULL)),
	    claim.range == 0 && claim.key.size == 1);
}

int main(int argc, char **argv)
{
	int rc = pt_run(argc, argv);
	printf("# %d cases\n", ncases);
	if (txn)
		prolly_txn_free(txn);
	prolly_store_close(bare);
	prolly_close(other);
	prolly_close(db);
	return rc;
}
