/* SPDX-License-Identifier: MIT */
/*
 * Verbs-valued constants, one spelling each, shared by every room: the
 * engine, the control protocol, the client library and the provider.
 *
 * Every value equals libibverbs' (enum ibv_wr_opcode, ibv_send_flags,
 * ibv_wc_status, ibv_wc_opcode, ibv_wc_flags, ibv_mtu, ibv_qp_state,
 * ibv_qp_type, ibv_qp_attr_mask, ibv_access_flags, ibv_srq_attr_mask,
 * ibv_event_type), so the provider passes them through unchanged; it
 * checks that with static_asserts (provider/ovrdma_verbs.c). This header
 * needs nothing from libibverbs: the service and the tests build without
 * it.
 */
#ifndef OVRDMA_VERBS_H
#define OVRDMA_VERBS_H

/* ---- work requests and completions ------------------------------------- */

enum ovr_wr_opcode {
	OVR_WR_RDMA_WRITE = 0,
	OVR_WR_RDMA_WRITE_WITH_IMM = 1,
	OVR_WR_SEND = 2,
	OVR_WR_SEND_WITH_IMM = 3,
	OVR_WR_RDMA_READ = 4,
	OVR_WR_ATOMIC_CMP_AND_SWP = 5,
	OVR_WR_ATOMIC_FETCH_AND_ADD = 6,
	OVR_WR_LOCAL_INV = 7, /* invalidate a type-2 window (or a region) */
	OVR_WR_BIND_MW = 8, /* bind a memory window (both types) */
	OVR_WR_SEND_WITH_INV = 9,
	/* IBTA 1.5's 8-byte ATOMIC WRITE (ibv_wr_atomic_write): no SGE,
	 * the 8 bytes in swap, written as they are to an 8-byte aligned
	 * target with one store; RC only */
	OVR_WR_ATOMIC_WRITE = 15,
};

/* The work requests a UC QP carries, one bit per enum ovr_wr_opcode:
 * the IB spec's UC opcodes (SENDs and RDMA WRITEs, with or without
 * immediate) and the local BIND_MW and LOCAL_INV (as mlx5; rxe binds
 * only); READ, atomics and SEND_WITH_INV are EINVAL at posting, as rxe
 * answers. */
#define OVR_UC_WR_OPCODES                                             \
	(1u << OVR_WR_RDMA_WRITE | 1u << OVR_WR_RDMA_WRITE_WITH_IMM | \
	 1u << OVR_WR_SEND | 1u << OVR_WR_SEND_WITH_IMM |             \
	 1u << OVR_WR_BIND_MW | 1u << OVR_WR_LOCAL_INV)

enum ovr_send_flags {
	OVR_SEND_FENCE = 1,
	OVR_SEND_SIGNALED = 2,
	OVR_SEND_SOLICITED = 4,
	OVR_SEND_INLINE = 8,
};

enum ovr_wc_status {
	OVR_WC_SUCCESS = 0,
	OVR_WC_LOC_LEN_ERR = 1,
	OVR_WC_LOC_QP_OP_ERR = 2,
	OVR_WC_LOC_PROT_ERR = 4,
	OVR_WC_WR_FLUSH_ERR = 5,
	OVR_WC_MW_BIND_ERR = 6,
	OVR_WC_BAD_RESP_ERR = 7,
	OVR_WC_LOC_ACCESS_ERR = 8,
	OVR_WC_REM_INV_REQ_ERR = 9,
	OVR_WC_REM_ACCESS_ERR = 10,
	OVR_WC_REM_OP_ERR = 11,
	OVR_WC_RETRY_EXC_ERR = 12,
	OVR_WC_RNR_RETRY_EXC_ERR = 13,
	OVR_WC_FATAL_ERR = 19,
	OVR_WC_GENERAL_ERR = 21,
	OVR_WC_REM_ABORT_ERR = 16, /* the peer QP terminated (TERMINATE) */
};

