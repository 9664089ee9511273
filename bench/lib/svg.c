/*
 * svg.c - the SVG chart writer described in svg.h.
 *
 * A chart is rendered into a growing text buffer. Layout of one chart (pixels, y down):
 *
 *   title                      centred at y = 24
 *   plot area                  x in [PAD_L, W - legend], y in [PAD_T, H - bottom]
 *   legend                     right of the plot area, one row of 18 px per series
 *   x tick labels, x label     below the plot area; y tick labels and the rotated y label left
 *
 * Bar charts widen themselves when their groups do not fit the default width, and rotate the
 * category labels (growing the bottom margin) when the labels are wider than a group.
 * Coordinates are printed with "%.2f" after rounding to hundredths, and -0 becomes 0, so the
 * output depends only on the data.
 */
#include "svg.h"

#include "buf.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAD_L 76.0 /* left of the plot area: y tick labels and the y label */
#define PAD_T 46.0 /* above: the title */
#define PAD_B 56.0 /* below: x tick labels and the x label */
#define PAD_R 24.0 /* right, when there is no legend */
#define LEGEND_W 176.0
#define CHAR_W 6.6 /* average width of a 12 px sans-serif character */
#define MAX_TICKS 64
#define MAX_MARKERS 120 /* series with more points are drawn without markers */

static const char *const palette[] = {
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
};
#define N_PALETTE (sizeof(palette) / sizeof(palette[0]))

enum { KIND_LINE, KIND_BARS };

typedef struct series {
	char *name;
	double *x, *y;
	size_t n, cap;
} series;

typedef struct bar {
	size_t cat, ser;
	double v;
} bar;

struct svg_chart {
	int kind;
	char *title, *x_label, *y_label;
	int width, height;
	int log_x, log_y;
	int has_y_from; /* svg_set_y_from: a linear y axis starts at y_from, not at 0 */
	double y_from;
	int oom; /* an allocation failed: rendering fails */
	series *ser;
	size_t nser, capser;
	char **cats;
	size_t ncat, capcat;
	bar *bars;
	size_t nbars, capbars;
};

/* ---- text buffer ---------------------------------------------------------------------------- */

static void sb_text(bench_buf *b, const char *s)
{
	if (!s)
		return;
	size_t need = svg_escape(NULL, 0, s);
	if (bench_buf_reserve(b, need))
		return;
	svg_escape(b->p + b->n, need + 1, s);
	b->n += need;
}

/* A coordinate rounded to hundredths, never -0. */
static double c2(double v)
{
	v = round(v * 100.0) / 100.0;
	return v == 0 ? 0.0 : v;
}

/* ---- helpers ---------------------------------------------------------------------------------- */

size_t svg_escape(char *out, size_t n, const char *s)
{
	size_t need = 0, w = 0;
	int full = 0;
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		const char *rep;
		char one[2] = {0, 0};
		switch (*p) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&apos;"; break;
		default:
			one[0] = (*p < 0x20 && *p != '\t' && *p != '\n') || *p == 0x7f ? '?' : (char)*p;
			rep = one;
		}
		size_t k = strlen(rep);
		need += k;
		if (!full && out && n > 0 && w + k < n) {
			memcpy(out + w, rep, k);
			w += k;
		} else {
			full = 1;
		}
	}
	if (out && n > 0)
		out[w] = '\0';
	return need;
}

double svg_nice(double x, int round)
{
	if (!(x > 0) || !isfinite(x))
		return 1.0;
	double e = floor(log10(x));
	double p = pow(10.0, e);
	double f = x / p, nf;
	if (round)
		nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
	else
		nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
	return nf * p;
}

int svg_ticks(double *ticks, int max, double *lo, double *hi, int target, double *step)
{
	double a = *lo, z = *hi;
	if (!isfinite(a) || !isfinite(z)) {
		a = 0;
		z = 1;
	}
	if (a > z) {
		double t = a;
		a = z;
		z = t;
	}
	if (a == z) {
		if (a == 0) {
			z = 1;
		} else {
			double d = fabs(a) * 0.5;
			a -= d;
			z += d;
		}
	}
	if (target < 2)
		target = 2;
	double st = svg_nice(svg_nice(z - a, 0) / (target - 1), 1);
	double k0 = floor(a / st + 1e-9), k1 = ceil(z / st - 1e-9);
	int n = 0;
	for (double k = k0; k <= k1 && n < max; k++) {
		double v = k * st;
		ticks[n++] = v == 0 ? 0.0 : v;
	}
	*lo = k0 * st;
	*hi = k1 * st;
	if (step)
		*step = st;
	return n;
}

