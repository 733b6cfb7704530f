# SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
#
# scripts/env.sh - sourced (never run) by every script of the project that
# runs make, git, tar or a compiler, or reads another program's output:
#
#	. "$ROOT/scripts/env.sh"
#
# A script is started by a user's shell, by the project's Makefile, by a
# make that calls the project's Makefile (`make -w -C uepoll run`), by CI.
# Whatever the caller had in its environment must not change what the
# script does or what it parses:
#
# - make: a calling make exports MAKEFLAGS/MFLAGS (-w, -s, -k, -j and its
#   jobserver fds, -B, -e, -i, command-line variables), MAKELEVEL (which
#   turns on "Entering directory" lines) and MAKEOVERRIDES; GNUMAKEFLAGS and
#   MAKEFILES are read by every make.  The scripts' own makes start clean.
# - kbuild reads O, KBUILD_OUTPUT, KCONFIG_CONFIG, ARCH, CROSS_COMPILE,
#   LLVM, V, W, C, M, KCFLAGS... from the environment: a caller's `O=dir`
#   would move the kernel build out of its cache directory.
# - git: the repository-local variables (GIT_DIR, GIT_WORK_TREE,
#   GIT_INDEX_FILE... as `git rev-parse --local-env-vars` lists them) are
#   set by git hooks and `git rebase -x`; they would point our git calls
#   at the caller's repository.  The project's private repositories (the
#   cached kernel trees) also ignore the user's and the system's git
#   configuration: see uepoll_git_private below.
# - tar, xz, gzip read TAR_OPTIONS, XZ_OPT/XZ_DEFAULTS and GZIP.
# - cd prints the directory when CDPATH finds it, which corrupts
#   `$(cd dir && pwd)`.
# - the locale changes number formats (printf '%.2f', sort -g) and
#   messages: the scripts parse in the C locale.  Output stays bytes, so
#   UTF-8 text passes through unchanged.
#
# Variables that are the project's own interface (UEPOLL_*, CC, CFLAGS,
# RUN_*, BENCH_FLAGS, VM_*) are kept.

unset MAKEFLAGS MFLAGS GNUMAKEFLAGS MAKELEVEL MAKEOVERRIDES MAKEFILES \
	MAKE_TERMOUT MAKE_TERMERR MAKE_RESTARTS
unset O KBUILD_OUTPUT KBUILD_EXTMOD KBUILD_VERBOSE KBUILD_DEFCONFIG \
	KCONFIG_CONFIG KCONFIG_ALLCONFIG KCFLAGS KCPPFLAGS KAFLAGS KRUSTFLAGS \
	ARCH SUBARCH CROSS_COMPILE LLVM LLVM_IAS V W C M INSTALL_MOD_PATH \
	INSTALL_PATH
unset GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_CONFIG GIT_CONFIG_PARAMETERS \
	GIT_CONFIG_COUNT GIT_OBJECT_DIRECTORY GIT_DIR GIT_WORK_TREE \
	GIT_IMPLICIT_WORK_TREE GIT_GRAFT_FILE GIT_INDEX_FILE \
	GIT_NO_REPLACE_OBJECTS GIT_REPLACE_REF_BASE GIT_PREFIX \
	GIT_INTERNAL_SUPER_PREFIX GIT_SHALLOW_FILE GIT_COMMON_DIR \
	GIT_NAMESPACE GIT_CEILING_DIRECTORIES GIT_DISCOVERY_ACROSS_FILESYSTEM
unset TAR_OPTIONS XZ_OPT XZ_DEFAULTS GZIP CDPATH POSIXLY_CORRECT
export LC_ALL=C
unset LANGUAGE

# git on a repository that only the project's scripts use (the pristine
# kernel tree and its worktrees in the cache): no user or system
# configuration, so that commit.gpgsign, core.hooksPath, am.threeWay or
# init.templateDir of the person running the build cannot change or break
# it (`git init` is called with --template=).  The identity is the
# project's.
uepoll_git_private() {
	GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null \
	GIT_AUTHOR_NAME="uepoll developers" GIT_AUTHOR_EMAIL=dev@uepoll.invalid \
	GIT_COMMITTER_NAME="uepoll developers" GIT_COMMITTER_EMAIL=dev@uepoll.invalid \
		git -c init.defaultBranch=master -c core.hooksPath=/dev/null \
		    -c commit.gpgsign=false -c tag.gpgsign=false "$@"
}
