/*
 * key_history.c - the commits that changed one key (prolly_key_history).
 *
 * The walk is prolly_log's (newest first, each commit once, reading commits ahead where the
 * store can). For every commit it visits, one point lookup of the key in the commit's tree
 * (O(height), the nodes shared with the neighbouring commits' trees come from the cache): never
 * a diff of whole trees. A commit changed the key when its value differs from the value in every
 * one of its parents (a root commit: when the key exists); so a merge that took one side's
 * value is not listed, the commit that made the value is.
 *
 * Only the commits that lead to the branch's value are reported (git's default history
 * simplification): from a commit whose value equals a parent's, the history follows only the
 * first such parent (for a merge that took one side's value, the other side's changes to the key
 * never reached the branch); from any other commit, every parent. So the first report holds the
 * value the key has at the start commit.
 *
 * A commit's parents come after it in the walk, so a commit waits in a queue, in walk order,
 * until the values of all its parents are known; the queue's head is decided then. Invariants:
 *   KH1 the queue holds commits in walk order (newest first), so reports are newest first;
 *   KH2 a queued commit's parent slot is filled exactly once, when the walk reaches the parent;
 *   KH3 parents the walk never reaches (removed by retention) are left out of the comparison at
 *       the end of the walk: a commit none of whose parents is known counts as a root;
 *   KH4 a commit's children come before it in the walk (BR2 in branch.c), so when it reaches the
 *       queue's head every child has been decided and its `wanted` flag is final: set for the
 *       start commit, and by each wanted child that follows it. Not where a parent is newer than
 *       a child (a commit made with prolly_commit_create and an older time, another writer):
 *       the log can hand the parent out first, it is decided unwanted before that child wants
 *       it, and the child's slot for it is never filled (KH3 then counts the child a root). A
 *       walk in topological order would need the whole history read before the first report
 *       (the log stops early when fn does); not done: documented in prolly.h and commits.md;
 *   KH5 a commit whose tree is not stored (gc kept it for the history walks only: docs/commits.md,
 *       K3) is never queued, as if retention had removed it (KH3): its children compare with
 *       their other parents. The store is asked which roots it lacks only when a batch's root
 *       load fails.
 * Values are compared by SHA-256; each queued commit keeps its own value until decided.
 *
 * The queue can grow long: a merge of a branch that left long ago waits at the head until the
 * walk reaches that branch's old commit, and every commit visited meanwhile queues behind it.
 * So nothing scans it: a queued commit is found by its id (`at`: id -> its sequence number + 1;
 * entry seq sits at ring position head + seq - head_seq), and the parent slots waiting for a
 * commit by the commit's id (`waits`: id -> 1 + the first of its waiters in `wl`, a list).
 *
 * The lookups go a batch of KH_BATCH commits at a time: the walk's commits are kept until a
 * batch is full (or the walk ends); then the key's path is loaded in all of their trees a level
 * at a time, one store call per level for the whole batch (nodes shared between the trees, or
 * cached, asked once or not at all); then the commits are queued in walk order as before. So
 * the lookups of n commits cost about n / KH_BATCH * height store calls, where a lookup per
 * commit cost at least a call per commit (each commit's root is new): a round trip each on a
 * server store. A batch pins at most KH_BATCH * height nodes.
 */
#include "internal.h"

#include <stdlib.h>

#define KH_BATCH 256

typedef struct kval {
	int exists;
	prolly_id hash; /* of the value, when exists */
} kval;

typedef struct kent {
	prolly_commit *c; /* owned copy */
	kval self;
	prolly_buf value;
	kval *par;      /* per parent */
	uint8_t *known; /* per parent: filled (KH2) */
	size_t n_known;
	int wanted; /* on the simplified history (KH4) */
} kent;

/* A queued commit's parent slot waiting for that parent (KH2). */
typedef struct kwait {
	uint64_t seq; /* the waiting commit's */
	size_t slot;  /* its parent index */
	size_t next;  /* 1 + the next waiter for the same parent, 0: none */
} kwait;

