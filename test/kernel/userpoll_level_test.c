// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * userpoll_level_test - level-triggered registrations of an instance made
 * with EPOLL_USERPOLL_LEVEL (doc/PROTOCOL.md section 10): the flag's
 * errors, an event that stays ready appended again at epoll_wait(fd, NULL,
 * 0, t) and at poll() of the instance once the consumer took the last one,
 * never while it has not, and never after the file was drained, a DEL, a
 * MOD to EPOLLET or EPOLLONESHOT; its wake-ups polled by the consumer, as
 * keyless ones are (the repoll hint, then exactly what the file's poll
 * says); edge-triggered registrations of the same instance unchanged; a
 * sleeper told at once; a slot reused after a DEL.  Every case is checked
 * against what a plain epoll_wait() says of the same file (the oracle):
 * reported again exactly while it would be.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "userpoll.h"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#define LT_IN	(EPOLLIN)
#define ET_IN	(EPOLLIN | EPOLLET)

FIXTURE(level) {
	struct up u;
	int efd;
	int p[2];
};

FIXTURE_SETUP(level)
{
	int err;

	self->u.fd = -1;
	self->efd = self->p[0] = self->p[1] = -1;
	UP_REQUIRE();
	err = up_open(&self->u, 64, EPOLL_USERPOLL_LEVEL);
	ASSERT_EQ(0, err) TH_LOG("epoll_create2(USERPOLL | LEVEL): %s",
				 strerror(-err));
	self->efd = eventfd(0, EFD_NONBLOCK);
	ASSERT_LE(0, self->efd);
	ASSERT_EQ(0, pipe2(self->p, O_NONBLOCK));
}

FIXTURE_TEARDOWN(level)
{
	if (self->efd >= 0)
		close(self->efd);
	if (self->p[0] >= 0)
		close(self->p[0]);
	if (self->p[1] >= 0)
		close(self->p[1]);
	up_close(&self->u);
}

/* What a plain epoll instance reports for fd (registered with events) now */
static uint32_t oracle(int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events };
	int ep = epoll_create1(EPOLL_CLOEXEC);
	uint32_t got = 0;

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		abort();
	if (epoll_wait(ep, &ev, 1, 0) == 1)
		got = ev.events;
	close(ep);
	return got;
}

/* The consumer's sleep call with a zero timeout, then one harvest */
static int ask(struct up *u, struct up_event *ev, int max, int *wait_ret)
{
	*wait_ret = up_wait(u->fd, 0);
	return up_harvest(u, ev, max, NULL);
}

TEST(flag_errors)
{
	struct up u;
	int efd, fd;

	UP_REQUIRE();
	/* EPOLL_USERPOLL_LEVEL alone, or to epoll_create1(): EINVAL */
	errno = 0;
	EXPECT_EQ(-1, sys_epoll_create2(EPOLL_USERPOLL_LEVEL, 8));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, epoll_create1(EPOLL_USERPOLL_LEVEL));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, epoll_create1(EPOLL_USERPOLL | EPOLL_USERPOLL_LEVEL));
	EXPECT_EQ(EINVAL, errno);
	/* n is checked as without it */
	errno = 0;
	EXPECT_EQ(-1, sys_epoll_create2(EPOLL_USERPOLL | EPOLL_USERPOLL_LEVEL, 0));
	EXPECT_EQ(EINVAL, errno);
	fd = sys_epoll_create2(EPOLL_USERPOLL | EPOLL_USERPOLL_LEVEL |
			       EPOLL_CLOEXEC, 4);
	ASSERT_LE(0, fd);
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);

	/* an instance made without it still requires EPOLLET */
	efd = eventfd(0, EFD_NONBLOCK);
	ASSERT_LE(0, efd);
	ASSERT_EQ(0, up_open(&u, 8, 0));
	errno = 0;
	EXPECT_EQ(-1, up_ctl(u.fd, EPOLL_CTL_ADD, efd, LT_IN, 1));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, up_ctl(u.fd, EPOLL_CTL_ADD, efd, ET_IN, 1));
	errno = 0;
	EXPECT_EQ(-1, up_ctl(u.fd, EPOLL_CTL_MOD, efd, LT_IN, 1));
	EXPECT_EQ(EINVAL, errno);
	up_close(&u);

	/* with it: EPOLLEXCLUSIVE is still refused, level or edge */
	ASSERT_EQ(0, up_open(&u, 8, EPOLL_USERPOLL_LEVEL));
	errno = 0;
	EXPECT_EQ(-1, up_ctl(u.fd, EPOLL_CTL_ADD, efd,
			     LT_IN | EPOLLEXCLUSIVE, 1));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, up_ctl(u.fd, EPOLL_CTL_ADD, efd,
			     ET_IN | EPOLLEXCLUSIVE, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, up_ctl(u.fd, EPOLL_CTL_ADD, efd, LT_IN, 1));
	EXPECT_EQ((uint32_t)(LT_IN | EPOLLERR | EPOLLHUP),
		  u.hdr->items[0].events)
		TH_LOG("the item shows the registered mask, without EPOLLET");
	up_close(&u);
	close(efd);
}

