// SPDX-License-Identifier: MIT
/*
 * The provider's extended QP API (provider/ovrdma_qpx.c, issue 24)
 * against a fake ring: ovrdma_qpx.c and ovrdma_qp.c run over the real
 * libovr_client, whose service is a thread here that answers HELLO,
 * OPEN, CREATE_CQ and CREATE_QP with memfds it keeps mapped, so the test
 * reads the send ring, its producer index and the doorbell page as
 * ovrdmad would, and writes CQEs as ovrdmad would.
 *
 *   1. ibv_create_qp_ex: what is refused (send operations ovrdma does
 *      not carry, create flags, comp_mask bits, no PD, XRC) and with
 *      which errno; SEND_OPS_FLAGS gives an ibv_qp_ex, PD alone or
 *      CREATE_FLAGS 0 a plain QP; capabilities written back;
 *   2. WRs built between wr_start and wr_complete reach the ring only at
 *      wr_complete: one producer store, one doorbell; wr_id and wr_flags
 *      as set before each builder;
 *   3. wr_abort discards the batch, its slots are reused;
 *   4. each opcode (SGE list, inline, UD) is the very WQE ibv_post_send
 *      writes for the same WR;
 *   5. errors - queue full, SGE count, inline length, an operation not
 *      asked for, atomics' SGE, no UD address, bad flags, QP state, a
 *      setter without a builder - come from wr_complete, first one
 *      wins, nothing of the batch is published, the next batch works;
 *   6. the setters copy: inline data and SGE arrays may be reused at
 *      once; UD address before or after the data;
 *   7. ibv_post_send and batches interleave in posting order.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include <ovrdma/ctl.h>
#include <ovrdma/ring.h>

#include "ovrdma_verbs.h"

#define PG 4096u
#define MAXQP 32

/* ovrdma_verbs.c's, which the test does not link: destroyed objects
 * have no events here */
void ovrdma_release(struct ovrdma_context *ctx, void *obj, pthread_mutex_t *m,
		    pthread_cond_t *c, const uint32_t *acked, uint32_t events)
{
	(void)ctx, (void)m, (void)c, (void)acked, (void)events;
	free(obj);
}

/* ---- the fake service ----------------------------------------------------- */

struct fake_qp {
	struct ovr_ctl_create_qp_rep rep;
	uint8_t *map;
};

static struct {
	char dir[64], path[96];
	int lfd;
	pthread_t thr;
	struct ovr_ring_db *db;
	uint8_t *cq; /* the one CQ */
	uint32_t cq_depth, cq_prod;
	struct fake_qp qp[MAXQP];
	int nqp;
} svc;

static void reply(int fd, const struct ovr_ctl_hdr *q, int32_t status,
		  const void *body, size_t len, const int *fds, int nfds)
{
	struct ovr_ctl_hdr h = *q;
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)body, len } };
	union {
		char b[CMSG_SPACE(sizeof(int) * 2)];
		struct cmsghdr align;
	} cb;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = body ? 2 : 1 };

	h.status = status;
	h.len = (uint32_t)(sizeof(h) + (body ? len : 0));
	if (nfds) {
		struct cmsghdr *cm;

		memset(&cb, 0, sizeof(cb));
		m.msg_control = cb.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	if (sendmsg(fd, &m, MSG_NOSIGNAL) < 0)
		perror("fake service: sendmsg");
}

/* A memfd of @len bytes, mapped here at *@map. */
static int shared(size_t len, void **map)
{
	int fd = memfd_create("fake-svc", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)len))
		abort();
	*map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*map == MAP_FAILED)
		abort();
	return fd;
}

static uint32_t pow2(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static void create_qp(int fd, const struct ovr_ctl_hdr *h, const void *body)
{
	struct ovr_ctl_create_qp_req q;
	struct fake_qp *f = &svc.qp[svc.nqp];
	struct ovr_ctl_create_qp_rep *r = &f->rep;
	uint32_t sq_slot, rq_slot;
	void *map;
	int mfd;

	memcpy(&q, body, sizeof(q));
	*r = (struct ovr_ctl_create_qp_rep){
		.qp = (uint32_t)svc.nqp + 1,
		.qpn = 100 + (uint32_t)svc.nqp,
		.db_index = (uint32_t)svc.nqp,
	};
	r->cap.max_send_wr = q.cap.max_send_wr ? q.cap.max_send_wr : 1;
	r->cap.max_recv_wr = q.cap.max_recv_wr ? q.cap.max_recv_wr : 1;
	r->cap.max_send_sge = min_u32(q.cap.max_send_sge, OVR_RING_SQ_MAX_SGE);
	r->cap.max_recv_sge = min_u32(q.cap.max_recv_sge, OVR_RING_SQ_MAX_SGE);
	r->cap.max_inline_data =
		min_u32(q.cap.max_inline_data, OVR_RING_MAX_INLINE);
	sq_slot = sizeof(struct ovr_ring_swqe) +
		  (r->cap.max_send_sge * 16u > r->cap.max_inline_data ?
			   r->cap.max_send_sge * 16u :
			   r->cap.max_inline_data);
	rq_slot = sizeof(struct ovr_ring_rwqe) + r->cap.max_recv_sge * 16u;
	r->sq_depth = pow2(r->cap.max_send_wr);
	r->rq_depth = pow2(r->cap.max_recv_wr);
	r->sq_stride = (sq_slot + 63u) & ~63u;
	r->rq_stride = (rq_slot + 63u) & ~63u;
	r->sq_off = sizeof(struct ovr_ring_qp);
	r->rq_off = r->sq_off + (uint64_t)r->sq_depth * r->sq_stride;
	r->map_len =
		(r->rq_off + (uint64_t)r->rq_depth * r->rq_stride + PG - 1) &
		~(uint64_t)(PG - 1);
	mfd = shared(r->map_len, &map);
	f->map = map;
	svc.nqp++;
	reply(fd, h, 0, r, sizeof(*r), &mfd, 1);
	close(mfd);
}

static void *service(void *arg)
{
	static char buf[OVR_CTL_MSG_MAX];
	int fd = accept(svc.lfd, NULL, NULL);

	(void)arg;
	if (fd < 0)
		return NULL;
	for (;;) {
		union {
			char b[CMSG_SPACE(sizeof(int) * OVR_CTL_MR_MAX_SEG)];
			struct cmsghdr align;
		} cb;
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cb.b,
				    .msg_controllen = sizeof(cb.b) };
		struct ovr_ctl_hdr h;
		ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
		void *map;
		int fds[2];

		if (n <= 0)
			break;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm;
		     cm = CMSG_NXTHDR(&m, cm))
			if (cm->cmsg_type == SCM_RIGHTS) {
				int k = (int)((cm->cmsg_len - CMSG_LEN(0)) /
					      sizeof(int));

				for (int i = 0; i < k; i++) {
					int passed;

					memcpy(&passed,
					       CMSG_DATA(cm) + i * sizeof(int),
					       sizeof(int));
					close(passed); /* OPEN's async pipe */
				}
			}
		memcpy(&h, buf, sizeof(h));
		if (h.op == OVR_CTL_HELLO) {
			struct ovr_ctl_hello_rep r = {
				.ring_abi = OVR_RING_ABI_VERSION,
				.incarnation = 1,
			};

			fds[0] = shared(sizeof(struct ovr_ring_svc), &map);
			reply(fd, &h, 0, &r, sizeof(r), fds, 1);
			close(fds[0]);
		} else if (h.op == OVR_CTL_OPEN) {
			struct ovr_ctl_open_rep r = { .ctx_id = 1 };

			snprintf(r.dev.name, sizeof(r.dev.name), "ovrdma0");
			fds[0] = shared(PG, &map);
			svc.db = map;
			fds[1] = eventfd(0, EFD_CLOEXEC);
			reply(fd, &h, 0, &r, sizeof(r), fds, 2);
			close(fds[0]);
			close(fds[1]);
		} else if (h.op == OVR_CTL_CREATE_CQ) {
			struct ovr_ctl_create_cq_req q;
			struct ovr_ctl_create_cq_rep r;

			memcpy(&q, buf + sizeof(h), sizeof(q));
			r = (struct ovr_ctl_create_cq_rep){
				.cq = 1,
				.depth = pow2(q.cqe),
			};
			r.map_len =
				OVR_RING_CQ_ENTRIES_OFF +
				(uint64_t)r.depth * sizeof(struct ovr_ring_cqe);
			fds[0] = shared(r.map_len, &map);
			svc.cq = map;
			svc.cq_depth = r.depth;
			reply(fd, &h, 0, &r, sizeof(r), fds, 1);
			close(fds[0]);
		} else if (h.op == OVR_CTL_CREATE_QP) {
			create_qp(fd, &h, buf + sizeof(h));
		} else if (h.op == OVR_CTL_DESTROY_QP ||
			   h.op == OVR_CTL_DESTROY_CQ) {
			reply(fd, &h, 0, NULL, 0, NULL, 0);
		} else {
			reply(fd, &h, -EOPNOTSUPP, NULL, 0, NULL, 0);
		}
	}
	close(fd);
	return NULL;
}

