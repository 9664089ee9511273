/*
 * mem.c - the in-memory store.
 *
 * Nodes live in a chained hash table keyed by id (ids are SHA-256, so their first bytes are already
 * uniformly spread); refs in an array sorted by name bytes. Two locks:
 *
 *   write_mu  serialises write() and gc(): held by a writer for its whole call and by gc() from
 *             the epoch bump to the end of the sweep, so gc excludes every writer. gc bumps the
 *             epoch again with its deletions: readers see the first bump during the mark.
 *   lock      a reader/writer lock over the data. Readers (get_nodes, get_ref, list_refs, stat)
 *             take it shared; a writer takes it exclusive only while it checks and applies.
 *
 * gc() holds write_mu but not `lock` while mark() runs, so mark() may call get_nodes, get_ref and
 * list_refs on this same store from the same thread.
 *
 * get_nodes() calls found() with `lock` held shared: found() must not call write() or gc() of this
 * store. list_refs() copies the matching refs first and calls fn() with no lock held.
 *
 * A node is held as a copy of the bytes it was written with, except when the engine hands over
 * its own node's memory with the write (prolly__handover_write in store_int.h): the store then
 * keeps a reference to it (immutable, refcounted), so a new node is held once in the process,
 * not once in the engine's cache and again here. get_nodes() names that memory around found()
 * (prolly__handover_read), and the engine takes its node back instead of decoding a copy.
 */
#include "store_int.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct mnode {
	struct mnode *next;
	prolly_id id;
	size_t size;
	const unsigned char *data; /* copy[] or, when owner is set, bytes in the owner's block */
	prolly__shared *owner;     /* a reference to node memory the engine handed over, or NULL */
	uint8_t mem_class;         /* of this struct: the engine's node allocator (alloc.c) */
	unsigned char copy[];
} mnode;

typedef struct mref {
	char *name;
	size_t len;
	prolly_id value;
} mref;

typedef struct mem_store {
	prolly_store base;
	pthread_mutex_t write_mu;
	pthread_rwlock_t lock;
	mnode **buckets;
	size_t nbuckets; /* power of two */
	uint64_t count;
	uint64_t bytes;
	mref *refs;
	size_t nrefs, caprefs;
	uint64_t epoch;
} mem_store;

static void mnode_free(mnode *n)
{
	if (!n)
		return;
	prolly__shared_unref(n->owner);
	prolly__node_mem_free(n, n->mem_class);
}

static void count_trip(void)
{
	prolly_stats d = PROLLY_STATS_INIT;
	d.store_round_trips = 1;
	prolly_stats_add(&d);
}

static size_t bucket_of(const mem_store *m, const prolly_id *id)
{
	return (size_t)prolly__rd64(id->bytes) & (m->nbuckets - 1);
}

static mnode *find_node(const mem_store *m, const prolly_id *id)
{
	for (mnode *n = m->buckets[bucket_of(m, id)]; n; n = n->next)
		if (memcmp(n->id.bytes, id->bytes, PROLLY_ID_SIZE) == 0)
			return n;
	return NULL;
}

/* Grows the table, by as many doublings as it takes, when it holds more than one node per
 * bucket: a write may add any number of nodes (a build adds a tree's worth in one), so growing
 * by one doubling per write would leave long chains behind a large write. Failing to grow is
 * harmless. */
static void maybe_grow(mem_store *m)
{
	size_t nb = m->nbuckets;
	while (m->count >= nb && nb <= SIZE_MAX / 2 / sizeof(mnode *))
		nb *= 2;
	if (nb == m->nbuckets)
		return;
	mnode **t = calloc(nb, sizeof(*t));
	if (!t)
		return;
	for (size_t i = 0; i < m->nbuckets; i++) {
		mnode *n = m->buckets[i];
		while (n) {
			mnode *next = n->next;
			size_t b = (size_t)prolly__rd64(n->id.bytes) & (nb - 1);
			n->next = t[b];
			t[b] = n;
			n = next;
		}
	}
	free(m->buckets);
	m->buckets = t;
	m->nbuckets = nb;
}

