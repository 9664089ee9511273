/*
 * count.c - the count grammar of count.h.
 */
#include "count.h"

int bench_parse_count(const char *s, size_t len, uint64_t *out)
{
	uint64_t ip = 0, fp = 0, fscale = 1, mult = 1;
	size_t i = 0, ndig = 0, nfrac = 0;
	int frac = 0;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, ndig++) {
		if (ip > (UINT64_MAX - 9) / 10)
			return -1;
		ip = ip * 10 + (uint64_t)(s[i] - '0');
	}
	if (i < len && s[i] == '.') {
		frac = 1;
		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, nfrac++) {
			if (fscale > UINT64_MAX / 100)
				return -1;
			fp = fp * 10 + (uint64_t)(s[i] - '0');
			fscale *= 10;
		}
	}
	if (!ndig || (frac && !nfrac)) /* digits before the point, and after it if there is one */
		return -1;
	if (i < len) {
		switch (s[i]) {
		case 'k':
		case 'K': mult = 1000; break;
		case 'm':
		case 'M': mult = 1000000; break;
		case 'g':
		case 'G': mult = 1000000000; break;
		default: return -1;
		}
		i++;
	}
	if (i != len || (frac && mult == 1))
		return -1;
	if (ip > (uint64_t)INT64_MAX / mult)
		return -1;
	/* fp / fscale * mult, exactly: both are powers of ten, so once their common powers of ten are
	 * divided out one of f, m is 1; the fraction must come out whole ("1.0001k" does not). */
	uint64_t f = fscale, m = mult;
	while (f % 10 == 0 && m % 10 == 0)
		f /= 10, m /= 10;
	if (fp % f != 0)
		return -1;
	uint64_t v = ip * mult, add = fp / f * m;
	if (v > (uint64_t)INT64_MAX - add)
		return -1;
	*out = v + add;
	return 0;
}
