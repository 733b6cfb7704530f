// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * userpoll_fuse_test - a keyless wake-up whose poll never returns.
 *
 * A FUSE file is a wait queue woken without a poll mask: the server's
 * FUSE_NOTIFY_POLL makes fuse_notify_poll_wakeup() call
 * wake_up_interruptible_sync(&ff->poll_wait), and what changed is only
 * known by polling the file again, which sends FUSE_POLL to the server and
 * waits for its answer.  The server here answers the first FUSE_POLL (the
 * one EPOLL_CTL_ADD makes) with revents 0, sends the notification, and
 * never answers a later FUSE_POLL.  What an EPOLL_USERPOLL instance must
 * then guarantee:
 *
 *  - no removal waits for that poll: EPOLL_CTL_DEL of the FUSE file or of
 *    another registration of the instance, close() of the file or of the
 *    instance, exit with both open; also while another task of the
 *    instance is inside the poll;
 *  - the poll runs in the task that next waits on the instance
 *    (epoll_wait(fd, NULL, 0, ms), or poll() of the instance), as that
 *    task: the FUSE_POLL's fuse_in_header pid and uid are the consumer's,
 *    not a kworker's;
 *  - that task stays killable, and a poll result that comes back after
 *    its registration was removed is not reported; one for a registration
 *    still there is.
 *
 * A kernel that polls such registrations from a kworker and flushes that
 * work on removal fails: the kworker waits for the answer, the removal
 * waits for the kworker, uninterruptibly (D state, SIGKILL does not help).
 * Every test therefore runs what may hang in a child process, gives it a
 * deadline, says which step hung, then ends the hang by killing the server:
 * its /dev/fuse file is closed, which aborts the connection and ends every
 * request still waiting for an answer (ENOTCONN/ECONNABORTED).
 *
 * The server speaks /dev/fuse directly (no libfuse) and is a process
 * forked by the test rather than a thread of it: the connection is
 * aborted by the last close of /dev/fuse, and only a separate process can
 * be the one holding it - the test forks its clients, which would inherit
 * a descriptor of the test's own (fork ignores O_CLOEXEC) and keep a hung
 * connection alive.  So the test closes its copy once the server is
 * forked, and SIGKILL of the server is the abort, whatever state the test
 * and its clients are in.  The server runs single-threaded on a
 * non-blocking descriptor polled every 20 ms: it keeps answering other
 * requests (FLUSH at close, ...) while FUSE_POLLs stay unanswered, and
 * obeys the test's commands from shared memory meanwhile.
 *
 * Interrupts: a task that gets a signal while waiting for a FUSE request
 * the server has already read makes the kernel send FUSE_INTERRUPT; until
 * the server answers the interrupted request, a SIGKILLed task waits in
 * request_wait_answer()'s uninterruptible wait_event().  That is FUSE's
 * own rule for every request, so the server honours interrupts (answers
 * the interrupted FUSE_POLL with EINTR), as an interruptible server does:
 * a task killed inside the poll can then exit, and only epoll's own waits
 * can keep it.
 *
 * The client drops to uid/gid FU_UID (the mount has allow_other) so the
 * FUSE_POLL's uid tells the consumer (FU_UID) from a kernel thread (0).
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "userpoll.h"

#include <dirent.h>
#include <grp.h>
#include <linux/fuse.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>

#define INET		(EPOLLIN | EPOLLET)
#define FU_UID		4321		/* the client's uid and gid */
#define FU_NODE		2		/* the file "f" */
#define FU_FH		0xf11eULL	/* its open file handle */
#define FU_DATA_FILE	0xf1		/* registration data: the FUSE file */
#define FU_DATA_OTHER	0xef		/* the eventfd */
#define FU_MAX_POLL	16

/*
 * Deadlines, in seconds, generous for TCG: a passing run only waits
 * FU_SETTLE_S per test, a hanging one FU_HANG_S more.
 */
#define FU_INIT_S	10.0	/* the server's FUSE_INIT answer */
#define FU_NOTIFY_S	10.0	/* ADD + the server's notification */
#define FU_SETTLE_S	0.5	/* after it: a kworker's FUSE_POLL #2, if any */
#define FU_POLL2_S	5.0	/* epoll_wait -> FUSE_POLL #2 */
#define FU_HANG_S	5.0	/* an action and the exit after it */
#define FU_REAP_S	10.0	/* after the connection was aborted */

#ifndef PF_KTHREAD
#define PF_KTHREAD	0x00200000
#endif

/* ---- what the processes share (MAP_SHARED, before fork) ----------------- */

enum fu_action {
	FU_NONE = -1,
	FU_DEL_FILE,		/* EPOLL_CTL_DEL of the FUSE file */
	FU_DEL_OTHER,		/* EPOLL_CTL_DEL of the eventfd */
	FU_CLOSE_FILE,		/* close() of the FUSE file */
	FU_CLOSE_INSTANCE,	/* munmap + close() of the instance */
	FU_EXIT,		/* _exit() with everything open */
	FU_WAIT,		/* epoll_wait(fd, NULL, 0, wait_ms) */
	FU_POLL_INSTANCE,	/* poll() of the instance, wait_ms */
};