int svg_log_ticks(double *ticks, int max, double *lo, double *hi)
{
	double a = *lo, z = *hi;
	if (!(a > 0) || !isfinite(a))
		a = 1;
	if (!(z >= a) || !isfinite(z))
		z = a;
	double e0 = floor(log10(a) + 1e-9), e1 = ceil(log10(z) - 1e-9);
	if (e1 <= e0)
		e1 = e0 + 1;
	*lo = pow(10.0, e0);
	*hi = pow(10.0, e1);
	static const double all[] = {1, 2, 5}, one[] = {1};
	const double *mult = e1 - e0 < 3 ? all : one;
	int nm = e1 - e0 < 3 ? 3 : 1, n = 0;
	for (double e = e0; e <= e1 && n < max; e++) {
		double p = pow(10.0, e);
		for (int m = 0; m < nm && n < max; m++) {
			if (mult[m] * p > *hi * (1 + 1e-9))
				break;
			ticks[n++] = mult[m] * p;
		}
	}
	return n;
}

void svg_fmt_num(char *out, size_t n, double v)
{
	static const struct {
		double scale;
		const char *suffix;
	} si[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
	if (!n)
		return;
	if (!isfinite(v)) {
		snprintf(out, n, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
		return;
	}
	if (fabs(v) < 1e-12) {
		snprintf(out, n, "0");
		return;
	}
	for (size_t i = 0; i < sizeof(si) / sizeof(si[0]); i++) {
		if (fabs(v) >= si[i].scale) {
			snprintf(out, n, "%.4g%s", v / si[i].scale, si[i].suffix);
			return;
		}
	}
	snprintf(out, n, "%.4g", v);
}

/* ---- building --------------------------------------------------------------------------------- */

static char *dup_or_null(const char *s, int *oom)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*oom = 1;
	return d;
}

static svg_chart *chart_new(int kind, const char *title, const char *x_label, const char *y_label)
{
	svg_chart *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->kind = kind;
	c->width = SVG_WIDTH;
	c->height = SVG_HEIGHT;
	c->title = dup_or_null(title, &c->oom);
	c->x_label = dup_or_null(x_label, &c->oom);
	c->y_label = dup_or_null(y_label, &c->oom);
	if (c->oom) {
		svg_free(c);
		return NULL;
	}
	return c;
}

svg_chart *svg_line_new(const char *title, const char *x_label, const char *y_label)
{
	return chart_new(KIND_LINE, title, x_label, y_label);
}

svg_chart *svg_bars_new(const char *title, const char *x_label, const char *y_label)
{
	return chart_new(KIND_BARS, title, x_label, y_label);
}

void svg_set_y_from(svg_chart *c, double v)
{
	if (!c)
		return;
	c->has_y_from = isfinite(v);
	c->y_from = v;
}

void svg_free(svg_chart *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nser; i++) {
		free(c->ser[i].name);
		free(c->ser[i].x);
		free(c->ser[i].y);
	}
	for (size_t i = 0; i < c->ncat; i++)
		free(c->cats[i]);
	free(c->ser);
	free(c->cats);
	free(c->bars);
	free(c->title);
	free(c->x_label);
	free(c->y_label);
	free(c);
}

void svg_set_size(svg_chart *c, int width, int height)
{
	if (!c)
		return;
	if (width > 0)
		c->width = width;
	if (height > 0)
		c->height = height;
}

void svg_set_log_x(svg_chart *c, int on)
{
	if (c)
		c->log_x = on != 0;
}

void svg_set_log_y(svg_chart *c, int on)
{
	if (c)
		c->log_y = on != 0;
}

/* Index of the named series, created if new; (size_t)-1 on no memory. */
static size_t series_of(svg_chart *c, const char *name)
{
	if (!name)
		name = "";
	for (size_t i = 0; i < c->nser; i++)
		if (strcmp(c->ser[i].name, name) == 0)
			return i;
	if (bench_grow((void **)&c->ser, &c->capser, c->nser + 1, sizeof(series)))
		return (size_t)-1;
	series *s = &c->ser[c->nser];
	memset(s, 0, sizeof(*s));
	if (!(s->name = strdup(name)))
		return (size_t)-1;
	return c->nser++;
}

