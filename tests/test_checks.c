/*
 * test_checks.c - checks that no other test reached, each shown to fail with the check removed:
 *
 *   - the one-round-trip head read (src/head.c, stores with get_ref_objects): a commit or a root
 *     node that does not hash to its id is PROLLY_ECORRUPT from prolly_branch_commit and from
 *     prolly_commit_edits, whatever byte is damaged, and never enters the cache (reads after the
 *     store heals give the true tree). The tap store of tests/lib/model.c has no get_ref_objects,
 *     so a small wrapping store here damages what get_ref_objects returns;
 *   - N5 of src/node.c: a node holding a key longer than PROLLY_MAX_KEY or a value longer than
 *     PROLLY_MAX_VALUE, correctly hashed so that nothing else rejects it, is PROLLY_ECORRUPT
 *     from the decoder and through the engine; exactly at the limits it is accepted;
 *   - the node header fields (magic, version, flags, level, item count), the first entries of the
 *     offset tables, truncations below the header, and the commit limits (at most 64 parents, a
 *     message of at most 65536 bytes, a parent count the bytes can hold): each changed alone in
 *     bytes that hash to their id, so that only its own check can refuse them. The mutation
 *     tests of test_corrupt accept any decode that is safe to use, so they did not require these
 *     refusals.
 *
 * Re-run one test: build/tests/test_checks NAME.
 */
#include "internal.h"
#include "lib/model.h"
#include "ptest.h"

#include <stdlib.h>
#include <string.h>

/* ---- a store that damages what get_ref_objects returns ------------------------------------- */

typedef enum bend_mode {
	BEND_PASS = 0,
	BEND_FLIP,
	BEND_TRUNCATE,
	BEND_EXTEND,
	BEND_REPLACE
} bend_mode;

typedef struct bend {
	tp_store tp; /* must be first: passes everything through but get_ref_objects */
	bend_mode mode;
	size_t index;      /* which object of get_ref_objects: 0 the commit, 1 the root node */
	size_t pos;        /* FLIP: the byte; TRUNCATE: the length kept; EXTEND: zero bytes added */
	const void *other; /* REPLACE: these bytes instead */
	size_t other_size;
	uint64_t hits; /* objects damaged */
	uint64_t ref_object_calls;
} bend;

typedef struct bend_call {
	bend *b;
	prolly_store_found_fn found;
	void *payload;
} bend_call;

static int bend_found(void *payload, size_t index, const void *data, size_t size)
{
	bend_call *c = payload;
	bend *b = c->b;
	if (b->mode == BEND_PASS || index != b->index)
		return c->found(c->payload, index, data, size);
	unsigned char *copy = malloc(size + b->pos + 1);
	size_t n = size;
	const void *give = copy;
	memcpy(copy, data, size);
	switch (b->mode) {
	case BEND_FLIP: copy[b->pos % size] ^= 0x01; break;
	case BEND_TRUNCATE: n = b->pos < size ? b->pos : size; break;
	case BEND_EXTEND:
		memset(copy + size, 0, b->pos);
		n = size + b->pos;
		break;
	default: give = b->other; n = b->other_size;
	}
	b->hits++;
	int rc = c->found(c->payload, index, give, n);
	free(copy);
	return rc;
}

static int bend_get_ref_objects(prolly_store *st, const char *name, size_t follow, prolly_id *out,
                                uint64_t *epoch, prolly_store_found_fn found, void *payload)
{
	bend *b = (bend *)st;
	bend_call c = {b, found, payload};
	b->ref_object_calls++;
	return tp_inner(st)->get_ref_objects(tp_inner(st), name, follow, out, epoch, bend_found, &c);
}

/* A handle on a memory store seen through a bend (returned in *bp), with the default cache. */
static prolly_db *bend_open(bend **bp)
{
	prolly_store *mem = NULL;
	prolly_db *db = NULL;
	bend *b;
	if (prolly_store_mem_new(&mem) != 0 || !(b = tp_new(sizeof(*b), mem)))
		return NULL;
	b->tp.base.version = 2; /* get_ref_objects, no version-3 members */
	b->tp.base.kind = "bend";
	b->tp.base.get_ref_objects = bend_get_ref_objects;
	prolly_options o;
	prolly_options_init(&o, PROLLY_OPTIONS_VERSION);
	if (prolly_db_new(&db, &b->tp.base, &o) != 0)
		return NULL;
	*bp = b;
	return db;
}

