/*
 * test_harness_svg.c - the SVG chart writer (bench/lib/svg.{c,h}):
 *
 *   - nice numbers, linear and log ticks, compact number labels, XML escaping (and truncation);
 *   - line charts (linear and log axes, NaN and non-positive points left out, many points) and
 *     grouped bar charts (log y, rotated labels) rendered to files that are well-formed XML:
 *     balanced tags, one <svg> root, no raw '<' or '&' in text or attribute values;
 *   - escaped titles, labels, series and category names; "no data" charts; stacked charts;
 *   - determinism: the same calls give the same bytes.
 *
 * Re-run one test: build/tests/test_harness_svg NAME.
 */
#include "../bench/lib/svg.h"
#include "lib/model.h"
#include "prolly.h"
#include "ptest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a small well-formedness checker ---------------------------------------------------------- */

static int entity_ok(const char *p)
{
	static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
	for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++)
		if (strncmp(p, ents[i], strlen(ents[i])) == 0)
			return 1;
	return 0;
}

/* 1 if doc is well-formed enough: declaration, balanced tags, a single <svg> root, entities only
 * where '&' appears, no '<' inside attribute values. Prints the first problem. */
static int well_formed(const char *doc)
{
	char stack[64][32];
	int depth = 0, roots = 0;
	const char *p = doc;
	if (strncmp(p, "<?xml ", 6) != 0) {
		fprintf(stderr, "  no XML declaration\n");
		return 0;
	}
	p = strstr(p, "?>");
	if (!p)
		return 0;
	p += 2;
	while (*p) {
		if (*p == '&') {
			if (!entity_ok(p)) {
				fprintf(stderr, "  raw '&' in text: %.20s\n", p);
				return 0;
			}
			p++;
			continue;
		}
		if (*p != '<') {
			if (depth == 0 && *p != '\n' && *p != ' ') {
				fprintf(stderr, "  text outside the root: %.20s\n", p);
				return 0;
			}
			p++;
			continue;
		}
		/* a tag */
		int closing = p[1] == '/';
		const char *n = p + 1 + closing;
		size_t nl = strspn(n, "abcdefghijklmnopqrstuvwxyz");
		if (nl == 0 || nl >= 32) {
			fprintf(stderr, "  bad tag name: %.20s\n", p);
			return 0;
		}
		const char *q = n + nl;
		int quote = 0;
		for (; *q && (quote || *q != '>'); q++) {
			if (*q == '"')
				quote = !quote;
			else if (*q == '<') {
				fprintf(stderr, "  '<' inside a tag: %.30s\n", p);
				return 0;
			} else if (*q == '&' && !entity_ok(q)) {
				fprintf(stderr, "  raw '&' in an attribute: %.30s\n", p);
				return 0;
			}
		}
		if (!*q) {
			fprintf(stderr, "  unterminated tag\n");
			return 0;
		}
		int self = q[-1] == '/';
		if (closing) {
			if (depth == 0 || strlen(stack[depth - 1]) != nl ||
			    strncmp(stack[depth - 1], n, nl) != 0) {
				fprintf(stderr, "  unbalanced </%.*s>\n", (int)nl, n);
				return 0;
			}
			depth--;
		} else if (!self) {
			if (depth == 0) {
				roots++;
				if (nl != 3 || strncmp(n, "svg", 3) != 0) {
					fprintf(stderr, "  root is not <svg>\n");
					return 0;
				}
			}
			if (depth == 64)
				return 0;
			memcpy(stack[depth], n, nl);
			stack[depth][nl] = '\0';
			depth++;
		} else if (depth == 0) {
			fprintf(stderr, "  element outside the root\n");
			return 0;
		}
		p = q + 1;
	}
	if (depth != 0 || roots != 1) {
		fprintf(stderr, "  depth %d at the end, %d roots\n", depth, roots);
		return 0;
	}
	return 1;
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* ---- helpers ---------------------------------------------------------------------------------- */

PT_TEST(nice_numbers)
{
	PT_CHECK(svg_nice(97, 0) == 100);
	PT_CHECK(svg_nice(1, 0) == 1);
	PT_CHECK(svg_nice(1.01, 0) == 2);
	PT_CHECK(svg_nice(4.9, 0) == 5);
	PT_CHECK(svg_nice(5.1, 0) == 10);
	PT_CHECK(svg_nice(25, 1) == 20);
	PT_CHECK(svg_nice(1.2, 1) == 1);
	PT_CHECK(svg_nice(7.5, 1) == 10);
	PT_CHECK(fabs(svg_nice(0.034, 1) - 0.05) < 1e-12);
	PT_CHECK(svg_nice(4000, 1) == 5000);
	PT_CHECK(svg_nice(0, 1) == 1 && svg_nice(-3, 0) == 1 && svg_nice(NAN, 0) == 1);
}

PT_TEST(linear_ticks)
{
	double t[64], lo = 0, hi = 97, step = 0;
	int n = svg_ticks(t, 64, &lo, &hi, 6, &step);
	PT_CHECKF(n == 6 && step == 20 && lo == 0 && hi == 100, "n %d step %g [%g, %g]", n, step, lo,
	          hi);
	for (int i = 0; i < n; i++)
		PT_CHECK(t[i] == 20.0 * i);

	lo = -5;
	hi = 12;
	n = svg_ticks(t, 64, &lo, &hi, 6, &step);
	PT_CHECKF(n == 5 && step == 5 && lo == -5 && hi == 15 && t[1] == 0, "n %d step %g", n, step);

	lo = 0.1;
	hi = 0.95;
	n = svg_ticks(t, 64, &lo, &hi, 6, &step);
	PT_CHECKF(n == 6 && fabs(step - 0.2) < 1e-12 && lo == 0 && fabs(hi - 1) < 1e-12, "n %d", n);
	char s[32];
	svg_fmt_num(s, sizeof(s), t[3]);
	PT_CHECKF(strcmp(s, "0.6") == 0, "%s", s);

	/* a single value is widened around itself; zero to [0, 1] */
	lo = hi = 3;
	n = svg_ticks(t, 64, &lo, &hi, 6, &step);
	PT_CHECKF(n >= 2 && lo <= 1.5 && hi >= 4.5, "n %d [%g, %g]", n, lo, hi);
	lo = hi = 0;
	n = svg_ticks(t, 64, &lo, &hi, 6, &step);
	PT_CHECKF(lo == 0 && hi == 1 && n == 6, "n %d [%g, %g]", n, lo, hi);

	/* every tick is a multiple of a nice step and the ticks cover the range */
	double ranges[][2] = {{0, 1}, {1, 64}, {0, 5123}, {0.001, 0.0042}, {-40, -3}, {12345, 12377}};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		lo = ranges[i][0];
		hi = ranges[i][1];
		n = svg_ticks(t, 64, &lo, &hi, 6, &step);
		PT_CHECKF(n >= 2 && n <= 12, "range %zu: %d ticks", i, n);
		PT_CHECK(lo <= ranges[i][0] && hi >= ranges[i][1]);
		double m = step / pow(10, floor(log10(step)));
		PT_CHECKF(fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9, "step %g", step);
	}
}

