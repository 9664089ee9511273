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
 *   get_ref_objects, get_ancestors, find_ids  the primary-key indexes: the ref, then its commit
 *              and root; commits breadth first along their parents; a range [lo, hi] of ids.
 * The schema version, the node size and the gc epoch are read once per transaction (pgx_open),
 * from a scan of meta's heap.
 * Writes (the functions of write.c and refs.c only): the protocol in store_write.c, whose
 * write() runs the schema's prolly_write through SPI in the caller's transaction, and answers
 * the empty write the engine sends to learn the epoch.
 *
 * Every store function here runs its PostgreSQL code through PGX_STORE_CALL (prolly_ext.h):
 * inside PG_TRY, a caught error kept with pgx_keep_error (guard.c), work memory in backend.c's
 * work context, reset by every outermost call.
 */
#include "prolly_ext.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include <stdlib.h>

/* ---- settings ---- */

static void on_relcache(Datum arg, Oid relid);

enum { READER_INDEX = 0, READER_SPI = 1 };

static const struct config_enum_entry reader_options[] = {
    {"index", READER_INDEX, false}, {"spi", READER_SPI, false}, {NULL, 0, false}};

static int node_reader = READER_INDEX;  /* prolly.node_reader */
static char *ref_conflict;              /* prolly.ref_conflict: the store's, see below */
static Oid checked_nsp;                 /* schema version checked for this schema ... */
static LocalTransactionId checked_lxid; /* ... in this transaction */
static Oid checked_meta;                /* its meta table */
static unsigned checked_node_size;      /* the node size it read (never 0) */
static pgx_kept nodes_plan;             /* prolly.node_reader = spi */

void pgx_define_settings(void)
{
	pgx_define_backend_settings();
	DefineCustomEnumVariable("prolly.node_reader", "How nodes are read: index or spi.",
	                         "index scans the primary-key index of nodes directly; spi runs a "
	                         "prepared statement. Both give the same results.",
	                         &node_reader, READER_INDEX, reader_options, PGC_USERSET, 0, NULL, NULL,
	                         NULL);
	/* The schema's s.prolly_ref_cas marks a lost compare-and-swap in this transaction-local
	 * variable (docs/postgres.md); under the reserved prefix it must be defined, or setting it
	 * would raise 42602 where the caller expects a conflict. */
	DefineCustomStringVariable(
	    "prolly.ref_conflict", "Set by the store's functions when a ref update lost.", NULL,
	    &ref_conflict, "", PGC_USERSET, GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
	MarkGUCPrefixReserved("prolly");
	CacheRegisterRelcacheCallback(on_relcache, (Datum)0);
	pgx_write_register();
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

static void keyscan_open(keyscan *ks, Oid relid, int nkeys)
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
	ks->scan = index_beginscan(ks->heap, ks->index, read_snapshot(), nkeys, 0);
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

/* ---- catalog lookups, kept until the catalogs change ---- */

/* The tables of the last schema opened and the columns looked up in them are kept across calls
 * and forgotten whenever the relation cache hears that one of those relations changed (a rename,
 * drop, ALTER or GRANT) or that every relation may have: the answers are those the catalogs
 * give, as of the invalidations processed when the statement began, without the lookups.
 * Privileges and row-level security are checked at every call all the same. */

enum { COL_NODES_ID, COL_NODES_NODE, COL_REFS_VALUE, COL_META_KEY, COL_META_VALUE, N_COLS };

static struct {
	Oid nsp; /* InvalidOid: nothing kept */
	Oid nodes, refs, meta;
} tables_kept;

static struct {
	Oid relid; /* InvalidOid: nothing kept */
	AttrNumber at;
} columns_kept[N_COLS];

static uint64 catalog_gen; /* counts invalidations, so a lookup they overtook is not kept */

static void on_relcache(Datum arg, Oid relid)
{
	(void)arg;
	catalog_gen++;
	if (!OidIsValid(relid) || relid == tables_kept.nodes || relid == tables_kept.refs ||
	    relid == tables_kept.meta)
		tables_kept.nsp = InvalidOid;
	/* The meta table checked was dropped, renamed or altered (a restore in place of another
	 * store, maybe of another node size, committed by another session while this READ COMMITTED
	 * transaction runs): the schema is checked again, so that no write builds trees of the former
	 * store's size. */
	if (!OidIsValid(relid) || relid == checked_meta)
		checked_nsp = InvalidOid;
	for (int i = 0; i < N_COLS; i++)
		if (!OidIsValid(relid) || relid == columns_kept[i].relid)
			columns_kept[i].relid = InvalidOid;
}

/* The number of column name (which: its COL_ slot) of table relid. */
static AttrNumber column(Oid relid, int which, const char *name)
{
	uint64 gen = catalog_gen;
	AttrNumber a;
	if (columns_kept[which].relid == relid && OidIsValid(relid))
		return columns_kept[which].at;
	a = get_attnum(relid, name);
	if (a == InvalidAttrNumber)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
		                errmsg("prolly: table %s has no column %s", get_rel_name(relid), name)));
	if (gen == catalog_gen) {
		columns_kept[which].relid = relid;
		columns_kept[which].at = a;
	}
	return a;
}

