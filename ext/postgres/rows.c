/*
 * rows.c - what the SQL read functions share about their results: rows into the tuplestore of a
 * materialized set-returning function, emitted from engine callbacks under the guard's rule 2
 * (prolly_ext.h), a max_rows argument, commit messages as text and commit times as timestamptz.
 *
 * A tuplestore keeps work_mem in memory and spills the rest to a temporary file, so a function
 * that emits its rows here holds bounded memory whatever it returns.
 */
#include "prolly_ext.h"

#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/memutils.h"

void pgx_rows_init(pgx_rows *r, FunctionCallInfo fcinfo)
{
	InitMaterializedSRF(fcinfo, 0);
	r->rsi = (ReturnSetInfo *)fcinfo->resultinfo;
	r->row_cxt = AllocSetContextCreate(CurrentMemoryContext, "prolly row", ALLOCSET_SMALL_SIZES);
	r->left = -1;
}

void pgx_rows_put(pgx_rows *r, Datum *values, bool *nulls)
{
	tuplestore_putvalues(r->rsi->setResult, r->rsi->setDesc, values, nulls);
}

int pgx_rows_emit(pgx_rows *r, pgx_row_fill_fn fill, void *payload, const void *item)
{
	MemoryContext cxt = CurrentMemoryContext;
	volatile int rc = 0;
	PG_TRY();
	{
		Datum v[PGX_ROW_MAX];
		bool n[PGX_ROW_MAX];
		CHECK_FOR_INTERRUPTS();
		MemoryContextSwitchTo(r->row_cxt);
		fill(payload, item, v, n);
		pgx_rows_put(r, v, n);
		MemoryContextSwitchTo(cxt);
		MemoryContextReset(r->row_cxt);
	}
	PG_CATCH();
	{
		rc = pgx_keep_error(cxt);
	}
	PG_END_TRY();
	return rc;
}

int pgx_rows_counted(pgx_rows *r, pgx_row_fill_fn fill, void *payload, const void *item)
{
	int rc;
	if (r->left == 0)
		return 1; /* enough: stop the walk */
	rc = pgx_rows_emit(r, fill, payload, item);
	if (rc == 0 && r->left > 0)
		r->left--;
	return rc;
}

int64 pgx_max_rows_arg(FunctionCallInfo fcinfo, int argno)
{
	int64 max;
	if (PG_ARGISNULL(argno))
		return -1;
	max = PG_GETARG_INT32(argno);
	if (max < 0)
		ereport(ERROR,
		        (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		         errmsg("prolly: max_rows must not be negative (got %lld)", (long long)max)));
	return max;
}

Datum pgx_message_datum(const char *msg)
{
	int len = (int)strlen(msg), enc = GetDatabaseEncoding();
	StringInfoData s;
	if (pg_verifymbstr(msg, len, true))
		return PointerGetDatum(cstring_to_text_with_len(msg, len));
	initStringInfo(&s);
	for (int i = 0; i < len;) {
		int l = pg_encoding_verifymbchar(enc, msg + i, len - i);
		if (l > 0) {
			appendBinaryStringInfo(&s, msg + i, l);
			i += l;
		} else {
			appendStringInfo(&s, "\\x%02x", (unsigned char)msg[i++]);
		}
	}
	return PointerGetDatum(cstring_to_text_with_len(s.data, s.len));
}

TimestampTz pgx_timestamp_of(int64_t unix_us)
{
	const int64 shift = (int64)(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
	TimestampTz t;
	if (unix_us < MIN_TIMESTAMP + shift) {
		TIMESTAMP_NOBEGIN(t);
		return t;
	}
	return (TimestampTz)(unix_us - shift);
}
