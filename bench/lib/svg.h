/*
 * svg.h - a small, dependency-free SVG chart writer for the benchmark reports.
 *
 * Two kinds of chart:
 *   line  several named series of (x, y) points, drawn as polylines with markers, in the order
 *         the points were added; optional log-scale x and/or y;
 *   bars  grouped bars: categories along x, one bar per series in each category; optional log y.
 * Both have a title, axis labels, axis ticks at "nice" numbers (1, 2 or 5 times a power of ten;
 * powers of ten on a log axis), light grid lines and a legend on the right.
 *
 * A file holds one chart or several stacked vertically (svg_write with n > 1), e.g. per-second
 * throughput above per-second p99 for one benchmark cell.
 *
 * Invariants:
 *   - deterministic: the same calls give the same bytes (no time, no locale: the harness never
 *     calls setlocale, so printf uses the "C" format; coordinates are printed with two decimals
 *     and -0.00 is printed as 0.00);
 *   - well formed: every text (title, labels, series and category names) is XML-escaped
 *     (& < > " ' as entities; control characters other than tab and newline become '?');
 *   - points or bars whose value is not finite, or not positive on a log axis, are left out; a
 *     chart with nothing to draw still renders, with a "no data" note;
 *   - series and categories keep the order of their first use; adding a bar twice for the same
 *     (category, series) replaces the value.
 *
 * Memory: a failed allocation makes the adding call return -1 and marks the chart, whose
 * rendering then fails too. Every free accepts NULL.
 */
#ifndef BENCH_SVG_H
#define BENCH_SVG_H

#include <stddef.h>

typedef struct svg_chart svg_chart;

#define SVG_WIDTH 760 /* default chart size in pixels */
#define SVG_HEIGHT 400

/* New charts (NULL on no memory). Any text may be NULL (left out). */
svg_chart *svg_line_new(const char *title, const char *x_label, const char *y_label);
svg_chart *svg_bars_new(const char *title, const char *x_label, const char *y_label);
void svg_free(svg_chart *c);

void svg_set_size(svg_chart *c, int width, int height); /* <= 0 keeps the current value */
void svg_set_log_x(svg_chart *c, int on);               /* line charts only */
void svg_set_log_y(svg_chart *c, int on);
/* A linear y axis that starts at v (or lower, at a nice number below the smallest value), not
 * at 0, and bars that grow from its bottom: ratios near 1.0 (relative QPS) stay readable. NaN
 * restores the default (from 0). No effect on a log axis. */
void svg_set_y_from(svg_chart *c, double v);

/* Line charts: appends (x, y) to the named series (created on first use). */
int svg_point(svg_chart *c, const char *series, double x, double y);
/* Bar charts: sets the bar of (category, series), creating either on first use. */
int svg_bar(svg_chart *c, const char *category, const char *series, double value);
/* Declares a series (either kind) without data: fixes its place in the legend and its colour. */
int svg_series(svg_chart *c, const char *name);
/* Declares a category without a bar (keeps the category order stable when some are empty). */
int svg_category(svg_chart *c, const char *category);

/* The document holding the n charts stacked vertically (malloc'd, NUL-terminated), or NULL on no
 * memory, n == 0 or a chart marked by a failed allocation. */
char *svg_render(const svg_chart *const *charts, size_t n);
/* Writes svg_render's document to path (replacing it). */
int svg_write(const char *path, const svg_chart *const *charts, size_t n, char *err, size_t errn);

/* ---- helpers, exposed for tests and for other writers --------------------------------------- */

/* A "nice" number near x > 0: 1, 2, 5 or 10 times a power of ten; round != 0 picks the nearest,
 * round == 0 the smallest nice number >= x. */
double svg_nice(double x, int round);
/* Ticks for a linear axis over [*lo, *hi] with about `target` (>= 2) ticks: the step is a nice
 * number and *lo / *hi are widened to multiples of it; the ticks (at most max) go to ticks[].
 * lo == hi is widened around the value. Returns the number of ticks and sets *step. */
int svg_ticks(double *ticks, int max, double *lo, double *hi, int target, double *step);
/* Ticks for a log axis over [*lo, *hi] (both > 0): *lo / *hi widened to powers of ten; ticks at
 * each power of ten, plus 2x and 5x when the range spans fewer than three decades. */
int svg_log_ticks(double *ticks, int max, double *lo, double *hi);
/* A compact label for a number: "0", "0.25", "20", "1.5k", "2M", "1G" (at most 4 significant
 * digits). */
void svg_fmt_num(char *out, size_t n, double v);
/* XML-escapes s into out (always NUL-terminated if n > 0, truncated at a character boundary of
 * the escaped form); returns the length the whole escaped string needs. */
size_t svg_escape(char *out, size_t n, const char *s);

#endif
