/*
 * cmd_delrange.c - `del-range BRANCH FROM TO`: deletes every key in [FROM, TO) in one commit
 * (prolly_delete_range: subtrees inside the range are dropped without being read).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int cmd_del_range(struct cli *cli, int argc, char **argv)
{
	const char *msg = NULL;
	char *pos[3], *auto_msg = NULL;
	struct bytes from = BYTES_INIT, to = BYTES_INIT;
	prolly_id head, cid;
	int rc;

	if ((rc = parse_change_args(cli, argc, argv, &msg, pos, 3)) ||
	    (rc = arg_bytes(cli, &from, pos[1], "FROM")) || (rc = arg_bytes(cli, &to, pos[2], "TO")))
		goto cleanup;
	if (from.size > PROLLY_MAX_KEY || to.size > PROLLY_MAX_KEY) {
		rc = fail(cli, EXIT_USAGE, "a bound is longer than a key can be (%d bytes)",
		          PROLLY_MAX_KEY);
		goto cleanup;
	}
	if (bytes_cmp(from.ptr, from.size, to.ptr, to.size) > 0) {
		rc = usage_error(cli, "FROM '%s' sorts after TO '%s'", pos[1], pos[2]);
		goto cleanup;
	}
	if ((rc = default_message(cli, &msg, &auto_msg, "del-range %s %s", pos[1], pos[2])) ||
	    (rc = open_store(cli, STORE_WRITE, NULL)) || (rc = branch_head(cli, &head, pos[0])))
		goto cleanup;
	struct change ch;
	memset(&ch, 0, sizeof ch);
	ch.range = 1;
	ch.from = (prolly_slice){from.ptr, from.size};
	ch.to = (prolly_slice){to.ptr, to.size};
	rc = commit_changes(cli, &cid, pos[0], &head, &ch, 1, msg);
	if (rc == 0)
		print_id(&cid);
cleanup:
	free(auto_msg);
	bytes_dispose(&from);
	bytes_dispose(&to);
	return rc;
}
