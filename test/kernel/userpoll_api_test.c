// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * userpoll_api_test - every argument check of epoll_create2(), epoll_ctl(),
 * epoll_wait() and mmap() on an EPOLL_USERPOLL instance, and the layout of
 * the mapping (doc/PROTOCOL.md sections 1, 2, 6, 7).  Raw system calls.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "userpoll.h"

#ifndef __NR_epoll_pwait2
#define __NR_epoll_pwait2 441
#endif

/* ---- epoll_create2() --------------------------------------------------- */

TEST(create2_flags)
{
	static const int bad[] = { EPOLL_USERPOLL_LEVEL, 4, 0x100, 0x40000000,
				   (int)0x80000000,
				   ~(EPOLL_CLOEXEC | EPOLL_USERPOLL |
				     EPOLL_USERPOLL_LEVEL), -1 };
	unsigned int i;
	int fd;

	UP_REQUIRE();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		fd = sys_epoll_create2(bad[i], 16);
		EXPECT_EQ(-1, fd) TH_LOG("flags %#x accepted", bad[i]);
		EXPECT_EQ(EINVAL, errno) TH_LOG("flags %#x: errno %d", bad[i], errno);
		if (fd >= 0)
			close(fd);
		/*
		 * An unknown bit next to EPOLL_USERPOLL is still EINVAL;
		 * EPOLL_USERPOLL_LEVEL is refused only without it
		 * (userpoll_level_test).
		 */
		if (bad[i] == EPOLL_USERPOLL_LEVEL)
			continue;
		fd = sys_epoll_create2(bad[i] | EPOLL_USERPOLL, 16);
		EXPECT_EQ(-1, fd);
		EXPECT_EQ(EINVAL, errno);
		if (fd >= 0)
			close(fd);
	}
}

TEST(create2_n_range)
{
	static const size_t bad[] = { 0, 65537, 65536 * 2, 1UL << 32,
				      (1UL << 32) + 1, (size_t)-1 };
	unsigned int i;
	int fd;

	UP_REQUIRE();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		fd = sys_epoll_create2(EPOLL_USERPOLL, bad[i]);
		EXPECT_EQ(-1, fd) TH_LOG("n=%zu accepted", bad[i]);
		EXPECT_EQ(EINVAL, errno) TH_LOG("n=%zu: errno %d", bad[i], errno);
		if (fd >= 0)
			close(fd);
	}
	fd = sys_epoll_create2(EPOLL_USERPOLL, 1);
	ASSERT_LE(0, fd) TH_LOG("n=1: errno %d", errno);
	close(fd);
	fd = sys_epoll_create2(EPOLL_USERPOLL, 65536);
	ASSERT_LE(0, fd) TH_LOG("n=65536: errno %d", errno);
	close(fd);
}

