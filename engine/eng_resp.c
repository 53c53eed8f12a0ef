// SPDX-License-Identifier: MIT
/*
 * The responder (the engine's rxe_resp.c): receive queues, and
 * everything that arrives - ovr_eng_rx_from checks a PDU and hands it
 * on (ACK / NAK to the completer, a sequenced packet to rx_seq, which
 * has one handler per opcode class); placement of SEND and WRITE data,
 * READ and atomic execution in order (rx_advance), the READ / atomic
 * responses it owes (responder resources, tx_resp), the ACKs and NAKs
 * it sends, TERMINATEs received, UD datagrams received.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/compiler.h>
#include <ovrdma/util.h>

#include "engine_impl.h"

/* Copy @len bytes (of a message of @msg_len) between @buf and the
 * location @host / @dev + @dev_off (what ovr_mr_check_dev resolved):
 * into it when @to_loc. */
static bool loc_copy(struct ovr_eng *e, struct eng_qp *qp, int64_t rpsn,
		     uint8_t *host, void *dev, uint64_t dev_off, uint8_t *buf,
		     uint32_t len, bool to_loc, uint32_t msg_len)
{
	if (dev)
		return eng_dev_copy(e, qp, rpsn, dev, dev_off, buf, len, to_loc,
				    msg_len);
	if (to_loc)
		memcpy(host, buf, len);
	else
		memcpy(buf, host, len);
	e->st.host_copy_bytes += len;
	return true;
}

static bool sge_write(struct ovr_eng *e, struct eng_qp *qp, int64_t rpsn,
		      const struct eng_lsge *s, unsigned int n, uint32_t off,
		      const uint8_t *src, uint32_t len, uint32_t msg_len)
{
	return eng_sge_copy(e, qp, rpsn, s, n, off, (uint8_t *)(uintptr_t)src,
			    len, true, msg_len);
}

void eng_complete_recv(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx,
		       uint32_t status, uint32_t verr)
{
	struct eng_rwqe *r = eng_rwqe(qp, idx);
	struct ovr_eng_wc wc = {
		.wr_id = r->wr_id,
		.status = status,
		.opcode = r->wc_opcode,
		.byte_len = status == OVR_WC_SUCCESS ? r->msg_len : 0,
		.imm_data = r->imm,
		.qp_num = qp->qpn,
		/* UD: the sender of the datagram, kept in last_psn */
		.src_qp = qp->type == OVR_QPT_UD ? r->last_psn : qp->dest_qpn,
		.wc_flags = status == OVR_WC_SUCCESS ? r->wc_flags : 0,
		.vendor_err = verr,
	};

	if (status != OVR_WC_SUCCESS)
		wc.opcode = OVR_WC_RECV;
	/* held with it: what a late copy failure decides (eng_cqe_fail) */
	e->cqe_recv = qp->type == OVR_QPT_RC;
	e->cqe_ridx = idx;
	e->cqe_psn = r->last_psn;
	eng_emit_cqe(e, qp->recv_cq, &wc);
	e->cqe_recv = false;
	eng_rwqe_put_refs(e, qp, idx);
}

/*
 * A request violates protection or limits. In order (everything before it
 * has arrived), NAK and fail now; beyond a hole, remember it and do so
 * when the hole fills, so the NAK's PSN is also a true cumulative ACK and
 * the requester completes everything before it normally.
 */
static void violation(struct ovr_eng *e, struct eng_qp *qp, uint8_t code,
		      uint32_t psn)
{
	if (psn == qp->rx.ack_psn) {
		eng_qp_fatal_nak(e, qp, code, psn);
		return;
	}
	if (!qp->pend_code || PSN_LT(psn, qp->pend_psn)) {
		qp->pend_code = code;
		qp->pend_psn = psn;
	}
}

/* Fill receive entry @r and its scatter list @s from @wr, checking and
 * referencing each key against @pd (a bad one marks the entry bad). */
void eng_rwqe_fill(struct ovr_eng *e, uint32_t pd, struct eng_rwqe *r,
		   struct eng_lsge *s, const struct ovr_eng_recv_wr *wr,
		   uint32_t total)
{
	memset(r, 0, sizeof(*r));
	r->wr_id = wr->wr_id;
	r->cap = total;
	r->wc_opcode = OVR_WC_RECV;
	for (uint32_t i = 0; i < wr->num_sge; i++) {
		const struct ovr_eng_sge *g = &wr->sg_list[i];
		struct ovr_mr_loc loc;

		s[i].len = g->length;
		s[i].key = 0;
		s[i].host = NULL;
		s[i].dev = NULL;
		r->nsge = (uint8_t)(i + 1);
		if (!g->length)
			continue;
		if (ovr_mr_check_dev(e->mrs, g->lkey, pd, g->addr, g->length,
				     OVR_ACCESS_LOCAL_WRITE, &loc) ||
		    ovr_mr_get(e->mrs, g->lkey)) {
			r->bad = OVR_WC_LOC_PROT_ERR;
			r->nsge = (uint8_t)i;
			break;
		}
		eng_set_lsge(&s[i], &loc);
		s[i].key = g->lkey;
	}
}

/* eng_recv_revoke for one receive @r (scatter list @s): how many of
 * its references to the region of @key it drops (with @count only
 * counts them). */
uint32_t eng_rwqe_revoke(struct ovr_eng *e, struct eng_rwqe *r,
			 struct eng_lsge *s, uint32_t key, bool count)
{
	uint32_t n = 0;

	for (uint32_t j = 0; j < r->nsge; j++) {
		if (s[j].key != key)
			continue;
		n++;
		if (count)
			continue;
		ovr_mr_put(e->mrs, key);
		s[j].key = 0;
		s[j].host = NULL;
		s[j].dev = NULL;
	}
	if (n && !count)
		r->bad = OVR_WC_LOC_PROT_ERR;
	return n;
}

/* The references posted receives hold to the region of @key, dropped
 * (eng_rwqe_revoke) unless @count. */
static uint32_t recv_refs(struct ovr_eng *e, uint32_t key, bool count)
{
	uint32_t n = eng_srq_revoke(e, key, count);

	for (uint32_t k = 0; k < (1u << e->qp_bits); k++) {
		struct eng_qp *qp = &e->qps[k];

		if (!qp->in_use)
			continue;
		for (uint32_t i = qp->rq_cons; i != qp->rq_prod; i++)
			n += eng_rwqe_revoke(e, eng_rwqe(qp, i),
					     eng_rwqe_sge(qp, i), key, count);
	}
	return n;
}

/*
 * The region of @key is being deregistered while posted receives name
 * it (ovr_eng_dereg_mr). As on hardware, the deregistration wins, if
 * receives are all that hold it (send-side work keeps it busy, and then
 * nothing changes: false): each such receive - in a QP's receive queue,
 * taken from an SRQ, or still waiting in an SRQ - drops its references
 * to the region and is marked bad, as a receive posted with a bad lkey:
 * a message that comes for it next is refused (its receive completes
 * LOC_PROT_ERR, the sender's SEND REM_OP_ERR), and so is the rest of a
 * message partly placed in it already; a message wholly placed before
 * completes as it is. Every path that places data checks r->bad first,
 * so nothing touches the region's memory again. rdma-core's pyverbs
 * deregisters regions before it destroys SRQs, and while the QPs of a
 * test's first resources still hold receives. O(QP slots + receives
 * posted), on the deregistration of a busy region only.
 */
bool eng_recv_revoke(struct ovr_eng *e, uint32_t key)
{
	int64_t held = ovr_mr_refs(e->mrs, key);

	if (held <= 0 || recv_refs(e, key, true) != (uint64_t)held)
		return false;
	recv_refs(e, key, false);
	return true;
}

/* ovr_eng_mr_yield: every posted receive of @e that names the region of
 * @key gives it up, whoever else holds it (eng_recv_revoke without the
 * check); returns the references dropped. */
uint32_t eng_recv_yield(struct ovr_eng *e, uint32_t key)
{
	return recv_refs(e, key, false);
}

/*
 * ovr_eng_mr_modify gave the region of @key the PD @pd and the rights
 * @access. Receives are checked when posted here, where a NIC checks a
 * receive's lkey when a message comes for it; so a posted receive that
 * names the region is checked again now: one of a QP or an SRQ of
 * another PD, or any once the region lost LOCAL_WRITE, drops its
 * references and is marked bad (eng_rwqe_revoke), as after a
 * deregistration - the next message for it completes it LOC_PROT_ERR
 * and its sender REM_OP_ERR, as on hardware. O(QP slots + receives
 * posted), on a re-registration only.
 */
