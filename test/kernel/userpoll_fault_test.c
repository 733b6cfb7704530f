// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * userpoll_fault_test - every allocation of the userpoll calls, failed in
 * turn (systematic fault injection, Documentation/fault-injection/
 * fault-injection.rst, "Systematic faults using fail-nth"): for nth = 1,
 * 2, ... write nth to /proc/thread-self/fail-nth, make the call, read the
 * file back (0: the nth fault point of the call was failed) until the call
 * runs through without reaching an nth point.  Every call that failed must
 * have failed with ENOMEM and left nothing behind:
 *
 *  - no new fd (/proc/self/fd), no new mapping (/proc/self/maps lines);
 *  - no RLIMIT_MEMLOCK charge: CAP_IPC_LOCK is dropped and the limit is
 *    exactly what the test's instances need, so a charge leaked by a
 *    failed epoll_create2() makes a later call fail without a fault;
 *  - no slot, no registration: after a failed ADD the fd is not
 *    registered (MOD says ENOENT) and fdinfo counts no item; with n = 1 a
 *    leaked slot would make the next ADD fail with ENOSPC;
 *  - no memory: memory.current of the test's own memory cgroup is back
 *    within 512 KiB (per-CPU charge batching) at the end of a sweep (the
 *    kmemleak scan of vm/check --debug catches the small leaks);
 *  - a call that succeeded although a fault was injected (a fallback:
 *    kvcalloc(), the bulk page allocator, the debug tools' own
 *    allocations) must have given a working result.
 *
 * Calls: epoll_create2(EPOLL_USERPOLL, n) (struct ep_upoll, the two
 * regions, the two bitmaps, the slot map, the file and fd), mmap() of the
 * header and of the ring, EPOLL_CTL_ADD of an eventfd, a signalfd
 * (keyless), a pipe, a plain epoll and another userpoll instance (epitem,
 * wait queue entries, the file's epitems head), EPOLL_CTL_MOD, and the
 * keyless repoll of epoll_wait(); each for n = 1, 64 and 65536.  The
 * knobs that make GFP_KERNEL slab and order-0 page allocations eligible
 * (failslab and fail_page_alloc ignore-gfp-wait=N; fail_page_alloc
 * ignore-gfp-highmem=N, since vmalloc asks for its pages with
 * __GFP_HIGHMEM, and min-order=0; verbose=0) are set for the test and
 * restored after it.
 *
 * SKIP without /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION: the
 * release kernel; vm/check --debug runs it) or without the failslab knobs.
 *
 * UEPOLL_FAULT_TRACE=1 in the environment: verbose=2 instead (the kernel
 * prints the stack of every injected fault, which names the allocation)
 * and a pause after each, since those messages are rate-limited to 10 in
 * 5 s: slow, for a run by hand, e.g. a vm/check --list line
 * "600 @trace UEPOLL_FAULT_TRACE=1 userpoll_fault_test -r fault.n64.create2"
 * with --only trace.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "userpoll.h"

#include <dirent.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#define INET (EPOLLIN | EPOLLET)
#define DBGFS "/sys/kernel/debug"
#define CG_ROOT "/tmp/uepoll-cg"
#define CG_DIR CG_ROOT "/fault"
#define MEM_SLACK (512L << 10)

static const struct knob {
	const char *path;
	const char *value;
	int required;
} knobs[] = {
	{ DBGFS "/failslab/ignore-gfp-wait", "N", 1 },
	{ DBGFS "/failslab/verbose", "0", 1 },
	{ DBGFS "/fail_page_alloc/ignore-gfp-wait", "N", 0 },
	/* vmalloc ORs __GFP_HIGHMEM into the allocations of its pages */
	{ DBGFS "/fail_page_alloc/ignore-gfp-highmem", "N", 0 },
	{ DBGFS "/fail_page_alloc/min-order", "0", 0 },
	{ DBGFS "/fail_page_alloc/verbose", "0", 0 },
};
#define NKNOBS ((int)(sizeof(knobs) / sizeof(knobs[0])))

