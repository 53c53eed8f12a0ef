/* SPDX-License-Identifier: MIT */
/*
 * The ovrdma transport engine: RC queue pairs over a lossy, reordering,
 * duplicating, corrupting network, UD queue pairs and shared receive
 * queues (docs/TRANSPORT.md).
 *
 * The engine does no I/O and reads no clock. The caller hands it received
 * PDUs (ovr_eng_rx), lets it transmit and run its timers (ovr_eng_poll),
 * and gives it the time in nanoseconds on every call; the engine hands
 * PDUs out, completions and events back through struct ovr_eng_ops. The
 * same engine therefore runs inside ovrdmad, in the unit tests (two
 * engines over tools/linkemu) and in the simulator.
 *
 * Threading: an engine is single-threaded; run one per dataplane thread.
 * Nothing here allocates after ovr_eng_create / ovr_eng_qp_create. The
 * one exception is the memory-region table, which engines of one node
 * may share (ovr_eng_cfg.mr_share): see "Shared regions" below.
 *
 * Opcodes, statuses, flags, states and masks are the verbs-valued
 * constants of include/ovrdma/verbs.h.
 */
#ifndef OVRDMA_ENGINE_H
#define OVRDMA_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ovrdma/cc.h>
#include <ovrdma/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- work requests and completions ------------------------------------- */

struct ovr_eng_sge {
	uint64_t addr; /* application virtual address */
	uint32_t length;
	uint32_t lkey;
};

struct ovr_eng_send_wr {
	uint64_t wr_id;
	uint32_t opcode; /* enum ovr_wr_opcode */
	uint32_t send_flags; /* enum ovr_send_flags */
	const struct ovr_eng_sge *sg_list;
	uint32_t num_sge;
	uint32_t imm_data; /* passed through untouched (verbs: big-endian) */
	uint32_t invalidate_rkey; /* SEND_WITH_INV */
	uint32_t rkey; /* WRITE*, READ, atomics */
	uint64_t remote_addr;
	uint64_t compare_add; /* CMP_AND_SWP: compare; FETCH_AND_ADD: add */
	uint64_t swap;
	/* UD only (ibv_send_wr.wr.ud): where the datagram goes */
	uint64_t ud_peer; /* address vector, passed to ops->tx (the ah) */
	uint32_t remote_qpn;
	uint32_t remote_qkey; /* bit 31 set: use the QP's own qkey */
	/* BIND_MW (ibv_send_wr.bind_mw, ibv_bind_mw): the window named by
	 * its key (top 24 bits), the key it gets (its low 8 bits are
	 * taken), and [addr, addr + length) of the region of mr_lkey with
	 * the rights in access (OVR_ACCESS_*); length 0 unbinds a type-1
	 * window. LOCAL_INV takes invalidate_rkey. */
	struct {
		uint32_t mw_rkey;
		uint32_t rkey;
		uint32_t mr_lkey;
		uint32_t access;
		uint64_t addr;
		uint64_t length;
	} bind_mw;
};

struct ovr_eng_recv_wr {
	uint64_t wr_id;
	const struct ovr_eng_sge *sg_list;
	uint32_t num_sge;
};

struct ovr_eng_wc {
	uint64_t wr_id;
	uint32_t status; /* enum ovr_wc_status */
	uint32_t opcode; /* enum ovr_wc_opcode; undefined on error */
	uint32_t byte_len;
	uint32_t imm_data; /* or the invalidated rkey (OVR_WC_WITH_INV) */
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags; /* enum ovr_wc_flags */
	uint32_t vendor_err; /* the NAK code or enum ovr_eng_verr */
};

/* vendor_err of locally detected errors */
enum ovr_eng_verr {
	OVR_VERR_NONE = 0,
	OVR_VERR_RETRY = 0x100, /* retry_cnt timeouts without progress */
	OVR_VERR_RNR = 0x101, /* rnr_retry RNR NAKs */
	OVR_VERR_LKEY = 0x102, /* bad lkey / local bounds or rights */
	OVR_VERR_RESP = 0x103, /* malformed or unexpected response */
	OVR_VERR_VERSION = 0x104, /* no wire version in common with peer */
	OVR_VERR_LEN = 0x105, /* message longer than the receive buffer */
	/* a queued copy to or from device memory failed (ops.dev_fence) */
	OVR_VERR_DEV_COPY = 0x106,
	/* a TERMINATE ended the QP: OVR_VERR_TERM + its reason (enum
	 * ovr_wire_term_reason: 1 peer QP destroyed, 2 peer QP in ERROR,
	 * 3 and 4 peer QP does not exist) */
	OVR_VERR_TERM = 0x110,
};

/* ---- queue pairs ------------------------------------------------------- */

struct ovr_eng_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

struct ovr_eng_qp_init {
	uint32_t pd;
	uint32_t send_cq; /* passed to ops->cqe */
	uint32_t recv_cq;
	bool sq_sig_all;
	uint64_t user; /* passed to ops->tx and ops->event */
	struct ovr_eng_qp_cap cap; /* rounded up; the result is reported */
	/* 0, or the SRQ (same pd) the QP takes its receives from; then
	 * cap.max_recv_wr / max_recv_sge are ignored (reported 0) and
	 * ovr_eng_post_recv on the QP is EINVAL */
	uint32_t srq;
	uint32_t qp_type; /* OVR_QPT_RC (or 0), OVR_QPT_UC or OVR_QPT_UD */
};

