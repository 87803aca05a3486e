/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Confucius scheduling core, the implementation: included by the one file of
 * each host that compiles it, as codel_impl.h is.
 *
 * Structure: flows live in a fixed table of hash buckets. Each remembered flow
 * belongs to one queue: Q_new (queue 0) while it is new, a class (1..K) once it
 * is old. Queues are served by deficit weighted round robin with weights
 * derived from their flows' weights; inside a queue, flows are served by DRR
 * (Q_new, and the old flows in flow mode) or earliest-enqueued-first
 * (occupancy and external classes). All new flows always carry the same
 * weight S/|N| (arrivals, ticks and completions scale them alike), so a
 * queue's weight is O(1) to compute and service costs O(1) per packet in the
 * number of flows for DRR queues, O(log n) for earliest-first classes.
 */
#ifndef CONFUCIUS_IMPL_H
#define CONFUCIUS_IMPL_H

#include <linux/bitops.h>
#include <linux/list.h>
#include <linux/math.h>
#include <linux/math64.h>
#include "confucius.h"

/*
 * The API's functions are static, as codel_impl.h's are, in the one file that
 * includes this. Userspace hosts, which call them from several files, define
 * CFC_FN empty in that file and declare them for the others. The name is as
 * wide as "static", so that the parameters align as they will in the kernel.
 */
#ifndef CFC_FN
#define CFC_FN static
#endif

#define CFC_TICK_SHIFT		10	/* stamps are ns >> 10 */
#define CFC_RATE_SHIFT		20	/* shaper: ns per byte, fixed point */
#define CFC_DROP_BATCH		64	/* most packets dropped per fattest-flow scan */
#define CFC_SHAPER_MAX_LAG_NS	10000000ull /* late-timer catch-up the shaper allows */
#define CFC_OCC_EWMA_SHIFT	2	/* occupancy smoothing: 1/4 per reclassify period */
#define CFC_NEVER		(~0ull)
#define CFC_NO_SOJOURN		(~0u)	/* no old-flow packet left in the recent window */
#define CFC_AGE_HORIZON		((u32)(CFC_AGE_HORIZON_NS >> CFC_TICK_SHIFT))
#define CFC_SWEEP_NS		(CFC_AGE_HORIZON_NS / 2)

/* ----------------------------------------------------------------- time */

static u32 ticks_of(u64 ns)
{
	return (u32)(ns >> CFC_TICK_SHIFT);
}

static bool tick_before(u32 a, u32 b)
{
	return (s32)(a - b) < 0;
}

/*
 * Whether every queued packet is past the age horizon: no sweep ran for a
 * sweep period and a horizon, so none was queued since the one that was due.
 */
static bool all_past_horizon(const struct cfc_sched *s, u64 now)
{
	return now - s->last_sweep_ns >= CFC_SWEEP_NS + CFC_AGE_HORIZON_NS;
}

/* How long a packet stamped `stamp` has waited, in ticks, saturated at the horizon. */
static u32 packet_age(const struct cfc_sched *s, u32 stamp, u64 now)
{
	u32 age = ticks_of(now) - stamp;

	return all_past_horizon(s, now) || age > CFC_AGE_HORIZON ? CFC_AGE_HORIZON : age;
}

static u64 head_sojourn_ns(const struct cfc_sched *s, const struct cfc_flow *f, u64 now)
{
	return (u64)packet_age(s, f->head->stamp, now) << CFC_TICK_SHIFT;
}

/* --------------------------------------------------------- configuration */

/* The defaults of every option. */
CFC_FN void cfc_config_default(struct cfc_config *cfg)
{
	u32 i;

	cfg->bandwidth = 0;
	cfg->interval_ns = CFC_DEFAULT_INTERVAL_NS;
	cfg->reclassify_ns = CFC_DEFAULT_RECLASSIFY_NS;
	cfg->target_ns = CFC_DEFAULT_TARGET_NS;
	cfg->maxhold_ns = CFC_DEFAULT_MAXHOLD_NS;
	cfg->maxdelay_ns = CFC_DEFAULT_MAXDELAY_NS;
	cfg->aqm_target_ns = CFC_DEFAULT_AQM_TARGET_NS;
	cfg->aqm_interval_ns = CFC_DEFAULT_AQM_INTERVAL_NS;
	cfg->aqm_settle_ns = CFC_DEFAULT_AQM_SETTLE_NS;
	cfg->ecn = CFC_DEFAULT_ECN;
	cfg->pace = CFC_PACE_ADAPTIVE;
	cfg->limit = CFC_DEFAULT_LIMIT;
	cfg->memlimit = CFC_DEFAULT_MEMLIMIT;
	cfg->flows = CFC_DEFAULT_FLOWS;
	cfg->quantum = CFC_DEFAULT_QUANTUM;
	cfg->hysteresis = CFC_DEFAULT_HYSTERESIS;
	cfg->mode = CFC_MODE_FLOW;
	cfg->classes = CFC_DEFAULT_CLASSES;
	cfg->isolate = CFC_DEFAULT_ISOLATE;
	for (i = 0; i < CFC_MAX_CLASSES; i++)
		cfg->class_weight[i] = 0;
}

/* NULL when the configuration is valid, else what is wrong with it. */
CFC_FN const char *cfc_config_check(const struct cfc_config *cfg)
{
	if (cfg->flows < CFC_FLOWS_MIN || cfg->flows > CFC_FLOWS_MAX)
		return "flows must be between 1 and 32768";
	if (cfg->limit < CFC_LIMIT_MIN || cfg->limit > CFC_LIMIT_MAX)
		return "limit must be between 1 and 1048576 packets";
	if (cfg->memlimit < CFC_MEMLIMIT_MIN || cfg->memlimit > CFC_MEMLIMIT_MAX)
		return "memlimit must be between 64KiB and 2GiB";
	if (cfg->quantum < CFC_QUANTUM_MIN || cfg->quantum > CFC_QUANTUM_MAX)
		return "quantum must be between 64 and 65536 bytes";
	if (cfg->interval_ns < CFC_PERIOD_MIN_NS || cfg->interval_ns > CFC_PERIOD_MAX_NS)
		return "interval must be between 1ms and 60s";
	if (cfg->reclassify_ns < CFC_PERIOD_MIN_NS || cfg->reclassify_ns > CFC_PERIOD_MAX_NS)
		return "reclassify must be between 1ms and 60s";
	if (cfg->target_ns < CFC_PERIOD_MIN_NS || cfg->target_ns > CFC_PERIOD_MAX_NS)
		return "target must be between 1ms and 60s";
	if (cfg->maxhold_ns > CFC_MAXHOLD_MAX_NS)
		return "maxhold must be at most 60s";
	if (cfg->maxdelay_ns &&
	    (cfg->maxdelay_ns < CFC_PERIOD_MIN_NS || cfg->maxdelay_ns > CFC_MAXDELAY_MAX_NS))
		return CFC_MAXDELAY_RANGE_MSG;
	if (cfg->aqm_target_ns &&
	    (cfg->aqm_target_ns < CFC_AQM_TARGET_MIN_NS || cfg->aqm_target_ns > CFC_PERIOD_MAX_NS))
		return CFC_AQM_TARGET_RANGE_MSG;
	if (cfg->aqm_interval_ns < CFC_PERIOD_MIN_NS || cfg->aqm_interval_ns > CFC_PERIOD_MAX_NS)
		return "aqm_interval must be between 1ms and 60s";
	if (cfg->aqm_settle_ns > CFC_PERIOD_MAX_NS)
		return "aqm_settle must be at most 60s";
	if (cfg->pace >= CFC_PACE_COUNT)
		return "pace must be fixed or adaptive";
	if (cfg->bandwidth &&
	    (cfg->bandwidth < CFC_BANDWIDTH_MIN || cfg->bandwidth > CFC_BANDWIDTH_MAX))
		return CFC_BANDWIDTH_RANGE_MSG;
	if (cfg->hysteresis > CFC_HYSTERESIS_MAX)
		return "hysteresis must be at most 50%";
	if (cfg->mode >= CFC_MODE_COUNT)
		return "mode must be flow, class or external";
	if (cfg->classes < 1 || cfg->classes > CFC_MAX_CLASSES)
		return "classes must be between 1 and 8";
	if (cfg->isolate >= CFC_ISOLATE_COUNT)
		return "isolate must be flows, dual-srchost, dual-dsthost or triple-isolate";
	return NULL;
}

