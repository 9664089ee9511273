/*
 * test_resolve_at.c - BRANCH@{N} and BRANCH@{TIME} (resolve_at.c) on the memory store and on
 * LMDB, with the handle's clock set so that every move has a known time:
 *
 *   - @{N} counts moves back, @{0} the value now; @{TIME} gives the value at TIME, the time of a
 *     move included; steps follow (main@{1}~1);
 *   - a time before the branch existed, or while it was deleted, is PROLLY_ENOTFOUND; a deleted
 *     branch answers for the times it existed (RA1); a tag has a reflog too;
 *   - a time or count beyond the reflog's expired entries is PROLLY_EPRUNED (RA2); with every
 *     entry expired, @{0} is the branch as it is now (RA5);
 *   - the time forms: a date, 'T' or a space, seconds and fractions, Z and numeric zones; and
 *     the malformed ones, PROLLY_EINVAL before anything is read (RA3);
 *   - what @{...} names is read and hash-checked (S1): a commit gc removed is PROLLY_ENOTFOUND.
 *
 * Re-run one test: build/tests/test_resolve_at NAME.
 */
#include "internal.h"
#include "lib/model.h"
#include "ptest.h"

#include <stdio.h>
#include <string.h>

#define SEC_US ((int64_t)1000000)
#define DAY_US (86400 * SEC_US)
/* 2023-11-14T22:13:20Z */
#define T0 ((int64_t)1700000000 * SEC_US)

static int open_db(tm_db *t, int lmdb)
{
	int rc = tm_db_open(t, lmdb, "resolve_at", 0, 0, 0);
	if (rc == 0) {
		t->db->opts.reflog_days = 14;
		t->db->opts.clock_us = T0;
	}
	return rc;
}

/* A commit on branch putting k = v, at the handle's clock, which then moves on by step_us. */
static int put_at(prolly_id *out, prolly_db *db, const char *branch, const char *k, const char *v,
                  int64_t step_us)
{
	int rc = tm_commit_put(out, db, branch, k, v, v);
	db->opts.clock_us += step_us;
	return rc;
}

/* rc of resolving spec; with want, also that it names *want. */
static void expect_at(prolly_db *db, const char *spec, int want_rc, const prolly_id *want)
{
	prolly_id got;
	int rc = prolly_resolve(&got, db, spec);
	PT_CHECKF(rc == want_rc, "'%s': rc %d (%s), want %d", spec, rc, prolly_last_error(), want_rc);
	if (rc == 0 && want)
		PT_CHECKF(prolly_id_equal(&got, want), "'%s': %s, want %s", spec, tm_hex(&got),
		          tm_hex(want));
}

static void counts_and_times(int lmdb)
{
	tm_db t;
	prolly_id c[3], created;
	PT_REQUIRE(open_db(&t, lmdb) == 0);
	prolly_db *db = t.db;
	/* main: created at T0 by its first commit, then moves at T0+10 s, +20 s, +30 s */
	PT_REQUIRE(put_at(&created, db, "main", "k", "first", 10 * SEC_US) == 0);
	for (int i = 0; i < 3; i++) {
		char v[16];
		snprintf(v, sizeof(v), "v%d", i);
		PT_REQUIRE(put_at(&c[i], db, "main", "k", v, 10 * SEC_US) == 0);
	}
	expect_at(db, "main@{0}", 0, &c[2]);
	expect_at(db, "main@{1}", 0, &c[1]);
	expect_at(db, "main@{2}", 0, &c[0]);
	expect_at(db, "main@{3}", 0, &created);
	expect_at(db, "main@{4}", PROLLY_ENOTFOUND, NULL); /* before init made it */
	expect_at(db, "main@{1}~1", 0, &c[0]);
	expect_at(db, "main@{1}^", 0, &c[0]);
	/* times: 2023-11-14T22:13:20Z is T0; the moves at :30, :40, :50 */
	expect_at(db, "main@{2023-11-14T22:13:35Z}", 0, &c[0]);
	expect_at(db, "main@{2023-11-14T22:13:40Z}", 0, &c[1]); /* a move's own time counts */
	expect_at(db, "main@{2023-11-14T22:13:39.999999Z}", 0, &c[0]);
	expect_at(db, "main@{2023-11-14 22:13:45+00}", 0, &c[1]);
	expect_at(db, "main@{2023-11-14 23:13:45+01:00}", 0, &c[1]);
	expect_at(db, "main@{2023-11-14t17:13:45-0500}", 0, &c[1]);
	expect_at(db, "main@{2023-11-14T22:13:45.123456789z}", 0, &c[1]);
	expect_at(db, "main@{2023-11-14 22:13}", PROLLY_ENOTFOUND, NULL); /* 22:13:00: before T0 */
	expect_at(db, "main@{2023-11-14 22:13:20}", 0, &created);
	expect_at(db, "main@{2023-11-14 22:14}", 0, &c[2]);
	expect_at(db, "main@{2023-11-14}", PROLLY_ENOTFOUND, NULL); /* midnight: no main yet */
	expect_at(db, "main@{2023-11-15}", 0, &c[2]);
	expect_at(db, "main@{2099-12-31}", 0, &c[2]);
	expect_at(db, "main@{2023-11-14T22:13:35Z}~1", 0, &created);
	expect_at(db, "main@{2023-11-14T22:13:35Z}~2", PROLLY_ENOTFOUND, NULL); /* past the root */
	tm_db_close(&t);
}

