/*
 * test_pg_cas.c - a ref's compare-and-swap as plain statements (PROLLY_PG_SQL_CAS and
 * PROLLY_PG_CAS_APPLIED in prolly/pg_sql.h, which the extension runs) against the schema's
 * s.prolly_ref_cas (which the library's store runs): the same outcome, the same current value
 * after a loss and the same refs table after, for every expectation, removal and state of the
 * ref, on a real server.
 */
#include "lib/pgt.h"
#include "prolly/pg_sql.h"
#include "ptest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A ref's state before a compare-and-swap: absent, holding the expected value, holding another. */
enum { ABSENT, SAME, OTHER, N_STATES };

#define NAME "refs/heads/cas"
#define EXPECTED                                                                                   \
	"\\x"                                                                                          \
	"aa"
#define OTHER_VALUE                                                                                \
	"\\x"                                                                                          \
	"bb"
#define NEW_VALUE                                                                                  \
	"\\x"                                                                                          \
	"cc"

/* What one compare-and-swap did: whether it applied, and when it did not, whether the ref
 * exists and its value; then the table's row for the name ("" when none). */
typedef struct outcome {
	int applied, exists;
	char cur[80], after[80];
} outcome;

/* Begins a transaction and puts the ref into state. */
static void set_state(PGconn *c, const char *schema, int state)
{
	char q[512];
	PT_CHECK(pgt_sql_state(c, "BEGIN", ""));
	snprintf(q, sizeof(q), "DELETE FROM \"%s\".refs WHERE name = '" NAME "'::bytea", schema);
	PT_CHECK(pgt_sql_state(c, q, ""));
	if (state != ABSENT) {
		snprintf(q, sizeof(q),
		         "INSERT INTO \"%s\".refs (name, value) VALUES ('" NAME "'::bytea, '%s'::bytea)",
		         schema, state == SAME ? EXPECTED : OTHER_VALUE);
		PT_CHECK(pgt_sql_state(c, q, ""));
	}
}

/* The row of the name as text, and the transaction rolled back. */
static void after_and_rollback(PGconn *c, const char *schema, outcome *o)
{
	char q[256];
	snprintf(q, sizeof(q),
	         "SELECT coalesce((SELECT value::text FROM \"%s\".refs WHERE name = '" NAME
	         "'::bytea), '')",
	         schema);
	pgt_sql_text(c, q, o->after, sizeof(o->after));
	PT_CHECK(pgt_sql_state(c, "ROLLBACK", ""));
}

static outcome by_function(PGconn *c, const char *schema, int expect, int remove, int state)
{
	outcome o = {0};
	char q[512];
	PGresult *r;
	set_state(c, schema, state);
	snprintf(q, sizeof(q),
	         "SELECT applied, cur_exists, coalesce(cur::text, '') FROM \"%s\".prolly_ref_cas('" NAME
	         "'::bytea, %d, %s, %s, %s)",
	         schema, expect, expect == PROLLY_REF_EXPECT_VALUE ? "'" EXPECTED "'::bytea" : "NULL",
	         remove ? "true" : "false", remove ? "NULL" : "'" NEW_VALUE "'::bytea");
	r = PQexec(c, q);
	PT_CHECKF(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1, "%s: %s", q,
	          PQerrorMessage(c));
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
		o.applied = PQgetvalue(r, 0, 0)[0] == 't';
		if (!o.applied) {
			o.exists = PQgetvalue(r, 0, 1)[0] == 't';
			snprintf(o.cur, sizeof(o.cur), "%s", PQgetvalue(r, 0, 2));
		}
	}
	PQclear(r);
	after_and_rollback(c, schema, &o);
	return o;
}

static outcome by_statement(PGconn *c, const char *schema, int expect, int remove, int state)
{
	static const char *const sql[3][2] = PROLLY_PG_SQL_CAS("\"%1$s\"");
	outcome o = {0};
	char q[512];
	const char *params[3] = {NAME, expect == PROLLY_REF_EXPECT_VALUE ? EXPECTED : NULL,
	                         remove ? NULL : NEW_VALUE};
	const Oid types[3] = {17, 17, 17}; /* bytea */
	PGresult *r;
	long long rows;
	set_state(c, schema, state);
	snprintf(q, sizeof(q), sql[expect][remove], schema);
	r = PQexecParams(c, q, 3, types, params, NULL, NULL, 0);
	PT_CHECKF(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK,
	          "%s: %s", q, PQerrorMessage(c));
	rows = PQresultStatus(r) == PGRES_TUPLES_OK ? PQntuples(r) : atoll(PQcmdTuples(r));
	PQclear(r);
	o.applied = PROLLY_PG_CAS_APPLIED(expect, remove, rows);
	if (!o.applied) {
		snprintf(q, sizeof(q), PROLLY_PG_SQL_REF_VALUE("\"%s\""), schema);
		r = PQexecParams(c, q, 1, types, params, NULL, NULL, 0);
		PT_CHECKF(PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", q, PQerrorMessage(c));
		o.exists = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
		if (o.exists)
			snprintf(o.cur, sizeof(o.cur), "%s", PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	after_and_rollback(c, schema, &o);
	return o;
}

/* Every expectation, removal and state: the statements and the function agree; and a sample of
 * the rules themselves, so that agreeing in error cannot pass. */
PT_TEST(statements_agree_with_prolly_ref_cas)
{
	static const char *const state_name[N_STATES] = {"absent", "same", "other"};
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PGconn *c = pgt_admin();
	int applied = 0;
	PT_REQUIRE(st && c);
	for (int e = PROLLY_REF_EXPECT_ANY; e <= PROLLY_REF_EXPECT_VALUE; e++)
		for (int rm = 0; rm <= 1; rm++)
			for (int s = 0; s < N_STATES; s++) {
				outcome f = by_function(c, schema, e, rm, s);
				outcome x = by_statement(c, schema, e, rm, s);
				PT_CHECKF(f.applied == x.applied && f.exists == x.exists && !strcmp(f.cur, x.cur) &&
				              !strcmp(f.after, x.after),
				          "expect %d, remove %d, %s: function applied %d exists %d cur '%s' "
				          "after '%s'; statement %d %d '%s' '%s'",
				          e, rm, state_name[s], f.applied, f.exists, f.cur, f.after, x.applied,
				          x.exists, x.cur, x.after);
				applied += x.applied;
			}
	/* ANY always applies (6); ABSENT: a create of an absent ref, a removal of an absent one (2);
	 * VALUE: a move or removal of the same value (2). */
	PT_CHECK(applied == 10);
	outcome lost = by_statement(c, schema, PROLLY_REF_EXPECT_VALUE, 0, OTHER);
	PT_CHECK(!lost.applied && lost.exists && !strcmp(lost.cur, OTHER_VALUE) &&
	         !strcmp(lost.after, OTHER_VALUE));
	outcome moved = by_statement(c, schema, PROLLY_REF_EXPECT_VALUE, 0, SAME);
	PT_CHECK(moved.applied && !strcmp(moved.after, NEW_VALUE));
	PQfinish(c);
	prolly_store_close(st);
}

PGT_MAIN(NULL, NULL)
