/*
 * history.c - the scale engine's cells of history between stores: sync (prolly_sync between the
 * fixture's store and LMDB stores) and proof (prolly_prove, prolly_proof_verify). Both are ops
 * with parts (scale_op_parts), each part a cell of its own with its own row:
 *
 *   sync/clone          the base tree, as a commit on branch main, copied with its history into
 *                       a fresh LMDB store (what `prolly clone` does), from a cold cache. ops =
 *                       records. The note compares the time with the fixture's full_scan row
 *                       (the same source read whole, cold) when that cell ran before.
 *   sync/push           a commit of cfg->changes random updates (another generation of values
 *                       each run) on the base commit, made untimed in an LMDB clone of the base
 *                       (the "laptop"), then pushed to the fixture's store (prolly_push, a
 *                       fast-forward of main). Before each run both mains go back to the base
 *                       commit (untimed), so every run pushes its edits onto the head they were
 *                       made on. ops = edits.
 *   proof/prove_key     k = min(cfg->reads, SCALE_PROOF_KEYS) proofs of random base records,
 *                       one after another after one cache clear. ops = proofs.
 *   proof/verify_key    those proofs (made untimed) checked against the base root. ops = proofs.
 *   proof/prove_range   k / 10 (at least 1) proofs of SCALE_PROOF_RANGE consecutive records.
 *   proof/verify_range  those checked.
 *
 * Counters: a sync row carries the sync's nodes_copied and bytes_copied (commits included) as
 * nodes_written and bytes_written; store_round_trips counts the calls to both stores. The note
 * of a valid row says what the median run copied and how many has/read/write calls it made, or
 * the median, smallest and largest proof size in bytes.
 *
 * Validation: the clone's main is the source's base commit, its tree the base root, and every
 * node of it is read again from the clone and re-hashed (prolly_tree_stats_get with verify): the
 * record count and the node count must be the base tree's. The push: the destination's main is
 * the pushed commit, its tree the edited root, whose diff from the base (read from the
 * destination, cold) is exactly the edits, and whose count is the base's. Proofs: every proof
 * verifies and shows exactly the expected records and values; a proof with one value byte
 * changed, and a proof checked against another tree id, fail.
 */
#include "engine.h"

#define BRANCH "main"
#define BRANCH_REF "refs/heads/main"

/* ---- sync ------------------------------------------------------------------------------------ */

/* The base tree as a root commit on branch main of the fixture's store (made once, untimed). */
static int base_commit(cell *c)
{
	fixture *fx = c->fx;
	prolly_txn *txn = NULL;
	int rc = 0;
	if (fx->have_base_commit)
		return 0;
	CK(prolly_txn_begin(&txn, fx->db), "prolly_txn_begin");
	CK(prolly_commit_create(&fx->base_commit, txn, &fx->base, NULL, 0, 0, "base"),
	   "prolly_commit_create (base)");
	CK(prolly_txn_move_branch(txn, BRANCH, NULL, &fx->base_commit), "prolly_txn_move_branch");
	CK(prolly_txn_commit(txn, NULL, 0), "committing the base commit");
	fx->have_base_commit = 1;
out:
	prolly_txn_free(txn);
	return rc;
}

/* A fresh LMDB store in the run's scratch directory, its path in path ("" until made). */
static int open_lmdb(cell *c, prolly_db **out, char *path, size_t n, const char *what)
{
	fixture *fx = c->fx;
	prolly_store *st = NULL;
	prolly_options opts;
	int rc;
	snprintf(path, n, "%s/%s-%" PRIu64 "-%u", fx->workdir, what, fx->n, fx->seq++);
	CK(bench_store_open_local(&st, path, fx->cfg->node_size), "opening an LMDB store");
	prolly_options_init(&opts, PROLLY_OPTIONS_VERSION);
	opts.cache_bytes = fx->cfg->cache_mb ? fx->cfg->cache_mb * 1024 * 1024 : PROLLY_CACHE_AUTO;
	CK(prolly_db_new(out, st, &opts), "prolly_db_new"); /* owns st, also on failure */
out:
	return rc;
}

/* main of dst set to the base commit by a sync from the fixture's store. */
static int sync_base(prolly_sync_stats *ss, prolly_db *dst, fixture *fx)
{
	prolly_ref_update u;
	memset(&u, 0, sizeof(u));
	u.name = BRANCH_REF;
	u.expect = PROLLY_REF_EXPECT_ABSENT;
	u.value = fx->base_commit;
	return prolly_sync(ss, dst, fx->db, NULL, 0, &u, 1, NULL);
}

