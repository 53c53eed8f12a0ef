// SPDX-License-Identifier: MIT
/*
 * Queue pairs and shared receive queues: their rings (memfds the
 * application maps, with a doorbell bit each), their control requests
 * (create, modify, query, stats, destroy), the attributes between the
 * control protocol and the engine, and their destruction, which context
 * teardown (svc_conn.c) uses too.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "svc.h"

/* ---- rings ---------------------------------------------------------------- */

/*
 * What creating a QP and an SRQ share once the engine has the object:
 * the ring (a new memfd of @len bytes, mapped here; its fd goes in the
 * reply), the QP's index entry, a handle, and the doorbell index @db.
 * On failure none of them is left; the engine's object is the caller's.
 */
struct ring_setup {
	uint8_t type; /* SVC_OBJ_QP or SVC_OBJ_SRQ */
	void *obj; /* the struct svc_qp or svc_srq */
	const char *name; /* of the memfd */
	size_t len;
	uint32_t db;
	void *ring; /* out: the mapping */
	uint32_t handle; /* out */
	int fd; /* out: the memfd, for ring_reply */
};

static int ring_setup(struct svc *s, struct svc_ctx *c, struct ring_setup *rs)
{
	int rc = 0;

	rs->ring = svc_map_memfd(rs->name, rs->len, &rs->fd);
	if (!rs->ring)
		return -ENOMEM;
	if (rs->type == SVC_OBJ_QP)
		rc = svc_qp_index(s, rs->obj);
	if (!rc)
		rc = svc_obj_new(c, rs->type, rs->obj, &rs->handle);
	if (rc) {
		if (rs->type == SVC_OBJ_QP)
			svc_qp_unindex(s, rs->obj);
		munmap(rs->ring, rs->len);
		close(rs->fd);
		return rc;
	}
	if (rs->type == SVC_OBJ_QP)
		c->db_qp[rs->db] = rs->obj;
	else
		c->db_srq[rs->db] = rs->obj;
	return 0;
}

/* The create reply @rep, handing the ring's memfd over. */
static int ring_reply(struct svc_ctx *c, const struct svc_req *r,
		      const void *rep, size_t len, struct ring_setup *rs)
{
	int rc = svc_reply(c, r->h, 0, rep, len, &rs->fd, 1);

	close(rs->fd);
	return rc;
}

/* ---- attributes ----------------------------------------------------------- */

/* MODIFY_QP's attributes for the engine: every field is copied, the
 * engine reads those the request's mask names; the address vector is
 * the service's (a flow), not the engine's (peer stays 0). */
static void qp_attr_to_eng(const struct ovr_ctl_qp_attr *a,
			   struct ovr_eng_qp_attr *ea)
{
	*ea = (struct ovr_eng_qp_attr){
		.qp_state = a->qp_state,
		.cur_qp_state = a->cur_qp_state,
		.path_mtu = a->path_mtu,
		.qp_access_flags = a->qp_access_flags,
		.dest_qp_num = a->dest_qp_num,
		.rq_psn = a->rq_psn,
		.sq_psn = a->sq_psn,
		.qkey = a->qkey,
		.timeout = a->timeout,
		.retry_cnt = a->retry_cnt,
		.rnr_retry = a->rnr_retry,
		.min_rnr_timer = a->min_rnr_timer,
		.max_rd_atomic = a->max_rd_atomic,
		.max_dest_rd_atomic = a->max_dest_rd_atomic,
	};
}

/* QUERY_QP's attributes: the engine's, and the address vector, port and
 * capabilities that the service keeps. */
