/* SPDX-License-Identifier: MIT */
/*
 * ovrdmad internals (docs/SERVICE.md): one dataplane thread runs the
 * rings, the transport engine, the VPC overlay and the port; a control
 * thread serves the control socket, sysfs and the CM's requests with the
 * dataplane parked (svc_stw_enter), so that the two never run at once
 * and nothing needs a lock. The pieces:
 *
 *   svc_conf.c   configuration file and flags
 *   svc_loop.c   start, stop, the dataplane loop and its sleeping, the
 *                control thread, stopping the world
 *   svc_dp.c     rings <-> engine <-> overlay, completions
 *   svc_obj.c    handles, doorbells, CQ slots and the QP index: what the
 *                control side and the dataplane both use
 *   svc_conn.c   control socket: connections, HELLO/OPEN, dispatch,
 *                context teardown
 *   svc_reply.c  replies to control requests, per-context limits
 *   svc_verbs.c  PDs, MRs (host and GPU), channels, CQs, AHs
 *   svc_qp.c     QPs and SRQs: rings, attributes, state
 *   svc_admin.c  devices, tenants, vIPs, security groups, ovrdmactl show
 *   svc_sysfs.c  the synthetic sysfs tree
 *   ovrdmad.c    main: EAL, the port, signals, telemetry
 *
 * Calls point one way (no cycle): svc_loop.c uses svc_dp.c, svc_conn.c,
 * svc_admin.c and svc_sysfs.c; svc_conn.c uses svc_verbs.c, svc_qp.c and
 * svc_admin.c; those use svc_reply.c, svc_obj.c and, for kicks and
 * a context's end only, svc_dp.c; svc_dp.c uses svc_obj.c and nothing of the control side.
 *
 * The port is behind struct svc_port_ops so that svc_dp.c does not
 * depend on DPDK (ovrdmad.c provides the DPDK port).
 */
#ifndef OVRDMA_SVC_H
#define OVRDMA_SVC_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <ovrdma/ctl.h>
#include <ovrdma/engine.h>
#include <ovrdma/gdr.h>
#include <ovrdma/ring.h>
#include <ovrdma/util.h>
#include <ovrdma/vpc.h>

#define SVC_MAX_DEVS 64
/* dataplane cores at most (dataplane_cores; docs/SERVICE.md section 5) */
#define SVC_MAX_CORES 16
/* ctx.db_owner of a doorbell word that holds no QP or SRQ */
#define SVC_DB_NONE 0xffu
/* CQs a round checks for events at its end (more: checked at once) */
#define SVC_NOTIFY_MAX 32u
/* frames one core hands another at once (struct svc_xring) */
#define SVC_XRING_DEPTH 1024u
#define SVC_MAX_TENANT_VIPS 256
/* libibverbs keeps sysfs paths in 256 bytes (IBV_SYSFS_PATH_MAX): DIR +
 * "/class/infiniband/" + a 15-character name must fit. */
#define SVC_SYSFS_PATH_MAX 192
#define SVC_SYSFS_DEFAULT OVR_CTL_SYSFS_DEFAULT
#define SVC_PAGE 4096ull
/* refused connection requests remembered at once (struct svc) */
#define SVC_CM_REFUSED 64
/* A datagram to a multicast group goes to at most this many nodes of
 * its tenant (svc_dp.c tx_mcast; the rest counted: tx_mcast_truncated) */
#define SVC_MCAST_HOSTS 1024
/*
 * Entries of a CQ ring at most (2^22: max_cqe 4194303, as mlx5 offers):
 * 192 MB of ring, a memfd both sides map without touching it, so only the
 * pages completions were written to cost memory (docs/PROVIDER.md, "CQ
 * memory"); cq_mb_per_context bounds what a context's rings may reach.
 */
#define SVC_CQ_MAX_DEPTH (1u << 22)
/* Bytes of a CQ ring of @depth entries (the memfd's length). */
#define SVC_CQ_RING_LEN(depth)                \
	svc_page_up(OVR_RING_CQ_ENTRIES_OFF + \
		    (uint64_t)(depth) * sizeof(struct ovr_ring_cqe))
/* The largest memory region (max_mr_size) but the implicit one. */
#define SVC_MR_MAX_SIZE (1ull << 40)
#define SVC_QP_MAX_WR 16384u /* the engine's limit, per queue */
#define SVC_SRQ_MAX_WR 16384u /* the engine's limit */
/* With batches of GPU copies in flight an idle loop sleeps at most this
 * long, doubling from SVC_DEV_WAIT_MIN_NS while none completes: a copy of
 * a frame takes microseconds on a GPU; a stuck one must not cost a core. */
#define SVC_DEV_WAIT_MIN_NS 20000ull
#define SVC_DEV_WAIT_MAX_NS 1000000ull

/* epoll tags */
#define SVC_EV_LISTEN 1ull
#define SVC_EV_WAKE 2ull
#define SVC_EV_TIMER 3ull
#define SVC_EV_RX 4ull
#define SVC_EV_NDEV 5ull /* rtnetlink: addresses, links (svc_sysfs.c) */
#define SVC_EV_STOP 6ull /* the control thread's stop eventfd */
#define SVC_EV_CTX_MIN 16ull /* larger values: struct svc_ctx pointers */
/* a context pointer with this bit set: its pidfd (struct svc_ctx is
 * aligned, so the bit is free) */
#define SVC_EV_PIDFD 1ull
/* ...this bit: its CM channel's socket has room again (EPOLLOUT) */
#define SVC_EV_CMOUT 2ull

static inline uint64_t svc_page_up(uint64_t n)
{
	return (n + SVC_PAGE - 1) & ~(SVC_PAGE - 1);
}

static inline uint64_t svc_now(void)
{
	return ovr_mono_ns();
}

/* ---- configuration ------------------------------------------------------ */

struct svc_conf_vip {
	uint32_t vni, vip, host;
	bool local;
	uint8_t mac[6];
	char name[OVR_CTL_NAME_LEN];
};

struct svc_conf_sg {
	uint32_t vni, prefix, len;
};

