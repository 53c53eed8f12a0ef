// SPDX-License-Identifier: MIT
/*
 * verbs_mw: memory windows between two nodes through plain libibverbs
 * (docs/PROVIDER.md, "Memory windows"). The server owns a buffer
 * registered with LOCAL_WRITE | MW_BIND only - no remote right of its
 * own - and binds windows over pieces of it; the client reaches it only
 * through the windows' rkeys. Each case runs on a fresh RC QP pair (an
 * access error ends a connection), exchanged over TCP as
 * ibv_rc_pingpong does; the server checks every byte of its buffer
 * after each case: what the window allowed landed exactly, nothing
 * else changed.
 *
 *   attrs     the device advertises MEM_WINDOW | MEM_WINDOW_TYPE_2B and
 *             max_mw; ibv_alloc_mw of type 3 is EINVAL;
 *   type2     IBV_WR_BIND_MW of a type-2 window (REMOTE_WRITE | READ)
 *             over 8 KB in the middle: WRITE of the whole window and
 *             READ back byte-exact, then a WRITE one byte past its end:
 *             IBV_WC_REM_ACCESS_ERR, nothing written;
 *   type1     ibv_bind_mw of a type-1 window (REMOTE_READ): READ
 *             byte-exact; re-bound elsewhere (a new rkey): READ there,
 *             and the old rkey fails (REM_ACCESS_ERR);
 *   access    a READ-only type-1 window: a WRITE through it fails;
 *   local-inv IBV_WR_LOCAL_INV of a bound type-2 window: its rkey fails;
 *   remote-inv the client's IBV_WR_SEND_WITH_INV of the window's rkey:
 *             the server's receive has IBV_WC_WITH_INV and that rkey,
 *             then a WRITE through it fails;
 *   dealloc   ibv_dereg_mr of a region with a window bound: EBUSY;
 *             ibv_dealloc_mw, then the rkey fails and the region
 *             deregisters;
 *   bind-err  (server alone) binds a region without MW_BIND and a
 *             window past the region's end complete
 *             IBV_WC_MW_BIND_ERR; a region of another PD: EPERM.
 *
 * usage: verbs_mw server [-p PORT] [-d DEV]
 *        verbs_mw client ADDR [-p PORT] [-d DEV]
 */
#include <getopt.h>

#include "verbs_common.h"

#define BUF 65536u
#define WOFF 16384u /* the type-2 window: [WOFF, WOFF + WLEN) */
#define WLEN 8192u
#define GUARD 0x5a

enum { OP_DONE = 1, OP_WRITE, OP_READ, OP_SEND_INV };

/* One message of the case's conversation, either way. */
struct msg {
	uint32_t op; /* client's report: what it did; server: 0 */
	uint32_t rkey;
	uint64_t va;
	uint64_t len;
	uint32_t status; /* the client's completion status */
	uint32_t rsvd;
};

struct side {
	struct vc_dev d;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr; /* buf: LOCAL_WRITE | MW_BIND (server); all */
	uint8_t *buf;
	struct ibv_qp *qp;
	int fd;
	bool server;
};

static struct ibv_qp *new_qp(struct side *s)
{
	struct ibv_qp_init_attr a = {
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.cap = { .max_send_wr = 16,
			 .max_recv_wr = 16,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &a);

	if (!qp)
		vc_die("ibv_create_qp: %s", strerror(errno));
	return qp;
}

/* A fresh connected QP pair for the next case. */
static void reconnect(struct side *s)
{
	struct vc_path path = vc_path_default();
	struct vc_qpinfo me, peer;
	int rc;

	if (s->qp && ibv_destroy_qp(s->qp))
		vc_die("ibv_destroy_qp: %s", strerror(errno));
	s->qp = new_qp(s);
	vc_qpinfo_of(&s->d, s->qp, 0x100, &me);
	vc_send_all(s->fd, &me, sizeof(me));
	vc_recv_must(s->fd, &peer, sizeof(peer));
	path.retry_cnt = 3;
	path.timeout = 12;
	rc = vc_connect(&s->d, s->qp, me.psn, &peer, &path, true);
	if (rc)
		vc_die("connect: %s", strerror(rc));
	/* both connected before either sends */
	vc_send_all(s->fd, &me, 1);
	vc_recv_must(s->fd, &peer, 1);
}

static struct ibv_wc wait_wc(struct side *s)
{
	struct ibv_wc wc;
	double t0 = vc_now();
	int n;

