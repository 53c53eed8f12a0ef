/* SPDX-License-Identifier: MIT */
/*
 * Internal state of the transport engine, the one private header of its
 * files (engine.c and eng_*.c; docs in engine.c's opening comment). Only
 * the engine and its white-box tests include this file; everyone else
 * uses include/ovrdma/engine.h.
 */
#ifndef OVR_DP_ENGINE_IMPL_H
#define OVR_DP_ENGINE_IMPL_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ovrdma/compiler.h>
#include <ovrdma/engine.h>
#include <ovrdma/wire_codec.h>

#include "mrtab.h"
#include "rtt.h"
#include "rxwin.h"

/* Device limits the engine enforces (the provider reports them). */
#define OVR_ENG_MAX_SGE 16
#define OVR_ENG_MAX_INLINE 512
#define OVR_ENG_MAX_WR 16384
#define OVR_ENG_MAX_RD_ATOMIC 16
#define OVR_ENG_STASH 4 /* WRITE tails held back per QP */
#define OVR_ENG_TAIL 16 /* bytes of a WRITE made visible last */

/* A local scatter/gather element, resolved at post time. */
struct eng_lsge {
	union {
		uint8_t *host; /* dev NULL: where the bytes are */
		uint64_t dev_off; /* device memory: offset in dev */
	};
	void *dev; /* device-memory cookie (ops.dev_copy), else NULL */
	uint32_t len;
	uint32_t key; /* 0: inline or no region reference */
};

/* Send queue entry. */
enum { W_QUEUED, W_SENDING, W_SENT, W_LOCERR };

struct eng_swqe {
	uint64_t wr_id;
	uint64_t raddr; /* UD: the destination's address vector */
	uint64_t cmp_add; /* atomics; UD: the qkey to send */
	uint64_t swap;
	uint32_t len; /* message bytes */
	uint32_t rkey; /* UD: the destination QPN */
	uint32_t imm; /* immediate, or the rkey to invalidate */
	uint32_t msn; /* queue-0 or queue-1 MSN */
	uint32_t sent; /* bytes segmented so far */
	uint32_t last_psn; /* valid in W_SENT */
	uint32_t resp_got; /* READ: response bytes placed */
	uint32_t resp_last_psn;
	uint8_t opcode; /* enum ovr_wr_opcode */
	uint8_t flags; /* enum ovr_send_flags */
	uint8_t nsge;
	uint8_t state;
	uint8_t status; /* error status when state == W_LOCERR */
	uint8_t resp_done; /* READ/atomic: last response segment placed */
	uint8_t inl; /* payload is in the inline buffer */
	uint8_t rsvd;
};

/* Receive queue entry. */
struct eng_rwqe {
	uint64_t wr_id;
	uint32_t cap; /* bytes the SGEs hold */
	uint32_t msg_len;
	uint32_t last_psn; /* UD: the sender's QPN */
	uint32_t imm;
	uint8_t nsge;
	uint8_t have_last;
	uint8_t wc_opcode; /* RECV or RECV_RDMA_WITH_IMM */
	uint8_t wc_flags;
	uint8_t bad; /* an lkey did not check out at post time */
	uint8_t rsvd[3];
};

/*
 * Shared receive queue. Receives live in slots; a slot is free (on the
 * free stack), posted (in the FIFO, in posting order), or taken by a QP
 * (named in that QP's bind ring until it completes). cap is a power of
 * two. The limit event fires when taking a receive leaves fewer than
 * limit posted.
 */
struct eng_srq {
	struct eng_rwqe *wqe; /* cap slots */
	struct eng_lsge *sge; /* max_sge per slot */
	uint32_t *fifo; /* posted slots, ring of cap */
	uint32_t *free_slot; /* stack of nfree free slots */
	uint32_t cap, max_sge;
	uint32_t head, tail; /* fifo [head, tail) */
	uint32_t nfree;
	uint32_t limit; /* armed when nonzero */
	uint32_t srqn, pd;
	uint32_t nqp; /* QPs using it */
	uint64_t user;
	bool in_use;
};

/* Responder's READ / atomic queue entry (queue-1). */
enum { RD_FREE, RD_PENDING, RD_READY, RD_SENT };

/* 64 bytes, one cache line: PSNs are 24-bit, so the request's shares a
 * word with its opcode and the latest response PSN with the state. */
struct eng_rdq {
	uint64_t va;
	uint64_t swap_add;
	union {
		uint64_t compare; /* atomics */
		/* READ: the source's device-memory cookie, else NULL
		 * (atomics never target device memory: refused) */
		void *dev;
	};
	uint64_t orig; /* atomic result, kept for retransmission */
	union { /* READ source, resolved at execution */
		uint8_t *host;
		uint64_t dev_off; /* in dev */
	};
	uint32_t rkey;
	uint32_t len;
	uint32_t msn;
	uint32_t sent; /* response bytes segmented */
	uint32_t psn : 24; /* PSN of the request */
	uint32_t opcode : 8; /* wire opcode of the request */
	uint32_t last_psn : 24; /* of the latest response segment sent */
	uint32_t state : 8;
};

static_assert(sizeof(struct eng_rdq) == 64, "eng_rdq: one cache line");

/* One in-flight packet of the send PSN space. */
enum {
	SB_SACKED = 1,
	SB_LOST = 2, /* waiting to be resent */
	SB_LAST = 4,
	SB_RESP = 8, /* a response (rd-queue slot), not a request */
	SB_RNR = 16, /* refused with RNR: resent after rnr_until */
	SB_USED = 32,
	/* with SB_SACKED: a READ response segment whose region was revoked
	 * before it could be resent (eng_resp_resend_gone): never resent,
	 * not in the pipe, acknowledged by the peer's cumulative ACK (it
	 * had it after all) or failing its READ if the peer asks again */
	SB_GONE = 64,
};

