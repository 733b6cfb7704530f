// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * ring_checks: changes that go with a sleep, deferred (uepoll_ctl_defer)
 * or handed to uepoll_ctl_wait, answered as epoll_ctl(2) answers them
 * when the library learns each fd's kind and file in the sleep's own
 * system call (uring: the checks in the ring, uring.c ring_sleep()).
 * Every case runs on every backend; the system call counts are the
 * uring backend's where it has the checks in the ring (t_ring_checks()).
 *  - deferred ADDs of idle sockets and a DEL, then a wait that sleeps
 *    until a late write: the event, and one system call for the changes,
 *    their checks and the sleep;
 *  - a server's pattern: DEL queued, socket closed, its number taken by
 *    the next socket, ADD of it queued, one wait: DEL answers ENOENT (the
 *    registration went at the close), ADD 0, the new socket's data only,
 *    and the old socket's peer sees EOF (its file let go); the same DEL
 *    with the number left free answers EBADF;
 *  - ADDs of a regular file and of a closed number: EPERM and EBADF, no
 *    registration (a later ADD of the reused number succeeds), and the
 *    wait ends at once;
 *  - the caller's timeout ends the sleep with 0, a signal with -EINTR;
 *  - another thread's uepoll_ctl(MOD) of an fd whose deferred ADD is in
 *    the sleep of the harvester (its check not read yet) succeeds, and
 *    the event has the MOD's data;
 *  - level-triggered registrations delivered and then done with (one
 *    DEL queued with its socket closed, one hinted drained with
 *    uepoll_drained()), deferred ADDs, a wait that sleeps until a late
 *    write: one system call still (the level list holds nothing to ask),
 *    with polls lazy (uepoll_set_lazy_poll(): the list kept past the
 *    harvests, as a deferring server has it) or not;
 *  - a wake-up whose completion waits for the harvester's next system
 *    call (uring, COOP_TASKRUN: another thread's write while the
 *    harvester makes none) and a deferred ADD: the wait's one system call
 *    both posts the completion and applies the ADD; with a
 *    level-triggered registration still ready as well, that call and the
 *    poll(2) of the level list, and the level event is reported again.
 */
/* uepoll-test: threaded */
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include "helpers.h"

/* fd moved to a number the library's own files (made at first use) never take */
static int high(int fd)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, 600);

	CHECK(h >= 600);
	close(fd);
	return h;
}

static void sockpair(int sv[2])
{
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	sv[0] = high(sv[0]);
}

/* a kernel tearing down an io_uring may interrupt a sleep (ctl_batch.c) */
static int wait_retry(struct uepoll *u, struct epoll_event *evs, int max, int ms)
{
	int r, tries = 0;

	while ((r = uepoll_wait(u, evs, max, ms)) == -EINTR && ++tries < 10)
		;
	return r;
}

static int defer1(struct uepoll *u, int op, int fd, uint64_t data)
{
	struct uepoll_change c;

	t_change(&c, op, fd, EPOLLIN | EPOLLET, data);
	return uepoll_ctl_defer(u, &c, 1);
}

/* the failures uepoll_ctl_failed() has, in order, into want[0..n) */
static void failed_are(struct uepoll *u, const int *want_fd, const int *want_res, int n)
{
	struct uepoll_change f[8];
	int k = uepoll_ctl_failed(u, f, 8);

	CHECK_EQ(k, n);
	for (int i = 0; i < n; i++) {
		CHECK_EQ(f[i].fd, want_fd[i]);
		CHECK_EQ(f[i].res, want_res[i]);
	}
}

struct late {
	int fd;
	unsigned ms;
};

static void *late_write(void *arg)
{
	struct late *l = arg;

	usleep(l->ms * 1000);
	CHECK_EQ(write(l->fd, "x", 1), 1);
	return NULL;
}

/*
 * The first wait with deferred changes asks the kernel what it has (a
 * probe): an eventfd ready and ADDed deferred (data 99), one wait.  The
 * eventfd, for the caller to close.
 */
static int warm_up(struct uepoll *u)
{
	struct epoll_event evs[8];
	int warm = t_efd();

	t_write(warm);
	CHECK_EQ(defer1(u, EPOLL_CTL_ADD, warm, 99), 0);
	CHECK_EQ(wait_retry(u, evs, 8, 2000), 1);
	CHECK_EQ(evs[0].data.u64, 99);
	return warm;
}

