/*
 * db.c - the handle: store + node cache + options; batched node loading.
 *
 * Every operation that reads nodes keeps them in a working set (prolly__nodeset) and asks for
 * all the nodes it needs at one tree level with one prolly__load call: ids found in the set or
 * the cache cost nothing, the rest go to the store in one get_nodes call. Every node read from a
 * store is hash-verified before anyone sees it.
 */
#include "internal.h"

#include <stdlib.h>

void prolly_id_empty_tree(prolly_id *out)
{
	/* The leaf with n = 0 (node.c): magic, version, then zeros (level, flags, n, koff[0],
	 * voff[0]). */
	static const unsigned char empty[PROLLY__NODE_EMPTY_SIZE] = {
	    'P', 'R', 'L', 'Y', [PROLLY__NODE_OFF_VERSION] = PROLLY_FORMAT_VERSION};
	_Static_assert(sizeof(PROLLY_NODE_MAGIC) - 1 == PROLLY__MAGIC_SIZE, "a 4-byte magic");
	prolly__hash(out, empty, sizeof(empty));
}

int prolly_db_new(prolly_db **out, prolly_store *store, const prolly_options *opts)
{
	int rc;
	prolly_db *db = NULL;
	prolly__enc enc;
	prolly_buf bytes = PROLLY_BUF_INIT;
	prolly__enc_init(&enc, 0);

	if (!out || !store) {
		rc = prolly_set_error(PROLLY_EINVAL, "prolly_db_new: NULL %s", out ? "store" : "out");
		goto cleanup;
	}
	if ((rc = prolly__options_check(opts)))
		goto cleanup;
	db = calloc(1, sizeof(*db));
	if (!db) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory opening a handle");
		goto cleanup;
	}
	pthread_mutex_init(&db->stats_lock, NULL);
	prolly__head_memo_init(&db->heads);
	if ((rc = prolly__store_adopt(&db->vt, store)))
		goto cleanup;
	db->store = store;
	store = NULL;
	prolly__options_load(&db->opts, opts);                                    /* checked above */
	prolly__chunk_rule_init(&db->rule, prolly__node_shift(db->vt.node_size)); /* adopt checked it */
	if (!db->opts.flush_bytes)
		db->opts.flush_bytes = (size_t)4 << 20;
	if (db->opts.cache_bytes == PROLLY_CACHE_AUTO)
		db->opts.cache_bytes = (size_t)(db->vt.flags & PROLLY_STORE_MAPPED ? 128 : 256) << 20;
	if ((rc = prolly__cache_new(&db->cache, db->opts.cache_bytes)))
		goto cleanup;
	if ((rc = prolly__enc_finish(&enc, &bytes)))
		goto cleanup;
	prolly__hash(&db->empty_tree, bytes.ptr, bytes.size);
	if ((rc = prolly__node_decode(&db->empty_node, &db->empty_tree, bytes.ptr, bytes.size, 1)))
		goto cleanup;

	uint64_t epoch;
	if ((rc = prolly__store_epoch(db, &epoch)))
		goto cleanup;
	*out = db;
	db = NULL;
cleanup:
	prolly_store_close(store);
	prolly_close(db);
	prolly__enc_dispose(&enc);
	prolly_buf_dispose(&bytes);
	return rc;
}

/* Here rather than in store/open.c, so that a program that wraps its own store (the PostgreSQL
 * extension) links no store it does not use. */
void prolly_store_close(prolly_store *st)
{
	if (st && st->close)
		st->close(st);
}

void prolly_close(prolly_db *db)
{
	if (!db)
		return;
	prolly__cache_free(db->cache);
	prolly__node_unref(db->empty_node);
	if (db->store)
		db->vt.close(db->store);
	pthread_mutex_destroy(&db->stats_lock);
	prolly__head_memo_dispose(&db->heads);
	free(db);
}

prolly_store *prolly_db_store(prolly_db *db)
{
	return db ? db->store : NULL;
}

unsigned prolly_db_node_size(const prolly_db *db)
{
	return db ? 1u << db->rule.shift : 0;
}

