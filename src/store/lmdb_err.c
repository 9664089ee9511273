/*
 * lmdb_err.c - the LMDB store's failures as prolly codes and messages: liblmdb's and errno's codes
 * mapped to PROLLY_E codes (docs/stores.md, "LMDB store", Errors), and a message that names the
 * directory and says what to do. Its own file so that the store's operations (lmdb.c), its
 * environments (lmdb_env.c) and its opening (lmdb_open.c, lmdb_meta.c) all report the same way
 * without depending on one another.
 */
#include "lmdb_int.h"

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

int prolly__lmdb_translate(int mrc)
{
	switch (mrc) {
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
	case ENOSPC:
	case EFBIG:
#ifdef EDQUOT
	case EDQUOT:
#endif
		return PROLLY_EFULL;
	case ENOMEM: return PROLLY_ENOMEM;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID: return PROLLY_ECORRUPT;
	case MDB_VERSION_MISMATCH: return PROLLY_EVERSION;
	case MDB_NOTFOUND: return PROLLY_ENOTFOUND;
	default: return PROLLY_ESTORE;
	}
}

/* liblmdb 0.9 reports a short write (a full disk, or the file size limit) as EIO: 1 when the file
 * system of dir has less than FULL_BELOW bytes left for this process, or data.mdb has reached the
 * process's file size limit. */
#define FULL_BELOW ((uint64_t)4 << 20)
static int short_write_was_full(const char *dir) /* 1: the disk; 2: the file size limit */
{
	struct statvfs vs;
	struct rlimit rl;
	struct stat st;
	char path[4096];
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && stat(path, &st) == 0 &&
	    (uint64_t)st.st_size + 65536 >= (uint64_t)rl.rlim_cur)
		return 2;
	if (statvfs(dir, &vs) == 0) {
		uint64_t blocks = geteuid() == 0 ? vs.f_bfree : vs.f_bavail;
		if (blocks * (uint64_t)vs.f_frsize < FULL_BELOW)
			return 1;
	}
	return 0;
}

/* Sets the message for an LMDB (or errno) failure while doing `what`, returns the PROLLY_E code. */
int prolly__lmdb_fail(const env_entry *e, int mrc, const char *what)
{
	int code = prolly__lmdb_translate(mrc);
	const char *path = e ? e->path : "?";
	int full = mrc == EIO && e ? short_write_was_full(e->path) : 0;
	if (full == 1)
		return prolly_set_error(PROLLY_EFULL,
		                        "lmdb: %s in %s: No space left on device (liblmdb reports the "
		                        "short write as: %s); free disk space",
		                        what, path, mdb_strerror(mrc));
	if (full == 2)
		return prolly_set_error(PROLLY_EFULL,
		                        "lmdb: %s in %s: a short write (%s): the file size limit (ulimit "
		                        "-f) is reached; the store is full",
		                        what, path, mdb_strerror(mrc));
	if (mrc == EFBIG)
		return prolly_set_error(code,
		                        "lmdb: %s in %s: %s: the file size limit (ulimit -f) is reached; "
		                        "the store is full",
		                        what, path, mdb_strerror(mrc));
	if (mrc == MDB_MAP_FULL)
		return prolly_set_error(code,
		                        "lmdb: %s in %s: %s: the store is full and its map could not grow "
		                        "further; reopen it with a larger map_size or free space",
		                        what, path, mdb_strerror(mrc));
	if (mrc == MDB_TXN_FULL)
		return prolly_set_error(code,
		                        "lmdb: %s in %s: %s: one write is too large for an LMDB "
		                        "transaction; write fewer nodes at a time",
		                        what, path, mdb_strerror(mrc));
	if (code == PROLLY_EFULL)
		return prolly_set_error(code, "lmdb: %s in %s: %s: the store is full; free disk space",
		                        what, path, mdb_strerror(mrc));
	if (mrc == MDB_READERS_FULL)
		return prolly_set_error(code,
		                        "lmdb: %s in %s: %s: more than %d transactions are open at once",
		                        what, path, mdb_strerror(mrc), MAX_READERS);
	return prolly_set_error(code, "lmdb: %s in %s: %s", what, path, mdb_strerror(mrc));
}
