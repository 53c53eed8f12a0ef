// SPDX-License-Identifier: MIT
/*
 * Tests of the congestion-control baselines (DCQCN, TIMELY, Swift) against
 * their papers' arithmetic, and of the registry. Expected values are worked
 * out here from the papers' formulas, not read back from the code. "ovr"
 * is tested in test_congestion_ovr.c; here it only appears in the registry.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "assert_num.h"

#include <ovrdma/cc.h>

#define US 1000ull
#define MS 1000000ull
#define T0 (1000 * MS) /* flows start well away from time 0 */

#define MSS 4096u
#define MAXCWND (1024u * MSS)
#define LINE 100000000000ull /* 100 Gbit/s */

/* rates and windows: within @rel of b, plus 1 (outputs are whole bit/s
 * and bytes) */
#define assert_near(a, b, rel) \
	assert_within(a, b, (rel)*fabs((double)(b)) + 1.0)

static struct ovr_cc_params mkparams(uint64_t line, uint64_t now)
{
	struct ovr_cc_params p = {
		.mss = MSS,
		.init_cwnd_bytes = 16 * MSS,
		.max_cwnd_bytes = MAXCWND,
		.line_rate_bps = line,
		.base_rtt_ns = 10 * US,
		.hops = 0,
		.now_ns = now,
	};
	return p;
}

static void start(const struct ovr_cc_ops *o, struct ovr_cc_flow *f,
		  const struct ovr_cc_params *p)
{
	memset(f, 0xa5, sizeof(*f)); /* init must not rely on a zeroed slot */
	assert_int_equal(o->init(f, p), 0);
}

static void ack(const struct ovr_cc_ops *o, struct ovr_cc_flow *f, uint64_t now,
		uint64_t rtt, uint64_t min_rtt, uint32_t bytes)
{
	struct ovr_cc_ack a = {
		.now_ns = now,
		.rtt_ns = rtt,
		.min_rtt_ns = min_rtt,
		.acked_bytes = bytes,
		.inflight_bytes = 0,
		.ce_count = 0,
	};
	o->on_ack(f, &a);
}

/* ------------------------------------------------------------------ */
/* DCQCN                                                               */
/* ------------------------------------------------------------------ */

#define D_G (1.0 / 256)
#define D_PERIOD (55 * US) /* alpha and rate-increase timers */
#define D_B 10000000u /* byte counter stage */
#define D_RAI (5e6 * LINE / 25e9) /* 20 Mbit/s at 100G */
#define D_RHAI (50e6 * LINE / 25e9) /* 200 Mbit/s at 100G */

static const struct ovr_cc_ops *const dq = &ovr_cc_dcqcn;

static void cnp(struct ovr_cc_flow *f, uint64_t now)
{
	dq->on_ecn(f, now, 1);
}

static void tick(struct ovr_cc_flow *f, uint64_t now)
{
	dq->on_ecn(f, now, 0); /* catch the timers up, no CNP */
}

static void test_dcqcn_init(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;

	(void)state;
	start(dq, &f, &p);
	assert_int_equal(f.rate_bps, LINE); /* RDMA NICs start at line rate */
	assert_int_equal(f.cwnd_bytes, MAXCWND); /* rate-only */
	assert_int_equal(f.mss, MSS);
	/* without a CNP nothing moves, however long and however much */
	ack(dq, &f, T0 + 10 * MS, 5 * US, 5 * US, 50000000);
	dq->on_loss(&f, T0 + 11 * MS, 100 * MSS);
	dq->on_timeout(&f, T0 + 12 * MS);
	assert_int_equal(f.rate_bps, LINE);
	assert_int_equal(f.cwnd_bytes, MAXCWND);

	p.line_rate_bps = 0; /* unknown: 100 Gbit/s */
	start(dq, &f, &p);
	assert_int_equal(f.rate_bps, 100000000000ull);
	p.line_rate_bps = 25000000000ull;
	start(dq, &f, &p);
	assert_int_equal(f.rate_bps, 25000000000ull);
}

/* Rc = Rc (1 - alpha / 2) with the alpha before the update, then
 * alpha = (1 - g) alpha + g; alpha decays (1 - g) per quiet period. */
static void test_dcqcn_cnp_cut_and_alpha(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	double rc, rt, alpha = 1.0;
	uint64_t t = T0 + US;

	(void)state;
	start(dq, &f, &p);
	cnp(&f, t);
	rc = LINE * (1 - alpha / 2);
	rt = LINE;
	alpha = (1 - D_G) * alpha + D_G;
	assert_near(f.rate_bps, rc, 1e-12);
	assert_near(f.rate_bps, 50e9, 1e-12);

	/* ten quiet periods: five fast-recovery steps, five additive ones
	 * (Rt stays at line rate, its cap), alpha decays ten times */
	for (int k = 1; k <= 10; k++) {
		if (k > 5)
			rt = fmin(rt + D_RAI, LINE);
		rc = (rt + rc) / 2;
		alpha *= 1 - D_G;
	}
	t += 10 * D_PERIOD + 20 * US;
	tick(&f, t);
	assert_near(f.rate_bps, rc, 1e-12);
	assert_near(f.rate_bps, LINE - LINE / 2.0 / 1024, 1e-12);

	/* then CNPs 50 us apart (no timer fires in between) */
	for (int i = 0; i < 6; i++, t += 50 * US) {
		cnp(&f, t);
		rc = rc * (1 - alpha / 2);
		alpha = (1 - D_G) * alpha + D_G;
		assert_near(f.rate_bps, rc, 1e-9);
	}
	assert_true(alpha < 1 && alpha > 0.96);
}

