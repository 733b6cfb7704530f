// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * spin: uepoll_set_spin() and UEPOLL_SPIN.  With a budget of 0 an empty
 * uepoll_wait() sleeps at once (no spin phase); with a budget it spins on
 * the ring first (native, uring; epoll has no ring and ignores it); an
 * event written during a long spin is returned; bad budgets and dead
 * instances get their errno; a malformed UEPOLL_SPIN fails uepoll_init().
 */
#include <pthread.h>
#include "helpers.h"

static void *late_write(void *arg)
{
	usleep(2000);
	t_write(*(int *)arg);
	return NULL;
}

int main(void)
{
	struct uepoll u, dead, zero;
	struct uepoll_stats a, b;
	struct epoll_event evs[4];
	int fd, fds0 = count_fds(), spins_ring, r;
	pthread_t th;

	t_init(&u, 4);
	spins_ring = uepoll_backend(&u) != UEPOLL_BACKEND_EPOLL;
	fd = t_efd();
	CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, 7), 0);

	CHECK_EQ(uepoll_set_spin(&u, UEPOLL_SPIN_MAX + 1), -EINVAL);
	CHECK_EQ(uepoll_set_spin(&u, UEPOLL_SPIN_MAX), 0);

	/* budget 0: straight to sleep */
	CHECK_EQ(uepoll_set_spin(&u, 0), 0);
	CHECK_EQ(uepoll_get_stats(&u, &a), 0);
	CHECK_EQ(uepoll_wait(&u, evs, 4, 20), 0);
	CHECK_EQ(uepoll_get_stats(&u, &b), 0);
	CHECK_EQ(b.spins, a.spins);
	CHECK(b.sleeps > a.sleeps);

	/* a budget: one spin phase per empty pass before the sleep */
	CHECK_EQ(uepoll_set_spin(&u, 1000), 0);
	CHECK_EQ(uepoll_get_stats(&u, &a), 0);
	CHECK_EQ(uepoll_wait(&u, evs, 4, 20), 0);
	CHECK_EQ(uepoll_get_stats(&u, &b), 0);
	if (spins_ring)
		CHECK(b.spins > a.spins);
	else
		CHECK_EQ(b.spins, a.spins);
	CHECK(b.sleeps > a.sleeps);

	/* the longest budget, an event arriving meanwhile: it is returned */
	CHECK_EQ(uepoll_set_spin(&u, UEPOLL_SPIN_MAX), 0);
	CHECK_EQ(pthread_create(&th, NULL, late_write, &fd), 0);
	r = uepoll_wait(&u, evs, 4, 5000);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 7);
	t_read(fd);

	/* not initialised, and after exit */
	memset(&zero, 0, sizeof(zero));
	CHECK_EQ(uepoll_set_spin(&zero, 1), -EINVAL);
	CHECK_EQ(uepoll_set_spin(NULL, 1), -EINVAL);
	t_init(&dead, 2);
	uepoll_exit(&dead);
	CHECK_EQ(uepoll_set_spin(&dead, 1), -EBADF);

	/* UEPOLL_SPIN: the default of the next instances */
	setenv("UEPOLL_SPIN", "0", 1);
	t_init(&dead, 2);
	CHECK_EQ(uepoll_get_stats(&dead, &a), 0);
	CHECK_EQ(uepoll_wait(&dead, evs, 4, 10), 0);
	CHECK_EQ(uepoll_get_stats(&dead, &b), 0);
	CHECK_EQ(b.spins, a.spins);
	uepoll_exit(&dead);
	const char *bad[] = { "x", "-1", "12a", "1048577", "99999999999999999999" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("UEPOLL_SPIN", bad[i], 1);
		errno = 1234;
		CHECK_EQ(uepoll_init(&dead, 2, 0), -EINVAL);
		CHECK_EQ(errno, 1234);
	}
	unsetenv("UEPOLL_SPIN");

	uepoll_exit(&u);
	close(fd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
