/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Confucius scheduling core: the one implementation of the algorithm, shared by
 * the Linux qdisc and userspace tests, benchmarks and a simulator, as CoDel's
 * codel.h and codel_impl.h are shared by sch_codel and sch_fq_codel. It is
 * kernel C (confucius_impl.h); the other hosts build it against a small
 * userspace copy of the kernel headers it uses.
 *
 * The host owns memory and packets. It allocates the flow table and its hosts
 * once (cfc_table_bytes(), cfc_hosts_bytes()), and the classes' heaps once a
 * mode needs them (cfc_heaps_bytes()), embeds a struct cfc_pkt in every packet
 * it hands over, passes time in nanoseconds, and frees the packets the core
 * gives back as dropped. The core never allocates and never calls back into the host.
 *
 * The papers: Z. Meng et al., "Confucius: Achieving Consistent Low Latency with
 * Practical Queue Management for Real-Time Communications", arXiv:2310.18030,
 * and its later version, "Confucius: Adapting Home Routers to Congestion
 * Control's Reactions for Consistent Low Latency" (Alg. 1-3).
 */
#ifndef CONFUCIUS_H
#define CONFUCIUS_H

#include <linux/bits.h>
#include <linux/types.h>

/* Weights are fixed point: CFC_W_ONE is a weight of 1 (an old flow). */
#define CFC_W_SHIFT		16
#define CFC_W_ONE		BIT(CFC_W_SHIFT)
/* Pace adaptive: the least S a held tick gives back to (a quarter of an old flow). */
#define CFC_GIVE_BACK_FLOOR	(CFC_W_ONE >> 2)

#define CFC_MAX_CLASSES		8

/* Occupancy (mean backlog in packets) is fixed point with this many fraction bits. */
#define CFC_OCC_SHIFT		8

/* Configuration bounds, shared with the kernel's netlink policy. */
#define CFC_FLOWS_MIN		1u
#define CFC_FLOWS_MAX		32768u		/* flow classes are 0x8000 + bucket */
#define CFC_LIMIT_MIN		1u
#define CFC_LIMIT_MAX		BIT(20)
#define CFC_MEMLIMIT_MIN	(64u * 1024)
#define CFC_MEMLIMIT_MAX	BIT(31)
#define CFC_QUANTUM_MIN		64u
#define CFC_QUANTUM_MAX		65536u
#define CFC_PERIOD_MIN_NS	1000000ull		/* 1 ms */
#define CFC_PERIOD_MAX_NS	60000000000ull		/* 60 s */
#define CFC_BANDWIDTH_MIN	8000ull			/* bit/s; 0 = unshaped */
#define CFC_BANDWIDTH_MAX	BIT_ULL(47)		/* ~140.7 Tbit/s */
#define CFC_BANDWIDTH_RANGE_MSG	"bandwidth must be 0 (unshaped) or between 8kbit and 140.7Tbit"
#define CFC_HYSTERESIS_MAX	(CFC_W_ONE / 2)		/* 50 % */
#define CFC_MAXHOLD_MAX_NS	CFC_PERIOD_MAX_NS	/* 0 = never hold */
#define CFC_MAXDELAY_MAX_NS	CFC_PERIOD_MAX_NS	/* 0 = no bound */
#define CFC_MAXDELAY_RANGE_MSG	"maxdelay must be 0 (no bound) or between 1ms and 60s"
#define CFC_AQM_TARGET_MIN_NS	100000ull		/* 100 us; 0 = no AQM */
#define CFC_AQM_TARGET_RANGE_MSG "aqm_target must be 0 (no AQM) or between 100us and 60s"

/* The defaults (cfc_config_default); the tc plugin, built apart, checks its copy against them. */
#define CFC_DEFAULT_INTERVAL_NS		250000000ull	/* 1/lambda */
#define CFC_DEFAULT_RECLASSIFY_NS	100000000ull
#define CFC_DEFAULT_TARGET_NS		40000000ull
#define CFC_DEFAULT_MAXHOLD_NS		2000000000ull
#define CFC_DEFAULT_MAXDELAY_NS		500000000ull
/*
 * The old flows' AQM. fq_codel's 5 ms and 100 ms, at once, cut the real-time
 * flow the reweighting protects (on 100 simulated pages, Copa's stall per load
 * 0.94 s against 0.15 without the AQM): when a burst's flows turn old, the
 * video's share falls to theirs at once and its queue stands until its
 * controller backs off on delay, which takes it a second or two. So the AQM
 * rests for aqm_settle after the last new flow (GCC's stall as without the
 * AQM), and its target is 10 ms, not 5: a delay-based video's own standing
 * queue (Copa's sojourn averages 10 ms) is not a bulk flow's. A download's own
 * delay is then 7 ms at 20 and 100 Mbit/s (cake's 4 and 2).
 */
