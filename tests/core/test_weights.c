// SPDX-License-Identifier: MIT
/*
 * New-flow weights (paper 002 Alg. 1-3 as docs/ALGORITHM.md reads them): the
 * motivating example, the many-old-flows case, spread arrivals, completions.
 */
#include <math.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"
#include "suites.h"

#define MS	1000000ull
#define RATE	100000000ull	/* 100 Mbit/s */
#define PKT	1500u
#define TICK	(250 * MS)

/*
 * The share of one weight-1 flow when every remembered flow is backlogged:
 * E/(E+S) per old flow, from S as the core holds it (exact, in weight units).
 * Each new flow's own weight must be S/|N| within one fixed-point unit.
 */
static double old_flow_share(struct tsched *ts, u32 first, u32 count)
{
	const struct cfc_sched *s = &ts->s;
	u32 i;

	cfc_advance(&ts->s, ts->now);
	for (i = first; i < first + count; i++) {
		u32 w = cfc_flow_weight(s, ts_bucket(ts, i));

		if (cfc_flow_class(s, ts_bucket(ts, i)) == 0 &&
		    llabs((long long)w * s->nnew - (long long)s->new_sum) > (long long)s->nnew)
			fail_msg("new flow weight %u is not S/|N| = %llu/%u", w,
				 (unsigned long long)s->new_sum, s->nnew);
	}
	return (double)CFC_W_ONE / (double)(((u64)s->nold << CFC_W_SHIFT) + s->new_sum);
}

static void arrive(struct tsched *ts, u32 first, u32 count)
{
	u32 i;

	for (i = first; i < first + count; i++)
		ts_enqueue(ts, i, PKT);
}

/* Advance to just after the next tick, keeping [0, count) backlogged. */
static void serve(struct tsched *ts, u32 count, u64 duration)
{
	struct ts_backlog keep = { .first = 0, .count = count, .depth = 4, .len = PKT };

	ts_run_link(ts, RATE, duration, ts_keep_backlogged, &keep);
}

static void assert_share(double got, double want, double tolerance)
{
	if (fabs(got - want) > tolerance)
		fail_msg("share %.6f, expected %.6f (+-%.6f)", got, want, tolerance);
}

/*
 * 1 old flow, 9 new flows at once: 1/2, 1/3, 1/5, 1/9, then 1/10 (C/(1+2^{lambda t})),
 * under the papers' schedule and under pace adaptive, whose ticks are never held
 * here: the old flow's queue (4 packets at 100 Mbit/s) never stands above target.
 */
static void motivating_example_with(u8 pace)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;
	const double want[] = { 1.0 / 2, 1.0 / 3, 1.0 / 5, 1.0 / 9, 1.0 / 10, 1.0 / 10 };
	const double unit = 1.0 / CFC_W_ONE;
	u32 step;

	cfg.pace = pace;
	ts = ts_new(&cfg, 10);
	arrive(ts, 0, 1);
	assert_int_equal(cfc_flow_class(&ts->s, 0), 1);	/* nobody to protect: old at once */
	serve(ts, 1, 100 * MS);
	arrive(ts, 1, 9);
	for (step = 0; step < 6; step++) {
		double measured;

		assert_share(old_flow_share(ts, 0, 10), want[step], unit);
		measured = ts_measured_share(ts, RATE, 10, 0, TICK);
		assert_share(measured, want[step], 0.02 * want[step]);
		assert_null(ts_check(ts));
	}
	assert_int_equal(ts->s.nnew, 0);
	assert_int_equal(ts->s.nold, 10);
	assert_int_equal(ts->s.cnt.holds, 0);
	ts_free(ts);
}

static void motivating_example(void **state)
{
	(void)state;
	motivating_example_with(CFC_PACE_FIXED);
	motivating_example_with(CFC_PACE_ADAPTIVE);
}

/* 5 old flows, 12 new: S starts at 1, is raised to E=5 at the first tick, then doubles. */
static void five_old_twelve_new(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts = ts_new(&cfg, 17);
	const double want[] = { 1.0 / 6, 1.0 / 10, 1.0 / 15, 1.0 / 17, 1.0 / 17 };
	u32 step;

	(void)state;
	arrive(ts, 0, 5);	/* flow 0 is old, 1..4 reach weight 1 at the second tick, old at the third */
	serve(ts, 5, 3 * TICK + 10 * MS);
	assert_int_equal(ts->s.nold, 5);
	assert_int_equal(ts->s.nnew, 0);
	arrive(ts, 5, 12);
	assert_int_equal(ts->s.nnew, 12);
	assert_int_equal(ts->s.new_sum, CFC_W_ONE);
	for (step = 0; step < 5; step++) {
		assert_share(old_flow_share(ts, 0, 17), want[step], 1.0 / CFC_W_ONE);
		assert_share(ts_measured_share(ts, RATE, 17, 0, TICK), want[step], 0.02 * want[step]);
	}
	check_and_free(ts);
}

