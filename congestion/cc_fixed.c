// SPDX-License-Identifier: MIT
/*
 * "fixed": a constant window (init_cwnd_bytes, or max_cwnd_bytes when the
 * transport suggests none), no pacing. It ignores every signal, which is
 * exactly what a fixed-window baseline should do; the engine's tests use
 * it so that their packet counts do not depend on a controller.
 */
#include <errno.h>

#include <ovrdma/cc.h>

static void fixed_on_ack(struct ovr_cc_flow *f, const struct ovr_cc_ack *a)
{
	(void)f;
	(void)a;
}

static void fixed_on_ecn(struct ovr_cc_flow *f, uint64_t now_ns, uint32_t marks)
{
	(void)f;
	(void)now_ns;
	(void)marks;
}

static void fixed_on_loss(struct ovr_cc_flow *f, uint64_t now_ns,
			  uint32_t lost_bytes)
{
	(void)f;
	(void)now_ns;
	(void)lost_bytes;
}

static void fixed_on_timeout(struct ovr_cc_flow *f, uint64_t now_ns)
{
	(void)f;
	(void)now_ns;
}

static int fixed_init(struct ovr_cc_flow *f, const struct ovr_cc_params *p)
{
	f->cwnd_bytes = p->init_cwnd_bytes ? p->init_cwnd_bytes :
					     p->max_cwnd_bytes;
	f->mss = p->mss;
	f->rate_bps = 0;
	return 0;
}

const struct ovr_cc_ops ovr_cc_fixed = {
	.on_ack = fixed_on_ack,
	.on_ecn = fixed_on_ecn,
	.on_loss = fixed_on_loss,
	.on_timeout = fixed_on_timeout,
	.init = fixed_init,
	.name = "fixed",
	.priv_size = 0,
};
