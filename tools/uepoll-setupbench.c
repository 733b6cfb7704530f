// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * uepoll-setupbench - the measurement behind the io_uring setup flags.
 * F eventfds (default 64), registered edge-triggered; each round writes
 * every fd once, then makes ONE harvest.  Reports the cost of a write,
 * the cost of the harvest per event, the events per round (F expected:
 * fewer means readiness not visible at harvest time) and the library's
 * system calls per round.  Backend from -b; the uring setup flags from
 * UEPOLL_URING_SETUP=plain|coop|defer.
 *   uepoll-setupbench [-b backend] [-f fds] [-r rounds]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <uepoll.h>
#include "tool.h"

#define MAXF 1024

static int F = 64, R = 1000;
static int fds[MAXF];

static void usage(void)
{
	fprintf(stderr, "usage: %s [-b backend] [-f fds] [-r rounds]\n", tool_prog);
	exit(2);
}

/* F eventfds registered edge-triggered, nothing pending */
static int setup(struct uepoll *u, unsigned flags)
{
	struct epoll_event evs[MAXF];
	int r = uepoll_init(u, (unsigned)F, UEPOLL_CLOEXEC | flags);

	if (r < 0) {
		fprintf(stderr, "uepoll_init: %s\n", strerror(-r));
		return -1;
	}
	for (int i = 0; i < F; i++) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = (uint64_t)i };

		fds[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (fds[i] < 0 || uepoll_ctl(u, EPOLL_CTL_ADD, fds[i], &ev) < 0)
			return -1;
	}
	usleep(1000);
	while (uepoll_harvest(u, evs, MAXF) > 0)
		;
	return 0;
}

/* R rounds: write every fd once, then one harvest; prints the line */
static int measure(struct uepoll *u)
{
	struct epoll_event evs[MAXF];
	struct uepoll_stats st;
	int64_t tw = 0, th = 0, events = 0, short_rounds = 0, min_ev = 1 << 30;
	uint64_t one = 1, sys0;

	uepoll_get_stats(u, &st);
	sys0 = st.syscalls;
	for (int r = 0; r < R; r++) {
		int64_t t0 = tool_now_ns(), t1, t2;
		int n;

		for (int i = 0; i < F; i++)
			if (write(fds[i], &one, 8) != 8)
				return -1;
		t1 = tool_now_ns();
		n = uepoll_harvest(u, evs, MAXF);
		t2 = tool_now_ns();
		if (n < 0)
			return -1;
		tw += t1 - t0;
		th += t2 - t1;
		events += n;
		if (n < F)
			short_rounds++;
		if (n < min_ev)
			min_ev = n;
	}
	uepoll_get_stats(u, &st);
	printf("backend=%s setup=%s fds=%d rounds=%d write_ns=%.0f harvest_ns_per_event=%.1f "
	       "events=%lld expected=%lld short_rounds=%lld min_events_per_round=%lld "
	       "syscalls_per_round=%.2f\n",
	       uepoll_backend_name(u), getenv("UEPOLL_URING_SETUP") ?: "plain", F, R,
	       (double)tw / ((double)F * R), events ? (double)th / (double)events : 0.0,
	       (long long)events, (long long)F * R, (long long)short_rounds, (long long)min_ev,
	       (double)(st.syscalls - sys0) / R);
	return 0;
}

int main(int argc, char **argv)
{
	struct uepoll u;
	unsigned flags = UEPOLL_BACKEND_AUTO;
	int opt, ret;

	tool_init(argv[0], usage);
	while ((opt = getopt(argc, argv, "b:f:r:")) != -1) {
		switch (opt) {
		case 'b':
			if (tool_backend(optarg, &flags))
				usage();
			break;
		case 'f': F = (int)tool_parse_long(optarg, 1, MAXF); break;
		case 'r': R = (int)tool_parse_long(optarg, 1, 1000000000); break;
		default: usage();
		}
	}
	if (setup(&u, flags) < 0)
		return 1;
	ret = measure(&u) < 0;
	uepoll_exit(&u);
	for (int i = 0; i < F; i++)
		close(fds[i]);
	return ret;
}