int prolly_db_stats(prolly_db *db, prolly_stats *out)
{
	if (!db)
		return prolly_set_error(PROLLY_EINVAL, "prolly_db_stats: NULL handle");
	pthread_mutex_lock(&db->stats_lock);
	int rc = prolly__stats_put(out, &db->stats);
	pthread_mutex_unlock(&db->stats_lock);
	return rc;
}

void prolly_db_cache_clear(prolly_db *db)
{
	if (db) {
		prolly__cache_clear(db->cache);
		prolly__head_memo_distrust(&db->heads, NULL); /* H5: a cold handle reads its heads */
	}
}

/* ---- working sets ---- */

void prolly__nodeset_init(prolly__nodeset *s)
{
	prolly__idmap_init(s);
}

void prolly__nodeset_dispose(prolly__nodeset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		prolly__node_unref(prolly__nodeset_at(s, i));
	prolly__idmap_dispose(s);
}

pnode *prolly__nodeset_find(const prolly__nodeset *s, const prolly_id *id)
{
	return (pnode *)prolly__idmap_get(s, id);
}

int prolly__nodeset_add(prolly__nodeset *s, pnode *n)
{
	int rc;
	if (prolly__nodeset_find(s, &n->id))
		return 0;
	if ((rc = prolly__idmap_put(s, &n->id, (uintptr_t)n)))
		return rc;
	prolly__node_ref(n);
	return 0;
}

/* ---- loading ---- */

/* Nodes decoded from a store's bytes before their hashes are checked, all at once (L1). */
#define CHECK_BATCH 64

/*
 * L1  a node read from a store is decoded without its hash check (prolly__node_decode with
 *     verify 0) and held in load_ctx.pending, out of the cache and the node set, until
 *     check_pending has compared the hashes of the batch with their ids (prolly__hash_many:
 *     sixteen at a time where the CPU has AVX-512); only then is it taken in. A node that fails
 *     is reported as the decode with its check reports it (N7 of node.c: "bytes do not hash to
 *     the id", whatever the damaged bytes decode as).
 */
typedef struct load_ctx {
	prolly_db *db;
	prolly__nodeset *ws;
	const prolly_id *ids;
	unsigned char *found;
	prolly_stats *delta;
	int fresh; /* PROLLY__LOAD_FRESH */
	int rc;
	size_t npending;
	pnode *pending[CHECK_BATCH]; /* L1 */
} load_ctx;

/* A checked node into the cache and ws (the caller's reference passes to them). */
static int take(load_ctx *lc, pnode *nd)
{
	int rc;
	lc->delta->nodes_read++;
	lc->delta->bytes_read += nd->size;
	prolly__cache_put(lc->db->cache, nd, &lc->delta->cache_evictions);
	rc = prolly__nodeset_add(lc->ws, nd);
	prolly__node_unref(nd);
	return rc;
}

static void drop_pending(load_ctx *lc)
{
	for (size_t i = 0; i < lc->npending; i++)
		prolly__node_unref(lc->pending[i]);
	lc->npending = 0;
}

/* L1: checks the pending nodes and takes those that hash to their ids in; releases them all. */
static int check_pending(load_ctx *lc)
{
	const unsigned char *data[CHECK_BATCH];
	size_t size[CHECK_BATCH], n = lc->npending;
	prolly_id got[CHECK_BATCH];
	int rc = 0;
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		data[i] = lc->pending[i]->bytes;
		size[i] = lc->pending[i]->size;
	}
	prolly__hash_many(got, data, size, n);
	for (size_t i = 0; i < n; i++) {
		pnode *nd = lc->pending[i], *again = NULL;
		if (rc == 0 && !prolly_id_equal(&got[i], &nd->id) &&
		    (rc = prolly__node_decode(&again, &nd->id, nd->bytes, nd->size, 1)) == 0) {
			prolly__node_unref(again); /* cannot be: the same bytes hashed otherwise above */
			rc = prolly_set_error(PROLLY_ECORRUPT, "a node's hash check disagreed with itself");
		}
		if (rc == 0)
			rc = take(lc, nd);
		else
			prolly__node_unref(nd);
	}
	lc->npending = 0;
	return rc;
}