enum ovr_wc_opcode {
	OVR_WC_SEND = 0,
	OVR_WC_RDMA_WRITE = 1,
	OVR_WC_RDMA_READ = 2,
	OVR_WC_COMP_SWAP = 3,
	OVR_WC_FETCH_ADD = 4,
	OVR_WC_BIND_MW = 5,
	OVR_WC_LOCAL_INV = 6,
	OVR_WC_ATOMIC_WRITE = 9,
	OVR_WC_RECV = 128,
	OVR_WC_RECV_RDMA_WITH_IMM = 129,
};

enum ovr_wc_flags {
	OVR_WC_GRH = 1, /* UD: the first 40 bytes received are a GRH */
	OVR_WC_WITH_IMM = 2,
	OVR_WC_WITH_INV = 8,
	/* A receive of a message the sender marked solicited
	 * (OVR_SEND_SOLICITED, OVR_F_SE on the wire): what a solicited-only
	 * CQ arm waits for. Not an ibv_wc flag: the service strips it. */
	OVR_WC_SOLICITED = 1u << 7,
};

/* A UD receive buffer starts with this many bytes of GRH. */
#define OVR_GRH_LEN 40

/* IBV_MTU_256 .. IBV_MTU_4096 */
enum ovr_mtu {
	OVR_MTU_256 = 1,
	OVR_MTU_512 = 2,
	OVR_MTU_1024 = 3,
	OVR_MTU_2048 = 4,
	OVR_MTU_4096 = 5,
};

/* ---- queue pairs -------------------------------------------------------- */

/* = enum ibv_qp_state */
enum ovr_qp_state {
	OVR_QPS_RESET = 0,
	OVR_QPS_INIT = 1,
	OVR_QPS_RTR = 2,
	OVR_QPS_RTS = 3,
	OVR_QPS_SQD = 4,
	OVR_QPS_SQE = 5,
	OVR_QPS_ERR = 6,
};

/* = IBV_QPT_RC / IBV_QPT_UC / IBV_QPT_UD; the types the engine runs */
enum ovr_qp_type {
	OVR_QPT_RC = 2,
	OVR_QPT_UC = 3,
	OVR_QPT_UD = 4,
};

/* = enum ibv_qp_attr_mask, up to IBV_QP_DEST_QPN */
enum ovr_qp_attr_mask {
	OVR_QP_STATE = 1 << 0,
	OVR_QP_CUR_STATE = 1 << 1,
	OVR_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	OVR_QP_ACCESS_FLAGS = 1 << 3,
	OVR_QP_PKEY_INDEX = 1 << 4,
	OVR_QP_PORT = 1 << 5,
	OVR_QP_QKEY = 1 << 6,
	OVR_QP_AV = 1 << 7,
	OVR_QP_PATH_MTU = 1 << 8,
	OVR_QP_TIMEOUT = 1 << 9,
	OVR_QP_RETRY_CNT = 1 << 10,
	OVR_QP_RNR_RETRY = 1 << 11,
	OVR_QP_RQ_PSN = 1 << 12,
	OVR_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	OVR_QP_ALT_PATH = 1 << 14,
	OVR_QP_MIN_RNR_TIMER = 1 << 15,
	OVR_QP_SQ_PSN = 1 << 16,
	OVR_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	OVR_QP_PATH_MIG_STATE = 1 << 18,
	OVR_QP_CAP = 1 << 19,
	OVR_QP_DEST_QPN = 1 << 20,
};

/* Every bit above; any other bit in a mask is invalid. */
#define OVR_QP_ATTR_ALL ((1u << 21) - 1)

/* ---- memory and shared receive queues ----------------------------------- */

/* = IBV_ACCESS_* (the ones ovrdma grants) */
enum ovr_access {
	OVR_ACCESS_LOCAL_WRITE = 1,
	OVR_ACCESS_REMOTE_WRITE = 2,
	OVR_ACCESS_REMOTE_READ = 4,
	OVR_ACCESS_REMOTE_ATOMIC = 8,
	/* a region windows may be bound to (ibv_bind_mw, IBV_WR_BIND_MW) */
	OVR_ACCESS_MW_BIND = 16,
	/* not a right: how the region is registered, on demand (the
	 * client sends it as OVR_CTL_MR_ODP; docs/SERVICE.md, "On-demand
	 * paging") */
	OVR_ACCESS_ON_DEMAND = 64,
};

