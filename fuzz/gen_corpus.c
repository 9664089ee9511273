/*
 * gen_corpus.c - writes seed corpora of valid encodings for the fuzz targets:
 *   DIR/node/   leaves and internal nodes of assorted shapes (empty leaf, empty keys and values,
 *               binary keys, 2 KiB keys, big values, high levels) plus the nodes of a small tree;
 *   DIR/commit/ commits with 0..5 parents and assorted messages;
 *   DIR/redact/ connection strings for fuzz_redact, in the forms that hid a password badly.
 *   DIR/spec/   revision specs and names over spec_history.h's history (branches, tags, a
 *               remote-tracking branch, short and full ids, steps), valid and malformed;
 *   DIR/escape/ escaped keys and values as the CLI reads them, and bad escapes;
 *   DIR/csv/    CSV files as the harness writes them and as a hand may have edited them;
 *   DIR/remote_url/ store URLs with and without passwords;
 *   DIR/apply/  apply files: every kind of line, escapes, comments, malformed lines;
 *   DIR/count/  counts of the benchmarks' count grammar, valid and not.
 * Usage: gen_corpus DIR (the sub-directories must exist). Built by fuzz/run.sh.
 */
#include "csv.h"
#include "hdr.h"
#include "internal.h"
#include "rng.h"
#include "spec_history.h"

#include <stdio.h>
#include <stdlib.h>

static uint64_t rng_state = 0x243f6a8885a308d3ULL;

static uint64_t rnd(void)
{
	return bench_splitmix64(&rng_state);
}

static int write_file(const char *dir, const char *kind, unsigned n, const void *p, size_t size)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s/seed-%04u", dir, kind, n);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, size, f) != size || fclose(f) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

/* n keys in increasing order: "key" + a 6-digit counter, or klen-byte keys with a big-endian
 * counter at the end. */
static size_t make_key(unsigned char *out, unsigned i, size_t klen)
{
	if (klen == 0)
		return (size_t)snprintf((char *)out, 32, "key%06u", i);
	memset(out, (int)(rnd() & 0xff), klen);
	for (size_t b = 0; b < 4 && b < klen; b++)
		out[klen - 1 - b] = (unsigned char)(i >> (8 * b));
	if (klen > 4)
		memset(out, 0x61, klen - 4);
	return klen;
}

static int leaf(const char *dir, unsigned *seq, unsigned n, size_t klen, size_t vmax)
{
	prolly__enc e;
	prolly_buf out = PROLLY_BUF_INIT;
	unsigned char *k = malloc(PROLLY_MAX_KEY), *v = malloc(PROLLY_MAX_VALUE);
	prolly__enc_init(&e, 0);
	for (unsigned i = 0; i < n; i++) {
		size_t kl = make_key(k, i, klen);
		size_t vl = vmax ? (size_t)(rnd() % (vmax + 1)) : 0;
		for (size_t j = 0; j < vl; j++)
			v[j] = (unsigned char)rnd();
		prolly__enc_add_leaf(&e, k, kl, v, vl);
	}
	prolly__enc_finish(&e, &out);
	int rc = write_file(dir, "node", (*seq)++, out.ptr, out.size);
	prolly__enc_dispose(&e);
	prolly_buf_dispose(&out);
	free(k);
	free(v);
	return rc;
}

static int inner(const char *dir, unsigned *seq, unsigned level, unsigned n, size_t klen)
{
	prolly__enc e;
	prolly_buf out = PROLLY_BUF_INIT;
	unsigned char *k = malloc(PROLLY_MAX_KEY);
	prolly__enc_init(&e, level);
	for (unsigned i = 0; i < n; i++) {
		prolly_id c;
		for (size_t j = 0; j < sizeof(c.bytes); j++)
			c.bytes[j] = (unsigned char)rnd();
		size_t kl = make_key(k, i, klen);
		prolly__enc_add_child(&e, k, kl, &c, 1 + rnd() % 5000);
	}
	prolly__enc_finish(&e, &out);
	int rc = write_file(dir, "node", (*seq)++, out.ptr, out.size);
	prolly__enc_dispose(&e);
	prolly_buf_dispose(&out);
	free(k);
	return rc;
}

