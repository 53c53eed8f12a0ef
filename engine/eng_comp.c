// SPDX-License-Identifier: MIT
/*
 * The completer (the engine's rxe_comp.c): what the peer's ACKs, SACKs
 * and NAKs say about the send PSN space - cumulative and selective
 * acknowledgement, RTT samples, loss detection (RACK, the tail-loss
 * probe, the RTO with its spurious-timeout check), RNR and error NAKs -
 * and the send completions that follow, in order (eng_sq_complete). Its
 * timers (eng_on_rto, eng_on_pto, eng_rsp_watch) run from the poll loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/compiler.h>
#include <ovrdma/util.h>

#include "engine_impl.h"

/* IB's 5-bit RNR NAK timer code, in nanoseconds (code 0 is the longest). */
static uint64_t rnr_ns(unsigned int code)
{
	static const uint32_t us[32] = {
		655360, 10,    20,    30,     40,     60,     80,     120,
		160,	240,   320,   480,    640,    960,    1280,   1920,
		2560,	3840,  5120,  7680,   10240,  15360,  20480,  30720,
		40960,	61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};

	return (uint64_t)us[code & 31] * 1000;
}

/* Local ACK timeout of ibv_modify_qp: 4.096 us * 2^timeout. */
static uint64_t ack_timeout_ns(unsigned int t)
{
	return t ? 4096ull << (t > 31 ? 31 : t) : 0;
}

static uint32_t wc_opcode_of(uint8_t wr_opcode)
{
	return eng_wr_map[wr_opcode].wc;
}

void eng_complete_send(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx,
		       uint32_t status, uint32_t verr, bool force)
{
	struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];

	if (force || status != OVR_WC_SUCCESS || qp->sig_all ||
	    (w->flags & OVR_SEND_SIGNALED)) {
		struct ovr_eng_wc wc = {
			.wr_id = w->wr_id,
			.status = status,
			.opcode = wc_opcode_of(w->opcode),
			.byte_len = w->len,
			.qp_num = qp->qpn,
			.src_qp = qp->dest_qpn,
			.vendor_err = verr,
		};

		eng_emit_cqe(e, qp->send_cq, &wc);
	}
	eng_swqe_put_refs(e, qp, idx);
}

/*
 * RACK's "most recently sent packet delivered", from a packet that the
 * ACK with timestamp echo @tsecr (0: none) newly acknowledges. For a
 * packet sent more than once the ACK may be for an earlier copy: then it
 * says nothing about the resend and must not move RACK's clock to the
 * resend's time (the later RTT would be short by the time between the
 * copies, and every packet in flight longer than that would be taken
 * for lost: with RTTs that vary by milliseconds, a cascade of spurious
 * resends). The echo is the send time of the newest packet the peer had
 * received: older than the resend means the ACK is for an earlier copy
 * (RFC 8985 §6.2 step 2, with timestamps as Linux uses them). Without
 * an echo, an ACK sooner than min_rtt after the resend is taken for the
 * original's, as RFC 8985 says.
 */
static void rack_update(struct eng_qp *qp, const struct eng_pkt *k,
			uint64_t now, uint32_t tsecr)
{
	if (k->nretx && (tsecr ? (int32_t)(tsecr - eng_ts_of(k->xmit_ns)) < 0 :
				 now - k->xmit_ns < qp->rtt.min_rtt_ns))
		return;
	if (k->xmit_ns >= qp->rack_xmit_ns) {
		qp->rack_xmit_ns = k->xmit_ns;
		qp->rack_rtt_ns = now - k->xmit_ns;
	}
}

/* RACK (RFC 8985 §6.2): a packet sent before the most recently delivered
 * one, by more than the reordering window, is lost. */
