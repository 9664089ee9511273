/*
 * test_pg_schema.c - the PostgreSQL store's schema against a real server: versions (a version-1
 * schema used as it is, then migrated; no creation where it is refused), the version-4 check of
 * every node's hash (a poisoned row refused even to the owner, old rows validated, the
 * migration's lock bounded), reader, writer and gc roles with exactly the documented grants, a
 * runtime role with least privileges, passwords kept out of every message, and planted functions
 * and operators that neither the store's statements nor the schema's functions run. The server and
 * what the programs share: tests/lib/pgt.h.
 */
#include "lib/model.h"
#include "lib/pgt.h"
#include "prolly/pg_sql.h"
#include "ptest.h"

#include <openssl/sha.h>
#include <stdlib.h>
#include <unistd.h>

/* main's tree holds key (one byte) with the one-byte value want. */
static void main_holds(prolly_db *db, const char *key, char want)
{
	prolly_commit *c = NULL;
	PT_CHECK_RC(prolly_branch_commit(&c, db, "main"), 0);
	if (c) {
		prolly_buf out = PROLLY_BUF_INIT;
		PT_CHECK_RC(prolly_get(&out, db, &c->tree, key, 1), 0);
		PT_CHECK(out.size == 1 && out.ptr[0] == want);
		prolly_buf_dispose(&out);
		prolly_commit_free(c);
	}
}

/* ---- schema ----------------------------------------------------------------------------------- */

PT_TEST(schema_versions_and_no_create)
{
	const char *schema = pgt_new_schema();
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	o.no_create = 1;
	prolly_store *st = NULL;
	PT_CHECK_RC(prolly_store_pg_open(&st, pgt_url, &o), PROLLY_ENOTFOUND);
	PT_CHECK(strstr(prolly_last_error(), "prolly init") != NULL);
	o.no_create = 0;
	PT_REQUIRE(prolly_store_pg_open(&st, pgt_url, &o) == 0);
	PT_CHECK_RC(prolly_store_pg_init(st), 0); /* idempotent */
	prolly_store_close(st);
	st = NULL;
	o.no_create = 1;
	PT_REQUIRE(prolly_store_pg_open(&st, pgt_url, &o) == 0);
	/* Opening a current schema is one round trip: the version read, the session set up and
	 * every statement prepared in one pipeline (two before: the version read alone first). */
	prolly_pg_counters oc;
	PT_CHECK_RC(prolly_store_pg_counters(st, &oc), 0);
	PT_CHECKF(oc.round_trips == 1 && oc.connects == 1, "%llu round trips, %llu connects",
	          (unsigned long long)oc.round_trips, (unsigned long long)oc.connects);
	/* And a handle on it none: prolly_db_new learns the gc epoch the version read brought
	 * (one round trip more before). The handle owns the store from here. */
	prolly_db *db = NULL;
	PT_REQUIRE(prolly_db_new(&db, st, NULL) == 0);
	PT_CHECK_RC(prolly_store_pg_counters(st, &oc), 0);
	PT_CHECKF(oc.round_trips == 1, "%llu round trips with the handle",
	          (unsigned long long)oc.round_trips);
	prolly_close(db);
	st = NULL;
	PGconn *a = pgt_admin();
	PT_REQUIRE(a);
	char q[256];
	snprintf(q, sizeof(q), "UPDATE \"%s\".meta SET value = 8 WHERE key = 'schema_version'", schema);
	pgt_sql1(a, q);
	PT_CHECK_RC(prolly_store_pg_open(&st, pgt_url, &o), PROLLY_EVERSION);
	printf("# newer schema: %s\n", prolly_last_error());
	/* Version 7 is version 6 of another node size: without a valid node_size row it is
	 * damaged, whatever the open may do (no_create or not). */
	snprintf(q, sizeof(q), "UPDATE \"%s\".meta SET value = 7 WHERE key = 'schema_version'", schema);
	pgt_sql1(a, q);
	PT_CHECK_RC(prolly_store_pg_open(&st, pgt_url, &o), PROLLY_ECORRUPT);
	printf("# version 7 without node_size: %s\n", prolly_last_error());
	snprintf(q, sizeof(q), "INSERT INTO \"%s\".meta VALUES ('node_size', 1000)", schema);
	pgt_sql1(a, q);
	PT_CHECK_RC(prolly_store_pg_open(&st, pgt_url, &o), PROLLY_ECORRUPT);
	snprintf(q, sizeof(q), "UPDATE \"%s\".meta SET value = 2048 WHERE key = 'node_size'", schema);
	pgt_sql1(a, q);
	PT_CHECK_RC(prolly_store_pg_open(&st, pgt_url, &o), 0);
	PT_CHECK(prolly_db_node_size(NULL) == 0);
	PT_CHECK(st && st->node_size == 2048);
	prolly_store_close(st);
	PQfinish(a);
}

/* Turns a fresh schema back into a version-1 one, as an older library created it. */
static void downgrade(PGconn *a, const char *schema)
{
	char q[512];
	snprintf(q, sizeof(q),
	         "DROP FUNCTION \"%s\".prolly_write(bigint, boolean, bytea[], bytea[], bytea[], "
	         "bytea[], int[], bytea[], boolean[], bytea[]); UPDATE \"%s\".meta SET value = 1 "
	         "WHERE key = 'schema_version'; ALTER TABLE \"%s\".nodes DROP CONSTRAINT IF EXISTS "
	         "nodes_id_is_sha256",
	         schema, schema, schema);
	pgt_sql1(a, q);
}

static prolly_store *open_opt(const char *conninfo, const char *schema, int no_create)
{
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	o.no_create = no_create;
	prolly_store *st = NULL;
	if (prolly_store_pg_open(&st, conninfo, &o)) {
		fprintf(stderr, "  open failed: %s\n", prolly_last_error());
		return NULL;
	}
	return st;
}

/* One node and a ref move from *head (NULL: absent) to that node; returns the statements. */
static uint64_t commit_one(prolly_store *st, unsigned tag, unsigned i, prolly_id *head, int *rc)
{
	pgt_tn t;
	pgt_tn_make(&t, tag, i);
	prolly_ref_update u = pgt_upd(
	    "refs/heads/m", head ? PROLLY_REF_EXPECT_VALUE : PROLLY_REF_EXPECT_ABSENT, head, &t.sn.id);
	pgt_cost_begin(st);
	*rc = pgt_write1(st, &t.sn, 1, &u);
	pgt_cost k = pgt_cost_end(st);
	if (*rc == 0 && head)
		*head = t.sn.id;
	return k.stmts;
}

