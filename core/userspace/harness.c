// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>

#include <linux/bitops.h>
#include <linux/list.h>

#include "harness.h"

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p) {
		perror("calloc");
		abort();
	}
	return p;
}

struct cfc_config ts_default_config(void)
{
	struct cfc_config cfg;

	cfc_config_default(&cfg);
	return cfg;
}

struct tsched *ts_new(const struct cfc_config *cfg, u32 nflows)
{
	struct tsched *ts = xcalloc(1, sizeof(*ts));

	ts->table = xcalloc(1, (size_t)cfc_table_bytes(cfg->flows));
	ts->hosts = xcalloc(1, (size_t)cfc_hosts_bytes(cfg->flows));
	if (cfc_needs_heaps(cfg))
		ts->heaps = xcalloc(1, (size_t)cfc_heaps_bytes(cfg->flows));
	ts->nflows = nflows;
	ts->seq_in = xcalloc(nflows, sizeof(u32));
	ts->seq_out = xcalloc(nflows, sizeof(u32));
	ts->bytes_out = xcalloc(nflows, sizeof(u64));
	ts->drops = xcalloc(nflows, sizeof(u64));
	ts->marks = xcalloc(nflows, sizeof(u64));
	ts->ect = xcalloc(nflows, sizeof(bool));
	ts->srchost = xcalloc(nflows, sizeof(u32));
	ts->dsthost = xcalloc(nflows, sizeof(u32));
	for (u32 i = 0; i < nflows; i++)
		ts_set_hosts(ts, i, i, i);	/* hosts of their own: isolation changes nothing */
	ts->now = 1000000000ull;	/* start at 1 s, away from zero */
	cfc_init(&ts->s, ts->table, ts->hosts, ts->heaps, cfg, ts->now);
	return ts;
}

/* Every packet leaves its flow (sent or dropped) in the order it came. */
static void leave(struct tsched *ts, struct tpkt *p)
{
	if (p->seq != ts->seq_out[p->flow])
		ts->order_errors++;
	ts->seq_out[p->flow] = p->seq + 1;
}

static void free_dropped(struct tsched *ts, struct cfc_pkt *list)
{
	/* The core chains drops newest first; replay them oldest first per flow. */
	struct cfc_pkt *rev = NULL;

	while (list) {
		struct cfc_pkt *next = list->next;

		list->next = rev;
		rev = list;
		list = next;
	}
	while (rev) {
		struct tpkt *p = (struct tpkt *)rev;

		rev = rev->next;
		leave(ts, p);
		ts->drops[p->flow]++;
		free(p);
	}
}

void ts_free(struct tsched *ts)
{
	free_dropped(ts, cfc_reset(&ts->s, ts->now));
	free(ts->table);
	free(ts->hosts);
	free(ts->heaps);
	free(ts->seq_in);
	free(ts->seq_out);
	free(ts->bytes_out);
	free(ts->drops);
	free(ts->marks);
	free(ts->ect);
	free(ts->srchost);
	free(ts->dsthost);
	free(ts);
}

u32 ts_bucket(const struct tsched *ts, u32 flow)
{
	return flow % ts->s.cfg.flows;
}

/* The hash that cfc_bucket() scales back to exactly `bucket`: ceil(bucket * 2^32 / buckets). */
static u32 hash_of_bucket(const struct tsched *ts, u32 bucket)
{
	u64 buckets = ts->s.cfg.flows;

	return (u32)((((u64)bucket << 32) + buckets - 1) / buckets);
}

u32 ts_hash(const struct tsched *ts, u32 flow)
{
	return hash_of_bucket(ts, ts_bucket(ts, flow));
}

void ts_set_hosts(struct tsched *ts, u32 flow, u32 src, u32 dst)
{
	ts->srchost[flow] = src;
	ts->dsthost[flow] = dst;
}

