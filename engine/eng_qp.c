// SPDX-License-Identifier: MIT
/*
 * QP lifecycle (the engine's rxe_qp.c): create, reset, modify - the
 * attributes of ovr_eng_qp_modify become the QP's state in one place,
 * qp_set_attr - query, stats and destroy; and the error transitions
 * every other part uses: ERROR with its flushes (eng_qp_error and the
 * variants that say who is told), and the responder's fatal NAK.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/compiler.h>
#include <ovrdma/util.h>

#include "engine_impl.h"
#include "qpstate.h"

static uint32_t mtu_bytes(uint32_t mtu)
{
	return mtu >= OVR_MTU_256 && mtu <= OVR_MTU_4096 ? 128u << mtu : 0;
}

/* The MTU of UD QPs: the largest verbs MTU whose datagram (OTH, DETH,
 * payload, CRC) fits in cfg.max_pdu. */
static uint32_t ud_mtu(const struct ovr_eng *e)
{
	uint32_t room = e->cfg.max_pdu - (uint32_t)sizeof(struct ovr_wire_oth) -
			(uint32_t)sizeof(struct ovr_wire_deth) -
			OVR_WIRE_CRC_LEN;
	uint32_t m = OVR_MTU_4096;

	while (m > OVR_MTU_256 && mtu_bytes(m) > room)
		m--;
	return m;
}

void eng_qp_free_queues(struct eng_qp *qp)
{
	free(qp->sq);
	free(qp->ssge);
	free(qp->sinl);
	free(qp->rq);
	free(qp->rsge);
	free(qp->bind);
	qp->sq = NULL;
	qp->ssge = NULL;
	qp->sinl = NULL;
	qp->rq = NULL;
	qp->rsge = NULL;
	qp->bind = NULL;
}

/*
 * Move @qp to ERROR: the send WR at SQ index @fail completes with @status
 * (unless that is FLUSH), every other outstanding send WR and every
 * receive flushes, in posting order. Nothing is sent afterwards except a
 * pending NAK.
 */
void eng_qp_error(struct ovr_eng *e, struct eng_qp *qp, uint32_t fail,
		  uint32_t status, uint32_t verr)
{
	uint32_t i;

	if (qp->state == OVR_QPS_ERR)
		return;
	qp->state = OVR_QPS_ERR;
	for (i = qp->sq_cons; i != qp->sq_prod; i++) {
		struct eng_swqe *w = &qp->sq[i & qp->sq_mask];
		uint32_t st = OVR_WC_WR_FLUSH_ERR, ve = 0;

		if (i == fail) {
			st = status;
			ve = verr;
		} else if (w->state == W_LOCERR) {
			st = w->status;
			ve = eng_locerr_verr(w);
		}
		eng_complete_send(e, qp, i, st, ve, true);
	}
	qp->sq_cons = qp->sq_next = qp->sq_prod;
	qp->rd_out = 0;
	for (i = qp->rq_cons; i != qp->rq_prod; i++) {
		struct eng_rwqe *r = eng_rwqe(qp, i);

		eng_complete_recv(
			e, qp, i, r->bad ? r->bad : OVR_WC_WR_FLUSH_ERR,
			r->bad == OVR_WC_LOC_LEN_ERR ? OVR_VERR_LEN : 0);
	}
	qp->rq_cons = qp->rq_prod;
	/* what it took from its SRQ has all completed (verbs' cue that
	 * the QP may be destroyed without losing receives) */
	if (qp->srq && e->ops.event)
		e->ops.event(e->ctx, qp->user, qp->qpn,
			     OVR_EV_QP_LAST_WQE_REACHED);
	eng_sb_release(e, qp);
	memset(qp->stash, 0, sizeof(qp->stash));
	memset(qp->rdq, 0, sizeof(qp->rdq));
	qp->ack_at = 0;
	qp->ack_now = false;
	qp->rnr_wait = false;
	qp->credit_wait_since = 0;
	qp->pend_code = 0;
	qp->fail_pending = false;
}