/* Bytes of zeroed memory the host provides for a table of `flows` buckets. */
CFC_FN u64 cfc_table_bytes(u32 flows)
{
	return (u64)flows * sizeof(struct cfc_flow);
}

/* Bytes of memory the host provides for the hosts of a table of `flows` buckets. */
CFC_FN u64 cfc_hosts_bytes(u32 flows)
{
	return (u64)flows * sizeof(struct cfc_hosts);
}

/*
 * Whether a configuration needs the classes' heaps (modes class and external
 * serve a class earliest-first). Mode flow, the default, does without them, so
 * a host allocates them only when it first configures such a mode.
 */
CFC_FN bool cfc_needs_heaps(const struct cfc_config *cfg)
{
	return cfg->mode != CFC_MODE_FLOW;
}

/* Bytes of memory the host provides for the classes' heaps of `flows` buckets. */
CFC_FN u64 cfc_heaps_bytes(u32 flows)
{
	return (u64)flows * CFC_MAX_CLASSES * sizeof(struct cfc_heap_entry);
}

/* Hand the core the classes' heaps, once, before the first mode that needs them. */
CFC_FN void cfc_set_heaps(struct cfc_sched *s, void *heaps)
{
	u32 i;

	for (i = 1; i < CFC_NQUEUES; i++)
		s->queues[i].heap = (struct cfc_heap_entry *)heaps + (u64)(i - 1) * s->cfg.flows;
}

static u32 nclasses(const struct cfc_sched *s)
{
	return s->cfg.mode == CFC_MODE_FLOW ? 1 : s->cfg.classes;
}

static void set_rate(struct cfc_sched *s)
{
	s->ns_per_byte_fp = s->cfg.bandwidth ?
		div64_u64(8000000000ull << CFC_RATE_SHIFT, s->cfg.bandwidth) : 0;
}

/* ----------------------------------------------- earliest-first class heap */

/*
 * A 4-ary min-heap: keys live in the heap array, so the four children of a
 * node are compared within one cache line and the heap is half as deep as a
 * binary one. Each flow remembers its position, for removal when it moves or
 * is trimmed.
 *
 * Not <linux/min_heap.h>, which is binary: the core with this heap made
 * binary took, at 10000 flows, 88.6 against 85.5 ns per packet in mode class
 * and 63.4 against 50.3 in mode external (enqueue and dequeue of the core
 * alone, medians of three alternated runs; no difference up to 100 flows).
 */
#define HEAP_ARITY 4
static u32 flow_index(const struct cfc_sched *s, const struct cfc_flow *f)
{
	return (u32)(f - s->flows);
}

static void heap_set(struct cfc_sched *s, struct cfc_queue *q, u32 pos, struct cfc_heap_entry e)
{
	q->heap[pos] = e;
	s->flows[e.flow].heap_pos = pos;
}

static void heap_sift_up(struct cfc_sched *s, struct cfc_queue *q, u32 pos)
{
	struct cfc_heap_entry e = q->heap[pos];

	while (pos > 0) {
		u32 parent = (pos - 1) / HEAP_ARITY;

		if (!tick_before(e.stamp, q->heap[parent].stamp))
			break;
		heap_set(s, q, pos, q->heap[parent]);
		pos = parent;
	}
	heap_set(s, q, pos, e);
}

static void heap_sift_down(struct cfc_sched *s, struct cfc_queue *q, u32 pos)
{
	struct cfc_heap_entry e = q->heap[pos];

	for (;;) {
		u32 first = HEAP_ARITY * pos + 1, end = first + HEAP_ARITY, child = first, c;

		if (first >= q->heap_len)
			break;
		if (end > q->heap_len)
			end = q->heap_len;
		for (c = first + 1; c < end; c++)
			if (tick_before(q->heap[c].stamp, q->heap[child].stamp))
				child = c;
		if (!tick_before(q->heap[child].stamp, e.stamp))
			break;
		heap_set(s, q, pos, q->heap[child]);
		pos = child;
	}
	heap_set(s, q, pos, e);
}

static void heap_push(struct cfc_sched *s, struct cfc_queue *q, struct cfc_flow *f)
{
	struct cfc_heap_entry e = { .stamp = f->head->stamp, .flow = flow_index(s, f) };
	u32 pos = q->heap_len++;

	heap_set(s, q, pos, e);
	heap_sift_up(s, q, pos);
}

static void heap_remove(struct cfc_sched *s, struct cfc_queue *q, u32 pos)
{
	u32 last = --q->heap_len;

	if (pos == last)
		return;
	heap_set(s, q, pos, q->heap[last]);
	heap_sift_down(s, q, pos);
	heap_sift_up(s, q, pos);
}

/* The flow's head packet changed to a later one: move it down to its new place. */
static void heap_head_advanced(struct cfc_sched *s, struct cfc_queue *q, struct cfc_flow *f)
{
	q->heap[f->heap_pos].stamp = f->head->stamp;
	heap_sift_down(s, q, f->heap_pos);
}

/* ------------------------------------------------------------------ hosts */

/* Whether a backlogged flow counts in its hosts' loads: an old flow served by DRR. */
static bool flow_loads_hosts(const struct cfc_sched *s, const struct cfc_flow *f)
{
	return f->queue != CFC_QNEW && !s->queues[f->queue].fifo;
}

static void hosts_load(struct cfc_sched *s, const struct cfc_flow *f, int by)
{
	const struct cfc_hosts *of = &s->hosts[flow_index(s, f)];

	s->hosts[of->flow_src].src_load += by;
	s->hosts[of->flow_dst].dst_load += by;
}

/* How many backlogged old flows share the quantum of this flow's host (at least 1). */
static u32 host_load(const struct cfc_sched *s, const struct cfc_flow *f)
{
	const struct cfc_hosts *of = &s->hosts[flow_index(s, f)];
	u32 src = s->hosts[of->flow_src].src_load, dst = s->hosts[of->flow_dst].dst_load;

	switch (s->cfg.isolate) {
	case CFC_ISOLATE_SRCHOST:
		return src;
	case CFC_ISOLATE_DSTHOST:
		return dst;
	case CFC_ISOLATE_HOSTS:
		return src > dst ? src : dst;
	}
	return 1;
}

/*
 * The hosts of the packet's flow. A backlogged flow whose hosts change (the
 * host started or stopped telling them, or two flows share the bucket) takes
 * its load along, so that every count is taken back from where it was given.
 */
static void flow_set_hosts(struct cfc_sched *s, struct cfc_flow *f, const struct cfc_key *key)
{
	struct cfc_hosts *of = &s->hosts[flow_index(s, f)];
	u16 src = (u16)reciprocal_scale(key->srchost, s->cfg.flows);
	u16 dst = (u16)reciprocal_scale(key->dsthost, s->cfg.flows);
	bool counted;

	if (of->flow_src == src && of->flow_dst == dst)
		return;
	counted = f->qlen && flow_loads_hosts(s, f);
	if (counted)
		hosts_load(s, f, -1);
	of->flow_src = src;
	of->flow_dst = dst;
	if (counted)
		hosts_load(s, f, 1);
}

/*
 * A flow's DRR quantum: with hosts isolated, an old flow's part of its host's
 * quantum, shared among the host's backlogged old flows. The remainder of the
 * division is handed out by the queue's turn count, so that the parts average
 * quantum / load exactly (a host of 800 flows would lose 47 % of a 1514-byte
 * quantum to rounding down); a part may be 0 where the load exceeds the
 * quantum, and the next turns make up for it.
 */
static s32 flow_quantum(const struct cfc_sched *s, const struct cfc_flow *f)
{
	u32 load;

	if (s->cfg.isolate == CFC_ISOLATE_FLOWS || !flow_loads_hosts(s, f))
		return (s32)s->cfg.quantum;
	load = host_load(s, f);
	return (s32)((s->cfg.quantum + s->queues[f->queue].turns % load) / load);
}

/* ------------------------------------------------------ queue membership */

