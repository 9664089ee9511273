/*
 * fuzz_commit.c - libFuzzer target for the commit decoder (prolly__commit_decode). Any input is
 * rejected with PROLLY_ECORRUPT / PROLLY_EVERSION or decodes to a commit that fz_commit_sane()
 * accepts and that re-encodes to exactly the same bytes.
 */
#include "fuzz_check.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	prolly_id id;
	prolly_commit *c = NULL;
	memset(&id, 0x43, sizeof(id));
	int rc = prolly__commit_decode(&c, &id, data, size);
	if (rc) {
		if (rc != PROLLY_ECORRUPT && rc != PROLLY_EVERSION) {
			fprintf(stderr, "commit decode returned %d (%s)\n", rc, prolly_last_error());
			abort();
		}
		return 0;
	}
	if (fz_commit_sane(c, size) != 0)
		abort();
	/* Decoding is the inverse of encoding: the same commit encodes to the same bytes. */
	prolly_buf out = PROLLY_BUF_INIT;
	if (prolly__commit_encode(&out, &c->tree, c->parents, c->n_parents, c->time_us, c->message) !=
	        0 ||
	    out.size != size || memcmp(out.ptr, data, size) != 0) {
		fprintf(stderr, "commit does not re-encode to its bytes\n");
		abort();
	}
	prolly_buf_dispose(&out);
	prolly_commit_free(c);
	return 0;
}
