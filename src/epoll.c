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
	STAT_SYS(u);
	u->fd = epoll_create1((flags & UEPOLL_CLOEXEC) ? EPOLL_CLOEXEC : 0);
	if (u->fd < 0) {
		int err = -errno;

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

	close(u->fd);
	pthread_mutex_destroy(&p->lock);
	fdmap_free(&p->map);
	free(p);
}

static int ep_ctl(struct uepoll *u, int op, int fd, struct epoll_event *ev)
{
	struct ep_priv *p = u->priv;
	int ret = 0, known;

	pthread_mutex_lock(&p->lock);
	known = fdmap_get(&p->map, fd) >= 0;
	if (op == EPOLL_CTL_ADD && !known && p->count >= u->n) {
		/* full: the kernel's EBADF/EPERM/EINVAL still come first */
		struct stat st;

		STAT_SYS(u);
		if (fstat(fd, &st) < 0)
			ret = -EBADF;
		else if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
			ret = -EPERM;
		else if (fd == u->fd)
			ret = -EINVAL;
		else
			ret = -ENOSPC;
		goto out;
	}
	STAT_SYS(u);
	if (epoll_ctl(u->fd, op, fd, ev) < 0) {
		ret = -errno;
		/* registration gone with its file (close without DEL) */
		if (op == EPOLL_CTL_DEL && ret == -ENOENT && known) {
			fdmap_set(&p->map, fd, -1);
			p->count--;
		}
		goto out;
	}
	if (op == EPOLL_CTL_ADD && !known) {
		if (fdmap_set(&p->map, fd, 1) < 0) {
			epoll_ctl(u->fd, EPOLL_CTL_DEL, fd, NULL);
			ret = -ENOMEM;
			goto out;
		}
		p->count++;
	} else if (op == EPOLL_CTL_DEL && known) {
		fdmap_set(&p->map, fd, -1);
		p->count--;
	}
out:
	pthread_mutex_unlock(&p->lock);
	return ret;
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
	.harvest = ep_harvest,
	.wait = ep_wait,
};
