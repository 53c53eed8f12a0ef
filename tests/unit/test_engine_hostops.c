// SPDX-License-Identifier: MIT
/*
 * Regions of host memory behind ops.dev_copy (ovr_eng_reg_mr_ext with
 * OVR_ENG_MR_HOST): what ovrdmad registers for an application's private
 * memory, reached with process_vm_readv / process_vm_writev
 * (docs/SERVICE.md section 4). Two engines over engpair, each with such
 * a region over a buffer the engine never addresses itself, and a fake
 * dev_copy that completes synchronously and answers -EFAULT inside a
 * "hole" (memory unmapped under the registration). Checked: WRITE, READ,
 * SEND and atomics byte-exact (atomics by two copies, also over a lossy
 * link with retransmitted requests); a hole is a protection error -
 * REM_ACCESS_ERR for a WRITE, READ or atomic whose target is in it,
 * LOC_PROT_ERR for a receive in it (the sender: REM_OP_ERR, as for a
 * receive whose key failed) and for a requester whose source, READ
 * response or atomic result lies in it - and only that QP fails:
 * another QP on the same engines completes byte-exact afterwards.
 *
 * The same again with batches, as ovrdmad's process route runs them: a
 * copy whose host side is a packet buffer is queued (dev_copy answers
 * 1) and runs at the batch's close, in order; the ones that hit the
 * hole are reported by number (ops.dev_batch_faults). And a batch in
 * which one QP's copy faults while other QPs' copies succeed: exactly
 * that QP's WR fails with the protection error, the others are
 * byte-exact.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eng_util.h"

#define PROC_LEN (1u << 20)
#define PROC_VA 0x500000000000ull /* + node << 32: the "application's" */

/* One node's "application memory": a buffer, and a hole in it. */
struct proc {
	uint8_t *mem;
	uint64_t hole_lo, hole_hi; /* offsets; lo == hi: none */
	bool gone; /* the "application" exited: every copy -ESRCH */
	uint64_t calls, faults;
	uint64_t src, src_fenced; /* copies of send sources, ...FENCED */
};

static struct proc procs[2];

static int fake_copy(void *ctx, void *dev, uint64_t off, void *host,
		     uint32_t len, bool to_dev, uint32_t msg_len,
		     unsigned int flags)
{
	struct proc *pr = dev;

	(void)ctx;
	(void)msg_len;
	assert_true(pr == &procs[0] || pr == &procs[1]);
	assert_true(off <= PROC_LEN && len <= PROC_LEN - off);
	pr->calls++;
	/* FIRST and FENCED qualify a send source's copy only */
	assert_true((flags & OVR_ENG_COPY_SRC) ||
		    !(flags & (OVR_ENG_COPY_FIRST | OVR_ENG_COPY_FENCED)));
	assert_true(!(flags & OVR_ENG_COPY_SRC) || !to_dev);
	if (flags & OVR_ENG_COPY_SRC) {
		pr->src++;
		pr->src_fenced += !!(flags & OVR_ENG_COPY_FENCED);
	}
	if (pr->gone)
		return -ESRCH;
	if (off < pr->hole_hi && off + len > pr->hole_lo) {
		pr->faults++;
		return -EFAULT;
	}
	if (to_dev)
		memcpy(pr->mem + off, host, len);
	else
		memcpy(host, pr->mem + off, len);
	return 0;
}

/* Batched: copies queued at a node since its last close, run at the
 * close (as svc_dp.c's pq_run). */
#define QMAX OVR_ENG_BATCH_COPIES

struct qcopy {
	struct proc *pr;
	uint64_t off;
	void *host;
	uint32_t len;
	uint32_t ord;
	bool to_dev;
};

struct bnode {
	struct qcopy q[QMAX];
	uint32_t nq;
	struct ovr_eng_copy_fault fault[QMAX];
	uint32_t nfault;
	uint32_t nord; /* copies queued since the engine's last close */
	uint64_t queued, closes;
	uint64_t mixed; /* closes with a fault and a good copy */
};

static struct bnode bnodes[2];

static struct bnode *bnode_of(void *ctx)
{
	struct ovr_pair_node *n = ctx;

	return n == &n->pair->n[0] ? &bnodes[0] : &bnodes[1];
}

static int fake_close(void *ctx, unsigned int slot);