struct eng_pkt {
	uint64_t xmit_ns; /* last (re)transmission */
	uint32_t off; /* message offset */
	uint16_t len; /* payload bytes */
	uint16_t idx; /* SQ slot or rd-queue slot */
	uint8_t flags;
	uint8_t nretx;
	uint16_t rsvd;
};

struct eng_sb {
	struct eng_sb *next_free;
	struct eng_pkt pkt[]; /* window_pkts */
};

/* A WRITE tail held back until everything before it has landed. */
/* A WRITE tail held back (last byte last). It names its target by rkey
 * and address, not by pointer: the region may be deregistered (and the
 * service unmap it) before the tail is written; it is checked again then. */
struct eng_stash {
	uint64_t va;
	uint32_t rkey;
	uint32_t psn;
	uint8_t len; /* 0: free */
	uint8_t data[OVR_ENG_TAIL];
};

/*
 * A queue pair. Grouped by who uses the fields, the per-packet ones
 * first: identity, then the requester (send queue, send PSN space), the
 * completer's loss recovery and the timers, the responder (receive PSN
 * space, receive queue, READ / atomic resources), device copies, the
 * verbs attributes the per-packet path does not read, and the counters.
 */
struct eng_qp {
	/* identity: every packet, both ways */
	uint32_t qpn;
	uint32_t state;
	uint32_t type; /* OVR_QPT_RC, OVR_QPT_UC or OVR_QPT_UD */
	uint32_t dest_qpn;
	uint32_t pd, send_cq, recv_cq;
	uint32_t access;
	uint32_t seg; /* payload bytes per segment */
	bool in_use;
	bool sig_all;
	bool active; /* on the engine's list of QPs with work (act) */
	uint64_t peer;
	uint64_t user;

	/* requester: the send queue */
	struct eng_swqe *sq;
	struct eng_lsge *ssge; /* max_send_sge per slot */
	uint8_t *sinl; /* max_inline_data per slot */
	uint32_t sq_mask;
	/* the queues' sizes: also the strides of ssge, sinl and rsge */
	struct ovr_eng_qp_cap cap;
	uint32_t sq_prod, sq_cons,
		sq_next; /* posted, completed, next to send */
	uint32_t q0_msn, q1_msn; /* next MSNs to assign */
	uint32_t rd_out; /* READ/atomics started, not completed */
	uint32_t peer_credit;
	bool credit_valid;
	uint64_t credit_wait_since; /* 0: not waiting */
	uint64_t next_tx_ns; /* pacing */
	/* requester: a WR that failed once the WRs before it complete */
	bool fail_pending;
	uint8_t fail_status;
	uint32_t fail_idx;
	uint32_t fail_verr;

	/* send PSN space: the requester sends, the completer acknowledges */
	struct eng_sb *sb; /* NULL when nothing is in flight */
	uint32_t snd_una, snd_nxt;
	uint32_t pipe; /* bytes in flight, not sacked, not lost */
	uint32_t nlost; /* packets marked lost, not yet resent */
	uint32_t nsacked;
	uint32_t ngone; /* of those sacked, abandoned: SB_GONE */
	uint32_t sack_hi; /* one past the highest sacked PSN */
	uint32_t peer_ce; /* last ce_count heard from the peer */
	struct ovr_cc_flow cc;
	struct ovr_dp_rtt rtt;

	/* completer: loss recovery */
	uint64_t rack_xmit_ns, rack_rtt_ns;
	/* when the first of the RTOs since the last delivering ACK fired:
	 * the next ACK tells whether it was spurious (rto_verdict); 0: none */
	uint64_t rto_fired_ns;
	uint64_t last_progress_ns;
	uint32_t retries, rnr_tries;
	uint32_t rnr_psn;
	bool rto_probe; /* the RTO's one resend may pass a full window */
	bool tlp_out; /* a probe is outstanding */
	bool rnr_wait;

	/* timers: 0 is not armed */
	uint64_t rto_at, pto_at, reo_at;
	uint64_t rnr_until;
	/* READ / atomic responses awaited with nothing of ours in flight
	 * (no RTO runs): rsp_watch() asks again at rsp_at, gives up after
	 * the retry budget without a response packet since rsp_since */
	uint64_t rsp_at; /* 0: not waiting */
	uint64_t rsp_since;
	uint32_t rsp_probes;

	/* responder: the receive PSN space and what it owes the peer */
	struct ovr_dp_rxwin rx;
	uint64_t *rxbits;
	uint32_t ts_recent;
	bool ts_fresh; /* ts_recent not yet echoed (eng_ts_echo) */
	bool ack_now;
	uint8_t nak_code; /* NAK to send; 0: none */
	uint8_t nak_timer;
	uint32_t ce_count;
	uint32_t unacked; /* packets received since the last ACK sent */
	uint64_t ack_at; /* delayed ACK deadline; 0: none */
	uint32_t nak_psn;
	uint32_t nak_ts; /* tsval of the packet that provoked it: its echo */
	uint8_t fatal_code; /* responder error that put the QP in ERR */
	uint8_t pend_code; /* a violation found beyond a hole: NAKed (and */
	uint32_t pend_psn; /* the QP failed) once everything before it is in */
	uint32_t fatal_psn;
	/* the QP failed on its own side: it tells the peer with a TERMINATE
	 * of this reason (0: it does not), now if term_pending, and again in
	 * answer to the peer's later packets (rate limited) */
	uint8_t term_reason;
	bool term_pending;

