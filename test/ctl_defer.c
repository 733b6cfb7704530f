// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * ctl_defer: uepoll_ctl_defer(3) and uepoll_ctl_failed(3), on every backend:
 *  - a deferred ADD of a ready fd is applied by the wait that finds nothing
 *    else (timeout -1 returns its event); the call queues, it makes no
 *    system call (stats: deferred counts, syscalls does not move);
 *  - while other events keep coming, a deferred ADD still reaches the
 *    kernel within a few waits (the library's bound), not never;
 *  - failures come back in order, each with uepoll_ctl()'s errno for the
 *    same sequence (EBADF, EPERM, ENOENT, EEXIST), and an ADD or MOD that
 *    failed ends the wait at once; uepoll_ctl_failed(u, NULL, 0) counts,
 *    a read takes them, a short buffer keeps the rest;
 *  - program order holds: uepoll_ctl(), uepoll_ctl_batch(u, NULL, 0) and
 *    uepoll_ctl_wait() apply what was deferred before their own changes;
 *  - a queue of 4096 is applied before more are queued (failures kept,
 *    none lost); uepoll_exit() with changes queued frees them (ASan,
 *    valgrind);
 *  - the wait that applies them holds no lock while it sleeps: another
 *    thread's uepoll_ctl() returns, and its ADD of a ready fd ends the
 *    sleep;
 *  - bad input: -EINVAL, -EBADF, nothing queued;
 *  - native with the kernel's level-triggered registrations: after a
 *    level-triggered event, a wait with changes queued and nothing in the
 *    ring asks "still ready?" in its sleep, one system call with the
 *    changes, not in a harvest of its own first;
 *  - a queued DEL is a drained hint: a level-triggered registration that
 *    stays ready is not asked about again, and its closed fd's number,
 *    taken by another ready file, is never reported with its data.
 */
/* uepoll-test: threaded */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include "helpers.h"

static struct uepoll_stats stats_of(const struct uepoll *u)
{
	struct uepoll_stats st;

	CHECK_EQ(uepoll_get_stats(u, &st), 0);
	return st;
}

static int wait_retry(struct uepoll *u, struct epoll_event *evs, int max, int ms)
{
	int r, tries = 0;

	/* a kernel tearing down an io_uring may interrupt a sleep (ctl_batch.c) */
	while ((r = uepoll_wait(u, evs, max, ms)) == -EINTR && ++tries < 10)
		;
	return r;
}

/* a deferred ADD is applied by the wait that has nothing else */
static void applied_by_wait(void)
{
	struct uepoll u;
	struct uepoll_change c;
	struct epoll_event ev;
	struct uepoll_stats st0, st1;
	int fd = t_efd();

	t_init(&u, 8);
	t_write(fd);
	t_change(&c, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLET, 7);
	st0 = stats_of(&u);
	CHECK_EQ(uepoll_ctl_defer(&u, &c, 1), 0);
	st1 = stats_of(&u);
	CHECK_EQ(st1.syscalls, st0.syscalls);
	CHECK_EQ(st1.deferred, st0.deferred + 1);
	CHECK_EQ(c.res, 12345);		/* the caller's array is not written */
	CHECK_EQ(wait_retry(&u, &ev, 1, -1), 1);
	CHECK_EQ(ev.data.u64, 7);
	CHECK(ev.events & EPOLLIN);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 0);
	CHECK_EQ(stats_of(&u).ctls, st0.ctls + 1);
	/* a deferred DEL: the event is gone once the wait applied it */
	t_change(&c, EPOLL_CTL_DEL, fd, 0, 0);
	CHECK_EQ(uepoll_ctl_defer(&u, &c, 1), 0);
	t_write(fd);
	{
		struct epoll_event evs[4];
		int r = wait_retry(&u, evs, 4, 50);

		/* the fd's new edge may be harvested before the DEL is applied
		 * (the queue waits for an empty harvest): at most once; then
		 * the DEL is in force */
		CHECK(r >= 0 && r <= 1);
		if (r == 1)	/* nothing new: this one applies it */
			CHECK_EQ(wait_retry(&u, evs, 4, 50), 0);
		t_write(fd);
		CHECK_EQ(wait_retry(&u, evs, 4, 50), 0);
		CHECK_EQ(t_mod(&u, fd, EPOLLIN | EPOLLET, 8), -ENOENT);
	}
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 0);
	uepoll_exit(&u);
	close(fd);
}

