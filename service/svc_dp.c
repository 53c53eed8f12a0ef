// SPDX-License-Identifier: MIT
/*
 * ovrdmad's dataplane: rings <-> transport engine <-> VPC overlay <-> port
 * (docs/SERVICE.md section 5); svc_loop.c runs its rounds and serves the
 * control socket between them. Nothing here calls the control side.
 *
 * Per round: receive a burst (decap, tenant check, engine), take new work
 * from the rings whose doorbells rang, let the engine transmit and run
 * its timers, flush the port. Nothing here allocates or locks; the only
 * syscalls are the loop's (svc_loop.c): the periodic non-blocking look at
 * the control sockets and, when idle, the sleep itself.
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ovrdma/wire.h>

#include "svc.h"

#define RX_BURST 32
#ifndef IOV_MAX
#define IOV_MAX 1024 /* the kernel's UIO_MAXIOV */
#endif
_Static_assert(OVR_ENG_MAX_DEV_BATCHES + 1 <= OVR_GDR_MAX_BATCH,
	       "an engine batch slot is a gdr batch slot");

/* ---- events to applications -------------------------------------------- */

/* Writes an event to the owner's async pipe; false when it could not
 * (counted). The callers count written events in the object's ring: the
 * application acknowledges each one it reads, and the client keeps the
 * object's memory until it has (ovr_cl_destroy_qp). */
static bool svc_async(struct svc_ctx *ctx, uint64_t element, uint32_t type)
{
	struct ovr_ctl_async_event ev = { .element = element,
					  .event_type = type };

	/* (a write of one event to the pipe is atomic: cores may race) */
	if (ctx->async_fd < 0 ||
	    write(ctx->async_fd, &ev, sizeof(ev)) != (ssize_t)sizeof(ev)) {
		atomic_fetch_add_explicit(&ctx->async_dropped, 1,
					  memory_order_relaxed);
		return false;
	}
	return true;
}

/* (a CQ's: from any core whose QPs share it) */
static void ring_event(OVR_ATOMIC(uint32_t) * events)
{
	atomic_fetch_add_explicit(events, 1, memory_order_release);
}

/* ---- completions --------------------------------------------------------- */

/*
 * A completion that finds its CQ full cannot be delivered, and a QP whose
 * completions are lost has work in an unknown state: the application
 * must hear of both, and the QP must stop (docs/PROVIDER.md, "CQ
 * overflow"). The CQE is dropped and counted; the CQ gets
 * OVR_EV_CQ_ERR, once per episode (until a CQE fits again); the QP is
 * queued for lost_fail(), which moves it to ERROR with OVR_EV_QP_FATAL
 * outside the engine call that produced the completion (the engine is
 * not reentrant). Entries already in the ring stay intact.
 */
static void cq_lost(struct svc_core *core, struct svc_cq *cq,
		    const struct ovr_eng_wc *wc)
{
	struct svc *s = core->s;
	struct svc_qp *qp = svc_qp_find(s, wc->qp_num);

	core->cnt.cq_overflows++;
	if (!atomic_load_explicit(&cq->overflowed, memory_order_relaxed) &&
	    !atomic_exchange_explicit(&cq->overflowed, true,
				      memory_order_relaxed)) {
		atomic_store_explicit(&cq->ring->overflow, 1,
				      memory_order_release);
		if (svc_async(cq->ctx, cq->user_handle, OVR_EV_CQ_ERR))
			ring_event(&cq->ring->events);
	}
	if (qp && !qp->cq_lost) {
		qp->cq_lost = true;
		qp->lost_next = core->lost;
		core->lost = qp;
	}
}

/* The QPs cq_lost() queued go to ERROR (those already there stay). */
static bool lost_fail(struct svc_core *core)
{
	struct svc_qp *list = core->lost;

	if (!list)
		return false;
	core->lost = NULL;
	while (list) {
		struct svc_qp *qp = list;
		struct ovr_eng_qp_attr a = { .qp_state = OVR_QPS_ERR };
		struct ovr_eng_qp_attr cur;

		list = qp->lost_next;
		qp->cq_lost = false;
		if (ovr_eng_qp_query(core->eng, qp->qpn, &cur) ||
		    cur.qp_state == OVR_QPS_ERR ||
		    cur.qp_state == OVR_QPS_RESET)
			continue;
		if (ovr_eng_qp_modify(core->eng, qp->qpn, &a, OVR_QP_STATE,
				      svc_now()))
			continue;
		atomic_store_explicit(&qp->ring->state, OVR_QPS_ERR,
				      memory_order_release);
		svc_async(qp->ctx, qp->user_handle, OVR_EV_QP_FATAL);
	}
	return true;
}

/*
 * One event per arm. A solicited-only arm (arm & 1) fires on a receive
 * of a message sent solicited and on any error completion
 * (ibv_req_notify_cq(3)); other completions wait in the ring for the
 * application's next poll. @sol: a CQE written since the last check
 * was one (with several producers, sol_seen as well).
 */
static void cq_notify(struct svc_cq *cq, bool sol)
{
	/* (only a CQ with a channel comes here: cq_write) */
	uint32_t arm, last;

	arm = atomic_load_explicit(&cq->ring->arm, memory_order_acquire);
	last = atomic_load_explicit(&cq->last_arm, memory_order_relaxed);
	if (arm && arm != last &&
	    (!(arm & 1) || sol ||
	     (cq->multi &&
	      atomic_load_explicit(&cq->sol_seen, memory_order_relaxed))) &&
	    atomic_compare_exchange_strong_explicit(&cq->last_arm, &last, arm,
						    memory_order_relaxed,
						    memory_order_relaxed)) {
		struct ovr_ctl_comp_event ev = { .cq_handle = cq->user_handle };

		if (cq->multi)
			atomic_store_explicit(&cq->sol_seen, false,
					      memory_order_relaxed);
		if (write(cq->chan_fd, &ev, sizeof(ev)) != (ssize_t)sizeof(ev))
			atomic_fetch_add_explicit(&cq->ctx->async_dropped, 1,
						  memory_order_relaxed);
	}
}

/*
 * The events of the CQs this round wrote: after their CQEs, once per CQ.
 * Dekker with ovr_cl_req_notify_cq(), which stores the arm word then
 * polls: either it sees the CQEs or we see its arm. Within a round a
 * solicited-only arm may so fire for a solicited CQE written before it
 * (the application's poll after the arm finds that CQE then); verbs
 * allow such an event.
 */
static void cq_notify_round(struct svc_core *core)
{
	uint32_t n = core->nnotify;

	if (!n)
		return;
	core->nnotify = 0;
	atomic_thread_fence(memory_order_seq_cst);
	for (uint32_t i = 0; i < n; i++)
		cq_notify(core->notify[i].cq, core->notify[i].sol);
}

/*
 * QPs of several dataplane cores may share a CQ (cq->multi, set when a
 * second core's QP takes it): each completion then takes its slot with
 * a compare-and-swap of cq->prod (checked against the ring's cons; one
 * producer stores it plainly), writes it and publishes it by its gen word, in any
 * order - the client takes slots in index order, each once its gen is
 * right (ring.h). Events: one per arm, the arm word taken with a
 * compare-and-swap of last_arm. A solicited-only arm needs care with
 * several producers: a solicited CQE published above a slot still
 * being written was published before the arm and is not reached by
 * the client's poll after its arm (the slot below is not yet valid),
 * so it sets sol_seen, and the producer of any later CQE that sees the
 * arm fires for it (docs/SERVICE.md section 10).
 */
static void cq_write(struct svc_core *core, struct svc_cq *cq,
		     const struct ovr_eng_wc *wc)
{
	uint32_t prod = atomic_load_explicit(&cq->prod, memory_order_relaxed);
	uint32_t cons, rp;
	struct ovr_ring_cqe *e;
	bool sol = (wc->wc_flags & OVR_WC_SOLICITED) ||
		   wc->status != OVR_WC_SUCCESS;

	/* one producer (every QP of the CQ on one core): plain stores */
	for (;;) {
		/* the client's cons only grows: room below the last value
		 * read is room (what it freed there it had read) */
		cons = atomic_load_explicit(&cq->cons_seen,
					    memory_order_relaxed);
		if (prod - cons >= cq->depth) {
			cons = atomic_load_explicit(&cq->ring->cons,
						    memory_order_acquire);
			atomic_store_explicit(&cq->cons_seen, cons,
					      memory_order_release);
			if (prod - cons >= cq->depth) {
				cq_lost(core, cq, wc);
				return;
			}
		} else {
			/* what the client read before the cons that core
			 * (this or another) took, with its release */
			atomic_thread_fence(memory_order_acquire);
		}
		if (!cq->multi) {
			atomic_store_explicit(&cq->prod, prod + 1,
					      memory_order_relaxed);
			break;
		}
		if (atomic_compare_exchange_weak_explicit(
			    &cq->prod, &prod, prod + 1, memory_order_relaxed,
			    memory_order_relaxed))
			break;
	}
	if (atomic_load_explicit(&cq->overflowed, memory_order_relaxed))
		atomic_store_explicit(&cq->overflowed, false,
				      memory_order_relaxed);
	e = &cq->cqe[prod & (cq->depth - 1)];
	e->wqe_idx = (uint32_t)wc->wr_id;
	e->qp_num = wc->qp_num;
	e->status = wc->status;
	e->opcode = wc->opcode;
	e->byte_len = wc->byte_len;
	e->imm_data = wc->imm_data;
	e->src_qp = wc->src_qp;
	e->wc_flags = wc->wc_flags & ~(uint32_t)OVR_WC_SOLICITED;
	e->vendor_err = wc->vendor_err;
	e->flags = ((wc->wr_id >> 63) ? OVR_CQE_RECV : 0) |
		   ((wc->wr_id >> 62) & 1 ? OVR_CQE_SRQ : 0);
	/* within a round, the clock is read at the first completion after
	 * the round's last input (frames received, WRs taken from a ring:
	 * each clears round_now), not at every completion; never earlier
	 * than what completes, which a read at the round's start could be */
	if (!core->in_round)
		e->ts_us = (uint32_t)(svc_now() / 1000u);
	else {
		if (!core->round_now)
			core->round_now = svc_now();
		e->ts_us = (uint32_t)(core->round_now / 1000u);
	}
	atomic_store_explicit(&e->gen, prod / cq->depth + 1,
			      memory_order_release);
	/* the ring's prod word: the highest slot taken (never back) */
	if (!cq->multi) {
		atomic_store_explicit(&cq->ring->prod, prod + 1,
				      memory_order_relaxed);
	} else {
		rp = atomic_load_explicit(&cq->ring->prod,
					  memory_order_relaxed);
		while ((int32_t)(prod + 1 - rp) > 0 &&
		       !atomic_compare_exchange_weak_explicit(
			       &cq->ring->prod, &rp, prod + 1,
			       memory_order_relaxed, memory_order_relaxed))
			;
		if (sol)
			atomic_store_explicit(&cq->sol_seen, true,
					      memory_order_relaxed);
	}
	if (cq->chan_fd < 0)
		return; /* no channel: never an event */
	/* in a round: checked at its end, once per CQ (cq_notify_round) */
	if (core->in_round && core->nnotify &&
	    core->notify[core->nnotify - 1].cq == cq) {
		core->notify[core->nnotify - 1].sol |= sol;
		return;
	}
	if (core->in_round && core->nnotify < SVC_NOTIFY_MAX) {
		core->notify[core->nnotify].cq = cq;
		core->notify[core->nnotify++].sol = sol;
		return;
	}
	atomic_thread_fence(memory_order_seq_cst);
	cq_notify(cq, sol);
}

