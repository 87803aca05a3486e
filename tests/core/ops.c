// SPDX-License-Identifier: MIT
#include "harness.h"
#include "ops.h"

#define TEST_FLOWS	64
#define MS		1000000ull

/*
 * The core keeps time as CoDel does, in u32 ticks of 1.024 us: it orders packets by age,
 * and measures their sojourn, within 2^31 ticks (36.6 min). A program stays inside that
 * horizon: at most OPS_MAX_BYTES are read (the fuzzer's -max_len), at most one time step
 * per 3 bytes, and no step longer than 1.28 s (op 4): 1365 steps make 29 min at most, which
 * leaves the final drain minutes to spare (64 packets at the slowest shaper: 8 s).
 */
#define OPS_MAX_BYTES	4096

struct reader {
	const u8 *data;
	size_t size, pos;
};

/* Bytes past the end read as zero, so every input is a complete program. */
static u32 next_byte(struct reader *r)
{
	return r->pos < r->size ? r->data[r->pos++] : 0;
}

static u32 next_u16(struct reader *r)
{
	return next_byte(r) | next_byte(r) << 8;
}

static void read_config(struct reader *r, struct cfc_config *cfg, u32 flows)
{
	static const u32 bucket_choices[] = { 1, 4, 16, 64 };
	u32 i, bw = next_byte(r);

	cfc_config_default(cfg);
	cfg->mode = (u8)(next_byte(r) % CFC_MODE_COUNT);
	cfg->flows = flows ? flows : bucket_choices[next_byte(r) % 4];
	cfg->limit = 1 + next_byte(r) % 64;
	cfg->memlimit = CFC_MEMLIMIT_MIN + next_byte(r) * 1024;
	cfg->quantum = CFC_QUANTUM_MIN + next_byte(r) * 32;
	cfg->interval_ns = (1 + next_byte(r) % 100) * MS;
	cfg->reclassify_ns = (1 + next_byte(r) % 100) * MS;
	cfg->classes = (u8)(1 + next_byte(r) % CFC_MAX_CLASSES);
	cfg->hysteresis = (next_byte(r) % 51) * CFC_W_ONE / 100;
	cfg->bandwidth = bw ? CFC_BANDWIDTH_MIN + (u64)bw * 100000 : 0;
	for (i = 0; i < CFC_MAX_CLASSES; i++)
		cfg->class_weight[i] = next_byte(r) % 4;
	cfg->pace = (u8)(next_byte(r) % CFC_PACE_COUNT);
	cfg->target_ns = (1 + next_byte(r) % 50) * MS;
	cfg->maxhold_ns = (next_byte(r) % 8) * 25 * MS;
	cfg->maxdelay_ns = (next_byte(r) % 4) * 20 * MS;	/* 0: no bound */
	cfg->isolate = (u8)(next_byte(r) % CFC_ISOLATE_COUNT);
}

/* One operation; returns false when the input is used up. */
static bool apply_op(struct tsched *ts, struct reader *r)
{
	struct cfc_config cfg;
	u32 op = next_byte(r), flow, n;

	if (r->pos >= r->size)
		return false;
	flow = next_byte(r) % TEST_FLOWS;
	switch (op % 8) {
	case 0:
	case 1:
		n = next_u16(r) % 1600;
		ts_enqueue_class(ts, flow, n, next_byte(r) % 10);
		break;
	case 2:
		for (n = 1 + flow % 8; n; n--)
			ts_dequeue(ts, NULL);
		break;
	case 3:
		ts->now += (u64)next_byte(r) * MS;
		break;
	case 4:
		ts->now += (u64)next_byte(r) * 5 * MS;
		break;
	case 5:
		read_config(r, &cfg, ts->s.cfg.flows);
		ts_change(ts, &cfg);
		break;
	case 6:
		for (n = 0; n < 10; n++)
			ts_enqueue_class(ts, flow, 1 + n * 150, flow % 3);
		break;
	case 7:
		if (flow == 0)
			ts_reset(ts);
		else
			ts->now += 1 + next_u16(r);
		break;
	}
	return true;
}

/* FNV-1a over a 64-bit value, byte by byte from the low end: the same on every host. */
static u64 fold(u64 hash, u64 value)
{
	u32 i;

	for (i = 0; i < 8; i++, value >>= 8)
		hash = (hash ^ (value & 0xff)) * 0x100000001b3ull;
	return hash;
}

static u64 outcome_of(const struct tsched *ts)
{
	u64 hash = fold(0xcbf29ce484222325ull, ts->now);
	u32 f;

	for (f = 0; f < ts->nflows; f++) {
		hash = fold(hash, ts->bytes_out[f]);
		hash = fold(hash, ts->drops[f]);
		hash = fold(hash, ts->seq_out[f]);
	}
	return hash;
}

const char *ts_run_ops(const u8 *data, size_t size, u64 *outcome)
{
	struct reader r = { data, size < OPS_MAX_BYTES ? size : OPS_MAX_BYTES, 0 };
	struct cfc_config cfg;
	struct tsched *ts;
	const char *err = NULL;

	read_config(&r, &cfg, 0);
	ts = ts_new(&cfg, TEST_FLOWS);
	for (u32 f = 0; f < TEST_FLOWS; f++)
		ts_set_hosts(ts, f, f % 5, f % 3);	/* hosts with several flows, and collisions */
	while (!err && apply_op(ts, &r))
		err = ts_check(ts);
	while (!err && ts->s.qlen) {	/* drain: everything queued comes out, sent or dropped */
		u64 until = cfc_throttled_until(&ts->s, ts->now);

		if (ts_dequeue(ts, NULL) >= 0 || !ts->s.qlen)
			continue;
		if (!until)
			err = "packets stranded: dequeue returned nothing with a backlog";
		ts->now = until;
	}
	if (!err)
		err = ts_check(ts);
	if (outcome)
		*outcome = outcome_of(ts);
	ts_free(ts);
	return err;
}
