/*
 * sync.c - copying history between stores (prolly_sync): every object reachable from some
 * commits that the destination lacks, then the refs, by compare-and-swap.
 *
 * The walk rests on K6 of prolly/store.h: a store holds an object only together with everything
 * below it (a tree node with its subtree, a commit with its tree and its parents, as far as
 * retention kept them). So one question per object, "does the destination have it?", decides
 * a whole subtree, and a sync keeps K6 in the destination by writing in that order:
 *
 *   SY1 A tree node is written after every child it has (or in the same write). copy_level walks
 *       a batch of ids at one level: asks the destination which it has (has_nodes, one round
 *       trip), reads the rest from the source (get_nodes, one round trip, every object
 *       hash-checked), recurses into their children in batches, and adds the batch to the write
 *       being gathered (SY6) last.
 *   SY2 A commit is written after its tree and after every parent it has in the source: the
 *       missing commits are found newest first, a window of a batch of them at a time, then
 *       written oldest window first and parents first within one (a depth-first post-order
 *       over the window's), each after its tree (sync_history.c, SY8).
 *   SY3 Refs move last, in one write through a txn (reflogged like any move), each by the
 *       compare-and-swap the caller gave, with the ref targets' commit objects rewritten in that
 *       write so that the store's gc keeps their trees (prolly_store_write.requires).
 *   SY4 Every write checks the destination's gc epoch read when the sync began: a gc meanwhile
 *       (which may remove the nodes already copied, unreferenced as they are) fails the sync
 *       with PROLLY_ECONFLICT, saying so whichever write found it (the refs' one too), and a
 *       rerun starts over from what survived.
 *   SY5 The history walk reads ahead where the source has get_ancestors (sync_history.c,
 *       fetch_commits).
 *   SY6 Writes are gathered: objects join one list in the order SY1 and SY2 put them (children
 *       before parents, trees before their commit, parents before children), and a write goes
 *       when the list holds a write's worth of them (the caller's batch, else
 *       SYNC_WRITE_DEFAULT into a local store: fewer, larger commits, each of which flushes
 *       its data; a server store (PROLLY_STORE_REMOTE) keeps SYNC_BATCH_DEFAULT, which
 *       PostgreSQL takes in its one-statement write), whatever
 *       their levels and commits; leaves and
 *       commits are read from the source then, in one call for the write. So every write
 *       carries everything it references that the destination lacks, or it went in an earlier
 *       write; an id in the list counts as held by the destination (it gets there first).
 *   SY7 A known head: a ref update that expects commit X, where the destination's ref holds X
 *       now and the source has X and its tree's root, makes X known (find_known): by K6 the
 *       destination holds X's whole tree and history, and the source the whole tree. The walk
 *       then asks the destination nothing about trees: each missing commit's tree is compared
 *       in the source with the trees the destination holds of its first two parents that are
 *       known (X, one copied by this sync, or one found present by a question that asked about
 *       its tree too) by the diff walk (diff.c D6), which yields the nodes the tree has and the
 *       other lacks, children first, skipping every shared subtree; with two (a merge) a node
 *       in either is skipped. Commits: one newer than the oldest known head
 *       cannot be its ancestor (a commit is newer than its parents, BR2 in branch.c) and is
 *       taken as missing without a question; an older one the walk reaches is asked about,
 *       with its tree. Where a parent is newer than its child that guess can be wrong: the
 *       commit is then copied although the destination has it, a no-op (K3), and the walk goes
 *       on below it; never a commit left out. Should the destination hold some of these already (from another
 *       branch), writing them again changes nothing (K3). A commit with no such parent (a
 *       root of an unrelated history) has its tree asked about, as SY1; so has every tree
 *       without a known head (a clone, a forced push over a head the source lacks).
 *   SY8 The history goes in windows of a batch of commits, found newest first, copied oldest
 *       window first; every window but the last is walked again from a checkpoint when its
 *       turn comes (sync_history.c).
 *   SY9 The checkpoints are bounded (prolly__sync_cp_limit ids): past that a history goes in
 *       rounds, each copying the oldest part still missing and walking again from the start
 *       (sync_history.c).
 *  SY10 Retention removes the trees of old commits, never the tree of a commit a ref names (gc
 *       keeps those): a ref's new commit whose tree the source lacks is damage in the source,
 *       and the sync fails (PROLLY_ECORRUPT, naming the ref) before any ref moves; an older
 *       commit without its tree is copied without it.
 *  SY11 The source is read as it is, not from one snapshot: a gc there during the sync (after
 *       a branch moved, or retention reaching older commits) may remove what the walk is about
 *       to read. The source's gc epoch as its handle knows it (read at the latest by its open,
 *       before anything else of the source) is taken when the sync begins; a sync that then
 *       fails on an object the source lacks (PROLLY_ENOTFOUND, PROLLY_ECORRUPT) reads it again
 *       and, if it rose, fails with PROLLY_ECONFLICT instead: nothing is damaged, and a rerun
 *       from the source's refs as they are now completes (prolly__sync_src_gc in sync_io.c).
 *       Every gc makes its removals visible only with a higher epoch (LMDB: in the same write;
 *       PostgreSQL: each sweep batch bumps it in its own transaction; memory: under its lock).
 *  SY12 A ref update that loses its compare-and-swap to a ref already holding the update's new
 *       value (or already absent, for a removal) is done, not a conflict: another sync made the
 *       same move (two fetches of one remote into one store, a push repeated). The others are
 *       written again without it (their expectations unchanged); any other lost update still
 *       fails the sync with PROLLY_ECONFLICT, nothing moved.
 *  SY13 prolly__sync_guarded adds one more compare-and-swap to the refs' write, a guard that
 *       moves nothing (its value is the one it expects): a fetch's remote record, so that a
 *       remote removed during the fetch gets no tracking ref back (remote.c, RM7). A lost guard
 *       is never settled (SY12): the sync fails with PROLLY_ECONFLICT, no ref moved.
 *
 *  SY14 A sync with a known head (SY7) asks nothing about what it takes as missing, so the rerun of
 *       one that was cut off (killed, connection lost) would send everything again, what the
 *       cut run wrote included. When it takes more than one write, it asks the destination about
 *       the objects of its first write (one has_nodes call) and leaves out those held, and goes
 *       on asking about each next write while the last one asked about was held entirely:
 *       writes go in the same order each run, so the rerun skips what the cut run wrote and
 *       stops asking at the first write that finds something missing. A whole sync of many
 *       writes asks once; one of a single write (a small push) asks nothing.
 *  SY15 The two stores have the same node size (prolly_db_node_size), or the sync is
 *       PROLLY_EINVAL before it reads or writes anything: trees copied into a store of another
 *       size would be trees its own edits do not make (root ids no longer a function of the
 *       records there).
 *  SY16 A commit found present by asking the destination (with its tree) may be one whose tree
 *       the source's retention removed (kept alone, between a merge base and a head): its
 *       tree cannot be compared with in the source, so a child's tree that would be is asked
 *       about instead (copy_tree_local's 2). It used to fail the sync at rest, "tree not found".
 *  SY17 A sync that SY4 failed is run again, up to SYNC_ATTEMPTS attempts in all, each from the
 *       start (the destination's epoch read again, then only what is still missing copied):
 *       a gc of the destination removes what is unreferenced, never what a ref reaches, so an
 *       attempt copies again at most what the one before had written. The counters add up
 *       every attempt's work. A gc of the source (SY11) is not retried here: the caller's
 *       refs may name what it removed, so the caller reads them again (push, fetch).
 *
 * So an interrupted sync leaves the destination with complete subtrees and no ref at anything
 * missing; a rerun copies only what is still missing.
 *
 * Memory, bounded by the batch and not by the history (SY8, checked by
 * sync_memory_bounded_by_batch in tests/test_sync_cost.c through prolly__sync_last_held): the write
 * being gathered (a write's worth of objects, SY6); one batch of node bytes and child ids per
 * tree level while asking (height x batch), or the diff walk's windows (diff.c) while
 * comparing; of the history, one window (a batch of commits with their parents), the walk's
 * frontier and a batch read ahead (sync_history.c); the trees known (SY7) for one window: the
 * known heads', the window's, and those of the commits the window stops at; a merge's
 * comparison set (the ids of the nodes its tree has and its first parent's lacks), a write's
 * worth at most: a merge past that is compared with its first parent alone and the nodes that
 * differ are asked about, a batch per question (has_nodes calls a merge compared with both
 * parents does without); the checkpoints, the walk's frontier where each window ended (32 bytes
 * per commit of it: one id per batch of commits of a linear history), at most
 * prolly__sync_cp_limit ids: a longer history goes in rounds, each walking again from the start
 * (SY9). A history longer than a window is walked twice (sync_history.c, SY8).
 */
