/*
 * results.c - the harness's result directory: the run manifest, raw rows that survive a crash,
 * resume, and the completed-cell and measured/skipped counts. (Database URLs are shown through
 * prolly_redact_url.)
 * Rows (hrow) and CSV tables are in rows.c, the summary files in summary.c; results_int.h holds
 * what the three share.
 *
 * The directory. run-manifest.txt is "key: value" lines (harness_version, schema, config_hash,
 * revision, dirty, seed, suites, store, baseline, started, finished, resumes); every rewrite goes
 * through a temp file, fsync and rename, so the manifest is always whole. hr_open:
 *   - a new or empty directory gets the manifest first, then workload.toml (a byte copy of the
 *     given file) and resolved-workload.toml; a resume re-creates either if it is missing;
 *   - a directory with a manifest whose schema, config_hash, revision, store and suites match
 *     resumes: `started` is kept, `baseline` and `dirty` take the new run's values (dirty: 1 if
 *     either run was dirty), `finished` is cleared until hr_finish;
 *   - a mismatch returns -2 before anything is written; a non-empty directory without a manifest
 *     is refused (-1) so two runs never mix.
 *
 * Raw files (*-raw.csv). The header is written with the first cell. A cell's rows are built in
 * memory and written by one write() followed by fdatasync(), so after a crash a cell is on disk
 * whole, or as a prefix whose last line may be torn. A cell is complete when the number of its
 * rows (same cell_id) equals their cell_rows value. On resume every raw file is scanned: a torn
 * last record and all rows of incomplete cells are removed (the file is rewritten through a temp
 * file and rename only if something goes), and the ids of complete cells are remembered for
 * hr_cell_done. hr_append refuses a cell that is already complete, a row that sets a column
 * missing from the column list, and a column list other than the existing file's header. It
 * fills cell_rows when the rows leave it unset. A handle is used by one thread at a time.
 */
#include "results_int.h"

#include "clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HR_VERSION 1
#define MANIFEST "run-manifest.txt"

/* ---- errors and files ------------------------------------------------------------------------ */

FILE *h_file_begin(char *path, char *tmp, size_t n, const char *dir, const char *name, char *err,
                   size_t errn)
{
	FILE *f = NULL;
	if ((size_t)snprintf(path, n, "%s/%s", dir, name) >= n ||
	    (size_t)snprintf(tmp, n, "%s/.%s.tmp", dir, name) >= n)
		bench_seterr(err, errn, "%s/%s: path too long", dir, name);
	else if (!(f = fopen(tmp, "w")))
		bench_seterr(err, errn, "%s: %s", tmp, strerror(errno));
	return f;
}