/* a wait ended by a write to fd 100 ms later; *calls: its system calls */
static int wait_late(struct uepoll *u, int fd, struct epoll_event *evs, int max, uint64_t *calls)
{
	struct late l = { .fd = fd, .ms = 100 };
	uint64_t s0;
	pthread_t t;
	int r;

	CHECK_EQ(pthread_create(&t, NULL, late_write, &l), 0);
	s0 = t_syscalls(u);
	r = wait_retry(u, evs, max, 5000);
	*calls = t_syscalls(u) - s0;
	CHECK_EQ(pthread_join(t, NULL), 0);
	return r;
}

/* deferred ADDs, a sleep ended by a late write: one system call */
static void one_call(void)
{
	struct uepoll u;
	struct epoll_event evs[8];
	int sv[3][2], r, ring, warm, gone;
	uint64_t calls;

	t_init(&u, 8);
	ring = t_ring_checks(&u);
	uepoll_set_spin(&u, 0);
	warm = warm_up(&u);
	/* and the DEL of an armed registration: its cancel's completion
	 * is one of the run's own, which must not end the sleep */
	gone = t_efd();
	CHECK_EQ(t_add(&u, gone, EPOLLIN | EPOLLET, 98), 0);
	CHECK_EQ(defer1(&u, EPOLL_CTL_DEL, gone, 0), 0);
	for (int i = 0; i < 3; i++) {
		sockpair(sv[i]);
		CHECK_EQ(defer1(&u, EPOLL_CTL_ADD, sv[i][0], 100 + i), 0);
	}
	r = wait_late(&u, sv[1][1], evs, 8, &calls);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 101);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 0);
	printf("%s: system calls of a wait with 3 deferred ADDs and a DEL that sleeps: %llu%s\n",
	       uepoll_backend_name(&u), (unsigned long long)calls,
	       ring ? " (checks in the ring: 1)" : "");
	if (ring)
		CHECK_EQ(calls, 1);
	for (int i = 0; i < 3; i++) {
		close(sv[i][0]);
		close(sv[i][1]);
	}
	close(warm);
	close(gone);
	uepoll_exit(&u);
}

/* the peer of a socket whose file was let go sees EOF (1 s at most) */
static void sees_eof(int peer)
{
	struct pollfd pfd = { .fd = peer, .events = POLLIN };
	char c;

	CHECK_EQ(poll(&pfd, 1, 1000), 1);
	CHECK_EQ(read(peer, &c, 1), 0);
}

/* DEL queued, socket closed; its number reused by the next one (or not) */
static void server_pattern(int reuse)
{
	struct uepoll u;
	struct epoll_event evs[8];
	int a[2], b[2] = { -1, -1 }, n, r, want_res;
	int64_t t0;
	char c;

	t_init(&u, 8);
	uepoll_set_spin(&u, 0);
	sockpair(a);
	n = a[0];
	CHECK_EQ(defer1(&u, EPOLL_CTL_ADD, n, 1), 0);
	CHECK_EQ(write(a[1], "x", 1), 1);
	CHECK_EQ(wait_retry(&u, evs, 8, 2000), 1);
	CHECK_EQ(evs[0].data.u64, 1);
	CHECK_EQ(read(n, &c, 1), 1);

	CHECK_EQ(defer1(&u, EPOLL_CTL_DEL, n, 0), 0);
	close(n);
	if (reuse) {
		sockpair(b);
		if (b[0] != n) {
			CHECK_EQ(dup2(b[0], n), n);
			close(b[0]);
			b[0] = n;
		}
		CHECK_EQ(defer1(&u, EPOLL_CTL_ADD, n, 2), 0);
		CHECK_EQ(write(b[1], "y", 1), 1);
	}
	t0 = t_ms_now();
	r = wait_retry(&u, evs, 8, reuse ? 2000 : 300);
	if (reuse) {
		/* the new socket's event only: the old one's registration is gone */
		CHECK_EQ(r, 1);
		CHECK_EQ(evs[0].data.u64, 2);
	} else {
		CHECK_EQ(r, 0);
		CHECK(t_ms_now() - t0 >= 250);
	}
	want_res = reuse ? -ENOENT : -EBADF;
	failed_are(&u, &n, &want_res, 1);
	sees_eof(a[1]);
	close(a[1]);
	if (reuse) {
		CHECK_EQ(t_mod(&u, n, EPOLLIN | EPOLLET, 3), 0);	/* registered */
		close(b[0]);
		close(b[1]);
	}
	uepoll_exit(&u);
}

