// SPDX-License-Identifier: MIT
/*
 * The verbs of the ovrdma provider (docs/PROVIDER.md section 4), each a
 * translation onto libovr_client (include/ovrdma/client.h): control
 * verbs become requests to ovrdmad, poll touches only the shared rings.
 * Declared, with their return conventions, in ovrdma_verbs.h; ovrdma.c's
 * ops table points at them. Here: device and port, PDs, MRs, CQs,
 * completion channels, AHs, and the end of objects with asynchronous
 * events; QPs, SRQs and posting are in ovrdma_qp.c.
 *
 * Threads: libovr_client serialises control requests on the
 * connection and keeps each QP's send side, receive side and each CQ
 * safe for concurrent callers; nothing here adds shared state.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <ovrdma/gdr.h>
#include <ovrdma/util.h>

#include "ovrdma_verbs.h"

/* include/ovrdma/verbs.h's constants are libibverbs' values: work
 * requests, completions, states and masks pass through unchanged, so
 * check every one. */
#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " != " #b)
SAME(OVR_WC_SUCCESS, IBV_WC_SUCCESS);
SAME(OVR_WC_GRH, IBV_WC_GRH);
SAME(OVR_WC_LOC_LEN_ERR, IBV_WC_LOC_LEN_ERR);
SAME(OVR_WC_LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR);
SAME(OVR_WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR);
SAME(OVR_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR);
SAME(OVR_WC_BAD_RESP_ERR, IBV_WC_BAD_RESP_ERR);
SAME(OVR_WC_LOC_ACCESS_ERR, IBV_WC_LOC_ACCESS_ERR);
SAME(OVR_WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR);
SAME(OVR_WC_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR);
SAME(OVR_WC_REM_OP_ERR, IBV_WC_REM_OP_ERR);
SAME(OVR_WC_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR);
SAME(OVR_WC_RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR);
SAME(OVR_WC_REM_ABORT_ERR, IBV_WC_REM_ABORT_ERR);
SAME(OVR_WC_FATAL_ERR, IBV_WC_FATAL_ERR);
SAME(OVR_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR);
SAME(OVR_WC_SEND, IBV_WC_SEND);
SAME(OVR_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE);
SAME(OVR_WC_RDMA_READ, IBV_WC_RDMA_READ);
SAME(OVR_WC_COMP_SWAP, IBV_WC_COMP_SWAP);
SAME(OVR_WC_FETCH_ADD, IBV_WC_FETCH_ADD);
SAME(OVR_WC_BIND_MW, IBV_WC_BIND_MW);
SAME(OVR_WC_LOCAL_INV, IBV_WC_LOCAL_INV);
SAME(OVR_WC_MW_BIND_ERR, IBV_WC_MW_BIND_ERR);
SAME(OVR_WR_LOCAL_INV, IBV_WR_LOCAL_INV);
SAME(OVR_WR_BIND_MW, IBV_WR_BIND_MW);
SAME(OVR_ACCESS_MW_BIND, IBV_ACCESS_MW_BIND);
SAME(OVR_MW_TYPE_1, IBV_MW_TYPE_1);
SAME(OVR_MW_TYPE_2, IBV_MW_TYPE_2);
SAME(OVR_WC_RECV, IBV_WC_RECV);
SAME(OVR_WC_RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM);
SAME(OVR_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE);
SAME(OVR_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM);
SAME(OVR_WR_SEND, IBV_WR_SEND);
SAME(OVR_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM);
SAME(OVR_WR_RDMA_READ, IBV_WR_RDMA_READ);
SAME(OVR_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP);
SAME(OVR_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD);
SAME(OVR_WR_SEND_WITH_INV, IBV_WR_SEND_WITH_INV);
SAME(OVR_WR_ATOMIC_WRITE, IBV_WR_ATOMIC_WRITE);
SAME(OVR_WC_ATOMIC_WRITE, IBV_WC_ATOMIC_WRITE);
SAME(OVR_SEND_FENCE, IBV_SEND_FENCE);
SAME(OVR_SEND_SIGNALED, IBV_SEND_SIGNALED);
SAME(OVR_SEND_SOLICITED, IBV_SEND_SOLICITED);
SAME(OVR_SEND_INLINE, IBV_SEND_INLINE);
SAME(OVR_WC_WITH_IMM, IBV_WC_WITH_IMM);
SAME(OVR_WC_WITH_INV, IBV_WC_WITH_INV);
SAME(OVR_MTU_256, IBV_MTU_256);
SAME(OVR_MTU_512, IBV_MTU_512);
SAME(OVR_MTU_1024, IBV_MTU_1024);
SAME(OVR_MTU_2048, IBV_MTU_2048);
SAME(OVR_MTU_4096, IBV_MTU_4096);
SAME(OVR_QPS_RESET, IBV_QPS_RESET);
SAME(OVR_QPS_INIT, IBV_QPS_INIT);
SAME(OVR_QPS_RTR, IBV_QPS_RTR);
SAME(OVR_QPS_RTS, IBV_QPS_RTS);
SAME(OVR_QPS_SQD, IBV_QPS_SQD);
SAME(OVR_QPS_SQE, IBV_QPS_SQE);
SAME(OVR_QPS_ERR, IBV_QPS_ERR);
SAME(OVR_QPT_RC, IBV_QPT_RC);
SAME(OVR_QPT_UD, IBV_QPT_UD);
SAME(OVR_QPT_UC, IBV_QPT_UC);
SAME(OVR_QP_STATE, IBV_QP_STATE);
SAME(OVR_QP_CUR_STATE, IBV_QP_CUR_STATE);
SAME(OVR_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY);
SAME(OVR_QP_ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS);
SAME(OVR_QP_PKEY_INDEX, IBV_QP_PKEY_INDEX);
SAME(OVR_QP_PORT, IBV_QP_PORT);
SAME(OVR_QP_QKEY, IBV_QP_QKEY);
SAME(OVR_QP_AV, IBV_QP_AV);
SAME(OVR_QP_PATH_MTU, IBV_QP_PATH_MTU);
SAME(OVR_QP_TIMEOUT, IBV_QP_TIMEOUT);
SAME(OVR_QP_RETRY_CNT, IBV_QP_RETRY_CNT);
SAME(OVR_QP_RNR_RETRY, IBV_QP_RNR_RETRY);
SAME(OVR_QP_RQ_PSN, IBV_QP_RQ_PSN);
SAME(OVR_QP_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC);
SAME(OVR_QP_ALT_PATH, IBV_QP_ALT_PATH);
SAME(OVR_QP_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER);
SAME(OVR_QP_SQ_PSN, IBV_QP_SQ_PSN);
SAME(OVR_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC);
SAME(OVR_QP_PATH_MIG_STATE, IBV_QP_PATH_MIG_STATE);
SAME(OVR_QP_CAP, IBV_QP_CAP);
SAME(OVR_QP_DEST_QPN, IBV_QP_DEST_QPN);
SAME(OVR_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE);
SAME(OVR_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE);
SAME(OVR_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ);
SAME(OVR_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC);
SAME(OVR_ACCESS_ON_DEMAND, IBV_ACCESS_ON_DEMAND);
SAME(OVR_SRQ_MAX_WR, IBV_SRQ_MAX_WR);
SAME(OVR_SRQ_LIMIT, IBV_SRQ_LIMIT);
SAME(OVR_EV_CQ_ERR, IBV_EVENT_CQ_ERR);
SAME(OVR_EV_QP_FATAL, IBV_EVENT_QP_FATAL);
SAME(OVR_EV_QP_REQ_ERR, IBV_EVENT_QP_REQ_ERR);
SAME(OVR_EV_QP_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
SAME(OVR_EV_COMM_EST, IBV_EVENT_COMM_EST);
SAME(OVR_EV_SQ_DRAINED, IBV_EVENT_SQ_DRAINED);
SAME(OVR_EV_DEVICE_FATAL, IBV_EVENT_DEVICE_FATAL);
SAME(OVR_EV_SRQ_LIMIT_REACHED, IBV_EVENT_SRQ_LIMIT_REACHED);
SAME(OVR_EV_QP_LAST_WQE_REACHED, IBV_EVENT_QP_LAST_WQE_REACHED);
SAME(OVR_QP_ATTR_ALL, (IBV_QP_DEST_QPN << 1) - 1);
#undef SAME

/*
 * ibv_wc.sl of a UD receive. RoCE has no service level to report, and
 * mlx5 puts the received packet's L3 header type there instead (its
 * CQE's sl bits 2:0: 0 GRH, 1 IPv6, 2 IPv4), which is what UCX's
 * ud_verbs reads to find the destination address in the 40 bytes before
 * the payload (src/uct/ib/ud/base/ud_iface.h, uct_ud_iface_check_grh:
 * with 0 it compares the last 16 bytes as an IPv6 GID and drops every
 * datagram). ovrdma's GRH is always RoCE v2's IPv4 form (vIPs are IPv4).
 */
#define OVRDMA_WC_SL_L3_IPV4 2
#define POLL_CHUNK 16

/* ---- device and port ----------------------------------------------------- */

/* ibv_port_attr.active_speed of a 4X link of @rate_bps (the codes of
 * ibv_query_port(3): 1 SDR 2.5, 2 DDR 5, 4 QDR 10, 16 FDR 14, 32 EDR 25,
 * 64 HDR 50 Gb/s per lane). */
static uint8_t lane_speed(uint64_t rate_bps)
{
	uint64_t lane = rate_bps / 4 / 1000000000ull; /* Gb/s */

	if (lane >= 50)
		return 64;
	if (lane >= 25)
		return 32;
	if (lane >= 14)
		return 16;
	if (lane >= 10)
		return 4;
	if (lane >= 5)
		return 2;
	return 1;
}

/* Does an ibv_device_attr_ex of @size bytes (an older caller's is
 * shorter) hold @field? */
#define EX_HAS(size, field)                                     \
	((size) >= offsetof(struct ibv_device_attr_ex, field) + \
			   sizeof(((struct ibv_device_attr_ex *)0)->field))

/*
 * On-demand paging (docs/PROVIDER.md, "On-demand paging"): the process
 * route reaches the application's memory as it is at each copy and
 * pins nothing, so an ODP region is a process-route region that counts
 * nothing as pinned either. Advertised when the service can take
 * the process route for this context (OVR_CTL_DEV_ODP), for what its
 * QPs carry: RC every operation and SRQ receives, UD sends and
 * receives. No UC, no XRC.
 */
#define OVRDMA_ODP_GENERAL (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT)
#define OVRDMA_ODP_RC                                                          \
	(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | \
	 IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |                       \
	 IBV_ODP_SUPPORT_SRQ_RECV)
#define OVRDMA_ODP_UD (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV)

/*
 * What ovrdma does of ibv_device_cap_flags: RNR NAKs, a system image GUID
 * (the node GUID), SRQ resizing (IBV_SRQ_MAX_WR, up to 4x what create
 * granted), and ibv_modify_qp's cur_qp_state (the engine checks it
 * against the state it knows); memory windows when the service carries
 * them (OVRDMA_DEVICE_CAP_MW). No XRC, port events, checksum offloads or
 * the rest (docs/PROVIDER.md, "Device attributes").
 */
#define OVRDMA_DEVICE_CAP_FLAGS                                  \
	(IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID | \
	 IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_CURR_QP_STATE_MOD)
/* Memory windows (docs/PROVIDER.md, "Memory windows"): type 1 and type
 * 2B (a type-2 window serves only the QP that bound it, as rxe's) */
#define OVRDMA_DEVICE_CAP_MW \
	(IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B)
/*
 * local_ca_ack_delay: 4.096 us x 2^15 = 134 ms, rxe's figure. The engine
 * acknowledges within 5 us when its thread runs, but a software device's
 * ACK waits on scheduling (an idle ovrdmad naps, a loaded machine
 * delays it), and the value only feeds timeouts computed from it.
 */
#define OVRDMA_CA_ACK_DELAY 15
/* the completion timestamps' clock: microseconds (section 4.8) */
#define OVRDMA_CLOCK_KHZ 1000

int ovrdma_query_device_ex(struct ibv_context *ibctx,
			   const struct ibv_query_device_ex_input *input,
			   struct ibv_device_attr_ex *attr, size_t attr_size)
{
	const struct ovr_ctl_dev *d = &to_octx(ibctx)->dev;
	struct ibv_device_attr *a = &attr->orig_attr;
	uint64_t res_rd;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(*a))
		return EINVAL;
	memset(attr, 0, attr_size);
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", OVR_CTL_DEV_FW_VER);
	a->node_guid = htobe64(d->guid);
	a->sys_image_guid = htobe64(d->guid);
	a->max_mr_size = d->max_mr_size;
	/* registration takes any range of pages, of any size from 4 KB */
	a->page_size_cap = ~(uint64_t)4095;
	a->vendor_id = OVR_CTL_DEV_VENDOR_ID;
	a->vendor_part_id = OVR_CTL_DEV_VENDOR_PART_ID;
	a->hw_ver = OVR_CTL_DEV_HW_VER;
	a->max_qp = (int)d->max_qp;
	a->max_qp_wr = (int)d->max_qp_wr;
	a->device_cap_flags = OVRDMA_DEVICE_CAP_FLAGS;
	if (d->caps & OVR_CTL_DEV_MW) {
		a->device_cap_flags |= OVRDMA_DEVICE_CAP_MW;
		/* one table holds regions and windows: as many of each */
		a->max_mw = (int)d->max_mr;
	}
	a->max_sge = (int)d->max_sge;
	a->max_sge_rd = (int)d->max_sge;
	a->max_cq = (int)d->max_cq;
	a->max_cqe = (int)d->max_cqe;
	a->max_mr = (int)d->max_mr;
	a->max_pd = (int)d->max_pd;
	a->max_qp_rd_atom = (int)d->max_qp_rd_atom;
	a->max_qp_init_rd_atom = (int)d->max_qp_init_rd_atom;
	res_rd = (uint64_t)d->max_qp * d->max_qp_rd_atom;
	a->max_res_rd_atom = res_rd > INT32_MAX ? INT32_MAX : (int)res_rd;
	a->atomic_cap = (enum ibv_atomic_cap)d->atomic_cap;
	a->max_srq = (int)d->max_srq;
	a->max_srq_wr = (int)d->max_srq_wr;
	a->max_srq_sge = d->max_srq ? (int)d->max_srq_sge : 0;
	a->max_ah = (int)d->max_ah;
	if (d->caps & OVR_CTL_DEV_MCAST) {
		a->max_mcast_grp = OVR_CTL_MCAST_MAX_GRP;
		a->max_mcast_qp_attach = OVR_CTL_MCAST_MAX_QP_ATTACH;
		a->max_total_mcast_qp_attach = OVR_CTL_MCAST_MAX_TOTAL;
	}
	a->max_pkeys = 1;
	a->local_ca_ack_delay = OVRDMA_CA_ACK_DELAY;
	a->phys_port_cnt = 1;
	if (EX_HAS(attr_size, odp_caps) && (d->caps & OVR_CTL_DEV_ODP)) {
		attr->odp_caps.general_caps = OVRDMA_ODP_GENERAL;
		attr->odp_caps.per_transport_caps.rc_odp_caps = OVRDMA_ODP_RC;
		attr->odp_caps.per_transport_caps.ud_odp_caps = OVRDMA_ODP_UD;
	}
	if (EX_HAS(attr_size, device_cap_flags_ex))
		attr->device_cap_flags_ex = a->device_cap_flags;
	/* completion timestamps (section 4.8): a 1 MHz clock of 32 bits,
	 * the service's CLOCK_MONOTONIC in microseconds */
	if (d->caps & OVR_CTL_DEV_CQ_TS) {
		if (EX_HAS(attr_size, completion_timestamp_mask))
			attr->completion_timestamp_mask = UINT32_MAX;
		if (EX_HAS(attr_size, hca_core_clock))
			attr->hca_core_clock = OVRDMA_CLOCK_KHZ;
	}
	/* no XRC: xrc_odp_caps stays 0; no TSO, RSS, WQs, packet pacing,
	 * raw packet QPs, tag matching, CQ moderation, device memory, PCI
	 * atomics */
	if (EX_HAS(attr_size, phys_port_cnt_ex))
		attr->phys_port_cnt_ex = a->phys_port_cnt;
	return 0;
}

