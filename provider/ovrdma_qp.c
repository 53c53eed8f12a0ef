// SPDX-License-Identifier: MIT
/*
 * The ovrdma provider's queue pairs and shared receive queues
 * (docs/PROVIDER.md section 4): create, modify, query and destroy as
 * requests to ovrdmad through libovr_client, ibv_post_send,
 * ibv_post_recv and ibv_post_srq_recv onto the rings shared with it (no
 * system call while ovrdmad is awake). Declared in ovrdma_verbs.h.
 *
 * Threads: libovr_client keeps each QP's send side, receive side and
 * each SRQ safe for concurrent callers; nothing here adds shared state.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/compiler.h>

#include "ovrdma_verbs.h"

/* Work-request scatter lists are handed to the client as they are. */
_Static_assert(sizeof(struct ibv_sge) == sizeof(struct ovr_cl_sge) &&
		       offsetof(struct ibv_sge, addr) ==
			       offsetof(struct ovr_cl_sge, addr) &&
		       offsetof(struct ibv_sge, length) ==
			       offsetof(struct ovr_cl_sge, length) &&
		       offsetof(struct ibv_sge, lkey) ==
			       offsetof(struct ovr_cl_sge, lkey),
	       "ibv_sge and ovr_cl_sge differ");

/* ---- queue pairs --------------------------------------------------------- */

/*
 * Verbs' QP attributes and the control messages (include/ovrdma/ctl.h),
 * one converter each way: every path that sends QP capabilities or
 * attributes to ovrdmad goes through the _to_ctl ones, every answer
 * comes back through the _from_ctl ones. Values pass unchanged (states,
 * MTUs, masks and access flags are verbs' own, include/ovrdma/verbs.h).
 */
static void qp_cap_to_ctl(const struct ibv_qp_cap *cap,
			  struct ovr_ctl_qp_cap *c)
{
	*c = (struct ovr_ctl_qp_cap){
		.max_send_wr = cap->max_send_wr,
		.max_recv_wr = cap->max_recv_wr,
		.max_send_sge = cap->max_send_sge,
		.max_recv_sge = cap->max_recv_sge,
		.max_inline_data = cap->max_inline_data,
	};
}

static void qp_cap_from_ctl(const struct ovr_ctl_qp_cap *c,
			    struct ibv_qp_cap *cap)
{
	*cap = (struct ibv_qp_cap){
		.max_send_wr = c->max_send_wr,
		.max_recv_wr = c->max_recv_wr,
		.max_send_sge = c->max_send_sge,
		.max_recv_sge = c->max_recv_sge,
		.max_inline_data = c->max_inline_data,
	};
}

/* @attr as ibv_modify_qp(3) gives it: the scalars whatever @mask says
 * (ovrdmad reads those @mask names), the address vector (RoCE: its GRH,
 * as qp_attr_check() accepted it) only with IBV_QP_AV. Of
 * qp_access_flags only the rights count (the remote ones, and
 * LOCAL_WRITE, which ovrdmad keeps for ibv_query_qp): the kernel, mlx5
 * and rxe ignore any other ibv_access_flags bit there, and rdma-core's
 * tests pass a region's flags (ON_DEMAND, ...) as they are. */
static void qp_attr_to_ctl(const struct ibv_qp_attr *attr, int mask,
			   struct ovr_ctl_qp_attr *a)
{
	const struct ibv_ah_attr *ah = &attr->ah_attr;

	*a = (struct ovr_ctl_qp_attr){
		.qp_state = attr->qp_state,
		.cur_qp_state = attr->cur_qp_state,
		.path_mtu = attr->path_mtu,
		.qp_access_flags = (uint32_t)attr->qp_access_flags &
				   OVR_ACCESS_ALL,
		.dest_qp_num = attr->dest_qp_num,
		.rq_psn = attr->rq_psn,
		.sq_psn = attr->sq_psn,
		.qkey = attr->qkey,
		.pkey_index = attr->pkey_index,
		.port_num = attr->port_num,
		.timeout = attr->timeout,
		.retry_cnt = attr->retry_cnt,
		.rnr_retry = attr->rnr_retry,
		.min_rnr_timer = attr->min_rnr_timer,
		.max_rd_atomic = attr->max_rd_atomic,
		.max_dest_rd_atomic = attr->max_dest_rd_atomic,
	};
	if (!(mask & IBV_QP_AV))
		return;
	memcpy(a->dgid, ah->grh.dgid.raw, sizeof(a->dgid));
	a->flow_label = ah->grh.flow_label;
	a->sgid_index = ah->grh.sgid_index;
	a->hop_limit = ah->grh.hop_limit;
	a->traffic_class = ah->grh.traffic_class;
	a->is_global = ah->is_global != 0;
}

