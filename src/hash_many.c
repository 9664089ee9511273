/*
 * hash_many.c - SHA-256 of many buffers at once: the check of a batch of nodes read.
 *
 * prolly__hash (util.c) hashes one buffer at a time through OpenSSL, with the CPU's SHA
 * extensions where it has them. Where the CPU has AVX-512, prolly__hash_many hashes sixteen
 * buffers side by side instead, each in one 32-bit lane of a 512-bit register, SHA-256's steps
 * (FIPS 180-4: the round constants, the message schedule, the compression) applied to all lanes
 * by the same instructions. Every node read costs its hash check (docs/format.md, N7): a batch
 * of them (L1 of db.c) is checked here. On the Intel machine of docs/benchmarks.md, with the SHA
 * extensions as well, the LMDB store's 10k-key get_many took 0.72-0.96x the time it took with one
 * hash at a time (docs/benchmarks/engine.md, "Sixteen hashes at once").
 *
 * Invariants:
 *   HM1 the digests are prolly__hash's, whatever the path (tests/test_hash_many.c compares them
 *       for every length from 0 to 300 bytes and for random lengths up to 20 KB, both paths).
 *   HM2 a group's lanes go through their blocks in step, block b of every lane at once (its
 *       words transposed into registers by transpose16, word t of every lane in w[t]); a lane
 *       whose message (with its padding) has ended is fed a zero block and its state is left as
 *       it was (a masked add), so buffers of any lengths share a group. Buffers are grouped in
 *       order of length, so that lanes of one group end at about the same block.
 *   HM3 the AVX-512 path runs only where the CPU and the system support it (the compiler's
 *       __builtin_cpu_supports, which also checks that the system saves the 512-bit registers);
 *       elsewhere, and for a group of fewer than MIN_LANES buffers, each buffer goes to
 *       prolly__hash.
 */
#include "internal.h"

#include <stdlib.h>

#define LANES 16
/* A group of sixteen lanes costs about as much as ten buffers hashed one at a time through the
 * SHA extensions: a group with fewer buffers goes one at a time (with four, the LMDB store's
 * merge, which reads small batches, was 2-6% slower). */
#define MIN_LANES 10

static atomic_int simd_off; /* tests: prolly__hash_many_simd(0) */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_X16 1

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
static const uint32_t H0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

static int x16_supported(void)
{
	static atomic_int have = -1; /* a race only computes the same answer twice */
	int h = atomic_load(&have);
	if (h < 0) {
		__builtin_cpu_init();
		h = __builtin_cpu_supports("avx512f") ? 1 : 0;
		atomic_store(&have, h);
	}
	return h;
}

/* XOR of three (0x96), choose (0xca: e ? f : g), majority (0xe8) as ternary logic. */
#define ROR(x, n) _mm512_ror_epi32(x, n)
#define XOR3(a, b, c) _mm512_ternarylogic_epi32(a, b, c, 0x96)

/* w[t] = big-endian word t of every lane's block (blk[l], 64 bytes), lane l in element l: the
 * sixteen blocks loaded as rows, each 32-bit word byte-swapped, and the 16 x 16 matrix of words
 * transposed in registers (words within 128-bit quarters, then quarters across registers). */
__attribute__((target("avx512f"))) static void transpose16(__m512i w[16],
                                                           const unsigned char *const blk[LANES])
{
	const __m512i hi = _mm512_set1_epi32((int)0xff00ff00u);
	__m512i r[16], t[16], u[16];
	for (int l = 0; l < LANES; l++) { /* bswap32: bytes 3 and 1 from ror 8, 2 and 0 from rol 8 */
		__m512i x = _mm512_loadu_si512((const void *)blk[l]);
		r[l] = _mm512_ternarylogic_epi32(hi, _mm512_ror_epi32(x, 8), _mm512_rol_epi32(x, 8), 0xca);
	}
	for (int i = 0; i < 16; i += 2) { /* quarter q of t[i]: rows i, i+1 at words 4q, 4q+1 */
		t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
	}
	for (int g = 0; g < 16; g += 4) { /* quarter q of u[g + j]: rows g..g+3 at word 4q + j */
		u[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
		u[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
		u[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
		u[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
	}
	for (int j = 0; j < 4; j++) { /* w[4q + j]'s quarter k is u[4k + j]'s quarter q */
		__m512i x0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x44);
		__m512i x1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xee);
		__m512i y0 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x44);
		__m512i y1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xee);
		w[j] = _mm512_shuffle_i32x4(x0, y0, 0x88);
		w[4 + j] = _mm512_shuffle_i32x4(x0, y0, 0xdd);
		w[8 + j] = _mm512_shuffle_i32x4(x1, y1, 0x88);
		w[12 + j] = _mm512_shuffle_i32x4(x1, y1, 0xdd);
	}
}