static size_t category_of(svg_chart *c, const char *name)
{
	if (!name)
		name = "";
	for (size_t i = 0; i < c->ncat; i++)
		if (strcmp(c->cats[i], name) == 0)
			return i;
	if (bench_grow((void **)&c->cats, &c->capcat, c->ncat + 1, sizeof(char *)))
		return (size_t)-1;
	if (!(c->cats[c->ncat] = strdup(name)))
		return (size_t)-1;
	return c->ncat++;
}

int svg_point(svg_chart *c, const char *name, double x, double y)
{
	if (!c || c->kind != KIND_LINE)
		return -1;
	size_t i = series_of(c, name);
	if (i == (size_t)-1)
		goto oom;
	series *s = &c->ser[i];
	if (s->n == s->cap) {
		size_t cap = s->cap;
		if (bench_grow((void **)&s->x, &cap, s->n + 1, sizeof(double)))
			goto oom;
		cap = s->cap;
		if (bench_grow((void **)&s->y, &cap, s->n + 1, sizeof(double)))
			goto oom;
		s->cap = cap;
	}
	s->x[s->n] = x;
	s->y[s->n] = y;
	s->n++;
	return 0;
oom:
	c->oom = 1;
	return -1;
}

int svg_series(svg_chart *c, const char *name)
{
	if (!c)
		return -1;
	if (series_of(c, name) == (size_t)-1) {
		c->oom = 1;
		return -1;
	}
	return 0;
}

int svg_category(svg_chart *c, const char *category)
{
	if (!c || c->kind != KIND_BARS)
		return -1;
	if (category_of(c, category) == (size_t)-1) {
		c->oom = 1;
		return -1;
	}
	return 0;
}

int svg_bar(svg_chart *c, const char *category, const char *name, double value)
{
	if (!c || c->kind != KIND_BARS)
		return -1;
	size_t ci = category_of(c, category), si;
	if (ci == (size_t)-1 || (si = series_of(c, name)) == (size_t)-1)
		goto oom;
	for (size_t i = 0; i < c->nbars; i++) {
		if (c->bars[i].cat == ci && c->bars[i].ser == si) {
			c->bars[i].v = value;
			return 0;
		}
	}
	if (bench_grow((void **)&c->bars, &c->capbars, c->nbars + 1, sizeof(bar)))
		goto oom;
	c->bars[c->nbars++] = (bar){ci, si, value};
	return 0;
oom:
	c->oom = 1;
	return -1;
}

/* ---- rendering -------------------------------------------------------------------------------- */

/* An axis: its range in data units (log10 of them on a log axis) and the pixel span. */
typedef struct axis {
	int log;
	double lo, hi; /* data range (not log) */
	double p0, p1; /* pixels of lo and hi */
	double ticks[MAX_TICKS];
	int nticks;
} axis;

static double axis_map(const axis *a, double v)
{
	double f0 = a->log ? log10(a->lo) : a->lo, f1 = a->log ? log10(a->hi) : a->hi;
	double f = a->log ? log10(v) : v;
	return a->p0 + (a->p1 - a->p0) * (f - f0) / (f1 - f0);
}

/* Sets up the axis over the data range [lo, hi] (as found; from_zero: start a linear axis at 0
 * when the data is not negative). */
static void axis_setup(axis *a, int log, double lo, double hi, int from_zero, double p0, double p1)
{
	a->log = log;
	a->p0 = p0;
	a->p1 = p1;
	if (log) {
		a->nticks = svg_log_ticks(a->ticks, MAX_TICKS, &lo, &hi);
	} else {
		double step;
		if (from_zero && lo >= 0)
			lo = 0;
		if (from_zero && hi <= 0)
			hi = 0;
		a->nticks = svg_ticks(a->ticks, MAX_TICKS, &lo, &hi, 6, &step);
	}
	a->lo = lo;
	a->hi = hi;
}

