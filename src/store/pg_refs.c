/*
 * pg_refs.c - the PostgreSQL store's reads of refs: get_ref, get_refs (many names, one
 * statement per read_chunk of them, one round trip), get_ref_objects(_known) (a ref, its commit
 * and that commit's tree root in one statement) and list_refs (a range of names, called back
 * from a copy after the connection went back to the pool; on the gc's thread while mark() runs
 * it also tells the gc what it listed). Every read is one round trip on a pooled connection; one
 * that a hot standby cancels runs again (prolly__pg_read).
 */
#include "pg_int.h"

#include <stdlib.h>

typedef struct rctx {
	int found, bad, have_epoch, no_row; /* no_row: meta has no epoch row (Q_GETREF*) */
	prolly_id value;
	uint64_t epoch, xmin; /* the epoch row's value and xmin (pg_epoch.c) */
} rctx;

/* ref_fn for a row whose epoch is column 1 and its xmin column xcol. */
static void ref_row(rctx *x, const PGresult *r, int xcol)
{
	if (PQntuples(r) != 1) {
		x->no_row = 1;
		return;
	}
	if (prolly__pg_read_int8(r, 0, 1, &x->epoch) == 0)
		x->have_epoch = 1;
	prolly__pg_read_int8(r, 0, xcol, &x->xmin);
	if (!PQgetisnull(r, 0, 0)) {
		if (PQgetlength(r, 0, 0) != PROLLY_ID_SIZE)
			x->bad = 1;
		else {
			memcpy(x->value.bytes, PQgetvalue(r, 0, 0), PROLLY_ID_SIZE);
			x->found = 1;
		}
	}
}

/* A ref read whose statement found no epoch row in meta: every schema has one from its init on. */
static int no_epoch_row(pg_store *st)
{
	return prolly_set_error(PROLLY_ECORRUPT,
	                        "postgres: the schema's meta table at %s has no epoch row", st->target);
}

static int ref_fn(void *ctx, size_t qi, const PGresult *r)
{
	(void)qi;
	ref_row(ctx, r, 2);
	return 0;
}

/* get_ref: the name and its row. */
typedef struct gref {
	const char *name;
	rctx x;
} gref;

static int get_ref_once(pg_store *st, void *ctx, uint64_t *handed)
{
	gref *g = ctx;
	const char *vals[1] = {g->name};
	int lens[1] = {(int)strlen(g->name)};
	(void)handed;
	memset(&g->x, 0, sizeof(g->x));
	return prolly__pg_run1(st, "get_ref", Q_GETREF, NULL, 1, vals, lens, ref_fn, &g->x);
}

int prolly__pg_get_ref(prolly_store *base, const char *name, prolly_id *out, uint64_t *epoch)
{
	gref g = {name, {0}};
	int rc;
	if ((rc = prolly_store_ref_name_check(name)))
		return rc;
	if ((rc = prolly__pg_read((pg_store *)base, get_ref_once, &g)))
		return rc;
	if (epoch && g.x.have_epoch)
		*epoch = prolly__pg_epoch_seen((pg_store *)base, g.x.epoch, g.x.xmin);
	if (g.x.no_row)
		return no_epoch_row((pg_store *)base);
	if (g.x.bad)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "postgres: ref '%s' holds a value that is not "
		                        "%d bytes",
		                        name, PROLLY_ID_SIZE);
	if (!g.x.found)
		return prolly_set_error(PROLLY_ENOTFOUND, "postgres: ref '%s' not found", name);
	if (out)
		*out = g.x.value;
	return 0;
}

/* get_refs: one row per name, (ordinality, value or NULL, epoch, its row's xmin), Q_GETREFS. */
typedef struct mctx {
	const char *const *names;
	size_t n, chunk;
	prolly_id *out;
	unsigned char *found;
	uint64_t epoch, xmin; /* the greatest epoch read, and its row's xmin */
	int have_epoch;
} mctx;

