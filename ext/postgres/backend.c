/*
 * backend.c - what a backend keeps between calls of the extension's functions: the prolly_db
 * handle and its cache size (prolly.cache_size), the tables of the call in progress, the work
 * memory of store calls, the gc epoch read by the schema check, the statements planned once
 * (pgx_kept_plan) and the trees of commits read before. store.c (the reads, opening a call) and
 * store_write.c (the writes) both build on it; it calls neither.
 */
#include "prolly_ext.h"

#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

static int cache_size_kb = 64 * 1024; /* prolly.cache_size */
static pgx_tables cur;                /* the tables of the call in progress */
static MemoryContext work_cxt;        /* reset by each store call */
static prolly_db *db;                 /* the backend's handle */
static int db_cache_kb = -1;          /* its cache size */
static int holds;                     /* open cursors on db */
static uint64_t epoch;                /* gc epoch read by the schema check */

void pgx_define_backend_settings(void)
{
	DefineCustomIntVariable(
	    "prolly.cache_size", "Decoded-node cache of the backend's prolly handle.",
	    "Nodes are immutable, so the cache lives across statements and transactions. 0 turns "
	    "it off. A change takes effect at the next call that holds no open scan.",
	    &cache_size_kb, 64 * 1024, 0, INT_MAX, PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
}

/* ---- the call in progress and the handle ---- */

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

prolly_db *pgx_handle(prolly_store *(*make)(void))
{
	if (db && db_cache_kb != cache_size_kb && holds == 0) {
		prolly_close(db);
		db = NULL;
	}
	if (!db) {
		prolly_options o = PROLLY_OPTIONS_INIT;
		int rc;
		o.cache_bytes = (size_t)cache_size_kb * 1024;
		o.flags = PROLLY_DB_NO_THREADS;
		rc = prolly_db_new(&db, make(), &o);
		pgx_check(rc, "opening the store");
		db_cache_kb = cache_size_kb;
	}
	return db;
}

void pgx_hold(void)
{
	holds++;
}

void pgx_release(void)
{
	if (holds > 0)
		holds--;
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
	if (db)
		prolly_db_cache_clear(db);
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
	memcpy(VARDATA(b), p, n);
	return b;
}
