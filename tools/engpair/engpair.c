// SPDX-License-Identifier: MIT
/* Two engines over two linkemu links, in simulated time: see engpair.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include <ovrdma/wire_codec.h>

#include "engpair.h"

/* OVR_PAIR_TRACE=1 in the environment prints every packet sent. */
static int trace = -1;

static void trace_pkt(const struct ovr_pair *p, int from, const void *b,
		      uint32_t len)
{
	struct ovr_wire_pkt pkt;
	char line[256];

	if (trace < 0)
		trace = getenv("OVR_PAIR_TRACE") != NULL;
	if (!trace)
		return;
	if (ovr_wire_parse(b, len, &pkt, NULL) == 0)
		ovr_wire_format(&pkt, line, sizeof(line));
	else
		snprintf(line, sizeof(line), "unparsable (%u B)", len);
	fprintf(stderr, "%12llu %d> %s\n", (unsigned long long)p->now, from,
		line);
}

void ovr_pair_cfg_default(struct ovr_pair_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	ovr_eng_cfg_default(&cfg->eng);
	cfg->eng.max_qp = 64;
	cfg->eng.max_mr = 64;
	cfg->eng.seed = 1;
	for (int i = 0; i < 2; i++) {
		cfg->link[i].rate_bps = 100000000000ull; /* 100 Gbps */
		cfg->link[i].delay_ns = 15000; /* 30 us RTT */
		cfg->link[i].seed = 7 + (uint64_t)i;
	}
	cfg->mem_bytes = 64u << 20;
}

void ovr_pair_qp_params_default(struct ovr_pair_qp_params *p)
{
	*p = (struct ovr_pair_qp_params){
		.cap = { .max_send_wr = 256,
			 .max_recv_wr = 256,
			 .max_send_sge = 4,
			 .max_recv_sge = 4,
			 .max_inline_data = 256 },
		.access = OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE |
			  OVR_ACCESS_REMOTE_READ | OVR_ACCESS_REMOTE_ATOMIC,
		.mtu = OVR_MTU_4096,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = 1,
		.max_rd_atomic = 16,
		.max_dest_rd_atomic = 16,
	};
}

static void *pair_tx_alloc(void *ctx, uint32_t cap, void **token)
{
	struct ovr_pair_node *n = ctx;

	if (cap > n->pair->max_pdu)
		return NULL;
	if (n->pool) {
		uint32_t i;

		if (!n->npfree)
			return NULL;
		i = n->pfree[--n->npfree];
		*token = (void *)(uintptr_t)(i + 1);
		return n->pool + (size_t)i * n->pair->max_pdu;
	}
	*token = n->txbuf;
	return n->txbuf;
}

bool ovr_pair_is_buf(const struct ovr_pair_node *n, const void *p, uint32_t len)
{
	const uint8_t *b = p;

	return n->pool && b >= n->pool &&
	       b + len <= n->pool + (size_t)OVR_PAIR_POOL * n->pair->max_pdu;
}

static void pair_tx(void *ctx, void *token, uint32_t len, uint64_t peer,
		    uint64_t qp_user)
{
	struct ovr_pair_node *n = ctx;
	uint8_t *buf = n->txbuf;

	if (n->pool) {
		uint32_t i = (uint32_t)(uintptr_t)token - 1;

		buf = n->pool + (size_t)i * n->pair->max_pdu;
		n->pfree[n->npfree++] = i; /* the link copies it */
	}
	if (!len)
		return;
	n->last_peer = peer;
	n->last_user = qp_user;
	if (n->tx_filter && n->tx_filter(n, buf, len, n->tx_filter_ctx)) {
		n->tx_filtered++;
		return;
	}
	n->tx_pkts++;
	trace_pkt(n->pair, n == &n->pair->n[0] ? 0 : 1, buf, len);
	(void)ovr_link_send(n->out, n->pair->now, buf, len);
}

