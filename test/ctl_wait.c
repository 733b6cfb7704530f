// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * ctl_wait: uepoll_ctl_wait(3) is uepoll_ctl_batch() then uepoll_wait():
 *  - every change gets the result uepoll_ctl() gives the same sequence on
 *    a fresh instance; when an ADD or MOD failed the call returns 0 at
 *    once (no sleep, no harvest), and the changes after it apply all the
 *    same; when only DELs failed, a wait with nothing ready lasts its
 *    timeout;
 *  - the changes apply before the wait: an ADD of a ready fd ends it with
 *    that event (timeout -1), a DEL of a ready fd reports nothing;
 *  - a write from another thread ends the sleep;
 *  - where the backend folds the changes into the sleep (native with
 *    io_uring, epoll with IORING_OP_EPOLL_WAIT; not under valgrind),
 *    changes + sleep + the harvest of the event that ended it are one
 *    system call (uepoll_get_stats(3)); printed for every backend; on
 *    uring the changes' fstat()s and one call that submits and sleeps;
 *  - a level-triggered event still ready is reported again at once, the
 *    sleep not entered; one hinted drained (uepoll_drained(3)) costs the
 *    sleep no system call (but on native's level epoll, unfolded);
 *  - the sleep holds no lock: another thread's uepoll_ctl() and batch
 *    return at once, and its ADD of a ready fd ends the sleep;
 *  - a signal ends the sleep with -EINTR, the changes applied; a sleep
 *    that outlasts its timeout returns 0, not -EINTR;
 *  - the call's own errors (-EINVAL, -EBADF) apply nothing.
 */
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include "helpers.h"

static int efd[4], closed_fd, reg_fd;

/* the kernel's io_uring has operation op */
static int uring_has(int op)
{
	struct io_uring_probe *p = io_uring_get_probe();
	int ret = p && io_uring_opcode_supported(p, op);

	if (p)
		io_uring_free_probe(p);
	return ret;
}

/*
 * The backend folds the changes into the sleep: native (a poll of the
 * ring), epoll where the kernel has IORING_OP_EPOLL_WAIT (59, Linux 6.15)
 */
static int folds(const struct uepoll *u)
{
	return uepoll_backend_probe(UEPOLL_BACKEND_URING) == 0 && t_folds_sleep() &&
	       (!strcmp(uepoll_backend_name(u), "native") ||
		(!strcmp(uepoll_backend_name(u), "epoll") && uring_has(59)));
}

/* a kernel tearing down an io_uring may interrupt a sleep (ctl_batch.c) */
static int ctl_wait_retry(struct uepoll *u, struct uepoll_change *c, unsigned n,
			  struct epoll_event *evs, int max, int ms)
{
	int r, tries = 0;

	while ((r = uepoll_ctl_wait(u, c, n, evs, max, ms)) == -EINTR && ++tries < 10)
		n = 0;	/* the changes were applied */
	return r;
}

/*
 * Results as uepoll_ctl() gives them.  An ADD or MOD failed: 0 at once
 * (the caller redoes it, then waits), not even a harvest; only DELs
 * failed: the whole timeout when nothing is ready.
 */
static void parity(void)
{
	const uint32_t ET = EPOLLIN | EPOLLET;
	struct uepoll uw, us;
	struct uepoll_change c[16];
	struct epoll_event evs[8];
	int n = 0, r;
	int64_t t0;

	t_init(&uw, 8);
	t_init(&us, 8);
	t_change(&c[n++], EPOLL_CTL_ADD, efd[0], ET, 1);		/* 0 */
	t_change(&c[n++], EPOLL_CTL_ADD, efd[0], ET, 2);		/* EEXIST */
	t_change(&c[n++], EPOLL_CTL_MOD, efd[1], ET, 3);		/* ENOENT */
	t_change(&c[n++], EPOLL_CTL_ADD, closed_fd, ET, 4);	/* EBADF */
	t_change(&c[n++], EPOLL_CTL_ADD, reg_fd, ET, 5);		/* EPERM */
	t_change(&c[n++], EPOLL_CTL_ADD, efd[1], ET | EPOLLEXCLUSIVE | EPOLLOUT, 6); /* EINVAL */
	t_change(&c[n++], EPOLL_CTL_ADD, efd[2], ET, 7);		/* ADD, MOD, DEL */
	t_change(&c[n++], EPOLL_CTL_MOD, efd[2], ET | EPOLLOUT, 8);
	t_change(&c[n++], EPOLL_CTL_DEL, efd[2], 0, 0);
	t_change(&c[n++], EPOLL_CTL_DEL, efd[2], 0, 0);		/* ENOENT */
	t_change(&c[n++], EPOLL_CTL_MOD, efd[0], ET, 9);		/* 0 */
	errno = 4242;
	t0 = t_ms_now();
	r = ctl_wait_retry(&uw, c, (unsigned)n, evs, 8, 3000);
	CHECK_EQ(r, 0);
	CHECK(t_ms_now() - t0 < 2000);
	CHECK_EQ(errno, 4242);
	for (int i = 0; i < n; i++) {
		int s = uepoll_ctl(&us, c[i].op, c[i].fd, &c[i].ev);

		if (s != c[i].res)
			FAIL("change %d: uepoll_ctl_wait %d (%s), uepoll_ctl %d (%s)", i, c[i].res,
			     strerror(-c[i].res), s, strerror(-s));
	}
	CHECK_EQ(c[0].res, 0);
	CHECK_EQ(c[1].res, -EEXIST);
	CHECK_EQ(c[3].res, -EBADF);
	CHECK_EQ(c[4].res, -EPERM);
	CHECK_EQ(c[5].res, -EINVAL);
	CHECK_EQ(c[9].res, -ENOENT);
	/* a DEL that fails: the sleep goes on */
	t_change(&c[0], EPOLL_CTL_DEL, efd[3], 0, 0);		/* ENOENT */
	t_change(&c[1], EPOLL_CTL_DEL, closed_fd, 0, 0);		/* EBADF */
	t_change(&c[2], EPOLL_CTL_ADD, efd[1], EPOLLIN | EPOLLET, 10);
	t0 = t_ms_now();
	r = ctl_wait_retry(&uw, c, 3, evs, 8, 100);
	CHECK_EQ(r, 0);
	CHECK(t_ms_now() - t0 >= 90);
	CHECK_EQ(c[0].res, -ENOENT);
	CHECK_EQ(c[1].res, -EBADF);
	CHECK_EQ(c[2].res, 0);
	/* an ADD that fails first: the changes after it apply all the same */
	t_change(&c[0], EPOLL_CTL_ADD, efd[1], EPOLLIN | EPOLLET, 11);	/* EEXIST */
	t_change(&c[1], EPOLL_CTL_DEL, efd[1], 0, 0);
	t_change(&c[2], EPOLL_CTL_ADD, efd[3], EPOLLIN | EPOLLET, 12);
	t0 = t_ms_now();
	r = ctl_wait_retry(&uw, c, 3, evs, 8, 3000);
	CHECK_EQ(r, 0);
	CHECK(t_ms_now() - t0 < 2000);
	CHECK_EQ(c[0].res, -EEXIST);
	CHECK_EQ(c[1].res, 0);
	CHECK_EQ(c[2].res, 0);
	CHECK_EQ(t_add(&uw, efd[1], EPOLLIN | EPOLLET, 13), 0);
	CHECK_EQ(t_add(&uw, efd[3], EPOLLIN | EPOLLET, 14), -EEXIST);
	/* ... and nothing harvested: the ready efd[3] waits for the next call */
	t_write(efd[3]);
	t_change(&c[0], EPOLL_CTL_MOD, efd[2], EPOLLIN | EPOLLET, 15);	/* ENOENT */
	CHECK_EQ(ctl_wait_retry(&uw, c, 1, evs, 8, 3000), 0);
	CHECK_EQ(c[0].res, -ENOENT);
	r = uepoll_wait(&uw, evs, 8, 1000);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 12);
	t_read(efd[3]);
	t_change(&c[0], EPOLL_CTL_DEL, efd[1], 0, 0);
	t_change(&c[1], EPOLL_CTL_DEL, efd[3], 0, 0);
	CHECK_EQ(uepoll_ctl_batch(&uw, c, 2), 2);
	CHECK_EQ(c[0].res, 0);
	CHECK_EQ(c[1].res, 0);
	/* what they left: efd[0] with data 9 */
	t_write(efd[0]);
	r = uepoll_wait(&uw, evs, 8, 1000);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 9);
	t_read(efd[0]);
	/* nothing ready: a failed MOD alone, then a failed ADD beside one
	 * that is submitted, still 0 at once */
	t_change(&c[0], EPOLL_CTL_MOD, efd[1], EPOLLIN | EPOLLET, 16);	/* ENOENT */
	t0 = t_ms_now();
	CHECK_EQ(ctl_wait_retry(&uw, c, 1, evs, 8, 3000), 0);
	CHECK(t_ms_now() - t0 < 2000);
	CHECK_EQ(c[0].res, -ENOENT);
	t_change(&c[0], EPOLL_CTL_ADD, closed_fd, EPOLLIN | EPOLLET, 17);	/* EBADF */
	t_change(&c[1], EPOLL_CTL_ADD, efd[1], EPOLLIN | EPOLLET, 18);
	t0 = t_ms_now();
	CHECK_EQ(ctl_wait_retry(&uw, c, 2, evs, 8, 3000), 0);
	CHECK(t_ms_now() - t0 < 2000);
	CHECK_EQ(c[0].res, -EBADF);
	CHECK_EQ(c[1].res, 0);
	uepoll_exit(&uw);
	uepoll_exit(&us);
}