void eng_recv_recheck(struct ovr_eng *e, uint32_t key, uint32_t pd,
		      unsigned int access)
{
	bool lw = access & OVR_ACCESS_LOCAL_WRITE;

	for (uint32_t k = 0; k < (1u << e->qp_bits); k++) {
		struct eng_qp *qp = &e->qps[k];

		if (!qp->in_use || (lw && qp->pd == pd))
			continue;
		for (uint32_t i = qp->rq_cons; i != qp->rq_prod; i++)
			eng_rwqe_revoke(e, eng_rwqe(qp, i), eng_rwqe_sge(qp, i),
					key, false);
	}
	for (uint32_t k = 0; e->srqs && k < (1u << e->srq_bits); k++) {
		struct eng_srq *q = &e->srqs[k];

		if (!q->in_use || (lw && q->pd == pd))
			continue;
		for (uint32_t i = q->head; i != q->tail; i++) {
			uint32_t slot = q->fifo[i & (q->cap - 1)];

			eng_rwqe_revoke(e, &q->wqe[slot], eng_srq_sge(q, slot),
					key, false);
		}
	}
}

int ovr_eng_post_recv(struct ovr_eng *e, uint32_t qpn,
		      const struct ovr_eng_recv_wr *wr, uint64_t now_ns)
{
	struct eng_qp *qp = eng_qp_get(e, qpn);
	uint64_t total = 0;
	uint32_t idx, i;

	(void)now_ns;
	if (!qp || !wr || qp->srq)
		return EINVAL;
	if (qp->state == OVR_QPS_RESET)
		return EINVAL;
	if (wr->num_sge > qp->cap.max_recv_sge || (wr->num_sge && !wr->sg_list))
		return EINVAL;
	if (qp->rq_prod - qp->rq_cons > qp->rq_mask)
		return ENOMEM;
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > OVR_WIRE_MAX_MSG)
		return EINVAL;
	idx = qp->rq_prod;
	eng_rwqe_fill(e, qp->pd, &qp->rq[idx & qp->rq_mask],
		      eng_rwqe_sge(qp, idx), wr, (uint32_t)total);
	qp->rq_prod++;
	if (qp->state == OVR_QPS_ERR) {
		eng_complete_recv(e, qp, idx, OVR_WC_WR_FLUSH_ERR, 0);
		qp->rq_cons = qp->rq_prod;
		return 0;
	}
	/* A peer that ran out of credit learns at once that it may go on. */
	if (qp->state >= OVR_QPS_RTR && qp->rq_prod - qp->rq_cons == 1 &&
	    qp->type == OVR_QPT_RC) {
		qp->ack_now = true;
		eng_qp_activate(e, qp);
	}
	return 0;
}

static bool fill_resp(struct ovr_eng *e, struct eng_qp *qp, uint8_t *dst,
		      uint32_t off, uint32_t len, uint32_t idx)
{
	struct eng_rdq *q = &qp->rdq[idx];

	if (!q->dev) {
		memcpy(dst, q->host + off, len);
		e->st.host_copy_bytes += len;
		return true;
	}
	if (eng_dev_copy(e, qp, q->psn, q->dev, q->dev_off + off, dst, len,
			 false, q->len))
		return true;
	eng_qp_fatal_nak(e, qp, eng_copy_nak(e), q->psn);
	return false;
}

bool eng_tx_resp_seg(struct ovr_eng *e, struct eng_qp *qp, uint32_t slot,
		     uint32_t off, uint32_t len, uint32_t psn, bool retx,
		     uint64_t now)
{
	struct eng_rdq *q = &qp->rdq[slot];
	struct ovr_wire_pkt p;
	struct ovr_mr_loc loc;

	/*
	 * READ data is read as it is sent (and again when resent), from the
	 * pointer resolved at execution: valid only while the region is. A
	 * region deregistered meanwhile (the service unmaps it at once)
	 * before a segment's first sending ends the READ as one
	 * deregistered before it arrived would have - the requester lacks
	 * these bytes: NAK REM_ACCESS naming the request, ERROR. The
	 * requester finds the request by its PSN although it was
	 * acknowledged (eng_on_nak), and asks again if this NAK is lost
	 * (rsp_probe). A resend (@retx) was checked by the caller: one
	 * whose region went is dropped, not NAKed (eng_resp_resend_gone).
	 */
	if (!retx && q->opcode == OVR_OP_READ_REQ && len &&
	    ovr_mr_check_rkey(e->mrs, q->rkey, qp->pd, qp->qpn, q->va + off,
			      len, OVR_ACCESS_REMOTE_READ, &loc)) {
		e->st.mr_revoked++;
		eng_qp_fatal_nak(e, qp, OVR_NAK_REM_ACCESS, q->psn);
		return false;
	}
	eng_hdr_init(qp, &p,
		     q->opcode == OVR_OP_READ_REQ ? OVR_OP_READ_RESP :
						    OVR_OP_ATOMIC_RESP,
		     now);
	p.psn = psn;
	if (retx)
		p.flags |= OVR_F_RETX;
	if (q->opcode == OVR_OP_READ_REQ) {
		p.u.rresp.msn = q->msn;
		p.u.rresp.mo = off;
		p.u.rresp.msg_len = q->len;
		p.payload_len = len;
		if (off + len == q->len)
			p.flags |= OVR_F_LAST;
	} else {
		p.u.aresp.msn = q->msn;
		p.u.aresp.orig = q->orig;
		p.flags |= OVR_F_LAST;
	}
	return eng_tx_pdu(e, qp, &p, fill_resp, off, slot);
}

/* Would resending response packet @k read a region that is gone
 * (deregistered or invalidated since the READ executed)? Atomic
 * responses carry their saved value and read no memory. */
static bool resp_pkt_revoked(struct ovr_eng *e, struct eng_qp *qp,
			     const struct eng_pkt *k)
{
	const struct eng_rdq *q = &qp->rdq[k->idx];
	struct ovr_mr_loc loc;

	return q->opcode == OVR_OP_READ_REQ && k->len &&
	       ovr_mr_check_rkey(e->mrs, q->rkey, qp->pd, qp->qpn,
				 q->va + k->off, k->len, OVR_ACCESS_REMOTE_READ,
				 &loc) != 0;
}

/* Give up response packet @k (at @psn): it will not be resent. It
 * counts as SACKed until the peer's cumulative ACK passes it. */
static void resp_abandon(struct ovr_eng *e, struct eng_qp *qp,
			 struct eng_pkt *k, uint32_t psn)
{
	if (k->flags & SB_LOST) {
		k->flags &= (uint8_t) ~(SB_LOST | SB_RNR);
		qp->nlost--;
	} else {
		qp->pipe -= PKT_COST(k->len);
	}
	if (!qp->nsacked || PSN_LT(qp->sack_hi, PSN_ADD(psn, 1)))
		qp->sack_hi = PSN_ADD(psn, 1);
	k->flags |= SB_SACKED | SB_GONE;
	qp->nsacked++;
	qp->ngone++;
	qp->st.resp_resend_revoked++;
	e->st.resp_resend_revoked++;
}

/*
 * The READ response packet at @psn, marked lost, is about to be resent:
 * is its region gone? Then it is dropped, not resent and not NAKed (as
 * in IB, where a responder never resends a READ response by itself,
 * only answers a request asked again): the READ it belongs to may well
 * be complete at the requester, whose ACKs were lost - failing the QP
 * for it would fail the requester's next operation instead. The
 * requester that does lack these bytes asks again, and that request is
 * refused as any on a revoked key (resp_probe). Every other packet in
 * flight that would read a region gone is given up with it, at once: a
 * silent requester (it has everything) would otherwise cost an RTO per
 * packet, and the retry budget could run out on packets no longer
 * owed. Packets given up count as SACKed (SB_GONE), so nothing waits on
 * them: with only those left no timer runs (eng_sb_only_gone), and the
 * peer's next cumulative ACK takes them off the scoreboard. O(window),
 * once per region gone. True: @psn was given up.
 */