/* ---- the provider's objects, made by hand ----------------------------------- */

static struct {
	struct ovr_cl *cl;
	struct ovrdma_context *ctx;
	struct ovrdma_pd pd;
	struct ovrdma_cq *cq;
	struct ovrdma_ah ah, ah2;
	uint64_t buf[64]; /* SGE addresses: not read, they are not inline */
} t;

static int setup(void **state)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	(void)state;
	snprintf(svc.dir, sizeof(svc.dir), "/tmp/ovrdma-qpx.XXXXXX");
	if (!mkdtemp(svc.dir))
		return -1;
	snprintf(svc.path, sizeof(svc.path), "%s/sock", svc.dir);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", svc.path);
	svc.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (svc.lfd < 0 || bind(svc.lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(svc.lfd, 1) || pthread_create(&svc.thr, NULL, service, NULL))
		return -1;
	t.cl = ovr_cl_connect(svc.path, "test");
	if (!t.cl || ovr_cl_open(t.cl, "ovrdma0", NULL))
		return -1;
	t.ctx = calloc(1, sizeof(*t.ctx));
	t.cq = calloc(1, sizeof(*t.cq));
	if (!t.ctx || !t.cq)
		return -1;
	t.ctx->cl = t.cl;
	t.pd.ibv_pd.context = &t.ctx->vctx.context;
	t.pd.handle = 1;
	t.cq->vcq.cq.context = &t.ctx->vctx.context;
	t.cq->cq = ovr_cl_create_cq(t.cl, 256, OVR_CTL_NO_CHANNEL, 0);
	t.ah.ibv_ah.context = &t.ctx->vctx.context;
	t.ah.handle = 7;
	t.ah2.ibv_ah.context = &t.ctx->vctx.context;
	t.ah2.handle = 9;
	return t.cq->cq ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	ovr_cl_close(t.cl);
	pthread_join(svc.thr, NULL);
	close(svc.lfd);
	unlink(svc.path);
	rmdir(svc.dir);
	free(t.cq);
	free(t.ctx);
	return 0;
}

