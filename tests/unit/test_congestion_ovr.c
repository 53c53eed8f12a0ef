// SPDX-License-Identifier: MIT
/*
 * Tests of "ovr" (congestion/ovr.c): the window that caps what is in
 * flight (rate over the path's RTT and its jitter allowance J, never over
 * a queue), how J is learnt (bounded growth, slow decay, enough samples),
 * the loss classification, bounds and state reset. Expected values are
 * worked out here from the equations in ovr.c's opening comment:
 *
 *   T = 1 us + 0.05 b, v0 = line * (b + T) / 4, R = v / (b + T),
 *   cwnd = R * (b + T + J) + 2 mss,
 *   J' = min(spread, 1.5 J + T) when the round's spread is above J,
 *   J' = J - (J - spread) / 8 otherwise (rounds of 4 samples or more).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "assert_num.h"

#include <ovrdma/cc.h>

#define US 1000ull
#define MS 1000000ull
#define T0 (1000 * MS)

#define MSS 4096u
#define MAXCWND (1024u * MSS)
#define LINE 100000000000ull /* 100 Gbit/s */
#define BASE (10 * US) /* base-RTT hint */
#define TGT (1000.0 + 0.05 * BASE) /* T: 1.5 us */
#define BT (BASE + TGT)

static const struct ovr_cc_ops *const ov = &ovr_cc_ovr;

static struct ovr_cc_params mkparams(uint64_t now)
{
	struct ovr_cc_params p = {
		.mss = MSS,
		.init_cwnd_bytes = 16 * MSS, /* not used by ovr */
		.max_cwnd_bytes = MAXCWND,
		.line_rate_bps = LINE,
		.base_rtt_ns = BASE,
		.now_ns = now,
	};
	return p;
}

static void start(struct ovr_cc_flow *f, uint64_t now)
{
	struct ovr_cc_params p = mkparams(now);

	memset(f, 0xa5, sizeof(*f)); /* init must not rely on a zeroed slot */
	assert_int_equal(ov->init(f, &p), 0);
}

static void ack(struct ovr_cc_flow *f, uint64_t now, uint64_t rtt)
{
	struct ovr_cc_ack a = {
		.now_ns = now,
		.rtt_ns = rtt,
		.min_rtt_ns = BASE,
		.acked_bytes = MSS,
	};
	ov->on_ack(f, &a);
}

/* Bytes per ns of the published rate. */
static double rate_bpns(const struct ovr_cc_flow *f)
{
	return (double)f->rate_bps / 8e9;
}

/* J as the published outputs imply it: cwnd = R (b + T + J) + 2 mss.
 * The outputs are whole bytes and bit/s: a few ns of slack. */
static double jitter_of(const struct ovr_cc_flow *f)
{
	return ((double)f->cwnd_bytes - 2.0 * MSS) / rate_bpns(f) - BT;
}

/* J within what whole bytes of window allow at this rate, plus @tol ns */
#define assert_jitter(f, want, tol) \
	assert_within(jitter_of(f), want, 2.0 / rate_bpns(f) + (tol))

/* Start: a quarter of the line rate, no jitter allowance yet. */
static void test_ovr_init(void **state)
{
	struct ovr_cc_flow f;

	(void)state;
	start(&f, T0);
	assert_int_equal(f.mss, MSS);
	assert_within(f.rate_bps, LINE / 4, 1);
	assert_within(f.cwnd_bytes, LINE / 4 / 8e9 * BT + 2 * MSS, 1);
	assert_within(jitter_of(&f), 0, 2);
}

/* A queue lengthens the RTT, not the window: samples all equal (no
 * spread, no jitter) but 200 us above b leave cwnd at R (b + T) + 2 mss
 * whatever the rate does. */
static void test_ovr_window_ignores_queue(void **state)
{
	struct ovr_cc_flow f;
	uint64_t t = T0;

	(void)state;
	start(&f, t);
	for (int i = 0; i < 20000; i++) { /* 2 ms: rounds of 211.5 us */
		ack(&f, t += 100, BASE + 200 * US);
		assert_jitter(&f, 0, 1);
		assert_true(f.cwnd_bytes <
			    rate_bpns(&f) * (BASE + 200 * US) + 2 * MSS);
	}
	/* and the rate fell towards where a flow keeps its alpha (A_Q
	 * 1.25) in that queue: v = v (b + T) / (b + q) + 1.25 sqrt(v / mss)
	 * mss, v = 7163 B, R = 4.98 Gbit/s, a twentieth of line rate */
	assert_true(f.rate_bps < LINE / 16);
	assert_true(f.rate_bps > 4.98e9);
}

