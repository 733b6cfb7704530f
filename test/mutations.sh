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
#
# A mutation is a file, test/mutations/BACKEND-WHAT.diff (fake-native-WHAT.diff:
# a native rule caught on the host by a test of the kernel forged in
# test/fake_kernel.h, run as Backend: epoll): a unified diff
# from the tree's root (`diff -u -p --label a/F --label b/F`, or `git
# diff`), applied with `patch -p1 --fuzz=0`.  The lines before its first
# "---" (patch skips them) say what it breaks and where it is caught:
#   Mutation: the rule it breaks, in a few words
#   Test: the test program (test/TEST.c), or test/scripts/TEST.sh
#   Backend: uring | epoll (on the host) | native (in the guest, --guest)
#            | script (TEST.sh run once, no build; must exit 1)
#   Env:     optional VAR=VALUE words the test runs with (native's
#            UEPOLL_NATIVE_LEVEL=epoll: the level epoll's design)
# A mutation that no longer applies exactly (other context lines, or the
# same ones at another line number) fails the run: the code moved under
# it; make the diff again against the current code, breaking the same
# rule.
#
# test/mutations.sh --refresh [FILE.diff...] (default: all) rewrites, in
# the work tree, the mutations that still apply but at another line
# number, as diffs of the current code with the same header.
set -uo pipefail

top=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
. "$top/scripts/env.sh"
mode=host
[ "${1:-}" = --guest ] && mode=guest
[ "${1:-}" = --refresh ] && mode=refresh
scratch=$(mktemp -d /tmp/uepoll-mut.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

# header field $1 of mutation file $2 (empty if absent)
mut_field() {
	sed -n -e '/^--- /q' -e "s/^$1:[[:space:]]*//p" "$2" | head -n 1
}

# the files mutation $1 changes (its "+++ b/FILE" lines)
mut_files() {
	sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$1"
}

# apply mutation $1 to the tree $2: 0 applied exactly; 1 does not apply
# (printed: patch's complaint); 2 applies only at another line number
# (printed: patch's "offset" lines; the tree is not changed)
mut_apply() {
	local out

	out=$(patch -d "$2" -p1 -f --fuzz=0 --dry-run --no-backup-if-mismatch \
		-i "$1" 2>&1 </dev/null) || { echo "$out"; return 1; }
	if grep -qiE 'offset|fuzz' <<<"$out"; then
		grep -iE 'offset|fuzz' <<<"$out"
		return 2
	fi
	patch -d "$2" -p1 -f -s --fuzz=0 --no-backup-if-mismatch -i "$1" </dev/null
}

# --refresh: the same change as a diff of the current code
if [ "$mode" = refresh ]; then
	shift
	[ $# -gt 0 ] || set -- "$top"/test/mutations/*.diff
	rc=0
	for mf in "$@"; do
		mf=$(realpath -- "$mf")
		rm -rf "$scratch/a" "$scratch/b"
		for f in $(mut_files "$mf"); do
			mkdir -p "$scratch/a/$(dirname "$f")"
			cp "$top/$f" "$scratch/a/$f"
		done
		cp -r "$scratch/a" "$scratch/b"
		mut_apply "$mf" "$scratch/b" >"$scratch/out"
		case $? in
		0) echo "unchanged: $mf"; continue ;;
		1) echo "MUTATION DOES NOT APPLY: $mf: break the same rule in the current code by hand"
		   sed 's/^/    /' "$scratch/out"; rc=1; continue ;;
		esac
		patch -d "$scratch/b" -p1 -f -s --fuzz=0 --no-backup-if-mismatch -i "$mf" </dev/null
		{
			sed '/^--- /,$d' "$mf"
			for f in $(mut_files "$mf"); do
				(cd "$scratch" && diff -u -p --label "a/$f" --label "b/$f" "a/$f" "b/$f")
			done
		} >"$scratch/new"
		cp "$scratch/new" "$mf"
		echo "refreshed: $mf"
	done
	exit $rc
fi

