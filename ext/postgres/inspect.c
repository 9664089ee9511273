/*
 * inspect.c - the SQL reads that walk whole trees (declared by prolly--0.2--0.3.sql; documented
 * in docs/sql.md):
 *
 *   prolly_stats(ref)             prolly_tree_stats_get: the shape of ref's tree, one row (0.3)
 *   prolly_verify(ref, history)   prolly_trees_verify: every node of ref's tree (with history, of
 *                                 every commit's tree; ref NULL: of every branch and tag) read
 *                                 from the tables, not the cache, and checked against its id,
 *                                 each node once; a row per tree (0.3)
 *
 * Both read every node of what they walk: their cost is the tree's size, not a change's. The
 * node reader checks for interrupts per node, so a cancel stops them at any size.
 */
#include "prolly_ext.h"

#include "utils/builtins.h"

#include <stdlib.h>

/* ---- prolly_stats ---- */

PG_FUNCTION_INFO_V1(pgx_stats);
Datum pgx_stats(PG_FUNCTION_ARGS)
{
	pgx_tables t;
	char *ref = pgx_text_arg(fcinfo, 0, "ref");
	prolly_db *db = pgx_open(fcinfo, &t);
	prolly_tree_stats st = PROLLY_TREE_STATS_INIT;
	prolly_id commit, tree;
	pgx_rows r;
	Datum v[6];
	bool n[6] = {false, false, false, false, false, false};
	int rc;
	pgx_resolve_ref(db, ref, &commit, &tree);
	rc = prolly_tree_stats_get(&st, db, &tree, 0);
	pgx_check(rc, "stats");
	pgx_rows_init(&r, fcinfo);
	v[0] = Int64GetDatum((int64)st.records);
	v[1] = Int32GetDatum((int32)st.height);
	v[2] = Int64GetDatum((int64)st.nodes);
	v[3] = Int64GetDatum((int64)st.leaves);
	v[4] = Int64GetDatum((int64)st.bytes);
	v[5] = Int32GetDatum((int32)prolly_db_node_size(db));
	pgx_rows_put(&r, v, n);
	return (Datum)0;
}

/* ---- prolly_verify ---- */

/* The trees to verify, in order, and the ref each run of them came from. Plain C (malloc): the
 * listing callbacks run inside the engine. */
typedef struct trees {
	prolly_id *ids;
	size_t n, cap;
	char **refs;   /* per tree: the ref it came from (shared by a run of trees) */
	size_t *heads; /* indexes of the trees that are a ref's own (not older commits') */
	size_t n_heads, cap_heads;
	char **names; /* prolly_verify(NULL): the refs' names, malloc'd */
	size_t n_names, cap_names;
	bool history;
	prolly_db *db;
	const char *ref; /* the ref of the trees being added */
	int rc;          /* the first error of a listing callback */
} trees;

static int add_tree(trees *tl, const prolly_id *tree)
{
	if (tl->n == tl->cap) {
		size_t cap = tl->cap ? tl->cap * 2 : 64;
		prolly_id *ids = realloc(tl->ids, cap * sizeof(*ids));
		char **refs;
		if (!ids)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory listing trees");
		tl->ids = ids;
		if (!(refs = realloc(tl->refs, cap * sizeof(*refs))))
			return prolly_set_error(PROLLY_ENOMEM, "out of memory listing trees");
		tl->refs = refs;
		tl->cap = cap;
	}
	tl->refs[tl->n] = (char *)tl->ref;
	tl->ids[tl->n++] = *tree;
	return 0;
}

static int on_logged(void *payload, const prolly_commit *c)
{
	return add_tree(payload, &c->tree);
}

/* The trees of commit, read as ref: its own, or with history its history's, newest first. */
static int add_commit(trees *tl, const char *ref, const prolly_id *commit)
{
	prolly_commit *c = NULL;
	int rc;
	if (tl->n_heads == tl->cap_heads) {
		size_t cap = tl->cap_heads ? tl->cap_heads * 2 : 16;
		size_t *h = realloc(tl->heads, cap * sizeof(*h));
		if (!h)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory listing trees");
		tl->heads = h;
		tl->cap_heads = cap;
	}
	tl->heads[tl->n_heads++] = tl->n;
	tl->ref = ref;
	if (tl->history)
		return prolly_log(tl->db, commit, on_logged, tl);
	if ((rc = prolly_commit_read(&c, tl->db, commit)) == 0)
		rc = add_tree(tl, &c->tree);
	prolly_commit_free(c);
	return rc;
}

