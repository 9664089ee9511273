/*
 * maker.c - making an edit's new nodes on a second thread.
 *
 * Making a node from a chunker's pending items is three steps that depend on nothing but those
 * items: taking node memory (which, for memory the process has not touched yet, means the kernel
 * zeroing fresh pages), writing the encoding into it and hashing it (SHA-256). The chunker hands
 * its encoder to a maker instead (prolly__maker_submit) and goes on merging the next items with
 * the edits; a worker thread makes the nodes in the order they were handed over. The caller
 * collects them at the end of a level (prolly__maker_collect), where the parent level's entries
 * for them (last key, id, count) are first needed, and adds them to the txn on its own thread:
 * the txn's node set and the cache's pins are never touched by the worker.
 *
 * A maker is only started where the handle may use threads (not PROLLY_DB_NO_THREADS, which the
 * PostgreSQL extension's backends use); without one the chunker makes each node itself.
 *
 * Invariants:
 *   K1  tickets are handed out 0, 1, 2, ... since the last collect; the node of ticket t is
 *       made[t] after the collect.
 *   K2  a slot's encoder is the maker's from submit until its node is made; it is then left
 *       empty (buffers kept) for the next submit. At most MAKER_SLOTS encoders are in flight:
 *       a submit beyond that waits until the oldest is made.
 *   K6  tickets are claimed in order, each by exactly one thread: the worker, or the caller,
 *       which makes the next unclaimed node itself instead of sleeping whenever it has to wait
 *       (every slot in flight, or a collect). So the caller never idles while there is work,
 *       and when the worker gets no core the caller ends up making the nodes itself.
 *   K3  every node the worker made is handed to the caller by a collect, or released by
 *       prolly__maker_free: no node is lost on any error path.
 *   K4  the first failure's code and message reach the caller through the next collect.
 *   K5  the worker is woken once per MAKER_BATCH submits at most, and at a collect; the
 *       caller is woken only while it waits with nothing left to claim.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

#define MAKER_SLOTS 32
/* K5: a submit wakes a sleeping worker only once this many nodes wait: a wake-up is a system
 * call and a context switch, several microseconds on a virtual machine, which per node would
 * cost about what hashing it does. */
#define MAKER_BATCH 8

struct prolly__maker {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work; /* the worker waits for a submit or stop */
	pthread_cond_t done; /* the caller waits for a node made */
	prolly__enc slot[MAKER_SLOTS];
	uint64_t head;      /* tickets submitted since the last collect (K1) */
	uint64_t next;      /* tickets claimed, by either thread (K6) */
	uint64_t ndone;     /* nodes made */
	pnode **nodes;      /* nodes[t]: ticket t's node (NULL if it failed) */
	unsigned char *fin; /* fin[t]: ticket t's node is made */
	size_t cap;
	int caller_waiting;
	int stop;
	int rc; /* K4 */
	char msg[1024];
};

/* Claims and makes the next ticket; called and returns with the lock held. */
static void make_next(prolly__maker *m)
{
	uint64_t t = m->next++;
	prolly__enc *e = &m->slot[t % MAKER_SLOTS];
	pthread_mutex_unlock(&m->lock);
	pnode *nd = NULL;
	int rc = prolly__enc_node(&nd, e);
	prolly__enc_reset(e); /* K2 */
	pthread_mutex_lock(&m->lock);
	if (rc && !m->rc) {
		m->rc = rc;
		snprintf(m->msg, sizeof(m->msg), "%s", prolly_last_error());
	}
	m->nodes[t] = nd;
	m->fin[t] = 1;
	m->ndone++;
	if (m->caller_waiting)
		pthread_cond_signal(&m->done);
}

