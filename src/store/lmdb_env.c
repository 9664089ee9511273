/*
 * lmdb_env.c - the LMDB store's environments, apart from the operations (lmdb.c) and opening
 * (lmdb_open.c): the process-wide registry that shares one environment between every handle on
 * a directory, and the transaction gate that lets a thread change the map size (why both exist:
 * "Environments" and "Map size" at the top of lmdb.c).
 */
#include "lmdb_int.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#if SIZE_MAX > 0xffffffffu
#define MAX_MAP ((size_t)1 << 44) /* 16 TiB */
#else
#define MAX_MAP ((size_t)2 << 30)
#endif
#define RESIZE_WAIT_SECONDS 30

/* ---- the registry ---------------------------------------------------------------------------- */

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static env_entry *registry;

void prolly__lmdb_registry_lock(void)
{
	pthread_mutex_lock(&registry_mu);
}

void prolly__lmdb_registry_unlock(void)
{
	pthread_mutex_unlock(&registry_mu);
}

env_entry *prolly__lmdb_registry_find(const struct stat *sb)
{
	pid_t me = getpid();
	for (env_entry *e = registry; e; e = e->next)
		if (e->pid == me && !e->unlisted && e->dev == sb->st_dev && e->ino == sb->st_ino)
			return e;
	return NULL;
}

void prolly__lmdb_registry_add(env_entry *e)
{
	e->next = registry;
	registry = e;
}

void prolly__lmdb_registry_unlist(env_entry *e)
{
	pthread_mutex_lock(&registry_mu);
	e->unlisted = 1;
	pthread_mutex_unlock(&registry_mu);
}

env_entry *prolly__lmdb_registry_release(env_entry *e)
{
	pthread_mutex_lock(&registry_mu);
	if (--e->handles == 0) {
		for (env_entry **pp = &registry; *pp; pp = &(*pp)->next)
			if (*pp == e) {
				*pp = e->next;
				break;
			}
	} else {
		e = NULL;
	}
	pthread_mutex_unlock(&registry_mu);
	return e;
}

/* ---- the transaction gate and map resizing ---------------------------------------------------- */

/* Transactions (of any LMDB store) the calling thread holds. */
static _Thread_local int txn_depth;

int prolly__lmdb_in_txn(void)
{
	return txn_depth != 0;
}

/* Returns the environment's broken flag (the caller then leaves at once). */
static int gate_enter(env_entry *e, size_t *map_size)
{
	pthread_mutex_lock(&e->gate_mu);
	if (txn_depth == 0)
		while (e->resizing)
			pthread_cond_wait(&e->gate_cv, &e->gate_mu);
	e->active++;
	if (map_size)
		*map_size = e->map_size;
	int broken = e->broken;
	pthread_mutex_unlock(&e->gate_mu);
	txn_depth++;
	return broken;
}

static void gate_leave(env_entry *e)
{
	txn_depth--;
	pthread_mutex_lock(&e->gate_mu);
	e->active--;
	if (e->active == 0 && e->resizing)
		pthread_cond_broadcast(&e->gate_cv);
	pthread_mutex_unlock(&e->gate_mu);
}

static size_t next_map_size(size_t cur)
{
	if (cur >= MAX_MAP)
		return 0;
	if (cur > MAX_MAP / 2)
		return MAX_MAP;
	return cur * 2;
}

/* 0 when `extra` more bytes of address space can be mapped now, else the errno. A map that
 * cannot grow must be found out before mdb_env_set_mapsize is asked: it unmaps the old map
 * before it maps the new one, and when that fails liblmdb 0.9 leaves the environment with no map
 * at all, which no later mdb_env_set_mapsize maps again (it maps only over an existing map) and
 * on which even mdb_env_info reads through a NULL pointer. */