struct svc_conf {
	char socket[108];
	/* synthetic sysfs tree for libibverbs (svc_sysfs.c); "" = none */
	char sysfs[SVC_SYSFS_PATH_MAX];
	char group[64]; /* owner group of the socket; "" = root's */
	char eal[1024]; /* extra EAL arguments */
	uint32_t host; /* underlay IPv4 of this node */
	uint32_t underlay_mtu;
	uint64_t rate_bps;
	uint64_t base_rtt_ns;
	char cc[16];
	uint32_t spin_us; /* busy-poll this long before sleeping */
	uint32_t dp_cores; /* dataplane cores (threads), 1..SVC_MAX_CORES; 0: auto */
	uint32_t port_queues; /* queue pairs asked of the port; 0: auto */
	uint32_t max_contexts;
	uint32_t ctx_max_qp, ctx_max_cq, ctx_max_mr, ctx_max_pd;
	uint32_t ctx_max_srq, ctx_max_ah;
	uint64_t ctx_max_pinned; /* bytes; 0: unlimited */
	uint64_t ctx_max_cq_bytes; /* CQ rings of a context, bytes */
	uint64_t cm_channel_bytes; /* a CM channel's socket, at most */
	uint32_t eng_max_qp; /* QPs of the whole node */
	/* [gpu]: BAR copies through GDRCopy (docs/GPU.md §1.2) */
	bool gdrcopy; /* auto (where GDRCopy is there), or off */
	uint32_t gdrcopy_h2d_max, gdrcopy_d2h_max; /* message bytes */
	uint32_t tenants[SVC_MAX_DEVS];
	uint32_t ntenants;
	struct svc_conf_vip vips[SVC_MAX_TENANT_VIPS];
	uint32_t nvips;
	struct svc_conf_sg sgs[SVC_MAX_TENANT_VIPS];
	uint32_t nsgs;
};

/* svc_conf.c: the configuration file and the values in it */
void svc_conf_default(struct svc_conf *c);
/* 0, or -1 with a message on stderr naming the file and line. */
int svc_conf_load(struct svc_conf *c, const char *path);
/* svc_cpu.c: which CPUs the threads run on (docs/SERVICE.md 5, "CPUs") */
/* dataplane_cores = auto: the CPUs of @given less one, 1 .. SVC_MAX_CORES */
uint32_t svc_cores_auto(const cpu_set_t *given);
/* core_cpu[0] -1 (the main thread stays where EAL put it); cores 1 ..
 * @ncores - 1, then *@ctl_cpu: each the next CPU of @given not in
 * @main_cpus (core 0's), -1 once there is none. */
void svc_cpu_plan(uint32_t ncores, const cpu_set_t *given,
		  const cpu_set_t *main_cpus, int *core_cpu, int *ctl_cpu);
/* @t on @cpu, or (-1) on any of @given (unless @given is empty). */
int svc_cpu_pin(pthread_t t, int cpu, const cpu_set_t *given);
/* "0-3,8": @set as a list into @buf; the length. */
size_t svc_cpu_list(const cpu_set_t *set, char *buf, size_t cap);
/* "100g", "25m", "1000000000" -> bits per second; -1 on error. */
int svc_parse_rate(const char *s, uint64_t *bps);
int svc_parse_ipv4(const char *s, uint32_t *ip);
int svc_parse_mac(const char *s, uint8_t mac[6]);

/* ---- the port ----------------------------------------------------------- */

struct svc_port_stats {
	uint64_t tx_dropped; /* the TX ring stayed full: dropped */
	uint64_t rx_missed; /* the port had no room or no buffer */
};

/*
 * The port. Its queue pairs (queues(), 1 without it): dataplane core q
 * receives, transmits and flushes on queue q below queues(); a core
 * beyond has none and goes through core 0 (docs/SERVICE.md section 5).
 * A queue is used by one thread at a time.
 */
struct svc_port_ops {
	/* Up to @n received frames of queue @q; *@frames[i] / @lens[i]
	 * stay valid until rx_done. */
	unsigned int (*rx)(void *port, unsigned int q, void **bufs,
			   const uint8_t **frames, uint32_t *lens,
			   unsigned int n);
	void (*rx_done)(void *port, void **bufs, unsigned int n);
	/* A buffer with OVR_WIRE_ENCAP_LEN bytes of headroom before the
	 * returned pointer and @cap bytes after it; NULL when none.
	 * buf_data() gives the same pointer back from @buf. */
	uint8_t *(*tx_alloc)(void *port, uint32_t cap, void **buf);
	uint8_t *(*buf_data)(void *port, void *buf);
	/* Queue the frame [frame, frame + len) held by @buf on queue @q. */
	void (*tx)(void *port, unsigned int q, void *buf, uint8_t *frame,
		   uint32_t len);
	void (*tx_free)(void *port, void *buf);
	/* Send what tx queued on queue @q. */
	void (*flush)(void *port, unsigned int q);
	/* (optional) queue pairs the port was set up with (1 without) */
	unsigned int (*queues)(void *port);
	/* An fd that becomes readable when frames arrive on queue @q while
	 * its interrupts are armed, or -1 (then the idle loop naps briefly
	 * instead). */
	int (*rx_intr_fd)(void *port, unsigned int q);
	void (*rx_intr)(void *port, unsigned int q, bool enable);
	/* (optional) called on each dataplane thread but the first, before
	 * it uses the port (the DPDK port registers it as an lcore) */
	void (*thread_init)(void *port);
	/* (optional) rx_intr_fd said readable: take the signal; without
	 * it the loop reads 8 bytes (an eventfd) */
	void (*rx_intr_ack)(void *port, unsigned int q);
	/* Is the link up? (for ovrdmactl and the testbed) */
	bool (*link_up)(void *port);
	/* Called about every 25 ms (busy or idle): link upkeep. */
	void (*tick)(void *port, uint64_t now_ns);
	/* Frames the port lost on its own (optional). */
	void (*stats)(void *port, struct svc_port_stats *st);
	/* (optional) Call @fn for each piece of memory the port's frame
	 * buffers (received and transmitted) live in: what the GPU copy
	 * engine pins. Stops at, and returns, the first nonzero @fn. */
	int (*buf_mem)(void *port, int (*fn)(void *arg, void *addr, size_t len),
		       void *arg);
};

/* ---- objects ------------------------------------------------------------ */

enum svc_obj_type {
	SVC_OBJ_FREE = 0,
	SVC_OBJ_PD,
	SVC_OBJ_MR,
	SVC_OBJ_CHANNEL,
	SVC_OBJ_CQ,
	SVC_OBJ_QP,
	SVC_OBJ_SRQ,
	SVC_OBJ_AH,
	SVC_OBJ_MW,
};

struct svc_ctx;

struct svc_pd {
	uint32_t id; /* node-wide PD number given to the engine */
	uint32_t users; /* MRs and QPs on it */
};

/* The cookie of an engine region behind ops.dev_copy (svc_dp.c
 * eng_dev_copy dispatches on @kind). */
enum svc_dev_kind {
	SVC_DEV_GPU = 1, /* @p: struct ovr_gdr_mem, imported through gdr/ */
	SVC_DEV_PROC, /* @p: struct svc_ctx, the application's memory */
};

struct svc_devref {
	enum svc_dev_kind kind;
	void *p;
};

/* How the service reaches a region (ovrdmactl show mrs) */
enum svc_mr_route {
	SVC_MR_OBJ = 1, /* the application's shared objects, mapped */
	SVC_MR_PROC, /* reads and writes of the application's /proc/self/mem */
	SVC_MR_GPU, /* GPU memory through gdr/ */
};