static struct ibv_qp_init_attr_ex init_attr(enum ibv_qp_type type,
					    uint32_t mask, uint64_t ops)
{
	return (struct ibv_qp_init_attr_ex){
		.send_cq = &t.cq->vcq.cq,
		.recv_cq = &t.cq->vcq.cq,
		.cap = { .max_send_wr = 8,
			 .max_recv_wr = 8,
			 .max_send_sge = 4,
			 .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.qp_type = type,
		.comp_mask = mask,
		.pd = &t.pd.ibv_pd,
		.send_ops_flags = ops,
	};
}

#define RC_OPS                                                            \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |             \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |   \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV)
#define UD_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define UC_OPS                                                            \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define EX_MASK (IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

static struct fake_qp *fake_of(const struct ibv_qp *q)
{
	for (int i = 0; i < svc.nqp; i++)
		if (svc.qp[i].rep.qpn == q->qp_num)
			return &svc.qp[i];
	fail_msg("no fake QP %u", q->qp_num);
	abort(); /* not reached */
}

static struct ovr_ring_qp *ring_of(const struct ibv_qp *q)
{
	return (struct ovr_ring_qp *)fake_of(q)->map;
}

static uint32_t sq_prod(const struct ibv_qp *q)
{
	return atomic_load(&ring_of(q)->sq_prod);
}

static const uint8_t *slot(const struct ibv_qp *q, uint32_t idx)
{
	struct fake_qp *f = fake_of(q);

	return f->map + f->rep.sq_off +
	       (size_t)(idx & (f->rep.sq_depth - 1)) * f->rep.sq_stride;
}

static const struct ovr_ring_swqe *wqe(const struct ibv_qp *q, uint32_t idx)
{
	return (const struct ovr_ring_swqe *)slot(q, idx);
}

static const struct ovr_ring_sge *wqe_sge(const struct ibv_qp *q, uint32_t idx,
					  uint32_t i)
{
	return (const struct ovr_ring_sge *)(slot(q, idx) +
					     sizeof(struct ovr_ring_swqe)) +
	       i;
}

/* Has the QP's doorbell bit been rung since the last call? (clears it
 * as the service does) */
static bool rang(const struct ibv_qp *q)
{
	uint32_t i = fake_of(q)->rep.db_index;
	uint64_t bit = 1ull << (i % 64);
	uint64_t old = atomic_fetch_and(&svc.db->bits[i / 64], ~bit);

	atomic_store(&svc.db->summary, 0);
	return old & bit;
}

static void set_state(struct ibv_qp *q, uint32_t st)
{
	atomic_store(&ring_of(q)->state, st);
}

static struct ibv_qp *mkqp(enum ibv_qp_type type, uint64_t ops)
{
	struct ibv_qp_init_attr_ex a = init_attr(type, EX_MASK, ops);
	struct ibv_qp *q = ovrdma_create_qp_ex(&t.ctx->vctx.context, &a);

	assert_non_null(q);
	set_state(q, OVR_QPS_RTS);
	rang(q);
	return q;
}

/* The service completes send WQE @idx of @q; returns its wr_id. */
static uint64_t complete_one(struct ibv_qp *q, uint32_t idx)
{
	struct ovr_ring_cqe *e =
		(struct ovr_ring_cqe *)(svc.cq + OVR_RING_CQ_ENTRIES_OFF) +
		(svc.cq_prod & (svc.cq_depth - 1));
	struct ovr_cl_wc wc;

	*e = (struct ovr_ring_cqe){ .wqe_idx = idx, .qp_num = q->qp_num };
	atomic_store(&e->gen, svc.cq_prod / svc.cq_depth + 1);
	svc.cq_prod++;
	assert_int_equal(ovr_cl_poll_cq(t.cq->cq, 1, &wc), 1);
	assert_int_equal(wc.qp_num, q->qp_num);
	return wc.wr_id;
}

static void complete_upto(struct ibv_qp *q, uint32_t *done, uint32_t prod)
{
	while (*done != prod)
		complete_one(q, (*done)++);
}

static void destroy(struct ibv_qp *q)
{
	assert_int_equal(ovrdma_destroy_qp(q), 0);
}

/* ---- 1. creation ------------------------------------------------------------ */

static void expect_refused(struct ibv_qp_init_attr_ex a, int err)
{
	errno = 0;
	assert_null(ovrdma_create_qp_ex(&t.ctx->vctx.context, &a));
	assert_int_equal(errno, err);
}

static void test_create(void **state)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *q;
	int n = svc.nqp;

	(void)state;
	/* send operations ovrdma does not carry; windows on UD */
	expect_refused(init_attr(IBV_QPT_UD, EX_MASK, IBV_QP_EX_WITH_BIND_MW),
		       EOPNOTSUPP);
	expect_refused(init_attr(IBV_QPT_UD, EX_MASK,
				 UD_OPS | IBV_QP_EX_WITH_LOCAL_INV),
		       EOPNOTSUPP);
	expect_refused(init_attr(IBV_QPT_RC, EX_MASK, IBV_QP_EX_WITH_TSO),
		       EOPNOTSUPP);
	/* ATOMIC_WRITE: RC's only */
	expect_refused(init_attr(IBV_QPT_UD, EX_MASK,
				 UD_OPS | IBV_QP_EX_WITH_ATOMIC_WRITE),
		       EOPNOTSUPP);
	expect_refused(init_attr(IBV_QPT_UC, EX_MASK,
				 IBV_QP_EX_WITH_ATOMIC_WRITE),
		       EOPNOTSUPP);
	expect_refused(init_attr(IBV_QPT_RC, EX_MASK, 1ull << 40), EOPNOTSUPP);
	/* UD carries SEND and SEND_WITH_IMM only */
	expect_refused(init_attr(IBV_QPT_UD, EX_MASK,
				 IBV_QP_EX_WITH_RDMA_WRITE),
		       EOPNOTSUPP);
	expect_refused(init_attr(IBV_QPT_UD, EX_MASK,
				 IBV_QP_EX_WITH_SEND_WITH_INV),
		       EOPNOTSUPP);
	/* UC carries SENDs and WRITEs only */
	expect_refused(init_attr(IBV_QPT_UC, EX_MASK, IBV_QP_EX_WITH_RDMA_READ),
		       EOPNOTSUPP);
	expect_refused(init_attr(IBV_QPT_UC, EX_MASK, RC_OPS), EOPNOTSUPP);
	/* other QP types, comp_mask bits, create flags */
	expect_refused(init_attr(IBV_QPT_XRC_SEND, EX_MASK,
				 IBV_QP_EX_WITH_SEND),
		       EOPNOTSUPP);
	expect_refused(init_attr(IBV_QPT_RC, EX_MASK | IBV_QP_INIT_ATTR_XRCD,
				 IBV_QP_EX_WITH_SEND),
		       EOPNOTSUPP);
	expect_refused(init_attr(IBV_QPT_RC,
				 EX_MASK | IBV_QP_INIT_ATTR_MAX_TSO_HEADER,
				 IBV_QP_EX_WITH_SEND),
		       EOPNOTSUPP);
	a = init_attr(IBV_QPT_RC, EX_MASK | IBV_QP_INIT_ATTR_CREATE_FLAGS,
		      IBV_QP_EX_WITH_SEND);
	a.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	expect_refused(a, EOPNOTSUPP);
	a = init_attr(IBV_QPT_UD, EX_MASK | IBV_QP_INIT_ATTR_CREATE_FLAGS,
		      IBV_QP_EX_WITH_SEND);
	a.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	expect_refused(a, EOPNOTSUPP);
	/* RC and UD need a PD */
	expect_refused(init_attr(IBV_QPT_RC, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
				 IBV_QP_EX_WITH_SEND),
		       EINVAL);
	a = init_attr(IBV_QPT_RC, EX_MASK, IBV_QP_EX_WITH_SEND);
	a.pd = NULL;
	expect_refused(a, EINVAL);
	assert_int_equal(svc.nqp, n); /* none reached the service */

	/* SEND_OPS_FLAGS: an extended QP, the caps granted written back */
	a = init_attr(IBV_QPT_RC, EX_MASK, RC_OPS);
	a.cap.max_inline_data = 4096;
	q = ovrdma_create_qp_ex(&t.ctx->vctx.context, &a);
	assert_non_null(q);
	assert_ptr_equal(ibv_qp_to_qp_ex(q), &to_oqp(q)->vqp.qp_ex);
	assert_int_equal(a.cap.max_inline_data, OVR_RING_MAX_INLINE);
	assert_int_equal(a.cap.max_send_sge, 4);
	destroy(q);
	/* UD with BLOCK_SELF_MCAST_LB (no multicast: nothing to block) */
	a = init_attr(IBV_QPT_UD, EX_MASK | IBV_QP_INIT_ATTR_CREATE_FLAGS,
		      UD_OPS);
	a.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	q = ovrdma_create_qp_ex(&t.ctx->vctx.context, &a);
	assert_non_null(q);
	assert_non_null(ibv_qp_to_qp_ex(q));
	destroy(q);
	/* CREATE_FLAGS 0 without SEND_OPS_FLAGS: a plain QP */
	a = init_attr(IBV_QPT_RC,
		      IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS, 0);
	q = ovrdma_create_qp_ex(&t.ctx->vctx.context, &a);
	assert_non_null(q);
	assert_null(ibv_qp_to_qp_ex(q));
	destroy(q);
}