#include "sync_int.h"

#include <stdlib.h>

#define SYNC_BATCH_DEFAULT 512
#define SYNC_WRITE_DEFAULT 4096 /* objects per write when the caller names no batch (SY6) */
#define SYNC_BATCH_MAX 65536
#define SYNC_ATTEMPTS 3 /* SY17 */
#define PEND_CARRIED 1  /* pending: in the gathered write */
#define PEND_HELD 2     /* pending: found in the destination, left out of the write (SY14) */
#define ASK_NO 0        /* s->ask_writes (SY14): the writes go unasked */
#define ASK_FULL 1      /* a full write is asked about: the sync has more than one */
#define ASK_ALWAYS 2    /* every write is: the last one asked was all in the destination */

/* ---- writing the destination (SY6) ---------------------------------------------------- */

static void pend_dispose(sync_ctx *s)
{
	for (size_t i = 0; i < s->n_pend; i++)
		free((void *)s->pend[i].data);
	free(s->pend);
	free(s->pend_commit);
	s->pend = NULL;
	s->pend_commit = NULL;
	s->n_pend = 0;
	prolly__idmap_dispose(&s->pending);
	prolly_buf_dispose(&s->req);
}

/* SY14: takes out of the gathered write what the destination holds already (one question),
 * each marked PEND_HELD in pending: held, required by the write where referenced, not carried.
 * Asking stops once some object is missing: what an earlier run wrote lies behind. */
static int drop_held(sync_ctx *s)
{
	prolly_id *held = malloc(s->n_pend * sizeof(*held));
	unsigned char *has = malloc(s->n_pend);
	size_t k = 0, n_held = 0;
	int rc = 0;
	if (!held || !has) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory syncing %zu objects", s->n_pend);
		goto cleanup;
	}
	for (size_t i = 0; i < s->n_pend; i++)
		held[i] = s->pend[i].id;
	if ((rc = prolly__sync_has(s, held, s->n_pend, has)))
		goto cleanup;
	s->ask_writes = ASK_ALWAYS;
	for (size_t i = 0; i < s->n_pend; i++) {
		if (has[i]) {
			free((void *)s->pend[i].data);
			held[n_held++] = s->pend[i].id;
			continue;
		}
		s->ask_writes = ASK_NO;
		s->pend[k] = s->pend[i];
		s->pend_commit[k++] = s->pend_commit[i];
	}
	s->n_pend = k;
	for (size_t i = 0; i < n_held && !rc; i++)
		rc = prolly__idmap_put(&s->pending, &held[i], PEND_HELD);

cleanup:
	free(held);
	free(has);
	return rc;
}

/* SY4: a write of the sync found the destination's gc epoch moved (now) since the sync read it. */
static int dst_gc_ran(sync_ctx *s, uint64_t now)
{
	s->dst_gc = 1; /* SY17 */
	return prolly_set_error(PROLLY_ECONFLICT,
	                        "sync: a gc ran on the destination meanwhile (epoch %llu, now %llu); "
	                        "run the sync again",
	                        (unsigned long long)s->epoch, (unsigned long long)now);
}

/* Sends the gathered write: reads what it lacks of the source in one call (leaves and commits),
 * then writes it all in one store write. */