/* native, EPOLL_USERPOLL_LEVEL: the level question rides on the sleep */
static void level_question_in_the_sleep(void)
{
	struct uepoll u;
	struct uepoll_change c;
	struct epoll_event evs[4];
	uint64_t s0;
	int lt = t_efd(), et = t_efd();

	t_init(&u, 8);
	if (!t_native_klevel(&u) || !t_folds_sleep()) {
		printf("ctl_defer: %s: no level question to fold here\n", uepoll_backend_name(&u));
		goto out;
	}
	/* deferred too: the first sleep with changes sets the helper ring up */
	t_change(&c, EPOLL_CTL_ADD, lt, EPOLLIN, 7);
	CHECK_EQ(uepoll_ctl_defer(&u, &c, 1), 0);
	t_write(lt);
	CHECK_EQ(wait_retry(&u, evs, 4, 1000), 1);
	CHECK_EQ(evs[0].data.u64, 7);
	CHECK_EQ(t_read(lt), 1);	/* drained: the library cannot know */
	t_write(et);
	t_change(&c, EPOLL_CTL_ADD, et, EPOLLIN | EPOLLET, 9);
	CHECK_EQ(uepoll_ctl_defer(&u, &c, 1), 0);
	s0 = stats_of(&u).syscalls;
	CHECK_EQ(wait_retry(&u, evs, 4, 1000), 1);
	CHECK_EQ(evs[0].data.u64, 9);
	printf("ctl_defer: native: a deferred ADD after a drained level-triggered event: "
	       "%llu system calls (1)\n", (unsigned long long)(stats_of(&u).syscalls - s0));
	CHECK_EQ(stats_of(&u).syscalls - s0, 1);
	CHECK_EQ(uepoll_harvest(&u, evs, 4), 0);
out:
	uepoll_exit(&u);
	close(lt);
	close(et);
}

/*
 * A queued DEL counts as a uepoll_drained() hint: a level-triggered
 * registration that stays ready is not asked about again (native, uring:
 * the harvest makes no system call), and once the program closed the fd
 * and the number is taken by another ready file, nothing is reported with
 * the old registration's data; the wait that applies the DEL then finds
 * the number's new file unregistered (ENOENT, kept as failed).
 */
static void del_hint(void)
{
	struct uepoll u;
	struct uepoll_change c, f;
	struct epoll_event evs[4];
	uint64_t s0;
	int sa[2], sb[2], free_harvest, r;

	/* sockets: files an inode tells apart (uepoll_ctl(3), uring) */
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sa), 0);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sb), 0);
	t_init(&u, 8);
	free_harvest = strcmp(uepoll_backend_name(&u), "epoll") != 0;
	CHECK_EQ(t_add(&u, sa[0], EPOLLIN, 7), 0);
	CHECK_EQ(write(sa[1], "x", 1), 1);
	CHECK_EQ(wait_retry(&u, evs, 4, 1000), 1);
	CHECK_EQ(evs[0].data.u64, 7);
	t_change(&c, EPOLL_CTL_DEL, sa[0], 0, 0);
	CHECK_EQ(uepoll_ctl_defer(&u, &c, 1), 0);
	s0 = stats_of(&u).syscalls;
	r = uepoll_harvest(&u, evs, 4);
	if (free_harvest) {	/* epoll's harvest is epoll_wait(): reported again */
		CHECK_EQ(r, 0);
		CHECK_EQ(stats_of(&u).syscalls, s0);
	}
	/* the program closes sa[0]; the number goes to a ready socket */
	CHECK_EQ(write(sb[1], "y", 1), 1);
	CHECK_EQ(dup2(sb[0], sa[0]), sa[0]);
	CHECK_EQ(uepoll_harvest(&u, evs, 4), 0);	/* epoll: its file is gone */
	if (free_harvest)
		CHECK_EQ(stats_of(&u).syscalls, s0);
	CHECK_EQ(wait_retry(&u, evs, 4, 50), 0);
	CHECK_EQ(uepoll_ctl_failed(&u, &f, 1), 1);
	CHECK_EQ(f.fd, sa[0]);
	CHECK_EQ(f.res, -ENOENT);
	CHECK_EQ(uepoll_harvest(&u, evs, 4), 0);
	uepoll_exit(&u);
	close(sa[0]);
	close(sa[1]);
	close(sb[0]);
	close(sb[1]);
}

