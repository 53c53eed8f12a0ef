/* SPDX-License-Identifier: MIT */
/*
 * Congestion-control hook of the transport engine.
 *
 * Shaped like Linux's struct tcp_congestion_ops: the engine owns the loss
 * recovery and reports what it sees; an algorithm turns those reports into
 * a window and a pacing rate, which the engine obeys. The fast-path hooks
 * come first in the table. Per-flow state lives in a fixed slot inside the
 * engine's QP (struct ovr_cc_flow), so an algorithm never allocates; its
 * size is checked against OVR_CC_PRIV_BYTES when the algorithm is
 * registered.
 *
 * Until the congestion-control work lands (congestion/), the engine runs
 * ovr_cc_fixed: a constant window and no pacing.
 */
#ifndef OVRDMA_CC_H
#define OVRDMA_CC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OVR_CC_PRIV_BYTES 128

/* What the controller decides; the engine reads it after every hook. */
struct ovr_cc_flow {
	uint32_t cwnd_bytes; /* bytes that may be in flight */
	uint32_t mss; /* payload bytes of a full segment */
	uint64_t rate_bps; /* pacing rate; 0: no pacing */
	uint64_t priv[OVR_CC_PRIV_BYTES / 8]; /* the algorithm's own state */
};

/* Parameters of one flow, fixed at init. */
struct ovr_cc_params {
	uint32_t mss;
	uint32_t init_cwnd_bytes;
	uint32_t max_cwnd_bytes; /* the engine cannot track more than this */
	uint64_t line_rate_bps; /* 0: unknown */
};

/* One acknowledgement's worth of news. */
struct ovr_cc_ack {
	uint64_t now_ns;
	uint64_t rtt_ns; /* 0: no sample in this ACK */
	uint64_t min_rtt_ns; /* lowest sample so far (0: none yet) */
	uint32_t acked_bytes; /* newly delivered (cumulative + selective) */
	uint32_t inflight_bytes; /* after this ACK */
	uint32_t ce_count; /* CE-marked packets newly reported by the peer */
};

struct ovr_cc_ops {
	/* fast path */
	void (*on_ack)(struct ovr_cc_flow *f, const struct ovr_cc_ack *a);
	void (*on_ecn)(struct ovr_cc_flow *f, uint64_t now_ns, uint32_t marks);
	void (*on_loss)(struct ovr_cc_flow *f, uint64_t now_ns,
			uint32_t lost_bytes);
	void (*on_timeout)(struct ovr_cc_flow *f, uint64_t now_ns);
	/* slow path */
	int (*init)(struct ovr_cc_flow *f, const struct ovr_cc_params *p);
	void (*release)(struct ovr_cc_flow *f);
	const char *name;
	size_t priv_size; /* bytes of priv used; <= OVR_CC_PRIV_BYTES */
};

/* A constant window of init_cwnd_bytes, no pacing. */
extern const struct ovr_cc_ops ovr_cc_fixed;

/* 0 when @ops is usable (every hook set, name, priv_size fits). */
int ovr_cc_ops_validate(const struct ovr_cc_ops *ops);

#ifdef __cplusplus
}
#endif
#endif /* OVRDMA_CC_H */