bool eng_resp_resend_gone(struct ovr_eng *e, struct eng_qp *qp, uint32_t psn)
{
	uint32_t i;

	if (!resp_pkt_revoked(e, qp, eng_sb_pkt(e, qp, psn)))
		return false;
	for (i = qp->snd_una; i != qp->snd_nxt; i = PSN_ADD(i, 1)) {
		struct eng_pkt *k = eng_sb_pkt(e, qp, i);

		if ((k->flags & (SB_USED | SB_RESP | SB_SACKED)) ==
			    (SB_USED | SB_RESP) &&
		    resp_pkt_revoked(e, qp, k))
			resp_abandon(e, qp, k, i);
	}
	return true;
}

void eng_send_ack(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	struct ovr_dp_sack blk[OVR_WIRE_MAX_SACK];
	struct ovr_wire_pkt p;
	unsigned int n, i;

	eng_hdr_init(qp, &p, OVR_OP_ACK, now);
	n = ovr_dp_rxwin_sack(&qp->rx, blk, OVR_WIRE_MAX_SACK);
	p.u.ack.ce_count = qp->ce_count;
	p.u.ack.nsack = (uint8_t)n;
	for (i = 0; i < n; i++) {
		p.u.ack.sack[i].start = blk[i].start;
		p.u.ack.sack[i].end = blk[i].end;
	}
	if (eng_tx_pdu(e, qp, &p, NULL, 0, 0)) {
		qp->st.acks_sent++;
		qp->ack_now = false;
		qp->ack_at = 0;
		qp->unacked = 0;
	}
}

void eng_send_nak(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	struct ovr_wire_pkt p;
	uint32_t state = qp->state;

	/* a NAK always carries the receive state, even from ERROR */
	if (state == OVR_QPS_ERR)
		qp->state = OVR_QPS_RTR;
	eng_hdr_init(qp, &p, OVR_OP_NAK, now);
	qp->state = state;
	p.ack_psn = qp->nak_psn;
	/* the refused packet was not received: ts_recent may be the echo
	 * of one long ago, which would give the peer a bogus RTT sample */
	p.tsecr = qp->nak_ts;
	p.u.nak.code = qp->nak_code;
	p.u.nak.rnr_timer = qp->nak_code == OVR_NAK_RNR ? qp->nak_timer : 0;
	if (eng_tx_pdu(e, qp, &p, NULL, 0, 0)) {
		if (qp->nak_code == OVR_NAK_RNR)
			qp->st.rnr_naks_sent++;
		qp->nak_code = 0;
	}
}

/* Take a token for a TERMINATE answer (cfg.term_rate per second, bursts
 * of cfg.term_burst); false when the bucket is empty. */
static bool term_token(struct ovr_eng *e, uint64_t now)
{
	uint64_t rate = e->cfg.term_rate, n;

	if (rate && now > e->term_refill_ns) {
		n = (now - e->term_refill_ns) * rate / 1000000000ull;
		if (n) {
			if (e->term_tokens + n >= e->cfg.term_burst) {
				e->term_tokens = e->cfg.term_burst;
				e->term_refill_ns = now;
			} else {
				e->term_tokens += (uint32_t)n;
				e->term_refill_ns += n * 1000000000ull / rate;
			}
		}
	}
	if (!e->term_tokens) {
		e->st.term_limited++;
		return false;
	}
	e->term_tokens--;
	return true;
}

/*
 * A QP in RTR answers READs and atomics (verbs: the responder works from
 * RTR on; perftest's ib_read_bw / ib_atomic_bw servers never leave RTR),
 * but its responses are numbered in its own send PSN space, which starts
 * at the sq_psn that only RTR->RTS gives. The peer's packets name that
 * start: their cumulative ack_psn is the next PSN the peer expects from
 * this QP, and before this QP has sent anything that is the sq_psn the
 * peer was told (its rq_psn). So the first packet heard in RTR sets the
 * send PSN space, and starts the clocks and the congestion state that
 * RTS would have; a later RTS keeps them (its SQ_PSN is the same number
 * when the application is consistent, and responses may be in flight).
 */
static void rtr_adopt_psn(struct ovr_eng *e, struct eng_qp *qp,
			  const struct ovr_wire_pkt *p, uint64_t now)
{
	if (qp->type != OVR_QPT_RC || !(p->flags & OVR_F_ACK) || qp->sb ||
	    qp->snd_una != qp->snd_nxt)
		return;
	qp->snd_una = qp->snd_nxt = p->ack_psn & M24;
	eng_qp_to_rts(e, qp, now);
	qp->psn_adopted = true;
}

/* Send the next segment of a pending READ / atomic response. */
int eng_tx_resp(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	uint32_t slot, len, psn;
	struct eng_rdq *q;

	if (qp->rd_send_msn == qp->rd_exec_msn)
		return 0;
	slot = qp->rd_send_msn & (OVR_ENG_MAX_RD_ATOMIC - 1);
	q = &qp->rdq[slot];
	if (q->state != RD_READY)
		return 0;
	if (ovr_wire_psn_diff(qp->snd_nxt, qp->snd_una) >=
	    (int32_t)e->cfg.window_pkts)
		return -1;
	len = q->opcode == OVR_OP_READ_REQ ?
		      eng_min32(qp->seg, q->len - q->sent) :
		      0;
	if (!eng_window_open(e, qp, len) || !eng_sb_acquire(e, qp, now))
		return -1;
	psn = qp->snd_nxt;
	if (!eng_tx_resp_seg(e, qp, slot, q->sent, len, psn, false, now))
		return -1;
	qp->snd_nxt = PSN_ADD(psn, 1);
	q->sent += len;
	q->last_psn = psn;
	eng_sb_record(e, qp, psn, q->sent - len, len, slot,
		      SB_RESP | (q->sent == q->len ? SB_LAST : 0), now);
	eng_pace(qp, len, now);
	if (q->sent == q->len) {
		q->state = RD_SENT;
		qp->rd_send_msn++;
	}
	return 1;
}

/* A datagram for UD QP @qp from @from. */
static void rx_ud(struct ovr_eng *e, struct eng_qp *qp,
		  const struct ovr_wire_pkt *p, uint64_t from)
{
	uint8_t grh[OVR_GRH_LEN];
	struct eng_rwqe *r;
	uint32_t idx;

	if (qp->state < OVR_QPS_RTR || qp->state == OVR_QPS_ERR) {
		e->st.rx_bad_state++;
		return;
	}
	if (p->u.ud.qkey != qp->qkey) {
		e->st.rx_ud_qkey++;
		return;
	}
	if (qp->rq_cons == qp->rq_prod && (!qp->srq || !eng_srq_take(e, qp))) {
		e->st.rx_ud_norecv++;
		return;
	}
	idx = qp->rq_cons++;
	r = eng_rwqe(qp, idx);
	r->last_psn = p->sqpn; /* src_qp of the completion */
	qp->st.rx_pkts++;
	qp->st.rx_bytes += p->payload_len;
	if (r->bad || OVR_GRH_LEN + p->payload_len > r->cap) {
		/* the receive is used up, the datagram dropped; a UD QP
		 * has no connection to fail */
		eng_complete_recv(e, qp, idx,
				  r->bad ? r->bad : OVR_WC_LOC_LEN_ERR,
				  r->bad ? OVR_VERR_LKEY : OVR_VERR_LEN);
		return;
	}
	r->wc_opcode = OVR_WC_RECV;
	r->wc_flags = 0;
	if (e->ops.ud_grh) {
		e->ops.ud_grh(e->ctx, qp->user, from, grh);
		if (!sge_write(e, qp, -1, eng_rwqe_sge(qp, idx), r->nsge, 0,
			       grh, sizeof(grh),
			       OVR_GRH_LEN + p->payload_len)) {
			eng_complete_recv(e, qp, idx, eng_copy_status(e), 0);
			return;
		}
		r->wc_flags = OVR_WC_GRH;
	}
	if (!sge_write(e, qp, -1, eng_rwqe_sge(qp, idx), r->nsge, OVR_GRH_LEN,
		       p->payload, p->payload_len,
		       OVR_GRH_LEN + p->payload_len)) {
		/* the datagram is lost with the receive; no connection */
		eng_complete_recv(e, qp, idx, eng_copy_status(e), 0);
		return;
	}
	r->msg_len = OVR_GRH_LEN + p->payload_len;
	if (p->opcode == OVR_OP_UD_SEND_IMM) {
		r->imm = p->u.ud.imm;
		r->wc_flags |= OVR_WC_WITH_IMM;
	}
	if (p->flags & OVR_F_SE)
		r->wc_flags |= OVR_WC_SOLICITED;
	eng_complete_recv(e, qp, idx, OVR_WC_SUCCESS, 0);
}

