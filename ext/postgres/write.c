/*
 * write.c - the SQL write functions (declared by prolly--0.1.sql and, for version 0.2,
 * prolly--0.1--0.2.sql; documented in docs/sql.md).
 *
 *   prolly_commit(branch, keys[], vals[], message, expected, merge)
 *                                                    prolly_edit_tree on the head, one commit;
 *                                                    with expected, only on that head (40001),
 *                                                    or with merge, merged into a moved head
 *                                                    unless a key was written since (40001)
 *   prolly_put(branch, key, value)                   the same with one put
 *   prolly_delete(branch, key)                       the same with one delete
 *   prolly_branch(name, from_ref)                    a new ref naming from_ref's commit
 *   prolly_merge(into, from_ref, resolve)            fast-forward, or a three-way merge commit
 *   prolly_delete_branch(name)                       the branch's ref removed (0.2)
 *   prolly_reset(branch, ref)                        the branch moved to ref's commit (0.2)
 *   prolly_tag(name, ref), prolly_delete_tag(name)   a tag's ref created or removed (0.2)
 *   prolly_revert(branch, commit_ref, resolve, mainline, message), prolly_cherry_pick(...)
 *                                                    one commit's change undone or applied on
 *                                                    the head, as a three-way merge (0.2)
 *
 * Each runs in the caller's transaction: arguments are checked first, then pgx_open_write,
 * pgx_write_lock on the branch written (store_write.c: the protocol), the engine's calls, whose
 * store writes (one, or one per batch of a commit of many edits: edit_in_batches) go through
 * store_write.c, pgx_write_unlock, pgx_check. The commits are
 * those the CLI makes for the same edits (the same engine; parents, tree, message), so the same
 * edits give the same tree ids. A write that changes nothing makes no commit and returns the
 * head. Every branch move is reflogged with the operation sql-commit, sql-put, sql-delete,
 * sql-branch, sql-merge, sql-fast-forward, sql-revert or sql-cherry-pick; a deleted branch or tag with delete, a new tag with
 * tag, a reset with reset (the engine's own, as from the CLI).
 */
#include "prolly_ext.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include <stdlib.h>

#define HEADS "refs/heads/"
#define TAGS "refs/tags/"

/* ---- arguments ---- */

static char *text_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
		                errmsg("prolly: %s must not be NULL", what)));
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/* Whether argument argno was given: declared, and not SQL NULL. A database keeps the declarations
 * of the script its CREATE EXTENSION ran, and earlier scripts of version 0.1 declared fewer
 * arguments (prolly_commit without expected, then without merge), which the library of a later
 * build is called with: fcinfo holds only the arguments declared. */
static bool arg_given(FunctionCallInfo fcinfo, int argno)
{
	return PG_NARGS() > argno && !PG_ARGISNULL(argno);
}

/* A branch to write: a valid name (22023 otherwise, the engine's reason in the message); ref
 * receives "refs/heads/NAME". */
static char *branch_arg(FunctionCallInfo fcinfo, int argno, const char *what,
                        char ref[PROLLY_MAX_REF_NAME + 1])
{
	char *name = text_arg(fcinfo, argno, what);
	int rc = prolly_branch_name_valid(name);
	if (rc)
		ereport(ERROR, (errcode(pgx_sqlstate(rc)), errmsg("prolly: %s \"%s\": %s", what,
		                                                  pgx_shown(name), pgx_engine_message())));
	snprintf(ref, PROLLY_MAX_REF_NAME + 1, HEADS "%s", name);
	return name;
}

static void check_size(size_t size, size_t limit, const char *what, int index)
{
	if (size <= limit)
		return;
	if (index > 0)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
		                errmsg("prolly: %s[%d] of %zu bytes is longer than the limit of %zu bytes",
		                       what, index, size, limit)));
	ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
	                errmsg("prolly: %s of %zu bytes is longer than the limit of %zu bytes", what,
	                       size, limit)));
}

/* A one-dimensional bytea[] argument, never NULL itself (detoasted once: its elements are read
 * in place, see edit_src). */
static ArrayType *array_arg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	ArrayType *arr;
	if (PG_ARGISNULL(argno))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
		                errmsg("prolly: %s must not be NULL", what)));
	arr = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
		                errmsg("prolly: %s must be a one-dimensional array", what)));
	return arr;
}

static prolly_slice slice_of(bytea *b)
{
	prolly_slice s;
	s.data = VARDATA_ANY(b);
	s.size = VARSIZE_ANY_EXHDR(b);
	return s;
}

static text *hex_text(const prolly_id *id)
{
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, id);
	return cstring_to_text(hex);
}

