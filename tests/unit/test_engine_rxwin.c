// SPDX-License-Identifier: MIT
/*
 * Tests of the receive window: verdicts, cumulative ACK, SACK blocks and
 * their order, 24-bit wraparound, and a randomised comparison against a
 * plain reference model.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ovrdma/wire_codec.h>

#include "rxwin.h"

#define M24 OVR_WIRE_PSN_MASK

static uint64_t bits[OVR_DP_RXWIN_MAX / 64];

static void win(struct ovr_dp_rxwin *w, uint32_t size, uint32_t start)
{
	assert_int_equal(ovr_dp_rxwin_init(w, bits, size, start), 0);
}

static void test_init_checks(void **state)
{
	struct ovr_dp_rxwin w;

	(void)state;
	assert_int_equal(ovr_dp_rxwin_init(&w, bits, 32, 0), -EINVAL);
	assert_int_equal(ovr_dp_rxwin_init(&w, bits, 100, 0), -EINVAL);
	assert_int_equal(ovr_dp_rxwin_init(&w, bits, 131072, 0), -EINVAL);
	assert_int_equal(ovr_dp_rxwin_init(&w, NULL, 64, 0), -EINVAL);
	assert_int_equal(ovr_dp_rxwin_init(&w, bits, 64, 0x1234567), 0);
	assert_int_equal(w.ack_psn, 0x234567); /* masked to 24 bits */
}

static void test_in_order(void **state)
{
	struct ovr_dp_rxwin w;
	struct ovr_dp_sack b[8];
	uint32_t i;

	(void)state;
	win(&w, 64, 1000);
	for (i = 0; i < 500; i++) {
		assert_int_equal(ovr_dp_rxwin_mark(&w, 1000 + i),
				 OVR_DP_RX_INORDER);
		assert_int_equal(w.ack_psn, 1001 + i);
		assert_int_equal(ovr_dp_rxwin_sack(&w, b, 8), 0);
	}
	assert_int_equal(ovr_dp_rxwin_mark(&w, 1200), OVR_DP_RX_DUP);
}

static void test_hole_dup_outside(void **state)
{
	struct ovr_dp_rxwin w;
	struct ovr_dp_sack b[8];

	(void)state;
	win(&w, 64, 100);
	assert_int_equal(ovr_dp_rxwin_mark(&w, 101), OVR_DP_RX_OOO);
	assert_int_equal(ovr_dp_rxwin_mark(&w, 102), OVR_DP_RX_OOO);
	assert_int_equal(ovr_dp_rxwin_mark(&w, 102), OVR_DP_RX_DUP);
	assert_int_equal(w.ack_psn, 100);
	assert_int_equal(ovr_dp_rxwin_sack(&w, b, 8), 1);
	assert_int_equal(b[0].start, 101);
	assert_int_equal(b[0].end, 103);
	/* last slot of the window is inside, one more is outside */
	assert_int_equal(ovr_dp_rxwin_mark(&w, 100 + 63), OVR_DP_RX_OOO);
	assert_int_equal(ovr_dp_rxwin_mark(&w, 100 + 64), OVR_DP_RX_OUTSIDE);
	assert_int_equal(ovr_dp_rxwin_mark(&w, 100 + 5000), OVR_DP_RX_OUTSIDE);
	/* far behind is a duplicate, not "outside" */
	assert_int_equal(ovr_dp_rxwin_mark(&w, 99), OVR_DP_RX_DUP);
	assert_int_equal(ovr_dp_rxwin_mark(&w, 100 - 5000), OVR_DP_RX_DUP);
	/* filling the hole runs the ACK over 101, 102 */
	assert_int_equal(ovr_dp_rxwin_mark(&w, 100), OVR_DP_RX_INORDER);
	assert_int_equal(w.ack_psn, 103);
	assert_int_equal(ovr_dp_rxwin_sack(&w, b, 8), 1);
	assert_int_equal(b[0].start, 163);
	assert_int_equal(b[0].end, 164);
}

