// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * userpoll_stress_test - many producer threads, one ring consumer
 * (doc/PROTOCOL.md sections 4 and 5).  Exact totals: every eventfd write
 * is accounted for once (the counters read after each reported event sum
 * to threads x iterations), no event is lost (the consumer never waits
 * for an edge that already happened) and a DEL/re-ADD churn never makes
 * the consumer report one registration's data with another's events.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "userpoll.h"

#include <sys/resource.h>

#define INET (EPOLLIN | EPOLLET)
#define MAXT 16

struct producer {
	pthread_t th;
	int *efds;
	int nfds;
	int iters;
	volatile int *go;
	volatile int done;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	int k;

	while (!*p->go)
		;
	for (k = 0; k < p->iters; k++) {
		if (up_efd_write(p->efds[k % p->nfds], 1))
			abort();
		if ((k & 255) == 0)
			sched_yield();
	}
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

FIXTURE(stress) {
	struct up u;
	int efds[MAXT * 64];
	int nefd;
};

FIXTURE_VARIANT(stress) {
	int threads;
	int fds_per_thread;	/* 0: every thread writes the same eventfd */
	int iters;
};

FIXTURE_VARIANT_ADD(stress, t4_own_fd) { .threads = 4, .fds_per_thread = 1, .iters = 20000, };
FIXTURE_VARIANT_ADD(stress, t8_shared_fd) { .threads = 8, .fds_per_thread = 0, .iters = 10000, };
FIXTURE_VARIANT_ADD(stress, t8_64_fds_each) { .threads = 8, .fds_per_thread = 64, .iters = 10000, };

FIXTURE_SETUP(stress)
{
	int i, err, n;

	self->u.fd = -1;
	self->nefd = 0;
	UP_REQUIRE();
	n = variant->fds_per_thread ? variant->threads * variant->fds_per_thread : 1;
	err = up_open(&self->u, n, 0);
	ASSERT_EQ(0, err) TH_LOG("%s", strerror(-err));
	for (i = 0; i < n; i++) {
		self->efds[i] = eventfd(0, EFD_NONBLOCK);
		ASSERT_LE(0, self->efds[i]);
		self->nefd++;
		ASSERT_EQ(0, up_ctl(self->u.fd, EPOLL_CTL_ADD, self->efds[i], INET, i));
	}
}

FIXTURE_TEARDOWN(stress)
{
	int i;

	for (i = 0; i < self->nefd; i++)
		close(self->efds[i]);
	up_close(&self->u);
}

TEST_F_TIMEOUT(stress, exact_totals, 300)
{
	struct producer p[MAXT];
	struct up_event ev[256];
	struct up_stats st = { 0 };
	volatile int go = 0;
	uint64_t total = 0, want, *per_fd;
	unsigned long reports = 0, estale = 0, sleeps = 0, empty_reports = 0;
	unsigned long lost_wakeups = 0;
	int i, k, all_done = 0;
	double t0;

	want = (uint64_t)variant->threads * variant->iters;
	per_fd = calloc(self->nefd, sizeof(*per_fd));
	ASSERT_NE(NULL, per_fd);
	for (i = 0; i < variant->threads; i++) {
		p[i].efds = variant->fds_per_thread ?
			&self->efds[i * variant->fds_per_thread] : &self->efds[0];
		p[i].nfds = variant->fds_per_thread ? variant->fds_per_thread : 1;
		p[i].iters = variant->iters;
		p[i].go = &go;
		p[i].done = 0;
		ASSERT_EQ(0, pthread_create(&p[i].th, NULL, produce, &p[i]));
	}
	t0 = up_now();
	go = 1;
	for (;;) {
		int got = up_harvest(&self->u, ev, 256, &st);

		for (k = 0; k < got; k++) {
			uint64_t v;

			ASSERT_GT(self->nefd, (int)ev[k].data) TH_LOG("bad data %llu",
				(unsigned long long)ev[k].data);
			ASSERT_EQ(EPOLLIN, ev[k].events);
			v = up_efd_read(self->efds[ev[k].data]);
			per_fd[ev[k].data] += v;
			total += v;
			reports++;
			if (!v)
				empty_reports++;
		}
		if (got)
			continue;
		if (all_done && total == want)
			break;
		if (!all_done) {
			all_done = 1;
			for (i = 0; i < variant->threads; i++)
				if (!__atomic_load_n(&p[i].done, __ATOMIC_ACQUIRE))
					all_done = 0;
			if (all_done)
				continue;	/* one more harvest after the last write */
		} else {
			/* all written, ring empty, counts short: an event was lost */
			int r = up_wait(self->u.fd, 2000);

			if (r == 0) {
				uint64_t left = 0;

				for (i = 0; i < self->nefd; i++)
					left += up_efd_read(self->efds[i]);
				ASSERT_EQ(want, total)
					TH_LOG("lost wake-up: ring empty, %llu of %llu counted, "
					       "%llu still in the eventfds",
					       (unsigned long long)total,
					       (unsigned long long)want,
					       (unsigned long long)left);
			}
			continue;
		}
		{
			/*
			 * Producers are running: a sleep that lasts its whole
			 * timeout and then finds entries means the entries came
			 * without waking us (a lost wake-up).
			 */
			double w0 = up_now();
			int r = up_wait(self->u.fd, 5000);

			sleeps++;
			if (r == -ESTALE)
				estale++;
			else
				ASSERT_EQ(0, r) TH_LOG("wait: %s", strerror(-r));
			if (up_now() - w0 > 4.9 && up_pending(&self->u))
				lost_wakeups++;
		}
	}
	for (i = 0; i < variant->threads; i++)
		pthread_join(p[i].th, NULL);
	EXPECT_EQ(want, total);
	if (variant->fds_per_thread)
		for (i = 0; i < self->nefd; i++)
			EXPECT_EQ((uint64_t)variant->iters / variant->fds_per_thread +
				  ((uint64_t)(variant->iters % variant->fds_per_thread) >
				   (uint64_t)(i % variant->fds_per_thread)), per_fd[i])
				TH_LOG("fd %d", i);
	EXPECT_EQ(0, st.bogus);
	EXPECT_EQ(0, st.removed);
	EXPECT_EQ(0, st.raced);
	EXPECT_EQ(up_tail(&self->u), up_head(&self->u));
	EXPECT_EQ(0, lost_wakeups) TH_LOG("%lu sleeps ran into their 5 s timeout "
					  "with entries in the ring", lost_wakeups);
	/* at most one entry per edge the consumer could see: reports <= writes */
	EXPECT_GE(want, reports);
	printf("# %d threads x %d writes: %lu reports (%lu empty), %lu sleeps "
	       "(%lu ESTALE), %.2f s\n", variant->threads, variant->iters, reports,
	       empty_reports, sleeps, estale, up_now() - t0);
	free(per_fd);
}

/*
 * DEL/re-ADD churn on one slot while another thread keeps the fd firing.
 * Registrations alternate between EPOLLIN (even generation) and EPOLLOUT
 * (odd generation) on the same eventfd; the data names the generation.
 * An eventfd write wakes with EPOLLIN only and EPOLLOUT is only ever
 * reported by the ADD-time poll, so a report whose events do not match
 * its data's generation is a registration mix-up (PROTOCOL.md section 5).
 */
struct churn {
	int epfd, efd;
	volatile int stop;
	unsigned long gens;
};

static void *writer(void *arg)
{
	struct churn *c = arg;

	while (!c->stop) {
		up_efd_write(c->efd, 1);
		if (up_efd_read(c->efd) == 0)
			sched_yield();
	}
	return NULL;
}

static void *churner(void *arg)
{
	struct churn *c = arg;
	unsigned long g;

	for (g = 1; !c->stop; g++) {
		uint32_t events = (g & 1) ? (EPOLLOUT | EPOLLET) : (EPOLLIN | EPOLLET);

		if (up_ctl(c->epfd, EPOLL_CTL_ADD, c->efd, events, g))
			abort();
		if (up_ctl(c->epfd, EPOLL_CTL_DEL, c->efd, 0, 0))
			abort();
		c->gens = g;
	}
	return NULL;
}

TEST(del_readd_churn)
{
	struct churn c = { 0 };
	struct up_event ev[64];
	struct up_stats st = { 0 };
	pthread_t tw, tc;
	unsigned long reports = 0, in = 0, out = 0;
	struct up u;
	double end;
	int k, got, other;

	UP_REQUIRE();
	ASSERT_EQ(0, up_open(&u, 2, 0));
	c.epfd = u.fd;
	c.efd = eventfd(0, EFD_NONBLOCK);
	/* a second, static registration keeps slot 0; churn uses slot 1 */
	other = eventfd(0, EFD_NONBLOCK);
	ASSERT_EQ(0, up_ctl(u.fd, EPOLL_CTL_ADD, other, INET, 0));
	ASSERT_EQ(0, pthread_create(&tw, NULL, writer, &c));
	ASSERT_EQ(0, pthread_create(&tc, NULL, churner, &c));
	end = up_now() + 3.0;
	while (up_now() < end) {
		got = up_harvest(&u, ev, 64, &st);
		for (k = 0; k < got; k++) {
			uint64_t g = ev[k].data;

			reports++;
			ASSERT_NE(0, g) TH_LOG("static registration reported");
			if (g & 1) {
				out++;
				ASSERT_EQ(EPOLLOUT, ev[k].events)
					TH_LOG("generation %llu (EPOLLOUT registration) reported "
					       "with events %#x", (unsigned long long)g, ev[k].events);
			} else {
				in++;
				ASSERT_EQ(EPOLLIN, ev[k].events)
					TH_LOG("generation %llu (EPOLLIN registration) reported "
					       "with events %#x", (unsigned long long)g, ev[k].events);
			}
			ASSERT_EQ(1, ev[k].item);
		}
	}
	c.stop = 1;
	pthread_join(tw, NULL);
	pthread_join(tc, NULL);
	/* drain: at most the last generation's events remain */
	got = up_harvest(&u, ev, 64, &st);
	ASSERT_LE(0, got);
	EXPECT_LT(0, c.gens);
	EXPECT_LT(0, reports) TH_LOG("nothing reported in 3 s of churn");
	printf("# %lu generations, %lu reports (%lu EPOLLIN, %lu EPOLLOUT), "
	       "%lu removed entries skipped, %lu C5 races\n", c.gens, reports, in,
	       out, st.removed, st.raced);
	close(c.efd);
	close(other);
	up_close(&u);
}

/*
 * A process that scribbles on its own mapping may lose its own events,
 * nothing else (PROTOCOL.md section 3): one thread writes garbage all over
 * the header, the items and the ring while another keeps firing, MODding,
 * DELeting and re-ADDing registrations and the main thread waits and
 * polls.  Every epoll_ctl() must still succeed, nothing may hang, and (on
 * the debug kernel) KASAN/lockdep/WARN stay silent; afterwards a fresh
 * instance works normally.
 */
struct scribble {
	struct up *u;
	int efd[8];
	volatile int stop;
	unsigned long writes, ops;
	int ctl_errno;
};

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void *scribbler(void *arg)
{
	struct scribble *sc = arg;
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	uint32_t *hdr = (uint32_t *)sc->u->hdr, *idx = sc->u->index;
	size_t hw = sc->u->hlen / 4, iw = sc->u->ilen / 4;

	while (!sc->stop) {
		uint64_t r = xorshift(&x);

		switch (r & 3) {
		case 0:		/* head / tail */
			__atomic_store_n(&hdr[4 + ((r >> 2) & 1)], (uint32_t)(r >> 32),
					 __ATOMIC_RELAXED);
			break;
		case 1:		/* anywhere in header + items */
			__atomic_store_n(&hdr[(r >> 8) % hw], (uint32_t)(r >> 32),
					 __ATOMIC_RELAXED);
			break;
		case 2:		/* ring entries */
			__atomic_store_n(&idx[(r >> 8) % iw], (uint32_t)(r >> 32),
					 __ATOMIC_RELAXED);
			break;
		default:	/* "consume" like a broken consumer */
			__atomic_exchange_n(&sc->u->hdr->items[(r >> 8) % sc->u->n].ready_events,
					    (uint32_t)(r >> 32), __ATOMIC_ACQ_REL);
			break;
		}
		sc->writes++;
	}
	return NULL;
}

static void *ctl_churn(void *arg)
{
	struct scribble *sc = arg;
	uint64_t x = 0x1234567887654321ULL;
	int reg[8] = { 0 };

	while (!sc->stop) {
		uint64_t r = xorshift(&x);
		int i = r % 8, err = 0;
		uint32_t ev = EPOLLIN | EPOLLET | ((r >> 8) & 1 ? EPOLLOUT : 0) |
			      ((r >> 9) & 1 ? EPOLLONESHOT : 0);

		switch ((r >> 4) % 4) {
		case 0:
			up_efd_write(sc->efd[i], 1);
			break;
		case 1:
			if (reg[i])
				err = up_ctl(sc->u->fd, EPOLL_CTL_MOD, sc->efd[i], ev, r);
			break;
		case 2:
			if (reg[i]) {
				err = up_ctl(sc->u->fd, EPOLL_CTL_DEL, sc->efd[i], 0, 0);
				reg[i] = 0;
			}
			break;
		default:
			if (!reg[i]) {
				err = up_ctl(sc->u->fd, EPOLL_CTL_ADD, sc->efd[i], ev, r);
				reg[i] = 1;
			}
			break;
		}
		if (err && !sc->ctl_errno)
			sc->ctl_errno = errno;
		if ((r & 63) == 0)
			(void)up_efd_read(sc->efd[i]);
		sc->ops++;
	}
	return NULL;
}

TEST(scribbled_mapping_under_load)
{
	struct scribble sc = { 0 };
	struct up_event ev[4];
	struct pollfd pfd;
	pthread_t ts, tc;
	struct up u, fresh;
	unsigned long waits = 0;
	double end;
	int i, efd;

	UP_REQUIRE();
	ASSERT_EQ(0, up_open(&u, 16, 0));
	sc.u = &u;
	for (i = 0; i < 8; i++) {
		sc.efd[i] = eventfd(0, EFD_NONBLOCK);
		ASSERT_LE(0, sc.efd[i]);
	}
	ASSERT_EQ(0, pthread_create(&ts, NULL, scribbler, &sc));
	ASSERT_EQ(0, pthread_create(&tc, NULL, ctl_churn, &sc));
	end = up_now() + 3.0;
	while (up_now() < end) {
		int r = up_wait(u.fd, 5);

		ASSERT_TRUE(r == 0 || r == -ESTALE) TH_LOG("wait: %s", strerror(-r));
		pfd.fd = u.fd;
		pfd.events = POLLIN;
		ASSERT_LE(0, poll(&pfd, 1, 0));
		waits++;
	}
	sc.stop = 1;
	pthread_join(ts, NULL);
	pthread_join(tc, NULL);
	EXPECT_EQ(0, sc.ctl_errno) TH_LOG("epoll_ctl failed under scribbling: %s",
					  strerror(sc.ctl_errno));
	printf("# %lu scribbles, %lu ctl/write ops, %lu waits in 3 s\n",
	       sc.writes, sc.ops, waits);
	for (i = 0; i < 8; i++)
		close(sc.efd[i]);
	up_close(&u);

	/* the kernel is fine: a fresh instance behaves */
	ASSERT_EQ(0, up_open(&fresh, 4, 0));
	efd = eventfd(0, EFD_NONBLOCK);
	ASSERT_EQ(0, up_ctl(fresh.fd, EPOLL_CTL_ADD, efd, INET, 5));
	ASSERT_EQ(0, up_efd_write(efd, 1));
	EXPECT_EQ(-ESTALE, up_wait(fresh.fd, 1000));
	ASSERT_EQ(1, up_harvest(&fresh, ev, 4, NULL));
	EXPECT_EQ(5, ev[0].data);
	close(efd);
	up_close(&fresh);
}

UP_TEST_MAIN