PT_TEST(schema_v1_keeps_working_and_migrates)
{
	const char *schema = pgt_new_schema();
	PGconn *a = pgt_admin();
	PT_REQUIRE(a);
	prolly_store *st = open_opt(pgt_url, schema, 0);
	PT_REQUIRE(st);
	PT_CHECK(pgt_schema_version(a, schema) == 6);
	prolly_store_close(st);
	downgrade(a, schema);
	PT_REQUIRE(pgt_schema_version(a, schema) == 1);

	/* no_create: used as it is, through the version-1 pipeline. */
	st = open_opt(pgt_url, schema, 1);
	PT_REQUIRE(st);
	PT_CHECK(pgt_schema_version(a, schema) == 1);
	prolly_id head = pgt_tn_id(26, 0);
	int rc;
	uint64_t n = commit_one(st, 26, 0, NULL, &rc);
	PT_CHECK_RC(rc, 0);
	/* BEGIN, prolly_write_begin, INSERT, prolly_ref_cas, prolly_write_finish, COMMIT */
	PT_CHECKF(n == 6, "%llu statements", (unsigned long long)n);
	n = commit_one(st, 26, 1, &head, &rc);
	PT_CHECK_RC(rc, 0);
	PT_CHECK(n == 6);
	prolly_id wrong = pgt_mkid(26, 77);
	n = commit_one(st, 26, 2, &wrong, &rc);
	PT_CHECK_RC(rc, PROLLY_ECONFLICT);
	PT_CHECK(n == 7); /* and a ROLLBACK */
	pgt_seen s;
	prolly_id got;
	memset(&s, 0, sizeof(s));
	pgt_cost_begin(st);
	PT_CHECK_RC(st->get_ref_objects(st, "refs/heads/m", 5, &got, NULL, pgt_seen_fn, &s), 0);
	pgt_cost k = pgt_cost_end(st);
	PT_CHECK(k.stmts == 1 && s.calls == 1 && prolly_id_equal(&got, &head));

	/* init migrates, and this store switches to one-statement writes. */
	PT_CHECK_RC(prolly_store_pg_init(st), 0);
	PT_CHECK(pgt_schema_version(a, schema) == 6);
	n = commit_one(st, 26, 3, &head, &rc);
	PT_CHECK_RC(rc, 0);
	PT_CHECKF(n == 1, "%llu statements after init", (unsigned long long)n);
	PT_CHECK_RC(prolly_store_pg_init(st), 0); /* idempotent */
	PT_CHECK(pgt_schema_version(a, schema) == 6);
	prolly_store_close(st);

	/* An open that may create migrates too. */
	downgrade(a, schema);
	st = open_opt(pgt_url, schema, 0);
	PT_REQUIRE(st);
	PT_CHECK(pgt_schema_version(a, schema) == 6);
	n = commit_one(st, 26, 4, &head, &rc);
	PT_CHECK_RC(rc, 0);
	PT_CHECK(n == 1);
	PT_CHECK_RC(st->get_ref(st, "refs/heads/m", &got, NULL), 0);
	PT_CHECK(prolly_id_equal(&got, &head));
	prolly_store_close(st);

	/* A version-2 schema (prolly_write there, the version row at 2): used as it is with
	 * no_create, one statement a write; an open that may create brings it to version 3. */
	char q[256];
	snprintf(q, sizeof(q),
	         "UPDATE \"%s\".meta SET value = 2 WHERE key = 'schema_version'; ALTER TABLE "
	         "\"%s\".nodes DROP CONSTRAINT nodes_id_is_sha256",
	         schema, schema);
	pgt_sql1(a, q);
	for (int no_create = 1; no_create >= 0; no_create--) {
		st = open_opt(pgt_url, schema, no_create);
		PT_REQUIRE(st);
		PT_CHECK(pgt_schema_version(a, schema) == (no_create ? 2 : 6));
		n = commit_one(st, 26, 6 - (unsigned)no_create, &head, &rc);
		PT_CHECK_RC(rc, 0);
		PT_CHECK(n == 1);
		prolly_store_close(st);
	}
	PQfinish(a);
}

/* ---- what the database checks, and who may do what ------------------------------------------- */

/*
 * A row under an id that a later write will produce, holding other bytes, is refused by the
 * schema (nodes_id_is_sha256), whoever inserts it: here the owner, a superuser. Without the
 * constraint the junk stayed (the write's ON CONFLICT DO NOTHING kept it) and every later read
 * of that node failed its hash check.
 */
PT_TEST(poisoned_node_refused)
{
	const char *schema = pgt_new_schema();
	prolly_store *st = pgt_open(schema, 0, 0, 0, 0);
	PGconn *a = pgt_admin();
	PT_REQUIRE(st && a);
	pgt_tn t;
	pgt_tn_make(&t, 40, 1);
	char hex[PROLLY_ID_HEX_SIZE], q[512];
	prolly_id_to_hex(hex, &t.sn.id);
	snprintf(q, sizeof(q), "INSERT INTO \"%s\".nodes (id, node) VALUES ('\\x%s', 'junk')", schema,
	         hex);
	PT_CHECK(pgt_sql_state(a, q, "23514"));
	/* Nor through the store: a node whose bytes are not those of its id. */
	pgt_tn junk;
	pgt_tn_make(&junk, 40, 2);
	junk.sn.id = t.sn.id;
	prolly_ref_update u = pgt_upd("refs/heads/p", PROLLY_REF_EXPECT_ABSENT, NULL, &t.sn.id);
	PT_CHECK_RC(pgt_write1(st, &junk.sn, 1, &u), PROLLY_ECORRUPT);
	printf("# poisoned write: %s\n", prolly_last_error());
	PT_CHECK(pgt_present(st, &t.sn.id, 1) == 0);
	/* The honest write that follows lands, and its node reads back as written. */
	PT_CHECK_RC(pgt_write1(st, &t.sn, 1, &u), 0);
	snprintf(q, sizeof(q), "SELECT count(*) FROM \"%s\".nodes WHERE id = sha256(node)", schema);
	PT_CHECK(pgt_sql1(a, q) == 1);
	/* Not even an UPDATE of the owner may change a stored node's bytes. */
	snprintf(q, sizeof(q), "UPDATE \"%s\".nodes SET node = node || '\\x00'::bytea", schema);
	PT_CHECK(pgt_sql_state(a, q, "23514"));
	prolly_store_close(st);
	PQfinish(a);
}

/* The bytes of the TOAST table of schema's nodes table (0 while it holds no row). */
static long long toast_bytes(PGconn *a, const char *schema)
{
	char q[256];
	snprintf(q, sizeof(q),
	         "SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = "
	         "'\"%s\".nodes'::regclass",
	         schema);
	return pgt_sql1(a, q);
}

/* Version 5: a node's id stays in its row. Left EXTENDED, PostgreSQL moved the 32-byte id of
 * every row over 2 kB to the TOAST table before it compressed the node: three nodes of 3 kB
 * (incompressible) filled a page of TOAST before, nothing now. A version-4 schema (id EXTENDED) is
 * migrated by an open, which sets the storage and the version. */
PT_TEST(ids_stay_in_their_rows)
{
	const char *schema = pgt_new_schema();
	PGconn *a = pgt_admin();
	PT_REQUIRE(a);
	prolly_store *st = open_opt(pgt_url, schema, 0);
	PT_REQUIRE(st);
	char q[512];
	snprintf(q, sizeof(q),
	         "SELECT count(*) FROM pg_attribute WHERE attrelid = '\"%s\".nodes'::regclass AND "
	         "attname = 'id' AND attstorage = 'p'",
	         schema);
	PT_CHECK(pgt_sql1(a, q) == 1);
	static unsigned char big[3][3000];
	prolly_store_node n[3];
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	for (int i = 0; i < 3; i++) {
		for (size_t k = 0; k < sizeof(big[i]); k++) { /* xorshift: incompressible */
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			big[i][k] = (unsigned char)x;
		}
		n[i].data = big[i];
		n[i].size = sizeof(big[i]);
		SHA256(big[i], sizeof(big[i]), n[i].id.bytes);
	}
	PT_CHECK(toast_bytes(a, schema) == 0);
	PT_CHECK_RC(pgt_write1(st, n, 3, NULL), 0);
	PT_CHECKF(toast_bytes(a, schema) == 0, "the TOAST table holds %lld bytes",
	          toast_bytes(a, schema));
	prolly_store_close(st);

	/* A version-4 schema, as the library before made it: migrated by the next open. */
	snprintf(q, sizeof(q),
	         "ALTER TABLE \"%s\".nodes ALTER COLUMN id SET STORAGE EXTENDED; UPDATE \"%s\".meta "
	         "SET value = 4 WHERE key = 'schema_version'",
	         schema, schema);
	PT_CHECK(pgt_sql_state(a, q, ""));
	st = open_opt(pgt_url, schema, 0);
	PT_REQUIRE(st);
	PT_CHECK(pgt_schema_version(a, schema) == 6);
	snprintf(q, sizeof(q),
	         "SELECT count(*) FROM pg_attribute WHERE attrelid = '\"%s\".nodes'::regclass AND "
	         "attname = 'id' AND attstorage = 'p'",
	         schema);
	PT_CHECK(pgt_sql1(a, q) == 1);
	prolly_store_close(st);
	PQfinish(a);
}