/* A memory window: its key's top 24 bits name it in the engine. */
struct svc_mw {
	uint32_t pd_handle;
	uint32_t rkey; /* as allocated (binds change the low 8 bits) */
};

struct svc_mr {
	uint32_t pd_handle;
	uint32_t key;
	enum svc_mr_route route;
	uint32_t access; /* OVR_ACCESS_* the region allows */
	uint64_t va, len; /* the application's addresses */
	struct svc_devref dev; /* the engine's cookie, when behind dev_copy */
	void *map; /* the service's view of the span, with the huge pages
		      around it on hugetlbfs; NULL for GPU memory */
	size_t map_len;
	uint64_t pinned; /* counted against pinned_mb_per_context */
	bool odp; /* on demand (process route, not counted as pinned) */
	bool implicit; /* on demand over the whole address space */
	uint32_t nseg_obj; /* object segments mapped */
	void *obj_at[OVR_CTL_MR_MAX_SEG]; /* tracked mappings (svc_mem.c) */
	uint64_t truncated; /* pages past a truncated object's end */
	struct ovr_gdr_mem *gpu; /* GPU memory imported through gdr/ */
	/* ibv_rereg_mr (svc_do_rereg_mr): registered for device writes
	 * (its pages checked, its objects mapped writable), and whether a
	 * failed REREG_MR left it unusable until DEREG_MR */
	bool dev_writes;
	bool dead;
};

struct svc_channel {
	int fd; /* write end of the application's pipe */
	uint32_t users;
};

struct svc_cq {
	struct svc_ctx *ctx;
	uint32_t handle;
	uint32_t slot; /* index in svc.cqs, the engine's CQ number */
	struct ovr_ring_cq *ring;
	struct ovr_ring_cqe *cqe;
	size_t map_len;
	uint32_t depth;
	/* the next CQE's index: QPs of several dataplane cores may share
	 * the CQ, each reserves its slot with a compare-and-swap against
	 * the ring's cons (svc_dp.c, cq_write) */
	_Atomic uint32_t prod;
	_Atomic uint32_t last_arm; /* the arm word an event was sent for */
	uint32_t chan_handle; /* 0: none */
	int chan_fd;
	uint64_t user_handle;
	uint32_t users; /* QPs */
	_Atomic bool overflowed; /* since the last CQE that fit: CQ_ERR sent */
	/* a bit per core whose QPs have used it (sticky); multi: more than
	 * one, and then sol_seen: a solicited or error CQE since the last
	 * event (svc_dp.c, cq_write) */
	uint32_t cores;
	bool multi;
	_Atomic bool sol_seen;
	/* the ring's cons as last read: read again only when the slots up
	 * to it are all taken (the client writes cons at every poll, so a
	 * read per CQE would fetch its line each time) */
	_Atomic uint32_t cons_seen;
};

struct svc_srq {
	struct svc_ctx *ctx;
	/* the dataplane core whose engine has it (its QPs are there too:
	 * an engine's SRQ feeds that engine's QPs) */
	struct svc_core *core;
	uint32_t handle;
	uint32_t srqn; /* the engine's */
	uint32_t db_index;
	uint32_t pd_handle;
	uint64_t user_handle;
	struct ovr_ring_srq *ring;
	uint8_t *slots;
	size_t map_len;
	uint32_t depth, stride, max_sge;
	uint32_t cons;
	uint32_t users; /* QPs */
};

/* An address handle: where a UD send goes, inside the device's tenant. */
struct svc_ah {
	uint32_t pd_handle;
	uint32_t dst_vip;
	uint8_t dscp;
};

struct svc_qp {
	struct svc_ctx *ctx;
	/* the dataplane core whose engine has it, chosen at CREATE_QP (the
	 * one serving fewest QPs, or its SRQ's); its QPN's tag names it */
	struct svc_core *core;
	uint32_t type; /* OVR_QPT_RC, _UC or _UD */
	struct svc_srq *srq; /* or NULL */
	uint32_t vni, vip; /* the device's: UD sends from, receives at */
	uint32_t handle;
	uint32_t qpn;
	uint32_t db_index;
	uint32_t pd_handle;
	struct svc_cq *scq, *rcq;
	uint64_t user_handle;
	struct ovr_ring_qp *ring;
	uint8_t *sq_slots, *rq_slots;
	size_t map_len;
	uint32_t sq_depth, rq_depth, sq_stride, rq_stride;
	uint32_t sq_cons, rq_cons;
	struct ovr_ctl_qp_cap cap;
	struct ovr_vpc_flow flow;
	bool connected; /* flow valid (RTR or later) */
	bool stalled; /* the engine refused a WQE for lack of room */
	struct svc_qp *stall_next;
	/* a completion of this QP found its CQ full: the loop moves the QP
	 * to ERROR (svc_dp.c, cq_write) */
	bool cq_lost;
	struct svc_qp *lost_next;
	uint32_t nmcast; /* groups it is attached to (svc_mcast.c) */
};

/* A multicast group of a tenant with members on this node. */
struct svc_mcast_member {
	struct svc_qp *qp;
	bool no_loopback; /* OVR_CTL_MCAST_NO_LOOPBACK */
};

struct svc_mcast_grp {
	uint32_t vni, group; /* group: IPv4, 224.0.0.0/4 */
	uint32_t n, cap;
	struct svc_mcast_member *m;
};

struct svc_obj {
	uint8_t type;
	uint32_t gen;
	void *p;
};

struct svc_dev {
	bool used;
	struct ovr_ctl_dev d;
	uint32_t contexts;
};

/* A drain reads the sources of the send WRs it takes that are at most
 * SVC_PF_MSG long, in one call, when they lie within SVC_PF_BYTES. */
#define SVC_PF_MSG 4096u
#define SVC_PF_BYTES (16u << 10)
/* ...with at most this much of a neighbouring span either side */
#define SVC_PF_KEEP 4096u
/* ...and keeps this many spans (several QPs' buffers) */
#define SVC_PF_SPANS 4u
/* source ranges of one drain checked against the spans (more: all go) */
#define SVC_PF_RANGES 64u
/* A run of adjoining queued copies is written from one buffer of at
 * most this much (svc_dp.c, pq_call). */
#define SVC_GATHER_BYTES (256u << 10)