	while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0)
		if (vc_now() - t0 > 20)
			vc_die("no completion in 20 s");
	if (n < 0)
		vc_die("ibv_poll_cq: %d", n);
	return wc;
}

static void send_msg(struct side *s, uint32_t op, uint32_t rkey, uint64_t va,
		     uint64_t len, uint32_t status)
{
	struct msg m = {
		.op = op, .rkey = rkey, .va = va, .len = len, .status = status
	};

	vc_send_all(s->fd, &m, sizeof(m));
}

static struct msg recv_msg(struct side *s)
{
	struct msg m;

	vc_recv_must(s->fd, &m, sizeof(m));
	return m;
}

/* ---- the server ---------------------------------------------------------- */

/* The expected buffer: guards, with @len pattern bytes of @id at @off. */
static void expect(uint8_t *want, uint64_t off, uint64_t len, uint64_t id)
{
	memset(want, GUARD, BUF);
	if (len)
		vc_fill(want + off, len, 77, id);
}

static void check_buf(struct side *s, const uint8_t *want, const char *what)
{
	for (uint32_t i = 0; i < BUF; i++)
		if (s->buf[i] != want[i])
			vc_die("%s: byte %u is 0x%02x, not 0x%02x", what, i,
			       s->buf[i], want[i]);
}

/* Post a type-2 bind (IBV_WR_BIND_MW) and wait for it: its status. */
static enum ibv_wc_status bind2(struct side *s, struct ibv_mw *mw,
				struct ibv_mr *mr, uint64_t off, uint64_t len,
				unsigned int access, uint32_t *rkey)
{
	struct ibv_send_wr wr = { .wr_id = 0xb2,
				  .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = mr,
		.addr = (uintptr_t)s->buf + off,
		.length = len,
		.mw_access_flags = access,
	};
	if (ibv_post_send(s->qp, &wr, &bad))
		vc_die("post BIND_MW: %s", strerror(errno));
	wc = wait_wc(s);
	if (wc.wr_id != 0xb2 ||
	    (wc.status == IBV_WC_SUCCESS && wc.opcode != IBV_WC_BIND_MW))
		vc_die("bind: completion %#" PRIx64 " opcode %d", wc.wr_id,
		       wc.opcode);
	*rkey = wr.bind_mw.rkey;
	/* type 2: the application keeps the window's rkey */
	if (wc.status == IBV_WC_SUCCESS)
		mw->rkey = *rkey;
	return wc.status;
}

/* ibv_bind_mw of a type-1 window; mw->rkey is its new rkey. */
static void bind1(struct side *s, struct ibv_mw *mw, uint64_t off, uint64_t len,
		  unsigned int access)
{
	struct ibv_mw_bind b = { .wr_id = 0xb1,
				 .send_flags = IBV_SEND_SIGNALED };
	uint32_t old = mw->rkey;
	struct ibv_wc wc;
	int rc;

	b.bind_info = (struct ibv_mw_bind_info){
		.mr = s->mr,
		.addr = (uintptr_t)s->buf + off,
		.length = len,
		.mw_access_flags = access,
	};
	rc = ibv_bind_mw(s->qp, mw, &b);
	if (rc)
		vc_die("ibv_bind_mw: %s", strerror(rc));
	if (mw->rkey == old)
		vc_die("ibv_bind_mw: the rkey did not change");
	wc = wait_wc(s);
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_BIND_MW)
		vc_die("ibv_bind_mw: %s", vc_st(wc.status));
}

