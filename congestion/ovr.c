// SPDX-License-Identifier: MIT
/*
 * "ovr": ovrdma's default congestion controller, designed for VPC overlays.
 *
 * What an overlay gives a software transport: its own RTT samples (taken
 * at the dataplane, microsecond-accurate but jittered by vSwitches and
 * host scheduling), the loss/SACK pattern (with losses that have nothing
 * to do with congestion) and, sometimes, ECN on the outer header. No
 * switch telemetry, no hop count, no guarantee that ECN survives.
 *
 * Model. The controlled variable is a pacing rate R, kept as a virtual
 * window v = R * (b + T): the bytes one round would carry with the queue
 * at its target. b is the lowest RTT ever seen (the path's propagation
 * delay), T the target queueing delay.
 *
 * Signal. Queueing delays every packet, per-packet jitter only some: the
 * queue estimate is the smallest of the last K RTT samples minus b (a
 * windowed minimum), so jitter of tens of microseconds reads as about
 * J / (K + 1) while a standing queue reads in full. Decisions are taken
 * once per round (about one RTT, queue included):
 *
 *     q      = min(last K samples) - b        queueing delay seen
 *     T      = T0 + K_PATH * b                target, grows with path length
 *     alpha  = A * sqrt(v / mss) * mss        per-flow share of the queue,
 *                                             A = A0 in a round with a
 *                                             sample near b, else A_Q
 *     v'     = v * (b + T) / (b + q) + alpha  (FAST-TCP's update)
 *     v'     = clamp(v', v * MD_MAX, v * MI_MAX)
 *     R      = min(v' / (b + T), line rate)
 *
 * At equilibrium (b + q) = (b + T) * v / (v - alpha): every flow on a
 * bottleneck sees the same q, so v_i / alpha_i is equal for all of them,
 * and because alpha grows with sqrt(v) that makes the rates equal
 * (fairness). A fairness error shrinks by about (q - T) / (2 (b + q)) per
 * round, q - T being sum(alpha_i) / C: flows that share a standing queue
 * use the larger A_Q, so that a joining flow reaches its share in tens of
 * rounds rather than hundreds, while a flow alone on a jittery path
 * (samples near b every round) keeps the small A0 and its small queue.
 * The standing queue is T plus sum(alpha_i) / C, which grows
 * with sqrt(N) for N flows of equal share: the target scales with fan-in,
 * but only as its square root (a 64:1 incast holds about 8 times the
 * queue of one flow, not 64 times). A decrease needs MIN_SAMPLES samples
 * in the filter; an increase needs only one sample near b in this round
 * (no standing queue can hide under it). After a decrease, samples of
 * packets sent before it are ignored (they show the queue being
 * drained). b is the smallest sample, but never above a configured
 * base-RTT hint (a flow that starts behind a queue would otherwise take
 * the queue for the path: Vegas' latecomer problem).
 *
 * The window caps what is in flight at the rate over the path's RTT and
 * its jitter, never over a queue: cwnd = R * (b + T + J) + 2 segments.
 * J is the jitter allowance (learn_jitter: how far a round's samples
 * spread above its smallest one, growing by at most x1.5 + T per round,
 * decaying by 1/8), so that jitter never starves the pacer (a window of
 * R * b would cap a 10 us path with 20 us of jitter at half its rate),
 * while flows that overload a bottleneck are held by their ACK clock:
 * a queue lengthens their RTT, not their window, so their sending rate
 * falls before the next decision (the pacer alone keeps sending at R,
 * which filled 4 MB buffers in 64:1 incasts). The transport's suggested
 * initial window (init_cwnd_bytes) is not used.
 *
 * Start: R = line rate / 4 (v = BDP / 4 from the base-RTT hint), doubling
 * per round while q < T (slow start); the first round with a standing
 * queue, a congestion loss or ECN ends it.
 *
 * Loss. A loss declared while the filtered queue is under LOSS_Q * T is
 * random (overlay loss, corruption): loss recovery resends, the rate
 * stays. A loss with a queue is congestion: v *= LOSS_MD, once per
 * round. Timeouts: with no queue seen the rate stays (a black-holed path
 * among several); with a queue, halve; RTO_RESET consecutive timeouts
 * drop it to the minimum.
 *
 * ECN (outer header, when the overlay keeps it): the fraction F of marked
 * packets in a round caps the next v at v * (1 - F / 2), as DCTCP.
 * Without ECN the delay loop alone is in charge.
 *
 *   SLOW_START --(q >= T, congestion loss, ECN)--> AVOID
 *
 * Parameters (values and why):
 *   T0          1 us     12.5 KB at 100 Gbit/s: below the 50 KB p99 goal
 *                        with room for the alpha terms
 *   K_PATH      0.05     longer paths have more queues and more jitter
 *   A0          0.25     one flow queues 0.25 * sqrt(BDP packets) packets
 *   A_Q         1.25     with a standing queue: S3's slowest join 51 -> 29
 *                        RTTs (4 flows), 154 -> 29 (8 flows); 1.0 left
 *                        8 flows at 63, 2.0 and 3.0 left joins that never
 *                        converged (docs/CONGESTION.md)
 *   K           16       samples in the filter: the minimum of 16
 *                        U[0,20 us] samples is 1.2 us on average
 *   MIN_SAMPLES 8        before a decrease
 *   MI_MAX      2        at most doubling per round (FAST-TCP's bound)
 *   MD_MAX      0.1      a decrease follows the measured queue down to
 *                        a tenth per round (an incast's first round)
 *   LOSS_Q      8        congestion losses come with queues of 8 T
 *                        (12 us, 150 KB at 100G) or more
 *   LOSS_MD     0.7      congestion loss, once per round
 *   RTO_RESET   3        consecutive timeouts before the minimum rate
 *   J_GROW      1.5      J's growth per round (plus T): 20 us of jitter
 *                        learnt in 5-6 rounds; an incast's first rounds
 *                        (queue growing within the round) buy little
 *   J_GAIN      8        J's decay per round towards a smaller spread
 *   J_MIN_SAMPLES 4      samples in a round before it teaches J
 *   min rate    line rate / 4096 (24 Mbit/s at 100G)
 * Reference: Wei, Jin, Low, Hegde, "FAST TCP: Motivation, Architecture,
 * Algorithms, Performance", IEEE/ACM ToN 14(6), 2006 (the update form);
 * Alizadeh et al., "Data Center TCP", SIGCOMM 2010 (the ECN fraction).
 * Evaluation against DCQCN, TIMELY and Swift: docs/CONGESTION.md.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include <ovrdma/cc.h>

#define OVR_T0_NS 1000.0
#define OVR_K_PATH 0.05
#define OVR_A0 0.25
#define OVR_A_QUEUE 1.25
#define OVR_K 16
#define OVR_MIN_SAMPLES 8
#define OVR_MI_MAX 2.0
#define OVR_MD_MAX 0.1
#define OVR_LOSS_Q 8.0
#define OVR_LOSS_MD 0.7
#define OVR_RTO_RESET 3
#define OVR_J_GROW 1.5
#define OVR_J_GAIN 8.0
#define OVR_J_MIN_SAMPLES 4
#define OVR_MIN_RATE_DIV 4096.0
#define OVR_SAMPLE_UNIT_NS 32 /* filter samples: 32 ns units, up to 2 ms */
#define OVR_DEFAULT_RATE_BPS 100000000000ull /* NIC rate unknown */
#define OVR_DEFAULT_RTT_NS 12000ull /* no base-RTT hint */

