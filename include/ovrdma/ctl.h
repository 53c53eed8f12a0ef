/* SPDX-License-Identifier: MIT */
/*
 * ovrdmad's control protocol (docs/SERVICE.md section 2).
 *
 * Transport: a SOCK_SEQPACKET Unix socket (default
 * /run/ovrdma/ovrdmad.sock; group-accessible), one message per request,
 * one reply per request, in order; file descriptors travel as
 * SCM_RIGHTS. The peer is identified with SO_PEERCRED at accept.
 *
 * A connection is one application context: the first request is HELLO,
 * then OPEN names a device; everything created afterwards belongs to the
 * connection, and closing the socket (exit, kill -9) destroys it all.
 * Administrative requests (OVR_CTL_ADM_*) need uid 0 and no OPEN.
 *
 * Every message starts with struct ovr_ctl_hdr; the request or reply body
 * follows. A reply echoes op and seq and carries status = 0 or -errno;
 * the body is only meaningful with status 0. Sizes are checked exactly
 * (len == sizeof(hdr) + sizeof(body), or the variable form documented),
 * unknown ops answer -EOPNOTSUPP, a version mismatch -EPROTO. Integers
 * are in host byte order (the socket is local); structures are
 * naturally aligned and fixed-size (static asserts below).
 *
 * Versioning: OVR_CTL_VERSION changes when a message changes; new
 * messages get new op numbers and old ones keep theirs.
 */
#ifndef OVRDMA_CTL_H
#define OVRDMA_CTL_H

#include <stdint.h>

#include <ovrdma/verbs.h>

/* 2: SRQs, UD QPs, address handles; 3: GPU MRs; 4: GPU device UUIDs;
 * 5: REG_MR's process route (OVR_CTL_MR_PROC): a version-4 service would
 * take the flag word for padding and refuse nseg 0 as malformed, and a
 * version-4 client would still remap private memory onto memfds;
 * 6: on-demand registrations (OVR_CTL_MR_ODP) and ovr_ctl_dev.caps;
 * 7: the connection manager (CM_OPEN, CM);
 * 8: the process route's REG_MR carries the application's /proc/self/mem
 * (a version-7 service would reach the pid with process_vm_*, whatever
 * image the pid runs by then, and refuse the fd as malformed);
 * 9: a QP's or SRQ's own dataplane core: OPEN's wake fd per core and the
 * create replies' wake_mask (a version-8 client would write one core's
 * wake fd for QPs of another, which could sleep through its doorbells);
 * 10: the CM reply's port space and whether the id has a route (a
 * version-9 service sends zeros there: no path to any peer) */
#define OVR_CTL_VERSION 10u
#define OVR_CTL_SOCK_DEFAULT "/run/ovrdma/ovrdmad.sock"
/* where ovrdmad publishes its devices (sysfs =), and the interposer
 * looks for them when nothing names the tree (docs/PROVIDER.md) */
#define OVR_CTL_SYSFS_DEFAULT "/run/ovrdma/sysfs"
#define OVR_CTL_MSG_MAX 65536u /* largest message either way */
#define OVR_CTL_NAME_LEN 16u /* device names, NUL-terminated */

