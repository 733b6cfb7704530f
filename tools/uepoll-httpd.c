// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * uepoll-httpd - a single-threaded HTTP/1.0 server on libuepoll, the
 * server side of uepoll-bench's TCP scenario (doc/BENCH.md).  It answers
 * `GET /ref` with a small fixed response (80 bytes, the size of the
 * seed's bench_http answer), anything else with 404, and closes the
 * connection after the answer (HTTP/1.0).
 *
 *   uepoll-httpd [-b native|uring|epoll|auto] [-s SPIN]
 *                [-m et|lt|et-batch|lt-batch|et-defer|lt-defer]
 *                [-p PORT] [-a ADDR]
 *   uepoll-httpd --plain-epoll-lt [-p PORT] [-a ADDR]
 *
 * Library mode, -m et (default): every socket registered EPOLLIN|EPOLLET
 * through uepoll_ctl, read until EAGAIN, DEL before close; the library's
 * epoll backend is the "epoll-ET" of the 2019 series' libevent
 * measurement.  -m lt: registered level-triggered (no EPOLLET), one read
 * per event, as libevent's bufferevents read.  -batch: the ADDs and DELs
 * of one pass over the events go to the library as one changelist
 * (as libevent's changelist
 * does), handed to the next wait, uepoll_ctl_wait(3); a socket is closed
 * when its DEL is queued, as libevent closes it.  -defer: the same
 * changelist handed to uepoll_ctl_defer(3) before a plain uepoll_wait(),
 * failures read back with uepoll_ctl_failed(3), and the kernel's polls
 * left for later while harvests find new events, uepoll_set_lazy_poll(3)
 * with 4 (as libevent's backend does with EVENT_UEPOLL_DEFER).
 * --plain-epoll-lt: the reference, no library: epoll_create1, sockets
 * level-triggered, one read per readiness, close without DEL.
 *
 * Port 0 (default) takes a free port.  Once listening it prints
 * "PORT <n>" on stdout.  SIGTERM or SIGINT ends it; it then prints
 *   STATS backend=B requests=N errors=E wait_syscalls=W ctl_syscalls=C events=V
 *         sleeps=S event_syscalls=X waits=P
 * (wait_syscalls: the system calls made to harvest or sleep; ctl: those
 * made to register and remove; event_syscalls: both, the level-triggered
 * re-checks included; waits: the passes, calls of uepoll_wait or
 * uepoll_ctl_wait (plain: of epoll_wait); sleeps: the times a wait
 * blocked, absent in plain mode; from uepoll_get_stats in library mode,
 * counted by hand in plain mode) and exits 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uepoll.h>
#include "tool.h"

#define LISTENER	UINT64_MAX
#define REQMAX		1024

/*
 * gen: the connection's number among those its fd has had.  A library
 * server's events carry it with the fd (conn_data()): an event of a
 * registration whose DEL is still queued (-defer: uepoll_ctl_defer(3) says
 * it may still report) can come after its fd was closed, and even after
 * the number was taken by a new connection; it is stale, not the new
 * connection's, and is counted and passed over.
 */
struct conn {
	int len;
	int open;
	uint32_t gen;
	char buf[REQMAX];
};

static volatile sig_atomic_t stop;
static struct conn **conns;	/* by fd, allocated on first use */
static int maxfd;
static unsigned long requests, errors, stale;

static const char ok_resp[] =
	"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 18\r\n\r\n"
	"uepoll reference\r\n";
static const char nf_resp[] =
	"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n";

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: %s [-b native|uring|epoll|auto] [-s spin]\n"
			"       [-m et|lt|et-batch|lt-batch|et-defer|lt-defer]\n"
			"       [-p port] [-a addr]\n"
			"       %s --plain-epoll-lt [-p port] [-a addr]\n", tool_prog, tool_prog);
	exit(2);
}

static struct conn *conn_of(int fd)
{
	if (fd < 0 || fd >= maxfd)
		return NULL;
	if (!conns[fd]) {
		conns[fd] = malloc(sizeof(struct conn));
		if (!conns[fd])
			return NULL;
		conns[fd]->gen = 0;
	}
	conns[fd]->len = 0;
	conns[fd]->open = 1;
	conns[fd]->gen++;
	return conns[fd];
}

/* a library server's event data for connection fd */
static uint64_t conn_data(int fd)
{
	return (uint64_t)conns[fd]->gen << 32 | (uint32_t)fd;
}