struct svc_ctx {
	int fd;
	uint32_t id;
	pid_t pid;
	/* the peer's pidfd (-1: none), opened at accept while it was still
	 * connected, in the loop's epoll set: readable means the peer
	 * exited, and the loop sets @dead (svc_ctx_exited); process-route
	 * copies check @dead and make no system call once it is set */
	int pidfd;
	bool dead;
	/* the process route's address space: the application's
	 * /proc/self/mem from its first process-route REG_MR (-1 until
	 * then; svc_procmem.c, docs/SERVICE.md section 4.2) */
	int memfd;
	/* the process route's reads ahead, one set per dataplane core
	 * (pr[core->idx]: each core's QPs of the context use its own) */
	struct svc_ctx_pr {
		/* of send WRs' sources (svc_dp.c, svc_proc_src):
		 * SVC_RA_BYTES at ra (NULL until needed) hold the
		 * application's [ra_lo, ra_hi) */
		uint8_t *ra;
		uint64_t ra_lo, ra_hi;
		/* at drain time, of small send WRs' sources (svc_dp.c,
		 * sq_prefetch): up to SVC_PF_SPANS disjoint spans, each
		 * holding the application's [lo, hi) (empty: hi <= lo) in
		 * SVC_PF_BYTES at buf (NULL until needed), read after every
		 * send WR of the core's QPs of the context now in the
		 * engine whose source it holds was posted; seq: newer is
		 * larger */
		struct svc_pf_span {
			uint8_t *buf;
			uint64_t lo, hi, seq;
		} pf[SVC_PF_SPANS];
		uint64_t pf_seq;
	} pr[SVC_MAX_CORES];
	uid_t uid;
	gid_t gid;
	char client[32];
	bool hello;
	int dev; /* -1 until OPEN */
	/* the dataplane core it was given at OPEN (its wake fd came first;
	 * counted in core->nctx); its QPs and SRQs each have their own */
	struct svc_core *core;
	int async_fd;
	struct ovr_ring_db *db;
	/* doorbell words by core: each word of db->bits holds the indexes
	 * of one core's QPs and SRQs only (db_owner[w]: the core's index,
	 * SVC_DB_NONE: no QP or SRQ in it), and db_words[k] is the mask of
	 * core k's words, which core k alone takes out of db->summary
	 * (svc_obj.c, svc_db_alloc; svc_dp.c, db_scan) */
	uint8_t db_owner[OVR_RING_DB_WORDS];
	uint64_t db_words[SVC_MAX_CORES];
	struct svc_qp *db_qp[OVR_RING_MAX_QP_PER_CTX];
	struct svc_srq *db_srq[OVR_RING_MAX_QP_PER_CTX];
	struct svc_obj *obj;
	uint32_t nobj;
	uint32_t nqp, ncq, nmr, npd, nsrq, nah;
	uint32_t nmw; /* memory windows (against mr_per_context) */
	uint64_t pinned;
	uint64_t cq_bytes; /* its CQ rings (against cq_mb_per_context) */
	_Atomic uint64_t async_dropped; /* written by any core */
	uint32_t limits_logged; /* 1 << enum svc_limit: said once */
	/* a CM event channel (CM_OPEN): the service's end of the events;
	 * what its socket could not take waits in cm_q (FIFO), the
	 * socket's room watched (EPOLLOUT) while it does (svc_cm.c) */
	int cm_ev_fd;
	struct svc_cm_ev *cm_q, **cm_q_tail;
	uint32_t cm_q_n; /* events in cm_q */
	uint32_t cm_nids; /* ids it owns: cm_q_n <= SVC_CM_EVQ_PER_ID x it */
	struct svc_ctx *next;
};

/* ---- the service -------------------------------------------------------- */

struct svc_counters {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t rx_dropped_vpc; /* by ovr_vpc_decap, per reason in vpc */
	uint64_t rx_short_pdu, rx_no_qp, rx_foreign; /* after decap */
	uint64_t rx_ud_foreign; /* of rx_foreign: datagrams for a UD QP of
				   another tenant or vIP */
	uint64_t tx_ud, rx_ud; /* datagrams */
	/* datagrams sent to multicast groups, and the copies they made
	 * (one per node of the tenant, this one if it has members);
	 * datagrams received for a group, the deliveries to member QPs,
	 * and those for a group without a member here */
	uint64_t tx_mcast, tx_mcast_copies;
	uint64_t tx_mcast_truncated; /* more nodes than SVC_MCAST_HOSTS */
	uint64_t rx_mcast, rx_mcast_delivered, rx_mcast_nomember;
	uint64_t cm_mcast_joins; /* rdma_cm JOIN_MCAST answered */
	uint64_t tx_no_route, tx_nobuf;
	uint64_t tx_answers; /* TERMINATEs for PDUs of QPs that are gone */
	uint64_t tx_loopback; /* frames for a vIP served here, delivered
				 without the port */
	uint64_t tx_loopback_full; /* ...dropped: the loopback queue was full */
	uint64_t wqe_bad; /* malformed WQEs from applications */
	uint64_t cm_rx, cm_tx, cm_rx_bad, cm_retx; /* CM messages */
	uint64_t cm_ev_dropped; /* events past a channel's bound (never
				   expected: docs/PROVIDER.md "rdma_cm") */
	uint64_t cm_ev_queued; /* events that waited for the socket's room */
	uint64_t cm_ids; /* CM ids alive (lingering ones included) */
	uint64_t cq_overflows;
	uint64_t wakeups, sleeps;
	/* loop rounds that did work, and the time from their start to the
	 * next round's (svc_loop.c): the dataplane's busy time, idle polling
	 * and naps left out; and the time of rounds that found nothing and
	 * did not sleep (polling). Wall time: a round during which the
	 * thread was descheduled counts whole. */
	uint64_t busy_rounds, busy_ns, poll_ns;
	/* every SVC_CPU_SAMPLE-th round is also timed on the thread's CPU
	 * clock: wall and CPU time of the sampled busy and polling rounds,
	 * whose ratio is the share of that wall time the thread actually
	 * ran (descheduled time left out) */
	uint64_t busy_smp_ns, busy_smp_cpu_ns, poll_smp_ns, poll_smp_cpu_ns;
	uint64_t ctx_opened, ctx_closed;
	uint64_t dev_parked; /* rx buffers kept for a batch of GPU copies */
	uint64_t dev_naps; /* sleeps cut short for batches in flight */
	uint64_t mr_route_obj; /* registrations of mapped objects */
	uint64_t mr_route_proc; /* ...of the process route (svc_procmem.c) */
	uint64_t mr_odp; /* ...of those, on demand (implicit included) */
	uint64_t mr_odp_implicit; /* ...of the whole address space */
	uint64_t proc_copy_bytes, proc_copy_calls; /* its copies */
	uint64_t proc_copy_fault; /* ...that found no memory: -EFAULT */
	uint64_t proc_copy_queued; /* copies run at a batch close */
	uint64_t proc_ra_hits; /* send sources copied from a read-ahead */
	uint64_t proc_pf_reads; /* small sends' sources read at drain */
	uint64_t proc_pf_hits; /* ...copies served from such a read */
	/* frames handed to another core (for its QPs, or to the port's
	 * core 0), and those dropped because its ring was full (recovered
	 * as any loss is) */
	uint64_t xcore_frames, xcore_full;
};