struct ovr_eng_qp_attr {
	uint32_t qp_state;
	uint32_t cur_qp_state;
	uint32_t path_mtu; /* enum ovr_mtu */
	uint32_t qp_access_flags; /* OVR_ACCESS_REMOTE_* */
	uint32_t dest_qp_num;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t qkey; /* UD */
	uint64_t peer; /* address vector: opaque, passed to ops->tx */
	uint8_t timeout; /* 4.096 us * 2^timeout; 0: wait forever */
	uint8_t retry_cnt; /* 0..7 */
	uint8_t rnr_retry; /* 0..7, 7: forever */
	uint8_t min_rnr_timer; /* IB 5-bit code, what this QP asks RNR waits */
	uint8_t max_rd_atomic; /* initiator depth */
	uint8_t max_dest_rd_atomic; /* responder depth */
	uint8_t sq_draining; /* query: SQD still draining */
	struct ovr_eng_qp_cap cap; /* query only */
};

/* Per-QP counters and state, for ovrdmactl and tests. */
struct ovr_eng_qp_stats {
	uint32_t state;
	uint32_t snd_una, snd_nxt; /* oldest unacked PSN, next PSN to send */
	uint32_t rcv_nxt; /* next PSN expected from the peer */
	uint32_t inflight_pkts;
	uint32_t cwnd_bytes;
	uint64_t rate_bps; /* the controller's pacing rate; 0: none */
	uint64_t srtt_ns, rto_ns;
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
	uint64_t retx_pkts; /* retransmissions, all causes */
	uint64_t rto_count, tlp_count, rack_lost;
	uint64_t rto_spurious; /* RTOs the next ACK showed were spurious */
	uint64_t rx_dup, rx_ooo, rx_outside;
	uint64_t rnr_naks_sent, rnr_naks_rcvd;
	uint64_t acks_sent, acks_rcvd;
	/* responses resent because their request came again (not counted
	 * in tlp_count) */
	uint64_t resp_probes;
	/* READ response packets not resent: their region was deregistered
	 * (or invalidated) since they were sent; dropped, the QP unharmed */
	uint64_t resp_resend_revoked;
};

/* ---- engine ------------------------------------------------------------ */

/* A queued copy that failed (ovr_eng_ops.dev_batch_faults). */
struct ovr_eng_copy_fault {
	uint32_t ord; /* its number in the batch */
	int err; /* -EFAULT, -ESRCH, other -errno */
};

struct ovr_eng_ops {
	/*
	 * A buffer for one PDU of up to @cap bytes; NULL when none is free
	 * (the engine stops sending and retries on the next poll). @token
	 * comes back in tx().
	 */
	void *(*tx_alloc)(void *ctx, uint32_t cap, void **token);
	/*
	 * Send the PDU of @len bytes built in the buffer of @token to the
	 * QP's peer (@peer: the address vector given at RTR). A PDU that
	 * belongs to no QP (a TERMINATE answering a packet for a QPN that
	 * does not exist) goes to the @from given to ovr_eng_rx_from() with
	 * @qp_user 0. @len 0: nothing to send, just release the buffer.
	 */
	void (*tx)(void *ctx, void *token, uint32_t len, uint64_t peer,
		   uint64_t qp_user);
	/* Deliver a completion to completion queue @cq. */
	void (*cqe)(void *ctx, uint32_t cq, const struct ovr_eng_wc *wc);
	/* An asynchronous event on a QP. */
	void (*event)(void *ctx, uint64_t qp_user, uint32_t qpn,
		      enum ovr_event ev);
	/* (optional) An asynchronous event on a shared receive queue: only
	 * OVR_EV_SRQ_LIMIT_REACHED; @srq_user is the SRQ's init user. */
	void (*srq_event)(void *ctx, uint64_t srq_user, uint32_t srqn,
			  enum ovr_event ev);
	/*
	 * (optional) The 40-byte GRH of a datagram that UD QP @qp_user
	 * accepted from @from (ovr_eng_rx_from's address vector): fill
	 * @grh as verbs would see it (IPv4-mapped addresses for RoCEv2).
	 * The engine writes it to the first 40 bytes of the receive and
	 * sets OVR_WC_GRH; without this op those bytes are left untouched
	 * and the flag clear. Called before the completion.
	 */
	void (*ud_grh)(void *ctx, uint64_t qp_user, uint64_t from,
		       uint8_t grh[OVR_GRH_LEN]);
	/*
	 * (optional; needed for ovr_eng_reg_mr_dev) Copy @len bytes between
	 * @host and offset @off of device memory @dev (the cookie given at
	 * registration): into the device when @to_dev, out of it otherwise.
	 * @msg_len: the length of the message the copy is part of (the
	 * WR's, the request's, the one the packet header announces), so
	 * that the service may copy small messages differently (docs/GPU.md
	 * §1.2); a copy from the engine's own memory (a WRITE's held-back
	 * tail, an atomic's result) is a message of its own.
	 * 0: done, the bytes are in place. 1 (only with dev_fence): queued,
	 * in place after the next dev_fence; @host is a packet buffer (a tx
	 * buffer of tx_alloc, or the PDU given to ovr_eng_rx) or engine
	 * memory, and stays untouched until then. -errno: the QP involved
	 * goes to ERROR (counted in dev_copy_err). @flags: OVR_ENG_COPY_*
	 * below.
	 */
	int (*dev_copy)(void *ctx, void *dev, uint64_t off, void *host,
			uint32_t len, bool to_dev, uint32_t msg_len,
			unsigned int flags);
	/*
	 * (optional) Wait for every copy dev_copy queued: 0, or -errno when
	 * one of them failed (which one need not be known). With it the
	 * engine keeps, from the first queued copy until the batch of
	 * copies is done, every PDU (tx) and completion (cqe) it produces,
	 * in order: none leaves before the copies that precede it are done
	 * (docs/GPU.md). Without dev_batch_close, closing a batch
	 * (ovr_eng_dev_close, ovr_eng_fence) is one dev_fence.
	 */
	int (*dev_fence)(void *ctx);
	/*
	 * (optional, both or neither; with dev_fence) Pipelined batches.
	 * dev_batch_close: the copies dev_copy queued since the last close
	 * form batch @slot (below cfg.dev_batches + 1; a slot is reused
	 * only after its batch was polled done): 0, or -errno (the batch
	 * failed; it is not polled). dev_batch_poll: is batch @slot done? 0:
	 * yes; -EAGAIN: not yet (never when @wait: then it blocks until
	 * it is); other -errno: done, and a copy of it failed. The engine
	 * polls batches in the order it closed them.
	 */
	int (*dev_batch_close)(void *ctx, unsigned int slot);
	int (*dev_batch_poll)(void *ctx, unsigned int slot, bool wait);
	/*
	 * (optional, with dev_batch_close) Queued copies of the batch just
	 * closed that failed, for a service that knows per copy (the
	 * process route runs its queued copies at dev_batch_close:
	 * docs/SERVICE.md section 4.2). Called right after a
	 * dev_batch_close that answered 0: writes each failed copy's
	 * number and -errno to @f (at most @max, in any order) and returns
	 * how many failed. A copy's number counts the copies
	 * dev_copy queued (answered 1) before it since the previous
	 * dev_batch_close. Only copies made with OVR_ENG_COPY_LATE may
	 * fail this way; each is what the same failure of a synchronous
	 * copy is (-EFAULT a protection error, -ESRCH the memory's owner
	 * gone, else an operational error) for its QP alone, from the
	 * request it served on: what the QP produced before the copy was
	 * queued stands, what it produced after is dropped or fails; the
	 * rest of the batch completes. A batch holds at most
	 * OVR_ENG_BATCH_COPIES queued copies.
	 */
	uint32_t (*dev_batch_faults)(void *ctx, struct ovr_eng_copy_fault *f,
				     uint32_t max);
};