/* the changes come first: an ADD of a ready fd is the event, a DEL silences */
static void order(void)
{
	struct uepoll u;
	struct uepoll_change c[2];
	struct epoll_event evs[8];
	int r;

	t_init(&u, 8);
	t_write(efd[0]);
	t_change(&c[0], EPOLL_CTL_ADD, efd[0], EPOLLIN | EPOLLET, 10);
	t_change(&c[1], EPOLL_CTL_ADD, efd[1], EPOLLIN | EPOLLET, 11);
	r = ctl_wait_retry(&u, c, 2, evs, 8, -1);
	CHECK_EQ(c[0].res, 0);
	CHECK_EQ(c[1].res, 0);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 10);
	CHECK_EQ(evs[0].events, EPOLLIN);
	/* efd[1] written, then deleted in the call: nothing of it */
	t_write(efd[1]);
	t_change(&c[0], EPOLL_CTL_DEL, efd[1], 0, 0);
	r = ctl_wait_retry(&u, c, 1, evs, 8, 100);
	CHECK_EQ(c[0].res, 0);
	CHECK_EQ(r, 0);
	/* timeout 0: the changes, then one harvest */
	t_change(&c[0], EPOLL_CTL_ADD, efd[1], EPOLLIN | EPOLLET, 12);
	r = uepoll_ctl_wait(&u, c, 1, evs, 8, 0);
	CHECK_EQ(c[0].res, 0);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 12);
	t_read(efd[0]);
	t_read(efd[1]);
	uepoll_exit(&u);
}

