/*
 * node.c - the tree node format: encoding, validation, lookups.
 *
 * A node is an immutable byte string named by its SHA-256. Lookups binary-search the encoding
 * directly; decoding only validates it and records where its tables start.
 *
 * Format version 1. Every integer is little-endian. n is the number of items.
 *
 *   offset            size       field
 *   0                 4          magic "PRLY"
 *   4                 1          format version (1)
 *   5                 1          level: 0 for a leaf, at most 63
 *   6                 2          flags: 0 (any other value is corrupt in version 1)
 *   8                 4          n
 *   12                4(n+1)     koff: key offsets into the key heap; koff[0] = 0
 *
 *   leaf (level 0):
 *   12+4(n+1)         4(n+1)     voff: value offsets into the value heap; voff[0] = 0
 *   12+8(n+1)         koff[n]    key heap: key i is bytes [koff[i], koff[i+1])
 *   ...               voff[n]    value heap: value i is bytes [voff[i], voff[i+1]); node ends here
 *
 *   internal (level > 0): item i describes child i
 *   12+4(n+1)         40n        child entries: child id (32 bytes), records below it (u64)
 *   12+4(n+1)+40n     koff[n]    key heap: key i is the LAST key of child i; node ends here
 *
 * The empty tree is the leaf with n = 0 (20 bytes).
 *
 * The offsets have names in format.h (PROLLY__NODE_OFF_*, PROLLY_NODE_HEADER, PROLLY__CHILD_OFF_*,
 * PROLLY_CHILD_ENTRY), which every other file that reads a node at a fixed offset uses.
 *
 * Invariants (checked by prolly__node_decode; a violation is PROLLY_ECORRUPT naming the id):
 *   N1  magic is "PRLY", flags are 0, version is 1 (a larger version is PROLLY_EVERSION); a
 *       commit's or reflog entry's magic is named as such (a commit id given as a tree).
 *   N2  level <= PROLLY_MAX_LEVEL; an internal node has n >= 1.
 *   N3  offset tables start at 0, never decrease, and the heaps end exactly at the node's end.
 *   N4  keys are strictly increasing (memcmp order, shorter prefix first).
 *   N5  keys are at most PROLLY_MAX_KEY bytes, values at most PROLLY_MAX_VALUE.
 *   N6  every child count is >= 1 and their sum does not overflow.
 *   N7  with verify, SHA-256(bytes) equals the id the node was asked for.
 */
#include "internal.h"

#include <stdlib.h>

/* The offsets above are named in format.h (the one place other files take them from). */
_Static_assert(PROLLY__NODE_OFF_VERSION == PROLLY__MAGIC_SIZE, "version after the magic");
_Static_assert(PROLLY__NODE_OFF_LEVEL == PROLLY__NODE_OFF_VERSION + 1, "level after version");
_Static_assert(PROLLY__NODE_OFF_FLAGS == PROLLY__NODE_OFF_LEVEL + 1, "flags after the level");
_Static_assert(PROLLY__NODE_OFF_COUNT == PROLLY__NODE_OFF_FLAGS + 2, "n after the flags");
_Static_assert(PROLLY_NODE_HEADER == PROLLY__NODE_OFF_COUNT + 4, "key offsets after n");
_Static_assert(PROLLY__CHILD_OFF_COUNT == PROLLY__CHILD_OFF_ID + PROLLY_ID_SIZE,
               "a child's count after its id");
_Static_assert(PROLLY_CHILD_ENTRY == PROLLY__CHILD_OFF_COUNT + 8, "child entry: id and count");
_Static_assert(PROLLY__NODE_EMPTY_SIZE == PROLLY_NODE_HEADER + 4 + 4, "the empty leaf");
#define OFF_VERSION PROLLY__NODE_OFF_VERSION
#define OFF_LEVEL PROLLY__NODE_OFF_LEVEL
#define OFF_FLAGS PROLLY__NODE_OFF_FLAGS
#define OFF_COUNT PROLLY__NODE_OFF_COUNT

