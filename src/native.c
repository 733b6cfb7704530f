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
 * Level-triggered registrations (no EPOLLET; the kernel ring reports edges
 * only, uepoll(7)) live in a plain epoll instance of their own, the level
 * epoll, created at init (an ADD must not meet EMFILE) and registered in the ring
 * (EPOLLIN | EPOLLET, data UEPOLL_LEVEL_DATA): epoll keeps them ready and
 * polls them at its epoll_wait(), exactly as epoll(7) has it.  The ring
 * entry of the level epoll says "it had a wake-up"; the inline harvest
 * then ends with __uepoll_level(): one epoll_wait(level, evs, max, 0).
 * A level-triggered item that epoll_wait() returned is put back on
 * epoll's ready list without a wake-up, so while the last call returned
 * level-triggered events the next harvest calls again (u->level), until a
 * call returns none of them, or uepoll_drained(3) said each of them is
 * drained: one system call per harvest while something stays ready, as
 * epoll_wait(2) makes, none once drained and none while idle.  A wait
 * that would sleep asks in its sleep's system call instead
 * (native_level_sleep(), native_ctl_sleep()).  A
 * registration whose data is UEPOLL_LEVEL_DATA goes there too (as
 * edge-triggered, epoll does that as well), so the value means the level
 * epoll alone in the ring.  In the level epoll a registration's data is
 * (generation << 32) | fd, translated back to the caller's under p->lock,
 * which ctl holds too: an event of a registration deleted or replaced
 * meanwhile is dropped (its generation changed).  The library keeps which
 * fd is where (ring or level epoll), so ADD, MOD and DEL go to the right
 * instance; a MOD between level- and edge-triggered is a DEL there and an
 * ADD here (which reports the readiness present then).  Capacity: the
 * ring's n slots hold the edge-triggered registrations and, while it
 * exists, the level epoll; the library counts both kinds against n.
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
#include <string.h>
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

/* where a registration lives (the value in p->map) */
enum { IN_RING = 0, IN_LEVEL = 1 };

/* a registration of the level epoll (p->lr[fd]) */
struct lreg {
	uint64_t data;		/* the caller's */
	uint32_t events;	/* as registered */
	uint32_t gen;		/* bumped at ADD and DEL: stale events dropped */
	uint32_t stamp;		/* the __uepoll_level() call that reported it last */
	uint32_t hinted;	/* uepoll_drained() since that call */
	uint32_t kstamp;	/* kernel level: the note it was hinted against */
};

/* kernel level: a level-triggered event of the last harvest (__uepoll_level_note()) */
#define LEVEL_NOTES 64
struct lnote {
	uint64_t data;
	int hinted;
};

