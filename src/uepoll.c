// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * uepoll.c - setup, argument checks and dispatch to the backends.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

/*
 * The backend registry: the only place that lists the backends.  Entry i
 * is backend value (i + 1) << UEPOLL_BACKEND_SHIFT (UEPOLL_BACKEND_* in
 * uepoll.h): the values are ABI, so a new backend is appended.
 */
extern const struct uepoll_ops __uepoll_native_ops __hidden;
extern const struct uepoll_ops __uepoll_uring_ops __hidden;
extern const struct uepoll_ops __uepoll_epoll_ops __hidden;

static const struct uepoll_ops *const registry[] = {
	&__uepoll_native_ops,
	&__uepoll_uring_ops,
	&__uepoll_epoll_ops,
};
#define NBACKENDS	((unsigned)(sizeof(registry) / sizeof(registry[0])))

/*
 * The automatic choice: the first of these whose probe succeeds.  The
 * last needs nothing (plain epoll) and is taken without a probe.  Every
 * registry entry appears once (uepoll_backend_list() returns this order).
 */
static const unsigned auto_order[] = {
	UEPOLL_BACKEND_NATIVE,
	UEPOLL_BACKEND_URING,
	UEPOLL_BACKEND_EPOLL,
};
_Static_assert(sizeof(auto_order) / sizeof(auto_order[0]) == NBACKENDS,
	       "every backend has its place in the automatic order");

_Static_assert(sizeof(struct uepoll) == 256, "struct uepoll is caller-allocated: its size is ABI");
_Static_assert(NBACKENDS <= UEPOLL_BACKEND_MASK >> UEPOLL_BACKEND_SHIFT,
	       "the backend field of the flags is too narrow");

/*
 * The ops of backend value b; NULL for auto, for a value no backend has
 * and for bits outside UEPOLL_BACKEND_MASK.
 */
static const struct uepoll_ops *ops_lookup(unsigned b)
{
	unsigned i = b >> UEPOLL_BACKEND_SHIFT;

	if (b & ~UEPOLL_BACKEND_MASK)
		return NULL;
	return i >= 1 && i <= NBACKENDS ? registry[i - 1] : NULL;
}

/* a live instance's ops: its backend was checked by init */
static const struct uepoll_ops *ops_of(int backend)
{
	return ops_lookup((unsigned)backend);
}

__thread int __uepoll_in_ctl;

/*
 * The automatic choice, probed once per process: the first of auto_order
 * whose probe succeeds and that does not pass itself over.  The one rule
 * of that kind, measured (doc/BENCH.md, README "Backends"): uring passes
 * over where the kernel has IORING_OP_EPOLL_WAIT (Linux 6.15), on which
 * the epoll backend makes uepoll_ctl_wait()'s changes and wait one
 * io_uring_enter(), and the default must never lose to epoll, which uring
 * does on connection churn, a single producer and idle CPU (measured).
 */
static pthread_once_t auto_once = PTHREAD_ONCE_INIT;
static unsigned auto_backend;

static void auto_probe(void)
{
	unsigned i;

	for (i = 0; i + 1 < NBACKENDS; i++) {
		const struct uepoll_ops *ops = ops_lookup(auto_order[i]);

		if (ops->probe() == 0 && !(ops->pass_over && ops->pass_over()))
			break;
	}
	auto_backend = auto_order[i];
}

UEPOLL_API int uepoll_backend_list(unsigned *backends, int max)
{
	unsigned i;

	if (max < 0 || (max > 0 && !backends))
		return -EINVAL;
	for (i = 0; i < NBACKENDS && i < (unsigned)max; i++)
		backends[i] = auto_order[i];
	return (int)NBACKENDS;
}

UEPOLL_API int uepoll_backend_lookup(const char *name)
{
	unsigned i;

	if (!name)
		return -EINVAL;
	if (!strcmp(name, "auto"))
		return (int)UEPOLL_BACKEND_AUTO;
	for (i = 0; i < NBACKENDS; i++)
		if (!strcmp(name, registry[i]->name))
			return (int)((i + 1) << UEPOLL_BACKEND_SHIFT);
	return -EINVAL;
}

UEPOLL_API const char *uepoll_backend_str(unsigned backend)
{
	const struct uepoll_ops *ops;

	if (backend == UEPOLL_BACKEND_AUTO)
		return "auto";
	ops = ops_lookup(backend);
	return ops ? ops->name : NULL;
}

UEPOLL_API int uepoll_backend_probe(unsigned backend)
{
	int saved_errno = errno, ret = -EINVAL;
	const struct uepoll_ops *ops = ops_lookup(backend);

	if (ops)
		ret = ops->probe();
	errno = saved_errno;
	return ret;
}

UEPOLL_API int uepoll_backend_caps(unsigned backend)
{
	const struct uepoll_ops *ops = ops_lookup(backend);

	return ops ? (int)ops->caps : -EINVAL;
}

/* 0 live, -EBADF destroyed, -EINVAL NULL or never initialised */
static inline int check_live(const struct uepoll *u)
{
	if (!u)
		return -EINVAL;
	if (u->magic == UEPOLL_MAGIC_LIVE)
		return 0;
	return u->magic == UEPOLL_MAGIC_DEAD ? -EBADF : -EINVAL;
}

/* the checks of every call that takes changes: 0 or -errno (nothing applied) */
static inline int check_changes(const struct uepoll *u, const struct uepoll_change *ch,
				unsigned n)
{
	int ret = check_live(u);

	if (ret)
		return ret;
	return (!ch && n) || n > INT_MAX ? -EINVAL : 0;
}

static int env_backend(unsigned *flags)
{
	const char *e = getenv("UEPOLL_BACKEND");
	int b;

	if (!e || !*e)
		return 0;
	b = uepoll_backend_lookup(e);
	if (b < 0)
		return -EINVAL;
	*flags |= (unsigned)b;
	return 0;
}

/*
 * An unsigned number from the environment variable name, 0 to max;
 * unset or empty: dflt.  -EINVAL if malformed (a sign, trailing
 * characters, out of range): the rule of every UEPOLL_* number (also
 * uring.c's UEPOLL_URING_CQ).
 */
