// SPDX-License-Identifier: MIT
/*
 * Unreliable datagram QPs (docs/TRANSPORT.md §11): the UD modify table,
 * ping-pong byte-exact with GRH, src_qp and immediates, no retransmission
 * under loss (every loss counted by the link, nothing sent twice), qkey
 * mismatch and missing receives dropped and counted, sends over the MTU
 * not sent (C10-93.1.1), short receive buffers, SQE on a local error,
 * and receives from an SRQ.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

#include "eng_util.h"

#define QKEY 0x11110000u
#define GRH OVR_GRH_LEN

struct fix {
	struct ovr_pair *p;
	uint32_t qpn[2];
	uint32_t srq;
};

/* A UD QP on node @n through INIT (qkey), RTR, RTS, as verbs wants. */
static uint32_t ud_qp(struct ovr_pair *p, int n, uint32_t qkey, uint32_t srq)
{
	struct ovr_eng *e = p->n[n].eng;
	struct ovr_eng_qp_init init = {
		.pd = p->n[n].pd,
		.send_cq = 0,
		.recv_cq = 1,
		.user = 100 + (uint64_t)n,
		.cap = { 64, 256, 2, 2, 64 },
		.srq = srq,
		.qp_type = OVR_QPT_UD,
	};
	struct ovr_eng_qp_attr a = { .qp_state = OVR_QPS_INIT, .qkey = qkey };
	uint32_t qpn;

	assert_int_equal(ovr_eng_qp_create(e, &init, &qpn), 0);
	/* UD INIT takes QKEY, not access flags */
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a,
					   OVR_QP_STATE | OVR_QP_PKEY_INDEX |
						   OVR_QP_PORT,
					   p->now),
			 -EINVAL);
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a,
					   OVR_QP_STATE | OVR_QP_PKEY_INDEX |
						   OVR_QP_PORT |
						   OVR_QP_ACCESS_FLAGS,
					   p->now),
			 -EINVAL);
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a,
					   OVR_QP_STATE | OVR_QP_PKEY_INDEX |
						   OVR_QP_PORT | OVR_QP_QKEY,
					   p->now),
			 0);
	/* RTR needs nothing; a path (AV, DEST_QPN, ...) is refused */
	a.qp_state = OVR_QPS_RTR;
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a, OVR_QP_STATE | OVR_QP_AV,
					   p->now),
			 -EINVAL);
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a, OVR_QP_STATE, p->now),
			 0);
	/* RTS needs SQ_PSN */
	a.qp_state = OVR_QPS_RTS;
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a, OVR_QP_STATE, p->now),
			 -EINVAL);
	a.sq_psn = 1234;
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a,
					   OVR_QP_STATE | OVR_QP_SQ_PSN,
					   p->now),
			 0);
	assert_int_equal(ovr_eng_qp_query(e, qpn, &a), 0);
	assert_int_equal(a.qp_state, OVR_QPS_RTS);
	assert_int_equal(a.qkey, qkey);
	assert_int_equal(a.path_mtu, OVR_MTU_4096);
	return qpn;
}

static struct fix *setup_with(double loss, bool srq)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct ovr_pair_cfg cfg;

	assert_non_null(f);
	ovr_pair_cfg_default(&cfg);
	cfg.mem_bytes = 8u << 20;
	for (int i = 0; i < 2; i++)
		cfg.link[i].loss = loss;
	f->p = ovr_pair_create(&cfg);
	assert_non_null(f->p);
	if (srq) {
		struct ovr_eng_srq_init si = { .pd = f->p->n[1].pd,
					       .attr = { 16, 1, 0 } };

		assert_int_equal(
			ovr_eng_srq_create(f->p->n[1].eng, &si, &f->srq), 0);
	}
	f->qpn[0] = ud_qp(f->p, 0, QKEY, 0);
	f->qpn[1] = ud_qp(f->p, 1, QKEY, f->srq);
	return f;
}

static int setup_clean(void **state)
{
	*state = setup_with(0, false);
	return 0;
}

static int setup_lossy(void **state)
{
	*state = setup_with(0.3, false);
	return 0;
}