enum ovr_ctl_op {
	/* application contexts */
	OVR_CTL_HELLO = 1, /* rep fds: service page (read-only) */
	OVR_CTL_LIST_DEVICES = 2,
	/* req fd: async event pipe; rep fds: doorbell, then a wake fd
	 * per dataplane core (core 0 first; one from an older service) */
	OVR_CTL_OPEN = 3,
	OVR_CTL_ALLOC_PD = 4,
	OVR_CTL_DEALLOC_PD = 5,
	OVR_CTL_REG_MR = 6, /* req fds: one per segment; process route: one */
	OVR_CTL_DEREG_MR = 7,
	OVR_CTL_CREATE_CHANNEL = 8, /* req fd: completion channel pipe */
	OVR_CTL_DESTROY_CHANNEL = 9,
	OVR_CTL_CREATE_CQ = 10, /* rep fd: CQ ring */
	OVR_CTL_DESTROY_CQ = 11,
	OVR_CTL_CREATE_QP = 12, /* rep fd: QP rings */
	OVR_CTL_MODIFY_QP = 13,
	OVR_CTL_QUERY_QP = 14,
	OVR_CTL_DESTROY_QP = 15,
	OVR_CTL_QP_STATS = 16,
	OVR_CTL_CREATE_SRQ = 17, /* rep fd: SRQ ring */
	OVR_CTL_MODIFY_SRQ = 18,
	OVR_CTL_QUERY_SRQ = 19,
	OVR_CTL_DESTROY_SRQ = 20,
	OVR_CTL_CREATE_AH = 21,
	OVR_CTL_DESTROY_AH = 22,
	OVR_CTL_REG_MR_GPU = 23, /* req fd: the allocation (kind FD only) */
	/* the connection manager (docs/PROVIDER.md, "rdma_cm"): a
	 * connection that says CM_OPEN instead of OPEN is one librdmacm
	 * event channel */
	OVR_CTL_CM_OPEN = 24, /* req fd: the service's end of the events */
	OVR_CTL_CM = 25, /* one rdma_cm command (struct ovr_ctl_cm_req) */
	OVR_CTL_RESIZE_CQ = 26, /* rep fd: the CQ's new ring */
	OVR_CTL_REREG_MR = 27, /* a region's PD or rights, in place */
	/* memory windows (docs/PROVIDER.md, "Memory windows") */
	OVR_CTL_ALLOC_MW = 28,
	OVR_CTL_DEALLOC_MW = 29,
	OVR_CTL_ATTACH_MCAST = 30, /* struct ovr_ctl_mcast_req */
	OVR_CTL_DETACH_MCAST = 31,
	/* administration (uid 0) */
	OVR_CTL_ADM_TENANT_ADD = 64,
	OVR_CTL_ADM_TENANT_DEL = 65,
	OVR_CTL_ADM_VIP_ADD = 66,
	OVR_CTL_ADM_VIP_MOVE = 67,
	OVR_CTL_ADM_VIP_DEL = 68,
	OVR_CTL_ADM_SG_SET = 69,
	OVR_CTL_ADM_SHOW = 70, /* reply body: text */
};

struct ovr_ctl_hdr {
	uint16_t op; /* enum ovr_ctl_op */
	uint16_t version; /* OVR_CTL_VERSION */
	uint32_t len; /* whole message, header included */
	uint32_t seq; /* chosen by the client, echoed */
	int32_t status; /* reply: 0 or -errno; request: 0 */
};

/* ---- HELLO ------------------------------------------------------------- */

struct ovr_ctl_hello_req {
	uint32_t ring_abi; /* OVR_RING_ABI_VERSION the client speaks */
	uint32_t flags; /* 0 */
	char client[32]; /* program name, for ovrdmactl */
};

struct ovr_ctl_hello_rep {
	uint32_t ring_abi;
	uint32_t ndevices;
	uint64_t incarnation; /* as the service page */
};

/* ---- devices ------------------------------------------------------------ */

/* What a device looks like to verbs (ibv_query_device / _port). */
struct ovr_ctl_dev {
	char name[OVR_CTL_NAME_LEN]; /* "ovrdma0" */
	uint32_t vni; /* tenant */
	uint32_t vip; /* the device's address in the tenant (GID 0) */
	uint64_t guid; /* node and port GUID, stable per binding */
	uint64_t rate_bps; /* configured port rate */
	uint32_t active_mtu; /* enum ovr_mtu */
	uint32_t underlay_mtu;
	uint32_t max_qp, max_qp_wr, max_sge, max_inline;
	uint32_t max_cq, max_cqe, max_mr, max_pd;
	uint64_t max_mr_size;
	uint32_t max_qp_rd_atom, max_qp_init_rd_atom;
	uint32_t atomic_cap; /* enum ibv_atomic_cap */
	uint32_t max_srq, max_srq_wr;
	uint32_t num_comp_vectors;
	uint32_t max_srq_sge;
	uint32_t max_ah;
	uint32_t caps; /* enum ovr_ctl_dev_caps: OPEN's reply only (LIST: 0) */
	uint32_t rsvd;
};

/*
 * What every ovrdma device reports as its identity (ibv_query_device and
 * the sysfs tree, svc_sysfs.c): the vendor is an IEEE company ID with
 * the locally administered bit (0x02 first, as the node GUIDs), "ov";
 * the "firmware" is ovrdmad.
 */
