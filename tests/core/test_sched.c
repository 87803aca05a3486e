// SPDX-License-Identifier: MIT
/* Deficit weighted round robin: long-run shares match the weights; flows keep their order. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>

#include "harness.h"
#include "suites.h"

#define MS	1000000ull
#define SEC	1000000000ull
#define RATE	100000000ull

/* Keeps flows [0, count) backlogged with packets of random sizes from 64 to 1514 bytes. */
struct mixed_backlog {
	u32 count;
	u64 rng;
};

static void keep_backlogged_mixed(struct tsched *ts, void *ctx)
{
	struct mixed_backlog *m = ctx;
	u32 i;

	for (i = 0; i < m->count; i++) {
		while (ts->s.flows[ts_bucket(ts, i)].qlen < 4) {
			m->rng = m->rng * 6364136223846793005ull + 1442695040888963407ull;
			ts_enqueue(ts, i, 64 + (u32)((m->rng >> 33) % 1451));
		}
	}
}

static u64 total_bytes(const struct tsched *ts, u32 first, u32 count)
{
	u64 sum = 0;
	u32 i;

	for (i = first; i < first + count; i++)
		sum += ts->bytes_out[i];
	return sum;
}

static void assert_within_2pct(double got, double want)
{
	if (fabs(got - want) > 0.02 * want)
		fail_msg("share %.5f, expected %.5f within 2%%", got, want);
}

/*
 * Weights frozen (a 60 s interval, so no tick): 3 old flows of weight 1 and 5
 * new flows of weight 1/5. Every old flow should get 1/4, every new one 1/20.
 */
static void shares_match_weights(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct mixed_backlog load = { .count = 8, .rng = 42 };
	struct tsched *ts;
	u64 all;
	u32 i;

	(void)state;
	/* Build the old set with a short interval, then freeze the weights. */
	cfg.interval_ns = 10 * MS;
	ts = ts_new(&cfg, 8);
	for (i = 0; i < 3; i++)
		ts_enqueue(ts, i, 1500);
	load.count = 3;
	ts_run_link(ts, RATE, 50 * MS, keep_backlogged_mixed, &load);
	assert_int_equal(ts->s.nold, 3);
	cfg.interval_ns = 60 * SEC;
	ts_change(ts, &cfg);
	for (i = 3; i < 8; i++)
		ts_enqueue(ts, i, 1500);
	assert_int_equal(ts->s.nnew, 5);
	for (i = 0; i < 8; i++)
		ts->bytes_out[i] = 0;
	load.count = 8;
	ts_run_link(ts, RATE, 10 * SEC, keep_backlogged_mixed, &load);
	all = total_bytes(ts, 0, 8);
	for (i = 0; i < 3; i++)
		assert_within_2pct((double)ts->bytes_out[i] / (double)all, 1.0 / 4);
	for (i = 3; i < 8; i++)
		assert_within_2pct((double)ts->bytes_out[i] / (double)all, 1.0 / 20);
	check_and_free(ts);
}

/* Keep two groups backlogged (small and large packets) while serving the link. */
static void serve_two_groups(struct tsched *ts, struct ts_backlog *a, struct ts_backlog *b,
			     u64 duration)
{
	u64 end = ts->now + duration;

	while (ts->now < end) {
		u32 len;

		ts_keep_backlogged(ts, a);
		ts_keep_backlogged(ts, b);
		if (ts_dequeue(ts, &len) >= 0)
			ts->now += ts_tx_ns(len, RATE);
	}
}

/* With equal weights every backlogged flow gets the same bytes, whatever its packet sizes. */
static void equal_weights_share_equally(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct ts_backlog small = { .first = 0, .count = 5, .depth = 8, .len = 100 };
	struct ts_backlog large = { .first = 5, .count = 5, .depth = 4, .len = 1500 };
	struct tsched *ts;
	u64 all;
	u32 i;

	(void)state;
	ts = ts_new(&cfg, 10);
	serve_two_groups(ts, &small, &large, 2 * SEC);	/* until every flow is old */
	assert_int_equal(ts->s.nold, 10);
	for (i = 0; i < 10; i++)
		ts->bytes_out[i] = 0;
	serve_two_groups(ts, &small, &large, 10 * SEC);
	all = total_bytes(ts, 0, 10);
	for (i = 0; i < 10; i++)
		assert_within_2pct((double)ts->bytes_out[i] / (double)all, 1.0 / 10);
	check_and_free(ts);
}

/* Packets of one flow leave in arrival order, through arrivals, ticks, forgetting and drops. */
static void order_is_preserved_within_flows(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;
	u64 rng = 7;
	u32 i;

	(void)state;
	cfg.limit = 200;
	cfg.flows = 16;		/* 64 test flows on 16 buckets: colliding flows share a queue */
	ts = ts_new(&cfg, 64);
	for (i = 0; i < 300000; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		if ((rng >> 60) < 9)
			ts_enqueue(ts, (u32)(rng >> 20) % 64, 64 + (u32)(rng >> 40) % 1450);
		else
			ts_dequeue(ts, NULL);
		ts->now += (rng >> 50) % 200000;
	}
	check_and_free(ts);
}

/* Eight backlogged bulk flows beside flow 8, which sends `len` bytes now and then. */
struct bulk_and_sparse {
	struct ts_backlog bulk;
	u64 every, next;	/* ns between flow 8's packets; when the next is due */
	u32 len;
	bool refill_at_once;	/* flow 8 sends again the moment its queue empties */
};

