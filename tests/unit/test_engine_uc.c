// SPDX-License-Identifier: MIT
/*
 * Unreliable connected QPs (engine/eng_uc.c): the UC modify table,
 * SEND / SEND_IMM / WRITE / WRITE_IMM byte-exact on a clean link with
 * the sender completing on its own (the responder sends nothing at all),
 * a lost packet dropping exactly its message (later ones delivered, the
 * receive it had begun reused), no receive / a short receive / a bad
 * rkey dropping the message silently, READ and atomics refused at
 * posting, hostile packets (opcodes UC does not carry, duplicates, a
 * forged continuation) dropped and counted, a storm of forged packets,
 * memory gone under a registration, 5-15 % loss and reordering, and
 * memory windows bound and invalidated through a UC QP.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>

#include <ovrdma/wire_codec.h>

#include "eng_util.h"

#define MTU OVR_MTU_1024 /* 1024-byte segments: messages of many packets */
#define SEG 1024u

struct fix {
	struct ovr_pair *p;
	uint32_t qpn[2];
	uint32_t srq; /* node 1's, if any */
};

/* A UC QP on node @n: create and INIT (PKEY_INDEX, PORT, ACCESS). */
static uint32_t uc_create(struct ovr_pair *p, int n, uint32_t srq)
{
	struct ovr_eng_qp_init init = {
		.pd = p->n[n].pd,
		.send_cq = 0,
		.recv_cq = 1,
		.user = (uint64_t)n,
		.cap = { 64, 64, 2, 2, 64 },
		.srq = srq,
		.qp_type = OVR_QPT_UC,
	};
	struct ovr_eng_qp_attr a = {
		.qp_state = OVR_QPS_INIT,
		.qp_access_flags = OVR_ACCESS_LOCAL_WRITE |
				   OVR_ACCESS_REMOTE_WRITE,
	};
	uint32_t qpn;

	assert_int_equal(ovr_eng_qp_create(p->n[n].eng, &init, &qpn), 0);
	/* UC INIT takes access flags, not a QKEY */
	assert_int_equal(ovr_eng_qp_modify(p->n[n].eng, qpn, &a,
					   OVR_QP_STATE | OVR_QP_PKEY_INDEX |
						   OVR_QP_PORT | OVR_QP_QKEY,
					   p->now),
			 -EINVAL);
	assert_int_equal(ovr_eng_qp_modify(p->n[n].eng, qpn, &a,
					   OVR_QP_STATE | OVR_QP_PKEY_INDEX |
						   OVR_QP_PORT |
						   OVR_QP_ACCESS_FLAGS,
					   p->now),
			 0);
	return qpn;
}

#define UC_RTR_MASK                                                     \
	(OVR_QP_STATE | OVR_QP_AV | OVR_QP_PATH_MTU | OVR_QP_DEST_QPN | \
	 OVR_QP_RQ_PSN)

/* RTR then RTS with the verbs man page's UC attributes, checking that
 * RC's reliability attributes are refused on the way. */
static void uc_connect(struct ovr_pair *p, int n, uint32_t qpn, uint32_t dqpn,
		       uint32_t rq_psn, uint32_t sq_psn)
{
	struct ovr_eng *e = p->n[n].eng;
	struct ovr_eng_qp_attr a = {
		.qp_state = OVR_QPS_RTR,
		.path_mtu = MTU,
		.dest_qp_num = dqpn,
		.rq_psn = rq_psn,
		.peer = (uint64_t)(1 - n),
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
	};

	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a,
					   UC_RTR_MASK |
						   OVR_QP_MAX_DEST_RD_ATOMIC,
					   p->now),
			 -EINVAL);
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a,
					   UC_RTR_MASK | OVR_QP_MIN_RNR_TIMER,
					   p->now),
			 -EINVAL);
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a,
					   UC_RTR_MASK & ~OVR_QP_RQ_PSN,
					   p->now),
			 -EINVAL);
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a, UC_RTR_MASK, p->now), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = OVR_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a, OVR_QP_STATE, p->now),
			 -EINVAL);
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a,
					   OVR_QP_STATE | OVR_QP_SQ_PSN |
						   OVR_QP_TIMEOUT,
					   p->now),
			 -EINVAL);
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a,
					   OVR_QP_STATE | OVR_QP_SQ_PSN |
						   OVR_QP_RETRY_CNT |
						   OVR_QP_RNR_RETRY,
					   p->now),
			 -EINVAL);
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a,
					   OVR_QP_STATE | OVR_QP_SQ_PSN |
						   OVR_QP_MAX_QP_RD_ATOMIC,
					   p->now),
			 -EINVAL);
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a,
					   OVR_QP_STATE | OVR_QP_SQ_PSN,
					   p->now),
			 0);
	assert_int_equal(ovr_eng_qp_query(e, qpn, &a), 0);
	assert_int_equal(a.qp_state, OVR_QPS_RTS);
	assert_int_equal(a.path_mtu, MTU);
	assert_int_equal(a.dest_qp_num, dqpn);
	assert_int_equal(a.rq_psn, rq_psn);
	assert_int_equal(a.sq_psn, sq_psn);
}

/* Node 1's "application memory" behind ops.dev_copy (the process
 * route's regions, OVR_ENG_MR_HOST), with a hole where nothing is
 * mapped: copies there answer -EFAULT. */
#define HOLE_LO 4096u
#define HOLE_HI 8192u
static uint8_t proc_mem[1u << 16];

static int fake_copy(void *ctx, void *dev, uint64_t off, void *host,
		     uint32_t len, bool to_dev, uint32_t msg_len,
		     unsigned int flags)
{
	(void)ctx;
	(void)msg_len;
	(void)flags;
	assert_ptr_equal(dev, proc_mem);
	assert_true(off <= sizeof(proc_mem) && len <= sizeof(proc_mem) - off);
	if (off < HOLE_HI && off + len > HOLE_LO)
		return -EFAULT;
	if (to_dev)
		memcpy(proc_mem + off, host, len);
	else
		memcpy(host, proc_mem + off, len);
	return 0;
}