/* The observed cut of a second CNP, n quiet periods after the first,
 * reveals alpha = (1 - g)^n. */
static double alpha_after(unsigned int n, uint64_t extra)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	uint64_t t = T0 + n * D_PERIOD + extra;
	double before;

	start(dq, &f, &p);
	cnp(&f, T0);
	tick(&f, t);
	before = (double)f.rate_bps;
	cnp(&f, t);
	return 2 * (1 - (double)f.rate_bps / before);
}

static void test_dcqcn_alpha_decay(void **state)
{
	(void)state;
	/* 54 us: not a whole period, alpha still 1, the cut halves */
	assert_within(alpha_after(0, 54 * US), 1.0, 1e-9);
	assert_within(alpha_after(1, US), 1 - D_G, 1e-9);
	assert_within(alpha_after(3, US), pow(1 - D_G, 3), 1e-9);
	assert_within(alpha_after(7, 54 * US), pow(1 - D_G, 7), 1e-9);
	assert_within(alpha_after(40, 0), pow(1 - D_G, 40), 1e-9);
}

/* Catching up lazily, in one call, gives what frequent calls give. */
static void test_dcqcn_lazy_timers(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow a, b;
	uint64_t end = T0 + 3 * MS + 7 * US;

	(void)state;
	start(dq, &a, &p);
	start(dq, &b, &p);
	for (int i = 0; i < 3; i++) {
		cnp(&a, T0 + (uint64_t)i * 50 * US);
		cnp(&b, T0 + (uint64_t)i * 50 * US);
	}
	for (uint64_t t = T0 + 100 * US; t < end; t += 3 * US)
		dq->on_loss(&a, t, 0); /* a is called all the time */
	tick(&a, end);
	tick(&b, end); /* b once */
	assert_int_equal(a.rate_bps, b.rate_bps);
	cnp(&a, end);
	cnp(&b, end);
	assert_near(a.rate_bps, b.rate_bps, 1e-12);
}

/* The NP sends at most one CNP per 50 us: marks closer than that to the
 * last CNP taken count for nothing, and do not restart the interval. */
static void test_dcqcn_cnp_interval(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	uint64_t t = T0 + US;

	(void)state;
	start(dq, &f, &p);
	dq->on_ecn(&f, t, 0); /* no marks, no CNP */
	assert_int_equal(f.rate_bps, LINE);
	dq->on_ecn(&f, t, 7); /* several marks: one CNP */
	assert_near(f.rate_bps, 50e9, 1e-12);
	dq->on_ecn(&f, t, 3);
	dq->on_ecn(&f, t + 10 * US, 1);
	dq->on_ecn(&f, t + 40 * US, 2);
	dq->on_ecn(&f, t + 50 * US - 1, 1);
	assert_near(f.rate_bps, 50e9, 1e-12);
	dq->on_ecn(&f, t + 50 * US, 1); /* 50 us after the one taken */
	assert_near(f.rate_bps, 25e9, 1e-12);
	dq->on_ecn(&f, t + 80 * US, 1);
	assert_near(f.rate_bps, 25e9, 1e-12);
	dq->on_ecn(&f, t + 100 * US, 1);
	assert_near(f.rate_bps, 12.5e9, 1e-12);
}

/* A reference of the paper's increase state machine, for the long run. */
struct dref {
	double rc, rt;
	unsigned int t, bc;
};

static void dref_inc(struct dref *r)
{
	unsigned int hi = r->t > r->bc ? r->t : r->bc;
	unsigned int lo = r->t < r->bc ? r->t : r->bc;

	if (hi <= 5)
		;
	else if (lo > 5)
		r->rt += (lo - 5) * D_RHAI;
	else
		r->rt += D_RAI;
	r->rt = fmin(r->rt, LINE);
	r->rc = (r->rt + r->rc) / 2;
}

/* After cuts the rate climbs back: fast recovery halves the gap to Rt,
 * then additive and hyper increase raise Rt, driven by the timer and the
 * byte counter. */
static void test_dcqcn_recovery(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	struct dref r;
	uint64_t t = T0, t2 = T0 + 50 * US;

	(void)state;
	start(dq, &f, &p);
	cnp(&f, t); /* Rt = L, Rc = L/2 */
	cnp(&f, t2); /* Rt = L/2, Rc = L/4 (alpha is still 1) */
	assert_near(f.rate_bps, 25e9, 1e-12);
	r = (struct dref){ .rc = 25e9, .rt = 50e9 };

	tick(&f, t2 + D_PERIOD); /* fast recovery 1: (50 + 25) / 2 */
	assert_near(f.rate_bps, 37.5e9, 1e-12);
	tick(&f, t2 + 5 * D_PERIOD + 54 * US); /* fast recovery 5 */
	assert_near(f.rate_bps, 50e9 - 25e9 / 32, 1e-12);
	tick(&f, t2 + 6 * D_PERIOD); /* additive: Rt = 50.02 G */
	assert_near(f.rate_bps, (50.02e9 + 50e9 - 25e9 / 32) / 2, 1e-12);
	for (r.t = 1; r.t <= 6; r.t++)
		dref_inc(&r);
	r.t = 6;
	assert_near(f.rate_bps, r.rc, 1e-12);

	/* six byte-counter stages at once: BC 1-5 additive (T > F),
	 * BC 6 hyper with i = 1 */
	ack(dq, &f, t2 + 6 * D_PERIOD + 10 * US, 30 * US, 10 * US, 6 * D_B);
	for (r.bc = 1; r.bc <= 6; r.bc++)
		dref_inc(&r);
	r.bc = 6;
	assert_near(f.rate_bps, r.rc, 1e-12);
	assert_near(f.rate_bps, 50.204052734375e9, 1e-12);

	tick(&f, t2 + 7 * D_PERIOD); /* T = 7: i = min(7, 6) - 5 = 1 */
	r.t = 7;
	dref_inc(&r);
	assert_near(f.rate_bps, 50.3620263671875e9, 1e-12);
	/* half a stage twice: one event; BC = 7, i = 2 */
	ack(dq, &f, t2 + 7 * D_PERIOD + US, 30 * US, 10 * US, D_B / 2);
	assert_near(f.rate_bps, r.rc, 1e-12);
	ack(dq, &f, t2 + 7 * D_PERIOD + 2 * US, 30 * US, 10 * US, D_B / 2);
	r.bc = 7;
	dref_inc(&r);
	assert_near(f.rate_bps, r.rc, 1e-12);
	assert_near(f.rate_bps, 50.64101318359375e9, 1e-12);

	/* long after: back at line rate, never above */
	for (uint64_t s = 8; s < 400; s++) {
		tick(&f, t2 + s * D_PERIOD);
		assert_true(f.rate_bps <= LINE);
		assert_true(f.rate_bps >= (uint64_t)r.rc);
	}
	tick(&f, t2 + 2000 * MS);
	assert_int_equal(f.rate_bps, LINE);
}