static int commit(const char *dir, unsigned *seq, size_t np, const char *msg)
{
	prolly_id tree, parents[8];
	prolly_buf out = PROLLY_BUF_INIT;
	for (size_t j = 0; j < sizeof(tree.bytes); j++)
		tree.bytes[j] = (unsigned char)rnd();
	for (size_t p = 0; p < 8; p++)
		for (size_t j = 0; j < sizeof(tree.bytes); j++)
			parents[p].bytes[j] = (unsigned char)rnd();
	if (prolly__commit_encode(&out, &tree, parents, np, (int64_t)(rnd() >> 1), msg) != 0)
		return -1;
	int rc = write_file(dir, "commit", (*seq)++, out.ptr, out.size);
	prolly_buf_dispose(&out);
	return rc;
}

/* Text forms of a few histograms (empty, one value, a spread, saturated) for fuzz_hdr. */
static int hdr_seeds(const char *dir)
{
	static const uint64_t values[] = {0, 1, 2047, 2048, 123456, 999999999, 3600000000000ULL};
	int rc = 0;
	for (int k = 0; k < 4 && !rc; k++) {
		hdr_hist *h = NULL;
		if (hdr_new(&h, k == 3 ? 1000 : 0, k == 2 ? 2 : 0) != 0)
			return 1;
		for (int i = 0; i < k * 3; i++)
			hdr_record_n(h, values[(size_t)i % 7], (uint64_t)i + 1);
		char *text = hdr_to_text(h), path[4096];
		snprintf(path, sizeof(path), "%s/hdr/seed%d", dir, k);
		FILE *f = text ? fopen(path, "w") : NULL;
		if (!f || fputs(text, f) < 0)
			rc = 1;
		if (f && fclose(f) != 0)
			rc = 1;
		free(text);
		hdr_free(h);
	}
	return rc;
}

/* Proofs for fuzz_proof: the tree id (32 bytes), then a proof of it: keys present and absent,
 * ranges, over a tree of a few levels. */
static int proof_seeds(const char *dir, unsigned *seq)
{
	prolly_db *db = NULL;
	prolly_txn *txn = NULL;
	prolly_builder *b = NULL;
	prolly_id root;
	char k[16], v[16];
	int rc = prolly_open(&db, "mem:", NULL) || prolly_txn_begin(&txn, db) ||
	         prolly_builder_new(&b, txn);
	for (int i = 0; i < 3000 && !rc; i++) {
		snprintf(k, sizeof(k), "k%05d", i * 2);
		snprintf(v, sizeof(v), "v%d", i);
		rc = prolly_builder_add(b, k, strlen(k), v, strlen(v));
	}
	rc = rc || prolly_builder_finish(b, &root) || prolly_txn_commit(txn, NULL, 0);
	static const char *const cases[][2] = {
	    {"k00000", NULL}, {"k00001", NULL}, {"zz", NULL}, {"k01000", "k01010"}, {"a", "b"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]) && !rc; i++) {
		prolly_buf out = PROLLY_BUF_INIT, p = PROLLY_BUF_INIT;
		prolly_slice from = {cases[i][0], strlen(cases[i][0])};
		prolly_slice to = {cases[i][1] ? cases[i][1] : "", cases[i][1] ? strlen(cases[i][1]) : 0};
		rc = prolly_prove(&p, db, &root, &from, cases[i][1] ? &to : NULL) ||
		     prolly__buf_put(&out, root.bytes, PROLLY_ID_SIZE) ||
		     prolly__buf_put(&out, p.ptr, p.size) ||
		     write_file(dir, "proof", (*seq)++, out.ptr, out.size);
		prolly_buf_dispose(&out);
		prolly_buf_dispose(&p);
	}
	prolly_builder_free(b);
	prolly_txn_free(txn);
	prolly_close(db);
	return rc ? 1 : 0;
}

