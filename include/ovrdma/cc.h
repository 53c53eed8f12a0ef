/* SPDX-License-Identifier: MIT */
/*
 * Congestion control: the hook between the transport and an algorithm.
 *
 * Shaped like Linux's struct tcp_congestion_ops. The transport (the engine
 * in dataplane/, or the simulator in tools/ccsim) owns loss recovery and
 * reports what it sees; an algorithm turns those reports into a window and
 * a pacing rate (struct ovr_cc_flow), which the transport obeys before
 * every packet it sends:
 *
 *   - at most cwnd_bytes in flight, except that an empty pipe always lets
 *     one packet out (so a window below one segment still moves), and
 *   - when rate_bps is not 0, packets spaced at rate_bps.
 *
 * Per-flow state lives in a fixed slot inside the transport's flow
 * (ovr_cc_flow.priv), so an algorithm never allocates; each algorithm
 * checks its state against the slot at compile time (OVR_CC_PRIV_CHECK)
 * and the registry checks priv_size again at registration.
 *
 * Algorithms have no timers of their own: time arrives with every hook
 * (now_ns), and an algorithm with periodic behaviour (DCQCN's alpha and
 * rate-increase timers) catches up on the periods that elapsed when it is
 * next called. A sending flow is called at least once per ACK.
 *
 * Built in (congestion/): "ovr" (the default, designed for overlays; see
 * docs/CONGESTION.md), "dcqcn", "timely", "swift" (baselines after their
 * papers) and "fixed" (a constant window; the engine's tests use it).
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
#define OVR_CC_NAME_MAX 16 /* including the NUL */
#define OVR_CC_MAX_ALGS 16 /* registry capacity */

/* Compile-time check that an algorithm's state fits the per-flow slot. */
#define OVR_CC_PRIV_CHECK(type)                                  \
	_Static_assert(sizeof(type) <= OVR_CC_PRIV_BYTES,        \
		       #type " does not fit OVR_CC_PRIV_BYTES"); \
	_Static_assert(_Alignof(type) <= 8,                      \
		       #type " needs more than 8-byte alignment")

/* What the controller decides; the transport reads it after every hook. */
struct ovr_cc_flow {
	uint32_t cwnd_bytes; /* bytes that may be in flight */
	uint32_t mss; /* payload bytes of a full segment */
	uint64_t rate_bps; /* pacing rate; 0: no pacing */
	uint64_t priv[OVR_CC_PRIV_BYTES / 8]; /* the algorithm's own state */
};

/* Parameters of one flow, fixed at init. */
struct ovr_cc_params {
	uint32_t mss; /* payload bytes of a full segment */
	uint32_t init_cwnd_bytes; /* the transport's suggestion; 0: none */
	uint32_t max_cwnd_bytes; /* the transport cannot track more */
	uint64_t line_rate_bps; /* NIC rate; 0: unknown */
	uint64_t base_rtt_ns; /* expected unloaded RTT; 0: unknown */
	uint32_t hops; /* switch hops on the path; 0: unknown (overlays) */
	uint64_t now_ns;
};

/* One acknowledgement's worth of news. */
struct ovr_cc_ack {
	uint64_t now_ns;
	uint64_t rtt_ns; /* 0: no sample in this ACK */
	uint64_t min_rtt_ns; /* lowest sample so far (0: none yet) */
	uint32_t acked_bytes; /* newly delivered (cumulative + selective) */
	uint32_t inflight_bytes; /* after this ACK */
	uint32_t ce_count; /* CE marks newly reported with this ACK */
};

struct ovr_cc_ops {
	/* fast path */
	/* (required) bytes were delivered; an RTT sample may come with them */
	void (*on_ack)(struct ovr_cc_flow *f, const struct ovr_cc_ack *a);
	/* (required) the peer saw @marks CE-marked packets (outer ECN) */
	void (*on_ecn)(struct ovr_cc_flow *f, uint64_t now_ns, uint32_t marks);
	/* (required) loss detection declared @lost_bytes lost */
	void (*on_loss)(struct ovr_cc_flow *f, uint64_t now_ns,
			uint32_t lost_bytes);
	/* (required) the retransmission timer fired */
	void (*on_timeout)(struct ovr_cc_flow *f, uint64_t now_ns);
	/* slow path */
	/* (required) set cwnd_bytes, mss, rate_bps and the private state */
	int (*init)(struct ovr_cc_flow *f, const struct ovr_cc_params *p);
	/* (optional) the flow is gone */
	void (*release)(struct ovr_cc_flow *f);
	const char *name; /* (required) < OVR_CC_NAME_MAX bytes, [a-z0-9_] */
	size_t priv_size; /* (required) bytes of priv used */
};

extern const struct ovr_cc_ops ovr_cc_fixed;
extern const struct ovr_cc_ops ovr_cc_dcqcn;
extern const struct ovr_cc_ops ovr_cc_timely;
extern const struct ovr_cc_ops ovr_cc_swift;
extern const struct ovr_cc_ops ovr_cc_ovr;

/* 0 when @ops is usable: every required hook set, a valid name,
 * priv_size fits; -EINVAL otherwise. */
int ovr_cc_ops_validate(const struct ovr_cc_ops *ops);

/*
 * Registry. The built-in algorithms are always there; others may be added
 * at run time. ovr_cc_register: 0, -EINVAL (ovr_cc_ops_validate fails),
 * -EEXIST (the name is taken), -ENOSPC (registry full).
 * ovr_cc_unregister: 0, -ENOENT, -EPERM (a built-in).
 * Lookups are safe from any thread; registration is a slow-path call.
 */
int ovr_cc_register(const struct ovr_cc_ops *ops);
int ovr_cc_unregister(const struct ovr_cc_ops *ops);
const struct ovr_cc_ops *ovr_cc_find(const char *name); /* NULL: unknown */
/* Fills @out with up to @max algorithms; returns how many exist. */
size_t ovr_cc_list(const struct ovr_cc_ops **out, size_t max);
/* The default algorithm ("ovr"). */
const struct ovr_cc_ops *ovr_cc_default(void);

#ifdef __cplusplus
}
#endif
#endif /* OVRDMA_CC_H */
