/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * Confucius queue discipline: netlink attributes and statistics shared by the
 * kernel module and the tc front end. Enums and the xstats structure are
 * append-only.
 */
#ifndef _UAPI_LINUX_PKT_SCHED_CONFUCIUS_H
#define _UAPI_LINUX_PKT_SCHED_CONFUCIUS_H

#include <linux/types.h>

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
	TCA_CONFUCIUS_CLASS_WEIGHTS,	/* binary: u32 per class (external mode); 0 = by flows */
	__TCA_CONFUCIUS_MAX
};
#define TCA_CONFUCIUS_MAX (__TCA_CONFUCIUS_MAX - 1)

enum tc_confucius_mode {
	TC_CONFUCIUS_MODE_FLOW,
	TC_CONFUCIUS_MODE_CLASS,
	TC_CONFUCIUS_MODE_EXTERNAL,
};

#define TC_CONFUCIUS_MAX_CLASSES 8

/* TCA_STATS_APP, `tc -s qdisc show`. */
struct tc_confucius_xstats {
	__u32 new_flows;	/* remembered new flows, |N| */
	__u32 old_flows;	/* remembered old flows */
	__u64 new_weight;	/* S, the new flows' total weight, in 1/65536 */
	__u64 ticks;		/* reweight ticks that raised new-flow weights */
	__u64 moves;		/* flows moved between classes */
	__u32 max_sojourn_us;	/* longest time a packet waited */
	__u32 memory_used;	/* bytes of truesize queued */
	__u32 classes;		/* classes in use (1 in mode flow) */
	__u32 pad;
	__u32 class_flows[TC_CONFUCIUS_MAX_CLASSES];
	__u32 class_packets[TC_CONFUCIUS_MAX_CLASSES];
	__u32 class_bytes[TC_CONFUCIUS_MAX_CLASSES];
	__u64 enqueued_packets;	/* = sent + dropped + backlog, always */
	__u64 enqueued_bytes;
};

#endif /* _UAPI_LINUX_PKT_SCHED_CONFUCIUS_H */
