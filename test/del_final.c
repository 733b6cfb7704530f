// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * del_final (guarantee 3): once DEL returns, no event of that registration
 * is returned, even with completions already queued for it, and even when
 * the same fd is ADDed again at once (with new data), or another fd takes
 * its place (the io_uring backend reuses the slot: only the generation in
 * the completions tells the old registration from the new one).
 */
#include "helpers.h"

int main(void)
{
	struct uepoll u;
	struct epoll_event evs[16];
	int fd = t_efd(), other = t_efd(), quiet = t_efd(), fds0 = count_fds() - 3, r;

	t_init(&u, 4);
	CHECK_EQ(t_add(&u, other, EPOLLIN | EPOLLET, 999), 0);
	for (int round = 0; round < 100; round++) {
		uint64_t old = 1000 + 2 * (uint64_t)round, neu = old + 1;

		CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, old), 0);
		for (int w = 0; w < 5; w++)	/* completions queue up */
			t_write(fd);
		usleep(1000);
		CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fd, NULL), 0);
		switch (round % 4) {
		case 1:
			/* re-ADD at once: only the new data may appear */
			CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, neu), 0);
			r = uepoll_wait(&u, evs, 16, 1000);
			CHECK_EQ(r, 1);	/* counter still non-zero: readiness at ADD */
			CHECK_EQ(evs[0].data.u64, neu);
			CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fd, NULL), 0);
			break;
		case 2:
			/* nothing at all, even though the fd is still readable */
			t_write(other);
			r = uepoll_wait(&u, evs, 16, 1000);
			CHECK_EQ(r, 1);
			CHECK_EQ(evs[0].data.u64, 999);
			CHECK_EQ(uepoll_wait(&u, evs, 16, 5), 0);
			t_read(other);
			break;
		case 3:
			/* drained before DEL, re-ADDed: not ready, so no event at all */
			t_read(fd);
			CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, neu), 0);
			r = uepoll_wait(&u, evs, 16, 20);
			if (r != 0)
				FAIL("round %d: %d events (data %llu) for a re-added idle fd", round, r,
				     (unsigned long long)evs[0].data.u64);
			CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fd, NULL), 0);
			break;
		case 0:
			/* another, idle fd takes the place at once: no event */
			CHECK_EQ(t_add(&u, quiet, EPOLLIN | EPOLLET, 5000), 0);
			r = uepoll_wait(&u, evs, 16, 20);
			if (r != 0)
				FAIL("round %d: %d events (data %llu) for an idle fd", round, r,
				     (unsigned long long)evs[0].data.u64);
			CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, quiet, NULL), 0);
			break;
		}
		t_read(fd);
	}
	uepoll_exit(&u);
	close(fd);
	close(other);
	close(quiet);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
