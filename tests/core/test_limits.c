// SPDX-License-Identifier: MIT
/* The table's size; limit and memlimit with head drop from the fattest flow; the shaper's output rate. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"
#include "suites.h"

#define MS	1000000ull
#define SEC	1000000000ull

/*
 * A flow slot takes at most 128 bytes, so the default table of 1024 flows is
 * one 128 KiB allocation (the kernel rounds any more up to 256 KiB), and mode
 * flow, the default, needs no classes' heaps.
 */
static void default_table_fits_128_kib(void **state)
{
	struct cfc_config cfg = ts_default_config();

	(void)state;
	assert_true(cfc_table_bytes(cfg.flows) <= 128 * 1024);
	assert_false(cfc_needs_heaps(&cfg));
	cfg.mode = CFC_MODE_CLASS;
	assert_true(cfc_needs_heaps(&cfg));
}

/* Backlogged flows of mode flow move into the heaps that come with mode class. */
static void heaps_come_with_the_first_class_mode(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts = ts_new(&cfg, 6);
	u32 i, sent = 0;

	(void)state;
	assert_null(ts->heaps);
	for (i = 0; i < 6 * 4; i++)
		ts_enqueue(ts, i % 6, 1000);
	cfg.mode = CFC_MODE_CLASS;
	ts_change(ts, &cfg);
	assert_non_null(ts->heaps);
	assert_null(ts_check(ts));
	while (ts_dequeue(ts, NULL) >= 0)
		sent++;
	assert_int_equal(sent, 6 * 4);
	check_and_free(ts);
}

/* A flood on one flow never costs a sparse flow a packet; the flooder is told it is congested. */
static void fattest_flow_pays_for_overflow(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;
	u32 i, congested = 0;

	(void)state;
	cfg.limit = 100;
	ts = ts_new(&cfg, 3);
	for (i = 0; i < 1000; i++) {
		if (i % 50 == 0) {
			assert_int_equal(ts_enqueue(ts, 1, 200), CFC_ENQ_OK);
			assert_int_equal(ts_enqueue(ts, 2, 200), CFC_ENQ_OK);
		}
		congested += ts_enqueue(ts, 0, 1500) == CFC_ENQ_CONGESTED;
		assert_true(ts->s.qlen <= cfg.limit);
		assert_null(ts_check(ts));
	}
	assert_int_equal(ts->drops[1], 0);
	assert_int_equal(ts->drops[2], 0);
	assert_true(ts->drops[0] > 800);
	assert_true(congested > 0);
	assert_int_equal(ts->s.cnt.dropped_pkts, ts->drops[0]);
	ts_free(ts);
}

/* memlimit counts truesize; the flow with the most bytes is cut first. */
static void memlimit_counts_truesize(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;
	u32 i;

	(void)state;
	cfg.memlimit = CFC_MEMLIMIT_MIN;	/* 64 KiB: 37 packets of 1500 + 256 bytes */
	ts = ts_new(&cfg, 2);
	for (i = 0; i < 100; i++) {
		ts_enqueue(ts, 0, 1500);
		ts_enqueue(ts, 1, 100);
		assert_true(ts->s.mem <= cfg.memlimit);
	}
	assert_true(ts->drops[0] > 0);
	assert_int_equal(ts->drops[1], 0);
	check_and_free(ts);
}

/* A smaller limit trims the backlog at once, from the fattest flows, and reports the drops. */
static void smaller_limit_trims_backlog(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;
	u32 i;

	(void)state;
	ts = ts_new(&cfg, 4);
	for (i = 0; i < 400; i++)
		ts_enqueue(ts, i % 4, 1000 + (i % 4) * 100);
	assert_int_equal(ts->s.qlen, 400);
	cfg.limit = 50;
	ts_change(ts, &cfg);
	assert_true(ts->s.qlen <= 50);
	assert_int_equal(ts->s.cnt.dropped_pkts, 400 - ts->s.qlen);
	check_and_free(ts);
}

