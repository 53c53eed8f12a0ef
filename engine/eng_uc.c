// SPDX-License-Identifier: MIT
/*
 * Unreliable Connected QPs (the engine's part of rxe_req.c / rxe_resp.c
 * for IB_QPT_UC; docs/TRANSPORT.md, "Unreliable connected QPs").
 *
 * A UC QP is connected like an RC QP (path, dest_qp_num, rq_psn, sq_psn)
 * and carries SEND, SEND with immediate, RDMA WRITE and WRITE with
 * immediate as the same wire PDUs (docs/WIRE.md, "UC"), but nothing is
 * ever acknowledged, resent or refused on the wire:
 *
 *   requester  each WR is cut into packets of consecutive PSNs and
 *              completes once its last packet is handed to ops->tx;
 *              no scoreboard, no timers. Pacing: the rate the QP's
 *              congestion controller starts with (or its initial window
 *              per base RTT), frozen - there is no feedback to adapt to.
 *   responder  packets are taken in PSN order. A message is placed as
 *              its packets come; a gap (a missing PSN), a packet that
 *              does not continue the message, no posted receive, a
 *              receive too short, or a WRITE the rkey does not allow
 *              drops the rest of the message silently (counted), and the
 *              next message's first packet (mo 0) starts afresh. A
 *              receive partly filled by a dropped message is not
 *              completed: the next message reuses it (the IB spec's
 *              class D1 rule, rxe's do_class_d1e_error); one taken from
 *              an SRQ cannot go back, and completes REM_INV_REQ_ERR
 *              (class E, as rxe does).
 *
 * PSN acceptance is IB's (a FIRST or ONLY packet with any PSN starts a
 * message) with one exception for an overlay that duplicates and
 * reorders: a packet up to window_pkts behind the expected PSN is a late
 * copy and dropped, so a message is never delivered twice nor an old
 * one after a newer.
 */
#include <errno.h>
#include <string.h>

#include <ovrdma/compiler.h>

#include "engine_impl.h"

/* The RTT a controller that sets no rate is taken to want its initial
 * window per, when the engine was given no base RTT: an overlay's order
 * of magnitude (docs/TRANSPORT.md). */
#define ENG_UC_RTT_NS 100000ull

bool eng_uc_opcode_ok(uint32_t wr_opcode)
{
	return wr_opcode < 32 && (OVR_UC_WR_OPCODES >> wr_opcode & 1);
}

/*
 * RTR -> RTS: the controller starts as for RC (eng_qp_to_rts) and its
 * first decision becomes the QP's pacing rate for good: the rate it
 * sets, or its initial window per base RTT; never above the line rate.
 * No ACK will ever tell it more.
 */
void eng_uc_to_rts(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	uint64_t rtt = e->cfg.base_rtt_ns ? e->cfg.base_rtt_ns : ENG_UC_RTT_NS;

	eng_qp_to_rts(e, qp, now);
	if (!qp->cc.rate_bps)
		qp->cc.rate_bps = (uint64_t)qp->cc.cwnd_bytes * 8ull *
				  1000000000ull / rtt;
	if (e->cfg.line_rate_bps && qp->cc.rate_bps > e->cfg.line_rate_bps)
		qp->cc.rate_bps = e->cfg.line_rate_bps;
	if (!qp->cc.rate_bps)
		qp->cc.rate_bps = 1;
	qp->next_tx_ns = now;
}

/* A WRITE whose target range wraps the address space: no PDU may carry
 * it (ERANGE) and no region of the peer could hold it. */
static bool uc_write_wraps(const struct eng_swqe *w)
{
	return (w->opcode == OVR_WR_RDMA_WRITE ||
		w->opcode == OVR_WR_RDMA_WRITE_WITH_IMM) &&
	       w->len && w->raddr + (w->len - 1) < w->raddr;
}