static void eng_cqe(void *ctx, uint32_t cqn, const struct ovr_eng_wc *wc)
{
	struct svc_core *core = ctx;
	struct svc *s = core->s;

	if (cqn < s->ncq_slots && s->cqs[cqn])
		cq_write(core, s->cqs[cqn], wc);
}

static void eng_event(void *ctx, uint64_t qp_user, uint32_t qpn,
		      enum ovr_event ev)
{
	struct svc_qp *qp = (struct svc_qp *)(uintptr_t)qp_user;

	(void)ctx;
	(void)qpn;
	if (!qp)
		return;
	if (ev == OVR_EV_QP_FATAL || ev == OVR_EV_QP_REQ_ERR ||
	    ev == OVR_EV_QP_ACCESS_ERR)
		atomic_store_explicit(&qp->ring->state, OVR_QPS_ERR,
				      memory_order_release);
	if (svc_async(qp->ctx, qp->user_handle, ev))
		ring_event(&qp->ring->events);
}

static void eng_srq_event(void *ctx, uint64_t srq_user, uint32_t srqn,
			  enum ovr_event ev)
{
	struct svc_srq *srq = (struct svc_srq *)(uintptr_t)srq_user;

	(void)ctx;
	(void)srqn;
	if (srq && svc_async(srq->ctx, srq->user_handle, ev))
		ring_event(&srq->ring->events);
}

/*
 * The GRH of a datagram, as RoCE v2 providers deliver it for IPv4 GIDs
 * (rxe, mlx5: union rdma_network_hdr): 20 bytes of zero, then the IPv4
 * header the packet would have carried - version 4, IHL 5, TOS the
 * traffic class (0), total length of IPv4 + UDP + the PDU, DF, TTL 64,
 * protocol UDP, a valid checksum, source the sender's vIP, destination
 * the QP's device vIP. Applications that only skip 40 bytes
 * (ibv_ud_pingpong) and those that read the addresses at 32..39 (UCX)
 * both work.
 */
static void eng_ud_grh(void *ctx, uint64_t qp_user, uint64_t from,
		       uint8_t grh[OVR_GRH_LEN])
{
	struct svc_core *core = ctx;
	struct svc_qp *qp = (struct svc_qp *)(uintptr_t)qp_user;
	uint8_t *ip = grh + 20;
	uint32_t src = (uint32_t)from, sum = 0;
	uint32_t dst = core->rx_grh_group ? core->rx_grh_group :
		       qp		  ? qp->vip :
					    0;
	uint32_t tot = 20 + 8 + core->rx_pdu_len;

	memset(grh, 0, OVR_GRH_LEN);
	if (!(from & SVC_FROM_UD))
		src = 0;
	ip[0] = 0x45;
	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[6] = 0x40; /* DF */
	ip[8] = 64;
	ip[9] = 17; /* UDP */
	for (int i = 0; i < 4; i++) {
		ip[12 + i] = (uint8_t)(src >> (24 - 8 * i));
		ip[16 + i] = (uint8_t)(dst >> (24 - 8 * i));
	}
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	ip[10] = (uint8_t)(sum >> 8);
	ip[11] = (uint8_t)sum;
}

/* ---- transmit ------------------------------------------------------------ */

static void *eng_tx_alloc(void *ctx, uint32_t cap, void **token)
{
	struct svc_core *core = ctx;
	struct svc *s = core->s;
	uint8_t *p = s->port_ops->tx_alloc(s->port, cap, token);

	if (!p)
		core->cnt.tx_nobuf++;
	return p;
}

/* ---- loopback ------------------------------------------------------------ */

static void loop_queue(struct svc_core *core, void *token, const uint8_t *frame,
		       uint32_t len, bool handed)
{
	struct svc *s = core->s;
	struct svc_loop_frame *f;

	if (core->loop_tail - core->loop_free >= SVC_LOOP_DEPTH) {
		/* as a full port queue: the transport retransmits */
		core->cnt.tx_loopback_full++;
		s->port_ops->tx_free(s->port, token);
		return;
	}
	f = &core->loop[core->loop_tail++ % SVC_LOOP_DEPTH];
	*f = (struct svc_loop_frame){
		.token = token, .frame = frame, .len = len, .handed = handed
	};
	if (!handed)
		core->cnt.tx_loopback++;
}

/* ---- frames between cores ------------------------------------------------- */

static bool xring_put(struct svc_xring *r, const struct svc_loop_frame *f)
{
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);

	if (t - atomic_load_explicit(&r->head, memory_order_acquire) >=
	    SVC_XRING_DEPTH)
		return false;
	r->e[t % SVC_XRING_DEPTH] = *f;
	atomic_store_explicit(&r->tail, t + 1, memory_order_release);
	return true;
}

static bool xring_empty(struct svc_xring *r)
{
	return atomic_load_explicit(&r->head, memory_order_relaxed) ==
	       atomic_load_explicit(&r->tail, memory_order_acquire);
}

/* Takes what @r holds, calling @fn for each in order. True if any. */
static bool xring_drain(struct svc_core *core, struct svc_xring *r,
			void (*fn)(struct svc_core *, struct svc_loop_frame *))
{
	uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_acquire);

	if (h == t)
		return false;
	for (; h != t; h++)
		fn(core, &r->e[h % SVC_XRING_DEPTH]);
	atomic_store_explicit(&r->head, h, memory_order_release);
	return true;
}

/* A frame another core handed us: received next, as a loopback frame
 * (its buffer is a transmit buffer, freed as theirs are). */
static void take_handed(struct svc_core *core, struct svc_loop_frame *f)
{
	loop_queue(core, f->token, f->frame, f->len, true);
}

/* A frame that will not go anywhere (the service stops). */
static void drop_frame(struct svc_core *core, struct svc_loop_frame *f)
{
	core->s->port_ops->tx_free(core->s->port, f->token);
}

/* A frame another core sends: out of the port (core 0). */
static void take_to_port(struct svc_core *core, struct svc_loop_frame *f)
{
	struct svc *s = core->s;

	s->port_ops->tx(s->port, 0, f->token, (uint8_t *)(uintptr_t)f->frame,
			f->len);
}

/*
 * Hands core @to, through @ring (to->in[core->idx]: to receive; or
 * core->to_port: to send), the frame [frame, frame + len) held by
 * transmit buffer @token, or by nobody (@token NULL: a received frame,
 * copied into a transmit buffer of its own). False when it could not (no
 * buffer, or the ring full: the frame is lost, recovered as any loss
 * is); the caller keeps @token then. @to is woken at the round's end.
 */
static bool handover(struct svc_core *core, struct svc_core *to,
		     struct svc_xring *ring, void *token, const uint8_t *frame,
		     uint32_t len)
{
	struct svc *s = core->s;
	struct svc_loop_frame f = {
		.token = token, .frame = frame, .len = len, .handed = true
	};

	if (!token) {
		uint8_t *p = s->port_ops->tx_alloc(s->port, len, &f.token);

		if (!p) {
			core->cnt.tx_nobuf++;
			return false;
		}
		memcpy(p, frame, len);
		f.frame = p;
	}
	if (!xring_put(ring, &f)) {
		core->cnt.xcore_full++;
		if (!token)
			s->port_ops->tx_free(s->port, f.token);
		return false;
	}
	core->cnt.xcore_frames++;
	/* named in @to's word after the frame is in the ring: a read-
	 * modify-write each time (a load that saw the bit still set could
	 * pass our store to the ring's tail, and @to, clearing the bit,
	 * then miss the frame) */
	atomic_fetch_or_explicit(&to->handed, 1u << core->idx,
				 memory_order_release);
	core->kick |= 1u << to->idx;
	return true;
}

/* A received frame for core @to's QP (or its CM, its multicast members):
 * handed over, with its transmit buffer where *@token names one (then
 * *@token is NULL: @to frees it), else copied. */
static void hand_rx(struct svc_core *core, struct svc_core *to, void **token,
		    const uint8_t *frame, uint32_t len)
{
	if (handover(core, to, to->in[core->idx], token ? *token : NULL, frame,
		     len) &&
	    token)
		*token = NULL;
}

/* The cores frames were handed to this round, woken if asleep (the
 * other half of svc_sleep's check: the rings' tails, then `sleeping`). */
static void kick_cores(struct svc_core *core)
{
	struct svc *s = core->s;
	uint32_t asleep, k = core->kick;
	uint64_t one = 1;

	core->kick = 0;
	atomic_thread_fence(memory_order_seq_cst);
	asleep = atomic_load_explicit(&s->page->sleeping, memory_order_relaxed);
	for (k &= asleep; k; k &= k - 1) {
		struct svc_core *to = &s->core[__builtin_ctz(k)];

		if (write(to->wake_fd, &one, sizeof(one)) < 0) {
			/* a full counter: it wakes anyway */
		}
	}
}

static void rx_frame(struct svc_core *core, const uint8_t *frame, uint32_t len,
		     uint64_t now, void **token, bool handed);

/* Receives the frames queued so far (those that their reception queues
 * wait for the next round). Their buffers stay until loop_release(): a
 * copy to GPU memory may still read them. */
static bool loop_receive(struct svc_core *core, uint64_t now)
{
	uint32_t end = core->loop_tail;

	if (core->loop_head == end)
		return false;
	while (core->loop_head != end) {
		struct svc_loop_frame *f =
			&core->loop[core->loop_head++ % SVC_LOOP_DEPTH];

		rx_frame(core, f->frame, f->len, now, &f->token, f->handed);
	}
	return true;
}

/* The received loopback frames' buffers up to @upto. */
static void loop_release(struct svc_core *core, uint32_t upto)
{
	struct svc *s = core->s;
	while (core->loop_free != upto) {
		void *t = core->loop[core->loop_free++ % SVC_LOOP_DEPTH].token;

		if (t) /* else handed to another core */
			s->port_ops->tx_free(s->port, t);
	}
}

/* ---- buffers that wait for GPU copies ------------------------------------ */

/*
 * A copy into GPU memory reads the received frame itself (a pinned mbuf)
 * when its batch runs, so a frame's buffer goes back only once the
 * engine has released the batches of its round (ovr_eng_dev_poll's
 * answer reaches the seq it was parked with). Frames of a round that
 * queued no copy go back at once; loopback frames go back in order,
 * behind any parked before them. Without GPU traffic none of this runs.
 */

/* Every parked buffer whose batch is done (@done: the engine's newest
 * released batch). */
