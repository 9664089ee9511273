/*
 * test_redact.c - prolly_redact_url and prolly_redact_message (src/redact.c), the one redactor
 * the CLI, the benchmark harness and the PostgreSQL store print URLs and messages through.
 *
 * Every case is an input and the exact output; besides, no output may hold the secret
 * ("Sekr1t" in every case that has one), however the buffer is cut.
 */
#include "prolly.h"
#include "ptest.h"

#include <libpq-fe.h>
#include <string.h>
#include <time.h>

static const char *const url_cases[][2] = {
    /* URL user information, any scheme, any letter case */
    {"postgres://user:secret@host/db", "postgres://user:***@host/db"},
    {"postgresql://u:p%40ss@h:5432/db?sslmode=disable",
     "postgresql://u:***@h:5432/db?sslmode=disable"},
    {"POSTGRESQL://u:Sekr1t@h/db", "POSTGRESQL://u:***@h/db"},
    {"Postgres://u:Sekr1t@h/db", "Postgres://u:***@h/db"},
    {"mysql://u:Sekr1t@h/db", "mysql://u:***@h/db"},
    {"postgresql://u:Sek@r1t@h/db", "postgresql://u:***@h/db"},
    {"postgresql://u:Sek'r1t@h/db", "postgresql://u:***@h/db"},
    {"postgresql://u:Sek:r1t@h:5432/db", "postgresql://u:***@h:5432/db"},
    {"postgresql://u@h/db", "postgresql://u@h/db"},
    {"postgresql:///prolly?host=/tmp/sock", "postgresql:///prolly?host=/tmp/sock"},
    {"lmdb:/tmp/a=b", "lmdb:/tmp/a=b"},
    {"mem:", "mem:"},
    /* query parameters: only libpq's keywords without secrets are shown */
    {"postgresql://h/db?user=u&password=pw&sslmode=require",
     "postgresql://h/db?user=u&password=***&sslmode=require"},
    {"postgresql://h/db?PASSWORD=Sekr1t&passwd=Sekr1t&sslpassword=Sekr1t&port=5",
     "postgresql://h/db?PASSWORD=***&passwd=***&sslpassword=***&port=5"},
    {"postgresql://h/db?x=Sekr1t", "postgresql://h/db?x=***"},
    /* connection strings */
    {"host=h password=x dbname=d", "host=h password=*** dbname=d"},
    {"host=h password='x y\\' z' dbname=d", "host=h password=*** dbname=d"},
    {"password = Sekr1t", "password = ***"},
    {"host=h PASSWORD=Sekr1t", "host=h PASSWORD=***"},
    {"host=h Password = 'Sekr1t'", "host=h Password = ***"},
    {"host=h passwd=Sekr1t port=1", "host=h passwd=*** port=1"},
    {"host=h sslpassword=Sekr1t sslmode=require", "host=h sslpassword=*** sslmode=require"},
    {"host=h bogus=Sekr1t", "host=h bogus=***"},
    {"host=h password=Sekr 1t port=1", "host=h password=*** port=1"},
    {"host=h password Sekr1t", "host=h password ***"},
    {"host=h user=password dbname=d", "host=h user=password dbname=d"},
    {"host=/tmp passfile=/home/u/.pgpass", "host=/tmp passfile=/home/u/.pgpass"},
    {"dbname=prolly", "dbname=prolly"},
    /* arguments printed back by the CLI */
    {"--store=postgresql://u:Sekr1t@h/db", "--store=postgresql://u:***@h/db"},
    /* libpq takes a URL's user information up to its '@' before the first '/', and a query
     * value up to '&': a password holding a quote, a space, '?' or '#' is hidden whole (the
     * quote or space used to end it, showing the rest: all of it in the user information) */
    {"postgresql://u:Sek\"r1t@h:1/db", "postgresql://u:***@h:1/db"},
    {"postgresql://u:Sek r1t@h/db", "postgresql://u:***@h/db"},
    {"postgresql://u:Sek?r1t@h/db", "postgresql://u:***@h/db"},
    {"postgresql://u:Sek#r1t@h/db", "postgresql://u:***@h/db"},
    {"postgresql://h/db?password=Sek\"r1t", "postgresql://h/db?password=***"},
    {"postgresql://h/db?password=Sek'r1t&port=5", "postgresql://h/db?password=***&port=5"},
    {"postgresql://h/db?password=Sek r1t", "postgresql://h/db?password=***"},
    {"postgresql://h/db?password=Sek#r1t&port=5", "postgresql://h/db?password=***&port=5"},
    /* libpq percent-decodes a query's keys: pass%77ord is password */
    {"postgresql://h/db?pass%77ord=Sekr1t&port=5", "postgresql://h/db?pass%77ord=***&port=5"},
    {"postgresql://h/db?%70assword=Sekr1t", "postgresql://h/db?%70assword=***"},
    {"postgresql://h/db?p%6Frt=5&sslmode=require", "postgresql://h/db?p%6Frt=5&sslmode=require"},
    /* a connection string's key is every byte up to '=' (libpq refuses these by name) */
    {"host=h pass-word=Sekr1t port=1", "host=h pass-word=*** port=1"},
    {"host=h pass.word=Sekr1t", "host=h pass.word=***"},
    {"host=h 'password'=Sekr1t", "host=h 'password'=***"},
    {"host=h \"password\"=Sekr1t", "host=h \"password\"=***"},
    {"host=h p\xc3\xa4ssword=Sekr1t", "host=h p\xc3\xa4ssword=***"},
    /* white space before a query's '=' (libpq refuses the key "password "): the value is
     * hidden to '&' as any query value (it used to be shown) */
    {"postgresql://h/db?password = Sekr1t", "postgresql://h/db?password =***"},
    {"postgresql://h/db?password =Sekr1t&port=5", "postgresql://h/db?password =***&port=5"},
    {"postgresql://h/db?port=5&PASSWORD\t= 'Sekr1t'", "postgresql://h/db?port=5&PASSWORD\t=***"},
    /* KEY=VALUE pairs after a scheme, a ':' and an '@' in the password: libpq's password is
     * "u:Sekr1t@h", and the user information's rule hid "Sekr1t" alone (found by fuzz_redact) */
    {"x://h=a password =u:Sekr1t@h", "x://h=a password =***"},
    /* a string that starts postgresql:// is a URL to libpq, its password "Sekr1t", unless
     * libpq refuses it: both are hidden */
    {"postgresql:// password = 'k 'u:Sekr1t@h", "postgresql:// password = ***@h"},
    /* the user name before a user information's ':' is walked as any text: a URL libpq cannot
     * parse (here "%zz") showed "&sslpassword=VALUE" there, all but the password after the
     * ':' (found by fuzz_redact) */
    {"postgresql://%zz&sslpassword=Sekr1t&x:pw@host/db", "postgresql://%zz&sslpassword=***"},
    {"postgresql://u&password=Sekr1t:pw@host/db", "postgresql://u&password=***"},
    /* libpq's user information ends at the first '@', then comes the host and a query whose
     * password holds the last '@': what followed that '@' was shown (found by fuzz_redact) */
    {"postgresql://u:x@h?password=Sek@r1t&port=5", "postgresql://u:***&port=5"},
    /* ... or, when a '/' comes before the first '@', none: here the query is libpq's, and the
     * password "Sek@r1t" */
    {"postgresql://h:5/x://u:p?password=Sek@r1t&port=5", "postgresql://h:5/x://u:***&port=5"},
    /* a ':' after the first '@' is not a password of the user information */
    {"postgresql://u@h?password=a:Sekr1t@c", "postgresql://u@h?password=***"},
    /* libpq has no KEY=VALUE before a URL's query: a quoted value there ran on past the '?',
     * and the query's password after its closing quote was shown (found by fuzz_redact) */
    {"postgresql://h p=h 7tgres://h/d rd='b?password='Sek#r1t",
     "postgresql://h p=*** rd=***?password=***"},
    {"postgresql://h/d x='a?password='Sekr1t", "postgresql://h/d x=***?password=***"},
    {"postgresql://h/d pass '?password=Sekr1t", "postgresql://h/d pass ***?password=***"},
    /* ... and in the query a value ends at '&' only: after white space a quote no longer
     * started a quoted value that ended inside the password */
    {"postgresql://h/db?application_name=a y='b&password=Sek'r1t",
     "postgresql://h/db?application_name=a y=***&password=***"},
    {"", ""},
};

