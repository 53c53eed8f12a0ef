/* SPDX-License-Identifier: MIT */
/*
 * The ovrdma verbs provider's private objects (docs/PROVIDER.md): each
 * wraps the libibverbs object it extends (first member, or the member
 * libibverbs points at) and the libovr_client object underneath.
 *
 * Shared with the completion-channel interposer (ovrdma_preload.c),
 * which recognises an ovrdma context by its device and calls the
 * provider through struct ovrdma_hooks: the interposer is a separate
 * library and does not see the provider's symbols.
 */
#ifndef OVRDMA_PROVIDER_H
#define OVRDMA_PROVIDER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <ovrdma/client.h>

#include "ovrdma_abi.h"

#define OVRDMA_PROVIDER_NAME "ovrdma" /* verbs_device_ops.name */
#define OVRDMA_DEVICE_MAGIC 0x6f766476u /* "ovdv" */
#define OVRDMA_CHANNEL_MAGIC 0x6f766368u /* "ovch" */
#define OVRDMA_HOOKS_VERSION 1u

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))
#endif

/* What the interposer may call; version first, checked before use. */
struct ovrdma_hooks {
	uint32_t version; /* OVRDMA_HOOKS_VERSION */
	/* ibv_create_comp_channel / ibv_destroy_comp_channel semantics */
	struct ibv_comp_channel *(*create_channel)(struct ibv_context *ctx);
	int (*destroy_channel)(struct ibv_comp_channel *channel);
};

struct ovrdma_device {
	struct verbs_device vdev;
	uint32_t magic; /* OVRDMA_DEVICE_MAGIC */
	const struct ovrdma_hooks *hooks;
	char socket[PATH_MAX]; /* the service's control socket */
};

/* A destroyed QP, CQ or SRQ whose asynchronous events the application
 * has not all acknowledged yet: ibv_ack_async_event will lock its mutex
 * and count in it, so its memory waits (ovrdma_release()). */
struct ovrdma_zombie {
	struct ovrdma_zombie *next;
	void *obj; /* freed */
	pthread_mutex_t *mutex; /* the ibv_* object's */
	pthread_cond_t *cond;
	const uint32_t *acked; /* its events_completed */
	uint32_t events; /* written by the service */
};

/* Buckets of the on-demand regions by lkey (ibv_advise_mr's lookup). */
#define OVRDMA_ODP_BUCKETS 64u

struct ovrdma_mr;

struct ovrdma_context {
	struct verbs_context vctx; /* ends with the ibv_context */
	struct ovr_cl *cl;
	struct ovr_ctl_dev dev; /* limits, GID, MTU from OPEN */
	pthread_mutex_t zlock;
	struct ovrdma_zombie *zombies;
	/* The on-demand regions, chained by lkey % OVRDMA_ODP_BUCKETS
	 * through ovrdma_mr.odp_next, under odp_lock: only
	 * ibv_advise_mr reads them (ovrdma_verbs.c). */
	pthread_mutex_t odp_lock;
	struct ovrdma_mr *odp[OVRDMA_ODP_BUCKETS];
};

/*
 * A protection domain, or a parent domain (ibv_alloc_parent_domain(3),
 * docs/PROVIDER.md "Parent and thread domains"): one that names @prot,
 * the protection domain it stands for, whose @handle it carries, so
 * that every verb taking a PD uses a parent domain as its protection
 * domain. @parents counts the parent domains over a protection domain
 * (ibv_dealloc_pd EBUSY while there are any).
 */
struct ovrdma_td;

struct ovrdma_pd {
	struct ibv_pd ibv_pd;
	uint32_t handle;
	_Atomic uint32_t parents;
	struct ovrdma_pd *prot; /* NULL: a protection domain */
	struct ovrdma_td *td;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
	void *pd_context;
};

/* A thread domain (ibv_alloc_td(3)): @parents counts the parent domains
 * naming it (ibv_dealloc_td EBUSY while there are any). */
struct ovrdma_td {
	struct ibv_td ibv_td;
	_Atomic uint32_t parents;
};