pass=0 fail=0 idx=0 guest_skipped=0
glib=$scratch/glib list=$scratch/list
mkdir -p "$glib/test" "$glib/tools"
: >"$list"
declare -A gname
mutations=("$top"/test/mutations/*.diff)
[ -f "${mutations[0]}" ] || { echo "mutations: none in $top/test/mutations"; exit 1; }
for mf in "${mutations[@]}"; do
	name=$(mut_field Mutation "$mf")
	test=$(mut_field Test "$mf")
	be=$(mut_field Backend "$mf")
	menv=$(mut_field Env "$mf")
	name=${name:-$(basename "$mf" .diff)}
	idx=$((idx + 1))
	if [ -z "$test" ] || [ -z "$be" ] || [ -z "$(mut_files "$mf")" ]; then
		echo "BROKEN MUTATION (no Test:, Backend: or +++ line): $mf"
		fail=$((fail + 1))
		continue
	fi
	if [ "$mode" = host ] && [ "$be" = native ]; then
		guest_skipped=$((guest_skipped + 1))
		continue
	fi
	[ "$mode" = guest ] && [ "$be" != native ] && continue
	rm -rf "$scratch/t" && mkdir -p "$scratch/t"
	cp -r "$top/src" "$top/test" "$top/tools" "$top/Makefile" "$top/kernel" "$top/scripts" "$scratch/t/"
	mut_apply "$mf" "$scratch/t" >"$scratch/out"
	case $? in
	1) echo "MUTATION DOES NOT APPLY: $(mut_files "$mf" | paste -sd ' ') — the code drifted, regenerate it: ${mf#"$top"/} ($name)"
	   sed 's/^/    /' "$scratch/out"
	   fail=$((fail + 1))
	   continue ;;
	2) echo "MUTATION DOES NOT APPLY: $(mut_files "$mf" | paste -sd ' ') — the code drifted (the same lines, elsewhere), regenerate it: test/mutations.sh --refresh ${mf#"$top"/}"
	   sed 's/^/    /' "$scratch/out"
	   fail=$((fail + 1))
	   continue ;;
	esac
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
			echo "60 @mut-$idx-$try${menv:+ $menv} lib/test/m$idx-$test" >>"$list"
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
		# shellcheck disable=SC2086 # menv: VAR=VALUE words
		env $menv UEPOLL_BACKEND=$be timeout 20 "$scratch/t/build/test/$test" >"$scratch/out" 2>&1 </dev/null
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
	log=$(sed -n 's/^log: *//p' "$scratch/vm.out" | tail -n 1)
	if [ -z "$log" ] || [ ! -f "$log" ]; then
		echo "mutations: the guest run did not happen:"; tail -n 20 "$scratch/vm.out"
		exit 1
	fi
	if [ -s "$(dirname "$log")/kernel-reports.txt" ]; then
		echo "mutations: the kernel reported problems:"; head "$(dirname "$log")/kernel-reports.txt"
		fail=$((fail + 1))
	fi
	for i in $(printf "%s\n" "${!gname[@]}" | sort -n); do
		res=$(grep -a "^UEPOLL-GUEST-TEST: [A-Z]* mut-$i-" "$log" | awk '{ print $2 }' | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
		if grep -aq "^UEPOLL-GUEST-TEST: FAIL mut-$i-" "$log"; then
			why=$(grep -a -m1 -E '^FAIL |timeout' "$(dirname "$log")/out/mut-$i-1.log" 2>/dev/null)
			echo "caught: ${gname[$i]} (native, guest):${res:+ $res}${why:+: $why}"
			pass=$((pass + 1))
		else
			echo "NOT CAUGHT: ${gname[$i]} on native in the guest: ${res:-not run}"
			fail=$((fail + 1))
		fi
	done
fi
echo "mutations ($mode): $pass caught, $fail not caught"
[ "$mode" = host ] && [ $guest_skipped -gt 0 ] &&
	echo "($guest_skipped native mutations run in the guest: make vm-check)"
[ $fail = 0 ]
