// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * userpoll_wait_test - sleeping on an EPOLL_USERPOLL instance
 * (doc/PROTOCOL.md sections 6 and 7): ESTALE, timeout, blocking wake-up
 * from another thread, EINTR, nesting in a plain epoll and in poll(), and
 * the keyless wake-up path (signalfd, pidfd, pipes, unix sockets: wait
 * queues woken without an event mask, polled in the consumer's context).
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "userpoll.h"

#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#ifndef __NR_epoll_pwait2
#define __NR_epoll_pwait2 441
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

#define INET (EPOLLIN | EPOLLET)

FIXTURE(wait) {
	struct up u;
	int efd;
	int efd2;
};

FIXTURE_SETUP(wait)
{
	int err;

	self->u.fd = -1;
	self->efd = self->efd2 = -1;
	UP_REQUIRE();
	err = up_open(&self->u, 64, 0);
	ASSERT_EQ(0, err) TH_LOG("%s", strerror(-err));
	self->efd = eventfd(0, EFD_NONBLOCK);
	self->efd2 = eventfd(0, EFD_NONBLOCK);
	ASSERT_LE(0, self->efd);
	ASSERT_LE(0, self->efd2);
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd, INET, 1));
}

FIXTURE_TEARDOWN(wait)
{
	if (self->efd >= 0)
		close(self->efd);
	if (self->efd2 >= 0)
		close(self->efd2);
	up_close(&self->u);
}

TEST_F(wait, timeout_returns_zero)
{
	struct timespec ts = { 0, 30 * 1000 * 1000 };
	double t0;

	t0 = up_now();
	EXPECT_EQ(0, up_wait(self->u.fd, 100));
	EXPECT_LE(0.09, up_now() - t0);
	t0 = up_now();
	EXPECT_EQ(0, syscall(__NR_epoll_pwait2, self->u.fd, NULL, 0, &ts, NULL, 8))
		TH_LOG("epoll_pwait2: %s", strerror(errno));
	EXPECT_LE(0.025, up_now() - t0);
	EXPECT_EQ(0, up_wait(self->u.fd, 0));
}

TEST_F(wait, estale_when_not_empty)
{
	struct up_event ev[4];
	struct timespec ts = { 5, 0 };
	double t0;

	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	t0 = up_now();
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, -1));
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 0));
	errno = 0;
	EXPECT_EQ(-1, epoll_pwait(self->u.fd, NULL, 0, 5000, NULL));
	EXPECT_EQ(ESTALE, errno);
	errno = 0;
	EXPECT_EQ(-1, syscall(__NR_epoll_pwait2, self->u.fd, NULL, 0, &ts, NULL, 8));
	EXPECT_EQ(ESTALE, errno);
	EXPECT_GT(1.0, up_now() - t0) TH_LOG("ESTALE was not immediate");
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	/* consumed (head == tail): sleeps again */
	EXPECT_EQ(0, up_wait(self->u.fd, 20));
	/* ESTALE depends on head only: entries taken but head not stored */
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 0));
	uepoll_head_release(self->u.hdr, up_tail(&self->u));
	EXPECT_EQ(0, up_wait(self->u.fd, 0));
}

struct poker {
	int fd;
	int delay_ms;
	int timeout_ms;		/* sleeper(): 0 means 10 s */
	int ret;
	double woke;
};

static void *poke_later(void *arg)
{
	struct poker *p = arg;

	usleep(p->delay_ms * 1000);
	up_efd_write(p->fd, 1);
	return NULL;
}

static void *sleeper(void *arg)
{
	struct poker *p = arg;

	p->ret = up_wait(p->fd, p->timeout_ms ? p->timeout_ms : 10000);
	p->woke = up_now();
	return NULL;
}

TEST_F(wait, blocking_wakeup_from_thread)
{
	struct poker p = { .fd = self->efd, .delay_ms = 200 };
	struct up_event ev[4];
	pthread_t th;
	double t0, dt;

	t0 = up_now();
	ASSERT_EQ(0, pthread_create(&th, NULL, poke_later, &p));
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 10000));
	dt = up_now() - t0;
	pthread_join(th, NULL);
	EXPECT_LE(0.15, dt) TH_LOG("woke before the write (%.3f s)", dt);
	EXPECT_GT(5.0, dt) TH_LOG("slept through the write (%.3f s)", dt);
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(1, ev[0].data);
}