/* A node from the store. One the memory store holds as the block of a node this process made
 * and hashed (prolly__handover_read) is taken back as that node: no copy, no decoding, no hash
 * check; but not by a fresh load, which re-checks what the store holds. Any other is decoded
 * and checked with its batch (L1). */
static int on_found(void *payload, size_t index, const void *data, size_t size)
{
	load_ctx *lc = payload;
	prolly__shared *owner = lc->fresh ? NULL : prolly__handover_read_owner();
	pnode *nd = owner ? prolly__node_of(owner) : NULL;
	int rc;
	if (lc->found[index])
		return 0;
	if (nd && nd->bytes == data && nd->size == size && prolly_id_equal(&nd->id, &lc->ids[index])) {
		prolly__node_ref(nd);
		lc->found[index] = 1;
		return (rc = take(lc, nd)) ? (lc->rc = rc) : 0;
	}
	if ((rc = prolly__node_decode(&nd, &lc->ids[index], data, size, 0))) {
		/* N7: the decode with its check names what is wrong (the hash first) */
		pnode *again = NULL;
		if ((rc = prolly__node_decode(&again, &lc->ids[index], data, size, 1)) == 0) {
			prolly__node_unref(again); /* cannot be: the same bytes failed above */
			rc = prolly_set_error(PROLLY_ECORRUPT, "a node's decode disagreed with itself");
		}
		return lc->rc = rc;
	}
	lc->found[index] = 1;
	lc->pending[lc->npending++] = nd;
	if (lc->npending == CHECK_BATCH && (rc = check_pending(lc)))
		return lc->rc = rc;
	return 0;
}

int prolly__load(prolly_db *db, prolly__nodeset *ws, const prolly_id *ids, size_t n, pnode **out)
{
	return prolly__load_ex(db, ws, ids, n, out, 0);
}

/* The error for a node the store does not hold. Below a root it is damage, unless a gc ran
 * since this handle last saw the store's epoch (one epoch read, on this failure only): a gc
 * removes the trees that retention no longer keeps, so a read of an old version, or of a head
 * that moved on, can lose its nodes under it; the message then says so. */
static int missing(prolly_db *db, const prolly_id *id, int flags)
{
	char hex[PROLLY_ID_HEX_SIZE];
	uint64_t seen = atomic_load(&db->epoch), now = 0;
	prolly_id_to_hex(hex, id);
	if (flags & PROLLY__LOAD_ROOTS)
		return prolly_set_error(PROLLY_ENOTFOUND, "tree %s not found in the %s store", hex,
		                        db->vt.kind);
	if (seen && !(flags & PROLLY__LOAD_IN_GC) && prolly__store_epoch(db, &now) == 0 && now > seen)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "node %s is missing from the %s store: a gc ran during this read "
		                        "(epoch %llu, now %llu) and removed the tree it was reading (one "
		                        "that retention no longer keeps); read again",
		                        hex, db->vt.kind, (unsigned long long)seen,
		                        (unsigned long long)now);
	return prolly_set_error(PROLLY_ECORRUPT, "node %s is missing from the %s store", hex,
	                        db->vt.kind);
}