static int setup_srq(void **state)
{
	*state = setup_with(0, true);
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	ovr_pair_destroy(f->p);
	free(f);
	return 0;
}

/* Send @len bytes at arena offset @off from node @n to the other node's
 * QP (through address vector 1 - n). */
static int ud_send(struct fix *f, int n, uint64_t wr_id, size_t off,
		   uint32_t len, uint32_t qkey, bool imm)
{
	struct ovr_pair *p = f->p;
	struct ovr_eng_sge sge = { ovr_pair_va(p, n, off), len, p->n[n].key };
	struct ovr_eng_send_wr wr = {
		.wr_id = wr_id,
		.opcode = imm ? OVR_WR_SEND_WITH_IMM : OVR_WR_SEND,
		/* every third datagram solicited */
		.send_flags = OVR_SEND_SIGNALED |
			      (wr_id % 3 == 1 ? OVR_SEND_SOLICITED : 0),
		.sg_list = &sge,
		.num_sge = len ? 1 : 0,
		.imm_data = (uint32_t)wr_id * 3,
		/* the rig routes by node; the value is checked in ops->tx */
		.ud_peer = 0x77000 + (uint64_t)(1 - n),
		.remote_qpn = f->qpn[1 - n],
		.remote_qkey = qkey,
	};

	return ovr_eng_post_send(p->n[n].eng, f->qpn[n], &wr, p->now);
}

/* Check the receive completion @wc on node @n: GRH from the other node,
 * then @len bytes equal to node (1 - n)'s arena at @src. */
static void check_dgram(struct fix *f, int n, const struct ovr_eng_wc *wc,
			size_t dst, size_t src, uint32_t len)
{
	struct ovr_pair *p = f->p;
	uint64_t from, user;

	assert_int_equal(wc->status, OVR_WC_SUCCESS);
	assert_int_equal(wc->opcode, OVR_WC_RECV);
	assert_int_equal(wc->byte_len, GRH + len);
	assert_int_equal(wc->qp_num, f->qpn[n]);
	assert_int_equal(wc->src_qp, f->qpn[1 - n]);
	assert_true(wc->wc_flags & OVR_WC_GRH);
	memcpy(&from, p->n[n].mem + dst, 8);
	memcpy(&user, p->n[n].mem + dst + 8, 8);
	assert_int_equal(from, 1 - n);
	assert_int_equal(user, 100 + n);
	assert_int_equal(p->n[n].mem[dst + GRH - 1], 0xab);
	assert_memory_equal(p->n[n].mem + dst + GRH, p->n[1 - n].mem + src,
			    len);
}

static void test_ud_ping_pong(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_wc wc;

	fill_pattern(p->n[0].mem, 1u << 20, 1);
	fill_pattern(p->n[1].mem, 1u << 20, 2);
	for (int i = 0; i < 40; i++) {
		/* 0 .. 4096 bytes: the MTU itself included */
		uint32_t len = i == 39 ? 4096 : (uint32_t)(i * 613) % 4097;
		size_t src = (size_t)i * 8192, dst = (4u << 20) + 8192;
		bool imm = i & 1;

		assert_int_equal(post_recv_one(p, 1, f->qpn[1], 1000 + i, dst,
					       GRH + 4096),
				 0);
		assert_int_equal(
			ud_send(f, 0, (uint64_t)i, src, len, QKEY, imm), 0);
		assert_true(wait_cq(p, 1, 1, 1));
		assert_true(ovr_pair_poll(p, 1, 1, &wc));
		assert_int_equal(wc.wr_id, 1000 + i);
		check_dgram(f, 1, &wc, dst, src, len);
		assert_int_equal(!!(wc.wc_flags & OVR_WC_WITH_IMM), imm);
		assert_int_equal(!!(wc.wc_flags & OVR_WC_SOLICITED),
				 i % 3 == 1);
		if (imm)
			assert_int_equal(wc.imm_data, (uint32_t)i * 3);
		assert_true(ovr_pair_poll(p, 0, 0, &wc));
		assert_int_equal(wc.wr_id, (uint64_t)i);
		assert_int_equal(wc.status, OVR_WC_SUCCESS);
		assert_int_equal(wc.opcode, OVR_WC_SEND);
		/* pong, to where the ping came from */
		assert_int_equal(post_recv_one(p, 0, f->qpn[0], 2000 + i, dst,
					       GRH + 4096),
				 0);
		assert_int_equal(
			ud_send(f, 1, (uint64_t)i, src, len, QKEY, false), 0);
		assert_true(wait_cq(p, 0, 1, 1));
		/* sent through the WR's address vector, as QP 101's */
		assert_int_equal(p->n[1].last_peer, 0x77000);
		assert_int_equal(p->n[1].last_user, 101);
		assert_true(ovr_pair_poll(p, 0, 1, &wc));
		assert_int_equal(wc.wr_id, 2000 + i);
		check_dgram(f, 0, &wc, dst, src, len);
		assert_true(ovr_pair_poll(p, 1, 0, &wc));
		assert_int_equal(wc.status, OVR_WC_SUCCESS);
	}
}

