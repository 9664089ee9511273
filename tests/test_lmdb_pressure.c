/*
 * test_lmdb_pressure.c - the LMDB store under the pressures an embedded store meets on one
 * machine: a map that cannot grow, a full disk, a read-only mount, a process killed while it
 * holds the writer lock, and a store or lock file of another LMDB format. Each failure must be a
 * clear error that leaves nothing half-written: the branch not moved, the store opening and
 * reading afterwards, and writes working again once the cause is gone (docs/stores.md, "LMDB
 * store"). Mounting needs root: without it those cases are skipped, saying so.
 */
#include "lib/model.h"
#include "lmdb_fixture.h"
#include "prolly.h"
#include "prolly/store.h"
#include "ptest.h"

#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A commit of n keys "<tag>-<i>" with values of vsize bytes. */
static int put_many(prolly_db *db, const char *branch, const char *tag, int n, size_t vsize)
{
	prolly_edit *e = calloc((size_t)n, sizeof(*e));
	char *keys = calloc((size_t)n, 32), *val = malloc(vsize);
	prolly_id c;
	int rc = PROLLY_ENOMEM;
	if (e && keys && val) {
		memset(val, 'v', vsize);
		for (int i = 0; i < n; i++) {
			snprintf(keys + 32 * i, 32, "%s-%06d", tag, i);
			e[i] = (prolly_edit){PROLLY_PUT, {keys + 32 * i, strlen(keys + 32 * i)}, {val, vsize}};
		}
		rc = prolly_commit_edits(&c, db, branch, e, (size_t)n, tag);
	}
	free(e);
	free(keys);
	free(val);
	return rc;
}

/* Every node of branch's tree read again from the store and re-hashed. */
static int verify_branch(prolly_db *db, const char *branch)
{
	prolly_commit *c = NULL;
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	int rc = prolly_branch_commit(&c, db, branch);
	if (!rc)
		rc = prolly_tree_stats_get(&ts, db, &c->tree, 1);
	prolly_commit_free(c);
	return rc;
}

/* Runs fn(dir) in a child and waits at most `seconds` for it; its exit status, 124 when it had
 * to be killed, 128 + N when it died of signal N. */
static int in_child(void (*fn)(const char *), const char *dir, int seconds)
{
	fflush(stdout);
	fflush(stderr);
	pid_t c = fork();
	if (c < 0)
		return 126;
	if (c == 0) {
		fn(dir);
		_exit(0);
	}
	int st = 0;
	for (int i = 0; i < seconds * 100; i++) {
		if (waitpid(c, &st, WNOHANG) == c)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(10000);
	}
	kill(c, SIGKILL);
	waitpid(c, &st, 0);
	return 124;
}

/* The write end of the pipe a child of start_child says it is ready on. */
static int sig_fd = -1;

/* Starts fn(dir) in a child, which writes one byte to sig_fd once it holds what it is to hold
 * and then waits to be killed. Returns its pid once it has, or -1. */
static pid_t start_child(void (*fn)(const char *), const char *dir)
{
	int fds[2];
	char c;
	if (pipe(fds) != 0)
		return -1;
	sig_fd = fds[1];
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0)
		fn(dir);
	close(fds[1]);
	int ready = pid > 0 && read(fds[0], &c, 1) == 1;
	close(fds[0]);
	if (pid > 0 && !ready) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return ready ? pid : -1;
}

/* In a child: reports what failed, with the last error, and exits with code. */
#define FAILC(code, ...)                                                                           \
	do {                                                                                           \
		fprintf(stderr, "  child: " __VA_ARGS__);                                                  \
		fprintf(stderr, " (%s)\n", prolly_last_error());                                           \
		_exit(code);                                                                               \
	} while (0)

/* ---- 1. a map that cannot grow ------------------------------------------------------------ */

/* In a child: the store in dir with a 1 MiB map, on a handle that starts no thread (no thread
 * stack or malloc arena to reserve) and caches nothing; then an address-space limit (ulimit -v)
 * of what the process maps now plus headroom. Exits 2 when it cannot. */
