// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * level: what a level-triggered registration costs, where the backend
 * takes one (UEPOLL_CAP_LEVEL; skipped elsewhere).  test/oracle_lt.c
 * checks what is reported against plain epoll; this checks the system
 * calls (uepoll_get_stats()) on a backend that harvests without one
 * (native, uring):
 *  - while the file stays ready, every harvest reports it again, with
 *    one system call (the poll of uepoll_ctl(3)'s Level-triggered
 *    section: rechecks), as epoll_wait(2) would make one;
 *  - once a harvest found it drained, and while nothing happens, a
 *    harvest makes no system call;
 *  - uepoll_drained(3) spares the poll: after it, no system call and no
 *    event until the next wake-up, which is reported again;
 *  - a hint for some bits polls the others (EPOLLOUT stays reported);
 *  - ONESHOT: one event until MOD; MOD to edge-triggered: one event;
 *    DEL: nothing more;
 *  - uepoll_drained() errors: -EBADF (fd < 0, after uepoll_exit()),
 *    -EINVAL (NULL, not initialised); 0 for a file not registered;
 *  - both kinds together (mixed()): the capacity, the data
 *    UEPOLL_LEVEL_DATA, a MOD to level-triggered, DEL then ADD;
 *  - a wait that would sleep asks in its sleep (waits()).
 * On the epoll backend (the kernel's own level-triggered epoll) every
 * harvest is one epoll_wait(2) anyway: the cost checks are skipped, the
 * reports are checked all the same.
 */
#include <pthread.h>
#include "helpers.h"

static struct uepoll u;
static int counted;	/* harvests without events make no system call */

static uint64_t sys_now(void)
{
	struct uepoll_stats st;

	CHECK_EQ(uepoll_get_stats(&u, &st), 0);
	return st.syscalls;
}

/* one harvest: its events (data of the first, or 0) and syscalls made */
static int harvest(uint64_t *data, uint32_t *events, uint64_t *sys)
{
	struct epoll_event evs[8];
	uint64_t s0 = sys_now();
	int n = uepoll_harvest(&u, evs, 8);

	CHECK(n >= 0);
	*sys = sys_now() - s0;
	*data = n ? evs[0].data.u64 : 0;
	*events = n ? evs[0].events : 0;
	return n;
}

static void expect(int want_n, uint64_t want_data, uint32_t want_ev, long want_sys, const char *what)
{
	uint64_t data, sys;
	uint32_t ev;
	int n = harvest(&data, &ev, &sys);

	if (n != want_n || (n && (data != want_data || ev != want_ev)))
		FAIL("%s: %d events (data %llu, events 0x%x), expected %d (data %llu, 0x%x)",
		     what, n, (unsigned long long)data, ev, want_n,
		     (unsigned long long)want_data, want_ev);
	if (counted && want_sys >= 0 && (long)sys != want_sys)
		FAIL("%s: %llu system calls, expected %ld", what, (unsigned long long)sys, want_sys);
}

/*
 * Level- and edge-triggered together, n = 4: both kinds count against n
 * (on native the level-triggered ones live elsewhere than the ring, and
 * their epoll takes a ring slot while it exists); an edge-triggered
 * registration whose data is UEPOLL_LEVEL_DATA reports that data, once;
 * DEL of a level-triggered registration that is still ready, then ADD of
 * the same fd with other data at once: no event with the old data.
 */
static void mixed(void)
{
	struct epoll_event evs[8];
	int fd[5], i, n, seen;

	t_init(&u, 4);
	for (i = 0; i < 5; i++)
		fd[i] = t_efd();
	CHECK_EQ(t_add(&u, fd[0], EPOLLIN | EPOLLET, 100), 0);
	CHECK_EQ(t_add(&u, fd[1], EPOLLIN, 101), 0);
	CHECK_EQ(t_add(&u, fd[2], EPOLLIN, 102), 0);
	CHECK_EQ(t_add(&u, fd[3], EPOLLIN | EPOLLET, UEPOLL_LEVEL_DATA), 0);
	CHECK_EQ(t_add(&u, fd[4], EPOLLIN | EPOLLET, 104), -ENOSPC);
	CHECK_EQ(t_add(&u, fd[4], EPOLLIN, 104), -ENOSPC);
	/* the edge-triggered one with the reserved data */
	t_write(fd[3]);
	n = uepoll_harvest(&u, evs, 8);
	CHECK_EQ(n, 1);
	CHECK(evs[0].data.u64 == UEPOLL_LEVEL_DATA);
	CHECK_EQ(evs[0].events, EPOLLIN);
	CHECK_EQ(uepoll_harvest(&u, evs, 8), 0);
	/* every level-triggered one gone: four edge-triggered fit */
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fd[1], NULL), 0);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fd[2], NULL), 0);
	CHECK_EQ(t_add(&u, fd[1], EPOLLIN | EPOLLET, 201), 0);
	CHECK_EQ(t_add(&u, fd[2], EPOLLIN | EPOLLET, 202), 0);
	CHECK_EQ(t_add(&u, fd[4], EPOLLIN | EPOLLET, 204), -ENOSPC);
	/* MOD of an edge-triggered one to level-triggered, full instance */
	t_write(fd[2]);
	CHECK_EQ(t_mod(&u, fd[2], EPOLLIN, 302), 0);
	for (i = 0; i < 3; i++) {
		n = uepoll_harvest(&u, evs, 8);
		CHECK_EQ(n, 1);
		CHECK_EQ(evs[0].data.u64, 302);
	}
	/* DEL while ready, ADD at once with other data */
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fd[2], NULL), 0);
	CHECK_EQ(t_add(&u, fd[2], EPOLLIN, 402), 0);
	for (i = 0, seen = 0; i < 3; i++) {
		n = uepoll_harvest(&u, evs, 8);
		CHECK_EQ(n, 1);
		if (evs[0].data.u64 != 402)
			FAIL("event with data %llu after DEL and ADD",
			     (unsigned long long)evs[0].data.u64);
		seen++;
	}
	CHECK_EQ(seen, 3);
	uepoll_exit(&u);
	for (i = 0; i < 5; i++)
		close(fd[i]);
}

