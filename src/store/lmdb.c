/*
 * lmdb.c - the LMDB store: its layout and rules, and its operations.
 *
 * Layout: one LMDB environment per directory with three named databases,
 *   nodes  key: 32-byte id      value: the node's bytes
 *   refs   key: the name bytes  value: 32-byte id
 *   meta   "schema_version" -> u32 LE (SCHEMA_VERSION), "gc_epoch" -> u64 LE (starts at 1),
 *          "txn" -> u64 LE: the LMDB transaction id of the last write (schema version 2),
 *          "node_size" -> u32 LE: the store's node size, other than 4096 (schema version 3 only:
 *          a store made with another node size is version 3, so that no library older than the
 *          row writes 4 KiB trees into it; a store of 4 KiB nodes stays version 2)
 *
 * Invariant LT1: every write transaction of this file puts "txn" = its own transaction id (the id
 * its commit writes into the meta page) and the store's schema_version (2, or 3 for a store with
 * a node_size row; a version-1 store becomes 2), in the meta database's one leaf
 * page. So the tree a meta page leads to must hold a "txn" row equal to that meta page's id: one
 * lower means the meta page points into an older tree (a damaged root number that lands on a
 * page an earlier transaction left behind), which open reports as PROLLY_ECORRUPT. Higher is
 * PROLLY_ECORRUPT too (a copy of a live store read from its start: old meta pages over pages later
 * transactions rewrote), except under transaction 1, which a compacting mdb_copy renumbers the
 * snapshot to; no row is a store last written by schema version 1. Version 1 libraries refuse version 2 stores, so no writer skips the row.
 *
 * Invariant LT5: a write of nodes only (no refs, no epoch check, not durable: a builder's flush,
 * a half of a large commit) that arrives while another such write is in progress joins it: the
 * writing thread takes the waiting writes just before it commits and puts their nodes in the
 * same LMDB transaction, so LMDB's one writer commits and flushes once for all of them; each
 * joined write returns that transaction's outcome (code and message). A write with refs, an
 * epoch check or durability never joins and is never joined: it is its own transaction, as
 * before. Nothing of a joined write is visible before the commit that carries it.
 *
 * This file holds the store's operations. Opening writes nothing unless PROLLY_OPEN_CREATE asks
 * (O1-O4 in lmdb_open.c); the registry of environments and the transaction gate described next
 * live in lmdb_env.c; the meta pages are checked first
 * (lmdb_meta.c), and a handle opened with PROLLY_OPEN_READONLY (MDB_RDONLY) refuses writes and
 * gc. Refs are checked against their row count (check_ref_count) because LMDB pages carry no
 * checksum.
 *
 * Environments. LMDB forbids opening one environment twice in a process (its locks are per
 * process), so environments live in a process-wide registry keyed by the directory's device and
 * inode, shared by reference count between every handle on that directory. The registry
 * remembers the pid that opened each environment: a child of fork() opens its own.
 *
 * Flags. MDB_NOTLS: read transactions are not tied to threads, so a thread may hold several (the
 * gc's mark callback reads the store while the same thread holds the gc's write transaction).
 * MDB_NOMETASYNC: every commit flushes its data pages before writing the meta page, but the meta
 * page itself is not flushed. LMDB documents this as keeping atomicity and integrity across a
 * system crash (the previous meta page stays valid), at the price of possibly losing the last
 * commits. A durable write (w->durable) then calls mdb_env_sync(env, 1), which flushes the meta
 * page as well: when write() returns, the commit is on disk. We do not use MDB_NOSYNC for the
 * non-durable writes of a bulk build: without the data flush a system crash could leave a meta
 * page on disk that points to pages that never reached it, which corrupts the tree rather than
 * losing a few nodes.
 *
 * Map size. The map is virtual address space (the file is not extended to it without
 * MDB_WRITEMAP), so the default is generous. When a write transaction hits MDB_MAP_FULL the store
 * aborts it, doubles the map and retries. mdb_env_set_mapsize() needs no transaction of this
 * process to be active, so every transaction passes a gate: the resizing thread closes the gate
 * to new transactions and waits for the open ones to finish. A thread that already holds a
 * transaction (the gc's mark callback; a callback of get_nodes) passes a closed gate, and a
 * thread that holds one never resizes (it gets PROLLY_EFULL instead), so the gate cannot
 * deadlock on one thread. When another process has grown the map, LMDB answers MDB_MAP_RESIZED
 * and the store adopts the new size the same way.
 */
#include "lmdb_int.h"

#include <errno.h>
#include <limits.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static void count_trip(void)
{
	prolly_stats d = PROLLY_STATS_INIT;
	d.store_round_trips = 1;
	prolly_stats_add(&d);
}

