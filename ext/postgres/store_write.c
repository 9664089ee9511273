/*
 * store_write.c - the store's writes: the protocol of a SQL write function (below), write()
 * through the schema's prolly_write, and the transaction callbacks that keep the backend's
 * decoded-node cache true to the tables.
 *
 * The write protocol of a SQL write function (write.c, refs.c), in the caller's transaction:
 *   1. pgx_write_lock: write_lock_bounded takes the writers' shared advisory lock (the gc's
 *      epoch bump takes it exclusive, so no gc starts until this transaction ends), waiting 5 s
 *      at most when the session has no lock_timeout, as any role may hold it, and again while
 *      the holder is a gc that keeps working; then one statement reads the epoch from s.meta and
 *      locks the branch's row (SELECT ... FROM s.refs WHERE name = $1 FOR UPDATE: writers to one
 *      branch queue here; to other branches, never); then, under READ COMMITTED, a fresh
 *      snapshot is pushed, so the engine reads the head and the nodes that the writer it waited
 *      for committed (under REPEATABLE READ or SERIALIZABLE the lock raises 40001 when the row
 *      moved after the transaction's snapshot, as for any UPDATE, and pgx_write_lock raises
 *      40001 when a gc's epoch bump committed after that snapshot). This is what the schema's
 *      s.prolly_write_begin does, without its PL/pgSQL call;
 *   2. the engine reads the head, builds the commit and calls write(): SPI inserts the nodes
 *      (ON CONFLICT DO NOTHING, through a kept generic plan: insert_nodes) and then moves the
 *      refs by compare-and-swap (docs/postgres.md), one plain statement per ref with the rules
 *      of the schema's s.prolly_ref_cas (PROLLY_PG_SQL_CAS in prolly/pg_sql.h), or, when more
 *      than one of them can lose, through its s.prolly_write (all or none), all of which commits
 *      or rolls back with the caller's transaction; the command counter is then advanced so that
 *      this call's later reads see what it wrote;
 *   3. pgx_write_unlock pops the snapshot; the locks are held until the transaction ends.
 * The epoch check of prolly_write is not needed (p_epoch NULL): the gc lock is held since
 * before this call read anything, and the decoded-node cache is cleared whenever the epoch
 * differs from the one it was filled under (cache_epoch), or a transaction that wrote aborts
 * (its nodes vanish with it: on_xact).
 */
#include "prolly_ext.h"

#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include <stdlib.h>

static bool writing;                  /* between pgx_write_lock and pgx_write_unlock */
static bool wrote;                    /* this transaction wrote: clear the cache if it aborts */
static uint64_t cache_epoch;          /* the gc epoch the cache was filled under */
static SubTransactionId write_subxid; /* the subtransaction pgx_write_lock ran in */

static void cache_at_epoch(uint64_t e)
{
	if (e != cache_epoch) {
		pgx_cache_clear();
		cache_epoch = e;
	}
}

static void on_xact(XactEvent event, void *arg)
{
	(void)arg;
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT) {
		if (wrote)
			pgx_cache_clear();
		wrote = false;
		writing = false;
	} else if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
	           event == XACT_EVENT_PREPARE) {
		wrote = false;
		writing = false;
	}
}

/* A savepoint rolled back: what it wrote may be in the cache. Inside a write call, the only
 * subtransactions that abort are those of s.prolly_write itself (its compare-and-swap block),
 * unless the one the call runs in aborts (an error left the call: its snapshot is gone). */
static void on_subxact(SubXactEvent event, SubTransactionId mine, SubTransactionId parent,
                       void *arg)
{
	(void)parent;
	(void)arg;
	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	if (writing && mine == write_subxid)
		writing = false;
	if (!writing && wrote)
		pgx_cache_clear();
}

/* This file's statements, planned once per backend (pgx_kept_plan). */
static pgx_kept lock_plan, write_plan, insert_plan, value_plan;
static pgx_kept cas_plans[3][2]; /* PROLLY_PG_SQL_CAS's, by expectation and removal */

