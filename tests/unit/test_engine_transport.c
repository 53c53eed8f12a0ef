// SPDX-License-Identifier: MIT
/*
 * Transport engine, one feature at a time: every operation byte-exact on
 * a clean link and on a bad one, completion order, and every error path
 * (access violations, bad keys, bounds, retry exhaustion against a dead
 * peer, RNR wait and release, flush on error, invalid transitions).
 * The randomised soak lives in test_engine_soak.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

#include <ovrdma/wire_codec.h>

#include "eng_util.h"

struct fix {
	struct ovr_pair *p;
	uint32_t qpn[2];
};

static struct fix *setup_with(const struct ovr_pair_cfg *cfg,
			      const struct ovr_pair_qp_params *qp)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->p = ovr_pair_create(cfg);
	assert_non_null(f->p);
	assert_int_equal(ovr_pair_connect(f->p, qp, 0, f->qpn), 0);
	return f;
}

static int setup_clean(void **state)
{
	struct ovr_pair_cfg cfg;
	struct ovr_pair_qp_params qp;

	ovr_pair_cfg_default(&cfg);
	cfg.mem_bytes = 48u << 20;
	ovr_pair_qp_params_default(&qp);
	*state = setup_with(&cfg, &qp);
	return 0;
}

static int setup_lossy(void **state)
{
	struct ovr_pair_cfg cfg;
	struct ovr_pair_qp_params qp;

	ovr_pair_cfg_default(&cfg);
	cfg.mem_bytes = 48u << 20;
	for (int i = 0; i < 2; i++) {
		cfg.link[i].loss = 0.05;
		cfg.link[i].reorder = 0.05;
		cfg.link[i].reorder_ns = 20000;
		cfg.link[i].dup = 0.02;
		cfg.link[i].corrupt = 0.02;
		cfg.link[i].jitter_ns = 5000;
	}
	ovr_pair_qp_params_default(&qp);
	*state = setup_with(&cfg, &qp);
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	ovr_pair_destroy(f->p);
	free(f);
	return 0;
}

static void expect_wc(struct fix *f, int n, uint32_t cq, uint64_t wr_id,
		      uint32_t status, uint32_t opcode)
{
	struct ovr_eng_wc wc;

	assert_true(ovr_pair_poll(f->p, n, cq, &wc));
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, status);
	if (status == OVR_WC_SUCCESS)
		assert_int_equal(wc.opcode, opcode);
}

static bool never(struct ovr_pair *p, void *ctx)
{
	(void)p;
	(void)ctx;
	return false;
}

/* ---- operations ---------------------------------------------------------- */

static void do_send(struct fix *f, uint32_t len)
{
	struct ovr_pair *p = f->p;
	struct ovr_eng_wc wc;

	fill_pattern(p->n[0].mem, len, len);
	memset(p->n[1].mem + (16u << 20), 0xee, len + 64);
	assert_int_equal(
		post_recv_one(p, 1, f->qpn[1], 77, 16u << 20, len + 64), 0);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 5, 0, len, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 0, 0, 1));
	assert_true(wait_cq(p, 1, 1, 1));
	expect_wc(f, 0, 0, 5, OVR_WC_SUCCESS, OVR_WC_SEND);
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.opcode, OVR_WC_RECV);
	assert_int_equal(wc.byte_len, len);
	assert_int_equal(wc.src_qp, f->qpn[0]);
	assert_memory_equal(p->n[1].mem + (16u << 20), p->n[0].mem, len);
	assert_int_equal(p->n[1].mem[(16u << 20) + len], 0xee);
}

static void test_send_sizes(void **state)
{
	static const uint32_t sizes[] = { 0,	1,    8,     4095,
					  4096, 4097, 65536, 1000000 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		do_send(*state, sizes[i]);
}

static void test_write_read(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	uint32_t len = 3u << 20;

	fill_pattern(p->n[0].mem, len, 3);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 1, 0, len,
				  1u << 20, OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 1, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE);
	assert_memory_equal(p->n[1].mem + (1u << 20), p->n[0].mem, len);

	/* read it back into another place */
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_READ, 2,
				  8u << 20, len, 1u << 20, OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 2, OVR_WC_SUCCESS, OVR_WC_RDMA_READ);
	assert_memory_equal(p->n[0].mem + (8u << 20), p->n[0].mem, len);
	/* no completion at the target for plain WRITE / READ */
	assert_int_equal(ovr_pair_cq_len(p, 1, 1), 0);
}

static void test_write_imm_zero(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_send_wr wr = {
		.wr_id = 9,
		.opcode = OVR_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = OVR_SEND_SIGNALED,
		.imm_data = 0xabcdef01,
	};
	struct ovr_eng_wc wc;

	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 10, 0, 0), 0);
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, p->now),
			 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 10);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.opcode, OVR_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.wc_flags & OVR_WC_WITH_IMM, OVR_WC_WITH_IMM);
	assert_int_equal(wc.imm_data, 0xabcdef01);
	assert_int_equal(wc.byte_len, 0);
	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 9, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE);
}

static void test_atomics(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	uint64_t v = 100, got;
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, 4096), 8, p->n[0].key };
	struct ovr_eng_send_wr wr = {
		.opcode = OVR_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = p->n[1].key,
		.remote_addr = ovr_pair_va(p, 1, 8192),
	};

	memcpy(p->n[1].mem + 8192, &v, 8);
	for (int i = 0; i < 10; i++) {
		wr.wr_id = (uint64_t)i;
		wr.compare_add = (uint64_t)i + 1;
		sge.addr = ovr_pair_va(p, 0, 4096 + 8 * (size_t)i);
		assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr,
						   p->now),
				 0);
	}
	assert_true(wait_cq(p, 0, 0, 10));
	v = 100;
	for (int i = 0; i < 10; i++) {
		expect_wc(f, 0, 0, (uint64_t)i, OVR_WC_SUCCESS,
			  OVR_WC_FETCH_ADD);
		memcpy(&got, p->n[0].mem + 4096 + 8 * i, 8);
		assert_int_equal(got, v);
		v += (uint64_t)i + 1;
	}
	memcpy(&got, p->n[1].mem + 8192, 8);
	assert_int_equal(got, v);

	/* compare-and-swap: one hit, one miss */
	wr.opcode = OVR_WR_ATOMIC_CMP_AND_SWP;
	wr.wr_id = 100;
	wr.compare_add = v;
	wr.swap = 7;
	sge.addr = ovr_pair_va(p, 0, 4096);
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, p->now),
			 0);
	wr.wr_id = 101;
	wr.swap = 9; /* compare v again: now fails, value stays 7 */
	sge.addr = ovr_pair_va(p, 0, 4104);
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, p->now),
			 0);
	assert_true(wait_cq(p, 0, 0, 2));
	expect_wc(f, 0, 0, 100, OVR_WC_SUCCESS, OVR_WC_COMP_SWAP);
	expect_wc(f, 0, 0, 101, OVR_WC_SUCCESS, OVR_WC_COMP_SWAP);
	memcpy(&got, p->n[0].mem + 4096, 8);
	assert_int_equal(got, v);
	memcpy(&got, p->n[0].mem + 4104, 8);
	assert_int_equal(got, 7);
	memcpy(&got, p->n[1].mem + 8192, 8);
	assert_int_equal(got, 7);
}

/* IBTA 1.5's ATOMIC WRITE: the WR's 8 bytes land as they are, in order
 * with the WRs around it, with no result written back; refused at
 * posting with an SGE or inline; a misaligned target is the
 * responder's INV_REQ. */
