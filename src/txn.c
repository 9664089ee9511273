/*
 * txn.c - collecting new nodes and ref moves, publishing them in one atomic store write.
 *
 * New tree nodes are decoded and pinned in the handle's cache, so trees built in a txn can be
 * read, diffed and edited before they are published. Commit objects ("raw" objects) are kept as
 * bytes. Commit hands every node, raw object and ref update to the store's write() at once,
 * checking the gc epoch the txn began with.
 *
 * Invariants:
 *   T1  every node in txn->nodes is pinned exactly once in the cache on its behalf.
 *   T2  after commit or free, nothing of the txn is pinned.
 *   T3  a commit refuses (PROLLY_ECONFLICT) if a gc ran after the txn began (epoch check), so a
 *       txn never publishes a tree that reuses nodes the gc removed.
 *   T4  a builder's flush is written by a background thread while the builder goes on making
 *       nodes (client CPU and store I/O overlap; with PostgreSQL two server backends insert on
 *       both cores). At most PROLLY__FLUSH_DEPTH flushes are in flight: a flush beyond that
 *       waits for the oldest, and the commit and the free wait for all, so a failure is
 *       reported by one of them; a flush's nodes stay pinned (in its own node set) until it is
 *       done. Concurrent flushes insert id-sorted batches (a store that locks ids in
 *       id order cannot deadlock on them). The flushing thread's store counters
 *       and error message are handed back to the waiting thread.
 *   T5  on a store whose writes are round trips (PROLLY_STORE_REMOTE), a commit of many nodes
 *       writes them first, in two halves at once (see flush_halves); on a local store, whose one
 *       writer would take the halves in turn, the nodes go in the commit's own write, with the
 *       refs (one transaction and one durable flush, K1 in store.h).
 *   T6  a commit publishes, in the same store write, a reflog entry for each update of a ref
 *       under refs/heads/ or refs/tags/ (reflog.c), whoever queued it.
 *   T7  every node write hands the store each node's memory beside its bytes
 *       (prolly__store_write_nodes): the memory store keeps a reference instead of a copy.
 *   T8  a write made before the commit's (a flush, a half) carries an internal node only when
 *       each of its children is in that write or in one that has landed (not held, not in a
 *       flush in flight): until then the node stays in txn->nodes (pinned, T1), for the next
 *       flush or the commit; the halves carry leaves only. Concurrent writes land in any order
 *       and one may fail while a later one lands, so this is what keeps the store from holding
 *       a node without its subtree (K6 of prolly/store.h). A builder's internal node waits one
 *       or two flushes (its leaves are in the flush it is made beside, or the one before), so
 *       the commit's own write carries at most that much of them.
 *   T9  once a write before the commit's has failed, the txn cannot commit (its first failure's
 *       code): the nodes of that write are gone from the txn, and a tree the caller already
 *       holds (an edit's root) may reference them.
 *   T10 once committed, or once a write before the commit's has failed (T9), the txn takes nothing
 *       more (prolly__txn_usable, called by every public function that adds to a txn): what it
 *       took would never be written, and a root made there would name nodes no store holds, so
 *       an edit's success would be a silent loss.
 *   T11 a commit that landed tells the head memo (H4 of head_memo.c) of each ref it moved to a
 *       commit object made in the txn: that commit and its tree are stored, a ref names them,
 *       and the write's epoch check passed at the txn's epoch.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

int prolly_txn_begin(prolly_txn **out, prolly_db *db)
{
	if (!out || !db)
		return prolly_set_error(PROLLY_EINVAL, "prolly_txn_begin: NULL argument");
	prolly_txn *txn = calloc(1, sizeof(*txn));
	if (!txn)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory starting a txn");
	txn->db = db;
	txn->epoch = atomic_load(&db->epoch);
	prolly__nodeset_init(&txn->nodes);
	prolly__idmap_init(&txn->raw_at);
	prolly__idmap_init(&txn->ref_at);
	*out = txn;
	return 0;
}

static void unpin_set(prolly_db *db, prolly__nodeset *set)
{
	prolly_stats d = PROLLY_STATS_INIT;
	for (size_t i = 0; i < set->cap; i++)
		if (prolly__nodeset_at(set, i))
			d.cache_evictions += prolly__cache_unpin(db->cache, &prolly__nodeset_at(set, i)->id);
	prolly__nodeset_dispose(set); /* T2 */
	if (d.cache_evictions)
		prolly__stats_add(db, &d);
}

