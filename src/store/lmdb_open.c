/*
 * lmdb_open.c - opening and closing the LMDB store (the store itself: lmdb.c; the registry of
 * environments it opens into: lmdb_env.c): the checks that run before liblmdb sees the file, the
 * creation of a new store, the previous snapshot and its restoration.
 */
#include "lmdb_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

/* ---- open and close --------------------------------------------------------------------------- */

/*
 * Opening never writes unless asked (PROLLY_OPEN_* flags, include/prolly.h):
 *   O1 without PROLLY_OPEN_CREATE nothing is created: a missing directory or data.mdb, or an
 *      environment that holds nothing, is PROLLY_ENOTFOUND (no store), before liblmdb is called
 *      (liblmdb would create data.mdb and lock.mdb);
 *   O2 both meta pages are checked first (lmdb_meta.c); a damaged newest one is PROLLY_ECORRUPT,
 *      never an empty store, and nothing is written (recovery is prolly_lmdb_restore_previous);
 *   O3 the named databases and meta rows are looked up in a read transaction; only a blank
 *      environment (no named database, an empty main database) with PROLLY_OPEN_CREATE gets
 *      them, in a write transaction. An environment that has some but not all, or lacks a meta
 *      row, is PROLLY_ECORRUPT naming what is missing;
 *   O4 files and directories that a failed PROLLY_OPEN_CREATE open created are removed again, so
 *      a full disk leaves nothing that would make the next init fail;
 *   O5 PROLLY_OPEN_CREATE opens of all processes are serialised by a flock on the directory
 *      (lock_dir), so that O4 and the restart of a blank environment never remove files another
 *      creating open has just made;
 *   O6 a read-only open on a read-only file system, which liblmdb makes without its lock file,
 *      is refused while another process has the store open (refuse_lockless_beside_others).
 */

static int make_dirs(const char *path)
{
	char *p = strdup(path);
	int rc = 0;
	if (!p)
		return prolly_set_error(PROLLY_ENOMEM, "lmdb: out of memory");
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != 0)
			continue;
		char c = *s;
		*s = 0;
		if (mkdir(p, 0755) != 0 && errno != EEXIST) {
			int err = errno;
			rc = prolly_set_error(err == ENOSPC ? PROLLY_EFULL : PROLLY_ESTORE,
			                      "lmdb: cannot create directory %s: %s", p, strerror(err));
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	free(p);
	return rc;
}

static const char *const DB_NAMES[3] = {"nodes", "refs", "meta"};

/* The node_size row of a version-3 store into e->node_size. */
static int read_node_size(env_entry *e, MDB_txn *txn)
{
	MDB_val k = {sizeof(META_NODE_SIZE) - 1, (void *)META_NODE_SIZE}, v;
	int mrc = mdb_get(txn, e->meta, &k, &v);
	if (mrc && mrc != MDB_NOTFOUND)
		return prolly__lmdb_fail(e, mrc, "reading the node size");
	uint32_t n = !mrc && v.mv_size == 4 ? prolly__rd32(v.mv_data) : 0;
	if (n == 0 || n == PROLLY_NODE_SIZE_DEFAULT || !prolly_node_size_valid(n))
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "lmdb: %s: a store of schema version %u needs a valid node_size "
		                        "row (%s)",
		                        e->path, SCHEMA_NODE_SIZE, mrc ? "there is none" : "it is not");
	e->node_size = n;
	return 0;
}

/* Checks the schema row and the epoch row (and reads the node_size row of version 3); with
 * create (a write transaction) writes them when absent, the schema at the version e->node_size
 * asks for (SCHEMA_NODE_SIZE and the node_size row for any size but the default). Without, an
 * absent epoch row sets *no_epoch when no_epoch is not NULL (a store made before the row existed;
 * only a creating open adds it), else is PROLLY_ECORRUPT. */
