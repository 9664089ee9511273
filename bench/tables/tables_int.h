/*
 * tables_int.h - what session.c shares with the contenders behind it (bench/tables, and the
 * tests, which may look at a session's connection).
 *
 * session.c (databases, sessions, reads) and txn.c (loads, index builds, transactions) hold the
 * public entry points of table.h: they check arguments, keep the session's error, and dispatch.
 * The plain contender (plain.c, plain_write.c) runs every operation as SQL on its own tables.
 * The two prolly contenders (client.c, sql.c) only provide key-value primitives (bt_kv_ops) on
 * the branch; session.c and txn.c build the rows' keys and values (encode.c), keep the
 * transaction's edit list, and turn loads, index builds, ranges and deletes into those
 * primitives, so the client and sql contenders run the same logic and differ only in how a
 * primitive reaches the store.
 *
 * Calls run one way: session.c and txn.c call the contenders, never the reverse; every file may
 * call session_state.c (the session's error, its last result), which calls none of them.
 */
#ifndef BENCH_TABLES_INT_H
#define BENCH_TABLES_INT_H

#include "pgconn.h"
#include "prolly.h"
#include "table.h"

#include <stdarg.h>

#define BT_ERR 512

/* One edit of a transaction: key and value (vlen SIZE_MAX: a delete) at offsets of the arena. */
typedef struct bt_edit {
	size_t koff, klen, voff, vlen;
} bt_edit;

typedef struct bt_group bt_group; /* client_group.c */

struct bt_db {
	bt_kind kind;
	char *url, *schema, *branch; /* copies */
	char qschema[160];           /* schema as a quoted identifier */
	const bt_table *const *tables;
	size_t ntables;
	unsigned node_size; /* of the prolly store a create makes (0: the default) */
	prolly_db *pdb;     /* client: the handle its sessions share; sql: setup only (NULL after) */
	bt_group *group;    /* client: the queue of its sessions' commits */
};

struct bt_session {
	bt_db *db;
	char err[BT_ERR];
	int in_txn;
	prolly_id head; /* client, sql: the head read at bt_begin */
	char head_hex[PROLLY_ID_HEX_SIZE];
	prolly_id head_tree; /* client: its tree */
	uint64_t rebased;    /* client: commits merged into a head that moved (bt_session_rebased) */
	/* the transaction's edits (client, sql) */
	bench_buf arena;
	bt_edit *edits;
	size_t nedits, edits_cap;
	/* scratch */
	bench_buf k, k2, v;
	bench_buf arr[2];
	prolly_buf val;     /* client: the last value read (a decoded row points into it) */
	PGconn *pg;         /* plain, sql: the session's connection */
	PGresult *last;     /* plain, sql: the last result (a decoded row points into it) */
	bench_buf prepared; /* plain: names of the statements prepared, "\n"-separated */
};

/* ---- the session's own state (session_state.c, which every other file may call) ------------ */