#define OVR_CTL_DEV_VENDOR_ID 0x026f76u
#define OVR_CTL_DEV_VENDOR_PART_ID 1u
#define OVR_CTL_DEV_HW_VER 0u
#define OVR_CTL_DEV_FW_VER "ovrdma-0.1.0"

/* What the service can do for the context that OPENed the device. */
enum ovr_ctl_dev_caps {
	/* the process route works (through the application's own
	 * /proc/self/mem, passed with REG_MR): on-demand registrations,
	 * OVR_CTL_MR_ODP */
	OVR_CTL_DEV_ODP = 1u,
	/* memory windows, types 1 and 2B: ALLOC_MW / DEALLOC_MW and the
	 * BIND_MW and LOCAL_INV send WQEs (as many windows as regions:
	 * max_mr) */
	OVR_CTL_DEV_MW = 1u << 4,
	/* completions carry a timestamp (ring.h, struct ovr_ring_cqe
	 * ts_us): CLOCK_MONOTONIC in microseconds, modulo 2^32 */
	OVR_CTL_DEV_CQ_TS = 1u << 8,
	/* UD multicast: ATTACH_MCAST / DETACH_MCAST, AHs to groups and
	 * rdma_cm's JOIN_MCAST (OVR_CTL_MCAST_MAX_* below) */
	OVR_CTL_DEV_MCAST = 1u << 9,
};

/* Multicast limits (ibv_device_attr max_mcast_grp, max_mcast_qp_attach,
 * max_total_mcast_qp_attach): groups per node, QPs per group, and
 * attachments per node. */
#define OVR_CTL_MCAST_MAX_GRP 1024u
#define OVR_CTL_MCAST_MAX_QP_ATTACH 256u
#define OVR_CTL_MCAST_MAX_TOTAL 8192u

struct ovr_ctl_list_rep {
	uint32_t n;
	uint32_t rsvd;
	/* n x struct ovr_ctl_dev follow (variable length) */
};

struct ovr_ctl_open_req {
	char name[OVR_CTL_NAME_LEN];
};

struct ovr_ctl_open_rep {
	struct ovr_ctl_dev dev;
	uint32_t ctx_id;
	/* the service page's `sleeping` bits that concern this context
	 * (the core it was given): a doorbell of a QP or SRQ whose create
	 * reply has no wake_mask writes the first wake fd only when one of
	 * them is set. 0 (a service before several cores): any */
	uint32_t wake_mask;
};

/* ---- PD, MR ------------------------------------------------------------- */

struct ovr_ctl_pd_rep {
	uint32_t pd;
	uint32_t rsvd;
};

struct ovr_ctl_handle_req {
	uint32_t handle;
	uint32_t rsvd;
};

#define OVR_CTL_MR_MAX_SEG 64u

/*
 * REG_MR, two routes (docs/SERVICE.md section 4). The object route: the
 * registered bytes [va, va + len) lie inside the page-aligned span
 * [span, span + sum of seg lengths), backed by the objects (regular
 * files) the client passes, one per segment in order: segment i maps
 * seg[i].len bytes of its fd from offset seg[i].off. The process route
 * (flags OVR_CTL_MR_PROC, version 8): nseg 0, span the first page of va,
 * and one fd: the application's /proc/self/mem, opened read-write (else
 * -EINVAL; read-only -EACCES). The service reaches [va, va + len) in
 * that address space by reading and writing the file, maps nothing,
 * pins nothing; a context's first such file stays its address space for
 * every process-route region (later ones are checked, not used), and
 * once that address space is gone (exit, exec) copies fail.
 * On demand (OVR_CTL_MR_PROC | OVR_CTL_MR_ODP, version 6): the process
 * route, not counted against pinned_mb_per_context; va 0 with len
 * UINT64_MAX is the whole address space (implicit ODP), any other range
 * must not reach the last page of it. -EINVAL: ODP without PROC.
 */
struct ovr_ctl_mr_seg {
	uint64_t off;
	uint64_t len;
};

