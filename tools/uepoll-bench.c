// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * uepoll-bench - the benchmark scenarios of doc/BENCH.md.  Each scenario
 * runs every requested backend, interleaved A B A B ... for R repeats in
 * one process (the servers' scenarios after one run not counted: drive()),
 * and prints one CSV line per (backend, params, metric):
 *
 *   CSV,scenario,backend,params,metric,median,min,max,ratio_vs_epoll,ratio_lo,ratio_hi,env
 *
 * ratio_vs_epoll is the median over the repeats of value / epoll's value
 * in the same repeat (epoll measured right next to it); empty without an
 * epoll run.  ratio_lo, ratio_hi: an interval that holds the median of
 * that ratio's distribution with at least 90 % confidence
 * (ratio_interval()); empty below 5 repeats.  Progress and per-run
 * figures go to stderr.
 *
 * Everything about a scenario is its entry in the table `scenarios`
 * (near the end): name, titles, metrics, options, run function and the
 * parameter sets `make bench` runs.  `uepoll-bench --describe` prints
 * that table for scripts/bench and scripts/bench-report (format: usage()).
 *
 *   uepoll-bench sat    [common] [-t T,T,...] [-d SECONDS]
 *       T producer threads write 1 to their own eventfd in a loop; one
 *       consumer (uepoll_wait, reads the eventfds).  events_per_s: eventfd
 *       increments delivered per second; harvested_per_s: events returned
 *       by uepoll_wait; syscalls_per_1000ev: the consumer's library system
 *       calls (uepoll_get_stats, ctl excluded) per 1000 harvested events.
 *       The CPU split, what isolates the backend from the producers:
 *       consumer_cpu_ns_per_event / _per_increment: the consumer thread's
 *       CPU time (CLOCK_THREAD_CPUTIME_ID) per harvested event and per
 *       delivered increment; consumer_cpu_share, producer_cpu_share: CPU
 *       time / wall time (in CPUs; producers summed, each thread's clock
 *       from pthread_getcpuclockid); producer_cpu_ns_per_increment.  The
 *       threads are named sat-consumer and sat-producer (for perf).
 *   uepoll-bench lat    [common] [-n ROUNDS] [-m sleep|busy] [-S SPIN,SPIN,...]
 *       two threads bounce an event through two eventfds, each on its own
 *       instance; round-trip p50/p99/p99.9 in us.  sleep: uepoll_wait(-1)
 *       with the spin budget S (uepoll_set_spin); busy: uepoll_harvest in
 *       a loop (never sleeps).
 *   uepoll-bench sparse [common] [-N N,N,...] [-r ROUNDS]
 *       N registered socketpairs, 1% (at least 1) written each round, then
 *       harvested; ns per harvested event (harvest calls only).
 *   uepoll-bench idle   [common] [-f RATE] [-d SECONDS] [-S SPIN,...]
 *                       [-m et|lt|lt-drained]
 *       one producer writes RATE events per second; the consumer sleeps in
 *       uepoll_wait with spin budget S; consumer CPU time per event (us:
 *       CLOCK_THREAD_CPUTIME_ID, or where the clock is coarse a SCHED_IDLE
 *       soaker on the consumer's CPU, params ";cpu=soak"), wake-up latency
 *       p50/p99, the library's spin phases per 1000 events (its
 *       stats).  -m: the eventfd registered edge-triggered (et, default),
 *       level-triggered (lt: the library asks again whether it is still
 *       ready, as epoll does), or level-triggered with uepoll_drained(3)
 *       after each read, which drains it (lt-drained); params ";mode=M".
 *   uepoll-bench tcp    [common] [-c CONNS] [-n REQUESTS] [-m MODES]
 *       runs tools uepoll-httpd (the server, one per backend, plus
 *       epoll-lt: plain level-triggered epoll, no library) and
 *       uepoll-httpload (the client, a separate process) from this
 *       program's directory; req/s, latency p50/p99 (ms), the server's
 *       system calls per request (event_syscalls_per_req: wait, ctl and
 *       level-triggered re-checks).  MODES: the server's registrations
 *       (uepoll-httpd -m), a parameter set each: et, lt, et-batch,
 *       lt-batch, et-defer, lt-defer (default et).
 *
 *   common: -B BACKENDS (comma list of native,uring,epoll[,epoll-lt];
 *           default: every available one; epoll-lt for tcp only)
 *           -R REPEATS (default 5)  -E ENV (label of the last CSV column;
 *           default guest where the kernel has EPOLL_USERPOLL, else host)
 *           -s SPIN (spin budget for sat/sparse/tcp; default: library's)
 *   UEPOLL_BENCH_PIN=S,C: the server of tcp, bench_http and memcached on
 *           CPU S, its load client on CPU C (default: unpinned, as make
 *           bench runs them).  For experiments: pinned, a server sleeps
 *           more often, and CPU 0 is not CPU 1 under TCG, so pinning is
 *           another workload, not a quieter one (doc/BENCH.md, stop 28).
 *
 * Nothing here passes or fails on a figure: exit 0 when every run
 * completed, 1 when one could not (error printed), 2 on bad arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uepoll.h>
#include "tool.h"

#define MAXB	4	/* backends */
#define MAXP	8	/* parameter values per scenario */
#define MAXM	10	/* metrics per run */
#define MAXR	50	/* repeats */
#define MAXT	64	/* producer threads */
#define MAXSET	4	/* parameter sets of `make bench` per scenario and place */

static int R = 5;
static const char *env_label;
static long spin_opt = -1;	/* -1: library default */

/*
 * The clock.  CLOCK_MONOTONIC, unless its resolution is coarser than
 * 1 us: the guest kernel under TCG has no HPET or PM timer and runs on
 * jiffies (4 ms).  Then, on x86, the TSC (QEMU's TCG TSC follows the
 * host's, the same on every vCPU) calibrated against CLOCK_MONOTONIC
 * between two of its ticks about 0.5 s apart.  UEPOLL_BENCH_TSC set in
 * the environment forces the TSC (to test that path).
 */
static int use_tsc;
static double tsc_ns;		/* ns per TSC tick */
static int64_t tsc_base_ns;
static uint64_t tsc_base;

#if defined(__x86_64__) || defined(__i386__)
static uint64_t rdtsc(void)
{
	return __builtin_ia32_rdtsc();
}

/* spin until CLOCK_MONOTONIC moves; its new value, the TSC at that moment */
static int64_t mono_edge(uint64_t *tsc)
{
	int64_t t0 = tool_now_ns(), t;

	while ((t = tool_now_ns()) == t0)
		;
	*tsc = rdtsc();
	return t;
}
#endif

static void clock_setup(void)
{
	struct timespec res;

	if (clock_getres(CLOCK_MONOTONIC, &res) == 0 && res.tv_sec == 0 && res.tv_nsec <= 1000 &&
	    !getenv("UEPOLL_BENCH_TSC")) {	/* set: test the TSC path */
		fprintf(stderr, "# clock: CLOCK_MONOTONIC, resolution %ld ns\n", res.tv_nsec);
		return;
	}
#if defined(__x86_64__) || defined(__i386__)
	{
		uint64_t c0, c1;
		int64_t t0 = mono_edge(&c0), t1;

		do
			t1 = mono_edge(&c1);
		while (t1 - t0 < 500000000);
		tsc_ns = (double)(t1 - t0) / (double)(c1 - c0);
		tsc_base = c1;
		tsc_base_ns = t1;
		use_tsc = 1;
		fprintf(stderr, "# clock: CLOCK_MONOTONIC resolution %ld ns: TSC instead, %.4f ns per tick\n",
			(long)(res.tv_sec * 1000000000 + res.tv_nsec), tsc_ns);
	}
#else
	fprintf(stderr, "# clock: CLOCK_MONOTONIC, coarse (%ld ns): latencies are rounded\n",
		(long)(res.tv_sec * 1000000000 + res.tv_nsec));
#endif
}

static int64_t now_ns(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (use_tsc)
		return tsc_base_ns + (int64_t)((double)(int64_t)(rdtsc() - tsc_base) * tsc_ns);
#endif
	return tool_now_ns();
}

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts))
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* ---- backends ------------------------------------------------------------ */

/*
 * The library's backends come from tool.h (tool_backend_name, in the
 * automatic choice's order).  The benchmark's own baselines are not
 * library backends: programs without the library, run by the scenarios
 * that have one (struct scenario .baselines), never by uepoll_init.
 */
static const struct baseline {
	const char *name, *what;
} baselines[] = {
	{ "epoll-lt", "plain level-triggered epoll without the library" },
	{ "stock-epoll", "libevent's own epoll backend, same build (EVENT_NOUEPOLL)" },
};
#define NBASELINES (int)(sizeof(baselines) / sizeof(baselines[0]))

static int is_baseline(const char *b)
{
	for (int i = 0; i < NBASELINES; i++)
		if (!strcmp(b, baselines[i].name))
			return 1;
	return 0;
}

/* baseline b is one of those listed in `list` (comma separated; NULL: none) */
static int in_list(const char *list, const char *b)
{
	size_t n = strlen(b);

	for (const char *s = list; s && *s; s += strcspn(s, ",") + (s[strcspn(s, ",")] == ',')) {
		if (!strncmp(s, b, n) && (s[n] == ',' || !s[n]))
			return 1;
	}
	return 0;
}

/* an instance of backend b with capacity n and the spin budget (-1: the
 * library's default, its adaptive window included) */
static int open_backend(struct uepoll *u, const char *b, unsigned n, long spin)
{
	unsigned flags;
	int r = tool_backend(b, &flags);

	if (!r)
		r = uepoll_init(u, n, UEPOLL_CLOEXEC | flags);
	if (r < 0) {
		fprintf(stderr, "%s: uepoll_init(%s, %u): %s\n", tool_prog, b, n, strerror(-r));
		return r;
	}
	if (spin >= 0) {	/* exactly that budget: no adaptive window */
		r = uepoll_set_spin(u, (unsigned)spin);
		if (!r)
			r = uepoll_set_spin_adapt(u, 0);
		if (r < 0) {
			fprintf(stderr, "%s: uepoll_set_spin(%ld): %s\n", tool_prog, spin, strerror(-r));
			uepoll_exit(u);
			return r;
		}
	}
	return 0;
}

/* ADD of fd for events (0: EPOLLIN | EPOLLET, what every scenario but
 * idle -m lt registers) */
static int add_fd_events(struct uepoll *u, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events ? events : EPOLLIN | EPOLLET, .data.u64 = data };
	int r = uepoll_ctl(u, EPOLL_CTL_ADD, fd, &ev);

	if (r < 0)
		fprintf(stderr, "%s: uepoll_ctl(ADD, %d, 0x%x): %s\n", tool_prog, fd, ev.events,
			strerror(-r));
	return r;
}

static int add_fd(struct uepoll *u, int fd, uint64_t data)
{
	return add_fd_events(u, fd, 0, data);
}

/* ---- the scenario table's types ------------------------------------------
 * res[p][b][m][r]: parameter set p, backend b, metric m, repeat r. */

struct bench {
	const struct scenario *sc;
	int nb;				/* backends */
	const char *be[MAXB];
	int np;				/* parameter sets */
	char params[MAXP][64];
	int nm;				/* metrics */
	double res[MAXP][MAXB][MAXM][MAXR];
	int ok[MAXP][MAXB][MAXR];
};

enum better { LOWER, HIGHER, NEITHER };

struct metric {
	const char *name, *unit;
	enum better better;	/* NEITHER: describes the run, never judged */
	int summary;		/* a row of summary.md */
	const char *chart;	/* panel of the scenario's chart: ratio (to epoll)
				 * or abs, "-log" for a log scale; NULL: none */
	int panel;		/* the panel's place in the chart, from 1 */
};

/* one run of `make bench`: the arguments; for the guest, its timeout (s) */
struct pset {
	const char *args;
	int timeout;
};

/* out[m] for metric m of the scenario; 0, or -1 when the run failed */
typedef int (*run_fn)(const char *be, int p, double *out);