/* The stored bytes of id (malloc'd into *out), read from the inner store. */
static int got_bytes(void *payload, size_t index, const void *data, size_t size)
{
	prolly_buf *buf = payload;
	(void)index;
	return prolly__buf_set(buf, data, size);
}

static int stored_bytes(prolly_buf *out, bend *b, const prolly_id *id)
{
	out->size = 0;
	int rc = b->tp.inner->get_nodes(b->tp.inner, id, 1, got_bytes, out);
	return rc ? rc : out->size ? 0 : PROLLY_ENOTFOUND;
}

/* n records "key%05d" -> "value %d of the tree" on branch, into m too. */
static int commit_records(prolly_id *out, prolly_db *db, const char *branch, tm_model *m, int n)
{
	prolly_edit *e = calloc((size_t)n, sizeof(*e));
	char(*k)[16] = calloc((size_t)n, sizeof(*k));
	char(*v)[32] = calloc((size_t)n, sizeof(*v));
	for (int i = 0; i < n; i++) {
		snprintf(k[i], sizeof(k[i]), "key%05d", i);
		snprintf(v[i], sizeof(v[i]), "value %d of the tree", i);
		e[i].op = PROLLY_PUT;
		e[i].key.data = k[i];
		e[i].key.size = strlen(k[i]);
		e[i].value.data = v[i];
		e[i].value.size = strlen(v[i]);
	}
	tm_model_apply(m, e, (size_t)n);
	int rc = prolly_commit_edits(out, db, branch, e, (size_t)n, "records");
	free(e);
	free(k);
	free(v);
	return rc;
}

/* With the bend damaging something, both head reads must fail with PROLLY_ECORRUPT naming
 * `named`, set nothing and move nothing. Returns 0 if so. */
static int head_reads_refuse(prolly_db *db, bend *b, const char *branch, const prolly_id *head,
                             const prolly_id *named, const char *what)
{
	int bad = 0;
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, named);
	uint64_t hits = b->hits;
	prolly_commit *c = (prolly_commit *)b; /* must come back NULL */
	int rc = prolly_branch_commit(&c, db, branch);
	if (rc != PROLLY_ECORRUPT || c != NULL || !strstr(prolly_last_error(), hex)) {
		fprintf(stderr, "  %s: prolly_branch_commit gave %d (%s)%s\n", what, rc,
		        prolly_last_error(), c ? ", and a commit" : "");
		prolly_commit_free(c == (prolly_commit *)b ? NULL : c);
		bad = 1;
	}
	prolly_edit e = {PROLLY_PUT, {"new", 3}, {"x", 1}};
	prolly_id out;
	rc = prolly_commit_edits(&out, db, branch, &e, 1, "over a damaged head");
	if (rc != PROLLY_ECORRUPT) {
		fprintf(stderr, "  %s: prolly_commit_edits gave %d (%s)\n", what, rc, prolly_last_error());
		bad = 1;
	}
	prolly_id now;
	if (prolly_branch_head(&now, db, branch) != 0 || !prolly_id_equal(&now, head)) {
		fprintf(stderr, "  %s: the branch moved\n", what);
		bad = 1;
	}
	if (b->hits < hits + 2) {
		fprintf(stderr, "  %s: the damaged object was served %llu times, not twice\n", what,
		        (unsigned long long)(b->hits - hits));
		bad = 1;
	}
	return bad ? -1 : 0;
}

/* After healing: the head reads give the true commit, and the tree (through whatever the
 * failed reads may have left in the cache) equals the model. */
static int head_reads_heal(prolly_db *db, bend *b, const char *branch, const prolly_id *head,
                           const tm_model *m, const char *what)
{
	b->mode = BEND_PASS;
	prolly_commit *c = NULL;
	int rc = prolly_branch_commit(&c, db, branch);
	if (rc || !prolly_id_equal(&c->id, head)) {
		fprintf(stderr, "  %s: after healing prolly_branch_commit gave %d (%s)\n", what, rc,
		        prolly_last_error());
		prolly_commit_free(c);
		return -1;
	}
	rc = tm_tree_check(db, &c->tree, m, what);
	prolly_commit_free(c);
	return rc;
}