typedef struct kwalk {
	prolly_db *db;
	const void *key;
	size_t klen;
	prolly_value_history_fn fn;
	void *payload;
	kent *q; /* ring of pending commits (KH1) */
	size_t head, len, cap;
	uint64_t head_seq, next_seq; /* the sequence numbers of the head and of the next queued */
	prolly__idmap at;            /* a queued (or once queued) commit's id -> seq + 1 */
	prolly__idmap waits;         /* a parent's id -> 1 + its first waiter in wl, 0: none */
	kwait *wl;
	size_t n_wl, wl_cap;
	prolly_commit **pend; /* the batch: walk order, owned; KH_BATCH slots */
	size_t n_pend;
	int stop;    /* fn asked to stop: its value */
	int started; /* the start commit has been seen */
} kwalk;

static prolly_commit *commit_dup(const prolly_commit *c)
{
	prolly_commit *d = calloc(1, sizeof(*d));
	size_t mlen = strlen(c->message);
	if (!d)
		return NULL;
	*d = *c;
	d->parents = NULL;
	d->message = malloc(mlen + 1);
	if (c->n_parents)
		d->parents = malloc(c->n_parents * sizeof(*d->parents));
	if (!d->message || (c->n_parents && !d->parents)) {
		prolly_commit_free(d);
		return NULL;
	}
	memcpy(d->message, c->message, mlen + 1);
	if (c->n_parents)
		memcpy(d->parents, c->parents, c->n_parents * sizeof(*d->parents));
	return d;
}

static void kent_dispose(kent *e)
{
	prolly_commit_free(e->c);
	prolly_buf_dispose(&e->value);
	free(e->par);
	free(e->known);
	memset(e, 0, sizeof(*e));
}

static int kval_equal(const kval *a, const kval *b)
{
	return a->exists == b->exists && (!a->exists || prolly_id_equal(&a->hash, &b->hash));
}

/* Whether the queue's head changed the key: differs from every known parent (KH3). */
static int changed(const kent *e)
{
	size_t compared = 0;
	for (size_t i = 0; i < e->c->n_parents; i++) {
		if (!e->known[i])
			continue;
		compared++;
		if (kval_equal(&e->self, &e->par[i]))
			return 0;
	}
	return compared ? 1 : e->self.exists;
}

/* The queued commit of sequence number seq, or NULL when it left the queue. */
static kent *queued(kwalk *w, uint64_t seq)
{
	if (seq < w->head_seq || seq - w->head_seq >= w->len)
		return NULL;
	return &w->q[(w->head + (size_t)(seq - w->head_seq)) % w->cap];
}

/* Marks the queued commit id (a parent of a wanted commit) wanted. */
static void want(kwalk *w, const prolly_id *id)
{
	uintptr_t v = prolly__idmap_get(&w->at, id);
	kent *q = v ? queued(w, (uint64_t)v - 1) : NULL;
	if (q)
		q->wanted = 1;
}

/* KH4: the parents a wanted commit leads to: the first whose value equals its own, else all. */
static void want_parents(kwalk *w, const kent *e)
{
	for (size_t i = 0; i < e->c->n_parents; i++) {
		if (e->known[i] && kval_equal(&e->self, &e->par[i])) {
			want(w, &e->c->parents[i]);
			return;
		}
	}
	for (size_t i = 0; i < e->c->n_parents; i++)
		want(w, &e->c->parents[i]);
}

/* Decides and drops commits from the head (all of them when `all`, at the end). */
static int drain(kwalk *w, int all)
{
	while (w->len) {
		kent *e = &w->q[w->head];
		if (!all && e->n_known < e->c->n_parents)
			break;
		int rc = 0;
		if (e->wanted)
			want_parents(w, e);
		if (e->wanted && changed(e))
			rc = w->fn(w->payload, e->c, e->self.exists ? e->value.ptr : NULL,
			           e->self.exists ? e->value.size : 0);
		kent_dispose(e);
		w->head = (w->head + 1) % w->cap;
		w->len--;
		w->head_seq++;
		if (rc) {
			w->stop = rc;
			return rc;
		}
	}
	return 0;
}

/* Queues commit c (owned: freed here on failure) whose tree holds the key's value v (NULL: no
 * such key), and decides what it can (KH1-KH4). */