/* 1 when the connection data names is still open */
static int conn_live(uint64_t data)
{
	int fd = (int)(uint32_t)data;
	const struct conn *c = fd < maxfd ? conns[fd] : NULL;

	return c && c->open && c->gen == (uint32_t)(data >> 32);
}

/* the connection an event's data names, or -1 when it is gone (stale) */
static int conn_fd(uint64_t data)
{
	if (!conn_live(data)) {
		stale++;
		return -1;
	}
	return (int)(uint32_t)data;
}

/* connection fd is closed now (a DEL queued, or plain close) */
static void conn_close(int fd)
{
	if (fd >= 0 && fd < maxfd && conns[fd])
		conns[fd]->open = 0;
	close(fd);
}

/*
 * The listener's next connection, with its slot in the connection table:
 * its fd, or -1 once the backlog is empty (an error is counted).
 */
static int accept_next(int lfd)
{
	for (;;) {
		int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN) {
				perror("accept4");
				errors++;
			}
			return -1;
		}
		if (conn_of(cfd))
			return cfd;
		errors++;
		close(cfd);
	}
}

/*
 * Read what is there (until EAGAIN when `drain`, else one read).
 * 1: request complete and answered (close now); 0: need more;
 * -1: error or EOF before the request (close now).
 */
static int serve(int fd, int drain)
{
	struct conn *c = fd >= 0 && fd < maxfd ? conns[fd] : NULL;

	if (!c)
		return -1;
	for (;;) {
		ssize_t n = read(fd, c->buf + c->len, (size_t)(REQMAX - 1 - c->len));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		if (n == 0)
			return -1;
		c->len += (int)n;
		c->buf[c->len] = 0;
		if (strstr(c->buf, "\r\n\r\n")) {
			const char *r = nf_resp;
			size_t rl = sizeof(nf_resp) - 1;

			if (!strncmp(c->buf, "GET /ref ", 9) || !strncmp(c->buf, "GET /ref\r", 9)) {
				r = ok_resp;
				rl = sizeof(ok_resp) - 1;
			}
			if (write(fd, r, rl) != (ssize_t)rl)
				return -1;
			requests++;
			return 1;
		}
		if (c->len >= REQMAX - 1)
			return -1;
		if (!drain)
			return 0;
	}
}

static int listen_on(const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t sl = sizeof(sa);
	int one = 1, fd;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "%s: bad address %s\n", tool_prog, addr);
		exit(2);
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4096) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		perror("listen socket");
		exit(1);
	}
	printf("PORT %d\n", ntohs(sa.sin_port));
	fflush(stdout);
	return fd;
}

/* ---- library mode ---------------------------------------------------------- */

/*
 * -batch: the changes of one pass.  A socket is closed when its DEL is
 * queued, as libevent closes it before its changelist reaches the
 * backend: its DEL then finds it gone (EBADF, or ENOENT when the number
 * was taken again), which is no error.  Closing only after the wait
 * would leave the client waiting for the end of the answer until the
 * next wake-up.
 */
#define CHMAX	512
static struct uepoll_change chl[CHMAX];
static int nch, batch_mode;	/* 0 at once, 1 -batch, 2 -defer */

/* the results of the n changes of c applied (r >= 0 or -EINTR) */
static void changes_check(int r, const struct uepoll_change *c, int n)
{
	int i;

	for (i = 0; (r >= 0 || r == -EINTR) && i < n; i++) {
		if (c[i].op == EPOLL_CTL_DEL &&
		    (c[i].res == -EBADF || c[i].res == -ENOENT))
			continue;
		if (c[i].res < 0) {
			fprintf(stderr, "%s: %s %d: %s\n", tool_prog,
				c[i].op == EPOLL_CTL_ADD ? "ADD" : "DEL", c[i].fd,
				strerror(-c[i].res));
			errors++;
			/* the connection, unless it was closed since */
			if (c[i].op == EPOLL_CTL_ADD && conn_live(c[i].ev.data.u64))
				conn_close(c[i].fd);
		}
	}
}

static void changes_done(int r)
{
	changes_check(r, chl, nch);
	nch = 0;
}

static void flush_changes(struct uepoll *u);