	/* responder: the receive queue - its own (rq, rsge), or receives
	 * taken from an SRQ (bind[i & rq_mask] names the SRQ slot of entry
	 * i) */
	struct eng_rwqe *rq;
	struct eng_lsge *rsge;
	struct eng_srq *srq;
	uint32_t *bind;
	uint32_t rq_mask;
	uint32_t rq_prod, rq_cons;
	uint32_t rq_msn; /* MSN of the message rq_cons receives */

	/* responder: READ/atomic queue (responder resources), and the
	 * requester's map of its own outstanding ones */
	uint32_t rd_exec_msn; /* next to execute */
	uint32_t rd_send_msn; /* next whose response is unsent */
	uint32_t rd_free_msn; /* oldest not yet acked */
	uint32_t rd_next_msn; /* one past the highest arrived */
	uint32_t rdw[OVR_ENG_MAX_RD_ATOMIC]; /* q1 msn -> SQ slot */
	struct eng_rdq rdq[OVR_ENG_MAX_RD_ATOMIC];

	/* responder: WRITE tails held back */
	struct eng_stash stash[OVR_ENG_STASH];

	/* device copies (eng_dev.c, eng_dev_copy): dev_listed: in the open
	 * batch's QP list at dev_idx; dev_fail: a batch of its failed
	 * (ovr_eng_dev_poll / ovr_eng_fence fail it), dev_resp / dev_psn:
	 * that batch's first PSN as responder, if any */
	bool dev_listed, dev_resp, dev_fail;
	/* dev_fail: a copy of a request it served failed on its own
	 * (ops.dev_batch_faults), not a whole batch: from dev_psn on, as
	 * a synchronous failure would - NAK dev_nak (REM_ACCESS for no
	 * memory, REM_OP, or ENG_NAK_GONE), the receive dev_ridx
	 * failing LOC_PROT_ERR (dev_recv_bad) */
	bool dev_faulted;
	uint8_t dev_nak;
	uint32_t dev_ridx, dev_recv_bad;
	uint32_t dev_psn;
	uint32_t dev_idx;

	/* verbs attributes, read by modify, query and the timers */
	uint32_t qkey; /* UD */
	uint32_t mtu; /* enum ovr_mtu */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	bool sqd_notify, sqd_drained;
	bool comm_est;
	/* RC QP in RTR that took its send PSN from the peer's ack_psn
	 * (eng_resp.c, rtr_adopt_psn): RTS's SQ_PSN no longer resets it */
	bool psn_adopted;

	/* UC responder (eng_uc.c): the message being received, in PSN
	 * order - its opcode, length, bytes placed so far, queue-0 MSN
	 * (SEND*, WRITE_IMM) and, for a WRITE, its target; drop: the rest
	 * of it is dropped (a gap, a refusal), until the next message's
	 * first packet */
	struct {
		bool in_msg, drop;
		uint8_t op;
		uint32_t len, got, msn;
		uint32_t rkey;
		uint64_t va;
	} uc;

	/* engine bookkeeping: the list of QPs with work */
	struct eng_qp *act_next, *act_prev;

	/* counters */
	struct ovr_eng_qp_stats st;
};
/* What waits for queued device copies: a PDU, ... */
struct eng_held_tx {
	void *tok;
	uint8_t *buf;
	uint32_t len; /* unsealed when seal */
	uint32_t qpn; /* 0: none */
	bool seal;
	uint64_t peer, user;
};

/* ... or a completion. */
struct eng_held_cqe {
	uint32_t cq;
	struct ovr_eng_wc wc;
	/* a receive of a reliable QP: its index and its message's last
	 * PSN (what a failed copy of the QP's decides: eng_cqe_fail) */
	bool recv;
	uint32_t ridx, psn;
};

#define ENG_HOLD 512 /* held of each kind per batch */

/* A QP with copies in a batch: as responder from PSN psn if resp;
 * fault: a copy of it failed on its own (ops.dev_batch_faults) - the
 * one of the lowest PSN at fpsn, NAKing fnak (REM_OP: receive fridx);
 * the batch's PDUs of the QP from fhtx on were produced after the
 * first of them was queued; marked: the QP fails from here
 * (bat_settle). */
struct eng_dev_qp {
	uint32_t qpn;
	uint32_t psn;
	bool resp;
	bool fault, marked;
	uint8_t fnak;
	uint32_t fpsn, fridx;
	uint32_t fhtx;
};

/* A queued copy: its QP (index in the batch's list) and, made with
 * OVR_ENG_COPY_LATE, the PSN of the request it serves, what its failure
 * NAKs (REM_OP: it fills receive ridx) and how many PDUs the batch held
 * when it was queued. */
struct eng_dev_cp {
	uint32_t qidx;
	uint32_t psn;
	uint8_t nak;
	uint32_t ridx;
	uint32_t htx;
};

/* QPs one batch lists; the batch is closed early when it has more. */
#define ENG_BATCH_QPS 256

/*
 * A batch of device copies and what waits for it (eng_dev.c): the QPs
 * with copies in it, and the PDUs and completions produced after the
 * previous batch's closing and before its own (or, merged, until the
 * next batch with copies). About 60 KB each.
 */
struct eng_batch {
	uint64_t seq; /* 1, 2, ... in closing order */
	uint32_t queued; /* copies */
	int err; /* dev_fence's answer (batches without dev_batch_*) */
	bool fenced; /* done already (dev_fence) */
	uint32_t nqp, nhtx, nhcqe;
	struct eng_dev_qp *qp; /* [ENG_BATCH_QPS] */
	struct eng_held_tx *htx; /* [ENG_HOLD] */
	struct eng_held_cqe *hcqe; /* [ENG_HOLD] */
	struct eng_dev_cp *cp; /* [OVR_ENG_BATCH_COPIES] */
};