static int fake_copy_batched(void *ctx, void *dev, uint64_t off, void *host,
			     uint32_t len, bool to_dev, uint32_t msg_len,
			     unsigned int flags)
{
	struct bnode *b = bnode_of(ctx);

	/* as svc_dp.c: only what may fail late, from a packet buffer; the
	 * rest after what is queued */
	if (!(flags & OVR_ENG_COPY_LATE) || !ovr_pair_is_buf(ctx, host, len)) {
		fake_close(ctx, 0);
		return fake_copy(ctx, dev, off, host, len, to_dev, msg_len, 0);
	}
	assert_true(b->nq < QMAX);
	b->q[b->nq++] = (struct qcopy){ .pr = dev,
					.off = off,
					.host = host,
					.len = len,
					.ord = b->nord++,
					.to_dev = to_dev };
	b->queued++;
	return 1;
}

static int fake_close(void *ctx, unsigned int slot)
{
	struct bnode *b = bnode_of(ctx);
	uint32_t good = 0;

	(void)slot;
	b->closes++;
	for (uint32_t i = 0; i < b->nq; i++) {
		struct qcopy *q = &b->q[i];
		int rc = fake_copy(ctx, q->pr, q->off, q->host, q->len,
				   q->to_dev, q->len, 0);

		if (rc)
			b->fault[b->nfault++] =
				(struct ovr_eng_copy_fault){ .ord = q->ord,
							     .err = rc };
		else
			good++;
	}
	if (b->nfault && good)
		b->mixed++;
	b->nq = 0;
	return 0;
}

static int fake_poll(void *ctx, unsigned int slot, bool wait)
{
	(void)ctx;
	(void)slot;
	(void)wait;
	return 0;
}

static int fake_fence(void *ctx)
{
	(void)ctx;
	return 0;
}

static uint32_t fake_faults(void *ctx, struct ovr_eng_copy_fault *f,
			    uint32_t max)
{
	struct bnode *b = bnode_of(ctx);
	uint32_t n = b->nfault;

	assert_true(n <= max);
	memcpy(f, b->fault, n * sizeof(*f));
	b->nfault = 0;
	return n;
}

/* The engine closes its batch: what is queued runs (fake_close), and
 * the numbering starts again. */
static int fake_batch_close(void *ctx, unsigned int slot)
{
	int rc = fake_close(ctx, slot);

	bnode_of(ctx)->nord = 0;
	return rc;
}

struct fix {
	struct ovr_pair *p;
	uint32_t key[2]; /* host-ops region over procs[i] */
	uint32_t cq; /* the next free cq_base */
};

static uint64_t pva(int n, uint64_t off)
{
	return PROC_VA + ((uint64_t)n << 32) + off;
}

static struct fix *setup_with(double loss, bool batched)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct ovr_pair_cfg cfg;

	assert_non_null(f);
	ovr_pair_cfg_default(&cfg);
	cfg.mem_bytes = 1u << 20;
	cfg.dev_copy = fake_copy;
	memset(bnodes, 0, sizeof(bnodes));
	if (batched) {
		cfg.dev_copy = fake_copy_batched;
		cfg.dev_fence = fake_fence;
		cfg.dev_batch_close = fake_batch_close;
		cfg.dev_batch_poll = fake_poll;
		cfg.dev_batch_faults = fake_faults;
		/* what a round sends arrives in one round, as a burst of
		 * frames reaches ovrdmad: its copies share a batch */
		cfg.link[0].rate_bps = cfg.link[1].rate_bps = 0;
		/* and a window sent at once, unpaced */
		cfg.eng.cc = &ovr_cc_fixed;
		cfg.eng.cc_init_cwnd = 256u << 10;
	}
	for (int i = 0; i < 2 && loss > 0; i++) {
		cfg.link[i].loss = loss;
		cfg.link[i].reorder = 0.05;
		cfg.link[i].reorder_ns = 20000;
		cfg.link[i].dup = 0.02;
	}
	f->p = ovr_pair_create(&cfg);
	assert_non_null(f->p);
	for (int i = 0; i < 2; i++) {
		memset(&procs[i], 0, sizeof(procs[i]));
		procs[i].mem = calloc(1, PROC_LEN);
		assert_non_null(procs[i].mem);
		assert_int_equal(
			ovr_eng_reg_mr_ext(f->p->n[i].eng, f->p->n[i].pd,
					   pva(i, 0), PROC_LEN, OVR_ACCESS_ALL,
					   &procs[i], 0, OVR_ENG_MR_HOST,
					   &f->key[i]),
			0);
	}
	return f;
}

static int setup_clean(void **state)
{
	*state = setup_with(0, false);
	return 0;
}