/* other events keep coming: the deferred ADD is applied within a few waits */
static void bounded(void)
{
	struct uepoll u;
	struct uepoll_change c;
	struct epoll_event evs[8];
	int busy = t_efd(), fd = t_efd(), i, got = -1;

	t_init(&u, 8);
	CHECK_EQ(t_add(&u, busy, EPOLLIN | EPOLLET, 1), 0);
	t_write(fd);
	t_change(&c, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLET, 2);
	CHECK_EQ(uepoll_ctl_defer(&u, &c, 1), 0);
	for (i = 0; i < 16 && got < 0; i++) {
		int r;

		t_write(busy);		/* a new edge before every wait */
		r = wait_retry(&u, evs, 8, -1);
		CHECK(r >= 1);
		for (int k = 0; k < r; k++)
			if (evs[k].data.u64 == 2)
				got = i;
	}
	printf("%s: deferred ADD applied at wait %d of a busy loop\n", uepoll_backend_name(&u), got);
	CHECK(got >= 0 && got <= 5);
	uepoll_exit(&u);
	close(busy);
	close(fd);
}

/* failures: in order, uepoll_ctl()'s errno, an ADD's failure ends the wait */
static void failures(void)
{
	struct uepoll u, ref;
	struct uepoll_change c[6], f[6];
	struct epoll_event evs[4];
	int a = t_efd(), b = t_efd(), reg = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	int closed = 999, want[6];
	int64_t t0;

	CHECK(reg >= 0);
	CHECK(fcntl(closed, F_GETFD) < 0);
	t_change(&c[0], EPOLL_CTL_ADD, closed, EPOLLIN | EPOLLET, 10);	/* EBADF */
	t_change(&c[1], EPOLL_CTL_ADD, a, EPOLLIN | EPOLLET, 11);	/* ok */
	t_change(&c[2], EPOLL_CTL_ADD, reg, EPOLLIN | EPOLLET, 12);	/* EPERM */
	t_change(&c[3], EPOLL_CTL_MOD, b, EPOLLIN | EPOLLET, 13);	/* ENOENT */
	t_change(&c[4], EPOLL_CTL_ADD, a, EPOLLIN | EPOLLET, 14);	/* EEXIST */
	t_change(&c[5], EPOLL_CTL_DEL, b, 0, 15);			/* ENOENT */
	/* the reference: uepoll_ctl() of the same sequence */
	t_init(&ref, 8);
	for (int i = 0; i < 6; i++)
		want[i] = uepoll_ctl(&ref, c[i].op, c[i].fd, &c[i].ev);
	uepoll_exit(&ref);
	CHECK_EQ(want[1], 0);

	t_init(&u, 8);
	CHECK_EQ(uepoll_ctl_defer(&u, c, 6), 0);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 0);	/* nothing applied yet */
	t0 = t_ms_now();
	CHECK_EQ(wait_retry(&u, evs, 4, 3000), 0);	/* an ADD failed: at once */
	CHECK(t_ms_now() - t0 < 2000);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 5);
	CHECK_EQ(uepoll_ctl_failed(&u, f, 2), 2);	/* a short buffer: the oldest */
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 3);
	CHECK_EQ(uepoll_ctl_failed(&u, f + 2, 6), 3);
	CHECK_EQ(uepoll_ctl_failed(&u, f, 6), 0);
	for (int i = 0, k = 0; i < 6; i++) {
		if (!want[i])
			continue;
		CHECK_EQ(f[k].op, c[i].op);
		CHECK_EQ(f[k].fd, c[i].fd);
		CHECK_EQ(f[k].ev.data.u64, c[i].ev.data.u64);
		CHECK_EQ(f[k].res, want[i]);
		k++;
	}
	/* the ADD that succeeded is in force */
	t_write(a);
	CHECK_EQ(wait_retry(&u, evs, 4, -1), 1);
	CHECK_EQ(evs[0].data.u64, 11);
	uepoll_exit(&u);
	close(a);
	close(b);
	close(reg);
}