#define CFC_DEFAULT_AQM_TARGET_NS	10000000ull
#define CFC_DEFAULT_AQM_INTERVAL_NS	100000000ull
#define CFC_DEFAULT_AQM_SETTLE_NS	2000000000ull
#define CFC_DEFAULT_ECN			true
#define CFC_DEFAULT_LIMIT		10240u
#define CFC_DEFAULT_MEMLIMIT		(32u << 20)
#define CFC_DEFAULT_FLOWS		1024u
#define CFC_DEFAULT_QUANTUM		1514u
#define CFC_DEFAULT_HYSTERESIS		(CFC_W_ONE / 10)	/* 10 % */
#define CFC_DEFAULT_CLASSES		3u
#define CFC_DEFAULT_ISOLATE		CFC_ISOLATE_HOSTS	/* as cake's */

/*
 * Old flows are remembered this many intervals after their queue ran empty
 * (new flows one interval, Alg. 3), so that a real-time flow that pauses keeps
 * its age. An old flow "competes" when it is backlogged or ran empty within the
 * last interval >> CFC_RECENT_SHIFT; the same recent window before each tick is
 * where the old flows' sojourn is watched (pace adaptive).
 */
#define CFC_OLD_KEEP_INTERVALS	4u
#define CFC_RECENT_SHIFT	2

enum cfc_mode {
	CFC_MODE_FLOW,		/* per-flow weights, old flows served by DRR */
	CFC_MODE_CLASS,		/* old flows grouped by buffer occupancy */
	CFC_MODE_EXTERNAL,	/* class given per packet by the host */
	CFC_MODE_COUNT
};

/*
 * Which hosts share the link fairly before their flows do (cake's words). An
 * old flow served by DRR is given its quantum divided by the number of its
 * host's old flows with a backlog, so that each host's old flows together earn
 * one flow's share: a device with 8 downloads does not take 8 shares against
 * another's video call. New flows are not divided: the reweighting, not the
 * host, decides their share while they are new.
 */
enum cfc_isolate {
	CFC_ISOLATE_FLOWS,	/* every flow its own share */
	CFC_ISOLATE_SRCHOST,	/* dual-srchost: fair among sources first */
	CFC_ISOLATE_DSTHOST,	/* dual-dsthost: fair among destinations first */
	CFC_ISOLATE_HOSTS,	/* triple-isolate: among sources and destinations at once */
	CFC_ISOLATE_COUNT
};

/* How the new flows' weights grow at each reweight tick. */
enum cfc_pace {
	CFC_PACE_FIXED,		/* the papers' schedule: S doubles at every tick */
	CFC_PACE_ADAPTIVE,	/* while an old flow's queue stands, a tick halves S instead */
	CFC_PACE_COUNT
};

struct cfc_config {
	u64 bandwidth;		/* bit/s the core paces its output to; 0 = unshaped */
	u64 interval_ns;	/* 1/lambda: reweight tick and flow-forgetting time */
	u64 reclassify_ns;	/* occupancy-class re-examination period */
	u64 target_ns;		/* pace adaptive: old flows' standing-queue sojourn target */
	u64 maxhold_ns;		/* pace adaptive: most time held per burst of new flows */
	u64 maxdelay_ns;	/* old flows' packets that waited longer are dropped; 0 = never */
	u64 aqm_target_ns;	/* old flows' AQM: acceptable standing sojourn; 0 = no AQM */
	u64 aqm_interval_ns;	/* old flows' AQM: how long the sojourn may stand above it */
	u64 aqm_settle_ns;	/* old flows' AQM: how long it waits once no flow is new */
	u32 limit;		/* packets */
	u32 memlimit;		/* bytes of packet truesize */
	u32 flows;		/* hash buckets; fixed for the life of a scheduler */
	u32 quantum;		/* bytes a weight-1 flow may send per round */
	u32 hysteresis;		/* alpha, in CFC_W_ONE units (6554 = 10 %) */
	u8 mode;		/* enum cfc_mode */
	u8 classes;		/* K occupancy or external classes */
	u8 pace;		/* enum cfc_pace */
	u8 isolate;		/* enum cfc_isolate */
	bool ecn;		/* the AQM marks ECN-capable packets instead of dropping them */
	u32 class_weight[CFC_MAX_CLASSES]; /* external mode; 0 = by active flows */
};