/* Seeds for fuzz_redact: a byte choosing the prefix (0 none, 1 "postgresql://", 2
 * "postgresql://h/db?", 3 "host=h "), a byte choosing how the message quotes it (0 ', 1 ",
 * 2 bare), then the text. The forms are those that showed a password once: percent-encoded
 * and quoted keys, other letter cases, non-ASCII bytes in a key, quotes and spaces in a
 * password, a key=value string quoted in a message. */
static int redact_seeds(const char *dir)
{
	static const char *const cases[] = {
	    "\x00\x00postgresql://u:Sekr1t@h:5432/db?sslmode=disable",
	    "\x01\x01u:Sek@r1t@h/db",
	    "\x01\x02u:Sek r1t@h/db",
	    "\x01\x00u:Sek%72%31t@h/db",
	    "\x01\x01u:Sek\"r1t@[::1]:5432/db",
	    "\x02\x00password=Sekr1t&port=5",
	    "\x02\x01pass%77ord=Sekr1t",
	    "\x02\x02%70assword=Sek%20r1t&sslpassword=Sekr1t2",
	    "\x02\x00PASSWORD=Sekr1t",
	    "\x03\x00password=Sekr1t dbname=d",
	    "\x03\x01password='Sek r1t' port=1",
	    "\x03\x02password = 'Sek\\'r1t'",
	    "\x03\x00sslpassword=Sekr1t sslmode=require",
	    "\x03\x01'password'=Sekr1t",
	    "\x03\x02p\xc3\xa4ssword=Sekr1t",
	    "\x03\x00password Sekr1t",
	    "\x03\x01password=Sekr 1t port=1",
	    "\x00\x00host=h user=password password=Sekr1t",
	    "\x00\x01postgres://h/db?password=Sek#r1t&port=5",
	    "\x01\x00u:Se kr%31t@h/db",
	    "\x02\x01password = Sekr1t&port=5",
	    "\x01\x00u sslmode=\fSekr:\tSekr1t@h/db",
	    "\x01\x00%zz&sslpassword=Sekr1t&x:pw@h/db",
	};
	int rc = 0;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]) && !rc; i++)
		rc = write_file(dir, "redact", i, cases[i], strlen(cases[i] + 2) + 2);
	return rc ? 1 : 0;
}

/* Specs and names for fuzz_spec: the history's names with steps, its commits' ids cut to
 * several lengths, and malformed ones. */
static int spec_seeds(const char *dir, unsigned *seq)
{
	static const char *const fixed[] = {"main",
	                                    "main~3",
	                                    "main^2",
	                                    "main^2~1^",
	                                    "main~1^0^1",
	                                    "feature",
	                                    "feature~2",
	                                    "dev/x^",
	                                    "v1",
	                                    "v1~1",
	                                    "abcd",
	                                    "beef",
	                                    "beef^",
	                                    "solo~1",
	                                    "origin/main",
	                                    "origin/main~2",
	                                    "refs/heads/main",
	                                    "refs/tags/v1",
	                                    "main~",
	                                    "main~99",
	                                    "main^3",
	                                    "main~1000000001",
	                                    "-x",
	                                    "/x",
	                                    "a..b",
	                                    "a~b",
	                                    "",
	                                    "main\n",
	                                    "x@{1}",
	                                    "main@{0}",
	                                    "main@{3}~1",
	                                    "feature@{1}^",
	                                    "v1@{0}",
	                                    "main@{2023-11-14T22:13:20.000000Z}",
	                                    "main@{2023-11-14 22:13:20+00}~2",
	                                    "main@{2023-11-14 23:13+01:00}",
	                                    "main@{2024-02-29}",
	                                    "main@{2023-02-29}",
	                                    "main@{99}",
	                                    "main@{",
	                                    "main@{}",
	                                    "remotes/origin/main",
	                                    "0000",
	                                    "abc",
	                                    "ABCD",
	                                    "main~2^^"};
	prolly_db *db = NULL;
	int rc = spec_history_open(&db);
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]) && !rc; i++)
		rc = write_file(dir, "spec", (*seq)++, fixed[i], strlen(fixed[i]));
	static const char *const at[] = {"main", "main~4", "feature~1", "dev/x", "solo~1"};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]) && !rc; i++) {
		prolly_id id;
		char hex[PROLLY_ID_HEX_SIZE + 8];
		if ((rc = prolly_resolve(&id, db, at[i])))
			break;
		prolly_id_to_hex(hex, &id);
		static const size_t cut[] = {4, 7, 12, 63, 64};
		for (size_t j = 0; j < sizeof(cut) / sizeof(cut[0]) && !rc; j++)
			rc = write_file(dir, "spec", (*seq)++, hex, cut[j]);
		memcpy(hex + 64, "~1^1", 4);
		if (!rc)
			rc = write_file(dir, "spec", (*seq)++, hex, 68);
	}
	if (rc)
		fprintf(stderr, "gen_corpus: spec seeds: %s\n", prolly_last_error());
	prolly_close(db);
	return rc ? -1 : 0;
}