/* ---- 2. a batch is visible at wr_complete ----------------------------------- */

static void test_batch(void **state)
{
	struct ibv_qp *q = mkqp(IBV_QPT_RC, RC_OPS);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(q);
	struct ibv_sge list[3] = {
		{ (uintptr_t)&t.buf[0], 8, 11 },
		{ (uintptr_t)&t.buf[4], 16, 12 },
		{ (uintptr_t)&t.buf[8], 24, 13 },
	};
	uint32_t p0 = sq_prod(q), done = p0;

	(void)state;
	ibv_wr_start(x);
	x->wr_id = 1001;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, 0xaa, 0x10000);
	ibv_wr_set_sge(x, 5, (uintptr_t)t.buf, 64);
	x->wr_id = 1002;
	x->wr_flags = IBV_SEND_SOLICITED | IBV_SEND_FENCE;
	ibv_wr_send_imm(x, htonl(0x12345678));
	ibv_wr_set_sge_list(x, 3, list);
	x->wr_id = 1003;
	x->wr_flags = 0;
	ibv_wr_rdma_read(x, 0xbb, 0x20000);
	ibv_wr_set_sge(x, 6, (uintptr_t)t.buf, 32);
	/* nothing visible to the service yet */
	assert_int_equal(sq_prod(q), p0);
	assert_false(rang(q));
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(sq_prod(q), p0 + 3);
	assert_true(rang(q)); /* one doorbell */

	assert_int_equal(wqe(q, p0)->opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(wqe(q, p0)->send_flags, IBV_SEND_SIGNALED);
	assert_int_equal(wqe(q, p0)->rkey, 0xaa);
	assert_int_equal(wqe(q, p0)->remote_addr, 0x10000);
	assert_int_equal(wqe(q, p0)->num_sge, 1);
	assert_int_equal(wqe_sge(q, p0, 0)->lkey, 5);
	assert_int_equal(wqe_sge(q, p0, 0)->length, 64);
	assert_int_equal(wqe(q, p0 + 1)->opcode, IBV_WR_SEND_WITH_IMM);
	assert_int_equal(wqe(q, p0 + 1)->send_flags,
			 IBV_SEND_SOLICITED | IBV_SEND_FENCE);
	assert_int_equal(wqe(q, p0 + 1)->imm_data, htonl(0x12345678));
	assert_int_equal(wqe(q, p0 + 1)->num_sge, 3);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(wqe_sge(q, p0 + 1, i)->addr, list[i].addr);
		assert_int_equal(wqe_sge(q, p0 + 1, i)->length, list[i].length);
		assert_int_equal(wqe_sge(q, p0 + 1, i)->lkey, list[i].lkey);
	}
	assert_int_equal(wqe(q, p0 + 2)->opcode, IBV_WR_RDMA_READ);
	assert_int_equal(wqe(q, p0 + 2)->rkey, 0xbb);
	assert_int_equal(wqe(q, p0 + 2)->remote_addr, 0x20000);
	/* wr_ids come back with the completions */
	assert_int_equal(complete_one(q, done++), 1001);
	assert_int_equal(complete_one(q, done++), 1002);
	assert_int_equal(complete_one(q, done++), 1003);

	/* an empty batch publishes nothing */
	ibv_wr_start(x);
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(sq_prod(q), p0 + 3);
	assert_false(rang(q));
	destroy(q);
}

/* ---- 3. wr_abort --------------------------------------------------------------- */

static void test_abort(void **state)
{
	struct ibv_qp *q = mkqp(IBV_QPT_RC, RC_OPS);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(q);
	uint32_t p0 = sq_prod(q), done = p0;

	(void)state;
	ibv_wr_start(x);
	x->wr_id = 1;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	x->wr_id = 2;
	ibv_wr_rdma_write(x, 2, 0x1000);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	ibv_wr_abort(x);
	assert_int_equal(sq_prod(q), p0);
	assert_false(rang(q));
	/* the next batch takes the aborted one's slots */
	ibv_wr_start(x);
	x->wr_id = 3;
	ibv_wr_atomic_fetch_add(x, 9, 0x3008, 5);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(sq_prod(q), p0 + 1);
	assert_true(rang(q));
	assert_int_equal(wqe(q, p0)->opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
	assert_int_equal(wqe(q, p0)->compare_add, 5);
	assert_int_equal(wqe(q, p0)->remote_addr, 0x3008);
	assert_int_equal(complete_one(q, done), 3);
	destroy(q);
}

/* ---- 4. the WQE ibv_post_send writes ------------------------------------------ */

/* Posts @wr with ibv_post_send on @pq and builds it with @build on the
 * extended @xq; both slots must be the same bytes. */
static void same_wqe(struct ibv_qp *pq, struct ibv_qp *xq,
		     struct ibv_send_wr *wr, void (*build)(struct ibv_qp_ex *x))
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(xq);
	struct ibv_send_wr *bad = NULL;
	uint32_t pp = sq_prod(pq), xp = sq_prod(xq);
	const struct ovr_ring_swqe *w;
	size_t len;

	assert_int_equal(ovrdma_post_send(pq, wr, &bad), 0);
	ibv_wr_start(x);
	x->wr_id = wr->wr_id;
	x->wr_flags = wr->send_flags & ~(unsigned int)IBV_SEND_INLINE;
	build(x);
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(sq_prod(pq), pp + 1);
	assert_int_equal(sq_prod(xq), xp + 1);
	w = wqe(pq, pp);
	len = sizeof(*w) + (w->send_flags & IBV_SEND_INLINE ?
				    w->inline_len :
				    w->num_sge * sizeof(struct ovr_ring_sge));
	assert_memory_equal(slot(pq, pp), slot(xq, xp), len);
	assert_int_equal(complete_one(pq, pp), wr->wr_id);
	assert_int_equal(complete_one(xq, xp), wr->wr_id);
}

static struct ibv_sge three[3];
static uint8_t payload[40];

static void b_write(struct ibv_qp_ex *x)
{
	ibv_wr_rdma_write(x, 0x77, 0x123456789a);
	ibv_wr_set_sge_list(x, 3, three);
}

static void b_write_imm(struct ibv_qp_ex *x)
{
	ibv_wr_rdma_write_imm(x, 0x78, 0x5000, htonl(42));
	ibv_wr_set_sge(x, three[0].lkey, three[0].addr, three[0].length);
}

static void b_send(struct ibv_qp_ex *x)
{
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 2, three);
}

static void b_send_imm(struct ibv_qp_ex *x)
{
	ibv_wr_send_imm(x, htonl(7));
	ibv_wr_set_sge_list(x, 0, NULL);
}

static void b_send_inv(struct ibv_qp_ex *x)
{
	ibv_wr_send_inv(x, 0x4321);
	ibv_wr_set_sge(x, three[1].lkey, three[1].addr, three[1].length);
}