/*
 * Two sleepers, one event: sleepers are not exclusive (PROTOCOL.md
 * section 6, none of them harvests in the kernel), both wake with ESTALE.
 */
TEST_F(wait, two_sleepers_both_woken)
{
	struct poker s1 = { .fd = self->u.fd, .timeout_ms = 3000 };
	struct poker s2 = { .fd = self->u.fd, .timeout_ms = 3000 };
	pthread_t t1, t2;
	double t0;

	ASSERT_EQ(0, pthread_create(&t1, NULL, sleeper, &s1));
	ASSERT_EQ(0, pthread_create(&t2, NULL, sleeper, &s2));
	usleep(200 * 1000);
	t0 = up_now();
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	EXPECT_EQ(-ESTALE, s1.ret);
	EXPECT_EQ(-ESTALE, s2.ret);
	EXPECT_GT(2.0, s1.woke - t0) TH_LOG("sleeper 1 woke after %.2f s", s1.woke - t0);
	EXPECT_GT(2.0, s2.woke - t0) TH_LOG("sleeper 2 woke after %.2f s", s2.woke - t0);
}

static void on_usr1(int sig)
{
	(void)sig;
}

TEST_F(wait, eintr)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	pthread_t th;
	struct poker s = { .fd = self->u.fd };

	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));	/* no SA_RESTART */
	ASSERT_EQ(0, pthread_create(&th, NULL, sleeper, &s));
	usleep(200 * 1000);
	pthread_kill(th, SIGUSR1);
	pthread_join(th, NULL);
	EXPECT_EQ(-EINTR, s.ret);
}

/*
 * The push of a DEL does not wake sleepers (PROTOCOL.md section 6): the
 * sleeper runs into its timeout (0; ESTALE is also acceptable there, the
 * ring being non-empty).
 */
TEST_F(wait, del_push_does_not_wake)
{
	struct poker s = { .fd = self->u.fd, .timeout_ms = 1500 };
	struct up_stats st = { 0 };
	struct up_event ev[4];
	pthread_t th;
	double t0;

	ASSERT_EQ(0, pthread_create(&th, NULL, sleeper, &s));
	usleep(200 * 1000);
	t0 = up_now();
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_DEL, self->efd, 0, 0));
	EXPECT_EQ(1, up_tail(&self->u));
	pthread_join(th, NULL);
	EXPECT_LE(1.0, s.woke - t0) TH_LOG("the DEL push woke the sleeper after %.2f s",
					   s.woke - t0);
	EXPECT_TRUE(s.ret == 0 || s.ret == -ESTALE) TH_LOG("ret %d", s.ret);
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 0));
	EXPECT_EQ(0, up_harvest(&self->u, ev, 4, &st));
	EXPECT_EQ(1, st.removed);
}

/*
 * A sleeper went to sleep on an empty ring; a DEL of an idle item pushed an
 * (unwoken) EPOLLREMOVED entry; an ADD reused the slot and its fd fired.
 * The event ORs into the word that still holds EPOLLREMOVED, so it gets no
 * entry of its own (the pending one serves) - but the sleeper must still be
 * woken: an event on a registration may not leave epoll_wait() asleep.
 */
TEST_F(wait, event_on_reused_removed_slot_wakes_sleeper)
{
	struct poker s = { .fd = self->u.fd, .timeout_ms = 6000 };
	struct up_stats st = { 0 };
	struct up_event ev[4];
	pthread_t th;
	double t0;

	ASSERT_EQ(0, pthread_create(&th, NULL, sleeper, &s));
	usleep(200 * 1000);
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_DEL, self->efd, 0, 0));
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd2, INET, 2));
	EXPECT_EQ(2, self->u.hdr->items[0].data) TH_LOG("slot 0 not reused");
	t0 = up_now();
	ASSERT_EQ(0, up_efd_write(self->efd2, 1));
	pthread_join(th, NULL);
	EXPECT_EQ(-ESTALE, s.ret);
	EXPECT_GT(3.0, s.woke - t0)
		TH_LOG("event not signalled to the sleeper: woke after %.2f s (its "
		       "timeout). The kernel wakes only when it appends an entry "
		       "(ready_events 0 -> non-zero); this event was ORed into a "
		       "word holding only EPOLLREMOVED, whose DEL entry woke nobody",
		       s.woke - t0);
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, &st));
	EXPECT_EQ(2, ev[0].data);
	EXPECT_EQ(EPOLLIN, ev[0].events);
}

