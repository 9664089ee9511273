/*
 * test_proof.c - prolly_prove and prolly_proof_verify.
 *
 * Present and absent keys at the first and last positions of every leaf (and just past them),
 * before the first key and after the last; ranges across nodes, empty ranges and the whole tree,
 * each checked against the records a cursor reads; and proofs that must not verify: a value
 * changed, a record dropped from a range, a child id changed, another tree's id, every
 * truncation, and every flipped byte (which either fails or, in the key fields, changes the claim
 * to another true one). And a proof that runs out of memory anywhere leaves out as it was.
 */
#include "internal.h"
#include "lib/model.h"
#include "ptest.h"

#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 20000

static prolly_db *db;
static prolly_id root;

static void key_of(char *out, int i)
{
	snprintf(out, 16, "k%06d", i * 2); /* odd numbers are absent keys */
}

static int build(void)
{
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	char k[16], v[32];
	if (prolly_open(&db, "mem:", NULL) || prolly_txn_begin(&txn, db) || prolly_builder_new(&b, txn))
		return -1;
	for (int i = 0; i < N; i++) {
		key_of(k, i);
		snprintf(v, sizeof(v), "value-%d", i);
		if (prolly_builder_add(b, k, strlen(k), v, strlen(v)))
			return -1;
	}
	int rc = prolly_builder_finish(b, &root) || prolly_txn_commit(txn, NULL, 0);
	prolly_builder_free(b);
	prolly_txn_free(txn);
	return rc ? -1 : 0;
}

/* ---- what a proof shows --------------------------------------------------------------------- */

typedef struct shown {
	int calls, found;
	char value[64];
	prolly_buf keys; /* range: the keys, NUL-separated */
} shown;

static int on_shown(void *payload, const prolly_slice *key, const prolly_slice *value)
{
	shown *s = payload;
	s->calls++;
	if (value) {
		s->found++;
		snprintf(s->value, sizeof(s->value), "%.*s", (int)value->size, (const char *)value->data);
	}
	prolly__buf_put(&s->keys, key->data, key->size);
	prolly__buf_put(&s->keys, "", 1);
	return 0;
}

/* Proves key and checks what the proof shows against prolly_get. */
static void check_key(const char *key)
{
	prolly_buf proof = PROLLY_BUF_INIT, want = PROLLY_BUF_INIT;
	prolly_slice k = {key, strlen(key)};
	shown s;
	prolly_proof_claim claim;
	memset(&s, 0, sizeof(s));
	PT_CHECK_RC(prolly_prove(&proof, db, &root, &k, NULL), 0);
	PT_CHECK_RC(prolly_proof_verify(&claim, &root, proof.ptr, proof.size, on_shown, &s), 0);
	int rc = prolly_get(&want, db, &root, key, strlen(key));
	PT_CHECKF(s.calls == 1 && s.found == (rc == 0), "%s: %d calls, found %d, get %d", key, s.calls,
	          s.found, rc);
	if (rc == 0)
		PT_CHECKF(want.size == strlen(s.value) && memcmp(want.ptr, s.value, want.size) == 0, "%s",
		          key);
	PT_CHECK(!claim.range && claim.key.size == k.size && !memcmp(claim.key.data, key, k.size));
	prolly_buf_dispose(&proof);
	prolly_buf_dispose(&want);
	prolly_buf_dispose(&s.keys);
}

/* The last key of every leaf, in order (the internal nodes of level 1 hold them). */
static int leaf_last_keys(char (*out)[16], int cap)
{
	prolly__nodeset ws;
	pnode *nd;
	int n = 0;
	prolly__nodeset_init(&ws);
	if (prolly__load_root(db, &ws, &root, &nd))
		return -1;
	prolly_id level[4096];
	size_t nl = 1;
	level[0] = root;
	while (nl) {
		pnode *nodes[4096];
		if (prolly__load(db, &ws, level, nl, nodes))
			return -1;
		size_t nn = 0;
		prolly_id next[4096];
		for (size_t i = 0; i < nl; i++) {
			if (nodes[i]->level == 0) {
				prolly_slice k = prolly__node_last_key(nodes[i]);
				if (n < cap)
					snprintf(out[n++], 16, "%.*s", (int)k.size, (const char *)k.data);
				continue;
			}
			for (uint32_t j = 0; j < nodes[i]->n && nn < 4096; j++)
				next[nn++] = *prolly__node_child(nodes[i], j);
		}
		memcpy(level, next, nn * sizeof(*next));
		nl = nn;
	}
	prolly__nodeset_dispose(&ws);
	return n;
}