/* Migrating a version-3 schema that holds junk: the open adds the constraint (in force at once)
 * and leaves the old rows; prolly_store_pg_init reports them (PROLLY_ECORRUPT) until they are
 * removed, then validates. */
PT_TEST(migration_validates_old_rows)
{
	const char *schema = pgt_new_schema();
	PGconn *a = pgt_admin();
	PT_REQUIRE(a);
	prolly_store *st = open_opt(pgt_url, schema, 0);
	PT_REQUIRE(st);
	prolly_store_close(st);
	char q[512];
	snprintf(q, sizeof(q),
	         "ALTER TABLE \"%s\".nodes DROP CONSTRAINT nodes_id_is_sha256; UPDATE \"%s\".meta SET "
	         "value = 3 WHERE key = 'schema_version'; INSERT INTO \"%s\".nodes VALUES "
	         "(sha256('a'), 'not a'), (sha256('b'), 'b')",
	         schema, schema, schema);
	PT_CHECK(pgt_sql_state(a, q, ""));
	st = open_opt(pgt_url, schema, 0);
	PT_REQUIRE(st);
	PT_CHECK(pgt_schema_version(a, schema) == 6);
	snprintf(q, sizeof(q),
	         "SELECT count(*) FROM pg_constraint WHERE conname = 'nodes_id_is_sha256' AND "
	         "conrelid = '\"%s\".nodes'::regclass AND %s convalidated",
	         schema, "NOT");
	PT_CHECK(pgt_sql1(a, q) == 1);
	snprintf(q, sizeof(q), "INSERT INTO \"%s\".nodes VALUES (sha256('c'), 'not c')", schema);
	PT_CHECK(pgt_sql_state(a, q, "23514")); /* in force for new rows before validation */
	PT_CHECK_RC(prolly_store_pg_init(st), PROLLY_ECORRUPT);
	printf("# %s\n", prolly_last_error());
	snprintf(q, sizeof(q), "DELETE FROM \"%s\".nodes WHERE id <> sha256(node)", schema);
	PT_CHECK(pgt_sql_state(a, q, ""));
	PT_CHECK_RC(prolly_store_pg_init(st), 0);
	snprintf(q, sizeof(q),
	         "SELECT count(*) FROM pg_constraint WHERE conname = 'nodes_id_is_sha256' AND "
	         "conrelid = '\"%s\".nodes'::regclass AND convalidated",
	         schema);
	PT_CHECK(pgt_sql1(a, q) == 1);
	prolly_store_close(st);
	PQfinish(a);
}

/* The schema lock (the advisory lock the creation and migration block takes) needs no privilege
 * either: any session could hold it, and an open that had to create the schema (prolly init on
 * a new one) then waited forever. It gives up after lock_timeout (5 s when the session has none)
 * with PROLLY_ETIMEOUT naming the holder, and succeeds once the holder is gone. */
PT_TEST(schema_lock_holder_cannot_stall_init)
{
	const char *schema = pgt_new_schema();
	PGconn *a = pgt_admin();
	PT_REQUIRE(a);
	char q[256], pid[32];
	snprintf(q, sizeof(q), "SELECT pg_advisory_lock(1886547820, hashtext('\"%s\".meta'))", schema);
	pgt_sql1(a, "SET application_name = 'schema lock holder'");
	PT_REQUIRE(pgt_sql_state(a, q, ""));
	snprintf(pid, sizeof(pid), "pid %d ", PQbackendPID(a));
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	prolly_store *st = NULL;
	double t0 = pgt_now_s();
	int rc = prolly_store_pg_open(&st, pgt_url, &o);
	double waited = pgt_now_s() - t0;
	PT_CHECK_RC(rc, PROLLY_ETIMEOUT);
	PT_CHECKF(strstr(prolly_last_error(), pid) && strstr(prolly_last_error(), "schema lock holder"),
	          "%s", prolly_last_error());
	PT_CHECKF(waited >= 4.5 && waited < 9.0, "gave up after %.3f s", waited);
	printf("# open gave up after %.0f ms: %s\n", waited * 1000, prolly_last_error());
	pgt_sql1(a, "SELECT pg_advisory_unlock_all()");
	st = open_opt(pgt_url, schema, 0);
	PT_CHECK(st != NULL);
	PT_CHECK(pgt_schema_version(a, schema) == 6);
	prolly_store_close(st);
	PQfinish(a);
}

/* prolly init opens the store (which tries to migrate an older schema and goes on without when
 * it cannot get the lock), then calls prolly_store_pg_init, which insists. With the schema lock
 * held by another session, init waited for it twice (10 s), and its message said 5 s. The open
 * waits once; prolly_store_pg_init then reports that wait (PROLLY_ETIMEOUT naming the holder) at
 * once, and migrates once the holder is gone. */
PT_TEST(init_waits_once_for_the_schema_lock)
{
	const char *schema = pgt_new_schema();
	PGconn *a = pgt_admin();
	PT_REQUIRE(a);
	prolly_store *st = open_opt(pgt_url, schema, 0);
	PT_REQUIRE(st);
	prolly_store_close(st);
	char q[256], pid[32];
	snprintf(q, sizeof(q), "UPDATE \"%s\".meta SET value = 4 WHERE key = 'schema_version'", schema);
	PT_CHECK(pgt_sql_state(a, q, ""));
	snprintf(q, sizeof(q), "SELECT pg_advisory_lock(1886547820, hashtext('\"%s\".meta'))", schema);
	pgt_sql1(a, "SET application_name = 'schema lock holder'");
	PT_REQUIRE(pgt_sql_state(a, q, ""));
	snprintf(pid, sizeof(pid), "pid %d ", PQbackendPID(a));
	double t0 = pgt_now_s();
	st = open_opt(pgt_url, schema, 0);
	double open_s = pgt_now_s() - t0;
	PT_REQUIRE(st);
	PT_CHECKF(open_s >= 4.5 && open_s < 9.0, "open took %.3f s", open_s);
	PT_CHECK(pgt_schema_version(a, schema) == 4);
	t0 = pgt_now_s();
	PT_CHECK_RC(prolly_store_pg_init(st), PROLLY_ETIMEOUT);
	double init_s = pgt_now_s() - t0;
	PT_CHECKF(strstr(prolly_last_error(), pid) && strstr(prolly_last_error(), "schema lock holder"),
	          "%s", prolly_last_error());
	PT_CHECKF(init_s < 2.0, "init waited again: %.3f s", init_s);
	printf("# open waited %.1f s, init then failed after %.0f ms: %s\n", open_s, init_s * 1000,
	       prolly_last_error());
	pgt_sql1(a, "SELECT pg_advisory_unlock_all()");
	PT_CHECK_RC(prolly_store_pg_init(st), 0);
	PT_CHECK(pgt_schema_version(a, schema) == 6);
	prolly_store_close(st);
	PQfinish(a);
}

/* The migration's table lock waits 5 s at most: a long transaction on nodes (as a gc's snapshot
 * is) makes it give up instead of holding every reader and writer back behind it. An open goes
 * on with the old schema; prolly_store_pg_init fails, and succeeds once the table is free. */
