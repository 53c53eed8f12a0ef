// SPDX-License-Identifier: MIT
/*
 * The requester (the engine's rxe_req.c): posting send WRs, and sending
 * what the QP may send - its requests segment by segment within the
 * congestion window and the pacing rate, resends of packets marked lost,
 * UD datagrams, TERMINATEs - from the poll loop (eng_qp_tx). Every PDU
 * leaves through eng_tx_pdu, which also clears the ACK state it carries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/compiler.h>
#include <ovrdma/util.h>

#include "engine_impl.h"

/* indexed by enum ovr_wr_opcode; post_send admits only these */
const struct eng_wr_map eng_wr_map[OVR_WR_ATOMIC_WRITE + 1] = {
	[OVR_WR_RDMA_WRITE] = { OVR_OP_WRITE, OVR_WC_RDMA_WRITE },
	[OVR_WR_RDMA_WRITE_WITH_IMM] = { OVR_OP_WRITE_IMM, OVR_WC_RDMA_WRITE },
	[OVR_WR_SEND] = { OVR_OP_SEND, OVR_WC_SEND },
	[OVR_WR_SEND_WITH_IMM] = { OVR_OP_SEND_IMM, OVR_WC_SEND },
	[OVR_WR_RDMA_READ] = { OVR_OP_READ_REQ, OVR_WC_RDMA_READ },
	[OVR_WR_ATOMIC_CMP_AND_SWP] = { OVR_OP_ATOMIC_CS, OVR_WC_COMP_SWAP },
	[OVR_WR_ATOMIC_FETCH_AND_ADD] = { OVR_OP_ATOMIC_FA, OVR_WC_FETCH_ADD },
	[OVR_WR_SEND_WITH_INV] = { OVR_OP_SEND_INV, OVR_WC_SEND },
	[OVR_WR_ATOMIC_WRITE] = { OVR_OP_ATOMIC_WR, OVR_WC_ATOMIC_WRITE },
	/* local operations: no packet */
	[OVR_WR_LOCAL_INV] = { 0, OVR_WC_LOCAL_INV },
	[OVR_WR_BIND_MW] = { 0, OVR_WC_BIND_MW },
};

static bool is_local(uint8_t op)
{
	return op == OVR_WR_BIND_MW || op == OVR_WR_LOCAL_INV;
}

static bool sge_read(struct ovr_eng *e, struct eng_qp *qp,
		     const struct eng_lsge *s, unsigned int n, uint32_t off,
		     uint8_t *dst, uint32_t len, uint32_t msg_len, bool fenced)
{
	bool ok;

	e->dev_fenced = fenced;
	ok = eng_sge_copy(e, qp, -1, s, n, off, dst, len, false, msg_len);
	e->dev_fenced = false;
	return ok;
}

static bool is_q0(uint8_t op)
{
	return op == OVR_WR_SEND || op == OVR_WR_SEND_WITH_IMM ||
	       op == OVR_WR_SEND_WITH_INV || op == OVR_WR_RDMA_WRITE_WITH_IMM;
}

static bool is_atomic(uint32_t op)
{
	return op == OVR_WR_ATOMIC_CMP_AND_SWP ||
	       op == OVR_WR_ATOMIC_FETCH_AND_ADD;
}

/* Is @wr one @qp can take? 0, or the errno for ovr_eng_post_send; the
 * message length in @total. */