TEST_F(level, reported_again_while_ready)
{
	struct up_event ev[4];
	int w, round;

	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd, LT_IN, 7));
	/* not ready: nothing, and asking changes nothing */
	EXPECT_EQ(0, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(0, w);
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	/* the wake-up marks it and raises the hint; the poll reports it */
	EXPECT_EQ(0, up_pending(&self->u));
	EXPECT_EQ(1, up_repoll(&self->u));
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 0));
	for (round = 0; round < 3; round++) {
		ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL))
			TH_LOG("round %d", round);
		EXPECT_EQ((uint32_t)EPOLLIN, ev[0].events);
		EXPECT_EQ(7, ev[0].data);
		EXPECT_EQ(0, up_pending(&self->u));
		/* harvested, still ready: nothing until the consumer asks */
		EXPECT_EQ(0, up_harvest(&self->u, ev, 4, NULL));
		EXPECT_EQ((uint32_t)EPOLLIN, oracle(self->efd, LT_IN));
		EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 0));
		EXPECT_EQ(1, up_pending(&self->u));
	}
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(1, up_efd_read(self->efd));
	/* drained: the next question finds nothing, and the mark is gone */
	EXPECT_EQ(0, oracle(self->efd, LT_IN));
	EXPECT_EQ(0, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(0, w);
	EXPECT_EQ(0, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(0, w);
	/* ready again: the wake-up is polled when the consumer asks */
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	EXPECT_EQ(1, up_repoll(&self->u));
	EXPECT_EQ(0, up_pending(&self->u));
	EXPECT_EQ(1, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(-ESTALE, w);
	EXPECT_EQ(0, up_repoll(&self->u));
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 0));
}

TEST_F(level, not_appended_while_not_taken)
{
	struct up_event ev[4];
	struct pollfd pfd = { .fd = self->u.fd, .events = POLLIN };
	uint32_t tail;
	int i;

	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd, LT_IN, 1));
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 0));
	tail = up_tail(&self->u);
	EXPECT_EQ(1, tail);
	/* the entry is unread: asking again appends nothing */
	for (i = 0; i < 5; i++) {
		EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 0));
		EXPECT_EQ(1, poll(&pfd, 1, 0));
	}
	EXPECT_EQ(tail, up_tail(&self->u));
	EXPECT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(0, up_harvest(&self->u, ev, 4, NULL));
}

TEST_F(level, poll_of_the_instance_asks)
{
	struct up_event ev[4];
	struct pollfd pfd = { .fd = self->u.fd, .events = POLLIN };

	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->p[0], LT_IN, 3));
	ASSERT_EQ(5, write(self->p[1], "01234", 5));
	/* the write's wake-up: polled by the poll of the instance */
	EXPECT_EQ(0, up_pending(&self->u));
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	/* a partial read: still ready */
	{
		char b[2];

		ASSERT_EQ(2, read(self->p[0], b, 2));
	}
	EXPECT_EQ(0, up_pending(&self->u));
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLIN, pfd.revents);
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(3, ev[0].data);
	{
		char b[8];

		ASSERT_EQ(3, read(self->p[0], b, sizeof(b)));
	}
	pfd.revents = 0;
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(0, up_pending(&self->u));
}

TEST_F(level, edge_triggered_unchanged)
{
	struct up_event ev[4];
	int w;

	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd, ET_IN, 1));
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	/* still ready, but edge-triggered: never again without a new edge */
	EXPECT_EQ(0, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(0, w);
	EXPECT_EQ(0, poll(&(struct pollfd){ .fd = self->u.fd,
					    .events = POLLIN }, 1, 0));
}

