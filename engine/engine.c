// SPDX-License-Identifier: MIT
/*
 * The transport engine: RC queue pairs over a lossy network. See
 * include/ovrdma/engine.h for the interface and docs/TRANSPORT.md for the
 * design; the short version:
 *
 *  - Each QP has one send PSN space for everything it sends in sequence
 *    (its requests and its responses to the peer's READs and atomics) and
 *    one receive window over the peer's. Every sequenced packet is
 *    acknowledged cumulatively (ack_psn) and selectively (SACK blocks);
 *    only lost packets are resent (RACK-style time-based loss detection,
 *    a tail-loss probe, and an RTO with backoff as the last resort).
 *  - Tagged data (WRITE, READ response) is placed at its target on
 *    arrival, in any order; SEND data is placed into the receive buffer
 *    of its MSN at its offset. A WRITE's last OVR_ENG_TAIL bytes are held
 *    back until everything before them has landed. READ and atomic
 *    requests execute in PSN order, exactly once (the receive window drops
 *    retransmitted requests; responses are resent from the responder's
 *    own send space, never re-executed).
 *  - Completions are delivered in order: a send WR when the peer has
 *    acknowledged all its packets (or, for READ/atomics, when the whole
 *    response and everything before it has arrived), a receive when its
 *    message and everything before it has arrived.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <ovrdma/compiler.h>
#include <ovrdma/util.h>

#include "engine_impl.h"
#include "qpstate.h"

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

static inline uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static inline uint32_t ts_of(uint64_t now)
{
	return (uint32_t)now | 1u; /* tsecr 0 would read as "no echo" */
}

/* IB's 5-bit RNR NAK timer code, in nanoseconds (code 0 is the longest). */
static uint64_t rnr_ns(unsigned int code)
{
	static const uint32_t us[32] = {
		655360, 10,    20,    30,     40,     60,     80,     120,
		160,	240,   320,   480,    640,    960,    1280,   1920,
		2560,	3840,  5120,  7680,   10240,  15360,  20480,  30720,
		40960,	61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};

	return (uint64_t)us[code & 31] * 1000;
}

/* Local ACK timeout of ibv_modify_qp: 4.096 us * 2^timeout. */
static uint64_t ack_timeout_ns(unsigned int t)
{
	return t ? 4096ull << (t > 31 ? 31 : t) : 0;
}

static uint32_t mtu_bytes(uint32_t mtu)
{
	return mtu >= OVR_MTU_256 && mtu <= OVR_MTU_4096 ? 128u << mtu : 0;
}

/* The MTU of UD QPs: the largest verbs MTU whose datagram (OTH, DETH,
 * payload, CRC) fits in cfg.max_pdu. */
static uint32_t ud_mtu(const struct ovr_eng *e)
{
	uint32_t room = e->cfg.max_pdu - (uint32_t)sizeof(struct ovr_wire_oth) -
			(uint32_t)sizeof(struct ovr_wire_deth) -
			OVR_WIRE_CRC_LEN;
	uint32_t m = OVR_MTU_4096;

	while (m > OVR_MTU_256 && mtu_bytes(m) > room)
		m--;
	return m;
}

static void sq_complete(struct ovr_eng *e, struct eng_qp *qp);
static bool tx_term(struct ovr_eng *e, uint32_t dqpn, uint32_t sqpn,
		    uint8_t reason, uint32_t psn, uint64_t peer, uint64_t user,
		    const struct eng_qp *ackq, uint64_t now);

/* ---- configuration ------------------------------------------------------ */

void ovr_eng_cfg_default(struct ovr_eng_cfg *cfg)
{
	*cfg = (struct ovr_eng_cfg){
		.max_qp = 1024,
		.max_mr = 4096,
		.max_pdu = 4096 + 128,
		.window_pkts = 1024,
		.sb_pool = 256,
		.init_rto_ns = 1000000, /* 1 ms until the first sample */
		.min_rto_ns = 200000,
		.max_rto_ns = 500000000,
		.ack_delay_ns = 5000,
		.ack_every = 4,
		.tx_burst = 16,
		.cc = NULL,
		.cc_init_cwnd = 0,
		.line_rate_bps = 0,
		.base_rtt_ns = 0,
		.seed = 0,
		/* answers to packets for vanished QPs: enough for a peer
		 * node's thousand QPs to learn within a few retransmissions,
		 * far too few to make a node a useful reflector (each answer
		 * is 48 bytes, no larger than what it answers) */
		.term_rate = 10000,
		.term_burst = 64,
		.max_srq = 256,
	};
}

/* ---- list of QPs with something to do --------------------------------- */

static void qp_activate(struct ovr_eng *e, struct eng_qp *qp)
{
	if (qp->active)
		return;
	qp->active = true;
	qp->act_next = &e->act;
	qp->act_prev = e->act.act_prev;
	e->act.act_prev->act_next = qp;
	e->act.act_prev = qp;
}

static void qp_deactivate(struct eng_qp *qp)
{
	if (!qp->active)
		return;
	qp->act_prev->act_next = qp->act_next;
	qp->act_next->act_prev = qp->act_prev;
	qp->act_next = qp->act_prev = NULL;
	qp->active = false;
}

/* ---- create / destroy --------------------------------------------------- */

static void dev_settle(struct ovr_eng *e);

/* The batches of device copies (only with ops.dev_fence); NULL and
 * errno on failure. */
static struct eng_batch *bat_alloc(uint32_t n)
{
	struct eng_batch *bat = calloc(n, sizeof(*bat));

	if (!bat)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		bat[i].qp = calloc(ENG_BATCH_QPS, sizeof(*bat[i].qp));
		bat[i].htx = calloc(ENG_HOLD, sizeof(*bat[i].htx));
		bat[i].hcqe = calloc(ENG_HOLD, sizeof(*bat[i].hcqe));
		if (!bat[i].qp || !bat[i].htx || !bat[i].hcqe) {
			for (uint32_t k = 0; k <= i; k++) {
				free(bat[k].qp);
				free(bat[k].htx);
				free(bat[k].hcqe);
			}
			free(bat);
			errno = ENOMEM;
			return NULL;
		}
	}
	return bat;
}

