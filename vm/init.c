// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * vm/init.c - PID 1 of the uepoll test guest (static, built by vm/check).
 *
 * Mounts proc, sysfs, devtmpfs and a tmpfs on /tmp, brings the loopback
 * interface up, then runs the programs listed in /tests/list, one line
 * each:
 *
 *     TIMEOUT_SECONDS [@LABEL] [VAR=VALUE...] NAME [ARG...]
 *
 * (NAME relative to /tests; LABEL, default NAME, names the program in the
 * output and in uepoll.only; VAR=VALUE pairs are added to the program's
 * environment) each in its own process group with a timeout (SIGKILL to
 * the group), cwd /tmp.
 * Their output goes to the console untouched.  Per program it prints
 *
 *     UEPOLL-GUEST: RUN NAME (timeout N s)
 *     ...
 *     UEPOLL-GUEST-TEST: PASS|FAIL|SKIP NAME ([reason, ]SECONDS s)
 *
 * SECONDS (the program's wall time, two decimals) always ends the line;
 * a reason that starts with "timeout after" is a timeout (vm/check's
 * results.tsv says TIMEOUT).  At the end it prints the parseable marker
 *
 *     UEPOLL-GUEST-RESULT: passed=N failed=M skipped=K
 *
 * then reports through isa-debug-exit (port 0xf4: QEMU exits with status
 * (code << 1) | 1, code 0 = all passed, 1 = failures) and falls back to
 * reboot() (QEMU runs with -no-reboot, so that also ends it).
 *
 * Exit status of a program: 0 pass, 4 (KSFT_SKIP) or 77 skip, else fail.
 *
 * On a kernel with debugfs (the debug kernel) it also mounts debugfs on
 * /sys/kernel/debug, and where /sys/kernel/debug/kmemleak exists it
 * takes a kmemleak baseline before the first program (boot-time objects
 * are cleared once they are old enough to be reported) and scans twice
 * after the last one, then prints
 *
 *     UEPOLL-GUEST: kmemleak: N unreferenced objects
 *
 * preceded, when N > 0, by the report between "UEPOLL-GUEST: kmemleak
 * report begin" and "... end" lines ("UEPOLL-GUEST: kmemleak: no verdict
 * (...)" if a scan could not run); vm/check fails the run on either.
 * A kernel without kmemleak prints nothing of it.
 *
 * Kernel command line options:
 *   uepoll.probe          exit at once with code 0 (accelerator probe)
 *   uepoll.only=A,B       run only the listed programs
 *   uepoll.tscale=N       multiply every timeout by N (debug kernels)
 *   uepoll.keyhold        hold one EPOLL_USERPOLL instance (n = 1,
 *                         close-on-exec) from before the first program to
 *                         the end, and give every program
 *                         UEPOLL_GUEST_KEY_HELD=1; see hold_userpoll_key()
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/io.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <net/if.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <uepoll/uapi.h>

#define EXIT_PORT 0xf4
#define MAX_ARGS 32
#define MAX_ENV 16

static volatile sig_atomic_t alarm_fired;
static int key_held;	/* hold_userpoll_key() succeeded */
static char cmdline[4096];

static void on_alarm(int sig)
{
	(void)sig;
	alarm_fired = 1;
}

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void mnt(const char *src, const char *dst, const char *type)
{
	mkdir(dst, 0755);
	if (mount(src, dst, type, 0, NULL) && errno != EBUSY)
		say("UEPOLL-GUEST: mount %s on %s: %s\n", type, dst, strerror(errno));
}

static void setup_console(void)
{
	int fd = open("/dev/console", O_RDWR | O_NOCTTY);

	if (fd < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
}

/* Value of "key=" (or "" for a bare "key") on the kernel command line. */
static const char *cmdline_opt(const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	const char *p = cmdline;

	while (*p) {
		while (*p == ' ' || *p == '\n')
			p++;
		if (!strncmp(p, key, kl) && (p[kl] == '=' || p[kl] == ' ' ||
					     p[kl] == '\n' || !p[kl])) {
			size_t n = 0;

			if (p[kl] == '=')
				for (p += kl + 1; *p && *p != ' ' && *p != '\n' && n + 1 < len; p++)
					buf[n++] = *p;
			buf[n] = 0;
			return buf;
		}
		while (*p && *p != ' ' && *p != '\n')
			p++;
	}
	return NULL;
}

static int selected(const char *name)
{
	char only[1024], *tok, *save;

	if (!cmdline_opt("uepoll.only", only, sizeof(only)) || !only[0])
		return 1;
	for (tok = strtok_r(only, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, name))
			return 1;
	return 0;
}

/*
 * The kernel's userpoll branches sit behind a static key that is on while
 * an EPOLL_USERPOLL instance exists and goes off a second after the last
 * one closes.  Each change rewrites kernel text with text_poke_bp():
 * int3 on the site, the new bytes, every CPU synchronised.  QEMU's
 * multi-threaded TCG (7.2, this project's guest) can still execute the
 * int3 on the other vCPU after the last synchronisation: "Oops: int3" in
 * ep_poll_callback(), do_epoll_wait() or do_epoll_ctl() within a few flips
 * while other threads run epoll (a program flipping it every 1.4 s did so
 * in 4 boots of 4, and survived 40 flips with thread=single; whether it
 * happens depends on the boot, vm/README.md).  So on that accelerator (vm/check
 * passes uepoll.keyhold) the key is turned on once, here, while nothing
 * else runs, and never turned off; userpoll_keyflip_test tests the flips
 * in a single-threaded TCG boot (vm/check --accel tcg-single).
 */
static int hold_userpoll_key(void)
{
	int fd;

	fd = (int)syscall(UEPOLL_NR_epoll_create2, EPOLL_USERPOLL | O_CLOEXEC, 1);
	if (fd < 0) {
		say("UEPOLL-GUEST: uepoll.keyhold: epoll_create2: %s\n", strerror(errno));
		return -1;
	}
	say("UEPOLL-GUEST: userpoll static key held (fd %d) for the whole run\n", fd);
	return fd;
}

static void reap_orphans(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static __attribute__((noreturn)) void finish(int code)
{
	struct timespec settle = { 0, 300 * 1000 * 1000 };

	fflush(NULL);
	/*
	 * write() to the console returns once the tty layer has the bytes,
	 * not when the UART sent them: drain, or QEMU exits (outb below)
	 * with the final marker lines still in the tty buffer.
	 */
	tcdrain(1);
	nanosleep(&settle, NULL);
	sync();
	if (ioperm(EXIT_PORT, 1, 1) == 0) {
		outb((unsigned char)code, EXIT_PORT);
		/* not reached when QEMU has the isa-debug-exit device */
	}
	say("UEPOLL-GUEST: isa-debug-exit unavailable (%s), rebooting\n",
	    strerror(errno));
	reboot(RB_AUTOBOOT);
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

/* lo up, for programs that talk TCP over 127.0.0.1 */
static void loopback_up(void)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0) {
		say("UEPOLL-GUEST: socket(AF_INET): %s (no loopback)\n", strerror(errno));
		return;
	}
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) == 0) {
			close(s);
			return;
		}
	}
	say("UEPOLL-GUEST: bringing lo up: %s\n", strerror(errno));
	close(s);
}