static void b_read(struct ibv_qp_ex *x)
{
	ibv_wr_rdma_read(x, 0x79, 0x6000);
	ibv_wr_set_sge_list(x, 3, three);
}

static void b_cas(struct ibv_qp_ex *x)
{
	ibv_wr_atomic_cmp_swp(x, 0x7a, 0x7008, 1, 2);
	ibv_wr_set_sge(x, 3, (uintptr_t)t.buf, 8);
}

static void b_faa(struct ibv_qp_ex *x)
{
	ibv_wr_atomic_fetch_add(x, 0x7b, 0x8010, 99);
	ibv_wr_set_sge(x, 3, (uintptr_t)t.buf, 8);
}

static void b_inline(struct ibv_qp_ex *x)
{
	struct ibv_data_buf b[2] = { { payload, 10 }, { payload + 10, 30 } };

	ibv_wr_send(x);
	ibv_wr_set_inline_data_list(x, 2, b);
}

static void b_write_inline(struct ibv_qp_ex *x)
{
	ibv_wr_rdma_write(x, 0x7c, 0x9000);
	ibv_wr_set_inline_data(x, payload, sizeof(payload));
}

/* a window and a region of the test's PD, for the binds */
static struct ibv_mw mw2 = { .rkey = 0x12345678, .type = IBV_MW_TYPE_2 };
static struct ibv_mr bmr = { .lkey = 0x4455, .addr = NULL, .length = 4096 };

static void b_bind(struct ibv_qp_ex *x)
{
	struct ibv_mw_bind_info bi = {
		.mr = &bmr,
		.addr = 0x10000,
		.length = 0x800,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};

	ibv_wr_bind_mw(x, &mw2, ibv_inc_rkey(mw2.rkey), &bi);
}

static void b_local_inv(struct ibv_qp_ex *x)
{
	ibv_wr_local_inv(x, 0x12345679);
}

static void b_ud(struct ibv_qp_ex *x)
{
	ibv_wr_send_imm(x, htonl(3));
	ibv_wr_set_sge(x, three[2].lkey, three[2].addr, three[2].length);
	ibv_wr_set_ud_addr(x, &t.ah.ibv_ah, 0x2222, 0x80000000u);
}