/* Publishes txn (whose only ref update moves branch); a lost compare-and-swap, impossible while
 * the ref row is locked unless the ref was created meanwhile, keeps the store's message. */
static int publish(prolly_txn *txn)
{
	prolly_ref_update conf;
	memset(&conf, 0, sizeof(conf));
	return prolly_txn_commit(txn, &conf, 1);
}

/* ---- commits of edits ---- */

/*
 * The edits of a write function, handed to the engine in batches of at most BATCH_EDITS edits
 * and BATCH_BYTES bytes of keys and values (commit_edits). A batch's engine work (its copies of
 * the edits, the level edits, the new nodes pinned until they are written) is freed before the
 * next one, so a commit of a million edits holds no more of it than one of BATCH_EDITS; what
 * stays for the whole call is the arguments (read in place) and 20 bytes per edit here.
 */
#define BATCH_EDITS 65536
#define BATCH_BYTES ((size_t)16 << 20)

typedef struct edit_src {
	const prolly_edit *edits; /* prolly_put, prolly_delete: n edits as given; else NULL */
	bytea **keys, **vals;     /* prolly_commit: the arrays' elements, in place (a NULL value
	                             deletes) */
	uint32 *order;            /* their indexes in key order, each key once: its last edit */
	size_t n;                 /* edits, or entries of order */
} edit_src;

/* Key order as the engine's (bytes, a prefix first), then the position in the arrays. A sort of
 * a million keys takes a good part of a second: a cancel may leave it (qsort_arg holds nothing). */
static int cmp_edit_index(const void *a, const void *b, void *arg)
{
	const edit_src *src = arg;
	uint32 x = *(const uint32 *)a, y = *(const uint32 *)b;
	const bytea *kx = src->keys[x], *ky = src->keys[y];
	size_t nx = VARSIZE_ANY_EXHDR(kx), ny = VARSIZE_ANY_EXHDR(ky);
	int c;
	CHECK_FOR_INTERRUPTS();
	c = memcmp(VARDATA_ANY(kx), VARDATA_ANY(ky), Min(nx, ny));
	if (c)
		return c;
	if (nx != ny)
		return nx < ny ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The edits of prolly_commit's arrays (as long as each other, one-dimensional), read in place:
 * each element checked (a NULL key, sizes), then their indexes sorted by key, the last edit of
 * each key kept (the engine's rule for a key given twice). */
static void edit_src_arrays(edit_src *src, ArrayType *ka, ArrayType *va, int n)
{
	ArrayIterator ki = array_create_iterator(ka, 0, NULL);
	ArrayIterator vi = array_create_iterator(va, 0, NULL);
	size_t m = 0;
	memset(src, 0, sizeof(*src));
	src->keys = palloc(sizeof(bytea *) * (n ? n : 1));
	src->vals = palloc(sizeof(bytea *) * (n ? n : 1));
	src->order = palloc(sizeof(uint32) * (n ? n : 1));
	for (int i = 0; i < n; i++) {
		Datum k, v;
		bool knull, vnull;
		CHECK_FOR_INTERRUPTS();
		(void)array_iterate(ki, &k, &knull);
		(void)array_iterate(vi, &v, &vnull);
		if (knull)
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			                errmsg("prolly: keys[%d] must not be NULL", i + 1)));
		/* elements of an array are never compressed or external: no copy is made */
		src->keys[i] = DatumGetByteaPP(k);
		check_size(VARSIZE_ANY_EXHDR(src->keys[i]), PROLLY_MAX_KEY, "keys", i + 1);
		src->vals[i] = vnull ? NULL : DatumGetByteaPP(v);
		if (src->vals[i])
			check_size(VARSIZE_ANY_EXHDR(src->vals[i]), PROLLY_MAX_VALUE, "vals", i + 1);
		src->order[i] = (uint32)i;
	}
	array_free_iterator(ki);
	array_free_iterator(vi);
	qsort_arg(src->order, (size_t)n, sizeof(uint32), cmp_edit_index, src);
	for (size_t i = 0; i < (size_t)n; i++) {
		const bytea *k = src->keys[src->order[i]];
		const bytea *next = i + 1 < (size_t)n ? src->keys[src->order[i + 1]] : NULL;
		if (next && VARSIZE_ANY_EXHDR(k) == VARSIZE_ANY_EXHDR(next) &&
		    memcmp(VARDATA_ANY(k), VARDATA_ANY(next), VARSIZE_ANY_EXHDR(k)) == 0)
			continue; /* a later edit of the key follows */
		src->order[m++] = src->order[i];
	}
	src->n = m;
}