/*
 * The core's part of a packet, embedded by the host (20 bytes, so that it fits
 * the private area of the kernel's qdisc_skb_cb). Times are kept in 1.024 us
 * ticks (ns >> 10): 32 bits span 73 minutes, compared with wrap-around, which
 * the ages' saturation (CFC_AGE_HORIZON_NS) keeps exact. The host sets ect
 * when it enqueues an ECN-capable packet; the core sets ce on a packet it
 * dequeues for the host to mark Congestion Experienced.
 */
struct cfc_pkt {
	struct cfc_pkt *next;
	u32 stamp;		/* enqueue time, ns >> 10 */
	u32 len;		/* bytes on the wire, for scheduling */
	u32 truesize:30;	/* bytes of memory, for memlimit */
	u32 ect:1;		/* ECN-capable transport, set by the host */
	u32 ce:1;		/* to be marked CE, set by the core */
} __packed __aligned(4);

enum cfc_flow_state {
	CFC_FLOW_FREE,		/* never seen, or forgotten */
	CFC_FLOW_NEW,		/* in Q_new, weight S/|N| */
	CFC_FLOW_OLD,		/* weight 1, in one of the classes */
};

/*
 * CoDel's state for one old flow's queue (RFC 8289): the sojourn of its head
 * packets has stood above the target since above_until - interval; while
 * signalling, the next drop or mark is due at signal_next, the count-th.
 */
struct cfc_aqm {
	u32 above_until;	/* tick; 0 = the sojourn is below the target */
	u32 signal_next;	/* tick */
	u32 last_count;		/* signals of the previous episode */
	u32 count : 31;		/* signals in this episode */
	u32 signalling : 1;
};

struct cfc_flow {
	struct cfc_pkt *head, *tail;
	struct list_head sched;	/* DRR ring of its queue when backlogged; idle list when empty */
	struct list_head member;	/* all flows of its queue */
	struct list_head fat;	/* flows of its backlog size class, for overflow drops */
	u64 idle_since;		/* ns; when the flow last ran empty */
	u64 occ_area;		/* backlog packets x ticks, this reclassify period */
	u32 occ_stamp;		/* tick of the last backlog change */
	u32 occupancy;		/* smoothed mean backlog, packets << CFC_OCC_SHIFT */
	u32 backlog;		/* bytes */
	u32 qlen;		/* packets */
	s32 deficit;		/* bytes, DRR inside its queue */
	union {			/* 128 bytes in all: 1024 flows fill 128 KiB, not 256 */
		u32 heap_pos;	/* backlogged in an earliest-first class: heap position */
		u32 left_turn;	/* otherwise: its queue's turns when it last left them */
	};
	u32 moved_epoch;	/* reclassification round that last moved it */
	struct cfc_aqm aqm;	/* old flows' AQM */
	u8 state;		/* enum cfc_flow_state */
	u8 queue;		/* index into cfc_sched.queues */
	u8 fat_bucket;		/* fls(backlog + qlen): 0 when empty */
};

/*
 * The hosts, in an array of their own beside the flow table (whose slots stay
 * 128 bytes): for each bucket, the hosts a flow there was last seen from and
 * to (set while it is empty, kept while its load is counted), and how many old
 * flows served by DRR have a backlog from and to the host of that bucket.
 * Hosts colliding in a bucket share it, as flows do.
 */
struct cfc_hosts {
	u16 flow_src, flow_dst;	/* the host buckets of the flow in this bucket */
	u16 src_load, dst_load;	/* the load of the host in this bucket */
};

/* What the host knows of a packet's flow: hashes of its 5-tuple and of its hosts' addresses. */
struct cfc_key {
	u32 flow;
	u32 srchost;
	u32 dsthost;
};

/*
 * A packet's age saturates at this horizon (2^30 ticks, 18 min 19 s): one
 * queued longer reads as that old and leaves before every younger one (in no
 * order among those as old), however long it is held.
 */
#define CFC_AGE_HORIZON_NS	BIT_ULL(40)

/* Q_new is queue 0; classes 1..K follow. In flow mode class 1 holds the old flows. */
#define CFC_QNEW		0
#define CFC_NQUEUES		(CFC_MAX_CLASSES + 1)
#define CFC_FAT_BUCKETS		33	/* fls() of a u32: 0..32 */

/* A class heap entry: a backlogged flow keyed by its head packet's enqueue time. */
struct cfc_heap_entry {
	u32 stamp;
	u32 flow;
};

