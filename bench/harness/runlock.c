/*
 * runlock.c - one harness run per PostgreSQL schema at a time.
 *
 * Two runs against the same server and schema (from two result directories; one directory is
 * kept to one run by hr_open's lock) would drop and fill each other's tables in the middle of
 * each other's cells: rows that fail validation at best. A run therefore holds, on a connection
 * of its own for its whole length, the session advisory lock (RUN_LOCK_CLASS, hashtext(schema));
 * the server releases it when that connection ends, however the run ends. The class is one the
 * store's own locks do not use (1886547820-1886547822, src/store/pg_int.h). The release comes a
 * moment after the client closes (when its backend exits), so a run started right after another
 * one ended tries for up to LOCK_WAIT_MS before it says the schema is taken: a test that locked
 * again right after closing the first lock's connection lost that race once, in CI.
 *
 * Holding it, the run also owns what a killed run on the same schema left behind: the prolly
 * extension, which a suite's sql contender installs in the run's schema or the insert suite's
 * (SCHEMA_ins_sql, hins_schema) and drops at the suite's end. Left installed, every later suite
 * needing it elsewhere refused to run until someone dropped it by hand.
 */
#include "harness.h"

#include "pgconn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUN_LOCK_CLASS 1886547830
#define LOCK_WAIT_MS 2000  /* how long a run waits for the lock of a run that just ended */
#define INS_SCHEMA_BASE 40 /* hins_schema keeps this much of the run's schema: "%.40s_ins_%s" */

/* What the suites add to the run's schema for the schemas they drop and fill: insert
 * (hins_schema), scale (SCHEMA_scale and its plain baseline) and tpcb. None ends another, so two
 * run schemas can share a derived name only when one is the other plus one of these. */
static const char *const derived_suffix[] = {"_ins_plain",   "_ins_client", "_ins_sql", "_scale",
                                             "_scale_plain", "_tpcb",       "_pgbench"};

/*
 * 0 when no other run can reach the schemas of a run on schema, else -3 with err saying why: the
 * run lock is taken on the whole name, but the schemas are named by what is left of it. Over
 * INS_SCHEMA_BASE bytes, SCHEMA_ins_* keeps only the first 40 of them (and SCHEMA_pgbench is
 * over PostgreSQL's 63 bytes past 55, cut there by the server), so two runs on names that differ
 * later held two locks and dropped each other's tables. A name ending in a derived suffix is
 * the derived schema of the run on the name without it.
 */
static int schema_name_check(const char *schema, char *err, size_t errn)
{
	size_t n = strlen(schema);
	if (n == 0 || n > INS_SCHEMA_BASE) {
		bench_seterr(err, errn,
		             "schema \"%.64s\" is empty or longer than %d bytes (the suites' schemas "
		             "add up to 12 bytes to it within PostgreSQL's 63; nothing touched)",
		             schema, INS_SCHEMA_BASE);
		return -3;
	}
	for (size_t i = 0; i < sizeof(derived_suffix) / sizeof(derived_suffix[0]); i++) {
		size_t k = strlen(derived_suffix[i]);
		if (n >= k && strcmp(schema + n - k, derived_suffix[i]) == 0) {
			bench_seterr(err, errn,
			             "schema \"%s\" ends in \"%s\", the name of a schema a run on \"%.*s\" "
			             "drops and fills (nothing touched)",
			             schema, derived_suffix[i], (int)(n - k), schema);
			return -3;
		}
	}
	return 0;
}

int h_schema_lock(PGconn **out, const char *url, const char *schema, char *err, size_t errn)
{
	PGconn *c = NULL;
	PGresult *res = NULL;
	char *lit = NULL, sql[320];
	int rc = -1;
	*out = NULL;
	if ((rc = schema_name_check(schema, err, errn)) != 0)
		return rc;
	rc = -1;
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
	for (int waited = 0;; waited += 50) {
		PQclear(res);
		res = NULL;
		if (bench_pg_exec(c, sql, &res) != 0) {
			bench_seterr(err, errn, "%s", prolly_last_error());
			goto cleanup;
		}
		/* bench_pg_exec asks for binary results: a boolean is one byte, 1 for true. */
		if ((PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 1) || waited >= LOCK_WAIT_MS)
			break;
		struct timespec pause = {0, 50 * 1000000L};
		nanosleep(&pause, NULL);
	}
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

int h_schema_reclaim(struct pg_conn *c, const char *schema, char *note, size_t n)
{
	char in[128];
	size_t base = strlen(schema) < INS_SCHEMA_BASE ? strlen(schema) : INS_SCHEMA_BASE;
	note[0] = '\0';
	if (bench_pg_ext_schema(in, sizeof(in), c) != 0)
		return -1;
	if (!in[0] || (strcmp(in, schema) != 0 &&
	               (strncmp(in, schema, base) != 0 || strncmp(in + base, "_ins_", 5) != 0)))
		return 0; /* none, or not one this harness installs: left alone */
	if (bench_pg_exec(c, "DROP EXTENSION prolly", NULL) != 0)
		return -1;
	snprintf(note, n, "dropped the prolly extension an earlier run left in schema \"%.64s\"", in);
	return 0;
}