static int refs_fn(void *ctx, size_t qi, const PGresult *r)
{
	mctx *x = ctx;
	int rows = PQntuples(r);
	for (int i = 0; i < rows; i++) {
		uint64_t ord, epoch;
		if (prolly__pg_read_int8(r, i, 0, &ord) || ord == 0 || ord > x->chunk ||
		    qi * x->chunk + (ord - 1) >= x->n)
			return prolly_set_error(PROLLY_ESTORE, "postgres: get_refs: a malformed row");
		size_t k = qi * x->chunk + (size_t)(ord - 1);
		if (prolly__pg_read_int8(r, i, 2, &epoch) == 0 && (!x->have_epoch || epoch > x->epoch)) {
			x->epoch = epoch;
			x->have_epoch = 1;
			x->xmin = 0;
			prolly__pg_read_int8(r, i, 3, &x->xmin);
		}
		if (PQgetisnull(r, i, 1))
			continue;
		if (PQgetlength(r, i, 1) != PROLLY_ID_SIZE)
			return prolly_set_error(PROLLY_ECORRUPT,
			                        "postgres: ref '%s' holds a value that is not %d bytes",
			                        x->names[k], PROLLY_ID_SIZE);
		memcpy(x->out[k].bytes, PQgetvalue(r, i, 1), PROLLY_ID_SIZE);
		x->found[k] = 1;
	}
	return 0;
}

/* One run of get_refs (read_once_fn): its rows reach the caller only when it returns, and each
 * run starts from nothing found. */
static int get_refs_once(pg_store *st, void *ctx, uint64_t *handed)
{
	mctx *x = ctx;
	prolly_buf a = PROLLY_BUF_INIT;
	pgconn *c = NULL;
	pipe p;
	int rc = 0, ran = 0;
	(void)handed;
	memset(x->found, 0, x->n); /* the names are valid (S3) */
	x->have_epoch = 0;
	x->epoch = x->xmin = 0;
	if ((rc = prolly__pg_pool_acquire(st, &c)))
		return rc;
	prolly__pg_pipe_init(&p, st, c, "get_refs", refs_fn, x);
	for (size_t at = 0; at < x->n; at += x->chunk) {
		size_t m = PROLLY_MIN(x->chunk, x->n - at);
		if ((rc = prolly__pg_array_begin(&a, m, BYTEA_OID)))
			goto cleanup;
		for (size_t i = at; i < at + m && !rc; i++)
			rc = prolly__pg_array_add(&a, x->names[i], strlen(x->names[i]));
		if (rc || (rc = prolly__pg_array_too_big(a.size)))
			goto cleanup;
		const char *vals[1] = {(const char *)a.ptr};
		int lens[1] = {(int)a.size};
		prolly__pg_pipe_send(&p, Q_GETREFS, 1, vals, lens);
	}
	ran = 1;
	rc = prolly__pg_pipe_run(&p);
cleanup:
	/* statements queued without their Sync leave the connection unusable */
	prolly__pg_pool_release(st, c, p.broken || (!ran && p.queued > 0));
	prolly_buf_dispose(&a);
	return rc;
}

int prolly__pg_get_refs(prolly_store *base, const char *const *names, size_t n, prolly_id *out,
                        unsigned char *found, uint64_t *epoch)
{
	pg_store *st = (pg_store *)base;
	mctx x;
	int rc;
	memset(&x, 0, sizeof(x));
	x.names = names;
	x.n = n;
	x.chunk = st->read_chunk;
	x.out = out;
	x.found = found;
	if ((rc = prolly__pg_read(st, get_refs_once, &x)) == 0 && epoch && x.have_epoch)
		*epoch = prolly__pg_epoch_seen(st, x.epoch, x.xmin);
	return rc;
}

typedef struct roctx {
	rctx ref;
	prolly_store_found_fn found;
	void *payload;
	uint64_t rows, bytes;
} roctx;

/* One row: (ref value, epoch, the object it names, the followed object, the epoch row's xmin).
 * found() is called only for a well-formed ref, in index order. */
static int refobjs_fn(void *ctx, size_t qi, const PGresult *r)
{
	roctx *x = ctx;
	int rc = 0;
	(void)qi;
	ref_row(&x->ref, r, 4);
	if (!x->ref.found || PQntuples(r) != 1 || PQnfields(r) != 5)
		return 0;
	for (int i = 0; i < 2 && !rc; i++) {
		if (PQgetisnull(r, 0, 2 + i))
			break;
		size_t len = (size_t)PQgetlength(r, 0, 2 + i);
		x->rows++;
		x->bytes += len;
		rc = x->found(x->payload, (size_t)i, PQgetvalue(r, 0, 2 + i), len);
	}
	return rc;
}