/* The first key of the writers' advisory lock, as the schema's functions take it; the second is
 * hashtext('"schema".meta'). */
#define WRITE_LOCK_KEY PROLLY_PG_LOCK_WRITE

static void write_lock_context(void *arg)
{
	errcontext("waiting %d ms (lock_timeout) for prolly's write lock of schema %s, advisory lock "
	           "(%d, hashtext('%s')), which any role may hold: pg_locks shows who does",
	           LockTimeout, pgx_schema_quoted(), WRITE_LOCK_KEY, (const char *)arg);
}

/* The sessions other than this one that hold the lock tag exclusive, as "pid N (role R,
 * ExclusiveLock)", the first three, read from the lock table as pg_locks reads it (an advisory
 * lock is in no transaction's way, so only the lock table knows its holder). */
static char *exclusive_holders(const LOCKTAG *tag)
{
	LockData *all = GetLockStatusData();
	StringInfoData out;
	int n = 0;
	initStringInfo(&out);
	for (int i = 0; i < all->nelements; i++) {
		const LockInstanceData *l = &all->locks[i];
		PGPROC *proc;
		char *role = NULL;
		if (l->pid == MyProcPid || !(l->holdMask & LOCKBIT_ON(ExclusiveLock)) ||
		    l->locktag.locktag_type != tag->locktag_type ||
		    l->locktag.locktag_field1 != tag->locktag_field1 ||
		    l->locktag.locktag_field2 != tag->locktag_field2 ||
		    l->locktag.locktag_field3 != tag->locktag_field3 ||
		    l->locktag.locktag_field4 != tag->locktag_field4)
			continue;
		if (n++ >= 3)
			continue;
		if ((proc = BackendPidGetProc(l->pid)) != NULL)
			role = GetUserNameFromId(proc->roleId, true);
		appendStringInfo(&out, "%spid %d (role %s, ExclusiveLock)", n > 1 ? ", " : "", l->pid,
		                 role ? role : "?");
	}
	if (n > 3)
		appendStringInfoString(&out, " and others");
	return n ? out.data : NULL;
}

/* After a wait for the write lock timed out: 1 when a gc of this schema holds it and is working
 * (its beat or state_change lately), 2 when no other session holds it exclusive now, 0 for any
 * other holder, or when no gc runs: the statement of prolly/pg_sql.h, which the C client runs
 * too, with the literal '"schema".meta' as $1. */
