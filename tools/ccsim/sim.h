/* SPDX-License-Identifier: MIT */
/*
 * ccsim: a discrete-event, packet-level network simulator that runs the
 * real congestion-control code of congestion/ (include/ovrdma/cc.h).
 *
 * Network: nodes (hosts and switches) joined by full-duplex links. Every
 * node's egress port serialises packets at the link rate into a
 * propagation delay plus optional per-packet jitter (uniform, packets may
 * overtake each other as they do in an overlay), Bernoulli or
 * Gilbert-Elliott loss and black-hole windows. Switches have one shared
 * buffer (complete sharing: a packet is dropped when the switch's buffer
 * is full) and RED-style ECN marking on the egress queue (Kmin, Kmax,
 * Pmax). Routing is shortest-path with per-flow ECMP, or per-packet
 * spraying for flows that ask for it.
 *
 * Transport: a simplified model of the engine's loss recovery (see
 * docs/CONGESTION.md): per-packet ACKs carrying the cumulative ACK, the
 * packet's own sequence (a selective ACK), the echoed transmit time (RTT
 * sample), the CE bit and a duplicate flag; RACK loss detection with a
 * reordering window that grows on duplicates (RFC 8985), a tail-loss
 * probe, RTO with backoff; selective retransmission only. The sender
 * obeys the controller's window and pacing rate exactly as the engine
 * does. Hosts' NICs serve ACKs first, then flows round-robin.
 *
 * Time is in picoseconds (uint64_t) inside, nanoseconds at the cc.h hook.
 */
#ifndef OVR_CCSIM_SIM_H
#define OVR_CCSIM_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <ovrdma/cc.h>

#define PS_PER_NS 1000ull
#define PS_PER_US 1000000ull
#define PS_PER_MS 1000000000ull

#define SIM_HDR_BYTES 64 /* overlay + transport header on every packet */
#define SIM_ACK_BYTES 64

enum sim_loss_model { SIM_LOSS_NONE, SIM_LOSS_BERNOULLI, SIM_LOSS_GE };

/* Impairments of one direction of a link. */
struct sim_impair {
	enum sim_loss_model loss;
	double p; /* Bernoulli: loss probability; GE: mean loss rate */
	double burst; /* GE: mean burst length (packets) */
	uint64_t jitter_ps; /* extra delay U[0, jitter] per packet */
	bool data_only; /* impair data packets only (ACKs pass) */
};

struct sim_link_cfg {
	double gbps;
	uint64_t delay_ps;
	struct sim_impair imp; /* applied in both directions */
};

struct sim_ecn_cfg {
	bool enabled;
	uint64_t kmin, kmax; /* bytes of egress queue */
	double pmax;
};

struct sim_cfg {
	uint64_t seed;
	uint32_t mss; /* payload bytes per packet */
	uint64_t switch_buffer; /* bytes per switch, shared by its ports */
	struct sim_ecn_cfg ecn;
	const struct ovr_cc_ops *cc;
	uint64_t cc_base_rtt_ns; /* hint given to the controller */
	uint32_t max_cwnd_pkts; /* the transport's window (engine: 1024) */
	uint64_t min_rto_ps;
	bool ecn_stripped; /* the overlay drops the CE bit on delivery */
};

struct sim;
struct sim_flow;

/* What a flow reports when it completes. */
struct sim_flow_stats {
	uint32_t id, src, dst;
	uint64_t size; /* payload bytes */
	uint64_t start_ps, finish_ps; /* finish: last byte at the receiver */
	uint64_t pkts_sent, retx, spurious, rtos, tlps;
	double ideal_ps; /* unloaded completion time */
};

struct sim *sim_create(const struct sim_cfg *cfg);
void sim_destroy(struct sim *s);

/* Topology. Returns the node id. */
uint32_t sim_add_host(struct sim *s);
uint32_t sim_add_switch(struct sim *s);
/* Returns the egress port index on @a toward @b (b's port is returned
 * in *@b_port when not NULL). */
int sim_link(struct sim *s, uint32_t a, uint32_t b,
	     const struct sim_link_cfg *l, int *b_port);
/* Change the impairments of the egress port @port of @node. */
void sim_port_impair(struct sim *s, uint32_t node, int port,
		     const struct sim_impair *imp);
/* Drop everything sent out of (@node, @port) during [from, to). */
void sim_port_blackhole(struct sim *s, uint32_t node, int port, uint64_t from,
			uint64_t to);
/* Compute routes; call after the last sim_link. */
void sim_routes(struct sim *s);

/* A flow of @size payload bytes from host @src to host @dst starting at
 * @start_ps. @spray: spread packets over all equal-hop paths. */
struct sim_flow *sim_flow_add(struct sim *s, uint32_t src, uint32_t dst,
			      uint64_t size, uint64_t start_ps, bool spray);
uint32_t sim_flow_id(const struct sim_flow *f);
uint32_t sim_nflows(const struct sim *s);
struct sim_flow *sim_flow_get(struct sim *s, uint32_t id);
/* Bytes delivered in order to the receiver so far. */
uint64_t sim_flow_delivered(const struct sim_flow *f);
bool sim_flow_done(const struct sim_flow *f);
/* Send no new data (a long-lived flow leaving): what was sent completes. */
void sim_flow_stop(struct sim_flow *f);
void sim_flow_stats(const struct sim_flow *f, struct sim_flow_stats *st);
/* The controller's state of a flow (window, rate). */
const struct ovr_cc_flow *sim_flow_cc(const struct sim_flow *f);

/* Called for every completed flow. */
void sim_on_complete(struct sim *s,
		     void (*cb)(void *arg, const struct sim_flow_stats *st),
		     void *arg);

/* Run until @until_ps or until nothing is left to do; returns the time. */
uint64_t sim_run(struct sim *s, uint64_t until_ps);
uint64_t sim_now(const struct sim *s);
/* Schedule a callback (samplers, scenario events). */
void sim_at(struct sim *s, uint64_t t_ps, void (*fn)(struct sim *, void *),
	    void *arg);

/* Counters and probes. */
uint64_t sim_port_qlen(const struct sim *s, uint32_t node, int port);
uint64_t sim_port_tx_bytes(const struct sim *s, uint32_t node, int port);
uint64_t sim_switch_used(const struct sim *s, uint32_t node);
struct sim_counters {
	uint64_t buf_drops; /* switch buffer overflow */
	uint64_t link_drops; /* impairment loss and black holes */
	uint64_t ecn_marks;
	uint64_t data_pkts, retx, spurious, rtos, tlps;
	uint64_t events;
};
void sim_counters(const struct sim *s, struct sim_counters *c);
double sim_port_gbps(const struct sim *s, uint32_t node, int port);
/* Unloaded RTT between two hosts for one full packet (propagation +
 * serialisation of a data packet and its ACK on every hop). */
uint64_t sim_base_rtt_ps(const struct sim *s, uint32_t a, uint32_t b);

/* The base RTT hint given to controllers of flows started from now on. */
void sim_set_base_rtt_hint(struct sim *s, uint64_t ns);

/* Seeded generator shared by the scenarios. */
double sim_rand(struct sim *s); /* [0, 1) */

#endif /* OVR_CCSIM_SIM_H */
