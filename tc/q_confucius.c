// SPDX-License-Identifier: GPL-2.0-only
/*
 * q_confucius.c: the tc front end of the Confucius queue discipline, a plugin
 * that tc loads from $TC_LIB_DIR/q_confucius.so.
 *
 * Parsing and printing use tc's own helpers, resolved in the running tc binary
 * (it is linked with -rdynamic), so units read and print as for every other
 * qdisc. The ranges and defaults are the kernel's, so tc rejects a bad value
 * before anything is sent, naming the option and its range.
 *
 * Netlink units: bandwidth u64 bytes/s, the times u32 us, hysteresis u32
 * percent, weights one u32 per class, ecn and nat u32 0 or 1. JSON output gives
 * these raw numbers (bandwidth in bytes/s, as cake and htb do; ecn and nat
 * booleans, as fq_codel's ecn); text output gives human units.
 */
#include <stdbool.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utils.h"
#include "tc_util.h"

#include <linux/pkt_sched_confucius.h>

#define EXPORTED __attribute__((visibility("default")))

/*
 * iproute2 6.9 made the callbacks take a const struct qdisc_util *. tc/build.sh
 * reads which from the tree's tc_util.h and defines this; inside iproute2's own
 * tree (the in-tree patch, the newest release) it is const.
 */
#ifndef QDISC_UTIL_CONST
#define QDISC_UTIL_CONST const
#endif

#define NS_PER_US 1000u
#define US_PER_MS 1000u
#define US_PER_S 1000000u

/*
 * The kernel's bounds and defaults (its scheduling core's, cfc_config_default()),
 * in netlink units.
 */
#define BANDWIDTH_MIN	1000ull			/* bytes/s: 8 kbit/s */
#define BANDWIDTH_MAX	BIT(44)			/* bytes/s: about 140.7 Tbit/s */
#define LIMIT_MIN	1u
#define LIMIT_MAX	BIT(20)
#define MEMLIMIT_MIN	(64u << 10)
#define MEMLIMIT_MAX	BIT(31)
#define FLOWS_MIN	1u
#define FLOWS_MAX	32768u			/* flow classes are 0x8000 + bucket */
#define QUANTUM_MIN	64u
#define QUANTUM_MAX	65536u
#define PERIOD_MIN_US	(1 * US_PER_MS)
#define PERIOD_MAX_US	(60 * US_PER_S)
#define HYSTERESIS_MAX	50u			/* percent */
#define AQM_TARGET_MIN_US	100u			/* 0 = no AQM */
#define WEIGHT_ONE	65536u			/* the statistics' weights are in 1/65536 */

#define DEFAULT_LIMIT		10240u
#define DEFAULT_MEMLIMIT	(32u << 20)
#define DEFAULT_FLOWS		1024u
#define DEFAULT_QUANTUM		1514u
#define DEFAULT_INTERVAL_US	(250 * US_PER_MS)
#define DEFAULT_CLASSES		3u
#define DEFAULT_HYSTERESIS	10u
#define DEFAULT_RECLASSIFY_US	(100 * US_PER_MS)
#define DEFAULT_TARGET_US	(40 * US_PER_MS)
#define DEFAULT_MAXHOLD_US	(2 * US_PER_S)
#define DEFAULT_MAXDELAY_US	(500 * US_PER_MS)
#define DEFAULT_AQM_TARGET_US	(10 * US_PER_MS)
#define DEFAULT_AQM_INTERVAL_US	(100 * US_PER_MS)
#define DEFAULT_AQM_SETTLE_US	(2 * US_PER_S)
#define DEFAULT_ECN		1u
#define DEFAULT_ISOLATE		TC_CONFUCIUS_ISOLATE_TRIPLE
#define DEFAULT_NAT		0u

#if __has_include("confucius.h")
/*
 * Built as the project's plugin, beside the core: the bounds above are checked
 * against the core's (core/confucius.h), written out so that this file builds
 * inside iproute2's tree too, where the core is not. The tc cases hold help's
 * defaults and those the kernel applies to the same values.
 */
#include "confucius.h"

_Static_assert(BANDWIDTH_MIN * 8 == CFC_BANDWIDTH_MIN && BANDWIDTH_MAX * 8 == CFC_BANDWIDTH_MAX &&
	       LIMIT_MIN == CFC_LIMIT_MIN && LIMIT_MAX == CFC_LIMIT_MAX &&
	       MEMLIMIT_MIN == CFC_MEMLIMIT_MIN && MEMLIMIT_MAX == CFC_MEMLIMIT_MAX &&
	       FLOWS_MIN == CFC_FLOWS_MIN && FLOWS_MAX == CFC_FLOWS_MAX &&
	       QUANTUM_MIN == CFC_QUANTUM_MIN && QUANTUM_MAX == CFC_QUANTUM_MAX &&
	       PERIOD_MIN_US * NS_PER_US == CFC_PERIOD_MIN_NS &&
	       PERIOD_MAX_US * (__u64)NS_PER_US == CFC_PERIOD_MAX_NS &&
	       PERIOD_MAX_US * (__u64)NS_PER_US == CFC_MAXHOLD_MAX_NS &&
	       PERIOD_MAX_US * (__u64)NS_PER_US == CFC_MAXDELAY_MAX_NS &&
	       AQM_TARGET_MIN_US * NS_PER_US == CFC_AQM_TARGET_MIN_NS &&
	       HYSTERESIS_MAX == CFC_HYSTERESIS_MAX * 100 / CFC_W_ONE &&
	       WEIGHT_ONE == CFC_W_ONE, "bounds differ from the core's");