static void unpin_all(prolly_txn *txn)
{
	unpin_set(txn->db, &txn->nodes);
}

void prolly_txn_free(prolly_txn *txn)
{
	if (!txn)
		return;
	prolly__txn_flush_wait(txn);
	unpin_all(txn);
	prolly_buf_dispose(&txn->raw);
	prolly__idmap_dispose(&txn->raw_at);
	prolly__idmap_dispose(&txn->ref_at);
	free(txn->reason_msg);
	for (size_t i = 0; i < txn->n_refs; i++)
		free(txn->ref_names[i]);
	free(txn->ref_names);
	free(txn->refs);
	free(txn);
}

int prolly__txn_usable(const prolly_txn *txn, const char *fn)
{
	if (txn->done)
		return prolly_set_error(PROLLY_EINVAL, "%s: the txn was already committed", fn);
	if (txn->flush_failed)
		return prolly_set_error(txn->flush_failed,
		                        "%s: a write of this txn's nodes failed; the txn cannot commit "
		                        "(free it and begin again)",
		                        fn);
	return 0;
}

int prolly__txn_add_node(prolly_txn *txn, pnode *nd, pnode **out)
{
	pnode *have = prolly__nodeset_find(&txn->nodes, &nd->id);
	if (have) {
		prolly__node_unref(nd);
		nd = have;
	} else {
		int rc = prolly__nodeset_add(&txn->nodes, nd);
		prolly__node_unref(nd);
		if (rc)
			return rc;
		prolly__cache_pin(txn->db->cache, nd); /* T1 */
	}
	if (out)
		*out = nd;
	return 0;
}

int prolly__txn_add_raw(prolly_txn *txn, const prolly_id *id, const void *bytes, size_t size)
{
	unsigned char hdr[PROLLY_ID_SIZE + 4];
	const void *dummy;
	size_t dsize;
	int rc;
	if (prolly__txn_find_raw(txn, id, &dummy, &dsize) == 0)
		return 0;
	size_t at = txn->raw.size;
	if ((rc = prolly__idmap_put(&txn->raw_at, id, (uintptr_t)at + 1)))
		return rc;
	memcpy(hdr, id->bytes, PROLLY_ID_SIZE);
	prolly__wr32(hdr + PROLLY_ID_SIZE, (uint32_t)size);
	if ((rc = prolly__buf_put(&txn->raw, hdr, sizeof(hdr))) ||
	    (rc = prolly__buf_put(&txn->raw, bytes, size))) {
		txn->raw.size = at;                           /* no header left without its bytes */
		(void)prolly__idmap_put(&txn->raw_at, id, 0); /* there already: cannot fail */
		return rc;
	}
	txn->raw_count++;
	return 0;
}

int prolly__txn_find_raw(prolly_txn *txn, const prolly_id *id, const void **bytes, size_t *size)
{
	uintptr_t at = prolly__idmap_get(&txn->raw_at, id);
	if (!at || at - 1 + PROLLY_ID_SIZE + 4 > txn->raw.size)
		return PROLLY_ENOTFOUND;
	const unsigned char *p = txn->raw.ptr + (at - 1);
	if (memcmp(p, id->bytes, PROLLY_ID_SIZE) != 0)
		return PROLLY_ENOTFOUND; /* (cannot happen: entries of dropped records are reset) */
	*bytes = p + PROLLY_ID_SIZE + 4;
	*size = prolly__rd32(p + PROLLY_ID_SIZE);
	return 0;
}

/* Drops the raw objects from offset `from` on (a failed commit's reflog entries), index
 * included. */
static void raw_truncate(prolly_txn *txn, size_t from, size_t count)
{
	for (size_t off = from; off < txn->raw.size;) {
		const unsigned char *p = txn->raw.ptr + off;
		prolly_id id;
		memcpy(id.bytes, p, PROLLY_ID_SIZE);
		(void)prolly__idmap_put(&txn->raw_at, &id, 0); /* there already: cannot fail */
		off += PROLLY_ID_SIZE + 4 + prolly__rd32(p + PROLLY_ID_SIZE);
	}
	txn->raw.size = from;
	txn->raw_count = count;
}

