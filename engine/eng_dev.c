// SPDX-License-Identifier: MIT
/*
 * Device-memory copies and what waits for them: the batches of copies
 * queued through ops.dev_copy, the PDUs and completions held until
 * their batch and every one before it are done, and the QPs whose
 * batch failed (ovr_eng_dev_*, ovr_eng_fence).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/compiler.h>
#include <ovrdma/util.h>

#include "engine_impl.h"

/*
 * The pipelined copy engine (docs/GPU.md §1.1). Copies queued through
 * ops.dev_copy go into the open batch; ovr_eng_dev_close closes it
 * (ops.dev_batch_close: the service records an event per stream) and
 * it joins the ring of batches in flight, at most cfg.dev_batches.
 * Everything the engine produces while the open batch has copies or a
 * batch is in flight (dev_busy) is held in the open batch, so that the
 * order of PDUs and completions is the order they were produced in:
 * a batch's held items leave when it and every batch before it are
 * done (ovr_eng_dev_poll, in closing order), never earlier. Items held
 * in an open batch without copies wait only for the batches before
 * them: ovr_eng_dev_close appends them to the newest closed batch, and
 * they leave at once when nothing is in flight any more.
 *
 * A batch that fails marks its QPs dev_fail: their items (in it, and
 * in later batches once the failure is acted on) are dropped or turned
 * into errors. The QPs go to ERROR only in ovr_eng_dev_poll and
 * ovr_eng_fence, outside any other engine call; the blocking waits
 * inside one (ring full, hold full, destroy) only mark them.
 */

/* The batches of device copies (only with ops.dev_fence); NULL and
 * errno on failure. */
struct eng_batch *eng_bat_alloc(uint32_t n)
{
	struct eng_batch *bat = calloc(n, sizeof(*bat));

	if (!bat)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		bat[i].qp = calloc(ENG_BATCH_QPS, sizeof(*bat[i].qp));
		bat[i].htx = calloc(ENG_HOLD, sizeof(*bat[i].htx));
		bat[i].hcqe = calloc(ENG_HOLD, sizeof(*bat[i].hcqe));
		bat[i].cp = calloc(OVR_ENG_BATCH_COPIES, sizeof(*bat[i].cp));
		if (!bat[i].qp || !bat[i].htx || !bat[i].hcqe || !bat[i].cp) {
			for (uint32_t k = 0; k <= i; k++) {
				free(bat[k].qp);
				free(bat[k].htx);
				free(bat[k].hcqe);
				free(bat[k].cp);
			}
			free(bat);
			errno = ENOMEM;
			return NULL;
		}
	}
	return bat;
}

static inline struct eng_batch *bat_open(struct ovr_eng *e)
{
	return &e->bat[e->bat_tail % e->nbat];
}

static void bat_close(struct ovr_eng *e);

/* Counts a copy op's answer @rc for @len bytes: false when it failed
 * (-EFAULT, no memory there, sets e->dev_fault; -ESRCH, the memory's
 * owner gone, e->dev_gone; other -errno: the copy itself failed). */
static inline bool copy_counted(struct ovr_eng *e, int rc, uint32_t len)
{
	e->dev_fault = rc == -EFAULT;
	e->dev_gone = rc == -ESRCH;
	if (rc < 0) {
		if (e->dev_fault)
			e->st.dev_copy_fault++;
		else
			e->st.dev_copy_err++;
		return false;
	}
	e->st.dev_copies++;
	e->st.dev_copy_bytes += len;
	return true;
}

/*
 * A copy to or from device memory through ops.dev_copy for @qp; @rpsn:
 * the PSN of the request this side serves as responder, -1 for its own
 * work; @msg_len: the length of the message the copy is part of (the
 * service copies small messages its own way, docs/GPU.md §1.2). False:
 * failed (counted; the caller puts the QP in ERROR). A queued copy lists
 * the QP in the open batch.
 */