/* -defer: the pass's changes queued, then the wait; failures read back */
static int wait_deferred(struct uepoll *u, struct epoll_event *evs, int max, int ms)
{
	static struct uepoll_change failed[CHMAX];
	int r, nf;

	if (nch) {
		r = uepoll_ctl_defer(u, chl, (unsigned)nch);
		if (r < 0) {	/* nothing queued: at once */
			fprintf(stderr, "%s: uepoll_ctl_defer: %s\n", tool_prog, strerror(-r));
			errors++;
			flush_changes(u);
		}
		nch = 0;
	}
	r = uepoll_wait(u, evs, max, ms);
	while ((nf = uepoll_ctl_failed(u, failed, CHMAX)) > 0)
		changes_check(0, failed, nf);
	if (nf < 0) {
		fprintf(stderr, "%s: uepoll_ctl_failed: %s\n", tool_prog, strerror(-nf));
		errors++;
	}
	return r;
}

static void flush_changes(struct uepoll *u)
{
	int r;

	if (!nch)
		return;
	r = uepoll_ctl_batch(u, chl, (unsigned)nch);
	if (r < 0) {
		fprintf(stderr, "%s: uepoll_ctl_batch: %s\n", tool_prog, strerror(-r));
		errors++;
	}
	changes_done(r);
}

/*
 * The wait of a pass: -batch hands the pass's changes to it
 * (uepoll_ctl_wait(3): one system call for both where the backend can)
 */
static int wait_pass(struct uepoll *u, struct epoll_event *evs, int max, int ms)
{
	int r;

	if (batch_mode == 2)
		return wait_deferred(u, evs, max, ms);
	if (!batch_mode || !nch)
		return uepoll_wait(u, evs, max, ms);
	r = uepoll_ctl_wait(u, chl, (unsigned)nch, evs, max, ms);
	if (r < 0 && r != -EINTR) {
		fprintf(stderr, "%s: uepoll_ctl_wait: %s\n", tool_prog, strerror(-r));
		errors++;
	}
	changes_done(r);
	return r;
}

/* ADD (ev) or DEL (ev NULL) of fd: at once, or queued (-batch) */
static void change(struct uepoll *u, int op, int fd, const struct epoll_event *ev)
{
	int r;

	if (batch_mode) {
		if (nch == CHMAX)
			flush_changes(u);
		memset(&chl[nch], 0, sizeof(chl[nch]));
		chl[nch].op = op;
		chl[nch].fd = fd;
		if (ev)
			chl[nch].ev = *ev;
		nch++;
		if (op == EPOLL_CTL_DEL)
			conn_close(fd);
		return;
	}
	r = uepoll_ctl(u, op, fd, (struct epoll_event *)ev);
	if (r < 0) {
		fprintf(stderr, "%s: %s %d: %s\n", tool_prog, op == EPOLL_CTL_ADD ? "ADD" : "DEL",
			fd, strerror(-r));
		errors++;
	}
	if (op == EPOLL_CTL_DEL || r < 0)
		conn_close(fd);
}

static int run_lib(unsigned bflags, long spin, int lfd, int level)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = LISTENER };
	struct epoll_event evs[256];
	struct uepoll_stats st;
	struct uepoll u;
	unsigned cap = maxfd > 4096 ? 4096 : (unsigned)maxfd;
	int r;

	r = uepoll_init(&u, cap, UEPOLL_CLOEXEC | bflags);
	if (r < 0) {
		fprintf(stderr, "%s: uepoll_init: %s\n", tool_prog, strerror(-r));
		return 1;
	}
	/* -s: exactly that budget, no adaptive window */
	if (spin >= 0 && ((r = uepoll_set_spin(&u, (unsigned)spin)) < 0 ||
			  (r = uepoll_set_spin_adapt(&u, 0)) < 0)) {
		fprintf(stderr, "%s: uepoll_set_spin: %s\n", tool_prog, strerror(-r));
		return 1;
	}
	if (batch_mode == 2 && (r = uepoll_set_lazy_poll(&u, 4)) < 0) {
		fprintf(stderr, "%s: uepoll_set_lazy_poll: %s\n", tool_prog, strerror(-r));
		return 1;
	}
	r = uepoll_ctl(&u, EPOLL_CTL_ADD, lfd, &ev);
	if (r < 0) {
		fprintf(stderr, "%s: ADD listener: %s\n", tool_prog, strerror(-r));
		return 1;
	}
	while (!stop) {
		int n, fd;

		n = wait_pass(&u, evs, 256, 1000);
		if (n == -EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "%s: uepoll_wait: %s\n", tool_prog, strerror(-n));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 == LISTENER) {
				for (;;) {
					int cfd = accept_next(lfd);
					struct epoll_event cev = {
						.events = EPOLLIN | EPOLLRDHUP | (level ? 0 : EPOLLET)
					};

					if (cfd < 0)
						break;
					cev.data.u64 = conn_data(cfd);
					change(&u, EPOLL_CTL_ADD, cfd, &cev);
				}
				continue;
			}
			fd = conn_fd(evs[i].data.u64);
			if (fd < 0)
				continue;
			r = serve(fd, !level);
			if (r < 0)
				errors++;
			if (r)
				change(&u, EPOLL_CTL_DEL, fd, NULL);
		}
	}
	flush_changes(&u);
	uepoll_get_stats(&u, &st);
	printf("STATS backend=%s requests=%lu errors=%lu stale=%lu wait_syscalls=%llu ctl_syscalls=%llu "
	       "events=%llu sleeps=%llu event_syscalls=%llu waits=%llu\n", uepoll_backend_name(&u),
	       requests, errors, stale,
	       (unsigned long long)(st.syscalls - st.ctl_syscalls), (unsigned long long)st.ctl_syscalls,
	       (unsigned long long)st.events, (unsigned long long)st.sleeps,
	       (unsigned long long)st.syscalls, (unsigned long long)st.waits);
	uepoll_exit(&u);
	return 0;
}

