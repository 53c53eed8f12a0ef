// SPDX-License-Identifier: MIT
/*
 * The extended QP API of the ovrdma provider (docs/PROVIDER.md, "The
 * extended QP API"): ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
 * and the ibv_wr_* functions of struct ibv_qp_ex (ibv_wr_post(3)),
 * on the rings ibv_post_send uses, in the same WQE format.
 *
 * The model: ibv_wr_start takes the QP's send side in libovr_client
 * (ovr_cl_send_start: its spinlock, as mlx5 and rxe take theirs). A WR
 * builder (wr_send, wr_rdma_write, ...) starts a WR in struct ovrdma_qpx;
 * its setters (SGEs, inline data, UD address) may follow in any order,
 * so the WR is complete only when the next builder or wr_complete comes:
 * then it is checked as ibv_post_send checks one (ovrdma_send_wr_check)
 * and written into the ring behind the batch's earlier ones
 * (ovr_cl_send_add), where the service does not look yet. wr_complete
 * publishes the batch with one producer-index store and one doorbell
 * (no system call while ovrdmad is awake); wr_abort forgets it.
 *
 * Errors: the builders and setters return nothing (ibv_wr_post(3)); the
 * first error of a batch is kept, what follows is ignored, and
 * wr_complete returns it and discards the whole batch - nothing of it
 * reaches the service. The errno is ibv_post_send's for the same WR:
 * EINVAL for a bad WR (SGE count above max_send_sge, inline data above
 * max_inline_data, an operation not asked for in send_ops_flags, a UD
 * WR without an AH, an atomic whose SGE is not 8 bytes, the QP not in
 * RTS, SQD or ERROR), ENOMEM when the batch would hold more WRs than
 * max_send_wr leaves room for, EIO when ovrdmad is gone.
 *
 * Copies: the setters copy what they are given (SGE lists into sge[],
 * inline data into inl[]), so the caller may reuse its arrays and, for
 * inline data, its buffer as soon as the setter returns; the client
 * copies them again into the WQE (at most 16 SGEs, 512 bytes).
 *
 * Threads: between wr_start and wr_complete / wr_abort the QP's send
 * side is this thread's; struct ovrdma_qpx is used only there.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/ring.h>

#include "ovrdma_verbs.h"

/* What ibv_create_qp_ex takes: comp_mask bits, send operations per QP
 * type, create flags. TSO is refused: no raw packets. */
#define QPX_COMP_MASK                                          \
	(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | \
	 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
#define QPX_RC_OPS                                                            \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |     \
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |                 \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |       \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV | \
	 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV |                  \
	 IBV_QP_EX_WITH_ATOMIC_WRITE)
#define QPX_UD_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
/* UC: SENDs and WRITEs, as the IB spec's UC opcodes, and the local
 * BIND_MW and LOCAL_INV (as mlx5) */
#define QPX_UC_OPS                                                        \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |             \
	 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)
/* UD: a QP attached to a group may ask not to hear its own sends to it */
#define QPX_UD_CREATE_FLAGS IBV_QP_CREATE_BLOCK_SELF_MCAST_LB

/* The WR being built and the batch's first error; owned by the thread
 * between wr_start and wr_complete / wr_abort. */
struct ovrdma_qpx {
	/* hot: the WR being built */
	struct ovr_cl_send_wr wr; /* sg_list points into sge[] or inl[] */
	bool open; /* wr holds a WR not added yet */
	bool ud;
	int err; /* the batch's first error, 0 */
	uint64_t ops; /* send_ops_flags granted */
	struct ovr_cl_sge sge[OVR_RING_SQ_MAX_SGE];
	uint8_t inl[OVR_RING_MAX_INLINE];
};

static inline void qpx_fail(struct ovrdma_qpx *x, int err)
{
	if (!x->err)
		x->err = err;
}