static void qp_attr_from_eng(const struct svc_qp *qp,
			     const struct ovr_eng_qp_attr *ea,
			     struct ovr_ctl_qp_attr *a)
{
	a->qp_state = ea->qp_state;
	a->cur_qp_state = ea->qp_state;
	a->path_mtu = ea->path_mtu;
	a->qp_access_flags = ea->qp_access_flags;
	a->dest_qp_num = ea->dest_qp_num;
	a->rq_psn = ea->rq_psn;
	a->sq_psn = ea->sq_psn;
	a->qkey = ea->qkey;
	a->timeout = ea->timeout;
	a->retry_cnt = ea->retry_cnt;
	a->rnr_retry = ea->rnr_retry;
	a->min_rnr_timer = ea->min_rnr_timer;
	a->max_rd_atomic = ea->max_rd_atomic;
	a->max_dest_rd_atomic = ea->max_dest_rd_atomic;
	a->sq_draining = ea->sq_draining;
	a->port_num = 1;
	a->hop_limit = 64;
	a->is_global = qp->type != OVR_QPT_UD;
	a->traffic_class = (uint8_t)(qp->flow.dscp << 2);
	if (qp->connected)
		ovr_vpc_vip_to_gid(qp->flow.dst_vip, a->dgid);
	a->cap = qp->cap;
}

/* ---- queue pairs ---------------------------------------------------------- */

void svc_qp_destroy(struct svc *s, struct svc_ctx *c, uint32_t h)
{
	struct svc_qp *qp = c->obj[h - 1].p;
	struct svc_pd *pd;

	ovr_eng_qp_destroy(qp->core->eng, qp->qpn);
	if (qp->nmcast)
		svc_mcast_qp_gone(s, qp);
	svc_qp_unindex(s, qp);
	c->db_qp[qp->db_index] = NULL;
	svc_db_free(c, qp->db_index);
	qp->core->nqp--;
	if (qp->srq)
		qp->srq->users--;
	qp->scq->users--;
	qp->rcq->users--;
	pd = svc_obj_get(c, qp->pd_handle, SVC_OBJ_PD);
	if (pd)
		pd->users--;
	munmap(qp->ring, qp->map_len);
	svc_obj_free(c, h);
	c->nqp--;
	free(qp);
}

/* CREATE_QP's checks before anything is taken: 0 or the reply's error.
 * *@srq: the SRQ that @q names, or NULL. */
static int qp_create_check(struct svc_ctx *c,
			   const struct ovr_ctl_create_qp_req *q,
			   struct svc_srq **srq)
{
	if (c->dev < 0)
		return -EBADF;
	if (!svc_obj_get(c, q->pd, SVC_OBJ_PD) ||
	    !svc_obj_get(c, q->send_cq, SVC_OBJ_CQ) ||
	    !svc_obj_get(c, q->recv_cq, SVC_OBJ_CQ))
		return -ENOENT;
	if (q->qp_type != OVR_QPT_RC && q->qp_type != OVR_QPT_UC &&
	    q->qp_type != OVR_QPT_UD)
		return -EOPNOTSUPP;
	*srq = NULL;
	if (q->srq) {
		*srq = svc_obj_get(c, q->srq, SVC_OBJ_SRQ);
		if (!*srq)
			return -ENOENT;
		if ((*srq)->pd_handle != q->pd)
			return -EINVAL;
	}
	/* 0 WRs on either side: a receive-only or send-only QP */
	if (q->cap.max_send_wr > SVC_QP_MAX_WR ||
	    q->cap.max_recv_wr > SVC_QP_MAX_WR ||
	    q->cap.max_send_sge > OVR_RING_SQ_MAX_SGE ||
	    q->cap.max_recv_sge > OVR_RING_SQ_MAX_SGE ||
	    q->cap.max_inline_data > OVR_RING_MAX_INLINE)
		return -EINVAL;
	return 0;
}

/* The QP that @q asks for, on the objects it names (checked), for
 * @core with doorbell index @db; not yet the engine's. NULL without
 * memory. */
static struct svc_qp *qp_alloc(struct svc *s, struct svc_ctx *c,
			       const struct ovr_ctl_create_qp_req *q,
			       struct svc_srq *srq, struct svc_core *core,
			       uint32_t db)
{
	struct svc_qp *qp = calloc(1, sizeof(*qp));

	if (!qp)
		return NULL;
	qp->ctx = c;
	qp->core = core;
	qp->type = q->qp_type;
	qp->srq = srq;
	qp->vni = s->devs[c->dev].d.vni;
	qp->vip = s->devs[c->dev].d.vip;
	qp->db_index = db;
	qp->pd_handle = q->pd;
	qp->scq = svc_obj_get(c, q->send_cq, SVC_OBJ_CQ);
	qp->rcq = svc_obj_get(c, q->recv_cq, SVC_OBJ_CQ);
	qp->user_handle = q->user_handle;
	return qp;
}