static void test_dcqcn_bounds(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	uint64_t t = T0, rate;

	(void)state;
	start(dq, &f, &p);
	/* a CNP every 50 us for 20 ms: alpha stays near 1, the rate halves
	 * and rests on the 100 Mbit/s floor */
	for (int i = 0; i < 400; i++, t += 50 * US) {
		cnp(&f, t);
		assert_true(f.rate_bps >= 100000000ull);
		assert_true(f.rate_bps <= LINE);
		assert_int_equal(f.cwnd_bytes, MAXCWND);
	}
	assert_int_equal(f.rate_bps, 100000000ull);

	/* loss and timeouts leave the rate alone (the paper has neither) */
	rate = f.rate_bps;
	dq->on_loss(&f, t - 50 * US + 1, 10 * MSS);
	dq->on_timeout(&f, t - 50 * US + 2);
	assert_int_equal(f.rate_bps, rate);
	assert_int_equal(f.cwnd_bytes, MAXCWND);

	/* a NIC slower than the floor: the floor is the NIC */
	p.line_rate_bps = 50000000ull;
	start(dq, &f, &p);
	cnp(&f, T0);
	assert_int_equal(f.rate_bps, 50000000ull);

	/* no maximum from the transport: the window is unbounded, never 0 */
	p = mkparams(LINE, T0);
	p.max_cwnd_bytes = 0;
	start(dq, &f, &p);
	assert_int_equal(f.cwnd_bytes, UINT32_MAX);
}

static void test_dcqcn_reinit(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f, fresh;
	uint64_t t = T0;

	(void)state;
	for (int i = 0; i < 20; i++, t += 60 * US) {
		if (i == 0)
			start(dq, &f, &p);
		cnp(&f, t);
		ack(dq, &f, t + US, 20 * US, 10 * US, 3 * D_B);
	}
	assert_true(f.rate_bps < LINE);
	p.now_ns = t + 13 * US;
	start(dq, &fresh, &p);
	assert_int_equal(dq->init(&f, &p), 0);
	assert_int_equal(f.rate_bps, fresh.rate_bps);
	assert_int_equal(f.cwnd_bytes, fresh.cwnd_bytes);
	assert_int_equal(f.mss, fresh.mss);
	/* and the state behind them: alpha back at 1, Rc at line rate */
	cnp(&f, p.now_ns + US);
	cnp(&fresh, p.now_ns + US);
	assert_int_equal(f.rate_bps, fresh.rate_bps);
	assert_near(f.rate_bps, 50e9, 1e-12);
}

/* ------------------------------------------------------------------ */
/* TIMELY                                                              */
/* ------------------------------------------------------------------ */

#define TM_SEG 65536u
#define TM_DELTA 40e6
#define TM_BETA 0.8
#define TM_EWMA 0.02
#define TM_MINRTT (10 * US)

static const struct ovr_cc_ops *const tm = &ovr_cc_timely;

/* one completion event: a segment acked with this RTT */
static void seg(struct ovr_cc_flow *f, uint64_t now, uint64_t rtt)
{
	ack(tm, f, now, rtt, TM_MINRTT, TM_SEG);
}

static void test_timely_init(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;

	(void)state;
	start(tm, &f, &p);
	assert_int_equal(f.rate_bps, LINE);
	assert_int_equal(f.cwnd_bytes, MAXCWND);
	assert_int_equal(f.mss, MSS);
	p.line_rate_bps = 0;
	start(tm, &f, &p);
	assert_int_equal(f.rate_bps, 100000000000ull);
}

/* Above T_high: rate *= 1 - beta (1 - T_high / rtt), whatever the
 * gradient. */
static void test_timely_above_thigh(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	double rate = LINE;

	(void)state;
	start(tm, &f, &p);
	seg(&f, T0 + 1 * MS, 2000 * US);
	rate *= 1 - TM_BETA * (1 - 1000.0 / 2000);
	assert_near(f.rate_bps, rate, 1e-12);
	assert_near(f.rate_bps, 0.6 * LINE, 1e-12);
	seg(&f, T0 + 2 * MS, 4000 * US);
	rate *= 1 - TM_BETA * (1 - 1000.0 / 4000);
	assert_near(f.rate_bps, 0.24 * LINE, 1e-12);
	/* falling RTT, still above T_high: still a decrease */
	seg(&f, T0 + 3 * MS, 1500 * US);
	rate *= 1 - TM_BETA * (1 - 1000.0 / 1500);
	assert_near(f.rate_bps, rate, 1e-12);
}

