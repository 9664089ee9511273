/*
 * proof.c - proofs that a tree holds a key's value, or lacks the key, or holds exactly a list of
 * records in a range, checked with hashing alone (prolly_prove, prolly_proof_verify).
 *
 * A proof carries the tree's own nodes, byte for byte: those on the path from the root to the
 * leaf where the key is or would be, or, for a range, every node whose key span meets the range
 * and their ancestors. The verifier hashes each node to its id, starts from the tree id it was
 * given and walks down exactly as the prover did; a node it needs that the proof lacks (or that
 * hashes to something else: a changed value, a dropped record, a changed child id) makes the
 * proof invalid. A node's last keys bound its children's keys (B2 in node.c, docs/format.md), so
 * the walk is the tree's own and no record of the range can be left out.
 *
 * Format (version 1; docs/format.md, "Proofs"; the offsets are named in format.h), integers
 * little-endian:
 *   PF1 offset 0  magic "PRLP"            PF2 offset 4  u8 version (1)
 *   PF3 offset 5  u8 kind: 0 key, 1 range PF4 offset 6  u16 flags (0)
 *   PF5 offset 8  u32 a, then a bytes: the key (kind 0) or the range's first key
 *   then          u32 b, then b bytes: the range's end key, excluded (kind 0: b = 0)
 *   then          u32 n, then n nodes, each u32 size and size bytes
 * and nothing after. Keys are at most PROLLY_MAX_KEY bytes, nodes at most PROOF_MAX_NODE bytes,
 * n at most PROOF_MAX_NODES: anything else is PROLLY_ECORRUPT before a node is hashed.
 */
#include "internal.h"

#include <stdlib.h>

#define PROOF_MAGIC PROLLY_PROOF_MAGIC
#define PROOF_VERSION PROLLY_PROOF_VERSION
#define PROOF_HEADER PROLLY__PROOF_HEADER
#define PROOF_MAX_NODE (4 * PROLLY_CHUNK_MAX_ANY + 2 * PROLLY_MAX_KEY + PROLLY_MAX_VALUE)
#define PROOF_MAX_NODES (1u << 24)

_Static_assert(sizeof(PROOF_MAGIC) - 1 == PROLLY__MAGIC_SIZE, "PF1: a 4-byte magic");
_Static_assert(PROLLY__PROOF_OFF_VERSION == 4 && PROLLY__PROOF_OFF_KIND == 5 &&
                   PROLLY__PROOF_OFF_FLAGS == 6 && PROLLY__PROOF_HEADER == 8,
               "PF2-PF5: the offsets of the table above");

/* The children of internal node nd that the walk enters: [*lo, *hi). Key proofs (range 0) enter
 * the one child whose span holds `from`; range proofs every child whose span meets [from, to). */
static void children(const pnode *nd, const prolly_slice *from, const prolly_slice *to, int range,
                     uint32_t *lo, uint32_t *hi)
{
	uint32_t i = prolly__node_lower_bound(nd, from->data, from->size);
	*lo = i;
	if (!range) {
		*hi = i < nd->n ? i + 1 : i;
		return;
	}
	while (i < nd->n) {
		prolly_slice k = prolly__node_key(nd, i++);
		if (prolly__keycmp(k.data, k.size, to->data, to->size) >= 0)
			break; /* this child holds keys up to `to` and beyond: the last one entered */
	}
	*hi = i;
}

static int put_u32(prolly_buf *b, uint32_t v)
{
	unsigned char x[4];
	prolly__wr32(x, v);
	return prolly__buf_put(b, x, 4);
}

/* ---- proving --------------------------------------------------------------------------------- */