/* Same, with the instance in poll(): the poller must be woken too. */
struct poller {
	int fd;
	int ret;
	double woke;
};

static void *poll_sleeper(void *arg)
{
	struct poller *p = arg;
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };

	p->ret = poll(&pfd, 1, 6000);
	p->woke = up_now();
	return NULL;
}

TEST_F(wait, event_on_reused_removed_slot_wakes_poll)
{
	struct poller p = { .fd = self->u.fd };
	pthread_t th;
	double t0;

	ASSERT_EQ(0, pthread_create(&th, NULL, poll_sleeper, &p));
	usleep(200 * 1000);
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_DEL, self->efd, 0, 0));
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd2, INET, 2));
	t0 = up_now();
	ASSERT_EQ(0, up_efd_write(self->efd2, 1));
	pthread_join(th, NULL);
	EXPECT_EQ(1, p.ret);
	EXPECT_GT(3.0, p.woke - t0)
		TH_LOG("poll() not woken by the event: %.2f s (see "
		       "event_on_reused_removed_slot_wakes_sleeper)", p.woke - t0);
}

TEST_F(wait, nested_in_plain_epoll)
{
	struct epoll_event oev[2], e = { .events = EPOLLIN, .data.u64 = 77 };
	struct up_event ev[4];
	int outer;

	outer = epoll_create1(0);
	ASSERT_LE(0, outer);
	ASSERT_EQ(0, epoll_ctl(outer, EPOLL_CTL_ADD, self->u.fd, &e))
		TH_LOG("nesting refused: %s", strerror(errno));
	EXPECT_EQ(0, epoll_wait(outer, oev, 2, 0));
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	ASSERT_EQ(1, epoll_wait(outer, oev, 2, 1000));
	EXPECT_EQ(77, oev[0].data.u64);
	EXPECT_EQ(EPOLLIN, oev[0].events & EPOLLIN);
	/* level: still readable until the ring is consumed */
	EXPECT_EQ(1, epoll_wait(outer, oev, 2, 0));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(0, epoll_wait(outer, oev, 2, 0)) TH_LOG("readable after consuming");
	close(outer);
}

static void *outer_waiter(void *arg)
{
	struct poker *p = arg;
	struct epoll_event e;

	p->ret = epoll_wait(p->fd, &e, 1, 10000);
	p->woke = up_now();
	return NULL;
}

TEST_F(wait, nested_blocking_wakeup)
{
	struct epoll_event e = { .events = EPOLLIN | EPOLLET, .data.u64 = 5 };
	struct poker s = { 0 };
	pthread_t th;
	double t0;
	int outer;

	outer = epoll_create1(0);
	ASSERT_LE(0, outer);
	ASSERT_EQ(0, epoll_ctl(outer, EPOLL_CTL_ADD, self->u.fd, &e));
	s.fd = outer;
	t0 = up_now();
	ASSERT_EQ(0, pthread_create(&th, NULL, outer_waiter, &s));
	usleep(200 * 1000);
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	pthread_join(th, NULL);
	EXPECT_EQ(1, s.ret);
	EXPECT_GT(5.0, s.woke - t0);
	close(outer);
}

