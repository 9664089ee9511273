/*
 * toml.c - the strict TOML reader and writer described in toml.h: errors, nodes and their paths,
 * documents, node access, toml_check_keys and toml_equal. The module's lowest file: it uses no
 * other toml*.c.
 *
 * The rest of the module (toml_int.h lists its files): the parser in toml_scan.c (tokens) and
 * toml_parse.c (grammar, table definition rules), lookup and the typed getters in toml_get.c,
 * changes in toml_edit.c, the writer in toml_write.c.
 */
#include "toml_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ------------------------------------------------------------------------------- */

void toml__copy_str(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

void toml__verror(toml_error *err, const char *file, int line, int col, const char *key,
                  const char *fmt, va_list ap)
{
	if (!err)
		return;
	toml__copy_str(err->file, sizeof(err->file), file);
	err->line = line;
	err->col = col;
	toml__copy_str(err->key, sizeof(err->key), key);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	size_t n = 0, cap = sizeof(err->text);
	err->text[0] = 0;
	if (err->file[0])
		n += (size_t)snprintf(err->text + n, cap - n, "%s:", err->file);
	if (line > 0 && n < cap)
		n += (size_t)snprintf(err->text + n, cap - n, "%d:%d:", line, col);
	if (n && n < cap)
		n += (size_t)snprintf(err->text + n, cap - n, " ");
	if (err->key[0] && n < cap)
		n += (size_t)snprintf(err->text + n, cap - n, "%s: ", err->key);
	if (n < cap)
		snprintf(err->text + n, cap - n, "%s", err->msg);
}

int toml__set_error(toml_error *err, const char *file, int line, int col, const char *key,
                    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	toml__verror(err, file, line, col, key, fmt, ap);
	va_end(ap);
	return TOML_ERR;
}

/* ---- nodes ---------------------------------------------------------------------------------- */

void toml__node_clear(toml_node *n)
{
	for (size_t i = 0; i < n->nkids; i++) {
		toml__node_clear(n->kids[i]);
		free(n->kids[i]->key);
		free(n->kids[i]);
	}
	free(n->kids);
	free(n->str);
	n->kids = NULL;
	n->nkids = n->cap = 0;
	n->str = NULL;
	n->len = 0;
}

toml_node *toml__add_kid(toml_node *parent, const char *key)
{
	toml_node *n = NULL;
	char *k = NULL;
	if (parent->nkids == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 8;
		toml_node **kids = realloc(parent->kids, cap * sizeof(*kids));
		if (!kids)
			return NULL;
		parent->kids = kids;
		parent->cap = cap;
	}
	if (key && !(k = strdup(key)))
		return NULL;
	if (!(n = calloc(1, sizeof(*n)))) {
		free(k);
		return NULL;
	}
	n->key = k;
	n->parent = parent;
	n->src = parent->src;
	parent->kids[parent->nkids++] = n;
	return n;
}

toml_node *toml__child_of(const toml_node *t, const char *key)
{
	if (!t || t->type != TOML_TABLE)
		return NULL;
	for (size_t i = 0; i < t->nkids; i++)
		if (strcmp(t->kids[i]->key, key) == 0)
			return t->kids[i];
	return NULL;
}

static int is_bare(const char *k)
{
	if (!*k)
		return 0;
	for (; *k; k++)
		if (!toml__is_bare_char((unsigned char)*k))
			return 0;
	return 1;
}

int toml__put_string(bench_buf *b, const char *s, size_t len)
{
	bench_buf_putc(b, '"');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"': bench_buf_puts(b, "\\\""); break;
		case '\\': bench_buf_puts(b, "\\\\"); break;
		case '\b': bench_buf_puts(b, "\\b"); break;
		case '\t': bench_buf_puts(b, "\\t"); break;
		case '\n': bench_buf_puts(b, "\\n"); break;
		case '\f': bench_buf_puts(b, "\\f"); break;
		case '\r': bench_buf_puts(b, "\\r"); break;
		default:
			if (c < 0x20 || c == 0x7f)
				bench_buf_printf(b, "\\u%04X", c);
			else
				bench_buf_putc(b, (char)c);
		}
	}
	return bench_buf_putc(b, '"');
}

int toml__put_key(bench_buf *b, const char *k)
{
	return is_bare(k) ? bench_buf_puts(b, k) : toml__put_string(b, k, strlen(k));
}

void toml__path_into(bench_buf *b, const toml_node *n)
{
	if (!n || !n->parent)
		return;
	toml__path_into(b, n->parent);
	if (n->parent->type == TOML_ARRAY) {
		size_t i = 0;
		while (i < n->parent->nkids && n->parent->kids[i] != n)
			i++;
		bench_buf_printf(b, "[%zu]", i);
		return;
	}
	if (b->n)
		bench_buf_putc(b, '.');
	toml__put_key(b, n->key);
}

char *toml_node_path(const toml_node *n, char *buf, size_t size)
{
	bench_buf b = {0};
	toml__path_into(&b, n);
	if (size)
		toml__copy_str(buf, size, b.oom ? "?" : b.p);
	free(b.p);
	return buf;
}

int toml_error_at(toml_error *err, const toml_node *n, const char *fmt, ...)
{
	char path[256];
	va_list ap;
	if (!err)
		return TOML_ERR;
	toml_node_path(n, path, sizeof(path));
	va_start(ap, fmt);
	toml__verror(err, n ? n->src : "", n ? n->line : 0, n ? n->col : 0, path, fmt, ap);
	va_end(ap);
	return TOML_ERR;
}