/* ---- helpers ---------------------------------------------------------------------------------- */

static int read_epoch(env_entry *e, MDB_txn *txn, uint64_t *out)
{
	MDB_val k = {sizeof(META_EPOCH) - 1, (void *)META_EPOCH}, v;
	int mrc = mdb_get(txn, e->meta, &k, &v);
	if (mrc == MDB_NOTFOUND || (mrc == 0 && v.mv_size != 8))
		return prolly_set_error(PROLLY_ECORRUPT, "lmdb: %s: the gc epoch row is %s", e->path,
		                        mrc ? "missing" : "malformed");
	if (mrc)
		return prolly__lmdb_fail(e, mrc, "reading the gc epoch");
	*out = prolly__rd64(v.mv_data);
	return 0;
}

int prolly__lmdb_put_epoch(MDB_txn *txn, env_entry *e, uint64_t epoch)
{
	unsigned char b[8];
	prolly__wr64(b, epoch);
	MDB_val k = {sizeof(META_EPOCH) - 1, (void *)META_EPOCH}, v = {8, b};
	return mdb_put(txn, e->meta, &k, &v, 0);
}

/* LT1: stamps a write transaction. Returns an LMDB code. */
int prolly__lmdb_stamp(MDB_txn *txn, env_entry *e)
{
	unsigned char b[8], sv[4];
	prolly__wr64(b, (uint64_t)mdb_txn_id(txn));
	prolly__wr32(sv, e->schema);
	MDB_val k = {sizeof(META_TXN) - 1, (void *)META_TXN}, v = {8, b};
	MDB_val ks = {sizeof(META_SCHEMA) - 1, (void *)META_SCHEMA}, vs = {4, sv};
	int mrc = mdb_put(txn, e->meta, &k, &v, 0);
	return mrc ? mrc : mdb_put(txn, e->meta, &ks, &vs, 0);
}

/* Reads a ref: 0 found, MDB_NOTFOUND absent, another LMDB code, or -1 for a malformed row. */
static int read_ref(env_entry *e, MDB_txn *txn, const char *name, prolly_id *out)
{
	MDB_val k = {strlen(name), (void *)name}, v;
	int mrc = mdb_get(txn, e->refs, &k, &v);
	if (mrc)
		return mrc;
	if (v.mv_size != PROLLY_ID_SIZE)
		return -1;
	memcpy(out->bytes, v.mv_data, PROLLY_ID_SIZE);
	return 0;
}

/* ---- write ------------------------------------------------------------------------------------ */

/* LT5: a node-only write waiting in env_entry.joining. */
typedef struct join_req {
	struct join_req *next;
	prolly_store_write *w;
	int done, rc;
	char msg[512];
} join_req;

static int joinable(const prolly_store_write *w)
{
	return w->n_refs == 0 && !w->check_epoch && !w->durable && w->n_nodes > 0;
}

static int put_nodes(env_entry *e, MDB_txn *txn, const prolly_store_write *w, int *mrc)
{
	for (size_t i = 0; i < w->n_nodes; i++) {
		const prolly_store_node *n = &w->nodes[i];
		MDB_val k = {PROLLY_ID_SIZE, (void *)n->id.bytes}, v = {n->size, (void *)n->data};
		int r = mdb_put(txn, e->nodes, &k, &v, MDB_NOOVERWRITE);
		if (r && r != MDB_KEYEXIST) {
			*mrc = r;
			return prolly__lmdb_fail(e, r, "writing a node");
		}
	}
	return 0;
}

/* One attempt at a write. *mrc receives the LMDB code of a failure that came from LMDB. With
 * `taken` (a node-only write, LT5), the writes waiting to join are moved to *taken and their
 * nodes put too (those taken by an earlier attempt as well). */
