/*
 * fuzz_proof.c - libFuzzer target for the proof checker (prolly_proof_verify), through the
 * public API only. The input is a tree id (its first 32 bytes) and a proof of it (the rest; the
 * seeds are valid proofs). Any input is refused with PROLLY_ECORRUPT or PROLLY_EVERSION, or
 * verifies, and then what it claims lies inside the input and every record it shows is in order
 * and inside the claim. Never a crash, a leak or another error.
 */
#include "prolly.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct seen {
	const prolly_proof_claim *claim;
	unsigned char last[PROLLY_MAX_KEY];
	size_t last_size;
	int any;
} seen;

static int cmp(const void *a, size_t an, const void *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	return c ? c : (an > bn) - (an < bn);
}

static int on_record(void *payload, const prolly_slice *key, const prolly_slice *value)
{
	seen *s = payload;
	if (!s->claim->range)
		return 0;
	if (!value || key->size > PROLLY_MAX_KEY ||
	    cmp(key->data, key->size, s->claim->key.data, s->claim->key.size) < 0 ||
	    cmp(key->data, key->size, s->claim->to.data, s->claim->to.size) >= 0 ||
	    (s->any && cmp(s->last, s->last_size, key->data, key->size) >= 0)) {
		fprintf(stderr, "a verified range proof shows a record out of order or range\n");
		abort();
	}
	memcpy(s->last, key->data, key->size);
	s->last_size = key->size;
	s->any = 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	prolly_id tree;
	prolly_proof_claim claim;
	seen s;
	if (size < PROLLY_ID_SIZE)
		return 0;
	memcpy(tree.bytes, data, PROLLY_ID_SIZE);
	memset(&s, 0, sizeof(s));
	s.claim = &claim;
	const uint8_t *p = data + PROLLY_ID_SIZE;
	size_t n = size - PROLLY_ID_SIZE;
	int rc = prolly_proof_verify(&claim, &tree, p, n, on_record, &s);
	if (rc == PROLLY_ECORRUPT || rc == PROLLY_EVERSION)
		return 0;
	if (rc != 0) {
		fprintf(stderr, "prolly_proof_verify returned %d (%s)\n", rc, prolly_last_error());
		abort();
	}
	const uint8_t *k = claim.key.data, *t = claim.to.data;
	if ((claim.key.size && (k < p || k + claim.key.size > p + n)) ||
	    (claim.to.size && (t < p || t + claim.to.size > p + n))) {
		fprintf(stderr, "a verified proof claims bytes outside itself\n");
		abort();
	}
	return 0;
}