/* Sets the session's error; returns -1. */
int bt__fail(bt_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "what: <prolly_last_error()>"; returns -1. */
int bt__fail_prolly(bt_session *s, const char *what);
/* Drops the last result of the session (plain, sql). */
void bt__clear_last(bt_session *s);

/* ---- the prolly contenders' primitives (client.c, sql.c) ---------------------------------- */

/* Called for each entry of a scan, in key order; non-zero stops the scan (returned by it). */
typedef int (*bt_entry_fn)(void *payload, const void *key, size_t klen, const void *val,
                           size_t vlen);

/* Each returns 0, or -1 with the session's error set; commit also BT_CONFLICT. Reads read
 * s->head when s->in_txn, else the branch head as it is now. */
typedef struct bt_kv_ops {
	int (*db_open)(bt_db *db, int create, char *err, size_t errn);
	void (*db_close)(bt_db *db);
	int (*session_open)(bt_session *s);
	void (*session_close)(bt_session *s);
	/* Reads the branch head into s->head, s->head_hex (and s->head_tree). */
	int (*head)(bt_session *s);
	/* *val, *vlen valid until the session's next call; *found 0 if absent. */
	int (*get)(bt_session *s, const void *key, size_t klen, const void **val, size_t *vlen,
	           int *found);
	/* Looks keys[0..n) up; *found how many are present. */
	int (*get_many)(bt_session *s, const prolly_slice *keys, size_t n, size_t *found);
	/* Entries with lo <= key < hi, at most limit (0: all), to fn. */
	int (*scan)(bt_session *s, const prolly_slice *lo, const prolly_slice *hi, uint64_t limit,
	            bt_entry_fn fn, void *payload);
	int (*count)(bt_session *s, const prolly_slice *lo, const prolly_slice *hi, uint64_t *out);
	/* Commits edits[0..n) on the branch: with expect set, only on s->head (BT_CONFLICT if the
	 * branch moved); without, on whatever the head is. */
	int (*commit)(bt_session *s, const bt_edit *edits, size_t n, int expect);
} bt_kv_ops;

extern const bt_kv_ops bt__client_ops, bt__sql_ops;

/* Group commit of the client contender's transactions (client_group.c): new and free (NULL ok)
 * a bt_db's queue; commit edits made on s->head (s->head_tree) with the transactions of the
 * other sessions queued meanwhile, merged into the branch head (snapshot isolation): 0,
 * BT_CONFLICT (a key also written since s->head), -1 with the session's error set. */
bt_group *bt__group_new(void);
void bt__group_free(bt_group *g);
int bt__group_commit(bt_session *s, const prolly_edit *edits, size_t n);

static inline const bt_kv_ops *bt__kv(const bt_session *s)
{
	return s->db->kind == BT_CLIENT ? &bt__client_ops : &bt__sql_ops;
}

/* Attempts of a commit that finds the head moved: merge into it, compare-and-swap, again if
 * another commit won meanwhile (client: prolly_commit_edits_on's max_attempts). */
#define BT_MERGE_ATTEMPTS 16

/* The message of every commit the prolly contenders make. */
#define BT_COMMIT_MESSAGE "bench tables"

/* ---- the plain contender (plain.c) --------------------------------------------------------- */

int bt__plain_db_open(bt_db *db, int create, char *err, size_t errn);
/* plain.c's SQL pieces, for plain_write.c: "schema"."table" into out; a quoted column appended;
 * every column, comma-separated; "($from, ..., $from+n-1)"; the CREATE INDEX of index; an INT
 * as a binary int8 parameter; a statement of t named "bt<id>_<kind>" begun in s->v (q: its
 * table); prepared once per session; run (s->last its result; 40001, 40P01: BT_CONFLICT). */
int bt__plain_qname(char *out, size_t n, const bt_db *db, const char *table);
void bt__plain_col(bench_buf *b, const bt_table *t, int c);
void bt__plain_cols(bench_buf *b, const bt_table *t);
void bt__plain_params(bench_buf *b, int from, int n);
int bt__plain_index_sql(bench_buf *b, const bt_db *db, const bt_table *t, int index);
void bt__plain_int8(char out[8], int64_t v);
int bt__plain_stmt(bt_session *s, const bt_table *t, char *name, size_t n, const char *kind,
                   char *q, size_t qn);
int bt__plain_prepare(bt_session *s, const char *name, const bench_buf *b, int nparams);
int bt__plain_run(bt_session *s, const char *name, int n, const char *const *v, const int *l);
int bt__plain_session_open(bt_session *s);
void bt__plain_session_close(bt_session *s);
int bt__plain_load(bt_session *s, const bt_table *t, uint64_t n, uint64_t batch, bt_row_fn fn,
                   void *payload);
int bt__plain_create_index(bt_session *s, const bt_table *t, int index);
int bt__plain_get(bt_session *s, const bt_table *t, int64_t pk, bt_row *r, int *found);
int bt__plain_get_many(bt_session *s, const bt_table *t, const int64_t *pks, size_t n,
                       size_t *found);
int bt__plain_range(int64_t *out, bt_session *s, const bt_table *t, const bt_range_q *q);
int bt__plain_exec(bt_session *s, const char *sql); /* BEGIN, COMMIT, ROLLBACK */
int bt__plain_insert(bt_session *s, const bt_table *t, const bt_row *r);
int bt__plain_delete(bt_session *s, const bt_table *t, const bt_row *r);
int bt__plain_update(bt_session *s, const bt_table *t, const bt_row *r);
int bt__plain_delete_oldest(bt_session *s, const bt_table *t, int64_t from_pk, uint64_t n,
                            uint64_t *deleted);

#endif /* BENCH_TABLES_INT_H */