PT_TEST(redact_url_cases)
{
	char out[256];
	for (size_t i = 0; i < sizeof(url_cases) / sizeof(url_cases[0]); i++) {
		size_t n = prolly_redact_url(out, sizeof(out), url_cases[i][0]);
		PT_CHECKF(strcmp(out, url_cases[i][1]) == 0, "%s -> %s", url_cases[i][0], out);
		PT_CHECK(n == strlen(out));
	}
	PT_CHECK(prolly_redact_url(out, sizeof(out), NULL) == 0 && out[0] == 0);
	PT_CHECK(prolly_redact_url(NULL, 0, "x") == 0);
}

/* However short the buffer, no prefix of a secret shows. */
PT_TEST(redact_cut_short)
{
	char out[64];
	for (size_t i = 0; i < sizeof(url_cases) / sizeof(url_cases[0]); i++)
		for (size_t cap = 1; cap <= sizeof(out); cap++) {
			memset(out, 'Z', sizeof(out));
			size_t n = prolly_redact_url(out, cap, url_cases[i][0]);
			PT_CHECKF(n < cap && out[n] == 0 && !strstr(out, "Sek"), "%s cut at %zu: %s",
			          url_cases[i][0], cap, out);
			PT_CHECK(cap == sizeof(out) || out[cap] == 'Z');
		}
}