static int flush(sync_ctx *s)
{
	prolly_id *ids = NULL;
	size_t *at = NULL, nr = 0;
	prolly_buf req = PROLLY_BUF_INIT;
	fetched f;
	int rc = 0;
	memset(&f, 0, sizeof(f));
	if (!s->n_pend)
		return 0;
	/* SY14: a sync of more than one write asks about each until one finds something missing. */
	if ((s->ask_writes == ASK_ALWAYS || (s->ask_writes && s->n_pend == s->wbatch)) &&
	    (rc = drop_held(s)))
		goto cleanup;
	if (!s->n_pend)
		goto cleanup;
	ids = malloc(s->n_pend * sizeof(*ids));
	at = malloc(s->n_pend * sizeof(*at));
	if (!ids || !at) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory syncing %zu objects", s->n_pend);
		goto cleanup;
	}
	for (size_t i = 0; i < s->n_pend; i++)
		if (!s->pend[i].data) {
			at[nr] = i;
			ids[nr++] = s->pend[i].id;
		}
	if ((rc = prolly__sync_fetch(s, &f, ids, nr)))
		goto cleanup;
	for (size_t j = 0; j < nr; j++) {
		char hex[PROLLY_ID_HEX_SIZE];
		if (!f.nodes[j].data) {
			prolly_id_to_hex(hex, &ids[j]);
			rc = s->pend_commit[at[j]]
			         ? prolly_set_error(PROLLY_ENOTFOUND,
			                            "sync: commit %s left the source during the sync", hex)
			         : prolly_set_error(PROLLY_ECORRUPT, "sync: node %s missing from the source",
			                            hex);
			goto cleanup;
		}
		s->pend[at[j]].data = f.nodes[j].data; /* pend owns it now */
		s->pend[at[j]].size = f.nodes[j].size;
		f.nodes[j].data = NULL;
	}
	/* What the write builds on without carrying it. */
	const prolly_id *r = (const prolly_id *)(const void *)s->req.ptr;
	for (size_t i = 0; i < s->req.size / PROLLY_ID_SIZE && !rc; i++)
		if (prolly__idmap_get(&s->pending, &r[i]) != PEND_CARRIED)
			rc = prolly__buf_put(&req, r[i].bytes, PROLLY_ID_SIZE);
	if (rc)
		goto cleanup;
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = s->pend;
	w.n_nodes = s->n_pend;
	w.check_epoch = 1; /* SY4 */
	w.epoch = s->epoch;
	w.requires = (const prolly_id *)(const void *)req.ptr;
	w.n_requires = req.size / PROLLY_ID_SIZE;
	s->st.write_calls++;
	rc = prolly__sync_side(s, s->dst, prolly__store_write(s->dst, &w));
	if (rc == PROLLY_ECONFLICT) {
		rc = dst_gc_ran(s, w.current_epoch);
		goto cleanup;
	}
	if (rc)
		goto cleanup;
	for (size_t i = 0; i < s->n_pend; i++) {
		if (s->pend_commit[i])
			s->st.commits_copied++;
		else
			s->st.nodes_copied++;
		s->st.bytes_copied += s->pend[i].size;
	}

cleanup:
	pend_dispose(s); /* written, or failed: the sync stops either way */
	prolly__idmap_init(&s->pending);
	prolly__sync_fetched_dispose(&f);
	prolly_buf_dispose(&req);
	free(ids);
	free(at);
	return rc;
}

/* Adds an object to the gathered write (SY6), after everything it references that the
 * destination lacks; data (NULL: read at the write) becomes the write's. Sends the write when it
 * holds a batch. */
static int pend_add(sync_ctx *s, const prolly_id *id, void *data, size_t size, int commit)
{
	int rc;
	if (prolly__idmap_get(&s->pending, id)) {
		free(data);
		return 0;
	}
	if (!s->pend) {
		s->pend = malloc(s->wbatch * sizeof(*s->pend));
		s->pend_commit = malloc(s->wbatch);
		if (!s->pend || !s->pend_commit) {
			free(data);
			return prolly_set_error(PROLLY_ENOMEM, "out of memory syncing");
		}
	}
	if ((rc = prolly__idmap_put(&s->pending, id, PEND_CARRIED))) {
		free(data);
		return rc;
	}
	s->pend[s->n_pend].id = *id;
	s->pend[s->n_pend].data = data;
	s->pend[s->n_pend].size = size;
	s->pend_commit[s->n_pend++] = (unsigned char)commit;
	return s->n_pend == s->wbatch ? flush(s) : 0;
}

/* Adds a node read from the source (bytes copied) and notes its children as required. */
static int pend_node(sync_ctx *s, const prolly_id *id, const pnode *nd)
{
	int rc = 0;
	for (uint32_t j = 0; nd && nd->level > 0 && j < nd->n && !rc; j++)
		rc = prolly__buf_put(&s->req, prolly__node_child(nd, j), PROLLY_ID_SIZE);
	if (rc || !nd)
		return rc ? rc : pend_add(s, id, NULL, 0, 0);
	void *copy = malloc(nd->size ? nd->size : 1);
	if (!copy)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory copying a %zu-byte node", nd->size);
	memcpy(copy, nd->bytes, nd->size);
	return pend_add(s, id, copy, nd->size, 0);
}

/* ---- trees (SY1) ------------------------------------------------------------------------ */

/* Copies the subtrees of ids[0..n) (n <= batch, tree nodes at any level) that the destination
 * lacks, asking it (the fallback of SY7). With gone set, ids are commits' trees, and one the
 * source lacks (retention removed it there) is put in gone and skipped. A child the source lacks
 * is PROLLY_ECORRUPT: its parent names it. An id in the gathered write counts as held: it
 * reaches the destination before anything added after it (SY6). */