static int corrupt(const prolly_id *id, const char *what)
{
	char hex[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(hex, id);
	return prolly_set_error(PROLLY_ECORRUPT, "node %s is corrupt: %s", hex, what);
}

/* Validates an offset table of n+1 entries; heap size returned in *total. */
static int check_offsets(const unsigned char *tab, uint32_t n, uint32_t limit, uint32_t *total)
{
	uint32_t prev = prolly__rd32(tab);
	if (prev != 0)
		return -1;
	for (uint32_t i = 1; i <= n; i++) {
		uint32_t cur = prolly__rd32(tab + 4 * (size_t)i);
		if (cur < prev || cur - prev > limit)
			return -1;
		prev = cur;
	}
	*total = prev;
	return 0;
}

int prolly__node_decode(pnode **out, const prolly_id *id, const void *bytes, size_t size,
                        int verify)
{
	const unsigned char *b = bytes;
	if (verify) { /* N7 first: damaged bytes are corrupt, whatever their version byte says */
		prolly_id h;
		prolly__hash(&h, b, size);
		if (!prolly_id_equal(&h, id))
			return corrupt(id, "bytes do not hash to the id");
	}
	if (size >= PROLLY__MAGIC_SIZE && memcmp(b, PROLLY_COMMIT_MAGIC, PROLLY__MAGIC_SIZE) == 0)
		return corrupt(id, "it is a commit, not a tree node"); /* N1: say what it is */
	if (size >= PROLLY__MAGIC_SIZE && memcmp(b, PROLLY_REFLOG_MAGIC, PROLLY__MAGIC_SIZE) == 0)
		return corrupt(id, "it is a reflog entry, not a tree node");
	if (size < PROLLY_NODE_HEADER + 4 || memcmp(b, PROLLY_NODE_MAGIC, PROLLY__MAGIC_SIZE) != 0)
		return corrupt(id, "bad magic or too short");
	if (b[OFF_VERSION] > PROLLY_FORMAT_VERSION) {
		char hex[PROLLY_ID_HEX_SIZE];
		prolly_id_to_hex(hex, id);
		return prolly_set_error(PROLLY_EVERSION,
		                        "node %s has format version %u; this library reads %d", hex,
		                        b[OFF_VERSION], PROLLY_FORMAT_VERSION);
	}
	if (b[OFF_VERSION] != PROLLY_FORMAT_VERSION || b[OFF_FLAGS] != 0 ||
	    b[OFF_FLAGS + 1] != 0) /* N1 */
		return corrupt(id, "bad version or flags");
	unsigned level = b[OFF_LEVEL];
	uint32_t n = prolly__rd32(b + OFF_COUNT);
	if (level > PROLLY_MAX_LEVEL || (level > 0 && n == 0)) /* N2 */
		return corrupt(id, "bad level or item count");
	size_t per = level == 0 ? 8 : 4 + PROLLY_CHILD_ENTRY;
	if (n > (size - PROLLY_NODE_HEADER) / per)
		return corrupt(id, "item count exceeds the node size");

	const unsigned char *koff = b + PROLLY_NODE_HEADER;
	size_t fixed = PROLLY_NODE_HEADER + 4 * ((size_t)n + 1);
	uint32_t klen_total, vlen_total = 0;
	const unsigned char *voff = NULL, *kids = NULL, *kheap, *vheap = NULL;
	if (fixed > size || check_offsets(koff, n, PROLLY_MAX_KEY, &klen_total)) /* N3, N5 */
		return corrupt(id, "bad key offsets");
	if (level == 0) {
		voff = b + fixed;
		fixed += 4 * ((size_t)n + 1);
		if (fixed > size || check_offsets(voff, n, PROLLY_MAX_VALUE, &vlen_total))
			return corrupt(id, "bad value offsets");
		kheap = b + fixed;
		vheap = kheap + klen_total;
		if (fixed + (size_t)klen_total + vlen_total != size)
			return corrupt(id, "heap sizes do not match the node size");
	} else {
		kids = b + fixed;
		fixed += (size_t)PROLLY_CHILD_ENTRY * n;
		kheap = b + fixed;
		if (fixed > size || fixed + (size_t)klen_total != size)
			return corrupt(id, "heap sizes do not match the node size");
	}

	uint8_t cls;
	pnode *nd = prolly__node_mem_alloc(sizeof(*nd) + size, &cls);
	if (!nd)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory decoding a node of %zu bytes", size);
	unsigned char *copy = (unsigned char *)(nd + 1);
	memcpy(copy, b, size);
	prolly__shared_init(&nd->mem, cls);
	nd->id = *id;
	nd->level = level;
	nd->n = n;
	nd->size = size;
	nd->bytes = copy;
	nd->koff = copy + (koff - b);
	nd->voff = voff ? copy + (voff - b) : NULL;
	nd->kids = kids ? copy + (kids - b) : NULL;
	nd->kheap = copy + (kheap - b);
	nd->vheap = vheap ? copy + (vheap - b) : NULL;

	/* N4: strictly increasing keys. */
	for (uint32_t i = 1; i < n; i++) {
		prolly_slice a = prolly__node_key(nd, i - 1), c = prolly__node_key(nd, i);
		if (prolly__keycmp(a.data, a.size, c.data, c.size) >= 0) {
			prolly__node_mem_free(nd, cls);
			return corrupt(id, "keys out of order");
		}
	}
	/* N6: child counts. */
	if (level == 0) {
		nd->count = n;
	} else {
		uint64_t sum = 0;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t c = prolly__node_child_count(nd, i);
			if (c == 0 || sum + c < sum) {
				prolly__node_mem_free(nd, cls);
				return corrupt(id, "bad child record count");
			}
			sum += c;
		}
		nd->count = sum;
	}
	*out = nd;
	return 0;
}

