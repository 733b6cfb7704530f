// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * userpoll_ring_test - what the kernel puts in the ring (doc/PROTOCOL.md
 * sections 3, 4, 5): ADD of a ready fd, coalescing, ONESHOT + MOD, DEL of
 * a signalled item with immediate re-ADD on the same slot, DEL of an
 * unsignalled item (EPOLLREMOVED entry), MOD with a pending entry, ENOSPC
 * and slot reuse, and a kernel that never trusts the shared tail.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "userpoll.h"

#include <sys/resource.h>

#define NEFD 8

FIXTURE(ring) {
	struct up u;
	int efd[NEFD];
};

FIXTURE_VARIANT(ring) {
	unsigned int n;
};

FIXTURE_VARIANT_ADD(ring, n8) { .n = 8, };
FIXTURE_VARIANT_ADD(ring, n1024) { .n = 1024, };

FIXTURE_SETUP(ring)
{
	int i, err;

	self->u.fd = -1;
	for (i = 0; i < NEFD; i++)
		self->efd[i] = -1;
	UP_REQUIRE();
	err = up_open(&self->u, variant->n, 0);
	ASSERT_EQ(0, err) TH_LOG("%s", strerror(-err));
	for (i = 0; i < NEFD; i++) {
		self->efd[i] = eventfd(0, EFD_NONBLOCK);
		ASSERT_LE(0, self->efd[i]);
	}
}

FIXTURE_TEARDOWN(ring)
{
	int i;

	for (i = 0; i < NEFD; i++)
		if (self->efd[i] >= 0)
			close(self->efd[i]);
	up_close(&self->u);
}

#define ADD(i, ev, d) up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efd[i], (ev), (d))
#define MOD(i, ev, d) up_ctl(self->u.fd, EPOLL_CTL_MOD, self->efd[i], (ev), (d))
#define DEL(i)        up_ctl(self->u.fd, EPOLL_CTL_DEL, self->efd[i], 0, 0)
#define POKE(i)       up_efd_write(self->efd[i], 1)
#define INET          (EPOLLIN | EPOLLET)

TEST_F(ring, add_not_ready_then_fire)
{
	struct up_event ev[4];

	ASSERT_EQ(0, ADD(0, INET, 0xabcdef0123456789ULL));
	EXPECT_EQ(0, up_tail(&self->u)) TH_LOG("entry for an idle fd");
	EXPECT_EQ(0xabcdef0123456789ULL, self->u.hdr->items[0].data);
	EXPECT_EQ(0, self->u.hdr->items[0].ready_events);
	EXPECT_EQ(0, up_harvest(&self->u, ev, 4, NULL));
	ASSERT_EQ(0, POKE(0));
	ASSERT_EQ(1, up_tail(&self->u));
	EXPECT_EQ(1, self->u.index[0]) TH_LOG("index entry is slot + 1");
	EXPECT_EQ(EPOLLIN, self->u.hdr->items[0].ready_events);
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(EPOLLIN, ev[0].events);
	EXPECT_EQ(0xabcdef0123456789ULL, ev[0].data);
	EXPECT_EQ(0, ev[0].item);
	EXPECT_EQ(1, up_head(&self->u));
	EXPECT_EQ(0, self->u.hdr->items[0].ready_events);
	/* consumed: the next edge makes a new entry */
	ASSERT_EQ(0, POKE(0));
	EXPECT_EQ(2, up_tail(&self->u));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(EPOLLIN, ev[0].events);
}

TEST_F(ring, add_already_ready)
{
	struct up_event ev[4];

	ASSERT_EQ(0, POKE(0));
	ASSERT_EQ(0, ADD(0, INET, 42));
	/* ready at ADD: the entry is there when epoll_ctl() returns */
	ASSERT_EQ(1, up_tail(&self->u)) TH_LOG("no entry for a ready fd at ADD");
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(EPOLLIN, ev[0].events);
	EXPECT_EQ(42, ev[0].data);
	/* EPOLLOUT on an eventfd: always ready */
	ASSERT_EQ(0, ADD(1, EPOLLOUT | EPOLLET, 43));
	ASSERT_EQ(2, up_tail(&self->u));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(EPOLLOUT, ev[0].events);
	EXPECT_EQ(43, ev[0].data);
	EXPECT_EQ(1, ev[0].item);
}