static int usable(const svg_chart *c, double x, double y, int bars)
{
	if (!isfinite(y) || (c->log_y && !(y > 0)))
		return 0;
	if (bars)
		return 1;
	return isfinite(x) && !(c->log_x && !(x > 0));
}

static double legend_width(const svg_chart *c)
{
	return c->nser ? LEGEND_W : PAD_R;
}

/* Bar geometry: bar width, group width (as drawn), whether the category labels are rotated, the
 * extra bottom margin they need, and the chart width. */
typedef struct bar_geom {
	double barw, groupw, extra, width;
	int rotate;
} bar_geom;

static bar_geom bar_layout(const svg_chart *c)
{
	bar_geom g;
	size_t ns = c->nser ? c->nser : 1, maxlen = 0;
	g.barw = ns <= 3 ? 18 : ns <= 6 ? 12 : 8;
	double minw = (double)ns * g.barw + 18; /* narrowest group */
	g.width = fmax(c->width, ceil(PAD_L + (double)c->ncat * minw + legend_width(c)));
	g.groupw = c->ncat ? fmax(minw, (g.width - PAD_L - legend_width(c)) / (double)c->ncat) : minw;
	for (size_t i = 0; i < c->ncat; i++)
		if (strlen(c->cats[i]) > maxlen)
			maxlen = strlen(c->cats[i]);
	if (maxlen > 48)
		maxlen = 48;
	g.rotate = (double)maxlen * CHAR_W > g.groupw - 6;
	g.extra = g.rotate ? ceil((double)maxlen * CHAR_W * 0.58) : 0; /* sin(35 degrees) */
	return g;
}

static void chart_size(const svg_chart *c, double *w, double *h)
{
	*w = c->width;
	*h = c->height;
	if (c->kind == KIND_BARS) {
		bar_geom g = bar_layout(c);
		*w = g.width;
		*h += g.extra;
	}
}

static void render_frame(bench_buf *b, const svg_chart *c, double W, double H, double L, double R,
                         double T, double B)
{
	(void)H;
	bench_buf_printf(b,
	                 "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#fcfcfc\" "
	                 "stroke=\"#999999\"/>\n",
	                 c2(L), c2(T), c2(R - L), c2(B - T));
	if (c->title) {
		bench_buf_printf(b,
		                 "<text x=\"%.2f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" "
		                 "font-weight=\"bold\">",
		                 c2(W / 2));
		sb_text(b, c->title);
		bench_buf_printf(b, "</text>\n");
	}
	if (c->y_label) {
		bench_buf_printf(
		    b, "<text transform=\"translate(16,%.2f) rotate(-90)\" text-anchor=\"middle\">",
		    c2((T + B) / 2));
		sb_text(b, c->y_label);
		bench_buf_printf(b, "</text>\n");
	}
}

static void render_x_label(bench_buf *b, const svg_chart *c, double L, double R, double H)
{
	if (!c->x_label)
		return;
	bench_buf_printf(b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">", c2((L + R) / 2),
	                 c2(H - 12));
	sb_text(b, c->x_label);
	bench_buf_printf(b, "</text>\n");
}

static void render_y_axis(bench_buf *b, const axis *ay, double L, double R)
{
	char num[64];
	for (int i = 0; i < ay->nticks; i++) {
		double y = c2(axis_map(ay, ay->ticks[i]));
		svg_fmt_num(num, sizeof(num), ay->ticks[i]);
		bench_buf_printf(
		    b, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e0e0e0\"/>\n",
		    c2(L), y, c2(R), y);
		bench_buf_printf(b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%s</text>\n",
		                 c2(L - 6), c2(y + 4), num);
	}
}

static void render_legend(bench_buf *b, const svg_chart *c, double R, double T, int bars)
{
	for (size_t i = 0; i < c->nser; i++) {
		double x = R + 14, y = T + 10 + 18.0 * (double)i;
		const char *col = palette[i % N_PALETTE];
		if (bars)
			bench_buf_printf(
			    b, "<rect x=\"%.2f\" y=\"%.2f\" width=\"14\" height=\"10\" fill=\"%s\"/>\n", c2(x),
			    c2(y - 5), col);
		else
			bench_buf_printf(b,
			                 "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" "
			                 "stroke-width=\"2.5\"/>\n",
			                 c2(x), c2(y), c2(x + 16), c2(y), col);
		bench_buf_printf(b, "<text x=\"%.2f\" y=\"%.2f\">", c2(x + 22), c2(y + 4));
		sb_text(b, c->ser[i].name);
		bench_buf_printf(b, "</text>\n");
	}
}

