// SPDX-License-Identifier: MIT
/*
 * Per-packet cost of the scheduling core: nanoseconds per enqueue+dequeue pair
 * with 1 to 10 000 backlogged flows, in each mode. Steady state: every flow
 * holds two packets; each step dequeues one packet and enqueues it again on
 * the same flow, while a simulated clock advances 1 us per pair (so ticks,
 * forgetting and reclassification run at their real rate). Packets come from
 * a preallocated pool: only the core is measured.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"

#define PAIRS		2000000u
#define REPEATS		5u
#define WARMUP_PAIRS	1500000u	/* 1.5 s of simulated time: every new flow is old */
#define PER_FLOW	2u

static const u32 flow_counts[] = { 1, 10, 100, 1000, 10000 };
static const char *const mode_names[] = { "flow", "class", "external" };

static double now_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One dequeue and one enqueue of the same packet, at simulated time *now. */
static void pairs(struct tsched *ts, u32 n, u64 *now)
{
	while (n--) {
		struct cfc_pkt *dropped = NULL;
		struct tpkt *p = (struct tpkt *)cfc_dequeue(&ts->s, *now, &dropped);
		struct cfc_key key = ts_key(ts, p->flow);

		cfc_enqueue(&ts->s, &p->node, &key, p->flow % 3, *now, &dropped);
		*now += 1000;
	}
}

static struct tsched *backlogged(u8 mode, u32 flows, struct tpkt **pool)
{
	struct cfc_config cfg = ts_default_config();
	struct tsched *ts;
	u32 i;

	cfg.mode = mode;
	cfg.flows = 16384;
	cfg.limit = CFC_LIMIT_MAX;
	cfg.memlimit = CFC_MEMLIMIT_MAX;
	ts = ts_new(&cfg, flows);
	*pool = calloc((size_t)flows * PER_FLOW, sizeof(struct tpkt));
	if (!*pool)
		abort();
	for (i = 0; i < flows * PER_FLOW; i++) {
		struct tpkt *p = &(*pool)[i];
		struct cfc_pkt *dropped = NULL;
		struct cfc_key key;

		p->flow = i % flows;
		p->node.len = 1000;
		p->node.truesize = 1256;
		key = ts_key(ts, p->flow);
		cfc_enqueue(&ts->s, &p->node, &key, p->flow % 3, ts->now, &dropped);
	}
	return ts;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median over REPEATS runs of ns per pair. */
static double ns_per_pair(u8 mode, u32 flows)
{
	double runs[REPEATS];
	struct tpkt *pool;
	struct tsched *ts = backlogged(mode, flows, &pool);
	u64 now = ts->now;
	u32 r;

	pairs(ts, WARMUP_PAIRS, &now);
	for (r = 0; r < REPEATS; r++) {
		double start = now_seconds();

		pairs(ts, PAIRS, &now);
		runs[r] = (now_seconds() - start) * 1e9 / PAIRS;
	}
	if (ts->s.qlen != flows * PER_FLOW)
		fprintf(stderr, "warning: backlog changed during the run\n");
	/* the pool owns the packets: detach them before the harness frees what is queued */
	cfc_reset(&ts->s, now);
	ts_free(ts);
	free(pool);
	qsort(runs, REPEATS, sizeof(runs[0]), cmp_double);
	return runs[REPEATS / 2];
}

int main(void)
{
	const size_t ncounts = sizeof(flow_counts) / sizeof(flow_counts[0]);
	double table[CFC_MODE_COUNT][sizeof(flow_counts) / sizeof(flow_counts[0])];
	size_t m, c;

	printf("confucius core: ns per enqueue+dequeue pair (median of %u runs of %u pairs)\n",
	       REPEATS, PAIRS);
	printf("%-9s", "mode");
	for (c = 0; c < ncounts; c++)
		printf(" %8u", flow_counts[c]);
	printf("   10000/10\n");
	for (m = 0; m < CFC_MODE_COUNT; m++) {
		printf("%-9s", mode_names[m]);
		for (c = 0; c < ncounts; c++) {
			table[m][c] = ns_per_pair((u8)m, flow_counts[c]);
			printf(" %8.1f", table[m][c]);
			fflush(stdout);
		}
		printf("   %8.2f\n", table[m][ncounts - 1] / table[m][1]);
	}
	printf("targets: flat (10000/10 <= 1.5) in every mode; < 100 ns per pair in mode flow\n");
	return 0;
}
