// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* oneshot (guarantee 5): one event, then silence until MOD re-arms it */
#include "helpers.h"

int main(void)
{
	struct uepoll u;
	struct epoll_event evs[8];
	int fd = t_efd(), fds0 = count_fds() - 1;

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
	/* MOD back to a normal registration: events flow again */
	CHECK_EQ(t_mod(&u, fd, EPOLLIN | EPOLLET, 78), 0);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 1000), 1);	/* still readable */
	t_write(fd);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 1000), 1);
	t_write(fd);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 1000), 1);
	CHECK_EQ(evs[0].data.u64, 78);
	uepoll_exit(&u);
	close(fd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
