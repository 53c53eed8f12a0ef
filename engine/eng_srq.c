// SPDX-License-Identifier: MIT
/*
 * Shared receive queues (the engine's rxe_srq.c): create, resize,
 * query, destroy, posting, and QPs taking their receives (eng_srq_take).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/compiler.h>
#include <ovrdma/util.h>

#include "engine_impl.h"

void eng_srq_free(struct eng_srq *q)
{
	free(q->wqe);
	free(q->sge);
	free(q->fifo);
	free(q->free_slot);
	q->wqe = NULL;
	q->sge = NULL;
	q->fifo = NULL;
	q->free_slot = NULL;
}

struct eng_srq *eng_srq_get(struct ovr_eng *e, uint32_t srqn)
{
	struct eng_srq *q;

	if (!e->srqs || !srqn)
		return NULL;
	q = &e->srqs[srqn & ((1u << e->srq_bits) - 1)];
	return q->in_use && q->srqn == (srqn & M24) ? q : NULL;
}

/* (Re)size @q to @cap slots (a power of two, not below the current),
 * keeping its receives where they are. */
static int srq_resize(struct eng_srq *q, uint32_t cap)
{
	struct eng_rwqe *wqe = calloc(cap, sizeof(*wqe));
	struct eng_lsge *sge = calloc((size_t)cap * q->max_sge, sizeof(*sge));
	uint32_t *fifo = calloc(cap, sizeof(*fifo));
	uint32_t *fr = calloc(cap, sizeof(*fr));
	uint32_t i, n = 0;

	if (!wqe || !sge || !fifo || !fr) {
		free(wqe);
		free(sge);
		free(fifo);
		free(fr);
		return -ENOMEM;
	}
	if (q->cap) {
		/* slots keep their numbers: QPs name them in bind rings */
		memcpy(wqe, q->wqe, q->cap * sizeof(*wqe));
		memcpy(sge, q->sge, (size_t)q->cap * q->max_sge * sizeof(*sge));
		for (i = q->head; i != q->tail; i++)
			fifo[n++] = q->fifo[i & (q->cap - 1)];
		memcpy(fr, q->free_slot, q->nfree * sizeof(*fr));
	}
	/* new slots are free, lowest numbers on top */
	for (i = cap; i-- > q->cap;)
		fr[q->nfree++] = i;
	eng_srq_free(q);
	q->wqe = wqe;
	q->sge = sge;
	q->fifo = fifo;
	q->free_slot = fr;
	q->head = 0;
	q->tail = n;
	q->cap = cap;
	return 0;
}

int ovr_eng_srq_create(struct ovr_eng *e, const struct ovr_eng_srq_init *init,
		       uint32_t *srqn)
{
	uint32_t n = 1u << e->srq_bits, i, gen_bits = 24 - e->srq_bits;
	struct eng_srq *q = NULL;
	int rc;

	if (!init || !srqn || !e->srqs || !init->attr.max_wr ||
	    init->attr.max_wr > OVR_ENG_MAX_WR || !init->attr.max_sge ||
	    init->attr.max_sge > OVR_ENG_MAX_SGE)
		return -EINVAL;
	for (i = 0; i < n && i < e->cfg.max_srq; i++)
		if (!e->srqs[i].in_use) {
			q = &e->srqs[i];
			break;
		}
	if (!q)
		return -ENOSPC;
	memset(q, 0, sizeof(*q));
	q->max_sge = init->attr.max_sge;
	rc = srq_resize(q, (uint32_t)ovr_pow2_at_least(init->attr.max_wr));
	if (rc)
		return rc;
	/* like QPNs: generation | slot, never 0 */
	e->srq_gen = (e->srq_gen + 1) & ((1u << gen_bits) - 1);
	if (!e->srq_gen)
		e->srq_gen = 1;
	q->srqn = (e->srq_gen << e->srq_bits) | i;
	q->pd = init->pd;
	q->user = init->user;
	q->in_use = true;
	*srqn = q->srqn;
	return 0;
}