static void *late_writer(void *arg)
{
	struct timespec ts = { 0, 100 * 1000000 };

	nanosleep(&ts, NULL);
	t_write(*(int *)arg);
	return NULL;
}

/*
 * Another thread's write ends the sleep; the system calls of a
 * ctl_wait whose sleep a wake-up ends, and of one whose ADD is ready.
 */
static void wake(void)
{
	struct uepoll u;
	struct uepoll_change c[2];
	struct epoll_event evs[8];
	pthread_t t;
	uint64_t s0, s_sleep, s_ready;
	int r, folded;
	int64_t t0;

	t_init(&u, 8);
	folded = folds(&u);
	/* warm: the helper ring is set up at the first batch of two */
	t_change(&c[0], EPOLL_CTL_ADD, efd[3], EPOLLIN | EPOLLET, 30);
	t_change(&c[1], EPOLL_CTL_MOD, efd[3], EPOLLIN | EPOLLET, 31);
	CHECK_EQ(ctl_wait_retry(&u, c, 2, evs, 8, 10), 0);
	CHECK_EQ(c[0].res, 0);
	CHECK_EQ(c[1].res, 0);

	t_change(&c[0], EPOLL_CTL_ADD, efd[0], EPOLLIN | EPOLLET, 20);
	t_change(&c[1], EPOLL_CTL_ADD, efd[1], EPOLLIN | EPOLLET, 21);
	CHECK_EQ(pthread_create(&t, NULL, late_writer, &efd[1]), 0);
	uepoll_set_spin(&u, 0);
	s0 = t_syscalls(&u);
	t0 = t_ms_now();
	r = ctl_wait_retry(&u, c, 2, evs, 8, 5000);
	s_sleep = t_syscalls(&u) - s0;
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(c[0].res, 0);
	CHECK_EQ(c[1].res, 0);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 21);
	CHECK(t_ms_now() - t0 < 4000);

	t_write(efd[2]);
	t_change(&c[0], EPOLL_CTL_DEL, efd[0], 0, 0);
	t_change(&c[1], EPOLL_CTL_ADD, efd[2], EPOLLIN | EPOLLET, 22);
	s0 = t_syscalls(&u);
	r = ctl_wait_retry(&u, c, 2, evs, 8, 5000);
	s_ready = t_syscalls(&u) - s0;
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 22);
	printf("%s: system calls of uepoll_ctl_wait(2 changes): %llu when a write ends its "
	       "sleep, %llu when an ADD is ready%s\n", uepoll_backend_name(&u),
	       (unsigned long long)s_sleep, (unsigned long long)s_ready,
	       folded ? " (folded: 1 each)" : "");
	if (folded) {
		CHECK_EQ(s_sleep, 1);
		CHECK_EQ(s_ready, 1);
	}
	/*
	 * uring: the changes' checks in the enter that submits their polls
	 * and sleeps (t_ring_checks()); else their fstat()s first (one
	 * io_uring_enter() of the batch helper for both, or one fstat()
	 * each), then that enter (not under valgrind)
	 */
	if (!strcmp(uepoll_backend_name(&u), "uring") && !under_valgrind()) {
		uint64_t want = t_ring_checks(&u) ? 1 : (t_folds_sleep() ? 1 : 2) + 1;

		CHECK_EQ(s_sleep, want);
		CHECK_EQ(s_ready, want);
	}
	for (int i = 0; i < 4; i++)
		t_read(efd[i]);
	uepoll_exit(&u);
}