/*
 * Whether a flow that ran empty comes back sparse: it has sent nothing while its
 * queue's ring handed out a quantum to every flow now backlogged there (a round).
 * Such a flow sends little (a ping, a DNS query, a VoIP stream, a video between
 * its frames) and is served before the backlogged ones for one quantum, as
 * fq_codel's new flows are. A flow that refills as soon as it empties has missed
 * no round and takes its turn at the tail, so the first place cannot be farmed.
 */
static bool comes_back_sparse(const struct cfc_queue *q, const struct cfc_flow *f)
{
	return q->nactive && q->turns - f->left_turn >= q->nactive;
}

/*
 * A flow that gained a backlog (or arrived backlogged) joins its queue's service;
 * `woke` when it did so by a packet's arrival, not by moving between queues.
 */
static void flow_attach_backlog(struct cfc_sched *s, struct cfc_flow *f, bool woke)
{
	struct cfc_queue *q = &s->queues[f->queue];

	if (flow_loads_hosts(s, f))
		hosts_load(s, f, 1);
	if (q->fifo) {
		heap_push(s, q, f);
	} else {
		f->deficit = flow_quantum(s, f);
		if (woke && comes_back_sparse(q, f))
			list_add_tail(&f->sched, &q->sparse);
		else
			list_add_tail(&f->sched, &q->ring);
	}
	if (q->nactive++ == 0) {
		q->deficit = 0;
		list_add_tail(&q->round, &s->round);
	}
}

static void flow_detach_backlog(struct cfc_sched *s, struct cfc_flow *f)
{
	struct cfc_queue *q = &s->queues[f->queue];

	if (flow_loads_hosts(s, f))
		hosts_load(s, f, -1);
	if (q->fifo)
		heap_remove(s, q, f->heap_pos);
	else
		list_del_init(&f->sched);
	f->left_turn = q->turns;
	if (--q->nactive == 0)
		list_del_init(&q->round);
}

static void queue_join(struct cfc_sched *s, struct cfc_flow *f)
{
	struct cfc_queue *q = &s->queues[f->queue];

	list_add_tail(&f->member, &q->members);
	q->nflows++;
	q->qlen += f->qlen;
	q->backlog += f->backlog;
}

static void queue_leave(struct cfc_sched *s, struct cfc_flow *f)
{
	struct cfc_queue *q = &s->queues[f->queue];

	list_del_init(&f->member);
	q->nflows--;
	q->qlen -= f->qlen;
	q->backlog -= f->backlog;
}

/* Move a remembered flow to another queue; its packets keep their order. */
static void flow_move(struct cfc_sched *s, struct cfc_flow *f, u32 to)
{
	bool backlogged = f->qlen > 0;

	if (backlogged)
		flow_detach_backlog(s, f);
	queue_leave(s, f);
	f->queue = (u8)to;
	queue_join(s, f);
	if (backlogged)
		flow_attach_backlog(s, f, false);
}

/* ------------------------------------------------------------ occupancy */

/* Accumulate backlog x time up to now, for the time-averaged occupancy. */
static void occ_account(struct cfc_flow *f, u64 now)
{
	u32 t = ticks_of(now);

	f->occ_area += (u64)f->qlen * (u32)(t - f->occ_stamp);
	f->occ_stamp = t;
}

/* Fold the period's mean backlog into the flow's smoothed occupancy. */
static void occ_update(struct cfc_flow *f, u64 now, u32 period)
{
	u32 mean;

	occ_account(f, now);
	mean = period ? (u32)div64_u64(f->occ_area << CFC_OCC_SHIFT, period) : 0;
	f->occupancy = (u32)((s32)f->occupancy +
			     (((s32)mean - (s32)f->occupancy) >> CFC_OCC_EWMA_SHIFT));
	f->occ_area = 0;
}

/* Occupancy as a fraction of the buffer (limit), CFC_W_ONE units. */
static u64 occ_fraction(const struct cfc_sched *s, u64 occ)
{
	return div64_u64(occ << (CFC_W_SHIFT - CFC_OCC_SHIFT), s->cfg.limit);
}

/* Target of class i (1..K): the centre of its band, (2i - 1) / 2K of the buffer. */
static u64 class_target(const struct cfc_sched *s, u32 i)
{
	return div64_u64((u64)(2 * i - 1) << CFC_W_SHIFT, 2 * nclasses(s));
}

/* The class whose target is nearest to the flow's occupancy. */
static u32 nearest_class(const struct cfc_sched *s, const struct cfc_flow *f)
{
	u32 k = nclasses(s);
	u32 c = 1 + (u32)((occ_fraction(s, f->occupancy) * k) >> CFC_W_SHIFT);

	return c > k ? k : c;
}

/* ------------------------------------------------------------ idle flows */

static struct list_head *idle_list(struct cfc_sched *s, const struct cfc_flow *f)
{
	return f->state == CFC_FLOW_NEW ? &s->idle_new : &s->idle_old;
}

/* How long a flow is remembered once its queue ran empty. */
static u64 keep_ns(const struct cfc_sched *s, const struct cfc_flow *f)
{
	if (f->state == CFC_FLOW_NEW)
		return s->cfg.interval_ns;
	return CFC_OLD_KEEP_INTERVALS * s->cfg.interval_ns;
}

/* An idle flow joins its idle list in time order: from the tail, as it is mostly the newest. */
static void idle_insert(struct cfc_sched *s, struct cfc_flow *f)
{
	struct list_head *head = idle_list(s, f);
	struct cfc_flow *at;

	list_for_each_entry_reverse(at, head, sched)
		if (at->idle_since <= f->idle_since)
			break;
	list_add(&f->sched, &at->sched);
}

/* A new flow becomes old; an idle one moves to the old flows' idle list. */
static void flow_age(struct cfc_sched *s, struct cfc_flow *f)
{
	f->state = CFC_FLOW_OLD;
	if (!f->qlen) {
		list_del_init(&f->sched);
		idle_insert(s, f);
	}
}

static u64 recent_ns(const struct cfc_sched *s)
{
	return s->cfg.interval_ns >> CFC_RECENT_SHIFT;
}

/* Pace adaptive judges the old flows' queues over the recent window before each tick. */
static bool in_window_before_tick(const struct cfc_sched *s, u64 now)
{
	return s->nnew && now + recent_ns(s) >= s->next_tick_ns;
}

static void tick_watch_reset(struct cfc_sched *s)
{
	s->old_sojourn_min = CFC_NO_SOJOURN;
	s->old_offered = 0;
	s->link_sent = 0;
}

/*
 * E of Alg. 1: the old flows that compete, i.e. backlogged or empty for less than
 * the recent window. Idle flows that are only remembered do not count: with them,
 * one tick could take far more than half of the backlogged old flows' share.
 */
static u32 competing_old_flows(const struct cfc_sched *s, u64 now)
{
	u64 since = now > recent_ns(s) ? now - recent_ns(s) : 0;
	const struct cfc_flow *f;
	u32 i, n = 0;

	for (i = 1; i <= nclasses(s); i++)
		n += s->queues[i].nactive;
	list_for_each_entry_reverse(f, &s->idle_old, sched) {
		if (f->idle_since < since)
			break;
		n++;
	}
	return n;
}

/* ------------------------------------------------------------ new flows */

/* Something is now due at t: cfc_advance must look again by then. */
static void note_event(struct cfc_sched *s, u64 t)
{
	if (t < s->next_event_ns)
		s->next_event_ns = t;
}

static u32 first_class_queue(const struct cfc_sched *s, const struct cfc_flow *f)
{
	return s->cfg.mode == CFC_MODE_CLASS ? nearest_class(s, f) : 1;
}

static void make_old(struct cfc_sched *s, struct cfc_flow *f, u32 queue)
{
	f->state = CFC_FLOW_OLD;
	f->queue = (u8)queue;
	s->nold++;
	queue_join(s, f);
}

static u32 external_queue(const struct cfc_sched *s, u32 cls)
{
	return 1 + (cls < s->cfg.classes ? cls : s->cfg.classes - 1u);
}

/* N is empty: no weight is held or owed for new flows. */
static void new_flows_none(struct cfc_sched *s)
{
	s->nnew = 0;
	s->new_sum = 0;
	s->new_owed = 0;
}