TEST(create2_without_userpoll_is_create1)
{
	struct epoll_event ev;
	int fd, fl;

	UP_REQUIRE();
	/* n is ignored without EPOLL_USERPOLL, even 0 and huge values. */
	fd = sys_epoll_create2(0, 0);
	ASSERT_LE(0, fd) TH_LOG("create2(0, 0): errno %d", errno);
	fl = fcntl(fd, F_GETFD);
	EXPECT_EQ(0, fl & FD_CLOEXEC);
	/* A plain instance: epoll_wait with a buffer works, NULL/0 does not. */
	EXPECT_EQ(0, epoll_wait(fd, &ev, 1, 0));
	EXPECT_EQ(-1, epoll_wait(fd, NULL, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	close(fd);

	fd = sys_epoll_create2(EPOLL_CLOEXEC, (size_t)-1);
	ASSERT_LE(0, fd) TH_LOG("create2(CLOEXEC, -1): errno %d", errno);
	fl = fcntl(fd, F_GETFD);
	EXPECT_EQ(FD_CLOEXEC, fl & FD_CLOEXEC);
	close(fd);

	fd = sys_epoll_create2(EPOLL_USERPOLL | EPOLL_CLOEXEC, 8);
	ASSERT_LE(0, fd) TH_LOG("create2(USERPOLL|CLOEXEC, 8): errno %d", errno);
	fl = fcntl(fd, F_GETFD);
	EXPECT_EQ(FD_CLOEXEC, fl & FD_CLOEXEC);
	close(fd);
}

TEST(create1_userpoll_einval)
{
	int fd;

	UP_REQUIRE();
	errno = 0;
	fd = epoll_create1(EPOLL_USERPOLL);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(EINVAL, errno);
	if (fd >= 0)
		close(fd);
	fd = epoll_create1(EPOLL_USERPOLL | EPOLL_CLOEXEC);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(EINVAL, errno);
	if (fd >= 0)
		close(fd);
}

/* ---- layout (PROTOCOL.md section 2) ------------------------------------ */

FIXTURE(layout) {
	struct up u;
};

FIXTURE_VARIANT(layout) {
	unsigned int n;
};

#define LAYOUT_N(x) \
	FIXTURE_VARIANT_ADD(layout, n##x) { .n = x, }
LAYOUT_N(1);
LAYOUT_N(2);
LAYOUT_N(3);
LAYOUT_N(7);
LAYOUT_N(248);
LAYOUT_N(249);
LAYOUT_N(1000);
LAYOUT_N(1024);
LAYOUT_N(1025);
LAYOUT_N(4096);
LAYOUT_N(65535);
LAYOUT_N(65536);

FIXTURE_SETUP(layout)
{
	int err;

	self->u.fd = -1;
	UP_REQUIRE();
	err = up_open(&self->u, variant->n, 0);
	ASSERT_EQ(0, err) TH_LOG("create/map n=%u: %s", variant->n, strerror(-err));
}

FIXTURE_TEARDOWN(layout)
{
	up_close(&self->u);
}

TEST_F(layout, header)
{
	struct epoll_uheader *h = self->u.hdr;
	size_t n = variant->n, i;

	EXPECT_EQ(EPOLL_USERPOLL_HEADER_MAGIC, h->magic);
	EXPECT_EQ(up_expected_header_length(n), h->header_length);
	EXPECT_EQ(up_expected_index_length(n), h->index_length);
	EXPECT_EQ(n, h->max_items_nr);
	/* index_length: power of two, page multiple, at least n entries */
	EXPECT_EQ(0, h->index_length & (h->index_length - 1));
	EXPECT_EQ(0, h->index_length % UP_PAGE_SIZE);
	EXPECT_LE(n, h->index_length / 4);
	EXPECT_EQ(0, h->header_length % UP_PAGE_SIZE);
	EXPECT_LE(128 + 16 * n, h->header_length);
	EXPECT_EQ(0, h->head);
	EXPECT_EQ(0, h->tail);
	EXPECT_EQ(0, h->repoll);
	for (i = 0; i < sizeof(h->__reserved) / sizeof(h->__reserved[0]); i++)
		EXPECT_EQ(0, h->__reserved[i]) TH_LOG("reserved[%zu]", i);
	/* Field offsets of the ABI, fixed. */
	EXPECT_EQ(16, offsetof(struct epoll_uheader, head));
	EXPECT_EQ(20, offsetof(struct epoll_uheader, tail));
	EXPECT_EQ(24, offsetof(struct epoll_uheader, repoll));
	EXPECT_EQ(25 * 4, sizeof(h->__reserved));
	EXPECT_EQ(128, offsetof(struct epoll_uheader, items));
	EXPECT_EQ(16, sizeof(struct epoll_uitem));
	EXPECT_EQ(8, offsetof(struct epoll_uitem, data));
	/* Fresh items are all zero, every ring entry unpublished. */
	for (i = 0; i < n; i++) {
		if (h->items[i].ready_events || h->items[i].data) {
			EXPECT_EQ(0, h->items[i].ready_events) TH_LOG("item %zu", i);
			EXPECT_EQ(0, h->items[i].data) TH_LOG("item %zu", i);
			break;
		}
	}
	/* The whole mapping is accessible (touch the last byte of each). */
	EXPECT_EQ(0, ((volatile char *)h)[self->u.hlen - 1]);
	EXPECT_EQ(0, ((volatile char *)self->u.index)[self->u.ilen - 1]);
}

TEST_F(layout, mmap_lengths_and_offsets)
{
	size_t hl = self->u.hlen, il = self->u.ilen, ps = UP_PAGE_SIZE;
	int fd = self->u.fd;
	void *p;

	/* offset 0: any length up to header_length */
	p = mmap(NULL, ps, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("offset 0, one page: %s", strerror(errno));
	munmap(p, ps);
	p = mmap(NULL, hl, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, hl);
	errno = 0;
	p = mmap(NULL, hl + ps, PROT_READ, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, p) TH_LOG("offset 0, header_length + page accepted");
	EXPECT_EQ(EINVAL, errno);
	if (p != MAP_FAILED)
		munmap(p, hl + ps);

	/* offset header_length: any length up to index_length */
	p = mmap(NULL, ps, PROT_READ, MAP_SHARED, fd, (off_t)hl);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("index, one page: %s", strerror(errno));
	munmap(p, ps);
	errno = 0;
	p = mmap(NULL, il + ps, PROT_READ, MAP_SHARED, fd, (off_t)hl);
	EXPECT_EQ(MAP_FAILED, p) TH_LOG("index_length + page accepted");
	EXPECT_EQ(EINVAL, errno);
	if (p != MAP_FAILED)
		munmap(p, il + ps);

	/* other offsets: after the ring, inside the header, far away */
	errno = 0;
	p = mmap(NULL, ps, PROT_READ, MAP_SHARED, fd, (off_t)(hl + il));
	EXPECT_EQ(MAP_FAILED, p) TH_LOG("offset header+index accepted");
	EXPECT_EQ(EINVAL, errno);
	if (p != MAP_FAILED)
		munmap(p, ps);
	if (hl > ps) {
		errno = 0;
		p = mmap(NULL, ps, PROT_READ, MAP_SHARED, fd, (off_t)ps);
		EXPECT_EQ(MAP_FAILED, p) TH_LOG("offset one page (inside header) accepted");
		EXPECT_EQ(EINVAL, errno);
		if (p != MAP_FAILED)
			munmap(p, ps);
	}
	if (il > ps) {
		errno = 0;
		p = mmap(NULL, ps, PROT_READ, MAP_SHARED, fd, (off_t)(hl + ps));
		EXPECT_EQ(MAP_FAILED, p) TH_LOG("offset inside the ring accepted");
		EXPECT_EQ(EINVAL, errno);
		if (p != MAP_FAILED)
			munmap(p, ps);
	}
	errno = 0;
	p = mmap(NULL, ps, PROT_READ, MAP_SHARED, fd, (off_t)1 << 30);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	if (p != MAP_FAILED)
		munmap(p, ps);

	/* MAP_PRIVATE is refused on both regions */
	errno = 0;
	p = mmap(NULL, ps, PROT_READ, MAP_PRIVATE, fd, 0);
	EXPECT_EQ(MAP_FAILED, p) TH_LOG("MAP_PRIVATE header accepted");
	EXPECT_EQ(EINVAL, errno);
	if (p != MAP_FAILED)
		munmap(p, ps);
	errno = 0;
	p = mmap(NULL, ps, PROT_READ, MAP_PRIVATE, fd, (off_t)hl);
	EXPECT_EQ(MAP_FAILED, p) TH_LOG("MAP_PRIVATE ring accepted");
	EXPECT_EQ(EINVAL, errno);
	if (p != MAP_FAILED)
		munmap(p, ps);
}

TEST_F(layout, mremap_cannot_grow)
{
	size_t ps = UP_PAGE_SIZE;
	void *p, *q;

	p = mmap(NULL, ps, PROT_READ, MAP_SHARED, self->u.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	/* VM_DONTEXPAND: growing fails (EFAULT from mremap), whatever the size */
	q = mremap(p, ps, self->u.hlen + ps, MREMAP_MAYMOVE);
	EXPECT_EQ(MAP_FAILED, q) TH_LOG("mremap grew the header mapping");
	if (q != MAP_FAILED)
		p = q;
	munmap(p, ps);
}

TEST(mmap_plain_epoll_enodev)
{
	size_t ps = UP_PAGE_SIZE;
	void *p;
	int fd;

	UP_REQUIRE();
	fd = epoll_create1(0);
	ASSERT_LE(0, fd);
	errno = 0;
	p = mmap(NULL, ps, PROT_READ, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENODEV, errno) TH_LOG("plain epoll mmap: errno %d (%s)",
					errno, strerror(errno));
	if (p != MAP_FAILED)
		munmap(p, ps);
	close(fd);
	/* create2 without EPOLL_USERPOLL: also a plain instance */
	fd = sys_epoll_create2(0, 64);
	ASSERT_LE(0, fd);
	errno = 0;
	p = mmap(NULL, ps, PROT_READ, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENODEV, errno);
	if (p != MAP_FAILED)
		munmap(p, ps);
	close(fd);
}

/* ---- epoll_ctl() --------------------------------------------------------- */

FIXTURE(ctl) {
	struct up u;
	int efd;
};

FIXTURE_SETUP(ctl)
{
	int err;

	self->u.fd = -1;
	self->efd = -1;
	UP_REQUIRE();
	err = up_open(&self->u, 16, 0);
	ASSERT_EQ(0, err) TH_LOG("%s", strerror(-err));
	self->efd = eventfd(0, EFD_NONBLOCK);
	ASSERT_LE(0, self->efd);
}

FIXTURE_TEARDOWN(ctl)
{
	if (self->efd >= 0)
		close(self->efd);
	up_close(&self->u);
}

TEST_F(ctl, add_requires_et)
{
	errno = 0;
	EXPECT_EQ(-1, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd, EPOLLIN, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd,
			     EPOLLIN | EPOLLONESHOT, 1));
	EXPECT_EQ(EINVAL, errno);
	/* nothing registered: the ring did not move */
	EXPECT_EQ(0, up_tail(&self->u));
	EXPECT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd,
			    EPOLLIN | EPOLLET, 1));
}

TEST_F(ctl, mod_requires_et)
{
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd,
			    EPOLLIN | EPOLLET, 1));
	errno = 0;
	EXPECT_EQ(-1, up_ctl(self->u.fd, EPOLL_CTL_MOD, self->efd, EPOLLIN, 2));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(1, self->u.hdr->items[0].data) TH_LOG("failed MOD changed data");
	EXPECT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_MOD, self->efd,
			    EPOLLIN | EPOLLET, 3));
	EXPECT_EQ(3, self->u.hdr->items[0].data);
}

