// SPDX-License-Identifier: MIT
/*
 * Two engines of one node sharing one memory-region table
 * (ovr_eng_cfg.mr_share; engine/mrtab.h "Sharing"): engine A owns the
 * table, engine B uses it. QPs of A and of B talk to each other over
 * this test's wire (PDUs handed from one engine to the other, a round
 * per simulated microsecond). A region registered through one engine
 * serves WRITEs and SENDs posted and received on either, byte-exact; a
 * type-1 window bound through a QP of A serves a WRITE arriving at a QP
 * of B; a SEND_WITH_INV received on B takes the region's remote rights
 * for a WRITE arriving at A; deregistration is refused while work of
 * either engine names the region, and goes through once the other
 * engine's receives yielded it (ovr_eng_mr_yield); a re-registration
 * reaches the other engine's receives (ovr_eng_mr_recheck); A destroyed
 * before B leaves B's table - and the regions registered through A -
 * working, the references A's work held given back.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ovrdma/engine.h>

#include "eng_util.h"

#define NENG 3 /* A, B, and C in test_config */
#define NCQ 4
#define CQ_CAP 256
#define PD 5u
#define MEM (1u << 20)
#define ROUND_NS 1000u

enum { A = 0, B = 1 };

struct pdu {
	uint8_t *buf;
	uint32_t len;
	int src, dst;
};

struct rig;

struct node {
	struct rig *r;
	int idx;
	struct ovr_eng_wc wc[NCQ][CQ_CAP];
	size_t head[NCQ], tail[NCQ];
};

struct rig {
	struct ovr_eng *e[NENG];
	struct node n[NENG];
	uint64_t now;
	struct pdu *q; /* sent this round, delivered the next */
	size_t nq, capq;
	uint8_t *mem; /* the application's memory, both engines' */
	uint32_t key; /* a region over all of it, registered through A */
	uint32_t qa, qb; /* a QP on A and its peer on B */
};

static void *tx_alloc(void *ctx, uint32_t cap, void **token)
{
	(void)ctx;
	*token = malloc(cap);
	return *token;
}

static void tx(void *ctx, void *token, uint32_t len, uint64_t peer,
	       uint64_t qp_user)
{
	struct node *n = ctx;
	struct rig *r = n->r;

	(void)qp_user;
	if (!len || peer >= NENG) {
		free(token);
		return;
	}
	if (r->nq == r->capq) {
		r->capq = r->capq ? 2 * r->capq : 256;
		r->q = realloc(r->q, r->capq * sizeof(*r->q));
		assert_non_null(r->q);
	}
	r->q[r->nq++] = (struct pdu){ token, len, n->idx, (int)peer };
}

static void cqe(void *ctx, uint32_t cq, const struct ovr_eng_wc *wc)
{
	struct node *n = ctx;

	assert_true(cq < NCQ);
	assert_true(n->tail[cq] - n->head[cq] < CQ_CAP);
	n->wc[cq][n->tail[cq]++ % CQ_CAP] = *wc;
}

static const struct ovr_eng_ops ops = {
	.tx_alloc = tx_alloc,
	.tx = tx,
	.cqe = cqe,
};

static void cfg_of(struct ovr_eng_cfg *cfg, int idx)
{
	ovr_eng_cfg_default(cfg);
	cfg->max_qp = 16;
	cfg->max_mr = 64;
	cfg->max_srq = 0;
	cfg->seed = 0x5eed0 + (uint64_t)idx;
	cfg->qpn_tag = (uint32_t)idx;
	cfg->qpn_tag_bits = 2;
}

/* One round: what was sent last round arrives, every engine polls. */
static void step(struct rig *r)
{
	struct pdu *q = r->q;
	size_t nq = r->nq;

	r->q = NULL;
	r->nq = r->capq = 0;
	for (size_t i = 0; i < nq; i++) {
		if (r->e[q[i].dst])
			ovr_eng_rx_from(r->e[q[i].dst], r->now, q[i].buf,
					q[i].len, false, (uint64_t)q[i].src);
		free(q[i].buf);
	}
	free(q);
	for (int i = 0; i < NENG; i++)
		if (r->e[i])
			ovr_eng_poll(r->e[i], r->now, 0);
	r->now += ROUND_NS;
}

