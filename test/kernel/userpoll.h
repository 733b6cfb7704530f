/* SPDX-License-Identifier: MIT OR LGPL-2.1-or-later */
/*
 * userpoll.h - shared helpers of the raw EPOLL_USERPOLL ABI tests.
 *
 * These tests talk to the kernel with raw system calls (syscall 463 and
 * mmap), never through libuepoll: they test the ABI of doc/PROTOCOL.md,
 * not the library.  The consumer below is the algorithm of PROTOCOL.md
 * section 5, written on top of the uepoll/barrier.h accessors.
 *
 * Feature detection: syscall 463 is setxattrat from Linux 6.13 on, so it
 * is only ever issued after /proc/sys/fs/epoll/userpoll read "1".  On any
 * other kernel every test reports SKIP and the program exits KSFT_SKIP.
 *
 * Include this after kselftest_harness.h.
 */
#ifndef UEPOLL_TEST_USERPOLL_H
#define UEPOLL_TEST_USERPOLL_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <uepoll/uapi.h>
#include <uepoll/barrier.h>

#define UP_PAGE_SIZE ((size_t)sysconf(_SC_PAGESIZE))

/* ---- feature detection ------------------------------------------------ */

static int up_feature_state = -1;	/* -1 unknown, 0 absent, 1 present */

static inline int up_feature(void)
{
	char buf[16] = "";
	ssize_t len;
	int fd;

	if (up_feature_state >= 0)
		return up_feature_state;
	up_feature_state = 0;
	fd = open(UEPOLL_FEATURE_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len > 0 && buf[0] == '1')
		up_feature_state = 1;
	return up_feature_state;
}

/*
 * The only place syscall 463 is issued.  Refuses (ENOSYS) unless the
 * procfs feature file said "1": never call an unknown syscall number.
 */
static inline int sys_epoll_create2(int flags, size_t n)
{
	if (up_feature() != 1) {
		errno = ENOSYS;
		return -1;
	}
	return (int)syscall(UEPOLL_NR_epoll_create2, flags, n);
}

/* Skip the current test (fixture setup or test body) without the feature. */
#define UP_REQUIRE() do {						\
	if (up_feature() != 1)						\
		SKIP(return, "kernel without EPOLL_USERPOLL (%s absent)", \
		     UEPOLL_FEATURE_FILE);				\
} while (0)

/* ---- expected sizes (PROTOCOL.md section 2) ---------------------------- */

static inline size_t up_page_align(size_t len)
{
	size_t ps = UP_PAGE_SIZE;

	return (len + ps - 1) & ~(ps - 1);
}

static inline size_t up_roundup_pow2(size_t v)
{
	size_t r = 1;

	while (r < v)
		r <<= 1;
	return r;
}

static inline size_t up_expected_header_length(size_t n)
{
	return up_page_align(EPOLL_USERPOLL_HEADER_SIZE +
			     n * sizeof(struct epoll_uitem));
}

static inline size_t up_expected_index_length(size_t n)
{
	return up_page_align(up_roundup_pow2(4 * n));
}

/* ---- one instance, mapped ---------------------------------------------- */

struct up {
	int fd;
	unsigned int n;
	struct epoll_uheader *hdr;
	size_t hlen;
	uint32_t *index;
	size_t ilen;
	uint32_t mask;
};

/* Counters of what the consumer skipped (see up_harvest()). */
struct up_stats {
	unsigned long removed;	/* entries whose item had only EPOLLREMOVED */
	unsigned long raced;	/* C5: DEL ran between C3 and C4 */
	unsigned long bogus;	/* index entry 0 or > n */
};

struct up_event {
	uint32_t events;	/* without EPOLLREMOVED */
	uint64_t data;
	uint32_t item;		/* slot number (index entry - 1) */
};

/* Map both regions of an existing EPOLL_USERPOLL fd.  0 or -errno. */
static inline int up_map(struct up *u, int fd)
{
	struct epoll_uheader *h;
	size_t ps = UP_PAGE_SIZE;
	void *p;

	memset(u, 0, sizeof(*u));
	u->fd = fd;
	/* First one page to learn the lengths, then the whole header. */
	h = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		return -errno;
	u->hlen = uepoll_hdr_read_once(&h->header_length);
	u->ilen = uepoll_hdr_read_once(&h->index_length);
	u->n = uepoll_hdr_read_once(&h->max_items_nr);
	munmap(h, ps);
	if (!u->hlen || !u->ilen || (u->ilen & (u->ilen - 1)))
		return -EPROTO;
	p = mmap(NULL, u->hlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	u->hdr = p;
	p = mmap(NULL, u->ilen, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)u->hlen);
	if (p == MAP_FAILED) {
		int err = -errno;

		munmap(u->hdr, u->hlen);
		u->hdr = NULL;
		return err;
	}
	u->index = p;
	u->mask = (uint32_t)(u->ilen / sizeof(uint32_t) - 1);
	return 0;
}