static int setup_lossy(void **state)
{
	*state = setup_with(0.05, false);
	return 0;
}

static int setup_batched(void **state)
{
	*state = setup_with(0, true);
	return 0;
}

static int setup_batched_lossy(void **state)
{
	*state = setup_with(0.05, true);
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	ovr_pair_destroy(f->p);
	for (int i = 0; i < 2; i++)
		free(procs[i].mem);
	free(f);
	return 0;
}

/* A new QP pair on cq_base f->cq (send) / f->cq + 1 (recv). */
static void qp_connect(struct fix *f, uint32_t qpn[2], uint32_t *cq)
{
	struct ovr_pair_qp_params qp;

	ovr_pair_qp_params_default(&qp);
	*cq = f->cq;
	f->cq += 2;
	assert_int_equal(ovr_pair_connect(f->p, &qp, *cq, qpn), 0);
}

/* Post on node @n: one SGE at @loff of its host-ops region, the peer's
 * region at @roff. */
static void post(struct fix *f, int n, uint32_t qpn, uint32_t op,
		 uint64_t wr_id, uint64_t loff, uint32_t len, uint64_t roff,
		 uint64_t cmp_add, uint64_t swap)
{
	struct ovr_eng_sge sge = {
		.addr = pva(n, loff),
		.length = len,
		.lkey = f->key[n],
	};
	struct ovr_eng_send_wr wr = {
		.wr_id = wr_id,
		.opcode = op,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = f->key[1 - n],
		.remote_addr = pva(1 - n, roff),
		.compare_add = cmp_add,
		.swap = swap,
	};

	assert_int_equal(ovr_eng_post_send(f->p->n[n].eng, qpn, &wr, f->p->now),
			 0);
}

static void post_recv(struct fix *f, int n, uint32_t qpn, uint64_t wr_id,
		      uint64_t off, uint32_t len)
{
	struct ovr_eng_sge sge = {
		.addr = pva(n, off),
		.length = len,
		.lkey = f->key[n],
	};
	struct ovr_eng_recv_wr wr = { .wr_id = wr_id,
				      .sg_list = &sge,
				      .num_sge = 1 };

	assert_int_equal(ovr_eng_post_recv(f->p->n[n].eng, qpn, &wr, f->p->now),
			 0);
}

/* The next completion of node @n's @cq: wr_id and status as expected. */
static void expect(struct fix *f, int n, uint32_t cq, uint64_t wr_id,
		   uint32_t status)
{
	struct ovr_eng_wc wc;

	assert_true(wait_cq(f->p, n, cq, 1));
	assert_true(ovr_pair_poll(f->p, n, cq, &wc));
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, status);
}

static uint64_t get64(int n, uint64_t off)
{
	uint64_t v;

	memcpy(&v, procs[n].mem + off, 8);
	return v;
}

static void put64(int n, uint64_t off, uint64_t v)
{
	memcpy(procs[n].mem + off, &v, 8);
}

/*
 * A fresh QP pair moves data both ways byte-exact between the two
 * host-ops regions: WRITE 0 -> 1, READ it back into node 0, SEND 1 -> 0.
 */
static void check_healthy(struct fix *f, uint64_t seed)
{
	uint32_t qpn[2], cq;
	const uint32_t len = 100000;

	qp_connect(f, qpn, &cq);
	fill_pattern(procs[0].mem + 0x10000, len, seed);
	post(f, 0, qpn[0], OVR_WR_RDMA_WRITE, 1, 0x10000, len, 0x40000, 0, 0);
	expect(f, 0, cq, 1, OVR_WC_SUCCESS);
	assert_memory_equal(procs[1].mem + 0x40000, procs[0].mem + 0x10000,
			    len);
	post(f, 0, qpn[0], OVR_WR_RDMA_READ, 2, 0x80000, len, 0x40000, 0, 0);
	expect(f, 0, cq, 2, OVR_WC_SUCCESS);
	assert_memory_equal(procs[0].mem + 0x80000, procs[0].mem + 0x10000,
			    len);
	fill_pattern(procs[1].mem + 0xc0000, len, seed + 1);
	post_recv(f, 0, qpn[0], 3, 0x20000, len);
	post(f, 1, qpn[1], OVR_WR_SEND, 4, 0xc0000, len, 0, 0, 0);
	expect(f, 1, cq, 4, OVR_WC_SUCCESS);
	expect(f, 0, cq + 1, 3, OVR_WC_SUCCESS);
	assert_memory_equal(procs[0].mem + 0x20000, procs[1].mem + 0xc0000,
			    len);
}

