/*
 * util.c - buffers, ids, hashing, clocks and counters.
 */
/* The low-level SHA-256 functions below, deprecated (not removed) in OpenSSL 3.0: declared
 * without the deprecation warning. */
#define OPENSSL_API_COMPAT 10101
#include "internal.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <time.h>

void prolly_buf_dispose(prolly_buf *buf)
{
	if (!buf)
		return;
	free(buf->ptr);
	buf->ptr = NULL;
	buf->size = buf->asize = 0;
}

int prolly__grow(void *arrp, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t ncap = *cap ? *cap : first ? first : 1;
	void *p;
	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return PROLLY_ENOMEM;
		ncap *= 2;
	}
	if (elem && ncap > SIZE_MAX / elem)
		return PROLLY_ENOMEM;
	/* *arrp is a T *, read and written as bytes so that no T * is accessed as a void *. */
	memcpy(&p, arrp, sizeof(p));
	if (!(p = realloc(p, ncap * elem)))
		return PROLLY_ENOMEM;
	memcpy(arrp, &p, sizeof(p));
	*cap = ncap;
	return 0;
}

int prolly__buf_grow(prolly_buf *b, size_t need)
{
	if (PROLLY__GROW(b->ptr, b->asize, need, 64))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory growing a buffer to %zu bytes", need);
	return 0;
}

int prolly__buf_set(prolly_buf *b, const void *data, size_t size)
{
	/* Grown before it is emptied: a failure leaves b as it was (outputs untouched on failure). */
	int rc = prolly__buf_grow(b, size + 1);
	if (rc)
		return rc;
	b->size = 0;
	return prolly__buf_put(b, data, size);
}

int prolly__buf_put(prolly_buf *b, const void *data, size_t size)
{
	int rc = prolly__buf_grow(b, b->size + size + 1);
	if (rc)
		return rc;
	if (size)
		memcpy(b->ptr + b->size, data, size);
	b->size += size;
	b->ptr[b->size] = 0; /* always NUL-terminated for convenience; not part of size */
	return 0;
}

/* SHA-256 through OpenSSL's low-level SHA256_Init/Update/Final on a context on the stack: they
 * call the same assembly (the CPU's SHA extensions where it has them) with no lookup, no heap
 * context and no library initialisation. OpenSSL 3 marks them deprecated in favour of EVP, whose
 * first use initialises the library (its configuration file, every algorithm's tables: about
 * 2-3 ms of CPU, and more at exit, in every process, a CLI command's largest single cost after
 * the dynamic loader), and whose EVP_Digest allocates a context per call (295 against 178 ns
 * for 200 bytes). A build against an OpenSSL without the deprecated functions
 * (OPENSSL_NO_DEPRECATED_3_0) takes the EVP way, with the method fetched once per process.
 * Either way the digest is SHA-256 (test_golden). */
#ifndef OPENSSL_NO_DEPRECATED_3_0
void prolly__hash(prolly_id *out, const void *data, size_t size)
{
	SHA256_CTX c;
	SHA256_Init(&c);
	SHA256_Update(&c, data, size);
	SHA256_Final(out->bytes, &c);
}
#else
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void fetch_sha256(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

void prolly__hash(prolly_id *out, const void *data, size_t size)
{
	pthread_once(&sha256_once, fetch_sha256);
	/* EVP_Digest fails only when it cannot allocate its context; the one-shot call then gives
	 * the same digest the slower way. */
	if (!sha256_md || !EVP_Digest(data, size, out->bytes, NULL, sha256_md, NULL))
		SHA256(data, size, out->bytes);
}
#endif

void prolly_id_to_hex(char out[PROLLY_ID_HEX_SIZE], const prolly_id *id)
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < PROLLY_ID_SIZE; i++) {
		out[2 * i] = digits[id->bytes[i] >> 4];
		out[2 * i + 1] = digits[id->bytes[i] & 15];
	}
	out[2 * PROLLY_ID_SIZE] = 0;
}

int prolly__hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

size_t prolly__hex_span(const char *s, size_t len, int lower_only)
{
	size_t n = 0;
	while (n < len && prolly__hexval((unsigned char)s[n]) >= 0 &&
	       !(lower_only && s[n] >= 'A' && s[n] <= 'F'))
		n++;
	return n;
}