/*
 * Alg. 2, sum-preserving: a newcomer takes S/(|N|+1) and the others are scaled
 * by |N|/(|N|+1), so S, and the old flows' share, do not change. With no old
 * flow there is nobody to protect and the newcomer is old at once.
 */
static void flow_arrive(struct cfc_sched *s, struct cfc_flow *f, u32 cls, u64 now)
{
	f->occupancy = 0;
	f->occ_area = 0;
	f->occ_stamp = ticks_of(now);
	f->aqm = (struct cfc_aqm){ 0 };
	if (s->cfg.mode == CFC_MODE_EXTERNAL) {
		make_old(s, f, external_queue(s, cls));
		return;
	}
	if (s->nold == 0) {
		make_old(s, f, first_class_queue(s, f));
		return;
	}
	if (s->nnew == 0) {
		s->new_sum = CFC_W_ONE;
		s->held_ns = 0;
		tick_watch_reset(s);
		s->next_tick_ns = now + s->cfg.interval_ns;
		note_event(s, s->next_tick_ns);
	}
	s->nnew++;
	f->state = CFC_FLOW_NEW;
	f->queue = CFC_QNEW;
	queue_join(s, f);
}

static void graduate_all(struct cfc_sched *s)
{
	struct cfc_queue *qnew = &s->queues[CFC_QNEW];

	while (!list_empty(&qnew->members)) {
		struct cfc_flow *f = list_first_entry(&qnew->members, struct cfc_flow, member);

		flow_age(s, f);
		flow_move(s, f, first_class_queue(s, f));
	}
	s->nold += s->nnew;
	new_flows_none(s);
}

/*
 * Pace adaptive: an old flow whose queue did not once fall to `target` in the
 * recent window has not yet followed its last cut of share, so the tick is held,
 * unless the old flows together offered at least what the whole link sent since
 * the last tick: then no share drains their queues (a video above the link's rate
 * when that rate falls), and holding would only keep the newcomers waiting. A
 * whole interval, not the recent window: a key frame offers more than the link
 * sends for a few tens of milliseconds. At most `maxhold` is held per burst of
 * new flows: an old flow delays the newcomers' fair share by at most twice that
 * (each held tick, and the doubling its give-back undoes), and the ticks back
 * from the floor.
 */
static bool tick_held(struct cfc_sched *s)
{
	if (s->cfg.pace == CFC_PACE_FIXED ||
	    s->held_ns + s->cfg.interval_ns > s->cfg.maxhold_ns ||
	    s->old_sojourn_min == CFC_NO_SOJOURN ||
	    ((u64)s->old_sojourn_min << CFC_TICK_SHIFT) <= s->cfg.target_ns ||
	    s->old_offered >= s->link_sent)
		return false;
	s->held_ns += s->cfg.interval_ns;
	s->cnt.holds++;
	return true;
}

/*
 * A held tick gives back half of S (down to the floor): a delay-gradient
 * controller such as GCC stops cutting once its queue stops growing and never
 * drains a queue that merely stands, so only a larger share can drain it.
 * Completions may have taken S below the floor already: it never rises here.
 */
static void give_back(struct cfc_sched *s)
{
	u64 half = s->new_sum >> 1;

	if (half >= CFC_GIVE_BACK_FLOOR)
		s->new_sum = half;
	else if (s->new_sum > CFC_GIVE_BACK_FLOOR)
		s->new_sum = CFC_GIVE_BACK_FLOOR;
}

/*
 * Alg. 1: every new weight doubles, and S is raised to E if below (see reweight).
 * Pace adaptive then returns what completed new flows took with them, as far as the
 * papers' bound allows: S at most 2S + E, so that the competing old flows keep at
 * least half of their share.
 */
static void double_weights(struct cfc_sched *s, u64 t)
{
	u64 competing = (u64)competing_old_flows(s, t) << CFC_W_SHIFT;
	u64 bound = (s->new_sum << 1) + competing, returned;

	s->cnt.ticks++;
	s->new_sum <<= 1;
	if (s->new_sum < competing)
		s->new_sum = competing;
	returned = bound - s->new_sum;
	if (returned > s->new_owed)
		returned = s->new_owed;
	s->new_sum += returned;
	s->new_owed -= returned;
}

/*
 * Alg. 1 at tick time t: every new weight doubles; if the new flows together
 * still weigh less than the competing old ones (E), they are raised to match (the
 * old flows lose at most half per tick, never below their fair share); new
 * flows reaching weight 1 are old. Pace adaptive: a held tick gives back
 * instead, and new flows become old only at an unheld tick that finds them at
 * weight 1 already (capped there meanwhile), so that the last step, too, can be
 * given back while an old flow follows it.
 */
static void reweight(struct cfc_sched *s, u64 t)
{
	u64 full = (u64)s->nnew << CFC_W_SHIFT;
	bool held = tick_held(s), at_one = s->new_sum >= full;

	if (held)
		give_back(s);
	else
		double_weights(s, t);
	tick_watch_reset(s);
	if (s->nold == 0 || (s->cfg.pace == CFC_PACE_FIXED ? s->new_sum >= full : !held && at_one))
		graduate_all(s);
	else if (s->new_sum > full)
		s->new_sum = full;
}

/*
 * Alg. 3 hands a completed new flow's weight to the other new flows, which leaves
 * the old flows' share alone only while every new flow is backlogged. Here a new
 * flow completes after an interval of silence, through which the old flows used
 * its weight: handing it on then takes that share back from them at once, with no
 * tick to pace or hold it (a page's quiet connections completing raised its busy
 * ones from 0.09 to 0.5 each, and above an old flow's weight, between two ticks).
 * Under pace adaptive the weight leaves with the flow and is owed to the others,
 * returned at the next unheld tick (double_weights), so the new flows' weights
 * change only at ticks; pace fixed follows the papers.
 */
static void new_flow_complete(struct cfc_sched *s)
{
	if (s->cfg.pace == CFC_PACE_ADAPTIVE) {
		u64 weight = div64_u64(s->new_sum, s->nnew);

		s->new_sum -= weight;
		s->new_owed += weight;
	}
	if (--s->nnew == 0)
		new_flows_none(s);
}

static void flow_forget(struct cfc_sched *s, struct cfc_flow *f)
{
	list_del_init(&f->sched);
	queue_leave(s, f);
	if (f->state == CFC_FLOW_NEW)
		new_flow_complete(s);
	else
		s->nold--;
	f->state = CFC_FLOW_FREE;
}

/* ----------------------------------------------------- reclassification */

/*
 * Intra-queue examination (eq. 2-3 of the first paper): a flow holding more than
 * 1/|Q_i| + alpha of its class's buffer is too aggressive for it, one holding
 * less than 1/|Q_i| - alpha too gentle. A move must also agree with the flow's
 * own occupancy against the class target, so that similar gentle flows (two
 * real-time flows) are not split by their small differences.
 */
static int intra_direction(const struct cfc_sched *s, const struct cfc_flow *f,
			   u32 i, u64 sum, u32 n)
{
	u64 share, fair, own;

	if (n < 2 || sum == 0)
		return 0;
	fair = CFC_W_ONE / n;
	share = div64_u64((u64)f->occupancy << CFC_W_SHIFT, sum);
	own = occ_fraction(s, f->occupancy);
	if (share >= fair + s->cfg.hysteresis && own > class_target(s, i))
		return 1;
	if (share + s->cfg.hysteresis <= fair && own < class_target(s, i))
		return -1;
	return 0;
}

/*
 * Queue-level examination: a class whose length (the occupancy of all its
 * flows) leaves its safe region, which reaches to the neighbours' targets,
 * moves to that neighbour as a whole.
 */
static int class_direction(const struct cfc_sched *s, u32 i, u64 sum)
{
	u64 length = occ_fraction(s, sum);

	if (i < nclasses(s) && length > class_target(s, i + 1))
		return 1;
	if (i > 1 && length < class_target(s, i - 1))
		return -1;
	return 0;
}

static u64 class_occupancy_sum(const struct cfc_queue *q)
{
	const struct cfc_flow *f;
	u64 sum = 0;

	list_for_each_entry(f, &q->members, member)
		sum += f->occupancy;
	return sum;
}