static const char *const fu_action_name[] = {
	[FU_DEL_FILE] = "EPOLL_CTL_DEL of the FUSE file",
	[FU_DEL_OTHER] = "EPOLL_CTL_DEL of the eventfd",
	[FU_CLOSE_FILE] = "close() of the FUSE file",
	[FU_CLOSE_INSTANCE] = "close() of the instance",
	[FU_EXIT] = "exit with the instance and the file open",
	[FU_WAIT] = "epoll_wait(fd, NULL, 0, ms)",
	[FU_POLL_INSTANCE] = "poll() of the instance",
};

enum fu_phase {
	PH_NONE,
	PH_OPEN,	/* dropping privileges, opening the file */
	PH_ADD,		/* epoll_create2, EPOLL_CTL_ADD (FUSE_POLL #1) */
	PH_NOTIFY,	/* waiting for FUSE_NOTIFY_POLL (helper: FUSE_POLL #2) */
	PH_ACT,		/* in the action */
	PH_DONE,	/* the action returned */
	PH_EXIT,	/* exiting: closing its files */
	PH_FAILED,	/* a step before the action failed: why[] */
};

static const char *const fu_phase_name[] = {
	[PH_NONE] = "starting", [PH_OPEN] = "opening the FUSE file",
	[PH_ADD] = "EPOLL_CTL_ADD", [PH_NOTIFY] = "waiting for the notification",
	[PH_ACT] = "its action", [PH_DONE] = "after its action",
	[PH_EXIT] = "exit (closing its files)", [PH_FAILED] = "failed",
};

struct fu_actor {		/* the client's main thread [0], helper [1] */
	int phase;
	int ret;		/* the action's result, 0 or -errno */
	double t0, t1;		/* the action's start and end (up_now()) */
	int nev;		/* FU_WAIT: what the ring held afterwards */
	struct up_event ev[4];
	char why[192];
};

struct fu_poll_rec {		/* one FUSE_POLL, as the server read it */
	uint64_t unique, kh, fh;
	uint32_t pid, uid, gid, flags, events;
	int answered;		/* 0 no, 1 revents 0, 2 EINTR, 3 POLLIN */
	double t;
};

struct fu_shm {
	/* written by the server */
	int inited;		/* FUSE_INIT answered */
	uint32_t init_minor;	/* the kernel's */
	int npoll;
	struct fu_poll_rec poll[FU_MAX_POLL];
	int notified;		/* 1 sent, -errno the write failed */
	double t_notified;
	int nintr, nintr_poll;	/* FUSE_INTERRUPTs; of an unanswered POLL */
	int nenosys;
	uint32_t enosys_op[8];
	char error[160];	/* the server's fatal error */
	/* written by the test */
	int answer_polls;	/* answer every unanswered FUSE_POLL: POLLIN */
	struct fu_actor actor[2];
};

static inline int fu_get(const int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void fu_set(int *p, int v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static void fu_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Fail the current test with a message (the harness has no FAIL()). */
#define FU_FAIL(fmt, ...) do {						\
	TH_LOG(fmt, ##__VA_ARGS__);					\
	_metadata->exit_code = KSFT_FAIL;				\
} while (0)

/* ---- the server ------------------------------------------------------------ */

static void __attribute__((noreturn, format(printf, 2, 3)))
fu_server_fail(struct fu_shm *sh, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sh->error, sizeof(sh->error), fmt, ap);
	va_end(ap);
	_exit(1);
}

/* A reply: the header, then len bytes of arg (none with an error). */
static int fu_reply(int fd, uint64_t unique, int error, const void *arg,
		    size_t len)
{
	struct fuse_out_header oh = {
		.len = (uint32_t)(sizeof(oh) + len), .error = error,
		.unique = unique,
	};
	struct iovec iov[2] = {
		{ .iov_base = &oh, .iov_len = sizeof(oh) },
		{ .iov_base = (void *)arg, .iov_len = len },
	};

	return writev(fd, iov, len ? 2 : 1) == (ssize_t)oh.len ? 0 : -errno;
}

static void fu_attr(struct fuse_attr *a, uint64_t ino)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->mode = ino == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0666;
	a->nlink = ino == FUSE_ROOT_ID ? 2 : 1;
	a->blksize = 4096;
}

static void fu_init(int fd, struct fu_shm *sh, const struct fuse_in_header *ih,
		    const struct fuse_init_in *in)
{
	struct fuse_init_out out;

	sh->init_minor = in->minor;
	if (in->major != FUSE_KERNEL_VERSION) {
		fu_reply(fd, ih->unique, -EPROTO, NULL, 0);
		fu_server_fail(sh, "FUSE_INIT: kernel protocol %u.%u, not %u.x",
			       in->major, in->minor, FUSE_KERNEL_VERSION);
	}
	/* no optional flags: none of them is implemented */
	memset(&out, 0, sizeof(out));
	out.major = FUSE_KERNEL_VERSION;
	out.minor = in->minor < FUSE_KERNEL_MINOR_VERSION ?
		    in->minor : FUSE_KERNEL_MINOR_VERSION;
	out.max_readahead = in->max_readahead;
	out.max_write = 4096;
	out.time_gran = 1;
	if (fu_reply(fd, ih->unique, 0, &out, sizeof(out)))
		fu_server_fail(sh, "FUSE_INIT reply: %s", strerror(errno));
	fu_set(&sh->inited, 1);
}

/*
 * FUSE_POLL: recorded; #1 is answered (revents 0) and followed by the
 * notification, the others wait for an interrupt or the test's command.
 */
