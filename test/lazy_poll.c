// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * lazy_poll: uepoll_set_lazy_poll(3).
 *  - errors: NULL or a zeroed instance -EINVAL, more than
 *    UEPOLL_LAZY_POLL_MAX -EINVAL, after uepoll_exit() -EBADF; 0 and the
 *    maximum are accepted on every backend;
 *  - native with level-triggered registrations in the ring (a kernel with
 *    EPOLL_USERPOLL_LEVEL), and uring (its level list's poll(2)),
 *    passes = 2: a level-triggered event still
 *    ready waits while harvests find new events, two of them, without a
 *    system call; the third asks and reports it with the new one; a
 *    harvest that finds nothing new asks at once; a wait that would sleep
 *    returns it at once; events noted across harvests whose question
 *    waited are all asked about (a drained hint for one does not spare
 *    the question for another: C, ready when added, comes with the
 *    question about A waiting);
 *  - epoll (and native with the level epoll): the setting changes
 *    nothing, a still-ready event is reported at every harvest.
 *  - uring, a fired ONESHOT level-triggered registration that a lazy
 *    harvest left on the level list is not reported again by the poll
 *    that follows.
 */
#include <time.h>
#include "helpers.h"

#define A	1	/* level-triggered, left ready */
#define B	2	/* edge-triggered, written before each harvest */
#define C	3	/* level-triggered, reported with B once, then drained */

static struct uepoll u;
static int exact;	/* the setting changes nothing here */
static int a_ready;	/* A written and not read */

static uint64_t sys_now(void)
{
	struct uepoll_stats st;

	CHECK_EQ(uepoll_get_stats(&u, &st), 0);
	return st.syscalls;
}

/* one harvest: a bit per data reported; its system calls in *sys */
static unsigned harvest(uint64_t *sys)
{
	struct epoll_event evs[8];
	uint64_t s0 = sys_now();
	unsigned seen = 0;
	int n = uepoll_harvest(&u, evs, 8), i;

	CHECK(n >= 0);
	*sys = sys_now() - s0;
	for (i = 0; i < n; i++) {
		CHECK(evs[i].data.u64 >= A && evs[i].data.u64 <= C);
		CHECK(!(seen & (1u << evs[i].data.u64)));
		seen |= 1u << evs[i].data.u64;
	}
	return seen;
}

static void expect(unsigned want, long want_sys, const char *what)
{
	uint64_t sys;
	unsigned seen = harvest(&sys);

	if (exact && a_ready)
		want |= 1u << A;	/* A stays ready: reported every time */
	if (seen != want)
		FAIL("%s: reported 0x%x, expected 0x%x", what, seen, want);
	if (!exact && want_sys >= 0 && (long)sys != want_sys)
		FAIL("%s: %llu system calls, expected %ld", what, (unsigned long long)sys, want_sys);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void errors(void)
{
	struct uepoll z;

	memset(&z, 0, sizeof(z));
	CHECK_EQ(uepoll_set_lazy_poll(NULL, 1), -EINVAL);
	CHECK_EQ(uepoll_set_lazy_poll(&z, 1), -EINVAL);
	CHECK_EQ(uepoll_set_lazy_poll(&u, UEPOLL_LAZY_POLL_MAX + 1), -EINVAL);
	CHECK_EQ(uepoll_set_lazy_poll(&u, UEPOLL_LAZY_POLL_MAX), 0);
	CHECK_EQ(uepoll_set_lazy_poll(&u, 0), 0);
}

/*
 * A level-triggered ONESHOT registration left ready: reported once,
 * whether the harvest that reported it left the polls or not (uring: a
 * lazy harvest leaves it on the level list, fired; the poll of the next
 * harvest must not report it again).
 */
static void oneshot_once(void)
{
	struct epoll_event evs[4];
	int d = t_efd(), n, i, seen = 0;

	CHECK_EQ(uepoll_set_lazy_poll(&u, 2), 0);
	t_write(d);
	CHECK_EQ(t_add(&u, d, EPOLLIN | EPOLLONESHOT, 4), 0);
	for (i = 0; i < 4; i++) {
		n = uepoll_harvest(&u, evs, 4);
		CHECK(n >= 0);
		for (int k = 0; k < n; k++) {
			CHECK_EQ(evs[k].data.u64, 4);
			seen++;
		}
	}
	if (seen != 1)
		FAIL("a level-triggered ONESHOT event reported %d times", seen);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, d, NULL), 0);
	CHECK_EQ(uepoll_set_lazy_poll(&u, 0), 0);
	close(d);
}

