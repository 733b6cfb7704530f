// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * userpoll_mm_test - the instance as memory and as a file
 * (doc/PROTOCOL.md sections 1, 2, 8): fork() (VM_DONTCOPY, undone by
 * MADV_DOFORK), close with a live mapping then munmap, RLIMIT_MEMLOCK
 * accounting (ENOMEM without CAP_IPC_LOCK, un-charged on free), the
 * memory cgroup's charge, fdinfo and the procfs feature file.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "userpoll.h"

#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define INET (EPOLLIN | EPOLLET)

TEST(procfs_feature_file)
{
	char buf[16] = "";
	int fd;

	UP_REQUIRE();
	fd = open(UEPOLL_FEATURE_FILE, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(2, read(fd, buf, sizeof(buf) - 1));
	EXPECT_STREQ("1\n", buf);
	close(fd);
	/* next to max_user_watches */
	EXPECT_EQ(0, access("/proc/sys/fs/epoll/max_user_watches", R_OK));
}

/* Is [addr, addr+len) mapped in this process?  /proc/self/maps and mincore. */
static int mapped_in_maps(void *addr)
{
	unsigned long a = (unsigned long)addr, lo, hi;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi)
			found = 1;
	fclose(f);
	return found;
}

static int mapped_by_mincore(void *addr)
{
	unsigned char vec[1];

	if (mincore(addr, UP_PAGE_SIZE, vec) == 0)
		return 1;
	return errno == ENOMEM ? 0 : -1;
}

TEST(fork_child_has_no_mapping)
{
	struct up u;
	int efd, status, err;
	pid_t pid;

	UP_REQUIRE();
	err = up_open(&u, 16, 0);
	ASSERT_EQ(0, err) TH_LOG("%s", strerror(-err));
	efd = eventfd(1, EFD_NONBLOCK);
	ASSERT_EQ(0, up_ctl(u.fd, EPOLL_CTL_ADD, efd, INET, 3));
	ASSERT_EQ(1, up_tail(&u));
	ASSERT_EQ(1, mapped_in_maps(u.hdr));
	ASSERT_EQ(1, mapped_by_mincore(u.hdr));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct up c;
		int r = 0;

		/* VM_DONTCOPY: neither region exists in the child */
		if (mapped_in_maps(u.hdr) != 0)
			r |= 1;
		if (mapped_by_mincore(u.hdr) != 0)
			r |= 2;
		if (mapped_in_maps(u.index) != 0 || mapped_by_mincore(u.index) != 0)
			r |= 4;
		/* the inherited fd can be mapped afresh: same instance */
		if (up_map(&c, u.fd) != 0)
			r |= 8;
		else if (c.hdr->magic != EPOLL_USERPOLL_HEADER_MAGIC ||
			 up_tail(&c) != 1 || c.hdr->items[0].data != 3)
			r |= 16;
		_exit(r);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child died: status %#x (touching "
					      "the parent's mapping faulted?)", status);
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child: %s%s%s%s%s", WEXITSTATUS(status) & 1 ? "header in /proc/self/maps; " : "",
		       WEXITSTATUS(status) & 2 ? "header resident per mincore; " : "",
		       WEXITSTATUS(status) & 4 ? "index ring mapped; " : "",
		       WEXITSTATUS(status) & 8 ? "mmap of inherited fd failed; " : "",
		       WEXITSTATUS(status) & 16 ? "fresh mapping differs" : "");
	/* the parent's mapping is intact */
	EXPECT_EQ(EPOLL_USERPOLL_HEADER_MAGIC, u.hdr->magic);
	close(efd);
	up_close(&u);
}

TEST(fork_child_touching_address_faults)
{
	struct up u;
	int status, err;
	pid_t pid;

	UP_REQUIRE();
	err = up_open(&u, 16, 0);
	ASSERT_EQ(0, err);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* must die of SIGSEGV */
		_exit((int)((volatile struct epoll_uheader *)u.hdr)->magic & 0x7f);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("child read the header: status %#x", status);
	if (WIFSIGNALED(status))
		EXPECT_EQ(SIGSEGV, WTERMSIG(status));
	up_close(&u);
}

/*
 * VM_DONTCOPY is the default, not a promise: MADV_DOFORK undoes it and
 * the child then shares the parent's pages (the same ring, the same
 * head).  The kernel allows it (it is the process's own memory); the
 * documentation says so, and a consumer library must refuse to consume
 * in such a child.
 */
