// SPDX-License-Identifier: MIT
/*
 * The motivating example through the scheduling core: one real-time flow
 * that always has data, then a page load of 9 new flows of 250 KB each, on a
 * 20 Mbit/s link. Prints, every 50 ms, each group's share of the link under
 * Confucius (interval 250 ms) and under fair queueing — the same core with a
 * 1 ms interval, where new flows reach their fair share at once (lambda ->
 * infinity in seed 000 §4.2). CSV on stdout.
 */
#include <stdio.h>

#include "harness.h"

#define MS		1000000ull
#define RATE		20000000ull
#define PKT		1500u
#define WEB_FLOWS	9u
#define WEB_BYTES	(250u * 1000u)
#define WEB_START	(500 * MS)
#define DURATION	(2500 * MS)
#define SAMPLE		(50 * MS)

struct page_load {
	u64 start;		/* absolute ns */
	u32 enqueued[WEB_FLOWS + 1];
};

/* The RT flow (0) always has data; web flows (1..9) send their bytes from WEB_START. */
static void offer(struct tsched *ts, void *ctx)
{
	struct page_load *load = ctx;
	u32 f;

	while (ts->s.flows[ts_bucket(ts, 0)].qlen < 4)
		ts_enqueue(ts, 0, PKT);
	if (ts->now < load->start)
		return;
	for (f = 1; f <= WEB_FLOWS; f++) {
		while (load->enqueued[f] < WEB_BYTES && ts->s.flows[ts_bucket(ts, f)].qlen < 4) {
			ts_enqueue(ts, f, PKT);
			load->enqueued[f] += PKT;
		}
	}
}

struct run {
	struct tsched *ts;
	struct page_load load;
	u64 rt_before, web_before;
	u64 sample_end;		/* absolute, so packet-sized overshoots do not add up */
};

static void start(struct run *r, u64 interval_ns)
{
	struct cfc_config cfg;

	cfc_config_default(&cfg);
	cfg.interval_ns = interval_ns;
	r->ts = ts_new(&cfg, WEB_FLOWS + 1);
	r->load = (struct page_load){ .start = r->ts->now + WEB_START };
	r->rt_before = 0;
	r->web_before = 0;
	r->sample_end = r->ts->now;
}

/* Serve one sample period; returns the RT and web shares of what was sent. */
static void sample(struct run *r, double *rt, double *web)
{
	u64 rt_bytes, web_bytes = 0, total;
	u32 f;

	r->sample_end += SAMPLE;
	ts_run_link(r->ts, RATE, r->sample_end - r->ts->now, offer, &r->load);
	rt_bytes = r->ts->bytes_out[0];
	for (f = 1; f <= WEB_FLOWS; f++)
		web_bytes += r->ts->bytes_out[f];
	total = (rt_bytes - r->rt_before) + (web_bytes - r->web_before);
	*rt = total ? (double)(rt_bytes - r->rt_before) / (double)total : 0;
	*web = total ? (double)(web_bytes - r->web_before) / (double)total : 0;
	r->rt_before = rt_bytes;
	r->web_before = web_bytes;
}

int main(void)
{
	struct run confucius, fq;
	u64 t;

	start(&confucius, 250 * MS);
	start(&fq, 1 * MS);
	printf("time_ms,confucius_rt,confucius_web,fq_rt,fq_web\n");
	for (t = SAMPLE; t <= DURATION; t += SAMPLE) {
		double c_rt, c_web, f_rt, f_web;

		sample(&confucius, &c_rt, &c_web);
		sample(&fq, &f_rt, &f_web);
		printf("%lld,%.4f,%.4f,%.4f,%.4f\n", ((long long)t - (long long)WEB_START) / (long long)MS,
		       c_rt, c_web, f_rt, f_web);
	}
	ts_free(confucius.ts);
	ts_free(fq.ts);
	return 0;
}