/* ERROR with the oldest outstanding send WR failing with @status. */
void eng_qp_error_head(struct ovr_eng *e, struct eng_qp *qp, uint32_t status,
		       uint32_t verr)
{
	eng_qp_error(e, qp, qp->sq_cons, status, verr);
}

/*
 * Can @qp tell its peer it is going away? It must be an RC QP that has
 * been to RTS: the TERMINATE carries its next send PSN, which a QP still
 * in RTR does not have yet (sq_psn comes with RTS). Its peer learns
 * otherwise: a destroyed QP's number answers the peer's next packet.
 */
static bool term_can_tell(const struct eng_qp *qp)
{
	return qp->type == OVR_QPT_RC &&
	       (qp->state == OVR_QPS_RTS || qp->state == OVR_QPS_SQD);
}

/*
 * ERROR for a cause of this side's own (the application, a local error,
 * retry or RNR budget spent): a connected QP tells its peer with a
 * TERMINATE, sent by the poll loop and repeated in answer to the peer's
 * later packets. Causes the peer already knows (a NAK either way, a
 * TERMINATE, a version mismatch) use eng_qp_error() alone.
 */
void eng_qp_error_local(struct ovr_eng *e, struct eng_qp *qp, uint32_t fail,
			uint32_t status, uint32_t verr)
{
	bool connected = term_can_tell(qp);

	eng_qp_error(e, qp, fail, status, verr);
	if (connected) {
		qp->term_reason = OVR_TERM_ERROR;
		qp->term_pending = true;
		eng_qp_activate(e, qp);
	}
}

/* A responder-side violation: NAK it, then ERROR (verbs class C/J). */
void eng_qp_fatal_nak(struct ovr_eng *e, struct eng_qp *qp, uint8_t code,
		      uint32_t psn)
{
	if (code == ENG_NAK_GONE) {
		/* the memory's owner is gone: no NAK that would blame the
		 * peer's request; a TERMINATE, as its QP's destruction
		 * (which follows) would send */
		eng_qp_error_local(e, qp, qp->sq_cons, OVR_WC_WR_FLUSH_ERR, 0);
		return;
	}
	qp->nak_code = code;
	qp->nak_timer = 0;
	qp->nak_psn = psn;
	qp->fatal_code = code;
	qp->fatal_psn = psn;
	eng_qp_error_head(e, qp, OVR_WC_WR_FLUSH_ERR, 0);
	eng_qp_event(e, qp,
		     code == OVR_NAK_REM_ACCESS ? OVR_EV_QP_ACCESS_ERR :
						  OVR_EV_QP_REQ_ERR);
	eng_qp_activate(e, qp);
}

/*
 * The QP's queues. With an SRQ there is no receive queue but a ring of
 * @nbind SRQ slot numbers (4 bytes each): the receives the QP has taken
 * for messages in its receive window.
 */
static int qp_alloc_queues(struct eng_qp *qp, struct ovr_eng_qp_cap *cap,
			   bool srq, uint32_t nbind)
{
	uint32_t ns = (uint32_t)ovr_pow2_at_least(
		cap->max_send_wr ? cap->max_send_wr : 1);
	uint32_t nr = (uint32_t)ovr_pow2_at_least(
		cap->max_recv_wr ? cap->max_recv_wr : 1);

	cap->max_send_sge = cap->max_send_sge ? cap->max_send_sge : 1;
	cap->max_recv_sge = cap->max_recv_sge ? cap->max_recv_sge : 1;
	if (srq) {
		nr = nbind;
		cap->max_recv_sge = 0;
	}
	qp->sq = calloc(ns, sizeof(*qp->sq));
	qp->ssge = calloc((size_t)ns * cap->max_send_sge, sizeof(*qp->ssge));
	qp->sinl = cap->max_inline_data ? calloc(ns, cap->max_inline_data) :
					  NULL;
	if (srq) {
		qp->bind = calloc(nr, sizeof(*qp->bind));
	} else {
		qp->rq = calloc(nr, sizeof(*qp->rq));
		qp->rsge = calloc((size_t)nr * cap->max_recv_sge,
				  sizeof(*qp->rsge));
	}
	if (!qp->sq || !qp->ssge || (cap->max_inline_data && !qp->sinl) ||
	    (srq ? !qp->bind : !qp->rq || !qp->rsge)) {
		eng_qp_free_queues(qp);
		return -ENOMEM;
	}
	qp->sq_mask = ns - 1;
	qp->rq_mask = nr - 1;
	cap->max_send_wr = ns;
	cap->max_recv_wr = srq ? 0 : nr;
	qp->cap = *cap;
	return 0;
}

