/*
 * store.c - the engine's store inside a backend: the tables of the extension's schema.
 *
 * The tables are those `prolly init` makes (docs/postgres.md, "Schema"): nodes (id bytea primary
 * key, node bytea), refs (name bytea primary key, value bytea), meta (key text primary key,
 * value bigint). The functions use the tables of the schema they live in (CREATE EXTENSION
 * prolly SCHEMA s, where s holds the store).
 *
 * Reads, all in the calling statement's snapshot:
 *   get_nodes  prolly.node_reader = index (default): one scan of the primary-key index of nodes,
 *              rescanned per id (no parser, planner or executor; detoasting as needed);
 *              = spi: one prepared statement per call joining unnest($1::bytea[]) with nodes,
 *              as the client store does. docs/sql.md, "Reading nodes", has the measurement
 *              that chose the default.
 *   get_ref    the primary-key index of refs.
 *   list_refs  SPI, an index range [prefix, successor(prefix)) in name (byte) order.
 * The schema version and the gc epoch are read once per transaction (pgx_open). write() answers
 * only the empty write the engine sends to learn the epoch; writes through SQL are not yet
 * implemented (PROLLY_EUNSUPPORTED). Optional store functions are absent: the engine then reads
 * a branch head in three lookups, walks history one generation per call and finds short commit
 * ids by walking history.
 *
 * Every function here that runs PostgreSQL code does it inside PG_TRY and keeps a caught error
 * with pgx_keep_error (guard.c); work memory lives in work_cxt, reset by every outermost call.
 */
#include "prolly_ext.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include <stdlib.h>

/* ---- settings ---- */

enum { READER_INDEX = 0, READER_SPI = 1 };

static const struct config_enum_entry reader_options[] = {
    {"index", READER_INDEX, false}, {"spi", READER_SPI, false}, {NULL, 0, false}};

static int cache_size_kb = 64 * 1024;  /* prolly.cache_size */
static int node_reader = READER_INDEX; /* prolly.node_reader */