static struct fix *setup_with(uint32_t srq_on_1)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct ovr_pair_cfg cfg;
	uint32_t srq = 0;

	assert_non_null(f);
	ovr_pair_cfg_default(&cfg);
	cfg.mem_bytes = 8u << 20;
	cfg.dev_copy = fake_copy;
	f->p = ovr_pair_create(&cfg);
	assert_non_null(f->p);
	if (srq_on_1) {
		struct ovr_eng_srq_init si = { .pd = f->p->n[1].pd,
					       .attr = { 16, 1, 0 } };

		assert_int_equal(ovr_eng_srq_create(f->p->n[1].eng, &si, &srq),
				 0);
	}
	f->qpn[0] = uc_create(f->p, 0, 0);
	f->qpn[1] = uc_create(f->p, 1, srq);
	f->srq = srq;
	/* PSNs near the 24-bit wrap, so every run crosses it */
	uc_connect(f->p, 0, f->qpn[0], f->qpn[1], 0xfffff0, 0xffffe0);
	uc_connect(f->p, 1, f->qpn[1], f->qpn[0], 0xffffe0, 0xfffff0);
	return f;
}

static int setup(void **state)
{
	*state = setup_with(0);
	return 0;
}

static int setup_srq(void **state)
{
	*state = setup_with(1);
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	ovr_pair_destroy(f->p);
	free(f);
	return 0;
}

static void stats(struct fix *f, int n, struct ovr_eng_stats *st)
{
	ovr_eng_get_stats(f->p->n[n].eng, st);
}

static void expect_wc(struct fix *f, int n, uint32_t cq, uint64_t wr_id,
		      uint32_t status, uint32_t opcode, uint32_t len)
{
	struct ovr_eng_wc wc;

	assert_true(ovr_pair_poll(f->p, n, cq, &wc));
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, status);
	if (status == OVR_WC_SUCCESS) {
		assert_int_equal(wc.opcode, opcode);
		assert_int_equal(wc.byte_len, len);
	}
	assert_int_equal(wc.qp_num, f->qpn[n]);
}

static bool idle(struct ovr_pair *p, void *ctx)
{
	(void)p;
	(void)ctx;
	return false;
}

/* Run until nothing more happens (1 s of simulated time at most). */
static void settle(struct fix *f)
{
	ovr_pair_run(f->p, idle, NULL, f->p->now + 1000000000ull);
}

static int post_imm(struct fix *f, int n, uint32_t opcode, uint64_t wr_id,
		    size_t loff, uint32_t len, size_t roff, uint32_t imm,
		    uint32_t rkey)
{
	struct ovr_pair *p = f->p;
	struct ovr_eng_sge sge = { ovr_pair_va(p, n, loff), len, p->n[n].key };
	struct ovr_eng_send_wr wr = {
		.wr_id = wr_id,
		.opcode = opcode,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = len ? 1 : 0,
		.imm_data = imm,
		.rkey = rkey,
		.remote_addr = ovr_pair_va(p, 1 - n, roff),
	};

	return ovr_eng_post_send(p->n[n].eng, f->qpn[n], &wr, p->now);
}

/* Every operation byte-exact, each completing at the sender although the
 * responder never sends a packet (no ACKs). */
static void test_uc_clean(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	static const uint32_t lens[] = { 0, 1, 1000, 1024, 1025, 5000, 65536 };
	uint64_t tx1 = p->n[1].tx_pkts;
	struct ovr_eng_stats st;
	struct ovr_eng_wc wc;

	fill_pattern(p->n[0].mem, 1u << 20, 1);
	memset(p->n[1].mem, 0, 4u << 20);
	for (unsigned int i = 0; i < 7; i++)
		assert_int_equal(post_recv_one(p, 1, f->qpn[1], 100 + i,
					       (size_t)i << 17, 1u << 17),
				 0);
	/* SEND and SEND_IMM of each length, then WRITE and WRITE_IMM */
	for (unsigned int i = 0; i < 7; i++)
		assert_int_equal(
			post_imm(f, 0,
				 i & 1 ? OVR_WR_SEND_WITH_IMM : OVR_WR_SEND, i,
				 (size_t)i * 70000, lens[i], 0, 0x1000 + i, 0),
			0);
	assert_true(wait_cq(p, 1, 1, 7));
	for (unsigned int i = 0; i < 7; i++) {
		assert_true(ovr_pair_poll(p, 1, 1, &wc));
		assert_int_equal(wc.wr_id, 100 + i);
		assert_int_equal(wc.status, OVR_WC_SUCCESS);
		assert_int_equal(wc.opcode, OVR_WC_RECV);
		assert_int_equal(wc.byte_len, lens[i]);
		assert_int_equal(wc.src_qp, f->qpn[0]);
		if (i & 1) {
			assert_true(wc.wc_flags & OVR_WC_WITH_IMM);
			assert_int_equal(wc.imm_data, 0x1000 + i);
		} else {
			assert_false(wc.wc_flags & OVR_WC_WITH_IMM);
		}
		assert_memory_equal(p->n[1].mem + ((size_t)i << 17),
				    p->n[0].mem + (size_t)i * 70000, lens[i]);
	}
	for (unsigned int i = 0; i < 7; i++)
		expect_wc(f, 0, 0, i, OVR_WC_SUCCESS, OVR_WC_SEND, lens[i]);
	/* WRITE 100000 bytes, then a WRITE_IMM of 3000 consuming a receive */
	assert_int_equal(post_imm(f, 0, OVR_WR_RDMA_WRITE, 20, 4096, 100000,
				  2u << 20, 0, p->n[1].key),
			 0);
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 200, 0, 0), 0);
	assert_int_equal(post_imm(f, 0, OVR_WR_RDMA_WRITE_WITH_IMM, 21, 300000,
				  3000, 3u << 20, 0xabcdef, p->n[1].key),
			 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 200);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.opcode, OVR_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.imm_data, 0xabcdef);
	assert_int_equal(wc.byte_len, 3000);
	assert_memory_equal(p->n[1].mem + (2u << 20), p->n[0].mem + 4096,
			    100000);
	assert_memory_equal(p->n[1].mem + (3u << 20), p->n[0].mem + 300000,
			    3000);
	settle(f);
	expect_wc(f, 0, 0, 20, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE, 100000);
	expect_wc(f, 0, 0, 21, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE, 3000);
	/* not one packet from the responder: no ACK, no credit, nothing */
	assert_int_equal(p->n[1].tx_pkts, tx1);
	stats(f, 1, &st);
	assert_int_equal(st.uc_msg_dropped, 0);
	assert_int_equal(st.uc_gap, 0);
	stats(f, 0, &st);
	assert_int_equal(st.retx_pkts, 0);
}

