/*
 * lmdb_int.h - what the LMDB store's files share (lmdb.c: the store; lmdb_meta.c: reading,
 * checking and restoring LMDB's two meta pages, which liblmdb gives no access to).
 */
#ifndef PROLLY_STORE_LMDB_INT_H
#define PROLLY_STORE_LMDB_INT_H

#include "internal.h"

#include <stdint.h>

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
} prolly__lmdb_meta;

/*
 * Reads and checks both meta pages of the environment in dir (data.mdb). Returns 0 with
 * m[0], m[1] filled (for slots 0 and 1) and *current set to the slot liblmdb would open (the
 * larger transaction id among pages whose header liblmdb accepts; -1 if neither); PROLLY_ENOTFOUND
 * if there is no data.mdb or it is empty; PROLLY_ESTORE if it cannot be read. Never writes.
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
