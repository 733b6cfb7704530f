// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * uepoll-httpload - the load client of uepoll-bench's TCP scenario, run
 * as its own process so that the server's figures are the server's.
 * Keeps C non-blocking connections open at once (default 200, the
 * seed's bench_http), each sending "GET /ref HTTP/1.0" and reading the
 * answer until EOF, until N requests (default 20,000) are done.  Every
 * socket has SO_LINGER {1, 0}: its close sends RST and leaves no
 * TIME_WAIT behind, so runs can follow each other on loopback.  The
 * client uses plain epoll (not the library): it is the same for every
 * server, and it is lean (one edge-triggered ADD per connection, no MOD,
 * no SO_ERROR query, no read for an EOF already signalled by EPOLLRDHUP)
 * so that on a 2-CPU machine the server, not the client, is the
 * bottleneck as far as it can be.
 *
 *   uepoll-httpload -p PORT [-a ADDR] [-c CONNS] [-n REQUESTS] [-t TIMEOUT_S]
 *
 * Prints one line:
 *   RESULT requests=N errors=E seconds=S req_per_s=X p50_ms=A p99_ms=B bytes=Y
 * latency: from connect() to the server's EOF, per request.  Exit 0 when
 * every request got a "HTTP/1.0 200" answer, 1 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "tool.h"

struct cl {
	int fd;
	int state;		/* 0 free, 1 connecting, 2 reading */
	int64_t t0;
	size_t got;
	char head[16];
};

static const char req[] = "GET /ref HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
static struct sockaddr_in sa;
static int epfd;
static long started, done, errors, N = 20000, C = 200, timeout_s = 60;
static unsigned long long bytes;
static double *lat;

static void usage(void)
{
	fprintf(stderr, "usage: %s -p port [-a addr] [-c connections] [-n requests] [-t timeout_s]\n", tool_prog);
	exit(2);
}

static void start(struct cl *c, uint32_t slot)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	/* edge-triggered, both directions at once: no MOD after the send */
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLIN | EPOLLRDHUP | EPOLLET, .data.u32 = slot };

	for (;;) {
		c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c->fd < 0) {
			perror("socket");
			exit(1);
		}
		if (setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0) {
			perror("SO_LINGER");
			exit(1);
		}
		c->t0 = tool_now_ns();
		c->got = 0;
		started++;
		if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EINPROGRESS)
			break;
		perror("connect");
		close(c->fd);
		errors++;
		done++;
		if (errors > N || started >= N) {
			c->state = 0;
			c->fd = -1;
			return;
		}
	}
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
		perror("epoll_ctl ADD");
		exit(1);
	}
	c->state = 1;
}

static void finish(struct cl *c, int ok)
{
	if (ok)
		lat[done - errors] = (double)(tool_now_ns() - c->t0) / 1e6;
	else
		errors++;
	done++;
	close(c->fd);	/* RST: SO_LINGER 0 */
	c->fd = -1;
	c->state = 0;
}

/*
 * Read the answer until EOF or EAGAIN; a short read with the peer's FIN
 * already seen (RDHUP) is the end: no extra read for the 0.  1 at EOF,
 * 0 for more to come, -1 on an error.
 */
static int read_answer(struct cl *c, uint32_t re)
{
	char buf[4096];
	ssize_t r;

	while ((r = read(c->fd, buf, sizeof(buf))) > 0) {
		size_t k = c->got < sizeof(c->head) ? sizeof(c->head) - c->got : 0;

		if (k > (size_t)r)
			k = (size_t)r;
		memcpy(c->head + c->got, buf, k);
		c->got += (size_t)r;
		bytes += (unsigned long long)r;
		if ((size_t)r < sizeof(buf) && (re & (EPOLLRDHUP | EPOLLHUP)))
			return 1;
	}
	if (r == 0)
		return 1;
	return errno == EAGAIN ? 0 : -1;
}