TEST_F(ctl, exclusive_einval)
{
	errno = 0;
	EXPECT_EQ(-1, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd,
			     EPOLLIN | EPOLLET | EPOLLEXCLUSIVE, 1));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd,
			    EPOLLIN | EPOLLET, 1));
	errno = 0;
	EXPECT_EQ(-1, up_ctl(self->u.fd, EPOLL_CTL_MOD, self->efd,
			     EPOLLIN | EPOLLET | EPOLLEXCLUSIVE, 1));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(ctl, wakeup_stripped)
{
	uint32_t ev;

	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd,
			    EPOLLIN | EPOLLET | EPOLLWAKEUP, 7))
		TH_LOG("EPOLLWAKEUP refused: errno %d", errno);
	ev = self->u.hdr->items[0].events;
	EXPECT_EQ(0, ev & EPOLLWAKEUP) TH_LOG("events %#x", ev);
	EXPECT_EQ(EPOLLIN, ev & EPOLLIN) TH_LOG("events %#x", ev);
	EXPECT_EQ(7, self->u.hdr->items[0].data);
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_MOD, self->efd,
			    EPOLLOUT | EPOLLET | EPOLLWAKEUP, 8));
	ev = self->u.hdr->items[0].events;
	EXPECT_EQ(0, ev & EPOLLWAKEUP) TH_LOG("events %#x", ev);
	EXPECT_EQ(EPOLLOUT, ev & EPOLLOUT) TH_LOG("events %#x", ev);
}

