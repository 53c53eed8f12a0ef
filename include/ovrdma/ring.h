/* SPDX-License-Identifier: MIT */
/*
 * Shared-memory queue ABI between an application (the client library /
 * verbs provider) and ovrdmad (docs/SERVICE.md section 3).
 *
 * Every queue lives in a memfd that ovrdmad creates and passes over the
 * control socket (include/ovrdma/ctl.h); both sides map it MAP_SHARED.
 * There is no lock anywhere: each word has exactly one writer, named
 * below, and ordering is by C11 acquire/release on the index words.
 *
 * Objects and their memfds:
 *   - the service page (one per ovrdmad, passed read-only): whether the
 *     service is asleep, its heartbeat and incarnation;
 *   - the doorbell page (one per context): which QPs have new work;
 *   - one memfd per QP: send ring and receive ring;
 *   - one memfd per SRQ: its receive ring (struct ovr_ring_srq);
 *   - one memfd per CQ: the completion ring.
 *
 * Posting a send (client):
 *   1. check room: prod - done < sq_depth, where done is the client's own
 *      count of completed WQEs (from the CQEs' wqe_idx, RC completes send
 *      WQEs in order, and a signaled CQE retires every earlier unsignaled
 *      WQE);
 *   2. write the WQE into slot prod % sq_depth;
 *   3. store-release prod + 1 into sq.prod;
 *   4. ring: fetch_or the QP's bit into db.bits[] and its word's bit into
 *      db.summary; seq_cst fence; if svc.sleeping has the bit of the
 *      QP's wake_mask (CREATE_QP's reply: the dataplane core serving
 *      the QP), write 1 to that core's wake eventfd (OPEN's fds: one per
 *      core), the only syscall, and only when that core went idle.
 * A UD QP's send WQE names its destination in the ah, remote_qpn and
 * remote_qkey words (an AH handle of the same PD; the service checked
 * the AH's address against the tenant and security group at CREATE_AH);
 * RC WQEs leave them zero. Each word of db.bits holds the doorbell indexes
 * of one dataplane core's QPs and SRQs only (the service hands indexes
 * out so). A core, on waking or each round, clears its own words' bits
 * in db.summary with an atomic AND (other cores' bits stay), exchanges
 * each of its flagged db.bits[] words with 0, and for each flagged QP
 * consumes the WQEs in [cons, prod) (load-acquire of prod), then
 * store-releases cons. Before sleeping a dataplane core sets its bit in
 * svc.sleeping, issues a seq_cst fence and looks at its words of the
 * db.summary of every context it serves once more (Dekker: either it
 * sees the doorbell or the client sees it asleep).
 *
 * Completions (service -> client): the service writes a CQE's body, then
 * store-releases its `gen` word = lap + 1, where lap = index / depth (so
 * a zero-filled ring holds no valid entry). QPs of several dataplane
 * cores may share a CQ: each takes its index with a compare-and-swap and
 * publishes it when written, so entries may become valid out of index
 * order; the client takes them in index order only. The client's entry at index
 * cons is valid when gen == cons / depth + 1 (32-bit wrap); after
 * consuming, the client store-releases cq.cons so the service knows the
 * free space. A CQE that finds the ring full is not written: the CQ is
 * marked overflowed (IBV_EVENT_CQ_ERR, once per episode) and the QP whose
 * completion was lost goes to ERROR with IBV_EVENT_QP_FATAL; what the
 * ring holds stays intact.
 *
 * Notification: req_notify_cq stores cq.arm = (sn + 1) << 1 | solicited.
 * When the service adds a CQE and cq.arm differs from the last arm word
 * it fired for (and the CQE is solicited, an error, or solicited-only
 * was not asked), it writes the CQ's user handle to the CQ's completion
 * channel and remembers the arm word: one event per arm, as verbs says.
 * Both sides fence (seq_cst) between their store and their load: the
 * client between storing arm and polling, the service between publishing
 * a CQE and loading arm; so either the client's poll finds the CQE or
 * the service sees the arm and fires (no lost wakeup).
 *
 * Lifetimes: a ring's memory stays valid until both sides unmapped it;
 * after DESTROY_QP / DESTROY_CQ the service never touches it again.
 * RESIZE_CQ (ctl.h) gives a CQ a new ring holding the entries not yet
 * consumed at the same indexes; once it replied, the service writes
 * only the new one.
 *
 * A QP's modify to RESET: the client removes that QP's entries it has
 * not consumed from the QP's CQs (client.c, cq_clean) - entries in
 * [cons, last valid) are the client's, the service writes only beyond
 * them - moving the others up and cons past the gap.
 */
#ifndef OVRDMA_RING_H
#define OVRDMA_RING_H

#include <stdint.h>

#ifdef __cplusplus
#include <atomic>
#define OVR_ATOMIC(t) std::atomic<t>
#else
#include <stdatomic.h>
#define OVR_ATOMIC(t) _Atomic t
#endif

#define OVR_RING_ABI_VERSION 2u /* 2: SRQ rings, UD send WQEs */
#define OVR_RING_CACHELINE 64u

