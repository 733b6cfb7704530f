// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * epoll.c - the fallback backend: plain epoll_create1/epoll_ctl/epoll_wait.
 *
 * The kernel already gives edge-triggered events, one per registration
 * per epoll_wait(), DEL-is-final, MOD data and ONESHOT, and level-
 * triggered ones for a registration without EPOLLET (UEPOLL_CAP_LEVEL:
 * passed through as they are; nothing here depends on EPOLLET).  Its
 * events are epoll_wait()'s, polled at harvest (UEPOLL_CAP_POLLED_EVENTS).  What is added:
 * the userpoll rules (checked in uepoll.c) and the capacity n (ENOSPC),
 * kept with a count and an fd map under a mutex (ctl only; harvest and
 * wait take no lock).  Honest cost: every harvest is one
 * epoll_wait(fd, evs, max, 0) system call, even when nothing is ready.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "internal.h"

struct ep_priv {
	pthread_mutex_t lock;
	struct uepoll_aux *aux;	/* uepoll_ctl_batch() */
	struct fdmap map;
	unsigned count;
};

static int ep_probe(void)
{
	return 0;
}

static int ep_init(struct uepoll *u, unsigned n, unsigned flags)
{
	struct ep_priv *p = calloc(1, sizeof(*p));

	(void)n;
	if (!p)
		return -ENOMEM;
	p->aux = __uepoll_aux_new();
	if (!p->aux) {
		free(p);
		return -ENOMEM;
	}
	STAT_SYS(u);
	u->fd = epoll_create1((flags & UEPOLL_CLOEXEC) ? EPOLL_CLOEXEC : 0);
	if (u->fd < 0) {
		int err = -errno;

		__uepoll_aux_free(p->aux);
		free(p);
		return err;
	}
	pthread_mutex_init(&p->lock, NULL);
	u->priv = p;
	return 0;
}

static void ep_exit(struct uepoll *u)
{
	struct ep_priv *p = u->priv;

	__uepoll_aux_free(p->aux);
	close(u->fd);
	pthread_mutex_destroy(&p->lock);
	fdmap_free(&p->map);
	free(p);
}

/*
 * The map and the count after epoll_ctl(op, fd) answered ret (0 or
 * -errno), fd known or not before it: ret, or -ENOMEM (the registration
 * undone) if the map cannot grow.
 */
static int ep_account(struct uepoll *u, struct ep_priv *p, int op, int fd, int known, int ret)
{
	if (ret < 0) {
		/* registration gone with its file (close without DEL; the
		 * number free, EBADF, or another file's, ENOENT) */
		if (op != EPOLL_CTL_ADD && (ret == -ENOENT || ret == -EBADF) && known) {
			fdmap_set(&p->map, fd, -1);
			p->count--;
		}
		return ret;
	}
	if (op == EPOLL_CTL_ADD && !known) {
		if (fdmap_set(&p->map, fd, 1) < 0) {
			STAT_SYS(u);
			epoll_ctl(u->fd, EPOLL_CTL_DEL, fd, NULL);
			return -ENOMEM;
		}
		p->count++;
	} else if (op == EPOLL_CTL_DEL && known) {
		fdmap_set(&p->map, fd, -1);
		p->count--;
	}
	return 0;
}


/* ctl, caller holds p->lock */
static int ep_ctl_locked(struct uepoll *u, struct ep_priv *p, int op, int fd,
			 struct epoll_event *ev)
{
	int known = fdmap_get(&p->map, fd) >= 0;

	if (op == EPOLL_CTL_ADD && !known && p->count >= u->n) {
		/* full: the kernel's EBADF/EPERM/EINVAL still come first */
		int ret = __uepoll_fd_kind(u, fd);

		if (ret)
			return ret;
		return fd == u->fd ? -EINVAL : -ENOSPC;
	}
	STAT_SYS(u);
	return ep_account(u, p, op, fd, known,
			  epoll_ctl(u->fd, op, fd, ev) < 0 ? -errno : 0);
}

static int ep_ctl(struct uepoll *u, int op, int fd, struct epoll_event *ev)
{
	struct ep_priv *p = u->priv;
	int ret;

	pthread_mutex_lock(&p->lock);
	ret = ep_ctl_locked(u, p, op, fd, ev);
	pthread_mutex_unlock(&p->lock);
	return ret;
}

/*
 * A run of ch[0..): the library's checks of each change (results of the
 * failing ones set at once) and the epoll_ctl()s of the others queued in
 * q[], qi[] their indices; it stops before a change that may meet the
 * capacity (ENOSPC depends on the results before it) or whose fd the map
 * has no room for.  Returns the number of changes it covers.
 */