void pgx_define_settings(void)
{
	DefineCustomIntVariable(
	    "prolly.cache_size", "Decoded-node cache of the backend's prolly handle.",
	    "Nodes are immutable, so the cache lives across statements and transactions. 0 turns "
	    "it off. A change takes effect at the next call that holds no open scan.",
	    &cache_size_kb, 64 * 1024, 0, INT_MAX, PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomEnumVariable("prolly.node_reader", "How nodes are read: index or spi.",
	                         "index scans the primary-key index of nodes directly; spi runs a "
	                         "prepared statement. Both give the same results.",
	                         &node_reader, READER_INDEX, reader_options, PGC_USERSET, 0, NULL, NULL,
	                         NULL);
	MarkGUCPrefixReserved("prolly");
}

/* ---- per-backend state ---- */

static pgx_tables cur;                  /* the tables of the call in progress */
static MemoryContext work_cxt;          /* reset by each store call */
static prolly_db *db;                   /* the backend's handle */
static int db_cache_kb = -1;            /* its cache size */
static int holds;                       /* open cursors on db */
static Oid checked_nsp;                 /* schema version checked for this schema ... */
static LocalTransactionId checked_lxid; /* ... in this transaction */
static uint64_t epoch;                  /* gc epoch read with it */
static SPIPlanPtr nodes_plan;           /* prolly.node_reader = spi */
static Oid nodes_plan_rel;

void pgx_hold(void)
{
	holds++;
}

void pgx_release(void)
{
	if (holds > 0)
		holds--;
}

/* Store calls may nest (an engine callback of list_refs may read nodes): only the outermost
 * call resets work_cxt, on the way in and on the way out. */
static int depth;

static void work_begin(void)
{
	if (!work_cxt)
		work_cxt = AllocSetContextCreate(TopMemoryContext, "prolly store calls",
		                                 ALLOCSET_DEFAULT_SIZES);
	if (depth++ == 0)
		MemoryContextReset(work_cxt);
}

static void work_end(void)
{
	if (--depth == 0)
		MemoryContextReset(work_cxt);
}

static Snapshot read_snapshot(void)
{
	return ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot();
}

/* ---- one-key lookups through a primary-key index ---- */

typedef struct keyscan {
	Relation heap, index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	bytea *key;
	size_t key_cap;
} keyscan;

static void keyscan_open(keyscan *ks, Oid relid)
{
	Oid pk;
	memset(ks, 0, sizeof(*ks));
	ks->heap = table_open(relid, AccessShareLock);
	pk = RelationGetPrimaryKeyIndex(ks->heap);
	if (!OidIsValid(pk))
		ereport(ERROR,
		        (errcode(ERRCODE_UNDEFINED_OBJECT),
		         errmsg("prolly: table %s has no primary key", RelationGetRelationName(ks->heap)),
		         errhint("The tables must be those made by prolly init.")));
	ks->index = index_open(pk, AccessShareLock);
	ks->slot = table_slot_create(ks->heap, NULL);
	ks->scan = index_beginscan(ks->heap, ks->index, read_snapshot(), 1, 0);
}

/* Positions on the row whose key (a bytea) is key[0..len); false when there is none. */
static bool keyscan_find(keyscan *ks, const void *key, size_t len)
{
	ScanKeyData sk;
	if (!ks->key || ks->key_cap < len) {
		ks->key = palloc(VARHDRSZ + len);
		ks->key_cap = len;
	}
	SET_VARSIZE(ks->key, VARHDRSZ + len);
	memcpy(VARDATA(ks->key), key, len);
	ScanKeyInit(&sk, 1, BTEqualStrategyNumber, F_BYTEAEQ, PointerGetDatum(ks->key));
	index_rescan(ks->scan, &sk, 1, NULL, 0);
	return index_getnext_slot(ks->scan, ForwardScanDirection, ks->slot);
}

/* Column attno of the current row as a detoasted bytea (NULL for SQL NULL). */
static bytea *keyscan_bytea(keyscan *ks, AttrNumber attno)
{
	bool isnull;
	Datum d = slot_getattr(ks->slot, attno, &isnull);
	return isnull ? NULL : DatumGetByteaPP(d);
}

/* Frees v if detoasting made a copy (a compressed node), so a long batch stays small. */
static void keyscan_free(keyscan *ks, AttrNumber attno, bytea *v)
{
	bool isnull;
	if ((Pointer)v != DatumGetPointer(slot_getattr(ks->slot, attno, &isnull)))
		pfree(v);
}

static void keyscan_close(keyscan *ks)
{
	index_endscan(ks->scan);
	ExecDropSingleTupleTableSlot(ks->slot);
	index_close(ks->index, AccessShareLock);
	table_close(ks->heap, AccessShareLock);
}

static AttrNumber column(Oid relid, const char *name)
{
	AttrNumber a = get_attnum(relid, name);
	if (a == InvalidAttrNumber)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
		                errmsg("prolly: table %s has no column %s", get_rel_name(relid), name)));
	return a;
}

/* ---- get_nodes ---- */