bool eng_dev_copy(struct ovr_eng *e, struct eng_qp *qp, int64_t rpsn, void *dev,
		  uint64_t off, void *buf, uint32_t len, bool to_dev,
		  uint32_t msg_len)
{
	struct eng_dev_qp *d;
	struct eng_batch *b;
	unsigned int flags;
	bool late;
	int rc;

	if (!len)
		return true; /* nothing to move (an empty piece of a message) */
	/* a batch lists ENG_BATCH_QPS and OVR_ENG_BATCH_COPIES: a QP or a
	 * copy more, and the next one starts */
	if (e->bat && ((!qp->dev_listed && bat_open(e)->nqp == ENG_BATCH_QPS) ||
		       bat_open(e)->queued == OVR_ENG_BATCH_COPIES))
		bat_close(e);
	/* a responder's placement of a request's bytes may fail late: the
	 * QP fails from that request on (bat_faults) */
	late = rpsn >= 0 && to_dev && qp->type == OVR_QPT_RC && e->bat &&
	       e->ops.dev_batch_faults;
	flags = late ? OVR_ENG_COPY_LATE : 0;
	if (rpsn < 0 && !to_dev)
		flags |= OVR_ENG_COPY_SRC |
			 (e->dev_first ? OVR_ENG_COPY_FIRST : 0) |
			 (e->dev_fenced ? OVR_ENG_COPY_FENCED : 0);
	e->dev_first = false;
	rc = e->ops.dev_copy(e->ctx, dev, off, buf, len, to_dev, msg_len,
			     flags);
	if (!copy_counted(e, rc, len))
		return false;
	if (rc > 0 && e->bat) {
		b = bat_open(e);
		e->st.dev_async++;
		e->dev_busy = true;
		if (!qp->dev_listed) {
			qp->dev_listed = true;
			qp->dev_idx = b->nqp;
			b->qp[b->nqp++] = (struct eng_dev_qp){ .qpn = qp->qpn };
		}
		/* what a late failure of this copy is (bat_faults) */
		b->cp[b->queued++] = (struct eng_dev_cp){
			.qidx = qp->dev_idx,
			.psn = late ? (uint32_t)rpsn : 0,
			.nak = e->dev_nak ? e->dev_nak : OVR_NAK_REM_ACCESS,
			.ridx = e->dev_ridx,
			.htx = b->nhtx,
		};
		d = &b->qp[qp->dev_idx];
		if (rpsn >= 0 && (!d->resp || PSN_LT((uint32_t)rpsn, d->psn))) {
			d->resp = true;
			d->psn = (uint32_t)rpsn;
		}
	}
	return true;
}

/*
 * A copy that must be done when it returns (an atomic's read-modify-
 * write on a region of host memory behind the copy op): 0, or the
 * op's -errno (-EFAULT: no memory there; e->dev_fault says so too). A
 * copy the op queued anyway is waited for.
 */
int eng_dev_copy_sync(struct ovr_eng *e, void *dev, uint64_t off, void *buf,
		      uint32_t len, bool to_dev)
{
	int rc = e->ops.dev_copy(e->ctx, dev, off, buf, len, to_dev, len, 0);

	if (rc > 0)
		rc = e->ops.dev_fence ? e->ops.dev_fence(e->ctx) : 0;
	return copy_counted(e, rc, len) ? 0 : rc;
}

/* Batch @b's entry for QP @qpn when the QP fails from a copy of it that
 * failed on its own (bat_mark_fault). */
static const struct eng_dev_qp *bat_fault_of(const struct eng_batch *b,
					     uint32_t qpn)
{
	for (uint32_t i = 0; i < b->nqp; i++)
		if (b->qp[i].qpn == qpn)
			return b->qp[i].marked ? &b->qp[i] : NULL;
	return NULL;
}

/* QP @qp fails from where batch entry @d says (bat_faults). */
static void bat_mark_fault(struct ovr_eng *e, struct eng_qp *qp,
			   struct eng_dev_qp *d)
{
	d->marked = true;
	qp->dev_fail = qp->dev_faulted = true;
	qp->dev_resp = true;
	qp->dev_psn = d->fpsn;
	qp->dev_nak = d->fnak;
	qp->dev_ridx = d->fridx;
	qp->dev_recv_bad = d->fnak == OVR_NAK_REM_OP ? OVR_WC_LOC_PROT_ERR : 0;
	e->dev_failq[e->ndev_fail++] = qp->qpn;
}

/*
 * Hand out what batch @b holds, in order; @rc: its copies' result (a
 * failure marks the QPs with copies in it first). A QP a copy of which
 * failed on its own fails as if the copy had failed when it was made:
 * its PDUs produced before that copy was queued leave, those after are
 * dropped; its completions as eng_cqe_fail says.
 */