static int gc_advancing(const char *meta)
{
	static const char sql[] = PROLLY_PG_SQL_GC_ADVANCING("$1");
	Oid types[1] = {TEXTOID};
	Datum args[1];
	int how = 0, guc;
	/* pg_stat_activity as it is now, not as this transaction first read it */
	pgstat_clear_snapshot();
	guc = pgx_spi_connect();
	args[0] = CStringGetTextDatum(meta);
	if (SPI_execute_with_args(sql, 1, types, args, NULL, true, 0) == SPI_OK_SELECT) {
		for (uint64 i = 0; i < SPI_processed; i++) {
			bool isnull;
			int64 v = DatumGetInt64(
			    SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
			if (!isnull && v <= 2 && how < v)
				how = (int)v;
		}
	}
	pgx_spi_finish(guc);
	return how;
}

/*
 * Takes the write lock shared before the statement that also does (and then finds it held),
 * waiting lock_timeout at most, and 5 s when the session has none: an advisory lock needs no
 * privilege, so any session could hold it exclusive and would stall every writer forever. The
 * row lock of the branch, taken next, keeps the session's lock_timeout (writers of one branch
 * queue there as long as the transaction ahead lasts). The setting is the caller's again on
 * return, or when the error unwinds the GUC nest level. A wait that times out names the sessions
 * that hold the lock (their pid, as the C client does), read once it has left the lock's queue,
 * unless the holder is a gc that keeps working (gc_advancing): that one is waited for again, as
 * the C client does, and so, once in a row, is a lock that a running gc let go of just after
 * the wait gave up. Each wait is a new one of lock_timeout; a cancel or statement_timeout ends
 * it as any lock wait.
 */
static void write_lock_bounded(void)
{
	const char *nsp = pgx_schema_name();
	StringInfoData lit;
	LOCKTAG tag;
	ErrorContextCallback ctx;
	MemoryContext cxt;
	bool freed = false;
	int level;
	initStringInfo(&lit);
	appendStringInfoChar(&lit, '"');
	for (const char *c = nsp; *c; c++) {
		if (*c == '"')
			appendStringInfoChar(&lit, '"');
		appendStringInfoChar(&lit, *c);
	}
	appendStringInfoString(&lit, "\".meta");
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32)WRITE_LOCK_KEY,
	                     (uint32)DatumGetInt32(DirectFunctionCall1Coll(
	                         hashtext, DEFAULT_COLLATION_OID, CStringGetTextDatum(lit.data))),
	                     2);
	if (LockAcquire(&tag, ShareLock, false, true) != LOCKACQUIRE_NOT_AVAIL)
		return;
	level = NewGUCNestLevel();
	if (LockTimeout == 0)
		(void)set_config_option("lock_timeout", PROLLY_PG_LOCK_WAIT_DEFAULT, PGC_USERSET,
		                        PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	ctx.callback = write_lock_context;
	ctx.arg = lit.data;
	ctx.previous = error_context_stack;
	error_context_stack = &ctx;
	cxt = CurrentMemoryContext;
	for (;;) {
		ErrorData *volatile ed = NULL;
		char *holders;
		int how;
		PG_TRY();
		{
			(void)LockAcquire(&tag, ShareLock, false, false);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(cxt);
			ed = CopyErrorData();
			if (ed->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
				PG_RE_THROW();
			FlushErrorState();
			LockErrorCleanup(); /* out of the lock's wait queue, as the abort would take it */
		}
		PG_END_TRY();
		if (!ed)
			break;
		how = gc_advancing(lit.data);
		if (how == 1 || (how == 2 && !freed)) {
			freed = how == 2;
			FreeErrorData(ed);
			continue;
		}
		holders = exclusive_holders(&tag);
		ereport(ERROR, (errcode(ERRCODE_LOCK_NOT_AVAILABLE), errmsg("%s", ed->message),
		                holders ? errdetail("The write lock is held by %s: wait for that session "
		                                    "or end it (pg_terminate_backend).",
		                                    holders)
		                        : errdetail("No other session holds the write lock now.")));
	}
	error_context_stack = ctx.previous;
	AtEOXact_GUC(true, level);
}

void pgx_write_lock(const char *ref)
{
	bool isnull;
	int64 e;
	int guc;
	Oid types[1] = {BYTEAOID};
	Datum args[1];
	Assert(!writing && ref);
	write_lock_bounded();
	guc = pgx_spi_connect();
	/* One statement, after the gc lock (write_lock_bounded): the epoch, and the branch's row
	 * lock. What s.prolly_write_begin(NULL) would add, the same advisory lock, is held already;
	 * its PL/pgSQL call cost more than the rest of the statement (docs/benchmarks/sql.md, "The
	 * refs as plain statements"). */
	args[0] = PointerGetDatum(pgx_bytea(ref, strlen(ref)));
	if (SPI_execute_plan(pgx_kept_plan(&lock_plan,
	                                   "SELECT (SELECT value FROM %1$s.meta WHERE key = 'epoch'), "
	                                   "(SELECT 1 FROM %1$s.refs WHERE name = $1 FOR UPDATE)",
	                                   1, types),
	                     args, NULL, false, 0) != SPI_OK_SELECT ||
	    SPI_processed != 1)
		elog(ERROR, "prolly: taking the write lock failed");
	e = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (isnull)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
		                errmsg("prolly: the meta table of schema \"%s\" has no epoch row",
		                       pgx_schema_quoted())));
	pgx_spi_finish(guc);
	/* Under REPEATABLE READ or SERIALIZABLE the engine reads in the transaction's snapshot,
	 * which may predate a gc that has since removed what it still shows (a commit no ref named):
	 * a commit, branch or merge built on it would leave a ref naming deleted nodes. Each sweep
	 * of the store's gc deletes in a transaction that bumps the epoch (src/store/pg_gc.c), and
	 * the gc lock held now keeps new ones out, so an epoch that has not moved since the
	 * snapshot means nothing it shows was removed. */
	if (IsolationUsesXactSnapshot()) {
		uint64_t now = pgx_epoch_latest();
		if (now != (uint64_t)e)
			ereport(ERROR,
			        (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			         errmsg("prolly: a gc ran through schema \"%s\" after this transaction's "
			                "snapshot; nothing was written",
			                pgx_schema_name()),
			         errdetail("The snapshot's gc epoch is %lld, the store's %llu.", (long long)e,
			                   (unsigned long long)now),
			         errhint("Retry the transaction.")));
	}
	pgx_set_epoch((uint64_t)e);
	cache_at_epoch((uint64_t)e);
	PushCopiedSnapshot(GetTransactionSnapshot());
	write_subxid = GetCurrentSubTransactionId();
	writing = true;
}

