// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * native.c - EPOLL_USERPOLL backend (patched kernel, see uepoll(7)).
 *
 * Detection: the procfs feature file only (UEPOLL_FEATURE_FILE reads "1");
 * syscall 463 is setxattrat() from Linux 6.13 on, so it is never issued
 * unless the kernel said it has epoll_create2().
 *
 * Setup: epoll_create2(EPOLL_USERPOLL [| EPOLL_CLOEXEC], n), then the
 * header+items (offset 0, header_length) and the index ring (offset
 * header_length, index_length) are mapped as uepoll(7) says, and magic,
 * lengths and max_items_nr checked (-EPROTO on a mismatch, nothing kept).
 *
 * Harvest: the consumer of doc/PROTOCOL.md section 5, inline in
 * uepoll_harvest() (uepoll.h), no system call unless the kernel's repoll
 * hint (C7) asks for one epoll_wait(fd, NULL, 0, 0) first: keyless
 * wake-ups are polled there, in our context (__uepoll_repoll()).
 * Wait: the generic loop of uepoll.c: harvest, spin on the tail
 * (native_ready, u->spin checks, uepoll_set_spin(3)), then native_sleep:
 * epoll_wait(fd, NULL, 0, t), whose ESTALE means "harvest again".
 * ctl: epoll_ctl() on the uepoll fd, the kernel's errors are the errors.
 *
 * fork(): the kernel maps the rings VM_DONTCOPY, so a child has no
 * mapping, unless the process applied madvise(MADV_DOFORK) to it: then
 * the child has its own view of the parent's ring, the same pages.  Either
 * way a pthread_atfork() child handler clears u->hdr/u->index of every
 * live native instance (the inline harvest then takes the slow path: the
 * child never reads, let alone consumes, the parent's ring) and marks it
 * forked: ctl, harvest and wait then fail with -ECHILD in the child.  The
 * handler also notes which regions the child inherited whole; at that
 * moment (in fork(), before any code of the child but the fork handlers
 * registered before ours) the range holds either the inherited mapping or
 * the hole VM_DONTCOPY left, nothing the child mapped.  uepoll_exit() in the
 * child closes the child's fd and unmaps those inherited regions (the
 * child's own mappings: the parent's are untouched, and the child stops
 * pinning the instance), never anything else: a hole may hold a mapping
 * the child made since, perhaps another instance's ring.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

/* the layout the inline consumer relies on (uepoll(7)) */
_Static_assert(sizeof(struct epoll_uheader) == EPOLL_USERPOLL_HEADER_SIZE,
	       "the header is 128 bytes");
_Static_assert(offsetof(struct epoll_uheader, repoll) == 24 &&
	       offsetof(struct epoll_uheader, tail) == 20,
	       "repoll (C7) follows tail (C1): one cache line, one load");
/* struct uepoll embeds the counters: a new one takes a reserved word */
_Static_assert(sizeof(struct uepoll_stats) == 16 * sizeof(uint64_t),
	       "struct uepoll_stats keeps its size");

struct native_priv {
	struct uepoll *u;
	struct native_priv *prev, *next;	/* live instances (fork handling) */
	void *hmap, *imap;
	size_t hlen, ilen;
	int forked;			/* set in a fork()ed child */
	int inherited;			/* child: regions it had at fork, whole (1 hmap, 2 imap) */
};

/* live native instances, for the atfork child handler */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct native_priv *live;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_prepare(void) { pthread_mutex_lock(&live_lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&live_lock); }

/* 1 if all of [a, a + len) is mapped; no side effect (MS_ASYNC only checks) */
static int range_mapped(void *a, size_t len)
{
	return msync(a, len, MS_ASYNC) == 0;
}

