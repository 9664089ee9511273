/*
 * cmd_query.c - read-only commands over several commits or keys: merge-base and get-many.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int cmd_merge_base(struct cli *cli, int argc, char **argv)
{
	struct opt opts[] = {{NULL, 0, NULL, NULL}};
	char *pos[2];
	prolly_id a, b, base;
	int n_pos, rc, err;

	rc = parse_args(cli, argc, argv, opts, pos, 2, 2, &n_pos);
	if (rc)
		return rc;
	if ((rc = open_store(cli, STORE_READ, NULL)) || (rc = resolve_commit(cli, &a, pos[0])) ||
	    (rc = resolve_commit(cli, &b, pos[1])))
		return rc;
	err = prolly_merge_base(&base, cli->db, &a, &b);
	if (err == PROLLY_ENOTFOUND)
		return fail(cli, EXIT_NOTFOUND, "'%s' and '%s' have no common ancestor", pos[0], pos[1]);
	if (err == PROLLY_EPRUNED)
		return fail(cli, EXIT_NOTFOUND,
		            "no common ancestor of '%s' and '%s' is left: gc's retention removed the "
		            "history between them",
		            pos[0], pos[1]);
	if (err)
		return fail_lib(cli, err, "cannot find the merge base of '%s' and '%s'", pos[0], pos[1]);
	print_id(&base);
	return 0;
}

/* ---- get-many -------------------------------------------------------------------------------- */

#define GET_MANY_BATCH 1024 /* keys per prolly_get_many call (each reads a level per store call) */

struct batch {
	struct bytes arena; /* the batch's decoded keys */
	size_t off[GET_MANY_BATCH + 1];
	size_t n;
};

static int print_answer(void *payload, size_t index, const void *value, size_t vlen)
{
	const struct batch *b = payload;
	escape_write(stdout, bytes_at(&b->arena, b->off[index]), b->off[index + 1] - b->off[index]);
	putchar('\t');
	escape_value_line(stdout, value, vlen);
	return 0;
}

static int answer(struct cli *cli, struct batch *b, const prolly_id *root, const char *spec)
{
	prolly_slice keys[GET_MANY_BATCH];
	int err;
	if (!b->n)
		return 0;
	for (size_t i = 0; i < b->n; i++)
		keys[i] = (prolly_slice){bytes_at(&b->arena, b->off[i]), b->off[i + 1] - b->off[i]};
	err = prolly_get_many(cli->db, root, keys, b->n, print_answer, b);
	b->n = 0;
	b->arena.size = 0;
	if (err)
		return fail_lib(cli, err, "cannot read '%s'", spec);
	return 0;
}

/* A get-many line: an escaped key takes at most 4 bytes per byte (\xHH), and a \r may end it
 * (refused with its own message). A longer line holds a key over PROLLY_MAX_KEY bytes. */
#define GET_MANY_LINE_MAX (4 * PROLLY_MAX_KEY + 1)

int cmd_get_many(struct cli *cli, int argc, char **argv)
{
	struct opt opts[] = {{NULL, 0, NULL, NULL}};
	char *pos[1];
	struct bytes text = BYTES_INIT;
	unsigned long lineno = 0;
	struct batch *b = NULL;
	prolly_id root;
	int n_pos, rc;

	rc = parse_args(cli, argc, argv, opts, pos, 1, 1, &n_pos);
	if (rc)
		return rc;
	if ((rc = open_store(cli, STORE_READ, NULL)) || (rc = resolve_tree(cli, &root, pos[0])))
		return rc;
	if (!(b = calloc(1, sizeof(*b))))
		return fail(cli, EXIT_STORE, "out of memory");
	int got, too_long;
	while ((got = read_line_max(stdin, &text, GET_MANY_LINE_MAX, &too_long)) == 1) {
		const char *why = NULL;
		const char *line = (const char *)text.ptr;
		size_t n = text.size, where = 0;
		lineno++;
		size_t at = b->arena.size; /* a bad line: the lines before it are answered first */
		if (too_long) {
			if ((rc = answer(cli, b, &root, pos[0])))
				goto cleanup;
			rc = fail(cli, EXIT_USAGE,
			          "<stdin>:%lu: the key is over %d bytes (its line has more than %d); at "
			          "most %d are allowed",
			          lineno, PROLLY_MAX_KEY, GET_MANY_LINE_MAX, PROLLY_MAX_KEY);
			goto cleanup;
		}
		if (n && line[n - 1] == '\r') {
			if ((rc = answer(cli, b, &root, pos[0])))
				goto cleanup;
			rc = fail(cli, EXIT_USAGE,
			          "<stdin>:%lu: the line ends with \\r\\n (a Windows line end); lines must "
			          "end with \\n alone",
			          lineno);
			goto cleanup;
		}
		b->off[b->n] = b->arena.size;
		int r = unescape_append(&b->arena, line, n, &why, &where);
		if (r == -2) {
			rc = fail(cli, EXIT_STORE, "out of memory");
			goto cleanup;
		}
		if (r) {
			b->arena.size = at;
			if ((rc = answer(cli, b, &root, pos[0])))
				goto cleanup;
			rc = fail(cli, EXIT_USAGE, "<stdin>:%lu: bad key: %s at offset %zu", lineno, why,
			          where);
			goto cleanup;
		}
		size_t klen = b->arena.size - b->off[b->n];
		if (klen > PROLLY_MAX_KEY) {
			b->arena.size = at;
			if ((rc = answer(cli, b, &root, pos[0])))
				goto cleanup;
			rc = fail(cli, EXIT_USAGE, "<stdin>:%lu: the key is %zu bytes; at most %d are allowed",
			          lineno, klen, PROLLY_MAX_KEY);
			goto cleanup;
		}
		b->off[++b->n] = b->arena.size;
		if (b->n == GET_MANY_BATCH && (rc = answer(cli, b, &root, pos[0])))
			goto cleanup;
		if (ferror(stdout)) /* output that failed ends it: finish_output says so */
			goto cleanup;
	}
	if (got == -2) {
		rc = fail(cli, EXIT_STORE, "out of memory");
		goto cleanup;
	}
	if (ferror(stdin)) {
		rc = fail(cli, EXIT_USAGE, "cannot read <stdin>: %s", strerror(errno));
		goto cleanup;
	}
	rc = answer(cli, b, &root, pos[0]);
cleanup:
	bytes_dispose(&text);
	if (b)
		bytes_dispose(&b->arena);
	free(b);
	return rc;
}