_Static_assert(DEFAULT_LIMIT == CFC_DEFAULT_LIMIT && DEFAULT_MEMLIMIT == CFC_DEFAULT_MEMLIMIT &&
	       DEFAULT_FLOWS == CFC_DEFAULT_FLOWS && DEFAULT_QUANTUM == CFC_DEFAULT_QUANTUM &&
	       DEFAULT_CLASSES == CFC_DEFAULT_CLASSES &&
	       /* rounded to the nearest percent, as the kernel's dump does */
	       DEFAULT_HYSTERESIS == (CFC_DEFAULT_HYSTERESIS * 100 + CFC_W_ONE / 2) / CFC_W_ONE &&
	       DEFAULT_INTERVAL_US * NS_PER_US == CFC_DEFAULT_INTERVAL_NS &&
	       DEFAULT_RECLASSIFY_US * NS_PER_US == CFC_DEFAULT_RECLASSIFY_NS &&
	       DEFAULT_TARGET_US * NS_PER_US == CFC_DEFAULT_TARGET_NS &&
	       DEFAULT_MAXHOLD_US * (__u64)NS_PER_US == CFC_DEFAULT_MAXHOLD_NS &&
	       DEFAULT_MAXDELAY_US * NS_PER_US == CFC_DEFAULT_MAXDELAY_NS &&
	       DEFAULT_AQM_TARGET_US * NS_PER_US == CFC_DEFAULT_AQM_TARGET_NS &&
	       DEFAULT_AQM_INTERVAL_US * NS_PER_US == CFC_DEFAULT_AQM_INTERVAL_NS &&
	       DEFAULT_AQM_SETTLE_US * (__u64)NS_PER_US == CFC_DEFAULT_AQM_SETTLE_NS &&
	       DEFAULT_ECN == CFC_DEFAULT_ECN &&
	       (int)DEFAULT_ISOLATE == (int)CFC_DEFAULT_ISOLATE, "defaults differ from the core's");
_Static_assert(TC_CONFUCIUS_MAX_CLASSES == CFC_MAX_CLASSES, "class count differs from the core's");
_Static_assert((int)TC_CONFUCIUS_MODE_FLOW == (int)CFC_MODE_FLOW &&
	       (int)TC_CONFUCIUS_MODE_CLASS == (int)CFC_MODE_CLASS &&
	       (int)TC_CONFUCIUS_MODE_EXTERNAL == (int)CFC_MODE_EXTERNAL &&
	       CFC_MODE_COUNT == 3, "mode numbers differ from the core's");
_Static_assert((int)TC_CONFUCIUS_PACE_FIXED == (int)CFC_PACE_FIXED &&
	       (int)TC_CONFUCIUS_PACE_ADAPTIVE == (int)CFC_PACE_ADAPTIVE &&
	       CFC_PACE_COUNT == 2, "pace numbers differ from the core's");
_Static_assert((int)TC_CONFUCIUS_ISOLATE_FLOWS == (int)CFC_ISOLATE_FLOWS &&
	       (int)TC_CONFUCIUS_ISOLATE_DUAL_SRCHOST == (int)CFC_ISOLATE_SRCHOST &&
	       (int)TC_CONFUCIUS_ISOLATE_DUAL_DSTHOST == (int)CFC_ISOLATE_DSTHOST &&
	       (int)TC_CONFUCIUS_ISOLATE_TRIPLE == (int)CFC_ISOLATE_HOSTS &&
	       CFC_ISOLATE_COUNT == 4, "isolate numbers differ from the core's");
#endif

static const char *const mode_names[] = {
	[TC_CONFUCIUS_MODE_FLOW] = "flow",
	[TC_CONFUCIUS_MODE_CLASS] = "class",
	[TC_CONFUCIUS_MODE_EXTERNAL] = "external",
};

static const char *const pace_names[] = {
	[TC_CONFUCIUS_PACE_FIXED] = "fixed",
	[TC_CONFUCIUS_PACE_ADAPTIVE] = "adaptive",
};

/* cake's words for the same modes */
static const char *const isolate_names[] = {
	[TC_CONFUCIUS_ISOLATE_FLOWS] = "flows",
	[TC_CONFUCIUS_ISOLATE_DUAL_SRCHOST] = "dual-srchost",
	[TC_CONFUCIUS_ISOLATE_DUAL_DSTHOST] = "dual-dsthost",
	[TC_CONFUCIUS_ISOLATE_TRIPLE] = "triple-isolate",
};

/* The words of the flags ecn and nat, index = value; a flag is named by the word of 1. */
static const char *const ecn_words[] = { "noecn", "ecn" };
static const char *const nat_words[] = { "nonat", "nat" };

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

enum value_kind {
	KIND_RATE,	/* bytes/s, u64; "unlimited" or 0 = unshaped */
	KIND_COUNT,	/* plain whole number */
	KIND_SIZE,	/* bytes, with tc's size units */
	KIND_TIME,	/* us, with tc's time units */
	KIND_BOUND,	/* a time as KIND_TIME, or 0 = what `what` says */
	KIND_PERCENT,	/* whole percent, "10" or "10%" */
	KIND_NAME,	/* one of `names`, sent as its index */
	KIND_WEIGHTS,	/* W1:W2:..., one u32 per class */
	KIND_FLAG,	/* one of two words without a value (`names`), sent as 0 or 1 */
};