static int post_send_check(const struct eng_qp *qp,
			   const struct ovr_eng_send_wr *wr, uint64_t *total)
{
	bool inl, atomic;
	uint32_t i;

	if (qp->state < OVR_QPS_RTS)
		return EINVAL;
	if (qp->type == OVR_QPT_UD && wr->opcode != OVR_WR_SEND &&
	    wr->opcode != OVR_WR_SEND_WITH_IMM)
		return EINVAL;
	if (qp->type == OVR_QPT_UC && !eng_uc_opcode_ok(wr->opcode))
		return EINVAL;
	switch (wr->opcode) {
	case OVR_WR_RDMA_WRITE:
	case OVR_WR_RDMA_WRITE_WITH_IMM:
	case OVR_WR_SEND:
	case OVR_WR_SEND_WITH_IMM:
	case OVR_WR_SEND_WITH_INV:
	case OVR_WR_RDMA_READ:
	case OVR_WR_ATOMIC_CMP_AND_SWP:
	case OVR_WR_ATOMIC_FETCH_AND_ADD:
		break;
	case OVR_WR_ATOMIC_WRITE:
		/* its 8 bytes in the WR (swap), no SGE, not inline */
		if (qp->type != OVR_QPT_RC || wr->num_sge ||
		    (wr->send_flags & OVR_SEND_INLINE))
			return EINVAL;
		break;
	case OVR_WR_LOCAL_INV:
	case OVR_WR_BIND_MW:
		/* no data: an SGE list there is a mistake */
		if (wr->num_sge)
			return EINVAL;
		break;
	default:
		return EINVAL;
	}
	if (wr->num_sge > qp->cap.max_send_sge || (wr->num_sge && !wr->sg_list))
		return EINVAL;
	if (wr->send_flags & ~(unsigned)(OVR_SEND_FENCE | OVR_SEND_SIGNALED |
					 OVR_SEND_SOLICITED | OVR_SEND_INLINE))
		return EINVAL;
	*total = 0;
	for (i = 0; i < wr->num_sge; i++)
		*total += wr->sg_list[i].length;
	if (*total > OVR_WIRE_MAX_MSG)
		return EINVAL;
	atomic = is_atomic(wr->opcode);
	if (atomic && (wr->num_sge != 1 || *total != 8))
		return EINVAL;
	inl = (wr->send_flags & OVR_SEND_INLINE) && !eng_is_q1(wr->opcode);
	if (inl && *total > qp->cap.max_inline_data)
		return EINVAL;
	if (qp->sq_prod - qp->sq_cons > qp->sq_mask)
		return ENOMEM;
	return 0;
}

/* The send entry's own fields, from @wr. */
static void swqe_init(const struct eng_qp *qp, struct eng_swqe *w,
		      const struct ovr_eng_send_wr *wr, uint64_t total)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = (uint8_t)wr->opcode;
	w->flags = (uint8_t)wr->send_flags;
	w->len = (uint32_t)total;
	w->rkey = wr->rkey;
	w->raddr = wr->remote_addr;
	w->imm = wr->opcode == OVR_WR_SEND_WITH_INV ||
				 wr->opcode == OVR_WR_LOCAL_INV ?
			 wr->invalidate_rkey :
			 wr->imm_data;
	w->cmp_add = wr->compare_add;
	w->swap = wr->swap;
	if (wr->opcode == OVR_WR_BIND_MW) {
		/* the bind, in the entry's own fields (see tx_local) */
		w->imm = wr->bind_mw.mw_rkey;
		w->rkey = wr->bind_mw.rkey;
		w->raddr = wr->bind_mw.addr;
		w->cmp_add = wr->bind_mw.length;
		w->swap = (uint64_t)wr->bind_mw.access << 32 |
			  wr->bind_mw.mr_lkey;
	}
	if (qp->type == OVR_QPT_UD) {
		w->raddr = wr->ud_peer;
		w->rkey = wr->remote_qpn & M24;
		/* verbs' controlled qkey: the high bit means "the QP's" */
		w->cmp_add = wr->remote_qkey & 0x80000000u ? qp->qkey :
							     wr->remote_qkey;
	}
	w->state = W_QUEUED;
}

/* The payload of send entry @idx: copied now when inline, else its
 * scatter list resolved and its regions referenced (a key that does not
 * check out fails the WR: W_LOCERR). */
