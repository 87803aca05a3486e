// SPDX-License-Identifier: GPL-2.0-only
/*
 * sch_confucius: the Confucius queue discipline.
 *
 * Keeps real-time flows at low latency when bursts of new flows arrive: new
 * flows' weights grow exponentially (doubling every `interval`) instead of
 * taking their fair share at once, so existing flows lose bandwidth no faster
 * than their congestion control can follow. No labels, no tuning.
 *
 * This file is only the Linux glue; the algorithm is in confucius_impl.h,
 * which userspace tests and a simulator compile too, as CoDel's codel_impl.h.
 * The algorithm: Z. Meng et al., "Confucius: Achieving Consistent Low Latency
 * with Practical Queue Management for Real-Time Communications",
 * arXiv:2310.18030.
 */
#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/ktime.h>
#include <linux/version.h>
#include <linux/if_vlan.h>
#include <linux/jhash.h>
#include <linux/random.h>
#include <linux/netfilter.h>
#include <net/netlink.h>
#include <net/pkt_sched.h>
#include <net/pkt_cls.h>
#include <net/sch_generic.h>
#include <net/flow_dissector.h>
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
/* 6.5, "net: move gso declarations and functions to their own files" */
#include <net/gso.h>
#endif
#include <net/inet_ecn.h>
#if IS_ENABLED(CONFIG_NF_CONNTRACK)
#include <net/netfilter/nf_conntrack_tuple.h>
#endif

#include "pkt_sched_confucius.h"
#include "confucius_impl.h"

#ifndef MODULE_ALIAS_NET_SCH	/* before 6.9 tc asks for "sch_<kind>", the file name */
#define MODULE_ALIAS_NET_SCH(id) MODULE_ALIAS("net-sch-" id)
#endif

#ifndef CFC_NOTIFY_IN_DEQUEUE
/*
 * Whether a parent may be told of drops that empty this qdisc while it is
 * dequeuing from us. Then its qlen_notify runs, and its dequeue finds us empty
 * and deactivates the class itself: twice, which crashed HTB until the 2025
 * series "sch_htb: make htb_deactivate() idempotent" (and the same for drr,
 * hfsc, qfq and ets) with "codel: remove sch->q.qlen check before
 * qdisc_tree_reduce_backlog()": mainline 6.15, then every stable branch by
 * August 2025 (5.15.y last). The stable floors are releases of October 2025,
 * when all had it; a slightly older kernel may have it too, and gets the
 * deferral below, which is safe there. The build may set it (make test
 * compiles the deferral against a kernel that has the fixes).
 */
/* A stable branch from the release `from` on, up to its next mainline `to`. */
#define STABLE_FROM(from, to) (LINUX_VERSION_CODE >= (from) && LINUX_VERSION_CODE < (to))
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 15, 0) || \
	STABLE_FROM(KERNEL_VERSION(6, 12, 50), KERNEL_VERSION(6, 13, 0)) || \
	STABLE_FROM(KERNEL_VERSION(6, 6, 110), KERNEL_VERSION(6, 7, 0)) || \
	STABLE_FROM(KERNEL_VERSION(6, 1, 155), KERNEL_VERSION(6, 2, 0)) || \
	STABLE_FROM(KERNEL_VERSION(5, 15, 194), KERNEL_VERSION(5, 16, 0))
#define CFC_NOTIFY_IN_DEQUEUE 1
#else
#define CFC_NOTIFY_IN_DEQUEUE 0
#endif
#endif

struct confucius_sched_data {
	struct cfc_sched core;
	void *table;			/* the core's flow table, sized at creation */
	void *heaps;			/* the classes' heaps, from the first mode needing them */
	void *hosts;			/* the core's hosts, sized with the table */
	u32 host_salt;			/* keys the hosts' hashes, so that none can be aimed at */
	bool nat;			/* hosts as the NAT's inside sees them (conntrack) */
	struct tcf_proto __rcu *filter_list;
	struct tcf_block *block;
	struct qdisc_watchdog watchdog;
#if !CFC_NOTIFY_IN_DEQUEUE
	/* Dequeue's drops the parents have not been told of (see tell_parents_late). */
	unsigned int untold_drops;
	unsigned int untold_bytes;
#endif
};

/* ------------------------------------------------------------- packets */

/* The core's node lives in the qdisc's private part of skb->cb. */
static struct cfc_pkt *skb_node(struct sk_buff *skb)
{
	qdisc_cb_private_validate(skb, sizeof(struct cfc_pkt));
	return (struct cfc_pkt *)qdisc_skb_cb(skb)->data;
}

static struct sk_buff *node_skb(struct cfc_pkt *node)
{
	struct qdisc_skb_cb *cb = container_of((void *)node, struct qdisc_skb_cb, data);

	return container_of((void *)cb, struct sk_buff, cb);
}

/* Take a packet the core dropped out of this qdisc's counts; returns its length. */
static unsigned int uncount(struct Qdisc *sch, struct sk_buff *skb)
{
	sch->q.qlen--;
	qdisc_qstats_backlog_dec(sch, skb);
	qdisc_qstats_drop(sch);
	return qdisc_pkt_len(skb);
}

/*
 * Drops at enqueue and change keep the queue within its limits: the
 * tracepoint qdisc:qdisc_drop says so.
 */
static void drop_overlimit(struct sk_buff *skb, struct sk_buff **to_free)
{
#ifdef DEFINE_QDISC_DROP_REASON
	/* enum qdisc_drop_reason, <net/dropreason-qdisc.h>: after 7.0 */
	tcf_set_qdisc_drop_reason(skb, QDISC_DROP_OVERLIMIT);
#endif
	__qdisc_drop(skb, to_free);
}

/*
 * A drop at dequeue: the packet waited longer than maxdelay. With
 * TCQ_F_DEQUEUE_DROPS it is freed after the root's lock is released, as
 * fq_codel's are.
 */
static void drop_late_one(struct Qdisc *sch, struct sk_buff *skb)
{
#ifdef DEFINE_QDISC_DROP_REASON
	/*
	 * Where qdisc drop reasons exist, so does qdisc_dequeue_drop() (6.19,
	 * "net_sched: add qdisc_dequeue_drop() helper"; a child's drop goes to
	 * its root's list, or is freed at once when the root does not defer,
	 * since a6bd339dbb35 in 7.1, which is older than enum qdisc_drop_reason).
	 */
	qdisc_dequeue_drop(sch, skb, QDISC_DROP_CONGESTED);
#else
	kfree_skb(skb);
#endif
}