struct cfc_queue {
	struct list_head round;	/* in the scheduler's round of backlogged queues */
	struct list_head ring;	/* DRR ring of backlogged flows (unless fifo) */
	struct list_head sparse;/* flows back after a round's silence, served first */
	struct list_head members;/* every flow assigned to this queue */
	struct cfc_heap_entry *heap; /* fifo: backlogged flows, earliest head first */
	s64 deficit;		/* bytes << CFC_W_SHIFT */
	u32 heap_len;
	u32 nflows;		/* flows assigned */
	u32 nactive;		/* flows with a backlog */
	u32 turns;		/* quanta handed out in the DRR ring, wrapping */
	u32 qlen;		/* packets */
	u32 backlog;		/* bytes */
	bool fifo;		/* earliest-enqueued-first across flows, else DRR */
};

struct cfc_counters {
	u64 enqueued_pkts, enqueued_bytes;
	u64 dequeued_pkts, dequeued_bytes;
	u64 dropped_pkts, dropped_bytes;	/* overflow, trims and resets */
	u64 overlimits;		/* dequeues held back by the shaper */
	u64 ticks;		/* reweight ticks that changed new-flow weights */
	u64 holds;		/* reweight ticks held back for an old flow's queue */
	u64 delay_drops;	/* old flows' packets dropped at dequeue, waiting over maxdelay */
	u64 aqm_drops;		/* old flows' packets the AQM dropped (not ECN-capable) */
	u64 ecn_marks;		/* old flows' packets the AQM marked CE */
	u64 moves;		/* flows moved between classes */
	u32 max_sojourn;	/* ticks (ns >> 10) */
};

struct cfc_sched {
	struct cfc_config cfg;
	struct cfc_flow *flows;
	struct cfc_hosts *hosts;	/* one per flow bucket */
	struct cfc_queue queues[CFC_NQUEUES];
	struct list_head round;	/* backlogged queues, DWRR order */
	struct list_head idle_new; /* empty, not yet forgotten new flows, oldest first */
	struct list_head idle_old; /* the same for old flows */
	struct list_head fat[CFC_FAT_BUCKETS]; /* backlogged flows by fls(backlog) */
	u32 fat_top;		/* no bucket above it holds a flow */
	u64 new_sum;		/* S: total weight of new flows, CFC_W_ONE units */
	u64 new_owed;		/* completed new flows' weight, returned at unheld ticks */
	u32 nnew, nold;		/* remembered new and old flows */
	u32 old_sojourn_min;	/* ticks; least old-flow sojourn in the recent window, or ~0 */
	u64 old_offered;	/* bytes that arrived for old flows since the last tick */
	u64 link_sent;		/* bytes every flow sent since the last tick */
	u64 held_ns;		/* time held since N last became non-empty */
	u64 aqm_from_ns;	/* the old flows' AQM waits until then (aqm_settle) */
	u32 qlen;		/* packets queued */
	u32 backlog;		/* bytes queued */
	u32 mem;		/* truesize queued */
	u64 next_event_ns;	/* no forgetting, tick or reclassification is due before */
	u64 next_tick_ns;	/* next reweight, while there are new flows */
	u64 next_reclassify_ns;
	u64 last_reclassify_ns;
	u64 next_send_ns;	/* shaper: earliest time the next packet may leave */
	u64 last_sweep_ns;	/* when packets past the age horizon were last restamped */
	u64 next_sweep_ns;
	u64 ns_per_byte_fp;	/* shaper: ns per byte, fixed point */
	u32 reclassify_epoch;
	struct cfc_counters cnt;
};

/* A snapshot for `tc -s` and the tests. */
struct cfc_stats {
	struct cfc_counters cnt;
	u32 qlen, backlog, mem;
	u32 new_flows, old_flows;
	u64 new_sum;
	u32 class_flows[CFC_MAX_CLASSES];
	u32 class_qlen[CFC_MAX_CLASSES];
	u32 class_backlog[CFC_MAX_CLASSES];
};

/* One remembered flow, for per-flow dumps (`tc -s class show`). */
struct cfc_flow_stats {
	u8 state;		/* enum cfc_flow_state: new or old */
	u8 queue;		/* 0 = Q_new, else its class 1..K */
	u32 weight;		/* CFC_W_ONE units */
	u32 qlen, backlog;	/* packets, bytes */
	s32 deficit;		/* bytes, DRR inside its queue */
	u64 sojourn_ns;		/* how long its head packet has waited; 0 when empty */
};

/* What happened to the packet the host enqueued. */
enum cfc_verdict {
	CFC_ENQ_OK,
	CFC_ENQ_CONGESTED,	/* accepted, but its own flow lost packets to make room */
};

#endif /* CONFUCIUS_H */
