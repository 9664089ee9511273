/*
 * two_schemas.c - run by tests/pgbouncer.sh against a pgbouncer in pool_mode = transaction:
 * store A (schema sa) and store B (schema sb) of one database, one connection each. A prepares
 * its statements on a server session; a holder keeps that session in a transaction while B
 * prepares its own on a second one; then A reads and writes its branch main, and the pooler
 * hands it B's session. Before statements were named per connection, A ran B's statements
 * there: it read sb's main and committed into sb. Now A must read and write its own schema or be
 * refused naming the pooler; B's main must not move.
 * A also makes a commit on its own session before the holder comes (its head read, its edit)
 * and publishes it once the pooler hands it B's session: the write's statement, not prepared
 * yet, is parsed after the session guard, which fails there. That refusal must name the pooler
 * too (the write's one-statement path printed the guard's bare cast error instead).
 *
 * Usage: two_schemas DIRECT_URL POOLED_URL. Prints what it saw; exit 0 when right, 1 when not.
 */
#include <libpq-fe.h>
#include <prolly.h>
#include <stdio.h>
#include <string.h>

/* An engine handle on a store of schema s on url with one connection. */
static int open_db(prolly_db **db, const char *url, const char *s)
{
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	prolly_store *st = NULL;
	o.schema = s;
	o.pool_size = 1;
	int rc = prolly_store_pg_open(&st, url, &o);
	return rc ? rc : prolly_db_new(db, st, NULL);
}

/* Commits key = value to main of schema s through url; *out receives the commit. */
static int put(prolly_id *out, const char *url, const char *s, const char *key)
{
	prolly_db *db = NULL;
	prolly_edit e = {PROLLY_PUT, {key, strlen(key)}, {"v", 1}};
	int rc = open_db(&db, url, s);
	if (rc == 0)
		rc = prolly_commit_edits(out, db, "main", &e, 1, key);
	prolly_close(db);
	return rc;
}

static int refused(int rc)
{
	return rc != 0 && strstr(prolly_last_error(), "pool_mode = session");
}

int main(int argc, char **argv)
{
	prolly_db *da = NULL, *db = NULL;
	prolly_id ha, hb, got, c;
	PGconn *hold = NULL;
	prolly_commit *hc = NULL;
	prolly_txn *t = NULL;
	int rc, bad = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: two_schemas DIRECT_URL POOLED_URL\n");
		return 2;
	}
	if (put(&ha, argv[1], "sa", "a") || put(&hb, argv[1], "sb", "b")) {
		printf("setup: %s\n", prolly_last_error());
		return 1;
	}
	if ((rc = open_db(&da, argv[2], "sa")) || (rc = prolly_branch_head(&got, da, "main"))) {
		printf("A before: %s\n", prolly_last_error());
		goto cleanup;
	}
	/* A's commit, made while the pooler still gives A its own session: published below. */
	prolly_edit e3 = {PROLLY_PUT, {"a3", 2}, {"v", 1}};
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = "refs/heads/main";
	u.expect = PROLLY_REF_EXPECT_VALUE;
	if ((rc = prolly_branch_commit(&hc, da, "main")) || (rc = prolly_txn_begin(&t, da)) ||
	    (rc = prolly_edit_tree(&got, t, &hc->tree, &e3, 1)) ||
	    (rc = prolly_commit_create(&u.value, t, &got, &hc->id, 1, hc->time_us + 1, "a3"))) {
		printf("A's commit: %s\n", prolly_last_error());
		goto cleanup;
	}
	u.expected = hc->id;
	if ((rc = prolly_txn_set_ref(t, &u))) {
		printf("A's commit: %s\n", prolly_last_error());
		goto cleanup;
	}
	hold = PQconnectdb(argv[2]);
	PQclear(PQexec(hold, "BEGIN"));
	PGresult *r = PQexec(hold, "SELECT 1");
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		printf("holder: %s\n", PQerrorMessage(hold));
		PQclear(r);
		goto cleanup;
	}
	PQclear(r);
	if ((rc = open_db(&db, argv[2], "sb")) && !refused(rc)) {
		printf("B: %s\n", prolly_last_error());
		goto cleanup;
	}
	bad = 0;
	rc = prolly_branch_head(&got, da, "main");
	if (rc == 0 && !prolly_id_equal(&got, &ha)) {
		printf("A read another schema's main\n");
		bad = 1;
	} else if (rc && !refused(rc)) {
		printf("A's read failed otherwise: %s\n", prolly_last_error());
		bad = 1;
	} else if (rc) {
		printf("A's read refused: %s\n", prolly_last_error());
	}
	prolly_edit e = {PROLLY_PUT, {"a2", 2}, {"v", 1}};
	rc = prolly_commit_edits(&c, da, "main", &e, 1, "a2");
	if (rc && !refused(rc)) {
		printf("A's write failed otherwise: %s\n", prolly_last_error());
		bad = 1;
	} else if (rc) {
		printf("A's write refused: %s\n", prolly_last_error());
	}
	rc = prolly_txn_commit(t, NULL, 0);
	if (rc && !refused(rc)) {
		printf("A's prepared commit failed otherwise: %s\n", prolly_last_error());
		bad = 1;
	} else if (rc) {
		printf("A's prepared commit refused: %s\n", prolly_last_error());
	} else {
		printf("A's prepared commit landed (in its own schema: B's main is checked below)\n");
	}
	PQclear(PQexec(hold, "COMMIT"));
	PQfinish(hold);
	hold = NULL;
	/* B's main, read directly, is where B put it. */
	prolly_close(db);
	db = NULL;
	if (open_db(&db, argv[1], "sb") || prolly_branch_head(&got, db, "main") ||
	    !prolly_id_equal(&got, &hb)) {
		printf("schema sb's main moved (or cannot be read): A wrote into it\n");
		bad = 1;
	}
	printf("%s\n", bad ? "wrong" : "each store kept to its schema or was refused");
cleanup:
	if (hold)
		PQfinish(hold);
	prolly_txn_free(t);
	prolly_commit_free(hc);
	prolly_close(db);
	prolly_close(da);
	return bad;
}
