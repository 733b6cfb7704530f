// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * ctl_batch: uepoll_ctl_batch(3) gives every change the result that
 * uepoll_ctl() gives the same sequence, applied one by one to a fresh
 * instance (valid and invalid changes mixed: EBADF, EPERM, EINVAL,
 * EEXIST, ENOENT, ENOSPC, ADD -> MOD -> DEL of one fd in one batch), the
 * registrations it leaves report the same events, and a batch of 256
 * ADDs (then 256 DELs, then 256 ADDs again) makes at most BATCH_SYSCALLS
 * system calls where io_uring is usable (uepoll_get_stats(3): syscalls,
 * ctl_syscalls), printed per backend next to what sequential calls make.
 * DEL then ADD of numbers closed and reused, 256 pairs in one batch: the
 * new registrations, within the same bound on native.
 * ADD, MOD, MOD (and DEL for half of them) of 256 fds in one batch, as a
 * server's deferred changes hold them (chains()): the last change of each
 * decides what reports, chains of a closed number (EBADF) and of a file
 * that cannot be polled (EPERM) fail throughout and leave nothing behind,
 * within the same bound on native.
 * Then the same with UEPOLL_BATCH=loop (the fallback: one system call per
 * change), and the batch's own errors.
 */
#include <fcntl.h>
#include <sys/socket.h>
#include "helpers.h"

#define BATCH_SYSCALLS	4	/* steady state, per 256 changes */
#define BIG		256
#define OWN		-100	/* stands for the instance's own fd */
#define NEFD		8

static int efd[NEFD], closed_fd, reg_fd, dir_fd;

/* the mixed sequence; returns its length */
static int mixed(struct uepoll_change *c, int lt)
{
	const uint32_t ET = EPOLLIN | EPOLLET;
	int n = 0;

	t_change(&c[n++], EPOLL_CTL_ADD, efd[0], ET, 100);	/* 0 */
	t_change(&c[n++], EPOLL_CTL_ADD, efd[0], ET, 101);	/* EEXIST */
	t_change(&c[n++], EPOLL_CTL_MOD, efd[1], ET, 102);	/* ENOENT */
	t_change(&c[n++], EPOLL_CTL_DEL, efd[1], 0, 0);		/* ENOENT */
	t_change(&c[n++], EPOLL_CTL_ADD, closed_fd, ET, 103);	/* EBADF */
	t_change(&c[n++], EPOLL_CTL_ADD, -1, ET, 104);		/* EBADF */
	t_change(&c[n++], EPOLL_CTL_DEL, closed_fd, 0, 0);	/* EBADF */
	t_change(&c[n++], EPOLL_CTL_ADD, reg_fd, ET, 105);	/* EPERM */
	t_change(&c[n++], EPOLL_CTL_ADD, dir_fd, ET, 106);	/* EPERM */
	t_change(&c[n++], EPOLL_CTL_ADD, efd[2], ET | EPOLLEXCLUSIVE | EPOLLOUT, 107); /* EINVAL */
	t_change(&c[n++], EPOLL_CTL_ADD, efd[2], EPOLLIN, 108);	/* EINVAL, or 0 where LT */
	if (lt)
		t_change(&c[n++], EPOLL_CTL_MOD, efd[2], ET, 109);	/* 0 */
	t_change(&c[n++], 42, efd[3], ET, 110);			/* EINVAL: op */
	t_change(&c[n++], EPOLL_CTL_ADD, OWN, ET, 111);		/* EINVAL: itself */
	t_change(&c[n++], EPOLL_CTL_ADD, closed_fd, EPOLLIN | EPOLLEXCLUSIVE, 112); /* EBADF first */
	t_change(&c[n++], EPOLL_CTL_ADD, reg_fd, EPOLLIN, 113);	/* EPERM first */
	t_change(&c[n++], EPOLL_CTL_ADD, efd[3], ET, 114);	/* ADD, MOD, DEL: gone */
	t_change(&c[n++], EPOLL_CTL_MOD, efd[3], ET | EPOLLOUT, 115);
	t_change(&c[n++], EPOLL_CTL_DEL, efd[3], 0, 0);
	t_change(&c[n++], EPOLL_CTL_MOD, efd[3], ET, 116);	/* ENOENT */
	t_change(&c[n++], EPOLL_CTL_ADD, efd[4], ET, 117);	/* ADD, DEL, ADD: 118 */
	t_change(&c[n++], EPOLL_CTL_DEL, efd[4], 0, 0);
	t_change(&c[n++], EPOLL_CTL_ADD, efd[4], ET, 118);
	t_change(&c[n++], EPOLL_CTL_MOD, efd[0], ET | EPOLLWAKEUP, 119);	/* 0: new data */
	t_change(&c[n++], EPOLL_CTL_ADD, efd[5], ET, 120);	/* ADD, MOD: 121 */
	t_change(&c[n++], EPOLL_CTL_MOD, efd[5], ET | EPOLLEXCLUSIVE, 122);	/* EINVAL */
	t_change(&c[n++], EPOLL_CTL_MOD, efd[5], ET, 121);
	t_change(&c[n++], EPOLL_CTL_ADD, efd[6], ET, 123);	/* 4th: ENOSPC at n = 4 */
	t_change(&c[n++], EPOLL_CTL_ADD, efd[7], ET, 124);	/* ENOSPC */
	t_change(&c[n++], EPOLL_CTL_DEL, efd[6], 0, 0);		/* 0 or ENOENT */
	t_change(&c[n++], EPOLL_CTL_ADD, efd[7], ET, 125);	/* ENOSPC or 0 */
	return n;
}