int h_file_commit(FILE *f, const char *tmp, const char *path, char *err, size_t errn)
{
	int bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		bench_seterr(err, errn, "%s: write failed", tmp);
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, path) != 0) {
		bench_seterr(err, errn, "%s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

void h_file_abort(FILE *f, const char *tmp)
{
	if (!f)
		return;
	fclose(f);
	unlink(tmp);
}

int hr__join(char *out, const char *dir, const char *name)
{
	return snprintf(out, HR__PATHN, "%s/%s", dir, name) >= HR__PATHN ? -1 : 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

int hr__write_atomic(const char *dir, const char *name, const char *data, size_t len, char *err,
                     size_t errn)
{
	char path[HR__PATHN], tmp[HR__PATHN + 32];
	int fd = -1, rc = -1;
	if (hr__join(path, dir, name) != 0) {
		bench_seterr(err, errn, "%s/%s: path too long", dir, name);
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp%ld", dir, name, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write_all(fd, data, len) != 0 || fsync(fd) != 0)
		goto fail;
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) != 0)
		goto fail;
	(void)fsync_dir(dir);
	return 0;
fail:
	bench_seterr(err, errn, "writing %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rc;
}

static int copy_file(const char *dir, const char *name, const char *src, char *err, size_t errn)
{
	char *buf = NULL;
	size_t len;
	if (bench_read_file(&buf, &len, src) != 0) {
		bench_seterr(err, errn, "reading %s: %s", src, strerror(errno));
		return -1;
	}
	int rc = hr__write_atomic(dir, name, buf, len, err, errn);
	free(buf);
	return rc;
}

static int mkdir_p(const char *dir)
{
	char p[HR__PATHN];
	if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) != 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	if (mkdir(p, 0755) != 0 && errno != EEXIST)
		return -1;
	struct stat st;
	if (stat(p, &st) != 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

/* ---- the manifest ---------------------------------------------------------------------------- */

typedef struct done_cell {
	char *file, *id;
} done_cell;

struct hr_dir {
	char *path;
	hr_manifest m;
	unsigned resumes;
	done_cell *done;
	size_t ndone, capdone;
	bench_strvec checked; /* "file\nheader\n" pairs already checked against the file */
	unsigned measured, skipped;
	int lock_fd; /* the directory, opened and flock()ed for the run (-1: none) */
};

/* "key: value" lines into r (values trimmed). */
static void kv_parse(hrow *r, const char *text)
{
	while (*text) {
		const char *eol = strchr(text, '\n');
		size_t n = eol ? (size_t)(eol - text) : strlen(text);
		const char *colon = memchr(text, ':', n);
		if (colon && colon > text) {
			char key[128], val[4400];
			size_t kl = (size_t)(colon - text), vl;
			const char *v = colon + 1;
			while (kl && (text[kl - 1] == ' ' || text[kl - 1] == '\t'))
				kl--;
			while (v < text + n && (*v == ' ' || *v == '\t'))
				v++;
			vl = (size_t)(text + n - v);
			while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r'))
				vl--;
			if (kl < sizeof(key) && vl < sizeof(val)) {
				memcpy(key, text, kl);
				key[kl] = '\0';
				memcpy(val, v, vl);
				val[vl] = '\0';
				hrow_str(r, key, val);
			}
		}
		text += n + (eol ? 1 : 0);
	}
}

static void kv_line(bench_buf *b, const char *key, const char *val)
{
	bench_buf_puts(b, key);
	bench_buf_puts(b, ": ");
	for (; *val; val++)
		bench_buf_putc(b, *val == '\n' || *val == '\r' ? ' ' : *val);
	bench_buf_putc(b, '\n');
}

static int manifest_write(const hr_dir *d, char *err, size_t errn)
{
	const hr_manifest *m = &d->m;
	char num[32];
	bench_buf b = {0};
	snprintf(num, sizeof(num), "%d", HR_VERSION);
	kv_line(&b, "harness_version", num);
	snprintf(num, sizeof(num), "%d", m->schema);
	kv_line(&b, "schema", num);
	kv_line(&b, "config_hash", m->config_hash);
	kv_line(&b, "revision", m->revision);
	kv_line(&b, "dirty", m->dirty < 0 ? "unknown" : m->dirty ? "1" : "0");
	snprintf(num, sizeof(num), "%" PRIu64, m->seed);
	kv_line(&b, "seed", num);
	kv_line(&b, "suites", m->suites);
	kv_line(&b, "store", m->store);
	kv_line(&b, "baseline", m->baseline);
	kv_line(&b, "started", m->started);
	kv_line(&b, "finished", m->finished);
	snprintf(num, sizeof(num), "%u", d->resumes);
	kv_line(&b, "resumes", num);
	if (b.oom) {
		free(b.p);
		bench_seterr(err, errn, "out of memory");
		return -1;
	}
	int rc = hr__write_atomic(d->path, MANIFEST, b.p, b.n, err, errn);
	free(b.p);
	return rc;
}

/* Compares the identity fields of a stored manifest with m: 0 same, -2 (err) different. */
static int manifest_match(const hrow *old, const hr_manifest *m, char *err, size_t errn)
{
	char schema[16];
	snprintf(schema, sizeof(schema), "%d", m->schema);
	const char *keys[] = {"schema", "config_hash", "revision", "store", "suites"};
	const char *now[] = {schema, m->config_hash, m->revision, m->store, m->suites};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *was = hrow_get(old, keys[i]);
		if (!was || strcmp(was, now[i]) != 0) {
			bench_seterr(err, errn,
			             MANIFEST
			             " differs in %s: the directory has \"%s\", this run is \"%s\"; nothing "
			             "was changed (use another --output directory)",
			             keys[i], was ? was : "(missing)", now[i]);
			return -2;
		}
	}
	return 0;
}

/* ---- completed cells ------------------------------------------------------------------------- */

static int done_add(hr_dir *d, const char *file, const char *id)
{
	if (d->ndone == d->capdone) {
		size_t cap = d->capdone ? d->capdone * 2 : 64;
		done_cell *c = realloc(d->done, cap * sizeof(*c));
		if (!c)
			return -1;
		d->done = c;
		d->capdone = cap;
	}
	done_cell *c = &d->done[d->ndone];
	c->file = strdup(file);
	c->id = strdup(id);
	if (!c->file || !c->id) {
		free(c->file);
		free(c->id);
		return -1;
	}
	d->ndone++;
	return 0;
}

int hr_cell_done(hr_dir *d, const char *file, const char *cell_id)
{
	for (size_t i = d ? d->ndone : 0; i-- > 0;)
		if (strcmp(d->done[i].id, cell_id) == 0 && strcmp(d->done[i].file, file) == 0)
			return 1;
	return 0;
}

/* Rows of one cell id while scanning a raw file. */
typedef struct cell_count {
	char *id;
	long rows, expect; /* expect -1: a row had no usable cell_rows, or rows disagreed */
} cell_count;

static long parse_rows(const char *s)
{
	char *end;
	long v = *s ? strtol(s, &end, 10) : -1;
	return *s && !*end && v > 0 ? v : -1;
}

/*
 * Resume: removes the torn last record and the rows of incomplete cells from dir/name, and
 * records the complete cells. The file is rewritten only when something is removed; a file
 * with no whole header line holds no rows and is removed.
 */
static int clean_raw(hr_dir *d, const char *name, char *err, size_t errn)
{
	char path[HR__PATHN], *buf = NULL;
	size_t len, pos = 0, ncells = 0, capcells = 0, last = 0;
	bench_strvec rec = {0};
	cell_count *cells = NULL;
	size_t *start = NULL, *end = NULL, *cellof = NULL, nrec = 0, caprec = 0;
	int rc = -1, r, idc = -1, rowsc = -1, ncols;
	bench_buf out = {0};
	if (hr__join(path, d->path, name) != 0 || bench_read_file(&buf, &len, path) != 0) {
		bench_seterr(err, errn, "reading %s/%s: %s", d->path, name, strerror(errno));
		return -1;
	}
	r = bench_csv_record(&rec, buf, len, &pos);
	if (r != BENCH_CSV_OK) {
		if (r == BENCH_CSV_NOMEM)
			goto nomem;
		rc = unlink(path); /* empty or a torn header: no rows */
		if (rc != 0)
			bench_seterr(err, errn, "removing %s: %s", path, strerror(errno));
		goto cleanup;
	}
	ncols = (int)rec.n;
	for (size_t i = 0; i < rec.n; i++) {
		if (strcmp(rec.v[i], "cell_id") == 0)
			idc = (int)i;
		if (strcmp(rec.v[i], "cell_rows") == 0)
			rowsc = (int)i;
	}
	if (idc < 0 || rowsc < 0) {
		bench_seterr(err, errn, "%s: no cell_id or cell_rows column in the header", path);
		goto cleanup;
	}
	size_t header_end = pos, good = pos;
	for (;;) {
		size_t at = pos;
		r = bench_csv_record(&rec, buf, len, &pos);
		if (r == BENCH_CSV_NOMEM)
			goto nomem;
		if (r !=
		    BENCH_CSV_OK) /* the end, or a torn last record (BENCH_CSV_EOF, BENCH_CSV_BADQUOTE) */
			break;
		good = pos;
		if (rec.n == 1 && bench_csv_blank_line(buf, len, at))
			continue;
		if (nrec == caprec) {
			size_t cap = caprec ? caprec * 2 : 256;
			size_t *s = realloc(start, cap * sizeof(*s)),
			       *e = s ? realloc(end, cap * sizeof(*e)) : NULL;
			if (s)
				start = s;
			if (e)
				end = e;
			size_t *c = e ? realloc(cellof, cap * sizeof(*c)) : NULL;
			if (!c)
				goto nomem;
			cellof = c;
			caprec = cap;
		}
		const char *id = (int)rec.n == ncols ? rec.v[idc] : "";
		long expect = (int)rec.n == ncols ? parse_rows(rec.v[rowsc]) : -1;
		size_t ci = last < ncells && strcmp(cells[last].id, id) == 0 ? last : ncells;
		for (size_t k = 0; ci == ncells && k < ncells; k++)
			if (strcmp(cells[k].id, id) == 0)
				ci = k;
		if (ci == ncells) {
			if (ncells == capcells) {
				size_t cap = capcells ? capcells * 2 : 64;
				cell_count *c = realloc(cells, cap * sizeof(*c));
				if (!c)
					goto nomem;
				cells = c;
				capcells = cap;
			}
			if (!(cells[ncells].id = strdup(id)))
				goto nomem;
			cells[ncells].rows = 0;
			cells[ncells].expect = expect;
			ncells++;
		}
		if (cells[ci].expect != expect || !*id)
			cells[ci].expect = -1;
		cells[ci].rows++;
		last = ci;
		start[nrec] = at;
		end[nrec] = pos;
		cellof[nrec++] = ci;
	}
	int changed = good < len; /* a torn last record */
	for (size_t k = 0; k < ncells; k++) {
		if (cells[k].expect > 0 && cells[k].rows == cells[k].expect) {
			if (done_add(d, name, cells[k].id) != 0)
				goto nomem;
		} else {
			changed = 1;
		}
	}
	if (changed) {
		bench_buf_put(&out, buf, header_end);
		for (size_t i = 0; i < nrec; i++) {
			const cell_count *c = &cells[cellof[i]];
			if (c->expect > 0 && c->rows == c->expect)
				bench_buf_put(&out, buf + start[i], end[i] - start[i]);
		}
		if (out.oom)
			goto nomem;
		if (hr__write_atomic(d->path, name, out.p, out.n, err, errn) != 0)
			goto cleanup;
	}
	rc = 0;
	goto cleanup;
nomem:
	bench_seterr(err, errn, "%s: out of memory", path);
cleanup:
	for (size_t k = 0; k < ncells; k++)
		free(cells[k].id);
	free(cells);
	free(start);
	free(end);
	free(cellof);
	free(out.p);
	bench_strvec_free(&rec);
	free(buf);
	return rc;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Resume: cleans every *-raw.csv in the directory. */
static int clean_all_raw(hr_dir *d, char *err, size_t errn)
{
	DIR *dir = opendir(d->path);
	bench_strvec names = {0};
	struct dirent *e;
	int rc = -1;
	if (!dir) {
		bench_seterr(err, errn, "%s: %s", d->path, strerror(errno));
		return -1;
	}
	while ((e = readdir(dir)) != NULL)
		if (e->d_name[0] != '.' && ends_with(e->d_name, "-raw.csv") &&
		    bench_strvec_push(&names, strdup(e->d_name)) != 0) {
			bench_seterr(err, errn, "out of memory");
			goto cleanup;
		}
	for (size_t i = 0; i < names.n; i++)
		if (clean_raw(d, names.v[i], err, errn) != 0)
			goto cleanup;
	rc = 0;
cleanup:
	closedir(dir);
	bench_strvec_free(&names);
	return rc;
}

/* 1 if dir holds anything but "." and "..", 0 if not, -1 on error. */
static int dir_has_entries(const char *path)
{
	DIR *dir = opendir(path);
	struct dirent *e;
	int any = 0;
	if (!dir)
		return -1;
	while (!any && (e = readdir(dir)) != NULL)
		any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(dir);
	return any;
}

/* workload.toml and resolved-workload.toml, each only if missing. */
static int write_workload_files(hr_dir *d, const hw_workload *w, char *err, size_t errn)
{
	char path[HR__PATHN];
	struct stat st;
	if (!w)
		return 0;
	if (w->path[0] && (hr__join(path, d->path, "workload.toml") != 0 || stat(path, &st) != 0) &&
	    copy_file(d->path, "workload.toml", w->path, err, errn) != 0)
		return -1;
	if (w->resolved &&
	    (hr__join(path, d->path, "resolved-workload.toml") != 0 || stat(path, &st) != 0)) {
		toml_error te;
		memset(&te, 0, sizeof(te));
		if (hw_workload_write_resolved(w, path, &te) != 0) {
			bench_seterr(err, errn, "writing %s: %s", path, te.text[0] ? te.text : te.msg);
			return -1;
		}
	}
	return 0;
}

void hr_close(hr_dir *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->ndone; i++) {
		free(d->done[i].file);
		free(d->done[i].id);
	}
	free(d->done);
	bench_strvec_free(&d->checked);
	if (d->lock_fd >= 0)
		close(d->lock_fd); /* releases the run's lock */
	free(d->path);
	free(d);
}

/* One run per directory: an exclusive flock() on the directory itself (no file is added to it),
 * held until hr_close or the process ends, however it ends. -2 if another process holds it, -3
 * if this process may not read the directory. */
static int lock_dir(hr_dir *d, char *err, size_t errn)
{
	d->lock_fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->lock_fd < 0) {
		int e = errno;
		bench_seterr(err, errn, "cannot open %s: %s", d->path, strerror(e));
		return e == EACCES ? -3 : -1; /* a directory we may not read: as one we may not write */
	}
	if (flock(d->lock_fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK) {
		bench_seterr(err, errn, "another harness run is writing %s (nothing touched)", d->path);
		return -2;
	}
	bench_seterr(err, errn, "cannot lock %s: %s", d->path, strerror(errno));
	return -1;
}

int hr_check_dir(const char *dir, char *err, size_t errn)
{
	struct stat st;
	int bad = stat(dir, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
	if (bad) {
		bench_seterr(err, errn, "cannot use the output directory: %s", strerror(bad));
		return -3;
	}
	/* Another error of the check (none is known) is left for the writes to report. */
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0 ||
	    (errno != EACCES && errno != EROFS && errno != EPERM))
		return 0;
	bench_seterr(err, errn, "cannot write in the output directory: %s", strerror(errno));
	return -3;
}

int hr_open(hr_dir **out, const char *dir, const hr_manifest *m, const hw_workload *w, char *err,
            size_t errn)
{
	char mpath[HR__PATHN], *text = NULL;
	size_t len;
	hrow *old = NULL;
	hr_dir *d = NULL;
	int rc = -1;
	*out = NULL;
	/* A path that cannot be the directory is the caller's mistake (-3), not a failed run. */
	if (mkdir_p(dir) != 0) {
		bench_seterr(err, errn, "cannot create the output directory: %s", strerror(errno));
		return -3;
	}
	if (hr__join(mpath, dir, MANIFEST) != 0) {
		bench_seterr(err, errn, "path too long");
		return -3;
	}
	if ((d = calloc(1, sizeof(*d))))
		d->lock_fd = -1; /* before anything can fail: hr_close closes it */
	if (!d || !(d->path = strdup(dir)) || !(old = hrow_new())) {
		bench_seterr(err, errn, "out of memory");
		goto cleanup;
	}
	if ((rc = lock_dir(d, err, errn)) != 0)
		goto cleanup;
	rc = -1;
	d->m = *m;
	if (bench_read_file(&text, &len, mpath) == 0) {
		kv_parse(old, text);
		if ((rc = manifest_match(old, m, err, errn)) != 0 ||
		    (rc = hr_check_dir(dir, err, errn)) != 0)
			goto cleanup;
		rc = -1;
		/* Resume. Nothing has been written before this point. */
		const char *s = hrow_get(old, "started"), *dirty = hrow_get(old, "dirty");
		const char *resumes = hrow_get(old, "resumes");
		if (s && *s)
			snprintf(d->m.started, sizeof(d->m.started), "%s", s);
		if (dirty && (strcmp(dirty, "1") == 0 || m->dirty == 1))
			d->m.dirty = 1;
		else if (dirty && strcmp(dirty, "unknown") == 0)
			d->m.dirty = -1;
		d->resumes = (resumes ? (unsigned)strtoul(resumes, NULL, 10) : 0) + 1;
		d->m.finished[0] = '\0';
		if (!d->m.started[0])
			bench_utc_now(d->m.started, sizeof(d->m.started));
		if (clean_all_raw(d, err, errn) != 0 || manifest_write(d, err, errn) != 0 ||
		    write_workload_files(d, w, err, errn) != 0)
			goto cleanup;
	} else if (errno != ENOENT) {
		bench_seterr(err, errn, "reading %s: %s", mpath, strerror(errno));
		goto cleanup;
	} else {
		int any = dir_has_entries(dir);
		if (any != 0) {
			bench_seterr(err, errn,
			             any < 0 ? "%s: cannot list the directory"
			                     : "%s is not empty and holds no " MANIFEST
			                       ": refusing to mix runs (use an empty or new directory)",
			             dir);
			rc = any < 0 ? -1 : -2; /* not this run's: refused untouched, as another run's */
			goto cleanup;
		}
		if ((rc = hr_check_dir(dir, err, errn)) != 0)
			goto cleanup;
		rc = -1;
		if (!d->m.started[0])
			bench_utc_now(d->m.started, sizeof(d->m.started));
		d->m.finished[0] = '\0';
		if (manifest_write(d, err, errn) != 0 || write_workload_files(d, w, err, errn) != 0)
			goto cleanup;
	}
	*out = d;
	d = NULL;
	rc = 0;
cleanup:
	free(text);
	hrow_free(old);
	hr_close(d);
	return rc;
}

const char *hr_path(const hr_dir *d)
{
	return d ? d->path : NULL;
}

int hr_finish(hr_dir *d, char *err, size_t errn)
{
	if (!d) {
		bench_seterr(err, errn, "hr_finish: no result directory");
		return -1;
	}
	bench_utc_now(d->m.finished, sizeof(d->m.finished));
	return manifest_write(d, err, errn);
}

void hr_counts(const hr_dir *d, unsigned *measured, unsigned *skipped)
{
	if (measured)
		*measured = d ? d->measured : 0;
	if (skipped)
		*skipped = d ? d->skipped : 0;
}

void hr_count_skip(hr_dir *d)
{
	if (d)
		d->skipped++;
}

/* ---- appending raw rows ---------------------------------------------------------------------- */

/* Checks that an existing file's header is the column list (once per file and handle). */
static int check_header(hr_dir *d, const char *file, const char *path, int fd,
                        const char *const *columns, char *err, size_t errn)
{
	bench_buf want = {0};
	bench_buf_puts(&want, file);
	bench_buf_putc(&want, '\n');
	size_t skip = want.n;
	hr__csv_line(&want, columns, NULL);
	for (size_t i = 0; !want.oom && i < d->checked.n; i++) {
		if (strcmp(d->checked.v[i], want.p) == 0) {
			free(want.p);
			return 0;
		}
	}
	size_t hl = want.n - skip;
	char *got = want.oom ? NULL : malloc(hl + 1);
	int rc = -1;
	ssize_t n = got ? pread(fd, got, hl, 0) : -1;
	if (!got) {
		bench_seterr(err, errn, "out of memory");
	} else if (n != (ssize_t)hl || memcmp(got, want.p + skip, hl) != 0) {
		bench_seterr(err, errn,
		             "%s has other columns than this build writes (a run of another version?): "
		             "use another --output directory",
		             path);
	} else {
		rc = bench_strvec_push(&d->checked, strdup(want.p)); /* "file\nheader line" */
		if (rc)
			bench_seterr(err, errn, "out of memory");
	}
	free(got);
	free(want.p);
	return rc;
}

int hr_append(hr_dir *d, const char *file, const char *const *columns, hrow *const *rows, size_t n,
              char *err, size_t errn)
{
	char path[HR__PATHN], nrows[32];
	const char *id;
	bench_buf b = {0};
	int fd = -1, rc = -1;
	struct stat st;
	if (!n || !(id = hrow_get(rows[0], "cell_id")) || !*id) {
		bench_seterr(err, errn, "%s: a cell needs at least one row and a cell_id", file);
		return -1;
	}
	snprintf(nrows, sizeof(nrows), "%zu", n);
	for (size_t i = 0; i < n; i++) {
		const char *rid = hrow_get(rows[i], "cell_id"), *cr = hrow_get(rows[i], "cell_rows");
		if (!rid || strcmp(rid, id) != 0) {
			bench_seterr(err, errn, "%s: the rows of cell %s have different cell_id values", file,
			             id);
			return -1;
		}
		if (!cr)
			hrow_str(rows[i], "cell_rows", nrows);
		else if (strcmp(cr, nrows) != 0) {
			bench_seterr(err, errn, "%s: cell %s has %zu rows but cell_rows says %s", file, id, n,
			             cr);
			return -1;
		}
		for (size_t c = 0; c < rows[i]->n; c++) {
			size_t k = 0;
			while (columns[k] && strcmp(columns[k], rows[i]->col[c]) != 0)
				k++;
			if (!columns[k]) {
				bench_seterr(err, errn, "%s: a row sets column %s, which is not in the column list",
				             file, rows[i]->col[c]);
				return -1;
			}
		}
	}
	if (hr_cell_done(d, file, id)) {
		bench_seterr(err, errn, "%s: cell %s is already recorded", file, id);
		return -1;
	}
	if (hr__join(path, d->path, file) != 0) {
		bench_seterr(err, errn, "%s/%s: path too long", d->path, file);
		return -1;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || fstat(fd, &st) != 0) {
		bench_seterr(err, errn, "opening %s: %s", path, strerror(errno));
		goto cleanup;
	}
	if (st.st_size == 0) {
		hr__csv_line(&b, columns, NULL);
	} else {
		int rfd = open(path, O_RDONLY | O_CLOEXEC);
		int bad = rfd < 0 || check_header(d, file, path, rfd, columns, err, errn) != 0;
		if (rfd < 0)
			bench_seterr(err, errn, "opening %s: %s", path, strerror(errno));
		if (rfd >= 0)
			close(rfd);
		if (bad)
			goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		hr__csv_line(&b, columns, rows[i]);
	if (b.oom) {
		bench_seterr(err, errn, "out of memory");
		goto cleanup;
	}
	if (write_all(fd, b.p, b.n) != 0 || fdatasync(fd) != 0) {
		bench_seterr(err, errn, "writing %s: %s", path, strerror(errno));
		if (ftruncate(fd, st.st_size) != 0) /* best effort: drop a partial cell */
			(void)0;
		goto cleanup;
	}
	if (st.st_size == 0)
		(void)fsync_dir(d->path);
	if (done_add(d, file, id) != 0) {
		bench_seterr(err, errn, "out of memory");
		goto cleanup;
	}
	d->measured++;
	rc = 0;
cleanup:
	if (fd >= 0)
		close(fd);
	free(b.p);
	return rc;
}
