/*
 * cmd_read.c - commands that only read: get, scan, diff, branches, log, root, stats, verify.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int cmd_get(struct cli *cli, int argc, char **argv)
{
	int raw = 0;
	struct opt opts[] = {{"raw", 0, NULL, &raw}, {NULL, 0, NULL, NULL}};
	char *pos[2];
	struct bytes key = BYTES_INIT;
	prolly_buf val = PROLLY_BUF_INIT;
	prolly_id root;
	int n_pos, rc, err;

	rc = parse_args(cli, argc, argv, opts, pos, 2, 2, &n_pos);
	if (rc)
		goto cleanup;
	if ((rc = arg_key(cli, &key, pos[1])) || (rc = open_store(cli, STORE_READ, NULL)) ||
	    (rc = resolve_tree(cli, &root, pos[0])))
		goto cleanup;
	err = prolly_get(&val, cli->db, &root, key.ptr, key.size);
	if (err == PROLLY_ENOTFOUND) {
		/* Absent key, or no tree at all (a commit gc kept without it): the root is cached when
		 * it was read, so telling them apart reads nothing more. */
		uint64_t n;
		if ((err = prolly_count(&n, cli->db, &root))) {
			rc = fail_lib(cli, err, "cannot read '%s'", pos[0]);
			goto cleanup;
		}
		err = PROLLY_ENOTFOUND;
	}
	if (err == PROLLY_ENOTFOUND) {
		char *shown = escape_dup(key.ptr, key.size);
		rc = fail(cli, EXIT_NOTFOUND, "key '%s' not found in %s", shown ? shown : pos[1], pos[0]);
		free(shown);
		goto cleanup;
	}
	if (err) {
		rc = fail_lib(cli, err, "cannot read '%s'", pos[0]);
		goto cleanup;
	}
	if (raw) {
		fwrite(val.ptr, 1, val.size, stdout);
	} else {
		escape_write(stdout, val.ptr, val.size);
		putchar('\n');
	}
cleanup:
	prolly_buf_dispose(&val);
	bytes_dispose(&key);
	return rc;
}

static void print_record(const prolly_slice *k, const prolly_slice *v)
{
	escape_write(stdout, k->data, k->size);
	putchar('\t');
	escape_write(stdout, v->data, v->size);
	putchar('\n');
}

int cmd_scan(struct cli *cli, int argc, char **argv)
{
	const char *from = NULL, *to = NULL, *prefix = NULL, *limit = NULL;
	int reverse = 0;
	struct opt opts[] = {{"from", 0, &from, NULL},       {"to", 0, &to, NULL},
	                     {"prefix", 0, &prefix, NULL},   {"limit", 0, &limit, NULL},
	                     {"reverse", 0, NULL, &reverse}, {NULL, 0, NULL, NULL}};
	char *pos[1];
	struct bytes lo = BYTES_INIT, hi = BYTES_INIT, pre = BYTES_INIT;
	prolly_cursor *cur = NULL;
	prolly_range range = PROLLY_RANGE_INIT;
	prolly_id root;
	uint64_t max = UINT64_MAX, shown = 0;
	int n_pos, rc, err;

	rc = parse_args(cli, argc, argv, opts, pos, 1, 1, &n_pos);
	if (rc)
		goto cleanup;
	if ((from && (rc = arg_key_as(cli, &lo, from, "--from key"))) ||
	    (to && (rc = arg_key_as(cli, &hi, to, "--to key"))) ||
	    (prefix && (rc = arg_key_as(cli, &pre, prefix, "--prefix"))) ||
	    (limit && (rc = arg_count(cli, &max, limit, "--limit"))))
		goto cleanup;
	if ((rc = open_store(cli, STORE_READ, NULL)) || (rc = resolve_tree(cli, &root, pos[0])))
		goto cleanup;
	range.has_lo = from != NULL;
	range.lo.data = lo.ptr;
	range.lo.size = lo.size;
	range.has_hi = to != NULL;
	range.hi.data = hi.ptr;
	range.hi.size = hi.size;
	range.prefix.data = pre.ptr;
	range.prefix.size = pre.size;
	range.reverse = reverse;
	if (max == 0)
		goto cleanup;
	err = prolly_cursor_open(&cur, cli->db, &root, &range);
	/* Output that failed (a full disk, a closed pipe) ends it: finish_output says so. */
	while (!err && shown < max && !ferror(stdout)) {
		prolly_slice k, v;
		err = prolly_cursor_next(cur, &k, &v);
		if (err)
			break;
		print_record(&k, &v);
		shown++;
	}
	if (err && err != PROLLY_ITEROVER)
		rc = fail_lib(cli, err, "cannot scan '%s'", pos[0]);
cleanup:
	prolly_cursor_free(cur);
	bytes_dispose(&lo);
	bytes_dispose(&hi);
	bytes_dispose(&pre);
	return rc;
}