struct scenario {
	const char *name;
	const char *title;		/* table.txt */
	const char *chart_title;	/* NAME.png */
	const char *opts;		/* its getopt letters */
	const char *usage;
	int (*option)(int opt, const char *arg);	/* 0, or -1: bad option */
	void (*setup)(struct bench *bn);		/* params, after the options */
	run_fn run;
	const char *baselines;		/* the baselines[] it runs too (comma list) */
	const char *ratio_base;		/* ratio_vs_epoll against this (NULL: epoll) */
	const struct metric *metrics;	/* up to MAXM, ended by { NULL } */
	const char *summary_params;	/* regex: params in summary.md (NULL: all) */
	const char *hide;		/* params words left out of labels (NULL) */
	const char *summary_hide;	/* and out of summary.md's rows only (NULL) */
	const char *note;		/* what the metrics mean, for the reports */
	int warmup;			/* one unmeasured run first (drive()) */
	struct pset host[MAXSET], host_quick[MAXSET], guest[MAXSET], guest_quick[MAXSET];
};

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), tool_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * A distribution-free interval for the median of the per-repeat ratios
 * (the repeats independent, nothing assumed of their distribution): the
 * k-th smallest and the k-th largest of the n sorted values, k the
 * largest for which the true median lies outside with probability
 * 2 * P(Bin(n, 1/2) <= k - 1) <= 0.10.  n = 5: the min and the max
 * (93.8 %); n = 9: the 2nd and the 8th (96.1 %); n = 21: the 7th and the
 * 15th (92.2 %).  0 and no interval for n < 5, where even the min and the
 * max miss it too often (n = 4: 12.5 %).
 */
static int ratio_interval(const double *sorted, int n, double *lo, double *hi)
{
	double pk = 0, cdf = 0;	/* P(Bin(n, 1/2) = j), P(<= j) */
	int k = 0;

	for (int j = 0; 2 * j < n; j++) {
		pk = j ? pk * (n - j + 1) / j : 1.0 / (double)(1ULL << n);	/* n <= MAXR */
		cdf += pk;
		if (2 * cdf > 0.10)
			break;
		k = j + 1;
	}
	if (!k)
		return 0;
	*lo = sorted[k - 1];
	*hi = sorted[n - k];
	return 1;
}

/* the CSV line of (p, b, m); nothing when no repeat succeeded */
static void print_result(struct bench *bn, int p, int b, int m, int ep)
{
	double v[MAXR], ratio[MAXR], lo, hi;
	int n = 0, nr = 0;

	for (int r = 0; r < R; r++) {
		/* a metric a backend cannot measure is negative: no line */
		if (!bn->ok[p][b][r] || bn->res[p][b][m][r] < 0)
			continue;
		v[n++] = bn->res[p][b][m][r];
		if (ep >= 0 && bn->ok[p][ep][r] && bn->res[p][ep][m][r] > 0)
			ratio[nr++] = bn->res[p][b][m][r] / bn->res[p][ep][m][r];
	}
	if (!n)
		return;
	printf("CSV,%s,%s,%s,%s,%.6g,", bn->sc->name, bn->be[b], bn->params[p],
	       bn->sc->metrics[m].name, median(v, n));
	printf("%.6g,%.6g,", v[0], v[n - 1]);	/* sorted by median() */
	if (nr)
		printf("%.4f", median(ratio, nr));	/* sorts ratio[] */
	if (nr && ratio_interval(ratio, nr, &lo, &hi))
		printf(",%.4f,%.4f", lo, hi);
	else
		printf(",,");
	printf(",%s\n", env_label);
}

static void print_results(struct bench *bn)
{
	int ep = -1;

	const char *base = bn->sc->ratio_base ? bn->sc->ratio_base :
			   uepoll_backend_str(UEPOLL_BACKEND_EPOLL);

	for (int b = 0; b < bn->nb; b++)
		if (!strcmp(bn->be[b], base))
			ep = b;
	for (int p = 0; p < bn->np; p++)
		for (int b = 0; b < bn->nb; b++)
			for (int m = 0; m < bn->nm; m++)
				print_result(bn, p, b, m, ep);
	fflush(stdout);
}

/* A B A B ...: repeat r runs every backend once, for each parameter set */
static int drive(struct bench *bn)
{
	const struct scenario *sc = bn->sc;
	int fail = 0;

	/*
	 * The servers' first run is slow (under TCG, code not yet translated:
	 * bench_http's first run in a boot made 1906 req/s, the next ones
	 * 2500-2970 on every backend), and the first run is always the same
	 * backend's: one run of it, not counted, first.
	 */
	if (sc->warmup && bn->np && bn->nb) {
		double out[MAXM] = { 0 };

		if (sc->run(bn->be[0], 0, out) < 0)
			fprintf(stderr, "%s: %s warm-up run failed\n", tool_prog, sc->name);
		else
			fprintf(stderr, "# %s %s %s warm-up (not counted)\n", sc->name, bn->be[0],
				bn->params[0]);
	}
	for (int p = 0; p < bn->np; p++)
		for (int r = 0; r < R; r++)
			for (int bb = 0; bb < bn->nb; bb++) {
				/* alternate the order too: A B, B A, ... */
				int b = r % 2 ? bn->nb - 1 - bb : bb;
				double out[MAXM] = { 0 };

				if (sc->run(bn->be[b], p, out) < 0) {
					fprintf(stderr, "%s: %s %s %s repeat %d failed\n", tool_prog,
						sc->name, bn->be[b], bn->params[p], r);
					fail = 1;
					continue;
				}
				bn->ok[p][b][r] = 1;
				for (int m = 0; m < bn->nm; m++)
					bn->res[p][b][m][r] = out[m];
				fprintf(stderr, "# %s %s %s r%d:", sc->name, bn->be[b], bn->params[p], r);
				for (int m = 0; m < bn->nm; m++)
					fprintf(stderr, " %s=%.4g", sc->metrics[m].name, out[m]);
				fprintf(stderr, "\n");
			}
	print_results(bn);
	return fail;
}

/* ---- 1. saturation ----------------------------------------------------------- */

static long sat_T[MAXP];
static const char *sat_tlist = "1,2,8,64";
static double sat_secs = 1.0;

struct sat;

struct sat_arg {
	struct sat *s;
	int k;
};

struct sat {
	int T, nthr, have_u;
	int stop;
	int efd[MAXT];
	struct sat_arg args[MAXT];
	pthread_t th[MAXT];
	clockid_t pclk[MAXT];
	struct uepoll u;
};

static void *sat_producer(void *arg)
{
	struct sat_arg *a = arg;
	int fd = a->s->efd[a->k];
	uint64_t one = 1;

	while (!__atomic_load_n(&a->s->stop, __ATOMIC_RELAXED))
		if (write(fd, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN) {
			perror("write");
			exit(1);
		}
	return NULL;
}

/* the instance and the T eventfds, registered */
static int sat_open(struct sat *s, const char *be)
{
	for (int k = 0; k < s->T; k++)
		s->efd[k] = -1;
	if (open_backend(&s->u, be, (unsigned)s->T, spin_opt) < 0)
		return -1;
	s->have_u = 1;
	for (int k = 0; k < s->T; k++) {
		s->efd[k] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (s->efd[k] < 0) {
			perror("eventfd");
			return -1;
		}
		if (add_fd(&s->u, s->efd[k], (uint64_t)k) < 0)
			return -1;
	}
	return 0;
}

/* the T producers, named sat-producer, with their CPU clocks */
static int sat_start(struct sat *s)
{
	for (int k = 0; k < s->T; k++) {
		int e;

		s->args[k].s = s;
		s->args[k].k = k;
		e = pthread_create(&s->th[k], NULL, sat_producer, &s->args[k]);
		if (e) {
			fprintf(stderr, "pthread_create: %s\n", strerror(e));
			return -1;
		}
		s->nthr++;
		pthread_setname_np(s->th[k], "sat-producer");
		if (pthread_getcpuclockid(s->th[k], &s->pclk[k])) {
			fprintf(stderr, "pthread_getcpuclockid failed\n");
			return -1;
		}
	}
	return 0;
}

static int64_t sat_producers_cpu(struct sat *s)
{
	int64_t ns = 0;

	for (int k = 0; k < s->T; k++)
		ns += clock_ns(s->pclk[k]);
	return ns;
}

/* the consumer for sat_secs: harvest, read the counters; the figures */
static int sat_measure(struct sat *s, double *out)
{
	struct uepoll_stats s0, s1;
	struct epoll_event evs[256];
	uint64_t sum = 0, nev = 0, sys;
	int64_t c0, c1, pc0, pc1, t0, t1, end;
	double secs, wall, ccpu, pcpu;

	prctl(PR_SET_NAME, "sat-consumer", 0, 0, 0);
	uepoll_get_stats(&s->u, &s0);
	pc0 = sat_producers_cpu(s);
	c0 = thread_cpu_ns();
	t0 = now_ns();
	end = t0 + (int64_t)(sat_secs * 1e9);
	do {
		int n = uepoll_wait(&s->u, evs, 256, 100);

		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "uepoll_wait: %s\n", strerror(-n));
			return -1;
		}
		for (int i = 0; i < n; i++) {
			uint64_t v;

			if (read(s->efd[evs[i].data.u64], &v, sizeof(v)) == sizeof(v))
				sum += v;
		}
		if (n > 0)
			nev += (uint64_t)n;
		t1 = now_ns();
	} while (t1 < end);
	c1 = thread_cpu_ns();
	pc1 = sat_producers_cpu(s);
	uepoll_get_stats(&s->u, &s1);
	secs = (double)(t1 - t0) / 1e9;
	wall = (double)(t1 - t0);
	sys = (s1.syscalls - s1.ctl_syscalls) - (s0.syscalls - s0.ctl_syscalls);
	ccpu = (double)(c1 - c0);
	pcpu = (double)(pc1 - pc0);
	out[0] = (double)sum / secs;
	out[1] = (double)nev / secs;
	out[2] = nev ? 1000.0 * (double)sys / (double)nev : 0;
	out[3] = nev ? (double)sum / (double)nev : 0;
	out[4] = nev ? ccpu / (double)nev : 0;
	out[5] = sum ? ccpu / (double)sum : 0;
	out[6] = ccpu / wall;
	out[7] = pcpu / wall;
	out[8] = sum ? pcpu / (double)sum : 0;
	return 0;
}

static int run_sat(const char *be, int p, double *out)
{
	struct sat s = { .T = (int)sat_T[p] };
	int ret = -1;

	if (!sat_open(&s, be) && !sat_start(&s))
		ret = sat_measure(&s, out);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	for (int k = 0; k < s.nthr; k++)
		pthread_join(s.th[k], NULL);
	prctl(PR_SET_NAME, "uepoll-bench", 0, 0, 0);
	if (s.have_u)
		uepoll_exit(&s.u);
	for (int k = 0; k < s.T; k++)
		if (s.efd[k] >= 0)
			close(s.efd[k]);
	return ret;
}

static int sat_option(int opt, const char *arg)
{
	switch (opt) {
	case 't': sat_tlist = arg; return 0;
	case 'd': sat_secs = tool_parse_double(arg, 0.01, 3600); return 0;
	}
	return -1;
}

static void sat_setup(struct bench *bn)
{
	bn->np = tool_parse_list(sat_tlist, sat_T, MAXP, 1, MAXT);
	for (int p = 0; p < bn->np; p++)
		snprintf(bn->params[p], sizeof(bn->params[p]), "T=%ld", sat_T[p]);
	if (use_tsc)
		fprintf(stderr, "# sat: coarse clock: the CPU times are charged in whole ticks "
				"(read them over long runs only)\n");
}

/* in out[] order */
static const struct metric sat_metrics[] = {
	{ "events_per_s", "increments/s", HIGHER, 1, "ratio", 1 },
	{ "harvested_per_s", "events/s", HIGHER, 0, NULL, 0 },
	{ "syscalls_per_1000ev", "syscalls/1000 events", LOWER, 1, "abs", 4 },
	{ "increments_per_event", "increments/event", NEITHER, 0, NULL, 0 },
	{ "consumer_cpu_ns_per_event", "ns", LOWER, 1, "ratio-log", 2 },
	{ "consumer_cpu_ns_per_increment", "ns", LOWER, 1, "ratio", 3 },
	{ "consumer_cpu_share", "CPUs", NEITHER, 0, NULL, 0 },
	{ "producer_cpu_share", "CPUs", NEITHER, 1, NULL, 0 },
	{ "producer_cpu_ns_per_increment", "ns", NEITHER, 0, NULL, 0 },
	{ NULL }
};

/* ---- 2. wake latency ---------------------------------------------------------- */

static long lat_rounds = 20000;
static int lat_busy;
static const char *lat_slist;
static long lat_spin[MAXP];
#define LAT_WARMUP 200

struct lat_side {
	struct uepoll u;
	int rfd, wfd;		/* read the event from rfd, answer on wfd */
	long spin;
	int *stop;
};

/* one event from s->u: busy harvest or uepoll_wait; 0 or -1 (error/stall) */
static int lat_get(struct lat_side *s)
{
	struct epoll_event ev[4];
	int64_t t0 = 0;
	uint64_t v;

	for (;;) {
		int n = lat_busy ? uepoll_harvest(&s->u, ev, 4) : uepoll_wait(&s->u, ev, 4, 1000);

		if (n > 0)
			break;
		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "lat: %s\n", strerror(-n));
			return -1;
		}
		if (!t0)
			t0 = now_ns();
		else if (now_ns() - t0 > 10000000000LL) {
			fprintf(stderr, "lat: no event for 10 s\n");
			return -1;
		}
	}
	if (read(s->rfd, &v, sizeof(v)) != sizeof(v)) {
		perror("lat: read");
		return -1;
	}
	return 0;
}