/* The next completion of engine @i's @cq, waiting up to 0.2 s. */
static struct ovr_eng_wc next_wc(struct rig *r, int i, uint32_t cq)
{
	struct node *n = &r->n[i];

	for (int k = 0; k < 200000 && n->head[cq] == n->tail[cq]; k++)
		step(r);
	assert_true(n->head[cq] != n->tail[cq]);
	return n->wc[cq][n->head[cq]++ % CQ_CAP];
}

/* Connect a QP on engine @i (cq 0 send, 1 recv) with one on engine @j
 * (cq 2, 3: a QP pair within one engine keeps its CQs apart). */
static void connect(struct rig *r, int i, int j, uint32_t *qi, uint32_t *qj)
{
	int eng[2] = { i, j };
	uint32_t qpn[2];
	struct ovr_eng_qp_attr a;

	for (int k = 0; k < 2; k++) {
		struct ovr_eng_qp_init init = {
			.pd = PD,
			.send_cq = 2 * (uint32_t)k,
			.recv_cq = 2 * (uint32_t)k + 1,
			.cap = { .max_send_wr = 64,
				 .max_recv_wr = 64,
				 .max_send_sge = 2,
				 .max_recv_sge = 2,
				 .max_inline_data = 64 },
		};

		assert_int_equal(
			ovr_eng_qp_create(r->e[eng[k]], &init, &qpn[k]), 0);
		memset(&a, 0, sizeof(a));
		a.qp_state = OVR_QPS_INIT;
		a.qp_access_flags = OVR_ACCESS_LOCAL_WRITE |
				    OVR_ACCESS_REMOTE_WRITE |
				    OVR_ACCESS_REMOTE_READ;
		assert_int_equal(ovr_eng_qp_modify(r->e[eng[k]], qpn[k], &a,
						   OVR_QP_STATE |
							   OVR_QP_PKEY_INDEX |
							   OVR_QP_PORT |
							   OVR_QP_ACCESS_FLAGS,
						   r->now),
				 0);
	}
	for (int k = 0; k < 2; k++) {
		memset(&a, 0, sizeof(a));
		a.qp_state = OVR_QPS_RTR;
		a.path_mtu = OVR_MTU_1024;
		a.dest_qp_num = qpn[1 - k];
		a.rq_psn = 0x100 * (uint32_t)(k + 1);
		a.peer = (uint64_t)eng[1 - k];
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 1;
		assert_int_equal(
			ovr_eng_qp_modify(
				r->e[eng[k]], qpn[k], &a,
				OVR_QP_STATE | OVR_QP_AV | OVR_QP_PATH_MTU |
					OVR_QP_DEST_QPN | OVR_QP_RQ_PSN |
					OVR_QP_MAX_DEST_RD_ATOMIC |
					OVR_QP_MIN_RNR_TIMER,
				r->now),
			0);
	}
	for (int k = 0; k < 2; k++) {
		memset(&a, 0, sizeof(a));
		a.qp_state = OVR_QPS_RTS;
		a.sq_psn = 0x100 * (uint32_t)(2 - k);
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7; /* an RNR wait lasts until a receive comes */
		a.max_rd_atomic = 4;
		assert_int_equal(
			ovr_eng_qp_modify(
				r->e[eng[k]], qpn[k], &a,
				OVR_QP_STATE | OVR_QP_SQ_PSN | OVR_QP_TIMEOUT |
					OVR_QP_RETRY_CNT | OVR_QP_RNR_RETRY |
					OVR_QP_MAX_QP_RD_ATOMIC,
				r->now),
			0);
	}
	*qi = qpn[0];
	*qj = qpn[1];
}

static uint64_t va(const struct rig *r, size_t off)
{
	return (uint64_t)(uintptr_t)(r->mem + off);
}

/* Engine @i's QP @qpn posts @op: @len bytes at @loff of the memory
 * through @lkey; remote @roff through @rkey. 0 or the post's error. */