/* ovrdmad's answer to QUERY_QP as ibv_query_qp(3) gives it; the port is
 * always 1 and the path migrated. The capabilities are left 0: the
 * provider answers with what create granted (struct ovrdma_qp). */
static void qp_attr_from_ctl(const struct ovr_ctl_qp_attr *a,
			     struct ibv_qp_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)a->qp_state;
	attr->cur_qp_state = (enum ibv_qp_state)a->cur_qp_state;
	attr->path_mtu = (enum ibv_mtu)a->path_mtu;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	attr->qkey = a->qkey;
	attr->rq_psn = a->rq_psn;
	attr->sq_psn = a->sq_psn;
	attr->dest_qp_num = a->dest_qp_num;
	attr->qp_access_flags = (int)a->qp_access_flags;
	attr->ah_attr.is_global = a->is_global;
	memcpy(attr->ah_attr.grh.dgid.raw, a->dgid, sizeof(a->dgid));
	attr->ah_attr.grh.flow_label = a->flow_label;
	attr->ah_attr.grh.sgid_index = a->sgid_index;
	attr->ah_attr.grh.hop_limit = a->hop_limit;
	attr->ah_attr.grh.traffic_class = a->traffic_class;
	attr->ah_attr.port_num = 1;
	attr->pkey_index = a->pkey_index;
	attr->sq_draining = a->sq_draining;
	attr->max_rd_atomic = a->max_rd_atomic;
	attr->max_dest_rd_atomic = a->max_dest_rd_atomic;
	attr->min_rnr_timer = a->min_rnr_timer;
	attr->port_num = 1;
	attr->timeout = a->timeout;
	attr->retry_cnt = a->retry_cnt;
	attr->rnr_retry = a->rnr_retry;
}

struct ibv_qp *ovrdma_create_qp(struct ibv_pd *ibpd,
				struct ibv_qp_init_attr *attr)
{
	struct ovrdma_context *ctx = to_octx(ibpd->context);
	struct ovr_ctl_qp_cap cap;
	struct ovrdma_qp *qp;
	struct ibv_qp *q;

	/* RC, UC and UD; XRC and raw packet QPs are not supported */
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	    attr->qp_type != IBV_QPT_UD) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->send_cq || !attr->recv_cq ||
	    attr->send_cq->context != ibpd->context ||
	    attr->recv_cq->context != ibpd->context ||
	    (attr->srq &&
	     (attr->srq->context != ibpd->context || attr->srq->pd != ibpd))) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	q = &qp->vqp.qp;
	qp_cap_to_ctl(&attr->cap, &cap);
	/* the async-event record carries the ibv_qp, as the kernel's does */
	qp->qp = ovr_cl_create_qp_ex(
		ctx->cl, to_opd(ibpd)->handle, to_ocq(attr->send_cq)->cq,
		to_ocq(attr->recv_cq)->cq,
		attr->srq ? to_osrq(attr->srq)->srq : NULL,
		(uint32_t)attr->qp_type, &cap, /* = OVR_QPT_*, checked */
		attr->sq_sig_all != 0, (uint64_t)(uintptr_t)q);
	if (!qp->qp) {
		int e = errno;

		free(qp);
		errno = e;
		return NULL;
	}
	ovr_cl_qp_cap(qp->qp, &cap);
	qp_cap_from_ctl(&cap, &qp->cap);
	qp->sq_sig_all = attr->sq_sig_all != 0;
	attr->cap = qp->cap; /* ibv_create_qp(3): the values granted */
	q->context = ibpd->context;
	q->qp_context = attr->qp_context;
	q->pd = ibpd;
	q->send_cq = attr->send_cq;
	q->recv_cq = attr->recv_cq;
	q->srq = attr->srq;
	q->qp_num = ovr_cl_qp_num(qp->qp);
	q->state = IBV_QPS_RESET;
	q->qp_type = attr->qp_type;
	q->events_completed = 0;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	return q;
}