/* Adds the WR built so far to the batch (nothing after an error). */
static void qpx_flush(struct ovrdma_qp *qp)
{
	struct ovrdma_qpx *x = qp->x;

	if (!x->open)
		return;
	x->open = false;
	if (x->err)
		return;
	x->err = ovrdma_send_wr_check(&x->wr, x->ud);
	if (!x->err)
		x->err = ovr_cl_send_add(qp->qp, &x->wr);
}

/* A builder: the previous WR goes in, a new one of @opcode starts with
 * qp_ex's wr_id and wr_flags (IBV_SEND_INLINE there is ignored: inline
 * is what the inline setters make a WR). */
static struct ovrdma_qpx *qpx_begin(struct ibv_qp_ex *ibqpx, uint32_t opcode,
				    uint64_t op)
{
	struct ovrdma_qp *qp = to_oqp_ex(ibqpx);
	struct ovrdma_qpx *x = qp->x;

	qpx_flush(qp);
	x->wr = (struct ovr_cl_send_wr){
		.wr_id = ibqpx->wr_id,
		.opcode = opcode,
		.send_flags = ibqpx->wr_flags & ~(unsigned int)IBV_SEND_INLINE,
	};
	x->open = true;
	if (!(x->ops & op))
		qpx_fail(x, EINVAL); /* not asked for at create */
	return x;
}

/* A setter: the WR it belongs to, or NULL (nothing to do). */
static struct ovrdma_qpx *qpx_cur(struct ibv_qp_ex *ibqpx)
{
	struct ovrdma_qpx *x = to_oqp_ex(ibqpx)->x;

	if (x->err)
		return NULL;
	if (!x->open) { /* a setter without a builder */
		qpx_fail(x, EINVAL);
		return NULL;
	}
	return x;
}

/* ---- the critical region ------------------------------------------------- */

static void qpx_start(struct ibv_qp_ex *ibqpx)
{
	struct ovrdma_qp *qp = to_oqp_ex(ibqpx);

	ovr_cl_send_start(qp->qp);
	qp->x->open = false;
	qp->x->err = 0;
}

static int qpx_complete(struct ibv_qp_ex *ibqpx)
{
	struct ovrdma_qp *qp = to_oqp_ex(ibqpx);
	int err;

	qpx_flush(qp);
	err = qp->x->err;
	if (err)
		ovr_cl_send_abort(qp->qp); /* the whole batch */
	else
		ovr_cl_send_complete(qp->qp);
	return err;
}

static void qpx_abort(struct ibv_qp_ex *ibqpx)
{
	struct ovrdma_qp *qp = to_oqp_ex(ibqpx);

	qp->x->open = false;
	ovr_cl_send_abort(qp->qp);
}

/* ---- builders ------------------------------------------------------------- */

static void qpx_send(struct ibv_qp_ex *ibqpx)
{
	qpx_begin(ibqpx, IBV_WR_SEND, IBV_QP_EX_WITH_SEND);
}

static void qpx_send_imm(struct ibv_qp_ex *ibqpx, __be32 imm_data)
{
	struct ovrdma_qpx *x = qpx_begin(ibqpx, IBV_WR_SEND_WITH_IMM,
					 IBV_QP_EX_WITH_SEND_WITH_IMM);

	x->wr.imm_data = imm_data;
}

static void qpx_send_inv(struct ibv_qp_ex *ibqpx, uint32_t invalidate_rkey)
{
	struct ovrdma_qpx *x = qpx_begin(ibqpx, IBV_WR_SEND_WITH_INV,
					 IBV_QP_EX_WITH_SEND_WITH_INV);

	x->wr.invalidate_rkey = invalidate_rkey;
}

static void qpx_rdma_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			   uint64_t remote_addr)
{
	struct ovrdma_qpx *x =
		qpx_begin(ibqpx, IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE);

	x->wr.rkey = rkey;
	x->wr.remote_addr = remote_addr;
}