static int post(struct rig *r, int i, uint32_t qpn, uint32_t op, uint32_t lkey,
		size_t loff, uint32_t len, uint32_t rkey, size_t roff,
		uint32_t inv)
{
	struct ovr_eng_sge sge = { va(r, loff), len, lkey };
	struct ovr_eng_send_wr wr = {
		.wr_id = 0x100 + op,
		.opcode = op,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.invalidate_rkey = inv,
		.rkey = rkey,
		.remote_addr = va(r, roff),
	};

	return ovr_eng_post_send(r->e[i], qpn, &wr, r->now);
}

static int post_recv(struct rig *r, int i, uint32_t qpn, uint32_t lkey,
		     size_t off, uint32_t len)
{
	struct ovr_eng_sge sge = { va(r, off), len, lkey };
	struct ovr_eng_recv_wr wr = { .wr_id = 0x777,
				      .sg_list = &sge,
				      .num_sge = 1 };

	return ovr_eng_post_recv(r->e[i], qpn, &wr, r->now);
}

static int setup(void **state)
{
	struct rig *r = calloc(1, sizeof(*r));
	struct ovr_eng_cfg cfg;

	assert_non_null(r);
	r->mem = calloc(1, MEM);
	assert_non_null(r->mem);
	r->now = 1000000;
	for (int i = 0; i < NENG; i++)
		r->n[i] = (struct node){ .r = r, .idx = i };
	cfg_of(&cfg, A);
	r->e[A] = ovr_eng_create(&cfg, &ops, &r->n[A]);
	assert_non_null(r->e[A]);
	cfg_of(&cfg, B);
	cfg.mr_share = r->e[A];
	cfg.max_mr = 0; /* ignored: A's table */
	r->e[B] = ovr_eng_create(&cfg, &ops, &r->n[B]);
	assert_non_null(r->e[B]);
	assert_int_equal(ovr_eng_reg_mr(r->e[A], PD, va(r, 0), MEM,
					OVR_ACCESS_LOCAL_WRITE |
						OVR_ACCESS_REMOTE_WRITE |
						OVR_ACCESS_REMOTE_READ,
					r->mem, &r->key),
			 0);
	connect(r, A, B, &r->qa, &r->qb);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct rig *r = *state;

	for (int i = 0; i < NENG; i++)
		ovr_eng_destroy(r->e[i]);
	for (size_t i = 0; i < r->nq; i++)
		free(r->q[i].buf);
	free(r->q);
	free(r->mem);
	free(r);
	return 0;
}

/* 1. The region registered through A, used by both engines: WRITEs
 * and SENDs in both directions (keys checked on the posting engine and
 * on the receiving one), byte-exact; only A counts the region. */
static void test_region_both_ways(void **state)
{
	struct rig *r = *state;
	struct ovr_eng_stats st;
	struct ovr_eng_wc wc;

	ovr_eng_get_stats(r->e[A], &st);
	assert_int_equal(st.mrs, 1);
	ovr_eng_get_stats(r->e[B], &st);
	assert_int_equal(st.mrs, 0);

	/* WRITE posted on B, arriving at A */
	fill_pattern(r->mem, 8192, 1);
	assert_int_equal(post(r, B, r->qb, OVR_WR_RDMA_WRITE, r->key, 0, 8192,
			      r->key, 131072, 0),
			 0);
	wc = next_wc(r, B, 2);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.opcode, OVR_WC_RDMA_WRITE);
	assert_memory_equal(r->mem + 131072, r->mem, 8192);

	/* WRITE posted on A, arriving at B */
	fill_pattern(r->mem + 65536, 5000, 2);
	assert_int_equal(post(r, A, r->qa, OVR_WR_RDMA_WRITE, r->key, 65536,
			      5000, r->key, 196608, 0),
			 0);
	wc = next_wc(r, A, 0);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_memory_equal(r->mem + 196608, r->mem + 65536, 5000);
	assert_int_equal(r->mem[196608 + 5000], 0);

	/* SEND B -> A into a receive posted on A, and A -> B */
	fill_pattern(r->mem, 3000, 3);
	assert_int_equal(post_recv(r, A, r->qa, r->key, 300000, 4096), 0);
	assert_int_equal(
		post(r, B, r->qb, OVR_WR_SEND, r->key, 0, 3000, 0, 0, 0), 0);
	wc = next_wc(r, A, 1);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.opcode, OVR_WC_RECV);
	assert_int_equal(wc.byte_len, 3000);
	assert_memory_equal(r->mem + 300000, r->mem, 3000);
	assert_int_equal(next_wc(r, B, 2).status, OVR_WC_SUCCESS);
	fill_pattern(r->mem + 65536, 2500, 4);
	assert_int_equal(post_recv(r, B, r->qb, r->key, 400000, 4096), 0);
	assert_int_equal(post(r, A, r->qa, OVR_WR_SEND, r->key, 65536, 2500, 0,
			      0, 0),
			 0);
	wc = next_wc(r, B, 3);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 2500);
	assert_memory_equal(r->mem + 400000, r->mem + 65536, 2500);
	assert_int_equal(next_wc(r, A, 0).status, OVR_WC_SUCCESS);

	/* every reference both engines took is back: it goes, through B */
	assert_int_equal(ovr_eng_dereg_mr(r->e[B], r->key), 0);
	assert_int_equal(ovr_eng_dereg_mr(r->e[A], r->key), -EINVAL);
	ovr_eng_get_stats(r->e[A], &st);
	assert_int_equal(st.mrs, 0);
}

