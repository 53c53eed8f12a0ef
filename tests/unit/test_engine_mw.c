// SPDX-License-Identifier: MIT
/*
 * Memory windows through the transport engine (docs/PROVIDER.md, "Memory
 * windows"): two engines over engpair's links, node 1 owning a region
 * with MW_BIND and no remote rights of its own, node 0 reaching it only
 * through windows. Bytes through a window land exactly in its range;
 * out of the window, without its right, through an invalidated,
 * re-bound, deallocated or forged key, or through a QP a type-2 window
 * was not bound to, the request fails as hardware fails it
 * (REM_ACCESS_ERR); binds that the region or the range do not allow
 * complete MW_BIND_ERR; a region with a window bound cannot be
 * deregistered (EBUSY).
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

#define ROFF 65536u /* node 1's region: arena [ROFF, ROFF + RLEN) */
#define RLEN 65536u
#define WOFF 4096u /* the window: region offset [WOFF, WOFF + WLEN) */
#define WLEN 8192u
#define REMOTE_RW (OVR_ACCESS_REMOTE_WRITE | OVR_ACCESS_REMOTE_READ)

struct fix {
	struct ovr_pair *p;
	uint32_t qpn[2];
	uint32_t qpn2[2]; /* a second connection (type 2B), cq 2 and 3 */
	uint32_t mr; /* node 1's region: LOCAL_WRITE | MW_BIND */
	uint32_t plain; /* node 1's region without MW_BIND */
	uint32_t mw1, mw2; /* node 1's windows, type 1 and 2 (as allocated) */
};

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct ovr_pair_cfg cfg;
	struct ovr_pair_qp_params qp;
	struct ovr_eng *e;

	assert_non_null(f);
	ovr_pair_cfg_default(&cfg);
	cfg.mem_bytes = 1u << 20;
	ovr_pair_qp_params_default(&qp);
	f->p = ovr_pair_create(&cfg);
	assert_non_null(f->p);
	assert_int_equal(ovr_pair_connect(f->p, &qp, 0, f->qpn), 0);
	assert_int_equal(ovr_pair_connect(f->p, &qp, 2, f->qpn2), 0);
	e = f->p->n[1].eng;
	assert_int_equal(ovr_eng_reg_mr(e, f->p->n[1].pd,
					ovr_pair_va(f->p, 1, ROFF), RLEN,
					OVR_ACCESS_LOCAL_WRITE |
						OVR_ACCESS_MW_BIND,
					f->p->n[1].mem + ROFF, &f->mr),
			 0);
	assert_int_equal(ovr_eng_reg_mr(e, f->p->n[1].pd,
					ovr_pair_va(f->p, 1, ROFF), RLEN,
					OVR_ACCESS_LOCAL_WRITE,
					f->p->n[1].mem + ROFF, &f->plain),
			 0);
	assert_int_equal(ovr_eng_alloc_mw(e, f->p->n[1].pd, 3, &f->mw1),
			 -EINVAL);
	assert_int_equal(
		ovr_eng_alloc_mw(e, f->p->n[1].pd, OVR_MW_TYPE_1, &f->mw1), 0);
	assert_int_equal(
		ovr_eng_alloc_mw(e, f->p->n[1].pd, OVR_MW_TYPE_2, &f->mw2), 0);
	assert_int_not_equal(f->mw1, 0);
	assert_int_not_equal(f->mw1 >> 8, f->mw2 >> 8);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	ovr_pair_destroy(f->p);
	free(f);
	return 0;
}

/* The next completion of node @n's @cq (waiting for it). */
static struct ovr_eng_wc next_wc(struct fix *f, int n, uint32_t cq)
{
	struct ovr_eng_wc wc;

	assert_true(wait_cq(f->p, n, cq, 1));
	assert_true(ovr_pair_poll(f->p, n, cq, &wc));
	return wc;
}

/* Bind window @mw (its current key) on node 1's QP @qpn: the status of
 * its completion; the window's new key in *@nk. */