struct ovrdma_mr {
	struct verbs_mr vmr;
	struct ovr_cl_mr *mr;
	struct ovrdma_mr *odp_next; /* on demand: its bucket's chain */
};

struct ovrdma_channel {
	struct ibv_comp_channel ch;
	uint32_t magic; /* OVRDMA_CHANNEL_MAGIC */
	uint32_t handle;
};

struct ovrdma_cq {
	struct verbs_cq vcq;
	struct ovr_cl_cq *cq;
	struct ovr_cl_wc cur; /* the ibv_cq_ex polling's current entry */
};

struct ovrdma_srq {
	struct ibv_srq ibv_srq;
	struct ovr_cl_srq *srq;
};

struct ovrdma_ah {
	struct ibv_ah ibv_ah;
	uint32_t handle;
};

struct ovrdma_qpx;

struct ovrdma_qp {
	struct verbs_qp vqp;
	struct ovr_cl_qp *qp;
	struct ibv_qp_cap cap; /* granted */
	bool sq_sig_all;
	/* the ibv_wr_* API's state (ovrdma_qpx.c): QPs made by
	 * ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS; else NULL */
	struct ovrdma_qpx *x;
	/* IBV_QP_CREATE_BLOCK_SELF_MCAST_LB: its sends to a group it is
	 * attached to do not come back to it */
	bool mcast_no_lb;
};

static inline struct ovrdma_device *to_odev(struct ibv_device *d)
{
	return container_of(d, struct ovrdma_device, vdev.device);
}

static inline struct ovrdma_context *to_octx(struct ibv_context *c)
{
	return container_of(c, struct ovrdma_context, vctx.context);
}

static inline struct ovrdma_pd *to_opd(struct ibv_pd *pd)
{
	return container_of(pd, struct ovrdma_pd, ibv_pd);
}

static inline struct ovrdma_mr *to_omr(struct verbs_mr *vmr)
{
	return container_of(vmr, struct ovrdma_mr, vmr);
}

static inline struct ovrdma_cq *to_ocq(struct ibv_cq *cq)
{
	return container_of(cq, struct ovrdma_cq, vcq.cq);
}

static inline struct ovrdma_cq *to_ocq_ex(struct ibv_cq_ex *cqx)
{
	return container_of(cqx, struct ovrdma_cq, vcq.cq_ex);
}

static inline struct ovrdma_channel *to_ochannel(struct ibv_comp_channel *ch)
{
	return container_of(ch, struct ovrdma_channel, ch);
}

static inline struct ovrdma_srq *to_osrq(struct ibv_srq *srq)
{
	return container_of(srq, struct ovrdma_srq, ibv_srq);
}

static inline struct ovrdma_ah *to_oah(struct ibv_ah *ah)
{
	return container_of(ah, struct ovrdma_ah, ibv_ah);
}

static inline struct ovrdma_qp *to_oqp(struct ibv_qp *qp)
{
	return container_of(qp, struct ovrdma_qp, vqp.qp);
}

static inline struct ovrdma_qp *to_oqp_ex(struct ibv_qp_ex *qpx)
{
	return container_of(qpx, struct ovrdma_qp, vqp.qp_ex);
}

/*
 * The ovrdma device behind @ctx, or NULL when @ctx belongs to another
 * provider. Every libibverbs device is a verbs_device, whose ops name
 * the provider.
 */
static inline struct ovrdma_device *ovrdma_device_of(struct ibv_context *ctx)
{
	struct verbs_device *vd;
	struct ovrdma_device *od;

	if (!ctx || !ctx->device)
		return NULL;
	vd = container_of(ctx->device, struct verbs_device, device);
	if (!vd->ops || !vd->ops->name ||
	    __builtin_strcmp(vd->ops->name, OVRDMA_PROVIDER_NAME))
		return NULL;
	od = container_of(vd, struct ovrdma_device, vdev);
	return od->magic == OVRDMA_DEVICE_MAGIC ? od : NULL;
}

#endif /* OVRDMA_PROVIDER_H */