/* The row's counters and note from what the sync did. */
static void sync_counters(cell *c, const prolly_sync_stats *ss, const char *more)
{
	c->cur.st.nodes_written = ss->nodes_copied;
	c->cur.st.bytes_written = ss->bytes_copied;
	snprintf(c->cur.info, sizeof(c->cur.info),
	         "%" PRIu64 " nodes and %" PRIu64 " commits copied (%.2f MiB); calls: has %" PRIu64
	         ", read %" PRIu64 ", write %" PRIu64 "%s",
	         ss->nodes_copied, ss->commits_copied, (double)ss->bytes_copied / 1048576.0,
	         ss->has_calls, ss->read_calls, ss->write_calls, more);
}

/* Is the head of main in db commit, with tree root? Reads both (hash-checked). */
static int check_head(cell *c, prolly_db *db, const prolly_id *commit, const prolly_id *root,
                      const char *what)
{
	prolly_commit *cm = NULL;
	prolly_id head;
	int rc;
	CK(prolly_branch_head(&head, db, BRANCH), "reading main");
	CK(prolly_commit_read(&cm, db, &head), "reading main's commit");
	if (!prolly_id_equal(&head, commit) || !prolly_id_equal(&cm->tree, root))
		sc_invalid(c, "%s: main is not the source's commit and tree", what);
out:
	prolly_commit_free(cm);
	return rc;
}

static int sync_clone(cell *c)
{
	fixture *fx = c->fx;
	prolly_db *dst = NULL;
	char path[4300] = "", more[64] = "";
	prolly_sync_stats ss = PROLLY_SYNC_STATS_INIT;
	prolly_tree_stats ts = PROLLY_TREE_STATS_INIT;
	int rc;
	if ((rc = base_commit(c)) != 0)
		goto out;
	CK(open_lmdb(c, &dst, path, sizeof(path), "clone"), "opening the clone");
	prolly_db_cache_clear(fx->db);
	sc_measure_begin(c);
	CK(sync_base(&ss, dst, fx), "prolly_sync (clone)");
	sc_measure_end(c);
	c->ops = fx->n;
	if (fx->scan_ms > 0)
		snprintf(more, sizeof(more), "; %.2fx the full_scan (%.1f ms)", c->cur.ms / fx->scan_ms,
		         fx->scan_ms);
	sync_counters(c, &ss, more);
	CK(check_head(c, dst, &fx->base_commit, &fx->base, "clone"), "checking the clone");
	CK(prolly_tree_stats_get(&ts, dst, &fx->base, 1), "verifying the clone's tree");
	if (ts.records != fx->n || ts.nodes != ss.nodes_copied || ss.commits_copied != 1)
		sc_invalid(c,
		           "clone: %" PRIu64 " records in %" PRIu64 " nodes, %" PRIu64 " nodes and %" PRIu64
		           " commits copied; expected %" PRIu64 " records, every node, one commit",
		           ts.records, ts.nodes, ss.nodes_copied, ss.commits_copied, fx->n);
out:
	prolly_close(dst);
	if (path[0] && !fx->cfg->keep)
		bench_rm_tree(path);
	return rc;
}

/* The laptop: an LMDB clone of the base (made once per fixture, untimed). */
static int local_clone(cell *c)
{
	fixture *fx = c->fx;
	int rc;
	if (fx->local)
		return 0;
	if ((rc = base_commit(c)) != 0)
		return rc;
	CK(open_lmdb(c, &fx->local, fx->local_path, sizeof(fx->local_path), "local"),
	   "opening the local store");
	CK(sync_base(NULL, fx->local, fx), "cloning the base for the push");
	/* the remote pushes go under (a store kept from an earlier run has it already) */
	rc = prolly_remote_add(fx->local, "origin", "mem:");
	CK(rc == PROLLY_ECONFLICT ? 0 : rc, "recording the remote 'origin'");
out:
	return rc;
}

typedef struct push_check {
	size_t seen, wrong;
	unsigned char last[KEY_LEN];
} push_check;

/* Every entry a changed value, in strictly increasing key order. */
static int push_diff_cb(void *payload, const prolly_diff_entry *d)
{
	push_check *p = payload;
	if (d->kind != PROLLY_DIFF_CHANGED || d->key.size != KEY_LEN ||
	    (p->seen && memcmp(p->last, d->key.data, KEY_LEN) >= 0))
		p->wrong++;
	else
		memcpy(p->last, d->key.data, KEY_LEN);
	p->seen++;
	return 0;
}

/* main of db back at the base commit (untimed), so that every run pushes a commit of its
 * edits onto the head it was made on, as the first run does. */
