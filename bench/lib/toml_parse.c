/*
 * toml_parse.c - the TOML parser's grammar: values, arrays, inline tables, key/value lines and
 * [headers], with the table definition rules; toml_parse_buffer and toml_parse_file. The tokens
 * (strings, keys, numbers, comments, the UTF-8 check) are read by toml_scan.c.
 *
 * Values are parsed straight into nodes already attached to their table, so an error deep inside
 * an inline table or array can name the full key path.
 *
 * Table definition rules (TOML 1.0): each table has an origin -
 *   IMPLICIT  created as the parent of a [header] or of a setter's path; a later [header] may
 *             define it once;
 *   HEADER    defined by [header]; may not be defined again, nor extended by dotted keys from
 *             another section;
 *   DOTTED    created by a dotted key a.b = 1; only dotted keys of the same section (the same
 *             [header] block or inline table) may add to it; a [header] may define sub-tables
 *             below it, not it;
 *   INLINE    { ... }; closed once written.
 * Sections are numbered; dotted keys may only pass through DOTTED tables of the current section.
 */
#include "toml_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int parse_value(toml__parser *ps, toml_node *n);

static int parse_array(toml__parser *ps, toml_node *n)
{
	char fb[32];
	n->type = TOML_ARRAY;
	toml__adv(ps);
	for (;;) {
		if (toml__skip_blank(ps))
			return TOML_ERR;
		if (toml__at(ps, 0) == ']')
			break;
		toml_node *e = toml__add_kid(n, NULL);
		if (!e)
			return toml__perr(ps, "out of memory");
		e->line = ps->line;
		e->col = ps->col;
		if (parse_value(ps, e) || toml__skip_blank(ps))
			return TOML_ERR;
		if (toml__at(ps, 0) == ',') {
			toml__adv(ps);
			continue;
		}
		if (toml__at(ps, 0) == ']')
			break;
		if (toml__at(ps, 0) < 0)
			return toml__perr_at(ps, n->vline, n->vcol, "unterminated array (no closing ']')");
		return toml__perr(ps, "expected ',' or ']' in the array, found %s",
		                  toml__found(ps, fb, sizeof(fb)));
	}
	toml__adv(ps);
	return TOML_OK;
}

static int keyval(toml__parser *ps, toml_node *t, int section);

static int parse_inline_table(toml__parser *ps, toml_node *n)
{
	char fb[32];
	n->type = TOML_TABLE;
	n->origin = ORIGIN_INLINE;
	n->section = ++ps->nsections;
	toml__adv(ps);
	toml__skip_ws(ps);
	if (toml__at(ps, 0) == '}') {
		toml__adv(ps);
		return TOML_OK;
	}
	for (;;) {
		char saved[sizeof(ps->ctx)];
		memcpy(saved, ps->ctx, sizeof(saved));
		if (keyval(ps, n, n->section))
			return TOML_ERR;
		memcpy(ps->ctx, saved, sizeof(saved));
		toml__skip_ws(ps);
		if (toml__at(ps, 0) == ',') {
			toml__adv(ps);
			toml__skip_ws(ps);
			if (toml__at(ps, 0) == '}')
				return toml__perr(ps, "a trailing comma is not allowed in an inline table");
			continue;
		}
		if (toml__at(ps, 0) == '}') {
			toml__adv(ps);
			return TOML_OK;
		}
		if (toml__at_newline(ps) || toml__at(ps, 0) == '#')
			return toml__perr(ps, "an inline table must be written on one line (TOML 1.0)");
		return toml__perr(ps, "expected ',' or '}' in the inline table, found %s",
		                  toml__found(ps, fb, sizeof(fb)));
	}
}