static void update_occupancies(struct cfc_sched *s, u64 now, u32 period)
{
	u32 i;

	for (i = 0; i <= nclasses(s); i++) {
		struct cfc_flow *f;

		list_for_each_entry(f, &s->queues[i].members, member)
			occ_update(f, now, period);
	}
}

/*
 * Move the flows of class i that want to go in direction `want` (0: whatever
 * intra_direction says, restricted to `only`); returns how many moved.
 */
static u32 move_flows(struct cfc_sched *s, u32 i, u64 sum, u32 n, int whole, int only)
{
	struct cfc_flow *f, *next;
	u32 moved = 0;

	list_for_each_entry_safe(f, next, &s->queues[i].members, member) {
		int dir = whole ? whole : intra_direction(s, f, i, sum, n);

		if (f->moved_epoch == s->reclassify_epoch || !dir || (only && dir != only))
			continue;
		f->moved_epoch = s->reclassify_epoch;
		flow_move(s, f, (u32)((int)i + dir));
		s->cnt.moves++;
		moved++;
	}
	return moved;
}

/*
 * A class moves as a whole when its length says so. Otherwise its too
 * aggressive flows move up first; only when none does are too gentle ones
 * moved down, since a flow's small share may be due to one that is leaving
 * (demoting it too would make the pair swap places forever).
 */
static void reexamine_class(struct cfc_sched *s, u32 i, u64 sum, u32 n)
{
	int whole = class_direction(s, i, sum);

	if (whole) {
		move_flows(s, i, sum, n, whole, 0);
		return;
	}
	if (i < nclasses(s) && move_flows(s, i, sum, n, 0, 1))
		return;
	if (i > 1)
		move_flows(s, i, sum, n, 0, -1);
}

static void reclassify(struct cfc_sched *s, u64 now)
{
	u64 sums[CFC_NQUEUES];
	u32 counts[CFC_NQUEUES];
	u32 i, k = nclasses(s);

	update_occupancies(s, now, ticks_of(now) - ticks_of(s->last_reclassify_ns));
	s->last_reclassify_ns = now;
	s->reclassify_epoch++;
	/* Decide on the state before any move, so a flow moves one step at most. */
	for (i = 1; i <= k; i++) {
		sums[i] = class_occupancy_sum(&s->queues[i]);
		counts[i] = s->queues[i].nflows;
	}
	for (i = 1; i <= k; i++)
		reexamine_class(s, i, sums[i], counts[i]);
}

/* ----------------------------------------------------------------- time */

static u64 forget_time(const struct cfc_sched *s, const struct list_head *list,
		       struct cfc_flow **f)
{
	if (list_empty(list))
		return CFC_NEVER;
	*f = list_first_entry(list, struct cfc_flow, sched);
	return (*f)->idle_since + keep_ns(s, *f);
}

/* When the next flow is to be forgotten, and which (the earlier of the two lists' heads). */
static u64 forget_due(const struct cfc_sched *s, struct cfc_flow **f)
{
	struct cfc_flow *old_flow = NULL;
	u64 new_at = forget_time(s, &s->idle_new, f);
	u64 old_at = forget_time(s, &s->idle_old, &old_flow);

	if (old_at < new_at) {
		*f = old_flow;
		return old_at;
	}
	return new_at;
}

/* A backlogged flow's packets older than `oldest` get that stamp, and its heap key too. */
static void restamp_flow(struct cfc_sched *s, struct cfc_flow *f, u32 oldest, bool all_past)
{
	struct cfc_queue *q = &s->queues[f->queue];
	struct cfc_pkt *p;

	for (p = f->head; p && (all_past || tick_before(p->stamp, oldest)); p = p->next)
		p->stamp = oldest;
	if (q->fifo)
		q->heap[f->heap_pos].stamp = f->head->stamp;
}

/*
 * Stamps are compared by their difference (tick_before), exact only while no
 * two queued packets are 2^31 ticks (36 min) apart. A sweep, due every half
 * horizon and run before anything else at the first call after, restamps the
 * packets past the horizon to exactly its age: ages saturate, no queued packet
 * is ever more than a horizon and a half old (27 min), and the order holds,
 * as restamping raises old stamps alike (heap keys too). It visits the
 * backlogged flows, and in each only the packets past the horizon.
 */
static void saturate_ages(struct cfc_sched *s, u64 now)
{
	bool all_past = all_past_horizon(s, now);
	u32 oldest = ticks_of(now) - CFC_AGE_HORIZON;
	struct cfc_flow *f;
	u32 b;

	for (b = 1; b <= s->fat_top; b++)
		list_for_each_entry(f, &s->fat[b], fat)
			restamp_flow(s, f, oldest, all_past);
	s->last_sweep_ns = now;
	s->next_sweep_ns = now + CFC_SWEEP_NS;
}

/*
 * Run, in time order, every forgetting, reweight tick and reclassification due
 * by now, after the ages' sweep if one is due. Enqueue, dequeue and change do
 * it themselves. Reads do not: they see the state the last of those left (the
 * kernel's dumps); a host that wants them to see what fell due since calls
 * this first. The time of the next one is kept, so that on the packet path,
 * where nothing is due most of the time, this costs one comparison and
 * touches no idle flow.
 */
CFC_FN void cfc_advance(struct cfc_sched *s, u64 now)
{
	if (now < s->next_event_ns)
		return;
	if (now >= s->next_sweep_ns)
		saturate_ages(s, now);
	for (;;) {
		struct cfc_flow *forget = NULL;
		u64 forget_at = forget_due(s, &forget);
		u64 tick_at = s->nnew ? s->next_tick_ns : CFC_NEVER;
		u64 reclass_at = s->cfg.mode == CFC_MODE_CLASS ? s->next_reclassify_ns : CFC_NEVER;

		if (forget_at <= now && forget_at <= tick_at && forget_at <= reclass_at) {
			flow_forget(s, forget);
		} else if (tick_at <= now && tick_at <= reclass_at) {
			reweight(s, tick_at);
			s->next_tick_ns += s->cfg.interval_ns;
		} else if (reclass_at <= now) {
			reclassify(s, reclass_at);
			/* After a long idle period, one examination stands for the missed ones. */
			s->next_reclassify_ns = reclass_at + s->cfg.reclassify_ns;
			if (s->next_reclassify_ns <= now)
				s->next_reclassify_ns = now + s->cfg.reclassify_ns;
		} else {
			s->next_event_ns = forget_at < tick_at ? forget_at : tick_at;
			if (reclass_at < s->next_event_ns)
				s->next_event_ns = reclass_at;
			if (s->next_sweep_ns < s->next_event_ns)
				s->next_event_ns = s->next_sweep_ns;
			return;
		}
	}
}

/* ------------------------------------------------------------- packets */

/*
 * Backlogged flows sit in lists by the power of two of their backlog, so that
 * a fattest flow (one within a factor of two of the largest) is found in O(1):
 * under a flood of many single-packet flows a table scan per drop, as fq_codel
 * does, would cost O(flows) per packet.
 */
static void fat_update(struct cfc_sched *s, struct cfc_flow *f)
{
	u32 bucket = f->qlen ? (u32)fls(f->backlog + f->qlen) : 0;

	if (bucket == f->fat_bucket)
		return;
	if (f->fat_bucket)
		list_del_init(&f->fat);
	if (bucket) {
		list_add_tail(&f->fat, &s->fat[bucket]);
		if (bucket > s->fat_top)
			s->fat_top = bucket;
	}
	f->fat_bucket = (u8)bucket;
}

/* Only called with a backlog, so some bucket holds a flow. */
static struct cfc_flow *fattest_flow(struct cfc_sched *s)
{
	while (list_empty(&s->fat[s->fat_top]))
		s->fat_top--;
	return list_first_entry(&s->fat[s->fat_top], struct cfc_flow, fat);
}

static void flow_push(struct cfc_sched *s, struct cfc_flow *f, struct cfc_pkt *p, u64 now)
{
	struct cfc_queue *q = &s->queues[f->queue];

	if (s->cfg.mode == CFC_MODE_CLASS)
		occ_account(f, now);
	p->next = NULL;
	p->stamp = ticks_of(now);
	if (f->tail)
		f->tail->next = p;
	else
		f->head = p;
	f->tail = p;
	f->qlen++;
	f->backlog += p->len;
	q->qlen++;
	q->backlog += p->len;
	s->qlen++;
	s->backlog += p->len;
	s->mem += p->truesize;
	fat_update(s, f);
	if (f->qlen == 1) {
		list_del_init(&f->sched);	/* off the idle list */
		flow_attach_backlog(s, f, true);
	}
}

