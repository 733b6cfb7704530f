// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * spin_rate: the adaptive spin's measured cost of a ring check
 * (u->spin_check_ps, uepoll_set_spin_adapt(3)) is not thrown off by one
 * spin that lost its CPU.  The window is counted in checks and a sleep is
 * converted to checks at that rate: a rate inflated by a stall makes a
 * long sleep look short and grows the window for it (under TCG a spin of
 * 768 checks once took 10 ms, and the 50 ms sleeps of spin_adapt grew
 * the window instead of shrinking it).
 *
 * White box: it calls the library's internal __uepoll_spin() with its
 * own ready() (see the Makefile: this test links the static library),
 * and reads the instance's private fields.
 *   - 10 spins of 100 quick checks: the rate is measured;
 *   - one spin in which one check stalls 20 ms (200 us a check on
 *     average, thousands of times the measured rate): the rate grows by
 *     at most a quarter;
 *   - 10 spins whose every check takes at least 50 us: a real slowdown
 *     still gets through, the rate grows past 4 times the quick one.
 */
#include "helpers.h"
#include "../src/internal.h"	/* __uepoll_spin(), as the library has it */

static unsigned calls, stall_at = ~0u;
static long check_ns;

static void sleep_ns(long ns)
{
	struct timespec t = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };

	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

/* never ready; check number stall_at sleeps 20 ms, each sleeps check_ns */
static int ready(struct uepoll *u)
{
	(void)u;
	if (calls++ == stall_at)
		sleep_ns(20000000);
	if (check_ns)
		sleep_ns(check_ns);
	return 0;
}

static void spins(struct uepoll *u, int n)
{
	for (int i = 0; i < n; i++) {
		calls = 0;
		u->spin_window = 0;		/* each spin is 100 checks */
		CHECK_EQ(__uepoll_spin(u, ready), 0);
		CHECK_EQ(calls, 100);
	}
}

int main(void)
{
	struct uepoll u;
	uint32_t quick, stalled;

	/* a place among the spinners even where the process has one CPU;
	 * every spin here fails: not stopped for it (test/spin_futile.c) */
	setenv("UEPOLL_SPIN_THREADS", "1", 1);
	setenv("UEPOLL_SPIN_FUTILE", "0", 1);
	t_init(&u, 2);
	CHECK_EQ(uepoll_set_spin(&u, 100), 0);
	CHECK_EQ(uepoll_set_spin_adapt(&u, 65536), 0);

	spins(&u, 10);
	quick = u.spin_check_ps;
	CHECK(quick > 0);

	stall_at = 50;
	spins(&u, 1);
	stall_at = ~0u;
	stalled = u.spin_check_ps;
	printf("%s: a check %u ps; after a spin with a 20 ms stall %u ps\n",
	       uepoll_backend_name(&u), quick, stalled);
	CHECK(stalled <= quick + quick / 4 + 1);

	check_ns = 50000;
	spins(&u, 10);
	printf("%s: after 10 spins at >= 50 us a check: %u ps\n",
	       uepoll_backend_name(&u), u.spin_check_ps);
	CHECK(u.spin_check_ps > 4 * (uint64_t)quick);

	uepoll_exit(&u);
	return 0;
}