static void pair_cqe(void *ctx, uint32_t cq, const struct ovr_eng_wc *wc)
{
	struct ovr_pair_node *n = ctx;
	struct ovr_pair_cq *q;

	if (cq >= OVR_PAIR_MAX_CQ)
		abort();
	q = &n->cq[cq];
	if (q->head && q->head == q->tail)
		q->head = q->tail = 0;
	if (q->tail == q->cap) {
		size_t nc = q->cap ? q->cap * 2 : 256;
		struct ovr_eng_wc *w = realloc(q->wc, nc * sizeof(*w));

		if (!w)
			abort();
		q->wc = w;
		q->cap = nc;
	}
	q->wc[q->tail++] = *wc;
}

static void pair_event(void *ctx, uint64_t qp_user, uint32_t qpn,
		       enum ovr_event ev)
{
	struct ovr_pair_node *n = ctx;

	(void)qp_user;
	(void)qpn;
	if ((unsigned int)ev < OVR_PAIR_MAX_EV)
		n->events[ev]++;
}

static void pair_srq_event(void *ctx, uint64_t srq_user, uint32_t srqn,
			   enum ovr_event ev)
{
	struct ovr_pair_node *n = ctx;

	(void)srq_user;
	n->last_srq_event_srqn = srqn;
	if ((unsigned int)ev < OVR_PAIR_MAX_EV)
		n->srq_events[ev]++;
}

/* A recognisable GRH: where it came from, then the receiving QP's user
 * value, then 0xab. */
static void pair_ud_grh(void *ctx, uint64_t qp_user, uint64_t from,
			uint8_t grh[OVR_GRH_LEN])
{
	(void)ctx;
	memset(grh, 0xab, OVR_GRH_LEN);
	memcpy(grh, &from, sizeof(from));
	memcpy(grh + 8, &qp_user, sizeof(qp_user));
}

static const struct ovr_eng_ops pair_ops = {
	.tx_alloc = pair_tx_alloc,
	.tx = pair_tx,
	.cqe = pair_cqe,
	.event = pair_event,
	.srq_event = pair_srq_event,
	.ud_grh = pair_ud_grh,
};

struct ovr_pair *ovr_pair_create(const struct ovr_pair_cfg *cfg)
{
	struct ovr_pair *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->max_pdu = cfg->eng.max_pdu;
	p->ops = pair_ops;
	p->ops.dev_copy = cfg->dev_copy;
	p->ops.dev_fence = cfg->dev_fence;
	p->ops.dev_batch_close = cfg->dev_batch_close;
	p->ops.dev_batch_poll = cfg->dev_batch_poll;
	p->ops.dev_batch_faults = cfg->dev_batch_faults;
	for (int i = 0; i < 2; i++) {
		struct ovr_pair_node *n = &p->n[i];

		n->pair = p;
		if (cfg->dev_batch_close) {
			n->pool = malloc((size_t)OVR_PAIR_POOL *
					 cfg->eng.max_pdu);
			n->pfree = calloc(OVR_PAIR_POOL, sizeof(*n->pfree));
			n->rxused = calloc(OVR_PAIR_POOL, sizeof(*n->rxused));
			if (!n->pool || !n->pfree || !n->rxused) {
				ovr_pair_destroy(p);
				errno = ENOMEM;
				return NULL;
			}
			for (uint32_t k = 0; k < OVR_PAIR_POOL; k++)
				n->pfree[n->npfree++] = OVR_PAIR_POOL - 1 - k;
		}
		n->pd = 1;
		n->mem_len = cfg->mem_bytes;
		n->mem = calloc(1, cfg->mem_bytes);
		n->txbuf = malloc(cfg->eng.max_pdu);
		n->out = ovr_link_create(&cfg->link[i], cfg->eng.max_pdu);
		n->eng = ovr_eng_create(&cfg->eng, &p->ops, n);
		if (!n->mem || !n->txbuf || !n->out || !n->eng ||
		    ovr_eng_reg_mr(
			    n->eng, n->pd, ovr_pair_va(p, i, 0), n->mem_len,
			    OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE |
				    OVR_ACCESS_REMOTE_READ |
				    OVR_ACCESS_REMOTE_ATOMIC,
			    n->mem, &n->key)) {
			ovr_pair_destroy(p);
			errno = ENOMEM;
			return NULL;
		}
	}
	return p;
}

