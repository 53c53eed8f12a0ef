// SPDX-License-Identifier: MIT
/*
 * "timely": TIMELY, RTT-gradient rate control, after
 *   R. Mittal, V. T. Lam, N. Dukkipati, E. Blem, H. Wassel, M. Ghobadi,
 *   A. Vahdat, Y. Wang, D. Wetherall, D. Zats, "TIMELY: RTT-based
 *   Congestion Control for the Datacenter", ACM SIGCOMM 2015,
 *   pp. 537-550, doi:10.1145/2785956.2787510,
 * with the parameters eRPC runs it with (A. Kalia, M. Kaminsky,
 * D. G. Andersen, "Datacenter RPCs can be General and Fast", USENIX NSDI
 * 2019; erpc-io/eRPC src/cc/timely.h).
 *
 * Model (the paper's Algorithm 1), once per completion event with that
 * event's RTT sample new_rtt:
 *
 *     new_rtt_diff = new_rtt - prev_rtt;  prev_rtt = new_rtt
 *     rtt_diff     = (1 - a) * rtt_diff + a * new_rtt_diff      (EWMA)
 *     gradient     = rtt_diff / min_rtt                  (normalised)
 *
 *     new_rtt < T_low      rate += delta
 *     new_rtt > T_high     rate *= 1 - beta * (1 - T_high / new_rtt)
 *     gradient <= 0        rate += N * delta,  N = 5 once the gradient
 *                          was negative for HAI_THRESH completions in a
 *                          row (hyper-active increase), else N = 1
 *     otherwise            rate *= 1 - beta * gradient
 *
 *     rate clamped to [MIN_RATE, line rate]
 *
 *          rtt < T_low       T_low <= rtt <= T_high        rtt > T_high
 *     |--- additive ---|--- gradient: AI/HAI or MD ---|--- MD by rtt ---|
 *
 * TIMELY is rate-only: cwnd_bytes is the transport's maximum and rate_bps
 * the rate. It reacts to neither ECN nor loss nor timeouts (the paper
 * defines none; the transport's loss recovery still resends). The flow
 * starts at line rate, as TIMELY's NIC-paced flows (and eRPC's) do.
 *
 * Approximations forced by the hook (include/ovrdma/cc.h):
 *  - Completion events. TIMELY samples one RTT per completed segment of
 *    16-64 KB; the transport calls on_ack per ACK. So the update runs once
 *    per SEG_BYTES of acknowledged bytes (more than once when one ACK
 *    completes several segments), with the latest RTT sample: that of this
 *    ACK, or the last one seen when this ACK carries none. No sample yet:
 *    no update.
 *  - min_rtt is the transport's lowest sample (ovr_cc_ack.min_rtt_ns),
 *    else the base RTT hint, else the lowest sample seen here. (eRPC
 *    divides by a constant 1 us instead.)
 *  - The first sample has no predecessor: prev_rtt starts at it, so the
 *    first difference is 0 (as eRPC does).
 *  - HAI counts completions whose normalised (smoothed) gradient was
 *    negative; any other completion resets the count.
 *  - eRPC's own refinements are left out, the paper's Algorithm 1 is
 *    followed: eRPC scales each step by the time since the last update
 *    (capped at one min_rtt) and never cuts by more than half per update.
 *
 * Parameters:
 *   name        value                source
 *   T_low       50 us                eRPC kTimelyTLow (HPCC's ns-3
 *                                    TIMELY: 50 us too)
 *   T_high      1000 us              eRPC kTimelyTHigh (HPCC: 500 us)
 *   beta        0.8                  eRPC kTimelyDecreaseFactor (HPCC:
 *                                    0.8 too)
 *   a (EWMA)    0.02                 eRPC kTimelyEwmaAlpha
 *   delta       40 Mbit/s            eRPC kTimelyAddRate (5 MB/s)
 *   N (HAI)     5, after 5 in a row  paper; eRPC kTimelyHaiThresh
 *   MIN_RATE    40 Mbit/s            eRPC kTimelyMinRate (5 MB/s), the
 *                                    same floor as one delta step
 *   SEG_BYTES   64 KB                paper's largest segment size
 *   line rate   params, else 100 Gbit/s
 */
#include <stdint.h>

#include <ovrdma/cc.h>

#define TIMELY_T_LOW_NS 50000.0
#define TIMELY_T_HIGH_NS 1000000.0
#define TIMELY_BETA 0.8
#define TIMELY_EWMA 0.02
#define TIMELY_DELTA_BPS 40e6
#define TIMELY_HAI_N 5.0 /* increase multiplier in HAI mode */
#define TIMELY_HAI_THRESH 5u /* negative gradients in a row before HAI */
#define TIMELY_MIN_RATE_BPS 40e6
#define TIMELY_SEG_BYTES 65536u /* bytes per completion event */
#define TIMELY_DEFAULT_LINE_BPS 100e9 /* when the NIC rate is unknown */

