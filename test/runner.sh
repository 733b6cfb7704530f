#!/bin/bash
# SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
#
# test/runner.sh [--label L] [--timeout SEC] [--wrapper CMD] [--only-threaded] BUILDDIR
#
# Runs every test program of BUILDDIR/test (and uepoll-stress runs) once per
# backend the library knows (BUILDDIR/tools/uepoll-backends; UEPOLL_BACKEND
# set per run), each under a
# timeout.  Exit status of a test: 0 pass, 77 skip, anything else fail.
# A backend that is unavailable has all its tests skipped, with the reason.
# UEPOLL_BACKEND set by the caller restricts the run to that backend.
# Ends with one line per backend, `<backend>: N passed, N failed, N skipped`,
# and `N passed, N failed, N skipped`.  Exit 1 if anything failed.
set -uo pipefail
. "$(dirname -- "$0")/../scripts/env.sh"

label=plain timeout_s=60 wrapper="" only_threaded=0
while [ $# -gt 1 ]; do
	case $1 in
	--label) label=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--wrapper) wrapper=$2; shift 2 ;;
	--only-threaded) only_threaded=1; shift ;;
	*) break ;;
	esac
done
B=${1:?usage: runner.sh [options] BUILDDIR}
forced=${UEPOLL_BACKEND:-}
unset UEPOLL_BACKEND

stress=$B/tools/uepoll-stress
iters=20000
[ -n "$wrapper" ] && iters=2000

# The tests are the programs of BUILDDIR/test, built from test/*.c.  One
# that starts threads says so in its source, on a line of its own:
#	/* uepoll-test: threaded */
# --only-threaded (the TSan pass) runs those and the uepoll-stress runs.
src=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
declare -A threaded=()
tests=()
for t in "$B"/test/*; do
	[ -x "$t" ] || continue
	t=$(basename "$t")
	tests+=("$t")
	grep -qs '^/\* uepoll-test:.*\<threaded\>' "$src/$t.c" && threaded[$t]=1
done
if [ $only_threaded = 1 ] && [ ${#threaded[@]} = 0 ]; then
	echo "runner.sh: error: no test of $B/test has a threaded marker in $src/*.c" >&2
	exit 1
fi
# uepoll-stress, without and with churn (cmd_of): a thread per producer
tests+=(stress stress-churn)
threaded[stress]=1 threaded[stress-churn]=1

cmd_of() {
	case $1 in
	stress) echo "$stress -t 4 -i $iters -q" ;;
	stress-churn) echo "$stress -t 4 -i $iters -c -q" ;;
	*) echo "$B/test/$1" ;;
	esac
}

echo "== test suite: $label ($B) =="
tot_p=0 tot_f=0 tot_s=0
summary=()
# the backends and whether each is usable here: the library says
# (tools/uepoll-backends: "NAME available" / "NAME unavailable: WHY")
backends=$("$B/tools/uepoll-backends") ||
	{ echo "runner: error: $B/tools/uepoll-backends failed: build the tools (make)"; exit 1; }
while read -r be avail; do
	p=0 f=0 s=0
	reason=""
	if [ -n "$forced" ] && [ "$forced" != "$be" ]; then
		reason="UEPOLL_BACKEND=$forced"
	elif [ "$avail" != available ]; then
		reason=$avail
	fi
	for t in "${tests[@]}"; do
		if [ $only_threaded = 1 ] && [ -z "${threaded[$t]:-}" ]; then
			continue
		fi
		if [ -n "$reason" ]; then
			s=$((s + 1))
			continue
		fi
		start=$(date +%s%N)
		# shellcheck disable=SC2046
		out=$(UEPOLL_BACKEND=$be timeout -k 5 "$timeout_s" $wrapper $(cmd_of "$t") 2>&1 </dev/null)
		rc=$?
		ms=$((($(date +%s%N) - start) / 1000000))
		dt=$((ms / 1000)).$(printf '%03d' $((ms % 1000)))
		case $rc in
		0) p=$((p + 1)); echo "PASS $be $t (${dt}s)" ;;
		77) s=$((s + 1)); echo "SKIP $be $t: $(echo "$out" | grep -m1 SKIP | sed 's/^SKIP: //')" ;;
		*) f=$((f + 1))
		   [ $rc = 124 ] && out="$out
(timeout after ${timeout_s}s)"
		   echo "FAIL $be $t (exit $rc, ${dt}s)"
		   echo "$out" | tail -n 20 | sed 's/^/    /' ;;
		esac
	done
	[ -n "$reason" ] && echo "SKIP $be: all tests: $reason"
	summary+=("$be: $p passed, $f failed, $s skipped")
	tot_p=$((tot_p + p)) tot_f=$((tot_f + f)) tot_s=$((tot_s + s))
done <<<"$backends"
echo "== summary: $label =="
printf '%s\n' "${summary[@]}"
echo "$tot_p passed, $tot_f failed, $tot_s skipped"
[ $tot_f = 0 ]