int prolly_prove(prolly_buf *out, prolly_db *db, const prolly_id *root, const prolly_slice *key,
                 const prolly_slice *to)
{
	prolly__nodeset ws;
	prolly_buf body = PROLLY_BUF_INIT;
	prolly_id *level = NULL, *next = NULL;
	size_t n_level = 0, n_next = 0, cap_next = 0;
	uint32_t count = 0;
	unsigned char head[PROOF_HEADER];
	pnode *nd;
	int rc;

	if (!out || !db || !root || !key || (key->size && !key->data) || (to && to->size && !to->data))
		return prolly_set_error(PROLLY_EINVAL, "prolly_prove: NULL argument");
	if (key->size > PROLLY_MAX_KEY || (to && to->size > PROLLY_MAX_KEY))
		return prolly_set_error(PROLLY_ETOOBIG, "prolly_prove: a key over %d bytes",
		                        PROLLY_MAX_KEY);
	if (to && prolly__keycmp(key->data, key->size, to->data, to->size) > 0)
		return prolly_set_error(PROLLY_EINVAL, "prolly_prove: the range ends before it begins");
	prolly__nodeset_init(&ws);
	/* The proof is made whole in body, its header first (the node count, its last field, set
	 * once known), and only then handed to out: a failure anywhere leaves out as it was. */
	memcpy(head, PROOF_MAGIC, PROLLY__MAGIC_SIZE);
	head[PROLLY__PROOF_OFF_VERSION] = PROOF_VERSION;
	head[PROLLY__PROOF_OFF_KIND] = to ? 1 : 0;
	head[PROLLY__PROOF_OFF_FLAGS] = head[PROLLY__PROOF_OFF_FLAGS + 1] = 0;
	if ((rc = prolly__buf_put(&body, head, sizeof(head))) ||
	    (rc = put_u32(&body, (uint32_t)key->size)) ||
	    (rc = prolly__buf_put(&body, key->data, key->size)) ||
	    (rc = put_u32(&body, (uint32_t)(to ? to->size : 0))) ||
	    (to && (rc = prolly__buf_put(&body, to->data, to->size))) || (rc = put_u32(&body, 0)))
		goto cleanup;
	size_t count_at = body.size - 4;
	if ((rc = prolly__load_root(db, &ws, root, &nd)))
		goto cleanup;
	prolly_slice none = {"", 0};
	const prolly_slice *end = to ? to : &none;
	if (!(level = malloc(sizeof(*level)))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory proving");
		goto cleanup;
	}
	level[0] = *root;
	n_level = 1;
	while (n_level) { /* one level per store call; nodes in walk order */
		pnode **nodes = malloc(n_level * sizeof(*nodes));
		if (!nodes) {
			rc = prolly_set_error(PROLLY_ENOMEM, "out of memory proving");
			goto cleanup;
		}
		rc = prolly__load(db, &ws, level, n_level, nodes);
		n_next = 0;
		for (size_t i = 0; i < n_level && !rc; i++) {
			nd = nodes[i];
			if ((rc = put_u32(&body, (uint32_t)nd->size)) ||
			    (rc = prolly__buf_put(&body, nd->bytes, nd->size)))
				break;
			count++;
			if (nd->level == 0)
				continue;
			uint32_t lo, hi;
			children(nd, key, end, to != NULL, &lo, &hi);
			if (PROLLY__GROW(next, cap_next, n_next + (hi - lo), 64)) {
				rc = prolly_set_error(PROLLY_ENOMEM, "out of memory proving");
				break;
			}
			for (uint32_t j = lo; j < hi; j++)
				next[n_next++] = *prolly__node_child(nd, j);
		}
		free(nodes);
		if (rc)
			goto cleanup;
		if (count > PROOF_MAX_NODES) {
			rc = prolly_set_error(PROLLY_ETOOBIG, "prolly_prove: the proof would exceed %u nodes",
			                      PROOF_MAX_NODES);
			goto cleanup;
		}
		free(level); /* the next level becomes the one to load */
		level = next;
		n_level = n_next;
		next = NULL;
		cap_next = 0;
	}
	prolly__wr32(body.ptr + count_at, count);
	prolly_buf_dispose(out);
	*out = body;
	body = (prolly_buf)PROLLY_BUF_INIT;

cleanup:
	prolly__nodeset_dispose(&ws);
	prolly_buf_dispose(&body);
	free(level);
	free(next);
	return rc;
}

/* ---- verifying ------------------------------------------------------------------------------- */

