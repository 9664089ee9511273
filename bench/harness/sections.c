/*
 * sections.c - the suites' own workload sections: a suite with a key list (h_suite.keys, see
 * hw_key in harness.h) owns the table [NAME] of the workload file.
 *
 *   reading   every key of the list, in list order, first from the key's default (its TOML
 *             text `def`, read by the same rules as the file, so a bad default fails like a bad
 *             file: "default of NAME.KEY: ...") and then from the document; a key without a
 *             default must be in the file. The table's own keys are checked against the list
 *             ("did you mean"), values by kind: type, range [min, max], names. Errors name file,
 *             line and key (toml_error), as for the harness's own tables.
 *   storage   one zeroed block of config_size bytes per suite (hw_workload.sections[i], i the
 *             suite's index in the table), the key's value at its offset: int (BOOL), uint64_t
 *             (U64), double (FLOAT), hw_u64_list (U64_LIST), unsigned index (NAME), unsigned bit
 *             mask (NAME_LIST).
 *   writing   the resolved document holds the section with every key, in list order; names as
 *             strings, name lists in the order of `names` (canonical, so the config hash depends
 *             on the values only). The TOML writer keeps no per-key comments: the keys' `help`
 *             lines go into the resolved file's header comment instead (hw__sections_help).
 */
#include "workload_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define KEYN 256 /* "NAME.KEY" */

const h_suite *const *hw__suites(const hw_workload *w)
{
	return w->suites ? w->suites : h_suites;
}

static int owns_section(const h_suite *s)
{
	return s->keys != NULL;
}

void hw__section_names(const hw_workload *w, const char **list, int *n, int max)
{
	const h_suite *const *t = hw__suites(w);
	for (size_t i = 0; t[i]; i++)
		if (owns_section(t[i]) && *n < max)
			list[(*n)++] = t[i]->name;
}

static const hw_key *find_key(const h_suite *s, const char *name)
{
	for (const hw_key *k = s->keys; k->name; k++)
		if (strcmp(k->name, name) == 0)
			return k;
	return NULL;
}

int hw__section_key(const hw_workload *w, const char *key)
{
	const h_suite *const *t = hw__suites(w);
	for (size_t i = 0; t[i]; i++) {
		size_t n = strlen(t[i]->name);
		if (owns_section(t[i]) && strncmp(key, t[i]->name, n) == 0 && key[n] == '.' &&
		    find_key(t[i], key + n + 1))
			return 1;
	}
	return 0;
}

/* The key names of s as a NULL-terminated array (malloc'd), or NULL on no memory. */
static const char **key_names(const h_suite *s)
{
	size_t n = 0;
	while (s->keys[n].name)
		n++;
	const char **v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; v && i < n; i++)
		v[i] = s->keys[i].name;
	return v;
}

int hw__section_unknown(const hw_workload *w, const toml_doc *tmp, toml_error *err)
{
	const h_suite *const *t = hw__suites(w);
	for (size_t i = 0; t[i]; i++) {
		const toml_node *tab = toml_find(toml_root(tmp), t[i]->name);
		if (!owns_section(t[i]) || toml_node_type(tab) != TOML_TABLE)
			continue;
		const char **names = key_names(t[i]);
		int bad = names && toml_check_keys(tab, names, err);
		free(names);
		if (bad)
			return 1;
	}
	return 0;
}

static int count_names(const char *const *names)
{
	int n = 0;
	while (names && names[n])
		n++;
	return n;
}

/* An integer bound of a U64 key: [0, INT64_MAX]. */
static int64_t bound(double x)
{
	if (!(x > 0))
		return 0;
	if (x >= 9.2e18)
		return INT64_MAX;
	return (int64_t)x;
}

/* Reads one key of s at path from d into cfg (a missing key leaves the value). TOML_OK,
 * TOML_MISSING or -1. */
