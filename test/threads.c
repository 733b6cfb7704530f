// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * threads (guarantee 8).  Allowed concurrently: uepoll_ctl from any
 * number of threads, while one thread harvests or sleeps in uepoll_wait.
 *  a) a thread sleeping in uepoll_wait(-1) is woken by an ADD of a ready
 *     fd made from another thread;
 *  b) registrations made by a thread that then exits keep working;
 *  c) a ctl thread churns ADD/MOD/DEL with generations in the data while
 *     a producer writes and this thread harvests: no event of a retired
 *     generation (DEL or MOD returned before the harvest began);
 *  d) a thread ADDs a not-yet-ready fd and then blocks in read(2) for
 *     good: the harvester still sees the edge that comes later.  (On
 *     io_uring the poll's task work goes to the thread that submitted it;
 *     with IORING_SETUP_COOP_TASKRUN, the default setup, the kernel wakes
 *     that thread from its interruptible sleep to run it.)
 */
#include <pthread.h>
#include "helpers.h"

static struct uepoll u;
static int fds[8];
static int stop;
static uint32_t retired[8];
static uint64_t seen_events;

static void *sleeper(void *arg)
{
	struct epoll_event evs[4];
	int r = uepoll_wait(&u, evs, 4, -1);

	*(int *)arg = r == 1 ? (int)evs[0].data.u64 : -1000 + r;
	return NULL;
}

static void *adder(void *arg)
{
	(void)arg;
	for (int i = 0; i < 4; i++)
		if (t_add(&u, fds[i], EPOLLIN | EPOLLET, 100 + (uint64_t)i))
			return (void *)1;
	return NULL;
}

static void *producer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		for (int i = 4; i < 8; i++)
			t_write(fds[i]);
		usleep(10);
	}
	return NULL;
}

static void *churner(void *arg)
{
	uint32_t gen[8] = { 0 };

	(void)arg;
	/* at least 3000 operations, and on until the harvester saw 50 events
	 * (valgrind runs one thread at a time) */
	for (int n = 0; n < 3000 || (__atomic_load_n(&seen_events, __ATOMIC_RELAXED) < 50 &&
				    n < 3000000); n++) {
		int i = 4 + n % 4;

		if (n >= 3000 && n % 64 == 0)
			usleep(100);
		uint32_t old = gen[i]++;

		if (n % 3) {
			if (t_mod(&u, fds[i], EPOLLIN | EPOLLET, ((uint64_t)i << 32) | gen[i]))
				return (void *)1;
		} else {
			if (uepoll_ctl(&u, EPOLL_CTL_DEL, fds[i], NULL))
				return (void *)2;
			__atomic_store_n(&retired[i], old + 1, __ATOMIC_RELEASE);
			if (t_add(&u, fds[i], EPOLLIN | EPOLLET, ((uint64_t)i << 32) | gen[i]))
				return (void *)3;
		}
		/* every generation below retired[i] is over */
		__atomic_store_n(&retired[i], old + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int pipefd[2], dfd;

static void *add_then_block(void *arg)
{
	char c;

	if (t_add(&u, dfd, EPOLLIN | EPOLLET, 55)) {
		__atomic_store_n((int *)arg, -1, __ATOMIC_RELEASE);
		return (void *)1;
	}
	__atomic_store_n((int *)arg, 1, __ATOMIC_RELEASE);
	if (read(pipefd[0], &c, 1) != 1)	/* blocks until the end of d) */
		return (void *)2;
	return NULL;
}

int main(void)
{
	struct epoll_event evs[16];
	pthread_t th, th2;
	int fds0 = count_fds(), got = 0;
	void *ret;

	t_init(&u, 16);
	for (int i = 0; i < 8; i++)
		fds[i] = t_efd();

	/* a) */
	pthread_create(&th, NULL, sleeper, &got);
	usleep(30000);
	t_write(fds[0]);
	CHECK_EQ(t_add(&u, fds[0], EPOLLIN | EPOLLET, 7), 0);
	pthread_join(th, NULL);
	CHECK_EQ(got, 7);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fds[0], NULL), 0);
	t_read(fds[0]);

	/* b) */
	pthread_create(&th, NULL, adder, NULL);
	pthread_join(th, &ret);
	CHECK(ret == NULL);
	usleep(10000);
	for (int round = 0; round < 3; round++) {
		unsigned cnt[104] = { 0 };

		for (int i = 0; i < 4; i++)
			t_write(fds[i]);
		t_collect(&u, 2000, 4, cnt, 104);
		for (int i = 0; i < 4; i++)
			if (cnt[100 + i] != 1)
				FAIL("round %d: fd added by an exited thread: %u events", round, cnt[100 + i]);
		for (int i = 0; i < 4; i++)
			t_read(fds[i]);
	}

	/* c) */
	for (int i = 4; i < 8; i++)
		CHECK_EQ(t_add(&u, fds[i], EPOLLIN | EPOLLET, (uint64_t)i << 32), 0);
	pthread_create(&th, NULL, producer, NULL);
	pthread_create(&th2, NULL, churner, NULL);
	{
		int done = 0, n = 0;
		uint64_t bad = 0, events = 0;

		while (!done) {
			uint32_t snap[8];
			int r;

			done = pthread_tryjoin_np(th2, &ret) == 0;
			for (int i = 4; i < 8; i++)
				snap[i] = __atomic_load_n(&retired[i], __ATOMIC_ACQUIRE);
			r = n++ % 2 ? uepoll_harvest(&u, evs, 16) : uepoll_wait(&u, evs, 16, 1);
			CHECK(r >= 0);
			t_check_distinct(evs, r);
			for (int k = 0; k < r; k++) {
				int i = (int)(evs[k].data.u64 >> 32);
				uint32_t g = (uint32_t)evs[k].data.u64;

				if (i < 4 || i >= 8)
					FAIL("bad data %llx", (unsigned long long)evs[k].data.u64);
				if (g < snap[i])
					bad++;
				t_read(fds[i]);
			}
			events += (uint64_t)r;
			__atomic_store_n(&seen_events, events, __ATOMIC_RELAXED);
		}
		CHECK(ret == NULL);
		__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
		pthread_join(th, NULL);
		printf("churn: %llu events\n", (unsigned long long)events);
		if (bad)
			FAIL("%llu events of retired registrations", (unsigned long long)bad);
		CHECK(events > 0);
	}
	/* d) */
	{
		int added = 0, r;
		char c = 'x';

		CHECK(pipe(pipefd) == 0);
		dfd = t_efd();
		pthread_create(&th, NULL, add_then_block, &added);
		while (!__atomic_load_n(&added, __ATOMIC_ACQUIRE))
			usleep(1000);
		usleep(20000);	/* the thread is asleep in read() */
		CHECK_EQ(added, 1);
		do
			r = uepoll_wait(&u, evs, 16, 10);
		while (r > 0);
		t_write(dfd);
		r = uepoll_wait(&u, evs, 16, 2000);
		CHECK(write(pipefd[1], &c, 1) == 1);
		pthread_join(th, &ret);
		CHECK(ret == NULL);
		if (r != 1 || evs[0].data.u64 != 55)
			FAIL("edge on a fd added by a sleeping thread: %d events", r);
		close(pipefd[0]);
		close(pipefd[1]);
		close(dfd);
	}
	uepoll_exit(&u);
	for (int i = 0; i < 8; i++)
		close(fds[i]);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