#define WIN_MR 524288u /* a region for windows: [WIN_MR, + 64 KB) */
#define WIN_OFF 4096u /* the window in it */
#define WIN_LEN 8192u

/* 2. A type-1 window allocated through B, bound through A's QP, serves
 * WRITEs arriving at B (and at A); the region it is in cannot go while
 * it is bound; outside it, REM_ACCESS_ERR and nothing written. */
static void test_window_across(void **state)
{
	struct rig *r = *state;
	uint32_t mr, mw, k;
	struct ovr_eng_send_wr bind = {
		.wr_id = 0xb1,
		.opcode = OVR_WR_BIND_MW,
		.send_flags = OVR_SEND_SIGNALED,
	};
	struct ovr_eng_wc wc;
	uint8_t before[16];
	uint8_t *w;

	/* the region has no remote right of its own */
	assert_int_equal(ovr_eng_reg_mr(r->e[B], PD, va(r, WIN_MR), 65536,
					OVR_ACCESS_LOCAL_WRITE |
						OVR_ACCESS_MW_BIND,
					r->mem + WIN_MR, &mr),
			 0);
	assert_int_equal(ovr_eng_alloc_mw(r->e[B], PD, OVR_MW_TYPE_1, &mw), 0);
	k = (mw & ~0xffu) | ((mw + 1) & 0xffu);
	bind.bind_mw.mw_rkey = mw;
	bind.bind_mw.rkey = k;
	bind.bind_mw.mr_lkey = mr;
	bind.bind_mw.access = OVR_ACCESS_REMOTE_WRITE;
	bind.bind_mw.addr = va(r, WIN_MR + WIN_OFF);
	bind.bind_mw.length = WIN_LEN;
	assert_int_equal(ovr_eng_post_send(r->e[A], r->qa, &bind, r->now), 0);
	wc = next_wc(r, A, 0);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.opcode, OVR_WC_BIND_MW);

	/* the region itself: no remote access (arriving at B) */
	memset(r->mem + WIN_MR, 0x5a, 65536);
	w = r->mem + WIN_MR + WIN_OFF;
	/* through the window, from A's QP to B's */
	fill_pattern(r->mem, WIN_LEN, 5);
	assert_int_equal(post(r, A, r->qa, OVR_WR_RDMA_WRITE, r->key, 0,
			      WIN_LEN, k, WIN_MR + WIN_OFF, 0),
			 0);
	wc = next_wc(r, A, 0);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_memory_equal(w, r->mem, WIN_LEN);
	assert_int_equal(w[-1], 0x5a);
	assert_int_equal(w[WIN_LEN], 0x5a);
	/* and from B's QP to A's: a type-1 window serves any QP */
	fill_pattern(r->mem, 100, 6);
	assert_int_equal(post(r, B, r->qb, OVR_WR_RDMA_WRITE, r->key, 0, 100, k,
			      WIN_MR + WIN_OFF + 1000, 0),
			 0);
	assert_int_equal(next_wc(r, B, 2).status, OVR_WC_SUCCESS);
	assert_memory_equal(w + 1000, r->mem, 100);

	/* bound: the region stays, through either engine */
	assert_int_equal(ovr_eng_dereg_mr(r->e[A], mr), -EBUSY);
	assert_int_equal(ovr_eng_dereg_mr(r->e[B], mr), -EBUSY);

	/* one byte past the window, arriving at B: refused, not written */
	memcpy(before, w + WIN_LEN - 15, 16);
	fill_pattern(r->mem, 16, 7);
	assert_int_equal(post(r, A, r->qa, OVR_WR_RDMA_WRITE, r->key, 0, 16, k,
			      WIN_MR + WIN_OFF + WIN_LEN - 15, 0),
			 0);
	assert_int_equal(next_wc(r, A, 0).status, OVR_WC_REM_ACCESS_ERR);
	assert_memory_equal(w + WIN_LEN - 15, before, 16);
	assert_memory_not_equal(r->mem, before, 16);

	/* deallocated through A: the region can go */
	assert_int_equal(ovr_eng_dealloc_mw(r->e[A], k), 0);
	assert_int_equal(ovr_eng_dereg_mr(r->e[A], mr), 0);
}