static void test_data_exact(void **state)
{
	struct fix *f = *state;
	struct ovr_eng_stats st;

	check_healthy(f, 1);
	ovr_eng_get_stats(f->p->n[0].eng, &st);
	assert_true(st.dev_copies > 0);
	assert_int_equal(st.dev_copy_err, 0);
	assert_int_equal(st.dev_copy_fault, 0);
}

/*
 * A WR posted with OVR_SEND_FENCE reads its source only after the READ
 * before it brought its bytes, and tells the copy so
 * (OVR_ENG_COPY_FENCED: the service must not serve it from anything it
 * read earlier); an unfenced WR's copies do not say it.
 */
static void test_fenced_source(void **state)
{
	struct fix *f = *state;
	const uint32_t len = 20000;
	struct ovr_eng_sge sge = { .addr = pva(0, 0x30000),
				   .length = len,
				   .lkey = f->key[0] };
	struct ovr_eng_send_wr wr = {
		.wr_id = 2,
		.opcode = OVR_WR_RDMA_WRITE,
		.send_flags = OVR_SEND_SIGNALED | OVR_SEND_FENCE,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = f->key[1],
		.remote_addr = pva(1, 0x60000),
	};
	uint32_t qpn[2], cq;

	qp_connect(f, qpn, &cq);
	fill_pattern(procs[0].mem + 0x10000, len, 7);
	post(f, 0, qpn[0], OVR_WR_RDMA_WRITE, 1, 0x10000, len, 0x40000, 0, 0);
	expect(f, 0, cq, 1, OVR_WC_SUCCESS);
	assert_true(procs[0].src > 0);
	assert_int_equal(procs[0].src_fenced, 0);
	/* READ node 1's copy back into 0x30000, and WRITE 0x30000 on,
	 * fenced, in one go: what lands at node 1 is what the READ got */
	fill_pattern(procs[1].mem + 0x40000, len, 8);
	memset(procs[0].mem + 0x30000, 0, len);
	procs[0].src = 0;
	post(f, 0, qpn[0], OVR_WR_RDMA_READ, 3, 0x30000, len, 0x40000, 0, 0);
	assert_int_equal(
		ovr_eng_post_send(f->p->n[0].eng, qpn[0], &wr, f->p->now), 0);
	expect(f, 0, cq, 3, OVR_WC_SUCCESS);
	expect(f, 0, cq, 2, OVR_WC_SUCCESS);
	assert_memory_equal(procs[1].mem + 0x60000, procs[1].mem + 0x40000,
			    len);
	assert_true(procs[0].src > 0);
	assert_int_equal(procs[0].src_fenced, procs[0].src);
}

/* Fetch-and-add and compare-and-swap on the peer's region, results into
 * the requester's: byte-exact, every original value returned. */
static void run_atomics(struct fix *f, unsigned int n_ops)
{
	struct ovr_eng_stats st;
	uint32_t qpn[2], cq;
	uint64_t sum = 0x1000;

	qp_connect(f, qpn, &cq);
	put64(1, 0x100, 0x1000);
	for (unsigned int i = 0; i < n_ops; i++) {
		uint64_t add = (uint64_t)i * 7 + 1;

		post(f, 0, qpn[0], OVR_WR_ATOMIC_FETCH_AND_ADD, i,
		     0x200 + 8 * i, 8, 0x100, add, 0);
		sum += add;
	}
	for (unsigned int i = 0; i < n_ops; i++)
		expect(f, 0, cq, i, OVR_WC_SUCCESS);
	assert_int_equal(get64(1, 0x100), sum);
	/* each result is the value before it: a running sum */
	sum = 0x1000;
	for (unsigned int i = 0; i < n_ops; i++) {
		assert_int_equal(get64(0, 0x200 + 8 * i), sum);
		sum += (uint64_t)i * 7 + 1;
	}
	/* compare-and-swap: a miss leaves it, a hit swaps */
	post(f, 0, qpn[0], OVR_WR_ATOMIC_CMP_AND_SWP, 100, 0x8000, 8, 0x100,
	     sum + 1, 0xdead);
	expect(f, 0, cq, 100, OVR_WC_SUCCESS);
	assert_int_equal(get64(1, 0x100), sum);
	assert_int_equal(get64(0, 0x8000), sum);
	post(f, 0, qpn[0], OVR_WR_ATOMIC_CMP_AND_SWP, 101, 0x8008, 8, 0x100,
	     sum, 0xbeefcafe12345678ull);
	expect(f, 0, cq, 101, OVR_WC_SUCCESS);
	assert_int_equal(get64(1, 0x100), 0xbeefcafe12345678ull);
	assert_int_equal(get64(0, 0x8008), sum);
	/* the neighbours untouched */
	assert_int_equal(get64(1, 0xf8), 0);
	assert_int_equal(get64(1, 0x108), 0);
	ovr_eng_get_stats(f->p->n[1].eng, &st);
	assert_int_equal(st.dev_atomics, n_ops + 2);
	assert_int_equal(st.dev_atomic_refused, 0);
}

