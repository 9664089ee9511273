/*
 * pg_refs.c - the PostgreSQL store's reads of refs: get_ref, get_refs (many names, one
 * statement per read_chunk of them, one round trip), get_ref_objects(_known) (a ref, its commit
 * and that commit's tree root in one statement) and list_refs (a range of names, called back
 * from a copy after the connection went back to the pool; on the gc's thread while mark() runs
 * it also tells the gc what it listed). Every read is one round trip on a pooled connection; one
 * that a hot standby cancels runs again (prolly__pg_read_again).
 */
#include "pg_int.h"

#include <stdlib.h>

typedef struct rctx {
	int found, bad, have_epoch;
	prolly_id value;
	uint64_t epoch, xmin; /* the epoch row's value and xmin (pg_epoch.c) */
} rctx;

/* ref_fn for a row whose epoch is column 1 and its xmin column xcol. */
static void ref_row(rctx *x, const PGresult *r, int xcol)
{
	if (PQntuples(r) != 1)
		return;
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

static int ref_fn(void *ctx, size_t qi, const PGresult *r)
{
	(void)qi;
	ref_row(ctx, r, 2);
	return 0;
}

int prolly__pg_get_ref(prolly_store *base, const char *name, prolly_id *out, uint64_t *epoch)
{
	pg_store *st = (pg_store *)base;
	pgconn *c = NULL;
	rctx x;
	pipe p;
	int rc, retries = 0;
	if ((rc = prolly_store_ref_name_check(name)))
		return rc;
	do {
		if ((rc = prolly__pg_pool_acquire(st, &c)))
			continue; /* to the test: a standby may have cancelled the statements' preparation */
		memset(&x, 0, sizeof(x));
		prolly__pg_pipe_init(&p, st, c, "get_ref", ref_fn, &x);
		const char *vals[1] = {name};
		int lens[1] = {(int)strlen(name)};
		prolly__pg_pipe_send(&p, Q_GETREF, 1, vals, lens);
		rc = prolly__pg_pipe_run(&p);
		prolly__pg_pool_done(st, c, &p);
	} while (rc && prolly__pg_read_again(st, rc, 0, &retries));
	if (rc)
		return rc;
	if (epoch && x.have_epoch)
		*epoch = prolly__pg_epoch_seen(st, x.epoch, x.xmin);
	if (x.bad)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "postgres: ref '%s' holds a value that is not "
		                        "%d bytes",
		                        name, PROLLY_ID_SIZE);
	if (!x.found)
		return prolly_set_error(PROLLY_ENOTFOUND, "postgres: ref '%s' not found", name);
	if (out)
		*out = x.value;
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

static int get_refs_once(prolly_store *base, const char *const *names, size_t n, prolly_id *out,
                         unsigned char *found, uint64_t *epoch)
{
	pg_store *st = (pg_store *)base;
	prolly_buf a = PROLLY_BUF_INIT;
	pgconn *c = NULL;
	mctx x;
	pipe p;
	int rc = 0, ran = 0;
	memset(found, 0, n); /* the names are valid (S3) */
	memset(&x, 0, sizeof(x));
	x.names = names;
	x.n = n;
	x.chunk = st->read_chunk;
	x.out = out;
	x.found = found;
	if ((rc = prolly__pg_pool_acquire(st, &c)))
		return rc;
	prolly__pg_pipe_init(&p, st, c, "get_refs", refs_fn, &x);
	for (size_t at = 0; at < n; at += x.chunk) {
		size_t m = PROLLY_MIN(x.chunk, n - at);
		if ((rc = prolly__pg_array_begin(&a, m, BYTEA_OID)))
			goto cleanup;
		for (size_t i = at; i < at + m && !rc; i++)
			rc = prolly__pg_array_add(&a, names[i], strlen(names[i]));
		if (rc || (rc = prolly__pg_array_too_big(a.size)))
			goto cleanup;
		const char *vals[1] = {(const char *)a.ptr};
		int lens[1] = {(int)a.size};
		prolly__pg_pipe_send(&p, Q_GETREFS, 1, vals, lens);
	}
	ran = 1;
	rc = prolly__pg_pipe_run(&p);
	if (rc == 0 && epoch && x.have_epoch)
		*epoch = prolly__pg_epoch_seen(st, x.epoch, x.xmin);
cleanup:
	/* statements queued without their Sync leave the connection unusable */
	prolly__pg_pool_release(st, c, p.broken || (!ran && p.queued > 0));
	prolly_buf_dispose(&a);
	return rc;
}

/* get_refs_once, run again while a hot standby cancels it (prolly__pg_read_again): its rows
 * reach the caller only when it succeeds, and each run starts from nothing found. */
int prolly__pg_get_refs(prolly_store *base, const char *const *names, size_t n, prolly_id *out,
                        unsigned char *found, uint64_t *epoch)
{
	int rc, retries = 0;
	while ((rc = get_refs_once(base, names, n, out, found, epoch)) &&
	       prolly__pg_read_again((pg_store *)base, rc, 0, &retries))
		;
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

/* get_ref and the two objects it leads to (see prolly/store.h): one statement, one round trip.
 * When the ref still names *known, the statement's joins find no key and read no node. */
int prolly__pg_get_ref_objects_known(prolly_store *base, const char *name, size_t follow,
                                     const prolly_id *known, prolly_id *out, uint64_t *epoch,
                                     prolly_store_found_fn found, void *payload)
{
	pg_store *st = (pg_store *)base;
	pgconn *c = NULL;
	unsigned char off[4];
	roctx x;
	pipe p;
	int rc, retries = 0;
	if ((rc = prolly_store_ref_name_check(name)))
		return rc;
	if (!found)
		return prolly_set_error(PROLLY_EINVAL, "postgres: get_ref_objects without a callback");
	prolly__pg_put_be32(off, (uint32_t)follow);
	do {
		memset(&x, 0, sizeof(x));
		if ((rc = prolly__pg_pool_acquire(st, &c)))
			continue; /* to the test: a standby may have cancelled the statements' preparation */
		x.found = found;
		x.payload = payload;
		prolly__pg_pipe_init(&p, st, c, "get_ref_objects", refobjs_fn, &x);
		/* An offset past any object's reach follows nothing (NULL). */
		const char *vals[3] = {name,
		                       follow <= INT32_MAX - PROLLY_ID_SIZE ? (const char *)off : NULL,
		                       known ? (const char *)known->bytes : NULL};
		int lens[3] = {(int)strlen(name), 4, PROLLY_ID_SIZE};
		prolly__pg_pipe_send(&p, Q_GETREFOBJS, 3, vals, lens);
		rc = prolly__pg_pipe_run(&p);
		prolly__pg_pool_done(st, c, &p);
		prolly__pg_cnt_add(&st->cnt.rows_read, x.rows);
		prolly__pg_cnt_add(&st->cnt.bytes_read, x.bytes);
	} while (rc && prolly__pg_read_again(st, rc, x.rows, &retries));
	if (rc)
		return rc;
	if (epoch && x.ref.have_epoch)
		*epoch = prolly__pg_epoch_seen(st, x.ref.epoch, x.ref.xmin);
	if (x.ref.bad)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "postgres: ref '%s' holds a value that is not %d bytes", name,
		                        PROLLY_ID_SIZE);
	if (!x.ref.found)
		return prolly_set_error(PROLLY_ENOTFOUND, "postgres: ref '%s' not found", name);
	if (out)
		*out = x.ref.value;
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

int prolly__pg_list_refs(prolly_store *base, const char *prefix, prolly_store_ref_fn fn,
                         void *payload)
{
	pg_store *st = (pg_store *)base;
	preflist l = {NULL, 0, 0};
	pgconn *c = NULL;
	char *hi = NULL;
	pipe p;
	int rc, retries = 0;
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
	do {
		prolly__pg_preflist_dispose(&l); /* the rows of a cancelled run */
		if ((rc = prolly__pg_pool_acquire(st, &c)))
			continue; /* to the test: a standby may have cancelled the statements' preparation */
		prolly__pg_pipe_init(&p, st, c, "list_refs", prolly__pg_list_fn, &l);
		const char *vals[2] = {plen ? prefix : "", hi};
		int lens[2] = {(int)plen, (int)hlen};
		prolly__pg_pipe_send(&p, hlen ? Q_LISTREFS : Q_LISTFROM, hlen ? 2 : 1, vals, lens);
		rc = prolly__pg_pipe_run(&p);
		prolly__pg_pool_done(st, c, &p);
	} while (rc && prolly__pg_read_again(st, rc, 0, &retries));
	if (rc)
		goto cleanup;
	/* The gc's mark(): remember what it saw. */
	rc = captured(st, &l);
	for (size_t i = 0; i < l.n && !rc; i++)
		rc = fn(payload, l.v[i].name, &l.v[i].value);
cleanup:
	prolly__pg_preflist_dispose(&l);
	free(hi);
	return rc;
}