struct cfc_key ts_key(const struct tsched *ts, u32 flow)
{
	u32 buckets = ts->s.cfg.flows;

	return (struct cfc_key){
		.flow = ts_hash(ts, flow),
		.srchost = hash_of_bucket(ts, ts->srchost[flow] % buckets),
		.dsthost = hash_of_bucket(ts, ts->dsthost[flow] % buckets),
	};
}

enum cfc_verdict ts_enqueue_class(struct tsched *ts, u32 flow, u32 len, u32 cls)
{
	struct tpkt *p = xcalloc(1, sizeof(*p));
	struct cfc_pkt *dropped = NULL;
	struct cfc_key key;
	enum cfc_verdict v;

	p->flow = flow;
	p->seq = ts->seq_in[flow]++;
	p->node.len = len;
	p->node.truesize = len + 256;	/* like an skb: payload plus overhead */
	p->node.ect = ts->ect[flow];
	key = ts_key(ts, flow);
	v = cfc_enqueue(&ts->s, &p->node, &key, cls, ts->now, &dropped);
	free_dropped(ts, dropped);
	return v;
}

enum cfc_verdict ts_enqueue(struct tsched *ts, u32 flow, u32 len)
{
	return ts_enqueue_class(ts, flow, len, 0);
}

int ts_dequeue(struct tsched *ts, u32 *len)
{
	struct cfc_pkt *dropped = NULL;
	struct tpkt *p = (struct tpkt *)cfc_dequeue(&ts->s, ts->now, &dropped);
	int flow;

	free_dropped(ts, dropped);
	if (!p)
		return -1;
	leave(ts, p);
	flow = (int)p->flow;
	ts->bytes_out[flow] += p->node.len;
	ts->marks[flow] += p->node.ce;
	if (len)
		*len = p->node.len;
	free(p);
	return flow;
}

void ts_change(struct tsched *ts, const struct cfc_config *cfg)
{
	struct cfc_pkt *dropped = NULL;

	/* As the kernel: the heaps come with the first mode that needs them. */
	if (cfc_needs_heaps(cfg) && !ts->heaps) {
		ts->heaps = xcalloc(1, (size_t)cfc_heaps_bytes(ts->s.cfg.flows));
		cfc_set_heaps(&ts->s, ts->heaps);
	}
	cfc_change(&ts->s, cfg, ts->now, &dropped);
	free_dropped(ts, dropped);
}

void ts_reset(struct tsched *ts)
{
	free_dropped(ts, cfc_reset(&ts->s, ts->now));
}

u64 ts_tx_ns(u32 len, u64 rate)
{
	return (u64)len * 8ull * 1000000000ull / rate;
}

void ts_run_link(struct tsched *ts, u64 rate, u64 duration, ts_refill_fn refill, void *ctx)
{
	u64 end = ts->now + duration;

	while (ts->now < end) {
		u32 len;

		if (refill)
			refill(ts, ctx);
		if (ts_dequeue(ts, &len) >= 0)
			ts->now += ts_tx_ns(len, rate);
		else
			ts->now += 10000;
	}
}

void ts_keep_backlogged(struct tsched *ts, void *ctx)
{
	const struct ts_backlog *b = ctx;
	u32 i;

	for (i = b->first; i < b->first + b->count; i++)
		while (ts->s.flows[ts_bucket(ts, i)].qlen < b->depth)
			ts_enqueue(ts, i, b->len);
}

double ts_measured_share(struct tsched *ts, u64 rate, u32 count, u32 who, u64 duration)
{
	struct ts_backlog keep = { .first = 0, .count = count, .depth = 4, .len = 1500 };
	u64 before_who = ts->bytes_out[who], before_all = 0, after_all = 0;
	u32 i;

	for (i = 0; i < count; i++)
		before_all += ts->bytes_out[i];
	ts_run_link(ts, rate, duration, ts_keep_backlogged, &keep);
	for (i = 0; i < count; i++)
		after_all += ts->bytes_out[i];
	return (double)(ts->bytes_out[who] - before_who) / (double)(after_all - before_all);
}

