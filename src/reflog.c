/*
 * reflog.c - reflog entries: the format, recording them with every ref move, listing them, and
 * restoring a deleted branch from them.
 *
 * A reflog entry is a content-addressed object stored beside nodes and commits (its id is the
 * SHA-256 of its bytes). It says that a ref moved from an old value to a new one, when, by what
 * operation, and why. All integers are little-endian. With an o-byte operation, an r-byte ref
 * name and an m-byte message:
 *
 *   offset     size  field
 *   0          4     magic "PRLG" (PROLLY_REFLOG_MAGIC)
 *   4          1     format version, 1 (REFLOG_VERSION)
 *   5          1     flags: bit 0 the old value exists, bit 1 the new value exists; others 0
 *   6          8     time_us, int64 (two's complement), microseconds since the Unix epoch, UTC
 *   14         32    old value (all zero when absent)
 *   46         32    new value (all zero when absent)
 *   78         1     o, operation length, 1..PROLLY__REASON_MAX
 *   79         o     operation: bytes of [a-z-]
 *   79+o       2     r, ref name length, u16, 1..PROLLY_MAX_REF_NAME
 *   81+o       r     ref name (no NUL byte)
 *   81+o+r     2     m, message length, u16, 0..REFLOG_MAX_MESSAGE
 *   83+o+r     m     message (no NUL byte)
 *   83+o+r+m         end: the object is exactly this long
 *
 * Decoding checks, each failure PROLLY_ECORRUPT naming the entry id:
 *   R1  at least the fixed 83 bytes are present;
 *   R2  the magic is "PRLG";
 *   R3  the version is 1..REFLOG_VERSION (a greater one is PROLLY_EVERSION);
 *   R4  only flag bits 0 and 1 are set, and an absent value is all zero bytes;
 *   R5  1 <= o <= PROLLY__REASON_MAX and the operation is made of [a-z-];
 *   R6  1 <= r <= PROLLY_MAX_REF_NAME, the name fits in the bytes and holds no NUL;
 *   R7  m <= REFLOG_MAX_MESSAGE, the total size is exactly 83 + o + r + m, no NUL in the message.
 * The hash (bytes hash to the id) is checked by the loader (prolly__load_raw) before decoding.
 *
 * The offsets have names in format.h (PROLLY__REFLOG_OFF_*, PROLLY__REFLOG_OPTAIL_*,
 * PROLLY__REFLOG_REFTAIL_*, PROLLY__REFLOG_FIXED).
 *
 * Naming. Each entry has a ref of its own, written in the same atomic store write as the move
 * it records, so that recording needs no read and no extra round trip:
 *
 *   logs/<ref>@<16 hex digits: time_us><8 hex digits: the first 4 bytes of the entry id>
 *
 * The name sorts by time within a ref ('@' cannot occur in a branch or tag name, so a ref's
 * entries are exactly the names starting with "logs/<ref>@" and holding no other '@'; a ref
 * another client wrote under a refused name such as "refs/heads/main@x" is reflogged too, and
 * its entries, which start with "logs/refs/heads/main@", are left out of main's). The longest is 5 + 211 + 1 + 24 =
 * 241 bytes for a 200-byte branch name, within PROLLY_MAX_REF_NAME. The entry's ref is created
 * with PROLLY_REF_EXPECT_ANY: it can only exist already holding the same entry (same name, same
 * time and id prefix), so a reflog entry never makes a write fail.
 *
 * Which moves are recorded: every update of a ref under refs/heads/ or refs/tags/ that
 * prolly_txn_commit publishes, whoever queued it (invariant L1). gc expires entries older than
 * opts.reflog_days by deleting their refs (compare-and-swap), then sweeps their objects; so a
 * listing that meets an entry's ref but not its object skips it when the ref is gone by then
 * (invariant L2, drop_expired), and reports the loss when it is not.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

/* The offsets above are named in format.h (the one place other files take them from). */
_Static_assert(PROLLY__REFLOG_OFF_VERSION == PROLLY__MAGIC_SIZE, "version after the magic");
_Static_assert(PROLLY__REFLOG_OFF_FLAGS == PROLLY__REFLOG_OFF_VERSION + 1, "flags after version");
_Static_assert(PROLLY__REFLOG_OFF_TIME == PROLLY__REFLOG_OFF_FLAGS + 1, "time after the flags");
_Static_assert(PROLLY__REFLOG_OFF_OLD == PROLLY__REFLOG_OFF_TIME + 8, "old value after the time");
_Static_assert(PROLLY__REFLOG_OFF_NEW == PROLLY__REFLOG_OFF_OLD + PROLLY_ID_SIZE, "then new value");
_Static_assert(PROLLY__REFLOG_OFF_OPLEN == PROLLY__REFLOG_OFF_NEW + PROLLY_ID_SIZE, "then o");
_Static_assert(PROLLY__REFLOG_OFF_OP == PROLLY__REFLOG_OFF_OPLEN + 1, "operation after o");
_Static_assert(PROLLY__REFLOG_OPTAIL_REF == PROLLY__REFLOG_OPTAIL_RLEN + 2, "ref name after r");
_Static_assert(PROLLY__REFLOG_REFTAIL_MESSAGE == PROLLY__REFLOG_REFTAIL_MLEN + 2,
               "message after m");