TEST(fork_after_madv_dofork_shares_the_ring)
{
	struct up u;
	int efd, status, err;
	pid_t pid;

	UP_REQUIRE();
	err = up_open(&u, 16, 0);
	ASSERT_EQ(0, err) TH_LOG("%s", strerror(-err));
	ASSERT_EQ(0, madvise(u.hdr, u.hlen, MADV_DOFORK)) TH_LOG("%s", strerror(errno));
	efd = eventfd(1, EFD_NONBLOCK);
	ASSERT_EQ(0, up_ctl(u.fd, EPOLL_CTL_ADD, efd, INET, 3));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int r = 0;

		if (mapped_in_maps(u.hdr) != 1)
			r |= 1;
		else if (u.hdr->magic != EPOLL_USERPOLL_HEADER_MAGIC ||
			 up_tail(&u) != 1)
			r |= 2;
		/* the index ring kept VM_DONTCOPY */
		if (mapped_in_maps(u.index) != 0)
			r |= 4;
		_exit(r);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child died: status %#x", status);
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child: %s%s%s", WEXITSTATUS(status) & 1 ? "header not inherited; " : "",
		       WEXITSTATUS(status) & 2 ? "inherited header differs; " : "",
		       WEXITSTATUS(status) & 4 ? "index ring inherited without MADV_DOFORK" : "");
	close(efd);
	up_close(&u);
}

/* ---- memory cgroup ------------------------------------------------------ */

#define CG_ROOT "/tmp/uepoll-cg"

static long cg_read_long(const char *path)
{
	char buf[64] = "";
	ssize_t len;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return len > 0 ? strtol(buf, NULL, 10) : -1;
}

static int cg_write(const char *path, const char *s)
{
	ssize_t len;
	int fd = open(path, O_WRONLY);

	if (fd < 0)
		return -errno;
	len = write(fd, s, strlen(s));
	close(fd);
	return len == (ssize_t)strlen(s) ? 0 : -errno;
}

/*
 * Every allocation of an instance is charged to the creator's memory
 * cgroup: a 65536-item instance (1 MiB + 64 KiB header, 256 KiB ring,
 * bitmaps, the slot map) raises memory.current by at least the two
 * shared regions, and closing it gives them back.  Runs in a child moved
 * into a fresh cgroup (the harness forks per test).
 */
TEST(memcg_charges_instance)
{
	char procs[128], cur[128], pid[32];
	long before, with, after;
	int fd, err;

	UP_REQUIRE();
	mkdir(CG_ROOT, 0755);
	if (mount("none", CG_ROOT, "cgroup2", 0, NULL) && errno != EBUSY)
		SKIP(return, "cgroup2: %s", strerror(errno));
	if (cg_write(CG_ROOT "/cgroup.subtree_control", "+memory"))
		SKIP(return, "no memory controller");
	mkdir(CG_ROOT "/t", 0755);
	snprintf(procs, sizeof(procs), "%s/t/cgroup.procs", CG_ROOT);
	snprintf(cur, sizeof(cur), "%s/t/memory.current", CG_ROOT);
	snprintf(pid, sizeof(pid), "%d", getpid());
	err = cg_write(procs, pid);
	ASSERT_EQ(0, err) TH_LOG("joining the cgroup: %s", strerror(-err));

	before = cg_read_long(cur);
	ASSERT_LE(0, before);
	fd = sys_epoll_create2(EPOLL_USERPOLL, EPOLL_USERPOLL_MAX_ITEMS);
	ASSERT_LE(0, fd) TH_LOG("%s", strerror(errno));
	with = cg_read_long(cur);
	EXPECT_LE(before + (1L << 20) + (256L << 10), with)
		TH_LOG("memory.current %ld -> %ld: the instance is not charged",
		       before, with);
	close(fd);
	/* ep_free() ran in close(); the struct eventpoll itself is RCU-freed */
	usleep(100 * 1000);
	after = cg_read_long(cur);
	EXPECT_GT(before + (256L << 10), after)
		TH_LOG("memory.current %ld -> %ld -> %ld: not given back",
		       before, with, after);
}

TEST(close_with_live_mapping_then_munmap)
{
	struct up u;
	int efd, err, k;

	UP_REQUIRE();
	for (k = 0; k < 20; k++) {
		err = up_open(&u, 32, 0);
		ASSERT_EQ(0, err) TH_LOG("%s", strerror(-err));
		efd = eventfd(0, EFD_NONBLOCK);
		ASSERT_EQ(0, up_ctl(u.fd, EPOLL_CTL_ADD, efd, INET, 9));
		ASSERT_EQ(0, up_efd_write(efd, 1));
		ASSERT_EQ(0, close(u.fd));
		u.fd = -1;
		/* the mapping stays valid after close */
		EXPECT_EQ(EPOLL_USERPOLL_HEADER_MAGIC, u.hdr->magic);
		EXPECT_EQ(1, up_tail(&u));
		EXPECT_EQ(9, u.hdr->items[0].data);
		EXPECT_EQ(1, u.index[0]);
		uepoll_head_release(u.hdr, 1);
		/* events after close: harmless either way */
		(void)up_efd_write(efd, 1);
		if (k & 1)
			close(efd);
		EXPECT_EQ(0, munmap(u.index, u.ilen));
		u.index = NULL;
		/* the header can outlive the ring mapping and the fd */
		EXPECT_EQ(EPOLL_USERPOLL_HEADER_MAGIC, u.hdr->magic);
		EXPECT_EQ(0, munmap(u.hdr, u.hlen));
		u.hdr = NULL;
		if (!(k & 1))
			close(efd);
	}
}