PT_TEST(proof_keys_at_leaf_edges)
{
	static char last[512][16];
	int n = leaf_last_keys(last, 512);
	PT_REQUIRE(n > 4);
	check_key("k000000"); /* the first key */
	check_key("a");       /* before it */
	check_key("");        /* the empty key */
	check_key("z");       /* after the last */
	char k[16];
	key_of(k, N - 1);
	check_key(k); /* the last key */
	for (int i = 0; i < n; i++) {
		int at = atoi(last[i] + 1);
		check_key(last[i]);                      /* a leaf's last key */
		snprintf(k, sizeof(k), "k%06d", at + 1); /* absent, between this leaf and the next */
		check_key(k);
		snprintf(k, sizeof(k), "k%06d", at + 2); /* the next leaf's first key */
		check_key(k);
		snprintf(k, sizeof(k), "k%06d", at - 1); /* absent, inside the leaf */
		check_key(k);
	}
}

/* Proves [from, to) and checks the records against a cursor. */
static void check_range(const char *from, const char *to)
{
	prolly_buf proof = PROLLY_BUF_INIT, got = PROLLY_BUF_INIT;
	prolly_slice f = {from, strlen(from)}, t = {to, strlen(to)};
	prolly_range r = PROLLY_RANGE_INIT;
	prolly_cursor *cur = NULL;
	prolly_slice ck, cv;
	shown s;
	prolly_proof_claim claim;
	memset(&s, 0, sizeof(s));
	r.lo = f;
	r.has_lo = 1;
	r.hi = t;
	r.has_hi = 1;
	PT_CHECK_RC(prolly_prove(&proof, db, &root, &f, &t), 0);
	PT_CHECK_RC(prolly_proof_verify(&claim, &root, proof.ptr, proof.size, on_shown, &s), 0);
	PT_CHECK(claim.range == 1);
	PT_REQUIRE(prolly_cursor_open(&cur, db, &root, &r) == 0);
	int n = 0;
	while (prolly_cursor_next(cur, &ck, &cv) == 0) {
		prolly__buf_put(&got, ck.data, ck.size);
		prolly__buf_put(&got, "", 1);
		n++;
	}
	prolly_cursor_free(cur);
	PT_CHECKF(s.calls == n && s.found == n && got.size == s.keys.size &&
	              (!got.size || memcmp(got.ptr, s.keys.ptr, got.size) == 0),
	          "[%s, %s): %d records, the proof shows %d", from, to, n, s.calls);
	prolly_buf_dispose(&proof);
	prolly_buf_dispose(&got);
	prolly_buf_dispose(&s.keys);
}

PT_TEST(proof_ranges)
{
	check_range("k000100", "k000300");  /* inside a leaf or two */
	check_range("k001001", "k019999");  /* across many nodes */
	check_range("", "zzz");             /* the whole tree */
	check_range("k000101", "k000101");  /* empty: from == to */
	check_range("k000101", "k000102");  /* empty: between two keys */
	check_range("zz", "zzz");           /* empty: after the last */
	check_range("a", "b");              /* empty: before the first */
	check_range("k039998", "k0399999"); /* the last record only */
}

/* ---- proofs that must not verify --------------------------------------------------------- */

static int verifies(const prolly_id *tree, const prolly_buf *p)
{
	return prolly_proof_verify(NULL, tree, p->ptr, p->size, NULL, NULL) == 0;
}

/* The offset of the first occurrence of needle in p, or -1. */
static long find(const prolly_buf *p, const char *needle)
{
	size_t n = strlen(needle);
	for (size_t i = 0; i + n <= p->size; i++)
		if (memcmp(p->ptr + i, needle, n) == 0)
			return (long)i;
	return -1;
}

