// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * no_zombie: no kernel-side registration outlives its DEL.  A ctl thread
 * churns MOD/DEL/ADD while producers write and this thread harvests; at
 * the end everything is DELeted and the kernel's own list must be empty:
 * /proc/self/fdinfo of uepoll_fd() lists the io_uring polls ("op=6"
 * lines) or the epoll registrations ("tfd:" lines).  On io_uring a poll
 * remove or update that races a wake-up answers EALREADY and leaves the
 * poll alive; the backend must cancel it.
 */
#include <pthread.h>
#include "helpers.h"

#define N 4
static struct uepoll u;
static int fds[N], stop;

static int kernel_regs(void)
{
	char path[64], line[256];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", uepoll_fd(&u));
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "op=6,") || !strncmp(line, "tfd:", 4))
			n++;
	fclose(f);
	return n;
}

static void *producer(void *arg)
{
	int fd = fds[(long)arg];

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
		t_write(fd);
	return NULL;
}

static void *churner(void *arg)
{
	(void)arg;
	for (int n = 0; n < 20000; n++) {
		int i = n % N;

		if (n % 2) {
			if (t_mod(&u, fds[i], EPOLLIN | EPOLLET, (uint64_t)n))
				return (void *)1;
		} else {
			if (uepoll_ctl(&u, EPOLL_CTL_DEL, fds[i], NULL) ||
			    t_add(&u, fds[i], EPOLLIN | EPOLLET, (uint64_t)n))
				return (void *)2;
		}
	}
	return NULL;
}

int main(void)
{
	struct epoll_event evs[16];
	pthread_t pr[N], ch;
	int fds0 = count_fds(), regs = -1;
	void *ret;

	t_init(&u, N);
	if (kernel_regs() < 0)
		SKIP("no /proc/self/fdinfo");
	for (int i = 0; i < N; i++) {
		fds[i] = t_efd();
		CHECK_EQ(t_add(&u, fds[i], EPOLLIN | EPOLLET, 0), 0);
	}
	regs = kernel_regs();
	if (regs == 0)
		SKIP("this kernel's fdinfo does not list the registrations");
	CHECK_EQ(regs, N);
	regs = -1;
	for (long i = 0; i < N; i++)
		pthread_create(&pr[i], NULL, producer, (void *)i);
	pthread_create(&ch, NULL, churner, NULL);
	while (pthread_tryjoin_np(ch, &ret)) {
		int r = uepoll_wait(&u, evs, 16, 1);

		CHECK(r >= 0);
		for (int k = 0; k < r; k++)
			for (int i = 0; i < N; i++)
				t_read(fds[i]);
	}
	CHECK(ret == NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < N; i++)
		pthread_join(pr[i], NULL);
	for (int i = 0; i < N; i++)
		CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, fds[i], NULL), 0);
	/* cancels complete asynchronously: harvest, look again, up to 2 s */
	for (int t = 0; t < 200 && regs != 0; t++) {
		uepoll_wait(&u, evs, 16, 10);
		regs = kernel_regs();
	}
	if (regs != 0)
		FAIL("%d kernel registrations left after every DEL", regs);
	CHECK_EQ(t_add(&u, fds[0], EPOLLIN | EPOLLET, 1), 0);
	CHECK_EQ(kernel_regs(), 1);
	uepoll_exit(&u);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