TEST_F(ring, coalescing)
{
	struct up_event ev[4];
	int k;

	ASSERT_EQ(0, ADD(0, INET, 5));
	for (k = 0; k < 1000; k++)
		ASSERT_EQ(0, POKE(0));
	EXPECT_EQ(1, up_tail(&self->u)) TH_LOG("1000 writes made %u entries",
					       up_tail(&self->u));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(EPOLLIN, ev[0].events);
	EXPECT_EQ(1000, up_efd_read(self->efd[0]));
	EXPECT_EQ(0, up_harvest(&self->u, ev, 4, NULL));
}

TEST_F(ring, ring_order_and_events)
{
	struct up_event ev[NEFD];
	int i;

	for (i = 0; i < NEFD; i++)
		ASSERT_EQ(0, ADD(i, INET | EPOLLOUT, 100 + i));
	/* EPOLLOUT is ready at once for all: one entry each, in ADD order */
	ASSERT_EQ(NEFD, up_tail(&self->u));
	ASSERT_EQ(NEFD, up_harvest(&self->u, ev, NEFD, NULL));
	for (i = 0; i < NEFD; i++) {
		EXPECT_EQ(100 + i, ev[i].data);
		EXPECT_EQ(EPOLLOUT, ev[i].events);
	}
	/* then fire in reverse order: the ring keeps the order of the edges */
	for (i = NEFD - 1; i >= 0; i--)
		ASSERT_EQ(0, POKE(i));
	ASSERT_EQ(2 * NEFD, up_tail(&self->u));
	ASSERT_EQ(NEFD, up_harvest(&self->u, ev, NEFD, NULL));
	for (i = 0; i < NEFD; i++) {
		EXPECT_EQ(100 + NEFD - 1 - i, ev[i].data);
		EXPECT_EQ(EPOLLIN, ev[i].events & EPOLLIN);
	}
}

TEST_F(ring, partial_harvest_keeps_the_rest)
{
	struct up_event ev[NEFD];
	int i;

	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, ADD(i, INET, i));
		ASSERT_EQ(0, POKE(i));
	}
	ASSERT_EQ(2, up_harvest(&self->u, ev, 2, NULL));
	EXPECT_EQ(2, up_head(&self->u));
	/* ring not empty: the wait says ESTALE instead of sleeping */
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 1000));
	ASSERT_EQ(2, up_harvest(&self->u, ev, NEFD, NULL));
	EXPECT_EQ(2, ev[0].data);
	EXPECT_EQ(3, ev[1].data);
	EXPECT_EQ(0, up_wait(self->u.fd, 0));
}

TEST_F(ring, oneshot_and_mod_rearm)
{
	struct up_event ev[4];

	ASSERT_EQ(0, ADD(0, INET | EPOLLONESHOT, 1));
	ASSERT_EQ(0, POKE(0));
	ASSERT_EQ(1, up_tail(&self->u));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(1, ev[0].data);
	/* fired once: further edges are ignored until MOD */
	ASSERT_EQ(0, POKE(0));
	ASSERT_EQ(0, POKE(0));
	EXPECT_EQ(1, up_tail(&self->u)) TH_LOG("ONESHOT fired twice");
	EXPECT_EQ(0, self->u.hdr->items[0].ready_events);
	/* MOD re-arms and re-polls: the fd is readable, so it fires now */
	ASSERT_EQ(0, MOD(0, INET | EPOLLONESHOT, 2));
	ASSERT_EQ(2, up_tail(&self->u)) TH_LOG("MOD did not re-arm a ready fd");
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(2, ev[0].data);
	EXPECT_EQ(EPOLLIN, ev[0].events);
	/* and once only */
	ASSERT_EQ(0, POKE(0));
	EXPECT_EQ(2, up_tail(&self->u));
	/* re-arm an idle fd: nothing until the next edge, then one entry */
	EXPECT_EQ(4, up_efd_read(self->efd[0]));
	ASSERT_EQ(0, MOD(0, INET | EPOLLONESHOT, 3));
	EXPECT_EQ(2, up_tail(&self->u));
	ASSERT_EQ(0, POKE(0));
	ASSERT_EQ(0, POKE(0));
	EXPECT_EQ(3, up_tail(&self->u));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(3, ev[0].data);
}