PT_TEST(head_read_commit_hash_checked)
{
	bend *b = NULL;
	prolly_db *db = bend_open(&b);
	PT_REQUIRE(db);
	tm_model m;
	tm_model_init(&m);
	prolly_id head;
	PT_REQUIRE(commit_records(&head, db, "main", &m, 2000) == 0);
	prolly_buf cb = PROLLY_BUF_INIT, other = PROLLY_BUF_INIT;
	PT_REQUIRE(stored_bytes(&cb, b, &head) == 0);
	uint64_t calls = b->ref_object_calls;
	PT_REQUIRE(head_reads_heal(db, b, "main", &head, &m, "undamaged") == 0);
	PT_REQUIRE(b->ref_object_calls > calls); /* the path under test is taken */

	/* Every byte of the commit flipped: the message, the time and the parent decode as well
	 * as before, so only the hash check can refuse them. */
	b->index = 0;
	int failures = 0;
	for (size_t pos = 0; pos < cb.size && failures < 3; pos++) {
		char what[96];
		snprintf(what, sizeof(what), "commit byte %zu of %zu flipped", pos, cb.size);
		prolly_db_cache_clear(db);
		b->mode = BEND_FLIP;
		b->pos = pos;
		if (head_reads_refuse(db, b, "main", &head, &head, what) ||
		    head_reads_heal(db, b, "main", &head, &m, what))
			failures++;
	}
	PT_CHECK(failures == 0);
	/* Truncated, extended, and another (valid) commit's bytes. */
	prolly_id first;
	tm_model m0;
	tm_model_init(&m0);
	PT_REQUIRE(commit_records(&first, db, "other", &m0, 3) == 0);
	PT_REQUIRE(stored_bytes(&other, b, &first) == 0);
	const struct {
		bend_mode mode;
		size_t pos;
	} more[] = {{BEND_TRUNCATE, 0},
	            {BEND_TRUNCATE, 40},
	            {BEND_TRUNCATE, cb.size - 1},
	            {BEND_EXTEND, 1},
	            {BEND_REPLACE, 0}};
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
		char what[96];
		snprintf(what, sizeof(what), "commit damage %zu", i);
		b->mode = more[i].mode;
		b->pos = more[i].pos;
		b->other = other.ptr;
		b->other_size = other.size;
		PT_CHECK(head_reads_refuse(db, b, "main", &head, &head, what) == 0);
		PT_CHECK(head_reads_heal(db, b, "main", &head, &m, what) == 0);
	}
	prolly_buf_dispose(&cb);
	prolly_buf_dispose(&other);
	tm_model_dispose(&m);
	tm_model_dispose(&m0);
	prolly_close(db);
}

/* The root of a tree of n records: every byte flipped, and other damage. */
static void root_damage(int n)
{
	bend *b = NULL;
	prolly_db *db = bend_open(&b);
	PT_REQUIRE(db);
	tm_model m, m0;
	tm_model_init(&m);
	tm_model_init(&m0);
	prolly_id head, first;
	PT_REQUIRE(commit_records(&head, db, "main", &m, n) == 0);
	prolly_commit *c = NULL;
	PT_REQUIRE(prolly_commit_read(&c, db, &head) == 0);
	prolly_id root = c->tree;
	prolly_commit_free(c);
	prolly_buf rb = PROLLY_BUF_INIT, other = PROLLY_BUF_INIT;
	PT_REQUIRE(stored_bytes(&rb, b, &root) == 0);
	PT_REQUIRE(commit_records(&first, db, "other", &m0, 3) == 0);
	PT_REQUIRE(prolly_commit_read(&c, db, &first) == 0);
	PT_REQUIRE(stored_bytes(&other, b, &c->tree) == 0); /* a valid leaf, not this root */
	prolly_commit_free(c);
	fprintf(stderr, "  # %d records: root of %zu bytes\n", n, rb.size);

	b->index = 1;
	int failures = 0;
	for (size_t pos = 0; pos < rb.size && failures < 3; pos++) {
		char what[96];
		snprintf(what, sizeof(what), "root byte %zu of %zu flipped", pos, rb.size);
		prolly_db_cache_clear(db); /* the root must come from the head read */
		b->mode = BEND_FLIP;
		b->pos = pos;
		if (head_reads_refuse(db, b, "main", &head, &root, what) ||
		    head_reads_heal(db, b, "main", &head, &m, what))
			failures++;
	}
	PT_CHECK(failures == 0);
	const struct {
		bend_mode mode;
		size_t pos;
	} more[] = {
	    {BEND_TRUNCATE, 0}, {BEND_TRUNCATE, rb.size - 1}, {BEND_EXTEND, 4}, {BEND_REPLACE, 0}};
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
		char what[96];
		snprintf(what, sizeof(what), "root damage %zu", i);
		prolly_db_cache_clear(db);
		b->mode = more[i].mode;
		b->pos = more[i].pos;
		b->other = other.ptr;
		b->other_size = other.size;
		PT_CHECK(head_reads_refuse(db, b, "main", &head, &root, what) == 0);
		PT_CHECK(head_reads_heal(db, b, "main", &head, &m, what) == 0);
	}
	prolly_buf_dispose(&rb);
	prolly_buf_dispose(&other);
	tm_model_dispose(&m);
	tm_model_dispose(&m0);
	prolly_close(db);
}