static void *lat_echo(void *arg)
{
	struct lat_side *s = arg;
	uint64_t one = 1;

	tool_pin_self(1);
	for (;;) {
		if (lat_get(s) < 0) {
			__atomic_store_n(s->stop, 2, __ATOMIC_RELAXED);
			return NULL;
		}
		if (__atomic_load_n(s->stop, __ATOMIC_ACQUIRE))
			return NULL;
		if (write(s->wfd, &one, sizeof(one)) != sizeof(one)) {
			perror("lat: write");
			__atomic_store_n(s->stop, 2, __ATOMIC_RELAXED);
			return NULL;
		}
	}
}

/* two instances a and b, each with the eventfd its side reads (ab, ba) */
struct lat {
	struct lat_side a, b;
	int ab, ba, have_a, have_b, stop;
};

static int lat_open(struct lat *l, const char *be, long spin)
{
	l->ab = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	l->ba = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->ab < 0 || l->ba < 0) {
		perror("eventfd");
		return -1;
	}
	l->a = (struct lat_side){ .rfd = l->ba, .wfd = l->ab, .spin = spin, .stop = &l->stop };
	l->b = (struct lat_side){ .rfd = l->ab, .wfd = l->ba, .spin = spin, .stop = &l->stop };
	if (open_backend(&l->a.u, be, 4, spin) < 0)
		return -1;
	l->have_a = 1;
	if (open_backend(&l->b.u, be, 4, spin) < 0)
		return -1;
	l->have_b = 1;
	return add_fd(&l->a.u, l->ba, 0) < 0 || add_fd(&l->b.u, l->ab, 0) < 0 ? -1 : 0;
}

static void lat_close(struct lat *l)
{
	if (l->have_a)
		uepoll_exit(&l->a.u);
	if (l->have_b)
		uepoll_exit(&l->b.u);
	if (l->ab >= 0)
		close(l->ab);
	if (l->ba >= 0)
		close(l->ba);
}

/*
 * n round trips from side a (this thread) through the echo thread; rtt[i]
 * in us; the stats and the CPU time from the end of the warm-up (*s0,
 * *c0) to the end (*s1, *c1).  The rounds completed.
 */
static long lat_bounce(struct lat *l, long n, double *rtt, struct uepoll_stats *s0, int64_t *c0,
		       struct uepoll_stats *s1, int64_t *c1)
{
	uint64_t one = 1;
	long i;

	for (i = 0; i < n; i++) {
		int64_t t0;

		if (i == LAT_WARMUP) {
			uepoll_get_stats(&l->a.u, s0);
			*c0 = thread_cpu_ns();
		}
		t0 = now_ns();
		if (write(l->ab, &one, sizeof(one)) != sizeof(one)) {
			perror("lat: write");
			break;
		}
		if (lat_get(&l->a) < 0)
			break;
		rtt[i] = (double)(now_ns() - t0) / 1000.0;
		if (__atomic_load_n(&l->stop, __ATOMIC_RELAXED))
			break;
	}
	*c1 = thread_cpu_ns();
	uepoll_get_stats(&l->a.u, s1);
	return i;
}

static int run_lat(const char *be, int p, double *out)
{
	struct lat l = { .ab = -1, .ba = -1 };
	long n = lat_rounds + LAT_WARMUP, i = 0;
	double *rtt = tool_xcalloc((size_t)n, sizeof(double));
	struct uepoll_stats s0, s1;
	int64_t c0 = 0, c1;
	uint64_t one = 1;
	pthread_t th;
	int ret = -1, e;

	if (lat_open(&l, be, lat_spin[p]) < 0)
		goto out;
	e = pthread_create(&th, NULL, lat_echo, &l.b);
	if (e) {
		fprintf(stderr, "pthread_create: %s\n", strerror(e));
		goto out;
	}
	tool_pin_self(0);
	i = lat_bounce(&l, n, rtt, &s0, &c0, &s1, &c1);
	if (!__atomic_load_n(&l.stop, __ATOMIC_RELAXED))
		__atomic_store_n(&l.stop, 1, __ATOMIC_RELEASE);
	if (write(l.ab, &one, sizeof(one)) != sizeof(one))
		perror("lat: write");
	pthread_join(th, NULL);
	tool_unpin_self();
	if (i == n && l.stop == 1) {
		double *v = rtt + LAT_WARMUP;
		size_t m = (size_t)lat_rounds;

		qsort(v, m, sizeof(*v), tool_cmp_double);
		out[0] = tool_pct(v, m, 0.50);
		out[1] = tool_pct(v, m, 0.99);
		out[2] = tool_pct(v, m, 0.999);
		out[3] = 1000.0 * (double)((s1.syscalls - s1.ctl_syscalls) - (s0.syscalls - s0.ctl_syscalls)) /
			 (double)m;
		out[4] = (double)(c1 - c0) / 1000.0 / (double)m;
		ret = 0;
	}
out:
	lat_close(&l);
	free(rtt);
	return ret;
}

static int lat_option(int opt, const char *arg)
{
	switch (opt) {
	case 'n': lat_rounds = tool_parse_long(arg, 1, 100000000); return 0;
	case 'S': lat_slist = arg; return 0;
	case 'm':
		lat_busy = !strcmp(arg, "busy");
		return lat_busy || !strcmp(arg, "sleep") ? 0 : -1;
	}
	return -1;
}

static void lat_setup(struct bench *bn)
{
	bn->np = lat_slist ? tool_parse_list(lat_slist, lat_spin, MAXP, -1, UEPOLL_SPIN_MAX) : 1;
	if (!lat_slist)
		lat_spin[0] = spin_opt;
	for (int p = 0; p < bn->np; p++) {
		if (lat_busy)
			snprintf(bn->params[p], sizeof(bn->params[p]), "mode=busy");
		else if (lat_spin[p] < 0)
			snprintf(bn->params[p], sizeof(bn->params[p]), "mode=sleep;spin=default");
		else
			snprintf(bn->params[p], sizeof(bn->params[p]), "mode=sleep;spin=%ld", lat_spin[p]);
	}
	if (lat_busy)
		bn->np = 1;
}

static const struct metric lat_metrics[] = {
	{ "rtt_p50_us", "us", LOWER, 1, "abs-log", 1 },
	{ "rtt_p99_us", "us", LOWER, 1, "abs-log", 2 },
	{ "rtt_p999_us", "us", LOWER, 0, NULL, 0 },
	{ "syscalls_per_1000ev", "syscalls/1000 round trips", LOWER, 1, NULL, 0 },
	{ "cpu_us_per_rtt", "us", LOWER, 0, NULL, 0 },
	{ NULL }
};

/* ---- 3. sparse ---------------------------------------------------------------- */

static const char *sparse_nlist = "100,1000,10000";

static long sparse_N[MAXP];
static long sparse_rounds = 2000;

/* raise RLIMIT_NOFILE towards need; returns the soft limit now in force */
static long raise_nofile(long need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 1024;
	if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < need) {
		if (rl.rlim_max != RLIM_INFINITY && (long)rl.rlim_max < need) {
			struct rlimit want = { (rlim_t)need, (rlim_t)need };

			if (!setrlimit(RLIMIT_NOFILE, &want))	/* root may raise the hard limit */
				return need;
		}
		rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && (long)rl.rlim_max < need ? rl.rlim_max : (rlim_t)need;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur == RLIM_INFINITY ? LONG_MAX : (long)rl.rlim_cur;
}

/*
 * N registrations: N socketpairs with one end registered when the fd
 * limit allows 2N descriptors, else N/2 socketpairs with both ends
 * registered (a write into one end makes only the other readable).
 */
static int sparse_both_ends(long N)
{
	return raise_nofile(2 * N + 64) < 2 * N + 64;
}

struct sparse {
	long N, active, pairs, made;
	int both, have_u;
	int (*sv)[2];		/* registration k: sv[k][0], or sv[k/2][k%2] (both) */
	int *pick;
	struct epoll_event *evs;
	struct uepoll u;
	int64_t tharv;		/* time in uepoll_wait */
};

static int sparse_open(struct sparse *s, const char *be, long N)
{
	s->N = N;
	s->active = N / 100 > 0 ? N / 100 : 1;
	s->both = sparse_both_ends(N);
	s->pairs = s->both ? (N + 1) / 2 : N;
	s->sv = tool_xcalloc((size_t)s->pairs, sizeof(*s->sv));
	s->pick = tool_xcalloc((size_t)N, sizeof(int));
	s->evs = tool_xcalloc((size_t)s->active + 1, sizeof(*s->evs));
	if (open_backend(&s->u, be, (unsigned)N, spin_opt) < 0)
		return -1;
	s->have_u = 1;
	for (s->made = 0; s->made < s->pairs; s->made++)
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, s->sv[s->made]) < 0) {
			perror("socketpair (RLIMIT_NOFILE?)");
			return -1;
		}
	for (long k = 0; k < N; k++)
		if (add_fd(&s->u, s->both ? s->sv[k / 2][k % 2] : s->sv[k][0], (uint64_t)k) < 0)
			return -1;
	for (long k = 0; k < N; k++)
		s->pick[k] = (int)k;
	return 0;
}

static void sparse_close(struct sparse *s)
{
	if (s->have_u)
		uepoll_exit(&s->u);
	for (long k = 0; k < s->made; k++) {
		close(s->sv[k][0]);
		close(s->sv[k][1]);
	}
	free(s->sv);
	free(s->pick);
	free(s->evs);
}

/* a fresh random 1%, written: partial Fisher-Yates */
static int sparse_write(struct sparse *s, unsigned *seed)
{
	char c = 'x';

	for (long k = 0; k < s->active; k++) {
		long j = k + (long)(rand_r(seed) % (unsigned)(s->N - k));
		int t = s->pick[k], w;

		s->pick[k] = s->pick[j];
		s->pick[j] = t;
		w = s->both ? s->sv[s->pick[k] / 2][1 - s->pick[k] % 2] : s->sv[s->pick[k]][1];
		if (write(w, &c, 1) != 1) {
			perror("sparse: write");
			return -1;
		}
	}
	return 0;
}

/* harvest the round's events, timing the harvests: their count, -1 on an error or a stall */
static long sparse_harvest(struct sparse *s)
{
	long got = 0;

	while (got < s->active) {
		int64_t t0 = now_ns();
		int n = uepoll_wait(&s->u, s->evs, (int)s->active + 1, 1000);

		s->tharv += now_ns() - t0;
		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "sparse: uepoll_wait: %s\n", strerror(-n));
			return -1;
		}
		if (n == 0) {
			fprintf(stderr, "sparse: %ld of %ld events after 1 s\n", got, s->active);
			return -1;
		}
		for (int i = 0; i < n; i++) {
			uint64_t k = s->evs[i].data.u64;
			char b;

			if (read(s->both ? s->sv[k / 2][k % 2] : s->sv[k][0], &b, 1) != 1) {
				perror("sparse: read");
				return -1;
			}
		}
		got += n > 0 ? n : 0;
	}
	return got;
}

static int run_sparse(const char *be, int p, double *out)
{
	struct sparse s = { 0 };
	struct uepoll_stats s0, s1;
	unsigned seed = 4242u + (unsigned)p;
	int64_t tall0, tall;
	uint64_t nev = 0;
	int ret = -1;

	if (sparse_open(&s, be, sparse_N[p]) < 0)
		goto out;
	uepoll_get_stats(&s.u, &s0);
	tall0 = now_ns();
	for (long r = 0; r < sparse_rounds; r++) {
		long got = sparse_write(&s, &seed) < 0 ? -1 : sparse_harvest(&s);

		if (got < 0)
			goto out;
		nev += (uint64_t)got;
	}
	tall = now_ns() - tall0;
	uepoll_get_stats(&s.u, &s1);
	out[0] = (double)s.tharv / (double)nev;
	out[1] = (double)tall / (double)nev;
	out[2] = 1000.0 * (double)((s1.syscalls - s1.ctl_syscalls) - (s0.syscalls - s0.ctl_syscalls)) / (double)nev;
	ret = 0;
out:
	sparse_close(&s);
	return ret;
}

static int sparse_option(int opt, const char *arg)
{
	switch (opt) {
	case 'N': sparse_nlist = arg; return 0;
	case 'r': sparse_rounds = tool_parse_long(arg, 1, 100000000); return 0;
	}
	return -1;
}