static prolly_db *open_then_limit(const char *dir, size_t headroom)
{
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	prolly_options o = PROLLY_OPTIONS_INIT;
	char v[16];
	o.flags = PROLLY_DB_NO_THREADS;
	o.cache_bytes = 0;
	if (prolly_store_lmdb_open(&st, dir, (size_t)1 << 20) || prolly_db_new(&db, st, &o))
		FAILC(2, "open");
	if (get(db, "main", "first", v, sizeof(v)) == PROLLY_ENOTFOUND && put(db, "main", "first", "1"))
		FAILC(2, "first commit");
	struct rlimit rl;
	getrlimit(RLIMIT_AS, &rl);
	rl.rlim_cur = tm_vm_size() + headroom;
	if (setrlimit(RLIMIT_AS, &rl))
		FAILC(2, "setrlimit");
	return db;
}

/* In a child: a store opened with a 1 MiB map, and an address-space limit that lets the map
 * double a few times and then not. Commits of 1 MiB go in until one is refused;
 * it must be PROLLY_EFULL naming the map and what to do, with main where it was, and a small
 * commit must then go in. Exits 0 when all holds. */
static void map_child(const char *dir)
{
	prolly_db *db = open_then_limit(dir, (size_t)24 << 20);
	prolly_id before, after;
	char tag[16];
	int rc = 0, i;

	for (i = 0; i < 64 && rc == 0; i++) {
		if (prolly_branch_head(&before, db, "main"))
			FAILC(2, "head");
		snprintf(tag, sizeof(tag), "m%d", i);
		rc = put_many(db, "main", tag, 64, 16 << 10);
	}
	fprintf(stderr, "  # commit %d refused: %d %s\n", i, rc, prolly_last_error());
	if (rc != PROLLY_EFULL)
		FAILC(3, "the commit that did not fit returned %d, not PROLLY_EFULL", rc);
	if (!strstr(prolly_last_error(), "map") || !strstr(prolly_last_error(), "full"))
		FAILC(3, "the message names neither the map nor a full store");
	if (prolly_branch_head(&after, db, "main") || !prolly_id_equal(&before, &after))
		FAILC(4, "main moved although its commit failed");
	if ((rc = put(db, "main", "small", "after")))
		FAILC(5, "a small commit after the full one failed: %d", rc);
	prolly_close(db);
	_exit(0);
}

PT_TEST(map_that_cannot_grow_refuses_the_commit_whole)
{
	char dir[PATH_MAX], v[64];
	prolly_db *db = NULL;
	fresh_dir(dir, sizeof(dir), "map");
	int st = in_child(map_child, dir, 60);
	PT_CHECKF(st == 0, "child status %d", st);
	/* Another process opens the store as it was left: every commit that went in reads. */
	PT_CHECK_RC(prolly_open_ex(&db, url_of(dir), NULL, 0), 0);
	PT_REQUIRE(db);
	PT_CHECK_RC(get(db, "main", "first", v, sizeof(v)), 0);
	PT_CHECK_RC(get(db, "main", "small", v, sizeof(v)), 0);
	PT_CHECK(strcmp(v, "after") == 0);
	PT_CHECK_RC(get(db, "main", "m0-000063", v, sizeof(v)), 0);
	PT_CHECK_RC(verify_branch(db, "main"), 0);
	/* Without the limit the map grows and the big commit goes in. */
	PT_CHECK_RC(put_many(db, "main", "big", 64, 16 << 10), 0);
	prolly_close(db);
}

/* The read end of the pipe the parent says "go" on (adopt_child). */
static int go_fd = -1;

/* In a child: a handle on the store under an address-space limit that leaves no room for the
 * map another process is about to grow. Once told to go, reads must fail with an error, not
 * crash, however often they are tried. */
static void adopt_child(const char *dir)
{
	prolly_db *db = open_then_limit(dir, (size_t)8 << 20);
	char v[16], c;
	if (write(sig_fd, "a", 1) != 1 || read(go_fd, &c, 1) != 1)
		_exit(2);
	for (int i = 0; i < 3; i++) {
		int rc = get(db, "main", "first", v, sizeof(v));
		if (rc == 0)
			FAILC(3, "read %d succeeded with a map it cannot have", i);
		fprintf(stderr, "  # read %d: %d %s\n", i, rc, prolly_last_error());
	}
	prolly_close(db);
	_exit(0);
}

/* When another process has grown the map, the next transaction of this one must adopt the new
 * size (MDB_MAP_RESIZED); where it cannot be mapped, the handle fails every call until it is
 * reopened. It used to be left with no map, as above, and the next call died of SIGSEGV. */
