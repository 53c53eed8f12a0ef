// SPDX-License-Identifier: MIT
/*
 * Validation of the ccsim packet-level simulator (tools/ccsim) before its
 * results are trusted: every test builds a small topology with the sim.h
 * API and checks a number that is known independently of the simulator
 * (an analytic delay, a link's capacity, a buffer's size, a loss model's
 * rate and burst length, RED's marking curve, 1/N fairness, DCQCN's first
 * cut). Each test is bounded: the whole file runs in under a second.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "assert_num.h"

#include <ovrdma/cc.h>

#include "scenarios.h"
#include "sim.h"

#define MSS 4096u
#define WIRE (MSS + SIM_HDR_BYTES) /* a full data packet on the wire */
/* A flow that outlasts its run (4 ms at 100 Gbit/s is 50 MB). Not 1 TB:
 * the simulator allocates state for every packet of a flow when it
 * starts (10 bytes each, 2.7 GB for 1 TB), and under meson's
 * MALLOC_PERTURB_ glibc's calloc zeroes it page by page (0.4 s became
 * 65 s, 2.7 GB resident per flow). */
#define LONG_FLOW (64ull << 20)

/* a >= b, with the values in the message */
#define assert_ge(a, b)                                                        \
	do {                                                                   \
		double a_ = (double)(a), b_ = (double)(b);                     \
		if (!(a_ >= b_))                                               \
			fail_msg("%s = %.12g, expected >= %.12g", #a, a_, b_); \
	} while (0)
#define assert_le(a, b)                                                        \
	do {                                                                   \
		double a_ = (double)(a), b_ = (double)(b);                     \
		if (!(a_ <= b_))                                               \
			fail_msg("%s = %.12g, expected <= %.12g", #a, a_, b_); \
	} while (0)

static const struct ovr_cc_ops *cc_of(const char *name)
{
	const struct ovr_cc_ops *o = ovr_cc_find(name);

	assert_non_null(o);
	return o;
}

static struct sim_cfg cfg_of(const char *cc, uint64_t buffer)
{
	struct sim_cfg c = {
		.seed = 1,
		.mss = MSS,
		.switch_buffer = buffer,
		.cc = cc_of(cc),
		.max_cwnd_pkts = 1024,
		.min_rto_ps = 200 * PS_PER_US,
	};
	return c;
}

static struct sim_link_cfg lk(double gbps, uint64_t delay_ps)
{
	return (struct sim_link_cfg){ .gbps = gbps, .delay_ps = delay_ps };
}

/* ps to serialise @bytes at @gbps (the rates used here give whole ps) */
static uint64_t ser(uint64_t bytes, double gbps)
{
	return (uint64_t)((double)bytes * 8000.0 / gbps);
}

/* host h0 --l0-- switch --l1-- host h1 */
struct line {
	struct sim *s;
	uint32_t h0, sw, h1;
	int sw_to_h1, sw_to_h0;
};

static void line_build(struct line *t, const struct sim_cfg *c,
		       const struct sim_link_cfg *l0,
		       const struct sim_link_cfg *l1)
{
	t->s = sim_create(c);
	assert_non_null(t->s);
	t->h0 = sim_add_host(t->s);
	t->sw = sim_add_switch(t->s);
	t->h1 = sim_add_host(t->s);
	sim_link(t->s, t->h0, t->sw, l0, &t->sw_to_h0);
	t->sw_to_h1 = sim_link(t->s, t->sw, t->h1, l1, NULL);
	sim_routes(t->s);
	sim_set_base_rtt_hint(t->s,
			      sim_base_rtt_ps(t->s, t->h0, t->h1) / PS_PER_NS);
}

/* ------------------------------------------------------------------ */
/* 1. Serialisation, propagation, store-and-forward                    */
/* ------------------------------------------------------------------ */

/* "fixed", recording what the transport tells it */
static struct ovr_cc_ack spy_last;
static unsigned spy_acks;

static void spy_on_ack(struct ovr_cc_flow *f, const struct ovr_cc_ack *a)
{
	spy_last = *a;
	spy_acks++;
	ovr_cc_fixed.on_ack(f, a);
}

struct done_clock {
	struct sim *s;
	uint64_t at;
};

static void clock_complete(void *arg, const struct sim_flow_stats *st)
{
	struct done_clock *d = arg;

	(void)st;
	d->at = sim_now(d->s);
}

static void test_serialisation_propagation(void **state)
{
	const double g0 = 100, g1 = 25; /* 80 and 320 ps per byte */
	const uint64_t d0 = 1500 * PS_PER_NS, d1 = 2250 * PS_PER_NS;
	const uint64_t t0 = 5 * PS_PER_US;
	struct sim_link_cfg l0 = lk(g0, d0), l1 = lk(g1, d1);
	struct sim_cfg c = cfg_of("fixed", 1 << 20);
	struct ovr_cc_ops spy = ovr_cc_fixed;
	struct sim_flow_stats st;
	struct done_clock dc = { 0 };
	struct sim_flow *f;
	struct line t;
	uint64_t want, ack_back;

	(void)state;
	spy.on_ack = spy_on_ack;
	spy.name = "spy";
	c.cc = &spy;
	spy_acks = 0;
	/* one 1000-byte packet, h0 -> h1: each hop serialises the whole
	 * packet (payload + header) before it propagates */
	line_build(&t, &c, &l0, &l1);
	dc.s = t.s;
	sim_on_complete(t.s, clock_complete, &dc);
	f = sim_flow_add(t.s, t.h0, t.h1, 1000, t0, false);
	sim_run(t.s, UINT64_MAX);
	assert_true(sim_flow_done(f));
	assert_int_equal(sim_flow_delivered(f), 1000);
	sim_flow_stats(f, &st);
	want = t0 + ser(1000 + SIM_HDR_BYTES, g0) + d0 +
	       ser(1000 + SIM_HDR_BYTES, g1) + d1;
	assert_int_equal(want, t0 + 85120 + 1500000 + 340480 + 2250000);
	assert_int_equal(st.finish_ps, want);
	assert_within(st.ideal_ps, want - t0, 0.5);
	/* the ACK comes back the same way: the sender is done then */
	ack_back = ser(SIM_ACK_BYTES, g1) + d1 + ser(SIM_ACK_BYTES, g0) + d0;
	assert_int_equal(dc.at, want + ack_back);
	assert_int_equal(st.pkts_sent, 1);
	assert_int_equal(st.retx + st.spurious + st.rtos + st.tlps, 0);
	/* what the controller heard: one ACK, its RTT sample (ns) */
	assert_int_equal(spy_acks, 1);
	assert_int_equal(spy_last.now_ns, (want + ack_back) / PS_PER_NS);
	assert_int_equal(spy_last.rtt_ns, (want + ack_back - t0) / PS_PER_NS);
	assert_int_equal(spy_last.min_rtt_ns, spy_last.rtt_ns);
	assert_int_equal(spy_last.acked_bytes, 1000);
	assert_int_equal(spy_last.inflight_bytes, 0);
	assert_int_equal(spy_last.ce_count, 0);
	/* base RTT: a full data packet out, its ACK back */
	assert_int_equal(sim_base_rtt_ps(t.s, t.h0, t.h1),
			 ser(WIRE, g0) + d0 + ser(WIRE, g1) + d1 + ack_back);
	assert_int_equal(sim_base_rtt_ps(t.s, t.h0, t.h1),
			 332800 + 1331200 + 20480 + 5120 + 2 * (d0 + d1));
	sim_destroy(t.s);

	/* two packets (4096 + 1000 B) into the slower link: the second
	 * queues behind the first at the switch */
	line_build(&t, &c, &l0, &l1);
	f = sim_flow_add(t.s, t.h0, t.h1, MSS + 1000, t0, false);
	sim_run(t.s, UINT64_MAX);
	sim_flow_stats(f, &st);
	assert_int_equal(sim_flow_delivered(f), MSS + 1000);
	assert_int_equal(st.finish_ps, t0 + ser(WIRE, g0) + d0 + ser(WIRE, g1) +
					       ser(1000 + SIM_HDR_BYTES, g1) +
					       d1);
	sim_destroy(t.s);

	/* the other way, slow link first: pipelined, the switch's fast
	 * port is idle when the second packet arrives */
	line_build(&t, &c, &l0, &l1);
	f = sim_flow_add(t.s, t.h1, t.h0, MSS + 1000, t0, false);
	sim_run(t.s, UINT64_MAX);
	sim_flow_stats(f, &st);
	assert_int_equal(sim_flow_delivered(f), MSS + 1000);
	assert_int_equal(st.finish_ps,
			 t0 + ser(WIRE + 1000 + SIM_HDR_BYTES, g1) + d1 +
				 ser(1000 + SIM_HDR_BYTES, g0) + d0);
	sim_destroy(t.s);
}

/* ------------------------------------------------------------------ */
/* 2. One long flow fills the bottleneck                               */
/* ------------------------------------------------------------------ */

static double fill_goodput(const char *cc, uint32_t max_cwnd_pkts)
{
	struct sim_link_cfg l0 = lk(100, PS_PER_US), l1 = lk(25, PS_PER_US);
	struct sim_cfg c = cfg_of(cc, 4 << 20);
	const uint64_t size = 16ull << 20;
	struct sim_flow_stats st;
	struct sim_flow *f;
	struct line t;
	double gp;

	c.max_cwnd_pkts = max_cwnd_pkts;
	/* the HPCC thresholds, scaled to 25 Gbit/s */
	c.ecn = (struct sim_ecn_cfg){
		.enabled = true, .kmin = 100000, .kmax = 400000, .pmax = 0.2
	};
	line_build(&t, &c, &l0, &l1);
	f = sim_flow_add(t.s, t.h0, t.h1, size, 0, false);
	sim_run(t.s, 100 * PS_PER_MS);
	assert_true(sim_flow_done(f));
	assert_int_equal(sim_flow_delivered(f), size);
	sim_flow_stats(f, &st);
	gp = (double)size * 8 / ((double)(st.finish_ps - st.start_ps) / 1000);
	sim_destroy(t.s);
	return gp;
}

static void test_single_flow_fills_bottleneck(void **state)
{
	const double payload_gbps = 25.0 * MSS / WIRE;
	/* BDP at 25 Gbit/s: about 6 us, 18 KB, 5 packets */
	struct {
		const char *cc;
		uint32_t wnd;
		double min; /* of the payload rate */
	} runs[] = {
		{ "fixed", 16, 0.95 },
		{ "swift", 1024, 0.95 },
		/* ovr starts at a quarter of its NIC's rate and slows
		 * down into the queue it builds behind the slower link:
		 * 16 MB carries that start */
		{ "ovr", 1024, 0.93 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		double gp = fill_goodput(runs[i].cc, runs[i].wnd);

		printf("# fill %-6s %.3f Gbit/s (%.2f %% of %.3f)\n",
		       runs[i].cc, gp, 100 * gp / payload_gbps, payload_gbps);
		assert_ge(gp, runs[i].min * payload_gbps);
		assert_le(gp, 1.005 * payload_gbps);
	}
	/* and a window below the BDP cannot fill it: 2 packets a round */
	assert_le(fill_goodput("fixed", 2), 0.8 * payload_gbps);
}

/* ------------------------------------------------------------------ */
/* 3. The queue never exceeds the buffer                               */
/* ------------------------------------------------------------------ */

struct buf_probe {
	uint32_t sw;
	int port;
	uint64_t max_used, max_q, samples;
	struct sim_flow **fl;
	int n;
};

static void buf_sample(struct sim *s, void *arg)
{
	struct buf_probe *b = arg;
	uint64_t u = sim_switch_used(s, b->sw),
		 q = sim_port_qlen(s, b->sw, b->port);
	int i;

	if (u > b->max_used)
		b->max_used = u;
	if (q > b->max_q)
		b->max_q = q;
	b->samples++;
	for (i = 0; i < b->n; i++)
		if (!sim_flow_done(b->fl[i]))
			break;
	if (i < b->n)
		sim_at(s, sim_now(s) + PS_PER_US, buf_sample, b);
}

static void test_incast_bounded_by_buffer(void **state)
{
	enum { N = 32 };
	const uint64_t buffer = 256 * 1024, size = 128 * 1024;
	struct sim_cfg c = cfg_of("fixed", buffer); /* 1024-packet window */
	struct sim_link_cfg l = lk(100, PS_PER_US);
	struct sim_flow *fl[N];
	struct buf_probe bp = { .fl = fl, .n = N };
	struct sim_counters ctr;
	uint32_t snd[N], recv;
	uint64_t pkts = 0;
	struct sim *s;

	(void)state;
	s = sim_create(&c);
	bp.sw = sim_add_switch(s);
	for (int i = 0; i < N; i++) {
		snd[i] = sim_add_host(s);
		sim_link(s, snd[i], bp.sw, &l, NULL);
	}
	recv = sim_add_host(s);
	bp.port = sim_link(s, bp.sw, recv, &l, NULL);
	sim_routes(s);
	for (int i = 0; i < N; i++)
		fl[i] = sim_flow_add(s, snd[i], recv, size, 0, false);
	sim_at(s, 0, buf_sample, &bp);
	sim_run(s, 1000 * PS_PER_MS);
	sim_counters(s, &ctr);
	printf("# incast: %llu samples, max used %llu B, max queue %llu B, "
	       "%llu drops, %llu retx, %llu RTOs\n",
	       (unsigned long long)bp.samples, (unsigned long long)bp.max_used,
	       (unsigned long long)bp.max_q, (unsigned long long)ctr.buf_drops,
	       (unsigned long long)ctr.retx, (unsigned long long)ctr.rtos);
	assert_true(bp.samples > 100);
	assert_le(bp.max_used, buffer);
	assert_le(bp.max_q, buffer);
	/* it did fill up: within a packet of the buffer */
	assert_ge(bp.max_used + WIRE, buffer);
	assert_true(ctr.buf_drops > 0);
	assert_int_equal(ctr.link_drops, 0);
	for (int i = 0; i < N; i++) {
		assert_true(sim_flow_done(fl[i]));
		assert_int_equal(sim_flow_delivered(fl[i]), size);
		pkts += (size + MSS - 1) / MSS;
	}
	/* every packet sent is a first transmission or a resend */
	assert_int_equal(ctr.data_pkts, pkts + ctr.retx);
	assert_true(ctr.retx > 0);
	/* everything crossed the bottleneck at least once */
	assert_ge(sim_port_tx_bytes(s, bp.sw, bp.port), pkts * WIRE);
	/* the buffer is empty when everything is over */
	assert_int_equal(sim_switch_used(s, bp.sw), 0);
	sim_destroy(s);
}

/* ------------------------------------------------------------------ */
/* 4. Loss models: rate and burst length                               */
/* ------------------------------------------------------------------ */

/*
 * The impaired port (switch -> receiver, 50 Gbit/s) is fed at 100 Gbit/s
 * by a window-limited sender, so it stays busy and its packets (all full
 * size) end at fixed intervals: a probe once per packet time, half a
 * packet out of phase, reads the drop counter after every packet and so
 * recovers the loss sequence packet by packet.
 */
struct loss_probe {
	uint32_t sw;
	int port;
	uint64_t period;
	struct sim_flow *f;
	uint64_t last_drops, last_tx;
	uint64_t pkts, losses, bursts, not_busy, multi;
	bool in_burst;
};

static void loss_sample(struct sim *s, void *arg)
{
	struct loss_probe *p = arg;
	struct sim_counters c;
	uint64_t tx = sim_port_tx_bytes(s, p->sw, p->port), d;

	sim_counters(s, &c);
	d = c.link_drops - p->last_drops;
	if (tx - p->last_tx != WIRE) {
		p->not_busy++; /* not one whole packet in this slot */
		p->in_burst = false;
	} else {
		p->pkts++;
		if (d > 1)
			p->multi++;
		if (d) {
			p->losses += d;
			if (!p->in_burst)
				p->bursts++;
			p->in_burst = true;
		} else {
			p->in_burst = false;
		}
	}
	p->last_drops = c.link_drops;
	p->last_tx = tx;
	if (!sim_flow_done(p->f))
		sim_at(s, sim_now(s) + p->period, loss_sample, p);
}

static void loss_run(const struct sim_impair *imp, uint64_t npkts,
		     struct loss_probe *p, struct sim_counters *ctr)
{
	struct sim_link_cfg l0 = lk(100, PS_PER_US), l1 = lk(50, PS_PER_US);
	struct sim_cfg c = cfg_of("fixed", 32 << 20);
	struct line t;

	c.max_cwnd_pkts = 256; /* a standing queue of about 1 MB */
	line_build(&t, &c, &l0, &l1);
	sim_port_impair(t.s, t.sw, t.sw_to_h1, imp);
	memset(p, 0, sizeof(*p));
	p->sw = t.sw;
	p->port = t.sw_to_h1;
	p->period = ser(WIRE, 50);
	p->f = sim_flow_add(t.s, t.h0, t.h1, npkts * MSS, 0, false);
	/* the first packet ends on the impaired port at this time */
	sim_at(t.s, ser(WIRE, 100) + PS_PER_US + p->period / 2, loss_sample, p);
	sim_run(t.s, 10000 * PS_PER_MS);
	assert_true(sim_flow_done(p->f));
	assert_int_equal(sim_flow_delivered(p->f), npkts * MSS);
	sim_counters(t.s, ctr);
	sim_destroy(t.s);
}

static void test_loss_models(void **state)
{
	const double p = 0.01;
	struct sim_impair bern = { .loss = SIM_LOSS_BERNOULLI,
				   .p = p,
				   .data_only = true };
	struct sim_impair ge = {
		.loss = SIM_LOSS_GE, .p = p, .burst = 4, .data_only = true
	};
	struct sim_counters c;
	struct loss_probe lp;
	double rate, burst;

	(void)state;
	loss_run(&bern, 200000, &lp, &c);
	rate = (double)c.link_drops / (double)c.data_pkts;
	burst = (double)lp.losses / (double)lp.bursts;
	printf("# bernoulli: %llu pkts, %llu drops, rate %.5f, mean burst "
	       "%.3f (probe: %llu pkts, %llu idle slots)\n",
	       (unsigned long long)c.data_pkts,
	       (unsigned long long)c.link_drops, rate, burst,
	       (unsigned long long)lp.pkts, (unsigned long long)lp.not_busy);
	assert_ge(c.data_pkts, 200000);
	assert_within(rate, p, 0.15 * p);
	/* the probe saw (nearly) every packet, one per slot */
	assert_int_equal(lp.multi, 0);
	assert_ge(lp.pkts, 0.99 * (double)c.data_pkts);
	assert_ge(lp.losses, 0.99 * (double)c.link_drops);
	/* independent losses: runs of 1 / (1 - p) */
	assert_within(burst, 1 / (1 - p), 0.05);
	/* every loss was recovered by a resend */
	assert_ge(c.retx, c.link_drops);

	loss_run(&ge, 400000, &lp, &c);
	rate = (double)c.link_drops / (double)c.data_pkts;
	burst = (double)lp.losses / (double)lp.bursts;
	printf("# gilbert-elliott: %llu pkts, %llu drops, rate %.5f, mean "
	       "burst %.3f (probe: %llu pkts, %llu bursts, %llu idle "
	       "slots)\n",
	       (unsigned long long)c.data_pkts,
	       (unsigned long long)c.link_drops, rate, burst,
	       (unsigned long long)lp.pkts, (unsigned long long)lp.bursts,
	       (unsigned long long)lp.not_busy);
	assert_ge(c.data_pkts, 400000);
	assert_within(rate, p, 0.15 * p);
	assert_int_equal(lp.multi, 0);
	assert_ge(lp.pkts, 0.99 * (double)c.data_pkts);
	assert_ge(lp.losses, 0.99 * (double)c.link_drops);
	assert_ge(burst, 3);
	assert_le(burst, 5);
	assert_ge(c.retx, c.link_drops);
}

/* ------------------------------------------------------------------ */
/* 5. ECN marking follows RED                                          */
/* ------------------------------------------------------------------ */

struct red_probe {
	uint32_t sw;
	int port;
	uint64_t from, until;
	const struct sim_ecn_cfg *e;
	double psum;
	uint64_t n;
	uint64_t q_min, q_max;
	struct sim_counters c0, c1;
};

static double red_prob(const struct sim_ecn_cfg *e, uint64_t q)
{
	if (q > e->kmax)
		return 1;
	if (q > e->kmin)
		return e->pmax * (double)(q - e->kmin) /
		       (double)(e->kmax - e->kmin);
	return 0;
}

static void red_sample(struct sim *s, void *arg)
{
	struct red_probe *r = arg;
	uint64_t q = sim_port_qlen(s, r->sw, r->port);

	if (sim_now(s) == r->from) {
		sim_counters(s, &r->c0);
		r->q_min = UINT64_MAX;
	} else {
		r->psum += red_prob(r->e, q);
		r->n++;
		if (q < r->q_min)
			r->q_min = q;
		if (q > r->q_max)
			r->q_max = q;
	}
	if (sim_now(s) >= r->until) {
		sim_counters(s, &r->c1);
		return;
	}
	sim_at(s, sim_now(s) + PS_PER_US, red_sample, r);
}

/* Two window-limited senders into one 100 Gbit/s port (2:1): a standing
 * queue of about (2 W - BDP) packets. Returns the marks seen. */
static uint64_t red_run(const struct sim_ecn_cfg *e, uint32_t wnd,
			struct red_probe *r)
{
	struct sim_cfg c = cfg_of("fixed", 32 << 20);
	struct sim_link_cfg l = lk(100, PS_PER_US);
	uint32_t a, b, d, sw;
	struct sim_counters ctr;
	struct sim_flow *fa, *fb;
	struct sim *s;
	int port;

	c.ecn = *e;
	c.max_cwnd_pkts = wnd;
	s = sim_create(&c);
	sw = sim_add_switch(s);
	a = sim_add_host(s);
	b = sim_add_host(s);
	d = sim_add_host(s);
	sim_link(s, a, sw, &l, NULL);
	sim_link(s, b, sw, &l, NULL);
	port = sim_link(s, sw, d, &l, NULL);
	sim_routes(s);
	fa = sim_flow_add(s, a, d, LONG_FLOW, 0, false);
	fb = sim_flow_add(s, b, d, LONG_FLOW, 0, false);
	memset(r, 0, sizeof(*r));
	r->sw = sw;
	r->port = port;
	r->e = e;
	r->from = 200 * PS_PER_US; /* long past the first round */
	r->until = 4 * PS_PER_MS;
	sim_at(s, r->from, red_sample, r);
	sim_run(s, r->until);
	assert_false(sim_flow_done(fa) || sim_flow_done(fb));
	sim_counters(s, &ctr);
	sim_destroy(s);
	return ctr.ecn_marks;
}

static void test_ecn_red(void **state)
{
	/* W = 64 each: about 110 packets (460 KB) queued, in [kmin, kmax] */
	struct sim_ecn_cfg red = {
		.enabled = true, .kmin = 200000, .kmax = 800000, .pmax = 0.5
	};
	struct sim_ecn_cfg step = {
		.enabled = true, .kmin = 1, .kmax = 1, .pmax = 1
	};
	struct sim_ecn_cfg off = red;
	struct red_probe r;
	double want, got;
	uint64_t marks, data;

	(void)state;
	red_run(&red, 64, &r);
	data = r.c1.data_pkts - r.c0.data_pkts;
	marks = r.c1.ecn_marks - r.c0.ecn_marks;
	want = r.psum / (double)r.n;
	got = (double)marks / (double)data;
	printf("# red: queue %llu..%llu B, %llu of %llu marked: %.4f, "
	       "RED at the sampled queue %.4f\n",
	       (unsigned long long)r.q_min, (unsigned long long)r.q_max,
	       (unsigned long long)marks, (unsigned long long)data, got, want);
	/* the queue really sat between the thresholds */
	assert_true(r.q_min > red.kmin && r.q_max < red.kmax);
	assert_true(data > 10000); /* 3 packets a microsecond */
	assert_within(got, want, 0.1 * want);

	/* probability 1 above Kmax: every data packet is marked (the
	 * queue always holds one in service when another arrives) */
	red_run(&step, 64, &r);
	data = r.c1.data_pkts - r.c0.data_pkts;
	marks = r.c1.ecn_marks - r.c0.ecn_marks;
	printf("# step: %llu of %llu marked\n", (unsigned long long)marks,
	       (unsigned long long)data);
	assert_within((double)marks, (double)data, 0.001 * (double)data + 2);

	/* ECN off: the same queue, no mark */
	off.enabled = false;
	assert_int_equal(red_run(&off, 64, &r), 0);
	/* below Kmin: the queue of two 8-packet windows never gets there */
	assert_int_equal(red_run(&red, 8, &r), 0);
	assert_true(r.q_max < red.kmin);
}

/* ------------------------------------------------------------------ */
/* 6. N equal flows converge to 1/N                                    */
/* ------------------------------------------------------------------ */

struct share_probe {
	struct sim_flow **fl;
	int n;
	uint64_t mid[8], end[8];
};

static void share_mid(struct sim *s, void *arg)
{
	struct share_probe *p = arg;

	(void)s;
	for (int i = 0; i < p->n; i++)
		p->mid[i] = sim_flow_delivered(p->fl[i]);
}

static double fair_share(const char *cc, double *util)
{
	enum { N = 4 };
	const uint64_t run = 4 * PS_PER_MS;
	struct sim_cfg c = cfg_of(cc, 32 << 20);
	struct sim_link_cfg l = lk(100, 2800 * PS_PER_NS);
	struct sim_flow *fl[N];
	struct share_probe p = { .fl = fl, .n = N };
	uint32_t snd[N], recv, sw;
	double x[N], tot = 0, j;
	struct sim *s;

	c.ecn = (struct sim_ecn_cfg){
		.enabled = true, .kmin = 400000, .kmax = 1600000, .pmax = 0.2
	};
	s = sim_create(&c);
	sw = sim_add_switch(s);
	for (int i = 0; i < N; i++) {
		snd[i] = sim_add_host(s);
		sim_link(s, snd[i], sw, &l, NULL);
	}
	recv = sim_add_host(s);
	sim_link(s, sw, recv, &l, NULL);
	sim_routes(s);
	sim_set_base_rtt_hint(s, sim_base_rtt_ps(s, snd[0], recv) / PS_PER_NS);
	for (int i = 0; i < N; i++)
		fl[i] = sim_flow_add(s, snd[i], recv, LONG_FLOW,
				     (uint64_t)i * 10 * PS_PER_US, false);
	sim_at(s, run / 2, share_mid, &p);
	sim_run(s, run);
	for (int i = 0; i < N; i++)
		assert_false(sim_flow_done(fl[i]));
	printf("# share %-6s", cc);
	for (int i = 0; i < N; i++) {
		x[i] = (double)(sim_flow_delivered(fl[i]) - p.mid[i]);
		tot += x[i];
		printf(" %.2f", x[i] * 8 / ((double)(run / 2) / 1000));
	}
	j = ccsim_jain(x, N);
	*util = tot * 8 / ((double)(run / 2) / 1000) / (100.0 * MSS / WIRE);
	printf(" Gbit/s: Jain %.4f, %.1f %% of the payload rate\n", j,
	       100 * *util);
	sim_destroy(s);
	return j;
}

static void test_fair_share(void **state)
{
	double u_swift, u_ovr, j_swift, j_ovr;

	(void)state;
	j_swift = fair_share("swift", &u_swift);
	j_ovr = fair_share("ovr", &u_ovr);
	assert_ge(fmax(j_swift, j_ovr), 0.99);
	/* and no more than the link carries (delivered counts whole
	 * segments in order, so a window of slack) */
	assert_le(u_swift, 1.005);
	assert_le(u_ovr, 1.005);
}

/* ------------------------------------------------------------------ */
/* 7. Determinism                                                      */
/* ------------------------------------------------------------------ */

struct det_out {
	struct sim_counters c;
	uint64_t finish[3];
};

static void det_run(uint64_t seed, struct det_out *o)
{
	struct sim_cfg c = cfg_of("ovr", 1 << 20);
	struct sim_link_cfg l0 = lk(100, PS_PER_US), l1 = lk(100, PS_PER_US);
	struct sim_impair imp = { .loss = SIM_LOSS_BERNOULLI,
				  .p = 0.005,
				  .jitter_ps = 5 * PS_PER_US,
				  .data_only = true };
	struct sim_flow *f[3];
	struct line t;

	c.seed = seed;
	line_build(&t, &c, &l0, &l1);
	sim_port_impair(t.s, t.sw, t.sw_to_h1, &imp);
	for (int i = 0; i < 3; i++)
		f[i] = sim_flow_add(t.s, t.h0, t.h1, (2 + i) << 20,
				    (uint64_t)i * 20 * PS_PER_US, false);
	sim_run(t.s, 1000 * PS_PER_MS);
	sim_counters(t.s, &o->c);
	for (int i = 0; i < 3; i++) {
		struct sim_flow_stats st;

		assert_true(sim_flow_done(f[i]));
		sim_flow_stats(f[i], &st);
		o->finish[i] = st.finish_ps;
	}
	sim_destroy(t.s);
}

static void test_determinism(void **state)
{
	struct det_out a, b, c;

	(void)state;
	det_run(7, &a);
	det_run(7, &b);
	det_run(8, &c);
	assert_true(a.c.link_drops > 0);
	assert_int_equal(a.c.events, b.c.events);
	assert_int_equal(a.c.data_pkts, b.c.data_pkts);
	assert_int_equal(a.c.retx, b.c.retx);
	assert_int_equal(a.c.spurious, b.c.spurious);
	assert_int_equal(a.c.link_drops, b.c.link_drops);
	assert_int_equal(a.c.buf_drops, b.c.buf_drops);
	assert_int_equal(a.c.ecn_marks, b.c.ecn_marks);
	assert_int_equal(a.c.rtos, b.c.rtos);
	assert_int_equal(a.c.tlps, b.c.tlps);
	for (int i = 0; i < 3; i++)
		assert_int_equal(a.finish[i], b.finish[i]);
	assert_int_not_equal(a.c.events, c.c.events);
}

/* ------------------------------------------------------------------ */
/* 8. DCQCN's cut per CNP in the closed loop                           */
/* ------------------------------------------------------------------ */

struct rate_probe {
	struct sim_flow *f;
	uint32_t h0;
	uint64_t line, until;
	int ncut;
	uint64_t cut_at[2], cut_rate[2], tx_at_cut;
	uint64_t prev;
};

static void rate_sample(struct sim *s, void *arg)
{
	struct rate_probe *r = arg;
	uint64_t rate = sim_flow_cc(r->f)->rate_bps;

	if (r->ncut < 2 && rate < r->prev) {
		r->cut_at[r->ncut] = sim_now(s);
		r->cut_rate[r->ncut] = rate;
		if (!r->ncut)
			r->tx_at_cut = sim_port_tx_bytes(s, r->h0, 0);
		r->ncut++;
	}
	r->prev = rate;
	if (sim_now(s) < r->until)
		sim_at(s, sim_now(s) + 100 * PS_PER_NS, rate_sample, r);
}

static void tx_at(struct sim *s, void *arg)
{
	uint64_t *v = arg;

	v[1] = sim_port_tx_bytes(s, (uint32_t)v[0], 0);
}

static void test_dcqcn_closed_loop_cut(void **state)
{
	/* 100 Gbit/s NIC into a 50 Gbit/s link; every packet that finds
	 * one ahead of it is marked */
	struct sim_link_cfg l0 = lk(100, PS_PER_US), l1 = lk(50, PS_PER_US);
	struct sim_cfg c = cfg_of("dcqcn", 32 << 20);
	struct rate_probe r = { 0 };
	const double g = 1.0 / 256, alpha0 = 1.0;
	double alpha1, sent;
	uint64_t tx[2], win = 40 * PS_PER_US;
	struct line t;

	(void)state;
	c.ecn = (struct sim_ecn_cfg){
		.enabled = true, .kmin = 0, .kmax = 1, .pmax = 1
	};
	line_build(&t, &c, &l0, &l1);
	r.f = sim_flow_add(t.s, t.h0, t.h1, LONG_FLOW, 0, false);
	r.h0 = t.h0;
	r.line = 100000000000ull;
	r.prev = r.line;
	r.until = 300 * PS_PER_US;
	sim_at(t.s, 0, rate_sample, &r);
	/* run to just after the first cut, then measure the sending rate
	 * over the next 40 us (no CNP can come in the 50 us interval) */
	sim_run(t.s, 20 * PS_PER_US);
	assert_int_equal(r.ncut, 1);
	tx[0] = t.h0;
	sim_at(t.s, r.cut_at[0] + win, tx_at, tx);
	sim_run(t.s, r.until);
	assert_false(sim_flow_done(r.f));
	assert_int_equal(r.ncut, 2);
	printf("# dcqcn: first cut at %.3f us to %.3f Gbit/s, second at "
	       "%.3f us to %.3f Gbit/s\n",
	       (double)r.cut_at[0] / PS_PER_US, (double)r.cut_rate[0] / 1e9,
	       (double)r.cut_at[1] / PS_PER_US, (double)r.cut_rate[1] / 1e9);
	/* Rc = line * (1 - alpha0 / 2) */
	assert_within(r.cut_rate[0], r.line * (1 - alpha0 / 2),
		      0.01 * r.line * (1 - alpha0 / 2));
	/* the first CE comes back within a few base RTTs */
	assert_le(r.cut_at[0], 5 * sim_base_rtt_ps(t.s, t.h0, t.h1));
	/* the sender obeys: header included, the wire carries Rc */
	sent = (double)(tx[1] - r.tx_at_cut) * 8 / ((double)win / 1000);
	assert_within(sent * 1e9, (double)r.cut_rate[0],
		      0.02 * (double)r.cut_rate[0]);
	/* the next CNP: not before the 50 us interval, alpha updated to
	 * (1 - g) alpha0 + g and no alpha period (55 us) elapsed */
	alpha1 = (1 - g) * alpha0 + g;
	assert_ge(r.cut_at[1], r.cut_at[0] + 50 * PS_PER_US);
	assert_le(r.cut_at[1], r.cut_at[0] + 55 * PS_PER_US);
	assert_within(r.cut_rate[1], r.cut_rate[0] * (1 - alpha1 / 2),
		      0.01 * r.cut_rate[0] * (1 - alpha1 / 2));
	sim_destroy(t.s);
}

/* ------------------------------------------------------------------ */
/* 9. Scenario smoke: S1 at 1 % loss                                   */
/* ------------------------------------------------------------------ */

static void test_s1_smoke(void **state)
{
	struct ccsim_opts o = { .seed = 1, .quick = true };
	struct s1_result r;

	(void)state;
	ccsim_s1_case(&o, cc_of("ovr"), 10, 0.01, 20, &r);
	printf("# s1 ovr 1%% loss, RTT 10 us, jitter 20 us: %.2f Gbit/s, "
	       "ratio %.3f, spurious %.4f, p99 1 MB %.1f us, %llu RTOs\n",
	       r.goodput_gbps, r.ratio, r.spurious, r.p99_1mb_us,
	       (unsigned long long)r.rtos);
	assert_ge(r.ratio, 0.9);
	assert_true(r.spurious < 0.01);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serialisation_propagation),
		cmocka_unit_test(test_single_flow_fills_bottleneck),
		cmocka_unit_test(test_incast_bounded_by_buffer),
		cmocka_unit_test(test_loss_models),
		cmocka_unit_test(test_ecn_red),
		cmocka_unit_test(test_fair_share),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_dcqcn_closed_loop_cut),
		cmocka_unit_test(test_s1_smoke),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
