/*
 * head_memo.c - the branch heads a handle read last, so that reading an unmoved head again
 * costs the store one small read.
 *
 * A head read (head.c) returns a ref, the commit it names and that commit's tree root. Most
 * reads of a branch find the head where the previous read left it. The memo keeps, for the last
 * PROLLY__HEAD_MEMO refs read, the commit id the ref named and the commit's bytes (hash-checked
 * when they were read); the next head read of that ref tells a store that implements
 * get_ref_objects_known which commit it holds, and when the ref has not moved the store returns
 * the ref alone and the commit is decoded from the memo. The root node is left to the node cache
 * (read on demand if it was evicted).
 *
 * Invariants:
 *   H1  a slot's bytes hash to its commit id (they were checked before prolly__head_memo_put).
 *   H2  a slot is read and written under the memo's lock only; callers get decoded copies.
 *   H3  commits are immutable, so a slot never goes stale: a moved ref only makes it unused
 *       (the next read of the ref replaces it); least recently used slots are reused first.
 *   H4  a seen entry (commit, e) was put only after a head read (head.c) found a ref naming
 *       commit in a snapshot whose gc epoch was e, or after a write whose epoch check passed
 *       at e moved a ref to commit, stored with its tree in that write or before it (branch.c,
 *       T11 of txn.c). Every gc keeps what a ref names, the commit and its whole tree, and no
 *       read returns an epoch the store still has after a deletion that read could see
 *       (store.h, gc), so a write whose epoch check passes against e finds the commit and its
 *       tree still stored: a txn with epoch e need not read them to know (branch.c, refs.c). Commits read by id are not remembered: retention may have kept one
 *       without its tree. The entries are a ring: the oldest is replaced first.
 *   H5  a slot's epoch is that of the last read or write of this handle that saw its ref name its
 *       commit, so H4's argument holds for (commit, epoch). Its guess flag lets
 *       prolly_commit_edits build on the commit without reading the ref (branch.c): set by the
 *       handle's own write of the ref when the head read that write was built on found the ref
 *       where this handle last saw it (no other writer in between), or by a guess that won;
 *       cleared by a read that found the ref moved, by a guess that lost its compare-and-swap
 *       and by prolly_db_cache_clear (a cold handle reads its heads).
 *       A wrong guess costs one failed write, never a wrong result: the write's compare-and-swap
 *       expects the guessed commit and its epoch check the slot's epoch.
 *   H6  how the next head read of a slot's ref asks the store (head.c) follows how often reads
 *       of it found it moved: a moving average (each read weighs 1/8) of the reads that were
 *       told the slot's commit. Under H6_LIMIT (a fifth) the ref is read alone first, the
 *       cheapest read a store has (on PostgreSQL a statement without the joins to the nodes
 *       table, which cost the server its whole plan's setup even when they find nothing), and
 *       the commit and root follow only if it moved, in a second round trip; at or above it,
 *       one round trip asks for the ref, commit and root at once. The ref-first read costs a
 *       round trip more when the ref moved, the joined one some server work when it did not:
 *       break-even near a move every fifth read (docs/benchmarks/sysbench.md, "Run G"). A new
 *       slot starts above the limit; a lost guess (H5) counts as a move. A wrong choice costs
 *       time, never a wrong result.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Commits larger than this (a long message) are not remembered: they are read as before. */
#define MEMO_MAX_COMMIT 4096

/* H6: the moving average of moves found, in 1/256: each read's weight (1 >> H6_SHIFT), the
 * level under which the ref is read alone first, and a new slot's start (two reads that find
 * the ref still bring it under the limit). */
#define H6_SHIFT 3
#define H6_LIMIT 51
#define H6_START 64

void prolly__head_memo_init(prolly__head_memo *m)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
}

void prolly__head_memo_dispose(prolly__head_memo *m)
{
	for (size_t i = 0; i < PROLLY__HEAD_MEMO; i++)
		free(m->slot[i].bytes);
	pthread_mutex_destroy(&m->lock);
	memset(m, 0, sizeof(*m));
}

static prolly__head_slot *find(prolly__head_memo *m, const char *ref)
{
	for (size_t i = 0; i < PROLLY__HEAD_MEMO; i++)
		if (m->slot[i].bytes && strcmp(m->slot[i].name, ref) == 0)
			return &m->slot[i];
	return NULL;
}

prolly_commit *prolly__head_memo_get(prolly__head_memo *m, const char *ref, int *ref_first)
{
	prolly_commit *c = NULL;
	pthread_mutex_lock(&m->lock);
	prolly__head_slot *s = find(m, ref);
	if (ref_first)
		*ref_first = s && s->moves < H6_LIMIT;
	if (s) {
		s->used = ++m->clock;
		/* A failure (out of memory) only means the head is read as if it were not remembered. */
		if (prolly__commit_decode(&c, &s->commit, s->bytes, s->size))
			c = NULL;
	}
	pthread_mutex_unlock(&m->lock);
	return c;
}

prolly_commit *prolly__head_memo_find(prolly__head_memo *m, const prolly_id *commit)
{
	prolly_commit *c = NULL;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < PROLLY__HEAD_MEMO && !c; i++) {
		prolly__head_slot *s = &m->slot[i];
		if (s->bytes && prolly_id_equal(&s->commit, commit) &&
		    prolly__commit_decode(&c, &s->commit, s->bytes, s->size))
			c = NULL; /* out of memory: read as if not remembered */
	}
	pthread_mutex_unlock(&m->lock);
	return c;
}

