// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * hup: the event masks are epoll's - EPOLLHUP and EPOLLERR are reported
 * without being asked for, EPOLLRDHUP only when asked, and nothing that was
 * not asked for otherwise (a writable socket registered for EPOLLIN).
 */
#include <sys/socket.h>
#include "helpers.h"

int main(void)
{
	struct uepoll u;
	struct epoll_event evs[4];
	int a[2], b[2], fds0 = count_fds(), r;
	char c = 'x';

	t_init(&u, 4);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, a) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, b) == 0);
	CHECK_EQ(t_add(&u, a[0], EPOLLIN | EPOLLET, 1), 0);
	CHECK_EQ(t_add(&u, b[0], EPOLLIN | EPOLLRDHUP | EPOLLET, 2), 0);
	CHECK_EQ(uepoll_wait(&u, evs, 4, 20), 0);	/* writable, not asked */
	CHECK_EQ(write(a[1], &c, 1), 1);
	r = uepoll_wait(&u, evs, 4, 1000);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 1);
	CHECK_EQ(evs[0].events, EPOLLIN);
	/* shutdown of the peer's write side: RDHUP only where asked */
	CHECK(shutdown(a[1], SHUT_WR) == 0);
	CHECK(shutdown(b[1], SHUT_WR) == 0);
	{
		uint32_t got[3] = { 0, 0, 0 };

		for (int n = 0; n < 2;) {
			r = uepoll_wait(&u, evs, 4, 1000);
			CHECK(r > 0);
			for (int i = 0; i < r; i++)
				got[evs[i].data.u64] |= evs[i].events;
			n += r;
		}
		CHECK(got[1] & EPOLLIN);
		CHECK(!(got[1] & EPOLLRDHUP));
		CHECK((got[2] & (EPOLLIN | EPOLLRDHUP)) == (EPOLLIN | EPOLLRDHUP));
	}
	/* full close of the peer: HUP without asking */
	close(a[1]);
	r = uepoll_wait(&u, evs, 4, 1000);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 1);
	CHECK(evs[0].events & EPOLLHUP);
	CHECK(!(evs[0].events & EPOLLOUT));
	uepoll_exit(&u);
	close(a[0]); close(b[0]); close(b[1]);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