/* dev_copy's @flags */
enum {
	/*
	 * The copy places the payload of a request this side serves as
	 * the responder of a reliable connection (a WRITE's or a SEND's
	 * bytes): its failure may be reported after the fact, through
	 * dev_batch_faults, and the engine fails the QP from that request
	 * on. A copy without it that is queued must not fail later but
	 * fail the whole batch (dev_batch_close / dev_batch_poll).
	 */
	OVR_ENG_COPY_LATE = 1u,
	/*
	 * The copy reads the source of a send WR of this side's own: by the
	 * verbs' rules those bytes do not change until the WR completes,
	 * so the service may read ahead, up to @msg_len bytes from @off,
	 * and take the WR's later copies from what it read - never from
	 * anything read before the copy with OVR_ENG_COPY_FIRST.
	 */
	OVR_ENG_COPY_SRC = 2u,
	/* (with OVR_ENG_COPY_SRC) The first bytes of the message, as its
	 * first packet is built (again, when that packet is resent). */
	OVR_ENG_COPY_FIRST = 4u,
	/*
	 * (with OVR_ENG_COPY_SRC) The WR was posted with OVR_SEND_FENCE:
	 * its source may hold what an earlier READ or atomic of the QP
	 * brought after the WR was posted, so nothing read before the WR
	 * reached the head of the queue may stand for it.
	 */
	OVR_ENG_COPY_FENCED = 8u,
};

/* queued copies a batch holds at most: it is closed early at that many */
#define OVR_ENG_BATCH_COPIES 1024u

struct ovr_eng_cfg {
	uint32_t max_qp; /* QP slots (QPNs are slot | generation) */
	uint32_t max_mr; /* memory regions; a power of two is used */
	uint32_t max_pdu; /* largest PDU the network carries (bytes) */
	uint32_t window_pkts; /* per-QP send / receive window, power of 2 */
	uint32_t sb_pool; /* QPs that may have packets in flight at once */
	uint64_t init_rto_ns, min_rto_ns, max_rto_ns;
	uint64_t ack_delay_ns; /* longest an ACK is held back */
	uint32_t ack_every; /* ACK at least every N packets received */
	uint32_t tx_burst; /* packets one QP sends before the next QP's turn */
	const struct ovr_cc_ops *cc; /* NULL: ovr_cc_default() ("ovr") */
	uint32_t cc_init_cwnd; /* bytes; 0: window_pkts / 8 full segments */
	uint64_t line_rate_bps; /* for the controller; 0: unknown */
	uint64_t base_rtt_ns; /* unloaded RTT hint for the controller; 0: unknown */
	uint64_t seed; /* keys and QPN generations; 0: from getrandom */
	/* TERMINATEs answering packets for QPs that do not exist (or are
	 * in ERROR): a token bucket of term_burst packets refilled at
	 * term_rate per second; 0/0 never answers */
	uint32_t term_rate; /* per second */
	uint32_t term_burst;
	uint32_t max_srq; /* shared receive queue slots; 0: none */
	/* batches of device copies in flight at most (ops.dev_batch_*),
	 * 1..OVR_ENG_MAX_DEV_BATCHES; 0: the default */
	uint32_t dev_batches;
	/*
	 * Engines sharing a node (one per dataplane core) tell their QPNs
	 * apart: QPN = generation | qpn_tag | slot, the tag's qpn_tag_bits
	 * bits just above the slot's (ovr_eng_qpn_tag), so any core - or
	 * the port's dispatch - finds a QPN's engine without a lookup.
	 * Slot and tag bits together at most 20 (the generation keeps 4 or
	 * more of the 24). 0 / 0: one engine, no tag.
	 */
	uint32_t qpn_tag, qpn_tag_bits;
	/*
	 * NULL: the engine has a memory-region table of its own (max_mr
	 * slots). Else it uses @mr_share's (max_mr is ignored), so that
	 * QPs of either engine see the same regions and windows under the
	 * same keys, whichever engine registered, bound or invalidated
	 * them; @mr_share may itself be a sharer (one table for all).
	 * Both must have ops.dev_copy or neither (else EINVAL). The table
	 * lives until the last engine using it is destroyed, in any order.
	 * See "Shared regions" below for what may run on which thread.
	 */
	struct ovr_eng *mr_share;
};