static void swqe_load(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx,
		      const struct ovr_eng_send_wr *wr, bool inl)
{
	struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];
	struct eng_lsge *s = eng_swqe_sge(qp, idx);
	unsigned int need;
	uint32_t i;

	if (inl) {
		uint8_t *d = qp->sinl + (size_t)(idx & qp->sq_mask) *
						qp->cap.max_inline_data;

		/* the application's buffer is copied now; no key involved */
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(d, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			d += wr->sg_list[i].length;
		}
		w->inl = 1;
		return;
	}
	need = eng_is_q1(wr->opcode) ? OVR_ACCESS_LOCAL_WRITE : 0;
	for (i = 0; i < wr->num_sge; i++) {
		const struct ovr_eng_sge *g = &wr->sg_list[i];
		struct ovr_mr_loc loc;

		s[i].len = g->length;
		s[i].key = 0;
		s[i].host = NULL;
		s[i].dev = NULL;
		if (!g->length)
			continue;
		if (ovr_mr_check_dev(e->mrs, g->lkey, qp->pd, g->addr,
				     g->length, need, &loc) ||
		    ovr_mr_get(e->mrs, g->lkey)) {
			w->state = W_LOCERR;
			w->status = OVR_WC_LOC_PROT_ERR;
			break;
		}
		eng_set_lsge(&s[i], &loc);
		s[i].key = g->lkey;
		w->nsge = (uint8_t)(i + 1);
	}
	if (w->state != W_LOCERR)
		w->nsge = (uint8_t)wr->num_sge;
}

/*
 * A remote range that wraps the address space lies in no region of
 * the peer's (and no PDU may carry it, docs/WIRE.md ERANGE): what the
 * responder would answer is known here, REM_ACCESS_ERR when the WR
 * reaches the head (the PDU builder would refuse it forever).
 */
static void swqe_check_range(const struct eng_qp *qp, struct eng_swqe *w,
			     const struct ovr_eng_send_wr *wr, uint64_t total)
{
	bool atomic = is_atomic(wr->opcode);

	if (wr->opcode == OVR_WR_ATOMIC_WRITE)
		atomic = true; /* an 8-byte target too */
	if (w->state != W_LOCERR && qp->type == OVR_QPT_RC &&
	    (wr->opcode == OVR_WR_RDMA_WRITE ||
	     wr->opcode == OVR_WR_RDMA_WRITE_WITH_IMM ||
	     wr->opcode == OVR_WR_RDMA_READ || atomic)) {
		uint64_t rlen = atomic ? 8 : total;

		if (rlen && wr->remote_addr + (rlen - 1) < wr->remote_addr) {
			w->state = W_LOCERR;
			w->status = OVR_WC_REM_ACCESS_ERR;
		}
	}
}

int ovr_eng_post_send(struct ovr_eng *e, uint32_t qpn,
		      const struct ovr_eng_send_wr *wr, uint64_t now_ns)
{
	struct eng_qp *qp = eng_qp_get(e, qpn);
	struct eng_swqe *w;
	uint64_t total = 0;
	uint32_t idx;
	int rc;

	if (!qp || !wr)
		return EINVAL;
	rc = post_send_check(qp, wr, &total);
	if (rc)
		return rc;
	idx = qp->sq_prod;
	w = &qp->sq[idx & qp->sq_mask];
	swqe_init(qp, w, wr, total);
	swqe_load(e, qp, idx, wr,
		  (wr->send_flags & OVR_SEND_INLINE) && !eng_is_q1(wr->opcode));
	swqe_check_range(qp, w, wr, total);
	if (w->state != W_LOCERR) {
		if (is_q0(w->opcode))
			w->msn = qp->q0_msn++;
		else if (eng_is_q1(w->opcode))
			w->msn = qp->q1_msn++;
	}
	qp->sq_prod++;
	if (qp->state == OVR_QPS_ERR || qp->state == OVR_QPS_SQE) {
		/* verbs: a WR posted to a QP in ERROR completes flushed */
		eng_complete_send(e, qp, idx, OVR_WC_WR_FLUSH_ERR, 0, true);
		qp->sq_cons = qp->sq_next = qp->sq_prod;
		return 0;
	}
	(void)now_ns;
	eng_qp_activate(e, qp);
	/* a WR that failed its checks completes when it is the oldest: now,
	 * if it is (an idle QP may hear nothing that would run
	 * eng_sq_complete) */
	if (w->state == W_LOCERR && idx == qp->sq_cons)
		eng_sq_complete(e, qp);
	return 0;
}