/* Fills out with the edits of src from *at on, at most max of them and BATCH_BYTES of keys and
 * values (at least one), and advances *at; returns how many. */
static size_t edit_batch(const edit_src *src, size_t *at, prolly_edit *out, size_t max)
{
	size_t m = 0, bytes = 0;
	if (src->edits) {
		m = Min(max, src->n - *at);
		memcpy(out, src->edits + *at, m * sizeof(*out));
		*at += m;
		return m;
	}
	for (; *at < src->n && m < max; m++, (*at)++) {
		uint32 i = src->order[*at];
		prolly_edit *e = &out[m];
		e->key = slice_of(src->keys[i]);
		if (src->vals[i]) {
			e->op = PROLLY_PUT;
			e->value = slice_of(src->vals[i]);
		} else {
			e->op = PROLLY_DEL;
			e->value.data = NULL;
			e->value.size = 0;
		}
		if (m && bytes + e->key.size + e->value.size > BATCH_BYTES)
			break;
		bytes += e->key.size + e->value.size;
	}
	return m;
}

/* Applies every edit of src to the tree root (*root receives the new tree) in key-ordered
 * batches: each batch one prolly_edit_tree in its own txn, whose nodes are written (in the
 * caller's transaction, through the write lock held) before the next batch begins, but the
 * last's, left in *txn for the commit. The batches hold disjoint key ranges, so the tree is the
 * one a single edit of all of them makes (the same records make the same tree); the nodes of
 * the trees between batches that the next replaces (its root, the nodes on its edges) are
 * written too, unreferenced, for gc to take. */
static int edit_in_batches(prolly_db *db, const edit_src *src, prolly_id *root, prolly_txn **txn)
{
	size_t at = 0, max = Min(src->n ? src->n : 1, (size_t)BATCH_EDITS);
	prolly_edit *batch = palloc(max * sizeof(*batch));
	int rc = 0;
	do {
		size_t m = edit_batch(src, &at, batch, max);
		if (*txn && (rc = prolly_txn_commit(*txn, NULL, 0)) == 0) {
			prolly_txn_free(*txn);
			*txn = NULL;
		}
		if (rc == 0 && !*txn)
			rc = prolly_txn_begin(txn, db);
		if (rc == 0)
			rc = prolly_edit_tree(root, *txn, root, batch, m);
	} while (rc == 0 && at < src->n);
	pfree(batch);
	return rc;
}

/* 40001, nothing written (after the caller's cleanup): branch moved from expected to head, and
 * either the commit could not merge (written: a key it writes was written since expected) or it
 * was not asked to. */
