// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * syscall_count: the library's count of system calls (uepoll_get_stats()
 * syscalls) is the kernel's count of this thread's entries, read from
 * the raw_syscalls:sys_enter tracepoint with perf_event_open(2) around
 * each uepoll_wait(), for waits that sleep until another process writes:
 *   - plain sleeps: an edge-triggered pipe, nothing else registered;
 *   - sleeps with the level list (uring: its files are asked in the
 *     sleep's ppoll()): a level-triggered pipe reported and then read
 *     empty, so that each sleep asks it again, while the edge-triggered
 *     pipe's write is what ends the sleep.
 * A sleep that the kernel re-executes after running the thread's task
 * work (a ppoll() ended by the wake-up of an io_uring poll: two entries)
 * must count twice, or not happen; a plain sleep is one entry.  Every
 * backend.  Skipped (77) where
 * the tracepoint cannot be read (no tracefs, not privileged) and under
 * valgrind, whose own system calls the kernel would count.
 */
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "helpers.h"

#define ROUNDS	20

static int tp_id(void)
{
	static const char *const paths[] = {
		"/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
		"/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
	};
	char buf[32];

	for (unsigned i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		ssize_t n;

		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = 0;
			return atoi(buf);
		}
	}
	return -1;
}

/* a counter of this thread's system call entries, or -1 */
static int entries_open(void)
{
	struct perf_event_attr a;
	int id = tp_id();

	if (id < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_TRACEPOINT;
	a.size = sizeof(a);
	a.config = (uint64_t)id;
	a.sample_period = 1;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static uint64_t entries(int pfd)
{
	uint64_t v;

	if (read(pfd, &v, sizeof(v)) != sizeof(v))
		FAIL("read of the counter: %s", strerror(errno));
	return v;
}

/*
 * A child that, for each byte read from ctl[0], sleeps 5 ms and writes a
 * byte to out: the parent is asleep in uepoll_wait() by then.
 */
static pid_t writer(const int *ctl, int out)
{
	pid_t pid = fork();
	char c;

	CHECK(pid >= 0);
	if (pid)
		return pid;
	close(ctl[1]);	/* EOF when the parent closes its end */
	while (read(ctl[0], &c, 1) == 1) {
		usleep(5000);
		if (write(out, &c, 1) != 1)
			_exit(1);
	}
	_exit(0);
}

/*
 * ROUNDS waits, each ended by the writer; the kernel's entries and the
 * library's count over them, without the reads of the counter (one
 * entry each, measured first).
 */
static void rounds(struct uepoll *u, int pfd, int ctl, int et_r, const int *lt, const char *what)
{
	struct epoll_event ev[4];
	uint64_t k0, k1, s0, s1, kern = 0, lib = 0, self;
	char c = 'x', buf[8];
	int i, n;

	k0 = entries(pfd);
	k1 = entries(pfd);
	self = k1 - k0;	/* one read(): the entry of the second */
	CHECK_EQ(self, 1);
	for (i = 0; i < ROUNDS; i++) {
		if (lt) {
			/* the level-triggered pipe: reported, then read empty;
			 * it stays on the level list (no uepoll_drained()) */
			CHECK_EQ(write(lt[1], "l", 1), 1);
			n = uepoll_wait(u, ev, 4, 1000);
			CHECK_EQ(n, 1);
			CHECK_EQ(ev[0].data.u64, 2);
			CHECK_EQ(read(lt[0], buf, sizeof(buf)), 1);
		}
		CHECK_EQ(write(ctl, &c, 1), 1);
		s0 = t_syscalls(u);
		k0 = entries(pfd);
		n = uepoll_wait(u, ev, 4, 2000);
		k1 = entries(pfd);
		s1 = t_syscalls(u);
		CHECK_EQ(n, 1);
		CHECK_EQ(ev[0].data.u64, 1);
		CHECK_EQ(read(et_r, buf, sizeof(buf)), 1);
		kern += k1 - k0 - self;
		lib += s1 - s0;
	}
	printf("%s: %s: %llu kernel entries, %llu counted, in %d waits\n",
	       uepoll_backend_name(u), what, (unsigned long long)kern,
	       (unsigned long long)lib, ROUNDS);
	/* one off at most: an interrupt that runs our task work between the
	 * library's last look at the ring and its sleep (src/uring.c,
	 * ring_ppoll()) */
	if (kern > lib + 1 || lib > kern + 1)
		FAIL("%s: the kernel saw %llu entries, the library counted %llu", what,
		     (unsigned long long)kern, (unsigned long long)lib);
	/* and a plain sleep is one entry, on every backend (uring: not a
	 * ppoll() that our task work ends and the kernel re-executes) */
	if (!lt && kern > ROUNDS + 1)
		FAIL("%s: %llu entries for %d sleeps", what, (unsigned long long)kern, ROUNDS);
}

int main(void)
{
	struct uepoll u;
	int pfd, ctl[2], et[2], lt[2], st;
	pid_t pid;

	if (under_valgrind())
		SKIP("valgrind makes system calls of its own");
	pfd = entries_open();
	if (pfd < 0)
		SKIP("no raw_syscalls:sys_enter counter (tracefs, privileges): %s", strerror(errno));
	t_init(&u, 8);
	CHECK_EQ(pipe2(ctl, O_CLOEXEC), 0);
	CHECK_EQ(pipe2(et, O_CLOEXEC | O_NONBLOCK), 0);
	CHECK_EQ(pipe2(lt, O_CLOEXEC | O_NONBLOCK), 0);
	pid = writer(ctl, et[1]);
	close(ctl[0]);

	CHECK_EQ(t_add(&u, et[0], EPOLLIN | EPOLLET, 1), 0);
	rounds(&u, pfd, ctl[1], et[0], NULL, "plain sleeps");
	CHECK_EQ(t_add(&u, lt[0], EPOLLIN, 2), 0);
	rounds(&u, pfd, ctl[1], et[0], lt, "sleeps with a level-triggered pipe");

	close(ctl[1]);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	uepoll_exit(&u);
	close(pfd);
	return T_PASS;
}