static int read_str(const char *path, char *buf, size_t len)
{
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	r = read(fd, buf, len - 1);
	close(fd);
	if (r < 0)
		return -errno;
	buf[r] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int write_str(const char *path, const char *s)
{
	ssize_t r;
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	r = write(fd, s, strlen(s));
	close(fd);
	return r == (ssize_t)strlen(s) ? 0 : -errno;
}

static long read_long(const char *path)
{
	char buf[64];

	return read_str(path, buf, sizeof(buf)) ? -1 : strtol(buf, NULL, 10);
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

static int count_maps(void)
{
	char buf[4096];
	ssize_t r;
	int n = 0, fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < r; i++)
			n += buf[i] == '\n';
	close(fd);
	return n;
}

/* "userpoll: ... items I" of an instance's fdinfo, or -1 */
static int fdinfo_items(int fd)
{
	char path[64], buf[1024], *p;
	unsigned h, t, cap, items;
	int f;
	ssize_t r;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -1;
	r = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (r <= 0)
		return -1;
	buf[r] = 0;
	p = strstr(buf, "userpoll:");
	if (!p || sscanf(p, "userpoll: head %u tail %u capacity %u items %u",
			 &h, &t, &cap, &items) != 4)
		return -1;
	return (int)items;
}

/* charge of one instance: header + index (PROTOCOL.md section 1) */
static size_t up_charge(size_t n)
{
	return up_expected_header_length(n) + up_expected_index_length(n);
}

static int drop_cap_ipc_lock(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	d[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
	if (syscall(SYS_capset, &h, d))
		return -errno;
	return 0;
}

/* ---- the fixture: fail-nth, the knobs, the cgroup, the memlock budget ---- */

FIXTURE(fault) {
	int nth;		/* /proc/thread-self/fail-nth */
	char saved[NKNOBS][32];
	int set[NKNOBS];
	int page_alloc;		/* fail_page_alloc knobs present */
	char cg_current[160];	/* memory.current of our cgroup, "" without */
	int memlock;		/* CAP_IPC_LOCK dropped: the budget applies */
	int trace;		/* UEPOLL_FAULT_TRACE=1 */
	struct rlimit rl0;
};

FIXTURE_VARIANT(fault) {
	unsigned n;
};

FIXTURE_VARIANT_ADD(fault, n1) { .n = 1, };
FIXTURE_VARIANT_ADD(fault, n64) { .n = 64, };
FIXTURE_VARIANT_ADD(fault, n65536) { .n = 65536, };

static void cg_join(FIXTURE_DATA(fault) *self)
{
	char pid[32];

	self->cg_current[0] = 0;
	mkdir(CG_ROOT, 0755);
	if (access(CG_ROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CG_ROOT, "cgroup2", 0, NULL))
		return;
	if (write_str(CG_ROOT "/cgroup.subtree_control", "+memory"))
		return;
	mkdir(CG_DIR, 0755);
	snprintf(pid, sizeof(pid), "%d", getpid());
	if (write_str(CG_DIR "/cgroup.procs", pid))
		return;
	snprintf(self->cg_current, sizeof(self->cg_current), "%s/memory.current", CG_DIR);
	if (read_long(self->cg_current) < 0)
		self->cg_current[0] = 0;
}

FIXTURE_SETUP(fault)
{
	int k, err;

	self->nth = -1;
	UP_REQUIRE();
	ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &self->rl0));
	self->nth = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	if (self->nth < 0)
		SKIP(return, "no /proc/thread-self/fail-nth (%s): a kernel without "
		     "CONFIG_FAULT_INJECTION, the release kernel (vm/check --debug runs this)",
		     strerror(errno));
	if (access(DBGFS "/failslab", F_OK))
		(void)mount("none", DBGFS, "debugfs", 0, NULL);
	for (k = 0; k < NKNOBS; k++)
		if (knobs[k].required && access(knobs[k].path, W_OK))
			SKIP(return, "%s: %s (CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_DEBUG_FS, "
			     "debugfs)", knobs[k].path, strerror(errno));
	self->page_alloc = !access(knobs[2].path, W_OK);
	self->trace = getenv("UEPOLL_FAULT_TRACE") && !strcmp(getenv("UEPOLL_FAULT_TRACE"), "1");
	for (k = 0; k < NKNOBS; k++) {
		const char *v = knobs[k].value;

		self->set[k] = 0;
		if (read_str(knobs[k].path, self->saved[k], sizeof(self->saved[k])))
			continue;
		if (self->trace && strstr(knobs[k].path, "/verbose"))
			v = "2";
		err = write_str(knobs[k].path, v);
		if (!err)
			self->set[k] = 1;
		else if (knobs[k].required)
			ASSERT_EQ(0, err) TH_LOG("%s: %s", knobs[k].path, strerror(-err));
	}
	if (!self->page_alloc)
		TH_LOG("no fail_page_alloc knobs: page allocations not failed "
		       "(CONFIG_FAIL_PAGE_ALLOC)");
	cg_join(self);
	if (!self->cg_current[0])
		TH_LOG("no memory cgroup: memory.current not checked");
	self->memlock = getuid() == 0 && drop_cap_ipc_lock() == 0;
	if (!self->memlock)
		TH_LOG("CAP_IPC_LOCK not dropped: RLIMIT_MEMLOCK charges not checked");
}

