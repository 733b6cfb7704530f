// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * uepoll-bench - the benchmark scenarios of doc/BENCH.md.  Each scenario
 * runs every requested backend, interleaved A B A B ... for R repeats in
 * one process, and prints one CSV line per (backend, params, metric):
 *
 *   CSV,scenario,backend,params,metric,median,min,max,ratio_vs_epoll,env
 *
 * ratio_vs_epoll is the median over the repeats of value / epoll's value
 * in the same repeat (epoll measured right next to it); empty without an
 * epoll run.  Progress and per-run figures go to stderr.
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
 *       one producer writes RATE events per second; the consumer sleeps in
 *       uepoll_wait with spin budget S; consumer CPU time per event (us:
 *       CLOCK_THREAD_CPUTIME_ID, or where the clock is coarse a SCHED_IDLE
 *       soaker on the consumer's CPU, params ";cpu=soak"), wake-up latency
 *       p50/p99.
 *   uepoll-bench tcp    [common] [-c CONNS] [-n REQUESTS]
 *       runs tools uepoll-httpd (the server, one per backend, plus
 *       epoll-lt: plain level-triggered epoll, no library) and
 *       uepoll-httpload (the client, a separate process) from this
 *       program's directory; req/s, latency p50/p99 (ms), the server's
 *       system calls per request.
 *
 *   common: -B BACKENDS (comma list of native,uring,epoll[,epoll-lt];
 *           default: every available one; epoll-lt for tcp only)
 *           -R REPEATS (default 5)  -E ENV (label of the last CSV column;
 *           default guest where the kernel has EPOLL_USERPOLL, else host)
 *           -s SPIN (spin budget for sat/sparse/tcp; default: library's)
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uepoll.h>

#define MAXB	4	/* backends */
#define MAXP	8	/* parameter values per scenario */
#define MAXM	10	/* metrics per run */
#define MAXR	50	/* repeats */
#define MAXT	64	/* producer threads */

static const char *prog;
static int R = 5;
static const char *env_label;
static long spin_opt = -1;	/* -1: library default */

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

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
	int64_t t0 = mono_ns(), t;

	while ((t = mono_ns()) == t0)
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
	return mono_ns();
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

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n, sz);

	if (!p) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	return p;
}

/*
 * Pin the calling thread to the k-th CPU it may run on (wake latency and
 * idle put their two threads on two different CPUs: under TCG a thread
 * woken on a halted vCPU and one woken on the running vCPU differ by
 * 5x, which would otherwise depend on where the scheduler put them).
 * Silently nothing with fewer CPUs or where affinity is refused.
 */
static void pin_self(int k)
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

static void unpin_self(void)
{
	cpu_set_t all;

	CPU_ZERO(&all);
	for (int c = 0; c < CPU_SETSIZE; c++)
		CPU_SET(c, &all);
	pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: %s sat|lat|sparse|idle|tcp [-B backends] [-R repeats] [-E env] [-s spin]\n"
		"  sat:    [-t T,T,...] [-d seconds]\n"
		"  lat:    [-n rounds] [-m sleep|busy] [-S spin,spin,...]\n"
		"  sparse: [-N registered,registered,...] [-r rounds]\n"
		"  idle:   [-f events_per_s] [-d seconds] [-S spin,spin,...]\n"
		"  tcp:    [-c connections] [-n requests]\n", prog);
	exit(2);
}

static long parse_long(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: bad number '%s' (%ld..%ld)\n", prog, s, lo, hi);
		usage();
	}
	return v;
}

static double parse_double(const char *s, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "%s: bad number '%s'\n", prog, s);
		usage();
	}
	return v;
}

/* "a,b,c" -> longs; returns the count */
static int parse_list(const char *s, long *out, int max, long lo, long hi)
{
	char buf[256], *save = NULL, *tok;
	int n = 0;

	if (strlen(s) >= sizeof(buf))
		usage();
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max) {
			fprintf(stderr, "%s: at most %d values in '%s'\n", prog, max, s);
			usage();
		}
		out[n++] = parse_long(tok, lo, hi);
	}
	if (!n)
		usage();
	return n;
}

/* ---- backends ------------------------------------------------------------ */

static const char *const known_backends[] = { "native", "uring", "epoll", "epoll-lt" };

static unsigned backend_flag(const char *b)
{
	if (!strcmp(b, "native"))
		return UEPOLL_BACKEND_NATIVE;
	if (!strcmp(b, "uring"))
		return UEPOLL_BACKEND_URING;
	return UEPOLL_BACKEND_EPOLL;
}