static uint32_t bind_on(struct fix *f, uint32_t qpn, uint32_t cq, uint32_t mw,
			uint32_t mr, uint64_t off, uint64_t len,
			uint32_t access, uint32_t *nk)
{
	uint32_t k = (mw & ~0xffu) | ((mw + 1) & 0xffu); /* ibv_inc_rkey */
	struct ovr_eng_send_wr wr = {
		.wr_id = 0xb1,
		.opcode = OVR_WR_BIND_MW,
		.send_flags = OVR_SEND_SIGNALED,
	};
	struct ovr_eng_wc wc;

	wr.bind_mw.mw_rkey = mw;
	wr.bind_mw.rkey = k;
	wr.bind_mw.mr_lkey = mr;
	wr.bind_mw.access = access;
	wr.bind_mw.addr = ovr_pair_va(f->p, 1, ROFF + off);
	wr.bind_mw.length = len;
	assert_int_equal(ovr_eng_post_send(f->p->n[1].eng, qpn, &wr, f->p->now),
			 0);
	wc = next_wc(f, 1, cq);
	assert_int_equal(wc.wr_id, 0xb1);
	if (wc.status == OVR_WC_SUCCESS)
		assert_int_equal(wc.opcode, OVR_WC_BIND_MW);
	if (nk)
		*nk = k;
	return wc.status;
}

static uint32_t bind(struct fix *f, uint32_t mw, uint64_t off, uint64_t len,
		     uint32_t access, uint32_t *nk)
{
	return bind_on(f, f->qpn[1], 0, mw, f->mr, off, len, access, nk);
}

/* @opcode from node 0 (QP @qpn) to node 1 through @rkey at region
 * offset @off, @len bytes from/to node 0's arena at 0: the status. */
static uint32_t remote_on(struct fix *f, uint32_t qpn, uint32_t cq,
			  uint32_t opcode, uint32_t rkey, uint64_t off,
			  uint32_t len)
{
	struct ovr_eng_sge sge = { ovr_pair_va(f->p, 0, 0), len,
				   f->p->n[0].key };
	struct ovr_eng_send_wr wr = {
		.wr_id = 0xa0 + opcode,
		.opcode = opcode,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = rkey,
		.remote_addr = ovr_pair_va(f->p, 1, ROFF + off),
		.compare_add = 5,
	};

	assert_int_equal(ovr_eng_post_send(f->p->n[0].eng, qpn, &wr, f->p->now),
			 0);
	return next_wc(f, 0, cq).status;
}

static uint32_t remote(struct fix *f, uint32_t opcode, uint32_t rkey,
		       uint64_t off, uint32_t len)
{
	return remote_on(f, f->qpn[0], 0, opcode, rkey, off, len);
}

/* 1. A type-2 window: WRITE and READ byte-exact inside it, nothing
 * outside touched; the region itself has no remote right. */
static void test_type2_data(void **state)
{
	struct fix *f = *state;
	uint8_t *n0 = f->p->n[0].mem, *n1 = f->p->n[1].mem + ROFF;
	uint8_t want[WLEN];
	uint32_t k;

	memset(n1, 0x5a, RLEN);
	assert_int_equal(bind(f, f->mw2, WOFF, WLEN, REMOTE_RW, &k),
			 OVR_WC_SUCCESS);
	assert_int_not_equal(k, f->mw2);
	/* the whole window, first to last byte */
	fill_pattern(n0, WLEN, 1);
	memcpy(want, n0, WLEN);
	assert_int_equal(remote(f, OVR_WR_RDMA_WRITE, k, WOFF, WLEN),
			 OVR_WC_SUCCESS);
	assert_memory_equal(n1 + WOFF, want, WLEN);
	for (uint32_t i = 0; i < WOFF; i++)
		assert_int_equal(n1[i], 0x5a);
	for (uint32_t i = WOFF + WLEN; i < RLEN; i++)
		assert_int_equal(n1[i], 0x5a);
	/* READ back a middle piece */
	memset(n0, 0, WLEN);
	assert_int_equal(remote(f, OVR_WR_RDMA_READ, k, WOFF + 100, 3000),
			 OVR_WC_SUCCESS);
	assert_memory_equal(n0, want + 100, 3000);
	/* the region's own key has no remote right */
	assert_int_equal(remote(f, OVR_WR_RDMA_WRITE, f->mr, WOFF, 8),
			 OVR_WC_REM_ACCESS_ERR);
}