/* Below T_low: rate += delta per completion (64 KB of ACKs); no
 * hyper-active increase there. */
static void test_timely_below_tlow(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	uint64_t t = T0;
	double rate;

	(void)state;
	start(tm, &f, &p);
	seg(&f, t += MS, 2000 * US);
	rate = 0.6 * LINE;
	for (int i = 0; i < 8; i++) { /* gradients negative all along */
		seg(&f, t += 10 * US, 20 * US);
		rate += TM_DELTA;
		assert_near(f.rate_bps, rate, 1e-12);
	}
	/* half a segment is no completion; the next half is */
	ack(tm, &f, t += 10 * US, 20 * US, TM_MINRTT, TM_SEG / 2);
	assert_near(f.rate_bps, rate, 1e-12);
	ack(tm, &f, t += 10 * US, 20 * US, TM_MINRTT, TM_SEG / 2);
	rate += TM_DELTA;
	assert_near(f.rate_bps, rate, 1e-12);
	/* three segments in one ACK: three completions */
	ack(tm, &f, t += 10 * US, 20 * US, TM_MINRTT, 3 * TM_SEG);
	rate += 3 * TM_DELTA;
	assert_near(f.rate_bps, rate, 1e-12);
	/* an ACK without a sample uses the last one */
	ack(tm, &f, t += 10 * US, 0, TM_MINRTT, TM_SEG);
	rate += TM_DELTA;
	assert_near(f.rate_bps, rate, 1e-12);
	/* no sample at all yet: no update */
	start(tm, &f, &p);
	ack(tm, &f, T0, 0, 0, 10 * TM_SEG);
	assert_int_equal(f.rate_bps, LINE);
}

/* Between T_low and T_high the smoothed, normalised gradient decides:
 * <= 0 additive (5 delta after 5 negative gradients in a row), > 0
 * rate *= 1 - beta * gradient. */
static void test_timely_gradient(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	uint64_t t = T0;
	double rate, diff;

	(void)state;
	start(tm, &f, &p);
	seg(&f, t += MS, 2000 * US); /* 0.6 L, gradient 0 (first sample) */
	rate = 0.6 * LINE;
	seg(&f, t += 10 * US, 500 * US); /* diff -1500 us: gradient -3 */
	rate += TM_DELTA;
	assert_near(f.rate_bps, rate, 1e-12);
	for (int n = 2; n <= 7; n++) { /* flat RTT: the EWMA stays < 0 */
		seg(&f, t += 10 * US, 500 * US);
		rate += (n >= 5 ? 5 : 1) * TM_DELTA;
		assert_near(f.rate_bps, rate, 1e-12);
	}
	assert_near(f.rate_bps, 0.6 * LINE + 19 * TM_DELTA, 1e-12);

	/* rising RTT from a clean start: diff 500 us, EWMA 10 us, gradient
	 * 10 us / 10 us = 1: rate *= 1 - 0.8 */
	start(tm, &f, &p);
	seg(&f, t += 10 * US, 100 * US); /* first: gradient 0, at line */
	assert_int_equal(f.rate_bps, LINE);
	seg(&f, t += 10 * US, 600 * US);
	assert_near(f.rate_bps, 0.2 * LINE, 1e-12);
	seg(&f, t += 10 * US, 600 * US); /* EWMA 9.8 us: gradient 0.98 */
	diff = (1 - TM_EWMA) * 10000.0;
	assert_near(f.rate_bps, 0.2 * LINE * (1 - TM_BETA * diff / 10000.0),
		    1e-12);
	/* gradient > 1.25: the formula goes negative, the floor holds */
	seg(&f, t += 10 * US, 990 * US);
	assert_int_equal(f.rate_bps, 40000000ull);

	/* min_rtt: the transport's, else the base RTT hint (10 us here) */
	start(tm, &f, &p);
	ack(tm, &f, t += 10 * US, 100 * US, 0, TM_SEG);
	ack(tm, &f, t += 10 * US, 600 * US, 0, TM_SEG);
	assert_near(f.rate_bps, 0.2 * LINE, 1e-12);
}

static void test_timely_bounds_and_signals(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	uint64_t t = T0;
	uint64_t rate;

	(void)state;
	start(tm, &f, &p);
	for (int i = 0; i < 200; i++) {
		seg(&f, t += 10 * US, 10 * MS);
		assert_true(f.rate_bps >= 40000000ull);
		assert_int_equal(f.cwnd_bytes, MAXCWND);
	}
	assert_int_equal(f.rate_bps, 40000000ull); /* eRPC's floor */
	/* ECN, loss and timeouts: TIMELY has no reaction to them */
	rate = f.rate_bps;
	tm->on_ecn(&f, t + 1, 50);
	tm->on_loss(&f, t + 2, 10 * MSS);
	tm->on_timeout(&f, t + 3);
	assert_int_equal(f.rate_bps, rate);
	assert_int_equal(f.cwnd_bytes, MAXCWND);
	for (int i = 0; i < 5000; i++) {
		seg(&f, t += 10 * US, 20 * US);
		assert_true(f.rate_bps <= LINE);
	}
	assert_int_equal(f.rate_bps, LINE);
}

