// SPDX-License-Identifier: MIT
/*
 * "swift": Swift, delay-target AIMD on a window, after
 *   G. Kumar, N. Dukkipati, K. Jang, H. M. G. Wassel, X. Wu, B. Montazeri,
 *   Y. Wang, K. Springborn, C. Alfeld, M. Ryan, D. Wetherall, A. Vahdat,
 *   "Swift: Delay is Simple and Effective for Congestion Control in the
 *   Datacenter", ACM SIGCOMM 2020, pp. 514-528,
 *   doi:10.1145/3387514.3406591.
 *
 * Model (the paper's Algorithm 1). cwnd is in packets, fractional, and may
 * fall below one packet, when the flow is paced instead.
 *
 *   target = BASE_TARGET + hops * H + fs(cwnd)                   (S3.5)
 *   fs     = clamp(FS_A / sqrt(cwnd) + FS_B, 0, FS_RANGE)
 *   FS_A   = FS_RANGE / (1 / sqrt(FS_MIN_CWND) - 1 / sqrt(FS_MAX_CWND))
 *   FS_B   = -FS_A / sqrt(FS_MAX_CWND)
 *   (fs is FS_RANGE at FS_MIN_CWND and 0 from FS_MAX_CWND on: small
 *   windows, many flows, tolerate a longer queue.)
 *
 *   can_decrease = (now - t_last_decrease >= rtt)
 *
 *   on ACK:        retx_cnt = 0
 *                  delay < target:  cwnd += AI / cwnd * num_acked (cwnd >= 1)
 *                                   cwnd += AI * num_acked        (cwnd < 1)
 *                  else if can_decrease:
 *                    cwnd *= max(1 - BETA * (delay - target) / delay,
 *                                1 - MAX_MDF)
 *   on fast-recovery loss:
 *                  retx_cnt = 0; if can_decrease: cwnd *= 1 - MAX_MDF
 *   on RTO:        retx_cnt += 1
 *                  retx_cnt >= RETX_RESET_THRESHOLD: cwnd = MIN_CWND
 *                  else if can_decrease: cwnd *= 1 - MAX_MDF
 *   after each:    cwnd = clamp(cwnd, MIN_CWND, max_cwnd)
 *                  cwnd < cwnd before the event: t_last_decrease = now
 *                  cwnd < 1: pace one packet per rtt / cwnd
 *
 * Outputs: cwnd_bytes = cwnd * mss (at least 1 byte: below one packet the
 * transport's empty-pipe rule sends one packet and the pacing rate spaces
 * them); rate_bps = cwnd * mss * 8 / rtt when cwnd < 1, else 0 (no
 * pacing: the paper paces only below one packet), at most the line rate
 * when it is known.
 *
 * Deviations and approximations:
 *  - Delay is the transport's RTT sample: the hook cannot split fabric from
 *    host (endpoint) delay, so the single target above covers both, and
 *    Swift's separate endpoint window is not modelled.
 *  - rtt (for can_decrease and pacing) is the latest RTT sample; an event
 *    that carries none uses the last one (before any sample: the base RTT
 *    hint, else BASE_TARGET). An ACK without a sample is judged by the last
 *    sample too; before any sample an ACK changes nothing.
 *  - t_last_decrease moves only when cwnd strictly fell. Algorithm 1's
 *    last step reads "if cwnd <= cwnd_prev" (as we recall the paper; not
 *    re-checked), which taken literally also moves it on every event that
 *    left cwnd alone (an MD refused by can_decrease, a window at its
 *    maximum), so that a flow ACKed more often than once per RTT could
 *    never decrease again. htsim (csg-htsim sim/swift.cpp) also uses "<".
 *  - Before the first decrease, can_decrease is true.
 *  - hops comes from params; 0 (unknown, as on overlays) drops the hop term.
 *  - num_acked = acked_bytes / mss (fractional for short segments).
 *  - Swift has no ECN input: on_ecn does nothing.
 *  - The initial window is the transport's suggestion (10 packets, RFC
 *    6928's initial window, when it gives none).
 *
 * Parameters (fixed here; change the constants to retune, there is no
 * run-time configuration):
 *   name                  value            source
 *   BASE_TARGET           25 us            chosen for a 100G fabric, RTT
 *                                          10-15 us unloaded (htsim: 20 us)
 *   H (per hop)           1 us             chosen (htsim: BASE_TARGET/6.55)
 *   FS_RANGE              5 * BASE_TARGET  htsim sim/swift.cpp
 *   FS_MIN_CWND           0.1 packets      htsim
 *   FS_MAX_CWND           100 packets      htsim
 *   AI                    1 packet         htsim
 *   BETA                  0.8              htsim
 *   MAX_MDF               0.5              htsim
 *   RETX_RESET_THRESHOLD  5                htsim
 *   MIN_CWND              0.001 packets    chosen: a flow keeps sending
 *                                          (one packet per 1000 RTTs)
 *   max_cwnd              params max_cwnd_bytes / mss
 * htsim marks its values as guesses; we found no set published by the
 * paper's authors.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include <ovrdma/cc.h>

#define SWIFT_BASE_TARGET_NS 25000.0
#define SWIFT_H_NS 1000.0 /* target added per switch hop */
#define SWIFT_FS_RANGE_NS (5 * SWIFT_BASE_TARGET_NS)
#define SWIFT_FS_MIN_CWND 0.1 /* packets */
#define SWIFT_FS_MAX_CWND 100.0 /* packets */
#define SWIFT_AI 1.0 /* packets per RTT */
#define SWIFT_BETA 0.8
#define SWIFT_MAX_MDF 0.5
#define SWIFT_RETX_RESET_THRESHOLD 5u
#define SWIFT_MIN_CWND 0.001 /* packets */
#define SWIFT_INIT_CWND 10.0 /* packets, when the transport suggests none */

