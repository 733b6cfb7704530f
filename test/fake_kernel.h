/* SPDX-License-Identifier: MIT OR LGPL-2.1-or-later */
/*
 * test/fake_kernel.h - an EPOLL_USERPOLL kernel forged in the test
 * process, so that the native backend runs on any kernel (the host has
 * none).  A test that includes it is linked with the static library and
 * ld --wrap of open, syscall, mmap and epoll_wait (FAKE_KERNEL_TESTS in
 * the Makefile): the library's calls land here.
 *
 *   open(UEPOLL_FEATURE_FILE)      a pipe that reads "1";
 *   syscall(epoll_create2, f, n)   a plain epoll fd stands for the instance;
 *                                  its regions live in a memfd, laid out as
 *                                  uepoll(7) says (header, items, ring);
 *   mmap() of that fd              the memfd's pages, with the kernel's
 *                                  offset and length rules, MAP_SHARED only,
 *                                  and MADV_DONTFORK (the kernel's VM_DONTCOPY);
 *   epoll_wait(fd, NULL, 0, t)     counted; runs fake_repoll_hook (what the
 *                                  kernel's poll of pending registrations
 *                                  pushes), then answers ESTALE if the ring
 *                                  has entries, else 0 after sleeping t ms.
 *
 * The test plays the kernel through fk.hdr/fk.index (its own mapping of
 * the memfd) and fake_push() (K1..K3).  Everything else (other fds, other
 * files, other system calls) goes to the real functions.  One instance at
 * a time.
 */
#ifndef UEPOLL_TEST_FAKE_KERNEL_H
#define UEPOLL_TEST_FAKE_KERNEL_H

#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "helpers.h"

int __real_open(const char *path, int flags, ...);
long __real_syscall(long nr, ...);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_epoll_wait(int fd, struct epoll_event *evs, int max, int timeout);
int __wrap_open(const char *path, int flags, ...);
long __wrap_syscall(long nr, ...);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_epoll_wait(int fd, struct epoll_event *evs, int max, int timeout);

static struct {
	int fd;				/* the instance's fd (-1: none) */
	int memfd;
	unsigned n;
	size_t hlen, ilen;
	struct epoll_uheader *hdr;	/* the kernel's view */
	uint32_t *index;
	uint32_t tail;			/* the kernel's own copy */
	/* epoll_wait(fd, NULL, 0, t) on the instance */
	unsigned waits;			/* calls */
	unsigned waits_t0;		/* calls with timeout 0 */
	unsigned waits_bad;		/* calls with events != NULL or max != 0 */
	int wait_errno;			/* != 0: fail with it (once) */
	void (*repoll_hook)(void);	/* the kernel's repoll, if set */
} fk = { .fd = -1, .memfd = -1 };

static size_t fk_page_align(size_t v)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);

	return (v + ps - 1) & ~(ps - 1);
}

/* K1..K3 for item slot (0-based): OR the events in, push on 0 -> non-zero */
static inline void fake_push(unsigned slot, uint32_t events)
{
	struct epoll_uitem *it = &fk.hdr->items[slot];
	uint32_t mask = (uint32_t)(fk.ilen / 4 - 1);

	if (__atomic_fetch_or(&it->ready_events, events, __ATOMIC_SEQ_CST))
		return;
	__atomic_store_n(&fk.index[fk.tail & mask], slot + 1, __ATOMIC_RELAXED);
	fk.tail++;
	__atomic_store_n(&fk.hdr->tail, fk.tail, __ATOMIC_RELEASE);
}

/* ADD's K4 for item slot */
static inline void fake_item(unsigned slot, uint32_t events, uint64_t data)
{
	fk.hdr->items[slot].events = events;
	__atomic_store_n(&fk.hdr->items[slot].data, data, __ATOMIC_RELEASE);
}

static inline void fake_set_repoll(uint32_t v)
{
	__atomic_store_n(&fk.hdr->repoll, v, __ATOMIC_RELAXED);
}

static inline uint32_t fake_repoll(void)
{
	return __atomic_load_n(&fk.hdr->repoll, __ATOMIC_RELAXED);
}