uint32_t eng_rack_detect(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	uint64_t reo = qp->rtt.min_rtt_ns / 4, deadline = 0;
	uint32_t psn, lost = 0;

	qp->reo_at = 0;
	if (!qp->sb || !qp->nsacked)
		return 0;
	for (psn = qp->snd_una; psn != qp->sack_hi && psn != qp->snd_nxt;
	     psn = PSN_ADD(psn, 1)) {
		struct eng_pkt *k = eng_sb_pkt(e, qp, psn);
		uint64_t when;

		if (k->flags & (SB_SACKED | SB_LOST))
			continue;
		if (k->xmit_ns > qp->rack_xmit_ns)
			continue;
		when = k->xmit_ns + qp->rack_rtt_ns + reo;
		if (when <= now) {
			eng_mark_lost(qp, k);
			lost += PKT_COST(k->len);
			qp->st.rack_lost++;
			e->st.rack_lost++;
		} else if (!deadline || when < deadline) {
			deadline = when;
		}
	}
	qp->reo_at = deadline;
	if (lost)
		e->cc->on_loss(&qp->cc, now, lost);
	return lost;
}

/*
 * The first ACK that delivers something after an RTO tells whether the
 * timeout was spurious (the Eifel algorithm, RFC 3522): an echo older
 * than the RTO is the echo of a packet sent before it, so the flight
 * was not lost, only late (on a host whose scheduler stalls a peer for
 * longer than the RTO). eng_on_rto resent only the oldest packet; a
 * spurious timeout ends there (that packet, if not resent yet, goes
 * back in flight). A real one - the echo is the resend's, or there is
 * no echo - marks lost every packet sent before the timeout that is
 * still unacknowledged, as an RTO always did, one round trip later:
 * resending the whole flight at once would, on every spurious timeout,
 * send it twice. The congestion controller hears of the timeout here,
 * and only if it was real (RFC 4015: a spurious timeout says nothing
 * about the path's capacity).
 */
static void rto_verdict(struct ovr_eng *e, struct eng_qp *qp, uint32_t tsecr,
			uint64_t now)
{
	bool spurious = tsecr &&
			(int32_t)(tsecr - eng_ts_of(qp->rto_fired_ns)) < 0;
	uint32_t psn;

	for (psn = qp->snd_una; psn != qp->snd_nxt; psn = PSN_ADD(psn, 1)) {
		struct eng_pkt *k = eng_sb_pkt(e, qp, psn);

		if (spurious) {
			if ((k->flags & (SB_LOST | SB_RNR)) != SB_LOST)
				continue;
			k->flags &= (uint8_t)~SB_LOST;
			qp->nlost--;
			qp->pipe += PKT_COST(k->len);
		} else if (!(k->flags & (SB_SACKED | SB_LOST)) &&
			   k->xmit_ns < qp->rto_fired_ns) {
			eng_mark_lost(qp, k);
		}
	}
	if (spurious) {
		qp->st.rto_spurious++;
		e->st.rto_spurious++;
	} else {
		e->cc->on_timeout(&qp->cc, now);
	}
	qp->rto_fired_ns = 0;
	qp->rto_probe = false;
}

/* The packet at @psn is acknowledged cumulatively. */
static void pkt_acked(struct eng_qp *qp, struct eng_pkt *k, uint32_t psn)
{
	if ((k->flags & (SB_RESP | SB_LAST)) == (SB_RESP | SB_LAST)) {
		qp->rdq[k->idx].state = RD_FREE;
		while (qp->rd_free_msn != qp->rd_send_msn &&
		       qp->rdq[qp->rd_free_msn & (OVR_ENG_MAX_RD_ATOMIC - 1)]
				       .state == RD_FREE)
			qp->rd_free_msn++;
	}
	if (qp->rnr_tries && psn == qp->rnr_psn)
		qp->rnr_tries = 0;
	k->flags = 0;
}

/* The peer's end-to-end credit: the highest MSN it can receive. */
static void ack_credit(struct eng_qp *qp, const struct ovr_wire_pkt *p)
{
	if (!qp->credit_valid || (int32_t)(p->credit - qp->peer_credit) > 0)
		qp->peer_credit = p->credit;
	qp->credit_valid = true;
}

/* Everything before @ack is acknowledged: off the scoreboard; the
 * window cost newly delivered. */
static uint32_t ack_cumulative(struct ovr_eng *e, struct eng_qp *qp,
			       uint32_t ack, uint32_t tsecr, uint64_t now)
{
	uint32_t psn, delivered = 0;

	for (psn = qp->snd_una; psn != ack; psn = PSN_ADD(psn, 1)) {
		struct eng_pkt *k = eng_sb_pkt(e, qp, psn);

		if (k->flags & SB_SACKED) {
			qp->nsacked--;
			if (k->flags & SB_GONE)
				qp->ngone--; /* the peer had it after all */
		} else {
			delivered += PKT_COST(k->len);
			if (k->flags & SB_LOST)
				qp->nlost--;
			else
				qp->pipe -= PKT_COST(k->len);
			rack_update(qp, k, now, tsecr);
		}
		pkt_acked(qp, k, psn);
	}
	qp->snd_una = ack;
	return delivered;
}

