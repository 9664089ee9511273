/*
 * commit.c - commit objects: encoding, decoding, reading, creating.
 *
 * A commit is a content-addressed object stored beside the tree nodes: its id is the SHA-256 of
 * its encoded bytes, exactly like a node. It names a tree, its parent commits, a time and a
 * message. All integers are little-endian. With p parents and an m-byte message:
 *
 *   offset       size  field
 *   0            4     magic "PRLC" (PROLLY_COMMIT_MAGIC)
 *   4            1     format version, 1 (PROLLY_FORMAT_VERSION)
 *   5            32    tree id (root node of the commit's tree)
 *   37           4     p, parent count, u32, 0..PROLLY_COMMIT_MAX_PARENTS
 *   41           32*p  parent commit ids, pairwise distinct, in order (first parent first)
 *   41+32p       8     time_us, int64 (two's complement), microseconds since the Unix epoch, UTC
 *   49+32p       4     m, message length, u32, 0..PROLLY_COMMIT_MAX_MESSAGE
 *   53+32p       m     message bytes (no NUL byte; not otherwise interpreted)
 *   53+32p+m           end: the object is exactly this long
 *
 * The offsets have names in format.h (PROLLY__COMMIT_OFF_*, PROLLY__COMMIT_TAIL_*), which every
 * other file that reads a commit at a fixed offset uses, the PostgreSQL store's SQL included.
 *
 * Decoding checks, each failure PROLLY_ECORRUPT naming the commit id:
 *   CM1 at least the fixed 53 bytes are present;
 *   CM2 the magic is "PRLC" (a tree node's "PRLY" is reported as "a tree node, not a commit",
 *       checked first, so also for a node shorter than CM1's 53 bytes);
 *   CM3 the version is 1..PROLLY_FORMAT_VERSION (a greater one is PROLLY_EVERSION);
 *   CM4 p <= PROLLY_COMMIT_MAX_PARENTS and the parents fit in the bytes;
 *   CM5 the parents are pairwise distinct;
 *   CM6 m <= PROLLY_COMMIT_MAX_MESSAGE and the total size is exactly 53 + 32p + m;
 *   CM7 the message holds no NUL byte (it is handed out as a C string).
 * The hash (bytes hash to the id) is checked by the loader (prolly__load_raw) before decoding.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

/* The offsets above are named in format.h (the one place other files take them from). */
_Static_assert(PROLLY__COMMIT_OFF_VERSION == PROLLY__MAGIC_SIZE, "version after the magic");
_Static_assert(PROLLY__COMMIT_OFF_TREE == PROLLY__COMMIT_OFF_VERSION + 1, "tree after version");
_Static_assert(PROLLY__COMMIT_OFF_NPARENTS == PROLLY__COMMIT_OFF_TREE + PROLLY_ID_SIZE,
               "parent count after the tree id");
_Static_assert(PROLLY__COMMIT_OFF_PARENTS == PROLLY__COMMIT_OFF_NPARENTS + 4,
               "parents after the count");
_Static_assert(PROLLY__COMMIT_FIXED == PROLLY__COMMIT_OFF_PARENTS + PROLLY__COMMIT_TAIL_MESSAGE,
               "fixed part: header and tail");
#define COMMIT_FIXED PROLLY__COMMIT_FIXED
#define OFF_TREE PROLLY__COMMIT_OFF_TREE
#define OFF_NPARENTS PROLLY__COMMIT_OFF_NPARENTS
#define OFF_PARENTS PROLLY__COMMIT_OFF_PARENTS
#define TAIL_MLEN PROLLY__COMMIT_TAIL_MLEN
#define TAIL_MESSAGE PROLLY__COMMIT_TAIL_MESSAGE
#define PROLLY_COMMIT_MAX_PARENTS 64
#define PROLLY_COMMIT_MAX_MESSAGE PROLLY_MAX_MESSAGE

void prolly_commit_free(prolly_commit *c)
{
	if (!c)
		return;
	free(c->parents);
	free(c->message);
	free(c);
}

