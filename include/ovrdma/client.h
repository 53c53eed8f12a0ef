/* SPDX-License-Identifier: MIT */
/*
 * libovr_client: the application side of ovrdmad's control protocol
 * (include/ovrdma/ctl.h) and shared rings (include/ovrdma/ring.h) - the
 * lower half that the verbs provider sits on, and what the service's
 * tests drive (docs/SERVICE.md section 7).
 *
 * Control calls (everything but post, poll and notify) are serialised on
 * the connection and return 0 or a negative errno (pointer-returning ones
 * NULL with errno). Data-path calls make no syscall: post returns 0 or a
 * positive errno as ibv_post_send does (ENOMEM: queue full; EINVAL: bad
 * work request or QP state; EIO: the service is gone); poll returns the
 * number of completions or a negative errno. A QP's send side, receive
 * side and a CQ's poll may each be used by one thread at a time (a
 * spinlock inside keeps concurrent users correct).
 *
 * Memory registration never changes the application's mappings or
 * contents: shared memory backed by a regular file (memfd, shm,
 * hugetlbfs, files, shared anonymous memory) is passed as that object,
 * which the service maps; anything else is reached by the service
 * through the application's own /proc/self/mem, which it passes
 * (docs/SERVICE.md, "How the service reaches application memory").
 */
#ifndef OVRDMA_CLIENT_H
#define OVRDMA_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ovrdma/ctl.h>
#include <ovrdma/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ovr_cl;
struct ovr_cl_cq;
struct ovr_cl_qp;
struct ovr_cl_srq;

struct ovr_cl_mr {
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
	void *addr;
	size_t length;
};

/*
 * Work requests, in the verbs' shape: ovr_cl_sge is laid out as struct
 * ibv_sge (the provider hands scatter lists over as they are; it checks
 * that with static_asserts) and as the ring's struct ovr_ring_sge.
 */
struct ovr_cl_sge {
	uint64_t addr; /* application virtual address */
	uint32_t length;
	uint32_t lkey;
};

struct ovr_cl_send_wr {
	uint64_t wr_id;
	uint32_t opcode; /* enum ovr_wr_opcode */
	uint32_t send_flags; /* enum ovr_send_flags */
	const struct ovr_cl_sge *sg_list;
	uint32_t num_sge;
	uint32_t imm_data; /* passed through untouched (verbs: big-endian) */
	uint32_t invalidate_rkey; /* SEND_WITH_INV */
	uint32_t rkey; /* WRITE*, READ, atomics */
	uint64_t remote_addr;
	uint64_t compare_add; /* CMP_AND_SWP: compare; FETCH_AND_ADD: add */
	uint64_t swap;
	/* UD only (ibv_send_wr.wr.ud) */
	uint64_t ud_peer; /* the AH handle (ovr_cl_create_ah) */
	uint32_t remote_qpn;
	uint32_t remote_qkey; /* bit 31 set: use the QP's own qkey */
	/* BIND_MW (ibv_send_wr.bind_mw; LOCAL_INV takes invalidate_rkey):
	 * the window's current rkey, the rkey it gets (low 8 bits), the
	 * region's lkey, the rights (OVR_ACCESS_*), the range */
	struct {
		uint32_t mw_rkey;
		uint32_t rkey;
		uint32_t mr_lkey;
		uint32_t access;
		uint64_t addr;
		uint64_t length;
	} bind_mw;
};

struct ovr_cl_recv_wr {
	uint64_t wr_id;
	const struct ovr_cl_sge *sg_list;
	uint32_t num_sge;
};

struct ovr_cl_wc {
	uint64_t wr_id;
	uint32_t status; /* enum ovr_wc_status */
	uint32_t opcode; /* enum ovr_wc_opcode */
	uint32_t byte_len;
	uint32_t imm_data;
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;
	uint32_t vendor_err;
	uint32_t ts_us; /* the service's timestamp (ring.h, ts_us) */
	uint64_t qp_user; /* the QP's user_handle */
};

/*
 * Connects and says HELLO. @path: NULL for $OVRDMA_SOCKET or
 * OVR_CTL_SOCK_DEFAULT. @name: shown by ovrdmactl.
 */