PT_TEST(proof_tampered)
{
	prolly_buf p = PROLLY_BUF_INIT, q = PROLLY_BUF_INIT;
	prolly_slice k = {"k000200", 7};
	PT_REQUIRE(prolly_prove(&p, db, &root, &k, NULL) == 0 && verifies(&root, &p));
	/* a value changed */
	long at = find(&p, "value-100");
	PT_REQUIRE(at > 0);
	prolly__buf_set(&q, p.ptr, p.size);
	q.ptr[at + 6] = '9';
	PT_CHECK(!verifies(&root, &q));
	/* another tree's id */
	prolly_id other = root;
	other.bytes[0] ^= 1;
	PT_CHECK(!verifies(&other, &p));
	/* a sibling's id changed in the root (the first node, after the header and the key): the
	 * root no longer hashes to the tree id */
	prolly__nodeset ws;
	pnode *rn;
	prolly__nodeset_init(&ws);
	PT_REQUIRE(prolly__load_root(db, &ws, &root, &rn) == 0 && rn->level > 0 && rn->n > 1);
	size_t node0 = 8 + 4 + 7 + 4 + 4 + 4; /* header, key, end key, count, first size */
	size_t sib = (size_t)((const unsigned char *)prolly__node_child(rn, rn->n - 1) - rn->bytes);
	prolly__buf_set(&q, p.ptr, p.size);
	PT_REQUIRE(memcmp(q.ptr + node0, rn->bytes, rn->size) == 0);
	q.ptr[node0 + sib] ^= 0x10;
	prolly__nodeset_dispose(&ws);
	PT_CHECK(!verifies(&root, &q));
	/* every truncation */
	for (size_t n = 0; n < p.size; n++) {
		prolly_buf t = {p.ptr, n, n};
		PT_CHECKF(!verifies(&root, &t), "truncated to %zu bytes", n);
	}
	/* one byte more */
	prolly__buf_set(&q, p.ptr, p.size);
	prolly__buf_put(&q, "", 1);
	PT_CHECK(!verifies(&root, &q));
	/* every flipped byte fails, or proves another (true) claim about another key */
	for (size_t i = 0; i < p.size; i++) {
		prolly__buf_set(&q, p.ptr, p.size);
		q.ptr[i] ^= 0x01;
		prolly_proof_claim c;
		shown s;
		memset(&s, 0, sizeof(s));
		if (prolly_proof_verify(&c, &root, q.ptr, q.size, on_shown, &s) == 0) {
			PT_CHECKF(i >= 12 && i < 19, "flip at %zu verifies", i);
			prolly_buf want = PROLLY_BUF_INIT;
			int rc = prolly_get(&want, db, &root, c.key.data, c.key.size);
			PT_CHECKF(s.found == (rc == 0), "flip at %zu: a false claim", i);
			prolly_buf_dispose(&want);
		}
		prolly_buf_dispose(&s.keys);
	}
	/* a record dropped from a range: its leaf no longer hashes to the id its parent names */
	prolly_slice f = {"k000100", 7}, t = {"k000200", 7};
	PT_REQUIRE(prolly_prove(&p, db, &root, &f, &t) == 0 && verifies(&root, &p));
	at = find(&p, "k000150");
	PT_REQUIRE(at > 0);
	prolly__buf_set(&q, p.ptr, p.size);
	memcpy(q.ptr + at, "k000149", 7); /* an absent key in its place */
	PT_CHECK(!verifies(&root, &q));
	/* a leaf left out of the range */
	prolly_slice f2 = {"k001000", 7}, t2 = {"k019000", 7};
	PT_REQUIRE(prolly_prove(&p, db, &root, &f2, &t2) == 0 && verifies(&root, &p));
	size_t last = p.size; /* drop the last node: find its start by walking the sizes */
	uint32_t alen = prolly__rd32(p.ptr + 8), blen = prolly__rd32(p.ptr + 12 + alen);
	size_t off = 16 + alen + blen, count = prolly__rd32(p.ptr + off);
	off += 4;
	for (size_t i = 0; i + 1 < count; i++)
		off += 4 + prolly__rd32(p.ptr + off);
	prolly__buf_set(&q, p.ptr, off);
	prolly__wr32(q.ptr + 16 + alen + blen, (uint32_t)(count - 1));
	PT_CHECK(last > off && !verifies(&root, &q));
	/* malformed */
	PT_CHECK_RC(prolly_proof_verify(NULL, &root, "PRLQ", 4, NULL, NULL), PROLLY_ECORRUPT);
	PT_CHECK_RC(prolly_proof_verify(NULL, NULL, p.ptr, p.size, NULL, NULL), PROLLY_EINVAL);
	prolly__buf_set(&q, p.ptr, p.size);
	q.ptr[4] = 9;
	PT_CHECK_RC(prolly_proof_verify(NULL, &root, q.ptr, q.size, NULL, NULL), PROLLY_EVERSION);
	prolly_buf_dispose(&p);
	prolly_buf_dispose(&q);
}

PT_TEST(proof_empty_tree_and_errors)
{
	prolly_id empty;
	prolly_buf p = PROLLY_BUF_INIT;
	prolly_slice k = {"x", 1}, a = {"b", 1}, z = {"a", 1};
	shown s;
	memset(&s, 0, sizeof(s));
	prolly_id_empty_tree(&empty);
	PT_CHECK_RC(prolly_prove(&p, db, &empty, &k, NULL), 0);
	PT_CHECK_RC(prolly_proof_verify(NULL, &empty, p.ptr, p.size, on_shown, &s), 0);
	PT_CHECK(s.calls == 1 && s.found == 0);
	PT_CHECK(!verifies(&root, &p));
	PT_CHECK_RC(prolly_prove(&p, db, &root, &a, &z), PROLLY_EINVAL);
	prolly_id bogus;
	memset(bogus.bytes, 3, sizeof(bogus.bytes));
	PT_CHECK_RC(prolly_prove(&p, db, &bogus, &k, NULL), PROLLY_ENOTFOUND);
	prolly_buf_dispose(&p);
	prolly_buf_dispose(&s.keys);
}

