// SPDX-License-Identifier: MIT
/* Occupancy classes (mode class), external classes (mode external), mode changes. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"
#include "suites.h"

#define MS	1000000ull
#define SEC	1000000000ull
#define RATE	10000000ull
#define PKT	1000u

/*
 * Flows that hold a chosen backlog (fraction of the buffer), with +-5 % noise
 * redrawn every 10 ms: the synthetic stand-ins for Copa, BBR and Cubic.
 */
struct occupancy_load {
	u32 count;
	double target[4];	/* fraction of limit, per flow */
	double noise[4];
	u64 next_redraw;
	u64 rng;
};

static double uniform(u64 *rng)
{
	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(*rng >> 11) / (double)(1ull << 53);
}

static void hold_occupancy(struct tsched *ts, void *ctx)
{
	struct occupancy_load *o = ctx;
	u32 i;

	if (ts->now >= o->next_redraw) {
		for (i = 0; i < o->count; i++)
			o->noise[i] = 1.0 + 0.1 * (uniform(&o->rng) - 0.5);
		o->next_redraw = ts->now + 10 * MS;
	}
	for (i = 0; i < o->count; i++) {
		u32 want = (u32)(o->target[i] * o->noise[i] * ts->s.cfg.limit);

		/* below the limit: a flow over its target drains while another fills */
		while (ts->s.flows[ts_bucket(ts, i)].qlen < want && ts->s.qlen < ts->s.cfg.limit)
			ts_enqueue(ts, i, PKT);
	}
}

static struct tsched *class_mode(u32 limit, u32 flows)
{
	struct cfc_config cfg = ts_default_config();

	cfg.mode = CFC_MODE_CLASS;
	cfg.limit = limit;
	return ts_new(&cfg, flows);
}

static int class_of(const struct tsched *ts, u32 flow)
{
	return cfc_flow_class(&ts->s, ts_bucket(ts, flow));
}

/* Serve for `duration`, failing if any flow changes class. */
static void assert_classes_stay(struct tsched *ts, struct occupancy_load *load, u64 duration)
{
	int start[4];
	u64 end = ts->now + duration;
	u32 i;

	for (i = 0; i < load->count; i++)
		start[i] = class_of(ts, i);
	while (ts->now < end) {
		ts_run_link(ts, RATE, 100 * MS, hold_occupancy, load);
		for (i = 0; i < load->count; i++)
			if (class_of(ts, i) != start[i])
				fail_msg("flow %u moved from class %d to %d under noise", i,
					 start[i], class_of(ts, i));
	}
}

static void low_medium_high_occupancy_find_their_classes(void **state)
{
	struct occupancy_load load = { .count = 3, .target = { 0.05, 0.30, 0.60 }, .rng = 1 };
	struct tsched *ts = class_mode(400, 3);
	u32 i;

	(void)state;
	for (i = 0; i < 3; i++)
		ts_enqueue(ts, i, PKT);
	/* flows 1 and 2 arrive new; flow 0's standing queue holds their ticks (pace adaptive) */
	ts_run_link(ts, RATE, 6 * SEC, hold_occupancy, &load);
	assert_int_equal(class_of(ts, 0), 1);
	assert_int_equal(class_of(ts, 1), 2);
	assert_int_equal(class_of(ts, 2), 3);
	assert_classes_stay(ts, &load, 10 * SEC);

	/* The gentle flow turns buffer-filling and the aggressive one gentle: they swap. */
	load.target[0] = 0.60;
	load.target[2] = 0.05;
	ts_run_link(ts, RATE, 3 * SEC, hold_occupancy, &load);
	assert_int_equal(class_of(ts, 0), 3);
	assert_int_equal(class_of(ts, 1), 2);
	assert_int_equal(class_of(ts, 2), 1);
	check_and_free(ts);
}

/* Two gentle flows are not split by their small differences (hysteresis + own occupancy). */
static void similar_gentle_flows_stay_together(void **state)
{
	struct occupancy_load load = { .count = 2, .target = { 0.02, 0.04 }, .rng = 3 };
	struct tsched *ts = class_mode(400, 2);

	(void)state;
	ts_enqueue(ts, 0, PKT);
	ts_enqueue(ts, 1, PKT);
	ts_run_link(ts, RATE, 2 * SEC, hold_occupancy, &load);
	assert_int_equal(class_of(ts, 0), 1);
	assert_int_equal(class_of(ts, 1), 1);
	assert_classes_stay(ts, &load, 5 * SEC);
	ts_free(ts);
}

/* A class is one FIFO: earliest-enqueued first across its flows, unlike DRR. */
static void class_serves_earliest_first(void **state)
{
	struct tsched *ts = class_mode(1000, 2);
	int order[6];
	u32 i;

	(void)state;
	ts_enqueue(ts, 0, PKT);
	ts_enqueue(ts, 1, PKT);
	ts->now += 300 * MS;		/* both old, both gentle: class 1 */
	while (ts_dequeue(ts, NULL) >= 0)
		;
	assert_int_equal(class_of(ts, 0), 1);
	assert_int_equal(class_of(ts, 1), 1);
	for (i = 0; i < 5; i++) {	/* a burst on flow 0, then one packet of flow 1 */
		ts_enqueue(ts, 0, PKT);
		ts->now += 10000;
	}
	ts_enqueue(ts, 1, PKT);
	for (i = 0; i < 6; i++)
		order[i] = ts_dequeue(ts, NULL);
	for (i = 0; i < 5; i++)
		assert_int_equal(order[i], 0);
	assert_int_equal(order[5], 1);
	ts_free(ts);
}