static void fu_poll(int fd, struct fu_shm *sh, const struct fuse_in_header *ih,
		    const struct fuse_poll_in *in)
{
	int k = sh->npoll;
	struct fu_poll_rec *r = &sh->poll[k < FU_MAX_POLL ? k : FU_MAX_POLL - 1];
	struct {
		struct fuse_out_header oh;
		struct fuse_notify_poll_wakeup_out w;
	} note;
	struct fuse_poll_out out = { .revents = 0 };

	if (k < FU_MAX_POLL) {
		r->unique = ih->unique;
		r->pid = ih->pid;
		r->uid = ih->uid;
		r->gid = ih->gid;
		r->fh = in->fh;
		r->kh = in->kh;
		r->flags = in->flags;
		r->events = in->events;
		r->t = up_now();
	}
	fu_set(&sh->npoll, k + 1);
	if (k > 0)
		return;
	if (fu_reply(fd, ih->unique, 0, &out, sizeof(out)))
		fu_server_fail(sh, "FUSE_POLL #1 reply: %s", strerror(errno));
	r->answered = 1;
	memset(&note, 0, sizeof(note));
	note.oh.len = sizeof(note);
	note.oh.error = FUSE_NOTIFY_POLL;	/* unique 0: a notification */
	note.w.kh = in->kh;
	sh->t_notified = up_now();
	fu_set(&sh->notified, write(fd, &note, sizeof(note)) == (ssize_t)sizeof(note) ?
			      1 : -errno);
}

/* Answer the unanswered FUSE_POLL `unique` (every one when 0). */
static int fu_answer(int fd, struct fu_shm *sh, uint64_t unique, int error)
{
	struct fuse_poll_out out = { .revents = POLLIN };
	int k, n = fu_get(&sh->npoll), found = 0;

	for (k = 1; k < n && k < FU_MAX_POLL; k++) {
		struct fu_poll_rec *r = &sh->poll[k];

		if (r->answered || (unique && r->unique != unique))
			continue;
		/* ENOENT: the request is gone (its connection aborted) */
		(void)fu_reply(fd, r->unique, error, &out, error ? 0 : sizeof(out));
		r->answered = error ? 2 : 3;
		found = 1;
	}
	return found;
}

static void fu_handle(int fd, struct fu_shm *sh, const char *buf, size_t n)
{
	const struct fuse_in_header *ih = (const void *)buf;
	const void *arg = ih + 1;
	union {
		struct fuse_entry_out entry;
		struct fuse_attr_out attr;
		struct fuse_open_out open;
	} out;
	int k;

	memset(&out, 0, sizeof(out));
	switch (ih->opcode) {
	case FUSE_INIT:
		fu_init(fd, sh, ih, arg);
		return;
	case FUSE_LOOKUP:
		if (ih->nodeid != FUSE_ROOT_ID || n < sizeof(*ih) + 2 ||
		    strcmp(arg, "f")) {
			fu_reply(fd, ih->unique, -ENOENT, NULL, 0);
			return;
		}
		out.entry.nodeid = FU_NODE;
		out.entry.generation = 1;
		out.entry.entry_valid = 3600;
		out.entry.attr_valid = 3600;
		fu_attr(&out.entry.attr, FU_NODE);
		fu_reply(fd, ih->unique, 0, &out.entry, sizeof(out.entry));
		return;
	case FUSE_GETATTR:
		out.attr.attr_valid = 3600;
		fu_attr(&out.attr.attr, ih->nodeid);
		fu_reply(fd, ih->unique, 0, &out.attr, sizeof(out.attr));
		return;
	case FUSE_OPEN:
		if (ih->nodeid != FU_NODE) {
			fu_reply(fd, ih->unique, -ENOENT, NULL, 0);
			return;
		}
		out.open.fh = FU_FH;
		out.open.open_flags = FOPEN_DIRECT_IO;
		fu_reply(fd, ih->unique, 0, &out.open, sizeof(out.open));
		return;
	case FUSE_FLUSH:
	case FUSE_RELEASE:
		fu_reply(fd, ih->unique, 0, NULL, 0);
		return;
	case FUSE_POLL:
		fu_poll(fd, sh, ih, arg);
		return;
	case FUSE_INTERRUPT:	/* no reply of its own */
		fu_set(&sh->nintr, sh->nintr + 1);
		if (fu_answer(fd, sh, ((const struct fuse_interrupt_in *)arg)->unique,
			      -EINTR))
			fu_set(&sh->nintr_poll, sh->nintr_poll + 1);
		return;
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:	/* no reply */
		return;
	default:
		k = sh->nenosys;
		if (k < (int)(sizeof(sh->enosys_op) / sizeof(sh->enosys_op[0])))
			sh->enosys_op[k] = ih->opcode;
		fu_set(&sh->nenosys, k + 1);
		fu_reply(fd, ih->unique, -ENOSYS, NULL, 0);
	}
}

static void __attribute__((noreturn)) fu_server(int fd, struct fu_shm *sh)
{
	static char buf[FUSE_MIN_READ_BUFFER * 16];

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		/* once told to, every FUSE_POLL gets POLLIN, later ones too */
		if (fu_get(&sh->answer_polls))
			fu_answer(fd, sh, 0, 0);
		if (poll(&pfd, 1, 20) <= 0)
			continue;
		if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL))
			_exit(0);	/* the connection is gone */
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == ENOENT))
			continue;
		if (n < 0 && errno == ENODEV)
			_exit(0);	/* unmounted */
		if (n < (ssize_t)sizeof(struct fuse_in_header))
			fu_server_fail(sh, "read(/dev/fuse): %zd (%s)", n,
				       n < 0 ? strerror(errno) : "short");
		fu_handle(fd, sh, buf, (size_t)n);
	}
}

