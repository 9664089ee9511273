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
 *   K2  a slot's encoder is the caller's from submit until the worker has made its node; the
 *       worker then leaves it empty (buffers kept) for the next submit. At most MAKER_SLOTS
 *       encoders are in flight: a submit beyond that waits for the oldest.
 *   K3  every node the worker made is handed to the caller by a collect, or released by
 *       prolly__maker_free: no node is lost on any error path.
 *   K4  the first failure's code and message reach the caller through the next collect.
 *   K5  the worker is woken once per MAKER_BATCH submits at most, and whenever the caller
 *       waits for it (collect, or every slot in flight); the caller is woken only when what it
 *       waits for is done (with every slot in flight: half of them), not after every node.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

#define MAKER_SLOTS 32
/* K5: a submit wakes a sleeping worker only once this many nodes wait (or a collect or a full
 * set of slots does): a wake-up is a system call and a context switch, several microseconds on
 * a virtual machine, which per node would cost about what hashing it does. */
#define MAKER_BATCH 8

struct prolly__maker {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work; /* the worker waits for a submit or stop */
	pthread_cond_t done; /* the caller waits for the worker's progress */
	prolly__enc slot[MAKER_SLOTS];
	uint64_t head; /* submitted since the last collect (K1) */
	uint64_t made; /* made by the worker since the last collect */
	pnode **nodes; /* nodes[t]: ticket t's node (NULL if it failed) */
	size_t cap;
	uint64_t want; /* the caller sleeps until made >= want (K5); 0: it does not wait */
	int stop;
	int rc;         /* K4 */
	char msg[1024];
};

static void *maker_main(void *arg)
{
	prolly__maker *m = arg;
	pthread_mutex_lock(&m->lock);
	for (;;) {
		while (m->made == m->head && !m->stop)
			pthread_cond_wait(&m->work, &m->lock);
		if (m->made == m->head)
			break; /* stopped and nothing left */
		uint64_t t = m->made;
		prolly__enc *e = &m->slot[t % MAKER_SLOTS];
		int grow = PROLLY__GROW(m->nodes, m->cap, (size_t)t + 1, 256);
		pthread_mutex_unlock(&m->lock);
		pnode *nd = NULL;
		int rc = grow ? prolly_set_error(PROLLY_ENOMEM, "out of memory making a node")
		              : prolly__enc_node(&nd, e);
		prolly__enc_reset(e); /* K2 */
		pthread_mutex_lock(&m->lock);
		if (rc && !m->rc) {
			m->rc = rc;
			snprintf(m->msg, sizeof(m->msg), "%s", prolly_last_error());
		}
		if (!grow)
			m->nodes[t] = nd;
		else
			prolly__node_unref(nd);
		m->made = t + 1;
		if (m->want && m->made >= m->want) /* K5 */
			pthread_cond_signal(&m->done);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
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

uint64_t prolly__maker_submit(prolly__maker *m, prolly__enc *e)
{
	pthread_mutex_lock(&m->lock);
	if (m->head - m->made == MAKER_SLOTS) { /* K2; K5: then let the worker catch up by half */
		m->want = m->head - MAKER_SLOTS / 2;
		pthread_cond_signal(&m->work);
		while (m->made < m->want)
			pthread_cond_wait(&m->done, &m->lock);
		m->want = 0;
	}
	uint64_t t = m->head;
	pthread_mutex_unlock(&m->lock);
	/* The slot is free (made, left empty): swap the full encoder in, an empty one out. */
	prolly__enc *s = &m->slot[t % MAKER_SLOTS];
	prolly__enc empty = *s;
	*s = *e;
	*e = empty;
	e->level = s->level;
	pthread_mutex_lock(&m->lock);
	m->head = t + 1;
	if (m->head - m->made >= MAKER_BATCH) /* K5 */
		pthread_cond_signal(&m->work);
	pthread_mutex_unlock(&m->lock);
	return t;
}

int prolly__maker_collect(prolly__maker *m, pnode ***nodes, size_t *n)
{
	pthread_mutex_lock(&m->lock);
	if (m->made != m->head) {
		m->want = m->head;
		pthread_cond_signal(&m->work); /* K5 */
		while (m->made != m->head)
			pthread_cond_wait(&m->done, &m->lock);
		m->want = 0;
	}
	int rc = m->rc;
	if (rc)
		prolly_set_error(rc, "%s", m->msg); /* K4 */
	*nodes = m->nodes;
	*n = (size_t)m->head;
	m->head = m->made = 0; /* K1 */
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
	pthread_join(m->thread, NULL);
	for (uint64_t t = 0; t < m->made; t++) /* K3: made but not collected */
		prolly__node_unref(m->nodes[t]);
	for (int i = 0; i < MAKER_SLOTS; i++)
		prolly__enc_dispose(&m->slot[i]);
	free(m->nodes);
	pthread_cond_destroy(&m->done);
	pthread_cond_destroy(&m->work);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