struct ovr_ctl_reg_mr_req {
	uint32_t pd;
	uint32_t access; /* enum ovr_access */
	uint64_t va;
	uint64_t len;
	uint64_t span;
	uint32_t nseg;
	uint32_t flags; /* enum ovr_ctl_mr_flags */
	struct ovr_ctl_mr_seg seg[OVR_CTL_MR_MAX_SEG]; /* nseg used */
};

enum ovr_ctl_mr_flags {
	OVR_CTL_MR_PROC = 1u, /* the process route: nseg 0, /proc/self/mem */
	OVR_CTL_MR_ODP = 2u, /* on-demand paging (with PROC) */
};

struct ovr_ctl_reg_mr_rep {
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t rsvd;
};

/*
 * REG_MR_GPU (version 3; docs/GPU.md): register [va, va + len), va being
 * the address work requests name (verbs' iova), whose bytes are GPU
 * memory: byte va lies at @offset of the allocation the client exported
 * with gdr/ (struct ovr_gdr_export: @kind OVR_GDR_KIND_IPC carries the
 * driver's 64-byte handle and no fd, OVR_GDR_KIND_FD one fd and a zero
 * handle). @alloc_base and @alloc_size describe the allocation in the
 * client; offset + len must lie inside it. Reply: ovr_ctl_reg_mr_rep.
 * -EOPNOTSUPP: this ovrdmad has no CUDA driver (its log says why);
 * -EINVAL: malformed, or a handle the driver refuses; -ENODEV: no such
 * device in the service. Deregistration is DEREG_MR; closing the
 * context releases the import as it releases every MR.
 */
struct ovr_ctl_reg_mr_gpu_req {
	uint32_t pd;
	uint32_t access; /* enum ovr_access */
	uint64_t va;
	uint64_t len;
	uint64_t offset;
	uint64_t alloc_base;
	uint64_t alloc_size;
	int32_t device; /* the client's CUDA device ordinal */
	uint32_t kind; /* enum ovr_gdr_kind */
	uint8_t ipc[64];
	uint8_t uuid[16]; /* the device's UUID (version 4); zero: unknown */
};

/* ---- CQs ---------------------------------------------------------------- */

struct ovr_ctl_channel_rep {
	uint32_t channel;
	uint32_t rsvd;
};

#define OVR_CTL_NO_CHANNEL 0xffffffffu

struct ovr_ctl_create_cq_req {
	uint32_t cqe; /* at least this many entries */
	uint32_t channel; /* or OVR_CTL_NO_CHANNEL */
	uint64_t user_handle; /* written to the channel on an event */
	uint32_t comp_vector;
	uint32_t rsvd;
};

struct ovr_ctl_create_cq_rep {
	uint32_t cq;
	uint32_t depth; /* entries in the ring, a power of two */
	uint64_t map_len; /* bytes to map from the fd */
};

/*
 * RESIZE_CQ (ibv_resize_cq): the CQ gets a new ring of at least @cqe
 * entries (a power of two above it, as CREATE_CQ), passed as a new fd;
 * the completions not yet consumed (the ring's cons word up to what the
 * service wrote) are copied into it at the same indexes, so the
 * client's consumer index and the gen rule (ring.h) carry over; the
 * arm, overflow and events words too. The service writes only the new
 * ring once it replied; the client must not poll or arm the CQ between
 * sending the request and mapping the reply (it holds the CQ's lock).
 * -EINVAL: @cqe 0 or beyond the largest CQ, or below the completions
 * the CQ holds (ibv_resize_cq(3)); -ENOMEM: beyond cq_mb_per_context.
 * On an error the old ring stays, untouched.
 */
struct ovr_ctl_resize_cq_req {
	uint32_t cq;
	uint32_t cqe;
};

/* = ovr_ctl_create_cq_rep: cq, the new depth, the new ring's length */
struct ovr_ctl_resize_cq_rep {
	uint32_t cq;
	uint32_t depth;
	uint64_t map_len;
};