struct swift_state {
	double cwnd; /* packets */
	double max_cwnd; /* packets */
	double fs_a, fs_b; /* flow-scaling curve, ns */
	double hop_ns; /* hops * H */
	double line_bps; /* pacing cap; 0: unknown */
	uint64_t rtt; /* latest RTT sample, ns; 0: none yet */
	uint64_t rtt_hint; /* rtt before any sample, ns */
	uint64_t t_last_decrease;
	uint32_t retx_cnt;
	uint32_t mss;
	uint8_t decreased; /* t_last_decrease is set */
};
OVR_CC_PRIV_CHECK(struct swift_state);

static struct swift_state *st(struct ovr_cc_flow *f)
{
	return (struct swift_state *)f->priv;
}

static uint64_t cur_rtt(const struct swift_state *s)
{
	return s->rtt ? s->rtt : s->rtt_hint;
}

static bool can_decrease(const struct swift_state *s, uint64_t now)
{
	return !s->decreased || (now >= s->t_last_decrease &&
				 now - s->t_last_decrease >= cur_rtt(s));
}

static double target_delay(const struct swift_state *s)
{
	double fs = 0;

	if (s->cwnd > 0) {
		fs = s->fs_a / sqrt(s->cwnd) + s->fs_b;
		if (fs < 0)
			fs = 0;
		if (fs > SWIFT_FS_RANGE_NS)
			fs = SWIFT_FS_RANGE_NS;
	}
	return SWIFT_BASE_TARGET_NS + s->hop_ns + fs;
}

/* The common tail of every event: bound, note a decrease, publish. */
static void finish(struct ovr_cc_flow *f, struct swift_state *s, double prev,
		   uint64_t now)
{
	double bytes;

	if (s->cwnd < SWIFT_MIN_CWND)
		s->cwnd = SWIFT_MIN_CWND;
	if (s->cwnd > s->max_cwnd)
		s->cwnd = s->max_cwnd;
	if (s->cwnd < prev) {
		s->t_last_decrease = now;
		s->decreased = 1;
	}
	bytes = s->cwnd * s->mss + 0.5;
	if (bytes < 1)
		f->cwnd_bytes = 1; /* never a zero window */
	else if (bytes >= (double)UINT32_MAX)
		f->cwnd_bytes = UINT32_MAX;
	else
		f->cwnd_bytes = (uint32_t)bytes;
	if (s->cwnd < 1) {
		/* one packet per rtt / cwnd */
		double r = s->cwnd * s->mss * 8 * 1e9 / (double)cur_rtt(s);

		if (s->line_bps > 0 && r > s->line_bps)
			r = s->line_bps;
		f->rate_bps = r < 1 ? 1 : (uint64_t)(r + 0.5);
	} else {
		f->rate_bps = 0;
	}
}