int prolly_txn_set_ref(prolly_txn *txn, const prolly_ref_update *update)
{
	if (!txn || !update)
		return prolly_set_error(PROLLY_EINVAL, "prolly_txn_set_ref: NULL argument");
	int rc = prolly__ref_update_check(update);
	if (rc)
		return rc;
	size_t len = strlen(update->name);
	if (txn->done)
		return prolly_set_error(PROLLY_EINVAL, "prolly_txn_set_ref: the txn was already committed");
	prolly_id key; /* the name's SHA-256: the key of ref_at, so a check is O(1) */
	prolly__hash(&key, update->name, len);
	if (prolly__idmap_get(&txn->ref_at, &key))
		return prolly_set_error(PROLLY_EINVAL, "ref '%s' is moved twice in one txn", update->name);
	if (PROLLY__GROW(txn->refs, txn->cap_refs, txn->n_refs + 1, 4) ||
	    PROLLY__GROW(txn->ref_names, txn->cap_names, txn->n_refs + 1, 4))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory queueing a ref update");
	char *name = strdup(update->name);
	if (!name || prolly__idmap_put(&txn->ref_at, &key, 1)) {
		free(name);
		return prolly_set_error(PROLLY_ENOMEM, "out of memory queueing a ref update");
	}
	txn->ref_names[txn->n_refs] = name;
	txn->refs[txn->n_refs] = *update;
	txn->refs[txn->n_refs].name = name;
	txn->refs[txn->n_refs].conflict = 0;
	txn->n_refs++;
	return 0;
}

/* Collects the txn's nodes and raw objects into an array for the store, and beside it each
 * entry's node memory (NULL for a raw object) for prolly__store_write_nodes. */
static int gather(prolly_txn *txn, prolly_store_node **out, prolly__shared ***owners, size_t *n)
{
	size_t total = txn->nodes.len + txn->raw_count, k = 0;
	prolly_store_node *arr = calloc(total ? total : 1, sizeof(*arr));
	prolly__shared **own = calloc(total ? total : 1, sizeof(*own));
	if (!arr || !own) {
		free(arr);
		free(own);
		return prolly_set_error(PROLLY_ENOMEM, "out of memory gathering %zu nodes", total);
	}
	for (size_t i = 0; i < txn->nodes.cap; i++) {
		pnode *nd = prolly__nodeset_at(&txn->nodes, i);
		if (nd) {
			arr[k].id = nd->id;
			arr[k].data = nd->bytes;
			arr[k].size = nd->size;
			own[k] = &nd->mem;
			k++;
		}
	}
	size_t off = 0;
	while (off < txn->raw.size) {
		const unsigned char *p = txn->raw.ptr + off;
		uint32_t sz = prolly__rd32(p + PROLLY_ID_SIZE);
		memcpy(arr[k].id.bytes, p, PROLLY_ID_SIZE);
		arr[k].data = p + PROLLY_ID_SIZE + 4;
		arr[k].size = sz;
		k++;
		off += PROLLY_ID_SIZE + 4 + sz;
	}
	*out = arr;
	*owners = own;
	*n = k;
	return 0;
}

static void count_written(prolly_db *db, const prolly_store_node *nodes, size_t n)
{
	prolly_stats d = PROLLY_STATS_INIT;
	d.store_writes = 1;
	d.nodes_written = n;
	for (size_t i = 0; i < n; i++)
		d.bytes_written += nodes[i].size;
	prolly__stats_add(db, &d);
}

/* A builder flush in flight (T4). */
typedef struct prolly__flush {
	pthread_t thread;
	int joinable; /* 0: the write ran in the caller (no thread could be started) */
	prolly_db *db;
	prolly__nodeset nodes;   /* the flushed nodes: pinned, owned here until the flush is done */
	prolly_store_node *arr;  /* what the store is given (pointing into those nodes) */
	prolly__shared **owners; /* arr[i]'s node memory (prolly__store_write_nodes) */
	size_t n;
	int rc;
	atomic_int finished;    /* the write returned (T8: a flush may carry internal nodes) */
	prolly__counters stats; /* the flushing thread's counters, handed to the waiter */
	char msg[1024];         /* its error message */
} prolly__flush;