/* ---- RLIMIT_MEMLOCK --------------------------------------------------- */

/* charge of one instance: header + index */
static size_t up_charge(size_t n)
{
	return up_expected_header_length(n) + up_expected_index_length(n);
}

static int drop_cap_ipc_lock(int how)
{
	if (how == 0) {
		/* any uid but root: no capabilities at all */
		if (setgid(65534) || setuid(65534))
			return -errno;
		return 0;
	} else {
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
}

FIXTURE(memlock) {
	int dummy;
};

FIXTURE_VARIANT(memlock) {
	int how;	/* 0: setuid(65534), 1: capset() without CAP_IPC_LOCK */
};

FIXTURE_VARIANT_ADD(memlock, setuid_nobody) { .how = 0, };
FIXTURE_VARIANT_ADD(memlock, capset_root) { .how = 1, };

FIXTURE_SETUP(memlock)
{
	UP_REQUIRE();
	if (getuid() != 0)
		SKIP(return, "needs root to drop CAP_IPC_LOCK in a controlled way");
}

FIXTURE_TEARDOWN(memlock)
{
}

/*
 * Runs in a forked child (the harness forks per test): the child drops
 * CAP_IPC_LOCK for good.
 */
TEST_F(memlock, enomem_and_uncharge)
{
	struct rlimit rl;
	size_t one = up_charge(1), big = up_charge(4096);
	int fd, fds[8], k, err;
	struct up u;

	err = drop_cap_ipc_lock(variant->how);
	if (err == -ENOSYS || err == -EINVAL)
		SKIP(return, "cannot drop CAP_IPC_LOCK (%s): CONFIG_MULTIUSER off? "
		     "Then every task has every capability and nothing is charged",
		     strerror(-err));
	ASSERT_EQ(0, err) TH_LOG("drop CAP_IPC_LOCK: %s", strerror(-err));

	/* limit below one instance: ENOMEM (soft limit only: the hard one
	 * cannot be raised again without CAP_SYS_RESOURCE) */
	ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &rl));
	ASSERT_LE(4 * one + one / 2, rl.rlim_max) TH_LOG("hard RLIMIT_MEMLOCK too low");
	rl.rlim_cur = one - UP_PAGE_SIZE;
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	errno = 0;
	fd = sys_epoll_create2(EPOLL_USERPOLL, 1);
	EXPECT_EQ(-1, fd) TH_LOG("create2(n=1) under a %zu byte limit", one - UP_PAGE_SIZE);
	EXPECT_EQ(ENOMEM, errno) TH_LOG("errno %d", errno);
	if (fd >= 0)
		close(fd);
	/* plain epoll is not charged */
	fd = sys_epoll_create2(0, 1);
	EXPECT_LE(0, fd);
	if (fd >= 0)
		close(fd);

	/* room for 4 instances of n=1 (not 5), not for one of n=4096 */
	rl.rlim_cur = 4 * one + one / 2;
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	errno = 0;
	fd = sys_epoll_create2(EPOLL_USERPOLL, 4096);
	EXPECT_EQ(-1, fd) TH_LOG("create2(n=4096, %zu bytes) under a %zu byte limit",
				 big, 4 * one + one / 2);
	EXPECT_EQ(ENOMEM, errno);
	if (fd >= 0)
		close(fd);
	for (k = 0; k < 4; k++) {
		fds[k] = sys_epoll_create2(EPOLL_USERPOLL, 1);
		ASSERT_LE(0, fds[k]) TH_LOG("instance %d of 4: %s", k, strerror(errno));
	}
	errno = 0;
	fd = sys_epoll_create2(EPOLL_USERPOLL, 1);
	EXPECT_EQ(-1, fd) TH_LOG("a fifth instance fit in the limit of four");
	EXPECT_EQ(ENOMEM, errno);
	if (fd >= 0)
		close(fd);
	/* freeing one un-charges it */
	close(fds[0]);
	fds[0] = sys_epoll_create2(EPOLL_USERPOLL, 1);
	EXPECT_LE(0, fds[0]) TH_LOG("close did not un-charge: %s", strerror(errno));
	/* a live mapping keeps the instance (and the charge) until munmap */
	ASSERT_EQ(0, up_map(&u, fds[1]));
	close(fds[1]);
	errno = 0;
	fd = sys_epoll_create2(EPOLL_USERPOLL, 1);
	EXPECT_EQ(-1, fd) TH_LOG("charge dropped while still mapped");
	if (fd >= 0)
		close(fd);
	up_unmap(&u);
	fd = sys_epoll_create2(EPOLL_USERPOLL, 1);
	EXPECT_LE(0, fd) TH_LOG("munmap of the last mapping did not un-charge: %s",
				strerror(errno));
	if (fd >= 0)
		close(fd);
	for (k = 0; k < 4; k++)
		if (k != 1 && fds[k] >= 0)
			close(fds[k]);
	/* create/close many times under the limit: no leak of the charge */
	for (k = 0; k < 200; k++) {
		fd = sys_epoll_create2(EPOLL_USERPOLL, 1);
		ASSERT_LE(0, fd) TH_LOG("iteration %d: %s (charge leaked?)", k, strerror(errno));
		close(fd);
	}
}