/* Unlinks and returns the node with this id, or NULL. */
static mnode *unlink_node(mem_store *m, const prolly_id *id)
{
	mnode **pp = &m->buckets[bucket_of(m, id)];
	for (; *pp; pp = &(*pp)->next) {
		mnode *n = *pp;
		if (memcmp(n->id.bytes, id->bytes, PROLLY_ID_SIZE) == 0) {
			*pp = n->next;
			m->count--;
			m->bytes -= n->size;
			return n;
		}
	}
	return NULL;
}

/* Index of the first ref whose name is >= name (nrefs if none); *found set on an exact match. */
static size_t ref_lower_bound(const mem_store *m, const char *name, size_t len, int *found)
{
	size_t lo = 0, hi = m->nrefs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (prolly__keycmp(m->refs[mid].name, m->refs[mid].len, name, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (found)
		*found = lo < m->nrefs && prolly__keycmp(m->refs[lo].name, m->refs[lo].len, name, len) == 0;
	return lo;
}

/* Checks every expectation (lock held). Fills the conflict outputs; returns the number failing. */
static size_t check_refs(mem_store *m, prolly_store_write *w, size_t *first)
{
	size_t failing = 0;
	for (size_t i = 0; i < w->n_refs; i++) {
		prolly_ref_update *u = &w->refs[i];
		int found;
		size_t at = ref_lower_bound(m, u->name, strlen(u->name), &found);
		int ok = 1;
		if (u->expect == PROLLY_REF_EXPECT_ABSENT)
			ok = !found;
		else if (u->expect == PROLLY_REF_EXPECT_VALUE)
			ok = found && prolly_id_equal(&m->refs[at].value, &u->expected);
		if (ok)
			continue;
		u->conflict = 1;
		u->current_exists = found;
		if (found)
			u->current = m->refs[at].value;
		if (!failing)
			*first = i;
		failing++;
	}
	return failing;
}

/* Past this many refs created or removed, a write rebuilds the ref table in one merge. */
#define MERGE_REFS 64

/* Applies w's ref updates (sorted by name, S1) to the sorted table by one merge into `out`
 * (room for every ref plus the creates), which becomes the table. names[i] is the copy of a
 * created ref's name (taken). Cannot fail. */
static void merge_refs(mem_store *m, const prolly_store_write *w, char **names, mref *out)
{
	size_t i = 0, j = 0, o = 0, len = 0, len_of = SIZE_MAX; /* len: of w->refs[len_of].name */
	while (i < m->nrefs || j < w->n_refs) {
		const prolly_ref_update *u = j < w->n_refs ? &w->refs[j] : NULL;
		if (u && len_of != j) {
			len = strlen(u->name);
			len_of = j;
		}
		int c = i == m->nrefs ? 1
		        : !u          ? -1
		                      : prolly__keycmp(m->refs[i].name, m->refs[i].len, u->name, len);
		if (c < 0) {
			out[o++] = m->refs[i++];
		} else if (c == 0) {
			if (u->remove) {
				free(m->refs[i].name);
			} else {
				out[o] = m->refs[i];
				out[o++].value = u->value;
			}
			i++;
			j++;
		} else {
			if (!u->remove) {
				out[o].name = names[j];
				out[o].len = len;
				out[o++].value = u->value;
				names[j] = NULL;
			}
			j++;
		}
	}
	free(m->refs);
	m->refs = out;
	m->nrefs = o;
	m->caprefs = o; /* (out holds more: a later create grows it) */
}

static int mem_write(prolly_store *st, prolly_store_write *w)
{
	mem_store *m = (mem_store *)st;
	mnode **added = NULL;
	char **names = NULL;
	size_t n_added = 0;
	int rc, locked = 0;

	count_trip(); /* the engine checked and sorted the write (S1, S2 in store.h) */
	if (w->n_nodes) {
		added = malloc(w->n_nodes * sizeof(*added));
		if (!added)
			return prolly_set_error(PROLLY_ENOMEM, "mem store: out of memory writing %zu nodes",
			                        w->n_nodes);
	}
	if (w->n_refs) {
		names = calloc(w->n_refs, sizeof(*names));
		if (!names) {
			rc = prolly_set_error(PROLLY_ENOMEM, "mem store: out of memory writing %zu refs",
			                      w->n_refs);
			goto cleanup;
		}
	}

	pthread_mutex_lock(&m->write_mu);
	pthread_rwlock_wrlock(&m->lock);
	locked = 1;
	w->current_epoch = m->epoch;

	size_t first = 0, failing = check_refs(m, w, &first);
	if (failing) {
		rc = prolly__store_conflict("mem store", &w->refs[first], failing);
		goto cleanup;
	}
	if (w->check_epoch && w->epoch != m->epoch) {
		rc = prolly_set_error(
		    PROLLY_ECONFLICT,
		    "mem store: a gc ran meanwhile (the write expected gc epoch %llu, the "
		    "store is at %llu); nothing was written",
		    (unsigned long long)w->epoch, (unsigned long long)m->epoch);
		goto cleanup;
	}

	/* Everything that can fail (allocation) happens before anything becomes visible: nodes are
	 * inserted as they are copied and taken out again if a later allocation fails. */
	for (size_t i = 0; i < w->n_nodes; i++) {
		const prolly_store_node *sn = &w->nodes[i];
		if (find_node(m, &sn->id))
			continue;
		prolly__shared *owner = prolly__handover_owner(w->nodes, w->n_nodes, i);
		uint8_t cls = UINT8_MAX; /* a reference needs only the struct: malloc's, not a class */
		mnode *n = owner ? malloc(sizeof(*n)) : prolly__node_mem_alloc(sizeof(*n) + sn->size, &cls);
		if (!n) {
			rc = prolly_set_error(PROLLY_ENOMEM,
			                      "mem store: out of memory storing a node of %zu bytes", sn->size);
			goto cleanup;
		}
		n->id = sn->id;
		n->size = sn->size;
		n->mem_class = cls;
		n->owner = owner;
		if (owner) {
			prolly__shared_ref(owner);
			n->data = sn->data;
		} else {
			n->data = n->copy;
			if (sn->size)
				memcpy(n->copy, sn->data, sn->size);
		}
		size_t b = bucket_of(m, &n->id);
		n->next = m->buckets[b];
		m->buckets[b] = n;
		m->count++;
		m->bytes += n->size;
		added[n_added++] = n;
	}
	size_t creates = 0, removes = 0;
	for (size_t i = 0; i < w->n_refs; i++) {
		prolly_ref_update *u = &w->refs[i];
		int found;
		ref_lower_bound(m, u->name, strlen(u->name), &found);
		removes += found && u->remove;
		if (found || u->remove)
			continue;
		if (!(names[i] = strdup(u->name))) {
			rc = prolly_set_error(PROLLY_ENOMEM, "mem store: out of memory creating ref '%s'",
			                      u->name);
			goto cleanup;
		}
		creates++;
	}
	/* Many refs created or removed at once (gc expiring the reflog, a sync): one merge of the two
	 * sorted lists into a new table, O(refs + updates); a few: moved in place, each an O(refs)
	 * memmove at worst. */
	mref *merged = NULL;
	if (creates + removes > MERGE_REFS) {
		merged = malloc((m->nrefs + creates) * sizeof(*merged));
		if (!merged) {
			rc = prolly_set_error(PROLLY_ENOMEM, "mem store: out of memory growing the ref table");
			goto cleanup;
		}
	} else if (PROLLY__GROW(m->refs, m->caprefs, m->nrefs + creates, 8)) {
		rc = prolly_set_error(PROLLY_ENOMEM, "mem store: out of memory growing the ref table");
		goto cleanup;
	}

	/* Apply: nothing below can fail. */
	if (merged)
		merge_refs(m, w, names, merged);
	for (size_t i = 0; i < w->n_refs && !merged; i++) {
		prolly_ref_update *u = &w->refs[i];
		size_t len = strlen(u->name);
		int found;
		size_t at = ref_lower_bound(m, u->name, len, &found);
		if (u->remove) {
			if (found) {
				free(m->refs[at].name);
				memmove(&m->refs[at], &m->refs[at + 1], (m->nrefs - at - 1) * sizeof(mref));
				m->nrefs--;
			}
		} else if (found) {
			m->refs[at].value = u->value;
		} else {
			memmove(&m->refs[at + 1], &m->refs[at], (m->nrefs - at) * sizeof(mref));
			m->refs[at].name = names[i];
			m->refs[at].len = len;
			m->refs[at].value = u->value;
			names[i] = NULL;
			m->nrefs++;
		}
	}
	n_added = 0; /* committed */
	maybe_grow(m);
	rc = 0;

cleanup:
	for (size_t i = 0; i < n_added; i++) /* roll back a failed write's nodes */
		mnode_free(unlink_node(m, &added[i]->id));
	if (locked) {
		pthread_rwlock_unlock(&m->lock);
		pthread_mutex_unlock(&m->write_mu);
	}
	if (names)
		for (size_t i = 0; i < w->n_refs; i++)
			free(names[i]);
	free(names);
	free(added);
	return rc;
}

static int mem_get_nodes(prolly_store *st, const prolly_id *ids, size_t n,
                         prolly_store_found_fn found, void *payload)
{
	mem_store *m = (mem_store *)st;
	int rc = 0;
	count_trip();
	if (n && (!ids || !found))
		return prolly_set_error(PROLLY_EINVAL, "mem store: get_nodes without ids or callback");
	pthread_rwlock_rdlock(&m->lock);
	for (size_t i = 0; i < n && !rc; i++) {
		const mnode *nd = find_node(m, &ids[i]);
		if (!nd)
			continue;
		prolly__handover_read(nd->owner);
		rc = found(payload, i, nd->data, nd->size);
		prolly__handover_read(NULL);
	}
	pthread_rwlock_unlock(&m->lock);
	return rc;
}

static int mem_has_nodes(prolly_store *st, const prolly_id *ids, size_t n, unsigned char *out)
{
	mem_store *m = (mem_store *)st;
	count_trip();
	if (n && (!ids || !out))
		return prolly_set_error(PROLLY_EINVAL, "mem store: has_nodes without ids or out");
	pthread_rwlock_rdlock(&m->lock);
	for (size_t i = 0; i < n; i++)
		out[i] = find_node(m, &ids[i]) != NULL;
	pthread_rwlock_unlock(&m->lock);
	return 0;
}

static int mem_get_refs(prolly_store *st, const char *const *names, size_t n, prolly_id *out,
                        unsigned char *found, uint64_t *epoch)
{
	mem_store *m = (mem_store *)st;
	int have;
	count_trip(); /* the names are valid (S3) */
	pthread_rwlock_rdlock(&m->lock);
	for (size_t i = 0; i < n; i++) {
		size_t at = ref_lower_bound(m, names[i], strlen(names[i]), &have);
		found[i] = have != 0;
		if (have)
			out[i] = m->refs[at].value;
	}
	if (epoch)
		*epoch = m->epoch;
	pthread_rwlock_unlock(&m->lock);
	return 0;
}

/* get_refs of one name; PROLLY_ENOTFOUND when it is absent. */
static int mem_get_ref(prolly_store *st, const char *name, prolly_id *out, uint64_t *epoch)
{
	unsigned char found = 0;
	prolly_id v;
	int rc;
	if ((rc = prolly_store_ref_name_check(name))) {
		count_trip();
		return rc;
	}
	mem_get_refs(st, &name, 1, &v, &found, epoch); /* cannot fail */
	if (!found)
		return prolly_set_error(PROLLY_ENOTFOUND, "mem store: ref '%s' not found", name);
	if (out)
		*out = v;
	return 0;
}

static int mem_get_ref_objects(prolly_store *st, const char *name, size_t follow,
                               const prolly_id *known, prolly_id *out, uint64_t *epoch,
                               prolly_store_found_fn found, void *payload)
{
	mem_store *m = (mem_store *)st;
	int rc, have;
	count_trip();
	if ((rc = prolly_store_ref_name_check(name)))
		return rc;
	if (!found)
		return prolly_set_error(PROLLY_EINVAL, "mem store: get_ref_objects without a callback");
	pthread_rwlock_rdlock(&m->lock);
	size_t at = ref_lower_bound(m, name, strlen(name), &have);
	if (epoch)
		*epoch = m->epoch;
	if (!have) {
		rc = prolly_set_error(PROLLY_ENOTFOUND, "mem store: ref '%s' not found", name);
		goto unlock;
	}
	if (out)
		*out = m->refs[at].value;
	rc = 0;
	if (known && prolly_id_equal(known, &m->refs[at].value))
		goto unlock;
	const mnode *first = find_node(m, &m->refs[at].value);
	if (first && (rc = found(payload, 0, first->data, first->size)) == 0 &&
	    first->size >= follow + PROLLY_ID_SIZE) {
		prolly_id next;
		memcpy(next.bytes, (const unsigned char *)first->data + follow, PROLLY_ID_SIZE);
		const mnode *second = find_node(m, &next);
		if (second)
			rc = found(payload, 1, second->data, second->size);
	}
unlock:
	pthread_rwlock_unlock(&m->lock);
	return rc;
}

static int mem_get_ref_objects_v2(prolly_store *st, const char *name, size_t follow, prolly_id *out,
                                  uint64_t *epoch, prolly_store_found_fn found, void *payload)
{
	return mem_get_ref_objects(st, name, follow, NULL, out, epoch, found, payload);
}

static int mem_get_object(void *gp, const prolly_id *id, const unsigned char **data, size_t *size)
{
	const mnode *nd = find_node(gp, id);
	if (!nd)
		return PROLLY_ENOTFOUND;
	*data = nd->data;
	*size = nd->size;
	return 0;
}

/* The walk of ancestors.c under the read lock. */
static int mem_get_ancestors(prolly_store *st, const prolly_id *ids, size_t n, size_t limit,
                             const prolly_store_commit_layout *commit, prolly_store_obj_fn found,
                             void *payload)
{
	mem_store *m = (mem_store *)st;
	int rc;
	count_trip();
	pthread_rwlock_rdlock(&m->lock);
	rc = prolly__store_ancestors("mem store", ids, n, limit, commit, mem_get_object, m, found,
	                             payload);
	pthread_rwlock_unlock(&m->lock);
	return rc;
}

#ifdef PROLLY_TEST_HOOKS /* the test build only (store_int.h) */
int prolly_store_mem_table(prolly_store *st, size_t *nodes, size_t *buckets)
{
	mem_store *m = (mem_store *)st;
	if (!st || !st->kind || strcmp(st->kind, "mem") != 0)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_mem_table: not a memory store");
	pthread_rwlock_rdlock(&m->lock);
	*nodes = (size_t)m->count;
	*buckets = m->nbuckets;
	pthread_rwlock_unlock(&m->lock);
	return 0;
}
#endif

static int mem_list_refs(prolly_store *st, const char *prefix, prolly_store_ref_fn fn,
                         void *payload)
{
	mem_store *m = (mem_store *)st;
	size_t plen = prefix ? strlen(prefix) : 0;
	mref *copy = NULL;
	size_t n = 0;
	int rc = 0;

	count_trip();
	if (!fn)
		return prolly_set_error(PROLLY_EINVAL, "mem store: list_refs without a callback");
	pthread_rwlock_rdlock(&m->lock);
	size_t at = ref_lower_bound(m, plen ? prefix : "", plen, NULL);
	size_t end = at;
	while (end < m->nrefs && m->refs[end].len >= plen &&
	       memcmp(m->refs[end].name, prefix ? prefix : "", plen) == 0)
		end++;
	if (end > at) {
		copy = calloc(end - at, sizeof(*copy));
		if (!copy) {
			rc = prolly_set_error(PROLLY_ENOMEM, "mem store: out of memory listing refs");
		} else {
			for (size_t i = at; i < end && !rc; i++) {
				mref *c = &copy[n];
				if (!(c->name = strdup(m->refs[i].name))) {
					rc = prolly_set_error(PROLLY_ENOMEM, "mem store: out of memory listing refs");
					break;
				}
				c->len = m->refs[i].len;
				c->value = m->refs[i].value;
				n++;
			}
		}
	}
	pthread_rwlock_unlock(&m->lock);
	for (size_t i = 0; i < n && !rc; i++)
		rc = fn(payload, copy[i].name, &copy[i].value);
	for (size_t i = 0; i < n; i++)
		free(copy[i].name);
	free(copy);
	return rc;
}

static int mem_gc(prolly_store *st, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep, void *payload,
                  prolly_gc_result *out)
{
	mem_store *m = (mem_store *)st;
	mnode **doomed = NULL;
	size_t n_doomed = 0;
	uint64_t kept = 0, removed_bytes = 0;
	int rc = 0;

	if (!keep)
		return prolly_set_error(PROLLY_EINVAL, "mem store: gc without a keep callback");
	pthread_mutex_lock(&m->write_mu);
	pthread_rwlock_wrlock(&m->lock);
	m->epoch++;
	pthread_rwlock_unlock(&m->lock);

	if (mark && (rc = mark(payload)))
		goto cleanup;

	/* Decide with the data lock shared (keep() may read the store), then delete exclusively.
	 * write_mu keeps the node set unchanged in between. */
	pthread_rwlock_rdlock(&m->lock);
	if (m->count) {
		doomed = malloc((size_t)m->count * sizeof(*doomed));
		if (!doomed)
			rc = prolly_set_error(PROLLY_ENOMEM, "mem store: out of memory during gc");
	}
	for (size_t b = 0; b < m->nbuckets && !rc; b++)
		for (mnode *n = m->buckets[b]; n; n = n->next) {
			if (keep(payload, &n->id)) {
				kept++;
			} else {
				doomed[n_doomed++] = n;
				removed_bytes += n->size;
			}
		}
	pthread_rwlock_unlock(&m->lock);
	if (rc)
		goto cleanup;

	pthread_rwlock_wrlock(&m->lock);
	for (size_t i = 0; i < n_doomed; i++)
		mnode_free(unlink_node(m, &doomed[i]->id));
	/* Readers saw the first bump while the mark ran, and could read what is deleted here: a
	 * write checking that epoch must fail too (an engine that read a commit at an epoch takes
	 * it as present for writes that pass the check of that epoch: store.h, gc). */
	if (n_doomed)
		m->epoch++;
	pthread_rwlock_unlock(&m->lock);
	if (out) {
		out->nodes_kept = kept;
		out->nodes_removed = n_doomed;
		out->bytes_removed = removed_bytes;
	}

cleanup:
	pthread_mutex_unlock(&m->write_mu);
	free(doomed);
	return rc;
}

static int mem_stat(prolly_store *st, uint64_t *nodes, uint64_t *bytes)
{
	mem_store *m = (mem_store *)st;
	pthread_rwlock_rdlock(&m->lock);
	if (nodes)
		*nodes = m->count;
	if (bytes)
		*bytes = m->bytes;
	pthread_rwlock_unlock(&m->lock);
	return 0;
}

static void mem_close(prolly_store *st)
{
	mem_store *m = (mem_store *)st;
	if (!m)
		return;
	for (size_t b = 0; b < m->nbuckets; b++) {
		mnode *n = m->buckets[b];
		while (n) {
			mnode *next = n->next;
			mnode_free(n);
			n = next;
		}
	}
	for (size_t i = 0; i < m->nrefs; i++)
		free(m->refs[i].name);
	free(m->refs);
	free(m->buckets);
	pthread_rwlock_destroy(&m->lock);
	pthread_mutex_destroy(&m->write_mu);
	free(m);
}

static int mem_find_ids(prolly_store *st, const prolly_id *lo, const prolly_id *hi, size_t limit,
                        prolly_store_obj_fn found, void *payload);

int prolly_store_mem_new(prolly_store **out)
{
	mem_store *m = NULL;
	int rc = 0, have_mu = 0;

	if (!out)
		return prolly_set_error(PROLLY_EINVAL, "prolly_store_mem_new: out is NULL");
	m = calloc(1, sizeof(*m));
	if (!m) {
		rc = prolly_set_error(PROLLY_ENOMEM, "mem store: out of memory");
		goto cleanup;
	}
	m->nbuckets = 1024;
	m->buckets = calloc(m->nbuckets, sizeof(*m->buckets));
	if (!m->buckets) {
		rc = prolly_set_error(PROLLY_ENOMEM, "mem store: out of memory");
		goto cleanup;
	}
	if (pthread_mutex_init(&m->write_mu, NULL)) {
		rc = prolly_set_error(PROLLY_ENOMEM, "mem store: cannot create a mutex");
		goto cleanup;
	}
	have_mu = 1;
	if (pthread_rwlock_init(&m->lock, NULL)) {
		rc = prolly_set_error(PROLLY_ENOMEM, "mem store: cannot create a lock");
		goto cleanup;
	}
	m->epoch = 1;
	m->base.version = PROLLY_STORE_VERSION;
	m->base.get_ref_objects = mem_get_ref_objects_v2;
	m->base.get_ref_objects_known = mem_get_ref_objects;
	m->base.get_ancestors = mem_get_ancestors;
	m->base.find_ids = mem_find_ids;
	m->base.has_nodes = mem_has_nodes;
	m->base.kind = "mem";
	m->base.get_nodes = mem_get_nodes;
	m->base.write = mem_write;
	m->base.get_ref = mem_get_ref;
	m->base.get_refs = mem_get_refs;
	m->base.list_refs = mem_list_refs;
	m->base.gc = mem_gc;
	m->base.stat = mem_stat;
	m->base.close = mem_close;
	*out = &m->base;
	m = NULL;

cleanup:
	if (m) {
		if (have_mu)
			pthread_mutex_destroy(&m->write_mu);
		free(m->buckets);
		free(m);
	}
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* find_ids (store interface version 3): a scan of every bucket, the matches sorted by id      */
/* ------------------------------------------------------------------------------------------ */

static int cmp_mnode_id(const void *a, const void *b)
{
	const mnode *x = *(const mnode *const *)a, *y = *(const mnode *const *)b;
	return memcmp(x->id.bytes, y->id.bytes, PROLLY_ID_SIZE);
}

static int mem_find_ids(prolly_store *st, const prolly_id *lo, const prolly_id *hi, size_t limit,
                        prolly_store_obj_fn found, void *payload)
{
	mem_store *m = (mem_store *)st;
	const mnode **hits = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	count_trip();
	if (!lo || !hi || !found)
		return prolly_set_error(PROLLY_EINVAL, "mem store: find_ids without bounds or callback");
	pthread_rwlock_rdlock(&m->lock);
	for (size_t b = 0; b < m->nbuckets && !rc; b++) {
		for (const mnode *nd = m->buckets[b]; nd; nd = nd->next) {
			if (memcmp(nd->id.bytes, lo->bytes, PROLLY_ID_SIZE) < 0 ||
			    memcmp(nd->id.bytes, hi->bytes, PROLLY_ID_SIZE) > 0)
				continue;
			if (PROLLY__GROW(hits, cap, n + 1, 16)) {
				rc = prolly_set_error(PROLLY_ENOMEM, "mem store: out of memory finding ids");
				break;
			}
			hits[n++] = nd;
		}
	}
	if (!rc && n)
		qsort(hits, n, sizeof(*hits), cmp_mnode_id);
	for (size_t i = 0; i < n && i < limit && !rc; i++)
		rc = found(payload, &hits[i]->id, hits[i]->data, hits[i]->size);
	pthread_rwlock_unlock(&m->lock);
	free(hits);
	return rc;
}
