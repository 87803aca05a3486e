/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * Confucius queue discipline: netlink attributes and statistics shared by the
 * kernel module and the tc front end, written as the section they would be in
 * include/uapi/linux/pkt_sched.h. Enums and the xstats members are
 * append-only.
 */
#ifndef _UAPI_LINUX_PKT_SCHED_CONFUCIUS_H
#define _UAPI_LINUX_PKT_SCHED_CONFUCIUS_H

#include <linux/types.h>

/* CONFUCIUS */

enum {
	TCA_CONFUCIUS_UNSPEC,
	TCA_CONFUCIUS_PAD,
	TCA_CONFUCIUS_BANDWIDTH64,	/* u64, bytes per second; 0 = unshaped */
	TCA_CONFUCIUS_LIMIT,		/* u32, packets */
	TCA_CONFUCIUS_MEMLIMIT,		/* u32, bytes */
	TCA_CONFUCIUS_FLOWS,		/* u32, hash buckets; set at creation only */
	TCA_CONFUCIUS_QUANTUM,		/* u32, bytes */
	TCA_CONFUCIUS_INTERVAL,		/* u32, us: 1/lambda, reweight tick */
	TCA_CONFUCIUS_MODE,		/* u32, enum tc_confucius_mode */
	TCA_CONFUCIUS_CLASSES,		/* u32 */
	TCA_CONFUCIUS_HYSTERESIS,	/* u32, percent */
	TCA_CONFUCIUS_RECLASSIFY,	/* u32, us */
	TCA_CONFUCIUS_CLASS_WEIGHTS,	/* nested TCA_CONFUCIUS_CLASS_WEIGHT */
	TCA_CONFUCIUS_PACE,		/* u32, enum tc_confucius_pace */
	TCA_CONFUCIUS_TARGET,		/* u32, us: old flows' sojourn target (pace adaptive) */
	TCA_CONFUCIUS_MAXHOLD,		/* u32, us: most ticks held per burst (pace adaptive) */
	TCA_CONFUCIUS_MAXDELAY,		/* u32, us: old flows' longest wait; 0 = no bound */
	TCA_CONFUCIUS_CLASS_WEIGHT,	/* u32, classes 1..K in order; 0 = by flows */
	TCA_CONFUCIUS_AQM_TARGET,	/* u32, us: old flows' AQM target sojourn; 0 = no AQM */
	TCA_CONFUCIUS_AQM_INTERVAL,	/* u32, us: old flows' AQM interval */
	TCA_CONFUCIUS_ECN,		/* u32, 0 or 1: the AQM marks ECN-capable packets */
	TCA_CONFUCIUS_AQM_SETTLE,	/* u32, us: the AQM's wait once no flow is new */
	TCA_CONFUCIUS_ISOLATE,		/* u32, enum tc_confucius_isolate */
	TCA_CONFUCIUS_NAT,		/* u32, 0 or 1: hosts inside the router's NAT */
	__TCA_CONFUCIUS_MAX
};

#define TCA_CONFUCIUS_MAX (__TCA_CONFUCIUS_MAX - 1)

enum tc_confucius_mode {
	TC_CONFUCIUS_MODE_FLOW,
	TC_CONFUCIUS_MODE_CLASS,
	TC_CONFUCIUS_MODE_EXTERNAL,
};

enum tc_confucius_pace {
	TC_CONFUCIUS_PACE_FIXED,	/* new weights double every interval */
	TC_CONFUCIUS_PACE_ADAPTIVE,	/* a standing old queue holds a tick */
};

/* Which hosts share the link fairly before their old flows do (cake's modes). */
enum tc_confucius_isolate {
	TC_CONFUCIUS_ISOLATE_FLOWS,
	TC_CONFUCIUS_ISOLATE_DUAL_SRCHOST,
	TC_CONFUCIUS_ISOLATE_DUAL_DSTHOST,
	TC_CONFUCIUS_ISOLATE_TRIPLE,
};