static int nodes_by_index(const prolly_id *ids, size_t n, prolly_store_found_fn found,
                          void *payload)
{
	keyscan ks;
	AttrNumber attno = column(cur.nodes, "node");
	int rc = 0;
	keyscan_open(&ks, cur.nodes);
	for (size_t i = 0; i < n && rc == 0; i++) {
		bytea *v;
		CHECK_FOR_INTERRUPTS();
		if (!keyscan_find(&ks, ids[i].bytes, PROLLY_ID_SIZE))
			continue;
		if ((v = keyscan_bytea(&ks, attno))) {
			rc = found(payload, i, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
			keyscan_free(&ks, attno, v);
		}
		ExecClearTuple(ks.slot);
	}
	keyscan_close(&ks);
	return rc;
}

static int nodes_by_spi(const prolly_id *ids, size_t n, prolly_store_found_fn found, void *payload)
{
	Datum *elems = palloc(n * sizeof(Datum));
	Datum arg;
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		bytea *b = palloc(VARHDRSZ + PROLLY_ID_SIZE);
		SET_VARSIZE(b, VARHDRSZ + PROLLY_ID_SIZE);
		memcpy(VARDATA(b), ids[i].bytes, PROLLY_ID_SIZE);
		elems[i] = PointerGetDatum(b);
	}
	arg = PointerGetDatum(construct_array(elems, (int)n, BYTEAOID, -1, false, TYPALIGN_INT));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "prolly: SPI_connect failed");
	if (!nodes_plan || nodes_plan_rel != cur.nodes) {
		char *q = psprintf("SELECT r.i, n.node FROM unnest($1::bytea[]) WITH ORDINALITY AS r(id, "
		                   "i) JOIN %s.nodes n ON n.id = r.id",
		                   quote_identifier(get_namespace_name(cur.nsp)));
		Oid types[1] = {BYTEAARRAYOID};
		/* A generic plan: left to choose, the plan cache plans the array statement again at
		 * every execution (docs/postgres.md, "Statements and round trips"). */
		SPIPlanPtr p = SPI_prepare_cursor(q, 1, types, CURSOR_OPT_GENERIC_PLAN);
		if (!p)
			elog(ERROR, "prolly: SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		if (nodes_plan)
			SPI_freeplan(nodes_plan);
		nodes_plan = NULL;
		if (SPI_keepplan(p))
			elog(ERROR, "prolly: SPI_keepplan failed");
		nodes_plan = p;
		nodes_plan_rel = cur.nodes;
	}
	if (SPI_execute_plan(nodes_plan, &arg, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "prolly: reading nodes failed");
	for (uint64 r = 0; r < SPI_processed && rc == 0; r++) {
		bool null_i, null_n;
		int64 i = DatumGetInt64(
		    SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &null_i));
		Datum d = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &null_n);
		bytea *v;
		CHECK_FOR_INTERRUPTS();
		if (null_i || null_n || i < 1 || (uint64)i > n)
			continue;
		v = DatumGetByteaPP(d);
		rc = found(payload, (size_t)(i - 1), VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
		if ((Pointer)v != DatumGetPointer(d))
			pfree(v);
	}
	SPI_finish();
	return rc;
}

static int st_get_nodes(prolly_store *st, const prolly_id *ids, size_t n,
                        prolly_store_found_fn found, void *payload)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile int rc = 0;
	(void)st;
	if (pgx_failed())
		return PROLLY_ESTORE;
	if (n == 0)
		return 0;
	work_begin();
	PG_TRY();
	{
		MemoryContextSwitchTo(work_cxt);
		rc = node_reader == READER_SPI ? nodes_by_spi(ids, n, found, payload)
		                               : nodes_by_index(ids, n, found, payload);
		MemoryContextSwitchTo(cxt);
	}
	PG_CATCH();
	{
		rc = pgx_keep_error(cxt);
	}
	PG_END_TRY();
	work_end();
	return rc;
}

/* ---- refs ---- */

static int st_get_ref(prolly_store *st, const char *name, prolly_id *out, uint64_t *out_epoch)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile int rc = 0;
	(void)st;
	if (pgx_failed())
		return PROLLY_ESTORE;
	work_begin();
	PG_TRY();
	{
		keyscan ks;
		bytea *v;
		MemoryContextSwitchTo(work_cxt);
		keyscan_open(&ks, cur.refs);
		if (!keyscan_find(&ks, name, strlen(name)))
			rc = prolly_set_error(PROLLY_ENOTFOUND, "ref %s not found", name);
		else if (!(v = keyscan_bytea(&ks, column(cur.refs, "value"))) ||
		         VARSIZE_ANY_EXHDR(v) != PROLLY_ID_SIZE)
			rc = prolly_set_error(PROLLY_ECORRUPT, "ref %s does not hold a %d-byte id", name,
			                      PROLLY_ID_SIZE);
		else
			memcpy(out->bytes, VARDATA_ANY(v), PROLLY_ID_SIZE);
		keyscan_close(&ks);
		MemoryContextSwitchTo(cxt);
	}
	PG_CATCH();
	{
		rc = pgx_keep_error(cxt);
	}
	PG_END_TRY();
	work_end();
	if (rc == 0 && out_epoch)
		*out_epoch = epoch;
	return rc;
}