static int reset_main(cell *c, prolly_db *db)
{
	fixture *fx = c->fx;
	prolly_txn *txn = NULL;
	prolly_id head;
	int rc;
	CK(prolly_branch_head(&head, db, BRANCH), "reading main");
	if (prolly_id_equal(&head, &fx->base_commit))
		goto out;
	CK(prolly_txn_begin(&txn, db), "prolly_txn_begin");
	CK(prolly_txn_move_branch(txn, BRANCH, &head, &fx->base_commit), "prolly_txn_move_branch");
	CK(prolly_txn_commit(txn, NULL, 0), "moving main back to the base commit");
out:
	prolly_txn_free(txn);
	return rc;
}

static int sync_push(cell *c)
{
	fixture *fx = c->fx;
	editset e;
	prolly_txn *txn = NULL;
	prolly_id parent, root, commit;
	prolly_sync_stats ss = PROLLY_SYNC_STATS_INIT;
	push_check pc;
	uint64_t count;
	int rc;
	memset(&e, 0, sizeof(e));
	memset(&pc, 0, sizeof(pc));
	if ((rc = local_clone(c)) != 0)
		goto out;
	c->pattern = SCALE_PAT_RANDOM; /* the random pattern's keys, a stream of their own */
	rc = sc_editset_make(&e, c, 2);
	c->pattern = -1;
	if (rc != 0)
		goto out;
	if (e.n == 0) {
		rc = sc_fail(c, PROLLY_EINVAL, "no edits to push (--changes 0?)");
		goto out;
	}
	CK(reset_main(c, fx->local), "resetting the local main");
	CK(reset_main(c, fx->db), "resetting the run's store's main");
	parent = fx->base_commit;
	CK(prolly_txn_begin(&txn, fx->local), "prolly_txn_begin");
	CK(prolly_edit_tree(&root, txn, &fx->base, e.edits, e.n), "prolly_edit_tree");
	CK(prolly_commit_create(&commit, txn, &root, &parent, 1, 0, "random updates"),
	   "prolly_commit_create");
	CK(prolly_txn_move_branch(txn, BRANCH, &parent, &commit), "prolly_txn_move_branch");
	CK(prolly_txn_commit(txn, NULL, 0), "committing the local commit");
	prolly_txn_free(txn);
	txn = NULL;
	prolly_db_cache_clear(fx->local);
	prolly_db_cache_clear(fx->db);
	sc_measure_begin(c);
	CK(prolly_push(&ss, fx->local, fx->db, "origin", BRANCH, 0), "prolly_push");
	sc_measure_end(c);
	c->ops = e.n;
	sync_counters(c, &ss, "");
	CK(check_head(c, fx->db, &commit, &root, "push"), "checking the pushed branch");
	if (ss.commits_copied != 1 || ss.nodes_copied == 0)
		sc_invalid(c, "push: %" PRIu64 " commits and %" PRIu64 " nodes copied", ss.commits_copied,
		           ss.nodes_copied);
	prolly_db_cache_clear(fx->db);
	CK(prolly_diff(fx->db, &fx->base, &root, NULL, push_diff_cb, &pc), "prolly_diff (pushed)");
	if (pc.seen != e.n || pc.wrong)
		sc_invalid(c,
		           "push: the pushed tree differs from the base in %zu records (%zu wrong), "
		           "expected %zu",
		           pc.seen, pc.wrong, e.n);
	CK(prolly_count(&count, fx->db, &root), "prolly_count");
	if (count != fx->n)
		sc_invalid(c, "push: the pushed tree has %" PRIu64 " records", count);
out:
	prolly_txn_free(txn);
	sc_editset_free(&e);
	return rc;
}

int sc_cell_sync(cell *c)
{
	return c->part == 0 ? sync_clone(c) : sync_push(c);
}

/* ---- proofs ---------------------------------------------------------------------------------- */

/* The proofs of one run, end to end in one buffer. */
typedef struct proofs {
	int range;       /* range proofs (else key proofs) */
	size_t n, len;   /* proofs, records per proof */
	uint64_t *first; /* the first record of each */
	size_t *off;     /* proof i is bytes.p[off[i] .. off[i + 1]) */
	bench_buf bytes;
} proofs;

static void proofs_free(proofs *p)
{
	free(p->first);
	free(p->off);
	bench_buf_free(&p->bytes);
	memset(p, 0, sizeof(*p));
}

static const void *proof_at(const proofs *p, size_t i, size_t *size)
{
	*size = p->off[i + 1] - p->off[i];
	return p->bytes.p + p->off[i];
}