/* Send what @qp may send now, up to @burst packets. */
uint32_t eng_uc_tx(struct ovr_eng *e, struct eng_qp *qp, uint64_t now,
		   uint32_t burst)
{
	uint32_t n = 0;

	while (n < burst &&
	       (qp->state == OVR_QPS_RTS || qp->state == OVR_QPS_SQD) &&
	       qp->sq_next != qp->sq_prod) {
		uint32_t idx = qp->sq_next, len, psn;
		struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];

		if (w->state == W_LOCERR) {
			eng_sq_error(e, qp, w->status);
			break;
		}
		if (w->state == W_QUEUED) {
			if (qp->state != OVR_QPS_RTS)
				break; /* SQD: nothing new starts */
			if (uc_write_wraps(w)) {
				e->st.uc_tx_unsent++;
				goto done;
			}
			/* BIND_MW, LOCAL_INV: in order, no packet; refused,
			 * the WR fails and the QP goes to ERROR, as on RC */
			if (w->opcode == OVR_WR_BIND_MW ||
			    w->opcode == OVR_WR_LOCAL_INV) {
				if (!eng_local_exec(e, qp, w))
					goto done;
				eng_qp_error_local(e, qp, idx, w->status,
						   eng_locerr_verr(w));
				break;
			}
		}
		if (now < qp->next_tx_ns)
			break;
		len = eng_min32(qp->seg, w->len - w->sent);
		psn = qp->snd_nxt;
		if (!eng_tx_req_seg(e, qp, idx, w->sent, len, psn, false, now))
			break; /* no buffer; or the source failed, the QP too */
		w->state = W_SENDING;
		qp->snd_una = qp->snd_nxt = PSN_ADD(psn, 1);
		w->sent += len;
		eng_pace(qp, len, now);
		n++;
		if (w->sent != w->len)
			continue;
done:
		/* handed to the port: that is all UC promises */
		w->state = W_SENT;
		w->last_psn = qp->snd_nxt;
		eng_complete_send(e, qp, idx, OVR_WC_SUCCESS, 0, false);
		qp->sq_cons = qp->sq_next = idx + 1;
	}
	if (qp->state == OVR_QPS_SQD)
		eng_sq_complete(e, qp); /* drained? */
	return n;
}

/* ---- responder ------------------------------------------------------- */

/* The message in progress is given up: the rest of its packets are
 * dropped; a receive it took from an SRQ cannot go back and completes in
 * error (class E), one of the QP's own stays for the next message. */
static void uc_drop_msg(struct ovr_eng *e, struct eng_qp *qp)
{
	if (!qp->uc.in_msg || !qp->uc.drop)
		e->st.uc_msg_dropped++;
	if (qp->srq && qp->rq_cons != qp->rq_prod) {
		eng_complete_recv(e, qp, qp->rq_cons, OVR_WC_REM_INV_REQ_ERR,
				  0);
		qp->rq_cons++;
		qp->rq_msn++;
	}
	qp->uc.in_msg = true;
	qp->uc.drop = true;
}

/* The receive the message at the head of the queue goes to: the QP's
 * oldest, or one taken from its SRQ. NULL: none posted. */
static struct eng_rwqe *uc_recv(struct ovr_eng *e, struct eng_qp *qp)
{
	if (qp->rq_cons == qp->rq_prod && (!qp->srq || !eng_srq_take(e, qp)))
		return NULL;
	return eng_rwqe(qp, qp->rq_cons);
}

/* A receive posted with a bad lkey, or device memory that cannot be
 * written: the receive completes in error and the QP goes to ERROR (a
 * local error of the responder; nothing tells the peer). */
static void uc_recv_fail(struct ovr_eng *e, struct eng_qp *qp, uint32_t status)
{
	struct eng_rwqe *r = eng_rwqe(qp, qp->rq_cons);

	if (!r->bad)
		r->bad = (uint8_t)status;
	qp->uc.in_msg = false;
	eng_qp_error(e, qp, qp->sq_prod, OVR_WC_WR_FLUSH_ERR, 0);
	eng_qp_event(e, qp, OVR_EV_QP_FATAL);
}