/* ---- the client ------------------------------------------------------------ */

struct fu_client {
	struct fu_shm *sh;
	const char *path;
	int action;		/* the main thread's */
	int helper;		/* a helper thread's, after FUSE_POLL #2, or FU_NONE */
	int wait_ms;		/* FU_WAIT's timeout */
	struct up u;
	int fd, efd;
};

static void __attribute__((noreturn, format(printf, 2, 3)))
fu_client_fail(struct fu_actor *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->why, sizeof(a->why), fmt, ap);
	va_end(ap);
	fu_set(&a->phase, PH_FAILED);
	_exit(3);
}

static void fu_act(struct fu_client *c, struct fu_actor *a, int action)
{
	int ret = 0;

	a->t0 = up_now();
	fu_set(&a->phase, action == FU_EXIT ? PH_EXIT : PH_ACT);
	switch (action) {
	case FU_DEL_FILE:
		ret = up_ctl(c->u.fd, EPOLL_CTL_DEL, c->fd, 0, 0) ? -errno : 0;
		break;
	case FU_DEL_OTHER:
		ret = up_ctl(c->u.fd, EPOLL_CTL_DEL, c->efd, 0, 0) ? -errno : 0;
		break;
	case FU_CLOSE_FILE:
		ret = close(c->fd) ? -errno : 0;
		break;
	case FU_CLOSE_INSTANCE:
		/* the mapping holds the file: without it close() is the last */
		up_unmap(&c->u);
		ret = close(c->u.fd) ? -errno : 0;
		break;
	case FU_EXIT:
		_exit(0);
	case FU_WAIT:
		ret = up_wait(c->u.fd, c->wait_ms);
		a->nev = up_harvest(&c->u, a->ev, 4, NULL);
		break;
	case FU_POLL_INSTANCE: {
		struct pollfd pfd = { .fd = c->u.fd, .events = POLLIN };

		ret = poll(&pfd, 1, c->wait_ms) < 0 ? -errno : 0;
		break;
	}
	}
	a->ret = ret;
	a->t1 = up_now();
	fu_set(&a->phase, PH_DONE);
}

/* The helper thread: acts once the consumer is inside FUSE_POLL #2. */
static void *fu_helper(void *arg)
{
	struct fu_client *c = arg;
	struct fu_actor *b = &c->sh->actor[1];
	double end = up_now() + FU_POLL2_S;

	fu_set(&b->phase, PH_NOTIFY);
	while (fu_get(&c->sh->npoll) < 2 && up_now() < end)
		fu_sleep_ms(10);
	fu_sleep_ms(100);
	fu_act(c, b, c->helper);
	return NULL;
}

static void __attribute__((noreturn)) fu_client_main(struct fu_client *c)
{
	struct fu_actor *a = &c->sh->actor[0];
	pthread_t th;
	double end;
	int err;

	fu_set(&a->phase, PH_OPEN);
	if (setgroups(0, NULL) || setresgid(FU_UID, FU_UID, FU_UID) ||
	    setresuid(FU_UID, FU_UID, FU_UID))
		fu_client_fail(a, "dropping to uid %d: %s", FU_UID, strerror(errno));
	c->fd = open(c->path, O_RDONLY | O_CLOEXEC);
	if (c->fd < 0)
		fu_client_fail(a, "open(%s): %s", c->path, strerror(errno));
	c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->efd < 0)
		fu_client_fail(a, "eventfd: %s", strerror(errno));
	fu_set(&a->phase, PH_ADD);
	err = up_open(&c->u, 4, 0);
	if (err)
		fu_client_fail(a, "epoll_create2(EPOLL_USERPOLL, 4): %s", strerror(-err));
	if (up_ctl(c->u.fd, EPOLL_CTL_ADD, c->efd, INET, FU_DATA_OTHER))
		fu_client_fail(a, "EPOLL_CTL_ADD of the eventfd: %s", strerror(errno));
	if (up_ctl(c->u.fd, EPOLL_CTL_ADD, c->fd, INET, FU_DATA_FILE))
		fu_client_fail(a, "EPOLL_CTL_ADD of the FUSE file: %s", strerror(errno));
	fu_set(&a->phase, PH_NOTIFY);
	end = up_now() + FU_NOTIFY_S;
	while (!fu_get(&c->sh->notified)) {
		if (up_now() > end)
			fu_client_fail(a, "no FUSE_NOTIFY_POLL from the server in %.0f s "
				       "(%d FUSE_POLL seen)", FU_NOTIFY_S, fu_get(&c->sh->npoll));
		fu_sleep_ms(10);
	}
	if (fu_get(&c->sh->notified) < 0)
		fu_client_fail(a, "the server's FUSE_NOTIFY_POLL write failed: %s",
			       strerror(-fu_get(&c->sh->notified)));
	/* a kernel polling from elsewhere sends FUSE_POLL #2 now */
	end = up_now() + FU_SETTLE_S;
	while (fu_get(&c->sh->npoll) < 2 && up_now() < end)
		fu_sleep_ms(10);
	if (c->helper != FU_NONE && (errno = pthread_create(&th, NULL, fu_helper, c)))
		fu_client_fail(a, "pthread_create: %s", strerror(errno));
	fu_act(c, a, c->action);
	fu_set(&a->phase, PH_EXIT);
	_exit(0);
}

