/*
 * abi.c - the versioned structs of the contract: their init functions and the one version check
 * of each.
 *
 * Every struct the caller allocates starts with `unsigned version` (prolly.h, "Versioned
 * structs"). The library checks it here, once per struct, and every entry point that takes such
 * a struct calls the check before doing anything else. Output structs are filled through a
 * *_put function that writes only the fields of the caller's version. prolly_options is at
 * version 2 (interrupt and its payload; version 1's layout is options_v1 below); every other
 * struct is at version 1, its whole current layout. When a struct grows, its *_VERSION goes up,
 * the old layout stays here as a private struct, and its check accepts 1..*_VERSION.
 *
 * The stores' own structs (prolly_pg_options, prolly_pg_stats, prolly_lmdb_snapshot) are checked
 * by their store, the same way.
 */
#include "internal.h"

static int bad_version(const char *type, const char *macro, unsigned got, unsigned newest)
{
	return prolly_set_error(PROLLY_EINVAL,
	                        "%s.version is %u, which this library (prolly %s) does not know (it "
	                        "knows 1 to %u): initialise the struct with %s or %s_init()",
	                        type, got, PROLLY_VERSION_STRING, newest, macro, type);
}

static int null_arg(const char *fn)
{
	return prolly_set_error(PROLLY_EINVAL, "%s: NULL argument", fn);
}

/* ---- prolly_options ---- */

/* Version 1's layout: the struct before interrupt and interrupt_payload. */
typedef struct options_v1 {
	unsigned version;
	size_t cache_bytes;
	unsigned retain_commits;
	size_t flush_bytes;
	unsigned reflog_days;
	int64_t clock_us;
	unsigned flags;
} options_v1;

int prolly__options_check(const prolly_options *opts)
{
	const unsigned known = PROLLY_DB_NO_THREADS;
	if (opts && (opts->version < 1 || opts->version > PROLLY_OPTIONS_VERSION))
		return bad_version("prolly_options", "PROLLY_OPTIONS_INIT", opts->version,
		                   PROLLY_OPTIONS_VERSION);
	/* A flag of a newer header asks for something this library would not do (as NO_THREADS
	 * asks a host that forbids threads): failing loudly beats ignoring it. */
	if (opts && (opts->flags & ~known))
		return prolly_set_error(PROLLY_EINVAL,
		                        "prolly_options.flags has bits 0x%x, which this library (prolly "
		                        "%s) does not know (it knows 0x%x)",
		                        opts->flags & ~known, PROLLY_VERSION_STRING, known);
	return 0;
}

int prolly_options_init(prolly_options *opts, unsigned version)
{
	if (!opts)
		return null_arg("prolly_options_init");
	if (version < 1 || version > PROLLY_OPTIONS_VERSION)
		return bad_version("prolly_options", "PROLLY_OPTIONS_INIT", version,
		                   PROLLY_OPTIONS_VERSION);
	const prolly_options defaults = PROLLY_OPTIONS_INIT;
	if (version == 1) { /* a caller's version-1 struct: its fields only */
		memcpy(opts, &defaults, sizeof(options_v1));
		opts->version = 1;
	} else {
		*opts = defaults;
	}
	return 0;
}

int prolly__options_load(prolly_options *dst, const prolly_options *src)
{
	int rc = prolly__options_check(src);
	if (rc)
		return rc;
	prolly_options_init(dst, PROLLY_OPTIONS_VERSION);
	if (src && src->version == 1)
		memcpy(dst, src, sizeof(options_v1)); /* interrupt stays NULL */
	else if (src)
		*dst = *src;
	dst->version = PROLLY_OPTIONS_VERSION;
	return 0;
}

/* ---- prolly_stats ---- */

int prolly__stats_check(const prolly_stats *s)
{
	if (s && s->version != PROLLY_STATS_VERSION)
		return bad_version("prolly_stats", "PROLLY_STATS_INIT", s->version, PROLLY_STATS_VERSION);
	return 0;
}