static int copy_level(sync_ctx *s, const prolly_id *ids, size_t n, prolly__idmap *gone)
{
	prolly_id *want = NULL;
	unsigned char *has = NULL;
	size_t *keep = NULL, *kids_end = NULL;
	prolly_buf kids = PROLLY_BUF_INIT;
	prolly__idmap seen;
	fetched f;
	size_t nw = 0, nkeep = 0;
	int rc = 0;

	memset(&f, 0, sizeof(f));
	prolly__idmap_init(&seen);
	want = malloc((n ? n : 1) * sizeof(*want));
	has = malloc(n ? n : 1);
	keep = malloc((n ? n : 1) * sizeof(*keep));
	kids_end = malloc((n ? n : 1) * sizeof(*kids_end));
	if (!want || !has || !keep || !kids_end) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory syncing %zu nodes", n);
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) { /* the empty tree is every store's without being stored */
		if (prolly_id_equal(&ids[i], &s->dst->empty_tree) || prolly__idmap_get(&seen, &ids[i]) ||
		    prolly__idmap_get(&s->pending, &ids[i]))
			continue;
		if ((rc = prolly__idmap_put(&seen, &ids[i], 1)))
			goto cleanup;
		want[nw++] = ids[i];
	}
	if ((rc = prolly__sync_has(s, want, nw, has)))
		goto cleanup;
	size_t nm = 0;
	for (size_t i = 0; i < nw; i++)
		if (!has[i])
			want[nm++] = want[i];
	if (!nm)
		goto cleanup;
	if ((rc = prolly__sync_fetch(s, &f, want, nm)))
		goto cleanup;
	for (size_t i = 0; i < nm; i++) {
		pnode *nd = NULL;
		if (!f.nodes[i].data) {
			if (gone) {
				if ((rc = prolly__idmap_put(gone, &want[i], 1)))
					goto cleanup;
				continue;
			}
			char hex[PROLLY_ID_HEX_SIZE];
			prolly_id_to_hex(hex, &want[i]);
			rc = prolly_set_error(PROLLY_ECORRUPT, "sync: node %s missing from the source", hex);
			goto cleanup;
		}
		if ((rc = prolly__node_decode(&nd, &want[i], f.nodes[i].data, f.nodes[i].size, 0)))
			goto cleanup;
		for (uint32_t j = 0; nd->level > 0 && j < nd->n && !rc; j++)
			rc = prolly__buf_put(&kids, prolly__node_child(nd, j), PROLLY_ID_SIZE);
		prolly__node_unref(nd);
		if (rc)
			goto cleanup;
		kids_end[nkeep] = kids.size;
		keep[nkeep++] = i;
	}
	size_t nk = kids.size / PROLLY_ID_SIZE;
	const prolly_id *k = (const prolly_id *)(const void *)kids.ptr;
	for (size_t at = 0; at < nk && !rc; at += s->batch)
		rc = copy_level(s, k + at, PROLLY_MIN(s->batch, nk - at), NULL);
	for (size_t j = 0; j < nkeep && !rc; j++) { /* SY1: after every child */
		prolly_store_node *x = &f.nodes[keep[j]];
		size_t from = j ? kids_end[j - 1] : 0;
		void *data = (void *)x->data;
		/* its children: what the write that carries it builds on */
		if ((rc = prolly__buf_put(&s->req, kids.ptr + from, kids_end[j] - from)))
			break;
		x->data = NULL; /* the gathered write owns it now */
		rc = pend_add(s, &x->id, data, x->size, 0);
	}

cleanup:
	prolly__sync_fetched_dispose(&f);
	prolly__idmap_dispose(&seen);
	prolly_buf_dispose(&kids);
	free(keep);
	free(kids_end);
	free(want);
	free(has);
	return rc;
}

/* ---- trees compared locally (SY7) ------------------------------------------------------- */

static int on_missing_node(void *payload, const prolly_id *id, const pnode *nd)
{
	return pend_node(payload, id, nd);
}

/* SY8: the trees known for the next window: the known heads' and those of the commits in carry
 * (the next window's stop: commits copied by the windows before, or found present). */
static int known_reset(sync_ctx *s, const prolly__idmap *carry)
{
	prolly__idmap old = s->known;
	prolly_id *old_tree = s->ktree;
	int rc = 0;
	prolly__idmap_init(&s->known);
	s->ktree = NULL;
	s->n_known = s->cap_known = 0;
	for (size_t i = 0; i < s->n_heads && !rc; i++)
		rc = prolly__sync_know(s, &s->head[i], &s->head_tree[i]);
	for (size_t i = 0; carry && i < old.len && !rc; i++)
		if (old.vals[i] && prolly__idmap_get(carry, &old.ids[i]))
			rc = prolly__sync_know(s, &old.ids[i], &old_tree[old.vals[i] - 1]);
	prolly__idmap_dispose(&old);
	free(old_tree);
	return rc;
}

/* A merge's tree against two trees the destination holds: the first pass notes what the tree
 * lacks from the first, the second sends what it lacks from both. The first pass's set holds a
 * write's worth of ids at most (SY8): past that, the merge's tree is compared with the first
 * tree alone, and the nodes that differ are asked about, a batch per question (ask_pass). */
#define SYNC_OVER 2 /* the first pass outgrew its set */

typedef struct two_refs {
	sync_ctx *s;
	prolly__idmap first;
} two_refs;

static int on_first_pass(void *payload, const prolly_id *id, const pnode *nd)
{
	two_refs *t = payload;
	(void)nd;
	if (t->first.len >= t->s->wbatch)
		return SYNC_OVER;
	t->s->merge_ids = t->first.len + 1;
	prolly__sync_note_held(t->s);
	return prolly__idmap_put(&t->first, id, 1);
}

/* The nodes the diff walk yields, children first, asked about a batch at a time: those the
 * destination lacks join the write (after their children, which came before them). */
typedef struct ask_pass {
	sync_ctx *s;
	prolly_id *ids;
	pnode **nds; /* a reference each; NULL for a leaf */
	size_t n;
} ask_pass;

static int ask_pass_flush(ask_pass *a)
{
	unsigned char *has = malloc(a->n ? a->n : 1);
	int rc = has ? prolly__sync_has(a->s, a->ids, a->n, has)
	             : prolly_set_error(PROLLY_ENOMEM, "out of memory syncing");
	for (size_t i = 0; i < a->n; i++) {
		if (!rc && !has[i])
			rc = pend_node(a->s, &a->ids[i], a->nds[i]);
		prolly__node_unref(a->nds[i]);
	}
	a->n = 0;
	free(has);
	return rc;
}

static int on_ask_pass(void *payload, const prolly_id *id, const pnode *nd)
{
	ask_pass *a = payload;
	if (nd)
		prolly__node_ref((pnode *)nd);
	a->ids[a->n] = *id;
	a->nds[a->n++] = (pnode *)nd;
	return a->n == a->s->batch ? ask_pass_flush(a) : 0;
}