/* ---- the fixture: server, mount, client ------------------------------------- */

FIXTURE(fuse) {
	struct fu_shm *sh;
	char dir[64];
	char path[80];
	int mounted;
	pid_t server;
	pid_t client;
	int client_reaped;
	int client_status;
};

/* Reap pid within secs; 1 if it ended (status in *st), 0 if not. */
static int fu_reap(pid_t pid, double secs, int *st)
{
	double end = up_now() + secs;
	int s = 0;

	for (;;) {
		pid_t r = waitpid(pid, &s, WNOHANG);

		if (r == pid || (r < 0 && errno == ECHILD)) {
			if (st)
				*st = s;
			return 1;
		}
		if (up_now() >= end)
			return 0;
		fu_sleep_ms(10);
	}
}

static int fu_reap_client(FIXTURE_DATA(fuse) *self, double secs)
{
	if (self->client > 0 && !self->client_reaped)
		self->client_reaped = fu_reap(self->client, secs, &self->client_status);
	return self->client <= 0 || self->client_reaped;
}

/* Kill the server: its /dev/fuse closes and the connection is aborted. */
static void fu_abort(FIXTURE_DATA(fuse) *self)
{
	if (self->server <= 0)
		return;
	kill(self->server, SIGKILL);
	fu_reap(self->server, FU_REAP_S, NULL);
	self->server = -1;
}

static void fu_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
}

/* "tid 123 D __flush_work, tid 124 S ep_poll": every thread of pid. */
static void fu_proc_state(pid_t pid, char *out, size_t len)
{
	char path[64], stat[512], wchan[64];
	struct dirent *de;
	size_t used = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	out[0] = '\0';
	d = opendir(path);
	if (!d) {
		snprintf(out, len, "no /proc/%d: %s", pid, strerror(errno));
		return;
	}
	while ((de = readdir(d)) && used < len) {
		char *p;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/stat", pid, de->d_name);
		fu_read_file(path, stat, sizeof(stat));
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/wchan", pid, de->d_name);
		fu_read_file(path, wchan, sizeof(wchan));
		p = strrchr(stat, ')');
		used += snprintf(out + used, len - used, "%stid %s %c %s",
				 used ? ", " : "", de->d_name,
				 p && p[1] ? p[2] : '?', wchan[0] ? wchan : "-");
	}
	closedir(d);
}

/* "pid 23 'kworker/0:1', a kernel thread" */
static void fu_describe_pid(uint32_t pid, char *out, size_t len)
{
	char path[64], comm[64], stat[512], state = '?';
	unsigned long flags = 0;
	char *p;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	fu_read_file(path, comm, sizeof(comm));
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fu_read_file(path, stat, sizeof(stat));
	p = strrchr(stat, ')');
	/* after the comm: state ppid pgrp session tty_nr tpgid flags */
	if (p)
		sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags);
	if (!comm[0])
		snprintf(out, len, "pid %u (gone)", pid);
	else
		snprintf(out, len, "pid %u '%s'%s", pid, comm,
			 flags & PF_KTHREAD ? ", a kernel thread" : "");
}

/* FUSE_POLL #k+1 as a sentence. */
static void fu_describe_poll(const struct fu_shm *sh, int k, char *out, size_t len)
{
	const struct fu_poll_rec *r = &sh->poll[k];
	double dt = r->t - sh->t_notified;
	char who[96];

	if (fu_get(&sh->npoll) <= k) {
		snprintf(out, len, "FUSE_POLL #%d: none was sent", k + 1);
		return;
	}
	fu_describe_pid(r->pid, who, sizeof(who));
	snprintf(out, len, "FUSE_POLL #%d from %s, uid %u gid %u, flags %#x, "
		 "events %#x, %.3f s %s the notification, %s", k + 1, who,
		 r->uid, r->gid, r->flags, r->events, dt < 0 ? -dt : dt,
		 dt < 0 ? "before" : "after",
		 r->answered == 1 ? "answered" : r->answered == 2 ? "interrupted" :
		 r->answered == 3 ? "answered on command" : "unanswered");
}

/* What the server saw, for a failure's log. */
static void fu_log_server(struct __test_metadata *_metadata, const struct fu_shm *sh)
{
	char line[256];
	int k, n = fu_get(&sh->npoll);

	for (k = 0; k < n && k < FU_MAX_POLL; k++) {
		fu_describe_poll(sh, k, line, sizeof(line));
		TH_LOG("%s", line);
	}
	if (fu_get(&sh->nintr) || fu_get(&sh->nenosys))
		TH_LOG("server: %d FUSE_INTERRUPT (%d of an unanswered FUSE_POLL), "
		       "%d requests answered ENOSYS (first opcode %u)",
		       fu_get(&sh->nintr), fu_get(&sh->nintr_poll),
		       fu_get(&sh->nenosys), sh->enosys_op[0]);
	if (sh->error[0])
		TH_LOG("server failed: %s", sh->error);
}

