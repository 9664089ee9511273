/*
 * lmdb_int.h - what the LMDB store's files share (lmdb.c: the store's operations; lmdb_env.c:
 * the registry of environments and the transaction gate; lmdb_open.c: opening and closing;
 * lmdb_meta.c: reading, checking and restoring LMDB's two meta pages, which liblmdb
 * gives no access to).
 */
#ifndef PROLLY_STORE_LMDB_INT_H
#define PROLLY_STORE_LMDB_INT_H

#include "store_int.h"

#include <lmdb.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define SCHEMA_VERSION 2u   /* a store of 4 KiB nodes (lmdb.c) */
#define SCHEMA_NODE_SIZE 3u /* a store of another node size: it has the node_size row */
#define META_TXN "txn"
#define META_SCHEMA "schema_version"
#define META_EPOCH "gc_epoch"
#define META_NODE_SIZE "node_size"
#define MAX_READERS 1024
#define MAX_ATTEMPTS 64 /* retries of a transaction after a map resize */
#define MIN_DEFAULT_MAP ((size_t)64 << 20)

#if SIZE_MAX > 0xffffffffu
#define DEFAULT_MAP ((size_t)16 << 30) /* 16 GiB of address space */
#else
#define DEFAULT_MAP ((size_t)512 << 20)
#endif

typedef struct env_entry {
	struct env_entry *next;
	pid_t pid;
	dev_t dev;
	ino_t ino;
	char *path;
	int handles;
	MDB_env *env;
	MDB_dbi nodes, refs, meta;
	pthread_mutex_t gate_mu;
	pthread_cond_t gate_cv;
	int active;         /* transactions open in this process */
	int resizing;       /* the gate is closed */
	size_t map_size;    /* the map size in effect */
	int broken;         /* a failed resize left no map: every call fails until reopened */
	int rdonly;         /* opened with MDB_RDONLY */
	int unlisted;       /* a PROLLY_OPEN_PREVIOUS copy, whose directory is gone: never shared */
	uint32_t schema;    /* the store's schema version (2 or SCHEMA_NODE_SIZE), stamped (LT1) */
	unsigned node_size; /* prolly_store.node_size: 0, or the node_size row of version 3 */
	pthread_mutex_t join_mu; /* node-only writes joining the one in progress (lmdb.c, LT5) */
	pthread_cond_t join_cv;
	struct join_req *joining; /* waiting to be taken by the writing thread */
	int join_busy;            /* a node-only write is in progress */
} env_entry;

typedef struct lmdb_store {
	prolly_store base;
	env_entry *e;
	int readonly; /* PROLLY_OPEN_READONLY: writes and gc are refused */
} lmdb_store;

/* lmdb.c: errors (the message names the path and what was being done; returns the PROLLY_E
 * code), the rows every write puts, and the store's functions. */
int prolly__lmdb_translate(int mrc);
int prolly__lmdb_fail(const env_entry *e, int mrc, const char *what);
int prolly__lmdb_put_epoch(MDB_txn *txn, env_entry *e, uint64_t epoch);
int prolly__lmdb_stamp(MDB_txn *txn, env_entry *e); /* invariant LT1 (lmdb.c) */
void prolly__lmdb_set_vtable(prolly_store *base);

/* lmdb_env.c: the registry of environments (find and add with the lock held; release takes it
 * and returns e when that was its last handle, now out of the registry, else NULL). */
void prolly__lmdb_registry_lock(void);
void prolly__lmdb_registry_unlock(void);
env_entry *prolly__lmdb_registry_find(const struct stat *sb);
void prolly__lmdb_registry_add(env_entry *e);
void prolly__lmdb_registry_unlist(env_entry *e); /* a copy whose directory is gone */
env_entry *prolly__lmdb_registry_release(env_entry *e);

/* lmdb_env.c: the transaction gate. Every transaction begins and ends through it; resize grows
 * the map (adopt 0) from `seen`, the size in effect when the caller's transaction began, or
 * adopts the size another process set (adopt 1), with no transaction of the calling thread open
 * (0 means: retry). in_txn says whether the calling thread holds a transaction; map_size is the
 * size in effect. */
int prolly__lmdb_txn_begin(env_entry *e, unsigned flags, MDB_txn **out, size_t *seen);
void prolly__lmdb_txn_abort(env_entry *e, MDB_txn *txn);
int prolly__lmdb_txn_commit(env_entry *e, MDB_txn *txn);
int prolly__lmdb_resize(env_entry *e, size_t seen, int adopt);
int prolly__lmdb_in_txn(void);
size_t prolly__lmdb_map_size(env_entry *e);

/* One meta page as read from data.mdb (see the offset table in lmdb_meta.c). */
typedef struct prolly__lmdb_meta {
	int readable;       /* the page was read whole */
	int header_ok;      /* page flags, page number, magic and version are LMDB's: liblmdb opens */
	int intact;         /* header_ok, and its roots point to tree pages that say so */
	char problem[160];  /* why not intact (empty when intact) */
	uint64_t txnid;     /* the transaction that wrote it */
	uint64_t last_pg;   /* last page in use */
	uint64_t main_root; /* root page of the main database (holds the named databases) */
	uint64_t main_entries;
	unsigned psize;
	unsigned version; /* the data format version when the magic is LMDB's, else 0 */
} prolly__lmdb_meta;

/*
 * Reads and checks both meta pages of the environment in dir (data.mdb). Returns 0 with
 * m[0], m[1] filled (for slots 0 and 1) and *current set to the slot liblmdb would open (the
 * larger transaction id among pages whose header liblmdb accepts; -1 if neither); PROLLY_ENOTFOUND
 * if there is no data.mdb or it is empty; PROLLY_EVERSION if it is in another LMDB data format
 * (LM7); PROLLY_ESTORE if it cannot be read. Never writes.
 */
int prolly__lmdb_meta_read(const char *dir, prolly__lmdb_meta m[2], int *current);

/*
 * Copies data.mdb of dir into tmpdir (an existing empty directory), with the meta page of slot
 * `bad` replaced by the one of the other slot, so that liblmdb opening the copy sees the other
 * slot's snapshot. Returns 0 or a PROLLY_E* code (PROLLY_EFULL when the copy does not fit).
 */
int prolly__lmdb_meta_copy_previous(const char *dir, const char *tmpdir, int bad);

/*
 * In place: writes the meta page of the other slot over slot `bad` of dir's data.mdb and flushes
 * it, while holding LMDB's exclusive lock on lock.mdb (which proves that no process has the
 * environment open; PROLLY_ECONFLICT if one has). The calling process must not have it open.
 */
int prolly__lmdb_meta_restore(const char *dir, int bad);

#endif /* PROLLY_STORE_LMDB_INT_H */