static void test_atomics(void **state)
{
	run_atomics(*state, 64);
}

/* Over a lossy link: requests repeated, each executed exactly once. */
static void test_atomics_lossy(void **state)
{
	run_atomics(*state, 200);
}

/* Make [lo, lo + len) of node @n's memory a hole. */
static void hole(int n, uint64_t lo, uint64_t len)
{
	procs[n].hole_lo = lo;
	procs[n].hole_hi = lo + len;
}

static void no_holes(void)
{
	hole(0, 0, 0);
	hole(1, 0, 0);
}

static void expect_fault_stats(struct fix *f, int n)
{
	struct ovr_eng_stats st;

	ovr_eng_get_stats(f->p->n[n].eng, &st);
	assert_true(st.dev_copy_fault > 0);
	assert_int_equal(st.dev_copy_err, 0);
	assert_true(procs[n].faults > 0);
}

/* A WRITE into the peer's hole: REM_ACCESS_ERR; the responder's QP
 * reports the access error. */
static void test_write_hole(void **state)
{
	struct fix *f = *state;
	uint32_t qpn[2], cq;

	qp_connect(f, qpn, &cq);
	hole(1, 0x40000, 4096);
	post(f, 0, qpn[0], OVR_WR_RDMA_WRITE, 7, 0x10000, 20000, 0x3f000, 0, 0);
	expect(f, 0, cq, 7, OVR_WC_REM_ACCESS_ERR);
	expect_fault_stats(f, 1);
	assert_true(f->p->n[1].events[OVR_EV_QP_ACCESS_ERR] > 0);
	no_holes();
	check_healthy(f, 2);
}

/* A READ of the peer's hole: REM_ACCESS_ERR. */
static void test_read_hole(void **state)
{
	struct fix *f = *state;
	uint32_t qpn[2], cq;

	qp_connect(f, qpn, &cq);
	hole(1, 0x50000, 4096);
	post(f, 0, qpn[0], OVR_WR_RDMA_READ, 8, 0x10000, 50000, 0x48000, 0, 0);
	expect(f, 0, cq, 8, OVR_WC_REM_ACCESS_ERR);
	expect_fault_stats(f, 1);
	no_holes();
	check_healthy(f, 3);
}

/* An atomic on the peer's hole: REM_ACCESS_ERR, nothing written. */
static void test_atomic_hole(void **state)
{
	struct fix *f = *state;
	uint32_t qpn[2], cq;

	qp_connect(f, qpn, &cq);
	hole(1, 0x100, 8);
	post(f, 0, qpn[0], OVR_WR_ATOMIC_FETCH_AND_ADD, 9, 0x200, 8, 0x100, 5,
	     0);
	expect(f, 0, cq, 9, OVR_WC_REM_ACCESS_ERR);
	expect_fault_stats(f, 1);
	assert_int_equal(get64(0, 0x200), 0);
	no_holes();
	check_healthy(f, 4);
}

/* A SEND into a receive buffer in a hole: the receive completes
 * LOC_PROT_ERR, the sender REM_OP_ERR (what a receive whose key failed
 * gives). */
static void test_send_hole(void **state)
{
	struct fix *f = *state;
	uint32_t qpn[2], cq;

	qp_connect(f, qpn, &cq);
	hole(1, 0x30000, 4096);
	post_recv(f, 1, qpn[1], 10, 0x2f000, 30000);
	post(f, 0, qpn[0], OVR_WR_SEND, 11, 0x10000, 30000, 0, 0, 0);
	expect(f, 0, cq, 11, OVR_WC_REM_OP_ERR);
	expect(f, 1, cq + 1, 10, OVR_WC_LOC_PROT_ERR);
	expect_fault_stats(f, 1);
	no_holes();
	check_healthy(f, 5);
}