/* The key (range: the first key) of proof i in lo and key; a range's end in hi and to, which is
 * returned (NULL for a key proof). */
static const prolly_slice *proof_keys(const proofs *p, size_t i, unsigned char *lo,
                                      unsigned char *hi, prolly_slice *key, prolly_slice *to)
{
	sc_make_key(lo, p->first[i] * SLOT_STEP);
	key->data = lo;
	key->size = KEY_LEN;
	if (!p->range)
		return NULL;
	sc_make_key(hi, (p->first[i] + p->len) * SLOT_STEP);
	to->data = hi;
	to->size = KEY_LEN;
	return to;
}

/* Makes the proofs of this run (range: of SCALE_PROOF_RANGE records each), timed when timed: one
 * cache clear, then the proofs one after another, each a latency sample. */
static int make_proofs(cell *c, proofs *p, int range, int timed)
{
	fixture *fx = c->fx;
	prolly_buf pb = PROLLY_BUF_INIT;
	unsigned char lo[KEY_LEN], hi[KEY_LEN];
	size_t k = (size_t)(fx->cfg->reads < SCALE_PROOF_KEYS ? fx->cfg->reads : SCALE_PROOF_KEYS);
	int rc = 0;
	memset(p, 0, sizeof(*p));
	p->range = range;
	k = k ? k : 1;
	p->n = range ? (k / 10 ? k / 10 : 1) : k;
	p->len = range ? (size_t)(fx->n < SCALE_PROOF_RANGE ? fx->n : SCALE_PROOF_RANGE) : 1;
	p->first = malloc(p->n * sizeof(*p->first));
	p->off = malloc((p->n + 1) * sizeof(*p->off));
	if (!p->first || !p->off) {
		rc = sc_fail(c, PROLLY_ENOMEM, "allocating the proofs");
		goto out;
	}
	bench_rng g;
	sc_cell_rng(&g, c, range ? 0x7072616e6765ull : 0x706b657973ull); /* "prange", "pkeys" */
	for (size_t i = 0; i < p->n; i++)
		p->first[i] = bench_rng_below(&g, fx->n - p->len + 1);
	prolly_db_cache_clear(fx->db);
	if (timed)
		sc_measure_begin(c);
	for (size_t i = 0; i < p->n; i++) {
		prolly_slice key, to;
		const prolly_slice *end = proof_keys(p, i, lo, hi, &key, &to);
		uint64_t t = sc_lat_start(c);
		CK(prolly_prove(&pb, fx->db, &fx->base, &key, end), "prolly_prove");
		sc_lat_stop(c, t);
		if (timed)
			bench_sw_pause(&c->sw);
		p->off[i] = p->bytes.n;
		if (bench_buf_put(&p->bytes, pb.ptr, pb.size) != 0) {
			rc = sc_fail(c, PROLLY_ENOMEM, "keeping the proofs");
			goto out;
		}
		if (timed)
			bench_sw_resume(&c->sw);
	}
	p->off[p->n] = p->bytes.n;
	if (timed)
		sc_measure_end(c);
out:
	prolly_buf_dispose(&pb);
	return rc;
}

/* What a verification showed, against the records expected. */
typedef struct shown {
	const fixture *fx;
	uint64_t next; /* the record expected next */
	size_t seen, wrong;
} shown;

static int on_count(void *payload, const prolly_slice *key, const prolly_slice *value)
{
	(void)key, (void)value;
	((shown *)payload)->seen++;
	return 0;
}

static int on_check(void *payload, const prolly_slice *key, const prolly_slice *value)
{
	shown *s = payload;
	unsigned char k[KEY_LEN], v[SCALE_MAX_VALUE_BYTES > 4096 ? 4096 : SCALE_MAX_VALUE_BYTES];
	size_t vlen = s->fx->vlen;
	uint64_t slot = s->next * SLOT_STEP;
	s->seen++;
	s->next++;
	sc_make_key(k, slot);
	if (key->size != KEY_LEN || memcmp(key->data, k, KEY_LEN) != 0 || !value ||
	    value->size != vlen) {
		s->wrong++;
		return 0;
	}
	unsigned char *big = vlen > sizeof(v) ? malloc(vlen) : v;
	if (!big)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory checking a proof");
	sc_make_value(big, vlen, s->fx->cfg->seed, slot, 0);
	if (memcmp(value->data, big, vlen) != 0)
		s->wrong++;
	if (big != v)
		free(big);
	return 0;
}