#define TC_CONFUCIUS_MAX_CLASSES 8

/*
 * Classes: 1..K are the old flows' classes (filters pick them in mode external);
 * every remembered flow is listed too, as class TC_CONFUCIUS_FLOW_MINOR + bucket.
 */
#define TC_CONFUCIUS_FLOW_MINOR 0x8000

/* TCA_STATS_APP: struct tc_confucius_xstats, whose type names its member. */
enum {
	TCA_CONFUCIUS_XSTATS_QDISC,	/* `tc -s qdisc show` */
	TCA_CONFUCIUS_XSTATS_CLASS,	/* `tc -s class show`: a class of old flows */
	TCA_CONFUCIUS_XSTATS_FLOW,	/* `tc -s class show`: one flow */
};

struct tc_confucius_qd_stats {
	__u32 new_flows;	/* remembered new flows, |N| */
	__u32 old_flows;	/* remembered old flows */
	__u64 new_weight;	/* S, the new flows' total weight, in 1/65536 */
	__u64 ticks;		/* reweight ticks that raised new-flow weights */
	__u64 holds;		/* reweight ticks held for an old flow's queue */
	__u64 moves;		/* flows moved between classes */
	__u32 max_sojourn_us;	/* longest time a packet waited */
	__u32 memory_used;	/* bytes of truesize queued */
	__u32 classes;		/* classes in use (1 in mode flow) */
	__u32 pad;
	__u32 class_flows[TC_CONFUCIUS_MAX_CLASSES];
	__u32 class_packets[TC_CONFUCIUS_MAX_CLASSES];
	__u32 class_bytes[TC_CONFUCIUS_MAX_CLASSES];
	/*
	 * One snapshot, taken under the qdisc's lock: enqueued = sent + dropped +
	 * backlog holds in it at every moment. (The kernel reads the basic counters
	 * and the queue length outside the lock, so they agree with it only at rest.)
	 */
	__u64 enqueued_packets;
	__u64 enqueued_bytes;
	__u64 sent_packets;
	__u64 sent_bytes;
	__u64 dropped_packets;
	__u64 dropped_bytes;
	__u32 backlog_packets;
	__u32 backlog_bytes;
	__u64 delay_drops;	/* old flows' packets dropped for waiting over maxdelay */
	__u64 aqm_drops;	/* old flows' packets the AQM dropped */
	__u64 ecn_marks;	/* old flows' packets the AQM marked CE */
	__u64 instance_bytes;	/* its own memory: private data, flow table, heaps */
};

struct tc_confucius_cl_stats {
	__u32 flows;		/* flows in the class */
	__u32 packets;		/* queued */
	__u32 bytes;
	__u32 pad;
};

enum tc_confucius_flow_state {
	TC_CONFUCIUS_FLOW_NEW = 1,	/* weight S/|N|, growing */
	TC_CONFUCIUS_FLOW_OLD,		/* weight 1, in a class */
};

struct tc_confucius_fl_stats {
	__u32 bucket;
	__u32 state;		/* enum tc_confucius_flow_state */
	__u32 class_id;		/* 0 while new, else its class 1..K */
	__u32 weight;		/* in 1/65536 */
	__u32 packets;		/* queued */
	__u32 bytes;
	__s32 deficit;		/* bytes, round robin inside its class */
	__u32 sojourn_us;	/* how long its head packet has waited; 0 when empty */
	__u16 sport, dport;	/* ports of its head packet (0 when empty or none) */
	__u8 ip_proto;
	__u8 pad[3];
};

struct tc_confucius_xstats {
	__u32 type;		/* TCA_CONFUCIUS_XSTATS_* */
	__u32 pad;
	union {
		struct tc_confucius_qd_stats qdisc_stats;
		struct tc_confucius_cl_stats class_stats;
		struct tc_confucius_fl_stats flow_stats;
	};
};

#endif /* _UAPI_LINUX_PKT_SCHED_CONFUCIUS_H */
