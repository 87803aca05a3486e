// SPDX-License-Identifier: MIT
/*
 * The pace of the new flows' weights against the old flows it protects: a video
 * sender (an old flow with a delay-based rate controller: reactive, slow, GCC-like
 * or unresponsive) meets a burst of backlogged new flows on a 20 Mbit/s link,
 * under pace fixed (the papers' schedule) and pace adaptive (held ticks give share
 * back). Also E of Alg. 1 (only competing old flows count).
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"
#include "suites.h"

#define MS		1000000ull
#define LINK		20000000ull	/* bit/s */
#define PKT		1200u
#define STEP		(10 * MS)	/* the sender's control period */
#define HISTORY		32		/* delivery and delay samples, one per STEP */
#define STALL_DELAY	(150 * MS)	/* queueing delay that, with the path's, makes a stall */

/*
 * How a sender's rate controller reacts to its queue. A level controller cuts
 * once its queue has stood above THRESHOLD for `detect_ns`; a gradient
 * controller (GCC's over-use detector) cuts when its queueing delay grew by more
 * than THRESHOLD over the last `detect_ns`, seen `lag_ns` late (feedback), holds
 * while the delay falls and otherwise creeps up by 1 % per 100 ms: a queue that
 * stops growing after a cut is never drained by the sender, only by its share.
 */
struct controller {
	const char *name;
	u64 detect_ns;		/* 0: never reacts */
	u64 spacing_ns;		/* least time between two cuts */
	u32 cut_pct;		/* a cut sets the rate to this % of the delivery rate */
	u64 lag_ns;		/* gradient controllers: how late the delay is seen */
};

static const struct controller REACTIVE = { "reactive", 40 * MS, 40 * MS, 90, 0 };
/* GCC as the lab saw it if it reacted to the level: ~0.5 s to the first cut, then x0.85. */
static const struct controller SLOW = { "slow", 400 * MS, 200 * MS, 85, 0 };
/* GCC as it is: over-use is a growing delay (100 ms of trend, seen 100 ms late). */
static const struct controller GRADIENT = { "gradient", 100 * MS, 200 * MS, 85, 100 * MS };
static const struct controller UNRESPONSIVE = { "unresponsive", 0, 0, 100, 0 };

#define THRESHOLD	(10 * MS)	/* queueing delay a controller calls overuse */

struct sender {
	const struct controller *ctl;
	u32 flow;
	u64 rate;			/* bit/s */
	u64 next_send, next_step;
	u64 over_since, last_cut;	/* 0: not over / never cut */
	u64 delivered[HISTORY];		/* the flow's bytes out at each of the last steps */
	u64 delay[HISTORY];		/* its head packet's sojourn at each of the last steps */
	u32 steps;
	u64 max_sojourn;		/* ns, of its head packet */
	u64 stalled_ns;			/* time its head packet waited more than STALL_DELAY */
};

struct experiment {
	struct sender rt;
	struct ts_backlog web;		/* the burst of new flows, once it has arrived */
	u64 burst_at;
	int burst_arrived;
	u64 converged_at;		/* first time with no new flow left, after the burst */
};

static u64 head_sojourn(const struct tsched *ts, u32 flow)
{
	const struct cfc_flow *f = &ts->s.flows[ts_bucket(ts, flow)];

	if (!f->qlen)
		return 0;
	return (u64)(u32)((u32)(ts->now >> 10) - f->head->stamp) << 10;
}

/* Bytes per second the flow delivered over the last HISTORY / 2 steps. */
static u64 delivery_rate(const struct tsched *ts, const struct sender *snd)
{
	u32 n = snd->steps < HISTORY / 2 ? snd->steps : HISTORY / 2;
	u64 then = snd->delivered[(snd->steps - n) % HISTORY];

	if (!n)
		return snd->rate / 8;
	return (ts->bytes_out[snd->flow] - then) * 1000000000ull / (n * STEP);
}

static int may_cut(const struct tsched *ts, const struct sender *snd)
{
	return !snd->last_cut || ts->now - snd->last_cut >= snd->ctl->spacing_ns;
}

static void cut(struct tsched *ts, struct sender *snd)
{
	snd->rate = delivery_rate(ts, snd) * 8 * snd->ctl->cut_pct / 100;
	snd->last_cut = ts->now;
}

/* The sojourn `ago` steps back (0 before the history starts). */
static s64 delay_ago(const struct sender *snd, u32 ago)
{
	return snd->steps > ago ? (s64)snd->delay[(snd->steps - 1 - ago) % HISTORY] : 0;
}