static void raise_moved(const char *branch, const prolly_id *expected, const prolly_id *head,
                        bool written)
{
	char want[PROLLY_ID_HEX_SIZE], have[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(want, expected);
	prolly_id_to_hex(have, head);
	ereport(ERROR,
	        (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
	         errmsg(written ? "prolly: branch \"%s\" moved, and a key this commit writes was "
	                          "written since the expected commit; nothing was written"
	                        : "prolly: branch \"%s\" moved: its head is no longer the "
	                          "expected commit; nothing was written",
	                branch),
	         errdetail("expected %s, head %s", want, have),
	         errhint("Read the head again and retry the transaction.")));
}

/* Applies edits to the head of branch and commits them (reflogged as op); *out receives the
 * new commit, or the head when the tree did not change. With expected non-NULL the edits were
 * made on that commit (checked under the write lock, so no other writer can move the head
 * between the check and the commit): if the head is another commit, without merge 40001 and
 * nothing is written; with merge the edits are merged into the head (prolly_rebase_edits: a
 * snapshot-isolation commit) unless a key they write was written since expected (40001).
 * Raises any error. */
static void commit_edits(FunctionCallInfo fcinfo, const char *fname, const char *branch,
                         const char *ref, const edit_src *src, const char *message, const char *op,
                         const prolly_id *expected, bool merge, prolly_id *out)
{
	pgx_tables t;
	prolly_db *db = pgx_open_write(fcinfo, &t, fname);
	prolly_commit *hc = NULL, *bc = NULL;
	prolly_txn *txn = NULL;
	prolly_id root, cid, head;
	bool moved = false;
	int rc;

	pgx_write_lock(ref);
	/* The head's read comes first: it adopts the epoch read under the write lock. */
	rc = prolly_branch_commit(&hc, db, branch);
	if (rc == 0 && expected && !prolly_id_equal(&hc->id, expected)) {
		moved = true;
		if (!merge) {
			head = hc->id;
			prolly_commit_free(hc);
			pgx_write_unlock();
			raise_moved(branch, expected, &head, false);
		}
		rc = prolly_commit_read(&bc, db, expected);
	}
	if (rc == 0 && moved) {
		/* one merge of all the edits (its conflicts are those of the whole commit) */
		size_t at = 0;
		prolly_edit *all = palloc(sizeof(*all) * (src->n ? src->n : 1));
		size_t n = edit_batch(src, &at, all, src->n);
		while (at < src->n) /* BATCH_BYTES ends a batch early: take the rest */
			n += edit_batch(src, &at, all + n, src->n - n);
		if ((rc = prolly_txn_begin(&txn, db)) == 0)
			rc = prolly_rebase_edits(&root, txn, &bc->tree, &hc->tree, all, n);
		pfree(all);
	} else if (rc == 0) {
		root = hc->tree;
		rc = edit_in_batches(db, src, &root, &txn);
	}
	if (rc == PROLLY_EMERGE) {
		head = hc->id;
		prolly_txn_free(txn);
		prolly_commit_free(hc);
		prolly_commit_free(bc);
		pgx_write_unlock();
		raise_moved(branch, expected, &head, true);
	}
	if (rc == 0 && prolly_id_equal(&root, &hc->tree)) {
		*out = hc->id;
	} else if (rc == 0) {
		const prolly_commit *parent = hc;
		if ((rc = prolly_commit_create(&cid, txn, &root, &hc->id, 1,
		                               prolly_next_commit_time(db, &parent, 1), message)) == 0 &&
		    (rc = prolly_txn_move_branch(txn, branch, &hc->id, &cid)) == 0 &&
		    (rc = prolly_txn_set_reason(txn, op, NULL)) == 0 && (rc = publish(txn)) == 0)
			*out = cid;
	}
	prolly_txn_free(txn);
	prolly_commit_free(hc);
	prolly_commit_free(bc);
	pgx_write_unlock();
	pgx_check(rc, fname);
}

PG_FUNCTION_INFO_V1(pgx_commit);
Datum pgx_commit(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *branch = branch_arg(fcinfo, 0, "branch", ref);
	ArrayType *ka = array_arg(fcinfo, 1, "keys");
	ArrayType *va = array_arg(fcinfo, 2, "vals");
	int nk = ArrayGetNItems(ARR_NDIM(ka), ARR_DIMS(ka));
	int nv = ArrayGetNItems(ARR_NDIM(va), ARR_DIMS(va));
	char *message;
	edit_src src;
	prolly_id out, expected;
	int has_expected = arg_given(fcinfo, 4);
	bool merge = arg_given(fcinfo, 5) && PG_GETARG_BOOL(5);

	if (has_expected) {
		char *hex = text_to_cstring(PG_GETARG_TEXT_PP(4));
		if (strlen(hex) != PROLLY_ID_HEX_SIZE - 1 || prolly_id_from_hex(&expected, hex))
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			                errmsg("prolly: expected must be a commit id of 64 hex digits")));
	}
	if (nk != nv)
		ereport(ERROR,
		        (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
		         errmsg("prolly: keys has %d elements and vals %d; they must be as long", nk, nv)));
	edit_src_arrays(&src, ka, va, nk);
	message = !arg_given(fcinfo, 3) ? psprintf("sql commit (%d edit%s)", nk, nk == 1 ? "" : "s")
	                                : text_to_cstring(PG_GETARG_TEXT_PP(3));
	commit_edits(fcinfo, "prolly_commit", branch, ref, &src, message, "sql-commit",
	             has_expected ? &expected : NULL, merge, &out);
	PG_RETURN_TEXT_P(hex_text(&out));
}

/* The source of a single edit. */
static edit_src edit_src_one(const prolly_edit *e)
{
	edit_src src;
	memset(&src, 0, sizeof(src));
	src.edits = e;
	src.n = 1;
	return src;
}

PG_FUNCTION_INFO_V1(pgx_put);
Datum pgx_put(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *branch = branch_arg(fcinfo, 0, "branch", ref);
	bytea *k, *v;
	prolly_edit e;
	edit_src src;
	prolly_id out;
	if (PG_ARGISNULL(1))
		ereport(ERROR,
		        (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("prolly: key must not be NULL")));
	if (PG_ARGISNULL(2))
		ereport(ERROR,
		        (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("prolly: value must not be NULL"),
		         errhint("prolly_delete removes a key.")));
	k = PG_GETARG_BYTEA_PP(1);
	v = PG_GETARG_BYTEA_PP(2);
	check_size(VARSIZE_ANY_EXHDR(k), PROLLY_MAX_KEY, "key", 0);
	check_size(VARSIZE_ANY_EXHDR(v), PROLLY_MAX_VALUE, "value", 0);
	e.op = PROLLY_PUT;
	e.key = slice_of(k);
	e.value = slice_of(v);
	src = edit_src_one(&e);
	commit_edits(fcinfo, "prolly_put", branch, ref, &src, "sql put", "sql-put", NULL, false, &out);
	PG_RETURN_TEXT_P(hex_text(&out));
}