static int queue_commit(kwalk *w, prolly_commit *c, const prolly_slice *v)
{
	kent e;
	int rc;
	memset(&e, 0, sizeof(e));
	e.c = c; /* kent_dispose frees it on failure */
	e.self.exists = v != NULL;
	if (v)
		prolly__hash(&e.self.hash, v->data, v->size);
	/* KH2: this commit is a parent of queued ones: the slots waiting for it. */
	size_t wi = (size_t)prolly__idmap_get(&w->waits, &c->id);
	if (wi && (rc = prolly__idmap_put(&w->waits, &c->id, 0))) {
		kent_dispose(&e);
		return rc;
	}
	for (; wi; wi = w->wl[wi - 1].next) {
		kent *q = queued(w, w->wl[wi - 1].seq);
		size_t i = w->wl[wi - 1].slot;
		assert(q && i < q->c->n_parents && prolly_id_equal(&q->c->parents[i], &c->id));
		if (!q || i >= q->c->n_parents || q->known[i])
			continue;         /* (never: a waiter stays queued until its parents are known) */
		assert(!q->known[i]); /* the walk visits each commit once (prolly_log) */
		q->known[i] = 1;
		q->par[i] = e.self;
		q->n_known++;
	}
	size_t old = w->cap;
	if (PROLLY__GROW(w->q, w->cap, w->len + 1, 16)) {
		kent_dispose(&e);
		return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
	}
	if (w->cap != old && w->head + w->len > old) /* the ring wrapped: its tail goes after old */
		memcpy(w->q + old, w->q, (w->head + w->len - old) * sizeof(*w->q));
	e.wanted = !w->started; /* KH4: the start commit */
	w->started = 1;
	if (c->n_parents) {
		e.par = calloc(c->n_parents, sizeof(*e.par));
		e.known = calloc(c->n_parents, 1);
	}
	if ((c->n_parents && (!e.par || !e.known)) ||
	    (v && prolly__buf_set(&e.value, v->data, v->size))) {
		kent_dispose(&e);
		return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
	}
	/* Findable by id (want), and its parent slots waiting for their commits (KH2). */
	uint64_t seq = w->next_seq++;
	if ((rc = prolly__idmap_put(&w->at, &c->id, (uintptr_t)seq + 1)) ||
	    PROLLY__GROW(w->wl, w->wl_cap, w->n_wl + c->n_parents, 64)) {
		kent_dispose(&e);
		return rc ? rc : prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
	}
	for (size_t i = 0; i < c->n_parents; i++) {
		kwait *k = &w->wl[w->n_wl];
		k->seq = seq;
		k->slot = i;
		k->next = (size_t)prolly__idmap_get(&w->waits, &c->parents[i]);
		if ((rc = prolly__idmap_put(&w->waits, &c->parents[i], (uintptr_t)(w->n_wl + 1)))) {
			kent_dispose(&e);
			return rc;
		}
		w->n_wl++;
	}
	w->q[(w->head + w->len) % w->cap] = e;
	w->len++;
	return drain(w, 0);
}

/* The key's value in every tree of the batch, its path loaded a level at a time (one store
 * call per level), then the batch queued in walk order. Empties the batch. */
