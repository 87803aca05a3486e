/* SPDX-License-Identifier: MIT */
/*
 * The real-time flow's rate controllers (tools/rtcontrol, the same Rust code rtflow
 * runs: GCC, Copa, fixed, and the TCP mode's rate adapter) behind a C ABI, for the
 * ns-3 simulator. Times are nanoseconds on the caller's
 * clock; rates are bit/s. src/capi.rs documents each call.
 */
#ifndef RTCONTROL_H
#define RTCONTROL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { RTC_GCC = 0, RTC_COPA = 1, RTC_FIXED = 2 };

struct rtc_controller;

struct rtc_probe {
	int32_t id;
	double rate_bps;
	uint32_t min_packets;
	uint64_t min_bytes;
};

struct rtc_outcome {
	uint64_t seq, send_ns;
	uint32_t wire_bytes;
	uint64_t in_flight;
	int received;		/* 0: lost; then arrival_ns and rtt_ns are ignored */
	uint64_t arrival_ns, rtt_ns;
	int probed;		/* 1: sent for `probe` (GCC's probe estimator reads it) */
	struct rtc_probe probe;
};

struct rtc_feedback_request {
	uint8_t every_packets;	/* report once this many packets are unreported; 0: by time */
	uint16_t interval_ms;	/* report at latest this long after the oldest unreported arrival */
};

/* NULL for an unknown kind or bounds that are not 0 < min <= start <= max. */
struct rtc_controller *rtc_new(int kind, uint64_t now_ns, double start_bps, double min_bps,
			       double max_bps, double pacing_factor, double copa_delta);
void rtc_free(struct rtc_controller *c);
/* probe: the cluster the packet belongs to, or NULL. */
void rtc_on_sent(struct rtc_controller *c, uint64_t seq, uint64_t send_ns, uint32_t wire_bytes,
		 uint64_t in_flight, const struct rtc_probe *probe);
void rtc_on_feedback(struct rtc_controller *c, uint64_t now_ns, const struct rtc_outcome *outcomes,
		     size_t n, uint64_t in_flight);
void rtc_on_tick(struct rtc_controller *c, uint64_t now_ns, uint64_t pacer_queue_bytes);
double rtc_target_bps(const struct rtc_controller *c);
double rtc_pacing_bps(const struct rtc_controller *c);
int rtc_can_send(const struct rtc_controller *c, uint64_t in_flight);
/* 1 and the window in *bytes for a window controller (Copa); 0 for a rate controller. */
int rtc_cwnd_bytes(const struct rtc_controller *c, uint64_t *bytes);
size_t rtc_take_probes(struct rtc_controller *c, struct rtc_probe *out, size_t max);
struct rtc_feedback_request rtc_feedback_request(const struct rtc_controller *c);
uint64_t rtc_tick_ns(void);

/* rtflow's TCP mode: the rate adapter that follows what the socket delivers (src/tcp_rate.rs). */
struct rtc_tcp_adapter;

/* NULL for bounds that are not 0 < min <= start <= max, or a zero frame interval. */
struct rtc_tcp_adapter *rtc_tcp_new(double start_bps, double min_bps, double max_bps,
				    uint64_t frame_interval_ns);
void rtc_tcp_free(struct rtc_tcp_adapter *a);
/* How long the oldest frame not yet handed to the socket has waited so far. */
void rtc_tcp_note_wait(struct rtc_tcp_adapter *a, uint64_t wait_ns);
/* Every rtc_tcp_interval_ns(); bytes_acked: the running total the peer acknowledged. */
void rtc_tcp_update(struct rtc_tcp_adapter *a, uint64_t now_ns, uint64_t bytes_acked);
double rtc_tcp_target_bps(const struct rtc_tcp_adapter *a);
uint64_t rtc_tcp_interval_ns(void);
uint64_t rtc_tcp_notsent_lowat(void);	/* rtflow's default TCP_NOTSENT_LOWAT, bytes */

#ifdef __cplusplus
}
#endif

#endif