static int backend_available(const char *b)
{
	struct uepoll u;
	int r;

	if (!strcmp(b, "epoll-lt"))
		return 1;
	r = uepoll_init(&u, 4, UEPOLL_CLOEXEC | backend_flag(b));
	if (r < 0)
		return 0;
	uepoll_exit(&u);
	return 1;
}

/* an instance of backend b with capacity n and the spin budget (-1: default) */
static int open_backend(struct uepoll *u, const char *b, unsigned n, long spin)
{
	int r = uepoll_init(u, n, UEPOLL_CLOEXEC | backend_flag(b));

	if (r < 0) {
		fprintf(stderr, "%s: uepoll_init(%s, %u): %s\n", prog, b, n, strerror(-r));
		return r;
	}
	if (spin >= 0) {
		r = uepoll_set_spin(u, (unsigned)spin);
		if (r < 0) {
			fprintf(stderr, "%s: uepoll_set_spin(%ld): %s\n", prog, spin, strerror(-r));
			uepoll_exit(u);
			return r;
		}
	}
	return 0;
}

static int add_fd(struct uepoll *u, int fd, uint64_t data)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = data };
	int r = uepoll_ctl(u, EPOLL_CTL_ADD, fd, &ev);

	if (r < 0)
		fprintf(stderr, "%s: uepoll_ctl(ADD, %d): %s\n", prog, fd, strerror(-r));
	return r;
}

/* ---- results ----------------------------------------------------------------
 * res[p][b][m][r]: parameter set p, backend b, metric m, repeat r. */