PT_TEST(head_read_root_hash_checked_leaf)
{
	root_damage(20); /* the root is a leaf: a flipped value byte decodes */
}

PT_TEST(head_read_root_hash_checked_internal)
{
	root_damage(2000); /* an internal root: a flipped child id decodes */
}

/* ---- N5: oversized keys and values --------------------------------------------------------- */

static void put32le(unsigned char **p, uint32_t v)
{
	prolly__wr32(*p, v);
	*p += 4;
}

/* A one-record leaf with a klen-byte key and a vlen-byte value, laid out by hand (node.c). */
static unsigned char *leaf1(size_t klen, size_t vlen, size_t *size)
{
	*size = 12 + 8 + 8 + klen + vlen;
	unsigned char *b = malloc(*size), *p = b;
	memcpy(p, "PRLY\x01\x00\x00\x00", 8);
	p += 8;
	put32le(&p, 1);
	put32le(&p, 0);
	put32le(&p, (uint32_t)klen);
	put32le(&p, 0);
	put32le(&p, (uint32_t)vlen);
	memset(p, 'k', klen);
	memset(p + klen, 'v', vlen);
	return b;
}

/* A one-child internal node (level 1) whose separator key has klen bytes. */
static unsigned char *internal1(size_t klen, const prolly_id *child, size_t *size)
{
	*size = 12 + 8 + 40 + klen;
	unsigned char *b = malloc(*size), *p = b;
	memcpy(p, "PRLY\x01\x01\x00\x00", 8);
	p += 8;
	put32le(&p, 1);
	put32le(&p, 0);
	put32le(&p, (uint32_t)klen);
	memcpy(p, child->bytes, PROLLY_ID_SIZE);
	prolly__wr64(p + PROLLY_ID_SIZE, 1);
	memset(p + 40, 'k', klen);
	return b;
}

/* Decodes bytes under their true id (so N7 holds), returns the decoder's code. */
static int decode_hashed(const unsigned char *bytes, size_t size)
{
	prolly_id id;
	pnode *nd = NULL;
	prolly__hash(&id, bytes, size);
	int rc = prolly__node_decode(&nd, &id, bytes, size, 1);
	if (rc == 0)
		prolly__node_unref(nd);
	return rc;
}

/* Writes bytes into db's store under their id; the id in *id. */
static int store_node(prolly_db *db, prolly_id *id, const void *bytes, size_t size)
{
	prolly_store *st = prolly_db_store(db);
	prolly_store_node nd;
	prolly_store_write w;
	prolly__hash(id, bytes, size);
	nd.id = *id;
	nd.data = bytes;
	nd.size = size;
	memset(&w, 0, sizeof(w));
	w.nodes = &nd;
	w.n_nodes = 1;
	return st->write(st, &w);
}