int prolly_stats_init(prolly_stats *stats, unsigned version)
{
	if (!stats)
		return null_arg("prolly_stats_init");
	if (version != PROLLY_STATS_VERSION)
		return bad_version("prolly_stats", "PROLLY_STATS_INIT", version, PROLLY_STATS_VERSION);
	memset(stats, 0, sizeof(*stats));
	stats->version = version;
	return 0;
}

int prolly__stats_put(prolly_stats *out, const prolly_stats *full)
{
	int rc = out ? prolly__stats_check(out) : null_arg("prolly_stats");
	if (rc)
		return rc;
	*out = *full; /* version 1 is the whole struct */
	out->version = PROLLY_STATS_VERSION;
	return 0;
}

/* ---- prolly_range ---- */

int prolly__range_check(const prolly_range *r)
{
	if (r && r->version != PROLLY_RANGE_VERSION)
		return bad_version("prolly_range", "PROLLY_RANGE_INIT", r->version, PROLLY_RANGE_VERSION);
	return 0;
}

int prolly_range_init(prolly_range *range, unsigned version)
{
	if (!range)
		return null_arg("prolly_range_init");
	if (version != PROLLY_RANGE_VERSION)
		return bad_version("prolly_range", "PROLLY_RANGE_INIT", version, PROLLY_RANGE_VERSION);
	memset(range, 0, sizeof(*range));
	range->version = version;
	return 0;
}

/* ---- prolly_tree_stats ---- */

int prolly__tree_stats_check(const prolly_tree_stats *s)
{
	if (!s)
		return null_arg("prolly_tree_stats_get");
	if (s->version != PROLLY_TREE_STATS_VERSION)
		return bad_version("prolly_tree_stats", "PROLLY_TREE_STATS_INIT", s->version,
		                   PROLLY_TREE_STATS_VERSION);
	return 0;
}

int prolly_tree_stats_init(prolly_tree_stats *stats, unsigned version)
{
	if (!stats)
		return null_arg("prolly_tree_stats_init");
	if (version != PROLLY_TREE_STATS_VERSION)
		return bad_version("prolly_tree_stats", "PROLLY_TREE_STATS_INIT", version,
		                   PROLLY_TREE_STATS_VERSION);
	memset(stats, 0, sizeof(*stats));
	stats->version = version;
	return 0;
}

void prolly__tree_stats_put(prolly_tree_stats *out, const prolly_tree_stats *full)
{
	*out = *full; /* version 1 is the whole struct */
	out->version = PROLLY_TREE_STATS_VERSION;
}

/* ---- prolly_merge_options, prolly_merge_stats ---- */

int prolly__merge_check(const prolly_merge_options *opts, const prolly_merge_stats *stats)
{
	if (opts && opts->version != PROLLY_MERGE_OPTIONS_VERSION)
		return bad_version("prolly_merge_options", "PROLLY_MERGE_OPTIONS_INIT", opts->version,
		                   PROLLY_MERGE_OPTIONS_VERSION);
	if (stats && stats->version != PROLLY_MERGE_STATS_VERSION)
		return bad_version("prolly_merge_stats", "PROLLY_MERGE_STATS_INIT", stats->version,
		                   PROLLY_MERGE_STATS_VERSION);
	return 0;
}

int prolly_merge_options_init(prolly_merge_options *opts, unsigned version)
{
	if (!opts)
		return null_arg("prolly_merge_options_init");
	if (version != PROLLY_MERGE_OPTIONS_VERSION)
		return bad_version("prolly_merge_options", "PROLLY_MERGE_OPTIONS_INIT", version,
		                   PROLLY_MERGE_OPTIONS_VERSION);
	const prolly_merge_options defaults = PROLLY_MERGE_OPTIONS_INIT;
	*opts = defaults;
	return 0;
}