/* 2. One byte past the window's end: REM_ACCESS_ERR, nothing written. */
static void test_type2_out_of_window(void **state)
{
	struct fix *f = *state;
	uint8_t *n1 = f->p->n[1].mem + ROFF;
	uint32_t k;

	memset(n1, 0x33, RLEN);
	assert_int_equal(bind(f, f->mw2, WOFF, WLEN, REMOTE_RW, &k),
			 OVR_WC_SUCCESS);
	assert_int_equal(remote(f, OVR_WR_RDMA_WRITE, k, WOFF + WLEN - 8, 9),
			 OVR_WC_REM_ACCESS_ERR);
	for (uint32_t i = 0; i < RLEN; i++)
		assert_int_equal(n1[i], 0x33);
}

/* 3. A right the window lacks (atomics on a read/write window). */
static void test_type2_wrong_access(void **state)
{
	struct fix *f = *state;
	uint32_t k;

	assert_int_equal(bind(f, f->mw2, WOFF, WLEN, OVR_ACCESS_REMOTE_READ,
			      &k),
			 OVR_WC_SUCCESS);
	assert_int_equal(remote(f, OVR_WR_RDMA_READ, k, WOFF, 64),
			 OVR_WC_SUCCESS);
	assert_int_equal(remote(f, OVR_WR_ATOMIC_FETCH_AND_ADD, k, WOFF, 8),
			 OVR_WC_REM_ACCESS_ERR);
}

/* 4. Atomics through a window with the right: the region's bytes. */
static void test_type2_atomic(void **state)
{
	struct fix *f = *state;
	uint8_t *n1 = f->p->n[1].mem + ROFF;
	uint64_t v = 40, orig;
	uint32_t k;

	memcpy(n1 + WOFF + 16, &v, 8);
	assert_int_equal(bind(f, f->mw2, WOFF, WLEN, OVR_ACCESS_REMOTE_ATOMIC,
			      &k),
			 OVR_WC_SUCCESS);
	assert_int_equal(remote(f, OVR_WR_ATOMIC_FETCH_AND_ADD, k, WOFF + 16,
				8),
			 OVR_WC_SUCCESS);
	memcpy(&orig, f->p->n[0].mem, 8);
	memcpy(&v, n1 + WOFF + 16, 8);
	assert_int_equal(orig, 40);
	assert_int_equal(v, 45);
}

/* 5. LOCAL_INV: the key stops working; the window can be bound again
 * (a new key), and the old one stays dead. */
static void test_type2_local_inv(void **state)
{
	struct fix *f = *state;
	struct ovr_eng_send_wr wr = { .wr_id = 0x11,
				      .opcode = OVR_WR_LOCAL_INV,
				      .send_flags = OVR_SEND_SIGNALED };
	struct ovr_eng_wc wc;
	uint32_t k, k2;

	assert_int_equal(bind(f, f->mw2, WOFF, WLEN, REMOTE_RW, &k),
			 OVR_WC_SUCCESS);
	/* bound: a second bind is refused (free state only) - on a fresh
	 * fixture below; here invalidate first */
	wr.invalidate_rkey = k;
	assert_int_equal(ovr_eng_post_send(f->p->n[1].eng, f->qpn[1], &wr,
					   f->p->now),
			 0);
	wc = next_wc(f, 1, 0);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.opcode, OVR_WC_LOCAL_INV);
	assert_int_equal(bind(f, k, WOFF, WLEN, REMOTE_RW, &k2),
			 OVR_WC_SUCCESS);
	assert_int_equal(remote(f, OVR_WR_RDMA_WRITE, k2, WOFF, 64),
			 OVR_WC_SUCCESS);
	assert_int_equal(remote(f, OVR_WR_RDMA_WRITE, k, WOFF, 64),
			 OVR_WC_REM_ACCESS_ERR);
}

/* 6. SEND_WITH_INV from the peer: the receive says which key went,
 * then the key fails. */