static void sparse_setup(struct bench *bn)
{
	bn->np = tool_parse_list(sparse_nlist, sparse_N, MAXP, 1, UEPOLL_MAX_ITEMS);
	for (int p = 0; p < bn->np; p++)
		snprintf(bn->params[p], sizeof(bn->params[p]), "registered=%ld;active=%ld;%s", sparse_N[p],
			 sparse_N[p] / 100 > 0 ? sparse_N[p] / 100 : 1,
			 sparse_both_ends(sparse_N[p]) ? "both-ends" : "one-end");
}

static const struct metric sparse_metrics[] = {
	{ "harvest_ns_per_event", "ns", LOWER, 1, "abs-log", 1 },
	{ "round_ns_per_event", "ns", LOWER, 0, NULL, 0 },
	{ "syscalls_per_1000ev", "syscalls/1000 events", LOWER, 0, "abs", 2 },
	{ NULL }
};

/* ---- 5. idle / slow load ----------------------------------------------------------- */

static double idle_rate = 200;
static double idle_secs = 1.0;
static const char *idle_slist;
static long idle_spin[MAXP];
/* -m: 0 et, 1 lt, 2 lt-drained */
static const char *const idle_mode_names[] = { "et", "lt", "lt-drained" };
static int idle_mode;

struct idle {
	int efd;
	int stop;
	int64_t sent;		/* send time of the last write */
};

static void *idle_producer(void *arg)
{
	struct idle *s = arg;
	int64_t period = (int64_t)(1e9 / idle_rate), next;
	uint64_t one = 1;

	tool_pin_self(1);
	next = tool_now_ns();

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		struct timespec ts;

		next += period;
		ts.tv_sec = next / 1000000000;
		ts.tv_nsec = next % 1000000000;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		__atomic_store_n(&s->sent, now_ns(), __ATOMIC_RELEASE);
		if (write(s->efd, &one, sizeof(one)) != sizeof(one)) {
			perror("idle: write");
			exit(1);
		}
	}
	return NULL;
}

/*
 * Where the clock is coarse (the TCG guest) so is the CPU-time clock:
 * the kernel charges run time in whole 4 ms jiffies, and the producer's
 * timer fires on a jiffy, so the consumer's charge is biased, not just
 * noisy.  There the consumer's CPU is measured from below instead: a
 * SCHED_IDLE "soaker" thread on the consumer's CPU reads the TSC in a
 * loop; every gap longer than SOAK_GAP_NS is time the CPU spent on
 * something else (the consumer, the kernel on its behalf, interrupts).
 * The consumer preempts the soaker at once when it wakes (SCHED_IDLE).
 * Side effect: that CPU is never idle, so the consumer's wake-up does not
 * include a halted vCPU's wake-up.
 */
#define SOAK_GAP_NS 1000

struct soak {
	int stop, on;
	uint64_t gaps;
};

static void *soaker(void *arg)
{
	struct soak *k = arg;
	struct sched_param sp = { .sched_priority = 0 };
	int64_t last, t;
	uint64_t gaps = 0;

	tool_pin_self(0);
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	last = now_ns();
	while (!__atomic_load_n(&k->stop, __ATOMIC_RELAXED)) {
		t = now_ns();
		if (t - last > SOAK_GAP_NS && __atomic_load_n(&k->on, __ATOMIC_RELAXED))
			gaps += (uint64_t)(t - last);
		last = t;
	}
	k->gaps = gaps;
	return NULL;
}

/* with the coarse clock (use_tsc): the soaker on this thread's CPU (0) */
static int soak_start(struct soak *k, pthread_t *sth)
{
	int e = pthread_create(sth, NULL, soaker, k);

	if (e) {
		fprintf(stderr, "pthread_create: %s\n", strerror(e));
		return -1;
	}
	usleep(20000);
	__atomic_store_n(&k->on, 1, __ATOMIC_RELAXED);
	return 0;
}

/*
 * The consumer for idle_secs: wait, read, the wake-up latency of each
 * event into lat[] (at most cap, *nl of them); the events, the CPU time
 * (*cpu), the library's sleep/harvest system calls (cnt[0]) and its spin
 * phases (cnt[1]), from its stats.
 */
static uint64_t idle_consume(struct uepoll *u, struct idle *s, double *lat, size_t cap, size_t *nl,
			     int64_t *cpu, uint64_t *cnt)
{
	struct uepoll_stats s0, s1;
	struct epoll_event evs[4];
	int64_t end, c0;
	uint64_t nev = 0;

	uepoll_get_stats(u, &s0);
	c0 = thread_cpu_ns();
	end = now_ns() + (int64_t)(idle_secs * 1e9);
	while (now_ns() < end) {
		int n = uepoll_wait(u, evs, 4, 100);
		uint64_t v;

		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "idle: uepoll_wait: %s\n", strerror(-n));
			break;
		}
		if (n <= 0)
			continue;
		if (read(s->efd, &v, sizeof(v)) == sizeof(v) && *nl < cap)
			lat[(*nl)++] = (double)(now_ns() - __atomic_load_n(&s->sent, __ATOMIC_ACQUIRE)) / 1000.0;
		if (idle_mode == 2)	/* an eventfd's read takes the whole count */
			uepoll_drained(u, s->efd, EPOLLIN);
		nev += (uint64_t)n;
	}
	*cpu = thread_cpu_ns() - c0;
	uepoll_get_stats(u, &s1);
	cnt[0] = (s1.syscalls - s1.ctl_syscalls) - (s0.syscalls - s0.ctl_syscalls);
	cnt[1] = s1.spins - s0.spins;
	return nev;
}

/* producer, soaker (coarse clock) and consumer; the figures; 0 or -1 */
static int idle_measure(struct uepoll *u, struct idle *s, double *lat, size_t cap, double *out)
{
	struct soak k = { 0 };
	pthread_t th, sth;
	int soaking = 0, e;
	size_t nl = 0;
	int64_t cpu;
	uint64_t nev, cnt[2];

	e = pthread_create(&th, NULL, idle_producer, s);
	if (e) {
		fprintf(stderr, "pthread_create: %s\n", strerror(e));
		return -1;
	}
	tool_pin_self(0);
	if (use_tsc && soak_start(&k, &sth) < 0) {
		__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
		pthread_join(th, NULL);
		tool_unpin_self();
		return -1;
	}
	soaking = use_tsc;
	nev = idle_consume(u, s, lat, cap, &nl, &cpu, cnt);
	__atomic_store_n(&k.on, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	if (soaking) {
		__atomic_store_n(&k.stop, 1, __ATOMIC_RELAXED);
		pthread_join(sth, NULL);
	}
	tool_unpin_self();
	if (!nev || !nl) {
		fprintf(stderr, "idle: no event\n");
		return -1;
	}
	qsort(lat, nl, sizeof(*lat), tool_cmp_double);
	out[0] = (soaking ? (double)k.gaps : (double)cpu) / 1000.0 / (double)nev;
	out[1] = tool_pct(lat, nl, 0.50);
	out[2] = tool_pct(lat, nl, 0.99);
	out[3] = 1000.0 * (double)cnt[0] / (double)nev;
	out[4] = (double)nev / idle_secs;
	out[5] = 1000.0 * (double)cnt[1] / (double)nev;
	return 0;
}

static int run_idle(const char *be, int p, double *out)
{
	struct idle s = { .efd = -1 };
	size_t cap = (size_t)(idle_rate * idle_secs * 2) + 16;
	double *lat = tool_xcalloc(cap, sizeof(double));
	struct uepoll u;
	int ret = -1, have_u = 0;

	s.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s.efd < 0) {
		perror("eventfd");
		goto out;
	}
	if (open_backend(&u, be, 4, idle_spin[p]) < 0)
		goto out;
	have_u = 1;
	if (add_fd_events(&u, s.efd, idle_mode ? EPOLLIN : 0, 0) < 0)	/* -m lt: no EPOLLET */
		goto out;
	ret = idle_measure(&u, &s, lat, cap, out);
out:
	if (have_u)
		uepoll_exit(&u);
	if (s.efd >= 0)
		close(s.efd);
	free(lat);
	return ret;
}

static int idle_option(int opt, const char *arg)
{
	switch (opt) {
	case 'f': idle_rate = tool_parse_double(arg, 0.1, 100000); return 0;
	case 'd': idle_secs = tool_parse_double(arg, 0.01, 3600); return 0;
	case 'S': idle_slist = arg; return 0;
	case 'm':
		for (idle_mode = 0; idle_mode < 3; idle_mode++)
			if (!strcmp(arg, idle_mode_names[idle_mode]))
				return 0;
		fprintf(stderr, "%s: idle -m: et, lt or lt-drained, not %s\n", tool_prog, arg);
		exit(2);
	}
	return -1;
}

static void idle_setup(struct bench *bn)
{
	bn->np = idle_slist ? tool_parse_list(idle_slist, idle_spin, MAXP, -1, UEPOLL_SPIN_MAX) : 1;
	if (!idle_slist)
		idle_spin[0] = spin_opt;
	for (int p = 0; p < bn->np; p++) {
		char spin[24] = "default";

		if (idle_spin[p] >= 0)
			snprintf(spin, sizeof(spin), "%ld", idle_spin[p]);
		snprintf(bn->params[p], sizeof(bn->params[p]), "rate=%g;spin=%s%s%s%s", idle_rate, spin,
			 idle_mode ? ";mode=" : "", idle_mode ? idle_mode_names[idle_mode] : "",
			 use_tsc ? ";cpu=soak" : "");
	}
}

static const struct metric idle_metrics[] = {
	{ "cpu_us_per_event", "us", LOWER, 1, "abs-log", 1 },
	{ "wake_p50_us", "us", LOWER, 0, "abs-log", 2 },
	{ "wake_p99_us", "us", LOWER, 0, NULL, 0 },
	{ "syscalls_per_1000ev", "syscalls/1000 events", LOWER, 0, NULL, 0 },
	{ "events_per_s", "events/s", HIGHER, 0, NULL, 0 },
	{ "spins_per_1000ev", "spin phases/1000 events", NEITHER, 0, NULL, 0 },
	{ NULL }
};

/* ---- 4. TCP: drive uepoll-httpd and uepoll-httpload ----------------------------------- */

static long tcp_conns = 200, tcp_requests = 20000;
/* -m: the server's modes (uepoll-httpd -m), one parameter set each */
static const char *const tcp_mode_names[] = { "et", "lt", "et-batch", "lt-batch", "et-defer", "lt-defer" };
#define NTCPMODES	6
static const char *tcp_modes = "et";
static int tcp_mode[MAXP];
static char tooldir[PATH_MAX];

static void find_tooldir(void)
{
	char *slash;
	ssize_t n = readlink("/proc/self/exe", tooldir, sizeof(tooldir) - 1);

	if (n <= 0) {
		snprintf(tooldir, sizeof(tooldir), "%s", tool_prog);
		n = (ssize_t)strlen(tooldir);
	}
	tooldir[n] = 0;
	slash = strrchr(tooldir, '/');
	if (slash)
		*slash = 0;
	else
		strcpy(tooldir, ".");
}

/*
 * UEPOLL_BENCH_PIN=S,C: the servers of the tcp, bench_http and memcached
 * scenarios run on CPU S, their load clients on CPU C (sched_setaffinity()
 * in the child, before exec).  Unset: where the scheduler puts them.
 */
enum { ROLE_SERVER, ROLE_CLIENT };
static int pin_cpu[2] = { -1, -1 };

static void pin_parse(void)
{
	const char *e = getenv("UEPOLL_BENCH_PIN");
	int s, c, end = -1;

	if (!e || !*e)
		return;
	/* %n: the whole value, nothing after the second number */
	if (sscanf(e, "%d,%d%n", &s, &c, &end) != 2 || e[end] || s < 0 || c < 0 ||
	    s >= CPU_SETSIZE || c >= CPU_SETSIZE) {
		fprintf(stderr, "%s: UEPOLL_BENCH_PIN: want S,C (two CPU numbers), not '%s'\n",
			tool_prog, e);
		exit(2);
	}
	pin_cpu[ROLE_SERVER] = s;
	pin_cpu[ROLE_CLIENT] = c;
}

