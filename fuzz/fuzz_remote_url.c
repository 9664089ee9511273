/*
 * fuzz_remote_url.c - libFuzzer target for the check of a remote's URL (prolly_remote_url_valid,
 * through the public API only), the URL a user gives `prolly remote add` and that the store then
 * keeps and copies (RM4, RM5, RM8 in src/remote.c), with libpq as the oracle of what a password
 * is. The input, cut at its first NUL byte, is the URL. For any input:
 *   - the check returns 0 or PROLLY_EINVAL, and a refusal leaves a non-empty message;
 *   - an accepted URL has 1 to 4096 bytes, no control byte (0x00-0x1f, 0x7f), and is "mem:",
 *     "lmdb:" and a path, or a connection string libpq parses with no password and no
 *     sslpassword (an empty one is none);
 *   - a refusal's message never holds a password or sslpassword of 4 bytes or more that libpq
 *     finds in the URL (met once in it, so that nothing else of the URL spells it), other
 *     than as often as the message for the URL with that password replaced by filler bytes
 *     holds it (the message's own words may spell it: "pass" in "password").
 * Never a crash, a leak or a sanitizer report.
 */
#include "prolly.h"

#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what, const char *url)
{
	fprintf(stderr, "%s: '%s' (%s)\n", what, url, prolly_last_error());
	abort();
}

static int once_in(const char *hay, const char *needle)
{
	const char *at = strstr(hay, needle);
	return at && !strstr(at + 1, needle);
}

/* The number of places needle starts in hay (overlapping ones too). */
static size_t count_in(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/* How often the message of the check of url spells pw when the one pw in url is replaced by as
 * many filler bytes: the message's own words may spell a password ("pass" in "carries a
 * password"), which is no password shown. */
static size_t count_without(const char *url, const char *pw)
{
	char *other = strdup(url);
	size_t n = strlen(pw), at;
	if (!other)
		abort();
	at = (size_t)(strstr(url, pw) - url);
	memset(other + at, strchr(pw, 'Z') ? 'Y' : 'Z', n);
	prolly_remote_url_valid(other);
	n = count_in(prolly_last_error(), pw);
	free(other);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	char *url = malloc(size + 1);
	if (!url)
		return 0;
	memcpy(url, data, size);
	url[size] = 0;
	int rc = prolly_remote_url_valid(url);
	char *message = strdup(prolly_last_error());
	size_t len = strlen(url);
	char *err = NULL;
	int pg = strncmp(url, "lmdb:", 5) != 0 && strcmp(url, "mem:") != 0;
	PQconninfoOption *opts = pg ? PQconninfoParse(url, &err) : NULL;
	if (!message)
		abort();
	if (rc != 0 && (rc != PROLLY_EINVAL || !*message))
		die("a refusal with another code or no message", url);
	if (rc == 0) {
		if (len == 0 || len > 4096)
			die("an accepted URL of a length outside 1..4096", url);
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)url[i] < 0x20 || url[i] == 0x7f)
				die("an accepted URL with a control byte", url);
		if (strcmp(url, "mem:") != 0 && strncmp(url, "lmdb:", 5) != 0 && !opts)
			die("an accepted URL that is no store's and that libpq does not parse", url);
	}
	for (PQconninfoOption *o = opts; o && o->keyword; o++) {
		if (!o->val || !*o->val ||
		    (strcmp(o->keyword, "password") != 0 && strcmp(o->keyword, "sslpassword") != 0))
			continue;
		if (rc == 0)
			die("an accepted URL in which libpq finds a password", url);
		if (strlen(o->val) >= 4 && once_in(url, o->val) &&
		    count_in(message, o->val) > count_without(url, o->val))
			die("a refusal's message shows the password", url);
	}
	PQconninfoFree(opts);
	PQfreemem(err);
	free(message);
	free(url);
	return 0;
}