int prolly__load_ex(prolly_db *db, prolly__nodeset *ws, const prolly_id *ids, size_t n, pnode **out,
                    int flags)
{
	int fresh = flags & PROLLY__LOAD_FRESH;
	int rc = 0;
	prolly_stats delta = PROLLY_STATS_INIT;
	prolly_id *miss = NULL;
	unsigned char *found = NULL;
	size_t nmiss = 0;

	/* The caller's interrupt (prolly_options, version 2): every long call loads nodes in
	 * batches, so asking here stops any of them within a batch, cached or not. */
	if ((rc = prolly__interrupted(db)))
		return rc;

	for (size_t i = 0; i < n; i++) {
		if (prolly__nodeset_find(ws, &ids[i])) {
			delta.cache_hits++;
			continue;
		}
		pnode *nd = fresh ? NULL : prolly__cache_get(db->cache, &ids[i]);
		if (!nd && prolly_id_equal(&ids[i], &db->empty_tree)) {
			nd = db->empty_node;
			prolly__node_ref(nd);
		}
		if (nd) {
			delta.cache_hits++;
			rc = prolly__nodeset_add(ws, nd);
			prolly__node_unref(nd);
			if (rc)
				goto cleanup;
			continue;
		}
		if (!miss && !(miss = malloc(n * sizeof(*miss)))) {
			rc = prolly_set_error(PROLLY_ENOMEM, "out of memory loading %zu nodes", n);
			goto cleanup;
		}
		miss[nmiss++] = ids[i];
	}
	if (nmiss) {
		if (nmiss > 1) {
			if ((rc = prolly__ids_sort(miss, nmiss)))
				goto cleanup;
			size_t u = 1;
			for (size_t i = 1; i < nmiss; i++)
				if (!prolly_id_equal(&miss[i], &miss[u - 1]))
					miss[u++] = miss[i];
			nmiss = u;
		}
		if (!(found = calloc(nmiss, 1))) {
			rc = prolly_set_error(PROLLY_ENOMEM, "out of memory loading %zu nodes", nmiss);
			goto cleanup;
		}
		delta.cache_misses += nmiss;
		delta.store_reads++;
		delta.store_read_items += nmiss;
		load_ctx lc = {db, ws, miss, found, &delta, fresh, 0, 0, {NULL}};
		rc = db->vt.get_nodes(db->store, miss, nmiss, on_found, &lc);
		if (lc.rc)
			rc = lc.rc;
		if (rc)
			drop_pending(&lc); /* the first failure's message stands */
		else
			rc = check_pending(&lc); /* L1: the last batch */
		if (rc)
			goto cleanup;
		for (size_t i = 0; i < nmiss; i++) {
			pnode *pinned;
			if (!found[i] && fresh && (pinned = prolly__cache_get_pinned(db->cache, &miss[i]))) {
				/* Made by an open txn and not yet stored: re-hash the bytes in memory. A node
				 * that is only cached (read before) and that the store lost is missing. */
				prolly_id h;
				prolly__hash(&h, pinned->bytes, pinned->size);
				rc = prolly_id_equal(&h, &miss[i]) ? prolly__nodeset_add(ws, pinned)
				                                   : PROLLY_ECORRUPT;
				prolly__node_unref(pinned);
				if (rc == PROLLY_ECORRUPT) {
					char hex[PROLLY_ID_HEX_SIZE];
					prolly_id_to_hex(hex, &miss[i]);
					prolly_set_error(rc, "node %s does not hash to its id", hex);
				}
				if (rc)
					goto cleanup;
				continue;
			}
			if (!found[i]) {
				rc = missing(db, &miss[i], flags);
				goto cleanup;
			}
		}
	}
	if (out)
		for (size_t i = 0; i < n; i++)
			out[i] = prolly__nodeset_find(ws, &ids[i]);
cleanup:
	prolly__stats_add(db, &delta);
	free(miss);
	free(found);
	return rc;
}

int prolly__load1(prolly_db *db, prolly__nodeset *ws, const prolly_id *id, pnode **out)
{
	pnode *nd = prolly__nodeset_find(ws, id);
	if (nd) {
		prolly__thread_stats()->cache_hits++;
		*out = nd;
		return 0;
	}
	return prolly__load(db, ws, id, 1, out);
}

int prolly__store_remote(const prolly_db *db)
{
	return (db->vt.flags & PROLLY_STORE_REMOTE) != 0;
}

pnode *prolly__peek(prolly_db *db, prolly__nodeset *ws, const prolly_id *id)
{
	pnode *nd = prolly__nodeset_find(ws, id);
	if (nd || !(nd = prolly__cache_get(db->cache, id)))
		return nd;
	int rc = prolly__nodeset_add(ws, nd);
	prolly__node_unref(nd); /* ws holds its own reference */
	return rc ? NULL : nd;
}

