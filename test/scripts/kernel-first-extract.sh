#!/bin/bash
# SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
#
# kernel/build's first-extraction path, the one every new machine takes and
# no warm cache ever sees again, run in seconds: a small fake kernel tree
# packed like Debian's linux-source tarball (UEPOLL_LINUX_TARBALL), an
# empty cache (UEPOLL_CACHE), `kernel/build --prepare-only`, started from a
# make (`make -w -s -k -j2`: MAKEFLAGS, MAKELEVEL, a jobserver) in a
# hostile environment: kbuild's O= and ARCH=, GIT_DIR and GIT_WORK_TREE
# pointing elsewhere, a git configuration whose commits fail (gpgsign with
# a failing gpg, hooks that refuse), TAR_OPTIONS that flatten the tree,
# CDPATH.  None of it may change the result.  Then the error paths: a
# tarball of the wrong version fails with one line naming both versions
# and what to do, and leaves nothing behind; an interrupted extraction is
# redone.  Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/../.." && pwd)
. "$ROOT/scripts/env.sh"
KB=$ROOT/kernel/build

for c in git tar xz make awk; do
	command -v $c >/dev/null || { echo "SKIP: $c missing"; exit 77; }
done
tmp=$(mktemp -d /tmp/uepoll-extract.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

base=$(sed -n '1{s/[[:space:]]//g;p}' "$ROOT/kernel/BASE")
IFS=. read -r v p s <<<"$base"

# fake_tarball NAME SUBLEVEL: linux-source-X.Y/ with a kernel-like top
# Makefile (its kernelversion target too) and an ignore-everything
# .gitignore, as Debian's tree has
fake_tarball() {
	local d=$tmp/src-$1
	mkdir -p "$d/linux-source-$v.$p/include/linux"
	cat >"$d/linux-source-$v.$p/Makefile" <<MK
# SPDX-License-Identifier: GPL-2.0
VERSION = $v
PATCHLEVEL = $p
SUBLEVEL = $2
EXTRAVERSION =
NAME = Baby Opossum Posse

kernelversion:
	@echo \$(VERSION).\$(PATCHLEVEL).\$(SUBLEVEL)
MK
	echo '*' >"$d/linux-source-$v.$p/.gitignore"
	echo '/* fake */' >"$d/linux-source-$v.$p/include/linux/eventpoll.h"
	tar -C "$d" -cJf "$tmp/$1.tar.xz" "linux-source-$v.$p"
}
fake_tarball good "$s"
fake_tarball wrong "$((s + 1))"

# the hostile environment
mkdir -p "$tmp/home" "$tmp/hooks" "$tmp/tmpl/hooks" "$tmp/notarepo" "$tmp/parent"
printf '#!/bin/sh\necho hook refuses >&2\nexit 1\n' >"$tmp/hooks/pre-commit"
cp "$tmp/hooks/pre-commit" "$tmp/hooks/commit-msg"
cp "$tmp/hooks/pre-commit" "$tmp/tmpl/hooks/pre-commit"
chmod +x "$tmp/hooks/"* "$tmp/tmpl/hooks/"*
cat >"$tmp/home/.gitconfig" <<GC
[commit]
	gpgsign = true
[tag]
	gpgsign = true
[gpg]
	program = false
[core]
	hooksPath = $tmp/hooks
[init]
	templateDir = $tmp/tmpl
[user]
	useConfigOnly = true
GC
cat >"$tmp/parent/Makefile" <<'MK'
# a make that calls the project, as a user's or a distribution's would
run:
	+"$(KB)" --prepare-only >"$(OUT)" 2>"$(ERR)"; echo $$? >"$(RC)"
MK

# run_kb NAME TARBALL CACHE: kernel/build --prepare-only under the parent
# make in the hostile environment; sets rc, out (stdout), err (stderr)
run_kb() {
	env HOME="$tmp/home" GIT_DIR="$tmp/notarepo" GIT_WORK_TREE="$tmp" \
	    O="$tmp/elsewhere" ARCH=arm64 KBUILD_OUTPUT="$tmp/elsewhere" \
	    TAR_OPTIONS=--strip-components=1 CDPATH=".:$tmp" \
	    UEPOLL_LINUX_TARBALL="$2" UEPOLL_CACHE="$3" \
	    make -w -s -k -j2 -C "$tmp/parent" run KB="$KB" \
		OUT="$tmp/$1.out" ERR="$tmp/$1.err" RC="$tmp/$1.rc" >/dev/null 2>&1
	rc=$(cat "$tmp/$1.rc" 2>/dev/null || echo none)
	out=$(cat "$tmp/$1.out" 2>/dev/null)
	err=$(cat "$tmp/$1.err" 2>/dev/null)
}

# 1. the first extraction
cache=$tmp/cache
run_kb first "$tmp/good.tar.xz" "$cache"
pristine=$cache/linux-$base
if [ "$rc" != 0 ]; then
	fail "first extraction: exit $rc: $(tail -n 1 <<<"$err")"
	sed 's/^/    /' <<<"$err" | tail -n 15
else
	ok "first extraction under make -w -s -k -j2, hostile environment"
fi
[ "$(tail -n 1 <<<"$out")" = "$pristine" ] ||
	fail "last stdout line is '$(tail -n 1 <<<"$out")', not $pristine"
g() { git -C "$pristine" "$@"; }
if [ "$(g rev-parse -q --verify 'base^{commit}' 2>/dev/null)" != "" ] &&
   [ "$(g rev-parse base^{commit})" = "$(g rev-parse HEAD)" ]; then
	ok "pristine tree recorded, tag base = HEAD"
else
	fail "no tag 'base' on the pristine tree's HEAD"
fi
[ "$(g ls-files | sort | tr '\n' ' ')" = ".gitignore Makefile include/linux/eventpoll.h " ] &&
	ok "every file committed (the ignore-everything .gitignore forced)" ||
	fail "committed files: $(g ls-files | tr '\n' ' ')"
[ -z "$(g status --porcelain --ignored)" ] || fail "pristine tree not clean: $(g status --porcelain --ignored | head -3)"
[ "$(g log -1 --format=%an)" = "uepoll developers" ] ||
	fail "commit author '$(g log -1 --format=%an)' (user configuration leaked in)"
[ -e "$tmp/elsewhere" ] && fail "O=/KBUILD_OUTPUT= of the caller was used"
[ -e "$tmp/notarepo/objects" ] || [ -e "$tmp/notarepo/HEAD" ] && fail "the caller's GIT_DIR was written"
[ -e "$cache/.extract" ] && fail "$cache/.extract left behind"

# 2. again: nothing to do
run_kb second "$tmp/good.tar.xz" "$cache"
if [ "$rc" = 0 ] && ! grep -q extracting <<<"$err" && [ "$(tail -n 1 <<<"$out")" = "$pristine" ]; then
	ok "second run reuses the pristine tree"
else
	fail "second run: exit $rc, stderr: $(tr '\n' ' ' <<<"$err" | cut -c1-300)"
fi

# 3. an interrupted first run (tree extracted, never recorded) is redone
rm -rf "$pristine/.git"
echo junk >"$pristine/junk"
run_kb redo "$tmp/good.tar.xz" "$cache"
if [ "$rc" = 0 ] && grep -q extracting <<<"$err" && [ ! -e "$pristine/junk" ] &&
   git -C "$pristine" rev-parse -q --verify base >/dev/null; then
	ok "an unrecorded tree is extracted again"
else
	fail "interrupted extraction not redone: exit $rc, junk $([ -e "$pristine/junk" ] && echo kept || echo gone)"
fi

# 4. the wrong version: one line that says what, why and what next
cache2=$tmp/cache2
run_kb wrong "$tmp/wrong.tar.xz" "$cache2"
last=$(tail -n 1 <<<"$err")
want="kernel/build: error: $tmp/wrong.tar.xz contains Linux $v.$p.$((s + 1)), kernel/BASE pins $base: install linux-source-$v.$p=$base-* or port the series and update kernel/BASE"
if [ "$rc" != 0 ] && [ "$rc" != none ] && [ "$last" = "$want" ]; then
	ok "wrong version refused: $last"
else
	fail "wrong version: exit $rc, last line '$last'"
fi
left=$(ls -A "$cache2" 2>/dev/null | grep -v '^\.lock$' | tr '\n' ' ')
[ -z "$left" ] && ok "nothing left behind after the refusal" || fail "left behind: $left"

# 5. an unreadable tarball
run_kb missing "$tmp/none.tar.xz" "$tmp/cache3"
last=$(tail -n 1 <<<"$err")
[ "$rc" != 0 ] && [[ $last == "kernel/build: error: UEPOLL_LINUX_TARBALL=$tmp/none.tar.xz is not readable" ]] &&
	ok "missing tarball: $last" || fail "missing tarball: exit $rc, last line '$last'"

[ $fails = 0 ] && { echo "PASS: kernel/build first extraction"; exit 0; }
echo "FAIL: $fails check(s)"
exit 1