static void test_atomic_write(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	static const uint8_t val[8] = { 'a', 't', 'o', 'm', 'i', 'c', 0xff, 1 };
	uint8_t before[64], pat[64];
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, 0), 64, p->n[0].key };
	struct ovr_eng_send_wr wr = {
		.wr_id = 1,
		.opcode = OVR_WR_RDMA_WRITE,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = p->n[1].key,
		.remote_addr = ovr_pair_va(p, 1, 16384),
	};

	for (int i = 0; i < 64; i++)
		pat[i] = p->n[0].mem[i] = (uint8_t)(i + 1);
	memcpy(before, p->n[0].mem + 4096, sizeof(before));
	/* a WRITE of 64 bytes, the ATOMIC WRITE over bytes 8..15 of it,
	 * a READ of all 64 back */
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, p->now),
			 0);
	wr = (struct ovr_eng_send_wr){
		.wr_id = 2,
		.opcode = OVR_WR_ATOMIC_WRITE,
		.send_flags = OVR_SEND_SIGNALED,
		.rkey = p->n[1].key,
		.remote_addr = ovr_pair_va(p, 1, 16384 + 8),
	};
	memcpy(&wr.swap, val, 8);
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, p->now),
			 0);
	sge.addr = ovr_pair_va(p, 0, 8192);
	wr = (struct ovr_eng_send_wr){
		.wr_id = 3,
		.opcode = OVR_WR_RDMA_READ,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = p->n[1].key,
		.remote_addr = ovr_pair_va(p, 1, 16384),
	};
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, p->now),
			 0);
	assert_true(wait_cq(p, 0, 0, 3));
	expect_wc(f, 0, 0, 1, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE);
	expect_wc(f, 0, 0, 2, OVR_WC_SUCCESS, OVR_WC_ATOMIC_WRITE);
	expect_wc(f, 0, 0, 3, OVR_WC_SUCCESS, OVR_WC_RDMA_READ);
	memcpy(pat + 8, val, 8);
	assert_memory_equal(p->n[1].mem + 16384, pat, 64);
	assert_memory_equal(p->n[0].mem + 8192, pat, 64);
	/* nothing written back anywhere of the requester's */
	assert_memory_equal(p->n[0].mem + 4096, before, sizeof(before));
	/* no completion at the target */
	assert_int_equal(ovr_pair_cq_len(p, 1, 1), 0);

	/* posting: its bytes are the WR's, not an SGE's, nor inline */
	wr = (struct ovr_eng_send_wr){
		.wr_id = 4,
		.opcode = OVR_WR_ATOMIC_WRITE,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = p->n[1].key,
		.remote_addr = ovr_pair_va(p, 1, 16384),
	};
	sge.length = 8;
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, p->now),
			 EINVAL);
	wr.num_sge = 0;
	wr.sg_list = NULL;
	wr.send_flags |= OVR_SEND_INLINE;
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, p->now),
			 EINVAL);
	/* a target that is not 8-byte aligned: the responder refuses it */
	wr.send_flags = OVR_SEND_SIGNALED;
	wr.remote_addr = ovr_pair_va(p, 1, 16384 + 4);
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, p->now),
			 0);
	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 4, OVR_WC_REM_INV_REQ_ERR, 0);
	assert_memory_equal(p->n[1].mem + 16384, pat, 64);
}

/* ---- ordering of a WRITE's bytes ---------------------------------------- */

struct lbl {
	const uint8_t *dst, *src;
	size_t len;
	bool seen_last;
};

/* Whenever the last bytes are visible, everything before them is. */
static bool last_byte_last(struct ovr_pair *p, void *ctx)
{
	struct lbl *c = ctx;

	(void)p;
	if (memcmp(c->dst + c->len - 16, c->src + c->len - 16, 16) == 0) {
		assert_memory_equal(c->dst, c->src, c->len);
		c->seen_last = true;
	}
	return false;
}

static void test_write_last_byte_last(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct lbl c = { p->n[1].mem + (4u << 20), p->n[0].mem, 1u << 20,
			 false };
	struct ovr_eng_wc wc;

	for (int round = 0; round < 3; round++) {
		fill_pattern(p->n[0].mem, c.len, 100 + (uint64_t)round);
		assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 1,
					  0, (uint32_t)c.len, 4u << 20,
					  OVR_SEND_SIGNALED),
				 0);
		c.seen_last = false;
		while (!ovr_pair_cq_len(p, 0, 0)) {
			bool more = ovr_pair_step(p);

			last_byte_last(p, &c);
			if (!more)
				break;
		}
		assert_true(c.seen_last);
		assert_true(ovr_pair_poll(p, 0, 0, &wc));
		assert_int_equal(wc.status, OVR_WC_SUCCESS);
	}
}

/* ---- error paths ------------------------------------------------------- */

static uint32_t qp_state(struct fix *f, int n)
{
	struct ovr_eng_qp_attr a;

	assert_int_equal(ovr_eng_qp_query(f->p->n[n].eng, f->qpn[n], &a), 0);
	return a.qp_state;
}

/* After a failed WR the QP is in ERROR and everything behind it flushes. */
static void expect_error_then_flush(struct fix *f, uint64_t first,
				    uint32_t status, unsigned int nflush)
{
	struct ovr_eng_wc wc;

	assert_true(wait_cq(f->p, 0, 0, 1 + nflush));
	assert_true(ovr_pair_poll(f->p, 0, 0, &wc));
	assert_int_equal(wc.wr_id, first);
	assert_int_equal(wc.status, status);
	for (unsigned int i = 0; i < nflush; i++) {
		assert_true(ovr_pair_poll(f->p, 0, 0, &wc));
		assert_int_equal(wc.wr_id, first + 1 + i);
		assert_int_equal(wc.status, OVR_WC_WR_FLUSH_ERR);
	}
	assert_int_equal(qp_state(f, 0), OVR_QPS_ERR);
}

static void test_bad_rkey(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, 0), 64, p->n[0].key };
	struct ovr_eng_send_wr wr = {
		.wr_id = 1,
		.opcode = OVR_WR_RDMA_WRITE,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = p->n[1].key ^ 0x5a5a0000u,
		.remote_addr = ovr_pair_va(p, 1, 0),
	};

	memset(p->n[0].mem, 0x11, 64);
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, 0), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND,
					  2 + (uint64_t)i, 0, 8, 0, 0),
				 0);
	expect_error_then_flush(f, 1, OVR_WC_REM_ACCESS_ERR, 3);
	assert_int_equal(p->n[1].mem[0], 0);
	/* the responder went to ERROR and said why */
	assert_int_equal(qp_state(f, 1), OVR_QPS_ERR);
	assert_int_equal(p->n[1].events[OVR_EV_QP_ACCESS_ERR], 1);
	/* a WR posted now completes at once, flushed */
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 9, 0, 8, 0, 0),
			 0);
	expect_wc(f, 0, 0, 9, OVR_WC_WR_FLUSH_ERR, 0);
}

/* A region of node 1 with chosen rights; returns its key. */
static uint32_t small_mr(struct fix *f, size_t off, size_t len,
			 unsigned int access)
{
	uint32_t key;

	assert_int_equal(ovr_eng_reg_mr(f->p->n[1].eng, f->p->n[1].pd,
					ovr_pair_va(f->p, 1, off), len, access,
					f->p->n[1].mem + off, &key),
			 0);
	return key;
}

static void test_out_of_bounds(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	uint32_t key =
		small_mr(f, 1u << 20, 4096,
			 OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE);
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, 0), 8192, p->n[0].key };
	struct ovr_eng_send_wr wr = {
		.wr_id = 1,
		.opcode = OVR_WR_RDMA_WRITE,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = key,
		/* starts inside, runs 4 KB past the end */
		.remote_addr = ovr_pair_va(p, 1, (1u << 20) + 4096 - 100),
	};

	memset(p->n[0].mem, 0x22, 8192);
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, 0), 0);
	expect_error_then_flush(f, 1, OVR_WC_REM_ACCESS_ERR, 0);
	/* nothing outside the region was written */
	for (size_t i = (1u << 20) + 4096; i < (1u << 20) + 12288; i++)
		assert_int_equal(p->n[1].mem[i], 0);
}

static void test_missing_right(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	/* writable but not readable */
	uint32_t key =
		small_mr(f, 2u << 20, 4096,
			 OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE);
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, 0), 64, p->n[0].key };
	struct ovr_eng_send_wr wr = {
		.wr_id = 1,
		.opcode = OVR_WR_RDMA_READ,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = key,
		.remote_addr = ovr_pair_va(p, 1, 2u << 20),
	};

	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, 0), 0);
	expect_error_then_flush(f, 1, OVR_WC_REM_ACCESS_ERR, 0);
}

static void test_misaligned_atomic(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;

	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_ATOMIC_FETCH_AND_ADD,
				  1, 0, 8, 4, OVR_SEND_SIGNALED),
			 0);
	expect_error_then_flush(f, 1, OVR_WC_REM_INV_REQ_ERR, 0);
}

static void test_bad_lkey(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, 0), 64, p->n[0].key + 1 };
	struct ovr_eng_send_wr wr = {
		.wr_id = 2,
		.opcode = OVR_WR_SEND,
		.sg_list = &sge,
		.num_sge = 1,
	};

	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 1, 0, 64), 0);
	/* a good one first: it completes normally, then the bad one fails */
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 1, 0, 8, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, 0), 0);
	assert_true(wait_cq(p, 0, 0, 2));
	expect_wc(f, 0, 0, 1, OVR_WC_SUCCESS, OVR_WC_SEND);
	expect_wc(f, 0, 0, 2, OVR_WC_LOC_PROT_ERR, 0);
	assert_int_equal(qp_state(f, 0), OVR_QPS_ERR);
}

/*
 * WRs that fail their checks at posting on a QP that hears nothing (no
 * traffic would run its completion): a bad lkey completes LOC_PROT_ERR
 * at once; a remote range that wraps the address space (no region holds
 * it, no PDU may carry it) REM_ACCESS_ERR, for WRITE, READ and atomics;
 * nothing is sent for them.
 */
