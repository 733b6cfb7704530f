// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * nest: uepoll_fd() is readable while events are pending and not once
 * they are harvested - in poll(), select() and a plain epoll (level- and
 * edge-triggered), so an instance nests in another event loop.
 */
#include <poll.h>
#include <sys/select.h>
#include "helpers.h"

static int readable_poll(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r = poll(&p, 1, ms);

	CHECK(r >= 0);
	return r == 1 && (p.revents & POLLIN);
}

static int readable_select(int fd)
{
	fd_set s;
	struct timeval tv = { 0, 0 };

	FD_ZERO(&s);
	FD_SET(fd, &s);
	return select(fd + 1, &s, NULL, NULL, &tv) == 1;
}

int main(void)
{
	struct uepoll u;
	struct epoll_event evs[4], e;
	int fds0 = count_fds(), fd = t_efd(), ufd, lt, et;

	t_init(&u, 4);
	ufd = uepoll_fd(&u);
	CHECK(ufd >= 0);
	lt = epoll_create1(EPOLL_CLOEXEC);
	et = epoll_create1(EPOLL_CLOEXEC);
	e.events = EPOLLIN;
	e.data.u64 = 1;
	CHECK(epoll_ctl(lt, EPOLL_CTL_ADD, ufd, &e) == 0);
	e.events = EPOLLIN | EPOLLET;
	CHECK(epoll_ctl(et, EPOLL_CTL_ADD, ufd, &e) == 0);
	CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, 5), 0);

	for (int round = 0; round < 20; round++) {
		CHECK(!readable_poll(ufd, 0));
		CHECK(!readable_select(ufd));
		CHECK_EQ(epoll_wait(lt, evs, 4, 0), 0);
		t_write(fd);
		/* a poll() that sleeps is woken */
		CHECK(readable_poll(ufd, 1000));
		CHECK(readable_select(ufd));
		CHECK_EQ(epoll_wait(lt, evs, 4, 1000), 1);
		CHECK_EQ(epoll_wait(et, evs, 4, 1000), 1);
		CHECK_EQ(epoll_wait(lt, evs, 4, 0), 1);	/* level: still pending */
		CHECK_EQ(uepoll_harvest(&u, evs, 4), 1);
		CHECK_EQ(evs[0].data.u64, 5);
		CHECK(!readable_poll(ufd, 0));
		CHECK_EQ(epoll_wait(lt, evs, 4, 0), 0);
		t_read(fd);
	}
	uepoll_exit(&u);
	close(lt); close(et); close(fd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
