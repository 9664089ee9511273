/*
 * cmd_history.c - `history BRANCH KEY`: the commits that changed KEY, newest first, with its
 * value after each (prolly_key_history: one point lookup per commit, no tree diffs).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

struct hist {
	uint64_t limit, shown;
};

static int print_change(void *payload, const prolly_commit *c, const void *value, size_t vlen)
{
	struct hist *h = payload;
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, &c->id);
	fputs(hex, stdout);
	putchar('\t');
	escape_value_line(stdout, value, vlen);
	return ++h->shown == h->limit || ferror(stdout) ? 1 : 0; /* failed output: see finish_output */
}

int cmd_history(struct cli *cli, int argc, char **argv)
{
	const char *limit = NULL;
	struct opt opts[] = {{"limit", 0, &limit, NULL}, {NULL, 0, NULL, NULL}};
	char *pos[2];
	struct bytes key = BYTES_INIT;
	struct hist h = {0, 0};
	prolly_id cid;
	int n_pos, rc, err;

	rc = parse_args(cli, argc, argv, opts, pos, 2, 2, &n_pos);
	if (rc)
		goto cleanup;
	if ((limit && (rc = arg_count(cli, &h.limit, limit, "--limit"))) ||
	    (rc = arg_key(cli, &key, pos[1])))
		goto cleanup;
	if (limit && h.limit == 0)
		goto cleanup;
	if ((rc = open_store(cli, STORE_READ, NULL)) || (rc = resolve_commit(cli, &cid, pos[0])))
		goto cleanup;
	err = prolly_key_history(cli->db, &cid, key.ptr, key.size, print_change, &h);
	if (err < 0)
		rc = fail_lib(cli, err, "cannot read the history of '%s'", pos[0]);
cleanup:
	bytes_dispose(&key);
	return rc;
}