static void render_no_data(bench_buf *b, double L, double R, double T, double B)
{
	bench_buf_printf(b,
	                 "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" fill=\"#777777\">no "
	                 "data</text>\n",
	                 c2((L + R) / 2), c2((T + B) / 2));
}

static void render_line(bench_buf *b, const svg_chart *c, double W, double H)
{
	double L = PAD_L, R = W - legend_width(c), T = PAD_T, B = H - PAD_B;
	double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
	char num[64];
	for (size_t i = 0; i < c->nser; i++) {
		const series *s = &c->ser[i];
		for (size_t j = 0; j < s->n; j++) {
			if (!usable(c, s->x[j], s->y[j], 0))
				continue;
			xmin = fmin(xmin, s->x[j]);
			xmax = fmax(xmax, s->x[j]);
			ymin = fmin(ymin, s->y[j]);
			ymax = fmax(ymax, s->y[j]);
		}
	}
	render_frame(b, c, W, H, L, R, T, B);
	render_x_label(b, c, L, R, H);
	render_legend(b, c, R, T, 0);
	if (xmin > xmax) {
		render_no_data(b, L, R, T, B);
		return;
	}
	axis ax, ay;
	axis_setup(&ax, c->log_x, xmin, xmax, 0, L, R);
	if (c->has_y_from && !c->log_y)
		axis_setup(&ay, 0, fmin(ymin, c->y_from), ymax, 0, B, T);
	else
		axis_setup(&ay, c->log_y, ymin, ymax, 1, B, T);
	render_y_axis(b, &ay, L, R);
	for (int i = 0; i < ax.nticks; i++) {
		double x = c2(axis_map(&ax, ax.ticks[i]));
		svg_fmt_num(num, sizeof(num), ax.ticks[i]);
		bench_buf_printf(
		    b, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e0e0e0\"/>\n", x,
		    c2(T), x, c2(B));
		bench_buf_printf(b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%s</text>\n", x,
		                 c2(B + 18), num);
	}
	for (size_t i = 0; i < c->nser; i++) {
		const series *s = &c->ser[i];
		const char *col = palette[i % N_PALETTE];
		bench_buf_printf(b, "<g><title>");
		sb_text(b, s->name);
		bench_buf_printf(b,
		                 "</title>\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" "
		                 "points=\"",
		                 col);
		int first = 1;
		for (size_t j = 0; j < s->n; j++) {
			if (!usable(c, s->x[j], s->y[j], 0))
				continue;
			bench_buf_printf(b, "%s%.2f,%.2f", first ? "" : " ", c2(axis_map(&ax, s->x[j])),
			                 c2(axis_map(&ay, s->y[j])));
			first = 0;
		}
		bench_buf_printf(b, "\"/>\n");
		for (size_t j = 0; s->n <= MAX_MARKERS && j < s->n; j++) {
			if (!usable(c, s->x[j], s->y[j], 0))
				continue;
			bench_buf_printf(b, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.6\" fill=\"%s\"/>\n",
			                 c2(axis_map(&ax, s->x[j])), c2(axis_map(&ay, s->y[j])), col);
		}
		bench_buf_printf(b, "</g>\n");
	}
}

