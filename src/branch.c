/*
 * branch.c - branches (refs "refs/heads/NAME" naming commits), history walks, merge base and
 * branch merges. docs/commits.md explains the protocols; the short version:
 *
 *   - A branch moves only by compare-and-swap: every move is a prolly_ref_update expecting the
 *     head that the change was computed from, published in the same store write as the new
 *     nodes and commit, so a lost race publishes nothing (PROLLY_ECONFLICT).
 *   - Every txn here reads its branch head as its first store read and adopts the gc epoch that
 *     read returned (read_head_at). Everything the txn then reads is reachable from that head,
 *     which every gc up to that epoch retained; a later gc bumps the epoch and the commit fails.
 *   - History walks keep a graph of the commits seen (id -> index, parents, time) and load every
 *     commit a step needs with one store call, so cost is one store call per step of the walk,
 *     not per commit; where the store offers get_ancestors, that call also brings up to
 *     ANCESTORS_AHEAD of their ancestors, which later steps then find loaded, so a long chain
 *     costs one call per ANCESTORS_AHEAD commits.
 *
 * Invariants:
 *   B1  a branch name passes prolly_branch_name_valid before any ref is built from it;
 *   B2  commits made here have a time greater than each parent's (next_time), so that "newer"
 *       means "not an ancestor" for history made by this library, whatever the clocks do;
 *   B3  a graph node's flags only grow, and a node is expanded again only when they grew, so
 *       every walk terminates after at most (number of flag bits + 1) expansions per commit.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

#define HEADS_PREFIX "refs/heads/"
#define HEADS_PREFIX_LEN 11
#define MAX_BRANCH_NAME 200
#define MAX_RETRIES 8

/* ------------------------------------------------------------------------------------------ */
/* Names                                                                                      */
/* ------------------------------------------------------------------------------------------ */

int prolly_branch_name_valid(const char *name)
{
	size_t len;
	if (!name || !*name)
		return prolly_set_error(PROLLY_EINVAL, "a branch name cannot be empty");
	len = strlen(name);
	if (len > MAX_BRANCH_NAME)
		return prolly_set_error(PROLLY_EINVAL, "branch name '%.40s...' has %zu bytes; at most %d",
		                        name, len, MAX_BRANCH_NAME);
	if (name[0] == '-' || name[0] == '/')
		return prolly_set_error(PROLLY_EINVAL, "branch name '%s' starts with '%c'", name, name[0]);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		         ch == '.' || ch == '_' || ch == '/' || ch == '-';
		if (!ok)
			return prolly_set_error(
			    PROLLY_EINVAL,
			    "branch name '%s' holds byte 0x%02x; allowed are A-Z a-z 0-9 . _ / -", name, ch);
		if (ch == '.' && name[i + 1] == '.')
			return prolly_set_error(PROLLY_EINVAL, "branch name '%s' contains \"..\"", name);
	}
	/* A name of 64 hex digits would read as a commit id (src/resolve.c); shorter all-hex names
	 * are allowed, and a branch wins over a short commit id spelled the same. */
	if (len == 2 * PROLLY_ID_SIZE && strspn(name, "0123456789abcdefABCDEF") == len)
		return prolly_set_error(PROLLY_EINVAL,
		                        "branch name '%s' looks like a commit id (64 hex digits)", name);
	return 0;
}

/* "refs/heads/NAME" into buf (B1). */
static int branch_ref(char buf[PROLLY_MAX_REF_NAME + 1], const char *branch)
{
	int rc = prolly_branch_name_valid(branch);
	if (rc)
		return rc;
	memcpy(buf, HEADS_PREFIX, HEADS_PREFIX_LEN);
	memcpy(buf + HEADS_PREFIX_LEN, branch, strlen(branch) + 1);
	return 0;
}

/*
 * Reads a branch head as the first read of txn and adopts the gc epoch the store returned with
 * it: the head is retained by every gc up to that epoch (a gc excludes writers, so a head read
 * during one is the head its mark saw), and a later gc makes the txn's commit fail. This spares
 * the spurious conflict a txn would get from a stale handle epoch after another process's gc.
 * *exists is set to 0 when the branch is absent (not an error here).
 */
static int read_head_at(prolly_txn *txn, const char *ref, prolly_id *head, int *exists,
                        prolly_commit **hc)
{
	prolly_db *db = txn->db;
	uint64_t epoch = 0;
	/* With hc: the commit and its tree's root too, in the same call where the store can. */
	int rc = hc ? prolly__head_read(db, ref, head, &epoch, hc)
	            : db->store->get_ref(db->store, ref, head, &epoch);
	if (rc && rc != PROLLY_ENOTFOUND)
		return rc;
	*exists = rc == 0;
	if (epoch) {
		prolly__raise_epoch(db, epoch);
		if (epoch > txn->epoch)
			txn->epoch = epoch;
	}
	return 0;
}

static int64_t next_time(int64_t newest_parent)
{
	int64_t now = prolly__now_us();
	if (now > newest_parent)
		return now;
	return newest_parent < INT64_MAX ? newest_parent + 1 : newest_parent; /* B2 */
}

/* ------------------------------------------------------------------------------------------ */
/* Reading several commits with one store call                                                */
/* ------------------------------------------------------------------------------------------ */

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
static int read_commits(prolly_db *db, const prolly_id *ids, size_t n, prolly_commit **out)
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
			                        db->store->kind);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Branch heads and moves                                                                     */
/* ------------------------------------------------------------------------------------------ */

