// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * init: capacity bounds, flags, explicit backends, names, CLOEXEC, exit
 * frees every fd; the automatic choice: native where the kernel has it,
 * else uring, but not where the kernel has IORING_OP_EPOLL_WAIT (then
 * epoll) unless UEPOLL_URING_AUTO=1, else epoll.
 */
#include <fcntl.h>
#include <liburing.h>
#include <sys/wait.h>
#include "helpers.h"

/* what auto must take here, by the rule of uepoll_init(3) */
static unsigned auto_expected(int native)
{
	struct io_uring_probe *p;
	const char *e = getenv("UEPOLL_URING_AUTO");
	int epoll_wait_op = 0;

	if (native)
		return UEPOLL_BACKEND_NATIVE;
	if (uepoll_backend_probe(UEPOLL_BACKEND_URING) != 0)
		return UEPOLL_BACKEND_EPOLL;
	p = io_uring_get_probe();
	if (p) {
		epoll_wait_op = io_uring_opcode_supported(p, 59);
		io_uring_free_probe(p);
	}
	if (epoll_wait_op && !(e && !strcmp(e, "1")))
		return UEPOLL_BACKEND_EPOLL;
	return UEPOLL_BACKEND_URING;
}

/* the choice in a child (it is made once per process), URING_AUTO set or not */
static void auto_child(int native, const char *uring_auto)
{
	pid_t pid = fork();
	int st;

	CHECK(pid >= 0);
	if (pid == 0) {
		struct uepoll u;

		if (uring_auto)
			setenv("UEPOLL_URING_AUTO", uring_auto, 1);
		else
			unsetenv("UEPOLL_URING_AUTO");
		unsetenv("UEPOLL_BACKEND");
		CHECK_EQ(uepoll_init(&u, 4, 0), 0);
		if ((unsigned)uepoll_backend(&u) != auto_expected(native))
			FAIL("auto took %s, not %s (UEPOLL_URING_AUTO=%s)", uepoll_backend_name(&u),
			     uepoll_backend_str(auto_expected(native)), uring_auto ?: "unset");
		printf("auto takes %s (UEPOLL_URING_AUTO=%s)\n", uepoll_backend_name(&u),
		       uring_auto ?: "unset");
		uepoll_exit(&u);
		fflush(stdout);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* UEPOLL_URING_SETUP, UEPOLL_URING_CQ: a malformed value is EINVAL too,
 * with nothing kept and errno untouched (measurement knobs: a typo must
 * not measure the default) */
static void uring_knobs(void)
{
	static const char *const bad_setup[] = { "plian", "COOP", "coop ", "1" };
	static const char *const bad_cq[] = { "0", "x", "-4", "12a", "65537", "99999999999" };
	static const char *const good_cq[] = { "4", "65536", "" };
	const char *had = getenv("UEPOLL_URING_SETUP");
	char *keep = had ? strdup(had) : NULL;
	int fds0 = count_fds();
	struct uepoll u;
	unsigned i;

	if (uepoll_backend_probe(UEPOLL_BACKEND_URING) != 0)
		return;
	for (i = 0; i < sizeof(bad_setup) / sizeof(bad_setup[0]); i++) {
		setenv("UEPOLL_URING_SETUP", bad_setup[i], 1);
		errno = 1234;
		CHECK_EQ(uepoll_init(&u, 4, UEPOLL_BACKEND_URING), -EINVAL);
		CHECK_EQ(errno, 1234);
	}
	setenv("UEPOLL_URING_SETUP", "plain", 1);
	CHECK_EQ(uepoll_init(&u, 4, UEPOLL_BACKEND_URING), 0);
	uepoll_exit(&u);
	setenv("UEPOLL_URING_SETUP", "coop", 1);
	CHECK_EQ(uepoll_init(&u, 4, UEPOLL_BACKEND_URING), 0);
	uepoll_exit(&u);
	unsetenv("UEPOLL_URING_SETUP");
	for (i = 0; i < sizeof(bad_cq) / sizeof(bad_cq[0]); i++) {
		setenv("UEPOLL_URING_CQ", bad_cq[i], 1);
		errno = 1234;
		CHECK_EQ(uepoll_init(&u, 4, UEPOLL_BACKEND_URING), -EINVAL);
		CHECK_EQ(errno, 1234);
	}
	for (i = 0; i < sizeof(good_cq) / sizeof(good_cq[0]); i++) {
		setenv("UEPOLL_URING_CQ", good_cq[i], 1);
		CHECK_EQ(uepoll_init(&u, 4, UEPOLL_BACKEND_URING), 0);
		uepoll_exit(&u);
	}
	unsetenv("UEPOLL_URING_CQ");
	/* where auto would take uring, the typo is EINVAL there too (a child:
	 * the choice is made once per process) */
	if (!t_native_feature()) {
		pid_t pid = fork();
		int st;

		CHECK(pid >= 0);
		if (pid == 0) {
			setenv("UEPOLL_URING_AUTO", "1", 1);
			setenv("UEPOLL_URING_SETUP", "plian", 1);
			CHECK_EQ(uepoll_init(&u, 4, 0), -EINVAL);
			_exit(0);
		}
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	if (keep)
		setenv("UEPOLL_URING_SETUP", keep, 1);
	free(keep);
	CHECK_EQ(count_fds(), fds0);
}

int main(void)
{
	struct uepoll u;
	const char *be = getenv("UEPOLL_BACKEND");
	int fds0 = count_fds(), r;
	/* native exists only where the kernel says so (the procfs file) */
	int native = t_native_feature();

	/* first: the choice is made once per process, and a child inherits it */
	auto_child(native, NULL);
	auto_child(native, "1");
	CHECK_EQ(uepoll_init(&u, 0, 0), -EINVAL);
	CHECK_EQ(uepoll_init(&u, 65537, 0), -EINVAL);
	CHECK_EQ(uepoll_init(&u, 8, 0x100), -EINVAL);
	CHECK_EQ(uepoll_init(&u, 8, 0x2), -EINVAL);
	CHECK_EQ(uepoll_init(NULL, 8, 0), -EINVAL);
	/* native without the kernel feature: ENOSYS, never a fallback */
	if (!native) {
		CHECK_EQ(uepoll_init(&u, 8, UEPOLL_BACKEND_NATIVE), -ENOSYS);
		CHECK_EQ(uepoll_fd(&u), -EINVAL);	/* failed init: "not initialised" */
	} else {
		CHECK_EQ(uepoll_init(&u, 8, UEPOLL_BACKEND_NATIVE), 0);
		CHECK_EQ(uepoll_backend(&u), UEPOLL_BACKEND_NATIVE);
		uepoll_exit(&u);
	}
	/* an explicit epoll always works */
	CHECK_EQ(uepoll_init(&u, 8, UEPOLL_BACKEND_EPOLL), 0);
	CHECK_EQ(uepoll_backend(&u), UEPOLL_BACKEND_EPOLL);
	CHECK(!strcmp(uepoll_backend_name(&u), uepoll_backend_str(UEPOLL_BACKEND_EPOLL)));
	uepoll_exit(&u);

	t_init(&u, 65536);
	uepoll_exit(&u);
	t_init(&u, 1);
	if (be)
		CHECK(!strcmp(uepoll_backend_name(&u), be));
	r = fcntl(uepoll_fd(&u), F_GETFD);
	CHECK(r >= 0 && (r & FD_CLOEXEC));
	uepoll_exit(&u);
	uepoll_exit(&u);	/* idempotent */
	CHECK_EQ(uepoll_fd(&u), -EBADF);

	CHECK_EQ(uepoll_init(&u, 4, be ? 0 : UEPOLL_BACKEND_EPOLL), 0);
	r = fcntl(uepoll_fd(&u), F_GETFD);
	CHECK(r >= 0 && !(r & FD_CLOEXEC));
	uepoll_exit(&u);

	/* environment override: a bad value is EINVAL, never a guess */
	setenv("UEPOLL_BACKEND", "bogus", 1);
	CHECK_EQ(uepoll_init(&u, 4, 0), -EINVAL);
	/* an explicit flag wins over the environment */
	CHECK_EQ(uepoll_init(&u, 4, UEPOLL_BACKEND_EPOLL), 0);
	uepoll_exit(&u);
	setenv("UEPOLL_BACKEND", uepoll_backend_str(UEPOLL_BACKEND_NATIVE), 1);
	if (!native) {
		CHECK_EQ(uepoll_init(&u, 4, 0), -ENOSYS);
	} else {
		CHECK_EQ(uepoll_init(&u, 4, 0), 0);
		CHECK_EQ(uepoll_backend(&u), UEPOLL_BACKEND_NATIVE);
		uepoll_exit(&u);
	}
	/* auto: native first where the kernel has it */
	unsetenv("UEPOLL_BACKEND");
	uring_knobs();
	CHECK_EQ(uepoll_init(&u, 4, 0), 0);
	if (native)
		CHECK_EQ(uepoll_backend(&u), UEPOLL_BACKEND_NATIVE);
	else
		CHECK(uepoll_backend(&u) != UEPOLL_BACKEND_NATIVE);
	uepoll_exit(&u);

	CHECK_EQ(count_fds(), fds0);
	return 0;
}
