/* SPDX-License-Identifier: MIT OR LGPL-2.1-or-later */
/*
 * internal.h - the backend interface of libuepoll.  Not installed.
 *
 * uepoll.c validates every argument and the common ctl rules
 * (uepoll_ctl_check()) and then dispatches through one ops table per
 * backend.  A backend may assume: u is live, evs != NULL, max > 0,
 * ctl arguments already checked (op valid, ev valid for ADD/MOD with
 * EPOLLWAKEUP cleared, EPOLLET set unless caps has UEPOLL_CAP_LEVEL, fd
 * open and pollable, fd != instance fd).
 */
#ifndef UEPOLL_INTERNAL_H
#define UEPOLL_INTERNAL_H

#include <pthread.h>
#include "uepoll.h"

#define __hidden __attribute__((visibility("hidden")))

/*
 * Under valgrind no sleep rides on a submission (batch.c, uring.c): it
 * runs one thread at a time and takes io_uring_enter() for a call that
 * does not block, so another thread could not run while we slept there
 * (nor would it see the kernel's writes into evs by io_uring).  Its
 * client request is a few instructions that do nothing outside it;
 * without its header, nothing.
 */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define UNDER_VALGRIND()	RUNNING_ON_VALGRIND
#endif
#endif
#ifndef UNDER_VALGRIND
#define UNDER_VALGRIND()	0
#endif

/* what the backend's kernel call checks of epoll_ctl(2)'s rules */
enum uepoll_checks {
	UEPOLL_CHECKS_NONE,	/* nothing (io_uring polls): the library checks all */
	UEPOLL_CHECKS_EPOLL,	/* epoll's (EBADF, EPERM, EINVAL), not EPOLLET/EPOLLEXCLUSIVE */
	UEPOLL_CHECKS_ALL,	/* all, in epoll's order (EPOLL_USERPOLL): one system call */
};

/*
 * A backend: src/<name>.c defines one, "const struct uepoll_ops
 * __uepoll_<name>_ops __hidden = { ... };", and the registry in uepoll.c
 * lists them; nothing else in the library names one.  Optional
 * operations are NULL.
 */
struct uepoll_ops {
	const char *name;		/* what UEPOLL_BACKEND and the tools say */
	enum uepoll_checks checks;	/* ctl argument checks made by the kernel */
	unsigned caps;			/* UEPOLL_CAP_*: uepoll_backend_caps() */
	/* 0 if usable in this process, else -errno (the error init would give) */
	int (*probe)(void);
	/* optional: 0 if the automatic choice may take it where probe
	 * succeeds, 1 if it passes it over (uepoll.c, auto_probe()) */
	int (*pass_over)(void);
	int (*init)(struct uepoll *u, unsigned n, unsigned flags);
	void (*exit)(struct uepoll *u);
	int (*ctl)(struct uepoll *u, int op, int fd, struct epoll_event *ev);
	/* optional: apply n changes in order, each one's res as ctl (through
	 * __uepoll_ctl_check()) would give it; 0 or -errno for the whole
	 * batch (nothing applied).  NULL: uepoll_ctl_batch() loops on ctl */
	int (*batch)(struct uepoll *u, struct uepoll_change *ch, unsigned n);
	int (*harvest)(struct uepoll *u, struct epoll_event *evs, int max);
	/* optional: a change of fd found the number closed or naming a file
	 * no registration can have (__uepoll_number_gone()): forget one the
	 * backend still holds for it (uring: its poll keeps the file open) */
	void (*gone)(struct uepoll *u, int fd);
	/* optional: uepoll_drained(3), fd >= 0; NULL: nothing to do (the
	 * backend's level-triggered registrations cost nothing to re-check,
	 * or it has none) */
	void (*drained)(struct uepoll *u, int fd, uint32_t events);
	/* sleep until something may be ready or timeout; 0 woke/timeout,
	 * -errno.  Optional when wait is set. */
	int (*sleep)(struct uepoll *u, int timeout_ms);
	/* optional: may the ring have something to harvest?  No system call;
	 * what uepoll_wait() spins on.  NULL: the backend cannot spin (epoll) */
	int (*ready)(struct uepoll *u);
	/* optional: uepoll_ctl_wait(3)'s first step, timeout_ms != 0: apply
	 * the n > 0 changes as batch would and sleep as sleep would, in one
	 * system call where it can.  > 0: that many events in evs (done); 0:
	 * the changes applied, uepoll_wait() follows for the rest of the
	 * timeout (it harvests first); -EINTR: the changes applied and a
	 * signal ended the sleep; other -errno as batch (nothing applied).
	 * NULL: batch, then uepoll_wait() */
	int (*ctl_sleep)(struct uepoll *u, struct uepoll_change *ch, unsigned n,
			 struct epoll_event *evs, int max, int timeout_ms);
	/* optional: harvest+sleep in one call (epoll), NULL = generic loop */
	int (*wait)(struct uepoll *u, struct epoll_event *evs, int max, int timeout_ms);
	/* optional: the generic loop's sleep when nothing is pending (ready
	 * says no) but the level-triggered registrations a harvest reported
	 * are to be asked again (native: u->level 1; uring: the level list),
	 * the question and the sleep in one system call; timeout_ms != 0.
	 * 0: done (harvest again), 1: not taken (harvest as usual), -errno
	 * as harvest or sleep would answer */
	int (*level_sleep)(struct uepoll *u, int timeout_ms);
	/* optional: 1 if a harvest now would make a system call only to ask
	 * what a sleep on the instance asks too, the ring being empty
	 * (native: UEPOLL_LEVEL_KERNEL; uring: only its task work to run,
	 * which the sleep's enter runs too); a wait with changes to apply then
	 * goes to its sleep without that harvest; 2: the same, lazily
	 * (uepoll_set_lazy_poll(); uring: its level list): a wait spins
	 * before that sleep too */
	int (*sleep_asks)(struct uepoll *u);
};

