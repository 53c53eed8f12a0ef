// SPDX-License-Identifier: MIT
/*
 * The transport engine: RC queue pairs over a lossy network. See
 * include/ovrdma/engine.h for the interface and docs/TRANSPORT.md for the
 * design; the short version:
 *
 *  - Each QP has one send PSN space for everything it sends in sequence
 *    (its requests and its responses to the peer's READs and atomics) and
 *    one receive window over the peer's. Every sequenced packet is
 *    acknowledged cumulatively (ack_psn) and selectively (SACK blocks);
 *    only lost packets are resent (RACK-style time-based loss detection,
 *    a tail-loss probe, and an RTO with backoff as the last resort).
 *  - Tagged data (WRITE, READ response) is placed at its target on
 *    arrival, in any order; SEND data is placed into the receive buffer
 *    of its MSN at its offset. A WRITE's last OVR_ENG_TAIL bytes are held
 *    back until everything before them has landed. READ and atomic
 *    requests execute in PSN order, exactly once (the receive window drops
 *    retransmitted requests; responses are resent from the responder's
 *    own send space, never re-executed).
 *  - Completions are delivered in order: a send WR when the peer has
 *    acknowledged all its packets (or, for READ/atomics, when the whole
 *    response and everything before it has arrived), a receive when its
 *    message and everything before it has arrived.
 *
 * The files, split as Linux's rxe splits its transport: this one has the
 * engine itself (create / destroy, memory regions, the poll loop and its
 * timers, statistics); eng_qp.c the QP's lifecycle and error transitions,
 * eng_req.c the requester (posting, transmit), eng_resp.c the responder
 * (receive, placement, READ / atomic execution, ACKs), eng_comp.c the
 * completer (ACK / SACK / NAK processing, loss detection, send
 * completions), eng_srq.c shared receive queues, eng_dev.c device-memory
 * copies. engine_impl.h is their one private header.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <ovrdma/compiler.h>
#include <ovrdma/util.h>

#include "engine_impl.h"

static inline uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

void ovr_eng_cfg_default(struct ovr_eng_cfg *cfg)
{
	*cfg = (struct ovr_eng_cfg){
		.max_qp = 1024,
		.max_mr = 4096,
		.max_pdu = 4096 + 128,
		.window_pkts = 1024,
		.sb_pool = 256,
		.init_rto_ns = 1000000, /* 1 ms until the first sample */
		.min_rto_ns = 200000,
		.max_rto_ns = 500000000,
		.ack_delay_ns = 5000,
		.ack_every = 4,
		.tx_burst = 16,
		.cc = NULL,
		.cc_init_cwnd = 0,
		.line_rate_bps = 0,
		.base_rtt_ns = 0,
		.seed = 0,
		/* answers to packets for vanished QPs: enough for a peer
		 * node's thousand QPs to learn within a few retransmissions,
		 * far too few to make a node a useful reflector (each answer
		 * is 48 bytes, no larger than what it answers) */
		.term_rate = 10000,
		.term_burst = 64,
		.max_srq = 256,
	};
}

/* Can an engine run with @cfg and @ops? */
static bool cfg_valid(const struct ovr_eng_cfg *cfg,
		      const struct ovr_eng_ops *ops)
{
	if (!cfg || !ops || !ops->tx_alloc || !ops->tx || !ops->cqe ||
	    !cfg->max_qp || cfg->max_qp > (1u << 20) ||
	    (!cfg->max_mr && !cfg->mr_share) ||
	    (cfg->mr_share && !ops->dev_copy != !cfg->mr_share->ops.dev_copy) ||
	    cfg->qpn_tag_bits > 20 ||
	    (cfg->qpn_tag >> cfg->qpn_tag_bits) != 0 ||
	    ovr_eng_slot_bits(cfg->max_qp) + cfg->qpn_tag_bits > 20 ||
	    cfg->window_pkts < OVR_DP_RXWIN_MIN ||
	    cfg->window_pkts > OVR_DP_RXWIN_MAX ||
	    (cfg->window_pkts & (cfg->window_pkts - 1)) || !cfg->sb_pool ||
	    cfg->max_pdu < DATA_HDR_MAX + OVR_WIRE_CRC_LEN + 256 ||
	    cfg->max_pdu > OVR_WIRE_MAX_PDU || !cfg->tx_burst ||
	    !cfg->ack_every || cfg->dev_batches > OVR_ENG_MAX_DEV_BATCHES ||
	    !ops->dev_batch_close != !ops->dev_batch_poll ||
	    (ops->dev_batch_close && !ops->dev_fence) ||
	    (ops->dev_batch_faults && !ops->dev_batch_close))
		return false;
	return !cfg->cc || !ovr_cc_ops_validate(cfg->cc);
}