int ovrdma_query_port(struct ibv_context *ibctx, uint8_t port,
		      struct ibv_port_attr *attr)
{
	const struct ovr_ctl_dev *d = &to_octx(ibctx)->dev;

	if (port != 1)
		return EINVAL;
	/* libibverbs zeroed *attr */
	attr->state = IBV_PORT_ACTIVE;
	attr->phys_state = 5; /* LinkUp */
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	/* the overlay's MTU bounds both: a PDU never exceeds it */
	attr->active_mtu = (enum ibv_mtu)d->active_mtu;
	attr->max_mtu = (enum ibv_mtu)d->active_mtu;
	attr->gid_tbl_len = 1; /* ::ffff:<vIP>, sysfs gids/0 */
	attr->pkey_tbl_len = 1;
	attr->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	attr->max_msg_sz = 1u << 31;
	attr->max_vl_num = 1;
	attr->active_width = 2; /* 4X */
	attr->active_speed = lane_speed(d->rate_bps);
	return 0;
}

/* ---- protection domains and memory -------------------------------------- */

struct ibv_pd *ovrdma_alloc_pd(struct ibv_context *ibctx)
{
	struct ovrdma_pd *pd = calloc(1, sizeof(*pd));
	int rc;

	if (!pd)
		return NULL;
	rc = ovr_cl_alloc_pd(to_octx(ibctx)->cl, &pd->handle);
	if (rc) {
		free(pd);
		errno = -rc;
		return NULL;
	}
	pd->ibv_pd.handle = pd->handle;
	return &pd->ibv_pd;
}

