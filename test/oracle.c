// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * oracle: plain epoll(7) is the oracle.  Seeded random sequences of
 * operations run on a plain epoll instance and on a uepoll instance (the
 * backend under test, UEPOLL_BACKEND) side by side, single-threaded; a
 * step is one to three operations, then both are harvested and their
 * reports compared per registration: the (data, events) each one
 * reported in that harvest.
 *
 * Files: pipes (both ends), UNIX stream and datagram socket pairs (both
 * ends), eventfds (plain and EFD_SEMAPHORE), timerfds.  Operations:
 * writes of N bytes or eventfd adds (0 included), partial reads, drains,
 * fills (until EAGAIN, or an eventfd to its maximum), urgent bytes
 * (MSG_OOB), shutdown(), close of one end, a new file in a place; ADD,
 * MOD and DEL with masks from IN, OUT, RDHUP, PRI, ONESHOT, ET (every
 * return value compared too; re-ADD after DEL, MOD of a fired ONESHOT,
 * narrower and wider masks come up), and the harvest.
 *
 * The comparison is the contract of uepoll_ctl(3), section Events:
 *  - exact (the events epoll_wait(2) would report, same data, same
 *    events) where the backend says UEPOLL_CAP_POLLED_EVENTS, and for
 *    every level-triggered registration, but on native with the kernel's
 *    level-triggered registrations (EPOLL_USERPOLL_LEVEL), where the
 *    "polled" rule holds (uepoll_ctl(3), Level-triggered): what epoll
 *    reports, plus, after an ADD or MOD of the registration since the
 *    last harvest, bits its poll at that ctl found (the ring holds that
 *    report, not one made at the harvest); nothing else (a ONESHOT one
 *    fires once, on such a report or as epoll's, which may fire later);
 *  - otherwise, for edge-triggered registrations, the "announced" rule:
 *    an event carries the bits the file announced in its wake-ups since
 *    the registration's last event, masked; so, checked against a poll()
 *    of every file after every operation: (1) no bit outside the mask
 *    and EPOLLERR|EPOLLHUP; (2) no event without an operation on the
 *    file, an ADD or a MOD of it since its last one; (3) ONESHOT: one
 *    event until MOD; (4) no bit that was not true after some operation
 *    since the last event, but those the file is known to announce
 *    without holding them (spurious[] below); (5) an event where epoll
 *    reports one (ONESHOT: unless it fired already); (6) every bit that
 *    became true since the last event and still is (ONESHOT: what was
 *    ready at the ADD or MOD that armed it: a wake-up fires it with its
 *    own bits).  The checks run on every backend; exact ones on top.
 * Always: the data of the registration as it is now (DEL is final, MOD
 * changes the data), one event per registration per harvest, none empty.
 *
 * Seeds: 1 to 64 by default, 200 steps each; ORACLE_SEED=S (and
 * ORACLE_STEPS=N, steps per seed) replays one.  ORACLE_RULE=exact or
 * announced forces a comparison.  On a failure: the seed, the step, the
 * operation log, then the same failure from the fewest operations found
 * in 3 s (ORACLE_MINIMIZE=0: not minimized).
 *
 * This file is test/oracle.c: edge-triggered sequences, every backend.
 * test/oracle_lt.c includes it with ORACLE_LEVEL 1: level-triggered and
 * mixed sequences, skipped (77) where the backend lacks UEPOLL_CAP_LEVEL.
 */
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include "helpers.h"

#ifndef ORACLE_LEVEL
#define ORACLE_LEVEL 0
#endif

#define NOBJ		6		/* places for files */
#define NFILE		(2 * NOBJ)	/* file f is end f % 2 of place f / 2 */
#define MAXEV		64
#define MAXOPS		20000
#define EFD_MAX		0xfffffffffffffffeull	/* an eventfd's highest count */

#define EV_BITS		(EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI)
#define ALWAYS		(EPOLLERR | EPOLLHUP)	/* reported without being asked */
#define POLL_BITS	(EV_BITS | ALWAYS)

enum kind { K_PIPE, K_STREAM, K_DGRAM, K_EFD, K_EFDSEM, K_TIMER, NKIND };
static const char *const kname[NKIND] = { "pipe", "strm", "dgrm", "efd", "sem", "tmr" };

enum optype {
	O_HARVEST, O_WRITE, O_READ, O_DRAIN, O_FILL, O_OOB, O_SHUT, O_CLOSE,
	O_OPEN, O_ADD, O_MOD, O_DEL,
};

struct op {
	uint8_t type;
	uint8_t f;		/* file (place * 2 + end) */
	uint32_t arg;		/* bytes or count; events; SHUT_*; kind */
	uint64_t data;		/* ADD, MOD */
};

/*
 * Bits a kind of file announces in a wake-up without holding them, as far
 * as this test knows (uepoll_ctl(3), EVENTS): every data wake-up of a
 * socket says EPOLLPRI as well (sock_def_readable()), an eventfd write of
 * 0 says EPOLLIN, a partial read of a full pipe says EPOLLOUT to its
 * writers.  Only the announced rule allows them.
 */
static const uint32_t spurious[NKIND] = {
	[K_PIPE] = EPOLLOUT, [K_STREAM] = EPOLLPRI, [K_DGRAM] = EPOLLPRI,
	[K_EFD] = EPOLLIN, [K_EFDSEM] = EPOLLIN,
};

struct file {
	int fd;			/* -1: none */
	uint32_t now;		/* poll() after the last operation */
	int reg;		/* registered, in both instances */
	uint32_t ev;		/* as registered */
	uint64_t data;
	int ep_fired;		/* ONESHOT: epoll reported it since armed */
	int ue_fired;		/* ONESHOT: uepoll reported it since armed */
	/* the announced rule: since uepoll's last event of it */
	uint32_t rises;		/* bits that became true */
	uint32_t seen;		/* bits that were true after an operation */
	int touched;		/* an operation on its place, ADD or MOD */
	uint32_t arm_rises;	/* ONESHOT: what of its mask was true at ADD/MOD */
	uint32_t armed;		/* the polled rule: its mask's bits true after its
				 * ADDs and MODs since the last harvest */
};

struct sim {
	int ep;
	struct uepoll u;
	int exact;		/* compare every event exactly */
	int polled;		/* level-triggered: the polled rule, not exact */
	int kind[NOBJ];
	uint64_t count[NOBJ];	/* eventfd counters */
	struct file f[NFILE];
	int step;		/* harvests so far */
	int in_harvest;
	int fail_step;		/* the step of the failure (1: the first) */
	int nop;		/* operations so far */
	FILE *log;		/* NULL: no log */
	char fail[1024];	/* set by the first failed check */
};

static uint64_t rnd(uint64_t *s)	/* splitmix64 */
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned rn(uint64_t *s, unsigned n)
{
	return (unsigned)(rnd(s) % n);
}

static void failf(struct sim *s, const char *fmt, ...)
{
	va_list ap;

	if (s->fail[0])
		return;
	s->fail_step = s->step + !s->in_harvest;
	va_start(ap, fmt);
	vsnprintf(s->fail, sizeof(s->fail), fmt, ap);
	va_end(ap);
}

static void logf_(struct sim *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->log)
		return;
	va_start(ap, fmt);
	vfprintf(s->log, fmt, ap);
	va_end(ap);
}