/*
 * Account and free (onto *to_free) what the core dropped at enqueue or change.
 * Returns their number; *bytes gets their length. The caller tells the parents.
 */
static unsigned int drop_list(struct Qdisc *sch, struct cfc_pkt *list,
			      unsigned int *bytes, struct sk_buff **to_free)
{
	unsigned int n = 0;

	*bytes = 0;
	while (list) {
		struct sk_buff *skb = node_skb(list);

		list = list->next;
		n++;
		*bytes += uncount(sch, skb);
		drop_overlimit(skb, to_free);
	}
	return n;
}

/* Tell the parents of n drops made while dequeuing. */
#if CFC_NOTIFY_IN_DEQUEUE
static void tell_parents_late(struct Qdisc *sch, unsigned int n, unsigned int bytes)
{
	if (n)
		qdisc_tree_reduce_backlog(sch, n, bytes);
}
#else
/*
 * Where a parent cannot be told while dequeuing (see CFC_NOTIFY_IN_DEQUEUE),
 * the drops are held back, as fq_codel did there, until a dequeue or an
 * enqueue leaves this qdisc with packets: the packet being dequeued is still
 * counted here, so the parents are then told of no emptying. Until then, as
 * under fq_codel there, a parent counts the dropped packets as queued.
 */
static void tell_parents_late(struct Qdisc *sch, unsigned int n, unsigned int bytes)
{
	struct confucius_sched_data *q = qdisc_priv(sch);

	q->untold_drops += n;
	q->untold_bytes += bytes;
	if (!q->untold_drops || !sch->q.qlen)
		return;
	qdisc_tree_reduce_backlog(sch, q->untold_drops, q->untold_bytes);
	q->untold_drops = 0;
	q->untold_bytes = 0;
}
#endif

/* What the core dropped at dequeue (maxdelay). */
static void drop_late(struct Qdisc *sch, struct cfc_pkt *list)
{
	unsigned int n = 0, bytes = 0;

	while (list) {
		struct sk_buff *skb = node_skb(list);

		list = list->next;
		n++;
		bytes += uncount(sch, skb);
		drop_late_one(sch, skb);
	}
	tell_parents_late(sch, n, bytes);
}

/* ------------------------------------------------------ external classes */

/*
 * Mode external: the class is skb->priority when it names this qdisc,
 * else the minor of the classid a tc filter returns, else class 1.
 * Returns 0..K-1, or -1 when a filter action says the packet goes no further.
 */
static int confucius_classify(struct sk_buff *skb, struct Qdisc *sch, int *qerr)
{
	struct confucius_sched_data *q = qdisc_priv(sch);
	u32 k = q->core.cfg.classes;
	struct tcf_result res;
	struct tcf_proto *filter;
	int result;

	if (TC_H_MAJ(skb->priority) == sch->handle &&
	    TC_H_MIN(skb->priority) >= 1 && TC_H_MIN(skb->priority) <= k)
		return TC_H_MIN(skb->priority) - 1;
	filter = rcu_dereference_bh(q->filter_list);
	if (!filter)
		return 0;
	result = tcf_classify(skb, NULL, filter, &res, false);
	if (result < 0)
		return 0;
#ifdef CONFIG_NET_CLS_ACT
	switch (result) {
	case TC_ACT_STOLEN:
	case TC_ACT_QUEUED:
	case TC_ACT_TRAP:
		*qerr = NET_XMIT_SUCCESS | __NET_XMIT_STOLEN;
		fallthrough;
	case TC_ACT_SHOT:
		return -1;
	}
#endif
	if (TC_H_MIN(res.classid) >= 1 && TC_H_MIN(res.classid) <= k)
		return TC_H_MIN(res.classid) - 1;
	return 0;
}

/* -------------------------------------------------------------- datapath */

/*
 * Whether the packet is IP with an ECN-capable transport: ECT(0), ECT(1) (L4S)
 * or already CE. The AQM marks such packets instead of dropping them.
 */
static bool skb_is_ect(struct sk_buff *skb)
{
	int dsfield = skb_get_dsfield(skb);

	return dsfield >= 0 && (dsfield & INET_ECN_MASK) != INET_ECN_NOT_ECT;
}

/* ------------------------------------------------------------------ hosts */

/*
 * With nat, the hosts as the router's inside knows them, as cake's nat. A
 * packet conntrack has seen (on egress) carries its connection, whose tuple in
 * the packet's direction, when it goes where the packet goes, names the sender
 * before NAT rewrote it. One it has not seen yet (on an IFB fed by the
 * ingress) is looked up, and the tuple of the other direction comes back: when
 * that tuple's destination is this packet's sender, its source is the inside
 * host NAT will deliver this packet to. IPv4 only, as conntrack's lookup for
 * qdiscs is, and only where the dissector read the addresses conntrack reads
 * (not a tunnel's inner ones).
 */
static void hosts_inside_nat(const struct sk_buff *skb, struct flow_keys *keys)
{
#if IS_ENABLED(CONFIG_NF_CONNTRACK)
	struct flow_dissector_key_ipv4_addrs *addrs = &keys->addrs.v4addrs;
	struct nf_conntrack_tuple tuple;

	if (skb_protocol(skb, true) != htons(ETH_P_IP) ||
	    keys->control.addr_type != FLOW_DISSECTOR_KEY_IPV4_ADDRS ||
	    (keys->control.flags & FLOW_DIS_ENCAPSULATION) ||
	    !nf_ct_get_tuple_skb(&tuple, skb) || tuple.src.l3num != NFPROTO_IPV4)
		return;
	if (skb_nfct(skb)) {
		if (tuple.dst.u3.ip == addrs->dst)
			addrs->src = tuple.src.u3.ip;
	} else if (tuple.dst.u3.ip == addrs->src) {
		addrs->dst = tuple.src.u3.ip;
	}
#endif
}

static u32 address_hash(const struct flow_keys *keys, bool source, u32 salt)
{
	const struct in6_addr *v6;

	switch (keys->control.addr_type) {
	case FLOW_DISSECTOR_KEY_IPV4_ADDRS:
		return jhash_1word((__force u32)(source ? keys->addrs.v4addrs.src :
						 keys->addrs.v4addrs.dst), salt);
	case FLOW_DISSECTOR_KEY_IPV6_ADDRS:
		v6 = source ? &keys->addrs.v6addrs.src : &keys->addrs.v6addrs.dst;
		return jhash2((const u32 *)v6->s6_addr32, 4, salt);
	}
	return 0;	/* not IP: all such packets come from and go to one host */
}

/*
 * The packet's flow, and its hosts where they divide anything: hosts are
 * isolated, in mode flow (classes served earliest-first have no quanta).
 */