/*
 * ibv_dealloc_pd(3): a parent domain goes without asking the service
 * (it is only the provider's); a protection domain is refused (EBUSY)
 * while a parent domain names it, as mlx5 does, and otherwise as the
 * service says (EBUSY while its MRs, QPs, SRQs or AHs live).
 */
int ovrdma_dealloc_pd(struct ibv_pd *ibpd)
{
	struct ovrdma_pd *pd = to_opd(ibpd);
	int rc;

	if (pd->prot) {
		atomic_fetch_sub(&pd->prot->parents, 1);
		if (pd->td)
			atomic_fetch_sub(&pd->td->parents, 1);
		free(pd);
		return 0;
	}
	if (atomic_load(&pd->parents))
		return EBUSY;
	rc = ovr_cl_dealloc_pd(to_octx(ibpd->context)->cl, pd->handle);
	if (rc)
		return -rc;
	free(pd);
	return 0;
}

/*
 * Parent domains (ibv_alloc_parent_domain(3); docs/PROVIDER.md "Parent
 * and thread domains"). A parent domain is its protection domain for
 * every verb (it carries that domain's handle), with a thread domain
 * and the application's allocators attached. The allocators are kept
 * and never called: what a device reads of a QP, CQ or SRQ is, on
 * ovrdma, the ring the service allocates and maps (shared memory the
 * application's allocator cannot provide: the service cannot map its
 * private memory), and the provider has no other buffer per resource -
 * so every resource is allocated as if the allocator had answered
 * IBV_ALLOCATOR_USE_DEFAULT, which the man page allows for any of them.
 * EINVAL: no PD, a PD that is itself a parent domain, one of another
 * context, a thread domain of another context, an unknown comp_mask
 * bit, or ALLOCATORS without both functions.
 */
struct ibv_pd *
ovrdma_alloc_parent_domain(struct ibv_context *ibctx,
			   struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct ovrdma_pd *prot, *pd;

	if (!attr || !attr->pd || attr->pd->context != ibctx ||
	    (attr->comp_mask & ~known) ||
	    (attr->td && attr->td->context != ibctx) ||
	    ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	     (!attr->alloc || !attr->free))) {
		errno = EINVAL;
		return NULL;
	}
	prot = to_opd(attr->pd);
	if (prot->prot) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->prot = prot;
	pd->handle = prot->handle;
	pd->ibv_pd.context = ibctx;
	pd->ibv_pd.handle = prot->handle;
	if (attr->td) {
		pd->td = container_of(attr->td, struct ovrdma_td, ibv_td);
		atomic_fetch_add(&pd->td->parents, 1);
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	atomic_fetch_add(&prot->parents, 1);
	return &pd->ibv_pd;
}

/*
 * Thread domains (ibv_alloc_td(3)): a promise that the resources of
 * its parent domains are used by one thread at a time, which lets mlx5
 * post without its locks. ovrdma accepts the promise and does not act
 * on it: posting and polling keep their per-QP and per-CQ spinlocks
 * (client/client.c; uncontended, one atomic operation each), so a
 * thread domain changes nothing but is never refused. EINVAL: a
 * comp_mask bit (none is defined).
 */
struct ibv_td *ovrdma_alloc_td(struct ibv_context *ibctx,
			       struct ibv_td_init_attr *attr)
{
	struct ovrdma_td *td;

	if (!attr || attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td)
		return NULL;
	td->ibv_td.context = ibctx;
	return &td->ibv_td;
}

/* ibv_dealloc_td(3): EBUSY while a parent domain names it. */
int ovrdma_dealloc_td(struct ibv_td *ibtd)
{
	struct ovrdma_td *td = container_of(ibtd, struct ovrdma_td, ibv_td);

	if (atomic_load(&td->parents))
		return EBUSY;
	free(td);
	return 0;
}

#define ACCESS_SUPPORTED                                     \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |  \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
	 IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING |  \
	 IBV_ACCESS_ON_DEMAND | IBV_ACCESS_MW_BIND)

/*
 * GPU memory (docs/GPU.md). The CUDA driver is used only if the
 * application has loaded it (OVR_GDR_NOLOAD): a program with GPU
 * pointers has, one without never pays for loading it. Looked for again
 * at each registration until found (a program may initialise CUDA after
 * its first ibv_reg_mr), then kept for the life of the process.
 */
static pthread_mutex_t gdr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ovr_gdr *gdr_drv;

static struct ovr_gdr *provider_gdr(void)
{
	struct ovr_gdr *g;

	pthread_mutex_lock(&gdr_lock);
	if (!gdr_drv && ovr_gdr_open(OVR_GDR_NOLOAD, &gdr_drv, NULL, 0))
		gdr_drv = NULL;
	g = gdr_drv;
	pthread_mutex_unlock(&gdr_lock);
	return g;
}

/* ibv_reg_mr(3)'s checks; false with errno set */
static bool access_ok(size_t length, int access)
{
	/* remote write or atomic access needs local write */
	if (!length ||
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE))) {
		errno = EINVAL;
		return false;
	}
	if (access & ~ACCESS_SUPPORTED) {
		errno = EOPNOTSUPP;
		return false;
	}
	return true;
}

static struct ibv_mr *mr_done(struct ovrdma_mr *mr, int access)
{
	mr->vmr.ibv_mr.handle = mr->mr->handle;
	mr->vmr.ibv_mr.lkey = mr->mr->lkey;
	mr->vmr.ibv_mr.rkey = mr->mr->rkey;
	mr->vmr.mr_type = OVRDMA_MR_TYPE_MR;
	/* ON_DEMAND stays: ibv_dereg_mr skips ibv_dofork_range for it */
	mr->vmr.access = access;
	return &mr->vmr.ibv_mr;
}

/* ---- on-demand regions: the lkey table ibv_advise_mr looks in ----------- */

static struct ovrdma_mr **odp_bucket(struct ovrdma_context *ctx, uint32_t lkey)
{
	return &ctx->odp[lkey % OVRDMA_ODP_BUCKETS];
}