/* What ovrdma refuses before asking ovrdmad; 0 or a positive errno. */
static int qp_attr_check(const struct ibv_qp *ibqp,
			 const struct ibv_qp_attr *attr, int mask)
{
	/* IBV_QP_STATE .. IBV_QP_DEST_QPN; rate limits and the like not */
	if ((unsigned int)mask & ~OVR_QP_ATTR_ALL)
		return EOPNOTSUPP;
	if ((mask & IBV_QP_PORT) && attr->port_num != 1)
		return EINVAL;
	/* UD QPs have no address vector: each send names an AH */
	if ((mask & IBV_QP_AV) && ibqp->qp_type == IBV_QPT_UD)
		return EINVAL;
	if (mask & IBV_QP_AV) {
		const struct ibv_ah_attr *ah = &attr->ah_attr;

		/* RoCE: the peer is named by its GID, ::ffff:<vIP> */
		if (!ah->is_global || ah->grh.sgid_index != 0 ||
		    (ah->port_num && ah->port_num != 1))
			return EINVAL;
	}
	return 0;
}

int ovrdma_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct ovrdma_qp *qp = to_oqp(ibqp);
	struct ovr_ctl_qp_attr a;
	int rc = qp_attr_check(ibqp, attr, mask);

	if (rc)
		return rc;
	qp_attr_to_ctl(attr, mask, &a);
	rc = ovr_cl_modify_qp(to_octx(ibqp->context)->cl, qp->qp, &a,
			      (unsigned int)mask);
	if (rc)
		return -rc;
	if (mask & IBV_QP_STATE)
		ibqp->state = attr->qp_state;
	return 0;
}

int ovrdma_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		    struct ibv_qp_init_attr *init)
{
	struct ovrdma_qp *qp = to_oqp(ibqp);
	struct ovr_ctl_qp_attr a;
	int rc;

	(void)mask; /* everything is cheap: one request answers all */
	rc = ovr_cl_query_qp(to_octx(ibqp->context)->cl, qp->qp, &a);
	if (rc)
		return -rc;
	qp_attr_from_ctl(&a, attr);
	attr->cap = qp->cap;
	memset(init, 0, sizeof(*init));
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->qp_type = ibqp->qp_type;
	init->sq_sig_all = qp->sq_sig_all;
	return 0;
}

int ovrdma_destroy_qp(struct ibv_qp *ibqp)
{
	struct ovrdma_qp *qp = to_oqp(ibqp);
	uint32_t events = 0;
	int rc = ovr_cl_destroy_qp(to_octx(ibqp->context)->cl, qp->qp, &events);

	if (rc)
		return -rc;
	free(qp->x);
	ovrdma_release(to_octx(ibqp->context), qp, &ibqp->mutex, &ibqp->cond,
		       &ibqp->events_completed, events);
	return 0;
}

#define SEND_FLAGS_SUPPORTED                                       \
	(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | \
	 IBV_SEND_INLINE)

int ovrdma_send_wr_check(const struct ovr_cl_send_wr *w, bool ud)
{
	bool inl = w->send_flags & IBV_SEND_INLINE;

	if (w->send_flags & ~(unsigned int)SEND_FLAGS_SUPPORTED ||
	    (w->num_sge && !w->sg_list))
		return EINVAL;
	/* UD: SEND and SEND_WITH_IMM, to an AH of this provider */
	if (ud &&
	    ((w->opcode != IBV_WR_SEND && w->opcode != IBV_WR_SEND_WITH_IMM) ||
	     !w->ud_peer))
		return EINVAL;
	switch (w->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return 0;
	case IBV_WR_RDMA_READ:
		return inl ? EINVAL : 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		/* one 8-byte, 8-byte aligned target, one 8-byte result */
		return inl || w->num_sge != 1 || w->sg_list[0].length != 8 ||
				       (w->remote_addr & 7) ?
			       EINVAL :
			       0;
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
		/* no data: SGEs (from a setter) or inline are mistakes */
		return inl || w->num_sge ? EINVAL : 0;
	case IBV_WR_ATOMIC_WRITE:
		/* its 8 bytes in the WR (ibv_wr_atomic_write), an 8-byte
		 * aligned target; RC only (UD is refused above; UC by
		 * the client) */
		return inl || w->num_sge || (w->remote_addr & 7) ? EINVAL : 0;
	default: /* TSO, driver opcodes */
		return EINVAL;
	}
}

