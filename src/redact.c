/*
 * redact.c - the one redactor of store URLs, libpq connection strings and the messages that
 * quote them (the CLI, the benchmark harness and the PostgreSQL store all use it; public as
 * prolly_redact_url and prolly_redact_message).
 *
 * What is hidden (replaced by "***"):
 *   RX1 every occurrence of a secret the caller knows (the password and sslpassword the store
 *       parsed out of its connection string), byte for byte;
 *   RX2 the password of a URL's user information: "SCHEME://USER:SECRET@HOST", any scheme, in
 *       any letter case, when a ':' comes before the first '@'; the secret runs to the last
 *       '@' of the authority, which ends where libpq ends it, at '/' (a password may hold '?',
 *       '#', quotes and spaces), or with one_line (a message) also at '?', '#', white space or
 *       '"' (libpq's messages quote a URL so); the user name before the ':' is walked as any
 *       other text (RX1, RX3 apply there);
 *   RX3 the value of every KEY=VALUE whose KEY is not one of libpq's keywords known to hold no
 *       secret (show_keywords below, matched exactly, as libpq matches them): password,
 *       sslpassword, and any misspelling ("PASSWORD", "passwd", "pass-word", "'password'") or
 *       unknown keyword, which libpq refuses by name and which may well hold a password; in a
 *       URL's query KEY is looked up percent-decoded, as libpq does ("pass%77ord" is password).
 *       KEY starts the text or follows white space, '?', '&', '(', ',' or a quote, holds a
 *       letter, digit or '_', does not start with '-', and runs to '=' or to a byte that ends a
 *       URL's part (":/?&@(,"); white space may come before the '=', in a URL's query too
 *       (libpq refuses "password " there by name). In a URL's query (after '?' or '&') VALUE
 *       ends at '&', as libpq ends it (with one_line also at '#', white space or a quote); in a
 *       connection string it is 'quoted, with \ escapes' or runs to the next KEY= (an unquoted
 *       password with a space in it is hidden whole), and white space around '=' is kept;
 *       an unquoted value that is one of the RX1 secrets is hidden alone (secret_value_len),
 *       so that a message that quotes the connection string keeps what follows it. In a URL
 *       as typed that libpq takes for one (url_query_start), a value before its query ends
 *       at the query's '?' and every value after it at '&' only.
 *   RX4 without one_line (a URL or connection string as the user typed it): the value after a
 *       word naming a password ("password", "passwd", "pwd", any word holding "pass" but
 *       passfile) written with white space and no '=' ("password secret"), which libpq refuses.
 *   RX5 a password is carried (prolly__redact_has_password, which refuses it where it would be
 *       stored: a remote's URL) when RX2 finds a non-empty one, or RX3 a key password or
 *       sslpassword in any letter case, in a connection string or a URL's query.
 * With one_line, newlines and tabs become single spaces and trailing white space is dropped
 * (libpq's messages span lines).
 *
 * prolly_redact_message (libpq's and the server's messages) applies RX1 to the password and
 * sslpassword of the connection string, to a URL's user-information password as typed and to
 * the values of its query's password and sslpassword as typed (query_secrets), RX2 and RX3 on
 * one line; and when the connection string
 * does not parse, first hides the quoted pieces of the message that may come from it
 * (scrub_parse_error). Before either, RX6: a piece of the message that is the connection string
 * cut short is hidden from its first secret byte on (hide_quoted_conninfo).
 */
#include "store/redact.h"
#include "store/pq.h"

#include "prolly.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* libpq's connection keywords (PostgreSQL 17) whose values are not secrets, and "ssl" (which a
 * URL's query may use). */
static const char *const show_keywords[] = {"application_name",
                                            "channel_binding",
                                            "client_encoding",
                                            "connect_timeout",
                                            "dbname",
                                            "fallback_application_name",
                                            "gssdelegation",
                                            "gssencmode",
                                            "gsslib",
                                            "host",
                                            "hostaddr",
                                            "keepalives",
                                            "keepalives_count",
                                            "keepalives_idle",
                                            "keepalives_interval",
                                            "load_balance_hosts",
                                            "options",
                                            "passfile",
                                            "port",
                                            "replication",
                                            "require_auth",
                                            "requirepeer",
                                            "requiressl",
                                            "service",
                                            "ssl",
                                            "ssl_max_protocol_version",
                                            "ssl_min_protocol_version",
                                            "sslcert",
                                            "sslcertmode",
                                            "sslcompression",
                                            "sslcrl",
                                            "sslcrldir",
                                            "sslkey",
                                            "sslmode",
                                            "sslnegotiation",
                                            "sslrootcert",
                                            "sslsni",
                                            "target_session_attrs",
                                            "tcp_user_timeout",
                                            "user",
                                            NULL};