static void packet_key(const struct confucius_sched_data *q, struct sk_buff *skb,
		       struct cfc_key *key)
{
	struct flow_keys keys;

	key->flow = skb_get_hash(skb);
	key->srchost = 0;
	key->dsthost = 0;
	if (q->core.cfg.isolate == CFC_ISOLATE_FLOWS || q->core.cfg.mode != CFC_MODE_FLOW)
		return;
	skb_flow_dissect_flow_keys(skb, &keys, 0);
	if (q->nat)
		hosts_inside_nat(skb, &keys);
	key->srchost = address_hash(&keys, true, q->host_salt);
	key->dsthost = address_hash(&keys, false, q->host_salt);
}

/*
 * Queue one packet in class `cls`. The packets the core drops to stay within
 * the limits are accounted here; their number and bytes are added to *drops
 * and *drop_bytes for the caller to report to the parents.
 */
static enum cfc_verdict enqueue_packet(struct sk_buff *skb, struct Qdisc *sch, int cls,
				       unsigned int *drops, unsigned int *drop_bytes,
				       struct sk_buff **to_free)
{
	struct confucius_sched_data *q = qdisc_priv(sch);
	struct cfc_pkt *node = skb_node(skb), *dropped = NULL;
	enum cfc_verdict verdict;
	struct cfc_key key;
	unsigned int bytes;

	node->len = qdisc_pkt_len(skb);
	node->truesize = skb->truesize;
	node->ect = skb_is_ect(skb);
	node->ce = 0;
	sch->q.qlen++;
	qdisc_qstats_backlog_inc(sch, skb);
	packet_key(q, skb, &key);
	verdict = cfc_enqueue(&q->core, node, &key, cls, ktime_get_ns(), &dropped);
	*drops += drop_list(sch, dropped, &bytes, to_free);
	*drop_bytes += bytes;
#if !CFC_NOTIFY_IN_DEQUEUE
	tell_parents_late(sch, 0, 0);	/* any drops held back at dequeue */
#endif
	return verdict;
}

/*
 * The length our size table (tc ... stab) gives a packet of `len` bytes: its
 * link-layer overhead, cells and minimum size. The kernel measures only the
 * packet it hands the root qdisc this way, and does not export its lookup, so
 * this is __qdisc_calculate_pkt_len() of net/sched/sch_api.c, its clamp
 * included: at least 1 byte, at most QDISC_PKT_LEN_MAX.
 */
static unsigned int stab_len(const struct qdisc_size_table *stab, unsigned int len)
{
	const struct tc_sizespec *spec = &stab->szopts;
	int pkt_len = (int)len + spec->overhead;
	int slot;

	if (spec->tsize) {
		slot = max(pkt_len + spec->cell_align, 0) >> spec->cell_log;
		if (slot < spec->tsize)
			pkt_len = stab->data[slot];
		else	/* past the table, a whole table's worth per tsize cells */
			pkt_len = stab->data[spec->tsize - 1] * (slot / spec->tsize) +
				  stab->data[slot % spec->tsize];
		pkt_len <<= spec->size_log;
	}
#ifdef QDISC_PKT_LEN_MAX
	/* a recent fix, which the stable branches took too, 6.1.y among them */
	return clamp_t(int, pkt_len, 1, QDISC_PKT_LEN_MAX);
#else
	return max(pkt_len, 1);
#endif
}

/*
 * A segment is one packet for the byte and packet counters, which read the
 * count from the qdisc's cb; the segments inherit their GSO packet's: set it,
 * as cake and tbf do.
 */
static void set_one_segment(struct sk_buff *seg)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 19, 0)
	/* 6.19, "net_sched: use qdisc_skb_cb(skb)->pkt_segs in bstats_update()" */
	qdisc_skb_cb(seg)->pkt_segs = 1;
#endif
}

/*
 * Shaping, a GSO packet (up to 64 KB from GRO or TSO) would leave as one burst
 * of many milliseconds ahead of the real-time flows: queue its segments
 * instead, as CAKE does. Each segment is measured again through our size
 * table (stab), so that the shaper charges its link-layer overhead once per
 * segment as it will be on the wire. Our parents count the packet they handed
 * us once; they are told about the segments and the drops in one correction.
 */
static int enqueue_segments(struct sk_buff *skb, struct Qdisc *sch, int cls,
			    struct sk_buff **to_free)
{
	unsigned int len = qdisc_pkt_len(skb), seg_bytes = 0, nsegs = 0, drops = 0, drop_bytes = 0;
	/* Only a root qdisc's table measured the packet: keep to what it did. */
	const struct qdisc_size_table *stab = sch->parent == TC_H_ROOT ?
		rcu_dereference_bh(sch->stab) : NULL;
	struct sk_buff *segs, *next;

	segs = skb_gso_segment(skb, netif_skb_features(skb) & ~NETIF_F_GSO_MASK);
	if (IS_ERR_OR_NULL(segs))
		return qdisc_drop(skb, sch, to_free);
	skb_list_walk_safe(segs, segs, next) {
		skb_mark_not_on_list(segs);
		qdisc_skb_cb(segs)->pkt_len = stab ? stab_len(stab, segs->len) : segs->len;
		set_one_segment(segs);
		seg_bytes += qdisc_pkt_len(segs);
		nsegs++;
		enqueue_packet(segs, sch, cls, &drops, &drop_bytes, to_free);
	}
	qdisc_tree_reduce_backlog(sch, 1 - (int)nsegs + (int)drops,
				  (int)len - (int)seg_bytes + (int)drop_bytes);
	consume_skb(skb);
	return NET_XMIT_SUCCESS;
}

static int confucius_enqueue(struct sk_buff *skb, struct Qdisc *sch,
			     struct sk_buff **to_free)
{
	struct confucius_sched_data *q = qdisc_priv(sch);
	unsigned int len = qdisc_pkt_len(skb), drops = 0, drop_bytes = 0;
	int cls = 0, qerr = NET_XMIT_SUCCESS | __NET_XMIT_BYPASS;
	enum cfc_verdict verdict;

