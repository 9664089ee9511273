/*
 * results.c - the harness's result directory: rows, CSV tables, the run manifest, raw rows that
 * survive a crash, resume, and the summary files.
 *
 * Rows (hrow). An ordered list of (column, value) strings; setting a column twice replaces its
 * value in place. Numbers are formatted here once: integers exactly, doubles with "%.9g" (an
 * integral double below 1e15 exactly, "%.0f"), NaN and infinities as "" (no value).
 *
 * CSV (RFC 4180). Fields are separated by ',', records end with "\n" (a "\r\n" is read too). A
 * field holding ',', '"', '\r' or '\n' is written in double quotes with '"' doubled. The reader
 * takes quoted fields with embedded commas and newlines, pads short records with "" and drops
 * extra fields; empty lines are skipped.
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
 *
 * Summaries. service-summary.csv: one row per service cell, from its op_class "all" row
 * (conflict_rate = conflicts / cas_attempts, error_rate = errors_total / attempted, each the raw
 * row's own value when that cannot be computed; statements_per_op as the raw row has it, the
 * adapter's count of statements per attempted operation, else pg_calls / attempted) plus the
 * p99_ms of each class's row as p99_ms_<class>. scale-summary.csv: one row per scale cell
 * (size, op, pattern): from one row per cell (ms_median, ms_min, ms_max columns) or one row per
 * run (an "ms" column: median, min and max over the runs); the other numbers are medians over
 * the cell's rows, derived when absent (ops_per_s = ops / ms, us_per_op = ms / ops,
 * statements_per_op = pg_calls / ops, round_trips_per_op = store_round_trips / ops); validated
 * is 1 only if every row is. The columns are listed in svc_sum_cols and scale_sum_cols below and
 * read by name by gates.c and report.c; a source column absent from a raw file gives "".
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HR_VERSION 1
#define MANIFEST "run-manifest.txt"
#define PATHN 4352

static void seterr(char *err, size_t errn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errn, const char *fmt, ...)
{
	va_list ap;
	if (!err || !errn)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errn, fmt, ap);
	va_end(ap);
}

/* ---- growable strings ------------------------------------------------------------------------ */

typedef struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
} sbuf;

static void sb_putn(sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_puts(sbuf *b, const char *s)
{
	sb_putn(b, s, strlen(s));
}

static void sb_putc(sbuf *b, char c)
{
	sb_putn(b, &c, 1);
}

/* ---- rows ------------------------------------------------------------------------------------ */

struct hrow {
	char **col, **val;
	size_t n, cap;
};

hrow *hrow_new(void)
{
	return calloc(1, sizeof(hrow));
}

void hrow_clear(hrow *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->col[i]);
		free(r->val[i]);
	}
	r->n = 0;
}

void hrow_free(hrow *r)
{
	if (!r)
		return;
	hrow_clear(r);
	free(r->col);
	free(r->val);
	free(r);
}

/* Sets col to v. On no memory the row keeps its old value (or lacks the column). */
void hrow_str(hrow *r, const char *col, const char *v)
{
	if (!r || !col)
		return;
	char *nv = strdup(v ? v : "");
	if (!nv)
		return;
	for (size_t i = 0; i < r->n; i++) {
		if (strcmp(r->col[i], col) == 0) {
			free(r->val[i]);
			r->val[i] = nv;
			return;
		}
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		char **c = realloc(r->col, cap * sizeof(*c));
		if (c)
			r->col = c;
		char **v2 = c ? realloc(r->val, cap * sizeof(*v2)) : NULL;
		if (!v2) {
			free(nv);
			return;
		}
		r->val = v2;
		r->cap = cap;
	}
	char *nc = strdup(col);
	if (!nc) {
		free(nv);
		return;
	}
	r->col[r->n] = nc;
	r->val[r->n++] = nv;
}

void hrow_u64(hrow *r, const char *col, uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	hrow_str(r, col, buf);
}

void hrow_i64(hrow *r, const char *col, int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	hrow_str(r, col, buf);
}

void hrow_f64(hrow *r, const char *col, double v)
{
	char buf[64];
	if (!isfinite(v))
		buf[0] = '\0';
	else if (v == 0)
		snprintf(buf, sizeof(buf), "0"); /* no "-0" */
	else if (fabs(v) < 1e15 && v == floor(v))
		snprintf(buf, sizeof(buf), "%.0f", v);
	else
		snprintf(buf, sizeof(buf), "%.9g", v);
	hrow_str(r, col, buf);
}

const char *hrow_get(const hrow *r, const char *col)
{
	if (!r || !col)
		return NULL;
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->col[i], col) == 0)
			return r->val[i];
	return NULL;
}

