/*
 * store_conformance.h - the behaviour every prolly_store must show, as one reusable suite.
 *
 * A backend's test calls store_conformance_run() with a function that opens a fresh, empty store
 * (a new temporary directory, a new database schema, ...). Each case gets its own store and
 * closes it with prolly_store_close(). The suite prints one TAP line per case,
 *
 *   ok N - LABEL: CASE          or          not ok N - LABEL: CASE
 *
 * with N continuing from *passed + *failed (so several runs in one program number on), and
 * diagnostics as "# ..." lines. Optional functions (gc, stat) that a store leaves NULL make their
 * cases report "ok N - LABEL: CASE # SKIP ...".
 */
#ifndef STORE_CONFORMANCE_H
#define STORE_CONFORMANCE_H

#include "prolly.h"

/* Opens a fresh, empty store, or returns NULL (the case then fails, printing prolly_last_error). */
typedef prolly_store *(*store_open_fresh_fn)(void *ctx);

/* Runs every case. Adds to *passed and *failed; returns the number of cases that failed in this
 * run. */
int store_conformance_run(const char *label, store_open_fresh_fn open_fresh, void *ctx, int *passed,
                          int *failed);

#endif