static void *flush_main(void *arg)
{
	prolly__flush *f = arg;
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = f->arr;
	w.n_nodes = f->n;
	prolly_thread_stats_reset();
	f->rc = prolly__store_write_nodes(f->db, &w, f->owners);
	if (f->rc)
		snprintf(f->msg, sizeof(f->msg), "%s", prolly_last_error());
	prolly__thread_counters(&f->stats);
	atomic_store_explicit(&f->finished, 1, memory_order_release);
	return NULL;
}

/* Waits for the oldest flush in flight; its counters and error become this thread's. */
static int flush_wait_oldest(prolly_txn *txn)
{
	prolly__flush *f = txn->pending[0];
	if (f->joinable)
		pthread_join(f->thread, NULL);
	memmove(&txn->pending[0], &txn->pending[1], (txn->n_pending - 1) * sizeof(txn->pending[0]));
	txn->n_pending--;
	prolly__thread_counters_add(&f->stats);
	int rc = f->rc;
	if (rc == 0) {
		count_written(txn->db, f->arr, f->n);
	} else {
		prolly_set_error(rc, "%s", f->msg);
		if (!txn->flush_failed)
			txn->flush_failed = rc; /* T9 */
	}
	unpin_set(txn->db, &f->nodes);
	free(f->arr);
	free(f->owners);
	free(f);
	return rc;
}

int prolly__txn_flush_wait(prolly_txn *txn)
{
	int rc = 0;
	while (txn->n_pending) {
		int r = flush_wait_oldest(txn);
		if (r && !rc)
			rc = r;
	}
	return rc;
}

/* Starts writing the nodes of `set` (moved into the flush, pins included) in the background. */
static int start_flush(prolly_txn *txn, prolly__nodeset *set)
{
	prolly__flush *f;
	int rc;
	if (txn->n_pending == PROLLY__FLUSH_DEPTH && (rc = flush_wait_oldest(txn)))
		return rc;
	if (!(f = calloc(1, sizeof(*f))) ||
	    !(f->arr = calloc(set->len ? set->len : 1, sizeof(*f->arr))) ||
	    !(f->owners = calloc(set->len ? set->len : 1, sizeof(*f->owners)))) {
		if (f)
			free(f->arr);
		free(f);
		return prolly_set_error(PROLLY_ENOMEM, "out of memory flushing a txn");
	}
	for (size_t i = 0; i < set->cap; i++) {
		pnode *nd = prolly__nodeset_at(set, i);
		if (nd) {
			f->arr[f->n].id = nd->id;
			f->arr[f->n].data = nd->bytes;
			f->arr[f->n].size = nd->size;
			f->owners[f->n] = &nd->mem;
			f->n++;
		}
	}
	f->db = txn->db;
	f->nodes = *set; /* the flush owns the nodes and their pins now */
	prolly__nodeset_init(set);
	txn->pending[txn->n_pending++] = f;
	if (!(txn->db->opts.flags & PROLLY_DB_NO_THREADS) &&
	    pthread_create(&f->thread, NULL, flush_main, f) == 0)
		f->joinable = 1;
	else { /* no thread: write now (keeping this thread's counters), report at the next wait */
		prolly__counters mine;
		prolly__thread_counters(&mine);
		flush_main(f);
		prolly_thread_stats_reset();
		prolly__thread_counters_add(&mine);
	}
	return 0;
}

/* T9: nodes of the txn were dropped without being written; the txn cannot commit. */
static int drop_fail(prolly_txn *txn, prolly__nodeset *set, int rc)
{
	unpin_set(txn->db, set);
	if (!txn->flush_failed)
		txn->flush_failed = rc;
	return rc;
}

/* T8: takes the flushes in flight whose writes have returned, oldest first, without waiting;
 * the first failure among them. */