static int fd_of(const struct uepoll *u, int fd)
{
	return fd == OWN ? uepoll_fd(u) : fd;
}

/*
 * uepoll_wait(), again after -EINTR: a kernel that tears down an io_uring
 * (the probe's, a batch helper's at uepoll_exit()) interrupts a sleeping
 * epoll_wait(2) of the thread that set it up with task work, no signal
 * (seen on 6.18; not what this test is about)
 */
static int t_wait(struct uepoll *u, struct epoll_event *evs, int max, int ms)
{
	int r, tries = 0;

	while ((r = uepoll_wait(u, evs, max, ms)) == -EINTR && ++tries < 10)
		;
	return r;
}

/* the events of one harvest after a write to every eventfd, by data */
static int harvest_sorted(struct uepoll *u, struct epoll_event *evs, int max)
{
	int n = 0, r;

	while ((r = t_wait(u, evs + n, max - n, n ? 50 : 500)) > 0)
		n += r;
	if (r < 0)
		FAIL("uepoll_wait: %s (after %d events)", strerror(-r), n);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && evs[j - 1].data.u64 > evs[j].data.u64; j--) {
			struct epoll_event t = evs[j];

			evs[j] = evs[j - 1];
			evs[j - 1] = t;
		}
	return n;
}

static void drain_all(void)
{
	for (int i = 0; i < NEFD; i++)
		t_read(efd[i]);
}

