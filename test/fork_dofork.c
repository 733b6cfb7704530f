// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * fork_dofork: the fork rule of the native backend holds whether or not
 * the child inherits the ring.  The kernel maps it VM_DONTCOPY, but
 * madvise(MADV_DOFORK) undoes that; then the child has its own view of
 * the parent's ring.  Either way, in the child:
 *   - uepoll_harvest(), uepoll_wait() and uepoll_ctl() fail with -ECHILD,
 *     and the parent's ring is left as it was: the child consumed nothing
 *     (head, tail, ready_events unchanged; the parent harvests its event
 *     after the child is gone);
 *   - uepoll_exit() unmaps the child's inherited copy (MADV_DOFORK), and
 *     nothing where the child has no copy: there the range may hold a
 *     mapping the child made since, which must survive (in the child's
 *     children too).
 * The library's mappings are where u->hdr and u->index say (private
 * fields, read by this test only); /proc/self/maps says whether they are
 * mapped.
 *
 * Native backend only: skips elsewhere (the host has no EPOLL_USERPOLL;
 * the guest suite runs it).  test/fork_fake.c runs the same scenario on
 * the kernel forged by test/fake_kernel.h, on any host.
 */
#include <sys/mman.h>
#include <sys/wait.h>
#ifdef FORK_FAKE_KERNEL
#include "fake_kernel.h"
#define MAP_NAME "/memfd:fake-userpoll"
#else
#include "helpers.h"
#define MAP_NAME "anon_inode:[eventpoll]"
#endif

struct map {
	unsigned long start, end;
};

/* the library's mappings of the instance: its header and index regions */
struct maps {
	struct map h, i;
};

/*
 * How many bytes of m the mappings named MAP_NAME cover (adjacent ones
 * may have been merged into one line).
 */
static unsigned long covered(const struct map *m)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long n = 0;
	char line[512];

	if (!f)
		FAIL("/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (!strstr(line, MAP_NAME))
			continue;
		if (sscanf(line, "%lx-%lx", &s, &e) != 2)
			FAIL("/proc/self/maps: cannot parse '%s'", line);
#ifdef FORK_FAKE_KERNEL
		if (s >= (unsigned long)fk.hdr && e <= (unsigned long)fk.hdr + fk.hlen + fk.ilen)
			continue;	/* the fake kernel's own view */
#endif
		if (s < m->start)
			s = m->start;
		if (e > m->end)
			e = m->end;
		if (s < e)
			n += e - s;
	}
	fclose(f);
	return n;
}

static int map_present(const struct map *m)
{
	return covered(m) == m->end - m->start;
}

static int map_absent(const struct map *m)
{
	return covered(m) == 0;
}

/*
 * Where the library mapped the instance: u->hdr and u->index (private
 * fields of struct uepoll, read by this test only), with the lengths
 * the header gives; /proc/self/maps must agree.
 */
static void lib_maps(const struct uepoll *u, struct maps *lm)
{
	const struct epoll_uheader *h = u->hdr;

	CHECK(h && u->index);
	lm->h.start = (unsigned long)h;
	lm->h.end = lm->h.start + h->header_length;
	lm->i.start = (unsigned long)u->index;
	lm->i.end = lm->i.start + h->index_length;
	if (!map_present(&lm->h) || !map_present(&lm->i))
		FAIL("/proc/self/maps does not show the instance's ring as %s", MAP_NAME);
}

/* the ring as seen through the library's header mapping */
struct snap {
	uint32_t head, tail, ready[4];
};

static void snap(const struct maps *lm, struct snap *s)
{
	const struct epoll_uheader *h = (const void *)lm->h.start;

	s->head = __atomic_load_n(&h->head, __ATOMIC_RELAXED);
	s->tail = __atomic_load_n(&h->tail, __ATOMIC_RELAXED);
	for (int k = 0; k < 4; k++)
		s->ready[k] = __atomic_load_n(&h->items[k].ready_events, __ATOMIC_RELAXED);
}

static void check_same(const struct maps *lm, const struct snap *a, const char *when)
{
	struct snap b;

	snap(lm, &b);
	if (memcmp(a, &b, sizeof(b)))
		FAIL("%s: the ring changed: head %u -> %u, tail %u -> %u, ready[0] %#x -> %#x",
		     when, a->head, b.head, a->tail, b.tail, a->ready[0], b.ready[0]);
}

static void init(struct uepoll *u)
{
#ifdef FORK_FAKE_KERNEL
	CHECK_EQ(uepoll_init(u, 4, UEPOLL_BACKEND_NATIVE | UEPOLL_CLOEXEC), 0);
#else
	t_init(u, 4);
	if (uepoll_backend(u) != UEPOLL_BACKEND_NATIVE) {
		uepoll_exit(u);
		SKIP("native backend only (this run: %s%s)", getenv("UEPOLL_BACKEND") ?: "auto",
		     t_native_feature() ? "" : ", the kernel has no EPOLL_USERPOLL");
	}
#endif
}

/* register efd in slot (the kernel takes the lowest free one) */
static void add(struct uepoll *u, int efd, unsigned slot, uint64_t data)
{
	CHECK_EQ(t_add(u, efd, EPOLLIN | EPOLLET, data), 0);
#ifdef FORK_FAKE_KERNEL
	fake_item(slot, EPOLLIN | EPOLLET, data);
#else
	(void)slot;
#endif
}

/* make the registration of efd in slot fire */
static void fire(int efd, unsigned slot)
{
#ifdef FORK_FAKE_KERNEL
	(void)efd;
	fake_push(slot, EPOLLIN);
#else
	(void)slot;
	t_write(efd);
#endif
}