static int check_rows(env_entry *e, MDB_txn *txn, int create, int *no_epoch)
{
	MDB_val k = {sizeof(META_SCHEMA) - 1, (void *)META_SCHEMA}, v;
	int mrc = mdb_get(txn, e->meta, &k, &v);
	if (mrc == MDB_NOTFOUND && create) {
		unsigned char b[4], nb[4];
		e->schema = e->node_size ? SCHEMA_NODE_SIZE : SCHEMA_VERSION;
		prolly__wr32(b, e->schema);
		v.mv_size = 4;
		v.mv_data = b;
		if ((mrc = mdb_put(txn, e->meta, &k, &v, 0)))
			return prolly__lmdb_fail(e, mrc, "writing the schema version");
		MDB_val kn = {sizeof(META_NODE_SIZE) - 1, (void *)META_NODE_SIZE}, vn = {4, nb};
		prolly__wr32(nb, e->node_size);
		if (e->node_size && (mrc = mdb_put(txn, e->meta, &kn, &vn, 0)))
			return prolly__lmdb_fail(e, mrc, "writing the node size");
	} else if (mrc == MDB_NOTFOUND) {
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "lmdb: %s: the meta database has no schema_version row", e->path);
	} else if (mrc) {
		return prolly__lmdb_fail(e, mrc, "reading the schema version");
	} else if (v.mv_size != 4) {
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "lmdb: %s: the schema version row is malformed (%zu bytes)",
		                        e->path, v.mv_size);
	} else {
		uint32_t have = prolly__rd32(v.mv_data);
		int rc;
		if (have > SCHEMA_NODE_SIZE)
			return prolly_set_error(PROLLY_EVERSION,
			                        "lmdb: %s: the store has schema version %u, newer than the "
			                        "%u this library knows; upgrade prolly to open it",
			                        e->path, (unsigned)have, SCHEMA_NODE_SIZE);
		if (have < 1)
			return prolly_set_error(PROLLY_ECORRUPT, "lmdb: %s: invalid schema version %u", e->path,
			                        (unsigned)have);
		e->node_size = 0;
		if (have == SCHEMA_NODE_SIZE && (rc = read_node_size(e, txn)))
			return rc;
		e->schema = have < SCHEMA_VERSION ? SCHEMA_VERSION : have; /* LT1 */
	}
	k.mv_size = sizeof(META_EPOCH) - 1;
	k.mv_data = (void *)META_EPOCH;
	mrc = mdb_get(txn, e->meta, &k, &v);
	if (mrc == MDB_NOTFOUND && create) {
		if ((mrc = prolly__lmdb_put_epoch(txn, e, 1)))
			return prolly__lmdb_fail(e, mrc, "writing the gc epoch");
	} else if (mrc == MDB_NOTFOUND && no_epoch) {
		*no_epoch = 1;
	} else if (mrc == MDB_NOTFOUND) {
		return prolly_set_error(PROLLY_ECORRUPT, "lmdb: %s: the meta database has no gc_epoch row",
		                        e->path);
	} else if (mrc) {
		return prolly__lmdb_fail(e, mrc, "reading the gc epoch");
	} else if (v.mv_size != 8) {
		return prolly_set_error(PROLLY_ECORRUPT, "lmdb: %s: the gc epoch row is malformed",
		                        e->path);
	}
	return 0;
}

static int begin_raw(env_entry *e, unsigned flags, MDB_txn **txn)
{
	int mrc;
	for (int attempt = 0;; attempt++) {
		mrc = mdb_txn_begin(e->env, NULL, flags, txn);
		if (mrc != MDB_MAP_RESIZED || attempt >= 8)
			break;
		if ((mrc = mdb_env_set_mapsize(e->env, 0)))
			break;
	}
	if (mrc) {
		*txn = NULL;
		return prolly__lmdb_fail(e, mrc, "beginning the opening transaction");
	}
	return 0;
}

/* O3, the creating half: one write transaction (a blank environment and PROLLY_OPEN_CREATE). */
static int create_dbs(env_entry *e)
{
	MDB_txn *txn = NULL;
	MDB_dbi *dbi[3] = {&e->nodes, &e->refs, &e->meta};
	int mrc, rc;

	if ((rc = begin_raw(e, 0, &txn)))
		return rc;
	for (int i = 0; i < 3; i++)
		if ((mrc = mdb_dbi_open(txn, DB_NAMES[i], MDB_CREATE, dbi[i]))) {
			rc = prolly__lmdb_fail(e, mrc, "creating the databases");
			goto cleanup;
		}
	if ((rc = check_rows(e, txn, 1, NULL)))
		goto cleanup;
	if ((mrc = prolly__lmdb_stamp(txn, e))) {
		rc = prolly__lmdb_fail(e, mrc, "stamping the new store");
		goto cleanup;
	}
	mrc = mdb_txn_commit(txn);
	txn = NULL;
	if (mrc) {
		rc = prolly__lmdb_fail(e, mrc, "committing the new store");
		goto cleanup;
	}
	if ((mrc = mdb_env_sync(e->env, 1)))
		rc = prolly__lmdb_fail(e, mrc, "flushing the new store");
cleanup:
	if (txn)
		mdb_txn_abort(txn);
	return rc;
}

/* LT1: the tree this snapshot leads to was written by the snapshot's own transaction (or, in a
 * compacting copy, by any transaction). */
static int check_stamp(env_entry *e, MDB_txn *txn)
{
	MDB_val k = {sizeof(META_TXN) - 1, (void *)META_TXN}, v;
	int mrc = mdb_get(txn, e->meta, &k, &v);
	if (mrc == MDB_NOTFOUND)
		return 0;
	if (mrc)
		return prolly__lmdb_fail(e, mrc, "reading the transaction stamp");
	uint64_t stamp = v.mv_size == 8 ? prolly__rd64(v.mv_data) : 0, id = mdb_txn_id(txn);
	if (stamp < id)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "lmdb: %s: the newest meta page (transaction %llu) leads to a tree "
		                        "written by transaction %llu: the meta page is damaged; 'prolly "
		                        "recover' can restore the previous snapshot",
		                        e->path, (unsigned long long)id, (unsigned long long)stamp);
	/* A later stamp is the mark of a copy of a live store read from its start (cp, rsync, tar):
	 * the meta pages of one transaction over pages that later ones rewrote. Only a compacting
	 * mdb_copy, which renumbers the transaction to 1, stamps below its tree legitimately. But a
	 * read transaction's id can also be older than the snapshot it holds: liblmdb takes the id
	 * first and copies the meta page after, which writers may have rewritten meanwhile (a whole,
	 * newer snapshot under an older id). So only a stamp later than the newest meta page of the
	 * file, read now (every stamp seen was committed, so a live store's is never later), is a
	 * torn copy. */
	MDB_envinfo info;
	if (stamp > id && id != 1 &&
	    (mdb_env_info(e->env, &info) != 0 || stamp > (uint64_t)info.me_last_txnid))
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "lmdb: %s: the newest meta page (transaction %llu) leads to a tree "
		                        "written by the later transaction %llu: data.mdb was copied while "
		                        "a process wrote to it (cp, rsync and tar tear a live store; copy "
		                        "one with mdb_copy), or the meta page is damaged",
		                        e->path, (unsigned long long)id, (unsigned long long)stamp);
	return 0;
}