/* One work request into the client's form; 0 or a positive errno. */
static int send_wr(const struct ibv_send_wr *wr, struct ovr_cl_send_wr *w,
		   bool ud)
{
	if (wr->num_sge < 0)
		return EINVAL;
	*w = (struct ovr_cl_send_wr){
		.wr_id = wr->wr_id,
		.opcode = wr->opcode,
		.send_flags = wr->send_flags,
		.sg_list = (const struct ovr_cl_sge *)wr->sg_list,
		.num_sge = (uint32_t)wr->num_sge,
	};
	if (ud) {
		/* wr.ud (a union with wr.rdma: only for UD's opcodes) */
		if ((wr->opcode != IBV_WR_SEND &&
		     wr->opcode != IBV_WR_SEND_WITH_IMM) ||
		    !wr->wr.ud.ah)
			return EINVAL;
		w->ud_peer = to_oah(wr->wr.ud.ah)->handle;
		w->remote_qpn = wr->wr.ud.remote_qpn;
		w->remote_qkey = wr->wr.ud.remote_qkey;
	}
	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
		w->imm_data = wr->imm_data;
		break;
	case IBV_WR_SEND_WITH_INV:
		w->invalidate_rkey = wr->invalidate_rkey;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		w->imm_data = wr->imm_data;
		ovr_fallthrough;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_READ:
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
		break;
	case IBV_WR_LOCAL_INV:
		/* sg_list and num_sge mean nothing here (mlx5 ignores them) */
		w->sg_list = NULL;
		w->num_sge = 0;
		w->invalidate_rkey = wr->invalidate_rkey;
		break;
	case IBV_WR_BIND_MW: {
		int rc;

		w->sg_list = NULL;
		w->num_sge = 0;
		if (!wr->bind_mw.mw)
			return EINVAL;
		rc = ovrdma_bind_wr(w, wr->bind_mw.mw, wr->bind_mw.rkey,
				    &wr->bind_mw.bind_info);
		if (rc)
			return rc;
		break;
	}
	case IBV_WR_ATOMIC_WRITE:
		/* ibv_send_wr has no place for its 8 bytes: only
		 * ibv_wr_atomic_write posts it (as mlx5) */
		return EINVAL;
	default: /* refused by the check */
		break;
	}
	return ovrdma_send_wr_check(w, ud);
}

/* The rights a window may grant (LOCAL_WRITE is accepted and means
 * nothing remotely, as on mlx5 and rxe) */
#define MW_ACCESS                                           \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

int ovrdma_bind_wr(struct ovr_cl_send_wr *w, const struct ibv_mw *mw,
		   uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	/* a range needs a region; zero-based windows are not offered */
	if ((!info->mr && (info->addr || info->length)) ||
	    (info->mw_access_flags & ~(unsigned int)MW_ACCESS))
		return EINVAL;
	if (info->mr && info->mr->pd != mw->pd)
		return EPERM;
	w->bind_mw.mw_rkey = mw->rkey;
	w->bind_mw.rkey = rkey;
	w->bind_mw.mr_lkey = info->mr ? info->mr->lkey : 0;
	w->bind_mw.access = info->mw_access_flags;
	w->bind_mw.addr = info->addr;
	w->bind_mw.length = info->length;
	return 0;
}

/*
 * ibv_bind_mw(3) of a type-1 window (libibverbs refuses type 2): a
 * BIND_MW WR on @ibqp's send queue with the window's next rkey
 * (ibv_inc_rkey), which mw->rkey takes at once, as mlx5 and rxe do; a
 * bind that then completes in error leaves the window unbound with that
 * rkey (the application undoes it, the man page says). Length 0
 * unbinds.
 */
int ovrdma_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		   struct ibv_mw_bind *mw_bind)
{
	struct ovr_cl_send_wr w = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
	};
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	int rc;

	if (ibqp->qp_type != IBV_QPT_RC)
		return EINVAL;
	rc = ovrdma_bind_wr(&w, mw, rkey, &mw_bind->bind_info);
	if (!rc)
		rc = ovrdma_send_wr_check(&w, false);
	if (!rc)
		rc = ovr_cl_post_send(to_oqp(ibqp)->qp, &w);
	if (!rc)
		mw->rkey = rkey;
	return rc;
}

int ovrdma_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		     struct ibv_send_wr **bad_wr)
{
	struct ovrdma_qp *qp = to_oqp(ibqp);
	bool ud = ibqp->qp_type == IBV_QPT_UD;

	for (; wr; wr = wr->next) {
		struct ovr_cl_send_wr w;
		int rc = send_wr(wr, &w, ud);

		if (!rc)
			rc = ovr_cl_post_send(qp->qp, &w);
		if (rc) {
			*bad_wr = wr;
			return rc;
		}
	}
	return 0;
}

/* A receive WR list into a QP's RQ (@qp) or an SRQ (@srq), as verbs
 * says: stop at the first bad one, name it in @bad_wr, positive errno. */