int prolly_branch_head(prolly_id *out_commit, prolly_db *db, const char *branch)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	int rc = branch_ref(ref, branch);
	if (rc)
		return rc;
	rc = prolly__get_ref(db, ref, out_commit);
	if (rc == PROLLY_ENOTFOUND)
		return prolly_set_error(PROLLY_ENOTFOUND, "no branch '%s'", branch);
	return rc;
}

int prolly_txn_move_branch(prolly_txn *txn, const char *branch, const prolly_id *expected,
                           const prolly_id *commit)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	prolly_ref_update u;
	int rc = branch_ref(ref, branch);
	if (rc)
		return rc;
	if (!commit)
		return prolly_set_error(PROLLY_EINVAL, "moving branch '%s' needs a commit", branch);
	memset(&u, 0, sizeof(u));
	u.name = ref;
	if (expected) {
		u.expect = PROLLY_REF_EXPECT_VALUE;
		u.expected = *expected;
	} else {
		u.expect = PROLLY_REF_EXPECT_ABSENT;
	}
	u.value = *commit;
	return prolly_txn_set_ref(txn, &u);
}

/* After a failed commit of a branch move: a clear message, and the head that won if known. */
static int lost_race(prolly_db *db, const char *branch, const char *ref, const prolly_ref_update *c,
                     prolly_id *winner, int *have_winner)
{
	char hex[PROLLY_ID_HEX_SIZE];
	*have_winner = 0;
	if (c->conflict) {
		if (c->current_exists) {
			*winner = c->current;
			*have_winner = 1;
			prolly_id_to_hex(hex, &c->current);
			return prolly_set_error(PROLLY_ECONFLICT, "branch '%s' moved to %s meanwhile; retry",
			                        branch, hex);
		}
		return prolly_set_error(PROLLY_ECONFLICT, "branch '%s' was deleted meanwhile", branch);
	}
	/* No ref conflict: the gc epoch moved. Tell the caller where the branch is now. */
	if (prolly__get_ref(db, ref, winner) == 0)
		*have_winner = 1;
	return prolly_set_error(PROLLY_ECONFLICT,
	                        "a gc ran while committing to branch '%s'; nothing was written; retry",
	                        branch);
}

int prolly_commit_edits(prolly_id *out_commit, prolly_db *db, const char *branch,
                        const prolly_edit *edits, size_t n, const char *message)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	prolly_txn *txn = NULL;
	prolly_commit *hc = NULL;
	prolly_id head, tree, root, cid;
	prolly_ref_update conf;
	int exists, rc;
	int64_t t;

	if ((rc = branch_ref(ref, branch)))
		goto cleanup;
	if ((rc = prolly_txn_begin(&txn, db)))
		goto cleanup;
	if ((rc = read_head_at(txn, ref, &head, &exists, &hc)))
		goto cleanup;
	if (exists) {
		if (!hc && (rc = read_commits(db, &head, 1, &hc)))
			goto gone;
		tree = hc->tree;
		t = next_time(hc->time_us);
	} else {
		/* A branch that does not exist yet starts with a root commit of the edits. */
		tree = db->empty_tree;
		t = prolly__now_us();
	}
	if ((rc = prolly_edit_tree(&root, txn, &tree, edits, n)))
		goto gone;
	if ((rc = prolly_commit_create(&cid, txn, &root, exists ? &head : NULL, exists ? 1 : 0, t,
	                               message ? message : "")))
		goto cleanup;
	if ((rc = prolly_txn_move_branch(txn, branch, exists ? &head : NULL, &cid)))
		goto cleanup;
	memset(&conf, 0, sizeof(conf));
	rc = prolly_txn_commit(txn, &conf, 1);
	if (rc == PROLLY_ECONFLICT) {
		prolly_id winner;
		int have;
		rc = lost_race(db, branch, ref, &conf, &winner, &have);
		if (have && out_commit)
			*out_commit = winner;
		goto cleanup;
	}
	if (rc)
		goto cleanup;
	if (out_commit)
		*out_commit = cid;
	goto cleanup;
gone:
	/* The head we read may have moved on and its commit or nodes been removed by a gc (beyond
	 * retention) before we read them: that is a lost race, not damage, if the branch moved. */
	if (exists && (rc == PROLLY_ENOTFOUND || rc == PROLLY_ECORRUPT)) {
		prolly_id now;
		int err = rc, r = prolly__get_ref(db, ref, &now);
		if ((r == 0 && !prolly_id_equal(&now, &head)) || r == PROLLY_ENOTFOUND) {
			if (r == 0 && out_commit)
				*out_commit = now;
			rc = prolly_set_error(PROLLY_ECONFLICT,
			                      "branch '%s' moved while this commit was "
			                      "being made (and a gc removed what it was built on); retry",
			                      branch);
		} else {
			rc = err;
		}
	}
cleanup:
	prolly_commit_free(hc);
	prolly_txn_free(txn);
	return rc;
}