/* The client reports what it did; it must be @want. */
static void expect_report(struct side *s, uint32_t op, uint32_t want,
			  const char *what)
{
	struct msg m = recv_msg(s);

	if (m.op != op || m.status != want)
		vc_die("%s: the client's op %u completed %s, not %s", what,
		       m.op, vc_st(m.status), vc_st(want));
}

static void server_attrs(struct side *s)
{
	uint64_t need = IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;

	if ((s->d.attr.device_cap_flags & need) != need ||
	    s->d.attr.max_mw <= 0)
		vc_die("attrs: device_cap_flags %#x, max_mw %d",
		       s->d.attr.device_cap_flags, s->d.attr.max_mw);
	errno = 0;
	if (ibv_alloc_mw(s->pd, (enum ibv_mw_type)3) || errno != EINVAL)
		vc_die("attrs: ibv_alloc_mw of type 3: %s", strerror(errno));
	printf("verbs_mw: attrs: ok (max_mw %d)\n", s->d.attr.max_mw);
}

static int run_server(int port, const char *dev)
{
	struct side s = { .server = true };
	static uint8_t want[BUF];
	struct ibv_mw *w1, *w2;
	struct ibv_mr *mr2, *plain;
	struct ibv_pd *pd2;
	struct ibv_wc wc;
	uint32_t rk;

	vc_open(&s.d, dev);
	s.fd = vc_tcp_server(port);
	s.pd = ibv_alloc_pd(s.d.ctx);
	s.cq = ibv_create_cq(s.d.ctx, 64, NULL, NULL, 0);
	s.buf = aligned_alloc(4096, BUF);
	if (!s.pd || !s.cq || !s.buf)
		vc_die("pd/cq/buffer: %s", strerror(errno));
	memset(s.buf, GUARD, BUF);
	s.mr = ibv_reg_mr(s.pd, s.buf, BUF,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	if (!s.mr)
		vc_die("ibv_reg_mr(MW_BIND): %s", strerror(errno));
	server_attrs(&s);
	w1 = ibv_alloc_mw(s.pd, IBV_MW_TYPE_1);
	w2 = ibv_alloc_mw(s.pd, IBV_MW_TYPE_2);
	if (!w1 || !w2)
		vc_die("ibv_alloc_mw: %s", strerror(errno));

	/* type2: the window, then one byte past it */
	reconnect(&s);
	if (bind2(&s, w2, s.mr, WOFF, WLEN,
		  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &rk))
		vc_die("type2: bind failed");
	send_msg(&s, 0, rk, (uintptr_t)s.buf + WOFF, WLEN, 0);
	expect_report(&s, OP_WRITE, IBV_WC_SUCCESS, "type2 write");
	expect(want, WOFF, WLEN, 1);
	check_buf(&s, want, "type2 write");
	expect_report(&s, OP_READ, IBV_WC_SUCCESS, "type2 read");
	expect_report(&s, OP_WRITE, IBV_WC_REM_ACCESS_ERR, "type2 past end");
	check_buf(&s, want, "type2 past end");
	printf("verbs_mw: type2: ok\n");

	/* type1: READ, re-bound elsewhere, the old rkey refused */
	reconnect(&s);
	memset(s.buf, GUARD, BUF);
	vc_fill(s.buf, 4096, 77, 2);
	vc_fill(s.buf + 8192, 4096, 77, 3);
	memcpy(want, s.buf, BUF);
	bind1(&s, w1, 0, 4096, IBV_ACCESS_REMOTE_READ);
	rk = w1->rkey;
	send_msg(&s, 0, rk, (uintptr_t)s.buf, 4096, 0);
	expect_report(&s, OP_READ, IBV_WC_SUCCESS, "type1 read");
	bind1(&s, w1, 8192, 4096, IBV_ACCESS_REMOTE_READ);
	send_msg(&s, 0, w1->rkey, (uintptr_t)s.buf + 8192, 4096, 0);
	expect_report(&s, OP_READ, IBV_WC_SUCCESS, "type1 re-bound read");
	send_msg(&s, 0, rk, (uintptr_t)s.buf, 4096, 0);
	expect_report(&s, OP_READ, IBV_WC_REM_ACCESS_ERR, "type1 old rkey");
	check_buf(&s, want, "type1");
	printf("verbs_mw: type1: ok\n");

	/* access: a READ-only window refuses a WRITE */
	reconnect(&s);
	bind1(&s, w1, 0, 4096, IBV_ACCESS_REMOTE_READ);
	send_msg(&s, 0, w1->rkey, (uintptr_t)s.buf, 4096, 0);
	expect_report(&s, OP_WRITE, IBV_WC_REM_ACCESS_ERR, "access");
	check_buf(&s, want, "access");
	printf("verbs_mw: access: ok\n");

	/* local-inv */
	reconnect(&s);
	if (ibv_dealloc_mw(w2))
		vc_die("ibv_dealloc_mw: %s", strerror(errno));
	w2 = ibv_alloc_mw(s.pd, IBV_MW_TYPE_2);
	if (!w2 ||
	    bind2(&s, w2, s.mr, WOFF, WLEN, IBV_ACCESS_REMOTE_WRITE, &rk))
		vc_die("local-inv: alloc or bind failed");
	{
		struct ibv_send_wr wr = { .wr_id = 0x11,
					  .opcode = IBV_WR_LOCAL_INV,
					  .send_flags = IBV_SEND_SIGNALED,
					  .invalidate_rkey = rk },
				   *bad;

		if (ibv_post_send(s.qp, &wr, &bad))
			vc_die("post LOCAL_INV: %s", strerror(errno));
		wc = wait_wc(&s);
		if (wc.status != IBV_WC_SUCCESS ||
		    wc.opcode != IBV_WC_LOCAL_INV)
			vc_die("LOCAL_INV: %s", vc_st(wc.status));
	}
	send_msg(&s, 0, rk, (uintptr_t)s.buf + WOFF, 64, 0);
	expect_report(&s, OP_WRITE, IBV_WC_REM_ACCESS_ERR, "local-inv");
	check_buf(&s, want, "local-inv");
	printf("verbs_mw: local-inv: ok\n");

	/* remote-inv: bound again (it is free), then invalidated by the
	 * client's SEND_WITH_INV */
	reconnect(&s);
	if (bind2(&s, w2, s.mr, WOFF, WLEN, IBV_ACCESS_REMOTE_WRITE, &rk))
		vc_die("remote-inv: bind failed");
	{
		struct ibv_sge sge = { (uintptr_t)s.buf + BUF - 64, 64,
				       s.mr->lkey };
		struct ibv_recv_wr r = { .wr_id = 0x77,
					 .sg_list = &sge,
					 .num_sge = 1 },
				   *bad;

		if (ibv_post_recv(s.qp, &r, &bad))
			vc_die("post_recv: %s", strerror(errno));
	}
	send_msg(&s, 0, rk, (uintptr_t)s.buf + WOFF, 64, 0);
	expect_report(&s, OP_SEND_INV, IBV_WC_SUCCESS, "remote-inv send");
	wc = wait_wc(&s);
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
	    !(wc.wc_flags & IBV_WC_WITH_INV) || wc.invalidated_rkey != rk ||
	    wc.byte_len != 0)
		vc_die("remote-inv: receive %s, flags %#x, rkey %#x (want %#x)",
		       vc_st(wc.status), wc.wc_flags, wc.invalidated_rkey, rk);
	send_msg(&s, 0, rk, (uintptr_t)s.buf + WOFF, 64, 0);
	expect_report(&s, OP_WRITE, IBV_WC_REM_ACCESS_ERR, "remote-inv");
	check_buf(&s, want, "remote-inv");
	printf("verbs_mw: remote-inv: ok\n");

	/* dealloc: EBUSY while bound */
	reconnect(&s);
	mr2 = ibv_reg_mr(s.pd, s.buf, BUF,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	if (!mr2 ||
	    bind2(&s, w2, mr2, WOFF, WLEN, IBV_ACCESS_REMOTE_WRITE, &rk))
		vc_die("dealloc: reg or bind failed");
	if (ibv_dereg_mr(mr2) != EBUSY)
		vc_die("dealloc: ibv_dereg_mr with a window bound is not EBUSY");
	if (ibv_dealloc_mw(w2))
		vc_die("ibv_dealloc_mw: %s", strerror(errno));
	send_msg(&s, 0, rk, (uintptr_t)s.buf + WOFF, 64, 0);
	expect_report(&s, OP_WRITE, IBV_WC_REM_ACCESS_ERR, "dealloc");
	if (ibv_dereg_mr(mr2))
		vc_die("dealloc: ibv_dereg_mr after: %s", strerror(errno));
	check_buf(&s, want, "dealloc");
	printf("verbs_mw: dealloc: ok\n");

	/* bind-err: the server alone */
	w2 = ibv_alloc_mw(s.pd, IBV_MW_TYPE_2);
	plain = ibv_reg_mr(s.pd, s.buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	pd2 = ibv_alloc_pd(s.d.ctx);
	if (!w2 || !plain || !pd2)
		vc_die("bind-err: %s", strerror(errno));
	reconnect(&s);
	if (bind2(&s, w2, plain, 0, 64, IBV_ACCESS_REMOTE_READ, &rk) !=
	    IBV_WC_MW_BIND_ERR)
		vc_die("bind-err: a region without MW_BIND was bound");
	reconnect(&s);
	if (bind2(&s, w2, s.mr, BUF - 32, 64, IBV_ACCESS_REMOTE_READ, &rk) !=
	    IBV_WC_MW_BIND_ERR)
		vc_die("bind-err: a window past the region was bound");
	reconnect(&s);
	{
		struct ibv_mr *other =
			ibv_reg_mr(pd2, s.buf, 4096,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
		struct ibv_mw_bind b = { .wr_id = 1 };
		int rc;

		if (!other)
			vc_die("bind-err: reg in pd2: %s", strerror(errno));
		b.bind_info = (struct ibv_mw_bind_info){
			.mr = other, .addr = (uintptr_t)s.buf, .length = 64
		};
		rc = ibv_bind_mw(s.qp, w1, &b);
		if (rc != EPERM)
			vc_die("bind-err: a region of another PD: %s",
			       strerror(rc));
		ibv_dereg_mr(other);
	}
	printf("verbs_mw: bind-err: ok\n");
	send_msg(&s, OP_DONE, 0, 0, 0, 0);

	ibv_destroy_qp(s.qp);
	if (ibv_dealloc_mw(w1) || ibv_dealloc_mw(w2) || ibv_dereg_mr(plain) ||
	    ibv_dereg_mr(s.mr) || ibv_dealloc_pd(pd2))
		vc_die("teardown: %s", strerror(errno));
	ibv_destroy_cq(s.cq);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.d.ctx);
	printf("verbs_mw: PASS: 8 cases\n");
	return 0;
}

/* ---- the client ---------------------------------------------------------- */

/* @op through @m's window; the status; READ data land at buf. */
static uint32_t remote_op(struct side *s, uint32_t op, const struct msg *m,
			  uint64_t len)
{
	struct ibv_sge sge = { (uintptr_t)s->buf, (uint32_t)len, s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = op,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc;

	if (op == OP_SEND_INV) {
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.invalidate_rkey = m->rkey;
		wr.num_sge = 0;
	} else {
		wr.opcode = op == OP_WRITE ? IBV_WR_RDMA_WRITE :
					     IBV_WR_RDMA_READ;
		wr.wr.rdma.rkey = m->rkey;
		wr.wr.rdma.remote_addr = m->va;
	}
	if (ibv_post_send(s->qp, &wr, &bad))
		vc_die("post_send: %s", strerror(errno));
	wc = wait_wc(s);
	send_msg(s, op, 0, 0, 0, wc.status);
	return wc.status;
}

static int run_client(const char *host, int port, const char *dev)
{
	struct side s = { .server = false };
	struct msg m;

	vc_open(&s.d, dev);
	s.fd = vc_tcp_client(host, port);
	s.pd = ibv_alloc_pd(s.d.ctx);
	s.cq = ibv_create_cq(s.d.ctx, 64, NULL, NULL, 0);
	s.buf = aligned_alloc(4096, BUF);
	if (!s.pd || !s.cq || !s.buf)
		vc_die("pd/cq/buffer: %s", strerror(errno));
	s.mr = ibv_reg_mr(s.pd, s.buf, BUF,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ);
	if (!s.mr)
		vc_die("ibv_reg_mr: %s", strerror(errno));

	/* type2 */
	reconnect(&s);
	m = recv_msg(&s);
	vc_fill(s.buf, WLEN, 77, 1);
	remote_op(&s, OP_WRITE, &m, WLEN);
	memset(s.buf, 0, WLEN);
	m.va += 100;
	if (remote_op(&s, OP_READ, &m, 3000) == IBV_WC_SUCCESS) {
		static uint8_t all[WLEN];

		vc_fill(all, WLEN, 77, 1);
		if (memcmp(s.buf, all + 100, 3000))
			vc_die("type2: READ through the window differs");
	}
	m.va += WLEN - 100 - 8;
	remote_op(&s, OP_WRITE, &m, 9);

	/* type1 */
	reconnect(&s);
	for (int i = 0; i < 3; i++) {
		uint8_t want[4096];

		m = recv_msg(&s);
		memset(s.buf, 0, 4096);
		if (remote_op(&s, OP_READ, &m, 4096) == IBV_WC_SUCCESS) {
			vc_fill(want, 4096, 77, (uint64_t)(2 + i));
			if (memcmp(s.buf, want, 4096))
				vc_die("type1: READ %d differs", i);
		}
	}

	/* access */
	reconnect(&s);
	m = recv_msg(&s);
	remote_op(&s, OP_WRITE, &m, 64);

	/* local-inv */
	reconnect(&s);
	m = recv_msg(&s);
	remote_op(&s, OP_WRITE, &m, 64);

	/* remote-inv */
	reconnect(&s);
	m = recv_msg(&s);
	remote_op(&s, OP_SEND_INV, &m, 0);
	m = recv_msg(&s);
	remote_op(&s, OP_WRITE, &m, 64);

	/* dealloc */
	reconnect(&s);
	m = recv_msg(&s);
	remote_op(&s, OP_WRITE, &m, 64);

	/* bind-err: three connections, then the end */
	for (int i = 0; i < 3; i++)
		reconnect(&s);
	m = recv_msg(&s);
	if (m.op != OP_DONE)
		vc_die("the server did not finish");
	ibv_destroy_qp(s.qp);
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(s.cq);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.d.ctx);
	printf("verbs_mw: PASS: 8 cases\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "port", 1, NULL, 'p' },
					    { "dev", 1, NULL, 'd' },
					    { NULL, 0, NULL, 0 } };
	const char *addr = NULL, *dev = NULL;
	int port = 18600, c;
	bool server;

	vc_prog = "verbs_mw";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2 ||
	    (strcmp(argv[1], "server") && strcmp(argv[1], "client")))
		goto usage;
	server = !strcmp(argv[1], "server");
	if (!server) {
		if (argc < 3)
			goto usage;
		addr = argv[2];
	}
	optind = server ? 2 : 3;
	while ((c = getopt_long(argc, argv, "p:d:", lo, NULL)) != -1) {
		if (c == 'p')
			port = atoi(optarg);
		else if (c == 'd')
			dev = optarg;
		else
			goto usage;
	}
	return server ? run_server(port, dev) : run_client(addr, port, dev);
usage:
	fprintf(stderr, "usage: verbs_mw server [-p PORT] [-d DEV]\n"
			"       verbs_mw client ADDR [-p PORT] [-d DEV]\n");
	return 2;
}
