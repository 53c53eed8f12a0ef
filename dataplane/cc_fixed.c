// SPDX-License-Identifier: MIT
/*
 * The engine's default congestion controller until congestion/ provides
 * real ones: a constant window (init_cwnd_bytes), no pacing. It ignores
 * every signal, which is exactly what a fixed-window baseline should do.
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
	f->cwnd_bytes = p->init_cwnd_bytes;
	f->mss = p->mss;
	f->rate_bps = 0;
	return 0;
}

static void fixed_release(struct ovr_cc_flow *f)
{
	(void)f;
}

const struct ovr_cc_ops ovr_cc_fixed = {
	.on_ack = fixed_on_ack,
	.on_ecn = fixed_on_ecn,
	.on_loss = fixed_on_loss,
	.on_timeout = fixed_on_timeout,
	.init = fixed_init,
	.release = fixed_release,
	.name = "fixed",
	.priv_size = 0,
};

int ovr_cc_ops_validate(const struct ovr_cc_ops *ops)
{
	if (!ops || !ops->on_ack || !ops->on_ecn || !ops->on_loss ||
	    !ops->on_timeout || !ops->init || !ops->release || !ops->name ||
	    !ops->name[0] || ops->priv_size > OVR_CC_PRIV_BYTES)
		return -EINVAL;
	return 0;
}