/* a level-triggered event left ready is reported again, without a sleep */
static void level(void)
{
	struct uepoll u;
	struct uepoll_change c;
	struct epoll_event evs[8];
	uint64_t s0, s;
	int r;
	int64_t t0;

	t_init(&u, 8);
	if (!(uepoll_backend_caps((unsigned)uepoll_backend(&u)) & UEPOLL_CAP_LEVEL)) {
		uepoll_exit(&u);
		return;
	}
	CHECK_EQ(t_add(&u, efd[0], EPOLLIN, 40), 0);
	t_write(efd[0]);
	r = uepoll_wait(&u, evs, 8, 1000);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 40);
	/* not read: still ready */
	t_change(&c, EPOLL_CTL_ADD, efd[1], EPOLLIN | EPOLLET, 41);
	t0 = t_ms_now();
	r = ctl_wait_retry(&u, &c, 1, evs, 8, 3000);
	CHECK_EQ(c.res, 0);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 40);
	CHECK(t_ms_now() - t0 < 2000);

	/*
	 * Drained now, which the library cannot know: where the changes fold
	 * into the sleep, the same system call asks whether a level-triggered
	 * event is still ready (native: the ring's repoll of its level epoll),
	 * so an ADD that is ready costs one system call in all, as without
	 * level-triggered registrations (wake()).
	 */
	t_read(efd[0]);
	t_write(efd[2]);
	t_change(&c, EPOLL_CTL_ADD, efd[2], EPOLLIN | EPOLLET, 42);
	s0 = t_syscalls(&u);
	r = ctl_wait_retry(&u, &c, 1, evs, 8, 3000);
	s = t_syscalls(&u) - s0;
	CHECK_EQ(c.res, 0);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 42);
	printf("%s: system calls of uepoll_ctl_wait(ADD ready) after a level-triggered event "
	       "was drained: %llu%s\n", uepoll_backend_name(&u), (unsigned long long)s,
	       folds(&u) ? " (folded: 1)" : "");
	if (folds(&u))
		CHECK_EQ(s, 1);
	/* and the level-triggered registration is still watched */
	t_write(efd[0]);
	r = uepoll_wait(&u, evs, 8, 3000);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 40);
	t_read(efd[0]);
	t_read(efd[2]);
	uepoll_exit(&u);
}