static void fu_teardown(struct __test_metadata *_metadata, FIXTURE_DATA(fuse) *self)
{
	/*
	 * The client first (SIGKILL takes effect when it leaves a D state),
	 * then the server: the connection's abort ends every request still
	 * waiting, so whatever waited for one can finish.
	 */
	if (self->client > 0 && !self->client_reaped)
		kill(self->client, SIGKILL);
	fu_abort(self);
	if (!fu_reap_client(self, FU_REAP_S)) {
		char st[256];

		fu_proc_state(self->client, st, sizeof(st));
		EXPECT_TRUE(self->client_reaped)
			TH_LOG("client %d not reaped %.0f s after SIGKILL and the abort "
			       "of the FUSE connection: %s", self->client, FU_REAP_S, st);
	}
	if (self->mounted && umount2(self->dir, MNT_DETACH))
		TH_LOG("umount2(%s): %s", self->dir, strerror(errno));
	self->mounted = 0;
	if (self->dir[0])
		rmdir(self->dir);
	self->dir[0] = '\0';
	if (self->sh != MAP_FAILED)
		munmap(self->sh, sizeof(*self->sh));
	self->sh = MAP_FAILED;
}

/* Open /dev/fuse and mount it on a fresh directory: 0, or the errno. */
static int fu_mount(FIXTURE_DATA(fuse) *self, int *fdp)
{
	char opts[128];
	int fd, err;

	fd = open("/dev/fuse", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno;
	strcpy(self->dir, "/tmp/uepoll-fuse.XXXXXX");
	if (!mkdtemp(self->dir)) {
		err = errno;
		self->dir[0] = '\0';
		close(fd);
		return err;
	}
	chmod(self->dir, 0755);
	snprintf(self->path, sizeof(self->path), "%s/f", self->dir);
	/* allow_other: the client runs as FU_UID, the mount belongs to root */
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,"
		 "allow_other", fd);
	if (mount("uepollfuse", self->dir, "fuse", MS_NOSUID | MS_NODEV, opts)) {
		err = errno;
		close(fd);
		return err;
	}
	self->mounted = 1;
	*fdp = fd;
	return 0;
}

FIXTURE_SETUP(fuse)
{
	double end;
	int fd = -1, err;

	self->sh = MAP_FAILED;
	self->server = self->client = -1;
	self->dir[0] = '\0';
	UP_REQUIRE();
	self->sh = mmap(NULL, sizeof(*self->sh), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->sh);
	err = fu_mount(self, &fd);
	if (err == ENOENT || err == ENODEV || err == EPERM || err == EACCES ||
	    err == ENXIO) {
		fu_teardown(_metadata, self);
		SKIP(return, "no FUSE here (/dev/fuse or mount: %s)", strerror(err));
	}
	if (err) {
		fu_teardown(_metadata, self);
		ASSERT_EQ(0, err) TH_LOG("mounting FUSE on %s: %s", self->dir, strerror(err));
	}
	/* the kernel sent FUSE_INIT at mount; the server answers it */
	fflush(NULL);
	self->server = fork();
	if (self->server == 0)
		fu_server(fd, self->sh);
	err = errno;
	close(fd);	/* only the server holds /dev/fuse: its death aborts */
	if (self->server < 0) {
		fu_teardown(_metadata, self);
		ASSERT_LE(0, self->server) TH_LOG("fork: %s", strerror(err));
	}
	end = up_now() + FU_INIT_S;
	while (!fu_get(&self->sh->inited) && up_now() < end &&
	       !fu_reap(self->server, 0, NULL))
		fu_sleep_ms(10);
	if (!fu_get(&self->sh->inited)) {
		FU_FAIL("no FUSE_INIT answer in %.0f s: %s", FU_INIT_S,
			self->sh->error[0] ? self->sh->error : "server silent");
		fu_teardown(_metadata, self);
	}
}

FIXTURE_TEARDOWN(fuse)
{
	fu_teardown(_metadata, self);
}

/* Fork the client; 0, or the test failed. */
static int fu_start(struct __test_metadata *_metadata, FIXTURE_DATA(fuse) *self,
		    int action, int helper, int wait_ms)
{
	struct fu_client c = {
		.sh = self->sh, .path = self->path, .action = action,
		.helper = helper, .wait_ms = wait_ms, .fd = -1, .efd = -1,
	};

	fflush(NULL);
	self->client = fork();
	if (self->client == 0)
		fu_client_main(&c);
	EXPECT_LT(0, self->client) TH_LOG("fork: %s", strerror(errno));
	return self->client > 0 ? 0 : -1;
}

/*
 * Wait until the client's main thread started its action (ADD and the
 * notification done) and check FUSE_POLL #1; 0, or the test failed.
 */
static int fu_until_acting(struct __test_metadata *_metadata, FIXTURE_DATA(fuse) *self)
{
	struct fu_actor *a = &self->sh->actor[0];
	double end = up_now() + FU_NOTIFY_S + FU_SETTLE_S + 5;
	const struct fu_poll_rec *r = &self->sh->poll[0];
	int ph;

	while ((ph = fu_get(&a->phase)) < PH_ACT && up_now() < end &&
	       !fu_reap_client(self, 0))
		fu_sleep_ms(10);
	ph = fu_get(&a->phase);
	if (ph < PH_ACT || ph == PH_FAILED) {
		char st[256];

		fu_proc_state(self->client, st, sizeof(st));
		FU_FAIL("the client did not reach its action: %s%s%s (%s)",
			fu_phase_name[ph], a->why[0] ? ": " : "", a->why,
			self->client_reaped ? "exited" : st);
		fu_log_server(_metadata, self->sh);
		return -1;
	}
	EXPECT_EQ((uint32_t)self->client, r->pid)
		TH_LOG("FUSE_POLL #1 (EPOLL_CTL_ADD's) not from the client");
	EXPECT_TRUE(r->flags & FUSE_POLL_SCHEDULE_NOTIFY)
		TH_LOG("FUSE_POLL #1 without FUSE_POLL_SCHEDULE_NOTIFY (flags %#x): "
		       "the notification wakes nobody", r->flags);
	EXPECT_EQ(FU_FH, r->fh);
	return 0;
}