static unsigned ep_run(struct uepoll *u, struct ep_priv *p, struct uepoll_change *ch,
		       unsigned n, struct uepoll_aux_ctl *q, unsigned *qi, unsigned *nq)
{
	unsigned i, adds = 0;

	*nq = 0;
	for (i = 0; i < n && *nq < UEPOLL_AUX_MAX; i++) {
		struct uepoll_change *c = &ch[i];
		struct uepoll_aux_ctl *a = &q[*nq];
		int ret = __uepoll_ctl_check(u, c->op, c->fd, &c->ev, &a->ev, UEPOLL_KIND_UNKNOWN);

		if (ret) {
			c->res = ret;
			continue;
		}
		/* at most count + adds registrations before it: no ENOSPC below n */
		if ((c->op == EPOLL_CTL_ADD && p->count + adds >= u->n) ||
		    fdmap_reserve(&p->map, c->fd) < 0)
			break;
		a->epfd = u->fd;
		a->op = c->op;
		a->fd = c->fd;
		adds += c->op == EPOLL_CTL_ADD;
		qi[(*nq)++] = i;
	}
	return i;
}

/*
 * uepoll_ctl_batch(): runs of changes, each run's epoll_ctl()s in one
 * io_uring_enter() (batch.c), their results then applied to the map in
 * order as ep_ctl() applies each; a change a run stopped at (capacity,
 * memory) is applied alone, as ep_ctl() does.
 */
static int ep_batch_sleep(struct uepoll *u, struct uepoll_change *ch, unsigned n,
			  struct uepoll_aux_sleep *sl)
{
	struct ep_priv *p = u->priv;
	struct uepoll_aux_ctl q[UEPOLL_AUX_MAX];
	unsigned qi[UEPOLL_AUX_MAX], i = 0, k, nq, run;
	int res[UEPOLL_AUX_MAX];

	if (sl)
		sl->ret = 0;
	pthread_mutex_lock(&p->lock);
	while (i < n) {
		run = ep_run(u, p, ch + i, n - i, q, qi, &nq);
		/* the last run carries the sleep (it releases p->lock for it) */
		__uepoll_aux_epoll_ctl(u, p->aux, q, res, nq, i + run == n ? sl : NULL);
		for (k = 0; k < nq; k++) {
			int known = fdmap_get(&p->map, q[k].fd) >= 0;

			ch[i + qi[k]].res = ep_account(u, p, q[k].op, q[k].fd, known, res[k]);
		}
		i += run;
		if (i < n && nq < UEPOLL_AUX_MAX) {
			/* stopped at ch[i]: alone, as ctl */
			struct uepoll_change *c = &ch[i];
			struct epoll_event e;

			c->res = __uepoll_ctl_check(u, c->op, c->fd, &c->ev, &e, UEPOLL_KIND_UNKNOWN);
			if (!c->res)
				c->res = ep_ctl_locked(u, p, c->op, c->fd,
						       c->op == EPOLL_CTL_DEL ? NULL : &e);
			i++;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static int ep_batch(struct uepoll *u, struct uepoll_change *ch, unsigned n)
{
	return ep_batch_sleep(u, ch, n, NULL);
}

/*
 * uepoll_ctl_wait(): where the kernel has IORING_OP_EPOLL_WAIT (6.15),
 * the changes and an epoll_wait() of the instance are one
 * io_uring_enter() (batch.c), with epoll's own semantics, level-triggered
 * included: the wait runs after the ctls.  Elsewhere (sl.ret 0) the
 * changes went as a batch, and uepoll_wait() follows.
 */
static int ep_ctl_sleep(struct uepoll *u, struct uepoll_change *ch, unsigned n,
			struct epoll_event *evs, int max, int timeout_ms)
{
	struct ep_priv *p = u->priv;
	struct uepoll_aux_sleep sl = {
		.drop = &p->lock, .fd = u->fd, .timeout_ms = timeout_ms, .evs = evs, .max = max,
	};
	int ret = ep_batch_sleep(u, ch, n, &sl);

	if (ret < 0)
		return ret;
	if (!sl.ret)
		return 0;
	HSTAT(u, harvests, 1);
	HSTAT(u, sleeps, 1);
	if (sl.nev > 0) {
		HSTAT(u, events, (uint64_t)sl.nev);
		return sl.nev;
	}
	return sl.ret < 0 ? sl.ret : 0;
}

static int ep_wait(struct uepoll *u, struct epoll_event *evs, int max, int timeout_ms)
{
	int ret;

	STAT_SYS(u);
	HSTAT(u, harvests, 1);
	if (timeout_ms)
		HSTAT(u, sleeps, 1);
	ret = epoll_wait(u->fd, evs, max, timeout_ms);
	if (ret < 0)
		return -errno;
	if (ret)
		HSTAT(u, events, (uint64_t)ret);
	return ret;
}

static int ep_harvest(struct uepoll *u, struct epoll_event *evs, int max)
{
	return ep_wait(u, evs, max, 0);
}

const struct uepoll_ops __uepoll_epoll_ops __hidden = {
	.name = "epoll",
	.checks = UEPOLL_CHECKS_EPOLL,
	/* epoll_wait() polls every event it reports, and LT is epoll's */
	.caps = UEPOLL_CAP_LEVEL | UEPOLL_CAP_POLLED_EVENTS,
	.probe = ep_probe,
	.init = ep_init,
	.exit = ep_exit,
	.ctl = ep_ctl,
	.batch = ep_batch,
	.ctl_sleep = ep_ctl_sleep,
	.harvest = ep_harvest,
	.wait = ep_wait,
};