void prolly__node_ref(pnode *n)
{
	prolly__shared_ref(&n->mem);
}

void prolly__node_unref(pnode *n)
{
	if (n)
		prolly__shared_unref(&n->mem);
}

uint32_t prolly__node_lower_bound(const pnode *nd, const void *key, size_t klen)
{
	uint32_t lo = 0, hi = nd->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		prolly_slice k = prolly__node_key(nd, mid);
		if (prolly__keycmp(k.data, k.size, key, klen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint32_t prolly__node_lower_bound_from(const pnode *nd, const void *key, size_t klen, uint32_t from)
{
	uint32_t lo = from, step = 1, hi;
	assert(from <= nd->n);
	/* Gallop: the first of from, from + 1, from + 3, from + 7, ... whose key is >= key bounds
	 * the answer from above; the one before it, from below. */
	for (;;) {
		hi = lo + step - 1;
		if (hi >= nd->n) {
			hi = nd->n;
			break;
		}
		prolly_slice k = prolly__node_key(nd, hi);
		if (prolly__keycmp(k.data, k.size, key, klen) >= 0)
			break;
		lo = hi + 1;
		step *= 2;
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		prolly_slice k = prolly__node_key(nd, mid);
		if (prolly__keycmp(k.data, k.size, key, klen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- encoder ---- */

void prolly__enc_init(prolly__enc *e, unsigned level)
{
	memset(e, 0, sizeof(*e));
	e->level = level;
}

void prolly__enc_dispose(prolly__enc *e)
{
	prolly_buf_dispose(&e->keys);
	prolly_buf_dispose(&e->vals);
	prolly_buf_dispose(&e->koffs);
	prolly_buf_dispose(&e->voffs);
}

void prolly__enc_reset(prolly__enc *e)
{
	e->n = 0;
	e->count = 0;
	e->keys.size = e->vals.size = e->koffs.size = e->voffs.size = 0;
}

/* prolly__buf_put without the call when the buffer has room (every item of a node but the
 * first few). */
static inline int put(prolly_buf *b, const void *data, size_t size)
{
	if (b->size + size < b->asize) {
		if (size) /* an empty key or value may come as NULL */
			memcpy(b->ptr + b->size, data, size);
		b->size += size;
		b->ptr[b->size] = 0;
		return 0;
	}
	return prolly__buf_put(b, data, size);
}

static inline int put32(prolly_buf *b, uint32_t v)
{
	unsigned char tmp[4];
	prolly__wr32(tmp, v);
	return put(b, tmp, 4);
}

int prolly__enc_add_leaf(prolly__enc *e, const void *k, size_t klen, const void *v, size_t vlen)
{
	int rc;
	assert(e->level == 0);
	if ((rc = put(&e->keys, k, klen)) || (rc = put(&e->vals, v, vlen)) ||
	    (rc = put32(&e->koffs, (uint32_t)e->keys.size)) ||
	    (rc = put32(&e->voffs, (uint32_t)e->vals.size)))
		return rc;
	e->n++;
	e->count++;
	return 0;
}

int prolly__enc_add_child(prolly__enc *e, const void *k, size_t klen, const prolly_id *child,
                          uint64_t count)
{
	unsigned char ent[PROLLY_CHILD_ENTRY];
	int rc;
	assert(e->level > 0 && count > 0);
	memcpy(ent + PROLLY__CHILD_OFF_ID, child->bytes, PROLLY_ID_SIZE);
	prolly__wr64(ent + PROLLY__CHILD_OFF_COUNT, count);
	if ((rc = put(&e->keys, k, klen)) || (rc = put(&e->vals, ent, sizeof(ent))) ||
	    (rc = put32(&e->koffs, (uint32_t)e->keys.size)))
		return rc;
	e->n++;
	e->count += count;
	return 0;
}

/* Appends the end offsets of items [from, to) of a table, rebased from the start of item `from`
 * to `base`. */
static int put_offsets(prolly_buf *b, const unsigned char *tab, uint32_t from, uint32_t to,
                       uint32_t base)
{
	int rc = prolly__buf_grow(b, b->size + 4 * (size_t)(to - from) + 1);
	if (rc)
		return rc;
	unsigned char *o = b->ptr + b->size;
	uint32_t start = prolly__rd32(tab + 4 * (size_t)from);
	for (uint32_t i = from + 1; i <= to; i++, o += 4)
		prolly__wr32(o, base + prolly__rd32(tab + 4 * (size_t)i) - start);
	b->size += 4 * (size_t)(to - from);
	b->ptr[b->size] = 0;
	return 0;
}

int prolly__enc_add_items(prolly__enc *e, const pnode *x, uint32_t from, uint32_t to)
{
	int rc;
	assert(e->level == x->level && from <= to && to <= x->n);
	if (from == to)
		return 0;
	uint32_t k0 = prolly__rd32(x->koff + 4 * (size_t)from);
	uint32_t k1 = prolly__rd32(x->koff + 4 * (size_t)to);
	if ((rc = put_offsets(&e->koffs, x->koff, from, to, (uint32_t)e->keys.size)) ||
	    (rc = put(&e->keys, x->kheap + k0, k1 - k0)))
		return rc;
	if (x->level == 0) {
		uint32_t v0 = prolly__rd32(x->voff + 4 * (size_t)from);
		uint32_t v1 = prolly__rd32(x->voff + 4 * (size_t)to);
		if ((rc = put_offsets(&e->voffs, x->voff, from, to, (uint32_t)e->vals.size)) ||
		    (rc = put(&e->vals, x->vheap + v0, v1 - v0)))
			return rc;
		e->count += to - from;
	} else {
		if ((rc = put(&e->vals, x->kids + (size_t)PROLLY_CHILD_ENTRY * from,
		              (size_t)PROLLY_CHILD_ENTRY * (to - from))))
			return rc;
		for (uint32_t i = from; i < to; i++)
			e->count += prolly__node_child_count(x, i);
	}
	e->n += to - from;
	return 0;
}

/* The encoded size of the accumulated items (the format above). */
size_t prolly__enc_size(const prolly__enc *e)
{
	size_t n = e->n;
	return PROLLY_NODE_HEADER + 4 * (n + 1) + (e->level == 0 ? 4 * (n + 1) : 0) + e->keys.size +
	       e->vals.size;
}

/* Writes the encoding of the accumulated items to p (prolly__enc_size(e) bytes). */
static void enc_write(const prolly__enc *e, unsigned char *p)
{
	size_t n = e->n;
	memcpy(p, PROLLY_NODE_MAGIC, PROLLY__MAGIC_SIZE);
	p[OFF_VERSION] = PROLLY_FORMAT_VERSION;
	p[OFF_LEVEL] = (unsigned char)e->level;
	p[OFF_FLAGS] = p[OFF_FLAGS + 1] = 0;
	prolly__wr32(p + OFF_COUNT, (uint32_t)n);
	p += PROLLY_NODE_HEADER;
	prolly__wr32(p, 0);
	if (n)
		memcpy(p + 4, e->koffs.ptr, 4 * n);
	p += 4 * (n + 1);
	if (e->level == 0) {
		prolly__wr32(p, 0);
		if (n)
			memcpy(p + 4, e->voffs.ptr, 4 * n);
		p += 4 * (n + 1);
		if (e->keys.size)
			memcpy(p, e->keys.ptr, e->keys.size);
		p += e->keys.size;
		if (e->vals.size)
			memcpy(p, e->vals.ptr, e->vals.size);
	} else {
		memcpy(p, e->vals.ptr, e->vals.size);
		p += e->vals.size;
		memcpy(p, e->keys.ptr, e->keys.size);
	}
}

int prolly__enc_finish(prolly__enc *e, prolly_buf *out)
{
	size_t size = prolly__enc_size(e);
	int rc = prolly__buf_grow(out, size);
	if (rc)
		return rc;
	enc_write(e, out->ptr);
	out->size = size;
	return 0;
}

/*
 * The node of the accumulated items, encoded straight into node memory and named by its hash.
 * Nothing here came from outside the process: the encoder was fed items in key order (E1 and B1
 * check the caller's keys, nodes read from a store were decoded with their checks), so the node
 * is neither copied nor validated again as prolly__node_decode would.
 */
int prolly__enc_node(pnode **out, const prolly__enc *e)
{
	size_t n = e->n, size = prolly__enc_size(e);
	uint8_t cls;
	pnode *nd = prolly__node_mem_alloc(sizeof(*nd) + size, &cls);
	if (!nd)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory encoding a node of %zu bytes", size);
	unsigned char *b = (unsigned char *)(nd + 1);
	enc_write(e, b);
	prolly__shared_init(&nd->mem, cls);
	prolly__hash(&nd->id, b, size);
	nd->level = e->level;
	nd->n = (uint32_t)n;
	nd->count = e->count;
	nd->size = size;
	nd->bytes = b;
	nd->koff = b + PROLLY_NODE_HEADER;
	if (e->level == 0) {
		nd->voff = nd->koff + 4 * (n + 1);
		nd->kids = NULL;
		nd->kheap = nd->voff + 4 * (n + 1);
		nd->vheap = nd->kheap + e->keys.size;
	} else {
		nd->voff = NULL;
		nd->kids = nd->koff + 4 * (n + 1);
		nd->kheap = nd->kids + e->vals.size;
		nd->vheap = NULL;
	}
	*out = nd;
	return 0;
}
