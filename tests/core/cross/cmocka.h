/* SPDX-License-Identifier: MIT */
/*
 * The part of cmocka's interface the core's unit tests use, for the cross builds
 * (mk/cross.mk): Debian has no cmocka for big-endian mips and no multiarch armhf here,
 * so the static armhf and mips test binaries take this header instead of the library.
 * Same semantics: a failed assertion reports and ends the current test, the group
 * runner returns the number of failed tests.
 */
#ifndef CFC_CROSS_CMOCKA_H
#define CFC_CROSS_CMOCKA_H

#include <stdint.h>
#include <stdio.h>

typedef void (*CMUnitTestFunction)(void **state);
typedef int (*CMFixtureFunction)(void **state);

struct CMUnitTest {
	const char *name;
	CMUnitTestFunction test_func;
};

#define cmocka_unit_test(f) { #f, f }

int cross_run_group(const char *name, const struct CMUnitTest *tests, unsigned int count,
		    CMFixtureFunction setup, CMFixtureFunction teardown);
#define cmocka_run_group_tests_name(name, tests, setup, teardown) \
	cross_run_group((name), (tests), sizeof(tests) / sizeof((tests)[0]), (setup), (teardown))

/* Reports where and why, then leaves the current test. */
void cross_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 3, 4)));

#define print_message(...) printf(__VA_ARGS__)
#define fail_msg(...) cross_fail(__FILE__, __LINE__, __VA_ARGS__)
#define assert_true(c) \
	((c) ? (void)0 : cross_fail(__FILE__, __LINE__, "%s is false", #c))
#define assert_false(c) \
	((c) ? cross_fail(__FILE__, __LINE__, "%s is true", #c) : (void)0)
#define assert_null(p) \
	((p) == NULL ? (void)0 : cross_fail(__FILE__, __LINE__, "%s is not NULL", #p))
#define assert_non_null(p) \
	((p) != NULL ? (void)0 : cross_fail(__FILE__, __LINE__, "%s is NULL", #p))
#define assert_int_equal(a, b) cross_int_equal((intmax_t)(a), (intmax_t)(b), #a, #b, __FILE__, __LINE__)
void cross_int_equal(intmax_t a, intmax_t b, const char *sa, const char *sb, const char *file, int line);
#define assert_in_range(v, lo, hi) \
	((uintmax_t)(v) >= (uintmax_t)(lo) && (uintmax_t)(v) <= (uintmax_t)(hi) ? (void)0 : \
	 cross_fail(__FILE__, __LINE__, "%s = %ju is not within %ju..%ju", #v, (uintmax_t)(v), \
		    (uintmax_t)(lo), (uintmax_t)(hi)))

#endif
