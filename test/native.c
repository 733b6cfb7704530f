// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * native: what only the EPOLL_USERPOLL backend has: harvest without a
 * system call, DEL final with slot reuse, the ESTALE wake-up, the spin
 * option, fork() (-ECHILD in the child, parent unaffected).  Skips on the
 * other backends.  Auto must pick native where the kernel has the feature.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include "helpers.h"

static void *late_write(void *arg)
{
	struct timespec ts = { 0, 50 * 1000000 };

	nanosleep(&ts, NULL);
	t_write(*(int *)arg);
	return NULL;
}

int main(void)
{
	struct uepoll u, v;
	struct uepoll_stats s0, s1;
	struct epoll_event evs[8];
	int fds0 = count_fds(), a, b, r, st;
	pthread_t th;
	pid_t pid;

	t_init(&u, 4);
	if (uepoll_backend(&u) != UEPOLL_BACKEND_NATIVE) {
		if (!getenv("UEPOLL_BACKEND") && t_native_feature())
			FAIL("auto picked %s on a kernel with EPOLL_USERPOLL",
			     uepoll_backend_name(&u));
		uepoll_exit(&u);
		SKIP("native backend only (this run: %s)", getenv("UEPOLL_BACKEND") ?: "auto");
	}
	printf("backend %s\n", uepoll_backend_name(&u));
	r = fcntl(uepoll_fd(&u), F_GETFD);
	CHECK(r >= 0 && (r & FD_CLOEXEC));

	a = t_efd();
	b = t_efd();
	CHECK_EQ(t_add(&u, a, EPOLLIN | EPOLLET, 1), 0);
	CHECK_EQ(uepoll_harvest(&u, evs, 8), 0);
	t_write(a);
	CHECK_EQ(uepoll_get_stats(&u, &s0), 0);
	CHECK_EQ(uepoll_harvest(&u, evs, 8), 1);
	CHECK_EQ(evs[0].data.u64, 1);
	CHECK(evs[0].events & EPOLLIN);
	CHECK_EQ(uepoll_harvest(&u, evs, 8), 0);
	CHECK_EQ(uepoll_get_stats(&u, &s1), 0);
	CHECK_EQ(s1.syscalls, s0.syscalls);	/* harvest: no system call */
	CHECK_EQ(s1.harvests, s0.harvests + 2);
	CHECK_EQ(s1.events, s0.events + 1);

	/* DEL is final, and the slot is reused at once by a new ADD;
	 * a ctl is one system call: the kernel makes every check */
	CHECK_EQ(uepoll_get_stats(&u, &s0), 0);
	CHECK_EQ(t_add(&u, b, EPOLLIN | EPOLLET, 2), 0);
	CHECK_EQ(uepoll_get_stats(&u, &s1), 0);
	CHECK_EQ(s1.ctl_syscalls, s0.ctl_syscalls + 1);
	t_write(b);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, b, NULL), 0);
	CHECK_EQ(t_add(&u, b, EPOLLIN | EPOLLET, 3), 0);
	r = uepoll_harvest(&u, evs, 8);
	for (int i = 0; i < r; i++)
		CHECK_EQ(evs[i].data.u64, 3);
	t_read(b);
	t_write(b);
	r = uepoll_wait(&u, evs, 8, 1000);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 3);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, b, NULL), 0);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, b, NULL), -ENOENT);	/* the kernel's error */

	/* timeout; a drained ring (head released, C6) is empty to the
	 * kernel: the wait sleeps, no ESTALE answer */
	CHECK_EQ(uepoll_wait(&u, evs, 8, 0), 0);
	CHECK_EQ(uepoll_get_stats(&u, &s0), 0);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 30), 0);
	CHECK_EQ(uepoll_get_stats(&u, &s1), 0);
	CHECK_EQ(s1.estale, s0.estale);
	CHECK(s1.sleeps > s0.sleeps);

	/* no spin: the wake-up is an ESTALE answer */
	t_init(&v, 2);
	CHECK_EQ(uepoll_set_spin(&v, 0), 0);
	t_read(a);
	CHECK_EQ(t_add(&v, a, EPOLLIN | EPOLLET, 9), 0);
	CHECK_EQ(pthread_create(&th, NULL, late_write, &a), 0);
	r = uepoll_wait(&v, evs, 8, 5000);
	pthread_join(th, NULL);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 9);
	CHECK_EQ(uepoll_get_stats(&v, &s1), 0);
	CHECK(s1.sleeps >= 1);
	CHECK(s1.estale >= 1);
	CHECK_EQ(s1.spins, 0);
	uepoll_exit(&v);

	/* fork: the child gets -ECHILD, never a crash; the parent goes on */
	t_read(a);
	t_write(a);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int bad = 0;

		bad |= uepoll_harvest(&u, evs, 8) != -ECHILD;
		bad |= uepoll_wait(&u, evs, 8, 10) != -ECHILD;
		bad |= t_add(&u, b, EPOLLIN | EPOLLET, 5) != -ECHILD;
		bad |= uepoll_fd(&u) < 0;
		uepoll_exit(&u);
		_exit(bad);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	r = uepoll_wait(&u, evs, 8, 1000);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 1);

	uepoll_exit(&u);
	close(a);
	close(b);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