/* The bits of a QPN's slot for max_qp slots (a power of two is used). */
static inline uint32_t ovr_eng_slot_bits(uint32_t max_qp)
{
	uint32_t b = 0;

	while ((1u << b) < max_qp)
		b++;
	return b;
}

/* The tag of @qpn of an engine with @slot_bits and @tag_bits. */
static inline uint32_t ovr_eng_qpn_tag(uint32_t qpn, uint32_t slot_bits,
				       uint32_t tag_bits)
{
	return (qpn >> slot_bits) & ((1u << tag_bits) - 1);
}

#define OVR_ENG_DEV_BATCHES 8u /* default cfg.dev_batches */
#define OVR_ENG_MAX_DEV_BATCHES 32u

/* Defaults for a datacenter fabric (see docs/TRANSPORT.md). */
void ovr_eng_cfg_default(struct ovr_eng_cfg *cfg);

struct ovr_eng;

/* NULL and errno (EINVAL, ENOMEM) on failure. */
struct ovr_eng *ovr_eng_create(const struct ovr_eng_cfg *cfg,
			       const struct ovr_eng_ops *ops, void *ctx);
/* With a shared table, the references its QPs' and SRQs' work requests
 * held on regions are dropped; the table stays for the others. */
void ovr_eng_destroy(struct ovr_eng *e);

/*
 * Shared regions (cfg.mr_share; engine/mrtab.h "Sharing"). Engines that
 * share a table run on their own threads, but these calls change the
 * table and are made only while no engine using it runs (the service
 * stops all dataplane cores for a control request): ovr_eng_create with
 * mr_share and ovr_eng_destroy, ovr_eng_reg_mr / _dev / _ext,
 * ovr_eng_dereg_mr, ovr_eng_mr_modify, ovr_eng_mr_yield,
 * ovr_eng_mr_recheck, ovr_eng_alloc_mw, ovr_eng_dealloc_mw. The data
 * path - every key check of a post or a packet, the references work
 * requests take and drop, LOCAL_INV, SEND_WITH_INV and BIND_MW - runs
 * on the engines' threads at the same time: references are atomic, an
 * invalidated region's remote rights are cleared atomically, and a
 * window's binding is read whole (never half of one bind and half of
 * another) while another thread binds or invalidates it. So a region
 * registered through one engine serves QPs of every sharer, a window
 * bound through a QP of one serves a peer's request arriving at a QP of
 * another, and an invalidation on one is seen by every later check on
 * any. Deregistration is refused (-EBUSY) while a work request of any
 * sharer names the region or a window is bound to it.
 */

/* Memory regions. @host: where byte @va lives in this process. Returns
 * 0 and the key (lkey = rkey), or a negative errno. */
int ovr_eng_reg_mr(struct ovr_eng *e, uint32_t pd, uint64_t va, uint64_t len,
		   unsigned int access, void *host, uint32_t *key);
/*
 * A region in device memory (GPU memory imported by gdr/, docs/GPU.md):
 * byte @va is at offset @dev_off of @dev, which the engine reaches only
 * through ops.dev_copy (-EOPNOTSUPP without it). Atomics targeting such
 * a region are refused: NAK REM_OP, the requester's WR fails with
 * OVR_WC_REM_OP_ERR (dev_atomic_refused); not so on one registered with
 * OVR_ENG_MR_HOST (ovr_eng_reg_mr_ext).
 */
int ovr_eng_reg_mr_dev(struct ovr_eng *e, uint32_t pd, uint64_t va,
		       uint64_t len, unsigned int access, void *dev,
		       uint64_t dev_off, uint32_t *key);

/* ovr_eng_reg_mr_ext flags */
enum ovr_eng_mr_flags {
	/*
	 * The region is host memory the engine cannot address (another
	 * process's, reached by the service through its /proc/PID/mem:
	 * docs/SERVICE.md section 4), behind ops.dev_copy like device
	 * memory. dev_copy may queue (1) the copies made with
	 * OVR_ENG_COPY_LATE into the open batch and run them at
	 * dev_batch_close, reporting those that failed through
	 * dev_batch_faults; any other must be done when it returns (after
	 * those queued, which it may read back). Atomics
	 * on it are allowed: two dev_copy calls, read 8 bytes, compute,
	 * write 8 bytes - atomic against other atomics of this engine,
	 * not against the memory's owner (IBV_ATOMIC_HCA, as for regions
	 * the engine maps).
	 */
	OVR_ENG_MR_HOST = 1u,
};

