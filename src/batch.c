// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * batch.c - the system calls of uepoll_ctl_batch(3), several per
 * io_uring_enter().
 *
 * A small io_uring of the instance's own (struct uepoll_aux), set up at
 * the first batch that needs it, never at init: an instance that never
 * batches pays nothing.  It runs
 *   - epoll_ctl()s (IORING_OP_EPOLL_CTL, Linux 5.6; the epoll and native
 *     backends): the kernel's do_epoll_ctl(), so each change's completion
 *     has exactly epoll_ctl(2)'s errno.  The requests are hard-linked
 *     (IOSQE_IO_HARDLINK): each starts when the one before it completed,
 *     whatever its result, so they apply in the order given even when
 *     one is punted to a worker (do_epoll_ctl() of a request that must
 *     not block answers EAGAIN when the epoll's mutex is taken, by an
 *     epoll_wait() in another thread for instance);
 *   - fstat()s (IORING_OP_STATX on the fd itself, AT_EMPTY_PATH; the
 *     uring backend's EBADF/EPERM checks).  A completion other than 0 or
 *     EBADF (a kernel that refuses the empty path) falls back to fstat().
 * Up to UEPOLL_AUX_MAX requests per io_uring_enter(), which submits them
 * and waits for all their completions.  Without io_uring (seccomp,
 * io_uring_disabled: the very case the epoll backend exists for), without
 * the operation (the probe says), or with UEPOLL_BATCH=loop (tests), one
 * plain system call per change, as uepoll_ctl() makes.  If a submission
 * fails half-way the ring is dropped: what it did not take runs as plain
 * calls, and so does every later batch of the instance.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include "internal.h"

enum { AUX_UNTRIED, AUX_READY, AUX_OFF };

/* user_data of the sleep's poll (__uepoll_aux_epoll_ctl() with a sleep):
 * above any index into res[] */
#define UD_SLEEP	(~0ull)
#define UD_CANCEL	(~0ull - 1)	/* the cancel of an epoll wait */

struct uepoll_aux {
	pthread_mutex_t lock;
	int state;		/* AUX_* */
	int can_ctl;		/* IORING_OP_EPOLL_CTL supported */
	int can_statx;		/* IORING_OP_STATX supported */
	int can_poll;		/* IORING_OP_POLL_ADD supported */
	int armed;		/* the sleep's request is in the kernel, not completed */
	int nev;		/* ... its result: an epoll wait's events, -errno */
	int can_epoll_wait;	/* IORING_OP_EPOLL_WAIT supported */
	struct io_uring ring;
	struct statx *stx;	/* UEPOLL_AUX_MAX buffers */
};

struct uepoll_aux *__uepoll_aux_new(void)
{
	struct uepoll_aux *a = calloc(1, sizeof(*a));

	if (a)
		pthread_mutex_init(&a->lock, NULL);
	return a;
}

static void aux_off(struct uepoll_aux *a)
{
	if (a->state == AUX_READY)
		io_uring_queue_exit(&a->ring);
	free(a->stx);
	a->stx = NULL;
	a->state = AUX_OFF;
	a->armed = 0;
}

void __uepoll_aux_free(struct uepoll_aux *a)
{
	if (!a)
		return;
	aux_off(a);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* the ring and what it can do, once; caller holds a->lock */
static int aux_ready(struct uepoll *u, struct uepoll_aux *a)
{
	const char *e = getenv("UEPOLL_BATCH");
	struct io_uring_probe *probe;

	if (a->state != AUX_UNTRIED)
		return a->state == AUX_READY;
	a->state = AUX_OFF;
	if (e && !strcmp(e, "loop"))
		return 0;
	a->stx = calloc(UEPOLL_AUX_MAX, sizeof(*a->stx));
	if (!a->stx)
		return 0;
	STAT_SYS(u);
	/* CQ twice the SQ: never overflows, all completions are reaped */
	if (io_uring_queue_init(UEPOLL_AUX_MAX, &a->ring, 0) < 0) {
		aux_off(a);
		return 0;
	}
	a->state = AUX_READY;
	STAT_SYS(u);
	probe = io_uring_get_probe_ring(&a->ring);
	if (probe) {
		a->can_ctl = io_uring_opcode_supported(probe, IORING_OP_EPOLL_CTL);
		a->can_statx = io_uring_opcode_supported(probe, IORING_OP_STATX);
		a->can_poll = io_uring_opcode_supported(probe, IORING_OP_POLL_ADD);
		a->can_epoll_wait = io_uring_opcode_supported(probe, UEPOLL_OP_EPOLL_WAIT);
		io_uring_free_probe(probe);
	}
	if (!a->can_ctl && !a->can_statx)
		aux_off(a);
	return a->state == AUX_READY;
}

/*
 * One completion of the helper ring into res[] (its user_data an index
 * below nres) or, the sleep's request (UD_SLEEP), into a->armed/nev; 1 if
 * it was one of res[].
 */
static int aux_cqe(struct uepoll_aux *a, const struct io_uring_cqe *cqe, int *res, unsigned nres)
{
	if (cqe->user_data == UD_SLEEP) {
		a->armed = 0;
		a->nev = cqe->res;
		return 0;
	}
	if (cqe->user_data == UD_CANCEL)
		return 0;
	if (res && cqe->user_data < nres)
		res[cqe->user_data] = cqe->res;
	return 1;
}

/* the completions already in the CQ (a cancel's, never one of res[]) */
static void aux_drain(struct uepoll_aux *a)
{
	struct io_uring_cqe *cqe;

	while (io_uring_peek_cqe(&a->ring, &cqe) == 0) {
		aux_cqe(a, cqe, NULL, 0);
		io_uring_cqe_seen(&a->ring, cqe);
	}
}

/*
 * Reap the completions of `sub` requests taken (into res[]), waiting for
 * those not posted yet; a sleep's poll that completes meanwhile is noted,
 * not counted.  A wait that fails for good (a broken ring) drops the
 * ring and leaves -EIO in the res[] not reaped: their outcome is unknown.
 */
static void aux_reap(struct uepoll *u, struct uepoll_aux *a, int *res, unsigned nres,
		     unsigned sub)
{
	struct io_uring_cqe *cqe;
	unsigned got = 0;
	int r;

	while (got < sub) {
		while (io_uring_peek_cqe(&a->ring, &cqe) != 0) {
			STAT_SYS(u);
			r = io_uring_wait_cqe(&a->ring, &cqe);
			if (r == 0)
				break;
			if (r != -EINTR && r != -EAGAIN && r != -ETIME) {
				aux_off(a);
				return;
			}
		}
		got += (unsigned)aux_cqe(a, cqe, res, nres);
		io_uring_cqe_seen(&a->ring, cqe);
	}
}

/*
 * Submit the cnt requests queued (user_data: their index in res[], below
 * nres) and reap their completions into res[]: one io_uring_enter()
 * unless interrupted.  Returns how many the kernel took, the first ones;
 * when that is not all of them the ring is dropped (the rest never runs).
 */
static unsigned aux_flush(struct uepoll *u, struct uepoll_aux *a, int *res,
			  unsigned cnt, unsigned nres)
{
	unsigned sub, tries = 0, i;
	int r;

	aux_drain(a);
	do {
		STAT_SYS(u);
		r = io_uring_submit_and_wait(&a->ring, cnt);
	} while ((r == -EINTR || r == -EAGAIN) && ++tries < 8);
	sub = r > 0 ? (unsigned)r : 0;
	for (i = 0; i < nres; i++)
		res[i] = -EIO;
	aux_reap(u, a, res, nres, sub);
	if (sub < cnt)
		aux_off(a);
	return sub;
}

/* one epoll_ctl(2) as uepoll_ctl() makes it */
static int plain_ctl(struct uepoll *u, const struct uepoll_aux_ctl *c)
{
	struct epoll_event ev = c->ev;

	STAT_SYS(u);
	return epoll_ctl(c->epfd, c->op, c->fd, c->op == EPOLL_CTL_DEL ? NULL : &ev) < 0 ? -errno : 0;
}

/*
 * Queue the run's epoll_ctl()s, user_data their index, each hard-linked
 * to the next; with sleep, each linked to the next request queued after
 * it too (the sleep's), an ADD or MOD by a plain link (aux_sleep()).
 */
static void aux_queue_ctls(struct uepoll_aux *a, const struct uepoll_aux_ctl *c, unsigned n,
			   int sleep)
{
	struct io_uring_sqe *sqe;
	unsigned i;

	for (i = 0; i < n; i++) {
		sqe = io_uring_get_sqe(&a->ring);

		/* read at submission (the kernel copies the event) */
		io_uring_prep_epoll_ctl(sqe, c[i].epfd, c[i].fd, c[i].op,
					(struct epoll_event *)&c[i].ev);
		io_uring_sqe_set_data64(sqe, i);
		if (sleep && c[i].op != EPOLL_CTL_DEL)
			sqe->flags |= IOSQE_IO_LINK;
		else if (sleep || i + 1 < n)
			sqe->flags |= IOSQE_IO_HARDLINK;
	}
}

/*
 * An epoll wait still holds the caller's buffer: cancel it and reap its
 * completion (the events it took meanwhile, or -ECANCELED) into a->nev.
 */
static void aux_cancel_wait(struct uepoll *u, struct uepoll_aux *a)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&a->ring);
	struct io_uring_cqe *cqe;
	int r;

	io_uring_prep_cancel64(sqe, UD_SLEEP, 0);
	io_uring_sqe_set_data64(sqe, UD_CANCEL);
	STAT_SYS(u);
	io_uring_submit(&a->ring);
	while (a->armed) {
		if (io_uring_peek_cqe(&a->ring, &cqe) != 0) {
			STAT_SYS(u);
			r = io_uring_wait_cqe(&a->ring, &cqe);
			if (r == -EINTR || r == -EAGAIN || r == -ETIME)
				continue;
			if (r) {
				aux_off(a);	/* (never seen: a broken ring) */
				return;
			}
		}
		aux_cqe(a, cqe, NULL, 0);
		io_uring_cqe_seen(&a->ring, cqe);
	}
}