static int write_once(env_entry *e, prolly_store_write *w, size_t *seen, int *mrc, join_req **taken)
{
	MDB_txn *txn = NULL;
	uint64_t epoch;
	size_t failing = 0, first = 0;
	int rc;

	*mrc = 0;
	if ((rc = prolly__lmdb_txn_begin(e, 0, &txn, seen)))
		return rc;
	if ((rc = read_epoch(e, txn, &epoch)))
		goto cleanup;
	w->current_epoch = epoch;

	for (size_t i = 0; i < w->n_refs; i++) {
		prolly_ref_update *u = &w->refs[i];
		prolly_id cur;
		int r = read_ref(e, txn, u->name, &cur), found = r == 0, ok = 1;
		if (r == -1) {
			rc = prolly_set_error(PROLLY_ECORRUPT, "lmdb: %s: ref '%s' does not hold a 32-byte id",
			                      e->path, u->name);
			goto cleanup;
		}
		if (r && r != MDB_NOTFOUND) {
			*mrc = r;
			rc = prolly__lmdb_fail(e, r, "reading a ref");
			goto cleanup;
		}
		if (u->expect == PROLLY_REF_EXPECT_ABSENT)
			ok = !found;
		else if (u->expect == PROLLY_REF_EXPECT_VALUE)
			ok = found && prolly_id_equal(&cur, &u->expected);
		if (ok)
			continue;
		u->conflict = 1;
		u->current_exists = found;
		if (found)
			u->current = cur;
		if (!failing)
			first = i;
		failing++;
	}
	if (failing) {
		char who[PATH_MAX + 8];
		snprintf(who, sizeof(who), "lmdb: %s", e->path);
		rc = prolly__store_conflict(who, &w->refs[first], failing);
		goto cleanup;
	}
	if (w->check_epoch && w->epoch != epoch) {
		rc = prolly_set_error(PROLLY_ECONFLICT,
		                      "lmdb: %s: a gc ran meanwhile (the write expected gc epoch %llu, the "
		                      "store is at %llu); nothing was written",
		                      e->path, (unsigned long long)w->epoch, (unsigned long long)epoch);
		goto cleanup;
	}

	if ((rc = put_nodes(e, txn, w, mrc)))
		goto cleanup;
	if (taken) { /* LT5 */
		pthread_mutex_lock(&e->join_mu);
		join_req *more = e->joining;
		e->joining = NULL;
		pthread_mutex_unlock(&e->join_mu);
		while (more) {
			join_req *r = more;
			more = r->next;
			r->next = *taken;
			*taken = r;
		}
		for (join_req *r = *taken; r; r = r->next)
			if ((rc = put_nodes(e, txn, r->w, mrc)))
				goto cleanup;
	}
	for (size_t i = 0; i < w->n_refs; i++) {
		prolly_ref_update *u = &w->refs[i];
		MDB_val k = {strlen(u->name), (void *)u->name}, v = {PROLLY_ID_SIZE, u->value.bytes};
		int r = u->remove ? mdb_del(txn, e->refs, &k, NULL) : mdb_put(txn, e->refs, &k, &v, 0);
		if (r && !(u->remove && r == MDB_NOTFOUND)) {
			*mrc = r;
			rc = prolly__lmdb_fail(e, r, u->remove ? "deleting a ref" : "setting a ref");
			goto cleanup;
		}
	}
	int r = prolly__lmdb_stamp(txn, e);
	if (r) {
		*mrc = r;
		rc = prolly__lmdb_fail(e, r, "stamping a write");
		goto cleanup;
	}
	r = prolly__lmdb_txn_commit(e, txn);
	txn = NULL;
	if (r) {
		*mrc = r;
		rc = prolly__lmdb_fail(e, r, "committing a write");
		goto cleanup;
	}
	if (w->durable && (r = mdb_env_sync(e->env, 1))) {
		rc = prolly_set_error(prolly__lmdb_translate(r) == PROLLY_EFULL ? PROLLY_EFULL
		                                                                : PROLLY_ESTORE,
		                      "lmdb: %s: the write was committed but flushing it to disk failed: "
		                      "%s",
		                      e->path, mdb_strerror(r));
		goto cleanup;
	}
	rc = 0;

cleanup:
	if (txn)
		prolly__lmdb_txn_abort(e, txn);
	return rc;
}

static int refuse_readonly(const env_entry *e, const char *what)
{
	return prolly_set_error(PROLLY_EUNSUPPORTED,
	                        "lmdb: %s was opened read-only (PROLLY_OPEN_READONLY): %s refused",
	                        e->path, what);
}

/* A write with no nodes and no refs only reads the gc epoch (prolly_db_new sends one): a read
 * transaction does, so that opening a store never takes the writer lock. */
static int read_only_write(env_entry *e, prolly_store_write *w)
{
	MDB_txn *txn = NULL;
	uint64_t epoch;
	int rc;
	if ((rc = prolly__lmdb_txn_begin(e, MDB_RDONLY, &txn, NULL)))
		return rc;
	rc = read_epoch(e, txn, &epoch);
	prolly__lmdb_txn_abort(e, txn);
	if (rc)
		return rc;
	w->current_epoch = epoch;
	if (w->check_epoch && w->epoch != epoch)
		return prolly_set_error(PROLLY_ECONFLICT,
		                        "lmdb: %s: a gc ran meanwhile (the write expected gc epoch %llu, "
		                        "the store is at %llu); nothing was written",
		                        e->path, (unsigned long long)w->epoch, (unsigned long long)epoch);
	return 0;
}