/* one event of connection c: 1 when it ended (slot free), else 0 */
static int on_event(struct cl *c, uint32_t re)
{
	int eof;

	if (re & EPOLLERR) {
		if (errors < 5) {
			int err = 0;
			socklen_t el = sizeof(err);

			getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
			fprintf(stderr, "%s: connection: %s\n", tool_prog, strerror(err));
		}
		finish(c, 0);
		return 1;
	}
	if (c->state == 1 && (re & EPOLLOUT)) {
		/* connected (a failed connect reports EPOLLERR) */
		if (write(c->fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1)) {
			if (errors < 5)
				fprintf(stderr, "%s: send: %s\n", tool_prog, strerror(errno));
			finish(c, 0);
			return 1;
		}
		c->state = 2;
	}
	if (c->state != 2 || !(re & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)))
		return 0;
	eof = read_answer(c, re);
	if (!eof)
		return 0;
	finish(c, eof > 0 && c->got >= 12 && !memcmp(c->head, "HTTP/1.0 200", 12));
	return 1;
}

/* until N requests are done; -1 on an error or no progress for timeout_s */
static int run(struct cl *cl)
{
	struct epoll_event evs[256];
	int64_t last = tool_now_ns();

	for (long i = 0; i < C; i++)
		start(&cl[i], (uint32_t)i);
	while (done < N) {
		int n = epoll_wait(epfd, evs, 256, 1000);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("epoll_wait");
			return -1;
		}
		if (n == 0) {
			if (tool_now_ns() - last > timeout_s * 1000000000LL) {
				fprintf(stderr, "%s: no progress for %ld s (%ld of %ld done)\n", tool_prog,
					timeout_s, done, N);
				return -1;
			}
			continue;
		}
		last = tool_now_ns();
		for (int i = 0; i < n; i++) {
			uint32_t slot = evs[i].data.u32;
			struct cl *c = &cl[slot];

			if (c->state == 0 || !on_event(c, evs[i].events))
				continue;
			if (started < N && errors <= N)
				start(c, slot);
		}
	}
	return 0;
}

static void parse_args(int argc, char **argv, int *port, const char **addr)
{
	int opt;

	while ((opt = getopt(argc, argv, "p:a:c:n:t:")) != -1) {
		switch (opt) {
		case 'p': *port = (int)tool_parse_long(optarg, 1, 65535); break;
		case 'a': *addr = optarg; break;
		case 'c': C = tool_parse_long(optarg, 1, 60000); break;
		case 'n': N = tool_parse_long(optarg, 1, 100000000); break;
		case 't': timeout_s = tool_parse_long(optarg, 1, 86400); break;
		default: usage();
		}
	}
	if (*port < 0 || optind != argc)
		usage();
}

int main(int argc, char **argv)
{
	int port = -1;
	const char *addr = "127.0.0.1";
	struct cl *cl;
	int64_t t0, t1;
	long ok;
	double secs;

	tool_init(argv[0], usage);
	parse_args(argc, argv, &port, &addr);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		usage();
	if (C > N)
		C = N;
	cl = tool_xcalloc((size_t)C, sizeof(*cl));
	lat = tool_xcalloc((size_t)N, sizeof(*lat));
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0) {
		perror("setup");
		return 1;
	}
	t0 = tool_now_ns();
	if (run(cl) < 0)
		return 1;
	t1 = tool_now_ns();
	ok = done - errors;
	secs = (double)(t1 - t0) / 1e9;
	qsort(lat, (size_t)ok, sizeof(*lat), tool_cmp_double);
	printf("RESULT requests=%ld errors=%ld seconds=%.4f req_per_s=%.1f p50_ms=%.3f p99_ms=%.3f bytes=%llu\n",
	       done, errors, secs, (double)done / secs, ok ? lat[(size_t)((double)ok * 0.50)] : 0,
	       ok ? lat[(size_t)((double)ok * 0.99)] : 0, bytes);
	close(epfd);
	free(cl);
	free(lat);
	return errors ? 1 : 0;
}