/* O3: opens the named databases and checks the meta rows in a read transaction. */
static int open_dbs(env_entry *e, unsigned flags)
{
	MDB_txn *txn = NULL;
	MDB_dbi *dbi[3] = {&e->nodes, &e->refs, &e->meta};
	int missing[3] = {0, 0, 0}, n_missing = 0, blank = 0, mrc, rc;

	if ((rc = begin_raw(e, MDB_RDONLY, &txn)))
		return rc;
	for (int i = 0; i < 3; i++) {
		mrc = mdb_dbi_open(txn, DB_NAMES[i], 0, dbi[i]);
		if (mrc == MDB_NOTFOUND) {
			missing[i] = 1;
			n_missing++;
		} else if (mrc) {
			rc = prolly__lmdb_fail(e, mrc, "opening the databases");
			goto cleanup;
		}
	}
	if (n_missing == 3) {
		MDB_stat ms;
		if ((mrc = mdb_stat(txn, 1 /* the main database */, &ms))) {
			rc = prolly__lmdb_fail(e, mrc, "reading the main database");
			goto cleanup;
		}
		blank = ms.ms_entries == 0 && ms.ms_depth == 0;
	}
	if (n_missing == 0) {
		int no_epoch = 0;
		if ((rc = check_rows(e, txn, 0, (flags & PROLLY_OPEN_CREATE) ? &no_epoch : NULL)))
			goto cleanup;
		if ((rc = check_stamp(e, txn)))
			goto cleanup;
		if (no_epoch) {
			/* A store made by an older library may lack the epoch row: the creating open adds
			 * it, as it always did. */
			mdb_txn_abort(txn);
			txn = NULL;
			return create_dbs(e);
		}
		mrc = mdb_txn_commit(txn); /* keeps the database handles */
		txn = NULL;
		if (mrc)
			rc = prolly__lmdb_fail(e, mrc, "ending the opening transaction");
		goto cleanup;
	}
	mdb_txn_abort(txn);
	txn = NULL;
	if (blank && (flags & PROLLY_OPEN_CREATE))
		return create_dbs(e);
	if (blank)
		return prolly_set_error(PROLLY_ENOTFOUND,
		                        "lmdb: no store at %s (an empty LMDB environment; create one with "
		                        "PROLLY_OPEN_CREATE or 'prolly init')",
		                        e->path);
	char names[64] = "";
	for (int i = 0, left = n_missing; i < 3; i++)
		if (missing[i])
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s'%s'",
			         !*names       ? ""
			         : --left == 1 ? " and "
			                       : ", ",
			         DB_NAMES[i]);
	return prolly_set_error(PROLLY_ECORRUPT,
	                        "lmdb: %s: the environment has no %s database%s (its newest meta "
	                        "page may be damaged: see 'prolly recover')",
	                        e->path, names, n_missing > 1 ? "s" : "");
cleanup:
	if (txn)
		mdb_txn_abort(txn);
	return rc;
}

/* Which meta slot recovery replaces: the damaged one when exactly one is, else the newest; -1
 * when neither is intact. */
static int slot_to_replace(const prolly__lmdb_meta m[2], int current)
{
	if (m[0].intact != m[1].intact)
		return m[0].intact ? 1 : 0;
	if (!m[0].intact)
		return -1;
	return current;
}

/* 1 when meta page m is the one liblmdb writes when it creates data.mdb: transaction 0, an
 * empty main database (no named database, so no store). */
static int meta_blank(const prolly__lmdb_meta *m)
{
	return m->txnid == 0 && m->main_entries == 0 && m->main_root == UINT64_MAX;
}

/* 1 when data.mdb (meta pages m, file size `size`) holds no committed transaction: what an
 * interrupted creation leaves (both meta pages of transaction 0 with an empty main database, or
 * a file too short to hold them). */
static int env_blank(const prolly__lmdb_meta m[2], off_t size)
{
	int any = 0;
	for (int i = 0; i < 2; i++) {
		if (!m[i].header_ok)
			continue;
		any = 1;
		if (!meta_blank(&m[i]))
			return 0;
	}
	unsigned psize = m[0].header_ok ? m[0].psize : m[1].header_ok ? m[1].psize : 4096;
	return any || size <= (off_t)2 * psize;
}

/* O1, O2: what is in the directory before liblmdb sees it. *blank is set when there is no
 * data.mdb, or one that holds nothing. */
