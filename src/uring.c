// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * uring.c - the io_uring backend (liburing).
 *
 * One poll request per registration: multishot (IORING_POLL_ADD_MULTI)
 * for ordinary registrations, single-shot for EPOLLONESHOT ones (one
 * event, then silence until MOD; arm() says when a multishot one serves).
 * MOD is a poll update (events and user_data), DEL an async cancel of the
 * poll.  user_data = (generation << 32) | slot; every ADD, MOD and DEL
 * bumps the slot's generation, so completions already queued for an older
 * registration are dropped at harvest (DEL is final, even when the fd is
 * added again at once).  Harvest peeks the CQ ring: no system call when
 * completions are pending, none when nothing is pending; several
 * completions of one registration in one batch are ORed into one event.
 * An event of an edge-triggered registration has the bits of the wake-ups
 * (the keys), not a poll of the file at harvest as epoll_wait() has:
 * uepoll_ctl(3), Events.
 *
 * Level-triggered registrations (no EPOLLET) have the same poll request
 * (it reports every wake-up) and, once reported, a place on the level
 * list: a registration stays ready until a poll of its file says it is
 * not.  Each harvest that ends with registrations on that list polls
 * their files, all in one poll(2) with a zero timeout (recheck()): the
 * registrations reported in this harvest get the events the poll
 * returns, as epoll_wait() would report them (none: no event), the
 * others that are still ready are reported again, and those that are not
 * leave the list until their next wake-up.  So a level-triggered
 * registration costs one poll(2) per harvest while one is ready (as
 * many as the epoll_wait(2) of the epoll backend), none once its file
 * is drained, and none when nothing of it is ready.  uepoll_drained(3)
 * takes bits off what the next poll asks (the application read or wrote
 * until EAGAIN); a registration with nothing left to ask leaves the list
 * without a poll, until its next wake-up.  A wait that would sleep asks
 * in its sleep instead: one ppoll() of the ring fd and those files
 * (uring_level_sleep()).  A completion that the harvester's own sleep or
 * enter brought, of a poll it submitted, with every bit the registration
 * asks, is taken without that poll: nothing of the program ran since its
 * wake-up (fresh_begin()).
 *
 * A poll that ends (no IORING_CQE_F_MORE: CQ overflow, a cancel because
 * the submitting thread exited, ...) is re-armed by the harvester; a
 * fresh poll reports the readiness present at that moment, so nothing is
 * lost, and the same harvest takes it.  MOD of a poll that already ended
 * (a fired ONESHOT) fails with ENOENT in the kernel and is re-armed the
 * same way.
 *
 * A poll holds its file: a registration whose fd is closed without DEL
 * keeps the file open.  Every ctl knows from its fstat() (its checks) which
 * file the fd names now: a registration of that number whose file is
 * another (the fd was closed and the number reused) is dropped first, as
 * epoll dropped it at the close, and a DEL or MOD of a closed fd (EBADF)
 * drops the registration of that number (uring_gone()).  A sleep's ADDs
 * and DELs learn the same from a statx in the sleep's own enter, and are
 * undone after it where it says so (ring_sleep()).
 *
 * Locking: one mutex for the SQ and the slot table, taken by ctl and by a
 * harvest that found completions; the empty-CQ path takes no lock.  The
 * sleep of uepoll_ctl_wait() submits the SQEs its changes queued
 * (uring_ctl_sleep()): the tail is handed to the kernel under the lock,
 * the io_uring_enter() is made without it, and a submit of another
 * thread meanwhile takes those SQEs with its own.
 *
 * Setup flags: CQSIZE, COOP_TASKRUN and TASKRUN_FLAG (README.md, "The
 * io_uring backend").  A poll's wake-up is finished by task work of the
 * thread that submitted it.  Without COOP_TASKRUN the kernel interrupts
 * that thread with an IPI when it runs in user space: a server thread
 * busy between its system calls took a reschedule IPI per wake-up (11 %
 * of a libevent server's samples on the 6.18 host, its rate 0.73x
 * libevent's epoll).  With it the work waits for that thread's next
 * kernel entry (a system call; an interrupt, the timer tick at the
 * latest, for a thread that computes; a thread asleep in an
 * interruptible wait is woken for it) and TASKRUN_FLAG makes a harvest
 * that finds the CQ empty enter for it (taskrun_wanted()): the same
 * server 1.03x, tcp 1.07-1.21x epoll, wake latency p50 30.9 -> 10.4 us.
 * The flag is the ring's, not the thread's: taskrun_wanted() says how a
 * harvest copes when it is another thread's (test/taskrun).  The cost:
 * that enter is a system call where the IPI was none, about one per
 * request in a busy server.  5.17 and 5.18 lack COOP_TASKRUN: setup
 * falls back to the plain flags on EINVAL.  DEFER_TASKRUN defers the
 * work to the ring owner's io_uring_enter(), so every harvest would
 * enter, and SINGLE_ISSUER forbids ctl from a second thread.
 * UEPOLL_URING_SETUP=coop|plain|defer (and UEPOLL_URING_CQ=<entries>)
 * exist for measurements and tests only (another value: EINVAL at init,
 * setup_mode(), cq_size()); the suite passes under coop and
 * plain (UEPOLL_URING_SETUP=plain test/runner.sh build).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "internal.h"

#define UD_INTERNAL	(1ull << 63)	/* completion of a poll update/remove */
#define UD_REMOVE	(1ull << 62)	/* ... of a poll remove */
/* internal completions that are no slot's: a slot number no instance has */
#define SLOT_CHECK	0xffffffffu	/* a change's statx (special_cqe()) */
#define SLOT_TMO	0xfffffffeu	/* a ring sleep's count timeout (ring_sleep()) */
#define UD_SPECIAL(slot, v)	(UD_INTERNAL | UD_REMOVE | UD((slot), (v) & GEN_MASK))
#define GEN_MASK	0x3fffffffu
#define UD(slot, gen)	(((uint64_t)(gen) << 32) | (uint32_t)(slot))

#define EV_FLAGS	(EPOLLET | EPOLLONESHOT | EPOLLWAKEUP | EPOLLEXCLUSIVE)

struct uslot {
	int fd;			/* -1: free */
	uint32_t gen;
	uint32_t events;	/* as registered (EPOLLWAKEUP cleared) */
	uint32_t stamp;		/* batch that holds an event of this slot */
	uint64_t data;
	int outidx;		/* its index in that batch */
	uint8_t armed;		/* a poll request of this generation is live */
	uint8_t multi;		/* ... and it is multishot */
	uint8_t fired;		/* ONESHOT event reported: silent until MOD */
	uint8_t rearm;		/* queued for re-arm in this harvest */
	uint8_t idle;		/* ONESHOT poll ended on bits not asked: re-arm multishot */
	uint8_t inlvl;		/* level-triggered, on the level list */
	uint32_t drained;	/* uepoll_drained(): bits not to poll for until the next event */
	uint32_t prestamp;	/* the level sleep that polled it (uring_level_sleep()) */
	uint32_t prerev;	/* ... and what its poll said */
	uint64_t armer;		/* thread_id() of the thread that submitted its poll */
	uint8_t unpolled;	/* its event in the batch is of fresh completions only */
	uint8_t hupped;		/* reported EPOLLERR, EPOLLHUP or EPOLLRDHUP since ADD/MOD */
	uint64_t dev, ino;	/* the file registered (fstat() at ADD) */
	int32_t chk;		/* the ADD's check in flight (struct ucheck), or -1 */
};

/*
 * A change's checks in the ring (ring_apply()): the IORING_OP_STATX of
 * its fd, submitted with the sleep.  user_data: UD_SPECIAL(SLOT_CHECK,
 * seq << 7 | index); a completion whose seq is not the entry's is of an
 * entry since reused, and dropped.
 */
#define CHECKS_MAX	128u
#define CHECK_V(seq, i)	((((seq) & 0x7fffffu) << 7) | (i))
enum { CHK_FREE, CHK_FLIGHT, CHK_DONE, CHK_ORPHAN };

struct ucheck {
	struct statx stx;	/* written by the kernel until the completion */
	uint32_t seq;
	int state;
	int res;		/* the statx's, once CHK_DONE */
};

struct uring_priv {
	struct io_uring ring;
	pthread_mutex_t lock;
	struct uslot *slots;
	uint32_t *freel;
	unsigned nfree;
	uint32_t *rearm;
	unsigned nrearm;
	uint32_t *lvl;		/* the level list: slots, n at most */
	unsigned nlvl;
	uint32_t *bslot;	/* the slot of each event of the batch */
	uint32_t *pslot;	/* recheck(): the slot of each pollfd */
	struct pollfd *pfd;	/* recheck()'s poll(2) set (n + 1: the level sleep's ring fd) */
	uint32_t prestamp;	/* uring_level_sleep() calls */
	int pre;		/* ... the last one's answers are for this harvest */
	unsigned lazy_skips;	/* harvests that left recheck() (uepoll_set_lazy_poll()) */
	int tr_stale;		/* IORING_SQ_TASKRUN outlived an enter: not ours (taskrun_wanted()) */
	/* fresh completions (fresh_begin()), the harvester's only */
	int fresh_ok;		/* the setup allows the rule (not DEFER_TASKRUN), no SQE astray */
	int fresh_on;		/* CQEs from index fresh_from on are fresh ... */
	uint32_t fresh_from;
	uint64_t fresh_tid;	/* ... for the polls of this thread */
	struct fdmap map;
	uint32_t batch;
	unsigned setup;		/* IORING_SETUP_* used */
	unsigned skip;		/* IOSQE_CQE_SKIP_SUCCESS if supported */
	int need_submit;	/* harvest queued SQEs */
	int batching;		/* in uepoll_ctl_batch(): submit at its end */
	struct uepoll_aux *aux;	/* uepoll_ctl_batch()'s fstat()s */
	struct ucheck *chk;	/* CHECKS_MAX, allocated at first use (ring_checks()) */
	uint32_t chk_seq;
	unsigned chk_live;	/* entries not CHK_FREE */
	int rchk;		/* ring_checks(): 0 not asked yet, 1 yes, -1 no */
	int ring_sleeping;	/* a ring_sleep() is between its apply and its evaluation */
	struct io_uring_sqe *tmo_sqe;	/* ring_apply(): its count timeout's SQE */
	struct __kernel_timespec tmo_ts; /* ... its time (read at the submit) */
	uint32_t tmo_seq;	/* the last ring sleep's, in its timeout's user_data */
	int tmo_done;		/* ... its timeout completed (count reached, or time) */
};

enum { SETUP_PLAIN, SETUP_COOP, SETUP_DEFER };

/* UEPOLL_URING_SETUP: unset or empty, coop; plain; defer; else -EINVAL
 * (a knob for measurements: a typo must not measure the default) */
static int setup_mode(void)
{
	const char *e = getenv("UEPOLL_URING_SETUP");

	if (!e || !*e || !strcmp(e, "coop"))
		return SETUP_COOP;
	if (!strcmp(e, "plain"))
		return SETUP_PLAIN;
	if (!strcmp(e, "defer"))
		return SETUP_DEFER;
	return -EINVAL;
}

static void params_init(struct io_uring_params *prm, unsigned cq)
{
	memset(prm, 0, sizeof(*prm));
	prm->flags = IORING_SETUP_CQSIZE;
	prm->cq_entries = cq;
}

static int ring_setup(struct io_uring *ring, unsigned cq, int mode, unsigned *setup)
{
	struct io_uring_params prm;
	/* room for a batch of changes (UEPOLL_AUX_MAX) in one submit */
	unsigned sq = cq < UEPOLL_AUX_MAX ? cq : UEPOLL_AUX_MAX;
	int ret;

	params_init(&prm, cq);
	switch (mode) {
	case SETUP_COOP:
		prm.flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
		break;
	case SETUP_DEFER:
		prm.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
			     IORING_SETUP_TASKRUN_FLAG;
		break;
	}
	ret = io_uring_queue_init_params(sq, ring, &prm);
	if (ret == -EINVAL && (prm.flags & IORING_SETUP_COOP_TASKRUN)) {
		/* 5.17, 5.18: no COOP_TASKRUN; the plain setup */
		params_init(&prm, cq);
		ret = io_uring_queue_init_params(sq, ring, &prm);
	}
	if (ret < 0)
		return ret;
	/* needed: EXT_ARG (timed wait without an SQE), NODROP (overflow kept),
	 * CQE_SKIP (5.17; poll update with user_data is 5.13) */
	if ((prm.features & (IORING_FEAT_EXT_ARG | IORING_FEAT_NODROP | IORING_FEAT_CQE_SKIP)) !=
	    (IORING_FEAT_EXT_ARG | IORING_FEAT_NODROP | IORING_FEAT_CQE_SKIP)) {
		io_uring_queue_exit(ring);
		return -ENOSYS;
	}
	*setup = prm.flags;
	return 0;
}

/* io_uring_setup refused (EPERM: seccomp, io_uring_disabled; ENOSYS).
 * A malformed UEPOLL_URING_SETUP is not the kernel's answer: the probe
 * takes the default, and uring_init() says EINVAL */
static int uring_probe(void)
{
	struct io_uring ring;
	unsigned setup;
	int mode = setup_mode();
	int ret = ring_setup(&ring, 4, mode < 0 ? SETUP_COOP : mode, &setup);

	if (ret == 0)
		io_uring_queue_exit(&ring);
	return ret;
}

/*
 * The automatic choice passes uring over where the kernel has
 * IORING_OP_EPOLL_WAIT (Linux 6.15): the epoll backend then folds
 * uepoll_ctl_wait() into one io_uring_enter(), and uring, measured there,
 * loses to epoll where connections come and go, with one producer and in
 * idle CPU: the default must never lose (README, "Backends", has the
 * figures).
 * UEPOLL_URING_AUTO=1 keeps uring in the choice (tests, measurements).
 */
static int uring_pass_over(void)
{
	const char *e = getenv("UEPOLL_URING_AUTO");
	struct io_uring_probe *probe;
	struct io_uring ring;
	int ret = 0;

	if (e && !strcmp(e, "1"))
		return 0;
	if (io_uring_queue_init(2, &ring, 0) < 0)
		return 0;
	probe = io_uring_get_probe_ring(&ring);
	if (probe) {
		ret = io_uring_opcode_supported(probe, UEPOLL_OP_EPOLL_WAIT);
		io_uring_free_probe(probe);
	}
	io_uring_queue_exit(&ring);
	return ret;
}

/* the CQ's entries: UEPOLL_URING_CQ (1 to 65536; else -EINVAL), or
 * four per registration, 1024 to 65536 */
static int cq_size(unsigned n, unsigned *cq)
{
	uint32_t v;

	*cq = 1024;
	while (*cq < 4 * n && *cq < 65536)
		*cq <<= 1;
	if (__uepoll_env_uint("UEPOLL_URING_CQ", *cq, 65536, &v) || !v)
		return -EINVAL;
	*cq = v;
	return 0;
}

static int uring_init(struct uepoll *u, unsigned n, unsigned flags)
{
	struct uring_priv *p;
	unsigned i, cq;
	int ret, mode;

	/* the knobs first: a malformed one costs no allocation */
	mode = setup_mode();
	if (cq_size(n, &cq) < 0 || mode < 0)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->slots = calloc(n, sizeof(*p->slots));
	p->freel = calloc(n, sizeof(*p->freel));
	p->rearm = calloc(n, sizeof(*p->rearm));
	p->lvl = calloc(n, sizeof(*p->lvl));
	p->bslot = calloc(n, sizeof(*p->bslot));
	p->pslot = calloc(n, sizeof(*p->pslot));
	p->pfd = calloc(n + 1, sizeof(*p->pfd));
	p->aux = __uepoll_aux_new();
	if (!p->slots || !p->freel || !p->rearm || !p->lvl || !p->bslot || !p->pslot ||
	    !p->pfd || !p->aux) {
		ret = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < n; i++) {
		p->slots[i].fd = -1;
		p->slots[i].chk = -1;
		p->freel[i] = n - 1 - i;	/* lowest slot first */
	}
	p->nfree = n;
	STAT_SYS(u);
	ret = ring_setup(&p->ring, cq, mode, &p->setup);
	if (ret < 0)
		goto fail;
	p->skip = IOSQE_CQE_SKIP_SUCCESS;
	p->fresh_ok = !(p->setup & (IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SQPOLL));
	/* the ring fd is always O_CLOEXEC */
	if (!(flags & UEPOLL_CLOEXEC)) {
		STAT_SYS(u);
		fcntl(p->ring.ring_fd, F_SETFD, 0);
	}
	pthread_mutex_init(&p->lock, NULL);
	u->fd = p->ring.ring_fd;
	u->priv = p;
	return 0;
fail:
	__uepoll_aux_free(p->aux);
	free(p->slots);
	free(p->freel);
	free(p->rearm);
	free(p->lvl);
	free(p->bslot);
	free(p->pslot);
	free(p->pfd);
	free(p);
	return ret;
}

/*
 * The kernel writes a check's buffer until its completion, and the
 * ring's exit does not wait for io-wq: wait for those in flight (100 ms
 * at most; their memory is left to them past that).  1: p->chk may go.
 */
static unsigned check_scan(struct uepoll *u, struct uring_priv *p);

static int checks_drain(struct uepoll *u, struct uring_priv *p)
{
	int64_t t0 = __uepoll_now_ns();
	unsigned i, busy;

	for (;;) {
		check_scan(u, p);
		for (i = 0, busy = 0; i < CHECKS_MAX; i++)
			busy += p->chk[i].state == CHK_FLIGHT || p->chk[i].state == CHK_ORPHAN;
		if (!busy)
			return 1;
		if (__uepoll_now_ns() - t0 > 100000000)
			return 0;
		STAT_SYS(u);
		io_uring_get_events(&p->ring);
		sched_yield();
	}
}

static void uring_exit(struct uepoll *u)
{
	struct uring_priv *p = u->priv;

	if (p->chk && checks_drain(u, p))
		free(p->chk);
	io_uring_queue_exit(&p->ring);	/* cancels every poll, unmaps, closes */
	pthread_mutex_destroy(&p->lock);
	__uepoll_aux_free(p->aux);
	fdmap_free(&p->map);
	free(p->slots);
	free(p->freel);
	free(p->rearm);
	free(p->lvl);
	free(p->bslot);
	free(p->pslot);
	free(p->pfd);
	free(p);
}

/*
 * A number per thread, never reused in the process: a thread's identity
 * that outlives it (a TLS address or a TID may be another thread's
 * later).  A fork()ed child's thread gets a new one: the polls of the
 * ring it shares are its parent's.
 */
static uint64_t tid_next;
static __thread uint64_t tid_self;
static pthread_once_t tid_once = PTHREAD_ONCE_INIT;

static void tid_child(void)
{
	tid_self = 0;
}

static void tid_init(void)
{
	pthread_atfork(NULL, NULL, tid_child);
}

static uint64_t thread_id(void)
{
	if (!tid_self) {
		pthread_once(&tid_once, tid_init);
		tid_self = __atomic_add_fetch(&tid_next, 1, __ATOMIC_RELAXED);
	}
	return tid_self;
}

/*
 * Fresh completions.  A poll's completion is posted by task work of the
 * thread that submitted the poll, and that work runs at the thread's
 * first return to user space after the wake-up (the exit of a system
 * call or of an interrupt; COOP_TASKRUN or the IPI of the plain setup),
 * before any code of the thread runs again.  So a completion posted
 * after a point the harvester reached in the library (this sample of
 * the CQ tail, right before its sleep or its enter), of a poll that it
 * submitted, is of a wake-up after the program's last return to user
 * space: the program cannot have read or written that file since.  Its
 * bits are then what the file has, as far as the wake-ups say:
 * recheck() takes such an event without polling the file when its bits
 * hold all the registration asks (nothing a poll could add but
 * EPOLLERR or EPOLLHUP, which come with wake-ups of their own) and the
 * registration never reported EPOLLERR, EPOLLHUP or EPOLLRDHUP (a
 * sticky bit that a wake-up of data would not carry).  Not with
 * DEFER_TASKRUN (the work waits for io_uring_enter(), after the program
 * ran), not after an overflow flush (those CQEs may be old), not once a
 * submit left SQEs for another thread to submit (their polls would be
 * its), and not in a harvest that is not the sleeper's.  The sample is a
 * plain load: the completions that count are this thread's own stores.
 * fresh_end() at every return to the program (harvest, failed sleep).
 */
static void fresh_begin(struct uring_priv *p)
{
	/* relaxed: a latch that a submit of this thread or another clears
	 * under the lock; the SQEs it is about are the clearing thread's,
	 * and a poll's thread that the latch misses is still told by armer */
	if (!__atomic_load_n(&p->fresh_ok, __ATOMIC_RELAXED) || p->fresh_on)
		return;
	p->fresh_from = IO_URING_READ_ONCE(*p->ring.cq.ktail);
	p->fresh_tid = thread_id();
	p->fresh_on = 1;
}

static void fresh_end(struct uring_priv *p)
{
	p->fresh_on = 0;
}

/* the CQE at CQ index idx is fresh, for polls of p->fresh_tid */
static int fresh_cqe(const struct uring_priv *p, unsigned idx)
{
	return p->fresh_on && (int32_t)(idx - p->fresh_from) >= 0;
}

static struct io_uring_sqe *get_sqe(struct uepoll *u, struct uring_priv *p)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring);

	if (!sqe) {
		STAT_SYS(u);
		io_uring_submit(&p->ring);
		sqe = io_uring_get_sqe(&p->ring);
	}
	return sqe;
}