/* The SACK blocks of an ACK: the window cost newly delivered. */
static uint32_t ack_sack(struct ovr_eng *e, struct eng_qp *qp,
			 const struct ovr_wire_pkt *p, uint32_t tsecr,
			 uint64_t now)
{
	uint32_t psn, delivered = 0;

	for (unsigned int b = 0; b < p->u.ack.nsack; b++) {
		uint32_t s = p->u.ack.sack[b].start;
		uint32_t t = p->u.ack.sack[b].end;

		if (PSN_LT(s, qp->snd_una))
			s = qp->snd_una;
		if (ovr_wire_psn_diff(t, qp->snd_nxt) > 0)
			t = qp->snd_nxt;
		if (!PSN_LT(s, t))
			continue;
		for (psn = s; psn != t; psn = PSN_ADD(psn, 1)) {
			struct eng_pkt *k = eng_sb_pkt(e, qp, psn);

			if (k->flags & SB_SACKED) {
				/* given up, yet it arrived */
				if (k->flags & SB_GONE) {
					k->flags &= (uint8_t)~SB_GONE;
					qp->ngone--;
				}
				continue;
			}
			k->flags |= SB_SACKED;
			qp->nsacked++;
			delivered += PKT_COST(k->len);
			if (k->flags & SB_LOST) {
				k->flags &= (uint8_t) ~(SB_LOST | SB_RNR);
				qp->nlost--;
			} else {
				qp->pipe -= PKT_COST(k->len);
			}
			rack_update(qp, k, now, tsecr);
		}
		if (!qp->nsacked || PSN_LT(qp->sack_hi, t) ||
		    PSN_LT(qp->sack_hi, qp->snd_una))
			qp->sack_hi = t;
	}
	if (qp->nsacked && PSN_LT(qp->sack_hi, qp->snd_una))
		qp->sack_hi = qp->snd_una;
	return delivered;
}

/*
 * An RTT sample from every packet - pure ACK or piggybacked on a
 * request, a response or a SEND - that acknowledges something new
 * (cumulatively or selectively). Its echo is the send time of the
 * newest packet the peer had received, echoed only by the first
 * packet with an ACK after it (eng_ts_echo), so within the peer's
 * delayed-ACK time: it sends a pure ACK by then if nothing else
 * goes first. Pure ACKs alone are not enough: a requester that
 * posts its next READ as soon as the last completes, or a responder
 * (its READ responses carry the ACK of the request), never sends
 * one, and its peer's estimator would stay empty or backed off
 * (TRANSPORT.md §4.1). An ACK that acknowledges nothing new (a
 * credit update, an answer to a duplicate) gives no sample. NAKs
 * are sampled in eng_on_nak. The congestion controller still hears the
 * samples of pure ACKs only, as it always has: a piggybacked one
 * includes the peer's turnaround (a READ's execution, the
 * application's reply), which a delay-based controller would read
 * as queueing.
 */
static void ack_rtt_sample(struct eng_qp *qp, const struct ovr_wire_pkt *p,
			   struct ovr_cc_ack *ca, uint64_t now)
{
	uint32_t rtt = eng_ts_of(now) - p->tsecr;

	if (rtt < 1000000000u) {
		ovr_dp_rtt_sample(&qp->rtt, rtt);
		if (p->opcode == OVR_OP_ACK)
			ca->rtt_ns = rtt;
	}
}