/* Build @p's headers in a fresh buffer, fill the payload with @fill, seal
 * and hand it out. Returns false when no buffer was available. */
bool eng_tx_pdu(struct ovr_eng *e, struct eng_qp *qp, struct ovr_wire_pkt *p,
		eng_fill_fn fill, uint32_t off, uint32_t idx)
{
	void *tok = NULL;
	uint8_t *buf = e->ops.tx_alloc(e->ctx, e->cfg.max_pdu, &tok);
	int h;

	if (!buf) {
		e->st.tx_nobuf++;
		return false;
	}
	h = ovr_wire_build_hdr(p, buf, e->cfg.max_pdu); /* counts the CRC */
	if (ovr_unlikely(h < 0)) {
		/* a bug, not an input problem: never send a bad PDU */
		e->st.tx_nobuf++;
		eng_tx_out(e, qp->qpn, tok, buf, 0, false, qp->peer, qp->user);
		return false;
	}
	if (p->payload_len && !fill(e, qp, buf + h, off, p->payload_len, idx)) {
		/* a device copy failed: fill() has failed the QP */
		eng_tx_out(e, qp->qpn, tok, buf, 0, false, qp->peer, qp->user);
		return false;
	}
	/* sealed when it leaves: the payload may still be on its way */
	eng_tx_out(e, qp->qpn, tok, buf, (uint32_t)h + p->payload_len, true,
		   qp->peer, qp->user);
	e->st.tx_pkts++;
	qp->st.tx_pkts++;
	qp->st.tx_bytes += p->payload_len;
	if (p->flags & OVR_F_ACK) {
		qp->unacked = 0;
		qp->ack_at = 0;
		if (qp->rx.hi_psn == qp->rx.ack_psn)
			qp->ack_now = false;
		/* sent: a NAK's echo is that of the packet it refuses */
		if (p->opcode != OVR_OP_NAK)
			qp->ts_fresh = false;
	}
	return true;
}

static bool fill_req(struct ovr_eng *e, struct eng_qp *qp, uint8_t *dst,
		     uint32_t off, uint32_t len, uint32_t idx)
{
	struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];

	if (w->inl) {
		memcpy(dst,
		       qp->sinl +
			       (size_t)(idx & qp->sq_mask) *
				       qp->cap.max_inline_data +
			       off,
		       len);
		return true;
	}
	if (sge_read(e, qp, eng_swqe_sge(qp, idx), w->nsge, off, dst, len,
		     w->len, w->flags & OVR_SEND_FENCE))
		return true;
	/* the source could not be read: this WR fails, the QP with it */
	eng_qp_error_local(e, qp, idx, eng_copy_status(e), 0);
	return false;
}

static uint8_t wire_op_of(uint8_t wr_op)
{
	return eng_wr_map[wr_op].wire;
}