void ovr_pair_destroy(struct ovr_pair *p)
{
	if (!p)
		return;
	for (int i = 0; i < 2; i++) {
		struct ovr_pair_node *n = &p->n[i];

		ovr_eng_destroy(n->eng);
		ovr_link_destroy(n->out);
		free(n->mem);
		free(n->txbuf);
		free(n->pool);
		free(n->pfree);
		free(n->rxused);
		for (int c = 0; c < OVR_PAIR_MAX_CQ; c++)
			free(n->cq[c].wc);
	}
	free(p);
}

int ovr_eng_connect_two(struct ovr_eng *eng[2], const uint32_t pd[2],
			const struct ovr_pair_qp_params *qp, uint32_t cq_base,
			uint64_t now, uint32_t qpn[2])
{
	struct ovr_eng_qp_attr a;
	int rc;

	for (int i = 0; i < 2; i++) {
		struct ovr_eng_qp_init init = {
			.pd = pd[i],
			.send_cq = cq_base,
			.recv_cq = cq_base + 1,
			.sq_sig_all = qp->sq_sig_all,
			.user = (uint64_t)i,
			.cap = qp->cap,
			.srq = qp->srq[i],
		};

		rc = ovr_eng_qp_create(eng[i], &init, &qpn[i]);
		if (rc)
			return rc;
		memset(&a, 0, sizeof(a));
		a.qp_state = OVR_QPS_INIT;
		a.qp_access_flags = qp->access;
		rc = ovr_eng_qp_modify(eng[i], qpn[i], &a,
				       OVR_QP_STATE | OVR_QP_PKEY_INDEX |
					       OVR_QP_PORT |
					       OVR_QP_ACCESS_FLAGS,
				       now);
		if (rc)
			return rc;
	}
	for (int i = 0; i < 2; i++) {
		memset(&a, 0, sizeof(a));
		a.qp_state = OVR_QPS_RTR;
		a.path_mtu = qp->mtu;
		a.dest_qp_num = qpn[1 - i];
		a.rq_psn = 0x100 * (uint32_t)(i + 1) + 0xfff000;
		a.peer = (uint64_t)(1 - i);
		a.max_dest_rd_atomic = qp->max_dest_rd_atomic;
		a.min_rnr_timer = qp->min_rnr_timer;
		rc = ovr_eng_qp_modify(eng[i], qpn[i], &a,
				       OVR_QP_STATE | OVR_QP_AV |
					       OVR_QP_PATH_MTU |
					       OVR_QP_DEST_QPN | OVR_QP_RQ_PSN |
					       OVR_QP_MAX_DEST_RD_ATOMIC |
					       OVR_QP_MIN_RNR_TIMER,
				       now);
		if (rc)
			return rc;
	}
	for (int i = 0; i < 2; i++) {
		memset(&a, 0, sizeof(a));
		a.qp_state = OVR_QPS_RTS;
		/* each side starts where the other expects; near the 24-bit
		 * wrap so every run crosses it */
		a.sq_psn = 0x100 * (uint32_t)(2 - i) + 0xfff000;
		a.timeout = qp->timeout;
		a.retry_cnt = qp->retry_cnt;
		a.rnr_retry = qp->rnr_retry;
		a.max_rd_atomic = qp->max_rd_atomic;
		rc = ovr_eng_qp_modify(
			eng[i], qpn[i], &a,
			OVR_QP_STATE | OVR_QP_SQ_PSN | OVR_QP_TIMEOUT |
				OVR_QP_RETRY_CNT | OVR_QP_RNR_RETRY |
				OVR_QP_MAX_QP_RD_ATOMIC,
			now);
		if (rc)
			return rc;
	}
	return 0;
}

int ovr_pair_connect(struct ovr_pair *p, const struct ovr_pair_qp_params *qp,
		     uint32_t cq_base, uint32_t qpn[2])
{
	struct ovr_eng *eng[2] = { p->n[0].eng, p->n[1].eng };
	const uint32_t pd[2] = { p->n[0].pd, p->n[1].pd };

	if (cq_base + 1 >= OVR_PAIR_MAX_CQ)
		return -EINVAL;
	return ovr_eng_connect_two(eng, pd, qp, cq_base, p->now, qpn);
}