struct option_spec {
	const char *name;
	int attr;
	enum value_kind kind;
	__u64 min, max;		/* in netlink units */
	const char *what;	/* for counts: what is counted; for bounds: what 0 is */
	const char *example;
	const char *const *names; /* for names and flags: index = value */
	/* print_uint format of counts, percents and sizes shown in plain bytes */
	const char *shown;
};

static const struct option_spec options[] = {
	{ "bandwidth", TCA_CONFUCIUS_BANDWIDTH64, KIND_RATE,
	  BANDWIDTH_MIN, BANDWIDTH_MAX, NULL, "95mbit", NULL, NULL },
	{ "limit", TCA_CONFUCIUS_LIMIT, KIND_COUNT,
	  LIMIT_MIN, LIMIT_MAX, "packets", "10240", NULL, "limit %up " },
	{ "memlimit", TCA_CONFUCIUS_MEMLIMIT, KIND_SIZE,
	  MEMLIMIT_MIN, MEMLIMIT_MAX, NULL, "32mb", NULL, NULL },
	{ "flows", TCA_CONFUCIUS_FLOWS, KIND_COUNT,
	  FLOWS_MIN, FLOWS_MAX, "flow buckets", "1024", NULL, "flows %u " },
	{ "quantum", TCA_CONFUCIUS_QUANTUM, KIND_SIZE,
	  QUANTUM_MIN, QUANTUM_MAX, NULL, "1514", NULL, "quantum %u " },
	{ "interval", TCA_CONFUCIUS_INTERVAL, KIND_TIME,
	  PERIOD_MIN_US, PERIOD_MAX_US, NULL, "250ms", NULL, NULL },
	{ "mode", TCA_CONFUCIUS_MODE, KIND_NAME,
	  0, COUNT_OF(mode_names) - 1, NULL, "class", mode_names, NULL },
	{ "classes", TCA_CONFUCIUS_CLASSES, KIND_COUNT,
	  1, TC_CONFUCIUS_MAX_CLASSES, "classes", "3", NULL, "classes %u " },
	{ "hysteresis", TCA_CONFUCIUS_HYSTERESIS, KIND_PERCENT,
	  0, HYSTERESIS_MAX, NULL, "10%", NULL, "hysteresis %u%% " },
	{ "reclassify", TCA_CONFUCIUS_RECLASSIFY, KIND_TIME,
	  PERIOD_MIN_US, PERIOD_MAX_US, NULL, "100ms", NULL, NULL },
	{ "weights", TCA_CONFUCIUS_CLASS_WEIGHTS, KIND_WEIGHTS,
	  0, UINT32_MAX, NULL, "4:2:1", NULL, NULL },
	{ "pace", TCA_CONFUCIUS_PACE, KIND_NAME,
	  0, COUNT_OF(pace_names) - 1, NULL, "fixed", pace_names, NULL },
	{ "target", TCA_CONFUCIUS_TARGET, KIND_TIME,
	  PERIOD_MIN_US, PERIOD_MAX_US, NULL, "20ms", NULL, NULL },
	{ "maxhold", TCA_CONFUCIUS_MAXHOLD, KIND_TIME,
	  0, PERIOD_MAX_US, NULL, "1s", NULL, NULL },
	{ "maxdelay", TCA_CONFUCIUS_MAXDELAY, KIND_BOUND,
	  PERIOD_MIN_US, PERIOD_MAX_US, "no bound", "300ms", NULL, NULL },
	{ "aqm_target", TCA_CONFUCIUS_AQM_TARGET, KIND_BOUND,
	  AQM_TARGET_MIN_US, PERIOD_MAX_US, "no AQM", "10ms", NULL, NULL },
	{ "aqm_interval", TCA_CONFUCIUS_AQM_INTERVAL, KIND_TIME,
	  PERIOD_MIN_US, PERIOD_MAX_US, NULL, "300ms", NULL, NULL },
	{ "aqm_settle", TCA_CONFUCIUS_AQM_SETTLE, KIND_TIME,
	  0, PERIOD_MAX_US, NULL, "1s", NULL, NULL },
	{ "ecn", TCA_CONFUCIUS_ECN, KIND_FLAG,
	  0, 1, NULL, "noecn", ecn_words, NULL },
	{ "isolate", TCA_CONFUCIUS_ISOLATE, KIND_NAME,
	  0, COUNT_OF(isolate_names) - 1, NULL, "dual-dsthost", isolate_names, NULL },
	{ "nat", TCA_CONFUCIUS_NAT, KIND_FLAG,
	  0, 1, NULL, "nat", nat_words, NULL },
};

#define NOPTIONS COUNT_OF(options)

/* What the user gave; only these attributes are sent. */
struct request {
	bool given[NOPTIONS];
	__u64 value[NOPTIONS];
	__u32 weights[TC_CONFUCIUS_MAX_CLASSES];
	unsigned int nweights;
};

/* ------------------------------------------------------------- messages */

/* A rate in bytes/s as tc writes it in bits, e.g. "8kbit", "140.7Tbit". */
static void sprint_bits(__u64 bytes, char *buf, size_t len)
{
	static const char *const prefixes[] = { "", "k", "M", "G", "T" };
	double bits = (double)bytes * 8;
	unsigned int i = 0;

	while (bits >= 1000 && i < ARRAY_SIZE(prefixes) - 1) {
		bits /= 1000;
		i++;
	}
	snprintf(buf, len, "%.4g%sbit", bits, prefixes[i]);
}

