// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * userpoll_keyless_bench - what a keyless wake-up costs the consumer,
 * against a keyed one, on the same instance in the same run.
 *
 * One round trip: make a file ready, wait for its entry, harvest it,
 * drain the file.  keyed: an eventfd (its wake-up carries EPOLLIN);
 * keyless: a signalfd (signalfd_notify() wakes without a mask), with the
 * consumer either sleeping in epoll_wait(fd, NULL, 0, 1000) until the
 * entry is there (every kernel) or, when header->repoll is set, calling
 * epoll_wait(fd, NULL, 0, 0) without sleeping (the hint of PROTOCOL.md
 * section 9).  Prints ns and system calls per round trip for each, and
 * the keyless/keyed ratio: run it on two kernels to compare them.
 *
 *   userpoll_keyless_bench [ROUNDS]     (default 20000)
 *
 * Not a test: it passes whenever it can measure.  Raw ABI (userpoll.h).
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "userpoll.h"

#include <sys/signalfd.h>

struct rt {
	const char *name;
	double ns;
	double syscalls;
};

static unsigned long nsys;

static int wait_entry(struct up *u, int hint)
{
	struct up_event ev[4];
	int got, r;

	for (;;) {
		if (hint && up_repoll(u)) {
			nsys++;
			(void)up_wait(u->fd, 0);
		}
		got = up_harvest(u, ev, 4, NULL);
		if (got)
			return got;
		nsys++;
		r = up_wait(u->fd, 1000);
		if (r != -ESTALE && r != 0)
			return r;
	}
}

static int run(struct up *u, int efd, int sfd, int mode, long rounds, struct rt *out)
{
	struct signalfd_siginfo si;
	double t0;
	long k;

	nsys = 0;
	t0 = up_now();
	for (k = 0; k < rounds; k++) {
		nsys += 2;	/* make ready, drain */
		if (mode == 0) {
			if (up_efd_write(efd, 1))
				return -1;
		} else if (kill(getpid(), SIGUSR1)) {
			return -1;
		}
		if (wait_entry(u, mode == 2) < 0)
			return -1;
		if (mode == 0)
			(void)up_efd_read(efd);
		else if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			return -1;
	}
	out->ns = (up_now() - t0) * 1e9 / rounds;
	out->syscalls = (double)nsys / rounds;
	return 0;
}

int main(int argc, char **argv)
{
	struct rt r[3] = { { .name = "keyed (eventfd)" },
			   { .name = "keyless, sleep (signalfd)" },
			   { .name = "keyless, repoll hint (signalfd)" } };
	long rounds = argc > 1 ? atol(argv[1]) : 20000;
	struct up u;
	sigset_t set;
	int efd, sfd, i;

	if (up_feature() != 1) {
		printf("SKIP: no EPOLL_USERPOLL\n");
		return KSFT_SKIP;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &set, NULL) || up_open(&u, 8, 0))
		return 1;
	efd = eventfd(0, EFD_NONBLOCK);
	sfd = signalfd(-1, &set, SFD_NONBLOCK);
	if (efd < 0 || sfd < 0 ||
	    up_ctl(u.fd, EPOLL_CTL_ADD, efd, EPOLLIN | EPOLLET, 1) ||
	    up_ctl(u.fd, EPOLL_CTL_ADD, sfd, EPOLLIN | EPOLLET, 2))
		return 1;
	/* interleaved, twice, the second pass counts */
	for (i = 0; i < 6; i++)
		if (run(&u, efd, sfd, i % 3, i < 3 ? rounds / 10 + 1 : rounds, &r[i % 3])) {
			printf("FAIL: mode %d: %s\n", i % 3, strerror(errno));
			return 1;
		}
	for (i = 0; i < 3; i++)
		printf("keyless_bench: %-34s %9.0f ns/rt %5.2f syscalls/rt ratio_vs_keyed %.2f\n",
		       r[i].name, r[i].ns, r[i].syscalls, r[i].ns / r[0].ns);
	return 0;
}