int __uepoll_env_uint(const char *name, uint32_t dflt, uint32_t max, uint32_t *out)
{
	const char *e = getenv(name);
	unsigned long v;
	char *end;

	*out = dflt;
	if (!e || !*e)
		return 0;
	errno = 0;
	v = strtoul(e, &end, 10);
	if (*end || errno || e[0] == '-' || v > max)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/*
 * Where the adaptive spin is on by default.  It measures sleeps with
 * CLOCK_MONOTONIC: where that clock is coarse (no high-resolution
 * timers: a guest whose TSC could not be calibrated runs on jiffies,
 * 4 ms, and its vDSO falls back to a system call) it cannot tell a short
 * sleep from a long one.  And a thread that may run on one CPU only
 * would spin while the producer it waits for cannot run.  Either way it
 * is off unless asked for.
 */
static int adapt_by_default(void)
{
	struct timespec r;
	cpu_set_t cpus;

	if (clock_getres(CLOCK_MONOTONIC, &r) || r.tv_sec || r.tv_nsec > 1000)
		return 0;
	return sched_getaffinity(0, sizeof(cpus), &cpus) || CPU_COUNT(&cpus) > 1;
}

/*
 * How many threads of the process may spin at once (__uepoll_spin()):
 * UEPOLL_SPIN_THREADS, or the CPUs this thread may run on less one.  A
 * spinner holds a CPU that what it waits for may need: the producer, or
 * another event loop of the process.  memcached's 4 workers on 2 vCPUs,
 * each spinning by itself, made 0.58-0.78x libevent's epoll in the guest
 * (doc/BENCH.md).  A spin that finds them all taken is skipped: the wait
 * sleeps at once, as with a budget of 0.  Read by the first uepoll_init()
 * of the process: set by spin_env_once(), -1 before.
 */
static int spin_threads = -1;
static int spinners;		/* threads in __uepoll_spin()'s loop now */
static pthread_once_t spin_env_once_ = PTHREAD_ONCE_INIT;

/*
 * How many sleeps in a row, each longer than the longest spin, make a
 * wait skip its spin until a sleep ends sooner (spin_woke()):
 * UEPOLL_SPIN_COLD, or UEPOLL_SPIN_COLD_DEFAULT; 0: never skipped.  Once
 * per process, with spin_threads; -1 before, -2 when malformed.
 */
static int spin_cold_after = -1;
#define SPIN_COLD_CAP	255u	/* u->spin_cold saturates: UEPOLL_SPIN_COLD's largest */

/*
 * The share of spins that find nothing, in sixteenths, that makes waits
 * skip their spin for a while (spin_count()): UEPOLL_SPIN_FUTILE, or
 * UEPOLL_SPIN_FUTILE_DEFAULT; 0: never.  Once per process, as
 * spin_cold_after.
 */
static int spin_futile_after = -1;
#define SPIN_FUTILE_CAP	16u	/* UEPOLL_SPIN_FUTILE's largest: every spin failed */

static void spin_env_once(void)
{
	cpu_set_t cpus;
	uint32_t dflt = 1, m;

	if (!sched_getaffinity(0, sizeof(cpus), &cpus))
		dflt = CPU_COUNT(&cpus) - 1;
	/* relaxed: pthread_once() orders them before every reader */
	__atomic_store_n(&spin_threads,
			 __uepoll_env_uint("UEPOLL_SPIN_THREADS", dflt, INT_MAX, &m) ? -2 : (int)m,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&spin_cold_after,
			 __uepoll_env_uint("UEPOLL_SPIN_COLD", UEPOLL_SPIN_COLD_DEFAULT,
					   SPIN_COLD_CAP, &m) ? -2 : (int)m,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&spin_futile_after,
			 __uepoll_env_uint("UEPOLL_SPIN_FUTILE", UEPOLL_SPIN_FUTILE_DEFAULT,
					   SPIN_FUTILE_CAP, &m) ? -2 : (int)m,
			 __ATOMIC_RELAXED);
}

/* UEPOLL_SPIN, UEPOLL_SPIN_ADAPT: the defaults of the budget and window;
 * UEPOLL_SPIN_THREADS, UEPOLL_SPIN_COLD and UEPOLL_SPIN_FUTILE, once per
 * process (-EINVAL at every init if bad) */
static int env_spin(uint32_t *spin, uint32_t *max)
{
	int ret = __uepoll_env_uint("UEPOLL_SPIN", UEPOLL_SPIN_DEFAULT, UEPOLL_SPIN_MAX, spin);

	pthread_once(&spin_env_once_, spin_env_once);
	if (!ret && (__atomic_load_n(&spin_threads, __ATOMIC_RELAXED) < 0 ||
		     __atomic_load_n(&spin_cold_after, __ATOMIC_RELAXED) < 0 ||
		     __atomic_load_n(&spin_futile_after, __ATOMIC_RELAXED) < 0))
		ret = -EINVAL;
	return ret ? ret : __uepoll_env_uint("UEPOLL_SPIN_ADAPT",
				    adapt_by_default() ? UEPOLL_SPIN_ADAPT_DEFAULT : 0,
				    UEPOLL_SPIN_MAX, max);
}

/*
 * errno: the API reports errors as return values and leaves errno as the
 * caller had it (liburing's convention); each entry point that may make a
 * system call restores it on the way out.
 */
static int init(struct uepoll *u, unsigned n, unsigned flags);
static void exit_(struct uepoll *u);
static int ctl(struct uepoll *u, int op, int fd, struct epoll_event *ev);
static int ctl_batch(struct uepoll *u, struct uepoll_change *ch, unsigned n);
static int wait_(struct uepoll *u, struct epoll_event *evs, int max, int timeout_ms);
static int ctl_wait(struct uepoll *u, struct uepoll_change *ch, unsigned n,
		    struct epoll_event *evs, int max, int timeout_ms);
static void defer_flush(struct uepoll *u);
static void live_add(struct uepoll *u);
static int spin_phase(struct uepoll *u, int (*ready)(struct uepoll *u), int queued);
static int defer_wait(struct uepoll *u, struct epoll_event *evs, int max, int timeout_ms);

UEPOLL_API int uepoll_init(struct uepoll *u, unsigned n, unsigned flags)
{
	int saved_errno = errno, ret = init(u, n, flags);

	errno = saved_errno;
	return ret;
}

UEPOLL_API void uepoll_exit(struct uepoll *u)
{
	int saved_errno = errno;

	exit_(u);
	errno = saved_errno;
}

UEPOLL_API int uepoll_ctl(struct uepoll *u, int op, int fd, struct epoll_event *ev)
{
	int saved_errno = errno, ret;

	defer_flush(u);
	__uepoll_in_ctl = 1;
	ret = ctl(u, op, fd, ev);
	__uepoll_in_ctl = 0;
	errno = saved_errno;
	return ret;
}

UEPOLL_API int uepoll_ctl_batch(struct uepoll *u, struct uepoll_change *ch, unsigned n)
{
	int saved_errno = errno, ret;

	defer_flush(u);
	__uepoll_in_ctl = 1;
	ret = ctl_batch(u, ch, n);
	__uepoll_in_ctl = 0;
	errno = saved_errno;
	return ret;
}

UEPOLL_API int uepoll_wait(struct uepoll *u, struct epoll_event *evs, int max, int timeout_ms)
{
	int saved_errno = errno, ret = defer_wait(u, evs, max, timeout_ms);

	errno = saved_errno;
	return ret;
}

UEPOLL_API int uepoll_ctl_wait(struct uepoll *u, struct uepoll_change *ch, unsigned n,
			       struct epoll_event *evs, int max, int timeout_ms)
{
	int saved_errno = errno, ret;

	defer_flush(u);
	ret = ctl_wait(u, ch, n, evs, max, timeout_ms);
	errno = saved_errno;
	return ret;
}

static int init(struct uepoll *u, unsigned n, unsigned flags)
{
	const struct uepoll_ops *ops;
	uint32_t spin, spin_max;
	int ret;

	if (!u)
		return -EINVAL;
	memset(u, 0, sizeof(*u));
	u->fd = -1;
	if (n < 1 || n > UEPOLL_MAX_ITEMS || (flags & ~UEPOLL_FLAGS_ALL))
		return -EINVAL;
	if ((flags & UEPOLL_BACKEND_MASK) == UEPOLL_BACKEND_AUTO) {
		ret = env_backend(&flags);
		if (ret)
			return ret;
	}
	ret = env_spin(&spin, &spin_max);
	if (ret)
		return ret;
	if ((flags & UEPOLL_BACKEND_MASK) == UEPOLL_BACKEND_AUTO) {
		pthread_once(&auto_once, auto_probe);
		flags |= auto_backend;
	}
	ops = ops_lookup(flags & UEPOLL_BACKEND_MASK);
	if (!ops)
		return -EINVAL;		/* a backend value this build lacks */
	u->backend = (int)(flags & UEPOLL_BACKEND_MASK);
	u->flags = flags;
	u->n = n;
	u->spin = spin;
	u->spin_max = spin_max;
	ret = ops->init(u, n, flags);
	if (ret < 0) {
		memset(u, 0, sizeof(*u));
		u->fd = -1;
		return ret;
	}
	u->magic = UEPOLL_MAGIC_LIVE;
	live_add(u);
	return 0;
}

/*
 * UEPOLL_STATS set (non-empty): uepoll_exit() writes the instance's
 * counters to stderr, one line of key=value words, for programs that
 * cannot call uepoll_get_stats() themselves (an event library's, a server
 * built on one; uepoll_get_stats(3)).  One write(2): lines of instances
 * that end together in several threads do not mix.
 */
static void report_stats(const struct uepoll *u)
{
	const char *e = getenv("UEPOLL_STATS");
	struct uepoll_stats st;
	char line[512];
	int n;

	if (!e || !*e || uepoll_get_stats(u, &st) < 0)
		return;
	n = snprintf(line, sizeof(line),
		     "uepoll-stats: backend=%s n=%u events=%llu harvests=%llu syscalls=%llu "
		     "ctl_syscalls=%llu ctls=%llu waits=%llu sleeps=%llu spins=%llu repolls=%llu "
		     "rechecks=%llu deferred=%llu\n",
		     uepoll_backend_name(u), u->n, (unsigned long long)st.events,
		     (unsigned long long)st.harvests, (unsigned long long)st.syscalls,
		     (unsigned long long)st.ctl_syscalls, (unsigned long long)st.ctls,
		     (unsigned long long)st.waits, (unsigned long long)st.sleeps,
		     (unsigned long long)st.spins, (unsigned long long)st.repolls,
		     (unsigned long long)st.rechecks, (unsigned long long)st.deferred);
	if (n > 0 && write(2, line, (size_t)n) < 0)
		return;	/* nothing to do about it */
}

/*
 * UEPOLL_STATS and exit(): an instance made while UEPOLL_STATS was set
 * and never destroyed (a program that leaves its event bases to the end
 * of the process: memcached's workers) reports at exit() instead, from an
 * atexit() handler, so that a process's lines cover every instance it
 * made.  The live ones are listed here (live_lock; a fork()ed child
 * starts a list of its own: the inherited entries are the parent's);
 * uepoll_exit() takes its instance off the list before it reports, so
 * each reports once.  The handler reads each listed instance's counters
 * (atomic loads) while other threads may still use it; the struct must
 * still be there, as it is until uepoll_exit() (uepoll_exit(3)).
 */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t live_once = PTHREAD_ONCE_INIT;
static struct uepoll **live;
static unsigned nlive, live_cap;
static pid_t live_pid;
static int live_used;		/* relaxed: once set, exit_() looks at the list */
static int live_reported;	/* the handler ran: uepoll_exit() writes no line */

static void live_report(void)
{
	unsigned i;

	pthread_mutex_lock(&live_lock);
	if (live_pid == getpid())
		for (i = 0; i < nlive; i++)
			report_stats(live[i]);
	live_reported = 1;
	nlive = 0;
	live_cap = 0;
	free(live);
	live = NULL;
	pthread_mutex_unlock(&live_lock);
}

static void live_setup(void)
{
	atexit(live_report);
}

static void live_add(struct uepoll *u)
{
	const char *e = getenv("UEPOLL_STATS");
	struct uepoll **n;

	if (!e || !*e)
		return;
	pthread_once(&live_once, live_setup);
	pthread_mutex_lock(&live_lock);
	if (live_pid != getpid()) {
		nlive = 0;
		live_pid = getpid();
	}
	if (nlive == live_cap) {
		n = realloc(live, (live_cap ? live_cap * 2 : 16) * sizeof(*n));
		if (!n) {	/* it reports at uepoll_exit() only */
			pthread_mutex_unlock(&live_lock);
			return;
		}
		live = n;
		live_cap = live_cap ? live_cap * 2 : 16;
	}
	live[nlive++] = u;
	__atomic_store_n(&live_used, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&live_lock);
}

/* u off the list; 1 if uepoll_exit() is still to write its line */
static int live_del(struct uepoll *u)
{
	unsigned i;
	int report;

	if (!__atomic_load_n(&live_used, __ATOMIC_RELAXED))
		return 1;
	pthread_mutex_lock(&live_lock);
	for (i = 0; live_pid == getpid() && i < nlive; i++) {
		if (live[i] == u) {
			live[i] = live[--nlive];
			break;
		}
	}
	report = !live_reported;
	pthread_mutex_unlock(&live_lock);
	return report;
}

static void defer_free(struct uepoll *u);

static void exit_(struct uepoll *u)
{
	if (check_live(u))
		return;
	if (live_del(u))
		report_stats(u);
	defer_free(u);
	ops_of(u->backend)->exit(u);
	u->hdr = NULL;
	u->index = NULL;
	u->priv = NULL;
	u->fd = -1;
	u->magic = UEPOLL_MAGIC_DEAD;
}

__thread struct uepoll_ident __uepoll_ident;

/* what fstat() says of fd, as epoll_ctl(2) would: EBADF, EPERM or 0 */
int __uepoll_fd_kind(struct uepoll *u, int fd)
{
	struct stat st;

	STAT_SYS(u);
	__uepoll_ident.fd = fd;
	__uepoll_ident.valid = 0;
	if (fstat(fd, &st) < 0)
		return -EBADF;
	__uepoll_ident.valid = 1;
	__uepoll_ident.dev = (uint64_t)st.st_dev;
	__uepoll_ident.ino = (uint64_t)st.st_ino;
	return S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) ? -EPERM : 0;
}