static void odp_add(struct ovrdma_context *ctx, struct ovrdma_mr *mr)
{
	struct ovrdma_mr **b = odp_bucket(ctx, mr->vmr.ibv_mr.lkey);

	pthread_mutex_lock(&ctx->odp_lock);
	mr->odp_next = *b;
	*b = mr;
	pthread_mutex_unlock(&ctx->odp_lock);
}

static void odp_del(struct ovrdma_context *ctx, struct ovrdma_mr *mr)
{
	struct ovrdma_mr **p = odp_bucket(ctx, mr->vmr.ibv_mr.lkey);

	pthread_mutex_lock(&ctx->odp_lock);
	while (*p && *p != mr)
		p = &(*p)->odp_next;
	if (*p)
		*p = mr->odp_next;
	pthread_mutex_unlock(&ctx->odp_lock);
}

/* Must hold ctx->odp_lock. O(regions / OVRDMA_ODP_BUCKETS). */
static const struct ovrdma_mr *odp_find(struct ovrdma_context *ctx,
					uint32_t lkey)
{
	const struct ovrdma_mr *mr = *odp_bucket(ctx, lkey);

	while (mr && mr->vmr.ibv_mr.lkey != lkey)
		mr = mr->odp_next;
	return mr;
}

/* [addr, addr + length) is GPU memory: export its allocation to ovrdmad,
 * which imports it and copies to and from it (no remapping here). */
static struct ibv_mr *reg_gpu_mr(struct ibv_pd *ibpd, struct ovr_gdr *g,
				 void *addr, size_t length, uint64_t iova,
				 int access)
{
	struct ovr_gdr_export ex;
	struct ovrdma_mr *mr;
	int rc, e;

	if (access & IBV_ACCESS_ON_DEMAND) {
		errno = EOPNOTSUPP; /* GPU memory is never on demand */
		return NULL;
	}
	rc = ovr_gdr_export(g, (uintptr_t)addr, length, &ex);
	if (rc) {
		fprintf(stderr, "ovrdma: cannot export GPU memory %p+%zu: %s\n",
			addr, length, ovr_gdr_last_error(g));
		errno = -rc;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (mr)
		mr->mr = ovr_cl_reg_mr_gpu(to_octx(ibpd->context)->cl,
					   to_opd(ibpd)->handle, iova, length,
					   (unsigned int)access, &ex,
					   (uintptr_t)addr - ex.base);
	e = errno;
	if (ex.fd >= 0)
		close(ex.fd); /* the service has its own copy now */
	if (!mr || !mr->mr) {
		if (mr && e == EOPNOTSUPP)
			fprintf(stderr,
				"ovrdma: GPU memory registration refused: ovrdmad has no CUDA driver (its log says why)\n");
		free(mr);
		errno = mr ? e : ENOMEM;
		return NULL;
	}
	return mr_done(mr, access);
}

/*
 * Host memory, or GPU memory (reg_gpu_mr). On demand (IBV_ACCESS_ON_DEMAND,
 * docs/PROVIDER.md "On-demand paging"): the process route whatever backs
 * the range, which need not be mapped yet; addr NULL and length SIZE_MAX
 * register the whole address space (implicit ODP), which, as mlx5, only
 * an on-demand registration may (EINVAL otherwise). ODP of GPU memory,
 * or on a context the service cannot reach by the process route:
 * EOPNOTSUPP.
 */
struct ibv_mr *ovrdma_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			     uint64_t hca_va, int access)
{
	struct ovrdma_context *ctx = to_octx(ibpd->context);
	bool odp = access & IBV_ACCESS_ON_DEMAND;
	bool implicit = !addr && length == SIZE_MAX;
	struct ovrdma_mr *mr;
	struct ovr_gdr *g;
	int gpu;