/* The offset of the last needle in hay, or -1. A proof's value bytes: the proof's header holds
 * keys only, and the leaf holding the value comes after it, so the last match is in a node even
 * for values of a byte or two. */
static long find_last(const unsigned char *hay, size_t n, const unsigned char *needle, size_t k)
{
	for (size_t i = n >= k ? n - k + 1 : 0; k && i-- > 0;)
		if (hay[i] == needle[0] && memcmp(hay + i, needle, k) == 0)
			return (long)i;
	return -1;
}

static int size_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

/* Untimed: every proof verifies and shows exactly its records; a changed value byte and another
 * tree id fail. Sizes in the note. */
static int check_proofs(cell *c, const proofs *p)
{
	fixture *fx = c->fx;
	size_t *sizes = malloc(p->n * sizeof(*sizes)), size;
	unsigned char *bad = NULL;
	int rc = 0;
	if (!sizes) {
		rc = sc_fail(c, PROLLY_ENOMEM, "allocating the proof sizes");
		goto out;
	}
	for (size_t i = 0; i < p->n; i++) {
		const void *pr = proof_at(p, i, &size);
		shown s = {fx, p->first[i], 0, 0};
		prolly_proof_claim claim;
		unsigned char lo[KEY_LEN];
		sc_make_key(lo, p->first[i] * SLOT_STEP);
		sizes[i] = size;
		CK(prolly_proof_verify(&claim, &fx->base, pr, size, on_check, &s), "prolly_proof_verify");
		if (s.seen != p->len || s.wrong || claim.range != p->range || claim.key.size != KEY_LEN ||
		    memcmp(claim.key.data, lo, KEY_LEN) != 0) {
			sc_invalid(c, "proof %zu shows %zu records (%zu wrong), expected %zu", i, s.seen,
			           s.wrong, p->len);
			break;
		}
	}
	/* Tampered: the first record's value changed in proof 0; proof 0 against another tree. */
	const unsigned char *pr0 = proof_at(p, 0, &size);
	if (!(bad = malloc(size + 1))) {
		rc = sc_fail(c, PROLLY_ENOMEM, "allocating a tampered proof");
		goto out;
	}
	memcpy(bad, pr0, size);
	unsigned char *v = malloc(fx->vlen);
	if (!v) {
		rc = sc_fail(c, PROLLY_ENOMEM, "allocating a value");
		goto out;
	}
	sc_make_value(v, fx->vlen, fx->cfg->seed, p->first[0] * SLOT_STEP, 0);
	long at = find_last(bad, size, v, fx->vlen);
	free(v);
	if (at < 0) {
		sc_invalid(c, "the first record's value is not in its proof");
	} else {
		bad[at + (long)fx->vlen - 1] ^= 1;
		if (prolly_proof_verify(NULL, &fx->base, bad, size, NULL, NULL) != PROLLY_ECORRUPT)
			sc_invalid(c, "a proof with a value changed did not fail");
	}
	prolly_id other = fx->base;
	other.bytes[0] ^= 1;
	if (prolly_proof_verify(NULL, &other, pr0, size, NULL, NULL) == 0)
		sc_invalid(c, "a proof verified against another tree");
	qsort(sizes, p->n, sizeof(*sizes), size_cmp);
	snprintf(c->cur.info, sizeof(c->cur.info),
	         "proof bytes: median %zu, min %zu, max %zu (%zu proofs of %zu record%s)",
	         sizes[p->n / 2], sizes[0], sizes[p->n - 1], p->n, p->len, p->len == 1 ? "" : "s");
out:
	free(sizes);
	free(bad);
	return rc;
}

int sc_cell_proof(cell *c)
{
	fixture *fx = c->fx;
	int range = c->part >= 2, verify = c->part % 2;
	proofs p;
	int rc;
	CK(make_proofs(c, &p, range, !verify), "making the proofs");
	if (verify) {
		size_t wrong = 0, size;
		sc_measure_begin(c);
		for (size_t i = 0; i < p.n; i++) {
			const void *pr = proof_at(&p, i, &size);
			shown s = {fx, p.first[i], 0, 0};
			uint64_t t = sc_lat_start(c);
			CK(prolly_proof_verify(NULL, &fx->base, pr, size, on_count, &s), "prolly_proof_verify");
			sc_lat_stop(c, t);
			wrong += s.seen != p.len;
		}
		sc_measure_end(c);
		if (wrong)
			sc_invalid(c, "%zu of %zu proofs showed the wrong number of records", wrong, p.n);
	}
	c->ops = p.n;
	CK(check_proofs(c, &p), "checking the proofs");
out:
	proofs_free(&p);
	return rc;
}