static const char *const msg_cases[][3] = {
    /* message, conninfo, expected */
    {"FATAL:  password Sekr1t is wrong\nDETAIL: x", "host=h password=Sekr1t",
     "FATAL:  password *** is wrong DETAIL: x"},
    {"aSekr1tb", "postgresql://u:Sekr1t@h/db", "a***b"},
    {"key Sekr1t", "host=h sslpassword=Sekr1t", "key ***"},
    /* a quote in a message quotes what follows: 'host=h' shows host as the keyword it is */
    {"branch name 'host=h port=5' holds byte 0x3d", "host=h password=Sekr1t",
     "branch name 'host=h port=5' holds byte 0x3d"},
    /* connection strings libpq cannot parse: quoted pieces hidden unless keys or URLs */
    {"invalid percent-encoded token: \"Sekr1t%zz\"\n", "postgresql://u:Sekr1t%zz@h/db",
     "invalid percent-encoded token: \"***\""},
    {"invalid connection option \"passwd\"\n", "host=h passwd=Sekr1t",
     "invalid connection option \"passwd\""},
    {"invalid URI query parameter: \"PASSWORD\"\n", "postgresql:///db?PASSWORD=Sekr1t",
     "invalid URI query parameter: \"PASSWORD\""},
    {"missing \"=\" after \"1t\" in connection info string\n", "host=h password=Sekr 1t",
     "missing \"=\" after \"***\" in connection info string"},
    {"end of string reached when looking for matching \"]\" in IPv6 host address in URI: "
     "\"postgresql://u:Sekr1t@[::1/db\"\n",
     "postgresql://u:Sekr1t@[::1/db",
     "end of string reached when looking for matching \"]\" in IPv6 host address in URI: "
     "\"postgresql://u:***@[::1/db\""},
    {"no conninfo: password=Sekr1t", NULL, "no conninfo: password=***"},
    /* a connection string's password (not a URL's) quoted in a message: only its value is
     * hidden, the reason after it stays (it used to be hidden to the end of the line) */
    {"branch name 'host=h password=Sekr1t' holds byte 0x3d; allowed are A-Z",
     "host=h password=Sekr1t",
     "branch name 'host=h password=***' holds byte 0x3d; allowed are A-Z"},
    {"no commit host=h sslpassword=Sekr1t: not found", "host=h sslpassword=Sekr1t",
     "no commit host=h sslpassword=***: not found"},
    /* a URL's percent-encoded password with a space, quoted whole: libpq's decoded password
     * is not in the message, and the user information used to end at the space, showing it */
    {"could not connect to 'postgresql://u:Se kr%31t@h/db'", "postgresql://u:Se kr%31t@h/db",
     "could not connect to 'postgresql://u:***@h/db'"},
    {"at postgresql://u:Se%20kr1t\t@h/db: no", "postgresql://u:Se%20kr1t\t@h/db",
     "at postgresql://u:***@h/db: no"},
    /* a user name with white space and '=' (both hidden as typed) before the password, which
     * libpq decodes: it was shown as typed (found by fuzz_redact) */
    {"could not connect to 'postgresql://u x= 'a =' b:Sek%72r1t@h/db': FATAL",
     "postgresql://u x= 'a =' b:Sek%72r1t@h/db",
     "could not connect to 'postgresql://u x= *** b:***@h/db': FATAL"},
    /* a value that only starts with the secret is hidden as before */
    {"name 'host=h password=Sekr1tX' holds", "host=h password=Sekr1t", "name 'host=h password=***"},
    /* the value of a key that a password's words look like, cut before the password's end:
     * the rest of it was shown (found by fuzz_redact) */
    {"at 'postgresql://u password =t=:Sek r1t =t=h Sekr1t =t=h@h' no",
     "postgresql://u password =t=:Sek r1t =t=h Sekr1t =t=h@h",
     "at 'postgresql://u password =***@h' no"},
    /* a query's password holding a quote, quoted bare in a message: the value up to the quote
     * was hidden and the rest of the password shown (found by fuzz_redact) */
    {"could not connect to postgresql://h/db?sslpassword=*\":Sekr1t2: FATAL:  failed",
     "postgresql://h/db?sslpassword=*\":Sekr1t2",
     "could not connect to postgresql://h/db?sslpassword=***: FATAL:  failed"},
    /* ... and one holding a '#' or a quote, followed by '&': the value was hidden up to the '#'
     * or quote, showing the rest of the password (found by fuzz_redact) */
    {"could not connect to server \"postgresql://h/db?password=Sek#r1t&port=5\": FATAL:  failed",
     "postgresql://h/db?password=Sek#r1t&port=5",
     "could not connect to server \"postgresql://h/db?password=***&port=5\": FATAL:  failed"},
    {"at 'postgresql://h/db?password=Sek'r1t&port=5'", "postgresql://h/db?password=Sek'r1t&port=5",
     "at 'postgresql://h/db?password=***&port=5'"},
    /* a carriage return, form feed or vertical tab between a password key and its '=' (white
     * space to libpq): only spaces and tabs were skipped there, so the value was shown (found by
     * fuzz_redact) */
    {"could not connect to server 'postgresql://h/db?PASSWORD\r=Sekr1t': FATAL:  failed",
     "postgresql://h/db?PASSWORD\r=Sekr1t",
     "could not connect to server 'postgresql://h/db?PASSWORD =***': FATAL:  failed"},
    {"at 'host=h password\f=\vSekr1t' no", "host=h password\f=\vSekr1t",
     "at 'host=h password = ***' no"},
    /* a query's percent-encoded password starting with a quote: on one line the value ended at
     * the quote, and libpq's decoded password is not in the message, so the password as typed
     * was shown after "***" (found by fuzz_redact) */
    {"could not connect to server postgresql://h/db?%70assword=\"Se%6Br1t&port=5: FATAL:  failed",
     "postgresql://h/db?%70assword=\"Se%6Br1t&port=5",
     "could not connect to server postgresql://h/db?%70assword=***&port=5: FATAL:  failed"},
};