/*
 * Something of the client did not end in time (what: a sentence): say
 * where its threads are, abort the connection, say whether that freed it.
 * The test fails.
 */
static void fu_hang(struct __test_metadata *_metadata, FIXTURE_DATA(fuse) *self,
		    int who, const char *what)
{
	struct fu_actor *a = &self->sh->actor[who];
	char st[256];
	double t0;

	fu_proc_state(self->client, st, sizeof(st));
	FU_FAIL("%s %d: %s; it is in %s (%s)", who ? "client (helper thread)" : "client",
		self->client, what, fu_phase_name[fu_get(&a->phase)], st);
	fu_log_server(_metadata, self->sh);
	t0 = up_now();
	fu_abort(self);
	if (fu_reap_client(self, FU_REAP_S))
		TH_LOG("once the FUSE connection was aborted (server killed) the client "
		       "ended %.2f s later: it was waiting for the unanswered FUSE_POLL",
		       up_now() - t0);
	else
		TH_LOG("the client is still there %.0f s after the FUSE connection "
		       "was aborted", FU_REAP_S);
}

/* The client acts after the notification; it and its exit must not wait. */
static void fu_removal(struct __test_metadata *_metadata, FIXTURE_DATA(fuse) *self,
		       int action)
{
	struct fu_actor *a = &self->sh->actor[0];

	if (fu_start(_metadata, self, action, FU_NONE, 0) ||
	    fu_until_acting(_metadata, self))
		return;
	if (!fu_reap_client(self, a->t0 + FU_HANG_S - up_now())) {
		char what[128];

		snprintf(what, sizeof(what), "%s%s did not end within %.0f s",
			 fu_action_name[action], action == FU_EXIT ? "" :
			 " and the exit after it", FU_HANG_S);
		fu_hang(_metadata, self, 0, what);
		return;
	}
	EXPECT_TRUE(WIFEXITED(self->client_status) && !WEXITSTATUS(self->client_status))
		TH_LOG("client status %#x", self->client_status);
	if (action != FU_EXIT) {
		EXPECT_EQ(0, a->ret) TH_LOG("%s: %s", fu_action_name[action],
					    strerror(-a->ret));
	}
}

TEST_F_TIMEOUT(fuse, del_does_not_wait_for_poll, 60)
{
	fu_removal(_metadata, self, FU_DEL_FILE);
}

/* The hang of the title: the eventfd's removal waits for the FUSE poll. */
TEST_F_TIMEOUT(fuse, del_other_does_not_wait_for_poll, 60)
{
	fu_removal(_metadata, self, FU_DEL_OTHER);
}

TEST_F_TIMEOUT(fuse, close_file_does_not_wait_for_poll, 60)
{
	fu_removal(_metadata, self, FU_CLOSE_FILE);
}

TEST_F_TIMEOUT(fuse, close_instance_does_not_wait_for_poll, 60)
{
	fu_removal(_metadata, self, FU_CLOSE_INSTANCE);
}

TEST_F_TIMEOUT(fuse, exit_does_not_wait_for_poll, 60)
{
	fu_removal(_metadata, self, FU_EXIT);
}

/* Wait until FUSE_POLL #2 arrived, up to secs; 1 if it did. */
static int fu_until_poll2(FIXTURE_DATA(fuse) *self, double secs)
{
	double end = up_now() + secs;

	while (fu_get(&self->sh->npoll) < 2 && up_now() < end &&
	       !fu_reap_client(self, 0))
		fu_sleep_ms(10);
	return fu_get(&self->sh->npoll) >= 2;
}

/*
 * The client waits on the instance, which (new design) polls the FUSE file
 * as the client and blocks in FUSE's request wait; SIGKILL must end it.
 */
TEST_F_TIMEOUT(fuse, killable_while_polling, 60)
{
	char before[256], poll2[256];

	if (fu_start(_metadata, self, FU_WAIT, FU_NONE, 10000) ||
	    fu_until_acting(_metadata, self))
		return;
	fu_until_poll2(self, FU_POLL2_S);
	fu_sleep_ms(200);	/* inside the request wait */
	fu_proc_state(self->client, before, sizeof(before));
	fu_describe_poll(self->sh, 1, poll2, sizeof(poll2));
	kill(self->client, SIGKILL);
	if (fu_reap_client(self, FU_HANG_S))
		return;
	TH_LOG("before SIGKILL, in epoll_wait: %s; %s", before, poll2);
	fu_hang(_metadata, self, 0, "not reaped within 5 s of SIGKILL");
}