/* An EPOLL_USERPOLL instance watched by another one (EPOLLIN|EPOLLET). */
TEST_F(wait, nested_in_userpoll)
{
	struct up_event ev[4];
	struct up outer;
	int a, b;

	ASSERT_EQ(0, up_open(&outer, 4, 0));
	ASSERT_EQ(0, up_ctl(outer.fd, EPOLL_CTL_ADD, self->u.fd, INET, 0x11))
		TH_LOG("nesting a userpoll instance refused: %s", strerror(errno));
	EXPECT_EQ(0, up_tail(&outer));
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	/* the inner ring became non-empty: one edge on the outer ring */
	ASSERT_EQ(1, up_wait_pending(&outer, 5000));
	ASSERT_EQ(1, up_harvest(&outer, ev, 4, NULL));
	EXPECT_EQ(0x11, ev[0].data);
	EXPECT_EQ(EPOLLIN, ev[0].events & EPOLLIN);
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(1, ev[0].data);
	/* next edge of the inner instance, next outer entry */
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	ASSERT_EQ(1, up_wait_pending(&outer, 5000));
	/* loops are refused: inner watching outer */
	errno = 0;
	EXPECT_EQ(-1, up_ctl(self->u.fd, EPOLL_CTL_ADD, outer.fd, INET, 0));
	EXPECT_EQ(ELOOP, errno);
	up_close(&outer);
	/* a plain epoll watched by a userpoll instance */
	a = epoll_create1(0);
	b = eventfd(0, EFD_NONBLOCK);
	ASSERT_LE(0, a);
	{
		struct epoll_event e = { .events = EPOLLIN, .data.u64 = 1 };

		ASSERT_EQ(0, epoll_ctl(a, EPOLL_CTL_ADD, b, &e));
	}
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, a, INET, 0x22));
	(void)up_harvest(&self->u, ev, 4, NULL);	/* the efd edge above */
	ASSERT_EQ(0, up_efd_write(b, 1));
	ASSERT_LE(1, up_wait_pending(&self->u, 5000));
	{
		int got = up_harvest(&self->u, ev, 4, NULL), k, seen = 0;

		for (k = 0; k < got; k++)
			if (ev[k].data == 0x22 && (ev[k].events & EPOLLIN))
				seen = 1;
		EXPECT_EQ(1, seen) TH_LOG("plain epoll readiness not reported");
	}
	close(b);
	close(a);
}

TEST_F(wait, nested_in_poll)
{
	struct pollfd pfd = { .fd = self->u.fd, .events = POLLIN };
	struct up_event ev[4];
	pthread_t th;
	struct poker p = { .fd = self->efd, .delay_ms = 200 };

	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	ASSERT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLIN, pfd.revents & POLLIN);
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	/* blocking poll() woken by an event */
	ASSERT_EQ(0, pthread_create(&th, NULL, poke_later, &p));
	EXPECT_EQ(1, poll(&pfd, 1, 10000));
	EXPECT_EQ(POLLIN, pfd.revents & POLLIN);
	pthread_join(th, NULL);
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
}

/*
 * Keyless wake-ups: signalfd_notify() calls wake_up() without a mask, so
 * the callback cannot know which events fired.  The kernel marks the
 * registration, raises header->repoll and wakes sleepers; the poll runs
 * in the task that next calls epoll_wait(fd, NULL, 0, t) on the instance
 * (PROTOCOL.md section 7).  Nothing is in the ring before that call, and
 * signalfd, polled in this task, answers for this task's signals.
 */
