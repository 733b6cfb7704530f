// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * overflow (guarantee 7): a CQ far smaller than the number of ready
 * registrations.  The io_uring backend must flush the overflowed
 * completions and re-arm the multishot polls that ended without
 * IORING_CQE_F_MORE, losing no readiness: every fd is reported, round
 * after round.  (UEPOLL_URING_CQ is a test knob of the uring backend; the
 * test runs unchanged on the others.)
 */
#include "helpers.h"

#define N 256

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
	for (int round = 0; round < 10; round++) {
		for (int w = 0; w < 3; w++)
			for (int i = 0; i < N; i++)
				t_write(fds[i]);
		usleep(2000);
		memset(cnt, 0, sizeof(cnt));
		t_collect(&u, 3000, N, cnt, N);
		for (int i = 0; i < N; i++)
			if (!cnt[i])
				FAIL("round %d: fd %d written, never reported", round, i);
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