static int lmdb_write(prolly_store *st, prolly_store_write *w)
{
	env_entry *e = ((lmdb_store *)st)->e;
	int rc;

	count_trip(); /* the engine checked and sorted the write (S1, S2 in store.h) */
	if (!w->n_nodes && !w->n_refs)
		return read_only_write(e, w);
	if (((lmdb_store *)st)->readonly)
		return refuse_readonly(e, "a write is");
	join_req me, *taken = NULL;
	int join = joinable(w);
	if (join) { /* LT5 */
		memset(&me, 0, sizeof(me));
		me.w = w;
		pthread_mutex_lock(&e->join_mu);
		if (e->join_busy) {
			me.next = e->joining;
			e->joining = &me;
			while (!me.done && e->join_busy)
				pthread_cond_wait(&e->join_cv, &e->join_mu);
			if (me.done) {
				pthread_mutex_unlock(&e->join_mu);
				if (me.rc)
					prolly_set_error(me.rc, "%s", me.msg);
				return me.rc;
			}
			/* The write in progress ended without taking this one: this one leads now. */
			for (join_req **p = &e->joining; *p; p = &(*p)->next)
				if (*p == &me) {
					*p = me.next;
					break;
				}
		}
		e->join_busy = 1;
		pthread_mutex_unlock(&e->join_mu);
	}
	for (int attempt = 0;; attempt++) {
		size_t seen = 0;
		int mrc;
		rc = write_once(e, w, &seen, &mrc, join ? &taken : NULL);
		if (mrc != MDB_MAP_FULL || attempt >= MAX_ATTEMPTS)
			break;
		if ((rc = prolly__lmdb_resize(e, seen, 0)))
			break;
	}
	if (join) {
		pthread_mutex_lock(&e->join_mu);
		while (taken) {
			join_req *r = taken;
			taken = r->next;
			r->rc = rc;
			if (rc)
				snprintf(r->msg, sizeof(r->msg), "%s", prolly_last_error());
			r->done = 1; /* r belongs to its thread again once the lock is released */
		}
		e->join_busy = 0;
		pthread_cond_broadcast(&e->join_cv);
		pthread_mutex_unlock(&e->join_mu);
	}
	return rc;
}

/* ---- reads ------------------------------------------------------------------------------------ */

static int lmdb_get_nodes(prolly_store *st, const prolly_id *ids, size_t n,
                          prolly_store_found_fn found, void *payload)
{
	env_entry *e = ((lmdb_store *)st)->e;
	MDB_txn *txn = NULL;
	int rc;

	count_trip();
	if (!n)
		return 0;
	if (!ids || !found)
		return prolly_set_error(PROLLY_EINVAL, "lmdb: get_nodes without ids or callback");
	if ((rc = prolly__lmdb_txn_begin(e, MDB_RDONLY, &txn, NULL)))
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		MDB_val k = {PROLLY_ID_SIZE, (void *)ids[i].bytes}, v;
		int mrc = mdb_get(txn, e->nodes, &k, &v);
		if (mrc == MDB_NOTFOUND)
			continue;
		if (mrc)
			rc = prolly__lmdb_fail(e, mrc, "reading a node");
		else
			rc = found(payload, i, v.mv_data, v.mv_size);
	}
	prolly__lmdb_txn_abort(e, txn);
	return rc;
}

static int lmdb_has_nodes(prolly_store *st, const prolly_id *ids, size_t n, unsigned char *out)
{
	env_entry *e = ((lmdb_store *)st)->e;
	MDB_txn *txn = NULL;
	int rc = 0;

	count_trip();
	if (!n)
		return 0;
	if (!ids || !out)
		return prolly_set_error(PROLLY_EINVAL, "lmdb: has_nodes without ids or out");
	if ((rc = prolly__lmdb_txn_begin(e, MDB_RDONLY, &txn, NULL)))
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		MDB_val k = {PROLLY_ID_SIZE, (void *)ids[i].bytes}, v;
		int mrc = mdb_get(txn, e->nodes, &k, &v);
		out[i] = mrc == 0;
		if (mrc && mrc != MDB_NOTFOUND)
			rc = prolly__lmdb_fail(e, mrc, "looking a node up");
	}
	prolly__lmdb_txn_abort(e, txn);
	return rc;
}

/* ---- get_ancestors (store interface version 4): history in one read transaction ------------- */

/* How the walk of ancestors.c reads an object: in one read transaction, begun at the first
 * read (so a call that fails its checks begins none). */
typedef struct anc_read {
	env_entry *e;
	MDB_txn *txn;
} anc_read;

