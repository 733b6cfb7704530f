// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * ctl_errors: uepoll_ctl gives the errno epoll_ctl(2) gives for the same
 * mistake (compared with a real epoll instance), plus the userpoll rules:
 * EPOLLET required where the backend has no UEPOLL_CAP_LEVEL.
 */
#include <fcntl.h>
#include <sys/socket.h>
#include "helpers.h"

static int ep_err(int ep, int op, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = 1 };

	return epoll_ctl(ep, op, fd, &ev) < 0 ? -errno : 0;
}

static int ue_err(struct uepoll *u, int op, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = 1 };

	return uepoll_ctl(u, op, fd, &ev);
}

#define SAME(op, fd, events) do { int _e = ep_err(ep, op, fd, events), _u = ue_err(&u, op, fd, events); \
	if (_e != _u) FAIL("op %d fd %s events %#x: epoll_ctl %d (%s), uepoll_ctl %d (%s)", op, #fd, \
			   (unsigned)(events), _e, strerror(-_e), _u, strerror(-_u)); } while (0)

int main(void)
{
	struct uepoll u;
	int fds0 = count_fds();
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int efd = t_efd(), reg, dir, sv[2], closed;
	const uint32_t ET = EPOLLIN | EPOLLET;
	int caps, lt;

	t_init(&u, 4);
	caps = uepoll_backend_caps((unsigned)uepoll_backend(&u));
	CHECK(caps >= 0);
	lt = !!(caps & UEPOLL_CAP_LEVEL);
	reg = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(reg >= 0 && dir >= 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	/*
	 * A number no descriptor has, nor gets while the test runs: the
	 * library may open descriptors of its own (native: its level epoll
	 * at the first level-triggered ADD), which would take the lowest free
	 * number, a just-closed one.
	 */
	{
		int tmp = t_efd();

		closed = fcntl(tmp, F_DUPFD_CLOEXEC, 900);
		close(tmp);
	}
	CHECK(closed >= 900);
	close(closed);

	SAME(EPOLL_CTL_ADD, -1, ET);		/* EBADF */
	SAME(EPOLL_CTL_ADD, closed, ET);	/* EBADF */
	SAME(EPOLL_CTL_DEL, closed, ET);	/* EBADF */
	SAME(EPOLL_CTL_ADD, reg, ET);		/* EPERM: regular file */
	SAME(EPOLL_CTL_ADD, dir, ET);		/* EPERM: directory */
	SAME(EPOLL_CTL_MOD, efd, ET);		/* ENOENT */
	SAME(EPOLL_CTL_DEL, efd, ET);		/* ENOENT */
	SAME(EPOLL_CTL_ADD, efd, ET);		/* 0 */
	SAME(EPOLL_CTL_ADD, efd, ET);		/* EEXIST */
	SAME(EPOLL_CTL_MOD, efd, ET | EPOLLOUT);	/* 0 */
	SAME(42, efd, ET);			/* EINVAL: bad op */
	SAME(EPOLL_CTL_ADD, sv[0], ET | EPOLLEXCLUSIVE | EPOLLOUT | EPOLLONESHOT); /* EINVAL */
	SAME(EPOLL_CTL_MOD, efd, ET | EPOLLEXCLUSIVE);	/* EINVAL */
	SAME(EPOLL_CTL_DEL, efd, 0);		/* 0 */
	SAME(EPOLL_CTL_DEL, efd, 0);		/* ENOENT */

	/* the instance's own fd: EINVAL (epoll_ctl: epfd == fd) */
	CHECK_EQ(ue_err(&u, EPOLL_CTL_ADD, uepoll_fd(&u), ET), -EINVAL);
	CHECK_EQ(ep_err(ep, EPOLL_CTL_ADD, ep, ET), -EINVAL);
	/* NULL event on ADD/MOD: EFAULT, as epoll_ctl(2) documents (not
	 * compared: valgrind rightly flags a NULL pointer passed to the kernel) */
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_ADD, efd, NULL), -EFAULT);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_MOD, efd, NULL), -EFAULT);
	/* DEL ignores the event pointer */
	CHECK_EQ(ue_err(&u, EPOLL_CTL_ADD, efd, ET), 0);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, efd, NULL), 0);

	/* userpoll rules: without EPOLLET, epoll_ctl(2)'s answer where the
	 * backend is level-triggered too, else EINVAL */
	if (lt) {
		SAME(EPOLL_CTL_ADD, efd, EPOLLIN);		/* 0 */
		SAME(EPOLL_CTL_MOD, efd, EPOLLIN | EPOLLOUT);	/* 0 */
		SAME(EPOLL_CTL_MOD, efd, ET);			/* 0: LT to ET */
		SAME(EPOLL_CTL_MOD, efd, EPOLLIN | EPOLLONESHOT);	/* 0 */
		SAME(EPOLL_CTL_DEL, efd, 0);
	} else {
		CHECK_EQ(ue_err(&u, EPOLL_CTL_ADD, efd, EPOLLIN), -EINVAL);
		CHECK_EQ(ue_err(&u, EPOLL_CTL_ADD, efd, EPOLLIN | EPOLLONESHOT), -EINVAL);
	}
	CHECK_EQ(ue_err(&u, EPOLL_CTL_ADD, efd, ET | EPOLLEXCLUSIVE), -EINVAL);
	CHECK_EQ(ue_err(&u, EPOLL_CTL_ADD, efd, ET | EPOLLWAKEUP), 0);	/* dropped */
	CHECK_EQ(ue_err(&u, EPOLL_CTL_MOD, efd, EPOLLIN), lt ? 0 : -EINVAL);
	CHECK_EQ(ue_err(&u, EPOLL_CTL_MOD, efd, ET | EPOLLONESHOT), 0);
	/* bad fd wins over bad flags, as in the kernel */
	CHECK_EQ(ue_err(&u, EPOLL_CTL_ADD, closed, EPOLLIN), -EBADF);
	CHECK_EQ(ue_err(&u, EPOLL_CTL_ADD, reg, EPOLLIN), -EPERM);
	CHECK_EQ(ue_err(&u, EPOLL_CTL_ADD, closed, EPOLLIN | EPOLLEXCLUSIVE), -EBADF);
	CHECK_EQ(ue_err(&u, EPOLL_CTL_DEL, efd, 0), 0);
	/* the ctl errors leave the instance usable */
	CHECK_EQ(ue_err(&u, EPOLL_CTL_ADD, efd, ET), 0);
	t_write(efd);
	{
		struct epoll_event evs[4];

		CHECK_EQ(uepoll_wait(&u, evs, 4, 1000), 1);
	}
	uepoll_exit(&u);
	close(ep); close(efd); close(reg); close(dir); close(sv[0]); close(sv[1]);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