int prolly_merge_stats_init(prolly_merge_stats *stats, unsigned version)
{
	if (!stats)
		return null_arg("prolly_merge_stats_init");
	if (version != PROLLY_MERGE_STATS_VERSION)
		return bad_version("prolly_merge_stats", "PROLLY_MERGE_STATS_INIT", version,
		                   PROLLY_MERGE_STATS_VERSION);
	memset(stats, 0, sizeof(*stats));
	stats->version = version;
	return 0;
}

void prolly__merge_stats_put(prolly_merge_stats *out, const prolly_merge_stats *full)
{
	if (!out)
		return;
	*out = *full; /* version 1 is the whole struct */
	out->version = PROLLY_MERGE_STATS_VERSION;
}

/* ---- prolly_gc_result ---- */

int prolly__gc_result_check(const prolly_gc_result *r)
{
	if (r && r->version != PROLLY_GC_RESULT_VERSION)
		return bad_version("prolly_gc_result", "PROLLY_GC_RESULT_INIT", r->version,
		                   PROLLY_GC_RESULT_VERSION);
	return 0;
}

int prolly_gc_result_init(prolly_gc_result *result, unsigned version)
{
	if (!result)
		return null_arg("prolly_gc_result_init");
	if (version != PROLLY_GC_RESULT_VERSION)
		return bad_version("prolly_gc_result", "PROLLY_GC_RESULT_INIT", version,
		                   PROLLY_GC_RESULT_VERSION);
	memset(result, 0, sizeof(*result));
	result->version = version;
	return 0;
}

void prolly__gc_result_put(prolly_gc_result *out, const prolly_gc_result *full)
{
	if (!out)
		return;
	*out = *full; /* version 1 is the whole struct */
	out->version = PROLLY_GC_RESULT_VERSION;
}

/* ---- prolly_sync_options, prolly_sync_stats ---- */

int prolly__sync_check(const prolly_sync_options *opts, const prolly_sync_stats *stats)
{
	if (opts && opts->version != PROLLY_SYNC_OPTIONS_VERSION)
		return bad_version("prolly_sync_options", "PROLLY_SYNC_OPTIONS_INIT", opts->version,
		                   PROLLY_SYNC_OPTIONS_VERSION);
	if (stats && stats->version != PROLLY_SYNC_STATS_VERSION)
		return bad_version("prolly_sync_stats", "PROLLY_SYNC_STATS_INIT", stats->version,
		                   PROLLY_SYNC_STATS_VERSION);
	return 0;
}

int prolly_sync_options_init(prolly_sync_options *opts, unsigned version)
{
	if (!opts)
		return null_arg("prolly_sync_options_init");
	if (version != PROLLY_SYNC_OPTIONS_VERSION)
		return bad_version("prolly_sync_options", "PROLLY_SYNC_OPTIONS_INIT", version,
		                   PROLLY_SYNC_OPTIONS_VERSION);
	const prolly_sync_options defaults = PROLLY_SYNC_OPTIONS_INIT;
	*opts = defaults;
	return 0;
}

int prolly_sync_stats_init(prolly_sync_stats *stats, unsigned version)
{
	if (!stats)
		return null_arg("prolly_sync_stats_init");
	if (version != PROLLY_SYNC_STATS_VERSION)
		return bad_version("prolly_sync_stats", "PROLLY_SYNC_STATS_INIT", version,
		                   PROLLY_SYNC_STATS_VERSION);
	memset(stats, 0, sizeof(*stats));
	stats->version = version;
	return 0;
}

void prolly__sync_stats_add(prolly_sync_stats *total, const prolly_sync_stats *one)
{
	total->commits_copied += one->commits_copied;
	total->nodes_copied += one->nodes_copied;
	total->bytes_copied += one->bytes_copied;
	total->has_calls += one->has_calls;
	total->read_calls += one->read_calls;
	total->write_calls += one->write_calls;
}

void prolly__sync_stats_put(prolly_sync_stats *out, const prolly_sync_stats *full)
{
	if (!out)
		return;
	*out = *full; /* version 1 is the whole struct */
	out->version = PROLLY_SYNC_STATS_VERSION;
}