/* The engine's QP for @q (on the objects of @qp), and in qp->cap what
 * the engine granted. A side asked with 0 WRs (qperf's receive-only
 * server, a send-only QP) gets none, as mlx5 and rxe grant: the engine
 * keeps a slot it never fills, the client finds the queue full (ENOMEM),
 * and the ring's side has one unused slot. */
static int qp_engine_create(struct svc_qp *qp,
			    const struct ovr_ctl_create_qp_req *q,
			    const struct svc_pd *pd)
{
	struct ovr_eng_qp_init init = {
		.pd = pd->id,
		.send_cq = qp->scq->slot,
		.recv_cq = qp->rcq->slot,
		.sq_sig_all = q->sq_sig_all != 0,
		.user = (uint64_t)(uintptr_t)qp,
		.cap = {
			.max_send_wr = q->cap.max_send_wr,
			.max_recv_wr = q->cap.max_recv_wr ?
					       q->cap.max_recv_wr : 1,
			.max_send_sge = q->cap.max_send_sge ?
						q->cap.max_send_sge : 1,
			.max_recv_sge = q->cap.max_recv_sge ?
						q->cap.max_recv_sge : 1,
			.max_inline_data = q->cap.max_inline_data,
		},
		.srq = qp->srq ? qp->srq->srqn : 0,
		.qp_type = q->qp_type, /* checked: RC, UC or UD */
	};
	struct ovr_eng_qp_attr qa;
	int rc = ovr_eng_qp_create(qp->core->eng, &init, &qp->qpn);

	if (rc)
		return rc;
	ovr_eng_qp_query(qp->core->eng, qp->qpn, &qa);
	qp->cap = (struct ovr_ctl_qp_cap){
		.max_send_wr = q->cap.max_send_wr ? qa.cap.max_send_wr : 0,
		.max_recv_wr = q->cap.max_recv_wr ? qa.cap.max_recv_wr : 0,
		.max_send_sge = qa.cap.max_send_sge,
		.max_recv_sge = qa.cap.max_recv_sge,
		.max_inline_data = qa.cap.max_inline_data,
	};
	return 0;
}

/* The ring's layout for the granted capabilities: depths and strides in
 * @qp, offsets in @rep, the length in qp->map_len. */
static void qp_ring_layout(struct svc_qp *qp, struct ovr_ctl_create_qp_rep *rep)
{
	uint32_t per_sq, per_rq;

	qp->sq_depth = (uint32_t)ovr_pow2_at_least(qp->cap.max_send_wr);
	qp->rq_depth = (uint32_t)ovr_pow2_at_least(qp->cap.max_recv_wr);
	per_sq = qp->cap.max_send_sge * (uint32_t)sizeof(struct ovr_ring_sge);
	if (qp->cap.max_inline_data > per_sq)
		per_sq = qp->cap.max_inline_data;
	qp->sq_stride = (uint32_t)ovr_pow2_at_least(
		(uint32_t)sizeof(struct ovr_ring_swqe) + per_sq);
	per_rq = qp->cap.max_recv_sge * (uint32_t)sizeof(struct ovr_ring_sge);
	qp->rq_stride = (uint32_t)ovr_pow2_at_least(
		(uint32_t)sizeof(struct ovr_ring_rwqe) + per_rq);
	rep->sq_off = SVC_PAGE;
	rep->rq_off = svc_page_up(rep->sq_off +
				  (uint64_t)qp->sq_depth * qp->sq_stride);
	qp->map_len = svc_page_up(rep->rq_off +
				  (uint64_t)qp->rq_depth * qp->rq_stride);
}

/* CREATE_QP's reply: what was granted and the ring (@rep has its
 * offsets), with the ring's memfd. */