/* Drops the packets of node 0 whose number (counting from 1) is in the
 * list. */
struct drop {
	uint32_t seen;
	uint32_t which[4];
};

static bool drop_nth(struct ovr_pair_node *n, const uint8_t *pdu, uint32_t len,
		     void *ctx)
{
	struct drop *d = ctx;

	(void)n;
	(void)pdu;
	(void)len;
	d->seen++;
	for (unsigned int i = 0; i < 4; i++)
		if (d->which[i] == d->seen)
			return true;
	return false;
}

/*
 * Three SENDs of 3 packets each, the 5th packet (the middle of the
 * second) lost: the first and third are delivered byte-exact, the third
 * into the receive the second had begun filling (reused, never
 * completed); the sender completes all three.
 */
static void test_uc_loss_drops_message(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct drop d = { .which = { 5 } };
	struct ovr_eng_stats st;
	struct ovr_eng_wc wc;

	fill_pattern(p->n[0].mem, 1u << 20, 3);
	memset(p->n[1].mem, 0, 1u << 20);
	p->n[0].tx_filter = drop_nth;
	p->n[0].tx_filter_ctx = &d;
	for (unsigned int i = 0; i < 3; i++)
		assert_int_equal(post_recv_one(p, 1, f->qpn[1], 100 + i,
					       (size_t)i << 16, 1u << 16),
				 0);
	for (unsigned int i = 0; i < 3; i++)
		assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, i,
					  (size_t)i << 14, 3 * SEG, 0,
					  OVR_SEND_SIGNALED),
				 0);
	settle(f);
	assert_int_equal(d.seen, 9);
	/* the sender knows nothing of the loss */
	for (unsigned int i = 0; i < 3; i++)
		expect_wc(f, 0, 0, i, OVR_WC_SUCCESS, OVR_WC_SEND, 3 * SEG);
	assert_int_equal(ovr_pair_cq_len(p, 1, 1), 2);
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 100);
	assert_int_equal(wc.byte_len, 3 * SEG);
	assert_memory_equal(p->n[1].mem, p->n[0].mem, 3 * SEG);
	/* message 3 in receive 101, which message 2 had begun */
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 101);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 3 * SEG);
	assert_memory_equal(p->n[1].mem + (1u << 16), p->n[0].mem + (2u << 14),
			    3 * SEG);
	stats(f, 1, &st);
	assert_int_equal(st.uc_msg_dropped, 1);
	/* the rest of message 2, and message 3's first packet */
	assert_int_equal(st.uc_gap, 2);
	assert_int_equal(st.uc_pkts_dropped, 1);
	/* receive 102 still waits; the next message lands there */
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 9, 0, 10, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 102);
	assert_int_equal(wc.byte_len, 10);
}

/* A WRITE whose middle packet is lost: what came before the gap is
 * placed, nothing after it; a WRITE_IMM after it is delivered whole. */
static void test_uc_write_loss(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct drop d = { .which = { 2 } };
	uint8_t *dst = p->n[1].mem + (1u << 20);
	struct ovr_eng_wc wc;

	fill_pattern(p->n[0].mem, 1u << 20, 4);
	memset(p->n[1].mem, 0, 2u << 20);
	p->n[0].tx_filter = drop_nth;
	p->n[0].tx_filter_ctx = &d;
	assert_int_equal(post_imm(f, 0, OVR_WR_RDMA_WRITE, 1, 0, 4 * SEG,
				  1u << 20, 0, p->n[1].key),
			 0);
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 7, 0, 0), 0);
	assert_int_equal(post_imm(f, 0, OVR_WR_RDMA_WRITE_WITH_IMM, 2, 8192,
				  2 * SEG, 16, 77, p->n[1].key),
			 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.opcode, OVR_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.imm_data, 77);
	assert_memory_equal(p->n[1].mem + 16, p->n[0].mem + 8192, 2 * SEG);
	assert_memory_equal(dst, p->n[0].mem, SEG);
	for (size_t i = SEG; i < 4 * SEG; i++)
		assert_int_equal(dst[i], 0);
	settle(f);
	expect_wc(f, 0, 0, 1, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE, 4 * SEG);
	expect_wc(f, 0, 0, 2, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE, 2 * SEG);
}

/* READ, atomics and SEND_WITH_INV are not UC's: refused at posting, as
 * rxe's post_send (EINVAL), the QP unharmed. */
static void test_uc_refused_ops(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;

	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_READ, 1, 0, 64,
				  0, OVR_SEND_SIGNALED),
			 EINVAL);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_ATOMIC_CMP_AND_SWP, 2,
				  0, 8, 0, OVR_SEND_SIGNALED),
			 EINVAL);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_ATOMIC_FETCH_AND_ADD,
				  3, 0, 8, 0, OVR_SEND_SIGNALED),
			 EINVAL);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND_WITH_INV, 4, 0,
				  8, 0, OVR_SEND_SIGNALED),
			 EINVAL);
	settle(f);
	assert_int_equal(ovr_pair_cq_len(p, 0, 0), 0);
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 9, 0, 64), 0);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 5, 0, 64, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 1, 1, 1));
	expect_wc(f, 1, 1, 9, OVR_WC_SUCCESS, OVR_WC_RECV, 64);
}