/* (Re)send the request segment of SQ slot @idx at offset @off. */
bool eng_tx_req_seg(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx,
		    uint32_t off, uint32_t len, uint32_t psn, bool retx,
		    uint64_t now)
{
	struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];
	struct ovr_wire_pkt p;
	bool last = off + len == w->len;

	eng_hdr_init(qp, &p, wire_op_of(w->opcode), now);
	p.psn = psn;
	if (retx)
		p.flags |= OVR_F_RETX;
	if (last)
		p.flags |= OVR_F_LAST;
	p.payload_len = len;
	switch (w->opcode) {
	case OVR_WR_SEND:
	case OVR_WR_SEND_WITH_IMM:
	case OVR_WR_SEND_WITH_INV:
		p.u.send.msn = w->msn;
		p.u.send.mo = off;
		p.u.send.msg_len = w->len;
		if (w->opcode == OVR_WR_SEND_WITH_IMM)
			p.u.send.imm = w->imm;
		if (w->opcode == OVR_WR_SEND_WITH_INV)
			p.u.send.inv_rkey = w->imm;
		if (last && (w->flags & OVR_SEND_SOLICITED))
			p.flags |= OVR_F_SE;
		break;
	case OVR_WR_RDMA_WRITE:
	case OVR_WR_RDMA_WRITE_WITH_IMM:
		p.u.write.rkey = w->rkey;
		p.u.write.msg_len = w->len;
		p.u.write.va = w->raddr;
		p.u.write.mo = off;
		if (w->opcode == OVR_WR_RDMA_WRITE_WITH_IMM) {
			p.u.write.msn = w->msn;
			p.u.write.imm = w->imm;
			if (last && (w->flags & OVR_SEND_SOLICITED))
				p.flags |= OVR_F_SE;
		}
		break;
	case OVR_WR_RDMA_READ:
		p.flags |= OVR_F_LAST;
		p.payload_len = 0;
		p.u.rreq.rkey = w->rkey;
		p.u.rreq.len = w->len;
		p.u.rreq.va = w->raddr;
		p.u.rreq.msn = w->msn;
		break;
	default:
		p.flags |= OVR_F_LAST;
		p.payload_len = 0;
		p.u.areq.rkey = w->rkey;
		p.u.areq.msn = w->msn;
		p.u.areq.va = w->raddr;
		if (w->opcode == OVR_WR_ATOMIC_CMP_AND_SWP) {
			p.u.areq.compare = w->cmp_add;
			p.u.areq.swap_add = w->swap;
		} else if (w->opcode == OVR_WR_ATOMIC_WRITE) {
			p.u.areq.swap_add = w->swap;
		} else {
			p.u.areq.swap_add = w->cmp_add;
		}
		break;
	}
	return eng_tx_pdu(e, qp, &p, fill_req, off, idx);
}

/*
 * Send a TERMINATE from QPN @sqpn to @dqpn at @peer (docs/WIRE.md §3.11).
 * From a QP (@ackq) it also acknowledges everything that QP received
 * (F_ACK, ack_psn), so that the peer's work requests that did arrive
 * complete successfully even when the QP goes away before its delayed
 * ACK. Returns false when no buffer was free.
 */
bool eng_tx_term(struct ovr_eng *e, uint32_t dqpn, uint32_t sqpn,
		 uint8_t reason, uint32_t psn, uint64_t peer, uint64_t user,
		 const struct eng_qp *ackq, uint64_t now)
{
	struct ovr_wire_pkt p;
	void *tok = NULL;
	uint8_t *buf;
	int h;

	memset(&p, 0, sizeof(p));
	p.version = OVR_WIRE_VERSION;
	p.opcode = OVR_OP_TERMINATE;
	p.dqpn = dqpn & M24;
	p.sqpn = sqpn & M24;
	p.tsval = eng_ts_of(now);
	p.u.term.reason = reason;
	p.u.term.psn = psn & M24;
	if (ackq && ackq->state >= OVR_QPS_RTR) {
		p.flags = OVR_F_ACK;
		p.ack_psn = ackq->rx.ack_psn & M24;
	}
	buf = e->ops.tx_alloc(e->ctx, e->cfg.max_pdu, &tok);
	if (!buf) {
		e->st.tx_nobuf++;
		return false;
	}
	h = ovr_wire_build_hdr(&p, buf, e->cfg.max_pdu);
	eng_tx_out(e, ackq ? ackq->qpn : 0, tok, buf, h < 0 ? 0 : (uint32_t)h,
		   true, peer, user);
	if (h < 0)
		return false;
	e->st.tx_pkts++;
	e->st.tx_term++;
	return true;
}

/* Resend the oldest packet marked lost (READ responses whose region
 * went are dropped on the way: eng_resp_resend_gone). Returns 1 sent,
 * 0 nothing to do, -1 blocked (window or buffers). */