void pgx_write_unlock(void)
{
	if (writing)
		PopActiveSnapshot();
	writing = false;
}

static int cmp_node_ptr(const void *a, const void *b)
{
	const prolly_store_node *x = *(const prolly_store_node *const *)a;
	const prolly_store_node *y = *(const prolly_store_node *const *)b;
	return memcmp(x->id.bytes, y->id.bytes, PROLLY_ID_SIZE);
}

static Datum bytea_array(Datum *elems, bool *nulls, int n)
{
	int dims[1] = {n}, lbs[1] = {1};
	return PointerGetDatum(
	    construct_md_array(elems, nulls, 1, dims, lbs, BYTEAOID, -1, false, TYPALIGN_INT));
}

/* The id (ids) or the encoding of x, and its length. */
static const void *node_field(const prolly_store_node *x, bool ids, size_t *len)
{
	*len = ids ? PROLLY_ID_SIZE : x->size;
	return ids ? (const void *)x->id.bytes : x->data;
}

/* A one-dimensional bytea[] of the ids (or encodings) of v[0..n), built in place: each element
 * is copied once, where construct_md_array would copy a bytea made first. The layout is
 * construct_md_array's for bytea (4-byte headers, int alignment, no null bitmap). */
static Datum node_array(const prolly_store_node *const *v, size_t n, bool ids)
{
	Size total = ARR_OVERHEAD_NONULLS(1), len;
	ArrayType *a;
	char *p;
	for (size_t i = 0; i < n; i++) {
		node_field(v[i], ids, &len);
		total += INTALIGN(VARHDRSZ + len);
	}
	a = palloc(total);
	SET_VARSIZE(a, total);
	a->ndim = 1;
	a->dataoffset = 0; /* no nulls */
	a->elemtype = BYTEAOID;
	ARR_DIMS(a)[0] = (int)n;
	ARR_LBOUND(a)[0] = 1;
	p = (char *)a + ARR_OVERHEAD_NONULLS(1); /* ARR_DATA_PTR with no null bitmap */
	for (size_t i = 0; i < n; i++) {
		const void *src = node_field(v[i], ids, &len);
		Size used = VARHDRSZ + len, step = INTALIGN(used);
		SET_VARSIZE(p, used);
		memcpy(VARDATA(p), src, len);
		memset(p + used, 0, step - used);
		p += step;
	}
	return PointerGetDatum(a);
}

/* Node bytes per INSERT of insert_nodes: the arrays of one statement stay far below a
 * varlena's 1 GB, and the statement's memory is freed before the next. */
#define INSERT_CHUNK_BYTES ((size_t)16 << 20)

