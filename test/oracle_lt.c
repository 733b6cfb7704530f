// SPDX-License-Identifier: MIT OR LGPL-2.1-or-later
/*
 * oracle_lt: test/oracle.c with level-triggered and mixed sequences.
 */
#define ORACLE_LEVEL 1
#include "oracle.c"
