/*
 * table.h - versioned tables: how the harness's relational suites (insert, sysbench, tpcb) keep
 * the rows of ordinary tables in prolly, and the three contenders that run their statements.
 *
 *   plain   a PostgreSQL table with a primary key and B-tree secondary indexes (libpq)
 *   client  prolly through the C library (include/prolly.h) on the run's PostgreSQL store
 *   sql     prolly through one statement of the prolly extension per operation (ext/postgres)
 *
 * The client and sql contenders share one prolly store and read the same trees; the plain
 * contender has its own tables. A suite loads each contender's data once (bt_load) and runs the
 * same operations on all three, so their figures compare like for like.
 *
 * Encoding (one home: this header and encode.c; mirrored in docs/benchmarks/tables.md, "Tables in
 * prolly"). One tree holds every table of a suite; each table is a key range:
 *
 *   key    [table id: 1 byte][index id: 1 byte][key columns]
 *          index id 0 is the row itself: key columns = the primary key,
 *                                        value = every other column, in column order
 *          index id i >= 1 is secondary index i: key columns = the index's columns, then the
 *                                        primary key; value = empty
 *   INT    8 bytes, big-endian, sign bit flipped (byte order = numeric order)
 *   TEXT   in values only: 2-byte big-endian length, then the bytes (at most BT_MAX_TEXT)
 *
 * so a primary-key range is a key range, an index range is a key range, and a row's key and
 * index entries change in the same commit as the row. Key columns are INT (every key of the
 * three suites is); a table without a natural key (tpcb's history) gets one from the suite.
 *
 * Threads: a bt_db is read-only after bt_db_open and may be shared; a bt_session belongs to one
 * thread at a time. Errors: 0 on success; -1 with a one-line message in the session's or the
 * caller's err buffer; BT_CONFLICT when a transaction lost a race (retry it). No message shows a
 * password (URLs through prolly_redact_url(), libpq messages through prolly_redact_message()).
 */
#ifndef BENCH_TABLE_H
#define BENCH_TABLE_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

#define BT_MAX_COLS 8
#define BT_MAX_INDEXES 4
#define BT_MAX_INDEX_COLS 4
#define BT_MAX_TEXT 4096
#define BT_CONFLICT (-2) /* bt_commit: another transaction moved the branch first */

/* ---- schema ------------------------------------------------------------------------------- */

typedef enum { BT_INT, BT_TEXT } bt_type;

typedef struct bt_column {
	const char *name; /* SQL column name of the plain table */
	bt_type type;
} bt_column;

typedef struct bt_index {
	const char *name; /* SQL index name of the plain table */
	int ncols;
	int cols[BT_MAX_INDEX_COLS]; /* column numbers (INT columns), the primary key appended */
} bt_index;

typedef struct bt_table {
	const char *name; /* SQL table name of the plain table */
	uint8_t id;       /* the key's first byte; unique within a suite */
	int ncols;
	bt_column cols[BT_MAX_COLS];
	int pk; /* the primary-key column (INT) */
	int nindexes;
	bt_index indexes[BT_MAX_INDEXES]; /* secondary index i + 1 */
} bt_table;

/* A row: column c is ints[c] (INT) or text[c], text_len[c] (TEXT). Decoded rows point into the
 * value they came from, valid until the session's next call. */
typedef struct bt_row {
	int64_t ints[BT_MAX_COLS];
	const char *text[BT_MAX_COLS];
	uint16_t text_len[BT_MAX_COLS];
} bt_row;

/* ---- encoding (encode.c; pure functions, no I/O) ------------------------------------------ */

/* Each appends to out and returns 0, or -1 when out of memory or the row does not fit (a TEXT
 * longer than BT_MAX_TEXT). */
int bt_key_pk(bench_buf *out, const bt_table *t, int64_t pk);
/* The entry of secondary index `index` (1-based) for row r. */
int bt_key_index(bench_buf *out, const bt_table *t, int index, const bt_row *r);
/* A bound for a range of index `index` (0: the primary key): the prefix of its key holding the
 * first n key columns vals[0..n) (n 0: the index's first key). */
int bt_key_prefix(bench_buf *out, const bt_table *t, int index, const int64_t *vals, int n);
/* The key just past every key starting with the prefix of index `index` (a range's end). */
int bt_key_prefix_end(bench_buf *out, const bt_table *t, int index, const int64_t *vals, int n);
int bt_value(bench_buf *out, const bt_table *t, const bt_row *r);
/* Decodes a primary entry (key and value) into r; -1 if malformed. */
int bt_decode_row(bt_row *r, const bt_table *t, const void *key, size_t klen, const void *val,
                  size_t vlen);
/* Decodes a secondary entry's key into the index columns and the primary key of r. */
int bt_decode_index(bt_row *r, const bt_table *t, int index, const void *key, size_t klen);

/* ---- contenders (plain.c, client.c, sql.c behind session.c) ------------------------------- */

typedef enum { BT_PLAIN, BT_CLIENT, BT_SQL, BT_N_CONTENDERS } bt_kind;
extern const char *const bt_contender_names[BT_N_CONTENDERS]; /* "plain", "client", "sql" */

typedef struct bt_db bt_db;           /* a contender's data: tables or a prolly branch */
typedef struct bt_session bt_session; /* one client's connection to it */

