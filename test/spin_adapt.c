// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * spin_adapt: uepoll_set_spin_adapt() and UEPOLL_SPIN_ADAPT.  With a
 * spin budget of 0, only the adaptive window spins, so the counters say
 * what it did:
 *   - events that come about 100 us after each harvest: the window (of
 *     up to UEPOLL_SPIN_MAX checks) grows and the wait stops sleeping
 *     (native, uring; epoll has no ring);
 *   - the same without the window: every wait sleeps (the control);
 *   - then events 50 ms apart, eight times the largest window at the
 *     rate the spins measured: the window shrinks back to nothing, so
 *     spin phases stop after a few sleeps;
 *   - bad windows, dead instances and a malformed UEPOLL_SPIN_ADAPT get
 *     their errno, and errno is left alone.
 * With a coarse CLOCK_MONOTONIC (jiffies) or one CPU to run on, the
 * default window is 0 and the timing checks are left out; the rest
 * runs (a window that grew past its first step must have made spin
 * phases), and pinned to one CPU a new instance must have no window
 * unless UEPOLL_SPIN_ADAPT asks for one.  UEPOLL_SPIN_COLD=0: no spin is
 * skipped after long sleeps (test/spin_cold), so the spins counted are
 * the window's.
 */
#include <pthread.h>
#include <sched.h>
#include "helpers.h"

#define FAST_ROUNDS	200
#define SLOW_ROUNDS	30

/* pinned to one CPU, a new instance has no window unless asked for */
static void one_cpu(void)
{
	cpu_set_t all, one;
	struct uepoll v;
	int cpu;

	CHECK_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
	for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &all); cpu++)
		;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	CHECK_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
	t_init(&v, 2);
	CHECK_EQ(v.spin_max, 0);
	uepoll_exit(&v);
	setenv("UEPOLL_SPIN_ADAPT", "4096", 1);
	t_init(&v, 2);
	CHECK_EQ(v.spin_max, 4096);
	uepoll_exit(&v);
	unsetenv("UEPOLL_SPIN_ADAPT");
	CHECK_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
}

int main(void)
{
	struct uepoll u, dead, zero;
	struct uepoll_stats a, b;
	int fd, fds0 = count_fds(), ring, timing;

	/* the window alone: no spin skipped after long sleeps (spin_cold) */
	setenv("UEPOLL_SPIN_COLD", "0", 1);
	t_init(&u, 4);
	ring = uepoll_backend(&u) != UEPOLL_BACKEND_EPOLL;
	/* valgrind runs one thread at a time: a spin cannot see the producer;
	 * a coarse clock (jiffies: a guest's TSC not calibrated) cannot tell
	 * a short sleep from a long one, and the library's default is off */
	timing = ring && !under_valgrind() && t_adapt_default();
	fd = t_efd();
	CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, 9), 0);
	CHECK_EQ(uepoll_set_spin(&u, 0), 0);

	/* the default window, and the limits */
	CHECK_EQ(u.spin_max, t_adapt_default() ? UEPOLL_SPIN_ADAPT_DEFAULT : 0);
	CHECK_EQ(uepoll_set_spin_adapt(&u, UEPOLL_SPIN_MAX + 1), -EINVAL);
	CHECK_EQ(uepoll_set_spin_adapt(&u, UEPOLL_SPIN_MAX), 0);

	/* the control: no window, budget 0, every wait sleeps */
	CHECK_EQ(uepoll_set_spin_adapt(&u, 0), 0);
	t_rounds(&u, fd, FAST_ROUNDS, 100, &a, &b);
	CHECK_EQ(b.spins, a.spins);
	if (timing)
		CHECK(b.sleeps - a.sleeps >= FAST_ROUNDS * 3 / 4);

	/* the largest window (about 27 ms on the host): it grows until it
	 * covers the gap, even where a loaded machine runs the producer late;
	 * sleeps stop.  Up to three tries (a window that never grows fails
	 * all three) */
	CHECK_EQ(uepoll_set_spin_adapt(&u, UEPOLL_SPIN_MAX), 0);
	for (int try = 0; try < 3; try++) {
		t_rounds(&u, fd, FAST_ROUNDS, 100, &a, &b);
		printf("%s: %d rounds 100 us apart: %llu sleeps, %llu spins; window %u checks, "
		       "%u ps a check\n", uepoll_backend_name(&u), FAST_ROUNDS,
		       (unsigned long long)(b.sleeps - a.sleeps),
		       (unsigned long long)(b.spins - a.spins), u.spin_window, u.spin_check_ps);
		if (!timing || b.sleeps - a.sleeps < FAST_ROUNDS / 4)
			break;
	}
	if (timing) {
		CHECK(b.sleeps - a.sleeps < FAST_ROUNDS / 4);
		CHECK(b.spins - a.spins > FAST_ROUNDS / 2);
	} else if (!ring) {
		CHECK_EQ(b.spins, a.spins);
	}
	/* whatever the clock says: a window past its first step (64 checks)
	 * was there at the start of some wait of these rounds, which then
	 * made a spin phase (a phase counts, found or not) */
	if (ring && u.spin_window > 64)
		CHECK(b.spins - a.spins > 0);

	/* events 50 ms apart and a window of at most an eighth of that at the
	 * rate the spins measured (up to 65536 checks: 2 ms on the host, 18 ms
	 * under TCG; the margin is for spins slowed down later, by interrupts
	 * of the guest's console after a printf): each sleep halves the
	 * window; a spin phase is made only while it is not 0 (65536 -> 64
	 * checks: 10 halvings) */
	uint64_t ps = u.spin_check_ps ? u.spin_check_ps : 35000, slow_max = 64;

	while (slow_max < 65536 && 2 * slow_max * ps * 8 <= 50000ull * 1000000)
		slow_max *= 2;
	CHECK_EQ(uepoll_set_spin_adapt(&u, (unsigned)slow_max), 0);
	CHECK(u.spin_window <= slow_max);
	t_rounds(&u, fd, SLOW_ROUNDS, 50000, &a, &b);
	printf("%s: %d rounds 50 ms apart, window at most %llu checks: %llu sleeps, "
	       "%llu spins; window %u checks, %u ps a check\n", uepoll_backend_name(&u),
	       SLOW_ROUNDS, (unsigned long long)slow_max, (unsigned long long)(b.sleeps - a.sleeps),
	       (unsigned long long)(b.spins - a.spins), u.spin_window, u.spin_check_ps);
	if (timing) {
		CHECK(b.spins - a.spins <= 12);
		CHECK_EQ(u.spin_window, 0);
	}
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
	one_cpu();

	uepoll_exit(&u);
	close(fd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