static int tx_retx(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	uint32_t psn;

	for (psn = qp->snd_una; psn != qp->snd_nxt; psn = PSN_ADD(psn, 1)) {
		struct eng_pkt *k = eng_sb_pkt(e, qp, psn);
		bool ok;

		if (!(k->flags & SB_LOST))
			continue;
		if ((k->flags & SB_RNR) && qp->rnr_wait)
			continue;
		/* a READ response whose region went is dropped, not
		 * resent (and no longer lost) */
		if ((k->flags & SB_RESP) && eng_resp_resend_gone(e, qp, psn))
			continue;
		/* the RTO's resend goes whatever the window: the rest of
		 * the flight still counts as in flight until rto_verdict */
		if (!eng_window_open(e, qp, k->len) && !qp->rto_probe)
			return -1;
		if (k->flags & SB_RESP)
			ok = eng_tx_resp_seg(e, qp, k->idx, k->off, k->len, psn,
					     true, now);
		else
			ok = eng_tx_req_seg(e, qp,
					    qp->sq_cons +
						    ((k->idx - qp->sq_cons) &
						     qp->sq_mask),
					    k->off, k->len, psn, true, now);
		if (!ok)
			return -1;
		k->flags &= (uint8_t) ~(SB_LOST | SB_RNR);
		k->xmit_ns = now;
		qp->rto_probe = false;
		if (k->nretx < 255)
			k->nretx++;
		qp->nlost--;
		qp->pipe += PKT_COST(k->len);
		qp->st.retx_pkts++;
		e->st.retx_pkts++;
		eng_pace(qp, k->len, now);
		eng_arm_timers(qp, now, e->cfg.ack_delay_ns);
		return 1;
	}
	return 0;
}

/*
 * Execute the local operation at sq_next (BIND_MW, LOCAL_INV): when the
 * requester reaches it, after every WR before it has been sent (and,
 * with FENCE, its READs and atomics answered), as rxe does; no packet.
 * It completes in order, once everything sent before it is
 * acknowledged (last_psn: the PSN before snd_nxt). Refused: the WR
 * fails when it is the oldest, the QP with it (eng_sq_complete).
 */
static int tx_local(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx,
		    struct eng_swqe *w)
{
	int rc = eng_local_exec(e, qp, w);

	if (rc) {
		w->state = W_LOCERR;
	} else {
		w->state = W_SENT;
		w->last_psn = PSN_ADD(qp->snd_nxt, M24);
		qp->sq_next++;
	}
	if (idx == qp->sq_cons)
		eng_sq_complete(e, qp);
	return rc ? 0 : 1;
}

/* Run the local operation @w of @qp (BIND_MW, LOCAL_INV) on the MR
 * table: 0, or not (w->status says how it fails). Counted. */
int eng_local_exec(struct ovr_eng *e, struct eng_qp *qp, struct eng_swqe *w)
{
	int rc;

	if (w->opcode == OVR_WR_BIND_MW) {
		struct ovr_mw_bind b = {
			.mw_key = w->imm,
			.new_key = w->rkey,
			.mr_key = (uint32_t)w->swap,
			.pd = qp->pd,
			.qpn = qp->qpn,
			.access = (uint32_t)(w->swap >> 32),
			.va = w->raddr,
			.len = w->cmp_add,
		};

		rc = ovr_mw_bind(e->mrs, &b, NULL);
		e->st.mw_binds += !rc;
		e->st.mw_bind_err += !!rc;
		w->status = OVR_WC_MW_BIND_ERR;
	} else {
		rc = ovr_mr_invalidate_key(e->mrs, w->imm, qp->pd, qp->qpn,
					   false);
		e->st.mw_inv += !rc;
		e->st.mw_inv_err += !!rc;
		w->status = OVR_WC_LOC_QP_OP_ERR;
	}
	if (!rc)
		w->status = OVR_WC_SUCCESS;
	return rc;
}