PT_TEST(log_ticks)
{
	double t[64], lo = 3, hi = 700;
	int n = svg_log_ticks(t, 64, &lo, &hi);
	PT_CHECKF(n == 4 && lo == 1 && hi == 1000 && t[0] == 1 && t[3] == 1000, "n %d", n);
	lo = 1;
	hi = 64;
	n = svg_log_ticks(t, 64, &lo, &hi);
	double want[] = {1, 2, 5, 10, 20, 50, 100};
	PT_CHECKF(n == 7 && hi == 100, "n %d", n);
	for (int i = 0; i < n && i < 7; i++)
		PT_CHECKF(fabs(t[i] - want[i]) < 1e-9, "tick %d = %g", i, t[i]);
	lo = hi = 10;
	n = svg_log_ticks(t, 64, &lo, &hi);
	PT_CHECKF(n == 4 && lo == 10 && hi == 100, "n %d [%g, %g]", n, lo, hi);
	lo = 0.002;
	hi = 0.3;
	n = svg_log_ticks(t, 64, &lo, &hi);
	PT_CHECKF(fabs(lo - 0.001) < 1e-15 && fabs(hi - 1) < 1e-12 && n == 4, "n %d", n);
}

PT_TEST(number_labels)
{
	struct {
		double v;
		const char *s;
	} cases[] = {{0, "0"},          {1500, "1.5k"},   {2e6, "2M"},  {0.25, "0.25"},
	             {20, "20"},        {-3000, "-3k"},   {1e9, "1G"},  {999, "999"},
	             {12345, "12.35k"}, {0.001, "0.001"}, {1e-13, "0"}, {NAN, "nan"}};
	char s[32];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		svg_fmt_num(s, sizeof(s), cases[i].v);
		PT_CHECKF(strcmp(s, cases[i].s) == 0, "%g -> %s, want %s", cases[i].v, s, cases[i].s);
	}
}