/*
 * The responder's application exited (its copies answer -ESRCH) while
 * the peer's WRITE, READ and SEND were on their way: each of the peer's
 * WRs completes REM_ABORT_ERR - the responder's QP ended with a
 * TERMINATE, as its destruction would - never an error that blames the
 * peer's request (REM_OP / REM_ACCESS).
 */
static void test_owner_gone(void **state)
{
	static const uint32_t ops[] = { OVR_WR_RDMA_WRITE, OVR_WR_RDMA_READ,
					OVR_WR_SEND };
	struct fix *f = *state;
	struct ovr_eng_wc wc;

	for (unsigned int i = 0; i < 3; i++) {
		uint32_t qpn[2], cq;

		qp_connect(f, qpn, &cq);
		if (ops[i] == OVR_WR_SEND)
			post_recv(f, 1, qpn[1], 20 + i, 0x30000, 30000);
		procs[1].gone = true;
		post(f, 0, qpn[0], ops[i], 30 + i, 0x10000, 30000, 0x40000, 0,
		     0);
		assert_true(wait_cq(f->p, 0, cq, 1));
		assert_true(ovr_pair_poll(f->p, 0, cq, &wc));
		assert_int_equal(wc.wr_id, 30 + i);
		assert_int_equal(wc.status, OVR_WC_REM_ABORT_ERR);
		procs[1].gone = false;
	}
	check_healthy(f, 6);
}

/* The requester's own source in a hole: LOC_PROT_ERR. */
static void test_source_hole(void **state)
{
	struct fix *f = *state;
	uint32_t qpn[2], cq;

	qp_connect(f, qpn, &cq);
	hole(0, 0x10000, 4096);
	post(f, 0, qpn[0], OVR_WR_RDMA_WRITE, 12, 0xf000, 20000, 0x40000, 0, 0);
	expect(f, 0, cq, 12, OVR_WC_LOC_PROT_ERR);
	expect_fault_stats(f, 0);
	no_holes();
	check_healthy(f, 6);
}

/* A READ response placed into a hole of the requester: LOC_PROT_ERR. */
static void test_read_dest_hole(void **state)
{
	struct fix *f = *state;
	uint32_t qpn[2], cq;

	qp_connect(f, qpn, &cq);
	hole(0, 0x90000, 4096);
	post(f, 0, qpn[0], OVR_WR_RDMA_READ, 13, 0x88000, 50000, 0x40000, 0, 0);
	expect(f, 0, cq, 13, OVR_WC_LOC_PROT_ERR);
	expect_fault_stats(f, 0);
	no_holes();
	check_healthy(f, 7);
}

/* An atomic's result placed into a hole of the requester: LOC_PROT_ERR
 * (the responder executed it). */
static void test_atomic_dest_hole(void **state)
{
	struct fix *f = *state;
	uint32_t qpn[2], cq;

	qp_connect(f, qpn, &cq);
	put64(1, 0x100, 40);
	hole(0, 0x200, 8);
	post(f, 0, qpn[0], OVR_WR_ATOMIC_FETCH_AND_ADD, 14, 0x200, 8, 0x100, 2,
	     0);
	expect(f, 0, cq, 14, OVR_WC_LOC_PROT_ERR);
	expect_fault_stats(f, 0);
	assert_int_equal(get64(1, 0x100), 42);
	no_holes();
	check_healthy(f, 8);
}

/* Batched: copies were queued and ran at the closes. */
static void test_batched_exact(void **state)
{
	struct fix *f = *state;
	struct ovr_eng_stats st;

	check_healthy(f, 11);
	ovr_eng_get_stats(f->p->n[0].eng, &st);
	assert_true(st.dev_async > 0);
	assert_int_equal(st.dev_copy_err, 0);
	assert_int_equal(st.dev_copy_fault, 0);
	assert_true(bnodes[0].queued > 0 && bnodes[1].queued > 0);
}

/*
 * Three QPs of node 0 WRITE to node 1; node 1 places their bytes in the
 * same rounds, one batch each. The middle one's target has a hole: its
 * WR alone fails REM_ACCESS_ERR, the others land byte-exact though
 * their copies were in the batches with the fault.
 */