struct ovr_eng {
	struct ovr_eng_cfg cfg;
	struct ovr_eng_ops ops;
	void *ctx;
	const struct ovr_cc_ops *cc;
	struct ovr_mr_table *mrs;
	struct eng_qp *qps;
	uint32_t qp_bits;
	uint32_t qp_gen;
	uint32_t nqp;
	struct eng_qp act; /* list head of active QPs */
	struct eng_sb *sb_free;
	void *sb_mem;
	size_t sb_size;
	uint64_t *rxbits_mem;
	uint32_t max_seg;
	struct ovr_wire_counters wc;
	struct ovr_eng_stats st;
	uint64_t now;
	struct eng_srq *srqs; /* cfg.max_srq, rounded up to 2^srq_bits */
	uint32_t srq_bits;
	uint32_t srq_gen;
	/* token bucket of TERMINATE answers (cfg.term_rate, term_burst) */
	uint32_t term_tokens;
	uint64_t term_refill_ns; /* time the tokens were last counted up to */
	/* device copies (only with ops.dev_fence): a ring of nbat
	 * batches, free-running indices: [bat_head, bat_tail) closed and
	 * in flight, bat_tail % nbat the open one, queuing. dev_busy: the
	 * open one has copies or something is in flight: hold what is
	 * produced (the one check on the per-packet path) */
	bool dev_busy;
	struct eng_batch *bat;
	uint32_t nbat; /* cfg.dev_batches + 1 */
	uint64_t bat_head, bat_tail;
	uint64_t bat_seq; /* the newest closed batch's */
	uint64_t bat_done; /* the newest released batch's */
	uint32_t *dev_failq; /* QPs whose batch failed: ndev_fail */
	struct ovr_eng_copy_fault *dev_faults; /* [OVR_ENG_BATCH_COPIES] */
	uint32_t ndev_fail;
	/* the last failed eng_dev_copy said -EFAULT: the bytes are not
	 * there (host memory unmapped under a registration), a protection
	 * error rather than a copy failure (eng_copy_fault) */
	bool dev_fault;
	/* ... said -ESRCH: the memory's owner is gone (the application
	 * exited; its context is being torn down): the QP ends as if the
	 * application had destroyed it (eng_copy_nak) */
	bool dev_gone;
	/* the NAK a fault of the copies being made gives as responder:
	 * REM_ACCESS, or REM_OP for a SEND's receive (eng_copy_nak's
	 * choice for a synchronous one) */
	uint8_t dev_nak;
	uint32_t dev_ridx; /* with dev_nak REM_OP: the receive */
	bool dev_first; /* the next copy is a send WR's first (SRC|FIRST) */
	bool dev_fenced; /* the send WR being read was fenced (SRC|FENCED) */
	/* the receive completion being emitted (eng_complete_recv): its
	 * index and message's last PSN, held with it */
	bool cqe_recv;
	uint32_t cqe_ridx, cqe_psn;
	/* mrs is another engine's (cfg.mr_share): stats count no regions */
	bool mr_sharer;
};

#define M24 OVR_WIRE_PSN_MASK
#define PSN_ADD(a, n) (((a) + (n)) & M24)
#define PSN_LT(a, b) (ovr_wire_psn_diff((a), (b)) < 0)

/* Window cost of a packet: payload plus a header allowance, so that the
 * window bounds small-message floods too. */
#define PKT_OVERHEAD 64u
#define PKT_COST(len) ((uint32_t)(len) + PKT_OVERHEAD)

/* Largest extension header of a data-carrying request (TTH + IMMH). */
#define DATA_HDR_MAX                                                 \
	(sizeof(struct ovr_wire_oth) + sizeof(struct ovr_wire_tth) + \
	 sizeof(struct ovr_wire_immh))

/* What each work-request opcode becomes on the wire and in its
 * completion (indexed by enum ovr_wr_opcode; post_send admits only these). */
struct eng_wr_map {
	uint8_t wire;
	uint8_t wc;
};

extern const struct eng_wr_map eng_wr_map[OVR_WR_ATOMIC_WRITE + 1];

/* Fills a PDU's payload (eng_tx_pdu); false: failed, the QP with it. */
typedef bool (*eng_fill_fn)(struct ovr_eng *e, struct eng_qp *qp, uint8_t *dst,
			    uint32_t off, uint32_t len, uint32_t idx);

/* eng_qp.c */
void eng_qp_free_queues(struct eng_qp *qp);
void eng_qp_error(struct ovr_eng *e, struct eng_qp *qp, uint32_t fail,
		  uint32_t status, uint32_t verr);
void eng_qp_error_head(struct ovr_eng *e, struct eng_qp *qp, uint32_t status,
		       uint32_t verr);
void eng_qp_error_local(struct ovr_eng *e, struct eng_qp *qp, uint32_t fail,
			uint32_t status, uint32_t verr);
void eng_qp_fatal_nak(struct ovr_eng *e, struct eng_qp *qp, uint8_t code,
		      uint32_t psn);
void eng_qp_to_rts(struct ovr_eng *e, struct eng_qp *qp, uint64_t now);

/* eng_req.c */
bool eng_tx_pdu(struct ovr_eng *e, struct eng_qp *qp, struct ovr_wire_pkt *p,
		eng_fill_fn fill, uint32_t off, uint32_t idx);
bool eng_tx_req_seg(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx,
		    uint32_t off, uint32_t len, uint32_t psn, bool retx,
		    uint64_t now);