int prolly_branch_create(prolly_db *db, const char *name, const prolly_id *commit)
{
	char ref[PROLLY_MAX_REF_NAME + 1], hex[PROLLY_ID_HEX_SIZE];
	prolly_txn *txn = NULL;
	prolly_commit *c = NULL;
	prolly_id cur;
	prolly_ref_update conf;
	int exists, rc;

	if ((rc = branch_ref(ref, name)))
		goto cleanup;
	if (!commit) {
		rc = prolly_set_error(PROLLY_EINVAL, "creating branch '%s' needs a commit", name);
		goto cleanup;
	}
	prolly_id_to_hex(hex, commit);
	for (int attempt = 0;; attempt++) {
		if ((rc = prolly_txn_begin(&txn, db)))
			goto cleanup;
		if ((rc = read_head_at(txn, ref, &cur, &exists, NULL)))
			goto cleanup;
		if (exists) {
			rc = prolly_set_error(PROLLY_ECONFLICT, "branch '%s' already exists", name);
			goto cleanup;
		}
		/* The commit must exist now (and the epoch check keeps a gc from removing it). */
		if ((rc = read_commits(db, commit, 1, &c))) {
			if (rc == PROLLY_ENOTFOUND)
				prolly_set_error(rc, "cannot create branch '%s': commit %s not found", name, hex);
			goto cleanup;
		}
		prolly_commit_free(c);
		c = NULL;
		if ((rc = prolly_txn_move_branch(txn, name, NULL, commit)) ||
		    (rc = prolly_txn_set_reason(txn, "branch", NULL)))
			goto cleanup;
		memset(&conf, 0, sizeof(conf));
		rc = prolly_txn_commit(txn, &conf, 1);
		if (rc != PROLLY_ECONFLICT)
			goto cleanup;
		if (conf.conflict) {
			rc = prolly_set_error(PROLLY_ECONFLICT, "branch '%s' already exists", name);
			goto cleanup;
		}
		if (attempt + 1 >= MAX_RETRIES)
			goto cleanup; /* gc kept running: give up with its message */
		prolly_txn_free(txn);
		txn = NULL;
	}
cleanup:
	prolly_commit_free(c);
	prolly_txn_free(txn);
	return rc;
}

int prolly_branch_delete(prolly_db *db, const char *name)
{
	return prolly_branch_remove(NULL, db, name);
}

int prolly_branch_remove(prolly_id *out_head, prolly_db *db, const char *name)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	prolly_txn *txn = NULL;
	prolly_id cur;
	prolly_ref_update u, conf;
	int exists, rc;

	if ((rc = branch_ref(ref, name)))
		goto cleanup;
	for (int attempt = 0;; attempt++) {
		if ((rc = prolly_txn_begin(&txn, db)))
			goto cleanup;
		if ((rc = read_head_at(txn, ref, &cur, &exists, NULL)))
			goto cleanup;
		if (!exists) {
			rc = prolly_set_error(PROLLY_ENOTFOUND, "no branch '%s'", name);
			goto cleanup;
		}
		memset(&u, 0, sizeof(u));
		u.name = ref;
		u.expect = PROLLY_REF_EXPECT_VALUE;
		u.expected = cur;
		u.remove = 1;
		if ((rc = prolly_txn_set_ref(txn, &u)))
			goto cleanup;
		memset(&conf, 0, sizeof(conf));
		rc = prolly_txn_commit(txn, &conf, 1);
		if (rc == 0 && out_head)
			*out_head = cur;
		if (rc != PROLLY_ECONFLICT)
			goto cleanup;
		if (conf.conflict && !conf.current_exists) {
			rc = prolly_set_error(PROLLY_ENOTFOUND, "no branch '%s' (deleted meanwhile)", name);
			goto cleanup;
		}
		if (attempt + 1 >= MAX_RETRIES) {
			rc = prolly_set_error(PROLLY_ECONFLICT, "branch '%s' kept moving; not deleted", name);
			goto cleanup;
		}
		prolly_txn_free(txn); /* it moved (or a gc ran): delete whatever it is now */
		txn = NULL;
	}
cleanup:
	prolly_txn_free(txn);
	return rc;
}

typedef struct list_ctx {
	prolly_branch_fn fn;
	void *payload;
} list_ctx;

static int on_branch(void *payload, const char *name, const prolly_id *value)
{
	list_ctx *lc = payload;
	if (strncmp(name, HEADS_PREFIX, HEADS_PREFIX_LEN) != 0)
		return 0;
	return lc->fn(lc->payload, name + HEADS_PREFIX_LEN, value);
}

int prolly_branch_list(prolly_db *db, prolly_branch_fn fn, void *payload)
{
	list_ctx lc = {fn, payload};
	if (!fn)
		return prolly_set_error(PROLLY_EINVAL, "prolly_branch_list needs a callback");
	return db->store->list_refs(db->store, HEADS_PREFIX, on_branch, &lc);
}

/* ------------------------------------------------------------------------------------------ */
/* The commit graph of a walk                                                                 */
/* ------------------------------------------------------------------------------------------ */

enum { G_NEW = 0, G_LOADED = 1, G_MISSING = 2 };

typedef struct gnode {
	prolly_id id;
	int64_t time;
	size_t poff; /* first parent in graph.par */
	uint32_t np;
	unsigned char state;  /* G_* */
	unsigned char queued; /* in a work list */
	unsigned flags, done; /* walk flags, and the flags last expanded (B3) */
	int64_t ctime;        /* time of the child it was first reached from (INT64_MIN: a start) */
	uint64_t bits, bdone; /* redundancy walk: which candidates reach this commit */
	prolly_commit *c;     /* the decoded commit, when the graph keeps them (log) */
} gnode;

typedef struct graph {
	prolly_db *db;
	int keep; /* keep decoded commits in gnode.c */
	gnode *v;
	size_t n, cap;
	size_t *slot; /* open addressing: index + 1, 0 empty */
	size_t scap;
	prolly_id *par;
	size_t npar, cappar;
} graph;