/* uepoll_wait(): its events and the system calls it made */
static int wait_counted(int ms, uint64_t *sys)
{
	struct epoll_event evs[8];
	uint64_t s0 = sys_now();
	int n = uepoll_wait(&u, evs, 8, ms);

	*sys = sys_now() - s0;
	CHECK(n >= 0);
	CHECK(n == 0 || evs[0].data.u64 == 20 || evs[0].data.u64 == 21);
	return n;
}

/* a write to *arg 50 ms from now, by another thread */
static void *late_write(void *arg)
{
	struct timespec ts = { 0, 50 * 1000000 };

	nanosleep(&ts, NULL);
	t_write(*(int *)arg);
	return NULL;
}

/*
 * uepoll_wait() after a harvest that reported a level-triggered event,
 * nothing pending: "still ready?" rides on the sleep, one system call
 * for both.  native: the ring's repoll of the level epoll, unless the
 * level epoll's last answer, after such a sleep, found only what the
 * answer before had found (it stayed ready: one epoll_wait() answers, a
 * sleep would end at once); where the library folds nothing into a sleep
 * (valgrind, UEPOLL_BATCH=loop) only the reports are checked.  uring:
 * one ppoll() of the ring fd and the files, whose answer the harvest
 * takes (it ends at once while the file stays ready).
 */