static bool uc_is_write(uint8_t op)
{
	return op == OVR_OP_WRITE || op == OVR_OP_WRITE_IMM;
}

/* The queue-0 MSN a packet carries (SEND*, WRITE_IMM; 0 for a WRITE). */
static uint32_t uc_msn_of(const struct ovr_wire_pkt *p)
{
	if (p->opcode == OVR_OP_WRITE_IMM)
		return p->u.write.msn;
	return uc_is_write(p->opcode) ? 0 : p->u.send.msn;
}

/* The message @p belongs to becomes the one in progress (its identity:
 * opcode, length, queue-0 MSN, WRITE target), nothing of it placed. */
static void uc_track(struct eng_qp *qp, const struct ovr_wire_pkt *p,
		     uint32_t msg_len)
{
	bool w = uc_is_write(p->opcode);

	qp->uc.op = p->opcode;
	qp->uc.len = msg_len;
	qp->uc.got = 0;
	qp->uc.msn = uc_msn_of(p);
	qp->uc.rkey = w ? p->u.write.rkey : 0;
	qp->uc.va = w ? p->u.write.va : 0;
}

/* Is @p (not a message's first packet) part of the message in
 * progress? */
static bool uc_same_msg(const struct eng_qp *qp, const struct ovr_wire_pkt *p,
			uint32_t msg_len)
{
	bool w = uc_is_write(p->opcode);

	return qp->uc.in_msg && qp->uc.op == p->opcode &&
	       qp->uc.len == msg_len && qp->uc.msn == uc_msn_of(p) &&
	       qp->uc.rkey == (w ? p->u.write.rkey : 0) &&
	       qp->uc.va == (w ? p->u.write.va : 0);
}

/* Does @p (not a message's first packet) continue the message in
 * progress, right where it stands? */
static bool uc_continues(const struct eng_qp *qp, const struct ovr_wire_pkt *p,
			 uint32_t mo, uint32_t msg_len)
{
	return uc_same_msg(qp, p, msg_len) && qp->uc.got == mo;
}

/* A SEND segment into the receive at the head. False: the message (or
 * the QP) is given up. */
static bool uc_send(struct ovr_eng *e, struct eng_qp *qp,
		    const struct ovr_wire_pkt *p, bool first)
{
	struct eng_rwqe *r = uc_recv(e, qp);

	if (!r) {
		e->st.uc_norecv++;
		return false;
	}
	if (r->bad) {
		uc_recv_fail(e, qp, r->bad);
		return false;
	}
	if (first && p->u.send.msg_len > r->cap) {
		e->st.uc_len++;
		return false;
	}
	if (!eng_sge_copy(e, qp, -1, eng_rwqe_sge(qp, qp->rq_cons), r->nsge,
			  p->u.send.mo, (uint8_t *)(uintptr_t)p->payload,
			  p->payload_len, true, p->u.send.msg_len)) {
		uc_recv_fail(e, qp, eng_copy_status(e));
		return false;
	}
	if (!(p->flags & OVR_F_LAST))
		return true;
	r->msg_len = p->u.send.msg_len;
	r->wc_opcode = OVR_WC_RECV;
	r->wc_flags = 0;
	r->imm = 0;
	if (p->opcode == OVR_OP_SEND_IMM) {
		r->imm = p->u.send.imm;
		r->wc_flags = OVR_WC_WITH_IMM;
	}
	if (p->flags & OVR_F_SE)
		r->wc_flags |= OVR_WC_SOLICITED;
	r->last_psn = p->psn;
	eng_complete_recv(e, qp, qp->rq_cons, OVR_WC_SUCCESS, 0);
	qp->rq_cons++;
	qp->rq_msn++;
	return true;
}