struct ovr_cl *ovr_cl_connect(const char *path, const char *name);
/* Destroys everything the connection created (the service does too). */
void ovr_cl_close(struct ovr_cl *cl);

/* Makes the connection an rdma_cm event channel (OVR_CTL_CM_OPEN): the
 * service writes struct ovr_ctl_cm_event records to @ev_fd (a
 * SOCK_SEQPACKET end, passed; the caller keeps its own copy). 0 or
 * -errno; then CM commands go through ovr_cl_request(OVR_CTL_CM). */
int ovr_cl_cm_open(struct ovr_cl *cl, int ev_fd);

/* Devices: fills up to @max, returns how many exist or -errno. */
int ovr_cl_list(struct ovr_cl *cl, struct ovr_ctl_dev *devs, unsigned int max);
/* Binds the connection to device @name (once). */
int ovr_cl_open(struct ovr_cl *cl, const char *name, struct ovr_ctl_dev *dev);
/* Reads struct ovr_ctl_async_event records; OVR_EV_DEVICE_FATAL with
 * element 0 when the service died. */
int ovr_cl_async_fd(const struct ovr_cl *cl);
/* false once the service is known to be gone. */
bool ovr_cl_alive(struct ovr_cl *cl);

int ovr_cl_alloc_pd(struct ovr_cl *cl, uint32_t *pd);
int ovr_cl_dealloc_pd(struct ovr_cl *cl, uint32_t pd);

/*
 * Registers [addr, addr + len) with @access (enum ovr_access; other
 * verbs bits pass to the service, which ignores HUGETLB and
 * RELAXED_ORDERING). The route follows /proc/self/maps (docs/SERVICE.md
 * section 4). With OVR_ACCESS_ON_DEMAND: on-demand paging, always the
 * process route, the range need not be mapped; @addr NULL and @len
 * SIZE_MAX register the whole address space (implicit).
 */
struct ovr_cl_mr *ovr_cl_reg_mr(struct ovr_cl *cl, uint32_t pd, void *addr,
				size_t len, unsigned int access);
int ovr_cl_dereg_mr(struct ovr_cl *cl, struct ovr_cl_mr *mr);
/*
 * ibv_rereg_mr's CHANGE_PD / CHANGE_ACCESS in place (@flags: enum
 * ovr_ctl_rereg_flags), keys kept; OVR_CTL_REREG_INVALIDATE: make the
 * region unusable. On a failure the region is unusable (ctl.h,
 * REREG_MR); deregister it as usual either way.
 */
int ovr_cl_rereg_mr(struct ovr_cl *cl, struct ovr_cl_mr *mr, unsigned int flags,
		    uint32_t pd, unsigned int access);

/*
 * Memory windows (OVR_CTL_ALLOC_MW): one of @type (enum ovr_mw_type) in
 * @pd; 0 and its handle and rkey, or -errno (-EINVAL another type,
 * -ENOENT no such PD, -ENOSPC none left). Bound and invalidated by send
 * WRs (OVR_WR_BIND_MW, OVR_WR_LOCAL_INV).
 */
int ovr_cl_alloc_mw(struct ovr_cl *cl, uint32_t pd, unsigned int type,
		    uint32_t *handle, uint32_t *rkey);
int ovr_cl_dealloc_mw(struct ovr_cl *cl, uint32_t handle);

struct ovr_gdr_export;
/*
 * GPU memory (docs/GPU.md): register [iova, iova + len), whose bytes lie
 * at @offset of the allocation @ex exported with gdr/ (ovr_gdr_export;
 * an fd in it is sent, not closed). NULL and errno as REG_MR_GPU's
 * status says (EOPNOTSUPP: the service has no CUDA driver).
 */
struct ovr_cl_mr *ovr_cl_reg_mr_gpu(struct ovr_cl *cl, uint32_t pd,
				    uint64_t iova, size_t len,
				    unsigned int access,
				    const struct ovr_gdr_export *ex,
				    uint64_t offset);

/* A completion channel: *@fd reads struct ovr_ctl_comp_event records. */
int ovr_cl_create_channel(struct ovr_cl *cl, uint32_t *channel, int *fd);
int ovr_cl_destroy_channel(struct ovr_cl *cl, uint32_t channel);