static void unpark(struct svc_core *core, uint64_t done)
{
	struct svc *s = core->s;
	void *bufs[32];
	unsigned int n = 0;

	while (core->park_head != core->park_tail &&
	       core->park[core->park_head % SVC_PARK_DEPTH].seq <= done) {
		bufs[n++] = core->park[core->park_head++ % SVC_PARK_DEPTH].buf;
		if (n == 32) {
			s->port_ops->rx_done(s->port, bufs, n);
			n = 0;
		}
	}
	if (n)
		s->port_ops->rx_done(s->port, bufs, n);
	while (core->lmark_head != core->lmark_tail &&
	       core->lmark[core->lmark_head % SVC_PARK_DEPTH].seq <= done)
		loop_release(
			core,
			core->lmark[core->lmark_head++ % SVC_PARK_DEPTH].upto);
}

/* Wait for every batch, then give every parked buffer back. */
static void unpark_all(struct svc_core *core)
{
	ovr_eng_fence(core->eng);
	core->dev_done = ovr_eng_dev_poll(core->eng);
	unpark(core, UINT64_MAX);
}

/*
 * This round's received frames (@n rx buffers, the loopback frames up to
 * loop_head): back to the port now, or parked until batch @closed is
 * done when the round queued copies (@closed changed) and it is not.
 */
static void rx_keep(struct svc_core *core, void **bufs, unsigned int n,
		    uint64_t closed, uint64_t done)
{
	struct svc *s = core->s;
	bool wait = closed > done && closed != core->dev_closed;

	if (n && wait &&
	    core->park_tail - core->park_head > SVC_PARK_DEPTH - n) {
		unpark_all(core);
		wait = false;
	}
	if (n && wait) {
		for (unsigned int i = 0; i < n; i++)
			core->park[core->park_tail++ % SVC_PARK_DEPTH] =
				(struct svc_park){ .seq = closed,
						   .buf = bufs[i] };
		core->cnt.dev_parked += n;
	} else if (n) {
		s->port_ops->rx_done(s->port, bufs, n);
	}
	if (core->loop_free == core->loop_head)
		return;
	/* behind frames parked before them, or their own round's batch */
	if (closed > done && (wait || core->lmark_head != core->lmark_tail)) {
		if (core->lmark_tail - core->lmark_head == SVC_PARK_DEPTH) {
			unpark_all(core);
			loop_release(core, core->loop_head);
			return;
		}
		core->lmark[core->lmark_tail++ % SVC_PARK_DEPTH] =
			(struct svc_loop_mark){ .seq = closed,
						.upto = core->loop_head };
		return;
	}
	loop_release(core, core->loop_head);
}

/*
 * The port queue @core sends the PDU at @pdu (in the encapsulated frame
 * at @frame) on: its own; with port_steer, its own towards the peer's
 * core that the destination QPN names, read with this node's QPN layout
 * (the peer's where both run one configuration; where not, the peer
 * hands the frame on, as without steering). With several cores, that
 * core also goes into the outer UDP source port, for a peer whose port
 * steers on it (ovr_vpc_set_steer).
 */
static inline unsigned int tx_queue(const struct svc_core *core, uint8_t *frame,
				    const uint8_t *pdu)
{
	const struct svc *s = core->s;
	const struct ovr_wire_prefix *p = (const struct ovr_wire_prefix *)pdu;
	uint32_t t;

	if (!s->tag_bits)
		return core->idx;
	t = ovr_eng_qpn_tag(__builtin_bswap32(p->dqpn) & 0xffffffu,
			    s->slot_bits, s->tag_bits);
	if (t >= s->ncores)
		t = 0;
	ovr_vpc_set_steer(frame, t);
	return s->port_steer ? core->idx * s->ncores + t : core->idx;
}

/*
 * The encapsulated frame of the @len-byte PDU at @pdu (in @token's
 * buffer) goes out, counted: to a vIP of this node (its binding names our
 * own port's MAC: two applications on one host, as with a NIC's internal
 * loopback) through the loopback, else to the port.
 */
static inline void frame_out(struct svc_core *core, void *token, uint8_t *pdu,
			     uint32_t len)
{
	struct svc *s = core->s;
	uint8_t *frame = pdu - OVR_WIRE_ENCAP_LEN;
	unsigned int q;

	core->cnt.tx_frames++;
	core->cnt.tx_bytes += len + OVR_WIRE_ENCAP_LEN;
	if (!memcmp(frame, s->mac, 6)) {
		loop_queue(core, token, frame, len + OVR_WIRE_ENCAP_LEN, false);
		return;
	}
	q = tx_queue(core, frame, pdu);
	if (core->idx < s->port_nq) /* a port queue of its own */
		s->port_ops->tx(s->port, q, token, frame,
				len + OVR_WIRE_ENCAP_LEN);
	else if (!handover(core, &s->core[0], core->to_port, token, frame,
			   len + OVR_WIRE_ENCAP_LEN))
		s->port_ops->tx_free(s->port, token);
}

/*
 * A datagram of UD QP @qp to multicast group @group (the PDU of @len
 * bytes in @token's buffer): one copy to each node that serves a vIP of
 * the tenant - this one only when a QP here is attached - each
 * encapsulated to that node, the group as inner destination; the nodes
 * deliver it to their members (rx_mcast). The last copy is @token's.
 */
static void tx_mcast(struct svc_core *core, struct svc_qp *qp, void *token,
		     uint32_t len, uint32_t group, uint8_t dscp)
{
	struct svc *s = core->s;
	struct ovr_vpc_host *h = core->mcast_hosts;
	uint8_t *pdu = s->port_ops->buf_data(s->port, token);
	uint8_t path = ((const struct ovr_wire_oth *)pdu)->path;
	bool here = svc_mcast_find(s, qp->vni, group) != NULL;
	struct ovr_vpc_flow flow;
	unsigned int n, last = UINT32_MAX;

	core->cnt.tx_mcast++;
	n = ovr_vpc_tenant_hosts(core->vt, qp->vni, h, SVC_MCAST_HOSTS);
	if (n > SVC_MCAST_HOSTS) {
		core->cnt.tx_mcast_truncated++;
		n = SVC_MCAST_HOSTS;
	}
	for (unsigned int i = 0; i < n; i++)
		if (here || h[i].host != s->conf.host)
			last = i;
	ovr_vpc_flow_init(&flow, qp->vni, qp->vip, group, qp->qpn,
			  OVR_UD_MCAST_QPN, dscp);
	for (unsigned int i = 0; i <= last && last != UINT32_MAX; i++) {
		bool local = h[i].host == s->conf.host;
		void *tok = token;
		uint8_t *p = pdu;

		if (local && !here)
			continue;
		if (i != last) {
			p = s->port_ops->tx_alloc(s->port, len, &tok);
			if (!p) {
				core->cnt.tx_nobuf++;
				continue; /* a datagram lost, as UD may */
			}
			memcpy(p, pdu, len);
		}
		if (ovr_vpc_tx_via(core->vt, &flow, path, p, OVR_WIRE_ENCAP_LEN,
				   len, &h[i])) {
			core->cnt.tx_no_route++;
			s->port_ops->tx_free(s->port, tok);
			continue;
		}
		core->cnt.tx_mcast_copies++;
		frame_out(core, tok, p, len);
	}
	if (last == UINT32_MAX)
		s->port_ops->tx_free(s->port, token); /* nobody to hear it */
}

static void eng_tx(void *ctx, void *token, uint32_t len, uint64_t peer,
		   uint64_t qp_user)
{
	struct svc_core *core = ctx;
	struct svc *s = core->s;
	struct svc_qp *qp = (struct svc_qp *)(uintptr_t)qp_user;
	uint8_t *pdu = s->port_ops->buf_data(s->port, token);
	uint8_t path;
	int rc;

	struct ovr_vpc_flow answer;
	const struct ovr_vpc_flow *flow;

	if (len < sizeof(struct ovr_wire_oth)) {
		s->port_ops->tx_free(s->port, token);
		return;
	}
	if (qp && qp->type == OVR_QPT_UD) {
		const struct ovr_wire_prefix *p = (const void *)pdu;

		/* a datagram: the WQE's AH gave the destination vIP */
		if (!(peer & SVC_PEER_UD)) {
			s->port_ops->tx_free(s->port, token);
			return;
		}
		if (ovr_vpc_is_mcast((uint32_t)peer)) {
			core->cnt.tx_ud++;
			tx_mcast(core, qp, token, len, (uint32_t)peer,
				 (uint8_t)(peer >> 32));
			return;
		}
		ovr_vpc_flow_init(&answer, qp->vni, qp->vip, (uint32_t)peer,
				  qp->qpn,
				  __builtin_bswap32(p->dqpn) & 0xffffffu,
				  (uint8_t)(peer >> 32));
		flow = &answer;
		core->cnt.tx_ud++;
	} else if (qp && qp->connected) {
		flow = &qp->flow;
	} else if (!qp && peer == SVC_FROM_RX && core->rx_src.valid) {
		/* an answer to the PDU being received, back to its sender
		 * in its tenant (the overlay accepted that PDU's binding) */
		ovr_vpc_flow_init(&answer, core->rx_src.vni,
				  core->rx_src.dst_vip, core->rx_src.src_vip,
				  core->rx_src.dqpn, core->rx_src.sqpn, 0);
		flow = &answer;
		core->cnt.tx_answers++;
	} else {
		s->port_ops->tx_free(s->port, token);
		return;
	}
	path = ((const struct ovr_wire_oth *)pdu)->path;
	rc = ovr_vpc_tx(core->vt, flow, path, pdu, OVR_WIRE_ENCAP_LEN, len);
	if (rc) {
		core->cnt.tx_no_route++;
		s->port_ops->tx_free(s->port, token);
		return;
	}
	frame_out(core, token, pdu, len);
}

/*
 * A datagram the service itself sends (the connection manager's
 * messages, svc_cm.c): a UD_SEND from @sqpn to @dqpn with Q_Key @qkey,
 * in tenant @vni from @src_vip to @dst_vip, through the same overlay
 * (tables, security groups) and loopback as the QPs' packets. 0, or
 * -ENOBUFS / -EHOSTUNREACH (counted as the engine's would be).
 */
int svc_dp_send_dgram(struct svc *s, uint32_t vni, uint32_t src_vip,
		      uint32_t dst_vip, uint32_t sqpn, uint32_t dqpn,
		      uint32_t qkey, const void *payload, uint32_t len)
{
	/* the CM's datagrams: core 0's */
	struct svc_core *core = &s->core[0];
	struct ovr_vpc_flow flow;
	void *token = NULL;
	uint8_t *pdu;
	int n, rc;

	pdu = s->port_ops->tx_alloc(s->port, 64 + len, &token);
	if (!pdu) {
		core->cnt.tx_nobuf++;
		return -ENOBUFS;
	}
	n = ovr_eng_dgram_build(pdu, 64 + len, sqpn, dqpn, qkey,
				(uint32_t)svc_now(), payload, len);
	if (n < 0) {
		s->port_ops->tx_free(s->port, token);
		return -EINVAL;
	}
	ovr_vpc_flow_init(&flow, vni, src_vip, dst_vip, sqpn, dqpn, 0);
	rc = ovr_vpc_tx(core->vt, &flow, 0, pdu, OVR_WIRE_ENCAP_LEN, (size_t)n);
	if (rc) {
		core->cnt.tx_no_route++;
		s->port_ops->tx_free(s->port, token);
		return -EHOSTUNREACH;
	}
	frame_out(core, token, pdu, (uint32_t)n);
	return 0;
}