/* 3. SEND_WITH_INV of a region's key received on B: a later WRITE
 * through it arriving at A fails REM_ACCESS_ERR, nothing written. */
static void test_send_inv_across(void **state)
{
	struct rig *r = *state;
	struct ovr_eng_wc wc;
	uint32_t mr;

	assert_int_equal(ovr_eng_reg_mr(r->e[A], PD, va(r, 600000), 65536,
					OVR_ACCESS_LOCAL_WRITE |
						OVR_ACCESS_REMOTE_WRITE,
					r->mem + 600000, &mr),
			 0);
	/* before: B's WRITE into it at A goes through */
	fill_pattern(r->mem, 512, 8);
	assert_int_equal(post(r, B, r->qb, OVR_WR_RDMA_WRITE, r->key, 0, 512,
			      mr, 600000, 0),
			 0);
	assert_int_equal(next_wc(r, B, 2).status, OVR_WC_SUCCESS);
	assert_memory_equal(r->mem + 600000, r->mem, 512);

	/* A sends B a SEND_WITH_INV of it; B's receive completes WITH_INV */
	assert_int_equal(post_recv(r, B, r->qb, r->key, 700000, 256), 0);
	assert_int_equal(post(r, A, r->qa, OVR_WR_SEND_WITH_INV, r->key, 0, 64,
			      0, 0, mr),
			 0);
	wc = next_wc(r, B, 3);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_true(wc.wc_flags & OVR_WC_WITH_INV);
	assert_int_equal(wc.imm_data, mr);
	assert_int_equal(next_wc(r, A, 0).status, OVR_WC_SUCCESS);

	/* after: the same WRITE arriving at A is refused */
	memset(r->mem + 600000, 0xee, 512);
	assert_int_equal(post(r, B, r->qb, OVR_WR_RDMA_WRITE, r->key, 0, 512,
			      mr, 600000, 0),
			 0);
	assert_int_equal(next_wc(r, B, 2).status, OVR_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 512; i++)
		assert_int_equal(r->mem[600000 + i], 0xee);
}

/* 4. Deregistration while work of the other engine names the region:
 * a send-side WR keeps it (whatever yields), a receive posted on B
 * gives way once B yielded it. */
