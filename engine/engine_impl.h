/* SPDX-License-Identifier: MIT */
/*
 * Internal state of the transport engine (engine.c). Only the engine and
 * its white-box tests include this file; everyone else uses
 * include/ovrdma/engine.h.
 */
#ifndef OVR_DP_ENGINE_IMPL_H
#define OVR_DP_ENGINE_IMPL_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

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

struct eng_qp {
	/* identity and verbs attributes */
	uint32_t qpn;
	uint32_t state;
	uint32_t type; /* OVR_QPT_RC or OVR_QPT_UD */
	uint32_t qkey; /* UD */
	uint32_t pd, send_cq, recv_cq;
	uint64_t user;
	uint64_t peer;
	uint32_t dest_qpn;
	uint32_t access;
	uint32_t mtu; /* enum ovr_mtu */
	uint32_t seg; /* payload bytes per segment */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	bool sig_all;
	bool in_use;
	bool sqd_notify, sqd_drained;
	bool comm_est;
	/* RC QP in RTR that took its send PSN from the peer's ack_psn
	 * (engine.c, rtr_adopt_psn): RTS's SQ_PSN no longer resets it */
	bool psn_adopted;
	struct ovr_eng_qp_cap cap;

	/* send queue (requester) */
	struct eng_swqe *sq;
	struct eng_lsge *ssge; /* max_send_sge per slot */
	uint8_t *sinl; /* max_inline_data per slot */
	uint32_t sq_mask;
	uint32_t sq_prod, sq_cons,
		sq_next; /* posted, completed, next to send */
	uint32_t q0_msn, q1_msn; /* next MSNs to assign */
	uint32_t rd_out; /* READ/atomics started, not completed */
	uint32_t rdw[OVR_ENG_MAX_RD_ATOMIC]; /* q1 msn -> SQ slot */
	uint32_t peer_credit;
	bool credit_valid;
	uint64_t credit_wait_since; /* 0: not waiting */

	/* send PSN space */
	struct eng_sb *sb; /* NULL when nothing is in flight */
	uint32_t snd_una, snd_nxt;
	uint32_t pipe; /* bytes in flight, not sacked, not lost */
	uint32_t nlost; /* packets marked lost, not yet resent */
	uint32_t nsacked;
	uint32_t sack_hi; /* one past the highest sacked PSN */
	struct ovr_dp_rtt rtt;
	struct ovr_cc_flow cc;
	uint64_t rack_xmit_ns, rack_rtt_ns;
	/* when the first of the RTOs since the last delivering ACK fired:
	 * the next ACK tells whether it was spurious (rto_verdict); 0: none */
	uint64_t rto_fired_ns;
	bool rto_probe; /* the RTO's one resend may pass a full window */
	uint64_t rto_at, pto_at, reo_at; /* 0: not armed */
	uint64_t rnr_until;
	uint64_t next_tx_ns; /* pacing */
	uint64_t last_progress_ns;
	uint32_t retries, rnr_tries;
	uint32_t rnr_psn;
	bool tlp_out; /* a probe is outstanding */
	bool rnr_wait;
	/* READ / atomic responses awaited with nothing of ours in flight
	 * (no RTO runs): rsp_watch() asks again at rsp_at, gives up after
	 * the retry budget without a response packet since rsp_since */
	uint64_t rsp_at; /* 0: not waiting */
	uint64_t rsp_since;
	uint32_t rsp_probes;

	/* receive PSN space */
	struct ovr_dp_rxwin rx;
	uint64_t *rxbits;
	uint32_t ts_recent;
	bool ts_fresh; /* ts_recent not yet echoed (engine.c, ts_echo) */
	uint32_t ce_count;
	uint32_t peer_ce; /* last ce_count heard from the peer */
	uint32_t unacked; /* packets received since the last ACK sent */
	uint64_t ack_at; /* delayed ACK deadline; 0: none */
	bool ack_now;
	uint8_t nak_code; /* NAK to send; 0: none */
	uint8_t nak_timer;
	uint32_t nak_psn;
	uint32_t nak_ts; /* tsval of the packet that provoked it: its echo */
	uint8_t fatal_code; /* responder error that put the QP in ERR */
	uint32_t fatal_psn;
	uint8_t pend_code; /* a violation found beyond a hole: NAKed (and */
	uint32_t pend_psn; /* the QP failed) once everything before it is in */
	/* the QP failed on its own side: it tells the peer with a TERMINATE
	 * of this reason (0: it does not), now if term_pending, and again in
	 * answer to the peer's later packets (rate limited) */
	uint8_t term_reason;
	bool term_pending;
	/* requester: a WR that failed once the WRs before it complete */
	bool fail_pending;
	uint8_t fail_status;
	uint32_t fail_idx;
	uint32_t fail_verr;

	/* receive queue: its own (rq, rsge), or receives taken from an SRQ
	 * (bind[i & rq_mask] names the SRQ slot of entry i) */
	struct eng_rwqe *rq;
	struct eng_lsge *rsge;
	struct eng_srq *srq;
	uint32_t *bind;
	uint32_t rq_mask;
	uint32_t rq_prod, rq_cons;
	uint32_t rq_msn; /* MSN of the message rq_cons receives */

	/* responder's READ/atomic queue */
	struct eng_rdq rdq[OVR_ENG_MAX_RD_ATOMIC];
	uint32_t rd_exec_msn; /* next to execute */
	uint32_t rd_send_msn; /* next whose response is unsent */
	uint32_t rd_free_msn; /* oldest not yet acked */
	uint32_t rd_next_msn; /* one past the highest arrived */

	struct eng_stash stash[OVR_ENG_STASH];

	/* device copies (engine.c, dev_copy): dev_listed: in the open
	 * batch's QP list at dev_idx; dev_fail: a batch of its failed
	 * (ovr_eng_dev_poll / ovr_eng_fence fail it), dev_resp / dev_psn:
	 * that batch's first PSN as responder, if any */
	bool dev_listed, dev_resp, dev_fail;
	uint32_t dev_psn;
	uint32_t dev_idx;

	/* engine bookkeeping */
	struct eng_qp *act_next, *act_prev;
	bool active;
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
};

#define ENG_HOLD 512 /* held of each kind per batch */

/* A QP with copies in a batch: as responder from PSN psn if resp. */
struct eng_dev_qp {
	uint32_t qpn;
	uint32_t psn;
	bool resp;
};

/* QPs one batch lists; the batch is closed early when it has more. */
#define ENG_BATCH_QPS 256

/*
 * A batch of device copies and what waits for it (engine.c, "what
 * waits for device copies"): the QPs with copies in it, and the PDUs
 * and completions produced after the previous batch's closing and
 * before its own (or, merged, until the next batch with copies). About
 * 60 KB each.
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
	uint32_t ndev_fail;
};

#endif /* OVR_DP_ENGINE_IMPL_H */