static bytea *bytea_of(const void *p, size_t n)
{
	bytea *b = palloc(VARHDRSZ + n);
	SET_VARSIZE(b, VARHDRSZ + n);
	memcpy(VARDATA(b), p, n);
	return b;
}

static int list_refs_spi(const char *prefix, prolly_store_ref_fn fn, void *payload)
{
	size_t plen = strlen(prefix), hlen = plen;
	unsigned char *succ = palloc(plen + 1);
	Datum args[2];
	Oid types[2] = {BYTEAOID, BYTEAOID};
	char *q;
	int rc = 0;
	/* successor(prefix): drop trailing 0xff bytes, add one to the last; none if all 0xff */
	memcpy(succ, prefix, plen);
	while (hlen > 0 && succ[hlen - 1] == 0xff)
		hlen--;
	if (hlen > 0)
		succ[hlen - 1]++;
	args[0] = PointerGetDatum(bytea_of(prefix, plen));
	args[1] = PointerGetDatum(bytea_of(succ, hlen));
	q = psprintf("SELECT name, value FROM %s.refs WHERE name >= $1%s ORDER BY name",
	             quote_identifier(get_namespace_name(cur.nsp)), hlen ? " AND name < $2" : "");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "prolly: SPI_connect failed");
	if (SPI_execute_with_args(q, hlen ? 2 : 1, types, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "prolly: listing refs failed");
	for (uint64 r = 0; r < SPI_processed && rc == 0; r++) {
		bool nn, nv;
		Datum dn = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &nn);
		Datum dv = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &nv);
		bytea *bn, *bv;
		char name[PROLLY_MAX_REF_NAME + 1];
		prolly_id id;
		size_t len;
		CHECK_FOR_INTERRUPTS();
		if (nn || nv)
			continue;
		bn = DatumGetByteaPP(dn);
		bv = DatumGetByteaPP(dv);
		len = VARSIZE_ANY_EXHDR(bn);
		if (len > PROLLY_MAX_REF_NAME || memchr(VARDATA_ANY(bn), 0, len) ||
		    VARSIZE_ANY_EXHDR(bv) != PROLLY_ID_SIZE) {
			rc = prolly_set_error(PROLLY_ECORRUPT, "a row of refs is not a ref (name of %zu bytes)",
			                      len);
			break;
		}
		memcpy(name, VARDATA_ANY(bn), len);
		name[len] = '\0';
		memcpy(id.bytes, VARDATA_ANY(bv), PROLLY_ID_SIZE);
		rc = fn(payload, name, &id);
	}
	SPI_finish();
	return rc;
}

static int st_list_refs(prolly_store *st, const char *prefix, prolly_store_ref_fn fn, void *payload)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile int rc = 0;
	(void)st;
	if (pgx_failed())
		return PROLLY_ESTORE;
	work_begin();
	PG_TRY();
	{
		MemoryContextSwitchTo(work_cxt);
		rc = list_refs_spi(prefix ? prefix : "", fn, payload);
		MemoryContextSwitchTo(cxt);
	}
	PG_CATCH();
	{
		rc = pgx_keep_error(cxt);
	}
	PG_END_TRY();
	work_end();
	return rc;
}

/* ---- writes: not yet ---- */

static int st_write(prolly_store *st, prolly_store_write *w)
{
	(void)st;
	if (w->n_nodes || w->n_refs)
		return prolly_set_error(PROLLY_EUNSUPPORTED,
		                        "writing through SQL is not implemented yet (use the prolly CLI "
		                        "or the C library)");
	w->current_epoch = epoch;
	if (w->check_epoch && w->epoch != epoch)
		return prolly_set_error(PROLLY_ECONFLICT, "the gc epoch moved");
	return 0;
}

static void st_close(prolly_store *st)
{
	free(st);
}

/* ---- opening ---- */

static Oid table_of(Oid nsp, const char *name)
{
	Oid relid = get_relname_relid(name, nsp);
	if (!OidIsValid(relid))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
		                errmsg("prolly: schema \"%s\" holds no prolly store (no table %s)",
		                       get_namespace_name(nsp), name),
		                errhint("Create the store with prolly --store URL init (its schema must "
		                        "be the extension's), then use the functions of that schema.")));
	return relid;
}