bool eng_tx_term(struct ovr_eng *e, uint32_t dqpn, uint32_t sqpn,
		 uint8_t reason, uint32_t psn, uint64_t peer, uint64_t user,
		 const struct eng_qp *ackq, uint64_t now);
uint32_t eng_qp_tx(struct ovr_eng *e, struct eng_qp *qp, uint64_t now,
		   uint32_t burst);
void eng_sq_error(struct ovr_eng *e, struct eng_qp *qp, uint32_t status);
int eng_local_exec(struct ovr_eng *e, struct eng_qp *qp, struct eng_swqe *w);

/* eng_resp.c */
void eng_complete_recv(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx,
		       uint32_t status, uint32_t verr);
void eng_rwqe_fill(struct ovr_eng *e, uint32_t pd, struct eng_rwqe *r,
		   struct eng_lsge *s, const struct ovr_eng_recv_wr *wr,
		   uint32_t total);
uint32_t eng_rwqe_revoke(struct ovr_eng *e, struct eng_rwqe *r,
			 struct eng_lsge *s, uint32_t key, bool count);
bool eng_recv_revoke(struct ovr_eng *e, uint32_t key);
uint32_t eng_recv_yield(struct ovr_eng *e, uint32_t key);
void eng_recv_recheck(struct ovr_eng *e, uint32_t key, uint32_t pd,
		      unsigned int access);
bool eng_tx_resp_seg(struct ovr_eng *e, struct eng_qp *qp, uint32_t slot,
		     uint32_t off, uint32_t len, uint32_t psn, bool retx,
		     uint64_t now);
bool eng_resp_resend_gone(struct ovr_eng *e, struct eng_qp *qp, uint32_t psn);
void eng_send_ack(struct ovr_eng *e, struct eng_qp *qp, uint64_t now);
void eng_send_nak(struct ovr_eng *e, struct eng_qp *qp, uint64_t now);
int eng_tx_resp(struct ovr_eng *e, struct eng_qp *qp, uint64_t now);

/* eng_comp.c */
void eng_complete_send(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx,
		       uint32_t status, uint32_t verr, bool force);
uint32_t eng_rack_detect(struct ovr_eng *e, struct eng_qp *qp, uint64_t now);
void eng_on_ack(struct ovr_eng *e, struct eng_qp *qp,
		const struct ovr_wire_pkt *p, uint64_t now);
bool eng_q1_of_psn(const struct eng_qp *qp, uint32_t psn, uint32_t *idx);
void eng_on_nak(struct ovr_eng *e, struct eng_qp *qp,
		const struct ovr_wire_pkt *p, uint64_t now);
void eng_sq_complete(struct ovr_eng *e, struct eng_qp *qp);
void eng_on_rto(struct ovr_eng *e, struct eng_qp *qp, uint64_t now);
void eng_on_pto(struct ovr_eng *e, struct eng_qp *qp, uint64_t now);
void eng_rsp_watch(struct ovr_eng *e, struct eng_qp *qp, uint64_t now);

/* eng_uc.c */
void eng_uc_to_rts(struct ovr_eng *e, struct eng_qp *qp, uint64_t now);
uint32_t eng_uc_tx(struct ovr_eng *e, struct eng_qp *qp, uint64_t now,
		   uint32_t burst);
void eng_uc_rx(struct ovr_eng *e, struct eng_qp *qp,
	       const struct ovr_wire_pkt *p, uint64_t now, bool ce);
bool eng_uc_opcode_ok(uint32_t wr_opcode);

/* eng_srq.c */
void eng_srq_free(struct eng_srq *q);
struct eng_srq *eng_srq_get(struct ovr_eng *e, uint32_t srqn);
bool eng_srq_take(struct ovr_eng *e, struct eng_qp *qp);
uint32_t eng_srq_revoke(struct ovr_eng *e, uint32_t key, bool count);

/* eng_dev.c */
struct eng_batch *eng_bat_alloc(uint32_t n);
bool eng_dev_copy(struct ovr_eng *e, struct eng_qp *qp, int64_t rpsn, void *dev,
		  uint64_t off, void *buf, uint32_t len, bool to_dev,
		  uint32_t msg_len);
int eng_dev_copy_sync(struct ovr_eng *e, void *dev, uint64_t off, void *buf,
		      uint32_t len, bool to_dev);
void eng_dev_settle(struct ovr_eng *e);
bool eng_hold_cqe(struct ovr_eng *e, const struct eng_held_cqe *h);
bool eng_hold_tx(struct ovr_eng *e, const struct eng_held_tx *h);

/* ---- small helpers of the per-packet path, inline everywhere ---- */

static inline uint32_t eng_min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static inline uint32_t eng_ts_of(uint64_t now)
{
	return (uint32_t)now | 1u; /* tsecr 0 would read as "no echo" */
}

static inline void eng_qp_activate(struct ovr_eng *e, struct eng_qp *qp)
{
	if (qp->active)
		return;
	qp->active = true;
	qp->act_next = &e->act;
	qp->act_prev = e->act.act_prev;
	e->act.act_prev->act_next = qp;
	e->act.act_prev = qp;
}

static inline void eng_qp_deactivate(struct eng_qp *qp)
{
	if (!qp->active)
		return;
	qp->act_prev->act_next = qp->act_next;
	qp->act_next->act_prev = qp->act_prev;
	qp->act_next = qp->act_prev = NULL;
	qp->active = false;
}

static inline struct eng_qp *eng_qp_get(struct ovr_eng *e, uint32_t qpn)
{
	struct eng_qp *qp;

	qpn &= M24;
	qp = &e->qps[qpn & ((1u << e->qp_bits) - 1)];
	return qp->in_use && qp->qpn == qpn ? qp : NULL;
}

