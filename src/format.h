/*
 * format.h - the one home of the stored objects' magic numbers and fixed offsets, for every file
 * that reads those objects at fixed offsets: the engine and the tests' model store. Stores never
 * include it: the engine passes them the offsets they need (get_ref_objects' offset,
 * get_ancestors' commit layout, built in store_api.c). Not installed; not part of the contract.
 *
 * The layouts, with the checks made when decoding, are tabled at the top of the file that encodes
 * them (node.c, commit.c, reflog.c), where compile-time asserts tie these names to the tables,
 * and mirrored in docs/format.md.
 */
#ifndef PROLLY_FORMAT_H
#define PROLLY_FORMAT_H

/* ------------------------------------------------------------------------------------------ */
/* Magic numbers (the first 4 bytes of every object) and the format version                  */
/* ------------------------------------------------------------------------------------------ */

#define PROLLY_NODE_MAGIC "PRLY"   /* tree nodes (node.c) */
#define PROLLY_COMMIT_MAGIC "PRLC" /* commit objects (commit.c) */
#define PROLLY_REFLOG_MAGIC "PRLG" /* reflog entries (reflog.c) */
#define PROLLY__MAGIC_SIZE 4
#define PROLLY_FORMAT_VERSION 1

/* ------------------------------------------------------------------------------------------ */
/* Tree nodes (node.c)                                                                        */
/* ------------------------------------------------------------------------------------------ */

#define PROLLY__NODE_OFF_VERSION 4 /* u8, PROLLY_FORMAT_VERSION */
#define PROLLY__NODE_OFF_LEVEL 5   /* u8, 0 for a leaf, at most PROLLY_MAX_LEVEL */
#define PROLLY__NODE_OFF_FLAGS 6   /* u16, 0 */
#define PROLLY__NODE_OFF_COUNT 8   /* u32 n, the number of items */
#define PROLLY_NODE_HEADER 12      /* where the key offset table begins */
/* An internal node's child entry: */
#define PROLLY__CHILD_OFF_ID 0     /* 32-byte child id */
#define PROLLY__CHILD_OFF_COUNT 32 /* u64, records below the child */
#define PROLLY_CHILD_ENTRY 40
/* The empty tree: the leaf with n = 0 (the header and the two one-entry offset tables). */
#define PROLLY__NODE_EMPTY_SIZE 20
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

/* ------------------------------------------------------------------------------------------ */
/* Reflog entries (reflog.c): with an o-byte operation, an r-byte ref name, an m-byte message */
/* ------------------------------------------------------------------------------------------ */

#define PROLLY__REFLOG_OFF_VERSION 4 /* u8 */
#define PROLLY__REFLOG_OFF_FLAGS 5   /* u8: bit 0 old value present, bit 1 new value present */
#define PROLLY__REFLOG_OFF_TIME 6    /* int64 time_us */
#define PROLLY__REFLOG_OFF_OLD 14    /* 32-byte old value */
#define PROLLY__REFLOG_OFF_NEW 46    /* 32-byte new value */
#define PROLLY__REFLOG_OFF_OPLEN 78  /* u8 o */
#define PROLLY__REFLOG_OFF_OP 79     /* o operation bytes */
/* After the operation, at PROLLY__REFLOG_OFF_OP + o: */
#define PROLLY__REFLOG_OPTAIL_RLEN 0 /* u16 r */
#define PROLLY__REFLOG_OPTAIL_REF 2  /* r ref name bytes */
/* After the ref name, at PROLLY__REFLOG_OFF_OP + o + PROLLY__REFLOG_OPTAIL_REF + r: */
#define PROLLY__REFLOG_REFTAIL_MLEN 0    /* u16 m */
#define PROLLY__REFLOG_REFTAIL_MESSAGE 2 /* m message bytes */
/* Bytes of an entry without operation, ref name or message: magic 4 + version 1 + flags 1 +
 * time 8 + old 32 + new 32 + o 1 + r 2 + m 2. */
#define PROLLY__REFLOG_FIXED 83

/* ------------------------------------------------------------------------------------------ */
/* Proofs (proof.c): never stored; written by prolly_prove, read by prolly_proof_verify        */
/* ------------------------------------------------------------------------------------------ */

#define PROLLY_PROOF_MAGIC "PRLP"
#define PROLLY_PROOF_VERSION 1
#define PROLLY__PROOF_OFF_VERSION 4 /* u8, PROLLY_PROOF_VERSION */
#define PROLLY__PROOF_OFF_KIND 5    /* u8: 0 a key, 1 a range */
#define PROLLY__PROOF_OFF_FLAGS 6   /* u16, 0 */
#define PROLLY__PROOF_HEADER                                                                       \
	8 /* then u32 a, a key bytes, u32 b, b end-key bytes, u32 n,
                                       n times (u32 size, size node bytes) */

#endif /* PROLLY_FORMAT_H */