/*
 * REREG_MR (ibv_rereg_mr's CHANGE_PD and CHANGE_ACCESS): the region of
 * @handle moves to @pd and/or gets @access, in place: the same keys,
 * range and memory (a new translation is a new registration, made by
 * the client with DEREG_MR and REG_MR). More device writes than the
 * region was registered with (LOCAL_WRITE, REMOTE_WRITE or ATOMIC on a
 * region that had none: its pages were checked for reads only) is
 * -EACCES; an unknown PD -ENOENT (its handle: the ibv_pd of another
 * context never reaches here); access bits as REG_MR's. Any error but
 * -ENOENT for @handle leaves the region unusable (ibv_rereg_mr(3): "MR
 * shouldn't be used"): no PD, no rights, until DEREG_MR.
 * OVR_CTL_REREG_INVALIDATE alone does only that (the client failed the
 * rereg before asking); a region left so answers -EINVAL to any other
 * REREG_MR. Reply: ovr_ctl_reg_mr_rep.
 */
enum ovr_ctl_rereg_flags {
	OVR_CTL_REREG_PD = 1u,
	OVR_CTL_REREG_ACCESS = 2u,
	OVR_CTL_REREG_INVALIDATE = 4u,
};

struct ovr_ctl_rereg_mr_req {
	uint32_t handle;
	uint32_t flags; /* enum ovr_ctl_rereg_flags */
	uint32_t pd; /* with OVR_CTL_REREG_PD */
	uint32_t access; /* with OVR_CTL_REREG_ACCESS: enum ovr_access */
};

/* ---- QPs ---------------------------------------------------------------- */

struct ovr_ctl_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint32_t rsvd;
};

/*
 * CREATE_QP: @srq names an SRQ of the same PD (its handle from
 * CREATE_SRQ) or 0; with one, cap.max_recv_wr / max_recv_sge are
 * ignored and the reply's rq_depth is 0 (no receive ring). @qp_type
 * OVR_QPT_UD makes a UD QP: MODIFY_QP follows verbs' UD table (QKEY
 * at INIT, no AV ever), its send WQEs name an AH (ring.h); OVR_QPT_UC a
 * UC QP: verbs' UC table (an AV at RTR as RC, no RC reliability
 * attributes), SEND, SEND_WITH_IMM, RDMA_WRITE(_WITH_IMM) only.
 */
struct ovr_ctl_create_qp_req {
	uint32_t pd;
	uint32_t send_cq;
	uint32_t recv_cq;
	uint32_t srq; /* 0: none */
	uint32_t qp_type; /* OVR_QPT_* */
	uint32_t sq_sig_all;
	struct ovr_ctl_qp_cap cap;
	uint64_t user_handle; /* the element of async events */
};

struct ovr_ctl_create_qp_rep {
	uint32_t qp; /* handle */
	uint32_t qpn;
	struct ovr_ctl_qp_cap cap; /* what was granted */
	uint32_t sq_depth, rq_depth; /* ring entries, powers of two */
	uint32_t sq_stride, rq_stride; /* bytes per slot */
	uint64_t sq_off, rq_off; /* offsets of the slots in the fd */
	uint64_t map_len;
	uint32_t db_index; /* this QP's doorbell bit */
	/* the service page's `sleeping` bit of the dataplane core that
	 * serves the QP: a doorbell writes that core's wake fd (OPEN's
	 * fds) only while it is set. 0 (an older service): OPEN's mask */
	uint32_t wake_mask;
};

/* ibv_qp_attr, with the address vector reduced to what ovrdma uses. */
struct ovr_ctl_qp_attr {
	uint32_t qp_state;
	uint32_t cur_qp_state;
	uint32_t path_mtu;
	uint32_t qp_access_flags;
	uint32_t dest_qp_num;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t qkey;
	uint8_t dgid[16]; /* ah_attr.grh.dgid: ::ffff:<peer vIP> */
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t is_global;
	uint16_t pkey_index;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t sq_draining;
	uint8_t rsvd[6];
	struct ovr_ctl_qp_cap cap; /* query only */
};

struct ovr_ctl_modify_qp_req {
	uint32_t qp;
	uint32_t mask; /* enum ovr_qp_attr_mask */
	struct ovr_ctl_qp_attr attr;
};

struct ovr_ctl_query_qp_rep {
	struct ovr_ctl_qp_attr attr;
};