static int settle(kwalk *w)
{
	size_t n = w->n_pend, m = 0, done = 0;
	prolly__nodeset ws;
	prolly_id ids[KH_BATCH];
	size_t of[KH_BATCH];    /* the batch index of ids[j] */
	pnode *nd[KH_BATCH];    /* ids[j] loaded */
	pnode *leaf[KH_BATCH];  /* per batch index: the leaf holding the key, or NULL */
	uint32_t pos[KH_BATCH]; /* its position there */
	uint8_t gone[KH_BATCH]; /* per batch index: its tree is not stored (KH5) */
	int rc = 0, roots = 1;
	prolly__nodeset_init(&ws);
	for (size_t k = 0; k < n; k++) {
		leaf[k] = NULL;
		gone[k] = 0;
		ids[m] = w->pend[k]->tree;
		of[m++] = k;
	}
	while (m && !rc) {
		size_t next = 0;
		if ((rc = prolly__load(w->db, &ws, ids, m, nd)) && roots) {
			/* KH5: a root that is not stored is a tree gc removed (it kept the commit for the
			 * history walks only); asked only when the load failed, then left out. */
			unsigned char held[KH_BATCH];
			size_t kept = 0;
			if ((rc = prolly__has_nodes(w->db, ids, m, held)))
				break;
			for (size_t j = 0; j < m; j++) {
				if (held[j] || prolly_id_equal(&ids[j], &w->db->empty_tree)) {
					ids[kept] = ids[j];
					of[kept++] = of[j];
				} else {
					gone[of[j]] = 1;
				}
			}
			if (kept == m) /* nothing missing at this level: the failure was another */
				rc = prolly__load(w->db, &ws, ids, m, nd);
			else if ((m = kept) && (rc = prolly__load(w->db, &ws, ids, m, nd)))
				break;
		}
		roots = 0;
		if (rc)
			break;
		for (size_t j = 0; j < m; j++) {
			uint32_t i = prolly__node_lower_bound(nd[j], w->key, w->klen);
			if (i == nd[j]->n)
				continue; /* past the tree's last key: absent */
			if (nd[j]->level > 0) {
				ids[next] = *prolly__node_child(nd[j], i);
				of[next++] = of[j];
				continue;
			}
			prolly_slice k = prolly__node_key(nd[j], i);
			if (prolly__keycmp(k.data, k.size, w->key, w->klen) == 0) {
				leaf[of[j]] = nd[j];
				pos[of[j]] = i;
			}
		}
		m = next;
	}
	for (; done < n && !rc; done++) {
		prolly_slice v;
		if (gone[done]) { /* KH5: as if retention had removed the commit */
			prolly_commit_free(w->pend[done]);
			w->pend[done] = NULL;
			continue;
		}
		if (leaf[done])
			v = prolly__node_value(leaf[done], pos[done]);
		rc = queue_commit(w, w->pend[done], leaf[done] ? &v : NULL);
		w->pend[done] = NULL; /* owned by the queue now, or freed */
		if (!rc && w->stop)
			rc = w->stop;
	}
	for (size_t k = done; k < n; k++) {
		prolly_commit_free(w->pend[k]);
		w->pend[k] = NULL;
	}
	w->n_pend = 0;
	prolly__nodeset_dispose(&ws);
	return rc;
}

static int on_commit(void *payload, const prolly_commit *c)
{
	kwalk *w = payload;
	if (!(w->pend[w->n_pend] = commit_dup(c)))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
	return ++w->n_pend == KH_BATCH ? settle(w) : 0;
}

int prolly_key_history(prolly_db *db, const prolly_id *commit, const void *key, size_t klen,
                       prolly_value_history_fn fn, void *payload)
{
	kwalk w;
	int rc;
	if (!db || !commit || (!key && klen) || !fn)
		return prolly_set_error(PROLLY_EINVAL, "prolly_key_history needs db, commit, key and fn");
	if (klen > PROLLY_MAX_KEY)
		return prolly_set_error(PROLLY_ETOOBIG, "a key has at most %d bytes, not %zu",
		                        PROLLY_MAX_KEY, klen);
	memset(&w, 0, sizeof(w));
	prolly__idmap_init(&w.at);
	prolly__idmap_init(&w.waits);
	w.db = db;
	w.key = key ? key : "";
	w.klen = klen;
	w.fn = fn;
	w.payload = payload;
	if (!(w.pend = calloc(KH_BATCH, sizeof(*w.pend)))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory walking history");
		goto cleanup;
	}
	rc = prolly__log_walk(db, commit, on_commit, &w, "history");
	if (rc == 0)
		rc = settle(&w); /* the last batch */
	if (rc == 0)
		rc = drain(&w, 1); /* KH3 */
	if (w.stop)
		rc = w.stop;
cleanup:
	for (size_t k = 0; w.pend && k < w.n_pend; k++)
		prolly_commit_free(w.pend[k]);
	free(w.pend);
	while (w.len) {
		kent_dispose(&w.q[w.head]);
		w.head = (w.head + 1) % w.cap;
		w.len--;
	}
	free(w.q);
	free(w.wl);
	prolly__idmap_dispose(&w.at);
	prolly__idmap_dispose(&w.waits);
	return rc;
}
