/*
 * test_util.c - the library's shared small helpers: the id table (idmap.c), array growth and
 * hex digits and runs of them (util.c). (The generator, bench/lib/rng.h, is tested in
 * test_harness_lib.c.)
 */
#include "internal.h"
#include "ptest.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

/* A made-up id for i; with collide, ids share their first 8 bytes, so their probes all start
 * in the same slot (idmap.c I3). */
static prolly_id some_id(uint64_t i, int collide)
{
	prolly_id id;
	uint64_t s = i;
	for (int k = 0; k < PROLLY_ID_SIZE; k += 8) {
		uint64_t r = bench_splitmix64(&s);
		memcpy(id.bytes + k, &r, 8);
	}
	if (collide)
		memset(id.bytes, 0xab, 8);
	return id;
}

PT_TEST(idmap_put_get_replace)
{
	for (int collide = 0; collide < 2; collide++) {
		prolly__idmap m;
		prolly__idmap_init(&m);
		uint64_t n = collide ? 300 : 20000;
		prolly_id zero;
		memset(&zero, 0, sizeof(zero));
		PT_CHECK(prolly__idmap_get(&m, &zero) == 0);
		PT_CHECK_RC(prolly__idmap_put(&m, &zero, 7), 0); /* the all-zero id is an ordinary key */
		for (uint64_t i = 0; i < n; i++) {
			prolly_id id = some_id(i, collide);
			PT_CHECK_RC(prolly__idmap_put(&m, &id, (uintptr_t)i + 1), 0);
		}
		PT_CHECK(m.len == n + 1);
		PT_CHECK(m.cap && (m.cap & (m.cap - 1)) == 0 && m.len * 2 <= m.cap); /* I1 */
		for (uint64_t i = 0; i < n; i++) {
			prolly_id id = some_id(i, collide);
			PT_CHECKF(prolly__idmap_get(&m, &id) == i + 1, "id %llu", (unsigned long long)i);
		}
		PT_CHECK(prolly__idmap_get(&m, &zero) == 7);
		prolly_id other = some_id(n, collide);
		PT_CHECK(prolly__idmap_get(&m, &other) == 0);
		prolly_id first = some_id(0, collide);
		size_t at = 0;
		PT_CHECK(prolly__idmap_find(&m, &first) == 1); /* entries in the order added */
		PT_CHECK(prolly__idmap_find(&m, &other) == PROLLY__IDMAP_NONE);
		PT_CHECK_RC(prolly__idmap_add(&m, &first, &at), 0); /* there already */
		PT_CHECK(at == 1 && prolly_id_equal(&m.ids[at], &first) && m.vals[at] == 1);
		PT_CHECK_RC(prolly__idmap_put(&m, &first, 99), 0); /* replaces, adds nothing */
		PT_CHECK(prolly__idmap_get(&m, &first) == 99 && m.len == n + 1);
		size_t used = 0;
		for (size_t i = 0; i < m.cap; i++)
			used += m.slots[i].at != 0;
		PT_CHECK(used == m.len); /* I2 */
		prolly__idmap_dispose(&m);
		PT_CHECK(m.slots == NULL && m.cap == 0 && m.len == 0);
		PT_CHECK_RC(prolly__idmap_add(&m, &other, &at), 1); /* added, value 0 */
		PT_CHECK(at == 0 && prolly__idmap_get(&m, &other) == 0 && m.len == 1);
		prolly__idmap_dispose(&m);
	}
}

