// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * repoll: the native backend and the kernel's repoll hint (hdr->repoll,
 * C7 in uepoll(7)).  While the word is non-zero every harvest makes
 * exactly one epoll_wait(fd, NULL, 0, 0) before it reads the tail, so
 * that the entries the kernel pushes while polling are harvested in the
 * same pass; while it is 0 a harvest makes no system call.  ESTALE and 0
 * are success; another error is returned, errno untouched, the ring left
 * as it was.  uepoll_get_stats() counts the calls (repolls, syscalls).
 *
 * Runs on any kernel and every backend run: the kernel is forged
 * (test/fake_kernel.h, ld --wrap), and the instance asks for native.
 */
#include "fake_kernel.h"

/* the kernel's repoll: what ep_uring_repoll() does for one keyless item */
static unsigned keyless_slot = ~0u;
static int keyless_clears = 1;		/* 0: the word stays (a stuck hint) */

static void repoll_hook(void)
{
	if (keyless_clears)
		fake_set_repoll(0);
	if (keyless_slot != ~0u) {
		fake_push(keyless_slot, EPOLLIN);
		keyless_slot = ~0u;
	}
}

static void stats(struct uepoll *u, struct uepoll_stats *s)
{
	CHECK_EQ(uepoll_get_stats(u, s), 0);
}

int main(void)
{
	struct uepoll_stats a, b;
	struct epoll_event evs[8];
	int fds0 = count_fds();
	unsigned w;
	struct uepoll u;

	CHECK_EQ(uepoll_init(&u, 4, UEPOLL_BACKEND_NATIVE | UEPOLL_CLOEXEC), 0);
	CHECK_EQ(uepoll_fd(&u), fk.fd);
	fk.repoll_hook = repoll_hook;

	/* hint 0: no system call, nothing to harvest */
	stats(&u, &a);
	CHECK_EQ(uepoll_harvest(&u, evs, 8), 0);
	CHECK_EQ(fk.waits, 0);
	stats(&u, &b);
	CHECK_EQ(b.syscalls, a.syscalls);
	CHECK_EQ(b.repolls, 0);

	/* a stuck 1: one epoll_wait(fd, NULL, 0, 0) per harvest, each counted */
	keyless_clears = 0;
	fake_set_repoll(1);
	stats(&u, &a);
	for (int i = 1; i <= 3; i++) {
		CHECK_EQ(uepoll_harvest(&u, evs, 8), 0);
		CHECK_EQ(fk.waits, i);
		CHECK_EQ(fk.waits_t0, i);
	}
	CHECK_EQ(fk.waits_bad, 0);
	stats(&u, &b);
	CHECK_EQ(b.repolls, a.repolls + 3);
	CHECK_EQ(b.syscalls, a.syscalls + 3);
	CHECK_EQ(b.harvests, a.harvests + 3);
	CHECK_EQ(b.estale, a.estale);
	CHECK_EQ(b.ctl_syscalls, a.ctl_syscalls);

	/* back to 0: no call again */
	fake_set_repoll(0);
	w = fk.waits;
	CHECK_EQ(uepoll_harvest(&u, evs, 8), 0);
	CHECK_EQ(uepoll_harvest(&u, evs, 8), 0);
	CHECK_EQ(fk.waits, w);
	stats(&u, &a);
	CHECK_EQ(a.repolls, b.repolls);

	/* the repoll pushes an entry: harvested in the same pass, and the
	 * kernel's clearing of the word ends the calls */
	keyless_clears = 1;
	fake_item(0, EPOLLIN | EPOLLET, 42);
	keyless_slot = 0;
	fake_set_repoll(1);
	CHECK_EQ(uepoll_harvest(&u, evs, 8), 1);
	CHECK_EQ(evs[0].data.u64, 42);
	CHECK_EQ(evs[0].events, EPOLLIN);
	CHECK_EQ(fk.waits, w + 1);
	CHECK_EQ(fake_repoll(), 0);
	CHECK_EQ(uepoll_harvest(&u, evs, 8), 0);
	CHECK_EQ(fk.waits, w + 1);

	/* entries already there: the call answers ESTALE, the harvest goes on */
	fake_item(1, EPOLLIN | EPOLLET, 7);
	fake_push(1, EPOLLIN);
	fake_set_repoll(1);
	stats(&u, &a);
	errno = 4321;
	CHECK_EQ(uepoll_harvest(&u, evs, 8), 1);
	CHECK_EQ(errno, 4321);
	CHECK_EQ(evs[0].data.u64, 7);
	CHECK_EQ(fk.waits, w + 2);
	stats(&u, &b);
	CHECK_EQ(b.repolls, a.repolls + 1);
	CHECK_EQ(b.events, a.events + 1);

	/* another error: returned, errno untouched, the ring not read */
	fake_push(1, EPOLLOUT);
	fake_set_repoll(1);
	fk.wait_errno = EBADF;
	errno = 4321;
	CHECK_EQ(uepoll_harvest(&u, evs, 8), -EBADF);
	CHECK_EQ(errno, 4321);
	CHECK_EQ(fk.waits, w + 3);
	CHECK(__atomic_load_n(&fk.hdr->head, __ATOMIC_RELAXED) != fk.tail);
	CHECK_EQ(uepoll_harvest(&u, evs, 8), 1);	/* the next call succeeds */
	CHECK_EQ(evs[0].data.u64, 7);
	CHECK_EQ(evs[0].events, EPOLLOUT);
	CHECK_EQ(fk.waits, w + 4);

	/* uepoll_wait() harvests the same way: timeout 0, a stuck 1: one call */
	keyless_clears = 0;
	fake_set_repoll(1);
	stats(&u, &a);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 0), 0);
	CHECK_EQ(fk.waits, w + 5);
	CHECK_EQ(fk.waits_t0, fk.waits);
	stats(&u, &b);
	CHECK_EQ(b.repolls, a.repolls + 1);
	CHECK_EQ(b.sleeps, a.sleeps);
	/* and a keyless event that arrives meanwhile ends a wait */
	keyless_clears = 1;
	fake_item(2, EPOLLIN | EPOLLET, 9);
	keyless_slot = 2;
	CHECK_EQ(uepoll_wait(&u, evs, 8, 1000), 1);
	CHECK_EQ(evs[0].data.u64, 9);
	CHECK_EQ(fk.waits_bad, 0);

	uepoll_exit(&u);
	fake_destroy();
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
