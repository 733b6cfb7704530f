// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * uepoll-stress - T producer threads, each writing 1 to its own eventfd I
 * times; one consumer harvests through libuepoll, reads the eventfd
 * counters and checks that their sum is exactly T*I.  Prints events/ms:
 * eventfd increments delivered (T*I) per millisecond of the run; and the
 * number of events harvested (one event covers many increments).
 * Modelled on the userpolled-epoll test of the EPOLL_USERPOLL author.
 *
 *   -b native|uring|epoll|auto  backend (default auto / UEPOLL_BACKEND)
 *   -t T      producer threads (default 8)
 *   -i I      writes per producer (default 1000000)
 *   -c        churn: a thread MODs, DELs and re-ADDs the eventfds while
 *             the producers run; every registration carries a generation
 *             in ev.data, and an event whose generation was retired (DEL
 *             or MOD returned) before the harvest began is an error
 *   -q        one line of output
 *   -p        probe: exit 0 if the backend can be created, else print why
 * Exit 0 on an exact total and no stale event, 1 otherwise.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <uepoll.h>
#include "tool.h"

#define MAXT 256

static int T = 8;
static long I = 1000000;
static int churn, quiet;
static int efd[MAXT];
static uint32_t gen[MAXT];		/* churn thread's current generation */
static uint32_t retired[MAXT];		/* highest generation whose DEL/MOD returned */
static int producers_done, churn_stop;
static struct uepoll u;
static uint64_t churn_ops;

static void *producer(void *arg)
{
	int fd = efd[(long)arg];
	uint64_t one = 1;

	for (long i = 0; i < I; i++)
		if (write(fd, &one, sizeof(one)) != sizeof(one)) {
			perror("write");
			exit(1);
		}
	__atomic_fetch_add(&producers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static uint64_t mkdata(int k, uint32_t g)
{
	return ((uint64_t)(unsigned)k << 32) | g;
}

static void ctl_or_die(int op, int k, uint32_t g)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = mkdata(k, g) };
	int r = uepoll_ctl(&u, op, efd[k], &ev);

	if (r < 0) {
		fprintf(stderr, "uepoll_ctl(%d, fd %d): %s\n", op, efd[k], strerror(-r));
		exit(1);
	}
}

static void *churner(void *arg)
{
	unsigned seed = 12345;

	(void)arg;
	while (!__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE)) {
		int k = (int)(rand_r(&seed) % (unsigned)T);
		uint32_t old = gen[k];

		gen[k] = old + 1;
		if (rand_r(&seed) & 1) {
			ctl_or_die(EPOLL_CTL_MOD, k, gen[k]);
		} else {
			ctl_or_die(EPOLL_CTL_DEL, k, 0);
			__atomic_store_n(&retired[k], old, __ATOMIC_RELEASE);
			ctl_or_die(EPOLL_CTL_ADD, k, gen[k]);
		}
		__atomic_store_n(&retired[k], old, __ATOMIC_RELEASE);
		churn_ops++;
		if ((churn_ops & 63) == 0)
			usleep(50);
	}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: %s [-b backend] [-t threads] [-i iterations] [-c] [-q] [-p]\n", tool_prog);
	exit(2);
}

/* the options; *bflags the backend, *probe -p */
static void parse_args(int argc, char **argv, unsigned *bflags, int *probe)
{
	int opt;

	while ((opt = getopt(argc, argv, "b:t:i:cqp")) != -1) {
		switch (opt) {
		case 'b':
			if (tool_backend(optarg, bflags)) {
				fprintf(stderr, "bad backend %s\n", optarg);
				exit(2);
			}
			break;
		case 't': T = (int)tool_parse_long(optarg, 1, MAXT); break;
		case 'i': I = tool_parse_long(optarg, 1, LONG_MAX); break;
		case 'c': churn = 1; break;
		case 'q': quiet = 1; break;
		case 'p': *probe = 1; break;
		default: usage();
		}
	}
}

/* the T eventfds, each registered with generation 1 */
static void setup_fds(void)
{
	for (int k = 0; k < T; k++) {
		efd[k] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (efd[k] < 0) {
			perror("eventfd");
			exit(1);
		}
		gen[k] = 1;
		ctl_or_die(EPOLL_CTL_ADD, k, 1);
	}
}

/*
 * One harvest's events: add the counters to *sum; an event of a
 * registration retired before the harvest began (snap) is stale.
 * -1 on bad data.
 */
static int consume(const struct epoll_event *evs, int n, const uint32_t *snap, uint64_t *sum,
		   uint64_t *stale)
{
	for (int i = 0; i < n; i++) {
		int k = (int)(evs[i].data.u64 >> 32);
		uint32_t g = (uint32_t)evs[i].data.u64;
		uint64_t v;

		if (k < 0 || k >= T) {
			fprintf(stderr, "bad data %llx\n", (unsigned long long)evs[i].data.u64);
			return -1;
		}
		if (churn && g <= snap[k]) {
			if (!*stale)
				fprintf(stderr, "event of a retired registration: fd %d gen %u <= %u\n",
					k, g, snap[k]);
			(*stale)++;
		}
		if (read(efd[k], &v, sizeof(v)) == sizeof(v))
			*sum += v;
	}
	return 0;
}