static struct eng_rwqe *rq_slot(struct ovr_eng *e, struct eng_qp *qp,
				uint32_t msn, uint32_t *idx)
{
	uint32_t k = msn - qp->rq_msn;

	if ((int32_t)k < 0)
		return NULL;
	/* from an SRQ: take receives, in order, up to this message's */
	while (k >= qp->rq_prod - qp->rq_cons)
		if (!qp->srq || !eng_srq_take(e, qp))
			return NULL;
	*idx = qp->rq_cons + k;
	return eng_rwqe(qp, *idx);
}

/* WRITE tails held back (place_write) whose PSN everything before has
 * arrived, oldest first, so the last byte lands last. False: the QP
 * failed. */
static bool rx_release_tails(struct ovr_eng *e, struct eng_qp *qp, uint32_t ack)
{
	struct ovr_mr_loc loc;

	for (;;) {
		struct eng_stash *best = NULL;

		for (unsigned int i = 0; i < OVR_ENG_STASH; i++) {
			struct eng_stash *s = &qp->stash[i];

			if (s->len && PSN_LT(s->psn, ack) &&
			    (!best || PSN_LT(s->psn, best->psn)))
				best = s;
		}
		if (!best)
			return true;
		/* the region may have gone since the segment arrived */
		if (!(qp->access & OVR_ACCESS_REMOTE_WRITE) ||
		    ovr_mr_check_rkey(e->mrs, best->rkey, qp->pd, qp->qpn,
				      best->va, best->len,
				      OVR_ACCESS_REMOTE_WRITE, &loc)) {
			e->st.mr_revoked++;
			eng_qp_fatal_nak(e, qp, OVR_NAK_REM_ACCESS, best->psn);
			return false;
		}
		/* a copy of its own: from engine memory, synchronous
		 * whichever way it goes */
		if (!loc_copy(e, qp, best->psn, loc.host, loc.dev, loc.dev_off,
			      best->data, best->len, true, best->len)) {
			eng_qp_fatal_nak(e, qp, eng_copy_nak(e), best->psn);
			return false;
		}
		best->len = 0;
	}
}

/* Execute a READ: resolve its source, read as the response is sent
 * (eng_tx_resp_seg). False: refused, the QP failed. */
static bool rd_exec_read(struct ovr_eng *e, struct eng_qp *qp,
			 struct eng_rdq *q)
{
	struct ovr_mr_loc loc = { .host = NULL, .dev = NULL };

	if (!(qp->access & OVR_ACCESS_REMOTE_READ) ||
	    (q->len &&
	     ovr_mr_check_rkey(e->mrs, q->rkey, qp->pd, qp->qpn, q->va, q->len,
			       OVR_ACCESS_REMOTE_READ, &loc))) {
		eng_qp_fatal_nak(e, qp, OVR_NAK_REM_ACCESS, q->psn);
		return false;
	}
	q->dev = loc.dev;
	if (loc.dev)
		q->dev_off = loc.dev_off;
	else
		q->host = loc.host;
	return true;
}

/* Execute an atomic, keeping the original value for the response (and
 * its retransmissions). False: refused, the QP failed. An ATOMIC WRITE
 * (IBTA 1.5) stores its 8 bytes with one aligned store; it needs the
 * remote write right (as rxe: a WRITE that is atomic), and answers
 * with an ATOMIC_RESP whose value the requester ignores. */
static bool rd_exec_atomic(struct ovr_eng *e, struct eng_qp *qp,
			   struct eng_rdq *q)
{
	struct ovr_mr_loc loc = { .host = NULL, .dev = NULL };
	bool wr = q->opcode == OVR_OP_ATOMIC_WR;
	unsigned int right = wr ? OVR_ACCESS_REMOTE_WRITE :
				  OVR_ACCESS_REMOTE_ATOMIC;
	uint64_t v, nv;

	if (q->va & 7) {
		eng_qp_fatal_nak(e, qp, OVR_NAK_INV_REQ, q->psn);
		return false;
	}
	if (!(qp->access & right) ||
	    ovr_mr_check_rkey(e->mrs, q->rkey, qp->pd, qp->qpn, q->va, 8, right,
			      &loc)) {
		eng_qp_fatal_nak(e, qp, OVR_NAK_REM_ACCESS, q->psn);
		return false;
	}
	/*
	 * Device memory: a read-modify-write through two
	 * copies would not be atomic against the GPU's own
	 * accesses, so it is refused (docs/GPU.md).
	 */
	if (loc.dev && !loc.host_ops) {
		e->st.dev_atomic_refused++;
		eng_qp_fatal_nak(e, qp, OVR_NAK_REM_OP, q->psn);
		return false;
	}
	if (wr) {
		q->orig = 0;
		if (loc.dev) {
			e->st.dev_atomics++;
			if (eng_dev_copy_sync(e, loc.dev, loc.dev_off,
					      &q->swap_add, 8, true)) {
				eng_qp_fatal_nak(e, qp, eng_copy_nak(e),
						 q->psn);
				return false;
			}
		} else if ((uintptr_t)loc.host & 7) {
			memcpy(loc.host, &q->swap_add, 8);
		} else {
			/* one store: the service maps whole pages, so its
			 * view is aligned as the application's */
			__atomic_store_n((uint64_t *)(void *)loc.host,
					 q->swap_add, __ATOMIC_RELAXED);
		}
		return true;
	}
	/*
	 * Host memory behind the copy op (another process's): read,
	 * compute, write, each copy done when it returns; nothing else of
	 * this engine runs in between, as nothing does between the two
	 * memcpy below.
	 */
	if (loc.dev) {
		if (eng_dev_copy_sync(e, loc.dev, loc.dev_off, &v, 8, false)) {
			eng_qp_fatal_nak(e, qp, eng_copy_nak(e), q->psn);
			return false;
		}
	} else {
		memcpy(&v, loc.host, 8);
	}
	q->orig = v;
	if (q->opcode == OVR_OP_ATOMIC_CS)
		nv = v == q->compare ? q->swap_add : v;
	else
		nv = v + q->swap_add;
	if (loc.dev) {
		e->st.dev_atomics++;
		if (eng_dev_copy_sync(e, loc.dev, loc.dev_off, &nv, 8, true)) {
			eng_qp_fatal_nak(e, qp, eng_copy_nak(e), q->psn);
			return false;
		}
	} else {
		memcpy(loc.host, &nv, 8);
	}
	return true;
}

/* READ and atomic requests before @ack, in order, exactly once. False:
 * the QP failed. */
static bool rx_exec_rd(struct ovr_eng *e, struct eng_qp *qp, uint32_t ack)
{
	while (qp->rd_exec_msn != qp->rd_next_msn && qp->state != OVR_QPS_ERR) {
		struct eng_rdq *q =
			&qp->rdq[qp->rd_exec_msn & (OVR_ENG_MAX_RD_ATOMIC - 1)];

		if (q->state != RD_PENDING || q->msn != qp->rd_exec_msn ||
		    !PSN_LT(q->psn, ack))
			break;
		if (!(q->opcode == OVR_OP_READ_REQ ? rd_exec_read(e, qp, q) :
						     rd_exec_atomic(e, qp, q)))
			return false;
		q->state = RD_READY;
		qp->rd_exec_msn++;
	}
	return true;
}

/*
 * The rkey a SEND_WITH_INV names (r->imm), invalidated in order, as its
 * receive completes: a region's remote rights go, a type-2 window
 * bound through this QP goes back to unbound. One that cannot be (no
 * such key, another PD, a type-1 window, a window of another QP) is
 * the responder's error, as rxe's (verbs class J): the receive
 * completes OVR_WC_REM_INV_REQ_ERR and the QP goes to ERROR, telling
 * its peer with a TERMINATE (the SEND itself may have been
 * acknowledged already). False then.
 */
