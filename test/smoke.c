// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* smoke: one eventfd, one write, one event; readable fd; clean exit */
#include "helpers.h"

int main(void)
{
	struct uepoll u;
	struct epoll_event evs[4];
	int fds0 = count_fds(), fd = t_efd(), r;

	t_init(&u, 8);
	printf("backend %s\n", uepoll_backend_name(&u));
	CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, 42), 0);
	CHECK_EQ(uepoll_harvest(&u, evs, 4), 0);
	t_write(fd);
	r = uepoll_wait(&u, evs, 4, 1000);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 42);
	CHECK(evs[0].events & EPOLLIN);
	CHECK_EQ(uepoll_wait(&u, evs, 4, 0), 0);
	uepoll_exit(&u);
	close(fd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
