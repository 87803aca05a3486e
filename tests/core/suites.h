/* SPDX-License-Identifier: MIT */
/* What the core's test groups share: how a group is defined and run, and how a test ends. */
#ifndef CFC_SUITES_H
#define CFC_SUITES_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"

/*
 * Defines `int function(void)`, which runs the tests listed (cmocka_unit_test(name), ...)
 * as one cmocka group named `title` and returns how many failed; main.c runs the groups.
 */
#define CFC_TEST_GROUP(function, title, ...)					\
	int function(void)							\
	{									\
		const struct CMUnitTest tests[] = { __VA_ARGS__ };		\
										\
		return cmocka_run_group_tests_name(title, tests, NULL, NULL);	\
	}

int run_weight_tests(void);
int run_sched_tests(void);
int run_limit_tests(void);
int run_class_tests(void);
int run_config_tests(void);
int run_property_tests(void);
int run_pace_tests(void);
int run_aqm_tests(void);
int run_host_tests(void);

/* How a test ends: its scheduler's invariants all hold (else the first broken one is named); then it is freed. */
static inline void check_and_free(struct tsched *ts)
{
	const char *broken = ts_check(ts);

	if (broken)
		fail_msg("invariant broken: %s", broken);
	ts_free(ts);
}

#endif