static void test_fail_at_post_idle(void **state)
{
	static const uint32_t ops[] = { OVR_WR_RDMA_WRITE, OVR_WR_RDMA_READ,
					OVR_WR_ATOMIC_FETCH_AND_ADD };
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, 0), 64, p->n[0].key ^ 8 };
	struct ovr_eng_send_wr wr = {
		.wr_id = 1,
		.opcode = OVR_WR_RDMA_WRITE,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = p->n[1].key,
		.remote_addr = ovr_pair_va(p, 1, 0),
	};
	uint64_t sent = p->n[0].tx_pkts;
	struct ovr_eng_wc wc;
	uint32_t qpn[2];

	/* let the connection settle: nothing more will arrive */
	ovr_pair_run(p, never, NULL, p->now + 1000000);
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, p->now),
			 0);
	assert_int_equal(ovr_pair_cq_len(p, 0, 0), 1);
	expect_wc(f, 0, 0, 1, OVR_WC_LOC_PROT_ERR, 0);
	assert_int_equal(qp_state(f, 0), OVR_QPS_ERR);

	for (unsigned int i = 0; i < 3; i++) {
		struct ovr_pair_qp_params qp;

		ovr_pair_qp_params_default(&qp);
		assert_int_equal(ovr_pair_connect(p, &qp, 2 + 2 * i, qpn), 0);
		ovr_pair_run(p, never, NULL, p->now + 1000000);
		sent = p->n[0].tx_pkts;
		sge.lkey = p->n[0].key;
		sge.length = ops[i] == OVR_WR_RDMA_WRITE ? 64 : 8;
		wr.opcode = ops[i];
		wr.wr_id = 10 + i;
		wr.remote_addr = UINT64_MAX - 3;
		assert_int_equal(
			ovr_eng_post_send(p->n[0].eng, qpn[0], &wr, p->now), 0);
		assert_true(ovr_pair_poll(p, 0, 2 + 2 * i, &wc));
		assert_int_equal(wc.wr_id, 10 + i);
		assert_int_equal(wc.status, OVR_WC_REM_ACCESS_ERR);
		ovr_pair_run(p, never, NULL, p->now + 1000000);
		/* only the TERMINATE of the QP that failed went out */
		assert_true(p->n[0].tx_pkts - sent <= 1);
	}
}

static void test_send_too_long(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_wc wc;

	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 1, 0, 100), 0);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 1, 0, 101, 0,
				  OVR_SEND_SIGNALED),
			 0);
	expect_error_then_flush(f, 1, OVR_WC_REM_INV_REQ_ERR, 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, OVR_WC_LOC_LEN_ERR);
	assert_int_equal(p->n[1].events[OVR_EV_QP_REQ_ERR], 1);
}

static void test_retry_exhausted(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_link_cfg dead = { .blackhole = true };
	struct ovr_eng_qp_stats st;
	uint64_t t0;

	/* first show the QP works, so the RTT is known */
	do_send(f, 100);
	assert_int_equal(ovr_link_set_cfg(p->n[0].out, &dead), 0);
	t0 = p->now;
	for (int i = 0; i < 4; i++)
		assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE,
					  1 + (uint64_t)i, 0, 10000, 0,
					  OVR_SEND_SIGNALED),
				 0);
	expect_error_then_flush(f, 1, OVR_WC_RETRY_EXC_ERR, 3);
	assert_int_equal(ovr_eng_qp_stats(p->n[0].eng, f->qpn[0], &st), 0);
	assert_true(st.rto_count >= 8); /* retry_cnt 7: 8 timeouts */
	/* timeout 14 = 67 ms, (retry_cnt + 1) of them without progress */
	assert_true(p->now - t0 >= 8 * 67108864ull);
	assert_true(p->now - t0 < 5000000000ull);
}

/* A 16 MB WRITE (pattern @seed) to offset 24 MB, 200 us under way. */
static void big_write_started(struct fix *f, uint64_t seed)
{
	struct ovr_pair *p = f->p;

	do_send(f, 100); /* the RTT is known: RTO at its 200 us minimum */
	fill_pattern(p->n[0].mem, 16u << 20, seed);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 1, 0,
				  16u << 20, 24u << 20, OVR_SEND_SIGNALED),
			 0);
	ovr_pair_run_to(p, p->now + 200000);
}

/* ... and completed intact. */
static void big_write_done(struct fix *f)
{
	struct ovr_pair *p = f->p;

	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 1, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE);
	assert_memory_equal(p->n[1].mem + (24u << 20), p->n[0].mem, 16u << 20);
}

/*
 * The ACKs stall for longer than the RTO (a peer descheduled for
 * milliseconds) and then arrive, in order: the RTO was spurious. Its one resend
 * must be all that is sent twice (not the whole flight), the first ACK
 * after it must say so (Eifel), and the data must arrive intact.
 */
static void test_spurious_rto(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_link_cfg slow, fast;
	struct ovr_eng_qp_stats s0, s1;

	big_write_started(f, 11);
	fast = (struct ovr_link_cfg){ .rate_bps = 100000000000ull,
				      .delay_ns = 15000,
				      .seed = 8 };
	/* ACKs of ~100 B at 200 kbit/s: 4 ms each, in order (a FIFO
	 * serializer, as a stalled host delivers them) */
	slow = fast;
	slow.rate_bps = 200000;
	assert_int_equal(ovr_link_set_cfg(p->n[1].out, &slow), 0);
	ovr_pair_run_to(p, p->now + 300000);
	assert_int_equal(ovr_link_set_cfg(p->n[1].out, &fast), 0);
	big_write_done(f);
	assert_int_equal(ovr_eng_qp_stats(p->n[0].eng, f->qpn[0], &s0), 0);
	assert_int_equal(ovr_eng_qp_stats(p->n[1].eng, f->qpn[1], &s1), 0);
	assert_true(s0.rto_count >= 1);
	assert_true(s0.rto_spurious >= 1);
	/* one resend per timer (RTO or tail-loss probe), not the flight */
	assert_true(s0.retx_pkts <= s0.rto_count + s0.tlp_count);
	assert_true(s1.rx_dup <= s0.rto_count + s0.tlp_count);
}

/*
 * The data path goes dark for 2 ms mid-transfer and comes back: the RTO
 * is real (its resend is what gets acknowledged), and everything sent
 * before it that was lost is resent after that first ACK.
 */
static void test_real_rto_recovers(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_link_cfg dark = { .blackhole = true }, up;
	struct ovr_eng_qp_stats s0;

	big_write_started(f, 12);
	up = (struct ovr_link_cfg){ .rate_bps = 100000000000ull,
				    .delay_ns = 15000,
				    .seed = 7 };
	assert_int_equal(ovr_link_set_cfg(p->n[0].out, &dark), 0);
	ovr_pair_run_to(p, p->now + 2000000);
	assert_int_equal(ovr_link_set_cfg(p->n[0].out, &up), 0);
	big_write_done(f);
	assert_int_equal(ovr_eng_qp_stats(p->n[0].eng, f->qpn[0], &s0), 0);
	assert_true(s0.rto_count >= 1);
	assert_int_equal(s0.rto_spurious, 0);
	/* what was in flight when the path went dark was resent */
	assert_true(s0.retx_pkts > 16);
}

static void test_rnr_wait_and_release(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_qp_stats st;
	struct ovr_eng_wc wc;

	fill_pattern(p->n[0].mem, 5000, 1);
	/* no receive posted: the SEND waits (rnr_retry 7 = forever) */
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 1, 0, 5000, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_false(ovr_pair_run(p, NULL, NULL, p->now + 50000000));
	assert_int_equal(ovr_pair_cq_len(p, 0, 0), 0);
	assert_int_equal(ovr_eng_qp_stats(p->n[1].eng, f->qpn[1], &st), 0);
	assert_true(st.rnr_naks_sent > 0);
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 7, 1u << 20, 8192), 0);
	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 1, OVR_WC_SUCCESS, OVR_WC_SEND);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.byte_len, 5000);
	assert_memory_equal(p->n[1].mem + (1u << 20), p->n[0].mem, 5000);
}

static int setup_rnr0(void **state)
{
	struct ovr_pair_cfg cfg;
	struct ovr_pair_qp_params qp;

	ovr_pair_cfg_default(&cfg);
	cfg.mem_bytes = 4u << 20;
	ovr_pair_qp_params_default(&qp);
	qp.rnr_retry = 0;
	*state = setup_with(&cfg, &qp);
	return 0;
}