/*
 * The sleep's request, linked after the last ctl: a single-shot poll of
 * sl->fd for POLLIN (sl->evs NULL), or an IORING_OP_EPOLL_WAIT of the
 * epoll instance sl->fd into sl->evs (a wait that finds nothing is
 * retried by io_uring when the instance wakes it).
 */
static void aux_queue_sleep(struct uepoll_aux *a, const struct uepoll_aux_sleep *sl)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&a->ring);

	if (sl->evs)
		io_uring_prep_rw(UEPOLL_OP_EPOLL_WAIT, sqe, sl->fd, sl->evs, (unsigned)sl->max, 0);
	else
		io_uring_prep_poll_add(sqe, sl->fd, POLLIN);
	io_uring_sqe_set_data64(sqe, UD_SLEEP);
	a->armed = 1;
}

/*
 * The ctls that a failed ADD or MOD cancelled (-ECANCELED: no epoll_ctl()
 * answers that), in order, as a batch without a sleep.
 */
static void aux_rerun(struct uepoll *u, struct uepoll_aux *a, const struct uepoll_aux_ctl *c,
		      int *res, unsigned n)
{
	struct uepoll_aux_ctl q[UEPOLL_AUX_MAX];
	int r[UEPOLL_AUX_MAX];
	unsigned idx[UEPOLL_AUX_MAX], i, k = 0, done = 0;

	for (i = 0; i < n; i++)
		if (res[i] == -ECANCELED) {
			idx[k] = i;
			q[k++] = c[i];
		}
	if (k > 1 && a->state == AUX_READY) {
		aux_queue_ctls(a, q, k, 0);
		done = aux_flush(u, a, r, k, k);
	}
	for (i = done; i < k; i++)
		r[i] = plain_ctl(u, &q[i]);
	for (i = 0; i < k; i++)
		res[idx[i]] = r[i];
}