_Static_assert(PROLLY__REFLOG_FIXED == PROLLY__REFLOG_OFF_OP + PROLLY__REFLOG_OPTAIL_REF +
                                           PROLLY__REFLOG_REFTAIL_MESSAGE,
               "fixed part: header and the two length fields");
#define REFLOG_VERSION 1
#define REFLOG_FIXED PROLLY__REFLOG_FIXED
#define OFF_FLAGS PROLLY__REFLOG_OFF_FLAGS
#define OFF_TIME PROLLY__REFLOG_OFF_TIME
#define OFF_OLD PROLLY__REFLOG_OFF_OLD
#define OFF_NEW PROLLY__REFLOG_OFF_NEW
#define OFF_OPLEN PROLLY__REFLOG_OFF_OPLEN
#define OFF_OP PROLLY__REFLOG_OFF_OP
#define REFLOG_MAX_MESSAGE 4096
#define HAS_OLD 1u
#define HAS_NEW 2u
#define HEADS_PREFIX "refs/heads/"
#define TAGS_PREFIX "refs/tags/"

int64_t prolly__db_now(const prolly_db *db)
{
	return db && db->opts.clock_us ? db->opts.clock_us : prolly__now_us();
}

static int op_valid(const char *op, size_t len)
{
	if (len == 0 || len > PROLLY__REASON_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((op[i] >= 'a' && op[i] <= 'z') || op[i] == '-'))
			return 0;
	return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Encoding and decoding                                                                      */
/* ------------------------------------------------------------------------------------------ */

int prolly__reflog_encode(prolly_buf *out, int64_t time_us, const prolly_id *old_id,
                          const prolly_id *new_id, const char *op, const char *ref, const char *msg)
{
	size_t o = strlen(op), r = strlen(ref), m = msg ? strlen(msg) : 0;
	unsigned char hdr[OFF_OP], u16[2];
	uint64_t t;
	int rc;
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, PROLLY_REFLOG_MAGIC, PROLLY__MAGIC_SIZE);
	hdr[PROLLY__REFLOG_OFF_VERSION] = REFLOG_VERSION;
	hdr[OFF_FLAGS] = (unsigned char)((old_id ? HAS_OLD : 0) | (new_id ? HAS_NEW : 0));
	memcpy(&t, &time_us, sizeof(t));
	prolly__wr64(hdr + OFF_TIME, t);
	if (old_id)
		memcpy(hdr + OFF_OLD, old_id->bytes, PROLLY_ID_SIZE);
	if (new_id)
		memcpy(hdr + OFF_NEW, new_id->bytes, PROLLY_ID_SIZE);
	hdr[OFF_OPLEN] = (unsigned char)o;
	out->size = 0;
	if ((rc = prolly__buf_put(out, hdr, sizeof(hdr))) || (rc = prolly__buf_put(out, op, o)))
		return rc;
	u16[0] = (unsigned char)r;
	u16[1] = (unsigned char)(r >> 8);
	if ((rc = prolly__buf_put(out, u16, 2)) || (rc = prolly__buf_put(out, ref, r)))
		return rc;
	u16[0] = (unsigned char)m;
	u16[1] = (unsigned char)(m >> 8);
	if ((rc = prolly__buf_put(out, u16, 2)))
		return rc;
	return prolly__buf_put(out, msg, m);
}

