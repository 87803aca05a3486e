// SPDX-License-Identifier: MIT
/* The core's unit test runner: one cmocka group per area, each printing its summary. */
#include <stdio.h>

#include "suites.h"

int main(void)
{
	int (*const groups[])(void) = {
		run_config_tests, run_weight_tests, run_sched_tests,
		run_limit_tests, run_class_tests, run_pace_tests, run_aqm_tests, run_host_tests,
		run_property_tests,
	};
	unsigned int i, failed_groups = 0;

	for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		failed_groups += groups[i]() != 0;
	printf("core: %u of %zu groups failed\n", failed_groups, sizeof(groups) / sizeof(groups[0]));
	return failed_groups ? 1 : 0;
}
