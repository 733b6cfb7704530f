// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * spin_adapt: uepoll_set_spin_adapt() and UEPOLL_SPIN_ADAPT.  With a
 * spin budget of 0, only the adaptive window spins, so the counters say
 * what it did:
 *   - events that come about 100 us after each harvest: the window (of
 *     up to 65536 checks, 2 ms at 35 ns a check) grows and the wait stops
 *     sleeping (native, uring; epoll has no ring);
 *   - the same without the window: every wait sleeps (the control);
 *   - then events 50 ms apart, beyond the largest window even at TCG's
 *     280 ns a check: the window shrinks back to nothing, so spin phases
 *     stop after a few sleeps;
 *   - bad windows, dead instances and a malformed UEPOLL_SPIN_ADAPT get
 *     their errno, and errno is left alone.
 * With a coarse CLOCK_MONOTONIC (jiffies) the default window is 0 and
 * the timing checks are left out; the rest runs.
 */
#include <pthread.h>
#include "helpers.h"

#define FAST_ROUNDS	200
#define SLOW_ROUNDS	30

struct producer {
	int fd;
	int rounds;
	unsigned gap_us;
	int seen;		/* rounds the consumer harvested (atomic) */
};

static int fine_clock(void)
{
	struct timespec r;

	return clock_getres(CLOCK_MONOTONIC, &r) == 0 && r.tv_sec == 0 && r.tv_nsec <= 1000;
}

/* a write gap_us after the consumer harvested the previous one */
static void *produce(void *arg)
{
	struct producer *p = arg;

	for (int i = 0; i < p->rounds; i++) {
		while (__atomic_load_n(&p->seen, __ATOMIC_ACQUIRE) < i)
			sched_yield();
		usleep(p->gap_us);
		t_write(p->fd);
	}
	return NULL;
}

/* rounds events gap_us apart; the counters before and after, in *a, *b */
static void rounds(struct uepoll *u, int fd, int n, unsigned gap_us,
		   struct uepoll_stats *a, struct uepoll_stats *b)
{
	struct producer p = { .fd = fd, .rounds = n, .gap_us = gap_us };
	struct epoll_event ev[2];
	pthread_t th;

	CHECK_EQ(uepoll_get_stats(u, a), 0);
	CHECK_EQ(pthread_create(&th, NULL, produce, &p), 0);
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

int main(void)
{
	struct uepoll u, dead, zero;
	struct uepoll_stats a, b;
	int fd, fds0 = count_fds(), ring, timing;

	t_init(&u, 4);
	ring = uepoll_backend(&u) != UEPOLL_BACKEND_EPOLL;
	/* valgrind runs one thread at a time: a spin cannot see the producer;
	 * a coarse clock (jiffies: a guest's TSC not calibrated) cannot tell
	 * a short sleep from a long one, and the library's default is off */
	timing = ring && !under_valgrind() && fine_clock();
	fd = t_efd();
	CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, 9), 0);
	CHECK_EQ(uepoll_set_spin(&u, 0), 0);

	/* the default window, and the limits */
	CHECK_EQ(u.spin_max, fine_clock() ? UEPOLL_SPIN_ADAPT_DEFAULT : 0);
	CHECK_EQ(uepoll_set_spin_adapt(&u, UEPOLL_SPIN_MAX + 1), -EINVAL);
	CHECK_EQ(uepoll_set_spin_adapt(&u, UEPOLL_SPIN_MAX), 0);

	/* the control: no window, budget 0, every wait sleeps */
	CHECK_EQ(uepoll_set_spin_adapt(&u, 0), 0);
	rounds(&u, fd, FAST_ROUNDS, 100, &a, &b);
	CHECK_EQ(b.spins, a.spins);
	if (timing)
		CHECK(b.sleeps - a.sleeps >= FAST_ROUNDS * 3 / 4);

	/* a window: it grows until it covers the gap; sleeps stop */
	CHECK_EQ(uepoll_set_spin_adapt(&u, 65536), 0);
	rounds(&u, fd, FAST_ROUNDS, 100, &a, &b);
	printf("%s: %d rounds 100 us apart: %llu sleeps, %llu spins; window %u checks, "
	       "%u ps a check\n", uepoll_backend_name(&u), FAST_ROUNDS,
	       (unsigned long long)(b.sleeps - a.sleeps), (unsigned long long)(b.spins - a.spins),
	       u.spin_window, u.spin_check_ps);
	if (timing) {
		CHECK(b.sleeps - a.sleeps < FAST_ROUNDS / 4);
		CHECK(b.spins - a.spins > FAST_ROUNDS / 2);
	} else if (!ring) {
		CHECK_EQ(b.spins, a.spins);
	}

	/* 50 ms gaps: each sleep halves the window; a spin phase is made
	 * only while it is not 0 (65536 -> 64 checks: 10 halvings) */
	rounds(&u, fd, SLOW_ROUNDS, 50000, &a, &b);
	if (timing)
		CHECK(b.spins - a.spins <= 12);
	CHECK(b.sleeps - a.sleeps >= SLOW_ROUNDS - 10);

	/* not initialised, and after exit */
	memset(&zero, 0, sizeof(zero));
	CHECK_EQ(uepoll_set_spin_adapt(&zero, 1), -EINVAL);
	CHECK_EQ(uepoll_set_spin_adapt(NULL, 1), -EINVAL);
	t_init(&dead, 2);
	uepoll_exit(&dead);
	errno = 1234;
	CHECK_EQ(uepoll_set_spin_adapt(&dead, 1), -EBADF);
	CHECK_EQ(errno, 1234);

	/* UEPOLL_SPIN_ADAPT: the default of the next instances */
	setenv("UEPOLL_SPIN_ADAPT", "0", 1);
	t_init(&dead, 2);
	CHECK_EQ(dead.spin_max, 0);
	uepoll_exit(&dead);
	setenv("UEPOLL_SPIN_ADAPT", "1048576", 1);
	t_init(&dead, 2);
	CHECK_EQ(dead.spin_max, UEPOLL_SPIN_MAX);
	uepoll_exit(&dead);
	const char *bad[] = { "x", "-1", "12a", "1048577", "99999999999999999999" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("UEPOLL_SPIN_ADAPT", bad[i], 1);
		errno = 1234;
		CHECK_EQ(uepoll_init(&dead, 2, 0), -EINVAL);
		CHECK_EQ(errno, 1234);
	}
	unsetenv("UEPOLL_SPIN_ADAPT");

	uepoll_exit(&u);
	close(fd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