static void atfork_child(void)
{
	int saved_errno = errno;
	struct native_priv *p;

	for (p = live; p; p = p->next) {
		/* what the child inherited; a child's child keeps the child's
		 * answer (where the child had a hole it may have mapped its own) */
		if (!p->forked)
			p->inherited = range_mapped(p->hmap, p->hlen) |
				       range_mapped(p->imap, p->ilen) << 1;
		p->forked = 1;
		/* gone (VM_DONTCOPY) or the parent's ring (MADV_DOFORK): either
		 * way the inline path must not touch it: make it slow */
		p->u->hdr = NULL;
		p->u->index = NULL;
	}
	errno = saved_errno;
	pthread_mutex_unlock(&live_lock);
}

static void atfork_register(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

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
	return native_feature() ? 0 : -ENOSYS;
}

static size_t page_align(size_t v, size_t ps)
{
	return (v + ps - 1) & ~(ps - 1);
}

static size_t roundup_pow2(size_t v)
{
	size_t r = 1;

	while (r < v)
		r <<= 1;
	return r;
}

/* map both regions of fd and check them; 0 or -errno, nothing kept on error */
static int native_map(struct uepoll *u, struct native_priv *p, unsigned n)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	struct epoll_uheader *h;
	uint32_t magic, hlen, ilen, max;
	void *m;
	int err;

	STAT_SYS(u);
	h = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_SHARED, u->fd, 0);
	if (h == MAP_FAILED)
		return -errno;
	/* written once by the kernel before epoll_create2() returned */
	magic = uepoll_hdr_read_once(&h->magic);
	hlen = uepoll_hdr_read_once(&h->header_length);
	ilen = uepoll_hdr_read_once(&h->index_length);
	max = uepoll_hdr_read_once(&h->max_items_nr);
	STAT_SYS(u);
	munmap(h, ps);
	if (magic != EPOLL_USERPOLL_HEADER_MAGIC || max != n ||
	    hlen != page_align(EPOLL_USERPOLL_HEADER_SIZE +
			       (size_t)n * sizeof(struct epoll_uitem), ps) ||
	    ilen != page_align(roundup_pow2((size_t)n * 4), ps) ||
	    (ilen & (ilen - 1)))
		return -EPROTO;

	STAT_SYS(u);
	m = mmap(NULL, hlen, PROT_READ | PROT_WRITE, MAP_SHARED, u->fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	p->hmap = m;
	p->hlen = hlen;
	STAT_SYS(u);
	m = mmap(NULL, ilen, PROT_READ | PROT_WRITE, MAP_SHARED, u->fd, (off_t)hlen);
	if (m == MAP_FAILED) {
		err = -errno;
		munmap(p->hmap, p->hlen);
		p->hmap = NULL;
		return err;
	}
	p->imap = m;
	p->ilen = ilen;
	h = p->hmap;
	/* the whole mapping again: the header must not have changed */
	if (uepoll_hdr_read_once(&h->magic) != magic ||
	    uepoll_hdr_read_once(&h->header_length) != hlen ||
	    uepoll_hdr_read_once(&h->index_length) != ilen ||
	    uepoll_hdr_read_once(&h->max_items_nr) != max) {
		munmap(p->imap, p->ilen);
		munmap(p->hmap, p->hlen);
		p->hmap = p->imap = NULL;
		return -EPROTO;
	}
	return 0;
}

static int native_init(struct uepoll *u, unsigned n, unsigned flags)
{
	struct native_priv *p;
	int ret, fd;

	ret = native_probe();
	if (ret)
		return ret;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	STAT_SYS(u);
	fd = (int)syscall(UEPOLL_NR_epoll_create2,
			  EPOLL_USERPOLL | ((flags & UEPOLL_CLOEXEC) ? EPOLL_CLOEXEC : 0),
			  (unsigned long)n);
	if (fd < 0) {
		ret = -errno;
		free(p);
		return ret;
	}
	u->fd = fd;
	ret = native_map(u, p, n);
	if (ret) {
		close(fd);
		u->fd = -1;
		free(p);
		return ret;
	}
	p->u = u;
	pthread_once(&atfork_once, atfork_register);
	pthread_mutex_lock(&live_lock);
	p->next = live;
	if (live)
		live->prev = p;
	live = p;
	pthread_mutex_unlock(&live_lock);

	u->priv = p;
	u->index = p->imap;
	u->index_mask = (uint32_t)(p->ilen / sizeof(uint32_t) - 1);
	u->nitems = n;
	u->head = uepoll_hdr_read_once(&((struct epoll_uheader *)p->hmap)->head);
	u->hdr = p->hmap;	/* last: enables the inline consumer */
	return 0;
}

