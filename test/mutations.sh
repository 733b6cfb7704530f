#!/bin/bash
# SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
#
# test/mutations.sh - prove the tests can fail.  Each mutation breaks one
# rule in a scratch copy of the tree (never the work tree), rebuilds it
# and runs the test that guards the rule on one backend: the test must
# FAIL (exit 1 or a timeout).  `make check-mutations`.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d /tmp/uepoll-mut.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

# name @@ file @@ literal text @@ replacement @@ test @@ backend
mutations=(
"no generation check@@src/uring.c@@sl->fd < 0 || sl->gen != g@@sl->fd < 0 || (sl->gen != g && 0)@@del_final@@uring"
"no coalescing@@src/uring.c@@if (m && sl->stamp == batch)@@if (0)@@coalesce@@uring"
"no re-arm of ended polls@@src/uring.c@@	if (!sl->rearm) {@@	if (0) {@@overflow@@uring"
"no overflow flush@@src/uring.c@@io_uring_get_events(ring);@@(void)0;@@overflow@@uring"
"ONESHOT fires again@@src/uring.c@@sl->fired = 1;@@(void)0;@@oneshot@@uring"
"MOD keeps old data@@src/uring.c@@		sl->data = ev->data.u64;
		sl->fired = 0;
		if (!sl->armed)@@		sl->fired = 0;
		if (!sl->armed)@@mod@@uring"
"no capacity limit (epoll)@@src/epoll.c@@p->count >= u->n@@0@@capacity@@epoll"
"no capacity limit (uring)@@src/uring.c@@if (!p->nfree) {@@if (0) {@@capacity@@uring"
"EPOLLET not required@@src/uepoll.c@@ || !(e.events & EPOLLET)@@@@ctl_errors@@epoll"
"regular files accepted@@src/uepoll.c@@S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)@@0@@ctl_errors@@uring"
"exit leaks the ring fd@@src/uring.c@@io_uring_queue_exit(&p->ring);	/*@@(void)0;	/*@@smoke@@uring"
"use after exit not detected@@src/uepoll.c@@UEPOLL_MAGIC_DEAD ? -EBADF : -EINVAL@@UEPOLL_MAGIC_DEAD ? -EINVAL : -EINVAL@@bad_input@@epoll"
"EINTR swallowed (uring)@@src/uring.c@@return ret < 0 ? -errno : 0;@@return (void)ret, 0;@@wait@@uring"
"EINTR swallowed (epoll)@@src/epoll.c@@	if (ret < 0)
		return -errno;@@	if (ret < 0)
		return 0;@@wait@@epoll"
"wait returns early on a stale wake-up@@src/uepoll.c@@		ret = ops->sleep(u, left < 0 ? -1 : (int)((left + 999999) / 1000000));
		if (ret < 0)
			return ret;@@		ret = ops->sleep(u, left < 0 ? -1 : (int)((left + 999999) / 1000000));
		if (ret <= 0)
			return ret;@@wait@@uring"
"lost edge (epoll)@@src/epoll.c@@	if (ret)
		STAT(u, events@@	if (ret > 0 && evs[0].data.u64 % 7 == 3)
		ret = 0;
	if (ret)
		STAT(u, events@@lost_wakeup@@epoll"
"lost edge (uring)@@src/uring.c@@	if (cnt)
		STAT(u, events@@	if (cnt && evs[0].data.u64 % 7 == 3)
		cnt = 0;
	if (cnt)
		STAT(u, events@@lost_wakeup@@uring"
"syscall in uring harvest@@src/uring.c@@	if (!io_uring_cq_ready(ring) && !(kflags & need_enter))@@	STAT(u, syscalls, 1);
	if (!io_uring_cq_ready(ring) && !(kflags & need_enter))@@stats@@uring"
"DEL not final (epoll)@@src/epoll.c@@	if (epoll_ctl(u->fd, op, fd, ev) < 0) {@@	if (op != EPOLL_CTL_DEL && epoll_ctl(u->fd, op, fd, ev) < 0) {@@del_final@@epoll"
"polls of an exited thread not re-armed@@src/uring.c@@(res >= 0 || res == -ECANCELED)@@(res >= 0)@@threads@@uring"
"auto never falls back to epoll@@src/uepoll.c@@else if (__uepoll_uring_ops.probe() == 0)@@else if (__uepoll_uring_ops.probe() == 0 || 1)@@fallback@@uring"
"UEPOLL_CLOEXEC ignored@@src/epoll.c@@(flags & UEPOLL_CLOEXEC) ? EPOLL_CLOEXEC : 0@@(flags & UEPOLL_CLOEXEC) ? 0 : 0@@init@@epoll"
"bad UEPOLL_BACKEND value accepted@@src/uepoll.c@@	else
		return -EINVAL;
	return 0;@@	return 0;@@init@@uring"
"DEL leaves the kernel poll alive@@src/uring.c@@		if (sl->armed) {
			sqe = get_sqe(u, p);@@		if (0) {
			sqe = get_sqe(u, p);@@no_zombie@@uring"
"wake-up of a sleeping wait lost@@src/uring.c@@ret = ppoll(&pfd, 1,@@ret = ppoll(&pfd, 0,@@wait@@uring"
)

pass=0 fail=0
for m in "${mutations[@]}"; do
	name=${m%%@@*}; rest=${m#*@@}
	file=${rest%%@@*}; rest=${rest#*@@}
	old=${rest%%@@*}; rest=${rest#*@@}
	new=${rest%%@@*}; rest=${rest#*@@}
	test=${rest%%@@*}; be=${rest#*@@}
	rm -rf "$scratch/t" && mkdir -p "$scratch/t"
	cp -r "$top/src" "$top/test" "$top/tools" "$top/Makefile" "$scratch/t/"
	cp "$scratch/t/$file" "$scratch/orig"
	OLD=$old NEW=$new perl -0pi -e 's/\Q$ENV{OLD}\E/$ENV{NEW}/' "$scratch/t/$file"
	if cmp -s "$scratch/orig" "$scratch/t/$file"; then
		echo "BROKEN MUTATION (sed matched nothing): $name"
		fail=$((fail + 1))
		continue
	fi
	if ! make -s -C "$scratch/t" B=build "build/test/$test" >"$scratch/log" 2>&1; then
		echo "BROKEN MUTATION (does not build): $name"; tail -5 "$scratch/log"
		fail=$((fail + 1))
		continue
	fi
	# A mutation that only loses a race (no_zombie: a cancel racing a
	# wake-up) is caught in about 4 runs of 5; run the test up to 5 times
	# and count the mutation caught at its first failure.
	for try in 1 2 3 4 5; do
		UEPOLL_BACKEND=$be timeout 20 "$scratch/t/build/test/$test" >"$scratch/out" 2>&1 </dev/null
		rc=$?
		[ $rc = 0 ] || [ $rc = 77 ] || break
	done
	if [ $rc = 0 ] || [ $rc = 77 ]; then
		echo "NOT CAUGHT: $name: $test on $be passed 5 times"
		fail=$((fail + 1))
	else
		echo "caught: $name -> $test ($be) exit $rc: $(grep -m1 -E 'FAIL|timeout' "$scratch/out" || echo "exit $rc")"
		pass=$((pass + 1))
	fi
done
echo "mutations: $pass caught, $fail not caught"
[ $fail = 0 ]
