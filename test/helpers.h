/* SPDX-License-Identifier: MIT OR LGPL-2.1-or-later */
/*
 * test/helpers.h - shared by the test programs: exit 0 pass, 1 fail,
 * 77 skip (reason printed).  The backend comes from UEPOLL_BACKEND (the
 * runner sets it per run).
 */
#ifndef UEPOLL_TEST_HELPERS_H
#define UEPOLL_TEST_HELPERS_H

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uepoll.h>

/* the library folds nothing into a sleep under valgrind (batch.c) */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define under_valgrind()	RUNNING_ON_VALGRIND
#endif
#endif
#ifndef under_valgrind
#define under_valgrind()	0
#endif

/* may the library fold changes or questions into a sleep (batch.c)? */
static inline int t_folds_sleep(void)
{
	const char *b = getenv("UEPOLL_BATCH");

	return !under_valgrind() && !(b && !strcmp(b, "loop"));
}

/*
 * uring: do the changes of a sleep go with their checks in its enter
 * (uring.c, ring_sleep())?  The kernel has the minimum wait of
 * io_uring_enter() (IORING_FEAT_MIN_TIMEOUT, 6.12), the setup is not
 * DEFER_TASKRUN, UEPOLL_URING_RING_CHECKS is not 0, not under valgrind.
 * (struct io_uring_params as words: features is the sixth.)
 */
static inline int t_ring_checks(const struct uepoll *u)
{
	const char *e = getenv("UEPOLL_URING_RING_CHECKS"), *s = getenv("UEPOLL_URING_SETUP");
	uint32_t prm[30] = { 0 };
	int fd;

	if (strcmp(uepoll_backend_name(u), "uring") || under_valgrind() ||
	    (e && !strcmp(e, "0")) || (s && !strcmp(s, "defer")))
		return 0;
	fd = (int)syscall(__NR_io_uring_setup, 2, prm);
	if (fd < 0)
		return 0;
	close(fd);
	return !!(prm[5] & (1u << 15));
}

/*
 * Native: are level-triggered registrations in the ring, polled again by
 * the kernel (EPOLL_USERPOLL_LEVEL, uepoll(7)), rather than in the level
 * epoll?  The library's choice: the kernel has the flag and
 * UEPOLL_NATIVE_LEVEL is not "epoll".  epoll_create2() is only called
 * where the backend is native (463 is another call on kernels without it).
 */
static inline int t_native_klevel(const struct uepoll *u)
{
	const char *e = getenv("UEPOLL_NATIVE_LEVEL");
	int fd;

	if (uepoll_backend(u) != (int)UEPOLL_BACKEND_NATIVE || (e && !strcmp(e, "epoll")))
		return 0;
	fd = (int)syscall(UEPOLL_NR_epoll_create2, EPOLL_USERPOLL | EPOLL_USERPOLL_LEVEL, 1);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

#define T_PASS 0
#define T_FAIL 1
#define T_SKIP 77

#define FAIL(...) do { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(T_FAIL); } while (0)
#define SKIP(...) do { printf("SKIP: "); printf(__VA_ARGS__); putchar('\n'); exit(T_SKIP); } while (0)
#define CHECK(c) do { if (!(c)) FAIL("%s", #c); } while (0)
#define CHECK_EQ(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
		if (_a != _b) FAIL("%s == %lld, expected %s == %lld", #a, _a, #b, _b); } while (0)

/*
 * 1 if the running kernel has EPOLL_USERPOLL: the procfs feature file
 * reads "1" (the library's native probe applies the same rule).
 */
static inline int t_native_feature(void)
{
	char c = 0;
	int fd = open(UEPOLL_FEATURE_FILE, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	return c == '1';
}

static inline int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* the DIR's own fd */
}

/* CLOCK_MONOTONIC in milliseconds */
static inline int64_t t_ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* the system calls the library counted for u so far (uepoll_get_stats()) */
static inline uint64_t t_syscalls(const struct uepoll *u)
{
	struct uepoll_stats st;

	CHECK_EQ(uepoll_get_stats(u, &st), 0);
	return st.syscalls;
}

static inline int t_efd(void)
{
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	if (fd < 0)
		FAIL("eventfd: %s", strerror(errno));
	return fd;
}

static inline void t_write(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) != sizeof(one))
		FAIL("write: %s", strerror(errno));
}

