// SPDX-License-Identifier: MIT
/* The runner behind cmocka.h: each test runs under setjmp, a failure longjmps back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "cmocka.h"

static jmp_buf test_exit;

void cross_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	printf("%s:%d: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	longjmp(test_exit, 1);
}

void cross_int_equal(intmax_t a, intmax_t b, const char *sa, const char *sb, const char *file, int line)
{
	if (a != b)
		cross_fail(file, line, "%s == %s: %jd != %jd", sa, sb, a, b);
}

static int run_one(const struct CMUnitTest *test)
{
	void *state = NULL;

	if (setjmp(test_exit))
		return 1;
	test->test_func(&state);
	return 0;
}

int cross_run_group(const char *name, const struct CMUnitTest *tests, unsigned int count,
		    CMFixtureFunction setup, CMFixtureFunction teardown)
{
	unsigned int i, failed = 0;
	void *state = NULL;

	if (setup && setup(&state)) {
		printf("%s: setup failed\n", name);
		return (int)count;
	}
	for (i = 0; i < count; i++) {
		int bad = run_one(&tests[i]);

		printf("[ %s ] %s\n", bad ? "FAILED" : "    OK", tests[i].name);
		failed += bad;
	}
	if (teardown)
		teardown(&state);
	printf("%s: %u of %u tests failed\n", name, failed, count);
	return (int)failed;
}