static bool recv_invalidate(struct ovr_eng *e, struct eng_qp *qp,
			    struct eng_rwqe *r)
{
	if (!ovr_mr_invalidate_key(e->mrs, r->imm, qp->pd, qp->qpn, true)) {
		e->st.mw_inv++;
		return true;
	}
	e->st.mw_inv_err++;
	eng_complete_recv(e, qp, qp->rq_cons, OVR_WC_REM_INV_REQ_ERR, 0);
	qp->rq_cons++;
	qp->rq_msn++;
	eng_qp_error_local(e, qp, qp->sq_cons, OVR_WC_WR_FLUSH_ERR, 0);
	return false;
}

/* Receives whose message is in, in MSN order. */
static void rx_complete_recvs(struct ovr_eng *e, struct eng_qp *qp,
			      uint32_t ack)
{
	while (qp->rq_cons != qp->rq_prod && qp->state != OVR_QPS_ERR) {
		struct eng_rwqe *r = eng_rwqe(qp, qp->rq_cons);

		if (!r->have_last || !PSN_LT(r->last_psn, ack))
			break;
		if ((r->wc_flags & OVR_WC_WITH_INV) &&
		    !recv_invalidate(e, qp, r))
			return;
		eng_complete_recv(e, qp, qp->rq_cons, OVR_WC_SUCCESS, 0);
		qp->rq_cons++;
		qp->rq_msn++;
	}
}

/* Everything before rx.ack_psn has arrived: release what waited on it. */
static void rx_advance(struct ovr_eng *e, struct eng_qp *qp)
{
	uint32_t ack = qp->rx.ack_psn;

	/* (a late copy failure may find the hole filled past it) */
	if (qp->pend_code && !PSN_LT(ack, qp->pend_psn)) {
		eng_qp_fatal_nak(e, qp, qp->pend_code, qp->pend_psn);
		return;
	}
	/* 1. WRITE tails, oldest first, so the last byte lands last */
	if (!rx_release_tails(e, qp, ack))
		return;
	/* 2. READ and atomic requests, in order, exactly once */
	if (!rx_exec_rd(e, qp, ack))
		return;
	/* 3. receives, in MSN order */
	rx_complete_recvs(e, qp, ack);
	/* 4. READ / atomic requests of ours whose response is complete */
	eng_sq_complete(e, qp);
}

/* Place the tagged payload of a WRITE segment; false: drop it unmarked. */
static bool place_write(struct ovr_eng *e, struct eng_qp *qp,
			const struct ovr_wire_pkt *p,
			const struct ovr_mr_loc *dst, bool inorder,
			bool *failed)
{
	uint32_t len = p->payload_len, tail;
	struct eng_stash *s = NULL;
	uint8_t *src = (uint8_t *)(uintptr_t)p->payload;

	*failed = false;
	if (!(p->flags & OVR_F_LAST) || inorder || !len) {
		*failed = !loc_copy(e, qp, p->psn, dst->host, dst->dev,
				    dst->dev_off, src, len, true,
				    p->u.write.msg_len);
		return !*failed;
	}
	/* the last segment arrived ahead of others: hold its tail back */
	for (unsigned int i = 0; i < OVR_ENG_STASH; i++)
		if (!qp->stash[i].len) {
			s = &qp->stash[i];
			break;
		}
	if (!s)
		return false;
	tail = eng_min32(len, OVR_ENG_TAIL);
	if (!loc_copy(e, qp, p->psn, dst->host, dst->dev, dst->dev_off, src,
		      len - tail, true, p->u.write.msg_len)) {
		*failed = true;
		return false;
	}
	s->va = p->u.write.va + p->u.write.mo + len - tail;
	s->rkey = p->u.write.rkey;
	s->psn = p->psn;
	memcpy(s->data, p->payload + len - tail, tail);
	s->len = (uint8_t)tail;
	return true;
}

static void schedule_ack(struct ovr_eng *e, struct eng_qp *qp, uint64_t now,
			 bool urgent)
{
	qp->unacked++;
	if (urgent || qp->unacked >= e->cfg.ack_every)
		qp->ack_now = true;
	else if (!qp->ack_at)
		qp->ack_at = now + e->cfg.ack_delay_ns;
}

/*
 * A READ asked again while its response has a packet the requester may
 * lack - neither acknowledged nor SACKed, or given up (SB_GONE) - is
 * executed afresh as far as its region goes: checked as a new request
 * is, and refused if the region is gone (NAK REM_ACCESS naming the
 * request, ERROR), its bytes being no longer there to send. In IB the
 * responder executes a repeated READ again; the rd slot stands in for
 * that. The requester asks only for a READ it has not completed
 * (eng_rsp_watch; its RTO while it has heard nothing of the request),
 * and the ACK the request carries was taken in first (rx_rc): a
 * response it has in full is off the scoreboard. O(window), only when
 * the region is gone. True: refused, the QP failed.
 */
static bool resp_again_refused(struct ovr_eng *e, struct eng_qp *qp,
			       const struct eng_rdq *q, uint32_t slot)
{
	uint32_t psn, end = PSN_ADD(q->last_psn, 1);
	struct ovr_mr_loc loc;

	if (q->opcode != OVR_OP_READ_REQ || !q->len ||
	    !ovr_mr_check_rkey(e->mrs, q->rkey, qp->pd, qp->qpn, q->va, q->len,
			       OVR_ACCESS_REMOTE_READ, &loc))
		return false;
	for (psn = qp->snd_una; psn != end; psn = PSN_ADD(psn, 1)) {
		const struct eng_pkt *k = eng_sb_pkt(e, qp, psn);

		if ((k->flags & (SB_USED | SB_RESP)) != (SB_USED | SB_RESP) ||
		    k->idx != slot ||
		    (k->flags & (SB_SACKED | SB_GONE)) == SB_SACKED)
			continue;
		e->st.mr_revoked++;
		eng_qp_fatal_nak(e, qp, OVR_NAK_REM_ACCESS, q->psn);
		return true;
	}
	return false;
}

/*
 * A READ or atomic request we executed came again: the requester's timer
 * ran out before it heard anything that acknowledges the request, which
 * our response would have. If the response's latest packet is still
 * unacknowledged and went out longer ago than the lowest RTT measured -
 * so that it would have reached the requester before the repeat left,
 * had it not been lost - resend it now: a tail-loss probe the requester
 * triggered (its SACK or ACK lets RACK find anything else missing). The
 * response is still ours to recover; this only lets whichever side's
 * timer runs out first start the recovery (in IB the requester's timer
 * is the only one), which matters when ours is the slower: no sample
 * yet, or an estimate the requester's pauses have inflated. It stands in
 * for our own probe: none is sent before the next progress. O(1): the
 * rd slot names its latest packet. A READ whose region is gone is
 * refused instead (resp_again_refused).
 */
static void resp_probe(struct ovr_eng *e, struct eng_qp *qp,
		       const struct ovr_wire_pkt *p, uint64_t now)
{
	uint32_t msn = p->opcode == OVR_OP_READ_REQ ? p->u.rreq.msn :
						      p->u.areq.msn;
	uint32_t slot = msn & (OVR_ENG_MAX_RD_ATOMIC - 1);
	struct eng_rdq *q = &qp->rdq[slot];
	struct eng_pkt *k;

	if (!qp->sb || q->msn != msn || q->psn != p->psn ||
	    !(q->state == RD_SENT || (q->state == RD_READY && q->sent)))
		return;
	if (PSN_LT(q->last_psn, qp->snd_una) ||
	    !PSN_LT(q->last_psn, qp->snd_nxt))
		return; /* acknowledged (or never sent: a bug) */
	if (resp_again_refused(e, qp, q, slot))
		return;
	k = eng_sb_pkt(e, qp, q->last_psn);
	if ((k->flags & (SB_USED | SB_RESP)) != (SB_USED | SB_RESP) ||
	    k->idx != slot || (k->flags & (SB_SACKED | SB_LOST)) ||
	    now - k->xmit_ns < qp->rtt.min_rtt_ns)
		return;
	eng_mark_lost(qp, k);
	qp->tlp_out = true;
	qp->pto_at = 0;
	if (!qp->rto_at)
		qp->rto_at = now + qp->rtt.rto_ns;
	qp->st.resp_probes++;
}