/* No receive posted (no RNR on UC), a receive too short, a WRITE the
 * rkey does not allow: each message dropped silently and counted, the
 * QPs stay in RTS, the next message is delivered. */
static void test_uc_silent_drops(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	uint64_t tx1 = p->n[1].tx_pkts;
	struct ovr_eng_qp_attr a;
	struct ovr_eng_stats st;

	fill_pattern(p->n[0].mem, 1u << 20, 5);
	memset(p->n[1].mem, 0, 1u << 20);
	/* nothing posted */
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 1, 0, 2000, 0,
				  OVR_SEND_SIGNALED),
			 0);
	settle(f);
	expect_wc(f, 0, 0, 1, OVR_WC_SUCCESS, OVR_WC_SEND, 2000);
	/* a WRITE with a key that names nothing */
	assert_int_equal(post_imm(f, 0, OVR_WR_RDMA_WRITE, 3, 0, 3000, 4096, 0,
				  p->n[1].key ^ 0x5500),
			 0);
	/* ... and a WRITE_IMM with no receive for its immediate */
	assert_int_equal(post_imm(f, 0, OVR_WR_RDMA_WRITE_WITH_IMM, 4, 0, 300,
				  8192, 1, p->n[1].key),
			 0);
	settle(f);
	/* a 100-byte receive for 2000 bytes: kept for the next message */
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 50, 0, 100), 0);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 2, 0, 2000, 0,
				  OVR_SEND_SIGNALED),
			 0);
	settle(f);
	assert_int_equal(ovr_pair_cq_len(p, 1, 1), 0);
	stats(f, 1, &st);
	assert_int_equal(st.uc_norecv, 2);
	assert_int_equal(st.uc_len, 1);
	assert_int_equal(st.uc_access, 1);
	assert_int_equal(st.uc_msg_dropped, 4);
	for (size_t i = 4096; i < 4096 + 3000; i++)
		assert_int_equal(p->n[1].mem[i], 0);
	/* the WRITE_IMM's bytes are placed (no receive is needed for them) */
	assert_memory_equal(p->n[1].mem + 8192, p->n[0].mem, 300);
	/* the sender completed everything; nothing came back */
	assert_int_equal(ovr_pair_cq_len(p, 0, 0), 3);
	assert_int_equal(p->n[1].tx_pkts, tx1);
	for (int n = 0; n < 2; n++) {
		assert_int_equal(ovr_eng_qp_query(p->n[n].eng, f->qpn[n], &a),
				 0);
		assert_int_equal(a.qp_state, OVR_QPS_RTS);
	}
	/* the short receive takes the next message that fits */
	assert_int_equal(
		post_one(p, 0, f->qpn[0], OVR_WR_SEND, 5, 512, 100, 0, 0), 0);
	assert_true(wait_cq(p, 1, 1, 1));
	expect_wc(f, 1, 1, 50, OVR_WC_SUCCESS, OVR_WC_RECV, 100);
	assert_memory_equal(p->n[1].mem, p->n[0].mem + 512, 100);
}

/* Captures node 0's packets (up to 16) and lets them through. */
struct cap {
	uint32_t n;
	uint32_t len[16];
	uint8_t pdu[16][2048];
};

static bool capture(struct ovr_pair_node *n, const uint8_t *pdu, uint32_t len,
		    void *ctx)
{
	struct cap *c = ctx;

	(void)n;
	if (c->n < 16 && len <= sizeof(c->pdu[0])) {
		memcpy(c->pdu[c->n], pdu, len);
		c->len[c->n++] = len;
	}
	return false;
}

/* Build a PDU from @pk into @buf; its length. */
static uint32_t forge(const struct ovr_wire_pkt *pk, uint8_t *buf, size_t cap)
{
	int n = ovr_wire_build(pk, buf, cap);

	assert_true(n > 0);
	return (uint32_t)n;
}

/*
 * Hostile and stray packets from the peer's QPN: a READ request, an
 * atomic and an ACK (not UC's), a duplicate of a delivered message, a
 * continuation forged mid-stream: all dropped and counted, no completion
 * and no answer; the connection goes on.
 */
