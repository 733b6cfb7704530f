/* SPDX-License-Identifier: MIT OR LGPL-2.1-or-later */
/*
 * uepoll.h - libuepoll public API.
 *
 * An epoll-like event queue whose ready events are harvested from memory
 * shared with the kernel when the kernel allows it:
 *   native: EPOLL_USERPOLL (patched kernel, see uepoll(7)): the ring is
 *           read in place, no system call while it has entries;
 *   uring:  io_uring multishot polls, the CQ ring is peeked without a syscall;
 *   epoll:  plain epoll(7), one epoll_wait(..., 0) per harvest.
 *
 * Conventions (liburing): functions return >= 0 on success and -errno on
 * failure; errno is left untouched.  Every call is documented in
 * uepoll_<name>(3).
 *
 * fork(): a native instance is not usable in a child (the kernel does not
 * copy the mapping, unless the process applied MADV_DOFORK to it): there
 * uepoll_ctl(), uepoll_harvest() and uepoll_wait() fail with -ECHILD and
 * the ring is never read; uepoll_exit() closes the child's fd and unmaps
 * the child's inherited copy, if any.  The parent's instance is unaffected.
 *
 * Spin budget: before uepoll_wait() sleeps in the kernel it checks the
 * shared ring up to `spin` more times (native: the tail; uring: the CQ),
 * uepoll_set_spin(3).  The default is UEPOLL_SPIN_DEFAULT, or UEPOLL_SPIN
 * from the environment (read by uepoll_init()).  Then it goes on for an
 * adaptive window of checks that grows while its sleeps end soon after
 * they began and shrinks when they do not, uepoll_set_spin_adapt(3): at
 * most UEPOLL_SPIN_ADAPT_DEFAULT, or UEPOLL_SPIN_ADAPT from the environment.
 * With that window on, a wait whose last UEPOLL_SPIN_COLD_DEFAULT sleeps
 * (or UEPOLL_SPIN_COLD from the environment) each lasted longer than its
 * whole spin skips the spin, until a sleep ends sooner.
 */
#ifndef UEPOLL_H
#define UEPOLL_H

#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include "uepoll/uapi.h"
#include "uepoll/barrier.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef UEPOLL_API
#define UEPOLL_API __attribute__((visibility("default")))
#endif

/* uepoll_init() flags */
#define UEPOLL_CLOEXEC		0x1u	/* close-on-exec on every fd the instance owns */
/*
 * The backend field: 0 is the automatic choice, n > 0 a backend (values
 * are never reused).  Room for 15; uepoll_backend_list(3) says which this
 * build knows, in the order the automatic choice tries them.
 */
#define UEPOLL_BACKEND_SHIFT	4
#define UEPOLL_BACKEND_MASK	(0xfu << UEPOLL_BACKEND_SHIFT)
#define UEPOLL_BACKEND_AUTO	(0u << UEPOLL_BACKEND_SHIFT)	/* native > uring > epoll */
#define UEPOLL_BACKEND_NATIVE	(1u << UEPOLL_BACKEND_SHIFT)
#define UEPOLL_BACKEND_URING	(2u << UEPOLL_BACKEND_SHIFT)
#define UEPOLL_BACKEND_EPOLL	(3u << UEPOLL_BACKEND_SHIFT)
#define UEPOLL_FLAGS_ALL	(UEPOLL_CLOEXEC | UEPOLL_BACKEND_MASK)

/*
 * What a backend implements, uepoll_backend_caps(3): a mask of
 *   UEPOLL_CAP_LEVEL          registrations without EPOLLET are
 *                             level-triggered, as in epoll(7); without
 *                             it uepoll_ctl() refuses them (-EINVAL);
 *   UEPOLL_CAP_POLLED_EVENTS  an event's mask is what the file's poll
 *                             returns at the harvest (masked), as
 *                             epoll_wait(2) reports it; without it, the
 *                             bits the file announced in its wake-ups
 *                             since the registration's last event
 *                             (uepoll_ctl(3), EVENTS).
 */
#define UEPOLL_CAP_LEVEL		0x1u
#define UEPOLL_CAP_POLLED_EVENTS	0x2u

#define UEPOLL_MAX_ITEMS	65536u
/*
 * Native backend: the data of the ring item that stands for the
 * instance's level epoll (its level-triggered registrations, and any
 * registration whose data is this value).  Not an API.
 */
