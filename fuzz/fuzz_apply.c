/*
 * fuzz_apply.c - libFuzzer target for the reader of apply's input (src/cli/input.c,
 * read_edits, with the line reader and the escapes it uses compiled in), fed the input as a
 * file. For any input:
 *   - it is read whole (0), or refused (EXIT_USAGE) with one message that names the file and a
 *     line of it (fuzz:LINE:, LINE at most the number of lines) and says nothing was committed;
 *   - what it reads holds keys of at most PROLLY_MAX_KEY bytes, values of at most
 *     PROLLY_MAX_VALUE, every delr's FROM no later than its TO, all inside the arena;
 *   - those edits written back as lines (escape_dup) read back as the same edits.
 * Never a crash, a leak or a sanitizer report. The tool's error line goes to a null stream (the
 * message is read back with prolly_last_error, where the line leaves it).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "%s: %s\n", what, detail);
	abort();
}

/* Reads text[0..n) as apply's input named "fuzz"; error lines go to the null stream quiet. */
static int read_text(struct edit_file *ef, const void *text, size_t n, FILE *quiet)
{
	struct cli cli;
	memset(&cli, 0, sizeof(cli));
	memset(ef, 0, sizeof(*ef));
	FILE *f = n ? fmemopen((void *)text, n, "rb") : fopen("/dev/null", "rb");
	if (!f)
		die("fmemopen", "failed");
	FILE *err = stderr;
	stderr = quiet;
	int rc = read_edits(&cli, ef, f, "fuzz");
	stderr = err;
	fclose(f);
	return rc;
}

static int put_field(struct bytes *b, const char *sep, const void *data, size_t n)
{
	char *text = escape_dup(data, n);
	int rc = !text || bytes_append(b, sep, strlen(sep)) || bytes_append(b, text, strlen(text));
	free(text);
	return rc;
}

/* ef's edits as apply lines. */
static void write_back(struct bytes *b, const struct edit_file *ef)
{
	for (size_t i = 0; i < ef->n; i++) {
		const struct pending *p = &ef->items[i];
		const char *op = p->range ? "delr" : p->op == PROLLY_PUT ? "put" : "del";
		if (bytes_append(b, op, strlen(op)) ||
		    put_field(b, "\t", bytes_at(&ef->arena, p->koff), p->klen) ||
		    ((p->range || p->op == PROLLY_PUT) &&
		     put_field(b, "\t", bytes_at(&ef->arena, p->voff), p->vlen)) ||
		    bytes_append(b, "\n", 1))
			die("write_back", "out of memory");
	}
}

static void check_edits(const struct edit_file *ef)
{
	for (size_t i = 0; i < ef->n; i++) {
		const struct pending *p = &ef->items[i];
		int has_value = p->range || p->op == PROLLY_PUT;
		if (p->klen > PROLLY_MAX_KEY || p->koff + p->klen > ef->arena.size ||
		    (has_value && (p->voff + p->vlen > ef->arena.size ||
		                   p->vlen > (p->range ? PROLLY_MAX_KEY : PROLLY_MAX_VALUE))) ||
		    (p->range &&
		     (p->op != PROLLY_DEL || bytes_cmp(bytes_at(&ef->arena, p->koff), p->klen,
		                                       bytes_at(&ef->arena, p->voff), p->vlen) > 0)))
			die("an edit read", "out of bounds, too long, or a delr whose FROM sorts after TO");
	}
}

static void check_refusal(int rc, const uint8_t *data, size_t size)
{
	const char *m = prolly_last_error();
	unsigned long lines = 1;
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	char *end;
	if (rc != EXIT_USAGE)
		die("read_edits refused an input with another code than EXIT_USAGE", m);
	if (strncmp(m, "fuzz:", 5) != 0)
		die("a refusal that does not name the file", m);
	unsigned long line = strtoul(m + 5, &end, 10);
	if (end == m + 5 || *end != ':' || line == 0 || line > lines)
		die("a refusal that does not name a line of the file", m);
	size_t n = strlen(m), tail = strlen("nothing was committed");
	if (n < tail || strcmp(m + n - tail, "nothing was committed") != 0)
		die("a refusal that does not say nothing was committed", m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *quiet;
	struct edit_file ef, again;
	struct bytes text = BYTES_INIT;
	if (!quiet && !(quiet = fopen("/dev/null", "w")))
		die("/dev/null", "cannot open");
	int rc = read_text(&ef, data, size, quiet);
	if (rc) {
		check_refusal(rc, data, size);
		edit_file_dispose(&ef);
		return 0;
	}
	check_edits(&ef);
	write_back(&text, &ef);
	if ((rc = read_text(&again, text.ptr, text.size, quiet)) != 0)
		die("the edits written back are refused", prolly_last_error());
	if (again.n != ef.n)
		die("the edits written back read back as another number of edits", "");
	for (size_t i = 0; i < ef.n; i++) {
		const struct pending *a = &ef.items[i], *b = &again.items[i];
		if (a->op != b->op || a->range != b->range ||
		    bytes_cmp(bytes_at(&ef.arena, a->koff), a->klen, bytes_at(&again.arena, b->koff),
		              b->klen) != 0 ||
		    bytes_cmp(bytes_at(&ef.arena, a->voff), a->vlen, bytes_at(&again.arena, b->voff),
		              b->vlen) != 0)
			die("an edit written back reads back as another", "");
	}
	bytes_dispose(&text);
	edit_file_dispose(&again);
	edit_file_dispose(&ef);
	return 0;
}
