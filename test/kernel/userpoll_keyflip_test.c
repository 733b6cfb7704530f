// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * userpoll_keyflip_test - the userpoll static key flipping under load.
 *
 * The kernel's userpoll branches (ep_poll_callback(), ep_poll(), ...) sit
 * behind a static key that is on while an EPOLL_USERPOLL instance exists
 * and goes off a second after the last one closes (a deferred key).  Each
 * change patches kernel text at every site while other CPUs may be running
 * through them.  Here two threads run a plain epoll instance's hot paths
 * (write an eventfd, epoll_wait, read, EPOLL_CTL_MOD) without pause while
 * the main thread, round after round, creates a userpoll instance (key
 * on), checks that an event reaches its ring at once (the key's branch is
 * taken from the instance's first registration: epoll_wait(NULL, 0)
 * answers ESTALE), closes it and waits past the deferral (key off).
 * Every plain wait must see its event, whatever the key's state.
 *
 * Pass: no event lost on either side and no kernel report (vm/check fails
 * the boot on an Oops).  Skipped where the guest's /init holds an instance
 * for the whole run (UEPOLL_GUEST_KEY_HELD: QEMU's multi-threaded TCG,
 * whose vCPUs can run a stale int3 of a text patch; vm/init.c), since the
 * key then never flips; vm/check --accel tcg-single runs it.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "userpoll.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/eventfd.h>

#define ROUNDS 8
#define PAST_DEFERRAL_US 1300000	/* the key goes off HZ after the last close */
#define HAMMERS 2

struct hammer {
	pthread_t tid;
	atomic_int *stop;
	unsigned long loops;
	unsigned long missed;	/* waits that did not see the written event */
	int err;
};

static void *hammer(void *arg)
{
	struct hammer *h = arg;
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	uint64_t v = 1;
	int ep, efd;

	ep = epoll_create1(EPOLL_CLOEXEC);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ep < 0 || efd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev)) {
		h->err = errno;
		goto out;
	}
	while (!atomic_load_explicit(h->stop, memory_order_relaxed)) {
		if (write(efd, &v, sizeof(v)) != sizeof(v)) {
			h->err = errno;
			break;
		}
		if (epoll_wait(ep, out, 4, 0) != 1)
			h->missed++;
		if (read(efd, &v, sizeof(v)) != sizeof(v)) {
			h->err = errno;
			break;
		}
		v = 1;
		if (epoll_ctl(ep, EPOLL_CTL_MOD, efd, &ev)) {
			h->err = errno;
			break;
		}
		h->loops++;
	}
out:
	if (efd >= 0)
		close(efd);
	if (ep >= 0)
		close(ep);
	return NULL;
}

TEST(flip_under_load)
{
	struct hammer hs[HAMMERS] = {};
	atomic_int stop = 0;
	uint64_t one = 1;
	int i, round, estale = 0;

	UP_REQUIRE();
	if (getenv("UEPOLL_GUEST_KEY_HELD"))
		SKIP(return, "the guest's /init holds the key on (multi-threaded TCG)");
	for (i = 0; i < HAMMERS; i++) {
		hs[i].stop = &stop;
		ASSERT_EQ(0, pthread_create(&hs[i].tid, NULL, hammer, &hs[i]));
	}
	for (round = 0; round < ROUNDS; round++) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
		int fd, efd;

		fd = sys_epoll_create2(EPOLL_USERPOLL | EPOLL_CLOEXEC, 4);
		efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (fd < 0 || efd < 0)
			break;
		ev.data.u64 = (uint64_t)round;
		if (!epoll_ctl(fd, EPOLL_CTL_ADD, efd, &ev) &&
		    write(efd, &one, sizeof(one)) == sizeof(one) &&
		    epoll_wait(fd, NULL, 0, 1000) == -1 && errno == ESTALE)
			estale++;
		close(efd);
		close(fd);
		usleep(PAST_DEFERRAL_US);
	}
	atomic_store(&stop, 1);
	for (i = 0; i < HAMMERS; i++) {
		pthread_join(hs[i].tid, NULL);
		TH_LOG("hammer %d: %lu loops, %lu missed", i, hs[i].loops, hs[i].missed);
		EXPECT_EQ(0, hs[i].err) TH_LOG("hammer %d: %s", i, strerror(hs[i].err));
		EXPECT_EQ(0, hs[i].missed);
		EXPECT_LT(0, hs[i].loops);
	}
	ASSERT_EQ(ROUNDS, round) TH_LOG("round %d: %s", round, strerror(errno));
	EXPECT_EQ(ROUNDS, estale);
}

TEST_HARNESS_MAIN