#define OVR_ACCESS_ALL                                      \
	(OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE | \
	 OVR_ACCESS_REMOTE_READ | OVR_ACCESS_REMOTE_ATOMIC)
#define OVR_ACCESS_REMOTE                                   \
	(OVR_ACCESS_REMOTE_WRITE | OVR_ACCESS_REMOTE_READ | \
	 OVR_ACCESS_REMOTE_ATOMIC)

/* = enum ibv_mw_type */
enum ovr_mw_type {
	OVR_MW_TYPE_1 = 1,
	OVR_MW_TYPE_2 = 2,
};

/* = enum ibv_srq_attr_mask */
enum ovr_srq_attr_mask {
	OVR_SRQ_MAX_WR = 1 << 0,
	OVR_SRQ_LIMIT = 1 << 1,
};

/* ---- asynchronous events (= enum ibv_event_type) ------------------------ */

enum ovr_event {
	OVR_EV_CQ_ERR = 0, /* the CQ overflowed */
	OVR_EV_QP_FATAL = 1,
	OVR_EV_QP_REQ_ERR = 2,
	OVR_EV_QP_ACCESS_ERR = 3,
	OVR_EV_COMM_EST = 4,
	OVR_EV_SQ_DRAINED = 5,
	OVR_EV_DEVICE_FATAL = 8, /* the service is gone */
	/* through the engine's ops->srq_event: fewer receives than the
	 * armed limit */
	OVR_EV_SRQ_LIMIT_REACHED = 15,
	/* a QP that takes its receives from an SRQ went to ERROR and every
	 * receive it had taken has completed (flushed) */
	OVR_EV_QP_LAST_WQE_REACHED = 16,
};

/* ---- connection manager (= enum rdma_cm_event_type, librdmacm) ------ */

enum ovr_cm_event {
	OVR_CM_EV_ADDR_RESOLVED = 0,
	OVR_CM_EV_ADDR_ERROR = 1,
	OVR_CM_EV_ROUTE_RESOLVED = 2,
	OVR_CM_EV_ROUTE_ERROR = 3,
	OVR_CM_EV_CONNECT_REQUEST = 4,
	OVR_CM_EV_CONNECT_RESPONSE = 5,
	OVR_CM_EV_CONNECT_ERROR = 6,
	OVR_CM_EV_UNREACHABLE = 7,
	OVR_CM_EV_REJECTED = 8,
	OVR_CM_EV_ESTABLISHED = 9,
	OVR_CM_EV_DISCONNECTED = 10,
	OVR_CM_EV_DEVICE_REMOVAL = 11,
	OVR_CM_EV_MULTICAST_JOIN = 12,
	OVR_CM_EV_MULTICAST_ERROR = 13,
	OVR_CM_EV_TIMEWAIT_EXIT = 15,
};

/* = enum rdma_port_space */
enum ovr_cm_ps {
	OVR_CM_PS_IPOIB = 0x0002,
	OVR_CM_PS_IB = 0x013f,
	OVR_CM_PS_TCP = 0x0106,
	OVR_CM_PS_UDP = 0x0111,
};

/* The Q_Key of RDMA_PS_UDP ids (librdmacm's RDMA_UDP_QKEY) */
#define OVR_CM_UDP_QKEY 0x01234567u

/* IB CM reject reasons (IBTA 12.6.7.2) that ovrdma gives */
enum ovr_cm_rej_reason {
	OVR_CM_REJ_TIMEOUT = 4, /* the peer gave up waiting for us */
	OVR_CM_REJ_CONSUMER = 28, /* the application rejected */
	OVR_CM_REJ_INVALID_SERVICE_ID = 8, /* no listener on that port */
	OVR_CM_REJ_STALE_CONN = 10, /* the peer's id is gone */
};

#endif /* OVRDMA_VERBS_H */
