/*
 * client.c - the client contender's primitives (tables_int.h): prolly through the C library
 * (include/prolly.h) on the PostgreSQL store in the run's schema. Every session shares the
 * db's one handle (and its node cache and connection pool).
 *
 *   head      prolly_branch_commit: ref, commit and root node in one round trip
 *   get       the head (outside a transaction; one round trip), then prolly_get
 *   get_many  the head, then prolly_get_many (one store call per tree level)
 *   scan      a cursor over [lo, hi)
 *   count     prolly_rank of hi minus prolly_rank of lo: O(height), never a scan
 *   commit    in a transaction: group commit (client_group.c): queued with the other
 *             sessions' commits, merged into the head (snapshot isolation), one store write
 *             per group; BT_CONFLICT for a key also written since the transaction began.
 *             Outside one: prolly_commit_edits on the head now
 */
#include "tables_int.h"

#include "err.h"

#include <stdlib.h>
#include <string.h>

#define POOL 48 /* connections at most: the suites' largest client count, and some */

static int cl_db_open(bt_db *db, int create, char *err, size_t errn)
{
	prolly_pg_options po = PROLLY_PG_OPTIONS_INIT;
	prolly_store *st = NULL;
	prolly_txn *txn = NULL;
	prolly_id empty, cid, head;
	int rc;

	if (!(db->group = bt__group_new())) {
		bench_seterr(err, errn, "tables: out of memory");
		return -1;
	}
	po.schema = db->schema;
	po.pool_size = POOL;
	po.no_create = !create;
	po.node_size = db->node_size;
	if ((rc = prolly_store_pg_open(&st, db->url, &po)) || (rc = prolly_db_new(&db->pdb, st, NULL)))
		goto fail;
	if ((rc = prolly_branch_name_valid(db->branch)))
		goto fail;
	if (!create) {
		rc = prolly_branch_head(&head, db->pdb, db->branch);
		goto done;
	}
	/* A fresh branch: a root commit of the empty tree. */
	rc = prolly_branch_delete(db->pdb, db->branch);
	if (rc && rc != PROLLY_ENOTFOUND)
		goto fail;
	prolly_id_empty_tree(&empty);
	if ((rc = prolly_txn_begin(&txn, db->pdb)) ||
	    (rc = prolly_commit_create(&cid, txn, &empty, NULL, 0, 0, "bench tables: empty")) ||
	    (rc = prolly_txn_move_branch(txn, db->branch, NULL, &cid)) ||
	    (rc = prolly_txn_commit(txn, NULL, 0)))
		goto fail;
done:
	prolly_txn_free(txn);
	if (rc)
		goto fail;
	return 0;
fail:
	prolly_txn_free(txn);
	bench_seterr(err, errn, "tables: %s on branch %s: %s", bt_contender_names[db->kind],
	             db->branch ? db->branch : "", prolly_last_error());
	return -1;
}

static void cl_db_close(bt_db *db)
{
	prolly_close(db->pdb);
	db->pdb = NULL;
	bt__group_free(db->group);
	db->group = NULL;
}

static int cl_session_open(bt_session *s)
{
	(void)s;
	return 0;
}

static void cl_session_close(bt_session *s)
{
	(void)s;
}

static int cl_head(bt_session *s)
{
	prolly_commit *c = NULL;
	if (prolly_branch_commit(&c, s->db->pdb, s->db->branch))
		return bt__fail_prolly(s, "tables: reading the branch head");
	s->head = c->id;
	s->head_tree = c->tree;
	prolly_id_to_hex(s->head_hex, &c->id);
	prolly_commit_free(c);
	return 0;
}

/* The tree a read reads: the transaction's head, or the branch head now. */
static int read_root(bt_session *s, prolly_id *out)
{
	if (!s->in_txn && cl_head(s))
		return -1;
	*out = s->head_tree;
	return 0;
}