/* ---- kmemleak (debug kernels) ---------------------------------------------- */

#define KMEMLEAK "/sys/kernel/debug/kmemleak"
/* kmemleak reports an object only once it is this old (MSECS_MIN_AGE 5 s) */
#define KMEMLEAK_AGE 6

static double uptime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int kmemleak_cmd(const char *cmd)
{
	int fd = open(KMEMLEAK, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd))
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * Read the report: count its objects and, if print, copy it to the
 * console.  Returns the number of "unreferenced object" records, or -errno.
 */
static int kmemleak_read(int print)
{
	size_t cap = 1 << 16, have = 0;
	char *buf = malloc(cap), *line, *save;
	int fd = open(KMEMLEAK, O_RDONLY | O_CLOEXEC), n = 0;
	ssize_t r;

	if (fd < 0 || !buf) {
		n = fd < 0 ? -errno : -ENOMEM;
		if (fd >= 0)
			close(fd);
		free(buf);
		return n;
	}
	while ((r = read(fd, buf + have, cap - 1 - have)) > 0) {
		have += (size_t)r;
		if (have == cap - 1) {
			char *p = realloc(buf, cap * 2);

			if (!p)
				break;
			buf = p;
			cap *= 2;
		}
	}
	close(fd);
	buf[have] = 0;
	if (print && have)
		say("UEPOLL-GUEST: kmemleak report begin\n");
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "unreferenced object ", 20))
			n++;
		if (print)
			say("%s\n", line);
	}
	if (print && have)
		say("UEPOLL-GUEST: kmemleak report end\n");
	free(buf);
	return n;
}

