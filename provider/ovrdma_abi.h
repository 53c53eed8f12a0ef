/* SPDX-License-Identifier: MIT */
/*
 * libibverbs' private provider ABI, IBVERBS_PRIVATE_<PABI>, as ovrdma's
 * own declarations (docs/PROVIDER.md section 2).
 *
 * rdma-core does not install the header that defines these structures
 * (libibverbs/driver.h): a provider built outside its tree has to declare
 * them itself, byte for byte, because libibverbs and the provider
 * exchange them by pointer and read each other's fields by offset. The
 * layouts here are those of rdma-core v36.0 to v64.x, chosen by the
 * release of the libibverbs the provider is compiled against
 * (OVRDMA_IBVERBS_RELEASE, which provider/meson.build defines with
 * ibverbs_dep). Every structure but verbs_context_ops is the same
 * in all of them; verbs_context_ops gains verbs in v59, v62 and v64, and
 * the private ABI's name (the PABI, OVRDMA_IBVERBS_PABI) is 34 for
 * v36-v56, 57 for v57-v58, 59 for v59-v63 (v62 adds verbs without a new
 * name) and 64 for v64. v34 and v35 carry PABI 34 with other bodies.
 * ovrdma.c checks the release of the libibverbs it was loaded into and
 * refuses any outside the range of its layout (OVRDMA_IBVERBS_MIN/MAX
 * below); a layout drift is caught by tests/unit/test_provider_abi.c,
 * which drives the libibverbs built against through these declarations.
 *
 * Only what the provider uses is declared; every structure that
 * libibverbs allocates or reads is complete.
 */
#ifndef OVRDMA_PROVIDER_ABI_H
#define OVRDMA_PROVIDER_ABI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <infiniband/verbs.h>

/* OVRDMA_IBVERBS_RELEASE and OVRDMA_IBVERBS_PABI of the libibverbs built
 * against: provider/meson.build defines them with ibverbs_dep */
#if !defined(OVRDMA_IBVERBS_RELEASE) || !defined(OVRDMA_IBVERBS_PABI)
#error "OVRDMA_IBVERBS_RELEASE/PABI undefined: build with meson's ibverbs_dep"
#endif

/* rdma-core releases whose private ABI these declarations describe: those
 * with the verbs_context_ops of OVRDMA_IBVERBS_RELEASE, and its PABI */
#if OVRDMA_IBVERBS_RELEASE >= 36 && OVRDMA_IBVERBS_RELEASE <= 56
#define OVRDMA_IBVERBS_MIN 36
#define OVRDMA_IBVERBS_MAX 56
#define OVRDMA_PABI_OF_RELEASE 34
#elif OVRDMA_IBVERBS_RELEASE >= 57 && OVRDMA_IBVERBS_RELEASE <= 58
#define OVRDMA_IBVERBS_MIN 57
#define OVRDMA_IBVERBS_MAX 58
#define OVRDMA_PABI_OF_RELEASE 57
#elif OVRDMA_IBVERBS_RELEASE >= 59 && OVRDMA_IBVERBS_RELEASE <= 61
#define OVRDMA_IBVERBS_MIN 59
#define OVRDMA_IBVERBS_MAX 61
#define OVRDMA_PABI_OF_RELEASE 59
#elif OVRDMA_IBVERBS_RELEASE >= 62 && OVRDMA_IBVERBS_RELEASE <= 63
#define OVRDMA_IBVERBS_MIN 62
#define OVRDMA_IBVERBS_MAX 63
#define OVRDMA_PABI_OF_RELEASE 59
#elif OVRDMA_IBVERBS_RELEASE == 64
#define OVRDMA_IBVERBS_MIN 64
#define OVRDMA_IBVERBS_MAX 64
#define OVRDMA_PABI_OF_RELEASE 64
#else
#error "rdma-core release without a declared private ABI (36..64)"
#endif
#if OVRDMA_IBVERBS_PABI != OVRDMA_PABI_OF_RELEASE
#error "libibverbs' private ABI is not that of its release"
#endif