static void test_rnr_retry_exceeded(void **state)
{
	struct fix *f = *state;

	/* a WRITE before it completes normally */
	assert_int_equal(post_one(f->p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 0, 0,
				  100000, 0, OVR_SEND_SIGNALED),
			 0);
	assert_int_equal(post_one(f->p, 0, f->qpn[0], OVR_WR_SEND, 1, 0, 10, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(f->p, 0, 0, 1));
	expect_wc(f, 0, 0, 0, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE);
	assert_int_equal(post_one(f->p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 2, 0,
				  10, 0, 0),
			 0);
	expect_error_then_flush(f, 1, OVR_WC_RNR_RETRY_EXC_ERR, 1);
}

static void test_flush_on_modify_error(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_qp_attr a = { .qp_state = OVR_QPS_ERR };
	struct ovr_eng_wc wc;

	for (int i = 0; i < 5; i++)
		assert_int_equal(post_recv_one(p, 1, f->qpn[1],
					       10 + (uint64_t)i, 0, 64),
				 0);
	assert_int_equal(ovr_eng_qp_modify(p->n[1].eng, f->qpn[1], &a,
					   OVR_QP_STATE, p->now),
			 0);
	for (int i = 0; i < 5; i++) {
		assert_true(ovr_pair_poll(p, 1, 1, &wc));
		assert_int_equal(wc.wr_id, 10 + (uint64_t)i);
		assert_int_equal(wc.status, OVR_WC_WR_FLUSH_ERR);
	}
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 20, 0, 64), 0);
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 20);
	assert_int_equal(wc.status, OVR_WC_WR_FLUSH_ERR);
	/* back to RESET, then the full bring-up is needed again */
	a.qp_state = OVR_QPS_RESET;
	assert_int_equal(ovr_eng_qp_modify(p->n[1].eng, f->qpn[1], &a,
					   OVR_QP_STATE, p->now),
			 0);
	assert_int_equal(qp_state(f, 1), OVR_QPS_RESET);
	assert_int_equal(ovr_pair_cq_len(p, 1, 1), 0);
}

static void test_state_machine(void **state)
{
	struct fix *f = *state;
	struct ovr_eng *e = f->p->n[0].eng;
	struct ovr_eng_qp_init init = {
		.pd = 1,
		.cap = { 16, 16, 1, 1, 0 },
	};
	struct ovr_eng_qp_attr a = { 0 };
	uint32_t qpn;

	assert_int_equal(ovr_eng_qp_create(e, &init, &qpn), 0);
	/* RESET -> RTR skips INIT */
	a.qp_state = OVR_QPS_RTR;
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a, OVR_QP_STATE, 0),
			 -EINVAL);
	/* RESET -> INIT without its required attributes */
	a.qp_state = OVR_QPS_INIT;
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a, OVR_QP_STATE, 0),
			 -EINVAL);
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a,
					   OVR_QP_STATE | OVR_QP_PKEY_INDEX |
						   OVR_QP_PORT |
						   OVR_QP_ACCESS_FLAGS,
					   0),
			 0);
	/* posting a send before RTS is refused */
	assert_int_equal(post_one(f->p, 0, qpn, OVR_WR_SEND, 1, 0, 8, 0, 0),
			 EINVAL);
	/* INIT -> RTS skips RTR */
	a.qp_state = OVR_QPS_RTS;
	assert_int_equal(ovr_eng_qp_modify(e, qpn, &a,
					   OVR_QP_STATE | OVR_QP_SQ_PSN, 0),
			 -EINVAL);
	/* bad values are refused even on a legal transition */
	a.qp_state = OVR_QPS_RTR;
	a.path_mtu = 9;
	a.max_dest_rd_atomic = 1;
	assert_int_equal(
		ovr_eng_qp_modify(e, qpn, &a,
				  OVR_QP_STATE | OVR_QP_AV | OVR_QP_PATH_MTU |
					  OVR_QP_DEST_QPN | OVR_QP_RQ_PSN |
					  OVR_QP_MAX_DEST_RD_ATOMIC |
					  OVR_QP_MIN_RNR_TIMER,
				  0),
		-EINVAL);
	assert_int_equal(qp_state(f, 0), OVR_QPS_RTS);
	/* the connected QP cannot go back to RTR */
	a.qp_state = OVR_QPS_RTR;
	a.path_mtu = OVR_MTU_1024;
	assert_int_equal(ovr_eng_qp_modify(e, f->qpn[0], &a, OVR_QP_STATE, 0),
			 -EINVAL);
	assert_int_equal(ovr_eng_qp_destroy(e, qpn), 0);
	assert_int_equal(ovr_eng_qp_destroy(e, qpn), -EINVAL);
}

static void test_post_errors(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_sge sge[8];
	struct ovr_eng_send_wr wr = { .opcode = 77 };
	uint32_t key = p->n[0].key;

	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, 0),
			 EINVAL);
	for (int i = 0; i < 8; i++)
		sge[i] = (struct ovr_eng_sge){ ovr_pair_va(p, 0, 0), 8, key };
	wr = (struct ovr_eng_send_wr){ .opcode = OVR_WR_SEND,
				       .sg_list = sge,
				       .num_sge = 5 }; /* max_send_sge 4 */
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, 0),
			 EINVAL);
	sge[0].length = 257; /* max_inline_data 256 */
	wr.num_sge = 1;
	wr.send_flags = OVR_SEND_INLINE;
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, 0),
			 EINVAL);
	/* an atomic needs exactly one 8-byte SGE */
	wr = (struct ovr_eng_send_wr){ .opcode = OVR_WR_ATOMIC_FETCH_AND_ADD,
				       .sg_list = sge,
				       .num_sge = 1 };
	sge[0].length = 4;
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, 0),
			 EINVAL);
	/* a full queue says ENOMEM, and nothing was lost */
	int n = 0;

	while (post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, (uint64_t)n, 0, 8,
			0, OVR_SEND_SIGNALED) == 0)
		n++;
	assert_int_equal(n, 256);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 0, 0, 8,
				  0, 0),
			 ENOMEM);
	assert_true(wait_cq(p, 0, 0, 256));
	for (int i = 0; i < 256; i++)
		expect_wc(f, 0, 0, (uint64_t)i, OVR_WC_SUCCESS,
			  OVR_WC_RDMA_WRITE);
	/* a region a posted send uses cannot be deregistered (posted
	 * receives alone give it up: test_engine_srq) */
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 1, 0, 64), 0);
	assert_int_equal(post_one(p, 1, f->qpn[1], OVR_WR_RDMA_WRITE, 2, 0, 8,
				  0, OVR_SEND_SIGNALED),
			 0);
	assert_int_equal(ovr_eng_dereg_mr(p->n[1].eng, p->n[1].key), -EBUSY);
}

static void test_inline_and_sgl(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_sge sge[3] = {
		{ ovr_pair_va(p, 0, 100), 10, 0 },
		{ ovr_pair_va(p, 0, 5000), 20, 0 },
		{ ovr_pair_va(p, 0, 9000), 30, 0 },
	};
	struct ovr_eng_sge rsge[2] = {
		{ ovr_pair_va(p, 1, 1000), 25, p->n[1].key },
		{ ovr_pair_va(p, 1, 3000), 100, p->n[1].key },
	};
	struct ovr_eng_recv_wr rwr = { 5, rsge, 2 };
	struct ovr_eng_send_wr wr = {
		.wr_id = 4,
		.opcode = OVR_WR_SEND_WITH_IMM,
		.send_flags = OVR_SEND_INLINE | OVR_SEND_SIGNALED,
		.sg_list = sge,
		.num_sge = 3,
		.imm_data = 0x12345678,
	};
	uint8_t want[60];
	struct ovr_eng_wc wc;

	fill_pattern(p->n[0].mem, 10000, 9);
	memcpy(want, p->n[0].mem + 100, 10);
	memcpy(want + 10, p->n[0].mem + 5000, 20);
	memcpy(want + 30, p->n[0].mem + 9000, 30);
	assert_int_equal(ovr_eng_post_recv(p->n[1].eng, f->qpn[1], &rwr, 0), 0);
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, 0), 0);
	/* inline: the source may change right after posting */
	memset(p->n[0].mem + 100, 0, 10);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 60);
	assert_int_equal(wc.imm_data, 0x12345678);
	assert_int_equal(wc.wc_flags & OVR_WC_WITH_IMM, OVR_WC_WITH_IMM);
	assert_memory_equal(p->n[1].mem + 1000, want, 25);
	assert_memory_equal(p->n[1].mem + 3000, want + 25, 35);
	assert_int_equal(p->n[1].mem[3035], 0);
}

static void test_sqd(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_qp_attr a = { .qp_state = OVR_QPS_SQD };

	fill_pattern(p->n[0].mem, 1u << 20, 5);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 1, 0,
				  1u << 20, 0, OVR_SEND_SIGNALED),
			 0);
	ovr_pair_step(p); /* the first one is on its way */
	assert_int_equal(ovr_eng_qp_modify(p->n[0].eng, f->qpn[0], &a,
					   OVR_QP_STATE |
						   OVR_QP_EN_SQD_ASYNC_NOTIFY,
					   p->now),
			 0);
	/* a WR posted in SQD waits */
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 2, 0, 64,
				  2u << 20, OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 1, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE);
	assert_memory_equal(p->n[1].mem, p->n[0].mem, 1u << 20);
	ovr_pair_run(p, NULL, NULL, p->now + 10000000);
	assert_int_equal(p->n[0].events[OVR_EV_SQ_DRAINED], 1);
	assert_int_equal(ovr_pair_cq_len(p, 0, 0), 0);
	/* back to RTS: the waiting WR goes */
	a.qp_state = OVR_QPS_RTS;
	assert_int_equal(ovr_eng_qp_modify(p->n[0].eng, f->qpn[0], &a,
					   OVR_QP_STATE, p->now),
			 0);
	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 2, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE);
}