/* ---- receive ------------------------------------------------------------- */

/* A datagram for the connection manager's QPN: parsed, Q_Key checked,
 * handed to svc_cm.c with the tenant and addresses it came with. */
static void rx_cm(struct svc_core *core, const struct ovr_vpc_rx *rx)
{
	struct svc *s = core->s;
	const uint8_t *payload;
	uint32_t qkey, len;

	if (ovr_eng_dgram_parse(rx->pdu, rx->pdu_len, &qkey, &payload, &len) ||
	    qkey != SVC_CM_QKEY) {
		core->cnt.cm_rx_bad++;
		return;
	}
	svc_cm_rx(s, rx->vni, rx->src_vip, rx->dst_vip, payload, len);
}

static bool rq_drain(struct svc_core *core, struct svc_qp *qp, uint64_t now);
static void srq_drain(struct svc_core *core, struct svc_srq *srq, uint64_t now);
static void stall(struct svc_core *core, struct svc_qp *qp);

/*
 * Receives the application posted before a PDU for @qp arrived may still
 * sit in the ring, their doorbell not taken yet (the loop was busy with
 * other contexts, or the PDU comes back through the loopback within the
 * round that took the sender's doorbell). A NIC finds them in memory when
 * the packet arrives; so does this, or a datagram would be dropped and
 * a SEND answered with an RNR NAK for a receive that was posted. Costs
 * one load of the producer index when nothing is new.
 */
static void rx_take_receives(struct svc_core *core, struct svc_qp *qp,
			     uint64_t now)
{
	if (qp->srq) {
		if (atomic_load_explicit(&qp->srq->ring->prod,
					 memory_order_relaxed) != qp->srq->cons)
			srq_drain(core, qp->srq, now);
		return;
	}
	if (atomic_load_explicit(&qp->ring->rq_prod, memory_order_relaxed) !=
		    qp->rq_cons &&
	    !rq_drain(core, qp, now))
		stall(core, qp);
}

/*
 * A datagram sent to multicast group rx->dst_vip of tenant rx->vni: a
 * copy for each QP of this node attached to the group (but the sender
 * itself when it asked not to hear its own: OVR_CTL_MCAST_NO_LOOPBACK),
 * its GRH naming the group as destination, as a NIC's.
 */
static void rx_mcast(struct svc_core *core, const struct ovr_vpc_rx *rx,
		     uint32_t sqpn, uint64_t now, const uint8_t *frame,
		     uint32_t len, bool handed)
{
	struct svc *s = core->s;
	struct svc_mcast_grp *g = svc_mcast_find(s, rx->vni, rx->dst_vip);
	uint32_t others = 0;

	if (!handed)
		core->cnt.rx_mcast++;
	if (!g) {
		core->cnt.rx_mcast_nomember++;
		return;
	}
	core->rx_pdu_len = rx->pdu_len;
	core->rx_grh_group = rx->dst_vip;
	for (uint32_t k = 0; k < g->n; k++) {
		struct svc_qp *qp = g->m[k].qp;

		if (g->m[k].no_loopback && qp->qpn == sqpn &&
		    qp->vip == rx->src_vip)
			continue;
		if (qp->core != core) {
			/* another core's member: a copy goes there, once */
			others |= 1u << qp->core->idx;
			continue;
		}
		rx_take_receives(core, qp, now);
		if (!ovr_eng_rx_ud_to(core->eng, now, rx->pdu, rx->pdu_len,
				      SVC_FROM_UD | rx->src_vip, qp->qpn))
			core->cnt.rx_mcast_delivered++;
	}
	core->rx_grh_group = 0;
	for (others = handed ? 0 : others; others; others &= others - 1) {
		struct svc_core *to = &s->core[__builtin_ctz(others)];

		hand_rx(core, to, NULL, frame, len);
	}
}

/*
 * A frame received from the port (@token NULL), the loopback or another
 * core (@token: where its transmit buffer is named, set to NULL when the
 * frame is handed on; @handed: from another core).
 */
static void rx_frame(struct svc_core *core, const uint8_t *frame, uint32_t len,
		     uint64_t now, void **token, bool handed)
{
	struct svc *s = core->s;
	struct ovr_vpc_rx rx;
	const struct ovr_wire_prefix *p;
	struct svc_qp *qp;

	if (!handed) {
		core->cnt.rx_frames++;
		core->cnt.rx_bytes += len;
	}
	if (ovr_vpc_decap(core->vt, frame, len, &rx)) {
		core->cnt.rx_dropped_vpc++;
		return;
	}
	if (rx.pdu_len < sizeof(struct ovr_wire_oth)) {
		core->cnt.rx_short_pdu++;
		return;
	}
	p = (const struct ovr_wire_prefix *)rx.pdu;
	if ((__builtin_bswap32(p->dqpn) & 0xffffffu) == SVC_CM_QPN) {
		/* the CM lives on core 0 */
		if (core->idx == 0)
			rx_cm(core, &rx);
		else if (!handed)
			hand_rx(core, &s->core[0], token, frame, len);
		return;
	}
	if (__builtin_expect(ovr_vpc_is_mcast(rx.dst_vip), 0)) {
		/* only datagrams to QPN 0xffffff go to a group */
		if ((__builtin_bswap32(p->dqpn) & 0xffffffu) ==
		    OVR_UD_MCAST_QPN)
			rx_mcast(core, &rx,
				 __builtin_bswap32(p->sqpn) & 0xffffffu, now,
				 frame, len, handed);
		else
			core->cnt.rx_foreign++;
		return;
	}
	qp = svc_qp_find(s, __builtin_bswap32(p->dqpn) & 0xffffffu);
	if (!qp) {
		/* the engine answers version probes, and PDUs of QPs that
		 * are gone with a TERMINATE (rate limited); it counts the
		 * rest */
		core->cnt.rx_no_qp++;
		core->rx_src = (struct svc_rx_src){
			.valid = true,
			.vni = rx.vni,
			.src_vip = rx.src_vip,
			.dst_vip = rx.dst_vip,
			.sqpn = __builtin_bswap32(p->sqpn) & 0xffffffu,
			.dqpn = __builtin_bswap32(p->dqpn) & 0xffffffu,
		};
		ovr_eng_rx_from(core->eng, now, rx.pdu, rx.pdu_len, rx.ce,
				SVC_FROM_RX);
		core->rx_src.valid = false;
		return;
	}
	if (qp->core != core) {
		/* another core's QP: handed over (a received frame copied,
		 * a looped-back one with its buffer); the owner decaps it
		 * again. A frame handed to us for a QP that is not ours
		 * (gone since, its QPN never reused by another core: the
		 * tags differ) is dropped. */
		if (handed)
			core->cnt.rx_no_qp++;
		else
			hand_rx(core, qp->core, token, frame, len);
		return;
	}
	if (qp->type == OVR_QPT_UD) {
		/* a UD QP hears anyone of its tenant that sends to its
		 * device's vIP (the overlay checked the sender's binding
		 * and the security group) */
		if (qp->vni != rx.vni || qp->vip != rx.dst_vip) {
			core->cnt.rx_foreign++;
			core->cnt.rx_ud_foreign++;
			return;
		}
		core->cnt.rx_ud++;
		core->rx_pdu_len = rx.pdu_len;
		rx_take_receives(core, qp, now);
		ovr_eng_rx_from(core->eng, now, rx.pdu, rx.pdu_len, rx.ce,
				SVC_FROM_UD | rx.src_vip);
		return;
	}
	/* a QP only hears its own peer, in its own tenant */
	if (!qp->connected || qp->flow.vni != rx.vni ||
	    qp->flow.src_vip != rx.dst_vip || qp->flow.dst_vip != rx.src_vip) {
		core->cnt.rx_foreign++;
		return;
	}
	rx_take_receives(core, qp, now);
	ovr_eng_rx(core->eng, now, rx.pdu, rx.pdu_len, rx.ce);
}

/* ---- work from the rings ------------------------------------------------- */

static void wqe_fail(struct svc_core *core, struct svc_qp *qp, bool recv,
		     uint32_t idx)
{
	struct ovr_eng_wc wc = {
		.wr_id = (recv ? 1ull << 63 : 0) | idx,
		.status = OVR_WC_LOC_QP_OP_ERR,
		.qp_num = qp->qpn,
		.vendor_err = 0,
	};

	core->cnt.wqe_bad++;
	/* after the completions the engine holds for GPU copies: the
	 * application sees a queue's completions in order */
	ovr_eng_fence(core->eng);
	cq_write(core, recv ? qp->rcq : qp->scq, &wc);
}

static void stall(struct svc_core *core, struct svc_qp *qp)
{
	if (qp->stalled)
		return;
	qp->stalled = true;
	qp->stall_next = core->stalled;
	core->stalled = qp;
}

static inline uint8_t *ring_slot(uint8_t *base, uint32_t idx, uint32_t depth,
				 uint32_t stride)
{
	return base + (size_t)(idx & (depth - 1)) * stride;
}

/*
 * The process route's small sends (docs/SERVICE.md section 4.2): before
 * the WRs in a QP's ring [sq_cons, @prod) go to the engine, read the
 * sources of those that carry at most SVC_PF_MSG bytes out of the
 * application, all at once - one call for the span from the lowest to
 * the highest byte they name, at most SVC_PF_BYTES - so that their
 * packets are built from it (svc_proc_copy) instead of a system call
 * each. What was read stands for every send WR of the context in the
 * engine: each was posted before this drain, and by the verbs' rules
 * its source holds still until it completes. The read replaces the
 * context's last one; a drain that reads nothing forgets it, so no WR
 * posted after a read is ever served from it. Two things may change a
 * source after its WR was posted and are not served from here: the
 * bytes an earlier READ or atomic of the QP brings to a fenced WR
 * (OVR_ENG_COPY_FENCED), and any READ response or atomic result the
 * service places in the context's memory forgets the read.
 */
#define SVC_SRC_OPCODES                                               \
	(1u << OVR_WR_RDMA_WRITE | 1u << OVR_WR_RDMA_WRITE_WITH_IMM | \
	 1u << OVR_WR_SEND | 1u << OVR_WR_SEND_WITH_IMM |             \
	 1u << OVR_WR_SEND_WITH_INV)

static bool pf_overlap(const struct svc_pf_span *p, uint64_t lo, uint64_t hi)
{
	return p->hi > p->lo && lo < p->hi && p->lo < hi;
}

/* Forget every span of @c (a READ's response or an atomic's result
 * landed, or a drain could not say what it took) */
static void pf_forget(struct svc_ctx_pr *pr)
{
	for (uint32_t k = 0; k < SVC_PF_SPANS; k++)
		pr->pf[k].lo = pr->pf[k].hi = 0;
}