PT_TEST(migration_lock_bounded)
{
	const char *schema = pgt_new_schema();
	PGconn *a = pgt_admin(), *b = pgt_admin();
	PT_REQUIRE(a && b);
	prolly_store *st = open_opt(pgt_url, schema, 0);
	PT_REQUIRE(st);
	prolly_store_close(st);
	char q[512];
	snprintf(q, sizeof(q),
	         "ALTER TABLE \"%s\".nodes DROP CONSTRAINT nodes_id_is_sha256; UPDATE \"%s\".meta SET "
	         "value = 3 WHERE key = 'schema_version'",
	         schema, schema);
	PT_CHECK(pgt_sql_state(a, q, ""));
	snprintf(q, sizeof(q), "BEGIN; SELECT count(*) FROM \"%s\".nodes", schema);
	pgt_sql1(b, q); /* holds ACCESS SHARE on nodes until it ends */
	double t0 = pgt_now_s();
	st = open_opt(pgt_url, schema, 0);
	double open_s = pgt_now_s() - t0;
	PT_CHECK(st != NULL);
	PT_CHECKF(open_s > 4.5 && open_s < 30, "open took %.1f s", open_s);
	PT_CHECK(pgt_schema_version(a, schema) == 3);
	/* The store works on the old schema. */
	if (st) {
		int rc;
		PT_CHECK(commit_one(st, 42, 0, NULL, &rc) == 1 && rc == 0);
		PT_CHECK_RC(prolly_store_pg_init(st), PROLLY_ESTORE);
		printf("# init while the table is in use: %s\n", prolly_last_error());
		pgt_sql1(b, "COMMIT");
		PT_CHECK_RC(prolly_store_pg_init(st), 0);
		PT_CHECK(pgt_schema_version(a, schema) == 6);
		prolly_store_close(st);
	}
	printf("# open while the table was in use took %.1f s and kept version 3\n", open_s);
	PQfinish(b);
	PQfinish(a);
}

/* tmpl with '@' replaced by the quoted schema name and '~' by role. */
static void subst_sr(char *out, size_t cap, const char *tmpl, const char *schema, const char *role)
{
	size_t o = 0;
	for (const char *p = tmpl; *p && o + 1 < cap; p++) {
		if (*p == '@')
			o += (size_t)snprintf(out + o, cap - o, "\"%s\"", schema);
		else if (*p == '~')
			o += (size_t)snprintf(out + o, cap - o, "%s", role);
		else
			out[o++] = *p;
		if (o >= cap)
			o = cap - 1;
	}
	out[o] = 0;
}

/* A login role with a random password and the grants of tmpl ('@' the schema, '~' the role);
 * its connection string in conninfo. 0 on success. */
static int make_role(PGconn *a, const char *role, const char *schema, const char *tmpl,
                     char *conninfo, size_t cap)
{
	char pw[33], q[2048], g[1536];
	uint64_t rs = (uint64_t)(pgt_now_s() * 1e6) ^ (uint64_t)getpid() << 24 ^ (uint64_t)strlen(role),
	         x;
	for (int i = 0; i < 32; i++) {
		x = bench_splitmix64(&rs);
		pw[i] = "abcdefghijklmnopqrstuvwxyz012345"[x % 32];
	}
	pw[32] = 0;
	subst_sr(g, sizeof(g), tmpl, schema, role);
	snprintf(q, sizeof(q), "CREATE ROLE %s LOGIN PASSWORD '%s'; %s", role, pw, g);
	if (!pgt_sql_state(a, q, ""))
		return -1;
	snprintf(conninfo, cap, "host=%s port=%s dbname=%s user=%s password=%s", PQhost(a), PQport(a),
	         PQdb(a), role, pw);
	return 0;
}

static void drop_role(PGconn *a, const char *role)
{
	char q[256];
	snprintf(q, sizeof(q), "DROP OWNED BY %s; DROP ROLE %s", role, role);
	pgt_sql1(a, q);
}

/* The grants of docs/postgres.md ("Roles and grants"), exactly. */
#define READER_GRANTS "GRANT USAGE ON SCHEMA @ TO ~; GRANT SELECT ON @.nodes, @.refs, @.meta TO ~; "
#define WRITER_GRANTS                                                                              \
	"GRANT USAGE ON SCHEMA @ TO ~; GRANT SELECT, INSERT ON @.nodes TO ~; "                         \
	"GRANT SELECT, INSERT, UPDATE, DELETE ON @.refs TO ~; GRANT SELECT ON @.meta TO ~; "
#define GC_GRANTS WRITER_GRANTS "GRANT DELETE ON @.nodes TO ~; GRANT UPDATE ON @.meta TO ~; "

static int put1(prolly_db *db, const char *branch, const char *key, const char *value)
{
	prolly_edit e = tm_put(key, value);
	prolly_id c;
	return prolly_commit_edits(&c, db, branch, &e, 1, "roles");
}

static prolly_db *open_db_as(const char *conninfo, const char *schema)
{
	prolly_store *st = open_opt(conninfo, schema, 1);
	prolly_db *db = NULL;
	if (st && prolly_db_new(&db, st, NULL)) {
		fprintf(stderr, "  prolly_db_new: %s\n", prolly_last_error());
		return NULL;
	}
	return db;
}

/* The setup of a role test: a schema its owner created, the admin connection, and login roles
 * prolly_TAG_PID with the grants of docs/postgres.md (roles_begin), dropped by roles_end. */
typedef struct roles {
	const char *schema;
	PGconn *admin;
	int n;
	char name[3][64];
	char conninfo[3][600];
} roles;

/* 1 when the roles exist and the first can log in; 0 when that is not possible here (a skip,
 * or a failed check); roles_end in either case. */
static int roles_begin(roles *r, int n, const char *const *tags, const char *const *grants)
{
	memset(r, 0, sizeof(*r));
	r->schema = pgt_new_schema();
	r->admin = pgt_admin();
	PT_CHECK(r->admin);
	if (!r->admin)
		return 0;
	prolly_store *own = open_opt(pgt_url, r->schema, 0);
	PT_CHECK(own);
	if (!own)
		return 0;
	prolly_store_close(own);
	for (; r->n < n; r->n++) {
		snprintf(r->name[r->n], sizeof(r->name[0]), "prolly_%s_%d", tags[r->n], (int)getpid());
		int rc = make_role(r->admin, r->name[r->n], r->schema, grants[r->n], r->conninfo[r->n],
		                   sizeof(r->conninfo[0]));
		PT_CHECK(rc == 0);
		if (rc)
			return 0;
	}
	PGconn *probe = PQconnectdb(r->conninfo[0]);
	int can_login = PQstatus(probe) == CONNECTION_OK;
	if (!can_login)
		pgt_skip("this server does not let a new role log in with a password from here: %s",
		         PQerrorMessage(probe));
	PQfinish(probe);
	return can_login;
}

static void roles_end(roles *r)
{
	for (int i = 0; i < r->n; i++)
		drop_role(r->admin, r->name[i]);
	PQfinish(r->admin);
}

/*
 * Three roles with exactly the documented grants on a schema the owner created: the writer
 * commits, branches and merges, but cannot store a node whose bytes are not its id's, cannot
 * change meta (so cannot set schema_version and stop every client) and cannot run gc; the reader
 * reads and cannot write; the gc role runs gc.
 */
