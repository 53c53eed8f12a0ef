// SPDX-License-Identifier: MIT
/*
 * "dcqcn": the reaction point (sender side) of DCQCN, after
 *   Y. Zhu, H. Eran, D. Firestone, C. Guo, M. Lipshteyn, Y. Liron,
 *   J. Padhye, S. Raindel, M. H. Yahia, M. Zhang, "Congestion Control for
 *   Large-Scale RDMA Deployments", ACM SIGCOMM 2015, pp. 523-536,
 *   doi:10.1145/2785956.2787484.
 *
 * Model. A flow is rate-controlled: Rc is the current (paced) rate, Rt the
 * target it recovers towards, alpha an estimate of how congested the path
 * is. The flow starts at line rate (RDMA NICs do; there is no slow start).
 *
 * On a CNP (congestion notification packet):
 *
 *     Rt    = Rc
 *     Rc    = Rc * (1 - alpha / 2)              (at least MIN_RATE)
 *     alpha = (1 - g) * alpha + g
 *     T = BC = 0, byte counter and both timers restart
 *
 * Every K without a CNP:  alpha = (1 - g) * alpha.
 *
 * A rate-increase event happens every T_INC of time (T counts them) and
 * every B bytes sent (BC counts them); on each, with F = 5:
 *
 *     max(T, BC) <= F     fast recovery:       Rc = (Rt + Rc) / 2
 *     min(T, BC) >  F     hyper increase:      Rt += i * R_HAI,
 *                                              i = min(T, BC) - F
 *                                              Rc = (Rt + Rc) / 2
 *                         (i as in QCN and htsim; the authors' ns3-rdma
 *                         uses min(T, BC) - F + 1)
 *     otherwise           additive increase:   Rt += R_AI
 *                                              Rc = (Rt + Rc) / 2
 *
 * (Rt and Rc never exceed line rate.)
 *
 *            CNP (any state)
 *     +-------------------------+------------------------+
 *     v                         |                        |
 *   FAST RECOVERY --T or BC > F--> ADDITIVE --T and BC > F--> HYPER
 *   (Rc halves the gap to Rt)    (Rt += R_AI)              (Rt += i R_HAI)
 *
 * Before the first CNP the flow sits at line rate and neither timer is
 * armed (as in QCN and in Mellanox's NICs: the first CNP arms the RP).
 *
 * DCQCN is rate-only: cwnd_bytes is the transport's maximum and rate_bps
 * is Rc. Loss and timeouts do not touch the rate: the paper runs over a
 * lossless (PFC) fabric and defines no reaction to them; the transport's
 * loss recovery still resends.
 *
 * Approximations forced by the hook (include/ovrdma/cc.h):
 *  - CNPs. The notification point (receiver) sends at most one CNP per
 *    CNP_INTERVAL per flow, and only when a CE-marked packet arrived. Our
 *    peer reports CE marks with its ACKs instead, so on_ecn(marks > 0) is
 *    taken as a CNP only when CNP_INTERVAL has passed since the last one
 *    taken; marks in between are dropped, as the NP would have dropped
 *    them. The interval is timed at the sender (ACK arrival), not at the
 *    receiver: the two differ by the jitter of the reverse path.
 *  - Byte counter. The paper counts bytes sent; the hook reports bytes
 *    delivered (on_ack), which trail the bytes sent by about one window.
 *  - Timers. No timers of our own: every hook first applies, in order,
 *    every alpha and rate-increase period that elapsed since the last
 *    call (a flow at line rate skips the no-op increases arithmetically),
 *    then handles its own event. Periods that end at the same instant as
 *    the event are applied before it.
 *  - Rc within 1 bit/s of Rt is set to Rt: halving the gap never closes
 *    it in floating point.
 *
 * Parameters:
 *   name           value                 source
 *   g              1/256                 paper; HPCC simulator EWMA_GAIN
 *   alpha (start)  1                     HPCC simulator (alpha = 1 on the
 *                                        first CNP), htsim dcqcn.cpp;
 *                                        Mellanox NICs' initial_alpha_value
 *                                        1023/1024 (as modelled by Google's
 *                                        isekai simulator)
 *   K (alpha)      55 us                 paper; HPCC AlphaResumInterval
 *                                        default (its run.py's
 *                                        "dcqcn_paper" sets 50 us)
 *   T_INC          55 us                 paper; HPCC "dcqcn_paper" RP_TIMER
 *   B              10^7 bytes (10 MB)    paper; htsim dcqcn.cpp _B
 *   F              5                     paper; HPCC FastRecoveryTimes
 *                                        default (its run.py sets 1)
 *   R_AI           5 Mbit/s per 25 Gbit/s of line rate (20 Mbit/s at 100G)
 *   R_HAI          50 Mbit/s per 25 Gbit/s (200 Mbit/s at 100G)
 *                                        HPCC simulator run.py: ai = 5 *
 *                                        bw / 25, hai = 50 * bw / 25
 *   MIN_RATE       100 Mbit/s            HPCC RdmaHw MinRate default
 *                                        (its run.py uses 1 Gbit/s); the
 *                                        authors' ns3-rdma; htsim
 *   CNP_INTERVAL   50 us                 paper (N); HPCC/ns3-rdma
 *                                        CNPInterval
 *   line rate      params, else 100 Gbit/s
 * (HPCC simulator: alibaba-edu/High-Precision-Congestion-Control,
 * simulation/run.py and src/point-to-point/model/rdma-hw.cc; htsim:
 * Broadcom/csg-htsim, sim/dcqcn.cpp; the authors' simulator:
 * bobzhuyb/ns3-rdma, src/point-to-point/model/qbb-net-device.cc. The HPCC
 * simulator's DCQCN is Mellanox's timer-only variant, without a byte
 * counter; the byte counter here follows the paper.)
 *
 * Against the HPCC simulator's reaction point (rdma-hw.cc, "Mellanox's
 * version", read at commit 9f4be2a; tests/unit/test_congestion_dcqcn.c):
 * one CNP followed by silence gives the same rate at every increase event
 * (cut, five fast-recovery steps, additive, hyper capped at line rate) and
 * the same alpha decay. By design it differs in: the cut, made when the
 * CNP is taken here and at the next RateDecreaseInterval check there;
 * the target, which a CNP there leaves alone when no timer increase ran
 * since the last cut (Mellanox's clamp_tgt_rate 0 with
 * clamp_tgt_rate_after_time_inc 1), the paper sets Rt = Rc on every CNP;
 * hyper increase, entered on the timer alone there and adding a constant
 * R_HAI, here once T and BC both passed F, adding i R_HAI; and its alpha
 * timer, which runs from the first CNP there and restarts at each CNP
 * here (the paper's "K without a CNP").
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include <ovrdma/cc.h>

#define DCQCN_G (1.0 / 256) /* alpha's EWMA gain */
#define DCQCN_ALPHA0 1.0 /* alpha before any CNP: assume the worst */
/* alpha timer: longer than CNP_INTERVAL, so that a flow still being
 * marked gets a CNP before its alpha decays (the paper's reasoning) */