/*
 * The checks epoll_ctl(2) makes, in the kernel's order (EFAULT, EBADF,
 * EPERM, EINVAL), plus the userpoll rules (EPOLLET required where the
 * backend lacks UEPOLL_CAP_LEVEL, EPOLLEXCLUSIVE refused, EPOLLWAKEUP
 * dropped).  EEXIST, ENOENT and ENOSPC are the backend's, after these.
 */
int __uepoll_ctl_check(struct uepoll *u, int op, int fd, const struct epoll_event *ev,
		       struct epoll_event *e, int kind)
{
	const struct uepoll_ops *ops = ops_of(u->backend);
	int flags_bad = 0;

	e->events = 0;
	e->data.u64 = 0;
	if (op != EPOLL_CTL_DEL) {
		if (!ev)
			return -EFAULT;
		*e = *ev;
		e->events &= ~(uint32_t)EPOLLWAKEUP;
		flags_bad = (e->events & EPOLLEXCLUSIVE) ||
			    (!(e->events & EPOLLET) && !(ops->caps & UEPOLL_CAP_LEVEL));
	}
	if (fd < 0)
		return -EBADF;
	/*
	 * The kernel checks fd and pollability before flags; the backend's
	 * checks say how much of that its kernel call does (struct
	 * uepoll_ops): the library repeats the rest, in the kernel's order,
	 * with one fstat (or what the caller learnt of it: kind).
	 */
	if (ops->checks == UEPOLL_CHECKS_NONE ||
	    (ops->checks == UEPOLL_CHECKS_EPOLL && flags_bad)) {
		if (kind == UEPOLL_KIND_UNKNOWN)
			kind = __uepoll_fd_kind(u, fd);
		if (kind)
			return kind;
		if (fd == u->fd)
			return -EINVAL;
		if (flags_bad)
			return -EINVAL;
	}
	if (op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD && op != EPOLL_CTL_DEL)
		return -EINVAL;
	return 0;
}

