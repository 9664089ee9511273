/*
 * fuzz_redact.c - libFuzzer target for the redactor (prolly_redact_url, prolly_redact_message;
 * src/redact.c), with libpq as the oracle of what the password is.
 *
 * The first byte picks how the rest becomes a connection string: as it is, after
 * "postgresql://" (a URL's authority), after "postgresql://h/db?" (a URL's query), or after
 * "host=h " (key=value form); the second byte picks how a message quotes it ('...', "..." or
 * bare). The string is parsed with PQconninfoParse:
 *   - accepted, with a password or sslpassword P of 4 bytes or more (met once in the string,
 *     and holding no "***", so that no other part of it or of the redaction spells it): neither
 *     prolly_redact_url of the string nor prolly_redact_message of the message may hold P, and
 *     a redacted string that libpq still parses has no password P; the same holds for P and
 *     the outputs with percent-encoded bytes decoded, backslashes dropped and white space runs
 *     made one space (P spelled as the string spells it); nor may they show any run of 4 bytes
 *     of P that the string (or the message) holds nowhere else;
 *   - refused: nothing after a password key ("password", "sslpassword", any letter case,
 *     followed by '=') in either output but "***";
 *   - always: for the sizes 0..N (N the full output's length + 1) that may cut it differently
 *     (all up to 8, those around each "***" and the end, every 16th) the output is
 *     NUL-terminated within the size, is a prefix of the full output, and no byte past the
 *     size is written.
 */
#include "prolly.h"

#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_TEXT 1024

static const char *const prefixes[] = {"", "postgresql://", "postgresql://h/db?", "host=h "};
static const char *const quotes[] = {"'", "\"", ""};

static void fail(const char *what, const char *in, const char *out)
{
	fprintf(stderr, "%s\n  input:  %s\n  output: %s\n", what, in, out);
	abort();
}