/*
 * A level-triggered registration hinted drained of all it asks
 * (uepoll_drained(3)) is no file to ask before a sleep: a
 * uepoll_ctl_wait() with a MOD (uring: a run its ring sleep does not
 * take) that sleeps until another thread's write makes as many system
 * calls as the same wait without that registration (uring.c
 * uring_ctl_sleep(): the level list trimmed before it decides).
 */
static uint64_t hinted_run(int with_level)
{
	struct uepoll u;
	struct uepoll_change c;
	struct epoll_event evs[8];
	pthread_t t;
	uint64_t s0, s;
	/* without: the same harvest, of the edge-triggered registration */
	int r, fd = with_level ? efd[0] : efd[1];
	uint64_t data = with_level ? 50 : 51;

	t_init(&u, 8);
	uepoll_set_spin(&u, 0);
	CHECK_EQ(t_add(&u, efd[1], EPOLLIN | EPOLLET, 51), 0);
	if (with_level)
		CHECK_EQ(t_add(&u, efd[0], EPOLLIN, 50), 0);
	t_write(fd);
	r = uepoll_wait(&u, evs, 8, 1000);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, data);
	t_read(fd);
	if (with_level)
		CHECK_EQ(uepoll_drained(&u, efd[0], EPOLLIN), 0);
	t_change(&c, EPOLL_CTL_MOD, efd[1], EPOLLIN | EPOLLET, 52);
	CHECK_EQ(pthread_create(&t, NULL, late_writer, &efd[1]), 0);
	s0 = t_syscalls(&u);
	r = ctl_wait_retry(&u, &c, 1, evs, 8, 5000);
	s = t_syscalls(&u) - s0;
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(c.res, 0);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 52);
	t_read(efd[1]);
	uepoll_exit(&u);
	return s;
}

static void level_hinted(void)
{
	struct uepoll u;
	uint64_t with, without;
	const char *name;
	int level, lepoll;

	t_init(&u, 8);
	level = !!(uepoll_backend_caps((unsigned)uepoll_backend(&u)) & UEPOLL_CAP_LEVEL);
	name = uepoll_backend_name(&u);	/* a constant string */
	/*
	 * native's level epoll (UEPOLL_NATIVE_LEVEL=epoll): the delivered
	 * item stays on that epoll's ready list, which only its own
	 * epoll_wait() polls again, whatever the hint says: one call more
	 * where the sleep does not fold it (UEPOLL_BATCH=loop)
	 */
	lepoll = uepoll_backend(&u) == (int)UEPOLL_BACKEND_NATIVE && !t_native_klevel(&u);
	uepoll_exit(&u);
	if (!level)
		return;
	/*
	 * The fewest of three runs each, after one that makes the process's
	 * first uses (probes, helpers): a sleep that an io_uring's teardown
	 * interrupts (ctl_wait_retry()) is counted again in its run only.
	 */
	(void)hinted_run(0);
	without = with = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		uint64_t s = hinted_run(0);

		without = s < without ? s : without;
		s = hinted_run(1);
		with = s < with ? s : with;
	}
	printf("%s: system calls of uepoll_ctl_wait(MOD) that sleeps: %llu, %llu with a "
	       "level-triggered registration hinted drained\n", name, (unsigned long long)without,
	       (unsigned long long)with);
	if (!under_valgrind() && !(lepoll && !t_folds_sleep()))
		CHECK_EQ(with, without);
}