static int ctl(struct uepoll *u, int op, int fd, struct epoll_event *ev)
{
	struct epoll_event e;
	int ret;

	ret = check_live(u);
	if (ret)
		return ret;
	__uepoll_ident.valid = 0;
	ret = __uepoll_ctl_check(u, op, fd, ev, &e, UEPOLL_KIND_UNKNOWN);
	if (__uepoll_number_gone(ret, fd) && ops_of(u->backend)->gone)
		ops_of(u->backend)->gone(u, fd);
	if (ret)
		return ret;
	ret = ops_of(u->backend)->ctl(u, op, fd, op != EPOLL_CTL_DEL ? &e : NULL);
	if (ret == 0)
		STAT(u, ctls, 1);
	return ret;
}

/* ctls counts the changes of a batch that succeeded */
static void count_ctls(struct uepoll *u, const struct uepoll_change *ch, unsigned n)
{
	uint64_t ok = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		ok += ch[i].res == 0;
	if (ok)
		STAT(u, ctls, ok);
}

/*
 * n changes in order, each one's result in its res: the backend's batch,
 * or a loop of ctl().  ctls counts the changes that succeeded.
 */
static int ctl_batch(struct uepoll *u, struct uepoll_change *ch, unsigned n)
{
	const struct uepoll_ops *ops;
	unsigned i;
	int ret;

	ret = check_changes(u, ch, n);
	if (ret || !n)
		return ret;
	ops = ops_of(u->backend);
	if (!ops->batch) {
		for (i = 0; i < n; i++)
			ch[i].res = ctl(u, ch[i].op, ch[i].fd, &ch[i].ev);
		return (int)n;
	}
	ret = ops->batch(u, ch, n);
	if (ret < 0)
		return ret;
	count_ctls(u, ch, n);
	return (int)n;
}

/* the bits a hint for events covers: a read that fails with EAGAIN
 * proves EPOLLRDNORM and EPOLLRDHUP false too, a write EPOLLWRNORM */
uint32_t __uepoll_drained_bits(uint32_t events)
{
	if (events & EPOLLIN)
		events |= EPOLLRDNORM | EPOLLRDHUP;
	if (events & EPOLLOUT)
		events |= EPOLLWRNORM;
	return events & UEPOLL_HINT_BITS;
}

/*
 * A hint, no system call: fd's file has none of these events ready for
 * now (the application read or wrote until EAGAIN).  Not registered,
 * edge-triggered or not reported since its last wake-up: nothing to do.
 */
UEPOLL_API int uepoll_drained(struct uepoll *u, int fd, uint32_t events)
{
	const struct uepoll_ops *ops;
	int ret = check_live(u);

	if (ret)
		return ret;
	if (fd < 0)
		return -EBADF;
	ops = ops_of(u->backend);
	if (ops->drained)
		ops->drained(u, fd, events);
	return 0;
}

UEPOLL_API int __uepoll_harvest(struct uepoll *u, struct epoll_event *evs, int max)
{
	int saved_errno = errno, ret = check_live(u);

	if (ret)
		return ret;
	if (!evs || max <= 0)
		return -EINVAL;
	ret = ops_of(u->backend)->harvest(u, evs, max);
	errno = saved_errno;
	return ret;
}

int64_t __uepoll_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int remaining_ms(int64_t deadline, int timeout_ms);
static void spin_woke(struct uepoll *u);

/*
 * Harvest; if nothing, sleep and harvest again until something comes or
 * the timeout expires.  A wake-up can yield nothing (a completion of a
 * deleted registration): then sleep again for the rest of the timeout.
 * A signal handler that runs while we sleep ends the call with -EINTR
 * (never restarted, whatever SA_RESTART says, like epoll_wait(2)).
 * Where the backend asks its level-triggered registrations in its sleep
 * (ops->level_sleep), that sleep comes first, without a spin, when
 * nothing is pending but that question, and the harvest after it takes
 * its answer; with uepoll_set_lazy_poll(), a spin comes first, and the
 * entries it finds are taken without asking.
 */

static int wait_more(struct uepoll *u, const struct uepoll_ops *ops,
		     struct epoll_event *evs, int max, int timeout_ms)
{
	int64_t deadline = 0;
	int ret, asked = 0, spun = 0;

	if (timeout_ms > 0)
		deadline = __uepoll_now_ns() + (int64_t)timeout_ms * 1000000;
	for (;;) {
		int64_t left = -1;

		if (!asked && ops->level_sleep && timeout_ms != 0) {
			int t = remaining_ms(deadline, timeout_ms);

			/* lazy (uepoll_set_lazy_poll()): spin first, the
			 * question waits while entries come */
			if (ops->sleep_asks && ops->sleep_asks(u) == 2 &&
			    __uepoll_spin(u, ops->ready)) {
				ret = uepoll_harvest(u, evs, max);
				if (ret != 0)
					return ret;
			}

			ret = t ? ops->level_sleep(u, t) : 1;
			if (ret == 0)
				spin_woke(u);	/* (a lazy spin above, if any) */
			if (ret < 0)
				return ret;
			asked = ret == 0;	/* the harvest takes its answer */
			if (asked)
				continue;
		}
		asked = 0;
		ret = uepoll_harvest(u, evs, max);
		if (ret != 0 || timeout_ms == 0)
			return ret;
		/*
		 * A spin ends when ready() sees something; a harvest that then
		 * finds nothing (an entry of a deleted registration; on uring,
		 * task work that is another thread's) goes to the sleep, which
		 * waits for what ready() saw, not to another spin that would
		 * see it again at once and never reach the deadline.
		 */
		if (ops->ready && !spun && __uepoll_spin(u, ops->ready)) {
			spun = 1;
			continue;
		}
		spun = 0;
		if (timeout_ms > 0) {
			left = deadline - __uepoll_now_ns();
			if (left <= 0) {
				__atomic_store_n(&u->spin_t0, 0, __ATOMIC_RELAXED);
				return 0;
			}
		}
		HSTAT(u, sleeps, 1);
		ret = ops->sleep(u, left < 0 ? -1 : (int)((left + 999999) / 1000000));
		spin_woke(u);
		if (ret < 0)
			return ret;
	}
}

/* the backend's own wait (epoll), or the generic loop */
static int wait_backend(struct uepoll *u, const struct uepoll_ops *ops,
			struct epoll_event *evs, int max, int timeout_ms)
{
	if (ops->wait)
		return ops->wait(u, evs, max, timeout_ms);
	return wait_more(u, ops, evs, max, timeout_ms);
}