static int check_before_open(const char *path, unsigned flags, int *blank)
{
	char file[4096];
	struct stat st;
	prolly__lmdb_meta m[2];
	int cur, rc;

	*blank = 0;
	snprintf(file, sizeof(file), "%s/data.mdb", path);
	if (stat(file, &st) != 0 || st.st_size == 0) {
		*blank = 1;
		goto blank;
	}
	rc = prolly__lmdb_meta_read(path, m, &cur);
	if (rc == PROLLY_EUNSUPPORTED)
		return 0; /* liblmdb's own checks only */
	if (rc)
		return rc;
	if (env_blank(m, st.st_size)) {
		*blank = 1;
		goto blank;
	}
	int bad = slot_to_replace(m, cur);
	if (cur >= 0 && m[cur].intact && m[!cur].header_ok)
		return 0; /* liblmdb opens the newest, intact snapshot; a commit rewrites the other */
	if (bad < 0)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "lmdb: %s: both meta pages are damaged (page 0: %s; page 1: %s); "
		                        "the store cannot be opened",
		                        path, m[0].problem, m[1].problem);
	if (meta_blank(&m[!bad]))
		return prolly_set_error(
		    PROLLY_ECORRUPT,
		    "lmdb: %s: meta page %d (transaction %llu) is damaged: %s; meta page "
		    "%d is the empty environment from before the store was made: "
		    "there is no snapshot to recover",
		    path, bad, (unsigned long long)m[bad].txnid, m[bad].problem, !bad);
	return prolly_set_error(PROLLY_ECORRUPT,
	                        "lmdb: %s: meta page %d (transaction %llu) is damaged: %s; meta page "
	                        "%d (transaction %llu) is intact: 'prolly recover' can make it current",
	                        path, bad, (unsigned long long)m[bad].txnid, m[bad].problem, !bad,
	                        (unsigned long long)m[!bad].txnid);
blank:
	if (flags & PROLLY_OPEN_CREATE)
		return 0;
	return prolly_set_error(PROLLY_ENOTFOUND,
	                        "lmdb: no store at %s (no data.mdb, or one that holds nothing; create "
	                        "one with PROLLY_OPEN_CREATE or 'prolly init')",
	                        path);
}

/* Removes data.mdb and lock.mdb of path when data.mdb holds nothing (env_blank) and no process
 * has the environment open: liblmdb holds a shared lock on byte 0 of lock.mdb while it does, so
 * holding it exclusively here proves otherwise (and two concurrent inits cannot delete each
 * other's store). Returns 1 when removed. The calling process must not have it open. */
static int remove_blank_env(const char *path)
{
	char data[4096], lock[4096];
	struct stat st;
	prolly__lmdb_meta m[2];
	int cur, lfd, removed = 0;

	snprintf(data, sizeof(data), "%s/data.mdb", path);
	snprintf(lock, sizeof(lock), "%s/lock.mdb", path);
	lfd = open(lock, O_RDWR | O_CLOEXEC);
	if (lfd >= 0) {
		struct flock fl;
		memset(&fl, 0, sizeof(fl));
		fl.l_type = F_WRLCK;
		fl.l_whence = SEEK_SET;
		fl.l_len = 1;
		if (fcntl(lfd, F_SETLK, &fl) != 0)
			goto cleanup;
	}
	if (stat(data, &st) == 0 && st.st_size > 0 &&
	    (prolly__lmdb_meta_read(path, m, &cur) || !env_blank(m, st.st_size)))
		goto cleanup;
	unlink(data);
	unlink(lock);
	removed = 1;
cleanup:
	if (lfd >= 0)
		close(lfd);
	return removed;
}

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *de;
		char p[4096];
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
				snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
				unlink(p);
			}
		closedir(d);
	}
	rmdir(dir);
}

static void entry_free(env_entry *e)
{
	if (!e)
		return;
	if (e->env)
		mdb_env_close(e->env);
	pthread_cond_destroy(&e->gate_cv);
	pthread_mutex_destroy(&e->gate_mu);
	pthread_cond_destroy(&e->join_cv);
	pthread_mutex_destroy(&e->join_mu);
	free(e->path);
	free(e);
}

/* A "Permission denied" from mdb_env_open names neither file: liblmdb opens lock.mdb for reading
 * and writing (creating it when absent; also for a read-only open) and data.mdb for reading, and
 * writing unless read-only. The usual cause is a command once run on the store as another user
 * (root), which left the files its own. Opens each file as liblmdb does (creating nothing) to
 * name the one refused, its owner and what to do; the error code stays liblmdb's. */