static void test_unsignaled(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;

	for (int i = 0; i < 10; i++)
		assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE,
					  (uint64_t)i, 0, 100, 0,
					  i == 9 ? OVR_SEND_SIGNALED : 0),
				 0);
	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 9, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE);
	ovr_pair_run(p, NULL, NULL, p->now + 10000000);
	assert_int_equal(ovr_pair_cq_len(p, 0, 0), 0);
}

/* ---- a responder that stays in RTR ---------------------------------------- */

/*
 * perftest's ib_read_bw and ib_atomic_bw servers take their QP to RTR
 * and never to RTS: the responder must answer READs and atomics from
 * RTR, without the sq_psn that only RTS gives (it takes it from the
 * requester's ack_psn). Node 0 is the requester (RTS), node 1 stays in
 * RTR; the PSNs are the ones a perftest pair would exchange.
 */
#define RTR_PSN0 0xabc123u /* node 0's send PSN, node 1's rq_psn */
#define RTR_PSN1 0xfffff0u /* node 1's intended send PSN (wraps soon) */

static int setup_rtr_responder(void **state)
{
	struct ovr_pair_cfg cfg;
	struct ovr_pair_qp_params qp;
	struct ovr_eng_qp_attr a;
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	ovr_pair_cfg_default(&cfg);
	cfg.mem_bytes = 48u << 20;
	for (int i = 0; i < 2; i++) {
		cfg.link[i].loss = 0.05;
		cfg.link[i].reorder = 0.05;
		cfg.link[i].reorder_ns = 20000;
	}
	ovr_pair_qp_params_default(&qp);
	f->p = ovr_pair_create(&cfg);
	assert_non_null(f->p);
	for (int i = 0; i < 2; i++) {
		struct ovr_eng_qp_init init = {
			.pd = f->p->n[i].pd,
			.send_cq = 0,
			.recv_cq = 1,
			.user = (uint64_t)i,
			.cap = qp.cap,
		};

		assert_int_equal(ovr_eng_qp_create(f->p->n[i].eng, &init,
						   &f->qpn[i]),
				 0);
		memset(&a, 0, sizeof(a));
		a.qp_state = OVR_QPS_INIT;
		a.qp_access_flags = qp.access;
		assert_int_equal(
			ovr_eng_qp_modify(f->p->n[i].eng, f->qpn[i], &a,
					  OVR_QP_STATE | OVR_QP_PKEY_INDEX |
						  OVR_QP_PORT |
						  OVR_QP_ACCESS_FLAGS,
					  f->p->now),
			0);
	}
	for (int i = 0; i < 2; i++) {
		memset(&a, 0, sizeof(a));
		a.qp_state = OVR_QPS_RTR;
		a.path_mtu = qp.mtu;
		a.dest_qp_num = f->qpn[1 - i];
		a.rq_psn = i ? RTR_PSN0 : RTR_PSN1;
		a.peer = (uint64_t)(1 - i);
		a.max_dest_rd_atomic = qp.max_dest_rd_atomic;
		a.min_rnr_timer = qp.min_rnr_timer;
		assert_int_equal(
			ovr_eng_qp_modify(
				f->p->n[i].eng, f->qpn[i], &a,
				OVR_QP_STATE | OVR_QP_AV | OVR_QP_PATH_MTU |
					OVR_QP_DEST_QPN | OVR_QP_RQ_PSN |
					OVR_QP_MAX_DEST_RD_ATOMIC |
					OVR_QP_MIN_RNR_TIMER,
				f->p->now),
			0);
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = OVR_QPS_RTS;
	a.sq_psn = RTR_PSN0;
	a.timeout = qp.timeout;
	a.retry_cnt = qp.retry_cnt;
	a.rnr_retry = qp.rnr_retry;
	a.max_rd_atomic = qp.max_rd_atomic;
	assert_int_equal(ovr_eng_qp_modify(
				 f->p->n[0].eng, f->qpn[0], &a,
				 OVR_QP_STATE | OVR_QP_SQ_PSN | OVR_QP_TIMEOUT |
					 OVR_QP_RETRY_CNT | OVR_QP_RNR_RETRY |
					 OVR_QP_MAX_QP_RD_ATOMIC,
				 f->p->now),
			 0);
	*state = f;
	return 0;
}

static void test_rtr_responder(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	uint32_t len = 2u << 20;
	struct ovr_eng_qp_attr a;
	uint64_t v = 5, got;

	/* READs: 2 MB in 64 KB pieces, 16 outstanding as ib_read_bw does */
	fill_pattern(p->n[1].mem + (1u << 20), len, 11);
	for (uint32_t off = 0; off < len; off += 65536)
		assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_READ,
					  off, (8u << 20) + off, 65536,
					  (1u << 20) + off, OVR_SEND_SIGNALED),
				 0);
	assert_true(wait_cq(p, 0, 0, len / 65536));
	for (uint32_t off = 0; off < len; off += 65536)
		expect_wc(f, 0, 0, off, OVR_WC_SUCCESS, OVR_WC_RDMA_READ);
	assert_memory_equal(p->n[0].mem + (8u << 20), p->n[1].mem + (1u << 20),
			    len);

	/* atomics, as ib_atomic_bw */
	memcpy(p->n[1].mem + 8192, &v, 8);
	for (int i = 0; i < 20; i++)
		assert_int_equal(post_one(p, 0, f->qpn[0],
					  OVR_WR_ATOMIC_FETCH_AND_ADD,
					  (uint64_t)i, 4096 + 8 * (size_t)i, 8,
					  8192, OVR_SEND_SIGNALED),
				 0);
	assert_true(wait_cq(p, 0, 0, 20));
	for (int i = 0; i < 20; i++) {
		expect_wc(f, 0, 0, (uint64_t)i, OVR_WC_SUCCESS,
			  OVR_WC_FETCH_ADD);
		memcpy(&got, p->n[0].mem + 4096 + 8 * i, 8);
		assert_int_equal(got, 5);
	}
	memcpy(&got, p->n[1].mem + 8192, 8);
	assert_int_equal(got, 5); /* post_one adds compare_add = 0 */
	assert_int_equal(ovr_eng_qp_query(p->n[1].eng, f->qpn[1], &a), 0);
	assert_int_equal(a.qp_state, OVR_QPS_RTR);

	/* RTS later, with the sq_psn the peer was told: the send PSN space
	 * that began in RTR goes on, and node 1 can request too */
	memset(&a, 0, sizeof(a));
	a.qp_state = OVR_QPS_RTS;
	a.sq_psn = RTR_PSN1;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	assert_int_equal(ovr_eng_qp_modify(
				 p->n[1].eng, f->qpn[1], &a,
				 OVR_QP_STATE | OVR_QP_SQ_PSN | OVR_QP_TIMEOUT |
					 OVR_QP_RETRY_CNT | OVR_QP_RNR_RETRY |
					 OVR_QP_MAX_QP_RD_ATOMIC,
				 p->now),
			 0);
	fill_pattern(p->n[1].mem, 100000, 12);
	assert_int_equal(post_one(p, 1, f->qpn[1], OVR_WR_RDMA_WRITE, 99, 0,
				  100000, 16u << 20, OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 1, 0, 1));
	expect_wc(f, 1, 0, 99, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE);
	assert_memory_equal(p->n[0].mem + (16u << 20), p->n[1].mem, 100000);
}

/*
 * READs in flight when a later WR of the same QP is refused (NAK
 * REM_ACCESS): the responder, now in ERROR, will not finish their
 * responses. The completions must read as verbs order them - successes,
 * one error, then flushes - never a flush ahead of the error.
 */
static void test_error_order(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, 0), 64, p->n[0].key };
	struct ovr_eng_send_wr wr = {
		.wr_id = 9,
		.opcode = OVR_WR_RDMA_WRITE,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = p->n[1].key ^ 0x10000u,
		.remote_addr = ovr_pair_va(p, 1, 0),
	};
	struct ovr_eng_wc wc;
	int ok = 0, err = 0, fl = 0;

	for (int i = 0; i < 8; i++)
		assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_READ,
					  1 + (uint64_t)i,
					  (8u << 20) + ((size_t)i << 18),
					  1u << 18, (size_t)i << 18,
					  OVR_SEND_SIGNALED),
				 0);
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, 0), 0);
	assert_true(wait_cq(p, 0, 0, 9));
	for (uint64_t i = 1; i <= 9; i++) {
		assert_true(ovr_pair_poll(p, 0, 0, &wc));
		assert_int_equal(wc.wr_id, i);
		if (wc.status == OVR_WC_SUCCESS) {
			assert_int_equal(err + fl, 0);
			ok++;
		} else if (wc.status == OVR_WC_REM_ACCESS_ERR) {
			assert_int_equal(err + fl, 0);
			assert_int_equal(wc.vendor_err, OVR_NAK_REM_ACCESS);
			err++;
		} else {
			assert_int_equal(wc.status, OVR_WC_WR_FLUSH_ERR);
			assert_int_equal(err, 1);
			fl++;
		}
	}
	assert_int_equal(err, 1);
	assert_int_equal(ok + err + fl, 9);
}