/* An ACK, or the ACK a packet of the peer's carries (a NAK's, on_nak). */
void eng_on_ack(struct ovr_eng *e, struct eng_qp *qp,
		const struct ovr_wire_pkt *p, uint64_t now)
{
	struct ovr_cc_ack ca = { .now_ns = now };
	uint32_t ack = p->ack_psn, delivered = 0;
	uint32_t tsecr = p->opcode == OVR_OP_NAK ? 0 : p->tsecr;
	bool progress = false;

	if (p->flags & OVR_F_CREDIT)
		ack_credit(qp, p);
	if (!qp->sb)
		goto done;
	if (ovr_wire_psn_diff(ack, qp->snd_una) > 0 &&
	    ovr_wire_psn_diff(ack, qp->snd_nxt) <= 0) {
		delivered += ack_cumulative(e, qp, ack, tsecr, now);
		progress = true;
	}
	if (p->opcode == OVR_OP_ACK) {
		delivered += ack_sack(e, qp, p, tsecr, now);
		if (ovr_wire_psn_diff(p->u.ack.ce_count, qp->peer_ce) != 0) {
			uint32_t marks = p->u.ack.ce_count - qp->peer_ce;

			qp->peer_ce = p->u.ack.ce_count;
			ca.ce_count = marks;
			e->cc->on_ecn(&qp->cc, now, marks);
		}
	}
	/* an RTT sample (ack_rtt_sample says which packets give one) */
	if (delivered && p->tsecr && p->opcode != OVR_OP_NAK)
		ack_rtt_sample(qp, p, &ca, now);
	if (delivered && qp->rto_fired_ns)
		rto_verdict(e, qp, tsecr, now);
	if (progress) {
		qp->retries = 0;
		qp->last_progress_ns = now;
		qp->tlp_out = false;
		qp->rto_at = qp->pto_at = 0;
	}
	if (delivered) {
		ca.acked_bytes = delivered;
		ca.inflight_bytes = qp->pipe;
		ca.min_rtt_ns = qp->rtt.min_rtt_ns;
		e->cc->on_ack(&qp->cc, &ca);
	}
	eng_rack_detect(e, qp, now);
	if (qp->snd_una == qp->snd_nxt) {
		eng_sb_release(e, qp);
	} else if (progress) {
		eng_arm_timers(qp, now, e->cfg.ack_delay_ns);
	}
done:
	eng_sq_complete(e, qp);
}

/* Find the SQ slot holding request PSN @psn, if it is in flight. */
static bool req_of_psn(struct ovr_eng *e, struct eng_qp *qp, uint32_t psn,
		       uint32_t *idx)
{
	struct eng_pkt *k;

	if (!qp->sb || PSN_LT(psn, qp->snd_una) || !PSN_LT(psn, qp->snd_nxt))
		return false;
	k = eng_sb_pkt(e, qp, psn);
	if (!(k->flags & SB_USED) || (k->flags & SB_RESP))
		return false;
	*idx = qp->sq_cons + ((k->idx - qp->sq_cons) & qp->sq_mask);
	return true;
}

/* The READ / atomic WR, sent and acknowledged but not complete, whose
 * request had PSN @psn. O(WRs outstanding): error paths only. */
bool eng_q1_of_psn(const struct eng_qp *qp, uint32_t psn, uint32_t *idx)
{
	for (uint32_t i = qp->sq_cons; i != qp->sq_next; i++) {
		const struct eng_swqe *w = &qp->sq[i & qp->sq_mask];

		if (eng_is_q1(w->opcode) && w->state == W_SENT &&
		    w->last_psn == psn) {
			*idx = i;
			return true;
		}
	}
	return false;
}

/* An RNR NAK for @psn: resent after the peer's RNR timer, or, the RNR
 * retry budget spent, the WR fails (once everything before it has). */
static void on_nak_rnr(struct ovr_eng *e, struct eng_qp *qp,
		       const struct ovr_wire_pkt *p, uint32_t psn, uint64_t now)
{
	struct eng_pkt *k;
	uint32_t idx;

	qp->st.rnr_naks_rcvd++;
	if (!qp->sb || PSN_LT(psn, qp->snd_una) || !PSN_LT(psn, qp->snd_nxt))
		return;
	k = eng_sb_pkt(e, qp, psn);
	if (k->flags & (SB_SACKED | SB_LOST))
		return;
	if (!qp->rnr_wait) {
		qp->rnr_tries++;
		qp->rnr_psn = psn;
		if (qp->rnr_retry != 7 && qp->rnr_tries > qp->rnr_retry) {
			if (req_of_psn(e, qp, psn, &idx)) {
				/* it fails once everything before it
				 * has completed; it is not resent */
				k->flags |= SB_SACKED;
				qp->nsacked++;
				qp->pipe -= PKT_COST(k->len);
				if (PSN_LT(qp->sack_hi, PSN_ADD(psn, 1)))
					qp->sack_hi = PSN_ADD(psn, 1);
				qp->fail_pending = true;
				qp->fail_idx = idx;
				qp->fail_status = OVR_WC_RNR_RETRY_EXC_ERR;
				qp->fail_verr = OVR_VERR_RNR;
				eng_sq_complete(e, qp);
			}
			return;
		}
		qp->rnr_wait = true;
		qp->rnr_until = now + rnr_ns(p->u.nak.rnr_timer);
	}
	eng_mark_lost(qp, k);
	k->flags |= SB_RNR;
}