struct diff_out {
	uint64_t max, shown;
	int blank_first; /* show: an empty line before the first change, after the commit */
};

static int print_diff(void *payload, const prolly_diff_entry *e)
{
	struct diff_out *d = payload;
	if (d->blank_first && d->shown == 0)
		putchar('\n');
	switch (e->kind) {
	case PROLLY_DIFF_ADDED:
		fputs("+\t", stdout);
		print_record(&e->key, &e->new_value);
		break;
	case PROLLY_DIFF_REMOVED:
		fputs("-\t", stdout);
		print_record(&e->key, &e->old_value);
		break;
	case PROLLY_DIFF_CHANGED:
		fputs("~\t", stdout);
		escape_write(stdout, e->key.data, e->key.size);
		putchar('\t');
		escape_write(stdout, e->old_value.data, e->old_value.size);
		putchar('\t');
		escape_write(stdout, e->new_value.data, e->new_value.size);
		putchar('\n');
		break;
	}
	/* 1: the limit, or output that failed (finish_output says so); not an error */
	return ++d->shown >= d->max || ferror(stdout) ? 1 : 0;
}

/* The keys a prefix covers as a half-open range [prefix, successor): the successor is the
 * prefix with trailing 0xff bytes dropped and the last other byte incremented (none: no upper
 * bound). Narrows range (whose bounds are in lo and hi) to it. */
static int narrow_to_prefix(prolly_range *range, struct bytes *lo, struct bytes *hi,
                            const struct bytes *pre)
{
	if (!range->has_lo || bytes_cmp(lo->ptr, lo->size, pre->ptr, pre->size) < 0) {
		lo->size = 0;
		if (bytes_append(lo, pre->ptr, pre->size))
			return -1;
		range->has_lo = 1;
	}
	size_t n = pre->size;
	while (n && pre->ptr[n - 1] == 0xff)
		n--;
	if (n == 0)
		return 0; /* every key from the prefix on */
	struct bytes succ = BYTES_INIT;
	if (bytes_append(&succ, pre->ptr, n))
		return -1;
	succ.ptr[n - 1]++;
	if (!range->has_hi || bytes_cmp(succ.ptr, succ.size, hi->ptr, hi->size) < 0) {
		bytes_dispose(hi);
		*hi = succ;
		range->has_hi = 1;
	} else {
		bytes_dispose(&succ);
	}
	return 0;
}

/* What diff and show take besides their revisions: a key range and a line limit. */
struct diff_args {
	const char *from, *to, *prefix, *limit;
	struct bytes lo, hi, pre;
	prolly_range range;
	struct diff_out d;
};
/* The options diff_args_opts fills in. */
#define DIFF_ARGS_OPTS 4

static void diff_args_init(struct diff_args *a)
{
	const struct bytes none = BYTES_INIT;
	const prolly_range all = PROLLY_RANGE_INIT;
	a->from = a->to = a->prefix = a->limit = NULL;
	a->lo = a->hi = a->pre = none;
	a->range = all;
	a->d.max = UINT64_MAX;
	a->d.shown = 0;
	a->d.blank_first = 0;
}

/* Fills opts[0..DIFF_ARGS_OPTS) with the options that set a's strings. */
static void diff_args_opts(struct opt *opts, struct diff_args *a)
{
	const struct opt o[DIFF_ARGS_OPTS] = {{"from", 0, &a->from, NULL},
	                                      {"to", 0, &a->to, NULL},
	                                      {"prefix", 0, &a->prefix, NULL},
	                                      {"limit", 0, &a->limit, NULL}};
	memcpy(opts, o, sizeof(o));
}

