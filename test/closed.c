// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * closed: a registration whose descriptor is closed without DEL, as an
 * event library's changelist leaves it (libevent closes at once and sends
 * the DEL at its next dispatch), on every backend, each step's return
 * value compared with plain epoll's on the same files:
 *  - DEL of the closed fd: EBADF, and the place is free again (capacity);
 *    on uring the file is let go (the peer of a closed socket sees EOF);
 *    an ADD of the closed number: EBADF, the same;
 *  - the number reused by another file: ADD takes it (0), and its events
 *    come with the new data, none with the old; MOD of a reused number
 *    not added again: ENOENT; DEL: ENOENT; reused by a regular file:
 *    EPERM for each, and the registration is gone (uring: let go);
 *  - the same through uepoll_ctl_batch(); edge- and level-triggered;
 *  - a registration that outlives its failed DEL (a dup): dup_round().
 */
#include <sys/socket.h>
#include "helpers.h"

static struct uepoll u;
static int ep, lt;

static int both(int op, int fd, uint32_t events, uint64_t data, int batch)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };
	int a = epoll_ctl(ep, op, fd, op == EPOLL_CTL_DEL ? NULL : &ev) < 0 ? -errno : 0, b;

	if (batch) {
		struct uepoll_change c = { .op = op, .fd = fd, .ev = ev, .res = 12345 };

		CHECK_EQ(uepoll_ctl_batch(&u, &c, 1), 1);
		b = c.res;
	} else {
		b = uepoll_ctl(&u, op, fd, op == EPOLL_CTL_DEL ? NULL : &ev);
	}
	if (a != b)
		FAIL("op %d fd %d (%s): epoll %d, uepoll %d", op, fd, batch ? "batch" : "ctl", a, b);
	return b;
}

/* the one event of a harvest after a short wait: its data, 0 if none */
static uint64_t one_event(void)
{
	struct epoll_event evs[8];
	int n = uepoll_wait(&u, evs, 8, 200);

	CHECK(n >= 0 && n <= 1);
	return n ? evs[0].data.u64 : 0;
}

static void round_(int batch, uint32_t mode)
{
	int sv[2], p1[2], p2[2], fd, i, extra[4], hold;
	char c;

	/* closed, then DEL: EBADF; the peer sees EOF (the file is let go) */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK_EQ(both(EPOLL_CTL_ADD, sv[0], EPOLLIN | mode, 1, batch), 0);
	close(sv[0]);
	CHECK_EQ(both(EPOLL_CTL_DEL, sv[0], 0, 0, batch), -EBADF);
	CHECK_EQ(read(sv[1], &c, 1), 0);
	/* the place is free: n = 4 registrations again, of other numbers
	 * (sv[1] keeps a number; hold the closed one) */
	hold = t_efd();
	CHECK_EQ(hold, sv[0]);
	for (i = 0; i < 4; i++) {
		extra[i] = t_efd();
		CHECK_EQ(both(EPOLL_CTL_ADD, extra[i], EPOLLIN | mode, 10 + i, batch), 0);
	}
	for (i = 0; i < 4; i++) {
		CHECK_EQ(both(EPOLL_CTL_DEL, extra[i], 0, 0, batch), 0);
		close(extra[i]);
	}
	close(hold);
	close(sv[1]);

	/* closed, number reused: ADD takes it, the new data only (pipes:
	 * each has its own inode; see uepoll_ctl(3) for eventfds on uring) */
	CHECK(pipe2(p1, O_NONBLOCK | O_CLOEXEC) == 0);
	CHECK_EQ(both(EPOLL_CTL_ADD, p1[0], EPOLLIN | mode, 2, batch), 0);
	CHECK_EQ(write(p1[1], "x", 1), 1);
	fd = p1[0];
	close(p1[0]);
	close(p1[1]);
	CHECK(pipe2(p2, O_NONBLOCK | O_CLOEXEC) == 0);
	CHECK_EQ(p2[0], fd);
	CHECK_EQ(both(EPOLL_CTL_ADD, p2[0], EPOLLIN | mode, 3, batch), 0);
	CHECK_EQ(one_event(), 0);		/* nothing written to the new one */
	CHECK_EQ(write(p2[1], "x", 1), 1);
	CHECK_EQ(one_event(), 3);
	CHECK_EQ(read(p2[0], &c, 1), 1);
	if (!(mode & EPOLLET))
		CHECK_EQ(one_event(), 0);
	CHECK_EQ(both(EPOLL_CTL_DEL, p2[0], 0, 0, batch), 0);
	close(p2[0]);
	close(p2[1]);

	/* closed, then ADD of the number: EBADF, and the registration went
	 * with its file (uring: the ADD lets it go, the peer sees EOF) */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK_EQ(both(EPOLL_CTL_ADD, sv[0], EPOLLIN | mode, 9, batch), 0);
	close(sv[0]);
	CHECK_EQ(both(EPOLL_CTL_ADD, sv[0], EPOLLIN | mode, 9, batch), -EBADF);
	CHECK_EQ(read(sv[1], &c, 1), 0);
	close(sv[1]);

	/* closed, reused by a regular file: ADD, MOD and DEL say EPERM, and
	 * the registration went with its file (uring: the first of them lets
	 * it go, the peer sees EOF) */
	for (i = 0; i < 3; i++) {
		static const int ops[] = { EPOLL_CTL_DEL, EPOLL_CTL_MOD, EPOLL_CTL_ADD };

		CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
		CHECK_EQ(both(EPOLL_CTL_ADD, sv[0], EPOLLIN | mode, 7, batch), 0);
		fd = sv[0];
		close(sv[0]);
		CHECK_EQ(open("/proc/self/exe", O_RDONLY | O_CLOEXEC), fd);
		CHECK_EQ(both(ops[i], fd, EPOLLIN | mode, 8, batch), -EPERM);
		/* no reader left (EPIPE), nothing for the old registration */
		CHECK_EQ(send(sv[1], "x", 1, MSG_NOSIGNAL), -1);
		CHECK_EQ(read(sv[1], &c, 1), 0);
		CHECK_EQ(one_event(), 0);
		close(fd);
		close(sv[1]);
	}

	/* closed, reused, not added: MOD and DEL say ENOENT */
	CHECK(pipe2(p1, O_NONBLOCK | O_CLOEXEC) == 0);
	CHECK_EQ(both(EPOLL_CTL_ADD, p1[0], EPOLLIN | mode, 4, batch), 0);
	fd = p1[0];
	close(p1[0]);
	close(p1[1]);
	CHECK(pipe2(p2, O_NONBLOCK | O_CLOEXEC) == 0);
	CHECK_EQ(p2[0], fd);
	CHECK_EQ(both(EPOLL_CTL_MOD, p2[0], EPOLLIN | mode, 5, batch), -ENOENT);
	CHECK_EQ(both(EPOLL_CTL_DEL, p2[0], 0, 0, batch), -ENOENT);
	CHECK_EQ(both(EPOLL_CTL_ADD, p2[0], EPOLLIN | mode, 6, batch), 0);
	CHECK_EQ(write(p2[1], "x", 1), 1);
	CHECK_EQ(one_event(), 6);
	CHECK_EQ(both(EPOLL_CTL_DEL, p2[0], 0, 0, batch), 0);
	close(p2[0]);
	close(p2[1]);
	CHECK_EQ(one_event(), 0);
}