PT_TEST(map_grown_by_another_process_beyond_the_limit_fails_without_a_crash)
{
	char dir[PATH_MAX];
	prolly_store *st = NULL;
	prolly_db *db = NULL;
	int go[2];
	fresh_dir(dir, sizeof(dir), "adopt");
	PT_REQUIRE(prolly_store_lmdb_open(&st, dir, (size_t)1 << 20) == 0);
	PT_REQUIRE(prolly_db_new(&db, st, NULL) == 0);
	PT_REQUIRE(put(db, "main", "first", "1") == 0);
	PT_REQUIRE(pipe(go) == 0);
	go_fd = go[0];
	pid_t child = start_child(adopt_child, dir);
	close(go[0]);
	PT_REQUIRE(child > 0);
	/* This process grows the map to 32 MiB or more. */
	PT_CHECK_RC(put_many(db, "main", "grow", 1024, 16 << 10), 0);
	PT_CHECK(write(go[1], "g", 1) == 1);
	close(go[1]);
	int st_ = 0;
	for (int i = 0; i < 3000 && waitpid(child, &st_, WNOHANG) == 0; i++)
		usleep(10000);
	PT_CHECKF(WIFEXITED(st_) && WEXITSTATUS(st_) == 0, "child status %d (signal %d)", st_,
	          WIFSIGNALED(st_) ? WTERMSIG(st_) : 0);
	prolly_close(db);
}

/* ---- 2. a full disk ------------------------------------------------------------------------ */

/* Fills the file system of dir up to `leave` bytes free with dir/filler. 0 or -1. */
static int fill_to(const char *dir, size_t leave)
{
	char path[PATH_MAX + 16];
	static char block[64 << 10];
	struct statvfs vs;
	snprintf(path, sizeof(path), "%s/filler", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0)
		return -1;
	while (statvfs(dir, &vs) == 0 && vs.f_bfree * vs.f_frsize > leave + sizeof(block))
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block))
			break;
	return close(fd);
}

/* A store on an 8 MiB file system, filled by another file until commits no longer fit: the
 * refused commit is PROLLY_EFULL saying the disk is full, main stays where it was, the store
 * reopens (read-only and for writing) with every committed key, and once the other file is gone
 * commits go in again. */