/* get_ref_objects: the ref's name, the follow offset (off, or NULL past any object's reach), the
 * commit the caller holds (known, or NULL) and the row. */
typedef struct groctx {
	const char *name;
	const unsigned char *off;
	const prolly_id *known;
	roctx x;
} groctx;

static int get_ref_objects_once(pg_store *st, void *ctx, uint64_t *handed)
{
	groctx *g = ctx;
	const char *vals[3] = {g->name, (const char *)g->off,
	                       g->known ? (const char *)g->known->bytes : NULL};
	int lens[3] = {(int)strlen(g->name), 4, PROLLY_ID_SIZE};
	g->x.rows = g->x.bytes = 0;
	memset(&g->x.ref, 0, sizeof(g->x.ref));
	int rc = prolly__pg_run1(st, "get_ref_objects", Q_GETREFOBJS, NULL, 3, vals, lens, refobjs_fn,
	                         &g->x);
	prolly__pg_cnt_add(&st->cnt.rows_read, g->x.rows);
	prolly__pg_cnt_add(&st->cnt.bytes_read, g->x.bytes);
	*handed = g->x.rows;
	return rc;
}

/* get_ref and the two objects it leads to (see prolly/store.h): one statement, one round trip.
 * When the ref still names *known, the statement's joins find no key and read no node. */
int prolly__pg_get_ref_objects_known(prolly_store *base, const char *name, size_t follow,
                                     const prolly_id *known, prolly_id *out, uint64_t *epoch,
                                     prolly_store_found_fn found, void *payload)
{
	unsigned char off[4];
	groctx g;
	int rc;
	if ((rc = prolly_store_ref_name_check(name)))
		return rc;
	if (!found)
		return prolly_set_error(PROLLY_EINVAL, "postgres: get_ref_objects without a callback");
	prolly__pg_put_be32(off, (uint32_t)follow);
	memset(&g, 0, sizeof(g));
	g.name = name;
	g.off = follow <= INT32_MAX - PROLLY_ID_SIZE ? off : NULL; /* past any object: follows none */
	g.known = known;
	g.x.found = found;
	g.x.payload = payload;
	if ((rc = prolly__pg_read((pg_store *)base, get_ref_objects_once, &g)))
		return rc;
	if (epoch && g.x.ref.have_epoch)
		*epoch = prolly__pg_epoch_seen((pg_store *)base, g.x.ref.epoch, g.x.ref.xmin);
	if (g.x.ref.no_row)
		return no_epoch_row((pg_store *)base);
	if (g.x.ref.bad)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "postgres: ref '%s' holds a value that is not %d bytes", name,
		                        PROLLY_ID_SIZE);
	if (!g.x.ref.found)
		return prolly_set_error(PROLLY_ENOTFOUND, "postgres: ref '%s' not found", name);
	if (out)
		*out = g.x.ref.value;
	return 0;
}

int prolly__pg_get_ref_objects(prolly_store *base, const char *name, size_t follow, prolly_id *out,
                               uint64_t *epoch, prolly_store_found_fn found, void *payload)
{
	return prolly__pg_get_ref_objects_known(base, name, follow, NULL, out, epoch, found, payload);
}

int prolly__pg_preflist_push(preflist *l, const char *name, size_t len, const prolly_id *value)
{
	if (PROLLY__GROW(l->v, l->cap, l->n + 1, 16))
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory listing refs");
	char *copy = malloc(len + 1);
	if (!copy)
		return prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory listing refs");
	memcpy(copy, name, len);
	copy[len] = 0;
	l->v[l->n].name = copy;
	l->v[l->n].len = len;
	l->v[l->n].value = *value;
	l->n++;
	return 0;
}

