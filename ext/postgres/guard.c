/*
 * guard.c - PostgreSQL errors and engine return codes, kept apart (rules in prolly_ext.h).
 *
 * PostgreSQL reports an error by longjmp to the innermost PG_TRY (or to the top of the
 * statement), which would skip the engine's frames and leak what they hold. So the store
 * callbacks catch every error (PG_CATCH), keep a copy here, clear the error state and return
 * PROLLY_ESTORE; the engine unwinds normally, freeing what it allocated; the caller frees its
 * engine objects and calls pgx_check(), which raises the kept error again, unchanged. Between
 * the catch and the raise nothing touches the database: pgx_failed() makes every later callback
 * return at once.
 */
#include "prolly_ext.h"

#include "miscadmin.h"

#include "mb/pg_wchar.h"
#include "utils/elog.h"
#include "utils/memutils.h"

static ErrorData *kept; /* in TopTransactionContext's child below, or NULL */
static MemoryContext kept_cxt;

void pgx_begin(void)
{
	kept = NULL;
	if (kept_cxt) {
		MemoryContextDelete(kept_cxt);
		kept_cxt = NULL;
	}
}

int pgx_failed(void)
{
	return kept != NULL;
}

int pgx_keep_error(MemoryContext cxt)
{
	ErrorData *e;
	/* CopyErrorData must not run in ErrorContext; TopMemoryContext outlives the transaction, and
	 * the copy is dropped by the next pgx_begin or when it is raised again. */
	if (!kept_cxt)
		kept_cxt = AllocSetContextCreate(TopMemoryContext, "prolly kept error",
		                                 ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(kept_cxt);
	e = CopyErrorData();
	FlushErrorState();
	MemoryContextSwitchTo(cxt);
	if (!kept)
		kept = e; /* the first error is the cause; later ones are consequences */
	return prolly_set_error(PROLLY_ESTORE, "postgres: %s", e->message ? e->message : "error");
}

int pgx_interrupt(void *payload)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile int rc = 0;
	(void)payload;
	if (pgx_failed())
		return PROLLY_ESTORE;
	if (!INTERRUPTS_PENDING_CONDITION())
		return 0;
	PG_TRY();
	{
		CHECK_FOR_INTERRUPTS();
	}
	PG_CATCH();
	{
		rc = pgx_keep_error(cxt);
	}
	PG_END_TRY();
	return rc;
}

int pgx_sqlstate(int rc)
{
	switch (rc) {
	case PROLLY_ENOTFOUND: return ERRCODE_UNDEFINED_OBJECT;                /* 42704 */
	case PROLLY_EINVAL: return ERRCODE_INVALID_PARAMETER_VALUE;            /* 22023 */
	case PROLLY_ETOOBIG: return ERRCODE_PROGRAM_LIMIT_EXCEEDED;            /* 54000 */
	case PROLLY_ECORRUPT: return ERRCODE_DATA_CORRUPTED;                   /* XX001 */
	case PROLLY_ENOMEM: return ERRCODE_OUT_OF_MEMORY;                      /* 53200 */
	case PROLLY_EVERSION: return ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE; /* 55000 */
	case PROLLY_EPRUNED: return ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;  /* 55000 */
	case PROLLY_EUNSUPPORTED: return ERRCODE_FEATURE_NOT_SUPPORTED;        /* 0A000 */
	case PROLLY_ECONFLICT: return ERRCODE_T_R_SERIALIZATION_FAILURE;       /* 40001 */
	case PROLLY_EMERGE: return PGX_ERRCODE_MERGE_CONFLICT;                 /* PY001 */
	default: return ERRCODE_INTERNAL_ERROR;                                /* XX000 */
	}
}

void pgx_check(int rc, const char *what)
{
	if (kept) {
		ErrorData *e = kept;
		kept = NULL;
		/* ReThrowError copies e into the error state; kept_cxt is dropped by the next
		 * pgx_begin (a backend keeps at most one such small context). */
		ReThrowError(e);
	}
	if (rc >= 0 || rc == PROLLY_ITEROVER)
		return;
	ereport(ERROR,
	        (errcode(pgx_sqlstate(rc)), errmsg("prolly: %s: %s", what, pgx_engine_message())));
}

char *pgx_shown(const char *s)
{
	size_t n = strlen(s);
	int cut;
	if (n <= PGX_SHOWN_MAX)
		return pstrdup(s);
	cut = pg_mbcliplen(s, (int)n, PGX_SHOWN_MAX); /* on a character boundary */
	return psprintf("%.*s... (%zu bytes)", cut, s, n);
}

char *pgx_engine_message(void)
{
	char *m = pstrdup(prolly_last_error());
	int enc = GetDatabaseEncoding(), n = (int)strlen(m);
	for (int i = 0; i < n;) {
		int l = pg_encoding_verifymbchar(enc, m + i, n - i);
		if (l > 0) {
			i += l;
			continue;
		}
		m[i++] = '?';
	}
	return m;
}