/* Writes the NUL-terminated texts as DIR/KIND/seed-NNNN, one file each. 0 or 1. */
static int write_texts(const char *dir, const char *kind, const char *const *texts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (write_file(dir, kind, (unsigned)i, texts[i], strlen(texts[i])) != 0)
			return 1;
	return 0;
}

/* Texts for fuzz_escape: escaped keys and values as a user types them (every escape, bytes
 * above 0x7f, the absent-value mark) and bad escapes. */
static int escape_seeds(const char *dir)
{
	static const char *const cases[] = {"plain key",
	                                    "tab\\there",
	                                    "a\\\\b\\nc",
	                                    "nul \\x00, caf\\xc3\\xa9",
	                                    "\\xFF\\x0d\\x0A",
	                                    "caf\xc3\xa9 \x1b[31m",
	                                    "\\-",
	                                    "bad \\q",
	                                    "short \\x4",
	                                    "end \\"};
	return write_texts(dir, "escape", cases, sizeof(cases) / sizeof(cases[0]));
}

/* CSV files for fuzz_csv: a raw file's header and rows as the harness writes them (fields
 * quoted by bench_csv_field), and hand-edited ones: CRLF, blank lines, short and long records,
 * an unclosed quote. */
static int csv_seeds(const char *dir)
{
	static const char *const fields[] = {"cell_id", "cell_rows", "value",          "s1", "2", "a,b",
	                                     "s1",      "2",         "say \"hi\"\ntwo"};
	static const char *const hand[] = {"a,b,c\r\n1,\"x\r\ny\",3\r\n\r\n4\n5,6,7,8\n\"q\"\"\",,2.5",
	                                   "x\n\n\"\"\n", "a,b\n1,\"open\n", "\"a\"b,c\rd\n,,\n"};
	bench_buf b = {0};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		bench_csv_field(&b, fields[i]);
		bench_buf_putc(&b, i % 3 == 2 ? '\n' : ',');
	}
	int rc = b.oom || write_file(dir, "csv", 0, b.p, b.n);
	for (unsigned i = 0; i < sizeof(hand) / sizeof(hand[0]) && !rc; i++)
		rc = write_file(dir, "csv", i + 1, hand[i], strlen(hand[i]));
	bench_buf_free(&b);
	return rc ? 1 : 0;
}

/* apply files for fuzz_apply: every kind of line, escapes, comments and empty lines, and the
 * malformed lines the tool names. */
static int apply_seeds(const char *dir)
{
	static const char *const cases[] = {
	    "put\tveg/carrot\torange\nput\tveg/kale\tgreen\ndel\tveg/kale\n",
	    "# a comment\n\nput\ttab\\there\tnul \\x00, caf\\xc3\\xa9\ndelr\ta\tb\n",
	    "delr\tb\ta\n",
	    "put\tx\n",
	    "upsert\tz\t3\n",
	    "put\tk\tv\r\n",
	    "del\tx\\q\n",
	    "put\tk\tv\tmore\nput\tlast\tno newline"};
	return write_texts(dir, "apply", cases, sizeof(cases) / sizeof(cases[0]));
}