/* A NAK that ends the QP (a remote access, operation or invalid request
 * error for @psn): the oldest WR outstanding completes with @st. */
static void on_nak_fatal(struct ovr_eng *e, struct eng_qp *qp,
			 const struct ovr_wire_pkt *p, uint32_t psn,
			 uint32_t st, uint64_t now)
{
	uint32_t idx;

	if (!req_of_psn(e, qp, psn, &idx)) {
		int32_t back = ovr_wire_psn_diff(qp->snd_una, psn);

		/*
		 * A request it had accepted (and we saw acknowledged): the
		 * responder could not answer it after all - its region was
		 * deregistered before the response went out
		 * (eng_tx_resp_seg), or before we asked again for a part we
		 * lack (resp_again_refused; a resend of a response we may
		 * have in full is dropped instead). It is in ERROR: the
		 * READs and atomics we still wait for will get no response.
		 * Only a recently acknowledged PSN counts (a stale or blind
		 * NAK does not end the QP).
		 */
		if (qp->state == OVR_QPS_ERR || !qp->rd_out || back <= 0 ||
		    back > (int32_t)e->cfg.window_pkts)
			return;
		eng_sq_complete(e, qp); /* what completed before it */
		if (qp->state != OVR_QPS_ERR && qp->sq_cons != qp->sq_prod)
			eng_qp_error(e, qp, qp->sq_cons, st, p->u.nak.code);
		return;
	}
	/* everything before the refused request was received */
	if (qp->sb) {
		struct ovr_wire_pkt ack = *p;

		ack.opcode = OVR_OP_NAK;
		ack.ack_psn = psn;
		eng_on_ack(e, qp, &ack, now);
	}
	if (qp->state == OVR_QPS_ERR)
		return;
	/*
	 * WRs before it that still wait (for READ / atomic responses the
	 * responder, now in ERROR, will not send) fail with it: the oldest
	 * outstanding WR takes the error, everything after it flushes, so
	 * the application sees verbs' order (no flushed WR before the
	 * error); vendor_err names the NAK.
	 */
	(void)idx;
	eng_qp_error(e, qp, qp->sq_cons, st, p->u.nak.code);
}

void eng_on_nak(struct ovr_eng *e, struct eng_qp *qp,
		const struct ovr_wire_pkt *p, uint64_t now)
{
	uint32_t psn = p->ack_psn, st;
	struct eng_pkt *k;

	/* the NAK's ack_psn names the refused packet; it acknowledges
	 * nothing else (the refused packet may lie beyond a hole) */
	if (p->tsecr) {
		uint32_t rtt = eng_ts_of(now) - p->tsecr;

		if (rtt < 1000000000u)
			ovr_dp_rtt_sample(&qp->rtt, rtt);
	}
	switch (p->u.nak.code) {
	case OVR_NAK_RNR:
		on_nak_rnr(e, qp, p, psn, now);
		return;
	case OVR_NAK_SEQ_ERR:
		/* the peer's window is smaller than ours: treat as lost */
		if (qp->sb && !PSN_LT(psn, qp->snd_una) &&
		    PSN_LT(psn, qp->snd_nxt)) {
			k = eng_sb_pkt(e, qp, psn);
			if (!(k->flags & (SB_SACKED | SB_LOST)))
				eng_mark_lost(qp, k);
		}
		return;
	case OVR_NAK_REM_ACCESS:
		st = OVR_WC_REM_ACCESS_ERR;
		break;
	case OVR_NAK_REM_OP:
		st = OVR_WC_REM_OP_ERR;
		break;
	default:
		st = OVR_WC_REM_INV_REQ_ERR;
		break;
	}
	on_nak_fatal(e, qp, p, psn, st, now);
}