/*
 * The run c[0..n) and the sleep sl in one io_uring_enter(): the ctls, in
 * order, and linked after them the sleep's request (aux_queue_sleep()).
 * A DEL is hard-linked to what follows, an ADD or a MOD linked: one that
 * fails cancels the rest of the chain, sleep included (the caller may
 * want to redo it before sleeping: uepoll_ctl_wait(3)), and the ctls it
 * cancelled run afterwards, as a batch (aux_rerun()).  The enter waits
 * for n + 1 completions or until the timeout.  The request never
 * outlives the call: one still pending then (timeout, signal) is
 * cancelled (aux_cancel_wait(); an epoll wait writes into the caller's
 * memory), and what an epoll wait took meanwhile is returned all the
 * same.  How the wait ended: completed or the time is up (1), cancelled
 * by a failed change (0), or a signal (-EINTR: the kernel answers an
 * enter that submitted with the count it submitted, so the clock tells).
 * Returns how many ctls the kernel took, the first ones (fewer: the ring
 * is dropped, sl->ret 0).
 */
static unsigned aux_sleep(struct uepoll *u, struct uepoll_aux *a, const struct uepoll_aux_ctl *c,
			  int *res, unsigned n, struct uepoll_aux_sleep *sl)
{
	/* "no limit": a day; the caller's loop sleeps again after it */
	int64_t ms = sl->timeout_ms >= 0 ? sl->timeout_ms : 86400000, t0;
	struct __kernel_timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };
	struct io_uring_cqe *cqe;
	unsigned queued, sub, taken, got = 0, i;

	aux_drain(a);
	a->nev = -ECANCELED;
	aux_queue_ctls(a, c, n, 1);
	aux_queue_sleep(a, sl);
	queued = io_uring_sq_ready(&a->ring);
	for (i = 0; i < n; i++)
		res[i] = -EIO;
	t0 = __uepoll_now_ns();
	STAT_SYS(u);
	io_uring_submit_and_wait_timeout(&a->ring, &cqe, n + 1, &ts, NULL);
	sub = queued - io_uring_sq_ready(&a->ring);
	if (sub < queued)
		a->armed = 0;	/* (queued last: not taken) */
	taken = sub < n ? sub : n;
	while (io_uring_peek_cqe(&a->ring, &cqe) == 0) {
		got += (unsigned)aux_cqe(a, cqe, res, n);
		io_uring_cqe_seen(&a->ring, cqe);
	}
	if (got < taken)	/* a ctl punted to a worker: it ends soon */
		aux_reap(u, a, res, n, taken - got);
	if (sub < queued)
		sl->ret = 0;
	else if (a->nev == -ECANCELED && !a->armed)
		sl->ret = 0;	/* a failed change cancelled it */
	else if (!a->armed || __uepoll_now_ns() - t0 >= ms * 1000000)
		sl->ret = 1;
	else
		sl->ret = -EINTR;
	if (a->armed && a->state == AUX_READY)
		aux_cancel_wait(u, a);
	sl->nev = a->nev > 0 && sl->evs ? a->nev : 0;
	if (sub < queued)
		aux_off(a);
	aux_rerun(u, a, c, res, taken);
	return taken;
}