/* The nodes of tree that the destination lacks, from those that ref lacks, asked about. */
static int copy_tree_asked(sync_ctx *s, const prolly_id *ref, const prolly_id *tree)
{
	ask_pass a;
	int rc;
	a.s = s;
	a.n = 0;
	a.ids = malloc(s->batch * sizeof(*a.ids));
	a.nds = malloc(s->batch * sizeof(*a.nds));
	if (!a.ids || !a.nds)
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory syncing");
	else if ((rc = prolly__sync_side(s, s->src,
	                                 prolly__diff_nodes(s->src, ref, tree, on_ask_pass, &a))) == 0)
		rc = ask_pass_flush(&a);
	for (size_t i = 0; i < a.n; i++) /* a failure's leftovers */
		prolly__node_unref(a.nds[i]);
	free(a.ids);
	free(a.nds);
	return rc;
}

static int on_second_pass(void *payload, const prolly_id *id, const pnode *nd)
{
	two_refs *t = payload;
	return prolly__idmap_get(&t->first, id) ? pend_node(t->s, id, nd) : 0;
}

/* Gathers the nodes of tree that the destination lacks, compared with ref[0..n_ref) (1 or 2),
 * trees it holds (SY7): no question; the walk reads the trees from the source. With two (a
 * merge whose parents the destination both holds), a node in either is skipped with its
 * subtree. 1 when the source lacks the tree itself (retention removed it there); 2 when it
 * lacks one of the refs (SY16): nothing gathered, the caller asks instead. */
static int copy_tree_local(sync_ctx *s, const prolly_id *tree, const prolly_id *ref, size_t n_ref)
{
	prolly__nodeset ws;
	prolly_stats a = PROLLY_STATS_INIT, b = PROLLY_STATS_INIT;
	two_refs t;
	pnode *root;
	int rc;
	if (prolly_id_equal(tree, &s->dst->empty_tree) || prolly__idmap_get(&s->pending, tree))
		return 0;
	for (size_t i = 0; i < n_ref; i++)
		if (prolly_id_equal(tree, &ref[i]))
			return 0;
	t.s = s;
	prolly__idmap_init(&t.first);
	prolly__nodeset_init(&ws);
	prolly_thread_stats(&a);
	rc = prolly__load_ex(s->src, &ws, tree, 1, &root, PROLLY__LOAD_ROOTS);
	if (rc == PROLLY_ENOTFOUND)
		rc = 1;
	else if (!rc && (rc = prolly__load_ex(s->src, &ws, ref, n_ref, NULL, PROLLY__LOAD_ROOTS)) ==
	                    PROLLY_ENOTFOUND)
		rc = 2; /* SY16 */
	else if (!rc && n_ref == 1)
		rc = prolly__diff_nodes(s->src, &ref[0], tree, on_missing_node, s);
	else if (!rc && (rc = prolly__diff_nodes(s->src, &ref[0], tree, on_first_pass, &t)) == 0)
		rc = prolly__diff_nodes(s->src, &ref[1], tree, on_second_pass, &t);
	else if (rc == SYNC_OVER)
		rc = copy_tree_asked(s, &ref[0], tree);
	rc = prolly__sync_side(s, s->src, rc); /* its callbacks' failures name their side already */
	prolly__idmap_dispose(&t.first);
	s->merge_ids = 0;
	prolly__nodeset_dispose(&ws);
	prolly_thread_stats(&b);
	s->st.read_calls += b.store_reads - a.store_reads;
	return rc;
}

/* ---- commits (SY2) ---------------------------------------------------------------------- */

/* Adds commit c to the gathered write, after its tree: its tree and the parents it keeps are
 * what it builds on. */
static int pend_commit(sync_ctx *s, history *h, const mcommit *c, int tree_gone)
{
	int rc = 0;
	if (!tree_gone && !prolly_id_equal(&c->tree, &s->dst->empty_tree))
		rc = prolly__buf_put(&s->req, c->tree.bytes, PROLLY_ID_SIZE);
	for (size_t p = 0; p < c->n_parents && !rc; p++) {
		const prolly_id *pid = &h->parents[c->first_parent + p];
		if (prolly__sync_parent_kept(h, pid))
			rc = prolly__buf_put(&s->req, pid->bytes, PROLLY_ID_SIZE);
	}
	return rc ? rc : pend_add(s, &c->id, NULL, 0, 1);
}

const char *prolly__sync_ref_of(const sync_ctx *s, const prolly_id *id)
{
	uintptr_t k = prolly__idmap_get(&s->heads_of_refs, id);
	return k ? s->refs[k - 1].name : NULL;
}

/* SY10: a commit a ref is to name, whose tree the source lacks, fails the sync. */
static int head_tree_gone(const sync_ctx *s, const mcommit *c)
{
	const char *ref = prolly__sync_ref_of(s, &c->id);
	char ch[PROLLY_ID_HEX_SIZE], th[PROLLY_ID_HEX_SIZE];
	if (!ref)
		return 0;
	prolly_id_to_hex(ch, &c->id);
	prolly_id_to_hex(th, &c->tree);
	return prolly_set_error(PROLLY_ECORRUPT,
	                        "sync: %s names commit %s, whose tree %s is missing from the source",
	                        ref, ch, th);
}

/* Copies the window's commits parents first, each after its tree: compared locally with a tree
 * the destination holds (SY7), else asked about a batch of trees at a time. */
static int copy_window(sync_ctx *s, history *h)
{
	size_t *order = malloc((h->n ? h->n : 1) * sizeof(*order));
	prolly_id *ids = malloc(s->batch * sizeof(*ids));
	prolly__idmap gone;
	int rc;
	prolly__idmap_init(&gone);
	if (!order || !ids) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory copying %zu commits", h->n);
		goto cleanup;
	}
	if ((rc = prolly__sync_order(h, order)))
		goto cleanup;
	for (size_t at = 0; at < h->n && !rc; at += s->batch) {
		size_t m = PROLLY_MIN(s->batch, h->n - at);
		if (!s->local) {
			for (size_t i = 0; i < m; i++)
				ids[i] = h->c[order[at + i]].tree;
			if ((rc = copy_level(s, ids, m, &gone)))
				break;
		}
		for (size_t i = 0; i < m && !rc; i++) {
			const mcommit *c = &h->c[order[at + i]];
			int tree_gone = 0;
			if (s->local) {
				/* The trees of the first two parents the destination holds. */
				prolly_id ref[2];
				size_t n_ref = 0;
				for (size_t p = 0; p < c->n_parents && n_ref < 2; p++) {
					uintptr_t k = prolly__idmap_get(&s->known, &h->parents[c->first_parent + p]);
					if (k && !(n_ref && prolly_id_equal(&ref[0], &s->ktree[k - 1])))
						ref[n_ref++] = s->ktree[k - 1];
				}
				if (n_ref && (rc = copy_tree_local(s, &c->tree, ref, n_ref)) < 0)
					break;
				if (n_ref && rc != 2) {
					tree_gone = rc == 1;
				} else { /* unrelated to what the destination holds (or SY16): asked (SY1) */
					if ((rc = copy_level(s, &c->tree, 1, &gone)))
						break;
					tree_gone = prolly__idmap_get(&gone, &c->tree) != 0;
				}
				rc = tree_gone ? 0 : prolly__sync_know(s, &c->id, &c->tree);
			} else {
				tree_gone = prolly__idmap_get(&gone, &c->tree) != 0;
			}
			if (!rc && tree_gone)
				rc = head_tree_gone(s, c);
			if (!rc)
				rc = pend_commit(s, h, c, tree_gone);
		}
	}