#define UEPOLL_LEVEL_DATA	0x75657031fffffffeull
/*
 * Native backend, in struct uepoll's level: the last harvest took events
 * of level-triggered registrations of the ring (EPOLL_USERPOLL_LEVEL), which
 * the kernel polls again at the next epoll_wait(fd, NULL, 0, t).  Bits 0
 * and 1 are the level epoll's.  Not an API.
 */
#define UEPOLL_LEVEL_KERNEL	4u
#define UEPOLL_SPIN_DEFAULT	256u	/* ring checks before sleeping; uepoll-bench measures it */
#define UEPOLL_SPIN_MAX		(1u << 20)
#define UEPOLL_SPIN_ADAPT_DEFAULT 4096u	/* checks: the adaptive window's largest */
#define UEPOLL_SPIN_COLD_DEFAULT 3u	/* long sleeps in a row that stop the spin; 0: never */
#define UEPOLL_SPIN_FUTILE_DEFAULT 15u	/* failed spins, in 16ths (an average), that stop the spin; 0: never */

/*
 * Counters, updated where the library makes the corresponding call, on
 * every backend.  Each has one of two kinds of writer:
 *   [h] the harvester only (uepoll_harvest(), uepoll_wait(): one at a time
 *       per instance, on every backend): a relaxed load and a relaxed
 *       store, no locked instruction;
 *   [c] any thread in uepoll_ctl() as well: a relaxed atomic add.
 * Every access is atomic and relaxed: a snapshot from another thread is
 * consistent per field, not across fields.
 */
struct uepoll_stats {
	uint64_t events;	/* [h] events returned by harvest/wait */
	uint64_t harvests;	/* [h] harvest passes (uepoll_harvest, and inside uepoll_wait) */
	uint64_t syscalls;	/* [c] system calls made for this instance (ctl, harvest, wait) */
	uint64_t estale;	/* [h] native: epoll_wait() answered ESTALE */
	uint64_t spins;		/* [h] native, uring: uepoll_wait() spun on the ring before sleeping */
	uint64_t waits;		/* [h] uepoll_wait() calls */
	uint64_t sleeps;	/* [h] times uepoll_wait() blocked in the kernel */
	uint64_t coalesced;	/* [h] completions merged into an event of the same batch */
	uint64_t stale;		/* [h] completions dropped: deleted or modified registration */
	uint64_t rearms;	/* [h] polls re-armed (multishot ended, overflow, MOD of a fired one) */
	uint64_t overflows;	/* [h] CQ overflow flushes */
	uint64_t ctls;		/* [c] successful uepoll_ctl() calls */
	uint64_t ctl_syscalls;	/* [c] the part of syscalls made by uepoll_ctl() */
	uint64_t repolls;	/* [h] native: epoll_wait(fd, NULL, 0, 0): the repoll hint, the level question */
	uint64_t rechecks;	/* [h] poll(2) of the level-triggered registrations still ready */
	uint64_t deferred;	/* [c] changes queued by uepoll_ctl_defer() */
};

/*
 * An instance.  Caller-allocated (like struct io_uring); public so that the
 * inline harvest can read it.  Treat every field as private.  A zero-filled
 * struct is recognised as "not initialised" (-EINVAL); after uepoll_exit()
 * calls fail with -EBADF.
 */
struct uepoll {
	/* fast path: native backend only (NULL hdr otherwise) */
	struct epoll_uheader *hdr;
	uint32_t *index;
	uint32_t index_mask;
	uint32_t nitems;
	uint32_t head;
	uint32_t level;		/* native: level-triggered events to ask for (harvester only) */
	/* slow path */
	int fd;			/* uepoll_fd() */
	int backend;		/* UEPOLL_BACKEND_* */
	uint32_t magic;		/* UEPOLL_MAGIC_LIVE / _DEAD / 0 */
	uint32_t flags;
	uint32_t n;		/* capacity */
	uint32_t spin;		/* uepoll_set_spin() */
	struct uepoll_stats stats;
	void *priv;		/* backend state */
	uint64_t deferred;	/* uepoll_ctl_defer()'s queue (a pointer), 0 until used */
	uint32_t spin_window;	/* the adaptive spin's window now, checks (uepoll_set_spin_adapt()) */
	uint32_t spin_max;	/* the window's largest, checks; 0: no adaptive spin */
	int64_t spin_t0;	/* CLOCK_MONOTONIC ns: a spin that ended in a sleep began; 0: none */
	uint32_t spin_check_ps;	/* picoseconds a check takes, as failed spins measured */
	uint32_t lazy_poll;	/* uepoll_set_lazy_poll(); 0: epoll's exact reports */
	uint32_t spin_cold;	/* sleeps in a row longer than the longest spin (harvester only) */
	uint32_t spin_fail_avg;	/* share of spins that found nothing, a moving average, 1/65536ths */
	uint32_t spin_skip;	/* waits left that skip their spin: spins that keep failing */
	uint32_t spin_backoff;	/* how many waits the last such skip was, 0: none since a spin found */
	uint32_t __pad;
	uint64_t __reserved[1];
};

