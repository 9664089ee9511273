/*
 * toml_get.c - reading values out of a TOML document (toml.h): a dotted key path looked up from
 * a table (toml__walk, toml_find), the typed getters of a node (toml_node_int, _float, _bool,
 * _string) and the typed getters by path (toml_get_*).
 *
 * A path is read with the key grammar (toml__split_path, toml_scan.c), so a."b c".d names the
 * same key as in a file.
 */
#include "toml_int.h"

#include <inttypes.h>

int toml__walk(const toml_node *t, const char *path, const toml_node **out, toml_error *err)
{
	toml__keypath k;
	int rc = TOML_OK;
	*out = NULL;
	if (toml__split_path(path, &k, err))
		return TOML_ERR;
	for (int i = 0; i < k.n; i++) {
		const toml_node *c = toml__child_of(t, k.seg[i]);
		if (!c) {
			toml__set_error(err, t->src, 0, 0, path, "is missing");
			rc = TOML_MISSING;
			goto cleanup;
		}
		if (i < k.n - 1 && c->type != TOML_TABLE) {
			rc = toml__value_error(err, c, "is %s, not a table (looking up '%s')",
			                       toml__a_type(c->type), path);
			goto cleanup;
		}
		t = c;
	}
	*out = t;
cleanup:
	toml__keypath_free(&k);
	return rc;
}

const toml_node *toml_find(const toml_node *table, const char *path)
{
	const toml_node *n;
	if (!table || table->type != TOML_TABLE || toml__walk(table, path, &n, NULL))
		return NULL;
	return n;
}

static int type_error(const toml_node *n, toml_type want, toml_error *err)
{
	char shown[80] = "";
	if (n->type == TOML_STRING)
		snprintf(shown, sizeof(shown), " (\"%.40s%s\")", n->str, n->len > 40 ? "..." : "");
	else if (n->type == TOML_INT)
		snprintf(shown, sizeof(shown), " (%" PRId64 ")", n->i);
	else if (n->type == TOML_FLOAT)
		snprintf(shown, sizeof(shown), " (%g)", n->f);
	else if (n->type == TOML_BOOL)
		snprintf(shown, sizeof(shown), " (%s)", n->b ? "true" : "false");
	return toml__value_error(err, n, "expected %s, found %s%s", toml__a_type(want),
	                         toml__a_type(n->type), shown);
}

int toml_node_int(const toml_node *n, int64_t *v, toml_error *err)
{
	if (n->type != TOML_INT)
		return type_error(n, TOML_INT, err);
	*v = n->i;
	return TOML_OK;
}

int toml_node_float(const toml_node *n, double *v, toml_error *err)
{
	if (n->type == TOML_INT) {
		*v = (double)n->i;
		return TOML_OK;
	}
	if (n->type != TOML_FLOAT)
		return type_error(n, TOML_FLOAT, err);
	*v = n->f;
	return TOML_OK;
}

int toml_node_bool(const toml_node *n, int *v, toml_error *err)
{
	if (n->type != TOML_BOOL)
		return type_error(n, TOML_BOOL, err);
	*v = n->b;
	return TOML_OK;
}

int toml_node_string(const toml_node *n, const char **s, size_t *len, toml_error *err)
{
	if (n->type != TOML_STRING)
		return type_error(n, TOML_STRING, err);
	*s = n->str;
	if (len)
		*len = n->len;
	return TOML_OK;
}

static int get(const toml_doc *doc, const char *path, toml_type want, const toml_node **n,
               toml_error *err)
{
	int rc = toml__walk(doc->root, path, n, err);
	if (rc)
		return rc;
	if (want != TOML_NONE && (*n)->type != want && !(want == TOML_FLOAT && (*n)->type == TOML_INT))
		return type_error(*n, want, err);
	return TOML_OK;
}

int toml_get_int(const toml_doc *doc, const char *path, int64_t *v, toml_error *err)
{
	const toml_node *n;
	int rc = get(doc, path, TOML_INT, &n, err);
	return rc ? rc : toml_node_int(n, v, err);
}

int toml_get_int_range(const toml_doc *doc, const char *path, int64_t min, int64_t max, int64_t *v,
                       toml_error *err)
{
	const toml_node *n;
	int64_t x;
	int rc = get(doc, path, TOML_INT, &n, err);
	if (rc || (rc = toml_node_int(n, &x, err)))
		return rc;
	if (x < min || x > max)
		return toml__value_error(
		    err, n, "%" PRId64 " is out of range (expected %" PRId64 " to %" PRId64 ")", x, min,
		    max);
	*v = x;
	return TOML_OK;
}

int toml_get_float(const toml_doc *doc, const char *path, double *v, toml_error *err)
{
	const toml_node *n;
	int rc = get(doc, path, TOML_FLOAT, &n, err);
	return rc ? rc : toml_node_float(n, v, err);
}

int toml_get_bool(const toml_doc *doc, const char *path, int *v, toml_error *err)
{
	const toml_node *n;
	int rc = get(doc, path, TOML_BOOL, &n, err);
	return rc ? rc : toml_node_bool(n, v, err);
}

int toml_get_string(const toml_doc *doc, const char *path, const char **s, toml_error *err)
{
	const toml_node *n;
	int rc = get(doc, path, TOML_STRING, &n, err);
	return rc ? rc : toml_node_string(n, s, NULL, err);
}

int toml_get_table(const toml_doc *doc, const char *path, const toml_node **t, toml_error *err)
{
	return get(doc, path, TOML_TABLE, t, err);
}

int toml_get_array(const toml_doc *doc, const char *path, const toml_node **a, toml_error *err)
{
	return get(doc, path, TOML_ARRAY, a, err);
}