/* Counts for fuzz_count: every suffix, fractions that come out whole and that do not, the
 * largest value, and texts just outside the grammar. */
static int count_seeds(const char *dir)
{
	static const char *const cases[] = {"0",
	                                    "1000",
	                                    "100k",
	                                    "1.5M",
	                                    "2G",
	                                    "0.001M",
	                                    "1.0001k",
	                                    "9223372036854775807",
	                                    "9223372036.854775807G",
	                                    "9223372037G",
	                                    ".5k",
	                                    "5.k",
	                                    "1e6",
	                                    "1.000000000000000000k"};
	return write_texts(dir, "count", cases, sizeof(cases) / sizeof(cases[0]));
}

/* URLs for fuzz_remote_url: of every store, with and without a password, in every place libpq
 * reads one (a connection string's value holding what looks like a URL's query, too); and a
 * password that the refusal's own words spell ("pass"). */
static int remote_url_seeds(const char *dir)
{
	static const char *const cases[] = {"mem:",
	                                    "lmdb:/tmp/x",
	                                    "lmdb:",
	                                    "postgresql://u@h:5432/db?sslmode=disable",
	                                    "postgres://u:Sekr1t@h/db",
	                                    "postgresql://u:@h/db",
	                                    "postgresql://h/db?pass%77ord=Sekr1t",
	                                    "postgresql://h/db?SSLPassword=Sekr1t",
	                                    "host=h dbname=d user=u",
	                                    "host=h password='Sek r1t'",
	                                    "host=h passwd=Sekr1t",
	                                    "dbname=d password Sekr1t",
	                                    "postgres://u:pass@h/db",
	                                    "host=h?x=a password=Sekr1t",
	                                    "x"};
	return write_texts(dir, "remote_url", cases, sizeof(cases) / sizeof(cases[0]));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	const char *dir = argv[1];
	unsigned ns = 0, cs = 0;
	int rc = 0;
	rc |= leaf(dir, &ns, 0, 0, 0);
	rc |= leaf(dir, &ns, 1, 0, 0);
	rc |= leaf(dir, &ns, 2, 1, 3);
	rc |= leaf(dir, &ns, 5, 0, 16);
	rc |= leaf(dir, &ns, 20, 24, 40);
	rc |= leaf(dir, &ns, 60, 0, 100);
	rc |= leaf(dir, &ns, 3, 2048, 10);
	rc |= leaf(dir, &ns, 1, 8, 3000);
	rc |= inner(dir, &ns, 1, 1, 0);
	rc |= inner(dir, &ns, 1, 2, 1);
	rc |= inner(dir, &ns, 2, 12, 0);
	rc |= inner(dir, &ns, 3, 40, 24);
	rc |= inner(dir, &ns, 63, 3, 0);
	rc |= inner(dir, &ns, 1, 2, 2048);
	rc |= commit(dir, &cs, 0, "");
	rc |= commit(dir, &cs, 1, "initial import");
	rc |= commit(dir, &cs, 2, "merge branch 'feature' into main\n\nwith a body");
	rc |= commit(dir, &cs, 5, "octopus");
	rc |= hdr_seeds(dir);
	unsigned ps = 0;
	rc |= proof_seeds(dir, &ps);
	rc |= redact_seeds(dir);
	unsigned ss = 0;
	rc |= spec_seeds(dir, &ss);
	rc |= escape_seeds(dir);
	rc |= csv_seeds(dir);
	rc |= remote_url_seeds(dir);
	rc |= apply_seeds(dir);
	rc |= count_seeds(dir);
	printf("gen_corpus: %u nodes, %u commits in %s\n", ns, cs, dir);
	return rc ? 1 : 0;
}
