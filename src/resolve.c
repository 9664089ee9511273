/*
 * resolve.c - revision specs (prolly_resolve): what a command means by "main~2^2" or "3fa9c".
 *
 * A spec is a base followed by any sequence of steps:
 *   base   a branch name; a tag; a remote-tracking branch REMOTE/BRANCH (the ref
 *          "remotes/REMOTE/BRANCH", remote.c); a commit id (64 hex digits); or a unique prefix
 *          of a commit id of MIN_PREFIX..63 hex digits (either case), tried in that order: a
 *          branch wins over a tag, a remote-tracking branch and a short id of the same spelling
 *          (branch names of 64 hex digits are refused: prolly_branch_name_valid; a branch an
 *          older library so named is read when no commit has that id).
 *   @{N}, @{TIME}  right after a branch or tag name: the commit it named N moves ago or at TIME,
 *          from its reflog (resolve_at.c);
 *   ~N     N first-parent steps back (N decimal, required);
 *   ^N     the N-th parent (1-based; "^" alone is "^1", "^0" the commit itself).
 *
 * Invariants:
 *   S1  every commit the spec reaches is read and hash-checked, except a bare branch by
 *       prolly_resolve (its head is returned as the ref holds it); prolly_resolve_commit reads
 *       that one too, with the ref in one store call where the store can (head.c);
 *   S2  an object that is a tree node where a commit is expected is PROLLY_EINVAL (bad input),
 *       not PROLLY_ECORRUPT: the store is fine, the spec is wrong (prolly__commit_read_as in
 *       commit.c, which the branch, tag and reset functions use for the commit they are given);
 *   S3  a short id is looked up with the store's find_ids (one index range scan) where the
 *       store has it; otherwise by walking the history reachable from every ref. It must name
 *       exactly one commit: none is PROLLY_ENOTFOUND, several PROLLY_EINVAL listing them.
 *   S4  the steps read their commits through a commit graph (commit_graph.c), which reads
 *       ahead where the store has get_ancestors (256 commits, doubling per call up to 4,096):
 *       "main~5000" costs a handful of store calls, not 5000. The graph is started afresh past
 *       STEP_GRAPH_MAX commits, so memory stays bounded whatever N. A commit the graph cannot
 *       load (absent, a tree, damaged) is read on its own, which says which (S1, S2).
 *   S5  "@{...}" comes at most once, right after the base, and names the base's value from its
 *       reflog (RA1-RA4 of resolve_at.c); what it gives is read and hash-checked as any commit
 *       a step reaches (S1).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#define MIN_PREFIX 4
/* The longest base: a remote-tracking branch REMOTE/BRANCH, whose ref "remotes/REMOTE/BRANCH"
 * has at most PROLLY_MAX_REF_NAME bytes (RM6 in remote.c), longer than any branch or tag name. */
#define MAX_SPEC_BASE (PROLLY_MAX_REF_NAME - (int)(sizeof("remotes/") - 1))
#define FIND_LIMIT 256 /* objects one short-id lookup looks at */
#define MAX_LISTED 8   /* candidates an ambiguity message names */
#define MAX_STEPS 1000000000UL
/* Commits the steps' graph holds before it starts afresh (S4): several of its largest reads
 * ahead (commit_graph.c), so that few commits read ahead are dropped unused. */
#define STEP_GRAPH_MAX 16384

/* ---- short ids (S3) --------------------------------------------------------------------------- */

typedef struct cands {
	const char *hex; /* the prefix */
	size_t len;
	prolly_id v[MAX_LISTED + 1];
	size_t n;       /* distinct commits found (counting past MAX_LISTED + 1) */
	size_t objects; /* objects find_ids reported */
} cands;

static void cand_add(cands *c, const prolly_id *id)
{
	for (size_t i = 0; i < c->n && i <= MAX_LISTED; i++)
		if (prolly_id_equal(&c->v[i], id))
			return;
	if (c->n <= MAX_LISTED)
		c->v[c->n] = *id;
	c->n++;
}

static int on_found_id(void *payload, const prolly_id *id, const void *data, size_t size)
{
	cands *c = payload;
	c->objects++;
	if (size >= PROLLY__MAGIC_SIZE && memcmp(data, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) == 0)
		cand_add(c, id);
	return 0;
}