/* Fills ref's slot (an empty one, else the least recently used: H3) with a copy of bytes. The
 * caller holds the lock; returns the slot, or NULL when nothing was remembered. */
static prolly__head_slot *fill(prolly__head_memo *m, const char *ref, const prolly_id *commit,
                               unsigned char *copy, size_t size)
{
	prolly__head_slot *s = find(m, ref);
	if (!s) {
		s = &m->slot[0];
		for (size_t i = 1; i < PROLLY__HEAD_MEMO && s->bytes; i++)
			if (!m->slot[i].bytes || m->slot[i].used < s->used)
				s = &m->slot[i];
		s->guess = 0;
		s->moves = H6_START;
	}
	free(s->bytes);
	memcpy(s->name, ref, strlen(ref) + 1);
	s->commit = *commit;
	s->bytes = copy;
	s->size = size;
	s->used = ++m->clock;
	return s;
}

static unsigned char *copy_of(const char *ref, const void *bytes, size_t size)
{
	if (size > MEMO_MAX_COMMIT || strlen(ref) > PROLLY_MAX_REF_NAME)
		return NULL;
	unsigned char *copy = malloc(size ? size : 1);
	if (copy) /* else not remembered: nothing is wrong */
		memcpy(copy, bytes, size);
	return copy;
}

void prolly__head_memo_put(prolly__head_memo *m, const char *ref, const prolly_id *commit,
                           const void *bytes, size_t size, uint64_t epoch, int guess)
{
	unsigned char *copy = copy_of(ref, bytes, size);
	if (!copy)
		return;
	pthread_mutex_lock(&m->lock);
	prolly__head_slot *s = fill(m, ref, commit, copy, size);
	s->epoch = epoch;
	s->guess = guess;
	pthread_mutex_unlock(&m->lock);
}

void prolly__head_memo_unmoved(prolly__head_memo *m, const char *ref, const prolly_id *commit,
                               uint64_t epoch)
{
	pthread_mutex_lock(&m->lock);
	prolly__head_slot *s = find(m, ref);
	if (s && prolly_id_equal(&s->commit, commit)) {
		s->moves -= s->moves >> H6_SHIFT;
		if (epoch)
			s->epoch = epoch;
	}
	pthread_mutex_unlock(&m->lock);
}

int prolly__head_memo_peek(prolly__head_memo *m, const char *ref, prolly_id *commit)
{
	pthread_mutex_lock(&m->lock);
	prolly__head_slot *s = find(m, ref);
	if (s)
		*commit = s->commit;
	pthread_mutex_unlock(&m->lock);
	return s != NULL;
}

prolly_commit *prolly__head_memo_guess(prolly__head_memo *m, const char *ref, uint64_t *epoch)
{
	prolly_commit *c = NULL;
	pthread_mutex_lock(&m->lock);
	prolly__head_slot *s = find(m, ref);
	if (s && s->guess && s->epoch) {
		s->used = ++m->clock;
		if (prolly__commit_decode(&c, &s->commit, s->bytes, s->size))
			c = NULL; /* out of memory: the ref is read */
		*epoch = s->epoch;
	}
	pthread_mutex_unlock(&m->lock);
	return c;
}

static void count_move(prolly__head_slot *s)
{
	s->moves += (256 - s->moves) >> H6_SHIFT;
}

void prolly__head_memo_moved(prolly__head_memo *m, const char *ref)
{
	pthread_mutex_lock(&m->lock);
	prolly__head_slot *s = find(m, ref);
	if (s)
		count_move(s);
	pthread_mutex_unlock(&m->lock);
}

void prolly__head_memo_distrust(prolly__head_memo *m, const char *ref)
{
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < PROLLY__HEAD_MEMO; i++) {
		prolly__head_slot *s = &m->slot[i];
		if (!ref) {
			s->guess = 0;
		} else if (s->bytes && strcmp(s->name, ref) == 0) {
			s->guess = 0;
			count_move(s); /* H6: another writer */
		}
	}
	pthread_mutex_unlock(&m->lock);
}

void prolly__seen_put(prolly__head_memo *m, const prolly_id *commit, uint64_t epoch)
{
	if (!epoch)
		return;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < PROLLY__SEEN; i++)
		if (m->seen[i].epoch == epoch && prolly_id_equal(&m->seen[i].commit, commit))
			goto out; /* known already */
	m->seen[m->seen_next].commit = *commit;
	m->seen[m->seen_next].epoch = epoch;
	m->seen_next = (m->seen_next + 1) % PROLLY__SEEN;
out:
	pthread_mutex_unlock(&m->lock);
}

int prolly__seen_at(prolly__head_memo *m, const prolly_id *commit, uint64_t epoch)
{
	int found = 0;
	if (!epoch)
		return 0;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < PROLLY__SEEN && !found; i++)
		found = m->seen[i].epoch == epoch && prolly_id_equal(&m->seen[i].commit, commit);
	pthread_mutex_unlock(&m->lock);
	return found;
}