static void *maker_main(void *arg)
{
	prolly__maker *m = arg;
	pthread_mutex_lock(&m->lock);
	for (;;) {
		while (m->next == m->head && !m->stop)
			pthread_cond_wait(&m->work, &m->lock);
		if (m->next == m->head)
			break; /* stopped and nothing left */
		make_next(m);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* K6: the caller, which has to wait, makes the next unclaimed node, or sleeps until the worker
 * has made one. Called and returns with the lock held. */
static void help_or_wait(prolly__maker *m)
{
	if (m->next < m->head) {
		make_next(m);
		return;
	}
	m->caller_waiting = 1;
	pthread_cond_wait(&m->done, &m->lock);
	m->caller_waiting = 0;
}

int prolly__maker_start(prolly__maker **out)
{
	*out = NULL;
	prolly__maker *m = calloc(1, sizeof(*m));
	if (!m)
		return prolly_set_error(PROLLY_ENOMEM, "out of memory starting a node maker");
	for (int i = 0; i < MAKER_SLOTS; i++)
		prolly__enc_init(&m->slot[i], 0);
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->work, NULL);
	pthread_cond_init(&m->done, NULL);
	if (pthread_create(&m->thread, NULL, maker_main, m) != 0) {
		pthread_cond_destroy(&m->done);
		pthread_cond_destroy(&m->work);
		pthread_mutex_destroy(&m->lock);
		free(m);
		return 0; /* no thread: the caller makes its nodes itself */
	}
	*out = m;
	return 0;
}

int prolly__maker_submit(prolly__maker *m, prolly__enc *e)
{
	int rc = 0;
	pthread_mutex_lock(&m->lock);
	while (m->head >= MAKER_SLOTS && !m->fin[m->head - MAKER_SLOTS]) /* K2 */
		help_or_wait(m);
	size_t cap = m->cap;
	if (PROLLY__GROW(m->nodes, m->cap, (size_t)m->head + 1, 256)) {
		rc = prolly_set_error(PROLLY_ENOMEM, "out of memory making a node");
		goto out;
	}
	if (m->cap != cap) {
		unsigned char *fin = realloc(m->fin, m->cap);
		if (!fin) {
			rc = prolly_set_error(PROLLY_ENOMEM, "out of memory making a node");
			goto out;
		}
		memset(fin + cap, 0, m->cap - cap);
		m->fin = fin;
	}
	/* The slot is free (made, left empty): swap the full encoder in, an empty one out. */
	prolly__enc *s = &m->slot[m->head % MAKER_SLOTS];
	prolly__enc empty = *s;
	*s = *e;
	*e = empty;
	e->level = s->level;
	m->nodes[m->head] = NULL;
	m->head++;
	if (m->head - m->next >= MAKER_BATCH) /* K5 */
		pthread_cond_signal(&m->work);
out:
	pthread_mutex_unlock(&m->lock);
	return rc;
}

int prolly__maker_collect(prolly__maker *m, pnode ***nodes, size_t *n)
{
	pthread_mutex_lock(&m->lock);
	if (m->next < m->head)
		pthread_cond_signal(&m->work); /* K5 */
	while (m->ndone < m->head)
		help_or_wait(m);
	int rc = m->rc;
	if (rc)
		prolly_set_error(rc, "%s", m->msg); /* K4 */
	*nodes = m->nodes;
	*n = (size_t)m->head;
	if (m->head)
		memset(m->fin, 0, (size_t)m->head);
	m->head = m->next = m->ndone = 0; /* K1 */
	m->rc = 0;
	pthread_mutex_unlock(&m->lock);
	return rc;
}

void prolly__maker_free(prolly__maker *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = 1;
	pthread_cond_signal(&m->work);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);         /* it makes every node submitted before it stops */
	for (uint64_t t = 0; t < m->head; t++) /* K3: made but not collected */
		prolly__node_unref(m->nodes[t]);
	for (int i = 0; i < MAKER_SLOTS; i++)
		prolly__enc_dispose(&m->slot[i]);
	free(m->nodes);
	free(m->fin);
	pthread_cond_destroy(&m->done);
	pthread_cond_destroy(&m->work);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