/* ---- plain level-triggered epoll ---------------------------------------------- */

static int run_plain(int lfd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = LISTENER };
	struct epoll_event evs[256];
	unsigned long long waits = 0, ctls = 0, nev = 0;
	int epfd = epoll_create1(EPOLL_CLOEXEC);

	if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev) < 0) {
		perror("epoll");
		return 1;
	}
	ctls++;
	while (!stop) {
		int n = epoll_wait(epfd, evs, 256, 1000);

		waits++;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("epoll_wait");
			return 1;
		}
		nev += (unsigned long long)n;
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 == LISTENER) {
				for (;;) {
					int cfd = accept_next(lfd);
					struct epoll_event cev = { .events = EPOLLIN | EPOLLRDHUP };

					if (cfd < 0)
						break;
					cev.data.fd = cfd;
					ctls++;
					if (epoll_ctl(epfd, EPOLL_CTL_ADD, cfd, &cev) < 0) {
						perror("epoll_ctl ADD");
						errors++;
						close(cfd);
					}
				}
				continue;
			}
			{
				int r = serve(evs[i].data.fd, 0);

				if (r < 0)
					errors++;
				if (r)
					conn_close(evs[i].data.fd);	/* close removes it from the set */
			}
		}
	}
	/* sleeps: not known (an epoll_wait() does not say whether it blocked) */
	printf("STATS backend=epoll-lt requests=%lu errors=%lu wait_syscalls=%llu ctl_syscalls=%llu events=%llu "
	       "event_syscalls=%llu waits=%llu\n", requests, errors, waits, ctls, nev, waits + ctls, waits);
	close(epfd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1";
	unsigned bflags = UEPOLL_BACKEND_AUTO;
	int port = 0, plain = 0, level = 0, lfd, ret;
	long spin = -1;
	struct sigaction sa = { .sa_handler = on_signal };
	struct rlimit rl;

	tool_init(argv[0], usage);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--plain-epoll-lt")) {
			plain = 1;
			continue;
		}
		if (!v || a[0] != '-' || !a[1] || a[2])
			usage();
		i++;
		switch (a[1]) {
		case 'b':
			if (tool_backend(v, &bflags))
				usage();
			break;
		case 's': spin = tool_parse_long(v, 0, UEPOLL_SPIN_MAX); break;
		case 'm':
			if (!strcmp(v, "et") || !strcmp(v, "lt") || !strcmp(v, "et-batch") ||
			    !strcmp(v, "lt-batch") || !strcmp(v, "et-defer") || !strcmp(v, "lt-defer")) {
				level = v[0] == 'l';
				batch_mode = strlen(v) > 2 ? (v[3] == 'd' ? 2 : 1) : 0;
			} else {
				usage();
			}
			break;
		case 'p': port = (int)tool_parse_long(v, 0, 65535); break;
		case 'a': addr = v; break;
		default: usage();
		}
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		perror("getrlimit");
		return 1;
	}
	maxfd = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 65536 ? 65536 : (int)rl.rlim_cur;
	conns = tool_xcalloc((size_t)maxfd, sizeof(*conns));
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	lfd = listen_on(addr, port);
	ret = plain ? run_plain(lfd) : run_lib(bflags, spin, lfd, level);
	fflush(stdout);
	close(lfd);
	for (int i = 0; i < maxfd; i++)
		free(conns[i]);
	free(conns);
	return ret;
}