struct ovr_cl_cq *ovr_cl_create_cq(struct ovr_cl *cl, uint32_t cqe,
				   uint32_t channel, uint64_t user_handle);
/* @events (or NULL): the asynchronous events the service wrote for the
 * object (QP, CQ, SRQ) to the async pipe over its life, final once the
 * service destroyed it: libibverbs' ibv_ack_async_event touches the
 * ibv_* object of each, so the provider keeps it until all are acked. */
int ovr_cl_destroy_cq(struct ovr_cl *cl, struct ovr_cl_cq *cq,
		      uint32_t *events);
/* Completions the CQ holds before it overflows (at least what was asked). */
uint32_t ovr_cl_cq_depth(const struct ovr_cl_cq *cq);
int ovr_cl_poll_cq(struct ovr_cl_cq *cq, int n, struct ovr_cl_wc *wc);
/*
 * ibv_resize_cq: at least @cqe entries (ovr_cl_cq_depth says how many),
 * the completions held kept in order. -EINVAL: @cqe 0, beyond the
 * largest CQ or below the completions held; -ENOMEM: beyond the
 * context's CQ memory. Polls and arms of the CQ in other threads wait
 * meanwhile (the CQ's lock).
 */
int ovr_cl_resize_cq(struct ovr_cl *cl, struct ovr_cl_cq *cq, uint32_t cqe);
int ovr_cl_req_notify_cq(struct ovr_cl_cq *cq, bool solicited_only);

struct ovr_cl_qp *ovr_cl_create_qp(struct ovr_cl *cl, uint32_t pd,
				   struct ovr_cl_cq *send_cq,
				   struct ovr_cl_cq *recv_cq,
				   const struct ovr_ctl_qp_cap *cap,
				   bool sq_sig_all, uint64_t user_handle);
/*
 * The general form: @srq (or NULL) gives the QP its receives (then
 * cap->max_recv_* are ignored and ovr_cl_post_recv is EINVAL);
 * @qp_type OVR_QPT_RC, OVR_QPT_UC or OVR_QPT_UD.
 */
struct ovr_cl_qp *ovr_cl_create_qp_ex(struct ovr_cl *cl, uint32_t pd,
				      struct ovr_cl_cq *send_cq,
				      struct ovr_cl_cq *recv_cq,
				      struct ovr_cl_srq *srq, uint32_t qp_type,
				      const struct ovr_ctl_qp_cap *cap,
				      bool sq_sig_all, uint64_t user_handle);
uint32_t ovr_cl_qp_num(const struct ovr_cl_qp *qp);
void ovr_cl_qp_cap(const struct ovr_cl_qp *qp, struct ovr_ctl_qp_cap *cap);
int ovr_cl_modify_qp(struct ovr_cl *cl, struct ovr_cl_qp *qp,
		     const struct ovr_ctl_qp_attr *attr, unsigned int mask);
/*
 * RESET -> INIT -> RTR -> RTS for an RC QP of device @dev towards QP
 * @dqpn at the peer's vIP @dvip (GID ::ffff:dvip), with @access remote
 * rights, PSNs 0, the device's MTU, 16 reads/atomics each way, timeout
 * 14, retry_cnt and rnr_retry 7: what the tests and benchmarks connect
 * with. 0, or the first failing modify's negative errno; @what (if not
 * NULL) names the step that failed.
 */
int ovr_cl_connect_rc(struct ovr_cl *cl, struct ovr_cl_qp *qp,
		      const struct ovr_ctl_dev *dev, uint32_t dqpn,
		      uint32_t dvip, uint32_t access, const char **what);
int ovr_cl_query_qp(struct ovr_cl *cl, struct ovr_cl_qp *qp,
		    struct ovr_ctl_qp_attr *attr);
int ovr_cl_qp_stats(struct ovr_cl *cl, struct ovr_cl_qp *qp,
		    struct ovr_ctl_qp_stats_rep *st);
int ovr_cl_destroy_qp(struct ovr_cl *cl, struct ovr_cl_qp *qp,
		      uint32_t *events);

/*
 * On a UD QP, wr->ud_peer is the AH handle (ovr_cl_create_ah),
 * wr->remote_qpn and wr->remote_qkey the destination QP and its Q_Key
 * (bit 31 set: the QP's own); only SEND and SEND_WITH_IMM.
 */
