/*
 * resolve_at.c - a ref's value N moves ago or at a time, from its reflog: the "@{...}" of a
 * revision spec (resolve.c).
 *
 *   NAME@{N}     the value branch (or tag) NAME had N moves ago: @{0} is its value now, @{N}
 *                the old value of the N-th newest entry of its reflog.
 *   NAME@{TIME}  the value it had at TIME: the new value of the newest entry written at or
 *                before TIME; when every entry is later, the old value of the oldest one.
 *
 * TIME is YYYY-MM-DD, then optionally 'T' or a space and HH:MM, HH:MM:SS or HH:MM:SS.FRACTION
 * (up to 9 digits, microseconds kept), then optionally a zone: Z, +HH, +HH:MM or +HHMM (or '-').
 * Without a zone it is UTC. So a time as `prolly log` prints it (2026-12-06T21:30:00.000000Z)
 * and as PostgreSQL prints a timestamptz (2026-12-06 21:30:00.5+00) are both taken as they are.
 *
 * Invariants:
 *   RA1 the answer comes from the reflog of refs/heads/NAME, or of refs/tags/NAME when the
 *       branch has none, so a branch deleted since still answers; but @{0} of a branch or tag
 *       that exists is its value now, as NAME alone (no reflog read).
 *   RA2 a value the reflog cannot tell is refused, never guessed: when the entries that would
 *       tell it are not there (gc expired them, keeping reflog_days; or they were never written,
 *       for a ref an older library or another client made, or for identical moves at one
 *       clock reading, which are one entry) the answer is PROLLY_EPRUNED; when the ref did not
 *       exist then (the oldest entry created it, or the entry found deleted it) it is
 *       PROLLY_ENOTFOUND.
 *   RA3 the selector is parsed before anything is read (resolve.c checks the whole spec first):
 *       a malformed one is PROLLY_EINVAL whatever the store holds.
 *   RA4 the entries are taken in the order prolly_reflog gives (newest first in the order the
 *       moves were written), so "the newest entry at or before TIME" follows the writes even
 *       where writers' clocks disagreed.
 *   RA5 a branch or tag whose reflog holds no entry (gc with reflog_days 0 expires them all)
 *       answers anything but @{0} (RA1) with PROLLY_EPRUNED; a name that is neither, and has no
 *       reflog, is PROLLY_ENOTFOUND.
 */
#include "internal.h"

#include <stdio.h>
#include <time.h>

#define MAX_COUNT 1000000000ULL

/* Days from 1970-01-01 to the proleptic Gregorian date y-m-d (m 1..12). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;                                  /* 0..399 */
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1; /* 0..365, from March */
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;          /* 0..146096 */
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : days[m - 1];
}

/* Reads exactly n digits at *p into *v, advancing *p; 0 when they are not all digits. */
static int digits(const char **p, const char *end, int n, int *v)
{
	int x = 0;
	if (end - *p < n)
		return 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return 0;
		x = x * 10 + (c - '0');
	}
	*p += n;
	*v = x;
	return 1;
}

/* Parses TIME (see above) in s[0..n) into microseconds since the epoch; 0 when it is one. */
static int parse_time(const char *s, size_t n, int64_t *out)
{
	const char *p = s, *end = s + n;
	int y, mo, d, h = 0, mi = 0, sec = 0, zh = 0, zm = 0, zsign = 0;
	int64_t us = 0;
	if (!digits(&p, end, 4, &y) || p == end || *p++ != '-' || !digits(&p, end, 2, &mo) ||
	    p == end || *p++ != '-' || !digits(&p, end, 2, &d))
		return 0;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
		return 0;
	if (p < end && (*p == 'T' || *p == 't' || *p == ' ')) {
		p++;
		if (!digits(&p, end, 2, &h) || p == end || *p++ != ':' || !digits(&p, end, 2, &mi))
			return 0;
		if (p < end && *p == ':') {
			p++;
			if (!digits(&p, end, 2, &sec))
				return 0;
			if (p < end && *p == '.') {
				int nd = 0;
				for (p++; p < end && *p >= '0' && *p <= '9'; p++, nd++)
					if (nd < 6)
						us = us * 10 + (*p - '0');
				if (nd == 0 || nd > 9)
					return 0;
				for (; nd < 6; nd++)
					us *= 10;
			}
		}
		if (h > 23 || mi > 59 || sec > 59)
			return 0;
	}
	if (p < end && (*p == 'Z' || *p == 'z')) {
		p++;
	} else if (p < end && (*p == '+' || *p == '-')) {
		zsign = *p++ == '-' ? -1 : 1;
		if (!digits(&p, end, 2, &zh))
			return 0;
		if (p < end && *p == ':')
			p++;
		if (p < end && !digits(&p, end, 2, &zm))
			return 0;
		if (zh > 23 || zm > 59)
			return 0;
	}
	if (p != end)
		return 0;
	int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	secs -= zsign * (zh * 3600 + zm * 60);
	*out = secs * 1000000 + us;
	return 1;
}