FIXTURE_TEARDOWN(fault)
{
	int k;

	if (self->nth >= 0) {
		(void)pwrite(self->nth, "0", 1, 0);
		close(self->nth);
	}
	for (k = 0; k < NKNOBS; k++)
		if (self->set[k])
			(void)write_str(knobs[k].path, self->saved[k]);
}

/*
 * Exactly enough locked memory for these instances: a charge leaked by a
 * failed call makes the next call without fault fail with ENOMEM.
 */
static int memlock_budget(FIXTURE_DATA(fault) *self, size_t bytes)
{
	struct rlimit rl = self->rl0;

	if (!self->memlock)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < bytes)
		return -ERANGE;
	rl.rlim_cur = bytes;
	return setrlimit(RLIMIT_MEMLOCK, &rl) ? -errno : 0;
}

/* ---- the sweep ---------------------------------------------------------- */

struct call {
	const char *what;
	int (*run)(void *ctx);		/* the one system call: 0 or -errno */
	void (*undo)(void *ctx);	/* after a success */
	/* after a success: "" if the result works; after a failure: "" if
	 * nothing was left behind; else why not */
	const char *(*works)(void *ctx);
	const char *(*clean)(void *ctx);
	void *ctx;
};

static void nth_set(int fd, unsigned nth)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", nth);

	if (pwrite(fd, buf, (size_t)len, 0) != len)
		abort();
}

static unsigned nth_get(int fd)
{
	char buf[16] = "";

	if (pread(fd, buf, sizeof(buf) - 1, 0) <= 0)
		abort();
	return (unsigned)strtoul(buf, NULL, 10);
}

static long cg_mem(FIXTURE_DATA(fault) *self)
{
	return self->cg_current[0] ? read_long(self->cg_current) : -1;
}