struct ovr_eng *ovr_eng_create(const struct ovr_eng_cfg *cfg,
			       const struct ovr_eng_ops *ops, void *ctx)
{
	struct ovr_eng *e;
	uint32_t maxqp, i;
	uint64_t seed;

	if (!cfg || !ops || !ops->tx_alloc || !ops->tx || !ops->cqe ||
	    !cfg->max_qp || cfg->max_qp > (1u << 20) || !cfg->max_mr ||
	    cfg->window_pkts < OVR_DP_RXWIN_MIN ||
	    cfg->window_pkts > OVR_DP_RXWIN_MAX ||
	    (cfg->window_pkts & (cfg->window_pkts - 1)) || !cfg->sb_pool ||
	    cfg->max_pdu < DATA_HDR_MAX + OVR_WIRE_CRC_LEN + 256 ||
	    cfg->max_pdu > OVR_WIRE_MAX_PDU || !cfg->tx_burst ||
	    !cfg->ack_every || cfg->dev_batches > OVR_ENG_MAX_DEV_BATCHES ||
	    !ops->dev_batch_close != !ops->dev_batch_poll ||
	    (ops->dev_batch_close && !ops->dev_fence)) {
		errno = EINVAL;
		return NULL;
	}
	if (cfg->cc && ovr_cc_ops_validate(cfg->cc)) {
		errno = EINVAL;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->cfg = *cfg;
	e->ops = *ops;
	e->ctx = ctx;
	e->cc = cfg->cc ? cfg->cc : ovr_cc_default();
	e->max_seg = cfg->max_pdu - (uint32_t)DATA_HDR_MAX - OVR_WIRE_CRC_LEN;
	seed = cfg->seed;
	if (!seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)(uintptr_t)e ^ 0x9e3779b97f4a7c15ull;
	e->mrs = ovr_mr_create((uint32_t)ovr_pow2_at_least(cfg->max_mr), seed);
	maxqp = (uint32_t)ovr_pow2_at_least(cfg->max_qp);
	for (e->qp_bits = 0; (1u << e->qp_bits) < maxqp; e->qp_bits++)
		;
	e->qp_gen = (uint32_t)(seed >> 40);
	e->qps = calloc(maxqp, sizeof(*e->qps));
	e->sb_size = sizeof(struct eng_sb) +
		     cfg->window_pkts * sizeof(struct eng_pkt);
	e->sb_mem = calloc(cfg->sb_pool, e->sb_size);
	e->rxbits_mem =
		calloc((size_t)maxqp * ovr_dp_rxwin_words(cfg->window_pkts),
		       sizeof(uint64_t));
	if (cfg->max_srq) {
		uint32_t n = (uint32_t)ovr_pow2_at_least(cfg->max_srq);

		for (e->srq_bits = 0; (1u << e->srq_bits) < n; e->srq_bits++)
			;
		e->srq_gen = (uint32_t)(seed >> 20);
		e->srqs = calloc(n, sizeof(*e->srqs));
	}
	if (ops->dev_fence) {
		/* without dev_batch_*, closing a batch is a fence: one in
		 * flight at a time is enough */
		e->nbat = ops->dev_batch_close ?
				  (cfg->dev_batches ? cfg->dev_batches :
						      OVR_ENG_DEV_BATCHES) +
					  1 :
				  2;
		e->dev_failq = calloc(maxqp, sizeof(*e->dev_failq));
		if (e->dev_failq)
			e->bat = bat_alloc(e->nbat);
	}
	if (!e->mrs || !e->qps || !e->sb_mem || !e->rxbits_mem ||
	    (cfg->max_srq && !e->srqs) ||
	    (ops->dev_fence && (!e->dev_failq || !e->bat))) {
		ovr_eng_destroy(e);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < cfg->sb_pool; i++) {
		struct eng_sb *sb = (struct eng_sb *)((uint8_t *)e->sb_mem +
						      i * e->sb_size);

		sb->next_free = e->sb_free;
		e->sb_free = sb;
	}
	e->act.act_next = e->act.act_prev = &e->act;
	e->term_tokens = cfg->term_burst;
	return e;
}

static void qp_free_queues(struct eng_qp *qp)
{
	free(qp->sq);
	free(qp->ssge);
	free(qp->sinl);
	free(qp->rq);
	free(qp->rsge);
	free(qp->bind);
	qp->sq = NULL;
	qp->ssge = NULL;
	qp->sinl = NULL;
	qp->rq = NULL;
	qp->rsge = NULL;
	qp->bind = NULL;
}

static void srq_free(struct eng_srq *q)
{
	free(q->wqe);
	free(q->sge);
	free(q->fifo);
	free(q->free_slot);
	q->wqe = NULL;
	q->sge = NULL;
	q->fifo = NULL;
	q->free_slot = NULL;
}

void ovr_eng_destroy(struct ovr_eng *e)
{
	uint32_t i;

	if (!e)
		return;
	if (e->qps && e->bat) {
		dev_settle(e); /* the held buffers go back */
		for (uint32_t k = 0; k < e->nbat; k++) {
			free(e->bat[k].qp);
			free(e->bat[k].htx);
			free(e->bat[k].hcqe);
		}
	}
	free(e->bat);
	free(e->dev_failq);
	if (e->qps)
		for (i = 0; i < (1u << e->qp_bits); i++)
			qp_free_queues(&e->qps[i]);
	if (e->srqs)
		for (i = 0; i < (1u << e->srq_bits); i++)
			srq_free(&e->srqs[i]);
	free(e->srqs);
	free(e->qps);
	free(e->sb_mem);
	free(e->rxbits_mem);
	if (e->mrs)
		ovr_mr_destroy(e->mrs);
	free(e);
}

/* ---- memory regions ------------------------------------------------------ */

int ovr_eng_reg_mr(struct ovr_eng *e, uint32_t pd, uint64_t va, uint64_t len,
		   unsigned int access, void *host, uint32_t *key)
{
	int rc = ovr_mr_reg(e->mrs, pd, va, len, access, (uint8_t *)host, key);

	return rc < 0 && rc != -ENOSPC && rc != -EINVAL ? -EINVAL : rc;
}

int ovr_eng_reg_mr_dev(struct ovr_eng *e, uint32_t pd, uint64_t va,
		       uint64_t len, unsigned int access, void *dev,
		       uint64_t dev_off, uint32_t *key)
{
	int rc;

	if (!e->ops.dev_copy)
		return -EOPNOTSUPP;
	rc = ovr_mr_reg_dev(e->mrs, pd, va, len, access, dev, dev_off, key);
	return rc < 0 && rc != -ENOSPC && rc != -EINVAL ? -EINVAL : rc;
}

int ovr_eng_dereg_mr(struct ovr_eng *e, uint32_t key)
{
	/* the service may unmap it next: no queued copy may still use it */
	if (e->dev_busy)
		dev_settle(e);
	return ovr_mr_dereg(e->mrs, key);
}

/* ---- QP lookup ---------------------------------------------------------- */

static struct eng_qp *qp_get(struct ovr_eng *e, uint32_t qpn)
{
	struct eng_qp *qp;

	qpn &= M24;
	qp = &e->qps[qpn & ((1u << e->qp_bits) - 1)];
	return qp->in_use && qp->qpn == qpn ? qp : NULL;
}

/* ---- scoreboards ---------------------------------------------------------- */

static inline struct eng_pkt *sb_pkt(struct ovr_eng *e, struct eng_qp *qp,
				     uint32_t psn)
{
	return &qp->sb->pkt[psn & (e->cfg.window_pkts - 1)];
}

static bool sb_acquire(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
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
	 * each is written by sb_record before it enters that range */
	qp->sb = sb;
	/* nothing was in flight: the retry budget (retry_cnt timeouts
	 * without progress) counts from now, not from the last ACK of a
	 * QP that may have been idle for seconds */
	qp->retries = 0;
	qp->last_progress_ns = now;
	return true;
}

static void sb_release(struct ovr_eng *e, struct eng_qp *qp)
{
	if (!qp->sb)
		return;
	qp->sb->next_free = e->sb_free;
	e->sb_free = qp->sb;
	qp->sb = NULL;
	qp->pipe = 0;
	qp->nlost = 0;
	qp->nsacked = 0;
	qp->rto_at = qp->pto_at = qp->reo_at = 0;
	qp->rto_fired_ns = 0;
	qp->rto_probe = false;
	qp->tlp_out = false;
}

/* ---- scatter / gather ------------------------------------------------- */

static inline struct eng_batch *bat_open(struct ovr_eng *e)
{
	return &e->bat[e->bat_tail % e->nbat];
}

static void bat_close(struct ovr_eng *e);

/*
 * A copy to or from device memory through ops.dev_copy for @qp; @rpsn:
 * the PSN of the request this side serves as responder, -1 for its own
 * work; @msg_len: the length of the message the copy is part of (the
 * service copies small messages its own way, docs/GPU.md §1.2). False:
 * failed (counted; the caller puts the QP in ERROR). A queued copy lists
 * the QP in the open batch.
 */
static bool dev_copy(struct ovr_eng *e, struct eng_qp *qp, int64_t rpsn,
		     void *dev, uint64_t off, void *buf, uint32_t len,
		     bool to_dev, uint32_t msg_len)
{
	struct eng_dev_qp *d;
	struct eng_batch *b;
	int rc;

	/* a batch lists ENG_BATCH_QPS: a QP more, and the next one starts */
	if (e->bat && !qp->dev_listed && bat_open(e)->nqp == ENG_BATCH_QPS)
		bat_close(e);
	rc = e->ops.dev_copy(e->ctx, dev, off, buf, len, to_dev, msg_len);
	if (rc < 0) {
		e->st.dev_copy_err++;
		return false;
	}
	e->st.dev_copies++;
	e->st.dev_copy_bytes += len;
	if (rc > 0 && e->bat) {
		b = bat_open(e);
		e->st.dev_async++;
		b->queued++;
		e->dev_busy = true;
		if (!qp->dev_listed) {
			qp->dev_listed = true;
			qp->dev_idx = b->nqp;
			b->qp[b->nqp++] = (struct eng_dev_qp){ .qpn = qp->qpn };
		}
		d = &b->qp[qp->dev_idx];
		if (rpsn >= 0 && (!d->resp || PSN_LT((uint32_t)rpsn, d->psn))) {
			d->resp = true;
			d->psn = (uint32_t)rpsn;
		}
	}
	return true;
}

/* Copy @len bytes (of a message of @msg_len) between @buf and the
 * location @host / @dev + @dev_off (what ovr_mr_check_dev resolved):
 * into it when @to_loc. */
static bool loc_copy(struct ovr_eng *e, struct eng_qp *qp, int64_t rpsn,
		     uint8_t *host, void *dev, uint64_t dev_off, uint8_t *buf,
		     uint32_t len, bool to_loc, uint32_t msg_len)
{
	if (dev)
		return dev_copy(e, qp, rpsn, dev, dev_off, buf, len, to_loc,
				msg_len);
	if (to_loc)
		memcpy(host, buf, len);
	else
		memcpy(buf, host, len);
	return true;
}

/* Copy @len bytes between @buf and offset @off of a scatter list:
 * out of the list when @to_list is false, into it when true; they are
 * part of a message of @msg_len bytes. False: a device copy failed. */
static bool sge_copy(struct ovr_eng *e, struct eng_qp *qp, int64_t rpsn,
		     const struct eng_lsge *s, unsigned int n, uint32_t off,
		     uint8_t *buf, uint32_t len, bool to_list, uint32_t msg_len)
{
	for (unsigned int i = 0; len && i < n; i++) {
		uint32_t c;

		if (off >= s[i].len) {
			off -= s[i].len;
			continue;
		}
		c = min32(s[i].len - off, len);
		if (s[i].dev) {
			if (!dev_copy(e, qp, rpsn, s[i].dev, s[i].dev_off + off,
				      buf, c, to_list, msg_len))
				return false;
		} else if (to_list) {
			memcpy(s[i].host + off, buf, c);
		} else {
			memcpy(buf, s[i].host + off, c);
		}
		buf += c;
		len -= c;
		off = 0;
	}
	return true;
}

static bool sge_read(struct ovr_eng *e, struct eng_qp *qp,
		     const struct eng_lsge *s, unsigned int n, uint32_t off,
		     uint8_t *dst, uint32_t len, uint32_t msg_len)
{
	return sge_copy(e, qp, -1, s, n, off, dst, len, false, msg_len);
}

static bool sge_write(struct ovr_eng *e, struct eng_qp *qp, int64_t rpsn,
		      const struct eng_lsge *s, unsigned int n, uint32_t off,
		      const uint8_t *src, uint32_t len, uint32_t msg_len)
{
	return sge_copy(e, qp, rpsn, s, n, off, (uint8_t *)(uintptr_t)src, len,
			true, msg_len);
}

/* ---- what waits for device copies ------------------------------------------ */

/*
 * The pipelined copy engine (docs/GPU.md §1.1). Copies queued through
 * ops.dev_copy go into the open batch; ovr_eng_dev_close closes it
 * (ops.dev_batch_close: the service records an event per stream) and
 * it joins the ring of batches in flight, at most cfg.dev_batches.
 * Everything the engine produces while the open batch has copies or a
 * batch is in flight (dev_busy) is held in the open batch, so that the
 * order of PDUs and completions is the order they were produced in:
 * a batch's held items leave when it and every batch before it are
 * done (ovr_eng_dev_poll, in closing order), never earlier. Items held
 * in an open batch without copies wait only for the batches before
 * them: ovr_eng_dev_close appends them to the newest closed batch, and
 * they leave at once when nothing is in flight any more.
 *
 * A batch that fails marks its QPs dev_fail: their items (in it, and
 * in later batches once the failure is acted on) are dropped or turned
 * into errors. The QPs go to ERROR only in ovr_eng_dev_poll and
 * ovr_eng_fence, outside any other engine call; the blocking waits
 * inside one (ring full, hold full, destroy) only mark them.
 */

/* A QP whose batch of device copies failed (dev_fail_qps fails it). */
static bool dev_failed(struct ovr_eng *e, uint32_t qpn)
{
	struct eng_qp *qp;

	if (!e->ndev_fail || !qpn)
		return false;
	qp = qp_get(e, qpn);
	return qp && qp->dev_fail;
}

/* A successful completion of a QP whose copies failed: an error. */
static void cqe_fail(struct ovr_eng *e, struct ovr_eng_wc *wc)
{
	if (wc->status == OVR_WC_SUCCESS && dev_failed(e, wc->qp_num)) {
		wc->status = OVR_WC_LOC_QP_OP_ERR;
		wc->vendor_err = OVR_VERR_DEV_COPY;
		wc->byte_len = 0;
		wc->wc_flags = 0;
	}
}

static void cqe_out(struct ovr_eng *e, uint32_t cq, struct ovr_eng_wc *wc)
{
	cqe_fail(e, wc);
	e->ops.cqe(e->ctx, cq, wc);
}

static void tx_release(struct ovr_eng *e, const struct eng_held_tx *h)
{
	uint32_t len = h->len;

	if (len && dev_failed(e, h->qpn))
		len = 0; /* it may carry wrong bytes, or acknowledge them */
	else if (len && h->seal)
		len = (uint32_t)ovr_wire_seal(h->buf, len);
	e->ops.tx(e->ctx, h->tok, len, h->peer, h->user);
}

/* Hand out what batch @b holds, in order; @rc: its copies' result (a
 * failure marks the QPs with copies in it first). */
static void bat_settle(struct ovr_eng *e, struct eng_batch *b, int rc)
{
	if (rc) {
		e->st.dev_fence_err++;
		for (uint32_t i = 0; i < b->nqp; i++) {
			struct eng_qp *qp = qp_get(e, b->qp[i].qpn);

			if (!qp || qp->dev_fail)
				continue; /* an earlier batch's failure stands */
			qp->dev_fail = true;
			qp->dev_resp = b->qp[i].resp;
			qp->dev_psn = b->qp[i].psn;
			e->dev_failq[e->ndev_fail++] = qp->qpn;
		}
	}
	for (uint32_t i = 0; i < b->nhtx; i++)
		tx_release(e, &b->htx[i]);
	for (uint32_t i = 0; i < b->nhcqe; i++)
		cqe_out(e, b->hcqe[i].cq, &b->hcqe[i].wc);
	b->queued = b->nqp = b->nhtx = b->nhcqe = 0;
	b->err = 0;
	b->fenced = false;
}

/*
 * Release the oldest batches in flight that are done, in order: as many
 * as are (@wait false), or the oldest @n, waiting for each (@wait).
 * When none is left in flight, the open batch's items go too if it has
 * no copies. Returns the number released.
 */
static uint32_t bat_release(struct ovr_eng *e, bool wait, uint32_t n)
{
	uint32_t k = 0;

	while (e->bat_head != e->bat_tail && k < n) {
		unsigned int slot = (unsigned int)(e->bat_head % e->nbat);
		struct eng_batch *b = &e->bat[slot];
		int rc = b->err;

		if (!b->fenced) {
			if (wait)
				e->st.dev_batch_waits++;
			rc = e->ops.dev_batch_poll(e->ctx, slot, wait);
			if (rc == -EAGAIN && !wait) {
				e->st.dev_batch_not_ready++;
				break;
			}
		}
		e->bat_head++;
		e->bat_done = b->seq;
		bat_settle(e, b, rc);
		k++;
	}
	if (e->bat_head == e->bat_tail && !bat_open(e)->queued) {
		bat_settle(e, bat_open(e), 0);
		e->dev_busy = false;
	}
	return k;
}

/* Close the open batch (it has copies): it joins those in flight, after
 * the oldest is waited for when cfg.dev_batches are. */
static void bat_close(struct ovr_eng *e)
{
	unsigned int slot;
	struct eng_batch *b;
	uint64_t n;

	if (e->bat_tail - e->bat_head == e->nbat - 1)
		bat_release(e, true, 1);
	slot = (unsigned int)(e->bat_tail % e->nbat);
	b = &e->bat[slot];
	b->seq = ++e->bat_seq;
	if (e->ops.dev_batch_close) {
		b->err = e->ops.dev_batch_close(e->ctx, slot);
		b->fenced = b->err != 0; /* failed: nothing to poll */
	} else {
		b->err = e->ops.dev_fence(e->ctx);
		b->fenced = true;
		e->st.dev_fences++;
	}
	for (uint32_t i = 0; i < b->nqp; i++) {
		struct eng_qp *qp = qp_get(e, b->qp[i].qpn);

		if (qp)
			qp->dev_listed = false;
	}
	e->bat_tail++;
	e->st.dev_batches++;
	n = e->bat_tail - e->bat_head;
	if (n > e->st.dev_batch_max_inflight)
		e->st.dev_batch_max_inflight = n;
}

/* Close what is queued and wait for everything. */
static void dev_settle(struct ovr_eng *e)
{
	if (!e->dev_busy)
		return;
	if (bat_open(e)->queued)
		bat_close(e);
	bat_release(e, true, UINT32_MAX);
}

/* The open batch holds all it can: close it when it has copies (the next
 * one holds on), else wait for everything. The batch to hold in, or NULL
 * when nothing is left to wait for. */
static struct eng_batch *bat_room(struct ovr_eng *e)
{
	if (bat_open(e)->queued)
		bat_close(e);
	else
		dev_settle(e);
	return e->dev_busy ? bat_open(e) : NULL;
}

/* Hand a completion out, or keep it while device copies are queued. */
static void emit_cqe(struct ovr_eng *e, uint32_t cq, struct ovr_eng_wc *wc)
{
	if (ovr_unlikely(e->dev_busy)) {
		struct eng_batch *b = bat_open(e);

		if (b->nhcqe == ENG_HOLD)
			b = bat_room(e);
		if (b) {
			b->hcqe[b->nhcqe].cq = cq;
			b->hcqe[b->nhcqe++].wc = *wc;
			e->st.dev_held++;
			return;
		}
	}
	cqe_out(e, cq, wc);
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
static void tx_out(struct ovr_eng *e, uint32_t qpn, void *tok, uint8_t *buf,
		   uint32_t len, bool seal, uint64_t peer, uint64_t user)
{
	struct eng_held_tx h = { .tok = tok,
				 .buf = buf,
				 .len = len,
				 .qpn = qpn,
				 .seal = seal,
				 .peer = peer,
				 .user = user };

	if (ovr_unlikely(e->dev_busy) && qpn) {
		struct eng_batch *b = bat_open(e);

		if (b->nhtx == ENG_HOLD)
			b = bat_room(e);
		if (b) {
			b->htx[b->nhtx++] = h;
			e->st.dev_held++;
			return;
		}
	}
	tx_release(e, &h);
}

static inline struct eng_lsge *swqe_sge(struct eng_qp *qp, uint32_t idx)
{
	return &qp->ssge[(idx & qp->sq_mask) * qp->cap.max_send_sge];
}

static inline struct eng_lsge *srq_sge(struct eng_srq *q, uint32_t slot)
{
	return &q->sge[(size_t)slot * q->max_sge];
}

/* Receive entry @idx of a QP: its own, or the SRQ slot it took. */
static inline struct eng_rwqe *rwqe(struct eng_qp *qp, uint32_t idx)
{
	if (ovr_unlikely(qp->srq != NULL))
		return &qp->srq->wqe[qp->bind[idx & qp->rq_mask]];
	return &qp->rq[idx & qp->rq_mask];
}

static inline struct eng_lsge *rwqe_sge(struct eng_qp *qp, uint32_t idx)
{
	if (ovr_unlikely(qp->srq != NULL))
		return srq_sge(qp->srq, qp->bind[idx & qp->rq_mask]);
	return &qp->rsge[(idx & qp->rq_mask) * qp->cap.max_recv_sge];
}

/* Drop the region references a WR's scatter list took at post time. */
static void put_refs(struct ovr_eng *e, const struct eng_lsge *s, uint8_t *nsge)
{
	for (unsigned int i = 0; i < *nsge; i++)
		if (s[i].key)
			ovr_mr_put(e->mrs, s[i].key);
	*nsge = 0;
}

static void swqe_put_refs(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx)
{
	put_refs(e, swqe_sge(qp, idx), &qp->sq[idx & qp->sq_mask].nsge);
}

/* Receive entry @idx is done with: drop its references; an SRQ slot
 * goes back to the SRQ's free stack. */
static void rwqe_put_refs(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx)
{
	put_refs(e, rwqe_sge(qp, idx), &rwqe(qp, idx)->nsge);
	if (qp->srq)
		qp->srq->free_slot[qp->srq->nfree++] =
			qp->bind[idx & qp->rq_mask];
}

/* ---- completions --------------------------------------------------------- */

/* What each work-request opcode becomes on the wire and in its
 * completion (indexed by enum ovr_wr_opcode; post_send admits only these). */
static const struct {
	uint8_t wire;
	uint8_t wc;
} wr_map[OVR_WR_SEND_WITH_INV + 1] = {
	[OVR_WR_RDMA_WRITE] = { OVR_OP_WRITE, OVR_WC_RDMA_WRITE },
	[OVR_WR_RDMA_WRITE_WITH_IMM] = { OVR_OP_WRITE_IMM, OVR_WC_RDMA_WRITE },
	[OVR_WR_SEND] = { OVR_OP_SEND, OVR_WC_SEND },
	[OVR_WR_SEND_WITH_IMM] = { OVR_OP_SEND_IMM, OVR_WC_SEND },
	[OVR_WR_RDMA_READ] = { OVR_OP_READ_REQ, OVR_WC_RDMA_READ },
	[OVR_WR_ATOMIC_CMP_AND_SWP] = { OVR_OP_ATOMIC_CS, OVR_WC_COMP_SWAP },
	[OVR_WR_ATOMIC_FETCH_AND_ADD] = { OVR_OP_ATOMIC_FA, OVR_WC_FETCH_ADD },
	[OVR_WR_SEND_WITH_INV] = { OVR_OP_SEND_INV, OVR_WC_SEND },
};

static uint32_t wc_opcode_of(uint8_t wr_opcode)
{
	return wr_map[wr_opcode].wc;
}

static void complete_send(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx,
			  uint32_t status, uint32_t verr, bool force)
{
	struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];

	if (force || status != OVR_WC_SUCCESS || qp->sig_all ||
	    (w->flags & OVR_SEND_SIGNALED)) {
		struct ovr_eng_wc wc = {
			.wr_id = w->wr_id,
			.status = status,
			.opcode = wc_opcode_of(w->opcode),
			.byte_len = w->len,
			.qp_num = qp->qpn,
			.src_qp = qp->dest_qpn,
			.vendor_err = verr,
		};

		emit_cqe(e, qp->send_cq, &wc);
	}
	swqe_put_refs(e, qp, idx);
}

static void complete_recv(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx,
			  uint32_t status, uint32_t verr)
{
	struct eng_rwqe *r = rwqe(qp, idx);
	struct ovr_eng_wc wc = {
		.wr_id = r->wr_id,
		.status = status,
		.opcode = r->wc_opcode,
		.byte_len = status == OVR_WC_SUCCESS ? r->msg_len : 0,
		.imm_data = r->imm,
		.qp_num = qp->qpn,
		/* UD: the sender of the datagram, kept in last_psn */
		.src_qp = qp->type == OVR_QPT_UD ? r->last_psn : qp->dest_qpn,
		.wc_flags = status == OVR_WC_SUCCESS ? r->wc_flags : 0,
		.vendor_err = verr,
	};

	if (status != OVR_WC_SUCCESS)
		wc.opcode = OVR_WC_RECV;
	emit_cqe(e, qp->recv_cq, &wc);
	rwqe_put_refs(e, qp, idx);
}

static void qp_event(struct ovr_eng *e, struct eng_qp *qp, enum ovr_event ev)
{
	if (e->ops.event)
		e->ops.event(e->ctx, qp->user, qp->qpn, ev);
}

/* vendor_err of a WR that failed at posting: a local key, or a remote
 * range no region can hold (what the responder's NAK would have said) */
static uint32_t locerr_verr(const struct eng_swqe *w)
{
	return w->status == OVR_WC_REM_ACCESS_ERR ? OVR_NAK_REM_ACCESS :
						    OVR_VERR_LKEY;
}

/*
 * Move @qp to ERROR: the send WR at SQ index @fail completes with @status
 * (unless that is FLUSH), every other outstanding send WR and every
 * receive flushes, in posting order. Nothing is sent afterwards except a
 * pending NAK.
 */
static void qp_error(struct ovr_eng *e, struct eng_qp *qp, uint32_t fail,
		     uint32_t status, uint32_t verr)
{
	uint32_t i;

	if (qp->state == OVR_QPS_ERR)
		return;
	qp->state = OVR_QPS_ERR;
	for (i = qp->sq_cons; i != qp->sq_prod; i++) {
		struct eng_swqe *w = &qp->sq[i & qp->sq_mask];
		uint32_t st = OVR_WC_WR_FLUSH_ERR, ve = 0;

		if (i == fail) {
			st = status;
			ve = verr;
		} else if (w->state == W_LOCERR) {
			st = w->status;
			ve = locerr_verr(w);
		}
		complete_send(e, qp, i, st, ve, true);
	}
	qp->sq_cons = qp->sq_next = qp->sq_prod;
	qp->rd_out = 0;
	for (i = qp->rq_cons; i != qp->rq_prod; i++) {
		struct eng_rwqe *r = rwqe(qp, i);

		complete_recv(e, qp, i, r->bad ? r->bad : OVR_WC_WR_FLUSH_ERR,
			      r->bad == OVR_WC_LOC_LEN_ERR ? OVR_VERR_LEN : 0);
	}
	qp->rq_cons = qp->rq_prod;
	/* what it took from its SRQ has all completed (verbs' cue that
	 * the QP may be destroyed without losing receives) */
	if (qp->srq && e->ops.event)
		e->ops.event(e->ctx, qp->user, qp->qpn,
			     OVR_EV_QP_LAST_WQE_REACHED);
	sb_release(e, qp);
	memset(qp->stash, 0, sizeof(qp->stash));
	memset(qp->rdq, 0, sizeof(qp->rdq));
	qp->ack_at = 0;
	qp->ack_now = false;
	qp->rnr_wait = false;
	qp->credit_wait_since = 0;
	qp->pend_code = 0;
	qp->fail_pending = false;
}

/* ERROR with the oldest outstanding send WR failing with @status. */
static void qp_error_head(struct ovr_eng *e, struct eng_qp *qp, uint32_t status,
			  uint32_t verr)
{
	qp_error(e, qp, qp->sq_cons, status, verr);
}

/*
 * Can @qp tell its peer it is going away? It must be an RC QP that has
 * been to RTS: the TERMINATE carries its next send PSN, which a QP still
 * in RTR does not have yet (sq_psn comes with RTS). Its peer learns
 * otherwise: a destroyed QP's number answers the peer's next packet.
 */
static bool term_can_tell(const struct eng_qp *qp)
{
	return qp->type == OVR_QPT_RC &&
	       (qp->state == OVR_QPS_RTS || qp->state == OVR_QPS_SQD);
}

/*
 * ERROR for a cause of this side's own (the application, a local error,
 * retry or RNR budget spent): a connected QP tells its peer with a
 * TERMINATE, sent by the poll loop and repeated in answer to the peer's
 * later packets. Causes the peer already knows (a NAK either way, a
 * TERMINATE, a version mismatch) use qp_error() alone.
 */
static void qp_error_local(struct ovr_eng *e, struct eng_qp *qp, uint32_t fail,
			   uint32_t status, uint32_t verr)
{
	bool connected = term_can_tell(qp);

	qp_error(e, qp, fail, status, verr);
	if (connected) {
		qp->term_reason = OVR_TERM_ERROR;
		qp->term_pending = true;
		qp_activate(e, qp);
	}
}

/* A responder-side violation: NAK it, then ERROR (verbs class C/J). */
static void qp_fatal_nak(struct ovr_eng *e, struct eng_qp *qp, uint8_t code,
			 uint32_t psn)
{
	qp->nak_code = code;
	qp->nak_timer = 0;
	qp->nak_psn = psn;
	qp->fatal_code = code;
	qp->fatal_psn = psn;
	qp_error_head(e, qp, OVR_WC_WR_FLUSH_ERR, 0);
	qp_event(e, qp,
		 code == OVR_NAK_REM_ACCESS ? OVR_EV_QP_ACCESS_ERR :
					      OVR_EV_QP_REQ_ERR);
	qp_activate(e, qp);
}

/*
 * A request violates protection or limits. In order (everything before it
 * has arrived), NAK and fail now; beyond a hole, remember it and do so
 * when the hole fills, so the NAK's PSN is also a true cumulative ACK and
 * the requester completes everything before it normally.
 */
static void violation(struct ovr_eng *e, struct eng_qp *qp, uint8_t code,
		      uint32_t psn)
{
	if (psn == qp->rx.ack_psn) {
		qp_fatal_nak(e, qp, code, psn);
		return;
	}
	if (!qp->pend_code || PSN_LT(psn, qp->pend_psn)) {
		qp->pend_code = code;
		qp->pend_psn = psn;
	}
}

/* ---- QP verbs --------------------------------------------------------------- */

/*
 * The QP's queues. With an SRQ there is no receive queue but a ring of
 * @nbind SRQ slot numbers (4 bytes each): the receives the QP has taken
 * for messages in its receive window.
 */
static int qp_alloc_queues(struct eng_qp *qp, struct ovr_eng_qp_cap *cap,
			   bool srq, uint32_t nbind)
{
	uint32_t ns = (uint32_t)ovr_pow2_at_least(
		cap->max_send_wr ? cap->max_send_wr : 1);
	uint32_t nr = (uint32_t)ovr_pow2_at_least(
		cap->max_recv_wr ? cap->max_recv_wr : 1);

	cap->max_send_sge = cap->max_send_sge ? cap->max_send_sge : 1;
	cap->max_recv_sge = cap->max_recv_sge ? cap->max_recv_sge : 1;
	if (srq) {
		nr = nbind;
		cap->max_recv_sge = 0;
	}
	qp->sq = calloc(ns, sizeof(*qp->sq));
	qp->ssge = calloc((size_t)ns * cap->max_send_sge, sizeof(*qp->ssge));
	qp->sinl = cap->max_inline_data ? calloc(ns, cap->max_inline_data) :
					  NULL;
	if (srq) {
		qp->bind = calloc(nr, sizeof(*qp->bind));
	} else {
		qp->rq = calloc(nr, sizeof(*qp->rq));
		qp->rsge = calloc((size_t)nr * cap->max_recv_sge,
				  sizeof(*qp->rsge));
	}
	if (!qp->sq || !qp->ssge || (cap->max_inline_data && !qp->sinl) ||
	    (srq ? !qp->bind : !qp->rq || !qp->rsge)) {
		qp_free_queues(qp);
		return -ENOMEM;
	}
	qp->sq_mask = ns - 1;
	qp->rq_mask = nr - 1;
	cap->max_send_wr = ns;
	cap->max_recv_wr = srq ? 0 : nr;
	qp->cap = *cap;
	return 0;
}

/* ---- shared receive queues --------------------------------------------- */

static struct eng_srq *srq_get(struct ovr_eng *e, uint32_t srqn)
{
	struct eng_srq *q;

	if (!e->srqs || !srqn)
		return NULL;
	q = &e->srqs[srqn & ((1u << e->srq_bits) - 1)];
	return q->in_use && q->srqn == (srqn & M24) ? q : NULL;
}

/* (Re)size @q to @cap slots (a power of two, not below the current),
 * keeping its receives where they are. */
static int srq_resize(struct eng_srq *q, uint32_t cap)
{
	struct eng_rwqe *wqe = calloc(cap, sizeof(*wqe));
	struct eng_lsge *sge = calloc((size_t)cap * q->max_sge, sizeof(*sge));
	uint32_t *fifo = calloc(cap, sizeof(*fifo));
	uint32_t *fr = calloc(cap, sizeof(*fr));
	uint32_t i, n = 0;

	if (!wqe || !sge || !fifo || !fr) {
		free(wqe);
		free(sge);
		free(fifo);
		free(fr);
		return -ENOMEM;
	}
	if (q->cap) {
		/* slots keep their numbers: QPs name them in bind rings */
		memcpy(wqe, q->wqe, q->cap * sizeof(*wqe));
		memcpy(sge, q->sge, (size_t)q->cap * q->max_sge * sizeof(*sge));
		for (i = q->head; i != q->tail; i++)
			fifo[n++] = q->fifo[i & (q->cap - 1)];
		memcpy(fr, q->free_slot, q->nfree * sizeof(*fr));
	}
	/* new slots are free, lowest numbers on top */
	for (i = cap; i-- > q->cap;)
		fr[q->nfree++] = i;
	srq_free(q);
	q->wqe = wqe;
	q->sge = sge;
	q->fifo = fifo;
	q->free_slot = fr;
	q->head = 0;
	q->tail = n;
	q->cap = cap;
	return 0;
}

int ovr_eng_srq_create(struct ovr_eng *e, const struct ovr_eng_srq_init *init,
		       uint32_t *srqn)
{
	uint32_t n = 1u << e->srq_bits, i, gen_bits = 24 - e->srq_bits;
	struct eng_srq *q = NULL;
	int rc;

	if (!init || !srqn || !e->srqs || !init->attr.max_wr ||
	    init->attr.max_wr > OVR_ENG_MAX_WR || !init->attr.max_sge ||
	    init->attr.max_sge > OVR_ENG_MAX_SGE)
		return -EINVAL;
	for (i = 0; i < n && i < e->cfg.max_srq; i++)
		if (!e->srqs[i].in_use) {
			q = &e->srqs[i];
			break;
		}
	if (!q)
		return -ENOSPC;
	memset(q, 0, sizeof(*q));
	q->max_sge = init->attr.max_sge;
	rc = srq_resize(q, (uint32_t)ovr_pow2_at_least(init->attr.max_wr));
	if (rc)
		return rc;
	/* like QPNs: generation | slot, never 0 */
	e->srq_gen = (e->srq_gen + 1) & ((1u << gen_bits) - 1);
	if (!e->srq_gen)
		e->srq_gen = 1;
	q->srqn = (e->srq_gen << e->srq_bits) | i;
	q->pd = init->pd;
	q->user = init->user;
	q->in_use = true;
	*srqn = q->srqn;
	return 0;
}

int ovr_eng_srq_modify(struct ovr_eng *e, uint32_t srqn,
		       const struct ovr_eng_srq_attr *attr, unsigned int mask)
{
	struct eng_srq *q = srq_get(e, srqn);
	uint32_t cap;
	int rc;

	if (!q || !attr || (mask & ~(OVR_SRQ_MAX_WR | OVR_SRQ_LIMIT)))
		return -EINVAL;
	cap = q->cap;
	if (mask & OVR_SRQ_MAX_WR) {
		if (attr->max_wr < q->cap || attr->max_wr > OVR_ENG_MAX_WR)
			return -EINVAL;
		cap = (uint32_t)ovr_pow2_at_least(attr->max_wr);
	}
	if ((mask & OVR_SRQ_LIMIT) && attr->srq_limit > cap)
		return -EINVAL;
	if (cap != q->cap) {
		rc = srq_resize(q, cap);
		if (rc)
			return rc;
	}
	if (mask & OVR_SRQ_LIMIT)
		q->limit = attr->srq_limit;
	return 0;
}

int ovr_eng_srq_query(struct ovr_eng *e, uint32_t srqn,
		      struct ovr_eng_srq_attr *attr)
{
	struct eng_srq *q = srq_get(e, srqn);

	if (!q || !attr)
		return -EINVAL;
	attr->max_wr = q->cap;
	attr->max_sge = q->max_sge;
	attr->srq_limit = q->limit;
	return 0;
}

int ovr_eng_srq_destroy(struct ovr_eng *e, uint32_t srqn)
{
	struct eng_srq *q = srq_get(e, srqn);

	if (!q)
		return -EINVAL;
	if (q->nqp)
		return -EBUSY;
	for (uint32_t i = q->head; i != q->tail; i++) {
		uint32_t slot = q->fifo[i & (q->cap - 1)];

		put_refs(e, srq_sge(q, slot), &q->wqe[slot].nsge);
	}
	srq_free(q);
	q->in_use = false;
	q->srqn = 0;
	return 0;
}

/* Point a local SGE at what ovr_mr_check_dev resolved. */
static void set_lsge(struct eng_lsge *s, const struct ovr_mr_loc *loc)
{
	s->dev = loc->dev;
	if (loc->dev)
		s->dev_off = loc->dev_off;
	else
		s->host = loc->host;
}

/* Fill receive entry @r and its scatter list @s from @wr, checking and
 * referencing each key against @pd (a bad one marks the entry bad). */
static void rwqe_fill(struct ovr_eng *e, uint32_t pd, struct eng_rwqe *r,
		      struct eng_lsge *s, const struct ovr_eng_recv_wr *wr,
		      uint32_t total)
{
	memset(r, 0, sizeof(*r));
	r->wr_id = wr->wr_id;
	r->cap = total;
	r->wc_opcode = OVR_WC_RECV;
	for (uint32_t i = 0; i < wr->num_sge; i++) {
		const struct ovr_eng_sge *g = &wr->sg_list[i];
		struct ovr_mr_loc loc;

		s[i].len = g->length;
		s[i].key = 0;
		s[i].host = NULL;
		s[i].dev = NULL;
		r->nsge = (uint8_t)(i + 1);
		if (!g->length)
			continue;
		if (ovr_mr_check_dev(e->mrs, g->lkey, pd, g->addr, g->length,
				     OVR_ACCESS_LOCAL_WRITE, &loc) ||
		    ovr_mr_get(e->mrs, g->lkey)) {
			r->bad = OVR_WC_LOC_PROT_ERR;
			r->nsge = (uint8_t)i;
			break;
		}
		set_lsge(&s[i], &loc);
		s[i].key = g->lkey;
	}
}

int ovr_eng_post_srq_recv(struct ovr_eng *e, uint32_t srqn,
			  const struct ovr_eng_recv_wr *wr, uint64_t now_ns)
{
	struct eng_srq *q = srq_get(e, srqn);
	uint64_t total = 0;
	uint32_t slot, i;

	(void)now_ns;
	if (!q || !wr || wr->num_sge > q->max_sge ||
	    (wr->num_sge && !wr->sg_list))
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > OVR_WIRE_MAX_MSG)
		return EINVAL;
	if (!q->nfree)
		return ENOMEM;
	slot = q->free_slot[--q->nfree];
	rwqe_fill(e, q->pd, &q->wqe[slot], srq_sge(q, slot), wr,
		  (uint32_t)total);
	q->fifo[q->tail++ & (q->cap - 1)] = slot;
	return 0;
}