/* MOD re-arming a ONESHOT item whose entry is still pending: no duplicate. */
TEST_F(ring, oneshot_mod_while_pending)
{
	struct up_event ev[4];

	ASSERT_EQ(0, ADD(0, INET | EPOLLONESHOT, 1));
	ASSERT_EQ(0, POKE(0));
	ASSERT_EQ(1, up_tail(&self->u));
	ASSERT_EQ(0, MOD(0, INET | EPOLLONESHOT, 2));
	EXPECT_EQ(1, up_tail(&self->u)) TH_LOG("second entry for a signalled item");
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(2, ev[0].data);
	EXPECT_EQ(0, up_harvest(&self->u, ev, 4, NULL));
	/*
	 * The re-armed registration found the fd ready at MOD and fired
	 * through the pending entry: it is spent again, a new edge is quiet.
	 */
	ASSERT_EQ(0, POKE(0));
	EXPECT_EQ(1, up_tail(&self->u)) TH_LOG("ONESHOT fired twice after one MOD");
	/* a MOD on the consumed item re-arms and, the fd being ready, fires */
	ASSERT_EQ(0, MOD(0, INET | EPOLLONESHOT, 3));
	ASSERT_EQ(2, up_tail(&self->u));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(3, ev[0].data);
}

/*
 * MOD narrows the mask of an item with pending events: bits outside the
 * new mask are no longer reported (plain epoll re-polls with the new
 * mask), what the new mask still covers and the fd still has is.  No
 * second entry is pushed for the item, pending or not, and a later edge
 * comes through the entry that is still in the ring.
 */
TEST_F(ring, mod_narrows_pending_events)
{
	struct up_event ev[4];
	int fd = self->efd[0];

	/* an eventfd is writable: OUT fires at ADD, then IN with a write */
	ASSERT_EQ(0, ADD(0, EPOLLIN | EPOLLOUT | EPOLLET, 1));
	ASSERT_EQ(1, up_tail(&self->u));
	ASSERT_EQ(0, POKE(0));
	EXPECT_EQ(EPOLLIN | EPOLLOUT, self->u.hdr->items[0].ready_events);
	ASSERT_EQ(0, MOD(0, INET, 2));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(EPOLLIN, ev[0].events) TH_LOG("events 0x%x after MOD to EPOLLIN", ev[0].events);
	EXPECT_EQ(2, ev[0].data);
	EXPECT_EQ(1, up_tail(&self->u)) TH_LOG("MOD pushed a second entry");

	/* only OUT pending, MOD to IN on an fd that is not readable: nothing */
	ASSERT_EQ(1, up_efd_read(fd));
	ASSERT_EQ(0, MOD(0, EPOLLIN | EPOLLOUT | EPOLLET, 3));
	ASSERT_EQ(2, up_tail(&self->u));
	EXPECT_EQ(EPOLLOUT, self->u.hdr->items[0].ready_events);
	ASSERT_EQ(0, MOD(0, INET, 4));
	EXPECT_EQ(2, up_tail(&self->u)) TH_LOG("MOD pushed a second entry");
	EXPECT_EQ(0, self->u.hdr->items[0].ready_events & ~EPOLLREMOVED)
		TH_LOG("ready_events 0x%x", self->u.hdr->items[0].ready_events);
	/* the next edge rides on the pending entry: no push, one event */
	ASSERT_EQ(0, POKE(0));
	EXPECT_EQ(2, up_tail(&self->u)) TH_LOG("an edge pushed a second entry");
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(EPOLLIN, ev[0].events);
	EXPECT_EQ(4, ev[0].data);
	EXPECT_EQ(0, up_harvest(&self->u, ev, 4, NULL));
	/* and the item works as before: a new edge, a new entry */
	ASSERT_EQ(0, POKE(0));
	EXPECT_EQ(3, up_tail(&self->u));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(EPOLLIN, ev[0].events);
}