int ovr_eng_srq_modify(struct ovr_eng *e, uint32_t srqn,
		       const struct ovr_eng_srq_attr *attr, unsigned int mask)
{
	struct eng_srq *q = eng_srq_get(e, srqn);
	uint32_t cap;
	int rc;

	if (!q || !attr || (mask & ~(OVR_SRQ_MAX_WR | OVR_SRQ_LIMIT)))
		return -EINVAL;
	cap = q->cap;
	if (mask & OVR_SRQ_MAX_WR) {
		if (attr->max_wr < q->cap || attr->max_wr > OVR_ENG_MAX_WR)
			return -EINVAL;
		cap = (uint32_t)ovr_pow2_at_least(attr->max_wr);
	}
	if ((mask & OVR_SRQ_LIMIT) && attr->srq_limit > cap)
		return -EINVAL;
	if (cap != q->cap) {
		rc = srq_resize(q, cap);
		if (rc)
			return rc;
	}
	if (mask & OVR_SRQ_LIMIT)
		q->limit = attr->srq_limit;
	return 0;
}

int ovr_eng_srq_query(struct ovr_eng *e, uint32_t srqn,
		      struct ovr_eng_srq_attr *attr)
{
	struct eng_srq *q = eng_srq_get(e, srqn);

	if (!q || !attr)
		return -EINVAL;
	attr->max_wr = q->cap;
	attr->max_sge = q->max_sge;
	attr->srq_limit = q->limit;
	return 0;
}

void eng_srq_put_refs(struct ovr_eng *e, struct eng_srq *q)
{
	for (uint32_t i = q->head; i != q->tail; i++) {
		uint32_t slot = q->fifo[i & (q->cap - 1)];

		eng_put_refs(e, eng_srq_sge(q, slot), &q->wqe[slot].nsge);
	}
}

int ovr_eng_srq_destroy(struct ovr_eng *e, uint32_t srqn)
{
	struct eng_srq *q = eng_srq_get(e, srqn);

	if (!q)
		return -EINVAL;
	if (q->nqp)
		return -EBUSY;
	eng_srq_put_refs(e, q);
	eng_srq_free(q);
	q->in_use = false;
	q->srqn = 0;
	return 0;
}

int ovr_eng_post_srq_recv(struct ovr_eng *e, uint32_t srqn,
			  const struct ovr_eng_recv_wr *wr, uint64_t now_ns)
{
	struct eng_srq *q = eng_srq_get(e, srqn);
	uint64_t total = 0;
	uint32_t slot, i;

	(void)now_ns;
	if (!q || !wr || wr->num_sge > q->max_sge ||
	    (wr->num_sge && !wr->sg_list))
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > OVR_WIRE_MAX_MSG)
		return EINVAL;
	if (!q->nfree)
		return ENOMEM;
	slot = q->free_slot[--q->nfree];
	eng_rwqe_fill(e, q->pd, &q->wqe[slot], eng_srq_sge(q, slot), wr,
		      (uint32_t)total);
	q->fifo[q->tail++ & (q->cap - 1)] = slot;
	return 0;
}

/* eng_rwqe_revoke for the receives waiting in SRQs, which no QP has
 * taken yet: the references dropped (with @count, counted). */
uint32_t eng_srq_revoke(struct ovr_eng *e, uint32_t key, bool count)
{
	uint32_t n = 0;

	for (uint32_t k = 0; e->srqs && k < (1u << e->srq_bits); k++) {
		struct eng_srq *q = &e->srqs[k];

		if (!q->in_use)
			continue;
		for (uint32_t i = q->head; i != q->tail; i++) {
			uint32_t slot = q->fifo[i & (q->cap - 1)];

			n += eng_rwqe_revoke(e, &q->wqe[slot],
					     eng_srq_sge(q, slot), key, count);
		}
	}
	return n;
}

/* @qp takes the oldest posted receive of its SRQ as entry rq_prod;
 * false when none is posted (or its ring is full: RNR either way). */
bool eng_srq_take(struct ovr_eng *e, struct eng_qp *qp)
{
	struct eng_srq *q = qp->srq;

	if (q->head == q->tail || qp->rq_prod - qp->rq_cons > qp->rq_mask)
		return false;
	qp->bind[qp->rq_prod++ & qp->rq_mask] =
		q->fifo[q->head++ & (q->cap - 1)];
	if (q->limit && q->tail - q->head < q->limit) {
		q->limit = 0; /* fires once, then disarmed */
		if (e->ops.srq_event)
			e->ops.srq_event(e->ctx, q->user, q->srqn,
					 OVR_EV_SRQ_LIMIT_REACHED);
	}
	return true;
}
