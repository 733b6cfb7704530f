// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * stats: the counters move where the calls are made; on the native and
 * uring backends a harvest with events pending, and one with nothing
 * pending, make no system call; on epoll every harvest is one epoll_wait().
 * UEPOLL_STATS: uepoll_exit() writes one line; an instance made with it
 * set and never destroyed writes its line at exit(), once; a fork()ed
 * child writes none for the instances it inherited.
 */
#include <sys/wait.h>
#include "helpers.h"

/* lines of "uepoll-stats: " in fd's file, and how many have `what` */
static int stats_lines(int fd, const char *what, int *with)
{
	char buf[4096], *l, *save = NULL;
	ssize_t len = pread(fd, buf, sizeof(buf) - 1, 0);
	int n = 0;

	*with = 0;
	if (len < 0)
		return -1;
	buf[len] = 0;
	for (l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (strncmp(l, "uepoll-stats: ", 14))
			continue;
		n++;
		*with += strstr(l, what) != NULL;
	}
	return n;
}

/* a child that makes instances with UEPOLL_STATS, destroys some, exits */
static void at_exit(void)
{
	char path[] = "/tmp/uepoll-stats-XXXXXX";
	int tfd = mkstemp(path), st, with;
	pid_t pid;

	CHECK(tfd >= 0);
	unlink(path);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct uepoll a, b, c;

		if (dup2(tfd, 2) != 2 || setenv("UEPOLL_STATS", "1", 1))
			_exit(3);
		t_init(&a, 4);
		t_init(&b, 8);
		t_init(&c, 16);
		uepoll_exit(&a);	/* its line now */
		pid = fork();		/* inherits b and c: writes nothing */
		if (pid == 0)
			exit(0);
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			_exit(4);
		uepoll_exit(&c);
		exit(0);		/* b's line at exit() */
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	CHECK_EQ(stats_lines(tfd, " n=4 ", &with), 3);
	CHECK_EQ(with, 1);
	CHECK_EQ(stats_lines(tfd, " n=8 ", &with), 3);
	CHECK_EQ(with, 1);
	CHECK_EQ(stats_lines(tfd, " n=16 ", &with), 3);
	CHECK_EQ(with, 1);
	close(tfd);
}

int main(void)
{
	struct uepoll u;
	struct uepoll_stats a, b;
	struct epoll_event evs[8];
	int fds[4], fds0 = count_fds(), r;

	t_init(&u, 4);
	for (int i = 0; i < 4; i++) {
		fds[i] = t_efd();
		CHECK_EQ(t_add(&u, fds[i], EPOLLIN | EPOLLET, (uint64_t)i), 0);
	}
	CHECK_EQ(uepoll_get_stats(&u, &a), 0);
	CHECK_EQ(a.ctls, 4);
	CHECK(a.syscalls >= 4);
	CHECK_EQ(a.events, 0);
	r = uepoll_harvest(&u, evs, 8);
	CHECK_EQ(r, 0);
	CHECK_EQ(uepoll_get_stats(&u, &b), 0);
	CHECK_EQ(b.harvests, a.harvests + 1);
	if (uepoll_backend(&u) == UEPOLL_BACKEND_EPOLL)
		CHECK_EQ(b.syscalls, a.syscalls + 1);
	else	/* native and uring read the shared ring */
		CHECK_EQ(b.syscalls, a.syscalls);

	for (int i = 0; i < 4; i++)
		t_write(fds[i]);
	usleep(5000);
	CHECK_EQ(uepoll_get_stats(&u, &a), 0);
	r = uepoll_harvest(&u, evs, 8);
	CHECK_EQ(r, 4);
	CHECK_EQ(uepoll_get_stats(&u, &b), 0);
	CHECK_EQ(b.events, a.events + 4);
	CHECK_EQ(b.harvests, a.harvests + 1);
	printf("%s: harvest of 4 events: %llu system calls\n", uepoll_backend_name(&u),
	       (unsigned long long)(b.syscalls - a.syscalls));
	if (uepoll_backend(&u) == UEPOLL_BACKEND_EPOLL)
		CHECK_EQ(b.syscalls, a.syscalls + 1);
	else	/* native and uring read the shared ring */
		CHECK_EQ(b.syscalls, a.syscalls);

	/*
	 * No spin: a slow run (valgrind) can spend the whole timeout in the
	 * default spin budget and never sleep.
	 */
	CHECK_EQ(uepoll_set_spin(&u, 0), 0);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 10), 0);
	CHECK_EQ(uepoll_get_stats(&u, &a), 0);
	CHECK_EQ(a.waits, 1);
	CHECK(a.sleeps >= 1);
	uepoll_exit(&u);

	/* UEPOLL_STATS: uepoll_exit() writes the counters to stderr */
	{
		char path[] = "/tmp/uepoll-stats-XXXXXX", buf[1024], want[64], name[64];
		int tfd = mkstemp(path), saved = dup(2);
		ssize_t len;

		CHECK(tfd >= 0 && saved >= 0);
		unlink(path);
		t_init(&u, 4);
		CHECK_EQ(t_add(&u, fds[0], EPOLLIN | EPOLLET, 7), 0);
		CHECK_EQ(uepoll_get_stats(&u, &a), 0);
		snprintf(name, sizeof(name), "backend=%s ", uepoll_backend_name(&u));
		CHECK_EQ(setenv("UEPOLL_STATS", "1", 1), 0);
		CHECK_EQ(dup2(tfd, 2), 2);
		uepoll_exit(&u);
		CHECK_EQ(dup2(saved, 2), 2);
		close(saved);
		unsetenv("UEPOLL_STATS");
		len = pread(tfd, buf, sizeof(buf) - 1, 0);
		CHECK(len > 0);
		buf[len] = 0;
		close(tfd);
		CHECK(strncmp(buf, "uepoll-stats: ", 14) == 0);
		CHECK(strstr(buf, name) == buf + 14);
		snprintf(want, sizeof(want), " syscalls=%llu ", (unsigned long long)a.syscalls);
		CHECK(strstr(buf, want) != NULL);
		CHECK(strstr(buf, " ctls=1 ") != NULL);
		snprintf(want, sizeof(want), " sleeps=%llu spins=%llu ", (unsigned long long)a.sleeps,
			 (unsigned long long)a.spins);
		CHECK(strstr(buf, want) != NULL);
		CHECK(buf[len - 1] == '\n' && strchr(buf, '\n') == buf + len - 1);
		/* and without it, nothing */
		t_init(&u, 4);
		snprintf(path, sizeof(path), "/tmp/uepoll-stats-XXXXXX");
		tfd = mkstemp(path);
		saved = dup(2);
		CHECK(tfd >= 0 && saved >= 0);
		unlink(path);
		CHECK_EQ(dup2(tfd, 2), 2);
		uepoll_exit(&u);
		CHECK_EQ(dup2(saved, 2), 2);
		close(saved);
		CHECK_EQ(lseek(tfd, 0, SEEK_END), 0);
		close(tfd);
	}
	at_exit();
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