/* Where the PDU being handed to the engine came from, while it is: the
 * engine answers a PDU for a QPN that does not exist (TERMINATE) at once,
 * with peer = SVC_FROM_RX and no QP. */
#define SVC_FROM_RX 1u
/* ...and a datagram for a UD QP: SVC_FROM_UD | the sender's vIP (the
 * tenant and the destination are the QP's), for ops->ud_grh. */
#define SVC_FROM_UD (1ull << 40)
/* A UD WQE's peer (ops->tx): SVC_PEER_UD | dscp << 32 | destination vIP. */
#define SVC_PEER_UD (1ull << 41)
struct svc_rx_src {
	bool valid;
	uint32_t vni, src_vip, dst_vip; /* src: the sender */
	uint32_t sqpn, dqpn;
};

/* Frames whose destination is served by this node: queued by the
 * transmit path, received by the loop (never sent out of the port, whose
 * switch would not send them back). */
#define SVC_LOOP_DEPTH 1024u
struct svc_loop_frame {
	void *token; /* the transmit buffer (NULL: handed to another core) */
	const uint8_t *frame;
	uint32_t len;
	/* handed over by another core (svc_dp.c, handover): received here
	 * for this core's QPs only, never handed on */
	bool handed;
};

/*
 * Frames one dataplane core hands another (svc_dp.c): one producer, one
 * consumer, free-running indexes. Frames for a QP of the other core
 * (received, or looped back), and with several cores the frames a core
 * sends, to core 0, which owns the port.
 */
struct svc_xring {
	_Atomic uint32_t head; /* the consumer's */
	_Atomic uint32_t tail; /* the producer's */
	struct svc_loop_frame e[SVC_XRING_DEPTH];
};
/*
 * Received frames whose buffers a batch of GPU copies may still read
 * (svc_dp.c, "buffers that wait for GPU copies"): an rx buffer, or a
 * mark saying that loopback frames up to @upto wait for batch @seq.
 * The engine keeps at most OVR_ENG_MAX_DEV_BATCHES in flight and each
 * loop round parks at most one rx burst, so 1024 is never short
 * (checked anyway: when full, the loop waits for every batch).
 */
#define SVC_PARK_DEPTH 1024u
struct svc_park {
	uint64_t seq; /* the engine's batch (ovr_eng_dev_close) */
	void *buf;
};
struct svc_loop_mark {
	uint64_t seq;
	uint32_t upto; /* loop_free may advance to here once seq is done */
};

/* A process-route read-ahead holds this much of a send WR's source. */
#define SVC_RA_BYTES (256u << 10)

/* A process-route copy queued for the batch being closed (svc_dp.c). */
struct svc_pcopy {
	struct svc_ctx *c;
	uint64_t addr;
	void *host;
	uint32_t len;
	uint32_t ord; /* its number in the engine's batch */
	bool to_dev, done;
};

/* pieces of frame-buffer memory the port names (port_ops->buf_mem) */
#define SVC_BUF_RANGES 64

struct svc_buf_range {
	uintptr_t lo, hi;
};

/*
 * A dataplane core (docs/SERVICE.md sections 5 and 10): its engine, its
 * VPC reader, and the state of its rounds. The control thread touches
 * it only with the world stopped.
 */
struct svc_core {
	struct svc *s;
	uint32_t idx;
	uint32_t rx_first; /* port_steer: the queue its next round reads first */
	uint32_t nrxq; /* svc_core_nrxq, set once the port's queues are known */
	struct ovr_eng *eng;
	/* the VPC reader handle its callbacks use: its own, or the control
	 * thread's while that thread runs it with the world stopped */
	struct ovr_vpc_thread *vt, *own_vt;
	/* its GPU copy channel (core 0: s->gdr itself), once the CUDA
	 * driver is loaded (docs/GPU.md 1.1) */
	struct ovr_gdr *gdr;
	/* its epoll set: wake_fd, timer_fd and the port's interrupt */
	int dp_epfd;
	int wake_fd; /* eventfd that clients write when svc->page->sleeping */
	int timer_fd;
	uint64_t nap_ns; /* current idle nap without receive interrupts */
	uint32_t nctx; /* contexts it was given at OPEN */
	uint32_t nqp; /* QPs and SRQs its engine has */
	/* frames from core j (in[j]; NULL for itself), and (cores but 0)
	 * the frames it sends, for core 0 to put on the port */
	struct svc_xring *in[SVC_MAX_CORES];
	struct svc_xring *to_port;
	/* 1 while it runs rounds (svc_loop.c, stopping the world) */
	_Atomic uint32_t active;
	pthread_t thread; /* cores but 0 */
	int cpu; /* the CPU svc_run pins it to; -1: any of svc.cpus */
	struct svc_loop_frame loop[SVC_LOOP_DEPTH];
	/* free-running: [loop_free, loop_head) received, their buffers
	 * released once the batch of GPU copies of their round is done
	 * (lmark); [loop_head, loop_tail) to receive */
	uint32_t loop_free, loop_head, loop_tail;
	/* dataplane thread only; free-running [head, tail) */
	struct svc_park park[SVC_PARK_DEPTH];
	uint32_t park_head, park_tail;
	struct svc_loop_mark lmark[SVC_PARK_DEPTH];
	uint32_t lmark_head, lmark_tail;
	uint64_t dev_closed; /* ovr_eng_dev_close's answer last round */
	uint64_t dev_done; /* ovr_eng_dev_poll's */
	uint64_t dev_wait_ns; /* sleep bound while batches are in flight */
	/* process-route copies queued since the last batch close, run at
	 * the close with one pwrite per run of a context's adjoining
	 * copies (docs/SERVICE.md section 4.2); @pord: copies queued (any
	 * kind) since the close, @pfault: those that failed */
	struct svc_pcopy pq[OVR_ENG_BATCH_COPIES];
	uint32_t npq, pord, npfault;
	struct ovr_eng_copy_fault pfault[OVR_ENG_BATCH_COPIES];
	uint32_t pidx[OVR_ENG_BATCH_COPIES];
	/* a run's pieces gathered for its one pwrite (pq_call) */
	uint8_t pgather[SVC_GATHER_BYTES];
	struct svc_rx_src rx_src;
	uint32_t rx_pdu_len; /* of the datagram being received (ud_grh) */
	struct svc_qp *stalled;
	struct svc_qp *lost; /* QPs whose completions were lost (cq_lost) */
	/* while a dataplane round runs (in_round): the time its
	 * completions carry, read at the first one after the round's last
	 * input (0: read it then; svc_dp.c, cq_write) */
	uint64_t round_now;
	bool in_round;
	/* the loop's last round (busy_ns, poll_ns) */
	enum { SVC_ROUND_SLEPT, SVC_ROUND_BUSY, SVC_ROUND_POLL } last_round;
	uint32_t round_seq; /* rounds, for the CPU-clock samples */
	/* the group of the datagram being delivered (GRH dgid), or 0 */
	uint32_t rx_grh_group;
	/* the nodes of a tenant, for a datagram to a group (svc_dp.c) */
	struct ovr_vpc_host mcast_hosts[SVC_MCAST_HOSTS];
	/* cores to wake at the round's end: frames were handed to them */
	uint32_t kick;
	/* CQs written this round, whose arm is checked at its end (once
	 * each, not at every CQE: svc_dp.c, cq_notify); sol: one of their
	 * CQEs was solicited or an error */
	struct {
		struct svc_cq *cq;
		bool sol;
	} notify[SVC_NOTIFY_MAX];
	uint32_t nnotify;
	struct svc_counters cnt;
	/*
	 * Bit j: core j handed this core frames (in[j]; for core 0 also
	 * core j's to_port) since this core last looked. Set by core j
	 * with each frame it puts in the ring (svc_dp.c, handover);
	 * cleared by this core, which drains only the rings named. A round
	 * reads this one word, not the other cores' ring tails. A line of
	 * its own: the others write it.
	 */
	_Alignas(64) _Atomic uint32_t handed;
};