int ovr_eng_qp_create(struct ovr_eng *e, const struct ovr_eng_qp_init *init,
		      uint32_t *qpn)
{
	struct ovr_eng_qp_cap cap;
	struct eng_qp *qp = NULL;
	struct eng_srq *srq = NULL;
	uint32_t n = 1u << e->qp_bits, i;
	uint32_t low_bits = e->qp_bits + e->cfg.qpn_tag_bits;
	uint32_t gen_bits = 24 - low_bits;
	uint64_t *rxbits;
	int rc;

	if (!init || !qpn ||
	    (init->qp_type && init->qp_type != OVR_QPT_RC &&
	     init->qp_type != OVR_QPT_UC && init->qp_type != OVR_QPT_UD))
		return -EINVAL;
	cap = init->cap;
	if (cap.max_send_wr > OVR_ENG_MAX_WR ||
	    cap.max_recv_wr > OVR_ENG_MAX_WR ||
	    cap.max_send_sge > OVR_ENG_MAX_SGE ||
	    cap.max_recv_sge > OVR_ENG_MAX_SGE ||
	    cap.max_inline_data > OVR_ENG_MAX_INLINE)
		return -EINVAL;
	if (e->nqp >= e->cfg.max_qp)
		return -ENOSPC;
	for (i = 0; i < n; i++)
		if (!e->qps[i].in_use) {
			qp = &e->qps[i];
			break;
		}
	if (!qp)
		return -ENOSPC;
	if (init->srq) {
		srq = eng_srq_get(e, init->srq);
		if (!srq || srq->pd != init->pd)
			return -EINVAL;
	}
	rxbits = qp->rxbits;
	memset(qp, 0, sizeof(*qp));
	/* an SRQ's receives are taken for messages in the receive window:
	 * at most window_pkts of them */
	rc = qp_alloc_queues(qp, &cap, srq != NULL, e->cfg.window_pkts);
	if (rc)
		return rc;
	qp->srq = srq;
	if (srq)
		srq->nqp++;
	/* QPN = generation | tag | slot: a packet for a destroyed QP does
	 * not reach the next QP in that slot, nor one for another engine's
	 * QP this engine's (cfg.qpn_tag). Generation 0 is skipped so QPN 0
	 * and 1 (IB's special QPs) are never used. */
	e->qp_gen = (e->qp_gen + 1) & ((1u << gen_bits) - 1);
	if (!e->qp_gen)
		e->qp_gen = 1;
	qp->qpn = (e->qp_gen << low_bits) | (e->cfg.qpn_tag << e->qp_bits) | i;
	qp->type = init->qp_type ? init->qp_type : OVR_QPT_RC;
	if (qp->type == OVR_QPT_UD) {
		/* no path: the port's MTU, fixed */
		qp->mtu = ud_mtu(e);
		qp->seg = mtu_bytes(qp->mtu);
	}
	qp->in_use = true;
	qp->state = OVR_QPS_RESET;
	qp->pd = init->pd;
	qp->send_cq = init->send_cq;
	qp->recv_cq = init->recv_cq;
	qp->sig_all = init->sq_sig_all;
	qp->user = init->user;
	qp->rxbits = e->rxbits_mem +
		     (size_t)i * ovr_dp_rxwin_words(e->cfg.window_pkts);
	(void)rxbits;
	qp->st.state = OVR_QPS_RESET;
	e->nqp++;
	*qpn = qp->qpn;
	return 0;
}