PT_TEST(resolve_at_counts_and_times_mem)
{
	counts_and_times(0);
}

PT_TEST(resolve_at_counts_and_times_lmdb)
{
	counts_and_times(1);
}

/* A deleted branch answers for the times it existed; a tag has a reflog of its own. */
PT_TEST(resolve_at_deleted_branch_and_tag)
{
	tm_db t;
	prolly_id a, b, head;
	PT_REQUIRE(open_db(&t, 0) == 0);
	prolly_db *db = t.db;
	PT_REQUIRE(put_at(&head, db, "main", "k", "first", 10 * SEC_US) == 0);
	PT_REQUIRE(prolly_branch_create(db, "dev", &head) == 0); /* :30 */
	db->opts.clock_us += 10 * SEC_US;
	PT_REQUIRE(put_at(&a, db, "dev", "k", "a", 10 * SEC_US) == 0); /* :40 */
	PT_REQUIRE(prolly_branch_delete(db, "dev") == 0);              /* :50 */
	db->opts.clock_us += 10 * SEC_US;
	PT_REQUIRE(prolly_branch_create(db, "dev", &head) == 0); /* 22:14:00 */
	db->opts.clock_us += 10 * SEC_US;
	PT_REQUIRE(put_at(&b, db, "dev", "k", "b", 10 * SEC_US) == 0); /* 22:14:10 */

	expect_at(db, "dev@{2023-11-14T22:13:29Z}", PROLLY_ENOTFOUND, NULL);
	expect_at(db, "dev@{2023-11-14T22:13:30Z}", 0, &head);
	expect_at(db, "dev@{2023-11-14T22:13:45Z}", 0, &a);
	expect_at(db, "dev@{2023-11-14T22:13:55Z}", PROLLY_ENOTFOUND, NULL); /* deleted then */
	expect_at(db, "dev@{2023-11-14T22:14:05Z}", 0, &head);
	expect_at(db, "dev@{0}", 0, &b);
	expect_at(db, "dev@{2}", PROLLY_ENOTFOUND, NULL); /* before the re-creation: deleted */
	expect_at(db, "dev@{3}", 0, &a);
	PT_REQUIRE(prolly_branch_delete(db, "dev") == 0);
	expect_at(db, "dev@{0}", PROLLY_ENOTFOUND, NULL);
	expect_at(db, "dev@{1}", 0, &b); /* deleted now, but the reflog remembers */
	expect_at(db, "dev", PROLLY_ENOTFOUND, NULL);

	PT_REQUIRE(prolly_tag_create(db, "v1", &a) == 0);
	expect_at(db, "v1@{0}", 0, &a);
	expect_at(db, "v1@{1}", PROLLY_ENOTFOUND, NULL);
	expect_at(db, "nope@{0}", PROLLY_ENOTFOUND, NULL);
	tm_db_close(&t);
}

/* gc expires entries older than reflog_days: what they would tell is PROLLY_EPRUNED, never a
 * guess; and a commit the entries no longer keep is gone (S1). */