int prolly__commit_encode(prolly_buf *out, const prolly_id *tree, const prolly_id *parents,
                          size_t n_parents, int64_t time_us, const char *message)
{
	size_t mlen = message ? strlen(message) : 0;
	unsigned char hdr[OFF_PARENTS], tail[TAIL_MESSAGE];
	uint64_t t;
	int rc;

	if (n_parents > PROLLY_COMMIT_MAX_PARENTS)
		return prolly_set_error(PROLLY_EINVAL, "a commit has at most %d parents, not %zu",
		                        PROLLY_COMMIT_MAX_PARENTS, n_parents);
	if (n_parents && !parents)
		return prolly_set_error(PROLLY_EINVAL, "%zu parents given without an array", n_parents);
	if (mlen > PROLLY_COMMIT_MAX_MESSAGE)
		return prolly_set_error(PROLLY_ETOOBIG, "a commit message has at most %d bytes, not %zu",
		                        PROLLY_COMMIT_MAX_MESSAGE, mlen);
	for (size_t i = 0; i < n_parents; i++) {
		for (size_t j = 0; j < i; j++) {
			if (prolly_id_equal(&parents[i], &parents[j])) {
				char hex[PROLLY_ID_HEX_SIZE];
				prolly_id_to_hex(hex, &parents[i]);
				return prolly_set_error(PROLLY_EINVAL, "parent %s is listed twice", hex);
			}
		}
	}

	memcpy(hdr, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE);
	hdr[PROLLY__COMMIT_OFF_VERSION] = PROLLY_FORMAT_VERSION;
	memcpy(hdr + OFF_TREE, tree->bytes, PROLLY_ID_SIZE);
	prolly__wr32(hdr + OFF_NPARENTS, (uint32_t)n_parents);
	memcpy(&t, &time_us, sizeof(t));
	prolly__wr64(tail + PROLLY__COMMIT_TAIL_TIME, t);
	prolly__wr32(tail + TAIL_MLEN, (uint32_t)mlen);

	out->size = 0;
	if ((rc = prolly__buf_grow(out, COMMIT_FIXED + PROLLY_ID_SIZE * n_parents + mlen + 1)))
		return rc;
	if ((rc = prolly__buf_put(out, hdr, sizeof(hdr))))
		return rc;
	for (size_t i = 0; i < n_parents; i++)
		if ((rc = prolly__buf_put(out, parents[i].bytes, PROLLY_ID_SIZE)))
			return rc;
	if ((rc = prolly__buf_put(out, tail, sizeof(tail))))
		return rc;
	return prolly__buf_put(out, message, mlen);
}

static int corrupt(const prolly_id *id, const char *what)
{
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, id);
	return prolly_set_error(PROLLY_ECORRUPT, "commit %s is corrupt: %s", hex, what);
}

int prolly__commit_decode(prolly_commit **out, const prolly_id *id, const void *bytes, size_t size)
{
	const unsigned char *p = bytes;
	prolly_commit *c = NULL;
	uint32_t np, mlen;
	uint64_t t;
	size_t off;
	int rc = 0;

	/* CM2 before CM1: a tree node shorter than a commit's header is still named as one. */
	if (size >= PROLLY__MAGIC_SIZE && memcmp(p, PROLLY_NODE_MAGIC, PROLLY__MAGIC_SIZE) == 0)
		return corrupt(id, "it is a tree node, not a commit");
	if (size < COMMIT_FIXED) /* CM1 */
		return corrupt(id, "shorter than the fixed header");
	if (memcmp(p, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) != 0) /* CM2 */
		return corrupt(id, "bad magic");
	if (p[PROLLY__COMMIT_OFF_VERSION] == 0) /* CM3 */
		return corrupt(id, "version 0");
	if (p[PROLLY__COMMIT_OFF_VERSION] > PROLLY_FORMAT_VERSION) {
		char hex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hex, id);
		return prolly_set_error(PROLLY_EVERSION,
		                        "commit %s has format version %u; this library reads up to %d", hex,
		                        p[PROLLY__COMMIT_OFF_VERSION], PROLLY_FORMAT_VERSION);
	}
	np = prolly__rd32(p + OFF_NPARENTS);
	if (np > PROLLY_COMMIT_MAX_PARENTS || (size - COMMIT_FIXED) / PROLLY_ID_SIZE < np) /* CM4 */
		return corrupt(id, "parent count out of range");
	off = OFF_PARENTS + (size_t)PROLLY_ID_SIZE * np; /* the tail */
	for (uint32_t i = 0; i < np; i++)                /* CM5 */
		for (uint32_t j = 0; j < i; j++)
			if (memcmp(p + OFF_PARENTS + PROLLY_ID_SIZE * (size_t)i,
			           p + OFF_PARENTS + PROLLY_ID_SIZE * (size_t)j, PROLLY_ID_SIZE) == 0)
				return corrupt(id, "a parent is listed twice");
	t = prolly__rd64(p + off + PROLLY__COMMIT_TAIL_TIME);
	mlen = prolly__rd32(p + off + TAIL_MLEN);
	if (mlen > PROLLY_COMMIT_MAX_MESSAGE || size != off + TAIL_MESSAGE + mlen) /* CM6 */
		return corrupt(id, "message length does not match the size");
	if (mlen && memchr(p + off + TAIL_MESSAGE, 0, mlen)) /* CM7 */
		return corrupt(id, "NUL byte in the message");

	c = calloc(1, sizeof(*c));
	if (!c || !(c->message = malloc((size_t)mlen + 1)) ||
	    (np && !(c->parents = malloc((size_t)np * sizeof(*c->parents))))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory decoding a commit");
		goto cleanup;
	}
	c->id = *id;
	memcpy(c->tree.bytes, p + OFF_TREE, PROLLY_ID_SIZE);
	c->n_parents = np;
	for (uint32_t i = 0; i < np; i++)
		memcpy(c->parents[i].bytes, p + OFF_PARENTS + PROLLY_ID_SIZE * (size_t)i, PROLLY_ID_SIZE);
	memcpy(&c->time_us, &t, sizeof(t));
	if (mlen)
		memcpy(c->message, p + off + TAIL_MESSAGE, mlen);
	c->message[mlen] = 0;
	*out = c;
	c = NULL;