static void sq_prefetch(struct svc_core *core, struct svc_qp *qp, uint32_t prod)
{
	struct svc_ctx *c = qp->ctx;
	struct svc_ctx_pr *pr = &c->pr[core->idx];
	uint64_t rlo[SVC_PF_RANGES], rhi[SVC_PF_RANGES];
	uint64_t lo = UINT64_MAX, hi = 0;
	struct svc_pf_span *t = NULL;
	uint32_t nr = 0;
	bool all = false;
	struct iovec l;
	ssize_t n;

	for (uint32_t i = qp->sq_cons; i != prod; i++) {
		const uint8_t *slot =
			ring_slot(qp->sq_slots, i, qp->sq_depth, qp->sq_stride);
		struct ovr_ring_sge sg[OVR_RING_SQ_MAX_SGE];
		struct ovr_ring_swqe w;
		uint64_t total = 0;
		bool other = false;

		memcpy(&w, slot, sizeof(w));
		if ((w.send_flags & OVR_SEND_INLINE) || w.opcode > 31 ||
		    !(SVC_SRC_OPCODES & (1u << w.opcode)) || !w.num_sge)
			continue;
		if (w.num_sge > OVR_RING_SQ_MAX_SGE ||
		    sizeof(w) + w.num_sge * sizeof(sg[0]) > qp->sq_stride) {
			all = true; /* (the engine fails it) */
			continue;
		}
		memcpy(sg, slot + sizeof(w), w.num_sge * sizeof(sg[0]));
		for (uint32_t j = 0; j < w.num_sge; j++) {
			uint64_t a = sg[j].addr, b = a + sg[j].length;

			total += sg[j].length;
			if (!sg[j].length)
				continue;
			if (b < a || nr == SVC_PF_RANGES) {
				all = true;
				continue;
			}
			rlo[nr] = a;
			rhi[nr++] = b;
		}
		if (!total || total > SVC_PF_MSG)
			continue;
		/* only the process route's sources are read here (a region
		 * the service maps, or a GPU's, is copied from directly):
		 * asked of the engine for the small WRs only, once per key */
		for (uint32_t j = 0, key = 0, seen = 0; j < w.num_sge && !other;
		     j++) {
			const struct svc_devref *d;

			if (!sg[j].length || (seen && sg[j].lkey == key))
				continue;
			key = sg[j].lkey;
			seen = 1;
			d = ovr_eng_mr_dev(core->eng, key);
			other = !d || d->kind != SVC_DEV_PROC || d->p != c;
		}
		if (other)
			continue;
		for (uint32_t j = 0; j < w.num_sge; j++) {
			uint64_t a = sg[j].addr, b = a + sg[j].length;

			if (!sg[j].length || b < a)
				continue;
			lo = a < lo ? a : lo;
			hi = b > hi ? b : hi;
		}
	}
	if (hi > lo && hi - lo <= SVC_PF_BYTES) {
		/* the WRs of earlier drains still waiting in the engine lie,
		 * most likely, in a span read then next to the new WRs' (an
		 * application cycles through a buffer): read up to
		 * SVC_PF_KEEP of the newest such on either side again */
		for (uint32_t k = 0; k < SVC_PF_SPANS; k++) {
			struct svc_pf_span *p = &pr->pf[k];

			if (pf_overlap(p,
				       lo > SVC_PF_KEEP ? lo - SVC_PF_KEEP : 0,
				       hi + SVC_PF_KEEP) &&
			    (!t || p->seq > t->seq))
				t = p;
		}
		if (t) {
			uint64_t ulo = t->lo < lo ? t->lo : lo,
				 uhi = t->hi > hi ? t->hi : hi;

			if (lo - ulo > SVC_PF_KEEP)
				ulo = lo - SVC_PF_KEEP;
			if (uhi - hi > SVC_PF_KEEP)
				uhi = hi + SVC_PF_KEEP;
			if (uhi - ulo <= SVC_PF_BYTES) {
				lo = ulo;
				hi = uhi;
			}
		} else {
			/* an empty slot, else the oldest */
			for (uint32_t k = 0; k < SVC_PF_SPANS; k++) {
				struct svc_pf_span *p = &pr->pf[k];

				if (!t || (t->hi > t->lo &&
					   (p->hi <= p->lo || p->seq < t->seq)))
					t = p;
			}
		}
		t->lo = t->hi = 0;
		if (!t->buf)
			t->buf = malloc(SVC_PF_BYTES);
		if (t->buf) {
			l = (struct iovec){ t->buf, hi - lo };
			core->cnt.proc_copy_calls++;
			core->cnt.proc_pf_reads++;
			/* memory that is not there shortens what is read; a
			 * WR that needs it reads on its own and finds out
			 * which error it is */
			n = svc_procmem_rw(c->memfd, false, &l, 1, lo);
			if (n > 0) {
				core->cnt.proc_copy_bytes += (uint64_t)n;
				t->lo = lo;
				t->hi = lo + (uint64_t)n;
				t->seq = ++pr->pf_seq;
			}
		}
	}
	/* The spans stay disjoint, and none older than this drain holds a
	 * byte of a WR it took: a span that overlaps the new one or any
	 * source just taken goes. So a copy's bytes lie in at most one
	 * span, read after the WR they belong to was posted. */
	for (uint32_t k = 0; k < SVC_PF_SPANS; k++) {
		struct svc_pf_span *p = &pr->pf[k];

		if (p == t || p->hi <= p->lo)
			continue;
		/* (more sources than were noted, or one that wraps: all
		 * others go) */
		if (all || (t && pf_overlap(p, t->lo, t->hi))) {
			p->lo = p->hi = 0;
			continue;
		}
		for (uint32_t j = 0; j < nr; j++)
			if (pf_overlap(p, rlo[j], rhi[j])) {
				p->lo = p->hi = 0;
				break;
			}
	}
}

/* How many WQEs ahead sq_drain asks for the lines of. */
#define SQ_AHEAD 8u

static inline void sq_line_prefetch(const struct svc_qp *qp, uint32_t idx)
{
	const uint8_t *p =
		ring_slot(qp->sq_slots, idx, qp->sq_depth, qp->sq_stride);

	__builtin_prefetch(p);
	/* the first SGE: the line after the header's 64 bytes */
	if (qp->sq_stride > sizeof(struct ovr_ring_swqe))
		__builtin_prefetch(p + sizeof(struct ovr_ring_swqe));
}

/* Returns false when the engine had no room (try again later). */
static bool sq_drain(struct svc_core *core, struct svc_qp *qp, uint64_t now)
{
	uint32_t prod =
		atomic_load_explicit(&qp->ring->sq_prod, memory_order_acquire);
	bool ok = true;

	core->round_now = 0; /* new WRs: completions read the clock anew */
	if (prod - qp->sq_cons > qp->sq_depth) {
		/* the client overran its ring: nothing in it can be trusted */
		core->cnt.wqe_bad++;
		prod = qp->sq_cons;
	}
	if (prod != qp->sq_cons && qp->ctx->memfd >= 0 && !qp->ctx->dead)
		sq_prefetch(core, qp, prod);
	/* the WQEs were written by the application's CPU: their lines'
	 * misses overlap instead of coming one after another (the header
	 * and the first SGE of each, SQ_AHEAD of them ahead) */
	for (uint32_t k = qp->sq_cons; k != prod && k - qp->sq_cons < SQ_AHEAD;
	     k++)
		sq_line_prefetch(qp, k);
	while (qp->sq_cons != prod) {
		uint8_t *slot = ring_slot(qp->sq_slots, qp->sq_cons,
					  qp->sq_depth, qp->sq_stride);
		struct ovr_ring_swqe w;
		struct ovr_eng_sge sg[OVR_RING_SQ_MAX_SGE];
		struct ovr_eng_send_wr wr;
		int rc;

		if (prod - qp->sq_cons > SQ_AHEAD)
			sq_line_prefetch(qp, qp->sq_cons + SQ_AHEAD);
		memcpy(&w, slot, sizeof(w));
		wr = (struct ovr_eng_send_wr){
			.wr_id = qp->sq_cons,
			.opcode = w.opcode,
			.send_flags = w.send_flags,
			.sg_list = sg,
			.imm_data = w.imm_data,
			.invalidate_rkey = w.invalidate_rkey,
			.rkey = w.rkey,
			.remote_addr = w.remote_addr,
			.compare_add = w.compare_add,
			.swap = w.swap,
		};
		if (w.opcode == OVR_WR_BIND_MW) {
			/* ring.h's encoding; the engine checks it all */
			wr.bind_mw.mw_rkey = w.invalidate_rkey;
			wr.bind_mw.rkey = w.rkey;
			wr.bind_mw.mr_lkey = (uint32_t)w.swap;
			wr.bind_mw.access = (uint32_t)(w.swap >> 32);
			wr.bind_mw.addr = w.remote_addr;
			wr.bind_mw.length = w.compare_add;
		}
		if (qp->type == OVR_QPT_UD) {
			struct svc_ah *ah =
				w.ah && w.ah <= qp->ctx->nobj &&
						qp->ctx->obj[w.ah - 1].type ==
							SVC_OBJ_AH ?
					qp->ctx->obj[w.ah - 1].p :
					NULL;

			if (!ah || ah->pd_handle != qp->pd_handle) {
				wqe_fail(core, qp, false, qp->sq_cons++);
				continue;
			}
			wr.ud_peer = SVC_PEER_UD | (uint64_t)ah->dscp << 32 |
				     ah->dst_vip;
			wr.remote_qpn = w.remote_qpn;
			wr.remote_qkey = w.remote_qkey;
		}
		if (w.send_flags & OVR_SEND_INLINE) {
			if (w.inline_len > qp->cap.max_inline_data ||
			    sizeof(w) + w.inline_len > qp->sq_stride) {
				wqe_fail(core, qp, false, qp->sq_cons++);
				continue;
			}
			sg[0] = (struct ovr_eng_sge){
				.addr = (uint64_t)(uintptr_t)(slot + sizeof(w)),
				.length = w.inline_len,
			};
			wr.num_sge = w.inline_len ? 1 : 0;
		} else {
			if (w.num_sge > qp->cap.max_send_sge ||
			    w.num_sge > OVR_RING_SQ_MAX_SGE) {
				wqe_fail(core, qp, false, qp->sq_cons++);
				continue;
			}
			/* one SGE (the common case) by a fixed-size copy: a
			 * copy of variable length is a rep movs, tens of
			 * cycles to start */
			if (w.num_sge)
				memcpy(sg, slot + sizeof(w), sizeof(sg[0]));
			if (w.num_sge > 1)
				memcpy(sg + 1, slot + sizeof(w) + sizeof(sg[0]),
				       (w.num_sge - 1) * sizeof(sg[0]));
			wr.num_sge = w.num_sge;
		}
		rc = ovr_eng_post_send(core->eng, qp->qpn, &wr, now);
		if (rc == ENOMEM) {
			ok = false;
			break;
		}
		if (rc)
			wqe_fail(core, qp, false, qp->sq_cons);
		qp->sq_cons++;
	}
	atomic_store_explicit(&qp->ring->sq_cons, qp->sq_cons,
			      memory_order_release);
	return ok;
}