PT_TEST(roles_least_grants)
{
	static const char *const tags[] = {"wr", "rd", "gc"};
	static const char *const grants[] = {WRITER_GRANTS, READER_GRANTS, GC_GRANTS};
	roles r;
	if (!roles_begin(&r, 3, tags, grants))
		goto out;
	const char *schema = r.schema, *ci_wr = r.conninfo[0], *ci_rd = r.conninfo[1],
	           *ci_gc = r.conninfo[2];
	PGconn *a = r.admin, *w = PQconnectdb(ci_wr);
	PT_REQUIRE(PQstatus(w) == CONNECTION_OK);
	PQsetNoticeProcessor(w, pgt_quiet, NULL);

	/* The writer: commits, a branch, a merge. */
	prolly_db *db = open_db_as(ci_wr, schema);
	PT_REQUIRE(db);
	PT_CHECK_RC(put1(db, "main", "a", "1"), 0);
	prolly_id head;
	PT_CHECK_RC(prolly_branch_head(&head, db, "main"), 0);
	PT_CHECK_RC(prolly_branch_create(db, "dev", &head), 0);
	PT_CHECK_RC(put1(db, "dev", "b", "2"), 0);
	PT_CHECK_RC(put1(db, "main", "c", "3"), 0);
	prolly_id merged;
	PT_CHECK_RC(prolly_merge_branches(&merged, NULL, db, "main", "dev", NULL, "merge dev"), 0);
	PT_CHECK_RC(prolly_branch_delete(db, "dev"), 0);
	prolly_gc_result gr = PROLLY_GC_RESULT_INIT;
	PT_CHECK_RC(prolly_gc(db, &gr), PROLLY_ESTORE); /* no UPDATE on meta, no DELETE on nodes */
	printf("# gc as the writer: %s\n", prolly_last_error());
	prolly_close(db);

	/* ... but no junk under a real id, and no say over meta. */
	char q[512];
	snprintf(q, sizeof(q), "INSERT INTO \"%s\".nodes (id, node) VALUES (sha256('x'), 'junk')",
	         schema);
	PT_CHECK(pgt_sql_state(w, q, "23514"));
	prolly_store *ws = open_opt(ci_wr, schema, 1);
	PT_REQUIRE(ws);
	pgt_tn t, junk;
	pgt_tn_make(&t, 41, 1);
	pgt_tn_make(&junk, 41, 2);
	junk.sn.id = t.sn.id;
	PT_CHECK_RC(pgt_write1(ws, &junk.sn, 1, NULL), PROLLY_ECORRUPT);
	PT_CHECK(pgt_present(ws, &t.sn.id, 1) == 0);
	prolly_store_close(ws);
	snprintf(q, sizeof(q), "UPDATE \"%s\".meta SET value = 99 WHERE key = 'schema_version'",
	         schema);
	PT_CHECK(pgt_sql_state(w, q, "42501"));
	PT_CHECK(pgt_schema_version(a, schema) == 6);
	/* Nor may it empty, drop or change a table, delete nodes (gc's), or add to the schema: each
	 * would lose or redirect everyone's data. %1$s is the schema. */
	static const char *const never[] = {
	    "TRUNCATE \"%1$s\".refs",
	    "TRUNCATE \"%1$s\".nodes",
	    "DROP TABLE \"%1$s\".refs",
	    "DELETE FROM \"%1$s\".nodes",
	    "ALTER TABLE \"%1$s\".nodes DROP CONSTRAINT nodes_id_is_sha256",
	    "CREATE TRIGGER t BEFORE UPDATE ON \"%1$s\".refs FOR EACH ROW EXECUTE FUNCTION "
	    "\"%1$s\".prolly_write_finish()",
	    "CREATE FUNCTION \"%1$s\".prolly_get(text, text) RETURNS bytea LANGUAGE sql AS "
	    "'SELECT NULL::bytea'"};
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		snprintf(q, sizeof(q), never[i], schema);
		PT_CHECKF(pgt_sql_state(w, q, "42501"), "as the writer: %s", q);
	}

	/* The reader: reads, cannot write, by the library or by hand (not through the schema's
	 * compare-and-swap either). */
	db = open_db_as(ci_rd, schema);
	PT_REQUIRE(db);
	main_holds(db, "b", '2');
	PT_CHECK_RC(put1(db, "main", "d", "4"), PROLLY_ESTORE);
	printf("# write as the reader: %s\n", prolly_last_error());
	prolly_close(db);
	static const char *const reader_never[] = {
	    "UPDATE \"%1$s\".refs SET value = value", "DELETE FROM \"%1$s\".refs",
	    "INSERT INTO \"%1$s\".nodes (id, node) VALUES (sha256('x'), 'x')",
	    "SELECT \"%1$s\".prolly_ref_cas('refs/heads/main'::bytea, 0, NULL, false, "
	    "'\\x00'::bytea)"};
	PGconn *rd = PQconnectdb(ci_rd);
	PT_REQUIRE(PQstatus(rd) == CONNECTION_OK);
	PQsetNoticeProcessor(rd, pgt_quiet, NULL);
	for (size_t i = 0; i < sizeof(reader_never) / sizeof(reader_never[0]); i++) {
		snprintf(q, sizeof(q), reader_never[i], schema);
		PT_CHECKF(pgt_sql_state(rd, q, "42501"), "as the reader: %s", q);
	}
	PQfinish(rd);

	/* The gc role: gc runs (and the writer's branch stays whole). */
	db = open_db_as(ci_gc, schema);
	PT_REQUIRE(db);
	prolly_gc_result_init(&gr, PROLLY_GC_RESULT_VERSION);
	PT_CHECK_RC(prolly_gc(db, &gr), 0);
	PT_CHECK_RC(put1(db, "main", "e", "5"), 0);
	prolly_close(db);
	PQfinish(w);
out:
	roles_end(&r);
}

/* A writer with exactly the grants of docs/postgres.md on a schema turned back into version 1:
 * an open without no_create cannot migrate (no CREATE on the schema) and keeps the old
 * pipeline. */
PT_TEST(runtime_role_least_privileges)
{
	static const char *const tags[] = {"rt"};
	static const char *const grants[] = {WRITER_GRANTS};
	roles r;
	if (!roles_begin(&r, 1, tags, grants)) {
		roles_end(&r);
		return;
	}
	const char *schema = r.schema, *conninfo = r.conninfo[0];
	PGconn *a = r.admin;
	prolly_store *st = open_opt(conninfo, schema, 1);
	PT_CHECK(st != NULL);
	prolly_id head = pgt_tn_id(27, 0), got;
	int rc;
	if (st) {
		uint64_t n = commit_one(st, 27, 0, NULL, &rc);
		PT_CHECK_RC(rc, 0);
		PT_CHECK(n == 1);
		PT_CHECK_RC(st->get_ref(st, "refs/heads/m", &got, NULL), 0);
		PT_CHECK(prolly_id_equal(&got, &head));
		prolly_store_close(st);
	}
	downgrade(a, schema);
	st = open_opt(conninfo, schema, 0);
	PT_CHECK(st != NULL);
	PT_CHECK(pgt_schema_version(a, schema) == 1);
	if (st) {
		uint64_t n = commit_one(st, 27, 1, &head, &rc);
		PT_CHECK_RC(rc, 0);
		PT_CHECK(n == 6);
		PT_CHECK_RC(prolly_store_pg_init(st), PROLLY_ESTORE); /* no right to migrate */
		printf("# init as the runtime role: %s\n", prolly_last_error());
		n = commit_one(st, 27, 2, &head, &rc);
		PT_CHECK_RC(rc, 0);
		PT_CHECK(n == 6);
		prolly_store_close(st);
	}
	roles_end(&r);
}

/* ---- passwords -------------------------------------------------------------------------------- */

static void no_secret(const char *conninfo, const char *secret, int want)
{
	prolly_store *st = NULL;
	int rc = prolly_store_pg_open(&st, conninfo, NULL);
	PT_CHECKF(rc == want, "rc %d want %d: %s", rc, want, prolly_last_error());
	PT_CHECKF(strstr(prolly_last_error(), secret) == NULL, "secret leaked: %s",
	          prolly_last_error());
	if (rc == 0)
		prolly_store_close(st);
	else
		printf("# %s\n", prolly_last_error());
}