static void test_same_as_post_send(void **state)
{
	struct ibv_qp *pq = mkqp(IBV_QPT_RC, RC_OPS);
	struct ibv_qp *xq = mkqp(IBV_QPT_RC, RC_OPS | IBV_QP_EX_WITH_BIND_MW |
						     IBV_QP_EX_WITH_LOCAL_INV);
	struct ibv_qp *upq = mkqp(IBV_QPT_UD, UD_OPS);
	struct ibv_qp *uxq = mkqp(IBV_QPT_UD, UD_OPS);
	struct ibv_sge one8 = { (uintptr_t)t.buf, 8, 3 };
	struct ibv_send_wr wr;

	(void)state;
	for (int i = 0; i < 3; i++)
		three[i] = (struct ibv_sge){ (uintptr_t)&t.buf[i * 8],
					     (uint32_t)(i + 1) * 100,
					     (uint32_t)(20 + i) };
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 1);

	wr = (struct ibv_send_wr){ .wr_id = 1,
				   .sg_list = three,
				   .num_sge = 3,
				   .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.rkey = 0x77;
	wr.wr.rdma.remote_addr = 0x123456789a;
	same_wqe(pq, xq, &wr, b_write);

	wr = (struct ibv_send_wr){ .wr_id = 2,
				   .sg_list = three,
				   .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				   .imm_data = htonl(42) };
	wr.wr.rdma.rkey = 0x78;
	wr.wr.rdma.remote_addr = 0x5000;
	same_wqe(pq, xq, &wr, b_write_imm);

	wr = (struct ibv_send_wr){ .wr_id = 3,
				   .sg_list = three,
				   .num_sge = 2,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SOLICITED };
	same_wqe(pq, xq, &wr, b_send);

	wr = (struct ibv_send_wr){ .wr_id = 4,
				   .opcode = IBV_WR_SEND_WITH_IMM,
				   .imm_data = htonl(7) };
	same_wqe(pq, xq, &wr, b_send_imm);

	wr = (struct ibv_send_wr){ .wr_id = 5,
				   .sg_list = &three[1],
				   .num_sge = 1,
				   .opcode = IBV_WR_SEND_WITH_INV,
				   .invalidate_rkey = 0x4321 };
	same_wqe(pq, xq, &wr, b_send_inv);

	wr = (struct ibv_send_wr){ .wr_id = 6,
				   .sg_list = three,
				   .num_sge = 3,
				   .opcode = IBV_WR_RDMA_READ,
				   .send_flags = IBV_SEND_FENCE |
						 IBV_SEND_SIGNALED };
	wr.wr.rdma.rkey = 0x79;
	wr.wr.rdma.remote_addr = 0x6000;
	same_wqe(pq, xq, &wr, b_read);

	wr = (struct ibv_send_wr){ .wr_id = 7,
				   .sg_list = &one8,
				   .num_sge = 1,
				   .opcode = IBV_WR_ATOMIC_CMP_AND_SWP };
	wr.wr.atomic.rkey = 0x7a;
	wr.wr.atomic.remote_addr = 0x7008;
	wr.wr.atomic.compare_add = 1;
	wr.wr.atomic.swap = 2;
	same_wqe(pq, xq, &wr, b_cas);

	wr = (struct ibv_send_wr){ .wr_id = 8,
				   .sg_list = &one8,
				   .num_sge = 1,
				   .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	wr.wr.atomic.rkey = 0x7b;
	wr.wr.atomic.remote_addr = 0x8010;
	wr.wr.atomic.compare_add = 99;
	same_wqe(pq, xq, &wr, b_faa);

	/* inline: the bytes themselves in the WQE */
	{
		struct ibv_sge in[2] = { { (uintptr_t)payload, 10, 0 },
					 { (uintptr_t)payload + 10, 30, 0 } };

		wr = (struct ibv_send_wr){ .wr_id = 9,
					   .sg_list = in,
					   .num_sge = 2,
					   .opcode = IBV_WR_SEND,
					   .send_flags = IBV_SEND_INLINE };
		same_wqe(pq, xq, &wr, b_inline);
		in[0].length = sizeof(payload);
		wr = (struct ibv_send_wr){ .wr_id = 10,
					   .sg_list = in,
					   .num_sge = 1,
					   .opcode = IBV_WR_RDMA_WRITE,
					   .send_flags = IBV_SEND_INLINE |
							 IBV_SEND_SIGNALED };
		wr.wr.rdma.rkey = 0x7c;
		wr.wr.rdma.remote_addr = 0x9000;
		same_wqe(pq, xq, &wr, b_write_inline);
		assert_int_equal(wqe(xq, sq_prod(xq) - 1)->inline_len,
				 sizeof(payload));
		assert_memory_equal(slot(xq, sq_prod(xq) - 1) +
					    sizeof(struct ovr_ring_swqe),
				    payload, sizeof(payload));
	}

	/* memory windows: the bind in the header's fields (ring.h), no
	 * SGEs whatever the WR's list says */
	mw2.pd = &t.pd.ibv_pd;
	bmr.pd = &t.pd.ibv_pd;
	wr = (struct ibv_send_wr){ .wr_id = 12,
				   .sg_list = three,
				   .num_sge = 2,
				   .opcode = IBV_WR_BIND_MW,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.bind_mw.mw = &mw2;
	wr.bind_mw.rkey = 0x12345679;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = &bmr,
		.addr = 0x10000,
		.length = 0x800,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	same_wqe(pq, xq, &wr, b_bind);
	{
		const struct ovr_ring_swqe *w = wqe(xq, sq_prod(xq) - 1);

		assert_int_equal(w->opcode, IBV_WR_BIND_MW);
		assert_int_equal(w->num_sge, 0);
		assert_int_equal(w->invalidate_rkey, 0x12345678);
		assert_int_equal(w->rkey, 0x12345679);
		assert_int_equal(w->remote_addr, 0x10000);
		assert_int_equal(w->compare_add, 0x800);
		assert_int_equal(w->swap, (uint64_t)(IBV_ACCESS_REMOTE_WRITE |
						     IBV_ACCESS_REMOTE_READ)
							  << 32 |
						  0x4455);
	}
	wr = (struct ibv_send_wr){ .wr_id = 13,
				   .opcode = IBV_WR_LOCAL_INV,
				   .invalidate_rkey = 0x12345679 };
	same_wqe(pq, xq, &wr, b_local_inv);
	assert_int_equal(wqe(xq, sq_prod(xq) - 1)->invalidate_rkey, 0x12345679);
	/* a region of another PD: EPERM (mlx5's), a range without one and
	 * zero-based windows EINVAL */
	{
		struct ibv_pd other = { 0 };
		struct ibv_send_wr *bad = NULL;

		bmr.pd = &other;
		wr = (struct ibv_send_wr){ .wr_id = 14,
					   .opcode = IBV_WR_BIND_MW };
		wr.bind_mw.mw = &mw2;
		wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
			.mr = &bmr, .addr = 0x10000, .length = 8
		};
		assert_int_equal(ovrdma_post_send(pq, &wr, &bad), EPERM);
		assert_ptr_equal(bad, &wr);
		wr.bind_mw.bind_info.mr = NULL;
		assert_int_equal(ovrdma_post_send(pq, &wr, &bad), EINVAL);
		bmr.pd = &t.pd.ibv_pd;
		wr.bind_mw.bind_info.mr = &bmr;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_ZERO_BASED;
		assert_int_equal(ovrdma_post_send(pq, &wr, &bad), EINVAL);
	}

	/* UD: the AH, QPN and Q_Key */
	wr = (struct ibv_send_wr){ .wr_id = 11,
				   .sg_list = &three[2],
				   .num_sge = 1,
				   .opcode = IBV_WR_SEND_WITH_IMM,
				   .imm_data = htonl(3) };
	wr.wr.ud.ah = &t.ah.ibv_ah;
	wr.wr.ud.remote_qpn = 0x2222;
	wr.wr.ud.remote_qkey = 0x80000000u;
	same_wqe(upq, uxq, &wr, b_ud);
	assert_int_equal(wqe(uxq, sq_prod(uxq) - 1)->ah, 7);

	destroy(pq);
	destroy(xq);
	destroy(upq);
	destroy(uxq);
}

/* ---- 5. errors ----------------------------------------------------------------- */

/* A batch @build must fail with @err: nothing published, no doorbell;
 * then a good one-WR batch goes through. */
static void bad_batch(struct ibv_qp *q, void (*build)(struct ibv_qp_ex *x),
		      int err)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(q);
	uint32_t p0 = sq_prod(q);

	ibv_wr_start(x);
	x->wr_flags = 0;
	build(x);
	assert_int_equal(ibv_wr_complete(x), err);
	assert_int_equal(sq_prod(q), p0);
	assert_false(rang(q));
	ibv_wr_start(x);
	x->wr_id = 77;
	x->wr_flags = 0;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	if (q->qp_type == IBV_QPT_UD)
		ibv_wr_set_ud_addr(x, &t.ah.ibv_ah, 1, 1);
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(sq_prod(q), p0 + 1);
	assert_true(rang(q));
	assert_int_equal(complete_one(q, p0), 77);
}

static void e_many_sge(struct ibv_qp_ex *x)
{
	struct ibv_sge s[5] = { { 0 } };

	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 5, s); /* max_send_sge 4 */
}

static void e_too_many_sge(struct ibv_qp_ex *x)
{
	static struct ibv_sge s[OVR_RING_SQ_MAX_SGE + 1];

	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, OVR_RING_SQ_MAX_SGE + 1, s);
}

static void e_inline_long(struct ibv_qp_ex *x)
{
	static uint8_t big[65];

	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, big, sizeof(big)); /* max_inline 64 */
}

static void e_inline_list_long(struct ibv_qp_ex *x)
{
	static uint8_t big[40];
	struct ibv_data_buf b[2] = { { big, 40 }, { big, 25 } };

	ibv_wr_send(x);
	ibv_wr_set_inline_data_list(x, 2, b);
}

static void e_inline_read(struct ibv_qp_ex *x)
{
	ibv_wr_rdma_read(x, 1, 0x1000);
	ibv_wr_set_inline_data(x, t.buf, 8);
}

static void e_atomic_sge(struct ibv_qp_ex *x)
{
	ibv_wr_atomic_cmp_swp(x, 1, 0x1000, 0, 1);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 4);
}

static void e_atomic_align(struct ibv_qp_ex *x)
{
	ibv_wr_atomic_fetch_add(x, 1, 0x1004, 1);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
}

static void e_flags(struct ibv_qp_ex *x)
{
	x->wr_flags = IBV_SEND_IP_CSUM;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
}

static void e_not_asked(struct ibv_qp_ex *x)
{
	ibv_wr_send_inv(x, 5); /* the QP was made without SEND_WITH_INV */
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
}

static void e_bind_mw(struct ibv_qp_ex *x)
{
	ibv_wr_bind_mw(x, NULL, 1, NULL);
}

static void e_setter_first(struct ibv_qp_ex *x)
{
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
}