static void test_ud_loss_not_retransmitted(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_link_stats ls;
	struct ovr_eng_qp_stats qs;
	struct ovr_eng_stats es;
	struct ovr_eng_wc wc;
	int n = 200, got = 0, last = -1;

	for (int i = 0; i < n; i++) {
		uint8_t *b = p->n[0].mem + (size_t)i * 1024;

		fill_pattern(b, 1000, (uint64_t)i + 7);
		memcpy(b, &i, sizeof(i)); /* sequence number first */
		assert_int_equal(post_recv_one(p, 1, f->qpn[1], (uint64_t)i,
					       (1u << 20) + (size_t)i * 2048,
					       2048),
				 0);
	}
	for (int i = 0; i < n; i++) {
		assert_int_equal(ud_send(f, 0, (uint64_t)i, (size_t)i * 1024,
					 1000, QKEY, false),
				 0);
		if (i % 50 == 49)
			ovr_pair_run(p, NULL, NULL, p->now + 100000);
	}
	ovr_pair_run(p, NULL, NULL, p->now + 100000000);
	/* every send completed, successfully: UD does not know */
	for (int i = 0; i < n; i++) {
		assert_true(ovr_pair_poll(p, 0, 0, &wc));
		assert_int_equal(wc.wr_id, (uint64_t)i);
		assert_int_equal(wc.status, OVR_WC_SUCCESS);
	}
	/* receives complete in the order of their posting, each with the
	 * next datagram that survived, in sending order, byte-exact */
	while (ovr_pair_poll(p, 1, 1, &wc)) {
		int seq;

		assert_int_equal(wc.wr_id, (uint64_t)got);
		memcpy(&seq,
		       p->n[1].mem + (1u << 20) + (size_t)got * 2048 + GRH,
		       sizeof(seq));
		assert_true(seq > last && seq < n);
		check_dgram(f, 1, &wc, (1u << 20) + (size_t)got * 2048,
			    (size_t)seq * 1024, 1000);
		last = seq;
		got++;
	}
	ovr_link_get_stats(p->n[0].out, &ls);
	assert_true(got > n / 2 && got < n); /* 30 % loss */
	assert_int_equal(ls.sent, n); /* each datagram once */
	assert_int_equal(ls.lost, n - got);
	assert_int_equal(ovr_eng_qp_stats(p->n[0].eng, f->qpn[0], &qs), 0);
	assert_int_equal(qs.tx_pkts, n);
	assert_int_equal(qs.retx_pkts, 0);
	ovr_eng_get_stats(p->n[0].eng, &es);
	assert_int_equal(es.tx_pkts, n);
	/* nothing came back: no ACKs */
	ovr_link_get_stats(p->n[1].out, &ls);
	assert_int_equal(ls.sent, 0);
}

