/*
 * fuzz_toml.c - libFuzzer target for the harness's TOML reader (bench/lib/toml*.c). Any input
 * either fails with a positioned error or parses to a tree that the writer turns into text that
 * parses back to an equal tree (toml_equal).
 */
#include "toml.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	toml_doc *d = NULL, *again = NULL;
	toml_error e;
	if (toml_parse_buffer(&d, (const char *)data, size, "fuzz", &e) != TOML_OK) {
		if (e.text[0] == '\0') {
			fprintf(stderr, "a failed parse without a message\n");
			abort();
		}
		return 0;
	}
	char *text = toml_to_string(d, NULL);
	if (!text)
		abort(); /* out of memory, or a tree the writer cannot write */
	if (toml_parse_buffer(&again, text, strlen(text), "written", &e) != TOML_OK) {
		fprintf(stderr, "the written form does not parse: %s\n---\n%s\n", e.text, text);
		abort();
	}
	if (!toml_equal(toml_root(d), toml_root(again))) {
		fprintf(stderr, "the written form parses to another tree:\n%s\n", text);
		abort();
	}
	free(text);
	toml_free(again);
	toml_free(d);
	return 0;
}