/* A growable list of node indexes. */
typedef struct ilist {
	size_t *v;
	size_t n, cap;
} ilist;

static int ilist_push(ilist *l, size_t x)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 16;
		size_t *nv = realloc(l->v, ncap * sizeof(*nv));
		if (!nv)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		l->v = nv;
		l->cap = ncap;
	}
	l->v[l->n++] = x;
	return 0;
}

static void graph_init(graph *g, prolly_db *db, int keep)
{
	memset(g, 0, sizeof(*g));
	g->db = db;
	g->keep = keep;
}

static void graph_dispose(graph *g)
{
	for (size_t i = 0; i < g->n; i++)
		prolly_commit_free(g->v[i].c);
	free(g->v);
	free(g->slot);
	free(g->par);
}

static size_t id_hash(const prolly_id *id)
{
	uint64_t h;
	memcpy(&h, id->bytes + 8, sizeof(h));
	return (size_t)h;
}

static void slot_place(size_t *slot, size_t scap, const gnode *v, size_t idx)
{
	size_t mask = scap - 1, i = id_hash(&v[idx].id) & mask;
	while (slot[i])
		i = (i + 1) & mask;
	slot[i] = idx + 1;
}

/* Index of id in the graph, adding an unloaded node if absent. */
/* 1 and *out if the graph has a node for id. */
static int graph_find(const graph *g, const prolly_id *id, size_t *out)
{
	if (g->scap) {
		size_t mask = g->scap - 1;
		for (size_t i = id_hash(id) & mask; g->slot[i]; i = (i + 1) & mask) {
			if (prolly_id_equal(&g->v[g->slot[i] - 1].id, id)) {
				*out = g->slot[i] - 1;
				return 1;
			}
		}
	}
	return 0;
}

static int graph_get(graph *g, const prolly_id *id, size_t *out)
{
	if (graph_find(g, id, out))
		return 0;
	if (g->n == g->cap) {
		size_t ncap = g->cap ? g->cap * 2 : 32;
		gnode *nv = realloc(g->v, ncap * sizeof(*nv));
		if (!nv)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		g->v = nv;
		g->cap = ncap;
	}
	if ((g->n + 1) * 2 > g->scap) {
		size_t ncap = g->scap ? g->scap * 2 : 64;
		size_t *ns = calloc(ncap, sizeof(*ns));
		if (!ns)
			return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		for (size_t i = 0; i < g->n; i++)
			slot_place(ns, ncap, g->v, i);
		free(g->slot);
		g->slot = ns;
		g->scap = ncap;
	}
	memset(&g->v[g->n], 0, sizeof(g->v[g->n]));
	g->v[g->n].id = *id;
	slot_place(g->slot, g->scap, g->v, g->n);
	*out = g->n++;
	return 0;
}

static const prolly_id *gparent(const graph *g, const gnode *nd, uint32_t i)
{
	return &g->par[nd->poff + i];
}

typedef struct gload_ctx {
	graph *g;
	const size_t *idx;
	const prolly_id *ids;
	int rc;
} gload_ctx;

/* Fills graph node gi (if still G_NEW) from its commit's verified bytes. */
static int gload_fill(graph *g, size_t gi, const void *data, size_t size)
{
	gnode *nd = &g->v[gi];
	prolly_commit *c = NULL;
	int rc;
	if (nd->state != G_NEW)
		return 0;
	if ((rc = prolly__commit_decode(&c, &nd->id, data, size)))
		return rc;
	if (g->npar + c->n_parents > g->cappar) {
		size_t ncap = g->cappar ? g->cappar : 32;
		while (ncap < g->npar + c->n_parents)
			ncap *= 2;
		prolly_id *np = realloc(g->par, ncap * sizeof(*np));
		if (!np) {
			prolly_commit_free(c);
			return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		}
		g->par = np;
		g->cappar = ncap;
	}
	nd->poff = g->npar;
	nd->np = (uint32_t)c->n_parents;
	if (c->n_parents)
		memcpy(&g->par[g->npar], c->parents, c->n_parents * sizeof(*c->parents));
	g->npar += c->n_parents;
	nd->time = c->time_us;
	nd->state = G_LOADED;
	if (g->keep)
		nd->c = c;
	else
		prolly_commit_free(c);
	return 0;
}

static int on_gload(void *payload, size_t index, const void *data, size_t size)
{
	gload_ctx *lc = payload;
	int rc = gload_fill(lc->g, lc->idx[index], data, size);
	return rc ? (lc->rc = rc) : 0;
}

/* get_ancestors' objects: the ones asked for must hash to their id (else the store is corrupt);
 * every commit becomes (or fills) a graph node, so later steps of the walk find it loaded. */
static int on_ancestor(void *payload, const prolly_id *id, const void *data, size_t size)
{
	gload_ctx *lc = payload;
	prolly_id h;
	size_t gi;
	int rc;
	prolly__hash(&h, data, size);
	if (!prolly_id_equal(&h, id)) {
		char hex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hex, id);
		return lc->rc = prolly_set_error(PROLLY_ECORRUPT,
		                                 "object %s is corrupt: bytes do not hash to the id", hex);
	}
	if (!graph_find(lc->g, id, &gi)) {
		/* An ancestor the walk has not reached: kept if it decodes; if not, the walk meets the
		 * damage only if it gets there (reading it again), as without get_ancestors. */
		prolly_commit *c = NULL;
		if (prolly__commit_decode(&c, id, data, size))
			return 0;
		prolly_commit_free(c);
		if ((rc = graph_get(lc->g, id, &gi)))
			return lc->rc = rc;
	}
	if ((rc = gload_fill(lc->g, gi, data, size)))
		return lc->rc = rc;
	return 0;
}