/*
 * Level-triggered registrations the program is done with: a DEL queued
 * (its socket closed, as a server closes it) and one hinted drained of
 * all it asks.  The wait that applies the deferred ADD sleeps in that
 * one call: neither is a file to ask before the sleep.
 */
static void level_done(unsigned lazy)
{
	struct uepoll u;
	struct epoll_event evs[8];
	int a[2], b[2], c[2], r, ring, warm, gone, ebadf = -EBADF;
	uint64_t calls;
	char ch;

	t_init(&u, 8);
	ring = t_ring_checks(&u);
	uepoll_set_spin(&u, 0);
	CHECK_EQ(uepoll_set_lazy_poll(&u, lazy), 0);
	warm = warm_up(&u);
	sockpair(a);
	sockpair(b);
	sockpair(c);
	CHECK_EQ(t_add(&u, a[0], EPOLLIN, 1), 0);
	CHECK_EQ(t_add(&u, b[0], EPOLLIN, 2), 0);
	CHECK_EQ(write(a[1], "x", 1), 1);
	CHECK_EQ(write(b[1], "y", 1), 1);
	r = wait_retry(&u, evs, 8, 2000);
	if (r == 1)	/* the second wake-up came after the first harvest */
		r += wait_retry(&u, evs + 1, 7, 2000);
	CHECK_EQ(r, 2);
	CHECK_EQ(read(a[0], &ch, 1), 1);
	CHECK_EQ(read(b[0], &ch, 1), 1);
	CHECK_EQ(defer1(&u, EPOLL_CTL_DEL, a[0], 0), 0);
	gone = a[0];
	close(a[0]);
	CHECK_EQ(uepoll_drained(&u, b[0], EPOLLIN), 0);
	CHECK_EQ(defer1(&u, EPOLL_CTL_ADD, c[0], 3), 0);
	r = wait_late(&u, c[1], evs, 8, &calls);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 3);
	failed_are(&u, &gone, &ebadf, 1);	/* the DEL of a closed number */
	printf("%s: system calls of a wait with a deferred ADD that sleeps, level-triggered "
	       "registrations DELed and drained, lazy polls %u: %llu%s\n", uepoll_backend_name(&u),
	       lazy, (unsigned long long)calls, ring ? " (checks in the ring: 1)" : "");
	if (ring)
		CHECK_EQ(calls, 1);
	/* the drained one is level-triggered still: reported once ready again */
	CHECK_EQ(write(b[1], "z", 1), 1);
	r = wait_retry(&u, evs, 8, 2000);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 2);
	r = wait_retry(&u, evs, 8, 0);
	CHECK_EQ(r, 1);		/* not read: still ready */
	CHECK_EQ(evs[0].data.u64, 2);
	sees_eof(a[1]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	close(c[0]);
	close(c[1]);
	close(warm);
	uepoll_exit(&u);
}

/* ADDs of a regular file and of a closed number: EPERM, EBADF, at once */
static void bad_adds(void)
{
	struct uepoll u;
	struct epoll_event evs[8];
	int reg = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), gone = high(dup(0)), s[2];
	int fds[2], res[2] = { -EPERM, -EBADF };
	int64_t t0;

	CHECK(reg >= 0);
	CHECK(gone >= 0);
	close(gone);
	t_init(&u, 8);
	uepoll_set_spin(&u, 0);
	CHECK_EQ(defer1(&u, EPOLL_CTL_ADD, reg, 1), 0);
	CHECK_EQ(defer1(&u, EPOLL_CTL_ADD, gone, 2), 0);
	t0 = t_ms_now();
	CHECK_EQ(wait_retry(&u, evs, 8, 5000), 0);
	CHECK(t_ms_now() - t0 < 2000);
	fds[0] = reg;
	fds[1] = gone;
	failed_are(&u, fds, res, 2);
	/* no registration was left of either: the number free, taken now */
	sockpair(s);
	if (s[0] != gone) {
		CHECK_EQ(dup2(s[0], gone), gone);
		close(s[0]);
		s[0] = gone;
	}
	CHECK_EQ(t_add(&u, gone, EPOLLIN | EPOLLET, 3), 0);
	CHECK_EQ(write(s[1], "x", 1), 1);
	CHECK_EQ(wait_retry(&u, evs, 8, 2000), 1);
	CHECK_EQ(evs[0].data.u64, 3);
	close(reg);
	close(s[0]);
	close(s[1]);
	uepoll_exit(&u);
}