	if (q->core.cfg.mode == CFC_MODE_EXTERNAL) {
		cls = confucius_classify(skb, sch, &qerr);
		if (cls < 0) {
			if (qerr & __NET_XMIT_BYPASS)
				qdisc_qstats_drop(sch);
			__qdisc_drop(skb, to_free);
			return qerr;
		}
	}
	if (skb_is_gso(skb) && q->core.cfg.bandwidth)
		return enqueue_segments(skb, sch, cls, to_free);
	verdict = enqueue_packet(skb, sch, cls, &drops, &drop_bytes, to_free);
	if (!drops)
		return NET_XMIT_SUCCESS;
	/*
	 * Our parents count this packet only on NET_XMIT_SUCCESS: with
	 * NET_XMIT_CN they must forget one drop less (the same as fq_codel).
	 */
	if (verdict == CFC_ENQ_CONGESTED) {
		qdisc_tree_reduce_backlog(sch, drops - 1, drop_bytes - len);
		return NET_XMIT_CN;
	}
	qdisc_tree_reduce_backlog(sch, drops, drop_bytes);
	return NET_XMIT_SUCCESS;
}

static struct sk_buff *confucius_dequeue(struct Qdisc *sch)
{
	struct confucius_sched_data *q = qdisc_priv(sch);
	struct cfc_pkt *dropped = NULL;
	struct sk_buff *skb = NULL;
	struct cfc_pkt *node;
	u64 now, until;

	/* Every qdisc run ends with a dequeue that finds nothing. With nothing queued there is
	 * nothing to send or to throttle, and the next enqueue brings the core up to its own
	 * time, so that dequeue reads no clock (one of three reads a packet when the queue
	 * never stands).
	 */
	if (!sch->q.qlen)
		return NULL;
	now = ktime_get_ns();
	node = cfc_dequeue(&q->core, now, &dropped);
	drop_late(sch, dropped);	/* before node leaves the counts */
	if (node) {
		skb = node_skb(node);
		if (node->ce)
			INET_ECN_set_ce(skb);
		sch->q.qlen--;
		qdisc_qstats_backlog_dec(sch, skb);
		qdisc_bstats_update(sch, skb);
	} else {
		until = cfc_throttled_until(&q->core, now);
		if (until) {
			qdisc_qstats_overlimit(sch);
			qdisc_watchdog_schedule_ns(&q->watchdog, until);
		}
	}
	return skb;
}

static void confucius_reset(struct Qdisc *sch)
{
	struct confucius_sched_data *q = qdisc_priv(sch);
	struct cfc_pkt *node;

	if (!q->table)
		return;
	node = cfc_reset(&q->core, ktime_get_ns());
	while (node) {
		struct sk_buff *skb = node_skb(node);

		node = node->next;
		rtnl_kfree_skbs(skb, skb);
	}
	sch->q.qlen = 0;
	sch->qstats.backlog = 0;
#if !CFC_NOTIFY_IN_DEQUEUE
	q->untold_drops = 0;
	q->untold_bytes = 0;
#endif
	qdisc_watchdog_cancel(&q->watchdog);
}

/* ----------------------------------------------------------- configuration */

static struct netlink_range_validation bandwidth_range = {
	.min = CFC_BANDWIDTH_MIN / 8, .max = CFC_BANDWIDTH_MAX / 8,
};

static struct netlink_range_validation limit_range = {
	.min = CFC_LIMIT_MIN, .max = CFC_LIMIT_MAX,
};

static struct netlink_range_validation memlimit_range = {
	.min = CFC_MEMLIMIT_MIN, .max = CFC_MEMLIMIT_MAX,
};

static struct netlink_range_validation flows_range = {
	.min = CFC_FLOWS_MIN, .max = CFC_FLOWS_MAX,
};

static struct netlink_range_validation quantum_range = {
	.min = CFC_QUANTUM_MIN, .max = CFC_QUANTUM_MAX,
};

static struct netlink_range_validation period_us_range = {
	.min = CFC_PERIOD_MIN_NS / NSEC_PER_USEC, .max = CFC_PERIOD_MAX_NS / NSEC_PER_USEC,
};

/* maxhold, maxdelay, aqm_target and aqm_settle: 0 (off), or up to 60 s (maxdelay and
 * aqm_target from a minimum of their own, checked in read_config)
 */
static struct netlink_range_validation off_or_period_us_range = {
	.min = 0, .max = CFC_PERIOD_MAX_NS / NSEC_PER_USEC,
};

/* Inside TCA_CONFUCIUS_CLASS_WEIGHTS, as TCA_ETS_QUANTA_BAND in TCA_ETS_QUANTA. */
static const struct nla_policy class_weights_policy[TCA_CONFUCIUS_MAX + 1] = {
	[TCA_CONFUCIUS_CLASS_WEIGHT]	= { .type = NLA_U32 },
};

static const struct nla_policy confucius_policy[TCA_CONFUCIUS_MAX + 1] = {
	[TCA_CONFUCIUS_BANDWIDTH64]	= { .type = NLA_U64 },
	[TCA_CONFUCIUS_LIMIT]		= NLA_POLICY_FULL_RANGE(NLA_U32, &limit_range),
	[TCA_CONFUCIUS_MEMLIMIT]	= NLA_POLICY_FULL_RANGE(NLA_U32, &memlimit_range),
	[TCA_CONFUCIUS_FLOWS]		= NLA_POLICY_FULL_RANGE(NLA_U32, &flows_range),
	[TCA_CONFUCIUS_QUANTUM]		= NLA_POLICY_FULL_RANGE(NLA_U32, &quantum_range),
	[TCA_CONFUCIUS_INTERVAL]	= NLA_POLICY_FULL_RANGE(NLA_U32, &period_us_range),
	[TCA_CONFUCIUS_MODE]		= NLA_POLICY_MAX(NLA_U32, TC_CONFUCIUS_MODE_EXTERNAL),
	[TCA_CONFUCIUS_CLASSES]		= NLA_POLICY_RANGE(NLA_U32, 1, TC_CONFUCIUS_MAX_CLASSES),
	[TCA_CONFUCIUS_HYSTERESIS]	= NLA_POLICY_MAX(NLA_U32, 50),
	[TCA_CONFUCIUS_RECLASSIFY]	= NLA_POLICY_FULL_RANGE(NLA_U32, &period_us_range),
	[TCA_CONFUCIUS_CLASS_WEIGHTS]	= NLA_POLICY_NESTED(class_weights_policy),
	[TCA_CONFUCIUS_PACE]		= NLA_POLICY_MAX(NLA_U32, TC_CONFUCIUS_PACE_ADAPTIVE),
	[TCA_CONFUCIUS_TARGET]		= NLA_POLICY_FULL_RANGE(NLA_U32, &period_us_range),
	[TCA_CONFUCIUS_MAXHOLD]		= NLA_POLICY_FULL_RANGE(NLA_U32, &off_or_period_us_range),
	[TCA_CONFUCIUS_MAXDELAY]	= NLA_POLICY_FULL_RANGE(NLA_U32, &off_or_period_us_range),
	[TCA_CONFUCIUS_AQM_TARGET]	= NLA_POLICY_FULL_RANGE(NLA_U32, &off_or_period_us_range),
	[TCA_CONFUCIUS_AQM_INTERVAL]	= NLA_POLICY_FULL_RANGE(NLA_U32, &period_us_range),
	[TCA_CONFUCIUS_ECN]		= NLA_POLICY_MAX(NLA_U32, 1),
	[TCA_CONFUCIUS_AQM_SETTLE]	= NLA_POLICY_FULL_RANGE(NLA_U32, &off_or_period_us_range),
	[TCA_CONFUCIUS_ISOLATE]		= NLA_POLICY_MAX(NLA_U32, TC_CONFUCIUS_ISOLATE_TRIPLE),
	[TCA_CONFUCIUS_NAT]		= NLA_POLICY_MAX(NLA_U32, 1),
};