#define UEPOLL_MAGIC_LIVE	0x75657031u	/* "uep1" */
#define UEPOLL_MAGIC_DEAD	0x64656164u	/* "dead" */

UEPOLL_API int uepoll_init(struct uepoll *u, unsigned n, unsigned flags);
UEPOLL_API void uepoll_exit(struct uepoll *u);
UEPOLL_API int uepoll_ctl(struct uepoll *u, int op, int fd, struct epoll_event *ev);
/*
 * One change of uepoll_ctl_batch(3): op, fd and ev as uepoll_ctl()
 * takes them (ev ignored by DEL); res is set to what uepoll_ctl() would
 * have returned for it, the changes before it applied in order.
 */
struct uepoll_change {
	int op;
	int fd;
	struct epoll_event ev;
	int res;
};

UEPOLL_API int uepoll_ctl_batch(struct uepoll *u, struct uepoll_change *ch, unsigned n);
UEPOLL_API int uepoll_wait(struct uepoll *u, struct epoll_event *evs, int max, int timeout_ms);
/* uepoll_ctl_batch() then uepoll_wait(), in one system call where the backend can */
UEPOLL_API int uepoll_ctl_wait(struct uepoll *u, struct uepoll_change *ch, unsigned n,
			       struct epoll_event *evs, int max, int timeout_ms);
/*
 * Changes applied later, uepoll_ctl_defer(3): at the first wait that finds
 * nothing to harvest (with its sleep, in one system call where the backend
 * can), or before any other change; those that fail are read back with
 * uepoll_ctl_failed(3).  The harvester's calls, as uepoll_wait().
 */
UEPOLL_API int uepoll_ctl_defer(struct uepoll *u, const struct uepoll_change *ch, unsigned n);
UEPOLL_API int uepoll_ctl_failed(struct uepoll *u, struct uepoll_change *ch, unsigned max);
UEPOLL_API int uepoll_drained(struct uepoll *u, int fd, uint32_t events);
UEPOLL_API int uepoll_fd(const struct uepoll *u);
UEPOLL_API int uepoll_backend(const struct uepoll *u);
UEPOLL_API const char *uepoll_backend_name(const struct uepoll *u);
UEPOLL_API int uepoll_get_stats(const struct uepoll *u, struct uepoll_stats *st);
UEPOLL_API int uepoll_set_spin(struct uepoll *u, unsigned spin);
UEPOLL_API int uepoll_set_spin_adapt(struct uepoll *u, unsigned max);
/*
 * Up to passes harvests in a row that find new events may leave for later
 * the polls a harvest asks the kernel for (native: a level-triggered event
 * still ready, keyless wake-ups); never past a sleep, which asks them.
 * 0 (the default): epoll's reports, exact.  uepoll_set_lazy_poll(3).
 */
#define UEPOLL_LAZY_POLL_MAX	64u
UEPOLL_API int uepoll_set_lazy_poll(struct uepoll *u, unsigned passes);

/* The backends this library knows, uepoll_backend_list(3) */
UEPOLL_API int uepoll_backend_list(unsigned *backends, int max);
UEPOLL_API int uepoll_backend_lookup(const char *name);
UEPOLL_API const char *uepoll_backend_str(unsigned backend);
UEPOLL_API int uepoll_backend_probe(unsigned backend);
UEPOLL_API int uepoll_backend_caps(unsigned backend);

/* Slow path of uepoll_harvest(): every backend but native.  Not an API. */
UEPOLL_API int __uepoll_harvest(struct uepoll *u, struct epoll_event *evs, int max);
/* Native uepoll_harvest() when the kernel's repoll hint is set.  Not an API. */
UEPOLL_API int __uepoll_repoll(struct uepoll *u);
/* Native uepoll_harvest(): the level epoll's events.  Not an API. */
UEPOLL_API int __uepoll_level(struct uepoll *u, struct epoll_event *evs, int max);
/* Native uepoll_harvest(): it took level-triggered events of the ring.  Not an API. */
UEPOLL_API void __uepoll_level_note(struct uepoll *u, struct epoll_event *evs, int n);

