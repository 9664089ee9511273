/*
 * ptest.h - the project's tiny test harness. One header, no library.
 *
 *   PT_TEST(name) { PT_CHECK(x == 1); PT_CHECK_RC(prolly_get(...), 0); }
 *   int main(int argc, char **argv) { return pt_run(argc, argv); }
 *
 * Tests register themselves (constructor attribute) and run in file order. Each prints
 * "ok N - name" or "not ok N - name" (TAP); the last line is "# N passed, N failed".
 * `prog NAME` runs only tests whose name contains NAME. PT_SEED() gives the seed for randomized
 * tests: $PROLLY_TEST_SEED if set, else a fixed default; print it on failure with PT_CHECKF.
 * A test that this machine cannot run (no permission to mount, say) calls PT_SKIP(fmt, ...) and
 * returns: "ok N - name # SKIP why", or "not ok" with CI=true in the environment (docs/testing.md:
 * CI runs everything).
 */
#ifndef PTEST_H
#define PTEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*pt_fn)(void);
struct pt_case {
	const char *name;
	pt_fn fn;
};

#define PT_MAX_CASES 512
static struct pt_case pt_cases[PT_MAX_CASES];
static int pt_ncases;
static int pt_failed_now;
static char pt_skip_why[256];

#define PT_TEST(name)                                                                              \
	static void pt_##name(void);                                                                   \
	__attribute__((constructor)) static void pt_reg_##name(void)                                   \
	{                                                                                              \
		if (pt_ncases < PT_MAX_CASES)                                                              \
			pt_cases[pt_ncases++] = (struct pt_case){#name, pt_##name};                            \
	}                                                                                              \
	static void pt_##name(void)

#define PT_CHECKF(cond, ...)                                                                       \
	do {                                                                                           \
		if (!(cond)) {                                                                             \
			fprintf(stderr, "  %s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);             \
			fprintf(stderr, __VA_ARGS__);                                                          \
			fputc('\n', stderr);                                                                   \
			pt_failed_now = 1;                                                                     \
		}                                                                                          \
	} while (0)

#define PT_CHECK(cond) PT_CHECKF(cond, "%s", "")

/* Checks an int-returning call against the expected code; on mismatch prints the last error. */
#define PT_CHECK_RC(expr, want)                                                                    \
	do {                                                                                           \
		int pt_rc_ = (expr);                                                                       \
		if (pt_rc_ != (want)) {                                                                    \
			fprintf(stderr, "  %s:%d: %s returned %d, want %d (%s)\n", __FILE__, __LINE__, #expr,  \
			        pt_rc_, (want), prolly_last_error());                                          \
			pt_failed_now = 1;                                                                     \
		}                                                                                          \
	} while (0)

#define PT_SKIP(...)                                                                               \
	do {                                                                                           \
		snprintf(pt_skip_why, sizeof(pt_skip_why), __VA_ARGS__);                                   \
		const char *pt_ci_ = getenv("CI");                                                         \
		if (pt_ci_ && strcmp(pt_ci_, "true") == 0) {                                               \
			fprintf(stderr, "  skipped under CI=true, which counts as a failure: %s\n",            \
			        pt_skip_why);                                                                  \
			pt_failed_now = 1;                                                                     \
		}                                                                                          \
	} while (0)

/* Stop the current test on failure so far (use after checks that later code depends on). */
#define PT_REQUIRE(cond)                                                                           \
	do {                                                                                           \
		PT_CHECK(cond);                                                                            \
		if (pt_failed_now)                                                                         \
			return;                                                                                \
	} while (0)

static inline uint64_t PT_SEED(void)
{
	const char *s = getenv("PROLLY_TEST_SEED");
	return s && *s ? strtoull(s, NULL, 0) : 0x5eed1234ULL;
}

static inline int pt_run(int argc, char **argv)
{
	int passed = 0, failed = 0, num = 0;
	for (int i = 0; i < pt_ncases; i++) {
		if (argc > 1 && !strstr(pt_cases[i].name, argv[1]))
			continue;
		pt_failed_now = 0;
		pt_skip_why[0] = 0;
		pt_cases[i].fn();
		num++;
		if (pt_failed_now) {
			failed++;
			printf("not ok %d - %s%s%s\n", num, pt_cases[i].name, pt_skip_why[0] ? " # SKIP " : "",
			       pt_skip_why);
		} else {
			passed++;
			printf("ok %d - %s%s%s\n", num, pt_cases[i].name, pt_skip_why[0] ? " # SKIP " : "",
			       pt_skip_why);
		}
		fflush(stdout);
	}
	printf("# %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#endif