static void test_sack_order_and_limit(void **state)
{
	struct ovr_dp_rxwin w;
	struct ovr_dp_sack b[8];
	static const uint32_t arrive[] = { 105, 106, 110, 120,
					   121, 130, 140, 111 };
	struct ovr_wire_pkt ack;
	uint8_t buf[256];
	unsigned int i, n;

	(void)state;
	win(&w, 256, 100);
	for (i = 0; i < sizeof(arrive) / sizeof(arrive[0]); i++)
		assert_int_equal(ovr_dp_rxwin_mark(&w, arrive[i]),
				 OVR_DP_RX_OOO);
	n = ovr_dp_rxwin_sack(&w, b, 8);
	assert_int_equal(n, 5);
	/* most recent (111 joined 110) first, then the runs the last
	 * jumps left (140, 130, 121; 110 is the first's), then ascending */
	assert_int_equal(b[0].start, 110);
	assert_int_equal(b[0].end, 112);
	assert_int_equal(b[1].start, 140);
	assert_int_equal(b[1].end, 141);
	assert_int_equal(b[2].start, 130);
	assert_int_equal(b[2].end, 131);
	assert_int_equal(b[3].start, 120);
	assert_int_equal(b[3].end, 122);
	assert_int_equal(b[4].start, 105);
	assert_int_equal(b[4].end, 107);
	/* limited to 3: recent first, then the last jumps' */
	n = ovr_dp_rxwin_sack(&w, b, 3);
	assert_int_equal(n, 3);
	assert_int_equal(b[0].start, 110);
	assert_int_equal(b[1].start, 140);
	assert_int_equal(b[2].start, 130);
	/* the blocks are valid on the wire */
	memset(&ack, 0, sizeof(ack));
	ack.version = OVR_WIRE_VERSION;
	ack.opcode = OVR_OP_ACK;
	ack.flags = OVR_F_ACK;
	ack.ack_psn = w.ack_psn;
	n = ovr_dp_rxwin_sack(&w, b, OVR_WIRE_MAX_SACK);
	ack.u.ack.nsack = (uint8_t)n;
	for (i = 0; i < n; i++) {
		ack.u.ack.sack[i].start = b[i].start;
		ack.u.ack.sack[i].end = b[i].end;
	}
	assert_true(ovr_wire_build(&ack, buf, sizeof(buf)) > 0);
}

/*
 * A stream with more holes than SACK blocks (one loss every 10 packets,
 * 30 holes): every ACK must still report how the run before the newest
 * hole ended, or a sender that sees a later packet delivered takes that
 * run's tail for lost (RACK) and sends it twice.
 */
static void test_sack_more_holes_than_blocks(void **state)
{
	struct ovr_dp_rxwin w;
	struct ovr_dp_sack b[OVR_WIRE_MAX_SACK];
	uint32_t psn, run_start = 0, prev_end = 0;
	unsigned int n, i;

	(void)state;
	win(&w, 1024, 0);
	assert_int_equal(ovr_dp_rxwin_mark(&w, 0), OVR_DP_RX_INORDER);
	for (psn = 1; psn < 300; psn++) {
		bool found = false;

		if (psn % 10 == 1)
			continue; /* lost */
		if (psn % 10 == 2) {
			prev_end = psn - 1 > 10 ? psn - 1 : 0;
			run_start = psn;
		}
		assert_int_equal(ovr_dp_rxwin_mark(&w, psn), OVR_DP_RX_OOO);
		n = ovr_dp_rxwin_sack(&w, b, OVR_WIRE_MAX_SACK);
		assert_int_equal(n,
				 psn < 72 ? (psn + 8) / 10 : OVR_WIRE_MAX_SACK);
		/* the newest run first, whole */
		assert_int_equal(b[0].start, run_start);
		assert_int_equal(b[0].end, psn + 1);
		/* and the run before it, as it ended */
		if (!prev_end)
			continue;
		for (i = 1; i < n; i++)
			if (b[i].start == prev_end - 9 && b[i].end == prev_end)
				found = true;
		assert_true(found);
	}
}