static inline struct eng_pkt *eng_sb_pkt(struct ovr_eng *e, struct eng_qp *qp,
					 uint32_t psn)
{
	return &qp->sb->pkt[psn & (e->cfg.window_pkts - 1)];
}

static inline bool eng_sb_acquire(struct ovr_eng *e, struct eng_qp *qp,
				  uint64_t now)
{
	struct eng_sb *sb;

	if (qp->sb)
		return true;
	sb = e->sb_free;
	if (!sb) {
		e->st.sb_waits++;
		return false;
	}
	e->sb_free = sb->next_free;
	/* no clearing: only slots in [snd_una, snd_nxt) are ever read, and
	 * each is written by eng_sb_record before it enters that range */
	qp->sb = sb;
	/* nothing was in flight: the retry budget (retry_cnt timeouts
	 * without progress) counts from now, not from the last ACK of a
	 * QP that may have been idle for seconds */
	qp->retries = 0;
	qp->last_progress_ns = now;
	return true;
}

static inline void eng_sb_release(struct ovr_eng *e, struct eng_qp *qp)
{
	if (!qp->sb)
		return;
	qp->sb->next_free = e->sb_free;
	e->sb_free = qp->sb;
	qp->sb = NULL;
	qp->pipe = 0;
	qp->nlost = 0;
	qp->nsacked = 0;
	qp->ngone = 0;
	qp->rto_at = qp->pto_at = qp->reo_at = 0;
	qp->rto_fired_ns = 0;
	qp->rto_probe = false;
	qp->tlp_out = false;
}

/* Copy @len bytes between @buf and offset @off of a scatter list:
 * out of the list when @to_list is false, into it when true; they are
 * part of a message of @msg_len bytes. False: a device copy failed. */
static inline bool eng_sge_copy(struct ovr_eng *e, struct eng_qp *qp,
				int64_t rpsn, const struct eng_lsge *s,
				unsigned int n, uint32_t off, uint8_t *buf,
				uint32_t len, bool to_list, uint32_t msg_len)
{
	/* a send WR's first bytes: the service reads its source afresh */
	e->dev_first = off == 0 && rpsn < 0 && !to_list;
	for (unsigned int i = 0; len && i < n; i++) {
		uint32_t c;

		if (off >= s[i].len) {
			off -= s[i].len;
			continue;
		}
		c = eng_min32(s[i].len - off, len);
		if (s[i].dev) {
			if (!eng_dev_copy(e, qp, rpsn, s[i].dev,
					  s[i].dev_off + off, buf, c, to_list,
					  msg_len))
				return false;
		} else if (to_list) {
			memcpy(s[i].host + off, buf, c);
			e->st.host_copy_bytes += c;
		} else {
			memcpy(buf, s[i].host + off, c);
			e->st.host_copy_bytes += c;
		}
		buf += c;
		len -= c;
		off = 0;
	}
	return true;
}

/*
 * What a failed copy (eng_dev_copy, eng_sge_copy false) means for the
 * QP: -EFAULT from ops.dev_copy (no memory there) is a protection
 * error - the responder NAKs REM_ACCESS, the requester's WR
 * completes LOC_PROT_ERR - -ESRCH (the memory's owner is gone) ends
 * the QP with a TERMINATE (the requester's side does that already:
 * eng_qp_error_local), any other failure is an operational one.
 */
/* Not a wire code: eng_qp_fatal_nak ends the QP with a TERMINATE
 * instead of a NAK, as when the application destroys it - the peer's
 * WR completes REM_ABORT_ERR, not an error that blames its request. */
#define ENG_NAK_GONE 0xffu

static inline uint8_t eng_copy_nak(const struct ovr_eng *e)
{
	if (e->dev_gone)
		return ENG_NAK_GONE;
	return e->dev_fault ? OVR_NAK_REM_ACCESS : OVR_NAK_REM_OP;
}

static inline uint32_t eng_copy_status(const struct ovr_eng *e)
{
	return e->dev_fault ? OVR_WC_LOC_PROT_ERR : OVR_WC_LOC_QP_OP_ERR;
}

/* A QP whose batch of device copies failed (dev_fail_qps fails it). */
static inline bool eng_dev_failed(struct ovr_eng *e, uint32_t qpn)
{
	struct eng_qp *qp;

	if (!e->ndev_fail || !qpn)
		return false;
	qp = eng_qp_get(e, qpn);
	return qp && qp->dev_fail;
}

/*
 * A successful completion of a QP whose copies failed: an error. After
 * a failed batch, every one (LOC_QP_OP_ERR). After a copy that failed
 * on its own (dev_faulted, from dev_psn on): a receive whose message
 * ended before dev_psn stands (the NAK acknowledges it), the receive
 * the copy filled fails as a synchronous failure fails it, later ones
 * are flushed; send completions stand (the peer acknowledged them).
 */
static inline void eng_cqe_fail(struct ovr_eng *e, struct eng_held_cqe *h)
{
	struct ovr_eng_wc *wc = &h->wc;
	struct eng_qp *qp;

	if (wc->status != OVR_WC_SUCCESS || !eng_dev_failed(e, wc->qp_num))
		return;
	qp = eng_qp_get(e, wc->qp_num);
	if (qp->dev_faulted) {
		if (!h->recv || PSN_LT(h->psn, qp->dev_psn))
			return;
		wc->status = h->ridx == qp->dev_ridx && qp->dev_recv_bad ?
				     qp->dev_recv_bad :
				     OVR_WC_WR_FLUSH_ERR;
		wc->vendor_err = 0;
	} else {
		wc->status = OVR_WC_LOC_QP_OP_ERR;
		wc->vendor_err = OVR_VERR_DEV_COPY;
	}
	wc->opcode = h->recv ? OVR_WC_RECV : wc->opcode;
	wc->byte_len = 0;
	wc->wc_flags = 0;
}