void prolly__hex_nibbles(unsigned char *out, const char *hex, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v = (unsigned)prolly__hexval((unsigned char)hex[i]);
		unsigned shift = i % 2 ? 0 : 4;
		assert(v < 16); /* the caller checked with prolly__hex_span */
		out[i / 2] = (unsigned char)((out[i / 2] & ~(0xfu << shift)) | v << shift);
	}
}

int prolly_id_from_hex(prolly_id *out, const char *hex)
{
	if (!hex || strlen(hex) != 2 * PROLLY_ID_SIZE)
		return prolly_set_error(PROLLY_EINVAL, "an id is 64 hex digits: '%s'",
		                        hex ? hex : "(null)");
	if (prolly__hex_span(hex, 2 * PROLLY_ID_SIZE, 0) != 2 * PROLLY_ID_SIZE)
		return prolly_set_error(PROLLY_EINVAL, "not a hex id: '%s'", hex);
	prolly__hex_nibbles(out->bytes, hex, 2 * PROLLY_ID_SIZE);
	return 0;
}

int prolly_id_equal(const prolly_id *a, const prolly_id *b)
{
	return memcmp(a->bytes, b->bytes, PROLLY_ID_SIZE) == 0;
}

int64_t prolly__now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t prolly__mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void prolly__deadline(struct timespec *out, clockid_t clock, uint64_t ms)
{
	clock_gettime(clock, out);
	out->tv_sec += (time_t)(ms / 1000);
	out->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (out->tv_nsec >= 1000000000L) {
		out->tv_sec++;
		out->tv_nsec -= 1000000000L;
	}
}

/* ---- counters ---- */

static _Thread_local prolly__counters thread_cnt;

prolly_stats *prolly__thread_stats(void)
{
	return &thread_cnt.s;
}

int prolly_thread_stats(prolly_stats *out)
{
	return prolly__stats_put(out, &thread_cnt.s);
}

void prolly_thread_stats_reset(void)
{
	memset(&thread_cnt, 0, sizeof(thread_cnt));
}

static void stats_sum(prolly_stats *to, const prolly_stats *d)
{
	to->cache_hits += d->cache_hits;
	to->cache_misses += d->cache_misses;
	to->cache_evictions += d->cache_evictions;
	to->nodes_read += d->nodes_read;
	to->bytes_read += d->bytes_read;
	to->nodes_written += d->nodes_written;
	to->bytes_written += d->bytes_written;
	to->store_reads += d->store_reads;
	to->store_read_items += d->store_read_items;
	to->store_writes += d->store_writes;
	to->store_round_trips += d->store_round_trips;
}

int prolly_stats_add(const prolly_stats *delta)
{
	int rc = delta ? prolly__stats_check(delta)
	               : prolly_set_error(PROLLY_EINVAL, "prolly_stats_add: NULL argument");
	if (rc)
		return rc;
	stats_sum(&thread_cnt.s, delta);
	return 0;
}

void prolly_store_counters_add(const uint64_t *delta, size_t n)
{
	for (size_t i = 0; delta && i < n && i < PROLLY_STORE_COUNTERS; i++)
		thread_cnt.store[i] += delta[i];
}

void prolly_store_thread_counters(uint64_t *out, size_t n)
{
	for (size_t i = 0; out && i < n; i++)
		out[i] = i < PROLLY_STORE_COUNTERS ? thread_cnt.store[i] : 0;
}

void prolly__thread_counters(prolly__counters *out)
{
	*out = thread_cnt;
}

void prolly__thread_counters_add(const prolly__counters *delta)
{
	stats_sum(&thread_cnt.s, &delta->s);
	prolly_store_counters_add(delta->store, PROLLY_STORE_COUNTERS);
}

void prolly__stats_add(prolly_db *db, const prolly_stats *delta)
{
	stats_sum(&thread_cnt.s, delta);
	if (db) {
		pthread_mutex_lock(&db->stats_lock);
		stats_sum(&db->stats, delta);
		pthread_mutex_unlock(&db->stats_lock);
	}
}
