#!/bin/bash
# SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
#
# scripts/deps without touching the machine: dpkg-query, apt-get and id
# are stand-ins on PATH.  Nothing missing: silent, exit 0, no apt-get.
# Missing as a user: exit 1, one last line naming the packages and the
# command.  Missing as root: apt-get update, then install of exactly the
# missing ones.  A failing apt-get update: exit 1 with one line saying so.
# Groups imply their prerequisites (guest -> kernel).  Exit 0/1/77.
set -uo pipefail
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/../.." && pwd)
. "$ROOT/scripts/env.sh"
tmp=$(mktemp -d /tmp/uepoll-deps.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

mkdir -p "$tmp/bin"
# dpkg-query -W -f=... PKG...: "PKG ii" for the names in $tmp/installed
cat >"$tmp/bin/dpkg-query" <<EOF2
#!/bin/bash
shift 2
for p in "\$@"; do grep -qx "\$p" "$tmp/installed" && echo "\$p ii "; done
exit 0
EOF2
cat >"$tmp/bin/id" <<EOF2
#!/bin/sh
cat "$tmp/uid"
EOF2
# apt-get: logs its command without the -o options, and "nolockwait"
# when it was not told to wait for dpkg's lock
cat >"$tmp/bin/apt-get" <<EOF2
#!/bin/bash
wait=0
while [ "\$1" = -o ]; do
	case \$2 in DPkg::Lock::Timeout=[1-9]*) wait=1 ;; esac
	shift 2
done
[ \$wait = 1 ] || echo nolockwait >>"$tmp/apt.log"
echo "apt-get \$*" >>"$tmp/apt.log"
[ "\$1" = update ] && exit \$(cat "$tmp/update-rc")
exit 0
EOF2
chmod +x "$tmp/bin/"*
run() { PATH="$tmp/bin:$PATH" "$ROOT/scripts/deps" "$@" >"$tmp/out" 2>"$tmp/err"; }

all=$("$ROOT/scripts/deps" --list build check kernel guest bench)
build=$("$ROOT/scripts/deps" --list build)
guest=$("$ROOT/scripts/deps" --list guest)
for p in qemu-system-x86 linux-source-6.12 flex; do
	grep -qx "$p" <<<"$guest" || fail "group guest lacks $p"
done
grep -qx liburing-dev <<<"$build" && ok "groups: build has liburing-dev, guest implies kernel" ||
	fail "group build lacks liburing-dev"

# 1. everything installed
printf '%s\n' $all >"$tmp/installed"; echo 1000 >"$tmp/uid"; echo 0 >"$tmp/update-rc"
rm -f "$tmp/apt.log"
run guest bench
[ $? = 0 ] && [ ! -s "$tmp/out" ] && [ ! -s "$tmp/err" ] && [ ! -e "$tmp/apt.log" ] &&
	ok "nothing missing: silent, no apt-get" || fail "nothing missing: $(cat "$tmp/err")"

# 2. a user with two packages missing
grep -vx -e liburing-dev -e pkgconf <<<"$all" >"$tmp/installed"
run
rc=$?
last=$(tail -n 1 "$tmp/err")
[ $rc = 1 ] && [ "$last" = "deps: error: missing Debian packages: liburing-dev pkgconf; install them as root: apt-get update && apt-get install --no-install-recommends liburing-dev pkgconf" ] &&
	[ ! -e "$tmp/apt.log" ] && ok "user: $last" || fail "user: exit $rc, '$last'"

# 3. root: update, then exactly the missing ones, each waiting for a dpkg
# lock another apt holds (a machine that just booted runs one)
echo 0 >"$tmp/uid"
run build
rc=$?
if [ $rc = 0 ] && [ "$(sed -n 1p "$tmp/apt.log")" = "apt-get update -q" ] &&
   [ "$(sed -n 2p "$tmp/apt.log")" = "apt-get install -y -q --no-install-recommends liburing-dev pkgconf" ]; then
	ok "root: apt-get update, then install liburing-dev pkgconf"
else
	fail "root: exit $rc, apt: $(tr '\n' ';' <"$tmp/apt.log")"
fi

# 4. root, apt-get update fails
rm -f "$tmp/apt.log"; echo 100 >"$tmp/update-rc"
run build
rc=$?
last=$(tail -n 1 "$tmp/err")
[ $rc = 1 ] && [[ $last == "deps: error: apt-get update failed"* ]] &&
	! grep -q install "$tmp/apt.log" && ok "update failure: $last" || fail "update failure: exit $rc, '$last'"

# 5. an unknown group
run nosuch
[ $? = 2 ] && grep -q "unknown group 'nosuch'" "$tmp/err" && ok "unknown group refused" ||
	fail "unknown group: $(cat "$tmp/err")"

[ $fails = 0 ] && { echo "PASS: scripts/deps"; exit 0; }
exit 1