/* ------------------------------------------------------------ invariants */

static bool ring_contains(const struct list_head *head, const struct list_head *l)
{
	const struct list_head *i;

	for (i = head->next; i != head; i = i->next)
		if (i == l)
			return true;
	return false;
}

static const char *check_flow(const struct cfc_sched *s, u32 i, u64 *mem)
{
	const struct cfc_flow *f = &s->flows[i];
	const struct cfc_queue *q = &s->queues[f->queue];
	const struct cfc_pkt *p;
	u32 qlen = 0, backlog = 0;

	for (p = f->head; p; p = p->next) {
		qlen++;
		backlog += p->len;
		*mem += p->truesize;
		if (!p->next && p != f->tail)
			return "flow tail is not its last packet";
	}
	if (qlen != f->qlen || backlog != f->backlog)
		return "flow qlen/backlog disagree with its packet list";
	if (f->fat_bucket != (qlen ? (u32)fls(backlog + qlen) : 0) ||
	    (qlen && !ring_contains(&s->fat[f->fat_bucket], &f->fat)) ||
	    (qlen && f->fat_bucket > s->fat_top))
		return "flow not in the drop list of its backlog size";
	if (f->state == CFC_FLOW_FREE)
		return qlen ? "a free flow holds packets" : NULL;
	if (!ring_contains(&q->members, &f->member))
		return "flow missing from its queue's members";
	if ((f->state == CFC_FLOW_NEW) != (f->queue == CFC_QNEW))
		return "new flow outside Q_new, or old flow inside it";
	if (qlen == 0)
		return ring_contains(f->state == CFC_FLOW_NEW ? &s->idle_new : &s->idle_old, &f->sched) ?
			NULL : "empty flow not on the idle list of its state";
	if (q->fifo)
		return f->heap_pos < q->heap_len && q->heap[f->heap_pos].flow == i &&
			q->heap[f->heap_pos].stamp == f->head->stamp ?
			NULL : "backlogged flow not at its heap position, or with a stale key";
	return ring_contains(&q->ring, &f->sched) || ring_contains(&q->sparse, &f->sched) ?
		NULL : "backlogged flow in neither its queue's ring nor its sparse list";
}

static const char *check_queue(const struct cfc_sched *s, u32 i)
{
	const struct cfc_queue *q = &s->queues[i];
	const struct cfc_flow *f;
	u32 n = 0, active = 0, qlen = 0, backlog = 0, k;

	list_for_each_entry(f, &q->members, member) {
		n++;
		active += f->qlen > 0;
		qlen += f->qlen;
		backlog += f->backlog;
	}
	if (n != q->nflows || active != q->nactive || qlen != q->qlen || backlog != q->backlog)
		return "queue counters disagree with its members";
	if ((q->nactive > 0) != ring_contains(&s->round, &q->round))
		return "queue in the round iff it has backlogged flows: broken";
	if (q->fifo) {
		if (q->heap_len != q->nactive)
			return "heap size differs from backlogged flows";
		for (k = 1; k < q->heap_len; k++) {
			u32 child = q->heap[k].stamp;
			u32 parent = q->heap[(k - 1) / 4].stamp;	/* 4-ary */

			if ((s32)(child - parent) < 0)
				return "heap order broken";
		}
	}
	return NULL;
}

static const char *check_idle_order(const struct list_head *list, u8 state)
{
	const struct cfc_flow *f;
	u64 last = 0;

	list_for_each_entry(f, list, sched) {
		if (f->idle_since < last)
			return "idle list out of time order";
		if (f->qlen || f->state != state)
			return "idle list holds a backlogged flow or one of another state";
		last = f->idle_since;
	}
	return NULL;
}