	if (!access_ok(length, access))
		return NULL;
	if (implicit && !odp) {
		errno = EINVAL;
		return NULL;
	}
	if (odp && !(ctx->dev.caps & OVR_CTL_DEV_ODP)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* GPU memory: what cuPointerGetAttribute says (any iova is fine) */
	g = implicit ? NULL : provider_gdr();
	gpu = g ? ovr_gdr_probe(g, (uintptr_t)addr, length, NULL, NULL, NULL) :
		  0;
	if (gpu < 0) {
		errno = -gpu; /* GPU memory, but not inside one allocation */
		return NULL;
	}
	if (gpu)
		return reg_gpu_mr(ibpd, g, addr, length, hca_va, access);
	/* memory windows, zero-based and IOVA-shifted host regions are
	 * not supported yet */
	if (hca_va != (uintptr_t)addr) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;
	mr->mr = ovr_cl_reg_mr(ctx->cl, to_opd(ibpd)->handle, addr, length,
			       (unsigned int)access);
	if (!mr->mr) {
		static atomic_bool said;
		int e = errno;

		/* the process route needs this process's /proc/self/mem */
		if (e == EPERM && !atomic_exchange(&said, true))
			fprintf(stderr,
				"ovrdma: ibv_reg_mr %p+%zu: private memory of a process that is not dumpable cannot be registered (it may not open /proc/self/mem, through which ovrdmad reaches it); register shared memory (memfd, shm, a MAP_SHARED file) or keep the process dumpable\n",
				addr, length);
		free(mr);
		errno = e;
		return NULL;
	}
	mr_done(mr, access);
	if (odp)
		odp_add(ctx, mr);
	return &mr->vmr.ibv_mr;
}

/*
 * dma-buf regions (docs/GPU.md). A dma-buf fd can be imported only by a
 * kernel driver, and ovrdmad needs the CUDA allocation itself, which the
 * fd does not name; but every client that registers GPU dma-bufs (NCCL,
 * UCX, perftest --use_cuda_dmabuf) passes iova = the buffer's GPU
 * virtual address in this process, and an fd made from that allocation
 * (cuMemGetHandleForAddressRange). So the region is the GPU memory at
 * [iova, iova + length), exported as ibv_reg_mr exports it; the fd must
 * be open (EBADF otherwise, as the kernel's dma_buf_get answers: NCCL's
 * probe with fd -1 reads that as "dma-buf supported"), and @offset, the
 * position of iova in the dma-buf, must lie in it. A dma-buf that is not
 * GPU memory of this process at iova is EOPNOTSUPP, with a message.
 */
struct ibv_mr *ovrdma_reg_dmabuf_mr(struct ibv_pd *ibpd, uint64_t offset,
				    size_t length, uint64_t iova, int fd,
				    int access)
{
	struct ovr_gdr *g;
	struct stat st;
	int gpu;

	if (fd < 0 || fstat(fd, &st) < 0) {
		errno = EBADF;
		return NULL;
	}
	if (!access_ok(length, access))
		return NULL;
	/* a dma-buf's size is its st_size (dma-buf fds report it) */
	if (S_ISREG(st.st_mode) || st.st_size > 0) {
		if (offset > (uint64_t)st.st_size ||
		    length > (uint64_t)st.st_size - offset) {
			errno = EINVAL;
			return NULL;
		}
	}
	g = provider_gdr();
	gpu = g ? ovr_gdr_probe(g, iova, length, NULL, NULL, NULL) : 0;
	if (gpu < 0) {
		errno = -gpu;
		return NULL;
	}
	if (!gpu) {
		fprintf(stderr,
			"ovrdma: ibv_reg_dmabuf_mr: iova 0x%" PRIx64
			" is not CUDA device memory of this process; ovrdma registers GPU dma-bufs by their GPU address only\n",
			iova);
		errno = EOPNOTSUPP;
		return NULL;
	}
	return reg_gpu_mr(ibpd, g, (void *)(uintptr_t)iova, length, iova,
			  access);
}

int ovrdma_dereg_mr(struct verbs_mr *vmr)
{
	struct ovrdma_context *ctx = to_octx(vmr->ibv_mr.context);
	struct ovrdma_mr *mr = to_omr(vmr);
	int rc;

	/* a failed re-registration left nothing registered */
	if (!mr->mr) {
		free(mr);
		return 0;
	}
	rc = ovr_cl_dereg_mr(ctx->cl, mr->mr);
	if (rc)
		return -rc;
	if (vmr->access & IBV_ACCESS_ON_DEMAND)
		odp_del(ctx, mr);
	free(mr);
	return 0;
}

/* ---- ibv_rereg_mr (docs/PROVIDER.md, "Re-registration and resizing") ------
 *
 * CHANGE_PD and CHANGE_ACCESS change the region in place in the service
 * (REREG_MR): the same lkey and rkey, which peers may hold, and the
 * same memory. A new translation - CHANGE_TRANSLATION, or rights that
 * need the pages checked again (device writes on a region registered
 * without any; ON_DEMAND switched on or off) - is a new registration
 * of the range: the old one is deregistered first (EBUSY while posted
 * send-side work still uses it, as ibv_dereg_mr), then the range is
 * registered as ibv_reg_mr would, with new keys. Every failure leaves
 * the region unusable, as ibv_rereg_mr(3) says of a failed command
 * ("MR shouldn't be used"): nothing reaches it through its keys until
 * ibv_dereg_mr, which still works.
 */

#define ACCESS_DEV_WRITES                                   \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	 IBV_ACCESS_REMOTE_ATOMIC)

/* The MR could not be changed: make it unusable (in place; a region
 * already deregistered by a new translation is gone anyway), errno @e. */
static int rereg_fail(struct ovrdma_context *ctx, struct ovrdma_mr *mr, int e)
{
	if (mr->mr)
		ovr_cl_rereg_mr(ctx->cl, mr->mr, OVR_CTL_REREG_INVALIDATE, 0,
				0);
	errno = e;
	return e;
}

/* A new translation (see above): deregister, register anew, keep @mr. */
static int rereg_translate(struct ovrdma_context *ctx, struct ovrdma_mr *mr,
			   struct ibv_pd *pd, void *addr, size_t length,
			   int access)
{
	struct ibv_mr *nibv;
	struct ovrdma_mr *n;
	int rc = ovr_cl_dereg_mr(ctx->cl, mr->mr);

	if (rc)
		return rereg_fail(ctx, mr, -rc);
	if (mr->vmr.access & IBV_ACCESS_ON_DEMAND)
		odp_del(ctx, mr);
	mr->mr = NULL; /* ibv_dereg_mr of it now only frees it */
	nibv = ovrdma_reg_mr(pd, addr, length, (uintptr_t)addr, access);
	if (!nibv)
		return rereg_fail(ctx, mr, errno);
	n = to_omr(container_of(nibv, struct verbs_mr, ibv_mr));
	if (access & IBV_ACCESS_ON_DEMAND)
		odp_del(ctx, n);
	mr->mr = n->mr;
	mr->vmr.ibv_mr.handle = n->vmr.ibv_mr.handle;
	mr->vmr.ibv_mr.lkey = n->vmr.ibv_mr.lkey;
	mr->vmr.ibv_mr.rkey = n->vmr.ibv_mr.rkey;
	mr->vmr.access = n->vmr.access;
	free(n);
	if (access & IBV_ACCESS_ON_DEMAND)
		odp_add(ctx, mr);
	return 0;
}

int ovrdma_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		    void *addr, size_t length, int access)
{
	struct ovrdma_context *ctx = to_octx(vmr->ibv_mr.context);
	struct ovrdma_mr *mr = to_omr(vmr);
	struct ibv_pd *npd = flags & IBV_REREG_MR_CHANGE_PD ? pd :
							      vmr->ibv_mr.pd;
	int nacc = flags & IBV_REREG_MR_CHANGE_ACCESS ? access : vmr->access;
	bool tr = flags & IBV_REREG_MR_CHANGE_TRANSLATION;
	unsigned int f = 0;
	int rc;

	if (!mr->mr) /* unusable since a failed rereg: deregister it */
		return rereg_fail(ctx, mr, EINVAL);
	if (!(flags & (IBV_REREG_MR_CHANGE_TRANSLATION |
		       IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS)) ||
	    !npd || npd->context != vmr->ibv_mr.context)
		return rereg_fail(ctx, mr, EINVAL);
	if (!access_ok(1, nacc))
		return rereg_fail(ctx, mr, errno);
	if (tr || ((nacc ^ vmr->access) & IBV_ACCESS_ON_DEMAND) ||
	    ((nacc & ACCESS_DEV_WRITES) && !(vmr->access & ACCESS_DEV_WRITES)))
		return rereg_translate(ctx, mr, npd,
				       tr ? addr : vmr->ibv_mr.addr,
				       tr ? length : vmr->ibv_mr.length, nacc);
	if (flags & IBV_REREG_MR_CHANGE_PD)
		f |= OVR_CTL_REREG_PD;
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		f |= OVR_CTL_REREG_ACCESS;
	rc = ovr_cl_rereg_mr(ctx->cl, mr->mr, f, to_opd(npd)->handle,
			     (unsigned int)nacc &
				     ~(unsigned int)IBV_ACCESS_ON_DEMAND);
	if (rc) {
		/* the service left it unusable itself */
		errno = -rc;
		return -rc;
	}
	vmr->ibv_mr.lkey = mr->mr->lkey;
	vmr->ibv_mr.rkey = mr->mr->rkey;
	vmr->access = nacc;
	return 0;
}

/* ---- memory windows (ibv_bind_mw and the WRs: ovrdma_qp.c) -------------- */

struct ibv_mw *ovrdma_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct ovrdma_context *ctx = to_octx(ibpd->context);
	struct ibv_mw *mw;
	uint32_t handle, rkey;
	int rc;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	if (!(ctx->dev.caps & OVR_CTL_DEV_MW)) {
		errno = EOPNOTSUPP; /* a service without them */
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	rc = ovr_cl_alloc_mw(ctx->cl, to_opd(ibpd)->handle, type, &handle,
			     &rkey);
	if (rc) {
		free(mw);
		errno = -rc;
		return NULL;
	}
	mw->context = ibpd->context;
	mw->pd = ibpd;
	mw->rkey = rkey;
	mw->handle = handle;
	mw->type = type;
	return mw;
}

int ovrdma_dealloc_mw(struct ibv_mw *mw)
{
	int rc = ovr_cl_dealloc_mw(to_octx(mw->context)->cl, mw->handle);

	if (rc)
		return -rc;
	free(mw);
	return 0;
}

/* ---- ibv_advise_mr: prefetching on-demand regions -------------------------
 *
 * The provider runs in the application's process, so a prefetch is the
 * application faulting its own pages in: madvise(MADV_POPULATE_READ /
 * _WRITE) (Linux 5.14), which fails cleanly where a load or store would
 * fault. The service then finds the pages present when it copies (its
 * process_vm_readv / writev would fault them in itself otherwise: the
 * prefetch saves that fault on the dataplane thread, it is never needed
 * for correctness). PREFETCH_NO_FAULT asks the device to see the pages
 * the CPU already has, which it always does: nothing to do.
 */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

/* 1: madvise knows MADV_POPULATE_*, -1: it does not (before 5.14), 0:
 * not asked yet (racing first callers ask twice, harmlessly) */
static _Atomic int populate_known;

static bool populate_works(void)
{
	static const char probe = 1; /* a page that is surely mapped */
	long pg = sysconf(_SC_PAGESIZE);
	int k = atomic_load(&populate_known);

	if (!k) {
		uintptr_t a = (uintptr_t)&probe & ~(uintptr_t)(pg - 1);

		k = madvise((void *)a, (size_t)pg, MADV_POPULATE_READ) &&
				    errno == EINVAL ?
			    -1 :
			    1;
		atomic_store(&populate_known, k);
	}
	return k > 0;
}

/*
 * Kernels without MADV_POPULATE_*: read one byte of every page through
 * process_vm_readv of this very process, which faults them in readable
 * and answers EFAULT instead of a signal. Stores would break a
 * copy-on-write sharing too, but storing into pages other threads use
 * is not the provider's to do: a PREFETCH_WRITE only reads here (best
 * effort, as the man page allows). 0 or EFAULT.
 */