/*
 * The kernel poll's mask.  io_uring drops a wake-up whose key shares
 * only EPOLLPRI with the mask (io_poll_wake(): IO_ASYNC_POLL_COMMON),
 * where epoll takes it: a socket's data wake-up, EPOLLIN | EPOLLPRI |
 * EPOLLRDNORM | EPOLLRDBAND (sock_def_readable()), would be lost to a
 * registration asking EPOLLPRI without EPOLLIN, urgent data included.
 * Such a poll also asks EPOLLRDBAND, which that key has; reap_cqe()
 * masks what the registration did not ask.
 */
static unsigned poll_mask(uint32_t events)
{
	unsigned m = events & ~(uint32_t)EV_FLAGS;

	return (m & EPOLLPRI) ? m | EPOLLRDBAND : m;
}

/*
 * Queue a fresh poll for slot s (current generation); caller submits.
 * Single-shot for ONESHOT, unless its last one ended on bits it did not
 * ask (reap_cqe()): then multishot, and fired keeps the ONESHOT rule.
 */
static int arm(struct uepoll *u, struct uring_priv *p, uint32_t s)
{
	struct uslot *sl = &p->slots[s];
	struct io_uring_sqe *sqe = get_sqe(u, p);

	if (!sqe)
		return -EBUSY;
	sl->multi = !(sl->events & EPOLLONESHOT) || sl->idle;
	if (sl->multi)
		io_uring_prep_poll_multishot(sqe, sl->fd, poll_mask(sl->events));
	else
		io_uring_prep_poll_add(sqe, sl->fd, poll_mask(sl->events));
	io_uring_sqe_set_data64(sqe, UD(s, sl->gen));
	sl->armed = 1;
	sl->idle = 0;
	sl->armer = thread_id();
	return 0;
}