/* a good WR, then a bad one, then a good one: none posted */
static void e_middle(struct ibv_qp_ex *x)
{
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	e_atomic_sge(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
}

/* the first error wins: EINVAL, not the later ENOMEM */
static void e_first_wins(struct ibv_qp_ex *x)
{
	e_many_sge(x);
	for (int i = 0; i < 20; i++) {
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	}
}

static void e_full(struct ibv_qp_ex *x)
{
	for (int i = 0; i < 9; i++) { /* max_send_wr 8 */
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	}
}

static void e_ud_no_addr(struct ibv_qp_ex *x)
{
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
}

static void e_ud_null_ah(struct ibv_qp_ex *x)
{
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, NULL, 1, 1);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
}

static void e_ud_write(struct ibv_qp_ex *x)
{
	ibv_wr_rdma_write(x, 1, 0x1000);
	ibv_wr_set_ud_addr(x, &t.ah.ibv_ah, 1, 1);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
}

static void ud_good(struct ibv_qp_ex *x, uint64_t id)
{
	x->wr_id = id;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, &t.ah.ibv_ah, 1, 1);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
}

static void test_errors(void **state)
{
	struct ibv_qp *q = mkqp(
		IBV_QPT_RC, RC_OPS & ~(uint64_t)IBV_QP_EX_WITH_SEND_WITH_INV);
	struct ibv_qp *u = mkqp(IBV_QPT_UD, UD_OPS);
	struct ibv_qp_ex *ux = ibv_qp_to_qp_ex(u);
	uint32_t p0;

	(void)state;
	bad_batch(q, e_many_sge, EINVAL);
	bad_batch(q, e_too_many_sge, EINVAL);
	bad_batch(q, e_inline_long, EINVAL);
	bad_batch(q, e_inline_list_long, EINVAL);
	bad_batch(q, e_inline_read, EINVAL);
	bad_batch(q, e_atomic_sge, EINVAL);
	bad_batch(q, e_atomic_align, EINVAL);
	bad_batch(q, e_flags, EINVAL);
	bad_batch(q, e_not_asked, EINVAL);
	bad_batch(q, e_bind_mw, EINVAL);
	bad_batch(q, e_setter_first, EINVAL);
	bad_batch(q, e_middle, EINVAL);
	bad_batch(q, e_first_wins, EINVAL);
	bad_batch(q, e_full, ENOMEM);

	/* the QP's state: RESET, INIT, RTR refuse (EINVAL), ERROR takes
	 * WRs (they complete in error) */
	set_state(q, OVR_QPS_RESET);
	p0 = sq_prod(q);
	ibv_wr_start(ibv_qp_to_qp_ex(q));
	ibv_wr_send(ibv_qp_to_qp_ex(q));
	ibv_wr_set_sge(ibv_qp_to_qp_ex(q), 1, (uintptr_t)t.buf, 8);
	assert_int_equal(ibv_wr_complete(ibv_qp_to_qp_ex(q)), EINVAL);
	assert_int_equal(sq_prod(q), p0);
	set_state(q, OVR_QPS_ERR);
	bad_batch(q, e_atomic_sge, EINVAL);
	set_state(q, OVR_QPS_RTS);

	/* UD */
	bad_batch(u, e_ud_no_addr, EINVAL);
	bad_batch(u, e_ud_null_ah, EINVAL);
	p0 = sq_prod(u);
	ibv_wr_start(ux);
	ud_good(ux, 5);
	assert_int_equal(ibv_wr_complete(ux), 0);
	assert_int_equal(sq_prod(u), p0 + 1);
	assert_int_equal(complete_one(u, p0), 5);
	/* a UD QP carries no RDMA WRITE */
	p0 = sq_prod(u);
	ibv_wr_start(ux);
	e_ud_write(ux);
	assert_int_equal(ibv_wr_complete(ux), EINVAL);
	assert_int_equal(sq_prod(u), p0);
	ibv_wr_start(ux);
	ibv_wr_abort(ux);
	destroy(q);
	destroy(u);
}

/* A UC QP: created through either API with its four operations, a
 * WRITE and a SEND_WITH_IMM reach the ring as on RC; a READ or an atomic
 * is refused at posting (EINVAL, as rxe), by ibv_post_send and by
 * wr_complete, and nothing of it is published. */
