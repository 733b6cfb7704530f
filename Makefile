# SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
#
# libuepoll.  `make` builds everything under build/; `make check` runs all
# tests (host suite, then the guest suite when kernel/ and vm/ provide it);
# `make run` is the main job (uepoll-stress on every backend).

VERSION    := 0.1.0
SOMAJOR    := 0
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
DESTDIR    ?=

CC       ?= cc
CFLAGS   ?= -O2 -g
B        ?= build
SAN      ?=
# tests and tools link the shared library, or the static one (sanitizer builds)
STATIC   ?= 0
# extra link flags of tests and tools (-static for the guest's initramfs)
PROG_LDFLAGS ?=

WARN      := -Wall -Wextra -Werror
ALL_CFLAGS := $(CFLAGS) $(WARN) -D_GNU_SOURCE -Isrc/include -pthread $(SAN)
LIB_CFLAGS := $(ALL_CFLAGS) -fPIC -fvisibility=hidden
LIBS      := -luring -lpthread

LIB_SRCS  := src/uepoll.c src/uring.c src/epoll.c src/native.c src/batch.c
LIB_HDRS  := src/internal.h src/include/uepoll.h src/include/uepoll/uapi.h src/include/uepoll/barrier.h
LIB_OBJS  := $(LIB_SRCS:src/%.c=$(B)/obj/%.o)
SONAME    := libuepoll.so.$(SOMAJOR)
SOLIB     := $(B)/lib/libuepoll.so.$(VERSION)
ALIB      := $(B)/lib/libuepoll.a
PCFILE    := $(B)/libuepoll.pc