static void test_uc_hostile(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng *e1 = p->n[1].eng;
	uint64_t tx1 = p->n[1].tx_pkts;
	struct cap *c = calloc(1, sizeof(*c));
	struct ovr_eng_stats st;
	struct ovr_wire_pkt pk;
	uint8_t buf[2048], pay[64] = { 0 };
	struct ovr_eng_wc wc;

	assert_non_null(c);
	fill_pattern(p->n[0].mem, 4096, 6);
	p->n[0].tx_filter = capture;
	p->n[0].tx_filter_ctx = c;
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 1, 0, 4096), 0);
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 2, 4096, 4096), 0);
	assert_int_equal(
		post_one(p, 0, f->qpn[0], OVR_WR_SEND, 1, 0, 100, 0, 0), 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_int_equal(c->n, 1);
	/* the same packet again (the overlay duplicated it) */
	ovr_eng_rx(e1, p->now, c->pdu[0], c->len[0], false);
	/* a READ request and a fetch-add in the connection's PSN space */
	memset(&pk, 0, sizeof(pk));
	pk.version = OVR_WIRE_VERSION;
	pk.opcode = OVR_OP_READ_REQ;
	pk.flags = OVR_F_LAST;
	pk.dqpn = f->qpn[1];
	pk.sqpn = f->qpn[0];
	pk.psn = 0xfffff1;
	pk.tsval = 1;
	pk.u.rreq.rkey = p->n[1].key;
	pk.u.rreq.len = 64;
	pk.u.rreq.va = ovr_pair_va(p, 1, 0);
	pk.u.rreq.msn = 1;
	ovr_eng_rx(e1, p->now, buf, forge(&pk, buf, sizeof(buf)), false);
	pk.opcode = OVR_OP_ATOMIC_FA;
	memset(&pk.u, 0, sizeof(pk.u));
	pk.u.areq.rkey = p->n[1].key;
	pk.u.areq.va = ovr_pair_va(p, 1, 0);
	pk.u.areq.msn = 1;
	pk.u.areq.swap_add = 1;
	ovr_eng_rx(e1, p->now, buf, forge(&pk, buf, sizeof(buf)), false);
	pk.opcode = OVR_OP_ACK;
	pk.flags = OVR_F_ACK;
	pk.psn = 0;
	memset(&pk.u, 0, sizeof(pk.u));
	ovr_eng_rx(e1, p->now, buf, forge(&pk, buf, sizeof(buf)), false);
	/* a continuation (mo 64, not LAST) of a message never begun */
	memset(&pk, 0, sizeof(pk));
	pk.version = OVR_WIRE_VERSION;
	pk.opcode = OVR_OP_SEND;
	pk.dqpn = f->qpn[1];
	pk.sqpn = f->qpn[0];
	pk.psn = 0xfffff1;
	pk.tsval = 1;
	pk.u.send.msn = 2;
	pk.u.send.mo = 64;
	pk.u.send.msg_len = 1000;
	pk.payload = pay;
	pk.payload_len = sizeof(pay);
	ovr_eng_rx(e1, p->now, buf, forge(&pk, buf, sizeof(buf)), false);
	settle(f);
	stats(f, 1, &st);
	assert_int_equal(st.uc_stale, 1);
	assert_int_equal(st.uc_bad, 3);
	assert_int_equal(st.uc_gap, 1);
	assert_int_equal(st.uc_pkts_dropped, 1);
	assert_int_equal(p->n[1].tx_pkts, tx1);
	/* one message delivered, once */
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 1);
	assert_false(ovr_pair_poll(p, 1, 1, &wc));
	/* the connection goes on: the forged continuation did not move
	 * the expected PSN, the sender's next message is in sequence */
	assert_int_equal(
		post_one(p, 0, f->qpn[0], OVR_WR_SEND, 2, 0, 200, 0, 0), 0);
	assert_true(wait_cq(p, 1, 1, 1));
	expect_wc(f, 1, 1, 2, OVR_WC_SUCCESS, OVR_WC_RECV, 200);
	assert_memory_equal(p->n[1].mem + 4096, p->n[0].mem, 200);
	free(c);
}

/*
 * A storm of forged packets that parse (the codec's checks are not what
 * is tested here): SENDs and WRITEs with random PSNs near and far from
 * the expected one, random offsets, lengths, LAST flags and keys,
 * against a QP with receives posted. Nothing may crash (the sanitizer
 * build runs this too), every completion is a well-formed successful
 * receive no longer than its buffer, WRITEs land only inside the
 * arena's region, the QP stays in RTS, and nothing is ever answered.
 */
static void test_uc_storm(void **state)
{
	static const uint8_t ops[] = { OVR_OP_SEND, OVR_OP_SEND_IMM,
				       OVR_OP_WRITE, OVR_OP_WRITE_IMM };
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng *e1 = p->n[1].eng;
	uint64_t tx1 = p->n[1].tx_pkts, x = 0x243f6a8885a308d3ull;
	uint8_t *buf = malloc(8192), pay[1024];
	uint32_t posted = 0, done = 0, base = 0xffffe0, cap[32];
	struct ovr_eng_qp_attr a;
	struct ovr_eng_stats st;
	struct ovr_eng_wc wc;

	assert_non_null(buf);
	memset(pay, 0x5a, sizeof(pay));
	for (uint32_t i = 0; i < 40000; i++) {
		struct ovr_wire_pkt pk;
		uint32_t r, len, mo, room;
		int n;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		r = (uint32_t)(x >> 11);
		if (posted - done < 32) {
			cap[posted % 32] = (r & 1) ? 8192 : 512;
			assert_int_equal(post_recv_one(p, 1, f->qpn[1], posted,
						       (size_t)(posted % 32)
							       << 13,
						       cap[posted % 32]),
					 0);
			posted++;
		}
		memset(&pk, 0, sizeof(pk));
		pk.version = OVR_WIRE_VERSION;
		pk.opcode = ops[r & 3];
		pk.dqpn = f->qpn[1];
		pk.sqpn = f->qpn[0];
		pk.tsval = 1;
		/* mostly near a drifting base, sometimes anywhere */
		pk.psn = ((r >> 2) & 7) ?
				 (base + ((r >> 5) & 63) - 16) & 0xffffffu :
				 (uint32_t)(x >> 40) & 0xffffffu;
		base += (r >> 12) & 3;
		pk.u.send.msg_len = (uint32_t)(x % 9000);
		mo = (r & 0x100) ?
			     0 :
			     (uint32_t)(x >> 20) % (pk.u.send.msg_len + 1);
		room = pk.u.send.msg_len - mo;
		len = room < (r >> 20) % 1025 ? room : (r >> 20) % 1025;
		if (mo + len == pk.u.send.msg_len)
			pk.flags |= OVR_F_LAST;
		else if (!len)
			len = 1;
		if (r & 0x200)
			pk.flags |= OVR_F_SE;
		pk.payload = pay;
		pk.payload_len = len;
		if (pk.opcode == OVR_OP_WRITE ||
		    pk.opcode == OVR_OP_WRITE_IMM) {
			uint32_t ml = pk.u.send.msg_len;

			memset(&pk.u, 0, sizeof(pk.u));
			pk.u.write.msg_len = ml;
			pk.u.write.mo = mo;
			pk.u.write.rkey = (r & 0x400) ? p->n[1].key : r;
			pk.u.write.va = ovr_pair_va(
				p, 1, (1u << 20) + (x % (1u << 20)));
			pk.u.write.imm = r;
			pk.u.write.msn = r;
		} else {
			pk.u.send.mo = mo;
			pk.u.send.msn = r;
			if (pk.opcode == OVR_OP_SEND_IMM)
				pk.u.send.imm = r;
		}
		n = ovr_wire_build(&pk, buf, 8192);
		if (n <= 0)
			continue;
		ovr_eng_rx(e1, p->now, buf, (uint32_t)n, (r & 0x800) != 0);
		while (ovr_pair_poll(p, 1, 1, &wc)) {
			assert_int_equal(wc.wr_id, done);
			assert_int_equal(wc.status, OVR_WC_SUCCESS);
			assert_true(wc.byte_len <= cap[done % 32] ||
				    wc.opcode == OVR_WC_RECV_RDMA_WITH_IMM);
			done++;
		}
	}
	settle(f);
	stats(f, 1, &st);
	print_message("storm: %u receives completed; dropped %" PRIu64
		      " messages, %" PRIu64 " gaps, %" PRIu64 " stale, %" PRIu64
		      " bad, %" PRIu64 " access, %" PRIu64 " len\n",
		      done, st.uc_msg_dropped, st.uc_gap, st.uc_stale,
		      st.uc_bad, st.uc_access, st.uc_len);
	assert_true(done > 0);
	assert_true(st.uc_msg_dropped > 0 && st.uc_stale > 0 &&
		    st.uc_access > 0 && st.uc_len > 0 && st.uc_bad > 0);
	assert_int_equal(ovr_eng_qp_query(e1, f->qpn[1], &a), 0);
	assert_int_equal(a.qp_state, OVR_QPS_RTS);
	assert_int_equal(p->n[1].tx_pkts, tx1);
	free(buf);
}