static int populate_by_reading(uintptr_t lo, uintptr_t hi, uintptr_t pg)
{
	struct iovec remote[64], local;
	char sink[64];

	local = (struct iovec){ .iov_base = sink, .iov_len = sizeof(sink) };
	while (lo < hi) {
		ssize_t n, want = 0;

		for (; lo < hi && want < 64; lo += pg, want++)
			remote[want] = (struct iovec){ .iov_base = (void *)lo,
						       .iov_len = 1 };
		n = process_vm_readv(getpid(), &local, 1, remote,
				     (unsigned long)want, 0);
		if (n != want)
			return EFAULT;
	}
	return 0;
}

/* Faults [addr, addr + len) into the page tables, writable with @wr.
 * 0, or EFAULT where part of it cannot be (unmapped, no access). */
static int populate(uint64_t addr, uint32_t len, bool wr)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)addr & ~(pg - 1);
	uintptr_t hi = ((uintptr_t)addr + len + pg - 1) & ~(pg - 1);

	if (!len)
		return 0;
	if (!populate_works())
		return populate_by_reading(lo, hi, pg);
	if (!madvise((void *)lo, hi - lo,
		     wr ? MADV_POPULATE_WRITE : MADV_POPULATE_READ))
		return 0;
	/* ENOMEM: not mapped; EFAULT: a SIGBUS there; EINVAL: no such
	 * access (a read-only mapping for WRITE, PROT_NONE, VM_IO) */
	return errno == ENOMEM || errno == EINVAL || errno == EFAULT ||
			       errno == EHWPOISON ?
		       EFAULT :
		       errno;
}

/*
 * One SGE of ibv_advise_mr: its lkey must name an on-demand region of
 * @ibpd (ENOENT otherwise, as mlx5: also for a region registered without
 * ON_DEMAND), writable for PREFETCH_WRITE (EPERM, ibv_advise_mr(3)), and
 * [addr, addr + length) must lie in it (EFAULT). Must hold odp_lock.
 */
static int advise_check(struct ovrdma_context *ctx, struct ibv_pd *ibpd,
			enum ibv_advise_mr_advice advice,
			const struct ibv_sge *sg)
{
	const struct ovrdma_mr *mr = odp_find(ctx, sg->lkey);
	uint64_t base, size;

	/* (a parent domain is its protection domain: the same handle) */
	if (!mr || to_opd(mr->vmr.ibv_mr.pd)->handle != to_opd(ibpd)->handle)
		return ENOENT;
	if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    !(mr->vmr.access & IBV_ACCESS_LOCAL_WRITE))
		return EPERM;
	base = (uintptr_t)mr->vmr.ibv_mr.addr;
	size = mr->vmr.ibv_mr.length;
	/* no sum that can wrap: the implicit region ends at 2^64 - 1 */
	if (sg->addr < base || sg->length > size ||
	    sg->addr - base > size - sg->length)
		return EFAULT;
	return 0;
}

/*
 * ibv_advise_mr(3). Refused as a whole, before anything is done: an
 * unknown advice EOPNOTSUPP, flags other than IBV_ADVISE_MR_FLAG_FLUSH
 * or an empty list EINVAL, a bad SGE as advise_check says. Then the
 * pages are faulted in, with or without FLUSH (synchronously either
 * way; nothing is left to finish later): with FLUSH a range that cannot
 * be populated is EFAULT, without it the prefetch is best effort and
 * its failures are not reported, as mlx5 drops those of its deferred
 * work.
 */