static void sweep(struct __test_metadata *_metadata, FIXTURE_DATA(fault) *self,
		  const struct call *c)
{
	unsigned nth, points = 0, failed = 0, absorbed = 0;
	int fds0 = count_fds(), maps0 = count_maps(), tries;
	long mem0 = cg_mem(self), mem1 = -1;
	const char *why;

	for (nth = 1; nth < 100000; nth++) {
		unsigned left;
		int ret;

		nth_set(self->nth, nth);
		ret = c->run(c->ctx);
		left = nth_get(self->nth);
		nth_set(self->nth, 0);
		if (left == 0) {
			points++;
			if (self->trace) {
				printf("# %s: nth=%u injected (%s)\n", c->what, nth,
				       ret ? strerror(-ret) : "absorbed");
				usleep(600 * 1000);
			}
		}
		if (ret == 0) {
			why = c->works ? c->works(c->ctx) : "";
			EXPECT_STREQ("", why) TH_LOG("%s: nth=%u%s: the call succeeded but %s",
						     c->what, nth, left ? "" : " (fault absorbed)", why);
			c->undo(c->ctx);
			if (left)
				break;	/* ran through: every fault point was failed once */
			absorbed++;
			continue;
		}
		ASSERT_EQ(0, left) TH_LOG("%s failed (%s) at nth=%u with no fault injected "
					  "(a charge, a slot or memory leaked by an earlier failure?)",
					  c->what, strerror(-ret), nth);
		ASSERT_EQ(-ENOMEM, ret) TH_LOG("%s: the fault at nth=%u gave %s, not ENOMEM",
					       c->what, nth, strerror(-ret));
		failed++;
		ASSERT_EQ(fds0, count_fds()) TH_LOG("%s: nth=%u: an fd was left behind",
						   c->what, nth);
		ASSERT_EQ(maps0, count_maps()) TH_LOG("%s: nth=%u: a mapping was left behind",
						     c->what, nth);
		if (c->clean) {
			why = c->clean(c->ctx);
			ASSERT_STREQ("", why) TH_LOG("%s: nth=%u: failed, and %s", c->what, nth,
						     why);
		}
	}
	ASSERT_GT(100000, nth) TH_LOG("%s: no end to the fault points", c->what);
	/* struct eventpoll and epitems are freed after an RCU grace period */
	for (tries = 0; mem0 >= 0 && tries < 20; tries++) {
		usleep(100 * 1000);
		mem1 = cg_mem(self);
		if (mem1 <= mem0 + MEM_SLACK)
			break;
	}
	if (mem0 >= 0)
		EXPECT_GE(mem0 + MEM_SLACK, mem1)
			TH_LOG("%s: memory.current %ld -> %ld after %u failures", c->what, mem0,
			       mem1, failed);
	printf("# %s: %u fault points (nth 1..%u): %u failed with ENOMEM, %u absorbed; "
	       "memory.current %ld -> %ld\n", c->what, points, nth - 1, failed, absorbed,
	       mem0, mem1);
}

/* ---- epoll_create2 -------------------------------------------------------- */

struct create_ctx {
	unsigned n;
	int fd;
};

static int create_run(void *p)
{
	struct create_ctx *c = p;

	c->fd = sys_epoll_create2(EPOLL_USERPOLL | EPOLL_CLOEXEC, c->n);
	return c->fd < 0 ? -errno : 0;
}

static void create_undo(void *p)
{
	struct create_ctx *c = p;

	close(c->fd);
	c->fd = -1;
}

/* the new instance maps, registers, reports */
static const char *instance_works(int fd)
{
	struct up u;
	struct up_event ev[2];
	int efd, got, err = up_map(&u, fd);

	if (err)
		return "it cannot be mapped";
	u.fd = -1;
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0 || up_ctl(fd, EPOLL_CTL_ADD, efd, INET, 5) || up_efd_write(efd, 1)) {
		if (efd >= 0)
			close(efd);
		up_unmap(&u);
		return "ADD or the eventfd write failed";
	}
	got = up_harvest(&u, ev, 2, NULL);
	close(efd);
	up_unmap(&u);
	if (got != 1 || ev[0].data != 5 || ev[0].events != EPOLLIN)
		return "it did not report the eventfd";
	return "";
}

static const char *create_works(void *p)
{
	struct create_ctx *c = p;

	return instance_works(c->fd);
}

TEST_F_TIMEOUT(fault, create2, 300)
{
	struct create_ctx c = { .n = variant->n, .fd = -1 };
	char what[64];
	struct call call = { what, create_run, create_undo, create_works, NULL, &c };

	snprintf(what, sizeof(what), "epoll_create2(EPOLL_USERPOLL, %u)", variant->n);
	ASSERT_EQ(0, memlock_budget(self, up_charge(variant->n)));
	sweep(_metadata, self, &call);
	/* the budget is whole again: one more instance fits, exactly */
	c.fd = sys_epoll_create2(EPOLL_USERPOLL, variant->n);
	ASSERT_LE(0, c.fd) TH_LOG("after the sweep: %s", strerror(errno));
	if (self->memlock) {
		int fd2 = sys_epoll_create2(EPOLL_USERPOLL, 1);

		EXPECT_GT(0, fd2) TH_LOG("a second instance fit in the budget of one");
		if (fd2 >= 0)
			close(fd2);
	}
	close(c.fd);
}

/* ---- mmap ----------------------------------------------------------------- */

