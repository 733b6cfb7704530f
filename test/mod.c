// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * mod (guarantee 4): MOD changes the events and the data; an event pending
 * at MOD time is reported with the new data.
 */
#include <sys/socket.h>
#include "helpers.h"

int main(void)
{
	struct uepoll u;
	struct epoll_event evs[8];
	int fd = t_efd(), sv[2], fds0 = count_fds() - 1, r;
	char c = 'x';

	t_init(&u, 4);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
	for (int round = 0; round < 50; round++) {
		CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, 1), 0);
		t_write(fd);
		usleep(1000);	/* the event is pending (queued) */
		CHECK_EQ(t_mod(&u, fd, EPOLLIN | EPOLLET, 2), 0);
		r = uepoll_wait(&u, evs, 8, 1000);
		CHECK_EQ(r, 1);
		CHECK_EQ(evs[0].data.u64, 2);
		CHECK_EQ(uepoll_wait(&u, evs, 8, 0), 0);
		/* next edge: new data too */
		t_write(fd);
		CHECK_EQ(uepoll_wait(&u, evs, 8, 1000), 1);
		CHECK_EQ(evs[0].data.u64, 2);
		CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fd, NULL), 0);
		t_read(fd);
	}
	/* events: IN only, then OUT only */
	CHECK_EQ(t_add(&u, sv[0], EPOLLIN | EPOLLET, 10), 0);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 20), 0);	/* writable, but IN only asked */
	CHECK_EQ(t_mod(&u, sv[0], EPOLLOUT | EPOLLET, 11), 0);
	r = uepoll_wait(&u, evs, 8, 1000);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 11);
	CHECK(evs[0].events & EPOLLOUT);
	CHECK(!(evs[0].events & EPOLLIN));
	CHECK_EQ(t_mod(&u, sv[0], EPOLLIN | EPOLLET, 12), 0);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 20), 0);
	CHECK_EQ(write(sv[1], &c, 1), 1);
	r = uepoll_wait(&u, evs, 8, 1000);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 12);
	CHECK_EQ(evs[0].events & (EPOLLIN | EPOLLOUT), EPOLLIN);
	uepoll_exit(&u);
	close(fd); close(sv[0]); close(sv[1]);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