static int qp_create_reply(struct svc_ctx *c, const struct svc_req *r,
			   const struct svc_qp *qp,
			   struct ovr_ctl_create_qp_rep *rep,
			   struct ring_setup *rs)
{
	rep->qp = qp->handle;
	rep->qpn = qp->qpn;
	rep->cap = qp->cap;
	rep->sq_depth = qp->sq_depth;
	rep->rq_depth = qp->rq_depth;
	rep->sq_stride = qp->sq_stride;
	rep->rq_stride = qp->rq_stride;
	rep->map_len = qp->map_len;
	rep->db_index = qp->db_index;
	rep->wake_mask = 1u << qp->core->idx;
	return ring_reply(c, r, rep, sizeof(*rep), rs);
}

int svc_do_create_qp(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_create_qp_req *q =
		SVC_BODY(c, r, struct ovr_ctl_create_qp_req);
	struct ovr_ctl_create_qp_rep rep = { 0 };
	struct svc_pd *pd = svc_obj_get(c, q->pd, SVC_OBJ_PD);
	struct ring_setup rs = { .type = SVC_OBJ_QP, .name = "ovrdma-qp" };
	struct svc_core *core;
	struct svc_srq *srq;
	struct svc_qp *qp;
	int rc;

	rc = qp_create_check(c, q, &srq);
	if (rc)
		return svc_status(c, r->h, rc);
	if (c->nqp >= s->conf.ctx_max_qp)
		return svc_limit(c, r->h, SVC_LIM_QP, s->conf.ctx_max_qp,
				 -ENOSPC);
	core = srq ? srq->core : svc_core_pick_qp(s);
	rc = svc_db_alloc(c, core);
	if (rc < 0)
		return svc_status(c, r->h, rc);
	rs.db = (uint32_t)rc;
	qp = qp_alloc(s, c, q, srq, core, rs.db);
	if (!qp) {
		svc_db_free(c, rs.db);
		return svc_status(c, r->h, -ENOMEM);
	}
	rc = qp_engine_create(qp, q, pd);
	if (rc) {
		free(qp);
		svc_db_free(c, rs.db);
		if (rc == -ENOSPC)
			return svc_limit(c, r->h, SVC_LIM_QP_NODE,
					 s->conf.eng_max_qp, rc);
		return svc_status(c, r->h, rc);
	}
	qp_ring_layout(qp, &rep);
	rs.obj = qp;
	rs.len = qp->map_len;
	rc = ring_setup(s, c, &rs);
	if (rc) {
		ovr_eng_qp_destroy(core->eng, qp->qpn);
		free(qp);
		svc_db_free(c, rs.db);
		return svc_status(c, r->h, rc);
	}
	qp->ring = rs.ring;
	qp->handle = rs.handle;
	qp->sq_slots = (uint8_t *)qp->ring + rep.sq_off;
	qp->rq_slots = (uint8_t *)qp->ring + rep.rq_off;
	if (srq)
		srq->users++;
	qp->scq->users++;
	qp->rcq->users++;
	qp->scq->cores |= 1u << core->idx;
	qp->rcq->cores |= 1u << core->idx;
	/* (set with the world stopped: the cores see it in their next
	 * round) */
	qp->scq->multi = __builtin_popcount(qp->scq->cores) > 1;
	qp->rcq->multi = __builtin_popcount(qp->rcq->cores) > 1;
	pd->users++;
	c->nqp++;
	core->nqp++;
	return qp_create_reply(c, r, qp, &rep, &rs);
}

/* MODIFY_QP's address vector: the peer's flow in @flow, if the tenant's
 * security group lets the device reach it. */
static int qp_modify_av(struct svc *s, struct svc_ctx *c, struct svc_qp *qp,
			const struct ovr_ctl_modify_qp_req *q,
			struct ovr_vpc_flow *flow)
{
	const struct ovr_ctl_dev *d = &s->devs[c->dev].d;
	const struct ovr_ctl_qp_attr *a = &q->attr;
	uint32_t peer;
	int rc;