struct other {
	struct uepoll *u;
	int64_t ctl_ms, batch_ms;
	int ctl_res, batch_res[2];
};

/* while the harvester sleeps: a uepoll_ctl() and a batch of another thread */
static void *other_thread(void *arg)
{
	struct other *o = arg;
	struct timespec ts = { 0, 100 * 1000000 };
	struct uepoll_change c[2];
	int64_t t0;

	nanosleep(&ts, NULL);
	t_change(&c[0], EPOLL_CTL_ADD, efd[2], EPOLLIN | EPOLLET, 62);
	t_change(&c[1], EPOLL_CTL_ADD, efd[3], EPOLLIN | EPOLLET, 63);
	t0 = t_ms_now();
	o->batch_res[0] = uepoll_ctl_batch(o->u, c, 2);
	o->batch_res[1] = c[0].res | c[1].res;
	o->batch_ms = t_ms_now() - t0;
	t_write(efd[1]);
	t0 = t_ms_now();
	o->ctl_res = t_add(o->u, efd[1], EPOLLIN | EPOLLET, 61);
	o->ctl_ms = t_ms_now() - t0;
	return NULL;
}

/*
 * The sleep holds no lock another thread's uepoll_ctl() or batch waits
 * for: both return at once, and the ADD of a ready fd ends the sleep.
 */
static void concurrent(void)
{
	struct uepoll u;
	struct uepoll_change c;
	struct epoll_event evs[8];
	struct other o = { .u = &u };
	pthread_t t;
	int r;
	int64_t t0;

	t_init(&u, 8);
	uepoll_set_spin(&u, 0);
	t_change(&c, EPOLL_CTL_ADD, efd[0], EPOLLIN | EPOLLET, 60);
	CHECK_EQ(pthread_create(&t, NULL, other_thread, &o), 0);
	t0 = t_ms_now();
	r = ctl_wait_retry(&u, &c, 1, evs, 8, 5000);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(c.res, 0);
	CHECK_EQ(o.batch_res[0], 2);
	CHECK_EQ(o.batch_res[1], 0);
	CHECK_EQ(o.ctl_res, 0);
	if (o.batch_ms > 2000 || o.ctl_ms > 2000)
		FAIL("another thread's batch took %lld ms, its uepoll_ctl %lld ms, while we slept",
		     (long long)o.batch_ms, (long long)o.ctl_ms);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 61);
	CHECK(t_ms_now() - t0 < 4000);
	t_read(efd[1]);
	uepoll_exit(&u);
}

static volatile sig_atomic_t hits;

static void on_usr1(int sig)
{
	(void)sig;
	hits++;
}

static void *late_signal(void *arg)
{
	struct timespec ts = { 0, 150 * 1000000 };

	nanosleep(&ts, NULL);
	pthread_kill(*(pthread_t *)arg, SIGUSR1);
	return NULL;
}

/* a signal ends the sleep: -EINTR, the changes applied */
static void intr(void)
{
	struct sigaction sa;
	struct uepoll u;
	struct uepoll_change c;
	struct epoll_event evs[8];
	pthread_t self = pthread_self(), t;
	int r;
	int64_t t0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);	/* no SA_RESTART */
	t_init(&u, 8);
	t_change(&c, EPOLL_CTL_ADD, efd[0], EPOLLIN | EPOLLET, 50);
	CHECK_EQ(pthread_create(&t, NULL, late_signal, &self), 0);
	t0 = t_ms_now();
	r = uepoll_ctl_wait(&u, &c, 1, evs, 8, 5000);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(hits, 1);
	CHECK_EQ(r, -EINTR);
	CHECK(t_ms_now() - t0 < 4000);
	CHECK_EQ(c.res, 0);
	CHECK_EQ(t_add(&u, efd[0], EPOLLIN | EPOLLET, 51), -EEXIST);
	uepoll_exit(&u);
	signal(SIGUSR1, SIG_DFL);
}

