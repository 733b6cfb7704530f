// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/* uepoll-test: threaded */
/*
 * fresh: on uring, a level-triggered event that the harvester's own sleep
 * brought (a completion of a poll it submitted, with every bit the
 * registration asks) is taken without the poll(2) of its file; any other
 * completion is polled, as epoll_wait() polls.  An eventfd written 0
 * wakes its pollers with EPOLLIN and stays unreadable: a completion that
 * says what the file does not hold, the case where taking it unpolled
 * would show.
 *  a) a thread writes while the harvester sleeps: the event comes with
 *     no poll(2) (in one of 5 rounds at least: an interrupt that runs the
 *     completion's work before the sleep makes it a polled one); the next
 *     harvest polls (level-triggered: reported again while ready), and
 *     after the read reports nothing;
 *  b) the harvester writes 0 itself, then waits: that completion came
 *     before the wait, it is polled: no event;
 *  c) another thread made the registration (its poll, its completion
 *     work) and writes 0 while the harvester sleeps: polled, no event;
 *  d) the harvester's own poll, a thread writes 0 while it sleeps: the
 *     event may be reported once (uepoll_ctl(3), Level-triggered), the
 *     next harvest polls and reports nothing;
 *  e) b) again in a child whose ring has DEFER_TASKRUN (the completion's
 *     work waits for io_uring_enter(), after the program ran): no event;
 *  f) a registration that asks more than the wake-up said (EPOLLIN |
 *     EPOLLRDHUP, a write says EPOLLIN): polled (in every round);
 *  g) a UDP socket with an error pending (EPOLLERR reported, the socket
 *     said drained of data): data that comes while the harvester sleeps
 *     says EPOLLIN only, and the event is polled: EPOLLIN | EPOLLERR, as
 *     epoll_wait() reports it.
 * Other backends: skipped.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "helpers.h"

static struct uepoll u;

struct writer {
	int fd;
	int udp;		/* g): send a datagram on fd instead */
	uint64_t value;
	int add;		/* c): ADD the fd first (its poll is this thread's) */
	int added;
	int go;			/* main: about to sleep */
};

static void *writer(void *arg)
{
	struct writer *w = arg;

	if (w->add) {
		int r = t_add(&u, w->fd, EPOLLIN, 3);

		__atomic_store_n(&w->added, r ? -1 : 1, __ATOMIC_RELEASE);
		if (r)
			return (void *)1;
	}
	while (!__atomic_load_n(&w->go, __ATOMIC_ACQUIRE))
		usleep(1000);
	usleep(50000);		/* the harvester is asleep by now */
	if (w->udp)
		return send(w->fd, "y", 1, 0) == 1 ? NULL : (void *)1;
	if (write(w->fd, &w->value, sizeof(w->value)) != sizeof(w->value))
		return (void *)1;
	return NULL;
}

static uint64_t rechecks(void)
{
	struct uepoll_stats st;

	CHECK_EQ(uepoll_get_stats(&u, &st), 0);
	return st.rechecks;
}

/* a thread writes value to fd while this one sleeps in uepoll_wait(ms) */
static int wait_while_written(struct writer *w, struct epoll_event *evs, int ms)
{
	pthread_t th;
	void *ret;
	int r;

	pthread_create(&th, NULL, writer, w);
	if (w->add) {
		while (!__atomic_load_n(&w->added, __ATOMIC_ACQUIRE))
			usleep(1000);
		CHECK_EQ(w->added, 1);
	}
	__atomic_store_n(&w->go, 1, __ATOMIC_RELEASE);
	r = uepoll_wait(&u, evs, 16, ms);
	pthread_join(th, &ret);
	CHECK(ret == NULL);
	return r;
}

static void init_sleeper(void)
{
	t_init(&u, 16);
	/* sleep at once: a wake-up during a spin is not the sleep's */
	CHECK_EQ(uepoll_set_spin(&u, 0), 0);
	CHECK_EQ(uepoll_set_spin_adapt(&u, 0), 0);
}

/* a UDP socket bound to the loopback, its address in *a */
static int udp_bound(struct sockaddr_in *a)
{
	socklen_t al = sizeof(*a);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		FAIL("socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)a, sizeof(*a)) || getsockname(fd, (struct sockaddr *)a, &al))
		FAIL("bind: %s", strerror(errno));
	return fd;
}

/* g) */
static void sticky_error(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET }, qa = { .sin_family = AF_INET };
	struct epoll_event evs[16];
	struct writer w = { .udp = 1 };
	int s, r;

	sa.sin_addr.s_addr = qa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	w.fd = udp_bound(&qa);
	s = udp_bound(&sa);
	close(w.fd);		/* its port: closed, an ICMP error for s */
	CHECK_EQ(connect(s, (struct sockaddr *)&qa, sizeof(qa)), 0);
	CHECK_EQ(send(s, "x", 1, 0), 1);
	CHECK_EQ(t_add(&u, s, EPOLLIN, 7), 0);
	r = uepoll_wait(&u, evs, 16, 1000);
	if (r != 1 || evs[0].events != EPOLLERR)
		FAIL("g) the ICMP error: %d events (0x%x)", r, r > 0 ? evs[0].events : 0);
	CHECK_EQ(uepoll_drained(&u, s, EPOLLIN), 0);	/* (EPOLLERR stays) */
	w.fd = udp_bound(&qa);	/* the port again, sending to s */
	CHECK_EQ(connect(w.fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	r = wait_while_written(&w, evs, 2000);
	if (r != 1 || evs[0].data.u64 != 7 || evs[0].events != (EPOLLIN | EPOLLERR))
		FAIL("g) data with the error pending: %d events (0x%x, want 0x%x)", r,
		     r > 0 ? evs[0].events : 0, EPOLLIN | EPOLLERR);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, s, NULL), 0);
	close(s);
	close(w.fd);
}