PG_FUNCTION_INFO_V1(pgx_delete);
Datum pgx_delete(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *branch = branch_arg(fcinfo, 0, "branch", ref);
	bytea *k;
	prolly_edit e;
	edit_src src;
	prolly_id out;
	if (PG_ARGISNULL(1))
		ereport(ERROR,
		        (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("prolly: key must not be NULL")));
	k = PG_GETARG_BYTEA_PP(1);
	check_size(VARSIZE_ANY_EXHDR(k), PROLLY_MAX_KEY, "key", 0);
	e.op = PROLLY_DEL;
	e.key = slice_of(k);
	e.value.data = NULL;
	e.value.size = 0;
	src = edit_src_one(&e);
	commit_edits(fcinfo, "prolly_delete", branch, ref, &src, "sql delete", "sql-delete", NULL,
	             false, &out);
	PG_RETURN_TEXT_P(hex_text(&out));
}

/* ---- prolly_branch ---- */

PG_FUNCTION_INFO_V1(pgx_branch);
Datum pgx_branch(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *name = branch_arg(fcinfo, 0, "name", ref);
	char *from = text_arg(fcinfo, 1, "from_ref");
	pgx_tables t;
	prolly_db *db = pgx_open_write(fcinfo, &t, "prolly_branch");
	prolly_txn *txn = NULL;
	prolly_id cur, cid;
	int rc, exists = 0;

	pgx_write_lock(ref);
	rc = prolly_branch_head(&cur, db, name);
	if (rc == 0)
		exists = 1;
	else if (rc == PROLLY_ENOTFOUND && !pgx_failed())
		rc = prolly_resolve(&cid, db, from);
	if (rc == 0 && !exists && (rc = prolly_txn_begin(&txn, db)) == 0 &&
	    (rc = prolly_txn_move_branch(txn, name, NULL, &cid)) == 0 &&
	    (rc = prolly_txn_set_reason(txn, "sql-branch", NULL)) == 0)
		rc = publish(txn);
	prolly_txn_free(txn);
	pgx_write_unlock();
	if (exists || (rc == PROLLY_ECONFLICT && !pgx_failed()))
		ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
		                errmsg("prolly: branch \"%s\" already exists", name)));
	if (rc) {
		char *what = psprintf("ref \"%s\"", pgx_shown(from));
		pgx_check(rc, what);
	}
	PG_RETURN_TEXT_P(hex_text(&cid));
}

/* ---- prolly_delete_branch, prolly_tag, prolly_delete_tag (version 0.2) ---- */

/* A tag's name; ref receives "refs/tags/NAME". A tag to create must have a valid name (22023
 * otherwise); one to delete is left to the engine, which also deletes an old tag of 64 hex digits
 * by name and refuses a bad name with the same message (22023). */
static char *tag_arg(FunctionCallInfo fcinfo, int argno, bool creating,
                     char ref[PROLLY_MAX_REF_NAME + 1])
{
	char *name = text_arg(fcinfo, argno, "name");
	int rc = creating ? prolly_tag_name_valid(name) : 0;
	if (rc)
		ereport(ERROR, (errcode(pgx_sqlstate(rc)),
		                errmsg("prolly: name \"%s\": %s", pgx_shown(name), pgx_engine_message())));
	snprintf(ref, PROLLY_MAX_REF_NAME + 1, TAGS "%s", name);
	return name;
}

/* An absent branch or tag to delete: 42704 with the engine's message ("no branch 'x'"). */
static void check_removed(int rc, const char *kind, const char *name)
{
	if (rc == PROLLY_ENOTFOUND && !pgx_failed())
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
		                errmsg("prolly: no %s \"%s\"", kind, pgx_shown(name))));
	if (rc) {
		char *what = psprintf("%s \"%s\"", kind, pgx_shown(name));
		pgx_check(rc, what);
	}
}

/* prolly_delete_branch and prolly_delete_tag: the ref removed under its row lock; returns the
 * commit it named. */