/*
 * Memory gone under a registration (the process route's -EFAULT): a
 * WRITE there is a remote access error, dropped silently like a bad
 * rkey, the QP unharmed and the next WRITE placed; a SEND into a
 * receive there is the receiver's own protection error - the receive
 * completes LOC_PROT_ERR and the QP goes to ERROR (nothing tells the
 * sender, whose WRs complete).
 */
static void test_uc_hole(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	const uint64_t va = 0x600000000000ull;
	struct ovr_eng_sge rs = { va + HOLE_LO, 512, 0 };
	struct ovr_eng_recv_wr rw = { 77, &rs, 1 };
	struct ovr_eng_qp_attr a;
	struct ovr_eng_stats st;
	struct ovr_eng_wc wc;
	uint32_t key;

	memset(proc_mem, 0, sizeof(proc_mem));
	fill_pattern(p->n[0].mem, 16384, 9);
	assert_int_equal(ovr_eng_reg_mr_ext(p->n[1].eng, p->n[1].pd, va,
					    sizeof(proc_mem), OVR_ACCESS_ALL,
					    proc_mem, 0, OVR_ENG_MR_HOST, &key),
			 0);
	rs.lkey = key;
	/* the region's key with an address outside it (the arena's) */
	assert_int_equal(
		post_imm(f, 0, OVR_WR_RDMA_WRITE, 1, 0, 3000, 0, 0, key), 0);
	settle(f);
	{
		struct ovr_eng_sge s = { ovr_pair_va(p, 0, 0), 3000,
					 p->n[0].key };
		struct ovr_eng_send_wr wr = {
			.wr_id = 2,
			.opcode = OVR_WR_RDMA_WRITE,
			.send_flags = OVR_SEND_SIGNALED,
			.sg_list = &s,
			.num_sge = 1,
			.rkey = key,
			.remote_addr = va + HOLE_LO + 100,
		};

		assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr,
						   p->now),
				 0);
		wr.wr_id = 3;
		wr.remote_addr = va + HOLE_HI;
		assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr,
						   p->now),
				 0);
	}
	settle(f);
	stats(f, 1, &st);
	assert_int_equal(st.uc_access, 2); /* WR 1 and WR 2 (the hole) */
	assert_memory_equal(proc_mem + HOLE_HI, p->n[0].mem, 3000);
	assert_int_equal(ovr_eng_qp_query(p->n[1].eng, f->qpn[1], &a), 0);
	assert_int_equal(a.qp_state, OVR_QPS_RTS);
	/* a receive in the hole */
	assert_int_equal(ovr_eng_post_recv(p->n[1].eng, f->qpn[1], &rw, p->now),
			 0);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 4, 0, 100, 0,
				  OVR_SEND_SIGNALED),
			 0);
	settle(f);
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.status, OVR_WC_LOC_PROT_ERR);
	assert_int_equal(ovr_eng_qp_query(p->n[1].eng, f->qpn[1], &a), 0);
	assert_int_equal(a.qp_state, OVR_QPS_ERR);
	for (uint64_t id = 1; id <= 4; id++)
		expect_wc(f, 0, 0, id, OVR_WC_SUCCESS,
			  id == 4 ? OVR_WC_SEND : OVR_WC_RDMA_WRITE,
			  id == 4 ? 100 : 3000);
}

/* Drops node 0's packets at random (its own seeded generator, @pct of
 * them), naming the message of each (its immediate) in @lost. */
struct rdrop {
	uint64_t x;
	uint32_t pct, dropped;
	bool lost[256];
	uint32_t ndrop[256]; /* packets of each message dropped */
};

static bool drop_random(struct ovr_pair_node *n, const uint8_t *pdu,
			uint32_t len, void *ctx)
{
	struct rdrop *d = ctx;
	struct ovr_wire_pkt pk;

	(void)n;
	d->x ^= d->x << 13;
	d->x ^= d->x >> 7;
	d->x ^= d->x << 17;
	if (d->x % 100 >= d->pct)
		return false;
	assert_int_equal(ovr_wire_parse(pdu, len, &pk, NULL), 0);
	assert_int_equal(pk.opcode, OVR_OP_SEND_IMM);
	assert_true(pk.u.send.imm < 256);
	d->lost[pk.u.send.imm] = true;
	d->ndrop[pk.u.send.imm]++;
	d->dropped++;
	return true;
}