/*
 * DEL of a signalled, unconsumed item, then an immediate ADD that takes the
 * same slot.  The pending entry must never produce the old registration's
 * data: with an idle new fd nothing is reported until it fires, then only
 * the new data.
 */
TEST_F(ring, del_signalled_readd_idle)
{
	struct up_stats st = { 0 };
	struct up_event ev[4];

	ASSERT_EQ(0, ADD(0, INET, 0xA));
	ASSERT_EQ(0, POKE(0));
	ASSERT_EQ(1, up_tail(&self->u));
	ASSERT_EQ(0, DEL(0));
	EXPECT_EQ(EPOLLREMOVED, self->u.hdr->items[0].ready_events)
		TH_LOG("ready_events %#x after DEL", self->u.hdr->items[0].ready_events);
	/* the pending entry stays and now means "removed": no new entry */
	EXPECT_EQ(1, up_tail(&self->u));
	ASSERT_EQ(0, ADD(1, INET, 0xB));
	EXPECT_EQ(0xB, self->u.hdr->items[0].data) TH_LOG("slot 0 not reused");
	ASSERT_EQ(0, up_harvest(&self->u, ev, 4, &st))
		TH_LOG("reported events %#x data %#llx", ev[0].events,
		       (unsigned long long)ev[0].data);
	EXPECT_EQ(1, st.removed);
	ASSERT_EQ(0, POKE(1));
	ASSERT_EQ(2, up_tail(&self->u)) TH_LOG("no entry for the new registration");
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(0xB, ev[0].data);
	EXPECT_EQ(EPOLLIN, ev[0].events);
}

/* Same, but the new fd is ready at ADD: reported once, with the new data. */
TEST_F(ring, del_signalled_readd_ready)
{
	struct up_event ev[4];

	ASSERT_EQ(0, ADD(0, INET, 0xA));
	ASSERT_EQ(0, POKE(0));
	ASSERT_EQ(0, DEL(0));
	ASSERT_EQ(0, ADD(1, EPOLLOUT | EPOLLET, 0xB));
	EXPECT_EQ(0xB, self->u.hdr->items[0].data) TH_LOG("slot 0 not reused");
	/* EPOLLREMOVED still set: the new events OR in without a new entry */
	EXPECT_EQ(1, up_tail(&self->u));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(0xB, ev[0].data);
	EXPECT_EQ(EPOLLOUT, ev[0].events) TH_LOG("events %#x", ev[0].events);
	EXPECT_EQ(0, up_harvest(&self->u, ev, 4, NULL));
}

/* Re-ADD of the same (still readable) fd with new data. */
TEST_F(ring, del_signalled_readd_same_fd)
{
	struct up_event ev[4];
	int k;

	for (k = 1; k <= 50; k++) {
		ASSERT_EQ(0, ADD(0, INET, 0x1000 + k));
		ASSERT_EQ(0, POKE(0));
		ASSERT_EQ(0, DEL(0));
	}
	ASSERT_EQ(0, ADD(0, INET, 0x2000));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(0x2000, ev[0].data);
	EXPECT_EQ(EPOLLIN, ev[0].events);
	EXPECT_EQ(0, up_harvest(&self->u, ev, 4, NULL));
}

TEST_F(ring, del_unsignalled_pushes_removed)
{
	struct up_stats st = { 0 };
	struct up_event ev[4];

	ASSERT_EQ(0, ADD(0, INET, 1));
	ASSERT_EQ(0, ADD(1, INET, 2));
	EXPECT_EQ(0, up_tail(&self->u));
	ASSERT_EQ(0, DEL(1));
	/* the consumer must revisit slot 1: an entry, marked removed */
	ASSERT_EQ(1, up_tail(&self->u)) TH_LOG("DEL of an idle item pushed nothing");
	EXPECT_EQ(2, self->u.index[0]);
	EXPECT_EQ(EPOLLREMOVED, self->u.hdr->items[1].ready_events);
	ASSERT_EQ(0, up_harvest(&self->u, ev, 4, &st));
	EXPECT_EQ(1, st.removed);
	EXPECT_EQ(0, st.raced);
	EXPECT_EQ(0, self->u.hdr->items[1].ready_events);
	/* the other registration is untouched */
	ASSERT_EQ(0, POKE(0));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(1, ev[0].data);
	/* a slot whose EPOLLREMOVED was consumed behaves like a fresh one */
	ASSERT_EQ(0, ADD(2, INET, 3));
	EXPECT_EQ(3, self->u.hdr->items[1].data);
	EXPECT_EQ(2, up_tail(&self->u));
	ASSERT_EQ(0, POKE(2));
	ASSERT_EQ(3, up_tail(&self->u));
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(3, ev[0].data);
}