/* Outside the receive window: NAK it (unless a NAK is pending). */
static void rx_outside(struct eng_qp *qp, const struct ovr_wire_pkt *p)
{
	qp->st.rx_outside++;
	if (!qp->nak_code) {
		qp->nak_code = OVR_NAK_SEQ_ERR;
		qp->nak_psn = p->psn;
	}
}

/* A duplicate: acknowledged at once, and a repeated READ / atomic may
 * have its response resent (resp_probe). */
static void rx_dup(struct ovr_eng *e, struct eng_qp *qp,
		   const struct ovr_wire_pkt *p, uint64_t now)
{
	qp->st.rx_dup++;
	e->st.rx_dup++;
	/* a retransmission of something we have: the immediate ACK
	 * echoes its send time, not that of the last new packet
	 * (RFC 7323 §4.3), or the peer would measure its own
	 * retransmission timeout as an RTT */
	if ((int32_t)(p->tsval - qp->ts_recent) > 0) {
		qp->ts_recent = p->tsval;
		qp->ts_fresh = true;
	}
	if (p->opcode == OVR_OP_READ_REQ || p->opcode == OVR_OP_ATOMIC_CS ||
	    p->opcode == OVR_OP_ATOMIC_FA || p->opcode == OVR_OP_ATOMIC_WR) {
		resp_probe(e, qp, p, now);
		if (qp->state == OVR_QPS_ERR)
			return; /* refused: its NAK goes instead */
	}
	schedule_ack(e, qp, now, true);
}

/* The receive for the message of @p (a SEND, or a WRITE with
 * immediate), its index in @ridx; NULL when there is none yet (an RNR
 * NAK is due) or the packet is refused. */
static struct eng_rwqe *rx_recv_of(struct ovr_eng *e, struct eng_qp *qp,
				   const struct ovr_wire_pkt *p, uint32_t *ridx)
{
	uint32_t msn = p->opcode == OVR_OP_WRITE_IMM ? p->u.write.msn :
						       p->u.send.msn;
	struct eng_rwqe *r = rq_slot(e, qp, msn, ridx);

	if (!r) {
		/* no receive for this message (yet): RNR */
		if ((int32_t)(msn - qp->rq_msn) < 0) {
			e->st.rx_bad++;
			return NULL;
		}
		qp->nak_code = OVR_NAK_RNR;
		qp->nak_timer = qp->min_rnr_timer;
		qp->nak_psn = p->psn;
		return NULL;
	}
	if (r->bad) {
		violation(e, qp, OVR_NAK_REM_OP, p->psn);
		return NULL;
	}
	return r;
}

/* A SEND segment: into its receive @r (entry @ridx), at its offset. The
 * handlers of rx_seq return false when the packet is not accepted (not
 * marked received: it is resent, or the QP fails). */
static bool rx_send(struct ovr_eng *e, struct eng_qp *qp,
		    const struct ovr_wire_pkt *p, struct eng_rwqe *r,
		    uint32_t ridx)
{
	bool ok;

	if ((uint64_t)p->u.send.mo + p->payload_len > r->cap ||
	    p->u.send.msg_len > r->cap) {
		r->bad = OVR_WC_LOC_LEN_ERR;
		violation(e, qp, OVR_NAK_INV_REQ, p->psn);
		return false;
	}
	/* a queued copy of it that faults NAKs as this one would */
	e->dev_nak = OVR_NAK_REM_OP;
	e->dev_ridx = ridx;
	ok = sge_write(e, qp, p->psn, eng_rwqe_sge(qp, ridx), r->nsge,
		       p->u.send.mo, p->payload, p->payload_len,
		       p->u.send.msg_len);
	e->dev_nak = 0;
	if (!ok) {
		/* device memory could not be written; not there at all
		 * (-EFAULT): as a receive whose key failed */
		r->bad = eng_copy_status(e);
		violation(e, qp, e->dev_gone ? ENG_NAK_GONE : OVR_NAK_REM_OP,
			  p->psn);
		return false;
	}
	if (p->flags & OVR_F_LAST) {
		r->have_last = 1;
		r->last_psn = p->psn;
		r->msg_len = p->u.send.msg_len;
		r->wc_opcode = OVR_WC_RECV;
		if (p->opcode == OVR_OP_SEND_IMM) {
			r->imm = p->u.send.imm;
			r->wc_flags = OVR_WC_WITH_IMM;
		} else if (p->opcode == OVR_OP_SEND_INV) {
			r->imm = p->u.send.inv_rkey;
			r->wc_flags = OVR_WC_WITH_INV;
		}
		if (p->flags & OVR_F_SE)
			r->wc_flags |= OVR_WC_SOLICITED;
	}
	return true;
}

/* A WRITE segment: placed at its target (@inorder: everything before it
 * has arrived); with immediate, its last segment also fills its receive
 * @r. */
static bool rx_write(struct ovr_eng *e, struct eng_qp *qp,
		     const struct ovr_wire_pkt *p, struct eng_rwqe *r,
		     bool inorder)
{
	struct ovr_mr_loc loc;
	bool failed;

	if (p->payload_len) {
		if (!(qp->access & OVR_ACCESS_REMOTE_WRITE) ||
		    ovr_mr_check_rkey(e->mrs, p->u.write.rkey, qp->pd, qp->qpn,
				      p->u.write.va + p->u.write.mo,
				      p->payload_len, OVR_ACCESS_REMOTE_WRITE,
				      &loc)) {
			violation(e, qp, OVR_NAK_REM_ACCESS, p->psn);
			return false;
		}
		if (!place_write(e, qp, p, &loc, inorder, &failed)) {
			if (failed)
				violation(e, qp, eng_copy_nak(e), p->psn);
			return false; /* else no room to hold the tail:
				       * resent */
		}
	}
	if (r && (p->flags & OVR_F_LAST)) {
		r->have_last = 1;
		r->last_psn = p->psn;
		r->msg_len = p->u.write.msg_len;
		r->imm = p->u.write.imm;
		r->wc_opcode = OVR_WC_RECV_RDMA_WITH_IMM;
		r->wc_flags = OVR_WC_WITH_IMM;
		if (p->flags & OVR_F_SE)
			r->wc_flags |= OVR_WC_SOLICITED;
	}
	return true;
}

/* A READ or atomic request: queued in the responder resources (rdq),
 * executed in order once everything before it is in (rx_advance). */
static bool rx_rd_req(struct ovr_eng *e, struct eng_qp *qp,
		      const struct ovr_wire_pkt *p)
{
	uint32_t msn = p->opcode == OVR_OP_READ_REQ ? p->u.rreq.msn :
						      p->u.areq.msn;
	uint32_t depth = qp->max_dest_rd_atomic ? qp->max_dest_rd_atomic : 1;
	struct eng_rdq *q;

	if ((int32_t)(msn - qp->rd_free_msn) < 0 ||
	    msn - qp->rd_free_msn >= depth) {
		violation(e, qp, OVR_NAK_INV_REQ, p->psn);
		return false;
	}
	q = &qp->rdq[msn & (OVR_ENG_MAX_RD_ATOMIC - 1)];
	if (q->state != RD_FREE) {
		e->st.rx_bad++;
		return false;
	}
	memset(q, 0, sizeof(*q));
	q->state = RD_PENDING;
	q->opcode = p->opcode;
	q->psn = p->psn;
	q->msn = msn;
	if (p->opcode == OVR_OP_READ_REQ) {
		q->rkey = p->u.rreq.rkey;
		q->va = p->u.rreq.va;
		q->len = p->u.rreq.len;
	} else {
		q->rkey = p->u.areq.rkey;
		q->va = p->u.areq.va;
		q->len = 0;
		q->swap_add = p->u.areq.swap_add;
		q->compare = p->u.areq.compare;
	}
	if ((int32_t)(msn - qp->rd_next_msn) >= 0)
		qp->rd_next_msn = msn + 1;
	return true;
}

/* A READ or atomic response to a request of ours: into the WR's scatter
 * list; the WR completes once the whole response and everything before
 * it is in (eng_sq_complete). */
