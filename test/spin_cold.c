// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * spin_cold: with the adaptive window on, a wait skips its spin phase
 * after UEPOLL_SPIN_COLD sleeps in a row each longer than its whole spin
 * (the budget and the largest window), and spins again once a sleep ends
 * sooner or a spin setting changes (uepoll_set_spin(3)):
 *   - events 20 ms apart at the default budget (256 checks) and window
 *     (4096): the first waits spin, then no more; every wait sleeps;
 *   - then events right after each harvest: the first short sleep
 *     starts the spins again;
 *   - uepoll_set_spin() and uepoll_set_spin_adapt() start them again;
 *   - the control, in a child with UEPOLL_SPIN_COLD=0: every wait of
 *     the 20 ms rounds spins;
 *   - a malformed UEPOLL_SPIN_COLD fails uepoll_init() with EINVAL, every
 *     time, errno left alone (read once per process: checked in a child).
 * native, uring; epoll has no spin phase.  Where the window is off by
 * default (a coarse clock, one CPU) or under valgrind (one thread runs at
 * a time) the timing is not measured: skipped.
 */
#include <pthread.h>
#include <sched.h>
#include "helpers.h"

#define SLOW_ROUNDS	15
#define SLOW_GAP_US	20000
#define FAST_ROUNDS	200

/* n events gap_us apart; the spin phases and sleeps of their waits */
static void rounds(struct uepoll *u, int fd, int n, unsigned gap_us, uint64_t *spins,
		   uint64_t *sleeps)
{
	struct uepoll_stats a, b;

	t_rounds(u, fd, n, gap_us, &a, &b);
	*spins = b.spins - a.spins;
	*sleeps = b.sleeps - a.sleeps;
}

/* an instance with the defaults and an eventfd (data 9) */
static void setup(struct uepoll *u, int *fd)
{
	t_init(u, 4);
	if (uepoll_backend(u) == UEPOLL_BACKEND_EPOLL)
		SKIP("the epoll backend has no spin phase");
	CHECK_EQ(u->spin, UEPOLL_SPIN_DEFAULT);
	CHECK_EQ(u->spin_max, UEPOLL_SPIN_ADAPT_DEFAULT);
	*fd = t_efd();
	CHECK_EQ(t_add(u, *fd, EPOLLIN | EPOLLET, 9), 0);
}

/* the child of control(): the slow rounds with UEPOLL_SPIN_COLD=0 */
static int control_child(void)
{
	uint64_t spins, sleeps;
	struct uepoll u;
	int fd;

	setenv("UEPOLL_SPIN_COLD", "0", 1);
	setup(&u, &fd);
	rounds(&u, fd, SLOW_ROUNDS, SLOW_GAP_US, &spins, &sleeps);
	printf("%s: UEPOLL_SPIN_COLD=0, %d rounds %d ms apart: %llu spins, %llu sleeps\n",
	       uepoll_backend_name(&u), SLOW_ROUNDS, SLOW_GAP_US / 1000,
	       (unsigned long long)spins, (unsigned long long)sleeps);
	fflush(stdout);
	/* every wait spins before it sleeps */
	CHECK(spins >= SLOW_ROUNDS);
	CHECK(u.spin_cold >= UEPOLL_SPIN_COLD_DEFAULT);	/* counted, not used */
	uepoll_exit(&u);
	close(fd);
	return 0;
}

static int largest_child(void)
{
	struct uepoll u;

	int ret;

	setenv("UEPOLL_SPIN_COLD", "255", 1);
	ret = uepoll_init(&u, 4, 0);
	if (ret == -EINVAL)
		return 1;
	if (!ret)	/* (another error: the backend is not here; the runner skips it) */
		uepoll_exit(&u);
	return 0;
}

int main(void)
{
	const char *bad[] = { "x", "-1", "3k", "256", "", "99999999999999999999" };
	uint64_t spins, sleeps;
	int fd, fds0 = count_fds(), st;
	struct uepoll u;

	/* the cold rule alone: where the producer below shares the CPU of
	 * the spinner, every spin fails, and the rule of spins that keep
	 * failing would stop them (test/spin_futile.c) */
	setenv("UEPOLL_SPIN_FUTILE", "0", 1);
	/* before this process's first instance: the children read the
	 * variable at theirs */
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!*bad[i])
			continue;	/* empty: unset, the default (below) */
		if (!t_env_rejected("UEPOLL_SPIN_COLD", bad[i]))
			FAIL("UEPOLL_SPIN_COLD=%s: uepoll_init() did not fail with EINVAL", bad[i]);
	}
	CHECK_EQ(t_in_child(largest_child), 0);
	setenv("UEPOLL_SPIN_COLD", "", 1);	/* empty: the default */

	if (under_valgrind())
		SKIP("valgrind runs one thread at a time");
	if (!t_adapt_default())
		SKIP("no adaptive window by default here (coarse clock or one CPU)");
	st = t_in_child(control_child);
	if (st == T_SKIP)
		SKIP("as the control said (above)");
	CHECK_EQ(st, 0);
	setup(&u, &fd);

	/* slow: the first UEPOLL_SPIN_COLD_DEFAULT waits spin, the rest
	 * sleep at once.  A wake-up that comes soon (a sleep cut short by a
	 * stray signal, none here) would start the spins again: a margin of
	 * two */
	rounds(&u, fd, SLOW_ROUNDS, SLOW_GAP_US, &spins, &sleeps);
	printf("%s: %d rounds %d ms apart: %llu spins, %llu sleeps, cold %u\n",
	       uepoll_backend_name(&u), SLOW_ROUNDS, SLOW_GAP_US / 1000,
	       (unsigned long long)spins, (unsigned long long)sleeps, u.spin_cold);
	CHECK(spins >= 1);
	CHECK(spins <= UEPOLL_SPIN_COLD_DEFAULT + 2);
	CHECK(sleeps >= SLOW_ROUNDS - 1);
	CHECK(u.spin_cold >= UEPOLL_SPIN_COLD_DEFAULT);

	/* fast: the write follows the harvest at once, the first sleep is
	 * short, and the waits spin again (most find the event spinning) */
	rounds(&u, fd, FAST_ROUNDS, 0, &spins, &sleeps);
	printf("%s: %d rounds back to back: %llu spins, %llu sleeps, cold %u\n",
	       uepoll_backend_name(&u), FAST_ROUNDS, (unsigned long long)spins,
	       (unsigned long long)sleeps, u.spin_cold);
	CHECK(spins >= FAST_ROUNDS / 2);

	/* cold again; a setting changed starts the spins again */
	rounds(&u, fd, UEPOLL_SPIN_COLD_DEFAULT + 1, SLOW_GAP_US, &spins, &sleeps);
	CHECK(u.spin_cold >= UEPOLL_SPIN_COLD_DEFAULT);
	CHECK_EQ(uepoll_set_spin(&u, UEPOLL_SPIN_DEFAULT), 0);
	CHECK_EQ(u.spin_cold, 0);
	rounds(&u, fd, UEPOLL_SPIN_COLD_DEFAULT + 1, SLOW_GAP_US, &spins, &sleeps);
	CHECK(u.spin_cold >= UEPOLL_SPIN_COLD_DEFAULT);
	CHECK_EQ(uepoll_set_spin_adapt(&u, UEPOLL_SPIN_ADAPT_DEFAULT), 0);
	CHECK_EQ(u.spin_cold, 0);

	uepoll_exit(&u);
	close(fd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