#define DCQCN_K_NS 55000ull
#define DCQCN_T_INC_NS 55000ull /* rate-increase timer */
#define DCQCN_B_BYTES 10000000ull /* byte counter, one stage */
#define DCQCN_F 5u /* fast-recovery stages */
#define DCQCN_RAI_PER_25G 5e6 /* bit/s of R_AI per 25 Gbit/s of line */
#define DCQCN_RHAI_PER_25G 50e6 /* bit/s of R_HAI per 25 Gbit/s */
#define DCQCN_MIN_RATE_BPS 100e6 /* floor of a throttled flow */
#define DCQCN_CNP_INTERVAL_NS 50000ull /* NP: one CNP per 50 us per flow */
#define DCQCN_DEFAULT_LINE_BPS 100e9 /* when the NIC rate is unknown */

struct dcqcn_state {
	double rc; /* current rate, bit/s */
	double rt; /* target rate, bit/s */
	double alpha;
	double line_bps;
	double rai_bps; /* additive step */
	double rhai_bps; /* hyper step */
	uint64_t alpha_at; /* alpha timer: start of the running period */
	uint64_t inc_at; /* rate-increase timer: same */
	uint64_t last_cnp; /* when the last CNP was taken */
	uint64_t bytes; /* byte counter: bytes into the running stage */
	uint32_t t_stage; /* T: timer stages since the last CNP */
	uint32_t bc_stage; /* BC: byte-counter stages since the last CNP */
	uint32_t cwnd; /* the transport's maximum */
	uint8_t armed; /* a CNP was taken: timers run */
};
OVR_CC_PRIV_CHECK(struct dcqcn_state);

static struct dcqcn_state *st(struct ovr_cc_flow *f)
{
	return (struct dcqcn_state *)f->priv;
}

static double min_rate(const struct dcqcn_state *s)
{
	return s->line_bps < DCQCN_MIN_RATE_BPS ? s->line_bps :
						  DCQCN_MIN_RATE_BPS;
}

static uint32_t sat_add(uint32_t a, uint64_t b)
{
	return b >= UINT32_MAX - a ? UINT32_MAX : a + (uint32_t)b;
}

/* Back at line rate, where every increase step is a no-op. */
static bool at_line(const struct dcqcn_state *s)
{
	return s->rt >= s->line_bps && s->rc >= s->line_bps;
}

/* One rate-increase event; T or BC was just advanced. */
static void rate_increase(struct dcqcn_state *s)
{
	uint32_t hi = s->t_stage > s->bc_stage ? s->t_stage : s->bc_stage;
	uint32_t lo = s->t_stage < s->bc_stage ? s->t_stage : s->bc_stage;

	/* fast recovery (hi <= F) leaves Rt where the last cut put it */
	if (hi > DCQCN_F) {
		if (lo > DCQCN_F) /* hyper */
			s->rt += (double)(lo - DCQCN_F) * s->rhai_bps;
		else /* additive */
			s->rt += s->rai_bps;
		if (s->rt > s->line_bps)
			s->rt = s->line_bps;
	}
	s->rc = (s->rt + s->rc) / 2;
	/* halving the gap never quite closes it: snap the last bit/s */
	if (s->rt - s->rc < 1.0)
		s->rc = s->rt;
}