/* ---- a region deregistered while the peer uses it ------------------------ */

struct pdu_gate {
	int drop_naks; /* NAKs still to drop */
	bool silent; /* drop everything */
	bool hold_retx; /* drop retransmissions */
	int drop_first_write; /* first WRITE segments still to drop */
	bool drop_acks; /* pure ACKs */
	uint32_t drop_resp_msn; /* READ responses of this MSN; 0: none */
	/* of those, only one segment: the first seen that is neither the
	 * first nor the last (its offset kept in seg_mo) */
	bool drop_one_seg;
	uint32_t seg_mo;
	uint64_t naks; /* NAKs seen, dropped or not */
};

static bool gate(struct ovr_pair_node *n, const uint8_t *pdu, uint32_t len,
		 void *ctx)
{
	struct pdu_gate *g = ctx;
	struct ovr_wire_pkt p;

	(void)n;
	if (g->silent)
		return true;
	if (ovr_wire_parse(pdu, len, &p, NULL))
		return false;
	if (p.opcode == OVR_OP_NAK)
		g->naks++;
	if (p.opcode == OVR_OP_NAK && g->drop_naks > 0) {
		g->drop_naks--;
		return true;
	}
	if (g->hold_retx && (p.flags & OVR_F_RETX))
		return true;
	if (p.opcode == OVR_OP_WRITE && g->drop_first_write > 0) {
		g->drop_first_write--;
		return true;
	}
	if (p.opcode == OVR_OP_ACK && g->drop_acks)
		return true;
	if (p.opcode == OVR_OP_READ_RESP && g->drop_resp_msn &&
	    p.u.rresp.msn == g->drop_resp_msn) {
		if (!g->drop_one_seg)
			return true;
		if (!g->seg_mo && p.u.rresp.mo && !(p.flags & OVR_F_LAST))
			g->seg_mo = p.u.rresp.mo;
		return g->seg_mo && p.u.rresp.mo == g->seg_mo;
	}
	if (p.opcode == OVR_OP_ATOMIC_RESP && g->drop_resp_msn &&
	    p.u.aresp.msn == g->drop_resp_msn)
		return true;
	return false;
}

static bool sent_at_least(struct ovr_pair *p, void *ctx)
{
	return p->n[1].tx_pkts >= *(uint64_t *)ctx;
}

/*
 * A 2 MB READ is being answered when the responder deregisters the
 * region: the responder must not read it any more (the service unmaps it
 * at once), the READ fails with REM_ACCESS_ERR and the WR behind it
 * flushes - even when that NAK is lost (the requester, left with nothing
 * in flight, asks again).
 */
static void read_dereg(struct fix *f, int drop_naks)
{
	struct ovr_pair *p = f->p;
	uint32_t key =
		small_mr(f, 4u << 20, 2u << 20,
			 OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_READ);
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, 8u << 20), 2u << 20,
				   p->n[0].key };
	struct ovr_eng_send_wr wr = {
		.wr_id = 1,
		.opcode = OVR_WR_RDMA_READ,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = key,
		.remote_addr = ovr_pair_va(p, 1, 4u << 20),
	};
	struct pdu_gate g = { .drop_naks = drop_naks };
	struct ovr_eng_stats st0, st1;
	uint64_t want = p->n[1].tx_pkts + 40;

	p->n[1].tx_filter = gate;
	p->n[1].tx_filter_ctx = &g;
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, 0), 0);
	/* a WR behind it would carry a PSN the responder answers with its
	 * NAK again: without one, only the requester's probe does */
	if (!drop_naks)
		assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 2, 0, 8,
					  0, OVR_SEND_SIGNALED),
				 0);
	/* 40 response segments out of 512 */
	assert_true(
		ovr_pair_run(p, sent_at_least, &want, p->now + 1000000000ull));
	assert_int_equal(ovr_eng_dereg_mr(p->n[1].eng, key), 0);
	expect_error_then_flush(f, 1, OVR_WC_REM_ACCESS_ERR, drop_naks ? 0 : 1);
	assert_int_equal(qp_state(f, 1), OVR_QPS_ERR);
	assert_int_equal(p->n[1].events[OVR_EV_QP_ACCESS_ERR], 1);
	ovr_eng_get_stats(p->n[0].eng, &st0);
	ovr_eng_get_stats(p->n[1].eng, &st1);
	assert_int_equal(st1.mr_revoked, 1);
	if (drop_naks)
		assert_true(st0.rsp_probes >= 1);
	assert_int_equal(g.drop_naks, 0);
}

static void test_read_dereg(void **state)
{
	read_dereg(*state, 0);
}

static void test_read_dereg_nak_lost(void **state)
{
	read_dereg(*state, 2);
}

/* READ @len bytes of node 1 at @roff through @rkey into node 0's arena
 * at @loff. */
static void post_read(struct fix *f, uint64_t wr_id, size_t loff, uint32_t len,
		      uint32_t rkey, size_t roff)
{
	struct ovr_pair *p = f->p;
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, loff), len, p->n[0].key };
	struct ovr_eng_send_wr wr = {
		.wr_id = wr_id,
		.opcode = OVR_WR_RDMA_READ,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = rkey,
		.remote_addr = ovr_pair_va(p, 1, roff),
	};

	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, p->now),
			 0);
}

/* Fetch-and-add @add to node 1's word at @roff through @rkey; the old
 * value lands in node 0's arena at @loff. */
static void post_fa(struct fix *f, uint64_t wr_id, size_t loff, uint32_t rkey,
		    size_t roff, uint64_t add)
{
	struct ovr_pair *p = f->p;
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, loff), 8, p->n[0].key };
	struct ovr_eng_send_wr wr = {
		.wr_id = wr_id,
		.opcode = OVR_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = rkey,
		.remote_addr = ovr_pair_va(p, 1, roff),
		.compare_add = add,
	};

	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, p->now),
			 0);
}

static struct ovr_eng_qp_stats qp_stats(struct fix *f, int n)
{
	struct ovr_eng_qp_stats st;

	assert_int_equal(ovr_eng_qp_stats(f->p->n[n].eng, f->qpn[n], &st), 0);
	return st;
}

static bool filtered_at_least(struct ovr_pair *p, void *ctx)
{
	return p->n[1].tx_filtered >= *(uint64_t *)ctx;
}

/*
 * The response a resend would read is a spurious one: the READ is
 * complete at the requester (its ACKs were lost) when the responder
 * deregisters the region. The resend is dropped (resp_resend_revoked),
 * never NAKed, and the QP lives on: an atomic on another region, whose
 * response was lost meanwhile, completes with the right value, executed
 * once, and a READ after it is byte-exact.
 */