PT_TEST(password_never_in_messages)
{
	no_secret("postgresql://someone:Sup3rS3cret@127.0.0.1:1/prolly?connect_timeout=2",
	          "Sup3rS3cret", PROLLY_ESTORE);
	no_secret("host=127.0.0.1 port=1 user=x password=Sup3rS3cret dbname=prolly connect_timeout=2",
	          "Sup3rS3cret", PROLLY_ESTORE);
	no_secret("postgresql://someone:Sup3rS3cret@127.0.0.1:notaport/prolly", "Sup3rS3cret",
	          PROLLY_ESTORE);
	no_secret("postgresql://someone:Sup3rS3cret@[::1/prolly", "Sup3rS3cret", PROLLY_EINVAL);
	no_secret("host=127.0.0.1 password='Sup3r S3cret' bogus=1", "S3cret", PROLLY_EINVAL);
	/* libpq quotes a piece of a connection string it cannot parse: a misspelled keyword, a
	 * percent-encoding, the second word of an unquoted password. */
	no_secret("host=127.0.0.1 port=1 PASSWORD=Sup3rS3cret", "Sup3rS3cret", PROLLY_EINVAL);
	no_secret("host=127.0.0.1 port=1 passwd=Sup3rS3cret", "Sup3rS3cret", PROLLY_EINVAL);
	no_secret("postgresql://u:Sup3r%zzS3cret@127.0.0.1:1/db", "S3cret", PROLLY_EINVAL);
	no_secret("host=127.0.0.1 port=1 password=Sup3r S3cret", "S3cret", PROLLY_EINVAL);
	no_secret("host=127.0.0.1 port=1 password Sup3rS3cret", "Sup3rS3cret", PROLLY_EINVAL);
	no_secret("host=127.0.0.1 port=1 connect_timeout=2 sslpassword=Sup3rS3cret", "Sup3rS3cret",
	          PROLLY_ESTORE);
	const char *pw = getenv("PROLLY_PG_PW_URL");
	if (pw) {
		/* Right user, wrong password: authentication fails. */
		char bad[512];
		const char *at = strchr(pw + strlen("postgresql://"), '@');
		const char *colon = strchr(pw + strlen("postgresql://"), ':');
		PT_REQUIRE(at && colon && colon < at);
		snprintf(bad, sizeof(bad), "%.*sWr0ngPassw0rd%s", (int)(colon + 1 - pw), pw, at);
		no_secret(bad, "Wr0ngPassw0rd", PROLLY_ESTORE);
		/* The right one: works; a killed backend's message still hides it. */
		char secret[128];
		snprintf(secret, sizeof(secret), "%.*s", (int)(at - colon - 1), colon + 1);
		prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
		o.schema = pgt_new_schema();
		prolly_store *st = NULL;
		PGconn *a = pgt_admin();
		PT_REQUIRE(a);
		char q[256];
		snprintf(q, sizeof(q), "CREATE SCHEMA \"%s\" AUTHORIZATION prolly_pw", o.schema);
		pgt_sql1(a, q);
		PT_CHECKF(prolly_store_pg_open(&st, pw, &o) == 0, "%s", prolly_last_error());
		if (st) {
			prolly_id v = pgt_mkid(8, 1), got;
			prolly_ref_update u = pgt_upd("refs/heads/pw", PROLLY_REF_EXPECT_ANY, NULL, &v);
			PT_CHECK_RC(pgt_write1(st, NULL, 0, &u), 0);
			pgt_sql1(
			    a, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = "
			       "'prolly_pw'");
			pgt_sleep_ms(100);
			/* Either noticed before use (and reconnected) or failed: never the password. */
			int rc = st->get_ref(st, "refs/heads/pw", &got, NULL);
			PT_CHECK(rc == 0 || rc == PROLLY_ESTORE);
			PT_CHECK(strstr(prolly_last_error(), secret) == NULL);
			prolly_store_close(st);
		}
		PQfinish(a);
	} else {
		pgt_skip("PROLLY_PG_PW_URL unset (a server not started by scripts/pg-cluster.sh): no "
		         "password authentication tried, only the URLs above");
	}
}

/*
 * A read-only session (default_transaction_read_only = on, from the connection string or a role's
 * or database's setting; a hot standby is read-only the same way) cannot migrate an older schema.
 * An open that may create (prolly_open, prolly_store_pg_open without no_create) used to fail
 * with "migrating the schema: cannot execute ALTER TABLE in a read-only transaction" (SQLSTATE
 * 25006), so a database an older library made could not even be read there. The open now goes
 * on with the schema as it is, as when the role may not migrate; reads work, and a write and
 * prolly_store_pg_init fail as store errors. Their message used to be the server's alone
 * ("cannot execute INSERT in a read-only transaction"), which names neither the server nor why;
 * it now says which database is read-only and why (here the session's setting).
 */
PT_TEST(read_only_session_reads_old_schema)
{
	const char *schema = pgt_new_schema();
	char q[512], ci[1024];
	PGconn *a = pgt_admin();
	prolly_store *st = open_opt(pgt_url, schema, 0);
	prolly_db *db = NULL;
	PT_REQUIRE(a && st && prolly_db_new(&db, st, NULL) == 0);
	PT_CHECK_RC(put1(db, "main", "k", "v"), 0);
	prolly_close(db);
	snprintf(q, sizeof(q),
	         "ALTER TABLE \"%s\".nodes DROP CONSTRAINT nodes_id_is_sha256; UPDATE \"%s\".meta SET "
	         "value = 3 WHERE key = 'schema_version'",
	         schema, schema);
	PT_REQUIRE(pgt_sql_state(a, q, ""));
	if (strncmp(pgt_url, "postgres", 8) == 0)
		snprintf(ci, sizeof(ci), "%s%coptions=-c%%20default_transaction_read_only%%3Don", pgt_url,
		         strchr(pgt_url, '?') ? '&' : '?');
	else
		snprintf(ci, sizeof(ci), "%s options='-c default_transaction_read_only=on'", pgt_url);
	st = open_opt(ci, schema, 0);
	PT_REQUIRE(st);
	PT_CHECK(pgt_schema_version(a, schema) == 3);
	PT_CHECK_RC(prolly_store_pg_init(st), PROLLY_ESTORE);
	PT_CHECKF(strstr(prolly_last_error(), "default_transaction_read_only") != NULL, "init: %s",
	          prolly_last_error());
	PT_REQUIRE(prolly_db_new(&db, st, NULL) == 0);
	main_holds(db, "k", 'v');
	PT_CHECK_RC(put1(db, "main", "k", "w"), PROLLY_ESTORE);
	/* The message says why the server refused, and names the server. */
	PT_CHECKF(strstr(prolly_last_error(), "default_transaction_read_only is on") &&
	              strstr(prolly_last_error(), "is read-only") &&
	              !strstr(prolly_last_error(), "corrupt") &&
	              !strstr(prolly_last_error(), "damaged"),
	          "put: %s", prolly_last_error());
	printf("# write in a read-only session: %s\n", prolly_last_error());
	prolly_close(db);
	PT_CHECK(pgt_schema_version(a, schema) == 3);
	PQfinish(a);
}

/* $PROLLY_PG_URL with search_path set to "evil, then" in its options, as a role's or database's
 * setting could name a schema first; and the setting name = value too where name is not NULL. */
static void path_first(char *ci, size_t cap, const char *evil, const char *then, const char *name,
                       const char *value)
{
	int url = strncmp(pgt_url, "postgres", 8) == 0;
	char more[96] = "";
	if (name)
		snprintf(more, sizeof(more), url ? "%%20-c%%20%s%%3D%s" : " -c %s=%s", name, value);
	if (url)
		snprintf(ci, cap, "%s%coptions=-c%%20search_path%%3D%s%%2C%s%s", pgt_url,
		         strchr(pgt_url, '?') ? '&' : '?', evil, then, more);
	else
		snprintf(ci, cap, "%s options='-c search_path=%s,%s%s'", pgt_url, evil, then, more);
}

/*
 * A role that can CREATE in a schema on the connection's search_path plants functions named as
 * those the store's statements and its schema's functions call, each with an exact signature
 * (unnest(bytea[]), cardinality(bytea[])): an exact match beats pg_catalog's polymorphic one
 * even though pg_catalog is searched first, so it would run with the store's role. The store's
 * connections set their own search_path: none of them runs.
 */
