/*
 * lmdb_fixture.h - what the LMDB store's safety tests (test_lmdb_safety.c, test_lmdb_pressure.c)
 * share: a scratch directory removed at exit, stores made through the public API, one-key
 * commits and reads, small tmpfs mounts unmounted at exit, and the programs' main. Header-only
 * (static inline) like ptest.h, whose checks make_store uses.
 */
#ifndef TESTS_LMDB_FIXTURE_H
#define TESTS_LMDB_FIXTURE_H

#include "prolly.h"
#include "ptest.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

static char scratch[1024];
static int scratch_n;

static inline void fresh_dir(char *out, size_t size, const char *what)
{
	snprintf(out, size, "%s/%s-%d", scratch, what, scratch_n++);
}

/* Number of entries in dir other than . and ..; -1 if it does not exist. */
static inline int entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	if (!d)
		return -1;
	for (struct dirent *de; (de = readdir(d));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* Reads the whole file into a malloc'd buffer. */
static inline unsigned char *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	long n;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n)
		*size = (size_t)n;
	fclose(f);
	return buf;
}

static inline char *url_of(const char *dir)
{
	static char url[2 * PATH_MAX];
	snprintf(url, sizeof(url), "lmdb:%s", dir);
	return url;
}

static inline int put(prolly_db *db, const char *branch, const char *k, const char *v)
{
	prolly_edit e = {PROLLY_PUT, {k, strlen(k)}, {v, strlen(v)}};
	prolly_id c;
	return prolly_commit_edits(&c, db, branch, &e, 1, "t");
}

static inline int get(prolly_db *db, const char *branch, const char *k, char *out, size_t cap)
{
	prolly_commit *c = NULL;
	prolly_buf b = PROLLY_BUF_INIT;
	int rc = prolly_branch_commit(&c, db, branch);
	if (!rc)
		rc = prolly_get(&b, db, &c->tree, k, strlen(k));
	if (!rc)
		snprintf(out, cap, "%.*s", (int)b.size, (const char *)b.ptr);
	prolly_buf_dispose(&b);
	prolly_commit_free(c);
	return rc;
}

/* A store with branches main (a=1, then b=2) and dev (at main's first commit, then c=3). */
static inline void make_store(const char *dir)
{
	prolly_db *db = NULL;
	PT_CHECK_RC(prolly_open(&db, url_of(dir), NULL), 0);
	if (!db)
		return;
	prolly_id head;
	PT_CHECK_RC(put(db, "main", "a", "1"), 0);
	PT_CHECK_RC(prolly_branch_head(&head, db, "main"), 0);
	PT_CHECK_RC(prolly_branch_create(db, "dev", &head), 0);
	PT_CHECK_RC(put(db, "dev", "c", "3"), 0);
	PT_CHECK_RC(put(db, "main", "b", "2"), 0);
	prolly_close(db);
}

/* Mount points made by mount_small, unmounted at exit whatever happened to the test. */
static char mounted[8][PATH_MAX];
static int n_mounted;

/* Mounts a tmpfs of `size` on dir (created). 0, or -1 with the test skipped saying why
 * (mounting needs root, or CAP_SYS_ADMIN): the caller then returns. */
static inline int mount_small(const char *dir, const char *size)
{
	char opts[64];
	snprintf(opts, sizeof(opts), "size=%s", size);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		PT_SKIP("cannot make %.160s: %s", dir, strerror(errno));
		return -1;
	}
	if (mount("tmpfs", dir, "tmpfs", 0, opts) != 0) {
		PT_SKIP("cannot mount a %s tmpfs on %.160s: %s (this test needs root)", size, dir,
		        strerror(errno));
		return -1;
	}
	if (n_mounted < 8)
		snprintf(mounted[n_mounted++], PATH_MAX, "%s", dir);
	return 0;
}

/* The program's main: a scratch directory under $TMPDIR for the cases, removed (and every
 * mount_small mount unmounted) when they have run. */
static inline int lmdb_fixture_main(int argc, char **argv, const char *name)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(scratch, sizeof(scratch), "%s/prolly-test-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp",
	         name);
	if (!mkdtemp(scratch)) {
		fprintf(stderr, "cannot create a scratch directory %s: %s\n", scratch, strerror(errno));
		return 2;
	}
	int rc = pt_run(argc, argv);
	for (int i = 0; i < n_mounted; i++)
		umount2(mounted[i], MNT_DETACH); /* already unmounted unless a test stopped early */
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", scratch);
	return rc;
}

#endif /* TESTS_LMDB_FIXTURE_H */