/* ---- service page (ovrdmad writes, clients map read-only) ------------- */

#define OVR_RING_SVC_MAGIC 0x6f767273u /* "ovrs" */

struct ovr_ring_svc {
	uint32_t magic; /* OVR_RING_SVC_MAGIC, written before publishing */
	uint32_t abi; /* OVR_RING_ABI_VERSION */
	uint64_t incarnation; /* random per ovrdmad start */
	uint8_t pad0[OVR_RING_CACHELINE - 16];
	/* a bit per dataplane core that blocks (bit 0: core 0); while its
	 * core's bit (OPEN's wake_mask) is set a client writes the wake fd */
	OVR_ATOMIC(uint32_t) sleeping;
	uint32_t pad1;
	/*
	 * CLOCK_MONOTONIC ns, refreshed at least every
	 * OVR_RING_HEARTBEAT_NS even when idle; a client that sees it older
	 * than OVR_RING_DEAD_NS confirms on the control socket (one syscall)
	 * and, if the service is gone, fails everything (docs/SERVICE.md).
	 */
	OVR_ATOMIC(uint64_t) heartbeat_ns;
	/* set just before a clean exit */
	OVR_ATOMIC(uint32_t) stopping;
	uint8_t pad2[OVR_RING_CACHELINE - 20];
};
#define OVR_RING_HEARTBEAT_NS 100000000ull /* 100 ms */
#define OVR_RING_DEAD_NS 1000000000ull /* 1 s */

/* ---- doorbell page (client writes bits, service clears them) ---------- */

#define OVR_RING_DB_WORDS 64u
#define OVR_RING_MAX_QP_PER_CTX (OVR_RING_DB_WORDS * 64u) /* 4096 */

struct ovr_ring_db {
	OVR_ATOMIC(uint64_t) summary; /* bit w: bits[w] may be non-zero */
	uint8_t pad[OVR_RING_CACHELINE - 8];
	/* bit (i % 64) of bits[i / 64]: the QP or SRQ with doorbell index
	 * i (QPs and SRQs of a context share the 4096 indexes) */
	OVR_ATOMIC(uint64_t) bits[OVR_RING_DB_WORDS];
};

/* ---- work queue entries ------------------------------------------------ */

struct ovr_ring_sge {
	uint64_t addr; /* application virtual address */
	uint32_t length;
	uint32_t lkey;
};

/*
 * A send WQE: this 64-byte header, then num_sge ovr_ring_sge, or (with
 * OVR_SEND_INLINE) inline_len bytes of payload. Field values are the
 * engine's (= verbs') enums. Written by the client only.
 *
 * OVR_WR_BIND_MW (no SGEs): invalidate_rkey names the window (its
 * current rkey), rkey is the key it gets (only the low 8 bits count),
 * remote_addr and compare_add the address and length bound, swap the
 * region's lkey (low 32 bits) and the window's rights (high 32 bits,
 * OVR_ACCESS_*). OVR_WR_LOCAL_INV (no SGEs): invalidate_rkey.
 */
struct ovr_ring_swqe {
	uint64_t remote_addr;
	uint64_t compare_add;
	uint64_t swap;
	uint32_t opcode; /* enum ovr_wr_opcode */
	uint32_t send_flags; /* enum ovr_send_flags */
	uint32_t num_sge;
	uint32_t inline_len;
	uint32_t imm_data; /* as verbs: network byte order, untouched */
	uint32_t rkey;
	uint32_t invalidate_rkey;
	/* UD QPs only (zero on RC): ibv_send_wr.wr.ud */
	uint32_t ah; /* handle from CREATE_AH, same PD as the QP */
	uint32_t remote_qpn;
	uint32_t remote_qkey; /* bit 31 set: the QP's own qkey */
};

/* Most SGEs a send or receive WQE may carry. */
#define OVR_RING_SQ_MAX_SGE 16u
/* Most inline payload bytes a send WQE may carry. */
#define OVR_RING_MAX_INLINE 512u

/* A receive WQE: this header, then num_sge ovr_ring_sge. */
struct ovr_ring_rwqe {
	uint32_t num_sge;
	/* SRQ rings only: the client's name for this receive, returned as
	 * the CQE's wqe_idx (receives of an SRQ complete in any order, so
	 * the ring index cannot name them); 0 on a QP's receive ring */
	uint32_t tag;
	uint32_t rsvd[2];
};

/*
 * Send and receive rings of one QP, at offset 0 of its memfd; the send
 * slots start at sq_off, the receive slots at rq_off (both given by
 * CREATE_QP's reply, with the strides and depths).
 */
struct ovr_ring_qp {
	OVR_ATOMIC(uint32_t) sq_prod; /* client */
	uint8_t pad0[OVR_RING_CACHELINE - 4];
	OVR_ATOMIC(uint32_t) sq_cons; /* service: WQEs taken */
	uint8_t pad1[OVR_RING_CACHELINE - 4];
	OVR_ATOMIC(uint32_t) rq_prod; /* client */
	uint8_t pad2[OVR_RING_CACHELINE - 4];
	OVR_ATOMIC(uint32_t) rq_cons; /* service */
	uint8_t pad3[OVR_RING_CACHELINE - 4];
	/* service: current QP state (enum ovr_qp_state), for the client's
	 * post checks after the service moved the QP to ERROR */
	OVR_ATOMIC(uint32_t) state;
	/* service: asynchronous events of this QP written to the owner's
	 * async pipe (the client keeps the ibv_qp until they are acked) */
	OVR_ATOMIC(uint32_t) events;
	uint8_t pad4[OVR_RING_CACHELINE - 8];
};

