// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * overflow (guarantee 7): a CQ far smaller than the number of ready
 * registrations.  The io_uring backend must flush the overflowed
 * completions and re-arm the multishot polls that ended without
 * IORING_CQE_F_MORE, losing no readiness: every fd is reported, round
 * after round, by uepoll_wait() and by uepoll_harvest() alone (a busy
 * loop that never sleeps: on uring the harvest's own flush, as the
 * sleep's io_uring_enter() would flush them too).  (UEPOLL_URING_CQ is a
 * test knob of the uring backend; the test runs unchanged on the others.)
 */
#include "helpers.h"

#define N 256

/* uepoll_harvest() until every fd of N was reported, or ms passed */
static void harvest_all(struct uepoll *u, unsigned *cnt, int ms, int round)
{
	struct epoll_event evs[64];
	int64_t t0 = t_ms_now();
	int seen = 0;

	while (seen < N && t_ms_now() - t0 < ms) {
		int r = uepoll_harvest(u, evs, 64);

		if (r < 0)
			FAIL("uepoll_harvest: %s", strerror(-r));
		t_check_distinct(evs, r);
		for (int i = 0; i < r; i++)
			if (evs[i].data.u64 < N && !cnt[evs[i].data.u64]++)
				seen++;
	}
	if (seen < N)
		FAIL("harvest round %d: %d of %d fds written were reported in %d ms", round,
		     seen, N, ms);
}

int main(void)
{
	struct uepoll u;
	struct uepoll_stats st;
	unsigned cnt[N];
	int fds[N], fds0 = count_fds();

	setenv("UEPOLL_URING_CQ", "4", 1);
	t_init(&u, N);
	for (int i = 0; i < N; i++) {
		fds[i] = t_efd();
		CHECK_EQ(t_add(&u, fds[i], EPOLLIN | EPOLLET, (uint64_t)i), 0);
	}
	/* 10 rounds taken by uepoll_wait(), then 5 by harvests only */
	for (int round = 0; round < 15; round++) {
		for (int w = 0; w < 3; w++)
			for (int i = 0; i < N; i++)
				t_write(fds[i]);
		usleep(2000);
		memset(cnt, 0, sizeof(cnt));
		if (round < 10) {
			t_collect(&u, 3000, N, cnt, N);
			for (int i = 0; i < N; i++)
				if (!cnt[i])
					FAIL("round %d: fd %d written, never reported", round, i);
		} else {
			harvest_all(&u, cnt, 3000, round);
		}
		for (int i = 0; i < N; i++)
			t_read(fds[i]);
		/* drain what came after the counters were read */
		memset(cnt, 0, sizeof(cnt));
		t_collect(&u, 20, 0, cnt, N);
	}
	CHECK_EQ(uepoll_get_stats(&u, &st), 0);
	printf("overflows %llu rearms %llu\n", (unsigned long long)st.overflows,
	       (unsigned long long)st.rearms);
	if (uepoll_backend(&u) == UEPOLL_BACKEND_URING && (!st.overflows || !st.rearms))
		FAIL("uring: the overflow path was not exercised");
	uepoll_exit(&u);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