/*
 * ovr_eng_reg_mr_dev with @flags (enum ovr_eng_mr_flags; 0 is
 * ovr_eng_reg_mr_dev; an unknown bit -EINVAL). For every region behind
 * ops.dev_copy: a dev_copy that returns -EFAULT means the bytes are not
 * there (memory unmapped under the registration), a protection error,
 * not a copy failure: as responder the QP NAKs REM_ACCESS (the peer's
 * WR completes OVR_WC_REM_ACCESS_ERR; a SEND's receive completes
 * LOC_PROT_ERR and the peer gets NAK REM_OP, as for a receive whose key
 * failed), as requester (its own source, a READ response's or an atomic
 * result's destination) the WR completes OVR_WC_LOC_PROT_ERR; the QP
 * goes to ERROR, others are not affected (counted in dev_copy_fault,
 * not dev_copy_err).
 */
int ovr_eng_reg_mr_ext(struct ovr_eng *e, uint32_t pd, uint64_t va,
		       uint64_t len, unsigned int access, void *dev,
		       uint64_t dev_off, unsigned int flags, uint32_t *key);
/* -EBUSY while a posted send-side work request still names it, or a
 * memory window is bound to it. Posted receives do not count: they give the region up and complete
 * OVR_WC_LOC_PROT_ERR when a message comes for them or they flush, as a
 * receive posted with a bad lkey. With a shared table only @e's own
 * receives give way: call ovr_eng_mr_yield on every other sharer first. */
int ovr_eng_dereg_mr(struct ovr_eng *e, uint32_t key);

/*
 * Deregistration on a shared table (cfg.mr_share), with every sharer
 * stopped: call this on each engine sharing the table, then
 * ovr_eng_dereg_mr on any of them. It waits for @e's queued device
 * copies (the region may be unmapped next) and makes @e's posted
 * receives that name the region give it up, as ovr_eng_dereg_mr does
 * with its own engine's: each completes OVR_WC_LOC_PROT_ERR when a
 * message comes for it or it flushes. Returns the references dropped
 * (0 or more), or -EINVAL: @key names no region. Unlike a lone engine's
 * ovr_eng_dereg_mr, which leaves its receives alone when send-side work
 * keeps the region busy, the receives stay revoked if the
 * deregistration then fails with -EBUSY.
 */
int ovr_eng_mr_yield(struct ovr_eng *e, uint32_t key);

/*
 * Re-registration in place (ibv_rereg_mr's CHANGE_PD and CHANGE_ACCESS):
 * the region of @key moves to @pd with @access, same key, range and
 * memory (mrtab.h, ovr_mr_modify). Work requests already taken go on
 * as checked; posted receives that name the region are checked again
 * (of another PD, or the region without LOCAL_WRITE: they complete
 * LOC_PROT_ERR when a message comes, as a NIC's check at arrival).
 * -EINVAL: no such region or bad @access.
 */
int ovr_eng_mr_modify(struct ovr_eng *e, uint32_t key, uint32_t pd,
		      unsigned int access);
/*
 * After ovr_eng_mr_modify on a shared table, with every sharer stopped:
 * check @e's posted receives that name the region of @key against its
 * new PD and rights (read from the table) as ovr_eng_mr_modify checks
 * the calling engine's. Call it on every sharer other than the one
 * ovr_eng_mr_modify was called on. No such region: nothing happens.
 */
void ovr_eng_mr_recheck(struct ovr_eng *e, uint32_t key);

/*
 * The @dev cookie the region of @key was registered with
 * (ovr_eng_reg_mr_dev / _ext), or NULL: no such region, or one the
 * engine addresses itself. A hash lookup; the region may go as soon as
 * the caller lets the engine run.
 */
void *ovr_eng_mr_dev(struct ovr_eng *e, uint32_t key);

/*
 * Memory windows (ibv_alloc_mw, docs/PROVIDER.md "Memory windows"):
 * allocate one of @type (OVR_MW_TYPE_1 or _2) in @pd, unbound; 0 and
 * its rkey, -EINVAL (another type) or -ENOSPC. Binding is a work
 * request (OVR_WR_BIND_MW): executed in order on the send queue, with
 * no packet; it completes OVR_WC_BIND_MW, or OVR_WC_MW_BIND_ERR (the QP
 * to ERROR) when the window, the region or the range does not allow
 * it. OVR_WR_LOCAL_INV of a type-2 window's key (or a region's: its
 * remote rights cleared, as SEND_WITH_INV does) completes
 * OVR_WC_LOCAL_INV, or OVR_WC_LOC_QP_OP_ERR. A peer's request through
 * a window's rkey reaches only the window, with its rights; a type-2
 * window only through the QP that bound it.
 */
int ovr_eng_alloc_mw(struct ovr_eng *e, uint32_t pd, unsigned int type,
		     uint32_t *rkey);
/* Frees the window (bound or not: a bound one lets its region go);
 * -EINVAL: no such window. @rkey: any key it had (top 24 bits). */
int ovr_eng_dealloc_mw(struct ovr_eng *e, uint32_t rkey);