/*
 * Queue an async cancel of the poll with user_data UD(s, g): 0, or -EBUSY
 * without an SQE.  The caller submits: DEL at once, the harvest at its end
 * (need_submit).
 */
static int cancel_poll(struct uepoll *u, struct uring_priv *p, uint32_t s, uint32_t g)
{
	struct io_uring_sqe *sqe = get_sqe(u, p);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_cancel64(sqe, UD(s, g), 0);
	io_uring_sqe_set_data64(sqe, UD_INTERNAL | UD_REMOVE | UD(s, g));
	sqe->flags |= (uint8_t)p->skip;
	return 0;
}

/* submit the SQEs queued; in a batch, at its end (batch_submit()) */
static int submit(struct uepoll *u, struct uring_priv *p)
{
	int ret;

	if (p->batching)
		return 0;
	STAT_SYS(u);
	ret = io_uring_submit(&p->ring);
	if (io_uring_sq_ready(&p->ring))	/* another thread may submit them */
		__atomic_store_n(&p->fresh_ok, 0, __ATOMIC_RELAXED);
	return ret < 0 ? ret : 0;
}


/*
 * The checks in the ring.  A check is the statx() of a change's fd that
 * ring_apply() submitted with the sleep; its completion (check_cqe(), in
 * any thread's harvest, or check_scan(), which reads the CQ without
 * consuming it) makes the entry CHK_DONE.  Its owner is the sleep's
 * evaluation (ring_eval()), which frees it (check_put()); an entry whose
 * completion is not in sight then is CHK_ORPHAN until it comes: the
 * kernel writes its buffer until then.  A slot whose ADD is still
 * being checked has chk >= 0: a change of its fd reads the check first
 * (slot_settle()).  Caller holds p->lock throughout.
 */
static int check_get(struct uring_priv *p)
{
	unsigned i;

	for (i = 0; i < CHECKS_MAX; i++) {
		struct ucheck *c = &p->chk[i];

		if (c->state != CHK_FREE)
			continue;
		c->state = CHK_FLIGHT;
		c->seq = ++p->chk_seq;
		memset(&c->stx, 0, sizeof(c->stx));
		p->chk_live++;
		return (int)i;
	}
	return -1;
}

static void check_put(struct uring_priv *p, int i)
{
	struct ucheck *c = &p->chk[i];

	if (c->state == CHK_FLIGHT) {
		c->state = CHK_ORPHAN;
		return;
	}
	c->state = CHK_FREE;
	p->chk_live--;
}

/* a completion of a check or a count timeout: 1 if it was one, else 0 */
static int special_cqe(struct uring_priv *p, uint64_t ud, int res)
{
	uint32_t v = (uint32_t)(ud >> 32) & GEN_MASK;
	struct ucheck *c;

	if ((uint32_t)ud == SLOT_TMO) {
		if (v == (p->tmo_seq & GEN_MASK))
			p->tmo_done = 1;
		return 1;
	}
	if ((uint32_t)ud != SLOT_CHECK)
		return 0;
	c = &p->chk[v & (CHECKS_MAX - 1)];
	if (CHECK_V(c->seq, v & (CHECKS_MAX - 1)) != v)
		return 1;	/* an entry since reused */
	if (c->state == CHK_FLIGHT) {
		c->state = CHK_DONE;
		c->res = res;
	} else if (c->state == CHK_ORPHAN) {
		c->state = CHK_FREE;
		p->chk_live--;
	}
	return 1;
}

/*
 * The special completions in the CQ, read where they are: the tail's
 * acquire load pairs with the kernel's release store of it in
 * io_commit_cqring() (after the CQE and, for a statx, after its
 * copy_to_user() of the buffer), as reap() does.  The head is ours:
 * every consumer moves it under p->lock.  Returns how many completions
 * of live registrations it passed (a harvest has events to take).
 */
static unsigned check_scan(struct uepoll *u, struct uring_priv *p)
{
	struct io_uring *ring = &p->ring;
	unsigned head = *ring->cq.khead;
	unsigned tail = io_uring_smp_load_acquire(ring->cq.ktail);
	unsigned others = 0;

	for (; head != tail; head++) {
		const struct io_uring_cqe *cqe = &ring->cq.cqes[head & *ring->cq.kring_mask];

		uint64_t ud = cqe->user_data;
		uint32_t s = (uint32_t)ud;

		if ((ud & (UD_INTERNAL | UD_REMOVE)) == (UD_INTERNAL | UD_REMOVE))
			special_cqe(p, ud, cqe->res);
		else if (!(ud & UD_INTERNAL) && s < u->n && p->slots[s].fd >= 0 &&
			 p->slots[s].gen == ((uint32_t)(ud >> 32) & GEN_MASK))
			others++;
	}
	return others;
}

/*
 * Check i done: 0; or -1 if its completion did not come within 2 ms
 * (io-wq runs the statx; an enter runs what task work it needs and
 * flushes overflowed completions).  A rare wait: the sleep waits for the
 * checks it submitted (ring_sleep()).
 */
static int check_settle(struct uepoll *u, struct uring_priv *p, int i)
{
	const struct ucheck *c = &p->chk[i];
	int64_t t0 = 0, now;

	for (;;) {
		if (c->state == CHK_DONE)
			return 0;
		check_scan(u, p);
		if (c->state == CHK_DONE)
			return 0;
		now = __uepoll_now_ns();
		if (!t0)
			t0 = now;
		else if (now - t0 > 2000000)
			return -1;
		STAT_SYS(u);
		io_uring_get_events(&p->ring);
		check_scan(u, p);
		if (c->state != CHK_DONE)
			sched_yield();
	}
}

/*
 * What check i says of fd: the kind as __uepoll_fd_kind() gives it, and
 * *id; where it cannot say (no check, not done in time, an error but
 * EBADF), an fstat() now (which sets __uepoll_ident).
 */
static int check_read(struct uepoll *u, struct uring_priv *p, int i, int fd,
		      struct uepoll_ident *id)
{
	int kind;

	if (i >= 0 && check_settle(u, p, i) == 0) {
		const struct ucheck *c = &p->chk[i];

		if (c->res == -EBADF) {
			id->valid = 0;
			return -EBADF;
		}
		if (c->res == 0) {
			id->fd = fd;
			id->valid = 1;
			id->dev = (uint64_t)makedev(c->stx.stx_dev_major, c->stx.stx_dev_minor);
			id->ino = c->stx.stx_ino;
			return S_ISREG(c->stx.stx_mode) || S_ISDIR(c->stx.stx_mode) ? -EPERM : 0;
		}
	}
	kind = __uepoll_fd_kind(u, fd);
	*id = __uepoll_ident;
	return kind;
}

/* check_read(), its entry put */
static int check_kind(struct uepoll *u, struct uring_priv *p, int i, int fd,
		      struct uepoll_ident *id)
{
	int kind = check_read(u, p, i, fd, id);

	if (i >= 0)
		check_put(p, i);
	return kind;
}

/*
 * The three ctl operations, called with p->lock held (as epoll's
 * do_epoll_ctl() calls ep_insert/ep_modify/ep_remove): uring_ctl() looks
 * the fd up and answers EEXIST/ENOENT itself.
 */

/* ADD of fd, not registered: a free slot, a new generation, a poll */
static int ctl_add(struct uepoll *u, struct uring_priv *p, int fd,
		   const struct epoll_event *ev)
{
	struct uslot *sl;
	int s, ret;

	if (!p->nfree)
		return -ENOSPC;
	s = (int)p->freel[p->nfree - 1];
	ret = fdmap_set(&p->map, fd, s);
	if (ret)
		return ret;
	p->nfree--;
	sl = &p->slots[s];
	sl->fd = fd;
	sl->gen = (sl->gen + 1) & GEN_MASK;
	sl->events = ev->events;
	sl->data = ev->data.u64;
	sl->fired = 0;
	sl->idle = 0;
	sl->inlvl = 0;
	sl->hupped = 0;
	sl->dev = __uepoll_ident.valid && __uepoll_ident.fd == fd ? __uepoll_ident.dev : 0;
	sl->ino = __uepoll_ident.valid && __uepoll_ident.fd == fd ? __uepoll_ident.ino : 0;
	sl->chk = -1;
	ret = arm(u, p, (uint32_t)s);
	if (!ret)
		ret = submit(u, p);
	if (ret) {	/* roll back */
		sl->fd = -1;
		sl->armed = 0;
		fdmap_set(&p->map, fd, -1);
		p->freel[p->nfree++] = (uint32_t)s;
	}
	return ret;
}

/*
 * MOD of slot s: a new generation, the live poll updated (or a new one).
 * A poll update changes the mask and user_data but keeps the poll's
 * behaviour flags (io_poll_remove(): "keep behavior flags"): a MOD of a
 * registration with a single-shot poll (ONESHOT) to one without ONESHOT
 * cancels the poll and arms a multishot one; an updated single-shot poll
 * would end at its first event and be re-armed, reporting the same
 * readiness twice.  A multishot poll serves a ONESHOT registration
 * (fired keeps the rule).
 */
static int ctl_mod(struct uepoll *u, struct uring_priv *p, int s,
		   const struct epoll_event *ev)
{
	struct uslot *sl = &p->slots[s];
	struct io_uring_sqe *sqe;
	uint32_t oldgen = sl->gen;
	unsigned f;
	int ret;

	if (sl->armed && !sl->multi && !(ev->events & EPOLLONESHOT)) {
		ret = cancel_poll(u, p, (uint32_t)s, oldgen);
		if (ret)
			return ret;
		sl->armed = 0;
	}
	sl->gen = (sl->gen + 1) & GEN_MASK;
	sl->events = ev->events;
	sl->data = ev->data.u64;
	sl->fired = 0;
	sl->idle = 0;
	/* the new poll (or the updated one) reports what is ready now */
	sl->inlvl = 0;
	sl->hupped = 0;
	if (!sl->armed) {
		ret = arm(u, p, (uint32_t)s);
		return ret ? ret : submit(u, p);
	}
	f = IORING_POLL_UPDATE_EVENTS | IORING_POLL_UPDATE_USER_DATA;
	if (!(sl->events & EPOLLONESHOT))
		f |= IORING_POLL_ADD_MULTI;
	sqe = get_sqe(u, p);
	if (!sqe)
		return -EBUSY;
	/* fails with ENOENT if the poll ended: re-armed at harvest */
	io_uring_prep_poll_update(sqe, UD(s, oldgen), UD(s, sl->gen),
				  poll_mask(sl->events), f);
	io_uring_sqe_set_data64(sqe, UD_INTERNAL | UD(s, sl->gen));
	sqe->flags |= (uint8_t)p->skip;
	return submit(u, p);
}