struct ovr_state {
	double v; /* virtual window, bytes: R * (b + T) */
	uint64_t line_bps;
	uint64_t base_ns; /* b: lowest RTT sample (the hint until one) */
	uint64_t round_end; /* the current round closes at this time */
	uint64_t last_cut; /* last loss/timeout decrease */
	uint64_t fresh_after; /* samples of packets sent before: stale */
	uint32_t round_min; /* smallest sample this round, ns; 0: none */
	uint32_t round_max; /* largest sample this round, ns */
	uint32_t q_ns; /* filtered queueing delay at the last round */
	uint32_t jit_ns; /* J: jitter allowance, ns (learn_jitter) */
	uint32_t wmax; /* the transport's limit, bytes */
	uint32_t round_pkts, round_marks, rtos, mss;
	uint16_t ring[OVR_K]; /* last K RTT samples, OVR_SAMPLE_UNIT_NS */
	uint8_t ring_n, ring_i, round_n, slow_start, sampled, hinted;
};
OVR_CC_PRIV_CHECK(struct ovr_state);

static struct ovr_state *st(struct ovr_cc_flow *f)
{
	return (struct ovr_state *)f->priv;
}

static double target_ns(const struct ovr_state *s)
{
	return OVR_T0_NS + OVR_K_PATH * (double)s->base_ns;
}

static double min_v(const struct ovr_state *s)
{
	return (double)s->line_bps / 8e9 / OVR_MIN_RATE_DIV *
	       ((double)s->base_ns + target_ns(s));
}