struct map_ctx {
	int fd;
	size_t len;
	off_t off;
	void *p;
	uint32_t magic_want;	/* header: the magic; ring: 0 */
};

static int map_run(void *p)
{
	struct map_ctx *c = p;

	c->p = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, c->off);
	return c->p == MAP_FAILED ? -errno : 0;
}

static void map_undo(void *p)
{
	struct map_ctx *c = p;

	munmap(c->p, c->len);
}

static const char *map_works(void *p)
{
	struct map_ctx *c = p;

	if (c->magic_want && uepoll_hdr_read_once(c->p) != c->magic_want)
		return "the mapping does not show the header";
	/* the whole length is there */
	(void)*(volatile uint32_t *)((char *)c->p + c->len - sizeof(uint32_t));
	return "";
}

static void map_sweep(struct __test_metadata *_metadata, FIXTURE_DATA(fault) *self,
		      unsigned n, int ring)
{
	struct map_ctx c = { 0 };
	char what[80];
	struct call call = { what, map_run, map_undo, map_works, NULL, &c };
	size_t hl = up_expected_header_length(n);

	ASSERT_EQ(0, memlock_budget(self, up_charge(n)));
	c.fd = sys_epoll_create2(EPOLL_USERPOLL | EPOLL_CLOEXEC, n);
	ASSERT_LE(0, c.fd) TH_LOG("%s", strerror(errno));
	c.len = ring ? up_expected_index_length(n) : hl;
	c.off = ring ? (off_t)hl : 0;
	c.magic_want = ring ? 0 : EPOLL_USERPOLL_HEADER_MAGIC;
	snprintf(what, sizeof(what), "mmap(%s of n=%u, %zu bytes)", ring ? "ring" : "header",
		 n, c.len);
	sweep(_metadata, self, &call);
	EXPECT_STREQ("", instance_works(c.fd));
	close(c.fd);
}

TEST_F_TIMEOUT(fault, mmap_header, 300)
{
	map_sweep(_metadata, self, variant->n, 0);
}

TEST_F_TIMEOUT(fault, mmap_ring, 300)
{
	map_sweep(_metadata, self, variant->n, 1);
}

/* ---- EPOLL_CTL_ADD, of several kinds of file -------------------------------- */

struct add_ctx {
	int epfd;
	int fd;
	uint64_t data;
	struct up u;
	void (*fire)(struct add_ctx *c);
	int peer;		/* the pipe's write end; the private eventfd */
	struct up *inner;	/* the userpoll instance added */
};

static int add_run(void *p)
{
	struct add_ctx *c = p;

	return up_ctl(c->epfd, EPOLL_CTL_ADD, c->fd, INET, c->data) ? -errno : 0;
}

static void add_undo(void *p)
{
	struct add_ctx *c = p;

	if (up_ctl(c->epfd, EPOLL_CTL_DEL, c->fd, 0, 0))
		abort();
	(void)up_harvest(&c->u, (struct up_event[4]){ 0 }, 4, NULL);
}

/* the registration reports its file's next event */
static const char *add_works(void *p)
{
	struct add_ctx *c = p;
	struct up_event ev[4];
	int got, k;

	(void)up_harvest(&c->u, ev, 4, NULL);	/* whatever ADD found ready */
	c->fire(c);
	(void)up_wait(c->epfd, 0);		/* the keyless repoll */
	got = up_harvest(&c->u, ev, 4, NULL);
	for (k = 0; k < got; k++)
		if (ev[k].data == c->data && (ev[k].events & EPOLLIN))
			return "";
	return "the registration did not report its file's event";
}

/* after a failed ADD: not registered, no slot taken */
static const char *add_clean(void *p)
{
	struct add_ctx *c = p;

	errno = 0;
	if (up_ctl(c->epfd, EPOLL_CTL_MOD, c->fd, INET, c->data) == 0 || errno != ENOENT)
		return "the fd is registered (MOD did not say ENOENT)";
	if (fdinfo_items(c->epfd) != 0)
		return "fdinfo counts an item";
	return "";
}

static void fire_eventfd(struct add_ctx *c)
{
	(void)up_efd_write(c->fd, 1);
}