/* Opens contender kind on the PostgreSQL server at url, for the tables tables[0..n) (the
 * array and the tables must outlive the bt_db). plain: the tables live in PostgreSQL schema
 * `schema`; client and sql: the prolly store lives there and the rows on prolly branch
 * `branch`. With create set, drops whatever held the tables (or the branch) and creates them
 * empty. A prolly store the open creates has nodes of node_size (0: the default; an existing
 * store of another size is an error); plain ignores it. sql needs the prolly extension
 * installed in the database (-1 with err saying so). */
int bt_db_open(bt_db **out, bt_kind kind, const char *url, const char *schema, const char *branch,
               const bt_table *const *tables, size_t n, int create, unsigned node_size, char *err,
               size_t errn);
void bt_db_close(bt_db *db); /* NULL ok */
bt_kind bt_db_kind(const bt_db *db);

int bt_session_open(bt_session **out, bt_db *db, char *err, size_t errn);
void bt_session_close(bt_session *s);              /* NULL ok */
const char *bt_session_error(const bt_session *s); /* the last failure's message */

/* Bulk load: n rows of table t, row i made by fn(payload, i, &row), in primary-key order, in
 * commits of `batch` rows (plain: COPY, one transaction per batch; client: one prolly commit
 * per batch; sql: one prolly_commit statement per batch). The rows' entries of every index t
 * declares are written with them; bt_db_open creates the plain indexes the tables declare, so
 * a suite that builds an index later (l.x) opens and loads with a copy of the table that
 * declares fewer indexes, then calls bt_create_index with the full one. */
typedef int (*bt_row_fn)(void *payload, uint64_t i, bt_row *row);
int bt_load(bt_session *s, const bt_table *t, uint64_t n, uint64_t batch, bt_row_fn fn,
            void *payload);
/* Builds secondary index `index` of t over the rows present (plain: CREATE INDEX IF NOT EXISTS;
 * prolly: a scan of the rows and one commit of their entries per million rows). The insert
 * benchmark's l.x step. */
int bt_create_index(bt_session *s, const bt_table *t, int index);

/* ---- reads (outside a transaction: the branch head or the table as it is now) ------------- */

/* The row with primary key pk into *r; *found 0 if none. */
int bt_get(bt_session *s, const bt_table *t, int64_t pk, bt_row *r, int *found);
/* The rows of pks[0..n) (an IN list / get_many: a key given twice is read and counted once);
 * *found how many exist. */
int bt_get_many(bt_session *s, const bt_table *t, const int64_t *pks, size_t n, size_t *found);

typedef enum { BT_ROWS, BT_COUNT, BT_SUM } bt_agg;
typedef struct bt_range_q {
	int index;                     /* 0: primary key; i >= 1: secondary index i (index-only) */
	int64_t lo[BT_MAX_INDEX_COLS]; /* from the first entry >= (lo[0..nlo)) */
	int nlo;
	int64_t hi[BT_MAX_INDEX_COLS]; /* up to entries <= (hi[0..nhi)); nhi 0: no upper bound */
	int nhi;
	uint64_t limit; /* at most this many entries; 0: no limit */
	bt_agg agg;     /* BT_ROWS: read the entries; BT_COUNT: count them; BT_SUM: sum column col */
	int col;
} bt_range_q;
/* Runs q on t. *out: BT_ROWS the entries read, BT_COUNT the count, BT_SUM the sum. */
int bt_range(int64_t *out, bt_session *s, const bt_table *t, const bt_range_q *q);

/* ---- transactions (one commit each) ------------------------------------------------------- */

/* Starts a transaction: plain BEGIN; client and sql read the branch head, the transaction's
 * snapshot: reads inside a transaction (bt_get, bt_get_many, bt_range) read that head. */
int bt_begin(bt_session *s);
int bt_insert(bt_session *s, const bt_table *t, const bt_row *r);
/* Deletes row r (its primary key and its index entries: r must be the row as stored). */
int bt_delete(bt_session *s, const bt_table *t, const bt_row *r);
/* Replaces row old by row new (same primary key): only the index entries that change. */
int bt_update(bt_session *s, const bt_table *t, const bt_row *old, const bt_row *new_row);
/* Deletes the n rows of t with the smallest primary keys >= from_pk; *deleted how many. */
int bt_delete_oldest(bt_session *s, const bt_table *t, int64_t from_pk, uint64_t n,
                     uint64_t *deleted);
/* Commits: 0; BT_CONFLICT when the transaction must run again (nothing written; begin again);
 * -1 on failure (the transaction is rolled back). plain: a statement or the COMMIT failing with
 * 40001 or 40P01 (deadlock) is BT_CONFLICT; bt_rollback then. client and sql: the writes are
 * kept in the session and sent at bt_commit; reads inside the transaction do not see them. They
 * commit with snapshot isolation (include/prolly.h, prolly_commit_edits_on): if the branch
 * moved since bt_begin, the writes are merged into the new head unless a key they write was
 * written since bt_begin (a write-write conflict: BT_CONFLICT), so transactions writing disjoint
 * rows all commit, and two that update the same row (tpcb's branch balance) never both do. */
int bt_commit(bt_session *s);
/* How many of the session's commits were merged into a head that had moved since their
 * bt_begin (client; sql and plain: 0, the server does not say). */
uint64_t bt_session_rebased(const bt_session *s);
void bt_rollback(bt_session *s);

#endif /* BENCH_TABLE_H */