static void test_timely_reinit(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f, fresh;
	uint64_t t = T0;

	(void)state;
	start(tm, &f, &p);
	seg(&f, t += 10 * US, 100 * US);
	seg(&f, t += 10 * US, 2000 * US);
	ack(tm, &f, t += 10 * US, 300 * US, 0, TM_SEG / 3);
	assert_true(f.rate_bps < LINE);
	start(tm, &fresh, &p);
	assert_int_equal(tm->init(&f, &p), 0);
	assert_int_equal(f.rate_bps, fresh.rate_bps);
	assert_int_equal(f.cwnd_bytes, fresh.cwnd_bytes);
	/* no leftover segment bytes, prev_rtt or EWMA */
	seg(&f, t += 10 * US, 100 * US);
	seg(&fresh, t, 100 * US);
	seg(&f, t += 10 * US, 600 * US);
	seg(&fresh, t, 600 * US);
	assert_int_equal(f.rate_bps, fresh.rate_bps);
	assert_near(f.rate_bps, 0.2 * LINE, 1e-12);
}

/* ------------------------------------------------------------------ */
/* Swift                                                               */
/* ------------------------------------------------------------------ */

#define SW_BETA 0.8
#define SW_MAX_MDF 0.5

static const struct ovr_cc_ops *const sw = &ovr_cc_swift;

/* Swift S3.5: base 25 us + hops * 1 us + flow scaling over [0.1, 100]
 * packets with a range of 5 * 25 us. */
static double sw_target(double cwnd, unsigned int hops)
{
	double range = 5 * 25000.0;
	double a = range / (1 / sqrt(0.1) - 1 / sqrt(100.0));
	double b = -a / sqrt(100.0);
	double fs = a / sqrt(cwnd) + b;

	fs = fs < 0 ? 0 : fs > range ? range : fs;
	return 25000.0 + hops * 1000.0 + fs;
}

static double sw_md(double cwnd, double delay, unsigned int hops)
{
	double t = sw_target(cwnd, hops);

	return cwnd * fmax(1 - SW_BETA * (delay - t) / delay, 1 - SW_MAX_MDF);
}

static double pkts(const struct ovr_cc_flow *f)
{
	return (double)f->cwnd_bytes / MSS;
}

static void test_swift_init(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;

	(void)state;
	start(sw, &f, &p);
	assert_int_equal(f.cwnd_bytes, 16 * MSS); /* the transport's hint */
	assert_int_equal(f.rate_bps, 0); /* no pacing at >= 1 packet */
	assert_int_equal(f.mss, MSS);
	p.init_cwnd_bytes = 0;
	start(sw, &f, &p);
	assert_int_equal(f.cwnd_bytes, 10 * MSS);
	/* a first window above the maximum is clamped, and that is not a
	 * decrease: the first loss may still cut */
	p.init_cwnd_bytes = 2 * MAXCWND;
	start(sw, &f, &p);
	assert_int_equal(f.cwnd_bytes, MAXCWND);
	sw->on_loss(&f, T0 + 1, MSS);
	assert_int_equal(f.cwnd_bytes, MAXCWND / 2);
	p.init_cwnd_bytes = 16 * MSS;
	p.mss = 0;
	memset(&f, 0, sizeof(f));
	assert_int_equal(sw->init(&f, &p), -EINVAL);
	assert_true(f.cwnd_bytes > 0);
	/* the flow's sample-less target: sw_target(16) = 31.1 us */
	assert_near(sw_target(16, 0),
		    25000 + 0.15 * 125000 / 3.0622776601683795, 1e-12);
}

/* Below target: cwnd += ai / cwnd * num_acked. */
static void test_swift_ai(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	double w = 16, w0;

	(void)state;
	start(sw, &f, &p);
	ack(sw, &f, T0 + 10 * US, 10 * US, 10 * US, MSS);
	w += 1 / w;
	assert_int_equal(f.cwnd_bytes, 65792); /* 16.0625 packets */
	ack(sw, &f, T0 + 20 * US, 10 * US, 10 * US, 4 * MSS);
	w += 4 / w;
	assert_near(f.cwnd_bytes, w * MSS, 1e-9);
	ack(sw, &f, T0 + 30 * US, 10 * US, 10 * US, MSS / 2);
	w += 0.5 / w;
	assert_near(f.cwnd_bytes, w * MSS, 1e-9);
	/* a window's worth of ACKs adds about one packet */
	w0 = w;
	for (int i = 0; i < 16; i++) {
		ack(sw, &f, T0 + 40 * US, 10 * US, 10 * US, MSS);
		w += 1 / w;
	}
	assert_near(f.cwnd_bytes, w * MSS, 1e-9);
	assert_true(pkts(&f) - w0 > 0.9 && pkts(&f) - w0 < 1.0);
	assert_int_equal(f.rate_bps, 0);
}

/* Above target: cwnd *= max(1 - beta (delay - target) / delay, 1 -
 * max_mdf), at most once per RTT. */
static void test_swift_md(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	double w = 16;
	uint64_t t = T0 + 100 * US;

	(void)state;
	start(sw, &f, &p);
	ack(sw, &f, t, 40 * US, 10 * US, MSS);
	w = sw_md(w, 40000, 0);
	assert_near(f.cwnd_bytes, w * MSS, 1e-9);
	assert_true(w > 13.1 && w < 13.2); /* factor 0.8225 */
	/* within one RTT (40 us) of it: no second decrease */
	ack(sw, &f, t + 20 * US, 40 * US, 10 * US, MSS);
	ack(sw, &f, t + 40 * US - 1, 40 * US, 10 * US, MSS);
	assert_near(f.cwnd_bytes, w * MSS, 1e-9);
	/* ... but an increase is fine */
	ack(sw, &f, t + 41 * US, 10 * US, 10 * US, MSS);
	w += 1 / w;
	assert_near(f.cwnd_bytes, w * MSS, 1e-9);
	/* 51 us after the decrease: more than one RTT (40 us) */
	ack(sw, &f, t + 51 * US, 40 * US, 10 * US, MSS);
	w = sw_md(w, 40000, 0);
	assert_near(f.cwnd_bytes, w * MSS, 1e-9);
}