TEST_F(wait, keyless_signalfd)
{
	struct up_event ev[4];
	sigset_t set;
	int sfd, k;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &set, NULL));
	sfd = signalfd(-1, &set, SFD_NONBLOCK);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, sfd, INET, 0x516));
	EXPECT_EQ(0, up_tail(&self->u));
	EXPECT_EQ(0, up_repoll(&self->u));
	for (k = 0; k < 3; k++) {
		struct signalfd_siginfo si;

		ASSERT_EQ(0, kill(getpid(), SIGUSR2));
		/* the wake-up ran in kill(): hint up, nothing polled yet */
		EXPECT_EQ(1, up_repoll(&self->u)) TH_LOG("round %d: no hint", k);
		EXPECT_EQ(0, up_pending(&self->u))
			TH_LOG("round %d: polled before the consumer asked", k);
		/* the consumer asks: the poll runs here, in this task */
		EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 0));
		EXPECT_EQ(0, up_repoll(&self->u));
		ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
		EXPECT_EQ(0x516, ev[0].data);
		EXPECT_EQ(EPOLLIN, ev[0].events) TH_LOG("events %#x", ev[0].events);
		ASSERT_EQ((ssize_t)sizeof(si), read(sfd, &si, sizeof(si)));
		EXPECT_EQ(SIGUSR2, (int)si.ssi_signo);
	}
	/* DEL after a keyless wake-up clears the mark: hammer the race */
	for (k = 0; k < 200; k++) {
		struct signalfd_siginfo si;

		ASSERT_EQ(0, kill(getpid(), SIGUSR2));
		ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_DEL, sfd, 0, 0));
		(void)read(sfd, &si, sizeof(si));
		ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, sfd, INET, 0x600 + k));
		if (k & 1)
			(void)up_wait(self->u.fd, 0);
	}
	uepoll_head_release(self->u.hdr, up_tail(&self->u));
	close(sfd);
	/* registration gone with the fd: a signal adds nothing */
	(void)up_wait(self->u.fd, 0);
	uepoll_head_release(self->u.hdr, up_tail(&self->u));
	kill(getpid(), SIGUSR2);
	EXPECT_EQ(0, up_repoll(&self->u));
	EXPECT_EQ(0, up_wait(self->u.fd, 0));
	EXPECT_EQ(0, up_pending(&self->u));
	/* SIGUSR2 stays blocked: one is pending and would kill the test */
}

/* A sleeper is woken by a keyless wake-up and polls in its own context. */
TEST_F(wait, keyless_signalfd_wakes_sleeper)
{
	struct poker s = { .fd = self->u.fd };
	struct up_event ev[4];
	sigset_t set;
	pthread_t th;
	int sfd;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	ASSERT_EQ(0, pthread_sigmask(SIG_BLOCK, &set, NULL));
	sfd = signalfd(-1, &set, SFD_NONBLOCK);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, sfd, INET, 0x517));
	ASSERT_EQ(0, pthread_create(&th, NULL, sleeper, &s));
	usleep(200 * 1000);
	ASSERT_EQ(0, kill(getpid(), SIGUSR2));
	pthread_join(th, NULL);
	EXPECT_EQ(-ESTALE, s.ret) TH_LOG("keyless event did not wake: %d", s.ret);
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(0x517, ev[0].data);
	EXPECT_EQ(EPOLLIN, ev[0].events) TH_LOG("events %#x", ev[0].events);
	close(sfd);
}

static int plain_harvest(int epfd, struct epoll_event *ev, int max)
{
	int n = epoll_wait(epfd, ev, max, 0);

	return n < 0 ? -errno : n;
}

/*
 * No invented events.  A signalfd watching SIGUSR1, registered for
 * IN|PRI|OUT|RDHUP: any signal wakes it without a key.  SIGUSR2, which it
 * does not watch, must report nothing, SIGUSR1 exactly EPOLLIN: what a
 * plain epoll instance, registered alike, reports.
 */
TEST_F(wait, keyless_reports_only_what_poll_returns)
{
	const uint32_t mask = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP | EPOLLET;
	struct epoll_event pev[4];
	struct up_event ev[4];
	sigset_t set, one;
	int sfd, ep, sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &set, NULL));
	sigemptyset(&one);
	sigaddset(&one, SIGUSR1);
	sfd = signalfd(-1, &one, SFD_NONBLOCK);
	ASSERT_LE(0, sfd);
	ep = epoll_create1(0);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, up_ctl(ep, EPOLL_CTL_ADD, sfd, mask, 0x51));
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, sfd, mask, 0x51));
	EXPECT_EQ(0, plain_harvest(ep, pev, 4));
	EXPECT_EQ(0, up_pending(&self->u));

	ASSERT_EQ(0, kill(getpid(), SIGUSR2));
	EXPECT_EQ(1, up_repoll(&self->u));
	EXPECT_EQ(0, up_wait(self->u.fd, 50)) TH_LOG("SIGUSR2 made the ring non-empty");
	EXPECT_EQ(0, up_harvest(&self->u, ev, 4, NULL))
		TH_LOG("invented events %#x", ev[0].events);
	EXPECT_EQ(0, plain_harvest(ep, pev, 4));

	ASSERT_EQ(0, kill(getpid(), SIGUSR1));
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 5000));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	ASSERT_EQ(1, plain_harvest(ep, pev, 4));
	EXPECT_EQ(pev[0].events, ev[0].events)
		TH_LOG("userpoll %#x, plain epoll %#x", ev[0].events, pev[0].events);
	EXPECT_EQ(EPOLLIN, ev[0].events);

	/* take both signals, so that later tests start clean */
	for (sig = 0; sig < 2; sig++) {
		struct timespec zero = { 0, 0 };

		EXPECT_LT(0, sigtimedwait(&set, NULL, &zero));
	}
	close(ep);
	close(sfd);
}