/*
 * A QP's new receives into the engine. In RESET they stay in the ring:
 * receives posted before INIT are the QP's once it leaves RESET (the
 * kick of MODIFY_QP takes them), as mlx5 keeps them in its queue; a
 * modify to RESET drops whatever is there then (qp_state_publish).
 */
static bool rq_drain(struct svc_core *core, struct svc_qp *qp, uint64_t now)
{
	uint32_t prod =
		atomic_load_explicit(&qp->ring->rq_prod, memory_order_acquire);
	bool ok = true;

	core->round_now = 0; /* (as sq_drain) */
	/* the service writes the state word: no ordering needed */
	if (atomic_load_explicit(&qp->ring->state, memory_order_relaxed) ==
	    OVR_QPS_RESET)
		return true;

	if (prod - qp->rq_cons > qp->rq_depth) {
		core->cnt.wqe_bad++;
		prod = qp->rq_cons;
	}
	while (qp->rq_cons != prod) {
		uint8_t *slot = ring_slot(qp->rq_slots, qp->rq_cons,
					  qp->rq_depth, qp->rq_stride);
		struct ovr_ring_rwqe w;
		struct ovr_eng_sge sg[OVR_RING_SQ_MAX_SGE];
		struct ovr_eng_recv_wr wr;
		int rc;

		memcpy(&w, slot, sizeof(w));
		if (w.num_sge > qp->cap.max_recv_sge ||
		    w.num_sge > OVR_RING_SQ_MAX_SGE) {
			wqe_fail(core, qp, true, qp->rq_cons++);
			continue;
		}
		memcpy(sg, slot + sizeof(w), w.num_sge * sizeof(sg[0]));
		wr = (struct ovr_eng_recv_wr){
			.wr_id = (1ull << 63) | qp->rq_cons,
			.sg_list = sg,
			.num_sge = w.num_sge,
		};
		rc = ovr_eng_post_recv(core->eng, qp->qpn, &wr, now);
		if (rc == ENOMEM) {
			ok = false;
			break;
		}
		if (rc)
			wqe_fail(core, qp, true, qp->rq_cons);
		qp->rq_cons++;
	}
	atomic_store_explicit(&qp->ring->rq_cons, qp->rq_cons,
			      memory_order_release);
	return ok;
}

/*
 * An SRQ's new receives into the engine. A client that keeps to max_wr
 * never finds the engine full; one that does not loses what did not fit
 * (completed with LOC_QP_OP_ERR on no CQ: there is none yet) - counted
 * in wqe_bad.
 */
static void srq_drain(struct svc_core *core, struct svc_srq *srq, uint64_t now)
{
	uint32_t prod =
		atomic_load_explicit(&srq->ring->prod, memory_order_acquire);

	core->round_now = 0; /* (as sq_drain) */
	if (prod - srq->cons > srq->depth) {
		core->cnt.wqe_bad++;
		prod = srq->cons;
	}
	while (srq->cons != prod) {
		uint8_t *slot = ring_slot(srq->slots, srq->cons, srq->depth,
					  srq->stride);
		struct ovr_ring_rwqe w;
		struct ovr_eng_sge sg[OVR_RING_SQ_MAX_SGE];
		struct ovr_eng_recv_wr wr;

		memcpy(&w, slot, sizeof(w));
		srq->cons++;
		if (w.num_sge > srq->max_sge ||
		    w.num_sge > OVR_RING_SQ_MAX_SGE) {
			core->cnt.wqe_bad++;
			continue;
		}
		memcpy(sg, slot + sizeof(w), w.num_sge * sizeof(sg[0]));
		wr = (struct ovr_eng_recv_wr){
			.wr_id = (3ull << 62) | w.tag,
			.sg_list = sg,
			.num_sge = w.num_sge,
		};
		if (ovr_eng_post_srq_recv(core->eng, srq->srqn, &wr, now))
			core->cnt.wqe_bad++;
	}
	atomic_store_explicit(&srq->ring->cons, srq->cons,
			      memory_order_release);
}

void svc_srq_kick(struct svc *s, struct svc_srq *srq)
{
	(void)s;
	srq_drain(srq->core, srq, svc_now());
}

static void qp_drain(struct svc_core *core, struct svc_qp *qp, uint64_t now)
{
	bool ok = rq_drain(core, qp, now);

	ok = sq_drain(core, qp, now) && ok;
	if (!ok)
		stall(core, qp);
}

void svc_qp_kick(struct svc *s, struct svc_qp *qp)
{
	(void)s;
	qp_drain(qp->core, qp, svc_now());
}

static bool stalled_retry(struct svc_core *core, uint64_t now)
{
	struct svc_qp *list = core->stalled;

	if (!list)
		return false;
	core->stalled = NULL;
	while (list) {
		struct svc_qp *qp = list;

		list = qp->stall_next;
		qp->stalled = false;
		qp_drain(core, qp, now);
	}
	return true;
}

/* Doorbells of @core's QPs and SRQs: the words of each context's
 * db->bits it owns (ctx.db_words), whose summary bits it alone takes
 * (an atomic AND: other cores' bits stay). */
static bool db_pending(struct svc_core *core)
{
	struct svc *s = core->s;
	for (struct svc_ctx *c = s->ctxs; c; c = c->next)
		if (c->db_words[core->idx] &&
		    (atomic_load_explicit(&c->db->summary,
					  memory_order_relaxed) &
		     c->db_words[core->idx]))
			return true;
	return false;
}

static bool db_scan(struct svc_core *core, uint64_t now)
{
	struct svc *s = core->s;
	bool any = false;

	for (struct svc_ctx *c = s->ctxs; c; c = c->next) {
		uint64_t mine = c->db_words[core->idx], sum;

		if (!mine || !(atomic_load_explicit(&c->db->summary,
						    memory_order_relaxed) &
			       mine))
			continue;
		sum = atomic_fetch_and_explicit(&c->db->summary, ~mine,
						memory_order_acquire) &
		      mine;
		while (sum) {
			unsigned int w = (unsigned int)__builtin_ctzll(sum);
			uint64_t bits;

			sum &= sum - 1;
			bits = atomic_exchange_explicit(&c->db->bits[w], 0,
							memory_order_acquire);
			while (bits) {
				unsigned int b =
					(unsigned int)__builtin_ctzll(bits);
				struct svc_qp *qp = c->db_qp[w * 64 + b];
				struct svc_srq *srq = c->db_srq[w * 64 + b];

				bits &= bits - 1;
				if (qp) {
					qp_drain(core, qp, now);
					any = true;
				} else if (srq) {
					srq_drain(core, srq, now);
					any = true;
				}
			}
		}
	}
	return any;
}

/* ---- setup --------------------------------------------------------------- */

/* GPU memory regions: @dev is the struct ovr_gdr_mem of the MR's import
 * (svc_verbs.c). The copy engine (docs/GPU.md): a copy of a small message
 * goes through the GPU's BAR where GDRCopy is on (gdr/ decides: the
 * message's length, the allocation mapped, no stream copy of it still
 * running) and is done (0); else a copy between GPU memory and a frame
 * buffer (pinned by svc_verbs.c's gdr_ready) is queued (1): the loop
 * closes a batch of them per round (ovr_eng_dev_close: events recorded)
 * and polls the batches in flight (ovr_eng_dev_poll). Others are
 * synchronous. */
static int svc_proc_copy(struct svc_core *core, struct svc_ctx *c,
			 uint64_t addr, void *host, uint32_t len, bool to_dev,
			 uint32_t msg_len, unsigned int flags);

static int eng_dev_copy(void *ctx, void *dev, uint64_t off, void *host,
			uint32_t len, bool to_dev, uint32_t msg_len,
			unsigned int flags)
{
	struct svc_core *core = ctx;
	const struct svc_devref *d = dev;
	int rc;

	if (d->kind == SVC_DEV_PROC)
		return svc_proc_copy(core, d->p, off, host, len, to_dev,
				     msg_len, flags);
	rc = ovr_gdr_chan_copy_msg(core->gdr, d->p, off, host, len, to_dev,
				   msg_len);
	if (rc > 0)
		core->pord++; /* the engine numbers every queued copy */
	return rc;
}

/* Is [@p, @p + @len) frame-buffer memory (valid until the batch's close:
 * a queued copy may use it then)? The engine's own memory and the stack
 * (a WRITE's held-back tail, an atomic's operands, a GRH) are not. */
static bool buf_queueable(const struct svc_core *core, const void *p,
			  uint32_t len)
{
	struct svc *s = core->s;
	uintptr_t a = (uintptr_t)p;

	for (uint32_t i = 0; i < s->nbufr; i++)
		if (a >= s->bufr[i].lo && a + len <= s->bufr[i].hi)
			return true;
	return false;
}

static int buf_range(void *arg, void *addr, size_t len)
{
	struct svc *s = arg;

	if (s->nbufr == SVC_BUF_RANGES)
		return -ENOSPC;
	s->bufr[s->nbufr++] = (struct svc_buf_range){
		.lo = (uintptr_t)addr,
		.hi = (uintptr_t)addr + len,
	};
	return 0;
}

static void pq_fail(struct svc_core *core, const struct svc_pcopy *q, int err)
{
	if (err == -EFAULT)
		core->cnt.proc_copy_fault++;
	core->pfault[core->npfault++] =
		(struct ovr_eng_copy_fault){ .ord = q->ord, .err = err };
}

/*
 * One pwrite / pread of the application's address space (svc_procmem.c)
 * for the copies core->pidx[@first..@k) of context @c, one direction: the
 * run of them whose ranges adjoin from the first on (the packets of one
 * message land end to end), at most SVC_GATHER_BYTES (a longer copy
 * alone). Written from one buffer the pieces are gathered into: the
 * kernel's /proc/PID/mem has no vectored I/O of its own, so a pwritev
 * is a write per iovec, each with its own bounce page and page walk
 * (29 adjoining 8-byte pieces: 19 us as a pwritev, 1.3 us gathered;
 * sixteen 4 KB ones: 13 us against 10.5 us, docs/PERFORMANCE.md).
 * Returns how many copies it took; *@n: the bytes the kernel moved (it
 * stops at the first page that is not there), or -errno.
 */
static uint32_t pq_call(struct svc_core *core, struct svc_ctx *c, bool to_dev,
			uint32_t first, uint32_t k, ssize_t *n)
{
	const struct svc_pcopy *q0 = &core->pq[core->pidx[first]];
	uint64_t at = q0->addr, end = at;
	struct iovec l = { q0->host, q0->len };
	uint32_t nl = 0;

	for (uint32_t i = first; i < k; i++) {
		const struct svc_pcopy *q = &core->pq[core->pidx[i]];

		if (q->addr != end || end - at + q->len > SVC_GATHER_BYTES)
			break;
		end += q->len;
		nl++;
	}
	if (nl > 1 && to_dev) {
		uint8_t *d = core->pgather;

		for (uint32_t i = first; i < first + nl; i++) {
			const struct svc_pcopy *q = &core->pq[core->pidx[i]];

			memcpy(d, q->host, q->len);
			d += q->len;
		}
		l = (struct iovec){ core->pgather, end - at };
	} else {
		/* a copy longer than the buffer, or reads (queued copies
		 * place bytes: none so far), one at a time */
		nl = 1;
	}
	core->cnt.proc_copy_calls++;
	*n = svc_procmem_rw(c->memfd, to_dev, &l, 1, at);
	return nl;
}