static void control_gradient(struct tsched *ts, struct sender *snd)
{
	u32 lag = (u32)(snd->ctl->lag_ns / STEP), span = (u32)(snd->ctl->detect_ns / STEP);
	s64 growth = delay_ago(snd, lag) - delay_ago(snd, lag + span);

	if (growth > (s64)THRESHOLD) {
		if (may_cut(ts, snd))
			cut(ts, snd);
	} else if (growth >= -(s64)THRESHOLD && snd->steps % 10 == 0) {
		snd->rate += snd->rate / 100;
	}
}

static void control(struct tsched *ts, struct sender *snd)
{
	u64 sojourn = head_sojourn(ts, snd->flow);

	if (sojourn > snd->max_sojourn)
		snd->max_sojourn = sojourn;
	if (sojourn > STALL_DELAY)
		snd->stalled_ns += STEP;
	snd->delay[snd->steps % HISTORY] = sojourn;
	if (snd->ctl->lag_ns) {
		control_gradient(ts, snd);
	} else if (snd->ctl->detect_ns && sojourn > THRESHOLD) {
		if (!snd->over_since)
			snd->over_since = ts->now;
		if (ts->now - snd->over_since >= snd->ctl->detect_ns && may_cut(ts, snd))
			cut(ts, snd);
	} else {
		snd->over_since = 0;
	}
	snd->delivered[snd->steps % HISTORY] = ts->bytes_out[snd->flow];
	snd->steps++;
}

static void experiment_step(struct tsched *ts, void *ctx)
{
	struct experiment *x = ctx;
	struct sender *snd = &x->rt;

	while (snd->next_send <= ts->now) {
		ts_enqueue(ts, snd->flow, PKT);
		snd->next_send += ts_tx_ns(PKT, snd->rate);
	}
	if (ts->now >= snd->next_step) {
		control(ts, snd);
		snd->next_step += STEP;
	}
	if (!x->burst_arrived && ts->now >= x->burst_at)
		x->burst_arrived = 1;
	if (x->burst_arrived) {
		ts_keep_backlogged(ts, &x->web);
		if (!x->converged_at && ts->s.nnew == 0)
			x->converged_at = ts->now;
	}
}

struct outcome {
	u64 max_sojourn;	/* ns, the old flow's head packet */
	u64 stalled;		/* ns it waited more than STALL_DELAY */
	u64 converge;		/* ns from the burst until no new flow is left */
	u64 holds;
	u64 delay_drops;
};

/* One video sender at `rate`, alone for a second, then `burst` backlogged new flows. */
static struct outcome run_burst_with(struct cfc_config cfg, const struct controller *ctl,
				     u64 rate, u32 burst)
{
	struct tsched *ts;
	struct experiment x = {
		.rt = { .ctl = ctl, .flow = 0, .rate = rate },
		.web = { .first = 1, .count = burst, .depth = 4, .len = 1500 },
		.burst_at = 1000 * MS,
	};
	struct outcome out;

	ts = ts_new(&cfg, burst + 1);
	x.rt.next_send = ts->now;
	x.rt.next_step = ts->now;
	x.burst_at += ts->now;
	ts_run_link(ts, LINK, 7000 * MS, experiment_step, &x);
	assert_null(ts_check(ts));
	out.max_sojourn = x.rt.max_sojourn;
	out.stalled = x.rt.stalled_ns;
	out.converge = x.converged_at ? x.converged_at - x.burst_at : ~0ull;
	out.holds = ts->s.cnt.holds;
	out.delay_drops = ts->s.cnt.delay_drops;
	print_message("%-12s %-8s max sojourn %4llu ms, over %llu ms for %4llu ms, "
		      "fair shares after %4llu ms, %llu ticks held, %llu late drops\n",
		      ctl->name, cfg.pace == CFC_PACE_FIXED ? "fixed" : "adaptive",
		      (unsigned long long)(out.max_sojourn / MS),
		      (unsigned long long)(STALL_DELAY / MS), (unsigned long long)(out.stalled / MS),
		      (unsigned long long)(out.converge / MS), (unsigned long long)out.holds,
		      (unsigned long long)out.delay_drops);
	ts_free(ts);
	return out;
}

/* pace fixed runs as the papers' schedule: without the maxdelay bound they did not have. */
static struct outcome run_burst(u8 pace, const struct controller *ctl, u64 rate, u32 burst)
{
	struct cfc_config cfg = ts_default_config();

	cfg.pace = pace;
	if (pace == CFC_PACE_FIXED)
		cfg.maxdelay_ns = 0;
	return run_burst_with(cfg, ctl, rate, burst);
}

#define RT_RATE		15600000ull	/* GCC's target in the lab before the page arrived */
#define BURST		9