static int corrupt(const prolly_id *id, const char *what)
{
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, id);
	return prolly_set_error(PROLLY_ECORRUPT, "reflog entry %s is corrupt: %s", hex, what);
}

static char *dup_bytes(const unsigned char *p, size_t n)
{
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, p, n);
		s[n] = 0;
	}
	return s;
}

void prolly__reflog_dispose(prolly__reflog *e)
{
	free(e->ref);
	free(e->op);
	free(e->message);
	memset(e, 0, sizeof(*e));
}

int prolly__reflog_decode(prolly__reflog *out, const prolly_id *id, const void *bytes, size_t size)
{
	static const prolly_id zero;
	const unsigned char *p = bytes, *optail, *reftail;
	size_t o, r, m;
	uint64_t t;

	memset(out, 0, sizeof(*out));
	if (size < REFLOG_FIXED) /* R1 */
		return corrupt(id, "shorter than the fixed header");
	if (memcmp(p, PROLLY_REFLOG_MAGIC, PROLLY__MAGIC_SIZE) != 0) /* R2 */
		return corrupt(id, "bad magic");
	if (p[PROLLY__REFLOG_OFF_VERSION] == 0) /* R3 */
		return corrupt(id, "version 0");
	if (p[PROLLY__REFLOG_OFF_VERSION] > REFLOG_VERSION) {
		char hex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hex, id);
		return prolly_set_error(
		    PROLLY_EVERSION, "reflog entry %s has format version %u; this library reads up to %d",
		    hex, p[PROLLY__REFLOG_OFF_VERSION], REFLOG_VERSION);
	}
	if (p[OFF_FLAGS] & ~(HAS_OLD | HAS_NEW)) /* R4 */
		return corrupt(id, "unknown flags");
	out->has_old = (p[OFF_FLAGS] & HAS_OLD) != 0;
	out->has_new = (p[OFF_FLAGS] & HAS_NEW) != 0;
	memcpy(out->old_id.bytes, p + OFF_OLD, PROLLY_ID_SIZE);
	memcpy(out->new_id.bytes, p + OFF_NEW, PROLLY_ID_SIZE);
	if ((!out->has_old && !prolly_id_equal(&out->old_id, &zero)) ||
	    (!out->has_new && !prolly_id_equal(&out->new_id, &zero)))
		return corrupt(id, "an absent value is not zero");
	o = p[OFF_OPLEN];
	if (size < REFLOG_FIXED + o ||
	    !op_valid((const char *)p + OFF_OP, o)) /* R5: fits, then bytes */
		return corrupt(id, "bad operation");
	optail = p + OFF_OP + o;
	r = (size_t)optail[PROLLY__REFLOG_OPTAIL_RLEN] | (size_t)optail[PROLLY__REFLOG_OPTAIL_RLEN + 1]
	                                                     << 8;
	if (r == 0 || r > PROLLY_MAX_REF_NAME || size < REFLOG_FIXED + o + r ||
	    memchr(optail + PROLLY__REFLOG_OPTAIL_REF, 0, r)) /* R6 */
		return corrupt(id, "bad ref name");
	reftail = optail + PROLLY__REFLOG_OPTAIL_REF + r;
	m = (size_t)reftail[PROLLY__REFLOG_REFTAIL_MLEN] |
	    (size_t)reftail[PROLLY__REFLOG_REFTAIL_MLEN + 1] << 8;
	if (m > REFLOG_MAX_MESSAGE || size != REFLOG_FIXED + o + r + m ||
	    (m && memchr(reftail + PROLLY__REFLOG_REFTAIL_MESSAGE, 0, m))) /* R7 */
		return corrupt(id, "message length does not match the size");
	t = prolly__rd64(p + OFF_TIME);
	memcpy(&out->time_us, &t, sizeof(t));
	out->id = *id;
	out->op = dup_bytes(p + OFF_OP, o);
	out->ref = dup_bytes(optail + PROLLY__REFLOG_OPTAIL_REF, r);
	out->message = dup_bytes(reftail + PROLLY__REFLOG_REFTAIL_MESSAGE, m);
	if (!out->op || !out->ref || !out->message) {
		prolly__reflog_dispose(out);
		return prolly_set_error(PROLLY_ENOMEM, "out of memory decoding a reflog entry");
	}
	return 0;
}

