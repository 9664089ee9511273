/*
 * commit_on.c - snapshot-isolation commits: the edits of a transaction that read commit `base`
 * land on the branch head as of its commit, merged into it when the head moved meanwhile,
 * unless they write a key that was also written since base (include/prolly.h states the rule).
 *
 *   prolly_rebase_edits     a three-way merge of (base, base + edits, head) specialised to a
 *                           list of edits: the written keys are looked up in base and in head
 *                           (prolly_get_many, one store call per level each); an edit that
 *                           leaves its key as base has it is dropped; a kept edit whose key
 *                           differs between base and head is a conflict; the kept edits are
 *                           applied to head. By history independence the result is the tree
 *                           prolly_merge(base, base + edits, head) gives when neither reports a
 *                           conflict, but no node of base + edits is made (nothing to write but
 *                           the result's), and the cost does not grow with head's distance
 *                           from base
 *   prolly_commit_edits_on  read the head; head == base: commit the edits on it; else commit
 *                           the rebase on the head; publish by compare-and-swap; a lost race
 *                           starts over from the head's read (bounded). When the handle has just
 *                           read base there, a first try takes it for the head unread (CO4)
 *
 * Invariants:
 *   CO1  a key the edits change from base that head changed from base (whatever the two values:
 *        also the same value, or both deleted) is never committed: PROLLY_EMERGE, so no update
 *        is lost.
 *   CO2  for equal keys the last edit wins (prolly_edit_tree's rule), also in the comparison
 *        with base.
 *   CO3  a commit's only parent is the head its compare-and-swap expects, and its time is later
 *        than that parent's (BR2 of branch.c).
 *   CO4  before the first attempt, one that builds on base without reading the head runs when
 *        the handle's head memo (head_memo.c) says its last read of the branch found base there,
 *        as a caller that just read the branch to get base has (prolly_branch_commit). Its
 *        compare-and-swap expects base all the same, so a head that moved meanwhile (or a gc
 *        meanwhile: T3 of txn.c) only makes it lose, and edits that write nothing make it stop
 *        (the head that stays must be read); then the attempts that read the head follow, as
 *        many as max_attempts, so the result is the one those alone would give. Nothing is read
 *        twice in the usual case.
 */
#include "internal.h"

#include <stdlib.h>

typedef struct wkey {
	prolly_slice key;
	size_t edit; /* index of the edit */
} wkey;

static int wkey_cmp(const void *a, const void *b)
{
	const wkey *x = a, *y = b;
	size_t n = x->key.size < y->key.size ? x->key.size : y->key.size;
	int c = memcmp(x->key.data, y->key.data, n);
	if (c)
		return c;
	if (x->key.size != y->key.size)
		return x->key.size < y->key.size ? -1 : 1;
	return x->edit < y->edit ? -1 : x->edit > y->edit;
}

/* What base holds at each written key: copies in arena. */
typedef struct look {
	prolly_buf arena;
	size_t *off, *len;   /* per key: the base value's place in arena */
	unsigned char *have; /* per key: present in base */
	unsigned char *diff; /* per key: head differs from base */
	int phase;           /* 0: reading base, 1: reading head */
	int rc;
} look;

static int on_value(void *payload, size_t i, const void *value, size_t vlen)
{
	look *l = payload;
	if (l->phase == 0) {
		l->have[i] = value != NULL;
		l->off[i] = l->arena.size;
		l->len[i] = vlen;
		if (value && (l->rc = prolly__buf_put(&l->arena, value, vlen)))
			return l->rc;
		return 0;
	}
	l->diff[i] = (value != NULL) != l->have[i] ||
	             (value && (vlen != l->len[i] || memcmp(value, l->arena.ptr + l->off[i], vlen)));
	return 0;
}