void eng_sq_complete(struct ovr_eng *e, struct eng_qp *qp)
{
	/* (UD WRs complete as they are sent: ud_tx) */
	while (qp->type == OVR_QPT_RC && qp->sq_cons != qp->sq_prod &&
	       qp->state != OVR_QPS_ERR) {
		uint32_t idx = qp->sq_cons;
		struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];

		if (w->state == W_LOCERR) {
			eng_qp_error_local(e, qp, idx, w->status,
					   eng_locerr_verr(w));
			return;
		}
		if (qp->fail_pending && idx == qp->fail_idx) {
			eng_qp_error_local(e, qp, idx, qp->fail_status,
					   qp->fail_verr);
			return;
		}
		if (w->state != W_SENT)
			break;
		if (eng_is_q1(w->opcode)) {
			if (!w->resp_done ||
			    ovr_wire_psn_diff(qp->rx.ack_psn,
					      w->resp_last_psn) <= 0)
				break;
			qp->rd_out--;
		} else if (ovr_wire_psn_diff(qp->snd_una, w->last_psn) <= 0) {
			break;
		}
		eng_complete_send(e, qp, idx, OVR_WC_SUCCESS, 0, false);
		qp->sq_cons++;
	}
	if (qp->state == OVR_QPS_SQD && !qp->sqd_drained &&
	    qp->sq_cons == qp->sq_next) {
		qp->sqd_drained = true;
		if (qp->sqd_notify)
			eng_qp_event(e, qp, OVR_EV_SQ_DRAINED);
	}
}

void eng_on_rto(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	uint64_t to = ack_timeout_ns(qp->timeout);
	uint32_t psn;

	qp->rto_at = 0;
	/* nothing ours to resend: only READ responses given up are left
	 * (the peer may have them all and be silent), no retry counts */
	if (!qp->sb || qp->snd_una == qp->snd_nxt || eng_sb_only_gone(qp))
		return;
	qp->st.rto_count++;
	e->st.rto_count++;
	qp->retries++;
	if (to && qp->retries > qp->retry_cnt &&
	    now - qp->last_progress_ns >= (uint64_t)(qp->retry_cnt + 1) * to) {
		struct eng_pkt *k = eng_sb_pkt(e, qp, qp->snd_una);

		if (k->flags & SB_RESP) {
			/* our responses go unanswered: the peer is gone */
			eng_qp_error_local(e, qp, qp->sq_cons,
					   OVR_WC_WR_FLUSH_ERR, 0);
			eng_qp_event(e, qp, OVR_EV_QP_FATAL);
		} else {
			eng_qp_error_local(e, qp, qp->sq_cons,
					   OVR_WC_RETRY_EXC_ERR,
					   OVR_VERR_RETRY);
		}
		return;
	}
	/* resend the oldest packet; the rest waits for rto_verdict */
	for (psn = qp->snd_una; psn != qp->snd_nxt; psn = PSN_ADD(psn, 1)) {
		struct eng_pkt *k = eng_sb_pkt(e, qp, psn);

		if (!(k->flags & (SB_SACKED | SB_LOST))) {
			eng_mark_lost(qp, k);
			break;
		}
	}
	ovr_dp_rtt_backoff(&qp->rtt);
	/* the controller hears of a timeout once it is known not to be
	 * spurious (rto_verdict), or when the resend went unanswered too */
	if (!qp->rto_fired_ns)
		qp->rto_fired_ns = now;
	else
		e->cc->on_timeout(&qp->cc, now);
	qp->rto_probe = true;
	qp->tlp_out = false;
	qp->pto_at = 0;
	qp->rto_at = now + qp->rtt.rto_ns;
}