static int room_for(size_t extra)
{
	void *p = mmap(NULL, extra, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return errno;
	munmap(p, extra);
	return 0;
}

/*
 * Changes the map size: grows it (adopt 0) from `seen`, the size in effect when the caller's
 * transaction began, or adopts the size another process set (adopt 1). The calling thread must
 * hold no transaction. Returns 0 when the caller should retry (also when another thread changed
 * the size meanwhile).
 */
int prolly__lmdb_resize(env_entry *e, size_t seen, int adopt)
{
	struct timespec deadline;
	int rc = 0;

	if (txn_depth != 0) {
		if (adopt)
			return prolly_set_error(
			    PROLLY_ESTORE,
			    "lmdb: %s: another process grew the map, and this thread holds a "
			    "transaction so it cannot adopt the new size; retry",
			    e->path);
		return prolly_set_error(PROLLY_EFULL,
		                        "lmdb: %s: the store is full (map size %zu bytes) and cannot grow "
		                        "while this thread holds another transaction; reopen it with a "
		                        "larger map_size",
		                        e->path, seen);
	}
	prolly__deadline(&deadline, CLOCK_REALTIME, RESIZE_WAIT_SECONDS * 1000);
	pthread_mutex_lock(&e->gate_mu);
	while (e->resizing)
		pthread_cond_wait(&e->gate_cv, &e->gate_mu);
	if (!adopt && e->map_size != seen)
		goto cleanup; /* someone grew it meanwhile */
	e->resizing = 1;
	while (e->active > 0)
		if (pthread_cond_timedwait(&e->gate_cv, &e->gate_mu, &deadline) == ETIMEDOUT &&
		    e->active > 0) {
			if (adopt)
				rc = prolly_set_error(PROLLY_ETIMEOUT,
				                      "lmdb: %s: another process grew the map and this process "
				                      "could not adopt it: transactions stayed open for %d s",
				                      e->path, RESIZE_WAIT_SECONDS);
			else
				rc = prolly_set_error(PROLLY_EFULL,
				                      "lmdb: %s: the store is full (map size %zu bytes) and could "
				                      "not grow: other transactions stayed open for %d s; retry",
				                      e->path, seen, RESIZE_WAIT_SECONDS);
			break;
		}
	if (!rc) {
		size_t want = adopt ? 0 : next_map_size(seen);
		int mrc, err;
		if (!adopt && want == 0) {
			rc = prolly_set_error(PROLLY_EFULL,
			                      "lmdb: %s: the store is full: the map has reached its limit of "
			                      "%zu bytes",
			                      e->path, seen);
		} else if (!adopt && (err = room_for(want - seen))) {
			rc = prolly_set_error(PROLLY_EFULL,
			                      "lmdb: %s: the store is full (map size %zu bytes) and the map "
			                      "cannot grow to %zu bytes: %s (the process's address space "
			                      "limit, ulimit -v?); nothing was written: raise the limit, or "
			                      "free room in the map (delete branches, then gc)",
			                      e->path, seen, want, strerror(err));
		} else if ((mrc = mdb_env_set_mapsize(e->env, want))) {
			/* The address space went to someone else since room_for. LMDB unmapped the old
			 * map before failing to map the new one, and nothing maps it again (room_for): the
			 * environment has no map, so every call fails until the store is reopened. */
			e->broken = 1;
			rc = prolly__lmdb_fail(e, mrc,
			                       adopt ? "mapping the map another process grew (the process's "
			                               "address space limit, ulimit -v?; the handle is now "
			                               "unusable: close and reopen the store)"
			                             : "resizing the map (the handle is now unusable: close "
			                               "and reopen the store)");
		} else {
			MDB_envinfo info;
			if (mdb_env_info(e->env, &info) == 0)
				e->map_size = info.me_mapsize;
			else
				e->map_size = want;
		}
	}
	e->resizing = 0;
	pthread_cond_broadcast(&e->gate_cv);
cleanup:
	pthread_mutex_unlock(&e->gate_mu);
	return rc;
}

/* Begins a transaction through the gate (adopting a map grown by another process). On success
 * the caller must end it with txn_end(). *seen receives the map size in effect. A write first
 * clears the reader slots of dead processes (a reader killed inside a read transaction): each
 * pins the snapshot it read, so that no page freed since is reused and data.mdb grows with
 * every write until the next open clears them. It costs a scan of the reader table and a lock
 * probe per other process, next to the flush every commit makes. */
int prolly__lmdb_txn_begin(env_entry *e, unsigned flags, MDB_txn **out, size_t *seen)
{
	for (int attempt = 0;; attempt++) {
		size_t size;
		if (gate_enter(e, &size)) {
			gate_leave(e);
			return prolly_set_error(PROLLY_ESTORE,
			                        "lmdb: %s: an earlier failure to resize the map left this "
			                        "handle unusable; close and reopen the store",
			                        e->path);
		}
		if (!(flags & MDB_RDONLY)) {
			int dead = 0;
			(void)mdb_reader_check(e->env, &dead);
		}
		int mrc = mdb_txn_begin(e->env, NULL, flags, out);
		if (mrc == 0) {
			if (seen)
				*seen = size;
			return 0;
		}
		gate_leave(e);
		if (mrc != MDB_MAP_RESIZED || attempt >= MAX_ATTEMPTS)
			return prolly__lmdb_fail(e, mrc,
			                         flags & MDB_RDONLY ? "beginning a read transaction"
			                                            : "beginning a write transaction");
		int rc = prolly__lmdb_resize(e, size, 1);
		if (rc)
			return rc;
	}
}

void prolly__lmdb_txn_abort(env_entry *e, MDB_txn *txn)
{
	mdb_txn_abort(txn);
	gate_leave(e);
}

int prolly__lmdb_txn_commit(env_entry *e, MDB_txn *txn)
{
	int mrc = mdb_txn_commit(txn);
	gate_leave(e);
	return mrc;
}

size_t prolly__lmdb_map_size(env_entry *e)
{
	pthread_mutex_lock(&e->gate_mu);
	size_t size = e->map_size;
	pthread_mutex_unlock(&e->gate_mu);
	return size;
}