int ovr_cl_post_send(struct ovr_cl_qp *qp, const struct ovr_cl_send_wr *wr);
/*
 * A batch of send WRs that the service sees all at once (verbs'
 * ibv_wr_start / ibv_wr_complete / ibv_wr_abort). ovr_cl_send_start
 * takes the QP's send side until ovr_cl_send_complete or
 * ovr_cl_send_abort (so no other thread posts to the QP meanwhile, and
 * this thread must not call ovr_cl_post_send on it: a spinlock);
 * ovr_cl_send_add writes one WR into the ring behind the batch's
 * earlier ones, with ovr_cl_post_send's checks and return values, and
 * does not make it visible (a refused WR leaves the batch as it was);
 * ovr_cl_send_complete publishes the batch (one store of the producer
 * index, one doorbell: no syscall while the service is awake);
 * ovr_cl_send_abort forgets it. ovr_cl_post_send is a batch of one.
 */
void ovr_cl_send_start(struct ovr_cl_qp *qp);
int ovr_cl_send_add(struct ovr_cl_qp *qp, const struct ovr_cl_send_wr *wr);
void ovr_cl_send_complete(struct ovr_cl_qp *qp);
void ovr_cl_send_abort(struct ovr_cl_qp *qp);
int ovr_cl_post_recv(struct ovr_cl_qp *qp, const struct ovr_cl_recv_wr *wr);

/*
 * Shared receive queues. @attr->max_wr / max_sge as ibv_create_srq
 * (srq_limit ignored); ovr_cl_srq_attr gives what was granted. Their
 * receives complete on the recv CQ of the QP that took them, with its
 * qp_num and qp_user. SRQ_LIMIT_REACHED (15) arrives on the async fd
 * with @user_handle as the element. modify: @mask = OVR_SRQ_LIMIT
 * arms the limit, OVR_SRQ_MAX_WR grows max_wr (up to 4x what create
 * granted, at most 16384).
 */
struct ovr_cl_srq *ovr_cl_create_srq(struct ovr_cl *cl, uint32_t pd,
				     const struct ovr_ctl_srq_attr *attr,
				     uint64_t user_handle);
void ovr_cl_srq_attr(const struct ovr_cl_srq *srq,
		     struct ovr_ctl_srq_attr *attr);
uint32_t ovr_cl_srq_num(const struct ovr_cl_srq *srq);
int ovr_cl_modify_srq(struct ovr_cl *cl, struct ovr_cl_srq *srq,
		      const struct ovr_ctl_srq_attr *attr, unsigned int mask);
int ovr_cl_query_srq(struct ovr_cl *cl, struct ovr_cl_srq *srq,
		     struct ovr_ctl_srq_attr *attr);
/* -EBUSY while a QP uses it. */
int ovr_cl_destroy_srq(struct ovr_cl *cl, struct ovr_cl_srq *srq,
		       uint32_t *events);
int ovr_cl_post_srq_recv(struct ovr_cl_srq *srq,
			 const struct ovr_cl_recv_wr *wr);

/* Address handles for UD sends: @attr->pd is the PD, dgid ::ffff:<vIP>
 * of the device's tenant, is_global 1. */
int ovr_cl_create_ah(struct ovr_cl *cl,
		     const struct ovr_ctl_create_ah_req *attr, uint32_t *ah);
int ovr_cl_destroy_ah(struct ovr_cl *cl, uint32_t ah);

/* UD QP @qp joins (@attach) or leaves multicast group @gid (ATTACH_MCAST /
 * DETACH_MCAST in ctl.h; @flags: OVR_CTL_MCAST_*). 0 or -errno. */
int ovr_cl_mcast(struct ovr_cl *cl, const struct ovr_cl_qp *qp, bool attach,
		 const uint8_t gid[16], uint32_t flags);

/*
 * One raw request (administration, ovrdmactl): sends @op with @body,
 * copies up to @cap bytes of the reply body into @rep. Returns the reply
 * body's length or -errno (the service's status).
 */
int ovr_cl_request(struct ovr_cl *cl, uint16_t op, const void *body, size_t len,
		   void *rep, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* OVRDMA_CLIENT_H */
