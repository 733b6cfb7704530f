/* SPDX-License-Identifier: MIT OR LGPL-2.1-or-later */
/*
 * uepoll/barrier.h - the only accessors of memory shared with the kernel.
 *
 * Every load and store of the EPOLL_USERPOLL mapping (header, items, index
 * ring) goes through one of these helpers.  Each names the kernel access
 * it pairs with (fs/eventpoll.c as patched by kernel/patches/) and the
 * library function that uses it.  The protocol as a whole is in uepoll(7).
 *
 * Kernel side, in order, for one event (all under ep->lock):
 *   K1 ep_add_event_to_uring(): old = atomic fetch_or(&item->ready_events)
 *      (fully ordered RMW); only when old == 0 does it go on to
 *   K2 ep_uring_push(): WRITE_ONCE(index[tail & mask], bit + 1), then
 *   K3 ep_uring_push(): smp_store_release(&hdr->tail, tail + 1).
 * ADD/MOD (ep_uring_item_init()): WRITE_ONCE(item->events),
 *   K4 smp_store_release(&item->data, data).
 * DEL (ep_remove_user_item()): cmpxchg loop setting ready_events to
 *   K5 EPOLLREMOVED (old flags dropped); when it was 0 it also pushes an
 *   entry (K2, K3) so that the consumer always revisits the item.
 * Emptiness (ep_uring_events_available()): K6 READ_ONCE(hdr->head).
 * Keyless wake-up (ep_uring_defer()): set_bit() in the kernel's own pending
 *   bitmap, then K8 WRITE_ONCE(hdr->repoll, 1); ep_uring_repoll(), under
 *   ep->mtx, clears it before it polls the pending registrations (from
 *   every epoll_wait(fd, NULL, 0, t), whatever the word says).
 * Level-triggered report (EPOLL_USERPOLL_LEVEL, ep_uring_event()):
 *   set_bit() in the kernel's level bitmap; ep_uring_repoll() polls the
 *   marked ones again, K9 READ_ONCE(item->ready_events) first (an unread
 *   entry: no poll).
 */
#ifndef UEPOLL_BARRIER_H
#define UEPOLL_BARRIER_H

#include <stdint.h>
#include "uapi.h"

/*
 * Setup-time read of a field the kernel wrote once before epoll_create2()
 * returned (magic, lengths, max_items_nr).  The mmap() system call orders
 * it; a relaxed atomic load keeps the compiler honest about a value a
 * scribbling thread could change.  Used by the native backend's setup.
 */
static inline uint32_t uepoll_hdr_read_once(const uint32_t *field)
{
	return __atomic_load_n(field, __ATOMIC_RELAXED);
}

/*
 * C1: tail.  Pairs with K3, smp_store_release(&hdr->tail) in
 * ep_uring_push(): every index entry below the tail we read is published.
 * Used by uepoll_harvest() (uepoll.h) and by native_ready(), the spin test
 * of uepoll_wait() (native.c).
 */
static inline uint32_t uepoll_tail_acquire(const struct epoll_uheader *h)
{
	return __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
}

/*
 * C2: an index entry below the tail.  Ordered after C1 by its acquire;
 * pairs with K2, WRITE_ONCE(index[...]) in ep_uring_push().  The entry is
 * never 0 here (published before the tail moved); the caller still checks
 * the range, since the mapping is writable by the process.
 */
static inline uint32_t uepoll_index_read(const uint32_t *slot)
{
	return __atomic_load_n(slot, __ATOMIC_RELAXED);
}

/*
 * C3: take the fired events of an item, leaving 0.  Acquire pairs with K1
 * (fetch_or in ep_add_event_to_uring()) and K5 (cmpxchg in
 * ep_remove_user_item()): the data written (K4) before the registration
 * could fire is visible.  Release orders our reads of this item before the
 * kernel may see 0 and push a new entry for it.  Used by uepoll_harvest().
 */
static inline uint32_t uepoll_item_take(struct epoll_uitem *it)
{
	return __atomic_exchange_n(&it->ready_events, 0, __ATOMIC_ACQ_REL);
}

/*
 * C4: the item's data.  Acquire pairs with K4, smp_store_release(&data) in
 * ep_uring_item_init() (ADD and MOD), and orders C5 after it: if we read a
 * later registration's data, C5 sees the EPOLLREMOVED that K5 wrote before
 * that registration existed.  Used by uepoll_harvest().
 */
static inline uint64_t uepoll_item_data_acquire(const struct epoll_uitem *it)
{
	return __atomic_load_n(&it->data, __ATOMIC_ACQUIRE);
}

/*
 * C5: was the item removed after we took its events (C3)?  Only the
 * consumer clears EPOLLREMOVED, so a set bit here means a DEL (K5) ran
 * between C3 and C4: the events belong to a removed registration and
 * are dropped.  Ordered after C4 by C4's acquire.  Used by uepoll_harvest().
 */
static inline int uepoll_item_removed_since(const struct epoll_uitem *it)
{
	return !!(__atomic_load_n(&it->ready_events, __ATOMIC_RELAXED) &
		  EPOLLREMOVED);
}

/*
 * C6: give consumed entries back.  Release orders our reads of the index
 * entries (C2) before the kernel's K6 READ_ONCE(hdr->head) in
 * ep_uring_events_available() can see them consumed.  Used by
 * uepoll_harvest().
 */
static inline void uepoll_head_release(struct epoll_uheader *h, uint32_t head)
{
	__atomic_store_n(&h->head, head, __ATOMIC_RELEASE);
}

/*
 * C7: the repoll hint.  Reads what K8, WRITE_ONCE(hdr->repoll, 1) in
 * ep_uring_defer(), wrote after a keyless wake-up, and what
 * ep_uring_repoll() cleared before polling.  Relaxed, and it pairs with
 * nothing: it is a hint, read only to decide whether to make one
 * epoll_wait(fd, NULL, 0, 0) now.  The kernel never trusts the word (every
 * epoll_wait(fd, NULL, 0, t) polls the pending registrations whatever it
 * says), and that system call orders everything after it: the entries it
 * pushes are published by K3 and read through C1 as any others.  A stale
 * 0 costs only latency until the next sleep, which repolls anyway; a
 * stale 1 costs one system call that finds nothing.  Same cache line as
 * tail (offset 24, tail at 20).  Used by uepoll_harvest(), before C1.
 */
static inline uint32_t uepoll_repoll_read(const struct epoll_uheader *h)
{
	return uepoll_hdr_read_once(&h->repoll);
}

/*
 * C8: the registered mask of an item whose events we took (C3) and whose
 * data we read (C4).  Reads what ep_uring_item_init() wrote with
 * WRITE_ONCE(item->events) just before K4, so C4's acquire, which
 * follows C3's, makes it the mask of the registration whose data we read
 * or of a later MOD.  Relaxed: it only tells the harvest whether the
 * registration is level-triggered (no EPOLLET, no EPOLLONESHOT), i.e.
 * whether the kernel will poll it again at the next epoll_wait(fd, NULL,
 * 0, t) (K9 and ep_uring_repoll()).  A MOD racing with the harvest makes
 * it the old or the new mask; that MOD polls and reports by itself.  Same
 * 16-byte item as C3 and C4.  Used by uepoll_harvest().
 */
static inline uint32_t uepoll_item_events_read(const struct epoll_uitem *it)
{
	return __atomic_load_n(&it->events, __ATOMIC_RELAXED);
}

#endif /* UEPOLL_BARRIER_H */