static Datum delete_ref(FunctionCallInfo fcinfo, bool tag)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *name = tag ? tag_arg(fcinfo, 0, false, ref) : branch_arg(fcinfo, 0, "name", ref);
	pgx_tables t;
	prolly_db *db = pgx_open_write(fcinfo, &t, tag ? "prolly_delete_tag" : "prolly_delete_branch");
	prolly_id was;
	int rc;
	pgx_write_lock(ref);
	rc = tag ? prolly_tag_delete(&was, db, name) : prolly_branch_remove(&was, db, name);
	pgx_write_unlock();
	check_removed(rc, tag ? "tag" : "branch", name);
	PG_RETURN_TEXT_P(hex_text(&was));
}

PG_FUNCTION_INFO_V1(pgx_delete_branch);
Datum pgx_delete_branch(PG_FUNCTION_ARGS)
{
	return delete_ref(fcinfo, false);
}

PG_FUNCTION_INFO_V1(pgx_reset);
Datum pgx_reset(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *branch = branch_arg(fcinfo, 0, "branch", ref);
	char *to = text_arg(fcinfo, 1, "ref");
	pgx_tables t;
	prolly_db *db = pgx_open_write(fcinfo, &t, "prolly_reset");
	prolly_id cid;
	int rc, to_bad = 0;
	pgx_write_lock(ref);
	if ((rc = prolly_resolve(&cid, db, to)))
		to_bad = 1;
	else
		rc = prolly_branch_reset(NULL, db, branch, &cid);
	pgx_write_unlock();
	if (rc) {
		char *what = to_bad ? psprintf("ref \"%s\"", pgx_shown(to))
		                    : psprintf("reset of \"%s\"", branch);
		pgx_check(rc, what);
	}
	PG_RETURN_TEXT_P(hex_text(&cid));
}

PG_FUNCTION_INFO_V1(pgx_tag);
Datum pgx_tag(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *name = tag_arg(fcinfo, 0, true, ref);
	char *from = text_arg(fcinfo, 1, "ref");
	pgx_tables t;
	prolly_db *db = pgx_open_write(fcinfo, &t, "prolly_tag");
	prolly_id cid;
	int rc;
	pgx_write_lock(ref);
	rc = prolly_resolve(&cid, db, from);
	if (rc) {
		char *what;
		pgx_write_unlock();
		what = psprintf("ref \"%s\"", pgx_shown(from));
		pgx_check(rc, what);
	}
	rc = prolly_tag_create(db, name, &cid);
	pgx_write_unlock();
	if (rc == PROLLY_ECONFLICT && !pgx_failed())
		ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
		                errmsg("prolly: tag \"%s\" already exists", name)));
	if (rc) {
		char *what = psprintf("tag \"%s\"", pgx_shown(name));
		pgx_check(rc, what);
	}
	PG_RETURN_TEXT_P(hex_text(&cid));
}

PG_FUNCTION_INFO_V1(pgx_delete_tag);
Datum pgx_delete_tag(PG_FUNCTION_ARGS)
{
	return delete_ref(fcinfo, true);
}

/* ---- prolly_merge ---- */

/* The conflicting keys of a failed merge, for the error's detail: the first few, escaped, and
 * how many there were. Plain C (called inside the engine). */
#define MAX_LISTED 20

typedef struct conflicts {
	char *text; /* malloc'd, "k1, k2, ..." */
	size_t len, cap;
	uint64_t n;
	int rc;
} conflicts;

static int append(conflicts *c, const char *s, size_t n)
{
	if (c->len + n + 1 > c->cap) {
		size_t cap = (c->len + n + 1) * 2;
		char *p = realloc(c->text, cap);
		if (!p)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory listing merge conflicts");
		c->text = p;
		c->cap = cap;
	}
	memcpy(c->text + c->len, s, n);
	c->len += n;
	c->text[c->len] = '\0';
	return 0;
}

static int on_conflict(void *payload, const prolly_conflict *k)
{
	conflicts *c = payload;
	const unsigned char *p = k->key.data;
	int rc = 0;
	if (c->n++ >= MAX_LISTED)
		return 0;
	if (c->n > 1)
		rc = append(c, ", ", 2);
	for (size_t i = 0; i < k->key.size && rc == 0; i++) {
		char buf[5];
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\' && p[i] != ',')
			rc = append(c, (const char *)&p[i], 1);
		else
			rc = append(c, buf, (size_t)snprintf(buf, sizeof(buf), "\\x%02x", p[i]));
	}
	return rc;
}