/*
 * Add to a counter only the harvester writes ([h] in struct uepoll_stats).
 * One writer at a time needs no read-modify-write: a relaxed load and a
 * relaxed store (plain moves on x86, no lock prefix), atomic so that
 * uepoll_get_stats() in another thread reads no torn value.  Not an API.
 */
static inline void __uepoll_stat_harvester(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

/*
 * uepoll_harvest - copy up to max ready events into evs, never sleeping.
 * Returns the number of events (0: none), or -EINVAL (NULL u or evs,
 * max <= 0, u not initialised), -EBADF (after uepoll_exit()), -ECHILD
 * (native instance used in a fork()ed child).
 * One harvester (harvest or wait) at a time per instance.
 *
 * Native backend: the consumer of doc/PROTOCOL.md section 5, inline, no
 * system call while the kernel's repoll hint (C7) is 0; when it is set,
 * one epoll_wait(fd, NULL, 0, 0) first (__uepoll_repoll()), so that the
 * entries it pushes are harvested in the same pass.  Level-triggered
 * registrations in the ring (a kernel with EPOLL_USERPOLL_LEVEL; C8 says
 * which): their events are noted (__uepoll_level_note()) and the next
 * harvest makes that call too (UEPOLL_LEVEL_KERNEL), in which the kernel
 * reports again those still ready, as epoll_wait(2) would.  Otherwise
 * they live in a plain epoll instance nested in the ring (native.c), whose
 * entry (UEPOLL_LEVEL_DATA) is not an event: it, or events of that epoll
 * left from the last pass, send the harvest to __uepoll_level() at its
 * end.  Other backends: __uepoll_harvest().
 */
static inline int uepoll_harvest(struct uepoll *u, struct epoll_event *evs, int max)
{
	struct epoll_uheader *h;
	uint32_t head, tail, nr;
	int cnt = 0, lt = 0;

	if (!u || !evs || max <= 0)
		return -EINVAL;
	h = u->hdr;
	if (!h || u->magic != UEPOLL_MAGIC_LIVE)
		return __uepoll_harvest(u, evs, max);

	if (__builtin_expect((uepoll_repoll_read(h) |			/* C7 */
			      (u->level & UEPOLL_LEVEL_KERNEL)) != 0, 0)) {
		cnt = __uepoll_repoll(u);
		if (cnt < 0)
			return cnt;
	}
	head = u->head;
	tail = uepoll_tail_acquire(h);				/* C1 */
	while (head != tail && cnt < max) {
		struct epoll_uitem *it;
		uint32_t f;
		uint64_t data;

		nr = uepoll_index_read(&u->index[head & u->index_mask]);	/* C2 */
		head++;
		if (nr == 0 || nr > u->nitems)
			continue;
		it = &h->items[nr - 1];
		f = uepoll_item_take(it);			/* C3 */
		if ((f & ~EPOLLREMOVED) == 0)
			continue;
		data = uepoll_item_data_acquire(it);		/* C4 */
		if (uepoll_item_removed_since(it))		/* C5 */
			continue;
		if (__builtin_expect(data == UEPOLL_LEVEL_DATA, 0)) {
			u->level |= 2;		/* the level epoll had a wake-up */
			continue;
		}
		f &= ~EPOLLREMOVED;
		if (!(uepoll_item_events_read(it) & (EPOLLET | EPOLLONESHOT))) {	/* C8 */
			f |= EPOLLET;	/* level-triggered: noted below */
			lt = 1;
		}
		evs[cnt].events = f;
		evs[cnt].data.u64 = data;
		cnt++;
	}
	u->head = head;
	uepoll_head_release(h, head);				/* C6 */
	if (lt)
		__uepoll_level_note(u, evs, cnt);	/* takes EPOLLET off */
	if (__builtin_expect((u->level & 3) != 0, 0) && cnt < max) {
		int r = __uepoll_level(u, evs + cnt, max - cnt);

		if (r < 0 && !cnt)
			return r;
		if (r > 0)
			cnt += r;
	}
	__uepoll_stat_harvester(&u->stats.harvests, 1);
	if (cnt)
		__uepoll_stat_harvester(&u->stats.events, (uint64_t)cnt);
	return cnt;
}

#ifdef __cplusplus
}
#endif

#endif /* UEPOLL_H */