	if (!(q->mask & OVR_QP_DEST_QPN) || ovr_vpc_gid_to_vip(a->dgid, &peer))
		return -EINVAL;
	rc = ovr_vpc_may_connect(s->vpc, d->vni, d->vip, peer);
	if (rc)
		return rc;
	ovr_vpc_flow_init(flow, d->vni, d->vip, peer, qp->qpn, a->dest_qp_num,
			  a->traffic_class >> 2);
	return 0;
}

/* The state the engine took, in the ring for the application. */
static void qp_state_publish(struct svc_qp *qp, uint32_t state)
{
	atomic_store_explicit(&qp->ring->state, state, memory_order_release);
	if (state == OVR_QPS_RESET) {
		/* RESET drops all work, without completions */
		qp->connected = false;
		qp->sq_cons = atomic_load(&qp->ring->sq_prod);
		qp->rq_cons = atomic_load(&qp->ring->rq_prod);
		atomic_store(&qp->ring->sq_cons, qp->sq_cons);
		atomic_store(&qp->ring->rq_cons, qp->rq_cons);
	}
}

int svc_do_modify_qp(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_modify_qp_req *q =
		SVC_BODY(c, r, struct ovr_ctl_modify_qp_req);
	struct svc_qp *qp = svc_obj_get(c, q->qp, SVC_OBJ_QP);
	struct ovr_eng_qp_attr ea;
	struct ovr_vpc_flow flow = { 0 };
	bool av = q->mask & OVR_QP_AV;
	int rc;

	if (!qp)
		return svc_status(c, r->h, -ENOENT);
	/* a UD QP has no peer: each send names an AH */
	if (av && qp->type == OVR_QPT_UD)
		return svc_status(c, r->h, -EINVAL);
	if (av) {
		rc = qp_modify_av(s, c, qp, q, &flow);
		if (rc)
			return svc_status(c, r->h, rc);
	}
	qp_attr_to_eng(&q->attr, &ea);
	rc = ovr_eng_qp_modify(qp->core->eng, qp->qpn, &ea, q->mask, svc_now());
	if (rc)
		return svc_status(c, r->h, rc);
	if (av) {
		qp->flow = flow;
		qp->connected = true;
	}
	if (q->mask & OVR_QP_STATE)
		qp_state_publish(qp, q->attr.qp_state);
	svc_qp_kick(s, qp);
	return svc_status(c, r->h, 0);
}