/*
 * The counters of struct uepoll_stats, by who writes them (uepoll.h says
 * which is which):
 *   STAT:  ctl threads too (syscalls, ctls, ctl_syscalls): a relaxed
 *          atomic add, a locked instruction;
 *   HSTAT: the harvester only (harvest and wait, one at a time per
 *          instance): a relaxed load and a relaxed store, no lock.
 *          Never for a counter that a ctl can reach.
 */
#define STAT(u, field, v) __atomic_fetch_add(&(u)->stats.field, (v), __ATOMIC_RELAXED)
#define HSTAT(u, field, v) __uepoll_stat_harvester(&(u)->stats.field, (v))

/* set while this thread is inside uepoll_ctl(): its system calls are ctl's */
extern __thread int __uepoll_in_ctl __hidden;
#define STAT_SYS(u) do { STAT(u, syscalls, 1); \
		if (__uepoll_in_ctl) STAT(u, ctl_syscalls, 1); } while (0)

/*
 * uepoll_ctl()'s checks of one change, before the backend's: 0 and, in
 * *e, the event to pass on (EPOLLWAKEUP cleared), or -errno.  kind is
 * what an fstat() of fd would say (__uepoll_fd_kind()), when the caller
 * knows it already, or UEPOLL_KIND_UNKNOWN: then the check makes the
 * fstat() itself where the backend's kernel call does not check fd.
 */
#define UEPOLL_KIND_UNKNOWN	1
int __uepoll_ctl_check(struct uepoll *u, int op, int fd, const struct epoll_event *ev,
		       struct epoll_event *e, int kind) __hidden;
/*
 * A change's checks answered EBADF (nothing open under fd) or EPERM (a
 * regular file or a directory, which no registration can have): a
 * registration of that number is of a file closed since, which epoll let
 * go with its file, whatever the operation (ops->gone()).
 */
static inline int __uepoll_number_gone(int res, int fd)
{
	return (res == -EBADF || res == -EPERM) && fd >= 0;
}

/* the poll bits a uepoll_drained() hint can take off: all but ERR, HUP */
#define UEPOLL_HINT_BITS	(0xffffu & ~(uint32_t)(EPOLLERR | EPOLLHUP))

/* uepoll_drained(): the poll bits a hint for events covers */
uint32_t __uepoll_drained_bits(uint32_t events) __hidden;
/* UEPOLL_* numbers: 0, or -EINVAL if malformed (uepoll.c) */
int __uepoll_env_uint(const char *name, uint32_t dflt, uint32_t max, uint32_t *out) __hidden;
/* CLOCK_MONOTONIC in nanoseconds: the waits' deadlines and timings */
int64_t __uepoll_now_ns(void) __hidden;
/* 1 if an ADD or MOD of the n changes failed: a wait given them returns at once (uepoll.c) */
int __uepoll_add_mod_failed(const struct uepoll_change *ch, unsigned n) __hidden;
/* 0 pollable kind of file, -EPERM regular file or directory, -EBADF */
int __uepoll_fd_kind(struct uepoll *u, int fd) __hidden;