/*
 * Queue pairs, RC, UC or UD (init.qp_type). Returns 0 and the QPN, or a
 * negative errno.
 *
 * UC (docs/TRANSPORT.md, "Unreliable connected QPs"): modify follows
 * verbs' UC table (RTR: AV, PATH_MTU, DEST_QPN, RQ_PSN; RTS: SQ_PSN);
 * post_send takes SEND, SEND_WITH_IMM, RDMA_WRITE and
 * RDMA_WRITE_WITH_IMM (else EINVAL); a WR completes once its last packet
 * is handed to ops->tx, paced at the rate the controller starts with
 * (no feedback); the responder takes packets in PSN order and silently
 * drops a message with a gap, no receive, a length or an access error
 * (counted in ovr_eng_stats' uc_*), resynchronising on the next
 * message's first packet; nothing is ever acknowledged or resent.
 *
 * UD (docs/TRANSPORT.md §11): modify follows verbs' UD table (INIT needs
 * PKEY_INDEX, PORT, QKEY; RTR nothing; RTS SQ_PSN); post_send takes SEND
 * and SEND_WITH_IMM only (else EINVAL), each WR naming its destination
 * (ud_peer, remote_qpn, remote_qkey); one packet per message, no ACK, no
 * retransmission. A message longer than the QP's MTU (query path_mtu:
 * the largest verbs MTU a PDU of cfg.max_pdu carries) completes
 * successfully without being sent, as the IB spec (C10-93.1.1) says.
 * Receives take OVR_GRH_LEN bytes of GRH then the payload; byte_len
 * counts both; src_qp is the sender's QPN.
 */
int ovr_eng_qp_create(struct ovr_eng *e, const struct ovr_eng_qp_init *init,
		      uint32_t *qpn);
/*
 * Destroys in any state; nothing is completed. A connected QP (RTS,
 * SQD) first sends its peer a TERMINATE (best effort, at once,
 * through ops->tx), so the peer's outstanding work fails with
 * REM_ABORT_ERR within about one RTT instead of after its retry budget;
 * if that TERMINATE is lost, the peer's next packet to the vanished QPN
 * is answered with another (see ovr_eng_rx_from). Nothing more is sent.
 */
int ovr_eng_qp_destroy(struct ovr_eng *e, uint32_t qpn);
/*
 * ibv_modify_qp: 0 or -EINVAL (bad transition, mask or value). A
 * connected QP moved to ERROR sends its peer a TERMINATE (as does one
 * that fails on its own: retry or RNR budget spent, a bad local key), and
 * answers the peer's later packets with it again.
 */
int ovr_eng_qp_modify(struct ovr_eng *e, uint32_t qpn,
		      const struct ovr_eng_qp_attr *attr, unsigned int mask,
		      uint64_t now_ns);
int ovr_eng_qp_query(struct ovr_eng *e, uint32_t qpn,
		     struct ovr_eng_qp_attr *attr);
int ovr_eng_qp_stats(struct ovr_eng *e, uint32_t qpn,
		     struct ovr_eng_qp_stats *st);

/* ---- shared receive queues ------------------------------------------------ */

/* = struct ibv_srq_attr */
struct ovr_eng_srq_attr {
	uint32_t max_wr; /* receives the SRQ holds (rounded up to 2^n) */
	uint32_t max_sge; /* scatter entries per receive */
	uint32_t srq_limit; /* modify: arm at this level; 0 disarms */
};

struct ovr_eng_srq_init {
	uint32_t pd; /* QPs using it must be in the same pd */
	uint64_t user; /* passed to ops->srq_event */
	struct ovr_eng_srq_attr attr; /* srq_limit ignored, as in verbs */
};

/*
 * ibv_create_srq: 0 and the SRQ number (never 0), or -EINVAL (max_wr 0
 * or above 16384, max_sge 0 or above 16, no cfg.max_srq),
 * -ENOSPC (cfg.max_srq in use), -ENOMEM. All its memory is allocated
 * here (and by a MAX_WR resize), never per packet.
 */
int ovr_eng_srq_create(struct ovr_eng *e, const struct ovr_eng_srq_init *init,
		       uint32_t *srqn);
/*
 * ibv_modify_srq. OVR_SRQ_LIMIT arms the limit event: the first time
 * a QP takes a receive that leaves fewer than srq_limit posted, ops->
 * srq_event gets OVR_EV_SRQ_LIMIT_REACHED once and the limit disarms
 * (reads 0). OVR_SRQ_MAX_WR grows the queue (posted receives kept);
 * shrinking is -EINVAL. 0, -EINVAL or -ENOMEM.
 */
int ovr_eng_srq_modify(struct ovr_eng *e, uint32_t srqn,
		       const struct ovr_eng_srq_attr *attr, unsigned int mask);
int ovr_eng_srq_query(struct ovr_eng *e, uint32_t srqn,
		      struct ovr_eng_srq_attr *attr);
/* -EBUSY while a QP uses it; its posted receives vanish uncompleted. */
int ovr_eng_srq_destroy(struct ovr_eng *e, uint32_t srqn);
/*
 * ibv_post_srq_recv for one work request: 0, EINVAL (no such SRQ, too
 * many SGEs) or ENOMEM (full). A QP takes receives from its SRQ in
 * posting order as messages arrive and completes them on its own recv
 * CQ with its qp_num; an empty SRQ is answered with RNR NAKs as an empty
 * receive queue is (QPs with an SRQ advertise no credit).
 */
int ovr_eng_post_srq_recv(struct ovr_eng *e, uint32_t srqn,
			  const struct ovr_eng_recv_wr *wr, uint64_t now_ns);

/*
 * ibv_post_send / ibv_post_recv for one work request: 0, or a positive
 * errno as the verbs man pages say (ENOMEM: queue full; EINVAL: bad
 * opcode, too many SGEs, inline too long, QP in a state that does not
 * take work). A bad lkey is not a post error: the WR completes with
 * LOC_PROT_ERR and the QP goes to ERROR. In ERROR, posts succeed and
 * complete at once with WR_FLUSH_ERR.
 */
int ovr_eng_post_send(struct ovr_eng *e, uint32_t qpn,
		      const struct ovr_eng_send_wr *wr, uint64_t now_ns);
