/*
 * lmdb_meta.c - LMDB's two meta pages: read and checked before every open of an LMDB store, and
 * used by recovery to reach the previous snapshot.
 *
 * LMDB keeps no checksums. Pages 0 and 1 of data.mdb are meta pages; transaction N writes page
 * N % 2, so the other one names the snapshot before it, whose pages LMDB does not reuse until a
 * later commit overwrites that meta page too. liblmdb opens the meta page with the larger
 * transaction id and trusts it: a damaged root number there makes every named database look
 * absent. liblmdb 0.9.24 (Debian 12) has no MDB_PREVSNAPSHOT, so this file reads the pages
 * itself. The layout below is liblmdb 0.9's data version 1 on a 64-bit platform (pgno_t, size_t
 * and txnid_t of 8 bytes), in the platform's byte order; elsewhere the functions refuse with
 * PROLLY_EUNSUPPORTED.
 *
 *   page header (16 bytes, every page)   meta (page offset 16)
 *     0  u64 page number                   16  u32 magic 0xBEEFC0DE    20  u32 version (1)
 *     8  u16 pad                           24  u64 fixed address       32  u64 map size
 *    10  u16 flags: 1 branch, 2 leaf,      40  free-page database (48 bytes, below)
 *        4 overflow, 8 meta                88  main database (48 bytes, below)
 *    12  u16 lower, 14 u16 upper          136  u64 last page in use   144  u64 transaction id
 *
 *   database record (48 bytes, offset d):  d+0 u32 pad (the page size, in the free database's
 *     record), d+4 u16 flags, d+6 u16 depth, d+8 u64 branch pages, d+16 leaf pages,
 *     d+24 overflow pages, d+32 entries, d+40 u64 root page (all ones: empty)
 *
 * Checks (a meta page is intact when all hold): LM1 the page reads whole; LM2 its flags have the
 * meta bit and its page number is its slot; LM3 magic and version are LMDB's; LM4 the page size is
 * a power of two from 512 to 65536, the same in both pages; LM5 each root is empty (all ones,
 * depth 0) or at most the last page, with a depth of 1 to 32; LM6 each root page's own header
 * names that page number and says branch or leaf. LM2 and LM3 are what liblmdb itself checks.
 * LM7: when neither page passes LM2-LM3 and one has LMDB's magic with another format version,
 * the file is another liblmdb's, not damaged: PROLLY_EVERSION.
 */
#include "lmdb_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define P_BRANCH 0x01
#define P_LEAF 0x02
#define P_META 0x08
#define LMDB_MAGIC 0xBEEFC0DEu
#define LMDB_DATA_VERSION 1u
#define HDR 16
#define OFF_MAGIC 16
#define OFF_VERSION 20
#define OFF_FREE_DB 40
#define OFF_MAIN_DB 88
#define OFF_LAST_PG 136
#define OFF_TXNID 144
#define META_END 152
#define DB_PAD 0
#define DB_DEPTH 6
#define DB_ENTRIES 32
#define DB_ROOT 40
#define NO_PAGE UINT64_MAX
#define MAX_DEPTH 32

#if SIZE_MAX > 0xffffffffu
#define LAYOUT_KNOWN 1
#else
#define LAYOUT_KNOWN 0
#endif

static uint16_t n16(const unsigned char *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}
static uint32_t n32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}
static uint64_t n64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static char *data_path(const char *dir)
{
	size_t n = strlen(dir) + sizeof("/data.mdb");
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/data.mdb", dir);
	return p;
}

/* Reads n bytes at off; 1 when all of them were read. */
static int read_at(int fd, void *buf, size_t n, off_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 0;
		got += (size_t)r;
	}
	return 1;
}

static int power_of_two_psize(uint32_t ps)
{
	return ps >= 512 && ps <= 65536 && (ps & (ps - 1)) == 0;
}

/* LM5 and LM6 for the database record at page offset off; 0 or sets m->problem. */
static int check_root(prolly__lmdb_meta *m, int fd, const unsigned char *pg, size_t off,
                      const char *what)
{
	uint64_t root = n64(pg + off + DB_ROOT);
	unsigned depth = n16(pg + off + DB_DEPTH);
	unsigned char h[HDR];
	if (root == NO_PAGE) {
		if (depth == 0)
			return 0;
		snprintf(m->problem, sizeof(m->problem), "the %s database is empty but has depth %u", what,
		         depth);
		return -1;
	}
	if (root < 2 || root > m->last_pg || depth < 1 || depth > MAX_DEPTH) {
		snprintf(m->problem, sizeof(m->problem),
		         "the %s database's root page %llu (depth %u) is outside pages 2..%llu", what,
		         (unsigned long long)root, depth, (unsigned long long)m->last_pg);
		return -1;
	}
	if (!read_at(fd, h, HDR, (off_t)(root * m->psize)) || n64(h) != root ||
	    !(n16(h + 10) & (P_BRANCH | P_LEAF))) {
		snprintf(m->problem, sizeof(m->problem),
		         "the %s database's root page %llu is not a tree page of that number", what,
		         (unsigned long long)root);
		return -1;
	}
	return 0;
}