/* ---- get_nodes ---- */

static int cmp_id_ptr(const void *a, const void *b)
{
	return memcmp((*(const prolly_id *const *)a)->bytes, (*(const prolly_id *const *)b)->bytes,
	              PROLLY_ID_SIZE);
}

/* Each id by a scan of the primary-key index, in id order: a write inserts its nodes in id
 * order (store_write.c), so the nodes of one write lie in heap pages in that order too, and
 * reading them in it touches each page once and in file order. */
static int nodes_by_index(const prolly_id *ids, size_t n, prolly_store_found_fn found,
                          void *payload)
{
	keyscan ks;
	AttrNumber attno = column(pgx_call()->nodes, COL_NODES_NODE, "node");
	const prolly_id **order = palloc(n * sizeof(*order));
	int rc = 0;
	for (size_t i = 0; i < n; i++)
		order[i] = &ids[i];
	qsort(order, n, sizeof(*order), cmp_id_ptr);
	keyscan_open(&ks, pgx_call()->nodes, 1);
	for (size_t k = 0; k < n && rc == 0; k++) {
		size_t i = (size_t)(order[k] - ids); /* the caller's index */
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
	pfree(order);
	return rc;
}

static int nodes_by_spi(const prolly_id *ids, size_t n, prolly_store_found_fn found, void *payload)
{
	Datum *elems = palloc(n * sizeof(Datum));
	Datum arg;
	int rc = 0, guc;
	for (size_t i = 0; i < n; i++) {
		bytea *b = palloc(VARHDRSZ + PROLLY_ID_SIZE);
		SET_VARSIZE(b, VARHDRSZ + PROLLY_ID_SIZE);
		memcpy(VARDATA(b), ids[i].bytes, PROLLY_ID_SIZE);
		elems[i] = PointerGetDatum(b);
	}
	arg = PointerGetDatum(construct_array(elems, (int)n, BYTEAOID, -1, false, TYPALIGN_INT));
	guc = pgx_spi_connect();
	{
		Oid types[1] = {BYTEAARRAYOID};
		/* A generic plan: left to choose, the plan cache plans the array statement again at
		 * every execution (docs/postgres.md, "Statements and round trips"). The client store's
		 * statement (prolly/pg_sql.h): an index probe per id even when the plan is made while
		 * the table is small, and pg_catalog.unnest, qualified: the caller's search_path could
		 * otherwise pick a unnest(bytea[]) of another schema (an exact match beats pg_catalog's
		 * anyarray one) and run it with the caller's rights. */
		pgx_kept_plan(&nodes_plan, PROLLY_PG_SQL_GET_NODES("%s"), 1, types);
	}
	if (SPI_execute_plan(nodes_plan.plan, &arg, NULL, true, 0) != SPI_OK_SELECT)
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
	pgx_spi_finish(guc);
	return rc;
}

static int st_get_nodes(prolly_store *st, const prolly_id *ids, size_t n,
                        prolly_store_found_fn found, void *payload)
{
	volatile int rc = 0;
	(void)st;
	if (pgx_failed())
		return PROLLY_ESTORE;
	if (n == 0)
		return 0;
	PGX_STORE_CALL(rc, node_reader == READER_SPI ? nodes_by_spi(ids, n, found, payload)
	                                             : nodes_by_index(ids, n, found, payload));
	return rc;
}

/* ---- refs ---- */

/* The ref's value (PROLLY_ENOTFOUND, or PROLLY_ECORRUPT for a row that holds no id). */
static int ref_value(const char *name, prolly_id *out)
{
	keyscan ks;
	bytea *v;
	int rc = 0;
	keyscan_open(&ks, pgx_call()->refs, 1);
	if (!keyscan_find(&ks, name, strlen(name)))
		rc = prolly_set_error(PROLLY_ENOTFOUND, "ref %s not found", name);
	else if (!(v = keyscan_bytea(&ks, column(pgx_call()->refs, COL_REFS_VALUE, "value"))) ||
	         VARSIZE_ANY_EXHDR(v) != PROLLY_ID_SIZE)
		rc = prolly_set_error(PROLLY_ECORRUPT, "ref %s does not hold a %d-byte id", name,
		                      PROLLY_ID_SIZE);
	else
		memcpy(out->bytes, VARDATA_ANY(v), PROLLY_ID_SIZE);
	keyscan_close(&ks);
	return rc;
}

static int st_get_ref(prolly_store *st, const char *name, prolly_id *out, uint64_t *out_epoch)
{
	volatile int rc = 0;
	prolly_id id;
	(void)st;
	if (pgx_failed())
		return PROLLY_ESTORE;
	if ((rc = prolly_store_ref_name_check(name)))
		return rc;
	PGX_STORE_CALL(rc, ref_value(name, &id));
	if (rc == 0 && out)
		*out = id;
	if (rc == 0 && out_epoch)
		*out_epoch = pgx_epoch();
	return rc;
}

static int list_refs_spi(const char *prefix, prolly_store_ref_fn fn, void *payload)
{
	size_t plen = strlen(prefix), hlen = plen;
	unsigned char *succ = palloc(plen + 1);
	Datum args[2];
	Oid types[2] = {BYTEAOID, BYTEAOID};
	char *q;
	int rc = 0, guc;
	/* successor(prefix): drop trailing 0xff bytes, add one to the last; none if all 0xff */
	memcpy(succ, prefix, plen);
	while (hlen > 0 && succ[hlen - 1] == 0xff)
		hlen--;
	if (hlen > 0)
		succ[hlen - 1]++;
	args[0] = PointerGetDatum(pgx_bytea(prefix, plen));
	args[1] = PointerGetDatum(pgx_bytea(succ, hlen));
	q = psprintf("SELECT name, value FROM %s.refs WHERE name >= $1%s ORDER BY name",
	             pgx_schema_quoted(), hlen ? " AND name < $2" : "");
	guc = pgx_spi_connect();
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
	pgx_spi_finish(guc);
	return rc;
}

static int st_list_refs(prolly_store *st, const char *prefix, prolly_store_ref_fn fn, void *payload)
{
	volatile int rc = 0;
	(void)st;
	if (pgx_failed())
		return PROLLY_ESTORE;
	PGX_STORE_CALL(rc, list_refs_spi(prefix ? prefix : "", fn, payload));
	return rc;
}

/* ---- a head with its commit and root; ancestors; ids in a range ---- */

/* get_ref_objects: the ref, then the object it names and the one whose id is at `follow` in
 * it, by three index lookups in one call and one snapshot. */
static int ref_objects(const char *name, size_t follow, prolly_id *out, prolly_store_found_fn found,
                       void *payload)
{
	keyscan ks;
	AttrNumber attno = column(pgx_call()->nodes, COL_NODES_NODE, "node");
	prolly_id head, next;
	int rc = ref_value(name, &head), have_next = 0;
	if (rc)
		return rc;
	if (out)
		*out = head;
	keyscan_open(&ks, pgx_call()->nodes, 1);
	if (keyscan_find(&ks, head.bytes, PROLLY_ID_SIZE)) {
		bytea *v = keyscan_bytea(&ks, attno);
		if (v) {
			size_t size = VARSIZE_ANY_EXHDR(v);
			if (size >= follow + PROLLY_ID_SIZE) {
				memcpy(next.bytes, VARDATA_ANY(v) + follow, PROLLY_ID_SIZE);
				have_next = 1;
			}
			rc = found(payload, 0, VARDATA_ANY(v), size);
			keyscan_free(&ks, attno, v);
		}
		ExecClearTuple(ks.slot);
	}
	if (rc == 0 && have_next && keyscan_find(&ks, next.bytes, PROLLY_ID_SIZE)) {
		bytea *v = keyscan_bytea(&ks, attno);
		if (v) {
			rc = found(payload, 1, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
			keyscan_free(&ks, attno, v);
		}
		ExecClearTuple(ks.slot);
	}
	keyscan_close(&ks);
	return rc;
}

static int st_get_ref_objects(prolly_store *st, const char *name, size_t follow, prolly_id *out,
                              uint64_t *out_epoch, prolly_store_found_fn found, void *payload)
{
	volatile int rc = 0;
	(void)st;
	if (pgx_failed())
		return PROLLY_ESTORE;
	if ((rc = prolly_store_ref_name_check(name)))
		return rc;
	PGX_STORE_CALL(rc, ref_objects(name, follow, out, found, payload));
	if (rc == 0 && out_epoch)
		*out_epoch = pgx_epoch();
	return rc;
}

/* get_ancestors: breadth first from ids along the parents the layout describes, each object
 * once, at most limit in all; one index scan rescanned per id. */
static int ancestors(const prolly_id *ids, size_t n, size_t limit,
                     const prolly_store_commit_layout *layout, prolly_store_obj_fn found,
                     void *payload)
{
	keyscan ks;
	AttrNumber attno = column(pgx_call()->nodes, COL_NODES_NODE, "node");
	HASHCTL hc;
	HTAB *seen;
	prolly_id *queue;
	size_t head = 0, tail = 0, cap = n ? n * 2 : 16, reported = 0;
	int rc = 0;
	bool dup;

	memset(&hc, 0, sizeof(hc));
	hc.keysize = PROLLY_ID_SIZE;
	hc.entrysize = PROLLY_ID_SIZE;
	hc.hcxt = CurrentMemoryContext;
	seen = hash_create("prolly ancestors", (long)Min(limit, 4096) + 16, &hc,
	                   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	queue = palloc(cap * sizeof(*queue));
	for (size_t i = 0; i < n; i++) {
		hash_search(seen, ids[i].bytes, HASH_ENTER, &dup);
		if (!dup)
			queue[tail++] = ids[i];
	}
	keyscan_open(&ks, pgx_call()->nodes, 1);
	while (head < tail && reported < limit && rc == 0) {
		prolly_id id = queue[head++];
		bytea *v;
		CHECK_FOR_INTERRUPTS();
		if (!keyscan_find(&ks, id.bytes, PROLLY_ID_SIZE))
			continue;
		if ((v = keyscan_bytea(&ks, attno))) {
			const unsigned char *d = (const unsigned char *)VARDATA_ANY(v);
			size_t size = VARSIZE_ANY_EXHDR(v);
			rc = found(payload, &id, d, size);
			reported++;
			if (rc == 0 && size >= layout->parents_at && size >= layout->count_at + 4 &&
			    memcmp(d, layout->magic, layout->magic_size) == 0) {
				const unsigned char *c = d + layout->count_at;
				size_t np = (size_t)c[0] | (size_t)c[1] << 8 | (size_t)c[2] << 16 |
				            (size_t)c[3] << 24;
				np = Min(np, (size - layout->parents_at) / PROLLY_ID_SIZE);
				for (size_t j = 0; j < np; j++) {
					const unsigned char *p = d + layout->parents_at + j * PROLLY_ID_SIZE;
					hash_search(seen, p, HASH_ENTER, &dup);
					if (dup)
						continue;
					if (tail == cap) {
						cap *= 2;
						queue = repalloc(queue, cap * sizeof(*queue));
					}
					memcpy(queue[tail++].bytes, p, PROLLY_ID_SIZE);
				}
			}
			keyscan_free(&ks, attno, v);
		}
		ExecClearTuple(ks.slot);
	}
	keyscan_close(&ks);
	return rc;
}

static int st_get_ancestors(prolly_store *st, const prolly_id *ids, size_t n, size_t limit,
                            const prolly_store_commit_layout *layout, prolly_store_obj_fn found,
                            void *payload)
{
	volatile int rc = 0;
	(void)st;
	if (pgx_failed())
		return PROLLY_ESTORE;
	if (n == 0 || limit == 0)
		return 0;
	PGX_STORE_CALL(rc, ancestors(ids, n, limit, layout, found, payload));
	return rc;
}

/* find_ids: one range scan [lo, hi] of the primary-key index of nodes, in id order. */
static int ids_in_range(const prolly_id *lo, const prolly_id *hi, size_t limit,
                        prolly_store_obj_fn found, void *payload)
{
	keyscan ks;
	AttrNumber id_at = column(pgx_call()->nodes, COL_NODES_ID, "id"),
	           node_at = column(pgx_call()->nodes, COL_NODES_NODE, "node");
	ScanKeyData sk[2];
	bytea *blo = pgx_bytea(lo->bytes, PROLLY_ID_SIZE), *bhi = pgx_bytea(hi->bytes, PROLLY_ID_SIZE);
	size_t reported = 0;
	int rc = 0;
	keyscan_open(&ks, pgx_call()->nodes, 2);
	ScanKeyInit(&sk[0], 1, BTGreaterEqualStrategyNumber, F_BYTEAGE, PointerGetDatum(blo));
	ScanKeyInit(&sk[1], 1, BTLessEqualStrategyNumber, F_BYTEALE, PointerGetDatum(bhi));
	index_rescan(ks.scan, sk, 2, NULL, 0);
	while (reported < limit && rc == 0 &&
	       index_getnext_slot(ks.scan, ForwardScanDirection, ks.slot)) {
		bytea *id = keyscan_bytea(&ks, id_at), *v;
		CHECK_FOR_INTERRUPTS();
		if (id && VARSIZE_ANY_EXHDR(id) == PROLLY_ID_SIZE && (v = keyscan_bytea(&ks, node_at))) {
			prolly_id pid;
			memcpy(pid.bytes, VARDATA_ANY(id), PROLLY_ID_SIZE);
			rc = found(payload, &pid, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
			reported++;
			keyscan_free(&ks, node_at, v);
		}
		ExecClearTuple(ks.slot);
	}
	keyscan_close(&ks);
	return rc;
}

static int st_find_ids(prolly_store *st, const prolly_id *lo, const prolly_id *hi, size_t limit,
                       prolly_store_obj_fn found, void *payload)
{
	volatile int rc = 0;
	(void)st;
	if (pgx_failed())
		return PROLLY_ESTORE;
	if (limit == 0)
		return 0;
	PGX_STORE_CALL(rc, ids_in_range(lo, hi, limit, found, payload));
	return rc;
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

static bool meta_key_is(text *t, const char *key)
{
	return VARSIZE_ANY_EXHDR(t) == strlen(key) && memcmp(VARDATA_ANY(t), key, strlen(key)) == 0;
}

/* Reads meta's schema_version, epoch and node_size as snap sees them by a scan of its heap (a
 * page of a few rows: cheaper than a descent of its index per key, and much cheaper than SPI's
 * parser and planner, which cost most of a cached point get when paid per transaction); -1 for a
 * row that is missing (for node_size, which may be NULL: PG_INT64_MIN, so that a row holding -1
 * is told from none). The caller checked SELECT on meta (may_read). */
static void meta_read(Snapshot snap, int64 *version, int64 *epoch, int64 *node_size)
{
	Relation rel = table_open(pgx_call()->meta, AccessShareLock);
	TableScanDesc scan = table_beginscan(rel, snap, 0, NULL);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	AttrNumber kattno = column(pgx_call()->meta, COL_META_KEY, "key"),
	           vattno = column(pgx_call()->meta, COL_META_VALUE, "value");
	*version = *epoch = -1;
	if (node_size)
		*node_size = PG_INT64_MIN;
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot)) {
		bool nk, nv;
		Datum k = slot_getattr(slot, kattno, &nk);
		Datum v = slot_getattr(slot, vattno, &nv);
		text *t;
		if (nk || nv)
			continue;
		t = DatumGetTextPP(k);
		if (meta_key_is(t, "schema_version"))
			*version = DatumGetInt64(v);
		else if (meta_key_is(t, "epoch"))
			*epoch = DatumGetInt64(v);
		else if (node_size && meta_key_is(t, "node_size"))
			*node_size = DatumGetInt64(v);
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	table_close(rel, AccessShareLock);
}

/* The schema version, node size and gc epoch in the statement's snapshot; ERROR unless the
 * version is one this extension reads (PGX_SCHEMA_OLDEST to PGX_SCHEMA_VERSION), and XX001 for a
 * version-7 store whose node_size row is missing or not a size of its own (a power of two from
 * 1 to 8 KiB other than 4096: a store of 4096 stays at version 6, so 4096 there is no size such
 * a store was made with). A store before version 7 has 4 KiB nodes whatever meta holds: a row
 * 'node_size' there is not the store's (no library wrote one). Returns the node size. */
static unsigned check_schema(void)
{
	int64 version, epoch, node_size;
	meta_read(read_snapshot(), &version, &epoch, &node_size);
	if (epoch >= 0)
		pgx_epoch_read((uint64_t)epoch);
	if (version < PGX_SCHEMA_OLDEST || version > PGX_SCHEMA_VERSION)
		ereport(ERROR,
		        (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		         version < 0 ? errmsg("prolly: the store in schema \"%s\" has no schema_version; "
		                              "this extension reads schema versions %d to %d",
		                              pgx_schema_name(), PGX_SCHEMA_OLDEST, PGX_SCHEMA_VERSION)
		                     : errmsg("prolly: the store in schema \"%s\" is at schema version "
		                              "%lld; this extension reads schema versions %d to %d",
		                              pgx_schema_name(), (long long)version, PGX_SCHEMA_OLDEST,
		                              PGX_SCHEMA_VERSION),
		         version >= 0 && version < PGX_SCHEMA_OLDEST
		             ? errhint("Run prolly init as the tables' owner to migrate the store.")
		             : errhint("Install the prolly extension that matches the store.")));
	if (version < PGX_SCHEMA_NODE_SIZE)
		return PROLLY_NODE_SIZE_DEFAULT;
	if (node_size < PROLLY_NODE_SIZE_MIN || node_size > PROLLY_NODE_SIZE_MAX ||
	    node_size == PROLLY_NODE_SIZE_DEFAULT || !prolly_node_size_valid((unsigned)node_size))
		ereport(ERROR,
		        (errcode(ERRCODE_DATA_CORRUPTED),
		         node_size == PG_INT64_MIN
		             ? errmsg("prolly: the store in schema \"%s\" is at schema version %d but "
		                      "its meta table has no node_size row",
		                      pgx_schema_name(), PGX_SCHEMA_NODE_SIZE)
		             : errmsg("prolly: the store in schema \"%s\" is at schema version %d but "
		                      "its meta table's node_size row holds %lld, not a node size of "
		                      "such a store (1024, 2048 or 8192)",
		                      pgx_schema_name(), PGX_SCHEMA_NODE_SIZE, (long long)node_size)));
	return (unsigned)node_size;
}

uint64_t pgx_epoch_latest(void)
{
	Snapshot snap = RegisterSnapshot(GetLatestSnapshot());
	int64 version, epoch;
	meta_read(snap, &version, &epoch, NULL);
	UnregisterSnapshot(snap);
	return (uint64_t)epoch;
}

static prolly_store *store_new(void)
{
	prolly_store *st = calloc(1, sizeof(*st));
	if (!st)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	prolly_store_init(st, PROLLY_STORE_VERSION);
	st->kind = "in-server postgres";
	st->get_nodes = st_get_nodes;
	st->write = pgx_store_write;
	st->get_ref = st_get_ref;
	st->list_refs = st_list_refs;
	st->get_ref_objects = st_get_ref_objects;
	st->get_ancestors = st_get_ancestors;
	st->find_ids = st_find_ids;
	st->close = st_close;
	return st;
}

prolly_db *pgx_open(FunctionCallInfo fcinfo, pgx_tables *out)
{
	Oid nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	AclResult acl;
	pgx_tables t;
	prolly_db *db;
	pgx_begin();
	pgx_write_reset();
	acl = pg_namespace_aclcheck(nsp, GetUserId(), ACL_USAGE);
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_SCHEMA, get_namespace_name(nsp));
	t.nsp = nsp;
	if (tables_kept.nsp == nsp) {
		t.nodes = tables_kept.nodes;
		t.refs = tables_kept.refs;
		t.meta = tables_kept.meta;
	} else {
		uint64 gen = catalog_gen;
		t.nodes = table_of(nsp, "nodes");
		t.refs = table_of(nsp, "refs");
		t.meta = table_of(nsp, "meta");
		if (gen == catalog_gen) {
			tables_kept.nodes = t.nodes;
			tables_kept.refs = t.refs;
			tables_kept.meta = t.meta;
			tables_kept.nsp = nsp;
		}
	}
	may_read(t.nodes);
	may_read(t.refs);
	may_read(t.meta);
	pgx_call_begin(&t);
	if (checked_nsp != nsp || checked_lxid != MyProc->lxid) {
		checked_nsp = InvalidOid; /* until the check below passes */
		checked_node_size = check_schema();
		checked_nsp = nsp;
		checked_meta = t.meta;
		checked_lxid = MyProc->lxid;
	}
	/* the handle whose trees are of this store's node size */
	db = pgx_handle(store_new, checked_node_size);
	*out = t;
	return db;
}

static void may(Oid relid, AclMode mode)
{
	AclResult acl = pg_class_aclcheck(relid, GetUserId(), mode);
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_TABLE, get_rel_name(relid));
}

prolly_db *pgx_open_write(FunctionCallInfo fcinfo, pgx_tables *out, const char *fname)
{
	prolly_db *d;
	PreventCommandIfReadOnly(fname);
	d = pgx_open(fcinfo, out);
	/* One mode at a time: pg_class_aclcheck accepts any one of several. */
	may(out->nodes, ACL_INSERT);
	may(out->refs, ACL_INSERT);
	may(out->refs, ACL_UPDATE);
	return d;
}

void pgx_resume(const pgx_tables *t)
{
	pgx_begin();
	pgx_call_begin(t);
}