static int wait_(struct uepoll *u, struct epoll_event *evs, int max, int timeout_ms)
{
	const struct uepoll_ops *ops;
	int ret;

	ret = check_live(u);
	if (ret)
		return ret;
	if (!evs || max <= 0)
		return -EINVAL;
	ops = ops_of(u->backend);
	HSTAT(u, waits, 1);
	return wait_backend(u, ops, evs, max, timeout_ms);
}

/* what is left of a timeout (-1: none) at deadline */
static int remaining_ms(int64_t deadline, int timeout_ms)
{
	int64_t left;

	if (timeout_ms <= 0)
		return timeout_ms;
	left = deadline - __uepoll_now_ns();
	return left <= 0 ? 0 : (int)((left + 999999) / 1000000);
}

/*
 * An ADD or MOD of the changes failed: the fd is not watched as the
 * caller meant, and an event loop redoes such a change (MOD after ENOENT
 * as ADD, ADD after EEXIST as MOD: libevent, libuv).  uepoll_ctl_wait()
 * then returns 0 at once, neither sleeping nor harvesting: the caller
 * redoes it and waits, as with a batch and a wait (the events of that
 * wait include the redone registration's).  A DEL's failure leaves
 * nothing unwatched.
 */
int __uepoll_add_mod_failed(const struct uepoll_change *ch, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (ch[i].res < 0 && ch[i].op != EPOLL_CTL_DEL)
			return 1;
	return 0;
}

/*
 * uepoll_ctl_wait(): the changes as uepoll_ctl_batch() applies them, then
 * uepoll_wait(), unless an ADD or MOD failed (0 at once).  Arguments are
 * checked before anything is applied.  A backend with ctl_sleep folds the
 * changes into the sleep's system call (timeout_ms != 0); the harvest
 * that follows it takes what came, and if nothing did, uepoll_wait()
 * goes on for the rest of the timeout.
 */
static int ctl_wait(struct uepoll *u, struct uepoll_change *ch, unsigned n,
		    struct epoll_event *evs, int max, int timeout_ms)
{
	const struct uepoll_ops *ops;
	int64_t deadline = 0;
	int ret;

	ret = check_changes(u, ch, n);
	if (ret)
		return ret;
	if (!evs || max <= 0)
		return -EINVAL;
	ops = ops_of(u->backend);
	if (!n || !timeout_ms || !ops->ctl_sleep) {
		if (n) {
			__uepoll_in_ctl = 1;
			ret = ctl_batch(u, ch, n);
			__uepoll_in_ctl = 0;
			if (ret < 0)
				return ret;
		}
		return __uepoll_add_mod_failed(ch, n) ? 0 : wait_(u, evs, max, timeout_ms);
	}
	if (timeout_ms > 0)
		deadline = __uepoll_now_ns() + (int64_t)timeout_ms * 1000000;
	__uepoll_in_ctl = 1;
	ret = ops->ctl_sleep(u, ch, n, evs, max, timeout_ms);
	__uepoll_in_ctl = 0;
	if (ret < 0 && ret != -EINTR)
		return ret;
	count_ctls(u, ch, n);
	HSTAT(u, waits, 1);
	if (ret != 0)
		return ret;	/* events, or -EINTR */
	if (__uepoll_add_mod_failed(ch, n))
		return 0;
	return wait_backend(u, ops, evs, max, remaining_ms(deadline, timeout_ms));
}

/*
 * uepoll_ctl_defer(3): changes the harvester hands over, applied at the
 * first of
 *   - a wait that finds nothing to harvest (after its spin), with its
 *     sleep, as uepoll_ctl_wait() applies its changes: one system call
 *     where the backend folds them; the epoll backend, whose every harvest
 *     is a system call, at once, in that call;
 *   - a wait whose harvest would make a system call only for what that
 *     sleep's call does too (ops->sleep_asks: uring's pending task work),
 *     as above: that call's sleep ends at once on what it posts;
 *   - a wait when DEFER_PASSES waits returned events since they were
 *     queued (a busy loop whose ring never empties still applies them);
 *   - a uepoll_ctl(), uepoll_ctl_batch() or uepoll_ctl_wait() of any
 *     thread, as one batch before its own changes;
 *   - a queue of DEFER_FLUSH changes, which uepoll_ctl_defer() applies
 *     before it adds more.
 * A change that fails is filed with its res, for uepoll_ctl_failed().
 * Room: nq + nflight + nf <= fcap, reserved by uepoll_ctl_defer(), so
 * that filing never allocates and no failure is lost.
 *
 * Locking: d->lock guards the arrays and counts.  A flush holds it across
 * its batch (a batch does not sleep); the wait does not hold it across
 * its sleep: under it, it swaps the queue's array with flight's (no copy,
 * no allocation), applies and sleeps without it, and takes it again to
 * file the failures.  d->lock is taken
 * before any backend lock, never after one (no backend calls back here).
 * nq is also read without the lock (a relaxed load: the fast "nothing
 * queued" test of every ctl and wait); the lock orders everything else.
 */
#define DEFER_FLUSH	4096u
#define DEFER_PASSES	4u

struct uepoll_deferred {
	pthread_mutex_t lock;
	unsigned nq, nflight, nf;
	unsigned qcap, flcap, fcap;
	unsigned age;			/* waits that returned events, queue not empty */
	struct uepoll_change *q;	/* queued, in order */
	struct uepoll_change *flight;	/* the queue a wait took to apply (arrays swapped) */
	struct uepoll_change *f;	/* failed, oldest first, not read yet */
};

/*
 * The queue: created by the first uepoll_ctl_defer(), whose release store
 * of u->deferred pairs with the acquire load here (any thread's ctl or
 * flush sees an initialised lock); freed by uepoll_exit() only.  Process
 * memory, not the ring: not one of the kernel-shared accesses of
 * uepoll/barrier.h.
 */
static struct uepoll_deferred *deferred_get(const struct uepoll *u)
{
	return (struct uepoll_deferred *)(uintptr_t)__atomic_load_n(&u->deferred, __ATOMIC_ACQUIRE);
}

static unsigned deferred_queued(const struct uepoll_deferred *d)
{
	return d ? __atomic_load_n(&d->nq, __ATOMIC_RELAXED) : 0;
}

/* a[0..n) applied: file those that failed; err < 0: none was (a batch's
 * own error, -ECHILD), each fails with err.  d->lock held. */
static void defer_file(struct uepoll_deferred *d, struct uepoll_change *a, unsigned n, int err)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		if (err < 0)
			a[i].res = err;
		if (a[i].res < 0)
			d->f[d->nf++] = a[i];
	}
}

/* the queue as one batch; d->lock held */
static void defer_apply(struct uepoll *u, struct uepoll_deferred *d)
{
	int in_ctl = __uepoll_in_ctl, ret;

	if (!d->nq)
		return;
	__uepoll_in_ctl = 1;
	ret = ctl_batch(u, d->q, d->nq);
	__uepoll_in_ctl = in_ctl;
	defer_file(d, d->q, d->nq, ret < 0 ? ret : 0);
	__atomic_store_n(&d->nq, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&d->age, 0, __ATOMIC_RELAXED);
}

