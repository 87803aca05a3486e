/* SPDX-License-Identifier: MIT */
/*
 * A userspace host for the scheduling core: test packets, a simulated clock
 * and link, per-flow order tracking, and a checker of the core's invariants.
 * Shared by the unit tests, the property test, the fuzzer and the benchmark.
 */
#ifndef CFC_HARNESS_H
#define CFC_HARNESS_H

#include <stdbool.h>
#include "confucius_api.h"

struct tpkt {
	struct cfc_pkt node;	/* the core's part */
	u32 flow;		/* test flow id */
	u32 seq;		/* per-flow sequence number */
};

struct tsched {
	struct cfc_sched s;
	void *table;
	void *hosts;
	void *heaps;		/* the classes' heaps, once a mode needs them */
	u64 now;		/* ns */
	u32 nflows;		/* test flow ids are 0..nflows-1 */
	u32 *seq_in;		/* next sequence number to give, per flow */
	u32 *seq_out;		/* next sequence number expected to leave, per flow */
	u64 *bytes_out;		/* bytes dequeued, per flow */
	u64 *drops;		/* packets dropped, per flow */
	u64 *marks;		/* packets sent marked CE, per flow */
	bool *ect;		/* whether a flow's packets are ECN-capable (false unless set) */
	u32 *srchost;		/* test host ids of each flow (its own flow id unless set) */
	u32 *dsthost;
	u64 order_errors;	/* packets that left a flow out of order */
};

struct tsched *ts_new(const struct cfc_config *cfg, u32 nflows);
void ts_free(struct tsched *ts);
struct cfc_config ts_default_config(void);

/* The hash that lands test flow `flow` in its own bucket (flow mod buckets). */
u32 ts_hash(const struct tsched *ts, u32 flow);
u32 ts_bucket(const struct tsched *ts, u32 flow);
/* What the core is told of test flow `flow`: its hash and its hosts'. */
struct cfc_key ts_key(const struct tsched *ts, u32 flow);
/* Flow `flow` goes from host `src` to host `dst` (each lands in bucket id mod buckets). */
void ts_set_hosts(struct tsched *ts, u32 flow, u32 src, u32 dst);

enum cfc_verdict ts_enqueue(struct tsched *ts, u32 flow, u32 len);
enum cfc_verdict ts_enqueue_class(struct tsched *ts, u32 flow, u32 len, u32 cls);
/* Dequeue at ts->now; returns the flow id or -1, and the length in *len. */
int ts_dequeue(struct tsched *ts, u32 *len);
void ts_change(struct tsched *ts, const struct cfc_config *cfg);
void ts_reset(struct tsched *ts);

/* NULL when every invariant of the core holds, else a description of the first broken one. */
const char *ts_check(const struct tsched *ts);

/* Nanoseconds a packet of len bytes takes at rate bit/s. */
u64 ts_tx_ns(u32 len, u64 rate);

/*
 * Serve the queue as a link of `rate` bit/s for `duration` ns: each step calls
 * refill(ts, ctx) (which may enqueue), then dequeues one packet and advances
 * the clock by its transmission time (or by 10 us when nothing is sent).
 */
typedef void (*ts_refill_fn)(struct tsched *ts, void *ctx);
void ts_run_link(struct tsched *ts, u64 rate, u64 duration, ts_refill_fn refill, void *ctx);

/* Keep every flow in [first, first+count) backlogged with at least `depth` packets of len bytes. */
struct ts_backlog {
	u32 first, count, depth, len;
};
void ts_keep_backlogged(struct tsched *ts, void *ctx);

/* The share of flow `who` among flows [0, count), kept backlogged with 1500-byte packets, over `duration` at `rate`. */
double ts_measured_share(struct tsched *ts, u64 rate, u32 count, u32 who, u64 duration);

#endif