static void on_usr1(int sig)
{
	(void)sig;
}

struct kick {
	pthread_t to;
	unsigned ms;
};

static void *late_signal(void *arg)
{
	struct kick *k = arg;

	usleep(k->ms * 1000);
	CHECK_EQ(pthread_kill(k->to, SIGUSR1), 0);
	return NULL;
}

/* a sleep with a deferred ADD: the timeout ends it with 0, a signal -EINTR */
static void timeout_and_signal(void)
{
	struct sigaction sa;
	struct uepoll u;
	struct epoll_event evs[8];
	struct kick k;
	pthread_t t;
	int sv[2], r;
	int64_t t0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;	/* no SA_RESTART: the wait ends */
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	t_init(&u, 8);
	uepoll_set_spin(&u, 0);
	sockpair(sv);
	CHECK_EQ(defer1(&u, EPOLL_CTL_ADD, sv[0], 1), 0);
	t0 = t_ms_now();
	CHECK_EQ(wait_retry(&u, evs, 8, 200), 0);
	CHECK(t_ms_now() - t0 >= 190);

	CHECK_EQ(defer1(&u, EPOLL_CTL_DEL, sv[0], 0), 0);
	k.to = pthread_self();
	k.ms = 100;
	CHECK_EQ(pthread_create(&t, NULL, late_signal, &k), 0);
	t0 = t_ms_now();
	r = uepoll_wait(&u, evs, 8, 5000);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(r, -EINTR);
	CHECK(t_ms_now() - t0 < 4000);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 0);	/* the DEL was applied */
	CHECK_EQ(t_add(&u, sv[0], EPOLLIN | EPOLLET, 2), 0);
	close(sv[0]);
	close(sv[1]);
	uepoll_exit(&u);
}

struct modder {
	struct uepoll *u;
	int fd, peer, res;
};

static void *mod_then_write(void *arg)
{
	struct modder *m = arg;

	usleep(100 * 1000);
	m->res = t_mod(m->u, m->fd, EPOLLIN | EPOLLET, 2);
	CHECK_EQ(write(m->peer, "x", 1), 1);
	return NULL;
}

/* another thread's MOD of an fd whose deferred ADD is in the sleep */
static void mod_during_sleep(void)
{
	struct uepoll u;
	struct epoll_event evs[8];
	struct modder m;
	pthread_t t;
	int sv[2], r;

	t_init(&u, 8);
	uepoll_set_spin(&u, 0);
	sockpair(sv);
	CHECK_EQ(defer1(&u, EPOLL_CTL_ADD, sv[0], 1), 0);
	m.u = &u;
	m.fd = sv[0];
	m.peer = sv[1];
	m.res = 12345;
	CHECK_EQ(pthread_create(&t, NULL, mod_then_write, &m), 0);
	r = wait_retry(&u, evs, 8, 5000);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(m.res, 0);
	CHECK_EQ(r, 1);
	CHECK_EQ(evs[0].data.u64, 2);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 0);
	close(sv[0]);
	close(sv[1]);
	uepoll_exit(&u);
}

struct spin_write {
	int fd;
	int go, done;
};