int prolly__reflog_name_time(const char *name, int64_t *time_us)
{
	const char *at = strrchr(name, '@');
	uint64_t t = 0;
	if (strncmp(name, PROLLY__LOGS_PREFIX, PROLLY__LOGS_PREFIX_LEN) != 0 || !at ||
	    strlen(at + 1) != 24)
		return 0;
	/* Reflog names are written with %x: an upper-case digit marks a name this file did not make. */
	if (prolly__hex_span(at + 1, 24, 1) != 24)
		return 0;
	for (int i = 0; i < 16; i++)
		t = t << 4 | (uint64_t)prolly__hexval((unsigned char)at[1 + i]);
	*time_us = t > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)t;
	return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Recording (L1: called by prolly_txn_commit for every write it publishes)                   */
/* ------------------------------------------------------------------------------------------ */

int prolly_txn_set_reason(prolly_txn *txn, const char *operation, const char *message)
{
	char *copy = NULL;
	if (!txn || !operation || !op_valid(operation, strlen(operation)))
		return prolly_set_error(PROLLY_EINVAL,
		                        "a reflog operation has 1 to %d bytes of a-z and '-', not '%.40s'",
		                        PROLLY__REASON_MAX, operation ? operation : "(null)");
	if (message && strlen(message) > REFLOG_MAX_MESSAGE)
		return prolly_set_error(PROLLY_EINVAL, "a reflog message has at most %d bytes, not %zu",
		                        REFLOG_MAX_MESSAGE, strlen(message));
	if (txn->done)
		return prolly_set_error(PROLLY_EINVAL,
		                        "prolly_txn_set_reason: the txn was already committed");
	if (message && !(copy = strdup(message)))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory setting a txn's reason");
	memcpy(txn->reason, operation, strlen(operation) + 1);
	free(txn->reason_msg);
	txn->reason_msg = copy;
	return 0;
}

static int logged(const char *name)
{
	return strncmp(name, HEADS_PREFIX, sizeof(HEADS_PREFIX) - 1) == 0 ||
	       strncmp(name, TAGS_PREFIX, sizeof(TAGS_PREFIX) - 1) == 0;
}

/* The default operation of an update (see prolly_txn_set_reason). */
static const char *default_op(prolly_txn *txn, const prolly_ref_update *u)
{
	const void *bytes;
	size_t size;
	if (u->remove)
		return "delete";
	if (prolly__txn_find_raw(txn, &u->value, &bytes, &size) == 0 &&
	    size >= PROLLY__COMMIT_OFF_PARENTS &&
	    memcmp(bytes, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) == 0)
		return prolly__rd32((const unsigned char *)bytes + PROLLY__COMMIT_OFF_NPARENTS) >= 2
		           ? "merge"
		           : "commit";
	return u->expect == PROLLY_REF_EXPECT_ABSENT ? "create" : "move";
}