PT_TEST(resolve_at_beyond_expired_entries)
{
	tm_db t;
	prolly_id c[3];
	prolly_gc_result res = PROLLY_GC_RESULT_INIT;
	PT_REQUIRE(open_db(&t, 0) == 0);
	prolly_db *db = t.db;
	db->opts.clock_us = T0 + DAY_US;
	PT_REQUIRE(put_at(&c[0], db, "main", "k", "0", 10 * DAY_US) == 0); /* day 1 */
	PT_REQUIRE(put_at(&c[1], db, "main", "k", "1", 10 * DAY_US) == 0); /* day 11 */
	PT_REQUIRE(put_at(&c[2], db, "main", "k", "2", 0) == 0);           /* day 21 */
	PT_REQUIRE(prolly_gc(db, &res) == 0);              /* the 14 days from day 21: day 7 on */
	PT_CHECKF(res.reflog_expired == 1, "%llu expired", /* day 1's */
	          (unsigned long long)res.reflog_expired);
	expect_at(db, "main@{0}", 0, &c[2]);
	expect_at(db, "main@{1}", 0, &c[1]);
	expect_at(db, "main@{2}", 0, &c[0]); /* day 11's entry still says what it moved from */
	expect_at(db, "main@{3}", PROLLY_EPRUNED, NULL);
	PT_CHECK(strstr(prolly_last_error(), "expired") != NULL);
	expect_at(db, "main@{2023-11-26}", 0, &c[1]); /* day 11 was 2023-11-25T22:13:20Z */
	expect_at(db, "main@{2023-11-25}", PROLLY_EPRUNED, NULL);
	expect_at(db, "main@{2023-11-20}", PROLLY_EPRUNED, NULL);
	expect_at(db, "main@{2023-11-14}", PROLLY_EPRUNED, NULL);
	/* RA5: every entry expired; the branch as it is now answers @{0} alone */
	db->opts.reflog_days = 0;
	PT_REQUIRE(prolly_gc(db, &res) == 0);
	expect_at(db, "main@{0}", 0, &c[2]);
	expect_at(db, "main@{1}", PROLLY_EPRUNED, NULL);
	expect_at(db, "main@{2099-01-01}", PROLLY_EPRUNED, NULL);
	expect_at(db, "gone@{0}", PROLLY_ENOTFOUND, NULL);
	tm_db_close(&t);
}

/* @{0} of a branch that exists reads it as NAME alone (RA1): a few items, never the reflog's
 * 300 entries, which @{1} reads. */
PT_TEST(resolve_at_zero_reads_no_reflog)
{
	tm_db t;
	prolly_id c, got;
	prolly_stats st = PROLLY_STATS_INIT;
	PT_REQUIRE(open_db(&t, 0) == 0);
	for (int i = 0; i < 300; i++) {
		char v[16];
		snprintf(v, sizeof(v), "v%d", i);
		PT_REQUIRE(put_at(&c, t.db, "main", "k", v, SEC_US) == 0);
	}
	prolly_db_cache_clear(t.db);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_resolve(&got, t.db, "main@{0}"), 0);
	PT_CHECK(prolly_id_equal(&got, &c));
	prolly_thread_stats(&st);
	PT_CHECKF(st.store_read_items <= 4, "@{0}: %llu items read",
	          (unsigned long long)st.store_read_items);
	prolly_db_cache_clear(t.db);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_resolve(&got, t.db, "main@{1}"), 0);
	prolly_thread_stats(&st);
	PT_CHECKF(st.store_read_items >= 300, "@{1}: %llu items read",
	          (unsigned long long)st.store_read_items);
	tm_db_close(&t);
}

PT_TEST(resolve_at_malformed)
{
	tm_db t;
	PT_REQUIRE(open_db(&t, 0) == 0);
	static const char *const bad[] = {"main@",
	                                  "main@1",
	                                  "main@{",
	                                  "main@{}",
	                                  "main@{1",
	                                  "main@{-1}",
	                                  "main@{x}",
	                                  "main@{1x}",
	                                  "main@{2023}1",
	                                  "main@{2023-1-01}",
	                                  "main@{2023-13-01}",
	                                  "main@{2023-04-31}",
	                                  "main@{2023-02-29}",
	                                  "main@{2023-11-14T24:00}",
	                                  "main@{2023-11-14T22:60}",
	                                  "main@{2023-11-14 22:13:60}",
	                                  "main@{2023-11-14T22}",
	                                  "main@{2023-11-14T22:13:2}",
	                                  "main@{2023-11-14T22:13:20.}",
	                                  "main@{2023-11-14T22:13:20.1234567890}",
	                                  "main@{2023-11-14+24}",
	                                  "main@{2023-11-14+05:60}",
	                                  "main@{2023-11-14+5}",
	                                  "main@{2023-11-14Z1}",
	                                  "main@{2023-11-14 }",
	                                  "main@{1000000001}",
	                                  "main@{1}@{1}",
	                                  "main~1@{1}",
	                                  "main@{1}x",
	                                  "@{1}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_at(t.db, bad[i], PROLLY_EINVAL, NULL);
	/* a leap day is a date; @{...} after anything but a branch or tag name is refused */
	expect_at(t.db, "main@{2024-02-29}", PROLLY_ENOTFOUND, NULL);
	expect_at(t.db, "main@{2000-02-29T00:00:00Z}", PROLLY_ENOTFOUND, NULL);
	prolly_id head;
	char spec[PROLLY_ID_HEX_SIZE + 8];
	PT_REQUIRE(put_at(&head, t.db, "main", "k", "first", 0) == 0);
	prolly_id_to_hex(spec, &head);
	strcat(spec, "@{0}");
	expect_at(t.db, spec, PROLLY_EINVAL, NULL);
	tm_db_close(&t);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