static bool rx_rd_resp(struct ovr_eng *e, struct eng_qp *qp,
		       const struct ovr_wire_pkt *p, uint64_t now)
{
	uint32_t msn = p->opcode == OVR_OP_READ_RESP ? p->u.rresp.msn :
						       p->u.aresp.msn;
	uint32_t idx = qp->rdw[msn & (OVR_ENG_MAX_RD_ATOMIC - 1)];
	struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];
	bool read = p->opcode == OVR_OP_READ_RESP;

	if (qp->sq_cons == qp->sq_next ||
	    (idx - qp->sq_cons) >= (qp->sq_next - qp->sq_cons) ||
	    w->msn != msn || !eng_is_q1(w->opcode) ||
	    (w->opcode == OVR_WR_RDMA_READ) != read ||
	    (read && (p->u.rresp.msg_len != w->len ||
		      (uint64_t)p->u.rresp.mo + p->payload_len > w->len))) {
		e->st.rx_bad++;
		return false;
	}
	qp->rsp_since = now; /* the responder is alive */
	qp->rsp_probes = 0;
	qp->rsp_at = 0;
	if (read) {
		if (w->inl)
			return false;
		if (!sge_write(e, qp, -1, eng_swqe_sge(qp, idx), w->nsge,
			       p->u.rresp.mo, p->payload, p->payload_len,
			       w->len)) {
			eng_qp_error_local(e, qp, idx, eng_copy_status(e), 0);
			return false;
		}
		w->resp_got += p->payload_len;
	} else if (w->opcode != OVR_WR_ATOMIC_WRITE) {
		uint64_t orig = p->u.aresp.orig;

		if (!sge_write(e, qp, -1, eng_swqe_sge(qp, idx), w->nsge, 0,
			       (const uint8_t *)&orig, 8, 8)) {
			eng_qp_error_local(e, qp, idx, eng_copy_status(e), 0);
			return false;
		}
	}
	if (p->flags & OVR_F_LAST) {
		w->resp_done = 1;
		w->resp_last_psn = p->psn;
	}
	return true;
}

/* An accepted packet is received: mark it, release what waited on it,
 * and see that an ACK goes. */
static void rx_accept(struct ovr_eng *e, struct eng_qp *qp,
		      const struct ovr_wire_pkt *p, uint64_t now, bool ce)
{
	enum ovr_dp_rx_verdict v = ovr_dp_rxwin_mark(&qp->rx, p->psn);

	qp->ts_recent = p->tsval;
	qp->ts_fresh = true;
	qp->st.rx_pkts++;
	qp->st.rx_bytes += p->payload_len;
	if (ce)
		qp->ce_count++;
	if (v == OVR_DP_RX_OOO)
		qp->st.rx_ooo++;
	else
		rx_advance(e, qp);
	schedule_ack(e, qp, now,
		     v == OVR_DP_RX_OOO || (p->flags & OVR_F_ACKREQ) ||
			     qp->rx.hi_psn != qp->rx.ack_psn);
}

/* A sequenced packet from the peer: one handler per opcode class. */
static void rx_seq(struct ovr_eng *e, struct eng_qp *qp,
		   const struct ovr_wire_pkt *p, uint64_t now, bool ce)
{
	enum ovr_dp_rx_verdict v = ovr_dp_rxwin_peek(&qp->rx, p->psn);
	struct eng_rwqe *r = NULL;
	uint32_t ridx = 0;
	bool ok;

	/* a NAK this packet provokes echoes its send time (send_nak) */
	qp->nak_ts = p->tsval;
	if (v == OVR_DP_RX_OUTSIDE) {
		rx_outside(qp, p);
		return;
	}
	if (v == OVR_DP_RX_DUP) {
		rx_dup(e, qp, p, now);
		return;
	}
	/* a SEND or a WRITE with immediate consumes a receive: found first */
	if (p->opcode == OVR_OP_SEND || p->opcode == OVR_OP_SEND_IMM ||
	    p->opcode == OVR_OP_SEND_INV || p->opcode == OVR_OP_WRITE_IMM) {
		r = rx_recv_of(e, qp, p, &ridx);
		if (!r)
			return;
	}
	switch (p->opcode) {
	case OVR_OP_SEND:
	case OVR_OP_SEND_IMM:
	case OVR_OP_SEND_INV:
		ok = rx_send(e, qp, p, r, ridx);
		break;
	case OVR_OP_WRITE:
	case OVR_OP_WRITE_IMM:
		ok = rx_write(e, qp, p, r, v == OVR_DP_RX_INORDER);
		break;
	case OVR_OP_READ_REQ:
	case OVR_OP_ATOMIC_CS:
	case OVR_OP_ATOMIC_FA:
	case OVR_OP_ATOMIC_WR:
		ok = rx_rd_req(e, qp, p);
		break;
	case OVR_OP_READ_RESP:
	case OVR_OP_ATOMIC_RESP:
		ok = rx_rd_resp(e, qp, p, now);
		break;
	default:
		e->st.rx_bad++;
		ok = false;
		break;
	}
	if (ok)
		rx_accept(e, qp, p, now, ce);
}

/*
 * Does the PSN of a TERMINATE fit @qp's state? It must, so that a stray,
 * stale or forged TERMINATE (which would need the right pair of 24-bit
 * QPNs, generations included, already) does not end a live QP.
 */
static bool term_psn_ok(const struct ovr_eng *e, const struct eng_qp *qp,
			const struct ovr_wire_pkt *p)
{
	uint32_t psn = p->u.term.psn, w = e->cfg.window_pkts, fail;

	switch (p->u.term.reason) {
	case OVR_TERM_DESTROYED:
	case OVR_TERM_ERROR:
		/* the sender's next PSN: it sent everything we received,
		 * and never more than a window beyond what we acknowledged */
		return ovr_wire_psn_diff(psn, qp->rx.hi_psn) >= 0 &&
		       ovr_wire_psn_diff(psn, qp->rx.ack_psn) <= (int32_t)w;
	case OVR_TERM_NO_QP_SEQ:
		/* a packet of ours, sent and not yet acknowledged; or the
		 * request of a READ / atomic whose response we still await
		 * (eng_rsp_watch resends it: its responder may be gone) */
		return (!PSN_LT(psn, qp->snd_una) &&
			PSN_LT(psn, qp->snd_nxt)) ||
		       eng_q1_of_psn(qp, psn, &fail);
	case OVR_TERM_NO_QP_ACK: {
		/* an ACK of ours: at most a window old */
		int32_t d = ovr_wire_psn_diff(qp->rx.ack_psn, psn);

		return d >= 0 && d <= (int32_t)w;
	}
	}
	return false;
}

/* A TERMINATE: the peer QP is gone; so is this one, if it checks out. */
static void rx_terminate(struct ovr_eng *e, const struct ovr_wire_pkt *p,
			 uint64_t now)
{
	struct eng_qp *qp = eng_qp_get(e, p->dqpn);
	uint32_t fail;

	if (!qp) {
		e->st.rx_no_qp++; /* never answered */
		return;
	}
	if (qp->state < OVR_QPS_RTR || qp->state == OVR_QPS_ERR) {
		e->st.rx_bad_state++;
		return;
	}
	if (qp->type != OVR_QPT_RC || p->sqpn != qp->dest_qpn ||
	    !term_psn_ok(e, qp, p)) {
		e->st.rx_term_bad++;
		return;
	}
	e->st.rx_term++;
	/* what the peer received before it went completes normally */
	if ((p->flags & OVR_F_ACK) && qp->state >= OVR_QPS_RTS)
		eng_on_ack(e, qp, p, now);
	/*
	 * A peer that went away while this QP owes it nothing (a clean
	 * teardown: everything sent was acknowledged) leaves this QP as it
	 * is, posted receives included, as a vanished peer does on IB; its
	 * next send is answered with a TERMINATE by the peer's node.
	 */
	if (qp->sq_cons == qp->sq_prod && qp->state != OVR_QPS_ERR) {
		e->st.rx_term_idle++;
		return;
	}
	if (qp->state == OVR_QPS_ERR)
		return; /* eng_on_ack found a reason of its own */
	/* the WR the peer was working on fails with the cause, the rest
	 * flush; a head that never went out just flushes */
	fail = qp->sq_cons - 1;
	if (qp->sq_cons != qp->sq_prod) {
		uint8_t st = qp->sq[qp->sq_cons & qp->sq_mask].state;

		if (st == W_SENDING || st == W_SENT)
			fail = qp->sq_cons;
	}
	eng_qp_error(e, qp, fail, OVR_WC_REM_ABORT_ERR,
		     OVR_VERR_TERM + p->u.term.reason);
	eng_qp_event(e, qp, OVR_EV_QP_FATAL);
}