/* The u64 bandwidth is range-checked here: NLA_POLICY_FULL_RANGE cannot exempt 0. */
static int read_bandwidth(struct nlattr *attr, struct cfc_config *cfg,
			  struct netlink_ext_ack *extack)
{
	u64 bytes = nla_get_u64(attr);

	if (bytes && (bytes < bandwidth_range.min || bytes > bandwidth_range.max)) {
		NL_SET_ERR_MSG_ATTR(extack, attr, CFC_BANDWIDTH_RANGE_MSG);
		return -EINVAL;
	}
	cfg->bandwidth = bytes * 8;
	return 0;
}

/*
 * The weights of classes 1, 2, ... in order (the policy checked that each is
 * a u32); the classes after the last one given get 0, served by their flows.
 */
static int read_class_weights(struct nlattr *attr, struct cfc_config *cfg,
			      struct netlink_ext_ack *extack)
{
	u32 weight[CFC_MAX_CLASSES] = { 0 };
	struct nlattr *w;
	int rem, n = 0;

	nla_for_each_nested(w, attr, rem) {
		if (n == CFC_MAX_CLASSES) {
			NL_SET_ERR_MSG_ATTR(extack, w, "at most 8 class weights");
			return -EINVAL;
		}
		weight[n++] = nla_get_u32(w);
	}
	memcpy(cfg->class_weight, weight, sizeof(weight));
	return 0;
}

/*
 * A time that is 0 (off) or at least min_ns, into *ns if given; false if it
 * falls between. The policy bounds it to 60 s and cannot exempt 0 from a
 * minimum, so the gap is refused here.
 */
static bool read_off_or_us(const struct nlattr *attr, u64 min_ns, u64 *ns)
{
	u64 value;

	if (!attr)
		return true;
	value = (u64)nla_get_u32(attr) * NSEC_PER_USEC;
	if (value && value < min_ns)
		return false;
	*ns = value;
	return true;
}

static void read_u32(const struct nlattr *attr, u32 *value)
{
	if (attr)
		*value = nla_get_u32(attr);
}

/* Times travel in microseconds; the core keeps nanoseconds. */
static void read_us(const struct nlattr *attr, u64 *ns)
{
	if (attr)
		*ns = (u64)nla_get_u32(attr) * NSEC_PER_USEC;
}

/* Fill *cfg from the attributes given; attributes not given keep their value. */
static int read_config(struct nlattr **tb, struct cfc_config *cfg,
		       struct netlink_ext_ack *extack)
{
	int err;

	if (tb[TCA_CONFUCIUS_BANDWIDTH64]) {
		err = read_bandwidth(tb[TCA_CONFUCIUS_BANDWIDTH64], cfg, extack);
		if (err)
			return err;
	}
	if (tb[TCA_CONFUCIUS_CLASS_WEIGHTS]) {
		err = read_class_weights(tb[TCA_CONFUCIUS_CLASS_WEIGHTS], cfg, extack);
		if (err)
			return err;
	}
	if (!read_off_or_us(tb[TCA_CONFUCIUS_MAXDELAY], CFC_PERIOD_MIN_NS, &cfg->maxdelay_ns)) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_CONFUCIUS_MAXDELAY], CFC_MAXDELAY_RANGE_MSG);
		return -EINVAL;
	}
	if (!read_off_or_us(tb[TCA_CONFUCIUS_AQM_TARGET], CFC_AQM_TARGET_MIN_NS,
			    &cfg->aqm_target_ns)) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_CONFUCIUS_AQM_TARGET], CFC_AQM_TARGET_RANGE_MSG);
		return -EINVAL;
	}
	read_u32(tb[TCA_CONFUCIUS_LIMIT], &cfg->limit);
	read_u32(tb[TCA_CONFUCIUS_MEMLIMIT], &cfg->memlimit);
	read_u32(tb[TCA_CONFUCIUS_FLOWS], &cfg->flows);
	read_u32(tb[TCA_CONFUCIUS_QUANTUM], &cfg->quantum);
	read_us(tb[TCA_CONFUCIUS_INTERVAL], &cfg->interval_ns);
	read_us(tb[TCA_CONFUCIUS_RECLASSIFY], &cfg->reclassify_ns);
	read_us(tb[TCA_CONFUCIUS_TARGET], &cfg->target_ns);
	read_us(tb[TCA_CONFUCIUS_MAXHOLD], &cfg->maxhold_ns);
	read_us(tb[TCA_CONFUCIUS_AQM_INTERVAL], &cfg->aqm_interval_ns);
	read_us(tb[TCA_CONFUCIUS_AQM_SETTLE], &cfg->aqm_settle_ns);
	if (tb[TCA_CONFUCIUS_ECN])
		cfg->ecn = nla_get_u32(tb[TCA_CONFUCIUS_ECN]);
	if (tb[TCA_CONFUCIUS_HYSTERESIS])
		cfg->hysteresis = nla_get_u32(tb[TCA_CONFUCIUS_HYSTERESIS]) * CFC_W_ONE / 100;
	/* The policy bounds these to their narrower fields. */
	if (tb[TCA_CONFUCIUS_MODE])
		cfg->mode = nla_get_u32(tb[TCA_CONFUCIUS_MODE]);
	if (tb[TCA_CONFUCIUS_CLASSES])
		cfg->classes = nla_get_u32(tb[TCA_CONFUCIUS_CLASSES]);
	if (tb[TCA_CONFUCIUS_PACE])
		cfg->pace = nla_get_u32(tb[TCA_CONFUCIUS_PACE]);
	if (tb[TCA_CONFUCIUS_ISOLATE])
		cfg->isolate = nla_get_u32(tb[TCA_CONFUCIUS_ISOLATE]);
	return 0;
}