/* Turns the options into a->range and a->d.max. */
static int diff_args_take(struct cli *cli, struct diff_args *a)
{
	int rc;
	if ((a->from && (rc = arg_key_as(cli, &a->lo, a->from, "--from key"))) ||
	    (a->to && (rc = arg_key_as(cli, &a->hi, a->to, "--to key"))) ||
	    (a->prefix && (rc = arg_key_as(cli, &a->pre, a->prefix, "--prefix"))) ||
	    (a->limit && (rc = arg_count(cli, &a->d.max, a->limit, "--limit"))))
		return rc;
	a->range.has_lo = a->from != NULL;
	a->range.has_hi = a->to != NULL;
	if (a->prefix && narrow_to_prefix(&a->range, &a->lo, &a->hi, &a->pre))
		return fail(cli, EXIT_STORE, "out of memory");
	a->range.lo = (prolly_slice){a->lo.ptr, a->lo.size};
	a->range.hi = (prolly_slice){a->hi.ptr, a->hi.size};
	return 0;
}

/* Prints the changes from tree `from` to tree `to` within the range, as diff does; the
 * library's error code (negative) or 0. */
static int diff_args_print(struct cli *cli, struct diff_args *a, const prolly_id *from,
                           const prolly_id *to)
{
	if (a->d.max == 0 || (a->range.has_lo && a->range.has_hi &&
	                      bytes_cmp(a->lo.ptr, a->lo.size, a->hi.ptr, a->hi.size) >= 0))
		return 0; /* nothing to show */
	int err = prolly_diff(cli->db, from, to, &a->range, print_diff, &a->d);
	return err < 0 ? err : 0;
}

static void diff_args_dispose(struct diff_args *a)
{
	bytes_dispose(&a->lo);
	bytes_dispose(&a->hi);
	bytes_dispose(&a->pre);
}

int cmd_diff(struct cli *cli, int argc, char **argv)
{
	struct diff_args a;
	struct opt opts[DIFF_ARGS_OPTS + 1] = {{NULL, 0, NULL, NULL}};
	char *pos[2];
	prolly_id from, to;
	int n_pos, rc, err;

	diff_args_init(&a);
	diff_args_opts(opts, &a);
	if ((rc = parse_args(cli, argc, argv, opts, pos, 2, 2, &n_pos)) ||
	    (rc = diff_args_take(cli, &a)) || (rc = open_store(cli, STORE_READ, NULL)) ||
	    (rc = resolve_tree(cli, &from, pos[0])) || (rc = resolve_tree(cli, &to, pos[1])))
		goto cleanup;
	if ((err = diff_args_print(cli, &a, &from, &to)))
		rc = fail_lib(cli, err, "cannot diff '%s' and '%s'", pos[0], pos[1]);
cleanup:
	diff_args_dispose(&a);
	return rc;
}

/* ---- branches ---------------------------------------------------------------------------- */

/* Heads whose commits one prolly_commits_read call reads. */
#define HEADS_PER_READ 1024

int cmd_branches(struct cli *cli, int argc, char **argv)
{
	struct opt opts[] = {{NULL, 0, NULL, NULL}};
	char *pos[1];
	struct branch_list bl = {NULL, NULL, 0, 0, 0, 0};
	int n_pos, rc, err;

	rc = parse_args(cli, argc, argv, opts, pos, 0, 0, &n_pos);
	if (rc)
		goto cleanup;
	if ((rc = open_store(cli, STORE_READ, NULL)))
		goto cleanup;
	/* Collect first: commits are read after the listing, not from inside its callback. */
	err = prolly_branch_list(cli->db, list_branches, &bl);
	if (bl.oom) {
		rc = fail(cli, EXIT_STORE, "out of memory");
		goto cleanup;
	}
	if (err) {
		rc = fail_lib(cli, err, "cannot list branches");
		goto cleanup;
	}
	/* The heads' commits, a batch per store call (one round trip each on a server). */
	for (size_t at = 0; at < bl.n; at += HEADS_PER_READ) {
		prolly_commit *c[HEADS_PER_READ];
		size_t m = bl.n - at < HEADS_PER_READ ? bl.n - at : HEADS_PER_READ;
		err = prolly_commits_read(c, cli->db, &bl.heads[at], m);
		if (err) {
			rc = fail_lib(cli, err, "cannot read the heads' commits");
			if (rc == EXIT_NOTFOUND) /* a head's commit is never collected: damage */
				rc = EXIT_STORE;
			goto cleanup;
		}
		for (size_t i = 0; i < m; i++) {
			char chex[PROLLY_ID_HEX_SIZE], thex[PROLLY_ID_HEX_SIZE];
			prolly_id_to_hex(chex, &bl.heads[at + i]);
			prolly_id_to_hex(thex, &c[i]->tree);
			prolly_commit_free(c[i]);
			escape_puts(stdout, bl.names[at + i]);
			printf("\t%s\t%s\n", chex, thex);
		}
	}
cleanup:
	branch_list_dispose(&bl);
	return rc;
}