struct native_priv {
	struct uepoll *u;
	pthread_mutex_t lock;		/* ctl, the level epoll, the map */
	struct fdmap map;		/* fd -> IN_RING / IN_LEVEL */
	struct lreg *lr;		/* by fd */
	unsigned lrcap;
	unsigned nring, nlevel;		/* registrations, each kind */
	int lfd;			/* the level epoll, -1 */
	uint32_t lstamp;		/* __uepoll_level() calls */
	unsigned unhinted;		/* level-triggered ones it reported, not hinted since */
	int folded;			/* a sleep asked the level epoll since the last call */
	int stuck;			/* ... and that call found only what the one before had */
	int klevel;			/* EPOLL_USERPOLL_LEVEL: level-triggered ones in the ring */
	uint32_t kstamp;		/* kernel level: __uepoll_level_note() calls */
	unsigned kunhinted;		/* ... the events it noted, not hinted drained since */
	unsigned nnotes;		/* ... of which the first LEVEL_NOTES are in notes[] */
	struct lnote notes[LEVEL_NOTES];
	unsigned lazy_skips;		/* harvests that left the kernel's polls (uepoll_set_lazy_poll()) */
	struct native_priv *prev, *next;	/* live instances (fork handling) */
	void *hmap, *imap;
	size_t hlen, ilen;
	int forked;			/* set in a fork()ed child */
	struct uepoll_aux *aux;		/* uepoll_ctl_batch() */
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

static int level_open(struct uepoll *u, struct native_priv *p);

/*
 * epoll_create2(): with EPOLL_USERPOLL_LEVEL where the kernel has it (the
 * kernel polls the level-triggered registrations again itself, uepoll(7)),
 * else without (EINVAL: the level epoll holds them).  UEPOLL_NATIVE_LEVEL=
 * epoll asks for the level epoll on any kernel (tests of both designs).
 * The fd, or -1 with errno set.
 */
static int native_create(struct uepoll *u, struct native_priv *p, unsigned n, unsigned flags)
{
	int cl = (flags & UEPOLL_CLOEXEC) ? EPOLL_CLOEXEC : 0, fd;
	const char *e = getenv("UEPOLL_NATIVE_LEVEL");

	if (!e || strcmp(e, "epoll")) {
		STAT_SYS(u);
		fd = (int)syscall(UEPOLL_NR_epoll_create2,
				  EPOLL_USERPOLL | EPOLL_USERPOLL_LEVEL | cl, (unsigned long)n);
		if (fd >= 0 || errno != EINVAL) {
			p->klevel = fd >= 0;
			return fd;
		}
	}
	STAT_SYS(u);
	return (int)syscall(UEPOLL_NR_epoll_create2, EPOLL_USERPOLL | cl, (unsigned long)n);
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
	p->aux = __uepoll_aux_new();
	if (!p->aux) {
		free(p);
		return -ENOMEM;
	}
	p->lfd = -1;
	fd = native_create(u, p, n, flags);
	if (fd < 0) {
		ret = -errno;
		__uepoll_aux_free(p->aux);
		free(p);
		return ret;
	}
	u->fd = fd;
	ret = native_map(u, p, n);
	if (ret) {
		close(fd);
		u->fd = -1;
		__uepoll_aux_free(p->aux);
		free(p);
		return ret;
	}
	p->u = u;
	pthread_mutex_init(&p->lock, NULL);
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
	/*
	 * The level epoll now, while the process has a descriptor to give: a
	 * level-triggered ADD must not fail with EMFILE where epoll_ctl()
	 * never does (a server at its RLIMIT_NOFILE; libevent's listener and
	 * DNS tests).  Closed again if the ring needs its slot (level_close()),
	 * made again at the next level-triggered ADD; failing here is not
	 * an error.  Not with the kernel's level-triggered registrations: then
	 * only a registration whose data is UEPOLL_LEVEL_DATA goes there.
	 */
	if (!p->klevel) {
		pthread_mutex_lock(&p->lock);
		(void)level_open(u, p);
		pthread_mutex_unlock(&p->lock);
	}
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
	if (p->lfd >= 0)
		close(p->lfd);
	/* in a child, the ring the parent set up for its batches is the
	 * parent's too (a shared mapping): the child only drops its copy */
	__uepoll_aux_free(p->aux);
	pthread_mutex_destroy(&p->lock);
	fdmap_free(&p->map);
	free(p->lr);
	free(p);
}

/* where a registration with event ev goes */
static int where_of(const struct native_priv *p, const struct epoll_event *ev)
{
	if (ev->data.u64 == UEPOLL_LEVEL_DATA)
		return IN_LEVEL;
	if (ev->events & EPOLLET)
		return IN_RING;
	/* the ring refuses EPOLLEXCLUSIVE; epoll takes it level-triggered */
	return p->klevel && !(ev->events & EPOLLEXCLUSIVE) ? IN_RING : IN_LEVEL;
}

/* MOD stays where fd is: an exclusive one, so that epoll says EINVAL */
static int mod_where(const struct native_priv *p, int cur, int fd, const struct epoll_event *ev)
{
	if (cur == IN_LEVEL && (p->lr[fd].events & EPOLLEXCLUSIVE))
		return IN_LEVEL;
	return where_of(p, ev);
}

/* one epoll_ctl(): 0 or -errno */
static int kctl(struct uepoll *u, int epfd, int op, int fd, struct epoll_event *ev)
{
	STAT_SYS(u);
	return epoll_ctl(epfd, op, fd, ev) < 0 ? -errno : 0;
}

/* room for fd in p->lr and p->map: 0 or -ENOMEM */
static int lr_reserve(struct native_priv *p, int fd)
{
	unsigned cap = p->lrcap ? p->lrcap : 64;
	struct lreg *v;

	if (fdmap_reserve(&p->map, fd) < 0)
		return -ENOMEM;
	if ((unsigned)fd < p->lrcap)
		return 0;
	while (cap <= (unsigned)fd)
		cap *= 2;
	v = realloc(p->lr, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memset(v + p->lrcap, 0, (cap - p->lrcap) * sizeof(*v));
	p->lr = v;
	p->lrcap = cap;
	return 0;
}

/* the event the level epoll holds for fd: the caller's, with our data */
static struct epoll_event level_event(struct native_priv *p, int fd, const struct epoll_event *ev)
{
	struct epoll_event e;

	e.events = ev->events;
	e.data.u64 = (uint64_t)p->lr[fd].gen << 32 | (uint32_t)fd;
	return e;
}

/* fd no longer counts among the level-triggered ones reported unhinted */
static void lr_unreport(struct native_priv *p, int fd)
{
	struct lreg *l = &p->lr[fd];

	if (l->stamp == p->lstamp && l->stamp && !l->hinted)
		p->unhinted--;
	l->stamp = 0;
}

/* the level epoll, created and put in the ring (at init; again after level_close()) */
static int level_open(struct uepoll *u, struct native_priv *p)
{
	struct epoll_event e = { .events = EPOLLIN | EPOLLET, .data.u64 = UEPOLL_LEVEL_DATA };
	int ret;

	if (p->lfd >= 0)
		return 0;
	STAT_SYS(u);
	p->lfd = epoll_create1((u->flags & UEPOLL_CLOEXEC) ? EPOLL_CLOEXEC : 0);
	if (p->lfd < 0)
		return -errno;
	ret = kctl(u, u->fd, EPOLL_CTL_ADD, p->lfd, &e);
	if (ret) {
		close(p->lfd);
		p->lfd = -1;
	}
	return ret;
}

/*
 * ... and closed when the ring needs its slot and no registration is left
 * in it (kept otherwise: a server whose one level-triggered connection
 * comes and goes would make and close it each time)
 */
static void level_close(struct uepoll *u, struct native_priv *p)
{
	if (p->lfd < 0 || p->nlevel)
		return;
	kctl(u, u->fd, EPOLL_CTL_DEL, p->lfd, NULL);
	STAT_SYS(u);
	close(p->lfd);
	p->lfd = -1;
	p->unhinted = 0;
}

/* the bookkeeping after a successful ADD of fd to w (map room reserved) */
static void added(struct native_priv *p, int w, int fd, const struct epoll_event *ev)
{
	fdmap_set(&p->map, fd, w);
	p->lr[fd].data = ev->data.u64;
	p->lr[fd].events = ev->events;
	if (w == IN_RING) {
		p->lr[fd].kstamp = 0;
		p->nring++;
		return;
	}
	p->lr[fd].stamp = 0;
	p->nlevel++;
}

static void kernel_drained(struct native_priv *p, int fd, uint32_t events);

/* ... after a DEL of fd from w (done, or the registration gone with its file) */
static void removed(struct native_priv *p, int w, int fd)
{
	fdmap_set(&p->map, fd, -1);
	if (w == IN_RING) {
		/* gone: its event of the last harvest needs no question */
		if (p->klevel)
			kernel_drained(p, fd, p->lr[fd].events);
		p->nring--;
		return;
	}
	lr_unreport(p, fd);
	p->lr[fd].gen++;
	p->nlevel--;
}

/* ADD of fd, not registered, to w */
static int add_to(struct uepoll *u, struct native_priv *p, int w, int fd, struct epoll_event *ev)
{
	struct epoll_event e;
	int ret = lr_reserve(p, fd);

	if (ret)
		return ret;
	if (w == IN_RING) {
		ret = kctl(u, u->fd, EPOLL_CTL_ADD, fd, ev);
		if (ret == -ENOSPC && p->lfd >= 0 && !p->nlevel) {
			level_close(u, p);	/* its slot was the one missing */
			ret = kctl(u, u->fd, EPOLL_CTL_ADD, fd, ev);
		}
	} else {
		ret = level_open(u, p);
		if (ret)
			return ret;
		p->lr[fd].gen++;
		e = level_event(p, fd, ev);
		ret = kctl(u, p->lfd, EPOLL_CTL_ADD, fd, &e);
	}
	if (!ret)
		added(p, w, fd, ev);
	return ret;
}

/* DEL of fd from w; ENOENT, EBADF: it went with its file (closed) */
static int del_from(struct uepoll *u, struct native_priv *p, int w, int fd)
{
	int ret = kctl(u, w == IN_RING ? u->fd : p->lfd, EPOLL_CTL_DEL, fd, NULL);

	if (ret && ret != -ENOENT && ret != -EBADF)
		return ret;
	removed(p, w, fd);
	return ret;
}

/*
 * The ring's entry for the level epoll, as ADD made it: a MOD of it makes
 * the ring poll the level epoll again and push the entry if anything is
 * ready there (K7, uepoll(7)).  A MOD in the level epoll of a registration
 * that epoll still holds on its ready list (a level-triggered one it
 * returned, put back) wakes nobody: epoll_modify() queues and wakes only
 * an item not queued yet.  Without this, the harvest would not ask the
 * level epoll again (the registration's report was replaced by the MOD,
 * or said drained) and the MOD's readiness would wait for a wake-up.
 */
static void level_repoll(struct uepoll *u, struct native_priv *p)
{
	struct epoll_event e = { .events = EPOLLIN | EPOLLET, .data.u64 = UEPOLL_LEVEL_DATA };

	kctl(u, u->fd, EPOLL_CTL_MOD, p->lfd, &e);
}

/* the bookkeeping after a successful MOD of fd in w (or an ADD replacing it) */
static void reregistered(struct uepoll *u, struct native_priv *p, int w, int fd,
			 const struct epoll_event *ev)
{
	p->lr[fd].data = ev->data.u64;
	p->lr[fd].events = ev->events;
	p->lr[fd].kstamp = 0;
	if (w == IN_LEVEL) {
		lr_unreport(p, fd);
		if (u)
			level_repoll(u, p);
	}
}

/* MOD of fd, registered in w, staying there */
static int mod_in(struct uepoll *u, struct native_priv *p, int w, int fd, struct epoll_event *ev)
{
	struct epoll_event e;
	int ret;

	if (w == IN_RING) {
		ret = kctl(u, u->fd, EPOLL_CTL_MOD, fd, ev);
	} else {
		e = level_event(p, fd, ev);
		ret = kctl(u, p->lfd, EPOLL_CTL_MOD, fd, &e);
	}
	if (ret == -ENOENT || ret == -EBADF)
		removed(p, w, fd);	/* it went with its file */
	if (!ret)
		reregistered(u, p, w, fd, ev);
	return ret;
}

/*
 * ADD of fd that the map has in w: EEXIST if the kernel still has it;
 * but where the fd was closed (the registration went with the file) and
 * the number reused, the kernel takes the ADD: then the registration is
 * the new file's, moved to where ev puts it (a DEL and an ADD).  -ENOENT:
 * the kernel said EBADF, the map forgets fd, the caller adds anew.
 */
static int add_known(struct uepoll *u, struct native_priv *p, int w, int fd,
		     struct epoll_event *ev)
{
	struct epoll_event e = *ev;
	int ret;

	if (w == IN_RING) {
		if (!p->klevel)
			e.events |= EPOLLET;
		ret = kctl(u, u->fd, EPOLL_CTL_ADD, fd, &e);
	} else {
		/* a new generation for the new file; the old one kept if the
		 * registration is still there (EEXIST) */
		p->lr[fd].gen++;
		e = level_event(p, fd, ev);
		ret = kctl(u, p->lfd, EPOLL_CTL_ADD, fd, &e);
		if (ret)
			p->lr[fd].gen--;
	}
	if (ret == -EBADF) {
		removed(p, w, fd);
		return -ENOENT;
	}
	if (ret)
		return ret;
	/* the old registration went with its file: the new one is in w,
	 * in the old one's place (the count unchanged) */
	reregistered(NULL, p, w, fd, ev);
	if (where_of(p, ev) == w)
		return 0;
	ret = del_from(u, p, w, fd);
	return ret ? ret : add_to(u, p, where_of(p, ev), fd, ev);
}

/*
 * MOD of fd the map does not have.  Usually the ring answers (EBADF,
 * EPERM, EINVAL, ENOENT in the kernel's order).  But a registration can
 * outlive a DEL that failed: DEL of a closed fd answers EBADF and the map
 * forgets it, yet epoll keeps the item while the file stays open through
 * another descriptor (a dup); dup2() of that file onto the number makes
 * the item valid again, an ADD answers EEXIST and epoll takes the MOD.
 * So does this: the ring's or the level epoll's item, adopted by the map,
 * then moved where ev puts it if it is elsewhere (libevent's dup_fd test:
 * ADD -> EEXIST -> MOD must succeed).
 */
static int mod_lingering(struct uepoll *u, struct native_priv *p, int fd, struct epoll_event *ev)
{
	struct epoll_event e = *ev;
	int w = IN_RING, ret;

	if (!p->klevel)
		e.events |= EPOLLET;
	ret = kctl(u, u->fd, EPOLL_CTL_MOD, fd, &e);
	if (ret == -ENOENT && p->lfd >= 0) {
		ret = lr_reserve(p, fd);
		if (ret)
			return ret;
		p->lr[fd].gen++;
		e = level_event(p, fd, ev);
		ret = kctl(u, p->lfd, EPOLL_CTL_MOD, fd, &e);
		if (ret) {
			p->lr[fd].gen--;
			return ret;
		}
		w = IN_LEVEL;
	}
	if (ret)
		return ret;
	if (lr_reserve(p, fd) == 0)
		added(p, w, fd, ev);
	if (w == IN_LEVEL)
		level_repoll(u, p);
	if (where_of(p, ev) == w)
		return 0;
	ret = del_from(u, p, w, fd);
	return ret ? ret : add_to(u, p, where_of(p, ev), fd, ev);
}

/*
 * ctl, caller holds p->lock.  Not registered: the ring answers MOD and DEL
 * (EBADF, EPERM, EINVAL, ENOENT in the kernel's order); ADD checks the
 * capacity after the kernel's other checks (the fstat() only then).  A
 * MOD that moves a registration between the ring and the level epoll is
 * a DEL and an ADD; should the ADD fail, the registration is gone.
 */
static int native_ctl_locked(struct uepoll *u, struct native_priv *p, int op, int fd,
			     struct epoll_event *ev)
{
	int cur = fdmap_get(&p->map, fd), ret;

	switch (op) {
	case EPOLL_CTL_ADD:
		if (fd == u->fd)	/* the level epoll would say ELOOP */
			return -EINVAL;
		if (cur >= 0) {
			ret = add_known(u, p, cur, fd, ev);
			if (ret != -ENOENT)
				return ret;
			cur = -1;	/* it went with its file: a new one */
		}
		if (p->nring + p->nlevel >= u->n) {
			ret = __uepoll_fd_kind(u, fd);
			if (ret)
				return ret;
			if (fd == u->fd)
				return -EINVAL;
			return cur >= 0 ? -EEXIST : -ENOSPC;
		}
		return add_to(u, p, where_of(p, ev), fd, ev);
	case EPOLL_CTL_MOD:
		if (cur < 0)
			return mod_lingering(u, p, fd, ev);
		if (cur == mod_where(p, cur, fd, ev))
			return mod_in(u, p, cur, fd, ev);
		ret = del_from(u, p, cur, fd);
		if (ret)
			return ret;
		return add_to(u, p, where_of(p, ev), fd, ev);
	case EPOLL_CTL_DEL:
		if (cur < 0) {
			ret = kctl(u, u->fd, EPOLL_CTL_DEL, fd, NULL);
			return ret ? ret : -ENOENT;
		}
		return del_from(u, p, cur, fd);
	}
	return -EINVAL;
}

static int native_ctl(struct uepoll *u, int op, int fd, struct epoll_event *ev)
{
	struct native_priv *p = u->priv;
	int ret;

	if (p->forked)
		return -ECHILD;
	pthread_mutex_lock(&p->lock);
	ret = native_ctl_locked(u, p, op, fd, ev);
	pthread_mutex_unlock(&p->lock);
	return ret;
}

/*
 * A run of ch[0..) for one io_uring_enter(): the library's checks of each
 * change (the failing ones' results set at once) and the epoll_ctl()s of
 * the others queued in q[] for the instance their fd is in (qi[]: their
 * indices, qw[]: where), in order.  It stops before a change that is not
 * one epoll_ctl() whose answer the run can know in advance: an ADD that
 * may meet the capacity, an ADD or MOD that needs the level epoll made or
 * moves a registration, a second change of an fd of the run (its
 * instance depends on the first one's result), but for an ADD after
 * the run's DEL of the number (reused_number()).  A run with a MOD in the
 * level epoll ends with the ring's MOD of the level epoll (level_repoll(),
 * qi[] = NOT_A_CHANGE).  Returns the number of changes it covers.
 */
#define NOT_A_CHANGE	(~0u)

/* the ring's MOD of the level epoll (level_repoll()) at the end of a run */
static unsigned run_repoll(struct uepoll *u, struct native_priv *p, struct uepoll_aux_ctl *q,
			   unsigned *qi, int *qw, unsigned *nq)
{
	struct uepoll_aux_ctl *a = &q[*nq];

	a->epfd = u->fd;
	a->op = EPOLL_CTL_MOD;
	a->fd = p->lfd;
	a->ev.events = EPOLLIN | EPOLLET;
	a->ev.data.u64 = UEPOLL_LEVEL_DATA;
	qw[*nq] = IN_RING;
	qi[*nq] = NOT_A_CHANGE;
	return (*nq)++;
}

/*
 * A second change of an fd in one run: only an ADD after the run's DEL
 * of that number, what a server's deferred changes hold when it closed
 * a socket and accept() gave the number to the next one.  After the
 * DEL, whatever its answer (0, or ENOENT/EBADF for a file closed before
 * it), the number is registered nowhere: the ADD's place is known in
 * advance, it takes the place the DEL gave back (a DEL that fails
 * otherwise, EPERM for a file that cannot be polled, fails the ADD of
 * the same file too), and the results apply in order (removed(), then
 * added()).
 */
static int reused_number(const struct uepoll_aux_ctl *last, unsigned last_qi,
			 const struct uepoll_change *c)
{
	return last_qi != NOT_A_CHANGE && last->op == EPOLL_CTL_DEL && c->op == EPOLL_CTL_ADD;
}

/*
 * A second change of an fd in one run, after the run's ADD or MOD of it
 * in the ring: a MOD or a DEL, what deferred changes hold when a
 * server's passes enabled and disabled a socket's events before they
 * went to the kernel.  Its place is the one before it took (the ring),
 * and the kernel applies the chain in order: if the change before
 * failed, this one fails as epoll_ctl() would fail it then (ENOENT),
 * and the results apply in order (a removal only of what is mapped).
 */
static int follows_in_ring(const struct uepoll_aux_ctl *last, unsigned last_qi, int last_w,
			   const struct uepoll_change *c)
{
	return last_qi != NOT_A_CHANGE && last_w == IN_RING && last->op != EPOLL_CTL_DEL &&
	       c->op != EPOLL_CTL_ADD;
}

static unsigned native_run(struct uepoll *u, struct native_priv *p, struct uepoll_change *ch,
			   unsigned n, struct uepoll_aux_ctl *q, unsigned *qi, int *qw,
			   unsigned *nq)
{
	unsigned i, k, adds = 0, lmods = 0;

	*nq = 0;
	/* (one place kept for the level epoll's repoll) */
	for (i = 0; i < n && *nq < UEPOLL_AUX_MAX - 1; i++) {
		struct uepoll_change *c = &ch[i];
		struct uepoll_aux_ctl *a = &q[*nq];
		int ret = __uepoll_ctl_check(u, c->op, c->fd, &c->ev, &a->ev, UEPOLL_KIND_UNKNOWN);
		int cur, w;

		if (ret) {
			c->res = ret;
			continue;
		}
		/* the run's last change of this fd, if any */
		for (k = *nq; k > 0 && q[k - 1].fd != c->fd; k--)
			;
		if (c->fd == u->fd || lr_reserve(p, c->fd) < 0)
			break;
		if (k && !reused_number(&q[k - 1], qi[k - 1], c) &&
		    !follows_in_ring(&q[k - 1], qi[k - 1], qw[k - 1], c))
			break;
		cur = !k ? fdmap_get(&p->map, c->fd) :
		      q[k - 1].op == EPOLL_CTL_DEL ? -1 : qw[k - 1];
		w = c->op == EPOLL_CTL_DEL ? cur :
		    c->op == EPOLL_CTL_MOD ? mod_where(p, cur, c->fd, &a->ev) : where_of(p, &a->ev);
		/* (the level epoll's ADD bumps lr[].gen at once; its slot
		 * is not the ring's) */
		if (k && (w != IN_RING || qw[k - 1] != IN_RING))
			break;
		/* (a ring ADD that may need the level epoll's slot: alone;
		 * one after the run's DEL of its number takes that one's) */
		if (c->op == EPOLL_CTL_ADD && !k &&
		    (cur >= 0 || p->nring + p->nlevel + adds >= u->n ||
		     (w == IN_LEVEL && p->lfd < 0) ||
		     (w == IN_RING && p->lfd >= 0 && p->nring + adds + 1 >= u->n)))
			break;
		if (c->op != EPOLL_CTL_ADD && (cur < 0 || cur != w))
			break;
		if (w == IN_LEVEL) {
			if (c->op == EPOLL_CTL_ADD)
				p->lr[c->fd].gen++;
			a->ev = level_event(p, c->fd, &c->ev);
			a->ev.events = c->ev.events & ~(uint32_t)EPOLLWAKEUP;
		}
		a->epfd = w == IN_RING ? u->fd : p->lfd;
		a->op = c->op;
		a->fd = c->fd;
		adds += c->op == EPOLL_CTL_ADD && !k;
		lmods += c->op == EPOLL_CTL_MOD && w == IN_LEVEL;
		qw[*nq] = w;
		qi[(*nq)++] = i;
	}
	if (lmods)
		run_repoll(u, p, q, qi, qw, nq);
	return i;
}

/*
 * uepoll_ctl_batch(): runs of changes (native_run()), each run's
 * epoll_ctl()s in one io_uring_enter() of the batch helper (batch.c:
 * IORING_OP_EPOLL_CTL, hard-linked, in order, each with the kernel's
 * errno), their results then applied to the map in order; a change a run
 * stopped at is applied alone, as uepoll_ctl() applies it.  With sl
 * (uepoll_ctl_wait()), the last run carries the sleep: a poll of the
 * uepoll fd (readable while the ring has entries; its poll also polls
 * the keyless wake-ups, as epoll_wait(fd, NULL, 0, t) does) in the same
 * io_uring_enter(); sl->ret 0 when the batch did not end with a run.
 * *repoll in: the run with the sleep must also repoll the level epoll
 * (level_repoll(), unless the run has it already); out: it did, with
 * success.
 */
static int native_batch_sleep(struct uepoll *u, struct uepoll_change *ch, unsigned n,
			      struct uepoll_aux_sleep *sl, int *repoll)
{
	struct native_priv *p = u->priv;
	struct uepoll_aux_ctl q[UEPOLL_AUX_MAX];
	unsigned qi[UEPOLL_AUX_MAX], i = 0, k, nq, run;
	int res[UEPOLL_AUX_MAX], qw[UEPOLL_AUX_MAX], want = *repoll, rk;

	if (p->forked)
		return -ECHILD;
	if (sl)
		sl->ret = 0;
	*repoll = 0;
	pthread_mutex_lock(&p->lock);
	if (!n && want && sl && p->lfd >= 0) {	/* the repoll alone (native_level_sleep()) */
		nq = 0;
		rk = (int)run_repoll(u, p, q, qi, qw, &nq);
		__uepoll_aux_epoll_ctl(u, p->aux, q, res, nq, sl);
		*repoll = !res[rk];
	}
	while (i < n) {
		run = native_run(u, p, ch + i, n - i, q, qi, qw, &nq);
		rk = -1;
		if (want && sl && i + run == n && p->lfd >= 0) {
			/* native_run() keeps a place for it */
			for (k = 0; k < nq && qi[k] != NOT_A_CHANGE; k++)
				;
			rk = (int)(k < nq ? k : run_repoll(u, p, q, qi, qw, &nq));
		}
		/* the last run carries the sleep (it releases p->lock for it) */
		__uepoll_aux_epoll_ctl(u, p->aux, q, res, nq, i + run == n ? sl : NULL);
		if (rk >= 0 && !res[rk])
			*repoll = 1;
		for (k = 0; k < nq; k++) {
			struct uepoll_change *c;

			if (qi[k] == NOT_A_CHANGE)
				continue;
			c = &ch[i + qi[k]];
			c->res = res[k];
			if (c->op != EPOLL_CTL_ADD &&
			    (res[k] == -ENOENT || res[k] == -EBADF ||
			     (!res[k] && c->op == EPOLL_CTL_DEL))) {
				/* (or it went with its file; or an ADD before
				 * it in the run failed: nothing is mapped) */
				if (fdmap_get(&p->map, c->fd) == qw[k])
					removed(p, qw[k], c->fd);
			} else if (!res[k] && c->op == EPOLL_CTL_ADD) {
				added(p, qw[k], c->fd, &c->ev);
			} else if (!res[k]) {
				/* (the run's repoll of the level epoll follows) */
				reregistered(NULL, p, qw[k], c->fd, &c->ev);
			}
		}
		i += run;
		if (i < n && nq < UEPOLL_AUX_MAX - 1) {
			/* stopped at ch[i]: alone, as ctl */
			struct uepoll_change *c = &ch[i];
			struct epoll_event e;

			c->res = __uepoll_ctl_check(u, c->op, c->fd, &c->ev, &e, UEPOLL_KIND_UNKNOWN);
			if (!c->res)
				c->res = native_ctl_locked(u, p, c->op, c->fd,
							   c->op == EPOLL_CTL_DEL ? NULL : &e);
			i++;
		}
	}
	if (*repoll)
		p->folded = 1;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static int native_batch(struct uepoll *u, struct uepoll_change *ch, unsigned n)
{
	int repoll = 0;

	return native_batch_sleep(u, ch, n, NULL, &repoll);
}

/*
 * uepoll_ctl_wait(): the changes and the sleep in one io_uring_enter()
 * (native_batch_sleep()).  While level-triggered events may still be
 * ready (u->level), epoll keeps them on its ready list without a wake-up,
 * so no ring entry would end the sleep by itself: the same system call
 * then also makes the ring's MOD of the level epoll before the sleep
 * (level_repoll(): the ring polls the level epoll, whose poll polls the
 * registrations on its ready list, and pushes the entry if one is still
 * ready).  The ring now says what the harvest's epoll_wait() of the level
 * epoll would have found, so u->level is cleared: the call that asked
 * whether something was still ready, and the sleep that followed when
 * nothing was, are one.  If that MOD failed (or did not run: no sleep),
 * u->level stays and the harvest asks the level epoll as before.
 */
static int native_ctl_sleep(struct uepoll *u, struct uepoll_change *ch, unsigned n,
			    struct epoll_event *evs, int max, int timeout_ms)
{
	struct native_priv *p = u->priv;
	struct uepoll_aux_sleep sl = { .drop = &p->lock, .fd = u->fd, .timeout_ms = timeout_ms };
	int ret, repoll = (u->level & 3) != 0;

	(void)evs;
	(void)max;
	ret = native_batch_sleep(u, ch, n, &sl, &repoll);
	if (ret < 0)
		return ret;
	if (repoll)
		u->level &= ~3u;
	if (sl.ret > 0) {
		HSTAT(u, sleeps, 1);
		/* the poll of the instance polled the kernel's level-triggered
		 * registrations (uepoll(7)): the harvest need not ask */
		u->level &= ~(uint32_t)UEPOLL_LEVEL_KERNEL;
		p->lazy_skips = 0;
	}
	return sl.ret < 0 ? sl.ret : 0;
}

/*
 * uepoll_wait() with nothing in the ring, the level epoll to be asked
 * again only because its last answer had level-triggered events (u->level
 * 1: epoll keeps them on its ready list; most often the caller has read
 * them dry since, which only that epoll_wait() would tell).  Instead of
 * that epoll_wait() and then the sleep, one io_uring_enter() makes the
 * ring's MOD of the level epoll (level_repoll(): it pushes the entry if
 * one is still ready) and sleeps on the ring, as native_ctl_sleep() does
 * with changes.  Not taken when the registrations stayed ready from one
 * call to the next (p->stuck, as for a reader that takes part of what is
 * there, as bufferevents do): the repoll would end the sleep at once and
 * the harvest's epoll_wait() follow, two system calls where that one
 * does.  A wrong guess costs one system call and is not repeated: the
 * next answer decides again.  Nor when uepoll_drained() said all of them
 * drained: the harvest then asks nothing and the wait spins first.
 */
static int native_ready(struct uepoll *u);
static int native_sleep(struct uepoll *u, int timeout_ms);

/* the level-triggered events of the last harvest not said drained since */
static unsigned kernel_unhinted(struct native_priv *p)
{
	unsigned n;

	pthread_mutex_lock(&p->lock);
	n = p->kunhinted;
	pthread_mutex_unlock(&p->lock);
	return n;
}

/*
 * The same with the kernel's level-triggered registrations (u->level
 * UEPOLL_LEVEL_KERNEL: the last harvest took events of some, which the
 * kernel polls again at the next epoll_wait(fd, NULL, 0, t)): with nothing
 * in the ring, the harvest's question and the sleep are the same call
 * with another timeout, so the wait makes it once, as the sleep.  An
 * answer comes as entries, which the harvest that follows takes.  Not
 * taken when uepoll_drained() said all of them drained: then nothing
 * needs asking and the wait spins first.
 */
static int kernel_level_sleep(struct uepoll *u, struct native_priv *p, int timeout_ms)
{
	int ret;

	if (p->forked)
		return -ECHILD;
	if (native_ready(u) || !kernel_unhinted(p))
		return 1;
	u->level &= ~(uint32_t)UEPOLL_LEVEL_KERNEL;
	p->lazy_skips = 0;
	HSTAT(u, sleeps, 1);
	ret = native_sleep(u, timeout_ms);
	if (ret < 0)
		u->level |= UEPOLL_LEVEL_KERNEL;
	return ret < 0 ? ret : 0;
}

/*
 * ops->sleep_asks: the harvest would ask the kernel's level-triggered
 * question (UEPOLL_LEVEL_KERNEL, something not said drained) with the
 * ring empty, and no repoll hint: a sleep, whose poll or epoll_wait()
 * asks the same, may take its place (uepoll_wait() with deferred changes).
 * 2 with uepoll_set_lazy_poll(), the repoll hint (C7) counting too: the
 * sleep polls those keyless wake-ups as well.
 */
static int native_sleep_asks(struct uepoll *u)
{
	struct native_priv *p = u->priv;

	if (p->forked || native_ready(u))
		return 0;
	if (__uepoll_lazy_poll(u) && (uepoll_repoll_read(u->hdr) ||
			     (u->level == UEPOLL_LEVEL_KERNEL && kernel_unhinted(p))))
		return 2;
	return u->level == UEPOLL_LEVEL_KERNEL && !uepoll_repoll_read(u->hdr) && kernel_unhinted(p);
}

static int native_level_sleep(struct uepoll *u, int timeout_ms)
{
	struct native_priv *p = u->priv;
	int ret;

	if (u->level == UEPOLL_LEVEL_KERNEL)
		return kernel_level_sleep(u, p, timeout_ms);
	if (__uepoll_lazy_poll(u) && !u->level && !p->forked && uepoll_repoll_read(u->hdr) &&
	    !native_ready(u)) {
		/* lazy: the keyless wake-ups' repoll (C7) is the sleep's */
		p->lazy_skips = 0;
		HSTAT(u, sleeps, 1);
		ret = native_sleep(u, timeout_ms);
		return ret < 0 ? ret : 0;
	}
	if (u->level != 1)
		return 1;
	if (p->forked)
		return -ECHILD;
	if (native_ready(u))
		return 1;	/* the ring has entries: harvest */
	pthread_mutex_lock(&p->lock);
	ret = p->stuck || !p->unhinted;
	pthread_mutex_unlock(&p->lock);
	if (ret)
		return 1;
	/* no changes: the repoll alone with the sleep; u->level stays set
	 * (not taken) if the repoll failed */
	ret = native_ctl_sleep(u, NULL, 0, NULL, 0, timeout_ms);
	if (ret < 0)
		return ret;
	return u->level ? 1 : 0;
}

/*
 * The level epoll's events (the inline harvest's end, u->level set): one
 * epoll_wait(lfd, evs, max, 0), each event's data translated back under
 * p->lock (stale ones dropped).  Skipped, and u->level cleared, when the
 * ring brought no wake-up of it (bit 2) and every level-triggered event
 * the last call returned was said drained since (uepoll_drained()).  Bit
 * 0 of u->level: the last call returned level-triggered events (epoll
 * keeps them ready: the next harvest asks again); bit 2: a wake-up came
 * through the ring, or the last call filled evs (more may wait).
 */
UEPOLL_API int __uepoll_level(struct uepoll *u, struct epoll_event *evs, int max)
{
	struct native_priv *p = u->priv;
	int saved_errno = errno, r, i, w = 0;
	unsigned rep;
	uint32_t prev;

	pthread_mutex_lock(&p->lock);
	if (p->lfd < 0 || (!(u->level & 2) && !p->unhinted)) {
		u->level &= ~3u;
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	STAT_SYS(u);
	r = epoll_wait(p->lfd, evs, max, 0);
	if (r < 0) {
		r = -errno;
		pthread_mutex_unlock(&p->lock);
		errno = saved_errno;
		return r;
	}
	prev = p->lstamp;
	p->lstamp++;
	if (!p->lstamp)
		p->lstamp++;
	p->unhinted = 0;
	rep = 0;
	for (i = 0; i < r; i++) {
		uint64_t tok = evs[i].data.u64;
		int fd = (int)(uint32_t)tok;
		struct lreg *l;

		if (fd < 0 || (unsigned)fd >= p->lrcap || fdmap_get(&p->map, fd) != IN_LEVEL ||
		    p->lr[fd].gen != (uint32_t)(tok >> 32)) {
			HSTAT(u, stale, 1);
			continue;
		}
		l = &p->lr[fd];
		evs[w].events = evs[i].events;
		evs[w].data.u64 = l->data;
		w++;
		if (!(l->events & (EPOLLET | EPOLLONESHOT))) {
			rep += prev && l->stamp == prev;
			l->stamp = p->lstamp;
			l->hinted = 0;
			p->unhinted++;
		}
	}
	/*
	 * Stayed ready: all it found the call before had found too, and no
	 * wake-up of the level epoll can explain it (none came through the
	 * ring, or only the entry a sleep's repoll pushed may have).
	 */
	p->stuck = (p->folded || !(u->level & 2)) && p->unhinted && rep == p->unhinted;
	p->folded = 0;
	u->level = (u->level & ~3u) | (r == max ? 2 : p->unhinted ? 1 : 0);
	pthread_mutex_unlock(&p->lock);
	errno = saved_errno;
	return w;
}

/*
 * uepoll_drained() of a level-triggered registration of the ring: one
 * event of the last harvest with its data (__uepoll_level_note()), not
 * hinted yet, counts as drained, once per fd and harvest.  Two
 * registrations with the same data: the hint of one may count for the
 * other's event; the count stays right.
 */
static void kernel_drained(struct native_priv *p, int fd, uint32_t events)
{
	struct lreg *l = &p->lr[fd];
	unsigned i, n = p->nnotes < LEVEL_NOTES ? p->nnotes : LEVEL_NOTES;

	if ((l->events & (EPOLLET | EPOLLONESHOT)) || l->kstamp == p->kstamp || !p->kunhinted ||
	    (l->events & UEPOLL_HINT_BITS & ~__uepoll_drained_bits(events)))
		return;
	for (i = 0; i < n; i++) {
		if (!p->notes[i].hinted && p->notes[i].data == l->data) {
			p->notes[i].hinted = 1;
			p->kunhinted--;
			l->kstamp = p->kstamp;
			return;
		}
	}
}

/*
 * The inline harvest took events of level-triggered registrations of the
 * ring (C8: EPOLL_USERPOLL_LEVEL), marked with EPOLLET in evs[0..n), a bit
 * epoll never reports and which is taken off here.  The kernel polls those
 * registrations again at the next epoll_wait(fd, NULL, 0, t) or poll of the
 * instance, so the next harvest asks first (UEPOLL_LEVEL_KERNEL in
 * u->level, __uepoll_repoll()) or the wait sleeps at once
 * (kernel_level_sleep()), unless uepoll_drained() says each of them was
 * drained by then.  The first LEVEL_NOTES events' data are kept for
 * kernel_drained() to match; the others can never be said drained.
 */
UEPOLL_API void __uepoll_level_note(struct uepoll *u, struct epoll_event *evs, int n)
{
	struct native_priv *p = u->priv;
	int i;

	pthread_mutex_lock(&p->lock);
	/*
	 * A question still to ask (uepoll_set_lazy_poll() left it): these
	 * events join the ones it is about, under the same stamp, so that a
	 * hint counts once per fd until it is asked (a registration hinted
	 * before its new event cannot be hinted again: it is asked about).
	 */
	if (!(u->level & UEPOLL_LEVEL_KERNEL)) {
		p->kstamp++;
		if (!p->kstamp)
			p->kstamp++;
		p->nnotes = 0;
		p->kunhinted = 0;
	}
	for (i = 0; i < n; i++) {
		if (!(evs[i].events & EPOLLET))
			continue;
		evs[i].events &= ~(uint32_t)EPOLLET;
		if (p->nnotes < LEVEL_NOTES) {
			p->notes[p->nnotes].data = evs[i].data.u64;
			p->notes[p->nnotes].hinted = 0;
		}
		p->nnotes++;
		p->kunhinted++;
	}
	pthread_mutex_unlock(&p->lock);
	u->level |= UEPOLL_LEVEL_KERNEL;
}

/* uepoll_drained(): fd's level-triggered events reported last, all drained? */
static void native_drained(struct uepoll *u, int fd, uint32_t events)
{
	struct native_priv *p = u->priv;
	uint32_t want;
	struct lreg *l;

	pthread_mutex_lock(&p->lock);
	if (p->klevel && fdmap_get(&p->map, fd) == IN_RING)
		kernel_drained(p, fd, events);
	else if (fdmap_get(&p->map, fd) == IN_LEVEL) {
		l = &p->lr[fd];
		want = l->events & UEPOLL_HINT_BITS;
		if (l->stamp == p->lstamp && l->stamp && !l->hinted &&
		    !(want & ~__uepoll_drained_bits(events))) {
			l->hinted = 1;
			p->unhinted--;
		}
	}
	pthread_mutex_unlock(&p->lock);
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
	struct native_priv *p = u->priv;
	uint32_t asked = u->level & UEPOLL_LEVEL_KERNEL;
	int saved_errno = errno, ret = 0;

	/* lazy: with entries to take, the kernel's polls wait (C7 stays set) */
	if (native_ready(u) && p->lazy_skips < __uepoll_lazy_poll(u)) {
		p->lazy_skips++;
		return 0;
	}
	p->lazy_skips = 0;
	u->level &= ~asked;
	/* the question only: not if every event it is about was drained */
	if (asked && !uepoll_repoll_read(u->hdr) && !kernel_unhinted(p))
		return 0;
	HSTAT(u, repolls, 1);
	STAT_SYS(u);
	if (epoll_wait(u->fd, NULL, 0, 0) < 0 && errno != ESTALE) {
		ret = -errno;
		u->level |= asked;
	}
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
	/* the level epoll checks less than EPOLL_USERPOLL: EPOLLEXCLUSIVE */
	.checks = UEPOLL_CHECKS_EPOLL,
	/* LT in the level epoll; the ring has the bits of the wake-ups */
	.caps = UEPOLL_CAP_LEVEL,
	.probe = native_probe,
	.init = native_init,
	.exit = native_exit,
	.ctl = native_ctl,
	.batch = native_batch,
	.ctl_sleep = native_ctl_sleep,
	.harvest = native_harvest,
	.drained = native_drained,
	.sleep = native_sleep,
	.ready = native_ready,
	.level_sleep = native_level_sleep,
	.sleep_asks = native_sleep_asks,
};