static void may_read(Oid relid)
{
	AclResult acl = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_TABLE, get_rel_name(relid));
	/* The index reader does not apply row-level security, so a policy would be bypassed. */
	if (check_enable_rls(relid, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
		                errmsg("prolly: row-level security on table %s is not supported",
		                       get_rel_name(relid))));
}

/* Reads meta's schema_version and epoch; ERROR unless the version is PGX_SCHEMA_VERSION. */
static void check_schema(void)
{
	char *q = psprintf("SELECT key, value FROM %s.meta WHERE key IN ('schema_version', 'epoch')",
	                   quote_identifier(get_namespace_name(cur.nsp)));
	int64 version = -1;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "prolly: SPI_connect failed");
	if (SPI_execute(q, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "prolly: reading %s.meta failed", get_namespace_name(cur.nsp));
	for (uint64 r = 0; r < SPI_processed; r++) {
		bool nk, nv;
		char *k = SPI_getvalue(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1);
		int64 v = DatumGetInt64(
		    SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &nv));
		(void)nk;
		if (!k || nv)
			continue;
		if (strcmp(k, "schema_version") == 0)
			version = v;
		else if (strcmp(k, "epoch") == 0)
			epoch = (uint64_t)v;
	}
	SPI_finish();
	if (version != PGX_SCHEMA_VERSION)
		ereport(ERROR,
		        (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		         version < 0
		             ? errmsg("prolly: the store in schema \"%s\" has no schema_version; "
		                      "this extension reads schema version %d",
		                      get_namespace_name(cur.nsp), PGX_SCHEMA_VERSION)
		             : errmsg("prolly: the store in schema \"%s\" is at schema version "
		                      "%lld; this extension reads schema version %d",
		                      get_namespace_name(cur.nsp), (long long)version, PGX_SCHEMA_VERSION),
		         version >= 0 && version < PGX_SCHEMA_VERSION
		             ? errhint("Run prolly init as the tables' owner to migrate the store.")
		             : errhint("Install the prolly extension that matches the store.")));
}

static prolly_store *store_new(void)
{
	prolly_store *st = calloc(1, sizeof(*st));
	if (!st)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	prolly_store_init(st, PROLLY_STORE_VERSION);
	st->kind = "in-server postgres";
	st->get_nodes = st_get_nodes;
	st->write = st_write;
	st->get_ref = st_get_ref;
	st->list_refs = st_list_refs;
	st->close = st_close;
	return st;
}

prolly_db *pgx_open(FunctionCallInfo fcinfo, pgx_tables *out)
{
	Oid nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	AclResult acl;
	pgx_begin();
	depth = 0;
	acl = pg_namespace_aclcheck(nsp, GetUserId(), ACL_USAGE);
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_SCHEMA, get_namespace_name(nsp));
	cur.nsp = nsp;
	cur.nodes = table_of(nsp, "nodes");
	cur.refs = table_of(nsp, "refs");
	cur.meta = table_of(nsp, "meta");
	may_read(cur.nodes);
	may_read(cur.refs);
	if (checked_nsp != nsp || checked_lxid != MyProc->lxid) {
		check_schema(); /* SPI checks SELECT on meta */
		checked_nsp = nsp;
		checked_lxid = MyProc->lxid;
	}
	if (db && db_cache_kb != cache_size_kb && holds == 0) {
		prolly_close(db);
		db = NULL;
	}
	if (!db) {
		prolly_options o = PROLLY_OPTIONS_INIT;
		int rc;
		o.cache_bytes = (size_t)cache_size_kb * 1024;
		o.flags = PROLLY_DB_NO_THREADS;
		rc = prolly_db_new(&db, store_new(), &o);
		pgx_check(rc, "opening the store");
		db_cache_kb = cache_size_kb;
	}
	*out = cur;
	return db;
}

void pgx_resume(const pgx_tables *t)
{
	pgx_begin();
	depth = 0;
	cur = *t;
}