/* nat into *nat if given; refused where the kernel has no conntrack to look through. */
static int read_nat(const struct nlattr *attr, bool *nat, struct netlink_ext_ack *extack)
{
	if (!attr)
		return 0;
	if (nla_get_u32(attr) && !IS_ENABLED(CONFIG_NF_CONNTRACK)) {
		NL_SET_ERR_MSG_ATTR(extack, attr, "nat needs conntrack (CONFIG_NF_CONNTRACK)");
		return -EOPNOTSUPP;
	}
	*nat = nla_get_u32(attr);
	return 0;
}

/* First configuration: the flow table and its hosts are sized once, here. */
static int confucius_start(struct Qdisc *sch, const struct cfc_config *cfg, void *heaps)
{
	struct confucius_sched_data *q = qdisc_priv(sch);

	q->table = kvzalloc(cfc_table_bytes(cfg->flows), GFP_KERNEL);
	q->hosts = kvmalloc(cfc_hosts_bytes(cfg->flows), GFP_KERNEL);
	if (!q->table || !q->hosts) {
		kvfree(q->table);
		kvfree(q->hosts);
		q->table = NULL;
		q->hosts = NULL;
		return -ENOMEM;
	}
	q->heaps = heaps;
	get_random_bytes(&q->host_salt, sizeof(q->host_salt));
	cfc_init(&q->core, q->table, q->hosts, heaps, cfg, ktime_get_ns());
	return 0;
}

/*
 * The classes' heaps, allocated outside the lock the first time a configuration
 * needs them (NULL in *heaps when it does not, or they exist).
 */
static int alloc_heaps(const struct confucius_sched_data *q, const struct cfc_config *cfg,
		       void **heaps, struct netlink_ext_ack *extack)
{
	*heaps = NULL;
	if (!cfc_needs_heaps(cfg) || q->heaps)
		return 0;
	*heaps = kvmalloc(cfc_heaps_bytes(cfg->flows), GFP_KERNEL);
	if (!*heaps) {
		NL_SET_ERR_MSG(extack, "no memory for the classes' heaps");
		return -ENOMEM;
	}
	return 0;
}

/* Validate everything first; change nothing unless all of it is good. */
static int confucius_change(struct Qdisc *sch, struct nlattr *opt,
			    struct netlink_ext_ack *extack)
{
	struct confucius_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_CONFUCIUS_MAX + 1];
	struct cfc_pkt *dropped = NULL;
	struct sk_buff *to_free = NULL;
	struct cfc_config cfg;
	unsigned int n, bytes;
	bool nat = q->nat;
	void *heaps;
	u64 now;
	int err;

	if (q->table)
		cfg = q->core.cfg;
	else
		cfc_config_default(&cfg);
	if (opt) {
		err = nla_parse_nested(tb, TCA_CONFUCIUS_MAX, opt, confucius_policy, extack);
		if (err < 0)
			return err;
		err = read_config(tb, &cfg, extack);
		if (err)
			return err;
		err = read_nat(tb[TCA_CONFUCIUS_NAT], &nat, extack);
		if (err)
			return err;
		if (q->table && tb[TCA_CONFUCIUS_FLOWS] && cfg.flows != q->core.cfg.flows) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_CONFUCIUS_FLOWS],
					    "flows can only be set when the qdisc is created");
			return -EINVAL;
		}
	}
	/* The policy and the readers above refuse all the core would, with a reason. */
	if (cfc_config_check(&cfg)) {
		NL_SET_ERR_MSG(extack, "configuration out of range");
		return -EINVAL;
	}
	err = alloc_heaps(q, &cfg, &heaps, extack);
	if (err)
		return err;
	if (!q->table) {
		err = confucius_start(sch, &cfg, heaps);
		if (err) {
			kvfree(heaps);
			return err;
		}
		q->nat = nat;
		return 0;
	}

	sch_tree_lock(sch);
	now = ktime_get_ns();
	q->nat = nat;
	if (heaps) {
		q->heaps = heaps;
		cfc_set_heaps(&q->core, heaps);
	}
	cfc_change(&q->core, &cfg, now, &dropped);
	/*
	 * Outside the parents' dequeue they may be told at once on any kernel,
	 * as fq_codel_change() has always done. Freed after the lock.
	 */
	n = drop_list(sch, dropped, &bytes, &to_free);
	qdisc_tree_reduce_backlog(sch, n, bytes);
	/* A packet held back at the old rate may be due now: let dequeue decide. */
	if (q->core.qlen)
		qdisc_watchdog_schedule_ns(&q->watchdog, now);
	sch_tree_unlock(sch);
	kfree_skb_list(to_free);
	return 0;
}

static int confucius_init(struct Qdisc *sch, struct nlattr *opt,
			  struct netlink_ext_ack *extack)
{
	struct confucius_sched_data *q = qdisc_priv(sch);
	int err;

	qdisc_watchdog_init(&q->watchdog, sch);
#ifdef DEFINE_QDISC_DROP_REASON
	sch->flags |= TCQ_F_DEQUEUE_DROPS;	/* see drop_late_one() */
#endif
	err = tcf_block_get(&q->block, &q->filter_list, sch, extack);
	if (err)
		return err;
	return confucius_change(sch, opt, extack);
}

static void confucius_destroy(struct Qdisc *sch)
{
	struct confucius_sched_data *q = qdisc_priv(sch);

	tcf_block_put(q->block);
	qdisc_watchdog_cancel(&q->watchdog);
	kvfree(q->table);
	q->table = NULL;
	kvfree(q->hosts);
	q->hosts = NULL;
	kvfree(q->heaps);
	q->heaps = NULL;
}

/* ------------------------------------------------------------------ dumps */

static int dump_class_weights(struct sk_buff *skb, const struct cfc_config *cfg)
{
	struct nlattr *nest = nla_nest_start(skb, TCA_CONFUCIUS_CLASS_WEIGHTS);
	u32 i;

	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < CFC_MAX_CLASSES; i++) {
		if (nla_put_u32(skb, TCA_CONFUCIUS_CLASS_WEIGHT, cfg->class_weight[i])) {
			nla_nest_cancel(skb, nest);
			return -EMSGSIZE;
		}
	}
	nla_nest_end(skb, nest);
	return 0;
}

