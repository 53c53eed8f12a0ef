/* SPDX-License-Identifier: MIT */
/*
 * linkemu: a seeded, reproducible model of one direction of a bad network
 * link, in memory. It is the impairment core shared by the transport
 * engine's tests (two engines joined by a pair of links), the benchmarks,
 * and the fabric emulator.
 *
 * Model, in the order a packet meets it:
 *   1. blackhole: everything is dropped (counted), nothing else happens;
 *   2. serializer: a FIFO draining at rate_bps; a packet that would find
 *      more than queue_bytes ahead of it is tail-dropped; one that finds
 *      more than ecn_bytes is marked CE (RED with Kmin = Kmax: a step);
 *   3. the wire: the packet leaves the serializer and is lost with the
 *      Bernoulli probability `loss`, or with Gilbert-Elliott bursts (a
 *      two-state chain: good->bad with ge_p, bad->good with ge_r per
 *      packet, loss ge_loss_bad in the bad state; mean burst 1/ge_r);
 *   4. a survivor gets one random bit flipped with probability `corrupt`,
 *      is duplicated with probability `dup` (the copy is impaired by
 *      jitter independently), and arrives after delay_ns plus jitter
 *      U[0, jitter_ns]; with probability `reorder` it is held back a
 *      further reorder_ns, overtaken by its followers.
 * Jitter reorders packets unless jitter_fifo is set, in which case no
 * packet arrives before one sent ahead of it (jitter as queueing).
 *
 * Time is given by the caller in nanoseconds; nothing here sleeps or
 * reads a clock. Not thread-safe: one link per thread, or a lock outside.
 * Costs: O(log n) per packet in flight (binary heap), one malloc'd copy
 * per packet - a test tool, not a dataplane.
 */
#ifndef OVRDMA_LINKEMU_H
#define OVRDMA_LINKEMU_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ovr_link_cfg {
	uint64_t rate_bps; /* 0: infinitely fast */
	uint64_t delay_ns; /* one-way propagation */
	uint64_t jitter_ns; /* extra delay, uniform in [0, jitter_ns] */
	bool jitter_fifo; /* jitter never reorders */
	uint32_t queue_bytes; /* serializer buffer; 0: unlimited */
	uint32_t ecn_bytes; /* CE-mark above this backlog; 0: never */
	double loss; /* Bernoulli loss probability */
	double ge_p; /* Gilbert-Elliott good->bad per packet; 0: off */
	double ge_r; /* Gilbert-Elliott bad->good per packet */
	double ge_loss_bad; /* loss probability in the bad state */
	double reorder; /* probability of being held back */
	uint64_t reorder_ns; /* how long */
	double dup; /* duplication probability */
	double corrupt; /* probability of one flipped bit */
	bool blackhole; /* drop everything */
	uint64_t seed; /* same seed, same config, same inputs: same output */
};

struct ovr_link_stats {
	uint64_t sent; /* packets offered */
	uint64_t delivered; /* packets handed out, duplicates included */
	uint64_t bytes_delivered;
	uint64_t tail_drops;
	uint64_t lost; /* Bernoulli and Gilbert-Elliott */
	uint64_t blackholed;
	uint64_t corrupted;
	uint64_t duplicated;
	uint64_t reordered;
	uint64_t ce_marked;
	uint64_t lost_ge; /* of lost: in the Gilbert-Elliott bad state */
};

/* What the receiver learns besides the bytes. */
struct ovr_link_meta {
	uint64_t sent_ns; /* when it was offered */
	uint64_t arrive_ns; /* when it became deliverable */
	bool ce; /* marked Congestion Experienced */
};

struct ovr_link;

/* NULL and errno EINVAL (bad probabilities, max_pkt 0) or ENOMEM. */
struct ovr_link *ovr_link_create(const struct ovr_link_cfg *cfg,
				 uint32_t max_pkt);
void ovr_link_destroy(struct ovr_link *l);

/* Change impairments while packets are in flight; the PRNG continues. */
int ovr_link_set_cfg(struct ovr_link *l, const struct ovr_link_cfg *cfg);

/*
 * Offer @len bytes at time @now_ns. Returns 0 when the packet was taken
 * (it may still be lost on the wire: that is not the sender's business),
 * -ENOBUFS when tail-dropped, -EMSGSIZE when longer than max_pkt,
 * -ENOMEM when no copy could be allocated.
 */
int ovr_link_send(struct ovr_link *l, uint64_t now_ns, const void *pkt,
		  uint32_t len);

/*
 * Take the earliest packet that has arrived by @now_ns: copies it to @buf,
 * stores its length in @len and returns 1; returns 0 when none has
 * arrived, -ENOSPC (packet kept) when @cap is too small. @meta may be NULL.
 */
int ovr_link_recv(struct ovr_link *l, uint64_t now_ns, void *buf, uint32_t cap,
		  uint32_t *len, struct ovr_link_meta *meta);

/* Arrival time of the next packet, UINT64_MAX when none is in flight. */
uint64_t ovr_link_next_ns(const struct ovr_link *l);

/* Packets in flight. */
uint32_t ovr_link_inflight(const struct ovr_link *l);

void ovr_link_get_stats(const struct ovr_link *l, struct ovr_link_stats *s);

/* The link's PRNG (xoshiro256**), exposed for tests that want the same
 * reproducible stream: uniform 64-bit value, and uniform in [0, 1). */
uint64_t ovr_link_rand(struct ovr_link *l);
double ovr_link_rand01(struct ovr_link *l);

#ifdef __cplusplus
}
#endif
#endif /* OVRDMA_LINKEMU_H */