static void test_dereg_yield(void **state)
{
	struct rig *r = *state;
	struct ovr_eng_wc wc;
	uint32_t snd, rcv;

	assert_int_equal(ovr_eng_reg_mr(r->e[A], PD, va(r, 800000), 4096,
					OVR_ACCESS_LOCAL_WRITE, r->mem + 800000,
					&snd),
			 0);
	assert_int_equal(ovr_eng_reg_mr(r->e[A], PD, va(r, 810000), 4096,
					OVR_ACCESS_LOCAL_WRITE, r->mem + 810000,
					&rcv),
			 0);
	/* a SEND from B's region-naming SGE, no receive at A yet: the WR
	 * waits (RNR, retried forever) and holds the region */
	fill_pattern(r->mem + 800000, 100, 9);
	assert_int_equal(
		post(r, B, r->qb, OVR_WR_SEND, snd, 800000, 100, 0, 0, 0), 0);
	for (int i = 0; i < 50; i++)
		step(r);
	assert_int_equal(ovr_eng_dereg_mr(r->e[A], snd), -EBUSY);
	assert_int_equal(ovr_eng_mr_yield(r->e[A], snd), 0);
	assert_int_equal(ovr_eng_mr_yield(r->e[B], snd), 0);
	assert_int_equal(ovr_eng_dereg_mr(r->e[A], snd), -EBUSY);
	assert_int_equal(ovr_eng_dereg_mr(r->e[B], snd), -EBUSY);
	/* a receive comes: the SEND completes, the region is free */
	assert_int_equal(post_recv(r, A, r->qa, r->key, 820000, 256), 0);
	wc = next_wc(r, A, 1);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_memory_equal(r->mem + 820000, r->mem + 800000, 100);
	assert_int_equal(next_wc(r, B, 2).status, OVR_WC_SUCCESS);
	assert_int_equal(ovr_eng_dereg_mr(r->e[A], snd), 0);

	/* a receive posted on B names rcv: A's deregistration is refused
	 * (A's own receives are not what holds it) */
	assert_int_equal(post_recv(r, B, r->qb, rcv, 810000, 256), 0);
	assert_int_equal(ovr_eng_dereg_mr(r->e[A], rcv), -EBUSY);
	assert_int_equal(ovr_eng_mr_yield(r->e[A], rcv), 0);
	assert_int_equal(ovr_eng_mr_yield(r->e[B], 0x12345678), -EINVAL);
	assert_int_equal(ovr_eng_mr_yield(r->e[B], rcv), 1);
	assert_int_equal(ovr_eng_dereg_mr(r->e[A], rcv), 0);
	/* the revoked receive refuses the next message: LOC_PROT_ERR on
	 * B, REM_OP_ERR for A's SEND, and the memory is not touched */
	memset(r->mem + 810000, 0xcc, 256);
	fill_pattern(r->mem, 64, 10);
	assert_int_equal(post(r, A, r->qa, OVR_WR_SEND, r->key, 0, 64, 0, 0, 0),
			 0);
	assert_int_equal(next_wc(r, B, 3).status, OVR_WC_LOC_PROT_ERR);
	assert_int_equal(next_wc(r, A, 0).status, OVR_WC_REM_OP_ERR);
	for (int i = 0; i < 256; i++)
		assert_int_equal(r->mem[810000 + i], 0xcc);
}

/* 5. Re-registration through A without LOCAL_WRITE: B's receive naming
 * the region, checked again by ovr_eng_mr_recheck, refuses the next
 * message. */
static void test_rereg_recheck(void **state)
{
	struct rig *r = *state;
	uint32_t mr;

	assert_int_equal(ovr_eng_reg_mr(r->e[A], PD, va(r, 900000), 4096,
					OVR_ACCESS_LOCAL_WRITE, r->mem + 900000,
					&mr),
			 0);
	assert_int_equal(post_recv(r, B, r->qb, mr, 900000, 256), 0);
	assert_int_equal(ovr_eng_mr_modify(r->e[A], mr, PD, 0), 0);
	ovr_eng_mr_recheck(r->e[B], mr);
	ovr_eng_mr_recheck(r->e[B], 0x12345678); /* no such region: nothing */
	memset(r->mem + 900000, 0xcc, 256);
	fill_pattern(r->mem, 64, 11);
	assert_int_equal(post(r, A, r->qa, OVR_WR_SEND, r->key, 0, 64, 0, 0, 0),
			 0);
	assert_int_equal(next_wc(r, B, 3).status, OVR_WC_LOC_PROT_ERR);
	assert_int_equal(next_wc(r, A, 0).status, OVR_WC_REM_OP_ERR);
	for (int i = 0; i < 256; i++)
		assert_int_equal(r->mem[900000 + i], 0xcc);
	/* the rereg took the receive's reference: the region can go */
	assert_int_equal(ovr_eng_dereg_mr(r->e[A], mr), 0);
}