static int parse_value(toml__parser *ps, toml_node *n)
{
	int c = toml__at(ps, 0);
	char fb[32];
	n->vline = ps->line;
	n->vcol = ps->col;
	if (c == '"' || c == '\'') {
		bench_buf b = {0};
		if (toml__parse_string(ps, &b, 1) || bench_buf_put(&b, "", 0)) {
			free(b.p);
			return b.oom ? toml__perr(ps, "out of memory") : TOML_ERR;
		}
		n->type = TOML_STRING;
		n->str = b.p;
		n->len = b.n;
		return TOML_OK;
	}
	if (c == '[' || c == '{') {
		if (ps->depth >= TOML_MAX_DEPTH)
			return toml__perr(ps, "arrays and inline tables nested more than %d deep",
			                  TOML_MAX_DEPTH);
		ps->depth++;
		int rc = c == '[' ? parse_array(ps, n) : parse_inline_table(ps, n);
		ps->depth--;
		return rc;
	}
	const char *tok = ps->p;
	size_t len = 0;
	while (toml__at(ps, len) >= 0 &&
	       (toml__is_bare_char(toml__at(ps, len)) || toml__at(ps, len) == '+' ||
	        toml__at(ps, len) == '.' || toml__at(ps, len) == ':'))
		len++;
	if (len == 0)
		return toml__perr(ps, "expected a value, found %s", toml__found(ps, fb, sizeof(fb)));
	if ((len >= 5 && tok[4] == '-' && strspn(tok, "0123456789") == 4) ||
	    (len >= 3 && tok[2] == ':' && strspn(tok, "0123456789") == 2))
		return toml__perr(ps, "dates and times are not supported ('%.*s'); use a string", (int)len,
		                  tok);
	if ((len == 4 && memcmp(tok, "true", 4) == 0) || (len == 5 && memcmp(tok, "false", 5) == 0)) {
		n->type = TOML_BOOL;
		n->b = len == 4;
	} else if ((tok[0] >= '0' && tok[0] <= '9') || tok[0] == '+' || tok[0] == '-' ||
	           (len == 3 && (memcmp(tok, "inf", 3) == 0 || memcmp(tok, "nan", 3) == 0))) {
		if (toml__parse_number(ps, n, tok, len))
			return TOML_ERR;
	} else {
		return toml__perr(ps,
		                  "invalid value '%.*s' (strings need quotes; booleans are true and false)",
		                  (int)len, tok);
	}
	toml__adv_n(ps, len);
	return TOML_OK;
}

static int origin_line(const toml_node *n)
{
	return n->line ? n->line : n->vline;
}

/* key = value into table t, whose dotted keys belong to `section`. Leaves ps->ctx naming the key
 * (for errors about what follows the value). */
static int keyval(toml__parser *ps, toml_node *t, int section)
{
	toml__keypath k = {0};
	toml_node *n = NULL, *t0 = t;
	char fb[32];
	int rc = TOML_ERR;
	if (toml__parse_key(ps, &k))
		goto cleanup;
	/* A key under a table header may not nest deeper than one dotted key can name, so that every
	 * table the writer puts in a [header] reads back (the header's parts plus the key's). */
	int depth = 0;
	for (const toml_node *p = t; p && p->parent; p = p->parent)
		depth++;
	if (depth + k.n > TOML_MAX_DEPTH) {
		toml__full_path(t0, &k, k.n, ps->ctx, sizeof(ps->ctx));
		rc = toml__perr_at(ps, k.line[0], k.col[0], "key nests tables more than %d deep",
		                   TOML_MAX_DEPTH);
		goto cleanup;
	}
	for (int i = 0; i < k.n; i++) {
		int last = i == k.n - 1;
		toml_node *c = toml__child_of(t, k.seg[i]);
		toml__full_path(t0, &k, i + 1, ps->ctx, sizeof(ps->ctx));
		if (c && last) {
			rc = toml__perr_at(ps, k.line[i], k.col[i], "duplicate key (first defined at line %d)",
			                   origin_line(c));
			goto cleanup;
		}
		if (c && c->type != TOML_TABLE) {
			rc = toml__perr_at(ps, k.line[i], k.col[i],
			                   "is already %s (line %d), so it cannot hold keys",
			                   toml__a_type(c->type), origin_line(c));
			goto cleanup;
		}
		if (c && c->origin == ORIGIN_INLINE) {
			rc = toml__perr_at(ps, k.line[i], k.col[i],
			                   "the inline table at line %d cannot be extended", origin_line(c));
			goto cleanup;
		}
		if (c && (c->origin != ORIGIN_DOTTED || c->section != section)) {
			rc = toml__perr_at(
			    ps, k.line[i], k.col[i],
			    "the table defined at line %d cannot be extended with dotted keys here",
			    origin_line(c));
			goto cleanup;
		}
		if (!c) {
			if (!(c = toml__add_kid(t, k.seg[i]))) {
				rc = toml__perr(ps, "out of memory");
				goto cleanup;
			}
			c->line = c->vline = k.line[i];
			c->col = c->vcol = k.col[i];
			if (!last) {
				c->type = TOML_TABLE;
				c->origin = ORIGIN_DOTTED;
				c->section = section;
			}
		}
		n = t = c;
	}
	toml__skip_ws(ps);
	if (toml__at(ps, 0) != '=') {
		rc = toml__perr(ps, "expected '=' after the key, found %s",
		                toml__found(ps, fb, sizeof(fb)));
		goto cleanup;
	}
	toml__adv(ps);
	toml__skip_ws(ps);
	if (parse_value(ps, n))
		goto cleanup;
	rc = TOML_OK;
cleanup:
	toml__keypath_free(&k);
	return rc;
}