static void bulk_and_sparse_refill(struct tsched *ts, void *ctx)
{
	struct bulk_and_sparse *b = ctx;
	bool empty = !ts->s.flows[ts_bucket(ts, 8)].qlen;

	ts_keep_backlogged(ts, &b->bulk);
	if (b->refill_at_once ? empty : ts->now >= b->next) {
		ts_enqueue(ts, 8, b->len);
		b->next = ts->now + b->every;
	}
}

static struct tsched *bulk_with_sparse_old_flow(struct bulk_and_sparse *load)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts = ts_new(&cfg, 9);

	ts_run_link(ts, RATE, 2 * SEC, bulk_and_sparse_refill, load);
	assert_int_equal(ts->s.nold, 9);
	return ts;
}

/*
 * A ping among backlogged old flows leaves with the next dequeue, ahead of the
 * bulk flows' round, as under fq_codel's new-flow list.
 */
static void sparse_flow_goes_before_backlogged_ones(void **state)
{
	struct bulk_and_sparse load = {
		.bulk = { .first = 0, .count = 8, .depth = 4, .len = 1500 },
		.every = 200 * MS, .len = 84,
	};
	struct tsched *ts = bulk_with_sparse_old_flow(&load);
	u32 ping;

	(void)state;
	for (ping = 0; ping < 10; ping++) {
		u32 len;

		while (ts->now + ts_tx_ns(1500, RATE) < load.next) {
			ts_keep_backlogged(ts, &load.bulk);
			assert_in_range(ts_dequeue(ts, &len), 0, 7);
			ts->now += ts_tx_ns(len, RATE);
		}
		ts->now = load.next;
		bulk_and_sparse_refill(ts, &load);
		assert_int_equal(ts_dequeue(ts, &len), 8);
		ts->now += ts_tx_ns(len, RATE);
	}
	check_and_free(ts);
}

/*
 * A flow that sends again the moment its queue empties has missed no round:
 * it is not sparse, and takes no more than a bulk flow's share.
 */
static void refilling_at_once_takes_a_fair_share(void **state)
{
	struct bulk_and_sparse load = {
		.bulk = { .first = 0, .count = 8, .depth = 4, .len = 1500 },
		.every = 200 * MS, .len = 1500,
	};
	struct tsched *ts = bulk_with_sparse_old_flow(&load);
	u32 i;

	(void)state;
	load.refill_at_once = true;
	for (i = 0; i < 9; i++)
		ts->bytes_out[i] = 0;
	ts_run_link(ts, RATE, 5 * SEC, bulk_and_sparse_refill, &load);
	assert_within_2pct((double)ts->bytes_out[8] / (double)total_bytes(ts, 0, 9), 1.0 / 9);
	check_and_free(ts);
}

#define MINUTE	(60 * SEC)

/* One earliest-first class, with no bound on a packet's wait. */
static struct tsched *one_fifo_class(u32 nflows)
{
	struct cfc_config cfg = ts_default_config();

	cfg.mode = CFC_MODE_EXTERNAL;
	cfg.classes = 1;
	cfg.maxdelay_ns = 0;
	return ts_new(&cfg, nflows);
}

/*
 * Stamps are 32-bit ticks of 1.024 us: two packets 40 minutes apart are more
 * than half their range apart. The older one still leaves first, after an idle
 * stretch with no call into the core at all.
 */
static void oldest_leaves_first_after_40_silent_minutes(void **state)
{
	struct tsched *ts = one_fifo_class(2);

	(void)state;
	ts_enqueue_class(ts, 0, 100, 0);
	ts->now += 40 * MINUTE;
	ts_enqueue_class(ts, 1, 100, 0);
	assert_int_equal(ts_dequeue(ts, NULL), 0);
	assert_int_equal(ts_dequeue(ts, NULL), 1);
	check_and_free(ts);
}

/*
 * A packet held 80 minutes (past the stamps' whole range) while others come
 * and go every minute: it leaves first, and its age reads as the horizon the
 * ages saturate at, not as what is left after the stamps wrapped.
 */
static void ages_saturate_past_the_stamps_range(void **state)
{
	struct tsched *ts = one_fifo_class(3);
	struct cfc_flow_stats held;
	u32 minute;

	(void)state;
	ts_enqueue_class(ts, 0, 100, 0);
	for (minute = 1; minute <= 80; minute++) {
		ts->now += MINUTE;
		ts_enqueue_class(ts, 1 + minute % 2, 100, 0);
		assert_null(ts_check(ts));
	}
	assert_true(cfc_flow_stats(&ts->s, ts_bucket(ts, 0), ts->now, &held));
	assert_int_equal(held.sojourn_ns, CFC_AGE_HORIZON_NS);
	assert_int_equal(ts_dequeue(ts, NULL), 0);
	assert_int_equal(ts->s.cnt.max_sojourn, (u32)(CFC_AGE_HORIZON_NS >> 10));
	check_and_free(ts);
}

CFC_TEST_GROUP(run_sched_tests, "DWRR scheduling",
	cmocka_unit_test(shares_match_weights),
	cmocka_unit_test(equal_weights_share_equally),
	cmocka_unit_test(order_is_preserved_within_flows),
	cmocka_unit_test(sparse_flow_goes_before_backlogged_ones),
	cmocka_unit_test(refilling_at_once_takes_a_fair_share),
	cmocka_unit_test(oldest_leaves_first_after_40_silent_minutes),
	cmocka_unit_test(ages_saturate_past_the_stamps_range))