static void defer_flush(struct uepoll *u)
{
	struct uepoll_deferred *d;

	if (check_live(u))
		return;
	d = deferred_get(u);
	if (!deferred_queued(d))
		return;
	pthread_mutex_lock(&d->lock);
	defer_apply(u, d);
	pthread_mutex_unlock(&d->lock);
}

/* *a holds at least want entries (cap *cap): 0, or -ENOMEM (unchanged) */
static int defer_room(struct uepoll_change **a, unsigned *cap, size_t want)
{
	size_t c = *cap ? *cap : 64;
	void *p;

	if (want <= *cap)
		return 0;
	if (want > INT_MAX)
		return -ENOMEM;
	while (c < want)
		c *= 2;
	p = realloc(*a, c * sizeof(**a));
	if (!p)
		return -ENOMEM;
	*a = p;
	*cap = (unsigned)c;
	return 0;
}

/*
 * A queued DEL says the program is done with the fd's events: as
 * uepoll_drained() of all it can say, its level is not asked again until
 * the registration's next event or the DEL (a level-triggered one that
 * stays ready would otherwise be polled, on uring by a number the program
 * may have closed and reused, until the queue is applied).
 */
static void defer_del_hints(struct uepoll *u, const struct uepoll_change *ch, unsigned n)
{
	const struct uepoll_ops *ops = ops_of(u->backend);
	unsigned i;

	if (!ops->drained)
		return;
	for (i = 0; i < n; i++)
		if (ch[i].op == EPOLL_CTL_DEL && ch[i].fd >= 0)
			ops->drained(u, ch[i].fd, UEPOLL_HINT_BITS);
}

static int ctl_defer(struct uepoll *u, const struct uepoll_change *ch, unsigned n)
{
	struct uepoll_deferred *d;
	int ret = check_changes(u, ch, n);

	if (ret || !n)
		return ret;
	d = deferred_get(u);
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d)
			return -ENOMEM;
		pthread_mutex_init(&d->lock, NULL);
		__atomic_store_n(&u->deferred, (uint64_t)(uintptr_t)d, __ATOMIC_RELEASE);
	}
	pthread_mutex_lock(&d->lock);
	if (d->nq + (size_t)n > DEFER_FLUSH)
		defer_apply(u, d);
	if (defer_room(&d->q, &d->qcap, (size_t)d->nq + n) ||
	    defer_room(&d->f, &d->fcap, (size_t)d->nq + d->nflight + d->nf + n)) {
		pthread_mutex_unlock(&d->lock);
		return -ENOMEM;		/* nothing of ch queued */
	}
	memcpy(d->q + d->nq, ch, n * sizeof(*ch));
	__atomic_store_n(&d->nq, d->nq + n, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&d->lock);
	STAT(u, deferred, n);
	defer_del_hints(u, ch, n);
	return 0;
}

/*
 * uepoll_wait() with changes queued.  Where a harvest makes no system
 * call (native, uring) the wait harvests first, and spins: events found
 * there are returned with the changes still queued, unless they have
 * waited DEFER_PASSES such waits.  Otherwise the queue goes as
 * uepoll_ctl_wait()'s changes: with the sleep in one system call where
 * the backend can (an ADD or MOD that fails then ends the call at once
 * with 0, as there).
 */
static int defer_wait(struct uepoll *u, struct epoll_event *evs, int max, int timeout_ms)
{
	const struct uepoll_ops *ops;
	struct uepoll_deferred *d;
	struct uepoll_change *fl;
	unsigned n, cap;
	int ret;

	ret = check_live(u);
	if (ret)
		return ret;
	d = deferred_get(u);
	if (!evs || max <= 0 || !deferred_queued(d))
		return wait_(u, evs, max, timeout_ms);
	ops = ops_of(u->backend);
	if (ops->ready && !ops->wait && __atomic_load_n(&d->age, __ATOMIC_RELAXED) < DEFER_PASSES) {
		/* (a harvest that would only ask what the sleep asks: none,
		 * also when the spin ends on that, as uring's on its task work) */
		ret = ops->sleep_asks && ops->sleep_asks(u) ? 0 : uepoll_harvest(u, evs, max);
		if (ret == 0 && timeout_ms != 0 && spin_phase(u, ops->ready, 1) &&
		    !(ops->sleep_asks && ops->sleep_asks(u)))
			ret = uepoll_harvest(u, evs, max);
		if (ret != 0) {
			HSTAT(u, waits, 1);
			if (ret > 0)	/* relaxed: a flush of another thread zeroes it */
				__atomic_fetch_add(&d->age, 1, __ATOMIC_RELAXED);
			return ret;
		}
	}
	pthread_mutex_lock(&d->lock);
	n = d->nq;
	/* the queue's array becomes flight's, flight's (empty) the queue's */
	fl = d->flight;
	d->flight = d->q;
	d->q = fl;
	cap = d->flcap;
	d->flcap = d->qcap;
	d->qcap = cap;
	d->nflight = n;
	__atomic_store_n(&d->nq, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&d->age, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&d->lock);

	ret = ctl_wait(u, d->flight, n, evs, max, timeout_ms);
	spin_woke(u);	/* the spin above ended in this sleep (or one inside) */

	pthread_mutex_lock(&d->lock);
	defer_file(d, d->flight, n, ret < 0 && ret != -EINTR ? ret : 0);
	d->nflight = 0;
	pthread_mutex_unlock(&d->lock);
	return ret;
}

static int ctl_failed(struct uepoll *u, struct uepoll_change *ch, unsigned max)
{
	struct uepoll_deferred *d;
	unsigned k;
	int ret = check_live(u);

	if (ret)
		return ret;
	if (!ch && max)
		return -EINVAL;
	d = deferred_get(u);
	if (!d)
		return 0;
	pthread_mutex_lock(&d->lock);
	if (!max) {
		k = d->nf;	/* how many there are */
	} else {
		k = d->nf < max ? d->nf : max;
		memcpy(ch, d->f, k * sizeof(*ch));
		memmove(d->f, d->f + k, (d->nf - k) * sizeof(*d->f));
		d->nf -= k;
	}
	pthread_mutex_unlock(&d->lock);
	return k > INT_MAX ? INT_MAX : (int)k;
}

static void defer_free(struct uepoll *u)
{
	struct uepoll_deferred *d = deferred_get(u);

	if (!d)
		return;
	u->deferred = 0;
	pthread_mutex_destroy(&d->lock);
	free(d->q);
	free(d->flight);
	free(d->f);
	free(d);
}

UEPOLL_API int uepoll_ctl_defer(struct uepoll *u, const struct uepoll_change *ch, unsigned n)
{
	int saved_errno = errno, ret;

	ret = ctl_defer(u, ch, n);
	errno = saved_errno;
	return ret;
}

UEPOLL_API int uepoll_ctl_failed(struct uepoll *u, struct uepoll_change *ch, unsigned max)
{
	return ctl_failed(u, ch, max);
}