static void swift_on_ack(struct ovr_cc_flow *f, const struct ovr_cc_ack *a)
{
	struct swift_state *s = st(f);
	double prev = s->cwnd, delay, target, n;
	bool can;

	if (!s->mss) /* init failed */
		return;
	if (a->rtt_ns)
		s->rtt = a->rtt_ns;
	can = can_decrease(s, a->now_ns);
	s->retx_cnt = 0;
	if (s->rtt) {
		delay = (double)s->rtt;
		target = target_delay(s);
		n = (double)a->acked_bytes / s->mss;
		if (delay < target) {
			if (s->cwnd >= 1)
				s->cwnd += SWIFT_AI / s->cwnd * n;
			else
				s->cwnd += SWIFT_AI * n;
		} else if (can) {
			double mdf = 1 - SWIFT_BETA * (delay - target) / delay;

			if (mdf < 1 - SWIFT_MAX_MDF)
				mdf = 1 - SWIFT_MAX_MDF;
			s->cwnd *= mdf;
		}
	}
	finish(f, s, prev, a->now_ns);
}

static void swift_on_ecn(struct ovr_cc_flow *f, uint64_t now_ns, uint32_t marks)
{
	(void)f;
	(void)now_ns;
	(void)marks;
}

/* Loss detection declared a loss: the paper's "fast recovery" event. */
static void swift_on_loss(struct ovr_cc_flow *f, uint64_t now_ns,
			  uint32_t lost_bytes)
{
	struct swift_state *s = st(f);
	double prev = s->cwnd;

	(void)lost_bytes;
	if (!s->mss)
		return;
	s->retx_cnt = 0;
	if (can_decrease(s, now_ns))
		s->cwnd *= 1 - SWIFT_MAX_MDF;
	finish(f, s, prev, now_ns);
}

static void swift_on_timeout(struct ovr_cc_flow *f, uint64_t now_ns)
{
	struct swift_state *s = st(f);
	double prev = s->cwnd;
	bool can = can_decrease(s, now_ns);

	if (!s->mss)
		return;
	s->retx_cnt++;
	if (s->retx_cnt >= SWIFT_RETX_RESET_THRESHOLD)
		s->cwnd = SWIFT_MIN_CWND;
	else if (can)
		s->cwnd *= 1 - SWIFT_MAX_MDF;
	finish(f, s, prev, now_ns);
}

static int swift_init(struct ovr_cc_flow *f, const struct ovr_cc_params *p)
{
	struct swift_state *s = st(f);

	*s = (struct swift_state){ 0 };
	f->mss = p->mss;
	if (!p->mss) {
		/* nothing is measured in packets without a packet size */
		f->cwnd_bytes = p->max_cwnd_bytes ? p->max_cwnd_bytes : 1;
		f->rate_bps = 0;
		return -EINVAL;
	}
	s->mss = p->mss;
	s->max_cwnd = (p->max_cwnd_bytes ? (double)p->max_cwnd_bytes :
					   (double)UINT32_MAX) /
		      p->mss;
	if (s->max_cwnd < SWIFT_MIN_CWND)
		s->max_cwnd = SWIFT_MIN_CWND;
	s->cwnd = p->init_cwnd_bytes ? (double)p->init_cwnd_bytes / p->mss :
				       SWIFT_INIT_CWND;
	s->fs_a = SWIFT_FS_RANGE_NS /
		  (1 / sqrt(SWIFT_FS_MIN_CWND) - 1 / sqrt(SWIFT_FS_MAX_CWND));
	s->fs_b = -s->fs_a / sqrt(SWIFT_FS_MAX_CWND);
	s->hop_ns = p->hops * SWIFT_H_NS;
	s->line_bps = (double)p->line_rate_bps;
	s->rtt_hint = p->base_rtt_ns ? p->base_rtt_ns :
				       (uint64_t)SWIFT_BASE_TARGET_NS;
	/* prev 0: clamping the first window is not a decrease */
	finish(f, s, 0, p->now_ns);
	return 0;
}

const struct ovr_cc_ops ovr_cc_swift = {
	.on_ack = swift_on_ack,
	.on_ecn = swift_on_ecn,
	.on_loss = swift_on_loss,
	.on_timeout = swift_on_timeout,
	.init = swift_init,
	.name = "swift",
	.priv_size = sizeof(struct swift_state),
};