/* @qp takes the oldest posted receive of its SRQ as entry rq_prod;
 * false when none is posted (or its ring is full: RNR either way). */
static bool srq_take(struct ovr_eng *e, struct eng_qp *qp)
{
	struct eng_srq *q = qp->srq;

	if (q->head == q->tail || qp->rq_prod - qp->rq_cons > qp->rq_mask)
		return false;
	qp->bind[qp->rq_prod++ & qp->rq_mask] =
		q->fifo[q->head++ & (q->cap - 1)];
	if (q->limit && q->tail - q->head < q->limit) {
		q->limit = 0; /* fires once, then disarmed */
		if (e->ops.srq_event)
			e->ops.srq_event(e->ctx, q->user, q->srqn,
					 OVR_EV_SRQ_LIMIT_REACHED);
	}
	return true;
}

int ovr_eng_qp_create(struct ovr_eng *e, const struct ovr_eng_qp_init *init,
		      uint32_t *qpn)
{
	struct ovr_eng_qp_cap cap;
	struct eng_qp *qp = NULL;
	struct eng_srq *srq = NULL;
	uint32_t n = 1u << e->qp_bits, i, gen_bits = 24 - e->qp_bits;
	uint64_t *rxbits;
	int rc;

	if (!init || !qpn ||
	    (init->qp_type && init->qp_type != OVR_QPT_RC &&
	     init->qp_type != OVR_QPT_UD))
		return -EINVAL;
	cap = init->cap;
	if (cap.max_send_wr > OVR_ENG_MAX_WR ||
	    cap.max_recv_wr > OVR_ENG_MAX_WR ||
	    cap.max_send_sge > OVR_ENG_MAX_SGE ||
	    cap.max_recv_sge > OVR_ENG_MAX_SGE ||
	    cap.max_inline_data > OVR_ENG_MAX_INLINE)
		return -EINVAL;
	if (e->nqp >= e->cfg.max_qp)
		return -ENOSPC;
	for (i = 0; i < n; i++)
		if (!e->qps[i].in_use) {
			qp = &e->qps[i];
			break;
		}
	if (!qp)
		return -ENOSPC;
	if (init->srq) {
		srq = srq_get(e, init->srq);
		if (!srq || srq->pd != init->pd)
			return -EINVAL;
	}
	rxbits = qp->rxbits;
	memset(qp, 0, sizeof(*qp));
	/* an SRQ's receives are taken for messages in the receive window:
	 * at most window_pkts of them */
	rc = qp_alloc_queues(qp, &cap, srq != NULL, e->cfg.window_pkts);
	if (rc)
		return rc;
	qp->srq = srq;
	if (srq)
		srq->nqp++;
	/* QPN = generation | slot: a packet for a destroyed QP does not
	 * reach the next QP in that slot. Generation 0 is skipped so QPN 0
	 * and 1 (IB's special QPs) are never used. */
	e->qp_gen = (e->qp_gen + 1) & ((1u << gen_bits) - 1);
	if (!e->qp_gen)
		e->qp_gen = 1;
	qp->qpn = (e->qp_gen << e->qp_bits) | i;
	qp->type = init->qp_type ? init->qp_type : OVR_QPT_RC;
	if (qp->type == OVR_QPT_UD) {
		/* no path: the port's MTU, fixed */
		qp->mtu = ud_mtu(e);
		qp->seg = mtu_bytes(qp->mtu);
	}
	qp->in_use = true;
	qp->state = OVR_QPS_RESET;
	qp->pd = init->pd;
	qp->send_cq = init->send_cq;
	qp->recv_cq = init->recv_cq;
	qp->sig_all = init->sq_sig_all;
	qp->user = init->user;
	qp->rxbits = e->rxbits_mem +
		     (size_t)i * ovr_dp_rxwin_words(e->cfg.window_pkts);
	(void)rxbits;
	qp->st.state = OVR_QPS_RESET;
	e->nqp++;
	*qpn = qp->qpn;
	return 0;
}

/* Back to RESET: everything is dropped without completions. */
static void qp_reset(struct ovr_eng *e, struct eng_qp *qp)
{
	uint32_t i;

	for (i = qp->sq_cons; i != qp->sq_prod; i++)
		swqe_put_refs(e, qp, i);
	for (i = qp->rq_cons; i != qp->rq_prod; i++)
		rwqe_put_refs(e, qp, i);
	sb_release(e, qp);
	qp_deactivate(qp);
	qp->sq_prod = qp->sq_cons = qp->sq_next = 0;
	qp->rq_prod = qp->rq_cons = 0;
	qp->rd_out = 0;
	qp->q0_msn = qp->q1_msn = 1;
	qp->rq_msn = 1;
	qp->rd_exec_msn = qp->rd_send_msn = qp->rd_free_msn = 1;
	qp->rd_next_msn = 1;
	qp->credit_valid = false;
	qp->credit_wait_since = 0;
	memset(qp->rdq, 0, sizeof(qp->rdq));
	memset(qp->stash, 0, sizeof(qp->stash));
	qp->nak_code = qp->fatal_code = qp->pend_code = 0;
	qp->fail_pending = false;
	qp->ack_at = 0;
	qp->ack_now = false;
	qp->unacked = 0;
	qp->rnr_wait = false;
	qp->retries = qp->rnr_tries = 0;
	qp->rsp_at = 0;
	qp->rsp_probes = 0;
	qp->comm_est = false;
	qp->psn_adopted = false;
	qp->sqd_drained = false;
	qp->ce_count = qp->peer_ce = 0;
	qp->ts_recent = 0;
	qp->ts_fresh = false; /* nothing of the next connection to echo */
	qp->term_reason = 0;
	qp->term_pending = false;
	memset(&qp->st, 0, sizeof(qp->st));
}

int ovr_eng_qp_destroy(struct ovr_eng *e, uint32_t qpn)
{
	struct eng_qp *qp = qp_get(e, qpn);

	if (!qp)
		return -EINVAL;
	/* nothing held may name it (its user value) once it is gone */
	if (e->dev_busy)
		dev_settle(e);
	/* tell a connected peer now: there will be no later chance */
	if (term_can_tell(qp) || qp->term_pending)
		tx_term(e, qp->dest_qpn, qp->qpn, OVR_TERM_DESTROYED,
			qp->snd_nxt, qp->peer, qp->user, qp, e->now);
	qp_reset(e, qp);
	if (qp->cc.mss && e->cc->release)
		e->cc->release(&qp->cc);
	if (qp->srq)
		qp->srq->nqp--;
	qp->srq = NULL;
	qp_free_queues(qp);
	qp->in_use = false;
	qp->qpn = 0;
	e->nqp--;
	return 0;
}

