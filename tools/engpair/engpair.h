/* SPDX-License-Identifier: MIT */
/*
 * engpair: two transport engines joined by two impaired links (linkemu),
 * driven in simulated time. The test and benchmark rig of the engine:
 * every node owns an arena of memory registered as one region with every
 * right, completion queues that record what the engine reports, and the
 * event loop advances time straight to the next thing that will happen
 * (a packet arrival or an engine timer), so a run is exactly reproducible
 * from its seeds and takes no wall-clock waiting.
 */
#ifndef OVR_ENGPAIR_H
#define OVR_ENGPAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ovrdma/engine.h>
#include <ovrdma/linkemu.h>

#define OVR_PAIR_MAX_CQ 64
#define OVR_PAIR_MAX_EV 32 /* event values counted (enum ovr_event) */

struct ovr_pair_node;

/* Test hook: return true to drop a PDU node @n is about to send. */
typedef bool (*ovr_pair_filter_fn)(struct ovr_pair_node *n, const uint8_t *pdu,
				   uint32_t len, void *ctx);

struct ovr_pair_cq {
	struct ovr_eng_wc *wc;
	size_t head, tail, cap; /* FIFO [head, tail) */
};

struct ovr_pair_node {
	struct ovr_eng *eng;
	struct ovr_link *out; /* towards the other node */
	uint8_t *mem; /* the arena */
	size_t mem_len;
	uint32_t pd;
	uint32_t key; /* region over the whole arena, every right */
	struct ovr_pair_cq cq[OVR_PAIR_MAX_CQ];
	uint8_t *txbuf;
	uint64_t events[OVR_PAIR_MAX_EV]; /* count per enum ovr_event */
	uint64_t srq_events[OVR_PAIR_MAX_EV]; /* the same, of SRQs */
	uint32_t last_srq_event_srqn;
	uint64_t tx_pkts;
	uint64_t tx_filtered; /* dropped by tx_filter */
	uint64_t last_peer, last_user; /* of the last PDU sent */
	ovr_pair_filter_fn tx_filter; /* NULL: none */
	void *tx_filter_ctx;
	struct ovr_pair *pair;
	/* batched pairs: OVR_PAIR_POOL packet buffers of max_pdu bytes,
	 * free ones in pfree[0..npfree); those received this round and
	 * not yet given back in rxused[0..nrxused) */
	uint8_t *pool;
	uint32_t *pfree, npfree;
	uint32_t *rxused, nrxused;
};

#define OVR_PAIR_POOL 4096u

struct ovr_pair_cfg {
	struct ovr_eng_cfg eng;
	struct ovr_link_cfg link[2]; /* [0]: node 0 -> 1, [1]: 1 -> 0 */
	size_t mem_bytes; /* arena per node */
	/* (optional) the engines' ops.dev_copy, its ctx the node (struct
	 * ovr_pair_node *): regions behind it are the test's to register */
	int (*dev_copy)(void *ctx, void *dev, uint64_t off, void *host,
			uint32_t len, bool to_dev, uint32_t msg_len,
			unsigned int flags);
	/* (optional) the engines' batch ops, their ctx the node. With
	 * dev_batch_close every PDU sent and received gets a buffer of its
	 * own (ovr_pair_is_buf), kept until the batches of its round are
	 * done; each round closes a batch and polls (ovr_eng_dev_close /
	 * ovr_eng_dev_poll), as ovrdmad's loop does */
	int (*dev_fence)(void *ctx);
	int (*dev_batch_close)(void *ctx, unsigned int slot);
	int (*dev_batch_poll)(void *ctx, unsigned int slot, bool wait);
	uint32_t (*dev_batch_faults)(void *ctx, struct ovr_eng_copy_fault *f,
				     uint32_t max);
};

/* Is [@p, @p + @len) one of node @n's packet buffers (batched pairs)? */
bool ovr_pair_is_buf(const struct ovr_pair_node *n, const void *p,
		     uint32_t len);

struct ovr_pair {
	struct ovr_pair_node n[2];
	struct ovr_eng_ops ops; /* the engines' */
	uint64_t now;
	uint32_t max_pdu;
	uint64_t steps;
};

/* Connection parameters for ovr_pair_connect (verbs attributes). */
struct ovr_pair_qp_params {
	struct ovr_eng_qp_cap cap;
	uint32_t access; /* QP access flags */
	uint32_t mtu; /* enum ovr_mtu */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	bool sq_sig_all;
	uint32_t srq[2]; /* node i's QP takes receives from SRQ srq[i]; 0: own */
};

void ovr_pair_cfg_default(struct ovr_pair_cfg *cfg);
void ovr_pair_qp_params_default(struct ovr_pair_qp_params *p);

/* NULL on failure (errno set). */
struct ovr_pair *ovr_pair_create(const struct ovr_pair_cfg *cfg);
void ovr_pair_destroy(struct ovr_pair *p);

/*
 * Create one QP on each node and take both through INIT, RTR and RTS
 * with each other as peer. Completion queues: node i's QP sends to cq
 * @cq_base (send) and @cq_base + 1 (recv), cq_base < OVR_PAIR_MAX_CQ - 1.
 * qpn[i] receives node i's QPN. 0 or a negative errno.
 */
int ovr_pair_connect(struct ovr_pair *p, const struct ovr_pair_qp_params *qp,
		     uint32_t cq_base, uint32_t qpn[2]);

/*
 * The same bring-up for two engines wired by other means (the caller
 * routes peer 0 / 1 itself): QPs on @eng[0] and @eng[1] in protection
 * domains @pd, completing to cq_base (send) and cq_base + 1 (recv).
 */
int ovr_eng_connect_two(struct ovr_eng *eng[2], const uint32_t pd[2],
			const struct ovr_pair_qp_params *qp, uint32_t cq_base,
			uint64_t now, uint32_t qpn[2]);

/* UD receives get a GRH of: the 8-byte address vector the datagram came
 * from (host order), the receiving QP's 8-byte user value, then 0xab. */

/* Deliver what has arrived (node i hears from peer 1 - i: the address
 * vector ovr_pair_connect gives), poll both engines, advance time to the
 * next event. false when nothing at all remains to happen. */
bool ovr_pair_step(struct ovr_pair *p);

/* Step until @done(ctx) is true (returns true), nothing remains to
 * happen, or simulated time passes @deadline_ns (returns false). @done is
 * also asked after each round of deliveries and polls, before the clock
 * moves on: on true, p->now is the time the condition came true. */
bool ovr_pair_run(struct ovr_pair *p, bool (*done)(struct ovr_pair *, void *),
		  void *ctx, uint64_t deadline_ns);

/* Let simulated time pass up to @t_ns, everything due before it
 * happening (an application that thinks, or sleeps, for a while). */
void ovr_pair_run_to(struct ovr_pair *p, uint64_t t_ns);

/* Take the oldest completion of @cq on node @n; false when empty. */
bool ovr_pair_poll(struct ovr_pair *p, int n, uint32_t cq,
		   struct ovr_eng_wc *wc);
size_t ovr_pair_cq_len(const struct ovr_pair *p, int n, uint32_t cq);

/* Application address of arena offset @off on node @n (what the
 * application would put in an SGE or remote_addr). */
static inline uint64_t ovr_pair_va(const struct ovr_pair *p, int n, size_t off)
{
	return (uint64_t)(uintptr_t)(p->n[n].mem + off);
}

#endif /* OVR_ENGPAIR_H */