struct ovr_eng *ovr_eng_create(const struct ovr_eng_cfg *cfg,
			       const struct ovr_eng_ops *ops, void *ctx)
{
	struct ovr_eng *e;
	uint32_t maxqp, i;
	uint64_t seed;

	if (!cfg_valid(cfg, ops)) {
		errno = EINVAL;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->cfg = *cfg;
	e->ops = *ops;
	e->ctx = ctx;
	e->cc = cfg->cc ? cfg->cc : ovr_cc_default();
	e->max_seg = cfg->max_pdu - (uint32_t)DATA_HDR_MAX - OVR_WIRE_CRC_LEN;
	seed = cfg->seed;
	if (!seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)(uintptr_t)e ^ 0x9e3779b97f4a7c15ull;
	if (cfg->mr_share) {
		e->mrs = ovr_mr_share(cfg->mr_share->mrs);
		e->mr_sharer = true;
		/* the table is what it shares: the engine itself may go */
		e->cfg.mr_share = NULL;
	} else {
		e->mrs = ovr_mr_create((uint32_t)ovr_pow2_at_least(cfg->max_mr),
				       seed);
	}
	maxqp = (uint32_t)ovr_pow2_at_least(cfg->max_qp);
	for (e->qp_bits = 0; (1u << e->qp_bits) < maxqp; e->qp_bits++)
		;
	e->qp_gen = (uint32_t)(seed >> 40);
	e->qps = calloc(maxqp, sizeof(*e->qps));
	e->sb_size = sizeof(struct eng_sb) +
		     cfg->window_pkts * sizeof(struct eng_pkt);
	e->sb_mem = calloc(cfg->sb_pool, e->sb_size);
	e->rxbits_mem =
		calloc((size_t)maxqp * ovr_dp_rxwin_words(cfg->window_pkts),
		       sizeof(uint64_t));
	if (cfg->max_srq) {
		uint32_t n = (uint32_t)ovr_pow2_at_least(cfg->max_srq);

		for (e->srq_bits = 0; (1u << e->srq_bits) < n; e->srq_bits++)
			;
		e->srq_gen = (uint32_t)(seed >> 20);
		e->srqs = calloc(n, sizeof(*e->srqs));
	}
	if (ops->dev_fence) {
		/* without dev_batch_*, closing a batch is a fence: one in
		 * flight at a time is enough */
		e->nbat = ops->dev_batch_close ?
				  (cfg->dev_batches ? cfg->dev_batches :
						      OVR_ENG_DEV_BATCHES) +
					  1 :
				  2;
		e->dev_failq = calloc(maxqp, sizeof(*e->dev_failq));
		e->dev_faults =
			calloc(OVR_ENG_BATCH_COPIES, sizeof(*e->dev_faults));
		if (e->dev_failq && e->dev_faults)
			e->bat = eng_bat_alloc(e->nbat);
	}
	if (!e->mrs || !e->qps || !e->sb_mem || !e->rxbits_mem ||
	    (cfg->max_srq && !e->srqs) ||
	    (ops->dev_fence && (!e->dev_failq || !e->bat))) {
		ovr_eng_destroy(e);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < cfg->sb_pool; i++) {
		struct eng_sb *sb = (struct eng_sb *)((uint8_t *)e->sb_mem +
						      i * e->sb_size);

		sb->next_free = e->sb_free;
		e->sb_free = sb;
	}
	e->act.act_next = e->act.act_prev = &e->act;
	e->term_tokens = cfg->term_burst;
	return e;
}

/*
 * A table others share outlives @e: the references its work requests
 * hold go back (as each QP's reset and each SRQ's destroy would), else
 * their regions could never be deregistered.
 */
static void drop_refs(struct ovr_eng *e)
{
	for (uint32_t k = 0; e->qps && k < (1u << e->qp_bits); k++) {
		struct eng_qp *qp = &e->qps[k];

		if (qp->in_use)
			eng_qp_put_refs(e, qp);
	}
	for (uint32_t k = 0; e->srqs && k < (1u << e->srq_bits); k++)
		if (e->srqs[k].in_use)
			eng_srq_put_refs(e, &e->srqs[k]);
}

void ovr_eng_destroy(struct ovr_eng *e)
{
	uint32_t i;

	if (!e)
		return;
	if (e->qps && e->bat) {
		eng_dev_settle(e); /* the held buffers go back */
		for (uint32_t k = 0; k < e->nbat; k++) {
			free(e->bat[k].qp);
			free(e->bat[k].htx);
			free(e->bat[k].hcqe);
			free(e->bat[k].cp);
		}
	}
	if (e->mrs && ovr_mr_shared(e->mrs))
		drop_refs(e);
	free(e->bat);
	free(e->dev_failq);
	free(e->dev_faults);
	if (e->qps)
		for (i = 0; i < (1u << e->qp_bits); i++)
			eng_qp_free_queues(&e->qps[i]);
	if (e->srqs)
		for (i = 0; i < (1u << e->srq_bits); i++)
			eng_srq_free(&e->srqs[i]);
	free(e->srqs);
	free(e->qps);
	free(e->sb_mem);
	free(e->rxbits_mem);
	ovr_mr_destroy(e->mrs); /* the last user frees it */
	free(e);
}

int ovr_eng_reg_mr(struct ovr_eng *e, uint32_t pd, uint64_t va, uint64_t len,
		   unsigned int access, void *host, uint32_t *key)
{
	int rc = ovr_mr_reg(e->mrs, pd, va, len, access, (uint8_t *)host, key);

	return rc < 0 && rc != -ENOSPC && rc != -EINVAL ? -EINVAL : rc;
}

int ovr_eng_reg_mr_dev(struct ovr_eng *e, uint32_t pd, uint64_t va,
		       uint64_t len, unsigned int access, void *dev,
		       uint64_t dev_off, uint32_t *key)
{
	return ovr_eng_reg_mr_ext(e, pd, va, len, access, dev, dev_off, 0, key);
}

int ovr_eng_reg_mr_ext(struct ovr_eng *e, uint32_t pd, uint64_t va,
		       uint64_t len, unsigned int access, void *dev,
		       uint64_t dev_off, unsigned int flags, uint32_t *key)
{
	int rc;

	if (flags & ~OVR_ENG_MR_HOST)
		return -EINVAL;
	if (!e->ops.dev_copy)
		return -EOPNOTSUPP;
	rc = ovr_mr_reg_ops(e->mrs, pd, va, len, access, dev, dev_off,
			    flags & OVR_ENG_MR_HOST, key);
	return rc < 0 && rc != -ENOSPC && rc != -EINVAL ? -EINVAL : rc;
}

int ovr_eng_dereg_mr(struct ovr_eng *e, uint32_t key)
{
	int rc;

	/* the service may unmap it next: no queued copy may still use it */
	if (e->dev_busy)
		eng_dev_settle(e);
	rc = ovr_mr_dereg(e->mrs, key);
	/* posted receives give way (eng_recv_revoke) */
	if (rc == -EBUSY && eng_recv_revoke(e, key))
		rc = ovr_mr_dereg(e->mrs, key);
	return rc;
}

int ovr_eng_mr_modify(struct ovr_eng *e, uint32_t key, uint32_t pd,
		      unsigned int access)
{
	int rc = ovr_mr_modify(e->mrs, key, pd, access);

	/* posted receives naming it: checked again (eng_recv_recheck) */
	if (!rc)
		eng_recv_recheck(e, key, pd, access);
	return rc;
}

int ovr_eng_mr_yield(struct ovr_eng *e, uint32_t key)
{
	if (ovr_mr_refs(e->mrs, key) < 0)
		return -EINVAL;
	/* the service may unmap it next: no queued copy may still use it */
	if (e->dev_busy)
		eng_dev_settle(e);
	return (int)eng_recv_yield(e, key);
}

void ovr_eng_mr_recheck(struct ovr_eng *e, uint32_t key)
{
	unsigned int access;
	uint32_t pd;

	if (!ovr_mr_query(e->mrs, key, &pd, &access))
		eng_recv_recheck(e, key, pd, access);
}

void *ovr_eng_mr_dev(struct ovr_eng *e, uint32_t key)
{
	return ovr_mr_dev_cookie(e->mrs, key);
}

int ovr_eng_alloc_mw(struct ovr_eng *e, uint32_t pd, unsigned int type,
		     uint32_t *rkey)
{
	return ovr_mw_alloc(e->mrs, pd, type, rkey);
}

int ovr_eng_dealloc_mw(struct ovr_eng *e, uint32_t rkey)
{
	return ovr_mw_dealloc(e->mrs, rkey);
}

static uint64_t qp_deadline(struct ovr_eng *e, const struct eng_qp *qp)
{
	uint64_t t = UINT64_MAX;

	if (qp->rsp_at)
		t = min64(t, qp->rsp_at);

	if (qp->rto_at)
		t = min64(t, qp->rto_at);
	if (qp->pto_at)
		t = min64(t, qp->pto_at);
	if (qp->reo_at)
		t = min64(t, qp->reo_at);
	if (qp->ack_at)
		t = min64(t, qp->ack_at);
	if (qp->rnr_wait)
		t = min64(t, qp->rnr_until);
	if (qp->credit_wait_since) {
		uint64_t probe = 2 * qp->rtt.srtt_ns;
		uint64_t at =
			qp->credit_wait_since + (probe < 20000 ? 20000 : probe);

		/* once due, the probe waits for the window or for responses
		 * ahead of it: those wake the QP, a past time must not */
		if (at > e->now)
			t = min64(t, at);
	}
	return t;
}

static void qp_timers(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	if (qp->rnr_wait && now >= qp->rnr_until)
		qp->rnr_wait = false;
	if (qp->reo_at && now >= qp->reo_at)
		eng_rack_detect(e, qp, now);
	if (qp->pto_at && now >= qp->pto_at)
		eng_on_pto(e, qp, now);
	if (qp->rto_at && now >= qp->rto_at)
		eng_on_rto(e, qp, now);
	/* without READs or atomics outstanding there is nothing to watch
	 * (eng_rsp_watch would only clear a watch already clear): no call
	 * into eng_comp.c on every poll */
	if (qp->type == OVR_QPT_RC &&
	    (qp->rd_out || qp->rsp_at || qp->rsp_probes))
		eng_rsp_watch(e, qp, now);
}

/* Could this QP send something right now if the window allowed? */
static bool qp_has_work(const struct eng_qp *qp)
{
	if (qp->nak_code || qp->ack_now || qp->term_pending)
		return true;
	if (qp->state == OVR_QPS_ERR)
		return false;
	if (qp->nlost)
		return true;
	if (qp->rd_send_msn != qp->rd_exec_msn)
		return true;
	return qp->state >= OVR_QPS_RTS && qp->sq_next != qp->sq_prod;
}

uint64_t ovr_eng_poll(struct ovr_eng *e, uint64_t now, uint32_t budget)
{
	uint64_t next = UINT64_MAX;
	uint32_t total = 0;
	bool again = true;

	e->now = now;
	if (!budget)
		budget = UINT32_MAX;
	/* timers first, once per poll */
	for (struct eng_qp *qp = e->act.act_next; qp != &e->act;
	     qp = qp->act_next)
		if (qp->state >= OVR_QPS_RTR)
			qp_timers(e, qp, now);
	/* then rounds of at most tx_burst packets per QP */
	while (again && total < budget) {
		again = false;
		for (struct eng_qp *qp = e->act.act_next; qp != &e->act;
		     qp = qp->act_next) {
			uint32_t burst =
				eng_min32(e->cfg.tx_burst, budget - total);
			uint32_t n = eng_qp_tx(e, qp, now, burst);

			total += n;
			if (n == burst)
				again = true;
			if (total >= budget)
				break;
		}
	}
	for (struct eng_qp *qp = e->act.act_next, *nx; qp != &e->act; qp = nx) {
		uint64_t t = qp_deadline(e, qp);

		nx = qp->act_next;
		if (qp->cc.rate_bps && qp_has_work(qp) && qp->next_tx_ns > now)
			t = min64(t, qp->next_tx_ns);
		next = min64(next, t);
		if (t == UINT64_MAX && !qp_has_work(qp) && !qp->sb)
			eng_qp_deactivate(qp);
	}
	if (total >= budget)
		return now;
	return next;
}

void ovr_eng_get_stats(const struct ovr_eng *e, struct ovr_eng_stats *st)
{
	*st = e->st;
	st->qps = e->nqp;
	/* a shared table's regions are counted by the engine that made it */
	st->mrs = e->mr_sharer ? 0 : ovr_mr_count(e->mrs);
}

void ovr_eng_stats_add(struct ovr_eng_stats *sum,
		       const struct ovr_eng_stats *one)
{
	const size_t qps_word = offsetof(struct ovr_eng_stats, qps) / 8;
	const size_t max_word =
		offsetof(struct ovr_eng_stats, dev_batch_max_inflight) / 8;
	uint64_t *s = (uint64_t *)sum;
	const uint64_t *o = (const uint64_t *)one;

	_Static_assert(sizeof(struct ovr_eng_stats) % 8 == 0 &&
			       offsetof(struct ovr_eng_stats, qps) % 8 == 0 &&
			       offsetof(struct ovr_eng_stats, mrs) ==
				       offsetof(struct ovr_eng_stats, qps) + 4,
		       "ovr_eng_stats: 64-bit words, qps and mrs in one");
	for (size_t i = 0; i < sizeof(*sum) / 8; i++) {
		if (i == qps_word) {
			sum->qps += one->qps;
			sum->mrs += one->mrs;
		} else if (i == max_word) {
			if (o[i] > s[i])
				s[i] = o[i];
		} else {
			s[i] += o[i];
		}
	}
}

void ovr_eng_mem(const struct ovr_eng *e, const struct ovr_eng_qp_cap *cap,
		 struct ovr_eng_mem *m)
{
	m->qp_ctx = sizeof(struct eng_qp) +
		    ovr_dp_rxwin_words(e->cfg.window_pkts) * sizeof(uint64_t);
	m->per_send_wqe = sizeof(struct eng_swqe) +
			  cap->max_send_sge * sizeof(struct eng_lsge) +
			  cap->max_inline_data;
	m->per_recv_wqe = sizeof(struct eng_rwqe) +
			  cap->max_recv_sge * sizeof(struct eng_lsge);
	m->per_inflight_pkt = sizeof(struct eng_pkt);
	m->scoreboard = e->sb_size;
}

int ovr_eng_dgram_build(void *buf, size_t cap, uint32_t sqpn, uint32_t dqpn,
			uint32_t qkey, uint32_t tsval, const void *payload,
			uint32_t len)
{
	struct ovr_wire_pkt p;

	memset(&p, 0, sizeof(p));
	p.version = OVR_WIRE_VERSION;
	p.opcode = OVR_OP_UD_SEND;
	p.flags = OVR_F_LAST;
	p.dqpn = dqpn;
	p.sqpn = sqpn;
	p.tsval = tsval | 1u;
	p.u.ud.qkey = qkey;
	p.payload = payload;
	p.payload_len = len;
	return ovr_wire_build(&p, buf, cap);
}

int ovr_eng_dgram_parse(const void *pdu, size_t len, uint32_t *qkey,
			const uint8_t **payload, uint32_t *plen)
{
	struct ovr_wire_pkt p;
	int rc = ovr_wire_parse(pdu, len, &p, NULL);

	if (rc)
		return rc;
	if (p.opcode != OVR_OP_UD_SEND)
		return -EINVAL;
	*qkey = p.u.ud.qkey;
	*payload = p.payload;
	*plen = p.payload_len;
	return 0;
}
