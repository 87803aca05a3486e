// SPDX-License-Identifier: MIT
/* The old flows' AQM: CoDel's control law on a standing queue, ECN marks, and its limits. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"
#include "suites.h"

#define MS	1000000ull
#define RATE	10000000ull	/* 10 Mbit/s: a 1500-byte packet every 1.2 ms */

/* fq_codel's target and interval, under which CoDel's pace shows within a second. */
static struct cfc_config codel_config(void)
{
	struct cfc_config cfg = ts_default_config();

	cfg.aqm_target_ns = 5 * MS;
	cfg.aqm_interval_ns = 100 * MS;
	return cfg;
}

/* One old flow kept 100 packets deep (120 ms of queue) at RATE, for `duration`. */
static struct tsched *standing_queue(const struct cfc_config *cfg, bool ect, u64 duration)
{
	struct ts_backlog deep = { .first = 0, .count = 1, .depth = 100, .len = 1500 };
	struct tsched *ts = ts_new(cfg, 1);

	ts->ect[0] = ect;
	ts_run_link(ts, RATE, duration, ts_keep_backlogged, &deep);
	return ts;
}

/*
 * A queue standing above the target is first signalled one interval after its
 * sojourn rose (the queue takes 5 ms to reach the target), then ever faster:
 * the n-th signal follows the one before by interval / sqrt(n).
 */
static void standing_queue_is_signalled_at_codel_s_pace(void **state)
{
	struct cfc_config cfg = codel_config();
	struct tsched *ts;

	(void)state;
	ts = standing_queue(&cfg, false, 104 * MS);
	assert_int_equal(ts->s.cnt.aqm_drops, 0);
	ts_free(ts);

	ts = standing_queue(&cfg, false, 1000 * MS);
	/*
	 * The first at 105 ms, the next 100 ms later, then 70.7, 57.7, 50, 44.7, ... ms
	 * apart: the 27th falls at 990 ms (the harness's flow never slows down).
	 */
	assert_in_range(ts->s.cnt.aqm_drops, 26, 28);
	assert_int_equal(ts->s.cnt.aqm_drops, ts->drops[0]);
	assert_int_equal(ts->s.cnt.ecn_marks, 0);
	check_and_free(ts);
}

/* ECN-capable packets are marked, not dropped, at the same pace; with noecn they are dropped. */
static void ecn_capable_packets_are_marked_not_dropped(void **state)
{
	struct cfc_config cfg = codel_config();
	struct tsched *ts;

	(void)state;
	ts = standing_queue(&cfg, true, 1000 * MS);
	assert_in_range(ts->s.cnt.ecn_marks, 26, 28);
	assert_int_equal(ts->marks[0], ts->s.cnt.ecn_marks);
	assert_int_equal(ts->s.cnt.aqm_drops, 0);
	assert_int_equal(ts->drops[0], 0);
	check_and_free(ts);

	cfg.ecn = false;
	ts = standing_queue(&cfg, true, 1000 * MS);
	assert_int_equal(ts->s.cnt.ecn_marks, 0);
	assert_in_range(ts->s.cnt.aqm_drops, 26, 28);
	check_and_free(ts);
}

/* A sojourn below the target, or a target of 0, is never signalled. */
static void short_queues_and_no_target_are_left_alone(void **state)
{
	struct ts_backlog shallow = { .first = 0, .count = 1, .depth = 3, .len = 1500 };
	struct cfc_config cfg = codel_config();
	struct tsched *ts;

	(void)state;
	ts = ts_new(&cfg, 1);
	ts_run_link(ts, RATE, 1000 * MS, ts_keep_backlogged, &shallow);	/* 3.6 ms of queue */
	assert_int_equal(ts->s.cnt.aqm_drops + ts->s.cnt.ecn_marks, 0);
	check_and_free(ts);

	cfg.aqm_target_ns = 0;
	ts = standing_queue(&cfg, false, 1000 * MS);
	assert_int_equal(ts->s.cnt.aqm_drops + ts->s.cnt.ecn_marks, 0);
	check_and_free(ts);
}

/* Enqueue one packet on flow 1 every 1 ms: a new flow arriving while flow 0 stands. */
static void trickle_new_flow(struct tsched *ts, void *ctx)
{
	u64 *next = ctx;

	while (ts->s.flows[ts_bucket(ts, 0)].qlen < 100)
		ts_enqueue(ts, 0, 1500);
	if (ts->now >= *next) {
		ts_enqueue(ts, 1, 200);
		*next = ts->now + MS;
	}
}