/* Commits a history step reads ahead where the store can (get_ancestors): a long first-parent
 * chain then costs one round trip per this many commits instead of one per commit. */
#define ANCESTORS_AHEAD 256

/* Loads the unloaded nodes among idx[0..n) with one store call. Those not found become
 * G_MISSING (removed by retention, or never there). */
static int graph_load(graph *g, const size_t *idx, size_t n)
{
	prolly_id *ids = NULL;
	size_t *want = NULL, k = 0;
	int rc = 0;
	if (!n)
		return 0;
	ids = malloc(n * sizeof(*ids));
	want = malloc(n * sizeof(*want));
	if (!ids || !want) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory loading %zu commits", n);
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		if (g->v[idx[i]].state != G_NEW)
			continue; /* (a duplicate is harmless: on_gload ignores a node already loaded) */
		want[k] = idx[i];
		ids[k] = g->v[idx[i]].id;
		k++;
	}
	if (k) {
		gload_ctx lc = {g, want, ids, 0};
		prolly_store *st = g->db->store;
		if (st->version >= 3 && st->get_ancestors) {
			/* This step's commits and, in the same round trip, those the next steps will
			 * likely want: their ancestors, breadth first. */
			prolly_stats d;
			memset(&d, 0, sizeof(d));
			d.store_reads = 1;
			d.store_read_items = k;
			rc = st->get_ancestors(st, ids, k, PROLLY_MAX(k * 4, (size_t)ANCESTORS_AHEAD),
			                       on_ancestor, &lc);
			prolly__stats_add(g->db, &d);
		} else {
			rc = prolly__load_raw(g->db, ids, k, on_gload, &lc);
		}
		if (lc.rc)
			rc = lc.rc;
		if (rc)
			goto cleanup;
		for (size_t i = 0; i < k; i++)
			if (g->v[want[i]].state == G_NEW)
				g->v[want[i]].state = G_MISSING;
	}
cleanup:
	free(ids);
	free(want);
	return rc;
}