PT_TEST(redact_message_cases)
{
	char out[256];
	for (size_t i = 0; i < sizeof(msg_cases) / sizeof(msg_cases[0]); i++) {
		size_t n = prolly_redact_message(out, sizeof(out), msg_cases[i][0], msg_cases[i][1]);
		PT_CHECKF(strcmp(out, msg_cases[i][2]) == 0, "%s -> %s", msg_cases[i][0], out);
		PT_CHECK(n == strlen(out) && !strstr(out, "Sekr1t"));
	}
}

/* libpq's own messages for the connection strings of the CLI golden case "passwords": none
 * holds the secret once redacted. */
PT_TEST(redact_libpq_parse_errors)
{
	static const char *const bad[] = {
	    "postgresql://u:Sekr1t%zz@h/db",
	    "host=h password Sekr1t",
	    "host=h password=Sekr 1t x",
	    "postgresql://u:Sekr1t@[::1/db",
	    "host=h password='Sekr1t",
	    "postgresql://h/db?Sekr1t",
	    "host=h Sekr1t",
	    "postgresql://h/db?a=%zzSekr1t",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *err = NULL, out[512];
		PQconninfoOption *o = PQconninfoParse(bad[i], &err);
		PT_CHECKF(o == NULL && err, "%s parsed", bad[i]);
		PQconninfoFree(o);
		prolly_redact_message(out, sizeof(out), err ? err : "", bad[i]);
		PT_CHECKF(!strstr(out, "Sekr1t"), "%s: %s", bad[i], out);
		PQfreemem(err);
	}
}

/* A password longer than the redactor's buffers used to be: 1024 bytes for libpq's message about
 * a connection string it cannot parse (a URL quoted in it was cut before its '@', and shown), 255
 * for a URL's password as typed (the rest of it was shown). No run of it is left. */
