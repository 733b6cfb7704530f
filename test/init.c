// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* init: capacity bounds, flags, explicit backends, names, CLOEXEC, exit frees every fd */
#include <fcntl.h>
#include "helpers.h"

int main(void)
{
	struct uepoll u;
	const char *be = getenv("UEPOLL_BACKEND");
	int fds0 = count_fds(), r;
	/* native exists only where the kernel says so (the procfs file) */
	int native = t_native_feature();

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
	CHECK_EQ(uepoll_init(&u, 4, 0), 0);
	if (native)
		CHECK_EQ(uepoll_backend(&u), UEPOLL_BACKEND_NATIVE);
	else
		CHECK(uepoll_backend(&u) != UEPOLL_BACKEND_NATIVE);
	uepoll_exit(&u);

	CHECK_EQ(count_fds(), fds0);
	return 0;
}