static int header(toml__parser *ps, toml_node **cur)
{
	toml__keypath k = {0};
	toml_node *t = ps->doc->root;
	int line = ps->line, col = ps->col, rc = TOML_ERR;
	char fb[32];
	ps->ctx[0] = 0;
	if (toml__at(ps, 1) == '[') {
		rc = toml__perr(ps, "arrays of tables ([[...]]) are not supported");
		goto cleanup;
	}
	toml__adv(ps);
	toml__skip_ws(ps);
	if (toml__parse_key(ps, &k))
		goto cleanup;
	toml__keypath_str(&k, k.n, ps->ctx, sizeof(ps->ctx));
	if (toml__at(ps, 0) != ']') {
		rc = toml__perr(ps, "expected ']' to close the table header, found %s",
		                toml__found(ps, fb, sizeof(fb)));
		goto cleanup;
	}
	toml__adv(ps);
	for (int i = 0; i < k.n; i++) {
		int last = i == k.n - 1;
		toml_node *c = toml__child_of(t, k.seg[i]);
		if (!c) {
			if (!(c = toml__add_kid(t, k.seg[i]))) {
				rc = toml__perr(ps, "out of memory");
				goto cleanup;
			}
			c->type = TOML_TABLE;
			c->origin = last ? ORIGIN_HEADER : ORIGIN_IMPLICIT;
			c->line = c->vline = line;
			c->col = c->vcol = col;
		} else if (c->type != TOML_TABLE) {
			toml_node_path(c, ps->ctx, sizeof(ps->ctx));
			rc = toml__perr_at(ps, line, col, "is already %s (line %d), so it cannot be a table%s",
			                   toml__a_type(c->type), origin_line(c),
			                   c->type == TOML_ARRAY ? " (arrays of tables are not supported)"
			                                         : "");
			goto cleanup;
		} else if (c->origin == ORIGIN_INLINE) {
			toml_node_path(c, ps->ctx, sizeof(ps->ctx));
			rc = toml__perr_at(ps, line, col, "the inline table at line %d cannot be extended",
			                   origin_line(c));
			goto cleanup;
		} else if (last && c->origin == ORIGIN_HEADER) {
			rc = toml__perr_at(ps, line, col, "table defined twice (first at line %d)", c->line);
			goto cleanup;
		} else if (last && c->origin == ORIGIN_DOTTED) {
			rc = toml__perr_at(ps, line, col, "table already defined by dotted keys at line %d",
			                   c->line);
			goto cleanup;
		} else if (last) {
			c->origin = ORIGIN_HEADER;
			c->line = c->vline = line;
			c->col = c->vcol = col;
		}
		t = c;
	}
	*cur = t;
	t->section = ++ps->nsections;
	rc = TOML_OK;
cleanup:
	toml__keypath_free(&k);
	return rc;
}