static void test_read_dereg_spurious_resend(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	uint32_t key =
		small_mr(f, 4u << 20, 1u << 20,
			 OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_READ);
	struct pdu_gate g0 = { .drop_acks = true };
	struct pdu_gate g1 = { .drop_resp_msn = 2 };
	struct ovr_eng_qp_stats qs;
	struct ovr_eng_stats st;
	uint64_t v = 1000, got;

	fill_pattern(p->n[1].mem + (4u << 20), 65536, 11);
	fill_pattern(p->n[1].mem + (12u << 20), 30000, 12);
	memcpy(p->n[1].mem + 64, &v, 8);
	p->n[0].tx_filter = gate;
	p->n[0].tx_filter_ctx = &g0;
	p->n[1].tx_filter = gate;
	p->n[1].tx_filter_ctx = &g1;
	post_read(f, 1, 8u << 20, 65536, key, 4u << 20);
	/* an atomic on another region: its response, the responder's
	 * last packet, is what a tail-loss probe resends (no memory) */
	post_fa(f, 2, 9u << 20, p->n[1].key, 64, 5);
	/* READ 1 complete at the requester; its ACKs and the atomic's
	 * response never reach the other side */
	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 1, OVR_WC_SUCCESS, OVR_WC_RDMA_READ);
	assert_memory_equal(p->n[0].mem + (8u << 20), p->n[1].mem + (4u << 20),
			    65536);
	/* nothing of the requester's (its probes carry ACKs) gets through:
	 * the responder would resend READ 1's response, which it believes
	 * lost, from a region now gone */
	g0.silent = true;
	assert_int_equal(ovr_eng_dereg_mr(p->n[1].eng, key), 0);
	ovr_pair_run(p, never, NULL, p->now + 50000000ull);
	qs = qp_stats(f, 1);
	assert_true(qs.resp_resend_revoked >= 1);
	assert_int_equal(qp_state(f, 1), OVR_QPS_RTS);
	assert_int_equal(g1.naks, 0);
	/* the requester is heard again, the atomic's response gets through */
	g0.silent = false;
	g0.drop_acks = false;
	g1.drop_resp_msn = 0;
	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 2, OVR_WC_SUCCESS, OVR_WC_FETCH_ADD);
	memcpy(&got, p->n[0].mem + (9u << 20), 8);
	assert_int_equal(got, 1000);
	memcpy(&got, p->n[1].mem + 64, 8);
	assert_int_equal(got, 1005);
	/* the QP goes on */
	post_read(f, 3, 10u << 20, 30000, p->n[1].key, 12u << 20);
	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 3, OVR_WC_SUCCESS, OVR_WC_RDMA_READ);
	assert_memory_equal(p->n[0].mem + (10u << 20),
			    p->n[1].mem + (12u << 20), 30000);
	assert_int_equal(qp_state(f, 0), OVR_QPS_RTS);
	assert_int_equal(qp_state(f, 1), OVR_QPS_RTS);
	assert_int_equal(g1.naks, 0);
	ovr_eng_get_stats(p->n[1].eng, &st);
	assert_int_equal(st.mr_revoked, 0);
	assert_int_equal(st.resp_resend_revoked, qs.resp_resend_revoked);
}

/*
 * A READ's response is lost whole (every copy), and the responder
 * deregisters the region before the requester asks again: the
 * responder's own resends are dropped (they would read the region
 * gone), and the request asked again is refused as any on a revoked key
 * is - the READ completes REM_ACCESS_ERR, with no stale bytes, and does
 * not hang. With a WRITE behind it the request is acknowledged and the
 * requester's response watch asks again; without, its RTO does.
 */
static void read_dereg_lost(struct fix *f, bool write_behind)
{
	struct ovr_pair *p = f->p;
	uint32_t key =
		small_mr(f, 4u << 20, 1u << 20,
			 OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_READ);
	struct pdu_gate g1 = { .drop_resp_msn = 1 };
	struct ovr_eng_stats st;
	uint64_t want = 16;
	uint8_t *dst = p->n[0].mem + (8u << 20);

	fill_pattern(p->n[1].mem + (4u << 20), 65536, 13);
	memset(dst, 0xee, 65536);
	p->n[1].tx_filter = gate;
	p->n[1].tx_filter_ctx = &g1;
	post_read(f, 1, 8u << 20, 65536, key, 4u << 20);
	if (write_behind)
		assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 2,
					  0, 100, 1u << 20, OVR_SEND_SIGNALED),
				 0);
	/* the whole response sent, and dropped */
	assert_true(ovr_pair_run(p, filtered_at_least, &want,
				 p->now + 1000000000ull));
	assert_int_equal(ovr_eng_dereg_mr(p->n[1].eng, key), 0);
	g1.drop_resp_msn = 0;
	expect_error_then_flush(f, 1, OVR_WC_REM_ACCESS_ERR,
				write_behind ? 1 : 0);
	for (size_t i = 0; i < 65536; i++)
		assert_int_equal(dst[i], 0xee);
	assert_int_equal(qp_state(f, 1), OVR_QPS_ERR);
	assert_int_equal(p->n[1].events[OVR_EV_QP_ACCESS_ERR], 1);
	ovr_eng_get_stats(p->n[1].eng, &st);
	assert_int_equal(st.mr_revoked, 1);
}

static void test_read_dereg_lost(void **state)
{
	read_dereg_lost(*state, false);
}

static void test_read_dereg_lost_acked(void **state)
{
	read_dereg_lost(*state, true);
}

/*
 * Only one segment of a READ's response is missing (every copy), its
 * last one arrived; the region is deregistered before the resend gets
 * through. That resend is dropped, so the requester, which has the
 * response's end, must ask again for a READ with a hole in its response
 * (eng_rsp_watch), and the READ fails REM_ACCESS_ERR instead of waiting
 * for a segment that will never come.
 */
static void test_read_dereg_hole(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	uint32_t key =
		small_mr(f, 4u << 20, 1u << 20,
			 OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_READ);
	struct pdu_gate g1 = { .drop_resp_msn = 1, .drop_one_seg = true };
	struct ovr_eng_stats st0, st1;
	uint64_t want = 2; /* the segment and one resend */

	fill_pattern(p->n[1].mem + (4u << 20), 65536, 14);
	p->n[1].tx_filter = gate;
	p->n[1].tx_filter_ctx = &g1;
	post_read(f, 1, 8u << 20, 65536, key, 4u << 20);
	assert_true(ovr_pair_run(p, filtered_at_least, &want,
				 p->now + 1000000000ull));
	assert_true(g1.seg_mo > 0);
	assert_int_equal(ovr_eng_dereg_mr(p->n[1].eng, key), 0);
	g1.drop_resp_msn = 0;
	expect_error_then_flush(f, 1, OVR_WC_REM_ACCESS_ERR, 0);
	assert_int_equal(qp_state(f, 1), OVR_QPS_ERR);
	ovr_eng_get_stats(p->n[0].eng, &st0);
	ovr_eng_get_stats(p->n[1].eng, &st1);
	assert_true(st0.rsp_probes >= 1);
	assert_int_equal(st1.mr_revoked, 1);
	/* only the missing segment was given up: the rest was SACKed */
	assert_int_equal(st1.resp_resend_revoked, 1);
}

/*
 * A 1 MB READ completes, then eight READs of 4 KB, their ACKs lost; the
 * responder deregisters the region. Its resends of the responses are
 * dropped - every packet that would read the region at once, not one
 * per RTO - it sends no NAK, and, owing nothing any more, it neither
 * resends again nor times the requester out however long that stays
 * silent (the retry budget is 8 x 67 ms). Then READs of another region,
 * WRITEs and SENDs on the same QP complete, byte-exact, and the
 * responder's scoreboard empties.
 */
static void test_read_dereg_then_traffic(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	uint32_t key =
		small_mr(f, 4u << 20, 1u << 20,
			 OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_READ);
	struct pdu_gate g0 = { .drop_acks = true };
	struct pdu_gate g1 = { 0 };
	struct ovr_eng_qp_stats qs;
	struct ovr_eng_wc wc;
	uint64_t tx;

	fill_pattern(p->n[1].mem + (4u << 20), 1u << 20, 15);
	p->n[0].tx_filter = gate;
	p->n[0].tx_filter_ctx = &g0;
	p->n[1].tx_filter = gate;
	p->n[1].tx_filter_ctx = &g1;
	post_read(f, 1, 8u << 20, 1u << 20, key, 4u << 20);
	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 1, OVR_WC_SUCCESS, OVR_WC_RDMA_READ);
	assert_memory_equal(p->n[0].mem + (8u << 20), p->n[1].mem + (4u << 20),
			    1u << 20);
	for (unsigned int i = 0; i < 8; i++)
		post_read(f, 2 + i, (10u << 20) + 4096 * i, 4096, key,
			  (4u << 20) + 8192 * i);
	assert_true(wait_cq(p, 0, 0, 8));
	for (unsigned int i = 0; i < 8; i++) {
		expect_wc(f, 0, 0, 2 + i, OVR_WC_SUCCESS, OVR_WC_RDMA_READ);
		assert_memory_equal(p->n[0].mem + (10u << 20) + 4096 * i,
				    p->n[1].mem + (4u << 20) + 8192 * i, 4096);
	}
	assert_int_equal(ovr_eng_dereg_mr(p->n[1].eng, key), 0);
	ovr_pair_run(p, never, NULL, p->now + 20000000ull);
	qs = qp_stats(f, 1);
	/* every packet of the responses given up at once: nothing owed */
	assert_true(qs.resp_resend_revoked >= 8);
	assert_int_equal(qs.resp_resend_revoked, qs.inflight_pkts);
	tx = p->n[1].tx_pkts;
	ovr_pair_run(p, never, NULL, p->now + 2000000000ull);
	assert_int_equal(p->n[1].tx_pkts, tx);
	assert_int_equal(qp_state(f, 1), OVR_QPS_RTS);
	assert_int_equal(g1.naks, 0);

	/* more traffic, the requester's ACKs heard again */
	g0.drop_acks = false;
	fill_pattern(p->n[1].mem + (12u << 20), 100000, 16);
	fill_pattern(p->n[0].mem + (20u << 20), 70000, 17);
	fill_pattern(p->n[0].mem + (21u << 20), 5000, 18);
	memset(p->n[1].mem + (28u << 20), 0xee, 5064);
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 77, 28u << 20, 5064),
			 0);
	post_read(f, 12, 16u << 20, 100000, p->n[1].key, 12u << 20);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 13,
				  20u << 20, 70000, 24u << 20,
				  OVR_SEND_SIGNALED),
			 0);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 14, 21u << 20,
				  5000, 0, OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 0, 0, 3));
	expect_wc(f, 0, 0, 12, OVR_WC_SUCCESS, OVR_WC_RDMA_READ);
	expect_wc(f, 0, 0, 13, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE);
	expect_wc(f, 0, 0, 14, OVR_WC_SUCCESS, OVR_WC_SEND);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 5000);
	assert_memory_equal(p->n[0].mem + (16u << 20),
			    p->n[1].mem + (12u << 20), 100000);
	assert_memory_equal(p->n[1].mem + (24u << 20),
			    p->n[0].mem + (20u << 20), 70000);
	assert_memory_equal(p->n[1].mem + (28u << 20),
			    p->n[0].mem + (21u << 20), 5000);
	assert_int_equal(p->n[1].mem[(28u << 20) + 5000], 0xee);
	/* the requester's ACKs took the given-up packets off */
	ovr_pair_run(p, never, NULL, p->now + 1000000ull);
	qs = qp_stats(f, 1);
	assert_int_equal(qs.inflight_pkts, 0);
	assert_int_equal(qp_state(f, 0), OVR_QPS_RTS);
	assert_int_equal(qp_state(f, 1), OVR_QPS_RTS);
	assert_int_equal(g1.naks, 0);
}