int prolly__load_root(prolly_db *db, prolly__nodeset *ws, const prolly_id *root, pnode **out)
{
	pnode *nd = prolly__nodeset_find(ws, root);
	if (nd) {
		prolly__thread_stats()->cache_hits++;
		*out = nd;
		return 0;
	}
	return prolly__load_ex(db, ws, root, 1, out, PROLLY__LOAD_ROOTS);
}

typedef struct raw_ctx {
	const prolly_id *ids;
	prolly_store_found_fn fn;
	void *payload;
	int rc;
} raw_ctx;

int prolly__check_hash(const prolly_id *id, const void *data, size_t size)
{
	prolly_id h;
	prolly__hash(&h, data, size);
	if (prolly_id_equal(&h, id))
		return 0;
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, id);
	return prolly_set_error(PROLLY_ECORRUPT, "object %s is corrupt: bytes do not hash to the id",
	                        hex);
}

static int on_raw(void *payload, size_t index, const void *data, size_t size)
{
	raw_ctx *rc = payload;
	int r = prolly__check_hash(&rc->ids[index], data, size);
	if (r)
		return rc->rc = r;
	r = rc->fn(rc->payload, index, data, size);
	return r ? (rc->rc = r) : 0;
}

int prolly__load_raw(prolly_db *db, const prolly_id *ids, size_t n, prolly_store_found_fn fn,
                     void *payload)
{
	prolly_stats delta = PROLLY_STATS_INIT;
	delta.store_reads = 1;
	delta.store_read_items = n;
	raw_ctx rc = {ids, fn, payload, 0};
	int r = db->vt.get_nodes(db->store, ids, n, on_raw, &rc);
	prolly__stats_add(db, &delta);
	return rc.rc ? rc.rc : r;
}

static int on_has(void *payload, size_t index, const void *data, size_t size)
{
	(void)data;
	(void)size;
	((unsigned char *)payload)[index] = 1;
	return 0;
}

int prolly__has_nodes(prolly_db *db, const prolly_id *ids, size_t n, unsigned char *out)
{
	prolly_stats delta = PROLLY_STATS_INIT;
	memset(out, 0, n);
	if (!n)
		return 0;
	delta.store_reads = 1;
	delta.store_read_items = n;
	prolly__stats_add(db, &delta);
	if (db->vt.has_nodes)
		return db->vt.has_nodes(db->store, ids, n, out);
	return db->vt.get_nodes(db->store, ids, n, on_has, out);
}

void prolly__raise_epoch(prolly_db *db, uint64_t epoch)
{
	uint64_t cur = atomic_load(&db->epoch);
	while (cur < epoch && !atomic_compare_exchange_weak(&db->epoch, &cur, epoch))
		;
}

int prolly__store_epoch(prolly_db *db, uint64_t *epoch)
{
	prolly_store_write w; /* empty: only reads the epoch (see prolly_store_write) */
	memset(&w, 0, sizeof(w));
	int rc = prolly__store_write(db, &w);
	*epoch = rc ? 0 : w.current_epoch;
	if (!rc)
		prolly__raise_epoch(db, w.current_epoch);
	return rc;
}

int prolly__get_ref(prolly_db *db, const char *name, prolly_id *out)
{
	uint64_t epoch = 0;
	int rc = db->vt.get_ref(db->store, name, out, &epoch);
	if ((rc == 0 || rc == PROLLY_ENOTFOUND) && epoch)
		prolly__raise_epoch(db, epoch);
	return rc;
}

int prolly__get_refs(prolly_db *db, const char *const *names, size_t n, prolly_id *out,
                     unsigned char *found)
{
	uint64_t epoch = 0;
	int rc = 0;
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) /* S3 of prolly/store.h */
		if ((rc = prolly_store_ref_name_check(names[i])))
			return rc;
	if (db->vt.get_refs) {
		rc = db->vt.get_refs(db->store, names, n, out, found, &epoch);
		if (rc == 0 && epoch)
			prolly__raise_epoch(db, epoch);
		return rc;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		rc = prolly__get_ref(db, names[i], &out[i]);
		found[i] = rc == 0;
		if (rc == PROLLY_ENOTFOUND)
			rc = 0;
	}
	return rc;
}