typedef struct out_buf {
	char *p;
	size_t cap, n;
} out_buf;

static void put(out_buf *o, const char *s, size_t len)
{
	for (size_t i = 0; i < len && o->n + 1 < o->cap; i++)
		o->p[o->n++] = s[i];
}

static int is_key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* White space as libpq's connection-string parser takes it (isspace in the C locale). */
static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* RX3: a byte of a key as libpq reads one: in a connection string every byte up to '=' or white
 * space ("pass-word", "'password'", which it refuses by name), in a URL's query up to '=' or
 * '&'. The bytes that end a URL's parts end it too, so that a URL is never taken for a key. */
static int is_any_key_char(char c)
{
	return c && !is_space(c) && !strchr("=:/?&@(,", c);
}

/* RX3: whether a key starts at s: not with '-' (an option such as --store=URL), nor with a quote
 * in a message (one_line: it quotes what follows), and holding a letter, digit or '_' (a lone
 * quote before '=' in a message is no key). When its bytes hold none of those, *keyless is their
 * number (else 0): no key starts among them either, and the walk asks no more there (asking at
 * each byte of a run of quotes or punctuation read the rest of the run each time, quadratic). */
static int key_start(const char *s, int one_line, size_t *keyless)
{
	size_t n = 0;
	*keyless = 0;
	if (!is_any_key_char(s[0]) || s[0] == '-' || (one_line && strchr("'\"", s[0])))
		return 0;
	for (; is_any_key_char(s[n]); n++)
		if (is_key_char(s[n]))
			return 1;
	*keyless = n;
	return 0;
}

static int hex_value(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* RX3: key[0..len) as libpq looks it up, into buf: a URL query's key percent-decoded (libpq
 * takes "pass%77ord" for password). Returns its length, or cap when it does not fit: no keyword
 * is that long. */
static size_t lookup_key(char *buf, size_t cap, const char *key, size_t len, int decode)
{
	size_t n = 0;
	for (size_t j = 0; j < len; j++) {
		if (n == cap)
			return cap;
		int hi, lo;
		if (decode && key[j] == '%' && j + 2 < len && (hi = hex_value(key[j + 1])) >= 0 &&
		    (lo = hex_value(key[j + 2])) >= 0) {
			buf[n++] = (char)(hi * 16 + lo);
			j += 2;
		} else {
			buf[n++] = key[j];
		}
	}
	return n;
}

static int shown_keyword(const char *k, size_t len)
{
	for (int i = 0; show_keywords[i]; i++)
		if (strlen(show_keywords[i]) == len && memcmp(show_keywords[i], k, len) == 0)
			return 1;
	return 0;
}

/* RX4: a word that names a password (password, sslpassword, passwd, PASS, pwd...). */
static int secret_word(const char *k, size_t len)
{
	if (shown_keyword(k, len))
		return 0;
	if (len == 3 && strncasecmp(k, "pwd", 3) == 0)
		return 1;
	for (size_t i = 0; i + 4 <= len; i++)
		if (strncasecmp(k + i, "pass", 4) == 0)
			return 1;
	return 0;
}

/* RX2: if text[i] starts "://" with user information holding a ':' (before its first '@'), the
 * offsets of the secret (from just after that ':' to the last '@' of the authority). */
static size_t value_len(const char *text, size_t v, int in_query, int one_line);