static void fire_signal(struct add_ctx *c)
{
	struct signalfd_siginfo si;

	while (read(c->fd, &si, sizeof(si)) > 0)
		;
	kill(getpid(), SIGUSR1);
}

static void fire_pipe(struct add_ctx *c)
{
	char b[64];

	while (read(c->fd, b, sizeof(b)) > 0)
		;
	(void)!write(c->peer, "x", 1);
}

static void fire_epoll(struct add_ctx *c)
{
	(void)up_efd_read(c->peer);
	(void)up_efd_write(c->peer, 1);
}

/* the inner ring emptied, then a new entry in it: an edge of the inner fd */
static void fire_userpoll(struct add_ctx *c)
{
	struct up_event ev[4];

	(void)up_harvest(c->inner, ev, 4, NULL);
	(void)up_efd_read(c->peer);
	(void)up_efd_write(c->peer, 1);
}

enum add_kind { ADD_EVENTFD, ADD_SIGNALFD, ADD_PIPE, ADD_EPOLL, ADD_USERPOLL };

static void add_sweep(struct __test_metadata *_metadata, FIXTURE_DATA(fault) *self,
		      unsigned n, enum add_kind kind)
{
	static const char *const names[] = { "eventfd", "signalfd", "pipe", "plain epoll",
					     "userpoll instance" };
	struct add_ctx c = { .fd = -1, .peer = -1, .data = 0x1234 };
	struct call call = { NULL, add_run, add_undo, add_works, add_clean, &c };
	struct up inner = { .fd = -1 };
	char what[80];
	int fds[2], err;
	sigset_t m;

	ASSERT_EQ(0, memlock_budget(self, up_charge(n) +
				    (kind == ADD_USERPOLL ? up_charge(1) : 0)));
	err = up_open(&c.u, n, EPOLL_CLOEXEC);
	ASSERT_EQ(0, err) TH_LOG("%s", strerror(-err));
	c.epfd = c.u.fd;
	switch (kind) {
	case ADD_EVENTFD:
		c.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		c.fire = fire_eventfd;
		break;
	case ADD_SIGNALFD:
		sigemptyset(&m);
		sigaddset(&m, SIGUSR1);
		ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &m, NULL));
		c.fd = signalfd(-1, &m, SFD_NONBLOCK | SFD_CLOEXEC);
		c.fire = fire_signal;
		break;
	case ADD_PIPE:
		ASSERT_EQ(0, pipe2(fds, O_NONBLOCK | O_CLOEXEC));
		c.fd = fds[0];
		c.peer = fds[1];
		c.fire = fire_pipe;
		break;
	case ADD_EPOLL: {
		struct epoll_event e = { .events = EPOLLIN, .data.u64 = 1 };

		c.fd = epoll_create1(EPOLL_CLOEXEC);
		c.peer = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		ASSERT_EQ(0, epoll_ctl(c.fd, EPOLL_CTL_ADD, c.peer, &e));
		c.fire = fire_epoll;
		break;
	}
	case ADD_USERPOLL:
		err = up_open(&inner, 1, EPOLL_CLOEXEC);
		ASSERT_EQ(0, err) TH_LOG("inner instance: %s", strerror(-err));
		c.fd = inner.fd;
		c.peer = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		ASSERT_EQ(0, up_ctl(inner.fd, EPOLL_CTL_ADD, c.peer, INET, 9));
		c.inner = &inner;
		c.fire = fire_userpoll;
		break;
	}
	ASSERT_LE(0, c.fd);
	snprintf(what, sizeof(what), "EPOLL_CTL_ADD of a %s (n=%u)", names[kind], n);
	call.what = what;
	sweep(_metadata, self, &call);
	if (c.peer >= 0)
		close(c.peer);
	up_close(&inner);
	if (kind != ADD_USERPOLL)
		close(c.fd);
	up_close(&c.u);
}

TEST_F_TIMEOUT(fault, add_eventfd, 300)
{
	add_sweep(_metadata, self, variant->n, ADD_EVENTFD);
}

TEST_F_TIMEOUT(fault, add_signalfd, 300)
{
	add_sweep(_metadata, self, variant->n, ADD_SIGNALFD);
}