/*
 * The fixed schedule reaches fair shares after ceil(log2(BURST)) + 1 ticks.
 * Pace adaptive may add to that, whatever the old flow does: twice maxhold (each
 * held tick, and the doubling its give-back undoes), the tick that graduates
 * flows already at weight 1, and the two ticks that double S from the give-back
 * floor (1/4) to 1 again.
 */
static u64 convergence_bound(u8 pace)
{
	struct cfc_config cfg = ts_default_config();
	u64 ticks = 5;	/* S: 1 -> 2 -> 4 -> 8 -> 16 >= 9 */

	if (pace == CFC_PACE_FIXED)
		return ticks * cfg.interval_ns;
	return (ticks + 3) * cfg.interval_ns + 2 * cfg.maxhold_ns;
}

/*
 * A reactive or slow old flow: pace adaptive holds ticks while its queue stands,
 * so its largest queueing delay is lower than under the papers' schedule (for the
 * reactive flow, by more than half), and the new flows still reach fair shares
 * within the fixed schedule's time plus maxhold.
 */
static void adaptive_pace_follows_the_old_flow(void **state)
{
	const struct controller *ctls[] = { &REACTIVE, &SLOW };
	u32 i;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct outcome fixed = run_burst(CFC_PACE_FIXED, ctls[i], RT_RATE, BURST);
		struct outcome adaptive = run_burst(CFC_PACE_ADAPTIVE, ctls[i], RT_RATE, BURST);

		assert_int_equal(fixed.holds, 0);
		assert_true(adaptive.holds > 0);
		assert_true(adaptive.max_sojourn < fixed.max_sojourn);
		if (ctls[i] == &REACTIVE)
			assert_true(adaptive.max_sojourn * 2 < fixed.max_sojourn);
		assert_true(fixed.converge <= convergence_bound(CFC_PACE_FIXED));
		assert_true(adaptive.converge <= convergence_bound(CFC_PACE_ADAPTIVE));
	}
}

/*
 * A GCC-like old flow cuts its rate while its delay grows and holds it while the
 * delay falls, so it never drains a standing queue itself: under the papers'
 * schedule its queue stands above STALL_DELAY for a long time (a stall); pace
 * adaptive gives share back until the queue drains, and stalls for less than a
 * quarter of that time.
 */
static void adaptive_pace_drains_a_gradient_controller(void **state)
{
	struct outcome fixed = run_burst(CFC_PACE_FIXED, &GRADIENT, RT_RATE, BURST);
	struct outcome adaptive = run_burst(CFC_PACE_ADAPTIVE, &GRADIENT, RT_RATE, BURST);

	(void)state;
	assert_true(fixed.stalled >= 400 * MS);
	assert_true(adaptive.stalled * 4 < fixed.stalled);
	assert_true(adaptive.max_sojourn < fixed.max_sojourn);
	assert_true(adaptive.converge <= convergence_bound(CFC_PACE_ADAPTIVE));
}

/* An unresponsive old flow (UDP, or a BBR flow at its window) cannot starve the newcomers. */
static void unresponsive_old_flow_holds_at_most_maxhold(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct outcome out = run_burst(CFC_PACE_ADAPTIVE, &UNRESPONSIVE, RT_RATE, BURST);

	(void)state;
	assert_int_equal(out.holds, cfg.maxhold_ns / cfg.interval_ns);
	assert_true(out.converge <= convergence_bound(CFC_PACE_ADAPTIVE));
}

/*
 * An old flow that offers more than the whole link sends (a video above the link's
 * rate when that rate falls) drains no queue with a larger share: nothing is held,
 * and the newcomers reach fair shares one tick after the fixed schedule's time.
 */
static void old_flow_above_the_link_rate_holds_nothing(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct outcome fixed = run_burst(CFC_PACE_FIXED, &UNRESPONSIVE, LINK * 5 / 4, BURST);
	struct outcome out = run_burst(CFC_PACE_ADAPTIVE, &UNRESPONSIVE, LINK * 5 / 4, BURST);

	(void)state;
	assert_int_equal(out.holds, 0);
	assert_true(out.converge <= fixed.converge + cfg.interval_ns + STEP);
}

/*
 * The bound acts when the flow's turn comes; the sender, sampling its head every
 * STEP, may see it up to a DRR round plus a step after it passed maxdelay.
 */
#define HEAD_SEEN_LATE	(2 * STEP)

/*
 * An unresponsive old flow at the rate it had alone: without a bound its queue
 * holds seconds under either pace; with maxdelay (the default) its head packet
 * waits hardly longer than that, its oldest packets are dropped, and the
 * newcomers' convergence is unchanged.
 */