/* ---- CSV ------------------------------------------------------------------------------------- */

typedef struct strvec {
	char **v;
	size_t n, cap;
} strvec;

static void sv_reset(strvec *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	s->n = 0;
}

static void sv_free(strvec *s)
{
	sv_reset(s);
	free(s->v);
	s->v = NULL;
	s->cap = 0;
}

static int sv_push(strvec *s, char *owned)
{
	if (!owned)
		return -1;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **v = realloc(s->v, cap * sizeof(*v));
		if (!v) {
			free(owned);
			return -1;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = owned;
	return 0;
}

enum { REC_END = 0, REC_OK = 1, REC_EOF = 2, REC_BADQUOTE = -1, REC_NOMEM = -2 };

/* Reads the record at buf[*pos] into out (reset first). REC_OK: it ended with a newline;
 * REC_EOF: it ended at the end of the buffer; REC_END: nothing left; REC_BADQUOTE: a quoted
 * field runs to the end of the buffer. *pos moves past the record. */
static int csv_record(strvec *out, const char *buf, size_t len, size_t *pos)
{
	size_t i = *pos;
	sbuf f = {0};
	int rc;
	sv_reset(out);
	if (i >= len)
		return REC_END;
	for (;;) {
		f.len = 0;
		sb_putn(&f, "", 0);
		if (i < len && buf[i] == '"') {
			i++;
			for (;;) {
				if (i >= len) {
					rc = REC_BADQUOTE;
					goto cleanup;
				}
				if (buf[i] == '"') {
					if (i + 1 < len && buf[i + 1] == '"') {
						sb_putc(&f, '"');
						i += 2;
						continue;
					}
					i++;
					break;
				}
				sb_putc(&f, buf[i++]);
			}
		}
		/* Unquoted text (or anything after a closing quote, kept as written). */
		size_t s = i;
		while (i < len && buf[i] != ',' && buf[i] != '\n' &&
		       !(buf[i] == '\r' && i + 1 < len && buf[i + 1] == '\n'))
			i++;
		sb_putn(&f, buf + s, i - s);
		if (f.oom || sv_push(out, strdup(f.p)) != 0) {
			rc = REC_NOMEM;
			goto cleanup;
		}
		if (i >= len) {
			rc = REC_EOF;
			break;
		}
		if (buf[i] == ',') {
			i++;
			continue;
		}
		i += buf[i] == '\r' ? 2 : 1;
		rc = REC_OK;
		break;
	}
	*pos = i;
cleanup:
	free(f.p);
	return rc;
}

static void csv_field(sbuf *b, const char *v)
{
	if (!v)
		v = "";
	if (!strpbrk(v, ",\"\r\n")) {
		sb_puts(b, v);
		return;
	}
	sb_putc(b, '"');
	for (; *v; v++) {
		if (*v == '"')
			sb_putc(b, '"');
		sb_putc(b, *v);
	}
	sb_putc(b, '"');
}

static void csv_line(sbuf *b, const char *const *columns, const hrow *r)
{
	for (size_t i = 0; columns[i]; i++) {
		if (i)
			sb_putc(b, ',');
		csv_field(b, r ? hrow_get(r, columns[i]) : columns[i]);
	}
	sb_putc(b, '\n');
}

/* Reads a whole file; *out is NUL-terminated. -1 with errno on failure. */
static int slurp(char **out, size_t *len, const char *path)
{
	FILE *f = fopen(path, "rb");
	sbuf b = {0};
	char chunk[65536];
	size_t got;
	*out = NULL;
	*len = 0;
	if (!f)
		return -1;
	sb_putn(&b, "", 0);
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		sb_putn(&b, chunk, got);
	int bad = ferror(f) || b.oom;
	fclose(f);
	if (bad) {
		free(b.p);
		errno = errno ? errno : ENOMEM;
		return -1;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

static int blank_line(const char *buf, size_t len, size_t at)
{
	return at < len &&
	       (buf[at] == '\n' || (buf[at] == '\r' && at + 1 < len && buf[at + 1] == '\n'));
}

int csv_table_read(csv_table *t, const char *path, char *err, size_t errn)
{
	char *buf = NULL;
	size_t len, pos = 0, caprows = 0;
	strvec rec = {0};
	int rc = -1, r;
	memset(t, 0, sizeof(*t));
	if (slurp(&buf, &len, path) != 0) {
		seterr(err, errn, "%s: %s", path, strerror(errno));
		return -1;
	}
	r = csv_record(&rec, buf, len, &pos);
	if (r == REC_END) {
		rc = 0;
		goto cleanup;
	}
	if (r < 0)
		goto bad;
	t->ncols = rec.n;
	t->header = rec.v;
	rec = (strvec){0};
	for (;;) {
		size_t at = pos;
		r = csv_record(&rec, buf, len, &pos);
		if (r == REC_END)
			break;
		if (r < 0)
			goto bad;
		if (t->ncols > 1 && rec.n == 1 && blank_line(buf, len, at))
			continue;
		while (rec.n < t->ncols)
			if (sv_push(&rec, strdup("")) != 0)
				goto nomem;
		while (rec.n > t->ncols)
			free(rec.v[--rec.n]);
		if (t->nrows == caprows) {
			size_t cap = caprows ? caprows * 2 : 64;
			char ***rows = realloc(t->rows, cap * sizeof(*rows));
			if (!rows)
				goto nomem;
			t->rows = rows;
			caprows = cap;
		}
		if (t->ncols == 0) {
			sv_reset(&rec);
			continue;
		}
		t->rows[t->nrows++] = rec.v;
		rec = (strvec){0};
	}
	rc = 0;
	goto cleanup;
bad:
	if (r == REC_BADQUOTE) {
		seterr(err, errn, "%s: a quoted field is not closed before the end of the file", path);
		goto cleanup;
	}
nomem:
	seterr(err, errn, "%s: out of memory", path);
cleanup:
	sv_free(&rec);
	free(buf);
	if (rc != 0)
		csv_table_free(t);
	return rc;
}

int csv_table_col(const csv_table *t, const char *name)
{
	for (size_t i = 0; t && name && i < t->ncols; i++)
		if (strcmp(t->header[i], name) == 0)
			return (int)i;
	return -1;
}

const char *csv_table_get(const csv_table *t, size_t row, const char *col)
{
	int c = csv_table_col(t, col);
	if (c < 0 || row >= t->nrows)
		return "";
	return t->rows[row][c];
}

double csv_table_num(const csv_table *t, size_t row, const char *col)
{
	const char *s = csv_table_get(t, row, col);
	char *end;
	while (*s == ' ')
		s++;
	if (!*s)
		return NAN;
	double v = strtod(s, &end);
	while (*end == ' ')
		end++;
	return *end ? NAN : v;
}

void csv_table_free(csv_table *t)
{
	if (!t)
		return;
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++)
			free(t->rows[r][c]);
		free(t->rows[r]);
	}
	for (size_t c = 0; c < t->ncols && t->header; c++)
		free(t->header[c]);
	free(t->header);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

/* ---- files ----------------------------------------------------------------------------------- */

static int join(char *out, const char *dir, const char *name)
{
	return snprintf(out, PATHN, "%s/%s", dir, name) >= PATHN ? -1 : 0;
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

/* Replaces dir/name with data: temp file, fsync, rename, fsync of the directory. */
static int write_atomic(const char *dir, const char *name, const char *data, size_t len, char *err,
                        size_t errn)
{
	char path[PATHN], tmp[PATHN + 32];
	int fd = -1, rc = -1;
	if (join(path, dir, name) != 0) {
		seterr(err, errn, "%s/%s: path too long", dir, name);
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
	seterr(err, errn, "writing %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rc;
}

static int copy_file(const char *dir, const char *name, const char *src, char *err, size_t errn)
{
	char *buf = NULL;
	size_t len;
	if (slurp(&buf, &len, src) != 0) {
		seterr(err, errn, "reading %s: %s", src, strerror(errno));
		return -1;
	}
	int rc = write_atomic(dir, name, buf, len, err, errn);
	free(buf);
	return rc;
}

static int mkdir_p(const char *dir)
{
	char p[PATHN];
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

static void utc_now(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
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
	strvec checked; /* "file\nheader\n" pairs already checked against the file */
	unsigned measured, skipped;
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

static void kv_line(sbuf *b, const char *key, const char *val)
{
	sb_puts(b, key);
	sb_puts(b, ": ");
	for (; *val; val++)
		sb_putc(b, *val == '\n' || *val == '\r' ? ' ' : *val);
	sb_putc(b, '\n');
}

static int manifest_write(const hr_dir *d, char *err, size_t errn)
{
	const hr_manifest *m = &d->m;
	char num[32];
	sbuf b = {0};
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
		seterr(err, errn, "out of memory");
		return -1;
	}
	int rc = write_atomic(d->path, MANIFEST, b.p, b.len, err, errn);
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
			seterr(err, errn,
			       MANIFEST " differs in %s: the directory has \"%s\", this run is \"%s\"; nothing "
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
	char path[PATHN], *buf = NULL;
	size_t len, pos = 0, ncells = 0, capcells = 0, last = 0;
	strvec rec = {0};
	cell_count *cells = NULL;
	size_t *start = NULL, *end = NULL, *cellof = NULL, nrec = 0, caprec = 0;
	int rc = -1, r, idc = -1, rowsc = -1, ncols;
	sbuf out = {0};
	if (join(path, d->path, name) != 0 || slurp(&buf, &len, path) != 0) {
		seterr(err, errn, "reading %s/%s: %s", d->path, name, strerror(errno));
		return -1;
	}
	r = csv_record(&rec, buf, len, &pos);
	if (r != REC_OK) {
		if (r == REC_NOMEM)
			goto nomem;
		rc = unlink(path); /* empty or a torn header: no rows */
		if (rc != 0)
			seterr(err, errn, "removing %s: %s", path, strerror(errno));
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
		seterr(err, errn, "%s: no cell_id or cell_rows column in the header", path);
		goto cleanup;
	}
	size_t header_end = pos, good = pos;
	for (;;) {
		size_t at = pos;
		r = csv_record(&rec, buf, len, &pos);
		if (r == REC_NOMEM)
			goto nomem;
		if (r != REC_OK) /* the end, or a torn last record (REC_EOF, REC_BADQUOTE) */
			break;
		good = pos;
		if (rec.n == 1 && blank_line(buf, len, at))
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
		sb_putn(&out, buf, header_end);
		for (size_t i = 0; i < nrec; i++) {
			const cell_count *c = &cells[cellof[i]];
			if (c->expect > 0 && c->rows == c->expect)
				sb_putn(&out, buf + start[i], end[i] - start[i]);
		}
		if (out.oom)
			goto nomem;
		if (write_atomic(d->path, name, out.p, out.len, err, errn) != 0)
			goto cleanup;
	}
	rc = 0;
	goto cleanup;
nomem:
	seterr(err, errn, "%s: out of memory", path);
cleanup:
	for (size_t k = 0; k < ncells; k++)
		free(cells[k].id);
	free(cells);
	free(start);
	free(end);
	free(cellof);
	free(out.p);
	sv_free(&rec);
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
	strvec names = {0};
	struct dirent *e;
	int rc = -1;
	if (!dir) {
		seterr(err, errn, "%s: %s", d->path, strerror(errno));
		return -1;
	}
	while ((e = readdir(dir)) != NULL)
		if (e->d_name[0] != '.' && ends_with(e->d_name, "-raw.csv") &&
		    sv_push(&names, strdup(e->d_name)) != 0) {
			seterr(err, errn, "out of memory");
			goto cleanup;
		}
	for (size_t i = 0; i < names.n; i++)
		if (clean_raw(d, names.v[i], err, errn) != 0)
			goto cleanup;
	rc = 0;
cleanup:
	closedir(dir);
	sv_free(&names);
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
	char path[PATHN];
	struct stat st;
	if (!w)
		return 0;
	if (w->path[0] && (join(path, d->path, "workload.toml") != 0 || stat(path, &st) != 0) &&
	    copy_file(d->path, "workload.toml", w->path, err, errn) != 0)
		return -1;
	if (w->resolved &&
	    (join(path, d->path, "resolved-workload.toml") != 0 || stat(path, &st) != 0)) {
		toml_error te;
		memset(&te, 0, sizeof(te));
		if (hw_workload_write_resolved(w, path, &te) != 0) {
			seterr(err, errn, "writing %s: %s", path, te.text[0] ? te.text : te.msg);
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
	sv_free(&d->checked);
	free(d->path);
	free(d);
}

int hr_open(hr_dir **out, const char *dir, const hr_manifest *m, const hw_workload *w, char *err,
            size_t errn)
{
	char mpath[PATHN], *text = NULL;
	size_t len;
	hrow *old = NULL;
	hr_dir *d = NULL;
	int rc = -1;
	*out = NULL;
	if (mkdir_p(dir) != 0) {
		seterr(err, errn, "cannot create the output directory %s: %s", dir, strerror(errno));
		return -1;
	}
	if (join(mpath, dir, MANIFEST) != 0) {
		seterr(err, errn, "%s: path too long", dir);
		return -1;
	}
	if (!(d = calloc(1, sizeof(*d))) || !(d->path = strdup(dir)) || !(old = hrow_new())) {
		seterr(err, errn, "out of memory");
		goto cleanup;
	}
	d->m = *m;
	if (slurp(&text, &len, mpath) == 0) {
		kv_parse(old, text);
		if ((rc = manifest_match(old, m, err, errn)) != 0)
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
			utc_now(d->m.started);
		if (clean_all_raw(d, err, errn) != 0 || manifest_write(d, err, errn) != 0 ||
		    write_workload_files(d, w, err, errn) != 0)
			goto cleanup;
	} else if (errno != ENOENT) {
		seterr(err, errn, "reading %s: %s", mpath, strerror(errno));
		goto cleanup;
	} else {
		int any = dir_has_entries(dir);
		if (any != 0) {
			seterr(err, errn,
			       any < 0 ? "%s: cannot list the directory"
			               : "%s is not empty and holds no " MANIFEST
			                 ": refusing to mix runs (use an empty or new directory)",
			       dir);
			goto cleanup;
		}
		if (!d->m.started[0])
			utc_now(d->m.started);
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
		seterr(err, errn, "hr_finish: no result directory");
		return -1;
	}
	utc_now(d->m.finished);
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
	sbuf want = {0};
	sb_puts(&want, file);
	sb_putc(&want, '\n');
	size_t skip = want.len;
	csv_line(&want, columns, NULL);
	for (size_t i = 0; !want.oom && i < d->checked.n; i++) {
		if (strcmp(d->checked.v[i], want.p) == 0) {
			free(want.p);
			return 0;
		}
	}
	size_t hl = want.len - skip;
	char *got = want.oom ? NULL : malloc(hl + 1);
	int rc = -1;
	ssize_t n = got ? pread(fd, got, hl, 0) : -1;
	if (!got) {
		seterr(err, errn, "out of memory");
	} else if (n != (ssize_t)hl || memcmp(got, want.p + skip, hl) != 0) {
		seterr(err, errn,
		       "%s has other columns than this build writes (a run of another version?): "
		       "use another --output directory",
		       path);
	} else {
		rc = sv_push(&d->checked, strdup(want.p)); /* "file\nheader line" */
		if (rc)
			seterr(err, errn, "out of memory");
	}
	free(got);
	free(want.p);
	return rc;
}

int hr_append(hr_dir *d, const char *file, const char *const *columns, hrow *const *rows, size_t n,
              char *err, size_t errn)
{
	char path[PATHN], nrows[32];
	const char *id;
	sbuf b = {0};
	int fd = -1, rc = -1;
	struct stat st;
	if (!n || !(id = hrow_get(rows[0], "cell_id")) || !*id) {
		seterr(err, errn, "%s: a cell needs at least one row and a cell_id", file);
		return -1;
	}
	snprintf(nrows, sizeof(nrows), "%zu", n);
	for (size_t i = 0; i < n; i++) {
		const char *rid = hrow_get(rows[i], "cell_id"), *cr = hrow_get(rows[i], "cell_rows");
		if (!rid || strcmp(rid, id) != 0) {
			seterr(err, errn, "%s: the rows of cell %s have different cell_id values", file, id);
			return -1;
		}
		if (!cr)
			hrow_str(rows[i], "cell_rows", nrows);
		else if (strcmp(cr, nrows) != 0) {
			seterr(err, errn, "%s: cell %s has %zu rows but cell_rows says %s", file, id, n, cr);
			return -1;
		}
		for (size_t c = 0; c < rows[i]->n; c++) {
			size_t k = 0;
			while (columns[k] && strcmp(columns[k], rows[i]->col[c]) != 0)
				k++;
			if (!columns[k]) {
				seterr(err, errn, "%s: a row sets column %s, which is not in the column list", file,
				       rows[i]->col[c]);
				return -1;
			}
		}
	}
	if (hr_cell_done(d, file, id)) {
		seterr(err, errn, "%s: cell %s is already recorded", file, id);
		return -1;
	}
	if (join(path, d->path, file) != 0) {
		seterr(err, errn, "%s/%s: path too long", d->path, file);
		return -1;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || fstat(fd, &st) != 0) {
		seterr(err, errn, "opening %s: %s", path, strerror(errno));
		goto cleanup;
	}
	if (st.st_size == 0) {
		csv_line(&b, columns, NULL);
	} else {
		int rfd = open(path, O_RDONLY | O_CLOEXEC);
		int bad = rfd < 0 || check_header(d, file, path, rfd, columns, err, errn) != 0;
		if (rfd < 0)
			seterr(err, errn, "opening %s: %s", path, strerror(errno));
		if (rfd >= 0)
			close(rfd);
		if (bad)
			goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		csv_line(&b, columns, rows[i]);
	if (b.oom) {
		seterr(err, errn, "out of memory");
		goto cleanup;
	}
	if (write_all(fd, b.p, b.len) != 0 || fdatasync(fd) != 0) {
		seterr(err, errn, "writing %s: %s", path, strerror(errno));
		if (ftruncate(fd, st.st_size) != 0) /* best effort: drop a partial cell */
			(void)0;
		goto cleanup;
	}
	if (st.st_size == 0)
		(void)fsync_dir(d->path);
	if (done_add(d, file, id) != 0) {
		seterr(err, errn, "out of memory");
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

/* ---- summaries ------------------------------------------------------------------------------- */

static const char *const svc_classes[] = {"point_read", "multi_read", "commit",
                                          "diff",       "merge",      NULL};

/* service-summary.csv; from "attempted" on, extra context (the counts behind the rates, the
 * p99 gate's sample floor, the server-side statement count). */
/* clang-format off */
static const char *const svc_sum_cols[] = {
	"cell_id", "clients", "pool_size", "attempted_per_s", "succeeded_per_s", "p50_ms", "p95_ms",
	"p99_ms", "p999_ms", "max_ms", "conflicts", "retries", "timeouts", "errors_total",
	"conflict_rate", "error_rate", "statements_per_op", "validated", "p99_ms_point_read",
	"p99_ms_multi_read", "p99_ms_commit", "p99_ms_diff", "p99_ms_merge", "attempted", "succeeded",
	"cas_attempts", "samples", "pg_calls", "pg_statements_per_op", NULL};

/* Copied as written from the service cell's "all" row. */
static const char *const svc_copy_cols[] = {
	"clients", "pool_size", "attempted_per_s", "succeeded_per_s", "p50_ms", "p95_ms", "p99_ms",
	"p999_ms", "max_ms", "conflicts", "retries", "timeouts", "errors_total", "validated",
	"attempted", "succeeded", "cas_attempts", "samples", "pg_calls", "pg_statements_per_op", NULL};
/* clang-format on */

/* clang-format off */
static const char *const scale_sum_cols[] = {
	"cell_id", "size", "op", "pattern", "runs", "ms_median", "ms_min", "ms_max", "ops_per_s",
	"us_per_op", "p50_us", "p99_us", "statements_per_op", "round_trips_per_op", "vs_plain",
	"validated", "ops", "samples", NULL};
/* clang-format on */

static double ratio(double a, double b)
{
	return isfinite(a) && isfinite(b) && b > 0 ? a / b : NAN;
}

/* Row indices grouped by cell_id, groups in order of first appearance. */
typedef struct groups {
	size_t *row;   /* row indices, grouped */
	size_t *first; /* group g is row[first[g] .. first[g+1]) */
	size_t n;
} groups;

static int group_cells(groups *g, const csv_table *t)
{
	size_t *gid = calloc(t->nrows + 1, sizeof(size_t)), *cnt = calloc(t->nrows + 1, sizeof(size_t));
	size_t *leader = calloc(t->nrows + 1, sizeof(size_t));
	int rc = -1;
	memset(g, 0, sizeof(*g));
	g->row = calloc(t->nrows + 1, sizeof(size_t));
	g->first = calloc(t->nrows + 2, sizeof(size_t));
	if (!gid || !cnt || !leader || !g->row || !g->first)
		goto cleanup;
	for (size_t r = 0; r < t->nrows; r++) {
		const char *id = csv_table_get(t, r, "cell_id");
		size_t k = g->n && strcmp(csv_table_get(t, leader[gid[r - 1]], "cell_id"), id) == 0
		               ? gid[r - 1]
		               : g->n;
		for (size_t j = 0; k == g->n && j < g->n; j++)
			if (strcmp(csv_table_get(t, leader[j], "cell_id"), id) == 0)
				k = j;
		if (k == g->n)
			leader[g->n++] = r;
		gid[r] = k;
		cnt[k]++;
	}
	for (size_t k = 0; k < g->n; k++)
		g->first[k + 1] = g->first[k] + cnt[k];
	memset(cnt, 0, (t->nrows + 1) * sizeof(size_t));
	for (size_t r = 0; r < t->nrows; r++)
		g->row[g->first[gid[r]] + cnt[gid[r]]++] = r;
	rc = 0;
cleanup:
	free(gid);
	free(cnt);
	free(leader);
	return rc;
}

static void groups_free(groups *g)
{
	free(g->row);
	free(g->first);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median (mean of the middle two), min or max (which: 0, 1, 2) of col over rows; NaN if none. */
static double stat_of(const csv_table *t, const size_t *rows, size_t n, const char *col, int which)
{
	double *v = malloc((n ? n : 1) * sizeof(double)), res = NAN;
	size_t k = 0;
	if (!v)
		return NAN;
	for (size_t i = 0; i < n; i++) {
		double x = csv_table_num(t, rows[i], col);
		if (isfinite(x))
			v[k++] = x;
	}
	if (k) {
		qsort(v, k, sizeof(double), dbl_cmp);
		res = which == 1   ? v[0]
		      : which == 2 ? v[k - 1]
		      : k % 2      ? v[k / 2]
		                   : (v[k / 2 - 1] + v[k / 2]) / 2;
	}
	free(v);
	return res;
}

static int truthy(const char *s)
{
	return strcmp(s, "1") == 0 || strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0;
}

static int write_rows(const char *dir, const char *name, const char *const *cols, hrow **rows,
                      size_t n, char *err, size_t errn)
{
	sbuf b = {0};
	int rc;
	csv_line(&b, cols, NULL);
	for (size_t i = 0; i < n; i++)
		csv_line(&b, cols, rows[i]);
	if (b.oom) {
		free(b.p);
		seterr(err, errn, "out of memory");
		return -1;
	}
	rc = write_atomic(dir, name, b.p, b.len, err, errn);
	free(b.p);
	return rc;
}

static void service_row(hrow *o, const csv_table *t, const size_t *rows, size_t n)
{
	size_t all = n;
	for (size_t i = 0; i < n; i++)
		if (strcmp(csv_table_get(t, rows[i], "op_class"), "all") == 0)
			all = i;
	hrow_str(o, "cell_id", csv_table_get(t, rows[0], "cell_id"));
	if (all < n) {
		size_t r = rows[all];
		for (size_t c = 0; svc_copy_cols[c]; c++)
			hrow_str(o, svc_copy_cols[c], csv_table_get(t, r, svc_copy_cols[c]));
		double attempted = csv_table_num(t, r, "attempted");
		double cr = ratio(csv_table_num(t, r, "conflicts"), csv_table_num(t, r, "cas_attempts"));
		double er = ratio(csv_table_num(t, r, "errors_total"), attempted);
		double spo = csv_table_num(t, r, "statements_per_op");
		hrow_f64(o, "conflict_rate", isfinite(cr) ? cr : csv_table_num(t, r, "conflict_rate"));
		hrow_f64(o, "error_rate", isfinite(er) ? er : csv_table_num(t, r, "error_rate"));
		hrow_f64(o, "statements_per_op",
		         isfinite(spo) ? spo : ratio(csv_table_num(t, r, "pg_calls"), attempted));
	}
	for (size_t k = 0; svc_classes[k]; k++) {
		char col[64];
		snprintf(col, sizeof(col), "p99_ms_%s", svc_classes[k]);
		for (size_t i = 0; i < n; i++)
			if (strcmp(csv_table_get(t, rows[i], "op_class"), svc_classes[k]) == 0)
				hrow_str(o, col, csv_table_get(t, rows[i], "p99_ms"));
	}
}

static void scale_row(hrow *o, const csv_table *t, const size_t *rows, size_t n)
{
	static const char *const med[] = {"p50_us", "p99_us", "vs_plain", "samples", NULL};
	double ms = stat_of(t, rows, n, "ms_median", 0), ops = stat_of(t, rows, n, "ops", 0);
	int runc = csv_table_col(t, "runs") >= 0;
	hrow_str(o, "cell_id", csv_table_get(t, rows[0], "cell_id"));
	hrow_str(o, "size", csv_table_get(t, rows[0], "size"));
	hrow_str(o, "op", csv_table_get(t, rows[0], "op"));
	hrow_str(o, "pattern", csv_table_get(t, rows[0], "pattern"));
	hrow_f64(o, "runs", runc ? stat_of(t, rows, n, "runs", 2) : (double)n);
	if (isfinite(ms)) { /* one row per cell, medians already taken */
		hrow_f64(o, "ms_median", ms);
		hrow_f64(o, "ms_min", stat_of(t, rows, n, "ms_min", 1));
		hrow_f64(o, "ms_max", stat_of(t, rows, n, "ms_max", 2));
	} else { /* one row per run */
		ms = stat_of(t, rows, n, "ms", 0);
		hrow_f64(o, "ms_median", ms);
		hrow_f64(o, "ms_min", stat_of(t, rows, n, "ms", 1));
		hrow_f64(o, "ms_max", stat_of(t, rows, n, "ms", 2));
	}
	hrow_f64(o, "ops", ops);
	double v = stat_of(t, rows, n, "ops_per_s", 0);
	hrow_f64(o, "ops_per_s", isfinite(v) ? v : ratio(ops * 1000.0, ms));
	v = stat_of(t, rows, n, "us_per_op", 0);
	hrow_f64(o, "us_per_op", isfinite(v) ? v : ratio(ms * 1000.0, ops));
	for (size_t k = 0; med[k]; k++)
		hrow_f64(o, med[k], stat_of(t, rows, n, med[k], 0));
	v = stat_of(t, rows, n, "statements_per_op", 0);
	hrow_f64(o, "statements_per_op",
	         isfinite(v) ? v : ratio(stat_of(t, rows, n, "pg_calls", 0), ops));
	v = stat_of(t, rows, n, "round_trips_per_op", 0);
	hrow_f64(o, "round_trips_per_op",
	         isfinite(v) ? v : ratio(stat_of(t, rows, n, "store_round_trips", 0), ops));
	if (csv_table_col(t, "validated") >= 0) {
		int ok = 1;
		for (size_t i = 0; i < n; i++)
			ok = ok && truthy(csv_table_get(t, rows[i], "validated"));
		hrow_str(o, "validated", ok ? "1" : "0");
	}
}

/* One summary file from one raw file: 0 done (or no raw file), -1 error. */
static int summarize(hr_dir *d, const char *raw, const char *name, const char *const *cols,
                     void (*fill)(hrow *, const csv_table *, const size_t *, size_t), char *err,
                     size_t errn)
{
	char path[PATHN];
	csv_table t;
	groups g = {0};
	hrow **rows = NULL;
	int rc = -1;
	struct stat st;
	if (join(path, d->path, raw) != 0 || stat(path, &st) != 0)
		return 0;
	if (csv_table_read(&t, path, err, errn) != 0)
		return -1;
	if (group_cells(&g, &t) != 0 || !(rows = calloc(g.n + 1, sizeof(*rows)))) {
		seterr(err, errn, "out of memory");
		goto cleanup;
	}
	for (size_t k = 0; k < g.n; k++) {
		if (!(rows[k] = hrow_new())) {
			seterr(err, errn, "out of memory");
			goto cleanup;
		}
		fill(rows[k], &t, g.row + g.first[k], g.first[k + 1] - g.first[k]);
	}
	rc = write_rows(d->path, name, cols, rows, g.n, err, errn);
cleanup:
	for (size_t k = 0; rows && k < g.n; k++)
		hrow_free(rows[k]);
	free(rows);
	groups_free(&g);
	csv_table_free(&t);
	return rc;
}

int hr_write_summaries(hr_dir *d, char *err, size_t errn)
{
	if (summarize(d, "service-raw.csv", "service-summary.csv", svc_sum_cols, service_row, err,
	              errn) != 0)
		return -1;
	return summarize(d, "scale-raw.csv", "scale-summary.csv", scale_sum_cols, scale_row, err, errn);
}

/* ---- redaction ------------------------------------------------------------------------------- */

static void out_putn(char *out, size_t n, size_t *at, const char *s, size_t len)
{
	for (size_t i = 0; i < len && *at + 1 < n; i++)
		out[(*at)++] = s[i];
}

/* Length of a conninfo value at s: 'quoted with \ escapes' or up to white space. */
static size_t conninfo_value_len(const char *s)
{
	size_t i = 0;
	if (s[0] != '\'') {
		while (s[i] && s[i] != ' ' && s[i] != '\t' && s[i] != '\n')
			i++;
		return i;
	}
	for (i = 1; s[i] && s[i] != '\''; i++)
		if (s[i] == '\\' && s[i + 1])
			i++;
	return s[i] ? i + 1 : i;
}

void hr_redact_url(char *out, size_t n, const char *url)
{
	size_t at = 0, i = 0, len;
	if (!out || !n)
		return;
	out[0] = '\0';
	if (!url)
		return;
	len = strlen(url);
	int is_url = strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0;
	if (is_url) {
		size_t hs = strstr(url, "://") - url + 3;
		size_t he = hs + strcspn(url + hs, "/?#");
		const char *atsign = NULL;
		for (size_t k = hs; k < he; k++)
			if (url[k] == '@')
				atsign = url + k;
		const char *colon = atsign ? memchr(url + hs, ':', (size_t)(atsign - url) - hs) : NULL;
		if (colon) {
			out_putn(out, n, &at, url, (size_t)(colon - url) + 1);
			out_putn(out, n, &at, "***", 3);
			i = (size_t)(atsign - url);
		}
	}
	/* password=... (a URL's query parameter, or a conninfo keyword). */
	while (i < len) {
		int start = i == 0 || url[i - 1] == ' ' || url[i - 1] == '\t' ||
		            (is_url && (url[i - 1] == '?' || url[i - 1] == '&'));
		if (start && strncasecmp(url + i, "password", 8) == 0) {
			size_t k = i + 8;
			while (!is_url && (url[k] == ' ' || url[k] == '\t'))
				k++;
			if (url[k] == '=') {
				k++;
				while (!is_url && (url[k] == ' ' || url[k] == '\t'))
					k++;
				out_putn(out, n, &at, url + i, k - i);
				out_putn(out, n, &at, "***", 3);
				i = k + (is_url ? strcspn(url + k, "&#") : conninfo_value_len(url + k));
				continue;
			}
		}
		out_putn(out, n, &at, url + i, 1);
		i++;
	}
	out[at] = '\0';
}