/* Start or continue the request at sq_next. */
static int tx_req(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	struct eng_swqe *w;
	uint32_t idx, len, psn;

	if (qp->sq_next == qp->sq_prod)
		return 0;
	idx = qp->sq_next;
	w = &qp->sq[idx & qp->sq_mask];
	if (w->state == W_LOCERR)
		return 0; /* completes with its error once it is the oldest */
	if (qp->rnr_wait || qp->fail_pending)
		return 0;
	if (w->state == W_QUEUED) {
		if (qp->state != OVR_QPS_RTS)
			return 0; /* SQD: nothing new starts */
		if ((w->flags & OVR_SEND_FENCE) && qp->rd_out)
			return 0;
		if (eng_is_q1(w->opcode) &&
		    qp->rd_out >= (qp->max_rd_atomic ? qp->max_rd_atomic : 1u))
			return 0;
		if (is_q0(w->opcode) && qp->credit_valid &&
		    (int32_t)(w->msn - qp->peer_credit) >= 0) {
			/* no receive posted at the peer, as far as we know:
			 * wait, then probe (the peer NAKs RNR if still none) */
			uint64_t probe = 2 * qp->rtt.srtt_ns;

			if (probe < 20000)
				probe = 20000;
			if (!qp->credit_wait_since) {
				qp->credit_wait_since = now;
				return 0;
			}
			if (now < qp->credit_wait_since + probe)
				return 0;
		}
		if (is_local(w->opcode))
			return tx_local(e, qp, idx, w);
	}
	if (ovr_wire_psn_diff(qp->snd_nxt, qp->snd_una) >=
	    (int32_t)e->cfg.window_pkts)
		return -1;
	len = eng_is_q1(w->opcode) ? 0 : eng_min32(qp->seg, w->len - w->sent);
	if (!eng_window_open(e, qp, len) || !eng_sb_acquire(e, qp, now))
		return -1;
	psn = qp->snd_nxt;
	if (!eng_tx_req_seg(e, qp, idx, w->sent, len, psn, false, now))
		return -1;
	if (w->state == W_QUEUED) {
		w->state = W_SENDING;
		qp->credit_wait_since = 0;
		if (eng_is_q1(w->opcode)) {
			qp->rd_out++;
			qp->rdw[w->msn & (OVR_ENG_MAX_RD_ATOMIC - 1)] = idx;
		}
	}
	qp->snd_nxt = PSN_ADD(psn, 1);
	w->sent += len;
	if (eng_is_q1(w->opcode) || w->sent == w->len) {
		w->state = W_SENT;
		w->last_psn = psn;
		qp->sq_next++;
	}
	eng_sb_record(e, qp, psn, w->sent - len, len, idx & 0xffff,
		      w->state == W_SENT ? SB_LAST : 0, now);
	eng_pace(qp, len, now);
	return 1;
}

static bool fill_ud(struct ovr_eng *e, struct eng_qp *qp, uint8_t *dst,
		    uint32_t off, uint32_t len, uint32_t idx)
{
	return fill_req(e, qp, dst, off, len, idx);
}

/* Send the datagram of SQ slot @idx; false when no buffer was free. */
static bool tx_ud(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx,
		  uint64_t now)
{
	struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];
	struct ovr_wire_pkt p;
	void *tok = NULL;
	uint8_t *buf;
	int h;

	memset(&p, 0, sizeof(p));
	p.version = OVR_WIRE_VERSION;
	p.opcode = w->opcode == OVR_WR_SEND_WITH_IMM ? OVR_OP_UD_SEND_IMM :
						       OVR_OP_UD_SEND;
	p.flags = OVR_F_LAST | (w->flags & OVR_SEND_SOLICITED ? OVR_F_SE : 0);
	p.dqpn = w->rkey;
	p.sqpn = qp->qpn;
	p.tsval = eng_ts_of(now);
	p.u.ud.qkey = (uint32_t)w->cmp_add;
	p.u.ud.imm = p.opcode == OVR_OP_UD_SEND_IMM ? w->imm : 0;
	p.payload_len = w->len;
	buf = e->ops.tx_alloc(e->ctx, e->cfg.max_pdu, &tok);
	if (!buf) {
		e->st.tx_nobuf++;
		return false;
	}
	h = ovr_wire_build_hdr(&p, buf, e->cfg.max_pdu);
	if (ovr_unlikely(h < 0)) {
		eng_tx_out(e, qp->qpn, tok, buf, 0, false, w->raddr, qp->user);
		return true; /* cannot happen: len <= MTU was checked */
	}
	if (w->len && !fill_ud(e, qp, buf + h, 0, w->len, idx)) {
		/* the source could not be read: fill_req failed the QP */
		eng_tx_out(e, qp->qpn, tok, buf, 0, false, w->raddr, qp->user);
		return true;
	}
	eng_tx_out(e, qp->qpn, tok, buf, (uint32_t)h + w->len, true, w->raddr,
		   qp->user);
	e->st.tx_pkts++;
	qp->st.tx_pkts++;
	qp->st.tx_bytes += w->len;
	return true;
}

