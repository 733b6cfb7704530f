// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * bad_input (guarantee 9): NULL pointers, max <= 0, unknown flags, a
 * zero-filled (never initialised) instance, use after uepoll_exit():
 * documented errors, no crash, nothing leaked.
 */
#include "helpers.h"

static void all_fail(struct uepoll *u, int err)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET }, evs[2];
	struct uepoll_stats st;
	int fd = t_efd();

	CHECK_EQ(uepoll_ctl(u, EPOLL_CTL_ADD, fd, &ev), err);
	CHECK_EQ(uepoll_harvest(u, evs, 2), err);
	CHECK_EQ(uepoll_wait(u, evs, 2, 0), err);
	CHECK_EQ(uepoll_wait(u, evs, 2, 10), err);
	CHECK_EQ(uepoll_fd(u), err);
	CHECK_EQ(uepoll_backend(u), err);
	CHECK(uepoll_backend_name(u) == NULL);
	CHECK_EQ(uepoll_get_stats(u, &st), err);
	uepoll_exit(u);		/* no-op */
	close(fd);
}

int main(void)
{
	struct uepoll u, z;
	struct epoll_event evs[2] = { { EPOLLIN | EPOLLET, { 0 } }, { 0, { 0 } } };
	struct uepoll_stats st;
	int fds0 = count_fds(), fd = t_efd();

	/* NULL instance */
	all_fail(NULL, -EINVAL);
	/* zero-filled: "not initialised" */
	memset(&z, 0, sizeof(z));
	all_fail(&z, -EINVAL);
	/* unknown flags, capacity */
	CHECK_EQ(uepoll_init(&u, 4, 0x80000000u), -EINVAL);
	all_fail(&u, -EINVAL);
	CHECK_EQ(uepoll_init(&u, 0, 0), -EINVAL);

	t_init(&u, 4);
	CHECK_EQ(uepoll_harvest(&u, NULL, 2), -EINVAL);
	CHECK_EQ(uepoll_harvest(&u, evs, 0), -EINVAL);
	CHECK_EQ(uepoll_harvest(&u, evs, -1), -EINVAL);
	CHECK_EQ(uepoll_wait(&u, NULL, 2, 0), -EINVAL);
	CHECK_EQ(uepoll_wait(&u, evs, 0, 0), -EINVAL);
	CHECK_EQ(uepoll_wait(&u, evs, -5, 10), -EINVAL);
	CHECK_EQ(uepoll_get_stats(&u, NULL), -EINVAL);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_ADD, fd, NULL), -EFAULT);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_MOD, fd, NULL), -EFAULT);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, -5, NULL), -EBADF);
	CHECK_EQ(uepoll_ctl(&u, -1, fd, evs), -EINVAL);
	CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, 1), 0);
	CHECK_EQ(uepoll_get_stats(&u, &st), 0);
	/* still working */
	t_write(fd);
	CHECK_EQ(uepoll_wait(&u, evs, 2, 1000), 1);
	/* destroyed with a registration and a pending event: no leak */
	t_write(fd);
	usleep(1000);
	uepoll_exit(&u);
	all_fail(&u, -EBADF);
	/* a destroyed instance can be initialised again */
	t_init(&u, 4);
	CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, 1), 0);
	uepoll_exit(&u);
	close(fd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