TESTS     := $(patsubst test/%.c,$(B)/test/%,$(wildcard test/*.c))
# every tools/*.c is a program but tools/tool.c, the helpers each one links
TOOL_LIB  := tools/tool.c tools/tool.h
TOOLS     := $(patsubst tools/%.c,$(B)/tools/%,$(filter-out tools/tool.c,$(wildcard tools/*.c)))
MANPAGES  := $(wildcard man/uepoll_*.3)
MANPAGES_ALL := $(MANPAGES) man/epoll_create2.2 man/uepoll.7

ifeq ($(STATIC),1)
LINK_LIB  := $(ALIB) $(LIBS)
LINK_DEP  := $(ALIB)
else
LINK_LIB  := -L$(B)/lib -luepoll -Wl,-rpath,$(abspath $(B)/lib) $(LIBS)
LINK_DEP  := $(B)/lib/libuepoll.so
endif

.PHONY: all lib tests tools check check-host check-asan check-tsan check-valgrind check-mutations check-uapi \
	deps run install uninstall clean kernel vm-check vm-check-debug vm-campaign man-check guest-progs \
	check-mutations-guest bench check-scripts check-fresh libevent libevent-check

all: lib $(PCFILE) tools tests

# ---- Debian packages, before anything is compiled ---------------------------
# scripts/deps GROUP...: root installs what is missing (apt-get update
# first), others get the list and the command, and the build stops there.
# The groups come from the target the user typed (target-specific
# variables reach the prerequisites): `make` needs "build", `make check`
# adds "check" and the guest's, `make run` the guest's (kernel, QEMU).
# Nothing missing: one dpkg-query, a few ms.
DEPS_GROUPS = build
deps:
	@scripts/deps $(DEPS_GROUPS)
$(LIB_OBJS) $(TESTS) $(TOOLS) $(PCFILE): | deps

lib: $(ALIB) $(SOLIB) $(B)/lib/libuepoll.so

$(B)/obj/%.o: src/%.c $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(LIB_CFLAGS) -c -o $@ $<

$(ALIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(SOLIB): $(LIB_OBJS) src/libuepoll.map
	@mkdir -p $(@D)
	$(CC) $(LIB_CFLAGS) -shared -Wl,-soname,$(SONAME) \
		-Wl,--version-script=src/libuepoll.map -o $@ $(LIB_OBJS) $(LIBS)

$(B)/lib/libuepoll.so: $(SOLIB)
	ln -sf libuepoll.so.$(VERSION) $(B)/lib/$(SONAME)
	ln -sf $(SONAME) $@

PC_SED = sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	     -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|'

$(PCFILE): src/libuepoll.pc.in Makefile
	@mkdir -p $(@D)
	$(PC_SED) $< > $@

tests: $(TESTS)
tools: $(TOOLS)

$(B)/test/%: test/%.c test/helpers.h $(LINK_DEP) src/include/uepoll.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(PROG_LDFLAGS) -o $@ $< $(LINK_LIB)

# eproto interposes on the library's mmap()/munmap() (ld --wrap), which
# only works when the library is linked in: always the static one
$(B)/test/eproto: test/eproto.c test/helpers.h $(ALIB) src/include/uepoll.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(PROG_LDFLAGS) -Wl,--wrap=mmap -Wl,--wrap=munmap -o $@ $< $(ALIB) $(LIBS)

# spin_rate and spin_futile call the library's internal __uepoll_spin():
# the static one
$(B)/test/spin_rate $(B)/test/spin_futile: $(B)/test/%: test/%.c test/helpers.h $(ALIB) src/include/uepoll.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(PROG_LDFLAGS) -o $@ $< $(ALIB) $(LIBS)

# tests of the native backend against a kernel forged in the process
# (test/fake_kernel.h): the library's open, syscall, mmap and epoll_wait
# land in the test (ld --wrap), so the static library, as for eproto
FAKE_KERNEL_TESTS := $(B)/test/repoll $(B)/test/fork_fake
FAKE_KERNEL_WRAP  := -Wl,--wrap=open -Wl,--wrap=syscall -Wl,--wrap=mmap -Wl,--wrap=epoll_wait
$(FAKE_KERNEL_TESTS): $(B)/test/%: test/%.c test/helpers.h test/fake_kernel.h $(ALIB) src/include/uepoll.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(PROG_LDFLAGS) $(FAKE_KERNEL_WRAP) -o $@ $< $(ALIB) $(LIBS)
$(B)/test/fork_fake: test/fork_dofork.c
# oracle_lt is oracle.c with its level-triggered sequences
$(B)/test/oracle_lt: test/oracle.c

# compiled with each tool (no object file: build/guest/tools/ goes whole
# into the guest's initramfs)
$(B)/tools/%: tools/%.c $(TOOL_LIB) $(LINK_DEP) src/include/uepoll.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(PROG_LDFLAGS) -o $@ $< tools/tool.c $(LINK_LIB)

# The library's tests and tools linked fully static, for the guest's
# initramfs (vm/check --lib build/guest).
GUEST_B := build/guest
guest-progs: | deps
	$(MAKE) B=$(GUEST_B) STATIC=1 PROG_LDFLAGS=-static tests tools

# ---- tests ---------------------------------------------------------------
# The host suite: sanitizer and valgrind passes first, the plain pass last
# so that the output ends with its summary lines.
check-host: deps
	$(MAKE) check-scripts
	$(MAKE) all
	$(MAKE) man-check
	@scripts/check-uapi
	@scripts/check-fnlen
	$(MAKE) check-mutations
	$(MAKE) check-asan
	$(MAKE) check-tsan
	$(MAKE) check-valgrind
	$(MAKE) all
	@# the uring backend's other setup (src/uring.c, "Setup flags"), and
	@# its sleeps with changes checked before them (ring_sleep())
	@UEPOLL_BACKEND=uring UEPOLL_URING_SETUP=plain test/runner.sh --label uring-setup-plain $(B)
	@UEPOLL_BACKEND=uring UEPOLL_URING_RING_CHECKS=0 test/runner.sh --label uring-checks-first $(B)
	@test/runner.sh --label plain $(B) > $(B)/check-plain.log 2>&1; rc=$$?; \
		cat $(B)/check-plain.log; exit $$rc

# A new user's first hour: a fresh clone, an empty cache, `make run` then
# `make check` under another make, timed (about 25 minutes; see README).
# FRESH_FLAGS: --purge (remove the project's packages first), --direct, --keep
FRESH_FLAGS ?=
check-fresh:
	@scripts/fresh-machine $(FRESH_FLAGS)

# the build scripts' own tests (kernel/build's first extraction, scripts/deps)
check-scripts:
	@test/scripts/run

check-asan:
	$(MAKE) B=build/asan STATIC=1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" tests tools
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		test/runner.sh --label asan build/asan

check-tsan:
	$(MAKE) B=build/tsan STATIC=1 SAN="-fsanitize=thread" tests tools
	@TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
		test/runner.sh --label tsan --only-threaded build/tsan

check-valgrind: all
	@test/runner.sh --label valgrind --timeout 120 \
		--wrapper "valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --track-fds=no" $(B)

# Every guarded rule broken once in a scratch copy: its test must fail.
check-mutations:
	@test/mutations.sh

# LIBEVENT_CHECK: 0 = skip make libevent-check in make check (it adds about
# 12 minutes on the host and the guest runs after it)
LIBEVENT_CHECK ?=

# ---- guest part (kernel/ and vm/ are owned by the kernel and vm work) ----
# VM_CHECK: empty = run the guest suite when kernel/build and vm/check
# exist; 0 = never; 1 = always (fail if missing).
VM_CHECK ?=

check-host: DEPS_GROUPS = build check
check: DEPS_GROUPS = build check $(if $(filter 0,$(VM_CHECK)),,guest) $(if $(filter 0,$(LIBEVENT_CHECK)),,libevent)
check: check-host
	@if [ "$(VM_CHECK)" = 0 ]; then echo "vm-check: skipped (VM_CHECK=0)"; \
	elif [ -x kernel/build ] && [ -x vm/check ] || [ "$(VM_CHECK)" = 1 ]; then \
		$(MAKE) vm-check || { scripts/last-failure "make check" guest; exit 1; }; \
	else echo "vm-check: skipped (kernel/build or vm/check missing)"; fi
	@if [ "$(LIBEVENT_CHECK)" = 0 ]; then echo "libevent-check: skipped (LIBEVENT_CHECK=0)"; \
	else $(MAKE) libevent-check > $(B)/libevent-check.log 2>&1; rc=$$?; \
		grep -a '^libevent ' $(B)/libevent-check.log > $(B)/libevent-summary.txt; \
		if [ $$rc != 0 ]; then tail -40 $(B)/libevent-check.log; \
			echo "make check: FAIL: make libevent-check (log $(B)/libevent-check.log)"; exit 1; fi; fi
	@echo "== make check: host summary (plain pass; $$(uname -r)) =="
	@sed -n '/^== summary/,$$p' $(B)/check-plain.log | tail -n +2
	@if [ "$(VM_CHECK)" != 0 ] && [ -f build/vm/lib-summary-normal.txt ]; then \
		sed -n '/^== summary/,$$p' build/vm/lib-summary-normal.txt; fi
	@if [ "$(LIBEVENT_CHECK)" != 0 ]; then echo "== libevent (regress + test-*) =="; \
		cat $(B)/libevent-summary.txt; fi

kernel:
	@kernel/build

# the guest: raw ABI tests, upstream selftest, the library suite on
# native, uring and epoll (static builds of tests and tools); first a
# short single-threaded TCG boot for the static key's flips under load,
# which multi-threaded TCG cannot run (vm/init.c hold_userpoll_key())
vm-check: DEPS_GROUPS = build guest
vm-check: guest-progs
	vm/check --accel tcg-single --only userpoll_keyflip_test --quiet
	vm/check --lib $(GUEST_B)
	test/mutations.sh --guest

# the native backend's mutations (test/mutations.sh), in the guest
check-mutations-guest:
	test/mutations.sh --guest

# the debug kernel (KASAN, lockdep, kmemleak, fault injection): the
# built-in suite with the fault-injection test, the library suite on every
# backend, userpoll_fuzz for FUZZ_SECONDS (600; FUZZ_SEED, FUZZ_THREADS),
# the kmemleak verdict (scripts/vm-campaign --check; not part of check:
# about 40 minutes under TCG)
vm-check-debug: DEPS_GROUPS = build guest
vm-check-debug: guest-progs
	scripts/vm-campaign --check $(GUEST_B)

# the kernel series' reliability campaign: vm-check-debug after a boot of
# the normal kernel that runs native uepoll-stress with churn for 10^8
# events (CAMPAIGN_STRESS_THREADS x CAMPAIGN_STRESS_ITERS)
vm-campaign: DEPS_GROUPS = build guest
vm-campaign: guest-progs
	scripts/vm-campaign $(GUEST_B)

# ---- the main job ----------------------------------------------------------
# guest (patched kernel: native, uring, epoll) and host side by side;
# HOST=1: the host only.  Sizes: RUN_THREADS, RUN_ITERS, RUN_GUEST_THREADS,
# RUN_GUEST_ITERS, RUN_REPEATS (scripts/run-table).
HOST ?= 0
run: DEPS_GROUPS = build $(if $(filter 1,$(HOST)),,guest)
run: all
	@if [ "$(HOST)" = 1 ]; then scripts/run-table --host-only $(B); \
	else $(MAKE) -s guest-progs && scripts/run-table $(B); fi

# ---- benchmarks (doc/BENCH.md) ----------------------------------------------
# the host set (uring, epoll) and the guest set (native, uring, epoll):
# build/bench/{table.txt,results.csv,summary.md,*.png}.  BENCH_FLAGS:
# --quick, --host-only, --guest-only, --report (redo the outputs from logs)
BENCH_FLAGS ?=
bench: DEPS_GROUPS = build guest bench libevent memcached
bench: deps
	$(MAKE) all guest-progs
	GUEST_B=$(GUEST_B) scripts/bench $(B) $(B)/bench $(BENCH_FLAGS)

# ---- libevent with the uepoll backend (libevent/README.md) -------------------
# make libevent: the pinned Debian source, libevent/series applied, CMake
# builds (shared and static) in the cache.  make libevent-check: regress
# and the test-* programs on the host (stock-epoll, uring, epoll; plain and
# EVENT_DEBUG_MODE=1; the level-triggered switch must make them fail),
# then in the guest (native, uring, epoll; static) unless VM_CHECK=0.
libevent: DEPS_GROUPS = build libevent
libevent: lib | deps
	scripts/libevent build $(B)

libevent-check: DEPS_GROUPS = build libevent $(if $(filter 0,$(VM_CHECK)),,guest)
libevent-check: lib | deps
	scripts/libevent check $(B)
	@if [ "$(VM_CHECK)" = 0 ]; then echo "libevent guest check: skipped (VM_CHECK=0)"; \
	else scripts/libevent guest-check $(B); fi

# src/include/uepoll/uapi.h against what kernel/patches add to eventpoll.h
check-uapi:
	@scripts/check-uapi

man-check:
	@for m in $(MANPAGES_ALL); do \
		grep -q '^\.so ' $$m && continue; \
		out=$$(groff -t -man -Tutf8 -ww -z $$m 2>&1); \
		if [ -n "$$out" ]; then echo "$$m: $$out"; exit 1; fi; done; echo "man pages: ok"

# ---- install ----------------------------------------------------------------
install: lib $(PCFILE)
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/uepoll $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(MANDIR)/man2 $(DESTDIR)$(MANDIR)/man7
	install -m 644 src/include/uepoll.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 src/include/uepoll/uapi.h src/include/uepoll/barrier.h $(DESTDIR)$(INCLUDEDIR)/uepoll/
	install -m 644 $(ALIB) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(SOLIB) $(DESTDIR)$(LIBDIR)/
	ln -sf libuepoll.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libuepoll.so
	$(PC_SED) src/libuepoll.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/libuepoll.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/libuepoll.pc
	install -m 644 $(MANPAGES) $(DESTDIR)$(MANDIR)/man3/
	install -m 644 man/epoll_create2.2 $(DESTDIR)$(MANDIR)/man2/
	install -m 644 man/uepoll.7 $(DESTDIR)$(MANDIR)/man7/

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/uepoll.h $(DESTDIR)$(INCLUDEDIR)/uepoll/uapi.h \
	      $(DESTDIR)$(INCLUDEDIR)/uepoll/barrier.h $(DESTDIR)$(LIBDIR)/libuepoll.* \
	      $(DESTDIR)$(LIBDIR)/pkgconfig/libuepoll.pc \
	      $(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(MANPAGES))) \
	      $(DESTDIR)$(MANDIR)/man2/epoll_create2.2 $(DESTDIR)$(MANDIR)/man7/uepoll.7

clean:
	rm -rf build/obj build/lib build/test build/tools build/asan build/tsan build/guest build/libuepoll.pc
