// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * spin_futile: with the adaptive window on, spins that keep finding
 * nothing stop (uepoll_set_spin_adapt(3), UEPOLL_SPIN_FUTILE): once the
 * share of failed spins reaches UEPOLL_SPIN_FUTILE_DEFAULT sixteenths,
 * the waits skip their spin for 16 waits, then try one; each try that
 * fails doubles the skip, up to 1024 waits; a spin that finds an event
 * ends the skips, and a spin setting changed starts over.
 *
 * White box (it links the static library and calls the internal
 * __uepoll_spin() with its own ready(), as spin_rate does):
 *   - never ready: 21 spins fail, then 16 calls skip (ready() not
 *     called), one tries, 32 skip, one tries, 64 skip;
 *   - a try that finds: the next call spins again, and the failures
 *     start from half the share;
 *   - uepoll_set_spin() and uepoll_set_spin_adapt() start over;
 *   - ready at random, seeded: one spin in three finding still spins at
 *     most calls, one in ten at few;
 *   - in a child with UEPOLL_SPIN_FUTILE=0 (and UEPOLL_SPIN_COLD=0): 200
 *     failed spins, none skipped; malformed values fail uepoll_init()
 *     with EINVAL, errno left alone (read once per process: checked in
 *     children).
 * Black box, the case the rule is for: a producer that writes only once
 * the consumer sleeps (its thread's state in /proc is S), so no spin can
 * ever find the event: 200 waits make at most 30 spins (about 28: 21,
 * then a try after 16, 32, 64 and 128 waits skipped), where the child
 * with UEPOLL_SPIN_FUTILE=0 spins at every wait.  Then, in a child
 * without the cold rule, 200 such waits (at most 30 spins: the skip is
 * on) and 200 more on the same instance, each with a MOD deferred before
 * it (uepoll_ctl_defer()): such a spin fails by construction where the
 * queued changes hold the events, so the rule neither counts it nor skips
 * it: 200 spins, and the rule's share and skip as the first 200 left them.
 * native, uring; epoll has no spin phase.  Where the window is off by
 * default (a coarse clock, one CPU) or under valgrind (one thread runs
 * at a time), the black box part is skipped.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include "helpers.h"
#include "../src/internal.h"	/* __uepoll_spin(), as the library has it */

#define ROUNDS	200

static unsigned calls;
static int found_every;	/* ready() says yes at call n when n % found_every == 0; 0: never */
static uint32_t rnd = 12345, rnd_one_in;	/* or at random, one call in rnd_one_in */

static int ready(struct uepoll *u)
{
	(void)u;
	calls++;
	if (rnd_one_in) {
		rnd = rnd * 1103515245u + 12345u;
		return (rnd >> 16) % rnd_one_in == 0;
	}
	return found_every && calls % found_every == 0;
}

/* one spin phase: 1 if it called ready() (spun), 0 if it skipped */
static int spin1(struct uepoll *u)
{
	calls = 0;
	u->spin_window = 0;	/* each spin is u->spin (8) checks */
	__uepoll_spin(u, ready);
	return calls > 0;
}

/* how many of n spin phases spun */
static int spun(struct uepoll *u, int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += spin1(u);
	return s;
}

/* a white-box instance: 8 checks a spin, the adaptive window on */
static void wb_init(struct uepoll *u)
{
	t_init(u, 2);
	if (uepoll_backend(u) == UEPOLL_BACKEND_EPOLL)
		SKIP("the epoll backend has no spin phase");
	CHECK_EQ(uepoll_set_spin(u, 8), 0);
	CHECK_EQ(uepoll_set_spin_adapt(u, 64), 0);
}

static void white_box(void)
{
	struct uepoll u;
	int s;

	wb_init(&u);
	found_every = 0;
	CHECK_EQ(spun(&u, 21), 21);		/* 21 failures reach 15/16 */
	CHECK_EQ(u.spin_skip, 16);
	CHECK_EQ(spun(&u, 16), 0);		/* skipped */
	CHECK_EQ(spin1(&u), 1);			/* a try, failed */
	CHECK_EQ(u.spin_skip, 32);
	CHECK_EQ(spun(&u, 32), 0);
	CHECK_EQ(spin1(&u), 1);
	CHECK_EQ(u.spin_skip, 64);
	CHECK_EQ(spun(&u, 64), 0);

	/* a try that finds: spinning again, the share halved */
	found_every = 4;
	CHECK_EQ(spin1(&u), 1);
	CHECK_EQ(u.spin_skip, 0);
	CHECK_EQ(u.spin_backoff, 0);
	CHECK(u.spin_fail_avg <= 65536 / 2);
	found_every = 0;
	s = spun(&u, 5);		/* failures from half the share: more spins */
	CHECK_EQ(s, 5);

	/* a setting changed starts over */
	spun(&u, 40);
	CHECK(u.spin_skip > 0);
	CHECK_EQ(uepoll_set_spin(&u, 8), 0);
	CHECK_EQ(u.spin_skip, 0);
	CHECK_EQ(u.spin_fail_avg, 0);
	CHECK_EQ(spun(&u, 20), 20);
	spun(&u, 5);
	CHECK(u.spin_skip > 0);
	CHECK_EQ(uepoll_set_spin_adapt(&u, 64), 0);
	CHECK_EQ(u.spin_skip, 0);
	CHECK_EQ(spin1(&u), 1);

	/* at random: one in three finds, one in ten finds */
	CHECK_EQ(uepoll_set_spin(&u, 1), 0);	/* a spin is one check */
	rnd_one_in = 3;
	s = spun(&u, 3000);
	printf("%s: spins finding 1 in 3 at random: %d of 3000 waits spun\n",
	       uepoll_backend_name(&u), s);
	CHECK(s >= 2400);
	CHECK_EQ(uepoll_set_spin(&u, 1), 0);
	rnd_one_in = 10;
	s = spun(&u, 3000);
	printf("%s: spins finding 1 in 10 at random: %d of 3000 waits spun\n",
	       uepoll_backend_name(&u), s);
	CHECK(s <= 300);
	rnd_one_in = 0;
	uepoll_exit(&u);
}

/* the producer of black_box(): writes once the consumer thread sleeps */
struct prod {
	int fd, seen;	/* seen: atomic, rounds harvested */
	int rounds;
	pid_t tid;	/* the consumer's */
};

/* the state letter of thread tid ('R', 'S', ...), '?' if unreadable */
static char task_state(pid_t tid)
{
	char path[64], buf[256], *p;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	p = strrchr(buf, ')');	/* after the command name, which may hold anything */
	return p && p[1] == ' ' ? p[2] : '?';
}

static void *produce(void *arg)
{
	struct prod *p = arg;

	for (int i = 0; i < p->rounds; i++) {
		while (__atomic_load_n(&p->seen, __ATOMIC_ACQUIRE) < i)
			sched_yield();
		while (task_state(p->tid) != 'S')
			sched_yield();
		t_write(p->fd);
	}
	return NULL;
}

/*
 * ROUNDS events, each written once the waiting consumer sleeps; the
 * spins of the first ROUNDS waits are returned.  queued: ROUNDS more
 * waits, the same instance, each after a MOD of another eventfd (never
 * ready) deferred with uepoll_ctl_defer(), so that it spins with a change
 * queued and applies it with its sleep; their spins go to *qspins, and
 * the futile rule's state must be as the first ROUNDS left it.
 */
static uint64_t black_box(int queued, uint64_t *qspins)
{
	struct prod p = { .tid = (pid_t)syscall(SYS_gettid) };
	struct uepoll_stats a, b, c;
	struct epoll_event ev[2];
	uint32_t avg = 0, skip = 0;
	int q = t_efd(), rounds = queued ? 2 * ROUNDS : ROUNDS;
	struct uepoll u;
	pthread_t th;

	t_init(&u, 4);
	p.fd = t_efd();
	p.rounds = rounds;
	CHECK_EQ(t_add(&u, p.fd, EPOLLIN | EPOLLET, 9), 0);
	CHECK_EQ(t_add(&u, q, EPOLLIN | EPOLLET, 0), 0);
	CHECK_EQ(uepoll_get_stats(&u, &a), 0);
	b = a;
	CHECK_EQ(pthread_create(&th, NULL, produce, &p), 0);
	for (int i = 0; i < rounds; i++) {
		struct uepoll_change ch = {
			.op = EPOLL_CTL_MOD, .fd = q,
			.ev = { .events = EPOLLIN | EPOLLET, .data.u64 = (uint64_t)i + 1 },
		};
		int r;

		if (i == ROUNDS) {
			CHECK_EQ(uepoll_get_stats(&u, &b), 0);
			avg = u.spin_fail_avg;
			skip = u.spin_skip;
		}
		if (i >= ROUNDS)
			CHECK_EQ(uepoll_ctl_defer(&u, &ch, 1), 0);
		while ((r = uepoll_wait(&u, ev, 2, 5000)) == -EINTR)
			;
		CHECK_EQ(r, 1);
		CHECK_EQ(ev[0].data.u64, 9);
		t_read(p.fd);
		__atomic_store_n(&p.seen, i + 1, __ATOMIC_RELEASE);
	}
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(uepoll_get_stats(&u, &c), 0);
	if (!queued)
		b = c;
	CHECK_EQ(uepoll_ctl_failed(&u, NULL, 0), 0);
	printf("%s: %s%d events written once the consumer slept: %llu spins, %llu sleeps\n",
	       uepoll_backend_name(&u), getenv("UEPOLL_SPIN_FUTILE") ? "UEPOLL_SPIN_FUTILE=0, " : "",
	       ROUNDS, (unsigned long long)(b.spins - a.spins),
	       (unsigned long long)(b.sleeps - a.sleeps));
	CHECK(b.sleeps - a.sleeps >= ROUNDS - 1);
	if (queued) {
		printf("%s: then %d more, a change deferred before each wait: %llu spins, %llu sleeps"
		       " (failed share %u/65536 -> %u, skip %u -> %u)\n",
		       uepoll_backend_name(&u), ROUNDS, (unsigned long long)(c.spins - b.spins),
		       (unsigned long long)(c.sleeps - b.sleeps), avg, u.spin_fail_avg, skip,
		       u.spin_skip);
		CHECK(c.sleeps - b.sleeps >= ROUNDS - 1);
		/* those failures were not counted; the skip did not hold them */
		CHECK_EQ(u.spin_fail_avg, avg);
		CHECK(u.spin_skip == skip || (skip && u.spin_skip == skip - 1));
		*qspins = c.spins - b.spins;
	}
	fflush(stdout);
	uepoll_exit(&u);
	close(p.fd);
	close(q);
	return b.spins - a.spins;
}

/* children: each reads the variable at its first uepoll_init() */
static int control_child(void)
{
	struct uepoll u;
	uint64_t s;

	setenv("UEPOLL_SPIN_FUTILE", "0", 1);
	/* the control counts spins without this rule, and without the cold
	 * rule: under load a producer kept off its CPU makes sleeps long
	 * enough for that one (195 spins of 200 once, with two CPU hogs) */
	setenv("UEPOLL_SPIN_COLD", "0", 1);
	wb_init(&u);
	CHECK_EQ(spun(&u, 200), 200);
	CHECK_EQ(u.spin_skip, 0);
	uepoll_exit(&u);
	if (under_valgrind() || !t_adapt_default())
		return 0;
	s = black_box(0, NULL);
	CHECK(s >= ROUNDS - 2);		/* every wait spins */
	return 0;
}

/*
 * The rule at its default, without the cold rule (as the control): 200
 * waits spin at most 30 times, and the skip is on; 200 more, each with a
 * change deferred, spin every time and leave the rule's state alone.
 */
static int queued_child(void)
{
	uint64_t s, qs = 0;

	setenv("UEPOLL_SPIN_COLD", "0", 1);
	s = black_box(1, &qs);
	CHECK(s <= 30);
	/* every wait spins, but for a few whose event was there first: 196
	 * of 200 once, the ASan pass beside a build (make -j2); a rule
	 * that skips them spins 136 (uring-queued-spin-skipped-by-futile-rule) */
	CHECK(qs >= ROUNDS - 10);
	return 0;
}

int main(void)
{
	const char *bad[] = { "x", "-1", "17", "1k" };
	int fds0 = count_fds(), st;
	uint64_t s;

	/* a place among the spinners even where the process has one CPU */
	setenv("UEPOLL_SPIN_THREADS", "1", 1);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!t_env_rejected("UEPOLL_SPIN_FUTILE", bad[i]))
			FAIL("UEPOLL_SPIN_FUTILE=%s: uepoll_init() did not fail with EINVAL", bad[i]);
	}
	st = t_in_child(control_child);
	if (st == T_SKIP)
		SKIP("as the control said (above)");
	CHECK_EQ(st, 0);
	white_box();
	if (under_valgrind())
		SKIP("valgrind runs one thread at a time");
	if (!t_adapt_default())
		SKIP("no adaptive window by default here (coarse clock or one CPU)");
	s = black_box(0, NULL);
	CHECK(s <= 30);
	CHECK_EQ(t_in_child(queued_child), 0);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