static void test_type2_remote_inv(void **state)
{
	struct fix *f = *state;
	struct ovr_eng_sge sge = { ovr_pair_va(f->p, 0, 0), 32,
				   f->p->n[0].key };
	struct ovr_eng_send_wr wr = { .wr_id = 0x22,
				      .opcode = OVR_WR_SEND_WITH_INV,
				      .send_flags = OVR_SEND_SIGNALED,
				      .sg_list = &sge,
				      .num_sge = 1 };
	struct ovr_eng_wc wc;
	uint32_t k;

	assert_int_equal(bind(f, f->mw2, WOFF, WLEN, REMOTE_RW, &k),
			 OVR_WC_SUCCESS);
	assert_int_equal(post_recv_one(f->p, 1, f->qpn[1], 0x33, 0, 64), 0);
	wr.invalidate_rkey = k;
	assert_int_equal(ovr_eng_post_send(f->p->n[0].eng, f->qpn[0], &wr,
					   f->p->now),
			 0);
	assert_int_equal(next_wc(f, 0, 0).status, OVR_WC_SUCCESS);
	wc = next_wc(f, 1, 1);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_true(wc.wc_flags & OVR_WC_WITH_INV);
	assert_int_equal(wc.imm_data, k);
	assert_int_equal(remote(f, OVR_WR_RDMA_WRITE, k, WOFF, 64),
			 OVR_WC_REM_ACCESS_ERR);
}

/* 7. SEND_WITH_INV of a type-1 window's key: the responder's error -
 * the receive completes REM_INV_REQ_ERR, the QP goes to ERROR. */
static void test_type1_remote_inv_refused(void **state)
{
	struct fix *f = *state;
	struct ovr_eng_send_wr wr = { .wr_id = 0x23,
				      .opcode = OVR_WR_SEND_WITH_INV };
	uint32_t k;

	assert_int_equal(bind(f, f->mw1, WOFF, WLEN, REMOTE_RW, &k),
			 OVR_WC_SUCCESS);
	assert_int_equal(post_recv_one(f->p, 1, f->qpn[1], 0x34, 0, 64), 0);
	wr.invalidate_rkey = k;
	assert_int_equal(ovr_eng_post_send(f->p->n[0].eng, f->qpn[0], &wr,
					   f->p->now),
			 0);
	assert_int_equal(next_wc(f, 1, 1).status, OVR_WC_REM_INV_REQ_ERR);
	/* the window is still bound, and type 1 serves any QP of its PD:
	 * the second pair reaches it */
	assert_int_equal(remote_on(f, f->qpn2[0], 2, OVR_WR_RDMA_WRITE, k, WOFF,
				   64),
			 OVR_WC_SUCCESS);
}

/* 8. Type 1: bound, re-bound (the old key dies, the new range
 * counts), unbound with length 0; LOCAL_INV of it is refused. */
static void test_type1(void **state)
{
	struct fix *f = *state;
	uint32_t k, k2;

	assert_int_equal(bind(f, f->mw1, WOFF, WLEN, REMOTE_RW, &k),
			 OVR_WC_SUCCESS);
	assert_int_equal(remote(f, OVR_WR_RDMA_WRITE, k, WOFF, 64),
			 OVR_WC_SUCCESS);
	/* type 1 serves any QP of its PD */
	assert_int_equal(remote_on(f, f->qpn2[0], 2, OVR_WR_RDMA_WRITE, k, WOFF,
				   64),
			 OVR_WC_SUCCESS);
	/* re-bound elsewhere: the old key is dead, the new range holds */
	assert_int_equal(bind(f, k, 0, 4096, REMOTE_RW, &k2), OVR_WC_SUCCESS);
	assert_int_equal(remote(f, OVR_WR_RDMA_WRITE, k2, 0, 4096),
			 OVR_WC_SUCCESS);
	assert_int_equal(remote(f, OVR_WR_RDMA_WRITE, k2, WOFF, 64),
			 OVR_WC_REM_ACCESS_ERR);
	/* (the first pair failed: the second one tries the old key) */
	assert_int_equal(remote_on(f, f->qpn2[0], 2, OVR_WR_RDMA_WRITE, k, WOFF,
				   64),
			 OVR_WC_REM_ACCESS_ERR);
}