static int read_key(const toml_doc *d, const char *path, const hw_key *k, unsigned char *cfg,
                    toml_error *err)
{
	void *p = cfg + k->offset;
	const toml_node *n = toml_find(toml_root(d), path);
	if (!n)
		return TOML_MISSING;
	switch (k->kind) {
	case HW_K_BOOL: return toml_get_bool(d, path, (int *)p, err) == TOML_ERR ? -1 : TOML_OK;
	case HW_K_U64: {
		int64_t v;
		if (toml_get_int_range(d, path, bound(k->min), bound(k->max), &v, err) != TOML_OK)
			return -1;
		*(uint64_t *)p = (uint64_t)v;
		return TOML_OK;
	}
	case HW_K_FLOAT: return hw__get_float(d, path, k->min, k->max, (double *)p, err) ? -1 : TOML_OK;
	case HW_K_U64_LIST: {
		hw_u64_list *l = p;
		return hw__get_int_list(d, path, bound(k->min), bound(k->max), l->v, &l->n, err) ? -1
		                                                                                 : TOML_OK;
	}
	case HW_K_NAME: {
		const char *s;
		int nn = count_names(k->names);
		if (toml_node_string(n, &s, NULL, err))
			return -1;
		int i = hw__name_index(k->names, nn, s);
		if (i >= 0) {
			*(unsigned *)p = (unsigned)i;
			return TOML_OK;
		}
		char all[512] = "";
		size_t used = 0;
		for (int j = 0; j < nn && used < sizeof(all); j++)
			used += (size_t)snprintf(all + used, sizeof(all) - used, "%s\"%s\"", j ? ", " : "",
			                         k->names[j]);
		return toml_error_at(err, n, "unknown %s '%.64s' (expected one of: %s)", k->name, s, all);
	}
	case HW_K_NAME_LIST:
		return hw__get_name_list(d, path, k->names, count_names(k->names), k->name, (unsigned *)p,
		                         err)
		           ? -1
		           : TOML_OK;
	}
	return toml_error_at(err, n, "key kind %d is not known to this harness", (int)k->kind);
}

/* A key list the harness cannot hold: a programmer's error, reported like a bad file. */
static int check_keys(const h_suite *s, toml_error *err)
{
	if (s->config_size == 0)
		return hw__errorf(err, s->name, "", "the suite lists keys but has no config_size");
	for (const hw_key *k = s->keys; k->name; k++) {
		size_t need = k->kind == HW_K_BOOL       ? sizeof(int)
		              : k->kind == HW_K_U64      ? sizeof(uint64_t)
		              : k->kind == HW_K_FLOAT    ? sizeof(double)
		              : k->kind == HW_K_U64_LIST ? sizeof(hw_u64_list)
		                                         : sizeof(unsigned);
		if (k->offset + need > s->config_size)
			return hw__errorf(err, s->name, k->name, "the key lies outside the config struct");
		if ((k->kind == HW_K_NAME || k->kind == HW_K_NAME_LIST) &&
		    (count_names(k->names) == 0 || count_names(k->names) > 32))
			return hw__errorf(err, s->name, k->name, "a name key needs 1 to 32 names");
		if (strlen(s->name) + strlen(k->name) + 2 > KEYN)
			return hw__errorf(err, s->name, k->name, "the key is too long");
	}
	return 0;
}

/* The defaults of s into cfg, each read from its TOML text as a file's value would be. */
static int read_defaults(const h_suite *s, unsigned char *cfg, toml_error *err)
{
	toml_doc *def = NULL;
	char path[KEYN], src[KEYN + 16];
	int rc = -1;
	if (toml_doc_new(&def, s->name))
		return hw__errorf(err, s->name, "", "out of memory");
	for (const hw_key *k = s->keys; k->name; k++) {
		if (!k->def)
			continue;
		snprintf(path, sizeof(path), "%s.%s", s->name, k->name);
		snprintf(src, sizeof(src), "default of %s", path);
		if (toml_set_value(def, path, k->def, src, err) || read_key(def, path, k, cfg, err) < 0)
			goto cleanup;
	}
	rc = 0;
cleanup:
	toml_free(def);
	return rc;
}

static int read_section(const h_suite *s, unsigned char *cfg, const toml_doc *d, toml_error *err)
{
	const toml_node *t = NULL;
	char path[KEYN];
	if (check_keys(s, err) || read_defaults(s, cfg, err))
		return -1;
	int rc = toml_get_table(d, s->name, &t, err);
	if (rc == TOML_ERR)
		return -1;
	if (rc == TOML_OK) {
		const char **names = key_names(s);
		if (!names)
			return hw__errorf(err, s->name, "", "out of memory");
		rc = toml_check_keys(t, names, err);
		free(names);
		if (rc)
			return -1;
	}
	for (const hw_key *k = s->keys; k->name; k++) {
		snprintf(path, sizeof(path), "%s.%s", s->name, k->name);
		int r = read_key(d, path, k, cfg, err);
		if (r < 0)
			return -1;
		if (r == TOML_MISSING && !k->def)
			return hw__errorf(err, toml_doc_name(d), path,
			                  "is missing (the %s suite has no default for it)", s->name);
	}
	return 0;
}

/* The suite's check of its values together; the error points at the first key involved that
 * the file holds (else at the section, or the file). */