/* Samples alternating b and b + 20 us, one every us, no queue: J climbs
 * to 20 us by at most 1.5 J + T per round, never beyond the spread. */
static void test_ovr_jitter_growth(void **state)
{
	struct ovr_cc_flow f;
	double j = 0, prev = 0;
	int steps = 0;
	uint64_t t = T0;

	(void)state;
	start(&f, t);
	for (int i = 0; i < 400; i++) {
		ack(&f, t += US, (i & 1) ? BASE + 20 * US : BASE);
		j = jitter_of(&f);
		assert_true(j <= 20 * US + 4);
		if (fabs(j - prev) > 4) {
			/* one round's step, as the equation gives it */
			double want = fmin(20.0 * US, 1.5 * prev + TGT);

			assert_within(j, want, 4);
			steps++;
			prev = j;
		}
	}
	assert_within(j, 20 * US, 4);
	/* 1.5, 3.75, 7.1, 12.2, 19.8, 20 us: six rounds */
	assert_int_equal(steps, 6);
}

/* Rounds with fewer than 4 samples teach nothing about J. */
static void test_ovr_jitter_needs_samples(void **state)
{
	struct ovr_cc_flow f;
	uint64_t t = T0;

	(void)state;
	start(&f, t);
	/* a sample every 5 us: at most 3 in a round of b + T = 11.5 us */
	for (int i = 0; i < 200; i++) {
		ack(&f, t += 5 * US, (i & 1) ? BASE + 20 * US : BASE);
		assert_within(jitter_of(&f), 0, 4);
	}
}

/* Once learnt, J decays by an eighth of the gap per quiet round, and
 * never drops at once. */
static void test_ovr_jitter_decay(void **state)
{
	struct ovr_cc_flow f;
	double j, prev;
	uint64_t t = T0;
	int rounds = 0;

	(void)state;
	start(&f, t);
	for (int i = 0; i < 400; i++)
		ack(&f, t += US, (i & 1) ? BASE + 20 * US : BASE);
	prev = jitter_of(&f);
	assert_within(prev, 20 * US, 4);
	for (int i = 0; i < 400; i++) {
		ack(&f, t += US, BASE);
		j = jitter_of(&f);
		assert_true(j <= prev + 4);
		if (prev - j > 4) {
			assert_within(j, prev * 7 / 8, 8);
			rounds++;
			prev = j;
		}
	}
	assert_true(rounds >= 20);
	assert_true(prev < 20 * US * pow(7.0 / 8, 20) + 8);
}

/* Loss without a queue is random: the rate stays. Loss with a queue of
 * 8 T or more is congestion: x0.7, once per round. */
static void test_ovr_loss(void **state)
{
	struct ovr_cc_flow f;
	uint64_t t = T0, r;

	(void)state;
	start(&f, t);
	for (int i = 0; i < 40; i++)
		ack(&f, t += US, BASE);
	r = f.rate_bps;
	ov->on_loss(&f, t += 100, MSS);
	assert_int_equal(f.rate_bps, r);

	/* 16 samples 30 us above b: a queue of 20 T */
	for (int i = 0; i < 60; i++)
		ack(&f, t += US, BASE + 30 * US);
	r = f.rate_bps;
	ov->on_loss(&f, t += 100, MSS);
	assert_within(f.rate_bps, 0.7 * (double)r, 0.7 * (double)r * 1e-6 + 2);
	r = f.rate_bps;
	ov->on_loss(&f, t += 100, MSS); /* same round: no second cut */
	assert_int_equal(f.rate_bps, r);
	/* the window still follows the rate, not the queue */
	assert_true(f.cwnd_bytes < rate_bpns(&f) * (BT + 31 * US) + 2 * MSS);
}

/* The FAST update's alpha: A_Q = 1.25 in a round where every sample saw
 * a standing queue (flows sharing a bottleneck converge faster), A0 =
 * 0.25 in a round with a sample near b. v = R (b + T). */