/* A large delay is capped at max_mdf: the window halves, not less. */
static void test_swift_md_bounded(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	uint64_t t = T0;

	(void)state;
	start(sw, &f, &p);
	ack(sw, &f, t += MS, 1000 * US, 10 * US, MSS);
	assert_int_equal(f.cwnd_bytes, 8 * MSS);
	ack(sw, &f, t += MS, 1000 * US, 10 * US, MSS);
	assert_int_equal(f.cwnd_bytes, 4 * MSS);
	for (int i = 0; i < 100; i++) {
		uint32_t before = f.cwnd_bytes;

		ack(sw, &f, t += MS, 1000 * US, 10 * US, MSS);
		assert_true(f.cwnd_bytes >= before / 2);
	}
}

/* Hops raise the target by 1 us each. */
static void test_swift_hops(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow flat, deep;

	(void)state;
	start(sw, &flat, &p);
	p.hops = 10;
	start(sw, &deep, &p);
	/* 35 us: above 31.1 us (no hops), below 41.1 us (10 hops) */
	ack(sw, &flat, T0 + MS, 35 * US, 10 * US, MSS);
	ack(sw, &deep, T0 + MS, 35 * US, 10 * US, MSS);
	assert_near(flat.cwnd_bytes, sw_md(16, 35000, 0) * MSS, 1e-9);
	assert_int_equal(deep.cwnd_bytes, 65792);
}

/* Fast-recovery loss: halve, at most once per RTT. ECN: nothing. */
static void test_swift_loss_and_ecn(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	uint64_t t = T0 + MS;

	(void)state;
	start(sw, &f, &p);
	sw->on_ecn(&f, t, 100);
	assert_int_equal(f.cwnd_bytes, 16 * MSS);
	sw->on_loss(&f, t, MSS); /* no decrease yet: allowed */
	assert_int_equal(f.cwnd_bytes, 8 * MSS);
	sw->on_loss(&f, t + 5 * US, MSS); /* rtt: the 10 us hint */
	assert_int_equal(f.cwnd_bytes, 8 * MSS);
	sw->on_loss(&f, t + 10 * US, MSS);
	assert_int_equal(f.cwnd_bytes, 4 * MSS);
	ack(sw, &f, t + 11 * US, 100 * US, 10 * US, 0); /* rtt now 100 us */
	sw->on_loss(&f, t + 60 * US, MSS);
	assert_int_equal(f.cwnd_bytes, 4 * MSS);
	sw->on_loss(&f, t + 110 * US, MSS);
	assert_int_equal(f.cwnd_bytes, 2 * MSS);
}

/* RTO: halve (once per RTT); RETX_RESET_THRESHOLD (5) in a row without
 * an ACK between them: the minimum window, 0.001 packet, paced. */
static void test_swift_rto(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	uint64_t t = T0 + MS;

	(void)state;
	start(sw, &f, &p);
	ack(sw, &f, t, 20 * US, 10 * US, 0); /* an RTT sample, no growth */
	assert_int_equal(f.cwnd_bytes, 16 * MSS);
	for (int i = 1; i <= 4; i++) {
		sw->on_timeout(&f, t += MS);
		assert_int_equal(f.cwnd_bytes, (16u >> i) * MSS);
		assert_int_equal(f.rate_bps, 0);
	}
	sw->on_timeout(&f, t += MS);
	assert_int_equal(f.cwnd_bytes, 4); /* 0.001 * 4096 */
	/* one packet per rtt / cwnd: 0.001 * 4096 B * 8 / 20 us */
	assert_int_equal(f.rate_bps, 1638400);

	/* timeouts closer than an RTT do not halve, but still count */
	start(sw, &f, &p);
	ack(sw, &f, t, 20 * US, 10 * US, 0);
	sw->on_timeout(&f, t += 10 * US);
	assert_int_equal(f.cwnd_bytes, 8 * MSS);
	for (int i = 2; i <= 4; i++) { /* within 15 us of the decrease */
		sw->on_timeout(&f, t += 5 * US);
		assert_int_equal(f.cwnd_bytes, 8 * MSS);
	}
	sw->on_timeout(&f, t += 1 * US);
	assert_int_equal(f.cwnd_bytes, 4);

	/* an ACK between them resets the count */
	start(sw, &f, &p);
	for (int i = 0; i < 4; i++)
		sw->on_timeout(&f, t += MS);
	assert_int_equal(f.cwnd_bytes, 1 * MSS);
	ack(sw, &f, t += 10 * US, 1000 * US, 10 * US, 0);
	sw->on_timeout(&f, t += 10 * MS);
	assert_int_equal(f.cwnd_bytes, MSS / 2);
}

/* Below one packet: rate = cwnd * mss / rtt; at or above, no pacing. */
static void test_swift_pacing(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	double w;

	(void)state;
	p.init_cwnd_bytes = MSS / 2;
	start(sw, &f, &p);
	assert_int_equal(f.cwnd_bytes, MSS / 2);
	/* before any sample: the base RTT hint, 10 us */
	assert_int_equal(f.rate_bps, 1638400000ull);
	ack(sw, &f, T0 + 30 * US, 20 * US, 10 * US, 0);
	assert_int_equal(f.rate_bps, 819200000ull); /* 0.5 * 4096 * 8 / 20us */
	/* below one packet the increase is ai * num_acked */
	ack(sw, &f, T0 + 40 * US, 20 * US, 10 * US, MSS / 4);
	w = 0.5 + 0.25;
	assert_int_equal(f.cwnd_bytes, (uint32_t)(w * MSS));
	assert_near(f.rate_bps, w * MSS * 8 * 1e9 / 20000, 1e-9);
	ack(sw, &f, T0 + 50 * US, 20 * US, 10 * US, MSS / 4);
	assert_int_equal(f.cwnd_bytes, MSS); /* one packet: pacing off */
	assert_int_equal(f.rate_bps, 0);
}