/* 9. Type 1 unbound by a zero-length bind; LOCAL_INV of it refused
 * (LOC_QP_OP_ERR): type-1 windows are invalidated by binding. */
static void test_type1_unbind(void **state)
{
	struct fix *f = *state;
	struct ovr_eng_send_wr wr = { .wr_id = 0x13,
				      .opcode = OVR_WR_LOCAL_INV,
				      .send_flags = OVR_SEND_SIGNALED };
	uint32_t k, k2, k3;

	assert_int_equal(bind(f, f->mw1, WOFF, WLEN, REMOTE_RW, &k),
			 OVR_WC_SUCCESS);
	assert_int_equal(bind_on(f, f->qpn[1], 0, k, 0, 0, 0, 0, &k2),
			 OVR_WC_SUCCESS);
	/* bound again through the second pair, then a LOCAL_INV of it */
	assert_int_equal(bind_on(f, f->qpn2[1], 2, k2, f->mr, WOFF, WLEN,
				 REMOTE_RW, &k3),
			 OVR_WC_SUCCESS);
	wr.invalidate_rkey = k3;
	assert_int_equal(ovr_eng_post_send(f->p->n[1].eng, f->qpn2[1], &wr,
					   f->p->now),
			 0);
	assert_int_equal(next_wc(f, 1, 2).status, OVR_WC_LOC_QP_OP_ERR);
	/* the key of before the zero-length bind is dead */
	assert_int_equal(remote(f, OVR_WR_RDMA_WRITE, k, WOFF, 64),
			 OVR_WC_REM_ACCESS_ERR);
}

/* 10. Type 2B: only the QP that bound the window is served. */
static void test_type2_other_qp(void **state)
{
	struct fix *f = *state;
	uint32_t k;

	assert_int_equal(bind(f, f->mw2, WOFF, WLEN, REMOTE_RW, &k),
			 OVR_WC_SUCCESS);
	assert_int_equal(remote_on(f, f->qpn2[0], 2, OVR_WR_RDMA_WRITE, k, WOFF,
				   64),
			 OVR_WC_REM_ACCESS_ERR);
	assert_int_equal(remote(f, OVR_WR_RDMA_WRITE, k, WOFF, 64),
			 OVR_WC_SUCCESS);
}

/* 11. Binds the region or the window refuse: MW_BIND_ERR, QP to ERROR
 * (each on its own QP pair: the first fails its pair). */
static void test_bind_errors(void **state)
{
	struct fix *f = *state;
	uint32_t k;

	/* the region lacks MW_BIND (C10-73) */
	assert_int_equal(bind_on(f, f->qpn[1], 0, f->mw2, f->plain, WOFF, WLEN,
				 REMOTE_RW, &k),
			 OVR_WC_MW_BIND_ERR);
	/* beyond the region (C10-75) */
	assert_int_equal(bind_on(f, f->qpn2[1], 2, f->mw2, f->mr, RLEN - 8, 16,
				 REMOTE_RW, &k),
			 OVR_WC_MW_BIND_ERR);
}

static void test_bind_twice(void **state)
{
	struct fix *f = *state;
	uint32_t k, k2;

	assert_int_equal(bind(f, f->mw2, WOFF, WLEN, REMOTE_RW, &k),
			 OVR_WC_SUCCESS);
	/* a bound type-2 window: o10-37.2.30 */
	assert_int_equal(bind(f, k, WOFF, WLEN, REMOTE_RW, &k2),
			 OVR_WC_MW_BIND_ERR);
}

static void test_bind_zero_length_type2(void **state)
{
	struct fix *f = *state;
	uint32_t k;

	assert_int_equal(bind(f, f->mw2, WOFF, 0, REMOTE_RW, &k),
			 OVR_WC_MW_BIND_ERR);
}

/* 12. A region with a window bound: EBUSY; once the window is gone,
 * deregistered; the key is dead after deallocation. */