PT_TEST(search_path_cannot_redirect_statements)
{
	const char *schema = pgt_new_schema();
	char evil[96], q[1024], ci[1024];
	PGconn *a = pgt_admin();
	PT_REQUIRE(a);
	snprintf(evil, sizeof(evil), "%s_evil", schema);
	snprintf(q, sizeof(q),
	         "CREATE SCHEMA \"%s\"; "
	         "CREATE FUNCTION \"%s\".unnest(a bytea[]) RETURNS SETOF bytea LANGUAGE plpgsql AS "
	         "$$BEGIN RAISE EXCEPTION 'hijacked: unnest'; END$$; "
	         "CREATE FUNCTION \"%s\".cardinality(a bytea[]) RETURNS int LANGUAGE plpgsql AS "
	         "$$BEGIN RAISE EXCEPTION 'hijacked: cardinality'; END$$",
	         evil, evil, evil);
	PT_REQUIRE(pgt_sql_state(a, q, ""));
	/* The planted schema first, as the role's or the database's setting would put it. */
	path_first(ci, sizeof(ci), evil, "public", NULL, NULL);
	prolly_store *st = open_opt(ci, schema, 0);
	PT_REQUIRE(st);
	pgt_tn t;
	pgt_tn_make(&t, 31, 1);
	prolly_ref_update u = pgt_upd("refs/heads/m", PROLLY_REF_EXPECT_ABSENT, NULL, &t.sn.id);
	PT_CHECKF(pgt_write1(st, &t.sn, 1, &u) == 0, "write: %s", prolly_last_error());
	PT_CHECKF(pgt_present(st, &t.sn.id, 1) == 1, "get_nodes: %s", prolly_last_error());
	unsigned char has = 0, found = 0;
	PT_CHECKF(st->has_nodes(st, &t.sn.id, 1, &has) == 0 && has, "has_nodes: %s",
	          prolly_last_error());
	const char *names[1] = {"refs/heads/m"};
	prolly_id got;
	PT_CHECKF(st->get_refs(st, names, 1, &got, &found, NULL) == 0 && found, "get_refs: %s",
	          prolly_last_error());
	prolly_store_close(st);
	snprintf(q, sizeof(q), "DROP SCHEMA \"%s\" CASCADE", evil);
	pgt_sql1(a, q);
	PQfinish(a);
}

/*
 * The same, for what runs before the session's own search_path: the version read of every open,
 * the schema's creation and migration and the validation (DO blocks) and the lookup of a lock's
 * holders. A role with CREATE in a schema that a careless setting names before pg_catalog
 * (search_path = evil, pg_catalog) planted text = text, hashtext, to_regclass, left and
 * current_setting there; each raises. Before, creating the schema failed with "hijacked: =",
 * and without the raise the planted functions ran as the role that opened the store.
 */
PT_TEST(search_path_cannot_redirect_open_and_init)
{
	const char *schema = pgt_new_schema();
	char evil[96], q[2048], ci[1024], lk[256];
	PGconn *a = pgt_admin(), *holder = pgt_admin();
	PT_REQUIRE(a && holder);
	snprintf(evil, sizeof(evil), "%s_evil", schema);
	snprintf(q, sizeof(q),
	         "CREATE SCHEMA \"%s\"; SET search_path = \"%s\"; "
	         "CREATE FUNCTION eq(text, text) RETURNS boolean LANGUAGE plpgsql AS "
	         "$$BEGIN RAISE EXCEPTION 'hijacked: ='; END$$; "
	         "CREATE OPERATOR = (LEFTARG = text, RIGHTARG = text, FUNCTION = eq); "
	         "CREATE FUNCTION hashtext(text) RETURNS int LANGUAGE plpgsql AS "
	         "$$BEGIN RAISE EXCEPTION 'hijacked: hashtext'; END$$; "
	         "CREATE FUNCTION to_regclass(text) RETURNS regclass LANGUAGE plpgsql AS "
	         "$$BEGIN RAISE EXCEPTION 'hijacked: to_regclass'; END$$; "
	         "CREATE FUNCTION \"left\"(text, int) RETURNS text LANGUAGE plpgsql AS "
	         "$$BEGIN RAISE EXCEPTION 'hijacked: left'; END$$; "
	         "CREATE FUNCTION current_setting(text) RETURNS text LANGUAGE plpgsql AS "
	         "$$BEGIN RAISE EXCEPTION 'hijacked: current_setting'; END$$; "
	         "RESET search_path",
	         evil, evil);
	PT_REQUIRE(pgt_sql_state(a, q, ""));
	path_first(ci, sizeof(ci), evil, "pg_catalog", "lock_timeout", "300");
	/* A lock's holders are looked up on the connection that waited: the schema lock held. */
	snprintf(lk, sizeof(lk), "SELECT pg_advisory_lock(%d, hashtext('\"%s\".meta'))",
	         PROLLY_PG_LOCK_INIT, schema);
	PT_REQUIRE(pgt_sql_state(holder, lk, ""));
	prolly_store *st = NULL;
	prolly_pg_options o = PROLLY_PG_OPTIONS_INIT;
	o.schema = schema;
	PT_CHECK(prolly_store_pg_open(&st, ci, &o) != 0 && !st);
	PT_CHECKF(strstr(prolly_last_error(), "hijacked") == NULL &&
	              strstr(prolly_last_error(), "lock") != NULL,
	          "%s", prolly_last_error());
	PQfinish(holder);
	st = open_opt(ci, schema, 0); /* creates the schema */
	PT_REQUIRE(st);
	PT_CHECK_RC(prolly_store_pg_init(st), 0); /* validates */
	pgt_tn t;
	pgt_tn_make(&t, 32, 1);
	prolly_ref_update u = pgt_upd("refs/heads/m", PROLLY_REF_EXPECT_ABSENT, NULL, &t.sn.id);
	PT_CHECKF(pgt_write1(st, &t.sn, 1, &u) == 0, "write: %s", prolly_last_error());
	prolly_store_close(st);
	st = open_opt(ci, schema, 1); /* reads the version of a schema that exists */
	PT_CHECK(st != NULL);
	PT_CHECKF(st && pgt_present(st, &t.sn.id, 1) == 1, "get_nodes: %s", prolly_last_error());
	prolly_store_close(st);
	snprintf(q, sizeof(q), "DROP SCHEMA \"%s\" CASCADE", evil);
	pgt_sql1(a, q);
	PQfinish(a);
}

/* A planted function that says it ran: plpgsql, returning type R. */
#define HIJACK(NAME, ARGS, R)                                                                      \
	"CREATE FUNCTION " NAME ARGS " RETURNS " R " LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION "     \
	"'hijacked: " NAME "'; END$$; "
#define HIJACK_EQ(T)                                                                               \
	HIJACK("eq_" T, "(" T ", " T ")", "boolean")                                                   \
	"CREATE OPERATOR = (LEFTARG = " T ", RIGHTARG = " T ", FUNCTION = eq_" T "); "

/* The schema's functions called by hand on a, under search_path = evil, pg_catalog, in a
 * transaction rolled back after: sql's last result (its first value) into out, or "ERROR
 * SQLSTATE message". */
static void by_hand(PGconn *a, const char *schema, const char *evil, const char *sql, char *out,
                    size_t cap)
{
	char q[2048];
	snprintf(q, sizeof(q), "BEGIN; SET LOCAL search_path = \"%s\", pg_catalog; ", evil);
	subst_sr(q + strlen(q), sizeof(q) - strlen(q), sql, schema, "");
	PGresult *r = PQexec(a, q);
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0)
		snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
	else
		snprintf(out, cap, "ERROR %s %s", PQresultErrorField(r, PG_DIAG_SQLSTATE),
		         PQresultErrorMessage(r));
	PQclear(r);
	PQclear(PQexec(a, "ROLLBACK"));
}

/* Every function of the schema called by hand as above: the write pipeline's four, a lost
 * compare-and-swap reported by prolly_write_finish (PLY02: the setting prolly_ref_cas sets
 * outlives its call), and prolly_write of a node and two refs, whose synchronous_commit = off
 * outlives its call while the caller's search_path comes back (both refs stored). 1 when each did as it should,
 * else 0 with the first wrong answer in why. */