/* Each branch, then each tag (prolly_verify(NULL)): the names are kept for the rows. */
static int on_ref(trees *tl, const char *prefix, const char *name, const prolly_id *commit)
{
	size_t len = strlen(prefix) + strlen(name) + 1;
	char *full;
	if (tl->n_names == tl->cap_names) {
		size_t cap = tl->cap_names ? tl->cap_names * 2 : 16;
		char **nn = realloc(tl->names, cap * sizeof(*nn));
		if (!nn)
			return tl->rc = prolly_set_error(PROLLY_ENOMEM, "out of memory listing refs");
		tl->names = nn;
		tl->cap_names = cap;
	}
	if (!(full = malloc(len)))
		return tl->rc = prolly_set_error(PROLLY_ENOMEM, "out of memory listing refs");
	snprintf(full, len, "%s%s", prefix, name);
	tl->names[tl->n_names++] = full;
	return tl->rc = add_commit(tl, full, commit);
}
static int on_branch(void *payload, const char *name, const prolly_id *commit)
{
	return on_ref(payload, "refs/heads/", name, commit);
}
static int on_tag(void *payload, const char *name, const prolly_id *commit)
{
	return on_ref(payload, "refs/tags/", name, commit);
}

typedef struct verified {
	const char *ref;
	const prolly_id *tree;
	const char *status;
	const prolly_tree_stats *st;
} verified;

static void fill_verified(void *payload, const void *item, Datum *v, bool *n)
{
	const verified *x = item;
	(void)payload;
	n[0] = n[1] = n[2] = n[3] = n[4] = false;
	v[0] = pgx_message_datum(x->ref);
	v[1] = PointerGetDatum(pgx_hex_text(x->tree));
	v[2] = CStringGetTextDatum(x->status);
	v[3] = Int64GetDatum((int64)x->st->nodes);
	v[4] = Int64GetDatum((int64)x->st->bytes);
}

typedef struct verify_ctx {
	pgx_rows r;
	trees *tl;
	size_t next_head;
	bool head_missing; /* a ref's own tree is not stored: damage */
} verify_ctx;

/* One row per ref's own tree and per older commit's tree that brought nodes no tree before it
 * had ("ok", counting those nodes), or whose commit gc kept without its tree ("pruned", by
 * design: docs/commits.md, "Retention and merges"). */
static int on_verified(void *payload, size_t i, int status, const prolly_tree_stats *st)
{
	verify_ctx *x = payload;
	bool head = false;
	verified row;
	while (x->next_head < x->tl->n_heads && x->tl->heads[x->next_head] <= i)
		head = x->tl->heads[x->next_head++] == i;
	if (status == PROLLY_ENOTFOUND && head) {
		x->head_missing = true;
		return status;
	}
	if (status == 0 && st->nodes == 0 && !head)
		return 0; /* an older commit's tree met before; a ref's own always has its row */
	row.ref = x->tl->refs[i];
	row.tree = &x->tl->ids[i];
	row.status = status ? "pruned" : "ok";
	row.st = st;
	return pgx_rows_emit(&x->r, fill_verified, NULL, &row);
}

PG_FUNCTION_INFO_V1(pgx_verify);
Datum pgx_verify(PG_FUNCTION_ARGS)
{
	pgx_tables t;
	char *ref = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
	bool history = pgx_arg_given(fcinfo, 1) && PG_GETARG_BOOL(1);
	prolly_db *db = pgx_open(fcinfo, &t);
	trees tl;
	verify_ctx x;
	prolly_id commit;
	int rc;

	memset(&tl, 0, sizeof(tl));
	memset(&x, 0, sizeof(x));
	tl.history = history;
	tl.db = db;
	if (ref) {
		pgx_resolve_ref(db, ref, &commit, NULL);
		rc = add_commit(&tl, ref, &commit);
	} else {
		rc = prolly_branch_list(db, on_branch, &tl);
		if (rc == 0 && !tl.rc)
			rc = prolly_tag_list(db, on_tag, &tl);
		if (tl.rc)
			rc = tl.rc;
	}
	if (rc == 0) {
		MemoryContext cxt = CurrentMemoryContext;
		PG_TRY();
		{
			pgx_rows_init(&x.r, fcinfo);
		}
		PG_CATCH();
		{
			rc = pgx_keep_error(cxt);
		}
		PG_END_TRY();
	}
	x.tl = &tl;
	if (rc == 0)
		rc = prolly_trees_verify(db, tl.ids, tl.n, on_verified, &x);
	for (size_t i = 0; i < tl.n_names; i++)
		free(tl.names[i]);
	free(tl.names);
	free(tl.ids);
	free(tl.refs);
	free(tl.heads);
	/* A commit that resolved (or a ref's head) whose tree is missing is damage, not an absent
	 * object: XX001 as for a node that fails its check. */
	if ((x.head_missing || rc == PROLLY_ENOTFOUND) && !pgx_failed())
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
		                errmsg("prolly: verify: %s", pgx_engine_message())));
	pgx_check(rc, "verify");
	return (Datum)0;
}