/*
 * The lock: a batch holds it for its one io_uring_enter(); a sleeper (the
 * harvester in uepoll_ctl_wait()) for its whole sleep.  A batch of another
 * thread that finds it taken does not wait for the sleep to end: its
 * changes go as plain epoll_ctl()s, one system call each.  A sleeper
 * releases the caller's lock, sl->drop, for the call (the backend's, which
 * other threads' uepoll_ctl() take: their changes of these fds meanwhile
 * apply in the kernel's order) and takes it again before returning.
 */
void __uepoll_aux_epoll_ctl(struct uepoll *u, struct uepoll_aux *a,
			    const struct uepoll_aux_ctl *c, int *res, unsigned n,
			    struct uepoll_aux_sleep *sl)
{
	unsigned i, done = 0;

	if (sl) {
		sl->ret = 0;
		pthread_mutex_unlock(sl->drop);
		pthread_mutex_lock(&a->lock);
	} else if (n < 2 || pthread_mutex_trylock(&a->lock)) {
		for (i = 0; i < n; i++)
			res[i] = plain_ctl(u, &c[i]);
		return;
	}
	if (sl && n < UEPOLL_AUX_MAX - 1 && !UNDER_VALGRIND() && aux_ready(u, a) && a->can_ctl &&
	    (sl->evs ? a->can_epoll_wait : a->can_poll)) {
		done = aux_sleep(u, a, c, res, n, sl);
	} else if (n > 1 && aux_ready(u, a) && a->can_ctl) {
		aux_queue_ctls(a, c, n, 0);
		done = aux_flush(u, a, res, n, n);
		/* the kernel took the first `done`: a chain that broke there
		 * ran them in order; the rest never ran */
	}
	for (i = done; i < n; i++)
		res[i] = plain_ctl(u, &c[i]);
	pthread_mutex_unlock(&a->lock);
	if (sl)
		pthread_mutex_lock(sl->drop);
}

void __uepoll_aux_fd_kinds(struct uepoll *u, struct uepoll_aux *a, const int *fds,
			   int *kind, struct uepoll_ident *id, unsigned n)
{
	int res[UEPOLL_AUX_MAX];
	unsigned i, q = 0, done = 0;

	pthread_mutex_lock(&a->lock);
	if (n > 1 && aux_ready(u, a) && a->can_statx) {
		memset(a->stx, 0, n * sizeof(*a->stx));
		for (i = 0; i < n; i++) {
			struct io_uring_sqe *sqe;

			res[i] = -ENOSYS;
			if (fds[i] < 0)
				continue;
			sqe = io_uring_get_sqe(&a->ring);
			io_uring_prep_statx(sqe, fds[i], "", AT_EMPTY_PATH, STATX_TYPE | STATX_INO,
					    &a->stx[i]);
			io_uring_sqe_set_data64(sqe, i);
			q++;
		}
		done = q ? aux_flush(u, a, res, q, n) : 0;
		if (done < q || a->state != AUX_READY)	/* dropped: fstat() them all */
			done = 0;
	}
	for (i = 0; i < n; i++) {
		if (fds[i] < 0)
			continue;
		id[i].fd = fds[i];
		id[i].valid = 0;
		if (done && res[i] == 0) {
			kind[i] = S_ISREG(a->stx[i].stx_mode) || S_ISDIR(a->stx[i].stx_mode) ?
				  -EPERM : 0;
			id[i].valid = 1;
			id[i].dev = (uint64_t)makedev(a->stx[i].stx_dev_major,
						      a->stx[i].stx_dev_minor);
			id[i].ino = a->stx[i].stx_ino;
		} else if (done && res[i] == -EBADF) {
			kind[i] = -EBADF;
		} else {
			kind[i] = __uepoll_fd_kind(u, fds[i]);
			id[i] = __uepoll_ident;
		}
	}
	pthread_mutex_unlock(&a->lock);
}