TEST_F(ctl, usual_errors)
{
	/* the ordinary epoll_ctl errors are unchanged */
	errno = 0;
	EXPECT_EQ(-1, up_ctl(self->u.fd, EPOLL_CTL_DEL, self->efd, 0, 0));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, up_ctl(self->u.fd, EPOLL_CTL_MOD, self->efd,
			     EPOLLIN | EPOLLET, 0));
	EXPECT_EQ(ENOENT, errno);
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd,
			    EPOLLIN | EPOLLET, 0));
	EXPECT_EQ(-1, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd,
			     EPOLLIN | EPOLLET, 0));
	EXPECT_EQ(EEXIST, errno);
	EXPECT_EQ(-1, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->u.fd,
			     EPOLLIN | EPOLLET, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, up_ctl(self->u.fd, EPOLL_CTL_ADD, 12345,
			     EPOLLIN | EPOLLET, 0));
	EXPECT_EQ(EBADF, errno);
}

/* ---- epoll_wait() arguments ---------------------------------------------- */

TEST_F(ctl, wait_arguments)
{
	struct epoll_event evs[4];
	struct timespec ts = { 0, 0 };

	errno = 0;
	EXPECT_EQ(-1, epoll_wait(self->u.fd, evs, 4, 0));
	EXPECT_EQ(EINVAL, errno) TH_LOG("events!=NULL maxevents=4");
	errno = 0;
	EXPECT_EQ(-1, epoll_wait(self->u.fd, evs, 0, 0));
	EXPECT_EQ(EINVAL, errno) TH_LOG("events!=NULL maxevents=0");
	/* raw: the libc prototype declares events nonnull */
	errno = 0;
	EXPECT_EQ(-1, syscall(__NR_epoll_pwait, self->u.fd, NULL, 1, 0, NULL, 8));
	EXPECT_EQ(EINVAL, errno) TH_LOG("events=NULL maxevents=1");
	errno = 0;
	EXPECT_EQ(-1, syscall(__NR_epoll_pwait, self->u.fd, NULL, -1, 0, NULL, 8));
	EXPECT_EQ(EINVAL, errno) TH_LOG("events=NULL maxevents=-1");
	errno = 0;
	EXPECT_EQ(-1, epoll_pwait(self->u.fd, evs, 1, 0, NULL));
	EXPECT_EQ(EINVAL, errno) TH_LOG("epoll_pwait events!=NULL");
	errno = 0;
	EXPECT_EQ(-1, syscall(__NR_epoll_pwait2, self->u.fd, evs, 1, &ts, NULL, 8));
	EXPECT_EQ(EINVAL, errno) TH_LOG("epoll_pwait2 events!=NULL");

	/*
	 * Stock epoll_wait() answers EINVAL for maxevents <= 0 before it
	 * looks at the fd: the userpoll form (NULL, 0) on a bad fd or on a
	 * file that is no epoll instance keeps that answer, not EBADF.
	 */
	errno = 0;
	EXPECT_EQ(-1, syscall(__NR_epoll_pwait, -1, NULL, 0, 0, NULL, 8));
	EXPECT_EQ(EINVAL, errno) TH_LOG("fd -1, NULL, 0: errno %d", errno);
	errno = 0;
	EXPECT_EQ(-1, syscall(__NR_epoll_pwait, 12345, NULL, 0, 0, NULL, 8));
	EXPECT_EQ(EINVAL, errno) TH_LOG("closed fd, NULL, 0: errno %d", errno);
	errno = 0;
	EXPECT_EQ(-1, syscall(__NR_epoll_pwait2, 12345, NULL, 0, &ts, NULL, 8));
	EXPECT_EQ(EINVAL, errno) TH_LOG("pwait2 closed fd, NULL, 0: errno %d", errno);
	errno = 0;
	EXPECT_EQ(-1, syscall(__NR_epoll_pwait, self->efd, NULL, 0, 0, NULL, 8));
	EXPECT_EQ(EINVAL, errno) TH_LOG("eventfd, NULL, 0: errno %d", errno);
	/* with a buffer, the order is stock's too: a bad fd is EBADF */
	errno = 0;
	EXPECT_EQ(-1, epoll_wait(12345, evs, 4, 0));
	EXPECT_EQ(EBADF, errno) TH_LOG("closed fd, evs, 4: errno %d", errno);

	/* the accepted form: NULL, 0; empty ring, zero timeout -> 0 */
	EXPECT_EQ(0, epoll_wait(self->u.fd, NULL, 0, 0)) TH_LOG("errno %d", errno);
	EXPECT_EQ(0, epoll_pwait(self->u.fd, NULL, 0, 0, NULL)) TH_LOG("errno %d", errno);
	EXPECT_EQ(0, syscall(__NR_epoll_pwait2, self->u.fd, NULL, 0, &ts, NULL, 8))
		TH_LOG("errno %d", errno);
}

UP_TEST_MAIN