/* QP_STATS: the handle request; the reply is the engine's counters. */
struct ovr_ctl_qp_stats_rep {
	uint32_t state;
	uint32_t snd_una, snd_nxt, rcv_nxt;
	uint32_t inflight_pkts, cwnd_bytes;
	uint64_t srtt_ns, rto_ns;
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
	uint64_t retx_pkts, rto_count, tlp_count, rack_lost;
	uint64_t rx_dup, rx_ooo;
};

/* ---- shared receive queues ---------------------------------------------- */

/* = struct ibv_srq_attr */
struct ovr_ctl_srq_attr {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
	uint32_t rsvd;
};

/* CREATE_SRQ: attr.srq_limit is ignored (as ibv_create_srq). */
struct ovr_ctl_create_srq_req {
	uint32_t pd;
	uint32_t rsvd;
	struct ovr_ctl_srq_attr attr;
	uint64_t user_handle; /* the element of SRQ_LIMIT_REACHED events */
};

/*
 * The reply: attr as granted (max_wr: how many receives may be posted
 * and not yet completed), and the ring (ring.h, struct ovr_ring_srq) in
 * the fd: depth slots of stride bytes at slots_off. depth may exceed
 * max_wr: MODIFY_SRQ can grow max_wr up to depth.
 */
struct ovr_ctl_create_srq_rep {
	uint32_t srq; /* handle */
	uint32_t srqn;
	struct ovr_ctl_srq_attr attr;
	uint32_t depth, stride;
	uint64_t slots_off;
	uint64_t map_len;
	uint32_t db_index; /* this SRQ's doorbell bit (shared with QPs) */
	uint32_t wake_mask; /* as the QP's */
};

/* MODIFY_SRQ: mask = enum ovr_srq_attr_mask. */
struct ovr_ctl_modify_srq_req {
	uint32_t srq;
	uint32_t mask;
	struct ovr_ctl_srq_attr attr;
};

/* QUERY_SRQ: the handle request; the reply: */
struct ovr_ctl_query_srq_rep {
	struct ovr_ctl_srq_attr attr; /* srq_limit: 0 once it fired */
};

/* ---- address handles ----------------------------------------------------- */

/*
 * CREATE_AH: ah_attr, RoCE style: is_global must be 1 and dgid
 * ::ffff:<vIP> of the device's tenant that the security group lets the
 * device reach (as MODIFY_QP's AV). The reply's handle is what UD send
 * WQEs name (ovr_ring_swqe.ah); DESTROY_AH takes the handle request.
 */
struct ovr_ctl_create_ah_req {
	uint32_t pd;
	uint32_t flow_label;
	uint8_t dgid[16];
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t is_global;
	uint8_t port_num;
	uint8_t sl;
	uint8_t rsvd[2];
};

struct ovr_ctl_create_ah_rep {
	uint32_t ah;
	uint32_t rsvd;
};

/* ---- multicast ----------------------------------------------------------- */

/*
 * ATTACH_MCAST / DETACH_MCAST: UD QP @qp joins or leaves group @gid,
 * ::ffff:<IPv4 multicast address> (ff0e::ffff:<address>, the IB-style
 * mapping, names the same group). The group is the device's tenant's:
 * datagrams any member of the tenant sends to it reach every QP of the
 * tenant attached to it, on any node (docs/SERVICE.md, "Multicast").
 * -EINVAL: not a UD QP, not a multicast GID, or (DETACH) not attached;
 * -ENOENT: no such QP; -ENOSPC: OVR_CTL_MCAST_MAX_* reached. Attaching
 * twice is one attachment (0). OVR_CTL_MCAST_NO_LOOPBACK: the QP does
 * not hear its own sends to the group (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB).
 */
struct ovr_ctl_mcast_req {
	uint32_t qp;
	uint32_t flags;
	uint8_t gid[16];
};

#define OVR_CTL_MCAST_NO_LOOPBACK 1u

/* ---- memory windows ------------------------------------------------------ */

/*
 * ALLOC_MW: a window of @type (enum ovr_mw_type) in @pd, unbound; the
 * reply gives its handle (for DEALLOC_MW, which takes the handle
 * request) and its rkey. Binding and invalidation are send WQEs
 * (ring.h). -ENOENT: no such PD; -EINVAL: another type; -ENOSPC: the
 * context's mr_per_context windows, or the node's, are all taken.
 * DEALLOC_MW of a bound window unbinds it (its region is free to go).
 */
