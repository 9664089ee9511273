/*
 * write.c - the SQL write functions that commit edits (declared by prolly--0.1.sql; documented in
 * docs/sql.md); refs.c has those that move branches and tags otherwise.
 *
 *   prolly_commit(branch, keys[], vals[], message, expected, merge)
 *                                                    prolly_edit_tree on the head, one commit;
 *                                                    with expected, only on that head (40001),
 *                                                    or with merge, merged into a moved head
 *                                                    unless a key was written since (40001)
 *   prolly_put(branch, key, value)                   the same with one put
 *   prolly_delete(branch, key)                       the same with one delete
 *   prolly_delete_range(branch, from, to, message)   prolly_delete_range on the head, one
 *                                                    commit (0.3)
 *
 * Each runs in the caller's transaction: arguments are checked first, then pgx_open_write,
 * pgx_write_lock on the branch written (store_write.c: the protocol), the engine's calls, whose
 * store writes (one, or one per batch of a commit of many edits: edit_in_batches) go through
 * store_write.c, pgx_write_unlock, pgx_check. The commits are those the CLI makes for the same
 * edits (the same engine; parents, tree, message), so the same edits give the same tree ids. A
 * write that changes nothing makes no commit and returns the head. Every branch move is
 * reflogged with the operation sql-commit, sql-put, sql-delete or sql-delete-range.
 */
#include "prolly_ext.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include <stdlib.h>

/* ---- arguments ---- */

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
	/* prolly_put, prolly_delete: n edits as given; else NULL */
	const prolly_edit *edits;
	/* prolly_commit: the arrays' elements, in place (a NULL value deletes); their indexes in
	 * key order, each key once (its last edit) */
	bytea **keys, **vals;
	uint32 *order;
	/* edits, or entries of order */
	size_t n;
	/* prolly_delete_range (range true, n 0): its bounds, NULL for unbounded */
	const prolly_slice *from, *to;
	bool range;
} edit_src;

/* Key order as the engine's: bytes, a prefix first. */
static int key_cmp(const bytea *kx, const bytea *ky)
{
	size_t nx = VARSIZE_ANY_EXHDR(kx), ny = VARSIZE_ANY_EXHDR(ky);
	int c = memcmp(VARDATA_ANY(kx), VARDATA_ANY(ky), Min(nx, ny));
	if (c)
		return c;
	return nx < ny ? -1 : nx > ny;
}

/* Key order, then the position in the arrays. A sort of a million keys takes a good part of a
 * second: a cancel may leave it (qsort_arg holds nothing). */
static int cmp_edit_index(const void *a, const void *b, void *arg)
{
	const edit_src *src = arg;
	uint32 x = *(const uint32 *)a, y = *(const uint32 *)b;
	int c;
	CHECK_FOR_INTERRUPTS();
	if ((c = key_cmp(src->keys[x], src->keys[y])))
		return c;
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
	} else if (rc == 0 && src->range) {
		if ((rc = prolly_txn_begin(&txn, db)) == 0)
			rc = prolly_delete_range(&root, txn, &hc->tree, src->from, src->to);
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
		    (rc = prolly_txn_set_reason(txn, op, NULL)) == 0 && (rc = pgx_publish(txn)) == 0)
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
	char *branch = pgx_branch_arg(fcinfo, 0, "branch", ref);
	ArrayType *ka = array_arg(fcinfo, 1, "keys");
	ArrayType *va = array_arg(fcinfo, 2, "vals");
	int nk = ArrayGetNItems(ARR_NDIM(ka), ARR_DIMS(ka));
	int nv = ArrayGetNItems(ARR_NDIM(va), ARR_DIMS(va));
	char *message;
	edit_src src;
	prolly_id out, expected;
	int has_expected = pgx_arg_given(fcinfo, 4);
	bool merge = pgx_arg_given(fcinfo, 5) && PG_GETARG_BOOL(5);

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
	message = !pgx_arg_given(fcinfo, 3) ? psprintf("sql commit (%d edit%s)", nk, nk == 1 ? "" : "s")
	                                    : text_to_cstring(PG_GETARG_TEXT_PP(3));
	commit_edits(fcinfo, "prolly_commit", branch, ref, &src, message, "sql-commit",
	             has_expected ? &expected : NULL, merge, &out);
	PG_RETURN_TEXT_P(pgx_hex_text(&out));
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
	char *branch = pgx_branch_arg(fcinfo, 0, "branch", ref);
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
	PG_RETURN_TEXT_P(pgx_hex_text(&out));
}

PG_FUNCTION_INFO_V1(pgx_delete);
Datum pgx_delete(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *branch = pgx_branch_arg(fcinfo, 0, "branch", ref);
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
	PG_RETURN_TEXT_P(pgx_hex_text(&out));
}

/* ---- prolly_delete_range (version 0.3) ---- */

PG_FUNCTION_INFO_V1(pgx_delete_range);
Datum pgx_delete_range(PG_FUNCTION_ARGS)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	char *branch = pgx_branch_arg(fcinfo, 0, "branch", ref);
	bytea *from = pgx_key_arg(fcinfo, 1, "from_key", true);
	bytea *to = pgx_key_arg(fcinfo, 2, "to_key", true);
	char *message = pgx_arg_given(fcinfo, 3) ? text_to_cstring(PG_GETARG_TEXT_PP(3))
	                                         : "sql delete range";
	prolly_slice lo, hi;
	edit_src src;
	prolly_id out;

	/* Both bounds NULL would empty the branch: that must be said, with from_key => '' (the empty
	 * key sorts first). */
	if (!from && !to)
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
		                errmsg("prolly: from_key and to_key are both NULL"),
		                errhint("from_key => ''::bytea with to_key NULL deletes every key of the "
		                        "branch.")));
	if (from && to && key_cmp(from, to) > 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		                errmsg("prolly: from_key sorts after to_key")));
	if (from)
		lo = slice_of(from);
	if (to)
		hi = slice_of(to);
	memset(&src, 0, sizeof(src));
	src.range = true;
	src.from = from ? &lo : NULL;
	src.to = to ? &hi : NULL;
	commit_edits(fcinfo, "prolly_delete_range", branch, ref, &src, message, "sql-delete-range",
	             NULL, false, &out);
	PG_RETURN_TEXT_P(pgx_hex_text(&out));
}
