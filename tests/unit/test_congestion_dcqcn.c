// SPDX-License-Identifier: MIT
/*
 * DCQCN (congestion/dcqcn.c) against the reaction point of the HPCC
 * simulator, alibaba-edu/High-Precision-Congestion-Control at commit
 * 9f4be2a9ead8a90e8bf732c66bd758c00e58e5be, file
 * simulation/src/point-to-point/model/rdma-hw.cc ("Mellanox's version of
 * DCQCN", CC_MODE 1). Its rules, as read there (line numbers of that
 * commit; none of its code is used here):
 *
 *  - start (AddQueuePair, 240-244): rate and target rate at line rate;
 *    rdma-queue-pair.cc 39-43: alpha 1, no CNP seen, stage 0.
 *  - first CNP (cnp_received_mlx, 638-653): alpha = 1 (no "+ g" for this
 *    CNP), target = rate = RateOnFirstCnp (1.0) x rate; the alpha timer
 *    and the rate-decrease check start there.
 *  - rate decrease (CheckRateDecreaseMlx, 655-677), checked every
 *    RateDecreaseInterval: if a CNP arrived, target = rate unless no
 *    increase event ran since the last cut (ClampTargetRate 0), then
 *    rate = max(MinRate, rate (1 - alpha / 2)), stage = 0 and the
 *    increase timer restarts.
 *  - alpha (UpdateAlphaMlx, 618-636), every AlphaResumInterval from the
 *    first CNP: (1 - g) alpha + g if a CNP arrived in the period, else
 *    (1 - g) alpha.
 *  - increase events (RateIncEventTimerMlx and RateIncEventMlx, 683-698),
 *    every RPTimer after a cut, timer only (no byte counter): stage <
 *    FastRecoveryTimes: fast recovery, rate = (rate + target) / 2
 *    (699-707); stage == FastRecoveryTimes: target += RateAI, at most
 *    line rate, then the same halving (708-723); above: target +=
 *    RateHAI, a constant (724-738); then stage++.
 *  - parameters (GetTypeId, 22-101; simulation/run.py 19-28 and 99-106):
 *    g 1/256; "dcqcn_paper": RPTimer 55 us, AlphaResumInterval 50 us,
 *    RateDecreaseInterval 50 us; RateAI 5 and RateHAI 50 Mbit/s per
 *    25 Gbit/s; run.py sets FastRecoveryTimes 1 and MinRate 1 Gbit/s,
 *    the attributes' defaults are 5 and 100 Mbit/s, with AlphaResum-
 *    Interval 55 us.
 *
 * dcqcn.c follows the paper: its constants are F 5, K 55 us, T_INC 55 us
 * (the attributes' defaults and the paper), and it cuts when the CNP is
 * taken instead of at the next decrease check (HPCC's cut comes up to
 * RateDecreaseInterval later; both cut at most once per 50 us). With
 * those, one CNP and then silence give the same rate at every increase
 * event in both: the timeline below is worked out by hand from the rules
 * above, step by step. Where the two differ by design (the target clamp
 * when a second CNP comes before any increase event; hyper increase by a
 * constant R_HAI on the timer alone in HPCC, by i R_HAI once both the
 * timer and the byte counter passed F in the paper) the second test
 * stops, and test_congestion.c checks the paper's rules.
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
#define LINE 100e9 /* 100 Gbit/s */
#define PERIOD (55 * US) /* RPTimer, AlphaResumInterval (attribute) */
#define G (1.0 / 256) /* EwmaGain as run.py sets it */
#define RAI (5e6 * 100 / 25) /* run.py: ai = 5 * bw / 25, Mbit/s */

static const struct ovr_cc_ops *const dq = &ovr_cc_dcqcn;

static void start(struct ovr_cc_flow *f, uint64_t now)
{
	struct ovr_cc_params p = {
		.mss = MSS,
		.init_cwnd_bytes = 16 * MSS,
		.max_cwnd_bytes = 1024 * MSS,
		.line_rate_bps = (uint64_t)LINE,
		.base_rtt_ns = 10 * US,
		.now_ns = now,
	};

	memset(f, 0xa5, sizeof(*f));
	assert_int_equal(dq->init(f, &p), 0);
}

/* The published rate at @now, with no CNP (timers caught up). */
static double rate_at(struct ovr_cc_flow *f, uint64_t now)
{
	dq->on_ecn(f, now, 0);
	return (double)f->rate_bps;
}

/* The published rate is a whole number of bit/s. */
#define assert_rate(f, now, expect) assert_within(rate_at(f, now), expect, 1.0)