static int cl_get(bt_session *s, const void *key, size_t klen, const void **val, size_t *vlen,
                  int *found)
{
	prolly_id root;
	int rc;
	*found = 0;
	if (read_root(s, &root))
		return -1;
	rc = prolly_get(&s->val, s->db->pdb, &root, key, klen);
	if (rc == PROLLY_ENOTFOUND)
		return 0;
	if (rc)
		return bt__fail_prolly(s, "tables: get");
	*found = 1;
	*val = s->val.ptr;
	*vlen = s->val.size;
	return 0;
}

static int count_found(void *payload, size_t index, const void *value, size_t vlen)
{
	(void)index;
	(void)vlen;
	*(size_t *)payload += value != NULL;
	return 0;
}

static int cl_get_many(bt_session *s, const prolly_slice *keys, size_t n, size_t *found)
{
	prolly_id root;
	if (read_root(s, &root))
		return -1;
	if (prolly_get_many(s->db->pdb, &root, keys, n, count_found, found))
		return bt__fail_prolly(s, "tables: get_many");
	return 0;
}

static int cl_scan(bt_session *s, const prolly_slice *lo, const prolly_slice *hi, uint64_t limit,
                   bt_entry_fn fn, void *payload)
{
	prolly_range r = PROLLY_RANGE_INIT;
	prolly_cursor *cur = NULL;
	prolly_slice k, v;
	prolly_id root;
	uint64_t n = 0;
	int rc;
	if (read_root(s, &root))
		return -1;
	r.lo = *lo;
	r.has_lo = 1;
	r.hi = *hi;
	r.has_hi = 1;
	if (prolly_cursor_open(&cur, s->db->pdb, &root, &r))
		return bt__fail_prolly(s, "tables: opening a cursor");
	while ((!limit || n < limit) && (rc = prolly_cursor_next(cur, &k, &v)) == 0) {
		n++;
		if (fn(payload, k.data, k.size, v.data, v.size)) {
			rc = -1;
			break;
		}
	}
	prolly_cursor_free(cur);
	if (rc == PROLLY_ITEROVER || (limit && n == limit && rc == 0))
		return 0;
	return rc == -1 ? -1 : bt__fail_prolly(s, "tables: scan");
}

static int cl_count(bt_session *s, const prolly_slice *lo, const prolly_slice *hi, uint64_t *out)
{
	prolly_id root;
	uint64_t a, b;
	*out = 0;
	if (read_root(s, &root))
		return -1;
	if (prolly_rank(&a, s->db->pdb, &root, lo->data, lo->size) ||
	    prolly_rank(&b, s->db->pdb, &root, hi->data, hi->size))
		return bt__fail_prolly(s, "tables: count");
	*out = b > a ? b - a : 0;
	return 0;
}

/* The edits of the list as the library takes them. */
static prolly_edit *lib_edits(bt_session *s, const bt_edit *edits, size_t n)
{
	prolly_edit *e = malloc((n ? n : 1) * sizeof(*e));
	if (!e)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		e[i].key.data = s->arena.p + edits[i].koff;
		e[i].key.size = edits[i].klen;
		if (edits[i].vlen == SIZE_MAX) {
			e[i].op = PROLLY_DEL;
			e[i].value.data = NULL;
			e[i].value.size = 0;
		} else {
			e[i].op = PROLLY_PUT;
			e[i].value.data = s->arena.p + edits[i].voff;
			e[i].value.size = edits[i].vlen;
		}
	}
	return e;
}

static int cl_commit(bt_session *s, const bt_edit *edits, size_t n, int expect)
{
	prolly_edit *e = lib_edits(s, edits, n);
	prolly_id cid;
	int rc;
	if (!e)
		return bt__fail(s, "tables: out of memory");
	if (expect) {
		rc = bt__group_commit(s, e, n);
		free(e);
		return rc;
	}
	rc = prolly_commit_edits(&cid, s->db->pdb, s->db->branch, e, n, BT_COMMIT_MESSAGE);
	free(e);
	if (rc == PROLLY_ECONFLICT)
		return BT_CONFLICT;
	return rc ? bt__fail_prolly(s, "tables: commit") : 0;
}

const bt_kv_ops bt__client_ops = {cl_db_open, cl_db_close, cl_session_open, cl_session_close,
                                  cl_head,    cl_get,      cl_get_many,     cl_scan,
                                  cl_count,   cl_commit};
