// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * fallback: when io_uring_setup is refused (seccomp filter returning EPERM
 * or ENOSYS, as io_uring_disabled or an old kernel would), an explicit
 * uring backend fails with that errno, and auto picks epoll (native where
 * the kernel has EPOLL_USERPOLL: it does not need io_uring).  Runs in
 * forked children (the auto choice is cached per process).
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "helpers.h"

static void deny_io_uring(int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)err),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		printf("SKIP: seccomp: %s\n", strerror(errno));
		_exit(T_SKIP);
	}
}

static int child(int err)
{
	struct uepoll u;
	int fd = t_efd();

	deny_io_uring(err);
	unsetenv("UEPOLL_BACKEND");
	if (uepoll_init(&u, 4, UEPOLL_BACKEND_URING) != -err)
		FAIL("explicit uring under seccomp %s: not -%d", strerror(err), err);
	if (uepoll_init(&u, 4, 0))
		FAIL("auto init failed");
	if (uepoll_backend(&u) != (int)(t_native_feature() ? UEPOLL_BACKEND_NATIVE : UEPOLL_BACKEND_EPOLL))
		FAIL("auto picked %s, not %s", uepoll_backend_name(&u),
		     uepoll_backend_str(t_native_feature() ? UEPOLL_BACKEND_NATIVE
							    : UEPOLL_BACKEND_EPOLL));
	CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, 1), 0);
	t_write(fd);
	{
		struct epoll_event ev;

		CHECK_EQ(uepoll_wait(&u, &ev, 1, 1000), 1);
	}
	uepoll_exit(&u);
	/* forcing uring through the environment is an error too */
	setenv("UEPOLL_BACKEND", uepoll_backend_str(UEPOLL_BACKEND_URING), 1);
	if (uepoll_init(&u, 4, 0) != -err)
		FAIL("UEPOLL_BACKEND=uring under seccomp: not -%d", err);
	return 0;
}

int main(void)
{
	int errs[] = { EPERM, ENOSYS };

	for (unsigned i = 0; i < 2; i++) {
		int st;
		pid_t pid = fork();

		if (pid == 0)
			_exit(child(errs[i]));
		CHECK(waitpid(pid, &st, 0) == pid);
		if (WIFEXITED(st) && WEXITSTATUS(st) == T_SKIP)
			return T_SKIP;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			FAIL("child for %s failed", strerror(errs[i]));
	}
	return 0;
}