static const char *evstr(uint32_t e, char *buf, size_t len)
{
	static const struct { uint32_t bit; const char *name; } names[] = {
		{ EPOLLIN, "IN" }, { EPOLLOUT, "OUT" }, { EPOLLRDHUP, "RDHUP" },
		{ EPOLLPRI, "PRI" }, { EPOLLERR, "ERR" }, { EPOLLHUP, "HUP" },
		{ EPOLLONESHOT, "ONESHOT" }, { EPOLLET, "ET" },
	};
	size_t n = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(e & names[i].bit))
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "|" : "", names[i].name);
		e &= ~names[i].bit;
		if (n >= len)
			return buf;
	}
	if (e)
		snprintf(buf + n, len - n, "%s%#x", n ? "|" : "", e);
	else if (!n)
		snprintf(buf, len, "0");
	return buf;
}

/* "pipe0r", "strm2b", "efd3": kind, place, end */
static const char *fname(const struct sim *s, int f, char *buf, size_t len)
{
	int o = f / 2, k = s->kind[o];
	const char *ends = k == K_PIPE ? "rw" : "ab";

	if (k >= K_EFD)
		snprintf(buf, len, "%s%d", kname[k], o);
	else
		snprintf(buf, len, "%s%d%c", kname[k], o, ends[f % 2]);
	return buf;
}

static int two_ends(int kind)
{
	return kind <= K_DGRAM;
}

static uint32_t mask_of(uint32_t ev)
{
	return (ev & EV_BITS) | ALWAYS;
}

/* ---- files --------------------------------------------------------------- */