PT_TEST(full_disk_refuses_the_commit_whole_and_writes_resume_when_freed)
{
	char mnt[PATH_MAX], dir[PATH_MAX + 16], filler[PATH_MAX + 32], v[64], tag[16];
	prolly_db *db = NULL;
	prolly_id before, after;
	int rc = 0, i;

	fresh_dir(mnt, sizeof(mnt), "disk");
	if (mount_small(mnt, "8m"))
		return;
	snprintf(dir, sizeof(dir), "%s/s", mnt);
	make_store(dir);
	PT_REQUIRE(fill_to(mnt, (size_t)1 << 20) == 0);
	PT_REQUIRE(prolly_open(&db, url_of(dir), NULL) == 0);
	for (i = 0; i < 64 && rc == 0; i++) {
		PT_REQUIRE(prolly_branch_head(&before, db, "main") == 0);
		snprintf(tag, sizeof(tag), "d%d", i);
		rc = put_many(db, "main", tag, 16, 16 << 10);
	}
	PT_CHECK_RC(rc, PROLLY_EFULL);
	PT_CHECKF(strstr(prolly_last_error(), "No space left on device") != NULL, "%s",
	          prolly_last_error());
	printf("# commit %d refused: %s\n", i - 1, prolly_last_error());
	PT_CHECK_RC(prolly_branch_head(&after, db, "main"), 0);
	PT_CHECK(prolly_id_equal(&before, &after));
	/* A commit larger than a builder's flush (4 MiB) fails in a node-only write of the
	 * builder's thread: the same. */
	PT_CHECK_RC(put_many(db, "main", "big", 96, 64 << 10), PROLLY_EFULL);
	PT_CHECKF(strstr(prolly_last_error(), "No space left on device") != NULL, "%s",
	          prolly_last_error());
	PT_CHECK_RC(prolly_branch_head(&after, db, "main"), 0);
	PT_CHECK(prolly_id_equal(&before, &after));
	PT_CHECK_RC(get(db, "main", "d0-000015", v, sizeof(v)), 0);
	/* The remedy, a gc, needs room for its own pages: it works or is full, and loses nothing. */
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	rc = prolly_gc(db, &res);
	printf("# gc on the full disk: %d %s\n", rc, rc ? prolly_last_error() : "");
	PT_CHECKF(rc == 0 || rc == PROLLY_EFULL, "gc: %d %s", rc, prolly_last_error());
	prolly_close(db);
	db = NULL;

	/* The full disk does not stop the store from opening and reading. */
	static const unsigned modes[] = {PROLLY_OPEN_READONLY, 0};
	for (size_t m = 0; m < 2; m++) {
		PT_CHECK_RC(prolly_open_ex(&db, url_of(dir), NULL, modes[m]), 0);
		PT_REQUIRE(db);
		PT_CHECK_RC(get(db, "dev", "c", v, sizeof(v)), 0);
		PT_CHECK_RC(get(db, "main", "b", v, sizeof(v)), 0);
		for (int k = 0; k < i - 1; k++) {
			char key[32];
			snprintf(key, sizeof(key), "d%d-000015", k);
			PT_CHECKF(get(db, "main", key, v, sizeof(v)) == 0, "%s: %s", key, prolly_last_error());
		}
		PT_CHECK_RC(verify_branch(db, "main"), 0);
		prolly_close(db);
		db = NULL;
	}
	/* With room again, the commit that was refused goes in. */
	snprintf(filler, sizeof(filler), "%s/filler", mnt);
	PT_CHECK(unlink(filler) == 0);
	PT_CHECK_RC(prolly_open(&db, url_of(dir), NULL), 0);
	PT_REQUIRE(db);
	PT_CHECK_RC(put_many(db, "main", tag, 16, 16 << 10), 0);
	PT_CHECK_RC(verify_branch(db, "main"), 0);
	prolly_close(db);
	PT_CHECK(umount2(mnt, MNT_DETACH) == 0);
}

/* ---- 3. read-only ------------------------------------------------------------------------- */

/* A store on a file system remounted read-only: a read-only open reads (liblmdb reads without
 * its lock file there), an open for writing and a write are refused saying why, and after a
 * remount read-write the store takes writes. */
PT_TEST(read_only_mount_reads_and_refuses_writes)
{
	char mnt[PATH_MAX], dir[PATH_MAX + 16], v[64];
	prolly_db *db = NULL;

	fresh_dir(mnt, sizeof(mnt), "romount");
	if (mount_small(mnt, "4m"))
		return;
	snprintf(dir, sizeof(dir), "%s/s", mnt);
	make_store(dir);
	PT_REQUIRE(mount("tmpfs", mnt, "tmpfs", MS_REMOUNT | MS_RDONLY, "size=4m") == 0);
	PT_CHECK_RC(prolly_open_ex(&db, url_of(dir), NULL, PROLLY_OPEN_READONLY), 0);
	if (db) {
		PT_CHECK_RC(get(db, "main", "b", v, sizeof(v)), 0);
		PT_CHECK(strcmp(v, "2") == 0);
		PT_CHECK_RC(verify_branch(db, "dev"), 0);
		PT_CHECK_RC(put(db, "main", "x", "y"), PROLLY_EUNSUPPORTED);
		prolly_close(db);
		db = NULL;
	}
	int rc = prolly_open_ex(&db, url_of(dir), NULL, 0);
	if (rc == 0) {
		rc = put(db, "main", "x", "y");
		prolly_close(db);
		db = NULL;
	}
	PT_CHECK_RC(rc, PROLLY_ESTORE);
	PT_CHECKF(strstr(prolly_last_error(), "Read-only file system") != NULL &&
	              strstr(prolly_last_error(), "PROLLY_OPEN_READONLY") != NULL,
	          "%s", prolly_last_error());
	PT_CHECK_RC(prolly_open(&db, url_of(dir), NULL), rc);
	PT_REQUIRE(mount("tmpfs", mnt, "tmpfs", MS_REMOUNT, "size=4m") == 0);
	PT_CHECK_RC(prolly_open(&db, url_of(dir), NULL), 0);
	PT_CHECK_RC(put(db, "main", "x", "y"), 0);
	prolly_close(db);
	PT_CHECK(umount2(mnt, MNT_DETACH) == 0);
}