static struct cfc_pkt *flow_pop(struct cfc_sched *s, struct cfc_flow *f, u64 now)
{
	struct cfc_queue *q = &s->queues[f->queue];
	struct cfc_pkt *p = f->head;

	if (s->cfg.mode == CFC_MODE_CLASS)
		occ_account(f, now);
	f->head = p->next;
	if (!f->head)
		f->tail = NULL;
	p->next = NULL;
	f->qlen--;
	f->backlog -= p->len;
	q->qlen--;
	q->backlog -= p->len;
	s->qlen--;
	s->backlog -= p->len;
	s->mem -= p->truesize;
	fat_update(s, f);
	if (f->qlen == 0) {
		flow_detach_backlog(s, f);
		f->idle_since = now;
		list_add_tail(&f->sched, idle_list(s, f));	/* the newest: time order holds */
		note_event(s, now + keep_ns(s, f));
	} else if (q->fifo) {
		heap_head_advanced(s, q, f);
	}
	return p;
}

static void drop_head(struct cfc_sched *s, struct cfc_flow *f, u64 now, struct cfc_pkt **dropped)
{
	struct cfc_pkt *p = flow_pop(s, f, now);

	s->cnt.dropped_pkts++;
	s->cnt.dropped_bytes += p->len;
	p->next = *dropped;
	*dropped = p;
}

/*
 * Over a limit, drop from the head of the flow with the largest backlog: it
 * protects sparse flows, and the head packet is the oldest. Like fq_codel, drop
 * up to half of that flow at once (at most CFC_DROP_BATCH), so that a flood
 * does not hit the limit again at every packet. Returns whether `victim` lost
 * packets.
 */
static bool enforce_limits(struct cfc_sched *s, const struct cfc_flow *victim, u64 now,
			   struct cfc_pkt **dropped)
{
	bool hit = false;

	while (s->qlen > s->cfg.limit || s->mem > s->cfg.memlimit) {
		struct cfc_flow *fat = fattest_flow(s);
		u32 batch = fat->qlen / 2;

		if (batch > CFC_DROP_BATCH)
			batch = CFC_DROP_BATCH;
		if (batch == 0)
			batch = 1;
		hit |= fat == victim;
		while (batch--)
			drop_head(s, fat, now, dropped);
	}
	return hit;
}

/* ------------------------------------------------------------ scheduling */

static u64 queue_weight(const struct cfc_sched *s, const struct cfc_queue *q)
{
	u32 i = (u32)(q - s->queues);

	if (i == CFC_QNEW)
		return div64_u64(s->new_sum * q->nactive, s->nnew);
	if (s->cfg.mode == CFC_MODE_EXTERNAL && s->cfg.class_weight[i - 1])
		return (u64)s->cfg.class_weight[i - 1] << CFC_W_SHIFT;
	return (u64)q->nactive << CFC_W_SHIFT;
}

/*
 * Per round, the heaviest backlogged queue earns one quantum and the others
 * in proportion to their weight: every round sends at least one packet.
 */
static s64 queue_quantum(const struct cfc_sched *s, const struct cfc_queue *q)
{
	const struct cfc_queue *other_q;
	u64 w, wmax, ratio;

	if (list_is_singular(&s->round))	/* alone: the common case, no division */
		return (s64)s->cfg.quantum << CFC_W_SHIFT;
	w = queue_weight(s, q);
	wmax = w;
	list_for_each_entry(other_q, &s->round, round) {
		u64 other = queue_weight(s, other_q);

		if (other > wmax)
			wmax = other;
	}
	ratio = div64_u64(w << CFC_W_SHIFT, wmax);
	return (s64)((ratio ? ratio : 1) * s->cfg.quantum);
}

static struct cfc_queue *pick_queue(struct cfc_sched *s)
{
	for (;;) {
		struct cfc_queue *q = list_first_entry(&s->round, struct cfc_queue, round);

		if (q->deficit > 0)
			return q;
		q->deficit += queue_quantum(s, q);
		list_rotate_left(&s->round);
	}
}

/*
 * DRR inside a queue, sparse flows first: one that spent its quantum joins the
 * ring's tail with the next quantum, as a backlogged flow whose turn ended.
 */
static struct cfc_flow *pick_flow(struct cfc_sched *s, struct cfc_queue *q)
{
	if (q->fifo)
		return &s->flows[q->heap[0].flow];
	for (;;) {
		struct list_head *first = list_empty(&q->sparse) ? &q->ring : &q->sparse;
		struct cfc_flow *f = list_first_entry(first, struct cfc_flow, sched);

		if (f->deficit > 0)
			return f;
		f->deficit += flow_quantum(s, f);
		list_move_tail(&f->sched, &q->ring);
		q->turns++;
	}
}

static void shaper_account(struct cfc_sched *s, u32 len, u64 now)
{
	if (!s->cfg.bandwidth)
		return;
	if (now > CFC_SHAPER_MAX_LAG_NS && s->next_send_ns < now - CFC_SHAPER_MAX_LAG_NS)
		s->next_send_ns = now - CFC_SHAPER_MAX_LAG_NS;
	s->next_send_ns += ((u64)len * s->ns_per_byte_fp) >> CFC_RATE_SHIFT;
}

/*
 * Pace adaptive watches what the link sends between two ticks, and the old flows'
 * sojourn in the recent window before a tick.
 */
static void watch_sent(struct cfc_sched *s, const struct cfc_flow *f, u32 sojourn, u32 len, u64 now)
{
	if (!s->nnew)
		return;
	s->link_sent += len;
	if (f->state == CFC_FLOW_OLD && sojourn < s->old_sojourn_min &&
	    in_window_before_tick(s, now))
		s->old_sojourn_min = sojourn;
}

/* ... and what arrives for the old flows, dropped or not: what they offer. */
static void watch_old_offered(struct cfc_sched *s, const struct cfc_flow *f, u32 len)
{
	if (s->nnew && f->state == CFC_FLOW_OLD)
		s->old_offered += len;
}

/* ------------------------------------------------------------- the API */

/* The bucket a hash maps to. */
CFC_FN u32 cfc_bucket(const struct cfc_sched *s, u32 hash)
{
	return reciprocal_scale(hash, s->cfg.flows);
}

/*
 * Queue pkt (len and truesize set by the host) on the flow of key->flow, from
 * and to the hosts of key->srchost and key->dsthost. In external mode `cls`
 * (0..K-1) names its class; elsewhere it is ignored. Packets dropped to stay
 * within the limits are chained on *dropped.
 */
CFC_FN enum cfc_verdict cfc_enqueue(struct cfc_sched *s, struct cfc_pkt *pkt,
				    const struct cfc_key *key, u32 cls, u64 now,
				    struct cfc_pkt **dropped)
{
	struct cfc_flow *f = &s->flows[cfc_bucket(s, key->flow)];

	cfc_advance(s, now);
	flow_set_hosts(s, f, key);
	if (f->state == CFC_FLOW_FREE)
		flow_arrive(s, f, cls, now);
	else if (s->cfg.mode == CFC_MODE_EXTERNAL && f->queue != external_queue(s, cls))
		flow_move(s, f, external_queue(s, cls));
	if (s->qlen == 0 && s->next_send_ns < now)
		s->next_send_ns = now;	/* an idle link saves no credit */
	watch_old_offered(s, f, pkt->len);
	flow_push(s, f, pkt, now);
	s->cnt.enqueued_pkts++;
	s->cnt.enqueued_bytes += pkt->len;
	return enforce_limits(s, f, now, dropped) ? CFC_ENQ_CONGESTED : CFC_ENQ_OK;
}

/* ------------------------------------------------ old flows' AQM (CoDel) */