static void qpx_rdma_write_imm(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			       uint64_t remote_addr, __be32 imm_data)
{
	struct ovrdma_qpx *x = qpx_begin(ibqpx, IBV_WR_RDMA_WRITE_WITH_IMM,
					 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);

	x->wr.rkey = rkey;
	x->wr.remote_addr = remote_addr;
	x->wr.imm_data = imm_data;
}

static void qpx_rdma_read(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			  uint64_t remote_addr)
{
	struct ovrdma_qpx *x =
		qpx_begin(ibqpx, IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ);

	x->wr.rkey = rkey;
	x->wr.remote_addr = remote_addr;
}

static void qpx_atomic_cmp_swp(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			       uint64_t remote_addr, uint64_t compare,
			       uint64_t swap)
{
	struct ovrdma_qpx *x = qpx_begin(ibqpx, IBV_WR_ATOMIC_CMP_AND_SWP,
					 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP);

	x->wr.rkey = rkey;
	x->wr.remote_addr = remote_addr;
	x->wr.compare_add = compare;
	x->wr.swap = swap;
}

static void qpx_atomic_fetch_add(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				 uint64_t remote_addr, uint64_t add)
{
	struct ovrdma_qpx *x = qpx_begin(ibqpx, IBV_WR_ATOMIC_FETCH_AND_ADD,
					 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);

	x->wr.rkey = rkey;
	x->wr.remote_addr = remote_addr;
	x->wr.compare_add = add;
}

/* ibv_wr_bind_mw: a type-2 window (a type-1 one is bound through
 * ibv_bind_mw) to @info with @rkey; the checks are ibv_post_send's */
static void qpx_bind_mw(struct ibv_qp_ex *ibqpx, struct ibv_mw *mw,
			uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	struct ovrdma_qpx *x =
		qpx_begin(ibqpx, IBV_WR_BIND_MW, IBV_QP_EX_WITH_BIND_MW);

	if (!mw || !info)
		qpx_fail(x, EINVAL);
	else
		qpx_fail(x, ovrdma_bind_wr(&x->wr, mw, rkey, info));
}

static void qpx_local_inv(struct ibv_qp_ex *ibqpx, uint32_t invalidate_rkey)
{
	struct ovrdma_qpx *x =
		qpx_begin(ibqpx, IBV_WR_LOCAL_INV, IBV_QP_EX_WITH_LOCAL_INV);

	x->wr.invalidate_rkey = invalidate_rkey;
}

/* Not carried (refused at create, should a caller reach them anyway). */
static void qpx_send_tso(struct ibv_qp_ex *ibqpx, void *hdr, uint16_t hdr_sz,
			 uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	qpx_begin(ibqpx, IBV_WR_TSO, 0);
}

/* ibv_wr_atomic_write: the 8 bytes at @atomic_wr, as they are, to the
 * 8-byte aligned @remote_addr with one store (IBTA 1.5's ATOMIC WRITE;
 * the region needs IBV_ACCESS_REMOTE_WRITE) */
static void qpx_atomic_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			     uint64_t remote_addr, const void *atomic_wr)
{
	struct ovrdma_qpx *x = qpx_begin(ibqpx, IBV_WR_ATOMIC_WRITE,
					 IBV_QP_EX_WITH_ATOMIC_WRITE);

	x->wr.rkey = rkey;
	x->wr.remote_addr = remote_addr;
	memcpy(&x->wr.swap, atomic_wr, 8);
}

/* ---- setters -------------------------------------------------------------- */

static void qpx_set_sge(struct ibv_qp_ex *ibqpx, uint32_t lkey, uint64_t addr,
			uint32_t length)
{
	struct ovrdma_qpx *x = qpx_cur(ibqpx);

	if (!x)
		return;
	x->sge[0] = (struct ovr_cl_sge){ .addr = addr,
					 .length = length,
					 .lkey = lkey };
	x->wr.sg_list = x->sge;
	x->wr.num_sge = 1;
	x->wr.send_flags &= ~(unsigned int)IBV_SEND_INLINE;
}