/* FUSE_POLL #2 is made by the task waiting on the instance, as that task. */
static void fu_consumer_identity(struct __test_metadata *_metadata,
				 FIXTURE_DATA(fuse) *self, int action)
{
	struct fu_actor *a = &self->sh->actor[0];
	const struct fu_poll_rec *r = &self->sh->poll[1];
	char who[96], st[256];

	if (fu_start(_metadata, self, action, FU_NONE, 10000) ||
	    fu_until_acting(_metadata, self))
		return;
	if (!fu_until_poll2(self, FU_POLL2_S)) {
		fu_proc_state(self->client, st, sizeof(st));
		FU_FAIL("no FUSE_POLL within %.0f s of %s: the keyless wake-up was "
			"not followed by a poll (client %d: %s, %s)", FU_POLL2_S,
			fu_action_name[action], self->client,
			fu_phase_name[fu_get(&a->phase)],
			self->client_reaped ? "exited" : st);
		fu_log_server(_metadata, self->sh);
		return;
	}
	fu_describe_pid(r->pid, who, sizeof(who));
	EXPECT_EQ((uint32_t)self->client, r->pid)
		TH_LOG("FUSE_POLL #2 came from %s, not from the task in %s (pid %d)",
		       who, fu_action_name[action], self->client);
	EXPECT_EQ(FU_UID, r->uid)
		TH_LOG("FUSE_POLL #2 made with uid %u, the consumer's is %d", r->uid, FU_UID);
	EXPECT_EQ(FU_UID, r->gid);
	EXPECT_TRUE(a->t0 <= r->t)	/* doubles: EXPECT_LE would print them as integers */
		TH_LOG("FUSE_POLL #2 was sent %.3f s before the client called %s",
		       a->t0 - r->t, fu_action_name[action]);
	if (_metadata->exit_code)
		fu_log_server(_metadata, self->sh);
	/* the teardown kills the client, inside the poll, then the server */
}

TEST_F_TIMEOUT(fuse, poll_runs_as_consumer, 60)
{
	fu_consumer_identity(_metadata, self, FU_WAIT);
}

/*
 * The same from poll() of the instance (the instance nested in an event
 * loop): the pending registration is polled there too, or that sleeper
 * would never learn of the FUSE file's event.
 */
TEST_F_TIMEOUT(fuse, instance_poll_runs_as_consumer, 60)
{
	fu_consumer_identity(_metadata, self, FU_POLL_INSTANCE);
}

/*
 * While the client's main thread is inside FUSE_POLL #2 (epoll_wait), its
 * helper thread removes a registration: that must not wait for the poll.
 * Then the server answers POLLIN: a result for the removed FUSE file must
 * not be reported, one for the FUSE file still registered must be.
 */
static void fu_while_polling(struct __test_metadata *_metadata,
			     FIXTURE_DATA(fuse) *self, int helper)
{
	struct fu_actor *a = &self->sh->actor[0], *b = &self->sh->actor[1];
	const int wait_ms = 3000;
	double end = up_now() + FU_POLL2_S + 2;
	int k, file_events = 0;

	if (fu_start(_metadata, self, FU_WAIT, helper, wait_ms) ||
	    fu_until_acting(_metadata, self))
		return;
	while (fu_get(&b->phase) < PH_ACT && up_now() < end && !fu_reap_client(self, 0))
		fu_sleep_ms(10);
	if (fu_get(&b->phase) < PH_ACT) {
		FU_FAIL("the helper thread never acted (client %s)",
			self->client_reaped ? "exited" : "alive");
		return;
	}
	if (fu_get(&self->sh->npoll) < 2 || self->sh->poll[1].pid != (uint32_t)self->client)
		TH_LOG("note: the client is not inside FUSE_POLL #2 (%s)",
		       fu_get(&self->sh->npoll) < 2 ? "none was sent" : "another task sent it");
	end = b->t0 + FU_HANG_S;
	while (fu_get(&b->phase) < PH_DONE && up_now() < end)
		fu_sleep_ms(10);
	if (fu_get(&b->phase) < PH_DONE) {
		char what[128];

		snprintf(what, sizeof(what), "%s, while the main thread waits on the "
			 "instance, did not return within %.0f s", fu_action_name[helper],
			 FU_HANG_S);
		fu_hang(_metadata, self, 1, what);
		return;
	}
	EXPECT_EQ(0, b->ret) TH_LOG("%s: %s", fu_action_name[helper], strerror(-b->ret));
	fu_set(&self->sh->answer_polls, 1);
	if (!fu_reap_client(self, FU_HANG_S + wait_ms / 1000.0)) {
		fu_hang(_metadata, self, 0, "epoll_wait did not return within "
			"5 s of its timeout after FUSE_POLL #2 was answered");
		return;
	}
	EXPECT_TRUE(a->ret >= 0 || a->ret == -ESTALE)
		TH_LOG("epoll_wait: %s", strerror(-a->ret));
	for (k = 0; k < a->nev && k < 4; k++)
		if (a->ev[k].data == FU_DATA_FILE)
			file_events |= (int)a->ev[k].events;
	if (helper == FU_DEL_FILE) {
		EXPECT_EQ(0, file_events)
			TH_LOG("events %#x reported for the FUSE file, removed before its "
			       "poll returned", file_events);
	} else {
		EXPECT_EQ(EPOLLIN, file_events & EPOLLIN)
			TH_LOG("the FUSE file's poll result (POLLIN) was not reported "
			       "(events %#x)", file_events);
	}
}

TEST_F_TIMEOUT(fuse, del_while_consumer_polls, 60)
{
	fu_while_polling(_metadata, self, FU_DEL_FILE);
}

TEST_F_TIMEOUT(fuse, del_other_while_consumer_polls, 60)
{
	fu_while_polling(_metadata, self, FU_DEL_OTHER);
}

UP_TEST_MAIN