/* With CAP_IPC_LOCK (root) the limit does not apply. */
TEST(memlock_cap_ipc_lock_exempt)
{
	struct rlimit rl = { 0, 0 };
	int fd;

	UP_REQUIRE();
	if (getuid() != 0)
		SKIP(return, "needs CAP_IPC_LOCK");
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	fd = sys_epoll_create2(EPOLL_USERPOLL, 4096);
	EXPECT_LE(0, fd) TH_LOG("CAP_IPC_LOCK holder refused: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* ---- fdinfo ----------------------------------------------------------- */

static int read_fdinfo_userpoll(int fd, unsigned int *head, unsigned int *tail,
				unsigned int *cap, unsigned int *items, char *raw,
				size_t rawlen)
{
	char path[64], line[512];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	raw[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "userpoll:", 9))
			continue;
		snprintf(raw, rawlen, "%s", line);
		if (sscanf(line, "userpoll: head %u tail %u capacity %u items %u",
			   head, tail, cap, items) == 4)
			found = 1;
		else
			found = -2;
	}
	fclose(f);
	return found;
}

TEST(fdinfo)
{
	unsigned int head = 99, tail = 99, cap = 99, items = 99;
	struct up_event ev[4];
	char raw[512];
	int efd[3], k, pfd;
	struct up u;

	UP_REQUIRE();
	ASSERT_EQ(0, up_open(&u, 100, 0));
	ASSERT_EQ(1, read_fdinfo_userpoll(u.fd, &head, &tail, &cap, &items, raw, sizeof(raw)))
		TH_LOG("no/bad userpoll line in fdinfo: '%s'", raw);
	EXPECT_EQ(0, head);
	EXPECT_EQ(0, tail);
	EXPECT_EQ(100, cap) TH_LOG("capacity is max_items_nr: '%s'", raw);
	EXPECT_EQ(0, items);
	for (k = 0; k < 3; k++) {
		efd[k] = eventfd(0, EFD_NONBLOCK);
		ASSERT_EQ(0, up_ctl(u.fd, EPOLL_CTL_ADD, efd[k], INET, k));
	}
	ASSERT_EQ(0, up_efd_write(efd[0], 1));
	ASSERT_EQ(0, up_efd_write(efd[1], 1));
	ASSERT_EQ(1, up_harvest(&u, ev, 1, NULL));
	ASSERT_EQ(1, read_fdinfo_userpoll(u.fd, &head, &tail, &cap, &items, raw, sizeof(raw)));
	EXPECT_EQ(1, head) TH_LOG("'%s'", raw);
	EXPECT_EQ(2, tail) TH_LOG("'%s'", raw);
	EXPECT_EQ(100, cap);
	EXPECT_EQ(3, items) TH_LOG("'%s'", raw);
	ASSERT_EQ(0, up_ctl(u.fd, EPOLL_CTL_DEL, efd[2], 0, 0));
	ASSERT_EQ(1, read_fdinfo_userpoll(u.fd, &head, &tail, &cap, &items, raw, sizeof(raw)));
	EXPECT_EQ(3, tail) TH_LOG("DEL push not counted: '%s'", raw);
	EXPECT_EQ(2, items) TH_LOG("'%s'", raw);
	/* the ordinary tfd lines are still there for registered fds */
	for (k = 0; k < 3; k++)
		close(efd[k]);
	ASSERT_EQ(1, read_fdinfo_userpoll(u.fd, &head, &tail, &cap, &items, raw, sizeof(raw)));
	EXPECT_EQ(0, items) TH_LOG("'%s'", raw);
	up_close(&u);
	/* a plain epoll fd has no such line */
	pfd = epoll_create1(0);
	EXPECT_EQ(0, read_fdinfo_userpoll(pfd, &head, &tail, &cap, &items, raw, sizeof(raw)))
		TH_LOG("plain epoll shows '%s'", raw);
	close(pfd);
}

UP_TEST_MAIN
