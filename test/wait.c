// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * wait: timeout 0 never sleeps, a timeout is honoured (also when a wake-up
 * brings only a completion of a deleted registration), -1 sleeps until an
 * event from another thread, and a signal handler that runs while we
 * sleep ends the call with -EINTR (with or without SA_RESTART).
 */
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include "helpers.h"

static int wfd;
static volatile sig_atomic_t hits;

static void on_alarm(int sig) { (void)sig; hits++; }

static void *late_writer(void *arg)
{
	(void)arg;
	usleep(50000);
	t_write(wfd);
	return NULL;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

int main(void)
{
	struct uepoll u;
	struct epoll_event evs[4];
	struct timespec t0;
	pthread_t th;
	int fds0 = count_fds(), r;
	long ms;

	wfd = t_efd();
	t_init(&u, 4);
	CHECK_EQ(t_add(&u, wfd, EPOLLIN | EPOLLET, 3), 0);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_EQ(uepoll_wait(&u, evs, 4, 0), 0);
	CHECK(ms_since(&t0) < 20);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_EQ(uepoll_wait(&u, evs, 4, 60), 0);
	ms = ms_since(&t0);
	if (ms < 55 || ms > 2000)
		FAIL("60 ms timeout took %ld ms", ms);

	pthread_create(&th, NULL, late_writer, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = uepoll_wait(&u, evs, 4, -1);
	pthread_join(th, NULL);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 3);
	CHECK(ms_since(&t0) >= 40);
	t_read(wfd);

	/* a wake-up for a deleted registration does not end the wait early */
	{
		int x = t_efd();

		CHECK_EQ(t_add(&u, x, EPOLLIN | EPOLLET, 9), 0);
		t_write(x);
		usleep(2000);
		CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, x, NULL), 0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		CHECK_EQ(uepoll_wait(&u, evs, 4, 50), 0);
		ms = ms_since(&t0);
		if (ms < 45)
			FAIL("50 ms wait returned 0 after %ld ms", ms);
		close(x);
	}

	/* EINTR, with and without SA_RESTART */
	for (int restart = 0; restart < 2; restart++) {
		struct sigaction sa;
		struct itimerval it = { { 0, 0 }, { 0, 30000 } };

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;
		sa.sa_flags = restart ? SA_RESTART : 0;
		sigaction(SIGALRM, &sa, NULL);
		hits = 0;
		setitimer(ITIMER_REAL, &it, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		errno = 4321;
		r = uepoll_wait(&u, evs, 4, 3000);
		ms = ms_since(&t0);
		if (r != -EINTR || hits != 1 || ms > 2000)
			FAIL("SA_RESTART=%d: wait returned %d after %ld ms, %d signals", restart, r, ms, (int)hits);
		CHECK_EQ(errno, 4321);	/* the error is the return value only */
		/* and the instance keeps working */
		t_write(wfd);
		CHECK_EQ(uepoll_wait(&u, evs, 4, 1000), 1);
		t_read(wfd);
	}
	uepoll_exit(&u);
	close(wfd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