/* Inserts the nodes v[0..n) (id order, no duplicates) into the nodes table of the call, ON
 * CONFLICT DO NOTHING, a chunk of INSERT_CHUNK_BYTES per statement, through a kept plan (not
 * through s.prolly_write, whose PL/pgSQL would copy the arrays into its variables). In SPI. */
static void insert_nodes(const prolly_store_node *const *v, size_t n)
{
	Oid types[2] = {BYTEAARRAYOID, BYTEAARRAYOID};
	SPIPlanPtr plan = pgx_kept_plan(&insert_plan, PROLLY_PG_SQL_INSERT_NODES("%s"), 2, types);
	for (size_t at = 0; at < n;) {
		size_t m = 0, bytes = 0;
		Datum args[2];
		while (at + m < n && (m == 0 || bytes + v[at + m]->size <= INSERT_CHUNK_BYTES))
			bytes += v[at + m++]->size;
		CHECK_FOR_INTERRUPTS();
		args[0] = node_array(v + at, m, true);
		args[1] = node_array(v + at, m, false);
		if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "prolly: inserting nodes failed");
		SPI_freetuptable(SPI_tuptable);
		pfree(DatumGetPointer(args[0]));
		pfree(DatumGetPointer(args[1]));
		at += m;
	}
}

/* The outcome of the compare-and-swap of u: nothing when it applied; when it lost, u's conflict
 * fields from whether the ref exists and its value cur (NULL: none), and (the first time) *rc
 * and the error message. */
static void ref_outcome(prolly_ref_update *u, bool applied, bool exists, bytea *cur, int *rc)
{
	if (applied)
		return;
	u->conflict = 1;
	u->current_exists = exists;
	if (exists && cur && VARSIZE_ANY_EXHDR(cur) == PROLLY_ID_SIZE)
		memcpy(u->current.bytes, VARDATA_ANY(cur), PROLLY_ID_SIZE);
	if (!*rc)
		*rc = prolly_set_error(PROLLY_ECONFLICT, "ref %s %s; nothing was written", u->name,
		                       exists ? "moved meanwhile" : "is absent");
}

/* A ref's compare-and-swap by the statement of PROLLY_PG_SQL_CAS for its case: 0, or
 * PROLLY_ECONFLICT with u's conflict fields set. In SPI. */
