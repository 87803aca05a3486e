// SPDX-License-Identifier: MIT
/* Configuration validation: defaults pass, every out-of-range value is named. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "harness.h"
#include "suites.h"

static void defaults_are_valid_and_documented(void **state)
{
	struct cfc_config cfg = ts_default_config();

	(void)state;
	assert_null(cfc_config_check(&cfg));
	assert_int_equal(cfg.flows, 1024);
	assert_int_equal(cfg.limit, 10240);
	assert_int_equal(cfg.memlimit, 32u << 20);
	assert_int_equal(cfg.quantum, 1514);
	assert_int_equal(cfg.interval_ns, 250000000ull);
	assert_int_equal(cfg.reclassify_ns, 100000000ull);
	assert_int_equal(cfg.classes, 3);
	assert_int_equal(cfg.mode, CFC_MODE_FLOW);
	assert_int_equal(cfg.bandwidth, 0);
	assert_int_equal(cfg.pace, CFC_PACE_ADAPTIVE);
	assert_int_equal(cfg.target_ns, 40000000ull);
	assert_int_equal(cfg.maxhold_ns, 2000000000ull);
	assert_int_equal(cfg.maxdelay_ns, 500000000ull);
	assert_int_equal(cfg.aqm_target_ns, 10000000ull);
	assert_int_equal(cfg.aqm_interval_ns, 100000000ull);
	assert_int_equal(cfg.aqm_settle_ns, 2000000000ull);
	assert_true(cfg.ecn);
}

struct bad_value {
	void (*set)(struct cfc_config *cfg);
	const char *names;	/* the word the message must contain */
};

static void zero_flows(struct cfc_config *c) { c->flows = 0; }
static void many_flows(struct cfc_config *c) { c->flows = CFC_FLOWS_MAX + 1; }
static void zero_limit(struct cfc_config *c) { c->limit = 0; }
static void tiny_memlimit(struct cfc_config *c) { c->memlimit = 1000; }
static void tiny_quantum(struct cfc_config *c) { c->quantum = 10; }
static void zero_interval(struct cfc_config *c) { c->interval_ns = 0; }
static void huge_reclassify(struct cfc_config *c) { c->reclassify_ns = CFC_PERIOD_MAX_NS + 1; }
static void slow_bandwidth(struct cfc_config *c) { c->bandwidth = 100; }
static void big_hysteresis(struct cfc_config *c) { c->hysteresis = CFC_W_ONE; }
static void bad_mode(struct cfc_config *c) { c->mode = CFC_MODE_COUNT; }
static void zero_classes(struct cfc_config *c) { c->classes = 0; }
static void many_classes(struct cfc_config *c) { c->classes = CFC_MAX_CLASSES + 1; }
static void bad_pace(struct cfc_config *c) { c->pace = CFC_PACE_COUNT; }
static void tiny_target(struct cfc_config *c) { c->target_ns = CFC_PERIOD_MIN_NS - 1; }
static void huge_target(struct cfc_config *c) { c->target_ns = CFC_PERIOD_MAX_NS + 1; }
static void huge_maxhold(struct cfc_config *c) { c->maxhold_ns = CFC_MAXHOLD_MAX_NS + 1; }
static void tiny_maxdelay(struct cfc_config *c) { c->maxdelay_ns = CFC_PERIOD_MIN_NS - 1; }
static void huge_maxdelay(struct cfc_config *c) { c->maxdelay_ns = CFC_MAXDELAY_MAX_NS + 1; }
static void tiny_aqm_target(struct cfc_config *c) { c->aqm_target_ns = CFC_AQM_TARGET_MIN_NS - 1; }
static void huge_aqm_target(struct cfc_config *c) { c->aqm_target_ns = CFC_PERIOD_MAX_NS + 1; }
static void zero_aqm_interval(struct cfc_config *c) { c->aqm_interval_ns = 0; }
static void huge_aqm_settle(struct cfc_config *c) { c->aqm_settle_ns = CFC_PERIOD_MAX_NS + 1; }
static void bad_isolate(struct cfc_config *c) { c->isolate = CFC_ISOLATE_COUNT; }

static void every_bad_value_is_rejected_by_name(void **state)
{
	const struct bad_value cases[] = {
		{ zero_flows, "flows" }, { many_flows, "flows" }, { zero_limit, "limit" },
		{ tiny_memlimit, "memlimit" }, { tiny_quantum, "quantum" },
		{ zero_interval, "interval" }, { huge_reclassify, "reclassify" },
		{ slow_bandwidth, "bandwidth" }, { big_hysteresis, "hysteresis" },
		{ bad_mode, "mode" }, { zero_classes, "classes" }, { many_classes, "classes" },
		{ bad_pace, "pace" }, { tiny_target, "target" }, { huge_target, "target" },
		{ huge_maxhold, "maxhold" }, { tiny_maxdelay, "maxdelay" },
		{ huge_maxdelay, "maxdelay" }, { tiny_aqm_target, "aqm_target" },
		{ huge_aqm_target, "aqm_target" }, { zero_aqm_interval, "aqm_interval" },
		{ huge_aqm_settle, "aqm_settle" }, { bad_isolate, "isolate" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cfc_config cfg = ts_default_config();
		const char *why;

		cases[i].set(&cfg);
		why = cfc_config_check(&cfg);
		assert_non_null(why);
		if (!strstr(why, cases[i].names))
			fail_msg("message \"%s\" does not name %s", why, cases[i].names);
	}
}

static void boundaries_are_accepted(void **state)
{
	struct cfc_config cfg = ts_default_config();

	(void)state;
	cfg.flows = CFC_FLOWS_MAX;
	cfg.limit = CFC_LIMIT_MIN;
	cfg.quantum = CFC_QUANTUM_MIN;
	cfg.interval_ns = CFC_PERIOD_MIN_NS;
	cfg.bandwidth = CFC_BANDWIDTH_MIN;
	cfg.hysteresis = CFC_HYSTERESIS_MAX;
	cfg.classes = CFC_MAX_CLASSES;
	cfg.target_ns = CFC_PERIOD_MIN_NS;
	cfg.maxhold_ns = 0;
	cfg.maxdelay_ns = 0;
	cfg.aqm_target_ns = 0;
	cfg.aqm_interval_ns = CFC_PERIOD_MIN_NS;
	cfg.aqm_settle_ns = 0;
	assert_null(cfc_config_check(&cfg));
	cfg.maxdelay_ns = CFC_PERIOD_MIN_NS;
	cfg.aqm_target_ns = CFC_AQM_TARGET_MIN_NS;
	assert_null(cfc_config_check(&cfg));
	cfg.target_ns = CFC_PERIOD_MAX_NS;
	cfg.maxhold_ns = CFC_MAXHOLD_MAX_NS;
	cfg.maxdelay_ns = CFC_MAXDELAY_MAX_NS;
	cfg.aqm_target_ns = CFC_PERIOD_MAX_NS;
	cfg.aqm_interval_ns = CFC_PERIOD_MAX_NS;
	cfg.aqm_settle_ns = CFC_PERIOD_MAX_NS;
	cfg.pace = CFC_PACE_FIXED;
	assert_null(cfc_config_check(&cfg));
}

CFC_TEST_GROUP(run_config_tests, "configuration",
	cmocka_unit_test(defaults_are_valid_and_documented),
	cmocka_unit_test(every_bad_value_is_rejected_by_name),
	cmocka_unit_test(boundaries_are_accepted))