static void waits(int folds)
{
	struct epoll_event ev;
	pthread_t t;
	uint64_t s;
	int efd, et, uring, lepoll;

	t_init(&u, 8);
	uring = uepoll_backend(&u) == (int)UEPOLL_BACKEND_URING;
	lepoll = uepoll_backend(&u) == (int)UEPOLL_BACKEND_NATIVE && !t_native_klevel(&u);
	efd = t_efd();
	et = t_efd();
	CHECK_EQ(t_add(&u, efd, EPOLLIN, 20), 0);
	CHECK_EQ(t_add(&u, et, EPOLLIN | EPOLLET, 21), 0);
	/* the first sets the helper ring up */
	t_write(efd);
	CHECK_EQ(wait_counted(1000, &s), 1);
	CHECK_EQ(t_read(efd), 1);
	CHECK_EQ(wait_counted(10, &s), 0);
	/* the same fd after such a sleep: taken for one that stayed ready */
	t_write(efd);
	CHECK_EQ(wait_counted(1000, &s), 1);
	CHECK_EQ(t_read(efd), 1);
	CHECK_EQ(wait_counted(10, &s), 0);	/* (the guess undone) */

	t_write(efd);
	CHECK_EQ(wait_counted(1000, &s), 1);
	CHECK_EQ(t_read(efd), 1);		/* drained: the library cannot know */
	/* an edge-triggered event ends the sleep (a timeout would cost the
	 * cancel of the sleep's poll).  uring: the ring's completion is our
	 * task work, which ends the ppoll() before it posts; the kernel then
	 * re-executes the call: 2 entries, as a poll(2) and a sleep would be */
	CHECK_EQ(pthread_create(&t, NULL, late_write, &et), 0);
	CHECK_EQ(wait_counted(5000, &s), 1);
	CHECK_EQ(pthread_join(t, NULL), 0);
	printf("level: %s: a wait after a drained level-triggered event, ended by another: "
	       "%llu system calls%s\n", uepoll_backend_name(&u), (unsigned long long)s,
	       !folds ? "" : uring ? " (folded: 2)" : " (folded: 1)");
	if (folds)
		CHECK_EQ(s, uring ? 2 : 1);
	CHECK_EQ(t_read(et), 1);
	CHECK_EQ(uepoll_harvest(&u, &ev, 1), 0);

	/* the same, ended by the level-triggered file itself: one entry
	 * (uring: the file's own wake-up ends the ppoll() with its answer;
	 * unfolded, a poll(2) and a sleep would be two; native with
	 * EPOLL_USERPOLL_LEVEL: the sleep, the ring has the event).  Not
	 * counted for the level epoll of kernels without it, whose entry
	 * in the ring is read with calls of its own after the sleep (3) */
	t_write(efd);
	CHECK_EQ(wait_counted(1000, &s), 1);
	CHECK_EQ(t_read(efd), 1);
	CHECK_EQ(pthread_create(&t, NULL, late_write, &efd), 0);
	CHECK_EQ(wait_counted(5000, &s), 1);
	CHECK_EQ(pthread_join(t, NULL), 0);
	printf("level: %s: a wait after a drained level-triggered event, ended by it: "
	       "%llu system calls%s\n", uepoll_backend_name(&u), (unsigned long long)s,
	       folds && !lepoll ? " (folded: 1)" : "");
	if (folds && !lepoll)
		CHECK_EQ(s, 1);
	CHECK_EQ(t_read(efd), 1);
	CHECK_EQ(wait_counted(10, &s), 0);

	t_write(efd);
	CHECK_EQ(wait_counted(1000, &s), 1);	/* after that sleep */
	CHECK_EQ(wait_counted(1000, &s), 1);	/* not read: still ready */
	printf("level: %s: a wait while it stays ready: %llu system calls (1)\n",
	       uepoll_backend_name(&u), (unsigned long long)s);
	CHECK_EQ(s, 1);
	CHECK_EQ(wait_counted(1000, &s), 1);
	CHECK_EQ(s, 1);
	CHECK_EQ(t_read(efd), 1);
	CHECK_EQ(wait_counted(10, &s), 0);
	t_write(efd);
	CHECK_EQ(wait_counted(1000, &s), 1);	/* and it is still watched */
	CHECK_EQ(t_read(efd), 1);
	close(efd);
	close(et);
	uepoll_exit(&u);
}

