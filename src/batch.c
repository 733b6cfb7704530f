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
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "internal.h"

enum { AUX_UNTRIED, AUX_READY, AUX_OFF };

struct uepoll_aux {
	pthread_mutex_t lock;
	int state;		/* AUX_* */
	int can_ctl;		/* IORING_OP_EPOLL_CTL supported */
	int can_statx;		/* IORING_OP_STATX supported */
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
		io_uring_free_probe(probe);
	}
	if (!a->can_ctl && !a->can_statx)
		aux_off(a);
	return a->state == AUX_READY;
}

/*
 * Submit the cnt requests queued (user_data: their index in res[], below
 * nres) and reap their completions into res[]: one io_uring_enter()
 * unless interrupted.  Returns how many the kernel took, the first ones;
 * when that is not all of them the ring is dropped (the rest never runs).
 * A wait that fails for good (a broken ring) leaves its error in the res[]
 * of the requests taken but not reaped: their outcome is unknown.
 */
static unsigned aux_flush(struct uepoll *u, struct uepoll_aux *a, int *res,
			  unsigned cnt, unsigned nres)
{
	struct io_uring_cqe *cqe;
	unsigned sub, got, tries = 0, i;
	int r;

	do {
		STAT_SYS(u);
		r = io_uring_submit_and_wait(&a->ring, cnt);
	} while ((r == -EINTR || r == -EAGAIN) && ++tries < 8);
	sub = r > 0 ? (unsigned)r : 0;
	for (i = 0; i < nres; i++)
		res[i] = -EIO;
	for (got = 0; got < sub; got++) {
		while (io_uring_peek_cqe(&a->ring, &cqe) != 0) {
			STAT_SYS(u);
			r = io_uring_wait_cqe(&a->ring, &cqe);
			if (r == 0)
				break;
			if (r != -EINTR && r != -EAGAIN && r != -ETIME) {
				aux_off(a);
				return sub;
			}
		}
		if (cqe->user_data < nres)
			res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(&a->ring, cqe);
	}
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

void __uepoll_aux_epoll_ctl(struct uepoll *u, struct uepoll_aux *a,
			    const struct uepoll_aux_ctl *c, int *res, unsigned n)
{
	unsigned i, done = 0;

	pthread_mutex_lock(&a->lock);
	if (n > 1 && aux_ready(u, a) && a->can_ctl) {
		for (i = 0; i < n; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&a->ring);

			/* read at submission (the kernel copies the event) */
			io_uring_prep_epoll_ctl(sqe, c[i].epfd, c[i].fd, c[i].op,
						(struct epoll_event *)&c[i].ev);
			io_uring_sqe_set_data64(sqe, i);
			if (i + 1 < n)
				sqe->flags |= IOSQE_IO_HARDLINK;
		}
		done = aux_flush(u, a, res, n, n);
		/* the kernel took the first `done`: a chain that broke there
		 * ran them in order; the rest never ran */
	}
	for (i = done; i < n; i++)
		res[i] = plain_ctl(u, &c[i]);
	pthread_mutex_unlock(&a->lock);
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