/* Worth a TERMINATE when it reaches no QP: it will be retransmitted (a
 * sequenced packet) or it is an ACK, whose sender may wait on us. */
static bool answerable(const struct ovr_wire_pkt *p)
{
	return ovr_wire_opcode_is_sequenced(p->opcode) ||
	       p->opcode == OVR_OP_ACK;
}

void ovr_eng_rx(struct ovr_eng *e, uint64_t now, const void *pdu, uint32_t len,
		bool ce)
{
	ovr_eng_rx_from(e, now, pdu, len, ce, OVR_ENG_FROM_NONE);
}

/* A PDU that does not parse: one of a version this side does not speak
 * is answered with a VERSION_REJECT, from the QP it was meant for. */
static void rx_unparsed(struct ovr_eng *e, const void *pdu, uint32_t len,
			int rc)
{
	struct eng_qp *qp;

	e->st.rx_bad++;
	if (rc == -OVR_WIRE_EVERSION && len >= 12) {
		/* answer from the QP it was meant for, if any */
		const uint8_t *b = pdu;
		uint32_t dq = (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];

		qp = eng_qp_get(e, dq);
		if (qp) {
			void *tok = NULL;
			uint8_t *buf =
				e->ops.tx_alloc(e->ctx, e->cfg.max_pdu, &tok);
			int n;

			if (!buf)
				return;
			n = ovr_wire_build_reject(pdu, len, buf,
						  e->cfg.max_pdu);
			eng_tx_out(e, qp->qpn, tok, buf,
				   n > 0 ? (uint32_t)n : 0, false, qp->peer,
				   qp->user);
		}
	}
}

/* A packet for a QP that does not exist (any more): a TERMINATE tells
 * its sender, within the rate limit, if the sender is known (@from). */
static void rx_no_qp(struct ovr_eng *e, const struct ovr_wire_pkt *p,
		     uint64_t now, uint64_t from)
{
	e->st.rx_no_qp++;
	if (!answerable(p))
		return;
	if (from == OVR_ENG_FROM_NONE)
		e->st.term_limited++;
	else if (term_token(e, now))
		eng_tx_term(e, p->sqpn, p->dqpn,
			    ovr_wire_opcode_is_sequenced(p->opcode) ?
				    OVR_TERM_NO_QP_SEQ :
				    OVR_TERM_NO_QP_ACK,
			    ovr_wire_opcode_is_sequenced(p->opcode) ?
				    p->psn :
				    p->ack_psn,
			    from, 0, NULL, now);
}

/* A packet for a QP in ERROR: it is not processed, but answered. */
static void rx_in_error(struct ovr_eng *e, struct eng_qp *qp,
			const struct ovr_wire_pkt *p, uint64_t now)
{
	/* repeat the NAK that ended the QP to a peer still sending
	 * (a retransmission, or a READ request asked again by a
	 * requester that lost the NAK: rsp_watch) */
	if (qp->fatal_code && ovr_wire_opcode_is_sequenced(p->opcode) &&
	    !qp->nak_code) {
		qp->nak_code = qp->fatal_code;
		qp->nak_psn = qp->fatal_psn;
		qp->nak_ts = p->tsval;
		eng_qp_activate(e, qp);
	}
	/* ... or the TERMINATE that told it this QP failed */
	if (qp->term_reason && !qp->term_pending && answerable(p) &&
	    term_token(e, now))
		eng_tx_term(e, qp->dest_qpn, qp->qpn, qp->term_reason,
			    qp->snd_nxt, qp->peer, qp->user, qp, now);
	e->st.rx_bad_state++;
}

/* A packet for a connected QP that can take it: the ACK it carries (or
 * the NAK it is) goes to the completer, a sequenced packet to rx_seq. */
static void rx_rc(struct ovr_eng *e, struct eng_qp *qp,
		  const struct ovr_wire_pkt *p, uint64_t now, bool ce)
{
	if (!qp->comm_est && qp->state == OVR_QPS_RTR) {
		qp->comm_est = true;
		eng_qp_event(e, qp, OVR_EV_COMM_EST);
	}
	if (ovr_unlikely(qp->state == OVR_QPS_RTR && !qp->psn_adopted))
		rtr_adopt_psn(e, qp, p, now);
	eng_qp_activate(e, qp);
	if (p->opcode == OVR_OP_NAK) {
		eng_on_nak(e, qp, p, now);
		return;
	}
	if (p->flags & OVR_F_ACK) {
		if (p->opcode == OVR_OP_ACK)
			qp->st.acks_rcvd++;
		eng_on_ack(e, qp, p, now);
		if (qp->state == OVR_QPS_ERR)
			return;
	}
	if (ovr_wire_opcode_is_sequenced(p->opcode))
		rx_seq(e, qp, p, now, ce);
}

/* A PDU in: counted and parsed into @p (false: it does not parse,
 * counted as such) */
static bool rx_parse(struct ovr_eng *e, uint64_t now, const void *pdu,
		     uint32_t len, struct ovr_wire_pkt *p)
{
	int rc;

	e->now = now;
	e->st.rx_pkts++;
	rc = ovr_wire_parse(pdu, len, p, &e->wc);
	if (rc < 0) {
		rx_unparsed(e, pdu, len, rc);
		return false;
	}
	return true;
}

int ovr_eng_rx_ud_to(struct ovr_eng *e, uint64_t now, const void *pdu,
		     uint32_t len, uint64_t from, uint32_t qpn)
{
	struct ovr_wire_pkt p;
	struct eng_qp *qp;

	if (!rx_parse(e, now, pdu, len, &p))
		return -EINVAL;
	if (p.opcode != OVR_OP_UD_SEND && p.opcode != OVR_OP_UD_SEND_IMM) {
		e->st.rx_bad++;
		return -EINVAL;
	}
	qp = eng_qp_get(e, qpn);
	if (!qp || qp->type != OVR_QPT_UD) {
		e->st.rx_no_qp++;
		return -ENOENT;
	}
	rx_ud(e, qp, &p, from);
	return 0;
}

void ovr_eng_rx_from(struct ovr_eng *e, uint64_t now, const void *pdu,
		     uint32_t len, bool ce, uint64_t from)
{
	struct ovr_wire_pkt p;
	struct eng_qp *qp;

	if (!rx_parse(e, now, pdu, len, &p))
		return;
	if (p.opcode == OVR_OP_TERMINATE) {
		rx_terminate(e, &p, now);
		return;
	}
	qp = eng_qp_get(e, p.dqpn);
	if (!qp) {
		rx_no_qp(e, &p, now, from);
		return;
	}
	if (ovr_unlikely(qp->type == OVR_QPT_UD || p.opcode == OVR_OP_UD_SEND ||
			 p.opcode == OVR_OP_UD_SEND_IMM)) {
		if (qp->type == OVR_QPT_UD && (p.opcode == OVR_OP_UD_SEND ||
					       p.opcode == OVR_OP_UD_SEND_IMM))
			rx_ud(e, qp, &p, from);
		else
			e->st.rx_bad++; /* a datagram for RC, or the reverse */
		return;
	}
	if (qp->state >= OVR_QPS_RTR && p.sqpn != qp->dest_qpn) {
		e->st.rx_no_qp++;
		return;
	}
	if (qp->state < OVR_QPS_RTR) {
		e->st.rx_bad_state++;
		return;
	}
	if (p.opcode == OVR_OP_VERSION_REJECT) {
		if (ovr_wire_version_select(p.u.vrej.min, p.u.vrej.max) < 0 &&
		    qp->state != OVR_QPS_ERR) {
			eng_qp_error_head(e, qp, OVR_WC_FATAL_ERR,
					  OVR_VERR_VERSION);
			eng_qp_event(e, qp, OVR_EV_QP_FATAL);
		}
		return;
	}
	if (qp->type == OVR_QPT_UC) {
		/* nothing answers UC, in ERROR neither (eng_uc.c) */
		if (qp->state == OVR_QPS_ERR)
			e->st.rx_bad_state++;
		else
			eng_uc_rx(e, qp, &p, now, ce);
		return;
	}
	if (qp->state == OVR_QPS_ERR) {
		rx_in_error(e, qp, &p, now);
		return;
	}
	rx_rc(e, qp, &p, now, ce);
}