TEST_F_TIMEOUT(fault, add_pipe, 300)
{
	add_sweep(_metadata, self, variant->n, ADD_PIPE);
}

TEST_F_TIMEOUT(fault, add_epoll, 300)
{
	add_sweep(_metadata, self, variant->n, ADD_EPOLL);
}

TEST_F_TIMEOUT(fault, add_userpoll, 300)
{
	add_sweep(_metadata, self, variant->n, ADD_USERPOLL);
}

/* ---- EPOLL_CTL_MOD ------------------------------------------------------ */

struct mod_ctx {
	struct up u;
	int efd;
	uint64_t data;
};

static int mod_run(void *p)
{
	struct mod_ctx *c = p;

	return up_ctl(c->u.fd, EPOLL_CTL_MOD, c->efd, INET | EPOLLOUT, c->data + 1) ?
		-errno : 0;
}

static void mod_undo(void *p)
{
	struct mod_ctx *c = p;
	struct up_event ev[4];

	c->data++;
	(void)up_harvest(&c->u, ev, 4, NULL);	/* MOD's EPOLLOUT */
}

/* a failed MOD leaves the registration as it was */
static const char *mod_clean(void *p)
{
	struct mod_ctx *c = p;

	if (c->u.hdr->items[0].data != c->data)
		return "the item's data changed";
	if (fdinfo_items(c->u.fd) != 1)
		return "fdinfo does not count the one item";
	return "";
}

TEST_F_TIMEOUT(fault, mod, 300)
{
	struct mod_ctx c = { .data = 100 };
	struct call call = { NULL, mod_run, mod_undo, NULL, mod_clean, &c };
	char what[64];
	int err;

	ASSERT_EQ(0, memlock_budget(self, up_charge(variant->n)));
	err = up_open(&c.u, variant->n, EPOLL_CLOEXEC);
	ASSERT_EQ(0, err) TH_LOG("%s", strerror(-err));
	c.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_EQ(0, up_ctl(c.u.fd, EPOLL_CTL_ADD, c.efd, INET, c.data));
	snprintf(what, sizeof(what), "EPOLL_CTL_MOD (n=%u)", variant->n);
	call.what = what;
	sweep(_metadata, self, &call);
	close(c.efd);
	up_close(&c.u);
}

/* ---- the keyless repoll of epoll_wait() --------------------------------- */

struct repoll_ctx {
	struct up u;
	int sfd;
};

static int repoll_run(void *p)
{
	struct repoll_ctx *c = p;
	int r = up_wait(c->u.fd, 0);

	return r == -ESTALE ? 0 : r == 0 ? -ENODATA : r;
}

static void repoll_undo(void *p)
{
	struct repoll_ctx *c = p;
	struct signalfd_siginfo si;
	struct up_event ev[4];

	(void)up_harvest(&c->u, ev, 4, NULL);
	while (read(c->sfd, &si, sizeof(si)) > 0)
		;
	kill(getpid(), SIGUSR1);	/* the next round's keyless wake-up */
}

TEST_F_TIMEOUT(fault, repoll, 300)
{
	struct repoll_ctx c = { 0 };
	struct call call = { NULL, repoll_run, repoll_undo, NULL, NULL, &c };
	char what[64];
	sigset_t m;
	int err;

	ASSERT_EQ(0, memlock_budget(self, up_charge(variant->n)));
	err = up_open(&c.u, variant->n, EPOLL_CLOEXEC);
	ASSERT_EQ(0, err) TH_LOG("%s", strerror(-err));
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &m, NULL));
	c.sfd = signalfd(-1, &m, SFD_NONBLOCK | SFD_CLOEXEC);
	ASSERT_LE(0, c.sfd);
	ASSERT_EQ(0, up_ctl(c.u.fd, EPOLL_CTL_ADD, c.sfd, INET, 3));
	kill(getpid(), SIGUSR1);
	snprintf(what, sizeof(what), "epoll_wait repoll of a signalfd (n=%u)", variant->n);
	call.what = what;
	sweep(_metadata, self, &call);
	close(c.sfd);
	up_close(&c.u);
}

UP_TEST_MAIN