cleanup:
	prolly_commit_free(c);
	return rc;
}

typedef struct read_ctx {
	const prolly_id *id;
	prolly_commit *c;
	int rc;
} read_ctx;

static int on_commit(void *payload, size_t index, const void *data, size_t size)
{
	read_ctx *rc = payload;
	(void)index;
	if (rc->c)
		return 0;
	rc->rc = prolly__commit_decode(&rc->c, rc->id, data, size);
	return rc->rc;
}

int prolly_commit_read(prolly_commit **out, prolly_db *db, const prolly_id *id)
{
	read_ctx ctx = {id, NULL, 0};
	if (!out || !db || !id)
		return prolly_set_error(PROLLY_EINVAL, "prolly_commit_read: NULL argument");
	int rc = prolly__load_raw(db, id, 1, on_commit, &ctx);
	if (ctx.rc)
		rc = ctx.rc;
	if (rc)
		goto cleanup;
	if (!ctx.c) {
		char hex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hex, id);
		rc = prolly_set_error(PROLLY_ENOTFOUND, "commit %s not found in the %s store", hex,
		                      db->vt.kind);
		goto cleanup;
	}
	*out = ctx.c;
	ctx.c = NULL;
cleanup:
	prolly_commit_free(ctx.c);
	return rc;
}

typedef struct many_ctx {
	const prolly_id *ids;
	prolly_commit **out;
	int rc;
} many_ctx;

static int on_many(void *payload, size_t index, const void *data, size_t size)
{
	many_ctx *mc = payload;
	if (mc->out[index])
		return 0;
	mc->rc = prolly__commit_decode(&mc->out[index], &mc->ids[index], data, size);
	return mc->rc;
}

/* Reads n commits (out[] zeroed by the caller) in one call; a missing one is PROLLY_ENOTFOUND. */
int prolly__commits_read(prolly_db *db, const prolly_id *ids, size_t n, prolly_commit **out)
{
	many_ctx mc = {ids, out, 0};
	int rc = prolly__load_raw(db, ids, n, on_many, &mc);
	if (mc.rc)
		rc = mc.rc;
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (!out[i]) {
			char hex[PROLLY_ID_HEX_SIZE];
			prolly_id_to_hex(hex, &ids[i]);
			return prolly_set_error(PROLLY_ENOTFOUND, "commit %s not found in the %s store", hex,
			                        db->vt.kind);
		}
	}
	return 0;
}

