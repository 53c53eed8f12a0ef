/* SPDX-License-Identifier: MIT */
/*
 * The verbs of the ovrdma provider (docs/PROVIDER.md section 4), as
 * ovrdma.c's ops table points at them, and what the provider's files
 * share besides. Defined in ovrdma_verbs.c, those of queue pairs and
 * shared receive queues in ovrdma_qp.c, the extended QP API
 * (ibv_create_qp_ex and the ibv_wr_* functions) in ovrdma_qpx.c.
 * Return conventions are libibverbs': constructors return NULL with
 * errno, ibv_post_* / modify / destroy return 0 or a positive errno
 * (post_* also set *bad_wr), poll_cq a count or a negative value.
 */
#ifndef OVRDMA_PROVIDER_VERBS_H
#define OVRDMA_PROVIDER_VERBS_H

#include "ovrdma.h"

/* device and port */
int ovrdma_query_device_ex(struct ibv_context *ibctx,
			   const struct ibv_query_device_ex_input *input,
			   struct ibv_device_attr_ex *attr, size_t attr_size);
int ovrdma_query_port(struct ibv_context *ibctx, uint8_t port,
		      struct ibv_port_attr *attr);

/* protection domains and memory */
struct ibv_pd *ovrdma_alloc_pd(struct ibv_context *ibctx);
int ovrdma_dealloc_pd(struct ibv_pd *ibpd);
struct ibv_pd *
ovrdma_alloc_parent_domain(struct ibv_context *ibctx,
			   struct ibv_parent_domain_init_attr *attr);
struct ibv_td *ovrdma_alloc_td(struct ibv_context *ibctx,
			       struct ibv_td_init_attr *attr);
int ovrdma_dealloc_td(struct ibv_td *ibtd);
struct ibv_mr *ovrdma_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			     uint64_t hca_va, int access);
struct ibv_mr *ovrdma_reg_dmabuf_mr(struct ibv_pd *ibpd, uint64_t offset,
				    size_t length, uint64_t iova, int fd,
				    int access);
int ovrdma_dereg_mr(struct verbs_mr *vmr);
int ovrdma_query_rt_values(struct ibv_context *ibctx,
			   struct ibv_values_ex *values);
int ovrdma_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		    void *addr, size_t length, int access);
struct ibv_mw *ovrdma_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type);
int ovrdma_dealloc_mw(struct ibv_mw *mw);
/* ibv_bind_mw (type 1): a BIND_MW WR with the next rkey (ovrdma_qp.c) */
int ovrdma_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		   struct ibv_mw_bind *mw_bind);
/* A BIND_MW WR's bind of @mw to @info with @rkey, into @w: 0, EINVAL
 * (no region for a range, ZERO_BASED, unknown rights) or EPERM (the
 * region in another PD), as mlx5's checks (ovrdma_qp.c) */
int ovrdma_bind_wr(struct ovr_cl_send_wr *w, const struct ibv_mw *mw,
		   uint32_t rkey, const struct ibv_mw_bind_info *info);
int ovrdma_advise_mr(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice,
		     uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge);

/* completion channels, called through struct ovrdma_hooks */
struct ibv_comp_channel *ovrdma_create_channel(struct ibv_context *ibctx);
int ovrdma_destroy_channel(struct ibv_comp_channel *channel);

/* completion queues */
struct ibv_cq *ovrdma_create_cq(struct ibv_context *ibctx, int cqe,
				struct ibv_comp_channel *channel,
				int comp_vector);
struct ibv_cq_ex *ovrdma_create_cq_ex(struct ibv_context *ibctx,
				      struct ibv_cq_init_attr_ex *attr);
int ovrdma_destroy_cq(struct ibv_cq *ibcq);
int ovrdma_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc);
int ovrdma_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
int ovrdma_resize_cq(struct ibv_cq *ibcq, int cqe);

/* queue pairs (ovrdma_qp.c) */
struct ibv_qp *ovrdma_create_qp(struct ibv_pd *ibpd,
				struct ibv_qp_init_attr *attr);
int ovrdma_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask);
int ovrdma_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		    struct ibv_qp_init_attr *init);
int ovrdma_destroy_qp(struct ibv_qp *ibqp);
int ovrdma_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		     struct ibv_send_wr **bad_wr);
int ovrdma_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr);
/* A send WR in the client's form as verbs allows it, whichever API
 * built it: 0 or EINVAL (ovr_cl_send_add checks state, room, SGE count
 * and inline length). */
int ovrdma_send_wr_check(const struct ovr_cl_send_wr *w, bool ud);

/* the extended QP API (ovrdma_qpx.c); the ibv_wr_* functions are
 * reached through the ibv_qp_ex it fills in */
struct ibv_qp *ovrdma_create_qp_ex(struct ibv_context *ibctx,
				   struct ibv_qp_init_attr_ex *attr);

/* shared receive queues (ovrdma_qp.c) */
struct ibv_srq *ovrdma_create_srq(struct ibv_pd *ibpd,
				  struct ibv_srq_init_attr *attr);
int ovrdma_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		      int mask);
int ovrdma_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int ovrdma_destroy_srq(struct ibv_srq *ibsrq);
int ovrdma_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);

/* address handles */
struct ibv_ah *ovrdma_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr);
int ovrdma_destroy_ah(struct ibv_ah *ibah);
int ovrdma_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
			uint16_t lid);
int ovrdma_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
			uint16_t lid);

/*
 * The end of objects that have asynchronous events (QP, CQ, SRQ):
 * ovrdma_release() frees @obj, or keeps it until the @events the service
 * wrote for it are acknowledged; ovrdma_reap() frees the kept objects
 * whose events are all acknowledged (all of them with @all, when the
 * context closes).
 */
void ovrdma_release(struct ovrdma_context *ctx, void *obj, pthread_mutex_t *m,
		    pthread_cond_t *c, const uint32_t *acked, uint32_t events);
void ovrdma_reap(struct ovrdma_context *ctx, bool all);

#endif /* OVRDMA_PROVIDER_VERBS_H */