static void bat_settle(struct ovr_eng *e, struct eng_batch *b, int rc)
{
	bool faults = false;

	for (uint32_t i = 0; !rc && i < b->nqp; i++) {
		struct eng_qp *qp;

		if (!b->qp[i].fault)
			continue;
		qp = eng_qp_get(e, b->qp[i].qpn);
		if (qp && !qp->dev_fail) { /* an earlier failure stands */
			bat_mark_fault(e, qp, &b->qp[i]);
			faults = true;
		}
	}
	if (rc) {
		e->st.dev_fence_err++;
		for (uint32_t i = 0; i < b->nqp; i++) {
			struct eng_qp *qp = eng_qp_get(e, b->qp[i].qpn);

			if (!qp || qp->dev_fail)
				continue; /* an earlier batch's failure stands */
			qp->dev_fail = true;
			qp->dev_faulted = false;
			qp->dev_resp = b->qp[i].resp;
			qp->dev_psn = b->qp[i].psn;
			e->dev_failq[e->ndev_fail++] = qp->qpn;
		}
	}
	for (uint32_t i = 0; i < b->nhtx; i++) {
		struct eng_held_tx *h = &b->htx[i];
		const struct eng_dev_qp *d = faults ? bat_fault_of(b, h->qpn) :
						      NULL;

		if (ovr_unlikely(d) && i < d->fhtx && h->len) {
			/* produced before the failed copy: it stands */
			e->ops.tx(e->ctx, h->tok,
				  h->seal ? (uint32_t)ovr_wire_seal(h->buf,
								    h->len) :
					    h->len,
				  h->peer, h->user);
			continue;
		}
		eng_tx_release(e, h);
	}
	for (uint32_t i = 0; i < b->nhcqe; i++)
		eng_cqe_out(e, &b->hcqe[i]);
	for (uint32_t i = 0; i < b->nqp; i++)
		b->qp[i].marked = false;
	b->queued = b->nqp = b->nhtx = b->nhcqe = 0;
	b->err = 0;
	b->fenced = false;
}

/*
 * Release the oldest batches in flight that are done, in order: as many
 * as are (@wait false), or the oldest @n, waiting for each (@wait).
 * When none is left in flight, the open batch's items go too if it has
 * no copies. Returns the number released.
 */
static uint32_t bat_release(struct ovr_eng *e, bool wait, uint32_t n)
{
	uint32_t k = 0;

	while (e->bat_head != e->bat_tail && k < n) {
		unsigned int slot = (unsigned int)(e->bat_head % e->nbat);
		struct eng_batch *b = &e->bat[slot];
		int rc = b->err;

		if (!b->fenced) {
			if (wait)
				e->st.dev_batch_waits++;
			rc = e->ops.dev_batch_poll(e->ctx, slot, wait);
			if (rc == -EAGAIN && !wait) {
				e->st.dev_batch_not_ready++;
				break;
			}
		}
		e->bat_head++;
		e->bat_done = b->seq;
		bat_settle(e, b, rc);
		k++;
	}
	if (e->bat_head == e->bat_tail && !bat_open(e)->queued) {
		bat_settle(e, bat_open(e), 0);
		e->dev_busy = false;
	}
	return k;
}

/*
 * The copies of @b, just closed, that failed on their own
 * (ops.dev_batch_faults): each QP fails from the lowest PSN among its
 * failed copies, NAKing what that copy's failure NAKs (-ESRCH: its
 * memory's owner is gone, ENG_NAK_GONE; another error REM_OP), and
 * loses what the batch holds of it from the first of them queued on.
 */