/* the mixed sequence, batched and one by one, on instances of capacity 4 */
static void parity(void)
{
	struct uepoll ub, us;
	struct uepoll_change cb[64], cs[64];
	struct epoll_event eb[16], es[16];
	int n, caps, nb, ns;

	t_init(&ub, 4);
	t_init(&us, 4);
	caps = uepoll_backend_caps((unsigned)uepoll_backend(&ub));
	n = mixed(cb, !!(caps & UEPOLL_CAP_LEVEL));
	memcpy(cs, cb, sizeof(cb));
	for (int i = 0; i < n; i++)
		cb[i].fd = fd_of(&ub, cb[i].fd);
	errno = 4242;
	CHECK_EQ(uepoll_ctl_batch(&ub, cb, (unsigned)n), n);
	CHECK_EQ(errno, 4242);
	for (int i = 0; i < n; i++) {
		cs[i].res = uepoll_ctl(&us, cs[i].op, fd_of(&us, cs[i].fd), &cs[i].ev);
		if (cb[i].res != cs[i].res)
			FAIL("change %d (op %d data %llu): batch %d (%s), uepoll_ctl %d (%s)", i,
			     cs[i].op, (unsigned long long)cs[i].ev.data.u64, cb[i].res,
			     strerror(-cb[i].res), cs[i].res, strerror(-cs[i].res));
	}
	/* what they must be, where nothing depends on the backend */
	CHECK_EQ(cb[0].res, 0);
	CHECK_EQ(cb[1].res, -EEXIST);
	CHECK_EQ(cb[2].res, -ENOENT);
	CHECK_EQ(cb[4].res, -EBADF);
	CHECK_EQ(cb[7].res, -EPERM);
	CHECK_EQ(cb[9].res, -EINVAL);
	CHECK_EQ(cb[n - 3].res, -ENOSPC);
	/* the registrations left report the same events */
	for (int i = 0; i < NEFD; i++)
		t_write(efd[i]);
	nb = harvest_sorted(&ub, eb, 16);
	ns = harvest_sorted(&us, es, 16);
	CHECK_EQ(nb, ns);
	CHECK_EQ(nb, 4);
	for (int i = 0; i < nb; i++) {
		CHECK_EQ(eb[i].data.u64, es[i].data.u64);
		CHECK_EQ(eb[i].events, es[i].events);
	}
	/* efd[4] re-added, efd[0] and efd[5] modified */
	for (uint64_t want = 118; want <= 121; want += want == 119 ? 2 : 1) {
		int seen = 0;

		for (int i = 0; i < nb; i++)
			seen += eb[i].data.u64 == want;
		if (seen != 1)
			FAIL("data %llu reported %d times", (unsigned long long)want, seen);
	}
	drain_all();
	uepoll_exit(&ub);
	uepoll_exit(&us);
}

static uint64_t sys_of(const struct uepoll *u)
{
	struct uepoll_stats st;

	CHECK_EQ(uepoll_get_stats(u, &st), 0);
	CHECK(st.ctl_syscalls <= st.syscalls);
	return st.ctl_syscalls;
}

static void fill(struct uepoll_change *c, const int *fds, int op, uint64_t base)
{
	for (int i = 0; i < BIG; i++)
		t_change(&c[i], op, fds[i], EPOLLIN | EPOLLET, base + (uint64_t)i);
}

/* 256 ADDs, DELs, ADDs in batches: the system calls; then the events */
static void big(int bounded)
{
	static struct uepoll_change c[BIG];
	struct epoll_event evs[BIG];
	struct uepoll ub, us;
	uint64_t s0, s_add, s_del, s_add2, s_seq;
	int fds[BIG], got = 0;

	for (int i = 0; i < BIG; i++)
		fds[i] = t_efd();
	/* one place more than the changes: native's level epoll has its
	 * slot from init (a full ring closes it, a few system calls more) */
	t_init(&ub, BIG + 1);
	t_init(&us, BIG + 1);
	fill(c, fds, EPOLL_CTL_ADD, 0);
	s0 = sys_of(&ub);
	CHECK_EQ(uepoll_ctl_batch(&ub, c, BIG), BIG);
	s_add = sys_of(&ub) - s0;
	for (int i = 0; i < BIG; i++)
		CHECK_EQ(c[i].res, 0);
	fill(c, fds, EPOLL_CTL_DEL, 0);
	s0 = sys_of(&ub);
	CHECK_EQ(uepoll_ctl_batch(&ub, c, BIG), BIG);
	s_del = sys_of(&ub) - s0;
	fill(c, fds, EPOLL_CTL_ADD, 1000);
	s0 = sys_of(&ub);
	CHECK_EQ(uepoll_ctl_batch(&ub, c, BIG), BIG);
	s_add2 = sys_of(&ub) - s0;
	for (int i = 0; i < BIG; i++)
		CHECK_EQ(c[i].res, 0);
	s0 = sys_of(&us);
	for (int i = 0; i < BIG; i++)
		CHECK_EQ(t_add(&us, fds[i], EPOLLIN | EPOLLET, (uint64_t)i), 0);
	s_seq = sys_of(&us) - s0;
	printf("%s%s: system calls per %d changes: batch ADD %llu (first batch), DEL %llu, "
	       "ADD %llu; uepoll_ctl ADD one by one %llu\n", uepoll_backend_name(&ub),
	       bounded ? "" : " (UEPOLL_BATCH=loop)", BIG, (unsigned long long)s_add,
	       (unsigned long long)s_del, (unsigned long long)s_add2, (unsigned long long)s_seq);
	if (bounded) {
		CHECK(s_del <= BATCH_SYSCALLS);
		CHECK(s_add2 <= BATCH_SYSCALLS);
		CHECK(s_add <= BATCH_SYSCALLS + 2);	/* + the helper ring's setup */
	}
	/* every registration of the last batch reports, with its data */
	for (int i = 0; i < BIG; i++)
		t_write(fds[i]);
	while (got < BIG) {
		int r = t_wait(&ub, evs, BIG, 1000);

		CHECK(r > 0);
		for (int i = 0; i < r; i++) {
			CHECK(evs[i].data.u64 >= 1000 && evs[i].data.u64 < 1000 + BIG);
			CHECK_EQ(evs[i].events, EPOLLIN);
		}
		got += r;
	}
	CHECK_EQ(got, BIG);
	CHECK_EQ(uepoll_wait(&ub, evs, BIG, 0), 0);
	uepoll_exit(&ub);
	uepoll_exit(&us);
	for (int i = 0; i < BIG; i++)
		close(fds[i]);
}

