// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * oneshot (guarantee 5): one event, then silence until MOD re-arms it.
 * Also: a ONESHOT registration whose file is ready with bits it did not
 * ask (EPOLLRDHUP of a socket whose peer shut down, for EPOLLPRI) is not
 * re-armed by every harvest (uring: a single-shot poll ends on them), and
 * still fires once when something it asked comes (EPOLLHUP).
 */
#include <sys/socket.h>
#include "helpers.h"

static void not_asked(struct uepoll *u)
{
	struct uepoll_stats st;
	struct epoll_event evs[8];
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
	CHECK(shutdown(sv[1], SHUT_WR) == 0);		/* sv[0]: IN | RDHUP */
	CHECK_EQ(t_add(u, sv[0], EPOLLPRI | EPOLLET | EPOLLONESHOT, 9), 0);
	for (int i = 0; i < 100; i++)
		CHECK_EQ(uepoll_harvest(u, evs, 8), 0);
	CHECK_EQ(uepoll_get_stats(u, &st), 0);
	if (st.rearms > 2)
		FAIL("%llu re-arms in 100 harvests of a registration with nothing to report",
		     (unsigned long long)st.rearms);
	close(sv[1]);					/* sv[0]: HUP */
	CHECK_EQ(uepoll_wait(u, evs, 8, 1000), 1);
	CHECK_EQ(evs[0].data.u64, 9);
	CHECK(evs[0].events & EPOLLHUP);
	CHECK(!(evs[0].events & (EPOLLIN | EPOLLRDHUP)));
	CHECK_EQ(uepoll_wait(u, evs, 8, 20), 0);
	CHECK_EQ(uepoll_ctl(u, EPOLL_CTL_DEL, sv[0], NULL), 0);
	close(sv[0]);
}

int main(void)
{
	struct uepoll u;
	struct uepoll_stats st;
	struct epoll_event evs[8];
	int fd = t_efd(), fds0 = count_fds() - 1;
	uint64_t rearms;

	t_init(&u, 2);
	CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET | EPOLLONESHOT, 5), 0);
	for (int round = 0; round < 50; round++) {
		t_write(fd);
		CHECK_EQ(uepoll_wait(&u, evs, 8, 1000), 1);
		CHECK_EQ(evs[0].data.u64, 5 + (uint64_t)round);
		t_read(fd);
		for (int w = 0; w < 3; w++)
			t_write(fd);
		CHECK_EQ(uepoll_wait(&u, evs, 8, 20), 0);	/* silent */
		t_read(fd);
		/* MOD re-arms (nothing pending now: no event) */
		CHECK_EQ(t_mod(&u, fd, EPOLLIN | EPOLLET | EPOLLONESHOT, 6 + (uint64_t)round), 0);
		CHECK_EQ(uepoll_wait(&u, evs, 8, 5), 0);
	}
	/* MOD while ready re-arms and reports at once */
	t_write(fd);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 1000), 1);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 10), 0);
	CHECK_EQ(t_mod(&u, fd, EPOLLIN | EPOLLET | EPOLLONESHOT, 77), 0);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 1000), 1);
	CHECK_EQ(evs[0].data.u64, 77);
	/* MOD back to a normal registration: events flow again, from a poll
	 * that needs no re-arm (uring: a poll update would keep an armed
	 * ONESHOT's poll single-shot, to end at its first event) */
	CHECK_EQ(uepoll_get_stats(&u, &st), 0);
	rearms = st.rearms;
	t_read(fd);
	CHECK_EQ(t_mod(&u, fd, EPOLLIN | EPOLLET | EPOLLONESHOT, 77), 0);	/* armed */
	CHECK_EQ(uepoll_wait(&u, evs, 8, 5), 0);
	CHECK_EQ(t_mod(&u, fd, EPOLLIN | EPOLLET, 78), 0);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 5), 0);
	t_write(fd);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 1000), 1);
	CHECK_EQ(evs[0].data.u64, 78);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 20), 0);
	CHECK_EQ(uepoll_get_stats(&u, &st), 0);
	CHECK_EQ(st.rearms, rearms);
	t_write(fd);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 1000), 1);
	t_write(fd);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 1000), 1);
	CHECK_EQ(evs[0].data.u64, 78);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fd, NULL), 0);
	not_asked(&u);
	uepoll_exit(&u);
	close(fd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