int prolly_rebase_edits(prolly_id *out_root, prolly_txn *txn, const prolly_id *base,
                        const prolly_id *head, const prolly_edit *edits, size_t n)
{
	look l;
	wkey *w = NULL;
	prolly_slice *keys = NULL;
	prolly_edit *kept = NULL;
	size_t m = 0, k = 0;
	int rc;

	memset(&l, 0, sizeof(l));
	if (!out_root || !txn || !base || !head || (!edits && n))
		return prolly_set_error(PROLLY_EINVAL, "prolly_rebase_edits: NULL argument");
	if ((rc = prolly__txn_usable(txn, "prolly_rebase_edits")))
		return rc;
	/* every edit, also those dropped below as no-ops, as prolly_edit_tree checks them */
	if ((rc = prolly__edits_check(edits, n)))
		return rc;
	if (prolly_id_equal(base, head))
		return prolly_edit_tree(out_root, txn, base, edits, n);
	if (n == 0) {
		*out_root = *head;
		return 0;
	}
	/* The written keys, once each, with their last edit (CO2). */
	w = malloc(n * sizeof(*w));
	keys = malloc(n * sizeof(*keys));
	kept = malloc(n * sizeof(*kept));
	l.off = malloc(n * sizeof(*l.off));
	l.len = malloc(n * sizeof(*l.len));
	l.have = malloc(n);
	l.diff = malloc(n);
	if (!w || !keys || !kept || !l.off || !l.len || !l.have || !l.diff) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory rebasing edits");
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		w[i].key = edits[i].key;
		w[i].edit = i;
	}
	qsort(w, n, sizeof(*w), wkey_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i + 1 < n && w[i + 1].key.size == w[i].key.size &&
		    memcmp(w[i + 1].key.data, w[i].key.data, w[i].key.size) == 0)
			continue; /* a later edit of the same key follows */
		w[m] = w[i];
		keys[m] = w[i].key;
		m++;
	}
	if ((rc = prolly_get_many(txn->db, base, keys, m, on_value, &l)) || (rc = l.rc))
		goto cleanup;
	l.phase = 1;
	if ((rc = prolly_get_many(txn->db, head, keys, m, on_value, &l)))
		goto cleanup;
	for (size_t i = 0; i < m; i++) {
		const prolly_edit *e = &edits[w[i].edit];
		int noop = e->op == PROLLY_DEL
		               ? !l.have[i]
		               : l.have[i] && e->value.size == l.len[i] &&
		                     memcmp(e->value.data, l.arena.ptr + l.off[i], l.len[i]) == 0;
		if (noop)
			continue; /* writes nothing: conflicts with nothing */
		if (l.diff[i]) {
			rc = prolly_set_error(PROLLY_EMERGE,
			                      "a key these edits write was also written since the "
			                      "transaction's snapshot (a write-write conflict)"); /* CO1 */
			goto cleanup;
		}
		kept[k++] = *e;
	}
	if (k == 0)
		*out_root = *head;
	else
		rc = prolly_edit_tree(out_root, txn, head, kept, k);
cleanup:
	free(w);
	free(keys);
	free(kept);
	free(l.off);
	free(l.len);
	free(l.have);
	free(l.diff);
	prolly_buf_dispose(&l.arena);
	return rc;
}

/* One attempt: reads the head, commits the edits on it (rebased when it is not base) and
 * publishes. With *assumed set on entry it may take base for the head (CO4): *assumed stays set
 * if it did, else is cleared. Returns 0; PROLLY_ECONFLICT for a lost race (*winner: the head
 * that won, *known set once a head was read), *final set when retrying cannot help (a
 * write-write conflict, the branch deleted); other errors. *rebased is set when the head was
 * not base. */