static void bat_faults(struct ovr_eng *e, struct eng_batch *b)
{
	uint32_t n = e->ops.dev_batch_faults(e->ctx, e->dev_faults,
					     OVR_ENG_BATCH_COPIES);

	if (n > OVR_ENG_BATCH_COPIES)
		n = OVR_ENG_BATCH_COPIES;
	for (uint32_t k = 0; k < n; k++) {
		const struct ovr_eng_copy_fault *f = &e->dev_faults[k];
		const struct eng_dev_cp *c;
		struct eng_dev_qp *d;
		uint8_t nak;

		if (f->ord >= b->queued)
			continue;
		c = &b->cp[f->ord];
		d = &b->qp[c->qidx];
		nak = f->err == -EFAULT ? c->nak :
		      f->err == -ESRCH	? ENG_NAK_GONE :
					  OVR_NAK_REM_OP;
		if (f->err == -EFAULT)
			e->st.dev_copy_fault++;
		else
			e->st.dev_copy_err++;
		if (!d->fault) {
			d->fault = true;
			d->fhtx = c->htx;
		} else if (c->htx < d->fhtx) {
			d->fhtx = c->htx;
		}
		if (d->fnak && d->fnak != ENG_NAK_GONE &&
		    !PSN_LT(c->psn, d->fpsn) && nak != ENG_NAK_GONE)
			continue;
		if (d->fnak == ENG_NAK_GONE)
			continue; /* the owner is gone: nothing else matters */
		d->fpsn = c->psn;
		d->fnak = nak;
		d->fridx = c->ridx;
	}
}

/* Close the open batch (it has copies): it joins those in flight, after
 * the oldest is waited for when cfg.dev_batches are. */
static void bat_close(struct ovr_eng *e)
{
	unsigned int slot;
	struct eng_batch *b;
	uint64_t n;

	if (e->bat_tail - e->bat_head == e->nbat - 1)
		bat_release(e, true, 1);
	slot = (unsigned int)(e->bat_tail % e->nbat);
	b = &e->bat[slot];
	b->seq = ++e->bat_seq;
	if (e->ops.dev_batch_close) {
		b->err = e->ops.dev_batch_close(e->ctx, slot);
		b->fenced = b->err != 0; /* failed: nothing to poll */
		if (!b->err && e->ops.dev_batch_faults)
			bat_faults(e, b);
	} else {
		b->err = e->ops.dev_fence(e->ctx);
		b->fenced = true;
		e->st.dev_fences++;
	}
	for (uint32_t i = 0; i < b->nqp; i++) {
		struct eng_qp *qp = eng_qp_get(e, b->qp[i].qpn);

		if (qp)
			qp->dev_listed = false;
	}
	e->bat_tail++;
	e->st.dev_batches++;
	n = e->bat_tail - e->bat_head;
	if (n > e->st.dev_batch_max_inflight)
		e->st.dev_batch_max_inflight = n;
}

/* Close what is queued and wait for everything. */
void eng_dev_settle(struct ovr_eng *e)
{
	if (!e->dev_busy)
		return;
	if (bat_open(e)->queued)
		bat_close(e);
	bat_release(e, true, UINT32_MAX);
}

/* The open batch holds all it can: close it when it has copies (the next
 * one holds on), else wait for everything. The batch to hold in, or NULL
 * when nothing is left to wait for. */
static struct eng_batch *bat_room(struct ovr_eng *e)
{
	if (bat_open(e)->queued)
		bat_close(e);
	else
		eng_dev_settle(e);
	return e->dev_busy ? bat_open(e) : NULL;
}

/* Hold a completion in the open batch while device copies are queued
 * (eng_emit_cqe); false when nothing is left to wait for: it goes now. */
bool eng_hold_cqe(struct ovr_eng *e, const struct eng_held_cqe *h)
{
	struct eng_batch *b = bat_open(e);

	if (b->nhcqe == ENG_HOLD)
		b = bat_room(e);
	if (!b)
		return false;
	b->hcqe[b->nhcqe++] = *h;
	e->st.dev_held++;
	return true;
}

/* The same for a PDU (eng_tx_out). */
bool eng_hold_tx(struct ovr_eng *e, const struct eng_held_tx *h)
{
	struct eng_batch *b = bat_open(e);

	if (b->nhtx == ENG_HOLD)
		b = bat_room(e);
	if (!b)
		return false;
	b->htx[b->nhtx++] = *h;
	e->st.dev_held++;
	return true;
}

/*
 * A copy @qp made as responder failed on its own (bat_faults): as the
 * same failure of a synchronous copy at PSN dev_psn would (eng_resp.c's
 * violation). The receive it filled, not completed yet, completes with
 * dev_recv_bad. If everything before dev_psn has arrived, the NAK (or,
 * the owner gone, the TERMINATE) goes now and acknowledges only that,
 * as it would have when the copy failed; else the NAK waits for the
 * hole to fill.
 */
