/* SPDX-License-Identifier: MIT */
#ifndef CFC_SUITES_H
#define CFC_SUITES_H

int run_weight_tests(void);
int run_sched_tests(void);
int run_limit_tests(void);
int run_class_tests(void);
int run_config_tests(void);
int run_property_tests(void);
int run_pace_tests(void);

#endif