/* epoll_create2(EPOLL_USERPOLL | extra, n) and map it.  0 or -errno. */
static inline int up_open(struct up *u, unsigned int n, int extra_flags)
{
	int fd = sys_epoll_create2(EPOLL_USERPOLL | extra_flags, n);
	int err;

	if (fd < 0)
		return -errno;
	err = up_map(u, fd);
	if (err) {
		close(fd);
		u->fd = -1;
	}
	return err;
}

static inline void up_unmap(struct up *u)
{
	if (u->index)
		munmap(u->index, u->ilen);
	if (u->hdr)
		munmap(u->hdr, u->hlen);
	u->index = NULL;
	u->hdr = NULL;
}

static inline void up_close(struct up *u)
{
	up_unmap(u);
	if (u->fd >= 0)
		close(u->fd);
	u->fd = -1;
}

static inline uint32_t up_head(const struct up *u)
{
	return __atomic_load_n(&u->hdr->head, __ATOMIC_RELAXED);
}

static inline uint32_t up_tail(const struct up *u)
{
	return uepoll_tail_acquire(u->hdr);
}

/*
 * The kernel's hint that keyless wake-ups wait to be polled (K8): a
 * consumer that does not sleep calls epoll_wait(fd, NULL, 0, 0) when set.
 */
static inline uint32_t up_repoll(const struct up *u)
{
	return uepoll_hdr_read_once(&u->hdr->repoll);
}

/* Entries published and not yet consumed. */
static inline uint32_t up_pending(const struct up *u)
{
	return up_tail(u) - up_head(u);
}

/*
 * The consumer of PROTOCOL.md section 5, verbatim: C1 tail (acquire),
 * C2 index entry, C3 exchange ready_events with 0, C4 data (acquire),
 * C5 EPOLLREMOVED re-check, C6 head (release).  Stops after max events;
 * entries not reached stay in the ring.  One consumer at a time.
 */
static inline int up_harvest(struct up *u, struct up_event *out, int max,
			     struct up_stats *st)
{
	struct epoll_uheader *h = u->hdr;
	uint32_t head = up_head(u);
	uint32_t tail = uepoll_tail_acquire(h);			/* C1 */
	int got = 0;

	while (head != tail && got < max) {
		uint32_t nr = uepoll_index_read(&u->index[head & u->mask]); /* C2 */
		struct epoll_uitem *it;
		uint32_t f;
		uint64_t data;

		head++;
		if (nr == 0 || nr > u->n) {
			if (st)
				st->bogus++;
			continue;
		}
		it = &h->items[nr - 1];
		f = uepoll_item_take(it);				/* C3 */
		if ((f & ~EPOLLREMOVED) == 0) {
			if (st)
				st->removed++;
			continue;
		}
		data = uepoll_item_data_acquire(it);			/* C4 */
		if (uepoll_item_removed_since(it)) {			/* C5 */
			if (st)
				st->raced++;
			continue;
		}
		out[got].events = f & ~EPOLLREMOVED;
		out[got].data = data;
		out[got].item = nr - 1;
		got++;
	}
	uepoll_head_release(h, head);				/* C6 */
	return got;
}

/* ---- small utilities --------------------------------------------------- */

static inline int up_ctl(int epfd, int op, int fd, uint32_t events,
			 uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return epoll_ctl(epfd, op, fd, op == EPOLL_CTL_DEL ? NULL : &ev);
}

/* epoll_wait(fd, NULL, 0, ms); returns 0 or -errno. */
static inline int up_wait(int epfd, int ms)
{
	int ret = epoll_wait(epfd, NULL, 0, ms);

	return ret < 0 ? -errno : ret;
}

static inline int up_efd_write(int efd, uint64_t v)
{
	return write(efd, &v, sizeof(v)) == (ssize_t)sizeof(v) ? 0 : -errno;
}

static inline uint64_t up_efd_read(int efd)
{
	uint64_t v = 0;

	if (read(efd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		return 0;
	return v;
}

static inline double up_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Wait until the ring holds at least one unconsumed entry, or ms have
 * passed (entries from the keyless work path arrive asynchronously).
 * Returns the pending count.
 */
static inline uint32_t up_wait_pending(struct up *u, int ms)
{
	double end = up_now() + ms / 1000.0;

	while (!up_pending(u) && up_now() < end)
		(void)up_wait(u->fd, 10);
	return up_pending(u);
}

/*
 * main(): the harness, plus exit status KSFT_SKIP when the kernel lacks the
 * feature (every test has then reported SKIP and none failed).
 */
static inline void up_exit_skip(void)
{
	if (ksft_cnt.ksft_fail == 0) {
		fflush(NULL);
		_exit(KSFT_SKIP);
	}
}

#define UP_TEST_MAIN							\
int main(int argc, char **argv)						\
{									\
	if (up_feature() != 1) {					\
		fprintf(stderr, "# %s absent: kernel without "		\
			"EPOLL_USERPOLL, every test skips\n",		\
			UEPOLL_FEATURE_FILE);				\
		atexit(up_exit_skip);					\
	}								\
	return test_harness_run(argc, argv);				\
}

#endif /* UEPOLL_TEST_USERPOLL_H */