/*
 * The adaptive spin (uepoll_set_spin_adapt(3)): the rule of the kernel's
 * haltpoll cpuidle governor, for a thread instead of a CPU, counted in
 * ring checks like the budget, so that a window is the same amount of
 * work on any machine (a check is about 35 ns on the host, 280 ns under
 * TCG, and a sleep costs about as many checks on both).  After its
 * u->spin checks, a spin phase goes on for spin_window more.  A spin
 * that finds nothing ends in a sleep; the wake-up after it (spin_woke())
 * takes how long the thread was idle, from the start of the spin, in
 * checks (at the rate the failed spins measured, spin_check_ps), and
 *   - idle longer than the window, but at most spin_max: the window
 *     doubles (from SPIN_GROW_START, up to spin_max): a longer spin
 *     would have caught that wake-up without a sleep;
 *   - idle longer than spin_max: the window halves (0 below
 *     SPIN_GROW_START): events do not come often enough to wait for.
 * A spin that finds something leaves the window as it is.  So a busy
 * loop, whose events come a little after it runs dry, spins instead of
 * sleeping, and an idle one goes back to u->spin checks after a few
 * sleeps.  And where no spin could have helped, none is made: after
 * spin_cold_after sleeps in a row each longer than the longest spin
 * (u->spin + spin_max checks: idle past it, any spin would have ended in
 * that sleep), a wait skips its spin phase, and the clock still times
 * its sleep; the first sleep that ends sooner (or a spin setting
 * changed) starts the spins again.  An idle loop then pays for its
 * wake-up only, as epoll_wait() does, where it paid a whole budget of
 * checks per event; a busy one, whose sleeps are short, never sees it.
 * Nor does a loop whose events come only once it sleeps: its spin holds
 * the CPU that the producer needs (memcached's four workers and the load
 * client on two vCPUs: every spin of a run found nothing, and the
 * server used 1.49x the CPU of libevent's epoll per operation), so each
 * spin fails and the sleep after it is short.  spin_count() keeps the
 * share of spins that failed: a failure moves it 1/8 of the way to 1 (as
 * spin_check_ps moves), a spin that finds an event halves it.  At
 * spin_futile_after sixteenths or more (15: 21 failures in a row
 * from none) the waits skip their spin for SPIN_SKIP_START waits, then
 * try one; each try that fails doubles the skip (up to SPIN_SKIP_MAX
 * waits); one that finds an event ends the skips.  Simulated with spins
 * that find an event at random: those that pay one time in three still
 * spin at 93 % of the waits, one in four at half, one in ten at 1 %.  A
 * spin setting changed starts over.  The spin of a wait with deferred
 * changes queued fails for another reason, and is not judged by this
 * rule (spin_phase()).
 * The clock is read when a spin begins and ends and after the
 * sleep, never inside the loop; with spin_max 0, never.  The fields
 * belong to the harvester; a second thread waiting at the same time can
 * only skew the heuristic, so every access is relaxed (and
 * uepoll_set_spin_adapt() of another thread takes effect at the next
 * spin).  Process memory, not the ring.
 */
#define SPIN_GROW_START	64u		/* checks */
#define SPIN_CHECK_PS	35000u		/* a check, until a spin measured one */
#define SPIN_SKIP_START	16u		/* waits: the first skip after failed spins */
#define SPIN_SKIP_MAX	1024u		/* waits: the longest */

/* a spin of the adaptive spin ended: found, or not (the rule above) */
static void spin_count(struct uepoll *u, int found)
{
	uint32_t after = (uint32_t)__atomic_load_n(&spin_futile_after, __ATOMIC_RELAXED);
	uint32_t avg = __atomic_load_n(&u->spin_fail_avg, __ATOMIC_RELAXED), b;

	if (found) {
		__atomic_store_n(&u->spin_fail_avg, avg / 2, __ATOMIC_RELAXED);
		__atomic_store_n(&u->spin_backoff, 0, __ATOMIC_RELAXED);
		return;
	}
	avg = avg - avg / 8 + 65536 / 8;	/* += (65536 - avg) / 8: at most 65536 */
	__atomic_store_n(&u->spin_fail_avg, avg, __ATOMIC_RELAXED);
	if (!after || avg < after * (65536 / 16))
		return;
	b = __atomic_load_n(&u->spin_backoff, __ATOMIC_RELAXED);
	b = !b ? SPIN_SKIP_START : b >= SPIN_SKIP_MAX / 2 ? SPIN_SKIP_MAX : b * 2;
	__atomic_store_n(&u->spin_backoff, b, __ATOMIC_RELAXED);
	__atomic_store_n(&u->spin_skip, b, __ATOMIC_RELAXED);
}

/* a spin setting changed: the rules that stop the spin start again */
static void spin_rules_reset(struct uepoll *u)
{
	__atomic_store_n(&u->spin_cold, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&u->spin_fail_avg, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&u->spin_skip, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&u->spin_backoff, 0, __ATOMIC_RELAXED);
}

/*
 * Spin phase of uepoll_wait(): up to u->spin checks of ready(), then
 * spin_window more, no system call.  1 when ready() said yes (harvest
 * again), 0 when both ran out (sleep: spin_t0 says when it began).
 */
int __uepoll_spin(struct uepoll *u, int (*ready)(struct uepoll *u))
{
	return spin_phase(u, ready, 0);
}

/*
 * queued: the spin of a wait with uepoll_ctl_defer()'s changes queued
 * (defer_wait()).  The events of its queued ADDs and MODs can come only
 * with the call that carries them, so where those are what the loop
 * waits for (a server's accepted sockets, its replies' EPOLLOUT) the spin
 * finds nothing by construction, and pays in another way: what comes
 * while it spins rides in that one call and its harvest.  Native
 * bench_http with deferred changes, in the guest: 0.32 event system
 * calls per request with these spins, 0.76 without, at 1.30x and 1.02x
 * stock libevent's CPU per request, at no lower a rate.  Its failure says
 * nothing of a producer kept off the CPU (memcached's workers, whose
 * changes are rare: their spins are not queued ones), so it neither
 * counts for the futile rule nor is skipped by it; one that finds an
 * event counts as any other.  The cold rule and the cap on spinners
 * still hold.
 */