/* A WRITE segment at its target; the last one of a WRITE with immediate
 * also consumes a receive. False: the message (or the QP) is given up. */
static bool uc_write(struct ovr_eng *e, struct eng_qp *qp,
		     const struct ovr_wire_pkt *p)
{
	struct ovr_mr_loc loc;
	struct eng_rwqe *r;

	/* the first packet checks the whole target, as IB's responder
	 * checks the RETH's DMA length: nothing of a WRITE that does not
	 * fit is placed */
	if (!p->u.write.mo && p->u.write.msg_len &&
	    (!(qp->access & OVR_ACCESS_REMOTE_WRITE) ||
	     ovr_mr_check_rkey(e->mrs, p->u.write.rkey, qp->pd, qp->qpn,
			       p->u.write.va, p->u.write.msg_len,
			       OVR_ACCESS_REMOTE_WRITE, &loc))) {
		e->st.uc_access++;
		return false;
	}
	if (p->payload_len) {
		/* a region's rkey or a memory window's (a type-2 one only
		 * when bound through this QP) */
		if (!(qp->access & OVR_ACCESS_REMOTE_WRITE) ||
		    ovr_mr_check_rkey(e->mrs, p->u.write.rkey, qp->pd, qp->qpn,
				      p->u.write.va + p->u.write.mo,
				      p->payload_len, OVR_ACCESS_REMOTE_WRITE,
				      &loc)) {
			e->st.uc_access++;
			return false;
		}
		if (loc.dev) {
			if (!eng_dev_copy(e, qp, -1, loc.dev, loc.dev_off,
					  (uint8_t *)(uintptr_t)p->payload,
					  p->payload_len, true,
					  p->u.write.msg_len)) {
				/* nothing mapped there (-EFAULT): a remote
				 * access error, silent on UC */
				if (e->dev_fault) {
					e->st.uc_access++;
					return false;
				}
				/* an operational failure, or the memory's
				 * owner gone: a local error */
				qp->uc.in_msg = false;
				eng_qp_error(e, qp, qp->sq_prod,
					     OVR_WC_WR_FLUSH_ERR, 0);
				eng_qp_event(e, qp, OVR_EV_QP_FATAL);
				return false;
			}
		} else {
			memcpy(loc.host, p->payload, p->payload_len);
			e->st.host_copy_bytes += p->payload_len;
		}
	}
	if (p->opcode != OVR_OP_WRITE_IMM || !(p->flags & OVR_F_LAST))
		return true;
	r = uc_recv(e, qp);
	if (!r) {
		e->st.uc_norecv++;
		return false;
	}
	if (r->bad) {
		uc_recv_fail(e, qp, r->bad);
		return false;
	}
	r->msg_len = p->u.write.msg_len;
	r->imm = p->u.write.imm;
	r->wc_opcode = OVR_WC_RECV_RDMA_WITH_IMM;
	r->wc_flags = OVR_WC_WITH_IMM;
	if (p->flags & OVR_F_SE)
		r->wc_flags |= OVR_WC_SOLICITED;
	r->last_psn = p->psn;
	eng_complete_recv(e, qp, qp->rq_cons, OVR_WC_SUCCESS, 0);
	qp->rq_cons++;
	qp->rq_msn++;
	return true;
}

/* The next PSN expected: the receive window's ack_psn (what query's
 * rq_psn and the stats read), without its bitmap. */
static void uc_expect(struct eng_qp *qp, uint32_t psn)
{
	qp->rx.ack_psn = qp->rx.hi_psn = psn & M24;
}

/* The rest of a dropped message: nothing of it is placed. */
static void uc_skip(struct ovr_eng *e, struct eng_qp *qp,
		    const struct ovr_wire_pkt *p)
{
	e->st.uc_pkts_dropped++;
	if (p->flags & OVR_F_LAST)
		qp->uc.in_msg = qp->uc.drop = false;
}