static int dump_config(struct sk_buff *skb, const struct cfc_config *cfg, bool nat)
{
	if (nla_put_u64_64bit(skb, TCA_CONFUCIUS_BANDWIDTH64, cfg->bandwidth / 8,
			      TCA_CONFUCIUS_PAD) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_LIMIT, cfg->limit) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_MEMLIMIT, cfg->memlimit) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_FLOWS, cfg->flows) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_QUANTUM, cfg->quantum) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_INTERVAL, div_u64(cfg->interval_ns, NSEC_PER_USEC)) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_MODE, cfg->mode) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_CLASSES, cfg->classes) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_HYSTERESIS,
			DIV_ROUND_CLOSEST(cfg->hysteresis * 100, CFC_W_ONE)) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_RECLASSIFY,
			div_u64(cfg->reclassify_ns, NSEC_PER_USEC)) ||
	    dump_class_weights(skb, cfg) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_PACE, cfg->pace) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_TARGET, div_u64(cfg->target_ns, NSEC_PER_USEC)) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_MAXHOLD, div_u64(cfg->maxhold_ns, NSEC_PER_USEC)) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_MAXDELAY, div_u64(cfg->maxdelay_ns, NSEC_PER_USEC)) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_AQM_TARGET,
			div_u64(cfg->aqm_target_ns, NSEC_PER_USEC)) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_AQM_INTERVAL,
			div_u64(cfg->aqm_interval_ns, NSEC_PER_USEC)) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_AQM_SETTLE,
			div_u64(cfg->aqm_settle_ns, NSEC_PER_USEC)) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_ECN, cfg->ecn) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_ISOLATE, cfg->isolate) ||
	    nla_put_u32(skb, TCA_CONFUCIUS_NAT, nat))
		return -EMSGSIZE;
	return 0;
}

/* Dumps and changes both run under RTNL, so the configuration is read whole. */
static int confucius_dump(struct Qdisc *sch, struct sk_buff *skb)
{
	struct confucius_sched_data *q = qdisc_priv(sch);
	struct nlattr *opts = nla_nest_start_noflag(skb, TCA_OPTIONS);

	if (!opts || dump_config(skb, &q->core.cfg, q->nat))
		goto nla_put_failure;
	return nla_nest_end(skb, opts);

nla_put_failure:
	nla_nest_cancel(skb, opts);
	return -1;
}

static u32 classes_in_use(const struct confucius_sched_data *q)
{
	return q->core.cfg.mode == CFC_MODE_FLOW ? 1 : q->core.cfg.classes;
}

/* What one instance holds besides its packets: what grows with thousands of them. */
static u64 instance_bytes(const struct confucius_sched_data *q)
{
	u32 flows = q->core.cfg.flows;

	return sizeof(*q) + cfc_table_bytes(flows) + cfc_hosts_bytes(flows) +
	       (q->heaps ? cfc_heaps_bytes(flows) : 0);
}

static void fill_qdisc_stats(const struct confucius_sched_data *q, const struct cfc_stats *cs,
			     struct tc_confucius_qd_stats *st)
{
	u32 i;

	st->new_flows = cs->new_flows;
	st->old_flows = cs->old_flows;
	st->new_weight = cs->new_sum;
	st->ticks = cs->cnt.ticks;
	st->holds = cs->cnt.holds;
	st->delay_drops = cs->cnt.delay_drops;
	st->aqm_drops = cs->cnt.aqm_drops;
	st->ecn_marks = cs->cnt.ecn_marks;
	st->moves = cs->cnt.moves;
	st->max_sojourn_us = (u32)div_u64((u64)cs->cnt.max_sojourn << 10, NSEC_PER_USEC);
	st->memory_used = cs->mem;
	st->instance_bytes = instance_bytes(q);
	st->classes = classes_in_use(q);
	for (i = 0; i < TC_CONFUCIUS_MAX_CLASSES; i++) {
		st->class_flows[i] = cs->class_flows[i];
		st->class_packets[i] = cs->class_qlen[i];
		st->class_bytes[i] = cs->class_backlog[i];
	}
	st->enqueued_packets = cs->cnt.enqueued_pkts;
	st->enqueued_bytes = cs->cnt.enqueued_bytes;
	st->sent_packets = cs->cnt.dequeued_pkts;
	st->sent_bytes = cs->cnt.dequeued_bytes;
	st->dropped_packets = cs->cnt.dropped_pkts;
	st->dropped_bytes = cs->cnt.dropped_bytes;
	st->backlog_packets = cs->qlen;
	st->backlog_bytes = cs->backlog;
}

/*
 * Stats dumps run without the qdisc lock, concurrently with the datapath: take
 * it, so that the counters are one consistent snapshot. A dump only reads: the
 * state is the one the last packet left (a tick or a forgetting due since is
 * run by the next packet, at the time it was due).
 */
static int confucius_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct confucius_sched_data *q = qdisc_priv(sch);
	struct tc_confucius_xstats st = { .type = TCA_CONFUCIUS_XSTATS_QDISC };
	struct cfc_stats cs;

	sch_tree_lock(sch);
	cfc_stats(&q->core, &cs);
	sch_tree_unlock(sch);
	fill_qdisc_stats(q, &cs, &st.qdisc_stats);
	return gnet_stats_copy_app(d, &st, sizeof(st));
}

/* -------------------------------------------- classes (for tc filters) */

static struct Qdisc *confucius_leaf(struct Qdisc *sch, unsigned long arg)
{
	return NULL;
}

static unsigned long confucius_find(struct Qdisc *sch, u32 classid)
{
	return 0;
}

static unsigned long confucius_bind(struct Qdisc *sch, unsigned long parent, u32 classid)
{
	return 0;
}

static void confucius_unbind(struct Qdisc *q, unsigned long cl)
{
}

static struct tcf_block *confucius_tcf_block(struct Qdisc *sch, unsigned long cl,
					     struct netlink_ext_ack *extack)
{
	struct confucius_sched_data *q = qdisc_priv(sch);

	return cl ? NULL : q->block;
}

static int confucius_dump_class(struct Qdisc *sch, unsigned long cl,
				struct sk_buff *skb, struct tcmsg *tcm)
{
	tcm->tcm_handle |= TC_H_MIN(cl);
	return 0;
}

static bool is_flow_class(unsigned long cl)
{
	return cl >= TC_CONFUCIUS_FLOW_MINOR;
}

/* The ports of the flow's head packet, so that a dump tells which flow it is. */
static void head_ports(struct cfc_flow *f, struct tc_confucius_fl_stats *st)
{
	struct flow_keys keys;

	if (!f->head || !skb_flow_dissect_flow_keys(node_skb(f->head), &keys, 0))
		return;
	st->sport = ntohs(keys.ports.src);
	st->dport = ntohs(keys.ports.dst);
	st->ip_proto = keys.basic.ip_proto;
}