static void check_meta(prolly__lmdb_meta *m, int fd, int slot, unsigned psize)
{
	unsigned char *pg = malloc(psize);
	memset(m, 0, sizeof(*m));
	if (!pg) {
		snprintf(m->problem, sizeof(m->problem), "out of memory");
		return;
	}
	if (!read_at(fd, pg, psize, (off_t)slot * psize)) {
		snprintf(m->problem, sizeof(m->problem), "the file ends before meta page %d", slot);
		goto cleanup;
	}
	m->readable = 1;
	if (!(n16(pg + 10) & P_META) || n64(pg) != (uint64_t)slot) {
		snprintf(m->problem, sizeof(m->problem), "page %d is not marked as a meta page", slot);
		goto cleanup;
	}
	if (n32(pg + OFF_MAGIC) == LMDB_MAGIC)
		m->version = n32(pg + OFF_VERSION);
	if (n32(pg + OFF_MAGIC) != LMDB_MAGIC || m->version != LMDB_DATA_VERSION) {
		snprintf(m->problem, sizeof(m->problem), "meta page %d has a wrong magic or version", slot);
		goto cleanup;
	}
	m->header_ok = 1;
	m->psize = n32(pg + OFF_FREE_DB + DB_PAD);
	m->txnid = n64(pg + OFF_TXNID);
	m->last_pg = n64(pg + OFF_LAST_PG);
	m->main_root = n64(pg + OFF_MAIN_DB + DB_ROOT);
	m->main_entries = n64(pg + OFF_MAIN_DB + DB_ENTRIES);
	if (m->psize != psize) {
		snprintf(m->problem, sizeof(m->problem), "its page size %u differs from %u", m->psize,
		         psize);
		goto cleanup;
	}
	m->psize = psize;
	if (check_root(m, fd, pg, OFF_MAIN_DB, "main") || check_root(m, fd, pg, OFF_FREE_DB, "free"))
		goto cleanup;
	m->intact = 1;
cleanup:
	free(pg);
}

int prolly__lmdb_meta_read(const char *dir, prolly__lmdb_meta m[2], int *current)
{
	char *path = data_path(dir);
	unsigned char first[HDR + META_END];
	struct stat st;
	int fd = -1, rc = 0;

	if (!LAYOUT_KNOWN)
		return prolly_set_error(PROLLY_EUNSUPPORTED,
		                        "lmdb: reading meta pages needs a 64-bit platform");
	if (!path)
		return prolly_set_error(PROLLY_ENOMEM, "lmdb: out of memory");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		int err = errno;
		rc = err == ENOENT
		         ? prolly_set_error(PROLLY_ENOTFOUND, "lmdb: %s: no data.mdb", dir)
		         : prolly_set_error(PROLLY_ESTORE, "lmdb: cannot read %s: %s", path, strerror(err));
		goto cleanup;
	}
	if (st.st_size == 0) {
		rc = prolly_set_error(PROLLY_ENOTFOUND, "lmdb: %s: data.mdb is empty", dir);
		goto cleanup;
	}
	/* The page size is in meta page 0; when that page is unreadable, assume the system's (the
	 * size liblmdb creates environments with). */
	long sys = sysconf(_SC_PAGESIZE);
	unsigned psize = sys > 0 ? (unsigned)sys : 4096;
	if (read_at(fd, first, sizeof(first), 0) && n32(first + OFF_MAGIC) == LMDB_MAGIC &&
	    power_of_two_psize(n32(first + OFF_FREE_DB + DB_PAD)))
		psize = n32(first + OFF_FREE_DB + DB_PAD);
	check_meta(&m[0], fd, 0, psize);
	check_meta(&m[1], fd, 1, psize);
	*current = -1;
	for (int i = 0; i < 2; i++)
		if (m[i].header_ok && (*current < 0 || m[i].txnid > m[*current].txnid))
			*current = i;
	/* LM7: no page liblmdb would take, and one in LMDB's format of another version: a file of
	 * another liblmdb (a newer one's format), which is not damage and recovery must not touch. */
	for (int i = 0; *current < 0 && i < 2; i++)
		if (m[i].version != 0 && m[i].version != LMDB_DATA_VERSION) {
			int major = 0, minor = 0, patch = 0;
			mdb_version(&major, &minor, &patch);
			rc = prolly_set_error(PROLLY_EVERSION,
			                      "lmdb: %s: data.mdb is in LMDB data format %u, and this "
			                      "liblmdb (%d.%d.%d) reads format %u: open the store with the "
			                      "liblmdb that wrote it (mdb_dump there and mdb_load here move "
			                      "its data)",
			                      dir, (unsigned)m[i].version, major, minor, patch,
			                      LMDB_DATA_VERSION);
			break;
		}

cleanup:
	if (fd >= 0)
		close(fd);
	free(path);
	return rc;
}

/* Reads the whole meta page of slot `good` and writes it over slot `bad` of fd (page number
 * fixed). fsyncs. */