/* "flow, class or external" */
static void describe_names(const struct option_spec *spec, char *buf, size_t len)
{
	size_t used = 0;
	__u64 i;

	buf[0] = '\0';
	for (i = 0; i <= spec->max && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%s",
				 i == 0 ? "" : i == spec->max ? " or " : ", ", spec->names[i]);
}

/* What a valid value of `spec` looks like, e.g. "a time from 1ms to 60s (e.g. 250ms)". */
static void describe_valid(const struct option_spec *spec, char *buf, size_t len)
{
	char lo[SPRINT_BSIZE], hi[SPRINT_BSIZE], what[256];

	switch (spec->kind) {
	case KIND_RATE:
		sprint_bits(spec->min, lo, sizeof(lo));
		sprint_bits(spec->max, hi, sizeof(hi));
		snprintf(what, sizeof(what),
			 "\"unlimited\" (or 0) or a rate from %s to %s", lo, hi);
		break;
	case KIND_COUNT:
		snprintf(what, sizeof(what), "a whole number of %s from %llu to %llu", spec->what,
			 (unsigned long long)spec->min, (unsigned long long)spec->max);
		break;
	case KIND_SIZE:
		snprintf(what, sizeof(what), "a size from %s to %s (%llu to %llu bytes)",
			 sprint_size(spec->min, lo), sprint_size(spec->max, hi),
			 (unsigned long long)spec->min, (unsigned long long)spec->max);
		break;
	case KIND_TIME:
		snprintf(what, sizeof(what), "a time from %s to %s",
			 sprint_time(spec->min, lo), sprint_time(spec->max, hi));
		break;
	case KIND_BOUND:
		snprintf(what, sizeof(what), "0 (%s) or a time from %s to %s", spec->what,
			 sprint_time(spec->min, lo), sprint_time(spec->max, hi));
		break;
	case KIND_PERCENT:
		snprintf(what, sizeof(what), "a whole percentage from %llu to %llu",
			 (unsigned long long)spec->min, (unsigned long long)spec->max);
		break;
	case KIND_NAME:
		describe_names(spec, what, sizeof(what));
		break;
	case KIND_WEIGHTS:
		snprintf(what, sizeof(what), "up to %u whole numbers (0 to %llu) joined by ':'",
			 TC_CONFUCIUS_MAX_CLASSES, (unsigned long long)spec->max);
		break;
	case KIND_FLAG:
		snprintf(what, sizeof(what), "%s or %s, without a value", spec->names[1],
			 spec->names[0]);
		break;
	}
	snprintf(buf, len, "%s (e.g. %s)", what, spec->example);
}

static int reject(const struct option_spec *spec, const char *arg)
{
	char valid[384];

	describe_valid(spec, valid, sizeof(valid));
	fprintf(stderr, "confucius: invalid %s \"%s\": expected %s\n", spec->name, arg, valid);
	return -1;
}

static void explain_defaults(void)
{
	char b1[SPRINT_BSIZE], b2[SPRINT_BSIZE], b3[SPRINT_BSIZE], b4[SPRINT_BSIZE];
	char b5[SPRINT_BSIZE], b6[SPRINT_BSIZE], b7[SPRINT_BSIZE], b8[SPRINT_BSIZE];
	char b9[SPRINT_BSIZE];

	fprintf(stderr,
		"Defaults: bandwidth unlimited limit %up memlimit %s flows %u quantum %u\n"
		"          interval %s mode %s classes %u hysteresis %u%% reclassify %s\n"
		"          pace %s target %s maxhold %s maxdelay %s\n"
		"          aqm_target %s aqm_interval %s aqm_settle %s %s\n"
		"          isolate %s %s\n"
		"          no weights (classes served in proportion to their active flows)\n",
		DEFAULT_LIMIT, sprint_size(DEFAULT_MEMLIMIT, b1), DEFAULT_FLOWS, DEFAULT_QUANTUM,
		sprint_time(DEFAULT_INTERVAL_US, b2), mode_names[TC_CONFUCIUS_MODE_FLOW],
		DEFAULT_CLASSES, DEFAULT_HYSTERESIS, sprint_time(DEFAULT_RECLASSIFY_US, b3),
		pace_names[TC_CONFUCIUS_PACE_ADAPTIVE], sprint_time(DEFAULT_TARGET_US, b4),
		sprint_time(DEFAULT_MAXHOLD_US, b5), sprint_time(DEFAULT_MAXDELAY_US, b6),
		sprint_time(DEFAULT_AQM_TARGET_US, b7), sprint_time(DEFAULT_AQM_INTERVAL_US, b8),
		sprint_time(DEFAULT_AQM_SETTLE_US, b9), ecn_words[DEFAULT_ECN],
		isolate_names[DEFAULT_ISOLATE], nat_words[DEFAULT_NAT]);
}

/* The plugin names its release (VERSION); built into tc, tc's own version is the one. */
#ifdef CONFUCIUS_VERSION
#define ORIGIN "confucius " CONFUCIUS_VERSION " (q_confucius.so, for sch_confucius)\n"
#else
#define ORIGIN ""
#endif