static struct tsched *external_mode(const u32 *weights)
{
	struct cfc_config cfg = ts_default_config();
	u32 i;

	cfg.mode = CFC_MODE_EXTERNAL;
	cfg.classes = 2;
	for (i = 0; weights && i < 2; i++)
		cfg.class_weight[i] = weights[i];
	return ts_new(&cfg, 5);
}

/* Flow i is in class 0 when i < split, else class 1; all kept backlogged. */
static void serve_external(struct tsched *ts, u32 split, u64 duration)
{
	u64 end = ts->now + duration;
	u32 i, len;

	while (ts->now < end) {
		for (i = 0; i < 5; i++)
			while (ts->s.flows[ts_bucket(ts, i)].qlen < 4)
				ts_enqueue_class(ts, i, PKT, i < split ? 0 : 1);
		if (ts_dequeue(ts, &len) >= 0)
			ts->now += ts_tx_ns(len, RATE);
	}
}

static double class0_share(const struct tsched *ts, u32 split)
{
	u64 c0 = 0, all = 0;
	u32 i;

	for (i = 0; i < 5; i++) {
		all += ts->bytes_out[i];
		if (i < split)
			c0 += ts->bytes_out[i];
	}
	return (double)c0 / (double)all;
}

static void external_classes_share_by_flows_or_weights(void **state)
{
	const u32 one_to_five[2] = { 1, 5 };
	struct tsched *ts;

	(void)state;
	ts = external_mode(NULL);	/* by active flows: 1 flow vs 4 flows */
	serve_external(ts, 1, 20 * SEC);
	if (fabs(class0_share(ts, 1) - 0.2) > 0.02 * 0.2)
		fail_msg("class share %.4f, expected 0.2", class0_share(ts, 1));
	assert_int_equal(ts->s.nnew, 0);	/* external classes know no new flows */
	ts_free(ts);

	ts = external_mode(one_to_five);	/* by configured weights 1:5, flows don't matter */
	serve_external(ts, 3, 20 * SEC);
	if (fabs(class0_share(ts, 3) - 1.0 / 6) > 0.02 / 6)
		fail_msg("class share %.4f, expected 1/6", class0_share(ts, 3));
	check_and_free(ts);
}

/* A flow relabelled while backlogged changes class without reordering. */
static void external_relabel_keeps_order(void **state)
{
	struct tsched *ts = external_mode(NULL);
	u32 i;

	(void)state;
	for (i = 0; i < 2000; i++) {
		ts_enqueue_class(ts, i % 3, 200 + i % 1000, (i / 7) % 2);
		if (i % 3 == 0)
			ts_dequeue(ts, NULL);
		ts->now += 50000;
		assert_null(ts_check(ts));
	}
	while (ts_dequeue(ts, NULL) >= 0)
		;
	assert_int_equal(ts->order_errors, 0);
	assert_true(ts->s.cnt.enqueued_pkts == ts->s.cnt.dequeued_pkts + ts->s.cnt.dropped_pkts);
	ts_free(ts);
}

/* Switching modes under load keeps every packet and every flow's order. */
static void mode_changes_under_load(void **state)
{
	static const u8 modes[] = { CFC_MODE_CLASS, CFC_MODE_EXTERNAL, CFC_MODE_FLOW,
				    CFC_MODE_EXTERNAL, CFC_MODE_CLASS, CFC_MODE_FLOW };
	struct cfc_config cfg = ts_default_config();
	struct ts_backlog keep = { .first = 0, .count = 12, .depth = 6, .len = 700 };
	struct tsched *ts = ts_new(&cfg, 12);
	size_t m;

	(void)state;
	for (m = 0; m < sizeof(modes); m++) {
		ts_run_link(ts, RATE, 400 * MS, ts_keep_backlogged, &keep);
		cfg.mode = modes[m];
		cfg.classes = (u8)(2 + m % 4);
		ts_change(ts, &cfg);
		assert_null(ts_check(ts));
	}
	ts_run_link(ts, RATE, 400 * MS, ts_keep_backlogged, &keep);
	check_and_free(ts);
}

CFC_TEST_GROUP(run_class_tests, "classes",
	cmocka_unit_test(low_medium_high_occupancy_find_their_classes),
	cmocka_unit_test(similar_gentle_flows_stay_together),
	cmocka_unit_test(class_serves_earliest_first),
	cmocka_unit_test(external_classes_share_by_flows_or_weights),
	cmocka_unit_test(external_relabel_keeps_order),
	cmocka_unit_test(mode_changes_under_load))