static int hand_calls_hold(PGconn *a, const char *schema, const char *evil, char *why, size_t cap)
{
	char out[512];
	by_hand(a, schema, evil,
	        "SELECT @.prolly_write_begin(NULL); "
	        "SELECT @.prolly_write_requires(ARRAY(SELECT id FROM @.nodes)); "
	        "SELECT applied FROM @.prolly_ref_cas('refs/heads/m'::bytea, 2, 'nope'::bytea, false, "
	        "'x'::bytea); "
	        "SELECT @.prolly_write_finish()",
	        out, sizeof(out));
	if (strncmp(out, "ERROR PLY02 ", 12) != 0) {
		snprintf(why, cap, "pipeline: %s", out);
		return 0;
	}
	by_hand(
	    a, schema, evil,
	    "SELECT count(*) FROM @.prolly_write(NULL, true, ARRAY(SELECT id FROM @.nodes), "
	    "ARRAY[pg_catalog.sha256('abc'::bytea)], ARRAY['abc'::bytea], "
	    "ARRAY['refs/heads/p', 'refs/heads/q']::bytea[], ARRAY[1, 1], "
	    "ARRAY[NULL, NULL]::bytea[], ARRAY[false, false], ARRAY['v', 'w']::bytea[]) "
	    "WHERE o_applied; "
	    "SELECT pg_catalog.current_setting('synchronous_commit') || ' ' || "
	    "pg_catalog.current_setting('search_path') || ' ' || (SELECT count(*) FROM @.refs WHERE "
	    "name OPERATOR(pg_catalog.=) ANY ('{refs/heads/p, refs/heads/q}'::bytea[]))",
	    out, sizeof(out));
	size_t n = strlen(out);
	if (strncmp(out, "off ", 4) != 0 || !strstr(out, evil) || n < 2 || strcmp(out + n - 2, " 2")) {
		snprintf(why, cap, "prolly_write: %s", out);
		return 0;
	}
	return 1;
}

/* How many of the schema's functions do not pin their own search_path (-1 on failure). */
static long long unpinned(PGconn *a, const char *schema)
{
	char q[512];
	snprintf(q, sizeof(q),
	         "SELECT count(*) FILTER (WHERE NOT coalesce(proconfig @> "
	         "ARRAY['search_path=pg_catalog, pg_temp'], false)) + 100 * (count(*) <> 5)::int "
	         "FROM pg_proc WHERE pronamespace = '\"%s\"'::regnamespace",
	         schema);
	return pgt_sql1(a, q);
}

/*
 * The schema's own functions under a caller's careless search_path. A role with CREATE in a
 * schema that a session's path names before pg_catalog plants text = text, bytea = bytea,
 * int = int, hashtext, current_setting, set_config, the advisory lock, cardinality and unnest;
 * each raises. Called by hand under that path, the functions ran them, with the caller's rights
 * (they are SECURITY INVOKER): prolly_write_begin failed with "hijacked: hashtext". Since
 * version 6 each sets its own search_path (pg_catalog, pg_temp). A version-5 schema (the
 * functions unpinned) is migrated by an open; the library works on it under that path before
 * and after.
 */
PT_TEST(search_path_cannot_redirect_schema_functions)
{
	const char *schema = pgt_new_schema();
	char evil[96], role[64], q[4096], ci[1024], why[600];
	PGconn *a = pgt_admin();
	PT_REQUIRE(a);
	snprintf(evil, sizeof(evil), "%s_evil", schema);
	snprintf(role, sizeof(role), "prolly_ev_%d", (int)getpid());
	static const char *const planted[] = {
	    HIJACK_EQ("text"),
	    HIJACK_EQ("bytea"),
	    HIJACK_EQ("int4"),
	    HIJACK("hashtext", "(text)", "int"),
	    HIJACK("current_setting", "(text, boolean)", "text"),
	    HIJACK("set_config", "(text, text, boolean)", "text"),
	    HIJACK("pg_advisory_xact_lock_shared", "(int, int)", "void"),
	    HIJACK("cardinality", "(bytea[])", "int"),
	    HIJACK("unnest", "(bytea[])", "SETOF bytea"),
	};
	int n = snprintf(q, sizeof(q),
	                 "CREATE ROLE %s; CREATE SCHEMA \"%s\" AUTHORIZATION %s; SET ROLE %s; "
	                 "SET search_path = \"%s\"; ",
	                 role, evil, role, role, evil);
	for (size_t i = 0; i < sizeof(planted) / sizeof(planted[0]); i++)
		n += snprintf(q + n, sizeof(q) - (size_t)n, "%s", planted[i]);
	snprintf(q + n, sizeof(q) - (size_t)n, "RESET ROLE; RESET search_path");
	PT_REQUIRE(pgt_sql_state(a, q, ""));
	path_first(ci, sizeof(ci), evil, "pg_catalog", NULL, NULL);

	/* A new schema, and the library's writes and reads under that path. */
	prolly_store *st = open_opt(ci, schema, 0);
	PT_REQUIRE(st);
	prolly_db *db = NULL;
	PT_REQUIRE(prolly_db_new(&db, st, NULL) == 0);
	PT_CHECKF(put1(db, "main", "k", "1") == 0, "put: %s", prolly_last_error());
	main_holds(db, "k", '1');
	prolly_close(db);
	PT_CHECK(pgt_schema_version(a, schema) == 6);
	PT_CHECKF(unpinned(a, schema) == 0, "%lld", unpinned(a, schema));
	PT_CHECKF(hand_calls_hold(a, schema, evil, why, sizeof(why)), "%s", why);

	/* As a version-5 schema had them: called by hand they run what was planted. */
	snprintf(
	    q, sizeof(q),
	    "ALTER FUNCTION @.prolly_write_begin(bigint) RESET search_path; "
	    "ALTER FUNCTION @.prolly_write_requires(bytea[]) RESET search_path; "
	    "ALTER FUNCTION @.prolly_ref_cas(bytea, int, bytea, boolean, bytea) RESET search_path; "
	    "ALTER FUNCTION @.prolly_write_finish() RESET search_path; "
	    "ALTER FUNCTION @.prolly_write(bigint, boolean, bytea[], bytea[], bytea[], bytea[], "
	    "int[], bytea[], boolean[], bytea[]) RESET search_path; "
	    "UPDATE @.meta SET value = 5 WHERE key = 'schema_version'");
	char v5[4096];
	subst_sr(v5, sizeof(v5), q, schema, "");
	PT_REQUIRE(pgt_sql_state(a, v5, ""));
	PT_CHECK(unpinned(a, schema) == 5);
	PT_CHECK(!hand_calls_hold(a, schema, evil, why, sizeof(why)) && strstr(why, "hijacked: "));
	printf("# version 5, by hand: %.*s\n", (int)strcspn(why, "\n"), why);

	/* Opened with no_create it stays at 5 and works; an open that may migrate pins them. */
	for (int no_create = 1; no_create >= 0; no_create--) {
		db = open_db_as(ci, schema);
		if (!no_create) {
			prolly_store *m = open_opt(ci, schema, 0);
			PT_CHECK(m);
			prolly_store_close(m);
		}
		PT_REQUIRE(db);
		PT_CHECKF(put1(db, "main", "k", no_create ? "2" : "3") == 0, "put: %s",
		          prolly_last_error());
		main_holds(db, "k", no_create ? '2' : '3');
		prolly_close(db);
		PT_CHECK(pgt_schema_version(a, schema) == (no_create ? 5 : 6));
	}
	PT_CHECKF(unpinned(a, schema) == 0, "%lld", unpinned(a, schema));
	PT_CHECKF(hand_calls_hold(a, schema, evil, why, sizeof(why)), "%s", why);
	drop_role(a, role);
	PQfinish(a);
}

PGT_MAIN(NULL, NULL)