static void test_ud_qkey(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_stats es;
	struct ovr_eng_wc wc;

	fill_pattern(p->n[0].mem, 64, 5);
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 7, 4096, 1024), 0);
	assert_int_equal(ud_send(f, 0, 1, 0, 64, QKEY + 1, false), 0);
	ovr_pair_run(p, NULL, NULL, p->now + 1000000);
	assert_int_equal(ovr_pair_cq_len(p, 1, 1), 0);
	ovr_eng_get_stats(p->n[1].eng, &es);
	assert_int_equal(es.rx_ud_qkey, 1);
	/* the receive is still there for the right qkey; bit 31 sends the
	 * QP's own qkey (verbs' controlled qkey) */
	assert_int_equal(ud_send(f, 0, 2, 0, 64, 0x80000000u, false), 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 7);
	check_dgram(f, 1, &wc, 4096, 0, 64);
	ovr_eng_get_stats(p->n[1].eng, &es);
	assert_int_equal(es.rx_ud_qkey, 1);
}

static void test_ud_too_long_and_opcodes(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_stats es;
	struct ovr_eng_wc wc;
	uint64_t tx0 = p->n[0].tx_pkts;

	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 7, 0, 8192), 0);
	/* over the MTU: completes, successfully, and sends nothing */
	assert_int_equal(ud_send(f, 0, 1, 0, 4097, QKEY, false), 0);
	ovr_pair_run(p, NULL, NULL, p->now + 1000000);
	assert_true(ovr_pair_poll(p, 0, 0, &wc));
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(p->n[0].tx_pkts, tx0);
	assert_int_equal(ovr_pair_cq_len(p, 1, 1), 0);
	ovr_eng_get_stats(p->n[0].eng, &es);
	assert_int_equal(es.tx_ud_too_long, 1);
	/* only SEND and SEND_WITH_IMM */
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 3, 0, 8,
				  0, 0),
			 EINVAL);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_READ, 3, 0, 8, 0,
				  0),
			 EINVAL);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_ATOMIC_FETCH_AND_ADD,
				  3, 0, 8, 0, 0),
			 EINVAL);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND_WITH_INV, 3, 0,
				  8, 0, 0),
			 EINVAL);
	/* a receive too short for GRH + payload completes LOC_LEN_ERR and
	 * the QP goes on */
	assert_true(ovr_pair_poll(p, 0, 0, &wc) == false);
	assert_int_equal(ud_send(f, 0, 4, 0, 8192 - GRH, QKEY, false), 0);
	ovr_pair_run(p, NULL, NULL, p->now + 1000000);
	assert_int_equal(ovr_pair_cq_len(p, 1, 1), 0); /* over the MTU */
	assert_true(ovr_pair_poll(p, 0, 0, &wc));
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 8, 8192, 100), 0);
	/* receive 7 (8192 B) gets this one; 8 (100 B) the next */
	assert_int_equal(ud_send(f, 0, 5, 0, 100, QKEY, false), 0);
	assert_int_equal(ud_send(f, 0, 6, 0, 100, QKEY, false), 0);
	assert_true(wait_cq(p, 1, 1, 2));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 7);
	check_dgram(f, 1, &wc, 0, 0, 100);
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 8);
	assert_int_equal(wc.status, OVR_WC_LOC_LEN_ERR);
	{
		struct ovr_eng_qp_attr a;

		assert_int_equal(ovr_eng_qp_query(p->n[1].eng, f->qpn[1], &a),
				 0);
		assert_int_equal(a.qp_state, OVR_QPS_RTS);
	}
}

static void test_ud_no_recv(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_stats es;
	struct ovr_eng_wc wc;

	for (int i = 0; i < 5; i++)
		assert_int_equal(ud_send(f, 0, (uint64_t)i, 0, 10, QKEY, false),
				 0);
	ovr_pair_run(p, NULL, NULL, p->now + 1000000);
	ovr_eng_get_stats(p->n[1].eng, &es);
	assert_int_equal(es.rx_ud_norecv, 5);
	assert_int_equal(ovr_pair_cq_len(p, 1, 1), 0);
	assert_int_equal(ovr_pair_cq_len(p, 0, 0), 5);
	/* nothing waits to be resent: one receive, one datagram */
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 9, 0, 100), 0);
	ovr_pair_run(p, NULL, NULL, p->now + 1000000);
	assert_int_equal(ovr_pair_cq_len(p, 1, 1), 0);
	assert_int_equal(ud_send(f, 0, 9, 0, 10, QKEY, false), 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 9);
	check_dgram(f, 1, &wc, 0, 0, 10);
}