PT_TEST(redact_message_long_password)
{
	static char pw[1200], conninfo[3][1400], message[sizeof(conninfo) + 64], out[8192];
	memset(pw, 'Q', sizeof(pw) - 1);
	memcpy(pw, "Sekr1t", 6);
	snprintf(conninfo[0], sizeof(conninfo[0]), "postgresql://u:%s@[::1/db", pw);
	snprintf(conninfo[1], sizeof(conninfo[1]), "postgresql://u:%s%%zz@h/db", pw);
	memcpy(pw + 10, "a b%21", 6); /* white space and a percent-encoded byte */
	snprintf(conninfo[2], sizeof(conninfo[2]), "postgresql://u:%.300s@h/db", pw);
	for (int i = 0; i < 3; i++) {
		char *err = NULL;
		PQconninfoOption *o = PQconninfoParse(conninfo[i], &err);
		PT_CHECK((o == NULL) == (i < 2));
		if (err) {
			prolly_redact_message(out, sizeof(out), err, conninfo[i]);
			PT_CHECKF(!strstr(out, "Sekr1t") && !strstr(out, "QQQQ"), "%s", out);
		}
		snprintf(message, sizeof(message), "could not connect to '%s': FATAL:  no", conninfo[i]);
		prolly_redact_message(out, sizeof(out), message, conninfo[i]);
		PT_CHECKF(!strstr(out, "Sekr1t") && !strstr(out, "QQQQ") && strstr(out, ": FATAL:  no"),
		          "%s", out);
		PQconninfoFree(o);
		PQfreemem(err);
	}
}

/* A message that quotes the connection string cut short (a name quoted by its first 40 bytes, a
 * message cut in its middle) or, when it does not parse, whole with white space in a URL's
 * password: nothing from the first byte of the password on was hidden, the '@' or the next KEY=
 * that ends it being cut off, and the parsed password not being there whole (or not known). */
PT_TEST(redact_message_cut_quote)
{
	static const char *const cases[][3] = {
	    {"'postgresql://u:Sekr1tQQQQQQQQQQQQQQQQQQQ...' is not a valid remote name",
	     "postgresql://u:Sekr1tQQQQQQQQQQQQQQQQQQQQQQQQQ@h/db",
	     "'postgresql://u:***...' is not a valid remote name"},
	    {"bad revision spec 'host=h password=Sekr1tQQQQ'", "host=h password=Sekr1tQQQQQQQQQ port=5",
	     "bad revision spec 'host=h password=***"},
	    {"could not connect to 'postgresql://u:Se kr1t%zz@h/db': no",
	     "postgresql://u:Se kr1t%zz@h/db", "could not connect to 'postgresql://u:***@h/db': no"},
	    /* a cut before the password shows all there is */
	    {"at 'postgresql://u:...'", "postgresql://u:Sekr1t@h/db", "at 'postgresql://u:...'"},
	};
	char out[256];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		prolly_redact_message(out, sizeof(out), cases[i][0], cases[i][1]);
		PT_CHECKF(strcmp(out, cases[i][2]) == 0, "%s -> %s", cases[i][0], out);
		PT_CHECK(!strstr(out, "Sekr") && !strstr(out, "QQQQ"));
	}
}

/* A long run of quotes or punctuation: whether a key started was asked at each of its bytes,
 * reading the rest of the run each time (100 KB of quotes took some 24 s of CPU; linear, 1 ms). */
PT_TEST(redact_linear_in_runs)
{
	static char text[100001], out[sizeof(text) + 16];
	static const char fill[] = {'\'', '"', '!'};
	for (size_t f = 0; f < sizeof(fill); f++) {
		memset(text, fill[f], sizeof(text) - 1);
		clock_t t0 = clock();
		prolly_redact_url(out, sizeof(out), text);
		prolly_redact_message(out, sizeof(out), text, "host=h password=Sekr1t");
		double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
		PT_CHECKF(cpu < 2.0, "'%c': %.1f s of CPU", fill[f], cpu);
		PT_CHECK(strcmp(out, text) == 0);
	}
}

/* No room (cap 0, out NULL or not) writes and reads nothing of out, whether conninfo parses or
 * not: the unparsed case used to return strlen(out), reading a buffer it had not written (a
 * crash with out NULL). */
PT_TEST(redact_message_no_room)
{
	static const char *const conninfo[] = {"host=h password=Sekr1t", "host=h password Sekr1t",
	                                       NULL};
	char out[8];
	for (size_t i = 0; i < sizeof(conninfo) / sizeof(conninfo[0]); i++) {
		PT_CHECK(prolly_redact_message(NULL, 0, "msg Sekr1t", conninfo[i]) == 0);
		memset(out, 'Z', sizeof(out));
		PT_CHECK(prolly_redact_message(out, 0, "msg Sekr1t", conninfo[i]) == 0);
		PT_CHECK(memchr(out, 0, sizeof(out)) == NULL);
	}
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