int main(void)
{
	int caps, efd, i, native, klevel;
	uint64_t v = 1;

	t_init(&u, 8);
	caps = uepoll_backend_caps((unsigned)uepoll_backend(&u));
	CHECK(caps >= 0);
	if (!(caps & UEPOLL_CAP_LEVEL))
		SKIP("backend %s has no level-triggered registrations", uepoll_backend_name(&u));
	counted = uepoll_backend(&u) != (int)UEPOLL_BACKEND_EPOLL;
	native = uepoll_backend(&u) == (int)UEPOLL_BACKEND_NATIVE;
	klevel = t_native_klevel(&u);
	printf("level: %s%s\n", uepoll_backend_name(&u),
	       klevel ? ": level-triggered registrations in the ring (EPOLL_USERPOLL_LEVEL)" :
	       native ? ": level-triggered registrations in the level epoll" : "");

	/* argument errors */
	CHECK_EQ(uepoll_drained(NULL, 0, EPOLLIN), -EINVAL);
	CHECK_EQ(uepoll_drained(&u, -1, EPOLLIN), -EBADF);
	CHECK_EQ(uepoll_drained(&u, 1000, EPOLLIN), 0);	/* not registered */

	efd = t_efd();
	CHECK_EQ(t_add(&u, efd, EPOLLIN, 7), 0);
	expect(0, 0, 0, 0, "nothing written");
	t_write(efd);
	expect(1, 7, EPOLLIN, 1, "first report");
	for (i = 0; i < 5; i++)
		expect(1, 7, EPOLLIN, 1, "still ready: reported again, one poll");
	CHECK_EQ(t_read(efd), 1);
	expect(0, 0, 0, 1, "drained: the poll finds nothing");
	for (i = 0; i < 5; i++)
		expect(0, 0, 0, 0, "idle: no system call");

	/* the hint: no poll, no event, until the next wake-up */
	t_write(efd);
	expect(1, 7, EPOLLIN, 1, "wake-up");
	CHECK_EQ(t_read(efd), 1);
	CHECK_EQ(uepoll_drained(&u, efd, EPOLLIN), 0);
	expect(0, 0, 0, 0, "hinted drained: no poll");
	expect(0, 0, 0, 0, "hinted drained, idle");
	t_write(efd);
	expect(1, 7, EPOLLIN, 1, "next wake-up after the hint");
	/*
	 * A hint that lies (the file is still ready) holds until the next
	 * wake-up where the backend takes hints; epoll ignores them.
	 */
	CHECK_EQ(uepoll_drained(&u, efd, EPOLLIN), 0);
	if (counted)
		expect(0, 0, 0, 0, "hinted, though ready");
	t_write(efd);
	expect(1, 7, EPOLLIN, 1, "the wake-up reports it again");
	CHECK_EQ(t_read(efd), 2);
	expect(0, 0, 0, 1, "drained");

	/* a hint for IN polls the rest: OUT stays reported */
	CHECK_EQ(t_mod(&u, efd, EPOLLIN | EPOLLOUT, 8), 0);
	/* (native, level-triggered in the ring: the MOD's report is in it) */
	expect(1, 8, EPOLLOUT, klevel ? 0 : 1, "MOD: writable");
	CHECK_EQ(uepoll_drained(&u, efd, EPOLLIN), 0);
	expect(1, 8, EPOLLOUT, 1, "hint for IN: OUT still polled");
	t_write(efd);
	expect(1, 8, EPOLLIN | EPOLLOUT, 1, "IN again");
	CHECK_EQ(uepoll_drained(&u, efd, EPOLLIN | EPOLLOUT), 0);
	if (counted)
		expect(0, 0, 0, 0, "hint for both (a lie for OUT)");
	CHECK_EQ(t_read(efd), 1);
	expect(1, 8, EPOLLOUT, -1, "read: OUT only");
	CHECK_EQ(uepoll_drained(&u, efd, EPOLLIN), 0);
	expect(1, 8, EPOLLOUT, 1, "OUT stays reported");

	/* ONESHOT: once until MOD */
	CHECK_EQ(t_mod(&u, efd, EPOLLIN | EPOLLONESHOT, 9), 0);
	expect(0, 0, 0, -1, "oneshot, nothing ready");
	CHECK_EQ(write(efd, &v, sizeof(v)), (long)sizeof(v));
	expect(1, 9, EPOLLIN, -1, "oneshot fires");
	expect(0, 0, 0, 0, "oneshot fired: silent");
	CHECK_EQ(t_mod(&u, efd, EPOLLIN | EPOLLONESHOT, 10), 0);
	expect(1, 10, EPOLLIN, -1, "MOD re-arms");
	expect(0, 0, 0, 0, "fired again");

	/* MOD to edge-triggered: the readiness once, then nothing */
	CHECK_EQ(t_mod(&u, efd, EPOLLIN | EPOLLET, 11), 0);
	expect(1, 11, EPOLLIN, -1, "MOD to ET");
	expect(0, 0, 0, 0, "ET: not again");
	CHECK_EQ(t_mod(&u, efd, EPOLLIN, 12), 0);
	expect(1, 12, EPOLLIN, -1, "MOD back to LT");
	expect(1, 12, EPOLLIN, 1, "LT again");
	/* MOD of one still ready (native: still on the level epoll's list) */
	CHECK_EQ(t_mod(&u, efd, EPOLLIN, 13), 0);
	expect(1, 13, EPOLLIN, -1, "MOD of a ready one: reported, new data");
	CHECK_EQ(uepoll_drained(&u, efd, EPOLLIN), 0);	/* a lie */
	CHECK_EQ(t_mod(&u, efd, EPOLLIN, 14), 0);
	expect(1, 14, EPOLLIN, -1, "MOD after a hint: reported");
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, efd, NULL), 0);
	expect(0, 0, 0, 0, "DEL: nothing more, no poll");

	close(efd);
	uepoll_exit(&u);
	CHECK_EQ(uepoll_drained(&u, 0, EPOLLIN), -EBADF);
	mixed();
	if (native)
		waits(t_folds_sleep());
	else if (counted)
		waits(1);	/* uring: a ppoll() */
	printf("level: %s: level-triggered costs as documented\n", getenv("UEPOLL_BACKEND") ?: "auto");
	return T_PASS;
}