/* DEL of slot s, registered for fd: cancel the poll, free the slot */
static int ctl_del(struct uepoll *u, struct uring_priv *p, int s, int fd)
{
	struct uslot *sl = &p->slots[s];

	if (sl->armed && cancel_poll(u, p, (uint32_t)s, sl->gen) == 0)
		submit(u, p);
	/* from here on, nothing of this generation is reported */
	sl->gen = (sl->gen + 1) & GEN_MASK;
	sl->fd = -1;
	sl->armed = 0;
	sl->inlvl = 0;
	sl->chk = -1;
	fdmap_set(&p->map, fd, -1);
	p->freel[p->nfree++] = (uint32_t)s;
	return 0;
}

/*
 * Slot s's ADD is still being checked (a ring sleep of another thread,
 * or one whose completion had not come): what its check says now.  The
 * file known, it is the slot's; the number was closed or names a
 * regular file or directory: the ADD fails (its sleep's evaluation says
 * so), and the registration goes.  The check's entry stays its sleep's.
 */
static void slot_settle(struct uepoll *u, struct uring_priv *p, int s)
{
	struct uslot *sl = &p->slots[s];
	struct uepoll_ident id, saved = __uepoll_ident;	/* the caller's */
	int kind;

	if (sl->chk < 0)
		return;
	/* (not in time: the file the number names now) */
	kind = check_read(u, p, sl->chk, sl->fd, &id);
	__uepoll_ident = saved;
	sl->chk = -1;
	if (kind) {
		ctl_del(u, p, s, sl->fd);
		return;
	}
	sl->dev = id.valid ? id.dev : 0;
	sl->ino = id.valid ? id.ino : 0;
}

/* ctl, caller holds p->lock */
static int uring_ctl_locked(struct uepoll *u, struct uring_priv *p, int op, int fd,
			    struct epoll_event *ev)
{
	int s = fdmap_get(&p->map, fd);
	const struct uepoll_ident *id = &__uepoll_ident;

	if (s >= 0 && p->slots[s].chk >= 0) {
		slot_settle(u, p, s);
		s = fdmap_get(&p->map, fd);
	}

	/* fd was closed and its number reused since the ADD: that
	 * registration went with its file, as in epoll */
	if (s >= 0 && id->valid && id->fd == fd &&
	    (id->dev != p->slots[s].dev || id->ino != p->slots[s].ino)) {
		ctl_del(u, p, s, fd);
		s = -1;
	}

	switch (op) {
	case EPOLL_CTL_ADD:
		return s >= 0 ? -EEXIST : ctl_add(u, p, fd, ev);
	case EPOLL_CTL_MOD:
		return s < 0 ? -ENOENT : ctl_mod(u, p, s, ev);
	case EPOLL_CTL_DEL:
		return s < 0 ? -ENOENT : ctl_del(u, p, s, fd);
	}
	return 0;
}

/* a change found fd closed or a regular file: its registration, if any, goes */
static void uring_gone_locked(struct uepoll *u, struct uring_priv *p, int fd)
{
	int s = fdmap_get(&p->map, fd);

	if (s >= 0)
		ctl_del(u, p, s, fd);
}

static void uring_gone(struct uepoll *u, int fd)
{
	struct uring_priv *p = u->priv;

	pthread_mutex_lock(&p->lock);
	uring_gone_locked(u, p, fd);
	pthread_mutex_unlock(&p->lock);
}

static int uring_ctl(struct uepoll *u, int op, int fd, struct epoll_event *ev)
{
	struct uring_priv *p = u->priv;
	int ret;

	pthread_mutex_lock(&p->lock);
	ret = uring_ctl_locked(u, p, op, fd, ev);
	pthread_mutex_unlock(&p->lock);
	return ret;
}

/*
 * The SQEs a batch queued, in one io_uring_enter().  Should the kernel
 * refuse them (-EBUSY, -ENOMEM: it keeps none), they stay queued and the
 * next submit takes them, the harvest's at the latest (need_submit); the
 * registrations are in the table already, and a poll armed late reports
 * the readiness present then.
 */
static void batch_submit(struct uepoll *u, struct uring_priv *p)
{
	int tries = 0, ret;

	while (io_uring_sq_ready(&p->ring)) {
		STAT_SYS(u);
		ret = io_uring_submit(&p->ring);
		if (ret < 0 && ++tries >= 4) {
			p->need_submit = 1;
			/* the harvester submits them */
			__atomic_store_n(&p->fresh_ok, 0, __ATOMIC_RELAXED);
			return;
		}
	}
}

/*
 * Changes ch[0..m), m <= UEPOLL_AUX_MAX: the fstat() each one's checks
 * need, all in one io_uring_enter() of the batch helper (batch.c:
 * IORING_OP_STATX); then, under the lock, each change's checks and its
 * table operation in order (EEXIST, ENOENT, ENOSPC from the table, as
 * uepoll_ctl() has them), their SQEs queued.  Returns with p->lock held
 * and the SQEs not submitted.
 */
static void batch_apply(struct uepoll *u, struct uring_priv *p, struct uepoll_change *ch,
			unsigned m)
{
	int fds[UEPOLL_AUX_MAX], kind[UEPOLL_AUX_MAX];
	struct uepoll_ident id[UEPOLL_AUX_MAX];
	struct epoll_event e;
	unsigned k;

	for (k = 0; k < m; k++) {
		fds[k] = ch[k].fd;
		kind[k] = UEPOLL_KIND_UNKNOWN;
		id[k].fd = -1;
		id[k].valid = 0;
	}
	__uepoll_aux_fd_kinds(u, p->aux, fds, kind, id, m);
	pthread_mutex_lock(&p->lock);
	p->batching = 1;
	for (k = 0; k < m; k++) {
		struct uepoll_change *c = &ch[k];

		__uepoll_ident = id[k];
		c->res = __uepoll_ctl_check(u, c->op, c->fd, &c->ev, &e, kind[k]);
		if (__uepoll_number_gone(c->res, c->fd))
			uring_gone_locked(u, p, c->fd);
		if (!c->res)
			c->res = uring_ctl_locked(u, p, c->op, c->fd, &e);
	}
	p->batching = 0;
}

/*
 * n changes by UEPOLL_AUX_MAX, each run of them applied by batch_apply()
 * and submitted but the last: returns with p->lock held and the last
 * run's SQEs queued, for the caller to submit.
 */