static void test_ovr_alpha_by_round(void **state)
{
	/* samples are kept in 32 ns units: b + 5 us rounds to 469 units */
	const double rq = 469 * 32.0, q = rq - BASE;
	struct ovr_cc_flow f;
	uint64_t t = T0;
	double v = LINE / 4 / 8e9 * BT, want;

	(void)state;
	start(&f, t);
	/* the first round, all 5 us above b (16 samples): the decrease
	 * branch, which also ends slow start */
	for (int i = 0; i < 120; i++)
		ack(&f, t += 100, (uint64_t)rq);
	want = v * BT / (BASE + q) + 1.25 * sqrt(v / MSS) * MSS;
	assert_within(rate_bpns(&f) * BT, want, 0.01 * BT / 8);
	/* 42.7 KB: with A0 it would be 30.6 KB */
	assert_within(want, 42703, 1);
	v = want;
	/* samples of packets sent after the decrease, at b: a round with no
	 * queue increases with A0 (not slow start's doubling) */
	t += BASE;
	for (int i = 0; i < 150; i++) /* one round: b + q = 15 us */
		ack(&f, t += 100, BASE);
	want = v * BT / BASE + 0.25 * sqrt(v / MSS) * MSS;
	assert_within(rate_bpns(&f) * BT, want, 0.01 * BT / 8);
	assert_within(want, 52415, 1);
}

/* Whatever the samples, losses and timeouts: the rate within
 * [line / 4096, line], the window within [2 mss, the transport's max]. */
static void test_ovr_bounds(void **state)
{
	struct ovr_cc_flow f;
	uint64_t t = T0, x = 88172645463325252ull;

	(void)state;
	start(&f, t);
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		switch (x % 16) {
		case 0:
			ov->on_loss(&f, t, MSS);
			break;
		case 1:
			ov->on_timeout(&f, t);
			break;
		case 2:
			ov->on_ecn(&f, t, 1);
			break;
		default:
			/* RTTs from b to 3 ms: jitter and queues */
			ack(&f, t, BASE + (x >> 8) % (3 * MS));
		}
		t += 1 + (x >> 40) % (4 * US);
		assert_true(f.rate_bps <= LINE);
		assert_true(f.rate_bps >= LINE / 4096 - 1);
		assert_true(f.cwnd_bytes <= MAXCWND);
		assert_true(f.cwnd_bytes >= 2 * MSS);
	}
}

/* init on a used slot gives the same flow as a fresh one: J, the round
 * and the decrease history are gone. */
static void test_ovr_reinit(void **state)
{
	struct ovr_cc_flow f, fresh;
	struct ovr_cc_params p;
	uint64_t t = T0;

	(void)state;
	start(&f, t);
	for (int i = 0; i < 400; i++)
		ack(&f, t += US, (i & 1) ? BASE + 20 * US : BASE);
	for (int i = 0; i < 60; i++)
		ack(&f, t += US, BASE + 30 * US);
	ov->on_loss(&f, t, MSS);
	assert_true(jitter_of(&f) > 10 * US);
	p = mkparams(t);
	assert_int_equal(ov->init(&f, &p), 0);
	start(&fresh, t);
	assert_int_equal(f.cwnd_bytes, fresh.cwnd_bytes);
	assert_int_equal(f.rate_bps, fresh.rate_bps);
	assert_within(jitter_of(&f), 0, 2);
	/* the same samples from here give the same outputs */
	for (int i = 0; i < 100; i++) {
		ack(&f, t += US, (i & 1) ? BASE + 5 * US : BASE);
		ack(&fresh, t, (i & 1) ? BASE + 5 * US : BASE);
		assert_int_equal(f.cwnd_bytes, fresh.cwnd_bytes);
		assert_int_equal(f.rate_bps, fresh.rate_bps);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ovr_init),
		cmocka_unit_test(test_ovr_window_ignores_queue),
		cmocka_unit_test(test_ovr_jitter_growth),
		cmocka_unit_test(test_ovr_jitter_needs_samples),
		cmocka_unit_test(test_ovr_jitter_decay),
		cmocka_unit_test(test_ovr_loss),
		cmocka_unit_test(test_ovr_alpha_by_round),
		cmocka_unit_test(test_ovr_bounds),
		cmocka_unit_test(test_ovr_reinit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
