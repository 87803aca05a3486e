/* SPDX-License-Identifier: MIT */
/* What the core's test groups share: their entry points and how a test ends. */
#ifndef CFC_SUITES_H
#define CFC_SUITES_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"

int run_weight_tests(void);
int run_sched_tests(void);
int run_limit_tests(void);
int run_class_tests(void);
int run_config_tests(void);
int run_property_tests(void);
int run_pace_tests(void);

/* How a test ends: its scheduler's invariants all hold (else the first broken one is named); then it is freed. */
static inline void check_and_free(struct tsched *ts)
{
	const char *broken = ts_check(ts);

	if (broken)
		fail_msg("invariant broken: %s", broken);
	ts_free(ts);
}

#endif