static void explain(void)
{
	char valid[384];
	unsigned int i;

	fprintf(stderr,
		"Usage: ... confucius [ bandwidth RATE | unlimited ] [ limit PACKETS ]\n"
		"                     [ memlimit BYTES ] [ flows NUMBER ] [ quantum BYTES ]\n"
		"                     [ interval TIME ] [ mode flow | class | external ]\n"
		"                     [ classes NUMBER ] [ hysteresis PERCENT ]\n"
		"                     [ reclassify TIME ] [ weights W1:W2:... ]\n"
		"                     [ pace fixed | adaptive ] [ target TIME ] [ maxhold TIME ]\n"
		"                     [ maxdelay TIME ] [ aqm_target TIME ] [ aqm_interval TIME ]\n"
		"                     [ aqm_settle TIME ] [ ecn | noecn ]\n"
		"                     [ isolate flows | dual-srchost | dual-dsthost |\n"
		"                               triple-isolate ] [ nat | nonat ]\n");
	explain_defaults();
	fprintf(stderr, "Values:\n");
	for (i = 0; i < NOPTIONS; i++) {
		describe_valid(&options[i], valid, sizeof(valid));
		fprintf(stderr, "  %-12s %s\n", options[i].name, valid);
	}
	fprintf(stderr,
		"flows is fixed when the qdisc is created. weights apply in mode external,\n"
		"one per class; a weight of 0 serves its class by its active flows.\n"
		"pace adaptive: while an old flow's queue stands above target, a reweight tick\n"
		"halves the new flows' weight instead of doubling it, for at most maxhold per\n"
		"burst of new flows; pace fixed is the papers' schedule. An old flow's packets\n"
		"that waited longer than maxdelay are dropped (0: no bound, as in the papers).\n"
		"Between bursts of new flows, a bulk flow's own queue is kept near aqm_target\n"
		"by CoDel's control law once it has stood above it for aqm_interval, as\n"
		"fq_codel does; with ecn, ECN-capable packets are marked instead of dropped.\n"
		"The AQM rests while any flow is new (the old flows are then giving up\n"
		"bandwidth step by step, and pace adaptive watches their queues against\n"
		"target instead) and for aqm_settle after the last one: a real-time flow\n"
		"whose share just fell needs that long to back off on delay. Mode flow\n"
		"only: in mode class the queue a flow builds sorts it into its class.\n"
		"aqm_target 0: no AQM.\n"
		"isolate: which hosts share the link fairly before their old flows do, in\n"
		"cake's words: dual-srchost among sources, dual-dsthost among destinations,\n"
		"triple-isolate among both, flows among flows alone. Each old flow's quantum\n"
		"is shared among its host's backlogged old flows; new flows are not divided.\n"
		"nat: a host is the address inside the router's NAT, found through conntrack\n"
		"(on egress after NAT, and on an IFB fed by the ingress before it).\n"
		"A time without a unit is in microseconds, a rate without one in bit/s.\n"
		ORIGIN);
}

/* ------------------------------------------------------------- parsing */

/*
 * tc's number parsers read "-1" as a huge unsigned value or convert a negative
 * double to an unsigned type: refuse a minus sign before they see it.
 */
static bool is_negative(const char *arg)
{
	return arg[strspn(arg, " \t")] == '-';
}

/* A time in us; without a unit it is in us, as everywhere in tc. */
static int read_time_us(const char *arg, __u64 *us)
{
	size_t len = strlen(arg);
	__s64 ns;

	if (is_negative(arg) || get_time64(&ns, arg) || ns < 0)
		return -1;
	if (len && ((arg[len - 1] >= '0' && arg[len - 1] <= '9') || arg[len - 1] == '.'))
		ns *= NS_PER_US;	/* get_time64 read a bare number as ns */
	*us = (__u64)ns / NS_PER_US;
	return 0;
}

/*
 * bytes/s; 0 (unshaped) only when asked for by name: get_rate64 turns an
 * overflowing or infinite rate into 0 as well.
 */
static int read_rate(const char *arg, __u64 *bytes)
{
	if (strcmp(arg, "unlimited") == 0 || strcmp(arg, "0") == 0) {
		*bytes = 0;
		return 0;
	}
	return is_negative(arg) || get_rate64(bytes, arg) || *bytes == 0 ? -1 : 0;
}

static int read_count(const char *arg, __u64 *count)
{
	__u32 v;

	if (is_negative(arg) || get_u32(&v, arg, 10))
		return -1;
	*count = v;
	return 0;
}

static int read_size(const char *arg, __u64 *bytes)
{
	unsigned int v;

	if (is_negative(arg) || get_size(&v, arg))
		return -1;
	*bytes = v;
	return 0;
}

static int read_percent(const char *arg, __u64 *percent)
{
	char digits[32];
	size_t len = strlen(arg);

	if (len == 0 || len >= sizeof(digits))
		return -1;
	memcpy(digits, arg, len + 1);
	if (digits[len - 1] == '%')
		digits[len - 1] = '\0';
	return read_count(digits, percent);
}

static int read_name(const struct option_spec *spec, const char *arg, __u64 *v)
{
	__u64 i;

	for (i = 0; i <= spec->max; i++) {
		if (strcmp(arg, spec->names[i]) == 0) {
			*v = i;
			return 0;
		}
	}
	return -1;
}

/* W1:W2:..., each a u32; every field must be there ("1::2" is no "1:2"). */
static int read_weights(const char *arg, struct request *req)
{
	const char *field = arg;
	char digits[16];
	__u64 w;

	req->nweights = 0;
	for (;;) {
		size_t len = strcspn(field, ":");

		if (len == 0 || len >= sizeof(digits) || req->nweights == TC_CONFUCIUS_MAX_CLASSES)
			return -1;
		memcpy(digits, field, len);
		digits[len] = '\0';
		if (read_count(digits, &w))
			return -1;
		req->weights[req->nweights++] = (__u32)w;
		if (field[len] == '\0')
			return 0;
		field += len + 1;
	}
}

