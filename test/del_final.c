// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * del_final (guarantee 3): once DEL returns, no event of that registration
 * is returned, even with completions already queued for it, and even when
 * the same fd is ADDed again at once (with new data).
 */
#include "helpers.h"

int main(void)
{
	struct uepoll u;
	struct epoll_event evs[16];
	int fd = t_efd(), other = t_efd(), fds0 = count_fds() - 2, r;

	t_init(&u, 4);
	CHECK_EQ(t_add(&u, other, EPOLLIN | EPOLLET, 999), 0);
	for (int round = 0; round < 100; round++) {
		uint64_t old = 1000 + 2 * (uint64_t)round, neu = old + 1;

		CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, old), 0);
		for (int w = 0; w < 5; w++)	/* completions queue up */
			t_write(fd);
		usleep(1000);
		CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fd, NULL), 0);
		if (round % 2) {
			/* re-ADD at once: only the new data may appear */
			CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, neu), 0);
			r = uepoll_wait(&u, evs, 16, 1000);
			CHECK_EQ(r, 1);	/* counter still non-zero: readiness at ADD */
			CHECK_EQ(evs[0].data.u64, neu);
			CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fd, NULL), 0);
		} else {
			/* nothing at all, even though the fd is still readable */
			t_write(other);
			r = uepoll_wait(&u, evs, 16, 1000);
			CHECK_EQ(r, 1);
			CHECK_EQ(evs[0].data.u64, 999);
			CHECK_EQ(uepoll_wait(&u, evs, 16, 5), 0);
			t_read(other);
		}
		t_read(fd);
	}
	uepoll_exit(&u);
	close(fd);
	close(other);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
