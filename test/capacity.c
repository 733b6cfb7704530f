// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* capacity (guarantee 6): ENOSPC at n+1; the slot is reusable after DEL */
#include "helpers.h"

#define N 16

int main(void)
{
	struct uepoll u;
	struct epoll_event evs[N + 1];
	int fds[N + 1], fds0 = count_fds();
	unsigned cnt[N + 1];

	t_init(&u, N);
	for (int i = 0; i <= N; i++)
		fds[i] = t_efd();
	for (int i = 0; i < N; i++)
		CHECK_EQ(t_add(&u, fds[i], EPOLLIN | EPOLLET, (uint64_t)i), 0);
	CHECK_EQ(t_add(&u, fds[N], EPOLLIN | EPOLLET, N), -ENOSPC);
	CHECK_EQ(t_add(&u, fds[0], EPOLLIN | EPOLLET, 0), -EEXIST);	/* EEXIST before ENOSPC */
	CHECK_EQ(t_add(&u, -1, EPOLLIN | EPOLLET, 0), -EBADF);	/* EBADF before ENOSPC */
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fds[3], NULL), 0);
	CHECK_EQ(t_add(&u, fds[N], EPOLLIN | EPOLLET, N), 0);
	CHECK_EQ(t_add(&u, fds[3], EPOLLIN | EPOLLET, 3), -ENOSPC);
	/* everyone registered works, the deleted one is silent */
	for (int i = 0; i <= N; i++)
		t_write(fds[i]);
	memset(cnt, 0, sizeof(cnt));
	t_collect(&u, 300, N, cnt, N + 1);
	for (int i = 0; i <= N; i++)
		CHECK_EQ(cnt[i], i != 3);
	(void)evs;
	/* churn the last slot many times */
	for (int r = 0; r < 200; r++) {
		CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fds[N], NULL), 0);
		CHECK_EQ(t_add(&u, fds[N], EPOLLIN | EPOLLET, N), 0);
		CHECK_EQ(t_add(&u, fds[3], EPOLLIN | EPOLLET, 3), -ENOSPC);
	}
	uepoll_exit(&u);
	/* n = 1 */
	t_init(&u, 1);
	CHECK_EQ(t_add(&u, fds[0], EPOLLIN | EPOLLET, 0), 0);
	CHECK_EQ(t_add(&u, fds[1], EPOLLIN | EPOLLET, 1), -ENOSPC);
	uepoll_exit(&u);
	for (int i = 0; i <= N; i++)
		close(fds[i]);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
