// SPDX-License-Identifier: MIT
/* Seeded random operation sequences: every invariant after every operation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <cmocka.h>

#include "harness.h"
#include "ops.h"
#include "suites.h"

#define SEQUENCES	4000
#define PROGRAM_BYTES	768

static u64 xorshift(u64 *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

static void random_operation_sequences(void **state)
{
	u8 program[PROGRAM_BYTES];
	u32 seq, i;

	(void)state;
	for (seq = 0; seq < SEQUENCES; seq++) {
		u64 rng = 0x9e3779b97f4a7c15ull * (seq + 1);
		const char *err;

		for (i = 0; i < PROGRAM_BYTES; i++)
			program[i] = (u8)xorshift(&rng);
		err = ts_run_ops(program, sizeof(program), NULL);
		if (err)
			fail_msg("sequence %u (seed %llu): %s", seq,
				 (unsigned long long)(0x9e3779b97f4a7c15ull * (seq + 1)), err);
	}
	print_message("%u sequences of %u bytes, invariants held after every operation\n",
		      SEQUENCES, PROGRAM_BYTES);
}

CFC_TEST_GROUP(run_property_tests, "property (random sequences)",
	cmocka_unit_test(random_operation_sequences))