static void dev_fail_late(struct ovr_eng *e, struct eng_qp *qp)
{
	bool now = !PSN_LT(qp->rx.ack_psn, qp->dev_psn);

	if (qp->dev_recv_bad &&
	    qp->dev_ridx - qp->rq_cons < qp->rq_prod - qp->rq_cons)
		eng_rwqe(qp, qp->dev_ridx)->bad = qp->dev_recv_bad;
	if (now)
		qp->rx.ack_psn = qp->dev_psn;
	if (now || qp->dev_nak == ENG_NAK_GONE) {
		eng_qp_fatal_nak(e, qp, qp->dev_nak, qp->dev_psn);
		return;
	}
	if (!qp->pend_code || PSN_LT(qp->dev_psn, qp->pend_psn)) {
		qp->pend_code = qp->dev_nak;
		qp->pend_psn = qp->dev_psn;
	}
}

/*
 * The QPs whose batch failed go to ERROR, as a failed synchronous copy
 * would put them; first, what later batches still hold for them is
 * dropped (PDUs) or turned into errors (completions), as the failed
 * batch's own items were. Outside any other engine call only.
 */
static void dev_fail_qps(struct ovr_eng *e)
{
	if (!e->ndev_fail)
		return;
	for (uint64_t i = e->bat_head; i <= e->bat_tail; i++) {
		struct eng_batch *b = &e->bat[i % e->nbat];

		for (uint32_t k = 0; k < b->nhtx; k++)
			if (b->htx[k].len && eng_dev_failed(e, b->htx[k].qpn))
				b->htx[k].len = 0;
		for (uint32_t k = 0; k < b->nhcqe; k++)
			eng_cqe_fail(e, &b->hcqe[k]);
	}
	while (e->ndev_fail) {
		struct eng_qp *qp = eng_qp_get(e, e->dev_failq[--e->ndev_fail]);

		if (!qp || !qp->dev_fail)
			continue;
		qp->dev_fail = false;
		if (!qp->dev_faulted)
			e->st.dev_copy_err++;
		if (qp->type == OVR_QPT_UD || qp->state == OVR_QPS_ERR ||
		    qp->state == OVR_QPS_RESET) {
			qp->dev_faulted = false;
			continue; /* a UD QP only lost those receives */
		}
		if (qp->dev_faulted) {
			qp->dev_faulted = false;
			dev_fail_late(e, qp);
			continue;
		}
		if (qp->dev_resp)
			eng_qp_fatal_nak(e, qp, OVR_NAK_REM_OP, qp->dev_psn);
		else
			eng_qp_error_local(e, qp, qp->sq_cons,
					   OVR_WC_LOC_QP_OP_ERR,
					   OVR_VERR_DEV_COPY);
	}
}

uint64_t ovr_eng_dev_close(struct ovr_eng *e)
{
	struct eng_batch *b, *p;

	if (!e->bat || !e->dev_busy)
		return e->bat_seq;
	b = bat_open(e);
	if (b->queued) {
		bat_close(e);
	} else if ((b->nhtx || b->nhcqe) && e->bat_head != e->bat_tail) {
		/* nothing to wait for but the batches before: go with the
		 * newest of them, if it has room */
		p = &e->bat[(e->bat_tail - 1) % e->nbat];
		if (p->nhtx + b->nhtx <= ENG_HOLD &&
		    p->nhcqe + b->nhcqe <= ENG_HOLD) {
			memcpy(p->htx + p->nhtx, b->htx,
			       b->nhtx * sizeof(*b->htx));
			memcpy(p->hcqe + p->nhcqe, b->hcqe,
			       b->nhcqe * sizeof(*b->hcqe));
			p->nhtx += b->nhtx;
			p->nhcqe += b->nhcqe;
			b->nhtx = b->nhcqe = 0;
		}
	}
	return e->bat_seq;
}

uint64_t ovr_eng_dev_poll(struct ovr_eng *e)
{
	if (!e->bat)
		return 0;
	if (e->bat_head != e->bat_tail)
		bat_release(e, false, UINT32_MAX);
	dev_fail_qps(e);
	return e->bat_done;
}

uint32_t ovr_eng_dev_inflight(const struct ovr_eng *e)
{
	return e->bat ? (uint32_t)(e->bat_tail - e->bat_head) : 0;
}

void ovr_eng_fence(struct ovr_eng *e)
{
	if (!e->bat)
		return;
	eng_dev_settle(e);
	dev_fail_qps(e);
}
