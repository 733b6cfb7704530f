// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * spin_threads: at most UEPOLL_SPIN_THREADS threads of the process spin
 * at once (default: the CPUs less one).  With it 1, a thread spinning on
 * one instance without end makes the waits of a second thread on another
 * instance sleep at once (no spin phase counted); once the first stops,
 * the second spins again.  A malformed value fails uepoll_init() with
 * EINVAL, every time; it is read once per process, so that is checked in
 * a child.  (native, uring: epoll has no spin phase.)
 */
#include <pthread.h>
#include <sys/wait.h>
#include "helpers.h"

static struct uepoll ua;
static int stop;

static void *spinner(void *arg)
{
	struct epoll_event evs[4];

	(void)arg;
	/* nothing registered: every wait is a spin of the whole budget
	 * (UEPOLL_SPIN_MAX checks, milliseconds), then a 1 ms timeout */
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
		if (uepoll_wait(&ua, evs, 4, 1) < 0)
			return (void *)1;
	return NULL;
}

/* the spin phases of 20 waits of 1 ms on u */
static uint64_t spins_of_20(struct uepoll *u)
{
	struct uepoll_stats a, b;
	struct epoll_event evs[4];

	CHECK_EQ(uepoll_get_stats(u, &a), 0);
	for (int i = 0; i < 20; i++)
		CHECK_EQ(uepoll_wait(u, evs, 4, 1), 0);
	CHECK_EQ(uepoll_get_stats(u, &b), 0);
	return b.spins - a.spins;
}

static void malformed(const char *v)
{
	struct uepoll u;
	pid_t pid = fork();
	int st;

	CHECK(pid >= 0);
	if (!pid) {
		setenv("UEPOLL_SPIN_THREADS", v, 1);
		if (uepoll_init(&u, 4, 0) != -EINVAL || uepoll_init(&u, 4, 0) != -EINVAL)
			_exit(1);
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		FAIL("UEPOLL_SPIN_THREADS=%s: uepoll_init() did not fail with EINVAL", v);
}

int main(void)
{
	struct uepoll ub;
	uint64_t alone, beside, after;
	struct uepoll_stats st;
	int fds0 = count_fds();
	pthread_t th;
	void *ret;

	malformed("x");
	malformed("-1");
	malformed("1k");
	setenv("UEPOLL_SPIN_THREADS", "1", 1);
	t_init(&ua, 4);
	if (uepoll_backend(&ua) == UEPOLL_BACKEND_EPOLL)
		SKIP("the epoll backend has no spin phase");
	t_init(&ub, 4);
	CHECK_EQ(uepoll_set_spin(&ua, UEPOLL_SPIN_MAX), 0);
	CHECK_EQ(uepoll_set_spin(&ub, 64), 0);
	CHECK_EQ(uepoll_set_spin_adapt(&ub, 0), 0);

	alone = spins_of_20(&ub);
	pthread_create(&th, NULL, spinner, NULL);
	do {	/* the spinner's first spin phase has begun */
		usleep(1000);
		CHECK_EQ(uepoll_get_stats(&ua, &st), 0);
	} while (!st.spins);
	beside = spins_of_20(&ub);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, &ret);
	CHECK(ret == NULL);
	after = spins_of_20(&ub);
	printf("spin phases of 20 waits: alone %llu, beside a spinner %llu, after it %llu\n",
	       (unsigned long long)alone, (unsigned long long)beside, (unsigned long long)after);
	/* a wait spins, sleeps, harvests, spins again at its deadline */
	CHECK(alone >= 20);
	CHECK(after >= 20);
	/* the spinner's waits end between its spins: a few may slip in */
	if (beside > 4)
		FAIL("%llu of 20 waits spun beside a spinning thread", (unsigned long long)beside);
	uepoll_exit(&ua);
	uepoll_exit(&ub);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