static void test_swift_bounds(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f;
	uint64_t t = T0;

	(void)state;
	start(sw, &f, &p);
	for (int i = 0; i < 20000; i++) {
		ack(sw, &f, t += US, 5 * US, 5 * US, 64 * MSS);
		assert_true(f.cwnd_bytes <= MAXCWND);
	}
	assert_int_equal(f.cwnd_bytes, MAXCWND);
	for (int i = 0; i < 100; i++) {
		sw->on_timeout(&f, t += MS);
		assert_true(f.cwnd_bytes >= 1);
		ack(sw, &f, t += US, 10 * MS, 5 * US, MSS);
		sw->on_loss(&f, t += MS, MSS);
		assert_true(f.cwnd_bytes >= 4); /* 0.001 packet */
		assert_true(f.rate_bps <= LINE);
	}
	/* a small MSS: 0.001 packet is under a byte; the window is 1 */
	p.mss = 100;
	start(sw, &f, &p);
	for (int i = 0; i < 5; i++)
		sw->on_timeout(&f, t += MS);
	assert_int_equal(f.cwnd_bytes, 1);
	assert_true(f.rate_bps > 0);
}

static void test_swift_reinit(void **state)
{
	struct ovr_cc_params p = mkparams(LINE, T0);
	struct ovr_cc_flow f, fresh;
	uint64_t t = T0;

	(void)state;
	start(sw, &f, &p);
	for (int i = 0; i < 5; i++)
		sw->on_timeout(&f, t += 10 * US);
	/* 100 us: below the 150 us target of a tiny window; + ai * 1 */
	ack(sw, &f, t += 10 * US, 100 * US, 10 * US, MSS);
	assert_int_equal(f.cwnd_bytes, 4100); /* 1.001 packets */
	p.now_ns = t;
	start(sw, &fresh, &p);
	assert_int_equal(sw->init(&f, &p), 0);
	assert_int_equal(f.cwnd_bytes, fresh.cwnd_bytes);
	assert_int_equal(f.rate_bps, fresh.rate_bps);
	/* no leftover decrease time or retransmit count */
	sw->on_loss(&f, t + 1, MSS);
	sw->on_loss(&fresh, t + 1, MSS);
	assert_int_equal(f.cwnd_bytes, 8 * MSS);
	assert_int_equal(f.cwnd_bytes, fresh.cwnd_bytes);
	for (int i = 0; i < 3; i++) {
		sw->on_timeout(&f, t += MS);
		sw->on_timeout(&fresh, t);
	}
	assert_int_equal(f.cwnd_bytes, MSS);
	assert_int_equal(f.cwnd_bytes, fresh.cwnd_bytes);
}

/* ------------------------------------------------------------------ */
/* Registry                                                            */
/* ------------------------------------------------------------------ */

static const char *const builtin_names[] = { "ovr", "dcqcn", "timely", "swift",
					     "fixed" };
#define NBUILTIN (sizeof(builtin_names) / sizeof(builtin_names[0]))

static void test_registry_builtins(void **state)
{
	const struct ovr_cc_ops *list[OVR_CC_MAX_ALGS];
	size_t n;

	(void)state;
	for (size_t i = 0; i < NBUILTIN; i++) {
		const struct ovr_cc_ops *o = ovr_cc_find(builtin_names[i]);

		assert_non_null(o);
		assert_string_equal(o->name, builtin_names[i]);
		assert_int_equal(ovr_cc_ops_validate(o), 0);
		assert_true(o->priv_size <= OVR_CC_PRIV_BYTES);
	}
	assert_ptr_equal(ovr_cc_find("dcqcn"), &ovr_cc_dcqcn);
	assert_ptr_equal(ovr_cc_find("timely"), &ovr_cc_timely);
	assert_ptr_equal(ovr_cc_find("swift"), &ovr_cc_swift);
	assert_ptr_equal(ovr_cc_find("fixed"), &ovr_cc_fixed);
	assert_ptr_equal(ovr_cc_find("ovr"), &ovr_cc_ovr);
	assert_ptr_equal(ovr_cc_default(), &ovr_cc_ovr);
	assert_null(ovr_cc_find("cubic"));
	assert_null(ovr_cc_find("DCQCN"));
	assert_null(ovr_cc_find(""));
	assert_null(ovr_cc_find(NULL));

	n = ovr_cc_list(list, OVR_CC_MAX_ALGS);
	assert_int_equal(n, NBUILTIN);
	for (size_t i = 0; i < n; i++)
		assert_ptr_equal(ovr_cc_find(list[i]->name), list[i]);
	assert_int_equal(ovr_cc_list(NULL, 0), NBUILTIN);
	assert_int_equal(ovr_cc_list(list, 2), NBUILTIN); /* fills 2 */
}

