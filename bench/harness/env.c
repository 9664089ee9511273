/*
 * env.c - the provenance files of a result directory, as "key: value" lines (one per line, the
 * value trimmed, never a newline inside):
 *
 *   machine.txt       os, kernel, arch, cpu_model, cpus (online), cpus_configured, memory_gib
 *                     (total RAM in GiB rounded to 0.1), hugepages_total, hugepage_kib,
 *                     transparent_hugepage, cpu_governor, load1 (at start), virtualization
 *                     (hypervisor CPU flag and the DMI product when readable), container. The
 *                     host name is left out on purpose: it is not material and need not leak.
 *   dependencies.txt  prolly, compiler, optimized, build_flags, sanitizers, libpq, openssl, lmdb,
 *                     xxhash, glibc
 *   binary.sha256     "<hex>  <path>" of the running executable, as sha256sum prints it
 *   postgres.txt      (PostgreSQL store only) target (host, port and database only), schema,
 *                     server_version, server_version_num, server_version_major, the settings that
 *                     matter for the numbers (current_setting() text, "(absent)" when the server
 *                     has no such setting) and pg_stat_statements: available|missing
 *
 * Material keys (he_material_machine, he_material_postgres) are the ones gates.c compares before
 * it lets two runs be compared. Nothing here writes a URL or a password.
 */
#include "buf.h"
#include "harness.h"
#include "pgconn.h"
#include "prolly.h"

#include <errno.h>
#include <gnu/libc-version.h>
#include <libpq-fe.h>
#include <lmdb.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <xxhash.h>

const char *const he_material_machine[] = {"arch", "cpu_model", "cpus", "memory_gib", NULL};
const char *const he_material_postgres[] = {"server_version_major",
                                            "shared_buffers",
                                            "synchronous_commit",
                                            "fsync",
                                            "full_page_writes",
                                            "wal_level",
                                            NULL};

/* The server settings postgres.txt records, in this order. */
static const char *const pg_settings_list[] = {"shared_buffers",
                                               "work_mem",
                                               "maintenance_work_mem",
                                               "effective_cache_size",
                                               "synchronous_commit",
                                               "fsync",
                                               "full_page_writes",
                                               "wal_level",
                                               "wal_compression",
                                               "wal_sync_method",
                                               "max_wal_size",
                                               "checkpoint_timeout",
                                               "commit_delay",
                                               "track_io_timing",
                                               "shared_preload_libraries",
                                               "default_toast_compression",
                                               "max_connections",
                                               "huge_pages",
                                               "jit",
                                               "data_checksums",
                                               NULL};

static void trim(char *s)
{
	size_t n = strlen(s), k = 0;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	while (s[k] == ' ' || s[k] == '\t')
		k++;
	memmove(s, s + k, n - k + 1);
}