/* what was deferred applies before the changes of a later call */
static void program_order(void)
{
	struct uepoll u;
	struct uepoll_change c, w;
	struct epoll_event evs[4];
	int fd = t_efd();

	t_init(&u, 8);
	CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, 1), 0);
	/* deferred DEL, then uepoll_ctl() ADD: no EEXIST */
	t_change(&c, EPOLL_CTL_DEL, fd, 0, 0);
	CHECK_EQ(uepoll_ctl_defer(&u, &c, 1), 0);
	CHECK_EQ(t_add(&u, fd, EPOLLIN | EPOLLET, 2), 0);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 0);
	/* deferred DEL, then uepoll_ctl_batch(u, NULL, 0): applied now */
	CHECK_EQ(uepoll_ctl_defer(&u, &c, 1), 0);
	CHECK_EQ(uepoll_ctl_batch(&u, NULL, 0), 0);
	CHECK_EQ(t_mod(&u, fd, EPOLLIN | EPOLLET, 3), -ENOENT);
	/* deferred ADD, then uepoll_ctl_wait() with a MOD of it */
	t_change(&c, EPOLL_CTL_ADD, fd, EPOLLOUT | EPOLLET, 4);
	CHECK_EQ(uepoll_ctl_defer(&u, &c, 1), 0);
	t_change(&w, EPOLL_CTL_MOD, fd, EPOLLIN | EPOLLET, 5);
	t_write(fd);
	{
		int r, tries = 0;

		while ((r = uepoll_ctl_wait(&u, &w, 1, evs, 4, -1)) == -EINTR && ++tries < 10)
			w.res = 12345;
		CHECK_EQ(r, 1);
	}
	CHECK_EQ(w.res, 0);
	CHECK_EQ(evs[0].data.u64, 5);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 0);
	uepoll_exit(&u);
	close(fd);
}

/* 4096 queued: applied before more are queued; no failure lost */
static void long_queue(void)
{
	enum { N = 4096 + 100 };
	static struct uepoll_change c[N], f[N];
	struct uepoll u;
	int fd = t_efd(), n;

	t_init(&u, 8);
	for (int i = 0; i < N; i++)
		t_change(&c[i], EPOLL_CTL_DEL, fd, 0, (uint64_t)i);	/* ENOENT each */
	for (int i = 0; i < 4096; i++)
		CHECK_EQ(uepoll_ctl_defer(&u, &c[i], 1), 0);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 0);
	CHECK_EQ(uepoll_ctl_defer(&u, &c[4096], 100), 0);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 4096);
	CHECK_EQ(uepoll_ctl_batch(&u, NULL, 0), 0);
	n = uepoll_ctl_failed(&u, f, N);
	CHECK_EQ(n, N);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(f[i].ev.data.u64, (uint64_t)i);
		CHECK_EQ(f[i].res, -ENOENT);
	}
	/* queued at exit: freed with the instance */
	CHECK_EQ(uepoll_ctl_defer(&u, c, 100), 0);
	uepoll_exit(&u);
	close(fd);
}