static int open_denied(const env_entry *e, int mrc, unsigned flags)
{
	static const char *const names[2] = {"lock.mdb", "data.mdb"};
	int modes[2] = {O_RDWR, (flags & PROLLY_OPEN_READONLY) ? O_RDONLY : O_RDWR};
	char file[4096];
	struct stat st;
	for (int i = 0; i < 2; i++) {
		snprintf(file, sizeof(file), "%s/%s", e->path, names[i]);
		int fd = open(file, modes[i] | O_CLOEXEC), err = errno;
		if (fd >= 0) {
			close(fd);
			continue;
		}
		if (err == ENOENT && i == 0 && stat(e->path, &st) == 0)
			return prolly_set_error(prolly__lmdb_translate(mrc),
			                        "lmdb: cannot create %s: %s (the directory belongs to uid %u, "
			                        "this process runs as uid %u): give the store back to its "
			                        "user (chown -R USER %s) or run as the directory's owner",
			                        file, mdb_strerror(mrc), (unsigned)st.st_uid,
			                        (unsigned)geteuid(), e->path);
		if ((err != EACCES && err != EPERM) || stat(file, &st) != 0)
			continue;
		return prolly_set_error(prolly__lmdb_translate(mrc),
		                        "lmdb: cannot open %s for %s: %s (it belongs to uid %u, this "
		                        "process runs as uid %u; a command run as another user leaves "
		                        "it so): give the store back to its user (chown -R USER %s) or "
		                        "run as the file's owner",
		                        file, modes[i] == O_RDWR ? "reading and writing" : "reading",
		                        strerror(err), (unsigned)st.st_uid, (unsigned)geteuid(), e->path);
	}
	return prolly__lmdb_fail(e, mrc, "opening the environment");
}

/* 1 when data.mdb of path has a meta page liblmdb takes (so that liblmdb's version mismatch is
 * about lock.mdb). */
static int data_format_ok(const char *path)
{
	prolly__lmdb_meta m[2];
	int cur;
	return prolly__lmdb_meta_read(path, m, &cur) == 0 && cur >= 0;
}

/* liblmdb refuses a lock.mdb in another lock format only while another process has it open (the
 * first opener lays it out afresh): a process of another liblmdb build (another version, or
 * another word size) uses the store now. */
static int lock_format_differs(const char *path, int mrc)
{
	int major = 0, minor = 0, patch = 0;
	mdb_version(&major, &minor, &patch);
	return prolly_set_error(prolly__lmdb_translate(mrc),
	                        "lmdb: %s/lock.mdb: %s: a process of another liblmdb build (its lock "
	                        "format differs from this liblmdb %d.%d.%d's) has the store open; "
	                        "every process must use the same liblmdb: stop the other one, or run "
	                        "this with its liblmdb",
	                        path, mdb_strerror(mrc), major, minor, patch);
}

/* O6: on a read-only file system liblmdb opens MDB_RDONLY without its lock file (LMDB's
 * documentation: it does not use locks there). The reader then has no slot in the reader table,
 * so a process writing to the same file through another, writable mount (a read-only bind mount
 * of a live store) does not see it and may reuse the pages it reads. Every process that has the
 * environment open holds a shared fcntl lock on byte 0 of lock.mdb, which a read-only
 * descriptor can test: such a store is refused while one does. (A writer that opens it later is
 * not seen: this is a check at open.) */
static int refuse_lockless_beside_others(const char *path)
{
	struct statvfs vs;
	char lock[4096];
	if (statvfs(path, &vs) != 0 || !(vs.f_flag & ST_RDONLY))
		return 0;
	snprintf(lock, sizeof(lock), "%s/lock.mdb", path);
	int fd = open(lock, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* no lock file: nobody has the store open through a writable path */
	struct flock fl;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_len = 1;
	int held = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
	close(fd);
	if (!held)
		return 0;
	return prolly_set_error(PROLLY_ECONFLICT,
	                        "lmdb: %s is on a read-only file system and process %ld has the store "
	                        "open (through another mount, where it may write): liblmdb reads a "
	                        "read-only file system without its lock file, so that process would "
	                        "not see this reader and could reuse the pages it reads; read the "
	                        "store through a writable path, or once no process has it open",
	                        path, (long)fl.l_pid);
}

/* O5: the creating opens of every process take an exclusive flock on the directory, held from
 * the checks before liblmdb sees the files to the commit of the new databases, so that one never
 * removes a blank environment (remove_blank_env) that another is making: the other would then
 * run on a lock file nobody else sees. Returns the descriptor to close (releasing the lock), or
 * -1 when the directory cannot be opened for it (liblmdb then reports what is wrong). */
static int lock_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX) != 0)
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	return fd;
}