/* One block of each lane (blk[l], 64 bytes) into st; lanes outside `live` keep their state. */
__attribute__((target("avx512f"))) static void compress16(__m512i st[8],
                                                          const unsigned char *const blk[LANES],
                                                          __mmask16 live)
{
	__m512i w[16];
	transpose16(w, blk);
	__m512i a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
	for (int t = 0; t < 64; t++) {
		__m512i wt;
		if (t < 16) {
			wt = w[t];
		} else {
			__m512i w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
			__m512i s0 = XOR3(ROR(w15, 7), ROR(w15, 18), _mm512_srli_epi32(w15, 3));
			__m512i s1 = XOR3(ROR(w2, 17), ROR(w2, 19), _mm512_srli_epi32(w2, 10));
			wt = _mm512_add_epi32(_mm512_add_epi32(w[t & 15], s0),
			                      _mm512_add_epi32(w[(t - 7) & 15], s1));
			w[t & 15] = wt;
		}
		__m512i t1 = _mm512_add_epi32(
		    _mm512_add_epi32(h, XOR3(ROR(e, 6), ROR(e, 11), ROR(e, 25))),
		    _mm512_add_epi32(_mm512_ternarylogic_epi32(e, f, g, 0xca),
		                     _mm512_add_epi32(_mm512_set1_epi32((int)K[t]), wt)));
		__m512i t2 = _mm512_add_epi32(XOR3(ROR(a, 2), ROR(a, 13), ROR(a, 22)),
		                              _mm512_ternarylogic_epi32(a, b, c, 0xe8));
		h = g;
		g = f;
		f = e;
		e = _mm512_add_epi32(d, t1);
		d = c;
		c = b;
		b = a;
		a = _mm512_add_epi32(t1, t2);
	}
	__m512i v[8] = {a, b, c, d, e, f, g, h};
	for (int i = 0; i < 8; i++) /* HM2 */
		st[i] = _mm512_mask_add_epi32(st[i], live, st[i], v[i]);
}

/* The digests of up to LANES buffers, by[0..m): out[by[l]] for data[by[l]]. */
__attribute__((target("avx512f"))) static void hash16(prolly_id *out,
                                                      const unsigned char *const *data,
                                                      const size_t *size, const size_t *by,
                                                      size_t m)
{
	static const unsigned char zero[64];
	unsigned char tail[LANES][128]; /* each lane's last bytes, padding and length */
	size_t full[LANES], blocks[LANES], most = 0;
	__m512i st[8];
	for (int i = 0; i < 8; i++)
		st[i] = _mm512_set1_epi32((int)H0[i]);
	for (size_t l = 0; l < LANES; l++) {
		size_t n = l < m ? size[by[l]] : 0, rest;
		full[l] = n / 64;
		rest = n - full[l] * 64;
		blocks[l] = l < m ? full[l] + (rest + 9 <= 64 ? 1 : 2) : 0;
		if (l >= m)
			continue;
		memset(tail[l], 0, sizeof(tail[l]));
		if (rest)
			memcpy(tail[l], data[by[l]] + full[l] * 64, rest);
		tail[l][rest] = 0x80;
		size_t end = (blocks[l] - full[l]) * 64;
		uint64_t bits = (uint64_t)n * 8;
		for (int i = 0; i < 8; i++)
			tail[l][end - 1 - i] = (unsigned char)(bits >> (8 * i));
		if (blocks[l] > most)
			most = blocks[l];
	}
	for (size_t b = 0; b < most; b++) {
		const unsigned char *blk[LANES];
		__mmask16 live = 0;
		for (size_t l = 0; l < LANES; l++) {
			if (b < full[l])
				blk[l] = data[by[l]] + b * 64;
			else if (b < blocks[l])
				blk[l] = tail[l] + (b - full[l]) * 64;
			else
				blk[l] = zero;
			if (b < blocks[l])
				live |= (__mmask16)(1u << l);
		}
		compress16(st, blk, live);
	}
	uint32_t words[8][LANES];
	for (int i = 0; i < 8; i++)
		_mm512_storeu_si512((void *)words[i], st[i]);
	for (size_t l = 0; l < m; l++)
		for (int i = 0; i < 8; i++) {
			uint32_t x = words[i][l];
			unsigned char *o = out[by[l]].bytes + 4 * i;
			o[0] = (unsigned char)(x >> 24);
			o[1] = (unsigned char)(x >> 16);
			o[2] = (unsigned char)(x >> 8);
			o[3] = (unsigned char)x;
		}
}
#endif

int prolly__hash_many_simd(int on)
{
	atomic_store(&simd_off, !on);
#ifdef HAVE_X16
	return on && x16_supported();
#else
	return 0;
#endif
}

static _Thread_local const size_t *sort_sizes; /* HM2's sort: the sizes it orders by */

static int by_size(const void *a, const void *b)
{
	size_t x = sort_sizes[*(const size_t *)a], y = sort_sizes[*(const size_t *)b];
	return x < y ? -1 : x > y;
}

void prolly__hash_many(prolly_id *out, const unsigned char *const *data, const size_t *size,
                       size_t n)
{
#ifdef HAVE_X16
	size_t *by;
	if (n >= MIN_LANES && !atomic_load(&simd_off) && x16_supported() &&
	    (by = malloc(n * sizeof(*by))) != NULL) {
		for (size_t i = 0; i < n; i++)
			by[i] = i;
		sort_sizes = size;
		qsort(by, n, sizeof(*by), by_size); /* HM2 */
		for (size_t i = 0; i < n; i += LANES) {
			size_t m = PROLLY_MIN(LANES, n - i);
			if (m >= MIN_LANES) {
				hash16(out, data, size, by + i, m);
				continue;
			}
			for (size_t j = i; j < n; j++)
				prolly__hash(&out[by[j]], data[by[j]], size[by[j]]);
		}
		free(by);
		return;
	}
#endif
	for (size_t i = 0; i < n; i++)
		prolly__hash(&out[i], data[i], size[i]);
}
