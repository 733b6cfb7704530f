// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * tool.h - what the programs in tools/ share: the program name for
 * messages, the clock, number and list parsing, allocation, the backend
 * names, CPU pinning.  tools/tool.c is compiled into each tool (Makefile,
 * rule $(B)/tools/%).
 *
 * Parse errors print "PROG: bad number ..." and call the usage function
 * given to tool_init (which exits, normally with status 2).
 */
#ifndef UEPOLL_TOOL_H
#define UEPOLL_TOOL_H

#include <stddef.h>
#include <stdint.h>

extern const char *tool_prog;		/* argv[0] */

/* remember argv[0] and the usage function parse errors end in */
void tool_init(const char *argv0, void (*usage)(void));
/* print the usage (tool_init's function): does not return */
void tool_usage(void) __attribute__((noreturn));

int64_t tool_now_ns(void);		/* CLOCK_MONOTONIC in ns */
void *tool_xcalloc(size_t n, size_t size);	/* exits on failure */

/* a whole decimal number in [lo, hi], else tool_usage() */
long tool_parse_long(const char *s, long lo, long hi);
double tool_parse_double(const char *s, double lo, double hi);
/* "a,b,c" -> longs in [lo, hi]; the count (1..max), else tool_usage() */
int tool_parse_list(const char *s, long *out, int max, long lo, long hi);

/*
 * Library backends, named by the library (uepoll_backend_list(3)).
 * tool_backend: a backend's name or "auto" -> *flags (UEPOLL_BACKEND_*);
 * 0, or -1 for an unknown name.
 * tool_backend_name(i): the i-th backend in the automatic choice's order,
 * NULL past the last.  tool_backend_probe: 0 when an instance of that
 * backend can be created here, else the -errno uepoll_init gives.
 */
int tool_backend(const char *name, unsigned *flags);
const char *tool_backend_name(int i);
int tool_backend_probe(unsigned flags);

/* qsort comparator for doubles; nearest-rank percentile of a sorted array */
int tool_cmp_double(const void *a, const void *b);
double tool_pct(const double *sorted, size_t n, double q);

/* pin the calling thread to the k-th CPU it may run on; undo */
void tool_pin_self(int k);
void tool_unpin_self(void);

#endif