static int anc_get(void *gp, const prolly_id *id, const unsigned char **data, size_t *size)
{
	anc_read *r = gp;
	MDB_val k = {PROLLY_ID_SIZE, (void *)id->bytes}, v;
	int rc, mrc;
	if (!r->txn && (rc = prolly__lmdb_txn_begin(r->e, MDB_RDONLY, &r->txn, NULL)))
		return rc;
	if ((mrc = mdb_get(r->txn, r->e->nodes, &k, &v)) == MDB_NOTFOUND)
		return PROLLY_ENOTFOUND;
	if (mrc)
		return prolly__lmdb_fail(r->e, mrc, "reading history");
	*data = v.mv_data;
	*size = v.mv_size;
	return 0;
}

/* Breadth first along the parents `commit` describes (store.h), in one read transaction (the
 * walk of ancestors.c). A history walk (log, merge base, the commits a push or fetch lacks)
 * then costs one call per batch of commits, not one per generation; what a call saves here is
 * a read transaction and the engine's walk step per commit, and, when the other side of a sync
 * is a server, the round trip its question about each generation would cost. */
static int lmdb_get_ancestors(prolly_store *st, const prolly_id *ids, size_t n, size_t limit,
                              const prolly_store_commit_layout *commit, prolly_store_obj_fn found,
                              void *payload)
{
	anc_read r = {((lmdb_store *)st)->e, NULL};
	int rc;
	count_trip();
	rc = prolly__store_ancestors("lmdb", ids, n, limit, commit, anc_get, &r, found, payload);
	if (r.txn)
		prolly__lmdb_txn_abort(r.e, r.txn);
	return rc;
}

/*
 * LMDB has no checksums, so a damaged refs page can make a ref look absent (a wrong key count or
 * node offset) rather than fail. The refs database's row count is kept apart from its pages (in
 * its record in the main database): a listing of every ref, and an absent ref, are checked
 * against it. (A damaged name, a row that reads as another valid name, still passes.)
 */
static int check_ref_count(env_entry *e, MDB_txn *txn, size_t seen)
{
	MDB_stat ms;
	int mrc = mdb_stat(txn, e->refs, &ms);
	if (mrc)
		return prolly__lmdb_fail(e, mrc, "counting refs");
	if (ms.ms_entries != seen)
		return prolly_set_error(PROLLY_ECORRUPT,
		                        "lmdb: %s: the refs database records %llu rows but %zu could be "
		                        "read: its pages are damaged",
		                        e->path, (unsigned long long)ms.ms_entries, seen);
	return 0;
}

/* Refs that a prefix listing or a missed get_ref walks to compare with the recorded row count.
 * The reflog adds a ref per branch move, so a long-lived store holds many: past this many rows
 * only a listing of every ref (gc, recover) pays for the walk, and a prefix listing or a miss
 * costs what it reads. */
#define REF_WALK_MAX 4096

/* Walks every refs row, checking its shape, then check_ref_count (skipped when the refs database
 * records more than REF_WALK_MAX rows). */
static int count_refs(env_entry *e, MDB_txn *txn)
{
	MDB_cursor *cur = NULL;
	MDB_stat ms;
	MDB_val k, v;
	size_t n = 0;
	int mrc = mdb_stat(txn, e->refs, &ms);
	if (mrc)
		return prolly__lmdb_fail(e, mrc, "counting refs");
	if (ms.ms_entries > REF_WALK_MAX)
		return 0;
	mrc = mdb_cursor_open(txn, e->refs, &cur);
	if (mrc)
		return prolly__lmdb_fail(e, mrc, "opening a cursor on refs");
	for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0;
	     mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), n++)
		if (k.mv_size == 0 || k.mv_size > PROLLY_MAX_REF_NAME || v.mv_size != PROLLY_ID_SIZE) {
			mdb_cursor_close(cur);
			return prolly_set_error(PROLLY_ECORRUPT,
			                        "lmdb: %s: a malformed ref row (name of %zu bytes, value "
			                        "of %zu bytes)",
			                        e->path, k.mv_size, v.mv_size);
		}
	mdb_cursor_close(cur);
	if (mrc != MDB_NOTFOUND)
		return prolly__lmdb_fail(e, mrc, "counting refs");
	return check_ref_count(e, txn, n);
}

/* One read transaction for all of them; the row count is checked once if any is absent. */
static int lmdb_get_refs(prolly_store *st, const char *const *names, size_t n, prolly_id *out,
                         unsigned char *found, uint64_t *epoch)
{
	env_entry *e = ((lmdb_store *)st)->e;
	MDB_txn *txn = NULL;
	uint64_t ep;
	int rc = 0, absent = 0;

	count_trip(); /* the names are valid (S3) */
	if ((rc = prolly__lmdb_txn_begin(e, MDB_RDONLY, &txn, NULL)))
		return rc;
	if ((rc = read_epoch(e, txn, &ep)))
		goto cleanup;
	for (size_t i = 0; i < n && !rc; i++) {
		int r = read_ref(e, txn, names[i], &out[i]);
		found[i] = r == 0;
		if (r == MDB_NOTFOUND)
			absent = 1;
		else if (r == -1)
			rc = prolly_set_error(PROLLY_ECORRUPT, "lmdb: %s: ref '%s' does not hold a 32-byte id",
			                      e->path, names[i]);
		else if (r)
			rc = prolly__lmdb_fail(e, r, "reading a ref");
	}
	if (!rc && absent)
		rc = count_refs(e, txn);
	if (!rc && epoch)
		*epoch = ep;

cleanup:
	prolly__lmdb_txn_abort(e, txn);
	return rc;
}