int ovr_eng_post_recv(struct ovr_eng *e, uint32_t qpn,
		      const struct ovr_eng_recv_wr *wr, uint64_t now_ns);

/* One received PDU (starting at the OTH); @ce: the packet arrived marked
 * Congestion Experienced. Corrupt and unexpected packets are counted and
 * dropped. Same as ovr_eng_rx_from(..., OVR_ENG_FROM_NONE). */
void ovr_eng_rx(struct ovr_eng *e, uint64_t now_ns, const void *pdu,
		uint32_t len, bool ce);

/* @from when the caller does not know where a PDU came from. */
#define OVR_ENG_FROM_NONE UINT64_MAX

/*
 * ovr_eng_rx for a PDU that came from the address vector @from (the same
 * kind of opaque value as a QP's peer attribute: what ops->tx must be
 * given to reach the sender). The engine uses it to answer a request or
 * ACK for a QPN that does not exist with a TERMINATE (rate limited by
 * cfg.term_rate / term_burst; never in answer to a TERMINATE, NAK, CNP,
 * VERSION_REJECT or datagram). With OVR_ENG_FROM_NONE such packets are
 * only counted.
 */
void ovr_eng_rx_from(struct ovr_eng *e, uint64_t now_ns, const void *pdu,
		     uint32_t len, bool ce, uint64_t from);

/*
 * A datagram sent to a multicast group (docs/TRANSPORT.md §11): deliver
 * the UD_SEND or UD_SEND_IMM PDU to UD QP @qpn, whatever destination QPN
 * it carries (OVR_UD_MCAST_QPN), as ovr_eng_rx_from() would if it were
 * addressed to @qpn. The caller calls it once per member QP. Returns 0,
 * -EINVAL when the PDU does not parse or is no datagram (counted as
 * ovr_eng_rx counts it), -ENOENT when @qpn is no UD QP.
 */
int ovr_eng_rx_ud_to(struct ovr_eng *e, uint64_t now_ns, const void *pdu,
		     uint32_t len, uint64_t from, uint32_t qpn);

/* The destination QPN of a datagram sent to a multicast group. */
#define OVR_UD_MCAST_QPN 0xffffffu

/*
 * Transmit what windows, credits and pacing allow (at most @budget
 * packets; 0: no limit) and run expired timers. Returns the time of the
 * next thing the engine will do on its own (a timer or a pacing slot),
 * UINT64_MAX when it waits for nothing but input, or @now_ns when it
 * stopped at @budget with more to send.
 */
uint64_t ovr_eng_poll(struct ovr_eng *e, uint64_t now_ns, uint32_t budget);

/*
 * Device copies queued by ops.dev_copy (docs/GPU.md §1.1). They are
 * grouped in batches; a PDU or completion the engine produces while a
 * batch is open or in flight is held, in order, and released only when
 * every batch before it is done: PDUs go to ops.tx, sealed only then
 * (their payload may have come from the device), completions to
 * ops.cqe.
 *
 * ovr_eng_dev_close: close the batch being queued, if it has copies
 * (ops.dev_batch_close; without that op, one ops.dev_fence). Call it
 * after each round of ovr_eng_rx and ovr_eng_poll calls. When
 * cfg.dev_batches are in flight already, it first waits for the oldest.
 * Returns the sequence number of the newest batch closed so far (0:
 * none): the buffers of PDUs given to ovr_eng_rx since the previous
 * call may be the source of copies of batches up to it.
 *
 * ovr_eng_dev_poll: release, in order, the batches that are done
 * (ops.dev_batch_poll, never waiting), then fail the QPs of failed
 * ones. Returns the sequence number of the newest batch released:
 * everything up to it is done, and the buffers its copies read may be
 * reused. ovr_eng_dev_inflight: batches closed and not yet released.
 *
 * ovr_eng_fence: close and wait for everything (after it, poll returns
 * what close does). Cheap when nothing is queued; a no-op without
 * ops.dev_fence.
 *
 * When a batch fails, every QP with a copy in it fails: its held PDUs
 * (in this and later batches) are dropped, its held successful
 * completions become OVR_WC_LOC_QP_OP_ERR (vendor_err
 * OVR_VERR_DEV_COPY), and it goes to ERROR - NAK REM_OP from the first
 * PSN it was placing or reading in the batch as responder, else
 * LOC_QP_OP_ERR on its oldest send WR and a TERMINATE (a UD QP only
 * loses the receives). Other QPs are not affected. The engine waits by
 * itself when it holds too much, and before a QP is destroyed or a
 * region deregistered.
 */
uint64_t ovr_eng_dev_close(struct ovr_eng *e);
uint64_t ovr_eng_dev_poll(struct ovr_eng *e);
uint32_t ovr_eng_dev_inflight(const struct ovr_eng *e);
void ovr_eng_fence(struct ovr_eng *e);

