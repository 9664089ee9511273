/*
 * redact.h - hiding passwords in store URLs, connection strings and messages (src/redact.c; the
 * rules are at the top of that file). The public face is prolly_redact_url in prolly.h.
 */
#ifndef PROLLY_REDACT_H
#define PROLLY_REDACT_H

#include <stddef.h>

/* Copies text into out (cap bytes; always NUL-terminated when cap > 0, cut to fit) with every
 * password hidden: each of the n_secrets strings of secrets (NULL or empty ones ignored), a URL's
 * user-information password, and the value of every KEY=VALUE whose key may hold one. With
 * one_line, newlines and tabs become spaces and trailing white space goes. Returns strlen(out).
 * text NULL is "". */
size_t prolly__redact(char *out, size_t cap, const char *text, const char *const *secrets,
                      size_t n_secrets, int one_line);

#endif