static void test_registry_invalid(void **state)
{
	struct ovr_cc_ops o;

	(void)state;
	assert_int_equal(ovr_cc_register(NULL), -EINVAL);
	/* each required hook missing in turn */
	for (int i = 0; i < 6; i++) {
		o = ovr_cc_fixed;
		o.name = "broken";
		switch (i) {
		case 0:
			o.on_ack = NULL;
			break;
		case 1:
			o.on_ecn = NULL;
			break;
		case 2:
			o.on_loss = NULL;
			break;
		case 3:
			o.on_timeout = NULL;
			break;
		case 4:
			o.init = NULL;
			break;
		default:
			o.name = NULL;
			break;
		}
		assert_int_equal(ovr_cc_register(&o), -EINVAL);
	}
	o = ovr_cc_fixed;
	o.release = NULL; /* optional */
	o.name = "fine";
	assert_int_equal(ovr_cc_ops_validate(&o), 0);
	o.name = "Bad-Name";
	assert_int_equal(ovr_cc_register(&o), -EINVAL);
	o.name = "has space";
	assert_int_equal(ovr_cc_register(&o), -EINVAL);
	o.name = "";
	assert_int_equal(ovr_cc_register(&o), -EINVAL);
	o.name = "abcdefghijklmnop"; /* 16 characters: no room for the NUL */
	assert_int_equal(ovr_cc_register(&o), -EINVAL);
	o.name = "abcdefghijklmno"; /* 15: fits */
	assert_int_equal(ovr_cc_ops_validate(&o), 0);
	o.name = "ok_name_9";
	o.priv_size = OVR_CC_PRIV_BYTES + 1;
	assert_int_equal(ovr_cc_register(&o), -EINVAL);
	o.priv_size = OVR_CC_PRIV_BYTES;
	assert_int_equal(ovr_cc_ops_validate(&o), 0);
	assert_int_equal(ovr_cc_list(NULL, 0), NBUILTIN); /* none got in */
}

static void test_registry_register(void **state)
{
	static char names[OVR_CC_MAX_ALGS][OVR_CC_NAME_MAX];
	static struct ovr_cc_ops extra[OVR_CC_MAX_ALGS];
	struct ovr_cc_ops dup = ovr_cc_fixed;
	size_t room = OVR_CC_MAX_ALGS - NBUILTIN;

	(void)state;
	/* a built-in's name is taken */
	dup.name = "dcqcn";
	assert_int_equal(ovr_cc_register(&dup), -EEXIST);
	assert_int_equal(ovr_cc_unregister(&ovr_cc_dcqcn), -EPERM);
	assert_int_equal(ovr_cc_unregister(&ovr_cc_ovr), -EPERM);
	assert_int_equal(ovr_cc_unregister(&dup), -ENOENT);
	assert_int_equal(ovr_cc_unregister(NULL), -EINVAL);

	for (size_t i = 0; i <= room; i++) {
		snprintf(names[i], sizeof(names[i]), "extra_%zu", i);
		extra[i] = ovr_cc_fixed;
		extra[i].name = names[i];
	}
	for (size_t i = 0; i < room; i++) {
		assert_int_equal(ovr_cc_register(&extra[i]), 0);
		assert_ptr_equal(ovr_cc_find(names[i]), &extra[i]);
	}
	assert_int_equal(ovr_cc_list(NULL, 0), OVR_CC_MAX_ALGS);
	assert_int_equal(ovr_cc_register(&extra[room]), -ENOSPC);
	assert_null(ovr_cc_find(names[room]));
	/* a taken name is -EEXIST even when full */
	assert_int_equal(ovr_cc_register(&extra[0]), -EEXIST);
	dup = extra[1];
	assert_int_equal(ovr_cc_register(&dup), -EEXIST);

	/* free one slot: the last one fits */
	assert_int_equal(ovr_cc_unregister(&extra[0]), 0);
	assert_null(ovr_cc_find(names[0]));
	assert_int_equal(ovr_cc_unregister(&extra[0]), -ENOENT);
	assert_int_equal(ovr_cc_register(&extra[room]), 0);
	assert_int_equal(ovr_cc_list(NULL, 0), OVR_CC_MAX_ALGS);

	for (size_t i = 1; i <= room; i++)
		assert_int_equal(ovr_cc_unregister(&extra[i]), 0);
	assert_int_equal(ovr_cc_list(NULL, 0), NBUILTIN);
	for (size_t i = 0; i < NBUILTIN; i++)
		assert_non_null(ovr_cc_find(builtin_names[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dcqcn_init),
		cmocka_unit_test(test_dcqcn_cnp_cut_and_alpha),
		cmocka_unit_test(test_dcqcn_alpha_decay),
		cmocka_unit_test(test_dcqcn_lazy_timers),
		cmocka_unit_test(test_dcqcn_cnp_interval),
		cmocka_unit_test(test_dcqcn_recovery),
		cmocka_unit_test(test_dcqcn_bounds),
		cmocka_unit_test(test_dcqcn_reinit),
		cmocka_unit_test(test_timely_init),
		cmocka_unit_test(test_timely_above_thigh),
		cmocka_unit_test(test_timely_below_tlow),
		cmocka_unit_test(test_timely_gradient),
		cmocka_unit_test(test_timely_bounds_and_signals),
		cmocka_unit_test(test_timely_reinit),
		cmocka_unit_test(test_swift_init),
		cmocka_unit_test(test_swift_ai),
		cmocka_unit_test(test_swift_md),
		cmocka_unit_test(test_swift_md_bounded),
		cmocka_unit_test(test_swift_hops),
		cmocka_unit_test(test_swift_loss_and_ecn),
		cmocka_unit_test(test_swift_rto),
		cmocka_unit_test(test_swift_pacing),
		cmocka_unit_test(test_swift_bounds),
		cmocka_unit_test(test_swift_reinit),
		cmocka_unit_test(test_registry_builtins),
		cmocka_unit_test(test_registry_invalid),
		cmocka_unit_test(test_registry_register),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