/*
 * An atomic's response carries the value saved at execution and reads no
 * memory: one lost and resent after its region was deregistered still
 * delivers that value (the atomic executed once), and nothing is
 * refused.
 */
static void test_atomic_dereg_resend(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	uint32_t key =
		small_mr(f, 2u << 20, 4096,
			 OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_ATOMIC);
	struct pdu_gate g1 = { .drop_resp_msn = 1 };
	struct ovr_eng_stats st;
	uint64_t v = 41, got, want = 2;

	memcpy(p->n[1].mem + (2u << 20), &v, 8);
	p->n[1].tx_filter = gate;
	p->n[1].tx_filter_ctx = &g1;
	post_fa(f, 1, 9u << 20, key, 2u << 20, 1);
	assert_true(ovr_pair_run(p, filtered_at_least, &want,
				 p->now + 1000000000ull));
	assert_int_equal(ovr_eng_dereg_mr(p->n[1].eng, key), 0);
	g1.drop_resp_msn = 0;
	assert_true(wait_cq(p, 0, 0, 1));
	expect_wc(f, 0, 0, 1, OVR_WC_SUCCESS, OVR_WC_FETCH_ADD);
	memcpy(&got, p->n[0].mem + (9u << 20), 8);
	assert_int_equal(got, 41);
	memcpy(&got, p->n[1].mem + (2u << 20), 8);
	assert_int_equal(got, 42);
	assert_int_equal(qp_state(f, 1), OVR_QPS_RTS);
	assert_int_equal(g1.naks, 0);
	ovr_eng_get_stats(p->n[1].eng, &st);
	assert_int_equal(st.resp_resend_revoked, 0);
	assert_int_equal(st.mr_revoked, 0);
}

/* The responder of a READ falls silent (its node died) while the
 * requester has nothing in flight: the READ fails with RETRY_EXC_ERR
 * after the retry budget, it does not wait forever. */
static void test_read_responder_silent(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct pdu_gate g = { 0 };
	struct ovr_eng_wc wc;
	uint64_t want = p->n[1].tx_pkts + 20, t0;

	p->n[1].tx_filter = gate;
	p->n[1].tx_filter_ctx = &g;
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_READ, 1,
				  8u << 20, 2u << 20, 4u << 20,
				  OVR_SEND_SIGNALED),
			 0);
	assert_true(
		ovr_pair_run(p, sent_at_least, &want, p->now + 1000000000ull));
	g.silent = true;
	t0 = p->now;
	assert_true(wait_cq(p, 0, 0, 1));
	assert_true(ovr_pair_poll(p, 0, 0, &wc));
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, OVR_WC_RETRY_EXC_ERR);
	/* (retry_cnt + 1) local ACK timeouts of 67 ms, then a probe's RTO */
	assert_true(p->now - t0 >= 8 * 67108864ull);
	assert_true(p->now - t0 < 2000000000ull);
	assert_int_equal(qp_state(f, 0), OVR_QPS_ERR);
}

/*
 * A WRITE's last segment arrives ahead of a hole and its tail is held
 * back (last byte last); the region is deregistered before the hole
 * fills. The tail must not be written (the service unmapped the region),
 * the WRITE fails with REM_ACCESS_ERR, the one before it succeeds.
 */
static void test_write_tail_dereg(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	uint32_t key =
		small_mr(f, 6u << 20, 65536,
			 OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE);
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, 0), 5 * 4096,
				   p->n[0].key };
	struct ovr_eng_send_wr wr = {
		.wr_id = 2,
		.opcode = OVR_WR_RDMA_WRITE,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = key,
		.remote_addr = ovr_pair_va(p, 1, 6u << 20),
	};
	struct pdu_gate g = { .hold_retx = true, .drop_first_write = 1 };
	struct ovr_eng_stats st;
	uint8_t zero[16] = { 0 };

	fill_pattern(p->n[0].mem, 5 * 4096, 3);
	memset(p->n[1].mem + (6u << 20), 0, 65536);
	p->n[0].tx_filter = gate;
	p->n[0].tx_filter_ctx = &g;
	/* WR 1 (a small WRITE elsewhere) goes first and is lost */
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 1, 0, 100,
				  1u << 20, OVR_SEND_SIGNALED),
			 0);
	assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[0], &wr, 0), 0);
	ovr_pair_run(p, never, NULL, p->now + 200000);
	assert_int_equal(g.drop_first_write, 0);
	/* WR 2 arrived whole but its tail waits for WR 1 */
	assert_memory_equal(p->n[1].mem + (6u << 20), p->n[0].mem,
			    5 * 4096 - 16);
	assert_memory_equal(p->n[1].mem + (6u << 20) + 5 * 4096 - 16, zero, 16);
	assert_int_equal(ovr_eng_dereg_mr(p->n[1].eng, key), 0);
	g.hold_retx = false;
	assert_true(wait_cq(p, 0, 0, 2));
	expect_wc(f, 0, 0, 1, OVR_WC_SUCCESS, OVR_WC_RDMA_WRITE);
	expect_wc(f, 0, 0, 2, OVR_WC_REM_ACCESS_ERR, 0);
	assert_memory_equal(p->n[1].mem + (6u << 20) + 5 * 4096 - 16, zero, 16);
	assert_memory_equal(p->n[1].mem + (1u << 20), p->n[0].mem, 100);
	assert_int_equal(qp_state(f, 1), OVR_QPS_ERR);
	ovr_eng_get_stats(p->n[1].eng, &st);
	assert_int_equal(st.mr_revoked, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_send_sizes, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_send_sizes, setup_lossy,
						teardown),
		cmocka_unit_test_setup_teardown(test_write_read, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_write_read, setup_lossy,
						teardown),
		cmocka_unit_test_setup_teardown(test_write_imm_zero,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_write, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomic_write, setup_lossy,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomics, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomics, setup_lossy,
						teardown),
		cmocka_unit_test_setup_teardown(test_write_last_byte_last,
						setup_lossy, teardown),
		cmocka_unit_test_setup_teardown(test_bad_rkey, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_rkey, setup_lossy,
						teardown),
		cmocka_unit_test_setup_teardown(test_out_of_bounds, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_missing_right, setup_lossy,
						teardown),
		cmocka_unit_test_setup_teardown(test_misaligned_atomic,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_bad_lkey, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_fail_at_post_idle,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_send_too_long, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_spurious_rto, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_real_rto_recovers,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_retry_exhausted,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_wait_and_release,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_wait_and_release,
						setup_lossy, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_retry_exceeded,
						setup_rnr0, teardown),
		cmocka_unit_test_setup_teardown(test_flush_on_modify_error,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_state_machine, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_post_errors, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_inline_and_sgl,
						setup_lossy, teardown),
		cmocka_unit_test_setup_teardown(test_unsignaled, setup_lossy,
						teardown),
		cmocka_unit_test_setup_teardown(test_sqd, setup_lossy,
						teardown),
		cmocka_unit_test_setup_teardown(test_error_order, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_error_order, setup_lossy,
						teardown),
		cmocka_unit_test_setup_teardown(test_read_dereg, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_read_dereg_nak_lost,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_read_dereg_spurious_resend,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_read_dereg_lost,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_read_dereg_lost_acked,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_read_dereg_hole,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_read_dereg_then_traffic,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_dereg_resend,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_read_responder_silent,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_write_tail_dereg,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_rtr_responder,
						setup_rtr_responder, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