/*
 * A shared receive queue's ring, at offset 0 of its memfd; the slots
 * (struct ovr_ring_rwqe + SGEs, stride bytes each) start at slots_off
 * (CREATE_SRQ's reply). Posting is a QP's receive posting: write the
 * WQE at prod % depth, store-release prod + 1, ring the SRQ's doorbell
 * bit (the same doorbell page and bitmap as QPs, CREATE_SRQ gives the
 * index). The service load-acquires prod, copies each WQE out, then
 * store-releases cons: a slot is the client's again once cons passed
 * it, long before its receive completes.
 *
 * Room: the client allows at most max_wr receives posted and not yet
 * completed (it counts them through its tags); since depth >= max_wr,
 * prod - cons never exceeds depth. Receives complete on the recv CQ of
 * the QP that took them, with that QP's qp_num, flags OVR_CQE_RECV |
 * OVR_CQE_SRQ and wqe_idx = the WQE's tag: the client keeps a table of
 * wr_ids by tag (any free tag will do; tags < max_wr).
 *
 * Lifetime: as a QP's rings; DESTROY_SRQ (refused while a QP uses it)
 * drops receives still posted without completions.
 */
struct ovr_ring_srq {
	OVR_ATOMIC(uint32_t) prod; /* client */
	uint8_t pad0[OVR_RING_CACHELINE - 4];
	OVR_ATOMIC(uint32_t) cons; /* service: WQEs taken */
	OVR_ATOMIC(uint32_t) events; /* service: async events written */
	uint8_t pad1[OVR_RING_CACHELINE - 8];
};

/* ---- completion queue entries ------------------------------------------ */

#define OVR_CQE_RECV 1u /* flags: a receive-queue completion */
#define OVR_CQE_SRQ 2u /* flags: ... of an SRQ receive; wqe_idx = its tag */

struct ovr_ring_cqe {
	uint32_t wqe_idx; /* send or receive ring index of the WQE (mod 2^32) */
	uint32_t qp_num;
	uint32_t status; /* enum ovr_wc_status */
	uint32_t opcode; /* enum ovr_wc_opcode */
	uint32_t byte_len;
	uint32_t imm_data;
	uint32_t src_qp;
	uint32_t wc_flags; /* enum ovr_wc_flags */
	uint32_t vendor_err;
	uint32_t flags; /* OVR_CQE_* */
	/* when the service wrote it (the start of its loop round, at most
	 * a round's work earlier): CLOCK_MONOTONIC in microseconds,
	 * modulo 2^32 (wraps every 71.6 minutes): the completion
	 * timestamp (OVR_CTL_DEV_CQ_TS; docs/PROVIDER.md 4.8) */
	uint32_t ts_us;
	OVR_ATOMIC(uint32_t) gen; /* service, last: lap + 1 */
};

struct ovr_ring_cq {
	OVR_ATOMIC(uint32_t) cons; /* client */
	OVR_ATOMIC(uint32_t) arm; /* client: (sn + 1) << 1 | solicited_only */
	uint8_t pad0[OVR_RING_CACHELINE - 8];
	OVR_ATOMIC(uint32_t) prod; /* service: entries written (statistic) */
	OVR_ATOMIC(uint32_t) overflow; /* service: 1 once overflowed */
	OVR_ATOMIC(uint32_t) events; /* service: async events written */
	uint8_t pad1[OVR_RING_CACHELINE - 12];
	/* entries follow at OVR_RING_CACHELINE * 2 */
};
#define OVR_RING_CQ_ENTRIES_OFF (2u * OVR_RING_CACHELINE)

#ifndef __cplusplus
_Static_assert(sizeof(struct ovr_ring_svc) == 2 * OVR_RING_CACHELINE,
	       "svc page layout");
_Static_assert(sizeof(struct ovr_ring_swqe) == 64, "swqe layout");
_Static_assert(sizeof(struct ovr_ring_rwqe) == 16, "rwqe layout");
_Static_assert(sizeof(struct ovr_ring_sge) == 16, "sge layout");
_Static_assert(sizeof(struct ovr_ring_cqe) == 48, "cqe layout");
_Static_assert(sizeof(struct ovr_ring_srq) == 2 * OVR_RING_CACHELINE,
	       "srq ring header layout");
_Static_assert(sizeof(struct ovr_ring_qp) == 5 * OVR_RING_CACHELINE,
	       "qp ring header layout");
_Static_assert(sizeof(struct ovr_ring_cq) == OVR_RING_CQ_ENTRIES_OFF,
	       "cq header layout");
#endif

#endif /* OVRDMA_RING_H */