/* get_refs of one name; PROLLY_ENOTFOUND when it is absent. */
static int lmdb_get_ref(prolly_store *st, const char *name, prolly_id *out, uint64_t *epoch)
{
	unsigned char found = 0;
	prolly_id v;
	int rc;
	if ((rc = prolly_store_ref_name_check(name))) {
		count_trip();
		return rc;
	}
	if ((rc = lmdb_get_refs(st, &name, 1, &v, &found, epoch)))
		return rc;
	if (!found)
		return prolly_set_error(PROLLY_ENOTFOUND, "lmdb: %s: ref '%s' not found",
		                        ((lmdb_store *)st)->e->path, name);
	if (out)
		*out = v;
	return 0;
}

typedef struct ref_row {
	char name[PROLLY_MAX_REF_NAME + 1];
	prolly_id value;
} ref_row;

static int lmdb_list_refs(prolly_store *st, const char *prefix, prolly_store_ref_fn fn,
                          void *payload)
{
	env_entry *e = ((lmdb_store *)st)->e;
	MDB_txn *txn = NULL;
	MDB_cursor *cur = NULL;
	ref_row *rows = NULL;
	size_t n = 0, cap = 0, plen = prefix ? strlen(prefix) : 0;
	int rc, mrc;

	count_trip();
	if (!fn)
		return prolly_set_error(PROLLY_EINVAL, "lmdb: list_refs without a callback");
	if (plen > PROLLY_MAX_REF_NAME)
		return 0; /* no name is that long (and LMDB would refuse the key) */
	if ((rc = prolly__lmdb_txn_begin(e, MDB_RDONLY, &txn, NULL)))
		return rc;
	if ((mrc = mdb_cursor_open(txn, e->refs, &cur))) {
		rc = prolly__lmdb_fail(e, mrc, "opening a cursor on refs");
		goto cleanup;
	}
	/* Collect first, call fn after the transaction ends (fn may use the store freely). */
	if (!prefix)
		prefix = "";
	MDB_val k = {plen, (void *)prefix}, v;
	mrc = plen ? mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE)
	           : mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	for (; mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0)
			break;
		if (k.mv_size == 0 || k.mv_size > PROLLY_MAX_REF_NAME || v.mv_size != PROLLY_ID_SIZE) {
			rc = prolly_set_error(PROLLY_ECORRUPT,
			                      "lmdb: %s: a malformed ref row (name of %zu "
			                      "bytes, value of %zu bytes)",
			                      e->path, k.mv_size, v.mv_size);
			goto cleanup;
		}
		if (PROLLY__GROW(rows, cap, n + 1, 16)) {
			rc = prolly_set_error(PROLLY_ENOMEM, "lmdb: out of memory listing refs");
			goto cleanup;
		}
		memcpy(rows[n].name, k.mv_data, k.mv_size);
		rows[n].name[k.mv_size] = 0;
		memcpy(rows[n].value.bytes, v.mv_data, PROLLY_ID_SIZE);
		n++;
	}
	if (mrc != MDB_NOTFOUND && mrc != 0) {
		rc = prolly__lmdb_fail(e, mrc, "listing refs");
		goto cleanup;
	}
	if ((rc = plen ? count_refs(e, txn) : check_ref_count(e, txn, n)))
		goto cleanup;
	mdb_cursor_close(cur);
	cur = NULL;
	prolly__lmdb_txn_abort(e, txn);
	txn = NULL;
	for (size_t i = 0; i < n && !rc; i++)
		rc = fn(payload, rows[i].name, &rows[i].value);

cleanup:
	if (cur)
		mdb_cursor_close(cur);
	if (txn)
		prolly__lmdb_txn_abort(e, txn);
	free(rows);
	return rc;
}