int prolly__reflog_sel_parse(prolly__reflog_sel *out, const char *s, size_t n, const char *spec)
{
	size_t i = 0;
	uint64_t v = 0;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		if (v <= MAX_COUNT)
			v = v * 10 + (uint64_t)(s[i] - '0');
	if (n > 0 && i == n) {
		if (v > MAX_COUNT)
			return prolly_set_error(PROLLY_EINVAL,
			                        "revision spec '%.200s': @{N} takes a count up to 10^9", spec);
		out->is_count = 1;
		out->count = v;
		return 0;
	}
	out->is_count = 0;
	if (!parse_time(s, n, &out->time_us))
		return prolly_set_error(PROLLY_EINVAL,
		                        "revision spec '%.200s': @{...} takes a count of moves or a time "
		                        "(YYYY-MM-DD[ HH:MM[:SS[.FRACTION]]][Z|+HH[:MM]]), not '%.*s'",
		                        spec, (int)(n < 80 ? n : 80), s);
	return 0;
}

/* Writes time_us as YYYY-MM-DDTHH:MM:SSZ (UTC) into buf. */
static void time_text(char buf[48], int64_t time_us)
{
	time_t t = (time_t)(time_us >= 0 ? time_us / 1000000 : (time_us - 999999) / 1000000);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(buf, 48, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, 48, "@%lld us", (long long)time_us);
}

typedef struct at_walk {
	const prolly__reflog_sel *sel;
	uint64_t seen;       /* entries looked at */
	int found, exists;   /* the entry that answers was found; the ref existed then */
	prolly_id value;     /* its value then */
	int oldest_has_old;  /* of the oldest entry looked at */
	int64_t oldest_time; /* its time */
} at_walk;

enum { STOP = 1 }; /* from the callback: the answer is found (never a library code) */

static int on_entry(void *payload, const prolly_reflog_entry *e)
{
	at_walk *w = payload;
	uint64_t i = w->seen++;
	if (w->sel->is_count ? w->sel->count == 0 : e->time_us <= w->sel->time_us) {
		w->found = 1; /* @{0}: the value now; @{TIME}: the move that left the ref as it was */
		w->exists = e->has_new;
		w->value = e->new_id;
		return STOP;
	}
	if (w->sel->is_count && i + 1 == w->sel->count) {
		w->found = 1; /* @{N}: the value before the N-th newest move */
		w->exists = e->has_old;
		w->value = e->old_id;
		return STOP;
	}
	w->oldest_has_old = e->has_old;
	w->oldest_time = e->time_us;
	return 0;
}

/* What branch name, else tag name, names now: 0, PROLLY_ENOTFOUND when neither exists, or an
 * error of the reads. */
static int value_now(prolly_id *out, prolly_db *db, const char *name)
{
	int rc = prolly_branch_head(out, db, name);
	return rc == PROLLY_ENOTFOUND ? prolly_tag_get(out, db, name) : rc;
}

int prolly__resolve_at(prolly_id *out, prolly_db *db, const char *name,
                       const prolly__reflog_sel *sel, const char *spec)
{
	static const char *const kinds[2] = {"refs/heads/", "refs/tags/"};
	char ref[PROLLY_MAX_REF_NAME + 1], when[48], oldest[48];
	at_walk w;
	int rc = prolly_branch_name_valid(name);
	if (rc)
		return prolly_set_error(rc, "revision spec '%.200s': @{...} follows a branch or tag name",
		                        spec);
	/* RA1: the value now, where there is one */
	if (sel->is_count && sel->count == 0 && (rc = value_now(out, db, name)) != PROLLY_ENOTFOUND)
		return rc;
	for (int k = 0; k < 2; k++) { /* RA1 */
		memset(&w, 0, sizeof(w));
		w.sel = sel;
		if (snprintf(ref, sizeof(ref), "%s%s", kinds[k], name) >= (int)sizeof(ref))
			return prolly_set_error(PROLLY_EINVAL, "revision spec '%.200s': name too long", spec);
		rc = prolly_reflog(db, ref, on_entry, &w);
		if (rc != 0 && rc != STOP)
			return rc;
		if (w.seen)
			break;
	}
	if (!w.seen) { /* RA5: no entry left */
		prolly_id now;
		if ((rc = value_now(&now, db, name)) == PROLLY_ENOTFOUND)
			return prolly_set_error(rc, "'%.200s': no branch or tag '%s' (nor a reflog of one)",
			                        spec, name);
		if (rc)
			return rc;
		return prolly_set_error(PROLLY_EPRUNED,
		                        "'%.200s': the reflog of '%s' holds no entry (they expired, or "
		                        "none was written)",
		                        spec, name);
	}
	if (w.found && w.exists) {
		*out = w.value;
		return 0;
	}
	if (sel->is_count)
		snprintf(when, sizeof(when), "%llu move%s ago", (unsigned long long)sel->count,
		         sel->count == 1 ? "" : "s");
	else
		time_text(when, sel->time_us);
	/* RA2: the move found left the ref absent (deleted, or not created yet), or every entry is
	 * later and the oldest created it */
	if (sel->is_count && sel->count == 0) /* found: the newest move deleted it */
		return prolly_set_error(PROLLY_ENOTFOUND, "'%.200s': '%s' was deleted by its last move",
		                        spec, name);
	if (w.found || !w.oldest_has_old)
		return prolly_set_error(PROLLY_ENOTFOUND, "'%.200s': '%s' did not exist %s%s", spec, name,
		                        sel->is_count ? "" : "at ", when);
	time_text(oldest, w.oldest_time);
	return prolly_set_error(PROLLY_EPRUNED,
	                        "'%.200s': the reflog of '%s' reaches back to %s (%llu move%s; the "
	                        "entries before expired, or were never written), not to %s",
	                        spec, name, oldest, (unsigned long long)w.seen, w.seen == 1 ? "" : "s",
	                        when);
}