static int entry_open(env_entry **out, const char *path, size_t map_size, const struct stat *sb,
                      unsigned flags, unsigned node_size)
{
	env_entry *e = NULL;
	size_t size = map_size ? map_size : DEFAULT_MAP;
	int rc = 0, mrc, blank = 0, dir_lock = -1;
	unsigned env_flags = MDB_NOTLS | MDB_NOMETASYNC;

	if (flags & PROLLY_OPEN_CREATE)
		dir_lock = lock_dir(path);
	if ((rc = check_before_open(path, flags, &blank)))
		goto cleanup;
	if ((flags & PROLLY_OPEN_READONLY) && (rc = refuse_lockless_beside_others(path)))
		goto cleanup;
	if (flags & PROLLY_OPEN_READONLY)
		env_flags |= MDB_RDONLY;
	e = calloc(1, sizeof(*e));
	if (!e) {
		rc = prolly_set_error(PROLLY_ENOMEM, "lmdb: out of memory");
		goto cleanup;
	}
	pthread_mutex_init(&e->gate_mu, NULL);
	pthread_cond_init(&e->gate_cv, NULL);
	pthread_mutex_init(&e->join_mu, NULL);
	pthread_cond_init(&e->join_cv, NULL);
	e->pid = getpid();
	e->dev = sb->st_dev;
	e->ino = sb->st_ino;
	e->handles = 1;
	e->rdonly = (flags & PROLLY_OPEN_READONLY) != 0;
	if (!(e->path = strdup(path))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "lmdb: out of memory");
		goto cleanup;
	}
	if (blank) /* an interrupted creation (a full disk) left this: nothing to lose, start over */
		remove_blank_env(path);
	for (;;) {
		if ((mrc = mdb_env_create(&e->env))) {
			e->env = NULL;
			rc = prolly__lmdb_fail(e, mrc, "creating the environment");
			goto cleanup;
		}
		if ((mrc = mdb_env_set_maxreaders(e->env, MAX_READERS)) ||
		    (mrc = mdb_env_set_maxdbs(e->env, 4)) || (mrc = mdb_env_set_mapsize(e->env, size))) {
			rc = prolly__lmdb_fail(e, mrc, "configuring the environment");
			goto cleanup;
		}
		mrc = mdb_env_open(e->env, path, env_flags, 0644);
		if (mrc == 0)
			break;
		mdb_env_close(e->env);
		e->env = NULL;
		/* The default map may exceed the address space allowed here (ulimit -v): shrink it. */
		if (mrc == ENOMEM && !map_size && size / 2 >= MIN_DEFAULT_MAP) {
			size /= 2;
			continue;
		}
		if (mrc == MDB_VERSION_MISMATCH && data_format_ok(path))
			rc = lock_format_differs(path, mrc);
		else if (mrc == MDB_VERSION_MISMATCH || mrc == MDB_INVALID)
			rc = prolly_set_error(prolly__lmdb_translate(mrc),
			                      "lmdb: %s is not an LMDB environment this liblmdb can open: %s",
			                      path, mdb_strerror(mrc));
		else if (mrc == EACCES || mrc == EPERM)
			rc = open_denied(e, mrc, flags);
		else if (mrc == EROFS)
			rc = prolly_set_error(PROLLY_ESTORE,
			                      "lmdb: cannot open %s for writing: %s: open it read-only "
			                      "(PROLLY_OPEN_READONLY; the CLI's read commands do), or remount "
			                      "the file system read-write to write",
			                      path, mdb_strerror(mrc));
		else
			rc = prolly__lmdb_fail(e, mrc, "opening the environment");
		goto cleanup;
	}
	int dead = 0;
	mdb_reader_check(e->env, &dead); /* clear reader slots left by dead processes */
	e->node_size = prolly__node_size_member(node_size); /* what a create makes */
	if ((rc = open_dbs(e, flags)))
		goto cleanup;
	MDB_envinfo info;
	e->map_size = mdb_env_info(e->env, &info) == 0 ? info.me_mapsize : size;
	*out = e;
	e = NULL;

cleanup:
	entry_free(e);
	if (rc && blank)
		remove_blank_env(path); /* O4: undo what this open created (liblmdb makes both files) */
	if (dir_lock >= 0)
		close(dir_lock);
	return rc;
}

static void lmdb_close(prolly_store *st)
{
	lmdb_store *s = (lmdb_store *)st;
	if (!s)
		return;
	env_entry *e = prolly__lmdb_registry_release(s->e);
	/* An environment inherited through fork() belongs to the parent: closing it here would
	 * release the parent's reader slots. Leave it alone. */
	if (e && e->pid == getpid())
		entry_free(e);
	free(s);
}

/* Opens the environment in path (a directory that exists) into a new handle; a store it creates
 * has nodes of node_size (prolly_node_size_valid; open_sized checks an existing one's). */
static int open_dir(prolly_store **out, const char *path, size_t map_size, unsigned flags,
                    unsigned node_size)
{
	lmdb_store *s = NULL;
	env_entry *e = NULL;
	struct stat sb;
	int rc = 0, locked = 0;

	if (stat(path, &sb) != 0) {
		int err = errno;
		if (err == ENOENT)
			rc = prolly_set_error(PROLLY_ENOTFOUND, "lmdb: no store at %s (no such directory)",
			                      path);
		else
			rc = prolly_set_error(PROLLY_ESTORE, "lmdb: cannot stat %s: %s", path, strerror(err));
		goto cleanup;
	}
	if (!S_ISDIR(sb.st_mode)) {
		rc = prolly_set_error(PROLLY_EINVAL, "lmdb: %s is not a directory", path);
		goto cleanup;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		rc = prolly_set_error(PROLLY_ENOMEM, "lmdb: out of memory");
		goto cleanup;
	}

	prolly__lmdb_registry_lock();
	locked = 1;
	e = prolly__lmdb_registry_find(&sb);
	if (e && e->rdonly && !(flags & PROLLY_OPEN_READONLY)) {
		rc = prolly_set_error(PROLLY_EINVAL,
		                      "lmdb: %s is already open read-only in this process; close those "
		                      "handles before opening it for writing",
		                      path);
		goto cleanup;
	}
	if (e) {
		e->handles++;
	} else {
		if ((rc = entry_open(&e, path, map_size, &sb, flags, node_size)))
			goto cleanup;
		prolly__lmdb_registry_add(e);
	}
	s->e = e;
	s->readonly = (flags & PROLLY_OPEN_READONLY) != 0;
	s->base.version = PROLLY_STORE_VERSION;
	s->base.kind = "lmdb";
	s->base.flags = PROLLY_STORE_MAPPED; /* nodes are read from LMDB's file mapping */
	s->base.node_size = e->node_size;
	prolly__lmdb_set_vtable(&s->base);
	s->base.close = lmdb_close;
	*out = &s->base;
	s = NULL;

cleanup:
	if (locked)
		prolly__lmdb_registry_unlock();
	free(s);
	return rc;
}