static int lmdb_stat(prolly_store *st, uint64_t *nodes, uint64_t *bytes)
{
	env_entry *e = ((lmdb_store *)st)->e;
	MDB_txn *txn = NULL;
	MDB_cursor *cur = NULL;
	MDB_stat ms;
	uint64_t sum = 0;
	int rc, mrc;

	if ((rc = prolly__lmdb_txn_begin(e, MDB_RDONLY, &txn, NULL)))
		return rc;
	if ((mrc = mdb_stat(txn, e->nodes, &ms))) {
		rc = prolly__lmdb_fail(e, mrc, "counting nodes");
		goto cleanup;
	}
	if (bytes) {
		if ((mrc = mdb_cursor_open(txn, e->nodes, &cur))) {
			rc = prolly__lmdb_fail(e, mrc, "opening a cursor on nodes");
			goto cleanup;
		}
		MDB_val k, v;
		for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0;
		     mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
			sum += v.mv_size;
		if (mrc != MDB_NOTFOUND) {
			rc = prolly__lmdb_fail(e, mrc, "summing node sizes");
			goto cleanup;
		}
		*bytes = sum;
	}
	if (nodes)
		*nodes = ms.ms_entries;

cleanup:
	if (cur)
		mdb_cursor_close(cur);
	prolly__lmdb_txn_abort(e, txn);
	return rc;
}

/* ---- gc --------------------------------------------------------------------------------------- */

static int gc_once(env_entry *e, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep, void *payload,
                   prolly_gc_result *res, size_t *seen, int *mrc)
{
	MDB_txn *txn = NULL;
	MDB_cursor *cur = NULL;
	uint64_t epoch;
	int rc, r;

	*mrc = 0;
	memset(res, 0, sizeof(*res));
	if ((rc = prolly__lmdb_txn_begin(e, 0, &txn, seen)))
		return rc;
	/* Writers are excluded from here on: LMDB has one write transaction at a time. */
	if ((rc = read_epoch(e, txn, &epoch)))
		goto cleanup;
	if ((r = prolly__lmdb_put_epoch(txn, e, epoch + 1))) {
		*mrc = r;
		rc = prolly__lmdb_fail(e, r, "bumping the gc epoch");
		goto cleanup;
	}
	if (mark && (rc = mark(payload)))
		goto cleanup;
	if ((r = mdb_cursor_open(txn, e->nodes, &cur))) {
		rc = prolly__lmdb_fail(e, r, "opening a cursor on nodes");
		goto cleanup;
	}
	MDB_val k, v;
	for (r = mdb_cursor_get(cur, &k, &v, MDB_FIRST); r == 0;
	     r = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		prolly_id id;
		if (k.mv_size != PROLLY_ID_SIZE) {
			rc = prolly_set_error(PROLLY_ECORRUPT,
			                      "lmdb: %s: a node row has a key of %zu bytes, not 32", e->path,
			                      k.mv_size);
			goto cleanup;
		}
		memcpy(id.bytes, k.mv_data, PROLLY_ID_SIZE);
		if (keep(payload, &id)) {
			res->nodes_kept++;
			continue;
		}
		size_t size = v.mv_size;
		/* After a delete the cursor stands on the following row; MDB_NEXT then returns it. */
		if ((r = mdb_cursor_del(cur, 0))) {
			*mrc = r;
			rc = prolly__lmdb_fail(e, r, "deleting a node");
			goto cleanup;
		}
		res->nodes_removed++;
		res->bytes_removed += size;
	}
	if (r != MDB_NOTFOUND) {
		*mrc = r;
		rc = prolly__lmdb_fail(e, r, "walking the nodes");
		goto cleanup;
	}
	mdb_cursor_close(cur);
	cur = NULL;
	if ((r = prolly__lmdb_stamp(txn, e))) {
		*mrc = r;
		rc = prolly__lmdb_fail(e, r, "stamping the gc");
		goto cleanup;
	}
	r = prolly__lmdb_txn_commit(e, txn);
	txn = NULL;
	if (r) {
		*mrc = r;
		rc = prolly__lmdb_fail(e, r, "committing the gc");
		goto cleanup;
	}
	if ((r = mdb_env_sync(e->env, 1))) {
		rc = prolly_set_error(PROLLY_ESTORE,
		                      "lmdb: %s: the gc was committed but flushing it to disk failed: %s",
		                      e->path, mdb_strerror(r));
		goto cleanup;
	}

cleanup:
	if (cur)
		mdb_cursor_close(cur);
	if (txn)
		prolly__lmdb_txn_abort(e, txn);
	return rc;
}

/*
 * Grows the map before a gc so that its one write transaction will not run out of room: deleting
 * copies every touched page of the nodes database (pages freed by the transaction itself are not
 * reused by it), and the free list grows. Running out anyway only costs a retry (see lmdb_gc).
 */
