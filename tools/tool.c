// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* tool.c - the helpers of tool.h, compiled into every program of tools/ */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uepoll.h>
#include "tool.h"

const char *tool_prog = "uepoll-tool";
static void (*tool_usage_fn)(void);

void tool_init(const char *argv0, void (*usage)(void))
{
	tool_prog = argv0;
	tool_usage_fn = usage;
}

void tool_usage(void)
{
	if (tool_usage_fn)
		tool_usage_fn();
	exit(2);
}

int64_t tool_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void *tool_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p) {
		fprintf(stderr, "%s: out of memory\n", tool_prog);
		exit(1);
	}
	return p;
}

long tool_parse_long(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: bad number '%s' (%ld..%ld)\n", tool_prog, s, lo, hi);
		tool_usage();
	}
	return v;
}

double tool_parse_double(const char *s, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "%s: bad number '%s' (%g..%g)\n", tool_prog, s, lo, hi);
		tool_usage();
	}
	return v;
}

int tool_parse_list(const char *s, long *out, int max, long lo, long hi)
{
	char buf[256], *save = NULL, *tok;
	int n = 0;

	if (strlen(s) >= sizeof(buf))
		tool_usage();
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max) {
			fprintf(stderr, "%s: at most %d values in '%s'\n", tool_prog, max, s);
			tool_usage();
		}
		out[n++] = tool_parse_long(tok, lo, hi);
	}
	if (!n)
		tool_usage();
	return n;
}

/* ---- backends: the library's names ------------------------------------------ */

/* the library's registry (uepoll_backend_list(3)): no names of our own */
int tool_backend(const char *name, unsigned *flags)
{
	int b = uepoll_backend_lookup(name);

	if (b < 0)
		return -1;
	*flags = (unsigned)b;
	return 0;
}

const char *tool_backend_name(int i)
{
	unsigned b[16];
	int n = uepoll_backend_list(b, 16);

	return i >= 0 && i < n && i < 16 ? uepoll_backend_str(b[i]) : NULL;
}

int tool_backend_probe(unsigned flags)
{
	unsigned b = flags & UEPOLL_BACKEND_MASK;

	/* auto always ends at a backend that works (plain epoll) */
	return b == UEPOLL_BACKEND_AUTO ? 0 : uepoll_backend_probe(b);
}

/* ---- statistics ---------------------------------------------------------------- */

int tool_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double tool_pct(const double *sorted, size_t n, double q)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)(q * (double)n + 0.999999);
	if (i < 1)
		i = 1;
	if (i > n)
		i = n;
	return sorted[i - 1];
}

/* ---- pinning ---------------------------------------------------------------------- */

/*
 * Pin the calling thread to the k-th CPU it may run on (uepoll-bench's
 * wake latency and idle put their two threads on two different CPUs:
 * under TCG a thread woken on a halted vCPU and one woken on the running
 * vCPU differ by 5x, which would otherwise depend on where the scheduler
 * put them).  Silently nothing with fewer CPUs or where affinity is
 * refused.
 */
void tool_pin_self(int k)
{
	cpu_set_t all, one;
	int seen = 0;

	if (sched_getaffinity(0, sizeof(all), &all) || CPU_COUNT(&all) < 2)
		return;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all) && seen++ == k) {
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
			return;
		}
}

void tool_unpin_self(void)
{
	cpu_set_t all;

	CPU_ZERO(&all);
	for (int c = 0; c < CPU_SETSIZE; c++)
		CPU_SET(c, &all);
	pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
}