/* open_dir, and the store's node size checked against node_size (0: any): *out is set only when
 * both pass. */
static int open_sized(prolly_store **out, const char *path, size_t map_size, unsigned flags,
                      unsigned node_size)
{
	prolly_store *st = NULL;
	int rc = open_dir(&st, path, map_size, flags, node_size);
	unsigned have = prolly__node_size_of(st ? st->node_size : 0);
	if (!rc && node_size && node_size != have) {
		lmdb_close(st);
		return prolly_set_error(PROLLY_EINVAL,
		                        "lmdb: %s holds a store of %u-byte nodes; %u was asked for (a "
		                        "store's node size is chosen when it is made)",
		                        path, have, node_size);
	}
	if (!rc)
		*out = st;
	return rc;
}

/* PROLLY_OPEN_PREVIOUS: a copy of data.mdb whose meta pages both name the snapshot recovery
 * would restore, opened read-only; the copy lives as long as the handle. */
static int open_previous(prolly_store **out, const char *path, size_t map_size, unsigned flags)
{
	prolly__lmdb_meta m[2];
	char *tmp = NULL;
	int cur, bad, rc;

	if ((rc = prolly__lmdb_meta_read(path, m, &cur)))
		return rc == PROLLY_ENOTFOUND
		           ? prolly_set_error(PROLLY_ENOTFOUND, "lmdb: no store at %s (no data.mdb)", path)
		           : rc;
	if ((bad = slot_to_replace(m, cur)) < 0)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "lmdb: %s: both meta pages are damaged (page 0: %s; page 1: %s)",
		                        path, m[0].problem, m[1].problem);
	if (!(tmp = malloc(strlen(path) + sizeof("/.prolly-previous.XXXXXX"))))
		return prolly_set_error(PROLLY_ENOMEM, "lmdb: out of memory");
	sprintf(tmp, "%s/.prolly-previous.XXXXXX", path);
	if (!mkdtemp(tmp)) {
		int err = errno;
		free(tmp);
		return prolly_set_error(err == ENOSPC ? PROLLY_EFULL : PROLLY_ESTORE,
		                        "lmdb: cannot make a directory in %s for the previous snapshot: %s",
		                        path, strerror(err));
	}
	if ((rc = prolly__lmdb_meta_copy_previous(path, tmp, bad))) {
		remove_tree(tmp);
		free(tmp);
		return rc;
	}
	/* Once open, the handle holds the copy's files: unlink them now, so that nothing is left
	 * behind whatever happens to this process. */
	int rc2 = open_dir(out, tmp, map_size, flags & ~PROLLY_OPEN_PREVIOUS, 0);
	if (rc2 == PROLLY_ENOTFOUND) /* not the copy's name, which is gone: what the snapshot is */
		prolly_set_error(rc2,
		                 "lmdb: the previous snapshot of %s (transaction %llu) holds no store: "
		                 "it is the environment from before the store was made",
		                 path, (unsigned long long)m[!bad].txnid);
	if (!rc2) {
		/* The directory's inode may be reused by another: never match it again. */
		prolly__lmdb_registry_unlist(((lmdb_store *)*out)->e);
	}
	remove_tree(tmp);
	free(tmp);
	return rc2;
}

int prolly_store_lmdb_open_ex(prolly_store **out, const char *path, size_t map_size, unsigned flags)
{
	return prolly__lmdb_open(out, path, map_size, flags, 0);
}

int prolly__lmdb_open(prolly_store **out, const char *path, size_t map_size, unsigned flags,
                      unsigned node_size)
{
	int rc;
	if (!out || !path || !*path)
		return prolly_set_error(PROLLY_EINVAL, "lmdb: open needs an output pointer and a path");
	if (flags & ~(PROLLY_OPEN_READONLY | PROLLY_OPEN_CREATE | PROLLY_OPEN_PREVIOUS))
		return prolly_set_error(PROLLY_EINVAL, "lmdb: unknown open flags 0x%x", flags);
	if ((flags & PROLLY_OPEN_READONLY) && (flags & PROLLY_OPEN_CREATE))
		return prolly_set_error(PROLLY_EINVAL,
		                        "lmdb: PROLLY_OPEN_READONLY and PROLLY_OPEN_CREATE exclude each "
		                        "other");
	if ((flags & PROLLY_OPEN_PREVIOUS) && !(flags & PROLLY_OPEN_READONLY))
		return prolly_set_error(PROLLY_EINVAL,
		                        "lmdb: PROLLY_OPEN_PREVIOUS needs PROLLY_OPEN_READONLY");
	if (flags & PROLLY_OPEN_PREVIOUS)
		return open_previous(out, path, map_size, flags);
	if (flags & PROLLY_OPEN_CREATE) {
		struct stat sb;
		int existed = stat(path, &sb) == 0;
		if ((rc = make_dirs(path)))
			return rc;
		rc = open_sized(out, path, map_size, flags, node_size);
		if (rc && !existed)
			rmdir(path); /* O4 (only the last component: it is empty unless someone raced) */
		return rc;
	}
	return open_sized(out, path, map_size, flags, node_size);
}