static int ref_cas(prolly_ref_update *u)
{
	static const char *const sql[3][2] = PROLLY_PG_SQL_CAS("%s");
	Oid types[3] = {BYTEAOID, BYTEAOID, BYTEAOID};
	Datum args[3];
	char nulls[4] = "   ";
	int e = (int)u->expect, rm = u->remove != 0, r, rc = 0;
	bool applied;
	Assert(e >= PROLLY_REF_EXPECT_ANY && e <= PROLLY_REF_EXPECT_VALUE);
	args[0] = PointerGetDatum(pgx_bytea(u->name, strlen(u->name)));
	args[1] = e == PROLLY_REF_EXPECT_VALUE
	              ? PointerGetDatum(pgx_bytea(u->expected.bytes, PROLLY_ID_SIZE))
	              : (Datum)0;
	nulls[1] = e == PROLLY_REF_EXPECT_VALUE ? ' ' : 'n';
	args[2] = rm ? (Datum)0 : PointerGetDatum(pgx_bytea(u->value.bytes, PROLLY_ID_SIZE));
	nulls[2] = rm ? 'n' : ' ';
	r = SPI_execute_plan(pgx_kept_plan(&cas_plans[e][rm], sql[e][rm], 3, types), args, nulls, false,
	                     0);
	if (r < 0)
		elog(ERROR, "prolly: the compare-and-swap of a ref failed: %s", SPI_result_code_string(r));
	applied = PROLLY_PG_CAS_APPLIED(e, rm, SPI_processed);
	SPI_freetuptable(SPI_tuptable);
	if (applied)
		return 0;
	if (SPI_execute_plan(pgx_kept_plan(&value_plan, PROLLY_PG_SQL_REF_VALUE("%s"), 1, types), args,
	                     NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "prolly: reading a ref failed");
	if (SPI_processed == 1) {
		bool isnull;
		Datum v = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		ref_outcome(u, false, true, isnull ? NULL : DatumGetByteaPP(v), &rc);
	} else
		ref_outcome(u, false, false, NULL, &rc);
	SPI_freetuptable(SPI_tuptable);
	return rc;
}

/* The refs of w when at most one of them can lose its compare-and-swap (a commit: its branch,
 * with its reflog entry's ref, which expects nothing): each by its statement (ref_cas), the one
 * that can lose first, so that when it loses nothing has been applied and no subtransaction is
 * needed; s.prolly_write would run one for two refs. In SPI. */
static int refs_by_cas(prolly_store_write *w, size_t fallible)
{
	int rc = ref_cas(&w->refs[fallible]); /* the one that can lose, first */
	for (size_t i = 0; i < w->n_refs && !rc; i++)
		if (i != fallible)
			rc = ref_cas(&w->refs[i]);
	return rc;
}

/* The refs of w through s.prolly_write, which moves them by compare-and-swap all or none (a
 * subtransaction when there are several). No SQL function's write has more than one ref that
 * can lose today (each moves one branch, with its reflog entry); this keeps every write the
 * engine may make all or none, as the store contract asks. In SPI. */
static int refs_by_prolly_write(prolly_store_write *w)
{
	size_t nr = w->n_refs;
	Datum *names, *expects, *expected, *removes, *values;
	bool *exp_null, *val_null;
	Datum args[8];
	char nulls[9];
	Oid types[8] = {BYTEAARRAYOID, BYTEAARRAYOID, BYTEAARRAYOID, INT4ARRAYOID,
	                BYTEAARRAYOID, BOOLARRAYOID,  BYTEAARRAYOID, INT8OID};
	int rc = 0;

	names = palloc(nr * sizeof(Datum));
	expects = palloc(nr * sizeof(Datum));
	expected = palloc(nr * sizeof(Datum));
	removes = palloc(nr * sizeof(Datum));
	values = palloc(nr * sizeof(Datum));
	exp_null = palloc0(nr * sizeof(bool));
	val_null = palloc0(nr * sizeof(bool));
	for (size_t i = 0; i < nr; i++) {
		const prolly_ref_update *u = &w->refs[i];
		names[i] = PointerGetDatum(pgx_bytea(u->name, strlen(u->name)));
		expects[i] = Int32GetDatum((int32)u->expect);
		exp_null[i] = u->expect != PROLLY_REF_EXPECT_VALUE;
		expected[i] = exp_null[i] ? (Datum)0
		                          : PointerGetDatum(pgx_bytea(u->expected.bytes, PROLLY_ID_SIZE));
		removes[i] = BoolGetDatum(u->remove != 0);
		val_null[i] = u->remove != 0;
		values[i] = val_null[i] ? (Datum)0
		                        : PointerGetDatum(pgx_bytea(u->value.bytes, PROLLY_ID_SIZE));
	}
	args[0] = (Datum)0; /* the nodes went in by insert_nodes */
	args[1] = (Datum)0;
	args[2] = bytea_array(names, NULL, (int)nr);
	args[3] = PointerGetDatum(construct_array(expects, (int)nr, INT4OID, 4, true, TYPALIGN_INT));
	args[4] = bytea_array(expected, exp_null, (int)nr);
	args[5] = PointerGetDatum(construct_array(removes, (int)nr, BOOLOID, 1, true, TYPALIGN_CHAR));
	args[6] = bytea_array(values, val_null, (int)nr);
	args[7] = (Datum)0;
	memset(nulls, ' ', sizeof(nulls));
	nulls[0] = nulls[1] = 'n';
	nulls[7] = 'n'; /* no epoch check: see the protocol above */
	nulls[8] = '\0';
	/* p_async false: synchronous_commit is the caller's (prolly_write would set it for the
	 * whole transaction); p_requires NULL: the gc lock is held (typed, as in pgx_write_lock). */
	if (SPI_execute_plan(
	        pgx_kept_plan(&write_plan,
	                      "SELECT o_epoch, o_inserted, o_applied, o_cur_exists, "
	                      "o_cur FROM %s.prolly_write($8, false, NULL::pg_catalog.bytea[], $1, $2, "
	                      "$3, $4, $5, $6, $7)",
	                      8, types),
	        args, nulls, false, 0) != SPI_OK_SELECT ||
	    SPI_processed != nr)
		elog(ERROR, "prolly: s.prolly_write returned no row per ref");
	for (size_t i = 0; i < nr; i++) {
		HeapTuple t = SPI_tuptable->vals[i];
		TupleDesc d = SPI_tuptable->tupdesc;
		bool n_app, n_ex, n_cur;
		Datum app = SPI_getbinval(t, d, 3, &n_app), ex = SPI_getbinval(t, d, 4, &n_ex),
		      cur = SPI_getbinval(t, d, 5, &n_cur);
		ref_outcome(&w->refs[i], !n_app && DatumGetBool(app), !n_ex && DatumGetBool(ex),
		            n_cur ? NULL : DatumGetByteaPP(cur), &rc);
	}
	return rc;
}

/* One store write in the caller's transaction: the nodes by insert_nodes, then the refs by
 * compare-and-swap (refs_by_cas, or refs_by_prolly_write when more than one can lose). Nodes
 * go in id order without duplicates (concurrent writers insert ids in the same order, as the
 * client store does). The nodes go first (as the client store's version 2 did): a ref whose
 * compare-and-swap fails then leaves them behind, unreferenced (the gc takes them), unless the
 * caller's transaction rolls back with the error. */
static int write_spi(prolly_store_write *w)
{
	size_t nn = 0, n_fallible = 0, fallible = 0;
	const prolly_store_node **sorted = NULL;
	int rc = 0, guc;

	if (w->n_nodes) {
		sorted = palloc(w->n_nodes * sizeof(*sorted));
		for (size_t i = 0; i < w->n_nodes; i++)
			sorted[i] = &w->nodes[i];
		qsort(sorted, w->n_nodes, sizeof(*sorted), cmp_node_ptr);
		for (size_t i = 0; i < w->n_nodes; i++)
			if (!nn || memcmp(sorted[nn - 1]->id.bytes, sorted[i]->id.bytes, PROLLY_ID_SIZE))
				sorted[nn++] = sorted[i];
	}
	for (size_t i = 0; i < w->n_refs; i++)
		if (w->refs[i].expect != PROLLY_REF_EXPECT_ANY) {
			n_fallible++;
			fallible = i;
		}
	wrote = true; /* from here on, an abort may take rows the cache has seen */
	guc = pgx_spi_connect();
	if (nn)
		insert_nodes(sorted, nn);
	if (n_fallible > 1)
		rc = refs_by_prolly_write(w);
	else if (w->n_refs)
		rc = refs_by_cas(w, n_fallible ? fallible : 0);
	pgx_spi_finish(guc);
	/* What this call wrote is visible to its later reads. */
	CommandCounterIncrement();
	UpdateActiveSnapshotCommandId();
	return rc;
}

int pgx_store_write(prolly_store *st, prolly_store_write *w)
{
	volatile int rc = 0;
	(void)st;
	if (pgx_failed())
		return PROLLY_ESTORE;
	w->current_epoch = pgx_epoch();
	if (!w->n_nodes && !w->n_refs)
		return 0; /* the engine asks for the epoch: the one read with the write lock or meta */
	if (!writing)
		return prolly_set_error(PROLLY_EUNSUPPORTED,
		                        "prolly: a write outside a SQL write function");
	PGX_STORE_CALL(rc, write_spi(w));
	return rc;
}

void pgx_write_reset(void)
{
	writing = false; /* an error left a write call: its snapshot went with the abort */
}

void pgx_write_register(void)
{
	RegisterXactCallback(on_xact, NULL);
	RegisterSubXactCallback(on_subxact, NULL);
}