static int parse_doc(toml__parser *ps)
{
	toml_node *cur = ps->doc->root;
	if (toml__check_utf8(ps))
		return TOML_ERR;
	if (toml__at(ps, 0) == 0xef && toml__at(ps, 1) == 0xbb && toml__at(ps, 2) == 0xbf)
		ps->p += 3; /* byte order mark */
	for (;;) {
		char what[300];
		toml__skip_ws(ps);
		int c = toml__at(ps, 0);
		if (c < 0)
			return TOML_OK;
		if (c == '#') {
			if (toml__skip_comment(ps))
				return TOML_ERR;
			continue;
		}
		if (toml__at_newline(ps)) {
			toml__eat_newline(ps);
			continue;
		}
		if (c == '[') {
			if (header(ps, &cur))
				return TOML_ERR;
			snprintf(what, sizeof(what), "the table header [%s]", ps->ctx);
		} else {
			if (keyval(ps, cur, cur->section))
				return TOML_ERR;
			snprintf(what, sizeof(what), "the value");
		}
		if (toml__end_line(ps, what))
			return TOML_ERR;
		ps->ctx[0] = 0;
	}
}

int toml_parse_buffer(toml_doc **out, const char *buf, size_t len, const char *name,
                      toml_error *err)
{
	toml_doc *doc = NULL;
	toml__parser ps;
	int rc = TOML_ERR;
	*out = NULL;
	if (!name)
		name = "<buffer>";
	if (toml_doc_new(&doc, name)) {
		toml__set_error(err, name, 0, 0, "", "out of memory");
		goto cleanup;
	}
	memset(&ps, 0, sizeof(ps));
	ps.p = buf;
	ps.end = buf + len;
	ps.line = ps.col = 1;
	ps.src = doc->root->src;
	ps.doc = doc;
	ps.err = err;
	if (parse_doc(&ps))
		goto cleanup;
	*out = doc;
	doc = NULL;
	rc = TOML_OK;
cleanup:
	toml_free(doc);
	return rc;
}

int toml_parse_file(toml_doc **out, const char *path, toml_error *err)
{
	bench_buf text = {0};
	uint64_t size = 0;
	*out = NULL;
	int rc = bench_buf_read_file(&text, path, (size_t)TOML_MAX_FILE_BYTES, &size);
	const char *why = strerror(errno);
	switch (rc) {
	case 0: rc = toml_parse_buffer(out, text.p, text.n, path, err); break;
	case BENCH_FILE_OPEN: toml__set_error(err, path, 0, 0, "", "cannot open: %s", why); break;
	case BENCH_FILE_STAT: toml__set_error(err, path, 0, 0, "", "cannot stat: %s", why); break;
	case BENCH_FILE_NOTREG: toml__set_error(err, path, 0, 0, "", "not a regular file"); break;
	case BENCH_FILE_BIG:
		toml__set_error(err, path, 0, 0, "",
		                "%llu bytes is too large (a workload file is at most %ld bytes)",
		                (unsigned long long)size, TOML_MAX_FILE_BYTES);
		break;
	case BENCH_FILE_GREW:
		toml__set_error(err, path, 0, 0, "", "grew past %ld bytes while being read",
		                TOML_MAX_FILE_BYTES);
		break;
	case BENCH_FILE_READ: toml__set_error(err, path, 0, 0, "", "read error: %s", why); break;
	default: toml__set_error(err, path, 0, 0, "", "out of memory reading the file"); break;
	}
	if (rc != 0)
		rc = TOML_ERR;
	bench_buf_free(&text);
	return rc;
}

int toml__parse_value_text(toml_doc *doc, toml_node *n, const char *text, const char *path,
                           toml_error *err)
{
	toml__parser ps;
	memset(&ps, 0, sizeof(ps));
	ps.p = text;
	ps.end = text + strlen(text);
	ps.line = ps.col = 1;
	ps.src = n->src;
	ps.doc = doc;
	ps.err = err;
	toml__copy_str(ps.ctx, sizeof(ps.ctx), path);
	ps.nsections = 1 << 28; /* inline tables here never share a section with the file's */
	if (toml__check_utf8(&ps))
		return TOML_ERR;
	toml__skip_ws(&ps);
	if (parse_value(&ps, n))
		return TOML_ERR;
	toml__skip_ws(&ps);
	if (ps.p != ps.end) {
		char fb[32];
		return toml__perr(&ps, "unexpected %s after the value", toml__found(&ps, fb, sizeof(fb)));
	}
	return TOML_OK;
}