/*
 * Which file an fd named at its last fstat() in this thread (set by
 * __uepoll_fd_kind(), and by the batches for each change before its
 * backend operation): a backend that holds files open past close() (uring)
 * tells a registration whose fd was closed and reused from a live one.
 */
struct uepoll_ident {
	int fd;
	int valid;		/* 0: not known for this call */
	uint64_t dev, ino;
};
extern __thread struct uepoll_ident __uepoll_ident __hidden;

/*
 * The batch helper (batch.c): a small io_uring of its own, set up at the
 * first batch, that runs epoll_ctl()s (IORING_OP_EPOLL_CTL, hard-linked:
 * in order, each with its own result) or the fstat()s of a batch
 * (IORING_OP_STATX) in one io_uring_enter() per UEPOLL_AUX_MAX; where
 * io_uring or the operation is unavailable (or UEPOLL_BATCH=loop), one
 * system call each.  One user at a time (its own lock).
 */
#define UEPOLL_AUX_MAX	256u
/* IORING_OP_EPOLL_WAIT, Linux 6.15; liburing 2.3's header predates it */
#define UEPOLL_OP_EPOLL_WAIT	59
struct uepoll_aux;
struct uepoll_aux_ctl {
	int epfd;		/* the epoll instance it applies to */
	int op;
	int fd;
	struct epoll_event ev;
};
/*
 * A sleep to ride on a run of epoll_ctl()s (uepoll_ctl_wait(3)), in the
 * run's own io_uring_enter(), until fd is readable (evs NULL; native: the
 * uepoll fd, readable while its ring has entries) or, evs set, until the
 * epoll instance fd has events, stored in evs (at most max, nev of them:
 * IORING_OP_EPOLL_WAIT, Linux 6.15), or timeout_ms passes (-1: no limit).
 * ret: 1 it slept (woke, or the time is up), -EINTR a signal ended it
 * (an epoll wait's events are in evs all the same), 0 it could not (no
 * io_uring, no such operation, UEPOLL_BATCH=loop, a run of
 * UEPOLL_AUX_MAX - 1 or more): the run was applied as without it and the
 * caller sleeps its own way.
 */
struct uepoll_aux_sleep {
	pthread_mutex_t *drop;	/* held by the caller; released while it sleeps */
	int fd;
	int timeout_ms;
	struct epoll_event *evs;
	int max;
	int ret;
	int nev;
};
struct uepoll_aux *__uepoll_aux_new(void) __hidden;
void __uepoll_aux_free(struct uepoll_aux *a) __hidden;
/* res[i] = epoll_ctl(c[i].epfd, c[i]...) ? -errno : 0, in order, n <= UEPOLL_AUX_MAX;
 * then the sleep sl, if not NULL, in the same system call where it can */
void __uepoll_aux_epoll_ctl(struct uepoll *u, struct uepoll_aux *a,
			    const struct uepoll_aux_ctl *c, int *res, unsigned n,
			    struct uepoll_aux_sleep *sl) __hidden;
/* kind[i] = __uepoll_fd_kind(fds[i]), id[i] its identity; fds[i] < 0:
 * untouched; n <= UEPOLL_AUX_MAX */
void __uepoll_aux_fd_kinds(struct uepoll *u, struct uepoll_aux *a, const int *fds,
			   int *kind, struct uepoll_ident *id, unsigned n) __hidden;

/* fd -> int map (-1: absent), grows on demand; caller locks. */
struct fdmap {
	int32_t *v;
	unsigned cap;
};
int fdmap_get(const struct fdmap *m, int fd) __hidden;
int fdmap_set(struct fdmap *m, int fd, int val) __hidden;	/* 0 / -ENOMEM */
int fdmap_reserve(struct fdmap *m, int fd) __hidden;	/* room for fd: 0 / -ENOMEM */
void fdmap_free(struct fdmap *m) __hidden;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/*
 * uepoll_set_lazy_poll(): how many harvests in a row that take new events
 * may leave the backend's polls (native: the level-triggered question and
 * the keyless wake-ups' repoll; uring: recheck()'s poll(2)) for later.
 * Relaxed: the setting of another thread takes effect at a later
 * harvest; nothing is published through it.
 */
static inline unsigned __uepoll_lazy_poll(const struct uepoll *u)
{
	return __atomic_load_n(&u->lazy_poll, __ATOMIC_RELAXED);
}

/* the spin phase of uepoll_wait(): 1 as soon as ops->ready() says so */
int __uepoll_spin(struct uepoll *u, int (*ready)(struct uepoll *u)) __hidden;

#endif /* UEPOLL_INTERNAL_H */