static int check_section(const h_suite *s, const void *cfg, const toml_doc *d, toml_error *err)
{
	const char *at[2] = {NULL, NULL};
	char msg[400] = "", path[KEYN];
	if (!s->check || s->check(cfg, at, msg, sizeof(msg)) == 0)
		return 0;
	snprintf(path, sizeof(path), "%s%s%s", s->name, at[0] ? "." : "", at[0] ? at[0] : "");
	if (at[1] && !toml_find(toml_root(d), path)) {
		char other[KEYN];
		snprintf(other, sizeof(other), "%s.%s", s->name, at[1]);
		if (toml_find(toml_root(d), other))
			memcpy(path, other, sizeof(path));
	}
	return hw__fail_at(err, d, path, "%s", msg);
}

int hw__sections_read(hw_workload *v, const toml_doc *d, toml_error *err)
{
	const h_suite *const *t = hw__suites(v);
	for (size_t i = 0; t[i]; i++) {
		if (!owns_section(t[i]))
			continue;
		if (i >= HW_MAX_SUITES)
			return hw__errorf(err, t[i]->name, "", "more than %d suites", HW_MAX_SUITES);
		if (!(v->sections[i] = calloc(1, t[i]->config_size ? t[i]->config_size : 1)))
			return hw__errorf(err, t[i]->name, "", "out of memory");
		if (read_section(t[i], v->sections[i], d, err) ||
		    check_section(t[i], v->sections[i], d, err))
			return -1;
	}
	return 0;
}

static int build_key(toml_doc *d, const char *path, const hw_key *k, const unsigned char *cfg)
{
	const void *p = cfg + k->offset;
	toml_node *a;
	switch (k->kind) {
	case HW_K_BOOL: return toml_set_bool(d, path, *(const int *)p, NULL);
	case HW_K_U64: return toml_set_int(d, path, (int64_t) * (const uint64_t *)p, NULL);
	case HW_K_FLOAT: return toml_set_float(d, path, *(const double *)p, NULL);
	case HW_K_U64_LIST: {
		const hw_u64_list *l = p;
		if (toml_set_array(d, path, &a, NULL))
			return -1;
		for (int i = 0; i < l->n; i++)
			if (toml_array_push_int(a, (int64_t)l->v[i]))
				return -1;
		return 0;
	}
	case HW_K_NAME: {
		unsigned i = *(const unsigned *)p;
		return i < (unsigned)count_names(k->names) ? toml_set_string(d, path, k->names[i], NULL)
		                                           : -1;
	}
	case HW_K_NAME_LIST: {
		unsigned m = *(const unsigned *)p;
		if (toml_set_array(d, path, &a, NULL))
			return -1;
		for (int i = 0; i < count_names(k->names); i++)
			if ((m & 1u << i) && toml_array_push_string(a, k->names[i]))
				return -1;
		return 0;
	}
	}
	return -1;
}

int hw__sections_build(toml_doc *d, const hw_workload *v)
{
	const h_suite *const *t = hw__suites(v);
	char path[KEYN];
	for (size_t i = 0; t[i] && i < HW_MAX_SUITES; i++) {
		if (!owns_section(t[i]) || !v->sections[i])
			continue;
		for (const hw_key *k = t[i]->keys; k->name; k++) {
			snprintf(path, sizeof(path), "%s.%s", t[i]->name, k->name);
			if (build_key(d, path, k, v->sections[i]))
				return -1;
		}
	}
	return 0;
}

void hw__sections_free(hw_workload *v)
{
	for (size_t i = 0; i < HW_MAX_SUITES; i++) {
		free(v->sections[i]);
		v->sections[i] = NULL;
	}
}

void hw__sections_help(const hw_workload *w, bench_buf *b)
{
	const h_suite *const *t = hw__suites(w);
	int any = 0;
	for (size_t i = 0; t[i]; i++) {
		if (!owns_section(t[i]))
			continue;
		for (const hw_key *k = t[i]->keys; k->name; k++) {
			if (!any)
				bench_buf_puts(b, "\nThe suites' own keys:");
			any = 1;
			bench_buf_printf(b, "\n  %s.%s: %s", t[i]->name, k->name, k->help ? k->help : "");
		}
	}
}

const void *hw_section(const hw_workload *w, const h_suite *s)
{
	const h_suite *const *t = hw__suites(w);
	for (size_t i = 0; t[i] && i < HW_MAX_SUITES; i++)
		if (t[i] == s)
			return w->sections[i];
	return NULL;
}

int hw_suite_enabled(const hw_workload *w, const h_suite *s)
{
	const unsigned char *c;
	if (s->enabled)
		return s->enabled(w);
	c = hw_section(w, s);
	for (const hw_key *k = s->keys; c && k && k->name; k++)
		if (k->kind == HW_K_BOOL && strcmp(k->name, "enabled") == 0)
			return *(const int *)(const void *)(c + k->offset) != 0;
	return 0;
}