static void open_place(struct sim *s, int o, int kind)
{
	int fds[2] = { -1, -1 }, size = 8192, ok;

	switch (kind) {
	case K_PIPE:
		ok = pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0;
		/* two pages: fills and partial reads of a full pipe are cheap */
		if (ok)
			fcntl(fds[1], F_SETPIPE_SZ, 8192);
		break;
	case K_STREAM:
	case K_DGRAM:
		ok = socketpair(AF_UNIX, (kind == K_STREAM ? SOCK_STREAM : SOCK_DGRAM) |
				SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0;
		for (int e = 0; ok && e < 2; e++)
			setsockopt(fds[e], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
		break;
	case K_EFD:
	case K_EFDSEM:
		fds[0] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC |
				 (kind == K_EFDSEM ? EFD_SEMAPHORE : 0));
		ok = fds[0] >= 0;
		break;
	default:
		fds[0] = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		ok = fds[0] >= 0;
		break;
	}
	if (!ok)
		FAIL("%s: %s", kname[kind], strerror(errno));
	s->kind[o] = kind;
	s->count[o] = 0;
	for (int e = 0; e < 2; e++) {
		memset(&s->f[2 * o + e], 0, sizeof(s->f[0]));
		s->f[2 * o + e].fd = fds[e];
	}
}

static int ctl_both(struct sim *s, int f, int op, uint32_t events, uint64_t data);

/* close file f: DEL first if registered (the rule of uepoll_ctl(3)) */
static void close_file(struct sim *s, int f)
{
	if (s->f[f].fd < 0)
		return;
	if (s->f[f].reg)
		ctl_both(s, f, EPOLL_CTL_DEL, 0, 0);
	close(s->f[f].fd);
	s->f[f].fd = -1;
	s->f[f].reg = 0;
}

static ssize_t write_u64(int fd, uint64_t v)
{
	return write(fd, &v, sizeof(v));
}

static ssize_t read_u64(int fd)
{
	uint64_t v;

	return read(fd, &v, sizeof(v));
}

/* the peer of file f for writes: a pipe writes at its write end */
static int writer_fd(const struct sim *s, int f)
{
	return s->kind[f / 2] == K_PIPE ? s->f[(f / 2) * 2 + 1].fd : s->f[f].fd;
}

static int reader_fd(const struct sim *s, int f)
{
	return s->kind[f / 2] == K_PIPE ? s->f[(f / 2) * 2].fd : s->f[f].fd;
}

static ssize_t do_write(struct sim *s, int f, uint32_t n)
{
	static char buf[8192];
	int o = f / 2, fd = writer_fd(s, f);
	ssize_t r;

	if (fd < 0)
		return -2;
	switch (s->kind[o]) {
	case K_PIPE:
		return write(fd, buf, n);
	case K_STREAM:
	case K_DGRAM:
		return send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	case K_EFD:
	case K_EFDSEM:
		r = write_u64(fd, n);
		if (r == 8)
			s->count[o] += n;
		return r;
	default: {
		/* expired at once (absolute, in the past); the tick comes
		 * from the timer interrupt: wait for it */
		struct itimerspec it = { .it_value = { 0, 1 } };
		struct pollfd p = { .fd = fd, .events = POLLIN };

		r = timerfd_settime(fd, TFD_TIMER_ABSTIME, &it, NULL);
		if (r == 0 && poll(&p, 1, 5000) != 1)
			FAIL("timerfd: no tick after 5 s");
		return r;
	}
	}
}

static ssize_t do_read(struct sim *s, int f, uint32_t n)
{
	static char buf[8192];
	int o = f / 2, fd = reader_fd(s, f);
	ssize_t r;

	if (fd < 0)
		return -2;
	switch (s->kind[o]) {
	case K_PIPE:
		return read(fd, buf, n);
	case K_STREAM:
	case K_DGRAM:
		return recv(fd, buf, n, MSG_DONTWAIT);
	case K_EFD:
	case K_EFDSEM:
		r = read_u64(fd);
		if (r == 8)
			s->count[o] = s->kind[o] == K_EFD ? 0 : s->count[o] - 1;
		return r;
	default:
		return read_u64(fd);
	}
}

/* read until EAGAIN or end of file (bounded: a peer may be gone) */
static ssize_t do_drain(struct sim *s, int f)
{
	ssize_t r, total = 0;

	for (int i = 0; i < 64; i++) {
		r = do_read(s, f, 8192);
		if (r <= 0)
			return total ? total : r;
		total += r;
		if (s->kind[f / 2] == K_EFD || s->kind[f / 2] == K_TIMER)
			break;
	}
	return total;
}

/* write until EAGAIN; an eventfd to its highest count (EPOLLOUT off) */
static ssize_t do_fill(struct sim *s, int f)
{
	int o = f / 2;
	ssize_t r, total = 0;

	if (s->kind[o] == K_EFD || s->kind[o] == K_EFDSEM) {
		if (s->f[2 * o].fd < 0)
			return -2;
		r = write_u64(s->f[2 * o].fd, EFD_MAX - s->count[o]);
		if (r == 8)
			s->count[o] = EFD_MAX;
		return r;
	}
	if (s->kind[o] == K_TIMER)
		return do_write(s, f, 0);
	for (int i = 0; i < 256; i++) {
		r = do_write(s, f, 4096);
		if (r <= 0)
			return total ? total : r;
		total += r;
	}
	return total;
}

/* ---- the two instances ----------------------------------------------------- */

static int ctl_both(struct sim *s, int f, int op, uint32_t events, uint64_t data)
{
	static const char *const opname[] = { "", "ADD", "DEL", "MOD" };
	struct file *fi = &s->f[f];
	struct epoll_event ev = { .events = events, .data.u64 = data };
	struct epoll_event ev2 = ev;
	int re, ru;
	char nb[32];

	re = epoll_ctl(s->ep, op, fi->fd, &ev) < 0 ? -errno : 0;
	ru = uepoll_ctl(&s->u, op, fi->fd, &ev2);
	if (re != ru)
		failf(s, "%s %s: epoll_ctl %d (%s), uepoll_ctl %d (%s)", opname[op],
		      fname(s, f, nb, sizeof(nb)), re, strerror(-re), ru, strerror(-ru));
	if (re || ru)
		return re ? re : ru;
	if (op == EPOLL_CTL_DEL) {
		fi->reg = 0;
		return 0;
	}
	if (op == EPOLL_CTL_ADD)
		fi->rises = fi->seen = 0;
	fi->reg = 1;
	fi->ev = events;
	fi->data = data;
	fi->ep_fired = fi->ue_fired = 0;
	fi->arm_rises = 0;
	return 0;
}

/*
 * After an operation on place `touched` (-1: none) or a ctl of file
 * `armed` (-1: none): poll every file and note, per registration, what
 * became true and what was seen.  An ADD or MOD counts everything true as
 * new (the backends poll there); a ONESHOT one fires there if anything
 * of its mask is true, and with all of it.
 */
static void observe(struct sim *s, int touched, int armed)
{
	struct pollfd p[NFILE];
	int idx[NFILE], n = 0;

	for (int f = 0; f < NFILE; f++) {
		if (s->f[f].fd < 0)
			continue;
		p[n].fd = s->f[f].fd;
		p[n].events = POLLIN | POLLOUT | POLLPRI | POLLRDHUP;
		p[n].revents = 0;
		idx[n++] = f;
	}
	if (poll(p, (nfds_t)n, 0) < 0)
		FAIL("poll: %s", strerror(errno));
	for (int i = 0; i < n; i++) {
		struct file *fi = &s->f[idx[i]];
		uint32_t now = (uint32_t)p[i].revents & POLL_BITS;
		uint32_t rises = (now & ~fi->now) & mask_of(fi->ev);

		fi->now = now;
		if (!fi->reg)
			continue;
		fi->seen |= now;
		if (idx[i] == armed) {
			rises = now & mask_of(fi->ev);
			fi->arm_rises = rises;
			fi->armed |= rises;
		} else if (idx[i] / 2 != touched) {
			continue;
		}
		fi->touched = 1;
		if (!(fi->ev & EPOLLONESHOT))
			fi->rises |= rises;
	}
}

/* the events of file f in a harvest: its data must be f's current one */
static int collect(struct sim *s, const char *who, const struct epoll_event *evs, int n,
		   uint32_t *out)
{
	for (int i = 0; i < n; i++) {
		uint64_t d = evs[i].data.u64;
		unsigned f = (unsigned)(d >> 48);

		if (f >= NFILE || !s->f[f].reg || s->f[f].data != d) {
			failf(s, "%s reported data %#llx, of no current registration (DEL is final, "
			      "MOD changes the data)", who, (unsigned long long)d);
			return -1;
		}
		if (out[f]) {
			failf(s, "%s reported two events for one registration in one harvest", who);
			return -1;
		}
		if (!evs[i].events) {
			failf(s, "%s reported an event without events", who);
			return -1;
		}
		out[f] = evs[i].events;
	}
	return 0;
}

/*
 * The announced rule for the edge-triggered registration f (header
 * comment, checks 1-6): E what epoll reported, U what uepoll reported.
 */
static void check_announced(struct sim *s, int f, uint32_t E, uint32_t U)
{
	const struct file *fi = &s->f[f];
	uint32_t m = mask_of(fi->ev), lower;
	int oneshot = !!(fi->ev & EPOLLONESHOT);
	char nb[32], b1[96], b2[96];

	fname(s, f, nb, sizeof(nb));
	evstr(U, b1, sizeof(b1));
	if (U & ~m)
		failf(s, "%s: uepoll reported %s, outside its mask %s", nb, b1,
		      evstr(fi->ev, b2, sizeof(b2)));
	if (U && !fi->touched)
		failf(s, "%s: uepoll reported %s without an operation on its file, ADD or MOD "
		      "since its last event", nb, b1);
	if (U && oneshot && fi->ue_fired)
		failf(s, "%s: uepoll reported a ONESHOT registration twice without MOD", nb);
	if (U & ~(fi->seen | spurious[s->kind[f / 2]]))
		failf(s, "%s: uepoll reported %s; since its last event only %s was true", nb, b1,
		      evstr(fi->seen, b2, sizeof(b2)));
	if (E && !U && !(oneshot && fi->ue_fired))
		failf(s, "%s: epoll reported %s, uepoll nothing", nb, evstr(E, b2, sizeof(b2)));
	if (oneshot)
		lower = fi->ue_fired ? 0 : fi->arm_rises;
	else
		lower = fi->rises;
	lower &= fi->now & m;
	if (lower & ~U)
		failf(s, "%s: %s became true since its last event and still is; uepoll reported %s",
		      nb, evstr(lower, b2, sizeof(b2)), U ? b1 : "nothing");
}

static void log_report(struct sim *s, const char *who, const uint32_t *ev)
{
	char nb[32], b[96];
	int any = 0;

	logf_(s, " %s {", who);
	for (int f = 0; f < NFILE; f++) {
		if (!ev[f])
			continue;
		logf_(s, "%s%s %s", any++ ? ", " : "", fname(s, f, nb, sizeof(nb)),
		      evstr(ev[f], b, sizeof(b)));
	}
	logf_(s, "}");
}

static void harvest(struct sim *s)
{
	struct epoll_event ee[MAXEV], ue[MAXEV];
	uint32_t E[NFILE] = { 0 }, U[NFILE] = { 0 };
	int ne, nu;

	s->step++;
	s->in_harvest = 1;
	ne = epoll_wait(s->ep, ee, MAXEV, 0);
	nu = uepoll_harvest(&s->u, ue, MAXEV);
	if (ne < 0 || nu < 0) {
		failf(s, "harvest: epoll_wait %d, uepoll_harvest %d", ne, nu);
		return;
	}
	if (collect(s, "epoll", ee, ne, E) || collect(s, "uepoll", ue, nu, U))
		return;
	log_report(s, "epoll", E);
	log_report(s, "uepoll", U);
	for (int f = 0; f < NFILE; f++) {
		struct file *fi = &s->f[f];
		char nb[32], b1[96], b2[96], b3[96];

		if (!fi->reg) {
			fi->armed = 0;
			continue;
		}
		fname(s, f, nb, sizeof(nb));
		if (s->polled && !(fi->ev & EPOLLET)) {
			/* (a ONESHOT one fires once, maybe on its ctl's report,
			 * which epoll's need not match, at once or later) */
			int os = !!(fi->ev & EPOLLONESHOT);

			if ((os ? E[f] && !U[f] && !fi->ue_fired : !!(E[f] & ~U[f])) ||
			    (U[f] & ~(E[f] | fi->armed)))
				failf(s, "%s: epoll reported %s, uepoll %s; its ADD or MOD since "
				      "the last harvest found %s", nb,
				      E[f] ? evstr(E[f], b1, sizeof(b1)) : "nothing",
				      U[f] ? evstr(U[f], b2, sizeof(b2)) : "nothing",
				      evstr(fi->armed, b3, sizeof(b3)));
		} else if (s->exact || !(fi->ev & EPOLLET)) {
			if (E[f] != U[f])
				failf(s, "%s: epoll reported %s, uepoll %s", nb,
				      E[f] ? evstr(E[f], b1, sizeof(b1)) : "nothing",
				      U[f] ? evstr(U[f], b2, sizeof(b2)) : "nothing");
		}
		fi->armed = 0;
		if (fi->ev & EPOLLET)
			check_announced(s, f, E[f], U[f]);
		if (E[f] && (fi->ev & EPOLLONESHOT)) {
			if (fi->ep_fired)
				failf(s, "%s: epoll reported a ONESHOT registration twice", nb);
			fi->ep_fired = 1;
		}
		if (U[f]) {
			fi->rises = fi->seen = 0;
			fi->touched = 0;
			if (fi->ev & EPOLLONESHOT)
				fi->ue_fired = 1;
		}
	}
}

/* ---- operations --------------------------------------------------------------- */

static void log_op(struct sim *s, const struct op *op, long long res)
{
	static const char *const name[] = {
		"harvest", "write", "read", "drain", "fill", "oob", "shutdown", "close",
		"open", "add", "mod", "del",
	};
	char nb[32], b[96];

	if (!s->log)
		return;
	logf_(s, "%5d %-8s", s->nop, name[op->type]);
	if (op->type == O_HARVEST) {
		logf_(s, " #%d", s->step + 1);
		return;
	}
	logf_(s, " %s", fname(s, op->f, nb, sizeof(nb)));
	switch (op->type) {
	case O_WRITE: case O_READ:
		logf_(s, " %u", op->arg);
		break;
	case O_SHUT:
		logf_(s, " %s", op->arg == SHUT_RD ? "RD" : op->arg == SHUT_WR ? "WR" : "RDWR");
		break;
	case O_ADD: case O_MOD:
		logf_(s, " %s data %#llx", evstr(op->arg, b, sizeof(b)),
		      (unsigned long long)op->data);
		break;
	}
	logf_(s, " = %lld", res);
}

/* run one operation; an inapplicable one (its file is gone) does nothing */
static void exec_op(struct sim *s, const struct op *op)
{
	int f = op->f, o = f / 2, k = s->kind[o], fd = s->f[f].fd;
	long long r = 0;

	s->nop++;
	errno = 0;
	switch (op->type) {
	case O_HARVEST:
		log_op(s, op, 0);
		harvest(s);
		s->in_harvest = 0;
		logf_(s, "\n");
		return;
	case O_WRITE:
		r = do_write(s, f, op->arg);
		break;
	case O_READ:
		r = do_read(s, f, op->arg);
		break;
	case O_DRAIN:
		r = do_drain(s, f);
		break;
	case O_FILL:
		r = do_fill(s, f);
		break;
	case O_OOB:
		r = k == K_STREAM && fd >= 0 ? send(fd, "!", 1, MSG_OOB | MSG_DONTWAIT | MSG_NOSIGNAL) : -2;
		break;
	case O_SHUT:
		r = two_ends(k) && k != K_PIPE && fd >= 0 ? shutdown(fd, (int)op->arg) : -2;
		break;
	case O_CLOSE:
		close_file(s, f);
		break;
	case O_OPEN:
		close_file(s, 2 * o);
		close_file(s, 2 * o + 1);
		open_place(s, o, (int)op->arg);
		break;
	default:
		if (fd < 0) {
			r = -2;
			break;
		}
		r = ctl_both(s, f, op->type == O_ADD ? EPOLL_CTL_ADD :
			     op->type == O_MOD ? EPOLL_CTL_MOD : EPOLL_CTL_DEL, op->arg, op->data);
		log_op(s, op, r);
		logf_(s, "\n");
		observe(s, -1, r == 0 && op->type != O_DEL ? f : -1);
		return;
	}
	if (r < 0 && r != -2)
		r = -errno;
	log_op(s, op, r);
	logf_(s, "\n");
	observe(s, o, -1);
}

/* ---- generation ------------------------------------------------------------ */

enum mode { M_ET, M_LT, M_MIXED };
static const char *const mode_name[] = { "edge-triggered", "level-triggered", "mixed" };

static uint32_t gen_events(uint64_t *rng, enum mode mode)
{
	uint32_t e = 0;

	if (rn(rng, 4))
		e |= EPOLLIN;
	if (rn(rng, 2))
		e |= EPOLLOUT;
	if (!rn(rng, 3))
		e |= EPOLLRDHUP;
	if (!rn(rng, 4))
		e |= EPOLLPRI;
	if (!rn(rng, 4))
		e |= EPOLLONESHOT;
	if (mode == M_ET || (mode == M_MIXED && rn(rng, 2)))
		e |= EPOLLET;
	return e;
}

static uint32_t gen_size(uint64_t *rng, int kind)
{
	static const uint32_t sizes[] = { 1, 7, 100, 1000, 5000 };
	static const uint32_t adds[] = { 0, 1, 1, 2, 3, 100 };

	if (kind == K_EFD || kind == K_EFDSEM)
		return adds[rn(rng, sizeof(adds) / sizeof(adds[0]))];
	return sizes[rn(rng, sizeof(sizes) / sizeof(sizes[0]))];
}

/* a MOD re-arming a ONESHOT registration with its events, as event loops do */
static int gen_rearm(struct sim *s, uint64_t *rng, struct op *op)
{
	int f = (int)rn(rng, NFILE);

	for (int i = 0; i < NFILE; i++, f = (f + 1) % NFILE) {
		if (s->f[f].fd < 0 || !s->f[f].reg || !(s->f[f].ev & EPOLLONESHOT))
			continue;
		op->type = O_MOD;
		op->f = (uint8_t)f;
		op->arg = s->f[f].ev;
		op->data = rn(rng, 2) ? s->f[f].data :
			   ((uint64_t)f << 48) | (rnd(rng) & 0xffffffffffffull);
		return 1;
	}
	return 0;
}

static void gen_op(struct sim *s, uint64_t *rng, enum mode mode, struct op *op)
{
	int o = (int)rn(rng, NOBJ), f, k = s->kind[o];
	unsigned r = rn(rng, 100);

	f = 2 * o + (two_ends(k) ? (int)rn(rng, 2) : 0);
	memset(op, 0, sizeof(*op));
	if (r >= 95 && gen_rearm(s, rng, op))
		return;
	op->f = (uint8_t)f;
	if (s->f[f].fd < 0 || r < 2) {
		op->type = O_OPEN;
		op->f = (uint8_t)(2 * o);
		op->arg = rn(rng, NKIND);
		return;
	}
	if (!s->f[f].reg && r < 40)
		r = 60 + r % 12;	/* mostly an ADD */
	if (r < 20)
		op->type = O_WRITE, op->arg = gen_size(rng, k);
	else if (r < 30)
		op->type = O_READ, op->arg = gen_size(rng, k);
	else if (r < 37)
		op->type = O_DRAIN;
	else if (r < 41)
		op->type = O_FILL;
	else if (r < 43)
		op->type = k == K_STREAM ? O_OOB : O_WRITE, op->arg = 1;
	else if (r < 46)
		op->type = O_SHUT, op->arg = rn(rng, 3);	/* SHUT_RD, _WR, _RDWR */
	else if (r < 48)
		op->type = O_CLOSE;
	else if (r < 60)
		op->type = O_MOD;
	else if (r < 72)
		op->type = O_ADD;
	else if (r < 80)
		op->type = O_DEL;
	else if (r < 90)
		op->type = O_WRITE, op->arg = gen_size(rng, k);
	else
		op->type = O_READ, op->arg = gen_size(rng, k);
	if (op->type == O_ADD || op->type == O_MOD) {
		op->arg = gen_events(rng, mode);
		op->data = ((uint64_t)f << 48) | (rnd(rng) & 0xffffffffffffull);
		/* MOD keeping the data, or the events */
		if (op->type == O_MOD && s->f[f].reg && !rn(rng, 3))
			op->data = s->f[f].data;
		if (op->type == O_MOD && s->f[f].reg && !rn(rng, 4))
			op->arg = s->f[f].ev;
	}
}

/* ---- runs ------------------------------------------------------------------- */

static int rule_exact(struct uepoll *u)
{
	const char *e = getenv("ORACLE_RULE");
	int caps = uepoll_backend_caps((unsigned)uepoll_backend(u));

	if (e && !strcmp(e, "exact"))
		return 1;
	if (e && !strcmp(e, "announced"))
		return 0;
	return caps > 0 && (caps & UEPOLL_CAP_POLLED_EVENTS);
}

static void sim_init(struct sim *s, FILE *log)
{
	memset(s, 0, sizeof(*s));
	s->log = log;
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(s->ep >= 0);
	t_init(&s->u, NFILE);
	s->exact = rule_exact(&s->u);
	s->polled = !s->exact && t_native_klevel(&s->u);
	for (int o = 0; o < NOBJ; o++)
		open_place(s, o, o % NKIND);
	observe(s, -1, -1);
}

static void sim_exit(struct sim *s)
{
	for (int f = 0; f < NFILE; f++)
		if (s->f[f].fd >= 0)
			close(s->f[f].fd);
	uepoll_exit(&s->u);
	close(s->ep);
}

/*
 * Replay ops[0..n) on fresh files and instances.  The index of the
 * operation after which a check failed (the message in fail), or -1.
 */
static int replay(const struct op *ops, int n, FILE *log, char *fail, size_t len)
{
	struct sim *s = calloc(1, sizeof(*s));
	int at = -1;

	CHECK(s);
	sim_init(s, log);
	for (int i = 0; i < n && at < 0; i++) {
		exec_op(s, &ops[i]);
		if (s->fail[0])
			at = i;
	}
	if (at < 0) {
		struct op h = { .type = O_HARVEST };

		exec_op(s, &h);
		if (s->fail[0])
			at = n;
	}
	if (fail)
		snprintf(fail, len, "%s", s->fail);
	sim_exit(s);
	free(s);
	return at;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Fewer operations that still fail (any check): chunks removed while the
 * rest fails, halving the chunk, for 3 seconds at most.  Returns the new n.
 */
static int minimize(struct op *ops, int n)
{
	double t0 = now_s();
	struct op *try = malloc(sizeof(*ops) * (size_t)n);
	int chunk = n / 2;

	CHECK(try);
	while (chunk >= 1 && now_s() - t0 < 3) {
		for (int i = 0; i + chunk <= n && now_s() - t0 < 3;) {
			int m = 0, at;

			memcpy(try, ops, sizeof(*ops) * (size_t)i);
			m = i;
			memcpy(try + m, ops + i + chunk, sizeof(*ops) * (size_t)(n - i - chunk));
			m += n - i - chunk;
			at = replay(try, m, NULL, NULL, 0);
			if (at >= 0) {
				n = at < m ? at + 1 : m;
				memcpy(ops, try, sizeof(*ops) * (size_t)n);
			} else {
				i += chunk;
			}
		}
		chunk /= 2;
	}
	free(try);
	return n;
}

static void report(const struct op *ops, int n, uint64_t seed, int steps, const char *backend)
{
	struct op *min = malloc(sizeof(*ops) * (size_t)n);
	char fail[1024], fail2[1024];
	const char *me = ORACLE_LEVEL ? "oracle_lt" : "oracle";
	int at, m;

	CHECK(min);
	printf("== %s: seed %llu, the operations up to the failure ==\n", me,
	       (unsigned long long)seed);
	fflush(stdout);
	at = replay(ops, n, stdout, fail, sizeof(fail));
	fflush(stdout);
	memcpy(min, ops, sizeof(*ops) * (size_t)n);
	m = n;
	if (!getenv("ORACLE_MINIMIZE") || strcmp(getenv("ORACLE_MINIMIZE"), "0")) {
		m = minimize(min, at >= 0 && at < n ? at + 1 : n);
		printf("== minimized: %d of %d operations ==\n", m, n);
		fflush(stdout);
		replay(min, m, stdout, fail2, sizeof(fail2));
		fflush(stdout);
		printf("   -> %s\n", fail2);
		fflush(stdout);
	}
	FAIL("backend %s, seed %llu, step %d (operation %d): %s\n"
	     "replay: ORACLE_SEED=%llu ORACLE_STEPS=%d UEPOLL_BACKEND=%s build/test/%s",
	     backend, (unsigned long long)seed, steps, at + 1, fail,
	     (unsigned long long)seed, steps, backend, me);
}

/* one seed: steps harvests, each after 1 to 3 operations; 0 or fails */
static void run_seed(uint64_t seed, int steps, enum mode mode, const char *backend)
{
	struct op *ops = malloc(sizeof(*ops) * MAXOPS);
	struct sim *s = calloc(1, sizeof(*s));
	uint64_t rng = seed * 0x2545f4914f6cdd1dull + 1;
	int n = 0;

	CHECK(ops && s);
	sim_init(s, NULL);
	while (s->step < steps && n + 4 < MAXOPS && !s->fail[0]) {
		int k = 1 + (rn(&rng, 2) ? 0 : (int)rn(&rng, 3));

		for (int i = 0; i < k && !s->fail[0]; i++) {
			gen_op(s, &rng, mode, &ops[n]);
			exec_op(s, &ops[n++]);
		}
		if (s->fail[0])
			break;
		ops[n] = (struct op){ .type = O_HARVEST };
		exec_op(s, &ops[n++]);
	}
	if (s->fail[0]) {
		sim_exit(s);
		printf("%s seed %llu: %s\n", mode_name[mode], (unsigned long long)seed, s->fail);
		report(ops, n, seed, s->fail_step, backend);	/* does not return */
	}
	sim_exit(s);
	free(s);
	free(ops);
}

static unsigned long env_num(const char *name, unsigned long dflt)
{
	const char *e = getenv(name);

	return e && *e ? strtoul(e, NULL, 0) : dflt;
}

int main(void)
{
	struct uepoll u;
	const char *backend;
	int caps, steps, seeds, exact, polled;
	double t0 = now_s();

	signal(SIGPIPE, SIG_IGN);
	t_init(&u, 1);
	backend = uepoll_backend_name(&u);
	caps = uepoll_backend_caps((unsigned)uepoll_backend(&u));
	CHECK(caps >= 0);
	exact = rule_exact(&u);
	polled = !exact && t_native_klevel(&u);
	uepoll_exit(&u);
	if (ORACLE_LEVEL && !(caps & UEPOLL_CAP_LEVEL))
		SKIP("backend %s: no level-triggered registrations (uepoll_backend_caps(3): "
		     "no UEPOLL_CAP_LEVEL)", backend);
	steps = (int)env_num("ORACLE_STEPS", 200);
	seeds = 0;
	if (getenv("ORACLE_SEED")) {
		uint64_t seed = env_num("ORACLE_SEED", 1);
		enum mode mode = ORACLE_LEVEL ? (seed & 1 ? M_MIXED : M_LT) : M_ET;

		run_seed(seed, steps, mode, backend);
		seeds = 1;
	} else {
		for (uint64_t seed = 1; seed <= 64; seed++, seeds++)
			run_seed(seed, steps, ORACLE_LEVEL ? (seed & 1 ? M_MIXED : M_LT) : M_ET,
				 backend);
	}
	printf("%s: %d seeds x %d steps, %s, %s comparison: agree (%.2f s)\n", backend, seeds,
	       steps, ORACLE_LEVEL ? "level-triggered and mixed" : "edge-triggered",
	       exact ? "exact" : polled ? (ORACLE_LEVEL ? "polled-rule (level), announced-rule (edge)" :
					  "announced-rule") : "announced-rule", now_s() - t0);
	return 0;
}