/* ---- log --------------------------------------------------------------------------------- */

struct log_state {
	uint64_t max, shown;
};

/* Writes time_us as YYYY-MM-DDTHH:MM:SS.ffffffZ: the year has at least 4 digits (strftime's %Y
 * has no padding: year 1 was "1-01-01"), a '-' before year 0 and more digits after 9999. */
void print_time(int64_t time_us)
{
	int64_t secs = time_us / 1000000, frac = time_us % 1000000;
	if (frac < 0) {
		frac += 1000000;
		secs--;
	}
	time_t t = (time_t)secs;
	struct tm tm;
	char buf[64];
	if (!gmtime_r(&t, &tm) || !strftime(buf, sizeof buf, "-%m-%dT%H:%M:%S", &tm)) {
		printf("@%lld", (long long)time_us);
		return;
	}
	long long year = (long long)tm.tm_year + 1900;
	printf("%s%04lld%s.%06lldZ", year < 0 ? "-" : "", year < 0 ? -year : year, buf,
	       (long long)frac);
}

static int print_commit(void *payload, const prolly_commit *c)
{
	struct log_state *st = payload;
	char hex[PROLLY_ID_HEX_SIZE];
	if (st->shown == st->max || ferror(stdout)) /* failed output: finish_output says so */
		return 1;
	if (st->shown++)
		putchar('\n');
	prolly_id_to_hex(hex, &c->id);
	printf("commit\t%s\n", hex);
	for (size_t i = 0; i < c->n_parents; i++) {
		prolly_id_to_hex(hex, &c->parents[i]);
		printf("parent\t%s\n", hex);
	}
	prolly_id_to_hex(hex, &c->tree);
	printf("tree\t%s\ndate\t", hex);
	print_time(c->time_us);
	fputs("\nmessage\t", stdout);
	escape_puts(stdout, c->message);
	putchar('\n');
	return 0;
}

int cmd_log(struct cli *cli, int argc, char **argv)
{
	const char *limit = NULL;
	struct opt opts[] = {{"limit", 0, &limit, NULL}, {NULL, 0, NULL, NULL}};
	char *pos[1];
	struct log_state st = {UINT64_MAX, 0};
	prolly_id cid;
	int n_pos, rc, err;

	rc = parse_args(cli, argc, argv, opts, pos, 1, 1, &n_pos);
	if (rc)
		return rc;
	if ((limit && (rc = arg_count(cli, &st.max, limit, "--limit"))) ||
	    (rc = open_store(cli, STORE_READ, NULL)) || (rc = resolve_commit(cli, &cid, pos[0])))
		return rc;
	if (st.max == 0)
		return 0;
	err = prolly_log(cli->db, &cid, print_commit, &st);
	if (err && !(err == 1 && (st.shown == st.max || ferror(stdout))))
		return fail_lib(cli, err, "cannot read the history of '%s'", pos[0]);
	return 0;
}

/* ---- show -------------------------------------------------------------------------------- */

int cmd_show(struct cli *cli, int argc, char **argv)
{
	const char *mainline = NULL;
	struct diff_args a;
	struct opt opts[DIFF_ARGS_OPTS + 2] = {{"mainline", 'm', &mainline, NULL}};
	char *pos[1];
	struct log_state st = {1, 0};
	prolly_commit *c = NULL, *pc = NULL;
	prolly_id from;
	uint64_t parent = 1;
	int n_pos, rc, err;

	diff_args_init(&a);
	diff_args_opts(&opts[1], &a);
	if ((rc = parse_args(cli, argc, argv, opts, pos, 1, 1, &n_pos)) ||
	    (rc = diff_args_take(cli, &a)) ||
	    (mainline && (rc = arg_count(cli, &parent, mainline, "-m (--mainline)"))))
		goto cleanup;
	if (parent == 0 || parent > 64) {
		rc = usage_error(cli, "-m takes a parent number from 1, not '%s'", mainline);
		goto cleanup;
	}
	if ((rc = open_store(cli, STORE_READ, NULL)) || (rc = resolve_commit_read(cli, &c, pos[0])))
		goto cleanup;
	if (parent > (c->n_parents > 1 ? c->n_parents : 1)) {
		char hex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hex, &c->id);
		rc = usage_error(cli, "%s has %zu parent%s; -m %llu names none", hex, c->n_parents,
		                 c->n_parents == 1 ? "" : "s", (unsigned long long)parent);
		goto cleanup;
	}
	/* The change is measured from the parent's tree; a first commit's from the empty tree. */
	if (c->n_parents == 0) {
		prolly_id_empty_tree(&from);
	} else if ((err = prolly_commit_read(&pc, cli->db, &c->parents[parent - 1]))) {
		rc = fail_lib(cli, err, "cannot read the parent of '%s'", pos[0]);
		goto cleanup;
	} else {
		from = pc->tree;
	}
	print_commit(&st, c);
	a.d.blank_first = 1;
	if ((err = diff_args_print(cli, &a, &from, &c->tree)))
		rc = fail_lib(cli, err, "cannot show the change of '%s'", pos[0]);