void prolly__pg_preflist_dispose(preflist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

int prolly__pg_list_fn(void *ctx, size_t qi, const PGresult *r)
{
	preflist *l = ctx;
	int rows = PQntuples(r), rc;
	(void)qi;
	for (int i = 0; i < rows; i++) {
		prolly_id v;
		size_t len = (size_t)PQgetlength(r, i, 0);
		const char *name = PQgetvalue(r, i, 0);
		if (PQgetisnull(r, i, 0) || PQgetlength(r, i, 1) != PROLLY_ID_SIZE ||
		    memchr(name, 0, len)) {
			size_t shown = strnlen(name, len < 64 ? len : 64); /* up to a NUL, at most 64 */
			return prolly_set_error(PROLLY_ECORRUPT,
			                        "postgres: the refs table holds a malformed row: name "
			                        "'%.*s%s' (%zu bytes%s), value of %d bytes (a ref value is "
			                        "%d bytes)",
			                        (int)shown, name, shown < len ? "..." : "", len,
			                        memchr(name, 0, len) ? ", a NUL in it" : "",
			                        PQgetlength(r, i, 1), PROLLY_ID_SIZE);
		}
		memcpy(v.bytes, PQgetvalue(r, i, 1), PROLLY_ID_SIZE);
		if ((rc = prolly__pg_preflist_push(l, PQgetvalue(r, i, 0), len, &v)))
			return rc;
	}
	return 0;
}

/* The refs list_refs returns on this thread for this store while a capture is set (the gc's
 * mark: what it started from). */
static _Thread_local pg_store *cap_store;
static _Thread_local preflist *cap_list;

void prolly__pg_refs_capture(pg_store *st, preflist *into)
{
	cap_store = st;
	cap_list = into;
}

static int captured(pg_store *st, const preflist *l)
{
	int rc = 0;
	if (cap_store == st && cap_list)
		for (size_t i = 0; i < l->n && !rc; i++)
			rc = prolly__pg_preflist_push(cap_list, l->v[i].name, l->v[i].len, &l->v[i].value);
	return rc;
}

/* list_refs: the range of names [lo, hi) (hi NULL: from lo on) and the rows gathered. */
typedef struct lctx {
	const char *lo, *hi;
	size_t lo_len, hi_len;
	preflist l;
} lctx;

static int list_once(pg_store *st, void *ctx, uint64_t *handed)
{
	lctx *x = ctx;
	const char *vals[2] = {x->lo, x->hi};
	int lens[2] = {(int)x->lo_len, (int)x->hi_len};
	(void)handed;
	prolly__pg_preflist_dispose(&x->l); /* the rows of a cancelled run */
	return prolly__pg_run1(st, "list_refs", x->hi ? Q_LISTREFS : Q_LISTFROM, NULL, x->hi ? 2 : 1,
	                       vals, lens, prolly__pg_list_fn, &x->l);
}

int prolly__pg_list_refs(prolly_store *base, const char *prefix, prolly_store_ref_fn fn,
                         void *payload)
{
	pg_store *st = (pg_store *)base;
	lctx x = {NULL, NULL, 0, 0, {NULL, 0, 0}};
	char *hi = NULL;
	int rc;
	size_t plen = prefix ? strlen(prefix) : 0;

	if (!fn)
		return prolly_set_error(PROLLY_EINVAL, "postgres: list_refs without a callback");
	/* Names from prefix (inclusive) to its successor (exclusive): the prefix with trailing 0xff
	 * bytes dropped and its last byte incremented; none if it is all 0xff. */
	size_t hlen = plen;
	if (plen) {
		if (!(hi = malloc(plen))) {
			rc = prolly_set_error(PROLLY_ENOMEM, "postgres: out of memory");
			goto cleanup;
		}
		memcpy(hi, prefix, plen);
		while (hlen && (unsigned char)hi[hlen - 1] == 0xff)
			hlen--;
		if (hlen)
			hi[hlen - 1] = (char)((unsigned char)hi[hlen - 1] + 1);
	}
	x.lo = plen ? prefix : "";
	x.lo_len = plen;
	x.hi = hlen ? hi : NULL;
	x.hi_len = hlen;
	if ((rc = prolly__pg_read(st, list_once, &x)))
		goto cleanup;
	/* The gc's mark(): remember what it saw. */
	rc = captured(st, &x.l);
	for (size_t i = 0; i < x.l.n && !rc; i++)
		rc = fn(payload, x.l.v[i].name, &x.l.v[i].value);
cleanup:
	prolly__pg_preflist_dispose(&x.l);
	free(hi);
	return rc;
}