static int post_recv_list(struct ovr_cl_qp *qp, struct ovr_cl_srq *srq,
			  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	for (; wr; wr = wr->next) {
		struct ovr_cl_recv_wr w = {
			.wr_id = wr->wr_id,
			.sg_list = (const struct ovr_cl_sge *)wr->sg_list,
			.num_sge = (uint32_t)wr->num_sge,
		};
		int rc = wr->num_sge < 0 || (wr->num_sge && !wr->sg_list) ?
				 EINVAL :
			 srq ? ovr_cl_post_srq_recv(srq, &w) :
			       ovr_cl_post_recv(qp, &w);

		if (rc) {
			*bad_wr = wr;
			return rc;
		}
	}
	return 0;
}

int ovrdma_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr)
{
	return post_recv_list(to_oqp(ibqp)->qp, NULL, wr, bad_wr);
}

/* ---- shared receive queues ------------------------------------------------ */

/* SRQ attributes and the control message, one converter each way (the
 * client sends no limit with CREATE_SRQ: ibv_create_srq(3) ignores it). */
static void srq_attr_to_ctl(const struct ibv_srq_attr *attr,
			    struct ovr_ctl_srq_attr *a)
{
	*a = (struct ovr_ctl_srq_attr){ .max_wr = attr->max_wr,
					.max_sge = attr->max_sge,
					.srq_limit = attr->srq_limit };
}

static void srq_attr_from_ctl(const struct ovr_ctl_srq_attr *a,
			      struct ibv_srq_attr *attr)
{
	attr->max_wr = a->max_wr;
	attr->max_sge = a->max_sge;
	attr->srq_limit = a->srq_limit;
}

struct ibv_srq *ovrdma_create_srq(struct ibv_pd *ibpd,
				  struct ibv_srq_init_attr *attr)
{
	struct ovrdma_context *ctx = to_octx(ibpd->context);
	struct ovr_ctl_srq_attr a;
	struct ovrdma_srq *srq;
	struct ibv_srq *q;

	srq_attr_to_ctl(&attr->attr, &a);
	if (!a.max_wr || a.max_wr > ctx->dev.max_srq_wr || !a.max_sge ||
	    a.max_sge > ctx->dev.max_srq_sge) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	q = &srq->ibv_srq;
	/* the SRQ_LIMIT_REACHED record carries the ibv_srq, as the
	 * kernel's does */
	srq->srq = ovr_cl_create_srq(ctx->cl, to_opd(ibpd)->handle, &a,
				     (uint64_t)(uintptr_t)q);
	if (!srq->srq) {
		int e = errno;

		free(srq);
		errno = e;
		return NULL;
	}
	ovr_cl_srq_attr(srq->srq, &a);
	/* ibv_create_srq(3): the values granted */
	attr->attr.max_wr = a.max_wr;
	attr->attr.max_sge = a.max_sge;
	q->context = ibpd->context;
	q->srq_context = attr->srq_context;
	q->pd = ibpd;
	q->handle = ovr_cl_srq_num(srq->srq);
	q->events_completed = 0;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	return q;
}

int ovrdma_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		      int mask)
{
	struct ovr_ctl_srq_attr a;

	srq_attr_to_ctl(attr, &a);
	if ((unsigned int)mask &
	    ~(unsigned int)(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	return -ovr_cl_modify_srq(to_octx(ibsrq->context)->cl,
				  to_osrq(ibsrq)->srq, &a, (unsigned int)mask);
}

int ovrdma_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ovr_ctl_srq_attr a;
	int rc = ovr_cl_query_srq(to_octx(ibsrq->context)->cl,
				  to_osrq(ibsrq)->srq, &a);

	if (rc)
		return -rc;
	srq_attr_from_ctl(&a, attr);
	return 0;
}

int ovrdma_destroy_srq(struct ibv_srq *ibsrq)
{
	struct ovrdma_srq *srq = to_osrq(ibsrq);
	uint32_t events = 0;
	int rc = ovr_cl_destroy_srq(to_octx(ibsrq->context)->cl, srq->srq,
				    &events);

	if (rc)
		return -rc;
	ovrdma_release(to_octx(ibsrq->context), srq, &ibsrq->mutex,
		       &ibsrq->cond, &ibsrq->events_completed, events);
	return 0;
}

int ovrdma_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr)
{
	return post_recv_list(NULL, to_osrq(ibsrq)->srq, wr, bad_wr);
}