/*
 * 200 SEND_WITH_IMMs of 1 B to 8 KB (up to 8 packets each) over a link
 * that loses 5 % of them, 15 % in the second half: exactly the messages
 * that lost no packet are delivered, in order, each byte-exact in the
 * next receive (the receives a dropped message began are reused), and
 * the counters add up; the sender completes all 200. Then the same
 * over a link that also reorders and duplicates: what is delivered is
 * in order, byte-exact and never twice.
 */
static void lossy_run(struct fix *f, struct rdrop *d, bool exact)
{
	struct ovr_pair *p = f->p;
	uint32_t len[200], want = 0, got = 0, last = 0, posted = 0;
	struct ovr_eng_stats st;
	struct ovr_eng_wc wc;
	uint64_t x = 99;

	fill_pattern(p->n[0].mem, 4u << 20, 11);
	for (uint32_t i = 0; i < 200; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		len[i] = 1 + (uint32_t)(x >> 33) % 8192;
	}
	p->n[0].tx_filter = drop_random;
	p->n[0].tx_filter_ctx = d;
	for (uint32_t i = 0; i < 200; i++) {
		struct ovr_pair *pp = p;
		struct ovr_eng_sge s = { ovr_pair_va(pp, 0, (size_t)i * 16384),
					 len[i], pp->n[0].key };
		struct ovr_eng_send_wr wr = {
			.wr_id = i,
			.opcode = OVR_WR_SEND_WITH_IMM,
			.send_flags = OVR_SEND_SIGNALED,
			.sg_list = &s,
			.num_sge = 1,
			.imm_data = i,
		};

		if (i == 100)
			d->pct *= 3;
		/* 32 receives posted and not completed at most: receive k
		 * takes slot k % 32, free once receive k - 32 was checked */
		while (posted - got < 32) {
			assert_int_equal(
				post_recv_one(p, 1, f->qpn[1], posted,
					      (size_t)(posted % 32) * 8192,
					      8192),
				0);
			posted++;
		}
		assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr,
						   p->now),
				 0);
		/* the application polls after every 8 sends */
		if (i % 8 == 7) {
			settle(f);
			while (ovr_pair_poll(p, 1, 1, &wc)) {
				assert_int_equal(wc.status, OVR_WC_SUCCESS);
				assert_int_equal(wc.wr_id, got);
				assert_true(wc.wc_flags & OVR_WC_WITH_IMM);
				assert_true(wc.imm_data < 200);
				if (got)
					assert_true(wc.imm_data > last);
				if (exact) {
					while (d->lost[want])
						want++;
					assert_int_equal(wc.imm_data, want);
					want++;
				}
				last = wc.imm_data;
				assert_int_equal(wc.byte_len, len[last]);
				assert_memory_equal(
					p->n[1].mem + (size_t)(got % 32) * 8192,
					p->n[0].mem + (size_t)last * 16384,
					len[last]);
				got++;
			}
		}
	}
	settle(f);
	assert_int_equal(ovr_pair_cq_len(p, 1, 1), 0);
	for (uint32_t i = 0; i < 200; i++)
		expect_wc(f, 0, 0, i, OVR_WC_SUCCESS, OVR_WC_SEND, len[i]);
	stats(f, 1, &st);
	print_message("lossy%s: %u packets dropped, %u of 200 messages "
		      "delivered; %" PRIu64 " dropped, %" PRIu64
		      " gaps, %" PRIu64 " stale\n",
		      exact ? "" : " (reordered, duplicated)", d->dropped, got,
		      st.uc_msg_dropped, st.uc_gap, st.uc_stale);
	assert_true(d->dropped > 0);
	assert_true(got > 100 && got < 200);
	if (exact) {
		uint32_t intact = 0, seen = 0;

		for (uint32_t i = 0; i < 200; i++) {
			intact += !d->lost[i];
			/* a message lost whole is never seen, nor counted */
			seen += d->lost[i] &&
				d->ndrop[i] < (len[i] + SEG - 1) / SEG;
		}
		assert_int_equal(got, intact);
		assert_int_equal(st.uc_msg_dropped, seen);
		assert_int_equal(st.uc_stale, 0);
	}
}

static void test_uc_lossy(void **state)
{
	struct rdrop d = { .x = 0x9e3779b97f4a7c15ull, .pct = 5 };

	lossy_run(*state, &d, true);
}

static int setup_reorder(void **state)
{
	struct fix *f;

	*state = setup_with(0);
	f = *state;
	for (int i = 0; i < 2; i++) {
		struct ovr_link_cfg lc = { .rate_bps = 100000000000ull,
					   .delay_ns = 15000,
					   .reorder = 0.05,
					   .reorder_ns = 20000,
					   .dup = 0.05,
					   .seed = 31 + (uint64_t)i };

		assert_int_equal(ovr_link_set_cfg(f->p->n[i].out, &lc), 0);
	}
	return 0;
}

static void test_uc_reorder(void **state)
{
	struct rdrop d = { .x = 0x2545f4914f6cdd1dull, .pct = 2 };

	lossy_run(*state, &d, false);
}

/* Post BIND_MW (or, @inv, LOCAL_INV of @mw) on node 1's UC QP; the
 * completion's status. */
static uint32_t uc_local_op(struct fix *f, bool inv, uint32_t mw, uint32_t nk,
			    uint32_t mr, uint64_t off, uint64_t len)
{
	struct ovr_eng_send_wr wr = {
		.wr_id = 0xb1,
		.opcode = inv ? OVR_WR_LOCAL_INV : OVR_WR_BIND_MW,
		.send_flags = OVR_SEND_SIGNALED,
		.invalidate_rkey = nk,
	};
	struct ovr_eng_wc wc;

	wr.bind_mw.mw_rkey = mw;
	wr.bind_mw.rkey = nk;
	wr.bind_mw.mr_lkey = mr;
	wr.bind_mw.access = OVR_ACCESS_REMOTE_WRITE;
	wr.bind_mw.addr = ovr_pair_va(f->p, 1, off);
	wr.bind_mw.length = len;
	assert_int_equal(ovr_eng_post_send(f->p->n[1].eng, f->qpn[1], &wr,
					   f->p->now),
			 0);
	settle(f);
	assert_true(ovr_pair_poll(f->p, 1, 0, &wc));
	assert_int_equal(wc.wr_id, 0xb1);
	if (wc.status == OVR_WC_SUCCESS)
		assert_int_equal(wc.opcode,
				 inv ? OVR_WC_LOCAL_INV : OVR_WC_BIND_MW);
	return wc.status;
}

