/*
 * backend.c - what a backend keeps between calls of the extension's functions: the prolly_db
 * handles, one per node size in use, and their cache size (prolly.cache_size), the tables of the
 * call in progress, the work memory of store calls, the gc epoch read by the schema check, the
 * statements planned once (pgx_kept_plan) and the trees of commits read before. store.c (the
 * reads, opening a call) and store_write.c (the writes) both build on it; it calls neither.
 */
#include "prolly_ext.h"

#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

static int cache_size_kb = 64 * 1024; /* prolly.cache_size */
static pgx_tables cur;                /* the tables of the call in progress */
static MemoryContext work_cxt;        /* reset by each store call */
static uint64_t epoch;                /* gc epoch read by the schema check */

/* The backend's handles, one per node size in use: the engine builds every tree of a handle with
 * the node size its store declared when the handle was made, and a store's trees must all be
 * built with the store's own size (else the same records would make another root than the C
 * client makes), so a backend reading stores of several sizes needs a handle for each. A
 * handle is shared by every store schema of its size, as one handle was by every schema before
 * (its store reads the tables of the call in progress). Slot i holds the handle of
 * PROLLY_NODE_SIZE_MIN << i bytes. */
#define N_HANDLES 4 /* 1, 2, 4 and 8 KiB */
StaticAssertDecl((PROLLY_NODE_SIZE_MIN << (N_HANDLES - 1)) == PROLLY_NODE_SIZE_MAX,
                 "one handle slot per node size");
static struct {
	prolly_db *db;
	int cache_kb; /* its cache size */
	int holds;    /* open cursors on db */
} handles[N_HANDLES];

void pgx_define_backend_settings(void)
{
	DefineCustomIntVariable(
	    "prolly.cache_size",
	    "Decoded-node cache of each of the backend's prolly handles (one per node size in use).",
	    "Nodes are immutable, so the cache lives across statements and transactions. 0 turns "
	    "it off. A change takes effect at the next call that holds no open scan.",
	    &cache_size_kb, 64 * 1024, 0, INT_MAX, PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
}

/* ---- the call in progress and the handles ---- */

/* Store calls may nest (an engine callback of list_refs may read nodes): only the outermost
 * call resets work_cxt, on the way in and on the way out. */
static int depth;

void pgx_call_begin(const pgx_tables *t)
{
	depth = 0;
	cur = *t;
}

const pgx_tables *pgx_call(void)
{
	return &cur;
}

/* The slot of node_size: log2(node_size / PROLLY_NODE_SIZE_MIN). The caller checked the size
 * (store.c, the schema check); anything else is a bug. */
static int handle_slot(unsigned node_size)
{
	for (int i = 0; i < N_HANDLES; i++)
		if (node_size == PROLLY_NODE_SIZE_MIN << i)
			return i;
	elog(ERROR, "prolly: no handle for a node size of %u bytes", node_size);
	return -1; /* not reached */
}

prolly_db *pgx_handle(prolly_store *(*make)(void), unsigned node_size)
{
	int i = handle_slot(node_size);
	if (handles[i].db && handles[i].cache_kb != cache_size_kb && handles[i].holds == 0) {
		prolly_close(handles[i].db);
		handles[i].db = NULL;
	}
	if (!handles[i].db) {
		prolly_options o = PROLLY_OPTIONS_INIT;
		prolly_store *st = make();
		prolly_db *db = NULL;
		int rc;
		/* the store's member: 0 for the default size, as a store of an older interface says */
		st->node_size = node_size == PROLLY_NODE_SIZE_DEFAULT ? 0 : node_size;
		o.cache_bytes = (size_t)cache_size_kb * 1024;
		o.flags = PROLLY_DB_NO_THREADS;
		o.interrupt = pgx_interrupt;
		rc = prolly_db_new(&db, st, &o);
		pgx_check(rc, "opening the store");
		handles[i].db = db;
		handles[i].cache_kb = cache_size_kb;
	}
	return handles[i].db;
}

void pgx_hold(prolly_db *db)
{
	for (int i = 0; i < N_HANDLES; i++)
		if (handles[i].db == db)
			handles[i].holds++;
}

void pgx_release(prolly_db *db)
{
	for (int i = 0; i < N_HANDLES; i++)
		if (handles[i].db == db && handles[i].holds > 0)
			handles[i].holds--;
}

MemoryContext pgx_work_cxt(void)
{
	return work_cxt;
}

const char *pgx_schema_quoted(void)
{
	return quote_identifier(get_namespace_name(cur.nsp));
}

const char *pgx_schema_name(void)
{
	return get_namespace_name(cur.nsp);
}

int pgx_spi_connect(void)
{
	int level;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "prolly: SPI_connect failed");
	level = NewGUCNestLevel();
	(void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
	                        GUC_ACTION_SAVE, true, 0, false);
	return level;
}