int main(void)
{
	struct epoll_event ev;
	int a, b, c, caps, saved;
	double t0;

	t_init(&u, 8);
	caps = uepoll_backend_caps((unsigned)uepoll_backend(&u));
	CHECK(caps >= 0);
	errors();
	if (!(caps & UEPOLL_CAP_LEVEL))
		SKIP("backend %s has no level-triggered registrations", uepoll_backend_name(&u));
	exact = !t_native_klevel(&u) && strcmp(uepoll_backend_name(&u), "uring");
	printf("lazy_poll: %s: %s\n", uepoll_backend_name(&u),
	       exact ? "exact reports (the setting changes nothing)" : "the question waits");

	a = t_efd();
	b = t_efd();
	c = t_efd();
	CHECK_EQ(t_add(&u, a, EPOLLIN, A), 0);
	CHECK_EQ(t_add(&u, b, EPOLLIN | EPOLLET, B), 0);
	CHECK_EQ(uepoll_set_lazy_poll(&u, 2), 0);

	t_write(a);
	a_ready = 1;
	expect(1u << A, -1, "A's first event");
	t_write(b);
	expect(1u << B, 0, "new event: the question waits (1)");
	t_write(b);
	expect(1u << B, 0, "new event: the question waits (2)");
	t_write(b);
	expect(1u << A | 1u << B, 1, "third: asked, with the new event");
	expect(1u << A, 1, "nothing new: asked at once");

	/* a wait that would sleep asks: A at once */
	t0 = now_ms();
	CHECK_EQ(uepoll_wait(&u, &ev, 1, 5000), 1);
	CHECK_EQ(ev.data.u64, A);
	if (now_ms() - t0 > 2500)
		FAIL("the wait took %.0f ms for an event still ready", now_ms() - t0);

	/*
	 * Events of two harvests, one question: a hint for C spares nothing.
	 * C is ready when it is added: its ADD's poll puts it in the ring
	 * (a wake-up of a level-triggered registration would be polled by
	 * the question itself).
	 */
	t_write(c);
	CHECK_EQ(t_add(&u, c, EPOLLIN, C), 0);
	expect(1u << C, 0, "C noted with the question about A waiting");
	CHECK_EQ(t_read(c), 1);
	CHECK_EQ(uepoll_drained(&u, c, EPOLLIN), 0);
	expect(1u << A, 1, "C drained and said so: A is still asked about");

	/* drained: the question finds nothing, then nothing is asked */
	CHECK_EQ(t_read(a), 1);
	a_ready = 0;
	expect(0, exact ? -1 : 1, "A drained: asked, nothing");
	expect(0, 0, "idle");

	/* 0: epoll's reports again */
	CHECK_EQ(uepoll_set_lazy_poll(&u, 0), 0);
	t_write(a);
	a_ready = 1;
	expect(1u << A, 1, "A again");
	t_write(b);
	saved = exact;
	exact = 1;
	expect(1u << B, -1, "lazy off: asked with the new event");
	exact = saved;
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, a, NULL), 0);	/* (left ready) */
	oneshot_once();

	uepoll_exit(&u);
	CHECK_EQ(uepoll_set_lazy_poll(&u, 1), -EBADF);
	close(a);
	close(b);
	close(c);
	return 0;
}