void eng_qp_put_refs(struct ovr_eng *e, struct eng_qp *qp)
{
	for (uint32_t i = qp->sq_cons; i != qp->sq_prod; i++)
		eng_swqe_put_refs(e, qp, i);
	for (uint32_t i = qp->rq_cons; i != qp->rq_prod; i++)
		eng_rwqe_put_refs(e, qp, i);
}

/* Back to RESET: everything is dropped without completions. */
static void qp_reset(struct ovr_eng *e, struct eng_qp *qp)
{
	eng_qp_put_refs(e, qp);
	eng_sb_release(e, qp);
	eng_qp_deactivate(qp);
	qp->sq_prod = qp->sq_cons = qp->sq_next = 0;
	qp->rq_prod = qp->rq_cons = 0;
	qp->rd_out = 0;
	qp->q0_msn = qp->q1_msn = 1;
	qp->rq_msn = 1;
	qp->rd_exec_msn = qp->rd_send_msn = qp->rd_free_msn = 1;
	qp->rd_next_msn = 1;
	qp->credit_valid = false;
	qp->credit_wait_since = 0;
	memset(qp->rdq, 0, sizeof(qp->rdq));
	memset(qp->stash, 0, sizeof(qp->stash));
	qp->nak_code = qp->fatal_code = qp->pend_code = 0;
	qp->fail_pending = false;
	qp->ack_at = 0;
	qp->ack_now = false;
	qp->unacked = 0;
	qp->rnr_wait = false;
	qp->retries = qp->rnr_tries = 0;
	qp->rsp_at = 0;
	qp->rsp_probes = 0;
	qp->comm_est = false;
	qp->psn_adopted = false;
	qp->sqd_drained = false;
	qp->ce_count = qp->peer_ce = 0;
	qp->ts_recent = 0;
	qp->ts_fresh = false; /* nothing of the next connection to echo */
	qp->term_reason = 0;
	qp->term_pending = false;
	memset(&qp->uc, 0, sizeof(qp->uc));
	memset(&qp->st, 0, sizeof(qp->st));
}

int ovr_eng_qp_destroy(struct ovr_eng *e, uint32_t qpn)
{
	struct eng_qp *qp = eng_qp_get(e, qpn);

	if (!qp)
		return -EINVAL;
	/* nothing held may name it (its user value) once it is gone */
	if (e->dev_busy)
		eng_dev_settle(e);
	/* tell a connected peer now: there will be no later chance */
	if (term_can_tell(qp) || qp->term_pending)
		eng_tx_term(e, qp->dest_qpn, qp->qpn, OVR_TERM_DESTROYED,
			    qp->snd_nxt, qp->peer, qp->user, qp, e->now);
	qp_reset(e, qp);
	if (qp->cc.mss && e->cc->release)
		e->cc->release(&qp->cc);
	if (qp->srq)
		qp->srq->nqp--;
	qp->srq = NULL;
	eng_qp_free_queues(qp);
	qp->in_use = false;
	qp->qpn = 0;
	e->nqp--;
	return 0;
}