/* Engine-wide counters. */
struct ovr_eng_stats {
	uint64_t rx_pkts, rx_bad, rx_no_qp, rx_bad_state;
	uint64_t tx_pkts, tx_nobuf;
	uint64_t sb_waits; /* a QP had to wait for a scoreboard */
	/* loss recovery, all QPs together (ovr_eng_qp_stats per QP) */
	uint64_t retx_pkts, rack_lost, rto_count, rto_spurious, tlp_count;
	uint64_t rx_dup; /* sequenced packets that had arrived before */
	/* QPs of this engine; regions in its table, 0 for an engine that
	 * shares another's (cfg.mr_share), so the sum over a node's
	 * engines counts each region once */
	uint32_t qps, mrs;
	uint64_t tx_term; /* TERMINATEs sent, all reasons */
	uint64_t rx_term; /* TERMINATEs accepted */
	uint64_t rx_term_idle; /* ... that found nothing outstanding: the QP
				* stays as it was (a clean teardown) */
	uint64_t rx_term_bad; /* TERMINATEs ignored: wrong source QPN or PSN */
	uint64_t term_limited; /* answers not sent: rate limit or no @from */
	uint64_t rx_ud_qkey; /* datagrams dropped: wrong qkey */
	uint64_t rx_ud_norecv; /* datagrams dropped: no receive posted */
	uint64_t tx_ud_too_long; /* UD sends over the MTU: not sent (C10-93.1.1) */
	uint64_t mr_revoked; /* READ responses still to send (or asked for
			      * again) and held-back WRITE tails whose
			      * region was deregistered after the request
			      * was accepted: NAK REM_ACCESS */
	uint64_t resp_resend_revoked; /* READ response packets whose resend
				       * found their region gone: dropped,
				       * no NAK (ovr_eng_qp_stats) */
	uint64_t rsp_probes; /* READ / atomic requests asked again: their
			      * response stalled (lost NAK, silent peer) */
	uint64_t host_copy_bytes; /* bytes copied to / from regions the
				   * engine addresses itself (ovrdmad's
				   * object route) */
	uint64_t dev_copies; /* copies to / from device-memory regions */
	uint64_t dev_copy_bytes;
	uint64_t dev_copy_err; /* ... that failed: the QP went to ERROR */
	uint64_t dev_async; /* ... that were queued (ops.dev_copy said 1) */
	uint64_t dev_fences; /* ops.dev_fence calls */
	uint64_t dev_fence_err; /* fences or batches that failed */
	uint64_t dev_held; /* PDUs and completions held for a batch */
	uint64_t dev_batches; /* batches of queued copies closed */
	uint64_t dev_batch_max_inflight; /* most closed and not released */
	uint64_t dev_batch_waits; /* times the engine blocked on a batch:
				   * ring full, holding too much, fence */
	uint64_t dev_batch_not_ready; /* polls that found a batch running */
	uint64_t dev_atomic_refused; /* atomics on device memory: NAK */
	uint64_t dev_copy_fault; /* copies that found no memory (-EFAULT):
				  * protection errors (ovr_eng_reg_mr_ext) */
	uint64_t dev_atomics; /* atomics through two copies (OVR_ENG_MR_HOST) */
	uint64_t mw_binds; /* memory-window binds executed */
	uint64_t mw_bind_err; /* ... refused: OVR_WC_MW_BIND_ERR */
	uint64_t mw_inv; /* invalidations: LOCAL_INV and SEND_WITH_INV */
	uint64_t mw_inv_err; /* ... refused (a type-1 window, a bad key) */
	/* UC (docs/TRANSPORT.md, "Unreliable connected QPs"): what its
	 * responder drops, each silently - nothing answers UC */
	uint64_t uc_msg_dropped; /* messages dropped (any cause below; one
				  * lost whole is never seen, not counted) */
	uint64_t uc_gap; /* packets that arrived out of sequence (a gap
			  * before them) */
	uint64_t uc_stale; /* packets behind the expected PSN: dropped */
	uint64_t uc_norecv; /* SEND / WRITE_IMM with no receive posted */
	uint64_t uc_len; /* SEND longer than its receive */
	uint64_t uc_access; /* WRITE refused: rkey, bounds or rights */
	uint64_t uc_bad; /* an opcode UC does not carry, or a packet that
			  * does not continue its message */
	uint64_t uc_pkts_dropped; /* packets dropped with their message */
	uint64_t uc_tx_unsent; /* WRITEs whose target range wraps: no
				* packet, completed (no region could hold
				* it; the responder would drop it) */
};
void ovr_eng_get_stats(const struct ovr_eng *e, struct ovr_eng_stats *st);
/* @sum += @one, for the engines of several cores: counts add up, the
 * largest of dev_batch_max_inflight stands. */
void ovr_eng_stats_add(struct ovr_eng_stats *sum,
		       const struct ovr_eng_stats *one);

/* Memory accounting: bytes of engine state per QP that holds no
 * packets in flight (with @cap queues), per scoreboard in use, and per
 * in-flight packet slot. */
struct ovr_eng_mem {
	size_t qp_ctx; /* QP context, receive window included */
	size_t per_send_wqe; /* per max_send_wr slot (with its SGEs) */
	size_t per_recv_wqe;
	size_t per_inflight_pkt;
	size_t scoreboard; /* one scoreboard (window_pkts slots) */
};
void ovr_eng_mem(const struct ovr_eng *e, const struct ovr_eng_qp_cap *cap,
		 struct ovr_eng_mem *m);

/*
 * Datagrams outside any QP: the node service's connection manager
 * (docs/WIRE.md, "Connection manager messages") sends UD_SEND PDUs
 * between the nodes' QPN 1 itself. Build writes one at @buf (at most
 * @cap bytes) and returns its length, or a negative error; parse checks
 * a received PDU of @len bytes and gives its Q_Key and payload (0), or
 * a negative error when it is not a valid UD_SEND.
 */
int ovr_eng_dgram_build(void *buf, size_t cap, uint32_t sqpn, uint32_t dqpn,
			uint32_t qkey, uint32_t tsval, const void *payload,
			uint32_t len);
int ovr_eng_dgram_parse(const void *pdu, size_t len, uint32_t *qkey,
			const uint8_t **payload, uint32_t *plen);

#ifdef __cplusplus
}
#endif
#endif /* OVRDMA_ENGINE_H */