/*
 * A unix stream socket's shutdown() wakes the peer without a key
 * (sk_state_change()).  Both ends, registered alike on a plain epoll and
 * on the userpoll instance, for IN|RDHUP and for IN|OUT|RDHUP: after each
 * way of shutting down, the two report the same events for the same ends
 * (nothing, where the poll finds none of the registered events).
 */
TEST_F(wait, keyless_unix_shutdown_matches_epoll)
{
	static const uint32_t masks[] = { EPOLLIN | EPOLLRDHUP | EPOLLET,
		EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET };
	static const int how[] = { SHUT_WR, SHUT_RD, SHUT_RDWR };
	int sv[2], ep, step;

	for (step = 0; step < 6; step++) {
		uint32_t mask = masks[step / 3];
		struct epoll_event pev[4];
		struct up_event ev[4];
		uint32_t pe[2] = { 0, 0 }, ue[2] = { 0, 0 };
		int n, i;

		ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv));
		ep = epoll_create1(0);
		ASSERT_LE(0, ep);
		for (i = 0; i < 2; i++) {
			ASSERT_EQ(0, up_ctl(ep, EPOLL_CTL_ADD, sv[i], mask, i));
			ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, sv[i], mask, i));
		}
		/* both writable at ADD: take those first */
		(void)plain_harvest(ep, pev, 4);
		(void)up_harvest(&self->u, ev, 4, NULL);

		ASSERT_EQ(0, shutdown(sv[0], how[step % 3]));
		(void)up_wait(self->u.fd, 0);
		n = up_harvest(&self->u, ev, 4, NULL);
		for (i = 0; i < n; i++)
			ue[ev[i].data & 1] |= ev[i].events;
		n = plain_harvest(ep, pev, 4);
		for (i = 0; i < n; i++)
			pe[pev[i].data.u64 & 1] |= pev[i].events;
		EXPECT_EQ(pe[0], ue[0])
			TH_LOG("mask %#x, shutdown(%d), end 0: userpoll %#x, plain epoll %#x",
			       mask, how[step % 3], ue[0], pe[0]);
		EXPECT_EQ(pe[1], ue[1])
			TH_LOG("mask %#x, shutdown(%d), end 1: userpoll %#x, plain epoll %#x",
			       mask, how[step % 3], ue[1], pe[1]);
		for (i = 0; i < 2; i++)
			ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_DEL, sv[i], 0, 0));
		(void)up_harvest(&self->u, ev, 4, NULL);
		close(ep);
		close(sv[0]);
		close(sv[1]);
	}
}

/* poll() of the instance polls the marked registrations too. */
TEST_F(wait, keyless_polled_by_poll)
{
	struct pollfd pfd = { .fd = self->u.fd, .events = POLLIN };
	struct up_event ev[4];
	sigset_t set;
	int sfd;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &set, NULL));
	sfd = signalfd(-1, &set, SFD_NONBLOCK);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, sfd, INET, 0x519));
	ASSERT_EQ(0, kill(getpid(), SIGUSR2));
	EXPECT_EQ(0, up_pending(&self->u));
	EXPECT_EQ(1, poll(&pfd, 1, 5000));
	EXPECT_EQ(POLLIN, pfd.revents);
	EXPECT_EQ(0, up_repoll(&self->u));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(EPOLLIN, ev[0].events);
	close(sfd);
}