struct ovr_ctl_alloc_mw_req {
	uint32_t pd;
	uint32_t type;
};

struct ovr_ctl_alloc_mw_rep {
	uint32_t handle;
	uint32_t rkey;
};

/* ---- asynchronous events ------------------------------------------------ */

/*
 * Written by the service to the async-event pipe given at OPEN; the same
 * layout as the kernel's struct ib_uverbs_async_event_desc, so that
 * libibverbs' ibv_get_async_event reads it unchanged. element: the
 * user_handle of the QP, CQ or SRQ (0 for device events).
 */
struct ovr_ctl_async_event {
	uint64_t element;
	uint32_t event_type; /* enum ovr_event */
	uint32_t rsvd;
};

/* ... and to a completion channel pipe (struct ib_uverbs_comp_event_desc). */
struct ovr_ctl_comp_event {
	uint64_t cq_handle;
};

/* ---- connection manager ------------------------------------------------- */

/*
 * An rdma_cm event channel is a control connection that said HELLO and
 * CM_OPEN (with the service's end of a SOCK_SEQPACKET pair: one struct
 * ovr_ctl_cm_event per message, the other end is the application's
 * channel fd). Each CM request is one command on one id; ids belong to
 * the connection and go with it. Addresses are IPv4, host byte order.
 */
#define OVR_CTL_CM_PRIV_MAX 256u /* = RDMA_MAX_PRIVATE_DATA */

enum ovr_ctl_cm_cmd {
	OVR_CM_CREATE_ID = 1, /* arg: port space, arg2: qp type; rep: id */
	OVR_CM_DESTROY_ID = 2,
	OVR_CM_BIND = 3, /* src */
	OVR_CM_RESOLVE_ADDR = 4, /* src (optional), dst; arg: timeout ms */
	OVR_CM_RESOLVE_ROUTE = 5, /* arg: timeout ms */
	OVR_CM_QUERY = 6, /* rep: addresses, device */
	OVR_CM_LISTEN = 7, /* arg: backlog */
	OVR_CM_CONNECT = 8, /* conn */
	OVR_CM_ACCEPT = 9, /* conn (the active side: the RTU) */
	OVR_CM_REJECT = 10, /* conn.private_data; arg: reason */
	OVR_CM_DISCONNECT = 11,
	OVR_CM_INIT_QP_ATTR = 12, /* arg: state; rep: qp */
	OVR_CM_NOTIFY = 13, /* arg: enum ovr_event */
	/* on the channel the id moves to: id, another channel of the same
	 * process (rdma_migrate_id); a service without it: -EOPNOTSUPP */
	OVR_CM_MIGRATE = 14,
	/* dst: the group (IPv4 multicast); arg: join flags; arg2: the id
	 * the MULTICAST_JOIN event names (the caller's, for this join).
	 * The id must be bound to a device and of a datagram port space;
	 * a service without it: -EOPNOTSUPP */
	OVR_CM_JOIN_MCAST = 15,
};

struct ovr_ctl_cm_addr {
	uint32_t ip; /* 0: any */
	uint16_t port; /* 0: any (bind, listen: one is chosen) */
	uint16_t set; /* 1: the address is given */
};

struct ovr_ctl_cm_conn {
	uint32_t qp_num;
	uint32_t qkey;
	uint8_t private_data[OVR_CTL_CM_PRIV_MAX];
	uint8_t private_data_len;
	uint8_t srq;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t rsvd[2];
};

struct ovr_ctl_cm_req {
	uint32_t cmd; /* enum ovr_ctl_cm_cmd */
	uint32_t id;
	uint32_t arg;
	uint32_t arg2;
	struct ovr_ctl_cm_addr src, dst;
	struct ovr_ctl_cm_conn conn;
};

/* What rdma_init_qp_attr() gets: attribute mask (enum ovr_qp_attr_mask)
 * and values, the address vector as the peer's vIP (GID ::ffff:vip). */
struct ovr_ctl_cm_qp_attr {
	uint32_t mask;
	uint32_t state;
	uint32_t access;
	uint32_t qkey;
	uint32_t dest_qpn;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dgid_vip;
	uint8_t path_mtu;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t hop_limit;
	uint8_t port_num;
	uint8_t pkey_index;
	uint8_t rsvd[2];
};

