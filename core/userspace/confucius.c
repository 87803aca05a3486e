// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The scheduling core compiled for the userspace hosts (the tests, the fuzzer,
 * the benchmark, the simulations): the kernel's own source, built against the
 * small copy of the kernel headers it uses in core/userspace/include, with
 * the external linkage those hosts need (confucius_api.h).
 */
#define CFC_FN
#include "confucius_api.h"
#include "confucius_impl.h"

/*
 * Asked by the tests and the simulator only; the qdisc reads a flow's queue
 * in cfc_flow_stats().
 */
int cfc_flow_class(const struct cfc_sched *s, u32 bucket)
{
	const struct cfc_flow *f = &s->flows[bucket];

	if (f->state == CFC_FLOW_FREE)
		return -1;
	return f->state == CFC_FLOW_NEW ? 0 : f->queue;
}