struct bench {
	const char *scenario;
	int nb;				/* backends */
	const char *be[MAXB];
	int np;				/* parameter sets */
	char params[MAXP][64];
	int nm;				/* metrics */
	const char *metric[MAXM];
	double res[MAXP][MAXB][MAXM][MAXR];
	int ok[MAXP][MAXB][MAXR];
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* nearest-rank percentile of a sorted array */
static double pct(const double *sorted, size_t n, double q)
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

static void print_results(struct bench *bn)
{
	int ep = -1;

	for (int b = 0; b < bn->nb; b++)
		if (!strcmp(bn->be[b], "epoll"))
			ep = b;
	for (int p = 0; p < bn->np; p++)
		for (int b = 0; b < bn->nb; b++)
			for (int m = 0; m < bn->nm; m++) {
				double v[MAXR], ratio[MAXR], lo, hi, med;
				int n = 0, nr = 0;

				for (int r = 0; r < R; r++) {
					if (!bn->ok[p][b][r])
						continue;
					v[n++] = bn->res[p][b][m][r];
					if (ep >= 0 && bn->ok[p][ep][r] && bn->res[p][ep][m][r] > 0)
						ratio[nr++] = bn->res[p][b][m][r] / bn->res[p][ep][m][r];
				}
				if (!n)
					continue;
				med = median(v, n);
				lo = v[0];
				hi = v[n - 1];
				printf("CSV,%s,%s,%s,%s,%.6g,%.6g,%.6g,", bn->scenario, bn->be[b],
				       bn->params[p], bn->metric[m], med, lo, hi);
				if (nr)
					printf("%.4f", median(ratio, nr));
				printf(",%s\n", env_label);
			}
	fflush(stdout);
}

typedef int (*run_fn)(const char *be, int p, double *out);

/* A B A B ...: repeat r runs every backend once, for each parameter set */
static int drive(struct bench *bn, run_fn fn)
{
	int fail = 0;

	for (int p = 0; p < bn->np; p++)
		for (int r = 0; r < R; r++)
			for (int bb = 0; bb < bn->nb; bb++) {
				/* alternate the order too: A B, B A, ... */
				int b = r % 2 ? bn->nb - 1 - bb : bb;
				double out[MAXM] = { 0 };

				if (fn(bn->be[b], p, out) < 0) {
					fprintf(stderr, "%s: %s %s %s repeat %d failed\n", prog,
						bn->scenario, bn->be[b], bn->params[p], r);
					fail = 1;
					continue;
				}
				bn->ok[p][b][r] = 1;
				for (int m = 0; m < bn->nm; m++)
					bn->res[p][b][m][r] = out[m];
				fprintf(stderr, "# %s %s %s r%d:", bn->scenario, bn->be[b], bn->params[p], r);
				for (int m = 0; m < bn->nm; m++)
					fprintf(stderr, " %s=%.4g", bn->metric[m], out[m]);
				fprintf(stderr, "\n");
			}
	print_results(bn);
	return fail;
}

/* ---- 1. saturation ----------------------------------------------------------- */

static long sat_T[MAXP];
static double sat_secs = 1.0;

struct sat {
	int efd[MAXT];
	int stop;
};

struct sat_arg {
	struct sat *s;
	int k;
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

static int run_sat(const char *be, int p, double *out)
{
	int T = (int)sat_T[p], ret = -1, nthr = 0;
	struct sat s = { .stop = 0 };
	struct sat_arg args[MAXT];
	pthread_t th[MAXT];
	clockid_t pclk[MAXT];
	int64_t c0, c1, pc0 = 0, pc1 = 0;
	struct uepoll u;
	struct uepoll_stats s0, s1;
	struct epoll_event evs[256];
	uint64_t sum = 0, nev = 0;
	int64_t t0, t1, end;

	for (int k = 0; k < T; k++)
		s.efd[k] = -1;
	if (open_backend(&u, be, (unsigned)T, spin_opt) < 0)
		return -1;
	for (int k = 0; k < T; k++) {
		s.efd[k] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (s.efd[k] < 0) {
			perror("eventfd");
			goto out;
		}
		if (add_fd(&u, s.efd[k], (uint64_t)k) < 0)
			goto out;
	}
	for (int k = 0; k < T; k++) {
		int e;

		args[k].s = &s;
		args[k].k = k;
		e = pthread_create(&th[k], NULL, sat_producer, &args[k]);
		if (e) {
			fprintf(stderr, "pthread_create: %s\n", strerror(e));
			goto stop;
		}
		nthr++;
		pthread_setname_np(th[k], "sat-producer");
		if (pthread_getcpuclockid(th[k], &pclk[k])) {
			fprintf(stderr, "pthread_getcpuclockid failed\n");
			goto stop;
		}
	}
	prctl(PR_SET_NAME, "sat-consumer", 0, 0, 0);
	uepoll_get_stats(&u, &s0);
	for (int k = 0; k < T; k++)
		pc0 += clock_ns(pclk[k]);
	c0 = thread_cpu_ns();
	t0 = now_ns();
	end = t0 + (int64_t)(sat_secs * 1e9);
	for (;;) {
		int n = uepoll_wait(&u, evs, 256, 100);

		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "uepoll_wait: %s\n", strerror(-n));
			goto stop;
		}
		for (int i = 0; i < n; i++) {
			uint64_t v;

			if (read(s.efd[evs[i].data.u64], &v, sizeof(v)) == sizeof(v))
				sum += v;
		}
		if (n > 0)
			nev += (uint64_t)n;
		t1 = now_ns();
		if (t1 >= end)
			break;
	}
	c1 = thread_cpu_ns();
	for (int k = 0; k < T; k++)
		pc1 += clock_ns(pclk[k]);
	uepoll_get_stats(&u, &s1);
	{
		double secs = (double)(t1 - t0) / 1e9, wall = (double)(t1 - t0);
		uint64_t sys = (s1.syscalls - s1.ctl_syscalls) - (s0.syscalls - s0.ctl_syscalls);
		double ccpu = (double)(c1 - c0), pcpu = (double)(pc1 - pc0);

		out[0] = (double)sum / secs;
		out[1] = (double)nev / secs;
		out[2] = nev ? 1000.0 * (double)sys / (double)nev : 0;
		out[3] = nev ? (double)sum / (double)nev : 0;
		out[4] = nev ? ccpu / (double)nev : 0;
		out[5] = sum ? ccpu / (double)sum : 0;
		out[6] = ccpu / wall;
		out[7] = pcpu / wall;
		out[8] = sum ? pcpu / (double)sum : 0;
	}
	ret = 0;
stop:
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	for (int k = 0; k < nthr; k++)
		pthread_join(th[k], NULL);
out:
	prctl(PR_SET_NAME, "uepoll-bench", 0, 0, 0);
	uepoll_exit(&u);
	for (int k = 0; k < T; k++)
		if (s.efd[k] >= 0)
			close(s.efd[k]);
	return ret;
}

/* ---- 2. wake latency ---------------------------------------------------------- */

static long lat_rounds = 20000;
static int lat_busy;
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

	pin_self(1);
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