static void test_wraparound(void **state)
{
	struct ovr_dp_rxwin w;
	struct ovr_dp_sack b[8];

	(void)state;
	win(&w, 64, M24 - 2);
	assert_int_equal(ovr_dp_rxwin_mark(&w, 1), OVR_DP_RX_OOO);
	assert_int_equal(ovr_dp_rxwin_mark(&w, M24), OVR_DP_RX_OOO);
	assert_int_equal(ovr_dp_rxwin_sack(&w, b, 8), 2);
	/* the most recent arrival's block ends at the wrap */
	assert_int_equal(b[0].start, M24);
	assert_int_equal(b[0].end, 0);
	assert_int_equal(b[1].start, 1);
	assert_int_equal(b[1].end, 2);
	assert_int_equal(ovr_dp_rxwin_mark(&w, M24 - 2), OVR_DP_RX_INORDER);
	assert_int_equal(w.ack_psn, M24 - 1);
	assert_int_equal(ovr_dp_rxwin_mark(&w, M24 - 1), OVR_DP_RX_INORDER);
	assert_int_equal(w.ack_psn, 0); /* ran over M24, stopped at hole 0 */
	assert_int_equal(ovr_dp_rxwin_mark(&w, 0), OVR_DP_RX_INORDER);
	assert_int_equal(w.ack_psn, 2);
	assert_int_equal(ovr_dp_rxwin_mark(&w, M24), OVR_DP_RX_DUP);
	assert_int_equal(ovr_dp_rxwin_sack(&w, b, 8), 0);
}

/* Random arrivals (reordered, duplicated, some beyond the window) checked
 * against a plain array of booleans. */
static void test_random_against_model(void **state)
{
	enum { N = 40000, SIZE = 1024 };
	static bool seen[N + SIZE * 2];
	struct ovr_dp_rxwin w;
	struct ovr_dp_sack b[64];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint32_t base = M24 - 20000; /* crosses the 24-bit wrap */
	uint32_t ack = 0, sent = 0, k;
	unsigned int n, i;

	(void)state;
	memset(seen, 0, sizeof(seen));
	win(&w, SIZE, base);
	for (k = 0; k < 400000 && ack < N; k++) {
		uint32_t off, psn;
		enum ovr_dp_rx_verdict v, want;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* mostly near the front, sometimes old, sometimes too far */
		off = ack + (uint32_t)(x % (SIZE + 64));
		if (x % 7 == 0 && ack > 50)
			off = ack - 1 - (uint32_t)((x >> 8) % 50);
		if (off > sent)
			sent = off;
		psn = (base + off) & M24;
		if (off < ack || seen[off])
			want = OVR_DP_RX_DUP;
		else if (off >= ack + SIZE)
			want = OVR_DP_RX_OUTSIDE;
		else
			want = off == ack ? OVR_DP_RX_INORDER : OVR_DP_RX_OOO;
		v = ovr_dp_rxwin_mark(&w, psn);
		assert_int_equal(v, want);
		if (v == OVR_DP_RX_INORDER || v == OVR_DP_RX_OOO)
			seen[off] = true;
		while (seen[ack])
			ack++;
		assert_int_equal(w.ack_psn, (base + ack) & M24);

		/* every run beyond ack, exactly, when there is room */
		n = ovr_dp_rxwin_sack(&w, b, 64);
		if (k % 97 == 0 && n < 64) {
			uint32_t runs = 0, o;

			for (o = ack + 1; o < ack + SIZE; o++)
				runs += seen[o] && !seen[o - 1];
			assert_int_equal(n, runs);
			for (i = 0; i < n; i++) {
				uint32_t s = (b[i].start - base) & M24;
				uint32_t e = (b[i].end - base) & M24;

				assert_true(s > ack && s < e);
				assert_true(seen[s] && !seen[s - 1]);
				assert_true(!seen[e] && seen[e - 1]);
			}
		}
	}
	assert_true(ack >= N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_checks),
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_hole_dup_outside),
		cmocka_unit_test(test_sack_order_and_limit),
		cmocka_unit_test(test_sack_more_holes_than_blocks),
		cmocka_unit_test(test_wraparound),
		cmocka_unit_test(test_random_against_model),
	};

	return cmocka_run_group_tests_name("engine_rxwin", tests, NULL, NULL);
}
