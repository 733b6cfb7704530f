// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * vm/ksft-retry.c - run a kselftest-harness program in the guest and rerun
 * each failed test on its own (-r fixture.test) up to RETRIES times.
 *
 *     ksft-retry RETRIES PROGRAM [ARGS...]     (PROGRAM relative to /tests)
 *
 * For the upstream epoll_wakeup_test, whose threaded tests depend on timing
 * (two waiters woken by one emitter with 100 ms sleeps): under TCG a slow
 * vCPU can make such a test count one wake-up instead of two.  A test that
 * passes on a rerun is reported as FLAKY, never hidden; a test that fails
 * every time fails the program.  The program's own output passes through
 * untouched.  Final line:
 *
 *     # ksft-retry: PROGRAM N/T passed (F flaky: a,b) (K failed: c)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#define MAXFAIL 256

static char *failed[MAXFAIL];
static int nfailed, plan;

/* Run path argv, pass its output through; collect "not ok" test names. */
static int run(char *path, char **argv, int collect)
{
	char line[4096];
	int pfd[2], status;
	FILE *in;
	pid_t pid;

	if (pipe(pfd))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		close(pfd[1]);
		execv(path, argv);
		fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	in = fdopen(pfd[0], "r");
	while (fgets(line, sizeof(line), in)) {
		fputs(line, stdout);
		fflush(stdout);
		if (!collect)
			continue;
		if (!strncmp(line, "1..", 3))
			plan = atoi(line + 3);
		if (!strncmp(line, "not ok ", 7) && nfailed < MAXFAIL) {
			char *p = line + 7, *name;

			while (*p >= '0' && *p <= '9')
				p++;
			while (*p == ' ')
				p++;
			name = p;
			p += strcspn(p, " #\n");
			*p = 0;
			failed[nfailed++] = strdup(name);
		}
	}
	fclose(in);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

int main(int argc, char **argv)
{
	char path[512], flaky[2048] = "", hard[2048] = "";
	int retries, status, i, nflaky = 0, nhard = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: ksft-retry RETRIES PROGRAM [ARGS...]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	retries = atoi(argv[1]);
	snprintf(path, sizeof(path), "/tests/%s", argv[2]);
	status = run(path, argv + 2, 1);
	if (status == 0) {
		printf("# ksft-retry: %s %d/%d passed\n", argv[2], plan, plan);
		return 0;
	}
	if (status < 0 || !WIFEXITED(status) || !nfailed) {
		printf("# ksft-retry: %s ended with status %#x, %d failed tests seen: "
		       "no retry\n", argv[2], status, nfailed);
		return WIFEXITED(status) && status >= 0 ? WEXITSTATUS(status) : 1;
	}
	for (i = 0; i < nfailed; i++) {
		char *rargv[] = { argv[2], "-r", failed[i], NULL };
		int k, ok = 0;

		for (k = 1; k <= retries && !ok; k++) {
			printf("# ksft-retry: rerun %d/%d of %s\n", k, retries, failed[i]);
			ok = run(path, rargv, 0) == 0;
		}
		if (ok) {
			nflaky++;
			snprintf(flaky + strlen(flaky), sizeof(flaky) - strlen(flaky),
				 "%s%s (retry %d)", nflaky > 1 ? ", " : "", failed[i], k - 1);
		} else {
			nhard++;
			snprintf(hard + strlen(hard), sizeof(hard) - strlen(hard),
				 "%s%s", nhard > 1 ? ", " : "", failed[i]);
		}
	}
	printf("# ksft-retry: %s %d/%d passed", argv[2], plan - nhard, plan);
	if (nflaky)
		printf(" (%d FLAKY, failed first then passed alone: %s)", nflaky, flaky);
	if (nhard)
		printf(" (%d FAILED every time: %s)", nhard, hard);
	printf("\n");
	return nhard ? 1 : 0;
}