struct svc {
	struct svc_conf conf;
	struct svc_buf_range bufr[SVC_BUF_RANGES];
	uint32_t nbufr;
	uint8_t mac[6];
	struct ovr_vpc *vpc;
	/* the dataplane's cores ([0] also runs the CM and the port) */
	struct svc_core *core;
	uint32_t ncores;
	/* the port's queues (docs/SERVICE.md section 5): port_qs pairs
	 * (1 for a port without queues()); cores below port_nq (at most
	 * ncores) have their own. Core k receives on every queue q with
	 * q % ncores == k, so that none is left unread whatever the peer
	 * sends on, and sends on queue k; port_steer (port_qs at least
	 * ncores^2): on queue k * ncores + t to core t of the peer (a wire
	 * whose peer's queue q is our queue q: memif) */
	uint32_t port_qs, port_nq;
	bool port_steer;
	uint32_t slot_bits, tag_bits; /* the QPN layout (ovr_eng_qpn_tag) */
	/* the control thread's VPC reader handle */
	struct ovr_vpc_thread *ctl_vt;
	const struct svc_port_ops *port_ops;
	void *port;
	int listen_fd;
	/* the control thread's epoll set: the listening socket, contexts'
	 * sockets and pidfds, CM channels' room, rtnetlink, ctl_stop_fd */
	int epfd;
	int ctl_stop_fd; /* eventfd: the control thread ends */
	pthread_t ctl_thread;
	bool ctl_started;
	/* the CPUs ovrdmad was given (its affinity at start; none: left as
	 * they are) and the control thread's (-1: any of them), svc_cpu.c */
	cpu_set_t cpus;
	int ctl_cpu;
	/* every core's thread started (svc_run): core[i].thread names it,
	 * core 0's the main thread */
	_Atomic bool threads_up;
	/*
	 * Stop the world (svc_loop.c): a thread that changes what the
	 * dataplane reads (the control thread, a snapshot for telemetry)
	 * takes stw_lock, sets stw and waits until every core's active is
	 * 0: each parks between rounds, or is asleep, off the RCU readers.
	 * Nothing on the per-packet path takes a lock: a core reads stw
	 * once a round.
	 */
	pthread_mutex_t stw_lock;
	_Atomic uint32_t stw;
	/* whether the stop changed what a sleeping core must see, so that
	 * svc_stw_exit wakes it (a stop's default); the control thread
	 * clears it for requests of the connection manager only, which
	 * touch no core's state; the CM's earliest timer (stw_cm_at, as
	 * the stop began) coming sooner, or a frame queued (stw_tx), sets
	 * it again */
	bool stw_wake;
	uint64_t stw_cm_at;
	uint64_t stw_tx; /* core 0's tx_frames as the stop began: frames
			  * the stop queued wait for a core's round */
	int ndev_fd; /* rtnetlink reports for the tree's netdevs; -1: none */
	int svc_fd; /* the service page's memfd */
	struct ovr_ring_svc *page;
	struct svc_dev devs[SVC_MAX_DEVS];
	struct svc_ctx *ctxs;
	uint32_t nctx;
	uint32_t next_ctx_id;
	uint32_t next_pd;
	struct svc_cq **cqs; /* by slot */
	uint32_t ncq_slots;
	struct svc_qp **qp_by_slot; /* by qpn & qp_mask */
	uint32_t qp_mask;
	uint64_t last_heartbeat;
	volatile int stop;
	bool sysfs_ready; /* svc_sysfs_init done: publish on dev add/del */
	/* what the control thread and core 0's CM count (svc_counters_sum
	 * adds the cores') */
	struct svc_counters cnt;
	/* the connection manager's ids, every channel's (svc_cm.c): a
	 * list, and a table by id (CM_MAX_IDS + 1 entries, allocated with
	 * the first id) */
	struct svc_cm_id *cm_ids;
	struct svc_cm_id **cm_by_id;
	/* multicast groups with members here (svc_mcast.c) */
	struct svc_mcast_grp *mcast;
	uint32_t nmcast, mcast_cap, mcast_attached;
	uint32_t cm_next_id; /* local communication ids, random start */
	uint16_t cm_next_port; /* ephemeral ports */
	uint64_t cm_next_at; /* earliest CM timer (UINT64_MAX: none) */
	/* REQs / SIDR_REQs refused for want of a listener, remembered
	 * while their sender may still retransmit them (svc_cm.c,
	 * rx_req): a copy arriving after a listener appeared is refused
	 * again, never handed to it (a connection nobody waits for) */
	struct svc_cm_refused {
		uint64_t until; /* 0: free */
		uint32_t vni, src, dst, id, qpn, psn;
		uint16_t sport, dport;
		uint8_t type;
	} cm_refused[SVC_CM_REFUSED];
	uint32_t cm_refused_next; /* the slot taken next (oldest first) */
	/* GPU memory (docs/GPU.md): the driver, loaded at the first GPU
	 * registration; gdr_err < 0 once loading failed (not retried),
	 * with the reason in gdr_why (logged once) */
	struct ovr_gdr *gdr;
	int gdr_err;
	char gdr_why[160];
};

/* svc_loop.c: start, stop, the dataplane loop, the control thread,
 * stopping the world, snapshots for other threads */
int svc_init(struct svc *s, const struct svc_port_ops *ops, void *port,
	     const uint8_t mac[6]);