static void test_batched_fault_one_qp(void **state)
{
	struct fix *f = *state;
	uint32_t qpn[3][2], cq[3];
	const uint32_t len = 16384;
	struct ovr_eng_stats st;

	for (int i = 0; i < 3; i++)
		qp_connect(f, qpn[i], &cq[i]);
	hole(1, 0x50000 + 4096, 4096);
	for (int i = 0; i < 3; i++) {
		fill_pattern(procs[0].mem + 0x10000 * (i + 1), len,
			     (uint64_t)i + 20);
		post(f, 0, qpn[i][0], OVR_WR_RDMA_WRITE, 30 + (uint64_t)i,
		     0x10000 * (uint64_t)(i + 1), len,
		     0x40000 + 0x10000 * (uint64_t)i, 0, 0);
	}
	expect(f, 0, cq[0], 30, OVR_WC_SUCCESS);
	expect(f, 0, cq[1], 31, OVR_WC_REM_ACCESS_ERR);
	expect(f, 0, cq[2], 32, OVR_WC_SUCCESS);
	assert_memory_equal(procs[1].mem + 0x40000, procs[0].mem + 0x10000,
			    len);
	assert_memory_equal(procs[1].mem + 0x60000, procs[0].mem + 0x30000,
			    len);
	assert_true(bnodes[1].mixed > 0);
	ovr_eng_get_stats(f->p->n[1].eng, &st);
	assert_true(st.dev_copy_fault > 0);
	assert_int_equal(st.dev_copy_err, 0);
	no_holes();
	check_healthy(f, 12);
}

/*
 * One QP, four WRs back to back: WRITE A lands, WRITE B's target has a
 * hole in its middle, then WRITE C and a SEND. As a synchronous copy
 * would have it: A completes, B fails REM_ACCESS_ERR, C and the SEND
 * are flushed, and the receive waiting for the SEND is flushed too -
 * never a success for what came after the fault, though its bytes may
 * have been placed in the same batch.
 */
static void test_batched_fault_in_order(void **state)
{
	struct fix *f = *state;
	uint32_t qpn[2], cq;
	const uint32_t len = 16384;
	qp_connect(f, qpn, &cq);
	hole(1, 0x50000 + 8192, 4096);
	fill_pattern(procs[0].mem + 0x10000, len, 40);
	post_recv(f, 1, qpn[1], 50, 0x80000, len);
	post(f, 0, qpn[0], OVR_WR_RDMA_WRITE, 41, 0x10000, len, 0x40000, 0, 0);
	post(f, 0, qpn[0], OVR_WR_RDMA_WRITE, 42, 0x10000, len, 0x50000, 0, 0);
	post(f, 0, qpn[0], OVR_WR_RDMA_WRITE, 43, 0x10000, len, 0x60000, 0, 0);
	post(f, 0, qpn[0], OVR_WR_SEND, 44, 0x10000, len, 0, 0, 0);
	expect(f, 0, cq, 41, OVR_WC_SUCCESS);
	expect(f, 0, cq, 42, OVR_WC_REM_ACCESS_ERR);
	expect(f, 0, cq, 43, OVR_WC_WR_FLUSH_ERR);
	expect(f, 0, cq, 44, OVR_WC_WR_FLUSH_ERR);
	expect(f, 1, cq + 1, 50, OVR_WC_WR_FLUSH_ERR);
	assert_memory_equal(procs[1].mem + 0x40000, procs[0].mem + 0x10000,
			    len);
	expect_fault_stats(f, 1);
	assert_true(bnodes[1].mixed > 0);
	no_holes();
	check_healthy(f, 13);
}

/*
 * Two SENDs back to back; the second one's receive has a hole: the first
 * receive completes byte-exact, the second LOC_PROT_ERR, and the sender
 * sees success, then REM_OP_ERR.
 */
static void test_batched_send_fault_after_good(void **state)
{
	struct fix *f = *state;
	uint32_t qpn[2], cq;
	const uint32_t len = 16384;

	qp_connect(f, qpn, &cq);
	hole(1, 0x90000 + 4096, 4096);
	fill_pattern(procs[0].mem + 0x10000, len, 60);
	post_recv(f, 1, qpn[1], 61, 0x80000, len);
	post_recv(f, 1, qpn[1], 62, 0x90000, len);
	post(f, 0, qpn[0], OVR_WR_SEND, 63, 0x10000, len, 0, 0, 0);
	post(f, 0, qpn[0], OVR_WR_SEND, 64, 0x10000, len, 0, 0, 0);
	expect(f, 0, cq, 63, OVR_WC_SUCCESS);
	expect(f, 0, cq, 64, OVR_WC_REM_OP_ERR);
	expect(f, 1, cq + 1, 61, OVR_WC_SUCCESS);
	expect(f, 1, cq + 1, 62, OVR_WC_LOC_PROT_ERR);
	assert_memory_equal(procs[1].mem + 0x80000, procs[0].mem + 0x10000,
			    len);
	expect_fault_stats(f, 1);
	assert_true(bnodes[1].mixed > 0); /* both in one batch */
	no_holes();
	check_healthy(f, 14);
}