static prolly_resolver resolver_arg(FunctionCallInfo fcinfo, int argno)
{
	const char *s = PG_ARGISNULL(argno) ? "fail" : text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (strcmp(s, "fail") == 0)
		return PROLLY_RESOLVE_FAIL;
	if (strcmp(s, "ours") == 0)
		return PROLLY_RESOLVE_OURS;
	if (strcmp(s, "theirs") == 0)
		return PROLLY_RESOLVE_THEIRS;
	ereport(ERROR,
	        (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
	         errmsg("prolly: resolve must be 'fail', 'ours' or 'theirs', not '%s'", pgx_shown(s))));
	return PROLLY_RESOLVE_FAIL;
}

/* PY001 for the conflicts cf collected while doing what ("merging ... into ..."): nothing was
 * done_word ("merged"); the detail lists the keys. Frees cf's text. */
static void raise_conflicts(conflicts *cf, const char *what, const char *done_word)
{
	char *detail = psprintf("%llu conflicting key%s: %s%s", (unsigned long long)cf->n,
	                        cf->n == 1 ? "" : "s", cf->text ? cf->text : "",
	                        cf->n > MAX_LISTED ? ", ..." : "");
	uint64_t n = cf->n;
	free(cf->text);
	cf->text = NULL;
	ereport(ERROR,
	        (errcode(PGX_ERRCODE_MERGE_CONFLICT),
	         errmsg("prolly: %s left %llu conflict%s; nothing was %s", what, (unsigned long long)n,
	                n == 1 ? "" : "s", done_word),
	         errdetail("%s", detail), errhint("resolve => 'ours' or 'theirs' settles them.")));
}

PG_FUNCTION_INFO_V1(pgx_merge);
Datum pgx_merge(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *into = branch_arg(fcinfo, 0, "into_branch", ref);
	char *from = text_arg(fcinfo, 1, "from_ref");
	prolly_resolver how = resolver_arg(fcinfo, 2);
	pgx_tables t;
	prolly_db *db = pgx_open_write(fcinfo, &t, "prolly_merge");
	prolly_commit *cs[3] = {NULL, NULL, NULL}; /* base, ours, theirs */
	prolly_txn *txn = NULL;
	prolly_id ours, theirs, base, root, result;
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	conflicts cf;
	int rc, unrelated = 0, from_bad = 0;
	char *message = psprintf("merge %s into %s", from, into);

	memset(&cf, 0, sizeof(cf));
	mo.resolve = how;
	mo.on_conflict = on_conflict;
	mo.payload = &cf;
	pgx_write_lock(ref);
	rc = prolly_branch_head(&ours, db, into);
	if (rc == 0 && (rc = prolly_resolve(&theirs, db, from)))
		from_bad = 1;
	result = ours;
	if (rc == 0 && !prolly_id_equal(&ours, &theirs)) {
		rc = prolly_merge_base(&base, db, &ours, &theirs);
		if (rc == PROLLY_ENOTFOUND && !pgx_failed())
			unrelated = 1;
		else if (rc == 0 && prolly_id_equal(&base, &theirs))
			; /* already merged */
		else if (rc == 0 && prolly_id_equal(&base, &ours)) {
			if ((rc = prolly_txn_begin(&txn, db)) == 0 &&
			    (rc = prolly_txn_move_branch(txn, into, &ours, &theirs)) == 0 &&
			    (rc = prolly_txn_set_reason(txn, "sql-fast-forward", NULL)) == 0 &&
			    (rc = publish(txn)) == 0)
				result = theirs;
		} else if (rc == 0) {
			prolly_id ids[3];
			ids[0] = base;
			ids[1] = ours;
			ids[2] = theirs;
			for (int i = 0; i < 3 && rc == 0; i++)
				rc = prolly_commit_read(&cs[i], db, &ids[i]);
			if (rc == 0 && (rc = prolly_txn_begin(&txn, db)) == 0 &&
			    (rc = prolly_merge(&root, NULL, txn, &cs[0]->tree, &cs[1]->tree, &cs[2]->tree,
			                       &mo)) == 0) {
				const prolly_commit *parents[2];
				prolly_id pids[2];
				parents[0] = cs[1];
				parents[1] = cs[2];
				pids[0] = ours;
				pids[1] = theirs;
				if ((rc = prolly_commit_create(&result, txn, &root, pids, 2,
				                               prolly_next_commit_time(db, parents, 2), message)) ==
				        0 &&
				    (rc = prolly_txn_move_branch(txn, into, &ours, &result)) == 0 &&
				    (rc = prolly_txn_set_reason(txn, "sql-merge", NULL)) == 0)
					rc = publish(txn);
			}
		}
	}
	prolly_txn_free(txn);
	for (int i = 0; i < 3; i++)
		prolly_commit_free(cs[i]);
	pgx_write_unlock();
	if (rc == PROLLY_EMERGE && !pgx_failed())
		raise_conflicts(&cf, psprintf("merging \"%s\" into \"%s\"", pgx_shown(from), into),
		                "merged");
	free(cf.text);
	if (unrelated)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		                errmsg("prolly: \"%s\" and \"%s\" share no history; nothing was merged",
		                       into, pgx_shown(from))));
	if (rc) {
		char *what = from_bad ? psprintf("ref \"%s\"", pgx_shown(from))
		                      : psprintf("merge into \"%s\"", into);
		pgx_check(rc, what);
	}
	PG_RETURN_TEXT_P(hex_text(&result));
}