/* Arrivals keep S (the old flow's share) unchanged; only ticks double it. */
static void spread_arrivals(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts = ts_new(&cfg, 8);
	u32 i;

	(void)state;
	arrive(ts, 0, 1);
	serve(ts, 1, 10 * MS);
	for (i = 1; i <= 4; i++) {		/* one new flow every 50 ms, before the first tick */
		arrive(ts, i, 1);
		assert_int_equal(ts->s.new_sum, CFC_W_ONE);
		assert_int_equal(cfc_flow_weight(&ts->s, ts_bucket(ts, i)), CFC_W_ONE / i);
		assert_share(old_flow_share(ts, 0, i + 1), 0.5, 1.0 / CFC_W_ONE);
		serve(ts, i + 1, 50 * MS);
	}
	serve(ts, 5, 60 * MS);			/* past the first tick: S = 2 */
	assert_int_equal(ts->s.new_sum, 2 * CFC_W_ONE);
	arrive(ts, 5, 3);			/* three more, after it */
	assert_int_equal(ts->s.new_sum, 2 * CFC_W_ONE);
	for (i = 1; i < 8; i++)
		assert_int_equal(cfc_flow_weight(&ts->s, ts_bucket(ts, i)), 2 * CFC_W_ONE / 7);
	assert_share(old_flow_share(ts, 0, 8), 1.0 / 3, 1.0 / CFC_W_ONE);
	check_and_free(ts);
}

/*
 * Two of four new flows fall silent and complete past the first tick. Alg. 3
 * (pace fixed) hands their weight to the other two (S stays 2, each at 1); under
 * pace adaptive it leaves with them (S 2 -> 1, each stays at 1/2), so the old
 * flow keeps the share the tick left it.
 */
static void completion_with(u8 pace, u64 want_sum, double want_share)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;

	cfg.pace = pace;
	ts = ts_new(&cfg, 5);
	arrive(ts, 0, 1);
	serve(ts, 1, 10 * MS);
	arrive(ts, 1, 4);
	assert_int_equal(cfc_flow_weight(&ts->s, ts_bucket(ts, 1)), CFC_W_ONE / 4);
	serve(ts, 3, 240 * MS);	/* flows 3 and 4 drain at once and fall silent */
	assert_int_equal(ts->s.nnew, 4);
	assert_share(old_flow_share(ts, 0, 5), 1.0 / 2, 1.0 / CFC_W_ONE);
	serve(ts, 3, 20 * MS);	/* past the tick and one interval of silence */
	assert_int_equal(ts->s.nnew, 2);
	assert_int_equal(cfc_flow_class(&ts->s, ts_bucket(ts, 4)), -1);
	assert_int_equal(ts->s.new_sum, want_sum);
	assert_share(old_flow_share(ts, 0, 3), want_share, 1.0 / CFC_W_ONE);
	check_and_free(ts);
}

static void completion_of_new_flows(void **state)
{
	(void)state;
	completion_with(CFC_PACE_FIXED, 2 * CFC_W_ONE, 1.0 / 3);
	completion_with(CFC_PACE_ADAPTIVE, CFC_W_ONE, 1.0 / 2);
}

/*
 * A page's quiet connections completing (the lab's p0010): one old flow, ten new
 * flows of which eight send one packet and fall silent. Their unused weight lets
 * the old flow keep 1/1.2 of the link; the tick doubles the busy new flows' weight
 * (1/1.4 left); then the quiet ones complete. Pace fixed hands their weight to the
 * busy two (1/3 left, half of it lost between ticks); pace adaptive takes it away
 * with them, so no more than the tick's doubling is lost.
 */
static void quiet_completions_with(u8 pace, double want_after)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;
	double before, after;

	cfg.pace = pace;
	ts = ts_new(&cfg, 11);
	arrive(ts, 0, 1);
	serve(ts, 1, 10 * MS);
	arrive(ts, 1, 10);
	serve(ts, 3, 100 * MS);
	before = ts_measured_share(ts, RATE, 3, 0, 100 * MS);
	serve(ts, 3, 100 * MS);	/* past the tick at 260 ms and the completions */
	after = ts_measured_share(ts, RATE, 3, 0, 100 * MS);
	print_message("pace %s: old flow's share %.3f before the tick, %.3f after the completions\n",
		      pace == CFC_PACE_FIXED ? "fixed" : "adaptive", before, after);
	assert_int_equal(ts->s.nnew, 2);
	assert_share(before, 1.0 / 1.2, 0.01);
	assert_share(after, want_after, 0.01);
	check_and_free(ts);
}

static void quiet_new_flows_take_their_weight_with_them(void **state)
{
	(void)state;
	quiet_completions_with(CFC_PACE_FIXED, 1.0 / 3);
	quiet_completions_with(CFC_PACE_ADAPTIVE, 1.0 / 1.4);
}

