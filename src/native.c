// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * native.c - EPOLL_USERPOLL backend (patched kernel, see uepoll(7)).
 *
 * Not implemented yet: the probe recognises a patched kernel by its
 * feature file (never by calling syscall 463, which is setxattrat() from
 * Linux 6.13 on) and the backend reports itself unavailable with ENOSYS
 * in every case.  The consumer already lives in uepoll_harvest() (inline,
 * uepoll.h); init will map the rings and set u->hdr/index/index_mask/
 * nitems, sleep will be epoll_wait(fd, NULL, 0, timeout) with ESTALE.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "internal.h"

/* 1 if the running kernel has EPOLL_USERPOLL, 0 if not */
static int native_feature(void)
{
	char c = 0;
	int fd = open(UEPOLL_FEATURE_FILE, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	return c == '1';
}

static int native_probe(void)
{
	/* kernel without the feature: ENOSYS; with it: not built yet, ENOSYS */
	(void)native_feature();
	return -ENOSYS;
}

static int native_init(struct uepoll *u, unsigned n, unsigned flags)
{
	(void)u; (void)n; (void)flags;
	return native_probe();
}

static void native_exit(struct uepoll *u) { (void)u; }

static int native_ctl(struct uepoll *u, int op, int fd, struct epoll_event *ev)
{
	(void)u; (void)op; (void)fd; (void)ev;
	return -ENOSYS;
}

static int native_harvest(struct uepoll *u, struct epoll_event *evs, int max)
{
	(void)u; (void)evs; (void)max;
	return -ENOSYS;
}

static int native_sleep(struct uepoll *u, int timeout_ms)
{
	(void)u; (void)timeout_ms;
	return -ENOSYS;
}

const struct uepoll_ops __uepoll_native_ops = {
	.name = "native",
	.id = UEPOLL_BACKEND_NATIVE,
	.probe = native_probe,
	.init = native_init,
	.exit = native_exit,
	.ctl = native_ctl,
	.harvest = native_harvest,
	.sleep = native_sleep,
};
