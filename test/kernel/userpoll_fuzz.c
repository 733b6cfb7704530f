// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * userpoll_fuzz - seeded random operations over the raw EPOLL_USERPOLL ABI
 * (doc/PROTOCOL.md), from several threads, for the debug kernel (KASAN,
 * lockdep, kmemleak): the point is mostly that the kernel logs no report
 * (vm/check fails the run if it does); the program also checks what it
 * knows.  Not a test (not in `make -C test/kernel list`): `make
 * vm-check-debug` runs it for 600 s.
 *
 *   userpoll_fuzz [--seed S] [--seconds T] [--threads K]
 *
 * Defaults: the seed from the clock, 600 s, 3 threads.  The seed is printed
 * first; each thread's operations are a function of the seed and its
 * number (the interleaving is not: a replay runs the same operations, not
 * the same schedule; --threads 1 comes closest).  Exit 0 and `fuzz: PASS
 * seed=S ops=N`, 1 and `fuzz: FAIL ...`, 4 without the feature (SKIP).
 *
 * What it owns: NI instance slots (n drawn from 1 to 65536, small n often,
 * so ENOSPC happens) and NF file slots, each an eventfd, a pipe, a unix
 * socketpair (stream, dgram, seqpacket), a signalfd (SIGUSR1 blocked in
 * every thread), a timerfd, the pidfd of a short-lived child, a plain
 * epoll instance or another userpoll instance (each of the last two
 * watching a private eventfd).  The threads draw operations: ADD/MOD/DEL
 * with random masks (EPOLLET always, ONESHOT sometimes; masks without
 * EPOLLET, EPOLLEXCLUSIVE, bad fds and ops, NULL events, expecting the
 * documented errno), an instance added to another (loops: ELOOP), close
 * and re-create of registered files, writes, reads, shutdowns, signals
 * (kill, tgkill, sigqueue), timers, harvests with the consumer of
 * PROTOCOL.md section 5 and the repoll hint of section 9 (one harvester
 * per instance: a mutex), epoll_wait(fd, NULL, 0, t), poll(), fdinfo,
 * mmap/munmap of the regions (good and bad), MADV_DOFORK then fork (the
 * child exits at once), close of an instance while other threads use it,
 * and scribbling over the instance's own mapping (only on instances
 * created for it, whose reports are then not checked).
 *
 * Instances are reference counted and every operation works on a dup()
 * of the instance's fd taken under the slot lock, so no thread ever uses
 * an fd number that another thread closed and the kernel gave out again;
 * closing the instance closes the slot's fd while others still hold theirs
 * (and the mappings), as a real program racing its own close would.
 *
 * Checked, where the state is known (a file slot's mutex is held around a
 * ctl call and its bookkeeping, and the instance's ctl mutex):
 *  - every errno against the documented set; ADD of a registered file is
 *    EEXIST, MOD/DEL of an unregistered one ENOENT, ADD succeeds only
 *    while fewer than n registrations are certainly alive and fails with
 *    ENOSPC only when n may be;
 *  - each reported event: its data was registered on this instance by a
 *    ctl that did not fail, its events are within the masks that
 *    registration had (plus EPOLLERR | EPOLLHUP), no private bit, no item
 *    twice in one batch, no entry outside 1..n, at most n unread entries,
 *    and no event of a registration whose DEL or MOD returned before the
 *    harvest began (PROTOCOL.md section 5);
 *  - each eventfd: the values read add up to the writes;
 *  - at the end, quiesced: fdinfo's item count is the bookkeeping's, the
 *    ring is empty, and one write to every registered eventfd and one
 *    SIGUSR1 for every registered signalfd are each reported (no lost
 *    event), with the data of the last MOD.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"	/* userpoll.h's skip helpers need it */
#include "userpoll.h"

#include <dirent.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <linux/sched.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define NI		4	/* instance slots */
#define NF		24	/* file slots */
#define MAXTHR		16
#define NEST_MAX	8	/* instances nested in one instance */
#define HIST		(1u << 16)
#define DATA_MAGIC	0xa5u
#define POOL_DATA	0x77u	/* data of a pool instance's private eventfd */
#define BATCH		64
#define PRIVATE_BITS	(EPOLLET | EPOLLONESHOT | EPOLLWAKEUP | EPOLLEXCLUSIVE | \
			 EPOLLREMOVED)

