/*
 * boundary_ref.h - an independent reference for the chunk boundary rule (docs/format.md, "Chunk
 * boundaries", C1-C5), written from that page and not from src/chunk.c, so that the tests that
 * use it (test_boundary, test_engine's chunk_rule_limits, test_history's shape check, test_golden's
 * independent encoder) notice any change to the library's prolly__boundary.
 *
 * The reference works in long double with the exp() of the C library; the format is defined by
 * src/chunk.c's fixed sequence of double operations. The two can only disagree when h(k) lies
 * within a hair of a C3 threshold (TB_NEAR_BAND units of h, against an error of about 1e-3 unit
 * in the library's sum): the reference reports those calls as `near` and does not decide them.
 */
#ifndef PROLLY_TEST_BOUNDARY_REF_H
#define PROLLY_TEST_BOUNDARY_REF_H

#include <stddef.h>
#include <stdint.h>

#define TB_MIN 512   /* C1: below this running size, never a boundary (4 KiB nodes) */
#define TB_MAX 16384 /* C2: above it, always (4 KiB nodes) */
#define TB_NEAR_BAND 0.01L

/* Encoded item sizes (docs/format.md): a leaf record is 8 + key + value bytes (two offsets and
 * the heaps), an internal item 44 + key bytes (an offset, the child id, its record count). */
size_t tb_leaf_item_size(size_t klen, size_t vlen);
size_t tb_child_item_size(size_t klen);

/* h(k): the high 32 bits of XXH3-64 of the key bytes with seed 0x9e3779b97f4a7c15 * (level + 1). */
uint32_t tb_key_hash(unsigned level, const void *key, size_t klen);

/* The rule for an item of size r with key k that brought the running size to s (s >= r >= 1).
 * Returns 1 for a boundary, 0 for none. *near (may be NULL) is set to 1 when h(k) is within
 * TB_NEAR_BAND of a C3 threshold, where the answer is the library's arithmetic's to give (the
 * returned value is then the exact-arithmetic one), else to 0. */
int tb_boundary(unsigned level, const void *key, size_t klen, size_t s, size_t r, int *near);
/* The same for nodes of T = 2^shift bytes (tb_boundary is shift 12): C1 below T / 8, C2 above
 * 4 T, T in C3's x. */
int tb_boundary_at(unsigned shift, unsigned level, const void *key, size_t klen, size_t s, size_t r,
                   int *near);

/* The library's rule of 4 KiB nodes (prolly__chunk_rule_init, PROLLY_CHUNK_SHIFT), made once:
 * what the tests pass to prolly__boundary to compare it with the reference. */
struct prolly__chunk_rule;
const struct prolly__chunk_rule *tb_library_rule4(void);

/* For walks over whole trees: tb_boundary's answer, except in the near band (never met in the
 * suite's fixed-seed runs), where the library's prolly__boundary decides; tb_near_calls counts
 * those calls. */
int tb_boundary_decide(unsigned level, const void *key, size_t klen, size_t s, size_t r);
extern uint64_t tb_near_calls;

#endif