/* b) and e): the harvester's own write of 0, before it waits */
static void own_write_before(const char *what)
{
	struct epoll_event evs[16];
	int efd = t_efd(), r;
	uint64_t zero = 0;

	CHECK_EQ(t_add(&u, efd, EPOLLIN, 2), 0);
	CHECK_EQ(write(efd, &zero, sizeof(zero)), sizeof(zero));
	r = uepoll_wait(&u, evs, 16, 50);
	if (r != 0)
		FAIL("%s: %d events (0x%x) for an eventfd written 0 before the wait", what, r,
		     r > 0 ? evs[0].events : 0);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, efd, NULL), 0);
	close(efd);
}

int main(void)
{
	struct epoll_event evs[16];
	int fds0 = count_fds(), efd, r, round, unpolled = 0;
	uint64_t r0;
	pid_t pid;
	int st;

	setenv("UEPOLL_URING_SETUP", "coop", 0);
	init_sleeper();
	if (uepoll_backend(&u) != UEPOLL_BACKEND_URING)
		SKIP("the uring backend's rule (this instance: %s)",
		     uepoll_backend_str(uepoll_backend(&u)));

	/* a) */
	efd = t_efd();
	CHECK_EQ(t_add(&u, efd, EPOLLIN, 1), 0);
	for (round = 0; round < 5 && !unpolled; round++) {
		struct writer w = { .fd = efd, .value = 1 };

		r0 = rechecks();
		r = wait_while_written(&w, evs, 2000);
		if (r != 1 || evs[0].data.u64 != 1 || evs[0].events != EPOLLIN)
			FAIL("a) round %d: %d events (0x%x)", round, r, r > 0 ? evs[0].events : 0);
		unpolled = rechecks() == r0;
		r0 = rechecks();
		r = uepoll_wait(&u, evs, 16, 0);
		if (r != 1 || evs[0].events != EPOLLIN || rechecks() != r0 + 1)
			FAIL("a) round %d: still ready: %d events, %llu polls", round, r,
			     (unsigned long long)(rechecks() - r0));
		CHECK_EQ(t_read(efd), 1);
		CHECK_EQ(uepoll_wait(&u, evs, 16, 0), 0);
	}
	if (!unpolled)
		FAIL("a) a completion the sleep brought was polled in all %d rounds", round);
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, efd, NULL), 0);
	close(efd);

	/* b) */
	own_write_before("b)");

	/* c) */
	{
		struct writer w = { .fd = t_efd(), .value = 0, .add = 1 };

		r = wait_while_written(&w, evs, 300);
		if (r != 0)
			FAIL("c) %d events (0x%x) for another thread's poll of an eventfd written 0",
			     r, r > 0 ? evs[0].events : 0);
		CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, w.fd, NULL), 0);
		close(w.fd);
	}

	/* d) */
	{
		struct writer w = { .fd = t_efd(), .value = 0 };

		CHECK_EQ(t_add(&u, w.fd, EPOLLIN, 4), 0);
		r = wait_while_written(&w, evs, 300);
		if (r < 0 || r > 1 || (r == 1 && (evs[0].data.u64 != 4 || evs[0].events != EPOLLIN)))
			FAIL("d) %d events (0x%x)", r, r > 0 ? evs[0].events : 0);
		r = uepoll_wait(&u, evs, 16, 0);
		if (r != 0)
			FAIL("d) the harvest after: %d events for an unreadable eventfd", r);
		CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, w.fd, NULL), 0);
		close(w.fd);
	}

	/* f) */
	efd = t_efd();
	CHECK_EQ(t_add(&u, efd, EPOLLIN | EPOLLRDHUP, 6), 0);
	for (round = 0; round < 3; round++) {
		struct writer w = { .fd = efd, .value = 1 };

		r0 = rechecks();
		r = wait_while_written(&w, evs, 2000);
		if (r != 1 || evs[0].data.u64 != 6 || evs[0].events != EPOLLIN)
			FAIL("f) round %d: %d events (0x%x)", round, r, r > 0 ? evs[0].events : 0);
		if (rechecks() == r0)
			FAIL("f) round %d: EPOLLRDHUP asked, the wake-up said EPOLLIN: not polled",
			     round);
		CHECK_EQ(t_read(efd), 1);
		CHECK_EQ(uepoll_wait(&u, evs, 16, 0), 0);
	}
	CHECK_EQ(uepoll_ctl(&u, EPOLL_CTL_DEL, efd, NULL), 0);
	close(efd);

	sticky_error();
	uepoll_exit(&u);

	/* e) */
	pid = fork();
	if (pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (!pid) {
		setenv("UEPOLL_URING_SETUP", "defer", 1);
		init_sleeper();
		own_write_before("e) DEFER_TASKRUN");
		uepoll_exit(&u);
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		FAIL("e) the DEFER_TASKRUN child: status 0x%x", st);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
