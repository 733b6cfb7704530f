// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * coalesce (guarantee 2): several writes before a harvest give at least
 * one event, and never two events for one registration in one batch.
 */
#include "helpers.h"

#define N 8

int main(void)
{
	struct uepoll u;
	struct epoll_event evs[64];
	int fds[N], fds0 = count_fds(), r;
	unsigned seen[N];

	t_init(&u, N);
	for (int i = 0; i < N; i++) {
		fds[i] = t_efd();
		CHECK_EQ(t_add(&u, fds[i], EPOLLIN | EPOLLOUT | EPOLLET, (uint64_t)i), 0);
	}
	/* the ADDs reported EPOLLOUT: drain */
	usleep(10000);
	while (uepoll_wait(&u, evs, 64, 20) > 0)
		;
	for (int round = 0; round < 20; round++) {
		for (int w = 0; w < 10; w++)
			for (int i = 0; i < N; i++)
				t_write(fds[i]);
		usleep(5000);	/* let every wake-up land (one CQE each on io_uring) */
		memset(seen, 0, sizeof(seen));
		r = uepoll_harvest(&u, evs, 64);
		CHECK(r >= 0);
		t_check_distinct(evs, r);
		if (r != N)
			FAIL("round %d: %d events for %d registrations written 10 times each", round, r, N);
		for (int i = 0; i < r; i++) {
			CHECK(evs[i].data.u64 < N);
			CHECK(evs[i].events & EPOLLIN);
			seen[evs[i].data.u64]++;
		}
		for (int i = 0; i < N; i++)
			CHECK_EQ(seen[i], 1);
		CHECK_EQ(uepoll_harvest(&u, evs, 64), 0);
	}
	/* max smaller than the number of ready registrations: the rest follows */
	for (int i = 0; i < N; i++)
		t_write(fds[i]);
	usleep(5000);
	memset(seen, 0, sizeof(seen));
	for (int got = 0; got < N;) {
		r = uepoll_wait(&u, evs, 3, 1000);
		CHECK(r > 0 && r <= 3);
		t_check_distinct(evs, r);
		for (int i = 0; i < r; i++)
			seen[evs[i].data.u64]++;
		got += r;
	}
	for (int i = 0; i < N; i++)
		CHECK_EQ(seen[i], 1);
	uepoll_exit(&u);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
