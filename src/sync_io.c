/*
 * sync_io.c - what a sync (sync.c) and its history walk (sync_history.c) share below them: the
 * question to the destination (has_nodes, else get_nodes), the reads from the source into a
 * fetched batch (hash-checked), the trees the destination is known to hold (SY7), and the
 * high-water marks of what the sync holds in memory (SY8).
 */
#include "sync_int.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- which store a failure is about -------------------------------------------------------- */

#define SYNC_PREFIX "sync: "

int prolly__sync_side(const sync_ctx *s, const prolly_db *db, int rc)
{
	char why[1024];
	const char *msg = prolly_last_error();
	if (rc != PROLLY_ECORRUPT || strncmp(msg, SYNC_PREFIX, sizeof(SYNC_PREFIX) - 1) == 0)
		return rc;
	snprintf(why, sizeof(why), "%s", msg);
	return prolly_set_error(rc, SYNC_PREFIX "in the %s (%s store): %s",
	                        db == s->src ? "source" : "destination", db->vt.kind, why);
}

/* ---- asking the destination ------------------------------------------------------------- */

/* out[i] = whether the destination holds ids[i]; has_nodes, else get_nodes (prolly__has_nodes). */
int prolly__sync_has(sync_ctx *s, const prolly_id *ids, size_t n, unsigned char *out)
{
	if (n)
		s->st.has_calls++;
	return prolly__sync_side(s, s->dst, prolly__has_nodes(s->dst, ids, n, out));
}

/* ---- a gc on the source (SY11) ---------------------------------------------------------- */

#define EPOCH_PROBE "refs/heads/main" /* any ref name: get_ref reports the epoch, found or not */

uint64_t prolly__sync_src_epoch(prolly_db *src)
{
	/* The newest epoch the handle has seen (its open read one): no round trip, and earlier than
	 * anything the caller reads of the source from now on. */
	return atomic_load(&src->epoch);
}

int prolly__sync_src_gc(prolly_db *src, uint64_t since, int rc)
{
	char why[1024];
	uint64_t now = 0;
	if ((rc != PROLLY_ENOTFOUND && rc != PROLLY_ECORRUPT) || !since)
		return rc;
	snprintf(why, sizeof(why), "%s", prolly_last_error());
	prolly_id ignored;
	int r = src->vt.get_ref(src->store, EPOCH_PROBE, &ignored, &now); /* the epoch now */
	if ((r != 0 && r != PROLLY_ENOTFOUND) || now <= since)
		return prolly_set_error(rc, "%s", why); /* the probe's own message is not the story */
	prolly__raise_epoch(src, now);
	return prolly_set_error(PROLLY_ECONFLICT,
	                        "sync: a gc ran on the source meanwhile (epoch %llu, now %llu) and "
	                        "removed what the sync was copying (%s); run it again",
	                        (unsigned long long)since, (unsigned long long)now, why);
}

/* ---- reading the source ------------------------------------------------------------------- */

int prolly__sync_on_fetched(void *payload, size_t index, const void *data, size_t size)
{
	fetched *f = payload;
	if (index >= f->n || f->nodes[index].data)
		return 0;
	void *copy = malloc(size ? size : 1);
	if (!copy)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory copying a %zu-byte object", size);
	memcpy(copy, data, size);
	f->nodes[index].data = copy;
	f->nodes[index].size = size;
	f->bytes += size;
	return 0;
}

void prolly__sync_fetched_dispose(fetched *f)
{
	for (size_t i = 0; f->nodes && i < f->n; i++)
		free((void *)f->nodes[i].data);
	free(f->nodes);
	memset(f, 0, sizeof(*f));
}

/* Reads ids from the source in one call (hash-checked by prolly__load_raw). */
int prolly__sync_fetch(sync_ctx *s, fetched *f, const prolly_id *ids, size_t n)
{
	memset(f, 0, sizeof(*f));
	if (!n)
		return 0;
	f->nodes = calloc(n, sizeof(*f->nodes));
	if (!f->nodes)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory reading %zu objects", n);
	f->n = n;
	for (size_t i = 0; i < n; i++)
		f->nodes[i].id = ids[i];
	s->st.read_calls++;
	return prolly__sync_side(s, s->src,
	                         prolly__load_raw(s->src, ids, n, prolly__sync_on_fetched, f));
}

/* ---- what the destination is known to hold (SY7), and the memory held (SY8) ---------------- */

int prolly__sync_know(sync_ctx *s, const prolly_id *id, const prolly_id *tree)
{
	if (prolly__idmap_get(&s->known, id))
		return 0;
	if (PROLLY__GROW(s->ktree, s->cap_known, s->n_known + 1, 16))
		return prolly_set_error(PROLLY_ENOMEM, "out of memory syncing");
	s->ktree[s->n_known++] = *tree;
	return prolly__idmap_put(&s->known, id, s->n_known);
}

void prolly__sync_note_held(sync_ctx *s)
{
	const history *h = s->hist;
	size_t n = h->index.len + h->stop.len + h->ahead.len + s->known.len + s->merge_ids;
	if (n > s->held.ids_peak)
		s->held.ids_peak = n;
	if (h->n > s->held.window_peak)
		s->held.window_peak = h->n;
}