/*
 * A sleep that outlasts its timeout: 0, after the timeout, not -EINTR
 * (on uring the enter that submits a MOD answers how many it submitted,
 * not how its wait ended).  A spurious -EINTR (ctl_wait_retry()) is
 * allowed a few times.
 */
static void timeout(void)
{
	struct uepoll u;
	struct uepoll_change c;
	struct epoll_event evs[8];
	int r = -EINTR, tries;
	int64_t t0 = 0;

	t_init(&u, 8);
	CHECK_EQ(t_add(&u, efd[0], EPOLLIN | EPOLLET, 60), 0);
	for (tries = 0; tries < 5 && r == -EINTR; tries++) {
		t_change(&c, EPOLL_CTL_MOD, efd[0], EPOLLIN | EPOLLET, 61);
		t0 = t_ms_now();
		r = uepoll_ctl_wait(&u, &c, 1, evs, 8, 50);
		CHECK_EQ(c.res, 0);
	}
	CHECK_EQ(r, 0);
	CHECK(t_ms_now() - t0 >= 45);
	uepoll_exit(&u);
}

/* the call's own errors: nothing applied */
static void bad_args(void)
{
	struct uepoll u;
	struct uepoll_change c;
	struct epoll_event evs[4];

	memset(&u, 0, sizeof(u));
	t_change(&c, EPOLL_CTL_ADD, efd[0], EPOLLIN | EPOLLET, 1);
	CHECK_EQ(uepoll_ctl_wait(NULL, &c, 1, evs, 4, 0), -EINVAL);
	CHECK_EQ(uepoll_ctl_wait(&u, &c, 1, evs, 4, 0), -EINVAL);	/* not initialised */
	t_init(&u, 4);
	CHECK_EQ(uepoll_ctl_wait(&u, NULL, 1, evs, 4, 0), -EINVAL);
	CHECK_EQ(uepoll_ctl_wait(&u, &c, 1u << 31, evs, 4, 0), -EINVAL);
	CHECK_EQ(uepoll_ctl_wait(&u, &c, 1, NULL, 4, 0), -EINVAL);
	CHECK_EQ(uepoll_ctl_wait(&u, &c, 1, evs, 0, 10), -EINVAL);
	CHECK_EQ(uepoll_ctl_wait(&u, &c, 1, evs, -1, 10), -EINVAL);
	CHECK_EQ(c.res, 12345);
	CHECK_EQ(uepoll_ctl_wait(&u, NULL, 0, evs, 4, 0), 0);
	CHECK_EQ(uepoll_ctl_wait(&u, &c, 1, evs, 4, 0), 0);
	CHECK_EQ(c.res, 0);
	uepoll_exit(&u);
	CHECK_EQ(uepoll_ctl_wait(&u, &c, 1, evs, 4, 0), -EBADF);
}

int main(void)
{
	int fds0 = count_fds();

	for (int i = 0; i < 4; i++)
		efd[i] = t_efd();
	reg_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	CHECK(reg_fd >= 0);
	closed_fd = 999;
	CHECK(fcntl(closed_fd, F_GETFD) < 0);
	parity();
	order();
	wake();
	level();
	level_hinted();
	concurrent();
	intr();
	timeout();
	bad_args();
	setenv("UEPOLL_BATCH", "loop", 1);	/* the unfolded path */
	parity();
	order();
	wake();
	level();
	level_hinted();
	for (int i = 0; i < 4; i++)
		close(efd[i]);
	close(reg_fd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
