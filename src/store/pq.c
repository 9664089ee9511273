/*
 * pq.c - loads libpq at the first use of a PostgreSQL store or connection string (pq.h: why, and
 * invariants PQ1-PQ2).
 */
#define PROLLY_PQ_LOADER
#include "pq.h"

#include "store_int.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

prolly__pq_api prolly__pq;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[512]; /* empty: loaded; set once, read only after the once */

/* dlopen of NAME, or NULL with why not in why[0..cap). */
static void *open_lib(const char *name, char *why, size_t cap)
{
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(why, cap,
		         "%s cannot be loaded (%s): PostgreSQL stores need libpq 14 or newer (on "
		         "Debian the package libpq5)",
		         name, e ? e : "no reason given");
	}
	return h;
}

/* Opens NAME and fills the table, or writes why not into failure. */
static void load_from(const char *name)
{
	void *h = open_lib(name, failure, sizeof(failure));
	void *fn;
	if (!h)
		return;
#define PROLLY_PQ_RESOLVE(f)                                                                       \
	if (!(fn = dlsym(h, #f))) {                                                                    \
		snprintf(failure, sizeof(failure),                                                         \
		         "%s has no %s: PostgreSQL stores need libpq 14 or newer", name, #f);              \
		dlclose(h);                                                                                \
		return;                                                                                    \
	}                                                                                              \
	memcpy(&prolly__pq.f, &fn, sizeof(fn));
	PROLLY_PQ_FUNCS(PROLLY_PQ_RESOLVE)
#undef PROLLY_PQ_RESOLVE
	/* h is never closed (PQ2): libpq's results and connections live as long as the process */
}

static void load_once(void)
{
	load_from(PROLLY_PQ_SONAME);
}

/* 1 if the table is filled; else 0 with why not in why[0..cap). */
static int ready(char *why, size_t cap)
{
#ifdef PROLLY_TEST_HOOKS
	/* Tests name a library that is not there to see the refusal: test programs link libpq, so
	 * the real one is always found. */
	const char *name = getenv("PROLLY_TEST_LIBPQ");
	void *h = name && name[0] ? open_lib(name, why, cap) : NULL;
	if (name && name[0] && !h)
		return 0;
	if (h)
		dlclose(h);
#endif
	pthread_once(&once, load_once);
	if (failure[0])
		snprintf(why, cap, "%s", failure);
	return !failure[0];
}

int prolly__pq_ready(void)
{
	char why[sizeof(failure)];
	return ready(why, sizeof(why));
}

int prolly__pq_load(void)
{
	char why[sizeof(failure)];
	return ready(why, sizeof(why)) ? 0 : prolly_set_error(PROLLY_EUNSUPPORTED, "postgres: %s", why);
}