int svc_do_query_qp(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_handle_req *q =
		SVC_BODY(c, r, struct ovr_ctl_handle_req);
	struct svc_qp *qp = svc_obj_get(c, q->handle, SVC_OBJ_QP);
	struct ovr_ctl_query_qp_rep rep = { 0 };
	struct ovr_eng_qp_attr ea;
	int rc;

	(void)s;
	if (!qp)
		return svc_status(c, r->h, -ENOENT);
	rc = ovr_eng_qp_query(qp->core->eng, qp->qpn, &ea);
	if (rc)
		return svc_status(c, r->h, rc);
	qp_attr_from_eng(qp, &ea, &rep.attr);
	return svc_reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

int svc_do_destroy_qp(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_handle_req *q =
		SVC_BODY(c, r, struct ovr_ctl_handle_req);
	struct svc_qp *qp = svc_obj_get(c, q->handle, SVC_OBJ_QP);

	if (!qp)
		return svc_status(c, r->h, -ENOENT);
	svc_dp_settle(qp->core);
	svc_qp_destroy(s, c, q->handle);
	return svc_status(c, r->h, 0);
}

int svc_do_qp_stats(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_handle_req *q =
		SVC_BODY(c, r, struct ovr_ctl_handle_req);
	struct svc_qp *qp = svc_obj_get(c, q->handle, SVC_OBJ_QP);
	struct ovr_ctl_qp_stats_rep rep;
	struct ovr_eng_qp_stats st;

	(void)s;
	if (!qp || ovr_eng_qp_stats(qp->core->eng, qp->qpn, &st))
		return svc_status(c, r->h, -ENOENT);
	rep = (struct ovr_ctl_qp_stats_rep){
		.state = st.state,
		.snd_una = st.snd_una,
		.snd_nxt = st.snd_nxt,
		.rcv_nxt = st.rcv_nxt,
		.inflight_pkts = st.inflight_pkts,
		.cwnd_bytes = st.cwnd_bytes,
		.srtt_ns = st.srtt_ns,
		.rto_ns = st.rto_ns,
		.tx_pkts = st.tx_pkts,
		.tx_bytes = st.tx_bytes,
		.rx_pkts = st.rx_pkts,
		.rx_bytes = st.rx_bytes,
		.retx_pkts = st.retx_pkts,
		.rto_count = st.rto_count,
		.tlp_count = st.tlp_count,
		.rack_lost = st.rack_lost,
		.rx_dup = st.rx_dup,
		.rx_ooo = st.rx_ooo,
	};
	return svc_reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

/* ---- shared receive queues ------------------------------------------------ */

int svc_srq_destroy(struct svc *s, struct svc_ctx *c, uint32_t h)
{
	struct svc_srq *srq = c->obj[h - 1].p;
	struct svc_pd *pd;
	int rc;

	(void)s;
	if (srq->users)
		return -EBUSY;
	rc = ovr_eng_srq_destroy(srq->core->eng, srq->srqn);
	if (rc)
		return rc;
	c->db_srq[srq->db_index] = NULL;
	svc_db_free(c, srq->db_index);
	srq->core->nqp--;
	pd = svc_obj_get(c, srq->pd_handle, SVC_OBJ_PD);
	if (pd)
		pd->users--;
	munmap(srq->ring, srq->map_len);
	svc_obj_free(c, h);
	c->nsrq--;
	free(srq);
	return 0;
}

/* The SRQ's ring: room to grow max_wr (MODIFY_SRQ) without a new ring,
 * up to 4x, within the engine's limit. */
static void srq_ring_layout(struct svc_srq *srq,
			    const struct ovr_eng_srq_attr *ea,
			    struct ovr_ctl_create_srq_rep *rep)
{
	srq->depth = (uint32_t)ovr_pow2_at_least(ea->max_wr);
	if (srq->depth * 4 <= SVC_SRQ_MAX_WR)
		srq->depth *= 4;
	else
		srq->depth = SVC_SRQ_MAX_WR > srq->depth ? SVC_SRQ_MAX_WR :
							   srq->depth;
	srq->stride = (uint32_t)ovr_pow2_at_least(
		(uint32_t)(sizeof(struct ovr_ring_rwqe) +
			   ea->max_sge * sizeof(struct ovr_ring_sge)));
	rep->slots_off = SVC_PAGE;
	srq->map_len = svc_page_up(rep->slots_off +
				   (uint64_t)srq->depth * srq->stride);
}

int svc_do_create_srq(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_create_srq_req *q =
		SVC_BODY(c, r, struct ovr_ctl_create_srq_req);
	struct ovr_ctl_create_srq_rep rep = { 0 };
	struct svc_pd *pd = svc_obj_get(c, q->pd, SVC_OBJ_PD);
	struct ring_setup rs = { .type = SVC_OBJ_SRQ, .name = "ovrdma-srq" };
	struct ovr_eng_srq_init init;
	struct ovr_eng_srq_attr ea;
	struct svc_core *core;
	struct svc_srq *srq;
	int rc;

	if (!pd)
		return svc_status(c, r->h, -ENOENT);
	if (!q->attr.max_wr || q->attr.max_wr > SVC_SRQ_MAX_WR ||
	    !q->attr.max_sge || q->attr.max_sge > OVR_RING_SQ_MAX_SGE)
		return svc_status(c, r->h, -EINVAL);
	if (c->nsrq >= s->conf.ctx_max_srq)
		return svc_limit(c, r->h, SVC_LIM_SRQ, s->conf.ctx_max_srq,
				 -ENOSPC);
	core = svc_core_pick_qp(s);
	rc = svc_db_alloc(c, core);
	if (rc < 0)
		return svc_status(c, r->h, rc);
	rs.db = (uint32_t)rc;
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		svc_db_free(c, rs.db);
		return svc_status(c, r->h, -ENOMEM);
	}
	init = (struct ovr_eng_srq_init){
		.pd = pd->id,
		.user = (uint64_t)(uintptr_t)srq,
		.attr = { .max_wr = q->attr.max_wr,
			  .max_sge = q->attr.max_sge },
	};
	rc = ovr_eng_srq_create(core->eng, &init, &srq->srqn);
	if (rc) {
		free(srq);
		svc_db_free(c, rs.db);
		return svc_status(c, r->h, rc);
	}
	ovr_eng_srq_query(core->eng, srq->srqn, &ea);
	srq->ctx = c;
	srq->core = core;
	srq->db_index = rs.db;
	srq->pd_handle = q->pd;
	srq->user_handle = q->user_handle;
	srq->max_sge = ea.max_sge;
	srq_ring_layout(srq, &ea, &rep);
	rs.obj = srq;
	rs.len = srq->map_len;
	rc = ring_setup(s, c, &rs);
	if (rc) {
		ovr_eng_srq_destroy(core->eng, srq->srqn);
		free(srq);
		svc_db_free(c, rs.db);
		return svc_status(c, r->h, rc);
	}
	srq->ring = rs.ring;
	srq->handle = rs.handle;
	srq->slots = (uint8_t *)srq->ring + rep.slots_off;
	pd->users++;
	c->nsrq++;
	core->nqp++;
	rep.srq = srq->handle;
	rep.srqn = srq->srqn;
	rep.attr.max_wr = ea.max_wr;
	rep.attr.max_sge = ea.max_sge;
	rep.depth = srq->depth;
	rep.stride = srq->stride;
	rep.map_len = srq->map_len;
	rep.db_index = rs.db;
	rep.wake_mask = 1u << core->idx;
	return ring_reply(c, r, &rep, sizeof(rep), &rs);
}

int svc_do_modify_srq(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_modify_srq_req *q =
		SVC_BODY(c, r, struct ovr_ctl_modify_srq_req);
	struct svc_srq *srq = svc_obj_get(c, q->srq, SVC_OBJ_SRQ);
	struct ovr_eng_srq_attr ea = { .max_wr = q->attr.max_wr,
				       .max_sge = q->attr.max_sge,
				       .srq_limit = q->attr.srq_limit };

	if (!srq)
		return svc_status(c, r->h, -ENOENT);
	if (q->mask & ~(OVR_SRQ_MAX_WR | OVR_SRQ_LIMIT))
		return svc_status(c, r->h, -EINVAL);
	/* the ring was sized at creation: max_wr grows up to its depth */
	if ((q->mask & OVR_SRQ_MAX_WR) && q->attr.max_wr > srq->depth)
		return svc_status(c, r->h, -EINVAL);
	/* receives the ring holds may be posted against the old size:
	 * hand them to the engine first */
	svc_srq_kick(s, srq);
	return svc_status(c, r->h,
			  ovr_eng_srq_modify(srq->core->eng, srq->srqn, &ea,
					     q->mask));
}

int svc_do_query_srq(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_handle_req *q =
		SVC_BODY(c, r, struct ovr_ctl_handle_req);
	struct svc_srq *srq = svc_obj_get(c, q->handle, SVC_OBJ_SRQ);
	struct ovr_ctl_query_srq_rep rep = { 0 };
	struct ovr_eng_srq_attr ea;
	int rc;

	(void)s;
	if (!srq)
		return svc_status(c, r->h, -ENOENT);
	rc = ovr_eng_srq_query(srq->core->eng, srq->srqn, &ea);
	if (rc)
		return svc_status(c, r->h, rc);
	rep.attr.max_wr = ea.max_wr;
	rep.attr.max_sge = ea.max_sge;
	rep.attr.srq_limit = ea.srq_limit;
	return svc_reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

int svc_do_destroy_srq(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_handle_req *q =
		SVC_BODY(c, r, struct ovr_ctl_handle_req);

	if (!svc_obj_get(c, q->handle, SVC_OBJ_SRQ))
		return svc_status(c, r->h, -ENOENT);
	return svc_status(c, r->h, svc_srq_destroy(s, c, q->handle));
}
