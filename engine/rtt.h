/* SPDX-License-Identifier: MIT */
/*
 * Round-trip time estimator and retransmission timeouts of one QP.
 *
 * Samples come from tsecr echoes (docs/WIRE.md §4.4), so a sample of a
 * retransmitted packet is as good as any: Karn's rule is not needed.
 * Smoothing is RFC 6298's (alpha 1/8, beta 1/4) in nanoseconds:
 *   first sample R:  srtt = R, rttvar = R / 2
 *   then:            rttvar = 3/4 rttvar + 1/4 |srtt - R|
 *                    srtt   = 7/8 srtt   + 1/8 R
 *   rto = clamp(srtt + max(granularity, 4 rttvar), min_rto, max_rto),
 *   doubled on every expiry (exponential backoff) until the next sample.
 * The tail-loss probe timeout follows RACK-TLP (RFC 8985): 2 srtt, plus
 * the peer's delayed-ACK allowance when only one packet is in flight,
 * never more than the RTO.
 */
#ifndef OVR_DP_RTT_H
#define OVR_DP_RTT_H

#include <stdbool.h>
#include <stdint.h>

struct ovr_dp_rtt {
	uint64_t srtt_ns; /* 0 until the first sample */
	uint64_t rttvar_ns;
	uint64_t min_rtt_ns; /* lowest sample seen: propagation estimate */
	uint64_t rto_ns; /* current timeout, backoff included */
	uint64_t min_rto_ns;
	uint64_t max_rto_ns;
	uint64_t granularity_ns; /* timer resolution of the caller */
	uint32_t backoff; /* expiries since the last sample */
};

/*
 * @init_rto_ns is used until the first sample (RFC 6298 says 1 s for the
 * Internet; a datacenter fabric wants far less). Returns -EINVAL unless
 * 0 < min_rto <= init_rto <= max_rto.
 */
int ovr_dp_rtt_init(struct ovr_dp_rtt *r, uint64_t init_rto_ns,
		    uint64_t min_rto_ns, uint64_t max_rto_ns,
		    uint64_t granularity_ns);

/* Feed one sample (now - tsecr). Resets the backoff. */
void ovr_dp_rtt_sample(struct ovr_dp_rtt *r, uint64_t rtt_ns);

/* The retransmission timer expired: double the RTO (up to max_rto). */
void ovr_dp_rtt_backoff(struct ovr_dp_rtt *r);

/* Probe timeout for a tail-loss probe; @one_inflight: a single packet is
 * outstanding, so the receiver may be delaying its ACK by @ack_delay_ns. */
uint64_t ovr_dp_rtt_pto(const struct ovr_dp_rtt *r, bool one_inflight,
			uint64_t ack_delay_ns);

#endif /* OVR_DP_RTT_H */