static void batch_apply_all(struct uepoll *u, struct uring_priv *p, struct uepoll_change *ch,
			    unsigned n)
{
	unsigned i, m;

	for (i = 0; i < n; i += m) {
		m = n - i < UEPOLL_AUX_MAX ? n - i : UEPOLL_AUX_MAX;
		batch_apply(u, p, ch + i, m);
		if (i + m == n)
			return;
		batch_submit(u, p);
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_lock(&p->lock);	/* n == 0 */
}

/* uepoll_ctl_batch(): one submit for each UEPOLL_AUX_MAX changes */
static int uring_batch(struct uepoll *u, struct uepoll_change *ch, unsigned n)
{
	struct uring_priv *p = u->priv;

	batch_apply_all(u, p, ch, n);
	batch_submit(u, p);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static void queue_rearm(struct uring_priv *p, uint32_t s)
{
	struct uslot *sl = &p->slots[s];

	if (!sl->rearm) {
		sl->rearm = 1;
		p->rearm[p->nrearm++] = s;
	}
}

/*
 * A poll update (MOD) or cancel (DEL) failed (success posts nothing).
 *  update, ENOENT: the poll had ended (fired ONESHOT, overflow): re-arm.
 *  update, other (EALREADY: the poll was completing, its task work still
 *    pending in the submitting thread): the old poll lives on with the old
 *    user_data; cancel it, and re-arm.
 *  cancel: IORING_OP_ASYNC_CANCEL of a poll marks it cancelled and cannot
 *    fail but with ENOENT (already gone): nothing to do.  (A POLL_REMOVE
 *    would answer EALREADY in the same race and leave the poll alive.)
 */
static void internal_cqe(struct uepoll *u, struct uring_priv *p, uint32_t s, uint32_t g,
			 uint64_t ud, int res)
{
	struct uslot *sl = &p->slots[s];

	if (res >= 0 || res == -ENOENT) {
		if (!(ud & UD_REMOVE) && res < 0 && sl->fd >= 0 && sl->gen == g) {
			sl->armed = 0;
			queue_rearm(p, s);
		}
		return;
	}
	if (ud & UD_REMOVE)
		return;
	if (cancel_poll(u, p, s, (g - 1) & GEN_MASK) == 0)
		p->need_submit = 1;
	if (sl->fd >= 0 && sl->gen == g) {
		sl->armed = 0;
		queue_rearm(p, s);
	}
}

/* the events one harvest collects: evs[0..cnt), at most max */
struct batch {
	struct epoll_event *evs;
	uint32_t *slot;		/* slot[i]: the slot of evs[i] (p->bslot) */
	int max;
	int cnt;
	uint32_t stamp;		/* marks the slots that have an event in evs */
};

/* a level-triggered registration: reported while its file is ready */
static inline int is_level(const struct uslot *sl)
{
	return !(sl->events & EPOLLET);
}

/*
 * The bits of its mask a level-triggered slot is still to be polled for,
 * the events of its pollfd (recheck(), uring_level_sleep()): poll(2)
 * reports POLLERR and POLLHUP unasked, as epoll does.
 */
static inline uint32_t level_asks(const struct uslot *sl)
{
	return sl->events & ~sl->drained & UEPOLL_HINT_BITS;
}

/* hinted drained of every bit it asks (uepoll_drained()): off the level
 * list until its next event */
static inline int level_drained(const struct uslot *sl)
{
	return sl->drained && !level_asks(sl);
}

/*
 * The level list compacted to the slots that are on it (DEL and MOD
 * take one off lazily: inlvl cleared, fd < 0 once freed), each once
 * (inlvl 2 marks one kept).  trim: without those level_drained() too
 * (uepoll_drained(), a queued DEL: defer_del_hints()), which leave it:
 * the list then holds only what recheck() would poll.  A sleep decides
 * on that list whether it must ask files (uring_level_sleep()) or may
 * sleep in the ring's enter (ring_sleep()): after the deferred DELs of a
 * pass the list often holds nothing else, and then the changes and the
 * sleep are one system call, not a flush and a level sleep that finds
 * nothing to ask.  Without trim, level_add() makes room.  Caller holds
 * p->lock.
 */
static void level_compact(struct uring_priv *p, int trim)
{
	unsigned i, w = 0;

	for (i = 0; i < p->nlvl; i++) {
		struct uslot *x = &p->slots[p->lvl[i]];

		if (x->fd < 0 || x->inlvl != 1)
			continue;
		if (trim && level_drained(x)) {
			x->inlvl = 0;	/* drained: until its next event */
			continue;
		}
		x->inlvl = 2;
		p->lvl[w++] = p->lvl[i];
	}
	for (i = 0; i < w; i++)
		p->slots[p->lvl[i]].inlvl = 1;
	p->nlvl = w;
}

/*
 * Put slot s on the level list (once).  DEL and MOD take a slot off
 * lazily (inlvl cleared, its entry left): a slot put back on meanwhile
 * has two entries, so a full list is first compacted to the slots that
 * are on it, each once (inlvl 2 marks one kept); s is not among them.
 */
static void level_add(struct uepoll *u, struct uring_priv *p, uint32_t s)
{
	struct uslot *sl = &p->slots[s];

	if (sl->inlvl)
		return;
	sl->prestamp = 0;	/* not polled by the last level sleep */
	if (p->nlvl == u->n)
		level_compact(p, 0);
	sl->inlvl = 1;
	p->lvl[p->nlvl++] = s;
}

/*
 * The events m of slot s's poll into the batch: ORed into the slot's
 * event when the batch has one already.  fresh: m is of a fresh
 * completion of a poll of the harvester (fresh_begin()); the event stays
 * unpolled while every one ORed into it is.  1 when the batch is full.
 */
static int batch_add(struct uepoll *u, struct uring_priv *p, struct batch *b, uint32_t s,
		     uint32_t m, int fresh)
{
	struct uslot *sl = &p->slots[s];

	if (m & (EPOLLERR | EPOLLHUP | EPOLLRDHUP))
		sl->hupped = 1;
	if (sl->stamp == b->stamp) {
		b->evs[sl->outidx].events |= m;
		sl->unpolled &= (uint8_t)fresh;
		HSTAT(u, coalesced, 1);
		return 0;
	}
	if (b->cnt == b->max)
		return 1;
	b->evs[b->cnt].events = m;
	b->evs[b->cnt].data.u64 = sl->data;
	b->slot[b->cnt] = s;
	sl->drained = 0;
	sl->unpolled = (uint8_t)fresh;
	sl->stamp = b->stamp;
	sl->outidx = b->cnt++;
	if (sl->events & EPOLLONESHOT)
		sl->fired = 1;
	/* its events are what recheck()'s poll says, and it stays ready */
	if (is_level(sl))
		level_add(u, p, s);
	return 0;
}

/*
 * One completion, caller holds p->lock.  An internal one (failed update or
 * cancel) goes to internal_cqe(); one of an older generation or a free
 * slot is dropped; a poll's events go into the batch (batch_add()).  A
 * poll that ended is queued for re-arm.  1 when the batch is full and the
 * CQE must stay in the ring for the next harvest, else 0 (consumed).
 */
static int reap_cqe(struct uepoll *u, struct uring_priv *p, struct batch *b,
		    const struct io_uring_cqe *cqe, int fresh)
{
	uint64_t ud = cqe->user_data;
	uint32_t s = (uint32_t)ud, g = (uint32_t)(ud >> 32) & GEN_MASK, m = 0;
	struct uslot *sl = s < u->n ? &p->slots[s] : NULL;
	int more = !!(cqe->flags & IORING_CQE_F_MORE);
	int res = cqe->res;

	if ((ud & UD_INTERNAL) && !sl && special_cqe(p, ud, res))
		return 0;
	if ((ud & UD_INTERNAL) && sl) {
		internal_cqe(u, p, s, g, ud, res);
		return 0;
	}
	if (!sl || sl->fd < 0 || sl->gen != g) {
		HSTAT(u, stale, 1);
		return 0;
	}
	if (res > 0 && !sl->fired) {
		m = (uint32_t)res & (sl->events | EPOLLERR | EPOLLHUP) & ~(uint32_t)EV_FLAGS;
		if (m && batch_add(u, p, b, s, m, fresh && sl->armer == p->fresh_tid))
			return 1;
	}
	if (!more) {
		sl->armed = 0;
		/* ended without F_MORE: re-arm unless ONESHOT did its job
		 * or the poll failed for good (fd gone: EBADF...).  A
		 * single-shot one that ended on bits the registration did
		 * not ask (io_uring adds EPOLLRDHUP to a poll for EPOLLIN,
		 * EPOLLRDNORM or EPOLLRDBAND) would end again at once:
		 * re-armed multishot */
		if (!sl->fired && (res >= 0 || res == -ECANCELED)) {
			sl->idle = res > 0 && !m;
			queue_rearm(p, s);
		}
	}
	return 0;
}

/*
 * The flags of the SQ ring that ask a harvest to enter: overflowed CQEs
 * always; IORING_SQ_TASKRUN (COOP_TASKRUN) unless it outlived an enter.
 * The flag is the ring's, not a thread's: it stays set while task work
 * of another submitting thread waits for that thread, and after the
 * kernel cancelled an exited thread's polls from its fallback, which
 * does not clear it (6.12 to 6.18).  Our enter cannot clear it then, so
 * reap() marks it stale and harvests stop entering for it until it is
 * seen clear.  Work of this thread that comes meanwhile runs at its next
 * system call, the sleep at the latest (a signal-like notification ends
 * it).  tr_stale is relaxed: a lost mark costs one enter, a stale mark
 * one sleep's delay; nothing is published through it.
 */
static unsigned taskrun_wanted(struct uring_priv *p, unsigned kflags)
{
	int stale = __atomic_load_n(&p->tr_stale, __ATOMIC_RELAXED);

	if (!stale)
		return kflags & (IORING_SQ_CQ_OVERFLOW | IORING_SQ_TASKRUN);
	if (!(kflags & IORING_SQ_TASKRUN))
		__atomic_store_n(&p->tr_stale, 0, __ATOMIC_RELAXED);
	return kflags & IORING_SQ_CQ_OVERFLOW;
}

/*
 * Reap the CQ into the batch, caller holds p->lock: every completion up to
 * the tail; then, while the kernel flags overflowed CQEs or pending task
 * work (taskrun_wanted()), flush them into the CQ (a system call) and reap
 * again, 10 passes at most.  Stops at a full batch.
 */
static void reap(struct uepoll *u, struct uring_priv *p, struct batch *b)
{
	struct io_uring *ring = &p->ring;
	unsigned kflags, entered = 0;
	int full = 0, loops = 0;

	for (;;) {
		unsigned head = *ring->cq.khead;
		unsigned tail = io_uring_smp_load_acquire(ring->cq.ktail);
		unsigned seen = 0;

		while (head != tail) {
			full = reap_cqe(u, p, b, &ring->cq.cqes[head & *ring->cq.kring_mask],
					fresh_cqe(p, head));
			if (full)
				break;	/* leave this CQE for the next harvest */
			head++;
			seen++;
		}
		if (seen)
			io_uring_cq_advance(ring, seen);
		if (full || loops++ > 8)
			break;
		kflags = IO_URING_READ_ONCE(*ring->sq.kflags);
		if (entered && !seen && (kflags & IORING_SQ_TASKRUN) &&
		    !(kflags & IORING_SQ_CQ_OVERFLOW)) {
			/* our enter ran no work of this ring: another thread's */
			__atomic_store_n(&p->tr_stale, 1, __ATOMIC_RELAXED);
			break;
		}
		kflags = taskrun_wanted(p, kflags);
		/*
		 * With completions in the batch, pending task work waits: if
		 * it is ours it runs at our next system call, which a caller
		 * with events to handle makes, and the next harvest takes
		 * what it completes; an enter here would be one more call per
		 * busy harvest.  An empty batch enters: it is why a caller
		 * would sleep.
		 */
		if (b->cnt)
			kflags &= ~IORING_SQ_TASKRUN;
		if (!kflags)
			break;
		/* flush overflowed CQEs / run deferred task work */
		if (kflags & IORING_SQ_CQ_OVERFLOW) {
			HSTAT(u, overflows, 1);
			fresh_end(p);	/* flushed CQEs may be old */
		} else {
			fresh_begin(p);	/* what our work posts now is fresh */
		}
		STAT_SYS(u);
		io_uring_get_events(ring);
		entered = 1;
	}
}

/*
 * Re-arm the polls reap() queued (ended, and still wanted: registered, not
 * a fired ONESHOT) and submit them with the cancels internal_cqe() queued;
 * caller holds p->lock.
 */
static void rearm_queued(struct uepoll *u, struct uring_priv *p)
{
	unsigned i;

	for (i = 0; i < p->nrearm; i++) {
		uint32_t s = p->rearm[i];
		struct uslot *sl = &p->slots[s];

		sl->rearm = 0;
		if (sl->fd >= 0 && !sl->armed && !sl->fired && arm(u, p, s) == 0) {
			HSTAT(u, rearms, 1);
			p->need_submit = 1;
		}
	}
	p->nrearm = 0;
	if (p->need_submit) {
		p->need_submit = 0;
		submit(u, p);
	}
}

/* drop the events of the batch that came to nothing (recheck()) */
static void batch_compact(struct uring_priv *p, struct batch *b)
{
	int j, w;

	for (j = 0, w = 0; j < b->cnt; j++) {
		if (!b->evs[j].events)
			continue;
		if (w != j) {
			b->evs[w] = b->evs[j];
			b->slot[w] = b->slot[j];
			p->slots[b->slot[w]].outidx = w;
		}
		w++;
	}
	b->cnt = w;
}

/*
 * The level list's registrations, caller holds p->lock: one poll(2) of
 * their files, zero timeout.  Each gets what its file's poll returns,
 * masked as epoll_wait() masks it (the registration's events, EPOLLERR,
 * EPOLLHUP; poll(2) applies the same mask, the bits are epoll's): one in
 * the batch has its event set to that, or dropped if that is nothing
 * (epoll_wait() reports nothing then, and a ONESHOT one is not fired:
 * its poll is re-armed); one not in it is added if that is something
 * (left on the list if the batch is full).  Those with something stay on
 * the list, but for fired ONESHOT ones; the others leave it until their
 * next event.  A poll(2) that fails (ENOMEM, EINTR) changes nothing:
 * the list is polled again at the next harvest.
 * lazy (uepoll_set_lazy_poll(), after a level sleep): one with a
 * completion in this harvest keeps the completion's bits, unpolled.
 * A fired ONESHOT one not in this batch (a lazy harvest left it on the
 * list) leaves it: reported once.
 */
/* slot sl's event m in this batch may go unpolled (fresh_begin()) */
static int unpolled_ok(const struct uslot *sl, uint32_t m)
{
	uint32_t ask = sl->events & ~(uint32_t)(EV_FLAGS | EPOLLERR | EPOLLHUP);

	return sl->unpolled && !sl->hupped && !(ask & ~m);
}

static void recheck(struct uepoll *u, struct uring_priv *p, struct batch *b, int lazy)
{
	unsigned i, k = 0, n = p->nlvl, npoll = 0;

	for (i = 0; i < n; i++) {
		uint32_t s = p->lvl[i];
		struct uslot *sl = &p->slots[s];
		int pre;

		if (sl->fd < 0 || !sl->inlvl)
			continue;	/* DEL or MOD took it off (lazily) */
		if (level_drained(sl) || (sl->fired && sl->stamp != b->stamp)) {
			sl->inlvl = 0;	/* drained, or fired: until its next event */
			continue;
		}
		/*
		 * Answered by the level sleep just before: not polled again (a
		 * negative fd: poll(2) skips it).  Not when this harvest has a
		 * completion of it: that wake-up may have come after the
		 * sleep's answer, which would then drop the event.  Answered
		 * by fresh completions (fresh_begin()) holding every bit it
		 * asks: not polled either.
		 */
		pre = (p->pre && sl->prestamp == p->prestamp && sl->stamp != b->stamp) ||
		      (sl->stamp == b->stamp && (lazy || unpolled_ok(sl, b->evs[sl->outidx].events)));
		p->pslot[k] = s;
		p->pfd[k].fd = pre ? -1 : sl->fd;
		p->pfd[k].events = (short)level_asks(sl);
		p->pfd[k].revents = 0;
		npoll += !pre;
		k++;
	}
	if (!k) {
		p->nlvl = 0;
		return;
	}
	if (npoll) {
		HSTAT(u, rechecks, 1);
		STAT_SYS(u);
		if (poll(p->pfd, k, 0) < 0)
			return;
	}
	for (i = 0; i < k; i++) {
		struct uslot *sl = &p->slots[p->pslot[i]];

		if (p->pfd[i].fd < 0)	/* the sleep's answer, or (lazy) the completion's */
			p->pfd[i].revents = (short)(sl->stamp == b->stamp ?
						    b->evs[sl->outidx].events : sl->prerev);
	}
	p->nlvl = 0;
	for (i = 0; i < k; i++) {
		uint32_t s = p->pslot[i];
		struct uslot *sl = &p->slots[s];
		uint32_t m = (uint32_t)(uint16_t)p->pfd[i].revents &
			     (sl->events | EPOLLERR | EPOLLHUP) & ~(uint32_t)EV_FLAGS;

		sl->inlvl = 0;
		if (sl->stamp == b->stamp) {
			b->evs[sl->outidx].events = m;
			if (!m && (sl->events & EPOLLONESHOT)) {
				/* not fired after all: armed again */
				sl->fired = 0;
				if (!sl->armed)
					queue_rearm(p, s);
			}
		} else if (m && batch_add(u, p, b, s, m, 0)) {
			level_add(u, p, s);	/* batch full: the next harvest */
			continue;
		}
		if (m && !(sl->events & EPOLLONESHOT))
			level_add(u, p, s);
	}
	batch_compact(p, b);
}

/*
 * The level list at the end of a harvest; due: it had registrations
 * before this harvest's completions.  uepoll_set_lazy_poll(): a harvest
 * that took new completions leaves recheck()'s poll(2) for later, and
 * its level-triggered events are the completions' bits; of those that
 * had a poll due, __uepoll_lazy_poll(u) in a row at most.  The first
 * harvest with nothing new polls, and so does the harvest after a level
 * sleep, which takes the sleep's answers (lazily: a completion of this
 * harvest keeps its bits).
 */
static void level_check(struct uepoll *u, struct uring_priv *p, struct batch *b, unsigned due)
{
	unsigned lazy = __uepoll_lazy_poll(u);

	if (lazy && b->cnt && !p->pre && (!due || p->lazy_skips < lazy)) {
		p->lazy_skips += !!due;
		return;
	}
	recheck(u, p, b, lazy && p->pre);
	p->lazy_skips = 0;
}

static int uring_harvest(struct uepoll *u, struct epoll_event *evs, int max)
{
	struct uring_priv *p = u->priv;
	struct io_uring *ring = &p->ring;
	unsigned kflags = IO_URING_READ_ONCE(*ring->sq.kflags);
	struct batch b = { .evs = evs, .slot = p->bslot, .max = max };
	unsigned due;

	HSTAT(u, harvests, 1);
	/* the no-event fast path: no lock, no system call (nlvl: written
	 * under the lock by this harvester or, cleared, by nobody else) */
	if (!io_uring_cq_ready(ring) && !taskrun_wanted(p, kflags) && !p->nlvl) {
		fresh_end(p);
		return 0;
	}

	pthread_mutex_lock(&p->lock);
	b.stamp = ++p->batch;
	if (!b.stamp)
		b.stamp = ++p->batch;
	due = p->nlvl;
	reap(u, p, &b);
	if (p->nrearm && b.cnt < b.max) {
		/*
		 * A fresh poll reports what is ready at once, by the time the
		 * submit returns (task work run on the way out): take it in
		 * this harvest, as epoll_wait() would after the MOD that
		 * failed (ENOENT: a ONESHOT that fired meanwhile), not in the
		 * next one.  Once: what this reap queues waits.
		 */
		rearm_queued(u, p);
		reap(u, p, &b);
	}
	if (p->nlvl)
		level_check(u, p, &b, due);
	p->pre = 0;
	rearm_queued(u, p);
	fresh_end(p);
	pthread_mutex_unlock(&p->lock);
	if (b.cnt)
		HSTAT(u, events, (uint64_t)b.cnt);
	return b.cnt;
}

/* uepoll_drained(): bits of a registration on the level list not to poll */
static void uring_drained(struct uepoll *u, int fd, uint32_t events)
{
	struct uring_priv *p = u->priv;
	int s;

	pthread_mutex_lock(&p->lock);
	s = fdmap_get(&p->map, fd);
	if (s >= 0 && p->slots[s].inlvl) {
		p->slots[s].drained |= __uepoll_drained_bits(events);
		p->slots[s].prestamp = 0;	/* that poll asked for them */
	}
	pthread_mutex_unlock(&p->lock);
}

/* the spin test, no lock, no system call: CQEs (or overflowed ones, or
 * deferred task work) are pending; the same test as harvest's fast path */
static int uring_ready(struct uepoll *u)
{
	struct uring_priv *p = u->priv;
	unsigned kflags = IO_URING_READ_ONCE(*p->ring.sq.kflags);

	return io_uring_cq_ready(&p->ring) || taskrun_wanted(p, kflags);
}

/*
 * A sleep in ppoll() of the ring fd, of the level list's files too
 * (uring_level_sleep()), that our own task work ends is two kernel
 * entries, not one: the work (a wake-up of a poll this thread submitted,
 * COOP_TASKRUN or not) is delivered as a notification signal, so the
 * sleeping ppoll() returns -ERESTARTNOHAND, the work runs on the way out
 * and posts the completion, and the kernel re-executes the call, which
 * then finds the ring fd readable.  perf's syscall tracepoints see both
 * entries (a libevent server on the 6.18 host: 2 ppoll entries for each
 * sleep the counter saw once).  The counter counts the second where it
 * happened: the ring fd readable at the return when nothing was pending
 * at the sample taken right before the call.  Exact for a thread whose
 * polls are its own; off by one where another thread's work posts into
 * the ring meanwhile, or an interrupt's exit runs ours between that
 * sample and the call.  pfd[n - 1] is the ring fd; 0, or -errno (the
 * fresh rule ended: back to the program without a harvest).
 */
static int ring_ppoll(struct uepoll *u, struct pollfd *pfd, unsigned n, int timeout_ms)
{
	struct uring_priv *p = u->priv;
	struct timespec ts;
	int ret, empty;

	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000;
	}
	STAT_SYS(u);
	/* acquire (liburing's load of the CQ tail): pairs with the kernel's
	 * release of it in io_commit_cqring(), as uring_ready()'s */
	empty = !io_uring_cq_ready(&p->ring);
	ret = ppoll(pfd, n, timeout_ms >= 0 ? &ts : NULL, NULL);
	if (ret < 0) {
		fresh_end(p);	/* back to the program without a harvest */
		return -errno;
	}
	if (empty && (pfd[n - 1].revents & POLLIN))
		STAT_SYS(u);	/* the re-execution */
	return 0;
}

/*
 * Sleep in io_uring_enter(GETEVENTS, one completion, the timeout as
 * EXT_ARG): our task work runs inside the wait (io_cqring_wait() runs it
 * and goes on waiting for what it posted), one kernel entry per sleep,
 * where a ppoll() of the ring fd is two when that work ends it
 * (ring_ppoll()).  Its signal rule is poll(2)'s: a handler that runs
 * ends it (-EINTR), SA_RESTART or not, as epoll_wait() does.  -ETIME
 * (the time is up) is 0: the harvest that follows finds nothing.
 *
 * Under valgrind, which takes io_uring_enter() for a call that does not
 * block (no other thread would run while we slept), the sleep is a
 * ppoll() of the ring fd, readable while CQEs or overflowed CQEs are
 * pending: the same wake-ups, the same EINTR rule.
 */
static int uring_sleep(struct uepoll *u, int timeout_ms)
{
	struct uring_priv *p = u->priv;
	struct pollfd pfd = { .fd = p->ring.ring_fd, .events = POLLIN };
	struct io_uring_getevents_arg arg = { 0 };
	struct __kernel_timespec kts;
	int ret;

	fresh_begin(p);
	if (!UNDER_VALGRIND()) {
		if (timeout_ms >= 0) {
			kts.tv_sec = timeout_ms / 1000;
			kts.tv_nsec = (long long)(timeout_ms % 1000) * 1000000;
			arg.ts = (uint64_t)(uintptr_t)&kts;
		}
		STAT_SYS(u);
		ret = io_uring_enter2((unsigned)p->ring.ring_fd, 0, 1,
				      IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
				      (sigset_t *)&arg, sizeof(arg));
		if (ret >= 0 || ret == -ETIME)
			return 0;
		fresh_end(p);	/* back to the program without a harvest */
		return ret;
	}
	return ring_ppoll(u, &pfd, 1, timeout_ms);
}

/*
 * uepoll_wait() with no completion pending and registrations on the level
 * list: recheck()'s poll(2) and the sleep are one ppoll(), of their files
 * and the ring fd.  The sleep ends at once while one of them is still
 * ready, as that poll(2) would have found it.  Each answer is kept in its
 * slot for the harvest that follows, whose recheck() takes it instead of
 * polling that file again: one system call where the poll(2) and the
 * sleep were two, and one where the poll(2) alone found one still ready.
 * A slot put on the list since, or hinted (level_add(), uepoll_drained()),
 * is polled as before; DEL and MOD take a slot off the list.  The files
 * are polled without the lock (another thread's ctl may change them
 * meanwhile): only answers of slots whose prestamp is still this sleep's
 * are kept.
 */
static int uring_level_sleep(struct uepoll *u, int timeout_ms)
{
	struct uring_priv *p = u->priv;
	uint32_t stamp;
	unsigned i, k = 0;
	int ret;

	if (!p->nlvl || uring_ready(u))	/* (nlvl: as in uring_harvest()) */
		return 1;
	pthread_mutex_lock(&p->lock);
	stamp = ++p->prestamp ? p->prestamp : ++p->prestamp;
	for (i = 0; i < p->nlvl; i++) {
		uint32_t s = p->lvl[i];
		struct uslot *sl = &p->slots[s];

		if (sl->fd < 0 || !sl->inlvl || !level_asks(sl))
			continue;	/* recheck() takes it off */
		sl->prestamp = stamp;
		p->pslot[k] = s;
		p->pfd[k].fd = sl->fd;
		p->pfd[k].events = (short)level_asks(sl);
		p->pfd[k].revents = 0;
		k++;
	}
	pthread_mutex_unlock(&p->lock);
	if (!k)
		return 1;
	p->pfd[k].fd = p->ring.ring_fd;
	p->pfd[k].events = POLLIN;
	p->pfd[k].revents = 0;
	HSTAT(u, sleeps, 1);
	HSTAT(u, rechecks, 1);
	fresh_begin(p);
	ret = ring_ppoll(u, p->pfd, k + 1, timeout_ms);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < k; i++) {
		struct uslot *sl = &p->slots[p->pslot[i]];

		if (sl->prestamp == stamp)
			sl->prerev = (uint32_t)(uint16_t)p->pfd[i].revents;
	}
	p->pre = 1;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/*
 * The SQEs queued under p->lock, handed to the kernel (the SQ tail) for
 * an io_uring_enter() made after the lock is dropped; how many are
 * pending.  Caller holds p->lock.  liburing's own submit does the same
 * (sqe_head: what the tail shows); a submit of another thread before
 * that enter takes them with its own.
 */
static unsigned sq_publish(struct uring_priv *p)
{
	struct io_uring_sq *sq = &p->ring.sq;
	unsigned tail = sq->sqe_tail;

	sq->sqe_head = tail;
	/* release: the SQEs written before it; pairs with the acquire load
	 * of the SQ tail in the kernel's io_sqring_entries(), from
	 * io_submit_sqes() in uring_ctl_sleep()'s enter or another
	 * thread's submit().  khead: a plain load, as liburing's flush; an
	 * old value overstates the count, never more is submitted */
	io_uring_smp_store_release(sq->ktail, tail);
	return tail - IO_URING_READ_ONCE(*sq->khead);
}


/*
 * The checks of a sleep's changes in its own enter (ring_sleep()).
 *
 * uepoll_ctl_wait() and uepoll_ctl_defer()'s changes that go with a
 * sleep need each fd's kind and file (the checks epoll_ctl(2) makes:
 * EBADF, EPERM; and a DEL of a number closed and reused: ENOENT), which
 * batch_apply() learns from a statx batch of the helper ring: a system
 * call before the sleep's.  Here the run is applied first (ring_apply():
 * each ADD's slot and poll, each DEL's cancel), with an IORING_OP_STATX
 * of each fd among its SQEs, and the enter that submits them sleeps; the
 * checks are read when it returns, and a change they fail is undone and
 * answered as epoll_ctl(2) answers it (ring_eval()).  One system call
 * for the changes and the sleep.
 *
 * The sleep must not end at the checks' own completions, which come at
 * once (io-wq), nor wait past an event.  Its SQEs start with an
 * IORING_OP_TIMEOUT whose count is one more than the completions the run
 * itself posts: one per statx, and one per DEL of an armed poll (its
 * -ECANCELED, or the cancel's -ENOENT if the poll ended meanwhile).  The
 * count runs from the timeout's submission, on the kernel's completion
 * sequence (io_timeout(): target_seq), so another thread's harvest
 * cannot make it wait longer; a completion the run did not count (a
 * failed ADD's poll: EBADF, EINVAL for a file without poll) ends it
 * sooner.  The enter waits for a number of completions it never reaches
 * (the CQ's size): the timeout's completion (io_should_wake(): a change
 * of cq_timeouts) ends it, by count or at the caller's timeout, and
 * only a signal ends it otherwise (-EINTR: the timeout did not complete
 * and the CQ is empty).  The CQ full ends it too, with completions to
 * harvest.
 *
 * Only for runs whose changes need no file before they are applied:
 * ADDs of fds with no registration and DELs (a MOD, or an ADD of a
 * registered fd, is EEXIST or not by its file: batch_apply()); none that
 * fails before the kernel is asked (an EINVAL of the library's checks,
 * ENOSPC), which must end uepoll_ctl_wait() at once; one ring sleep at a
 * time; not with DEFER_TASKRUN (its wait counts task work, not timeouts).
 */
static int ring_checks(struct uepoll *u, struct uring_priv *p)
{
	struct io_uring_probe *probe;
	const char *e;

	if (p->rchk)
		return p->rchk > 0;
	p->rchk = -1;
	e = getenv("UEPOLL_URING_RING_CHECKS");
	if ((e && !strcmp(e, "0")) || (p->setup & IORING_SETUP_DEFER_TASKRUN))
		return 0;
	STAT_SYS(u);
	probe = io_uring_get_probe_ring(&p->ring);
	if (!probe)
		return 0;
	if (io_uring_opcode_supported(probe, IORING_OP_STATX) &&
	    io_uring_opcode_supported(probe, IORING_OP_TIMEOUT)) {
		p->chk = calloc(CHECKS_MAX, sizeof(*p->chk));
		if (p->chk)
			p->rchk = 1;
	}
	io_uring_free_probe(probe);
	return p->rchk > 0;
}

/* per change of a ring sleep's run, from ring_apply() to ring_eval() */
struct ring_rec {
	int chk;		/* its check, or -1 (an fstat() at evaluation) */
	int pre;		/* the library's checks without the fd's kind */
	int tab;		/* the table's answer: ctl_add(); DEL: 0 or -ENOENT */
	int slot;		/* ADD: the slot it took, or -1 */
	uint32_t gen;		/* ... and its generation */
	uint64_t dev, ino;	/* DEL: the file of the registration it removed */
};

/* can run ch[0..n) go with its checks in the ring?  Caller holds p->lock */
static int ring_eligible(struct uepoll *u, struct uring_priv *p, const struct uepoll_change *ch,
			 unsigned n)
{
	unsigned i, j, adds = 0;

	/* the timeout, and per change a statx, a poll or cancel, and the
	 * cancel of a slot_settle() */
	if (n > CHECKS_MAX - p->chk_live || io_uring_sq_space_left(&p->ring) < 3 * n + 1 ||
	    *p->ring.cq.kring_entries < 4 * n + 4)
		return 0;
	for (i = 0; i < n; i++) {
		const struct uepoll_change *c = &ch[i];
		struct epoll_event e;
		int reg;

		if (c->op == EPOLL_CTL_DEL)
			continue;
		if (c->op != EPOLL_CTL_ADD || __uepoll_ctl_check(u, c->op, c->fd, &c->ev, &e, 0))
			return 0;
		/* registered at this point of the run? */
		reg = fdmap_get(&p->map, c->fd) >= 0;
		for (j = i; j-- > 0;) {
			if (ch[j].fd == c->fd) {
				reg = ch[j].op == EPOLL_CTL_ADD;
				break;
			}
		}
		if (reg || ++adds > p->nfree)
			return 0;
	}
	return 1;
}

/*
 * Apply ch[0..n) (ring_eligible()) with their checks: caller holds
 * p->lock, p->batching set.  *count: the completions the run posts
 * itself (ring_sleep()); 1 if an ADD failed before the kernel was asked
 * (ENOMEM, EBUSY: no poll of it says so), else 0.
 */
static int ring_apply(struct uepoll *u, struct uring_priv *p, struct uepoll_change *ch,
		      unsigned n, struct ring_rec *r, unsigned *count)
{
	struct io_uring_sqe *sqe;
	int failed = 0;
	unsigned k;

	*count = 0;
	p->tmo_sqe = get_sqe(u, p);	/* first: ring_sleep() fills it in */
	for (k = 0; k < n; k++) {
		struct uepoll_change *c = &ch[k];
		struct epoll_event e;
		int s, i;

		r[k].slot = -1;
		r[k].tab = 0;
		r[k].chk = i = c->fd >= 0 ? check_get(p) : -1;
		if (i >= 0) {
			sqe = get_sqe(u, p);
			io_uring_prep_statx(sqe, c->fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_INO,
					    &p->chk[i].stx);
			io_uring_sqe_set_data64(sqe, UD_SPECIAL(SLOT_CHECK, CHECK_V(p->chk[i].seq, i)));
			(*count)++;
		}
		__uepoll_ident.valid = 0;
		r[k].pre = __uepoll_ctl_check(u, c->op, c->fd, &c->ev, &e, 0);
		if (r[k].pre)
			continue;
		s = fdmap_get(&p->map, c->fd);
		if (s >= 0 && p->slots[s].chk >= 0) {
			slot_settle(u, p, s);
			s = fdmap_get(&p->map, c->fd);
		}
		if (c->op == EPOLL_CTL_ADD) {
			r[k].tab = ctl_add(u, p, c->fd, &e);
			failed |= r[k].tab != 0;
			s = fdmap_get(&p->map, c->fd);
			if (!r[k].tab && s >= 0) {
				r[k].slot = s;
				r[k].gen = p->slots[s].gen;
				p->slots[s].chk = r[k].chk;
			}
		} else if (s < 0) {
			r[k].tab = -ENOENT;
		} else {
			r[k].dev = p->slots[s].dev;
			r[k].ino = p->slots[s].ino;
			*count += p->slots[s].armed;
			ctl_del(u, p, s, c->fd);
		}
	}
	return failed;
}


/*
 * The checks read, each change answered in order as epoll_ctl(2) would
 * have answered it at the enter: the fd's kind first, then the library's
 * checks, then the table's.  An ADD whose fd was closed or is a regular
 * file or directory is undone (its poll failed too, or reports nothing
 * but the file's default mask: dropped with the slot); a DEL whose
 * number names another file than the registration's says ENOENT (that
 * registration went at the close, as in epoll; the DEL removed it here).
 * Caller holds p->lock, p->batching set.
 */
static void ring_eval(struct uepoll *u, struct uring_priv *p, struct uepoll_change *ch,
		      unsigned n, const struct ring_rec *r)
{
	unsigned k;

	for (k = 0; k < n; k++) {
		struct uepoll_change *c = &ch[k];
		struct uepoll_ident id = { .fd = -1 };
		int kind = c->fd >= 0 ? check_kind(u, p, r[k].chk, c->fd, &id) : 0;
		int res = kind ? kind : r[k].pre ? r[k].pre : r[k].tab;

		if (r[k].slot >= 0) {
			struct uslot *sl = &p->slots[r[k].slot];

			/* still this ADD's registration (another thread may have
			 * changed it during the sleep) */
			if (sl->fd == c->fd && sl->gen == r[k].gen) {
				sl->chk = -1;
				if (kind) {
					ctl_del(u, p, r[k].slot, c->fd);
				} else {
					sl->dev = id.valid ? id.dev : 0;
					sl->ino = id.valid ? id.ino : 0;
				}
			}
		} else if (c->op == EPOLL_CTL_DEL && !res &&
			   (!id.valid || id.dev != r[k].dev || id.ino != r[k].ino)) {
			res = -ENOENT;
		}
		c->res = res;
	}
}

/* io_uring_getevents_arg with min_wait_usec (6.12), where liburing has pad */
struct getevents_min {
	uint64_t sigmask;
	uint32_t sigmask_sz;
	uint32_t min_wait_usec;
	uint64_t ts;
};

#ifndef IORING_FEAT_MIN_TIMEOUT
#define IORING_FEAT_MIN_TIMEOUT	(1u << 15)
#endif
#define RING_MIN_WAIT_US	1000000u
#define RING_FOREVER_S		86400	/* a wait "forever": see ring_sleep() */

/*
 * uring_ctl_sleep() with the run's checks in the ring (above): 1 if it
 * took the run (its answer in *ret: 0, uepoll_wait() follows; -EINTR),
 * else 0 (nothing done).  Caller holds p->lock; released when taken.
 * A flush, not a sleep, with completions pending (the harvest that
 * follows takes them) or registrations on the level list once the run's
 * DELs and the drained hints have trimmed it (level_compact(): their files
 * are asked by that harvest's recheck(), and by uring_level_sleep() if
 * it finds nothing): the enter waits for the run's own completions
 * only, beyond those pending.  The count cannot tell the run's own from
 * the program's: when our task work is pending (uring_sleep_asks() sent
 * the wait here for it), it posts the program's first, ahead of the
 * run's statx (io-wq's, through task work as well), so a flush then
 * waits for one more completion, FLUSH_WORK_NS at most (the work may
 * post nothing of ours), rather than leave a check to an enter of its
 * own (check_settle()).
 */
#define FLUSH_WORK_NS	1000000

/*
 * The count timeout of a ring sleep, in p->tmo_sqe, for the caller's time
 * ts: its count, the run's own completions and one more (a flush with no
 * task work pending: its own only).  *flush: a flush (above).  The SQ
 * flags are read relaxed (uring_sleep_asks() says why that is enough).
 */
static unsigned ring_timeout(struct uring_priv *p, unsigned pending, unsigned count,
			     const struct __kernel_timespec *ts, int *flush)
{
	unsigned want;
	int work;

	*flush = pending || p->nlvl;
	work = *flush && !pending &&
	       (taskrun_wanted(p, IO_URING_READ_ONCE(*p->ring.sq.kflags)) & IORING_SQ_TASKRUN);
	p->tmo_ts = *ts;
	if (work && (ts->tv_sec || ts->tv_nsec > FLUSH_WORK_NS)) {
		p->tmo_ts.tv_sec = 0;
		p->tmo_ts.tv_nsec = FLUSH_WORK_NS;
	}
	want = *flush && !work ? count : count + 1;
	if (!want)
		p->tmo_ts.tv_sec = p->tmo_ts.tv_nsec = 0;	/* count 0 is a timer: at once */
	io_uring_prep_timeout(p->tmo_sqe, &p->tmo_ts, want, 0);
	io_uring_sqe_set_data64(p->tmo_sqe, UD_SPECIAL(SLOT_TMO, ++p->tmo_seq));
	p->tmo_done = 0;
	return want;
}
static int ring_sleep(struct uepoll *u, struct uring_priv *p, struct uepoll_change *ch,
		      unsigned n, int timeout_ms, int *ret)
{
	unsigned pending = io_uring_cq_ready(&p->ring);
	struct ring_rec r[CHECKS_MAX];
	struct __kernel_timespec ts = { .tv_sec = RING_FOREVER_S };
	struct getevents_min arg = { .min_wait_usec = RING_MIN_WAIT_US };
	unsigned k, count, want, others;
	int got, waited, flush;
	int64_t t0;

	if (p->ring_sleeping || !(p->ring.features & IORING_FEAT_MIN_TIMEOUT) ||
	    !ring_checks(u, p) || !ring_eligible(u, p, ch, n))
		return 0;
	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long long)(timeout_ms % 1000) * 1000000;
	}
	arg.ts = (uint64_t)(uintptr_t)&ts;
	p->ring_sleeping = 1;
	p->batching = 1;
	if (ring_apply(u, p, ch, n, r, &count))
		ts.tv_sec = ts.tv_nsec = 0;	/* an ADD failed: no sleep */
	p->batching = 0;
	level_compact(p, 1);	/* the DELs just applied may have emptied it */
	want = ring_timeout(p, pending, count, &ts, &flush);
	k = sq_publish(p);
	p->need_submit = 0;
	if (pending)	/* io_uring_cq_ready() again: the same, or more */
		pending = io_uring_cq_ready(&p->ring);
	pthread_mutex_unlock(&p->lock);

	if (!pending)
		fresh_begin(p);
	STAT_SYS(u);
	t0 = __uepoll_now_ns();
	got = io_uring_enter2((unsigned)p->ring.ring_fd, k, pending + want + 1,
			      IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
			      (sigset_t *)&arg, sizeof(arg));
	waited = got == (int)k;

	pthread_mutex_lock(&p->lock);
	if (!waited) {
		if (got >= 0)
			__atomic_store_n(&p->fresh_ok, 0, __ATOMIC_RELAXED);
		batch_submit(u, p);	/* the rest, before their checks are read */
	} else if (!flush) {
		HSTAT(u, sleeps, 1);
	}
	p->batching = 1;
	ring_eval(u, p, ch, n, r);
	p->batching = 0;
	if (io_uring_sq_ready(&p->ring))
		p->need_submit = 1;	/* the undone ADDs' cancels: the harvest submits */
	/*
	 * The kernel answers the count submitted, not how the wait ended:
	 * by the count (the timeout's completion says so, at the caller's
	 * time too), by the minimum wait, by completions that came before
	 * the timeout was submitted (the harvest has them), by a CQ
	 * overflow, or by a signal (-EINTR).
	 */
	others = check_scan(u, p);
	*ret = 0;
	if (pending)
		;	/* no sleep: the harvest follows */
	else if (got == -EINTR ||
		 (!flush && waited && !p->tmo_done && !others &&
		  !(IO_URING_READ_ONCE(*p->ring.sq.kflags) & IORING_SQ_CQ_OVERFLOW) &&
		  __uepoll_now_ns() - t0 < (int64_t)RING_MIN_WAIT_US * 1000))
		*ret = -EINTR;
	p->ring_sleeping = 0;
	pthread_mutex_unlock(&p->lock);
	if (*ret)
		fresh_end(p);	/* back to the program without a harvest */
	return 1;
}