/*
 * Memory windows on UC (BIND_MW and LOCAL_INV are local operations UC
 * QPs take, as on mlx5): a type-2 window bound through the UC QP
 * admits the peer's UC WRITEs inside it, silently drops those beyond
 * it, and after LOCAL_INV drops them all; a bind the region does not
 * allow fails MW_BIND_ERR and the QP goes to ERROR.
 */
static void test_uc_mw(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng *e1 = p->n[1].eng;
	uint32_t mr, plain, mw, nk;
	struct ovr_eng_qp_attr a;
	struct ovr_eng_stats st;

	fill_pattern(p->n[0].mem, 65536, 12);
	memset(p->n[1].mem, 0, 1u << 20);
	assert_int_equal(ovr_eng_reg_mr(e1, p->n[1].pd, ovr_pair_va(p, 1, 0),
					1u << 20,
					OVR_ACCESS_LOCAL_WRITE |
						OVR_ACCESS_REMOTE_WRITE |
						OVR_ACCESS_MW_BIND,
					p->n[1].mem, &mr),
			 0);
	assert_int_equal(ovr_eng_reg_mr(e1, p->n[1].pd, ovr_pair_va(p, 1, 0),
					1u << 20, OVR_ACCESS_LOCAL_WRITE,
					p->n[1].mem, &plain),
			 0);
	assert_int_equal(ovr_eng_alloc_mw(e1, p->n[1].pd, OVR_MW_TYPE_2, &mw),
			 0);
	nk = (mw & ~0xffu) | ((mw + 1) & 0xffu);
	assert_int_equal(uc_local_op(f, false, mw, nk, mr, 8192, 16384),
			 OVR_WC_SUCCESS);
	/* inside the window: placed; across its end: dropped */
	assert_int_equal(
		post_imm(f, 0, OVR_WR_RDMA_WRITE, 1, 0, 5000, 8192, 0, nk), 0);
	assert_int_equal(post_imm(f, 0, OVR_WR_RDMA_WRITE, 2, 0, 5000,
				  8192 + 14000, 0, nk),
			 0);
	settle(f);
	assert_memory_equal(p->n[1].mem + 8192, p->n[0].mem, 5000);
	for (size_t i = 8192 + 14000; i < 8192 + 14000 + 5000; i++)
		assert_int_equal(p->n[1].mem[i], 0);
	stats(f, 1, &st);
	assert_int_equal(st.uc_access, 1);
	/* invalidated: the next WRITE through it is dropped too */
	assert_int_equal(uc_local_op(f, true, 0, nk, 0, 0, 0), OVR_WC_SUCCESS);
	assert_int_equal(post_imm(f, 0, OVR_WR_RDMA_WRITE, 3, 8192, 100, 8192,
				  0, nk),
			 0);
	settle(f);
	stats(f, 1, &st);
	assert_int_equal(st.uc_access, 2);
	assert_memory_equal(p->n[1].mem + 8192, p->n[0].mem, 100);
	for (uint64_t id = 1; id <= 3; id++)
		expect_wc(f, 0, 0, id, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE,
			  id == 3 ? 100 : 5000);
	/* a region without MW_BIND: the bind fails, the QP to ERROR */
	assert_int_equal(uc_local_op(f, false, mw, nk + 1, plain, 0, 4096),
			 OVR_WC_MW_BIND_ERR);
	assert_int_equal(ovr_eng_qp_query(e1, f->qpn[1], &a), 0);
	assert_int_equal(a.qp_state, OVR_QPS_ERR);
}

/* With an SRQ: a receive taken by a message that is then dropped cannot
 * go back and completes REM_INV_REQ_ERR (rxe's class E); the next
 * message takes the next receive. */
static void test_uc_srq_partial(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct drop d = { .which = { 2 } };
	struct ovr_eng_stats st;
	struct ovr_eng_wc wc;

	fill_pattern(p->n[0].mem, 1u << 20, 7);
	p->n[0].tx_filter = drop_nth;
	p->n[0].tx_filter_ctx = &d;
	for (unsigned int i = 0; i < 3; i++) {
		struct ovr_eng_sge sge = { ovr_pair_va(p, 1, (size_t)i << 16),
					   1u << 16, p->n[1].key };
		struct ovr_eng_recv_wr wr = { 40 + i, &sge, 1 };

		assert_int_equal(ovr_eng_post_srq_recv(p->n[1].eng, f->srq, &wr,
						       p->now),
				 0);
	}
	for (unsigned int i = 0; i < 2; i++)
		assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, i,
					  (size_t)i << 14, 3 * SEG, 0,
					  OVR_SEND_SIGNALED),
				 0);
	settle(f);
	assert_int_equal(ovr_pair_cq_len(p, 1, 1), 2);
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 40);
	assert_int_equal(wc.status, OVR_WC_REM_INV_REQ_ERR);
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 41);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 3 * SEG);
	assert_memory_equal(p->n[1].mem + (1u << 16), p->n[0].mem + (1u << 14),
			    3 * SEG);
	stats(f, 1, &st);
	assert_int_equal(st.uc_msg_dropped, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_uc_clean, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uc_loss_drops_message,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_uc_write_loss, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_uc_refused_ops, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_uc_silent_drops, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_uc_hostile, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_uc_srq_partial, setup_srq,
						teardown),
		cmocka_unit_test_setup_teardown(test_uc_storm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uc_hole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uc_lossy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uc_reorder, setup_reorder,
						teardown),
		cmocka_unit_test_setup_teardown(test_uc_mw, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