/*
 * The @k copies core->pidx[0..k) of context @c, one direction, in order.
 * What the kernel moved before it stopped is done; the copy it stopped
 * in found no memory (a fault of its number) and the rest goes on from
 * the next. Another error, or the process gone, fails what is left.
 */
static void pq_copies(struct svc_core *core, struct svc_ctx *c, bool to_dev,
		      uint32_t k)
{
	uint32_t first = 0;

	while (first < k) {
		uint32_t took;
		ssize_t n;

		if (c->dead || c->memfd < 0) {
			n = -ESRCH;
			took = k - first;
		} else {
			took = pq_call(core, c, to_dev, first, k, &n);
		}
		if (n < 0 && n != -EFAULT) {
			while (first < k)
				pq_fail(core, &core->pq[core->pidx[first++]],
					(int)n);
			return;
		}
		if (n < 0)
			n = 0;
		for (uint32_t end = first + took; first < end; first++) {
			const struct svc_pcopy *q =
				&core->pq[core->pidx[first]];

			if ((size_t)n < q->len) {
				pq_fail(core, q, -EFAULT);
				first++;
				break;
			}
			n -= (ssize_t)q->len;
			core->cnt.proc_copy_bytes += q->len;
		}
	}
}

/*
 * Run the queued process-route copies: per context, in queue order, each
 * run of one direction in as few calls as its ranges allow (a READ
 * queued after a WRITE of the same bytes reads them; contexts are
 * separate address spaces, so their order against each other does not
 * matter).
 */
static void pq_run(struct svc_core *core)
{
	uint32_t n = core->npq;

	core->npq = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct svc_pcopy *q = &core->pq[i];
		uint32_t k = 0;

		if (q->done)
			continue;
		for (uint32_t j = i; j < n; j++) {
			struct svc_pcopy *o = &core->pq[j];

			if (o->done || o->c != q->c)
				continue;
			if (o->to_dev != q->to_dev)
				break;
			o->done = true;
			core->pidx[k++] = j;
		}
		pq_copies(core, q->c, q->to_dev, k);
	}
}

void svc_proc_forget(struct svc *s, struct svc_ctx *c)
{
	for (uint32_t k = 0; k < s->ncores; k++) {
		struct svc_core *core = &s->core[k];

		for (uint32_t i = 0; i < core->npq; i++)
			if (!core->pq[i].done && core->pq[i].c == c) {
				core->pq[i].done = true;
				pq_fail(core, &core->pq[i], -ESRCH);
			}
	}
}

/*
 * A send WR's source (OVR_ENG_COPY_SRC), read ahead: the WR's first
 * copy (OVR_ENG_COPY_FIRST), or one the read-ahead does not hold, reads
 * up to SVC_RA_BYTES (at most @msg_len) from @addr in one call, and the
 * WR's next copies come out of it with a memcpy. The verbs' rules keep
 * a posted send's source unchanged until the WR completes, and every
 * WR starts with a fresh read (FIRST), so what a WR's copy finds was
 * read after that WR was posted: another WR's read-ahead of the same
 * bytes is as good as its own. Memory beyond the WR's own bytes that
 * is not there only shortens the read-ahead. True: done; false: copy
 * it the plain way (no buffer, or its own bytes not all there - the
 * plain copy then finds out which error it is).
 */
static bool svc_proc_src(struct svc_core *core, struct svc_ctx *c,
			 uint64_t addr, void *host, uint32_t len,
			 uint32_t msg_len, unsigned int flags)
{
	struct svc_ctx_pr *pr = &c->pr[core->idx];
	struct iovec l;
	uint32_t want;
	ssize_t n;

	if (!(flags & OVR_ENG_COPY_FIRST) && addr >= pr->ra_lo &&
	    addr + len <= pr->ra_hi) {
		memcpy(host, pr->ra + (addr - pr->ra_lo), len);
		core->cnt.proc_ra_hits++;
		return true;
	}
	if (!pr->ra) {
		pr->ra = malloc(SVC_RA_BYTES);
		if (!pr->ra)
			return false;
	}
	pq_run(core); /* (what is queued lands first) */
	want = msg_len < SVC_RA_BYTES ? msg_len : SVC_RA_BYTES;
	l = (struct iovec){ pr->ra, want };
	pr->ra_lo = pr->ra_hi = 0;
	core->cnt.proc_copy_calls++;
	n = svc_procmem_rw(c->memfd, false, &l, 1, addr);
	if (n < (ssize_t)len)
		return false;
	pr->ra_lo = addr;
	pr->ra_hi = addr + (uint64_t)n;
	core->cnt.proc_copy_bytes += (uint64_t)n;
	memcpy(host, pr->ra, len);
	return true;
}

/*
 * A copy between @host and [@addr, @addr + @len) of the application of
 * context @c (the process route, docs/SERVICE.md section 4): through
 * the address space it registered in (c->memfd, svc_procmem.c); -ESRCH
 * once that is gone, or its process exited (@dead: the loop saw its
 * pidfd readable; no system call then). A copy the engine
 * may see fail late (OVR_ENG_COPY_LATE: a responder placing a request's
 * bytes) from a frame buffer is queued (1) and runs at the batch's
 * close with the others of its context (pq_run); the engine hears of
 * its failure through dev_batch_faults. Any other runs now, after what
 * is queued (it may read what they write): one pread / pwrite, done
 * when it returns (0). A short copy or EFAULT: the memory
 * is not there (unmapped, or never was) - -EFAULT, which the engine
 * turns into a protection error for the QP involved.
 */
static int svc_proc_copy(struct svc_core *core, struct svc_ctx *c,
			 uint64_t addr, void *host, uint32_t len, bool to_dev,
			 uint32_t msg_len, unsigned int flags)
{
	struct iovec l = { host, len };
	struct svc_ctx_pr *pr;
	ssize_t n;

	if (c->memfd < 0 || c->dead)
		return -ESRCH;
	pr = &c->pr[core->idx];
	if ((flags & (OVR_ENG_COPY_SRC | OVR_ENG_COPY_FENCED)) ==
	    OVR_ENG_COPY_SRC)
		for (uint32_t k = 0; k < SVC_PF_SPANS; k++) {
			const struct svc_pf_span *p = &pr->pf[k];

			if (addr < p->lo || addr + len > p->hi)
				continue;
			memcpy(host, p->buf + (addr - p->lo), len);
			core->cnt.proc_pf_hits++;
			/* the read-ahead is good for a message only once its
			 * first copy read afresh: this one did not */
			if (flags & OVR_ENG_COPY_FIRST)
				pr->ra_lo = pr->ra_hi = 0;
			return 0;
		}
	/* a READ's response or an atomic's result lands (or anything
	 * placed at once): what a drain read may be older */
	if (to_dev && !(flags & OVR_ENG_COPY_LATE))
		pf_forget(pr);
	if ((flags & OVR_ENG_COPY_SRC) && msg_len > len &&
	    svc_proc_src(core, c, addr, host, len, msg_len, flags))
		return 0;
	if ((flags & OVR_ENG_COPY_LATE) && core->npq < OVR_ENG_BATCH_COPIES &&
	    buf_queueable(core, host, len)) {
		core->pq[core->npq++] = (struct svc_pcopy){ .c = c,
							    .addr = addr,
							    .host = host,
							    .len = len,
							    .ord = core->pord++,
							    .to_dev = to_dev };
		core->cnt.proc_copy_queued++;
		return 1;
	}
	pq_run(core);
	core->cnt.proc_copy_calls++;
	n = svc_procmem_rw(c->memfd, to_dev, &l, 1, addr);
	if (n == (ssize_t)len) {
		core->cnt.proc_copy_bytes += len;
		return 0;
	}
	if (n >= 0 || n == -EFAULT) {
		core->cnt.proc_copy_fault++;
		return -EFAULT;
	}
	return (int)n;
}

static int eng_dev_fence(void *ctx)
{
	struct svc_core *core = ctx;

	pq_run(core); /* their faults go with the batch's close */
	return core->gdr ? ovr_gdr_fence(core->gdr) : 0;
}

/* The batch's process-route copies run now (each failure of one is
 * told by eng_dev_batch_faults); its GPU copies get their events. */
static int eng_dev_batch_close(void *ctx, unsigned int slot)
{
	struct svc_core *core = ctx;
	int rc;

	pq_run(core);
	core->pord = 0;
	rc = core->gdr ? ovr_gdr_batch_close(core->gdr, slot) : 0;
	if (rc)
		core->npfault = 0; /* the whole batch fails */
	return rc;
}

static uint32_t eng_dev_batch_faults(void *ctx, struct ovr_eng_copy_fault *f,
				     uint32_t max)
{
	struct svc_core *core = ctx;
	uint32_t n = core->npfault;

	memcpy(f, core->pfault, (n < max ? n : max) * sizeof(*f));
	core->npfault = 0;
	return n;
}

static int eng_dev_batch_poll(void *ctx, unsigned int slot, bool wait)
{
	struct svc_core *core = ctx;

	return core->gdr ? ovr_gdr_batch_poll(core->gdr, slot, wait) : 0;
}