static int reap_finished(prolly_txn *txn)
{
	int rc = 0;
	while (txn->n_pending &&
	       atomic_load_explicit(&txn->pending[0]->finished, memory_order_acquire)) {
		int r = flush_wait_oldest(txn);
		if (r && !rc)
			rc = r;
	}
	return rc;
}

/* T8: moves the leaves of txn->nodes (pins included) into *leaves, leaving the internal nodes.
 * On failure nothing has moved. */
static int split_leaves(prolly_txn *txn, prolly__nodeset *leaves)
{
	prolly__nodeset keep;
	int rc = 0;
	prolly__nodeset_init(leaves);
	prolly__nodeset_init(&keep);
	for (size_t i = 0; i < txn->nodes.cap && !rc; i++) {
		pnode *nd = prolly__nodeset_at(&txn->nodes, i);
		if (nd)
			rc = prolly__nodeset_add(nd->level ? &keep : leaves, nd);
	}
	if (rc) {
		prolly__nodeset_dispose(leaves);
		prolly__nodeset_dispose(&keep);
		return rc;
	}
	prolly__nodeset_dispose(&txn->nodes); /* the sets hold their own references; pins move (T1) */
	txn->nodes = keep;
	return 0;
}

/* T8: may a node whose child is c go in the write `out` being gathered? Yes when c goes in it
 * too, or is in none of the txn's writes still to land: not held in the txn, not in a flush in
 * flight (so it landed, or is an old node the store had). The flushes' node sets are only read
 * here; their threads do not touch them. */
static int child_landed(const prolly_txn *txn, const prolly__nodeset *out, const prolly_id *c)
{
	if (prolly__nodeset_find(out, c))
		return 1;
	if (prolly__nodeset_find(&txn->nodes, c))
		return 0;
	for (unsigned i = 0; i < txn->n_pending; i++)
		if (prolly__nodeset_find(&txn->pending[i]->nodes, c))
			return 0;
	return 1;
}

int prolly__txn_flush(prolly_txn *txn)
{
	prolly__nodeset out, keep;
	unsigned top = 0;
	int rc;
	if (!txn->nodes.len)
		return 0;
	if (txn->flush_failed) /* T9: and no node may follow one that did not land (T8) */
		return prolly_set_error(txn->flush_failed, "a write of this txn's nodes failed");
	/* T4: at most PROLLY__FLUSH_DEPTH in flight; waiting for the oldest before choosing (rather
	 * than in start_flush) lets this flush carry the internal nodes its write held back */
	if (txn->n_pending == PROLLY__FLUSH_DEPTH && (rc = flush_wait_oldest(txn)))
		return rc;
	if ((rc = reap_finished(txn)))
		return rc;
	/* T8: every leaf goes; an internal node goes when each of its children has landed or goes
	 * with it (levels in order, so a parent follows its children into the write) */
	prolly__nodeset_init(&out);
	prolly__nodeset_init(&keep);
	for (size_t i = 0; i < txn->nodes.cap && !rc; i++) {
		pnode *nd = prolly__nodeset_at(&txn->nodes, i);
		if (nd && nd->level == 0)
			rc = prolly__nodeset_add(&out, nd);
		else if (nd && nd->level > top)
			top = nd->level;
	}
	for (unsigned level = 1; level <= top && !rc; level++)
		for (size_t i = 0; i < txn->nodes.cap && !rc; i++) {
			pnode *nd = prolly__nodeset_at(&txn->nodes, i);
			if (!nd || nd->level != level)
				continue;
			uint32_t j = 0;
			while (j < nd->n && child_landed(txn, &out, prolly__node_child(nd, j)))
				j++;
			if (j == nd->n)
				rc = prolly__nodeset_add(&out, nd);
		}
	for (size_t i = 0; i < txn->nodes.cap && !rc; i++) {
		pnode *nd = prolly__nodeset_at(&txn->nodes, i);
		if (nd && !prolly__nodeset_find(&out, &nd->id))
			rc = prolly__nodeset_add(&keep, nd);
	}
	if (rc) { /* nothing moved */
		prolly__nodeset_dispose(&out);
		prolly__nodeset_dispose(&keep);
		return rc;
	}
	prolly__nodeset_dispose(&txn->nodes); /* the sets hold their own references; pins move (T1) */
	txn->nodes = keep;
	if (!out.len) {
		prolly__nodeset_dispose(&out);
		return 0;
	}
	if ((rc = start_flush(txn, &out)))
		return drop_fail(txn, &out, rc);
	return 0;
}