/*
 * DEL then ADD of numbers closed and given to new files (a server's
 * deferred changes after close() and accept()), in one batch: each ADD
 * succeeds with the new data, only the new files report, and on native
 * the pairs stay in the batch's runs (at most BATCH_SYSCALLS per 256
 * changes), where each ADD used to be a system call of its own.
 */
static void reused(int bounded)
{
	static struct uepoll_change c[2 * BIG];
	struct epoll_event evs[BIG];
	struct uepoll u;
	int fds[BIG], got = 0;
	uint64_t s0, s;

	for (int i = 0; i < BIG; i++)
		fds[i] = t_efd();
	t_init(&u, BIG + 1);
	fill(c, fds, EPOLL_CTL_ADD, 0);
	CHECK_EQ(uepoll_ctl_batch(&u, c, BIG), BIG);
	for (int i = 0; i < BIG; i++)
		close(fds[i]);
	for (int i = 0; i < BIG; i++)
		CHECK_EQ(t_efd(), fds[i]);	/* the lowest numbers, in order */
	for (int i = 0; i < BIG; i++) {
		t_change(&c[2 * i], EPOLL_CTL_DEL, fds[i], 0, 0);
		t_change(&c[2 * i + 1], EPOLL_CTL_ADD, fds[i], EPOLLIN | EPOLLET, 5000 + (uint64_t)i);
	}
	s0 = sys_of(&u);
	CHECK_EQ(uepoll_ctl_batch(&u, c, 2 * BIG), 2 * BIG);
	s = sys_of(&u) - s0;
	printf("%s%s: system calls for %d DEL+ADD pairs of reused numbers: %llu\n",
	       uepoll_backend_name(&u), bounded ? "" : " (UEPOLL_BATCH=loop)", BIG,
	       (unsigned long long)s);
	for (int i = 0; i < BIG; i++) {
		int d = c[2 * i].res;

		CHECK(d == 0 || d == -ENOENT || d == -EBADF);
		CHECK_EQ(c[2 * i + 1].res, 0);
	}
	if (bounded && uepoll_backend(&u) == UEPOLL_BACKEND_NATIVE)
		CHECK(s <= 2 * BATCH_SYSCALLS);
	for (int i = 0; i < BIG; i++)
		t_write(fds[i]);
	while (got < BIG) {
		int r = t_wait(&u, evs, BIG, 1000);

		CHECK(r > 0);
		for (int i = 0; i < r; i++)
			CHECK(evs[i].data.u64 >= 5000 && evs[i].data.u64 < 5000 + BIG);
		got += r;
	}
	CHECK_EQ(uepoll_wait(&u, evs, BIG, 0), 0);
	uepoll_exit(&u);
	for (int i = 0; i < BIG; i++)
		close(fds[i]);
}

