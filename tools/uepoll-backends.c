// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * uepoll-backends - the backends libuepoll knows, in the automatic
 * choice's order, one per line: "NAME available" or "NAME unavailable:
 * REASON" (what uepoll_init would answer here).  -n: the names only.
 * -a: the one the automatic choice takes here (UEPOLL_BACKEND aside).
 * Scripts ask this instead of naming backends themselves.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uepoll.h>

static const char *reason(int err)
{
	switch (err) {
	case -ENOSYS: return "the kernel lacks it (ENOSYS)";
	case -EPERM: return "forbidden here: seccomp or io_uring_disabled (EPERM)";
	default: return strerror(-err);
	}
}

int main(int argc, char **argv)
{
	unsigned b[16];
	int names_only = 0, n, i, c;
	struct uepoll u;

	while ((c = getopt(argc, argv, "anh")) != -1) {
		if (c == 'a') {
			unsetenv("UEPOLL_BACKEND");
			if (uepoll_init(&u, 1, UEPOLL_CLOEXEC) < 0)
				return 1;
			puts(uepoll_backend_name(&u));
			uepoll_exit(&u);
			return 0;
		}
		if (c != 'n') {
			fprintf(stderr, "usage: %s [-n | -a]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
		names_only = 1;
	}
	n = uepoll_backend_list(b, 16);
	for (i = 0; i < n && i < 16; i++) {
		const char *name = uepoll_backend_str(b[i]);
		int err;

		if (names_only) {
			puts(name);
			continue;
		}
		err = uepoll_backend_probe(b[i]);
		if (err)
			printf("%s unavailable: %s\n", name, reason(err));
		else
			printf("%s available\n", name);
	}
	return n > 0 ? 0 : 1;
}