/* T5: a commit with at least COMMIT_SPLIT nodes on a remote store first writes them in two halves
 * at once, like builder flushes (two store connections, two server backends), then publishes the
 * commit objects and ref moves in its one checked, durable write. The halves cannot be half-visible
 * in a way that matters: nothing references them until that write lands, its epoch check fails if a
 * gc ran meanwhile, and its durable commit also makes the earlier writes durable (a store that
 * orders its log, as PostgreSQL's WAL does, or one that syncs every write). A server crash between
 * a half and that write loses the half: the write lists its leaves among its requires, and the
 * PostgreSQL store checks them once it has seen the server restart (docs/postgres.md). */
#define COMMIT_SPLIT 2048
/* A local store gains nothing from the halves: LMDB has one writer (LT5 joins the halves into one
 * transaction, which the commit's own transaction and flush then follow), the memory store one
 * lock. There every node goes in the commit's one write, so refs move in the same transaction
 * that makes the nodes durable: one write transaction and one flush (fdatasync) fewer. */

static int flush_halves(prolly_txn *txn)
{
	prolly__nodeset leaves, half[2];
	size_t k = 0;
	int rc;
	/* T8: the halves carry leaves; the internal nodes go in the commit's own write. */
	if ((rc = split_leaves(txn, &leaves)))
		return rc;
	prolly__nodeset_init(&half[0]);
	prolly__nodeset_init(&half[1]);
	for (size_t i = 0; i < leaves.cap && !rc; i++) {
		pnode *nd = prolly__nodeset_at(&leaves, i);
		if (nd)
			rc = prolly__nodeset_add(&half[k++ * 2 / leaves.len], nd);
	}
	/* The halves hold their own references; the pins move with them (T1). */
	prolly__nodeset_dispose(&leaves);
	for (int h = 0; h < 2 && !rc; h++)
		if (half[h].len)
			rc = start_flush(txn, &half[h]);
	if (rc) { /* not started: what is left here is dropped */
		drop_fail(txn, &half[0], rc);
		return drop_fail(txn, &half[1], rc);
	}
	return prolly__txn_flush_wait(txn);
}

/* T11: so that the next commit made on such a commit needs no read of its parent. */
static void note_heads(prolly_txn *txn)
{
	for (size_t i = 0; i < txn->n_refs; i++) {
		const prolly_ref_update *u = &txn->refs[i];
		const void *bytes;
		size_t size;
		if (!u->remove && prolly__txn_find_raw(txn, &u->value, &bytes, &size) == 0 &&
		    prolly__is_commit_bytes(bytes, size))
			prolly__seen_put(&txn->db->heads, &u->value, txn->epoch);
	}
}

/* The ids the txn's new nodes point at without creating them (see prolly_store_write): children
 * of new internal nodes, and the trees of new commits, unless the txn made them. */
static int gather_requires(prolly_txn *txn, prolly_buf *out)
{
	int rc;
	out->size = 0;
	for (size_t i = 0; i < txn->nodes.cap; i++) {
		pnode *nd = prolly__nodeset_at(&txn->nodes, i);
		if (!nd || nd->level == 0)
			continue;
		for (uint32_t j = 0; j < nd->n; j++) {
			const prolly_id *c = prolly__node_child(nd, j);
			if (!prolly__nodeset_find(&txn->nodes, c) &&
			    (rc = prolly__buf_put(out, c, PROLLY_ID_SIZE)))
				return rc;
		}
	}
	size_t off = 0;
	while (off < txn->raw.size) {
		const unsigned char *p = txn->raw.ptr + off;
		uint32_t sz = prolly__rd32(p + PROLLY_ID_SIZE);
		prolly_id id;
		prolly_commit *c = NULL;
		memcpy(id.bytes, p, PROLLY_ID_SIZE);
		if (sz >= PROLLY__MAGIC_SIZE &&
		    memcmp(p + PROLLY_ID_SIZE + 4, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) == 0 &&
		    prolly__commit_decode(&c, &id, p + PROLLY_ID_SIZE + 4, sz) == 0) {
			rc = 0;
			if (!prolly__nodeset_find(&txn->nodes, &c->tree) &&
			    !prolly_id_equal(&c->tree, &txn->db->empty_tree))
				rc = prolly__buf_put(out, c->tree.bytes, PROLLY_ID_SIZE);
			prolly_commit_free(c);
			if (rc)
				return rc;
		}
		off += PROLLY_ID_SIZE + 4 + sz;
	}
	return 0;
}