struct ovr_ctl_cm_rep {
	uint32_t id;
	uint16_t ps; /* the id's port space (enum ovr_cm_ps) */
	uint8_t routed; /* a path to the peer is known (route resolved,
			 * or the id came from a REQ) */
	uint8_t rsvd;
	uint64_t guid; /* the device the id is bound to (0: none yet) */
	struct ovr_ctl_cm_addr src, dst;
	struct ovr_ctl_cm_qp_attr qp;
};

/* One event on the channel (the application's end of CM_OPEN's pair). */
struct ovr_ctl_cm_event {
	uint32_t id; /* CONNECT_REQUEST: the new id */
	uint32_t listen_id; /* CONNECT_REQUEST: the listener; else 0 */
	uint32_t event; /* enum ovr_cm_event */
	int32_t status; /* 0, -errno, or (REJECTED) the reject reason */
	struct ovr_ctl_cm_conn conn; /* the peer's parameters */
	uint32_t ud_vip; /* UD ESTABLISHED: the peer's vIP */
	uint32_t rsvd;
};

/* ---- administration ----------------------------------------------------- */

struct ovr_ctl_adm_tenant_req {
	uint32_t vni;
	uint32_t rsvd;
};

/*
 * VIP_ADD / VIP_MOVE: bind tenant vIP @vip to underlay host @host with
 * next hop @mac; @local = 1 when @host is this node: the service then
 * publishes a device for the binding (named @name, or the first free
 * "ovrdmaN" when empty). VIP_DEL uses vni and vip only.
 */
struct ovr_ctl_adm_vip_req {
	uint32_t vni;
	uint32_t vip;
	uint32_t host;
	uint32_t local;
	uint8_t mac[6];
	uint8_t rsvd[2];
	char name[OVR_CTL_NAME_LEN];
};

#define OVR_CTL_SG_MAX 1024u

struct ovr_ctl_adm_sg_req {
	uint32_t vni;
	uint32_t n;
	struct {
		uint32_t prefix;
		uint32_t len;
	} rule[OVR_CTL_SG_MAX]; /* n used; the message may stop after them */
};

/* SHOW: what to show, as a word ("devices", "contexts", "qps",
 * "counters", "tenants"); the reply body is text. */
struct ovr_ctl_adm_show_req {
	char what[16];
};

#ifndef __cplusplus
_Static_assert(sizeof(struct ovr_ctl_hdr) == 16, "ctl hdr");
_Static_assert(sizeof(struct ovr_ctl_dev) == 128, "ctl dev");
_Static_assert(sizeof(struct ovr_ctl_qp_attr) == 96, "ctl qp attr");
_Static_assert(sizeof(struct ovr_ctl_async_event) == 16, "async event");
_Static_assert(sizeof(struct ovr_ctl_create_srq_req) == 32, "create srq");
_Static_assert(sizeof(struct ovr_ctl_create_srq_rep) == 56, "srq rep");
_Static_assert(sizeof(struct ovr_ctl_create_ah_req) == 32, "create ah");
_Static_assert(sizeof(struct ovr_ctl_mcast_req) == 24, "mcast req");
_Static_assert(sizeof(struct ovr_ctl_reg_mr_gpu_req) == 136, "reg mr gpu");
_Static_assert(sizeof(struct ovr_ctl_cm_conn) == 272, "cm conn");
_Static_assert(sizeof(struct ovr_ctl_cm_req) == 304, "cm req");
_Static_assert(sizeof(struct ovr_ctl_resize_cq_rep) == 16, "resize cq rep");
_Static_assert(sizeof(struct ovr_ctl_rereg_mr_req) == 16, "rereg mr");
_Static_assert(sizeof(struct ovr_ctl_cm_qp_attr) == 44, "cm qp attr");
_Static_assert(sizeof(struct ovr_ctl_cm_event) == 296, "cm event");
_Static_assert(sizeof(struct ovr_ctl_reg_mr_req) ==
		       40 + 16 * OVR_CTL_MR_MAX_SEG,
	       "reg mr");
#endif

#endif /* OVRDMA_CTL_H */
