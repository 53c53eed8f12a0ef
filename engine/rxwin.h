/* SPDX-License-Identifier: MIT */
/*
 * Receive window of one QP's inbound PSN space: which packets in
 * [ack_psn, ack_psn + size) have arrived. It decides new vs duplicate vs
 * out of window for every sequenced packet, advances the cumulative ACK
 * over contiguous arrivals, and produces SACK blocks.
 *
 * Memory: size / 8 bytes of bitmap, owned by the caller (no allocation
 * here), plus this struct. A 1024-packet window costs 128 + 40 bytes.
 * Cost: O(1) per packet plus O(packets advanced / 64) when a hole fills;
 * SACK generation scans the words between ack_psn and the highest PSN
 * received, O(size / 64) at worst.
 */
#ifndef OVR_DP_RXWIN_H
#define OVR_DP_RXWIN_H

#include <stdint.h>

#include <ovrdma/wire.h>

#define OVR_DP_RXWIN_PREV 4u

struct ovr_dp_rxwin {
	uint32_t ack_psn; /* next PSN expected: all before it arrived */
	uint32_t hi_psn; /* one past the highest PSN that arrived */
	uint32_t last_psn; /* most recent new arrival (SACK block order) */
	/* the arrivals before the last jumps out of a run, newest first:
	 * their blocks follow last_psn's in the SACK (RFC 2018 §4) */
	uint32_t prev[OVR_DP_RXWIN_PREV];
	uint32_t mask; /* size - 1; size is a power of two */
	uint64_t *bits; /* bit (psn & mask): psn arrived, psn >= ack_psn */
};

enum ovr_dp_rx_verdict {
	OVR_DP_RX_INORDER = 0, /* new, and ack_psn advanced past it */
	OVR_DP_RX_OOO = 1, /* new, beyond a hole: ack_psn unchanged */
	OVR_DP_RX_DUP = 2, /* arrived before: drop, but do ACK */
	OVR_DP_RX_OUTSIDE = 3, /* beyond the window: drop, NAK SEQ_ERR */
};

struct ovr_dp_sack {
	uint32_t start; /* first PSN of a run that arrived */
	uint32_t end; /* one past its last */
};

#define OVR_DP_RXWIN_MIN 64u
#define OVR_DP_RXWIN_MAX 65536u

/* Bitmap words a window of @size packets needs. */
static inline uint32_t ovr_dp_rxwin_words(uint32_t size)
{
	return size / 64;
}

/*
 * Start an empty window expecting @start_psn. @size: a power of two in
 * [OVR_DP_RXWIN_MIN, OVR_DP_RXWIN_MAX]; @bits: ovr_dp_rxwin_words(size)
 * words. Returns 0 or -EINVAL.
 */
int ovr_dp_rxwin_init(struct ovr_dp_rxwin *w, uint64_t *bits, uint32_t size,
		      uint32_t start_psn);

/* What ovr_dp_rxwin_mark() would answer for @psn, without recording it
 * (OOO also for psn == ack_psn is never returned: that is INORDER). */
enum ovr_dp_rx_verdict ovr_dp_rxwin_peek(const struct ovr_dp_rxwin *w,
					 uint32_t psn);

/* Record the arrival of @psn (24-bit). */
enum ovr_dp_rx_verdict ovr_dp_rxwin_mark(struct ovr_dp_rxwin *w, uint32_t psn);

/*
 * Fill up to @max SACK blocks describing what arrived beyond ack_psn: the
 * block holding the most recent arrival first, then the blocks that
 * held the arrivals before the last OVR_DP_RXWIN_PREV jumps (newest
 * first: a run that stopped growing when a loss opened a hole is
 * repeated in the next ACKs, RFC 2018 §4, so the sender learns how it
 * ended even with more holes than blocks), then the others in ascending
 * PSN order. Returns the number of blocks (0 when nothing is
 * missing). The blocks satisfy the wire rules of docs/WIRE.md §3.7.
 */
unsigned int ovr_dp_rxwin_sack(const struct ovr_dp_rxwin *w,
			       struct ovr_dp_sack *blocks, unsigned int max);

#endif /* OVR_DP_RXWIN_H */