/*
 * The AQM acts on old flows only, and only while no flow is new. A new flow's
 * queue is its first burst while its weight grows; and while new flows hold
 * weight, an old flow's queue stands because the scheduler lends its share to
 * them, not because the flow sends more than its share: signalling it then
 * would cut the real-time flow the reweighting protects (pace adaptive watches
 * that queue instead, against `target`). Between bursts of new flows, an old
 * flow's standing queue is its own, and CoDel's control law (RFC 8289) keeps it
 * near aqm_target as fq_codel does: a bulk download no longer waits behind its
 * own backlog until maxdelay.
 *
 * Mode flow only. In mode class the queue a flow builds is what sorts it
 * into its class: with the AQM a Vegas and a Cubic flow both stayed in class 1
 * and Vegas got 2.7 of 20 Mbit/s (the kernel traffic test). In mode external
 * the classes are the host's (per-CCA queues, paper 003), reproduced as the
 * paper ran them.
 */
static bool aqm_applies(const struct cfc_sched *s, const struct cfc_flow *f)
{
	return s->cfg.aqm_target_ns && s->cfg.mode == CFC_MODE_FLOW && f->state == CFC_FLOW_OLD;
}

/*
 * Whether the AQM rests: while any flow is new, and for aqm_settle after the
 * last one (its weight gone to the old flows at once). A real-time flow whose
 * share just fell to theirs needs that long to back off on delay; a bulk flow
 * is signalled after it as before.
 */
static bool aqm_resting(struct cfc_sched *s, u64 now)
{
	if (s->nnew) {
		s->aqm_from_ns = now + s->cfg.aqm_settle_ns;
		return true;
	}
	return now < s->aqm_from_ns;
}

/* The tick `count` signals after `from`: interval / sqrt(count) later. */
static u32 aqm_control_law(const struct cfc_sched *s, u32 from, u32 count)
{
	/* sqrt(count << 16) = 256 sqrt(count); the cap keeps the product in 32 bits */
	u32 root = int_sqrt((unsigned long)(count > 0xffff ? 0xffff : count) << 16);

	return from + (u32)div_u64((s->cfg.aqm_interval_ns >> CFC_TICK_SHIFT) << 8, root);
}

/*
 * Whether the head packet, waiting `sojourn` ticks, finds the flow's queue
 * standing above the target for a whole interval. A queue of one quantum or
 * less is never above: it is the packet being sent.
 */
static bool aqm_above_too_long(const struct cfc_sched *s, struct cfc_flow *f, u32 sojourn,
			       u32 now)
{
	struct cfc_aqm *a = &f->aqm;

	if ((u64)sojourn << CFC_TICK_SHIFT < s->cfg.aqm_target_ns ||
	    f->backlog <= s->cfg.quantum) {
		a->above_until = 0;
		return false;
	}
	if (!a->above_until) {
		a->above_until = (now + ticks_of(s->cfg.aqm_interval_ns)) | 1;	/* 0 means below */
		return false;
	}
	return !tick_before(now, a->above_until);
}

/*
 * Whether the flow's head packet is to be signalled (dropped, or marked if it
 * is ECN-capable and ecn is on), by CoDel's state machine.
 */
static bool aqm_signal(struct cfc_sched *s, struct cfc_flow *f, u64 now_ns)
{
	struct cfc_aqm *a = &f->aqm;
	u32 now = ticks_of(now_ns);
	u32 interval = ticks_of(s->cfg.aqm_interval_ns);
	bool above;

	if (aqm_resting(s, now_ns)) {	/* after the rest, a queue stands an interval anew */
		a->above_until = 0;
		a->signalling = false;
		return false;
	}
	above = aqm_above_too_long(s, f, packet_age(s, f->head->stamp, now_ns), now);
	if (a->signalling) {
		if (!above) {
			a->signalling = false;
			return false;
		}
		if (tick_before(now, a->signal_next))
			return false;
		a->count++;
		a->signal_next = aqm_control_law(s, a->signal_next, a->count);
		return true;
	}
	if (!above)
		return false;
	/* Back soon after the last episode: resume near its rate, not from one signal. */
	if (a->count - a->last_count > 1 && tick_before(now, a->signal_next + 16 * interval))
		a->count = a->count - a->last_count;
	else
		a->count = 1;
	a->last_count = a->count;
	a->signalling = true;
	a->signal_next = aqm_control_law(s, now, a->count);
	return true;
}

/*
 * maxdelay: an old flow's queue holding a packet that waited longer is not
 * following its share (an unresponsive sender, or a rate-adaptive one capped
 * above it, or a window-based one whose acks that queue itself delays); such
 * packets are too late for a real-time receiver, and for TCP the drop is the
 * signal it needs. New flows are exempt: their queue is their own first burst
 * while their weight grows.
 */
static bool too_late(const struct cfc_sched *s, const struct cfc_flow *f, u64 now)
{
	return s->cfg.maxdelay_ns && f->state == CFC_FLOW_OLD &&
	       head_sojourn_ns(s, f, now) > s->cfg.maxdelay_ns;
}

/*
 * The next packet to send, or NULL (empty, or held back by the shaper). Packets
 * of old flows that waited longer than maxdelay, or that the AQM drops, are
 * dropped on the way and chained on *dropped for the host to free. A packet
 * returned with ce set is for the host to mark Congestion Experienced.
 */
CFC_FN struct cfc_pkt *cfc_dequeue(struct cfc_sched *s, u64 now, struct cfc_pkt **dropped)
{
	struct cfc_queue *q;
	struct cfc_flow *f;
	struct cfc_pkt *p;
	u32 sojourn;

	cfc_advance(s, now);
	if (!s->qlen)
		return NULL;
	if (s->cfg.bandwidth && now < s->next_send_ns) {
		s->cnt.overlimits++;
		return NULL;
	}
	for (;;) {
		bool signal;

		q = pick_queue(s);
		f = pick_flow(s, q);
		if (too_late(s, f, now)) {
			drop_head(s, f, now, dropped);
			s->cnt.delay_drops++;
		} else {
			signal = aqm_applies(s, f) && aqm_signal(s, f, now);
			if (!signal)
				break;
			if (s->cfg.ecn && f->head->ect) {
				f->head->ce = 1;
				s->cnt.ecn_marks++;
				break;
			}
			drop_head(s, f, now, dropped);
			s->cnt.aqm_drops++;
		}
		if (!s->qlen)
			return NULL;
	}
	q->deficit -= (s64)f->head->len << CFC_W_SHIFT;
	if (!q->fifo)
		f->deficit -= (s32)f->head->len;
	p = flow_pop(s, f, now);
	shaper_account(s, p->len, now);
	sojourn = packet_age(s, p->stamp, now);
	if (sojourn > s->cnt.max_sojourn)
		s->cnt.max_sojourn = sojourn;
	watch_sent(s, f, sojourn, p->len, now);
	s->cnt.dequeued_pkts++;
	s->cnt.dequeued_bytes += p->len;
	return p;
}

/* When a dequeue held back by the shaper may succeed (ns); 0 if not throttled. */
CFC_FN u64 cfc_throttled_until(const struct cfc_sched *s, u64 now)
{
	if (!s->cfg.bandwidth || !s->qlen || now >= s->next_send_ns)
		return 0;
	return s->next_send_ns;
}

static void configure_queues(struct cfc_sched *s)
{
	u32 i;

	for (i = 0; i < CFC_NQUEUES; i++) {
		struct cfc_queue *q = &s->queues[i];

		q->fifo = i != CFC_QNEW && s->cfg.mode != CFC_MODE_FLOW;
		q->heap_len = 0;
		q->deficit = 0;
	}
}