TEST_F(ring, mod_with_pending_entry)
{
	struct up_event ev[4];

	ASSERT_EQ(0, ADD(0, INET, 0xA));
	ASSERT_EQ(0, POKE(0));
	ASSERT_EQ(1, up_tail(&self->u));
	ASSERT_EQ(0, MOD(0, INET, 0xB));
	/* still signalled: no second entry; the consumer sees the new data */
	EXPECT_EQ(1, up_tail(&self->u));
	EXPECT_EQ(0xB, self->u.hdr->items[0].data);
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(0xB, ev[0].data);
	EXPECT_EQ(EPOLLIN, ev[0].events);
	/* MOD of a ready, consumed item: re-poll makes a new entry */
	ASSERT_EQ(0, MOD(0, INET, 0xC));
	ASSERT_EQ(2, up_tail(&self->u)) TH_LOG("MOD did not re-poll");
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(0xC, ev[0].data);
	/* MOD to a mask that is not ready: nothing */
	ASSERT_EQ(1, up_efd_read(self->efd[0]));
	ASSERT_EQ(0, MOD(0, INET, 0xD));
	EXPECT_EQ(2, up_tail(&self->u));
	EXPECT_EQ(EPOLLIN, self->u.hdr->items[0].events & EPOLLIN);
}

TEST_F(ring, enospc_and_slot_reuse)
{
	unsigned int n = variant->n, i;
	int *fds;

	struct rlimit rl = { n + 64, n + 64 };

	/* n + 1 eventfds besides our own: raise the fd limit (root in the guest) */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < n + 64) {
		rl.rlim_cur = rl.rlim_max = n + 64;
		ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl))
			TH_LOG("RLIMIT_NOFILE %u: %s", n + 64, strerror(errno));
	}
	fds = calloc(n + 1, sizeof(int));
	ASSERT_NE(NULL, fds);
	for (i = 0; i <= n; i++) {
		fds[i] = eventfd(0, EFD_NONBLOCK);
		ASSERT_LE(0, fds[i]) TH_LOG("eventfd %u: %s", i, strerror(errno));
	}
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, fds[i], INET, i))
			TH_LOG("ADD %u of %u: %s", i, n, strerror(errno));
	/* slots are handed out lowest first */
	EXPECT_EQ(n - 1, self->u.hdr->items[n - 1].data);
	errno = 0;
	EXPECT_EQ(-1, up_ctl(self->u.fd, EPOLL_CTL_ADD, fds[n], INET, n));
	EXPECT_EQ(ENOSPC, errno) TH_LOG("ADD n+1: errno %d", errno);
	/* free slot 3 (or 0 when n is 1): the next ADD takes it */
	i = n > 3 ? 3 : 0;
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_DEL, fds[i], 0, 0));
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, fds[n], INET, 0x77));
	EXPECT_EQ(0x77, self->u.hdr->items[i].data) TH_LOG("slot %u not reused", i);
	errno = 0;
	EXPECT_EQ(-1, up_ctl(self->u.fd, EPOLL_CTL_ADD, fds[i], INET, 0x78));
	EXPECT_EQ(ENOSPC, errno);
	/* a failed ADD changed nothing */
	EXPECT_EQ(0x77, self->u.hdr->items[i].data);
	/* free two, the lower one is taken first */
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_DEL, fds[n - 1], 0, 0));
	if (n > 1) {
		ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_DEL, fds[0], 0, 0));
		ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, fds[i], INET, 0x79));
		EXPECT_EQ(0x79, self->u.hdr->items[0].data);
	}
	for (i = 0; i <= n; i++)
		close(fds[i]);
	free(fds);
}