struct timely_state {
	double rate; /* bit/s */
	double line_bps;
	double rtt_diff; /* EWMA of RTT differences, ns */
	double prev_rtt; /* ns; 0: no completion yet */
	uint64_t last_rtt; /* latest sample, ns; 0: none */
	uint64_t own_min_rtt; /* lowest sample seen here, ns */
	uint64_t base_rtt; /* the transport's hint, ns */
	uint32_t seg_bytes; /* acked bytes into the running segment */
	uint32_t neg_count; /* negative gradients in a row */
	uint32_t cwnd;
};
OVR_CC_PRIV_CHECK(struct timely_state);

static struct timely_state *st(struct ovr_cc_flow *f)
{
	return (struct timely_state *)f->priv;
}

static double min_rate(const struct timely_state *s)
{
	return s->line_bps < TIMELY_MIN_RATE_BPS ? s->line_bps :
						   TIMELY_MIN_RATE_BPS;
}

/* One completion event of Algorithm 1. */
static void timely_update(struct timely_state *s, double new_rtt,
			  double min_rtt)
{
	double new_rtt_diff, gradient, n;

	if (s->prev_rtt == 0)
		s->prev_rtt = new_rtt;
	new_rtt_diff = new_rtt - s->prev_rtt;
	s->prev_rtt = new_rtt;
	s->rtt_diff =
		(1 - TIMELY_EWMA) * s->rtt_diff + TIMELY_EWMA * new_rtt_diff;
	gradient = s->rtt_diff / min_rtt;
	s->neg_count = gradient < 0 ? s->neg_count + 1 : 0;
	n = s->neg_count >= TIMELY_HAI_THRESH ? TIMELY_HAI_N : 1.0;

	if (new_rtt < TIMELY_T_LOW_NS)
		s->rate += TIMELY_DELTA_BPS;
	else if (new_rtt > TIMELY_T_HIGH_NS)
		s->rate *= 1 - TIMELY_BETA * (1 - TIMELY_T_HIGH_NS / new_rtt);
	else if (gradient <= 0)
		s->rate += n * TIMELY_DELTA_BPS;
	else
		s->rate *= 1 - TIMELY_BETA * gradient;

	if (s->rate < min_rate(s))
		s->rate = min_rate(s);
	if (s->rate > s->line_bps)
		s->rate = s->line_bps;
}

static void publish(struct ovr_cc_flow *f, const struct timely_state *s)
{
	f->rate_bps = (uint64_t)(s->rate + 0.5);
	f->cwnd_bytes = s->cwnd;
}

static void timely_on_ack(struct ovr_cc_flow *f, const struct ovr_cc_ack *a)
{
	struct timely_state *s = st(f);
	uint64_t min_rtt;
	uint32_t events;

	if (a->rtt_ns) {
		s->last_rtt = a->rtt_ns;
		if (!s->own_min_rtt || a->rtt_ns < s->own_min_rtt)
			s->own_min_rtt = a->rtt_ns;
	}
	/* 64-bit sum: acked_bytes may be anything up to UINT32_MAX */
	events = (uint32_t)(((uint64_t)s->seg_bytes + a->acked_bytes) /
			    TIMELY_SEG_BYTES);
	s->seg_bytes = (uint32_t)(((uint64_t)s->seg_bytes + a->acked_bytes) %
				  TIMELY_SEG_BYTES);
	if (!s->last_rtt)
		return;
	min_rtt = a->min_rtt_ns;
	if (!min_rtt)
		min_rtt = s->base_rtt ? s->base_rtt : s->own_min_rtt;
	for (; events; events--)
		timely_update(s, (double)s->last_rtt, (double)min_rtt);
	publish(f, s);
}

/* TIMELY defines no reaction to ECN, loss or timeouts. */
static void timely_on_ecn(struct ovr_cc_flow *f, uint64_t now_ns,
			  uint32_t marks)
{
	(void)f;
	(void)now_ns;
	(void)marks;
}

static void timely_on_loss(struct ovr_cc_flow *f, uint64_t now_ns,
			   uint32_t lost_bytes)
{
	(void)f;
	(void)now_ns;
	(void)lost_bytes;
}

static void timely_on_timeout(struct ovr_cc_flow *f, uint64_t now_ns)
{
	(void)f;
	(void)now_ns;
}

static int timely_init(struct ovr_cc_flow *f, const struct ovr_cc_params *p)
{
	struct timely_state *s = st(f);

	*s = (struct timely_state){ 0 };
	s->line_bps = p->line_rate_bps ? (double)p->line_rate_bps :
					 TIMELY_DEFAULT_LINE_BPS;
	s->rate = s->line_bps;
	s->base_rtt = p->base_rtt_ns;
	s->cwnd = p->max_cwnd_bytes ? p->max_cwnd_bytes : UINT32_MAX;
	f->mss = p->mss;
	publish(f, s);
	return 0;
}

const struct ovr_cc_ops ovr_cc_timely = {
	.on_ack = timely_on_ack,
	.on_ecn = timely_on_ecn,
	.on_loss = timely_on_loss,
	.on_timeout = timely_on_timeout,
	.init = timely_init,
	.name = "timely",
	.priv_size = sizeof(struct timely_state),
};
