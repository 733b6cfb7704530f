#!/bin/bash
# SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
#
# The ratio's interval, end to end.  uepoll-bench: a short tcp run of the
# library's epoll server against plain epoll (epoll-lt), 4, 6 and 8
# repeats; its ratio_lo and ratio_hi must be the k-th smallest and largest
# of the repeats' own ratios (recomputed here from the per-repeat figures
# on stderr: k = 1 for 6, 2 for 8) and empty for 4.  scripts/bench-report:
# results.csv has 11 fields on every line, a line of a run before the
# interval (9 fields) read with it empty; the verdicts say what the
# interval decides: met, missed, or not decided, each case on a line made
# for it.  Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/../.." && pwd)
. "$ROOT/scripts/env.sh"

command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
# (check-scripts runs before `make all`: build the tools it runs, the
# bench and the tcp scenario's server and client, in the tree's build/)
make -s -C "$ROOT" tools >/dev/null || { echo "FAIL: cannot build the tools (make tools)"; exit 1; }
B=$ROOT/build
tmp=$(mktemp -d /tmp/uepoll-intervals.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# ---- uepoll-bench -------------------------------------------------------------
for R in 4 6 8; do
	if ! "$B/tools/uepoll-bench" tcp -B epoll,epoll-lt -R $R -c 10 -n 200 -m et \
		>"$tmp/r$R.csv" 2>"$tmp/r$R.err"; then
		fail "uepoll-bench tcp -R $R: $(tail -1 "$tmp/r$R.err")"
		continue
	fi
	python3 - "$R" "$tmp/r$R.csv" "$tmp/r$R.err" <<'EOF' || fails=$((fails + 1))
import re, sys
R, csvp, errp = int(sys.argv[1]), sys.argv[2], sys.argv[3]
k = {4: 0, 6: 1, 8: 2}[R]
per = {}     # (backend, repeat) -> req_per_s
for l in open(errp):
    m = re.match(r"# tcp (\S+) \S+ r(\d+): req_per_s=(\S+)", l)
    if m:
        per[m.group(1), int(m.group(2))] = float(m.group(3))
ratios = sorted(per["epoll-lt", r] / per["epoll", r] for r in range(R))
line = [l.rstrip("\n").split(",") for l in open(csvp)
        if l.startswith("CSV,tcp,epoll-lt,") and ",req_per_s," in l]
if len(line) != 1 or len(line[0]) != 12:
    sys.exit("FAIL: R=%d: no 12-field req_per_s line of epoll-lt: %r" % (R, line))
lo, hi = line[0][9], line[0][10]
if k == 0:
    if lo or hi:
        sys.exit("FAIL: R=4: an interval (%s, %s) where there is none" % (lo, hi))
    print("ok: R=4: no interval")
    sys.exit(0)
want = (ratios[k - 1], ratios[R - k])
# the per-repeat figures on stderr have 4 significant digits
for got, w in zip((float(lo), float(hi)), want):
    if abs(got - w) > 0.002 * w:
        sys.exit("FAIL: R=%d: interval (%s, %s), the repeats' ratios %s give %s" %
                 (R, lo, hi, ["%.4f" % x for x in ratios], ["%.4f" % x for x in want]))
print("ok: R=%d: interval %s, %s = order statistics %d and %d of %s" %
      (R, lo, hi, k, R + 1 - k, ["%.3f" % x for x in ratios]))
EOF
done

# ---- scripts/bench-report -------------------------------------------------------
out=$tmp/out
mkdir -p "$out/logs"
"$B/tools/uepoll-bench" --describe >"$out/logs/describe.tsv" || fail "uepoll-bench --describe"
{
	cat "$tmp/r6.csv"
	p='threads=4;conc=64;seconds=5'
	# a run before the interval: 9 fields after CSV,
	echo "CSV,memcached,stock-epoll,$p;defer,ops_per_s,100,90,110,1.0000,host"
	echo "CSV,memcached,epoll,$p;defer,ops_per_s,90,80,100,0.9000,host"
	# one line per thing an interval can say of >= 0.98
	echo "CSV,memcached,stock-epoll,$p,ops_per_s,100,90,110,1.0000,1.0000,1.0000,guest"
	echo "CSV,memcached,native,$p,ops_per_s,101,90,110,1.0100,0.9900,1.0300,guest"
	echo "CSV,memcached,uring,$p,ops_per_s,95,90,110,0.9500,0.9000,0.9700,guest"
	echo "CSV,memcached,epoll,$p,ops_per_s,97,90,110,0.9700,0.9000,1.0500,guest"
	echo "CSV,memcached,epoll,$p,garbage"
} >"$out/logs/raw-host.csv"
python3 "$ROOT/scripts/bench-report" "$out" >"$tmp/report.out" 2>&1 ||
	fail "bench-report: $(tail -3 "$tmp/report.out")"
if [ -f "$out/results.csv" ]; then
	bad=$(awk -F, 'NF != 11' "$out/results.csv")
	[ -z "$bad" ] || fail "results.csv: lines without 11 fields: $bad"
	grep -q '^scenario,backend,params,metric,median,min,max,ratio_vs_epoll,ratio_lo,ratio_hi,env$' \
		"$out/results.csv" || fail "results.csv: header"
	grep -q "^memcached,epoll,threads=4;conc=64;seconds=5;defer,ops_per_s,90,80,100,0.9000,,,host$" \
		"$out/results.csv" || fail "results.csv: the 9-field line not padded"
	grep -q garbage "$out/results.csv" && fail "results.csv: a malformed line kept"
fi
t=$out/table.txt
check() {	# PATTERN WHAT
	grep -q -- "$1" "$t" 2>/dev/null && echo "ok: $2" || fail "table.txt: $2: no line matching '$1'"
}
check 'guest memcached native .*1.01x: met (90 % interval \[0.99, 1.03\]: met with 90 % confidence)' \
	"an interval above 0.98"
check 'guest memcached uring .*0.95x: MISSED (90 % interval \[0.90, 0.97\]: missed with 90 % confidence)' \
	"an interval below 0.98"
check 'guest memcached epoll .*0.97x: MISSED (90 % interval \[0.90, 1.05\]: spans 0.98: this run does not decide)' \
	"an interval across 0.98"
check 'host memcached epoll .*defer >= 0.98x stock-epoll: 0.90x: MISSED (a run without intervals)' \
	"a run before intervals"
check 'host *epoll-lt .*req_per_s .*\[' "the table's interval column"
[ $fails = 0 ] || { echo "bench-intervals: $fails failed"; exit 1; }
echo "bench-intervals: all passed"