static void qpx_set_sge_list(struct ibv_qp_ex *ibqpx, size_t num_sge,
			     const struct ibv_sge *sg_list)
{
	struct ovrdma_qpx *x = qpx_cur(ibqpx);

	if (!x)
		return;
	/* above max_send_sge: ibv_post_send's EINVAL (the client checks
	 * the QP's own limit) */
	if (num_sge > OVR_RING_SQ_MAX_SGE || (num_sge && !sg_list)) {
		qpx_fail(x, EINVAL);
		return;
	}
	for (size_t i = 0; i < num_sge; i++)
		x->sge[i] = (struct ovr_cl_sge){ .addr = sg_list[i].addr,
						 .length = sg_list[i].length,
						 .lkey = sg_list[i].lkey };
	x->wr.sg_list = x->sge;
	x->wr.num_sge = (uint32_t)num_sge;
	x->wr.send_flags &= ~(unsigned int)IBV_SEND_INLINE;
}

static void qpx_set_inline_data_list(struct ibv_qp_ex *ibqpx, size_t num_buf,
				     const struct ibv_data_buf *buf_list)
{
	struct ovrdma_qp *qp = to_oqp_ex(ibqpx);
	struct ovrdma_qpx *x = qpx_cur(ibqpx);
	size_t total = 0, max;

	if (!x)
		return;
	max = qp->cap.max_inline_data < sizeof(x->inl) ?
		      qp->cap.max_inline_data :
		      sizeof(x->inl);
	for (size_t i = 0; i < num_buf; i++) {
		size_t len = buf_list[i].length;

		/* inline above max_inline_data: ibv_post_send's EINVAL */
		if (len > max - total) {
			qpx_fail(x, EINVAL);
			return;
		}
		if (len)
			memcpy(x->inl + total, buf_list[i].addr, len);
		total += len;
	}
	/* one SGE over the copy: the client copies it into the WQE */
	x->sge[0] = (struct ovr_cl_sge){ .addr = (uint64_t)(uintptr_t)x->inl,
					 .length = (uint32_t)total };
	x->wr.sg_list = x->sge;
	x->wr.num_sge = 1;
	x->wr.send_flags |= IBV_SEND_INLINE;
}

static void qpx_set_inline_data(struct ibv_qp_ex *ibqpx, void *addr,
				size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	qpx_set_inline_data_list(ibqpx, 1, &b);
}

static void qpx_set_ud_addr(struct ibv_qp_ex *ibqpx, struct ibv_ah *ah,
			    uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct ovrdma_qpx *x = qpx_cur(ibqpx);

	if (!x)
		return;
	/* no AH: ud_peer stays 0, refused as ibv_post_send refuses it */
	x->wr.ud_peer = ah ? to_oah(ah)->handle : 0;
	x->wr.remote_qpn = remote_qpn;
	x->wr.remote_qkey = remote_qkey;
}

static void qpx_set_xrc_srqn(struct ibv_qp_ex *ibqpx, uint32_t remote_srqn)
{
	struct ovrdma_qpx *x = qpx_cur(ibqpx);

	(void)remote_srqn;
	if (x)
		qpx_fail(x, EINVAL); /* no XRC */
}

/* ---- creation ------------------------------------------------------------- */

/* What ovrdma refuses of @attr beyond what ibv_create_qp refuses; 0 or
 * a positive errno. As rxe: what verbs has and ovrdma lacks (XRC
 * domains, TSO, RSS, send operations, create flags) EOPNOTSUPP - also
 * what rdma-core's tests take for "not supported on this device". */