/* Host-ops regions need the op; unknown flags are refused. */
static void test_reg_checks(void **state)
{
	struct fix *f = *state;
	uint32_t key;

	assert_int_equal(ovr_eng_reg_mr_ext(f->p->n[0].eng, f->p->n[0].pd,
					    pva(0, 0), 4096, OVR_ACCESS_ALL,
					    &procs[0], 0, 2, &key),
			 -EINVAL);
	assert_int_equal(ovr_eng_reg_mr_ext(f->p->n[0].eng, f->p->n[0].pd,
					    pva(0, 0), 4096, OVR_ACCESS_ALL,
					    NULL, 0, OVR_ENG_MR_HOST, &key),
			 -EINVAL);
	/* the cookie of a region behind dev_copy, as registered (the
	 * service's drain tells its process route by it); none for a
	 * region the engine addresses, an unknown key, one deregistered */
	assert_ptr_equal(ovr_eng_mr_dev(f->p->n[0].eng, f->key[0]), &procs[0]);
	assert_null(ovr_eng_mr_dev(f->p->n[0].eng, f->key[0] ^ 0x80));
	{
		static uint8_t host[64];
		uint32_t hkey;

		assert_int_equal(ovr_eng_reg_mr(f->p->n[0].eng, f->p->n[0].pd,
						(uintptr_t)host, sizeof(host),
						OVR_ACCESS_ALL, host, &hkey),
				 0);
		assert_null(ovr_eng_mr_dev(f->p->n[0].eng, hkey));
		assert_int_equal(ovr_eng_dereg_mr(f->p->n[0].eng, hkey), 0);
	}
	assert_int_equal(ovr_eng_dereg_mr(f->p->n[0].eng, f->key[0]), 0);
	assert_null(ovr_eng_mr_dev(f->p->n[0].eng, f->key[0]));
	assert_int_equal(ovr_eng_reg_mr_ext(f->p->n[0].eng, f->p->n[0].pd,
					    pva(0, 0), PROC_LEN, OVR_ACCESS_ALL,
					    &procs[0], 0, OVR_ENG_MR_HOST,
					    &f->key[0]),
			 0);
	assert_ptr_equal(ovr_eng_mr_dev(f->p->n[0].eng, f->key[0]), &procs[0]);
	check_healthy(f, 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fenced_source, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_data_exact, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomics, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomics_lossy, setup_lossy,
						teardown),
		cmocka_unit_test_setup_teardown(test_write_hole, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_read_hole, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomic_hole, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_send_hole, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_owner_gone, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_source_hole, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_read_dest_hole,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_dest_hole,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_reg_checks, setup_clean,
						teardown),
		/* the same with batches (ovrdmad's process route) */
		cmocka_unit_test_setup_teardown(test_batched_exact,
						setup_batched, teardown),
		cmocka_unit_test_setup_teardown(test_data_exact, setup_batched,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomics, setup_batched,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomics_lossy,
						setup_batched_lossy, teardown),
		cmocka_unit_test_setup_teardown(test_write_hole, setup_batched,
						teardown),
		cmocka_unit_test_setup_teardown(test_read_hole, setup_batched,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomic_hole, setup_batched,
						teardown),
		cmocka_unit_test_setup_teardown(test_send_hole, setup_batched,
						teardown),
		cmocka_unit_test_setup_teardown(test_source_hole, setup_batched,
						teardown),
		cmocka_unit_test_setup_teardown(test_read_dest_hole,
						setup_batched, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_dest_hole,
						setup_batched, teardown),
		cmocka_unit_test_setup_teardown(test_batched_fault_one_qp,
						setup_batched, teardown),
		cmocka_unit_test_setup_teardown(test_batched_fault_one_qp,
						setup_batched_lossy, teardown),
		cmocka_unit_test_setup_teardown(test_owner_gone, setup_batched,
						teardown),
		cmocka_unit_test_setup_teardown(test_batched_fault_in_order,
						setup_batched, teardown),
		cmocka_unit_test_setup_teardown(test_batched_fault_in_order,
						setup_batched_lossy, teardown),
		cmocka_unit_test_setup_teardown(
			test_batched_send_fault_after_good, setup_batched,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_batched_send_fault_after_good, setup_batched_lossy,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