typedef struct reader {
	const unsigned char *p;
	size_t size, at;
} reader;

static int read_u32(reader *r, uint32_t *v)
{
	if (r->size - r->at < 4)
		return prolly_set_error(PROLLY_ECORRUPT, "proof: truncated at byte %zu", r->at);
	*v = prolly__rd32(r->p + r->at);
	r->at += 4;
	return 0;
}

static int read_bytes(reader *r, size_t n, const unsigned char **out)
{
	if (r->size - r->at < n)
		return prolly_set_error(PROLLY_ECORRUPT, "proof: truncated at byte %zu", r->at);
	*out = r->p + r->at;
	r->at += n;
	return 0;
}

int prolly_proof_verify(prolly_proof_claim *claim, const prolly_id *tree, const void *proof,
                        size_t size, prolly_proof_fn fn, void *payload)
{
	reader r = {proof, size, 0};
	prolly__idmap at; /* node id -> index + 1 into spans */
	const unsigned char **spans = NULL;
	uint32_t *sizes = NULL, n = 0, alen, blen;
	const unsigned char *a = NULL, *b = NULL, *head = NULL;
	prolly_id *level = NULL, *next = NULL;
	size_t n_level = 0, n_next = 0, cap_next = 0;
	int rc;

	prolly__idmap_init(&at);
	if (!tree || (size && !proof))
		return prolly_set_error(PROLLY_EINVAL, "prolly_proof_verify: NULL tree or proof");
	if ((rc = read_bytes(&r, PROOF_HEADER, &head)))
		goto cleanup;
	if (memcmp(head, PROOF_MAGIC, PROLLY__MAGIC_SIZE) != 0) { /* PF1 */
		rc = prolly_set_error(PROLLY_ECORRUPT, "proof: not a proof (bad magic)");
		goto cleanup;
	}
	unsigned version = head[PROLLY__PROOF_OFF_VERSION], kind = head[PROLLY__PROOF_OFF_KIND];
	if (version != PROOF_VERSION) { /* PF2 */
		rc = prolly_set_error(version > PROOF_VERSION ? PROLLY_EVERSION : PROLLY_ECORRUPT,
		                      "proof: version %u; this library reads version %d", version,
		                      PROOF_VERSION);
		goto cleanup;
	}
	if (kind > 1 || prolly__rd32(head + 4) >> 16) { /* PF3, PF4: the u16 flags are 0 */
		rc = prolly_set_error(PROLLY_ECORRUPT, "proof: unknown kind %u or flags", kind);
		goto cleanup;
	}
	int range = (int)kind;
	if ((rc = read_u32(&r, &alen)))
		goto cleanup;
	if (alen > PROLLY_MAX_KEY) {
		rc = prolly_set_error(PROLLY_ECORRUPT, "proof: a %u-byte key", alen);
		goto cleanup;
	}
	if ((rc = read_bytes(&r, alen, &a)) || (rc = read_u32(&r, &blen)))
		goto cleanup;
	if (blen > PROLLY_MAX_KEY || (!range && blen)) {
		rc = prolly_set_error(PROLLY_ECORRUPT, "proof: a %u-byte end key", blen);
		goto cleanup;
	}
	if ((rc = read_bytes(&r, blen, &b)) || (rc = read_u32(&r, &n)))
		goto cleanup;
	prolly_slice from = {a, alen}, to = {b, blen};
	if (range && prolly__keycmp(a, alen, b, blen) > 0) {
		rc = prolly_set_error(PROLLY_ECORRUPT, "proof: the range ends before it begins");
		goto cleanup;
	}
	if (n > PROOF_MAX_NODES || n > (size - r.at) / 4) {
		rc = prolly_set_error(PROLLY_ECORRUPT, "proof: %u nodes cannot fit", n);
		goto cleanup;
	}
	spans = malloc((n ? n : 1) * sizeof(*spans));
	sizes = malloc((n ? n : 1) * sizeof(*sizes));
	if (!spans || !sizes) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory reading a proof");
		goto cleanup;
	}
	for (uint32_t i = 0; i < n; i++) {
		prolly_id id;
		if ((rc = read_u32(&r, &sizes[i])))
			goto cleanup;
		if (sizes[i] > PROOF_MAX_NODE) {
			rc = prolly_set_error(PROLLY_ECORRUPT, "proof: a %u-byte node", sizes[i]);
			goto cleanup;
		}
		if ((rc = read_bytes(&r, sizes[i], &spans[i])))
			goto cleanup;
		prolly__hash(&id, spans[i], sizes[i]);
		if (!prolly__idmap_get(&at, &id) && (rc = prolly__idmap_put(&at, &id, i + 1)))
			goto cleanup;
	}
	if (r.at != size) {
		rc = prolly_set_error(PROLLY_ECORRUPT, "proof: %zu bytes after its end", size - r.at);
		goto cleanup;
	}
	if (claim) {
		claim->range = range;
		claim->key = from;
		claim->to = to;
	}

	/* The walk (the prover's): level by level from the tree id. */
	if (!(level = malloc(sizeof(*level)))) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory reading a proof");
		goto cleanup;
	}
	level[0] = *tree;
	n_level = 1;
	unsigned want_level = 0, first = 1;
	uint64_t reported = 0;
	while (n_level && !rc) {
		n_next = 0;
		for (size_t i = 0; i < n_level && !rc; i++) {
			uintptr_t k = prolly__idmap_get(&at, &level[i]);
			pnode *nd = NULL;
			if (!k) {
				char hex[PROLLY_ID_HEX_SIZE];
				prolly_id_to_hex(hex, &level[i]);
				rc = prolly_set_error(PROLLY_ECORRUPT,
				                      "proof: node %s is missing (or does not hash to its id): "
				                      "the proof is not of this tree",
				                      hex);
				break;
			}
			if ((rc = prolly__node_decode(&nd, &level[i], spans[k - 1], sizes[k - 1], 0))) {
				rc = prolly_set_error(PROLLY_ECORRUPT, "proof: %s", prolly_last_error());
				break;
			}
			if (first)
				want_level = nd->level;
			if (nd->level != want_level) {
				rc = prolly_set_error(PROLLY_ECORRUPT, "proof: a node at level %u, not %u",
				                      nd->level, want_level);
			} else if (nd->level > 0) {
				uint32_t lo, hi;
				children(nd, &from, &to, range, &lo, &hi);
				if (PROLLY__GROW(next, cap_next, n_next + (hi - lo), 64))
					rc = prolly_set_error(PROLLY_ENOMEM, "out of memory reading a proof");
				for (uint32_t j = lo; j < hi && !rc; j++)
					next[n_next++] = *prolly__node_child(nd, j);
			} else if (!range) {
				uint32_t j = prolly__node_lower_bound(nd, a, alen);
				prolly_slice key = j < nd->n ? prolly__node_key(nd, j) : from;
				int found = j < nd->n && prolly__keycmp(key.data, key.size, a, alen) == 0;
				prolly_slice v = found ? prolly__node_value(nd, j) : (prolly_slice){NULL, 0};
				if (fn)
					rc = fn(payload, &from, found ? &v : NULL);
				reported++;
			} else {
				for (uint32_t j = prolly__node_lower_bound(nd, a, alen); j < nd->n && !rc; j++) {
					prolly_slice key = prolly__node_key(nd, j);
					if (prolly__keycmp(key.data, key.size, b, blen) >= 0)
						break;
					prolly_slice v = prolly__node_value(nd, j);
					if (fn)
						rc = fn(payload, &key, &v);
					reported++;
				}
			}
			prolly__node_unref(nd);
		}
		first = 0;
		want_level--;
		free(level); /* the next level becomes the one to walk */
		level = next;
		n_level = n_next;
		next = NULL;
		cap_next = 0;
	}
	if (!rc && !range && !reported && fn) /* beyond the last key: no leaf entered */
		rc = fn(payload, &from, NULL);

cleanup:
	prolly__idmap_dispose(&at);
	free(spans);
	free(sizes);
	free(level);
	free(next);
	return rc;
}