static void native_exit(struct uepoll *u)
{
	struct native_priv *p = u->priv;
	int unmap;

	pthread_mutex_lock(&live_lock);
	if (p->prev)
		p->prev->next = p->next;
	else
		live = p->next;
	if (p->next)
		p->next->prev = p->prev;
	pthread_mutex_unlock(&live_lock);
	/* in a fork()ed child, only what it inherited (MADV_DOFORK): the rest
	 * of the range is not ours there */
	unmap = p->forked ? p->inherited : 3;
	if (unmap & 2)
		munmap(p->imap, p->ilen);
	if (unmap & 1)
		munmap(p->hmap, p->hlen);
	close(u->fd);
	free(p);
}

static int native_ctl(struct uepoll *u, int op, int fd, struct epoll_event *ev)
{
	struct native_priv *p = u->priv;

	if (p->forked)
		return -ECHILD;
	STAT_SYS(u);
	if (epoll_ctl(u->fd, op, fd, ev) < 0)
		return -errno;
	return 0;
}

/* only reached when the inline consumer is off: a fork()ed child */
static int native_harvest(struct uepoll *u, struct epoll_event *evs, int max)
{
	struct native_priv *p = u->priv;

	(void)evs; (void)max;
	return p->forked ? -ECHILD : -EINVAL;
}

/* sleep until the ring has entries (ESTALE: 0, harvest again) or timeout */
static int native_sleep(struct uepoll *u, int timeout_ms)
{
	struct native_priv *p = u->priv;

	if (p->forked)
		return -ECHILD;
	STAT_SYS(u);
	if (epoll_wait(u->fd, NULL, 0, timeout_ms) < 0) {
		if (errno == ESTALE) {
			HSTAT(u, estale, 1);
			return 0;
		}
		return -errno;
	}
	return 0;
}

/*
 * The inline harvest saw the repoll hint (C7): registrations had keyless
 * wake-ups, which the kernel polls only in epoll_wait(fd, NULL, 0, t), in
 * the caller's context.  One such call, timeout 0; then the harvest reads
 * the tail (C1) and takes what it pushed.  ESTALE (the ring has entries)
 * and 0 (nothing came of it) are success; any other error is returned as
 * native_sleep() returns it.  Not a flag the spin test looks at: a word
 * stuck at 1 (scribbled) would turn uepoll_wait()'s spin into a loop of
 * system calls; the sleep that follows polls the registrations anyway.
 */
UEPOLL_API int __uepoll_repoll(struct uepoll *u)
{
	int saved_errno = errno, ret = 0;

	HSTAT(u, repolls, 1);
	STAT_SYS(u);
	if (epoll_wait(u->fd, NULL, 0, 0) < 0 && errno != ESTALE)
		ret = -errno;
	errno = saved_errno;
	return ret;
}

/* the spin test: a new tail means entries (C1 pairs with K3) */
static int native_ready(struct uepoll *u)
{
	return uepoll_tail_acquire(u->hdr) != u->head;
}

const struct uepoll_ops __uepoll_native_ops __hidden = {
	.name = "native",
	.checks = UEPOLL_CHECKS_ALL,
	/* the kernel refuses LT; the ring has the bits of the wake-ups */
	.caps = 0,
	.probe = native_probe,
	.init = native_init,
	.exit = native_exit,
	.ctl = native_ctl,
	.harvest = native_harvest,
	.sleep = native_sleep,
	.ready = native_ready,
};