/* verbs in verbs_context_ops since rdma-core v59, v62 and v64 */
#define OVRDMA_OPS_V59 (OVRDMA_IBVERBS_RELEASE >= 59)
#define OVRDMA_OPS_V62 (OVRDMA_IBVERBS_RELEASE >= 62)
#define OVRDMA_OPS_V64 (OVRDMA_IBVERBS_RELEASE >= 64)

/* Lengths of the sysfs names and paths libibverbs keeps per device. */
#define OVRDMA_SYSFS_NAME_MAX 64
#define OVRDMA_SYSFS_PATH_MAX 256

/* libibverbs' intrusive list link (ccan/list's list_node). */
struct ovrdma_abi_link {
	struct ovrdma_abi_link *next;
	struct ovrdma_abi_link *prev;
};

/* How a provider's match table names a device (verbs_match_ent.kind). */
enum {
	OVRDMA_MATCH_END = 0,
	OVRDMA_MATCH_PCI = 1,
	OVRDMA_MATCH_MODALIAS = 2,
	OVRDMA_MATCH_DRIVER_ID = 3,
};

/* One entry of a provider's match table; a zero kind ends the table.
 * 24 bytes. */
struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

/*
 * A device as libibverbs found it in sysfs (or netlink), before any
 * provider claimed it; handed to match_device and alloc_device, owned by
 * libibverbs.
 */
struct verbs_sysfs_dev {
	struct ovrdma_abi_link entry;
	void *provider_data;
	const struct verbs_match_ent *match; /* table entry that matched */
	unsigned int flags;
	char sysfs_name[OVRDMA_SYSFS_NAME_MAX]; /* class/infiniband_verbs/X */
	dev_t sysfs_cdev;
	char ibdev_name[OVRDMA_SYSFS_NAME_MAX]; /* "ovrdma0" */
	char ibdev_path[OVRDMA_SYSFS_PATH_MAX]; /* .../class/infiniband/N */
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver; /* class/infiniband_verbs/X/abi_version, or 0 */
	struct timespec time_created;
};

struct verbs_device;

/* What a provider gives verbs_register_driver_34: how to recognise its
 * devices and how to make device and context objects. */
struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table; /* or NULL */
	const struct verbs_device_ops **static_providers;
	/* called after the table match (if any); true claims the device */
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

/* A device object: the provider allocates it (usually inside a larger
 * structure), libibverbs fills ops, refcount and sysfs. */
struct verbs_device {
	struct ibv_device device; /* first: ibv_device * points here */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct ovrdma_abi_link entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support; /* IB_UVERBS_CORE_SUPPORT_* */
};

/* ibv_mr with what libibverbs keeps beside it. */
enum ovrdma_abi_mr_type {
	OVRDMA_MR_TYPE_MR = 0,
	OVRDMA_MR_TYPE_NULL_MR = 1,
	OVRDMA_MR_TYPE_IMPORTED_MR = 2,
	OVRDMA_MR_TYPE_DMABUF_MR = 3,
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ovrdma_abi_mr_type mr_type;
	int access;
};

/* verbs_qp.comp_mask: OVRDMA_VERBS_QP_EX makes ibv_qp_to_qp_ex() give
 * the qp_ex (libibverbs' VERBS_QP_EX). */
enum {
	OVRDMA_VERBS_QP_XRCD = 1 << 0,
	OVRDMA_VERBS_QP_EX = 1 << 1,
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask; /* OVRDMA_VERBS_QP_* */
	struct ibv_xrcd *xrcd; /* struct verbs_xrcd in libibverbs */
};

struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