/* ---- prolly_revert, prolly_cherry_pick (version 0.2) ---- */

/* One commit's change undone (revert) or applied (cherry-pick) on the head of branch, as a
 * three-way merge (prolly_revert, prolly_cherry_pick), committed with the head as its one
 * parent; no change, no commit (the head is returned). */
static Datum pick(FunctionCallInfo fcinfo, bool revert)
{
	const char *fname = revert ? "prolly_revert" : "prolly_cherry_pick";
	char ref[PROLLY_MAX_REF_NAME + 1], hex[PROLLY_ID_HEX_SIZE];
	char *branch = branch_arg(fcinfo, 0, "branch", ref);
	char *which = text_arg(fcinfo, 1, "commit_ref");
	prolly_resolver how = resolver_arg(fcinfo, 2);
	int32 mainline = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT32(3);
	char *message = arg_given(fcinfo, 4) ? text_to_cstring(PG_GETARG_TEXT_PP(4)) : NULL;
	pgx_tables t;
	prolly_db *db;
	prolly_commit *head_c = NULL;
	prolly_txn *txn = NULL;
	prolly_id target, root, result;
	prolly_merge_options mo = PROLLY_MERGE_OPTIONS_INIT;
	conflicts cf;
	int rc, which_bad = 0;

	if (mainline < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		                errmsg("prolly: mainline must be a parent number from 1 (got %d)",
		                       (int)mainline)));
	db = pgx_open_write(fcinfo, &t, fname);
	memset(&cf, 0, sizeof(cf));
	mo.resolve = how;
	mo.on_conflict = on_conflict;
	mo.payload = &cf;
	pgx_write_lock(ref);
	rc = prolly_branch_commit(&head_c, db, branch);
	if (rc == 0 && (rc = prolly_resolve(&target, db, which)))
		which_bad = 1;
	if (rc == 0) {
		result = head_c->id;
		prolly_id_to_hex(hex, &target);
		if (!message)
			message = psprintf("%s %s", revert ? "revert" : "cherry-pick", hex);
	}
	if (rc == 0 && (rc = prolly_txn_begin(&txn, db)) == 0)
		rc = revert
		         ? prolly_revert(&root, NULL, txn, &head_c->tree, &target, (unsigned)mainline, &mo)
		         : prolly_cherry_pick(&root, NULL, txn, &head_c->tree, &target, (unsigned)mainline,
		                              &mo);
	if (rc == 0 && !prolly_id_equal(&root, &head_c->tree)) {
		const prolly_commit *parent = head_c;
		if ((rc = prolly_commit_create(&result, txn, &root, &head_c->id, 1,
		                               prolly_next_commit_time(db, &parent, 1), message)) == 0 &&
		    (rc = prolly_txn_move_branch(txn, branch, &head_c->id, &result)) == 0 &&
		    (rc = prolly_txn_set_reason(txn, revert ? "sql-revert" : "sql-cherry-pick", hex)) == 0)
			rc = publish(txn);
	}
	prolly_txn_free(txn);
	prolly_commit_free(head_c);
	pgx_write_unlock();
	if (rc == PROLLY_EMERGE && !pgx_failed())
		raise_conflicts(&cf,
		                psprintf("%s \"%s\" on \"%s\"", revert ? "reverting" : "picking",
		                         pgx_shown(which), branch),
		                "committed");
	free(cf.text);
	if (rc) {
		char *what = which_bad
		                 ? psprintf("ref \"%s\"", pgx_shown(which))
		                 : psprintf("%s on \"%s\"", revert ? "revert" : "cherry-pick", branch);
		pgx_check(rc, what);
	}
	PG_RETURN_TEXT_P(hex_text(&result));
}

PG_FUNCTION_INFO_V1(pgx_revert);
Datum pgx_revert(PG_FUNCTION_ARGS)
{
	return pick(fcinfo, true);
}

PG_FUNCTION_INFO_V1(pgx_cherry_pick);
Datum pgx_cherry_pick(PG_FUNCTION_ARGS)
{
	return pick(fcinfo, false);
}