/* 6. A destroyed first, with a receive of its own still naming the
 * region: B's table lives on, the region registered through A serves
 * B's QPs byte-exact, and A's reference went with A (the region
 * deregisters through B). */
static void test_destroy_order(void **state)
{
	struct rig *r = *state;
	struct ovr_eng_stats st;
	struct ovr_eng_wc wc;
	uint32_t b1, b2, mr;

	connect(r, B, B, &b1, &b2); /* a QP pair within B */
	assert_int_equal(post_recv(r, A, r->qa, r->key, 10000, 256), 0);
	/* held by A's receive: B cannot take it away */
	assert_int_equal(ovr_eng_dereg_mr(r->e[B], r->key), -EBUSY);
	ovr_eng_destroy(r->e[A]);
	r->e[A] = NULL;

	fill_pattern(r->mem, 6000, 12);
	assert_int_equal(post(r, B, b1, OVR_WR_RDMA_WRITE, r->key, 0, 6000,
			      r->key, 20000, 0),
			 0);
	assert_int_equal(next_wc(r, B, 0).status, OVR_WC_SUCCESS);
	assert_memory_equal(r->mem + 20000, r->mem, 6000);
	assert_int_equal(post_recv(r, B, b2, r->key, 40000, 4096), 0);
	assert_int_equal(
		post(r, B, b1, OVR_WR_SEND, r->key, 100, 1000, 0, 0, 0), 0);
	wc = next_wc(r, B, 3);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 1000);
	assert_memory_equal(r->mem + 40000, r->mem + 100, 1000);
	assert_int_equal(next_wc(r, B, 0).status, OVR_WC_SUCCESS);

	/* registration goes on through B; a sharer counts no regions */
	assert_int_equal(ovr_eng_reg_mr(r->e[B], PD, va(r, 50000), 100,
					OVR_ACCESS_LOCAL_WRITE, r->mem + 50000,
					&mr),
			 0);
	ovr_eng_get_stats(r->e[B], &st);
	assert_int_equal(st.mrs, 0);
	assert_int_equal(ovr_eng_dereg_mr(r->e[B], mr), 0);
	assert_int_equal(ovr_eng_dereg_mr(r->e[B], r->key), 0);
}

static int dev_copy(void *ctx, void *dev, uint64_t off, void *host,
		    uint32_t len, bool to_dev, uint32_t msg_len,
		    unsigned int flags)
{
	(void)ctx;
	(void)dev;
	(void)off;
	(void)host;
	(void)len;
	(void)to_dev;
	(void)msg_len;
	(void)flags;
	return -EIO;
}

/* 7. Configuration: a sharer needs no max_mr, a lone engine does; both
 * have ops.dev_copy or neither; a sharer of a sharer shares the one
 * table. */
static void test_config(void **state)
{
	struct rig *r = *state;
	struct ovr_eng_ops dops = ops;
	struct ovr_eng_cfg cfg;
	uint32_t mr;

	dops.dev_copy = dev_copy;
	cfg_of(&cfg, 2);
	cfg.max_mr = 0;
	errno = 0;
	assert_null(ovr_eng_create(&cfg, &ops, &r->n[2]));
	assert_int_equal(errno, EINVAL);
	cfg.mr_share = r->e[B];
	errno = 0;
	assert_null(ovr_eng_create(&cfg, &dops, &r->n[2]));
	assert_int_equal(errno, EINVAL);
	r->e[2] = ovr_eng_create(&cfg, &ops, &r->n[2]);
	assert_non_null(r->e[2]);
	/* C sees what A registered, A what C did */
	assert_int_equal(ovr_eng_reg_mr(r->e[2], PD, va(r, 0), 64,
					OVR_ACCESS_LOCAL_WRITE, r->mem, &mr),
			 0);
	assert_int_equal(ovr_eng_dereg_mr(r->e[A], mr), 0);
	assert_int_equal(ovr_eng_dereg_mr(r->e[2], r->key), 0);
	assert_int_equal(ovr_eng_dereg_mr(r->e[A], r->key), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_region_both_ways, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_window_across, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_send_inv_across, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dereg_yield, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_rereg_recheck, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_destroy_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_config, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