/* Deliver what has arrived by now and poll both engines; returns when
 * the next thing will happen (UINT64_MAX: nothing will). */
static uint64_t pair_process(struct ovr_pair *p)
{
	static __thread uint8_t rxbuf[65536];
	uint64_t next = UINT64_MAX;

	p->steps++;
	for (int i = 0; i < 2; i++) {
		struct ovr_link_meta meta;
		uint32_t len;

		struct ovr_pair_node *n = &p->n[i];

		/* node i receives from the other node's out link */
		while (!n->pool &&
		       ovr_link_recv(p->n[1 - i].out, p->now, rxbuf,
				     sizeof(rxbuf), &len, &meta) == 1)
			ovr_eng_rx_from(n->eng, p->now, rxbuf, len, meta.ce,
					(uint64_t)(1 - i));
		/* batched: a buffer per PDU, kept until its round's
		 * batch is done (a queued copy reads it) */
		while (n->pool && n->npfree) {
			uint32_t k = n->pfree[n->npfree - 1];
			uint8_t *b = n->pool + (size_t)k * p->max_pdu;

			if (ovr_link_recv(p->n[1 - i].out, p->now, b,
					  p->max_pdu, &len, &meta) != 1)
				break;
			n->npfree--;
			n->rxused[n->nrxused++] = k;
			ovr_eng_rx_from(n->eng, p->now, b, len, meta.ce,
					(uint64_t)(1 - i));
		}
	}
	for (int i = 0; i < 2; i++) {
		struct ovr_pair_node *n = &p->n[i];
		uint64_t t = ovr_eng_poll(n->eng, p->now, 0);

		if (n->pool) {
			ovr_eng_dev_close(n->eng);
			ovr_eng_dev_poll(n->eng);
			if (ovr_eng_dev_inflight(n->eng))
				t = p->now; /* poll again */
			else
				while (n->nrxused)
					n->pfree[n->npfree++] =
						n->rxused[--n->nrxused];
		}
		if (t < next)
			next = t;
	}
	for (int i = 0; i < 2; i++) {
		uint64_t t = ovr_link_next_ns(p->n[i].out);

		if (t < next)
			next = t;
	}
	return next;
}

static void pair_advance(struct ovr_pair *p, uint64_t next)
{
	p->now = next > p->now ? next : p->now + 1;
}

bool ovr_pair_step(struct ovr_pair *p)
{
	uint64_t next = pair_process(p);

	if (next == UINT64_MAX)
		return false;
	pair_advance(p, next);
	return true;
}

bool ovr_pair_run(struct ovr_pair *p, bool (*done)(struct ovr_pair *, void *),
		  void *ctx, uint64_t deadline_ns)
{
	for (;;) {
		uint64_t next;

		if (done && done(p, ctx))
			return true;
		if (p->now > deadline_ns)
			return false;
		next = pair_process(p);
		/* what just happened is seen at the time it happened (a
		 * completion, a landed byte), as a polling application
		 * sees it, before the clock moves on to the next event */
		if (done && done(p, ctx))
			return true;
		if (next == UINT64_MAX)
			return !done;
		pair_advance(p, next);
	}
}

void ovr_pair_run_to(struct ovr_pair *p, uint64_t t)
{
	while (p->now < t) {
		uint64_t next = pair_process(p);

		if (next >= t) {
			p->now = t;
			return;
		}
		pair_advance(p, next);
	}
}

bool ovr_pair_poll(struct ovr_pair *p, int n, uint32_t cq,
		   struct ovr_eng_wc *wc)
{
	struct ovr_pair_cq *q = &p->n[n].cq[cq];

	if (q->head == q->tail)
		return false;
	*wc = q->wc[q->head++];
	return true;
}

size_t ovr_pair_cq_len(const struct ovr_pair *p, int n, uint32_t cq)
{
	return p->n[n].cq[cq].tail - p->n[n].cq[cq].head;
}