/* harvest until the counters sum to want; -1 on an error or 10 s without event */
static int harvest_all(uint64_t want, uint64_t *sum, uint64_t *nevents, uint64_t *stale)
{
	struct epoll_event evs[64];
	uint32_t snap[MAXT];
	int64_t last_progress = tool_now_ns();

	while (*sum < want) {
		int r;

		if (churn)
			for (int k = 0; k < T; k++)
				snap[k] = __atomic_load_n(&retired[k], __ATOMIC_ACQUIRE);
		r = uepoll_wait(&u, evs, 64, 100);
		if (r < 0) {
			fprintf(stderr, "uepoll_wait: %s\n", strerror(-r));
			return -1;
		}
		if (consume(evs, r, snap, sum, stale) < 0)
			return -1;
		*nevents += (uint64_t)r;
		if (r > 0)
			last_progress = tool_now_ns();
		else if (tool_now_ns() - last_progress > 10000000000LL) {
			fprintf(stderr, "no event for 10 s: lost wakeup? sum %llu of %llu\n",
				(unsigned long long)*sum, (unsigned long long)want);
			return -1;
		}
		if (churn && !churn_stop && __atomic_load_n(&producers_done, __ATOMIC_ACQUIRE) == T)
			__atomic_store_n(&churn_stop, 1, __ATOMIC_RELEASE);
	}
	return 0;
}

static void report(uint64_t sum, uint64_t want, uint64_t nevents, uint64_t stale, double ms)
{
	struct uepoll_stats st;
	int ok = sum == want && !stale;

	uepoll_get_stats(&u, &st);
	if (quiet) {
		printf("%s %s: %d x %ld%s: sum %llu/%llu, %.0f ms, %.1f events/ms, %llu harvested, stale %llu\n",
		       ok ? "OK" : "FAILED", uepoll_backend_name(&u), T, I, churn ? " churn" : "",
		       (unsigned long long)sum, (unsigned long long)want, ms,
		       (double)want / ms, (unsigned long long)nevents, (unsigned long long)stale);
		return;
	}
	printf("backend=%s threads=%d iterations=%ld churn=%d total=%llu expected=%llu exact=%s "
	       "ms=%.1f events_per_ms=%.1f harvested=%llu harvested_per_ms=%.1f syscalls=%llu "
	       "ctl_syscalls=%llu syscalls_per_1000_events=%.1f consumer_syscalls_per_1000_events=%.1f harvests=%llu sleeps=%llu coalesced=%llu "
	       "stale_completions=%llu rearms=%llu overflows=%llu churn_ops=%llu retired_seen=%llu\n",
	       uepoll_backend_name(&u), T, I, churn, (unsigned long long)sum,
	       (unsigned long long)want, sum == want ? "yes" : "NO", ms,
	       (double)want / ms, (unsigned long long)nevents, (double)nevents / ms,
	       (unsigned long long)st.syscalls, (unsigned long long)st.ctl_syscalls,
	       nevents ? 1000.0 * (double)st.syscalls / (double)nevents : 0.0,
	       nevents ? 1000.0 * (double)(st.syscalls - st.ctl_syscalls) / (double)nevents : 0.0,
	       (unsigned long long)st.harvests, (unsigned long long)st.sleeps,
	       (unsigned long long)st.coalesced, (unsigned long long)st.stale,
	       (unsigned long long)st.rearms, (unsigned long long)st.overflows,
	       (unsigned long long)churn_ops, (unsigned long long)stale);
}

/* -p: 0 if the backend can be created, else print why and 1 */
static int probe_backend(int r)
{
	if (r < 0) {
		printf("%s\n", strerror(-r));
		return 1;
	}
	uepoll_exit(&u);
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t th[MAXT], ch;
	unsigned bflags = UEPOLL_BACKEND_AUTO;
	uint64_t sum = 0, nevents = 0, stale = 0, want;
	int64_t t0, t1;
	int probe = 0, r;

	tool_init(argv[0], usage);
	parse_args(argc, argv, &bflags, &probe);
	r = uepoll_init(&u, (unsigned)T, UEPOLL_CLOEXEC | bflags);
	if (probe)
		return probe_backend(r);
	if (r < 0) {
		fprintf(stderr, "uepoll_init: %s\n", strerror(-r));
		return 1;
	}
	setup_fds();
	want = (uint64_t)T * (uint64_t)I;
	t0 = tool_now_ns();
	for (long k = 0; k < T; k++)
		pthread_create(&th[k], NULL, producer, (void *)k);
	if (churn)
		pthread_create(&ch, NULL, churner, NULL);
	if (harvest_all(want, &sum, &nevents, &stale) < 0)
		return 1;
	t1 = tool_now_ns();
	if (churn) {
		__atomic_store_n(&churn_stop, 1, __ATOMIC_RELEASE);
		pthread_join(ch, NULL);
	}
	for (int k = 0; k < T; k++)
		pthread_join(th[k], NULL);
	/* nothing may be left over */
	for (int k = 0; k < T; k++) {
		uint64_t v;

		if (read(efd[k], &v, sizeof(v)) == sizeof(v))
			sum += v;
	}
	report(sum, want, nevents, stale, (double)(t1 - t0) / 1e6);
	uepoll_exit(&u);
	for (int k = 0; k < T; k++)
		close(efd[k]);
	return sum == want && !stale ? 0 : 1;
}