static int gc_headroom(env_entry *e)
{
	MDB_txn *txn = NULL;
	MDB_stat ms;
	MDB_envinfo info;
	int rc, mrc;

	if (prolly__lmdb_in_txn())
		return 0;
	if ((rc = prolly__lmdb_txn_begin(e, MDB_RDONLY, &txn, NULL)))
		return rc;
	mrc = mdb_stat(txn, e->nodes, &ms);
	if (!mrc)
		mrc = mdb_env_info(e->env, &info);
	prolly__lmdb_txn_abort(e, txn);
	if (mrc)
		return prolly__lmdb_fail(e, mrc, "sizing the gc");
	uint64_t pages = (uint64_t)info.me_last_pgno + 1 +
	                 2 * ((uint64_t)ms.ms_branch_pages + ms.ms_leaf_pages) + 256;
	uint64_t need = pages * ms.ms_psize;
	for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
		size_t have = prolly__lmdb_map_size(e);
		if (need <= have)
			break;
		if ((rc = prolly__lmdb_resize(e, have, 0)))
			return rc;
	}
	return 0;
}

static int lmdb_gc(prolly_store *st, prolly_gc_mark_fn mark, prolly_gc_keep_fn keep, void *payload,
                   prolly_gc_result *out)
{
	env_entry *e = ((lmdb_store *)st)->e;
	prolly_gc_result res;
	int rc;

	if (!keep)
		return prolly_set_error(PROLLY_EINVAL, "lmdb: gc without a keep callback");
	if (((lmdb_store *)st)->readonly)
		return refuse_readonly(e, "gc is");
	if ((rc = gc_headroom(e)))
		return rc;
	/* Should the map fill up anyway, the whole gc is retried after growing it: the failed attempt
	 * deleted nothing and its epoch bump was rolled back, so writers that commit in between are
	 * safe, and the next attempt marks again from the refs as they are then. */
	for (int attempt = 0;; attempt++) {
		size_t seen = 0;
		int mrc;
		rc = gc_once(e, mark, keep, payload, &res, &seen, &mrc);
		if (mrc != MDB_MAP_FULL || attempt >= MAX_ATTEMPTS)
			break;
		if ((rc = prolly__lmdb_resize(e, seen, 0)))
			break;
	}
	if (!rc && out) { /* the counts only: out->version is the engine's */
		out->nodes_kept = res.nodes_kept;
		out->nodes_removed = res.nodes_removed;
		out->bytes_removed = res.bytes_removed;
	}
	return rc;
}

/* ---- find_ids (store interface version 3): a cursor range over the nodes database ---------- */

static int lmdb_find_ids(prolly_store *st, const prolly_id *lo, const prolly_id *hi, size_t limit,
                         prolly_store_obj_fn found, void *payload)
{
	env_entry *e = ((lmdb_store *)st)->e;
	MDB_txn *txn = NULL;
	MDB_cursor *cur = NULL;
	size_t n = 0;
	int rc, mrc;

	count_trip();
	if (!lo || !hi || !found)
		return prolly_set_error(PROLLY_EINVAL, "lmdb: find_ids without bounds or callback");
	if ((rc = prolly__lmdb_txn_begin(e, MDB_RDONLY, &txn, NULL)))
		return rc;
	if ((mrc = mdb_cursor_open(txn, e->nodes, &cur))) {
		rc = prolly__lmdb_fail(e, mrc, "opening a cursor on nodes");
		goto cleanup;
	}
	MDB_val k = {PROLLY_ID_SIZE, (void *)lo->bytes}, v;
	for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0 && n < limit && !rc;
	     mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), n++) {
		prolly_id id;
		if (k.mv_size != PROLLY_ID_SIZE) {
			rc = prolly_set_error(PROLLY_ECORRUPT, "lmdb: %s: a node key of %zu bytes", e->path,
			                      k.mv_size);
			goto cleanup;
		}
		if (memcmp(k.mv_data, hi->bytes, PROLLY_ID_SIZE) > 0)
			break;
		memcpy(id.bytes, k.mv_data, PROLLY_ID_SIZE);
		rc = found(payload, &id, v.mv_data, v.mv_size);
	}
	if (!rc && mrc != 0 && mrc != MDB_NOTFOUND)
		rc = prolly__lmdb_fail(e, mrc, "finding ids");
cleanup:
	if (cur)
		mdb_cursor_close(cur);
	prolly__lmdb_txn_abort(e, txn);
	return rc;
}

void prolly__lmdb_set_vtable(prolly_store *base)
{
	base->get_nodes = lmdb_get_nodes;
	base->write = lmdb_write;
	base->get_ref = lmdb_get_ref;
	base->get_refs = lmdb_get_refs;
	base->list_refs = lmdb_list_refs;
	base->gc = lmdb_gc;
	base->stat = lmdb_stat;
	base->find_ids = lmdb_find_ids;
	base->has_nodes = lmdb_has_nodes;
	base->get_ancestors = lmdb_get_ancestors;
}