static int run_lat(const char *be, int p, double *out)
{
	struct lat_side a, b;
	int ab = -1, ba = -1, stop = 0, ret = -1, e, have_a = 0, have_b = 0;
	long n = lat_rounds + LAT_WARMUP, i;
	double *rtt = xcalloc((size_t)n, sizeof(double));
	struct uepoll_stats s0, s1;
	int64_t c0 = 0, c1;
	uint64_t one = 1;
	pthread_t th;

	ab = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ba = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ab < 0 || ba < 0) {
		perror("eventfd");
		goto out;
	}
	a = (struct lat_side){ .rfd = ba, .wfd = ab, .spin = lat_spin[p], .stop = &stop };
	b = (struct lat_side){ .rfd = ab, .wfd = ba, .spin = lat_spin[p], .stop = &stop };
	if (open_backend(&a.u, be, 4, a.spin) < 0)
		goto out;
	have_a = 1;
	if (open_backend(&b.u, be, 4, b.spin) < 0)
		goto out;
	have_b = 1;
	if (add_fd(&a.u, ba, 0) < 0 || add_fd(&b.u, ab, 0) < 0)
		goto out;
	e = pthread_create(&th, NULL, lat_echo, &b);
	if (e) {
		fprintf(stderr, "pthread_create: %s\n", strerror(e));
		goto out;
	}
	pin_self(0);
	for (i = 0; i < n; i++) {
		int64_t t0;

		if (i == LAT_WARMUP) {
			uepoll_get_stats(&a.u, &s0);
			c0 = thread_cpu_ns();
		}
		t0 = now_ns();
		if (write(ab, &one, sizeof(one)) != sizeof(one)) {
			perror("lat: write");
			break;
		}
		if (lat_get(&a) < 0)
			break;
		rtt[i] = (double)(now_ns() - t0) / 1000.0;
		if (__atomic_load_n(&stop, __ATOMIC_RELAXED))
			break;
	}
	c1 = thread_cpu_ns();
	uepoll_get_stats(&a.u, &s1);
	if (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	if (write(ab, &one, sizeof(one)) != sizeof(one))
		perror("lat: write");
	pthread_join(th, NULL);
	unpin_self();
	if (i == n && stop == 1) {
		double *v = rtt + LAT_WARMUP;
		size_t m = (size_t)lat_rounds;

		qsort(v, m, sizeof(*v), cmp_double);
		out[0] = pct(v, m, 0.50);
		out[1] = pct(v, m, 0.99);
		out[2] = pct(v, m, 0.999);
		out[3] = 1000.0 * (double)((s1.syscalls - s1.ctl_syscalls) - (s0.syscalls - s0.ctl_syscalls)) /
			 (double)m;
		out[4] = (double)(c1 - c0) / 1000.0 / (double)m;
		ret = 0;
	}
out:
	if (have_a)
		uepoll_exit(&a.u);
	if (have_b)
		uepoll_exit(&b.u);
	if (ab >= 0)
		close(ab);
	if (ba >= 0)
		close(ba);
	free(rtt);
	return ret;
}

/* ---- 3. sparse ---------------------------------------------------------------- */

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