static void maxdelay_bounds_an_old_flow_s_queue(void **state)
{
	u8 paces[] = { CFC_PACE_FIXED, CFC_PACE_ADAPTIVE };
	u32 i;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct cfc_config cfg = ts_default_config();
		struct outcome bounded, unbounded;

		cfg.pace = paces[i];
		bounded = run_burst_with(cfg, &UNRESPONSIVE, RT_RATE, BURST);
		cfg.maxdelay_ns = 0;
		unbounded = run_burst_with(cfg, &UNRESPONSIVE, RT_RATE, BURST);
		assert_true(unbounded.max_sojourn >= 2000 * MS);
		assert_int_equal(unbounded.delay_drops, 0);
		assert_true(bounded.max_sojourn <= ts_default_config().maxdelay_ns + HEAD_SEEN_LATE);
		assert_true(bounded.delay_drops > 0);
		assert_true(bounded.converge <= convergence_bound(paces[i]));
	}
}

/*
 * A window-based sender whose acks its own queue delays stops sending: the bound
 * still holds, at dequeue, for what it left queued (one old flow, 10 s of queue
 * at 1 Mbit/s, no arrivals): no packet leaves after waiting longer than maxdelay.
 */
static void maxdelay_holds_for_a_flow_that_stopped_sending(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts = ts_new(&cfg, 1);
	u32 i;

	(void)state;
	for (i = 0; i < 1000; i++)
		ts_enqueue(ts, 0, PKT);
	ts_run_link(ts, 1000000ull, 2000 * MS, NULL, NULL);
	assert_true(ts->s.cnt.delay_drops > 0);
	assert_true(((u64)ts->s.cnt.max_sojourn << 10) <= cfg.maxdelay_ns);
	assert_int_equal(ts->s.qlen, 0);
	assert_null(ts_check(ts));
	print_message("1000 packets queued at 1 Mbit/s: %llu sent within maxdelay, %llu dropped\n",
		      (unsigned long long)ts->s.cnt.dequeued_pkts,
		      (unsigned long long)ts->s.cnt.delay_drops);
	ts_free(ts);
}

/*
 * An old flow that sends less than its share keeps no queue: nothing is held, and
 * fair shares come one tick later than under the fixed schedule (the tick that
 * finds the new flows at weight 1 graduates them).
 */
static void adaptive_pace_costs_one_tick_without_a_standing_queue(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct outcome fixed = run_burst(CFC_PACE_FIXED, &UNRESPONSIVE, 1000000ull, BURST);
	struct outcome adaptive = run_burst(CFC_PACE_ADAPTIVE, &UNRESPONSIVE, 1000000ull, BURST);

	(void)state;
	assert_int_equal(adaptive.holds, 0);
	/* the experiment notices "no new flow left" at its next event: within a step */
	assert_true(adaptive.converge >= fixed.converge + cfg.interval_ns &&
		    adaptive.converge <= fixed.converge + cfg.interval_ns + STEP);
}

/*
 * A held tick halves S, down to the floor and never below it; arrivals during
 * holds keep S, and so the old flows' share (Alg. 2); a completion takes its
 * flow's weight along, below the floor too, which the next hold does not undo.
 */
static void held_ticks_give_back_down_to_the_floor(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;
	u32 i;

	(void)state;
	cfg.maxdelay_ns = 0;	/* the standing queue stays: only the pace acts on it */
	ts = ts_new(&cfg, 4);
	for (i = 0; i < 1000; i++)		/* a standing queue of 1000 packets: 10 s at 1 Mbit/s */
		ts_enqueue(ts, 0, PKT);
	for (i = 0; i < 30; i++) {		/* two new flows, still backlogged at the ticks */
		ts_enqueue(ts, 1, PKT);
		ts_enqueue(ts, 2, PKT);
	}
	assert_int_equal(ts->s.new_sum, CFC_W_ONE);
	ts_run_link(ts, 1000000ull, cfg.interval_ns + 20 * MS, NULL, NULL);
	assert_int_equal(ts->s.cnt.holds, 1);
	assert_int_equal(ts->s.new_sum, CFC_W_ONE / 2);
	ts_enqueue(ts, 3, PKT);
	assert_int_equal(ts->s.new_sum, CFC_W_ONE / 2);
	assert_int_equal(ts->s.nnew, 3);
	ts_run_link(ts, 1000000ull, 3 * cfg.interval_ns, NULL, NULL);
	assert_int_equal(ts->s.cnt.holds, 4);
	assert_int_equal(ts->s.nnew, 2);	/* flow 3 sent one packet and completed */
	assert_int_equal(ts->s.new_sum, CFC_GIVE_BACK_FLOOR - CFC_GIVE_BACK_FLOOR / 3);
	ts_run_link(ts, 1000000ull, cfg.interval_ns, NULL, NULL);
	assert_int_equal(ts->s.cnt.holds, 5);
	assert_int_equal(ts->s.new_sum, CFC_GIVE_BACK_FLOOR - CFC_GIVE_BACK_FLOOR / 3);
	check_and_free(ts);
}