static int read_value(const struct option_spec *spec, const char *arg, struct request *req,
		      __u64 *v)
{
	switch (spec->kind) {
	case KIND_RATE:
		return read_rate(arg, v);
	case KIND_COUNT:
		return read_count(arg, v);
	case KIND_SIZE:
		return read_size(arg, v);
	case KIND_TIME:
	case KIND_BOUND:
		return read_time_us(arg, v);
	case KIND_PERCENT:
		return read_percent(arg, v);
	case KIND_NAME:
		return read_name(spec, arg, v);
	case KIND_WEIGHTS:
		*v = 0;
		return read_weights(arg, req);
	case KIND_FLAG:
		break;	/* no value follows a flag: its word is read as one */
	}
	return -1;
}

static bool in_range(const struct option_spec *spec, __u64 v)
{
	/* each weight is a u32; a rate of 0 is unshaped, a bound of 0 none */
	if (spec->kind == KIND_WEIGHTS ||
	    ((spec->kind == KIND_RATE || spec->kind == KIND_BOUND) && v == 0))
		return true;
	return v >= spec->min && v <= spec->max;
}

/* Read the value of option `i` into req, range checked; -1 after saying why. */
static int parse_value(unsigned int i, const char *arg, struct request *req)
{
	const struct option_spec *spec = &options[i];
	__u64 v;

	if (read_value(spec, arg, req, &v) || !in_range(spec, v))
		return reject(spec, arg);
	req->value[i] = v;
	return 0;
}

/* The option a word names: its name, or either word of a flag. */
static int find_option(const char *word)
{
	unsigned int i;
	__u64 v;

	for (i = 0; i < NOPTIONS; i++) {
		if (options[i].kind == KIND_FLAG ? read_name(&options[i], word, &v) == 0 :
		    strcmp(word, options[i].name) == 0)
			return (int)i;
	}
	return -1;
}

/* A word that names no option; after a flag, it was most likely meant as its value. */
static int refuse_unknown(const char *word, const char *after_flag)
{
	if (after_flag)
		fprintf(stderr, "confucius: unknown option \"%s\" (%s takes no value)\n", word,
			after_flag);
	else
		fprintf(stderr, "confucius: unknown option \"%s\"\n", word);
	explain();
	return -1;
}

static int refuse_twice(const struct option_spec *spec)
{
	if (spec->kind == KIND_FLAG)
		fprintf(stderr, "confucius: %s or %s given twice\n", spec->names[1],
			spec->names[0]);
	else
		fprintf(stderr, "confucius: %s given twice\n", spec->name);
	return -1;
}

/* Checks that need several options of one command. */
static int check_request(const struct request *req)
{
	int classes = find_option("classes"), weights = find_option("weights");

	if (req->given[classes] && req->given[weights] && req->nweights > req->value[classes]) {
		fprintf(stderr, "confucius: %u weights given for %llu classes\n",
			req->nweights, (unsigned long long)req->value[classes]);
		return -1;
	}
	return 0;
}

/* One TCA_CONFUCIUS_CLASS_WEIGHT per class, in order, nested as ETS nests its quanta. */
static void add_weights(const struct request *req, struct nlmsghdr *n, int type)
{
	struct rtattr *nest = addattr_nest(n, 1024, type | NLA_F_NESTED);
	unsigned int i;

	for (i = 0; i < req->nweights; i++)
		addattr32(n, 1024, TCA_CONFUCIUS_CLASS_WEIGHT, req->weights[i]);
	addattr_nest_end(n, nest);
}

static void add_request(const struct request *req, struct nlmsghdr *n)
{
	struct rtattr *nest = addattr_nest(n, 1024, TCA_OPTIONS | NLA_F_NESTED);
	unsigned int i;

	for (i = 0; i < NOPTIONS; i++) {
		if (!req->given[i])
			continue;
		if (options[i].kind == KIND_RATE)
			addattr64(n, 1024, options[i].attr, req->value[i]);
		else if (options[i].kind == KIND_WEIGHTS)
			add_weights(req, n, options[i].attr);
		else
			addattr32(n, 1024, options[i].attr, (__u32)req->value[i]);
	}
	addattr_nest_end(n, nest);
}

static int confucius_parse_opt(QDISC_UTIL_CONST struct qdisc_util *qu, int argc, char **argv,
			       struct nlmsghdr *n, const char *dev)
{
	struct request req = { 0 };
	const char *flag = NULL;	/* the word before, when it was a flag */
	int i;

	for (; argc > 0; argc--, argv++) {
		if (strcmp(*argv, "help") == 0) {
			explain();
			return -1;
		}
		i = find_option(*argv);
		if (i < 0)
			return refuse_unknown(*argv, flag);
		if (req.given[i])
			return refuse_twice(&options[i]);
		req.given[i] = true;
		flag = options[i].kind == KIND_FLAG ? *argv : NULL;
		if (flag) {
			read_name(&options[i], *argv, &req.value[i]);
			continue;
		}
		if (argc < 2) {
			fprintf(stderr, "confucius: %s needs a value\n", options[i].name);
			return -1;
		}
		argc--, argv++;
		if (parse_value(i, *argv, &req))
			return -1;
	}
	if (check_request(&req))
		return -1;
	add_request(&req, n);
	return 0;
}

/* ------------------------------------------------------------- printing */

static bool attr_u32(struct rtattr *attr, __u32 *v)
{
	if (!attr || RTA_PAYLOAD(attr) < sizeof(__u32))
		return false;
	*v = rta_getattr_u32(attr);
	return true;
}