TEST_F(level, mod_between_level_and_edge)
{
	struct up_event ev[4];
	int w;

	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd, LT_IN, 1));
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	ASSERT_EQ(1, ask(&self->u, ev, 4, &w));
	/* to EPOLLET: MOD polls and reports once, then never again */
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_MOD, self->efd, ET_IN, 2));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(2, ev[0].data);
	EXPECT_EQ(0, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(0, w);
	/* back to level-triggered: reported, and again when asked */
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_MOD, self->efd, LT_IN, 3));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(1, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(-ESTALE, w);
	EXPECT_EQ(3, ev[0].data);
	/* a MOD to a mask the file does not meet: no more reports */
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_MOD, self->efd, EPOLLPRI, 4));
	EXPECT_EQ(0, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(0, w);
}

TEST_F(level, oneshot_once)
{
	struct up_event ev[4];
	int w;

	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd,
			    LT_IN | EPOLLONESHOT, 1));
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	ASSERT_EQ(1, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(-ESTALE, w);
	EXPECT_EQ(0, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(0, w);
	/* disarmed: a new wake-up reports nothing either */
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	EXPECT_EQ(0, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(0, w);
	/* re-armed by MOD: once more */
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_MOD, self->efd,
			    LT_IN | EPOLLONESHOT, 2));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(2, ev[0].data);
	EXPECT_EQ(0, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(0, w);
}

TEST_F(level, del_and_slot_reuse)
{
	struct up_event ev[4];
	struct up_stats st = { 0 };
	int efd2 = eventfd(0, EFD_NONBLOCK);
	int w;

	ASSERT_LE(0, efd2);
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd, LT_IN, 1));
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	ASSERT_EQ(1, ask(&self->u, ev, 4, &w));
	/* marked and still ready; DEL: its removal entry, then nothing */
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_DEL, self->efd, 0, 0));
	EXPECT_EQ(0, up_harvest(&self->u, ev, 4, &st));
	EXPECT_EQ(1, st.removed);
	EXPECT_EQ(0, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(0, w);

	/* the slot again, for a file that is not ready: nothing to report */
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd, LT_IN, 1));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_DEL, self->efd, 0, 0));
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, efd2, LT_IN, 2));
	EXPECT_EQ(0, self->u.hdr->items[0].ready_events & ~EPOLLREMOVED);
	st.removed = 0;
	EXPECT_EQ(0, up_harvest(&self->u, ev, 4, &st));
	EXPECT_EQ(1, st.removed);
	EXPECT_EQ(0, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(0, w);
	/* and it is efd2's from now on */
	ASSERT_EQ(0, up_efd_write(efd2, 1));
	ASSERT_EQ(1, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(2, ev[0].data);
	EXPECT_EQ(1, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(2, ev[0].data);

	/* close without DEL removes it too: no more reports */
	close(efd2);
	st.removed = 0;
	EXPECT_EQ(0, up_harvest(&self->u, ev, 4, &st));
	EXPECT_EQ(0, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(0, w);
}

TEST_F(level, wakeups_polled_not_announced)
{
	struct up_event ev[4];
	int sv[2], w;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sv));
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, sv[0],
			    EPOLLIN | EPOLLPRI, 4));
	/* a datagram's wake-up says IN|PRI; the socket holds IN only */
	ASSERT_EQ(1, send(sv[1], "x", 1, 0));
	EXPECT_EQ(0, up_pending(&self->u));
	EXPECT_EQ(1, up_repoll(&self->u));
	ASSERT_EQ(1, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(oracle(sv[0], EPOLLIN | EPOLLPRI), ev[0].events);
	EXPECT_EQ((uint32_t)EPOLLIN, ev[0].events);
	EXPECT_EQ(0, up_repoll(&self->u));

	/* a wake-up outside the mask: no mark, no hint, nothing to poll */
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd, EPOLLPRI, 5));
	EXPECT_EQ(0, up_pending(&self->u));
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	EXPECT_EQ(0, up_repoll(&self->u));
	EXPECT_EQ(0, up_pending(&self->u));
	close(sv[0]);
	close(sv[1]);
}

TEST_F(level, hangup_stays)
{
	struct up_event ev[4];
	int sv[2], w, i;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv));
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, sv[0],
			    EPOLLIN | EPOLLRDHUP, 9));
	close(sv[1]);
	ASSERT_EQ(1, up_wait_pending(&self->u, 1000));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	/* HUP and RDHUP stay, as with epoll_wait() */
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(1, ask(&self->u, ev, 4, &w));
		EXPECT_EQ(-ESTALE, w);
		EXPECT_EQ(oracle(sv[0], EPOLLIN | EPOLLRDHUP), ev[0].events);
	}
	close(sv[0]);
}

