// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * lost_wakeup (guarantee 1): readiness present at ADD time is reported;
 * every edge after it is reported, round after round, with writes from
 * this thread and from another thread while we sleep.
 */
#include <pthread.h>
#include "helpers.h"

#define N 32
static int fds[N];

static void *writer(void *arg)
{
	(void)arg;
	usleep(20000);
	for (int i = 0; i < N; i += 3)
		t_write(fds[i]);
	return NULL;
}

int main(void)
{
	struct uepoll u;
	unsigned cnt[N];
	int fds0 = count_fds();

	t_init(&u, N);
	for (int i = 0; i < N; i++) {
		fds[i] = t_efd();
		if (i % 2)
			t_write(fds[i]);	/* ready before ADD */
		CHECK_EQ(t_add(&u, fds[i], EPOLLIN | EPOLLET, (uint64_t)i), 0);
	}
	memset(cnt, 0, sizeof(cnt));
	t_collect(&u, 200, N / 2, cnt, N);
	for (int i = 0; i < N; i++)
		CHECK_EQ(cnt[i], i % 2);
	for (int round = 0; round < 200; round++) {
		int k = (round * 7) % N;

		/* consume, then one edge on a subset of fds */
		for (int i = 0; i < N; i++)
			t_read(fds[i]);
		for (int i = k; i < N; i += 5)
			t_write(fds[i]);
		memset(cnt, 0, sizeof(cnt));
		t_collect(&u, 2000, (N - k + 4) / 5, cnt, N);
		for (int i = 0; i < N; i++)
			if (cnt[i] != (i >= k && (i - k) % 5 == 0))
				FAIL("round %d fd %d: %u events", round, i, cnt[i]);
	}
	/* edges while the consumer sleeps in uepoll_wait */
	{
		pthread_t th;
		int want = (N + 2) / 3;

		for (int i = 0; i < N; i++)
			t_read(fds[i]);
		memset(cnt, 0, sizeof(cnt));
		pthread_create(&th, NULL, writer, NULL);
		t_collect(&u, 3000, want, cnt, N);
		pthread_join(th, NULL);
		for (int i = 0; i < N; i++)
			CHECK_EQ(cnt[i], i % 3 == 0);
	}
	uepoll_exit(&u);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
