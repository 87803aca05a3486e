/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The core's API for the userspace hosts, which call it from several files:
 * core/userspace/confucius.c compiles confucius_impl.h with external linkage
 * (CFC_FN empty), and these are its declarations. Each function is described
 * where it is defined, in confucius_impl.h; the compiler checks the two agree,
 * as confucius.c includes both.
 */
#ifndef CONFUCIUS_API_H
#define CONFUCIUS_API_H

#include "confucius.h"

void cfc_config_default(struct cfc_config *cfg);
const char *cfc_config_check(const struct cfc_config *cfg);
u64 cfc_table_bytes(u32 flows);
u64 cfc_hosts_bytes(u32 flows);
bool cfc_needs_heaps(const struct cfc_config *cfg);
u64 cfc_heaps_bytes(u32 flows);
void cfc_set_heaps(struct cfc_sched *s, void *heaps);
void cfc_init(struct cfc_sched *s, void *table, void *hosts, void *heaps, const struct cfc_config *cfg,
	      u64 now);
void cfc_change(struct cfc_sched *s, const struct cfc_config *cfg, u64 now,
		struct cfc_pkt **dropped);
enum cfc_verdict cfc_enqueue(struct cfc_sched *s, struct cfc_pkt *pkt, const struct cfc_key *key,
			     u32 cls, u64 now, struct cfc_pkt **dropped);
void cfc_advance(struct cfc_sched *s, u64 now);
struct cfc_pkt *cfc_dequeue(struct cfc_sched *s, u64 now, struct cfc_pkt **dropped);
u64 cfc_throttled_until(const struct cfc_sched *s, u64 now);
struct cfc_pkt *cfc_reset(struct cfc_sched *s, u64 now);
void cfc_stats(const struct cfc_sched *s, struct cfc_stats *st);
u32 cfc_bucket(const struct cfc_sched *s, u32 hash);
u32 cfc_flow_weight(const struct cfc_sched *s, u32 bucket);
bool cfc_flow_stats(const struct cfc_sched *s, u32 bucket, u64 now, struct cfc_flow_stats *st);

/* Class (1..K) of an old flow, 0 for a new flow, -1 for a free bucket. */
int cfc_flow_class(const struct cfc_sched *s, u32 bucket);

#endif /* CONFUCIUS_API_H */