static int url_secret(const char *text, size_t i, int one_line, size_t *from, size_t *to)
{
	if (strncmp(text + i, "://", 3) != 0)
		return 0;
	/* A URL as typed ends its authority where libpq does, at '/': a password may hold '?', '#',
	 * quotes and spaces. In a message the URL is quoted, or followed by other words. */
	const char *ends = one_line ? "/?#\"" : "/";
	size_t a = i + 3, e = a, first_at = 0, at = 0, colon = 0;
	int have_at = 0, have_colon = 0;
	for (; text[e] && !strchr(ends, text[e]) && (!one_line || !is_space(text[e])); e++)
		if (text[e] == '@') {
			if (!have_at)
				first_at = e;
			at = e;
			have_at = 1;
		}
	if (!have_at)
		return 0;
	for (size_t k = a; k < first_at; k++)
		if (text[k] == ':') {
			colon = k;
			have_colon = 1;
			break;
		}
	if (!have_colon)
		return 0;
	/* White space and then '=' before the ':' make it KEY=VALUE pairs, not user information
	 * ("x://h=a password =u:p@q" is libpq's key "x://h" and password "u:p@q"): RX3 hides them
	 * (RX2 hid "p" alone, showing the rest of that password). A string that libpq takes for a
	 * URL, by its start, may still be either: both are hidden, from after that '='. */
	int libpq_url = (i == 10 && strncmp(text, "postgresql", 10) == 0) ||
	                (i == 8 && strncmp(text, "postgres", 8) == 0);
	*from = colon + 1;
	for (size_t k = a, space = 0; k < colon; k++)
		if (is_space(text[k])) {
			space = 1;
		} else if (space && text[k] == '=') {
			if (!libpq_url)
				return 0;
			*from = k + 1;
			break;
		}
	/* libpq ends the user information at the first '@' (or sees none, at a '/' before it): a
	 * '?' after that '@', or a '?' and then '=' anywhere before the last '@', may start a query
	 * whose value holds the last '@' and runs on past it, to its '&'. */
	const char *q = memchr(text + a, '?', at - a);
	if (q && ((size_t)(q - text) > first_at || memchr(q, '=', (size_t)(text + at - q))))
		at += value_len(text, at, 1, one_line);
	*to = at;
	return 1;
}

/* RX3: the length of the value at text + v (a URL query's when in_query: up to '&', where libpq
 * ends it, in a URL as typed; in a message also at '#', a quote or white space). */
static size_t value_len(const char *text, size_t v, int in_query, int one_line)
{
	size_t k = v;
	if (in_query) {
		while (text[k] && text[k] != '&' &&
		       (!one_line || (!strchr("#\"'", text[k]) && !is_space(text[k]))))
			k++;
		return k - v;
	}
	if (text[k] != '\'') {
		/* Unquoted, up to the next KEY= (a password with a space was not quoted: libpq took
		 * its second word for a keyword). */
		for (;;) {
			while (text[k] && !is_space(text[k]))
				k++;
			size_t n = k, e;
			while (is_space(text[n]))
				n++;
			for (e = n; is_key_char(text[e]); e++)
				;
			while (e > n && (text[e] == ' ' || text[e] == '\t'))
				e++;
			if (!text[n] || (e > n && text[e] == '='))
				return k - v;
			k = n;
		}
	}
	for (k++; text[k] && text[k] != '\''; k++)
		if (text[k] == '\\' && text[k + 1])
			k++;
	return (text[k] ? k + 1 : k) - v;
}

/* RX1: the length of secret (NULL or "" is none) if text starts with it, else 0. Reads no more
 * of either than they share: a secret is not measured at every byte of the text. */
static size_t secret_at(const char *text, const char *secret)
{
	size_t n = 0;
	if (!secret)
		return 0;
	while (secret[n] && text[n] == secret[n])
		n++;
	return n && !secret[n] ? n : 0;
}

/* RX1 with RX2-RX4: the end of a hidden span [from, to) taken past every known secret that
 * starts in it and ends after it (a value cut where a secret goes on: "password=a b c" with the
 * secret "b c d" of another key), else the rest of that secret would be shown, and RX1 could not
 * match it from its start, hidden. */
static size_t past_secrets(const char *text, size_t from, size_t to, const char *const *secrets,
                           size_t n_secrets)
{
	for (size_t p = from; p < to; p++)
		for (size_t s = 0; s < n_secrets; s++) {
			size_t len = secret_at(text + p, secrets[s]);
			if (p + len > to)
				to = p + len;
		}
	return to;
}

/* RX3: the length of the known secret (RX1) that the unquoted value at text + v is, or 0: a
 * secret followed by the end of the text, white space, a quote or ",;:)" (a message goes on
 * after the value it quotes: "branch name 'host=h password=SECRET' holds ..."), or in a URL's
 * query (query) by anything: there the value ends at '&' as typed, but on one line also at a
 * '#', a quote or white space that the secret may hold. The longest one wins. */