PT_TEST(escaping)
{
	char out[64];
	size_t n = svg_escape(out, sizeof(out), "a<b & \"c\" 'd' >");
	PT_CHECKF(strcmp(out, "a&lt;b &amp; &quot;c&quot; &apos;d&apos; &gt;") == 0, "%s", out);
	PT_CHECK(n == strlen(out));
	/* truncation never splits an entity */
	n = svg_escape(out, 5, "a<b");
	PT_CHECKF(strcmp(out, "a") == 0 && n == 6, "%s %zu", out, n);
	n = svg_escape(out, 6, "a<b");
	PT_CHECKF(strcmp(out, "a&lt;") == 0, "%s", out);
	/* control characters are not allowed in XML 1.0 text */
	svg_escape(out, sizeof(out), "x\001y\tz");
	PT_CHECKF(strcmp(out, "x?y\tz") == 0, "%s", out);
	PT_CHECK(svg_escape(NULL, 0, "&&") == 10);
}

/* ---- charts ----------------------------------------------------------------------------------- */

static svg_chart *sample_line(void)
{
	svg_chart *c = svg_line_new("p99 < 25 ms & \"more\"", "clients", "ops/s");
	if (!c)
		return NULL;
	svg_set_log_x(c, 1);
	double xs[] = {1, 8, 32, 64};
	for (int i = 0; i < 4; i++) {
		svg_point(c, "pool <8>", xs[i], 100.0 * (i + 1));
		svg_point(c, "pool 32", xs[i], 90.0 * (i + 1) + 7);
	}
	svg_point(c, "pool 32", 0, 5);         /* not positive on a log axis: left out */
	svg_point(c, "pool 32", 16, NAN);      /* left out */
	svg_point(c, "pool 32", INFINITY, 10); /* left out */
	return c;
}