cleanup:
	prolly__idmap_dispose(&gone);
	free(order);
	free(ids);
	return rc;
}

/* ---- refs (SY3) ------------------------------------------------------------------------- */

static int move_refs(sync_ctx *s, prolly_ref_update *refs, size_t n_refs,
                     const prolly_sync_options *o)
{
	prolly_txn *txn = NULL;
	prolly_id *targets = NULL;
	fetched f;
	const void *b;
	size_t nt = 0, bs;
	uint64_t now;
	int rc, lost = 0;
	memset(&f, 0, sizeof(f));
	if ((rc = prolly_txn_begin(&txn, s->dst)))
		return rc;
	txn->epoch = s->epoch; /* SY4 */
	targets = malloc((n_refs ? n_refs : 1) * sizeof(*targets));
	if (!targets) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory moving %zu refs", n_refs);
		goto cleanup;
	}
	for (size_t i = 0; i < n_refs; i++)
		if (!refs[i].remove)
			targets[nt++] = refs[i].value;
	/* The targets' commit objects go into the write again (a no-op for the store, K3), so that
	 * the write requires their trees (SY3). They come from the source, or else the destination
	 * had them all along. */
	if ((rc = prolly__sync_fetch(s, &f, targets, nt)))
		goto cleanup;
	for (size_t i = 0; i < nt && !rc; i++)
		if (f.nodes[i].data && prolly__txn_find_raw(txn, &targets[i], &b, &bs) != 0)
			rc = prolly__txn_add_raw(txn, &targets[i], f.nodes[i].data, f.nodes[i].size);
	for (size_t i = 0; i < n_refs && !rc; i++)
		rc = prolly_txn_set_ref(txn, &refs[i]);
	if (!rc && s->guard) /* SY13: queued last, so refs[i] stays the txn's i-th */
		rc = prolly_txn_set_ref(txn, s->guard);
	if (!rc && o->operation)
		rc = prolly_txn_set_reason(txn, o->operation, o->message);
	if (rc)
		goto cleanup;
	s->st.write_calls++;
	rc = prolly__sync_side(s, s->dst, prolly_txn_commit(txn, NULL, 0));
	/* The outcome of each update, as the store reported it: the txn queued refs[i] as its i-th. */
	for (size_t i = 0; i < n_refs && i < txn->n_refs; i++) {
		assert(strcmp(txn->refs[i].name, refs[i].name) == 0);
		refs[i].conflict = txn->refs[i].conflict;
		refs[i].current_exists = txn->refs[i].current_exists;
		refs[i].current = txn->refs[i].current;
	}
	for (size_t i = 0; i < txn->n_refs; i++) /* the guard (SY13) included */
		lost |= txn->refs[i].conflict;
	now = atomic_load(&s->dst->epoch);
	if (rc == PROLLY_ECONFLICT && !lost && now > s->epoch) /* SY4, said as the sync says it */
		rc = dst_gc_ran(s, now);

cleanup:
	prolly__sync_fetched_dispose(&f);
	free(targets);
	prolly_txn_free(txn);
	return rc;
}

/* SY12: whether a lost update found its ref as the update would have left it. */
static int settled(const prolly_ref_update *u)
{
	return u->remove ? !u->current_exists
	                 : u->current_exists && prolly_id_equal(&u->current, &u->value);
}

/* move_refs, with the updates that lost to a ref already at their new value taken as done and
 * the others written again without them (SY12). Each update's outcome lands in refs[]. */
static int move_refs_settled(sync_ctx *s, prolly_ref_update *refs, size_t n_refs,
                             const prolly_sync_options *o)
{
	prolly_ref_update *left = malloc(n_refs * sizeof(*left));
	size_t *at = malloc(n_refs * sizeof(*at)), m = n_refs;
	int rc;
	if (!left || !at) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory moving %zu refs", n_refs);
		goto cleanup;
	}
	for (size_t i = 0; i < n_refs; i++) {
		left[i] = refs[i];
		at[i] = i;
	}
	for (;;) {
		size_t k = 0;
		int lost = 0, done = 0;
		rc = move_refs(s, left, m, o);
		for (size_t i = 0; i < m; i++)
			refs[at[i]] = left[i];
		if (rc != PROLLY_ECONFLICT)
			break;
		for (size_t i = 0; i < m; i++) {
			if (left[i].conflict && settled(&left[i])) {
				refs[at[i]].conflict = 0; /* done by another */
				done = 1;
				continue;
			}
			lost |= left[i].conflict;
			left[k] = left[i];
			at[k++] = at[i];
		}
		if (lost || !done) /* a real loss, or a gc (no update lost): as it was */
			break;
		if ((m = k) == 0) {
			rc = 0;
			break;
		}
	}
cleanup:
	free(left);
	free(at);
	return rc;
}

/* ---- what the destination is known to hold (SY7) ----------------------------------------- */

/* The commits the refs' compare-and-swap expects in the destination, where the destination's
 * ref holds that commit now (so it holds its tree, K6) and the source has the commit and its
 * tree's root (so, K6 again, the whole tree): known, and never asked about. The refs are read
 * in one store call (get_refs where the store has it): a fetch of thousands of moved branches
 * costs one round trip here, not one per branch. */