/* Like toml_error_at, but at the value's position. */
int toml__value_error(toml_error *err, const toml_node *n, const char *fmt, ...)
{
	char path[256];
	va_list ap;
	if (!err)
		return TOML_ERR;
	toml_node_path(n, path, sizeof(path));
	va_start(ap, fmt);
	toml__verror(err, n->src, n->vline, n->vcol, path, fmt, ap);
	va_end(ap);
	return TOML_ERR;
}

const char *toml__a_type(toml_type t)
{
	switch (t) {
	case TOML_TABLE: return "a table";
	case TOML_ARRAY: return "an array";
	case TOML_STRING: return "a string";
	case TOML_INT: return "an integer";
	case TOML_FLOAT: return "a float";
	case TOML_BOOL: return "a boolean";
	default: return "nothing";
	}
}

/* ---- documents ------------------------------------------------------------------------------ */

/* Interns a source name in the document; returns the doc's copy. */
const char *toml__intern(toml_doc *doc, const char *name)
{
	for (size_t i = 0; i < doc->nnames; i++)
		if (strcmp(doc->names[i], name) == 0)
			return doc->names[i];
	char **names = realloc(doc->names, (doc->nnames + 1) * sizeof(*names));
	if (!names)
		return NULL;
	doc->names = names;
	if (!(names[doc->nnames] = strdup(name)))
		return NULL;
	return names[doc->nnames++];
}

int toml_doc_new(toml_doc **out, const char *name)
{
	toml_doc *doc = calloc(1, sizeof(*doc));
	*out = NULL;
	if (!doc || !(doc->root = calloc(1, sizeof(*doc->root))) ||
	    !(doc->root->src = toml__intern(doc, name ? name : "<buffer>"))) {
		toml_free(doc);
		return TOML_ERR;
	}
	doc->root->type = TOML_TABLE;
	doc->root->origin = ORIGIN_HEADER;
	*out = doc;
	return TOML_OK;
}

void toml_free(toml_doc *doc)
{
	if (!doc)
		return;
	if (doc->root) {
		toml__node_clear(doc->root);
		free(doc->root);
	}
	for (size_t i = 0; i < doc->nnames; i++)
		free(doc->names[i]);
	free(doc->names);
	free(doc);
}
const toml_node *toml_root(const toml_doc *doc)
{
	return doc ? doc->root : NULL;
}

const char *toml_doc_name(const toml_doc *doc)
{
	return doc ? doc->root->src : NULL;
}

/* ---- node access ---------------------------------------------------------------------------- */

toml_type toml_node_type(const toml_node *n)
{
	return n ? n->type : TOML_NONE;
}

const char *toml_type_name(toml_type t)
{
	switch (t) {
	case TOML_TABLE: return "table";
	case TOML_ARRAY: return "array";
	case TOML_STRING: return "string";
	case TOML_INT: return "integer";
	case TOML_FLOAT: return "float";
	case TOML_BOOL: return "boolean";
	default: return "none";
	}
}

const char *toml_node_key(const toml_node *n)
{
	return n ? n->key : NULL;
}

const toml_node *toml_node_parent(const toml_node *n)
{
	return n ? n->parent : NULL;
}

int toml_node_line(const toml_node *n)
{
	return n ? n->line : 0;
}

int toml_node_col(const toml_node *n)
{
	return n ? n->col : 0;
}

const char *toml_node_source(const toml_node *n)
{
	return n ? n->src : NULL;
}

size_t toml_len(const toml_node *n)
{
	return n && (n->type == TOML_TABLE || n->type == TOML_ARRAY) ? n->nkids : 0;
}

const toml_node *toml_at(const toml_node *n, size_t i)
{
	return i < toml_len(n) ? n->kids[i] : NULL;
}

const toml_node *toml_child(const toml_node *table, const char *key)
{
	return toml__child_of(table, key);
}

/* Levenshtein distance, for "did you mean". */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64], prev, tmp;
	if (lb >= 64 || la >= 64)
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			tmp = row[j];
			size_t best = prev + (a[i - 1] != b[j - 1]);
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

int toml_check_keys(const toml_node *table, const char *const *allowed, toml_error *err)
{
	if (!table || table->type != TOML_TABLE)
		return TOML_OK;
	for (size_t i = 0; i < table->nkids; i++) {
		const toml_node *c = table->kids[i];
		const char *best = NULL;
		size_t best_d = (size_t)-1;
		int ok = 0;
		for (const char *const *a = allowed; *a; a++) {
			if (strcmp(*a, c->key) == 0) {
				ok = 1;
				break;
			}
			size_t d = distance(c->key, *a);
			if (d < best_d) {
				best_d = d;
				best = *a;
			}
		}
		if (ok)
			continue;
		if (best && best_d <= 2 + strlen(best) / 4)
			return toml_error_at(err, c, "unknown key (did you mean '%s'?)", best);
		return toml_error_at(err, c, "unknown key");
	}
	return TOML_OK;
}

int toml_equal(const toml_node *a, const toml_node *b)
{
	if (!a || !b)
		return a == b;
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case TOML_STRING: return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
	case TOML_INT: return a->i == b->i;
	case TOML_FLOAT:
		return (isnan(a->f) && isnan(b->f)) || (a->f == b->f && signbit(a->f) == signbit(b->f));
	case TOML_BOOL: return a->b == b->b;
	case TOML_ARRAY:
		if (a->nkids != b->nkids)
			return 0;
		for (size_t i = 0; i < a->nkids; i++)
			if (!toml_equal(a->kids[i], b->kids[i]))
				return 0;
		return 1;
	case TOML_TABLE:
		if (a->nkids != b->nkids)
			return 0;
		for (size_t i = 0; i < a->nkids; i++)
			if (!toml_equal(a->kids[i], toml__child_of(b, a->kids[i]->key)))
				return 0;
		return 1;
	default: return 1;
	}
}