void svc_fini(struct svc *s);
/* Runs the dataplane on the calling thread (the one that called
 * svc_init) and the control thread beside it until s->stop; returns 0,
 * or -errno when the control thread could not start. */
int svc_run(struct svc *s);
/* The dataplane parked (or asleep) until svc_stw_exit: what it reads
 * may change. Not from the dataplane thread. */
void svc_stw_enter(struct svc *s);
void svc_stw_exit(struct svc *s);
/*
 * A snapshot of QPs' state for another thread (DPDK telemetry), taken
 * with the world stopped: @out gets QP @qpn only, or every QP when @qpn
 * is 0, at most @max. Returns the number filled, or -ETIMEDOUT when the
 * dataplane did not park within @timeout_ms.
 */
struct svc_qp_snap {
	uint32_t ctx; /* context id */
	uint32_t qpn, dest_qpn;
	uint32_t peer_vip; /* 0 until connected */
	struct ovr_eng_qp_stats st;
};
int svc_qp_snapshot(struct svc *s, uint32_t qpn, struct svc_qp_snap *out,
		    unsigned int max, unsigned int timeout_ms);

/* svc_dp.c: the dataplane - what the loop runs, and the kicks */
/* The overlay, the cores and their engines, the QP index (s->conf, port
 * and mac set). */
int svc_dp_init(struct svc *s);
void svc_dp_fini(struct svc *s);
/* One round of @core: receive, take new work, run the engine, flush the
 * port. True when there was work; *@next: the engine's next timer.
 * Afterwards core->dev_closed != core->dev_done while batches of GPU
 * copies are out. */
bool svc_dp_round(struct svc_core *core, uint64_t now, uint64_t *next);

/* The port queues @core receives on: svc_core_nrxq of them, the j-th
 * svc_core_rxq (none for a core beyond the port's queues). */
static inline uint32_t svc_core_nrxq(const struct svc_core *core)
{
	return core->nrxq;
}

static inline uint32_t svc_core_rxq(const struct svc_core *core, uint32_t j)
{
	return core->idx + j * core->s->ncores;
}
void svc_dp_settle(struct svc_core *core);
/* svc_dp_settle for each core serving a QP of @c: what its rings hold
 * is taken before the context (or an object its WQEs name) goes */
void svc_dp_settle_ctx(struct svc *s, struct svc_ctx *c);
/* Work a round of @core would find (checked before sleeping). */
bool svc_dp_pending(struct svc_core *core);
/* Hand what the application posted in the rings to the engine now. */
void svc_qp_kick(struct svc *s, struct svc_qp *qp);
void svc_srq_kick(struct svc *s, struct svc_srq *srq);
/* Context @c goes: its queued process-route copies are dropped, failing
 * as copies into a process that is gone (-ESRCH). */
void svc_proc_forget(struct svc *s, struct svc_ctx *c);

/* A datagram to the connection manager's QPN elsewhere (svc_cm.c). */
int svc_dp_send_dgram(struct svc *s, uint32_t vni, uint32_t src_vip,
		      uint32_t dst_vip, uint32_t sqpn, uint32_t dqpn,
		      uint32_t qkey, const void *payload, uint32_t len);

/*
 * svc_cm.c: the connection manager (docs/PROVIDER.md, "rdma_cm"). Its
 * messages travel as datagrams between the nodes' QPN 1 (IB's GSI QP,
 * never a QP of the engine) with the GSI's Q_Key (docs/WIRE.md,
 * "Connection manager messages").
 */