static void clear_state(struct cfc_sched *s, u64 now)
{
	u32 i;

	for (i = 0; i < s->cfg.flows; i++) {
		struct cfc_flow *f = &s->flows[i];

		f->head = NULL;
		f->tail = NULL;
		INIT_LIST_HEAD(&f->sched);
		INIT_LIST_HEAD(&f->member);
		INIT_LIST_HEAD(&f->fat);
		f->qlen = 0;
		f->backlog = 0;
		f->fat_bucket = 0;
		f->left_turn = 0;
		f->state = CFC_FLOW_FREE;
	}
	for (i = 0; i < s->cfg.flows; i++)
		s->hosts[i] = (struct cfc_hosts){ 0 };
	for (i = 0; i < CFC_FAT_BUCKETS; i++)
		INIT_LIST_HEAD(&s->fat[i]);
	s->fat_top = 0;
	for (i = 0; i < CFC_NQUEUES; i++) {
		struct cfc_queue *q = &s->queues[i];

		INIT_LIST_HEAD(&q->round);
		INIT_LIST_HEAD(&q->ring);
		INIT_LIST_HEAD(&q->sparse);
		INIT_LIST_HEAD(&q->members);
		q->nflows = 0;
		q->nactive = 0;
		q->turns = 0;
		q->qlen = 0;
		q->backlog = 0;
	}
	configure_queues(s);
	INIT_LIST_HEAD(&s->round);
	INIT_LIST_HEAD(&s->idle_new);
	INIT_LIST_HEAD(&s->idle_old);
	new_flows_none(s);
	s->nold = 0;
	s->held_ns = 0;
	s->aqm_from_ns = 0;
	tick_watch_reset(s);
	s->qlen = 0;
	s->backlog = 0;
	s->mem = 0;
	s->next_event_ns = 0;
	s->next_tick_ns = now;
	s->next_reclassify_ns = now + s->cfg.reclassify_ns;
	s->last_reclassify_ns = now;
	s->next_send_ns = now;
	s->last_sweep_ns = now;
	s->next_sweep_ns = now + CFC_SWEEP_NS;
}

/*
 * cfg must pass cfc_config_check(); table is cfc_table_bytes(cfg->flows) of
 * zeroes; hosts is cfc_hosts_bytes(cfg->flows); heaps is
 * cfc_heaps_bytes(cfg->flows), or NULL unless cfc_needs_heaps(cfg).
 */
CFC_FN void cfc_init(struct cfc_sched *s, void *table, void *hosts, void *heaps,
		     const struct cfc_config *cfg, u64 now)
{
	u32 i;

	s->cfg = *cfg;
	s->flows = table;
	s->hosts = hosts;
	for (i = 0; i < CFC_NQUEUES; i++)
		s->queues[i].heap = NULL;
	if (heaps)
		cfc_set_heaps(s, heaps);
	s->reclassify_epoch = 0;
	s->cnt = (struct cfc_counters){ 0 };
	set_rate(s);
	clear_state(s, now);
}

/* Where a remembered flow belongs under the current mode. */
static u32 home_queue(const struct cfc_sched *s, const struct cfc_flow *f)
{
	if (f->state == CFC_FLOW_NEW)
		return CFC_QNEW;
	if (s->cfg.mode == CFC_MODE_FLOW)
		return 1;
	if (s->cfg.mode == CFC_MODE_EXTERNAL)
		return f->queue > s->cfg.classes ? s->cfg.classes : (f->queue ? f->queue : 1);
	return nearest_class(s, f);
}

/*
 * After a change of mode or classes: take every flow out, reshape the queues, put
 * them back. Occupancy is only integrated in mode class, so it restarts from now.
 */
static void rehome_all(struct cfc_sched *s, u64 now)
{
	u32 i;

	for (i = 0; i < s->cfg.flows; i++) {
		struct cfc_flow *f = &s->flows[i];

		if (f->state == CFC_FLOW_FREE)
			continue;
		if (f->qlen)
			flow_detach_backlog(s, f);
		queue_leave(s, f);
	}
	configure_queues(s);
	if (s->cfg.mode == CFC_MODE_EXTERNAL && s->nnew) {
		s->nold += s->nnew;	/* external classes know no new flows */
		new_flows_none(s);
	}
	for (i = 0; i < s->cfg.flows; i++) {
		struct cfc_flow *f = &s->flows[i];

		if (f->state == CFC_FLOW_FREE)
			continue;
		if (s->cfg.mode == CFC_MODE_EXTERNAL && f->state == CFC_FLOW_NEW)
			flow_age(s, f);
		f->occ_area = 0;
		f->occ_stamp = ticks_of(now);
		f->queue = (u8)home_queue(s, f);
		queue_join(s, f);
		if (f->qlen)
			flow_attach_backlog(s, f, false);
	}
}

/*
 * Apply a new configuration (cfg->flows must be unchanged). Packets trimmed to
 * fit a smaller limit are chained on *dropped for the host to free. After a
 * change of bandwidth a held-back packet may be due at once: hosts with a
 * timer re-arm it (cfc_throttled_until()).
 */
/* The host has given the heaps (cfc_set_heaps()) first if cfc_needs_heaps(cfg). */
CFC_FN void cfc_change(struct cfc_sched *s, const struct cfc_config *cfg, u64 now,
		       struct cfc_pkt **dropped)
{
	bool reshape = cfg->mode != s->cfg.mode || cfg->classes != s->cfg.classes;
	bool start_reclassify = cfg->mode == CFC_MODE_CLASS && s->cfg.mode != CFC_MODE_CLASS;
	bool new_rate = cfg->bandwidth != s->cfg.bandwidth;
	u32 flows = s->cfg.flows;	/* the table was sized for it */

	cfc_advance(s, now);
	s->cfg = *cfg;
	s->cfg.flows = flows;
	set_rate(s);
	/* The next departure was spaced at the old rate: at the new one it may be due now. */
	if (new_rate && s->next_send_ns > now)
		s->next_send_ns = now;
	if (reshape)
		rehome_all(s, now);
	if (start_reclassify) {
		s->last_reclassify_ns = now;
		s->next_reclassify_ns = now + cfg->reclassify_ns;
	}
	s->next_event_ns = 0;	/* periods, mode or classes may have changed: look again */
	enforce_limits(s, NULL, now, dropped);
}

/* Remove every queued packet, chained for the host to free; flows are forgotten. */
CFC_FN struct cfc_pkt *cfc_reset(struct cfc_sched *s, u64 now)
{
	struct cfc_pkt *all = NULL;
	u32 i;

	for (i = 0; i < s->cfg.flows; i++) {
		struct cfc_flow *f = &s->flows[i];

		while (f->head) {
			struct cfc_pkt *p = f->head;

			f->head = p->next;
			s->cnt.dropped_pkts++;
			s->cnt.dropped_bytes += p->len;
			p->next = all;
			all = p;
		}
	}
	clear_state(s, now);
	return all;
}

/* The counters and the state of every queue, as the dumps show them. */
CFC_FN void cfc_stats(const struct cfc_sched *s, struct cfc_stats *st)
{
	u32 i;

	st->cnt = s->cnt;
	st->qlen = s->qlen;
	st->backlog = s->backlog;
	st->mem = s->mem;
	st->new_flows = s->nnew;
	st->old_flows = s->nold;
	st->new_sum = s->new_sum;
	for (i = 0; i < CFC_MAX_CLASSES; i++) {
		const struct cfc_queue *q = &s->queues[i + 1];
		bool used = i < nclasses(s);

		st->class_flows[i] = used ? q->nflows : 0;
		st->class_qlen[i] = used ? q->qlen : 0;
		st->class_backlog[i] = used ? q->backlog : 0;
	}
}

/* The current weight of the flow in `bucket` (CFC_W_ONE units), 0 if free. */
CFC_FN u32 cfc_flow_weight(const struct cfc_sched *s, u32 bucket)
{
	const struct cfc_flow *f = &s->flows[bucket];

	if (f->state == CFC_FLOW_OLD)
		return CFC_W_ONE;
	if (f->state == CFC_FLOW_NEW)
		return (u32)div64_u64(s->new_sum, s->nnew);
	return 0;
}

/* The state of the flow in `bucket` at `now`; false for a free bucket (*st untouched). */
CFC_FN bool cfc_flow_stats(const struct cfc_sched *s, u32 bucket, u64 now,
			   struct cfc_flow_stats *st)
{
	const struct cfc_flow *f = &s->flows[bucket];

	if (f->state == CFC_FLOW_FREE)
		return false;
	st->state = f->state;
	st->queue = f->queue;
	st->weight = cfc_flow_weight(s, bucket);
	st->qlen = f->qlen;
	st->backlog = f->backlog;
	st->deficit = f->deficit;
	st->sojourn_ns = f->head ? head_sojourn_ns(s, f, now) : 0;
	return true;
}

#endif /* CONFUCIUS_IMPL_H */