static void done(struct uepoll *u)
{
	uepoll_exit(u);
#ifdef FORK_FAKE_KERNEL
	fake_destroy();
#endif
}

/* in the child: every call that could touch the ring answers -ECHILD */
static void child_calls(struct uepoll *u, int efd, int other)
{
	struct epoll_event evs[8];

	CHECK_EQ(uepoll_harvest(u, evs, 8), -ECHILD);
	CHECK_EQ(uepoll_wait(u, evs, 8, 0), -ECHILD);
	CHECK_EQ(uepoll_wait(u, evs, 8, 10), -ECHILD);
	CHECK_EQ(t_add(u, other, EPOLLIN | EPOLLET, 99), -ECHILD);
	CHECK_EQ(t_mod(u, efd, EPOLLIN | EPOLLET, 98), -ECHILD);
	CHECK_EQ(uepoll_ctl(u, EPOLL_CTL_DEL, efd, NULL), -ECHILD);
	CHECK_EQ(uepoll_harvest(u, evs, 8), -ECHILD);
	CHECK(uepoll_fd(u) >= 0);
}

static void wait_child(pid_t pid, const char *what)
{
	int st;

	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		FAIL("%s: the child was killed by signal %d", what, WTERMSIG(st));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		FAIL("%s: the child failed (status %#x)", what, st);
}

/* MADV_DOFORK: the child has the parent's ring mapped, and leaves it be */
static void inherited(int a, int b)
{
	struct epoll_event evs[8];
	struct uepoll u;
	struct maps lm;
	struct snap s;
	pid_t pid;

	init(&u);
	lib_maps(&u, &lm);
	CHECK_EQ(madvise((void *)lm.h.start, lm.h.end - lm.h.start, MADV_DOFORK), 0);
	CHECK_EQ(madvise((void *)lm.i.start, lm.i.end - lm.i.start, MADV_DOFORK), 0);
	add(&u, a, 0, 1);
	add(&u, b, 1, 2);
	fire(a, 0);
	snap(&lm, &s);
	CHECK(s.head != s.tail);	/* an entry waits for the parent */
	/* a's slot: 0 in the fake kernel; after the level epoll's (made at
	 * init) in the real one */
	CHECK((s.ready[0] | s.ready[1]) & EPOLLIN);

	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (!map_present(&lm.h) || !map_present(&lm.i))
			FAIL("MADV_DOFORK: the child did not inherit the ring");
		check_same(&lm, &s, "child, after fork");
		child_calls(&u, a, b);
		check_same(&lm, &s, "child, after its calls");
		uepoll_exit(&u);
		if (!map_absent(&lm.h) || !map_absent(&lm.i))
			FAIL("child: uepoll_exit() left the inherited ring mapped");
		_exit(0);
	}
	wait_child(pid, "MADV_DOFORK");
	CHECK(map_present(&lm.h) && map_present(&lm.i));
	check_same(&lm, &s, "parent, after the child");
	CHECK_EQ(uepoll_harvest(&u, evs, 8), 1);
	CHECK_EQ(evs[0].data.u64, 1);
	CHECK(evs[0].events & EPOLLIN);
	fire(b, 1);
	CHECK_EQ(uepoll_wait(&u, evs, 8, 1000), 1);
	CHECK_EQ(evs[0].data.u64, 2);
	done(&u);
	CHECK(map_absent(&lm.h) && map_absent(&lm.i));
}

/* the kernel's default: no mapping in the child, and what the child maps
 * where the ring was survives its uepoll_exit() */
static void not_inherited(int a, int b)
{
	struct epoll_event evs[8];
	struct uepoll u;
	struct maps lm;
	pid_t pid;

	init(&u);
	lib_maps(&u, &lm);
	add(&u, a, 0, 3);
	fire(a, 0);

	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		size_t hl = lm.h.end - lm.h.start, il = lm.i.end - lm.i.start;
		unsigned char *h, *i;

		if (!map_absent(&lm.h) || !map_absent(&lm.i))
			FAIL("the child inherited the ring without MADV_DOFORK");
		child_calls(&u, a, b);
		/* the child's own memory where the ring was (MAP_FIXED: the
		 * range was just seen empty; valgrind knows no _NOREPLACE) */
		h = mmap((void *)lm.h.start, hl, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		i = mmap((void *)lm.i.start, il, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		CHECK(h == (void *)lm.h.start && i == (void *)lm.i.start);
		memset(h, 0x5a, hl);
		memset(i, 0xa5, il);
		/* a child's child: the same, with the child's memory there */
		fflush(NULL);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			child_calls(&u, a, b);
			uepoll_exit(&u);
			CHECK(h[0] == 0x5a && i[il - 1] == 0xa5);
			_exit(0);
		}
		wait_child(pid, "no MADV_DOFORK, the child's child");
		uepoll_exit(&u);
		/* still mapped (a SIGSEGV here fails the test), still ours */
		CHECK(h[0] == 0x5a && h[hl - 1] == 0x5a);
		CHECK(i[0] == 0xa5 && i[il - 1] == 0xa5);
		_exit(0);
	}
	wait_child(pid, "no MADV_DOFORK");
	CHECK(map_present(&lm.h) && map_present(&lm.i));
	CHECK_EQ(uepoll_wait(&u, evs, 8, 1000), 1);
	CHECK_EQ(evs[0].data.u64, 3);
	done(&u);
}

int main(void)
{
	int fds0 = count_fds(), a = t_efd(), b = t_efd();

	inherited(a, b);
	t_read(a);
	t_read(b);
	not_inherited(a, b);
	close(a);
	close(b);
	CHECK_EQ(count_fds(), fds0);
	return 0;
}