static void *spin_write_fn(void *arg)
{
	struct spin_write *w = arg;

	/* acquire: pairs with work_pending()'s release of go, made once its
	 * pthread_create() returned (a write before that would have its
	 * completion posted on the way out of that system call) */
	while (!__atomic_load_n(&w->go, __ATOMIC_ACQUIRE))
		;
	CHECK_EQ(write(w->fd, "x", 1), 1);
	/* release: pairs with the acquire of work_pending()'s spin */
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* is the uring setup COOP_TASKRUN (the default)? */
static int coop_setup(void)
{
	const char *s = getenv("UEPOLL_URING_SETUP");

	return !s || !*s || !strcmp(s, "coop");
}

/*
 * A wake-up while the harvester makes no system call, a deferred ADD,
 * and (level) a level-triggered registration still ready: one wait.
 * Returns whether that wait applied the ADD (uring: it found the
 * completion still waiting, and counted).  An interrupt or preemption of
 * the spinning harvester also runs its task work on the way back to user
 * space, so a run may find the completion posted: the caller tries again.
 */
static int work_pending(int level, int spin)
{
	struct uepoll u;
	struct uepoll_stats st0, st1;
	struct epoll_event evs[8];
	struct spin_write w = { 0 };
	int a[2], b[2], c[2], warm, r, ring, seen_a = 0, seen_c = 0;
	uint64_t calls, ctls;
	pthread_t t;

	t_init(&u, 8);
	ring = t_ring_checks(&u) && coop_setup();
	if (!spin)
		uepoll_set_spin(&u, 0);	/* else the default: a spin ends on the work */
	warm = warm_up(&u);
	sockpair(a);
	sockpair(b);
	sockpair(c);
	CHECK_EQ(t_add(&u, a[0], EPOLLIN | EPOLLET, 1), 0);
	if (level) {
		CHECK_EQ(t_add(&u, c[0], EPOLLIN, 3), 0);
		CHECK_EQ(write(c[1], "y", 1), 1);
		CHECK_EQ(wait_retry(&u, evs, 8, 2000), 1);
		CHECK_EQ(evs[0].data.u64, 3);	/* not read: still ready */
	}
	CHECK_EQ(defer1(&u, EPOLL_CTL_ADD, b[0], 2), 0);
	w.fd = a[1];
	CHECK_EQ(pthread_create(&t, NULL, spin_write_fn, &w), 0);
	__atomic_store_n(&w.go, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE))
		;	/* no system call: the completion waits for one */
	CHECK_EQ(uepoll_get_stats(&u, &st0), 0);
	r = wait_retry(&u, evs, 8, 5000);
	CHECK_EQ(uepoll_get_stats(&u, &st1), 0);
	calls = st1.syscalls - st0.syscalls;
	ctls = st1.ctls - st0.ctls;
	CHECK_EQ(r, 1 + level);
	for (int i = 0; i < r; i++) {
		seen_a += evs[i].data.u64 == 1;
		seen_c += evs[i].data.u64 == 3;
	}
	CHECK_EQ(seen_a, 1);
	CHECK_EQ(seen_c, level);
	printf("%s: a wait with a deferred ADD after a wake-up left to it%s: "
	       "%llu system calls, %llu changes applied%s\n",
	       uepoll_backend_name(&u), level ? ", a level event still ready" : "",
	       (unsigned long long)calls, (unsigned long long)ctls,
	       ring ? (level ? " (COOP, checks in the ring: 2, 1 where applied)" :
			       " (COOP, checks in the ring: 1, 1 where applied)") : "");
	if (ring && ctls)
		CHECK_EQ(calls, 1u + level);
	/* the ADD took effect, in that wait or, the loop idle, the next */
	if (level)
		CHECK_EQ(read(c[0], evs, sizeof(evs)), 1);
	CHECK_EQ(write(b[1], "z", 1), 1);
	r = wait_retry(&u, evs, 8, 2000);
	CHECK(r >= 1);
	seen_a = 0;
	for (int i = 0; i < r; i++)
		seen_a += evs[i].data.u64 == 2;
	CHECK_EQ(seen_a, 1);
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	close(c[0]);
	close(c[1]);
	close(warm);
	uepoll_exit(&u);
	return ring ? (int)ctls : 1;
}

/*
 * uring, COOP: the ADD applied in the wait in one of 50 runs at least.
 * A run whose harvester went back to user space between the write and
 * the wait (a preemption: a writer woken on its CPU) finds the task work
 * run; with both CPUs busy (a build alongside), 20 runs in a row ended
 * so.  Pinning the two threads apart avoids that, but also the runs in
 * which the flag of the pending work is seen at the wait, which the
 * mutation uring-flush-work-waits-own-only needs.
 */
static void work_pending_runs(int level, int spin)
{
	int i;

	for (i = 0; i < 50 && !work_pending(level, spin); i++)
		;
	CHECK(i < 50);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	one_call();
	server_pattern(1);
	server_pattern(0);
	level_done(0);
	level_done(4);
	bad_adds();
	timeout_and_signal();
	mod_during_sleep();
	work_pending_runs(0, 0);
	work_pending_runs(0, 1);
	work_pending_runs(1, 1);
	puts("ring_checks: changes with a sleep answered as epoll_ctl(2) answers them");
	return 0;
}