static int run_sparse(const char *be, int p, double *out)
{
	long N = sparse_N[p], active = N / 100 > 0 ? N / 100 : 1, made = 0;
	int both = sparse_both_ends(N);
	long pairs = both ? (N + 1) / 2 : N;
	int (*sv)[2] = xcalloc((size_t)pairs, sizeof(*sv));
	int *pick = xcalloc((size_t)N, sizeof(int));
	struct epoll_event *evs = xcalloc((size_t)active + 1, sizeof(*evs));
	struct uepoll u;
	struct uepoll_stats s0, s1;
	unsigned seed = 4242u + (unsigned)p;
	int64_t tharv = 0, tall0, tall;
	uint64_t nev = 0;
	int ret = -1, have_u = 0;
	char c = 'x';

	if (open_backend(&u, be, (unsigned)N, spin_opt) < 0)
		goto out;
	have_u = 1;
	for (made = 0; made < pairs; made++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv[made]) < 0) {
			perror("socketpair (RLIMIT_NOFILE?)");
			goto out;
		}
	}
	/* registration k: sv[k][0] (one end), or sv[k/2][k%2] (both ends) */
	for (long k = 0; k < N; k++)
		if (add_fd(&u, both ? sv[k / 2][k % 2] : sv[k][0], (uint64_t)k) < 0)
			goto out;
	for (long k = 0; k < N; k++)
		pick[k] = (int)k;
	uepoll_get_stats(&u, &s0);
	tall0 = now_ns();
	for (long r = 0; r < sparse_rounds; r++) {
		long got = 0;

		/* a fresh random 1% each round: partial Fisher-Yates */
		for (long k = 0; k < active; k++) {
			long j = k + (long)(rand_r(&seed) % (unsigned)(N - k));
			int t = pick[k];

			pick[k] = pick[j];
			pick[j] = t;
			int w = both ? sv[pick[k] / 2][1 - pick[k] % 2] : sv[pick[k]][1];

			if (write(w, &c, 1) != 1) {
				perror("sparse: write");
				goto out;
			}
		}
		while (got < active) {
			int64_t t0 = now_ns();
			int n = uepoll_wait(&u, evs, (int)active + 1, 1000);

			tharv += now_ns() - t0;
			if (n < 0 && n != -EINTR) {
				fprintf(stderr, "sparse: uepoll_wait: %s\n", strerror(-n));
				goto out;
			}
			if (n == 0) {
				fprintf(stderr, "sparse: %ld of %ld events after 1 s\n", got, active);
				goto out;
			}
			for (int i = 0; i < n; i++) {
				char b;

				uint64_t k = evs[i].data.u64;

				if (read(both ? sv[k / 2][k % 2] : sv[k][0], &b, 1) != 1) {
					perror("sparse: read");
					goto out;
				}
			}
			got += n > 0 ? n : 0;
		}
		nev += (uint64_t)got;
	}
	tall = now_ns() - tall0;
	uepoll_get_stats(&u, &s1);
	out[0] = (double)tharv / (double)nev;
	out[1] = (double)tall / (double)nev;
	out[2] = 1000.0 * (double)((s1.syscalls - s1.ctl_syscalls) - (s0.syscalls - s0.ctl_syscalls)) / (double)nev;
	ret = 0;
out:
	if (have_u)
		uepoll_exit(&u);
	for (long k = 0; k < made; k++) {
		close(sv[k][0]);
		close(sv[k][1]);
	}
	free(sv);
	free(pick);
	free(evs);
	return ret;
}

/* ---- 5. idle / slow load ----------------------------------------------------------- */

static double idle_rate = 200;
static double idle_secs = 1.0;
static long idle_spin[MAXP];

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

	pin_self(1);
	next = mono_ns();

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

	pin_self(0);
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

static int run_idle(const char *be, int p, double *out)
{
	struct soak k = { 0 };
	pthread_t sth;
	int soaking = 0;
	struct idle s = { .efd = -1 };
	size_t cap = (size_t)(idle_rate * idle_secs * 2) + 16, nl = 0;
	double *lat = xcalloc(cap, sizeof(double));
	struct uepoll u;
	struct uepoll_stats s0, s1;
	struct epoll_event evs[4];
	int64_t t0, end, c0, c1;
	uint64_t nev = 0;
	int ret = -1, have_u = 0, e;
	pthread_t th;

	s.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s.efd < 0) {
		perror("eventfd");
		goto out;
	}
	if (open_backend(&u, be, 4, idle_spin[p]) < 0)
		goto out;
	have_u = 1;
	if (add_fd(&u, s.efd, 0) < 0)
		goto out;
	e = pthread_create(&th, NULL, idle_producer, &s);
	if (e) {
		fprintf(stderr, "pthread_create: %s\n", strerror(e));
		goto out;
	}
	pin_self(0);
	if (use_tsc) {
		e = pthread_create(&sth, NULL, soaker, &k);
		if (e) {
			fprintf(stderr, "pthread_create: %s\n", strerror(e));
			__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
			pthread_join(th, NULL);
			unpin_self();
			goto out;
		}
		soaking = 1;
		usleep(20000);
		__atomic_store_n(&k.on, 1, __ATOMIC_RELAXED);
	}
	uepoll_get_stats(&u, &s0);
	c0 = thread_cpu_ns();
	t0 = now_ns();
	end = t0 + (int64_t)(idle_secs * 1e9);
	while (now_ns() < end) {
		int n = uepoll_wait(&u, evs, 4, 100);
		uint64_t v;

		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "idle: uepoll_wait: %s\n", strerror(-n));
			break;
		}
		if (n <= 0)
			continue;
		if (read(s.efd, &v, sizeof(v)) == sizeof(v) && nl < cap)
			lat[nl++] = (double)(now_ns() - __atomic_load_n(&s.sent, __ATOMIC_ACQUIRE)) / 1000.0;
		nev += (uint64_t)n;
	}
	c1 = thread_cpu_ns();
	uepoll_get_stats(&u, &s1);
	__atomic_store_n(&k.on, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	if (soaking) {
		__atomic_store_n(&k.stop, 1, __ATOMIC_RELAXED);
		pthread_join(sth, NULL);
	}
	unpin_self();
	if (nev && nl) {
		qsort(lat, nl, sizeof(*lat), cmp_double);
		out[0] = (soaking ? (double)k.gaps : (double)(c1 - c0)) / 1000.0 / (double)nev;
		out[1] = pct(lat, nl, 0.50);
		out[2] = pct(lat, nl, 0.99);
		out[3] = 1000.0 * (double)((s1.syscalls - s1.ctl_syscalls) - (s0.syscalls - s0.ctl_syscalls)) /
			 (double)nev;
		out[4] = (double)nev / ((double)(end - t0) / 1e9);
		ret = 0;
	} else {
		fprintf(stderr, "idle: no event\n");
	}
out:
	if (have_u)
		uepoll_exit(&u);
	if (s.efd >= 0)
		close(s.efd);
	free(lat);
	return ret;
}