/* ---- random numbers: xorshift64*, one state per thread ------------------ */

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rnd64(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static unsigned rnd(uint64_t *s, unsigned n)
{
	return (unsigned)((rnd64(s) >> 11) % n);
}

static int chance(uint64_t *s, unsigned one_in)
{
	return rnd(s, one_in) == 0;
}

/* ---- global state ---------------------------------------------------- */

static uint64_t seed;
static int seconds = 600, nthreads = 3;
static volatile int stop;
static pid_t tids[MAXTHR + 1];		/* workers, then main */
static int reg_fd = -1, dir_fd = -1;	/* a regular file, a directory */
static int efd_bad = -1, efd_bad2 = -1;	/* never registered anywhere */
static size_t page;

static unsigned long violations;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

static void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void violation(const char *fmt, ...)
{
	unsigned long v = __atomic_add_fetch(&violations, 1, __ATOMIC_RELAXED);
	va_list ap;

	if (v > 50)
		return;
	pthread_mutex_lock(&print_lock);
	printf("fuzz: VIOLATION: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	pthread_mutex_unlock(&print_lock);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&print_lock);
	printf("fuzz: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	pthread_mutex_unlock(&print_lock);
}

/* ---- operation names and counters -------------------------------------- */

enum op {
	OP_HARVEST, OP_WAIT, OP_POLL, OP_ADD, OP_MOD, OP_DEL, OP_CTL_BAD,
	OP_NEST_ADD, OP_NEST_DEL, OP_POKE, OP_RECREATE, OP_CLOSE_FILE,
	OP_SIGNAL, OP_REMAP, OP_MAP_EXTRA, OP_FORK, OP_CLOSE_INST,
	OP_CREATE_INST, OP_CREATE_BAD, OP_SCRIBBLE, OP_FDINFO, OP_NR
};

static const struct {
	const char *name;
	unsigned weight;
} ops[OP_NR] = {
	[OP_HARVEST]	= { "harvest", 150 },
	[OP_WAIT]	= { "wait", 60 },
	[OP_POLL]	= { "poll", 40 },
	[OP_ADD]	= { "add", 120 },
	[OP_MOD]	= { "mod", 80 },
	[OP_DEL]	= { "del", 60 },
	[OP_CTL_BAD]	= { "ctl-bad", 40 },
	[OP_NEST_ADD]	= { "nest-add", 15 },
	[OP_NEST_DEL]	= { "nest-del", 10 },
	[OP_POKE]	= { "poke", 200 },
	[OP_RECREATE]	= { "file-recreate", 40 },
	[OP_CLOSE_FILE]	= { "file-close", 15 },
	[OP_SIGNAL]	= { "signal", 30 },
	[OP_REMAP]	= { "remap", 15 },
	[OP_MAP_EXTRA]	= { "mmap-extra", 15 },
	[OP_FORK]	= { "fork", 8 },
	[OP_CLOSE_INST]	= { "inst-close", 4 },
	[OP_CREATE_INST] = { "inst-create", 15 },
	[OP_CREATE_BAD]	= { "create-bad", 5 },
	[OP_SCRIBBLE]	= { "scribble", 10 },
	[OP_FDINFO]	= { "fdinfo", 15 },
};

static unsigned long op_count[OP_NR];		/* attempts */
static unsigned long errno_count[OP_NR];	/* expected errors */
static unsigned long reports, checked_reports, unchecked_reports;
static unsigned long enospc, eloop, absorbed_enomem;

#define COUNT(x) __atomic_add_fetch(&(x), 1, __ATOMIC_RELAXED)

/* ---- history of registrations: data -> what it was registered with ---- */

/*
 * Data of a registration: DATA_MAGIC << 56 | uid16 << 40 | slot << 32 |
 * seq.  seq is a global counter, one per ADD or MOD attempt; hist[seq %
 * HIST] records the instance, the file slot, the union of the masks the
 * registration has had since its ADD (MOD may publish new data before
 * it drops old pending bits: PROTOCOL.md section 4), whether the call
 * failed and when the data was retired (DEL or MOD returned: the value of
 * the epoch counter after that).  Written before the call, so before the
 * kernel can report the data; read by harvesters after C4.
 */
struct hist {
	uint32_t tag;		/* seq, stored last (release) */
	uint32_t uid;
	uint32_t slot;
	uint32_t umask;
	uint32_t failed;
	uint64_t retired;
};

static struct hist hist[HIST];
static uint64_t seq_counter;
static uint64_t epoch;		/* bumped after each DEL/MOD returned */

static uint32_t next_seq(void)
{
	return (uint32_t)__atomic_add_fetch(&seq_counter, 1, __ATOMIC_RELAXED);
}

static uint64_t mkdata(uint32_t uid, unsigned slot, uint32_t seq)
{
	return (uint64_t)DATA_MAGIC << 56 | (uint64_t)(uid & 0xffff) << 40 |
	       (uint64_t)(slot & 0xff) << 32 | seq;
}

static void hist_set(uint32_t seq, uint32_t uid, unsigned slot, uint32_t umask)
{
	struct hist *h = &hist[seq % HIST];

	__atomic_store_n(&h->tag, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	h->uid = uid;
	h->slot = slot;
	h->umask = umask;
	__atomic_store_n(&h->failed, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&h->retired, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&h->tag, seq, __ATOMIC_RELEASE);
}

static void hist_failed(uint32_t seq)
{
	struct hist *h = &hist[seq % HIST];

	if (__atomic_load_n(&h->tag, __ATOMIC_ACQUIRE) == seq)
		__atomic_store_n(&h->failed, 1, __ATOMIC_RELEASE);
}

/* after DEL or MOD returned: harvests that begin from now on must not see seq */
static void hist_retire(uint32_t seq)
{
	struct hist *h = &hist[seq % HIST];
	uint64_t e = __atomic_add_fetch(&epoch, 1, __ATOMIC_SEQ_CST);

	if (__atomic_load_n(&h->tag, __ATOMIC_ACQUIRE) == seq)
		__atomic_store_n(&h->retired, e, __ATOMIC_RELEASE);
}

/* ---- file slots -------------------------------------------------------- */

enum kind {
	K_NONE, K_EVENTFD, K_PIPE, K_SOCK, K_SIGNALFD, K_TIMERFD, K_PIDFD,
	K_EPOLL, K_UPOLL, K_NR
};

static const char *const kind_name[K_NR] = {
	"none", "eventfd", "pipe", "socket", "signalfd", "timerfd", "pidfd",
	"epoll", "userpoll",
};

struct fslot {
	pthread_mutex_t lock;
	int kind;
	int fd;			/* the end that is registered */
	int peer;		/* pipe/socket other end; private eventfd; -1 */
	uint32_t gen;		/* bumped (before close) each time the file goes */
	pid_t child;		/* K_PIDFD */
	int reaped;
	int sotype;		/* K_SOCK */
	int main_reads;		/* K_PIPE: fd is the read end */
	struct up up;		/* K_UPOLL: its mapping */
	uint64_t written;	/* K_EVENTFD: total written ... */
	uint64_t drained;	/* ... and read */
};

static struct fslot files[NF];
static unsigned long kind_created[K_NR];

static uint32_t fgen(int f)
{
	return __atomic_load_n(&files[f].gen, __ATOMIC_ACQUIRE);
}

/* ---- instances ---------------------------------------------------------- */

enum { R_NONE, R_LIVE };

struct reg {
	int state;
	uint32_t fgen;		/* files[f].gen when added */
	uint32_t seq;		/* current data */
	uint32_t mask;		/* as given to the last ADD/MOD */
	uint32_t umask;		/* union since ADD, with EPOLLERR | EPOLLHUP */
	int kind;
};

struct nest {
	int live;
	uint32_t target_uid;
	int target_fd;
	int target_slot;
	uint32_t seq;
};

struct obj {
	uint32_t uid;
	unsigned n;
	int fd;			/* the slot's fd; -1 once closed (slot lock) */
	int refs;
	int scribble_ok;	/* created to be scribbled on: never checked */
	pthread_mutex_t ctl;	/* ctl calls and reg[]/nest[] */
	pthread_mutex_t harvest;	/* one consumer */
	pthread_rwlock_t map;	/* up.hdr/up.index: write to (un)map */
	struct up up;
	struct reg reg[NF];
	struct nest nest[NEST_MAX];
	unsigned stale_new, stale_old;	/* registrations of closed files */
	uint32_t *seen;		/* item -> batch stamp */
	uint32_t stamp;
	struct obj *next;	/* all objects */
};

struct islot {
	pthread_mutex_t lock;
	struct obj *obj;
};

static struct islot inst[NI];
static struct obj *all_objs;
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t uid_counter;
/* held for reading from fork() until the child (with copies of our fds) is reaped */
static pthread_rwlock_t fork_lock = PTHREAD_RWLOCK_INITIALIZER;

/* ---- small helpers -------------------------------------------------------- */

static int efd_write(int fd, uint64_t v)
{
	return write(fd, &v, sizeof(v)) == (ssize_t)sizeof(v) ? 0 : -errno;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int errno_in(int e, const int *set, int nset)
{
	for (int i = 0; i < nset; i++)
		if (set[i] == e)
			return 1;
	return 0;
}

#define EXPECT_ERRNO(opname, e, ...) do {					\
	static const int set_[] = { __VA_ARGS__ };				\
	if (!errno_in((e), set_, (int)(sizeof(set_) / sizeof(set_[0]))))	\
		violation("%s: errno %d (%s) not in the documented set",	\
			  (opname), (e), strerror(e));				\
} while (0)

static pid_t clone_files(int *pidfd)
{
	struct clone_args ca;

	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_FILES | (pidfd ? CLONE_PIDFD : 0);
	ca.pidfd = (uint64_t)(uintptr_t)pidfd;
	ca.exit_signal = SIGCHLD;
	return (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
}

/* a child: sleeps up to ms, exits; raw system calls only */
static __attribute__((noreturn)) void child_exit(unsigned us)
{
	struct timespec ts = { 0, (long)us * 1000 };

	if (us)
		syscall(SYS_nanosleep, &ts, NULL);
	for (;;)
		syscall(SYS_exit_group, 0);
}

static int sys_pidfd_send_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* ---- file slots: create, close, poke ------------------------------------- */

static sigset_t fuzz_sigs(uint64_t *r)
{
	sigset_t m;

	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);		/* every signalfd: the end check uses it */
	if (chance(r, 2))
		sigaddset(&m, SIGUSR2);
	if (chance(r, 3))
		sigaddset(&m, SIGRTMIN);
	return m;
}

/* a new file in slot f (lock held, slot empty); kind random */
static void file_create(uint64_t *r, int f)
{
	static const unsigned weights[K_NR] = {
		[K_EVENTFD] = 30, [K_PIPE] = 15, [K_SOCK] = 15, [K_SIGNALFD] = 10,
		[K_TIMERFD] = 10, [K_PIDFD] = 8, [K_EPOLL] = 6, [K_UPOLL] = 6,
	};
	struct fslot *s = &files[f];
	unsigned w = rnd(r, 100), k;
	int fds[2], pidfd = -1;

	for (k = 1; k < K_NR - 1 && w >= weights[k]; k++)
		w -= weights[k];
	s->peer = -1;
	s->fd = -1;
	s->kind = K_NONE;
	switch (k) {
	case K_EVENTFD:
		s->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		s->written = s->drained = 0;
		break;
	case K_PIPE:
		if (pipe2(fds, O_NONBLOCK | O_CLOEXEC))
			break;
		s->main_reads = chance(r, 4) ? 0 : 1;
		s->fd = s->main_reads ? fds[0] : fds[1];
		s->peer = s->main_reads ? fds[1] : fds[0];
		break;
	case K_SOCK: {
		static const int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET };

		s->sotype = types[rnd(r, 3)];
		if (socketpair(AF_UNIX, s->sotype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds))
			break;
		s->fd = fds[0];
		s->peer = fds[1];
		break;
	}
	case K_SIGNALFD: {
		sigset_t m = fuzz_sigs(r);

		s->fd = signalfd(-1, &m, SFD_NONBLOCK | SFD_CLOEXEC);
		break;
	}
	case K_TIMERFD:
		s->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		break;
	case K_PIDFD: {
		pid_t pid = clone_files(&pidfd);

		if (pid == 0)
			child_exit(rnd(r, 30000));
		if (pid < 0)
			break;
		s->child = pid;
		s->reaped = 0;
		s->fd = pidfd;
		break;
	}
	case K_EPOLL: {
		struct epoll_event e = { .events = EPOLLIN, .data.u64 = 1 };

		s->fd = epoll_create1(EPOLL_CLOEXEC);
		s->peer = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (s->fd >= 0 && s->peer >= 0 && epoll_ctl(s->fd, EPOLL_CTL_ADD, s->peer, &e))
			violation("plain epoll ADD of an eventfd: %s", strerror(errno));
		break;
	}
	case K_UPOLL: {
		int err = up_open(&s->up, 1 + rnd(r, 4), EPOLL_CLOEXEC);

		if (err) {
			if (err != -ENOMEM)
				violation("pool userpoll instance: %s", strerror(-err));
			break;
		}
		s->fd = s->up.fd;
		s->peer = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (s->peer >= 0 && up_ctl(s->fd, EPOLL_CTL_ADD, s->peer, EPOLLIN | EPOLLET,
					   POOL_DATA))
			violation("pool userpoll ADD of an eventfd: %s", strerror(errno));
		break;
	}
	}
	if (s->fd < 0) {
		if (s->peer >= 0)
			close(s->peer);
		s->peer = -1;
		if (k == K_UPOLL)
			up_unmap(&s->up);
		return;
	}
	s->kind = (int)k;
	COUNT(kind_created[k]);
}

static void eventfd_settle(struct fslot *s, int f)
{
	uint64_t v = 0;

	if (read(s->fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		s->drained += v;
	if (s->written != s->drained)
		violation("eventfd of slot %d: %" PRIu64 " written, %" PRIu64 " read back",
			  f, s->written, s->drained);
}

/* reap the pidfd's child (it exits within 30 ms) */
static void pidfd_reap(struct fslot *s)
{
	siginfo_t si;

	if (s->reaped)
		return;
	memset(&si, 0, sizeof(si));
	if (waitid((idtype_t)P_PIDFD, (id_t)s->fd, &si, WEXITED))
		violation("waitid(P_PIDFD): %s", strerror(errno));
	s->reaped = 1;
}

/* close slot f's file (lock held): generation first, so a reader of the
 * generation that still sees the old one knows the file was open */
static void file_close(int f)
{
	struct fslot *s = &files[f];

	if (s->kind == K_NONE)
		return;
	if (s->kind == K_EVENTFD)
		eventfd_settle(s, f);
	if (s->kind == K_PIDFD)
		pidfd_reap(s);
	__atomic_add_fetch(&s->gen, 1, __ATOMIC_RELEASE);
	if (s->kind == K_UPOLL) {
		up_close(&s->up);
	} else {
		close(s->fd);
	}
	if (s->peer >= 0)
		close(s->peer);
	s->fd = s->peer = -1;
	s->kind = K_NONE;
}

static void poke_pipe_sock(uint64_t *r, struct fslot *s)
{
	char buf[512];
	int wfd, rfd;

	memset(buf, 'x', sizeof(buf));
	if (s->kind == K_PIPE) {
		wfd = s->main_reads ? s->peer : s->fd;
		rfd = s->main_reads ? s->fd : s->peer;
	} else {
		int flip = chance(r, 3);

		wfd = flip ? s->fd : s->peer;
		rfd = flip ? s->peer : s->fd;
	}
	switch (rnd(r, 6)) {
	case 0: case 1:
		if (wfd >= 0 && write(wfd, buf, 1 + rnd(r, sizeof(buf))) < 0)
			EXPECT_ERRNO("write", errno, EAGAIN, EPIPE, ECONNREFUSED, ECONNRESET, ENOTCONN);
		break;
	case 2: case 3:
		if (rfd >= 0 && read(rfd, buf, 1 + rnd(r, sizeof(buf))) < 0)
			EXPECT_ERRNO("read", errno, EAGAIN, ECONNRESET);
		break;
	case 4:
		if (s->kind == K_SOCK) {
			static const int how[] = { SHUT_RD, SHUT_WR, SHUT_RDWR };

			if (shutdown(chance(r, 2) ? s->fd : (s->peer >= 0 ? s->peer : s->fd),
				     how[rnd(r, 3)]))
				EXPECT_ERRNO("shutdown", errno, ENOTCONN);
			break;
		}
		/* fall through */
	default:
		if (s->peer >= 0 && chance(r, 4)) {	/* half close: HUP / ERR */
			close(s->peer);
			s->peer = -1;
		}
		break;
	}
}

static void poke_upoll(struct fslot *s)
{
	struct up_event ev[8];
	int got, k;

	if (s->peer >= 0)
		(void)efd_write(s->peer, 1);
	if (up_repoll(&s->up))
		(void)up_wait(s->fd, 0);
	got = up_harvest(&s->up, ev, 8, NULL);
	for (k = 0; k < got; k++)
		if (ev[k].data != POOL_DATA || (ev[k].events & ~(EPOLLIN | EPOLLERR | EPOLLHUP)))
			violation("pool userpoll instance reported data %#" PRIx64 " events %#x",
				  ev[k].data, ev[k].events);
	if (s->peer >= 0 && got)
		(void)up_efd_read(s->peer);
}

static void poke(uint64_t *r, int f)
{
	struct fslot *s = &files[f];
	uint64_t v;

	switch (s->kind) {
	case K_EVENTFD:
		if (chance(r, 3)) {
			if (read(s->fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
				s->drained += v;
			else
				EXPECT_ERRNO("eventfd read", errno, EAGAIN);
		} else {
			int e = efd_write(s->fd, 1);

			if (e)
				violation("eventfd write: %s", strerror(-e));
			else
				s->written++;
		}
		break;
	case K_PIPE:
	case K_SOCK:
		poke_pipe_sock(r, s);
		break;
	case K_SIGNALFD: {
		struct signalfd_siginfo si[4];

		if (read(s->fd, si, sizeof(si)) < 0)
			EXPECT_ERRNO("signalfd read", errno, EAGAIN);
		break;
	}
	case K_TIMERFD: {
		struct itimerspec it;

		memset(&it, 0, sizeof(it));
		if (chance(r, 3)) {
			if (read(s->fd, &v, sizeof(v)) < 0)
				EXPECT_ERRNO("timerfd read", errno, EAGAIN);
			break;
		}
		if (!chance(r, 4))
			it.it_value.tv_nsec = 1 + (long)rnd(r, 20000000);
		if (chance(r, 3))
			it.it_interval.tv_nsec = 5000000 + (long)rnd(r, 15000000);
		if (timerfd_settime(s->fd, 0, &it, NULL))
			violation("timerfd_settime: %s", strerror(errno));
		break;
	}
	case K_PIDFD:
		if (chance(r, 2)) {
			if (sys_pidfd_send_signal(s->fd, 0))
				EXPECT_ERRNO("pidfd_send_signal", errno, ESRCH);
		} else if (!s->reaped) {
			siginfo_t si;

			memset(&si, 0, sizeof(si));
			if (waitid((idtype_t)P_PIDFD, (id_t)s->fd, &si, WEXITED | WNOHANG))
				violation("waitid(P_PIDFD, WNOHANG): %s", strerror(errno));
			else if (si.si_pid)
				s->reaped = 1;
		}
		break;
	case K_EPOLL: {
		struct epoll_event e[4];

		if (chance(r, 2))
			(void)efd_write(s->peer, 1);
		else if (chance(r, 2))
			(void)up_efd_read(s->peer);
		else if (epoll_wait(s->fd, e, 4, 0) < 0)
			violation("plain epoll_wait: %s", strerror(errno));
		break;
	}
	case K_UPOLL:
		poke_upoll(s);
		break;
	}
}

/* ---- instances: references, mapping ------------------------------------- */

static void obj_free(struct obj *o)
{
	struct obj **p;

	pthread_mutex_lock(&all_lock);
	for (p = &all_objs; *p; p = &(*p)->next)
		if (*p == o) {
			*p = o->next;
			break;
		}
	pthread_mutex_unlock(&all_lock);
	up_unmap(&o->up);
	pthread_mutex_destroy(&o->ctl);
	pthread_mutex_destroy(&o->harvest);
	pthread_rwlock_destroy(&o->map);
	free(o->seen);
	free(o);
}

/* a reference to slot i's instance and a dup of its fd, or NULL */
static struct obj *inst_get(int i, int *dfd)
{
	struct islot *sl = &inst[i];
	struct obj *o;

	*dfd = -1;
	pthread_mutex_lock(&sl->lock);
	o = sl->obj;
	if (o) {
		*dfd = fcntl(o->fd, F_DUPFD_CLOEXEC, 0);
		if (*dfd < 0)
			o = NULL;
		else
			__atomic_add_fetch(&o->refs, 1, __ATOMIC_ACQ_REL);
	}
	pthread_mutex_unlock(&sl->lock);
	return o;
}

static void inst_put(struct obj *o, int dfd)
{
	if (dfd >= 0)
		close(dfd);
	if (o && __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0)
		obj_free(o);
}

/*
 * Map both regions (map lock held for writing) with the lengths the
 * instance has (PROTOCOL.md section 2), not those in its header: a
 * scribbled header must not decide what we map.  0 or -errno.
 */
static int obj_map(struct obj *o, int fd)
{
	struct up u;
	void *p;

	memset(&u, 0, sizeof(u));
	u.fd = -1;
	u.n = o->n;
	u.hlen = up_expected_header_length(o->n);
	u.ilen = up_expected_index_length(o->n);
	u.mask = (uint32_t)(u.ilen / sizeof(uint32_t) - 1);
	p = mmap(NULL, u.hlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	u.hdr = p;
	p = mmap(NULL, u.ilen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)u.hlen);
	if (p == MAP_FAILED) {
		int err = -errno;

		munmap(u.hdr, u.hlen);
		return err;
	}
	u.index = p;
	if (!o->scribble_ok &&
	    (uepoll_hdr_read_once(&u.hdr->magic) != EPOLL_USERPOLL_HEADER_MAGIC ||
	     uepoll_hdr_read_once(&u.hdr->header_length) != u.hlen ||
	     uepoll_hdr_read_once(&u.hdr->index_length) != u.ilen ||
	     uepoll_hdr_read_once(&u.hdr->max_items_nr) != o->n))
		violation("instance %u (n=%u): header magic %#x lengths %u %u n %u", o->uid, o->n,
			  u.hdr->magic, u.hdr->header_length, u.hdr->index_length,
			  u.hdr->max_items_nr);
	o->up = u;
	return 0;
}

/* is the instance checked (never scribbled on)? */
static int obj_checked(const struct obj *o)
{
	return !o->scribble_ok;
}

/* ---- harvest: PROTOCOL.md section 5 with the checks ------------------- */

static void check_report(struct obj *o, uint32_t events, uint64_t data, uint64_t hstart)
{
	uint32_t s, seq = (uint32_t)data, tag, uid16;
	struct hist *h = &hist[seq % HIST];
	struct hist copy;

	COUNT(reports);
	if (!obj_checked(o))
		return;
	uid16 = (uint32_t)(data >> 40) & 0xffff;
	s = (uint32_t)(data >> 32) & 0xff;
	if ((data >> 56) != DATA_MAGIC || uid16 != (o->uid & 0xffff) || s >= NF + NI) {
		violation("instance %u (n=%u): reported data %#" PRIx64 " was never registered "
			  "on it", o->uid, o->n, data);
		return;
	}
	if (events & PRIVATE_BITS)
		violation("instance %u: events %#x carry private bits", o->uid, events);
	tag = __atomic_load_n(&h->tag, __ATOMIC_ACQUIRE);
	copy.uid = h->uid;
	copy.slot = h->slot;
	copy.umask = h->umask;
	copy.failed = __atomic_load_n(&h->failed, __ATOMIC_ACQUIRE);
	copy.retired = __atomic_load_n(&h->retired, __ATOMIC_ACQUIRE);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (tag != seq || __atomic_load_n(&h->tag, __ATOMIC_RELAXED) != seq) {
		COUNT(unchecked_reports);	/* history overwritten since */
		return;
	}
	COUNT(checked_reports);
	if (copy.uid != o->uid || copy.slot != s)
		violation("instance %u: data %#" PRIx64 " belongs to instance %u slot %u",
			  o->uid, data, copy.uid, copy.slot);
	if (copy.failed)
		violation("instance %u: data %#" PRIx64 " of a ctl that failed was reported",
			  o->uid, data);
	if (events & ~(copy.umask | EPOLLERR | EPOLLHUP))
		violation("instance %u slot %u: events %#x outside the registered masks %#x",
			  o->uid, s, events, copy.umask);
	if (copy.retired && copy.retired <= hstart)
		violation("instance %u slot %u: event %#x of data %#" PRIx64 " reported by a "
			  "harvest that began after its DEL/MOD returned", o->uid, s, events, data);
}

/* on EPOLLIN of a current eventfd registration: read it, as a consumer does */
static void consume_eventfd(struct obj *o, uint64_t data)
{
	unsigned f = (unsigned)(data >> 32) & 0xff;
	struct fslot *s;
	uint64_t v;

	if (!obj_checked(o) || f >= NF || (data >> 56) != DATA_MAGIC)
		return;
	s = &files[f];
	if (pthread_mutex_trylock(&s->lock))
		return;
	if (s->kind == K_EVENTFD && read(s->fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		s->drained += v;
	pthread_mutex_unlock(&s->lock);
}

/*
 * One batch (harvest mutex and map read lock held): up_harvest() of
 * userpoll.h with a bound for scribbled rings and the checks.  Returns
 * the events reported, and their data in out[] (if given).
 */
static int fz_harvest(struct obj *o, uint64_t *out, uint32_t *out_ev, int max)
{
	struct up *u = &o->up;
	struct epoll_uheader *h = u->hdr;
	uint64_t hstart = __atomic_load_n(&epoch, __ATOMIC_SEQ_CST);
	uint32_t head = up_head(u);
	uint32_t tail = uepoll_tail_acquire(h);			/* C1 */
	uint32_t ring = u->mask + 1, steps = 0;
	int got = 0;

	if (tail - head > u->n) {
		if (obj_checked(o))
			violation("instance %u (n=%u): %u unread entries (head %u tail %u)",
				  o->uid, u->n, tail - head, head, tail);
		if (tail - head > ring)
			head = tail - ring;	/* scribbled: bound the walk */
	}
	if (++o->stamp == 0)
		o->stamp = 1;
	while (head != tail && got < max && steps++ < ring) {
		uint32_t nr = uepoll_index_read(&u->index[head & u->mask]);	/* C2 */
		struct epoll_uitem *it;
		uint32_t f;
		uint64_t data;

		head++;
		if (nr == 0 || nr > u->n) {
			if (obj_checked(o))
				violation("instance %u (n=%u): index entry %u", o->uid, u->n, nr);
			continue;
		}
		it = &h->items[nr - 1];
		f = uepoll_item_take(it);					/* C3 */
		if ((f & ~EPOLLREMOVED) == 0)
			continue;
		data = uepoll_item_data_acquire(it);				/* C4 */
		if (uepoll_item_removed_since(it))				/* C5 */
			continue;
		if (o->seen) {
			if (o->seen[nr - 1] == o->stamp && obj_checked(o))
				violation("instance %u: item %u reported twice in one batch",
					  o->uid, nr - 1);
			o->seen[nr - 1] = o->stamp;
		}
		check_report(o, f & ~EPOLLREMOVED, data, hstart);
		if (out)
			out[got] = data;
		if (out_ev)
			out_ev[got] = f & ~EPOLLREMOVED;
		got++;
		if ((f & EPOLLIN) && !out)
			consume_eventfd(o, data);
	}
	uepoll_head_release(h, head);					/* C6 */
	return got;
}

/* ---- operations ------------------------------------------------------------ */

struct thr {
	int id;
	pthread_t th;
	uint64_t r;
	unsigned long nops;
	int cur;		/* the operation in progress */
};

static struct thr thr[MAXTHR];

static void op_harvest(struct thr *t)
{
	int d, i = (int)rnd(&t->r, NI);
	struct obj *o = inst_get(i, &d);

	if (!o)
		return;
	pthread_mutex_lock(&o->harvest);
	pthread_rwlock_rdlock(&o->map);
	if (!o->up.hdr) {
		int w = up_wait(d, 0);

		if (w && w != -ESTALE)
			violation("epoll_wait(unmapped instance, NULL, 0, 0): %s", strerror(-w));
	} else {
		int rounds = 1 + (int)rnd(&t->r, 3);

		while (rounds--) {
			if (up_repoll(&o->up) || chance(&t->r, 8)) {		/* C7 */
				int w = up_wait(d, 0);

				if (w && w != -ESTALE)
					violation("epoll_wait(fd, NULL, 0, 0): %s", strerror(-w));
			}
			if (!fz_harvest(o, NULL, NULL, chance(&t->r, 4) ? 1 + (int)rnd(&t->r, 4)
								    : BATCH))
				break;
		}
	}
	pthread_rwlock_unlock(&o->map);
	pthread_mutex_unlock(&o->harvest);
	inst_put(o, d);
}

static void op_wait(struct thr *t)
{
	static const int tmo[] = { 0, 0, 1, 3, 10 };
	struct epoll_event evs[2];
	struct timespec ts;
	int d, w, i = (int)rnd(&t->r, NI);
	struct obj *o = inst_get(i, &d);
	sigset_t none;

	if (!o)
		return;
	sigemptyset(&none);
	sigaddset(&none, SIGUSR1);
	sigaddset(&none, SIGUSR2);
	sigaddset(&none, SIGRTMIN);
	switch (rnd(&t->r, 8)) {
	case 0:		/* events != NULL: EINVAL */
		errno = 0;
		if (epoll_wait(d, evs, 2, 0) != -1 || errno != EINVAL)
			violation("epoll_wait(userpoll, events, 2): not EINVAL (%s)", strerror(errno));
		else
			COUNT(errno_count[OP_WAIT]);
		break;
	case 1:		/* NULL, maxevents 1: EINVAL */
		errno = 0;
		if (syscall(__NR_epoll_pwait, d, NULL, 1, 0, NULL, 8) != -1 || errno != EINVAL)
			violation("epoll_pwait(userpoll, NULL, 1): not EINVAL (%s)", strerror(errno));
		else
			COUNT(errno_count[OP_WAIT]);
		break;
	case 2:
		ts.tv_sec = 0;
		ts.tv_nsec = (long)rnd(&t->r, 3000000);
		w = (int)syscall(__NR_epoll_pwait2, d, NULL, 0, &ts, &none, 8);
		if (w < 0)
			EXPECT_ERRNO("epoll_pwait2(NULL, 0)", errno, ESTALE, EINTR);
		break;
	case 3:
		w = epoll_pwait(d, NULL, 0, tmo[rnd(&t->r, 5)], &none);
		if (w < 0)
			EXPECT_ERRNO("epoll_pwait(NULL, 0)", errno, ESTALE, EINTR);
		break;
	default:
		w = up_wait(d, tmo[rnd(&t->r, 5)]);
		if (w)
			EXPECT_ERRNO("epoll_wait(NULL, 0)", -w, ESTALE, EINTR);
		break;
	}
	inst_put(o, d);
}

static void op_poll(struct thr *t)
{
	int d, i = (int)rnd(&t->r, NI), ret;
	struct obj *o = inst_get(i, &d);

	if (!o)
		return;
	if (chance(&t->r, 4)) {
		fd_set rs;
		struct timeval tv = { 0, (long)rnd(&t->r, 2000) };

		FD_ZERO(&rs);
		if (d < FD_SETSIZE) {
			FD_SET(d, &rs);
			if (select(d + 1, &rs, NULL, NULL, &tv) < 0)
				violation("select(userpoll): %s", strerror(errno));
		}
	} else {
		struct pollfd p = { .fd = d, .events = POLLIN | POLLOUT | POLLPRI };

		ret = poll(&p, 1, (int)rnd(&t->r, 4));
		if (ret < 0)
			violation("poll(userpoll): %s", strerror(errno));
		else if (p.revents & ~(POLLIN | POLLRDNORM))
			violation("poll(userpoll): revents %#x", p.revents);
	}
	inst_put(o, d);
}

static uint32_t random_mask(uint64_t *r)
{
	static const uint32_t bits[] = {
		EPOLLIN, EPOLLOUT, EPOLLPRI, EPOLLRDHUP, EPOLLRDNORM, EPOLLWRNORM,
		EPOLLRDBAND, EPOLLWRBAND, EPOLLERR, EPOLLHUP, EPOLLMSG,
	};
	uint32_t m = 0;
	unsigned k;

	for (k = 0; k < sizeof(bits) / sizeof(bits[0]); k++)
		if (chance(r, k < 2 ? 2 : 6))
			m |= bits[k];
	m |= EPOLLET;
	if (chance(r, 4))
		m |= EPOLLONESHOT;
	if (chance(r, 16))
		m |= EPOLLWAKEUP;
	return m;
}

/*
 * Capacity bookkeeping of o (ctl lock held): registrations certainly
 * alive (gens read now and after the call: a file closed meanwhile is
 * not certain) and those that may be (closed files not yet known to be
 * released, nested instances).
 */
static unsigned regs_live(struct obj *o, uint32_t *gens)
{
	unsigned k, n = 0;

	for (k = 0; k < NF; k++) {
		uint32_t g = fgen((int)k);

		if (o->reg[k].state == R_LIVE && o->reg[k].fgen == g &&
		    (!gens || gens[k] == g))
			n++;
	}
	return n;
}

static unsigned regs_maybe(struct obj *o)
{
	unsigned k, n = o->stale_new + o->stale_old;

	for (k = 0; k < NF; k++)
		if (o->reg[k].state == R_LIVE)
			n++;
	for (k = 0; k < NEST_MAX; k++)
		if (o->nest[k].live)
			n++;
	return n;
}

/* a registration whose file went: the kernel dropped it (or will) */
static void reg_forget_stale(struct obj *o, int f)
{
	struct reg *rg = &o->reg[f];

	if (rg->state == R_LIVE && rg->fgen != fgen(f)) {
		rg->state = R_NONE;
		o->stale_new++;
	}
}

static void op_ctl(struct thr *t, int op)
{
	int d, i = (int)rnd(&t->r, NI), f = (int)rnd(&t->r, NF), ret, e, bad = 0, live;
	struct obj *o = inst_get(i, &d);
	struct fslot *s = &files[f];
	uint32_t gens[NF], mask, seq = 0;
	struct reg *rg;
	unsigned k;
	const char *name = op == EPOLL_CTL_ADD ? "ADD" : op == EPOLL_CTL_MOD ? "MOD" : "DEL";

	if (!o)
		return;
	pthread_mutex_lock(&s->lock);
	if (s->kind == K_NONE)
		goto out_file;
	pthread_mutex_lock(&o->ctl);
	reg_forget_stale(o, f);
	rg = &o->reg[f];
	live = rg->state == R_LIVE;
	mask = random_mask(&t->r);
	if (op != EPOLL_CTL_DEL && chance(&t->r, 12)) {
		bad = 1;
		if (chance(&t->r, 2))
			mask &= ~EPOLLET;
		else
			mask |= EPOLLEXCLUSIVE;
	}
	for (k = 0; k < NF; k++)
		gens[k] = fgen((int)k);
	if (op != EPOLL_CTL_DEL) {
		seq = next_seq();
		hist_set(seq, o->uid, (unsigned)f,
			 (op == EPOLL_CTL_MOD && live ? rg->umask : 0) | (mask & ~PRIVATE_BITS) |
			 EPOLLERR | EPOLLHUP);
	}
	ret = up_ctl(d, op, s->fd, mask, mkdata(o->uid, (unsigned)f, seq));
	e = ret ? errno : 0;
	if (ret && seq)
		hist_failed(seq);
	if (bad) {
		/* the ET/EXCLUSIVE check may come before or after the lookup */
		if (!ret)
			violation("%s with mask %#x (no EPOLLET or EPOLLEXCLUSIVE) succeeded",
				  name, mask);
		else if ((op == EPOLL_CTL_ADD && !live) || (op == EPOLL_CTL_MOD && live))
			EXPECT_ERRNO(name, e, EINVAL);
		else
			EXPECT_ERRNO(name, e, EINVAL, EEXIST, ENOENT);
		if (!ret && op == EPOLL_CTL_ADD && !live) {	/* keep the books right */
			rg->state = R_LIVE;
			rg->fgen = gens[f];
			rg->seq = seq;
			rg->umask = (mask & ~PRIVATE_BITS) | EPOLLERR | EPOLLHUP;
		} else if (!ret && op == EPOLL_CTL_MOD && live) {
			rg->seq = seq;
			rg->umask |= (mask & ~PRIVATE_BITS) | EPOLLERR | EPOLLHUP;
		}
		if (ret)
			COUNT(errno_count[op == EPOLL_CTL_ADD ? OP_ADD : OP_MOD]);
		goto out;
	}
	switch (op) {
	case EPOLL_CTL_ADD:
		if (live) {
			if (!ret || e != EEXIST)
				violation("ADD of a registered %s (slot %d): %s", kind_name[s->kind],
					  f, ret ? strerror(e) : "succeeded");
			if (ret)
				COUNT(errno_count[OP_ADD]);
			break;
		}
		if (!ret) {
			unsigned certain = regs_live(o, gens);

			if (certain >= o->n)
				violation("instance %u: ADD succeeded with %u of n=%u registrations "
					  "alive", o->uid, certain, o->n);
			rg->state = R_LIVE;
			rg->fgen = gens[f];
			rg->seq = seq;
			rg->mask = mask;
			rg->umask = (mask & ~PRIVATE_BITS) | EPOLLERR | EPOLLHUP;
			rg->kind = s->kind;
		} else if (e == ENOSPC) {
			COUNT(enospc);
			COUNT(errno_count[OP_ADD]);
			if (regs_maybe(o) < o->n)
				violation("instance %u: ENOSPC with %u registrations (at most) of "
					  "n=%u", o->uid, regs_maybe(o), o->n);
		} else if (e == ENOMEM) {
			COUNT(absorbed_enomem);
		} else {
			violation("ADD of a %s (slot %d): %s", kind_name[s->kind], f, strerror(e));
		}
		break;
	case EPOLL_CTL_MOD:
		if (!live) {
			if (!ret || e != ENOENT)
				violation("MOD of an unregistered %s: %s", kind_name[s->kind],
					  ret ? strerror(e) : "succeeded");
			else
				COUNT(errno_count[OP_MOD]);
			break;
		}
		if (ret) {
			violation("MOD of a registered %s (slot %d): %s", kind_name[s->kind], f,
				  strerror(e));
			break;
		}
		hist_retire(rg->seq);
		rg->seq = seq;
		rg->mask = mask;
		rg->umask |= (mask & ~PRIVATE_BITS) | EPOLLERR | EPOLLHUP;
		break;
	default:
		if (!live) {
			if (!ret || e != ENOENT)
				violation("DEL of an unregistered %s: %s", kind_name[s->kind],
					  ret ? strerror(e) : "succeeded");
			else
				COUNT(errno_count[OP_DEL]);
			break;
		}
		if (ret) {
			violation("DEL of a registered %s (slot %d): %s", kind_name[s->kind], f,
				  strerror(e));
			break;
		}
		hist_retire(rg->seq);
		rg->state = R_NONE;
		break;
	}
out:
	pthread_mutex_unlock(&o->ctl);
out_file:
	pthread_mutex_unlock(&s->lock);
	inst_put(o, d);
}

/* errors that leave everything as it was */
static void op_ctl_bad(struct thr *t)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = 0 };
	int d, i = (int)rnd(&t->r, NI), ret, want;
	struct obj *o = inst_get(i, &d);
	const char *what;

	if (!o)
		return;
	errno = 0;
	switch (rnd(&t->r, 11)) {
	case 0:
		what = "ADD fd -1";
		want = EBADF;
		ret = epoll_ctl(d, EPOLL_CTL_ADD, -1, &ev);
		break;
	case 1:
		what = "ADD of a huge fd number";
		want = EBADF;
		ret = epoll_ctl(d, EPOLL_CTL_ADD, 0x3ffffff0, &ev);
		break;
	case 2:
		what = "ctl on epfd -1";
		want = EBADF;
		ret = epoll_ctl(-1, EPOLL_CTL_ADD, efd_bad, &ev);
		break;
	case 3:
		what = "ADD of a regular file";
		want = EPERM;
		ret = epoll_ctl(d, EPOLL_CTL_ADD, reg_fd, &ev);
		break;
	case 4:
		what = "ADD of a directory";
		want = EPERM;
		ret = epoll_ctl(d, EPOLL_CTL_ADD, dir_fd, &ev);
		break;
	case 5:
		what = "ADD of the instance itself";
		want = EINVAL;
		ret = epoll_ctl(d, EPOLL_CTL_ADD, d, &ev);
		break;
	case 6:
		what = "ctl on an eventfd as epfd";
		want = EINVAL;
		ret = epoll_ctl(efd_bad2, EPOLL_CTL_ADD, efd_bad, &ev);
		break;
	case 7:
		what = "unknown op";
		want = EINVAL;
		ret = epoll_ctl(d, chance(&t->r, 2) ? 0 : 4 + (int)rnd(&t->r, 100), efd_bad, &ev);
		break;
	case 8:
		what = "ADD/MOD with a NULL event";
		want = EFAULT;
		ret = (int)syscall(SYS_epoll_ctl, d,
				   chance(&t->r, 2) ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, efd_bad, NULL);
		break;
	case 9:
		what = "ADD without EPOLLET";
		want = EINVAL;
		ev.events = random_mask(&t->r) & ~EPOLLET;
		ret = epoll_ctl(d, EPOLL_CTL_ADD, efd_bad, &ev);
		break;
	default:
		what = "ADD with EPOLLEXCLUSIVE";
		want = EINVAL;
		ev.events = (random_mask(&t->r) & ~EPOLLONESHOT) | EPOLLEXCLUSIVE;
		ret = epoll_ctl(d, EPOLL_CTL_ADD, efd_bad, &ev);
		break;
	}
	if (!ret) {
		violation("%s succeeded", what);
		(void)epoll_ctl(d, EPOLL_CTL_DEL, efd_bad, NULL);
	} else if (errno != want) {
		violation("%s: errno %d (%s), documented %d (%s)", what, errno, strerror(errno),
			  want, strerror(want));
	} else {
		COUNT(errno_count[OP_CTL_BAD]);
	}
	inst_put(o, d);
}

/* instance j registered in instance i: nesting, loops (ELOOP) */
static void op_nest_add(struct thr *t)
{
	int d, i = (int)rnd(&t->r, NI), j = (int)rnd(&t->r, NI), ret, e, k, slot = -1;
	struct obj *o = inst_get(i, &d), *tg;
	uint32_t seq, mask = (random_mask(&t->r) & ~(EPOLLONESHOT)) | EPOLLIN;

	if (!o)
		return;
	pthread_mutex_lock(&o->ctl);
	for (k = 0; k < NEST_MAX; k++)
		if (!o->nest[k].live)
			slot = k;
	pthread_mutex_lock(&inst[j].lock);
	tg = inst[j].obj;
	if (slot < 0 || !tg)
		goto out;
	for (k = 0; k < NEST_MAX; k++)
		if (o->nest[k].live && o->nest[k].target_uid == tg->uid &&
		    o->nest[k].target_fd == tg->fd)
			goto out;	/* already: EEXIST is not what this is for */
	seq = next_seq();
	hist_set(seq, o->uid, NF + (unsigned)j, (mask & ~PRIVATE_BITS) | EPOLLERR | EPOLLHUP);
	ret = up_ctl(d, EPOLL_CTL_ADD, tg->fd, mask, mkdata(o->uid, NF + (unsigned)j, seq));
	e = ret ? errno : 0;
	if (ret)
		hist_failed(seq);
	if (tg == o) {
		if (!ret || e != EINVAL)
			violation("ADD of an instance into itself: %s", ret ? strerror(e) : "succeeded");
		if (!ret)
			(void)epoll_ctl(d, EPOLL_CTL_DEL, tg->fd, NULL);
		goto out;
	}
	if (!ret) {
		o->nest[slot].live = 1;
		o->nest[slot].target_uid = tg->uid;
		o->nest[slot].target_fd = tg->fd;
		o->nest[slot].target_slot = j;
		o->nest[slot].seq = seq;
	} else if (e == ELOOP) {
		COUNT(eloop);
		COUNT(errno_count[OP_NEST_ADD]);
	} else if (e == ENOSPC) {
		COUNT(enospc);
		COUNT(errno_count[OP_NEST_ADD]);
		if (regs_maybe(o) < o->n)
			violation("instance %u: ENOSPC (nesting) with %u registrations (at most) "
				  "of n=%u", o->uid, regs_maybe(o), o->n);
	} else if (e == ENOMEM) {
		COUNT(absorbed_enomem);
	} else {
		violation("ADD of an instance into another: %s", strerror(e));
	}
out:
	pthread_mutex_unlock(&inst[j].lock);
	pthread_mutex_unlock(&o->ctl);
	inst_put(o, d);
}

static void op_nest_del(struct thr *t)
{
	int d, i = (int)rnd(&t->r, NI), k = (int)rnd(&t->r, NEST_MAX), j;
	struct obj *o = inst_get(i, &d), *tg;
	struct nest *ne;

	if (!o)
		return;
	pthread_mutex_lock(&o->ctl);
	ne = &o->nest[k];
	if (!ne->live)
		goto out;
	j = ne->target_slot;
	pthread_mutex_lock(&inst[j].lock);
	tg = inst[j].obj;
	if (tg && tg->uid == ne->target_uid && tg->fd == ne->target_fd) {
		if (epoll_ctl(d, EPOLL_CTL_DEL, tg->fd, NULL))
			violation("DEL of a nested instance: %s", strerror(errno));
		else
			hist_retire(ne->seq);
		ne->live = 0;
	}
	/* else: the target's fd is closed; the kernel drops the registration
	 * when its file goes, and it stays "maybe" here */
	pthread_mutex_unlock(&inst[j].lock);
out:
	pthread_mutex_unlock(&o->ctl);
	inst_put(o, d);
}

static void op_poke(struct thr *t)
{
	int f = (int)rnd(&t->r, NF);

	pthread_mutex_lock(&files[f].lock);
	poke(&t->r, f);
	pthread_mutex_unlock(&files[f].lock);
}

static void op_recreate(struct thr *t, int keep_closed)
{
	int f = (int)rnd(&t->r, NF);

	pthread_mutex_lock(&files[f].lock);
	file_close(f);
	if (!keep_closed)
		file_create(&t->r, f);
	pthread_mutex_unlock(&files[f].lock);
}

static void op_signal(struct thr *t)
{
	union sigval v = { .sival_int = 1 };

	switch (rnd(&t->r, 4)) {
	case 0:
		if (kill(getpid(), chance(&t->r, 2) ? SIGUSR1 : SIGUSR2))
			violation("kill(self): %s", strerror(errno));
		break;
	case 1: {
		pid_t tid = __atomic_load_n(&tids[rnd(&t->r, (unsigned)nthreads + 1)],
					    __ATOMIC_RELAXED);

		if (tid > 0 && syscall(SYS_tgkill, getpid(), tid, SIGUSR1))
			EXPECT_ERRNO("tgkill", errno, ESRCH);
		break;
	}
	case 2:
		if (sigqueue(getpid(), SIGRTMIN, v))
			EXPECT_ERRNO("sigqueue", errno, EAGAIN);
		break;
	default:
		if (kill(getpid(), SIGUSR1))
			violation("kill(self): %s", strerror(errno));
		break;
	}
}

static void op_remap(struct thr *t)
{
	int d, i = (int)rnd(&t->r, NI), err;
	struct obj *o = inst_get(i, &d);

	if (!o)
		return;
	pthread_rwlock_wrlock(&o->map);
	if (o->up.hdr && chance(&t->r, 2)) {
		up_unmap(&o->up);
	} else {
		up_unmap(&o->up);
		err = obj_map(o, d);
		if (err && err != -ENOMEM)
			violation("mapping instance %u (n=%u): %s", o->uid, o->n, strerror(-err));
	}
	pthread_rwlock_unlock(&o->map);
	inst_put(o, d);
}

/* extra mappings, good (partial, aliases) and bad (documented EINVAL/ENODEV) */
static void op_map_extra(struct thr *t)
{
	int d, i = (int)rnd(&t->r, NI), tmp;
	struct obj *o = inst_get(i, &d);
	size_t hl, il, len;
	void *p, *q;

	if (!o)
		return;
	hl = up_expected_header_length(o->n);
	il = up_expected_index_length(o->n);
	errno = 0;
	switch (rnd(&t->r, 8)) {
	case 0:		/* part of the header, read through the alias */
		len = page * (1 + rnd(&t->r, (unsigned)(hl / page)));
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, d, 0);
		if (p == MAP_FAILED) {
			EXPECT_ERRNO("mmap(header part)", errno, ENOMEM);
			break;
		}
		if (obj_checked(o) && uepoll_hdr_read_once(p) != EPOLL_USERPOLL_HEADER_MAGIC)
			violation("instance %u: magic %#x through a second mapping", o->uid,
				  uepoll_hdr_read_once(p));
		if (chance(&t->r, 3)) {
			q = mremap(p, len, hl + page, MREMAP_MAYMOVE);
			if (q != MAP_FAILED) {
				violation("mremap grew a userpoll mapping");
				p = q;
				len = hl + page;
			}
		}
		munmap(p, len);
		break;
	case 1:		/* part of the ring */
		len = page * (1 + rnd(&t->r, (unsigned)(il / page)));
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, d, (off_t)hl);
		if (p == MAP_FAILED)
			EXPECT_ERRNO("mmap(ring part)", errno, ENOMEM);
		else
			munmap(p, len);
		break;
	case 2:
		p = mmap(NULL, hl + page, PROT_READ, MAP_SHARED, d, 0);
		if (p != MAP_FAILED) {
			violation("mmap of header_length + 1 page succeeded");
			munmap(p, hl + page);
		} else {
			EXPECT_ERRNO("mmap(too long header)", errno, EINVAL);
		}
		break;
	case 3:
		p = mmap(NULL, page, PROT_READ, MAP_SHARED, d, (off_t)(hl + il));
		if (p != MAP_FAILED) {
			violation("mmap at header_length + index_length succeeded");
			munmap(p, page);
		} else {
			EXPECT_ERRNO("mmap(bad offset)", errno, EINVAL);
		}
		break;
	case 4:
		p = mmap(NULL, page, PROT_READ, MAP_PRIVATE, d, chance(&t->r, 2) ? 0 : (off_t)hl);
		if (p != MAP_FAILED) {
			violation("MAP_PRIVATE of a userpoll region succeeded");
			munmap(p, page);
		} else {
			EXPECT_ERRNO("mmap(MAP_PRIVATE)", errno, EINVAL);
		}
		break;
	case 5:
		p = mmap(NULL, il + page, PROT_READ, MAP_SHARED, d, (off_t)hl);
		if (p != MAP_FAILED) {
			violation("mmap of index_length + 1 page succeeded");
			munmap(p, il + page);
		} else {
			EXPECT_ERRNO("mmap(too long ring)", errno, EINVAL);
		}
		break;
	case 6:
		tmp = epoll_create1(EPOLL_CLOEXEC);
		p = mmap(NULL, page, PROT_READ, MAP_SHARED, tmp, 0);
		if (p != MAP_FAILED) {
			violation("mmap of a plain epoll instance succeeded");
			munmap(p, page);
		} else {
			EXPECT_ERRNO("mmap(plain epoll)", errno, ENODEV);
		}
		close(tmp);
		break;
	default:	/* a whole second mapping, kept for a moment */
		p = mmap(NULL, hl, PROT_READ | PROT_WRITE, MAP_SHARED, d, 0);
		q = mmap(NULL, il, PROT_READ, MAP_SHARED, d, (off_t)hl);
		if (p != MAP_FAILED)
			munmap(p, hl);
		if (q != MAP_FAILED)
			munmap(q, il);
		break;
	}
	inst_put(o, d);
}

/* MADV_DOFORK, then a child that exits at once (with or without our fds) */
static void op_fork(struct thr *t)
{
	int d, i = (int)rnd(&t->r, NI), plain = chance(&t->r, 3), status;
	struct obj *o = inst_get(i, &d);
	pid_t pid;

	if (!o)
		return;
	pthread_rwlock_rdlock(&o->map);
	if (o->up.hdr && !chance(&t->r, 4)) {
		if (madvise(o->up.hdr, o->up.hlen, MADV_DOFORK))
			violation("madvise(header, MADV_DOFORK): %s", strerror(errno));
		if (chance(&t->r, 2) && madvise(o->up.index, o->up.ilen, MADV_DOFORK))
			violation("madvise(ring, MADV_DOFORK): %s", strerror(errno));
	}
	if (plain) {
		pthread_rwlock_rdlock(&fork_lock);
		pid = fork();
	} else {
		pid = clone_files(NULL);
	}
	if (pid == 0)
		child_exit(0);
	if (pid < 0)
		EXPECT_ERRNO("fork", errno, EAGAIN, ENOMEM);
	else if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		violation("fork child: status %#x (%s)", status, strerror(errno));
	if (plain)
		pthread_rwlock_unlock(&fork_lock);
	if (o->up.hdr && chance(&t->r, 2))
		(void)madvise(o->up.hdr, o->up.hlen, MADV_DONTFORK);
	pthread_rwlock_unlock(&o->map);
	inst_put(o, d);
}

static void op_close_inst(struct thr *t)
{
	struct islot *sl = &inst[rnd(&t->r, NI)];
	struct obj *o;

	pthread_mutex_lock(&sl->lock);
	o = sl->obj;
	if (o) {
		sl->obj = NULL;
		close(o->fd);
		o->fd = -1;
	}
	pthread_mutex_unlock(&sl->lock);
	inst_put(o, -1);	/* the slot's reference */
}

static unsigned random_n(uint64_t *r)
{
	static const unsigned ns[] = { 1, 1, 1, 2, 2, 3, 4, 4, 7, 8, 16, 16, 31, 64, 64,
				       256, 1000, 4096, 65536 };
	unsigned k = rnd(r, sizeof(ns) / sizeof(ns[0]));

	if (ns[k] == 65536 && !chance(r, 3))
		return 4096;
	return ns[k];
}

/*
 * A new instance in an empty slot.  Created outside the slot lock (no lock
 * is taken while the slot lock is held), dropped if the slot was filled
 * meanwhile.
 */
static void op_create_inst(struct thr *t)
{
	struct islot *sl = &inst[rnd(&t->r, NI)];
	unsigned n = random_n(&t->r);
	struct obj *o;
	int fd, err, taken;

	pthread_mutex_lock(&sl->lock);
	taken = sl->obj != NULL;
	pthread_mutex_unlock(&sl->lock);
	if (taken)
		return;
	fd = sys_epoll_create2(EPOLL_USERPOLL | (chance(&t->r, 2) ? EPOLL_CLOEXEC : 0), n);
	if (fd < 0) {
		EXPECT_ERRNO("epoll_create2", errno, ENOMEM, EMFILE, ENFILE);
		return;
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		abort();
	o->uid = __atomic_add_fetch(&uid_counter, 1, __ATOMIC_RELAXED);
	o->n = n;
	o->fd = fd;
	o->refs = 1;
	o->scribble_ok = chance(&t->r, 4);
	o->seen = calloc(n, sizeof(*o->seen));
	pthread_mutex_init(&o->ctl, NULL);
	pthread_mutex_init(&o->harvest, NULL);
	pthread_rwlock_init(&o->map, NULL);
	if (!chance(&t->r, 8)) {
		err = obj_map(o, fd);
		if (err && err != -ENOMEM)
			violation("mapping a new instance (n=%u): %s", n, strerror(-err));
	}
	pthread_mutex_lock(&all_lock);
	o->next = all_objs;
	all_objs = o;
	pthread_mutex_unlock(&all_lock);
	pthread_mutex_lock(&sl->lock);
	taken = sl->obj != NULL;
	if (!taken)
		sl->obj = o;
	pthread_mutex_unlock(&sl->lock);
	if (taken) {
		close(o->fd);
		o->fd = -1;
		inst_put(o, -1);
	}
}

static void op_create_bad(struct thr *t)
{
	int fd;
	const char *what;

	errno = 0;
	switch (rnd(&t->r, 5)) {
	case 0:
		what = "epoll_create2(EPOLL_USERPOLL, 0)";
		fd = sys_epoll_create2(EPOLL_USERPOLL, 0);
		break;
	case 1:
		what = "epoll_create2(EPOLL_USERPOLL, 65537)";
		fd = sys_epoll_create2(EPOLL_USERPOLL, EPOLL_USERPOLL_MAX_ITEMS + 1);
		break;
	case 2:
		what = "epoll_create2(EPOLL_USERPOLL, (size_t)-1)";
		fd = sys_epoll_create2(EPOLL_USERPOLL, (size_t)-1);
		break;
	case 3:
		what = "epoll_create2(unknown flag)";
		fd = sys_epoll_create2(EPOLL_USERPOLL | (2 << rnd(&t->r, 18)), 1);
		if (fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC)) {
			/* 2 << 18 is O_CLOEXEC's bit: a valid flag */
			close(fd);
			return;
		}
		break;
	default:
		what = "epoll_create1(EPOLL_USERPOLL)";
		fd = epoll_create1(EPOLL_USERPOLL);
		break;
	}
	if (fd >= 0) {
		violation("%s succeeded", what);
		close(fd);
	} else if (errno != EINVAL) {
		violation("%s: errno %d (%s), documented EINVAL", what, errno, strerror(errno));
	} else {
		COUNT(errno_count[OP_CREATE_BAD]);
	}
}

static void op_scribble(struct thr *t)
{
	int d, i = (int)rnd(&t->r, NI), k, w;
	struct obj *o = inst_get(i, &d);

	if (!o)
		return;
	pthread_rwlock_rdlock(&o->map);
	if (o->scribble_ok && o->up.hdr) {
		uint32_t *hw = (uint32_t *)o->up.hdr, *iw = o->up.index;
		size_t nh = o->up.hlen / 4, ni = o->up.ilen / 4;

		w = 1 + (int)rnd(&t->r, 64);
		for (k = 0; k < w; k++) {
			uint32_t v = (uint32_t)rnd64(&t->r);

			switch (rnd(&t->r, 6)) {
			case 0:		/* magic, lengths, head, tail, repoll */
				__atomic_store_n(&hw[rnd(&t->r, 7)], v, __ATOMIC_RELAXED);
				break;
			case 1:
				__atomic_store_n(&hw[rnd(&t->r, (unsigned)nh)], v, __ATOMIC_RELAXED);
				break;
			case 2:
			case 3:
				__atomic_store_n(&iw[rnd(&t->r, (unsigned)ni)],
						 chance(&t->r, 2) ? v : v % (o->n + 2), __ATOMIC_RELAXED);
				break;
			case 4:
				__atomic_exchange_n(&o->up.hdr->items[rnd(&t->r, o->n)].ready_events,
						    v, __ATOMIC_ACQ_REL);
				break;
			default:
				__atomic_store_n(&o->up.hdr->items[rnd(&t->r, o->n)].data,
						 rnd64(&t->r), __ATOMIC_RELAXED);
				break;
			}
		}
	}
	pthread_rwlock_unlock(&o->map);
	inst_put(o, d);
}

/* "userpoll: head H tail T capacity N items I"; 0 if found */
static int read_fdinfo(int fd, unsigned *head, unsigned *tail, unsigned *cap, unsigned *items)
{
	char path[64], buf[1024];
	ssize_t len;
	char *p;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -1;
	len = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (len <= 0)
		return -1;
	buf[len] = 0;
	p = strstr(buf, "userpoll:");
	if (!p || sscanf(p, "userpoll: head %u tail %u capacity %u items %u",
			 head, tail, cap, items) != 4)
		return -1;
	return 0;
}

static void op_fdinfo(struct thr *t)
{
	int d, i = (int)rnd(&t->r, NI);
	struct obj *o = inst_get(i, &d);
	unsigned h, tl, cap, items;

	if (!o)
		return;
	if (read_fdinfo(d, &h, &tl, &cap, &items))
		violation("instance %u: no userpoll line in fdinfo", o->uid);
	else if (cap != o->n || items > o->n)
		violation("instance %u (n=%u): fdinfo capacity %u items %u", o->uid, o->n, cap,
			  items);
	inst_put(o, d);
}

static void run_op(struct thr *t, int op)
{
	switch (op) {
	case OP_HARVEST: op_harvest(t); break;
	case OP_WAIT: op_wait(t); break;
	case OP_POLL: op_poll(t); break;
	case OP_ADD: op_ctl(t, EPOLL_CTL_ADD); break;
	case OP_MOD: op_ctl(t, EPOLL_CTL_MOD); break;
	case OP_DEL: op_ctl(t, EPOLL_CTL_DEL); break;
	case OP_CTL_BAD: op_ctl_bad(t); break;
	case OP_NEST_ADD: op_nest_add(t); break;
	case OP_NEST_DEL: op_nest_del(t); break;
	case OP_POKE: op_poke(t); break;
	case OP_RECREATE: op_recreate(t, 0); break;
	case OP_CLOSE_FILE: op_recreate(t, 1); break;
	case OP_SIGNAL: op_signal(t); break;
	case OP_REMAP: op_remap(t); break;
	case OP_MAP_EXTRA: op_map_extra(t); break;
	case OP_FORK: op_fork(t); break;
	case OP_CLOSE_INST: op_close_inst(t); break;
	case OP_CREATE_INST: op_create_inst(t); break;
	case OP_CREATE_BAD: op_create_bad(t); break;
	case OP_SCRIBBLE: op_scribble(t); break;
	case OP_FDINFO: op_fdinfo(t); break;
	}
}

static void *worker(void *arg)
{
	struct thr *t = arg;
	unsigned total = 0, k;

	__atomic_store_n(&tids[t->id], gettid(), __ATOMIC_RELAXED);
	for (k = 0; k < OP_NR; k++)
		total += ops[k].weight;
	while (!stop) {
		unsigned w = rnd(&t->r, total);
		int op;

		for (op = 0; w >= ops[op].weight; op++)
			w -= ops[op].weight;
		__atomic_store_n(&t->cur, op, __ATOMIC_RELAXED);
		COUNT(op_count[op]);
		run_op(t, op);
		__atomic_store_n(&t->nops, t->nops + 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&tids[t->id], 0, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * Registrations of closed files are counted as "maybe alive" until two
 * syncs have passed (at least one second, no fork child holding a copy of
 * our fds: fork_lock taken for writing): by then the kernel dropped them.
 */
static void sync_point(void)
{
	struct obj *o;
	unsigned k;

	pthread_rwlock_wrlock(&fork_lock);
	pthread_mutex_lock(&all_lock);
	for (o = all_objs; o; o = o->next) {
		pthread_mutex_lock(&o->ctl);
		for (k = 0; k < NF; k++)
			reg_forget_stale(o, (int)k);
		o->stale_old = o->stale_new;
		o->stale_new = 0;
		pthread_mutex_unlock(&o->ctl);
	}
	pthread_mutex_unlock(&all_lock);
	pthread_rwlock_unlock(&fork_lock);
}

/* ---- the end: quiesced checks ------------------------------------------- */

static void drain_signals(void)
{
	struct signalfd_siginfo si[8];
	int f;

	for (f = 0; f < NF; f++)
		if (files[f].kind == K_SIGNALFD)
			while (read(files[f].fd, si, sizeof(si)) > 0)
				;
}

/* harvest until nothing comes for a while; the data seen into seen[] */
static int drain_ring(struct obj *o, int ms, uint64_t *want, int nwant, int *found)
{
	uint64_t data[BATCH];
	uint32_t ev[BATCH];
	double end = up_now() + ms / 1000.0;
	int total = 0, got, k, w, left = nwant;

	do {
		w = up_wait(o->fd, left ? 50 : 0);
		if (w && w != -ESTALE)
			violation("quiesce: epoll_wait: %s", strerror(-w));
		do {
			got = fz_harvest(o, data, ev, BATCH);
			total += got;
			for (k = 0; k < got; k++) {
				int m;

				for (m = 0; m < nwant; m++)
					if (data[k] == want[m] && !found[m] && (ev[k] & EPOLLIN)) {
						found[m] = 1;
						left--;
					}
			}
		} while (got);
	} while ((left || w == -ESTALE) && up_now() < end);
	return total;
}

static void quiesce_instance(struct obj *o)
{
	uint64_t want[NF];
	int wslot[NF], found[NF], nwant = 0, zombies = 0, k, err;
	unsigned h, tl, cap, items, live = 0;

	if (!o->up.hdr) {
		err = obj_map(o, o->fd);
		if (err) {
			violation("quiesce: mapping instance %u: %s", o->uid, strerror(-err));
			return;
		}
	}
	if (!obj_checked(o)) {
		drain_ring(o, 200, NULL, 0, NULL);
		return;
	}
	/* nested instances: DEL the ones whose target is still open */
	for (k = 0; k < NEST_MAX; k++) {
		struct nest *ne = &o->nest[k];
		struct obj *tg = inst[ne->target_slot].obj;

		if (!ne->live)
			continue;
		if (tg && tg->uid == ne->target_uid && tg->fd == ne->target_fd) {
			if (epoll_ctl(o->fd, EPOLL_CTL_DEL, tg->fd, NULL))
				violation("quiesce: DEL of a nested instance: %s", strerror(errno));
			hist_retire(ne->seq);
			ne->live = 0;
		} else {
			zombies++;
		}
	}
	/* eventfds and signalfds: MOD to EPOLLIN|EPOLLET with new data; the rest: DEL */
	drain_signals();
	for (k = 0; k < NF; k++) {
		struct fslot *s = &files[k];
		struct reg *rg = &o->reg[k];
		uint32_t seq;

		reg_forget_stale(o, k);
		if (rg->state != R_LIVE)
			continue;
		if (s->kind == K_EVENTFD)
			eventfd_settle(s, k);
		if (s->kind != K_EVENTFD && s->kind != K_SIGNALFD) {
			if (epoll_ctl(o->fd, EPOLL_CTL_DEL, s->fd, NULL))
				violation("quiesce: DEL of a %s: %s", kind_name[s->kind], strerror(errno));
			hist_retire(rg->seq);
			rg->state = R_NONE;
			continue;
		}
		seq = next_seq();
		hist_set(seq, o->uid, (unsigned)k, EPOLLIN | EPOLLERR | EPOLLHUP);
		if (up_ctl(o->fd, EPOLL_CTL_MOD, s->fd, EPOLLIN | EPOLLET,
			   mkdata(o->uid, (unsigned)k, seq))) {
			violation("quiesce: MOD of a registered %s: %s", kind_name[s->kind],
				  strerror(errno));
			continue;
		}
		hist_retire(rg->seq);
		rg->seq = seq;
		want[nwant] = mkdata(o->uid, (unsigned)k, seq);
		wslot[nwant] = k;
		found[nwant] = 0;
		nwant++;
		live++;
	}
	/*
	 * Fill up with the eventfds and signalfds not registered yet: the
	 * books are exact now, so ADD succeeds exactly while fewer than n are
	 * registered (nested instances whose target went may still count).
	 */
	for (k = 0; k < NF; k++) {
		struct fslot *s = &files[k];
		struct reg *rg = &o->reg[k];
		uint32_t seq;
		int ret, e;

		if (rg->state == R_LIVE || (s->kind != K_EVENTFD && s->kind != K_SIGNALFD))
			continue;
		seq = next_seq();
		hist_set(seq, o->uid, (unsigned)k, EPOLLIN | EPOLLERR | EPOLLHUP);
		ret = up_ctl(o->fd, EPOLL_CTL_ADD, s->fd, EPOLLIN | EPOLLET,
			     mkdata(o->uid, (unsigned)k, seq));
		e = ret ? errno : 0;
		if (ret) {
			hist_failed(seq);
			if (e != ENOSPC)
				violation("quiesce: ADD of a %s: %s", kind_name[s->kind], strerror(e));
			else if (live + (unsigned)zombies < o->n)
				violation("quiesce: instance %u: ENOSPC with %u registered of n=%u "
					  "(%d nested left)", o->uid, live, o->n, zombies);
			continue;
		}
		if (live >= o->n)
			violation("quiesce: instance %u: ADD number %u of n=%u succeeded", o->uid,
				  live + 1, o->n);
		rg->state = R_LIVE;
		rg->fgen = s->gen;
		rg->seq = seq;
		rg->mask = EPOLLIN | EPOLLET;
		rg->umask = EPOLLIN | EPOLLERR | EPOLLHUP;
		rg->kind = s->kind;
		want[nwant] = mkdata(o->uid, (unsigned)k, seq);
		wslot[nwant] = k;
		found[nwant] = 0;
		nwant++;
		live++;
	}
	drain_ring(o, 300, NULL, 0, NULL);
	if (read_fdinfo(o->fd, &h, &tl, &cap, &items)) {
		violation("quiesce: instance %u: no fdinfo userpoll line", o->uid);
	} else {
		if (!zombies && items != live)
			violation("quiesce: instance %u (n=%u): fdinfo says %u items, %u registered",
				  o->uid, o->n, items, live);
		if (tl != up_tail(&o->up) || h != up_head(&o->up) || h != tl)
			violation("quiesce: instance %u: fdinfo head %u tail %u, mapping head %u "
				  "tail %u", o->uid, h, tl, up_head(&o->up), up_tail(&o->up));
	}
	k = up_wait(o->fd, 0);
	if (k)
		violation("quiesce: instance %u: epoll_wait on an empty ring: %s", o->uid,
			  strerror(-k));
	/* one event each, none lost */
	for (k = 0; k < nwant; k++)
		if (files[wslot[k]].kind == K_EVENTFD) {
			if (!efd_write(files[wslot[k]].fd, 1))
				files[wslot[k]].written++;
		}
	kill(getpid(), SIGUSR1);
	drain_ring(o, 5000, want, nwant, found);
	for (k = 0; k < nwant; k++)
		if (!found[k])
			violation("quiesce: instance %u (n=%u): no event for the %s of slot %d after "
				  "a %s", o->uid, o->n, kind_name[files[wslot[k]].kind], wslot[k],
				  files[wslot[k]].kind == K_EVENTFD ? "write" : "SIGUSR1");
	drain_signals();
	for (k = 0; k < nwant; k++)
		if (files[wslot[k]].kind == K_EVENTFD)
			eventfd_settle(&files[wslot[k]], wslot[k]);
	printf("fuzz: quiesce: instance %u n=%u: %u registrations (%d nested left), "
	       "%d event(s) checked\n", o->uid, o->n, live, zombies, nwant);
}

static void quiesce(void)
{
	int f, i;

	for (f = 0; f < NF; f++) {
		struct fslot *s = &files[f];

		if (s->kind == K_PIDFD)
			pidfd_reap(s);
		if (s->kind == K_TIMERFD) {
			struct itimerspec it;

			memset(&it, 0, sizeof(it));
			timerfd_settime(s->fd, 0, &it, NULL);
		}
	}
	sync_point();
	sync_point();
	for (i = 0; i < NI; i++)
		if (inst[i].obj)
			quiesce_instance(inst[i].obj);
}

static void teardown(void)
{
	int i, f;

	for (i = 0; i < NI; i++) {
		struct obj *o = inst[i].obj;

		if (!o)
			continue;
		inst[i].obj = NULL;
		close(o->fd);
		o->fd = -1;
		inst_put(o, -1);
	}
	if (all_objs)
		violation("objects still referenced after every thread ended");
	for (f = 0; f < NF; f++)
		file_close(f);
}

/* ---- main ------------------------------------------------------------------ */

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--seed S] [--seconds T] [--threads K]\n", prog);
	exit(2);
}

static void parse(int argc, char **argv)
{
	int i;

	seed = (uint64_t)time(NULL);
	for (i = 1; i < argc; i++) {
		char *end;

		if (i + 1 >= argc)
			usage(argv[0]);
		if (!strcmp(argv[i], "--seed"))
			seed = strtoull(argv[++i], &end, 0);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = (int)strtol(argv[++i], &end, 0);
		else if (!strcmp(argv[i], "--threads"))
			nthreads = (int)strtol(argv[++i], &end, 0);
		else
			usage(argv[0]);
		if (*end)
			usage(argv[0]);
	}
	if (seconds < 1 || nthreads < 1 || nthreads > MAXTHR)
		usage(argv[0]);
}

static unsigned long total_ops(void)
{
	unsigned long n = 0;
	int k;

	for (k = 0; k < nthreads; k++)
		n += __atomic_load_n(&thr[k].nops, __ATOMIC_RELAXED);
	return n;
}

static void report(int pass)
{
	int k;

	printf("fuzz: %-14s %10s %10s\n", "operation", "count", "errno-ok");
	for (k = 0; k < OP_NR; k++)
		printf("fuzz: %-14s %10lu %10lu\n", ops[k].name, op_count[k], errno_count[k]);
	printf("fuzz: reports %lu (checked %lu, history gone %lu), ENOSPC %lu, ELOOP %lu, "
	       "ENOMEM %lu\n", reports, checked_reports, unchecked_reports, enospc, eloop,
	       absorbed_enomem);
	printf("fuzz: files created:");
	for (k = 1; k < K_NR; k++)
		printf(" %s %lu", kind_name[k], kind_created[k]);
	printf("; instances created %u\n", uid_counter);
	if (pass)
		printf("fuzz: PASS seed=%" PRIu64 " ops=%lu\n", seed, total_ops());
	else
		printf("fuzz: FAIL seed=%" PRIu64 " ops=%lu violations=%lu\n", seed, total_ops(),
		       violations);
	fflush(stdout);
}

/* main thread: time, syncs, progress, a stall watchdog per thread */
static void supervise(void)
{
	double t0 = up_now(), last_sync = t0, last_print = t0, moved[MAXTHR];
	unsigned long seen[MAXTHR];
	int k;

	for (k = 0; k < nthreads; k++) {
		seen[k] = 0;
		moved[k] = t0;
	}
	while (up_now() - t0 < seconds) {
		double now;

		usleep(100 * 1000);
		now = up_now();
		for (k = 0; k < nthreads; k++) {
			unsigned long n = __atomic_load_n(&thr[k].nops, __ATOMIC_RELAXED);

			if (n != seen[k]) {
				seen[k] = n;
				moved[k] = now;
			} else if (now - moved[k] > 120) {
				printf("fuzz: thread %d finished no operation for 120 s; it is in %s\n",
				       k, ops[__atomic_load_n(&thr[k].cur, __ATOMIC_RELAXED)].name);
				violation("stall (a thread stuck in the kernel?)");
				report(0);
				_exit(1);
			}
		}
		if (now - last_sync >= 1.0) {
			sync_point();
			last_sync = now;
		}
		if (now - last_print >= 60) {
			note("%.0f s: ops=%lu reports=%lu violations=%lu", now - t0, total_ops(),
			     reports, violations);
			last_print = now;
		}
	}
}

int main(int argc, char **argv)
{
	sigset_t blk;
	int k, fds0, fds1;
	uint64_t x;
	char tmpl[] = "/tmp/uepoll-fuzz-XXXXXX";

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv);
	printf("fuzz: seed=%" PRIu64 " seconds=%d threads=%d (replay: %s --seed %" PRIu64
	       " --seconds %d --threads %d)\n", seed, seconds, nthreads, argv[0], seed, seconds,
	       nthreads);
	if (up_feature() != 1) {
		printf("fuzz: SKIP: %s absent: kernel without EPOLL_USERPOLL\n",
		       UEPOLL_FEATURE_FILE);
		return KSFT_SKIP;
	}
	page = UP_PAGE_SIZE;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&blk);
	sigaddset(&blk, SIGUSR1);
	sigaddset(&blk, SIGUSR2);
	sigaddset(&blk, SIGRTMIN);
	pthread_sigmask(SIG_BLOCK, &blk, NULL);
	fds0 = count_fds();

	reg_fd = mkostemp(tmpl, O_CLOEXEC);
	if (reg_fd >= 0)
		unlink(tmpl);
	dir_fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	efd_bad = eventfd(0, EFD_CLOEXEC);
	efd_bad2 = eventfd(0, EFD_CLOEXEC);
	if (reg_fd < 0 || dir_fd < 0 || efd_bad < 0 || efd_bad2 < 0) {
		printf("fuzz: setup: %s\n", strerror(errno));
		return 1;
	}
	x = seed;
	for (k = 0; k < NI; k++)
		pthread_mutex_init(&inst[k].lock, NULL);
	for (k = 0; k < NF; k++) {
		uint64_t r = splitmix(&x);

		pthread_mutex_init(&files[k].lock, NULL);
		files[k].fd = files[k].peer = -1;
		if (!r)
			r = 1;
		file_create(&r, k);
	}
	tids[nthreads] = gettid();
	for (k = 0; k < nthreads; k++) {
		thr[k].id = k;
		thr[k].r = splitmix(&x) | 1;
		if (pthread_create(&thr[k].th, NULL, worker, &thr[k])) {
			printf("fuzz: pthread_create: %s\n", strerror(errno));
			return 1;
		}
	}
	supervise();
	stop = 1;
	for (k = 0; k < nthreads; k++)
		pthread_join(thr[k].th, NULL);
	note("%d s done, %lu operations; quiescing", seconds, total_ops());
	quiesce();
	teardown();
	close(reg_fd);
	close(dir_fd);
	close(efd_bad);
	close(efd_bad2);
	fds1 = count_fds();
	if (fds0 != fds1)
		violation("%d open fds at the start, %d at the end", fds0, fds1);
	report(violations == 0);
	return violations ? 1 : 0;
}