int prolly_commits_read(prolly_commit **out, prolly_db *db, const prolly_id *ids, size_t n)
{
	int rc;
	if (!db || (n && (!out || !ids))) {
		if (out && n)
			memset(out, 0, n * sizeof(*out));
		return prolly_set_error(PROLLY_EINVAL, "prolly_commits_read: NULL db, out or ids");
	}
	if (!n)
		return 0;
	memset(out, 0, n * sizeof(*out));
	if ((rc = prolly__commits_read(db, ids, n, out)))
		for (size_t i = 0; i < n; i++) {
			prolly_commit_free(out[i]);
			out[i] = NULL;
		}
	return rc;
}

int prolly__is_commit_bytes(const void *data, size_t size)
{
	return size >= PROLLY__MAGIC_SIZE && memcmp(data, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) == 0;
}

static int not_a_commit(const prolly_id *id)
{
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, id);
	return prolly_set_error(PROLLY_EINVAL,
	                        "prolly_commit_create: parent %s is not a commit (a tree node or "
	                        "another object)",
	                        hex);
}

typedef struct parents_ctx {
	unsigned char *have;
	size_t bad; /* index of the first parent that is not a commit, or SIZE_MAX */
} parents_ctx;

static int on_parent(void *payload, size_t index, const void *data, size_t size)
{
	parents_ctx *pc = payload;
	pc->have[index] = 1;
	if (!prolly__is_commit_bytes(data, size) && pc->bad == SIZE_MAX)
		pc->bad = index;
	return 0;
}

/* ---- a commit the caller named ------------------------------------------------------------ */

typedef struct one_ctx {
	const prolly_id *id;
	prolly_commit *c;
	const char *other; /* what the object is when it is a known kind other than a commit */
	int rc;
} one_ctx;

static int on_one(void *payload, size_t index, const void *data, size_t size)
{
	one_ctx *o = payload;
	(void)index;
	if (o->c || o->other)
		return 0;
	if (size >= PROLLY__MAGIC_SIZE && memcmp(data, PROLLY_NODE_MAGIC, PROLLY__MAGIC_SIZE) == 0) {
		o->other = "tree";
		return 0;
	}
	if (size >= PROLLY__MAGIC_SIZE && memcmp(data, PROLLY_REFLOG_MAGIC, PROLLY__MAGIC_SIZE) == 0) {
		o->other = "reflog entry";
		return 0;
	}
	return o->rc = prolly__commit_decode(&o->c, o->id, data, size);
}

int prolly__commit_read_as(prolly_commit **out, prolly_db *db, const prolly_id *id,
                           const char *what)
{
	char hex[PROLLY_ID_HEX_SIZE];
	one_ctx o = {id, NULL, NULL, 0};
	int rc = prolly__load_raw(db, id, 1, on_one, &o);
	if (o.rc)
		rc = o.rc;
	if (rc) {
		prolly_commit_free(o.c);
		return rc;
	}
	prolly_id_to_hex(hex, id);
	if (o.other)
		return prolly_set_error(PROLLY_EINVAL, "'%s': %s is a %s, not a commit", what, hex,
		                        o.other);
	if (!o.c)
		return prolly_set_error(PROLLY_ENOTFOUND, "'%s': no commit %s", what, hex);
	*out = o.c;
	return 0;
}

int prolly__commit_named_error(prolly_db *db, int rc, const prolly_id *id, const char *what)
{
	char msg[1024], hex[PROLLY_ID_HEX_SIZE];
	one_ctx o = {id, NULL, NULL, 0};
	if (rc != PROLLY_ECORRUPT || !db || !id)
		return rc;
	snprintf(msg, sizeof msg, "%s", prolly_last_error());
	int lr = prolly__load_raw(db, id, 1, on_one, &o);
	prolly_commit_free(o.c);
	if (lr == 0 && !o.rc && o.other) {
		prolly_id_to_hex(hex, id);
		return prolly_set_error(PROLLY_EINVAL, "'%s': %s is a %s, not a commit", what, hex,
		                        o.other);
	}
	return prolly_set_error(rc, "%s", msg);
}

/* The parents of a commit being made are commits in the store (K6's history half: a commit
 * published over a missing parent, or over a tree named as one, breaks log, merge-base, gc and
 * sync later). A parent made in this txn, or read as a head at the txn's gc epoch (H4 in
 * head_memo.c), is known without a read; the others are read in one call (their magic tells a
 * commit), and the txn's epoch check keeps a gc from removing them before its write. */