/* 1 if node a is newer than node b: greater time, then greater id. */
static int newer(const graph *g, size_t a, size_t b)
{
	if (g->v[a].time != g->v[b].time)
		return g->v[a].time > g->v[b].time;
	return memcmp(g->v[a].id.bytes, g->v[b].id.bytes, PROLLY_ID_SIZE) > 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Merge base                                                                                 */
/* ------------------------------------------------------------------------------------------ */

enum { F_A = 1, F_B = 2, F_STALE = 4 };

/* a - b for b >= 0, saturating at INT64_MIN. */
static int64_t sat_sub(int64_t a, int64_t b)
{
	return a < INT64_MIN + b ? INT64_MIN : a - b;
}

/* How far back in time the step that reached nd went (0 for a start or a skewed clock). */
static int64_t step_of(const gnode *nd)
{
	if (nd->ctime == INT64_MIN || nd->ctime <= nd->time)
		return 0;
	if (nd->time < 0 && nd->ctime > INT64_MAX + nd->time)
		return INT64_MAX;
	return nd->ctime - nd->time;
}

/* Adds flags to node j, reached from a child of time ctime; queues it (to load or to expand)
 * when they grew. */
static int add_flags(graph *g, size_t j, unsigned f, int64_t ctime, ilist *load, ilist *pend)
{
	gnode *nd = &g->v[j];
	if ((nd->flags | f) == nd->flags)
		return 0;
	if (!nd->flags)
		nd->ctime = ctime;
	nd->flags |= f;
	if (nd->queued)
		return 0;
	nd->queued = 1;
	return ilist_push(nd->state == G_NEW ? load : pend, j);
}

/*
 * Paints the ancestors of a with F_A and of b with F_B, both sides at once, with one store call
 * per step (every commit the step reached). A commit carrying both is common; its ancestors get
 * F_STALE (they cannot be lowest). Flags only grow and a commit is expanded again when they
 * grow (B3), so the result does not depend on the order of expansion; the order only decides
 * how little is read. A step expands:
 *   - every stale or common commit (the stale wave goes first);
 *   - a commit of one side only if no stale or common commit waiting is newer than it (so
 *     nothing below a known common ancestor runs ahead of the wave), and it is not older than
 *     the other side's newest commit minus that commit's last step back in time (so a side far
 *     ahead in time walks alone until it comes down to the other; sides whose times interleave
 *     advance together, one store call per step for both).
 * The newest live commit always qualifies, so every step makes progress. Stops when every
 * waiting commit is stale. Common, non-stale commits are the candidates.
 */
static int paint(graph *g, size_t ia, size_t ib)
{
	ilist load = {0}, pend = {0}, next = {0};
	int rc = 0;

	g->v[ia].flags = F_A;
	g->v[ib].flags |= F_B;
	g->v[ia].ctime = g->v[ib].ctime = INT64_MIN;
	g->v[ia].queued = 1;
	if ((rc = ilist_push(&load, ia)))
		goto cleanup;
	if (ib != ia) {
		g->v[ib].queued = 1;
		if ((rc = ilist_push(&load, ib)))
			goto cleanup;
	}
	for (;;) {
		/* One store call for every commit the last step reached. */
		if ((rc = graph_load(g, load.v, load.n)))
			goto cleanup;
		for (size_t i = 0; i < load.n; i++)
			if ((rc = ilist_push(&pend, load.v[i])))
				goto cleanup;
		load.n = 0;

		/* The state the step decides on: each side's newest live commit, the newest stale or
		 * common one. */
		int64_t newest[2] = {INT64_MIN, INT64_MIN}, step[2] = {0, 0}, wave = INT64_MIN;
		int has[2] = {0, 0}, live = 0;
		for (size_t i = 0; i < pend.n; i++) {
			const gnode *nd = &g->v[pend.v[i]];
			unsigned side = nd->flags & (F_A | F_B);
			if (nd->state != G_LOADED) {
				live |= !(nd->flags & F_STALE);
				continue;
			}
			if ((nd->flags & F_STALE) || side == (F_A | F_B)) {
				wave = PROLLY_MAX(wave, nd->time);
				live |= !(nd->flags & F_STALE);
				continue;
			}
			int s = side == F_A ? 0 : 1;
			live = 1;
			if (!has[s] || nd->time > newest[s]) {
				newest[s] = nd->time;
				step[s] = step_of(nd);
			}
			has[s] = 1;
		}
		if (!live)
			break;

		next.n = 0;
		for (size_t i = 0; i < pend.n; i++) {
			size_t j = pend.v[i];
			gnode *nd = &g->v[j];
			unsigned f = nd->flags;
			nd->queued = 0;
			if (f == nd->done)
				continue;
			if (nd->state != G_LOADED) { /* missing: history ends here */
				nd->done = f;
				continue;
			}
			int common = (f & F_A) && (f & F_B);
			int go = (f & F_STALE) || common;
			if (!go) {
				int o = (f & F_A) ? 1 : 0; /* the other side */
				go = nd->time >= wave && (!has[o] || nd->time >= sat_sub(newest[o], step[o]));
			}
			if (!go) {
				nd->queued = 1;
				if ((rc = ilist_push(&next, j)))
					goto cleanup;
				continue;
			}
			unsigned pf = common ? (f | F_STALE) : f;
			int64_t t = nd->time;
			nd->done = f;
			for (uint32_t p = 0; p < g->v[j].np; p++) {
				size_t k;
				prolly_id pid = *gparent(g, &g->v[j], p);
				if ((rc = graph_get(g, &pid, &k)) || (rc = add_flags(g, k, pf, t, &load, &next)))
					goto cleanup;
			}
		}
		ilist tmp = pend;
		pend = next;
		next = tmp;
		if (!pend.n && !load.n)
			break;
	}
cleanup:
	free(load.v);
	free(pend.v);
	free(next.v);
	return rc;
}

#define MAX_CANDIDATES 64

/*
 * Drops candidates that are ancestors of other candidates (the paint can stop before the stale
 * marks reach them): walks down from every candidate's parents carrying the candidate's bit, not
 * below the oldest candidate (older commits cannot be ancestors-or-equal of a candidate in
 * history where parents are older, B2). A candidate reached by any bit is redundant.
 */
static int drop_redundant(graph *g, size_t *cand, size_t *ncand)
{
	ilist load = {0}, pend = {0}, next = {0};
	int64_t oldest = INT64_MAX;
	size_t n = *ncand, kept = 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		oldest = PROLLY_MIN(oldest, g->v[cand[i]].time);
	for (size_t i = 0; i < g->n; i++) {
		g->v[i].bits = g->v[i].bdone = 0;
		g->v[i].queued = 0;
	}
	for (size_t i = 0; i < n; i++) {
		const gnode *c = &g->v[cand[i]];
		for (uint32_t p = 0; p < c->np; p++) {
			size_t k;
			prolly_id pid = *gparent(g, c, p);
			if ((rc = graph_get(g, &pid, &k)))
				goto cleanup;
			gnode *nd = &g->v[k];
			nd->bits |= (uint64_t)1 << i;
			if (!nd->queued) {
				nd->queued = 1;
				if ((rc = ilist_push(nd->state == G_NEW ? &load : &pend, k)))
					goto cleanup;
			}
		}
	}
	while (load.n || pend.n) {
		if ((rc = graph_load(g, load.v, load.n)))
			goto cleanup;
		for (size_t i = 0; i < load.n; i++)
			if ((rc = ilist_push(&pend, load.v[i])))
				goto cleanup;
		load.n = 0;
		next.n = 0;
		for (size_t i = 0; i < pend.n; i++) {
			size_t j = pend.v[i];
			gnode *nd = &g->v[j];
			nd->queued = 0;
			if (nd->bits == nd->bdone || nd->state != G_LOADED || nd->time < oldest)
				continue;
			uint64_t b = nd->bits;
			nd->bdone = b;
			for (uint32_t p = 0; p < nd->np; p++) {
				size_t k;
				prolly_id pid = *gparent(g, &g->v[j], p);
				if ((rc = graph_get(g, &pid, &k)))
					goto cleanup;
				gnode *pn = &g->v[k];
				if ((pn->bits | b) == pn->bits)
					continue;
				pn->bits |= b;
				if (!pn->queued) {
					pn->queued = 1;
					if ((rc = ilist_push(pn->state == G_NEW ? &load : &next, k)))
						goto cleanup;
				}
			}
		}
		ilist tmp = pend;
		pend = next;
		next = tmp;
	}
	for (size_t i = 0; i < n; i++)
		if (!g->v[cand[i]].bits)
			cand[kept++] = cand[i];
	*ncand = kept;
cleanup:
	free(load.v);
	free(pend.v);
	free(next.v);
	return rc;
}

static int not_found_commit(const prolly_id *id)
{
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, id);
	return prolly_set_error(PROLLY_ENOTFOUND, "commit %s not found", hex);
}