/* in a child: onto its role's CPU, if asked; 127 if that fails */
static void pin_child(int role)
{
	cpu_set_t set;

	if (pin_cpu[role] < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(pin_cpu[role], &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		fprintf(stderr, "sched_setaffinity(CPU %d): %s\n", pin_cpu[role], strerror(errno));
		_exit(127);
	}
}

/* fork+exec argv with stdout to a pipe; *rfp: the pipe's read end */
static pid_t spawn(char *const argv[], int role, FILE **rfp)
{
	int pfd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		perror("pipe");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		pin_child(role);
		if (dup2(pfd[1], 1) < 0)
			_exit(127);
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	*rfp = fdopen(pfd[0], "r");
	if (!*rfp) {
		perror("fdopen");
		close(pfd[0]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

/* value of "key=" in a line of key=value words; NAN-free: -1 when absent */
static double kv(const char *line, const char *key)
{
	size_t kl = strlen(key);
	const char *s = line;

	while ((s = strstr(s, key))) {
		if ((s == line || s[-1] == ' ') && s[kl] == '=')
			return strtod(s + kl + 1, NULL);
		s += kl;
	}
	return -1;
}

/*
 * Wait for a server (or a load client) to end (its status in *st, if st):
 * its CPU time, user and system, in microseconds, from the rusage wait4()
 * gives for it: all its threads, from exec to exit; -1 if wait4() failed.
 * What the process spends; a run's req/s also follows how the scheduler
 * shares the machine's CPUs between the server and its client
 * (doc/BENCH.md).  *sleeps (if sleeps): its voluntary context switches,
 * the times one of its threads blocked (-1 if wait4() failed).
 */
static double wait_cpu_us(pid_t pid, int *st, double *sleeps)
{
	struct rusage ru;

	if (sleeps)
		*sleeps = -1;
	if (wait4(pid, st, 0, &ru) < 0)
		return -1;
	if (sleeps)
		*sleeps = (double)ru.ru_nvcsw;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* uepoll-httpd for backend be (a library backend, or epoll-lt) in mode m; its port in *port */
static pid_t tcp_server(const char *be, int m, FILE **sf, int *port)
{
	static char srv[PATH_MAX + 32], sbuf[24];
	char *argv[10], line[512];
	int na = 0;
	pid_t pid;

	snprintf(srv, sizeof(srv), "%s/uepoll-httpd", tooldir);
	argv[na++] = srv;
	if (is_baseline(be)) {		/* epoll-lt: the server without the library */
		argv[na++] = (char *)"--plain-epoll-lt";
	} else {
		argv[na++] = (char *)"-b";
		argv[na++] = (char *)be;
		argv[na++] = (char *)"-m";
		argv[na++] = (char *)tcp_mode_names[m];
		if (spin_opt >= 0) {
			snprintf(sbuf, sizeof(sbuf), "%ld", spin_opt);
			argv[na++] = (char *)"-s";
			argv[na++] = sbuf;
		}
	}
	argv[na++] = (char *)"-p";
	argv[na++] = (char *)"0";
	argv[na] = NULL;
	pid = spawn(argv, ROLE_SERVER, sf);
	*port = -1;
	if (pid < 0)
		return -1;
	while (fgets(line, sizeof(line), *sf))
		if (sscanf(line, "PORT %d", port) == 1)
			break;
	return pid;
}

/* uepoll-httpload against port: its RESULT line into result[] (size 512) */
static int tcp_client(int port, char *result)
{
	static char cli[PATH_MAX + 32];
	char portbuf[16], cbuf[16], nbuf[16], line[512];
	char *argv[] = { cli, (char *)"-p", portbuf, (char *)"-c", cbuf, (char *)"-n", nbuf, NULL };
	FILE *cf;
	pid_t pid;
	int st;

	snprintf(cli, sizeof(cli), "%s/uepoll-httpload", tooldir);
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	snprintf(cbuf, sizeof(cbuf), "%ld", tcp_conns);
	snprintf(nbuf, sizeof(nbuf), "%ld", tcp_requests);
	pid = spawn(argv, ROLE_CLIENT, &cf);
	if (pid < 0)
		return -1;
	while (fgets(line, sizeof(line), cf))
		if (!strncmp(line, "RESULT ", 7))
			snprintf(result, 512, "%s", line);
	fclose(cf);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "tcp: client failed (status 0x%x)\n", st);
	return 0;
}

static int run_tcp(const char *be, int p, double *out)
{
	char line[512], stats[512] = "", result[512] = "";
	FILE *sf = NULL;
	pid_t spid;
	int port, st;
	double req, cpu;

	spid = tcp_server(be, tcp_mode[p], &sf, &port);
	if (spid < 0)
		return -1;
	if (port <= 0)
		fprintf(stderr, "tcp: uepoll-httpd gave no port\n");
	if (port <= 0 || tcp_client(port, result) < 0) {
		kill(spid, SIGKILL);
	} else {
		kill(spid, SIGTERM);
		while (fgets(line, sizeof(line), sf))
			if (!strncmp(line, "STATS ", 6))
				snprintf(stats, sizeof(stats), "%s", line);
	}
	fclose(sf);
	cpu = wait_cpu_us(spid, &st, NULL);
	if (cpu < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "tcp: server %s ended with status 0x%x\n", be, st);
		return -1;
	}
	/* the client's errors and the server's (a failed ADD, a read error) */
	if (!result[0] || !stats[0] || kv(result, "errors") != 0 || kv(stats, "errors") != 0) {
		fprintf(stderr, "tcp: %s: result '%s' stats '%s'\n", be, result, stats);
		return -1;
	}
	/* the server's own counters, for the profile of a run (doc/BENCH.md) */
	fprintf(stderr, "#   server: %s", stats);
	req = kv(stats, "requests");
	out[0] = kv(result, "req_per_s");
	out[1] = kv(result, "p50_ms");
	out[2] = kv(result, "p99_ms");
	out[3] = req > 0 ? 1000.0 * kv(stats, "wait_syscalls") / req : 0;
	out[4] = req > 0 ? 1000.0 * kv(stats, "ctl_syscalls") / req : 0;
	out[5] = req > 0 ? kv(stats, "event_syscalls") / req : 0;
	out[6] = req > 0 ? cpu / req : 0;
	return 0;
}

static int tcp_option(int opt, const char *arg)
{
	switch (opt) {
	case 'c': tcp_conns = tool_parse_long(arg, 1, 10000); return 0;
	case 'n': tcp_requests = tool_parse_long(arg, 1, 100000000); return 0;
	case 'm': tcp_modes = arg; return 0;
	}
	return -1;
}

static void tcp_setup(struct bench *bn)
{
	char buf[128], *save = NULL, *w;

	snprintf(buf, sizeof(buf), "%s", tcp_modes);
	bn->np = 0;
	for (w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int m;

		for (m = 0; m < NTCPMODES && strcmp(w, tcp_mode_names[m]); m++)
			;
		if (m == NTCPMODES || bn->np == MAXP) {
			fprintf(stderr, "tcp: -m: modes are et, lt, et-batch, lt-batch, et-defer, lt-defer "
				"(at most %d)\n", MAXP);
			exit(2);
		}
		tcp_mode[bn->np] = m;
		snprintf(bn->params[bn->np], sizeof(bn->params[0]), "conns=%ld;requests=%ld;mode=%s",
			 tcp_conns, tcp_requests, w);
		bn->np++;
	}
	if (!bn->np) {
		fprintf(stderr, "tcp: -m: no mode\n");
		exit(2);
	}
}

static const struct metric tcp_metrics[] = {
	{ "req_per_s", "req/s", HIGHER, 1, "ratio", 1 },
	{ "lat_p50_ms", "ms", LOWER, 0, NULL, 0 },
	{ "lat_p99_ms", "ms", LOWER, 1, "ratio", 2 },
	{ "wait_syscalls_per_1000req", "syscalls/1000 requests", LOWER, 1, NULL, 0 },
	{ "ctl_syscalls_per_1000req", "syscalls/1000 requests", LOWER, 1, NULL, 0 },
	{ "event_syscalls_per_req", "syscalls/request", LOWER, 1, NULL, 0 },
	{ "server_cpu_us_per_req", "us", LOWER, 1, NULL, 0 },
	{ NULL }
};

/* ---- 6. libevent: its bench_http, and memcached on it ------------------------------- */

/*
 * Programs built on libevent (make libevent: its bench_http server and
 * bench_httpclient; Debian's memcached through LD_LIBRARY_PATH), run with
 * the libevent of $UEPOLL_BENCH_LIBEVENT (the build's bin/; its lib/ next
 * to it).  The server's backend: stock-epoll = libevent's own epoll
 * backend (EVENT_NOUEPOLL=1), native/uring/epoll = the uepoll backend on
 * that library backend (UEPOLL_BACKEND).  Load clients always run on
 * stock epoll: only the server changes.  The server's event system calls:
 * on the host, perf's syscall tracepoints on the server's threads (every
 * backend alike); in the guest (no perf), the library's counters
 * (UEPOLL_STATS lines at the server's end; none for stock-epoll).
 */
static const char *libevent_dir(void)
{
	const char *d = getenv("UEPOLL_BENCH_LIBEVENT");

	if (!d || !*d)
		fprintf(stderr, "%s: UEPOLL_BENCH_LIBEVENT (libevent's bin/, make libevent) is not set\n",
			tool_prog);
	return d && *d ? d : NULL;
}

/* -D: the uepoll backend defers its changes (EVENT_UEPOLL_DEFER) */
static int le_defer;

/* in a child: the environment that makes a libevent program use backend be */
static void libevent_env(const char *be)
{
	if (le_defer && strcmp(be, "stock-epoll"))
		setenv("EVENT_UEPOLL_DEFER", "1", 1);
	else
		unsetenv("EVENT_UEPOLL_DEFER");
	if (!strcmp(be, "stock-epoll")) {
		setenv("EVENT_NOUEPOLL", "1", 1);
		unsetenv("UEPOLL_BACKEND");
	} else {
		unsetenv("EVENT_NOUEPOLL");
		setenv("UEPOLL_BACKEND", be, 1);
	}
	setenv("UEPOLL_STATS", "1", 1);
	setenv("EVENT_SHOW_METHOD", "1", 1);
	if (spin_opt >= 0) {
		char b[24];

		snprintf(b, sizeof(b), "%ld", spin_opt);
		setenv("UEPOLL_SPIN", b, 1);
		setenv("UEPOLL_SPIN_ADAPT", "0", 1);
	}
}

/* set: spawn_le()'s child gives up root first (a static memcached in the
 * guest, which cannot look up a user to switch to: no NSS) */
static int le_drop_root;

/* fork+exec argv for backend be, stdout and stderr to one pipe (*rfp) */
static pid_t spawn_le(char *const argv[], const char *be, int role, const char *libdir,
		      FILE **rfp)
{
	int pfd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return perror("pipe"), -1;
	pid = fork();
	if (pid == 0) {
		pin_child(role);
		libevent_env(be);
		if (libdir)
			setenv("LD_LIBRARY_PATH", libdir, 1);
		if (dup2(pfd[1], 1) < 0 || dup2(pfd[1], 2) < 0)
			_exit(127);
		if (le_drop_root && geteuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
			_exit(127);
		execv(argv[0], argv);
		printf("exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	if (pid < 0 || !(*rfp = fdopen(pfd[0], "r"))) {
		perror(pid < 0 ? "fork" : "fdopen");
		close(pfd[0]);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return -1;
	}
	return pid;
}

/*
 * The event system calls perf counts on the host.  The library's fstat()
 * (a change's checks on uring) is newfstatat with glibc 2.33 and later,
 * fstat and statx elsewhere: all three are counted.  A sleep that the
 * kernel re-executes after running task work (ppoll(), -ERESTARTNOHAND)
 * is counted twice here, as its two entries; the library's counters count
 * it so too (src/uring.c, ring_ppoll()).
 */
static const char perf_events[] =
	"syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,"
	"syscalls:sys_enter_epoll_pwait2,syscalls:sys_enter_epoll_ctl,"
	"syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_poll,syscalls:sys_enter_ppoll,"
	"syscalls:sys_enter_statx,syscalls:sys_enter_newfstat,syscalls:sys_enter_newfstatat";

/* perf stat on pid's threads into path; -1 where there is no perf (the guest) */
static pid_t perf_start(pid_t pid, const char *path)
{
	char pidbuf[16];
	char *argv[] = { (char *)"perf", (char *)"stat", (char *)"-x,", (char *)"-o", (char *)path,
			 (char *)"-e", (char *)perf_events, (char *)"-p", pidbuf, NULL };
	pid_t pp;

	if (strcmp(env_label, "host"))
		return -1;
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	pp = fork();
	if (pp == 0) {
		int nul = open("/dev/null", O_WRONLY);

		if (nul >= 0)
			dup2(nul, 2);
		execvp("perf", argv);
		_exit(127);
	}
	usleep(300000);	/* attached before the load starts */
	return pp;
}

/* the sum of the counts perf wrote; -1 if it wrote none */
static double perf_stop(pid_t pp, const char *path)
{
	char line[512];
	double sum = -1;
	FILE *f;

	if (pp <= 0)
		return -1;
	kill(pp, SIGINT);
	waitpid(pp, NULL, 0);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *end;
		double v = strtod(line, &end);

		if (end != line && *end == ',' && strstr(line, "syscalls:"))
			sum = (sum < 0 ? 0 : sum) + v;
	}
	if (f)
		fclose(f);
	unlink(path);
	return sum;
}

/*
 * What a libevent server's lines say of its backend, against be: its
 * method line (stock-epoll: libevent's epoll, else uepoll; the last one
 * counts) and, but for stock-epoll, the library's backend line.
 */
struct le_seen {
	char want[64];
	int stock, method, lib;
};

static void le_seen_init(struct le_seen *w, const char *be)
{
	w->stock = !strcmp(be, "stock-epoll");
	w->method = 0;
	w->lib = w->stock;
	snprintf(w->want, sizeof(w->want), "uepoll backend: %s", be);
}

static void le_seen_line(struct le_seen *w, const char *line)
{
	if (strstr(line, "libevent using: "))
		w->method = !!strstr(line, w->stock ? "using: epoll" : "using: uepoll");
	if (strstr(line, w->want))
		w->lib = 1;
}

/* 0 if the lines showed backend be, else -1 (said on stderr) */
static int le_seen_check(const struct le_seen *w, const char *be)
{
	if (w->method && w->lib)
		return 0;
	fprintf(stderr, "%s: the server did not run libevent's %s backend%s%s\n", tool_prog,
		w->stock ? "epoll" : "uepoll", w->stock ? "" : " on the library's ",
		w->stock ? "" : be);
	return -1;
}

/*
 * The server's first lines until `ready` appears: 0, or -1 (it ended, or
 * its libevent did not pick the backend asked for).
 */
static int le_ready(FILE *sf, const char *be, const char *ready)
{
	struct le_seen w;
	char line[512];

	le_seen_init(&w, be);
	while (fgets(line, sizeof(line), sf)) {
		le_seen_line(&w, line);
		if (strstr(line, ready))
			break;
	}
	return le_seen_check(&w, be);
}

/*
 * SIGTERM the server and read all it wrote: the UEPOLL_STATS system calls
 * summed over its instances (-1: none, and always for stock-epoll), in
 * *nstats (if not NULL) how many instances reported them, its CPU time in
 * *cpu_us and its sleeps in *sleeps (if not NULL; wait_cpu_us(): -1 if
 * that failed).  check: the output is
 * tested as le_ready() tests its start (memcached's libevent prints the
 * method of every base it makes, its workers' too): -2 if it shows
 * another backend; without check, a server that did not exit with 0 is
 * reported and its CPU time is -1.
 */
static double le_stop(pid_t spid, FILE *sf, const char *be, int check, int *nstats, double *cpu_us,
		      double *sleeps)
{
	struct le_seen w;
	char line[512];
	int n = 0, st = 0;
	double sys = -1;

	le_seen_init(&w, be);
	kill(spid, SIGTERM);
	while (fgets(line, sizeof(line), sf)) {
		le_seen_line(&w, line);
		if (!strncmp(line, "uepoll-stats: ", 14)) {
			sys = (sys < 0 ? 0 : sys) + kv(line + 14, "syscalls");
			n++;
			/* the instance's counters, for the profile of a run (doc/BENCH.md) */
			fprintf(stderr, "#   server: %s", line);
		}
	}
	fclose(sf);
	if (nstats)
		*nstats = n;
	*cpu_us = wait_cpu_us(spid, &st, sleeps);
	if (check && le_seen_check(&w, be) < 0)
		return -2;
	if (!check && (*cpu_us < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
		fprintf(stderr, "%s: server (%s) ended with status 0x%x\n", tool_prog, be, st);
		*cpu_us = -1;
	}
	return w.stock ? -1 : sys;
}

/* 1 if something listens on the loopback's port (a connect succeeds) */
static int port_listening(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * Wait (up to 5 s) until nothing listens on port: a server on the uring
 * backend keeps its listening socket alive for a while after it exited
 * (its polls hold the file until the kernel's teardown of the ring ends),
 * and the next server's bind would fail with EADDRINUSE.
 */
static void port_free_wait(int port)
{
	for (int i = 0; i < 100 && port_listening(port); i++)
		usleep(50000);
}

static long bh_requests = 20000;

/* libevent's bench_httpclient: 200 connections, 20,000 HTTP/1.0 requests to :8080 */
static int bh_client(const char *dir, double *rps, double *lat, double *errors, double *cpu_us)
{
	static char cli[PATH_MAX + 32];
	char *argv[] = { cli, NULL }, line[512];
	double n = 0, secs = 0;
	FILE *cf;
	pid_t pid;
	int st;

	snprintf(cli, sizeof(cli), "%s/bench_httpclient", dir);
	pid = spawn_le(argv, "stock-epoll", ROLE_CLIENT, NULL, &cf);
	if (pid < 0)
		return -1;
	*errors = 0;
	while (fgets(line, sizeof(line), cf)) {
		if (strstr(line, " requests in ") && strstr(line, " sec. ("))
			sscanf(line, "%lf requests in %lf sec. (%lf", &n, &secs, rps);
		sscanf(line, "Each took about %lf msec", lat);
		if (strstr(line, "Unexpected error") || strstr(line, "Can't launch"))
			(*errors)++;
	}
	fclose(cf);
	*cpu_us = wait_cpu_us(pid, &st, NULL);
	if (*cpu_us < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "%s: bench_httpclient: status 0x%x\n", tool_prog, st);
	*errors += bh_requests - n;
	return n > 0 ? 0 : -1;
}

/* bench_http (the server, backend be) and bench_httpclient */
static int run_bench_http(const char *be, int p, double *out)
{
	static char srv[PATH_MAX + 32];
	char *argv[] = { srv, (char *)"-p", (char *)"8080", NULL };
	char perf_out[] = "/tmp/uepoll-bench-perf-XXXXXX";
	const char *dir = libevent_dir();
	double sys, psys, cpu, sleeps, ccpu = -1;
	FILE *sf;
	pid_t spid, pp;
	int r, tfd;

	(void)p;
	if (!dir)
		return -1;
	snprintf(srv, sizeof(srv), "%s/bench_http", dir);
	port_free_wait(8080);
	spid = spawn_le(argv, be, ROLE_SERVER, NULL, &sf);
	if (spid < 0)
		return -1;
	if (le_ready(sf, be, "Serving ") < 0) {
		kill(spid, SIGKILL);
		le_stop(spid, sf, be, 0, NULL, &cpu, NULL);
		return -1;
	}
	tfd = mkstemp(perf_out);
	if (tfd >= 0)
		close(tfd);
	pp = perf_start(spid, perf_out);
	r = bh_client(dir, &out[0], &out[1], &out[2], &ccpu);
	psys = perf_stop(pp, perf_out);
	sys = le_stop(spid, sf, be, 0, NULL, &cpu, &sleeps);
	if (tfd >= 0)
		unlink(perf_out);
	if (psys >= 0)
		sys = psys;
	out[3] = sys >= 0 && r == 0 ? sys / (double)bh_requests : -1;
	out[4] = cpu >= 0 && r == 0 ? cpu / (double)bh_requests : -1;
	out[5] = sleeps >= 0 && r == 0 ? sleeps / (double)bh_requests : -1;
	out[6] = ccpu >= 0 && r == 0 ? ccpu / (double)bh_requests : -1;
	return r;
}

static int bh_option(int opt, const char *arg)
{
	(void)arg;
	if (opt == 'D') {
		le_defer = 1;
		return 0;
	}
	return -1;
}

static void bh_setup(struct bench *bn)
{
	bn->np = 1;
	snprintf(bn->params[0], sizeof(bn->params[0]), "conns=200;requests=%ld%s", bh_requests,
		 le_defer ? ";defer" : "");
}

static const struct metric bh_metrics[] = {
	{ "req_per_s", "req/s", HIGHER, 1, "ratio", 1 },
	{ "lat_ms", "ms", LOWER, 1, "ratio", 2 },
	{ "errors", "errors", LOWER, 1, NULL, 0 },
	{ "event_syscalls_per_req", "syscalls/request", LOWER, 1, NULL, 0 },
	{ "server_cpu_us_per_req", "us", LOWER, 1, NULL, 0 },
	{ "server_sleeps_per_req", "sleeps/request", NEITHER, 1, NULL, 0 },
	{ "client_cpu_us_per_req", "us", NEITHER, 1, NULL, 0 },
	{ NULL }
};

/* memcached (Debian's, threads T) driven by memcaslap for mc_seconds */
static long mc_threads = 4, mc_conc = 64;
static double mc_seconds = 5;

static int mc_wait_port(int port)
{
	for (int i = 0; i < 100; i++) {
		if (port_listening(port))
			return 0;
		usleep(50000);
	}
	return -1;
}

/* memcaslap's result: ops/s (TPS) and the errors it reports */
static int mc_memcaslap(int port, double *ops, double *errors)
{
	char srv[32], thr[16], conc[16], secs[24], line[512];
	char *argv[] = { (char *)"/usr/bin/memcaslap", (char *)"-s", srv, (char *)"-T", thr,
			 (char *)"-c", conc, (char *)"-t", secs, NULL };
	FILE *cf;
	pid_t pid;
	int st;

	snprintf(srv, sizeof(srv), "127.0.0.1:%d", port);
	snprintf(thr, sizeof(thr), "2");
	snprintf(conc, sizeof(conc), "%ld", mc_conc);
	snprintf(secs, sizeof(secs), "%gs", mc_seconds);
	pid = spawn_le(argv, "stock-epoll", ROLE_CLIENT, NULL, &cf);
	if (pid < 0)
		return -1;
	*ops = -1;
	*errors = 0;
	while (fgets(line, sizeof(line), cf)) {
		const char *t = strstr(line, "TPS: ");

		if (!strncmp(line, "Run time: ", 10) && t)
			*ops = strtod(t + 5, NULL);
		if (strstr(line, "error") || strstr(line, "failed"))
			(*errors)++;
	}
	fclose(cf);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "%s: memcaslap: status 0x%x\n", tool_prog, st);
	return *ops > 0 ? 0 : -1;
}

/*
 * The built-in load (the guest has no memcaslap): mc_conc connections on
 * plain epoll, each with one request in flight, memcaslap's mix (9 gets
 * to 1 set, keys of a 10,000-key space, 100-byte values), for
 * mc_seconds.  A reply other than VALUE...END/END for a get or STORED
 * for a set, or a connection that fails, is an error.
 */
#define ML_KEYS		10000
#define ML_VLEN		100
struct ml_conn {
	int fd, set, len;
	char buf[512];
};

static void ml_send(struct ml_conn *c, unsigned *seed)
{
	char req[256];
	int key = (int)(rand_r(seed) % ML_KEYS), n;

	c->set = rand_r(seed) % 10 == 0;
	c->len = 0;
	if (c->set) {
		n = snprintf(req, sizeof(req), "set key:%05d 0 0 %d\r\n", key, ML_VLEN);
		memset(req + n, 'x', ML_VLEN);
		memcpy(req + n + ML_VLEN, "\r\n", 2);
		n += ML_VLEN + 2;
	} else {
		n = snprintf(req, sizeof(req), "get key:%05d\r\n", key);
	}
	if (write(c->fd, req, (size_t)n) != n)
		c->fd = -c->fd - 2;	/* failed: closed below */
}

/* 1 a whole reply, 0 more to read, -1 a wrong one */
static int ml_reply(const struct ml_conn *c)
{
	const char *end = c->set ? "\r\n" : "END\r\n";
	size_t el = strlen(end);

	if (c->len < (int)el || memcmp(c->buf + c->len - el, end, el))
		return c->len >= (int)sizeof(c->buf) - 1 ? -1 : 0;
	if (c->set)
		return !strncmp(c->buf, "STORED\r\n", 8) ? 1 : -1;
	return !strncmp(c->buf, "END\r\n", 5) || !strncmp(c->buf, "VALUE ", 6) ? 1 : -1;
}

static void ml_loop(int port, int ep, struct ml_conn *cs, long n, double *ops, double *err)
{
	struct epoll_event evs[64];
	unsigned seed = (unsigned)getpid();
	int64_t t_end = now_ns() + (int64_t)(mc_seconds * 1e9);

	for (long i = 0; i < n; i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)i };

		cs[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (cs[i].fd < 0 || connect(cs[i].fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev) < 0) {
			(*err)++;
			continue;
		}
		ml_send(&cs[i], &seed);
	}
	while (now_ns() < t_end) {
		int k = epoll_wait(ep, evs, 64, 100);

		for (int j = 0; j < k; j++) {
			struct ml_conn *c = &cs[evs[j].data.u64];
			ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - (size_t)c->len);
			int done = r > 0 ? (c->len += (int)r, ml_reply(c)) : -1;

			if (done == 1) {
				(*ops)++;
				ml_send(c, &seed);
			}
			if (done < 0 || c->fd < -1) {
				(*err)++;
				close(c->fd < -1 ? -c->fd - 2 : c->fd);
				c->fd = -1;
			}
		}
	}
}

/* the built-in load, in a child process as memcaslap would be */
static int mc_builtin(int port, double *ops, double *errors)
{
	double res[2] = { 0, 0 };
	int pfd[2], st;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		struct ml_conn *cs = calloc((size_t)mc_conc, sizeof(*cs));
		int ep = epoll_create1(EPOLL_CLOEXEC);

		pin_child(ROLE_CLIENT);
		if (cs && ep >= 0)
			ml_loop(port, ep, cs, mc_conc, &res[0], &res[1]);
		else
			res[1] = 1;
		_exit(write(pfd[1], res, sizeof(res)) == sizeof(res) ? 0 : 1);
	}
	close(pfd[1]);
	if (pid < 0 || read(pfd[0], res, sizeof(res)) != sizeof(res))
		res[0] = -1;
	close(pfd[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	*ops = res[0] > 0 ? res[0] / mc_seconds : -1;
	*errors = res[1];
	return *ops > 0 ? 0 : -1;
}

/* memcaslap where the machine has it and UEPOLL_BENCH_MEMLOAD is not "builtin" */
static int mc_client(int port, double *ops, double *errors)
{
	const char *e = getenv("UEPOLL_BENCH_MEMLOAD");

	if ((!e || strcmp(e, "builtin")) && access("/usr/bin/memcaslap", X_OK) == 0)
		return mc_memcaslap(port, ops, errors);
	return mc_builtin(port, ops, errors);
}

/*
 * The server: $UEPOLL_BENCH_MEMCACHED (a static memcached built with the
 * static libevent of make libevent: the guest's, run as nobody), else
 * Debian's /usr/bin/memcached with the shared one (LD_LIBRARY_PATH).
 */
static int run_memcached(const char *be, int p, double *out)
{
	static char libdir[PATH_MAX];
	const char *mc = getenv("UEPOLL_BENCH_MEMCACHED");
	char port_s[16], thr[16], perf_out[] = "/tmp/uepoll-bench-perf-XXXXXX";
	char *argv[] = { (char *)"/usr/bin/memcached", (char *)"-l", (char *)"127.0.0.1", (char *)"-p",
			 port_s, (char *)"-U", (char *)"0", (char *)"-t", thr, (char *)"-m",
			 (char *)"64", (char *)"-u", (char *)"root", NULL };
	const char *dir = libevent_dir();
	int port = 20000 + (int)(getpid() % 20000), r = -1, tfd, nstats;
	double psys, sys, cpu, sleeps = -1, ops = 0;
	FILE *sf;
	pid_t spid, pp;

	(void)p;
	if (!dir)
		return -1;
	snprintf(libdir, sizeof(libdir), "%s/../lib", dir);
	snprintf(port_s, sizeof(port_s), "%d", port);
	snprintf(thr, sizeof(thr), "%ld", mc_threads);
	port_free_wait(port);
	le_drop_root = mc && *mc;
	if (le_drop_root) {
		argv[0] = (char *)mc;
		argv[11] = NULL;	/* no -u: not root */
	}
	spid = spawn_le(argv, be, ROLE_SERVER, le_drop_root ? NULL : libdir, &sf);
	le_drop_root = 0;
	if (spid < 0)
		return -1;
	if (mc_wait_port(port) == 0) {
		tfd = mkstemp(perf_out);
		if (tfd >= 0)
			close(tfd);
		pp = perf_start(spid, perf_out);
		r = mc_client(port, &ops, &out[1]);
		psys = perf_stop(pp, perf_out);
		out[0] = ops;
		out[2] = psys >= 0 && ops > 0 ? psys / (ops * mc_seconds) : -1;
	}
	/* its backend: libevent prints the method for every base it makes */
	sys = le_stop(spid, sf, be, 1, &nstats, &cpu, &sleeps);
	if (sys == -2)
		r = -1;
	else if (out[2] < 0 && sys >= 0 && ops > 0 && nstats > mc_threads)
		out[2] = sys / (ops * mc_seconds);	/* every base's (workers and main) */
	/* the server's whole life: its start and end are small next to
	 * mc_seconds of load */
	out[3] = cpu >= 0 && ops > 0 ? cpu / (ops * mc_seconds) : -1;
	out[4] = sleeps >= 0 && ops > 0 ? sleeps / (ops * mc_seconds) : -1;
	return r;
}

static int mc_option(int opt, const char *arg)
{
	switch (opt) {
	case 't': mc_threads = tool_parse_long(arg, 1, 64); return 0;
	case 'c': mc_conc = tool_parse_long(arg, 1, 4096); return 0;
	case 'd': mc_seconds = tool_parse_double(arg, 0.5, 600); return 0;
	case 'D': le_defer = 1; return 0;
	}
	return -1;
}

static void mc_setup(struct bench *bn)
{
	bn->np = 1;
	snprintf(bn->params[0], sizeof(bn->params[0]), "threads=%ld;conc=%ld;seconds=%g%s",
		 mc_threads, mc_conc, mc_seconds, le_defer ? ";defer" : "");
}

static const struct metric mc_metrics[] = {
	{ "ops_per_s", "ops/s", HIGHER, 1, "ratio", 1 },
	{ "errors", "errors", LOWER, 1, NULL, 0 },
	{ "event_syscalls_per_op", "syscalls/op", LOWER, 1, NULL, 0 },
	{ "server_cpu_us_per_op", "us", LOWER, 1, NULL, 0 },
	{ "server_sleeps_per_op", "sleeps/op", NEITHER, 1, NULL, 0 },
	{ NULL }
};

/* ---- the scenario table ------------------------------------------------------------ */

/*
 * A new scenario: its section above (options, setup, run, metrics) and an
 * entry here; scripts/bench and scripts/bench-report read it through
 * --describe.  The parameter sets: T producers; spin sweep 0 64 256 1024
 * 4096 (lat, idle) picks the default spin budget; sparse 100/1000/10000
 * registered, 1% active; tcp: bench_http's 200 connections x 20,000
 * requests.  The guest's counts are scaled down (TCG), each set with the
 * timeout vm/check gives it.
 */
static const struct scenario scenarios[] = {
	{
		.name = "sat", .opts = "t:d:", .usage = "[-t T,T,...] [-d seconds]",
		.title = "1. saturation: T producer threads, one consumer",
		.chart_title = "1. saturation: T producers, one consumer",
		.option = sat_option, .setup = sat_setup, .run = run_sat, .metrics = sat_metrics,
		.summary_params = "^T=(1|8|64)$",
		.note = "events_per_s = eventfd increments delivered per second (the producers write 1 "
			"each); syscalls_per_1000ev = the consumer's library system calls per 1000 harvested "
			"events.  The CPU split (what the backend changes, the producers being the "
			"bottleneck): consumer_cpu_ns_per_event / _per_increment = the consumer thread's CPU "
			"per harvested event / per delivered increment; consumer_cpu_share, producer_cpu_share "
			"= CPU time / wall time in CPUs (the T producers summed); "
			"producer_cpu_ns_per_increment = the cost of one write(2).",
		.host = { { "-R 5 -t 1,2,8,64 -d 1" } },
		.host_quick = { { "-R 2 -t 1,8,64 -d 0.3" } },
		.guest = { { "-R 3 -t 1,2,8,64 -d 1", 900 } },
		.guest_quick = { { "-R 2 -t 1,8,64 -d 0.5", 300 } },
	}, {
		.name = "lat", .opts = "n:m:S:", .usage = "[-n rounds] [-m sleep|busy] [-S spin,spin,...]",
		.title = "2. wake latency: one event bounced between two threads (round trip)",
		.chart_title = "2. wake latency (round trip), by spin budget",
		.option = lat_option, .setup = lat_setup, .run = run_lat, .metrics = lat_metrics,
		.summary_params = "spin=(0|256|1024|default)$|busy",
		.note = "round trip between two threads; mode=sleep: uepoll_wait, spin = the spin "
			"budget (a number: exactly that many checks; default: the library's, 256 "
			"checks and the adaptive window, uepoll_set_spin_adapt(3)); mode=busy: "
			"uepoll_harvest in a loop.",
		.host = { { "-R 5 -n 20000 -S -1,0,64,256,1024,4096" }, { "-R 5 -n 20000 -m busy" } },
		.host_quick = { { "-R 2 -n 3000 -S -1,0,256,4096" }, { "-R 2 -n 3000 -m busy" } },
		.guest = { { "-R 3 -n 5000 -S -1,0,64,256,1024,4096", 1200 }, { "-R 3 -n 5000 -m busy", 600 } },
		.guest_quick = { { "-R 2 -n 500 -S -1,0,256,4096", 300 }, { "-R 2 -n 500 -m busy", 300 } },
	}, {
		.name = "sparse", .opts = "N:r:", .usage = "[-N registered,registered,...] [-r rounds]",
		.title = "3. sparse: 1% of the registered sockets active",
		.chart_title = "3. sparse: 1% active, by registered count",
		.option = sparse_option, .setup = sparse_setup, .run = run_sparse, .metrics = sparse_metrics,
		.hide = "one-end,both-ends",
		.note = "harvest_ns_per_event = time in uepoll_wait per harvested event, 1% of the "
			"registered sockets written each round.",
		.host = { { "-R 5 -N 100,1000,10000 -r 2000" } },
		.host_quick = { { "-R 2 -N 100,10000 -r 300" } },
		.guest = { { "-R 3 -N 100,1000,10000 -r 200", 1200 } },
		.guest_quick = { { "-R 2 -N 100,10000 -r 50", 600 } },
	}, {
		.name = "tcp", .warmup = 1, .opts = "c:n:m:", .usage = "[-c connections] [-n requests] [-m et,lt,et-batch,lt-batch,et-defer,lt-defer]",
		.title = "4. TCP: single-threaded HTTP/1.0 server, 200 connections",
		.chart_title = "4. TCP: HTTP/1.0 server, 200 connections",
		.option = tcp_option, .setup = tcp_setup, .run = run_tcp, .metrics = tcp_metrics,
		.baselines = "epoll-lt",
		.note = "req_per_s and lat_p99_ms from the load client (a separate process); the "
			"server's wait and ctl system calls per 1000 requests; event_syscalls_per_req = "
			"the server's wait + ctl + level-triggered re-check system calls per request "
			"(epoll-lt: epoll_wait + epoll_ctl).  mode: et = edge-triggered, read until "
			"EAGAIN, one uepoll_ctl per ADD and DEL; lt = level-triggered, one read per "
			"event; -batch = the ADDs and DELs of a pass in one uepoll_ctl_wait; -defer = "
			"the same deferred (uepoll_ctl_defer) with lazy polls (uepoll_set_lazy_poll 4).  "
			"server_cpu_us_per_req = the server's CPU time (user + system, exec to exit: "
			"wait4()) per request; a spin before a sleep shows here.",
		.host = { { "-R 5 -c 200 -n 20000 -m et,lt,et-batch,lt-batch,et-defer,lt-defer" } },
		.host_quick = { { "-R 2 -c 200 -n 5000 -m et,lt-batch" } },
		.guest = { { "-R 3 -c 200 -n 20000 -m et,lt,et-batch,lt-batch,et-defer,lt-defer", 3600 } },
		.guest_quick = { { "-R 2 -c 200 -n 2000 -m et,lt-batch", 900 } },
	}, {
		.name = "idle", .opts = "f:d:S:m:",
		.usage = "[-f events_per_s] [-d seconds] [-S spin,spin,...] [-m et|lt|lt-drained]",
		.title = "5. idle / slow load: few events per second",
		.chart_title = "5. idle: few events per second, by spin budget",
		.option = idle_option, .setup = idle_setup, .run = run_idle, .metrics = idle_metrics,
		.summary_params = "spin=(0|256|1024|4096|default)(;|$)", .summary_hide = "cpu=soak",
		.note = "rate = events per second; cpu_us_per_event = the consumer's CPU per event "
			"(params cpu=soak in results.csv: measured by a SCHED_IDLE soaker, coarse guest "
			"clock); wake = from the write to the harvest; spin as in lat; mode = the "
			"eventfd's registration: edge-triggered (absent), lt level-triggered (the "
			"library asks again), lt-drained level-triggered with uepoll_drained() after "
			"each read.",
		.host = { { "-R 3 -f 100 -d 3 -S -1,0,64,256,1024,4096" }, { "-R 3 -f 100 -d 3 -m lt" },
			  { "-R 3 -f 100 -d 3 -m lt-drained" } },
		.host_quick = { { "-R 2 -f 100 -d 0.5 -S -1,0,256,4096" } },
		.guest = { { "-R 3 -f 100 -d 3 -S -1,0,64,256,1024,4096", 900 }, { "-R 3 -f 100 -d 3 -m lt", 300 },
			   { "-R 3 -f 100 -d 3 -m lt-drained", 300 } },
		.guest_quick = { { "-R 2 -f 100 -d 0.5 -S -1,0,256,4096", 300 } },
	}, {
		.name = "bench_http", .warmup = 1, .opts = "D",
		.usage = "[-D] (UEPOLL_BENCH_LIBEVENT=libevent's bin/)",
		.title = "6. libevent bench_http: its server, 200 connections x 20,000 HTTP/1.0 requests",
		.chart_title = "6. libevent bench_http (ratio to stock libevent epoll)",
		.option = bh_option, .setup = bh_setup, .run = run_bench_http, .metrics = bh_metrics,
		.baselines = "stock-epoll", .ratio_base = "stock-epoll",
		.note = "libevent's test/bench_http server on port 8080 (backend: stock-epoll = "
			"libevent's epoll backend, EVENT_NOUEPOLL; native/uring/epoll = the uepoll "
			"backend on that library backend) and its bench_httpclient (always stock epoll); "
			"ratio_vs_epoll is against stock-epoll.  req_per_s and lat_ms from the client; "
			"errors = failed or missing requests; event_syscalls_per_req = the server's "
			"epoll_wait/epoll_pwait/epoll_ctl/io_uring_enter/poll/ppoll/statx/fstat calls per "
			"request: perf's syscall tracepoints on the host, the library's counters "
			"(UEPOLL_STATS) in the guest, where stock-epoll has none.  "
			"server_cpu_us_per_req = the server's CPU time (user + system, all its "
			"threads, from exec to exit: wait4()) per request: what the server spends, "
			"where req_per_s also follows how the scheduler shares 2 CPUs between server "
			"and client.  server_sleeps_per_req = the server's voluntary context switches "
			"(wait4()'s ru_nvcsw) per request: how often it found nothing to do and "
			"blocked (all its threads: io_uring's workers too); client_cpu_us_per_req = "
			"the client's CPU time per request.  The client is the bottleneck: how the "
			"server's wake-ups batch its answers moves the client's cost per request, "
			"and req_per_s with it (doc/BENCH.md).  -D (config "
			"defer): the uepoll backend defers its changes and polls lazily "
			"(EVENT_UEPOLL_DEFER, libevent/README.md).  The host runs 11 repeats: a "
			"repeat takes about 2 s there, and its req/s scatters by 20 %.  The guest runs 9: "
			"a TCG stall can take a whole repeat, and the ratio's 90 % interval is then the "
			"2nd and the 8th ratio, past one such repeat at either end.",
		.host = { { "-R 11" }, { "-R 11 -D" } },
		.host_quick = { { "-R 2" } },
		.guest = { { "-R 9", 1800 }, { "-R 9 -D", 1800 } },
		.guest_quick = { { "-R 1", 900 } },
	}, {
		.name = "memcached", .warmup = 1, .opts = "t:c:d:D",
		.usage = "[-t server threads] [-c concurrency] [-d seconds] [-D] (UEPOLL_BENCH_LIBEVENT)",
		.title = "7. memcached (Debian's) on libevent",
		.chart_title = "7. memcached on libevent (ratio to stock libevent epoll)",
		.option = mc_option, .setup = mc_setup, .run = run_memcached, .metrics = mc_metrics,
		.baselines = "stock-epoll", .ratio_base = "stock-epoll",
		.note = "Host: Debian's memcached 1.6 with the libevent of make libevent "
			"(LD_LIBRARY_PATH; stock-epoll = its epoll backend) and memcaslap -T 2 -c CONC "
			"-t SECONDS (its default mix, 90% get / 10% set).  Guest: memcached built static "
			"from Debian's source with make libevent's static libevent (scripts/libevent "
			"memcached), run as nobody, and the built-in load (CONC connections on plain "
			"epoll, one request in flight each, 9 gets to 1 set, 10,000 keys, 100-byte "
			"values).  ratio_vs_epoll is against stock-epoll.  ops_per_s = operations per "
			"second; errors = failed operations or connections; event_syscalls_per_op = the "
			"server's event system calls per operation (perf on the host; UEPOLL_STATS in the "
			"guest: memcached 1.6.18 frees none of its workers' bases at SIGTERM, their "
			"instances write their lines at exit(); missing unless every base's came).  "
			"server_cpu_us_per_op = the server's CPU time (as bench_http's) per operation; "
			"server_sleeps_per_op = its voluntary context switches (as bench_http's) per "
			"operation.  "
			"-D (config defer): as bench_http's.  The host runs 9 repeats, the guest 9 "
			"(as bench_http's).",
		.host = { { "-R 9 -t 4 -c 64 -d 5" }, { "-R 9 -t 4 -c 64 -d 5 -D" } },
		.host_quick = { { "-R 2 -t 4 -c 64 -d 2" } },
		.guest = { { "-R 9 -t 4 -c 64 -d 5", 1200 }, { "-R 9 -t 4 -c 64 -d 5 -D", 1200 } },
		.guest_quick = { { "-R 1 -t 4 -c 64 -d 2", 300 } },
	},
};
#define NSCENARIOS (int)(sizeof(scenarios) / sizeof(scenarios[0]))

static void usage(void)
{
	fprintf(stderr, "usage: %s SCENARIO [-B backends] [-R repeats] [-E env] [-s spin] [options]\n",
		tool_prog);
	for (int i = 0; i < NSCENARIOS; i++)
		fprintf(stderr, "  %-7s %s\n", scenarios[i].name, scenarios[i].usage);
	fprintf(stderr,
		"       %s --describe\n"
		"  the scenario table, one tab-separated record per line, the kind first:\n"
		"    backend   NAME library|baseline WHERE DESCRIPTION\n"
		"    scenario  NAME TITLE CHART_TITLE BACKENDS SUMMARY_PARAMS HIDE SUMMARY_HIDE\n"
		"    metric    SCENARIO NAME UNIT BETTER SUMMARY CHART PANEL\n"
		"    set       SCENARIO host|guest full|quick TIMEOUT ARGS\n"
		"    note      SCENARIO TEXT\n"
		"  '-': empty.  backend: the library's in the automatic choice's order, then\n"
		"  the benchmark's own baselines; WHERE: host,guest or guest (where make bench\n"
		"  runs it).  scenario: BACKENDS: the -B list of the guest set; SUMMARY_PARAMS:\n"
		"  regex, the params in summary.md; HIDE: comma list of params words left out\n"
		"  of labels, SUMMARY_HIDE: of summary.md's rows only.  metric: in CSV order; BETTER: higher|lower|none (none: describes\n"
		"  the run, never judged); SUMMARY: 1 = a row of summary.md; CHART:\n"
		"  ratio|abs[-log]: a panel of the scenario's chart, the ratio to epoll or the\n"
		"  value, log scale; PANEL: its place (1 = top).  set: the parameter sets of\n"
		"  make bench, in the order it runs them; TIMEOUT: seconds, the guest's.\n",
		tool_prog);
	exit(2);
}

/* ---- --describe -------------------------------------------------------------------- */

static const char *dash(const char *s)
{
	return s && *s ? s : "-";
}

/* the -B list of a scenario: the library's backends, then its baselines */
static void backend_list(const struct scenario *sc, char *buf, size_t size)
{
	const char *b;
	size_t len = 0;

	buf[0] = 0;
	for (int i = 0; (b = tool_backend_name(i)); i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "", b);
	for (int i = 0; i < NBASELINES && len < size; i++)
		if (in_list(sc->baselines, baselines[i].name))
			len += (size_t)snprintf(buf + len, size - len, ",%s", baselines[i].name);
}

static void describe_sets(const struct scenario *sc, const char *env, const char *size,
			  const struct pset *set)
{
	for (int i = 0; i < MAXSET && set[i].args; i++) {
		printf("set\t%s\t%s\t%s\t", sc->name, env, size);
		if (set[i].timeout)
			printf("%d", set[i].timeout);
		else
			printf("-");
		printf("\t%s\n", set[i].args);
	}
}

static void describe_scenario(const struct scenario *sc)
{
	static const char *const better[] = { "lower", "higher", "none" };
	char bl[128];

	backend_list(sc, bl, sizeof(bl));
	printf("scenario\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sc->name, sc->title, sc->chart_title, bl,
	       dash(sc->summary_params), dash(sc->hide), dash(sc->summary_hide));
	for (const struct metric *m = sc->metrics; m->name; m++)
		printf("metric\t%s\t%s\t%s\t%s\t%d\t%s\t%d\n", sc->name, m->name, m->unit,
		       better[m->better], m->summary, dash(m->chart), m->panel);
	describe_sets(sc, "host", "full", sc->host);
	describe_sets(sc, "host", "quick", sc->host_quick);
	describe_sets(sc, "guest", "full", sc->guest);
	describe_sets(sc, "guest", "quick", sc->guest_quick);
	if (sc->note)
		printf("note\t%s\t%s\n", sc->name, sc->note);
}

static int describe(void)
{
	const char *b;
	unsigned flags;

	/* native needs the patched kernel: make bench has it in the guest only */
	for (int i = 0; (b = tool_backend_name(i)); i++) {
		int native = !tool_backend(b, &flags) && flags == UEPOLL_BACKEND_NATIVE;

		printf("backend\t%s\tlibrary\t%s\tthe library's %s backend\n", b,
		       native ? "guest" : "host,guest", b);
	}
	for (int i = 0; i < NBASELINES; i++)
		printf("backend\t%s\tbaseline\thost,guest\t%s\n", baselines[i].name, baselines[i].what);
	for (int i = 0; i < NSCENARIOS; i++)
		describe_scenario(&scenarios[i]);
	return fflush(stdout) ? 1 : 0;
}

/* ---- main ---------------------------------------------------------------------- */

/* -B: the requested backends that are available here */
static void pick_listed(struct bench *bn, const char *blist)
{
	static char buf[128];	/* bn->be[] points into it */
	char *save = NULL, *tok;
	unsigned flags;

	if (strlen(blist) >= sizeof(buf))
		usage();
	strcpy(buf, blist);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int base = in_list(bn->sc->baselines, tok);

		if ((!base && (tool_backend(tok, &flags) || flags == UEPOLL_BACKEND_AUTO)) || bn->nb == MAXB) {
			fprintf(stderr, "%s: bad backend '%s'\n", tool_prog, tok);
			usage();
		}
		if (!base && tool_backend_probe(flags) < 0) {
			fprintf(stderr, "%s: backend %s unavailable here, skipped\n", tool_prog, tok);
			continue;
		}
		bn->be[bn->nb++] = tok;
	}
}

/* no -B: every library backend available here, then the scenario's baselines */
static void pick_all(struct bench *bn)
{
	const char *b;
	unsigned flags;

	for (int i = 0; (b = tool_backend_name(i)) && bn->nb < MAXB; i++)
		if (!tool_backend(b, &flags) && !tool_backend_probe(flags))
			bn->be[bn->nb++] = b;
	for (int i = 0; i < NBASELINES && bn->nb < MAXB; i++)
		if (in_list(bn->sc->baselines, baselines[i].name))
			bn->be[bn->nb++] = baselines[i].name;
}

/* the common options and the scenario's own */
static void parse_args(struct bench *bn, int argc, char **argv, const char **blist)
{
	const struct scenario *sc = bn->sc;
	char opts[64];
	int opt;

	snprintf(opts, sizeof(opts), "B:R:E:s:%s", sc->opts);
	optind = 2;
	while ((opt = getopt(argc, argv, opts)) != -1) {
		switch (opt) {
		case 'B': *blist = optarg; break;
		case 'R': R = (int)tool_parse_long(optarg, 1, MAXR); break;
		case 'E': env_label = optarg; break;
		case 's': spin_opt = tool_parse_long(optarg, 0, UEPOLL_SPIN_MAX); break;
		default:
			if (opt == '?' || sc->option(opt, optarg) < 0)
				usage();
		}
	}
	if (optind != argc)
		usage();
}

int main(int argc, char **argv)
{
	static struct bench bn;
	const char *blist = NULL;

	tool_init(argv[0], usage);
	if (argc == 2 && !strcmp(argv[1], "--describe"))
		return describe();
	for (int i = 0; argc >= 2 && i < NSCENARIOS; i++)
		if (!strcmp(argv[1], scenarios[i].name))
			bn.sc = &scenarios[i];
	if (!bn.sc)
		usage();
	parse_args(&bn, argc, argv, &blist);
	pin_parse();
	for (bn.nm = 0; bn.sc->metrics[bn.nm].name; bn.nm++)
		;
	if (!env_label)
		env_label = access("/proc/sys/fs/epoll/userpoll", F_OK) == 0 ? "guest" : "host";
	setvbuf(stderr, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	find_tooldir();
	clock_setup();
	if (blist)
		pick_listed(&bn, blist);
	else
		pick_all(&bn);
	if (!bn.nb) {
		fprintf(stderr, "%s: no backend available\n", tool_prog);
		return 1;
	}
	bn.sc->setup(&bn);
	return drive(&bn);
}