/* Text in tc's time units, JSON in raw us. */
static void print_time_us(const char *key, __u32 us)
{
	char fmt[32], b[SPRINT_BSIZE];

	snprintf(fmt, sizeof(fmt), "%s %%s ", key);
	print_string(PRINT_FP, NULL, fmt, sprint_time(us, b));
	print_uint(PRINT_JSON, key, NULL, us);
}

static void print_bandwidth(struct rtattr *attr)
{
	__u64 bytes;

	if (!attr || RTA_PAYLOAD(attr) < sizeof(__u64))
		return;
	bytes = rta_getattr_u64(attr);
	if (bytes) {
		tc_print_rate(PRINT_ANY, "bandwidth", "bandwidth %s ", bytes);
	} else {
		print_string(PRINT_FP, NULL, "bandwidth %s ", "unlimited");
		print_u64(PRINT_JSON, "bandwidth", NULL, 0);
	}
}

/* An option of kind name, by its name; a value this tc does not know as "unknown(N)". */
static void print_name(const struct option_spec *spec, __u32 v)
{
	char fmt[32], unknown[32];

	snprintf(fmt, sizeof(fmt), "%s %%s ", spec->name);
	if (v <= spec->max) {
		print_string(PRINT_ANY, spec->name, fmt, spec->names[v]);
		return;
	}
	snprintf(unknown, sizeof(unknown), "unknown(%u)", v);
	print_string(PRINT_ANY, spec->name, fmt, unknown);
}

/* "weights 4:2:1", up to the last class that has one; nothing when none is set. */
static void print_weights(struct rtattr *attr)
{
	__u32 w[TC_CONFUCIUS_MAX_CLASSES] = { 0 };
	unsigned int i, n = 0;
	struct rtattr *weight;
	int rem;

	if (!attr)
		return;
	for (weight = RTA_DATA(attr), rem = RTA_PAYLOAD(attr); RTA_OK(weight, rem);
	     weight = RTA_NEXT(weight, rem)) {
		if (weight->rta_type == TCA_CONFUCIUS_CLASS_WEIGHT &&
		    n < TC_CONFUCIUS_MAX_CLASSES && RTA_PAYLOAD(weight) == sizeof(__u32))
			w[n++] = rta_getattr_u32(weight);
	}
	for (; n > 0 && w[n - 1] == 0; n--)
		;
	if (n == 0)
		return;
	print_string(PRINT_FP, NULL, "weights ", NULL);
	open_json_array(PRINT_JSON, "weights");
	for (i = 0; i < n; i++)
		print_uint(PRINT_ANY, NULL, i + 1 < n ? "%u:" : "%u ", w[i]);
	close_json_array(PRINT_JSON, NULL);
}

/* A flag by its word in text ("ecn", "noecn"), as a boolean in JSON. */
static void print_flag(const struct option_spec *spec, __u32 v)
{
	print_string(PRINT_FP, NULL, "%s ", spec->names[v ? 1 : 0]);
	print_bool(PRINT_JSON, spec->name, NULL, v);
}

/* One option as the kernel dumped it, in the way of its kind. */
static void print_option(const struct option_spec *spec, struct rtattr *attr)
{
	char fmt[32];
	__u32 v;

	if (spec->kind == KIND_RATE) {
		print_bandwidth(attr);
		return;
	}
	if (spec->kind == KIND_WEIGHTS) {
		print_weights(attr);
		return;
	}
	if (!attr_u32(attr, &v))
		return;
	snprintf(fmt, sizeof(fmt), "%s %%s ", spec->name);
	if (spec->shown)
		print_uint(PRINT_ANY, spec->name, spec->shown, v);
	else if (spec->kind == KIND_SIZE)
		print_size(PRINT_ANY, spec->name, fmt, v);
	else if (spec->kind == KIND_NAME)
		print_name(spec, v);
	else if (spec->kind == KIND_FLAG)
		print_flag(spec, v);
	else	/* KIND_TIME, KIND_BOUND */
		print_time_us(spec->name, v);
}

/* The options in the order of the table, the order `tc qdisc add` takes them in. */
static int confucius_print_opt(QDISC_UTIL_CONST struct qdisc_util *qu, FILE *f, struct rtattr *opt)
{
	struct rtattr *tb[TCA_CONFUCIUS_MAX + 1];
	unsigned int i;

	if (!opt)
		return 0;
	parse_rtattr_nested(tb, TCA_CONFUCIUS_MAX, opt);
	for (i = 0; i < NOPTIONS; i++)
		print_option(&options[i], tb[options[i].attr]);
	return 0;
}

static void print_class_xstats(const struct tc_confucius_qd_stats *st)
{
	unsigned int i, n = st->classes < TC_CONFUCIUS_MAX_CLASSES ?
			    st->classes : TC_CONFUCIUS_MAX_CLASSES;

	open_json_array(PRINT_JSON, "classes");
	for (i = 0; i < n; i++) {
		print_nl();
		open_json_object(NULL);
		print_uint(PRINT_ANY, "class", "  class %u:", i + 1);
		print_uint(PRINT_ANY, "flows", " flows %u", st->class_flows[i]);
		print_uint(PRINT_ANY, "packets", " packets %u", st->class_packets[i]);
		print_uint(PRINT_ANY, "bytes", " bytes %u", st->class_bytes[i]);
		close_json_object();
	}
	close_json_array(PRINT_JSON, NULL);
}