void pgx_spi_finish(int level)
{
	AtEOXact_GUC(true, level);
	SPI_finish();
}

SPIPlanPtr pgx_kept_plan(pgx_kept *k, const char *fmt, int nargs, Oid *types)
{
	if (!k->plan || k->rel != cur.nodes) {
		char *q = psprintf(fmt, pgx_schema_quoted());
		SPIPlanPtr p = SPI_prepare_cursor(q, nargs, types, CURSOR_OPT_GENERIC_PLAN);
		if (!p)
			elog(ERROR, "prolly: SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		if (k->plan)
			SPI_freeplan(k->plan);
		k->plan = NULL;
		if (SPI_keepplan(p))
			elog(ERROR, "prolly: SPI_keepplan failed");
		k->plan = p;
		k->rel = cur.nodes;
		pfree(q);
	}
	return k->plan;
}

uint64_t pgx_epoch(void)
{
	return epoch;
}

void pgx_set_epoch(uint64_t e)
{
	epoch = e;
}

static void commits_clear(void);
static uint64_t commits_epoch; /* the gc epoch the commits' trees were kept under */

void pgx_epoch_read(uint64_t e)
{
	epoch = e;
	if (epoch != commits_epoch) {
		commits_clear(); /* a gc may have removed a commit kept */
		commits_epoch = epoch;
	}
}

/* ---- the commits' trees (prolly_ext.h) ---- */

typedef struct commit_slot {
	Oid nsp; /* the store's schema (InvalidOid: an empty slot) */
	prolly_id commit, tree;
} commit_slot;

static commit_slot commits[PGX_COMMIT_SLOTS];

static void commits_clear(void)
{
	memset(commits, 0, sizeof(commits));
}

static commit_slot *commit_slot_of(const prolly_id *commit)
{
	/* ids are hashes: any two bytes spread evenly */
	return &commits[(commit->bytes[0] | commit->bytes[1] << 8) % PGX_COMMIT_SLOTS];
}

bool pgx_commit_tree(const prolly_id *commit, prolly_id *tree)
{
	commit_slot *s = commit_slot_of(commit);
	if (cache_size_kb == 0 || s->nsp != cur.nsp || !OidIsValid(s->nsp) ||
	    !prolly_id_equal(&s->commit, commit))
		return false;
	*tree = s->tree;
	return true;
}

void pgx_commit_tree_keep(const prolly_id *commit, const prolly_id *tree)
{
	commit_slot *s = commit_slot_of(commit);
	if (cache_size_kb == 0)
		return;
	s->nsp = cur.nsp;
	s->commit = *commit;
	s->tree = *tree;
}

void pgx_cache_clear(void)
{
	commits_clear();
	/* every handle's: the callers (a transaction that wrote rolled back, a gc epoch moved) do
	 * not say which store's nodes they mean, hence through which handle they were read */
	for (int i = 0; i < N_HANDLES; i++)
		if (handles[i].db)
			prolly_db_cache_clear(handles[i].db);
}

void pgx_work_begin(void)
{
	if (!work_cxt)
		work_cxt = AllocSetContextCreate(TopMemoryContext, "prolly store calls",
		                                 ALLOCSET_DEFAULT_SIZES);
	if (depth++ == 0)
		MemoryContextReset(work_cxt);
}

void pgx_work_end(void)
{
	if (--depth == 0)
		MemoryContextReset(work_cxt);
}

bytea *pgx_bytea(const void *p, size_t n)
{
	bytea *b = palloc(VARHDRSZ + n);
	SET_VARSIZE(b, VARHDRSZ + n);
	if (n)
		memcpy(VARDATA(b), p, n);
	return b;
}
