// SPDX-License-Identifier: MIT
/* Per-host fairness: hosts share the link before their old flows do, in cake's dual and triple modes. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"
#include "suites.h"

#define SEC	1000000000ull
#define RATE	100000000ull

enum { BUSY_FLOWS = 8, ALONE = BUSY_FLOWS, ALL_FLOWS = BUSY_FLOWS + 1 };
enum { BUSY_HOST = 1, OTHER_HOST = 2, FIRST_PEER = 10 };

/*
 * Eight flows between the busy host and eight peers, one between the other
 * host and a peer of its own; the busy host is their destination (downloads)
 * or, with `uploads`, their source.
 */
static struct tsched *two_hosts(u8 isolate, bool uploads)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;
	u32 i;

	cfg.isolate = isolate;
	ts = ts_new(&cfg, ALL_FLOWS);
	for (i = 0; i < ALL_FLOWS; i++) {
		u32 host = i == ALONE ? OTHER_HOST : BUSY_HOST, peer = FIRST_PEER + i;

		ts_set_hosts(ts, i, uploads ? host : peer, uploads ? peer : host);
	}
	return ts;
}

/* The lone flow's share once all nine are old and backlogged (2 s to age them, 10 s measured). */
static double lone_flow_share(struct tsched *ts)
{
	ts_measured_share(ts, RATE, ALL_FLOWS, ALONE, 2 * SEC);
	assert_int_equal(ts->s.nold, ALL_FLOWS);
	return ts_measured_share(ts, RATE, ALL_FLOWS, ALONE, 10 * SEC);
}

static void assert_share(double got, double want)
{
	if (fabs(got - want) > 0.02 * want)
		fail_msg("share %.4f, expected %.4f within 2%%", got, want);
}

/* Grouped by destination, the other host's one download earns what the busy host's eight do. */
static void dual_dsthost_shares_among_destinations(void **state)
{
	struct tsched *ts = two_hosts(CFC_ISOLATE_DSTHOST, false);

	(void)state;
	assert_share(lone_flow_share(ts), 1.0 / 2);
	check_and_free(ts);
}

/* Grouped by source, the same for uploads; downloads from distinct peers stay per flow. */
static void dual_srchost_shares_among_sources(void **state)
{
	struct tsched *up = two_hosts(CFC_ISOLATE_SRCHOST, true);
	struct tsched *down = two_hosts(CFC_ISOLATE_SRCHOST, false);

	(void)state;
	assert_share(lone_flow_share(up), 1.0 / 2);
	assert_share(lone_flow_share(down), 1.0 / ALL_FLOWS);
	check_and_free(up);
	check_and_free(down);
}

/* Triple-isolate is fair among both, so it shares uploads and downloads alike. */
static void triple_isolate_shares_in_both_directions(void **state)
{
	struct tsched *up = two_hosts(CFC_ISOLATE_HOSTS, true);
	struct tsched *down = two_hosts(CFC_ISOLATE_HOSTS, false);

	(void)state;
	assert_share(lone_flow_share(up), 1.0 / 2);
	assert_share(lone_flow_share(down), 1.0 / 2);
	check_and_free(up);
	check_and_free(down);
}

/* Isolate flows: every flow its own share, as before hosts were known. */
static void isolate_flows_shares_per_flow(void **state)
{
	struct tsched *ts = two_hosts(CFC_ISOLATE_FLOWS, false);

	(void)state;
	assert_share(lone_flow_share(ts), 1.0 / ALL_FLOWS);
	check_and_free(ts);
}

/* The busy host's flows share its half equally among themselves. */
static void a_hosts_flows_share_its_part_equally(void **state)
{
	struct tsched *ts = two_hosts(CFC_ISOLATE_HOSTS, false);
	u64 before[BUSY_FLOWS], all = 0;
	u32 i;

	(void)state;
	lone_flow_share(ts);
	for (i = 0; i < BUSY_FLOWS; i++)
		before[i] = ts->bytes_out[i];
	ts_measured_share(ts, RATE, ALL_FLOWS, ALONE, 10 * SEC);
	for (i = 0; i < BUSY_FLOWS; i++)
		all += ts->bytes_out[i] - before[i];
	for (i = 0; i < BUSY_FLOWS; i++)
		assert_share((double)(ts->bytes_out[i] - before[i]) / (double)all, 1.0 / BUSY_FLOWS);
	check_and_free(ts);
}

/* A change of isolation takes effect at the next quanta, with the loads counted all along. */
static void isolation_changes_under_load(void **state)
{
	struct tsched *ts = two_hosts(CFC_ISOLATE_FLOWS, false);
	struct cfc_config cfg = ts->s.cfg;

	(void)state;
	assert_share(lone_flow_share(ts), 1.0 / ALL_FLOWS);
	cfg.isolate = CFC_ISOLATE_DSTHOST;
	ts_change(ts, &cfg);
	assert_share(ts_measured_share(ts, RATE, ALL_FLOWS, ALONE, 10 * SEC), 1.0 / 2);
	check_and_free(ts);
}

/*
 * Flows told of no hosts (the kernel's keys under isolate flows) are one host's; told of
 * them later while backlogged (after a change to dual-dsthost), they take their load along.
 */
static void backlogged_flows_told_their_hosts_move_with_their_load(void **state)
{
	struct tsched *ts = two_hosts(CFC_ISOLATE_DSTHOST, false);
	u32 i;

	(void)state;
	for (i = 0; i < ALL_FLOWS; i++)
		ts_set_hosts(ts, i, 0, 0);
	assert_share(lone_flow_share(ts), 1.0 / ALL_FLOWS);
	for (i = 0; i < ALL_FLOWS; i++)
		ts_set_hosts(ts, i, FIRST_PEER + i, i == ALONE ? OTHER_HOST : BUSY_HOST);
	assert_share(ts_measured_share(ts, RATE, ALL_FLOWS, ALONE, 10 * SEC), 1.0 / 2);
	check_and_free(ts);
}

/* A host of more flows than a quantum has bytes still gets one quantum a round in all. */
static void a_host_of_many_flows_loses_nothing_to_rounding(void **state)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;
	u32 i, many = 200;

	(void)state;
	cfg.isolate = CFC_ISOLATE_DSTHOST;
	cfg.quantum = 300;	/* 1.5 bytes a flow a round: rounding down would give 1 */
	cfg.aqm_target_ns = 0;	/* 800 packets queued: no drop may take its part */
	cfg.maxdelay_ns = 0;
	ts = ts_new(&cfg, many + 1);
	for (i = 0; i < many + 1; i++)
		ts_set_hosts(ts, i, FIRST_PEER + i, i == many ? OTHER_HOST : BUSY_HOST);
	ts_measured_share(ts, RATE, many + 1, many, 10 * SEC);	/* until all are old */
	assert_int_equal(ts->s.nold, many + 1);
	assert_share(ts_measured_share(ts, RATE, many + 1, many, 10 * SEC), 1.0 / 2);
	check_and_free(ts);
}

CFC_TEST_GROUP(run_host_tests, "hosts",
	cmocka_unit_test(dual_dsthost_shares_among_destinations),
	cmocka_unit_test(dual_srchost_shares_among_sources),
	cmocka_unit_test(triple_isolate_shares_in_both_directions),
	cmocka_unit_test(isolate_flows_shares_per_flow),
	cmocka_unit_test(a_hosts_flows_share_its_part_equally),
	cmocka_unit_test(isolation_changes_under_load),
	cmocka_unit_test(backlogged_flows_told_their_hosts_move_with_their_load),
	cmocka_unit_test(a_host_of_many_flows_loses_nothing_to_rounding))