static int fake_create(long flags, unsigned long n)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), ring = 1;
	void *m;

	if ((flags & ~(long)(EPOLL_USERPOLL | EPOLL_CLOEXEC)) || !(flags & EPOLL_USERPOLL) ||
	    n < 1 || n > EPOLL_USERPOLL_MAX_ITEMS || fk.fd >= 0) {
		errno = EINVAL;
		return -1;
	}
	while (ring < 4 * n)
		ring <<= 1;
	fk.n = (unsigned)n;
	fk.hlen = fk_page_align(EPOLL_USERPOLL_HEADER_SIZE + 16 * n);
	fk.ilen = ring < ps ? ps : ring;
	fk.memfd = memfd_create("fake-userpoll", MFD_CLOEXEC);
	if (fk.memfd < 0 || ftruncate(fk.memfd, (off_t)(fk.hlen + fk.ilen)) < 0)
		FAIL("fake kernel: memfd: %s", strerror(errno));
	m = __real_mmap(NULL, fk.hlen + fk.ilen, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fk.memfd, 0);
	if (m == MAP_FAILED)
		FAIL("fake kernel: mmap: %s", strerror(errno));
	fk.hdr = m;
	fk.index = (uint32_t *)((char *)m + fk.hlen);
	fk.tail = 0;
	fk.hdr->magic = EPOLL_USERPOLL_HEADER_MAGIC;
	fk.hdr->header_length = (uint32_t)fk.hlen;
	fk.hdr->index_length = (uint32_t)fk.ilen;
	fk.hdr->max_items_nr = fk.n;
	fk.fd = epoll_create1((flags & EPOLL_CLOEXEC) ? EPOLL_CLOEXEC : 0);
	if (fk.fd < 0)
		FAIL("fake kernel: epoll_create1: %s", strerror(errno));
	return fk.fd;
}

/* the test closed the instance (uepoll_exit): forget it */
static inline void fake_destroy(void)
{
	munmap(fk.hdr, fk.hlen + fk.ilen);
	close(fk.memfd);
	fk.hdr = NULL;
	fk.index = NULL;
	fk.memfd = fk.fd = -1;
}

int __wrap_open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int p[2];

	if (path && !strcmp(path, UEPOLL_FEATURE_FILE)) {
		if (pipe2(p, O_CLOEXEC) < 0 || write(p[1], "1\n", 2) != 2)
			FAIL("fake kernel: pipe: %s", strerror(errno));
		close(p[1]);
		return p[0];
	}
	va_start(ap, flags);
	mode = (mode_t)va_arg(ap, int);
	va_end(ap);
	return __real_open(path, flags, mode);
}

long __wrap_syscall(long nr, ...)
{
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == UEPOLL_NR_epoll_create2)
		return fake_create(a[0], (unsigned long)a[1]);
	return __real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *m;

	if (fd < 0 || fd != fk.fd)
		return __real_mmap(addr, len, prot, flags, fd, off);
	if (!(flags & MAP_SHARED) || !((off == 0 && len <= fk.hlen) ||
				      ((size_t)off == fk.hlen && len <= fk.ilen))) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	m = __real_mmap(addr, len, prot, flags, fk.memfd, off);
	if (m != MAP_FAILED && madvise(m, len, MADV_DONTFORK) < 0)
		FAIL("fake kernel: MADV_DONTFORK: %s", strerror(errno));
	return m;
}

int __wrap_epoll_wait(int fd, struct epoll_event *evs, int max, int timeout)
{
	if (fd < 0 || fd != fk.fd)
		return __real_epoll_wait(fd, evs, max, timeout);
	fk.waits++;
	if (evs || max) {
		fk.waits_bad++;
		errno = EINVAL;
		return -1;
	}
	if (timeout < 0)
		FAIL("fake kernel: epoll_wait(fd, NULL, 0, -1) would never return here");
	if (timeout == 0)
		fk.waits_t0++;
	if (fk.wait_errno) {
		errno = fk.wait_errno;
		fk.wait_errno = 0;
		return -1;
	}
	if (fk.repoll_hook)
		fk.repoll_hook();
	if (__atomic_load_n(&fk.hdr->head, __ATOMIC_RELAXED) != fk.tail) {
		errno = ESTALE;
		return -1;
	}
	if (timeout > 0) {
		struct timespec ts = { timeout / 1000, (timeout % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	return 0;
}

#endif