/*
 * Pace adaptive returns the weight that completions took at the next tick that is
 * not held, within the papers' bound (the old flows keep at least half their
 * share: S at most 2S + E). One old flow, eight new ones, four of them quiet:
 * the first tick gives S = 2, the quiet four complete (S 2 -> 1, one owed), and
 * the second tick doubles S and returns what the bound allows: 2 + 1 = 3, the
 * old flow from 1/2 to 1/4 (1/3 had the weight left for good, 1/5 under the
 * paper's hand-over, which took 1/2 -> 1/3 between the ticks).
 */
static void completed_weight_returns_at_the_next_tick(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts = ts_new(&cfg, 9);

	(void)state;
	arrive(ts, 0, 1);
	serve(ts, 1, 10 * MS);
	arrive(ts, 1, 8);
	serve(ts, 5, 240 * MS);	/* flows 5..8 drain at once and fall silent */
	serve(ts, 5, 20 * MS);	/* past the first tick and their completion */
	assert_int_equal(ts->s.nnew, 4);
	assert_int_equal(ts->s.new_sum, CFC_W_ONE);
	assert_int_equal(ts->s.new_owed, CFC_W_ONE);
	assert_share(old_flow_share(ts, 0, 5), 1.0 / 2, 1.0 / CFC_W_ONE);
	serve(ts, 5, TICK);	/* the second tick, not held: the old flow's queue is short */
	assert_int_equal(ts->s.new_sum, 3 * CFC_W_ONE);
	assert_int_equal(ts->s.new_owed, 0);
	assert_share(old_flow_share(ts, 0, 5), 1.0 / 4, 1.0 / CFC_W_ONE);
	check_and_free(ts);
}

/*
 * An old flow keeps its age through a pause of up to CFC_OLD_KEEP_INTERVALS
 * intervals (a real-time flow whose encoder stalls); after a longer one it is
 * forgotten and comes back new.
 */
static void paused_old_flow_keeps_its_age(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts = ts_new(&cfg, 3);

	(void)state;
	arrive(ts, 0, 2);
	serve(ts, 2, 2 * TICK);
	assert_int_equal(ts->s.nold, 2);
	serve(ts, 1, (CFC_OLD_KEEP_INTERVALS - 1) * TICK);	/* flow 1 pauses */
	assert_int_equal(ts->s.nold, 2);
	arrive(ts, 1, 1);
	assert_int_equal(cfc_flow_class(&ts->s, ts_bucket(ts, 1)), 1);
	assert_int_equal(cfc_flow_weight(&ts->s, ts_bucket(ts, 1)), CFC_W_ONE);
	serve(ts, 1, (CFC_OLD_KEEP_INTERVALS + 1) * TICK);	/* and now for longer */
	assert_int_equal(ts->s.nold, 1);
	arrive(ts, 1, 1);
	assert_int_equal(cfc_flow_class(&ts->s, ts_bucket(ts, 1)), 0);
	assert_int_equal(cfc_flow_weight(&ts->s, ts_bucket(ts, 1)), CFC_W_ONE);
	check_and_free(ts);
}

/* What a per-flow dump reads: state, class, weight S/|N|, backlog and head-of-line sojourn. */
static void flow_stats_tell_each_flow(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts = ts_new(&cfg, 4);
	struct cfc_flow_stats fs;

	(void)state;
	arrive(ts, 0, 1);
	arrive(ts, 1, 3);
	ts_enqueue(ts, 1, PKT);
	ts->now += 5 * MS;
	assert_int_equal(cfc_flow_stats(&ts->s, ts_bucket(ts, 0), ts->now, &fs), 1);
	assert_int_equal(fs.state, CFC_FLOW_OLD);
	assert_int_equal(fs.queue, 1);
	assert_int_equal(fs.weight, CFC_W_ONE);
	assert_int_equal(fs.qlen, 1);
	assert_int_equal(fs.backlog, PKT);
	assert_true(fs.sojourn_ns >= 5 * MS - 1024 && fs.sojourn_ns <= 5 * MS + 1024);
	assert_int_equal(cfc_flow_stats(&ts->s, ts_bucket(ts, 1), ts->now, &fs), 1);
	assert_int_equal(fs.state, CFC_FLOW_NEW);
	assert_int_equal(fs.queue, 0);
	assert_int_equal(fs.weight, CFC_W_ONE / 3);
	assert_int_equal(fs.qlen, 2);
	assert_int_equal(cfc_flow_stats(&ts->s, 100, ts->now, &fs), 0);	/* flows 0-3 use buckets 0-3 */
	ts_free(ts);
}

CFC_TEST_GROUP(run_weight_tests, "weights (Alg. 1-3)",
	cmocka_unit_test(motivating_example),
	cmocka_unit_test(five_old_twelve_new),
	cmocka_unit_test(spread_arrivals),
	cmocka_unit_test(completion_of_new_flows),
	cmocka_unit_test(quiet_new_flows_take_their_weight_with_them),
	cmocka_unit_test(completed_weight_returns_at_the_next_tick),
	cmocka_unit_test(paused_old_flow_keeps_its_age),
	cmocka_unit_test(flow_stats_tell_each_flow))