static double max_v(const struct ovr_state *s)
{
	return (double)s->line_bps / 8e9 * ((double)s->base_ns + target_ns(s));
}

static void publish(struct ovr_cc_flow *f, struct ovr_state *s)
{
	double bt = (double)s->base_ns + target_ns(s), rate, win;

	if (s->v < min_v(s))
		s->v = min_v(s);
	if (s->v > max_v(s))
		s->v = max_v(s);
	rate = s->v / bt; /* bytes per ns */
	f->rate_bps = (uint64_t)(rate * 8e9);
	if (!f->rate_bps)
		f->rate_bps = 1;
	/* enough window for the rate over the path's RTT and its jitter,
	 * but not over a queue: a queue does not widen the window, so
	 * flows that overload a bottleneck are held by their ACK clock */
	win = rate * (bt + (double)s->jit_ns) + 2.0 * s->mss;
	if (win > s->wmax)
		win = s->wmax;
	f->cwnd_bytes = (uint32_t)win;
}

static uint32_t filter_min(const struct ovr_state *s)
{
	uint32_t lo = UINT32_MAX;

	for (int i = 0; i < s->ring_n; i++)
		if (s->ring[i] < lo)
			lo = s->ring[i];
	return s->ring_n ? lo * OVR_SAMPLE_UNIT_NS : 0;
}

/*
 * The jitter allowance J: how far above the round's smallest sample the
 * others spread. Per-packet jitter spreads them; so does a queue that
 * grows within the round, which J must not follow (a window that grows
 * with the queue is no ACK clock): J grows by at most a factor J_GROW
 * plus T per round, so an incast's first rounds cannot buy its flows a
 * window for the queue they build, while a path's steady jitter is
 * learnt in a few rounds (0 -> 20 us in 6 rounds at T = 1.6 us). A
 * smaller spread pulls J down by 1/J_GAIN per round: jitter comes and
 * goes, one quiet round is no proof that it is gone. Rounds with a
 * standing queue count too: a flow that joins behind other flows' queue
 * may never see a queue-free round, and without J its window would hold
 * it below the rate its update asks for.
 */
static void learn_jitter(struct ovr_state *s, double t)
{
	double spread = (double)s->round_max - (double)s->round_min;
	double j = s->jit_ns;

	if (s->round_n < OVR_J_MIN_SAMPLES)
		return;
	if (spread > j) {
		double cap = j * OVR_J_GROW + t;

		j = spread < cap ? spread : cap;
	} else {
		j -= (j - spread) / OVR_J_GAIN;
	}
	s->jit_ns = (uint32_t)j;
}

/* After a decrease, the queue it will drain still shows in the samples of
 * packets sent before it: judge the next round on later packets only. */
static void forget(struct ovr_state *s, uint64_t now)
{
	s->fresh_after = now;
	s->ring_n = 0;
	s->ring_i = 0;
}

/* Close a round: one rate decision. */
static void close_round(struct ovr_state *s, uint64_t now)
{
	double b = (double)s->base_ns, t = target_ns(s), v = s->v, nv, qr, qf;
	uint32_t fmin = filter_min(s);

	qr = (double)s->round_min - b;
	qf = fmin > b ? (double)fmin - b : 0;
	if (qr < 0)
		qr = 0;
	s->q_ns = (uint32_t)qf;
	learn_jitter(s, t);
	if (qr <= t) {
		/* a sample near b this round: no standing queue */
		if (s->slow_start)
			nv = v * OVR_MI_MAX;
		else
			nv = v * (b + t) / (b + qr) +
			     OVR_A0 * sqrt(v / s->mss) * s->mss;
	} else if (s->ring_n >= OVR_MIN_SAMPLES) {
		s->slow_start = 0;
		nv = v * (b + t) / (b + qf) +
		     OVR_A_QUEUE * sqrt(v / s->mss) * s->mss;
	} else {
		nv = v; /* not enough evidence yet */
	}
	if (nv > v * OVR_MI_MAX)
		nv = v * OVR_MI_MAX;
	if (nv < v * OVR_MD_MAX)
		nv = v * OVR_MD_MAX;
	if (s->round_marks && s->round_pkts) {
		double frac = (double)s->round_marks / s->round_pkts;

		if (frac > 1)
			frac = 1;
		if (nv > v * (1 - frac / 2))
			nv = v * (1 - frac / 2);
		s->slow_start = 0;
	}
	if (nv < v)
		forget(s, now);
	s->v = nv;
	s->round_min = 0;
	s->round_max = 0;
	s->round_n = 0;
	s->round_pkts = 0;
	s->round_marks = 0;
	/* the next round lasts about one RTT at the current queue */
	s->round_end = now + (uint64_t)(b + (qf > t ? qf : t));
}

