// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * level_race: no level-triggered event is lost when its wake-up comes
 * while the harvester sleeps, or just after its sleep ended.  A writer
 * thread writes two eventfds back to back: a new one, then the one the
 * round before reported (which the harvester read dry: it is the one a
 * wait asks again, native and uring ask in their sleep).  It waits until
 * the harvester has read both, then goes on.  Every round the second
 * write may land between the end of the sleep and the harvest after it
 * (uring: that harvest takes the sleep's answers for the files it asked
 * about; a completion of one of them in the same harvest must not be
 * dropped for an answer given before it).  A round that makes no
 * progress for 2 s with a file still readable is a lost event.  Skipped
 * where the backend has no level-triggered registrations.
 */
#include <poll.h>
#include <pthread.h>
#include "helpers.h"

#define NFD	8
#define SECS	2

static struct uepoll u;
static int fds[NFD];
static unsigned rounds, consumed;	/* atomics: writer / harvester */
static int stop;

static void *writer(void *arg)
{
	unsigned r, prev = 0;
	int64_t t0 = t_ms_now(), t;

	(void)arg;
	for (r = 1; t_ms_now() - t0 < SECS * 1000; r++) {
		unsigned cur = r % NFD;

		if (cur == prev)
			cur = (cur + 1) % NFD;
		t_write(fds[cur]);
		t_write(fds[prev]);
		prev = cur;
		/* both read by the harvester */
		t = t_ms_now();
		while (__atomic_load_n(&consumed, __ATOMIC_ACQUIRE) < 2 * r) {
			if (t_ms_now() - t > 2000) {
				__atomic_store_n(&rounds, r, __ATOMIC_RELEASE);
				__atomic_store_n(&stop, 2, __ATOMIC_RELEASE);
				return NULL;
			}
			sched_yield();
		}
	}
	__atomic_store_n(&rounds, r - 1, __ATOMIC_RELEASE);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

int main(void)
{
	struct epoll_event evs[NFD];
	pthread_t t;
	int caps, i, st;

	t_init(&u, 2 * NFD);
	caps = uepoll_backend_caps((unsigned)uepoll_backend(&u));
	CHECK(caps >= 0);
	if (!(caps & UEPOLL_CAP_LEVEL))
		SKIP("backend %s has no level-triggered registrations", uepoll_backend_name(&u));
	for (i = 0; i < NFD; i++) {
		fds[i] = t_efd();
		CHECK_EQ(t_add(&u, fds[i], EPOLLIN, (uint64_t)i), 0);
	}
	CHECK_EQ(pthread_create(&t, NULL, writer, NULL), 0);
	while (!(st = __atomic_load_n(&stop, __ATOMIC_ACQUIRE))) {
		int n = uepoll_wait(&u, evs, NFD, 100);

		CHECK(n >= 0 || n == -EINTR);
		for (i = 0; i < n; i++) {
			uint64_t v;
			int fd = fds[evs[i].data.u64 % NFD];

			/* read dry; a level-triggered report of one already
			 * read (the writer's two writes, one report) finds 0 */
			if (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
				__atomic_fetch_add(&consumed, (unsigned)v, __ATOMIC_RELEASE);
		}
	}
	CHECK_EQ(pthread_join(t, NULL), 0);
	if (st == 2) {
		struct pollfd pfd[NFD];

		for (i = 0; i < NFD; i++)
			pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		CHECK(poll(pfd, NFD, 0) >= 0);
		for (i = 0; i < NFD; i++)
			if (pfd[i].revents & POLLIN)
				FAIL("round %u: fd %d (data %d) is readable and was not reported "
				     "for 2 s (%u of %u writes read)", rounds, fds[i], i, consumed,
				     2 * rounds);
		FAIL("round %u: no progress for 2 s, nothing readable", rounds);
	}
	printf("level_race: %s: %u rounds, %u writes read, none lost\n", uepoll_backend_name(&u),
	       rounds, consumed);
	for (i = 0; i < NFD; i++)
		close(fds[i]);
	uepoll_exit(&u);
	return T_PASS;
}