static int copy_meta_page(int src, int dst, int good, int bad, unsigned psize, const char *path)
{
	unsigned char *pg = malloc(psize);
	int rc = 0;
	if (!pg)
		return prolly_set_error(PROLLY_ENOMEM, "lmdb: out of memory");
	if (!read_at(src, pg, psize, (off_t)good * psize)) {
		rc = prolly_set_error(PROLLY_ESTORE, "lmdb: cannot read meta page %d of %s", good, path);
		goto cleanup;
	}
	uint64_t pgno = (uint64_t)bad;
	memcpy(pg, &pgno, 8);
	if (pwrite(dst, pg, psize, (off_t)bad * psize) != (ssize_t)psize || fsync(dst) != 0) {
		int err = errno;
		rc = prolly_set_error(err == ENOSPC || err == EFBIG ? PROLLY_EFULL : PROLLY_ESTORE,
		                      "lmdb: cannot write meta page %d of %s: %s", bad, path,
		                      strerror(err));
	}
cleanup:
	free(pg);
	return rc;
}

static int good_slot(const char *dir, int bad, unsigned *psize)
{
	prolly__lmdb_meta m[2];
	int cur, rc;
	if (bad != 0 && bad != 1)
		return prolly_set_error(PROLLY_EINVAL, "lmdb: meta slot %d is not 0 or 1", bad);
	if ((rc = prolly__lmdb_meta_read(dir, m, &cur)))
		return rc;
	if (!m[!bad].intact)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "lmdb: %s: meta page %d is not intact either (%s); nothing to "
		                        "restore",
		                        dir, !bad, m[!bad].problem);
	*psize = m[!bad].psize;
	return 0;
}

int prolly__lmdb_meta_copy_previous(const char *dir, const char *tmpdir, int bad)
{
	char *src_path = data_path(dir), *dst_path = data_path(tmpdir);
	int src = -1, dst = -1, rc;
	unsigned psize = 0;
	struct stat st;

	if (!src_path || !dst_path) {
		rc = prolly_set_error(PROLLY_ENOMEM, "lmdb: out of memory");
		goto cleanup;
	}
	if ((rc = good_slot(dir, bad, &psize)))
		goto cleanup;
	src = open(src_path, O_RDONLY | O_CLOEXEC);
	dst = open(dst_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (src < 0 || dst < 0 || fstat(src, &st) != 0) {
		rc = prolly_set_error(PROLLY_ESTORE, "lmdb: cannot copy %s to %s: %s", src_path, dst_path,
		                      strerror(errno));
		goto cleanup;
	}
	/* copy_file_range shares extents where the file system can (a reflink), else copies in the
	 * kernel; plain reads and writes where it is refused. */
	off_t done = 0;
	char buf[1 << 16];
	while (done < st.st_size) {
		ssize_t n = copy_file_range(src, &done, dst, NULL, (size_t)(st.st_size - done), 0);
		if (n > 0)
			continue;
		if (n < 0 &&
		    (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
			ssize_t r = pread(src, buf, sizeof(buf), done);
			if (r > 0 && pwrite(dst, buf, (size_t)r, done) == r) {
				done += r;
				continue;
			}
		}
		int err = n == 0 ? EIO : errno;
		rc = prolly_set_error(err == ENOSPC || err == EFBIG ? PROLLY_EFULL : PROLLY_ESTORE,
		                      "lmdb: copying %s to %s: %s", src_path, dst_path, strerror(err));
		goto cleanup;
	}
	rc = copy_meta_page(src, dst, !bad, bad, psize, dst_path);

cleanup:
	if (src >= 0)
		close(src);
	if (dst >= 0)
		close(dst);
	free(src_path);
	free(dst_path);
	return rc;
}

int prolly__lmdb_meta_restore(const char *dir, int bad)
{
	char *path = data_path(dir), *lock_path = NULL;
	int fd = -1, lfd = -1, rc;
	unsigned psize = 0;

	if (!path || !(lock_path = malloc(strlen(dir) + sizeof("/lock.mdb")))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "lmdb: out of memory");
		goto cleanup;
	}
	sprintf(lock_path, "%s/lock.mdb", dir);
	/* liblmdb holds a shared lock on byte 0 of lock.mdb for as long as a process has the
	 * environment open, and takes it exclusively to initialise the file: holding it
	 * exclusively here proves that nobody has it open, and makes openers wait. */
	lfd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (lfd < 0) {
		rc = prolly_set_error(PROLLY_ESTORE, "lmdb: cannot open %s: %s", lock_path,
		                      strerror(errno));
		goto cleanup;
	}
	struct flock fl;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = 0;
	fl.l_len = 1;
	if (fcntl(lfd, F_SETLK, &fl) != 0) {
		rc = prolly_set_error(PROLLY_ECONFLICT,
		                      "lmdb: %s is open in another process; close every other user of "
		                      "the store and retry",
		                      dir);
		goto cleanup;
	}
	if ((rc = good_slot(dir, bad, &psize)))
		goto cleanup;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = prolly_set_error(PROLLY_ESTORE, "lmdb: cannot open %s: %s", path, strerror(errno));
		goto cleanup;
	}
	rc = copy_meta_page(fd, fd, !bad, bad, psize, path);

cleanup:
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd); /* releases the lock */
	free(path);
	free(lock_path);
	return rc;
}