int prolly_merge_base(prolly_id *out, prolly_db *db, const prolly_id *a, const prolly_id *b)
{
	graph g;
	size_t ia, ib, cand[MAX_CANDIDATES], ncand = 0;
	int rc;

	graph_init(&g, db, 0);
	if ((rc = graph_get(&g, a, &ia)) || (rc = graph_get(&g, b, &ib)))
		goto cleanup;
	if ((rc = paint(&g, ia, ib)))
		goto cleanup;
	if (g.v[ia].state != G_LOADED || g.v[ib].state != G_LOADED) {
		rc = not_found_commit(g.v[ia].state != G_LOADED ? a : b);
		goto cleanup;
	}
	/* The candidates, newest first; beyond MAX_CANDIDATES only the newest are considered. */
	for (size_t i = 0; i < g.n; i++) {
		const gnode *nd = &g.v[i];
		if (nd->state != G_LOADED || (nd->flags & (F_A | F_B | F_STALE)) != (F_A | F_B))
			continue;
		size_t at;
		if (ncand < MAX_CANDIDATES) {
			at = ncand++;
		} else {
			if (!newer(&g, i, cand[MAX_CANDIDATES - 1]))
				continue;
			at = MAX_CANDIDATES - 1;
		}
		cand[at] = i;
		while (at > 0 && newer(&g, cand[at], cand[at - 1])) {
			size_t t = cand[at];
			cand[at] = cand[at - 1];
			cand[at - 1] = t;
			at--;
		}
	}
	if (ncand > 1 && (rc = drop_redundant(&g, cand, &ncand)))
		goto cleanup;
	if (!ncand) {
		char ha[PROLLY_ID_HEX_SIZE], hb[PROLLY_ID_HEX_SIZE];
		int cut = 0;
		for (size_t i = 0; i < g.n && !cut; i++)
			cut = g.v[i].state == G_MISSING;
		prolly_id_to_hex(ha, a);
		prolly_id_to_hex(hb, b);
		/* A parent that is gone may have been the common history: say so, never "unrelated". */
		if (cut)
			rc = prolly_set_error(PROLLY_EPRUNED,
			                      "commits %s and %s: no merge base is left; retention (gc) "
			                      "removed part of their history",
			                      ha, hb);
		else
			rc = prolly_set_error(PROLLY_ENOTFOUND, "commits %s and %s share no history", ha, hb);
		goto cleanup;
	}
	/* Several lowest common ancestors (criss-cross history): the newest, deterministically. */
	*out = g.v[cand[0]].id;
cleanup:
	graph_dispose(&g);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Log                                                                                        */
/* ------------------------------------------------------------------------------------------ */

static void heap_push(const graph *g, size_t *h, size_t *n, size_t x)
{
	size_t i = (*n)++;
	h[i] = x;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!newer(g, h[i], h[p]))
			break;
		size_t t = h[i];
		h[i] = h[p];
		h[p] = t;
		i = p;
	}
}

static size_t heap_pop(const graph *g, size_t *h, size_t *n)
{
	size_t top = h[0], i = 0;
	h[0] = h[--*n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < *n && newer(g, h[l], h[m]))
			m = l;
		if (r < *n && newer(g, h[r], h[m]))
			m = r;
		if (m == i)
			break;
		size_t t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
	return top;
}