/*
 * While a flow is new, the old flows' standing queues are the scheduler's doing
 * (their share lent to the new flow), and the AQM leaves them alone; once the
 * new flow is old too, it acts again.
 */
static void no_signal_while_a_flow_is_new(void **state)
{
	struct cfc_config cfg = codel_config();
	struct tsched *ts;
	u64 next;

	(void)state;
	cfg.interval_ns = 400 * MS;	/* 1/lambda: flow 1 stays new for the whole second */
	ts = ts_new(&cfg, 2);
	ts_enqueue(ts, 0, 1500);	/* flow 0 is the first, so old at once */
	next = ts->now + 50 * MS;
	ts_run_link(ts, RATE, 1000 * MS, trickle_new_flow, &next);
	assert_int_equal(ts->s.cnt.aqm_drops, 0);
	assert_true(ts->s.nnew == 1);
	check_and_free(ts);
}

/* Keeps flow 0 100 packets deep; notes when N last emptied and when the AQM first signalled. */
struct rest_watch {
	u64 quiet_at, first_signal_at;
};

static void keep_deep_and_watch(struct tsched *ts, void *ctx)
{
	struct rest_watch *w = ctx;

	while (ts->s.flows[ts_bucket(ts, 0)].qlen < 100)
		ts_enqueue(ts, 0, 1500);
	if (ts->s.nnew)
		w->quiet_at = 0;
	else if (!w->quiet_at)
		w->quiet_at = ts->now;
	if (!w->first_signal_at && ts->s.cnt.aqm_drops)
		w->first_signal_at = ts->now;
}

/*
 * Once the last new flow is gone the AQM rests for aqm_settle more, and the
 * old flow's queue, standing all along, must then stand for an interval anew.
 */
static u64 first_signal_after_quiet(u64 settle)
{
	struct cfc_config cfg = codel_config();
	struct rest_watch watch = { 0 };
	struct tsched *ts;
	u64 next, after;

	cfg.interval_ns = 400 * MS;
	cfg.aqm_settle_ns = settle;
	ts = ts_new(&cfg, 2);
	ts_enqueue(ts, 0, 1500);
	next = ts->now + 50 * MS;
	ts_run_link(ts, RATE, 1000 * MS, trickle_new_flow, &next);
	assert_true(ts->s.nnew == 1);
	ts_run_link(ts, RATE, 3000 * MS, keep_deep_and_watch, &watch);
	assert_true(watch.quiet_at && watch.first_signal_at > watch.quiet_at);
	after = watch.first_signal_at - watch.quiet_at;
	check_and_free(ts);
	return after;
}

static void the_aqm_rests_for_aqm_settle_once_no_flow_is_new(void **state)
{
	(void)state;
	assert_in_range(first_signal_after_quiet(0), 100 * MS, 110 * MS);
	assert_in_range(first_signal_after_quiet(1000 * MS), 1100 * MS, 1110 * MS);
}

/* Mode class sorts flows by the queue they build, mode external by the host's classes: no AQM. */
static void only_mode_flow_has_the_aqm(void **state)
{
	struct cfc_config cfg = codel_config();
	struct tsched *ts;
	u8 mode;

	(void)state;
	for (mode = CFC_MODE_CLASS; mode <= CFC_MODE_EXTERNAL; mode++) {
		cfg.mode = mode;
		ts = standing_queue(&cfg, false, 1000 * MS);
		assert_int_equal(ts->s.cnt.aqm_drops + ts->s.cnt.ecn_marks, 0);
		check_and_free(ts);
	}
}

CFC_TEST_GROUP(run_aqm_tests, "aqm",
	cmocka_unit_test(standing_queue_is_signalled_at_codel_s_pace),
	cmocka_unit_test(ecn_capable_packets_are_marked_not_dropped),
	cmocka_unit_test(short_queues_and_no_target_are_left_alone),
	cmocka_unit_test(no_signal_while_a_flow_is_new),
	cmocka_unit_test(the_aqm_rests_for_aqm_settle_once_no_flow_is_new),
	cmocka_unit_test(only_mode_flow_has_the_aqm),
)