/*
 * Many ADD/fire/(DEL before or after harvest) cycles on the same slot,
 * across several wraps of the ring: every cycle reports exactly its own
 * registration's data, once, or nothing when it was removed first.
 */
TEST_F(ring, readd_cycles_across_ring_wrap)
{
	unsigned int entries = self->u.ilen / 4, cycles = 3 * entries + 7, i;
	struct up_stats st = { 0 };
	struct up_event ev[4];
	int got;

	ASSERT_EQ(0, ADD(7, INET, 0x7777));	/* a bystander in slot 0 */
	for (i = 0; i < cycles; i++) {
		int e = i % 3;
		uint64_t data = 0x100000000ULL | i;

		ASSERT_EQ(0, ADD(e, INET, data));
		ASSERT_EQ(data, self->u.hdr->items[1].data) TH_LOG("cycle %u: slot", i);
		ASSERT_EQ(0, POKE(e));
		switch (i % 4) {
		case 0:		/* harvest, then DEL */
			got = up_harvest(&self->u, ev, 4, &st);
			ASSERT_EQ(1, got) TH_LOG("cycle %u", i);
			ASSERT_EQ(data, ev[0].data) TH_LOG("cycle %u", i);
			ASSERT_EQ(EPOLLIN, ev[0].events);
			ASSERT_EQ(0, DEL(e));
			break;
		case 1:		/* DEL with the entry pending: nothing reported */
		case 3:
			ASSERT_EQ(0, DEL(e));
			got = up_harvest(&self->u, ev, 4, &st);
			ASSERT_EQ(0, got) TH_LOG("cycle %u: removed registration "
						 "reported data %#llx", i,
						 (unsigned long long)ev[0].data);
			break;
		case 2:		/* DEL pending, re-ADD another ready fd, harvest */
			ASSERT_EQ(0, DEL(e));
			ASSERT_EQ(0, ADD(e, INET, data + 1));
			got = up_harvest(&self->u, ev, 4, &st);
			ASSERT_EQ(1, got) TH_LOG("cycle %u", i);
			ASSERT_EQ(data + 1, ev[0].data) TH_LOG("cycle %u: old data", i);
			ASSERT_EQ(0, DEL(e));
			(void)up_harvest(&self->u, ev, 4, &st);
			break;
		}
		(void)up_efd_read(self->efd[e]);
	}
	EXPECT_LE(cycles, up_tail(&self->u)) TH_LOG("ring did not wrap");
	EXPECT_EQ(0, st.bogus);
	EXPECT_EQ(0, up_pending(&self->u));
	ASSERT_EQ(0, DEL(7));
}

/* Closing a registered fd removes the registration and frees the slot. */
TEST_F(ring, close_registered_fd_frees_slot)
{
	unsigned int n = variant->n < 8 ? variant->n : 8, i;
	struct up_event ev[4];
	int *fds, extra;

	fds = calloc(n, sizeof(int));
	ASSERT_NE(NULL, fds);
	for (i = 0; i < n; i++) {
		fds[i] = eventfd(0, EFD_NONBLOCK);
		ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, fds[i], INET, i));
	}
	ASSERT_EQ(0, up_efd_write(fds[0], 1));
	close(fds[0]);
	extra = eventfd(1, EFD_NONBLOCK);
	ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, extra, INET, 0x99))
		TH_LOG("slot of a closed fd not freed: %s", strerror(errno));
	EXPECT_EQ(0x99, self->u.hdr->items[0].data);
	ASSERT_EQ(1, up_harvest(&self->u, ev, 4, NULL));
	EXPECT_EQ(0x99, ev[0].data);
	close(extra);
	for (i = 1; i < n; i++)
		close(fds[i]);
	free(fds);
}

/*
 * The kernel keeps its own tail and never trusts the mapping: a process
 * that scribbles on head, tail and the index loses its own events, the
 * kernel goes on.
 */