PT_TEST(line_chart_file)
{
	char dir[] = "/tmp/test_svg_XXXXXX", path[128];
	PT_REQUIRE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/line.svg", dir);
	svg_chart *c = sample_line();
	char err[256] = "";
	PT_REQUIRE(c != NULL);
	const svg_chart *one[] = {c};
	PT_CHECKF(svg_write(path, one, 1, err, sizeof(err)) == 0, "%s", err);
	char *doc = tm_read_file(path);
	PT_REQUIRE(doc != NULL);
	PT_CHECK(well_formed(doc));
	PT_CHECK(strstr(doc, "p99 &lt; 25 ms &amp; &quot;more&quot;") != NULL);
	PT_CHECK(strstr(doc, "pool &lt;8&gt;") != NULL);
	PT_CHECK(strstr(doc, "clients") && strstr(doc, "ops/s"));
	PT_CHECK(!strstr(doc, "nan") && !strstr(doc, "inf"));
	PT_CHECK(count(doc, "<polyline") == 2);
	PT_CHECK(count(doc, "<circle") == 8); /* the bad points have no marker */
	/* log x over [1, 64]: ticks 1 2 5 10 20 50 100 */
	PT_CHECK(strstr(doc, ">50</text>") && strstr(doc, ">100</text>"));
	PT_CHECK(!strstr(doc, "-0.00"));
	/* deterministic */
	svg_chart *d = sample_line();
	const svg_chart *two[] = {d};
	char *a = svg_render(one, 1), *b = svg_render(two, 1);
	PT_CHECK(a && b && strcmp(a, b) == 0 && strcmp(a, doc) == 0);
	free(a);
	free(b);
	free(doc);
	svg_free(c);
	svg_free(d);
	unlink(path);
	rmdir(dir);
}

PT_TEST(line_chart_linear_many_points)
{
	svg_chart *c = svg_line_new("per second", "s", "ops/s");
	PT_REQUIRE(c != NULL);
	for (int i = 0; i < 600; i++)
		svg_point(c, "ops", i, 1000 + 500 * sin(i / 10.0));
	svg_point(c, "neg", 3, -20);
	const svg_chart *one[] = {c};
	char *doc = svg_render(one, 1);
	PT_REQUIRE(doc != NULL);
	PT_CHECK(well_formed(doc));
	PT_CHECK(count(doc, "<circle") == 1); /* a 600-point series has no markers */
	PT_CHECK(strstr(doc, ">600</text>") != NULL);
	PT_CHECK(strstr(doc, ">-500</text>") != NULL || strstr(doc, ">-200</text>") != NULL);
	free(doc);
	svg_free(c);
}

PT_TEST(bar_chart_log)
{
	svg_chart *c = svg_bars_new("scale vs <plain>", "size / op", "ms");
	PT_REQUIRE(c != NULL);
	svg_set_log_y(c, 1);
	svg_bar(c, "1000 get_cold & more", "prolly", 12.5);
	svg_bar(c, "1000 get_cold & more", "pg-plain", 3.25);
	svg_bar(c, "1000 put", "prolly", 0.4);
	svg_bar(c, "1000 put", "pg-plain", 0); /* not positive on a log axis */
	svg_bar(c, "1000 put", "prolly", 0.5); /* replaces */
	svg_category(c, "empty");
	svg_bar(c, "10M full_scan", "prolly", 4100);
	svg_bar(c, "10M full_scan", "pg-plain", NAN);
	const svg_chart *one[] = {c};
	char *doc = svg_render(one, 1);
	PT_REQUIRE(doc != NULL);
	PT_CHECK(well_formed(doc));
	PT_CHECK(strstr(doc, "1000 get_cold &amp; more") != NULL);
	PT_CHECK(strstr(doc, "scale vs &lt;plain&gt;") != NULL);
	PT_CHECK(count(doc, "</title></rect>") == 4);
	PT_CHECK(strstr(doc, "1000 put / prolly: 0.5<") != NULL);
	PT_CHECK(strstr(doc, "rotate(-35)") != NULL); /* long labels are rotated */
	PT_CHECK(strstr(doc, ">0.1</text>") && strstr(doc, ">10k</text>"));
	PT_CHECK(!strstr(doc, "nan") && !strstr(doc, "-0.00"));
	free(doc);
	svg_free(c);
}