static int id_has_prefix(const prolly_id *id, const char *hex, size_t len)
{
	char h[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(h, id);
	return strncasecmp(h, hex, len) == 0;
}

static int on_logged(void *payload, const prolly_commit *c)
{
	cands *cd = payload;
	if (id_has_prefix(&c->id, cd->hex, cd->len))
		cand_add(cd, &c->id);
	return 0;
}

typedef struct heads {
	prolly_id *v;
	size_t n, cap;
} heads;

static int on_ref(void *payload, const char *name, const prolly_id *value)
{
	heads *h = payload;
	if (strncmp(name, PROLLY__LOGS_PREFIX, PROLLY__LOGS_PREFIX_LEN) == 0)
		return 0; /* the reflog's refs hold entries, not commits */
	if (PROLLY__GROW(h->v, h->cap, h->n + 1, 16))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory listing refs");
	h->v[h->n++] = *value;
	return 0;
}

/* Without find_ids: every commit reachable from a ref, the ref's own commit included. One walk
 * from all the refs at once, so that a history the branches share is read once, not once per
 * branch. Refs that do not name a readable commit are passed over (a damaged history is reported
 * by the commands that read it): a ref's value is never a candidate unread. When the walk meets
 * damage, each ref's history is walked alone, so that damage in one hides none of the others'. */
static int walk_refs(prolly_db *db, cands *c)
{
	heads h = {NULL, 0, 0};
	int rc = db->vt.list_refs(db->store, "", on_ref, &h);
	if (rc == 0) {
		rc = prolly__log_walk_heads(db, h.v, h.n, on_logged, c);
		if (rc == PROLLY_ENOTFOUND || rc == PROLLY_ECORRUPT) {
			c->n = 0;
			rc = 0;
			for (size_t i = 0; i < h.n && !rc; i++) {
				rc = prolly__log_walk(db, &h.v[i], on_logged, c, NULL);
				if (rc == PROLLY_ENOTFOUND || rc == PROLLY_ECORRUPT)
					rc = 0;
			}
		}
	}
	free(h.v);
	return rc;
}

static int find_prefix(prolly_id *out, prolly_db *db, const char *hex, size_t len, const char *spec)
{
	cands c;
	int rc;
	memset(&c, 0, sizeof(c));
	c.hex = hex;
	c.len = len;
	if (db->vt.find_ids) {
		prolly_id lo, hi;
		memset(lo.bytes, 0, sizeof(lo.bytes));
		memset(hi.bytes, 0xff, sizeof(hi.bytes));
		prolly__hex_nibbles(lo.bytes, hex, len); /* resolve_base checked the digits */
		prolly__hex_nibbles(hi.bytes, hex, len);
		prolly_stats d = PROLLY_STATS_INIT;
		d.store_reads = 1;
		rc = db->vt.find_ids(db->store, &lo, &hi, FIND_LIMIT, on_found_id, &c);
		prolly__stats_add(db, &d);
		if (rc)
			return rc;
		if (c.objects >= FIND_LIMIT && c.n < 2)
			return prolly_set_error(PROLLY_EINVAL,
			                        "'%s': the short id matches %d objects or more; give more "
			                        "hex digits",
			                        spec, FIND_LIMIT);
	} else if ((rc = walk_refs(db, &c))) {
		return rc;
	}
	if (c.n == 0)
		return prolly_set_error(PROLLY_ENOTFOUND, "no branch or commit '%s'", spec);
	if (c.n > 1) {
		char msg[MAX_LISTED * (PROLLY_ID_HEX_SIZE + 2) + 16];
		size_t at = 0;
		for (size_t i = 0; i < c.n && i < MAX_LISTED; i++) {
			char h[PROLLY_ID_HEX_SIZE];
			prolly_id_to_hex(h, &c.v[i]);
			at += (size_t)snprintf(msg + at, sizeof(msg) - at, "%s%s", i ? ", " : "", h);
		}
		if (c.n > MAX_LISTED)
			snprintf(msg + at, sizeof(msg) - at, ", ...");
		return prolly_set_error(PROLLY_EINVAL,
		                        "short id '%.*s' is ambiguous: %zu%s commits match (%s); give "
		                        "more hex digits",
		                        (int)len, hex, c.n > MAX_LISTED ? (size_t)MAX_LISTED : c.n,
		                        c.n > MAX_LISTED ? " or more" : "", msg);
	}
	*out = c.v[0];
	return 0;
}

/* ---- the base and the steps -------------------------------------------------------------------- */

/* The ref "remotes/REMOTE/BRANCH" for base "REMOTE/BRANCH". */
static int remote_tracking(prolly_id *out, prolly_db *db, const char *base)
{
	char ref[PROLLY_MAX_REF_NAME + 1];
	if (snprintf(ref, sizeof(ref), "remotes/%s", base) >= (int)sizeof(ref))
		return PROLLY_ENOTFOUND;
	return prolly__get_ref(db, ref, out);
}

/* 1 if base, too long for a branch name, is REMOTE/BRANCH: a remote name (no '/') and a valid
 * branch name, as the tracking refs a fetch makes (RM6 in remote.c). */
static int long_tracking_name(const char *base)
{
	const char *slash = strchr(base, '/');
	char remote[PROLLY__MAX_BRANCH_NAME + 1];
	size_t rlen = slash ? (size_t)(slash - base) : 0;
	if (!slash || rlen > PROLLY__MAX_BRANCH_NAME)
		return 0;
	memcpy(remote, base, rlen);
	remote[rlen] = 0;
	return prolly_branch_name_valid(remote) == 0 && prolly_branch_name_valid(slash + 1) == 0;
}

/* The base of spec (blen bytes at base) in *out; *c receives its commit when it was read on the
 * way (always for a branch with want_c: the ref, the commit and its root in one store call). */
static int resolve_base(prolly_id *out, prolly_commit **c, prolly_db *db, const char *base,
                        size_t blen, const char *spec, int want_c)
{
	int hex = prolly__hex_span(base, blen, 0) == blen, rc;
	if (blen == 2 * PROLLY_ID_SIZE && hex) {
		char ref[PROLLY_MAX_REF_NAME + 1];
		prolly_id id;
		if ((rc = prolly_id_from_hex(out, base)))
			return rc;
		if ((rc = prolly__commit_read_as(c, db, out, spec)) != PROLLY_ENOTFOUND)
			return rc;
		/* then a branch of that name, which libraries before the 64-hex rule created */
		snprintf(ref, sizeof(ref), "refs/heads/%.*s", (int)blen, base);
		if ((rc = prolly__get_ref(db, ref, &id)) == PROLLY_ENOTFOUND)
			return prolly__commit_read_as(c, db, out, spec); /* "no commit ..." again */
		if (rc)
			return rc;
		*out = id;
		return prolly__commit_read_as(c, db, out, spec);
	}
	/* too long for a branch or tag: only REMOTE/BRANCH, looked up alone */
	if (blen > PROLLY__MAX_BRANCH_NAME && long_tracking_name(base)) {
		if ((rc = remote_tracking(out, db, base)))
			return rc == PROLLY_ENOTFOUND
			           ? prolly_set_error(rc, "no remote-tracking branch '%.80s...'", base)
			           : rc;
		return prolly__commit_read_as(c, db, out, spec);
	}
	rc = prolly_branch_name_valid(base); /* EINVAL (bad name) keeps its message */
	if (rc && !hex)
		return rc;
	if (rc == 0) {
		if (want_c) {
			char ref[PROLLY_MAX_REF_NAME + 1];
			if ((rc = prolly__branch_ref(ref, base)))
				return rc;
			rc = prolly__head_read_raise(db, ref, out, c);
			if (rc == 0) /* NULL *c: a store without get_ref_objects, or the commit is gone */
				return *c ? 0 : prolly__commit_read_as(c, db, out, spec);
		} else {
			rc = prolly_branch_head(out, db, base);
		}
		if (rc != PROLLY_ENOTFOUND)
			return rc;
		/* a tag of the same name comes after the branch, before a short id */
		rc = prolly_tag_get(out, db, base);
		if (rc == 0)
			return prolly__commit_read_as(c, db, out, spec);
		if (rc != PROLLY_ENOTFOUND)
			return rc;
		/* then a remote-tracking branch REMOTE/BRANCH (remote.c, RM2) */
		if (memchr(base, '/', blen) && (rc = remote_tracking(out, db, base)) != PROLLY_ENOTFOUND)
			return rc ? rc : prolly__commit_read_as(c, db, out, spec);
	}
	if (hex && blen >= MIN_PREFIX && blen < 2 * PROLLY_ID_SIZE) {
		if ((rc = find_prefix(out, db, base, blen, spec)))
			return rc;
		return prolly__commit_read_as(c, db, out, spec);
	}
	if (hex && blen < MIN_PREFIX)
		return prolly_set_error(PROLLY_ENOTFOUND,
		                        "no branch '%s' (a short commit id has at least %d hex digits)",
		                        base, MIN_PREFIX);
	return prolly_set_error(PROLLY_ENOTFOUND, "no branch '%s'", base);
}

/* ---- the steps (S4) ----------------------------------------------------------------------- */

/* Commit cur's parent count (*np) and, when it has `want` parents, parent want (1-based) in
 * *next; cur read through the graph g, or alone when the graph cannot load it. */
static int step(size_t *np, prolly_id *next, prolly__graph *g, prolly_db *db, const prolly_id *cur,
                size_t want, const char *spec)
{
	size_t gi;
	int rc;
	if (g->n >= STEP_GRAPH_MAX) {
		prolly__graph_dispose(g);
		prolly__graph_init(g, db, 0);
	}
	if ((rc = prolly__graph_get(g, cur, &gi)))
		return rc;
	if (g->v[gi].state == PROLLY__G_NEW && (rc = prolly__graph_load(g, &gi, 1)) == PROLLY_ENOMEM)
		return rc;
	if (rc == 0 && g->v[gi].state == PROLLY__G_LOADED) {
		*np = g->v[gi].np;
		if (*np >= want)
			*next = *prolly__graph_parent(g, &g->v[gi], (uint32_t)(want - 1));
		return 0;
	}
	prolly_commit *c = NULL; /* absent, a tree or damaged: reading it alone says which */
	if ((rc = prolly__commit_read_as(&c, db, cur, spec)))
		return rc;
	*np = c->n_parents;
	if (*np >= want)
		*next = c->parents[want - 1];
	prolly_commit_free(c);
	return 0;
}

/* 1 when the graph holds commit id, read and hash-checked. */
static int in_graph(const prolly__graph *g, const prolly_id *id)
{
	size_t gi = prolly__idmap_find(&g->index, id);
	return gi != PROLLY__IDMAP_NONE && g->v[gi].state == PROLLY__G_LOADED;
}

/* Parses the digits at *p (none: dflt, or an error when dflt < 0). */
static int parse_count(unsigned long *out, const char **p, long dflt, const char *spec, char op)
{
	const char *d = *p;
	unsigned long v = 0;
	if (*d < '0' || *d > '9') {
		if (dflt < 0)
			return prolly_set_error(PROLLY_EINVAL, "revision spec '%s': a number must follow '%c'",
			                        spec, op);
		*out = (unsigned long)dflt;
		return 0;
	}
	for (; *d >= '0' && *d <= '9'; d++) {
		if (v > MAX_STEPS / 10)
			return prolly_set_error(PROLLY_EINVAL,
			                        "revision spec '%s': '%c' takes a decimal count up to 10^9",
			                        spec, op);
		v = v * 10 + (unsigned long)(*d - '0');
	}
	*out = v;
	*p = d;
	return 0;
}

/* The steps after the base, ~N and ^N, read before anything is: a malformed spec is
 * PROLLY_EINVAL whatever the history holds. */
static int check_steps(const char *p, const char *spec)
{
	while (*p) {
		char op = *p++;
		unsigned long n;
		int rc;
		if (op != '~' && op != '^')
			return prolly_set_error(
			    PROLLY_EINVAL, "revision spec '%s': '%c' where '~' or '^' was expected", spec, op);
		if ((rc = parse_count(&n, &p, op == '^' ? 1 : -1, spec, op)))
			return rc;
	}
	return 0;
}

/* prolly_resolve, and with out_c (not NULL) prolly_resolve_commit. */
static int resolve(prolly_id *out_commit, prolly_commit **out_c, prolly_db *db, const char *spec)
{
	char base[MAX_SPEC_BASE + 1];
	const char *steps;
	prolly_commit *c = NULL;
	prolly_id cur;
	prolly__graph g;
	prolly__reflog_sel sel;
	size_t blen;
	int rc, at = 0;

	prolly__graph_init(&g, db, 0);
	if (!out_commit || !db || !spec) {
		rc = prolly_set_error(PROLLY_EINVAL, "prolly_resolve: NULL %s",
		                      !out_commit ? "out_commit"
		                      : !db       ? "db"
		                                  : "spec");
		goto cleanup;
	}
	if (!*spec) {
		rc = prolly_set_error(PROLLY_EINVAL, "an empty revision spec");
		goto cleanup;
	}
	blen = strcspn(spec, "~^@");
	if (spec[blen] == '@' && spec[blen + 1] != '{') /* not "@{": the base's, which refuses it */
		blen += strcspn(spec + blen, "~^");
	if (blen == 0 || blen > MAX_SPEC_BASE) {
		rc = prolly_set_error(PROLLY_EINVAL, "bad revision spec '%.80s'", spec);
		goto cleanup;
	}
	steps = spec + blen;
	if (*steps == '@') { /* S5: @{N} or @{TIME}, before any step */
		const char *close = strchr(steps + 2, '}');
		if (!close) {
			rc = prolly_set_error(PROLLY_EINVAL, "revision spec '%.200s': '@{' without its '}'",
			                      spec);
			goto cleanup;
		}
		if ((rc = prolly__reflog_sel_parse(&sel, steps + 2, (size_t)(close - steps - 2), spec)))
			goto cleanup;
		at = 1;
		steps = close + 1;
	}
	if ((rc = check_steps(steps, spec)))
		goto cleanup;
	memcpy(base, spec, blen);
	base[blen] = 0;
	rc = at ? prolly__resolve_at(&cur, db, base, &sel, spec)
	        : resolve_base(&cur, &c, db, base, blen, spec, out_c != NULL);
	if (rc)
		goto cleanup;
	for (const char *p = steps; *p;) {
		char op = *p++;
		unsigned long n = 0;
		if (op != '~' && op != '^') {
			rc = prolly_set_error(
			    PROLLY_EINVAL, "revision spec '%s': '%c' where '~' or '^' was expected", spec, op);
			goto cleanup;
		}
		if ((rc = parse_count(&n, &p, op == '^' ? 1 : -1, spec, op)))
			goto cleanup;
		if (op == '^' && n == 0)
			continue; /* the commit itself */
		for (unsigned long i = 0; i < (op == '~' ? n : 1); i++) {
			size_t want = op == '~' ? 1 : n, np;
			prolly_id next;
			if (c) { /* the base, read already */
				np = c->n_parents;
				if (np >= want)
					next = c->parents[want - 1];
				prolly_commit_free(c);
				c = NULL;
			} else if ((rc = step(&np, &next, &g, db, &cur, want, spec))) {
				if (rc == PROLLY_ENOTFOUND)
					prolly_set_error(rc, "'%s': a commit on the way is gone (retention)", spec);
				goto cleanup;
			}
			if (np < want) {
				char hex[PROLLY_ID_HEX_SIZE];
				prolly_id_to_hex(hex, &cur);
				if (op == '~')
					rc = prolly_set_error(PROLLY_ENOTFOUND,
					                      "'%s' goes back past root commit %s (%lu step%s back)",
					                      spec, hex, i, i == 1 ? "" : "s");
				else
					rc = prolly_set_error(PROLLY_ENOTFOUND,
					                      "'%s': commit %s has %zu parent%s, not %lu", spec, hex,
					                      np, np == 1 ? "" : "s", n);
				goto cleanup;
			}
			cur = next;
		}
	}
	if (!c && (out_c || (strlen(spec) != blen && !in_graph(&g, &cur))) &&
	    (rc = prolly__commit_read_as(&c, db, &cur, spec))) { /* S1 */
		if (rc == PROLLY_ENOTFOUND && strlen(spec) != blen)
			prolly_set_error(rc, "'%s': that commit is gone (retention)", spec);
		goto cleanup;
	}
	*out_commit = cur;
	if (out_c) {
		*out_c = c;
		c = NULL;
	}
cleanup:
	prolly_commit_free(c);
	prolly__graph_dispose(&g);
	return rc;
}

int prolly_resolve(prolly_id *out_commit, prolly_db *db, const char *spec)
{
	return resolve(out_commit, NULL, db, spec);
}

int prolly_resolve_commit(prolly_commit **out, prolly_db *db, const char *spec)
{
	prolly_id id;
	if (out)
		*out = NULL;
	if (!out)
		return prolly_set_error(PROLLY_EINVAL, "prolly_resolve_commit: NULL argument");
	return resolve(&id, out, db, spec);
}
