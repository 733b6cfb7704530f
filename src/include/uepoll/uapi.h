/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * uepoll/uapi.h - the EPOLL_USERPOLL kernel ABI, as seen from userspace.
 *
 * This file mirrors the additions that kernel/patches/ make to
 * include/uapi/linux/eventpoll.h.  It must stay equal to them: the
 * check target `make check-uapi` compares the two.  Full protocol:
 * uepoll(7) (man/uepoll.7) and doc/PROTOCOL.md.
 */
#ifndef UEPOLL_UAPI_H
#define UEPOLL_UAPI_H

#include <linux/types.h>

/* epoll_create2() flag: the instance is polled from userspace. */
#ifndef EPOLL_USERPOLL
#define EPOLL_USERPOLL 1
#endif

/*
 * epoll_create2() flag, with EPOLL_USERPOLL only: registrations without
 * EPOLLET are allowed and level-triggered (polled again by the kernel at
 * epoll_wait(fd, NULL, 0, t) and poll of the instance).  Refused (EINVAL)
 * by a kernel without it; without it, EPOLLET is required.
 */
#ifndef EPOLL_USERPOLL_LEVEL
#define EPOLL_USERPOLL_LEVEL 2
#endif

/*
 * ready_events marker: "the ring entry that points at this item belongs to
 * a registration that has been removed".  Bit 26: bit 27 is
 * EPOLL_URING_WAKE, 28..31 are EXCLUSIVE, WAKEUP, ONESHOT, ET.
 */
#ifndef EPOLLREMOVED
#define EPOLLREMOVED ((__u32)(1U << 26))
#endif

#define EPOLL_USERPOLL_HEADER_MAGIC 0xeb01eb01U
#define EPOLL_USERPOLL_HEADER_SIZE  128
#define EPOLL_USERPOLL_MAX_ITEMS    65536

/* x86_64, i386 and the generic table: 463 in 6.12 (setxattrat from 6.13 on). */
#define UEPOLL_NR_epoll_create2 463

/* procfs feature file: present (and reads "1\n") only on a patched kernel. */
#define UEPOLL_FEATURE_FILE "/proc/sys/fs/epoll/userpoll"

/*
 * One registration, shared with userspace.  16 bytes on every arch
 * (struct epoll_event is packed on x86_64 only, so it is not embedded).
 *
 *  ready_events: kernel ORs fired events in; the consumer exchanges it
 *                with 0.  EPOLLREMOVED marks a removed registration.
 *  events:       the registered mask (kernel writes, informational).
 *  data:         epoll_event.data of the registration (kernel writes with
 *                release semantics on ADD and MOD).
 */
struct epoll_uitem {
	__u32 ready_events;
	__u32 events;
	__u64 data;
};

/*
 * Header at offset 0 of the mapping; items[] follow at offset 128.
 * header_length = PAGE_ALIGN(128 + 16 * max_items_nr) is the length of the
 * first mapping (offset 0) and the mmap offset of the index ring, whose
 * length is index_length = PAGE_ALIGN(roundup_pow_of_two(4 * max_items_nr)).
 * head and tail are free-running counters; index entries are item number
 * plus one, 0 never being a published value.  repoll is a hint: non-zero
 * when registrations had wake-ups without a poll mask (signalfd, pidfd, ...)
 * and wait to be polled by the next epoll_wait(fd, NULL, 0, timeout) on
 * the instance; the kernel sets it and clears it, and never reads it back
 * to decide anything.
 */
struct epoll_uheader {
	__u32 magic;		/* EPOLL_USERPOLL_HEADER_MAGIC      (kernel, once) */
	__u32 header_length;	/* bytes: header + items, page-aligned (kernel, once) */
	__u32 index_length;	/* bytes: index ring, power of two  (kernel, once) */
	__u32 max_items_nr;	/* n given to epoll_create2()      (kernel, once) */
	__u32 head;		/* consumer position            (userspace only) */
	__u32 tail;		/* producer position            (kernel only) */
	__u32 repoll;		/* keyless wake-ups to poll: a hint (kernel only) */
	__u32 __reserved[25];	/* zero */
	struct epoll_uitem items[];
};

#endif /* UEPOLL_UAPI_H */