static size_t secret_value_len(const char *text, size_t v, const char *const *secrets,
                               size_t n_secrets, int query)
{
	size_t best = 0;
	for (size_t s = 0; s < n_secrets; s++) {
		size_t len = secret_at(text + v, secrets[s]);
		char end = len ? text[v + len] : 0; /* not past the end of a text shorter than it */
		if (len > best && (query || !end || is_space(end) || strchr("'\",;:)", end)))
			best = len;
	}
	return best;
}

/* RX5: a key that always names a password: password or sslpassword, in any letter case. */
static int password_key(const char *k, size_t len)
{
	return (len == 8 && strncasecmp(k, "password", 8) == 0) ||
	       (len == 11 && strncasecmp(k, "sslpassword", 11) == 0);
}

/* RX3: where libpq starts the query of text when text is a URL to libpq as typed (it starts
 * "postgresql://" or "postgres://"): at the first '?' after the user information, which runs
 * to the first '@' before any '/' (its password may hold a '?'); 0 when there is none. Before
 * it libpq has no KEY=VALUE at all, so a value the walk hides there ends at that '?' (a quoted
 * one ran past it, over the query's password: "postgresql://h/d x='a?password='SECRET" showed
 * SECRET); after it every value ends at '&' only, white space or quotes in it or not. */
static size_t url_query_start(const char *text)
{
	size_t a = strncmp(text, "postgresql://", 13) == 0 ? 13
	           : strncmp(text, "postgres://", 11) == 0 ? 11
	                                                   : 0;
	if (!a)
		return 0;
	size_t e = a + strcspn(text + a, "@/");
	if (text[e] == '@')
		a = e + 1;
	const char *q = strchr(text + a, '?');
	return q ? (size_t)(q - text) : 0;
}

/* The one walk: copies text into o with the secrets hidden; when pw is not NULL, sets *pw to 1
 * if text carries a password (RX5). */