void eng_on_pto(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	uint32_t psn;

	qp->pto_at = 0;
	if (!qp->sb || qp->snd_una == qp->snd_nxt || qp->tlp_out ||
	    eng_sb_only_gone(qp))
		return;
	/* probe with the last packet that is neither sacked nor lost */
	for (psn = PSN_ADD(qp->snd_nxt, M24);; psn = PSN_ADD(psn, M24)) {
		struct eng_pkt *k = eng_sb_pkt(e, qp, psn);

		if (!(k->flags & (SB_SACKED | SB_LOST))) {
			eng_mark_lost(qp, k);
			break;
		}
		if (psn == qp->snd_una)
			break;
	}
	qp->st.tlp_count++;
	e->st.tlp_count++;
	qp->tlp_out = true;
	if (!qp->rto_at)
		qp->rto_at = now + qp->rtt.rto_ns;
}

/*
 * A requester waits for READ / atomic responses with none of its own
 * packets in flight: the peer acknowledged the requests, so no RTO runs,
 * and the responses are the responder's to make reliable. Its silence
 * must still end: IB's transport timer covers READ responses and resends
 * the request. Here the oldest waiting request is resent (a duplicate a
 * live responder answers with an ACK; one in ERROR repeats the NAK that
 * failed it, whose first copy may have been lost) every RTO, doubling,
 * and after retry_cnt + 1 local ACK timeouts without a response packet
 * the WR fails with RETRY_EXC_ERR, as an unacknowledged request would.
 * "Nothing in flight" includes READ responses of ours given up
 * (eng_sb_only_gone): they wait for the peer, not the peer for them.
 */
static bool rsp_waiting(const struct eng_qp *qp)
{
	return qp->type == OVR_QPT_RC &&
	       (qp->state == OVR_QPS_RTS || qp->state == OVR_QPS_SQD) &&
	       qp->rd_out &&
	       (qp->snd_una == qp->snd_nxt || eng_sb_only_gone(qp)) &&
	       !qp->fail_pending;
}

/*
 * WR @w is a READ / atomic sent whose response is not all in: its last
 * packet has not arrived, or (a READ) bytes before it are missing. The
 * responder may be unable to fill such a hole: it drops the resend of a
 * READ response whose region was deregistered (eng_resp_resend_gone),
 * and only a request asked again gets its error. A hole before the
 * response (another packet of the responder's) is not the WR's to ask
 * for: the responder resends that packet.
 */
static bool rsp_missing(const struct eng_swqe *w)
{
	return eng_is_q1(w->opcode) && w->state == W_SENT &&
	       (!w->resp_done ||
		(w->opcode == OVR_WR_RDMA_READ && w->resp_got < w->len));
}

void eng_rsp_watch(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	uint64_t to = ack_timeout_ns(qp->timeout), wait;
	uint32_t i, idx = 0;
	bool found = false;

	if (!rsp_waiting(qp)) {
		qp->rsp_at = 0;
		qp->rsp_probes = 0;
		return;
	}
	if (!qp->rsp_at) {
		if (!qp->rsp_probes)
			qp->rsp_since = now;
		qp->rsp_at = now + qp->rtt.rto_ns;
		return;
	}
	if (now < qp->rsp_at)
		return;
	for (i = qp->sq_cons; i != qp->sq_next && !found; i++) {
		if (rsp_missing(&qp->sq[i & qp->sq_mask])) {
			idx = i;
			found = true;
		}
	}
	if (!found) {
		/* every response is in; completion waits on ordering */
		qp->rsp_at = now + qp->rtt.rto_ns;
		return;
	}
	if (to && qp->rsp_probes > qp->retry_cnt &&
	    now - qp->rsp_since >= (uint64_t)(qp->retry_cnt + 1) * to) {
		eng_qp_error_local(e, qp, idx, OVR_WC_RETRY_EXC_ERR,
				   OVR_VERR_RETRY);
		return;
	}
	if (!eng_tx_req_seg(e, qp, idx, 0, 0,
			    qp->sq[idx & qp->sq_mask].last_psn, true, now)) {
		qp->rsp_at = now + qp->rtt.rto_ns; /* no buffer: later */
		return;
	}
	qp->rsp_probes++;
	qp->st.retx_pkts++;
	e->st.retx_pkts++;
	e->st.rsp_probes++;
	wait = qp->rtt.rto_ns << (qp->rsp_probes < 8 ? qp->rsp_probes : 8);
	if (wait > e->cfg.max_rto_ns)
		wait = e->cfg.max_rto_ns;
	qp->rsp_at = now + wait;
}