static int qpx_attr_check(struct ibv_context *ibctx,
			  const struct ibv_qp_init_attr_ex *attr)
{
	uint64_t ops = 0;
	uint32_t flags = 0;

	if (attr->comp_mask & ~(uint32_t)QPX_COMP_MASK)
		return EOPNOTSUPP;
	/* RC and UD QPs belong to a PD */
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != ibctx)
		return EINVAL;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		ops = attr->send_ops_flags;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS)
		flags = attr->create_flags;
	switch (attr->qp_type) {
	case IBV_QPT_RC:
		return ops & ~(uint64_t)QPX_RC_OPS || flags ? EOPNOTSUPP : 0;
	case IBV_QPT_UD:
		return ops & ~(uint64_t)QPX_UD_OPS ||
				       flags & ~(uint32_t)QPX_UD_CREATE_FLAGS ?
			       EOPNOTSUPP :
			       0;
	case IBV_QPT_UC:
		return ops & ~(uint64_t)QPX_UC_OPS || flags ? EOPNOTSUPP : 0;
	default: /* XRC, raw packet: as ibv_create_qp */
		return EOPNOTSUPP;
	}
}

/* The ibv_qp_ex of @qp: every function, the ones for operations ovrdma
 * does not carry refusing at wr_complete rather than leaving a NULL
 * pointer to call. */
static void qpx_init(struct ovrdma_qp *qp, struct ovrdma_qpx *x, uint64_t ops)
{
	struct ibv_qp_ex *q = &qp->vqp.qp_ex;

	x->ops = ops;
	x->ud = q->qp_base.qp_type == IBV_QPT_UD;
	qp->x = x;
	q->comp_mask = 0;
	q->wr_atomic_cmp_swp = qpx_atomic_cmp_swp;
	q->wr_atomic_fetch_add = qpx_atomic_fetch_add;
	q->wr_bind_mw = qpx_bind_mw;
	q->wr_local_inv = qpx_local_inv;
	q->wr_rdma_read = qpx_rdma_read;
	q->wr_rdma_write = qpx_rdma_write;
	q->wr_rdma_write_imm = qpx_rdma_write_imm;
	q->wr_send = qpx_send;
	q->wr_send_imm = qpx_send_imm;
	q->wr_send_inv = qpx_send_inv;
	q->wr_send_tso = qpx_send_tso;
	q->wr_set_ud_addr = qpx_set_ud_addr;
	q->wr_set_xrc_srqn = qpx_set_xrc_srqn;
	q->wr_set_inline_data = qpx_set_inline_data;
	q->wr_set_inline_data_list = qpx_set_inline_data_list;
	q->wr_set_sge = qpx_set_sge;
	q->wr_set_sge_list = qpx_set_sge_list;
	q->wr_start = qpx_start;
	q->wr_complete = qpx_complete;
	q->wr_abort = qpx_abort;
	q->wr_atomic_write = qpx_atomic_write;
	qp->vqp.comp_mask |= OVRDMA_VERBS_QP_EX;
}

struct ibv_qp *ovrdma_create_qp_ex(struct ibv_context *ibctx,
				   struct ibv_qp_init_attr_ex *attr)
{
	struct ovrdma_qpx *x = NULL;
	struct ibv_qp *q;
	int rc = qpx_attr_check(ibctx, attr);

	if (rc) {
		errno = rc;
		return NULL;
	}
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		x = calloc(1, sizeof(*x));
		if (!x)
			return NULL;
	}
	/* ibv_qp_init_attr_ex begins with ibv_qp_init_attr's fields (as
	 * libibverbs' own ibv_create_qp_ex relies on); the capabilities
	 * granted are written back there */
	q = ovrdma_create_qp(attr->pd, (struct ibv_qp_init_attr *)attr);
	if (!q) {
		int e = errno;

		free(x);
		errno = e;
		return NULL;
	}
	if (x)
		qpx_init(to_oqp(q), x, attr->send_ops_flags);
	to_oqp(q)->mcast_no_lb =
		(attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
		(attr->create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
	return q;
}