PT_TEST(decode_oversized_key_and_value)
{
	static const struct {
		size_t klen, vlen;
		int want;
	} leaves[] = {
	    {PROLLY_MAX_KEY, 1, 0},
	    {PROLLY_MAX_KEY + 1, 1, PROLLY_ECORRUPT},
	    {1, PROLLY_MAX_VALUE, 0},
	    {1, PROLLY_MAX_VALUE + 1, PROLLY_ECORRUPT},
	    {PROLLY_MAX_KEY, PROLLY_MAX_VALUE, 0},
	    {PROLLY_MAX_KEY + 1000, PROLLY_MAX_VALUE + 1000, PROLLY_ECORRUPT},
	};
	prolly_db *db = tm_open_mem(8 << 20);
	PT_REQUIRE(db);
	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		size_t size;
		unsigned char *b = leaf1(leaves[i].klen, leaves[i].vlen, &size);
		int rc = decode_hashed(b, size);
		PT_CHECKF(rc == leaves[i].want, "leaf with a %zu-byte key and a %zu-byte value: %d (%s)",
		          leaves[i].klen, leaves[i].vlen, rc, prolly_last_error());
		/* Through the engine: a get from that leaf as a root, then as the child of a root. */
		prolly_id leaf, root;
		PT_REQUIRE(store_node(db, &leaf, b, size) == 0);
		size_t isize;
		unsigned char *ib = internal1(leaves[i].klen <= PROLLY_MAX_KEY ? leaves[i].klen : 1, &leaf,
		                              &isize);
		PT_REQUIRE(store_node(db, &root, ib, isize) == 0);
		prolly_buf v = PROLLY_BUF_INIT;
		unsigned char *key = malloc(leaves[i].klen);
		memset(key, 'k', leaves[i].klen);
		prolly_db_cache_clear(db);
		rc = prolly_get(&v, db, &leaf, key, leaves[i].klen);
		PT_CHECKF(rc == leaves[i].want, "get from the leaf (%zu, %zu): %d (%s)", leaves[i].klen,
		          leaves[i].vlen, rc, prolly_last_error());
		if (rc == 0)
			PT_CHECK(v.size == leaves[i].vlen);
		if (leaves[i].klen <= PROLLY_MAX_KEY) { /* the root's key is then the leaf's */
			rc = prolly_get(&v, db, &root, key, leaves[i].klen);
			PT_CHECKF(rc == leaves[i].want, "get through the root (%zu, %zu): %d (%s)",
			          leaves[i].klen, leaves[i].vlen, rc, prolly_last_error());
		}
		prolly_buf_dispose(&v);
		free(key);
		free(ib);
		free(b);
	}
	/* Internal nodes: separator keys at and over the limit. */
	prolly_id child;
	memset(&child, 0x5a, sizeof(child));
	size_t size;
	unsigned char *b = internal1(PROLLY_MAX_KEY, &child, &size);
	PT_CHECK_RC(decode_hashed(b, size), 0);
	free(b);
	b = internal1(PROLLY_MAX_KEY + 1, &child, &size);
	PT_CHECK_RC(decode_hashed(b, size), PROLLY_ECORRUPT);
	PT_CHECK(strstr(prolly_last_error(), "key offsets") != NULL);
	free(b);
	/* Two records, the second one's key oversized while the first is small. */
	{
		size_t k2 = PROLLY_MAX_KEY + 1, sz = 12 + 12 + 12 + 1 + k2 + 2;
		unsigned char *n2 = malloc(sz), *p = n2;
		memcpy(p, "PRLY\x01\x00\x00\x00", 8);
		p += 8;
		put32le(&p, 2);
		put32le(&p, 0);
		put32le(&p, 1);
		put32le(&p, (uint32_t)(1 + k2));
		put32le(&p, 0);
		put32le(&p, 1);
		put32le(&p, 2);
		*p++ = 'a';
		memset(p, 'b', k2);
		p += k2;
		*p++ = 'x';
		*p++ = 'y';
		PT_CHECK((size_t)(p - n2) == sz);
		PT_CHECK_RC(decode_hashed(n2, sz), PROLLY_ECORRUPT);
		free(n2);
	}
	prolly_close(db);
}

/* ---- node header fields and offset tables -------------------------------------------------- */

/* Decodes an exactly sized malloc'd copy (so that ASan sees a read past the end) under the
 * bytes' true id. */
static int decode_exact(const unsigned char *bytes, size_t size)
{
	unsigned char *copy = malloc(size ? size : 1);
	memcpy(copy, bytes, size);
	int rc = decode_hashed(copy, size);
	free(copy);
	return rc;
}

/* A valid 2-record leaf ("ab" -> "x", "cd" -> "yz"), laid out by hand: 12 + 12 + 12 + 4 + 3. */
static size_t leaf2(unsigned char out[64])
{
	unsigned char *p = out;
	memcpy(p, "PRLY\x01\x00\x00\x00", 8);
	p += 8;
	put32le(&p, 2);
	put32le(&p, 0);
	put32le(&p, 2);
	put32le(&p, 4);
	put32le(&p, 0);
	put32le(&p, 1);
	put32le(&p, 3);
	memcpy(p, "abcdxyz", 7);
	return (size_t)(p + 7 - out);
}