static int attempt(prolly_id *out_commit, int *rebased, int *final, prolly_id *winner, int *known,
                   prolly_db *db, const char *branch, const char *ref, prolly_commit **base_c,
                   const prolly_id *base, const prolly_edit *edits, size_t n, const char *message,
                   int *assumed)
{
	prolly_txn *txn = NULL;
	prolly_commit *hc = NULL;
	prolly_id head, root, cid;
	int exists, rc;

	*rebased = 0;
	*final = 0;
	if ((rc = prolly_txn_begin(&txn, db)))
		goto cleanup;
	/* CO4: base for the head when this handle's last read of the branch found it there (the
	 * head memo), without reading the head again. */
	hc = *assumed ? prolly__head_memo_get(&db->heads, ref, NULL) : NULL;
	*assumed = hc && prolly_id_equal(&hc->id, base);
	if (*assumed) {
		head = *base;
		exists = 1;
	} else {
		prolly_commit_free(hc);
		hc = NULL;
		if ((rc = prolly__txn_read_head(txn, ref, &head, &exists, &hc)))
			goto cleanup;
	}
	if (!exists) {
		*final = 1;
		rc = prolly_set_error(PROLLY_ECONFLICT,
		                      "branch '%s' does not exist (deleted since the transaction began, "
		                      "or never made)",
		                      branch);
		goto cleanup;
	}
	*winner = head;
	*known = 1;
	if (!hc && (rc = prolly__commits_read(db, &head, 1, &hc)))
		goto cleanup;
	if (prolly_id_equal(&head, base)) {
		rc = prolly_edit_tree(&root, txn, &hc->tree, edits, n);
	} else {
		*rebased = 1;
		/* The caller's base naming a tree is bad input (PROLLY_EINVAL), not damage. */
		if (!*base_c && (rc = prolly__commit_read_as(base_c, db, base, "base")))
			goto cleanup;
		rc = prolly_rebase_edits(&root, txn, &(*base_c)->tree, &hc->tree, edits, n);
		if (rc == PROLLY_EMERGE) {
			char hex[PROLLY_ID_HEX_SIZE];
			prolly_id_to_hex(hex, &head);
			*final = 1;
			rc = prolly_set_error(PROLLY_ECONFLICT,
			                      "branch '%s' moved to %s, where a key this commit writes was "
			                      "written since its snapshot; nothing was written; retry",
			                      branch, hex);
		}
	}
	if (rc)
		goto cleanup;
	if (prolly_id_equal(&root, &hc->tree)) {
		if (*assumed) { /* CO4: which head stays is known only once it is read */
			rc = prolly_set_error(PROLLY_ECONFLICT, "the head of '%s' is to be read", branch);
			goto cleanup;
		}
		*out_commit = head; /* the edits write nothing */
		goto cleanup;
	}
	if ((rc = prolly_commit_create(&cid, txn, &root, &head, 1, prolly__branch_time(db, hc->time_us),
	                               message ? message : "")) ||
	    (rc = prolly__branch_publish(db, txn, branch, ref, &head, &cid, winner))) /* CO3 */
		goto cleanup;
	*out_commit = cid;
cleanup:
	prolly_commit_free(hc);
	prolly_txn_free(txn);
	return rc;
}

int prolly_commit_edits_on(prolly_id *out_commit, unsigned *out_rebased, prolly_db *db,
                           const char *branch, const prolly_id *base, const prolly_edit *edits,
                           size_t n, const char *message, unsigned max_attempts)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	prolly_commit *base_c = NULL;
	prolly_id winner;
	unsigned rebased = 0, tries = max_attempts ? max_attempts : 1;
	int merged, final, known = 0, rc;

	if (!out_commit || !db || !base || (!edits && n))
		return prolly_set_error(PROLLY_EINVAL, "prolly_commit_edits_on: NULL argument");
	if ((rc = prolly__branch_ref(ref, branch)))
		return rc;
	if (out_rebased)
		*out_rebased = 0;
	for (unsigned i = 0, memo = 1; i < tries;) {
		int assumed = (int)memo;
		memo = 0;
		rc = attempt(out_commit, &merged, &final, &winner, &known, db, branch, ref, &base_c, base,
		             edits, n, message, &assumed);
		if (assumed && rc == PROLLY_ECONFLICT)
			continue; /* CO4: an attempt that read the head follows, not counted */
		rebased += (unsigned)merged;
		if (rc != PROLLY_ECONFLICT || final)
			break;
		i++;
	}
	if (rc == PROLLY_ECONFLICT && known)
		*out_commit = winner;
	prolly_commit_free(base_c);
	if (out_rebased)
		*out_rebased = rebased;
	return rc;
}