static inline uint64_t t_read(int fd)
{
	uint64_t v = 0;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

/* uepoll_init with the runner's backend; skip if it is unavailable */
static inline void t_init(struct uepoll *u, unsigned n)
{
	int ret = uepoll_init(u, n, UEPOLL_CLOEXEC);

	if (ret == -ENOSYS || ret == -EPERM)
		SKIP("backend %s unavailable: %s", getenv("UEPOLL_BACKEND") ?: "auto", strerror(-ret));
	if (ret < 0)
		FAIL("uepoll_init(%u): %s", n, strerror(-ret));
}

static inline int t_add(struct uepoll *u, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev;

	ev.events = events;
	ev.data.u64 = data;
	return uepoll_ctl(u, EPOLL_CTL_ADD, fd, &ev);
}

static inline int t_mod(struct uepoll *u, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev;

	ev.events = events;
	ev.data.u64 = data;
	return uepoll_ctl(u, EPOLL_CTL_MOD, fd, &ev);
}

/* one change of a batch; res 12345 until the library sets it */
static inline void t_change(struct uepoll_change *c, int op, int fd, uint32_t events,
			    uint64_t data)
{
	memset(c, 0, sizeof(*c));
	c->op = op;
	c->fd = fd;
	c->ev.events = events;
	c->ev.data.u64 = data;
	c->res = 12345;
}

/* every event of one batch must have a distinct data (guarantee 2) */
static inline void t_check_distinct(const struct epoll_event *evs, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (evs[i].data.u64 == evs[j].data.u64)
				FAIL("two events for data %llu in one batch",
				     (unsigned long long)evs[i].data.u64);
}

/*
 * Collect events for up to ms milliseconds (stopping early once `want`
 * events were seen, if want > 0) into a per-data count.  Returns total.
 */
static inline int t_collect(struct uepoll *u, int ms, int want, unsigned *count, unsigned ndata)
{
	struct epoll_event evs[64];
	int total = 0;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int r = uepoll_wait(u, evs, 64, 10);

		if (r < 0)
			FAIL("uepoll_wait: %s", strerror(-r));
		t_check_distinct(evs, r);
		for (int i = 0; i < r; i++) {
			if (evs[i].data.u64 < ndata)
				count[evs[i].data.u64]++;
			total++;
		}
		if (want > 0 && total >= want)
			return total;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= ms)
			return total;
	}
}

/*
 * The library's rule for the adaptive spin window's default: a fine
 * CLOCK_MONOTONIC and more than one CPU to run on (src/uepoll.c,
 * adapt_by_default()).
 */
static inline int t_adapt_default(void)
{
	struct timespec r;
	cpu_set_t cpus;

	if (clock_getres(CLOCK_MONOTONIC, &r) || r.tv_sec || r.tv_nsec > 1000)
		return 0;
	return sched_getaffinity(0, sizeof(cpus), &cpus) || CPU_COUNT(&cpus) > 1;
}

/* a producer thread (t_produce()): rounds writes to fd, each gap_us
 * after the consumer stored seen = the rounds it harvested (release) */
struct t_producer {
	int fd;
	int rounds;
	unsigned gap_us;
	int seen;		/* atomic */
};

static inline void *t_produce(void *arg)
{
	struct t_producer *p = arg;

	for (int i = 0; i < p->rounds; i++) {
		while (__atomic_load_n(&p->seen, __ATOMIC_ACQUIRE) < i)
			sched_yield();
		if (p->gap_us)
			usleep(p->gap_us);
		t_write(p->fd);
	}
	return NULL;
}

/*
 * n events gap_us apart (a t_produce() thread writing the eventfd fd,
 * registered edge-triggered with data 9), each waited for, harvested
 * and read; the instance's counters before and after, in *a, *b.
 */
static inline void t_rounds(struct uepoll *u, int fd, int n, unsigned gap_us,
			    struct uepoll_stats *a, struct uepoll_stats *b)
{
	struct t_producer p = { .fd = fd, .rounds = n, .gap_us = gap_us };
	struct epoll_event ev[2];
	pthread_t th;

	CHECK_EQ(uepoll_get_stats(u, a), 0);
	CHECK_EQ(pthread_create(&th, NULL, t_produce, &p), 0);
	for (int i = 0; i < n; i++) {
		int r;

		while ((r = uepoll_wait(u, ev, 2, 5000)) == -EINTR)
			;
		CHECK_EQ(r, 1);
		CHECK_EQ(ev[0].data.u64, 9);
		t_read(fd);
		__atomic_store_n(&p.seen, i + 1, __ATOMIC_RELEASE);
	}
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(uepoll_get_stats(u, b), 0);
}

/* run fn in a child process (a variable the library reads once per
 * process, set there first); its exit status, 128 + the signal if killed */
static inline int t_in_child(int (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid)
		_exit(fn());
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* t_env_rejected(): the variable and value its child sets */
static const char *t_env_var, *t_env_value;

static inline int t_env_rejected_child(void)
{
	struct uepoll u;

	setenv(t_env_var, t_env_value, 1);
	for (int i = 0; i < 2; i++) {
		errno = 1234;
		if (uepoll_init(&u, 4, 0) != -EINVAL || errno != 1234)
			return 1;
	}
	return 0;
}

/* 1 if, with var=value, every uepoll_init() of a new process fails with
 * -EINVAL and leaves errno alone (a variable read once per process:
 * checked in a child, twice) */
static inline int t_env_rejected(const char *var, const char *value)
{
	t_env_var = var;
	t_env_value = value;
	return t_in_child(t_env_rejected_child) == 0;
}

#endif
