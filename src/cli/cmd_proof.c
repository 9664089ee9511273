/*
 * cmd_proof.c - proofs: prove writes one, check-proof checks one against a tree id (with
 * hashing alone: it opens no store).
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The largest input check-proof takes by default (docs/cli.md): a proof is held whole while it
 * is checked, so a bigger file, or a stream that does not end (/dev/zero), is refused rather than
 * read until memory runs out. A key proof is a few nodes; 256 MiB holds a range of millions of
 * records. --max-bytes N sets another bound, on prove (which refuses to write a proof that
 * check-proof would refuse under the same bound) and on check-proof. */
#define PROOF_MAX_BYTES ((size_t)256 << 20)

/* --max-bytes: a positive number of bytes; PROOF_MAX_BYTES when not given. */
static int max_bytes(struct cli *cli, size_t *out, const char *arg)
{
	uint64_t v;
	int rc;
	*out = PROOF_MAX_BYTES;
	if (!arg)
		return 0;
	if ((rc = arg_count(cli, &v, arg, "--max-bytes")))
		return rc;
	if (v == 0 || v > SIZE_MAX)
		return usage_error(cli, "--max-bytes must be between 1 and %zu, not '%s'", SIZE_MAX, arg);
	*out = (size_t)v;
	return 0;
}

int cmd_prove(struct cli *cli, int argc, char **argv)
{
	const char *to = NULL, *max = NULL;
	struct opt opts[] = {{"to", 0, &to, NULL}, {"max-bytes", 0, &max, NULL}, {NULL, 0, NULL, NULL}};
	char *pos[2];
	struct bytes key = BYTES_INIT, end = BYTES_INIT;
	prolly_buf proof = PROLLY_BUF_INIT;
	prolly_id root;
	size_t cap;
	int n_pos, rc, err;
	if ((rc = parse_args(cli, argc, argv, opts, pos, 2, 2, &n_pos)) ||
	    (rc = max_bytes(cli, &cap, max)) || (rc = arg_key(cli, &key, pos[1])) ||
	    (to && (rc = arg_bytes(cli, &end, to, "--to"))) ||
	    (rc = open_store(cli, STORE_READ, NULL)) || (rc = resolve_tree(cli, &root, pos[0])))
		goto cleanup;
	prolly_slice k = {key.ptr ? (const void *)key.ptr : "", key.size};
	prolly_slice e = {end.ptr ? (const void *)end.ptr : "", end.size};
	if ((err = prolly_prove(&proof, cli->db, &root, &k, to ? &e : NULL))) {
		rc = fail_lib(cli, err, "cannot prove");
		goto cleanup;
	}
	if (proof.size > cap) { /* check-proof would refuse it: write none */
		rc = fail(cli, EXIT_USAGE,
		          "the proof is %zu bytes, over the %zu bytes that check-proof reads%s; nothing "
		          "written: prove a narrower range",
		          proof.size, cap, max ? " with this --max-bytes" : "");
		goto cleanup;
	}
	if (fwrite(proof.ptr, 1, proof.size, stdout) != proof.size)
		rc = fail(cli, EXIT_STORE, "cannot write the proof: %s", strerror(errno));

cleanup:
	bytes_dispose(&key);
	bytes_dispose(&end);
	prolly_buf_dispose(&proof);
	return rc;
}

static int print_proved(void *payload, const prolly_slice *key, const prolly_slice *value)
{
	const prolly_proof_claim *c = payload;
	if (!c->range)
		fputs(value ? "present\t" : "absent\t", stdout);
	escape_write(stdout, key->data, key->size);
	if (value) {
		putchar('\t');
		escape_write(stdout, value->data, value->size);
	}
	putchar('\n');
	return 0;
}

static int count_records(void *payload, const prolly_slice *key, const prolly_slice *value)
{
	(void)key;
	(void)value;
	++*(uint64_t *)payload;
	return 0;
}

static int too_big(struct cli *cli, const char *name, size_t cap)
{
	return fail(cli, EXIT_USAGE,
	            "%s is over %zu bytes, more than check-proof reads; prove a narrower range (or "
	            "give a larger --max-bytes)",
	            name, cap);
}

int cmd_check_proof(struct cli *cli, int argc, char **argv)
{
	const char *max = NULL;
	struct opt opts[] = {{"max-bytes", 0, &max, NULL}, {NULL, 0, NULL, NULL}};
	char *pos[2];
	struct bytes data = BYTES_INIT;
	prolly_proof_claim claim;
	prolly_id tree;
	uint64_t n = 0;
	size_t cap;
	int n_pos, rc, err;
	if ((rc = parse_args(cli, argc, argv, opts, pos, 2, 2, &n_pos)) ||
	    (rc = max_bytes(cli, &cap, max)))
		return rc;
	if (prolly_id_from_hex(&tree, pos[0]))
		return usage_error(cli, "TREE_ID must be 64 hex digits, a tree id as 'prolly root' prints");
	FILE *f = strcmp(pos[1], "-") == 0 ? stdin : fopen(pos[1], "rb");
	if (!f) { /* as apply: a missing file is not found, any other failure bad input */
		int e = errno;
		return fail(cli, e == ENOENT ? EXIT_NOTFOUND : EXIT_USAGE, "cannot open %s: %s", pos[1],
		            strerror(e));
	}
	char buf[65536];
	size_t got;
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > cap)
		rc = too_big(cli, f == stdin ? "<stdin>" : pos[1], cap);
	while (!rc && (got = fread(buf, 1, sizeof(buf), f)) > 0) {
		if (got > cap - data.size)
			rc = too_big(cli, f == stdin ? "<stdin>" : pos[1], cap);
		else if (bytes_append(&data, buf, got))
			rc = fail(cli, EXIT_STORE, "out of memory reading %s", pos[1]);
	}
	if (!rc && ferror(f)) /* a directory, an I/O error: bad input, no store is involved */
		rc = fail(cli, EXIT_USAGE, "cannot read %s: %s", pos[1], strerror(errno));
	if (f != stdin)
		fclose(f);
	if (rc)
		goto cleanup;
	/* Checked in full before anything is printed: first count, then show. */
	err = prolly_proof_verify(&claim, &tree, data.ptr, data.size, count_records, &n);
	if (err == PROLLY_ECORRUPT || err == PROLLY_EVERSION) {
		rc = fail(cli, EXIT_MERGE, "invalid proof: %s", prolly_last_error());
		goto cleanup;
	}
	if (err) {
		rc = fail_lib(cli, err, "cannot check the proof");
		goto cleanup;
	}
	if (claim.range) {
		fputs("range\t", stdout);
		escape_write(stdout, claim.key.data, claim.key.size);
		putchar('\t');
		escape_write(stdout, claim.to.data, claim.to.size);
		printf("\t%llu records\n", (unsigned long long)n);
	}
	err = prolly_proof_verify(&claim, &tree, data.ptr, data.size, print_proved, &claim);
	if (err)
		rc = fail_lib(cli, err, "cannot check the proof");

cleanup:
	bytes_dispose(&data);
	return rc;
}
