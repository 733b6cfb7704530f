// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * defer_diff: deferred changes answered as the epoll backend answers
 * them.  Seeded random sequences over a few places, each a socket pair
 * or nothing: new sockets (the lowest number: closed numbers come back),
 * closes without DEL, deferred ADDs and DELs, writes and drains, and
 * waits; one instance of the backend under test and one of the epoll
 * backend watch the same files and get the same changes, and each wait
 * (1 ms, so that uring's sleep with changes and its checks in the ring
 * are taken: uring.c, ring_sleep()) must file the same failures, in the
 * same order, with the same errno (uepoll_ctl_failed(3)) on both, and
 * report only data of ADDs made.  Seeds 1 to 40, 400 steps each;
 * DEFER_DIFF_SEED=S replays one, DEFER_DIFF_LOG=1 prints its steps.  The
 * library's own files (the batch helper's ring, native's ring for a
 * sleep with changes) are made before the sequence: made later, one
 * takes a number the sequence closed, and the two instances no longer
 * see the same files.
 */
#include <sys/socket.h>
#include "helpers.h"

#define PLACES	6
#define STEPS	400

struct place {
	int fd, peer;		/* -1: none */
	uint32_t gen;		/* ADDs of this place so far */
};

static struct place pl[PLACES];
static uint64_t rng;
static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static void defer_both(struct uepoll *u, int op, int fd, uint64_t data)
{
	struct uepoll_change c;

	t_change(&c, op, fd, EPOLLIN | EPOLLRDHUP | EPOLLET, data);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(uepoll_ctl_defer(&u[i], &c, 1), 0);
}

static void run_seed(uint64_t seed)
{
	struct uepoll u[2];
	struct uepoll_change f[2][64];
	struct epoll_event evs[16];
	int nq = 0;	/* changes queued since the last wait */
	char buf[64];

	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	t_init(&u[0], 16);
	CHECK_EQ(uepoll_init(&u[1], 16, UEPOLL_CLOEXEC | UEPOLL_BACKEND_EPOLL), 0);
	uepoll_set_spin(&u[0], 0);
	/* the library's own files (a batch helper ring) made now, not on a
	 * number the sequence closes */
	for (int i = 0; i < 2; i++) {
		struct uepoll_change w[2];
		int e = t_efd();

		t_change(&w[0], EPOLL_CTL_ADD, e, EPOLLIN, 1);
		t_change(&w[1], EPOLL_CTL_DEL, e, 0, 0);
		CHECK_EQ(uepoll_ctl_batch(&u[i], w, 2), 2);
		CHECK_EQ(w[0].res, 0);
		CHECK_EQ(w[1].res, 0);
		/* and those of a sleep with changes (native: its ring) */
		t_change(&w[0], EPOLL_CTL_ADD, e, EPOLLIN | EPOLLET, 1);
		CHECK_EQ(uepoll_ctl_defer(&u[i], w, 2), 0);
		while (uepoll_wait(&u[i], evs, 16, 1) == -EINTR)
			;
		CHECK_EQ(uepoll_ctl_batch(&u[i], NULL, 0), 0);
		CHECK_EQ(uepoll_ctl_failed(&u[i], NULL, 0), 0);
		close(e);
	}
	for (int p = 0; p < PLACES; p++)
		pl[p].fd = pl[p].peer = -1;
	for (int step = 0; step < STEPS; step++) {
		unsigned p = rnd(PLACES), op = nq >= 60 ? 7 : rnd(8);
		struct place *x = &pl[p];
		int sv[2];

		if (getenv("DEFER_DIFF_LOG"))
			printf("step %d place %u op %u fd %d nq %d\n", step, p, op, x->fd, nq);
		if (x->fd < 0 && op != 7) {
			CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
			x->fd = sv[0];
			x->peer = sv[1];
			continue;
		}
		switch (op) {
		case 0:	/* close without DEL (a DEL may be queued) */
			close(x->fd);
			close(x->peer);
			x->fd = x->peer = -1;
			break;
		case 1:
		case 2: {	/* ADD: data = place << 32 | (fd + 1) << 16 | gen */
			uint64_t d = ((uint64_t)p << 32) | ((uint64_t)(x->fd + 1) << 16) |
				     (++x->gen & 0xffff);

			defer_both(u, EPOLL_CTL_ADD, x->fd, d);
			nq++;
			break;
		}
		case 3:
			defer_both(u, EPOLL_CTL_DEL, x->fd, 0);
			nq++;
			break;
		case 4:
		case 5:
			if (x->fd >= 0)
				CHECK_EQ(write(x->peer, "x", 1), 1);
			break;
		case 6:
			while (x->fd >= 0 && read(x->fd, buf, sizeof(buf)) > 0)
				;
			break;
		case 7: {	/* a wait of each: the same failures */
			int nf[2], r;

			for (int i = 0; i < 2; i++) {
				while ((r = uepoll_wait(&u[i], evs, 16, 1)) == -EINTR)
					;
				CHECK(r >= 0);
				for (int e = 0; e < r; e++) {
					unsigned ep = (unsigned)(evs[e].data.u64 >> 32);

					CHECK(ep < PLACES);
					CHECK((evs[e].data.u64 & 0xffff) <= (pl[ep].gen & 0xffff));
				}
				/* what a wait that found events left queued (uring,
				 * native: ctl_defer(3)), applied now */
				CHECK_EQ(uepoll_ctl_batch(&u[i], NULL, 0), 0);
				nf[i] = uepoll_ctl_failed(&u[i], f[i], 64);
				CHECK(nf[i] >= 0);
			}
			if (getenv("DEFER_DIFF_LOG"))
				for (int i = 0; i < 2; i++)
					for (int k = 0; k < nf[i]; k++)
						printf("  %s: op %d fd %d res %d\n", i ? "epoll" : "test",
						       f[i][k].op, f[i][k].fd, f[i][k].res);
			if (nf[0] != nf[1])
				FAIL("seed %llu step %d: %d failures on %s, %d on epoll",
				     (unsigned long long)seed, step, nf[0], uepoll_backend_name(&u[0]),
				     nf[1]);
			for (int k = 0; k < nf[0]; k++) {
				if (f[0][k].fd != f[1][k].fd || f[0][k].op != f[1][k].op ||
				    f[0][k].res != f[1][k].res)
					FAIL("seed %llu step %d: failure %d: op %d fd %d: %s %d, epoll %d",
					     (unsigned long long)seed, step, k, f[0][k].op, f[0][k].fd,
					     uepoll_backend_name(&u[0]), f[0][k].res, f[1][k].res);
			}
			nq = 0;
			break;
		}
		}
	}
	for (int p = 0; p < PLACES; p++) {
		if (pl[p].fd >= 0) {
			close(pl[p].fd);
			close(pl[p].peer);
		}
	}
	uepoll_exit(&u[0]);
	uepoll_exit(&u[1]);
}

int main(void)
{
	const char *e = getenv("DEFER_DIFF_SEED");
	struct uepoll probe;
	const char *name;

	t_init(&probe, 1);
	name = uepoll_backend_name(&probe);
	uepoll_exit(&probe);

	if (e && *e) {
		run_seed(strtoull(e, NULL, 0));
	} else {
		for (uint64_t s = 1; s <= 40; s++)
			run_seed(s);
	}
	printf("%s: deferred changes fail as on the epoll backend (%d seeds x %d steps)\n", name,
	       e && *e ? 1 : 40, STEPS);
	return 0;
}
