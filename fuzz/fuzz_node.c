/*
 * fuzz_node.c - libFuzzer target for the tree node decoder (prolly__node_decode, verify=0).
 * Any input must be rejected with PROLLY_ECORRUPT / PROLLY_EVERSION, or decode to a node that
 * fz_node_sane() accepts; reads out of bounds are caught by AddressSanitizer.
 * Build and run: fuzz/run.sh [seconds].
 */
#include "fuzz_check.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	prolly_id id;
	pnode *nd = NULL;
	memset(&id, 0x42, sizeof(id));
	int rc = prolly__node_decode(&nd, &id, data, size, 0);
	if (rc) {
		if (rc != PROLLY_ECORRUPT && rc != PROLLY_EVERSION) {
			fprintf(stderr, "node decode returned %d (%s)\n", rc, prolly_last_error());
			abort();
		}
		return 0;
	}
	if (fz_node_sane(nd) != 0) {
		fprintf(stderr, "decoded an insane node (level %u, n %u, %zu bytes)\n", nd->level, nd->n,
		        nd->size);
		abort();
	}
	/* With verify, only the true id is accepted. */
	prolly_id real;
	pnode *again = NULL;
	prolly__hash(&real, data, size);
	if (prolly__node_decode(&again, &real, data, size, 1) != 0)
		abort();
	prolly__node_unref(again);
	if (!prolly_id_equal(&real, &id) && prolly__node_decode(&again, &id, data, size, 1) == 0)
		abort();
	prolly__node_unref(nd);
	return 0;
}