static size_t redact_walk(out_buf o, const char *text, const char *const *secrets, size_t n_secrets,
                          int one_line, int *pw)
{
	char *out = o.p;
	size_t cap = o.cap, i = 0, no_key_until = 0; /* key_start: no key starts before it */
	size_t rx2_from = 0, rx2_to = 0;             /* RX2's secret ahead, while rx2 */
	int in_query = 0, rx2 = 0;
	if (!text)
		text = "";
	size_t url_q = one_line ? 0 : url_query_start(text); /* 0: no query of a URL as typed */
	while (text[i] && (pw || o.n + 1 < cap)) { /* to the end when looking for a password */
		char c = text[i];
		int matched = 0;
		/* RX2: the walk reached the user information's secret (or hid past its start already,
		 * with RX1 or RX3: then its "***" stands for it, and the rest of it is skipped too). */
		if (rx2 && i >= rx2_from) {
			if (i == rx2_from)
				put(&o, "***", 3);
			size_t end = past_secrets(text, rx2_from, rx2_to, secrets, n_secrets);
			i = i > end ? i : end;
			rx2 = 0;
			continue;
		}
		/* RX1 */
		for (size_t s = 0; s < n_secrets && !matched; s++) {
			size_t len = secret_at(text + i, secrets[s]);
			if (len) {
				put(&o, "***", 3);
				i += len;
				matched = 1;
			}
		}
		if (matched)
			continue;
		/* RX2: the secret is hidden when the walk gets there; the user name before it is
		 * walked as any text (RX1, RX3: a URL that libpq cannot parse may hold
		 * "&sslpassword=..." there, and its user name is no more than its bytes). */
		size_t from, to;
		if (!rx2 && url_secret(text, i, one_line, &from, &to)) {
			if (pw && to > from)
				*pw = 1;
			rx2 = 1;
			rx2_from = from;
			rx2_to = to;
		}
		if (c == '?')
			in_query = 1;
		else if (is_space(c) && !(url_q && i > url_q))
			in_query = 0;
		/* RX3 */
		char prev = i ? text[i - 1] : ' ';
		size_t keyless = 0;
		if (i >= no_key_until && (is_space(prev) || strchr("?&(,\"'", prev)) &&
		    (key_start(text + i, one_line, &keyless) || (no_key_until = i + keyless, 0))) {
			size_t k = i;
			while (is_any_key_char(text[k]))
				k++;
			size_t key_end = k, eq = k;
			while (is_space(text[eq]))
				eq++;
			if (text[eq] == '=') {
				size_t v = eq + 1;
				int query = in_query && (prev == '?' || prev == '&' || (url_q && i > url_q));
				while (!query && is_space(text[v]))
					v++;
				char kb[32];
				size_t kn = lookup_key(kb, sizeof(kb), text + i, key_end - i, query);
				for (size_t b = i; b < v; b++) /* on one line, white space as a space */
					put(&o, one_line && is_space(text[b]) ? " " : text + b, 1);
				if (pw && kn < sizeof(kb) && password_key(kb, kn))
					*pw = 1;
				if (kn < sizeof(kb) && shown_keyword(kb, kn)) {
					i = v;
				} else {
					size_t len = secret_value_len(text, v, secrets, n_secrets, query);
					size_t cut = value_len(text, v, query, one_line);
					if (v <= url_q && v + cut > url_q)
						cut = url_q - v;
					put(&o, "***", 3);
					/* In a query the value ends at '&' (or, on one line, a quote or white
					 * space), unless a known secret that holds one goes on past it. */
					i = past_secrets(text, v,
					                 v + (query ? (len > cut ? len : cut)
					                      : len ? len
					                            : cut),
					                 secrets, n_secrets);
				}
				continue;
			}
			if (!one_line && eq > key_end && text[eq] && !is_space(text[eq]) &&
			    secret_word(text + i, key_end - i)) { /* RX4 */
				size_t cut = value_len(text, eq, 0, one_line);
				if (eq <= url_q && eq + cut > url_q)
					cut = url_q - eq;
				put(&o, text + i, eq - i);
				put(&o, "***", 3);
				i = past_secrets(text, eq, eq + cut, secrets, n_secrets);
				continue;
			}
			/* a word, not a key: copied a byte at a time (RX1 may start inside it) */
		}
		if (one_line && (c == '\n' || c == '\t' || c == '\r')) {
			if (o.n && out[o.n - 1] != ' ')
				put(&o, " ", 1);
			i++;
			continue;
		}
		put(&o, &c, 1);
		i++;
	}
	if (one_line)
		while (o.n && out[o.n - 1] == ' ')
			o.n--;
	out[o.n] = 0;
	return o.n;
}

size_t prolly__redact(char *out, size_t cap, const char *text, const char *const *secrets,
                      size_t n_secrets, int one_line)
{
	if (!out || !cap)
		return 0;
	out_buf o = {out, cap, 0};
	return redact_walk(o, text, secrets, n_secrets, one_line, NULL);
}

int prolly__redact_has_password(const char *text)
{
	char sink[64]; /* the walk reads all of text; what it copies is cut to fit and dropped */
	out_buf o = {sink, sizeof(sink), 0};
	int pw = 0;
	redact_walk(o, text, NULL, 0, 0, &pw);
	return pw;
}

size_t prolly_redact_url(char *out, size_t cap, const char *url)
{
	return prolly__redact(out, cap, url, NULL, 0, 0);
}

/*
 * libpq's complaint about a connection string it cannot parse quotes a piece of it: a keyword
 * ('invalid connection option "passwd"'), or a token that may be part of a password ('missing
 * "=" after "word"' for a password with an unquoted space, 'invalid percent-encoded token:
 * "SECRET%zz"'), or the whole URL. Since the string was not parsed, the password is not known:
 * a quoted piece is kept only when it holds no letter or digit ('missing "="'), when the string
 * has it as a key (followed by '='), or when it holds a URL (whose password prolly__redact
 * hides); any other is replaced by "***".
 */
static int is_key_in(const char *conninfo, const char *k, size_t len)
{
	for (const char *c = conninfo; *c; c++) {
		if ((c > conninfo && !strchr(" \t?&", c[-1])) || strncmp(c, k, len) != 0)
			continue;
		const char *e = c + len;
		while (*e == ' ' || *e == '\t')
			e++;
		if (*e == '=')
			return 1;
	}
	return 0;
}