TEST_F(ring, scribbled_mapping)
{
	struct up_stats st = { 0 };
	struct up_event ev[4];
	int k;

	ASSERT_EQ(0, ADD(0, INET, 1));
	__atomic_store_n(&self->u.hdr->tail, 1000, __ATOMIC_RELAXED);
	ASSERT_EQ(0, POKE(0));
	EXPECT_EQ(1, up_tail(&self->u)) TH_LOG("kernel used the shared tail");
	/* garbage index entries are skipped by the consumer */
	self->u.index[0] = 0xffffffffu;
	EXPECT_EQ(0, up_harvest(&self->u, ev, 4, &st));
	EXPECT_EQ(1, st.bogus);
	/* the item stays signalled (nobody took it): the registration is lost
	 * to the ring until MOD/DEL; DEL + ADD recovers */
	ASSERT_EQ(0, DEL(0));
	ASSERT_EQ(0, ADD(0, INET, 2));
	/* a wild head: the kernel only compares it with its tail */
	__atomic_store_n(&self->u.hdr->head, 0x80000000u, __ATOMIC_RELAXED);
	EXPECT_EQ(-ESTALE, up_wait(self->u.fd, 1000));
	for (k = 0; k < 100; k++)
		ASSERT_EQ(0, POKE(0));
	memset(self->u.index, 0xff, self->u.ilen);
	memset(self->u.hdr->items, 0xff, self->u.n * sizeof(struct epoll_uitem));
	ASSERT_EQ(0, MOD(0, INET, 3));
	ASSERT_EQ(0, DEL(0));
	ASSERT_EQ(0, ADD(0, INET, 4));
	/* consistent again once head is put back to the kernel's tail */
	uepoll_head_release(self->u.hdr, up_tail(&self->u));
	EXPECT_EQ(0, up_wait(self->u.fd, 0));
}

/*
 * The largest instance: 65536 registrations fit, the next is ENOSPC.
 * (A fixture only for TEST_F_TIMEOUT: 65536 ADDs take ~20 s on the
 * KASAN kernel under TCG, near the harness's default 30 s.)
 */
FIXTURE(max) {
	int dummy;
};

FIXTURE_SETUP(max)
{
}

FIXTURE_TEARDOWN(max)
{
}

TEST_F_TIMEOUT(max, enospc_at_max_items, 300)
{
	const unsigned int n = EPOLL_USERPOLL_MAX_ITEMS;
	struct rlimit rl = { n + 256, n + 256 };
	struct up_event ev[4];
	unsigned int i;
	struct up u;
	int *fds;

	UP_REQUIRE();
	if (setrlimit(RLIMIT_NOFILE, &rl))
		SKIP(return, "cannot raise RLIMIT_NOFILE to %u: %s", n + 256,
		     strerror(errno));
	ASSERT_EQ(0, up_open(&u, n, 0));
	fds = calloc(n + 1, sizeof(int));
	ASSERT_NE(NULL, fds);
	for (i = 0; i <= n; i++) {
		fds[i] = eventfd(0, EFD_NONBLOCK);
		ASSERT_LE(0, fds[i]) TH_LOG("eventfd %u: %s", i, strerror(errno));
	}
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, up_ctl(u.fd, EPOLL_CTL_ADD, fds[i], INET, i))
			TH_LOG("ADD %u: %s", i, strerror(errno));
	errno = 0;
	EXPECT_EQ(-1, up_ctl(u.fd, EPOLL_CTL_ADD, fds[n], INET, n));
	EXPECT_EQ(ENOSPC, errno);
	/* the last slot works like any other */
	ASSERT_EQ(0, up_efd_write(fds[n - 1], 1));
	ASSERT_EQ(1, up_harvest(&u, ev, 4, NULL));
	EXPECT_EQ(n - 1, ev[0].data);
	EXPECT_EQ(n - 1, ev[0].item);
	ASSERT_EQ(0, up_ctl(u.fd, EPOLL_CTL_DEL, fds[n - 1], 0, 0));
	ASSERT_EQ(0, up_ctl(u.fd, EPOLL_CTL_ADD, fds[n], INET, 0xffff0));
	EXPECT_EQ(0xffff0, u.hdr->items[n - 1].data);
	up_close(&u);	/* the instance goes first: 65536 removals at once */
	for (i = 0; i <= n; i++)
		close(fds[i]);
	free(fds);
}

UP_TEST_MAIN