/*
 * Every verb a provider may implement, in libibverbs' order (sorted by
 * name). libibverbs copies the non-NULL ones into the context
 * (verbs_set_ops) and calls the rest as "not supported" (EOPNOTSUPP or
 * ENOSYS, NULL with errno for constructors).
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
#if OVRDMA_OPS_V64
	void *(*alloc_buf)(struct ibv_pd *pd, size_t size,
			   struct ibv_buf **buf);
#endif
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
#if OVRDMA_OPS_V59
	struct ibv_dmah *(*alloc_dmah)(struct ibv_context *context,
				       struct ibv_dmah_init_attr *attr);
#endif
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
	struct ibv_counters *(*create_counters)(
		struct ibv_context *context,
		struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(
		struct ibv_context *context,
		struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *context,
		struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *attr);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *attr);
#if OVRDMA_OPS_V59
	int (*dealloc_dmah)(struct ibv_dmah *dmah);
#endif
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
#if OVRDMA_OPS_V62
	int (*dm_export_dmabuf_fd)(struct ibv_dm *dm);
#endif
#if OVRDMA_OPS_V64
	void (*free_buf)(struct ibv_buf *buf);
#endif
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			  int attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
#if OVRDMA_OPS_V62
	int (*query_port_speed)(struct ibv_context *context, uint32_t port_num,
				uint64_t *speed);
#endif
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr);
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
#if OVRDMA_OPS_V59
	struct ibv_mr *(*reg_mr_ex)(struct ibv_pd *pd,
				    struct ibv_mr_init_attr *mr_init_attr);
#endif
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

/* Verbs in verbs_context_ops: 76 up to v58, 3 more from v59, 2 from v62,
 * 2 from v64. */
#define OVRDMA_NOPS \
	(76 + 3 * OVRDMA_OPS_V59 + 2 * OVRDMA_OPS_V62 + 2 * OVRDMA_OPS_V64)

/* ---- what libibverbs exports to providers (version
 * IBVERBS_PRIVATE_<PABI>) */

#define OVRDMA_CONCAT_(a, b) a##b
#define OVRDMA_CONCAT(a, b) OVRDMA_CONCAT_(a, b)
/* verbs_register_driver_<PABI>, as rdma-core's driver.h names it */
#define verbs_register_driver \
	OVRDMA_CONCAT(verbs_register_driver_, OVRDMA_IBVERBS_PABI)

/* Adds a provider; its devices are matched at the next device scan. */
void verbs_register_driver(const struct verbs_device_ops *ops);

/*
 * Allocates @size zeroed bytes holding a struct verbs_context at
 * @vctx_offset and initialises it for @device and @cmd_fd (which it
 * takes over: closed on failure). NULL with errno on failure.
 */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t size,
				    struct verbs_context *vctx_offset,
				    uint32_t driver_id);
/* Undoes the above but for the memory (closes cmd_fd and async_fd). */
void verbs_uninit_context(struct verbs_context *vctx);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

#define OVRDMA_ALLOC_CONTEXT(dev, fd, type, member)                        \
	((type *)_verbs_init_and_alloc_context(                            \
		(dev), (fd), sizeof(type),                                 \
		(struct verbs_context *)(uintptr_t)offsetof(type, member), \
		0 /* RDMA_DRIVER_UNKNOWN */))

/* Sizes libibverbs and this file agree on (checked again at run time by
 * tests/unit/test_provider_abi.c). */
_Static_assert(sizeof(struct verbs_match_ent) == 24, "verbs_match_ent");
_Static_assert(offsetof(struct verbs_sysfs_dev, sysfs_name) == 36,
	       "verbs_sysfs_dev");
_Static_assert(sizeof(struct verbs_sysfs_dev) == 992, "verbs_sysfs_dev");
_Static_assert(sizeof(struct verbs_device_ops) == 72, "verbs_device_ops");
_Static_assert(offsetof(struct verbs_device, ops) == sizeof(struct ibv_device),
	       "verbs_device");
_Static_assert(sizeof(struct verbs_context_ops) == OVRDMA_NOPS * sizeof(void *),
	       "verbs_context_ops: one pointer per verb");
_Static_assert(offsetof(struct verbs_qp, comp_mask) == sizeof(struct ibv_qp_ex),
	       "verbs_qp");
_Static_assert(offsetof(struct verbs_mr, mr_type) == sizeof(struct ibv_mr),
	       "verbs_mr");

#endif /* OVRDMA_PROVIDER_ABI_H */