#define SVC_CM_QPN 1u
#define SVC_CM_QKEY 0x80010000u
struct svc_cm_id;
struct svc_cm_ev;
struct svc_req;
int svc_do_cm_open(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_cm(struct svc *s, struct svc_ctx *c, struct svc_req *r);
/* Context @c (a CM channel) goes: its ids are destroyed as by
 * DESTROY_ID (peers told). */
void svc_cm_ctx_gone(struct svc *s, struct svc_ctx *c);
/* CM ids listening now (show counters: cm_listening) */
uint64_t svc_cm_listening(const struct svc *s);
/* The socket of @c's channel has room: queued events go out. */
void svc_cm_flush(struct svc *s, struct svc_ctx *c);
/* A CM message of @len bytes from @src_vip to @dst_vip in tenant @vni. */
void svc_cm_rx(struct svc *s, uint32_t vni, uint32_t src_vip, uint32_t dst_vip,
	       const uint8_t *msg, uint32_t len);
/* Retransmissions and timeouts due at @now; returns the next deadline
 * (UINT64_MAX: none). */
uint64_t svc_cm_poll(struct svc *s, uint64_t now);

/* svc_obj.c: handles, doorbells, CQ slots, QP index, ring memory, cores */
/* The core a new context goes to (the one serving fewest), counted. */
struct svc_core *svc_core_pick(struct svc *s);
/* Context @c leaves its core. */
void svc_core_unpick(struct svc_ctx *c);
/* @out = the service's counters and every core's, added up (the reads
 * of other threads' counters are not atomic: fine for 64-bit words). */
void svc_counters_sum(const struct svc *s, struct svc_counters *out);
/* Every core's engine's counters, added up (ovr_eng_stats_add). */
void svc_eng_stats(const struct svc *s, struct ovr_eng_stats *out);
int svc_obj_new(struct svc_ctx *c, uint8_t type, void *p, uint32_t *handle);
/* The object of @handle if it is a @type, else NULL. */
void *svc_obj_get(struct svc_ctx *c, uint32_t handle, uint8_t type);
void svc_obj_free(struct svc_ctx *c, uint32_t handle);
/* A free doorbell index for a QP or SRQ of @core (QPs and SRQs share
 * them): in a word of the core's, else in a word of no core's, which
 * becomes the core's; or -ENOSPC. */
int svc_db_alloc(struct svc_ctx *c, struct svc_core *core);
/* Doorbell index @idx is free again (db_qp and db_srq cleared): its word
 * leaves its core once it holds no index. */
void svc_db_free(struct svc_ctx *c, uint32_t idx);
/* The core for a new QP or SRQ (the one whose engine has fewest), not
 * yet counted (core->nqp: the caller, once it has one). */
struct svc_core *svc_core_pick_qp(struct svc *s);
int svc_cq_slot_get(struct svc *s, struct svc_cq *cq);
void svc_cq_slot_put(struct svc *s, struct svc_cq *cq);
int svc_qp_index(struct svc *s, struct svc_qp *qp);
void svc_qp_unindex(struct svc *s, struct svc_qp *qp);
struct svc_qp *svc_qp_find(struct svc *s, uint32_t qpn);
/* @len bytes of a new memfd @name, mapped shared; NULL on failure. */
void *svc_map_memfd(const char *name, size_t len, int *fd_out);

/* svc_mem.c: object-backed regions' mappings, kept from SIGBUS on
 * truncation (loop thread only). Track [start, start + len), pages of
 * @pg bytes; a page stood in for adds 1 to *@truncated. */
int svc_mem_track(void *start, size_t len, size_t pg, uint64_t *truncated);
void svc_mem_untrack(void *start);
/* pages stood in for since start, all regions */
uint64_t svc_mem_truncated_pages(void);

/* svc_procmem.c: the process route's copies, through the address-space
 * file (/proc/PID/mem) the application passed. check: 0 when @fd is
 * one, opened read-write; -EINVAL another file, -EACCES read-only. rw:
 * one preadv / pwritev (@to_app: into the application) of @iov at the
 * application's @addr: the bytes moved (the kernel stops at the first
 * page that is not there; 0 only when @iov holds none), -EFAULT when
 * the first is not, -ESRCH when the address space is gone (exit,
 * exec), or -errno. */
int svc_procmem_check(int fd);
ssize_t svc_procmem_rw(int fd, bool to_app, const struct iovec *iov, int n,
		       uint64_t addr);

/* svc_reply.c: answering control requests */
struct svc_req {
	const struct ovr_ctl_hdr *h;
	const void *body;
	size_t blen;
	int *fds; /* received; -1 once taken */
	int nfds;
};

/* @r's body as a const @type *, or the request answered -EINVAL. */
#define SVC_BODY(c, r, type)                                     \
	({                                                       \
		if ((r)->blen != sizeof(type))                   \
			return svc_status((c), (r)->h, -EINVAL); \
		(const type *)(r)->body;                         \
	})

/* Takes fd @i of @r: the caller owns it now. */
int svc_take_fd(struct svc_req *r, int i);
/* The reply to @req: @status, and when 0 @body and @fds (at most 4). */
int svc_reply(struct svc_ctx *c, const struct ovr_ctl_hdr *req, int status,
	      const void *body, size_t blen, const int *fds, int nfds);
/* A reply with no body: 0 or -errno. */
int svc_status(struct svc_ctx *c, const struct ovr_ctl_hdr *req, int rc);

/* Per-application limits ([limits] in the configuration): the request
 * fails with @err, and the operator reads once per context which limit
 * an application ran into. */
enum svc_limit {
	SVC_LIM_PD,
	SVC_LIM_MR,
	SVC_LIM_PINNED,
	SVC_LIM_CQ,
	SVC_LIM_QP,
	SVC_LIM_QP_NODE,
	SVC_LIM_SRQ,
	SVC_LIM_AH,
	SVC_LIM_CQ_MB
};
int svc_limit(struct svc_ctx *c, const struct ovr_ctl_hdr *h,
	      enum svc_limit which, uint64_t value, int err);

/* svc_conn.c: the control socket and its contexts */
int svc_ctl_listen(struct svc *s);
void svc_ctl_accept(struct svc *s);
/* Handles what arrived on @ctx's socket; destroys it on hang-up. */
void svc_ctl_input(struct svc *s, struct svc_ctx *ctx);
void svc_ctx_exited(struct svc *s, struct svc_ctx *ctx);
void svc_ctl_close_all(struct svc *s);

/* svc_verbs.c: PD, MR, channel, CQ and AH requests and destroys */
int svc_do_alloc_pd(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_dealloc_pd(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_reg_mr(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_reg_mr_gpu(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_dereg_mr(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_create_channel(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_destroy_channel(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_create_cq(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_destroy_cq(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_resize_cq(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_rereg_mr(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_create_ah(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_destroy_ah(struct svc *s, struct svc_ctx *c, struct svc_req *r);
/* svc_mcast.c: ATTACH_MCAST / DETACH_MCAST; a QP's groups when it goes;
 * the members of (vni, group), or NULL; the group a GID names (0: none) */
int svc_do_mcast(struct svc *s, struct svc_ctx *c, struct svc_req *r);
void svc_mcast_qp_gone(struct svc *s, struct svc_qp *qp);
struct svc_mcast_grp *svc_mcast_find(struct svc *s, uint32_t vni,
				     uint32_t group);
uint32_t svc_mcast_group(const uint8_t gid[16]);
void svc_mcast_fini(struct svc *s);
int svc_mr_destroy(struct svc *s, struct svc_ctx *c, uint32_t h);
int svc_do_alloc_mw(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_dealloc_mw(struct svc *s, struct svc_ctx *c, struct svc_req *r);
void svc_mw_destroy(struct svc *s, struct svc_ctx *c, uint32_t h);
void svc_cq_destroy(struct svc *s, struct svc_ctx *c, uint32_t h);
void svc_ah_destroy(struct svc_ctx *c, uint32_t h);
void svc_channel_destroy(struct svc_ctx *c, uint32_t h);

/* svc_qp.c: QP and SRQ requests, and their destroys */
int svc_do_create_qp(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_modify_qp(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_query_qp(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_destroy_qp(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_qp_stats(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_create_srq(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_modify_srq(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_query_srq(struct svc *s, struct svc_ctx *c, struct svc_req *r);
int svc_do_destroy_srq(struct svc *s, struct svc_ctx *c, struct svc_req *r);
void svc_qp_destroy(struct svc *s, struct svc_ctx *c, uint32_t h);
int svc_srq_destroy(struct svc *s, struct svc_ctx *c, uint32_t h);

/* svc_admin.c: devices, administrative requests and ovrdmactl's views */
/* A device for the local vIP @vip of tenant @vni: its slot, or -errno. */
int svc_dev_add(struct svc *s, uint32_t vni, uint32_t vip, const char *name);
void svc_dev_del(struct svc *s, uint32_t vni, uint32_t vip);
/* The OVR_CTL_ADM_* requests (root only). */
int svc_do_adm(struct svc *s, struct svc_ctx *c, struct svc_req *r);
/* Writes the text of ADM_SHOW @what into @buf; returns its length or
 * -EINVAL for an unknown @what. */
int svc_show(struct svc *s, const char *what, char *buf, size_t cap);

/* svc_sysfs.c: the local devices' sysfs tree and /dev/infiniband nodes */
/* (docs/PROVIDER.md) init cleans what dead ovrdmads left and publishes
 * the devices that exist; add/del follow the bindings; fini removes
 * everything this service wrote. Failures are logged. */
int svc_sysfs_init(struct svc *s);
void svc_sysfs_add(struct svc *s, const struct ovr_ctl_dev *d);
void svc_sysfs_del(struct svc *s, const struct ovr_ctl_dev *d);
void svc_sysfs_fini(struct svc *s);
/* the kernel reported an address or link change: netdevs looked up again */
void svc_sysfs_ndev_event(struct svc *s);
/* mkdir @path mode 0755 whatever the umask (0 when it is there already,
 * left as it is), or -errno */
int svc_mkdir_pub(const char *path);

#endif /* OVRDMA_SVC_H */