static int find_known(sync_ctx *s, const prolly_ref_update *refs, size_t n_refs)
{
	prolly_id *cand = malloc((n_refs ? n_refs : 1) * sizeof(*cand));
	prolly_id *trees = malloc((n_refs ? n_refs : 1) * sizeof(*trees));
	int64_t *times = malloc((n_refs ? n_refs : 1) * sizeof(*times));
	unsigned char *ok = malloc(n_refs ? n_refs : 1);
	const char **names = malloc((n_refs ? n_refs : 1) * sizeof(*names));
	size_t *at = malloc((n_refs ? n_refs : 1) * sizeof(*at));
	prolly_id *cur = malloc((n_refs ? n_refs : 1) * sizeof(*cur));
	size_t nc = 0, nt = 0;
	fetched f;
	prolly__idmap seen; /* the candidates so far */
	int rc = 0;
	memset(&f, 0, sizeof(f));
	prolly__idmap_init(&seen);
	s->head = malloc((n_refs ? n_refs : 1) * sizeof(*s->head));
	s->head_tree = malloc((n_refs ? n_refs : 1) * sizeof(*s->head_tree));
	if (!cand || !trees || !times || !ok || !names || !at || !cur || !s->head || !s->head_tree) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory syncing");
		goto cleanup;
	}
	/* The refs that expect a value, read in one store call (get_refs): names[k] is refs[at[k]]. */
	size_t nn = 0;
	for (size_t i = 0; i < n_refs; i++)
		if (refs[i].expect == PROLLY_REF_EXPECT_VALUE) {
			names[nn] = refs[i].name;
			at[nn++] = i;
		}
	if ((rc = prolly__sync_side(s, s->dst, prolly__get_refs(s->dst, names, nn, cur, ok))))
		goto cleanup;
	for (size_t k = 0; k < nn; k++) {
		const prolly_id *want = &refs[at[k]].expected;
		size_t e;
		if (!ok[k] || !prolly_id_equal(&cur[k], want) ||
		    prolly__idmap_find(&seen, want) != PROLLY__IDMAP_NONE)
			continue;
		if ((rc = prolly__idmap_add(&seen, want, &e)) < 0)
			goto cleanup;
		rc = 0;
		cand[nc++] = *want;
	}
	if (!nc || (rc = prolly__sync_fetch(s, &f, cand, nc)))
		goto cleanup;
	for (size_t i = 0; i < nc; i++) {
		prolly_commit *c = NULL;
		ok[i] = 0;
		if (!f.nodes[i].data || f.nodes[i].size < PROLLY__MAGIC_SIZE ||
		    memcmp(f.nodes[i].data, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) != 0 ||
		    prolly__commit_decode(&c, &cand[i], f.nodes[i].data, f.nodes[i].size) != 0)
			continue; /* not in the source (or not a commit): asked about as any other */
		trees[i] = c->tree;
		times[i] = c->time_us;
		ok[i] = 1;
		prolly_commit_free(c);
	}
	/* The trees' roots in the source: one call (has_nodes, else get_nodes). */
	prolly_id *ask = cand; /* reused: the candidates' ids are kept in f */
	unsigned char *has = malloc(nc);
	if (!has) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory syncing");
		goto cleanup;
	}
	for (size_t i = 0; i < nc; i++)
		if (ok[i] && !prolly_id_equal(&trees[i], &s->src->empty_tree))
			ask[nt++] = trees[i];
	memset(has, 0, nc);
	if (nt) {
		s->st.read_calls++;
		rc = prolly__sync_side(s, s->src, prolly__has_nodes(s->src, ask, nt, has));
	}
	for (size_t i = 0, j = 0; i < nc && !rc; i++) {
		if (!ok[i])
			continue;
		if (!prolly_id_equal(&trees[i], &s->src->empty_tree) && !has[j++])
			continue; /* retention removed it from the source */
		if (!s->n_known || times[i] < s->base_time)
			s->base_time = times[i];
		s->head[s->n_heads] = f.nodes[i].id;
		s->head_tree[s->n_heads++] = trees[i];
		rc = prolly__sync_know(s, &f.nodes[i].id, &trees[i]);
	}
	free(has);
	s->local = s->n_known > 0;

cleanup:
	prolly__idmap_dispose(&seen);
	prolly__sync_fetched_dispose(&f);
	free(cand);
	free(trees);
	free(times);
	free(ok);
	free(names);
	free(at);
	free(cur);
	return rc;
}

/* ---- the commits, window by window (SY8) ----------------------------------------------- */

/* Walks the history from the start commits and the refs' new values a window at a time, then
 * copies the last window (the oldest) and, walking each again from its checkpoint, every
 * window before it, oldest first. */
static int walk_and_copy(sync_ctx *s, history *h, const prolly_id *commits, size_t n_commits,
                         const prolly_ref_update *refs, size_t n_refs)
{
	prolly_id *start = malloc((n_commits + n_refs ? n_commits + n_refs : 1) * sizeof(*start));
	prolly__idmap carry;
	size_t n = 0;
	int rc = 0, full = 1;
	prolly__idmap_init(&carry);
	if (!start)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory syncing");
	for (size_t i = 0; i < n_commits + n_refs; i++)
		if (i < n_commits || !refs[i - n_commits].remove)
			start[n++] = i < n_commits ? commits[i] : refs[i - n_commits].value;
	do { /* SY9: a round per walk from the start */
		if (s->held.rounds++) {
			s->base_time = INT64_MAX; /* SY9: every commit is asked about */
			rc = known_reset(s, NULL);
		}
		if (!rc)
			rc = prolly__sync_start(s, h, start, n);
		while (!rc) { /* the first walk: windows newest first, each ended by a checkpoint */
			if ((rc = prolly__sync_walk(s, h, s->batch, &full)) || !full)
				break;
			if ((rc = known_reset(s, NULL)) == 0)
				rc = prolly__sync_next_window(s, h);
		}
		if (!rc)
			rc = copy_window(s, h); /* the last, walked to its end */
		prolly__sync_note_held(s);
		if (h->n_windows > s->held.windows)
			s->held.windows = h->n_windows;
		for (size_t k = h->n_windows - 1; k-- > 0 && !rc;) {
			/* the trees of the commits where window k stops: copied by now */
			prolly__idmap_dispose(&carry);
			prolly__idmap_init(&carry);
			for (size_t i = h->cp_at[k + 1]; i < h->cp_at[k + 2] && !rc; i++)
				rc = prolly__idmap_put(&carry, &h->cp[i], 1);
			if (rc || (rc = known_reset(s, &carry)) || (rc = prolly__sync_replay(s, h, k)))
				break;
			rc = copy_window(s, h);
			prolly__sync_note_held(s);
		}
	} while (!rc && h->dropped);
	free(start);
	prolly__idmap_dispose(&carry);
	return rc;
}

