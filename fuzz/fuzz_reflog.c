/*
 * fuzz_reflog.c - libFuzzer target for the reflog entry decoder (prolly__reflog_decode). Any
 * input is rejected with PROLLY_ECORRUPT / PROLLY_EVERSION or decodes to an entry that re-encodes
 * to exactly the same bytes.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	prolly_id id;
	prolly__reflog e;
	prolly_buf out = PROLLY_BUF_INIT;
	memset(&id, 0x47, sizeof(id));
	int rc = prolly__reflog_decode(&e, &id, data, size);
	if (rc) {
		if (rc != PROLLY_ECORRUPT && rc != PROLLY_EVERSION) {
			fprintf(stderr, "reflog decode returned %d (%s)\n", rc, prolly_last_error());
			abort();
		}
		return 0;
	}
	if (prolly__reflog_encode(&out, e.time_us, e.has_old ? &e.old_id : NULL,
	                          e.has_new ? &e.new_id : NULL, e.op, e.ref, e.message) != 0 ||
	    out.size != size || memcmp(out.ptr, data, size) != 0) {
		fprintf(stderr, "reflog entry does not re-encode to its bytes\n");
		abort();
	}
	prolly_buf_dispose(&out);
	prolly__reflog_dispose(&e);
	return 0;
}
