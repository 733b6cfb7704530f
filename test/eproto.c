// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * eproto: the native backend refuses a ring whose header does not say
 * what uepoll(7) promises, with -EPROTO, and keeps nothing: no mapping,
 * no fd, errno untouched, the instance "not initialised".  A failing
 * mmap() of the index ring gives its errno, with the header unmapped.
 *
 * The kernel always writes a correct header, so the test interposes on
 * the library's mmap()/munmap() (ld --wrap, see the Makefile: this test
 * links the static library): the wrapper hands the library a private
 * copy of the kernel's page with one field changed.  Native backend only.
 */
#include <sys/mman.h>
#include "helpers.h"

void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t len);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_munmap(void *addr, size_t len);

enum mode {
	M_NONE,
	M_MAGIC,		/* first header map: magic off by one bit */
	M_MAX,			/* max_items_nr != n */
	M_HLEN,			/* header_length one page more */
	M_ILEN_POW2,		/* index_length twice as long */
	M_ILEN_ODD,		/* index_length not a power of two */
	M_CHANGED,		/* full header map: magic differs from the first read */
	M_INDEX_FAILS,		/* mmap of the index ring fails */
};

static enum mode mode;
static int live;		/* mappings handed out and not unmapped */
static int header_maps;		/* offset-0 maps in this init */

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	struct epoll_uheader *h;
	void *real, *copy;

	if (mode == M_INDEX_FAILS && off != 0) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	real = __real_mmap(addr, len, prot, flags, fd, off);
	if (real == MAP_FAILED)
		return real;
	live++;
	if (off != 0 || mode == M_NONE || mode == M_INDEX_FAILS)
		return real;
	header_maps++;
	if (mode == M_CHANGED && header_maps == 1)
		return real;
	copy = __real_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (copy == MAP_FAILED) {
		perror("mmap copy");
		exit(T_FAIL);
	}
	memcpy(copy, real, len);
	__real_munmap(real, len);
	h = copy;
	switch (mode) {
	case M_MAGIC: h->magic ^= 1; break;
	case M_MAX: h->max_items_nr++; break;
	case M_HLEN: h->header_length += 4096; break;
	case M_ILEN_POW2: h->index_length *= 2; break;
	case M_ILEN_ODD: h->index_length += 4096; break;
	case M_CHANGED: h->magic = 0; break;
	default: break;
	}
	return copy;
}

int __wrap_munmap(void *addr, size_t len)
{
	int r = __real_munmap(addr, len);

	if (r == 0)
		live--;
	return r;
}

int main(void)
{
	static const struct { enum mode m; int err; const char *what; } cases[] = {
		{ M_MAGIC, -EPROTO, "wrong magic" },
		{ M_MAX, -EPROTO, "max_items_nr != n" },
		{ M_HLEN, -EPROTO, "header_length too long" },
		{ M_ILEN_POW2, -EPROTO, "index_length too long" },
		{ M_ILEN_ODD, -EPROTO, "index_length not a power of two" },
		{ M_CHANGED, -EPROTO, "header changed between the two maps" },
		{ M_INDEX_FAILS, -ENOMEM, "mmap of the index ring fails" },
	};
	struct epoll_event evs[4];
	int fds0, efd, r;
	struct uepoll u;

	if (!t_native_feature() ||
	    (getenv("UEPOLL_BACKEND") &&
	     uepoll_backend_lookup(getenv("UEPOLL_BACKEND")) != (int)UEPOLL_BACKEND_NATIVE))
		SKIP("native backend only (this run: %s%s)", getenv("UEPOLL_BACKEND") ?: "auto",
		     t_native_feature() ? "" : ", the kernel has no EPOLL_USERPOLL");

	fds0 = count_fds();
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		mode = cases[i].m;
		header_maps = 0;
		errno = 4321;
		r = uepoll_init(&u, 8, UEPOLL_BACKEND_NATIVE | UEPOLL_CLOEXEC);
		if (r != cases[i].err)
			FAIL("%s: uepoll_init = %d (%s), expected %d", cases[i].what, r,
			     strerror(-r), cases[i].err);
		CHECK_EQ(errno, 4321);
		if (live)
			FAIL("%s: %d mapping(s) left", cases[i].what, live);
		if (count_fds() != fds0)
			FAIL("%s: %d fd(s) left", cases[i].what, count_fds() - fds0);
		CHECK_EQ(uepoll_harvest(&u, evs, 4), -EINVAL);	/* not initialised */
	}

	/* the same calls unchanged: the instance works and exit unmaps all */
	mode = M_NONE;
	CHECK_EQ(uepoll_init(&u, 8, UEPOLL_BACKEND_NATIVE | UEPOLL_CLOEXEC), 0);
	CHECK_EQ(live, 2);
	efd = t_efd();
	CHECK_EQ(t_add(&u, efd, EPOLLIN | EPOLLET, 5), 0);
	t_write(efd);
	CHECK_EQ(uepoll_wait(&u, evs, 4, 1000), 1);
	CHECK_EQ(evs[0].data.u64, 5);
	uepoll_exit(&u);
	CHECK_EQ(live, 0);
	close(efd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
