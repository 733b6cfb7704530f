// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * backends: the registry API.  Every listed backend has a name that looks
 * up to it again, the list is the automatic choice's order, bad names and
 * values are refused with -EINVAL, errno is untouched, init refuses a
 * backend value no backend has, and probe agrees with init.  The
 * capabilities: known bits only, plain epoll has both (it is epoll), and
 * UEPOLL_CAP_LEVEL says whether uepoll_ctl() takes a registration
 * without EPOLLET.
 */
#include "helpers.h"

int main(void)
{
	unsigned b[16], one;
	int n, i, j, r;

	n = uepoll_backend_list(NULL, 0);
	CHECK(n >= 1 && n <= 15);
	CHECK_EQ(uepoll_backend_list(b, 16), n);
	CHECK_EQ(uepoll_backend_list(&one, 1), n);	/* count, not stored */
	CHECK_EQ(one, b[0]);
	CHECK_EQ(uepoll_backend_list(NULL, 1), -EINVAL);
	CHECK_EQ(uepoll_backend_list(b, -1), -EINVAL);
	for (i = 0; i < n; i++) {
		const char *s = uepoll_backend_str(b[i]);

		CHECK(s && *s);
		CHECK(b[i] != UEPOLL_BACKEND_AUTO && !(b[i] & ~UEPOLL_BACKEND_MASK));
		CHECK_EQ(uepoll_backend_lookup(s), b[i]);
		for (j = 0; j < i; j++)
			CHECK(b[j] != b[i] && strcmp(uepoll_backend_str(b[j]), s));
		printf("%s: probe %d\n", s, uepoll_backend_probe(b[i]));
	}
	/* the three the documentation promises, and plain epoll last (the
	 * fallback that needs nothing: always usable) */
	CHECK_EQ(uepoll_backend_lookup("native"), UEPOLL_BACKEND_NATIVE);
	CHECK_EQ(uepoll_backend_lookup("uring"), UEPOLL_BACKEND_URING);
	CHECK_EQ(uepoll_backend_lookup("epoll"), UEPOLL_BACKEND_EPOLL);
	CHECK_EQ(b[n - 1], UEPOLL_BACKEND_EPOLL);
	CHECK_EQ(uepoll_backend_probe(UEPOLL_BACKEND_EPOLL), 0);
	CHECK_EQ(uepoll_backend_lookup("auto"), UEPOLL_BACKEND_AUTO);
	CHECK(!strcmp(uepoll_backend_str(UEPOLL_BACKEND_AUTO), "auto"));

	/* bad input */
	errno = 1234;
	CHECK_EQ(uepoll_backend_lookup(NULL), -EINVAL);
	CHECK_EQ(uepoll_backend_lookup(""), -EINVAL);
	CHECK_EQ(uepoll_backend_lookup("Native"), -EINVAL);
	CHECK_EQ(uepoll_backend_lookup("epoll "), -EINVAL);
	CHECK_EQ(uepoll_backend_probe(UEPOLL_BACKEND_AUTO), -EINVAL);
	CHECK_EQ(uepoll_backend_probe((unsigned)(n + 1) << UEPOLL_BACKEND_SHIFT), -EINVAL);
	CHECK_EQ(uepoll_backend_probe(UEPOLL_BACKEND_EPOLL | UEPOLL_CLOEXEC), -EINVAL);
	CHECK_EQ(uepoll_backend_caps(UEPOLL_BACKEND_AUTO), -EINVAL);
	CHECK_EQ(uepoll_backend_caps((unsigned)(n + 1) << UEPOLL_BACKEND_SHIFT), -EINVAL);
	CHECK_EQ(uepoll_backend_caps(UEPOLL_BACKEND_EPOLL | UEPOLL_CLOEXEC), -EINVAL);
	CHECK(uepoll_backend_str((unsigned)(n + 1) << UEPOLL_BACKEND_SHIFT) == NULL);
	CHECK(uepoll_backend_str(UEPOLL_BACKEND_EPOLL | 1u << 12) == NULL);
	CHECK_EQ(errno, 1234);

	/* probe agrees with init, and caps with ctl, for each backend */
	CHECK_EQ(uepoll_backend_caps(UEPOLL_BACKEND_EPOLL),
		 UEPOLL_CAP_LEVEL | UEPOLL_CAP_POLLED_EVENTS);
	for (i = 0; i < n; i++) {
		int caps = uepoll_backend_caps(b[i]);
		struct uepoll u;

		CHECK(caps >= 0);
		CHECK_EQ(caps & ~(int)(UEPOLL_CAP_LEVEL | UEPOLL_CAP_POLLED_EVENTS), 0);
		printf("%s: caps %#x\n", uepoll_backend_str(b[i]), (unsigned)caps);
		r = uepoll_init(&u, 4, b[i]);
		CHECK_EQ(r, uepoll_backend_probe(b[i]));
		if (!r) {
			int efd = t_efd();

			CHECK_EQ(uepoll_backend(&u), b[i]);
			CHECK(!strcmp(uepoll_backend_name(&u), uepoll_backend_str(b[i])));
			CHECK_EQ(t_add(&u, efd, EPOLLIN, 1), caps & UEPOLL_CAP_LEVEL ? 0 : -EINVAL);
			uepoll_exit(&u);
			close(efd);
		}
	}
	/* a value of the widened field that no backend has */
	{
		struct uepoll u;

		CHECK_EQ(uepoll_init(&u, 4, (unsigned)(n + 1) << UEPOLL_BACKEND_SHIFT), -EINVAL);
		CHECK_EQ(uepoll_init(&u, 4, UEPOLL_BACKEND_MASK), -EINVAL);
	}
	return 0;
}
