/*
 * workload_int.h - what workload.c, workload_read.c and sections.c (the suites' own [NAME]
 * tables) share. Not for the suites: they see harness.h only.
 */
#ifndef BENCH_HARNESS_WORKLOAD_INT_H
#define BENCH_HARNESS_WORKLOAD_INT_H

#include "buf.h"
#include "harness.h"

/* ---- workload_read.c: typed reads; a missing key leaves *out (the default) as it is ---------- */

/* Fills err for a problem with no node to point at: "file: key: msg"; returns -1. */
int hw__errorf(toml_error *err, const char *file, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* An error about the value at path in doc: at its node if it is there, else naming the file;
 * returns -1. */
int hw__fail_at(toml_error *err, const toml_doc *doc, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* An integer in [min, max] (as int64_t, uint64_t or uint32_t); a boolean. 0, or -1 with err. */
int hw__get_i64(const toml_doc *d, const char *path, int64_t min, int64_t max, int64_t *out,
                toml_error *err);
int hw__get_u64(const toml_doc *d, const char *path, int64_t min, int64_t max, uint64_t *out,
                toml_error *err);
int hw__get_u32(const toml_doc *d, const char *path, int64_t min, int64_t max, uint32_t *out,
                toml_error *err);
int hw__get_bool(const toml_doc *d, const char *path, int *out, toml_error *err);
/* hw__get_int_list in [1, max] into uint32_t; *n untouched when the key is missing. */
int hw__get_u32_list(const toml_doc *d, const char *path, int64_t max, uint32_t *out, int *n,
                     toml_error *err);
/* The index of s in names[0..n), or -1. */
int hw__name_index(const char *const *names, int n, const char *s);
/* A table at path: TOML_OK with *t (checked against allowed keys), TOML_MISSING, or -1. */
int hw__get_table(const toml_doc *d, const char *path, const char *const *allowed,
                  const toml_node **t, toml_error *err);
/* A float in [min, max]. */
int hw__get_float(const toml_doc *d, const char *path, double min, double max, double *out,
                  toml_error *err);
/* A list of distinct integers in [min, max], 1 to HW_MAX_LIST of them. */
int hw__get_int_list(const toml_doc *d, const char *path, int64_t min, int64_t max, uint64_t *out,
                     int *n, toml_error *err);
/* A list of distinct names from names[0..n) as a bit mask; `what` names an entry in errors. */
int hw__get_name_list(const toml_doc *d, const char *path, const char *const *names, int n,
                      const char *what, unsigned *mask, toml_error *err);

/* ---- sections.c ----------------------------------------------------------------------------- */

/* The suite table of w (w->suites, or h_suites). */
const h_suite *const *hw__suites(const hw_workload *w);
/* Appends the names of the suites that own a section to list[*n..max) (root keys). */
void hw__section_names(const hw_workload *w, const char **list, int *n, int max);
/* Non-zero if dotted key is NAME.KEY of a suite section. */
int hw__section_key(const hw_workload *w, const char *key);
/* For an unknown key's error: checks each suite section of tmp against its keys (the "did you
 * mean" error); non-zero when one failed (err filled). */
int hw__section_unknown(const hw_workload *w, const toml_doc *tmp, toml_error *err);
/* Validates every suite section of d into v->sections (allocated; defaults first). v->suites
 * says the table. On failure v->sections may hold allocations: hw__sections_free. */
int hw__sections_read(hw_workload *v, const toml_doc *d, toml_error *err);
/* Writes every section of v into d, keys in list order. */
int hw__sections_build(toml_doc *d, const hw_workload *v);
void hw__sections_free(hw_workload *v);
/* Comment lines ("NAME.KEY: help") of every section key for the resolved file's header. */
void hw__sections_help(const hw_workload *w, bench_buf *b);

#endif
