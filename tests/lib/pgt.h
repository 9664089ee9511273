/*
 * pgt.h - what the PostgreSQL store's test programs (tests/test_pg*.c) share: the server, fresh
 * schemas, SQL on an admin connection, nodes whose ids are their hashes, the cost of one store
 * call, and the program's main.
 *
 * Each program includes ptest.h, then this header, defines its cases with PT_TEST and ends with
 * PGT_MAIN(conformance, special): the server is $PROLLY_PG_URL, or a throwaway cluster started for
 * the program (tm_pg_guard, tests/lib/model.h) and stopped when it ends. Every store a case opens
 * gets a schema of its own (pgt_new_schema), dropped at the end. Single-threaded but for the cases'
 * own threads, which may use the SQL helpers on connections of their own.
 */
#ifndef PGT_H
#define PGT_H

#include "internal.h"
#include "prolly.h"
#include "store/pg.h"

#include <libpq-fe.h>

/* The server's URL ($PROLLY_PG_URL), set by pgt_main before the first case. */
extern const char *pgt_url;

double pgt_now_s(void);
void pgt_sleep_ms(int ms);

/* A case that cannot run what it is about calls pgt_skip(): it is reported as "ok N - NAME #
 * SKIP why", or, with CI=true in the environment, as "not ok" (CI must run everything). */
__attribute__((format(printf, 1, 2))) void pgt_skip(const char *fmt, ...);

/* A fresh schema name, recorded for the drop at the end ("prolly_t_<pid>_<n>"). */
const char *pgt_new_schema(void);

/* A notice processor that drops every notice. */
void pgt_quiet(void *arg, const char *msg);
/* A connection as $PROLLY_PG_URL's user, notices silenced; NULL (with a message) on failure. */
PGconn *pgt_admin(void);
/* Runs sql; returns the first value of the first row as a number, or -1. */
long long pgt_sql1(PGconn *c, const char *sql);
/* Calls pg_stat_statements has counted in this database so far of statements whose text is LIKE
 * like (its own queries left out); -1 on failure. like holds no quote. */
long long pgt_pss_calls(PGconn *c, const char *like);
/* Runs sql; the first value of the first row as text into out ("" if none). */
void pgt_sql_text(PGconn *c, const char *sql, char *out, size_t size);
/* Runs sql and says whether it ended with SQLSTATE state ("" for success). */
int pgt_sql_state(PGconn *c, const char *sql, const char *state);
/* The schema's meta row schema_version, and its node count (-1 on failure). */
long long pgt_schema_version(PGconn *a, const char *schema);
long long pgt_node_count(PGconn *a, const char *schema);
/* Waits until a backend of this database waits for a lock; returns its pid or -1. */
long long pgt_blocked_pid(PGconn *a);
/* Runs pg_ctl ARGS ("-m immediate restart", say; waiting for it, at most 60 s) on this program's
 * own cluster (PROLLY_PG_DIR, PROLLY_PG_BIN: unset on a server it did not start, then -1); its
 * exit status. */
int pgt_pg_ctl(const char *args);

/* A PostgreSQL store on schema (0 leaves an option at its default); NULL with a message. */
prolly_store *pgt_open(const char *schema, size_t batch_items, size_t read_chunk,
                       unsigned pool_size, unsigned timeout_ms);
/* A store on a fresh schema without the version-4 hash constraint: the shared conformance suite
 * writes nodes under made-up ids (a store need not check hashes); poisoned_node_refused tests
 * the constraint. The signature of store_conformance_run's opener. */
prolly_store *pgt_open_fresh(void *ctx);

/* A made-up id; a node whose id is the SHA-256 of its bytes (as the schema's constraint
 * requires), its id alone. */
prolly_id pgt_mkid(unsigned tag, unsigned i);
typedef struct pgt_tn {
	prolly_store_node sn;
	unsigned char buf[300];
} pgt_tn;
void pgt_tn_make(pgt_tn *t, unsigned tag, unsigned i);
prolly_id pgt_tn_id(unsigned tag, unsigned i);

/* A ref update (value NULL: a removal); a durable write of nodes and at most one ref. */
prolly_ref_update pgt_upd(const char *name, prolly_ref_expect ex, const prolly_id *expected,
                          const prolly_id *value);
int pgt_write1(prolly_store *st, const prolly_store_node *nodes, size_t n, prolly_ref_update *u);
/* A get_nodes callback counting its calls (payload: int); how many of ids st holds (-1). */
int pgt_count_fn(void *payload, size_t index, const void *data, size_t size);
int pgt_present(prolly_store *st, const prolly_id *ids, size_t n);

/* A get_nodes / get_ref_objects callback keeping the first four calls (payload: pgt_seen);
 * returns 99 at the stop_at-th call when stop_at is set. */
typedef struct pgt_seen {
	int calls, stop_at;
	size_t index[4], size[4];
	unsigned char first[4];
} pgt_seen;
int pgt_seen_fn(void *payload, size_t index, const void *data, size_t size);

/* What one store call cost (pgt_cost_begin before it, pgt_cost_end after): the thread's
 * statements and round trips, the store's insert statements, inserted rows and statements. */
typedef struct pgt_cost {
	uint64_t stmts, trips, inserts, rows, store_stmts;
} pgt_cost;
void pgt_cost_begin(prolly_store *st);
pgt_cost pgt_cost_end(prolly_store *st);

/* The program's main, after ptest.h registered its cases: makes sure of a server (a throwaway
 * cluster unless $PROLLY_PG_URL is set; on a server this program did not start, no case may
 * restart it: PROLLY_PG_BIN is unset without PROLLY_PG_DIR), then, if special is given and
 * returns 0 or more for argv, that is the exit status (a mode of the program that is not a test
 * run); else runs the shared conformance suite through conformance (if not NULL) and every case
 * (`prog NAME` runs those whose name contains NAME). Drops the schemas at the end. failed_now is
 * ptest.h's pt_failed_now. The last line is "# N passed, N failed"; the status 1 if anything
 * failed. */
typedef struct pgt_case {
	const char *name;
	void (*fn)(void);
} pgt_case;
int pgt_main(int argc, char **argv, const pgt_case *cases, int n_cases, int *failed_now,
             prolly_store *(*conformance)(void *ctx), int (*special)(int argc, char **argv));

/* The main of a program that includes ptest.h: its cases handed to pgt_main. */
#define PGT_MAIN(conformance, special)                                                             \
	int main(int argc, char **argv)                                                                \
	{                                                                                              \
		static pgt_case cases[PT_MAX_CASES];                                                       \
		for (int i = 0; i < pt_ncases; i++)                                                        \
			cases[i] = (pgt_case){pt_cases[i].name, pt_cases[i].fn};                               \
		return pgt_main(argc, argv, cases, pt_ncases, &pt_failed_now, conformance, special);       \
	}

#endif