static int check_attr_values(const struct ovr_eng_qp_attr *a, unsigned int m)
{
	if ((m & OVR_QP_PATH_MTU) && !mtu_bytes(a->path_mtu))
		return -EINVAL;
	if ((m & OVR_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((m & OVR_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((m & OVR_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((m & OVR_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((m & OVR_QP_MAX_QP_RD_ATOMIC) &&
	    a->max_rd_atomic > OVR_ENG_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((m & OVR_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > OVR_ENG_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((m & OVR_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags &
	     ~(OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE |
	       OVR_ACCESS_REMOTE_READ | OVR_ACCESS_REMOTE_ATOMIC)))
		return -EINVAL;
	if ((m & OVR_QP_DEST_QPN) && (a->dest_qp_num & ~M24))
		return -EINVAL;
	if ((m & OVR_QP_CAP))
		return -EINVAL; /* resizing queues is not supported */
	return 0;
}

static void qp_to_rts(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	struct ovr_cc_params p;

	ovr_dp_rtt_init(&qp->rtt, e->cfg.init_rto_ns, e->cfg.min_rto_ns,
			e->cfg.max_rto_ns, 1000);
	if (qp->cc.mss && e->cc->release)
		e->cc->release(&qp->cc);
	memset(&qp->cc, 0, sizeof(qp->cc));
	p.mss = qp->seg;
	p.max_cwnd_bytes = e->cfg.window_pkts * PKT_COST(qp->seg);
	/* default: an eighth of the PSN window, so that a loss (which holds
	 * snd_una back for about an RTT) does not close the window */
	p.init_cwnd_bytes = e->cfg.cc_init_cwnd ?
				    e->cfg.cc_init_cwnd :
				    e->cfg.window_pkts / 8 * PKT_COST(qp->seg);
	if (p.init_cwnd_bytes > p.max_cwnd_bytes)
		p.init_cwnd_bytes = p.max_cwnd_bytes;
	p.line_rate_bps = e->cfg.line_rate_bps;
	p.base_rtt_ns = e->cfg.base_rtt_ns;
	p.hops = 0;
	p.now_ns = now;
	qp->cc.mss = qp->seg;
	e->cc->init(&qp->cc, &p);
	if (!qp->cc.mss)
		qp->cc.mss = qp->seg;
	qp->last_progress_ns = now;
}

int ovr_eng_qp_modify(struct ovr_eng *e, uint32_t qpn,
		      const struct ovr_eng_qp_attr *a, unsigned int mask,
		      uint64_t now_ns)
{
	struct eng_qp *qp = qp_get(e, qpn);
	uint32_t cur, next;

	if (!qp || !a)
		return -EINVAL;
	cur = qp->state;
	if ((mask & OVR_QP_CUR_STATE) && a->cur_qp_state != cur)
		return -EINVAL;
	next = (mask & OVR_QP_STATE) ? a->qp_state : cur;
	if (next > OVR_QPS_ERR)
		return -EINVAL;
	if (ovr_qp_modify_check(qp->type == OVR_QPT_UD ? OVR_QPT_UD :
							 OVR_QPT_RC,
				cur, next, mask))
		return -EINVAL;
	if (check_attr_values(a, mask))
		return -EINVAL;

	if (next == OVR_QPS_RESET) {
		qp_reset(e, qp);
		qp->state = OVR_QPS_RESET;
		return 0;
	}
	if (next == OVR_QPS_ERR) {
		qp_deactivate(qp);
		qp_error_local(e, qp, qp->sq_cons, OVR_WC_WR_FLUSH_ERR, 0);
		return 0;
	}
	if (cur == OVR_QPS_RESET)
		qp_reset(e, qp);
	if (mask & OVR_QP_ACCESS_FLAGS)
		qp->access = a->qp_access_flags;
	if (mask & OVR_QP_QKEY)
		qp->qkey = a->qkey;
	if (mask & OVR_QP_AV)
		qp->peer = a->peer;
	if (mask & OVR_QP_PATH_MTU) {
		qp->mtu = a->path_mtu;
		qp->seg = min32(mtu_bytes(a->path_mtu), e->max_seg);
	}
	if (mask & OVR_QP_DEST_QPN)
		qp->dest_qpn = a->dest_qp_num;
	if (mask & OVR_QP_RQ_PSN)
		ovr_dp_rxwin_init(&qp->rx, qp->rxbits, e->cfg.window_pkts,
				  a->rq_psn & M24);
	if ((mask & OVR_QP_SQ_PSN) && !qp->psn_adopted) {
		sb_release(e, qp);
		qp->snd_una = qp->snd_nxt = a->sq_psn & M24;
	}
	if (mask & OVR_QP_TIMEOUT)
		qp->timeout = a->timeout;
	if (mask & OVR_QP_RETRY_CNT)
		qp->retry_cnt = a->retry_cnt;
	if (mask & OVR_QP_RNR_RETRY)
		qp->rnr_retry = a->rnr_retry;
	if (mask & OVR_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = a->min_rnr_timer;
	if (mask & OVR_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = a->max_rd_atomic;
	if (mask & OVR_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (next == OVR_QPS_RTS && cur == OVR_QPS_RTR &&
	    qp->type == OVR_QPT_RC && !qp->psn_adopted)
		qp_to_rts(e, qp, now_ns);
	if (next == OVR_QPS_SQD) {
		qp->sqd_notify = mask & OVR_QP_EN_SQD_ASYNC_NOTIFY;
		qp->sqd_drained = false;
	}
	qp->state = next;
	qp->st.state = next;
	if (next == OVR_QPS_SQD)
		sq_complete(e, qp); /* may be drained already */
	qp_activate(e, qp);
	return 0;
}

int ovr_eng_qp_query(struct ovr_eng *e, uint32_t qpn, struct ovr_eng_qp_attr *a)
{
	struct eng_qp *qp = qp_get(e, qpn);

	if (!qp || !a)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->qp_state = a->cur_qp_state = qp->state;
	a->path_mtu = qp->mtu;
	a->qp_access_flags = qp->access;
	a->dest_qp_num = qp->dest_qpn;
	a->rq_psn = qp->rx.ack_psn;
	a->sq_psn = qp->snd_nxt;
	a->qkey = qp->qkey;
	a->peer = qp->peer;
	a->timeout = qp->timeout;
	a->retry_cnt = qp->retry_cnt;
	a->rnr_retry = qp->rnr_retry;
	a->min_rnr_timer = qp->min_rnr_timer;
	a->max_rd_atomic = qp->max_rd_atomic;
	a->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	a->sq_draining = qp->state == OVR_QPS_SQD && qp->sq_cons != qp->sq_next;
	a->cap = qp->cap;
	return 0;
}

int ovr_eng_qp_stats(struct ovr_eng *e, uint32_t qpn,
		     struct ovr_eng_qp_stats *st)
{
	struct eng_qp *qp = qp_get(e, qpn);

	if (!qp || !st)
		return -EINVAL;
	*st = qp->st;
	st->state = qp->state;
	st->snd_una = qp->snd_una;
	st->snd_nxt = qp->snd_nxt;
	st->rcv_nxt = qp->rx.ack_psn;
	st->inflight_pkts = (qp->snd_nxt - qp->snd_una) & M24;
	st->cwnd_bytes = qp->cc.cwnd_bytes;
	st->rate_bps = qp->cc.rate_bps;
	st->srtt_ns = qp->rtt.srtt_ns;
	st->rto_ns = qp->rtt.rto_ns;
	return 0;
}

/* ---- posting ---------------------------------------------------------------- */

static bool is_q0(uint8_t op)
{
	return op == OVR_WR_SEND || op == OVR_WR_SEND_WITH_IMM ||
	       op == OVR_WR_SEND_WITH_INV || op == OVR_WR_RDMA_WRITE_WITH_IMM;
}

static bool is_q1(uint8_t op)
{
	return op == OVR_WR_RDMA_READ || op == OVR_WR_ATOMIC_CMP_AND_SWP ||
	       op == OVR_WR_ATOMIC_FETCH_AND_ADD;
}

int ovr_eng_post_send(struct ovr_eng *e, uint32_t qpn,
		      const struct ovr_eng_send_wr *wr, uint64_t now_ns)
{
	struct eng_qp *qp = qp_get(e, qpn);
	struct eng_swqe *w;
	struct eng_lsge *s;
	uint64_t total = 0;
	uint32_t idx, i;
	bool inl, atomic;

	if (!qp || !wr)
		return EINVAL;
	if (qp->state < OVR_QPS_RTS)
		return EINVAL;
	if (qp->type == OVR_QPT_UD && wr->opcode != OVR_WR_SEND &&
	    wr->opcode != OVR_WR_SEND_WITH_IMM)
		return EINVAL;
	switch (wr->opcode) {
	case OVR_WR_RDMA_WRITE:
	case OVR_WR_RDMA_WRITE_WITH_IMM:
	case OVR_WR_SEND:
	case OVR_WR_SEND_WITH_IMM:
	case OVR_WR_SEND_WITH_INV:
	case OVR_WR_RDMA_READ:
	case OVR_WR_ATOMIC_CMP_AND_SWP:
	case OVR_WR_ATOMIC_FETCH_AND_ADD:
		break;
	default:
		return EINVAL;
	}
	if (wr->num_sge > qp->cap.max_send_sge || (wr->num_sge && !wr->sg_list))
		return EINVAL;
	if (wr->send_flags & ~(unsigned)(OVR_SEND_FENCE | OVR_SEND_SIGNALED |
					 OVR_SEND_SOLICITED | OVR_SEND_INLINE))
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > OVR_WIRE_MAX_MSG)
		return EINVAL;
	atomic = wr->opcode == OVR_WR_ATOMIC_CMP_AND_SWP ||
		 wr->opcode == OVR_WR_ATOMIC_FETCH_AND_ADD;
	if (atomic && (wr->num_sge != 1 || total != 8))
		return EINVAL;
	inl = (wr->send_flags & OVR_SEND_INLINE) && !is_q1(wr->opcode);
	if (inl && total > qp->cap.max_inline_data)
		return EINVAL;
	if (qp->sq_prod - qp->sq_cons > qp->sq_mask)
		return ENOMEM;

	idx = qp->sq_prod;
	w = &qp->sq[idx & qp->sq_mask];
	s = swqe_sge(qp, idx);
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = (uint8_t)wr->opcode;
	w->flags = (uint8_t)wr->send_flags;
	w->len = (uint32_t)total;
	w->rkey = wr->rkey;
	w->raddr = wr->remote_addr;
	w->imm = wr->opcode == OVR_WR_SEND_WITH_INV ? wr->invalidate_rkey :
						      wr->imm_data;
	w->cmp_add = wr->compare_add;
	w->swap = wr->swap;
	if (qp->type == OVR_QPT_UD) {
		w->raddr = wr->ud_peer;
		w->rkey = wr->remote_qpn & M24;
		/* verbs' controlled qkey: the high bit means "the QP's" */
		w->cmp_add = wr->remote_qkey & 0x80000000u ? qp->qkey :
							     wr->remote_qkey;
	}
	w->state = W_QUEUED;
	if (inl) {
		uint8_t *d = qp->sinl + (size_t)(idx & qp->sq_mask) *
						qp->cap.max_inline_data;

		/* the application's buffer is copied now; no key involved */
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(d, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			d += wr->sg_list[i].length;
		}
		w->inl = 1;
	} else {
		unsigned int need = is_q1(wr->opcode) ? OVR_ACCESS_LOCAL_WRITE :
							0;

		for (i = 0; i < wr->num_sge; i++) {
			const struct ovr_eng_sge *g = &wr->sg_list[i];
			struct ovr_mr_loc loc;

			s[i].len = g->length;
			s[i].key = 0;
			s[i].host = NULL;
			s[i].dev = NULL;
			if (!g->length)
				continue;
			if (ovr_mr_check_dev(e->mrs, g->lkey, qp->pd, g->addr,
					     g->length, need, &loc) ||
			    ovr_mr_get(e->mrs, g->lkey)) {
				w->state = W_LOCERR;
				w->status = OVR_WC_LOC_PROT_ERR;
				break;
			}
			set_lsge(&s[i], &loc);
			s[i].key = g->lkey;
			w->nsge = (uint8_t)(i + 1);
		}
		if (w->state != W_LOCERR)
			w->nsge = (uint8_t)wr->num_sge;
	}
	/*
	 * A remote range that wraps the address space lies in no region of
	 * the peer's (and no PDU may carry it, docs/WIRE.md ERANGE): what the
	 * responder would answer is known here, REM_ACCESS_ERR when the WR
	 * reaches the head (the PDU builder would refuse it forever).
	 */
	if (w->state != W_LOCERR && qp->type == OVR_QPT_RC &&
	    (wr->opcode == OVR_WR_RDMA_WRITE ||
	     wr->opcode == OVR_WR_RDMA_WRITE_WITH_IMM ||
	     wr->opcode == OVR_WR_RDMA_READ || atomic)) {
		uint64_t rlen = atomic ? 8 : total;

		if (rlen && wr->remote_addr + (rlen - 1) < wr->remote_addr) {
			w->state = W_LOCERR;
			w->status = OVR_WC_REM_ACCESS_ERR;
		}
	}
	if (w->state != W_LOCERR) {
		if (is_q0(w->opcode))
			w->msn = qp->q0_msn++;
		else if (is_q1(w->opcode))
			w->msn = qp->q1_msn++;
	}
	qp->sq_prod++;
	if (qp->state == OVR_QPS_ERR || qp->state == OVR_QPS_SQE) {
		/* verbs: a WR posted to a QP in ERROR completes flushed */
		complete_send(e, qp, idx, OVR_WC_WR_FLUSH_ERR, 0, true);
		qp->sq_cons = qp->sq_next = qp->sq_prod;
		return 0;
	}
	(void)now_ns;
	qp_activate(e, qp);
	/* a WR that failed its checks completes when it is the oldest: now,
	 * if it is (an idle QP may hear nothing that would run sq_complete) */
	if (w->state == W_LOCERR && idx == qp->sq_cons)
		sq_complete(e, qp);
	return 0;
}

static uint32_t credit_of(const struct eng_qp *qp)
{
	return qp->rq_msn + (qp->rq_prod - qp->rq_cons);
}

int ovr_eng_post_recv(struct ovr_eng *e, uint32_t qpn,
		      const struct ovr_eng_recv_wr *wr, uint64_t now_ns)
{
	struct eng_qp *qp = qp_get(e, qpn);
	uint64_t total = 0;
	uint32_t idx, i;

	(void)now_ns;
	if (!qp || !wr || qp->srq)
		return EINVAL;
	if (qp->state == OVR_QPS_RESET)
		return EINVAL;
	if (wr->num_sge > qp->cap.max_recv_sge || (wr->num_sge && !wr->sg_list))
		return EINVAL;
	if (qp->rq_prod - qp->rq_cons > qp->rq_mask)
		return ENOMEM;
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > OVR_WIRE_MAX_MSG)
		return EINVAL;
	idx = qp->rq_prod;
	rwqe_fill(e, qp->pd, &qp->rq[idx & qp->rq_mask], rwqe_sge(qp, idx), wr,
		  (uint32_t)total);
	qp->rq_prod++;
	if (qp->state == OVR_QPS_ERR) {
		complete_recv(e, qp, idx, OVR_WC_WR_FLUSH_ERR, 0);
		qp->rq_cons = qp->rq_prod;
		return 0;
	}
	/* A peer that ran out of credit learns at once that it may go on. */
	if (qp->state >= OVR_QPS_RTR && qp->rq_prod - qp->rq_cons == 1 &&
	    qp->type == OVR_QPT_RC) {
		qp->ack_now = true;
		qp_activate(e, qp);
	}
	return 0;
}

/* ---- transmit ----------------------------------------------------------- */

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
static uint32_t ts_echo(const struct eng_qp *qp)
{
	return qp->ts_fresh ? qp->ts_recent : 0;
}

static void hdr_init(struct eng_qp *qp, struct ovr_wire_pkt *p, uint8_t op,
		     uint64_t now)
{
	memset(p, 0, sizeof(*p));
	p->version = OVR_WIRE_VERSION;
	p->opcode = op;
	p->dqpn = qp->dest_qpn;
	p->sqpn = qp->qpn;
	p->tsval = ts_of(now);
	p->payload = NULL;
	p->payload_len = 0;
	if (qp->state >= OVR_QPS_RTR) {
		p->flags = OVR_F_ACK;
		p->ack_psn = qp->rx.ack_psn;
		p->tsecr = ts_echo(qp);
		/* an SRQ's receives are not this QP's to promise (IB's SRQ
		 * responders send no end-to-end credit either): the peer
		 * sends and learns from an RNR NAK */
		if (!qp->srq) {
			p->flags |= OVR_F_CREDIT;
			p->credit = credit_of(qp);
		}
	}
}

/* Build @p's headers in a fresh buffer, fill the payload with @fill, seal
 * and hand it out. Returns false when no buffer was available. */
typedef bool (*fill_fn)(struct ovr_eng *e, struct eng_qp *qp, uint8_t *dst,
			uint32_t off, uint32_t len, uint32_t idx);

static bool tx_pdu(struct ovr_eng *e, struct eng_qp *qp, struct ovr_wire_pkt *p,
		   fill_fn fill, uint32_t off, uint32_t idx)
{
	void *tok = NULL;
	uint8_t *buf = e->ops.tx_alloc(e->ctx, e->cfg.max_pdu, &tok);
	int h;

	if (!buf) {
		e->st.tx_nobuf++;
		return false;
	}
	h = ovr_wire_build_hdr(p, buf, e->cfg.max_pdu); /* counts the CRC */
	if (ovr_unlikely(h < 0)) {
		/* a bug, not an input problem: never send a bad PDU */
		e->st.tx_nobuf++;
		tx_out(e, qp->qpn, tok, buf, 0, false, qp->peer, qp->user);
		return false;
	}
	if (p->payload_len && !fill(e, qp, buf + h, off, p->payload_len, idx)) {
		/* a device copy failed: fill() has failed the QP */
		tx_out(e, qp->qpn, tok, buf, 0, false, qp->peer, qp->user);
		return false;
	}
	/* sealed when it leaves: the payload may still be on its way */
	tx_out(e, qp->qpn, tok, buf, (uint32_t)h + p->payload_len, true,
	       qp->peer, qp->user);
	e->st.tx_pkts++;
	qp->st.tx_pkts++;
	qp->st.tx_bytes += p->payload_len;
	if (p->flags & OVR_F_ACK) {
		qp->unacked = 0;
		qp->ack_at = 0;
		if (qp->rx.hi_psn == qp->rx.ack_psn)
			qp->ack_now = false;
		/* sent: a NAK's echo is that of the packet it refuses */
		if (p->opcode != OVR_OP_NAK)
			qp->ts_fresh = false;
	}
	return true;
}

static bool fill_req(struct ovr_eng *e, struct eng_qp *qp, uint8_t *dst,
		     uint32_t off, uint32_t len, uint32_t idx)
{
	struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];

	if (w->inl) {
		memcpy(dst,
		       qp->sinl +
			       (size_t)(idx & qp->sq_mask) *
				       qp->cap.max_inline_data +
			       off,
		       len);
		return true;
	}
	if (sge_read(e, qp, swqe_sge(qp, idx), w->nsge, off, dst, len, w->len))
		return true;
	/* the source could not be read: this WR fails, the QP with it */
	qp_error_local(e, qp, idx, OVR_WC_LOC_QP_OP_ERR, 0);
	return false;
}

static bool fill_resp(struct ovr_eng *e, struct eng_qp *qp, uint8_t *dst,
		      uint32_t off, uint32_t len, uint32_t idx)
{
	struct eng_rdq *q = &qp->rdq[idx];

	if (!q->dev) {
		memcpy(dst, q->host + off, len);
		return true;
	}
	if (dev_copy(e, qp, q->psn, q->dev, q->dev_off + off, dst, len, false,
		     q->len))
		return true;
	qp_fatal_nak(e, qp, OVR_NAK_REM_OP, q->psn);
	return false;
}

static uint8_t wire_op_of(uint8_t wr_op)
{
	return wr_map[wr_op].wire;
}

/* (Re)send the request segment of SQ slot @idx at offset @off. */
static bool tx_req_seg(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx,
		       uint32_t off, uint32_t len, uint32_t psn, bool retx,
		       uint64_t now)
{
	struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];
	struct ovr_wire_pkt p;
	bool last = off + len == w->len;

	hdr_init(qp, &p, wire_op_of(w->opcode), now);
	p.psn = psn;
	if (retx)
		p.flags |= OVR_F_RETX;
	if (last)
		p.flags |= OVR_F_LAST;
	p.payload_len = len;
	switch (w->opcode) {
	case OVR_WR_SEND:
	case OVR_WR_SEND_WITH_IMM:
	case OVR_WR_SEND_WITH_INV:
		p.u.send.msn = w->msn;
		p.u.send.mo = off;
		p.u.send.msg_len = w->len;
		if (w->opcode == OVR_WR_SEND_WITH_IMM)
			p.u.send.imm = w->imm;
		if (w->opcode == OVR_WR_SEND_WITH_INV)
			p.u.send.inv_rkey = w->imm;
		if (last && (w->flags & OVR_SEND_SOLICITED))
			p.flags |= OVR_F_SE;
		break;
	case OVR_WR_RDMA_WRITE:
	case OVR_WR_RDMA_WRITE_WITH_IMM:
		p.u.write.rkey = w->rkey;
		p.u.write.msg_len = w->len;
		p.u.write.va = w->raddr;
		p.u.write.mo = off;
		if (w->opcode == OVR_WR_RDMA_WRITE_WITH_IMM) {
			p.u.write.msn = w->msn;
			p.u.write.imm = w->imm;
			if (last && (w->flags & OVR_SEND_SOLICITED))
				p.flags |= OVR_F_SE;
		}
		break;
	case OVR_WR_RDMA_READ:
		p.flags |= OVR_F_LAST;
		p.payload_len = 0;
		p.u.rreq.rkey = w->rkey;
		p.u.rreq.len = w->len;
		p.u.rreq.va = w->raddr;
		p.u.rreq.msn = w->msn;
		break;
	default:
		p.flags |= OVR_F_LAST;
		p.payload_len = 0;
		p.u.areq.rkey = w->rkey;
		p.u.areq.msn = w->msn;
		p.u.areq.va = w->raddr;
		if (w->opcode == OVR_WR_ATOMIC_CMP_AND_SWP) {
			p.u.areq.compare = w->cmp_add;
			p.u.areq.swap_add = w->swap;
		} else {
			p.u.areq.swap_add = w->cmp_add;
		}
		break;
	}
	return tx_pdu(e, qp, &p, fill_req, off, idx);
}

static bool tx_resp_seg(struct ovr_eng *e, struct eng_qp *qp, uint32_t slot,
			uint32_t off, uint32_t len, uint32_t psn, bool retx,
			uint64_t now)
{
	struct eng_rdq *q = &qp->rdq[slot];
	struct ovr_wire_pkt p;
	struct ovr_mr_loc loc;

	/*
	 * READ data is read as it is sent (and again when resent), from the
	 * pointer resolved at execution: valid only while the region is. A
	 * region deregistered meanwhile (the service unmaps it at once) ends
	 * the READ as one deregistered before it arrived would have: NAK
	 * REM_ACCESS naming the request, ERROR. The requester finds the
	 * request by its PSN although it was acknowledged (on_nak), and asks
	 * again if this NAK is lost (rsp_probe).
	 */
	if (q->opcode == OVR_OP_READ_REQ && len &&
	    ovr_mr_check_dev(e->mrs, q->rkey, qp->pd, q->va + off, len,
			     OVR_ACCESS_REMOTE_READ, &loc)) {
		e->st.mr_revoked++;
		qp_fatal_nak(e, qp, OVR_NAK_REM_ACCESS, q->psn);
		return false;
	}
	hdr_init(qp, &p,
		 q->opcode == OVR_OP_READ_REQ ? OVR_OP_READ_RESP :
						OVR_OP_ATOMIC_RESP,
		 now);
	p.psn = psn;
	if (retx)
		p.flags |= OVR_F_RETX;
	if (q->opcode == OVR_OP_READ_REQ) {
		p.u.rresp.msn = q->msn;
		p.u.rresp.mo = off;
		p.u.rresp.msg_len = q->len;
		p.payload_len = len;
		if (off + len == q->len)
			p.flags |= OVR_F_LAST;
	} else {
		p.u.aresp.msn = q->msn;
		p.u.aresp.orig = q->orig;
		p.flags |= OVR_F_LAST;
	}
	return tx_pdu(e, qp, &p, fill_resp, off, slot);
}

static void send_ack(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	struct ovr_dp_sack blk[OVR_WIRE_MAX_SACK];
	struct ovr_wire_pkt p;
	unsigned int n, i;

	hdr_init(qp, &p, OVR_OP_ACK, now);
	n = ovr_dp_rxwin_sack(&qp->rx, blk, OVR_WIRE_MAX_SACK);
	p.u.ack.ce_count = qp->ce_count;
	p.u.ack.nsack = (uint8_t)n;
	for (i = 0; i < n; i++) {
		p.u.ack.sack[i].start = blk[i].start;
		p.u.ack.sack[i].end = blk[i].end;
	}
	if (tx_pdu(e, qp, &p, NULL, 0, 0)) {
		qp->st.acks_sent++;
		qp->ack_now = false;
		qp->ack_at = 0;
		qp->unacked = 0;
	}
}

static void send_nak(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	struct ovr_wire_pkt p;
	uint32_t state = qp->state;

	/* a NAK always carries the receive state, even from ERROR */
	if (state == OVR_QPS_ERR)
		qp->state = OVR_QPS_RTR;
	hdr_init(qp, &p, OVR_OP_NAK, now);
	qp->state = state;
	p.ack_psn = qp->nak_psn;
	/* the refused packet was not received: ts_recent may be the echo
	 * of one long ago, which would give the peer a bogus RTT sample */
	p.tsecr = qp->nak_ts;
	p.u.nak.code = qp->nak_code;
	p.u.nak.rnr_timer = qp->nak_code == OVR_NAK_RNR ? qp->nak_timer : 0;
	if (tx_pdu(e, qp, &p, NULL, 0, 0)) {
		if (qp->nak_code == OVR_NAK_RNR)
			qp->st.rnr_naks_sent++;
		qp->nak_code = 0;
	}
}

/*
 * Send a TERMINATE from QPN @sqpn to @dqpn at @peer (docs/WIRE.md §3.11).
 * From a QP (@ackq) it also acknowledges everything that QP received
 * (F_ACK, ack_psn), so that the peer's work requests that did arrive
 * complete successfully even when the QP goes away before its delayed
 * ACK. Returns false when no buffer was free.
 */
static bool tx_term(struct ovr_eng *e, uint32_t dqpn, uint32_t sqpn,
		    uint8_t reason, uint32_t psn, uint64_t peer, uint64_t user,
		    const struct eng_qp *ackq, uint64_t now)
{
	struct ovr_wire_pkt p;
	void *tok = NULL;
	uint8_t *buf;
	int h;

	memset(&p, 0, sizeof(p));
	p.version = OVR_WIRE_VERSION;
	p.opcode = OVR_OP_TERMINATE;
	p.dqpn = dqpn & M24;
	p.sqpn = sqpn & M24;
	p.tsval = ts_of(now);
	p.u.term.reason = reason;
	p.u.term.psn = psn & M24;
	if (ackq && ackq->state >= OVR_QPS_RTR) {
		p.flags = OVR_F_ACK;
		p.ack_psn = ackq->rx.ack_psn & M24;
	}
	buf = e->ops.tx_alloc(e->ctx, e->cfg.max_pdu, &tok);
	if (!buf) {
		e->st.tx_nobuf++;
		return false;
	}
	h = ovr_wire_build_hdr(&p, buf, e->cfg.max_pdu);
	tx_out(e, ackq ? ackq->qpn : 0, tok, buf, h < 0 ? 0 : (uint32_t)h, true,
	       peer, user);
	if (h < 0)
		return false;
	e->st.tx_pkts++;
	e->st.tx_term++;
	return true;
}

/* Take a token for a TERMINATE answer (cfg.term_rate per second, bursts
 * of cfg.term_burst); false when the bucket is empty. */
static bool term_token(struct ovr_eng *e, uint64_t now)
{
	uint64_t rate = e->cfg.term_rate, n;

	if (rate && now > e->term_refill_ns) {
		n = (now - e->term_refill_ns) * rate / 1000000000ull;
		if (n) {
			if (e->term_tokens + n >= e->cfg.term_burst) {
				e->term_tokens = e->cfg.term_burst;
				e->term_refill_ns = now;
			} else {
				e->term_tokens += (uint32_t)n;
				e->term_refill_ns += n * 1000000000ull / rate;
			}
		}
	}
	if (!e->term_tokens) {
		e->st.term_limited++;
		return false;
	}
	e->term_tokens--;
	return true;
}

static void arm_timers(struct eng_qp *qp, uint64_t now, uint64_t ack_delay)
{
	uint32_t inflight = (qp->snd_nxt - qp->snd_una) & M24;

	if (!qp->rto_at)
		qp->rto_at = now + qp->rtt.rto_ns;
	if (!qp->tlp_out)
		qp->pto_at = now +
			     ovr_dp_rtt_pto(&qp->rtt, inflight == 1, ack_delay);
}

/* Record a newly sent packet in the scoreboard. */
static void sb_record(struct ovr_eng *e, struct eng_qp *qp, uint32_t psn,
		      uint32_t off, uint32_t len, uint32_t idx, uint8_t flags,
		      uint64_t now)
{
	struct eng_pkt *k = sb_pkt(e, qp, psn);

	k->xmit_ns = now;
	k->off = off;
	k->len = (uint16_t)len;
	k->idx = (uint16_t)idx;
	k->flags = flags | SB_USED;
	k->nretx = 0;
	qp->pipe += PKT_COST(len);
	arm_timers(qp, now, e->cfg.ack_delay_ns);
}

static bool window_open(struct ovr_eng *e, struct eng_qp *qp, uint32_t len)
{
	(void)e;
	/* an empty pipe always lets one packet out, whatever the window */
	return !qp->pipe || qp->pipe + PKT_COST(len) <= qp->cc.cwnd_bytes;
}

static void pace(struct eng_qp *qp, uint32_t len, uint64_t now)
{
	if (!qp->cc.rate_bps)
		return;
	if (qp->next_tx_ns < now)
		qp->next_tx_ns = now;
	qp->next_tx_ns +=
		(uint64_t)(len + 100) * 8 * 1000000000ull / qp->cc.rate_bps;
}

/* Resend the oldest packet marked lost. Returns 1 sent, 0 nothing to do,
 * -1 blocked (window or buffers). */
static int tx_retx(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	uint32_t psn;

	for (psn = qp->snd_una; psn != qp->snd_nxt; psn = PSN_ADD(psn, 1)) {
		struct eng_pkt *k = sb_pkt(e, qp, psn);
		bool ok;

		if (!(k->flags & SB_LOST))
			continue;
		if ((k->flags & SB_RNR) && qp->rnr_wait)
			continue;
		/* the RTO's resend goes whatever the window: the rest of
		 * the flight still counts as in flight until rto_verdict */
		if (!window_open(e, qp, k->len) && !qp->rto_probe)
			return -1;
		if (k->flags & SB_RESP)
			ok = tx_resp_seg(e, qp, k->idx, k->off, k->len, psn,
					 true, now);
		else
			ok = tx_req_seg(e, qp,
					qp->sq_cons + ((k->idx - qp->sq_cons) &
						       qp->sq_mask),
					k->off, k->len, psn, true, now);
		if (!ok)
			return -1;
		k->flags &= (uint8_t) ~(SB_LOST | SB_RNR);
		k->xmit_ns = now;
		qp->rto_probe = false;
		if (k->nretx < 255)
			k->nretx++;
		qp->nlost--;
		qp->pipe += PKT_COST(k->len);
		qp->st.retx_pkts++;
		e->st.retx_pkts++;
		pace(qp, k->len, now);
		arm_timers(qp, now, e->cfg.ack_delay_ns);
		return 1;
	}
	return 0;
}

/*
 * A QP in RTR answers READs and atomics (verbs: the responder works from
 * RTR on; perftest's ib_read_bw / ib_atomic_bw servers never leave RTR),
 * but its responses are numbered in its own send PSN space, which starts
 * at the sq_psn that only RTR->RTS gives. The peer's packets name that
 * start: their cumulative ack_psn is the next PSN the peer expects from
 * this QP, and before this QP has sent anything that is the sq_psn the
 * peer was told (its rq_psn). So the first packet heard in RTR sets the
 * send PSN space, and starts the clocks and the congestion state that
 * RTS would have; a later RTS keeps them (its SQ_PSN is the same number
 * when the application is consistent, and responses may be in flight).
 */
static void rtr_adopt_psn(struct ovr_eng *e, struct eng_qp *qp,
			  const struct ovr_wire_pkt *p, uint64_t now)
{
	if (qp->type != OVR_QPT_RC || !(p->flags & OVR_F_ACK) || qp->sb ||
	    qp->snd_una != qp->snd_nxt)
		return;
	qp->snd_una = qp->snd_nxt = p->ack_psn & M24;
	qp_to_rts(e, qp, now);
	qp->psn_adopted = true;
}

/* Send the next segment of a pending READ / atomic response. */
static int tx_resp(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	uint32_t slot, len, psn;
	struct eng_rdq *q;

	if (qp->rd_send_msn == qp->rd_exec_msn)
		return 0;
	slot = qp->rd_send_msn & (OVR_ENG_MAX_RD_ATOMIC - 1);
	q = &qp->rdq[slot];
	if (q->state != RD_READY)
		return 0;
	if (ovr_wire_psn_diff(qp->snd_nxt, qp->snd_una) >=
	    (int32_t)e->cfg.window_pkts)
		return -1;
	len = q->opcode == OVR_OP_READ_REQ ? min32(qp->seg, q->len - q->sent) :
					     0;
	if (!window_open(e, qp, len) || !sb_acquire(e, qp, now))
		return -1;
	psn = qp->snd_nxt;
	if (!tx_resp_seg(e, qp, slot, q->sent, len, psn, false, now))
		return -1;
	qp->snd_nxt = PSN_ADD(psn, 1);
	q->sent += len;
	q->last_psn = psn;
	sb_record(e, qp, psn, q->sent - len, len, slot,
		  SB_RESP | (q->sent == q->len ? SB_LAST : 0), now);
	pace(qp, len, now);
	if (q->sent == q->len) {
		q->state = RD_SENT;
		qp->rd_send_msn++;
	}
	return 1;
}

/* Start or continue the request at sq_next. */
static int tx_req(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	struct eng_swqe *w;
	uint32_t idx, len, psn;

	if (qp->sq_next == qp->sq_prod)
		return 0;
	idx = qp->sq_next;
	w = &qp->sq[idx & qp->sq_mask];
	if (w->state == W_LOCERR)
		return 0; /* completes with its error once it is the oldest */
	if (qp->rnr_wait || qp->fail_pending)
		return 0;
	if (w->state == W_QUEUED) {
		if (qp->state != OVR_QPS_RTS)
			return 0; /* SQD: nothing new starts */
		if ((w->flags & OVR_SEND_FENCE) && qp->rd_out)
			return 0;
		if (is_q1(w->opcode) &&
		    qp->rd_out >= (qp->max_rd_atomic ? qp->max_rd_atomic : 1u))
			return 0;
		if (is_q0(w->opcode) && qp->credit_valid &&
		    (int32_t)(w->msn - qp->peer_credit) >= 0) {
			/* no receive posted at the peer, as far as we know:
			 * wait, then probe (the peer NAKs RNR if still none) */
			uint64_t probe = 2 * qp->rtt.srtt_ns;

			if (probe < 20000)
				probe = 20000;
			if (!qp->credit_wait_since) {
				qp->credit_wait_since = now;
				return 0;
			}
			if (now < qp->credit_wait_since + probe)
				return 0;
		}
	}
	if (ovr_wire_psn_diff(qp->snd_nxt, qp->snd_una) >=
	    (int32_t)e->cfg.window_pkts)
		return -1;
	len = is_q1(w->opcode) ? 0 : min32(qp->seg, w->len - w->sent);
	if (!window_open(e, qp, len) || !sb_acquire(e, qp, now))
		return -1;
	psn = qp->snd_nxt;
	if (!tx_req_seg(e, qp, idx, w->sent, len, psn, false, now))
		return -1;
	if (w->state == W_QUEUED) {
		w->state = W_SENDING;
		qp->credit_wait_since = 0;
		if (is_q1(w->opcode)) {
			qp->rd_out++;
			qp->rdw[w->msn & (OVR_ENG_MAX_RD_ATOMIC - 1)] = idx;
		}
	}
	qp->snd_nxt = PSN_ADD(psn, 1);
	w->sent += len;
	if (is_q1(w->opcode) || w->sent == w->len) {
		w->state = W_SENT;
		w->last_psn = psn;
		qp->sq_next++;
	}
	sb_record(e, qp, psn, w->sent - len, len, idx & 0xffff,
		  w->state == W_SENT ? SB_LAST : 0, now);
	pace(qp, len, now);
	return 1;
}

/* ---- unreliable datagrams ------------------------------------------- */

static bool fill_ud(struct ovr_eng *e, struct eng_qp *qp, uint8_t *dst,
		    uint32_t off, uint32_t len, uint32_t idx)
{
	return fill_req(e, qp, dst, off, len, idx);
}

/* Send the datagram of SQ slot @idx; false when no buffer was free. */
static bool tx_ud(struct ovr_eng *e, struct eng_qp *qp, uint32_t idx,
		  uint64_t now)
{
	struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];
	struct ovr_wire_pkt p;
	void *tok = NULL;
	uint8_t *buf;
	int h;

	memset(&p, 0, sizeof(p));
	p.version = OVR_WIRE_VERSION;
	p.opcode = w->opcode == OVR_WR_SEND_WITH_IMM ? OVR_OP_UD_SEND_IMM :
						       OVR_OP_UD_SEND;
	p.flags = OVR_F_LAST | (w->flags & OVR_SEND_SOLICITED ? OVR_F_SE : 0);
	p.dqpn = w->rkey;
	p.sqpn = qp->qpn;
	p.tsval = ts_of(now);
	p.u.ud.qkey = (uint32_t)w->cmp_add;
	p.u.ud.imm = p.opcode == OVR_OP_UD_SEND_IMM ? w->imm : 0;
	p.payload_len = w->len;
	buf = e->ops.tx_alloc(e->ctx, e->cfg.max_pdu, &tok);
	if (!buf) {
		e->st.tx_nobuf++;
		return false;
	}
	h = ovr_wire_build_hdr(&p, buf, e->cfg.max_pdu);
	if (ovr_unlikely(h < 0)) {
		tx_out(e, qp->qpn, tok, buf, 0, false, w->raddr, qp->user);
		return true; /* cannot happen: len <= MTU was checked */
	}
	if (w->len && !fill_ud(e, qp, buf + h, 0, w->len, idx)) {
		/* the source could not be read: fill_req failed the QP */
		tx_out(e, qp->qpn, tok, buf, 0, false, w->raddr, qp->user);
		return true;
	}
	tx_out(e, qp->qpn, tok, buf, (uint32_t)h + w->len, true, w->raddr,
	       qp->user);
	e->st.tx_pkts++;
	qp->st.tx_pkts++;
	qp->st.tx_bytes += w->len;
	return true;
}

/*
 * A UD send WR failed locally: it completes with @status, the rest
 * flush, and the QP goes to SQE (receives go on; modify SQE -> RTS
 * resumes sending), as verbs has it for UD.
 */
static void ud_sq_error(struct ovr_eng *e, struct eng_qp *qp, uint32_t status)
{
	uint32_t i;

	for (i = qp->sq_cons; i != qp->sq_prod; i++)
		complete_send(e, qp, i,
			      i == qp->sq_cons ? status : OVR_WC_WR_FLUSH_ERR,
			      i == qp->sq_cons ? OVR_VERR_LKEY : 0, true);
	qp->sq_cons = qp->sq_next = qp->sq_prod;
	qp->state = OVR_QPS_SQE;
	qp->st.state = OVR_QPS_SQE;
}

/* UD: each WR is one datagram, complete once handed to ops->tx. */
static uint32_t ud_tx(struct ovr_eng *e, struct eng_qp *qp, uint64_t now,
		      uint32_t burst)
{
	uint32_t n = 0;

	while (n < burst && qp->state == OVR_QPS_RTS &&
	       qp->sq_cons != qp->sq_prod) {
		uint32_t idx = qp->sq_cons;
		struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];

		if (w->state == W_LOCERR) {
			ud_sq_error(e, qp, w->status);
			break;
		}
		if (w->len > qp->seg) {
			/* IB C10-93.1.1: no packet, and no error */
			e->st.tx_ud_too_long++;
		} else {
			if (!tx_ud(e, qp, idx, now))
				break;
			n++;
		}
		complete_send(e, qp, idx, OVR_WC_SUCCESS, 0, false);
		qp->sq_next = ++qp->sq_cons;
	}
	return n;
}

/* A datagram for UD QP @qp from @from. */
static void rx_ud(struct ovr_eng *e, struct eng_qp *qp,
		  const struct ovr_wire_pkt *p, uint64_t from)
{
	uint8_t grh[OVR_GRH_LEN];
	struct eng_rwqe *r;
	uint32_t idx;

	if (qp->state < OVR_QPS_RTR || qp->state == OVR_QPS_ERR) {
		e->st.rx_bad_state++;
		return;
	}
	if (p->u.ud.qkey != qp->qkey) {
		e->st.rx_ud_qkey++;
		return;
	}
	if (qp->rq_cons == qp->rq_prod && (!qp->srq || !srq_take(e, qp))) {
		e->st.rx_ud_norecv++;
		return;
	}
	idx = qp->rq_cons++;
	r = rwqe(qp, idx);
	r->last_psn = p->sqpn; /* src_qp of the completion */
	qp->st.rx_pkts++;
	qp->st.rx_bytes += p->payload_len;
	if (r->bad || OVR_GRH_LEN + p->payload_len > r->cap) {
		/* the receive is used up, the datagram dropped; a UD QP
		 * has no connection to fail */
		complete_recv(e, qp, idx, r->bad ? r->bad : OVR_WC_LOC_LEN_ERR,
			      r->bad ? OVR_VERR_LKEY : OVR_VERR_LEN);
		return;
	}
	r->wc_opcode = OVR_WC_RECV;
	r->wc_flags = 0;
	if (e->ops.ud_grh) {
		e->ops.ud_grh(e->ctx, qp->user, from, grh);
		if (!sge_write(e, qp, -1, rwqe_sge(qp, idx), r->nsge, 0, grh,
			       sizeof(grh), OVR_GRH_LEN + p->payload_len)) {
			complete_recv(e, qp, idx, OVR_WC_LOC_QP_OP_ERR, 0);
			return;
		}
		r->wc_flags = OVR_WC_GRH;
	}
	if (!sge_write(e, qp, -1, rwqe_sge(qp, idx), r->nsge, OVR_GRH_LEN,
		       p->payload, p->payload_len,
		       OVR_GRH_LEN + p->payload_len)) {
		/* the datagram is lost with the receive; no connection */
		complete_recv(e, qp, idx, OVR_WC_LOC_QP_OP_ERR, 0);
		return;
	}
	r->msg_len = OVR_GRH_LEN + p->payload_len;
	if (p->opcode == OVR_OP_UD_SEND_IMM) {
		r->imm = p->u.ud.imm;
		r->wc_flags |= OVR_WC_WITH_IMM;
	}
	if (p->flags & OVR_F_SE)
		r->wc_flags |= OVR_WC_SOLICITED;
	complete_recv(e, qp, idx, OVR_WC_SUCCESS, 0);
}

/* Send what this QP may send now, up to @burst packets. */
static uint32_t qp_tx(struct ovr_eng *e, struct eng_qp *qp, uint64_t now,
		      uint32_t burst)
{
	uint32_t n = 0;
	int r;

	if (ovr_unlikely(qp->type == OVR_QPT_UD))
		return ud_tx(e, qp, now, burst);

	if (qp->nak_code) {
		send_nak(e, qp, now);
		n++;
	}
	if (qp->term_pending &&
	    tx_term(e, qp->dest_qpn, qp->qpn, qp->term_reason, qp->snd_nxt,
		    qp->peer, qp->user, qp, now)) {
		qp->term_pending = false;
		n++;
	}
	if (qp->state == OVR_QPS_ERR || qp->state < OVR_QPS_RTR)
		return n;
	while (n < burst) {
		if (qp->cc.rate_bps && now < qp->next_tx_ns)
			break;
		r = 0;
		if (qp->nlost)
			r = tx_retx(e, qp, now);
		if (r == 0)
			r = tx_resp(e, qp, now);
		if (r == 0 && qp->state >= OVR_QPS_RTS)
			r = tx_req(e, qp, now);
		if (r <= 0)
			break;
		n++;
	}
	if (qp->ack_now || (qp->ack_at && now >= qp->ack_at)) {
		send_ack(e, qp, now);
		n++;
	}
	return n;
}

/* ---- acknowledgements and loss detection ----------------------------- */

/*
 * RACK's "most recently sent packet delivered", from a packet that the
 * ACK with timestamp echo @tsecr (0: none) newly acknowledges. For a
 * packet sent more than once the ACK may be for an earlier copy: then it
 * says nothing about the resend and must not move RACK's clock to the
 * resend's time (the later RTT would be short by the time between the
 * copies, and every packet in flight longer than that would be taken
 * for lost: with RTTs that vary by milliseconds, a cascade of spurious
 * resends). The echo is the send time of the newest packet the peer had
 * received: older than the resend means the ACK is for an earlier copy
 * (RFC 8985 §6.2 step 2, with timestamps as Linux uses them). Without
 * an echo, an ACK sooner than min_rtt after the resend is taken for the
 * original's, as RFC 8985 says.
 */
static void rack_update(struct eng_qp *qp, const struct eng_pkt *k,
			uint64_t now, uint32_t tsecr)
{
	if (k->nretx && (tsecr ? (int32_t)(tsecr - ts_of(k->xmit_ns)) < 0 :
				 now - k->xmit_ns < qp->rtt.min_rtt_ns))
		return;
	if (k->xmit_ns >= qp->rack_xmit_ns) {
		qp->rack_xmit_ns = k->xmit_ns;
		qp->rack_rtt_ns = now - k->xmit_ns;
	}
}

static void mark_lost(struct eng_qp *qp, struct eng_pkt *k)
{
	k->flags |= SB_LOST;
	qp->nlost++;
	qp->pipe -= PKT_COST(k->len);
}

/* RACK (RFC 8985 §6.2): a packet sent before the most recently delivered
 * one, by more than the reordering window, is lost. */
static uint32_t rack_detect(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	uint64_t reo = qp->rtt.min_rtt_ns / 4, deadline = 0;
	uint32_t psn, lost = 0;

	qp->reo_at = 0;
	if (!qp->sb || !qp->nsacked)
		return 0;
	for (psn = qp->snd_una; psn != qp->sack_hi && psn != qp->snd_nxt;
	     psn = PSN_ADD(psn, 1)) {
		struct eng_pkt *k = sb_pkt(e, qp, psn);
		uint64_t when;

		if (k->flags & (SB_SACKED | SB_LOST))
			continue;
		if (k->xmit_ns > qp->rack_xmit_ns)
			continue;
		when = k->xmit_ns + qp->rack_rtt_ns + reo;
		if (when <= now) {
			mark_lost(qp, k);
			lost += PKT_COST(k->len);
			qp->st.rack_lost++;
			e->st.rack_lost++;
		} else if (!deadline || when < deadline) {
			deadline = when;
		}
	}
	qp->reo_at = deadline;
	if (lost)
		e->cc->on_loss(&qp->cc, now, lost);
	return lost;
}

/*
 * The first ACK that delivers something after an RTO tells whether the
 * timeout was spurious (the Eifel algorithm, RFC 3522): an echo older
 * than the RTO is the echo of a packet sent before it, so the flight
 * was not lost, only late (on a host whose scheduler stalls a peer for
 * longer than the RTO). on_rto resent only the oldest packet; a
 * spurious timeout ends there (that packet, if not resent yet, goes
 * back in flight). A real one - the echo is the resend's, or there is
 * no echo - marks lost every packet sent before the timeout that is
 * still unacknowledged, as an RTO always did, one round trip later:
 * resending the whole flight at once would, on every spurious timeout,
 * send it twice. The congestion controller hears of the timeout here,
 * and only if it was real (RFC 4015: a spurious timeout says nothing
 * about the path's capacity).
 */
static void rto_verdict(struct ovr_eng *e, struct eng_qp *qp, uint32_t tsecr,
			uint64_t now)
{
	bool spurious = tsecr && (int32_t)(tsecr - ts_of(qp->rto_fired_ns)) < 0;
	uint32_t psn;

	for (psn = qp->snd_una; psn != qp->snd_nxt; psn = PSN_ADD(psn, 1)) {
		struct eng_pkt *k = sb_pkt(e, qp, psn);

		if (spurious) {
			if ((k->flags & (SB_LOST | SB_RNR)) != SB_LOST)
				continue;
			k->flags &= (uint8_t)~SB_LOST;
			qp->nlost--;
			qp->pipe += PKT_COST(k->len);
		} else if (!(k->flags & (SB_SACKED | SB_LOST)) &&
			   k->xmit_ns < qp->rto_fired_ns) {
			mark_lost(qp, k);
		}
	}
	if (spurious) {
		qp->st.rto_spurious++;
		e->st.rto_spurious++;
	} else {
		e->cc->on_timeout(&qp->cc, now);
	}
	qp->rto_fired_ns = 0;
	qp->rto_probe = false;
}

static void sq_complete(struct ovr_eng *e, struct eng_qp *qp);

/* The packet at @psn is acknowledged cumulatively. */
static void pkt_acked(struct eng_qp *qp, struct eng_pkt *k, uint32_t psn)
{
	if ((k->flags & (SB_RESP | SB_LAST)) == (SB_RESP | SB_LAST)) {
		qp->rdq[k->idx].state = RD_FREE;
		while (qp->rd_free_msn != qp->rd_send_msn &&
		       qp->rdq[qp->rd_free_msn & (OVR_ENG_MAX_RD_ATOMIC - 1)]
				       .state == RD_FREE)
			qp->rd_free_msn++;
	}
	if (qp->rnr_tries && psn == qp->rnr_psn)
		qp->rnr_tries = 0;
	k->flags = 0;
}

static void on_ack(struct ovr_eng *e, struct eng_qp *qp,
		   const struct ovr_wire_pkt *p, uint64_t now)
{
	struct ovr_cc_ack ca = { .now_ns = now };
	uint32_t ack = p->ack_psn, psn, delivered = 0;
	uint32_t tsecr = p->opcode == OVR_OP_NAK ? 0 : p->tsecr;
	bool progress = false;

	if (p->flags & OVR_F_CREDIT) {
		if (!qp->credit_valid ||
		    (int32_t)(p->credit - qp->peer_credit) > 0)
			qp->peer_credit = p->credit;
		qp->credit_valid = true;
	}
	if (!qp->sb)
		goto done;
	if (ovr_wire_psn_diff(ack, qp->snd_una) > 0 &&
	    ovr_wire_psn_diff(ack, qp->snd_nxt) <= 0) {
		for (psn = qp->snd_una; psn != ack; psn = PSN_ADD(psn, 1)) {
			struct eng_pkt *k = sb_pkt(e, qp, psn);

			if (k->flags & SB_SACKED) {
				qp->nsacked--;
			} else {
				delivered += PKT_COST(k->len);
				if (k->flags & SB_LOST)
					qp->nlost--;
				else
					qp->pipe -= PKT_COST(k->len);
				rack_update(qp, k, now, tsecr);
			}
			pkt_acked(qp, k, psn);
		}
		qp->snd_una = ack;
		progress = true;
	}
	if (p->opcode == OVR_OP_ACK) {
		for (unsigned int b = 0; b < p->u.ack.nsack; b++) {
			uint32_t s = p->u.ack.sack[b].start;
			uint32_t t = p->u.ack.sack[b].end;

			if (PSN_LT(s, qp->snd_una))
				s = qp->snd_una;
			if (ovr_wire_psn_diff(t, qp->snd_nxt) > 0)
				t = qp->snd_nxt;
			if (!PSN_LT(s, t))
				continue;
			for (psn = s; psn != t; psn = PSN_ADD(psn, 1)) {
				struct eng_pkt *k = sb_pkt(e, qp, psn);

				if (k->flags & SB_SACKED)
					continue;
				k->flags |= SB_SACKED;
				qp->nsacked++;
				delivered += PKT_COST(k->len);
				if (k->flags & SB_LOST) {
					k->flags &=
						(uint8_t) ~(SB_LOST | SB_RNR);
					qp->nlost--;
				} else {
					qp->pipe -= PKT_COST(k->len);
				}
				rack_update(qp, k, now, tsecr);
			}
			if (!qp->nsacked || PSN_LT(qp->sack_hi, t) ||
			    PSN_LT(qp->sack_hi, qp->snd_una))
				qp->sack_hi = t;
		}
		if (qp->nsacked && PSN_LT(qp->sack_hi, qp->snd_una))
			qp->sack_hi = qp->snd_una;
		if (ovr_wire_psn_diff(p->u.ack.ce_count, qp->peer_ce) != 0) {
			uint32_t marks = p->u.ack.ce_count - qp->peer_ce;

			qp->peer_ce = p->u.ack.ce_count;
			ca.ce_count = marks;
			e->cc->on_ecn(&qp->cc, now, marks);
		}
	}
	/*
	 * An RTT sample from every packet - pure ACK or piggybacked on a
	 * request, a response or a SEND - that acknowledges something new
	 * (cumulatively or selectively). Its echo is the send time of the
	 * newest packet the peer had received, echoed only by the first
	 * packet with an ACK after it (ts_echo), so within the peer's
	 * delayed-ACK time: it sends a pure ACK by then if nothing else
	 * goes first. Pure ACKs alone are not enough: a requester that
	 * posts its next READ as soon as the last completes, or a responder
	 * (its READ responses carry the ACK of the request), never sends
	 * one, and its peer's estimator would stay empty or backed off
	 * (TRANSPORT.md §4.1). An ACK that acknowledges nothing new (a
	 * credit update, an answer to a duplicate) gives no sample. NAKs
	 * are sampled in on_nak. The congestion controller still hears the
	 * samples of pure ACKs only, as it always has: a piggybacked one
	 * includes the peer's turnaround (a READ's execution, the
	 * application's reply), which a delay-based controller would read
	 * as queueing.
	 */
	if (delivered && p->tsecr && p->opcode != OVR_OP_NAK) {
		uint32_t rtt = ts_of(now) - p->tsecr;

		if (rtt < 1000000000u) {
			ovr_dp_rtt_sample(&qp->rtt, rtt);
			if (p->opcode == OVR_OP_ACK)
				ca.rtt_ns = rtt;
		}
	}
	if (delivered && qp->rto_fired_ns)
		rto_verdict(e, qp, tsecr, now);
	if (progress) {
		qp->retries = 0;
		qp->last_progress_ns = now;
		qp->tlp_out = false;
		qp->rto_at = qp->pto_at = 0;
	}
	if (delivered) {
		ca.acked_bytes = delivered;
		ca.inflight_bytes = qp->pipe;
		ca.min_rtt_ns = qp->rtt.min_rtt_ns;
		e->cc->on_ack(&qp->cc, &ca);
	}
	rack_detect(e, qp, now);
	if (qp->snd_una == qp->snd_nxt) {
		sb_release(e, qp);
	} else if (progress) {
		arm_timers(qp, now, e->cfg.ack_delay_ns);
	}
done:
	sq_complete(e, qp);
}

/* Find the SQ slot holding request PSN @psn, if it is in flight. */
static bool req_of_psn(struct ovr_eng *e, struct eng_qp *qp, uint32_t psn,
		       uint32_t *idx)
{
	struct eng_pkt *k;

	if (!qp->sb || PSN_LT(psn, qp->snd_una) || !PSN_LT(psn, qp->snd_nxt))
		return false;
	k = sb_pkt(e, qp, psn);
	if (!(k->flags & SB_USED) || (k->flags & SB_RESP))
		return false;
	*idx = qp->sq_cons + ((k->idx - qp->sq_cons) & qp->sq_mask);
	return true;
}

/* The READ / atomic WR, sent and acknowledged but not complete, whose
 * request had PSN @psn. O(WRs outstanding): error paths only. */
static bool q1_of_psn(const struct eng_qp *qp, uint32_t psn, uint32_t *idx)
{
	for (uint32_t i = qp->sq_cons; i != qp->sq_next; i++) {
		const struct eng_swqe *w = &qp->sq[i & qp->sq_mask];

		if (is_q1(w->opcode) && w->state == W_SENT &&
		    w->last_psn == psn) {
			*idx = i;
			return true;
		}
	}
	return false;
}

static void on_nak(struct ovr_eng *e, struct eng_qp *qp,
		   const struct ovr_wire_pkt *p, uint64_t now)
{
	uint32_t psn = p->ack_psn, idx, st;
	struct eng_pkt *k;

	/* the NAK's ack_psn names the refused packet; it acknowledges
	 * nothing else (the refused packet may lie beyond a hole) */
	if (p->tsecr) {
		uint32_t rtt = ts_of(now) - p->tsecr;

		if (rtt < 1000000000u)
			ovr_dp_rtt_sample(&qp->rtt, rtt);
	}
	switch (p->u.nak.code) {
	case OVR_NAK_RNR:
		qp->st.rnr_naks_rcvd++;
		if (!qp->sb || PSN_LT(psn, qp->snd_una) ||
		    !PSN_LT(psn, qp->snd_nxt))
			return;
		k = sb_pkt(e, qp, psn);
		if (k->flags & (SB_SACKED | SB_LOST))
			return;
		if (!qp->rnr_wait) {
			qp->rnr_tries++;
			qp->rnr_psn = psn;
			if (qp->rnr_retry != 7 &&
			    qp->rnr_tries > qp->rnr_retry) {
				if (req_of_psn(e, qp, psn, &idx)) {
					/* it fails once everything before it
					 * has completed; it is not resent */
					k->flags |= SB_SACKED;
					qp->nsacked++;
					qp->pipe -= PKT_COST(k->len);
					if (PSN_LT(qp->sack_hi,
						   PSN_ADD(psn, 1)))
						qp->sack_hi = PSN_ADD(psn, 1);
					qp->fail_pending = true;
					qp->fail_idx = idx;
					qp->fail_status =
						OVR_WC_RNR_RETRY_EXC_ERR;
					qp->fail_verr = OVR_VERR_RNR;
					sq_complete(e, qp);
				}
				return;
			}
			qp->rnr_wait = true;
			qp->rnr_until = now + rnr_ns(p->u.nak.rnr_timer);
		}
		mark_lost(qp, k);
		k->flags |= SB_RNR;
		return;
	case OVR_NAK_SEQ_ERR:
		/* the peer's window is smaller than ours: treat as lost */
		if (qp->sb && !PSN_LT(psn, qp->snd_una) &&
		    PSN_LT(psn, qp->snd_nxt)) {
			k = sb_pkt(e, qp, psn);
			if (!(k->flags & (SB_SACKED | SB_LOST)))
				mark_lost(qp, k);
		}
		return;
	case OVR_NAK_REM_ACCESS:
		st = OVR_WC_REM_ACCESS_ERR;
		break;
	case OVR_NAK_REM_OP:
		st = OVR_WC_REM_OP_ERR;
		break;
	default:
		st = OVR_WC_REM_INV_REQ_ERR;
		break;
	}
	if (!req_of_psn(e, qp, psn, &idx)) {
		int32_t back = ovr_wire_psn_diff(qp->snd_una, psn);

		/*
		 * A request it had accepted (and we saw acknowledged): the
		 * responder could not answer it after all - its region was
		 * deregistered before the response (or a spurious resend of
		 * one we already have) went out (tx_resp_seg). It is in
		 * ERROR: the READs and atomics we still wait for will get no
		 * response. Only a recently acknowledged PSN counts (a
		 * stale or blind NAK does not end the QP).
		 */
		if (qp->state == OVR_QPS_ERR || !qp->rd_out || back <= 0 ||
		    back > (int32_t)e->cfg.window_pkts)
			return;
		sq_complete(e, qp); /* what completed before it */
		if (qp->state != OVR_QPS_ERR && qp->sq_cons != qp->sq_prod)
			qp_error(e, qp, qp->sq_cons, st, p->u.nak.code);
		return;
	}
	/* everything before the refused request was received */
	if (qp->sb) {
		struct ovr_wire_pkt ack = *p;

		ack.opcode = OVR_OP_NAK;
		ack.ack_psn = psn;
		on_ack(e, qp, &ack, now);
	}
	if (qp->state == OVR_QPS_ERR)
		return;
	/*
	 * WRs before it that still wait (for READ / atomic responses the
	 * responder, now in ERROR, will not send) fail with it: the oldest
	 * outstanding WR takes the error, everything after it flushes, so
	 * the application sees verbs' order (no flushed WR before the
	 * error); vendor_err names the NAK.
	 */
	(void)idx;
	qp_error(e, qp, qp->sq_cons, st, p->u.nak.code);
}

/* ---- completions of the send queue --------------------------------- */

static void sq_complete(struct ovr_eng *e, struct eng_qp *qp)
{
	/* (UD WRs complete as they are sent: ud_tx) */
	while (qp->type == OVR_QPT_RC && qp->sq_cons != qp->sq_prod &&
	       qp->state != OVR_QPS_ERR) {
		uint32_t idx = qp->sq_cons;
		struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];

		if (w->state == W_LOCERR) {
			qp_error_local(e, qp, idx, w->status, locerr_verr(w));
			return;
		}
		if (qp->fail_pending && idx == qp->fail_idx) {
			qp_error_local(e, qp, idx, qp->fail_status,
				       qp->fail_verr);
			return;
		}
		if (w->state != W_SENT)
			break;
		if (is_q1(w->opcode)) {
			if (!w->resp_done ||
			    ovr_wire_psn_diff(qp->rx.ack_psn,
					      w->resp_last_psn) <= 0)
				break;
			qp->rd_out--;
		} else if (ovr_wire_psn_diff(qp->snd_una, w->last_psn) <= 0) {
			break;
		}
		complete_send(e, qp, idx, OVR_WC_SUCCESS, 0, false);
		qp->sq_cons++;
	}
	if (qp->state == OVR_QPS_SQD && !qp->sqd_drained &&
	    qp->sq_cons == qp->sq_next) {
		qp->sqd_drained = true;
		if (qp->sqd_notify)
			qp_event(e, qp, OVR_EV_SQ_DRAINED);
	}
}

/* ---- receive side ----------------------------------------------------- */

static struct eng_rwqe *rq_slot(struct ovr_eng *e, struct eng_qp *qp,
				uint32_t msn, uint32_t *idx)
{
	uint32_t k = msn - qp->rq_msn;

	if ((int32_t)k < 0)
		return NULL;
	/* from an SRQ: take receives, in order, up to this message's */
	while (k >= qp->rq_prod - qp->rq_cons)
		if (!qp->srq || !srq_take(e, qp))
			return NULL;
	*idx = qp->rq_cons + k;
	return rwqe(qp, *idx);
}

/* Everything before rx.ack_psn has arrived: release what waited on it. */
static void rx_advance(struct ovr_eng *e, struct eng_qp *qp)
{
	uint32_t ack = qp->rx.ack_psn;
	struct ovr_mr_loc loc;

	if (qp->pend_code && qp->pend_psn == ack) {
		qp_fatal_nak(e, qp, qp->pend_code, qp->pend_psn);
		return;
	}

	/* 1. WRITE tails, oldest first, so the last byte lands last */
	for (;;) {
		struct eng_stash *best = NULL;

		for (unsigned int i = 0; i < OVR_ENG_STASH; i++) {
			struct eng_stash *s = &qp->stash[i];

			if (s->len && PSN_LT(s->psn, ack) &&
			    (!best || PSN_LT(s->psn, best->psn)))
				best = s;
		}
		if (!best)
			break;
		/* the region may have gone since the segment arrived */
		if (!(qp->access & OVR_ACCESS_REMOTE_WRITE) ||
		    ovr_mr_check_dev(e->mrs, best->rkey, qp->pd, best->va,
				     best->len, OVR_ACCESS_REMOTE_WRITE,
				     &loc)) {
			e->st.mr_revoked++;
			qp_fatal_nak(e, qp, OVR_NAK_REM_ACCESS, best->psn);
			return;
		}
		/* a copy of its own: from engine memory, synchronous
		 * whichever way it goes */
		if (!loc_copy(e, qp, best->psn, loc.host, loc.dev, loc.dev_off,
			      best->data, best->len, true, best->len)) {
			qp_fatal_nak(e, qp, OVR_NAK_REM_OP, best->psn);
			return;
		}
		best->len = 0;
	}
	/* 2. READ and atomic requests, in order, exactly once */
	while (qp->rd_exec_msn != qp->rd_next_msn && qp->state != OVR_QPS_ERR) {
		struct eng_rdq *q =
			&qp->rdq[qp->rd_exec_msn & (OVR_ENG_MAX_RD_ATOMIC - 1)];

		if (q->state != RD_PENDING || q->msn != qp->rd_exec_msn ||
		    !PSN_LT(q->psn, ack))
			break;
		loc.host = NULL;
		loc.dev = NULL;
		if (q->opcode == OVR_OP_READ_REQ) {
			if (!(qp->access & OVR_ACCESS_REMOTE_READ) ||
			    (q->len &&
			     ovr_mr_check_dev(e->mrs, q->rkey, qp->pd, q->va,
					      q->len, OVR_ACCESS_REMOTE_READ,
					      &loc))) {
				qp_fatal_nak(e, qp, OVR_NAK_REM_ACCESS, q->psn);
				return;
			}
			q->dev = loc.dev;
			if (loc.dev)
				q->dev_off = loc.dev_off;
			else
				q->host = loc.host;
		} else {
			uint64_t v, nv;

			if (q->va & 7) {
				qp_fatal_nak(e, qp, OVR_NAK_INV_REQ, q->psn);
				return;
			}
			if (!(qp->access & OVR_ACCESS_REMOTE_ATOMIC) ||
			    ovr_mr_check_dev(e->mrs, q->rkey, qp->pd, q->va, 8,
					     OVR_ACCESS_REMOTE_ATOMIC, &loc)) {
				qp_fatal_nak(e, qp, OVR_NAK_REM_ACCESS, q->psn);
				return;
			}
			/*
			 * Device memory: a read-modify-write through two
			 * copies would not be atomic against the GPU's own
			 * accesses, so it is refused (docs/GPU.md).
			 */
			if (loc.dev) {
				e->st.dev_atomic_refused++;
				qp_fatal_nak(e, qp, OVR_NAK_REM_OP, q->psn);
				return;
			}
			memcpy(&v, loc.host, 8);
			q->orig = v;
			if (q->opcode == OVR_OP_ATOMIC_CS)
				nv = v == q->compare ? q->swap_add : v;
			else
				nv = v + q->swap_add;
			memcpy(loc.host, &nv, 8);
		}
		q->state = RD_READY;
		qp->rd_exec_msn++;
	}
	/* 3. receives, in MSN order */
	while (qp->rq_cons != qp->rq_prod && qp->state != OVR_QPS_ERR) {
		struct eng_rwqe *r = rwqe(qp, qp->rq_cons);

		if (!r->have_last || !PSN_LT(r->last_psn, ack))
			break;
		if ((r->wc_flags & OVR_WC_WITH_INV))
			ovr_mr_invalidate(e->mrs, r->imm, qp->pd);
		complete_recv(e, qp, qp->rq_cons, OVR_WC_SUCCESS, 0);
		qp->rq_cons++;
		qp->rq_msn++;
	}
	/* 4. READ / atomic requests of ours whose response is complete */
	sq_complete(e, qp);
}

/* Place the tagged payload of a WRITE segment; false: drop it unmarked. */
static bool place_write(struct ovr_eng *e, struct eng_qp *qp,
			const struct ovr_wire_pkt *p,
			const struct ovr_mr_loc *dst, bool inorder,
			bool *failed)
{
	uint32_t len = p->payload_len, tail;
	struct eng_stash *s = NULL;
	uint8_t *src = (uint8_t *)(uintptr_t)p->payload;

	*failed = false;
	if (!(p->flags & OVR_F_LAST) || inorder || !len) {
		*failed = !loc_copy(e, qp, p->psn, dst->host, dst->dev,
				    dst->dev_off, src, len, true,
				    p->u.write.msg_len);
		return !*failed;
	}
	/* the last segment arrived ahead of others: hold its tail back */
	for (unsigned int i = 0; i < OVR_ENG_STASH; i++)
		if (!qp->stash[i].len) {
			s = &qp->stash[i];
			break;
		}
	if (!s)
		return false;
	tail = min32(len, OVR_ENG_TAIL);
	if (!loc_copy(e, qp, p->psn, dst->host, dst->dev, dst->dev_off, src,
		      len - tail, true, p->u.write.msg_len)) {
		*failed = true;
		return false;
	}
	s->va = p->u.write.va + p->u.write.mo + len - tail;
	s->rkey = p->u.write.rkey;
	s->psn = p->psn;
	memcpy(s->data, p->payload + len - tail, tail);
	s->len = (uint8_t)tail;
	return true;
}

static void schedule_ack(struct ovr_eng *e, struct eng_qp *qp, uint64_t now,
			 bool urgent)
{
	qp->unacked++;
	if (urgent || qp->unacked >= e->cfg.ack_every)
		qp->ack_now = true;
	else if (!qp->ack_at)
		qp->ack_at = now + e->cfg.ack_delay_ns;
}

/*
 * A READ or atomic request we executed came again: the requester's timer
 * ran out before it heard anything that acknowledges the request, which
 * our response would have. If the response's latest packet is still
 * unacknowledged and went out longer ago than the lowest RTT measured -
 * so that it would have reached the requester before the repeat left,
 * had it not been lost - resend it now: a tail-loss probe the requester
 * triggered (its SACK or ACK lets RACK find anything else missing). The
 * response is still ours to recover; this only lets whichever side's
 * timer runs out first start the recovery (in IB the requester's timer
 * is the only one), which matters when ours is the slower: no sample
 * yet, or an estimate the requester's pauses have inflated. It stands in
 * for our own probe: none is sent before the next progress. O(1): the
 * rd slot names its latest packet.
 */
static void resp_probe(struct ovr_eng *e, struct eng_qp *qp,
		       const struct ovr_wire_pkt *p, uint64_t now)
{
	uint32_t msn = p->opcode == OVR_OP_READ_REQ ? p->u.rreq.msn :
						      p->u.areq.msn;
	uint32_t slot = msn & (OVR_ENG_MAX_RD_ATOMIC - 1);
	struct eng_rdq *q = &qp->rdq[slot];
	struct eng_pkt *k;

	if (!qp->sb || q->msn != msn || q->psn != p->psn ||
	    !(q->state == RD_SENT || (q->state == RD_READY && q->sent)))
		return;
	if (PSN_LT(q->last_psn, qp->snd_una) ||
	    !PSN_LT(q->last_psn, qp->snd_nxt))
		return; /* acknowledged (or never sent: a bug) */
	k = sb_pkt(e, qp, q->last_psn);
	if ((k->flags & (SB_USED | SB_RESP)) != (SB_USED | SB_RESP) ||
	    k->idx != slot || (k->flags & (SB_SACKED | SB_LOST)) ||
	    now - k->xmit_ns < qp->rtt.min_rtt_ns)
		return;
	mark_lost(qp, k);
	qp->tlp_out = true;
	qp->pto_at = 0;
	if (!qp->rto_at)
		qp->rto_at = now + qp->rtt.rto_ns;
	qp->st.resp_probes++;
}

/* A sequenced packet from the peer. */
static void rx_seq(struct ovr_eng *e, struct eng_qp *qp,
		   const struct ovr_wire_pkt *p, uint64_t now, bool ce)
{
	enum ovr_dp_rx_verdict v = ovr_dp_rxwin_peek(&qp->rx, p->psn);
	struct eng_rwqe *r = NULL;
	uint32_t ridx = 0;
	struct ovr_mr_loc loc;
	bool failed;

	/* a NAK this packet provokes echoes its send time (send_nak) */
	qp->nak_ts = p->tsval;
	if (v == OVR_DP_RX_OUTSIDE) {
		qp->st.rx_outside++;
		if (!qp->nak_code) {
			qp->nak_code = OVR_NAK_SEQ_ERR;
			qp->nak_psn = p->psn;
		}
		return;
	}
	if (v == OVR_DP_RX_DUP) {
		qp->st.rx_dup++;
		e->st.rx_dup++;
		/* a retransmission of something we have: the immediate ACK
		 * echoes its send time, not that of the last new packet
		 * (RFC 7323 §4.3), or the peer would measure its own
		 * retransmission timeout as an RTT */
		if ((int32_t)(p->tsval - qp->ts_recent) > 0) {
			qp->ts_recent = p->tsval;
			qp->ts_fresh = true;
		}
		if (p->opcode == OVR_OP_READ_REQ ||
		    p->opcode == OVR_OP_ATOMIC_CS ||
		    p->opcode == OVR_OP_ATOMIC_FA)
			resp_probe(e, qp, p, now);
		schedule_ack(e, qp, now, true);
		return;
	}
	switch (p->opcode) {
	case OVR_OP_SEND:
	case OVR_OP_SEND_IMM:
	case OVR_OP_SEND_INV:
	case OVR_OP_WRITE_IMM: {
		uint32_t msn = p->opcode == OVR_OP_WRITE_IMM ? p->u.write.msn :
							       p->u.send.msn;

		r = rq_slot(e, qp, msn, &ridx);
		if (!r) {
			/* no receive for this message (yet): RNR */
			if ((int32_t)(msn - qp->rq_msn) < 0) {
				e->st.rx_bad++;
				return;
			}
			qp->nak_code = OVR_NAK_RNR;
			qp->nak_timer = qp->min_rnr_timer;
			qp->nak_psn = p->psn;
			return;
		}
		if (r->bad) {
			violation(e, qp, OVR_NAK_REM_OP, p->psn);
			return;
		}
		break;
	}
	default:
		break;
	}
	switch (p->opcode) {
	case OVR_OP_SEND:
	case OVR_OP_SEND_IMM:
	case OVR_OP_SEND_INV:
		if ((uint64_t)p->u.send.mo + p->payload_len > r->cap ||
		    p->u.send.msg_len > r->cap) {
			r->bad = OVR_WC_LOC_LEN_ERR;
			violation(e, qp, OVR_NAK_INV_REQ, p->psn);
			return;
		}
		if (!sge_write(e, qp, p->psn, rwqe_sge(qp, ridx), r->nsge,
			       p->u.send.mo, p->payload, p->payload_len,
			       p->u.send.msg_len)) {
			/* device memory could not be written */
			r->bad = OVR_WC_LOC_QP_OP_ERR;
			violation(e, qp, OVR_NAK_REM_OP, p->psn);
			return;
		}
		if (p->flags & OVR_F_LAST) {
			r->have_last = 1;
			r->last_psn = p->psn;
			r->msg_len = p->u.send.msg_len;
			r->wc_opcode = OVR_WC_RECV;
			if (p->opcode == OVR_OP_SEND_IMM) {
				r->imm = p->u.send.imm;
				r->wc_flags = OVR_WC_WITH_IMM;
			} else if (p->opcode == OVR_OP_SEND_INV) {
				r->imm = p->u.send.inv_rkey;
				r->wc_flags = OVR_WC_WITH_INV;
			}
			if (p->flags & OVR_F_SE)
				r->wc_flags |= OVR_WC_SOLICITED;
		}
		break;
	case OVR_OP_WRITE:
	case OVR_OP_WRITE_IMM:
		if (p->payload_len) {
			if (!(qp->access & OVR_ACCESS_REMOTE_WRITE) ||
			    ovr_mr_check_dev(e->mrs, p->u.write.rkey, qp->pd,
					     p->u.write.va + p->u.write.mo,
					     p->payload_len,
					     OVR_ACCESS_REMOTE_WRITE, &loc)) {
				violation(e, qp, OVR_NAK_REM_ACCESS, p->psn);
				return;
			}
			if (!place_write(e, qp, p, &loc, v == OVR_DP_RX_INORDER,
					 &failed)) {
				if (failed)
					violation(e, qp, OVR_NAK_REM_OP,
						  p->psn);
				return; /* else no room to hold the tail:
					 * resent */
			}
		}
		if (r && (p->flags & OVR_F_LAST)) {
			r->have_last = 1;
			r->last_psn = p->psn;
			r->msg_len = p->u.write.msg_len;
			r->imm = p->u.write.imm;
			r->wc_opcode = OVR_WC_RECV_RDMA_WITH_IMM;
			r->wc_flags = OVR_WC_WITH_IMM;
			if (p->flags & OVR_F_SE)
				r->wc_flags |= OVR_WC_SOLICITED;
		}
		break;
	case OVR_OP_READ_REQ:
	case OVR_OP_ATOMIC_CS:
	case OVR_OP_ATOMIC_FA: {
		uint32_t msn = p->opcode == OVR_OP_READ_REQ ? p->u.rreq.msn :
							      p->u.areq.msn;
		uint32_t depth =
			qp->max_dest_rd_atomic ? qp->max_dest_rd_atomic : 1;
		struct eng_rdq *q;

		if ((int32_t)(msn - qp->rd_free_msn) < 0 ||
		    msn - qp->rd_free_msn >= depth) {
			violation(e, qp, OVR_NAK_INV_REQ, p->psn);
			return;
		}
		q = &qp->rdq[msn & (OVR_ENG_MAX_RD_ATOMIC - 1)];
		if (q->state != RD_FREE) {
			e->st.rx_bad++;
			return;
		}
		memset(q, 0, sizeof(*q));
		q->state = RD_PENDING;
		q->opcode = p->opcode;
		q->psn = p->psn;
		q->msn = msn;
		if (p->opcode == OVR_OP_READ_REQ) {
			q->rkey = p->u.rreq.rkey;
			q->va = p->u.rreq.va;
			q->len = p->u.rreq.len;
		} else {
			q->rkey = p->u.areq.rkey;
			q->va = p->u.areq.va;
			q->len = 0;
			q->swap_add = p->u.areq.swap_add;
			q->compare = p->u.areq.compare;
		}
		if ((int32_t)(msn - qp->rd_next_msn) >= 0)
			qp->rd_next_msn = msn + 1;
		break;
	}
	case OVR_OP_READ_RESP:
	case OVR_OP_ATOMIC_RESP: {
		uint32_t msn = p->opcode == OVR_OP_READ_RESP ? p->u.rresp.msn :
							       p->u.aresp.msn;
		uint32_t idx = qp->rdw[msn & (OVR_ENG_MAX_RD_ATOMIC - 1)];
		struct eng_swqe *w = &qp->sq[idx & qp->sq_mask];
		bool read = p->opcode == OVR_OP_READ_RESP;

		if (qp->sq_cons == qp->sq_next ||
		    (idx - qp->sq_cons) >= (qp->sq_next - qp->sq_cons) ||
		    w->msn != msn || !is_q1(w->opcode) ||
		    (w->opcode == OVR_WR_RDMA_READ) != read ||
		    (read &&
		     (p->u.rresp.msg_len != w->len ||
		      (uint64_t)p->u.rresp.mo + p->payload_len > w->len))) {
			e->st.rx_bad++;
			return;
		}
		qp->rsp_since = now; /* the responder is alive */
		qp->rsp_probes = 0;
		qp->rsp_at = 0;
		if (read) {
			if (w->inl)
				return;
			if (!sge_write(e, qp, -1, swqe_sge(qp, idx), w->nsge,
				       p->u.rresp.mo, p->payload,
				       p->payload_len, w->len)) {
				qp_error_local(e, qp, idx, OVR_WC_LOC_QP_OP_ERR,
					       0);
				return;
			}
			w->resp_got += p->payload_len;
		} else {
			uint64_t orig = p->u.aresp.orig;

			if (!sge_write(e, qp, -1, swqe_sge(qp, idx), w->nsge, 0,
				       (const uint8_t *)&orig, 8, 8)) {
				qp_error_local(e, qp, idx, OVR_WC_LOC_QP_OP_ERR,
					       0);
				return;
			}
		}
		if (p->flags & OVR_F_LAST) {
			w->resp_done = 1;
			w->resp_last_psn = p->psn;
		}
		break;
	}
	default:
		e->st.rx_bad++;
		return;
	}

	v = ovr_dp_rxwin_mark(&qp->rx, p->psn);
	qp->ts_recent = p->tsval;
	qp->ts_fresh = true;
	qp->st.rx_pkts++;
	qp->st.rx_bytes += p->payload_len;
	if (ce)
		qp->ce_count++;
	if (v == OVR_DP_RX_OOO)
		qp->st.rx_ooo++;
	else
		rx_advance(e, qp);
	schedule_ack(e, qp, now,
		     v == OVR_DP_RX_OOO || (p->flags & OVR_F_ACKREQ) ||
			     qp->rx.hi_psn != qp->rx.ack_psn);
}

/*
 * Does the PSN of a TERMINATE fit @qp's state? It must, so that a stray,
 * stale or forged TERMINATE (which would need the right pair of 24-bit
 * QPNs, generations included, already) does not end a live QP.
 */
static bool term_psn_ok(const struct ovr_eng *e, const struct eng_qp *qp,
			const struct ovr_wire_pkt *p)
{
	uint32_t psn = p->u.term.psn, w = e->cfg.window_pkts, fail;

	switch (p->u.term.reason) {
	case OVR_TERM_DESTROYED:
	case OVR_TERM_ERROR:
		/* the sender's next PSN: it sent everything we received,
		 * and never more than a window beyond what we acknowledged */
		return ovr_wire_psn_diff(psn, qp->rx.hi_psn) >= 0 &&
		       ovr_wire_psn_diff(psn, qp->rx.ack_psn) <= (int32_t)w;
	case OVR_TERM_NO_QP_SEQ:
		/* a packet of ours, sent and not yet acknowledged; or the
		 * request of a READ / atomic whose response we still await
		 * (rsp_watch resends it: its responder may be gone) */
		return (!PSN_LT(psn, qp->snd_una) &&
			PSN_LT(psn, qp->snd_nxt)) ||
		       q1_of_psn(qp, psn, &fail);
	case OVR_TERM_NO_QP_ACK: {
		/* an ACK of ours: at most a window old */
		int32_t d = ovr_wire_psn_diff(qp->rx.ack_psn, psn);

		return d >= 0 && d <= (int32_t)w;
	}
	}
	return false;
}

/* A TERMINATE: the peer QP is gone; so is this one, if it checks out. */
static void rx_terminate(struct ovr_eng *e, const struct ovr_wire_pkt *p,
			 uint64_t now)
{
	struct eng_qp *qp = qp_get(e, p->dqpn);
	uint32_t fail;

	if (!qp) {
		e->st.rx_no_qp++; /* never answered */
		return;
	}
	if (qp->state < OVR_QPS_RTR || qp->state == OVR_QPS_ERR) {
		e->st.rx_bad_state++;
		return;
	}
	if (qp->type != OVR_QPT_RC || p->sqpn != qp->dest_qpn ||
	    !term_psn_ok(e, qp, p)) {
		e->st.rx_term_bad++;
		return;
	}
	e->st.rx_term++;
	/* what the peer received before it went completes normally */
	if ((p->flags & OVR_F_ACK) && qp->state >= OVR_QPS_RTS)
		on_ack(e, qp, p, now);
	/*
	 * A peer that went away while this QP owes it nothing (a clean
	 * teardown: everything sent was acknowledged) leaves this QP as it
	 * is, posted receives included, as a vanished peer does on IB; its
	 * next send is answered with a TERMINATE by the peer's node.
	 */
	if (qp->sq_cons == qp->sq_prod && qp->state != OVR_QPS_ERR) {
		e->st.rx_term_idle++;
		return;
	}
	if (qp->state == OVR_QPS_ERR)
		return; /* on_ack found a reason of its own */
	/* the WR the peer was working on fails with the cause, the rest
	 * flush; a head that never went out just flushes */
	fail = qp->sq_cons - 1;
	if (qp->sq_cons != qp->sq_prod) {
		uint8_t st = qp->sq[qp->sq_cons & qp->sq_mask].state;

		if (st == W_SENDING || st == W_SENT)
			fail = qp->sq_cons;
	}
	qp_error(e, qp, fail, OVR_WC_REM_ABORT_ERR,
		 OVR_VERR_TERM + p->u.term.reason);
	qp_event(e, qp, OVR_EV_QP_FATAL);
}

/* Worth a TERMINATE when it reaches no QP: it will be retransmitted (a
 * sequenced packet) or it is an ACK, whose sender may wait on us. */
static bool answerable(const struct ovr_wire_pkt *p)
{
	return ovr_wire_opcode_is_sequenced(p->opcode) ||
	       p->opcode == OVR_OP_ACK;
}

void ovr_eng_rx(struct ovr_eng *e, uint64_t now, const void *pdu, uint32_t len,
		bool ce)
{
	ovr_eng_rx_from(e, now, pdu, len, ce, OVR_ENG_FROM_NONE);
}

void ovr_eng_rx_from(struct ovr_eng *e, uint64_t now, const void *pdu,
		     uint32_t len, bool ce, uint64_t from)
{
	struct ovr_wire_pkt p;
	struct eng_qp *qp;
	int rc;

	e->now = now;
	e->st.rx_pkts++;
	rc = ovr_wire_parse(pdu, len, &p, &e->wc);
	if (rc < 0) {
		e->st.rx_bad++;
		if (rc == -OVR_WIRE_EVERSION && len >= 12) {
			/* answer from the QP it was meant for, if any */
			const uint8_t *b = pdu;
			uint32_t dq = (uint32_t)b[5] << 16 |
				      (uint32_t)b[6] << 8 | b[7];

			qp = qp_get(e, dq);
			if (qp) {
				void *tok = NULL;
				uint8_t *buf = e->ops.tx_alloc(
					e->ctx, e->cfg.max_pdu, &tok);
				int n;

				if (!buf)
					return;
				n = ovr_wire_build_reject(pdu, len, buf,
							  e->cfg.max_pdu);
				tx_out(e, qp->qpn, tok, buf,
				       n > 0 ? (uint32_t)n : 0, false, qp->peer,
				       qp->user);
			}
		}
		return;
	}
	if (p.opcode == OVR_OP_TERMINATE) {
		rx_terminate(e, &p, now);
		return;
	}
	qp = qp_get(e, p.dqpn);
	if (!qp) {
		e->st.rx_no_qp++;
		if (!answerable(&p))
			return;
		if (from == OVR_ENG_FROM_NONE)
			e->st.term_limited++;
		else if (term_token(e, now))
			tx_term(e, p.sqpn, p.dqpn,
				ovr_wire_opcode_is_sequenced(p.opcode) ?
					OVR_TERM_NO_QP_SEQ :
					OVR_TERM_NO_QP_ACK,
				ovr_wire_opcode_is_sequenced(p.opcode) ?
					p.psn :
					p.ack_psn,
				from, 0, NULL, now);
		return;
	}
	if (ovr_unlikely(qp->type == OVR_QPT_UD || p.opcode == OVR_OP_UD_SEND ||
			 p.opcode == OVR_OP_UD_SEND_IMM)) {
		if (qp->type == OVR_QPT_UD && (p.opcode == OVR_OP_UD_SEND ||
					       p.opcode == OVR_OP_UD_SEND_IMM))
			rx_ud(e, qp, &p, from);
		else
			e->st.rx_bad++; /* a datagram for RC, or the reverse */
		return;
	}
	if (qp->state >= OVR_QPS_RTR && p.sqpn != qp->dest_qpn) {
		e->st.rx_no_qp++;
		return;
	}
	if (qp->state < OVR_QPS_RTR) {
		e->st.rx_bad_state++;
		return;
	}
	if (p.opcode == OVR_OP_VERSION_REJECT) {
		if (ovr_wire_version_select(p.u.vrej.min, p.u.vrej.max) < 0 &&
		    qp->state != OVR_QPS_ERR) {
			qp_error_head(e, qp, OVR_WC_FATAL_ERR,
				      OVR_VERR_VERSION);
			qp_event(e, qp, OVR_EV_QP_FATAL);
		}
		return;
	}
	if (qp->state == OVR_QPS_ERR) {
		/* repeat the NAK that ended the QP to a peer still sending
		 * (a retransmission, or a READ request asked again by a
		 * requester that lost the NAK: rsp_watch) */
		if (qp->fatal_code && ovr_wire_opcode_is_sequenced(p.opcode) &&
		    !qp->nak_code) {
			qp->nak_code = qp->fatal_code;
			qp->nak_psn = qp->fatal_psn;
			qp->nak_ts = p.tsval;
			qp_activate(e, qp);
		}
		/* ... or the TERMINATE that told it this QP failed */
		if (qp->term_reason && !qp->term_pending && answerable(&p) &&
		    term_token(e, now))
			tx_term(e, qp->dest_qpn, qp->qpn, qp->term_reason,
				qp->snd_nxt, qp->peer, qp->user, qp, now);
		e->st.rx_bad_state++;
		return;
	}
	if (!qp->comm_est && qp->state == OVR_QPS_RTR) {
		qp->comm_est = true;
		qp_event(e, qp, OVR_EV_COMM_EST);
	}
	if (ovr_unlikely(qp->state == OVR_QPS_RTR && !qp->psn_adopted))
		rtr_adopt_psn(e, qp, &p, now);
	qp_activate(e, qp);
	if (p.opcode == OVR_OP_NAK) {
		on_nak(e, qp, &p, now);
		return;
	}
	if (p.flags & OVR_F_ACK) {
		if (p.opcode == OVR_OP_ACK)
			qp->st.acks_rcvd++;
		on_ack(e, qp, &p, now);
		if (qp->state == OVR_QPS_ERR)
			return;
	}
	if (ovr_wire_opcode_is_sequenced(p.opcode))
		rx_seq(e, qp, &p, now, ce);
}

/* ---- timers and the poll loop --------------------------------------------- */

static void on_rto(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	uint64_t to = ack_timeout_ns(qp->timeout);
	uint32_t psn;

	qp->rto_at = 0;
	if (!qp->sb || qp->snd_una == qp->snd_nxt)
		return;
	qp->st.rto_count++;
	e->st.rto_count++;
	qp->retries++;
	if (to && qp->retries > qp->retry_cnt &&
	    now - qp->last_progress_ns >= (uint64_t)(qp->retry_cnt + 1) * to) {
		struct eng_pkt *k = sb_pkt(e, qp, qp->snd_una);

		if (k->flags & SB_RESP) {
			/* our responses go unanswered: the peer is gone */
			qp_error_local(e, qp, qp->sq_cons, OVR_WC_WR_FLUSH_ERR,
				       0);
			qp_event(e, qp, OVR_EV_QP_FATAL);
		} else {
			qp_error_local(e, qp, qp->sq_cons, OVR_WC_RETRY_EXC_ERR,
				       OVR_VERR_RETRY);
		}
		return;
	}
	/* resend the oldest packet; the rest waits for rto_verdict */
	for (psn = qp->snd_una; psn != qp->snd_nxt; psn = PSN_ADD(psn, 1)) {
		struct eng_pkt *k = sb_pkt(e, qp, psn);

		if (!(k->flags & (SB_SACKED | SB_LOST))) {
			mark_lost(qp, k);
			break;
		}
	}
	ovr_dp_rtt_backoff(&qp->rtt);
	/* the controller hears of a timeout once it is known not to be
	 * spurious (rto_verdict), or when the resend went unanswered too */
	if (!qp->rto_fired_ns)
		qp->rto_fired_ns = now;
	else
		e->cc->on_timeout(&qp->cc, now);
	qp->rto_probe = true;
	qp->tlp_out = false;
	qp->pto_at = 0;
	qp->rto_at = now + qp->rtt.rto_ns;
}

static void on_pto(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	uint32_t psn;

	qp->pto_at = 0;
	if (!qp->sb || qp->snd_una == qp->snd_nxt || qp->tlp_out)
		return;
	/* probe with the last packet that is neither sacked nor lost */
	for (psn = PSN_ADD(qp->snd_nxt, M24);; psn = PSN_ADD(psn, M24)) {
		struct eng_pkt *k = sb_pkt(e, qp, psn);

		if (!(k->flags & (SB_SACKED | SB_LOST))) {
			mark_lost(qp, k);
			break;
		}
		if (psn == qp->snd_una)
			break;
	}
	qp->st.tlp_count++;
	e->st.tlp_count++;
	qp->tlp_out = true;
	if (!qp->rto_at)
		qp->rto_at = now + qp->rtt.rto_ns;
}

/*
 * A requester waits for READ / atomic responses with none of its own
 * packets in flight: the peer acknowledged the requests, so no RTO runs,
 * and the responses are the responder's to make reliable. Its silence
 * must still end: IB's transport timer covers READ responses and resends
 * the request. Here the oldest waiting request is resent (a duplicate a
 * live responder answers with an ACK; one in ERROR repeats the NAK that
 * failed it, whose first copy may have been lost) every RTO, doubling,
 * and after retry_cnt + 1 local ACK timeouts without a response packet
 * the WR fails with RETRY_EXC_ERR, as an unacknowledged request would.
 */
static bool rsp_waiting(const struct eng_qp *qp)
{
	return qp->type == OVR_QPT_RC &&
	       (qp->state == OVR_QPS_RTS || qp->state == OVR_QPS_SQD) &&
	       qp->rd_out && qp->snd_una == qp->snd_nxt && !qp->fail_pending;
}

static void rsp_watch(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	uint64_t to = ack_timeout_ns(qp->timeout), wait;
	uint32_t i, idx = 0;
	bool found = false;

	if (!rsp_waiting(qp)) {
		qp->rsp_at = 0;
		qp->rsp_probes = 0;
		return;
	}
	if (!qp->rsp_at) {
		if (!qp->rsp_probes)
			qp->rsp_since = now;
		qp->rsp_at = now + qp->rtt.rto_ns;
		return;
	}
	if (now < qp->rsp_at)
		return;
	for (i = qp->sq_cons; i != qp->sq_next && !found; i++) {
		const struct eng_swqe *w = &qp->sq[i & qp->sq_mask];

		if (is_q1(w->opcode) && w->state == W_SENT && !w->resp_done) {
			idx = i;
			found = true;
		}
	}
	if (!found) {
		/* every response is in; completion waits on ordering */
		qp->rsp_at = now + qp->rtt.rto_ns;
		return;
	}
	if (to && qp->rsp_probes > qp->retry_cnt &&
	    now - qp->rsp_since >= (uint64_t)(qp->retry_cnt + 1) * to) {
		qp_error_local(e, qp, idx, OVR_WC_RETRY_EXC_ERR,
			       OVR_VERR_RETRY);
		return;
	}
	if (!tx_req_seg(e, qp, idx, 0, 0, qp->sq[idx & qp->sq_mask].last_psn,
			true, now)) {
		qp->rsp_at = now + qp->rtt.rto_ns; /* no buffer: later */
		return;
	}
	qp->rsp_probes++;
	qp->st.retx_pkts++;
	e->st.retx_pkts++;
	e->st.rsp_probes++;
	wait = qp->rtt.rto_ns << (qp->rsp_probes < 8 ? qp->rsp_probes : 8);
	if (wait > e->cfg.max_rto_ns)
		wait = e->cfg.max_rto_ns;
	qp->rsp_at = now + wait;
}

static uint64_t qp_deadline(struct ovr_eng *e, const struct eng_qp *qp)
{
	uint64_t t = UINT64_MAX;

	if (qp->rsp_at)
		t = min64(t, qp->rsp_at);

	if (qp->rto_at)
		t = min64(t, qp->rto_at);
	if (qp->pto_at)
		t = min64(t, qp->pto_at);
	if (qp->reo_at)
		t = min64(t, qp->reo_at);
	if (qp->ack_at)
		t = min64(t, qp->ack_at);
	if (qp->rnr_wait)
		t = min64(t, qp->rnr_until);
	if (qp->credit_wait_since) {
		uint64_t probe = 2 * qp->rtt.srtt_ns;
		uint64_t at =
			qp->credit_wait_since + (probe < 20000 ? 20000 : probe);

		/* once due, the probe waits for the window or for responses
		 * ahead of it: those wake the QP, a past time must not */
		if (at > e->now)
			t = min64(t, at);
	}
	return t;
}

static void qp_timers(struct ovr_eng *e, struct eng_qp *qp, uint64_t now)
{
	if (qp->rnr_wait && now >= qp->rnr_until)
		qp->rnr_wait = false;
	if (qp->reo_at && now >= qp->reo_at)
		rack_detect(e, qp, now);
	if (qp->pto_at && now >= qp->pto_at)
		on_pto(e, qp, now);
	if (qp->rto_at && now >= qp->rto_at)
		on_rto(e, qp, now);
	if (qp->type == OVR_QPT_RC)
		rsp_watch(e, qp, now);
}

/* Could this QP send something right now if the window allowed? */
static bool qp_has_work(const struct eng_qp *qp)
{
	if (qp->nak_code || qp->ack_now || qp->term_pending)
		return true;
	if (qp->state == OVR_QPS_ERR)
		return false;
	if (qp->nlost)
		return true;
	if (qp->rd_send_msn != qp->rd_exec_msn)
		return true;
	return qp->state >= OVR_QPS_RTS && qp->sq_next != qp->sq_prod;
}

uint64_t ovr_eng_poll(struct ovr_eng *e, uint64_t now, uint32_t budget)
{
	uint64_t next = UINT64_MAX;
	uint32_t total = 0;
	bool again = true;

	e->now = now;
	if (!budget)
		budget = UINT32_MAX;
	/* timers first, once per poll */
	for (struct eng_qp *qp = e->act.act_next; qp != &e->act;
	     qp = qp->act_next)
		if (qp->state >= OVR_QPS_RTR)
			qp_timers(e, qp, now);
	/* then rounds of at most tx_burst packets per QP */
	while (again && total < budget) {
		again = false;
		for (struct eng_qp *qp = e->act.act_next; qp != &e->act;
		     qp = qp->act_next) {
			uint32_t burst = min32(e->cfg.tx_burst, budget - total);
			uint32_t n = qp_tx(e, qp, now, burst);

			total += n;
			if (n == burst)
				again = true;
			if (total >= budget)
				break;
		}
	}
	for (struct eng_qp *qp = e->act.act_next, *nx; qp != &e->act; qp = nx) {
		uint64_t t = qp_deadline(e, qp);

		nx = qp->act_next;
		if (qp->cc.rate_bps && qp_has_work(qp) && qp->next_tx_ns > now)
			t = min64(t, qp->next_tx_ns);
		next = min64(next, t);
		if (t == UINT64_MAX && !qp_has_work(qp) && !qp->sb)
			qp_deactivate(qp);
	}
	if (total >= budget)
		return now;
	return next;
}

/*
 * The QPs whose batch failed go to ERROR, as a failed synchronous copy
 * would put them; first, what later batches still hold for them is
 * dropped (PDUs) or turned into errors (completions), as the failed
 * batch's own items were. Outside any other engine call only.
 */
static void dev_fail_qps(struct ovr_eng *e)
{
	if (!e->ndev_fail)
		return;
	for (uint64_t i = e->bat_head; i <= e->bat_tail; i++) {
		struct eng_batch *b = &e->bat[i % e->nbat];

		for (uint32_t k = 0; k < b->nhtx; k++)
			if (b->htx[k].len && dev_failed(e, b->htx[k].qpn))
				b->htx[k].len = 0;
		for (uint32_t k = 0; k < b->nhcqe; k++)
			cqe_fail(e, &b->hcqe[k].wc);
	}
	while (e->ndev_fail) {
		struct eng_qp *qp = qp_get(e, e->dev_failq[--e->ndev_fail]);

		if (!qp || !qp->dev_fail)
			continue;
		qp->dev_fail = false;
		e->st.dev_copy_err++;
		if (qp->type == OVR_QPT_UD || qp->state == OVR_QPS_ERR ||
		    qp->state == OVR_QPS_RESET)
			continue; /* a UD QP only lost those receives */
		if (qp->dev_resp)
			qp_fatal_nak(e, qp, OVR_NAK_REM_OP, qp->dev_psn);
		else
			qp_error_local(e, qp, qp->sq_cons, OVR_WC_LOC_QP_OP_ERR,
				       OVR_VERR_DEV_COPY);
	}
}

uint64_t ovr_eng_dev_close(struct ovr_eng *e)
{
	struct eng_batch *b, *p;

	if (!e->bat || !e->dev_busy)
		return e->bat_seq;
	b = bat_open(e);
	if (b->queued) {
		bat_close(e);
	} else if ((b->nhtx || b->nhcqe) && e->bat_head != e->bat_tail) {
		/* nothing to wait for but the batches before: go with the
		 * newest of them, if it has room */
		p = &e->bat[(e->bat_tail - 1) % e->nbat];
		if (p->nhtx + b->nhtx <= ENG_HOLD &&
		    p->nhcqe + b->nhcqe <= ENG_HOLD) {
			memcpy(p->htx + p->nhtx, b->htx,
			       b->nhtx * sizeof(*b->htx));
			memcpy(p->hcqe + p->nhcqe, b->hcqe,
			       b->nhcqe * sizeof(*b->hcqe));
			p->nhtx += b->nhtx;
			p->nhcqe += b->nhcqe;
			b->nhtx = b->nhcqe = 0;
		}
	}
	return e->bat_seq;
}

uint64_t ovr_eng_dev_poll(struct ovr_eng *e)
{
	if (!e->bat)
		return 0;
	if (e->bat_head != e->bat_tail)
		bat_release(e, false, UINT32_MAX);
	dev_fail_qps(e);
	return e->bat_done;
}

uint32_t ovr_eng_dev_inflight(const struct ovr_eng *e)
{
	return e->bat ? (uint32_t)(e->bat_tail - e->bat_head) : 0;
}

void ovr_eng_fence(struct ovr_eng *e)
{
	if (!e->bat)
		return;
	dev_settle(e);
	dev_fail_qps(e);
}

void ovr_eng_get_stats(const struct ovr_eng *e, struct ovr_eng_stats *st)
{
	*st = e->st;
	st->qps = e->nqp;
	st->mrs = ovr_mr_count(e->mrs);
}

void ovr_eng_mem(const struct ovr_eng *e, const struct ovr_eng_qp_cap *cap,
		 struct ovr_eng_mem *m)
{
	m->qp_ctx = sizeof(struct eng_qp) +
		    ovr_dp_rxwin_words(e->cfg.window_pkts) * sizeof(uint64_t);
	m->per_send_wqe = sizeof(struct eng_swqe) +
			  cap->max_send_sge * sizeof(struct eng_lsge) +
			  cap->max_inline_data;
	m->per_recv_wqe = sizeof(struct eng_rwqe) +
			  cap->max_recv_sge * sizeof(struct eng_lsge);
	m->per_inflight_pkt = sizeof(struct eng_pkt);
	m->scoreboard = e->sb_size;
}