/*
 * A UD or UC send WR failed locally: it completes with @status, the
 * rest flush, and the QP goes to SQE (receives go on; modify SQE -> RTS
 * resumes sending), as verbs has it for UD and UC.
 */
void eng_sq_error(struct ovr_eng *e, struct eng_qp *qp, uint32_t status)
{
	uint32_t i;

	for (i = qp->sq_cons; i != qp->sq_prod; i++)
		eng_complete_send(e, qp, i,
				  i == qp->sq_cons ? status :
						     OVR_WC_WR_FLUSH_ERR,
				  i == qp->sq_cons ? OVR_VERR_LKEY : 0, true);
	qp->sq_cons = qp->sq_next = qp->sq_prod;
	qp->state = OVR_QPS_SQE;
	qp->st.state = OVR_QPS_SQE;
}

/* UD: each WR is one datagram, complete once handed to ops->tx. */
static uint32_t ud_tx(struct ovr_eng *e, struct eng_qp *qp, uint64_t now,
		      uint32_t burst)
{
	uint32_t n = 0;

	while (n < burst && qp->state == OVR_QPS_RTS &&
	       qp->sq_cons != qp->sq_prod) {
		uint32_t idx = qp->sq_cons;
		struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];

		if (w->state == W_LOCERR) {
			eng_sq_error(e, qp, w->status);
			break;
		}
		if (w->len > qp->seg) {
			/* IB C10-93.1.1: no packet, and no error */
			e->st.tx_ud_too_long++;
		} else {
			if (!tx_ud(e, qp, idx, now))
				break;
			n++;
		}
		eng_complete_send(e, qp, idx, OVR_WC_SUCCESS, 0, false);
		qp->sq_next = ++qp->sq_cons;
	}
	return n;
}

/* Send what this QP may send now, up to @burst packets. */
uint32_t eng_qp_tx(struct ovr_eng *e, struct eng_qp *qp, uint64_t now,
		   uint32_t burst)
{
	uint32_t n = 0;
	int r;

	if (ovr_unlikely(qp->type == OVR_QPT_UD))
		return ud_tx(e, qp, now, burst);
	if (ovr_unlikely(qp->type == OVR_QPT_UC))
		return eng_uc_tx(e, qp, now, burst);

	if (qp->nak_code) {
		eng_send_nak(e, qp, now);
		n++;
	}
	if (qp->term_pending &&
	    eng_tx_term(e, qp->dest_qpn, qp->qpn, qp->term_reason, qp->snd_nxt,
			qp->peer, qp->user, qp, now)) {
		qp->term_pending = false;
		n++;
	}
	if (qp->state == OVR_QPS_ERR || qp->state < OVR_QPS_RTR)
		return n;
	while (n < burst) {
		if (qp->cc.rate_bps && now < qp->next_tx_ns)
			break;
		r = 0;
		if (qp->nlost)
			r = tx_retx(e, qp, now);
		/* responses owed? (checked here: eng_tx_resp is in
		 * another file, a call per packet otherwise) */
		if (r == 0 && qp->rd_send_msn != qp->rd_exec_msn)
			r = eng_tx_resp(e, qp, now);
		if (r == 0 && qp->state >= OVR_QPS_RTS)
			r = tx_req(e, qp, now);
		if (r <= 0)
			break;
		n++;
	}
	if (qp->ack_now || (qp->ack_at && now >= qp->ack_at)) {
		eng_send_ack(e, qp, now);
		n++;
	}
	return n;
}