static inline void eng_cqe_out(struct ovr_eng *e, struct eng_held_cqe *h)
{
	eng_cqe_fail(e, h);
	e->ops.cqe(e->ctx, h->cq, &h->wc);
}

static inline void eng_tx_release(struct ovr_eng *e,
				  const struct eng_held_tx *h)
{
	uint32_t len = h->len;

	if (len && eng_dev_failed(e, h->qpn))
		len = 0; /* it may carry wrong bytes, or acknowledge them */
	else if (len && h->seal)
		len = (uint32_t)ovr_wire_seal(h->buf, len);
	e->ops.tx(e->ctx, h->tok, len, h->peer, h->user);
}

/* Hand a completion out, or keep it while device copies are queued; a
 * receive's (eng_complete_recv) says which with e->cqe_recv. */
static inline void eng_emit_cqe(struct ovr_eng *e, uint32_t cq,
				struct ovr_eng_wc *wc)
{
	struct eng_held_cqe h;

	/* the common case: no device copies anywhere, hand it out as is */
	if (ovr_likely(!e->dev_busy && !e->ndev_fail)) {
		e->ops.cqe(e->ctx, cq, wc);
		return;
	}
	h = (struct eng_held_cqe){ .cq = cq,
				   .wc = *wc,
				   .recv = e->cqe_recv,
				   .ridx = e->cqe_ridx,
				   .psn = e->cqe_psn };
	if (e->dev_busy && eng_hold_cqe(e, &h))
		return;
	eng_cqe_out(e, &h);
}

/*
 * Hand the PDU of @len bytes in @buf (@tok) to ops.tx - sealed here when
 * @seal, else already sealed - or keep it while device copies are
 * queued (its payload may be one of them; or what it acknowledges).
 * @len 0 releases the buffer (in turn: a copy may still target it).
 * A PDU of no QP (@qpn 0: a TERMINATE answering a packet for a QP that
 * does not exist) carries neither and goes at once: its destination is
 * only known during the ovr_eng_rx_from call.
 */
static inline void eng_tx_out(struct ovr_eng *e, uint32_t qpn, void *tok,
			      uint8_t *buf, uint32_t len, bool seal,
			      uint64_t peer, uint64_t user)
{
	struct eng_held_tx h = { .tok = tok,
				 .buf = buf,
				 .len = len,
				 .qpn = qpn,
				 .seal = seal,
				 .peer = peer,
				 .user = user };

	if (ovr_unlikely(e->dev_busy) && qpn && eng_hold_tx(e, &h))
		return;
	eng_tx_release(e, &h);
}

static inline struct eng_lsge *eng_swqe_sge(struct eng_qp *qp, uint32_t idx)
{
	return &qp->ssge[(idx & qp->sq_mask) * qp->cap.max_send_sge];
}

static inline struct eng_lsge *eng_srq_sge(struct eng_srq *q, uint32_t slot)
{
	return &q->sge[(size_t)slot * q->max_sge];
}

/* Receive entry @idx of a QP: its own, or the SRQ slot it took. */
static inline struct eng_rwqe *eng_rwqe(struct eng_qp *qp, uint32_t idx)
{
	if (ovr_unlikely(qp->srq != NULL))
		return &qp->srq->wqe[qp->bind[idx & qp->rq_mask]];
	return &qp->rq[idx & qp->rq_mask];
}

static inline struct eng_lsge *eng_rwqe_sge(struct eng_qp *qp, uint32_t idx)
{
	if (ovr_unlikely(qp->srq != NULL))
		return eng_srq_sge(qp->srq, qp->bind[idx & qp->rq_mask]);
	return &qp->rsge[(idx & qp->rq_mask) * qp->cap.max_recv_sge];
}

/* Drop the region references a WR's scatter list took at post time. */
static inline void eng_put_refs(struct ovr_eng *e, const struct eng_lsge *s,
				uint8_t *nsge)
{
	for (unsigned int i = 0; i < *nsge; i++)
		if (s[i].key)
			ovr_mr_put(e->mrs, s[i].key);
	*nsge = 0;
}

static inline void eng_swqe_put_refs(struct ovr_eng *e, struct eng_qp *qp,
				     uint32_t idx)
{
	eng_put_refs(e, eng_swqe_sge(qp, idx), &qp->sq[idx & qp->sq_mask].nsge);
}

/* Receive entry @idx is done with: drop its references; an SRQ slot
 * goes back to the SRQ's free stack. */
static inline void eng_rwqe_put_refs(struct ovr_eng *e, struct eng_qp *qp,
				     uint32_t idx)
{
	eng_put_refs(e, eng_rwqe_sge(qp, idx), &eng_rwqe(qp, idx)->nsge);
	if (qp->srq)
		qp->srq->free_slot[qp->srq->nfree++] =
			qp->bind[idx & qp->rq_mask];
}

/* The references every WR @qp holds go back (a reset; an engine
 * leaving a shared table), and those of every receive waiting in @q
 * (its destroy; the same). */
void eng_qp_put_refs(struct ovr_eng *e, struct eng_qp *qp);
void eng_srq_put_refs(struct ovr_eng *e, struct eng_srq *q);

static inline void eng_qp_event(struct ovr_eng *e, struct eng_qp *qp,
				enum ovr_event ev)
{
	if (e->ops.event)
		e->ops.event(e->ctx, qp->user, qp->qpn, ev);
}