/*
 * pidfd wakes without a mask too (do_notify_pidfd()): the poll finds
 * EPOLLIN and that is what is reported, not the requested EPOLLOUT.
 */
TEST_F(wait, keyless_pidfd)
{
	struct up_event ev[4];
	pid_t pid;
	int pfd;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		usleep(300 * 1000);
		_exit(0);
	}
	pfd = (int)syscall(__NR_pidfd_open, pid, 0);
	ASSERT_LE(0, pfd) TH_LOG("pidfd_open: %s", strerror(errno));
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, pfd,
			    EPOLLIN | EPOLLOUT | EPOLLET, 0x9d));
	EXPECT_EQ(0, up_tail(&self->u));
	/* do_notify_pidfd(): wake_up_all() without a key */
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 10000));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(0x9d, ev[0].data);
	EXPECT_EQ(EPOLLIN, ev[0].events) TH_LOG("events %#x", ev[0].events);
	waitpid(pid, NULL, 0);
	close(pfd);
}

/*
 * Writer side of a pipe closed: pipe_release() wakes the readers without a
 * mask, the consumer's epoll_wait() polls the pipe and finds EPOLLHUP,
 * which every registration gets even unrequested.  Data written before is
 * a keyed EPOLLIN, in the ring at once.
 */
TEST_F(wait, keyless_pipe_hup)
{
	struct up_event ev[4];
	int p[2];
	char c = 'x';

	ASSERT_EQ(0, pipe2(p, O_NONBLOCK));
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, p[0], INET, 0x91));
	ASSERT_EQ(1, write(p[1], &c, 1));
	/* keyed: synchronous */
	ASSERT_EQ(1, up_pending(&self->u));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(EPOLLIN, ev[0].events);
	ASSERT_EQ(1, read(p[0], &c, 1));
	close(p[1]);
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 5000)) TH_LOG("no event for the hang-up");
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(0x91, ev[0].data);
	EXPECT_EQ(EPOLLHUP, ev[0].events & EPOLLHUP) TH_LOG("events %#x", ev[0].events);
	close(p[0]);
}

/* Closing the instance right after a keyless wake-up, with the mark set. */
TEST(keyless_close_race)
{
	sigset_t set;
	int k, sfd;

	UP_REQUIRE();
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &set, NULL));
	sfd = signalfd(-1, &set, SFD_NONBLOCK);
	ASSERT_LE(0, sfd);
	for (k = 0; k < 300; k++) {
		struct signalfd_siginfo si;
		int fd = sys_epoll_create2(EPOLL_USERPOLL, 4);

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, up_ctl(fd, EPOLL_CTL_ADD, sfd, INET, k));
		kill(getpid(), SIGUSR2);
		close(fd);
		(void)read(sfd, &si, sizeof(si));
	}
	close(sfd);
}

/* Closing the registered file right after its keyless wake-up. */
TEST(keyless_close_registered_race)
{
	struct up u;
	sigset_t set;
	int k;

	UP_REQUIRE();
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &set, NULL));
	ASSERT_EQ(0, up_open(&u, 4, 0));
	for (k = 0; k < 300; k++) {
		struct signalfd_siginfo si;
		int sfd = signalfd(-1, &set, SFD_NONBLOCK);

		ASSERT_LE(0, sfd);
		ASSERT_EQ(0, up_ctl(u.fd, EPOLL_CTL_ADD, sfd, INET, k));
		kill(getpid(), SIGUSR2);
		if (k & 1)
			(void)read(sfd, &si, sizeof(si));
		close(sfd);	/* eventpoll_release(): removal clears the mark */
		uepoll_head_release(u.hdr, up_tail(&u));
	}
	/* every registration went with its file: the slots are free */
	for (k = 0; k < 4; k++) {
		int efd = eventfd(0, 0);

		ASSERT_EQ(0, up_ctl(u.fd, EPOLL_CTL_ADD, efd, INET, k))
			TH_LOG("slot %d not freed by close: %s", k, strerror(errno));
	}
	up_close(&u);
}

UP_TEST_MAIN