static void test_dereg_busy(void **state)
{
	struct fix *f = *state;
	struct ovr_eng *e = f->p->n[1].eng;
	uint32_t k;

	assert_int_equal(bind(f, f->mw2, WOFF, WLEN, REMOTE_RW, &k),
			 OVR_WC_SUCCESS);
	assert_int_equal(ovr_eng_dereg_mr(e, f->mr), -EBUSY);
	assert_int_equal(ovr_eng_dealloc_mw(e, f->mw2), 0);
	assert_int_equal(ovr_eng_dealloc_mw(e, f->mw2), -EINVAL);
	assert_int_equal(remote(f, OVR_WR_RDMA_WRITE, k, WOFF, 64),
			 OVR_WC_REM_ACCESS_ERR);
	assert_int_equal(ovr_eng_dereg_mr(e, f->mr), 0);
}

/* 13. A forged or stale key: REM_ACCESS_ERR, never a crash. */
static void test_forged_keys(void **state)
{
	struct fix *f = *state;
	uint32_t k;

	assert_int_equal(bind(f, f->mw2, WOFF, WLEN, REMOTE_RW, &k),
			 OVR_WC_SUCCESS);
	/* the other 255 consumer keys of the window: one tried */
	assert_int_equal(remote(f, OVR_WR_RDMA_WRITE, k ^ 0x80, WOFF, 8),
			 OVR_WC_REM_ACCESS_ERR);
	assert_int_equal(remote_on(f, f->qpn2[0], 2, OVR_WR_RDMA_READ,
				   k ^ 0x01000000u, WOFF, 8),
			 OVR_WC_REM_ACCESS_ERR);
}

/* 14. A bind completes in order behind the WRs before it. */
static void test_bind_in_order(void **state)
{
	struct fix *f = *state;
	struct ovr_eng_send_wr wr = {
		.wr_id = 0xb2,
		.opcode = OVR_WR_BIND_MW,
		.send_flags = OVR_SEND_SIGNALED,
	};
	struct ovr_eng_wc wc;

	for (int i = 0; i < 4; i++)
		assert_int_equal(post_one(f->p, 1, f->qpn[1], OVR_WR_RDMA_WRITE,
					  (uint64_t)i,
					  ROFF + 4096u * (uint32_t)i, 4096,
					  (size_t)i * 4096, OVR_SEND_SIGNALED),
				 0);
	wr.bind_mw.mw_rkey = f->mw2;
	wr.bind_mw.rkey = f->mw2 + 1;
	wr.bind_mw.mr_lkey = f->mr;
	wr.bind_mw.access = REMOTE_RW;
	wr.bind_mw.addr = ovr_pair_va(f->p, 1, ROFF);
	wr.bind_mw.length = 4096;
	assert_int_equal(ovr_eng_post_send(f->p->n[1].eng, f->qpn[1], &wr,
					   f->p->now),
			 0);
	assert_true(wait_cq(f->p, 1, 0, 5));
	for (int i = 0; i < 4; i++) {
		assert_true(ovr_pair_poll(f->p, 1, 0, &wc));
		assert_int_equal(wc.wr_id, (uint64_t)i);
		assert_int_equal(wc.status, OVR_WC_SUCCESS);
	}
	assert_true(ovr_pair_poll(f->p, 1, 0, &wc));
	assert_int_equal(wc.wr_id, 0xb2);
	assert_int_equal(wc.opcode, OVR_WC_BIND_MW);
	/* SGEs on a bind: a post error */
	wr.num_sge = 1;
	wr.sg_list = &(struct ovr_eng_sge){ 0, 0, 0 };
	assert_int_equal(ovr_eng_post_send(f->p->n[1].eng, f->qpn[1], &wr,
					   f->p->now),
			 EINVAL);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_type2_data),
		T(test_type2_out_of_window),
		T(test_type2_wrong_access),
		T(test_type2_atomic),
		T(test_type2_local_inv),
		T(test_type2_remote_inv),
		T(test_type1_remote_inv_refused),
		T(test_type1),
		T(test_type1_unbind),
		T(test_type2_other_qp),
		T(test_bind_errors),
		T(test_bind_twice),
		T(test_bind_zero_length_type2),
		T(test_dereg_busy),
		T(test_forged_keys),
		T(test_bind_in_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