cleanup:
	prolly_commit_free(pc);
	prolly_commit_free(c);
	diff_args_dispose(&a);
	return rc;
}

/* ---- root, stats, verify ----------------------------------------------------------------- */

int cmd_root(struct cli *cli, int argc, char **argv)
{
	struct opt opts[] = {{NULL, 0, NULL, NULL}};
	char *pos[1];
	prolly_id root;
	int n_pos, rc;

	rc = parse_args(cli, argc, argv, opts, pos, 1, 1, &n_pos);
	if (rc)
		return rc;
	if ((rc = open_store(cli, STORE_READ, NULL)) || (rc = resolve_tree(cli, &root, pos[0])))
		return rc;
	print_id(&root);
	return 0;
}

int cmd_stats(struct cli *cli, int argc, char **argv)
{
	struct opt opts[] = {{NULL, 0, NULL, NULL}};
	char *pos[1];
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	prolly_id root;
	int n_pos, rc, err;

	rc = parse_args(cli, argc, argv, opts, pos, 1, 1, &n_pos);
	if (rc)
		return rc;
	if ((rc = open_store(cli, STORE_READ, NULL)) || (rc = resolve_tree(cli, &root, pos[0])))
		return rc;
	err = prolly_tree_stats_get(&ts, cli->db, &root, 0);
	if (err)
		return fail_lib(cli, err, "cannot walk the tree of '%s'", pos[0]);
	printf("records\t%llu\nheight\t%u\nnodes\t%llu\nleaves\t%llu\nbytes\t%llu\nnode_size\t%u\n",
	       (unsigned long long)ts.records, ts.height, (unsigned long long)ts.nodes,
	       (unsigned long long)ts.leaves, (unsigned long long)ts.bytes,
	       prolly_db_node_size(cli->db));
	return 0;
}

/* The trees verify walks, in order, and (for --all) the ref each run of them came from. */
struct tree_list {
	prolly_id *ids;
	size_t n, cap;
	int oom;
	struct verify_ref *refs; /* --all: one per ref, the first tree of each in order */
	size_t n_refs, cap_refs;
	size_t next_ref; /* the next ref whose line print_verified has yet to print */
	int failed;      /* a ref's own tree is missing */
	int history;
	prolly_db *db;
	int err; /* the first error of the listing callbacks */
};
struct verify_ref {
	const char *kind; /* "branch" or "tag" */
	char *name;
	prolly_id commit;
	size_t first; /* index of its first tree in ids */
};

static int add_tree(struct tree_list *tl, const prolly_id *tree)
{
	if (GROW_ARRAY(tl->ids, tl->cap, tl->n + 1, 16)) {
		tl->oom = 1;
		return 1;
	}
	tl->ids[tl->n++] = *tree;
	return 0;
}

static int collect_tree(void *payload, const prolly_commit *c)
{
	return add_tree(payload, &c->tree);
}

/* The trees of commit: its own, or with history its history's, newest first. */
static int collect_commit(struct tree_list *tl, const prolly_id *commit)
{
	prolly_commit *c = NULL;
	int err;
	if (tl->history)
		return prolly_log(tl->db, commit, collect_tree, tl);
	if ((err = prolly_commit_read(&c, tl->db, commit)) == 0)
		err = add_tree(tl, &c->tree) ? PROLLY_ENOMEM : 0;
	prolly_commit_free(c);
	return err;
}

/* --all: each branch, then each tag, with the trees of its commit (and history). */
static int collect_ref(struct tree_list *tl, const char *kind, const char *name,
                       const prolly_id *commit)
{
	struct verify_ref *r;
	if (GROW_ARRAY(tl->refs, tl->cap_refs, tl->n_refs + 1, 8) || !(name = strdup(name))) {
		tl->oom = 1;
		return 1;
	}
	r = &tl->refs[tl->n_refs++];
	r->kind = kind;
	r->name = (char *)name;
	r->commit = *commit;
	r->first = tl->n;
	if ((tl->err = collect_commit(tl, commit)))
		return 1;
	return 0;
}
static int collect_branch(void *payload, const char *name, const prolly_id *commit)
{
	return collect_ref(payload, "branch", name, commit);
}
static int collect_tag(void *payload, const char *name, const prolly_id *commit)
{
	return collect_ref(payload, "tag", name, commit);
}