TEST_F(level, reports_what_the_file_says)
{
	struct up_event ev[4];
	int w;

	/* eventfd registered IN|OUT: writable always, readable after a write */
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd,
			    EPOLLIN | EPOLLOUT, 1));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ((uint32_t)EPOLLOUT, ev[0].events);
	/*
	 * A write: its wake-up says IN, but a level-triggered report is what
	 * the file's poll says, IN|OUT, as epoll_wait() says: the wake-up is
	 * polled by the consumer, nothing is appended before.
	 */
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	EXPECT_EQ(0, up_pending(&self->u));
	ASSERT_EQ(1, ask(&self->u, ev, 4, &w));
	EXPECT_EQ(-ESTALE, w);
	EXPECT_EQ(oracle(self->efd, EPOLLIN | EPOLLOUT), ev[0].events);
	EXPECT_EQ((uint32_t)(EPOLLIN | EPOLLOUT), ev[0].events);
	EXPECT_EQ(1, up_efd_read(self->efd));
	ASSERT_EQ(1, ask(&self->u, ev, 4, &w));
	EXPECT_EQ((uint32_t)EPOLLOUT, ev[0].events);
	EXPECT_EQ(oracle(self->efd, EPOLLIN | EPOLLOUT), ev[0].events);
}

TEST_F(level, many_registrations)
{
	struct up_event ev[64];
	int fds[48], i, w, n;

	for (i = 0; i < 48; i++) {
		fds[i] = eventfd(1, EFD_NONBLOCK);
		ASSERT_LE(0, fds[i]);
		ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, fds[i], LT_IN, i));
	}
	ASSERT_EQ(48, up_harvest(&self->u, ev, 64, NULL));
	for (i = 0; i < 48; i += 2)
		EXPECT_EQ(1, up_efd_read(fds[i]));
	n = ask(&self->u, ev, 64, &w);
	EXPECT_EQ(-ESTALE, w);
	ASSERT_EQ(24, n);
	for (i = 0; i < n; i++)
		EXPECT_EQ(1, ev[i].data & 1) TH_LOG("a drained one reported");
	for (i = 1; i < 48; i += 2)
		EXPECT_EQ(1, up_efd_read(fds[i]));
	EXPECT_EQ(0, ask(&self->u, ev, 64, &w));
	EXPECT_EQ(0, w);
	for (i = 0; i < 48; i++)
		close(fds[i]);
}

struct drainer {
	int fd;
	int delay_ms;
};

static void *write_later(void *arg)
{
	struct drainer *d = arg;

	usleep(d->delay_ms * 1000);
	up_efd_write(d->fd, 1);
	return NULL;
}

TEST_F(level, sleeper_told_at_once_or_woken)
{
	struct up_event ev[4];
	struct drainer d = { .fd = self->efd, .delay_ms = 100 };
	pthread_t th;
	double t0;

	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd, LT_IN, 1));
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 5000));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	/* still ready: the sleep answers at once */
	t0 = up_now();
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 5000));
	EXPECT_GT(1.0, up_now() - t0);
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(1, up_efd_read(self->efd));
	/* drained: it sleeps until the next write */
	ASSERT_EQ(0, pthread_create(&th, NULL, write_later, &d));
	t0 = up_now();
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 5000));
	EXPECT_LE(0.09, up_now() - t0);
	EXPECT_GT(4.0, up_now() - t0);
	pthread_join(th, NULL);
	EXPECT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
}

TEST_F(level, nested_in_plain_epoll)
{
	struct up_event ev[4];
	struct epoll_event out;
	int ep = epoll_create1(EPOLL_CLOEXEC);

	ASSERT_LE(0, ep);
	ASSERT_EQ(0, up_ctl(ep, EPOLL_CTL_ADD, self->u.fd, EPOLLIN, 5));
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd, LT_IN, 1));
	ASSERT_EQ(0, up_efd_write(self->efd, 1));
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 0));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	/* the outer epoll polls the instance, which asks its file again */
	EXPECT_EQ(1, epoll_wait(ep, &out, 1, 1000));
	EXPECT_EQ(1, up_pending(&self->u));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(1, up_efd_read(self->efd));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));
	close(ep);
}

UP_TEST_MAIN