/*
 * Chains (native, a batch before: ADD, MOD, DEL of an epoll instance
 * that watches this one, ELOOP then ENOENT twice): ADD, MOD, DEL of a closed number
 * (EBADF each), ADD, MOD, MOD
 * of each of BIG fds (DEL too for the odd ones), ADD and MOD of a file
 * that cannot be polled (EPERM each), in one batch.  The second change of an
 * fd after its ADD or MOD stays in the native batch's run: at most
 * BATCH_SYSCALLS.  What reports is each chain's last change; the
 * instance then holds the even ones only: the odd ones and one more fit
 * (n = BIG + 1), another does not.
 */
static void chains(int bounded)
{
	static struct uepoll_change c[4 * BIG + 8];
	struct epoll_event evs[BIG];
	struct uepoll u;
	int fds[BIG], extra, got = 0, n = 0, loop_fd = -1;
	uint64_t s0, s;

	for (int i = 0; i < BIG; i++)
		fds[i] = t_efd();
	extra = t_efd();
	t_init(&u, BIG + 1);
	/*
	 * Native: an ADD the kernel fails (ELOOP: an epoll instance that
	 * watches this one), then MOD and DEL of it (ENOENT) in its run, a
	 * batch of its own: a count of registrations they spoiled would
	 * split the next batch's run.
	 */
	if (uepoll_backend(&u) == UEPOLL_BACKEND_NATIVE) {
		struct epoll_event e = { .events = EPOLLIN };

		loop_fd = epoll_create1(EPOLL_CLOEXEC);
		CHECK(loop_fd >= 0);
		CHECK_EQ(epoll_ctl(loop_fd, EPOLL_CTL_ADD, uepoll_fd(&u), &e), 0);
		t_change(&c[0], EPOLL_CTL_ADD, loop_fd, EPOLLIN | EPOLLET, 9);
		t_change(&c[1], EPOLL_CTL_MOD, loop_fd, EPOLLIN | EPOLLET, 9);
		t_change(&c[2], EPOLL_CTL_DEL, loop_fd, 0, 0);
		CHECK_EQ(uepoll_ctl_batch(&u, c, 3), 3);
		CHECK_EQ(c[0].res, -ELOOP);
		CHECK_EQ(c[1].res, -ENOENT);
		CHECK_EQ(c[2].res, -ENOENT);
	}
	t_change(&c[n++], EPOLL_CTL_ADD, closed_fd, EPOLLIN | EPOLLET, 9);
	t_change(&c[n++], EPOLL_CTL_MOD, closed_fd, EPOLLIN | EPOLLET, 9);
	t_change(&c[n++], EPOLL_CTL_DEL, closed_fd, 0, 0);
	for (int i = 0; i < BIG; i++) {
		t_change(&c[n++], EPOLL_CTL_ADD, fds[i], EPOLLIN | EPOLLET, 1000 + (uint64_t)i);
		t_change(&c[n++], EPOLL_CTL_MOD, fds[i], EPOLLIN | EPOLLOUT | EPOLLET, 2000 + (uint64_t)i);
		t_change(&c[n++], EPOLL_CTL_MOD, fds[i], EPOLLIN | EPOLLET, 3000 + (uint64_t)i);
		if (i & 1)
			t_change(&c[n++], EPOLL_CTL_DEL, fds[i], 0, 0);
	}
	t_change(&c[n++], EPOLL_CTL_ADD, reg_fd, EPOLLIN | EPOLLET, 9);
	t_change(&c[n++], EPOLL_CTL_MOD, reg_fd, EPOLLIN | EPOLLET, 9);
	s0 = sys_of(&u);
	CHECK_EQ(uepoll_ctl_batch(&u, c, (unsigned)n), n);
	s = sys_of(&u) - s0;
	printf("%s%s: system calls for %d changes in chains of 3 and 4 per fd: %llu\n",
	       uepoll_backend_name(&u), bounded ? "" : " (UEPOLL_BATCH=loop)", n,
	       (unsigned long long)s);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(c[i].res, -EBADF);
	for (int i = 3; i < n - 2; i++)
		CHECK_EQ(c[i].res, 0);
	CHECK_EQ(c[n - 2].res, -EPERM);
	CHECK_EQ(c[n - 1].res, -EPERM);
	/* (the instance's first batch was the loop chain's) */
	if (bounded && uepoll_backend(&u) == UEPOLL_BACKEND_NATIVE)
		CHECK(s <= BATCH_SYSCALLS);
	for (int i = 0; i < BIG; i++)
		t_write(fds[i]);
	while (got < BIG / 2) {
		int r = t_wait(&u, evs, BIG, 1000);

		CHECK(r > 0);
		for (int i = 0; i < r; i++) {
			uint64_t d = evs[i].data.u64;

			CHECK(d >= 3000 && d < 3000 + BIG && !(d & 1));
			CHECK_EQ(evs[i].events, EPOLLIN);
		}
		got += r;
	}
	CHECK_EQ(uepoll_wait(&u, evs, BIG, 0), 0);
	for (int i = 1; i < BIG; i += 2)
		CHECK_EQ(t_add(&u, fds[i], EPOLLIN | EPOLLET, 4000 + (uint64_t)i), 0);
	CHECK_EQ(t_add(&u, extra, EPOLLIN | EPOLLET, 5), 0);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, extra, NULL), 0);
	CHECK_EQ(t_add(&u, reg_fd, EPOLLIN | EPOLLET, 9), -EPERM);
	uepoll_exit(&u);
	for (int i = 0; i < BIG; i++)
		close(fds[i]);
	close(extra);
	if (loop_fd >= 0)
		close(loop_fd);
}

