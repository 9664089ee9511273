/*
 * format.h - the one home of the stored objects' magic numbers and fixed offsets, for every file
 * that reads those objects at fixed offsets: the engine, the stores that follow a commit's
 * parents (mem.c, and pg_sql.c in the text of its SQL), and the tests' model store. Not
 * installed; not part of the contract.
 *
 * The layouts, with the checks made when decoding, are tabled at the top of the file that encodes
 * them (node.c, commit.c, reflog.c) and mirrored in docs/format.md. Offsets are plain decimal
 * literals so that PROLLY__STR can paste them into SQL text.
 */
#ifndef PROLLY_FORMAT_H
#define PROLLY_FORMAT_H

/* A macro's value as a string literal: PROLLY__STR(PROLLY__COMMIT_OFF_PARENTS) is "41". */
#define PROLLY__STR_(x) #x
#define PROLLY__STR(x) PROLLY__STR_(x)

/* ------------------------------------------------------------------------------------------ */
/* Magic numbers (the first 4 bytes of every object) and the format version                  */
/* ------------------------------------------------------------------------------------------ */

#define PROLLY_NODE_MAGIC "PRLY"   /* tree nodes (node.c) */
#define PROLLY_COMMIT_MAGIC "PRLC" /* commit objects (commit.c) */
#define PROLLY_REFLOG_MAGIC "PRLG" /* reflog entries (reflog.c) */
#define PROLLY__MAGIC_SIZE 4
/* The commit magic as hex digits, for a bytea literal in SQL ('\x50524c43'). */
#define PROLLY__COMMIT_MAGIC_HEX "50524c43"
#define PROLLY_FORMAT_VERSION 1

/* ------------------------------------------------------------------------------------------ */
/* Tree nodes (node.c)                                                                        */
/* ------------------------------------------------------------------------------------------ */

#define PROLLY_NODE_HEADER 12 /* magic 4, version 1, level 1, flags 2, n 4 */
#define PROLLY_CHILD_ENTRY 40 /* id 32 + record count 8 */
#define PROLLY_MAX_LEVEL 63

/* ------------------------------------------------------------------------------------------ */
/* Commits (commit.c): with p parents and an m-byte message                                  */
/* ------------------------------------------------------------------------------------------ */

#define PROLLY__COMMIT_OFF_VERSION 4   /* u8, 1..PROLLY_FORMAT_VERSION */
#define PROLLY__COMMIT_OFF_TREE 5      /* 32-byte tree id */
#define PROLLY__COMMIT_OFF_NPARENTS 37 /* u32 p */
#define PROLLY__COMMIT_OFF_PARENTS 41  /* p 32-byte parent ids */
/* After the parents, at PROLLY__COMMIT_OFF_PARENTS + 32p: */
#define PROLLY__COMMIT_TAIL_TIME 0     /* int64 time_us */
#define PROLLY__COMMIT_TAIL_MLEN 8     /* u32 m */
#define PROLLY__COMMIT_TAIL_MESSAGE 12 /* m message bytes */
/* Bytes of a commit without parents or message: magic 4 + version 1 + tree 32 + p 4 + time 8 +
 * m 4. */
#define PROLLY__COMMIT_FIXED 53

#endif /* PROLLY_FORMAT_H */
