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

/* 1 if text (a store URL or connection string; NULL is "") carries a password, by the same walk
 * as prolly__redact (RX5 in redact.c): a non-empty password in a URL's user information, or a
 * password= or sslpassword= key in any letter case; else 0. */
int prolly__redact_has_password(const char *text);

#endif