int prolly_store_lmdb_open(prolly_store **out, const char *path, size_t map_size)
{
	return prolly_store_lmdb_open_ex(out, path, map_size, PROLLY_OPEN_CREATE);
}

/* The one version check of prolly_lmdb_snapshot (see src/abi.c for the convention). */
static int snapshot_version(unsigned version)
{
	if (version == PROLLY_LMDB_SNAPSHOT_VERSION)
		return 0;
	return prolly_set_error(PROLLY_EINVAL,
	                        "prolly_lmdb_snapshot.version is %u, which this library (prolly %s) "
	                        "does not know (it knows 1 to %u): initialise the struct with "
	                        "PROLLY_LMDB_SNAPSHOT_INIT or prolly_lmdb_snapshot_init()",
	                        version, PROLLY_VERSION_STRING, PROLLY_LMDB_SNAPSHOT_VERSION);
}

int prolly_lmdb_snapshot_init(prolly_lmdb_snapshot *snap, unsigned version)
{
	int rc;
	if (!snap)
		return prolly_set_error(PROLLY_EINVAL, "prolly_lmdb_snapshot_init: NULL argument");
	if ((rc = snapshot_version(version)))
		return rc;
	memset(snap, 0, sizeof(*snap));
	snap->version = version;
	return 0;
}

int prolly_lmdb_snapshots(prolly_lmdb_snapshot out[2], const char *path)
{
	prolly__lmdb_meta m[2];
	int cur, rc;
	if (!out || !path)
		return prolly_set_error(PROLLY_EINVAL, "lmdb: snapshots needs an output and a path");
	if ((rc = snapshot_version(out[0].version)) || (rc = snapshot_version(out[1].version)))
		return rc;
	if ((rc = prolly__lmdb_meta_read(path, m, &cur)))
		return rc == PROLLY_ENOTFOUND
		           ? prolly_set_error(PROLLY_ENOTFOUND, "lmdb: no store at %s (no data.mdb)", path)
		           : rc;
	int bad = slot_to_replace(m, cur);
	for (int i = 0; i < 2; i++) {
		memset(&out[i], 0, sizeof(out[i])); /* version 1 is the whole struct */
		out[i].version = PROLLY_LMDB_SNAPSHOT_VERSION;
		out[i].txnid = m[i].txnid;
		out[i].current = i == cur;
		out[i].intact = m[i].intact;
		out[i].restorable = bad >= 0 && i == !bad && !meta_blank(&m[i]);
		snprintf(out[i].problem, sizeof(out[i].problem), "%s", m[i].problem);
	}
	return 0;
}

int prolly_lmdb_restore_previous(const char *path)
{
	prolly__lmdb_meta m[2];
	struct stat sb;
	int cur, bad, rc;

	if (!path)
		return prolly_set_error(PROLLY_EINVAL, "lmdb: restore needs a path");
	if (stat(path, &sb) != 0)
		return prolly_set_error(PROLLY_ENOTFOUND, "lmdb: no store at %s", path);
	prolly__lmdb_registry_lock();
	if (prolly__lmdb_registry_find(&sb)) {
		prolly__lmdb_registry_unlock();
		return prolly_set_error(
		    PROLLY_ECONFLICT, "lmdb: %s is open in this process; close it before restoring", path);
	}
	/* Held meanwhile so that no handle of this process opens it (its locks are per process). */
	if ((rc = prolly__lmdb_meta_read(path, m, &cur)))
		goto cleanup;
	if ((bad = slot_to_replace(m, cur)) < 0) {
		rc = prolly_set_error(PROLLY_ECORRUPT,
		                      "lmdb: %s: both meta pages are damaged (page 0: %s; page 1: %s)",
		                      path, m[0].problem, m[1].problem);
		goto cleanup;
	}
	if (meta_blank(&m[!bad])) {
		/* A store of one transaction (just made): the other page is liblmdb's empty
		 * environment, and making it current would leave no store at all. */
		rc = prolly_set_error(PROLLY_ENOTFOUND,
		                      "lmdb: %s: the previous snapshot (meta page %d, transaction %llu) "
		                      "holds no store: it is the environment from before the store was "
		                      "made; nothing restored",
		                      path, !bad, (unsigned long long)m[!bad].txnid);
		goto cleanup;
	}
	rc = prolly__lmdb_meta_restore(path, bad);
cleanup:
	prolly__lmdb_registry_unlock();
	return rc;
}