PT_TEST(grow_doubles_and_keeps_contents)
{
	uint32_t *v = NULL;
	size_t cap = 0;
	PT_CHECK_RC(PROLLY__GROW(v, cap, 1, 16), 0);
	PT_CHECK(v && cap == 16);
	for (uint32_t i = 0; i < 1000; i++) {
		PT_CHECK_RC(PROLLY__GROW(v, cap, i + 1, 16), 0);
		v[i] = i * 3;
	}
	PT_CHECK(cap == 1024);
	PT_CHECK_RC(PROLLY__GROW(v, cap, 5000, 16), 0); /* several doublings at once */
	PT_CHECK(cap == 8192);
	for (uint32_t i = 0; i < 1000; i++)
		PT_CHECK(v[i] == i * 3);
	size_t before = cap;
	uint32_t *kept = v;
	PT_CHECK_RC(PROLLY__GROW(v, cap, SIZE_MAX / 2, 16), PROLLY_ENOMEM); /* too large: untouched */
	PT_CHECK(v == kept && cap == before);
	free(v);

	prolly_buf b = PROLLY_BUF_INIT;
	PT_CHECK_RC(prolly__buf_put(&b, "abc", 3), 0);
	PT_CHECK(b.asize == 64 && b.size == 3 && memcmp(b.ptr, "abc", 4) == 0);
	PT_CHECK_RC(prolly__buf_grow(&b, 65), 0);
	PT_CHECK(b.asize == 128 && memcmp(b.ptr, "abc", 4) == 0);
	prolly_buf_dispose(&b);
}

PT_TEST(hex_digits)
{
	const char *digits = "0123456789abcdefABCDEF";
	for (int c = 0; c < 256; c++) {
		const char *at = c ? strchr(digits, c) : NULL;
		int want = !at ? -1 : at - digits < 16 ? (int)(at - digits) : (int)(at - digits) - 6;
		PT_CHECKF(prolly__hexval(c) == want, "0x%02x: %d", c, prolly__hexval(c));
	}
	PT_CHECK(prolly__hex_span("09afAFg", 7, 0) == 6);
	PT_CHECK(prolly__hex_span("09afAFg", 7, 1) == 4); /* lower_only stops at 'A' */
	PT_CHECK(prolly__hex_span("09af", 2, 0) == 2 && prolly__hex_span("", 0, 0) == 0);
	unsigned char b[3] = {0xff, 0xff, 0xff};
	prolly__hex_nibbles(b, "a1B", 3); /* odd: the last low nibble is kept */
	PT_CHECK(b[0] == 0xa1 && b[1] == 0xbf && b[2] == 0xff);
	prolly_id id;
	PT_CHECK_RC(
	    prolly_id_from_hex(&id, "00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00Fg"),
	    PROLLY_EINVAL);
	PT_CHECK_RC(
	    prolly_id_from_hex(&id, "00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00Fe"),
	    0);
	PT_CHECK(id.bytes[0] == 0 && id.bytes[1] == 0xff && id.bytes[31] == 0xfe);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}

/* The last-error message (error.c): one that quotes the message before it (the store and proof
 * code prefix it: "proof: %s") comes out whole, not garbled by formatting into the buffer it
 * reads; one longer than the buffer keeps its head and its end around " ... ", cut between
 * characters. */
PT_TEST(last_error_quotes_itself_and_keeps_the_end)
{
	PT_CHECK(prolly_set_error(PROLLY_ECORRUPT, "node abc is corrupt: bad value offsets") ==
	         PROLLY_ECORRUPT);
	prolly_set_error(PROLLY_ECORRUPT, "proof: %s", prolly_last_error());
	PT_CHECKF(strcmp(prolly_last_error(), "proof: node abc is corrupt: bad value offsets") == 0,
	          "%s", prolly_last_error());

	size_t n = 100000;
	char *name = malloc(n + 1);
	PT_REQUIRE(name);
	for (size_t i = 0; i < n; i += 2) /* "é" (0xC3 0xA9) throughout: a cut can split one */
		memcpy(name + i, "\xc3\xa9", 2);
	name[n] = 0;
	prolly_set_error(PROLLY_EINVAL, "cannot create directory %s: File name too long", name);
	const char *m = prolly_last_error();
	size_t len = strlen(m);
	PT_CHECKF(len < 1024 && len > 900, "%zu", len);
	PT_CHECK(strncmp(m, "cannot create directory \xc3\xa9", 26) == 0);
	PT_CHECK(strstr(m, "\xc3\xa9 ... \xc3\xa9") != NULL);
	PT_CHECK(strcmp(m + len - 20, ": File name too long") == 0);
	/* no character cut in two: every 0xC3 is followed by its 0xA9, and the reverse */
	int whole = 1;
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)m[i] == 0xc3) != (i + 1 < len && (unsigned char)m[i + 1] == 0xa9))
			whole = 0;
	PT_CHECK(whole);
	free(name);
}