/* ---- 4. TCP: drive uepoll-httpd and uepoll-httpload ----------------------------------- */

static long tcp_conns = 200, tcp_requests = 20000;
static char tooldir[PATH_MAX];

static void find_tooldir(void)
{
	char *slash;
	ssize_t n = readlink("/proc/self/exe", tooldir, sizeof(tooldir) - 1);

	if (n <= 0) {
		snprintf(tooldir, sizeof(tooldir), "%s", prog);
		n = (ssize_t)strlen(tooldir);
	}
	tooldir[n] = 0;
	slash = strrchr(tooldir, '/');
	if (slash)
		*slash = 0;
	else
		strcpy(tooldir, ".");
}

/* fork+exec argv with stdout to a pipe; *rfp: the pipe's read end */
static pid_t spawn(char *const argv[], FILE **rfp)
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

static int run_tcp(const char *be, int p, double *out)
{
	char srv[PATH_MAX + 32], cli[PATH_MAX + 32], line[512], portbuf[16], cbuf[16], nbuf[16], sbuf[24];
	char *sargv[8], *cargv[12], stats[512] = "", result[512] = "";
	FILE *sf = NULL, *cf = NULL;
	pid_t spid, cpid;
	int port = -1, st, ret = -1, na = 0;

	(void)p;
	snprintf(srv, sizeof(srv), "%s/uepoll-httpd", tooldir);
	snprintf(cli, sizeof(cli), "%s/uepoll-httpload", tooldir);
	sargv[na++] = srv;
	if (!strcmp(be, "epoll-lt")) {
		sargv[na++] = (char *)"--plain-epoll-lt";
	} else {
		sargv[na++] = (char *)"-b";
		sargv[na++] = (char *)be;
		if (spin_opt >= 0) {
			snprintf(sbuf, sizeof(sbuf), "%ld", spin_opt);
			sargv[na++] = (char *)"-s";
			sargv[na++] = sbuf;
		}
	}
	sargv[na++] = (char *)"-p";
	sargv[na++] = (char *)"0";
	sargv[na] = NULL;
	spid = spawn(sargv, &sf);
	if (spid < 0)
		return -1;
	while (fgets(line, sizeof(line), sf))
		if (sscanf(line, "PORT %d", &port) == 1)
			break;
	if (port <= 0) {
		fprintf(stderr, "tcp: %s gave no port\n", srv);
		kill(spid, SIGKILL);
		goto reap;
	}
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	snprintf(cbuf, sizeof(cbuf), "%ld", tcp_conns);
	snprintf(nbuf, sizeof(nbuf), "%ld", tcp_requests);
	na = 0;
	cargv[na++] = cli;
	cargv[na++] = (char *)"-p";
	cargv[na++] = portbuf;
	cargv[na++] = (char *)"-c";
	cargv[na++] = cbuf;
	cargv[na++] = (char *)"-n";
	cargv[na++] = nbuf;
	cargv[na] = NULL;
	cpid = spawn(cargv, &cf);
	if (cpid < 0) {
		kill(spid, SIGKILL);
		goto reap;
	}
	while (fgets(line, sizeof(line), cf))
		if (!strncmp(line, "RESULT ", 7))
			snprintf(result, sizeof(result), "%s", line);
	fclose(cf);
	if (waitpid(cpid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "tcp: client failed (status 0x%x)\n", st);
	kill(spid, SIGTERM);
	while (fgets(line, sizeof(line), sf))
		if (!strncmp(line, "STATS ", 6))
			snprintf(stats, sizeof(stats), "%s", line);
reap:
	fclose(sf);
	if (waitpid(spid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "tcp: server %s ended with status 0x%x\n", be, st);
	if (result[0] && stats[0] && kv(result, "errors") == 0) {
		double req = kv(stats, "requests");

		out[0] = kv(result, "req_per_s");
		out[1] = kv(result, "p50_ms");
		out[2] = kv(result, "p99_ms");
		out[3] = req > 0 ? 1000.0 * kv(stats, "wait_syscalls") / req : 0;
		out[4] = req > 0 ? 1000.0 * kv(stats, "ctl_syscalls") / req : 0;
		ret = 0;
	} else {
		fprintf(stderr, "tcp: %s: result '%s' stats '%s'\n", be, result, stats);
	}
	return ret;
}

/* ---- main ---------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static struct bench bn;
	const char *sc, *blist = NULL, *tlist = "1,2,8,64", *slist = NULL, *nlist = "100,1000,10000";
	run_fn fn;
	int opt, with_lt;

	prog = argv[0];
	if (argc < 2 || argv[1][0] == '-')
		usage();
	sc = argv[1];
	if (strcmp(sc, "sat") && strcmp(sc, "lat") && strcmp(sc, "sparse") && strcmp(sc, "idle") &&
	    strcmp(sc, "tcp"))
		usage();
	optind = 2;
	while ((opt = getopt(argc, argv, "B:R:E:s:t:d:n:m:S:N:r:f:c:")) != -1) {
		switch (opt) {
		case 'B': blist = optarg; break;
		case 'R': R = (int)parse_long(optarg, 1, MAXR); break;
		case 'E': env_label = optarg; break;
		case 's': spin_opt = parse_long(optarg, 0, UEPOLL_SPIN_MAX); break;
		case 't': tlist = optarg; break;
		case 'd': sat_secs = idle_secs = parse_double(optarg, 0.01, 3600); break;
		case 'n': lat_rounds = tcp_requests = parse_long(optarg, 1, 100000000); break;
		case 'm':
			if (!strcmp(optarg, "busy"))
				lat_busy = 1;
			else if (strcmp(optarg, "sleep"))
				usage();
			break;
		case 'S': slist = optarg; break;
		case 'N': nlist = optarg; break;
		case 'r': sparse_rounds = parse_long(optarg, 1, 100000000); break;
		case 'f': idle_rate = parse_double(optarg, 0.1, 100000); break;
		case 'c': tcp_conns = parse_long(optarg, 1, 10000); break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	if (!env_label)
		env_label = access("/proc/sys/fs/epoll/userpoll", F_OK) == 0 ? "guest" : "host";
	setvbuf(stderr, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	find_tooldir();
	clock_setup();

	bn.scenario = sc;
	with_lt = !strcmp(sc, "tcp");
	if (blist) {
		char buf[128], *save = NULL, *tok;

		if (strlen(blist) >= sizeof(buf))
			usage();
		strcpy(buf, blist);
		for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			int k, found = -1;

			for (k = 0; k < 4; k++)
				if (!strcmp(tok, known_backends[k]))
					found = k;
			if (found < 0 || (found == 3 && !with_lt) || bn.nb == MAXB) {
				fprintf(stderr, "%s: bad backend '%s'\n", prog, tok);
				usage();
			}
			if (!backend_available(tok)) {
				fprintf(stderr, "%s: backend %s unavailable here, skipped\n", prog, tok);
				continue;
			}
			bn.be[bn.nb++] = known_backends[found];
		}
	} else {
		for (int k = 0; k < (with_lt ? 4 : 3); k++)
			if (backend_available(known_backends[k]))
				bn.be[bn.nb++] = known_backends[k];
	}
	if (!bn.nb) {
		fprintf(stderr, "%s: no backend available\n", prog);
		return 1;
	}

	if (!strcmp(sc, "sat")) {
		bn.np = parse_list(tlist, sat_T, MAXP, 1, MAXT);
		for (int p = 0; p < bn.np; p++)
			snprintf(bn.params[p], sizeof(bn.params[p]), "T=%ld", sat_T[p]);
		bn.nm = 9;
		bn.metric[0] = "events_per_s";
		bn.metric[1] = "harvested_per_s";
		bn.metric[2] = "syscalls_per_1000ev";
		bn.metric[3] = "increments_per_event";
		bn.metric[4] = "consumer_cpu_ns_per_event";
		bn.metric[5] = "consumer_cpu_ns_per_increment";
		bn.metric[6] = "consumer_cpu_share";
		bn.metric[7] = "producer_cpu_share";
		bn.metric[8] = "producer_cpu_ns_per_increment";
		if (use_tsc)
			fprintf(stderr, "# sat: coarse clock: the CPU times are charged in whole ticks "
					"(read them over long runs only)\n");
		fn = run_sat;
	} else if (!strcmp(sc, "lat")) {
		bn.np = slist ? parse_list(slist, lat_spin, MAXP, 0, UEPOLL_SPIN_MAX) : 1;
		if (!slist)
			lat_spin[0] = spin_opt;
		for (int p = 0; p < bn.np; p++) {
			if (lat_busy)
				snprintf(bn.params[p], sizeof(bn.params[p]), "mode=busy");
			else if (lat_spin[p] < 0)
				snprintf(bn.params[p], sizeof(bn.params[p]), "mode=sleep;spin=default");
			else
				snprintf(bn.params[p], sizeof(bn.params[p]), "mode=sleep;spin=%ld", lat_spin[p]);
		}
		if (lat_busy)
			bn.np = 1;
		bn.nm = 5;
		bn.metric[0] = "rtt_p50_us";
		bn.metric[1] = "rtt_p99_us";
		bn.metric[2] = "rtt_p999_us";
		bn.metric[3] = "syscalls_per_1000ev";
		bn.metric[4] = "cpu_us_per_rtt";
		fn = run_lat;
	} else if (!strcmp(sc, "sparse")) {
		bn.np = parse_list(nlist, sparse_N, MAXP, 1, UEPOLL_MAX_ITEMS);
		for (int p = 0; p < bn.np; p++)
			snprintf(bn.params[p], sizeof(bn.params[p]), "registered=%ld;active=%ld;%s", sparse_N[p],
				 sparse_N[p] / 100 > 0 ? sparse_N[p] / 100 : 1,
				 sparse_both_ends(sparse_N[p]) ? "both-ends" : "one-end");
		bn.nm = 3;
		bn.metric[0] = "harvest_ns_per_event";
		bn.metric[1] = "round_ns_per_event";
		bn.metric[2] = "syscalls_per_1000ev";
		fn = run_sparse;
	} else if (!strcmp(sc, "idle")) {
		bn.np = slist ? parse_list(slist, idle_spin, MAXP, 0, UEPOLL_SPIN_MAX) : 1;
		if (!slist)
			idle_spin[0] = spin_opt;
		for (int p = 0; p < bn.np; p++) {
			if (idle_spin[p] < 0)
				snprintf(bn.params[p], sizeof(bn.params[p]), "rate=%g;spin=default%s", idle_rate,
					 use_tsc ? ";cpu=soak" : "");
			else
				snprintf(bn.params[p], sizeof(bn.params[p]), "rate=%g;spin=%ld%s", idle_rate, idle_spin[p],
					 use_tsc ? ";cpu=soak" : "");
		}
		bn.nm = 5;
		bn.metric[0] = "cpu_us_per_event";
		bn.metric[1] = "wake_p50_us";
		bn.metric[2] = "wake_p99_us";
		bn.metric[3] = "syscalls_per_1000ev";
		bn.metric[4] = "events_per_s";
		fn = run_idle;
	} else {
		bn.np = 1;
		snprintf(bn.params[0], sizeof(bn.params[0]), "conns=%ld;requests=%ld", tcp_conns, tcp_requests);
		bn.nm = 5;
		bn.metric[0] = "req_per_s";
		bn.metric[1] = "lat_p50_ms";
		bn.metric[2] = "lat_p99_ms";
		bn.metric[3] = "wait_syscalls_per_1000req";
		bn.metric[4] = "ctl_syscalls_per_1000req";
		fn = run_tcp;
	}
	return drive(&bn, fn);
}