static void ovr_on_ack(struct ovr_cc_flow *f, const struct ovr_cc_ack *a)
{
	struct ovr_state *s = st(f);

	if (a->rtt_ns) {
		uint64_t u = a->rtt_ns / OVR_SAMPLE_UNIT_NS;
		uint32_t r = a->rtt_ns > UINT32_MAX ? UINT32_MAX :
						      (uint32_t)a->rtt_ns;

		/* a configured hint is a floor (a flow that starts behind a
		 * queue would take the queue for the path); without one the
		 * first sample starts the minimum */
		if ((!s->sampled && !s->hinted) || a->rtt_ns < s->base_ns)
			s->base_ns = a->rtt_ns;
		s->sampled = 1;
		if (a->now_ns - a->rtt_ns < s->fresh_after)
			goto stale;
		if (!s->round_min || r < s->round_min)
			s->round_min = r;
		if (r > s->round_max)
			s->round_max = r;
		if (s->round_n < UINT8_MAX)
			s->round_n++;
		s->ring[s->ring_i] =
			(uint16_t)(u > UINT16_MAX ? UINT16_MAX : u);
		s->ring_i = (uint8_t)((s->ring_i + 1) % OVR_K);
		if (s->ring_n < OVR_K)
			s->ring_n++;
	}
stale:
	s->round_pkts += (a->acked_bytes + s->mss - 1) / s->mss;
	s->rtos = 0;
	if (a->now_ns >= s->round_end && s->round_min)
		close_round(s, a->now_ns);
	publish(f, s);
}

static void ovr_on_ecn(struct ovr_cc_flow *f, uint64_t now_ns, uint32_t marks)
{
	struct ovr_state *s = st(f);

	(void)now_ns;
	s->round_marks += marks;
}

static bool may_cut(struct ovr_state *s, uint64_t now)
{
	if (s->last_cut &&
	    now < s->last_cut + s->base_ns + (uint64_t)target_ns(s) + s->q_ns)
		return false;
	s->last_cut = now;
	return true;
}

static bool congested(const struct ovr_state *s)
{
	return (double)s->q_ns >= OVR_LOSS_Q * target_ns(s) || s->round_marks;
}

static void ovr_on_loss(struct ovr_cc_flow *f, uint64_t now_ns,
			uint32_t lost_bytes)
{
	struct ovr_state *s = st(f);

	(void)lost_bytes;
	if (!congested(s))
		return; /* random loss: recovery resends, the rate stays */
	s->slow_start = 0;
	if (may_cut(s, now_ns)) {
		s->v *= OVR_LOSS_MD;
		forget(s, now_ns);
	}
	publish(f, s);
}

static void ovr_on_timeout(struct ovr_cc_flow *f, uint64_t now_ns)
{
	struct ovr_state *s = st(f);

	s->rtos++;
	s->slow_start = 0;
	if (s->rtos >= OVR_RTO_RESET)
		s->v = min_v(s);
	else if (congested(s) && may_cut(s, now_ns))
		s->v *= 0.5;
	publish(f, s);
}

static int ovr_init(struct ovr_cc_flow *f, const struct ovr_cc_params *p)
{
	struct ovr_state *s = st(f);

	if (!p->mss || !p->max_cwnd_bytes)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->mss = p->mss;
	s->line_bps = p->line_rate_bps ? p->line_rate_bps :
					 OVR_DEFAULT_RATE_BPS;
	s->base_ns = p->base_rtt_ns ? p->base_rtt_ns : OVR_DEFAULT_RTT_NS;
	s->hinted = p->base_rtt_ns != 0;
	s->wmax = p->max_cwnd_bytes;
	s->v = max_v(s) / 4;
	s->slow_start = 1;
	s->round_end = p->now_ns + s->base_ns + (uint64_t)target_ns(s);
	f->mss = p->mss;
	publish(f, s);
	return 0;
}

const struct ovr_cc_ops ovr_cc_ovr = {
	.on_ack = ovr_on_ack,
	.on_ecn = ovr_on_ecn,
	.on_loss = ovr_on_loss,
	.on_timeout = ovr_on_timeout,
	.init = ovr_init,
	.name = "ovr",
	.priv_size = sizeof(struct ovr_state),
};