/*
 * uepoll_ctl_wait() with a sleep (timeout_ms != 0), uepoll_ctl_defer()'s
 * changes included: the changes as uring_batch() applies them, and the
 * sleep's io_uring_enter() submits their SQEs (GETEVENTS, one completion,
 * the timeout as EXT_ARG): one system call where the submit and the
 * sleep (uring_sleep()'s enter) were two.  The enter ends at once when
 * completions are pending or our task work posts one, as that sleep
 * does.  0: uepoll_wait() follows (it harvests first); -EINTR: a signal
 * ended the sleep.  Not taken (the SQEs submitted as uring_batch()
 * submits them, 0) when an ADD or MOD failed (uepoll_ctl_wait() returns
 * at once), completions are pending, the level list, trimmed, is not
 * empty (its files are asked in uring_level_sleep()'s ppoll()), or
 * under valgrind.
 *
 * The kernel waits only if it submitted all it was given, and then
 * answers that count, not how the wait ended: completions pending or the
 * time up say 0, else a signal ended it (-EINTR).  One that submitted
 * fewer did not wait: another thread's submit took the rest (their
 * polls are that thread's: the fresh rule is off from then on, as after
 * any submit that left SQEs), or the kernel refused (EAGAIN, EBUSY:
 * submitted again now, as uring_batch() would; EINTR: the same, and the
 * call ends as a signal ends it).  Else uepoll_wait() follows.
 */