int prolly_txn_commit(prolly_txn *txn, prolly_ref_update *conflicts, size_t n_conflicts)
{
	prolly_store_node *nodes = NULL;
	prolly__shared **owners = NULL;
	prolly_buf req = PROLLY_BUF_INIT;
	prolly_ref_update *refs = NULL;
	char *log_names = NULL;
	size_t n = 0, n_refs = 0, raw_before, raw_count_before;
	int rc;
	if (!txn)
		return prolly_set_error(PROLLY_EINVAL, "prolly_txn_commit: NULL argument");
	raw_before = txn->raw.size;
	raw_count_before = txn->raw_count;
	if (txn->done)
		return prolly_set_error(PROLLY_EINVAL, "prolly_txn_commit: the txn was already committed");
	if ((rc = prolly__txn_flush_wait(txn)))
		return rc;
	if (txn->flush_failed) /* T9 */
		return prolly_set_error(txn->flush_failed,
		                        "a write of this txn's nodes failed before the commit; the txn "
		                        "cannot commit (free it and begin again)");
	if (txn->nodes.len >= COMMIT_SPLIT && prolly__store_remote(txn->db) && (rc = flush_halves(txn)))
		return rc;
	/* T6: every ref move under refs/heads/ and refs/tags/ gets its reflog entry in this write. */
	if ((rc = prolly__reflog_record(txn, &refs, &n_refs, &log_names)))
		goto out;
	if ((rc = gather_requires(txn, &req)))
		goto out;
	if ((rc = gather(txn, &nodes, &owners, &n)))
		goto out;
	prolly_store_write w;
	memset(&w, 0, sizeof(w));
	w.nodes = nodes;
	w.n_nodes = n;
	w.refs = refs;
	w.n_refs = n_refs;
	w.check_epoch = 1; /* T3 */
	w.epoch = txn->epoch;
	w.durable = 1;
	w.requires = (const prolly_id *)(const void *)req.ptr;
	w.n_requires = req.size / PROLLY_ID_SIZE;
	rc = prolly__store_write_nodes(txn->db, &w, owners);
	for (size_t i = 0; i < txn->n_refs; i++)
		txn->refs[i] = refs[i]; /* the outcome the store reported (the names are the same) */
	if (w.current_epoch) {
		uint64_t cur = atomic_load(&txn->db->epoch);
		while (cur < w.current_epoch &&
		       !atomic_compare_exchange_weak(&txn->db->epoch, &cur, w.current_epoch))
			;
	}
	if (rc == 0) {
		count_written(txn->db, nodes, n);
		note_heads(txn);
		txn->done = 1;
		unpin_all(txn);
	} else if (rc == PROLLY_ECONFLICT) {
		size_t k = 0;
		int any = 0;
		for (size_t i = 0; i < txn->n_refs; i++) {
			if (!txn->refs[i].conflict)
				continue;
			any = 1;
			if (conflicts && k < n_conflicts)
				conflicts[k++] = txn->refs[i];
		}
		/* No ref lost: a gc ran (the epoch moved), or the store found nodes this write builds
		 * on gone (its message says so, and stays). */
		if (!any && w.current_epoch > txn->epoch)
			prolly_set_error(PROLLY_ECONFLICT,
			                 "a gc ran while this txn was open (epoch %llu, now %llu); retry",
			                 (unsigned long long)txn->epoch, (unsigned long long)w.current_epoch);
	}
out:
	if (rc) /* the entries are made again, with a new time, if the txn is committed again */
		raw_truncate(txn, raw_before, raw_count_before);
	free(refs);
	free(log_names);
	free(nodes);
	free(owners);
	prolly_buf_dispose(&req);
	return rc;
}