/* vendor_err of a WR that failed at posting: a local key, or a remote
 * range no region can hold (what the responder's NAK would have said) */
static inline uint32_t eng_locerr_verr(const struct eng_swqe *w)
{
	return w->status == OVR_WC_REM_ACCESS_ERR ? OVR_NAK_REM_ACCESS :
						    OVR_VERR_LKEY;
}

/* Point a local SGE at what ovr_mr_check_dev resolved. */
static inline void eng_set_lsge(struct eng_lsge *s,
				const struct ovr_mr_loc *loc)
{
	s->dev = loc->dev;
	if (loc->dev)
		s->dev_off = loc->dev_off;
	else
		s->host = loc->host;
}

static inline bool eng_is_q1(uint8_t op)
{
	return op == OVR_WR_RDMA_READ || op == OVR_WR_ATOMIC_CMP_AND_SWP ||
	       op == OVR_WR_ATOMIC_FETCH_AND_ADD || op == OVR_WR_ATOMIC_WRITE;
}

static inline void eng_arm_timers(struct eng_qp *qp, uint64_t now,
				  uint64_t ack_delay)
{
	uint32_t inflight = (qp->snd_nxt - qp->snd_una) & M24;

	if (!qp->rto_at)
		qp->rto_at = now + qp->rtt.rto_ns;
	if (!qp->tlp_out)
		qp->pto_at = now +
			     ovr_dp_rtt_pto(&qp->rtt, inflight == 1, ack_delay);
}

/* Record a newly sent packet in the scoreboard. */
static inline void eng_sb_record(struct ovr_eng *e, struct eng_qp *qp,
				 uint32_t psn, uint32_t off, uint32_t len,
				 uint32_t idx, uint8_t flags, uint64_t now)
{
	struct eng_pkt *k = eng_sb_pkt(e, qp, psn);

	k->xmit_ns = now;
	k->off = off;
	k->len = (uint16_t)len;
	k->idx = (uint16_t)idx;
	k->flags = flags | SB_USED;
	k->nretx = 0;
	qp->pipe += PKT_COST(len);
	eng_arm_timers(qp, now, e->cfg.ack_delay_ns);
}

static inline bool eng_window_open(struct ovr_eng *e, struct eng_qp *qp,
				   uint32_t len)
{
	(void)e;
	/* an empty pipe always lets one packet out, whatever the window */
	return !qp->pipe || qp->pipe + PKT_COST(len) <= qp->cc.cwnd_bytes;
}

static inline void eng_pace(struct eng_qp *qp, uint32_t len, uint64_t now)
{
	if (!qp->cc.rate_bps)
		return;
	if (qp->next_tx_ns < now)
		qp->next_tx_ns = now;
	qp->next_tx_ns +=
		(uint64_t)(len + 100) * 8 * 1000000000ull / qp->cc.rate_bps;
}

static inline void eng_mark_lost(struct eng_qp *qp, struct eng_pkt *k)
{
	k->flags |= SB_LOST;
	qp->nlost++;
	qp->pipe -= PKT_COST(k->len);
}

/*
 * Nothing in flight is ours to deliver any more: every packet of
 * [snd_una, snd_nxt) is SACKed, and at least one was abandoned (SB_GONE:
 * a READ response whose region went). No timer has anything to resend;
 * the peer's next cumulative ACK, or its asking again, settles the rest.
 */
static inline bool eng_sb_only_gone(const struct eng_qp *qp)
{
	return qp->ngone && !qp->pipe && !qp->nlost;
}

static inline uint32_t eng_credit_of(const struct eng_qp *qp)
{
	return qp->rq_msn + (qp->rq_prod - qp->rq_cons);
}

/*
 * The timestamp echo: the tsval of the newest packet received (or of a
 * duplicate newer than that), sent once, with the first ACK that covers
 * it - within ack_delay_ns of its arrival, alone if nothing else goes
 * first. A later packet that acknowledges the same thing again carries 0
 * (no echo, no sample): it is sent because that first ACK was lost, or it
 * is a packet the application sent after a pause (a requester's next READ
 * long after the last response), and its age is ours, not the path's -
 * the peer would take the pause for an RTT and inflate its timeouts.
 */
static inline uint32_t eng_ts_echo(const struct eng_qp *qp)
{
	return qp->ts_fresh ? qp->ts_recent : 0;
}

/* The header every PDU of @qp starts with: addressing, timestamp and,
 * from RTR on, the piggybacked ACK, echo and credit. Inline: it runs
 * once per packet sent, and its memset folds into the stores. */
static inline void eng_hdr_init(struct eng_qp *qp, struct ovr_wire_pkt *p,
				uint8_t op, uint64_t now)
{
	memset(p, 0, sizeof(*p));
	p->version = OVR_WIRE_VERSION;
	p->opcode = op;
	p->dqpn = qp->dest_qpn;
	p->sqpn = qp->qpn;
	p->tsval = eng_ts_of(now);
	p->payload = NULL;
	p->payload_len = 0;
	/* UC acknowledges nothing and promises no receives (eng_uc.c) */
	if (qp->state >= OVR_QPS_RTR && qp->type != OVR_QPT_UC) {
		p->flags = OVR_F_ACK;
		p->ack_psn = qp->rx.ack_psn;
		p->tsecr = eng_ts_echo(qp);
		/* an SRQ's receives are not this QP's to promise (IB's SRQ
		 * responders send no end-to-end credit either): the peer
		 * sends and learns from an RNR NAK */
		if (!qp->srq) {
			p->flags |= OVR_F_CREDIT;
			p->credit = eng_credit_of(qp);
		}
	}
}

#endif /* OVR_DP_ENGINE_IMPL_H */