static void render_bars(bench_buf *b, const svg_chart *c, double W, double H)
{
	bar_geom g = bar_layout(c);
	double L = PAD_L, R = W - legend_width(c), T = PAD_T, B = H - PAD_B - g.extra;
	double ymin = INFINITY, ymax = -INFINITY;
	char num[64];
	for (size_t i = 0; i < c->nbars; i++) {
		if (!usable(c, 0, c->bars[i].v, 1))
			continue;
		ymin = fmin(ymin, c->bars[i].v);
		ymax = fmax(ymax, c->bars[i].v);
	}
	render_frame(b, c, W, H, L, R, T, B);
	render_x_label(b, c, L, R, H);
	render_legend(b, c, R, T, 1);
	double gw = g.groupw;
	for (size_t i = 0; i < c->ncat; i++) {
		double x = L + gw * ((double)i + 0.5);
		if (g.rotate) {
			bench_buf_printf(b,
			                 "<text transform=\"translate(%.2f,%.2f) rotate(-35)\" "
			                 "text-anchor=\"end\">",
			                 c2(x), c2(B + 14));
		} else {
			bench_buf_printf(b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">", c2(x),
			                 c2(B + 18));
		}
		sb_text(b, c->cats[i]);
		bench_buf_printf(b, "</text>\n");
	}
	if (ymin > ymax) {
		render_no_data(b, L, R, T, B);
		return;
	}
	axis ay;
	int from = c->has_y_from && !c->log_y; /* bars grow from the bottom of the axis */
	if (from)
		axis_setup(&ay, 0, fmin(ymin, c->y_from), ymax, 0, B, T);
	else
		axis_setup(&ay, c->log_y, ymin, ymax, 1, B, T);
	render_y_axis(b, &ay, L, R);
	double base = ay.log || from ? B : axis_map(&ay, 0.0);
	size_t ns = c->nser ? c->nser : 1;
	/* in category order, then series order, whatever order the bars were added in */
	for (size_t ci = 0; ci < c->ncat; ci++) {
		double x0 = L + gw * ((double)ci + 0.5) - (double)ns * g.barw / 2;
		for (size_t si = 0; si < c->nser; si++) {
			const bar *bb = NULL;
			for (size_t k = 0; k < c->nbars && !bb; k++)
				if (c->bars[k].cat == ci && c->bars[k].ser == si)
					bb = &c->bars[k];
			if (!bb || !usable(c, 0, bb->v, 1))
				continue;
			double y = axis_map(&ay, bb->v), top = fmin(y, base), h = fabs(base - y);
			bench_buf_printf(b,
			                 "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
			                 "fill=\"%s\"><title>",
			                 c2(x0 + g.barw * (double)si), c2(top), c2(g.barw - 1), c2(h),
			                 palette[si % N_PALETTE]);
			sb_text(b, c->cats[ci]);
			bench_buf_printf(b, " / ");
			sb_text(b, c->ser[si].name);
			svg_fmt_num(num, sizeof(num), bb->v);
			bench_buf_printf(b, ": %s</title></rect>\n", num);
		}
	}
}

char *svg_render(const svg_chart *const *charts, size_t n)
{
	bench_buf b = {0};
	double W = 0, Htot = 0;
	if (!n)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		double w, h;
		if (!charts[i] || charts[i]->oom)
			return NULL;
		chart_size(charts[i], &w, &h);
		W = fmax(W, w);
		Htot += h;
	}
	bench_buf_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	bench_buf_printf(&b,
	                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
	                 "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
	                 W, Htot, W, Htot);
	bench_buf_printf(
	    &b, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n", W, Htot);
	double oy = 0;
	for (size_t i = 0; i < n; i++) {
		double w, h;
		chart_size(charts[i], &w, &h);
		bench_buf_printf(&b, "<g transform=\"translate(0,%.0f)\">\n", oy);
		if (charts[i]->kind == KIND_LINE)
			render_line(&b, charts[i], w, h);
		else
			render_bars(&b, charts[i], w, h);
		bench_buf_printf(&b, "</g>\n");
		oy += h;
	}
	bench_buf_printf(&b, "</svg>\n");
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

int svg_write(const char *path, const svg_chart *const *charts, size_t n, char *err, size_t errn)
{
	char *doc = svg_render(charts, n);
	FILE *f = NULL;
	int rc = -1;
	if (!doc) {
		snprintf(err, errn, "%s: cannot render the chart (no memory or no chart)", path);
		goto cleanup;
	}
	if (!(f = fopen(path, "w"))) {
		snprintf(err, errn, "%s: %s", path, strerror(errno));
		goto cleanup;
	}
	size_t len = strlen(doc);
	if (fwrite(doc, 1, len, f) != len) {
		snprintf(err, errn, "%s: write failed: %s", path, strerror(errno));
		goto cleanup;
	}
	int crc = fclose(f);
	f = NULL;
	if (crc != 0) {
		snprintf(err, errn, "%s: close failed: %s", path, strerror(errno));
		goto cleanup;
	}
	rc = 0;
cleanup:
	if (f)
		fclose(f);
	free(doc);
	return rc;
}