/* One line per tree: its nodes that no tree before it had (nothing for a tree met before);
 * with --all, a line naming each ref before its trees. */
static int print_verified(void *payload, size_t i, int status, const prolly_tree_stats *st)
{
	struct tree_list *tl = payload;
	char hex[PROLLY_ID_HEX_SIZE];
	int first = i == 0;
	while (tl->next_ref < tl->n_refs && tl->refs[tl->next_ref].first <= i) {
		const struct verify_ref *r = &tl->refs[tl->next_ref++];
		prolly_id_to_hex(hex, &r->commit);
		printf("%s\t%s\t%s\n", r->kind, r->name, hex);
		first = r->first == i;
	}
	prolly_id_to_hex(hex, &tl->ids[i]);
	if (status == PROLLY_ENOTFOUND && !first) {
		/* An older commit that gc kept for the history walks only (docs/commits.md,
		 * "Retention and merges"): its tree is gone by design, not damaged. */
		printf("pruned\t%s\n", hex);
		return 0;
	}
	if (status) {
		tl->failed = 1; /* a ref's own tree: damage (the library's message names it) */
		return 1;
	}
	if (st->nodes)
		printf("ok\t%s\t%llu nodes\t%llu bytes\n", hex, (unsigned long long)st->nodes,
		       (unsigned long long)st->bytes);
	return 0;
}

int cmd_verify(struct cli *cli, int argc, char **argv)
{
	int history = 0, all = 0;
	struct opt opts[] = {
	    {"history", 0, NULL, &history}, {"all", 0, NULL, &all}, {NULL, 0, NULL, NULL}};
	char *pos[1];
	struct tree_list tl;
	char what[512]; /* for the messages: 'BRANCH' (a spec that resolved), or the store */
	prolly_id cid;
	int n_pos, rc, err;

	memset(&tl, 0, sizeof(tl));
	rc = parse_args(cli, argc, argv, opts, pos, 0, 1, &n_pos);
	if (rc)
		goto cleanup;
	if (all == (n_pos == 1)) {
		rc = all ? usage_error(cli, "--all verifies every branch and tag: name no branch")
		         : usage_error(cli, "missing arguments: usage: prolly %s %s", cli->cmd->name,
		                       cli->cmd->synopsis);
		goto cleanup;
	}
	snprintf(what, sizeof(what), "%s%s%s", all ? "" : "'", all ? "the store" : pos[0],
	         all ? "" : "'");
	tl.history = history;
	if ((rc = open_store(cli, STORE_READ, NULL)))
		goto cleanup;
	tl.db = cli->db;
	if (all) {
		err = prolly_branch_list(cli->db, collect_branch, &tl);
		if (!err && !tl.oom && !tl.err)
			err = prolly_tag_list(cli->db, collect_tag, &tl);
		if (tl.err)
			err = tl.err;
	} else {
		if ((rc = resolve_commit(cli, &cid, pos[0])))
			goto cleanup;
		err = collect_commit(&tl, &cid);
	}
	if (tl.oom) {
		rc = fail(cli, EXIT_STORE, "out of memory");
		goto cleanup;
	}
	if (err) {
		rc = fail_lib(cli, err, "cannot read the commits of %s", what);
		if (rc == EXIT_NOTFOUND) /* the commit resolved, so a missing one is damage */
			rc = EXIT_STORE;
		goto cleanup;
	}
	/* Each node once: the trees of a history, and of branches, share most of theirs. */
	err = prolly_trees_verify(cli->db, tl.ids, tl.n, print_verified, &tl);
	if (err) {
		/* the head's own tree missing: the library's ENOTFOUND message names it */
		rc = fail_lib(cli, tl.failed ? PROLLY_ENOTFOUND : err, "a tree of %s is damaged", what);
		/* A missing node is damage too, not a missing key. */
		if (rc == EXIT_NOTFOUND)
			rc = EXIT_STORE;
	}
cleanup:
	for (size_t i = 0; i < tl.n_refs; i++)
		free(tl.refs[i].name);
	free(tl.refs);
	free(tl.ids);
	return rc;
}