/*
 * A key frame offers more than the link sends for a few tens of milliseconds: what
 * the old flows offered is judged over the whole interval, so a burst in the recent
 * window before a tick does not release the hold on a standing queue.
 */
static void a_key_frame_before_the_tick_still_holds(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;
	u32 i;

	(void)state;
	cfg.maxdelay_ns = 0;
	ts = ts_new(&cfg, 3);
	for (i = 0; i < 1000; i++)		/* a standing queue: 10 s at 1 Mbit/s */
		ts_enqueue(ts, 0, PKT);
	for (i = 0; i < 30; i++) {
		ts_enqueue(ts, 1, PKT);
		ts_enqueue(ts, 2, PKT);
	}
	ts_run_link(ts, 1000000ull, cfg.interval_ns - 30 * MS, NULL, NULL);
	for (i = 0; i < 12; i++)		/* 14.4 KB: twice what the link sends in the window */
		ts_enqueue(ts, 0, PKT);
	ts_run_link(ts, 1000000ull, 50 * MS, NULL, NULL);
	assert_int_equal(ts->s.cnt.ticks + ts->s.cnt.holds, 1);
	assert_int_equal(ts->s.cnt.holds, 1);
	check_and_free(ts);
}

/*
 * E counts the old flows that compete, not every remembered one: a page load's
 * first connections graduate and go quiet, then its next wave arrives beside a
 * backlogged real-time flow. Each tick takes at most half of the real-time
 * flow's share: 1/2, 1/3, 1/5, 1/9, then its fair share 1/11 (with the twenty
 * quiet flows in E, the first tick would leave it 1/22).
 */
static void only_competing_old_flows_count(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts = ts_new(&cfg, 31);
	const u32 rt = 10;	/* flows 0-9: the second wave; 11-30: the first */
	const double want[] = { 1.0 / 2, 1.0 / 3, 1.0 / 5, 1.0 / 9, 1.0 / 11 };
	double share, before = 0;
	u32 i, step;

	(void)state;
	cfg.pace = CFC_PACE_FIXED;
	ts_change(ts, &cfg);
	for (i = rt; i < 31; i++)
		ts_enqueue(ts, i, PKT);
	ts_run_link(ts, 100000000ull, 6 * cfg.interval_ns, ts_keep_backlogged,
		    &(struct ts_backlog){ .first = rt, .count = 21, .depth = 4, .len = PKT });
	assert_int_equal(ts->s.nold, 21);
	assert_int_equal(ts->s.nnew, 0);
	for (i = 0; i < rt; i++)			/* the second wave; the first goes quiet */
		ts_enqueue(ts, i, PKT);
	share = ts_measured_share(ts, 100000000ull, rt + 1, rt, cfg.interval_ns - 1);
	for (step = 0; step < 5; step++) {
		print_message("tick %u: real-time share %.4f\n", step, share);
		assert_true(share >= 0.98 * before / 2);	/* within the measurement's 2 % */
		assert_true(share > want[step] * 0.95 && share < want[step] * 1.05);
		before = share;
		share = ts_measured_share(ts, 100000000ull, rt + 1, rt, cfg.interval_ns);
	}
	check_and_free(ts);
}

CFC_TEST_GROUP(run_pace_tests, "pace (fixed, adaptive) and E",
	cmocka_unit_test(only_competing_old_flows_count),
	cmocka_unit_test(adaptive_pace_follows_the_old_flow),
	cmocka_unit_test(adaptive_pace_drains_a_gradient_controller),
	cmocka_unit_test(unresponsive_old_flow_holds_at_most_maxhold),
	cmocka_unit_test(old_flow_above_the_link_rate_holds_nothing),
	cmocka_unit_test(maxdelay_bounds_an_old_flow_s_queue),
	cmocka_unit_test(maxdelay_holds_for_a_flow_that_stopped_sending),
	cmocka_unit_test(adaptive_pace_costs_one_tick_without_a_standing_queue),
	cmocka_unit_test(held_ticks_give_back_down_to_the_floor),
	cmocka_unit_test(a_key_frame_before_the_tick_still_holds))