static int check_attr_values(const struct ovr_eng_qp_attr *a, unsigned int m)
{
	if ((m & OVR_QP_PATH_MTU) && !mtu_bytes(a->path_mtu))
		return -EINVAL;
	if ((m & OVR_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((m & OVR_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((m & OVR_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((m & OVR_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((m & OVR_QP_MAX_QP_RD_ATOMIC) &&
	    a->max_rd_atomic > OVR_ENG_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((m & OVR_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > OVR_ENG_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((m & OVR_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags &
	     ~(OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE |
	       OVR_ACCESS_REMOTE_READ | OVR_ACCESS_REMOTE_ATOMIC)))
		return -EINVAL;
	if ((m & OVR_QP_DEST_QPN) && (a->dest_qp_num & ~M24))
		return -EINVAL;
	if ((m & OVR_QP_CAP))
		return -EINVAL; /* resizing queues is not supported */
	return 0;
}

void eng_qp_to_rts(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	struct ovr_cc_params p;

	ovr_dp_rtt_init(&qp->rtt, e->cfg.init_rto_ns, e->cfg.min_rto_ns,
			e->cfg.max_rto_ns, 1000);
	if (qp->cc.mss && e->cc->release)
		e->cc->release(&qp->cc);
	memset(&qp->cc, 0, sizeof(qp->cc));
	p.mss = qp->seg;
	p.max_cwnd_bytes = e->cfg.window_pkts * PKT_COST(qp->seg);
	/* default: an eighth of the PSN window, so that a loss (which holds
	 * snd_una back for about an RTT) does not close the window */
	p.init_cwnd_bytes = e->cfg.cc_init_cwnd ?
				    e->cfg.cc_init_cwnd :
				    e->cfg.window_pkts / 8 * PKT_COST(qp->seg);
	if (p.init_cwnd_bytes > p.max_cwnd_bytes)
		p.init_cwnd_bytes = p.max_cwnd_bytes;
	p.line_rate_bps = e->cfg.line_rate_bps;
	p.base_rtt_ns = e->cfg.base_rtt_ns;
	p.hops = 0;
	p.now_ns = now;
	qp->cc.mss = qp->seg;
	e->cc->init(&qp->cc, &p);
	if (!qp->cc.mss)
		qp->cc.mss = qp->seg;
	qp->last_progress_ns = now;
}

/*
 * The one converter from ovr_eng_qp_modify's attributes (@a, the fields
 * @mask names, already checked by check_attr_values) to the QP's state;
 * ovr_eng_qp_query reads them back. The state itself, and what a
 * transition starts (eng_qp_to_rts), are ovr_eng_qp_modify's.
 */
static void qp_set_attr(struct ovr_eng *e, struct eng_qp *qp,
			const struct ovr_eng_qp_attr *a, unsigned int mask)
{
	if (mask & OVR_QP_ACCESS_FLAGS)
		qp->access = a->qp_access_flags;
	if (mask & OVR_QP_QKEY)
		qp->qkey = a->qkey;
	if (mask & OVR_QP_AV)
		qp->peer = a->peer;
	if (mask & OVR_QP_PATH_MTU) {
		qp->mtu = a->path_mtu;
		qp->seg = eng_min32(mtu_bytes(a->path_mtu), e->max_seg);
	}
	if (mask & OVR_QP_DEST_QPN)
		qp->dest_qpn = a->dest_qp_num;
	if (mask & OVR_QP_RQ_PSN)
		ovr_dp_rxwin_init(&qp->rx, qp->rxbits, e->cfg.window_pkts,
				  a->rq_psn & M24);
	if ((mask & OVR_QP_SQ_PSN) && !qp->psn_adopted) {
		eng_sb_release(e, qp);
		qp->snd_una = qp->snd_nxt = a->sq_psn & M24;
	}
	if (mask & OVR_QP_TIMEOUT)
		qp->timeout = a->timeout;
	if (mask & OVR_QP_RETRY_CNT)
		qp->retry_cnt = a->retry_cnt;
	if (mask & OVR_QP_RNR_RETRY)
		qp->rnr_retry = a->rnr_retry;
	if (mask & OVR_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = a->min_rnr_timer;
	if (mask & OVR_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = a->max_rd_atomic;
	if (mask & OVR_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = a->max_dest_rd_atomic;
}

int ovr_eng_qp_modify(struct ovr_eng *e, uint32_t qpn,
		      const struct ovr_eng_qp_attr *a, unsigned int mask,
		      uint64_t now_ns)
{
	struct eng_qp *qp = eng_qp_get(e, qpn);
	uint32_t cur, next;

	if (!qp || !a)
		return -EINVAL;
	cur = qp->state;
	if ((mask & OVR_QP_CUR_STATE) && a->cur_qp_state != cur)
		return -EINVAL;
	next = (mask & OVR_QP_STATE) ? a->qp_state : cur;
	if (next > OVR_QPS_ERR)
		return -EINVAL;
	if (ovr_qp_modify_check(qp->type, cur, next, mask))
		return -EINVAL;
	if (check_attr_values(a, mask))
		return -EINVAL;

	if (next == OVR_QPS_RESET) {
		qp_reset(e, qp);
		qp->state = OVR_QPS_RESET;
		return 0;
	}
	if (next == OVR_QPS_ERR) {
		eng_qp_deactivate(qp);
		eng_qp_error_local(e, qp, qp->sq_cons, OVR_WC_WR_FLUSH_ERR, 0);
		return 0;
	}
	if (cur == OVR_QPS_RESET)
		qp_reset(e, qp);
	qp_set_attr(e, qp, a, mask);
	if (next == OVR_QPS_RTS && cur == OVR_QPS_RTR &&
	    qp->type == OVR_QPT_RC && !qp->psn_adopted)
		eng_qp_to_rts(e, qp, now_ns);
	if (next == OVR_QPS_RTS && cur == OVR_QPS_RTR && qp->type == OVR_QPT_UC)
		eng_uc_to_rts(e, qp, now_ns);
	if (next == OVR_QPS_SQD) {
		qp->sqd_notify = mask & OVR_QP_EN_SQD_ASYNC_NOTIFY;
		qp->sqd_drained = false;
	}
	qp->state = next;
	qp->st.state = next;
	if (next == OVR_QPS_SQD)
		eng_sq_complete(e, qp); /* may be drained already */
	eng_qp_activate(e, qp);
	return 0;
}

int ovr_eng_qp_query(struct ovr_eng *e, uint32_t qpn, struct ovr_eng_qp_attr *a)
{
	struct eng_qp *qp = eng_qp_get(e, qpn);

	if (!qp || !a)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->qp_state = a->cur_qp_state = qp->state;
	a->path_mtu = qp->mtu;
	a->qp_access_flags = qp->access;
	a->dest_qp_num = qp->dest_qpn;
	a->rq_psn = qp->rx.ack_psn;
	a->sq_psn = qp->snd_nxt;
	a->qkey = qp->qkey;
	a->peer = qp->peer;
	a->timeout = qp->timeout;
	a->retry_cnt = qp->retry_cnt;
	a->rnr_retry = qp->rnr_retry;
	a->min_rnr_timer = qp->min_rnr_timer;
	a->max_rd_atomic = qp->max_rd_atomic;
	a->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	a->sq_draining = qp->state == OVR_QPS_SQD && qp->sq_cons != qp->sq_next;
	a->cap = qp->cap;
	return 0;
}

int ovr_eng_qp_stats(struct ovr_eng *e, uint32_t qpn,
		     struct ovr_eng_qp_stats *st)
{
	struct eng_qp *qp = eng_qp_get(e, qpn);

	if (!qp || !st)
		return -EINVAL;
	*st = qp->st;
	st->state = qp->state;
	st->snd_una = qp->snd_una;
	st->snd_nxt = qp->snd_nxt;
	st->rcv_nxt = qp->rx.ack_psn;
	st->inflight_pkts = (qp->snd_nxt - qp->snd_una) & M24;
	st->cwnd_bytes = qp->cc.cwnd_bytes;
	st->rate_bps = qp->cc.rate_bps;
	st->srtt_ns = qp->rtt.srtt_ns;
	st->rto_ns = qp->rtt.rto_ns;
	return 0;
}