/*
 * A registration that outlives its failed DEL (libevent's dup_fd test):
 * fd and dfd = dup(fd) registered, dfd closed, DEL of dfd: EBADF, yet
 * epoll keeps that item (the file is still open through fd).  dup2(fd,
 * dfd) makes it valid again: epoll answers ADD with EEXIST and takes the
 * MOD.  A backend that let the registration go with the DEL (uring: the
 * poll is cancelled) takes the ADD instead; either way the next step
 * succeeds and dfd's events come with the new data.
 */
static void dup_round(uint32_t mode)
{
	struct epoll_event ev = { .events = EPOLLOUT | mode, .data.u64 = 8 };
	int sv[2], dfd, ra, rb;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
	dfd = dup(sv[0]);
	CHECK(dfd >= 0);
	CHECK_EQ(both(EPOLL_CTL_ADD, sv[0], EPOLLIN | mode, 1, 0), 0);
	CHECK_EQ(both(EPOLL_CTL_ADD, dfd, EPOLLIN | mode, 7, 0), 0);
	close(dfd);
	CHECK_EQ(both(EPOLL_CTL_DEL, dfd, 0, 0, 0), -EBADF);
	CHECK_EQ(dup2(sv[0], dfd), dfd);
	ra = epoll_ctl(ep, EPOLL_CTL_ADD, dfd, &ev) < 0 ? -errno : 0;
	CHECK_EQ(ra, -EEXIST);
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_MOD, dfd, &ev), 0);
	rb = uepoll_ctl(&u, EPOLL_CTL_ADD, dfd, &ev);
	if (rb == -EEXIST)
		rb = uepoll_ctl(&u, EPOLL_CTL_MOD, dfd, &ev);
	CHECK_EQ(rb, 0);
	CHECK_EQ(one_event(), 8);	/* writable: OUT with the new data */
	if (!(mode & EPOLLET))
		CHECK_EQ(one_event(), 8);
	CHECK_EQ(both(EPOLL_CTL_DEL, dfd, 0, 0, 0), 0);
	CHECK_EQ(both(EPOLL_CTL_DEL, sv[0], 0, 0, 0), 0);
	close(dfd);
	close(sv[0]);
	close(sv[1]);
	CHECK_EQ(one_event(), 0);
}

int main(void)
{
	int fds0 = count_fds(), batch, caps;

	t_init(&u, 4);
	caps = uepoll_backend_caps((unsigned)uepoll_backend(&u));
	CHECK(caps >= 0);
	lt = !!(caps & UEPOLL_CAP_LEVEL);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	for (batch = 0; batch < 2; batch++) {
		round_(batch, EPOLLET);
		if (lt)
			round_(batch, 0);
	}
	dup_round(EPOLLET);
	if (lt)
		dup_round(0);
	uepoll_exit(&u);
	close(ep);
	CHECK_EQ(count_fds(), fds0);
	printf("closed: %s: closed registrations as epoll has them\n", getenv("UEPOLL_BACKEND") ?: "auto");
	return T_PASS;
}