/* The earliest time a flow of an idle list is due to be forgotten. */
static u64 first_forget(const struct list_head *list, u64 keep)
{
	if (list_empty(list))
		return ~0ull;
	return list_first_entry(list, struct cfc_flow, sched)->idle_since + keep;
}

/* cfc_advance skips work until next_event_ns: nothing may be due before it. */
static const char *check_next_event(const struct cfc_sched *s)
{
	u64 old_due = first_forget(&s->idle_old, CFC_OLD_KEEP_INTERVALS * s->cfg.interval_ns);
	u64 due = first_forget(&s->idle_new, s->cfg.interval_ns);

	if (old_due < due)
		due = old_due;
	if (s->nnew && s->next_tick_ns < due)
		due = s->next_tick_ns;
	if (s->cfg.mode == CFC_MODE_CLASS && s->next_reclassify_ns < due)
		due = s->next_reclassify_ns;
	return s->next_event_ns <= due ? NULL : "an event falls due before next_event_ns";
}

/* Every host's loads count exactly its backlogged old flows served by DRR. */
static const char *check_host_loads(const struct cfc_sched *s)
{
	u32 *src = xcalloc(s->cfg.flows, sizeof(u32));
	u32 *dst = xcalloc(s->cfg.flows, sizeof(u32));
	const char *err = NULL;
	u32 i;

	for (i = 0; i < s->cfg.flows; i++) {
		const struct cfc_flow *f = &s->flows[i];

		if (f->state == CFC_FLOW_OLD && f->qlen && !s->queues[f->queue].fifo) {
			src[s->hosts[i].flow_src]++;
			dst[s->hosts[i].flow_dst]++;
		}
	}
	for (i = 0; i < s->cfg.flows && !err; i++)
		if (src[i] != s->hosts[i].src_load || dst[i] != s->hosts[i].dst_load)
			err = "a host's load disagrees with its backlogged old flows";
	free(src);
	free(dst);
	return err;
}

const char *ts_check(const struct tsched *ts)
{
	const struct cfc_sched *s = &ts->s;
	const struct cfc_counters *c = &s->cnt;
	u32 i, nnew = 0, nold = 0, qlen = 0, backlog = 0;
	u64 mem = 0;
	const char *err;

	for (i = 0; i < s->cfg.flows; i++) {
		err = check_flow(s, i, &mem);
		if (err)
			return err;
		nnew += s->flows[i].state == CFC_FLOW_NEW;
		nold += s->flows[i].state == CFC_FLOW_OLD;
		qlen += s->flows[i].qlen;
		backlog += s->flows[i].backlog;
	}
	for (i = 0; i < CFC_NQUEUES; i++) {
		err = check_queue(s, i);
		if (err)
			return err;
	}
	if (nnew != s->nnew || nold != s->nold)
		return "new/old flow counts disagree with the table";
	if ((s->nnew == 0) != (s->new_sum == 0))
		return "S must be 0 without new flows and positive with them";
	if (s->new_owed && s->nnew == 0)
		return "weight owed to new flows without any";
	if (qlen != s->qlen || backlog != s->backlog || mem != s->mem)
		return "scheduler totals disagree with the flows";
	if (c->enqueued_pkts != c->dequeued_pkts + c->dropped_pkts + s->qlen ||
	    c->enqueued_bytes != c->dequeued_bytes + c->dropped_bytes + s->backlog)
		return "conservation broken: enqueued != dequeued + dropped + backlog";
	if (s->qlen > s->cfg.limit || s->mem > s->cfg.memlimit)
		return "over limit after an operation";
	if (ts->order_errors)
		return "a flow's packets left out of order";
	err = check_next_event(s);
	if (err)
		return err;
	err = check_host_loads(s);
	if (err)
		return err;
	err = check_idle_order(&s->idle_new, CFC_FLOW_NEW);
	return err ? err : check_idle_order(&s->idle_old, CFC_FLOW_OLD);
}