static void test_uc(void **state)
{
	struct ibv_qp *q = mkqp(IBV_QPT_UC, UC_OPS);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(q);
	struct ibv_sge sge = { (uintptr_t)t.buf, 8, 5 };
	struct ibv_send_wr wr = { .wr_id = 9,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad = NULL;
	uint32_t p0 = sq_prod(q);

	(void)state;
	assert_int_equal(q->qp_type, IBV_QPT_UC);
	assert_int_equal(ovrdma_post_send(q, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = 0x1000;
	assert_int_equal(ovrdma_post_send(q, &wr, &bad), EINVAL);
	wr.opcode = IBV_WR_SEND_WITH_INV;
	assert_int_equal(ovrdma_post_send(q, &wr, &bad), EINVAL);
	assert_int_equal(sq_prod(q), p0);
	ibv_wr_start(x);
	ibv_wr_rdma_read(x, 0xaa, 0x10000);
	ibv_wr_set_sge(x, 5, (uintptr_t)t.buf, 64);
	assert_int_equal(ibv_wr_complete(x), EINVAL);
	assert_int_equal(sq_prod(q), p0);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, 0xaa, 0x10000);
	ibv_wr_set_sge(x, 5, (uintptr_t)t.buf, 64);
	x->wr_id = 2;
	ibv_wr_send_imm(x, htonl(7));
	ibv_wr_set_sge(x, 5, (uintptr_t)t.buf, 64);
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(sq_prod(q), p0 + 2);
	assert_true(rang(q));
	wr.wr_id = 3;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.wr.rdma.remote_addr = 0x2000;
	wr.wr.rdma.rkey = 0xbb;
	assert_int_equal(ovrdma_post_send(q, &wr, &bad), 0);
	assert_int_equal(sq_prod(q), p0 + 3);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(complete_one(q, p0 + i), i + 1);
	destroy(q);
	/* ibv_create_qp: UC is a QP type ovrdma creates */
	q = ovrdma_create_qp_ex(&t.ctx->vctx.context,
				&(struct ibv_qp_init_attr_ex){
					.qp_type = IBV_QPT_UC,
					.send_cq = &t.cq->vcq.cq,
					.recv_cq = &t.cq->vcq.cq,
					.cap = { 4, 4, 1, 1, 0 },
					.comp_mask = IBV_QP_INIT_ATTR_PD,
					.pd = &t.pd.ibv_pd,
				});
	assert_non_null(q);
	assert_null(ibv_qp_to_qp_ex(q));
	destroy(q);
}

/* Queue full counts the WRs outstanding (posted, not completed) with
 * the batch's own, ibv_post_send's as well. */
static void test_full(void **state)
{
	struct ibv_qp *q = mkqp(IBV_QPT_RC, RC_OPS);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(q);
	struct ibv_sge s = { (uintptr_t)t.buf, 8, 1 };
	struct ibv_send_wr wr = { .sg_list = &s,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct ibv_send_wr *bad;
	uint32_t p0 = sq_prod(q), done = p0;

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_int_equal(ovrdma_post_send(q, &wr, &bad), 0);
	/* 3 outstanding: a batch of 6 does not fit in 8 */
	ibv_wr_start(x);
	for (int i = 0; i < 6; i++) {
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	}
	assert_int_equal(ibv_wr_complete(x), ENOMEM);
	assert_int_equal(sq_prod(q), p0 + 3);
	/* 5 does */
	ibv_wr_start(x);
	for (int i = 0; i < 5; i++) {
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	}
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(sq_prod(q), p0 + 8);
	/* full: one more is ENOMEM, until completions make room */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	assert_int_equal(ibv_wr_complete(x), ENOMEM);
	assert_int_equal(ovrdma_post_send(q, &wr, &bad), ENOMEM);
	complete_upto(q, &done, p0 + 2);
	ibv_wr_start(x);
	for (int i = 0; i < 2; i++) {
		ibv_wr_send(x);
		ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	}
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(sq_prod(q), p0 + 10);
	complete_upto(q, &done, p0 + 10);
	/* a whole ring's worth, many times round */
	for (int round = 0; round < 10; round++) {
		ibv_wr_start(x);
		for (int i = 0; i < 8; i++) {
			x->wr_id = (uint64_t)round * 100 + (uint64_t)i;
			ibv_wr_send(x);
			ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
		}
		assert_int_equal(ibv_wr_complete(x), 0);
		for (int i = 0; i < 8; i++)
			assert_int_equal(complete_one(q, done++),
					 (uint64_t)round * 100 + (uint64_t)i);
	}
	destroy(q);
}

/* ---- 6. the setters copy; UD address in any order ------------------------------- */

static void test_copies(void **state)
{
	struct ibv_qp *q = mkqp(IBV_QPT_RC, RC_OPS);
	struct ibv_qp *u = mkqp(IBV_QPT_UD, UD_OPS);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(q), *ux = ibv_qp_to_qp_ex(u);
	uint8_t data[48], want[48];
	struct ibv_sge s[2];
	uint32_t p0 = sq_prod(q), u0 = sq_prod(u);

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = want[i] = (uint8_t)(0xa0 + i);
	s[0] = (struct ibv_sge){ 0x1000, 10, 1 };
	s[1] = (struct ibv_sge){ 0x2000, 20, 2 };
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, data, sizeof(data));
	memset(data, 0, sizeof(data)); /* reused at once */
	ibv_wr_rdma_write(x, 3, 0x4000);
	ibv_wr_set_sge_list(x, 2, s);
	memset(s, 0, sizeof(s));
	/* a later setter replaces the data: SGEs after inline */
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, want, 8);
	ibv_wr_set_sge(x, 4, 0x5000, 30);
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(sq_prod(q), p0 + 3);
	assert_int_equal(wqe(q, p0)->send_flags, IBV_SEND_INLINE);
	assert_int_equal(wqe(q, p0)->inline_len, sizeof(want));
	assert_int_equal(wqe(q, p0)->num_sge, 0);
	assert_memory_equal(slot(q, p0) + sizeof(struct ovr_ring_swqe), want,
			    sizeof(want));
	assert_int_equal(wqe(q, p0 + 1)->num_sge, 2);
	assert_int_equal(wqe_sge(q, p0 + 1, 0)->addr, 0x1000);
	assert_int_equal(wqe_sge(q, p0 + 1, 1)->length, 20);
	assert_int_equal(wqe_sge(q, p0 + 1, 1)->lkey, 2);
	assert_int_equal(wqe(q, p0 + 2)->send_flags, 0);
	assert_int_equal(wqe(q, p0 + 2)->num_sge, 1);
	assert_int_equal(wqe_sge(q, p0 + 2, 0)->length, 30);

	/* IBV_SEND_INLINE in wr_flags does not make an SGE WR inline */
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 4, 0x5000, 30);
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(wqe(q, p0 + 3)->send_flags, IBV_SEND_SIGNALED);
	assert_int_equal(wqe(q, p0 + 3)->num_sge, 1);

	/* UD: the address before or after the data, the last one wins */
	ibv_wr_start(ux);
	ibv_wr_send(ux);
	ibv_wr_set_ud_addr(ux, &t.ah.ibv_ah, 0x11, 0x21);
	ibv_wr_set_sge(ux, 1, 0x1000, 8);
	ibv_wr_send_imm(ux, htonl(9));
	ibv_wr_set_sge(ux, 1, 0x1000, 8);
	ibv_wr_set_ud_addr(ux, &t.ah.ibv_ah, 0x12, 0x22);
	ibv_wr_set_ud_addr(ux, &t.ah2.ibv_ah, 0x13, 0x23);
	assert_int_equal(ibv_wr_complete(ux), 0);
	assert_int_equal(sq_prod(u), u0 + 2);
	assert_int_equal(wqe(u, u0)->ah, 7);
	assert_int_equal(wqe(u, u0)->remote_qpn, 0x11);
	assert_int_equal(wqe(u, u0)->remote_qkey, 0x21);
	assert_int_equal(wqe(u, u0 + 1)->ah, 9);
	assert_int_equal(wqe(u, u0 + 1)->remote_qpn, 0x13);
	assert_int_equal(wqe(u, u0 + 1)->remote_qkey, 0x23);
	assert_int_equal(wqe(u, u0 + 1)->imm_data, htonl(9));
	destroy(q);
	destroy(u);
}

/* ---- 7. ibv_post_send and batches interleave -------------------------------------- */

static void test_mixed(void **state)
{
	struct ibv_qp *q = mkqp(IBV_QPT_RC, RC_OPS);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(q);
	struct ibv_sge s = { (uintptr_t)t.buf, 8, 1 };
	struct ibv_send_wr w2 = {
		.wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND
	};
	struct ibv_send_wr w1 = { .wr_id = 1,
				  .next = &w2,
				  .sg_list = &s,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct ibv_send_wr w5 = {
		.wr_id = 5, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND
	};
	struct ibv_send_wr *bad;
	uint32_t p0 = sq_prod(q), done = p0;

	(void)state;
	assert_int_equal(ovrdma_post_send(q, &w1, &bad), 0);
	ibv_wr_start(x);
	x->wr_id = 3;
	ibv_wr_rdma_write(x, 1, 0x1000);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	x->wr_id = 4;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, (uintptr_t)t.buf, 8);
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(ovrdma_post_send(q, &w5, &bad), 0);
	assert_int_equal(sq_prod(q), p0 + 5);
	for (uint64_t id = 1; id <= 5; id++)
		assert_int_equal(complete_one(q, done++), id);
	assert_int_equal(wqe(q, p0 + 2)->opcode, IBV_WR_RDMA_WRITE);
	destroy(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_same_as_post_send),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_uc),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_copies),
		cmocka_unit_test(test_mixed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
