#!/bin/bash
# SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
#
# test/mutations.sh [--guest] - prove the tests can fail.  Each mutation
# breaks one rule in a scratch copy of the tree (never the work tree),
# rebuilds it and runs the test that guards the rule on one backend: the
# test must FAIL (exit 1 or a timeout).  `make check-mutations` runs the
# uring and epoll ones on the host; the native ones need EPOLL_USERPOLL:
# with --guest they are built static and run in one boot of the patched
# kernel (vm/check), three tries each (`make vm-check` does this).
set -uo pipefail

top=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
. "$top/scripts/env.sh"
mode=host
[ "${1:-}" = --guest ] && mode=guest
scratch=$(mktemp -d /tmp/uepoll-mut.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

# name @@ file @@ literal text @@ replacement @@ test @@ backend
# (backend "script": test is test/scripts/TEST.sh, run once, must exit 1)
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
"auto never falls back to epoll@@src/uepoll.c@@		if (ops_lookup(auto_order[i])->probe() == 0)@@		if (ops_lookup(auto_order[i])->probe() == 0 || i == 1)@@fallback@@uring"
"UEPOLL_CLOEXEC ignored@@src/epoll.c@@(flags & UEPOLL_CLOEXEC) ? EPOLL_CLOEXEC : 0@@(flags & UEPOLL_CLOEXEC) ? 0 : 0@@init@@epoll"
"bad UEPOLL_BACKEND value accepted@@src/uepoll.c@@	if (b < 0)
		return -EINVAL;@@	if (b < 0)
		return 0;@@init@@uring"
"init takes a backend value no backend has@@src/uepoll.c@@	if (!ops)
		return -EINVAL;@@	if (!ops)
		ops = registry[0];@@backends@@epoll"
"the backend list is not the automatic order@@src/uepoll.c@@		backends[i] = auto_order[i];@@		backends[i] = auto_order[NBACKENDS - 1 - i];@@backends@@epoll"
"DEL leaves the kernel poll alive@@src/uring.c@@		if (sl->armed) {
			sqe = get_sqe(u, p);@@		if (0) {
			sqe = get_sqe(u, p);@@no_zombie@@uring"
"wake-up of a sleeping wait lost@@src/uring.c@@ret = ppoll(&pfd, 1,@@ret = ppoll(&pfd, 0,@@wait@@uring"
"a zero spin budget still spins@@src/uepoll.c@@	if (!budget)
		return 0;
	STAT(u, spins, 1);@@	STAT(u, spins, 1);@@spin@@uring"
"any spin budget accepted@@src/uepoll.c@@	if (spin > UEPOLL_SPIN_MAX)
		return -EINVAL;@@@@spin@@epoll"
"ESTALE taken for an error@@src/native.c@@		if (errno == ESTALE) {@@		if (0) {@@native@@native"
"drained ring not released to the kernel (C6)@@src/include/uepoll.h@@	uepoll_head_release(h, head);				/* C6 */@@	(void)head;@@native@@native"
"removal entries returned as events@@src/include/uepoll.h@@		if ((f & ~EPOLLREMOVED) == 0)
			continue;@@		if (f == 0)
			continue;@@del_final@@native"
"fork: child keeps the dead mapping@@src/native.c@@		p->u->hdr = NULL;@@		(void)0;@@native@@native"
"wrong magic accepted@@src/native.c@@	if (magic != EPOLL_USERPOLL_HEADER_MAGIC || max != n ||@@	if (max != n ||@@eproto@@native"
"header kept when the index map fails@@src/native.c@@		err = -errno;
		munmap(p->hmap, p->hlen);@@		err = -errno;@@eproto@@native"
"errno of a failed wait leaks@@src/uepoll.c@@	int saved_errno = errno, ret = wait_(u, evs, max, timeout_ms);

	errno = saved_errno;@@	int ret = wait_(u, evs, max, timeout_ms);
@@wait@@epoll"
"native ctl pays an fstat@@src/uepoll.c@@	if (ops->checks == UEPOLL_CHECKS_NONE ||@@	if (ops->checks != UEPOLL_CHECKS_EPOLL ||@@native@@native"
"auto passes native by@@src/uepoll.c@@		if (ops_lookup(auto_order[i])->probe() == 0)@@		if (ops_lookup(auto_order[i])->probe() == 0 && i > 0)@@init@@native"
"kernel/build keeps the caller's environment@@kernel/build@@. \"\$root/scripts/env.sh\"@@uepoll_git_private() { git \"\$@\"; }@@kernel-first-extract@@script"
"a refused tarball leaves its tree in the cache@@kernel/build@@	if [ \"\$got\" != \"\$base\" ]; then
		rm -rf \"\$cache/.extract\"@@	if [ \"\$got\" != \"\$base\" ]; then@@kernel-first-extract@@script"
)

pass=0 fail=0 idx=0 guest_skipped=0
glib=$scratch/glib list=$scratch/list
mkdir -p "$glib/test" "$glib/tools"
: >"$list"
declare -A gname
for m in "${mutations[@]}"; do
	name=${m%%@@*}; rest=${m#*@@}
	file=${rest%%@@*}; rest=${rest#*@@}
	old=${rest%%@@*}; rest=${rest#*@@}
	new=${rest%%@@*}; rest=${rest#*@@}
	test=${rest%%@@*}; be=${rest#*@@}
	idx=$((idx + 1))
	if [ "$mode" = host ] && [ "$be" = native ]; then
		guest_skipped=$((guest_skipped + 1))
		continue
	fi
	[ "$mode" = guest ] && [ "$be" != native ] && continue
	rm -rf "$scratch/t" && mkdir -p "$scratch/t"
	cp -r "$top/src" "$top/test" "$top/tools" "$top/Makefile" "$top/kernel" "$top/scripts" "$scratch/t/"
	cp "$scratch/t/$file" "$scratch/orig"
	OLD=$old NEW=$new perl -0pi -e 's/\Q$ENV{OLD}\E/$ENV{NEW}/' "$scratch/t/$file"
	if cmp -s "$scratch/orig" "$scratch/t/$file"; then
		echo "BROKEN MUTATION (sed matched nothing): $name"
		fail=$((fail + 1))
		continue
	fi
	if [ "$mode" = guest ]; then
		if ! make -s -C "$scratch/t" B=build STATIC=1 PROG_LDFLAGS=-static "build/test/$test" \
			>"$scratch/log" 2>&1; then
			echo "BROKEN MUTATION (does not build): $name"; tail -5 "$scratch/log"
			fail=$((fail + 1))
			continue
		fi
		cp "$scratch/t/build/test/$test" "$glib/test/m$idx-$test"
		gname[$idx]="$name -> $test"
		for try in 1 2 3; do
			# no UEPOLL_BACKEND: auto must pick native in the guest
			echo "60 @mut-$idx-$try lib/test/m$idx-$test" >>"$list"
		done
		continue
	fi
	# the build scripts' tests (test/scripts/): no backend, no build
	if [ "$be" = script ]; then
		"$scratch/t/test/scripts/$test.sh" >"$scratch/out" 2>&1 </dev/null
		rc=$?
		if [ $rc = 1 ]; then
			echo "caught: $name -> $test exit 1: $(grep -m1 '^FAIL' "$scratch/out")"
			pass=$((pass + 1))
		else
			echo "NOT CAUGHT: $name: $test exit $rc"
			fail=$((fail + 1))
		fi
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
if [ "$mode" = guest ] && [ -s "$list" ]; then
	# one boot for all: a mutant is caught when one of its tries fails
	# (and is not skipped: the guest has the native backend)
	"$top/vm/check" --no-builtin --lib "$glib" --list "$list" --quiet >"$scratch/vm.out" 2>&1
	# vm/check's results directory: results.tsv, one row per program
	# (label, verdict, seconds, log), and out/LABEL.log (vm/README.md)
	res=$(sed -n 's/^results: *//p' "$scratch/vm.out" | tail -n 1)
	if [ -z "$res" ] || [ ! -f "$res/results.tsv" ]; then
		echo "mutations: the guest run did not happen:"; tail -n 20 "$scratch/vm.out"
		exit 1
	fi
	if [ -s "$res/kernel-reports.txt" ]; then
		echo "mutations: the kernel reported problems:"; head "$res/kernel-reports.txt"
		fail=$((fail + 1))
	fi
	for i in $(printf "%s\n" "${!gname[@]}" | sort -n); do
		rows=$(awk -F '\t' -v p="mut-$i-" 'NR > 1 && substr($1, 1, length(p)) == p' "$res/results.tsv")
		verdicts=$(cut -f2 <<<"$rows" | grep . | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
		# caught: one of its tries failed (a timeout too)
		flog=$(awk -F '\t' '$2 == "FAIL" || $2 == "TIMEOUT" { print $4; exit }' <<<"$rows")
		if [ -n "$flog" ]; then
			why=$(grep -a -m1 -E '^FAIL |timeout' "$res/$flog" 2>/dev/null)
			echo "caught: ${gname[$i]} (native, guest):${verdicts:+ $verdicts}${why:+: $why}"
			pass=$((pass + 1))
		else
			echo "NOT CAUGHT: ${gname[$i]} on native in the guest: ${verdicts:-not run}"
			fail=$((fail + 1))
		fi
	done
fi
echo "mutations ($mode): $pass caught, $fail not caught"
[ "$mode" = host ] && [ $guest_skipped -gt 0 ] &&
	echo "($guest_skipped native mutations run in the guest: make vm-check)"
[ $fail = 0 ]