struct other {
	struct uepoll *u;
	int fd;
};

static void *other_thread(void *arg)
{
	struct other *o = arg;
	struct timespec ts = { 0, 30 * 1000000 };

	nanosleep(&ts, NULL);
	/*
	 * The queue's lock, probed: uepoll_ctl_failed() takes it (as any
	 * flush does when changes are queued), and the harvester sleeps
	 * meanwhile with the deferred changes applied; held across that
	 * sleep, this call would never return and the wait would time out.
	 */
	CHECK_EQ(uepoll_ctl_failed(o->u, NULL, 0), 0);
	t_write(o->fd);
	CHECK_EQ(t_add(o->u, o->fd, EPOLLIN | EPOLLET, 9), 0);
	return NULL;
}

/* the sleep that carries the deferred changes holds no lock */
static void concurrent(void)
{
	struct uepoll u;
	struct uepoll_change c;
	struct epoll_event ev;
	struct other o;
	pthread_t th;
	int quiet = t_efd(), fd = t_efd();

	t_init(&u, 8);
	t_change(&c, EPOLL_CTL_ADD, quiet, EPOLLIN | EPOLLET, 1);
	CHECK_EQ(uepoll_ctl_defer(&u, &c, 1), 0);
	o.u = &u;
	o.fd = fd;
	CHECK_EQ(pthread_create(&th, NULL, other_thread, &o), 0);
	CHECK_EQ(wait_retry(&u, &ev, 1, 5000), 1);
	CHECK_EQ(ev.data.u64, 9);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 0);
	CHECK_EQ(t_mod(&u, quiet, EPOLLIN | EPOLLET, 2), 0);	/* the deferred ADD is in force */
	uepoll_exit(&u);
	close(quiet);
	close(fd);
}

static void bad_args(void)
{
	struct uepoll u, zero;
	struct uepoll_change c, f;
	int fd = t_efd();

	memset(&zero, 0, sizeof(zero));
	t_change(&c, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLET, 1);
	CHECK_EQ(uepoll_ctl_defer(NULL, &c, 1), -EINVAL);
	CHECK_EQ(uepoll_ctl_defer(&zero, &c, 1), -EINVAL);
	CHECK_EQ(uepoll_ctl_failed(NULL, &f, 1), -EINVAL);
	CHECK_EQ(uepoll_ctl_failed(&zero, &f, 1), -EINVAL);
	t_init(&u, 8);
	CHECK_EQ(uepoll_ctl_defer(&u, NULL, 1), -EINVAL);
	CHECK_EQ(uepoll_ctl_defer(&u, &c, (unsigned)INT_MAX + 1), -EINVAL);
	CHECK_EQ(uepoll_ctl_defer(&u, NULL, 0), 0);
	CHECK_EQ(uepoll_ctl_defer(&u, &c, 0), 0);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 1), -EINVAL);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 0);
	CHECK_EQ(stats_of(&u).deferred, 0);	/* nothing queued by any of them */
	CHECK_EQ(t_mod(&u, fd, EPOLLIN | EPOLLET, 1), -ENOENT);
	uepoll_exit(&u);
	CHECK_EQ(uepoll_ctl_defer(&u, &c, 1), -EBADF);
	CHECK_EQ(uepoll_ctl_failed(&u, &f, 1), -EBADF);
	close(fd);
}

int main(void)
{
	int fds0 = count_fds();

	applied_by_wait();
	bounded();
	failures();
	program_order();
	long_queue();
	concurrent();
	bad_args();
	level_question_in_the_sleep();
	del_hint();
	setenv("UEPOLL_BATCH", "loop", 1);	/* the unfolded path */
	applied_by_wait();
	failures();
	program_order();
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