int ovrdma_advise_mr(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice,
		     uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge)
{
	struct ovrdma_context *ctx = to_octx(ibpd->context);
	int rc = 0;

	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return EOPNOTSUPP;
	if ((flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) || !num_sge ||
	    !sg_list)
		return EINVAL;
	pthread_mutex_lock(&ctx->odp_lock);
	for (uint32_t i = 0; !rc && i < num_sge; i++)
		rc = advise_check(ctx, ibpd, advice, &sg_list[i]);
	pthread_mutex_unlock(&ctx->odp_lock);
	if (rc || advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return rc;
	for (uint32_t i = 0; i < num_sge; i++) {
		rc = populate(sg_list[i].addr, sg_list[i].length,
			      advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
		if (rc && (flags & IBV_ADVISE_MR_FLAG_FLUSH))
			return rc;
	}
	return 0;
}

/* ---- the end of objects that have asynchronous events ---------------------
 *
 * libibverbs' ibv_ack_async_event locks the event's QP, CQ or SRQ and
 * counts the acknowledgement in it; the kernel makes ibv_destroy_* wait
 * for the events the application read. Here the service writes events
 * straight into the pipe the application reads, and reports how many it
 * wrote for each object (ovr_cl_destroy_*): the object's memory is freed
 * once that many are acknowledged, at a later destroy or at
 * ibv_close_device, so that reading and acknowledging an event of an
 * object destroyed meanwhile touches valid memory.
 */

static bool acked_all(pthread_mutex_t *m, const uint32_t *acked,
		      uint32_t events)
{
	bool done;

	pthread_mutex_lock(m);
	done = (int32_t)(*acked - events) >= 0;
	pthread_mutex_unlock(m);
	return done;
}

static void obj_free(void *obj, pthread_mutex_t *m, pthread_cond_t *c)
{
	pthread_cond_destroy(c);
	pthread_mutex_destroy(m);
	free(obj);
}

void ovrdma_reap(struct ovrdma_context *ctx, bool all)
{
	struct ovrdma_zombie **pz, *z;

	pthread_mutex_lock(&ctx->zlock);
	pz = &ctx->zombies;
	while ((z = *pz)) {
		if (all || acked_all(z->mutex, z->acked, z->events)) {
			*pz = z->next;
			obj_free(z->obj, z->mutex, z->cond);
			free(z);
		} else {
			pz = &z->next;
		}
	}
	pthread_mutex_unlock(&ctx->zlock);
}

void ovrdma_release(struct ovrdma_context *ctx, void *obj, pthread_mutex_t *m,
		    pthread_cond_t *c, const uint32_t *acked, uint32_t events)
{
	struct ovrdma_zombie *z;

	ovrdma_reap(ctx, false);
	if (acked_all(m, acked, events)) {
		obj_free(obj, m, c);
		return;
	}
	z = malloc(sizeof(*z));
	if (!z)
		return; /* kept for good: valid memory matters more */
	*z = (struct ovrdma_zombie){ .obj = obj,
				     .mutex = m,
				     .cond = c,
				     .acked = acked,
				     .events = events };
	pthread_mutex_lock(&ctx->zlock);
	z->next = ctx->zombies;
	ctx->zombies = z;
	pthread_mutex_unlock(&ctx->zlock);
}

/* ---- completion channels (through the interposer) ----------------------- */

struct ibv_comp_channel *ovrdma_create_channel(struct ibv_context *ibctx)
{
	struct ovrdma_channel *ch = calloc(1, sizeof(*ch));
	int fd, rc;

	if (!ch)
		return NULL;
	rc = ovr_cl_create_channel(to_octx(ibctx)->cl, &ch->handle, &fd);
	if (rc) {
		free(ch);
		errno = -rc;
		return NULL;
	}
	ch->ch.context = ibctx;
	ch->ch.fd = fd;
	ch->ch.refcnt = 0;
	ch->magic = OVRDMA_CHANNEL_MAGIC;
	return &ch->ch;
}

int ovrdma_destroy_channel(struct ibv_comp_channel *channel)
{
	struct ovrdma_channel *ch = to_ochannel(channel);
	struct ibv_context *ibctx = channel->context;
	struct ovr_cl *cl = to_octx(ibctx)->cl;
	int rc;

	/* refcnt counts CQs; libibverbs changes it under this mutex */
	pthread_mutex_lock(&ibctx->mutex);
	if (channel->refcnt) {
		pthread_mutex_unlock(&ibctx->mutex);
		return EBUSY;
	}
	rc = ovr_cl_destroy_channel(cl, ch->handle);
	if (rc && ovr_cl_alive(cl)) {
		pthread_mutex_unlock(&ibctx->mutex);
		return -rc;
	}
	close(channel->fd);
	ch->magic = 0;
	free(ch);
	pthread_mutex_unlock(&ibctx->mutex);
	return 0;
}

/* ---- completion queues --------------------------------------------------- */

/* The common part of create_cq and create_cq_ex: checks, the service's CQ
 * and the provider's record (libibverbs fills the ibv_cq of create_cq). */
static struct ovrdma_cq *cq_create(struct ibv_context *ibctx, int cqe,
				   struct ibv_comp_channel *channel,
				   int comp_vector)
{
	struct ovrdma_context *ctx = to_octx(ibctx);
	uint32_t chan = OVR_CTL_NO_CHANNEL;
	struct ovrdma_cq *cq;

	if (cqe < 1 || (uint32_t)cqe > ctx->dev.max_cqe || comp_vector < 0 ||
	    (uint32_t)comp_vector >= ctx->dev.num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	if (channel) {
		struct ovrdma_channel *ch = to_ochannel(channel);

		/* only channels made by the interposer carry a handle */
		if (channel->context != ibctx ||
		    ch->magic != OVRDMA_CHANNEL_MAGIC) {
			errno = EINVAL;
			return NULL;
		}
		chan = ch->handle;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	/* the channel record carries the ibv_cq, as the kernel's does */
	cq->cq = ovr_cl_create_cq(ctx->cl, (uint32_t)cqe, chan,
				  (uint64_t)(uintptr_t)&cq->vcq.cq);
	if (!cq->cq) {
		int e = errno;

		free(cq);
		errno = e;
		return NULL;
	}
	/* ibv_create_cq(3): cqe is what the CQ holds, at least what was
	 * asked; one more overflows it (docs/PROVIDER.md, CQ overflow) */
	cq->vcq.cq.cqe = (int)ovr_cl_cq_depth(cq->cq);
	return cq;
}

struct ibv_cq *ovrdma_create_cq(struct ibv_context *ibctx, int cqe,
				struct ibv_comp_channel *channel,
				int comp_vector)
{
	struct ovrdma_cq *cq = cq_create(ibctx, cqe, channel, comp_vector);

	return cq ? &cq->vcq.cq : NULL;
}

/* ---- extended CQs: the ibv_cq_ex polling interface (ibv_create_cq_ex(3)).
 * start_poll/next_poll take one completion from the ring into cq->cur,
 * whose fields the read_* functions return; end_poll has nothing to
 * release. */

static int cqx_next(struct ibv_cq_ex *cqx)
{
	struct ovrdma_cq *cq = to_ocq_ex(cqx);
	int k = ovr_cl_poll_cq(cq->cq, 1, &cq->cur);

	if (k < 0)
		return -k;
	if (k == 0)
		return ENOENT;
	cqx->wr_id = cq->cur.wr_id;
	cqx->status = (enum ibv_wc_status)cq->cur.status;
	return 0;
}

static int cqx_start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	if (attr && attr->comp_mask)
		return EINVAL;
	return cqx_next(cqx);
}

static void cqx_end_poll(struct ibv_cq_ex *cqx)
{
	(void)cqx;
}

static enum ibv_wc_opcode cqx_read_opcode(struct ibv_cq_ex *cqx)
{
	return (enum ibv_wc_opcode)to_ocq_ex(cqx)->cur.opcode;
}

static uint32_t cqx_read_vendor_err(struct ibv_cq_ex *cqx)
{
	return to_ocq_ex(cqx)->cur.vendor_err;
}

static uint32_t cqx_read_byte_len(struct ibv_cq_ex *cqx)
{
	return to_ocq_ex(cqx)->cur.byte_len;
}

static __be32 cqx_read_imm_data(struct ibv_cq_ex *cqx)
{
	/* network byte order, untouched (or the invalidated rkey) */
	return (__be32)to_ocq_ex(cqx)->cur.imm_data;
}

static uint32_t cqx_read_qp_num(struct ibv_cq_ex *cqx)
{
	return to_ocq_ex(cqx)->cur.qp_num;
}

static uint32_t cqx_read_src_qp(struct ibv_cq_ex *cqx)
{
	return to_ocq_ex(cqx)->cur.src_qp;
}

static unsigned int cqx_read_wc_flags(struct ibv_cq_ex *cqx)
{
	return to_ocq_ex(cqx)->cur.wc_flags;
}

/* no LIDs on an Ethernet link layer */
static uint32_t cqx_read_slid(struct ibv_cq_ex *cqx)
{
	(void)cqx;
	return 0;
}

static uint8_t cqx_read_sl(struct ibv_cq_ex *cqx)
{
	/* as ibv_poll_cq: the L3 type of a UD receive's GRH */
	return to_ocq_ex(cqx)->cur.wc_flags & OVR_WC_GRH ?
		       OVRDMA_WC_SL_L3_IPV4 :
		       0;
}

static uint8_t cqx_read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	(void)cqx;
	return 0;
}

/*
 * A customer VLAN, a flow tag and tag-matching information come only
 * with raw packet QPs, flow steering and tag-matching SRQs, none of
 * which ovrdma offers: no completion carries them, and they read 0 -
 * what mlx5, which takes these flags on any device, reads for a
 * completion without them (IBV_WC_TM_MATCH and IBV_WC_TM_DATA_VALID
 * never set in wc_flags).
 */
static uint16_t cqx_read_cvlan(struct ibv_cq_ex *cqx)
{
	(void)cqx;
	return 0;
}

static uint32_t cqx_read_flow_tag(struct ibv_cq_ex *cqx)
{
	(void)cqx;
	return 0;
}

static void cqx_read_tm_info(struct ibv_cq_ex *cqx,
			     struct ibv_wc_tm_info *tm_info)
{
	(void)cqx;
	*tm_info = (struct ibv_wc_tm_info){ 0 };
}

/*
 * Completion timestamps (section 4.8): the service stamps each CQE with
 * its CLOCK_MONOTONIC in microseconds, 32 bits (ring.h ts_us): the raw
 * timestamp in cycles of a 1 MHz clock (hca_core_clock 1000 kHz,
 * completion_timestamp_mask 2^32 - 1, as a NIC's free-running counter
 * of that width). The wall-clock form is the same instant on
 * CLOCK_REALTIME: now there, less how long ago the stamp was on
 * CLOCK_MONOTONIC (modulo the counter's 71.6-minute wrap, as any
 * reading of a counter of that width), to the microsecond.
 */
static uint64_t cqx_read_completion_ts(struct ibv_cq_ex *cqx)
{
	return to_ocq_ex(cqx)->cur.ts_us;
}

static uint64_t cqx_read_completion_wallclock_ns(struct ibv_cq_ex *cqx)
{
	struct timespec rt;
	uint32_t ago =
		(uint32_t)(ovr_mono_ns() / 1000u) - to_ocq_ex(cqx)->cur.ts_us;
	uint64_t now;

	clock_gettime(CLOCK_REALTIME, &rt);
	now = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	return now - (uint64_t)ago * 1000u;
}

/* ibv_query_rt_values_ex(3): the raw clock now (in tv_nsec, as mlx5 puts
 * its cycles), on the clock of the completion timestamps */
int ovrdma_query_rt_values(struct ibv_context *ibctx,
			   struct ibv_values_ex *values)
{
	uint32_t want = values->comp_mask;

	values->comp_mask = 0;
	if (!(to_octx(ibctx)->dev.caps & OVR_CTL_DEV_CQ_TS))
		return EOPNOTSUPP;
	if (want & IBV_VALUES_MASK_RAW_CLOCK) {
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec =
			(long)(uint32_t)(ovr_mono_ns() / 1000u);
		values->comp_mask |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	return 0;
}

/* what an ovrdma CQE carries (and the three CVLAN, FLOW_TAG, TM_INFO
 * above, never present); the timestamps where the service stamps */
#define OVRDMA_WC_EX_FLAGS                                                     \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |                        \
	 IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | \
	 IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_DLID_PATH_BITS |                   \
	 IBV_WC_EX_WITH_CVLAN | IBV_WC_EX_WITH_FLOW_TAG |                      \
	 IBV_WC_EX_WITH_TM_INFO)
#define OVRDMA_WC_EX_TS                        \
	(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define OVRDMA_CQ_EX_FLAGS \
	(IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)

struct ibv_cq_ex *ovrdma_create_cq_ex(struct ibv_context *ibctx,
				      struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq_ex *cqx;
	struct ovrdma_cq *cq;

	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					  IBV_CQ_INIT_ATTR_MASK_PD)) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~(uint32_t)OVRDMA_CQ_EX_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* a parent domain only carries allocators and thread hints here;
	 * a protection domain is not one (EINVAL, as mlx5) */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!attr->parent_domain || attr->parent_domain->context != ibctx ||
	     !to_opd(attr->parent_domain)->prot)) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->wc_flags &
	     ~(uint64_t)(OVRDMA_WC_EX_FLAGS | OVRDMA_WC_EX_TS)) ||
	    ((attr->wc_flags & OVRDMA_WC_EX_TS) &&
	     !(to_octx(ibctx)->dev.caps & OVR_CTL_DEV_CQ_TS))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe > INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	cq = cq_create(ibctx, (int)attr->cqe, attr->channel,
		       (int)attr->comp_vector);
	if (!cq)
		return NULL;
	cqx = &cq->vcq.cq_ex;
	/* libibverbs fills the ibv_cq part (context, channel and its
	 * reference, cq_context, mutex) after this returns, as for
	 * create_cq */
	cqx->start_poll = cqx_start_poll;
	cqx->next_poll = cqx_next;
	cqx->end_poll = cqx_end_poll;
	cqx->read_opcode = cqx_read_opcode;
	cqx->read_vendor_err = cqx_read_vendor_err;
	cqx->read_wc_flags = cqx_read_wc_flags;
	if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		cqx->read_byte_len = cqx_read_byte_len;
	if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
		cqx->read_imm_data = cqx_read_imm_data;
	if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		cqx->read_qp_num = cqx_read_qp_num;
	if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		cqx->read_src_qp = cqx_read_src_qp;
	if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
		cqx->read_slid = cqx_read_slid;
	if (attr->wc_flags & IBV_WC_EX_WITH_SL)
		cqx->read_sl = cqx_read_sl;
	if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		cqx->read_dlid_path_bits = cqx_read_dlid_path_bits;
	if (attr->wc_flags & IBV_WC_EX_WITH_CVLAN)
		cqx->read_cvlan = cqx_read_cvlan;
	if (attr->wc_flags & IBV_WC_EX_WITH_FLOW_TAG)
		cqx->read_flow_tag = cqx_read_flow_tag;
	if (attr->wc_flags & IBV_WC_EX_WITH_TM_INFO)
		cqx->read_tm_info = cqx_read_tm_info;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		cqx->read_completion_ts = cqx_read_completion_ts;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		cqx->read_completion_wallclock_ns =
			cqx_read_completion_wallclock_ns;
	return cqx;
}