/* ---- out of memory: out untouched ----------------------------------------------------------- */

/* In a child under an address-space limit of what it maps now plus headroom: a proof of the
 * whole tree into a buffer that holds 9 bytes. Exits 0 when it succeeded and verifies, 1 when it
 * failed with PROLLY_ENOMEM and left the buffer as it was, 3 for anything else. */
static void limited_prove(size_t headroom)
{
	static const char was[9] = "untouched";
	prolly_buf p = PROLLY_BUF_INIT;
	prolly_slice a = {"", 0}, z = {"z", 1};
	if (prolly__buf_set(&p, was, sizeof(was)))
		_exit(3);
	unsigned char *ptr = p.ptr;
	struct rlimit rl;
	getrlimit(RLIMIT_AS, &rl);
	rl.rlim_cur = tm_vm_size() + headroom;
	if (setrlimit(RLIMIT_AS, &rl))
		_exit(3);
	int rc = prolly_prove(&p, db, &root, &a, &z);
	if (rc == 0)
		_exit(prolly_proof_verify(NULL, &root, p.ptr, p.size, NULL, NULL) ? 3 : 0);
	if (rc != PROLLY_ENOMEM) {
		fprintf(stderr, "  # headroom %zu: %d %s\n", headroom, rc, prolly_last_error());
		_exit(3);
	}
	if (p.ptr != ptr || p.size != sizeof(was) || memcmp(p.ptr, was, sizeof(was)) != 0) {
		fprintf(stderr, "  # headroom %zu: PROLLY_ENOMEM left out with %zu bytes\n", headroom,
		        p.size);
		_exit(3);
	}
	_exit(1);
}

/* The header promises outputs untouched on failure: a proof that fails for memory at any point
 * (loading, gathering the nodes, or writing out) must not leave out half-written. The headroom
 * grows in 64 KiB steps from where even the first allocation fails to where the whole proof fits
 * (some 1.2 MB of proof), each step in a child. */
PT_TEST(proof_out_of_memory_leaves_out_untouched)
{
	int ok = 0, nomem = 0, bad = 0;
#if defined(__SANITIZE_ADDRESS__)
	/* AddressSanitizer's malloc reports a failed allocation and stops the process rather than
	 * return NULL, so PROLLY_ENOMEM cannot be seen there. */
	printf("# skipped: built with AddressSanitizer\n");
	return;
#endif
	/* In a process of its own: the memory the tests before this one freed stays in the heap,
	 * and the proof would take it without meeting the limit. */
	if (!getenv("PROOF_OOM_ALONE")) {
		fflush(stdout);
		pid_t pid = fork();
		PT_REQUIRE(pid >= 0);
		if (pid == 0) {
			setenv("PROOF_OOM_ALONE", "1", 1);
			dup2(STDERR_FILENO, STDOUT_FILENO); /* its report is not this run's TAP */
			execl("/proc/self/exe", "test_proof", "proof_out_of_memory_leaves_out_untouched",
			      (char *)NULL);
			_exit(3);
		}
		int status = 0;
		PT_REQUIRE(waitpid(pid, &status, 0) == pid);
		PT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		return;
	}
	for (size_t headroom = 0; headroom <= ((size_t)16 << 20) && !ok; headroom += 64 << 10) {
		fflush(stdout);
		fflush(stderr);
		pid_t pid = fork();
		PT_REQUIRE(pid >= 0);
		if (pid == 0)
			limited_prove(headroom);
		int status = 0;
		PT_REQUIRE(waitpid(pid, &status, 0) == pid);
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : 3;
		ok += code == 0;
		nomem += code == 1;
		bad += code == 3;
	}
	printf("# %d steps out of memory, %d bad, then the proof fit: %d\n", nomem, bad, ok);
	PT_CHECK(bad == 0);
	PT_CHECK(nomem > 0 && ok == 1);
}

int main(int argc, char **argv)
{
	if (build()) {
		printf("not ok 1 - build the tree: %s\n", prolly_last_error());
		return 1;
	}
	int rc = pt_run(argc, argv);
	prolly_close(db);
	return rc;
}