int svc_dp_init(struct svc *s)
{
	struct ovr_vpc_config vc = { 0 };
	struct ovr_eng_cfg ec;
	static const struct ovr_eng_ops eops = {
		.tx_alloc = eng_tx_alloc,
		.tx = eng_tx,
		.cqe = eng_cqe,
		.event = eng_event,
		.srq_event = eng_srq_event,
		.ud_grh = eng_ud_grh,
		.dev_batch_close = eng_dev_batch_close,
		.dev_batch_poll = eng_dev_batch_poll,
		.dev_batch_faults = eng_dev_batch_faults,
		.dev_copy = eng_dev_copy,
		.dev_fence = eng_dev_fence,
	};
	struct svc_core *core;
	int pdu_mtu;
	uint32_t maxqp = 1, tag_bits = 0;

	s->ncores = s->conf.dp_cores ? s->conf.dp_cores : 1;
	s->port_qs = s->port_ops->queues ? s->port_ops->queues(s->port) : 1;
	if (!s->port_qs)
		s->port_qs = 1;
	s->port_steer = s->ncores > 1 && s->port_qs >= s->ncores * s->ncores;
	s->port_nq = s->port_qs < s->ncores ? s->port_qs : s->ncores;
	while ((1u << tag_bits) < s->ncores)
		tag_bits++;
	/* aligned as struct svc_core asks (its handed word's line) */
	s->core = aligned_alloc(_Alignof(struct svc_core),
				s->ncores * sizeof(*s->core));
	if (!s->core)
		return -ENOMEM;
	memset(s->core, 0, s->ncores * sizeof(*s->core));
	for (uint32_t i = 0; i < s->ncores; i++) {
		core = &s->core[i];
		core->s = s;
		core->idx = i;
		core->dp_epfd = core->wake_fd = core->timer_fd = -1;
		core->cpu = -1; /* any of s->cpus, until ovrdmad plans */
		/* a division once, not in every round */
		core->nrxq = i >= s->port_qs ?
				     0 :
				     (s->port_qs - 1 - i) / s->ncores + 1;
		/* with several cores: a ring from each other core, and
		 * for a core without a port queue of its own, one to core
		 * 0's (core 0 looks at no other each round) */
		for (uint32_t j = 0; j < s->ncores && s->ncores > 1; j++)
			if (j != i &&
			    !(core->in[j] = calloc(1, sizeof(*core->in[j]))))
				return -ENOMEM;
		if (i >= s->port_nq &&
		    !(core->to_port = calloc(1, sizeof(*core->to_port))))
			return -ENOMEM;
	}
	core = &s->core[0];
	pdu_mtu = ovr_vpc_pdu_mtu(s->conf.underlay_mtu);
	if (pdu_mtu < 0) {
		fprintf(stderr, "ovrdmad: underlay_mtu %u is too small\n",
			s->conf.underlay_mtu);
		return -EINVAL;
	}
	vc.local_host = s->conf.host;
	memcpy(vc.local_mac, s->mac, 6);
	vc.underlay_mtu = s->conf.underlay_mtu;
	s->vpc = ovr_vpc_create(&vc);
	if (!s->vpc)
		return -errno;
	/* core 0's VPC reader: this thread's (the others register on
	 * their own threads, svc_loop.c) */
	core->vt = core->own_vt = ovr_vpc_thread_register(s->vpc);
	if (!core->vt)
		return -errno;

	ovr_eng_cfg_default(&ec);
	while (maxqp < s->conf.eng_max_qp)
		maxqp <<= 1;
	ec.max_qp = maxqp;
	/* one table of regions and windows for every core's engine (the
	 * cores share it: svc_verbs.c), 2^20 at most */
	ec.max_mr = (uint32_t)((uint64_t)s->conf.ctx_max_mr * 4 * s->ncores >
					       (1u << 20) ?
				       1u << 20 :
				       s->conf.ctx_max_mr * 4 * s->ncores);
	ec.max_pdu = (uint32_t)pdu_mtu < OVR_WIRE_MAX_PDU ? (uint32_t)pdu_mtu :
							    OVR_WIRE_MAX_PDU;
	/* a PDU carries at most 4096 bytes of payload (the verbs MTU) */
	if (ec.max_pdu > 4096 + OVR_VPC_PDU_DATA_OVERHEAD)
		ec.max_pdu = 4096 + OVR_VPC_PDU_DATA_OVERHEAD;
	ec.line_rate_bps = s->conf.rate_bps;
	ec.max_srq = 1024; /* of the node; srq_per_context limits each */
	ec.base_rtt_ns = s->conf.base_rtt_ns;
	ec.cc = ovr_cc_find(s->conf.cc);
	if (!ec.cc) {
		fprintf(stderr, "ovrdmad: unknown congestion controller '%s'\n",
			s->conf.cc);
		return -EINVAL;
	}
	/* an engine per core, its QPNs tagged with the core */
	ec.qpn_tag_bits = tag_bits;
	for (uint32_t i = 0; i < s->ncores; i++) {
		ec.qpn_tag = i;
		ec.mr_share = i ? s->core[0].eng : NULL;
		s->core[i].eng = ovr_eng_create(&ec, &eops, &s->core[i]);
		if (!s->core[i].eng) {
			fprintf(stderr, "ovrdmad: engine of core %u: %s%s\n", i,
				strerror(errno),
				errno == EINVAL && tag_bits ?
					" ([limits] qps and dataplane_cores: "
					"at most 2^20 together)" :
					"");
			return -errno;
		}
	}
	/* where a queued process-route copy may find its frame buffer */
	if (s->port_ops->buf_mem && s->port_ops->buf_mem(s->port, buf_range, s))
		s->nbufr = 0; /* not all of it: copy synchronously */
	/* the QP index: slot and core tag of the QPN */
	s->slot_bits = ovr_eng_slot_bits(maxqp);
	s->tag_bits = tag_bits;
	s->qp_mask = (maxqp << tag_bits) - 1;
	s->qp_by_slot =
		calloc((size_t)maxqp << tag_bits, sizeof(*s->qp_by_slot));
	if (!s->qp_by_slot)
		return -ENOMEM;
	return 0;
}

void svc_dp_fini(struct svc *s)
{
	struct svc_core *core = s->core;

	if (!core)
		goto shared;
	for (uint32_t i = 0; i < s->ncores; i++) {
		struct svc_core *k = &s->core[i];

		if (k->eng)
			unpark_all(k);
		/* frames still between cores (all stopped now) */
		for (uint32_t j = 0; j < s->ncores; j++) {
			if (k->in[j])
				xring_drain(k, k->in[j], take_handed);
			if (!i && s->core[j].to_port)
				xring_drain(k, s->core[j].to_port, drop_frame);
		}
		while (k->loop_free != k->loop_tail) {
			void *t =
				k->loop[k->loop_free++ % SVC_LOOP_DEPTH].token;

			if (t)
				s->port_ops->tx_free(s->port, t);
		}
		if (k->eng)
			ovr_eng_destroy(k->eng);
		for (uint32_t j = 0; j < s->ncores; j++)
			free(k->in[j]);
		free(k->to_port);
	}
	/* every context, hence every GPU import, is gone; the cores'
	 * channels close with the base */
	ovr_gdr_close(s->gdr);
	s->gdr = NULL;
	for (uint32_t i = 0; i < s->ncores; i++)
		s->core[i].gdr = NULL;
	/* the other cores unregistered theirs on their threads */
	if (core->own_vt) {
		ovr_vpc_thread_unregister(core->own_vt);
		core->vt = core->own_vt = NULL;
	}
	free(s->core);
	s->core = NULL;
shared:
	if (s->vpc)
		ovr_vpc_destroy(s->vpc);
	free(s->qp_by_slot);
	free(s->cqs);
}

/* ---- a round ------------------------------------------------------------- */

bool svc_dp_pending(struct svc_core *core)
{
	struct svc *s = core->s;

	if (db_pending(core) || core->stalled ||
	    core->loop_head != core->loop_tail)
		return true;
	for (uint32_t j = 0; j < s->ncores; j++)
		if ((core->in[j] && !xring_empty(core->in[j])) ||
		    (core->idx == 0 && s->core[j].to_port &&
		     !xring_empty(s->core[j].to_port)))
			return true;
	return false;
}

/*
 * On the control thread, the world stopped: one round of core 0 (the
 * port's frames, handed on to their cores) and one of @core, before one
 * of @core's QPs goes. A NIC takes the packets that reached it ahead of
 * a destroy command; so do we. A SEND that had arrived is received and
 * acknowledged by the TERMINATE that the destroy sends (eng_tx_term),
 * rather than answered with "no such QP" and completed in error at the
 * peer, which would have read it as a remote abort.
 */
void svc_dp_settle(struct svc_core *core)
{
	struct svc *s = core->s;
	uint64_t next;

	svc_dp_round(&s->core[0], svc_now(), &next);
	if (core->idx)
		svc_dp_round(core, svc_now(), &next);
}

void svc_dp_settle_ctx(struct svc *s, struct svc_ctx *c)
{
	for (uint32_t k = 0; c->nqp && k < s->ncores; k++)
		if (c->db_words[k])
			svc_dp_settle(&s->core[k]);
}

/* What @core's port queues received (up to RX_BURST, from each of its
 * queues in turn, a different one first each round). */
static unsigned int port_rx(struct svc_core *core, void **bufs,
			    const uint8_t **frames, uint32_t *lens)
{
	struct svc *s = core->s;
	uint32_t nq = svc_core_nrxq(core);
	unsigned int n = 0;

	if (nq == 1) /* no division in the common case */
		return s->port_ops->rx(s->port, core->idx, bufs, frames, lens,
				       RX_BURST);
	for (uint32_t j = 0; j < nq && n < RX_BURST; j++)
		n += s->port_ops->rx(
			s->port, svc_core_rxq(core, (core->rx_first + j) % nq),
			bufs + n, frames + n, lens + n, RX_BURST - n);
	if (nq > 1)
		core->rx_first = (core->rx_first + 1) % nq;
	return n;
}

/* Sends what @core queued on its port queues. */
static void port_flush(struct svc_core *core)
{
	struct svc *s = core->s;

	if (core->idx >= s->port_nq)
		return;
	if (!s->port_steer) {
		s->port_ops->flush(s->port, core->idx);
		return;
	}
	for (uint32_t t = 0; t < s->ncores; t++)
		s->port_ops->flush(s->port, core->idx * s->ncores + t);
}

bool svc_dp_round(struct svc_core *core, uint64_t now, uint64_t *next)
{
	struct svc *s = core->s;
	void *bufs[RX_BURST];
	const uint8_t *frames[RX_BURST];
	uint32_t lens[RX_BURST];
	uint64_t closed, done;
	unsigned int n;
	bool work;

	core->in_round = true;
	core->round_now = 0;
	/* its own port queues (a core beyond the port's queues has none:
	 * core 0 receives for it, and sends what it hands over) */
	n = port_rx(core, bufs, frames, lens);
	for (unsigned int i = 0; i < n; i++)
		rx_frame(core, frames[i], lens[i], now, NULL, false);
	work = n > 0;
	/* the rings of the cores that say they handed us frames */
	if (atomic_load_explicit(&core->handed, memory_order_relaxed)) {
		uint32_t h = atomic_exchange_explicit(&core->handed, 0,
						      memory_order_acquire);

		for (; h; h &= h - 1) {
			uint32_t j = (uint32_t)__builtin_ctz(h);

			if (core->in[j])
				work |= xring_drain(core, core->in[j],
						    take_handed);
			if (!core->idx && s->core[j].to_port)
				work |= xring_drain(core, s->core[j].to_port,
						    take_to_port);
		}
	}
	work |= loop_receive(core, now);
	work |= db_scan(core, now);
	work |= stalled_retry(core, now);
	*next = ovr_eng_poll(core->eng, now, 0);
	/* the GPU copies of this round form a batch; the batches that are
	 * done release the PDUs and completions behind them and the frames
	 * they read (never waiting: the wire goes on) */
	closed = ovr_eng_dev_close(core->eng);
	done = ovr_eng_dev_poll(core->eng);
	if (done != core->dev_done) {
		work = true;
		core->dev_done = done;
		core->dev_wait_ns = SVC_DEV_WAIT_MIN_NS;
		unpark(core, done);
	}
	rx_keep(core, bufs, n, closed, done);
	core->dev_closed = closed;
	if (closed != done) {
		/* a bounded sleep: nothing else will say when */
		uint64_t t = now + core->dev_wait_ns;

		if (t < *next)
			*next = t;
	}
	if (lost_fail(core))
		*next = now; /* what the flushes and TERMINATE need */
	cq_notify_round(core);
	port_flush(core);
	if (core->kick)
		kick_cores(core);
	core->in_round = false;
	return work;
}