int prolly_log(prolly_db *db, const prolly_id *commit, prolly_commit_fn fn, void *payload)
{
	graph g;
	ilist load = {0}, heap = {0};
	size_t start;
	int rc;

	graph_init(&g, db, 1);
	if (!fn) {
		rc = prolly_set_error(PROLLY_EINVAL, "prolly_log needs a callback");
		goto cleanup;
	}
	if ((rc = graph_get(&g, commit, &start)) || (rc = ilist_push(&load, start)))
		goto cleanup;
	g.v[start].queued = 1;
	for (;;) {
		/* Every commit known but not yet loaded is loaded (one call) before the next is chosen,
		 * so the one chosen is the newest of the whole frontier. */
		if (load.n) {
			if ((rc = graph_load(&g, load.v, load.n)))
				goto cleanup;
			for (size_t i = 0; i < load.n; i++) {
				size_t j = load.v[i];
				if (g.v[j].state != G_LOADED) {
					if (j == start) {
						rc = not_found_commit(commit);
						goto cleanup;
					}
					continue; /* removed by retention: history stops here, quietly */
				}
				if (heap.n == heap.cap) { /* make room for one more */
					if ((rc = ilist_push(&heap, 0)))
						goto cleanup;
					heap.n--;
				}
				heap_push(&g, heap.v, &heap.n, j);
			}
			load.n = 0;
		}
		if (!heap.n)
			break;
		size_t j = heap_pop(&g, heap.v, &heap.n);
		prolly_commit *c = g.v[j].c;
		g.v[j].c = NULL;
		rc = fn(payload, c);
		for (size_t p = 0; !rc && p < c->n_parents; p++) {
			size_t k;
			if ((rc = graph_get(&g, &c->parents[p], &k)))
				break;
			if (!g.v[k].queued) {
				g.v[k].queued = 1; /* visited once */
				rc = ilist_push(&load, k);
			}
		}
		prolly_commit_free(c);
		if (rc)
			goto cleanup;
	}
cleanup:
	free(load.v);
	free(heap.v);
	graph_dispose(&g);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Merging branches                                                                           */
/* ------------------------------------------------------------------------------------------ */

int prolly_merge_branches(prolly_id *out_commit, prolly_merge_stats *stats, prolly_db *db,
                          const char *into, const char *from, const prolly_merge_options *opts,
                          const char *message)
{
	char iref[PROLLY_MAX_REF_NAME + 1], fref[PROLLY_MAX_REF_NAME + 1];
	char msg[2 * MAX_BRANCH_NAME + 32];
	prolly_txn *txn = NULL;
	prolly_commit *cs[3] = {NULL, NULL, NULL}; /* base, into, from */
	prolly_id heads[3], result, root, base_tree;
	prolly_merge_stats st;
	prolly_ref_update conf;
	int exists, rc, have_base = 0;

	memset(&st, 0, sizeof(st));
	if ((rc = branch_ref(iref, into)) || (rc = branch_ref(fref, from)))
		goto cleanup;
	if ((rc = prolly_txn_begin(&txn, db)))
		goto cleanup;
	if ((rc = read_head_at(txn, iref, &heads[1], &exists, NULL)))
		goto cleanup;
	if (!exists) {
		rc = prolly_set_error(PROLLY_ENOTFOUND, "no branch '%s' to merge into", into);
		goto cleanup;
	}
	if ((rc = prolly__get_ref(db, fref, &heads[2]))) {
		if (rc == PROLLY_ENOTFOUND)
			prolly_set_error(rc, "no branch '%s' to merge from", from);
		goto cleanup;
	}
	result = heads[1];
	if (prolly_id_equal(&heads[1], &heads[2]))
		goto done; /* same head: nothing to do */
	if (opts && opts->base) {
		heads[0] = *opts->base;
		have_base = 1;
	} else if ((rc = prolly_merge_base(&heads[0], db, &heads[1], &heads[2])) == 0) {
		have_base = 1;
	} else if ((rc == PROLLY_ENOTFOUND || rc == PROLLY_EPRUNED) && opts && opts->allow_unrelated) {
		rc = 0; /* merge against the empty tree, as asked */
	} else {
		if (rc == PROLLY_ENOTFOUND)
			prolly_set_error(rc,
			                 "branches '%s' and '%s' share no history; not merged (allow "
			                 "unrelated histories or name a base to merge anyway)",
			                 into, from);
		else if (rc == PROLLY_EPRUNED)
			prolly_set_error(rc,
			                 "the merge base of '%s' and '%s' is gone (removed by retention); not "
			                 "merged (name a base, or allow unrelated histories)",
			                 into, from);
		goto cleanup;
	}
	/* An explicit base always gives a three-way merge, never a shortcut. */
	if (have_base && !(opts && opts->base) && prolly_id_equal(&heads[0], &heads[2]))
		goto done; /* from is already in into */
	if (have_base && !(opts && opts->base) && prolly_id_equal(&heads[0], &heads[1])) {
		result = heads[2]; /* fast-forward */
		if ((rc = prolly_txn_set_reason(txn, "fast-forward", NULL)))
			goto cleanup;
	} else {
		if (have_base) {
			if ((rc = read_commits(db, heads, 3, cs))) {
				if (rc == PROLLY_ENOTFOUND && !(opts && opts->base))
					rc = prolly_set_error(PROLLY_EPRUNED,
					                      "the merge base of '%s' and '%s' is gone (removed by "
					                      "retention); not merged",
					                      into, from);
				goto cleanup;
			}
			base_tree = cs[0]->tree;
			uint64_t cnt; /* the base's tree must still be there: retention may have taken it */
			rc = prolly_count(&cnt, db, &base_tree);
			if (rc == PROLLY_ENOTFOUND && opts && opts->allow_unrelated && !opts->base) {
				base_tree = db->empty_tree; /* the base's tree is gone: as asked, none */
				rc = 0;
			}
			if (rc) {
				if (rc == PROLLY_ENOTFOUND)
					rc = prolly_set_error(PROLLY_EPRUNED,
					                      "the tree of the merge base of '%s' and '%s' was "
					                      "removed by retention; not merged",
					                      into, from);
				goto cleanup;
			}
		} else {
			base_tree = db->empty_tree;
			if ((rc = read_commits(db, heads + 1, 2, cs + 1)))
				goto cleanup;
		}
		if ((rc = prolly_merge(&root, &st, txn, &base_tree, &cs[1]->tree, &cs[2]->tree, opts)))
			goto cleanup;
		if (!message) {
			snprintf(msg, sizeof(msg), "merge '%s' into '%s'", from, into);
			message = msg;
		}
		if ((rc = prolly_commit_create(&result, txn, &root, &heads[1], 2,
		                               next_time(PROLLY_MAX(cs[1]->time_us, cs[2]->time_us)),
		                               message)))
			goto cleanup;
	}
	if ((rc = prolly_txn_move_branch(txn, into, &heads[1], &result)))
		goto cleanup;
	memset(&conf, 0, sizeof(conf));
	rc = prolly_txn_commit(txn, &conf, 1);
	if (rc == PROLLY_ECONFLICT) {
		prolly_id winner;
		int have;
		rc = lost_race(db, into, iref, &conf, &winner, &have);
		goto cleanup;
	}
	if (rc)
		goto cleanup;
done:
	if (out_commit)
		*out_commit = result;
	if (stats)
		*stats = st;
cleanup:
	for (int i = 0; i < 3; i++)
		prolly_commit_free(cs[i]);
	prolly_txn_free(txn);
	return rc;
}