int prolly__reflog_record(prolly_txn *txn, prolly_ref_update **refs, size_t *n_refs, char **names)
{
	prolly_buf bytes = PROLLY_BUF_INIT;
	size_t n = txn->n_refs, k = 0;
	int64_t now = prolly__db_now(txn->db);
	int rc = 0;

	*refs = NULL;
	*names = NULL;
	*n_refs = 0;
	for (size_t i = 0; i < n; i++)
		k += logged(txn->refs[i].name) != 0;
	if (!(*refs = malloc((n + k ? n + k : 1) * sizeof(**refs))) ||
	    !(*names = malloc((k ? k : 1) * (PROLLY_MAX_REF_NAME + 1)))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory recording %zu reflog entries", k);
		goto cleanup;
	}
	if (n)
		memcpy(*refs, txn->refs, n * sizeof(**refs));
	k = 0;
	for (size_t i = 0; i < n; i++) {
		const prolly_ref_update *u = &txn->refs[i];
		char *name = *names + k * (PROLLY_MAX_REF_NAME + 1);
		prolly_id id;
		if (!logged(u->name))
			continue;
		const char *op = txn->reason[0] ? txn->reason : default_op(txn, u);
		if ((rc = prolly__reflog_encode(
		         &bytes, now, u->expect == PROLLY_REF_EXPECT_VALUE ? &u->expected : NULL,
		         u->remove ? NULL : &u->value, op, u->name, txn->reason_msg)))
			goto cleanup;
		prolly__hash(&id, bytes.ptr, bytes.size);
		int len = snprintf(name, PROLLY_MAX_REF_NAME + 1, "%s%s@%016llx%02x%02x%02x%02x",
		                   PROLLY__LOGS_PREFIX, u->name, (unsigned long long)(now < 0 ? 0 : now),
		                   id.bytes[0], id.bytes[1], id.bytes[2], id.bytes[3]);
		if (len < 0 || len > PROLLY_MAX_REF_NAME) {
			rc = prolly_set_error(PROLLY_EINVAL, "ref '%.60s...' is too long to be reflogged",
			                      u->name);
			goto cleanup;
		}
		if ((rc = prolly__txn_add_raw(txn, &id, bytes.ptr, bytes.size)))
			goto cleanup;
		prolly_ref_update *e = &(*refs)[n + k];
		memset(e, 0, sizeof(*e));
		e->name = name;
		e->expect = PROLLY_REF_EXPECT_ANY;
		e->value = id;
		k++;
	}
	*n_refs = n + k;
cleanup:
	prolly_buf_dispose(&bytes);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Listing                                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef struct lref {
	char *name;
	prolly_id id;
} lref;

typedef struct list_ctx {
	size_t one_ref; /* the prefix's length when it names one ref ("logs/REF@"), else 0 */
	lref *v;
	size_t n, cap;
	prolly__reflog *e; /* decoded, parallel to v */
	int *have;
	int rc;
} list_ctx;

static int on_log_ref(void *payload, const char *name, const prolly_id *value)
{
	list_ctx *lc = payload;
	/* "<time><id>" follows the prefix of one ref's entries; a name with another '@' there is
	 * an entry of a longer ref ("logs/refs/heads/main@x@..."), written under a refused name */
	if (lc->one_ref && strchr(name + lc->one_ref, '@'))
		return 0;
	if (PROLLY__GROW(lc->v, lc->cap, lc->n + 1, 32))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory listing the reflog");
	if (!(lc->v[lc->n].name = strdup(name)))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory listing the reflog");
	lc->v[lc->n].id = *value;
	lc->n++;
	return 0;
}

static int on_entry(void *payload, size_t index, const void *data, size_t size)
{
	list_ctx *lc = payload;
	if (lc->have[index])
		return 0;
	if ((lc->rc = prolly__reflog_decode(&lc->e[index], &lc->v[index].id, data, size)))
		return lc->rc;
	lc->have[index] = 1;
	return 0;
}

/* L2: an entry listed whose object the load did not find was expired by a gc in between (it
 * deletes the entry's ref, then sweeps the object) when its ref is gone now: it is left out, as
 * if the listing had come after the gc. When its ref is still there the store lost the object
 * (PROLLY_ECORRUPT). Nothing is changed unless every missing entry is accounted for. */
static int drop_expired(prolly_db *db, list_ctx *lc)
{
	size_t k = 0;
	for (size_t i = 0; i < lc->n; i++) {
		if (lc->have[i])
			continue;
		int r = db->vt.get_ref(db->store, lc->v[i].name, NULL, NULL);
		if (r == 0)
			return prolly_set_error(PROLLY_ECORRUPT, "reflog entry '%s' is missing from the store",
			                        lc->v[i].name);
		if (r != PROLLY_ENOTFOUND)
			return r;
	}
	for (size_t i = 0; i < lc->n; i++) {
		if (!lc->have[i]) {
			free(lc->v[i].name); /* never decoded: lc->e[i] holds nothing */
			continue;
		}
		lc->v[k] = lc->v[i];
		lc->e[k] = lc->e[i];
		lc->have[k++] = 1;
	}
	lc->n = k;
	return 0;
}

/* A name whose reflog is listed: a valid branch or tag name, or one of 64 hex digits that an
 * older library made, which is listed and read by that name too (branch.c BR1). */
static int readable_name(const char *name)
{
	int rc = prolly_branch_name_valid(name);
	return rc == PROLLY_EINVAL && !prolly__branch_name_check(name, 1) ? 0 : rc;
}

/* "logs/<full ref>@" for a branch name or full ref name, "logs/" for NULL. */
static int log_prefix(char out[PROLLY_MAX_REF_NAME + 1], const char *ref)
{
	int rc;
	if (!ref) {
		snprintf(out, PROLLY_MAX_REF_NAME + 1, "%s", PROLLY__LOGS_PREFIX);
		return 0;
	}
	if (strncmp(ref, "refs/", 5) == 0) {
		/* The name under refs/heads/ or refs/tags/ follows the branch name rules, as the refs
		 * whose moves are logged do (a name that breaks them has no reflog to list). */
		size_t pl = strncmp(ref, TAGS_PREFIX, sizeof(TAGS_PREFIX) - 1) == 0
		                ? sizeof(TAGS_PREFIX) - 1
		                : sizeof(HEADS_PREFIX) - 1;
		if (!logged(ref) || strlen(ref) > PROLLY_MAX_REF_NAME - 30 || strchr(ref, '@'))
			return prolly_set_error(PROLLY_EINVAL, "no reflog is kept for ref '%.60s'", ref);
		if ((rc = readable_name(ref + pl)))
			return prolly_set_error(rc, "'%.60s' is not a branch or tag ref: %s", ref,
			                        prolly_last_error());
		snprintf(out, PROLLY_MAX_REF_NAME + 1, "%s%s@", PROLLY__LOGS_PREFIX, ref);
		return 0;
	}
	if ((rc = readable_name(ref)))
		return rc;
	snprintf(out, PROLLY_MAX_REF_NAME + 1, "%s%s%s@", PROLLY__LOGS_PREFIX, HEADS_PREFIX, ref);
	return 0;
}

int prolly_reflog(prolly_db *db, const char *ref, prolly_reflog_fn fn, void *payload)
{
	char prefix[PROLLY_MAX_REF_NAME + 1];
	list_ctx lc;
	prolly_id *ids = NULL;
	int rc;

	memset(&lc, 0, sizeof(lc));
	if (!db || !fn)
		return prolly_set_error(PROLLY_EINVAL, "prolly_reflog needs a handle and a callback");
	if ((rc = log_prefix(prefix, ref)))
		return rc;
	lc.one_ref = ref ? strlen(prefix) : 0;
	if ((rc = db->vt.list_refs(db->store, prefix, on_log_ref, &lc)))
		goto cleanup;
	if (!lc.n)
		goto cleanup;
	if (!(ids = malloc(lc.n * sizeof(*ids))) || !(lc.e = calloc(lc.n, sizeof(*lc.e))) ||
	    !(lc.have = calloc(lc.n, sizeof(*lc.have)))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory reading %zu reflog entries", lc.n);
		goto cleanup;
	}
	for (size_t i = 0; i < lc.n; i++)
		ids[i] = lc.v[i].id;
	rc = prolly__load_raw(db, ids, lc.n, on_entry, &lc);
	if (lc.rc)
		rc = lc.rc;
	if (rc)
		goto cleanup;
	if ((rc = drop_expired(db, &lc)))
		goto cleanup;
	for (size_t i = 0; i < lc.n; i++) {
		const char *at = strrchr(lc.v[i].name, '@');
		size_t rlen = at ? (size_t)(at - lc.v[i].name) - PROLLY__LOGS_PREFIX_LEN : 0;
		if (!at || strlen(lc.e[i].ref) != rlen ||
		    memcmp(lc.e[i].ref, lc.v[i].name + PROLLY__LOGS_PREFIX_LEN, rlen) != 0) {
			rc = corrupt(&lc.e[i].id, "it records another ref than its name says");
			goto cleanup;
		}
	}
	if ((rc = prolly__reflog_order(lc.e, lc.n))) /* the order of writing (reflog_order.c) */
		goto cleanup;
	for (size_t i = 0; i < lc.n; i++) {
		const prolly__reflog *e = &lc.e[i];
		prolly_reflog_entry pe;
		memset(&pe, 0, sizeof(pe));
		pe.id = e->id;
		pe.time_us = e->time_us;
		pe.ref = e->ref;
		pe.operation = e->op;
		pe.message = e->message;
		pe.has_old = e->has_old;
		pe.has_new = e->has_new;
		pe.old_id = e->old_id;
		pe.new_id = e->new_id;
		if ((rc = fn(payload, &pe)))
			goto cleanup;
	}
cleanup:
	for (size_t i = 0; i < lc.n; i++) {
		free(lc.v[i].name);
		if (lc.e)
			prolly__reflog_dispose(&lc.e[i]);
	}
	free(lc.v);
	free(lc.e);
	free(lc.have);
	free(ids);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Restoring a deleted branch                                                                 */
/* ------------------------------------------------------------------------------------------ */

typedef struct restore_ctx {
	int found;
	prolly_id head;
} restore_ctx;

static int on_restore(void *payload, const prolly_reflog_entry *e)
{
	restore_ctx *rc = payload;
	if (e->has_old && !e->has_new) { /* the newest deletion (entries come newest first) */
		rc->found = 1;
		rc->head = e->old_id;
		return 1;
	}
	return 0;
}

int prolly_branch_restore(prolly_id *out_commit, prolly_db *db, const char *name)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	restore_ctx rc = {0, {{0}}};
	int err;
	prolly_id cur;
	if (!db)
		return prolly_set_error(PROLLY_EINVAL, "prolly_branch_restore: NULL db");
	if ((err = prolly_branch_name_valid(name)))
		return err;
	snprintf(ref, sizeof(ref), "%s%s", HEADS_PREFIX, name);
	if ((err = prolly__get_ref(db, ref, &cur)) != PROLLY_ENOTFOUND)
		return err ? err : prolly_set_error(PROLLY_ECONFLICT, "branch '%s' exists", name);
	err = prolly_reflog(db, name, on_restore, &rc);
	if (err < 0)
		return err;
	if (!rc.found)
		return prolly_set_error(PROLLY_ENOTFOUND,
		                        "the reflog records no deletion of branch '%s' (or gc expired it)",
		                        name);
	if ((err = prolly__ref_create(db, ref, &rc.head, "restore")))
		return err;
	if (out_commit)
		*out_commit = rc.head;
	return 0;
}