/* "key: value\n"; newlines inside the value become spaces. */
static void put(FILE *f, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put(FILE *f, const char *key, const char *fmt, ...)
{
	char v[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	for (char *p = v; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	trim(v);
	fprintf(f, "%s: %s\n", key, v);
}

/* The whole of path into b: a FIFO or a directory left in a result directory (a baseline's
 * machine.txt) is refused at once, where fopen() blocked on the FIFO for ever. 0, or -1. */
static int read_text(bench_buf *b, const char *path)
{
	return bench_buf_read_file(b, path, H_MAX_TEXT_BYTES, NULL) == 0 ? 0 : -1;
}

/* The first line of path into out (trimmed); 0, or -1 if unreadable. */
static int read_line(char *out, size_t n, const char *path)
{
	bench_buf b = {0};
	char *at, *line;
	int rc = -1;
	out[0] = '\0';
	if (read_text(&b, path) == 0 && (at = b.p, line = bench_next_line(&at))) {
		snprintf(out, n, "%s", line);
		trim(out);
		rc = 0;
	}
	bench_buf_free(&b);
	return rc;
}

/* Value of the first "key<sep>value" line of path whose key (trimmed) is key; 0 if found. */
static int file_field(char *out, size_t n, const char *path, const char *key, char sep)
{
	bench_buf b = {0};
	char *at, *line;
	int rc = -1;
	out[0] = '\0';
	if (read_text(&b, path) != 0) {
		bench_buf_free(&b);
		return -1;
	}
	at = b.p;
	while (rc != 0 && (line = bench_next_line(&at))) {
		char *s = strchr(line, sep);
		if (!s)
			continue;
		*s = '\0';
		trim(line);
		if (strcmp(line, key) != 0)
			continue;
		snprintf(out, n, "%s", s + 1);
		trim(out);
		if (sep == '=' && strlen(out) >= 2 && out[0] == '"' && out[strlen(out) - 1] == '"') {
			memmove(out, out + 1, strlen(out));
			out[strlen(out) - 1] = '\0';
		}
		rc = 0;
	}
	bench_buf_free(&b);
	return rc;
}

/* ---- machine.txt ----------------------------------------------------------------------------- */

static void write_machine(FILE *f)
{
	struct utsname u;
	struct sysinfo si;
	char buf[512], buf2[256];
	double load[3];

	if (file_field(buf, sizeof(buf), "/etc/os-release", "PRETTY_NAME", '=') != 0)
		snprintf(buf, sizeof(buf), "unknown");
	put(f, "os", "%s", buf);
	if (uname(&u) == 0) {
		put(f, "kernel", "%s %s", u.sysname, u.release);
		put(f, "arch", "%s", u.machine);
	} else {
		put(f, "kernel", "unknown");
		put(f, "arch", "unknown");
	}
	if (file_field(buf, sizeof(buf), "/proc/cpuinfo", "model name", ':') != 0 &&
	    file_field(buf, sizeof(buf), "/proc/cpuinfo", "Hardware", ':') != 0 &&
	    file_field(buf, sizeof(buf), "/proc/cpuinfo", "CPU part", ':') != 0)
		snprintf(buf, sizeof(buf), "unknown");
	put(f, "cpu_model", "%s", buf);
	put(f, "cpus", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	put(f, "cpus_configured", "%ld", sysconf(_SC_NPROCESSORS_CONF));
	if (sysinfo(&si) == 0)
		put(f, "memory_gib", "%.1f",
		    (double)si.totalram * (double)si.mem_unit / (1024.0 * 1024.0 * 1024.0));
	else
		put(f, "memory_gib", "unknown");
	put(f, "hugepages_total", "%s",
	    file_field(buf, sizeof(buf), "/proc/meminfo", "HugePages_Total", ':') == 0 ? buf
	                                                                               : "unknown");
	if (file_field(buf, sizeof(buf), "/proc/meminfo", "Hugepagesize", ':') == 0)
		put(f, "hugepage_kib", "%ld", strtol(buf, NULL, 10));
	/* "always [madvise] never": the bracketed word is the mode in force. */
	if (read_line(buf, sizeof(buf), "/sys/kernel/mm/transparent_hugepage/enabled") == 0) {
		char *a = strchr(buf, '['), *b = a ? strchr(a, ']') : NULL;
		if (a && b) {
			*b = '\0';
			memmove(buf, a + 1, strlen(a + 1) + 1);
		}
	} else {
		snprintf(buf, sizeof(buf), "unknown");
	}
	put(f, "transparent_hugepage", "%s", buf);
	if (read_line(buf, sizeof(buf), "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") != 0)
		snprintf(buf, sizeof(buf), "unknown");
	put(f, "cpu_governor", "%s", buf);
	if (getloadavg(load, 1) == 1)
		put(f, "load1", "%.2f", load[0]);
	/* Virtualization: the CPU's hypervisor flag, and the DMI product name when it is readable. */
	int vm = file_field(buf, sizeof(buf), "/proc/cpuinfo", "flags", ':') == 0 &&
	         strstr(buf, " hypervisor") != NULL;
	if (read_line(buf2, sizeof(buf2), "/sys/class/dmi/id/product_name") != 0)
		buf2[0] = '\0';
	put(f, "virtualization", "%s%s%s%s", vm ? "hypervisor" : "none", buf2[0] ? " (" : "", buf2,
	    buf2[0] ? ")" : "");
	put(f, "container", "%s",
	    access("/.dockerenv", F_OK) == 0          ? "docker"
	    : access("/run/.containerenv", F_OK) == 0 ? "podman"
	                                              : "none");
}

/* ---- dependencies.txt ------------------------------------------------------------------------ */

static void write_dependencies(FILE *f)
{
	int maj, min, pat;
	unsigned xx = XXH_versionNumber();
	int pq = PQlibVersion();

	put(f, "prolly", "%s", PROLLY_VERSION_STRING);
#if defined(__clang__)
	put(f, "compiler", "clang %s", __clang_version__);
#elif defined(__GNUC__)
	put(f, "compiler", "gcc %s", __VERSION__);
#else
	put(f, "compiler", "unknown");
#endif
#ifdef __OPTIMIZE__
	put(f, "optimized", "yes");
#else
	put(f, "optimized", "no");
#endif
#ifdef HARNESS_OPT
	put(f, "build_flags", "%s", HARNESS_OPT); /* the Makefile's OPT: "-O2 -g", NATIVE=1's */
#endif
#if defined(__SANITIZE_ADDRESS__)
	put(f, "sanitizers", "address");
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	put(f, "sanitizers", "address");
#else
	put(f, "sanitizers", "none");
#endif
#else
	put(f, "sanitizers", "none");
#endif
	if (pq >= 100000)
		put(f, "libpq", "%d.%d", pq / 10000, pq % 10000);
	else
		put(f, "libpq", "%d.%d.%d", pq / 10000, pq / 100 % 100, pq % 100);
	put(f, "openssl", "%s", OpenSSL_version(OPENSSL_VERSION));
	put(f, "lmdb", "%s", mdb_version(&maj, &min, &pat));
	put(f, "xxhash", "%u.%u.%u", xx / 10000, xx / 100 % 100, xx % 100);
	put(f, "glibc", "%s", gnu_get_libc_version());
}

/* ---- binary.sha256 --------------------------------------------------------------------------- */

static int write_binary_sha(FILE *out, char *err, size_t errn)
{
	char exe[4096];
	unsigned char md[EVP_MAX_MD_SIZE], chunk[65536];
	unsigned mdlen = 0;
	size_t got;
	int rc = -1;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *f = fopen("/proc/self/exe", "rb");
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (n < 0)
		snprintf(exe, sizeof(exe), "/proc/self/exe");
	else
		exe[n] = '\0';
	if (!f || !ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		bench_seterr(err, errn, "hashing %s: %s", exe, f ? "OpenSSL failure" : strerror(errno));
		goto cleanup;
	}
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (EVP_DigestUpdate(ctx, chunk, got) != 1)
			break;
	if (ferror(f) || !feof(f) || EVP_DigestFinal_ex(ctx, md, &mdlen) != 1) {
		bench_seterr(err, errn, "hashing %s: read or digest failure", exe);
		goto cleanup;
	}
	for (unsigned i = 0; i < mdlen; i++)
		fprintf(out, "%02x", md[i]);
	fprintf(out, "  %s\n", exe);
	rc = 0;
cleanup:
	if (f)
		fclose(f);
	EVP_MD_CTX_free(ctx);
	return rc;
}

/* ---- postgres.txt ---------------------------------------------------------------------------- */

/* libpq's message on one line, any password of url hidden (prolly_redact_message). */
static void pq_err(char *err, size_t errn, const char *what, PGconn *pg, const char *url)
{
	char m[400];
	prolly_redact_message(m, sizeof(m), pg ? PQerrorMessage(pg) : "out of memory", url);
	trim(m);
	bench_seterr(err, errn, "postgres.txt: %s: %s", what, m);
}

/* One text value of a one-row query; malloc'd, NULL on failure. */
static char *one_value(PGconn *pg, const char *sql)
{
	PGresult *r = PQexec(pg, sql);
	char *v = NULL;
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
		v = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

static int write_postgres(FILE *f, const char *url, const char *schema, char *err, size_t errn)
{
	PGconn *pg = NULL;
	PGresult *r = NULL;
	char *v = NULL, list[1024] = "{";
	int rc = -1;
	if (bench_pg_connect_as(&pg, url, "prolly-harness-env", 15)) {
		bench_seterr(err, errn, "postgres.txt: cannot connect: %s", prolly_last_error());
		goto cleanup;
	}
	const char *host = PQhost(pg), *port = PQport(pg), *db = PQdb(pg);
	put(f, "target", "host=%s port=%s dbname=%s", host && *host ? host : "(default)",
	    port && *port ? port : "(default)", db ? db : "");
	if (schema)
		put(f, "schema", "%s", schema);
	if (!(v = one_value(pg, "SHOW server_version"))) {
		pq_err(err, errn, "SHOW server_version", pg, url);
		goto cleanup;
	}
	int num = PQserverVersion(pg);
	put(f, "server_version", "%s", v);
	put(f, "server_version_num", "%d", num);
	put(f, "server_version_major", "%d", num >= 100000 ? num / 10000 : num / 100);

	for (size_t i = 0; pg_settings_list[i]; i++) {
		size_t l = strlen(list);
		snprintf(list + l, sizeof(list) - l, "%s%s", i ? "," : "", pg_settings_list[i]);
	}
	strncat(list, "}", sizeof(list) - strlen(list) - 1);
	const char *params[1] = {list};
	r = PQexecParams(pg,
	                 "SELECT name, current_setting(name) FROM pg_settings "
	                 "WHERE name = ANY($1::text[])",
	                 1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		pq_err(err, errn, "reading pg_settings", pg, url);
		goto cleanup;
	}
	const char *preload = "";
	for (size_t i = 0; pg_settings_list[i]; i++) {
		const char *val = "(absent)";
		for (int k = 0; k < PQntuples(r); k++)
			if (strcmp(PQgetvalue(r, k, 0), pg_settings_list[i]) == 0)
				val = PQgetvalue(r, k, 1);
		if (strcmp(pg_settings_list[i], "shared_preload_libraries") == 0)
			preload = val;
		put(f, pg_settings_list[i], "%s", val);
	}
	/* Usable when it can be read already, or when the library is preloaded and the extension
	 * can be created (hp_connect tries). shared_preload_libraries is hidden from ordinary roles. */
	free(v);
	v = NULL;
	char rel[200] = "", probe[256];
	(void)bench_pg_ext_object(rel, sizeof(rel), pg, "pg_stat_statements", "pg_stat_statements");
	snprintf(probe, sizeof(probe), "SELECT count(*) FROM %s LIMIT 1", rel);
	if (rel[0])
		v = one_value(pg, probe);
	int avail = v != NULL;
	if (!avail) {
		v = one_value(pg, "SELECT count(*) FROM pg_available_extensions "
		                  "WHERE name = 'pg_stat_statements'");
		avail = v && strcmp(v, "0") != 0 && strstr(preload, "pg_stat_statements") != NULL;
	}
	put(f, "pg_stat_statements", "%s", avail ? "available" : "missing");
	rc = 0;
cleanup:
	free(v);
	PQclear(r);
	PQfinish(pg);
	return rc;
}

/* ---- the files ------------------------------------------------------------------------------- */

enum { F_MACHINE, F_DEPS, F_SHA, F_PG };

static int write_one(const char *dir, const char *name, int which, const char *url,
                     const char *schema, char *err, size_t errn)
{
	char path[4352], tmp[4352];
	int rc = 0;
	/* Beside the file, then renamed over it: a FIFO left in its place (a resumed run writes the
	 * files again) blocked fopen(path, "w") for ever. */
	FILE *f = h_file_begin(path, tmp, sizeof(path), dir, name, err, errn);
	if (!f)
		return -1;
	switch (which) {
	case F_MACHINE: write_machine(f); break;
	case F_DEPS: write_dependencies(f); break;
	case F_SHA: rc = write_binary_sha(f, err, errn); break;
	default: rc = write_postgres(f, url, schema, err, errn); break;
	}
	if (rc != 0)
		h_file_abort(f, tmp);
	else
		rc = h_file_commit(f, tmp, path, err, errn);
	if (rc != 0)
		unlink(path); /* no provenance of an earlier invocation left as this one's */
	return rc;
}

int he_write_all(const char *dir, const char *url, const char *schema, char *err, size_t errn)
{
	if (write_one(dir, "machine.txt", F_MACHINE, NULL, NULL, err, errn) != 0 ||
	    write_one(dir, "dependencies.txt", F_DEPS, NULL, NULL, err, errn) != 0 ||
	    write_one(dir, "binary.sha256", F_SHA, NULL, NULL, err, errn) != 0)
		return -1;
	if (url && write_one(dir, "postgres.txt", F_PG, url, schema, err, errn) != 0)
		return -1;
	return 0;
}

char *he_read_value(const char *file, const char *key)
{
	char v[4096];
	if (!file || !key || file_field(v, sizeof(v), file, key, ':') != 0)
		return NULL;
	return strdup(v);
}