/* before the first program: no scan thread, boot-time objects cleared */
static void kmemleak_baseline(void)
{
	double t = uptime();
	int n;

	if (access(KMEMLEAK, F_OK))
		return;
	(void)kmemleak_cmd("scan=off");
	if (t < KMEMLEAK_AGE)
		usleep((useconds_t)((KMEMLEAK_AGE - t) * 1e6));
	if (kmemleak_cmd("scan") == 0) {
		n = kmemleak_read(0);
		(void)kmemleak_cmd("clear");
		say("UEPOLL-GUEST: kmemleak: baseline at %.1f s, %d boot-time object(s) cleared\n",
		    uptime(), n < 0 ? 0 : n);
	}
}

/* after the last program; returns the objects reported, or -1 without a verdict */
static int kmemleak_verdict(void)
{
	int err, n;

	if (access(KMEMLEAK, F_OK))
		return 0;
	say("UEPOLL-GUEST: kmemleak: scanning (%d s for the last objects to age, two scans)\n",
	    KMEMLEAK_AGE);
	sleep(KMEMLEAK_AGE);
	err = kmemleak_cmd("scan");
	if (!err) {
		sleep(1);
		err = kmemleak_cmd("scan");
	}
	if (err) {
		say("UEPOLL-GUEST: kmemleak: no verdict (write scan: %s)\n", strerror(-err));
		return -1;
	}
	n = kmemleak_read(1);
	if (n < 0) {
		say("UEPOLL-GUEST: kmemleak: no verdict (read: %s)\n", strerror(-n));
		return -1;
	}
	say("UEPOLL-GUEST: kmemleak: %d unreferenced objects\n", n);
	return n;
}

/* Run one program; returns 0 pass, 1 fail, 2 skip, 3 unkillable. */
static int run_one(const char *label, char **argv, char **extra_env, int timeout)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	char path[512], why[160] = "";
	int status = 0, ret;
	double t0 = now();
	pid_t pid, w;

	snprintf(path, sizeof(path), "/tests/%s", argv[0]);
	say("UEPOLL-GUEST: RUN %s (timeout %d s)\n", label, timeout);
	pid = fork();
	if (pid < 0) {
		say("UEPOLL-GUEST-TEST: FAIL %s (fork: %s, %.2f s)\n", label,
		    strerror(errno), now() - t0);
		return 1;
	}
	if (pid == 0) {
		char *envp[6 + MAX_ENV] = { "PATH=/tests:/bin:/sbin", "HOME=/tmp",
					    "TMPDIR=/tmp", "TERM=dumb" };
		int n = 4;

		if (key_held)
			envp[n++] = "UEPOLL_GUEST_KEY_HELD=1";
		while (*extra_env && n < 5 + MAX_ENV)
			envp[n++] = *extra_env++;
		envp[n] = NULL;
		setpgid(0, 0);
		if (chdir("/tmp"))
			_exit(126);
		execve(path, argv, envp);
		fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);	/* no SA_RESTART: waitpid gets EINTR */
	alarm_fired = 0;
	alarm(timeout);
	for (;;) {
		w = waitpid(pid, &status, 0);
		if (w == pid)
			break;
		if (w < 0 && errno == EINTR && alarm_fired) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			/* a task stuck in the kernel may not die: bound that too */
			alarm_fired = 0;
			alarm(20);
			w = waitpid(pid, &status, 0);
			if (w != pid) {
				say("UEPOLL-GUEST-TEST: FAIL %s (timeout after %d s, "
				    "then unkillable: stuck in the kernel, %.2f s)\n",
				    label, timeout, now() - t0);
				return 3;
			}
			alarm_fired = 1;
			break;
		}
		if (w < 0 && errno != EINTR)
			break;
	}
	alarm(0);
	kill(-pid, SIGKILL);	/* stray children of the test */
	reap_orphans();

	if (alarm_fired) {
		snprintf(why, sizeof(why), "timeout after %d s", timeout);
		ret = 1;
	} else if (WIFEXITED(status)) {
		int rc = WEXITSTATUS(status);

		if (rc == 0) {
			ret = 0;
		} else if (rc == 4 || rc == 77) {
			snprintf(why, sizeof(why), "exit %d, skipped", rc);
			ret = 2;
		} else {
			snprintf(why, sizeof(why), "exit status %d", rc);
			ret = 1;
		}
	} else if (WIFSIGNALED(status)) {
		snprintf(why, sizeof(why), "killed by signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
		ret = 1;
	} else {
		snprintf(why, sizeof(why), "wait status %#x", status);
		ret = 1;
	}
	say("UEPOLL-GUEST-TEST: %s %s (%s%s%.2f s)\n",
	    ret == 0 ? "PASS" : ret == 1 ? "FAIL" : "SKIP", label, why,
	    why[0] ? ", " : "", now() - t0);
	return ret;
}

