/*
 * toml_edit.c - changing a TOML document (toml.h): toml_set_* (a value at a dotted path, its
 * tables created as needed), toml_array_push_*, toml_set_value (a value written as TOML text,
 * read by the parser's toml__parse_value_text) and toml_remove.
 */
#include "toml_int.h"

#include <stdlib.h>
#include <string.h>

/* The node at path, created (with its tables) if absent; an existing value is cleared. */
static int slot(toml_doc *doc, const char *path, toml_node **out, toml_error *err)
{
	toml__keypath k;
	toml_node *t = doc->root, *c = NULL;
	int rc = TOML_ERR;
	*out = NULL;
	if (toml__split_path(path, &k, err))
		return TOML_ERR;
	for (int i = 0; i < k.n; i++) {
		int last = i == k.n - 1;
		c = toml__child_of(t, k.seg[i]);
		if (!c) {
			if (!(c = toml__add_kid(t, k.seg[i]))) {
				toml__set_error(err, doc->root->src, 0, 0, path, "out of memory");
				goto cleanup;
			}
			c->type = TOML_TABLE;
			c->origin = last ? ORIGIN_HEADER : ORIGIN_IMPLICIT;
		} else if (!last && c->type != TOML_TABLE) {
			toml__value_error(err, c, "is %s, not a table (setting '%s')", toml__a_type(c->type),
			                  path);
			goto cleanup;
		} else if (last && c->type == TOML_TABLE) {
			toml_error_at(err, c, "is a table; it cannot be replaced by a value");
			goto cleanup;
		}
		t = c;
	}
	toml__node_clear(c);
	c->src = doc->root->src;
	c->line = c->col = c->vline = c->vcol = 0;
	*out = c;
	rc = TOML_OK;
cleanup:
	toml__keypath_free(&k);
	return rc;
}

/* Gives n the type of v and its integer, float and boolean fields. */
static void copy_scalar(toml_node *n, const toml_node *v)
{
	n->type = v->type;
	n->i = v->i, n->f = v->f, n->b = v->b;
}

/* Sets the value at path to the integer, float or boolean v. */
static int set_scalar(toml_doc *doc, const char *path, const toml_node *v, toml_error *err)
{
	toml_node *n;
	if (slot(doc, path, &n, err))
		return TOML_ERR;
	copy_scalar(n, v);
	return TOML_OK;
}

int toml_set_int(toml_doc *doc, const char *path, int64_t v, toml_error *err)
{
	return set_scalar(doc, path, &(toml_node){.type = TOML_INT, .i = v}, err);
}

int toml_set_float(toml_doc *doc, const char *path, double v, toml_error *err)
{
	return set_scalar(doc, path, &(toml_node){.type = TOML_FLOAT, .f = v}, err);
}

int toml_set_bool(toml_doc *doc, const char *path, int v, toml_error *err)
{
	return set_scalar(doc, path, &(toml_node){.type = TOML_BOOL, .b = !!v}, err);
}

static int set_str(toml_node *n, const char *s)
{
	size_t len = strlen(s);
	if (!toml__valid_utf8(s, len) || !(n->str = malloc(len + 1)))
		return TOML_ERR;
	memcpy(n->str, s, len + 1);
	n->len = len;
	n->type = TOML_STRING;
	return TOML_OK;
}

int toml_set_string(toml_doc *doc, const char *path, const char *s, toml_error *err)
{
	toml_node *n;
	if (!toml__valid_utf8(s, strlen(s)))
		return toml__set_error(err, doc->root->src, 0, 0, path, "the string is not valid UTF-8");
	if (slot(doc, path, &n, err))
		return TOML_ERR;
	if (set_str(n, s)) {
		n->type = TOML_BOOL; /* leave a valid node behind */
		return toml__set_error(err, doc->root->src, 0, 0, path, "out of memory");
	}
	return TOML_OK;
}