int ovrdma_destroy_cq(struct ibv_cq *ibcq)
{
	struct ovrdma_cq *cq = to_ocq(ibcq);
	uint32_t events = 0;
	int rc = ovr_cl_destroy_cq(to_octx(ibcq->context)->cl, cq->cq, &events);

	if (rc)
		return -rc;
	ovrdma_release(to_octx(ibcq->context), cq, &ibcq->mutex, &ibcq->cond,
		       &ibcq->async_events_completed, events);
	return 0;
}

int ovrdma_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct ovrdma_cq *cq = to_ocq(ibcq);
	struct ovr_cl_wc w[POLL_CHUNK];
	int done = 0;

	while (done < n) {
		int want = n - done < POLL_CHUNK ? n - done : POLL_CHUNK;
		int k = ovr_cl_poll_cq(cq->cq, want, w);

		if (k < 0)
			return done ? done : k;
		for (int i = 0; i < k; i++) {
			struct ibv_wc *o = &wc[done + i];

			*o = (struct ibv_wc){
				.wr_id = w[i].wr_id,
				.status = (enum ibv_wc_status)w[i].status,
				.opcode = (enum ibv_wc_opcode)w[i].opcode,
				.vendor_err = w[i].vendor_err,
				.byte_len = w[i].byte_len,
				.qp_num = w[i].qp_num,
				.src_qp = w[i].src_qp,
				.wc_flags = w[i].wc_flags,
				.sl = w[i].wc_flags & OVR_WC_GRH ?
					      OVRDMA_WC_SL_L3_IPV4 :
					      0,
			};
			/* network byte order, untouched (or the rkey) */
			o->imm_data = w[i].imm_data;
		}
		done += k;
		if (k < want)
			break;
	}
	return done;
}

/* ibv_resize_cq(3): at least @cqe entries, what the CQ holds kept in
 * order; below what it holds, 0 or beyond max_cqe: EINVAL. */
int ovrdma_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct ovrdma_context *ctx = to_octx(ibcq->context);
	struct ovrdma_cq *cq = to_ocq(ibcq);
	int rc;

	if (cqe < 1 || (uint32_t)cqe > ctx->dev.max_cqe)
		return EINVAL;
	rc = ovr_cl_resize_cq(ctx->cl, cq->cq, (uint32_t)cqe);
	if (rc)
		return -rc;
	ibcq->cqe = (int)ovr_cl_cq_depth(cq->cq);
	return 0;
}

int ovrdma_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return -ovr_cl_req_notify_cq(to_ocq(ibcq)->cq, solicited_only != 0);
}

/* ---- address handles ------------------------------------------------------ */

struct ibv_ah *ovrdma_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	struct ovr_ctl_create_ah_req q = {
		.pd = to_opd(ibpd)->handle,
		.flow_label = attr->grh.flow_label,
		.sgid_index = attr->grh.sgid_index,
		.hop_limit = attr->grh.hop_limit,
		.traffic_class = attr->grh.traffic_class,
		.is_global = attr->is_global,
		.port_num = attr->port_num,
		.sl = attr->sl,
	};
	struct ovrdma_ah *ah;
	int rc;

	/* RoCE: the destination is named by its GID (::ffff:<vIP>) */
	if (!attr->is_global || (attr->port_num && attr->port_num != 1)) {
		errno = EINVAL;
		return NULL;
	}
	memcpy(q.dgid, attr->grh.dgid.raw, sizeof(q.dgid));
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	rc = ovr_cl_create_ah(to_octx(ibpd->context)->cl, &q, &ah->handle);
	if (rc) {
		free(ah);
		errno = -rc;
		return NULL;
	}
	ah->ibv_ah.context = ibpd->context;
	ah->ibv_ah.pd = ibpd;
	ah->ibv_ah.handle = ah->handle;
	return &ah->ibv_ah;
}

/* ibv_attach_mcast / ibv_detach_mcast: RoCE, the GID names the group and
 * the LID is ignored (docs/PROVIDER.md, "Multicast") */
static int mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, bool attach)
{
	struct ovrdma_context *ctx = to_octx(ibqp->context);
	struct ovrdma_qp *qp = to_oqp(ibqp);

	if (!(ctx->dev.caps & OVR_CTL_DEV_MCAST))
		return EOPNOTSUPP;
	return -ovr_cl_mcast(ctx->cl, qp->qp, attach, gid->raw,
			     qp->mcast_no_lb ? OVR_CTL_MCAST_NO_LOOPBACK : 0);
}

int ovrdma_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
			uint16_t lid)
{
	(void)lid;
	return mcast(ibqp, gid, true);
}

int ovrdma_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
			uint16_t lid)
{
	(void)lid;
	return mcast(ibqp, gid, false);
}

int ovrdma_destroy_ah(struct ibv_ah *ibah)
{
	struct ovrdma_ah *ah = to_oah(ibah);
	int rc = ovr_cl_destroy_ah(to_octx(ibah->context)->cl, ah->handle);

	if (rc)
		return -rc;
	free(ah);
	return 0;
}