/* Binds dir read-only on ro (created). 0, or -1 with the case skipped. */
static int bind_read_only(const char *dir, const char *ro)
{
	if (mkdir(ro, 0755) != 0 || mount(dir, ro, NULL, MS_BIND, NULL) != 0) {
		PT_SKIP("cannot bind %.160s: %s (this test needs root)", dir, strerror(errno));
		return -1;
	}
	if (n_mounted < 8)
		snprintf(mounted[n_mounted++], PATH_MAX, "%s", ro);
	if (mount(NULL, ro, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0) {
		PT_SKIP("cannot make the bind of %.160s read-only: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* In a child: has the store open for writing (and writes once) until killed. */
static void open_child(const char *dir)
{
	prolly_db *db = NULL;
	if (prolly_open(&db, url_of(dir), NULL) || put(db, "main", "w", "1"))
		FAILC(2, "open for writing");
	if (write(sig_fd, "o", 1) != 1)
		_exit(2);
	for (;;)
		pause();
}

/* On a read-only file system liblmdb reads without its lock file: it takes no reader slot, so
 * a writer does not see the reader and may reuse the pages it reads. Through a read-only bind
 * mount of a store that a process has open (and may write to) through the writable path, a
 * read-only open must be refused, saying why; once no process has it open, it reads. */
PT_TEST(read_only_mount_of_a_store_in_use_is_refused)
{
	char dir[PATH_MAX], ro[PATH_MAX], v[16];
	prolly_db *rdb = NULL;

	fresh_dir(dir, sizeof(dir), "inuse");
	fresh_dir(ro, sizeof(ro), "inuse-ro");
	make_store(dir);
	if (bind_read_only(dir, ro))
		return;
	pid_t writer = start_child(open_child, dir);
	PT_REQUIRE(writer > 0);
	int rc = prolly_open_ex(&rdb, url_of(ro), NULL, PROLLY_OPEN_READONLY);
	PT_CHECKF(rc == PROLLY_ECONFLICT, "a lockless read-only open beside a writer: %d %s", rc,
	          prolly_last_error());
	PT_CHECKF(strstr(prolly_last_error(), "lock") != NULL, "%s", prolly_last_error());
	prolly_close(rdb);
	rdb = NULL;
	kill(writer, SIGKILL);
	waitpid(writer, NULL, 0);
	PT_CHECK_RC(prolly_open_ex(&rdb, url_of(ro), NULL, PROLLY_OPEN_READONLY), 0);
	PT_CHECK_RC(get(rdb, "main", "b", v, sizeof(v)), 0);
	prolly_close(rdb);
	PT_CHECK(umount2(ro, MNT_DETACH) == 0);
}

/* In a child, as uid 65534: a read-only open of the store (data.mdb 0444 and the directory
 * theirs; lock.mdb theirs to write) reads; an open for writing names data.mdb. */
static void ro_file_child(const char *dir)
{
	prolly_db *db = NULL;
	char v[16];
	if (setgid(65534) || setuid(65534))
		FAILC(2, "setuid");
	if (prolly_open_ex(&db, url_of(dir), NULL, PROLLY_OPEN_READONLY))
		FAILC(3, "read-only open");
	if (get(db, "main", "b", v, sizeof(v)) || strcmp(v, "2"))
		FAILC(3, "read");
	if (put(db, "main", "x", "y") != PROLLY_EUNSUPPORTED)
		FAILC(3, "write not refused");
	prolly_close(db);
	db = NULL;
	if (prolly_open_ex(&db, url_of(dir), NULL, 0) == 0 || !strstr(prolly_last_error(), "data.mdb"))
		FAILC(4, "open for writing of a read-only data.mdb");
	_exit(0);
}

PT_TEST(read_only_data_file_reads_for_another_user)
{
	/* Not under the scratch directory: $TMPDIR may be private to root (tests/run.sh makes it
	 * 0700), and uid 65534 must reach the store through every directory above it. */
	char base[] = "/tmp/prolly-test-rofile-XXXXXX", dir[PATH_MAX], path[PATH_MAX + 16];
	PT_REQUIRE(mkdtemp(base) != NULL);
	PT_REQUIRE(chmod(base, 0755) == 0);
	snprintf(dir, sizeof(dir), "%s/s", base);
	make_store(dir);
	static const char *const names[] = {"", "/data.mdb", "/lock.mdb"};
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s%s", dir, names[i]);
		PT_REQUIRE(chown(path, 65534, 65534) == 0);
	}
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	PT_REQUIRE(chmod(path, 0444) == 0);
	int st = in_child(ro_file_child, dir, 30);
	PT_CHECKF(st == 0, "child status %d", st);
	snprintf(path, sizeof(path), "rm -rf '%s'", base);
	if (system(path) != 0)
		printf("# could not remove %s\n", base);
}

/* ---- 4. a process killed while it holds the writer lock ------------------------------------ */

/* The gc's mark, called while the gc holds LMDB's write transaction: says so and waits to be
 * killed. */
static int mark_and_wait(void *payload)
{
	(void)payload;
	if (write(sig_fd, "w", 1) != 1)
		_exit(2);
	for (;;)
		pause();
	return 0;
}

static int keep_all(void *payload, const prolly_id *id)
{
	(void)payload;
	(void)id;
	return 1;
}

static void holder_child(const char *dir)
{
	prolly_store *st = NULL;
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	if (prolly_store_lmdb_open(&st, dir, 0))
		FAILC(2, "open");
	st->gc(st, mark_and_wait, keep_all, NULL, &res);
	_exit(2);
}

static void write_child(const char *dir)
{
	prolly_db *db = NULL;
	if (prolly_open(&db, url_of(dir), NULL) || put(db, "main", "fresh", "process"))
		FAILC(3, "write after the holder was killed");
	prolly_close(db);
	_exit(0);
}

typedef struct late_write {
	prolly_db *db;
	int rc;
	char msg[512];
} late_write;

static void *late_put(void *p)
{
	late_write *w = p;
	w->rc = put(w->db, "main", "same", "process");
	snprintf(w->msg, sizeof(w->msg), "%s", prolly_last_error());
	return NULL;
}

/* LMDB's writer lock is a robust mutex in lock.mdb: a process killed while it holds it (kill -9
 * in the middle of a commit or gc, the out-of-memory killer) must not leave every later writer
 * waiting for ever. A handle open before the kill and a process started after it both write,
 * within seconds. */
PT_TEST(writer_killed_holding_the_lock_blocks_nobody)
{
	char dir[PATH_MAX], v[64];
	prolly_db *db = NULL;

	fresh_dir(dir, sizeof(dir), "killed");
	make_store(dir);
	PT_REQUIRE(prolly_open(&db, url_of(dir), NULL) == 0);
	pid_t holder = start_child(holder_child, dir);
	PT_REQUIRE(holder > 0);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);

	late_write w = {db, -1, ""};
	pthread_t th;
	struct timespec until;
	PT_REQUIRE(pthread_create(&th, NULL, late_put, &w) == 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 20;
	int joined = pthread_timedjoin_np(th, NULL, &until) == 0;
	PT_CHECKF(joined, "a handle open before the kill still waits for the lock after 20 s");
	if (!joined)
		return; /* the thread stays blocked: leave db alone */
	PT_CHECKF(w.rc == 0, "write of a handle open before the kill: %d %s", w.rc, w.msg);
	int st = in_child(write_child, dir, 20);
	PT_CHECKF(st == 0, "a process started after the kill: status %d%s", st,
	          st == 124 ? " (still waiting after 20 s)" : "");
	PT_CHECK_RC(get(db, "main", "fresh", v, sizeof(v)), 0);
	PT_CHECK_RC(get(db, "main", "same", v, sizeof(v)), 0);
	PT_CHECK_RC(verify_branch(db, "main"), 0);
	prolly_close(db);
}

/* ---- 5. another LMDB format ---------------------------------------------------------------- */

/* Sets the data format version (offset 20 of each meta page: src/store/lmdb_meta.c) of dir's
 * data.mdb. 0 or -1. */
static int set_data_version(const char *dir, uint32_t version)
{
	char path[PATH_MAX + 16];
	uint32_t psize = 0;
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	int fd = open(path, O_RDWR), ok = fd >= 0 && pread(fd, &psize, 4, 40) == 4 && psize >= 512;
	for (int slot = 0; ok && slot < 2; slot++)
		ok = pwrite(fd, &version, 4, (off_t)slot * psize + 20) == 4;
	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/* A data.mdb of another LMDB data format (a newer liblmdb's) is refused as a version mismatch
 * with every open flag, not as damage, and changes no byte; the same file put back to format 1
 * opens with its data. */
PT_TEST(data_file_of_another_lmdb_format_is_a_version_mismatch)
{
	static const unsigned modes[] = {PROLLY_OPEN_READONLY, 0, PROLLY_OPEN_CREATE};
	char dir[PATH_MAX], data[PATH_MAX + 16], v[16];
	prolly_db *db = NULL;
	size_t n0 = 0, n1 = 0;

	fresh_dir(dir, sizeof(dir), "format");
	make_store(dir);
	PT_REQUIRE(set_data_version(dir, 2) == 0);
	snprintf(data, sizeof(data), "%s/data.mdb", dir);
	unsigned char *before = slurp(data, &n0);
	PT_REQUIRE(before != NULL);
	for (size_t i = 0; i < 3; i++) {
		PT_CHECK_RC(prolly_open_ex(&db, url_of(dir), NULL, modes[i]), PROLLY_EVERSION);
		PT_CHECKF(strstr(prolly_last_error(), "format 2") != NULL, "%s", prolly_last_error());
	}
	PT_CHECK_RC(prolly_lmdb_restore_previous(dir), PROLLY_EVERSION);
	unsigned char *after = slurp(data, &n1);
	PT_CHECK(after && n0 == n1 && memcmp(before, after, n0) == 0);
	free(before);
	free(after);
	PT_REQUIRE(set_data_version(dir, 1) == 0);
	PT_CHECK_RC(prolly_open_ex(&db, url_of(dir), NULL, 0), 0);
	PT_CHECK_RC(get(db, "main", "b", v, sizeof(v)), 0);
	prolly_close(db);
}

/* In a child: holds dir's environment open with liblmdb, as a process of another build would,
 * until killed. */
static void lock_child(const char *dir)
{
	MDB_env *env = NULL;
	if (mdb_env_create(&env) || mdb_env_set_maxdbs(env, 8) ||
	    mdb_env_open(env, dir, MDB_RDONLY | MDB_NOTLS, 0644))
		_exit(2);
	if (write(sig_fd, "r", 1) != 1)
		_exit(2);
	for (;;)
		pause();
}

/* lock.mdb in use by a process of another liblmdb build (another lock format) is refused as a
 * version mismatch naming the lock file; once that process is gone, the store opens. */
PT_TEST(lock_file_of_another_build_is_a_version_mismatch)
{
	char dir[PATH_MAX], lock[PATH_MAX + 16], v[16];
	prolly_db *db = NULL;
	uint32_t format;

	fresh_dir(dir, sizeof(dir), "lockformat");
	make_store(dir);
	pid_t other = start_child(lock_child, dir);
	PT_REQUIRE(other > 0);
	/* The lock format is the second u32 of lock.mdb (liblmdb's MDB_txninfo). */
	snprintf(lock, sizeof(lock), "%s/lock.mdb", dir);
	int fd = open(lock, O_RDWR);
	PT_REQUIRE(fd >= 0 && pread(fd, &format, 4, 4) == 4);
	format ^= 0x100;
	PT_REQUIRE(pwrite(fd, &format, 4, 4) == 4);
	static const unsigned modes[] = {PROLLY_OPEN_READONLY, 0};
	for (size_t i = 0; i < 2; i++) {
		PT_CHECK_RC(prolly_open_ex(&db, url_of(dir), NULL, modes[i]), PROLLY_EVERSION);
		PT_CHECKF(strstr(prolly_last_error(), "lock.mdb") != NULL &&
		              strstr(prolly_last_error(), "another liblmdb build") != NULL,
		          "%s", prolly_last_error());
	}
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	close(fd);
	PT_CHECK_RC(prolly_open_ex(&db, url_of(dir), NULL, 0), 0);
	PT_CHECK_RC(get(db, "main", "b", v, sizeof(v)), 0);
	PT_CHECK_RC(put(db, "main", "x", "y"), 0);
	prolly_close(db);
}

int main(int argc, char **argv)
{
	return lmdb_fixture_main(argc, argv, "lmdb-pressure");
}