/* Under the qdisc's lock. False when the flow has been forgotten meanwhile. */
static bool fill_flow_stats(struct confucius_sched_data *q, u32 bucket,
			    struct tc_confucius_fl_stats *st)
{
	struct cfc_flow_stats fs;

	if (!cfc_flow_stats(&q->core, bucket, ktime_get_ns(), &fs))
		return false;
	st->bucket = bucket;
	st->state = fs.state == CFC_FLOW_NEW ? TC_CONFUCIUS_FLOW_NEW : TC_CONFUCIUS_FLOW_OLD;
	st->class_id = fs.queue;
	st->weight = fs.weight;
	st->packets = fs.qlen;
	st->bytes = fs.backlog;
	st->deficit = fs.deficit;
	st->sojourn_us = (u32)min_t(u64, div_u64(fs.sojourn_ns, NSEC_PER_USEC), U32_MAX);
	head_ports(&q->core.flows[bucket], st);
	return true;
}

static void fill_class_stats(const struct confucius_sched_data *q, unsigned long cl,
			     struct tc_confucius_cl_stats *st)
{
	const struct cfc_queue *queue = &q->core.queues[cl];

	st->flows = queue->nflows;
	st->packets = queue->qlen;
	st->bytes = queue->backlog;
}

static int confucius_dump_class_stats(struct Qdisc *sch, unsigned long cl,
				      struct gnet_dump *d)
{
	struct confucius_sched_data *q = qdisc_priv(sch);
	struct tc_confucius_xstats st = { 0 };
	struct gnet_stats_queue qs = { 0 };

	sch_tree_lock(sch);	/* as in confucius_dump_stats */
	if (is_flow_class(cl)) {
		st.type = TCA_CONFUCIUS_XSTATS_FLOW;
		if (fill_flow_stats(q, cl - TC_CONFUCIUS_FLOW_MINOR, &st.flow_stats)) {
			qs.qlen = st.flow_stats.packets;
			qs.backlog = st.flow_stats.bytes;
		}
	} else {
		st.type = TCA_CONFUCIUS_XSTATS_CLASS;
		fill_class_stats(q, cl, &st.class_stats);
		qs.qlen = st.class_stats.packets;
		qs.backlog = st.class_stats.bytes;
	}
	sch_tree_unlock(sch);

	if (gnet_stats_copy_queue(d, NULL, &qs, qs.qlen) < 0)
		return -1;
	return gnet_stats_copy_app(d, &st, sizeof(st));
}

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)
/* The walker step every qdisc shares as tc_qdisc_stats_dump() from 6.1 on. */
static bool tc_qdisc_stats_dump(struct Qdisc *sch, unsigned long cl, struct qdisc_walker *arg)
{
	if (arg->count >= arg->skip && arg->fn(sch, cl, arg) < 0) {
		arg->stop = 1;
		return false;
	}
	arg->count++;
	return true;
}
#endif

/*
 * `tc class show` lists the classes 1..K (the old flows' groups), then every
 * remembered flow as TC_CONFUCIUS_FLOW_MINOR + its bucket, as fq_codel lists its
 * flows. A dump larger than one netlink message resumes at the position
 * arg->skip: every bucket is a position, free or not, as each of fq_codel's
 * flows is, so a flow forgotten or new between two messages moves no other.
 * A flow's state is read racily here, as fq_codel does; its statistics are
 * then taken under the lock.
 */
static void confucius_walk(struct Qdisc *sch, struct qdisc_walker *arg)
{
	struct confucius_sched_data *q = qdisc_priv(sch);
	u32 i;

	if (arg->stop)
		return;
	for (i = 1; i <= classes_in_use(q); i++)
		if (!tc_qdisc_stats_dump(sch, i, arg))
			return;
	for (i = 0; i < q->core.cfg.flows; i++) {
		if (READ_ONCE(q->core.flows[i].state) == CFC_FLOW_FREE) {
			arg->count++;
			continue;
		}
		if (!tc_qdisc_stats_dump(sch, TC_CONFUCIUS_FLOW_MINOR + i, arg))
			return;
	}
}

static const struct Qdisc_class_ops confucius_class_ops = {
	.leaf		= confucius_leaf,
	.find		= confucius_find,
	.tcf_block	= confucius_tcf_block,
	.bind_tcf	= confucius_bind,
	.unbind_tcf	= confucius_unbind,
	.dump		= confucius_dump_class,
	.dump_stats	= confucius_dump_class_stats,
	.walk		= confucius_walk,
};

static struct Qdisc_ops confucius_qdisc_ops __read_mostly = {
	.cl_ops		= &confucius_class_ops,
	.id		= "confucius",
	.priv_size	= sizeof(struct confucius_sched_data),
	.enqueue	= confucius_enqueue,
	.dequeue	= confucius_dequeue,
	.peek		= qdisc_peek_dequeued,
	.init		= confucius_init,
	.reset		= confucius_reset,
	.destroy	= confucius_destroy,
	.change		= confucius_change,
	.dump		= confucius_dump,
	.dump_stats	= confucius_dump_stats,
	.owner		= THIS_MODULE,
};

static int __init confucius_module_init(void)
{
	BUILD_BUG_ON(sizeof(struct cfc_pkt) > QDISC_CB_PRIV_LEN);
	BUILD_BUG_ON(CFC_FLOWS_MAX > 0x10000 - TC_CONFUCIUS_FLOW_MINOR);
	BUILD_BUG_ON((int)TC_CONFUCIUS_PACE_FIXED != (int)CFC_PACE_FIXED ||
		     (int)TC_CONFUCIUS_PACE_ADAPTIVE != (int)CFC_PACE_ADAPTIVE);
	BUILD_BUG_ON((int)TC_CONFUCIUS_ISOLATE_FLOWS != (int)CFC_ISOLATE_FLOWS ||
		     (int)TC_CONFUCIUS_ISOLATE_DUAL_SRCHOST != (int)CFC_ISOLATE_SRCHOST ||
		     (int)TC_CONFUCIUS_ISOLATE_DUAL_DSTHOST != (int)CFC_ISOLATE_DSTHOST ||
		     (int)TC_CONFUCIUS_ISOLATE_TRIPLE != (int)CFC_ISOLATE_HOSTS);
	return register_qdisc(&confucius_qdisc_ops);
}

static void __exit confucius_module_exit(void)
{
	unregister_qdisc(&confucius_qdisc_ops);
}

module_init(confucius_module_init);
module_exit(confucius_module_exit);
MODULE_ALIAS_NET_SCH("confucius");
MODULE_AUTHOR("The Confucius authors");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Confucius: gradual bandwidth reallocation for consistent low latency");
MODULE_VERSION(CONFUCIUS_VERSION);