/* ---- the whole ----------------------------------------------------------------------------- */

int prolly__sync_same_size(const prolly_db *dst, const prolly_db *src)
{
	if (dst->rule.shift == src->rule.shift) /* SY15 */
		return 0;
	return prolly_set_error(PROLLY_EINVAL,
	                        "the source store has nodes of %u bytes and the destination of %u: "
	                        "history moves only between stores of one node size",
	                        prolly_db_node_size(src), prolly_db_node_size(dst));
}

/* One attempt of a sync whose arguments were checked; its counts are added to *total, and
 * *dst_gc says whether it failed because a gc ran on the destination (SY4). */
static int sync_once(prolly_sync_stats *total, int *dst_gc, prolly_db *dst, prolly_db *src,
                     const prolly_id *commits, size_t n_commits, prolly_ref_update *refs,
                     size_t n_refs, const prolly_sync_options *o, const prolly_ref_update *guard)
{
	sync_ctx s;
	history h;
	int rc;

	memset(&h, 0, sizeof(h));
	memset(&s, 0, sizeof(s));
	prolly__sync_history_init(&h);
	prolly__idmap_init(&s.pending);
	prolly__idmap_init(&s.known);
	prolly__idmap_init(&s.heads_of_refs);
	s.dst = dst;
	s.src = src;
	s.batch = o->batch ? o->batch : SYNC_BATCH_DEFAULT;
	s.wbatch = o->batch                    ? o->batch
	           : prolly__store_remote(dst) ? SYNC_BATCH_DEFAULT
	                                       : SYNC_WRITE_DEFAULT;

	/* SY4: the destination's gc epoch now, learned with an empty write (as prolly_db_new). */
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	if ((rc = prolly__store_write(dst, &w)))
		goto cleanup;
	s.epoch = w.current_epoch;
	prolly__raise_epoch(dst, w.current_epoch);
	s.src_epoch = prolly__sync_src_epoch(src); /* SY11 */
	s.hist = &h;
	s.refs = refs;
	s.guard = guard;
	for (size_t i = 0; i < n_refs && !rc; i++) /* the first ref naming a commit is named */
		if (!refs[i].remove && !prolly__idmap_get(&s.heads_of_refs, &refs[i].value))
			rc = prolly__idmap_put(&s.heads_of_refs, &refs[i].value, i + 1);
	if (rc || (rc = find_known(&s, refs, n_refs))) /* SY7, after the epoch (SY4) */
		goto cleanup;
	s.ask_writes = s.local ? ASK_FULL : ASK_NO; /* SY14 */
	if ((rc = walk_and_copy(&s, &h, commits, n_commits, refs, n_refs)) || (rc = flush(&s)))
		goto cleanup;
	if (n_refs)
		rc = move_refs_settled(&s, refs, n_refs, o);

cleanup:
	rc = prolly__sync_src_gc(src, s.src_epoch, rc); /* SY11 */
	*dst_gc = rc == PROLLY_ECONFLICT && s.dst_gc;
	/* s.held.windows: the most windows one round held (walk_and_copy) */
	prolly__sync_last_held = s.held;
	pend_dispose(&s);
	prolly__idmap_dispose(&s.known);
	prolly__idmap_dispose(&s.heads_of_refs);
	free(s.ktree);
	free(s.head);
	free(s.head_tree);
	prolly__sync_history_dispose(&h);
	prolly__sync_stats_add(total, &s.st);
	return rc;
}

int prolly__sync_guarded(prolly_sync_stats *out, prolly_db *dst, prolly_db *src,
                         const prolly_id *commits, size_t n_commits, prolly_ref_update *refs,
                         size_t n_refs, const prolly_sync_options *opts,
                         const prolly_ref_update *guard)
{
	prolly_sync_options o;
	prolly_sync_stats total = PROLLY_SYNC_STATS_INIT;
	int rc, dst_gc = 0, attempt = 0;

	if (!dst || !src || (n_commits && !commits) || (n_refs && !refs))
		return prolly_set_error(PROLLY_EINVAL, "prolly_sync: NULL db, commits or refs");
	if ((rc = prolly__sync_check(opts, out)))
		return rc;
	if (opts)
		o = *opts;
	else
		prolly_sync_options_init(&o, PROLLY_SYNC_OPTIONS_VERSION);
	if (o.batch > SYNC_BATCH_MAX)
		return prolly_set_error(PROLLY_EINVAL, "prolly_sync: batch %zu is over %d", o.batch,
		                        SYNC_BATCH_MAX);
	if ((rc = prolly__sync_same_size(dst, src)))
		return rc;
	/* SY17: a gc on the destination during an attempt costs another attempt, up to
	 * SYNC_ATTEMPTS; each starts over from what the one before left (SY4), its refs' outcomes
	 * unset (nothing moved). */
	do {
		for (size_t i = 0; i < n_refs; i++) {
			refs[i].conflict = 0;
			refs[i].current_exists = 0;
		}
		rc = sync_once(&total, &dst_gc, dst, src, commits, n_commits, refs, n_refs, &o, guard);
	} while (dst_gc && ++attempt < SYNC_ATTEMPTS);
	if (dst_gc)
		rc = prolly_set_error(PROLLY_ECONFLICT,
		                      "sync: a gc ran on the destination during each of %d attempts; "
		                      "run the sync again (nothing moved; what was copied and survived "
		                      "the gc is not copied again)",
		                      SYNC_ATTEMPTS);
	prolly__sync_stats_put(out, &total);
	return rc;
}

int prolly_sync(prolly_sync_stats *out, prolly_db *dst, prolly_db *src, const prolly_id *commits,
                size_t n_commits, prolly_ref_update *refs, size_t n_refs,
                const prolly_sync_options *opts)
{
	return prolly__sync_guarded(out, dst, src, commits, n_commits, refs, n_refs, opts, NULL);
}