/* The number of places needle starts in hay (overlapping ones too). */
static size_t count_in(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* src as a password may be spelled in it, into dst (as long as src at most): percent-encoded
 * bytes decoded, backslashes dropped (a quoted value's escapes), white space runs made one
 * space (a message's redaction puts it on one line). White space is libpq's (isspace in the C
 * locale), form feed and vertical tab too: the redactor writes the white space before a value
 * as a space, so a form feed in the text came out as the space a password began with. */
static void normalize(char *dst, const char *src)
{
	size_t n = 0;
	for (size_t i = 0; src[i]; i++) {
		char c = src[i];
		if (c == '%' && hex_digit(src[i + 1]) >= 0 && hex_digit(src[i + 2]) >= 0) {
			c = (char)(hex_digit(src[i + 1]) * 16 + hex_digit(src[i + 2]));
			i += 2;
		}
		if (c == '\\' || !c)
			continue;
		if (strchr(" \t\n\r\f\v", c)) {
			if (n && dst[n - 1] == ' ')
				continue;
			c = ' ';
		}
		dst[n++] = c;
	}
	dst[n] = 0;
}

/* The first run of 4 bytes of the password npw (normalized) that out shows though the text it
 * came from holds it nowhere but in the password pw (as typed; runs holding '*' are left out,
 * the "***" that hides a value spells them), or NULL. Only when pw is in text as typed, once. */
static const char *shown_run(const char *npw, const char *text, const char *pw, const char *out)
{
	static char rest[2 * MAX_TEXT + 128], nrest[2 * MAX_TEXT + 128], nout[4 * MAX_TEXT + 64];
	static char run[5];
	const char *at = strstr(text, pw);
	if (!at || count_in(text, pw) != 1)
		return NULL;
	snprintf(rest, sizeof(rest), "%.*s\x01%s", (int)(at - text), text, at + strlen(pw));
	normalize(nrest, rest);
	normalize(nout, out);
	for (size_t i = 0; npw[i] && npw[i + 1] && npw[i + 2] && npw[i + 3]; i++) {
		memcpy(run, npw + i, 4);
		run[4] = 0;
		if (!strchr(run, '*') && strstr(nout, run) && !strstr(nrest, run))
			return run;
	}
	return NULL;
}

/* Whether out shows a value after a password key: "password" or "sslpassword" (any letter
 * case) at the start or after white space, '?', '&' or a quote, then '=' (white space around
 * it allowed, as libpq skips it: a carriage return or form feed too), then anything but "***"
 * or the end. */
static int shows_password_value(const char *out)
{
	for (const char *p = out; *p; p++) {
		if (strncasecmp(p, "password", 8) != 0)
			continue;
		const char *k = p;
		if (k - out >= 3 && strncasecmp(k - 3, "ssl", 3) == 0)
			k -= 3;
		if (k > out && !strchr(" \t?&'\"", k[-1]))
			continue;
		const char *v = p + 8;
		while (*v && strchr(" \t\n\r\f\v", *v))
			v++;
		if (*v != '=')
			continue;
		v++;
		while (*v && strchr(" \t\n\r\f\v", *v))
			v++;
		if (*v && strncmp(v, "***", 3) != 0)
			return 1;
	}
	return 0;
}

/* Whether a cut at size cap is one that check_sizes tries: every size up to 8, the sizes around
 * every '*' of the full output (where a hidden value was, cut before, in or after its "***") and
 * around its end, and every 16th size. Each call costs the length of the text, so every size
 * made a run quadratic in it: most of the time of a run, at some 400 runs a second. */
static int tried_cut(const char *full, size_t len, size_t cap)
{
	if (cap <= 8 || cap + 4 >= len || cap % 16 == 0)
		return 1;
	for (size_t i = cap > 5 ? cap - 5 : 0; i < len && i <= cap + 3; i++)
		if (full[i] == '*')
			return 1;
	return 0;
}

/* The sizes 0..strlen(full) + 1 that tried_cut picks against the full output of the same call. */
static void check_sizes(const char *in, const char *message, const char *conninfo, const char *full)
{
	static char buf[MAX_TEXT * 4 + 64];
	size_t len = strlen(full);
	for (size_t cap = 0; cap <= len + 1 && cap + 8 < sizeof(buf); cap++) {
		if (!tried_cut(full, len, cap))
			continue;
		memset(buf, 'Z', cap + 8);
		size_t n = message ? prolly_redact_message(buf, cap, message, conninfo)
		                   : prolly_redact_url(buf, cap, in);
		if (cap == 0 ? n != 0 : (n >= cap || buf[n] != 0 || strlen(buf) != n))
			fail("output not NUL-terminated within its size", in, full);
		if (n && strncmp(buf, full, n) != 0)
			fail("a cut output is not a prefix of the full one", in, buf);
		for (size_t i = cap; i < cap + 8; i++)
			if (buf[i] != 'Z')
				fail("a byte written past the size", in, full);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char in[MAX_TEXT + 64], message[2 * MAX_TEXT + 128], out[4 * MAX_TEXT + 64],
	    again[4 * MAX_TEXT + 64];
	if (size < 2 || size - 2 > MAX_TEXT)
		return 0;
	const char *prefix = prefixes[data[0] % 4], *quote = quotes[data[1] % 3];
	size_t pn = strlen(prefix), body = size - 2;
	memcpy(in, prefix, pn);
	memcpy(in + pn, data + 2, body);
	in[pn + body] = 0; /* a zero byte in the body ends the string there */
	snprintf(message, sizeof(message), "could not connect to server %s%s%s: FATAL:  failed", quote,
	         in, quote);

	char *err = NULL;
	PQconninfoOption *opts = PQconninfoParse(in, &err);

	prolly_redact_url(out, sizeof(out), in);
	check_sizes(in, NULL, NULL, out);
	if (opts) {
		for (PQconninfoOption *o = opts; o->keyword; o++) {
			if (!o->val ||
			    (strcmp(o->keyword, "password") != 0 && strcmp(o->keyword, "sslpassword") != 0))
				continue;
			const char *pw = o->val;
			static char npw[MAX_TEXT + 64], nin[MAX_TEXT + 64], nout[4 * MAX_TEXT + 64];
			normalize(npw, pw);
			normalize(nin, in);
			if (strlen(pw) < 4 || strlen(npw) < 4 || strstr(npw, "***") || count_in(in, pw) > 1 ||
			    count_in(nin, npw) > 1)
				continue;
			normalize(nout, out);
			if (strstr(out, pw) || strstr(nout, npw))
				fail("prolly_redact_url shows the password", in, out);
			char *err2 = NULL;
			PQconninfoOption *re = PQconninfoParse(out, &err2);
			for (PQconninfoOption *r = re; r && r->keyword; r++)
				if (r->val && strcmp(r->keyword, o->keyword) == 0 && strcmp(r->val, pw) == 0)
					fail("the redacted string still parses to the password", in, out);
			PQconninfoFree(re);
			PQfreemem(err2);
			/* The message's own words may spell the password ("fail"), or spell it
			 * normalized ("  \\faile" is " faile", as in "FATAL:  failed"): then it is not
			 * looked for there. */
			static char nmsg[2 * MAX_TEXT + 128];
			normalize(nmsg, message);
			prolly_redact_message(again, sizeof(again), message, in);
			normalize(nout, again);
			if ((count_in(message, pw) <= 1 && strstr(again, pw)) ||
			    (count_in(nmsg, npw) <= 1 && strstr(nout, npw)))
				fail("prolly_redact_message shows the password", message, again);
			const char *run = shown_run(npw, in, pw, out);
			if (run || (run = shown_run(npw, message, pw, again)))
				fail("a run of 4 bytes of the password is shown", in, run);
		}
	} else {
		if (shows_password_value(out))
			fail("prolly_redact_url shows a value after a password key", in, out);
		if (err) {
			prolly_redact_message(again, sizeof(again), err, in);
			if (shows_password_value(again))
				fail("prolly_redact_message shows a value after a password key", err, again);
		}
	}
	prolly_redact_message(again, sizeof(again), message, in);
	if (!opts && shows_password_value(again))
		fail("prolly_redact_message shows a value after a password key", message, again);
	check_sizes(in, message, in, again);
	PQconninfoFree(opts);
	PQfreemem(err);
	return 0;
}
