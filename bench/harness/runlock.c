/*
 * runlock.c - one harness run per PostgreSQL schema at a time.
 *
 * Two runs against the same server and schema (from two result directories; one directory is
 * kept to one run by hr_open's lock) would drop and fill each other's tables in the middle of
 * each other's cells: rows that fail validation at best. A run therefore holds, on a connection
 * of its own for its whole length, the session advisory lock (RUN_LOCK_CLASS, hashtext(schema));
 * the server releases it when that connection ends, however the run ends. The class is one the
 * store's own locks do not use (1886547820-1886547822, src/store/pg_int.h).
 */
#include "harness.h"

#include "pgconn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUN_LOCK_CLASS 1886547830

int h_schema_lock(PGconn **out, const char *url, const char *schema, char *err, size_t errn)
{
	PGconn *c = NULL;
	PGresult *res = NULL;
	char *lit = NULL, sql[320];
	int rc = -1;
	*out = NULL;
	if (bench_pg_connect(&c, url) != 0) {
		bench_seterr(err, errn, "%s", prolly_last_error());
		goto cleanup;
	}
	if (!(lit = PQescapeLiteral(c, schema, strlen(schema)))) {
		bench_seterr(err, errn, "quoting the schema name: %s", PQerrorMessage(c));
		goto cleanup;
	}
	snprintf(sql, sizeof(sql), "SELECT pg_try_advisory_lock(%d, hashtext(%.256s))", RUN_LOCK_CLASS,
	         lit);
	if (bench_pg_exec(c, sql, &res) != 0) {
		bench_seterr(err, errn, "%s", prolly_last_error());
		goto cleanup;
	}
	/* bench_pg_exec asks for binary results: a boolean is one byte, 1 for true. */
	if (PQntuples(res) != 1 || PQgetvalue(res, 0, 0)[0] != 1) {
		bench_seterr(err, errn,
		             "another harness run is using schema \"%.64s\" on this server (nothing "
		             "touched; --schema NAME picks another)",
		             schema);
		rc = -2;
		goto cleanup;
	}
	*out = c;
	c = NULL;
	rc = 0;
cleanup:
	PQclear(res);
	PQfreemem(lit);
	PQfinish(c);
	return rc;
}