/* The consistent snapshot: enqueued = sent + dropped + backlog. */
static void print_snapshot(const struct tc_confucius_qd_stats *st)
{
	print_nl();
	print_u64(PRINT_ANY, "enqueued_packets", "  enqueued_packets %llu", st->enqueued_packets);
	print_u64(PRINT_ANY, "enqueued_bytes", " enqueued_bytes %llu", st->enqueued_bytes);
	print_u64(PRINT_ANY, "sent_packets", " sent_packets %llu", st->sent_packets);
	print_u64(PRINT_ANY, "sent_bytes", " sent_bytes %llu", st->sent_bytes);
	print_nl();
	print_u64(PRINT_ANY, "dropped_packets", "  dropped_packets %llu", st->dropped_packets);
	print_u64(PRINT_ANY, "dropped_bytes", " dropped_bytes %llu", st->dropped_bytes);
	print_uint(PRINT_ANY, "backlog_packets", " backlog_packets %u", st->backlog_packets);
	print_uint(PRINT_ANY, "backlog_bytes", " backlog_bytes %u", st->backlog_bytes);
}

static void print_qdisc_xstats(const struct tc_confucius_qd_stats *st)
{
	char b[SPRINT_BSIZE];

	print_uint(PRINT_ANY, "new_flows", "  new_flows %u", st->new_flows);
	print_uint(PRINT_ANY, "old_flows", " old_flows %u", st->old_flows);
	print_float(PRINT_ANY, "new_weight", " new_weight %g", (double)st->new_weight / WEIGHT_ONE);
	print_u64(PRINT_ANY, "ticks", " ticks %llu", st->ticks);
	print_u64(PRINT_ANY, "holds", " holds %llu", st->holds);
	print_u64(PRINT_ANY, "delay_drops", " delay_drops %llu", st->delay_drops);
	print_u64(PRINT_ANY, "aqm_drops", " aqm_drops %llu", st->aqm_drops);
	print_u64(PRINT_ANY, "ecn_marks", " ecn_marks %llu", st->ecn_marks);
	print_u64(PRINT_ANY, "moves", " moves %llu", st->moves);
	print_nl();
	print_string(PRINT_FP, NULL, "  max_sojourn %s", sprint_time(st->max_sojourn_us, b));
	print_uint(PRINT_JSON, "max_sojourn", NULL, st->max_sojourn_us);
	print_size(PRINT_ANY, "memory_used", " memory_used %s", st->memory_used);
	/* at most 65536 flows of a few hundred bytes: far below 4 GiB */
	print_size(PRINT_ANY, "instance_bytes", " instance %s", (__u32)st->instance_bytes);
	print_snapshot(st);
	print_class_xstats(st);
}

static void print_cl_xstats(const struct tc_confucius_cl_stats *st)
{
	print_uint(PRINT_ANY, "flows", " flows %u", st->flows);
}

static void print_fl_xstats(const struct tc_confucius_fl_stats *st)
{
	char b[SPRINT_BSIZE];

	print_uint(PRINT_ANY, "bucket", " bucket %u", st->bucket);
	print_string(PRINT_ANY, "state", " %s",
		     st->state == TC_CONFUCIUS_FLOW_NEW ? "new" :
		     st->state == TC_CONFUCIUS_FLOW_OLD ? "old" : "forgotten");
	print_uint(PRINT_ANY, "class", " class %u", st->class_id);
	print_float(PRINT_ANY, "weight", " weight %g", (double)st->weight / WEIGHT_ONE);
	print_int(PRINT_ANY, "deficit", " deficit %d", st->deficit);
	print_string(PRINT_FP, NULL, " sojourn %s", sprint_time(st->sojourn_us, b));
	print_uint(PRINT_JSON, "sojourn", NULL, st->sojourn_us);
	if (!st->ip_proto)
		return;
	print_uint(PRINT_ANY, "sport", " ports %u", st->sport);
	print_uint(PRINT_ANY, "dport", ">%u", st->dport);
	print_uint(PRINT_ANY, "ip_proto", " proto %u", st->ip_proto);
}

/*
 * Statistics are a struct tc_confucius_xstats whose type names the member that
 * follows (a newer kernel may append fields to it, an older one send fewer).
 */
static int confucius_print_xstats(QDISC_UTIL_CONST struct qdisc_util *qu, FILE *f, struct rtattr *xstats)
{
	struct tc_confucius_xstats st = { 0 };
	size_t size;

	if (!xstats)
		return 0;
	size = RTA_PAYLOAD(xstats);
	if (size < offsetof(struct tc_confucius_xstats, qdisc_stats))
		return -1;
	/* RTA_DATA is only 4-byte aligned. */
	memcpy(&st, RTA_DATA(xstats), size < sizeof(st) ? size : sizeof(st));
	switch (st.type) {
	case TCA_CONFUCIUS_XSTATS_QDISC:
		print_qdisc_xstats(&st.qdisc_stats);
		return 0;
	case TCA_CONFUCIUS_XSTATS_CLASS:
		print_cl_xstats(&st.class_stats);
		return 0;
	case TCA_CONFUCIUS_XSTATS_FLOW:
		print_fl_xstats(&st.flow_stats);
		return 0;
	}
	return -1;
}

EXPORTED struct qdisc_util confucius_qdisc_util = {
	.id		= "confucius",
	.parse_qopt	= confucius_parse_opt,
	.print_qopt	= confucius_print_opt,
	.print_xstats	= confucius_print_xstats,
};
