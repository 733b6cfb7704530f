// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * taskrun: registrations made by threads other than the harvester.  On
 * io_uring a poll's wake-up is finished by task work of the thread that
 * submitted it; with COOP_TASKRUN (this test asks for that setup unless
 * UEPOLL_URING_SETUP says otherwise) the ring's IORING_SQ_TASKRUN flag
 * says work is pending, whoever's it is, and an enter of the harvester
 * runs only its own.
 *  a) a thread ADDs, then computes in user space without system calls:
 *     the edge that comes meanwhile is reported (the kernel runs the
 *     work when an interrupt returns to that thread, or the plain setup
 *     interrupts it for it);
 *  b) a thread ADDs, then exits: the kernel cancels its poll, and the
 *     cancel's work, the thread gone, runs from the kernel's fallback,
 *     which leaves IORING_SQ_TASKRUN set; a harvest re-arms the poll.
 *     Each edge is reported; a uepoll_wait(100 ms) with nothing pending
 *     then ends at its deadline, not spinning on the flag for ever (a
 *     spin that sees it, a harvest that finds nothing, the spin again),
 *     and in at most 4 system calls: a harvest enters for the flag once,
 *     not at every harvest while it stays set.
 */
#include <pthread.h>
#include "helpers.h"

static struct uepoll u;
static int efd;
static int added, stop;
static volatile uint64_t burn;

static void *add_then_compute(void *arg)
{
	(void)arg;
	if (t_add(&u, efd, EPOLLIN | EPOLLET, 9)) {
		__atomic_store_n(&added, -1, __ATOMIC_RELEASE);
		return (void *)1;
	}
	__atomic_store_n(&added, 1, __ATOMIC_RELEASE);
	/* user space only, no system call, until told to stop */
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
		burn++;
	return NULL;
}

/* a harvest-free wait that must end at its deadline, in few calls */
static void quiet_wait(const char *what)
{
	struct epoll_event evs[4];
	struct uepoll_stats s0, s1;
	uint64_t sys;
	int r;

	CHECK_EQ(uepoll_get_stats(&u, &s0), 0);
	r = uepoll_wait(&u, evs, 4, 100);
	CHECK_EQ(uepoll_get_stats(&u, &s1), 0);
	sys = s1.syscalls - s0.syscalls;
	if (r != 0)
		FAIL("%s: %d events where none is pending", what, r);
	if (sys > 4)
		FAIL("%s: %llu system calls in one uepoll_wait(100 ms)", what,
		     (unsigned long long)sys);
}

static void *add_then_exit(void *arg)
{
	(void)arg;
	return t_add(&u, efd, EPOLLIN | EPOLLET, 10) ? (void *)1 : NULL;
}

int main(void)
{
	struct epoll_event evs[16];
	int fds0 = count_fds(), r;
	pthread_t th;
	void *ret;

	setenv("UEPOLL_URING_SETUP", "coop", 0);
	t_init(&u, 16);
	efd = t_efd();

	/* a) */
	pthread_create(&th, NULL, add_then_compute, NULL);
	while (!__atomic_load_n(&added, __ATOMIC_ACQUIRE))
		usleep(1000);
	CHECK_EQ(added, 1);
	CHECK_EQ(uepoll_wait(&u, evs, 16, 0), 0);
	t_write(efd);
	r = uepoll_wait(&u, evs, 16, 2000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, &ret);
	CHECK(ret == NULL);
	if (r != 1 || evs[0].data.u64 != 9)
		FAIL("a) the edge of a computing thread's registration: %d events", r);
	quiet_wait("a)");
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, efd, NULL), 0);
	t_read(efd);

	/* b) */
	pthread_create(&th, NULL, add_then_exit, NULL);
	pthread_join(th, &ret);
	CHECK(ret == NULL);
	quiet_wait("b) before the edge");
	for (int round = 0; round < 3; round++) {
		t_write(efd);
		r = uepoll_wait(&u, evs, 16, 2000);
		if (r != 1 || evs[0].data.u64 != 10)
			FAIL("b) round %d: the edge of an exited thread's registration: %d events",
			     round, r);
		t_read(efd);
		quiet_wait("b) after the edge");
	}
	uepoll_exit(&u);
	close(efd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