/*
 * One CNP at line rate, then no more marks.
 *
 * CNP: alpha = 1, target = rate = 100 Gbit/s, rate = 100 (1 - 1/2) = 50.
 * Increase events at 55 us, 110 us, ...:
 *   stages 0-4 (F = 5): fast recovery, rate = (rate + 100) / 2:
 *     75, 87.5, 93.75, 96.875, 98.4375
 *   stage 5: additive, target = min(100 + 0.02, 100) = 100, rate 99.21875
 *   stages 6-: hyper, target = min(100 + 0.2, 100) = 100: the gap to
 *     line rate keeps halving, 50 Gbit/s / 2^k after k events.
 * The rate does not move between events. Alpha decays (1 - g) per 55 us,
 * and the cut of a CNP n periods later reveals it: rate (1 - alpha / 2),
 * alpha = (255/256)^n.
 */
static void test_one_cnp_timeline(void **state)
{
	static const double by_hand[] = {
		50e9, /* the cut */
		75e9,	       87.5e9,	     93.75e9,
		96.875e9,      98.4375e9, /* fast recovery */
		99.21875e9, /* additive, target capped at line rate */
		99.609375e9,   99.8046875e9, 99.90234375e9, /* hyper, capped */
		99.951171875e9
	};
	struct ovr_cc_flow f;
	uint64_t t = T0 + 3 * US;
	double gap;

	(void)state;
	start(&f, T0);
	assert_rate(&f, t, LINE);
	dq->on_ecn(&f, t, 1);
	assert_within(f.rate_bps, by_hand[0], 1.0);
	for (unsigned int k = 1; k < sizeof(by_hand) / sizeof(by_hand[0]);
	     k++) {
		/* unchanged until the event, then the next value */
		assert_rate(&f, t + k * PERIOD - 1, by_hand[k - 1]);
		assert_rate(&f, t + k * PERIOD, by_hand[k]);
	}
	/* events 10 to 35: 50 Gbit/s / 2^k below line rate */
	for (unsigned int k = 10; k < 36; k++) {
		gap = 50e9 / pow(2, k);
		assert_rate(&f, t + k * PERIOD + PERIOD / 2, LINE - gap);
	}
	/* 50 / 2^36 Gbit/s = 0.73 bit/s: back at line rate, and stays */
	assert_rate(&f, t + 36 * PERIOD, LINE);
	assert_rate(&f, t + 100 * PERIOD + 5 * US, LINE);

	/* a CNP 100 periods after the first: alpha = (255/256)^100 =
	 * 0.67610, rate 100 (1 - 0.33805) = 66.195 Gbit/s */
	dq->on_ecn(&f, t + 100 * PERIOD + 5 * US, 1);
	assert_within(f.rate_bps, LINE * (1 - pow(1 - G, 100) / 2), 1.0);
	assert_within(f.rate_bps, 66.195e9, 0.001e9);
}

/*
 * A second CNP 5 us after the first increase event (times counted from
 * the cut, which HPCC makes at its next decrease check): both models set
 * target = rate (HPCC's clamp applies once an event ran since the cut),
 * cut with alpha decayed by the periods since the first CNP, and recover
 * through fast recovery and one additive step.
 *
 * First CNP at t: rate 50, target 100 (as above). At t + 55 us fast
 * recovery: 75. Second CNP at t + 60 us: alpha = 255/256 (one period),
 * target = 75, rate = 75 (1 - 255/512) = 37.6465 Gbit/s. Events at
 * t + 60 us + k 55 us: k = 1-5 fast recovery, rate = (rate + 75) / 2;
 * k = 6 additive, target = 75.02, rate = (rate + 75.02) / 2.
 */
static void test_second_cnp_recovery(void **state)
{
	struct ovr_cc_flow f;
	uint64_t t = T0 + 7 * US, t2 = t + 60 * US;
	double alpha = 1 - G, rc, rt;

	(void)state;
	start(&f, T0);
	dq->on_ecn(&f, t, 1);
	assert_rate(&f, t + PERIOD, 75e9);
	dq->on_ecn(&f, t2, 1);
	rt = 75e9;
	rc = rt * (1 - alpha / 2);
	assert_within(rc, 37.646484375e9, 1.0); /* by hand: 75 (257/512) */
	assert_within(f.rate_bps, rc, 1.0);
	for (unsigned int k = 1; k <= 5; k++) {
		assert_rate(&f, t2 + k * PERIOD - 1, rc);
		rc = (rc + rt) / 2;
		assert_rate(&f, t2 + k * PERIOD, rc);
	}
	/* 75 - 37.353515625 / 32 */
	assert_within(rc, 73.832702636719e9, 1.0);
	rt += RAI;
	rc = (rc + rt) / 2;
	assert_rate(&f, t2 + 6 * PERIOD, rc);
	assert_within(rc, 74.426351318359e9, 1.0);
	/* HPCC's next event would add RateHAI (0.2 Gbit/s) to the target on
	 * the timer alone; the paper's hyper increase also needs the byte
	 * counter past F, and this flow reported no bytes: additive again */
	rt += RAI;
	rc = (rc + rt) / 2;
	assert_rate(&f, t2 + 7 * PERIOD, rc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_cnp_timeline),
		cmocka_unit_test(test_second_cnp_recovery),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