int toml_set_array(toml_doc *doc, const char *path, toml_node **arr, toml_error *err)
{
	toml_node *n;
	if (slot(doc, path, &n, err))
		return TOML_ERR;
	n->type = TOML_ARRAY;
	*arr = n;
	return TOML_OK;
}

static toml_node *push(toml_node *arr, toml_type t)
{
	toml_node *n;
	if (!arr || arr->type != TOML_ARRAY || !(n = toml__add_kid(arr, NULL)))
		return NULL;
	n->type = t;
	return n;
}

/* Appends the integer, float or boolean v to arr. */
static int push_scalar(toml_node *arr, const toml_node *v)
{
	toml_node *n = push(arr, v->type);
	if (!n)
		return TOML_ERR;
	copy_scalar(n, v);
	return TOML_OK;
}

int toml_array_push_int(toml_node *arr, int64_t v)
{
	return push_scalar(arr, &(toml_node){.type = TOML_INT, .i = v});
}

int toml_array_push_float(toml_node *arr, double v)
{
	return push_scalar(arr, &(toml_node){.type = TOML_FLOAT, .f = v});
}

int toml_array_push_bool(toml_node *arr, int v)
{
	return push_scalar(arr, &(toml_node){.type = TOML_BOOL, .b = !!v});
}

int toml_array_push_string(toml_node *arr, const char *s)
{
	toml_node *n = push(arr, TOML_STRING);
	if (!n)
		return TOML_ERR;
	if (set_str(n, s)) {
		arr->nkids--;
		free(n);
		return TOML_ERR;
	}
	return TOML_OK;
}

/* Gives every node of a subtree the source name src. */
static void set_source(toml_node *n, const char *src)
{
	n->src = src;
	for (size_t i = 0; i < n->nkids; i++)
		set_source(n->kids[i], src);
}

int toml_set_value(toml_doc *doc, const char *path, const char *text, const char *source,
                   toml_error *err)
{
	toml_node *n, *tmp = NULL;
	int rc = TOML_ERR;
	const char *src = toml__intern(doc, source ? source : "<value>");
	if (!src)
		return toml__set_error(err, source, 0, 0, path, "out of memory");
	/* Parse into a detached node first, so a bad value leaves the document as it was. */
	if (!(tmp = calloc(1, sizeof(*tmp)))) {
		toml__set_error(err, source, 0, 0, path, "out of memory");
		goto cleanup;
	}
	tmp->src = src;
	if (toml__parse_value_text(doc, tmp, text, path, err))
		goto cleanup;
	if (slot(doc, path, &n, err))
		goto cleanup;
	copy_scalar(n, tmp);
	n->origin = tmp->origin;
	n->section = tmp->section;
	n->kids = tmp->kids, n->nkids = tmp->nkids, n->cap = tmp->cap;
	n->str = tmp->str, n->len = tmp->len;
	for (size_t i = 0; i < n->nkids; i++)
		n->kids[i]->parent = n;
	set_source(n, src);
	n->line = n->vline = 1;
	n->col = n->vcol = tmp->vcol;
	memset(tmp, 0, sizeof(*tmp));
	rc = TOML_OK;
cleanup:
	if (tmp) {
		toml__node_clear(tmp);
		free(tmp);
	}
	return rc;
}

int toml_remove(toml_doc *doc, const char *path, toml_error *err)
{
	const toml_node *n;
	int rc = toml__walk(doc->root, path, &n, err);
	if (rc)
		return rc;
	toml_node *p = n->parent;
	if (!p)
		return toml__set_error(err, doc->root->src, 0, 0, path, "cannot remove the root");
	size_t i = 0;
	while (p->kids[i] != n)
		i++;
	memmove(p->kids + i, p->kids + i + 1, (p->nkids - i - 1) * sizeof(*p->kids));
	p->nkids--;
	toml__node_clear((toml_node *)n);
	free(n->key);
	free((toml_node *)n);
	return TOML_OK;
}