static size_t scrub_parse_error(char *out, size_t cap, const char *err, const char *conninfo)
{
	/* Whole: a piece cut short here would be a URL without the '@' that ends its password. A
	 * piece replaced ('"x"', 3 bytes at least, by '"***"') grows by 5/3 at most. */
	size_t o = 0, room = 2 * strlen(err) + 1;
	char *tmp = malloc(room);
	if (!tmp)
		return prolly__redact(out, cap, "(message hidden: out of memory)", NULL, 0, 1);
	for (const char *p = err; *p && o + 1 < room;) {
		const char *end = *p == '"' ? strchr(p + 1, '"') : NULL;
		if (!end) {
			tmp[o++] = *p++;
			continue;
		}
		size_t len = (size_t)(end - p - 1);
		int word = 0;
		for (size_t i = 1; i <= len; i++)
			word |= (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
			        (p[i] >= '0' && p[i] <= '9') || (unsigned char)p[i] >= 0x80;
		int keep = !word || memmem(p + 1, len, "://", 3) || is_key_in(conninfo, p + 1, len);
		const char *piece = keep ? p : "\"***\"";
		size_t n = keep ? len + 2 : 5;
		for (size_t i = 0; i < n && o + 1 < room; i++)
			tmp[o++] = piece[i];
		p = end + 1;
	}
	tmp[o] = 0;
	size_t len = prolly__redact(out, cap, tmp, NULL, 0, 1);
	free(tmp);
	return len;
}

/*
 * A message may quote conninfo as typed, whole or cut short: a name quoted by its first bytes
 * ("'postgresql://u:SECR...' is not a valid remote name"), a message cut in its middle by
 * prolly_set_error. A cut piece lacks what ends its password (the '@', the next KEY=), and holds
 * no parsed password whole, so the rules above missed it. Returns a copy of message (malloc'd,
 * NULL when out of memory) in which every piece that is conninfo from its start to past its first
 * hidden byte is replaced: by the piece redacted alone when that shows what conninfo redacted
 * shows ("postgresql://u:***@h/db" of an argument "postgresql://u:SECRET@h/db~1"), else by its
 * bytes before the first hidden one and "***". A whole conninfo is left to the rules above,
 * unless it does not parse (whole_too: its password is not known).
 */
static char *hide_quoted_conninfo(const char *message, const char *conninfo, int whole_too)
{
	size_t len = strlen(conninfo), k = 0, mlen = strlen(message), room = 4 * (len + mlen) + 16;
	char *shown = malloc(3 * len + 16), *piece = malloc(len + 1), *alone = malloc(3 * len + 16),
	     *copy = malloc(room);
	out_buf o = {copy, room, 0};
	if (!shown || !piece || !alone || !copy) {
		free(copy);
		copy = NULL;
		goto cleanup;
	}
	size_t shown_len = prolly__redact(shown, 3 * len + 16, conninfo, NULL, 0, 0);
	while (k < len && shown[k] == conninfo[k])
		k++;                        /* the first hidden byte */
	for (size_t p = 0; p < mlen;) { /* linear: a piece found is skipped whole */
		const char *at = k < len ? memmem(message + p, mlen - p, conninfo, k + 1) : NULL;
		size_t q = at ? (size_t)(at - message) : mlen, j = k + 1, n;
		put(&o, message + p, q - p);
		if (!at)
			break;
		while (j < len && at[j] == conninfo[j])
			j++;
		memcpy(piece, conninfo, j);
		piece[j] = 0;
		if (j == len && !whole_too)
			put(&o, at, j);
		else if ((n = prolly__redact(alone, 3 * len + 16, piece, NULL, 0, 0)) > k &&
		         n <= shown_len && memcmp(alone, shown, n) == 0)
			put(&o, alone, n);
		else {
			put(&o, conninfo, k);
			put(&o, "***", 3);
		}
		p = q + j;
	}
	copy[o.n] = 0;
cleanup:
	free(shown);
	free(piece);
	free(alone);
	return copy;
}

/* The values of a libpq URL's query keys password and sslpassword as typed (the key looked up
 * percent-decoded, as libpq does; the value up to '&', where libpq ends it), at most max of them,
 * each malloc'd into raw. Returns how many, or (size_t)-1 when out of memory (raw then freed). */
#define QUERY_SECRETS 4
static size_t query_secrets(const char *conninfo, char **raw, size_t max)
{
	size_t q = url_query_start(conninfo), n = 0;
	for (size_t k = q + 1; q && conninfo[k] && n < max;) {
		size_t klen = strcspn(conninfo + k, "=&"), vlen, kl;
		char key[16];
		if (conninfo[k + klen] != '=') {
			k += klen + (conninfo[k + klen] == '&');
			continue;
		}
		kl = lookup_key(key, sizeof(key), conninfo + k, klen, 1);
		k += klen + 1;
		vlen = strcspn(conninfo + k, "&");
		if (vlen &&
		    ((kl == 8 && memcmp(key, "password", 8) == 0) ||
		     (kl == 11 && memcmp(key, "sslpassword", 11) == 0)) &&
		    !(raw[n++] = strndup(conninfo + k, vlen))) {
			while (n)
				free(raw[--n]);
			return (size_t)-1;
		}
		k += vlen + (conninfo[k + vlen] == '&');
	}
	return n;
}

static size_t redact_message(char *out, size_t cap, const char *message, const char *conninfo,
                             PQconninfoOption *opts, const char *err)
{
	const char *secrets[3 + QUERY_SECRETS] = {NULL};
	char *typed[QUERY_SECRETS];
	size_t n, n_typed = 0;
	if (!opts && conninfo && err) /* it does not parse: the message may quote pieces of it */
		return scrub_parse_error(out, cap, message ? message : "", conninfo);
	for (PQconninfoOption *o = opts; o && o->keyword; o++)
		if (o->val && strcmp(o->keyword, "password") == 0)
			secrets[0] = o->val;
		else if (o->val && strcmp(o->keyword, "sslpassword") == 0)
			secrets[1] = o->val;
	/* A URL's user-information password as typed (percent-encoded, libpq decoded it): on one
	 * line RX2 stops at white space, which it may hold ("u:a b%21@h"). Whole, however long: its
	 * first bytes alone would hide those and show the rest. */
	char *raw = NULL;
	size_t from = 0, to = 0, i = 0;
	for (; conninfo && conninfo[i] && !url_secret(conninfo, i, 0, &from, &to); i++)
		;
	/* From its first ':', where libpq starts it (url_secret may start the span before, at a
	 * KEY=, which the message's own rules then hide up to where this one starts). */
	for (from = i + 3; conninfo && conninfo[i] && from < to && conninfo[from] != ':'; from++)
		;
	from += from < to;
	if (conninfo && conninfo[i] && !(raw = strndup(conninfo + from, to - from)))
		return prolly__redact(out, cap, "(message hidden: out of memory)", NULL, 0, 1);
	secrets[2] = raw;
	/* The query's passwords as typed, for the same reason: on one line RX3 ends a query's value
	 * at a quote or white space, which a typed value may hold ("?password=\"ek%20r1t"). */
	if (conninfo && (n_typed = query_secrets(conninfo, typed, QUERY_SECRETS)) == (size_t)-1) {
		free(raw);
		return prolly__redact(out, cap, "(message hidden: out of memory)", NULL, 0, 1);
	}
	for (size_t t = 0; t < n_typed; t++)
		secrets[3 + t] = typed[t];
	n = prolly__redact(out, cap, message, secrets, 3 + n_typed, 1);
	free(raw);
	while (n_typed)
		free(typed[--n_typed]);
	return n;
}

size_t prolly_redact_message(char *out, size_t cap, const char *message, const char *conninfo)
{
	char *err = NULL, *hidden = NULL;
	size_t n;
	/* PQ1. Without libpq (nothing connects then) conninfo is hidden as one that does not parse. */
	PQconninfoOption *opts = conninfo && prolly__pq_ready() ? PQconninfoParse(conninfo, &err)
	                                                        : NULL;
	if (conninfo && !(hidden = hide_quoted_conninfo(message ? message : "", conninfo, !opts))) {
		n = prolly__redact(out, cap, "(message hidden: out of memory)", NULL, 0, 1);
		goto cleanup;
	}
	n = redact_message(out, cap, hidden ? hidden : message, conninfo, opts, err);
cleanup:
	free(hidden);
	if (opts) /* not through libpq's table when it is not loaded */
		PQconninfoFree(opts);
	if (err)
		PQfreemem(err);
	return n;
}