/* Serve with a watchdog that fires `late_ns` after the time the core asks for. */
static u64 shaped_bytes(struct tsched *ts, u64 duration, u64 late_ns)
{
	struct ts_backlog keep = { .first = 0, .count = 3, .depth = 20, .len = 1500 };
	u64 end = ts->now + duration, sent = 0;

	while (ts->now < end) {
		u32 len;
		u64 until;

		ts_keep_backlogged(ts, &keep);
		if (ts_dequeue(ts, &len) >= 0) {
			sent += len;
			continue;
		}
		until = cfc_throttled_until(&ts->s, ts->now);
		assert_true(until > ts->now);
		ts->now = until + late_ns;
	}
	return sent;
}

static void shaper_rate_within_1pct(void **state)
{
	static const u64 rates[] = { 1000000, 20000000, 95000000, 1000000000 };
	static const u64 lateness[] = { 0, 50000, 2000000 };	/* exact, 50 us and 2 ms late timers */
	size_t r, l;

	(void)state;
	for (r = 0; r < 4; r++) {
		for (l = 0; l < 3; l++) {
			struct cfc_config cfg = ts_default_config();
			struct tsched *ts;
			double rate;

			cfg.bandwidth = rates[r];
			ts = ts_new(&cfg, 3);
			rate = (double)shaped_bytes(ts, 10 * SEC, lateness[l]) * 8 / 10.0;
			if (fabs(rate - (double)rates[r]) > 0.01 * (double)rates[r])
				fail_msg("bandwidth %llu bit/s, %llu ns late timers: got %.0f bit/s",
					 (unsigned long long)rates[r],
					 (unsigned long long)lateness[l], rate);
			assert_true(ts->s.cnt.overlimits > 0);
			check_and_free(ts);
		}
	}
}

/* After an idle spell the shaper does not burst out the time it was not used. */
static void idle_link_saves_no_credit(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;
	u32 sent = 0, i;

	(void)state;
	cfg.bandwidth = 10000000;	/* 1500 bytes take 1.2 ms */
	ts = ts_new(&cfg, 1);
	ts->now += 5 * SEC;
	for (i = 0; i < 10; i++)
		ts_enqueue(ts, 0, 1500);
	while (ts_dequeue(ts, NULL) >= 0)
		sent++;
	assert_int_equal(sent, 1);
	ts_free(ts);
}

/* A faster rate applies to the packet already held back at the slow one. */
static void rate_change_releases_held_packet(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;

	(void)state;
	cfg.bandwidth = CFC_BANDWIDTH_MIN;	/* 8 kbit/s: 1500 bytes take 1.5 s */
	ts = ts_new(&cfg, 1);
	ts_enqueue(ts, 0, 1500);
	ts_enqueue(ts, 0, 1500);
	assert_int_equal(ts_dequeue(ts, NULL), 0);
	assert_int_equal(ts_dequeue(ts, NULL), -1);
	assert_true(cfc_throttled_until(&ts->s, ts->now) >= ts->now + 1400000000ull);
	cfg.bandwidth = 0;
	ts_change(ts, &cfg);
	assert_int_equal(cfc_throttled_until(&ts->s, ts->now), 0);
	assert_int_equal(ts_dequeue(ts, NULL), 0);
	ts_free(ts);
}

CFC_TEST_GROUP(run_limit_tests, "limits and shaper",
	cmocka_unit_test(default_table_fits_128_kib),
	cmocka_unit_test(heaps_come_with_the_first_class_mode),
	cmocka_unit_test(fattest_flow_pays_for_overflow),
	cmocka_unit_test(memlimit_counts_truesize),
	cmocka_unit_test(smaller_limit_trims_backlog),
	cmocka_unit_test(shaper_rate_within_1pct),
	cmocka_unit_test(idle_link_saves_no_credit),
	cmocka_unit_test(rate_change_releases_held_packet))