PT_TEST(decode_header_fields_exact)
{
	unsigned char b[64], m[64];
	size_t n = leaf2(b);
	PT_REQUIRE(n == 43);
	PT_CHECK_RC(decode_exact(b, n), 0);
	/* Each field changed alone, the bytes hashed again: only that field's check can refuse. */
	static const struct {
		size_t pos;
		unsigned char val;
		const char *what;
	} cases[] = {
	    {3, 'Z', "magic PRLZ"},    {3, 'C', "magic PRLC (a commit's)"},
	    {4, 0, "version 0"},       {6, 1, "flags byte 6"},
	    {7, 0x80, "flags byte 7"}, {5, 64, "level 64"},
	    {12, 1, "koff[0] = 1"},    {24, 1, "voff[0] = 1"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(m, b, n);
		m[cases[i].pos] = cases[i].val;
		int rc = decode_exact(m, n);
		PT_CHECKF(rc == PROLLY_ECORRUPT, "%s: %d (%s)", cases[i].what, rc, prolly_last_error());
	}
	/* A newer version is PROLLY_EVERSION, not corrupt. */
	memcpy(m, b, n);
	m[4] = 2;
	PT_CHECK_RC(decode_exact(m, n), PROLLY_EVERSION);
	/* An item count the bytes cannot hold. */
	const uint32_t counts[] = {3, 4, 1000, 0x3fffffff, 0x40000000, 0xffffffff};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		memcpy(m, b, n);
		prolly__wr32(m + 8, counts[i]);
		PT_CHECKF(decode_exact(m, n) == PROLLY_ECORRUPT, "n = %u", counts[i]);
	}
	/* Every truncation, exactly sized, including those shorter than the header. */
	for (size_t len = 0; len < n; len++)
		PT_CHECKF(decode_exact(b, len) == PROLLY_ECORRUPT, "truncated to %zu bytes", len);
	/* The empty leaf and its truncations. */
	unsigned char e[20] = "PRLY\x01\x00\x00\x00";
	memset(e + 8, 0, 12);
	PT_CHECK_RC(decode_exact(e, 20), 0);
	for (size_t len = 0; len < 20; len++)
		PT_CHECKF(decode_exact(e, len) == PROLLY_ECORRUPT, "empty leaf truncated to %zu", len);
}

/* ---- commit limits ------------------------------------------------------------------------- */

/* A commit laid out by hand (src/commit.c): np parents 1, 2, ... (distinct), a message of mlen
 * 'm' bytes; `claim` is written as the parent count (np normally). */
static unsigned char *commit_bytes(uint32_t np, uint32_t claim, size_t mlen, size_t *size)
{
	*size = 53 + 32 * (size_t)np + mlen;
	unsigned char *b = malloc(*size), *p = b;
	memcpy(p, "PRLC\x01", 5);
	memset(p + 5, 0x77, 32);
	p += 37;
	put32le(&p, claim);
	for (uint32_t i = 0; i < np; i++) {
		memset(p, 0, 32);
		prolly__wr32(p, i + 1);
		p += 32;
	}
	prolly__wr64(p, 1234567);
	p += 8;
	put32le(&p, (uint32_t)mlen);
	memset(p, 'm', mlen);
	return b;
}

static int decode_commit(const unsigned char *b, size_t size)
{
	prolly_id id;
	prolly_commit *c = NULL;
	prolly__hash(&id, b, size);
	int rc = prolly__commit_decode(&c, &id, b, size);
	prolly_commit_free(c);
	return rc;
}

PT_TEST(commit_decode_limits)
{
	static const struct {
		uint32_t np, claim;
		size_t mlen;
		int want;
		const char *what;
	} cases[] = {
	    {64, 64, 10, 0, "64 parents"},
	    {65, 65, 10, PROLLY_ECORRUPT, "65 parents"},
	    {1, 1, 65536, 0, "a 65536-byte message"},
	    {1, 1, 65537, PROLLY_ECORRUPT, "a 65537-byte message"},
	    {1, 2, 10, PROLLY_ECORRUPT, "2 parents claimed, 1 present"},
	    {1, 1000, 10, PROLLY_ECORRUPT, "1000 parents claimed, 1 present"},
	    {0, 0xffffffff, 0, PROLLY_ECORRUPT, "2^32-1 parents claimed, none present"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t size;
		unsigned char *b = commit_bytes(cases[i].np, cases[i].claim, cases[i].mlen, &size);
		int rc = decode_commit(b, size);
		PT_CHECKF(rc == cases[i].want, "%s: %d (%s)", cases[i].what, rc, prolly_last_error());
		/* A parent count the bytes cannot hold is refused for what it is, before anything
		 * after the parents is read. */
		if (cases[i].claim != cases[i].np)
			PT_CHECKF(strstr(prolly_last_error(), "parent count") != NULL, "%s: %s", cases[i].what,
			          prolly_last_error());
		free(b);
	}
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