int main(void)
{
	int passed = 0, failed = 0, skipped = 0, scale = 1, fd, leaks;
	char line[1024], opt[64], taint[32] = "?";
	struct utsname un;
	double t0 = now();
	FILE *list;

	mnt("proc", "/proc", "proc");
	mnt("sysfs", "/sys", "sysfs");
	mnt("devtmpfs", "/dev", "devtmpfs");
	mnt("tmpfs", "/tmp", "tmpfs");
	/* the directory exists only with CONFIG_DEBUG_FS: the release kernel
	 * is left alone */
	if (access("/sys/kernel/debug", F_OK) == 0)
		mnt("debugfs", "/sys/kernel/debug", "debugfs");
	setup_console();
	loopback_up();
	setvbuf(stdout, NULL, _IOLBF, 0);

	fd = open("/proc/cmdline", O_RDONLY);
	if (fd >= 0) {
		ssize_t n = read(fd, cmdline, sizeof(cmdline) - 1);

		cmdline[n > 0 ? n : 0] = 0;
		close(fd);
	}
	if (cmdline_opt("uepoll.probe", opt, sizeof(opt))) {
		say("UEPOLL-GUEST: probe boot ok\n");
		finish(0);
	}
	if (cmdline_opt("uepoll.tscale", opt, sizeof(opt)) && atoi(opt) > 0)
		scale = atoi(opt);

	uname(&un);
	say("UEPOLL-GUEST: kernel %s %s, %ld CPUs online, init %.2f s after boot\n",
	    un.release, un.version, sysconf(_SC_NPROCESSORS_ONLN), t0);

	if (cmdline_opt("uepoll.keyhold", opt, sizeof(opt)) && hold_userpoll_key() >= 0)
		key_held = 1;
	kmemleak_baseline();
	list = fopen("/tests/list", "r");
	if (!list) {
		say("UEPOLL-GUEST: /tests/list: %s\n", strerror(errno));
		failed++;
	}
	while (list && fgets(line, sizeof(line), list)) {
		char *argv[MAX_ARGS + 1], *env[MAX_ENV + 1], *tok, *save, *label = NULL;
		int argc = 0, envc = 0, timeout;

		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		tok = strtok_r(line, " \t", &save);
		timeout = atoi(tok);
		if (timeout <= 0)
			timeout = 300;
		while ((tok = strtok_r(NULL, " \t", &save)) && argc < MAX_ARGS) {
			if (!argc && !envc && !label && tok[0] == '@')
				label = tok + 1;
			else if (!argc && strchr(tok, '=') && tok[0] != '=' && envc < MAX_ENV)
				env[envc++] = tok;
			else
				argv[argc++] = tok;
		}
		argv[argc] = NULL;
		env[envc] = NULL;
		if (!argc)
			continue;
		if (!label)
			label = argv[0];
		if (!selected(label))
			continue;
		switch (run_one(label, argv, env, timeout * scale)) {
		case 0: passed++; break;
		case 1: failed++; break;
		case 2: skipped++; break;
		default:
			failed++;
			say("UEPOLL-GUEST: giving up on the remaining tests\n");
			fclose(list);
			list = NULL;
			break;
		}
	}
	if (list)
		fclose(list);
	leaks = kmemleak_verdict();

	fd = open("/proc/sys/kernel/tainted", O_RDONLY);
	if (fd >= 0) {
		ssize_t n = read(fd, taint, sizeof(taint) - 1);

		taint[n > 0 ? n : 0] = 0;
		taint[strcspn(taint, "\n")] = 0;
		close(fd);
	}
	say("UEPOLL-GUEST: kernel tainted=%s, %.1f s of tests\n", taint, now() - t0);
	say("UEPOLL-GUEST-RESULT: passed=%d failed=%d skipped=%d\n",
	    passed, failed, skipped);
	finish(failed || leaks ? 1 : 0);
}