/* Apply the alpha and rate-increase periods that ended by @now. */
static void catch_up(struct dcqcn_state *s, uint64_t now)
{
	uint64_t n;

	if (!s->armed)
		return;
	if (now > s->alpha_at) {
		n = (now - s->alpha_at) / DCQCN_K_NS;
		if (n) {
			s->alpha *= pow(1 - DCQCN_G, (double)n);
			s->alpha_at += n * DCQCN_K_NS;
		}
	}
	if (now > s->inc_at) {
		n = (now - s->inc_at) / DCQCN_T_INC_NS;
		while (n && !at_line(s)) {
			s->t_stage = sat_add(s->t_stage, 1);
			s->inc_at += DCQCN_T_INC_NS;
			rate_increase(s);
			n--;
		}
		/* at line rate: count the remaining periods, nothing moves */
		s->t_stage = sat_add(s->t_stage, n);
		s->inc_at += n * DCQCN_T_INC_NS;
	}
}

static void take_cnp(struct dcqcn_state *s, uint64_t now)
{
	s->rt = s->rc;
	s->rc = s->rc * (1 - s->alpha / 2);
	if (s->rc < min_rate(s))
		s->rc = min_rate(s);
	s->alpha = (1 - DCQCN_G) * s->alpha + DCQCN_G;
	s->t_stage = 0;
	s->bc_stage = 0;
	s->bytes = 0;
	s->alpha_at = now;
	s->inc_at = now;
	s->last_cnp = now;
	s->armed = 1;
}

static void publish(struct ovr_cc_flow *f, const struct dcqcn_state *s)
{
	double r = s->rc;

	if (r < min_rate(s))
		r = min_rate(s);
	if (r > s->line_bps)
		r = s->line_bps;
	f->rate_bps = (uint64_t)(r + 0.5);
	f->cwnd_bytes = s->cwnd;
}

static void dcqcn_on_ack(struct ovr_cc_flow *f, const struct ovr_cc_ack *a)
{
	struct dcqcn_state *s = st(f);

	catch_up(s, a->now_ns);
	if (s->armed) {
		s->bytes += a->acked_bytes;
		while (s->bytes >= DCQCN_B_BYTES) {
			s->bytes -= DCQCN_B_BYTES;
			s->bc_stage = sat_add(s->bc_stage, 1);
			rate_increase(s);
		}
	}
	/* CE marks come through on_ecn, called before this hook */
	publish(f, s);
}

static void dcqcn_on_ecn(struct ovr_cc_flow *f, uint64_t now_ns, uint32_t marks)
{
	struct dcqcn_state *s = st(f);

	catch_up(s, now_ns);
	if (marks &&
	    (!s->armed || (now_ns >= s->last_cnp &&
			   now_ns - s->last_cnp >= DCQCN_CNP_INTERVAL_NS)))
		take_cnp(s, now_ns);
	publish(f, s);
}

/* DCQCN defines no reaction to loss: keep the timers current, no more. */
static void dcqcn_on_loss(struct ovr_cc_flow *f, uint64_t now_ns,
			  uint32_t lost_bytes)
{
	(void)lost_bytes;
	catch_up(st(f), now_ns);
	publish(f, st(f));
}

static void dcqcn_on_timeout(struct ovr_cc_flow *f, uint64_t now_ns)
{
	catch_up(st(f), now_ns);
	publish(f, st(f));
}

static int dcqcn_init(struct ovr_cc_flow *f, const struct ovr_cc_params *p)
{
	struct dcqcn_state *s = st(f);

	*s = (struct dcqcn_state){ 0 };
	s->line_bps = p->line_rate_bps ? (double)p->line_rate_bps :
					 DCQCN_DEFAULT_LINE_BPS;
	s->rc = s->line_bps;
	s->rt = s->line_bps;
	s->alpha = DCQCN_ALPHA0;
	s->rai_bps = DCQCN_RAI_PER_25G * s->line_bps / 25e9;
	s->rhai_bps = DCQCN_RHAI_PER_25G * s->line_bps / 25e9;
	s->alpha_at = p->now_ns;
	s->inc_at = p->now_ns;
	s->cwnd = p->max_cwnd_bytes ? p->max_cwnd_bytes : UINT32_MAX;
	f->mss = p->mss;
	publish(f, s);
	return 0;
}

const struct ovr_cc_ops ovr_cc_dcqcn = {
	.on_ack = dcqcn_on_ack,
	.on_ecn = dcqcn_on_ecn,
	.on_loss = dcqcn_on_loss,
	.on_timeout = dcqcn_on_timeout,
	.init = dcqcn_init,
	.name = "dcqcn",
	.priv_size = sizeof(struct dcqcn_state),
};