/* errors of the batch itself, nothing applied */
static void bad_args(void)
{
	struct uepoll u;
	struct uepoll_change c;

	memset(&u, 0, sizeof(u));
	t_change(&c, EPOLL_CTL_ADD, efd[0], EPOLLIN | EPOLLET, 1);
	CHECK_EQ(uepoll_ctl_batch(NULL, &c, 1), -EINVAL);
	CHECK_EQ(uepoll_ctl_batch(&u, &c, 1), -EINVAL);	/* not initialised */
	t_init(&u, 4);
	CHECK_EQ(uepoll_ctl_batch(&u, NULL, 1), -EINVAL);
	CHECK_EQ(uepoll_ctl_batch(&u, &c, 1u << 31), -EINVAL);
	CHECK_EQ(uepoll_ctl_batch(&u, NULL, 0), 0);
	CHECK_EQ(uepoll_ctl_batch(&u, &c, 0), 0);
	CHECK_EQ(c.res, 12345);
	CHECK_EQ(uepoll_ctl_batch(&u, &c, 1), 1);
	CHECK_EQ(c.res, 0);
	uepoll_exit(&u);
	CHECK_EQ(uepoll_ctl_batch(&u, &c, 1), -EBADF);
}

int main(void)
{
	int fds0 = count_fds(), io_uring;

	for (int i = 0; i < NEFD; i++)
		efd[i] = t_efd();
	reg_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	dir_fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(reg_fd >= 0 && dir_fd >= 0);
	/* a number no file takes while the test runs (the instances' fds and
	 * the BIG eventfds stay far below it) */
	closed_fd = 999;
	CHECK(fcntl(closed_fd, F_GETFD) < 0);
	/* where io_uring is refused the batch is a loop: no bound then */
	io_uring = uepoll_backend_probe(UEPOLL_BACKEND_URING) == 0;

	parity();
	big(io_uring);
	reused(io_uring);
	chains(io_uring);
	bad_args();
	setenv("UEPOLL_BATCH", "loop", 1);
	parity();
	big(0);
	reused(0);
	chains(0);
	for (int i = 0; i < NEFD; i++)
		close(efd[i]);
	close(reg_fd);
	close(dir_fd);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
