// SPDX-License-Identifier: MIT
/*
 * Receive window: see rxwin.h. The bitmap is a ring indexed by
 * psn & mask; the bit of ack_psn itself is always clear (it has not
 * arrived), and bits are cleared as ack_psn passes them, so a bit is only
 * ever set for a PSN in (ack_psn, ack_psn + size).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <ovrdma/wire_codec.h>

#include "rxwin.h"

#define M24 OVR_WIRE_PSN_MASK

static inline bool bit_test(const struct ovr_dp_rxwin *w, uint32_t psn)
{
	uint32_t i = psn & w->mask;

	return (w->bits[i >> 6] >> (i & 63)) & 1;
}

static inline void bit_set(struct ovr_dp_rxwin *w, uint32_t psn)
{
	uint32_t i = psn & w->mask;

	w->bits[i >> 6] |= 1ull << (i & 63);
}

static inline void bit_clear(struct ovr_dp_rxwin *w, uint32_t psn)
{
	uint32_t i = psn & w->mask;

	w->bits[i >> 6] &= ~(1ull << (i & 63));
}

int ovr_dp_rxwin_init(struct ovr_dp_rxwin *w, uint64_t *bits, uint32_t size,
		      uint32_t start_psn)
{
	if (size < OVR_DP_RXWIN_MIN || size > OVR_DP_RXWIN_MAX ||
	    (size & (size - 1)) || !bits)
		return -EINVAL;
	memset(bits, 0, ovr_dp_rxwin_words(size) * sizeof(*bits));
	w->bits = bits;
	w->mask = size - 1;
	w->ack_psn = start_psn & M24;
	w->hi_psn = w->ack_psn;
	w->last_psn = (w->ack_psn - 1) & M24;
	for (unsigned int i = 0; i < OVR_DP_RXWIN_PREV; i++)
		w->prev[i] = w->last_psn;
	return 0;
}

/* First PSN in [from, to) whose bit is @want, or @to: a word at a time. */
static uint32_t scan(const struct ovr_dp_rxwin *w, uint32_t from, uint32_t to,
		     bool want)
{
	while (from != to) {
		uint32_t i = from & w->mask;
		uint32_t avail = 64 - (i & 63);
		uint32_t left = (to - from) & M24;
		uint32_t step = avail < left ? avail : left;
		uint64_t word = w->bits[i >> 6];

		if (!want)
			word = ~word;
		word >>= i & 63;
		if (word) {
			uint32_t k = (uint32_t)__builtin_ctzll(word);

			if (k < step)
				return (from + k) & M24;
		}
		from = (from + step) & M24;
	}
	return to;
}

/*
 * The arrivals stop extending last_psn's run: keep last_psn, newest
 * first, unless it only extends the run of the newest one kept (the
 * same block: no bit missing between them).
 */
static void remember(struct ovr_dp_rxwin *w)
{
	uint32_t last = w->last_psn, p0 = w->prev[0];

	if (ovr_wire_psn_diff(last, p0) >= 0 &&
	    ovr_wire_psn_diff(last, w->ack_psn) >= 0 &&
	    ovr_wire_psn_diff(p0, w->ack_psn) >= 0 &&
	    scan(w, p0, last, false) == last) {
		w->prev[0] = last;
		return;
	}
	memmove(&w->prev[1], &w->prev[0],
		(OVR_DP_RXWIN_PREV - 1) * sizeof(w->prev[0]));
	w->prev[0] = last;
}

enum ovr_dp_rx_verdict ovr_dp_rxwin_peek(const struct ovr_dp_rxwin *w,
					 uint32_t psn)
{
	int32_t d;

	psn &= M24;
	d = ovr_wire_psn_diff(psn, w->ack_psn);
	if (d < 0)
		return OVR_DP_RX_DUP;
	if ((uint32_t)d > w->mask)
		return OVR_DP_RX_OUTSIDE;
	if (d == 0)
		return OVR_DP_RX_INORDER;
	return bit_test(w, psn) ? OVR_DP_RX_DUP : OVR_DP_RX_OOO;
}

enum ovr_dp_rx_verdict ovr_dp_rxwin_mark(struct ovr_dp_rxwin *w, uint32_t psn)
{
	enum ovr_dp_rx_verdict v = ovr_dp_rxwin_peek(w, psn);

	if (v == OVR_DP_RX_DUP || v == OVR_DP_RX_OUTSIDE)
		return v;
	psn &= M24;
	if (psn != ((w->last_psn + 1) & M24))
		remember(w);
	w->last_psn = psn;
	if (ovr_wire_psn_diff((psn + 1) & M24, w->hi_psn) > 0)
		w->hi_psn = (psn + 1) & M24;
	if (v == OVR_DP_RX_OOO) {
		bit_set(w, psn);
		return OVR_DP_RX_OOO;
	}
	/* The hole at ack_psn is filled: run over what arrived behind it.
	 * Each bit is cleared once, so this is O(1) amortized per packet. */
	w->ack_psn = (w->ack_psn + 1) & M24;
	while (bit_test(w, w->ack_psn)) {
		bit_clear(w, w->ack_psn);
		w->ack_psn = (w->ack_psn + 1) & M24;
	}
	return OVR_DP_RX_INORDER;
}

/* Is @start the start of one of the first @n blocks? */
static bool listed(const struct ovr_dp_sack *b, unsigned int n, uint32_t start)
{
	for (unsigned int i = 0; i < n; i++)
		if (b[i].start == start)
			return true;
	return false;
}

unsigned int ovr_dp_rxwin_sack(const struct ovr_dp_rxwin *w,
			       struct ovr_dp_sack *blocks, unsigned int max)
{
	enum { NA = 1 + OVR_DP_RXWIN_PREV };
	struct ovr_dp_sack pri[NA];
	uint32_t anchor[NA];
	bool want[NA], found[NA];
	unsigned int n = 0, left = 0, i;
	uint32_t p, s, e;

	if (!max || w->ack_psn == w->hi_psn)
		return 0;
	/* the runs holding the latest arrival and the remembered ones */
	anchor[0] = w->last_psn;
	memcpy(&anchor[1], w->prev, sizeof(w->prev));
	for (i = 0; i < NA; i++) {
		want[i] = ovr_wire_psn_diff(anchor[i], w->ack_psn) > 0 &&
			  ovr_wire_psn_diff(anchor[i], w->hi_psn) < 0;
		found[i] = false;
		left += want[i];
	}
	for (p = w->ack_psn; left && p != w->hi_psn; p = e) {
		s = scan(w, p, w->hi_psn, true);
		if (s == w->hi_psn)
			break;
		e = scan(w, s, w->hi_psn, false);
		for (i = 0; i < NA; i++)
			if (want[i] && ovr_wire_psn_diff(anchor[i], s) >= 0 &&
			    ovr_wire_psn_diff(anchor[i], e) < 0) {
				want[i] = false;
				found[i] = true;
				left--;
				pri[i] = (struct ovr_dp_sack){ s, e };
			}
	}
	for (i = 0; i < NA && n < max; i++)
		if (found[i] && !listed(blocks, n, pri[i].start))
			blocks[n++] = pri[i];
	/* then the others, lowest first */
	for (p = w->ack_psn, i = n; p != w->hi_psn && n < max; p = e) {
		s = scan(w, p, w->hi_psn, true);
		if (s == w->hi_psn)
			break;
		e = scan(w, s, w->hi_psn, false);
		if (!listed(blocks, i, s))
			blocks[n++] = (struct ovr_dp_sack){ s, e };
	}
	return n;
}
