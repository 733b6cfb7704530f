// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * fork_fake: test/fork_dofork.c on the kernel forged by
 * test/fake_kernel.h, so that the native backend's fork rule, with and
 * without MADV_DOFORK, is checked on any kernel and every backend run.
 */
#define FORK_FAKE_KERNEL 1
#include "fork_dofork.c"