static int spin_phase(struct uepoll *u, int (*ready)(struct uepoll *u), int queued)
{
	/* relaxed: uepoll_set_spin() from another thread takes effect at the
	 * next spin phase; nothing else is published through it */
	uint64_t i, n = __atomic_load_n(&u->spin, __ATOMIC_RELAXED);
	int64_t t0 = 0;
	int found = 0;

	if (__atomic_load_n(&u->spin_max, __ATOMIC_RELAXED)) {
		uint32_t after = (uint32_t)__atomic_load_n(&spin_cold_after, __ATOMIC_RELAXED);
		uint32_t skip = __atomic_load_n(&u->spin_skip, __ATOMIC_RELAXED);

		if (skip && !queued) {
			/* failed spins: no spin, nor a clock (spin_count()) */
			__atomic_store_n(&u->spin_skip, skip - 1, __ATOMIC_RELAXED);
			__atomic_store_n(&u->spin_t0, 0, __ATOMIC_RELAXED);
			return 0;
		}
		t0 = __uepoll_now_ns();
		n += __atomic_load_n(&u->spin_window, __ATOMIC_RELAXED);
		/* cold: no spin, the sleep is timed (spin_woke()) */
		if (after && __atomic_load_n(&u->spin_cold, __ATOMIC_RELAXED) >= after)
			n = 0;
	}
	__atomic_store_n(&u->spin_t0, t0, __ATOMIC_RELAXED);
	if (!n)
		return 0;
	/* a place among the spinners (spin_env_once()), or no spin and
	 * no adapting the window to a sleep it did not choose; relaxed: a
	 * count, nothing is published through it */
	if (__atomic_add_fetch(&spinners, 1, __ATOMIC_RELAXED) >
	    __atomic_load_n(&spin_threads, __ATOMIC_RELAXED)) {
		__atomic_sub_fetch(&spinners, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&u->spin_t0, 0, __ATOMIC_RELAXED);
		return 0;
	}
	HSTAT(u, spins, 1);
	for (i = 0; i < n && !found; i++) {
		found = ready(u);
		if (!found)
			cpu_relax();
	}
	__atomic_sub_fetch(&spinners, 1, __ATOMIC_RELAXED);
	if (t0 && (found || !queued))
		spin_count(u, found);
	if (found) {
		/* not a sleep: spin_woke() leaves the window alone */
		__atomic_store_n(&u->spin_t0, 0, __ATOMIC_RELAXED);
	} else if (t0 && n >= SPIN_GROW_START) {
		/*
		 * The rate of checks: a moving average, 1/4 per spin.  A
		 * sample counts at most twice the average: a spin that lost
		 * its CPU for a while (to the producer, or the host of a
		 * guest) timed the stall, not its checks.  Under TCG a 768
		 * check spin once took 10 ms, and the average, 13 us a check
		 * for a while, made a 50 ms sleep look short enough to grow
		 * the window for.  A real slowdown still gets through, by a
		 * quarter per spin.
		 */
		uint64_t ps = (uint64_t)(__uepoll_now_ns() - t0) * 1000 / n;
		uint32_t old = __atomic_load_n(&u->spin_check_ps, __ATOMIC_RELAXED);

		if (old && ps > 2 * (uint64_t)old)
			ps = 2 * (uint64_t)old;
		ps = old ? (3 * (uint64_t)old + ps) / 4 : ps;
		__atomic_store_n(&u->spin_check_ps, ps > UINT32_MAX ? UINT32_MAX : (uint32_t)ps,
				 __ATOMIC_RELAXED);
	}
	return found;
}

/* a sleep after a spin phase ended: adapt the window to how long it was */
static void spin_woke(struct uepoll *u)
{
	int64_t t0 = __atomic_load_n(&u->spin_t0, __ATOMIC_RELAXED);
	uint32_t w, max, ps, cold;
	uint64_t idle;

	if (!t0)
		return;
	__atomic_store_n(&u->spin_t0, 0, __ATOMIC_RELAXED);
	max = __atomic_load_n(&u->spin_max, __ATOMIC_RELAXED);
	w = __atomic_load_n(&u->spin_window, __ATOMIC_RELAXED);
	ps = __atomic_load_n(&u->spin_check_ps, __ATOMIC_RELAXED);
	idle = (uint64_t)(__uepoll_now_ns() - t0) * 1000 / (ps ? ps : SPIN_CHECK_PS);
	cold = __atomic_load_n(&u->spin_cold, __ATOMIC_RELAXED);
	if (idle > (uint64_t)max + __atomic_load_n(&u->spin, __ATOMIC_RELAXED))
		cold += cold < SPIN_COLD_CAP;
	else
		cold = 0;
	__atomic_store_n(&u->spin_cold, cold, __ATOMIC_RELAXED);
	if (idle > w && idle <= max)
		w = w >= max / 2 ? max : w * 2 < SPIN_GROW_START ? SPIN_GROW_START : w * 2;
	else if (idle > max)
		w = w / 2 < SPIN_GROW_START ? 0 : w / 2;
	if (w > max)
		w = max;
	__atomic_store_n(&u->spin_window, w, __ATOMIC_RELAXED);
}

UEPOLL_API int uepoll_set_spin(struct uepoll *u, unsigned spin)
{
	int ret = check_live(u);

	if (ret)
		return ret;
	if (spin > UEPOLL_SPIN_MAX)
		return -EINVAL;
	__atomic_store_n(&u->spin, spin, __ATOMIC_RELAXED);
	spin_rules_reset(u);	/* spins again */
	return 0;
}

/*
 * uepoll_set_lazy_poll(3): native and uring read it (__uepoll_lazy_poll():
 * native.c, uring.c); epoll reports as epoll does whatever it says.
 */
UEPOLL_API int uepoll_set_lazy_poll(struct uepoll *u, unsigned passes)
{
	int ret = check_live(u);

	if (ret)
		return ret;
	if (passes > UEPOLL_LAZY_POLL_MAX)
		return -EINVAL;
	__atomic_store_n(&u->lazy_poll, passes, __ATOMIC_RELAXED);
	return 0;
}

UEPOLL_API int uepoll_set_spin_adapt(struct uepoll *u, unsigned max)
{
	int ret = check_live(u);

	if (ret)
		return ret;
	if (max > UEPOLL_SPIN_MAX)
		return -EINVAL;
	__atomic_store_n(&u->spin_max, max, __ATOMIC_RELAXED);
	if (__atomic_load_n(&u->spin_window, __ATOMIC_RELAXED) > max)
		__atomic_store_n(&u->spin_window, max, __ATOMIC_RELAXED);
	spin_rules_reset(u);	/* spins again */
	return 0;
}

UEPOLL_API int uepoll_fd(const struct uepoll *u)
{
	int ret = check_live(u);

	return ret ? ret : u->fd;
}

UEPOLL_API int uepoll_backend(const struct uepoll *u)
{
	int ret = check_live(u);

	return ret ? ret : u->backend;
}

UEPOLL_API const char *uepoll_backend_name(const struct uepoll *u)
{
	if (check_live(u))
		return NULL;
	return ops_of(u->backend)->name;
}

UEPOLL_API int uepoll_get_stats(const struct uepoll *u, struct uepoll_stats *st)
{
	const uint64_t *src;
	uint64_t *dst;
	size_t i;
	int ret = check_live(u);

	if (ret)
		return ret;
	if (!st)
		return -EINVAL;
	src = (const uint64_t *)&u->stats;
	dst = (uint64_t *)st;
	for (i = 0; i < sizeof(*st) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	return 0;
}

/* fd map */
int fdmap_get(const struct fdmap *m, int fd)
{
	if (fd < 0 || (unsigned)fd >= m->cap)
		return -1;
	return m->v[fd];
}

/* room for fd in the map: 0 or -ENOMEM */
int fdmap_reserve(struct fdmap *m, int fd)
{
	unsigned cap = m->cap ? m->cap : 64, i;
	int32_t *v;

	if (fd < 0 || (unsigned)fd < m->cap)
		return 0;
	while (cap <= (unsigned)fd)
		cap *= 2;
	v = realloc(m->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = m->cap; i < cap; i++)
		v[i] = -1;
	m->v = v;
	m->cap = cap;
	return 0;
}

int fdmap_set(struct fdmap *m, int fd, int val)
{
	if ((unsigned)fd >= m->cap) {
		if (val < 0)
			return 0;
		if (fdmap_reserve(m, fd) < 0)
			return -ENOMEM;
	}
	m->v[fd] = val;
	return 0;
}

void fdmap_free(struct fdmap *m)
{
	free(m->v);
	m->v = NULL;
	m->cap = 0;
}