/* A packet for UC QP @qp (RTR or later, not ERROR, from its peer). */
void eng_uc_rx(struct ovr_eng *e, struct eng_qp *qp,
	       const struct ovr_wire_pkt *p, uint64_t now, bool ce)
{
	uint32_t mo, msg_len;
	bool first, gap, ok;
	int32_t d;

	(void)now;
	if (!qp->comm_est && qp->state == OVR_QPS_RTR) {
		qp->comm_est = true;
		eng_qp_event(e, qp, OVR_EV_COMM_EST);
	}
	switch (p->opcode) {
	case OVR_OP_SEND:
	case OVR_OP_SEND_IMM:
		mo = p->u.send.mo;
		msg_len = p->u.send.msg_len;
		break;
	case OVR_OP_WRITE:
	case OVR_OP_WRITE_IMM:
		mo = p->u.write.mo;
		msg_len = p->u.write.msg_len;
		break;
	default:
		/* READ, atomics, responses, SEND_INV, ACK, NAK, CNP: not
		 * UC's. Nothing is answered, and the PSN space is left as
		 * it is (such a packet cannot be from a UC peer) */
		e->st.uc_bad++;
		return;
	}
	d = ovr_wire_psn_diff(p->psn, qp->rx.ack_psn);
	if (d < 0 && d >= -(int32_t)e->cfg.window_pkts) {
		/* a late copy (the overlay duplicates and reorders) */
		e->st.uc_stale++;
		qp->st.rx_dup++;
		return;
	}
	gap = d != 0;
	if (gap) {
		e->st.uc_gap++;
		qp->st.rx_ooo++;
	}
	qp->st.rx_pkts++;
	qp->st.rx_bytes += p->payload_len;
	if (ce)
		qp->ce_count++;
	first = mo == 0;
	if (gap && !first) {
		/* part of this message, or of the one before, was lost: the
		 * message is dropped, and the expected PSN stays (a forged
		 * continuation cannot move it; only a first packet does) */
		if (!uc_same_msg(qp, p, msg_len)) {
			/* the end of one message and the start of this one
			 * were lost: both are dropped */
			if (qp->uc.in_msg && !qp->uc.drop)
				uc_drop_msg(e, qp);
			qp->uc.in_msg = false;
			uc_drop_msg(e, qp);
			uc_track(qp, p, msg_len);
		} else if (!qp->uc.drop) {
			uc_drop_msg(e, qp);
		}
		e->st.uc_pkts_dropped++;
		return;
	}
	uc_expect(qp, PSN_ADD(p->psn, 1));
	if (first) {
		if (qp->uc.in_msg && !qp->uc.drop) {
			/* the message before never ended: lost packets, or
			 * (no PSN missing) a sender that broke it off */
			if (!gap)
				e->st.uc_bad++;
			uc_drop_msg(e, qp);
		}
		qp->uc.in_msg = true;
		qp->uc.drop = false;
		uc_track(qp, p, msg_len);
	} else if (!qp->uc.in_msg) {
		/* in sequence, yet a continuation of nothing */
		e->st.uc_bad++;
		uc_drop_msg(e, qp);
		uc_skip(e, qp, p);
		return;
	} else if (qp->uc.drop) {
		uc_skip(e, qp, p);
		return;
	} else if (!uc_continues(qp, p, mo, msg_len)) {
		e->st.uc_bad++;
		uc_drop_msg(e, qp);
		uc_skip(e, qp, p);
		return;
	}
	if (p->opcode == OVR_OP_SEND || p->opcode == OVR_OP_SEND_IMM)
		ok = uc_send(e, qp, p, first);
	else
		ok = uc_write(e, qp, p);
	if (qp->state == OVR_QPS_ERR)
		return;
	if (!ok) {
		uc_drop_msg(e, qp);
		uc_skip(e, qp, p);
		return;
	}
	qp->uc.got += p->payload_len;
	if (p->flags & OVR_F_LAST)
		qp->uc.in_msg = false;
}