/* A bad local key: that WR fails, later ones flush, the QP goes to SQE,
 * still receives, and modify SQE -> RTS sends again. */
static void test_ud_sqe(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, 0), 64, p->n[0].key ^ 1 };
	struct ovr_eng_send_wr wr = {
		.wr_id = 1,
		.opcode = OVR_WR_SEND,
		.sg_list = &sge,
		.num_sge = 1,
		.ud_peer = 1,
		.remote_qpn = f->qpn[1],
		.remote_qkey = QKEY,
	};
	struct ovr_eng_qp_attr a = { .qp_state = OVR_QPS_RTS };
	struct ovr_eng_wc wc;

	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, 0), 0);
	assert_int_equal(ud_send(f, 0, 2, 0, 10, QKEY, false), 0);
	ovr_pair_run(p, NULL, NULL, p->now + 1000000);
	assert_true(ovr_pair_poll(p, 0, 0, &wc));
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, OVR_WC_LOC_PROT_ERR);
	assert_true(ovr_pair_poll(p, 0, 0, &wc));
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, OVR_WC_WR_FLUSH_ERR);
	assert_int_equal(ovr_eng_qp_query(p->n[0].eng, f->qpn[0], &a), 0);
	assert_int_equal(a.qp_state, OVR_QPS_SQE);
	/* posted in SQE: flushed at once */
	assert_int_equal(ud_send(f, 0, 3, 0, 10, QKEY, false), 0);
	assert_true(ovr_pair_poll(p, 0, 0, &wc));
	assert_int_equal(wc.status, OVR_WC_WR_FLUSH_ERR);
	/* it still receives */
	assert_int_equal(post_recv_one(p, 0, f->qpn[0], 4, 0, 100), 0);
	assert_int_equal(ud_send(f, 1, 4, 0, 10, QKEY, false), 0);
	assert_true(wait_cq(p, 0, 1, 1));
	assert_true(ovr_pair_poll(p, 0, 1, &wc));
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	a = (struct ovr_eng_qp_attr){ .qp_state = OVR_QPS_RTS };
	assert_int_equal(ovr_eng_qp_modify(p->n[0].eng, f->qpn[0], &a,
					   OVR_QP_STATE, p->now),
			 0);
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 5, 0, 100), 0);
	assert_int_equal(ud_send(f, 0, 5, 0, 10, QKEY, false), 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
}

static void test_ud_srq(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_sge sge = { ovr_pair_va(p, 1, 0), 2048, p->n[1].key };
	struct ovr_eng_stats es;
	struct ovr_eng_wc wc;

	fill_pattern(p->n[0].mem, 8192, 11);
	/* the UD QP has no receive queue of its own */
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 1, 0, 64), EINVAL);
	for (int i = 0; i < 3; i++) {
		struct ovr_eng_recv_wr wr = { (uint64_t)i, &sge, 1 };

		sge.addr = ovr_pair_va(p, 1, (size_t)i * 2048);
		assert_int_equal(
			ovr_eng_post_srq_recv(p->n[1].eng, f->srq, &wr, 0), 0);
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(ud_send(f, 0, (uint64_t)i, (size_t)i * 1024,
					 1000, QKEY, false),
				 0);
	ovr_pair_run(p, NULL, NULL, p->now + 1000000);
	for (int i = 0; i < 3; i++) {
		assert_true(ovr_pair_poll(p, 1, 1, &wc));
		assert_int_equal(wc.wr_id, (uint64_t)i);
		check_dgram(f, 1, &wc, (size_t)i * 2048, (size_t)i * 1024,
			    1000);
	}
	ovr_eng_get_stats(p->n[1].eng, &es);
	assert_int_equal(es.rx_ud_norecv, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ud_ping_pong, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_ud_loss_not_retransmitted,
						setup_lossy, teardown),
		cmocka_unit_test_setup_teardown(test_ud_qkey, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_ud_too_long_and_opcodes,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_ud_no_recv, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_ud_sqe, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_ud_srq, setup_srq,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
