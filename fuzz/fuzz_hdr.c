/*
 * fuzz_hdr.c - libFuzzer target for the HDR histogram's text form (bench/lib/hdr.c,
 * hdr_from_text). Any input is rejected with a message or gives a histogram whose text form
 * parses back to an equal histogram, with percentiles inside [min, max].
 */
#include "hdr.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	char *text = malloc(size + 1);
	hdr_hist *h = NULL, *again = NULL;
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	err[0] = '\0';
	if (hdr_from_text(&h, text, err, sizeof(err)) != 0) {
		if (err[0] == '\0') {
			fprintf(stderr, "a rejected text without a message\n");
			abort();
		}
		free(text);
		return 0;
	}
	char *out = hdr_to_text(h);
	if (!out || hdr_from_text(&again, out, err, sizeof(err)) != 0 || !hdr_equal(h, again)) {
		fprintf(stderr, "the text form does not round-trip: %s\n", err);
		abort();
	}
	if (hdr_count(h)) {
		uint64_t p50 = hdr_percentile(h, 50), p100 = hdr_percentile(h, 100);
		if (p50 > p100 || p100 != hdr_max(h) || hdr_percentile(h, 0) != hdr_min(h)) {
			fprintf(stderr, "percentiles outside [min, max]\n");
			abort();
		}
	}
	free(out);
	hdr_free(again);
	hdr_free(h);
	free(text);
	return 0;
}