static int parents_stored(prolly_txn *txn, const prolly_id *parents, size_t n)
{
	prolly_id ask[PROLLY_COMMIT_MAX_PARENTS];
	unsigned char have[PROLLY_COMMIT_MAX_PARENTS];
	parents_ctx pc = {have, SIZE_MAX};
	const void *bytes;
	size_t k = 0, size;
	int rc;
	for (size_t i = 0; i < n; i++) {
		if (prolly__txn_find_raw(txn, &parents[i], &bytes, &size) == 0) {
			if (!prolly__is_commit_bytes(bytes, size))
				return not_a_commit(&parents[i]);
		} else if (!prolly__seen_at(&txn->db->heads, &parents[i], txn->epoch)) {
			ask[k++] = parents[i];
		}
	}
	if (!k)
		return 0;
	memset(have, 0, k);
	if ((rc = prolly__load_raw(txn->db, ask, k, on_parent, &pc)))
		return rc;
	if (pc.bad != SIZE_MAX)
		return not_a_commit(&ask[pc.bad]);
	for (size_t i = 0; i < k; i++) {
		if (!have[i]) {
			char hex[PROLLY_ID_HEX_SIZE];
			uint64_t now = 0;
			prolly_id_to_hex(hex, &ask[i]);
			/* A gc since the txn's snapshot may have removed a parent read as a head then
			 * (the branch moved on): a lost race, which the write's epoch check would refuse
			 * anyway. With the epoch unchanged the parent was never there. */
			if (prolly__store_epoch(txn->db, &now) == 0 && now != txn->epoch)
				return prolly_set_error(PROLLY_ECONFLICT,
				                        "parent commit %s is no longer in the %s store: a gc "
				                        "ran since this txn began (epoch %llu, now %llu); retry",
				                        hex, txn->db->vt.kind, (unsigned long long)txn->epoch,
				                        (unsigned long long)now);
			return prolly_set_error(PROLLY_ENOTFOUND,
			                        "prolly_commit_create: parent commit %s is not in the %s store",
			                        hex, txn->db->vt.kind);
		}
	}
	return 0;
}

int prolly__commit_make(prolly_id *out, prolly_buf *bytes, prolly_txn *txn, const prolly_id *tree,
                        const prolly_id *parents, size_t n_parents, int64_t time_us,
                        const char *message)
{
	prolly__nodeset ws;
	pnode *root;
	prolly_id id;
	int rc;

	if (!txn || !tree || !out) {
		rc = prolly_set_error(PROLLY_EINVAL, "prolly_commit_create needs a txn, a tree and out");
		goto cleanup;
	}
	if ((rc = prolly__txn_usable(txn, "prolly_commit_create")))
		goto cleanup;
	/* K6 (prolly/store.h): a store holds a commit only with its tree. The tree is almost always
	 * in the txn or the cache (just made or just read), so this costs no store call. */
	prolly__nodeset_init(&ws);
	rc = prolly__load_root(txn->db, &ws, tree, &root);
	prolly__nodeset_dispose(&ws);
	if (rc) {
		if (rc == PROLLY_ENOTFOUND) {
			char hex[PROLLY_ID_HEX_SIZE];
			prolly_id_to_hex(hex, tree);
			rc = prolly_set_error(rc, "prolly_commit_create: tree %s is not in the store", hex);
		}
		goto cleanup;
	}
	if (!time_us)
		time_us = prolly__db_now(txn->db); /* opts.clock_us when set */
	if ((rc = prolly__commit_encode(bytes, tree, parents, n_parents, time_us, message)) ||
	    (rc = parents_stored(txn, parents, n_parents)))
		goto cleanup;
	prolly__hash(&id, bytes->ptr, bytes->size);
	if ((rc = prolly__txn_add_raw(txn, &id, bytes->ptr, bytes->size)))
		goto cleanup;
	*out = id;
cleanup:
	return rc;
}

int prolly_commit_create(prolly_id *out, prolly_txn *txn, const prolly_id *tree,
                         const prolly_id *parents, size_t n_parents, int64_t time_us,
                         const char *message)
{
	prolly_buf bytes = PROLLY_BUF_INIT;
	int rc = prolly__commit_make(out, &bytes, txn, tree, parents, n_parents, time_us, message);
	prolly_buf_dispose(&bytes);
	return rc;
}