PT_TEST(bar_chart_linear_and_wide)
{
	svg_chart *c = svg_bars_new("matrix", NULL, "ops/s");
	PT_REQUIRE(c != NULL);
	char cat[32];
	for (int i = 0; i < 40; i++) {
		snprintf(cat, sizeof(cat), "c%d", i);
		svg_bar(c, cat, "append", 10.0 * i);
		svg_bar(c, cat, "random", 5.0 * i);
		svg_bar(c, cat, "clustered", 7.0 * i);
	}
	const svg_chart *one[] = {c};
	char *doc = svg_render(one, 1);
	PT_REQUIRE(doc != NULL);
	PT_CHECK(well_formed(doc));
	int w = 0;
	PT_CHECK(sscanf(strstr(doc, "<svg ") + 5, "xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\"",
	                &w) == 1);
	PT_CHECKF(w > SVG_WIDTH, "width %d", w); /* 40 groups do not fit the default width */
	PT_CHECK(count(doc, "</title></rect>") == 120);
	free(doc);
	svg_free(c);
}

PT_TEST(axis_from_near_one)
{
	/* Relative QPS: bars of 0.97 to 1.12 on an axis that starts near 1.0, not at 0. */
	svg_chart *c = svg_bars_new("relative QPS", NULL, "relative QPS");
	svg_chart *l = svg_line_new("relative QPS", "clients", "relative QPS");
	PT_REQUIRE(c && l);
	svg_set_y_from(c, 0.95);
	svg_set_y_from(l, 0.95);
	svg_bar(c, "point-query", "1", 1.12);
	svg_bar(c, "point-query", "4", 0.97);
	svg_point(l, "point-query", 1, 1.12);
	svg_point(l, "point-query", 4, 0.97);
	const svg_chart *one[] = {c}, *two[] = {l};
	char *doc = svg_render(one, 1), *ldoc = svg_render(two, 1);
	PT_REQUIRE(doc && ldoc);
	PT_CHECK(well_formed(doc) && well_formed(ldoc));
	PT_CHECKF(strstr(doc, ">0.95</text>") && !strstr(doc, ">0</text>"), "%s", doc);
	PT_CHECK(strstr(ldoc, ">0.95</text>") && !strstr(ldoc, ">0</text>"));
	free(doc);
	/* A value below the start lowers the axis; NaN is the default again (from 0). */
	svg_bar(c, "range", "1", 0.5);
	doc = svg_render(one, 1);
	PT_CHECK(doc && strstr(doc, ">0.4</text>") && !strstr(doc, ">0</text>"));
	free(doc);
	svg_set_y_from(c, NAN);
	doc = svg_render(one, 1);
	PT_CHECK(doc && strstr(doc, ">0</text>"));
	free(doc);
	free(ldoc);
	svg_free(c);
	svg_free(l);
}

PT_TEST(empty_and_stacked)
{
	svg_chart *e = svg_line_new(NULL, NULL, NULL), *l = svg_line_new("b", "x", "y");
	svg_chart *bars = svg_bars_new("c", NULL, NULL);
	PT_REQUIRE(e && l && bars);
	svg_point(l, "s", 1, 2);
	svg_point(l, "s", 2, 3);
	const svg_chart *three[] = {e, l, bars};
	char *doc = svg_render(three, 3);
	PT_REQUIRE(doc != NULL);
	PT_CHECK(well_formed(doc));
	PT_CHECK(count(doc, "no data") == 2);
	PT_CHECK(count(doc, "<g transform=\"translate(0,") == 3);
	char want[64];
	snprintf(want, sizeof(want), "height=\"%d\"", 3 * SVG_HEIGHT);
	PT_CHECK(strstr(doc, want) != NULL);
	PT_CHECK(svg_render(three, 0) == NULL);
	/* wrong kinds are refused */
	PT_CHECK(svg_point(bars, "s", 1, 1) == -1 && svg_bar(l, "c", "s", 1) == -1);
	char err[256];
	PT_CHECK(svg_write("/nonexistent-dir/x.svg", three, 1, err, sizeof(err)) == -1);
	PT_CHECK(strstr(err, "/nonexistent-dir/x.svg") != NULL);
	free(doc);
	svg_free(e);
	svg_free(l);
	svg_free(bars);
	svg_free(NULL);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