static int uring_ctl_sleep(struct uepoll *u, struct uepoll_change *ch, unsigned n,
			   struct epoll_event *evs, int max, int timeout_ms)
{
	struct uring_priv *p = u->priv;
	struct io_uring_getevents_arg arg = { 0 };
	struct __kernel_timespec ts;
	int ret, waited;
	unsigned k;
	int64_t t0;

	(void)evs;
	(void)max;
	if (!n)
		return 0;
	if (!UNDER_VALGRIND()) {
		pthread_mutex_lock(&p->lock);
		if (ring_sleep(u, p, ch, n, timeout_ms, &ret))
			return ret;	/* (p->lock released) */
		pthread_mutex_unlock(&p->lock);
	}
	batch_apply_all(u, p, ch, n);
	level_compact(p, 1);	/* as in ring_sleep() */
	if (UNDER_VALGRIND() || __uepoll_add_mod_failed(ch, n) || p->nlvl || uring_ready(u)) {
		batch_submit(u, p);
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	k = sq_publish(p);
	p->need_submit = 0;	/* the enter submits what the harvester queued too */
	pthread_mutex_unlock(&p->lock);

	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long long)(timeout_ms % 1000) * 1000000;
		arg.ts = (uint64_t)(uintptr_t)&ts;
	}
	fresh_begin(p);
	STAT_SYS(u);
	t0 = __uepoll_now_ns();
	ret = io_uring_enter2((unsigned)p->ring.ring_fd, k, 1,
			      IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
			      (sigset_t *)&arg, sizeof(arg));
	waited = k ? ret == (int)k : (ret == 0 || ret == -ETIME || ret == -EINTR);
	if (!waited) {
		fresh_end(p);
		pthread_mutex_lock(&p->lock);
		if (ret >= 0)	/* fewer: another thread took them, or the kernel left some */
			__atomic_store_n(&p->fresh_ok, 0, __ATOMIC_RELAXED);
		batch_submit(u, p);
		pthread_mutex_unlock(&p->lock);
		return ret == -EINTR ? ret : 0;	/* a signal before it submitted */
	}
	HSTAT(u, sleeps, 1);
	if (ret == -EINTR ||
	    (k && !uring_ready(u) && (timeout_ms < 0 || __uepoll_now_ns() - t0 < (int64_t)timeout_ms * 1000000))) {
		fresh_end(p);	/* back to the program without a harvest */
		return -EINTR;
	}
	return 0;
}

/*
 * uepoll_set_lazy_poll(): with registrations on the level list and no
 * completion pending, a harvest would only poll them, which the level
 * sleep does too: 2, a wait spins first (the completions that come are
 * taken without the poll), then sleeps in uring_level_sleep().  0 without
 * the setting: the harvest polls, as epoll_wait() reports at once.
 * 1: the CQ is empty and our task work is pending (COOP_TASKRUN: a
 * wake-up of our polls, finished at our next system call), so a harvest
 * would enter only to run it, and a wait with deferred changes takes
 * them to its sleep's enter instead (ring_sleep()), which runs it too
 * and ends at once on what it posts: one system call for the events and
 * the changes, where the harvest's enter left the changes to another.
 * Not for overflowed completions, whose flush reap() does (fresh_end()).
 * The SQ flags are read relaxed, as uring_ready() reads them: the kernel
 * sets IORING_SQ_TASKRUN (atomic_or() in io_req_normal_work_add()) before
 * it queues the work and clears it when the work runs; a stale answer
 * costs one harvest's enter, or sends the wait to its sleep's enter,
 * which runs the work all the same.  Nothing is published through it.
 */
static int uring_sleep_asks(struct uepoll *u)
{
	struct uring_priv *p = u->priv;
	unsigned kflags;

	/* (nlvl: as in uring_harvest()) */
	if (__uepoll_lazy_poll(u) && p->nlvl && !uring_ready(u))
		return 2;
	kflags = IO_URING_READ_ONCE(*p->ring.sq.kflags);
	return !io_uring_cq_ready(&p->ring) &&
	       taskrun_wanted(p, kflags) == IORING_SQ_TASKRUN;
}

const struct uepoll_ops __uepoll_uring_ops __hidden = {
	.name = "uring",
	.checks = UEPOLL_CHECKS_NONE,
	/* an edge-triggered event has the bits of the wake-ups */
	.caps = UEPOLL_CAP_LEVEL,
	.probe = uring_probe,
	.pass_over = uring_pass_over,
	.init = uring_init,
	.exit = uring_exit,
	.ctl = uring_ctl,
	.batch = uring_batch,
	.ctl_sleep = uring_ctl_sleep,
	.harvest = uring_harvest,
	.drained = uring_drained,
	.gone = uring_gone,
	.sleep = uring_sleep,
	.ready = uring_ready,
	.level_sleep = uring_level_sleep,
	.sleep_asks = uring_sleep_asks,
};
