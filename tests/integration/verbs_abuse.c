// SPDX-License-Identifier: MIT
/*
 * verbs_abuse: what an ordinary libibverbs program sees when it misuses
 * the verbs (docs/PROVIDER.md section 6 and its error table). Every case
 * must give the documented error, never a crash or a hang, and the
 * device must keep working: the run ends with a good transfer.
 *
 *   verbs_abuse server [-p PORT] [-d DEV]
 *   verbs_abuse client ADDR [-p PORT] [-d DEV] [--case N]
 *
 * The server is an executor: over the out-of-band TCP connection the
 * client asks it for a QP with given access flags, RNR timer and posted
 * receives, to connect it, to report what its receives completed with,
 * which asynchronous events it got and its QP's state, to deregister a
 * region, to check memory. The client runs the cases in order, each on
 * fresh QPs; a failed check is printed and the run goes on with the next
 * case, exiting 1 at the end.
 */
#include <fcntl.h>
#include <getopt.h>

#include "verbs_common.h"

#define MAGIC 0x6f766162u
#define BUF_LEN (1u << 20)
#define RSLOT (64u << 10) /* a server receive buffer */
#define MAX_REP 16

/* ---- protocol --------------------------------------------------------- */

enum {
	C_NEWQP = 1,
	C_CONNECT,
	C_POSTRECV,
	C_REPORT,
	C_DESTROYQP,
	C_DEREG_VICTIM,
	C_NEWVICTIM,
	C_CHECK,
	C_FILL,
	C_QUIT
};

struct cmd {
	uint32_t op;
	uint32_t access; /* NEWQP: the QP's access flags */
	uint32_t min_rnr; /* NEWQP */
	uint32_t nrecv, recv_len; /* NEWQP, POSTRECV */
	uint32_t bad_lkey; /* POSTRECV: with a wrong lkey */
	uint32_t want, wait_ms; /* REPORT */
	uint32_t pad;
	uint64_t off, len, seed; /* CHECK, FILL: in the server's buffer */
	struct vc_qpinfo peer; /* CONNECT */
};

struct rwc {
	uint32_t status, opcode, byte_len, pad;
	uint64_t wr_id;
};

struct rep {
	int32_t rc;
	int32_t qp_state;
	uint32_t nwc, nev;
	struct rwc wc[MAX_REP];
	uint32_t ev[MAX_REP];
	struct vc_qpinfo info;
	uint64_t addr;
	uint32_t rkey, pad;
};

/* The server's regions, all BUF_LEN bytes. */
struct srv_mrs {
	uint32_t magic, pad;
	uint64_t addr[5];
	uint32_t rkey[5];
};
enum { M_ALL, M_NOWRITE, M_NOREAD, M_NOATOMIC, M_LOCAL, M_N };
static const int mr_access[M_N] = {
	[M_ALL] = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	[M_NOWRITE] = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
		      IBV_ACCESS_REMOTE_ATOMIC,
	[M_NOREAD] = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_ATOMIC,
	[M_NOATOMIC] = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_REMOTE_READ,
	[M_LOCAL] = IBV_ACCESS_LOCAL_WRITE,
};

#define QP_ALL                                              \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static struct vc_dev dev;
static struct ibv_pd *pd;
static int oob;

static void drain_async(uint32_t *ev, uint32_t *nev, int wait_ms)
{
	struct ibv_async_event e;

	while (vc_readable(dev.ctx->async_fd, wait_ms)) {
		if (ibv_get_async_event(dev.ctx, &e))
			break;
		if (ev && *nev < MAX_REP)
			ev[(*nev)++] = e.event_type;
		printf("%s: async event %s (%d)\n", vc_prog,
		       ibv_event_type_str(e.event_type), e.event_type);
		ibv_ack_async_event(&e);
		wait_ms = 0;
	}
}

/* ---- the server ------------------------------------------------------------ */

static uint8_t *sbuf[M_N], *rbuf, *vbuf;
static struct ibv_mr *smr[M_N], *rmr, *vmr;
static struct ibv_qp *sqp;
static struct ibv_cq *sscq, *srcq;
static uint32_t srecv_n;

static void srv_post_recv(uint32_t n, uint32_t len, bool bad_lkey)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t slot = srecv_n++ % (BUF_LEN / RSLOT);
		struct ibv_sge sg = { .addr = (uintptr_t)(rbuf + slot * RSLOT),
				      .length = len,
				      .lkey = bad_lkey ? rmr->lkey ^ 0x77700 :
							 rmr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 1000 + srecv_n - 1,
					  .sg_list = &sg,
					  .num_sge = 1 },
				   *bad;
		int rc = ibv_post_recv(sqp, &wr, &bad);

		if (rc)
			printf("%s: server post_recv: %s\n", vc_prog,
			       strerror(rc));
	}
}

static void srv_destroy_qp(void)
{
	if (!sqp)
		return;
	drain_async(NULL, NULL, 0);
	if (ibv_destroy_qp(sqp))
		vc_die("server destroy_qp: %s", strerror(errno));
	ibv_destroy_cq(sscq);
	ibv_destroy_cq(srcq);
	sqp = NULL;
}

static void srv_cmd(const struct cmd *c, struct rep *r)
{
	struct vc_path path = vc_path_default();

	memset(r, 0, sizeof(*r));
	switch (c->op) {
	case C_NEWQP: {
		struct ibv_qp_init_attr a = {
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16,
				 .max_recv_wr = 64,
				 .max_send_sge = 4,
				 .max_recv_sge = 4 },
		};

		srv_destroy_qp();
		sscq = ibv_create_cq(dev.ctx, 64, NULL, NULL, 0);
		srcq = ibv_create_cq(dev.ctx, 128, NULL, NULL, 0);
		a.send_cq = sscq;
		a.recv_cq = srcq;
		sqp = sscq && srcq ? ibv_create_qp(pd, &a) : NULL;
		if (!sqp) {
			r->rc = errno;
			break;
		}
		srecv_n = 0;
		vc_qpinfo_of(&dev, sqp, 0x1000, &r->info);
		/* the access flags and RNR timer go in with CONNECT */
		r->rc = 0;
		break;
	}
	case C_CONNECT:
		path.access = (int)c->access;
		path.min_rnr_timer = (uint8_t)c->min_rnr;
		r->rc = vc_connect(&dev, sqp, 0x1000, &c->peer, &path, true);
		if (!r->rc)
			srv_post_recv(c->nrecv, c->recv_len, false);
		break;
	case C_POSTRECV:
		srv_post_recv(c->nrecv, c->recv_len, c->bad_lkey);
		break;
	case C_REPORT: {
		double end = vc_now() + c->wait_ms / 1000.0;

		while (sqp) {
			struct ibv_wc wc;
			int n = ibv_poll_cq(srcq, 1, &wc);

			if (n == 1 && r->nwc < MAX_REP) {
				r->wc[r->nwc++] = (struct rwc){
					.status = wc.status,
					.opcode = wc.opcode,
					.byte_len = wc.byte_len,
					.wr_id = wc.wr_id,
				};
				continue;
			}
			if (r->nwc >= c->want || vc_now() > end)
				break;
			usleep(200);
		}
		drain_async(r->ev, &r->nev, (int)(c->want ? 0 : 20));
		r->qp_state = sqp ? (int32_t)vc_qp_state(sqp) : -1;
		break;
	}
	case C_DESTROYQP:
		srv_destroy_qp();
		break;
	case C_NEWVICTIM:
		vbuf = aligned_alloc(4096, BUF_LEN);
		memset(vbuf, 0x3c, BUF_LEN);
		vmr = ibv_reg_mr(pd, vbuf, BUF_LEN, mr_access[M_ALL]);
		r->rc = vmr ? 0 : errno;
		if (vmr) {
			r->addr = (uintptr_t)vbuf;
			r->rkey = vmr->rkey;
		}
		break;
	case C_DEREG_VICTIM:
		r->rc = vmr ? ibv_dereg_mr(vmr) : ENOENT;
		if (!r->rc)
			vmr = NULL;
		/* the memory stays allocated: the test is the key */
		break;
	case C_FILL:
		vc_fill(sbuf[M_ALL] + c->off, c->len, c->seed, 7);
		break;
	case C_CHECK: {
		uint8_t *want = malloc(c->len);

		vc_fill(want, c->len, c->seed, 7);
		r->rc = memcmp(want, sbuf[M_ALL] + c->off, c->len) ? EIO : 0;
		free(want);
		break;
	}
	default:
		r->rc = EINVAL;
	}
}

static int run_server(int port)
{
	struct srv_mrs m = { .magic = MAGIC };
	struct cmd c;
	struct rep r;

	pd = ibv_alloc_pd(dev.ctx);
	if (!pd)
		vc_die("alloc_pd: %s", strerror(errno));
	for (int i = 0; i < M_N; i++) {
		sbuf[i] = aligned_alloc(4096, BUF_LEN);
		memset(sbuf[i], 0x11 * (i + 1), BUF_LEN);
		smr[i] = ibv_reg_mr(pd, sbuf[i], BUF_LEN, mr_access[i]);
		if (!smr[i])
			vc_die("reg_mr: %s", strerror(errno));
		m.addr[i] = (uintptr_t)sbuf[i];
		m.rkey[i] = smr[i]->rkey;
	}
	rbuf = aligned_alloc(4096, BUF_LEN);
	memset(rbuf, 0, BUF_LEN);
	rmr = ibv_reg_mr(pd, rbuf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!rmr)
		vc_die("reg_mr: %s", strerror(errno));
	fcntl(dev.ctx->async_fd, F_SETFL,
	      fcntl(dev.ctx->async_fd, F_GETFL) | O_NONBLOCK);
	oob = vc_tcp_server(port);
	vc_send_all(oob, &m, sizeof(m));
	for (;;) {
		if (vc_recv_all(oob, &c, sizeof(c)) || c.op == C_QUIT)
			break;
		srv_cmd(&c, &r);
		vc_send_all(oob, &r, sizeof(r));
	}
	srv_destroy_qp();
	if (vmr)
		ibv_dereg_mr(vmr);
	for (int i = 0; i < M_N; i++)
		ibv_dereg_mr(smr[i]);
	ibv_dereg_mr(rmr);
	if (ibv_dealloc_pd(pd))
		vc_die("server dealloc_pd: %s", strerror(errno));
	ibv_close_device(dev.ctx);
	printf("%s: PASS: server stayed up through every case\n", vc_prog);
	return 0;
}

/* ---- the client: helpers --------------------------------------------------- */

static struct srv_mrs S;
static uint8_t *lbuf;
static struct ibv_mr *lmr;
static int nfail, ncase;
static const char *case_name;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("%s: case %d (%s): FAIL at line %d: ", vc_prog, \
			       ncase, case_name, __LINE__);                    \
			printf(__VA_ARGS__);                                   \
			putchar('\n');                                         \
			nfail++;                                               \
			return -1;                                             \
		}                                                              \
	} while (0)

static void ask(struct cmd *c, struct rep *r)
{
	vc_send_all(oob, c, sizeof(*c));
	vc_recv_must(oob, r, sizeof(*r));
}

struct cqp {
	struct ibv_qp *qp;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp_cap cap;
};

static int new_qp(struct cqp *c, int scqe, uint32_t sq, uint32_t rq)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = sq,
			 .max_recv_wr = rq,
			 .max_send_sge = 4,
			 .max_recv_sge = 4,
			 .max_inline_data = 64 },
	};

	memset(c, 0, sizeof(*c));
	c->scq = ibv_create_cq(dev.ctx, scqe, NULL, NULL, 0);
	c->rcq = ibv_create_cq(dev.ctx, 64, NULL, NULL, 0);
	if (!c->scq || !c->rcq)
		return -1;
	a.send_cq = c->scq;
	a.recv_cq = c->rcq;
	c->qp = ibv_create_qp(pd, &a);
	if (!c->qp)
		return -1;
	c->cap = a.cap;
	return 0;
}

static void free_qp(struct cqp *c)
{
	drain_async(NULL, NULL, 0);
	if (c->qp && ibv_destroy_qp(c->qp))
		printf("%s: destroy_qp: %s\n", vc_prog, strerror(errno));
	if (c->scq && ibv_destroy_cq(c->scq))
		printf("%s: destroy_cq: %s\n", vc_prog, strerror(errno));
	if (c->rcq && ibv_destroy_cq(c->rcq))
		printf("%s: destroy_cq: %s\n", vc_prog, strerror(errno));
	memset(c, 0, sizeof(*c));
}

struct pairopt {
	uint32_t srv_access; /* the server QP's access flags */
	uint32_t min_rnr; /* the server's */
	uint32_t nrecv, recv_len; /* receives the server posts */
	uint8_t rnr_retry, retry_cnt, timeout; /* the client's */
	int scqe;
	uint32_t sq;
};

static struct pairopt popt(void)
{
	return (struct pairopt){ .srv_access = QP_ALL,
				 .min_rnr = 1,
				 .nrecv = 4,
				 .recv_len = RSLOT,
				 .rnr_retry = 7,
				 .retry_cnt = 7,
				 .timeout = 14,
				 .scqe = 64,
				 .sq = 32 };
}

/* A client QP connected to a fresh server QP. */
static int pair(struct cqp *c, const struct pairopt *o)
{
	struct cmd cm = { .op = C_NEWQP };
	struct rep r;
	struct vc_path p = vc_path_default();
	struct vc_qpinfo mine;
	int rc;

	if (new_qp(c, o->scqe, o->sq, 16))
		return -1;
	ask(&cm, &r);
	if (r.rc) {
		printf("%s: server NEWQP: %s\n", vc_prog, strerror(r.rc));
		return -1;
	}
	p.rnr_retry = o->rnr_retry;
	p.retry_cnt = o->retry_cnt;
	p.timeout = o->timeout;
	rc = vc_connect(&dev, c->qp, 0x2000, &r.info, &p, true);
	if (rc) {
		printf("%s: connect: %s\n", vc_prog, strerror(rc));
		return -1;
	}
	vc_qpinfo_of(&dev, c->qp, 0x2000, &mine);
	cm = (struct cmd){ .op = C_CONNECT,
			   .access = o->srv_access,
			   .min_rnr = o->min_rnr,
			   .nrecv = o->nrecv,
			   .recv_len = o->recv_len,
			   .peer = mine };
	ask(&cm, &r);
	if (r.rc) {
		printf("%s: server CONNECT: %s\n", vc_prog, strerror(r.rc));
		return -1;
	}
	return 0;
}

static void srv_report(struct rep *r, uint32_t want, uint32_t wait_ms)
{
	struct cmd c = { .op = C_REPORT, .want = want, .wait_ms = wait_ms };

	ask(&c, r);
}

static void srv_simple(uint32_t op)
{
	struct cmd c = { .op = op };
	struct rep r;

	ask(&c, &r);
}

/* Up to @n completions within @secs. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, double secs)
{
	double end = vc_now() + secs;
	int got = 0;

	while (got < n) {
		int k = ibv_poll_cq(cq, n - got, wc + got);

		if (k < 0)
			return -1;
		got += k;
		if (!k) {
			if (vc_now() > end)
				break;
			usleep(100);
		}
	}
	return got;
}

static struct ibv_sge lsge(uint64_t off, uint32_t len)
{
	return (struct ibv_sge){ .addr = (uintptr_t)(lbuf + off),
				 .length = len,
				 .lkey = lmr->lkey };
}

static int post1(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		 struct ibv_sge *sg, int nsge, uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = wr_id,
				  .sg_list = sg,
				  .num_sge = nsge,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad = NULL;

	if (op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
		wr.wr.atomic.swap = 2;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

/*
 * Post @op (wr_id 1) then a good WRITE (2) and a SEND (3); the first must
 * complete with @st, the others flush, the QP must be in ERROR, a later
 * post must flush too; the server must see @srv_st on its first receive
 * (or nothing with -1), and event @srv_ev (or none with -1).
 */
static int expect_fail(struct cqp *c, enum ibv_wr_opcode op, struct ibv_sge *sg,
		       uint64_t raddr, uint32_t rkey, enum ibv_wc_status st,
		       int srv_st, int srv_ev)
{
	struct ibv_sge good = lsge(0, 64), good2 = lsge(64, 64);
	struct ibv_send_wr w[3], *bad = NULL;
	struct ibv_wc wc[4];
	struct ibv_recv_wr rw = { .wr_id = 77,
				  .sg_list = &good2,
				  .num_sge = 1 },
			   *rbad;
	struct rep r;
	int n, rc;

	memset(w, 0, sizeof(w));
	w[0] = (struct ibv_send_wr){ .wr_id = 1,
				     .next = &w[1],
				     .sg_list = sg,
				     .num_sge = 1,
				     .opcode = op,
				     .send_flags = IBV_SEND_SIGNALED };
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		w[0].wr.atomic.remote_addr = raddr;
		w[0].wr.atomic.rkey = rkey;
	} else {
		w[0].wr.rdma.remote_addr = raddr;
		w[0].wr.rdma.rkey = rkey;
	}
	w[1] = (struct ibv_send_wr){ .wr_id = 2,
				     .next = &w[2],
				     .sg_list = &good,
				     .num_sge = 1,
				     .opcode = IBV_WR_RDMA_WRITE,
				     .send_flags = IBV_SEND_SIGNALED };
	w[1].wr.rdma.remote_addr = S.addr[M_ALL];
	w[1].wr.rdma.rkey = S.rkey[M_ALL];
	w[2] = (struct ibv_send_wr){ .wr_id = 3,
				     .sg_list = &good,
				     .num_sge = 1,
				     .opcode = IBV_WR_SEND,
				     .send_flags = IBV_SEND_SIGNALED };
	rc = ibv_post_send(c->qp, w, &bad);
	CHECK(!rc, "post_send: %s", strerror(rc));
	n = poll_n(c->scq, wc, 3, 10);
	CHECK(n == 3, "%d of 3 completions within 10 s", n);
	CHECK(wc[0].wr_id == 1 && wc[0].status == st,
	      "first completion wr_id %" PRIu64 " %s, expected wr_id 1 %s",
	      wc[0].wr_id, vc_st(wc[0].status), vc_st(st));
	for (int i = 1; i < 3; i++)
		CHECK(wc[i].wr_id == (uint64_t)i + 1 &&
			      wc[i].status == IBV_WC_WR_FLUSH_ERR,
		      "completion %d: wr_id %" PRIu64
		      " %s, expected %d flushed",
		      i, wc[i].wr_id, vc_st(wc[i].status), i + 1);
	CHECK(vc_qp_state(c->qp) == IBV_QPS_ERR, "QP state %d, not ERROR",
	      vc_qp_state(c->qp));
	/* verbs: work posted to a QP in ERROR completes flushed */
	rc = post1(c->qp, IBV_WR_RDMA_WRITE, 4, &good, 1, S.addr[M_ALL],
		   S.rkey[M_ALL]);
	CHECK(!rc, "post_send in ERROR: %s (must succeed and flush)",
	      strerror(rc));
	rc = ibv_post_recv(c->qp, &rw, &rbad);
	CHECK(!rc, "post_recv in ERROR: %s (must succeed and flush)",
	      strerror(rc));
	n = poll_n(c->scq, wc, 1, 5);
	CHECK(n == 1 && wc[0].wr_id == 4 && wc[0].status == IBV_WC_WR_FLUSH_ERR,
	      "send posted in ERROR: %d completions, %s", n,
	      n ? vc_st(wc[0].status) : "-");
	n = poll_n(c->rcq, wc, 1, 5);
	CHECK(n == 1 && wc[0].wr_id == 77 &&
		      wc[0].status == IBV_WC_WR_FLUSH_ERR,
	      "receive posted in ERROR: %d completions, %s", n,
	      n ? vc_st(wc[0].status) : "-");
	srv_report(&r, srv_st >= 0 ? 1 : 0, srv_st >= 0 ? 3000 : 50);
	if (srv_st >= 0) {
		CHECK(r.nwc >= 1 && r.wc[0].status == (uint32_t)srv_st,
		      "server's first receive: %s, expected %s",
		      r.nwc ? vc_st(r.wc[0].status) : "none",
		      vc_st((enum ibv_wc_status)srv_st));
		CHECK(r.qp_state == IBV_QPS_ERR,
		      "server QP state %d, expected ERROR", r.qp_state);
	}
	if (srv_ev >= 0) {
		bool seen = false;

		for (uint32_t i = 0; i < r.nev; i++)
			seen |= r.ev[i] == (uint32_t)srv_ev;
		CHECK(seen, "server did not get event %s",
		      ibv_event_type_str((enum ibv_event_type)srv_ev));
	}
	return 0;
}

/* ---- the cases ----------------------------------------------------------------- */

/* wrong rkey on WRITE, READ, atomic */
static int case_bad_rkey(void)
{
	static const enum ibv_wr_opcode ops[] = { IBV_WR_RDMA_WRITE,
						  IBV_WR_RDMA_READ,
						  IBV_WR_ATOMIC_CMP_AND_SWP };

	for (int i = 0; i < 3; i++) {
		struct pairopt o = popt();
		struct ibv_sge sg = lsge(
			4096, ops[i] == IBV_WR_ATOMIC_CMP_AND_SWP ? 8 : 512);
		struct cqp c;
		int rc;

		CHECK(!pair(&c, &o), "setup");
		rc = expect_fail(&c, ops[i], &sg, S.addr[M_ALL],
				 S.rkey[M_ALL] ^ 0x00ab0000,
				 IBV_WC_REM_ACCESS_ERR, IBV_WC_WR_FLUSH_ERR,
				 IBV_EVENT_QP_ACCESS_ERR);
		free_qp(&c);
		if (rc)
			return rc;
	}
	return 0;
}

/* remote address or length outside the region */
static int case_remote_bounds(void)
{
	struct {
		enum ibv_wr_opcode op;
		uint64_t addr;
		uint32_t len;
		const char *what;
	} t[] = {
		{ IBV_WR_RDMA_WRITE, S.addr[M_ALL] + BUF_LEN - 100, 200,
		  "WRITE across the end" },
		{ IBV_WR_RDMA_READ, S.addr[M_ALL] - 8, 64,
		  "READ before the start" },
		{ IBV_WR_RDMA_READ, S.addr[M_ALL] + 4096, 2 * BUF_LEN,
		  "READ longer than the region" },
		{ IBV_WR_ATOMIC_CMP_AND_SWP, S.addr[M_ALL] + BUF_LEN, 8,
		  "atomic just past the end" },
		/* known at the requester: the responder never hears of it */
		{ IBV_WR_RDMA_WRITE, UINT64_MAX - 16, 64,
		  "WRITE wrapping the address space" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct pairopt o = popt();
		struct ibv_sge sg = lsge(0, t[i].len);
		struct cqp c;
		int rc;

		case_name = t[i].what;
		CHECK(!pair(&c, &o), "setup");
		bool wraps = t[i].addr + t[i].len < t[i].addr;

		rc = expect_fail(&c, t[i].op, &sg, t[i].addr, S.rkey[M_ALL],
				 IBV_WC_REM_ACCESS_ERR,
				 wraps ? -1 : IBV_WC_WR_FLUSH_ERR,
				 wraps ? -1 : IBV_EVENT_QP_ACCESS_ERR);
		free_qp(&c);
		if (rc)
			return rc;
	}
	return 0;
}

/* the remote region or the remote QP lacks the right */
static int case_remote_rights(void)
{
	struct {
		enum ibv_wr_opcode op;
		int mr;
		uint32_t qp_access;
		const char *what;
	} t[] = {
		{ IBV_WR_RDMA_WRITE, M_NOWRITE, QP_ALL,
		  "WRITE, MR without REMOTE_WRITE" },
		{ IBV_WR_RDMA_READ, M_NOREAD, QP_ALL,
		  "READ, MR without REMOTE_READ" },
		{ IBV_WR_ATOMIC_CMP_AND_SWP, M_NOATOMIC, QP_ALL,
		  "atomic, MR without REMOTE_ATOMIC" },
		{ IBV_WR_RDMA_WRITE, M_LOCAL, QP_ALL,
		  "WRITE, MR with LOCAL_WRITE only" },
		{ IBV_WR_RDMA_WRITE, M_ALL, QP_ALL & ~IBV_ACCESS_REMOTE_WRITE,
		  "WRITE, QP without REMOTE_WRITE" },
		{ IBV_WR_RDMA_READ, M_ALL, QP_ALL & ~IBV_ACCESS_REMOTE_READ,
		  "READ, QP without REMOTE_READ" },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, M_ALL,
		  QP_ALL & ~IBV_ACCESS_REMOTE_ATOMIC,
		  "atomic, QP without REMOTE_ATOMIC" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct pairopt o = popt();
		bool at = t[i].op == IBV_WR_ATOMIC_CMP_AND_SWP ||
			  t[i].op == IBV_WR_ATOMIC_FETCH_AND_ADD;
		struct ibv_sge sg = lsge(8192, at ? 8 : 256);
		struct cqp c;
		int rc;

		case_name = t[i].what;
		o.srv_access = t[i].qp_access;
		CHECK(!pair(&c, &o), "setup");
		rc = expect_fail(&c, t[i].op, &sg, S.addr[t[i].mr] + 64,
				 S.rkey[t[i].mr], IBV_WC_REM_ACCESS_ERR,
				 IBV_WC_WR_FLUSH_ERR, IBV_EVENT_QP_ACCESS_ERR);
		free_qp(&c);
		if (rc)
			return rc;
	}
	/* the verbs rule at registration */
	{
		struct ibv_mr *mr;

		case_name = "reg_mr REMOTE_WRITE/ATOMIC without LOCAL_WRITE";
		errno = 0;
		mr = ibv_reg_mr(pd, lbuf, 4096, IBV_ACCESS_REMOTE_WRITE);
		CHECK(!mr && errno == EINVAL,
		      "REMOTE_WRITE without LOCAL_WRITE: %s, errno %s",
		      mr ? "registered" : "NULL", strerror(errno));
		errno = 0;
		mr = ibv_reg_mr(pd, lbuf, 4096, IBV_ACCESS_REMOTE_ATOMIC);
		CHECK(!mr && errno == EINVAL,
		      "REMOTE_ATOMIC without LOCAL_WRITE: %s, errno %s",
		      mr ? "registered" : "NULL", strerror(errno));
		mr = ibv_reg_mr(pd, lbuf, 4096, IBV_ACCESS_REMOTE_READ);
		CHECK(mr, "REMOTE_READ alone must register: %s",
		      strerror(errno));
		ibv_dereg_mr(mr);
	}
	return 0;
}

/* local key wrong, local SGE outside its region, READ into a region
 * without LOCAL_WRITE, a receive with a wrong key */
static int case_local_prot(void)
{
	struct ibv_mr *ro = ibv_reg_mr(pd, lbuf + BUF_LEN / 2, 65536, 0);
	struct {
		enum ibv_wr_opcode op;
		struct ibv_sge sg;
		const char *what;
	} t[] = {
		{ IBV_WR_RDMA_WRITE,
		  { (uintptr_t)lbuf, 64, lmr->lkey ^ 0x00cd0000 },
		  "WRITE with a wrong lkey" },
		{ IBV_WR_SEND,
		  { (uintptr_t)lbuf + 2 * BUF_LEN - 32, 64, lmr->lkey },
		  "SEND with an SGE across the end of its MR" },
		{ IBV_WR_RDMA_READ,
		  { (uintptr_t)lbuf - 4096, 64, lmr->lkey },
		  "READ into an SGE before its MR" },
		{ IBV_WR_RDMA_READ,
		  { (uintptr_t)lbuf + BUF_LEN / 2, 64, ro ? ro->lkey : 0 },
		  "READ into an MR without LOCAL_WRITE" },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD,
		  { (uintptr_t)lbuf + BUF_LEN / 2, 8, ro ? ro->lkey : 0 },
		  "atomic result into an MR without LOCAL_WRITE" },
	};

	CHECK(ro, "reg_mr without access flags: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct pairopt o = popt();
		struct cqp c;
		int rc;

		case_name = t[i].what;
		CHECK(!pair(&c, &o), "setup");
		rc = expect_fail(&c, t[i].op, &t[i].sg, S.addr[M_ALL] + 128,
				 S.rkey[M_ALL], IBV_WC_LOC_PROT_ERR, -1, -1);
		free_qp(&c);
		if (rc) {
			ibv_dereg_mr(ro);
			return rc;
		}
	}
	ibv_dereg_mr(ro);

	/* the responder's receive has a bad lkey */
	{
		struct pairopt o = popt();
		struct cmd cm = { .op = C_POSTRECV,
				  .nrecv = 1,
				  .recv_len = 256,
				  .bad_lkey = 1 };
		struct ibv_sge sg = lsge(0, 100);
		struct ibv_wc wc;
		struct rep r;
		struct cqp c;
		int n;

		case_name = "SEND into a receive with a wrong lkey";
		o.nrecv = 0;
		CHECK(!pair(&c, &o), "setup");
		ask(&cm, &r);
		CHECK(!post1(c.qp, IBV_WR_SEND, 9, &sg, 1, 0, 0), "post");
		n = poll_n(c.scq, &wc, 1, 10);
		CHECK(n == 1 && wc.status == IBV_WC_REM_OP_ERR,
		      "sender: %s, expected %s",
		      n ? vc_st(wc.status) : "nothing",
		      vc_st(IBV_WC_REM_OP_ERR));
		srv_report(&r, 1, 3000);
		CHECK(r.nwc == 1 && r.wc[0].status == IBV_WC_LOC_PROT_ERR,
		      "receiver: %s, expected %s",
		      r.nwc ? vc_st(r.wc[0].status) : "nothing",
		      vc_st(IBV_WC_LOC_PROT_ERR));
		free_qp(&c);
	}
	return 0;
}

/* posting in RESET, INIT, RTR; a bad WR in the middle of a list.
 * Receives may be posted from RESET on (docs/PROVIDER.md, "Receives
 * posted in RESET"); sends only from RTS. */
static int case_post_state(void)
{
	struct cqp c;
	struct ibv_sge sg = lsge(0, 64);
	struct ibv_send_wr w[2], *bad;
	struct ibv_recv_wr rw[2], *rbad;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qp_access_flags = QP_ALL };
	struct cmd cm = { .op = C_NEWQP };
	struct rep r;
	struct vc_path p = vc_path_default();
	struct ibv_wc wc[4];
	int rc, n;

	CHECK(!new_qp(&c, 64, 8, 8), "create_qp: %s", strerror(errno));
	memset(w, 0, sizeof(w));
	for (int i = 0; i < 2; i++) {
		w[i] = (struct ibv_send_wr){ .wr_id = (uint64_t)i + 1,
					     .next = i ? NULL : &w[1],
					     .sg_list = &sg,
					     .num_sge = 1,
					     .opcode = IBV_WR_SEND,
					     .send_flags = IBV_SEND_SIGNALED };
		rw[i] = (struct ibv_recv_wr){ .wr_id = (uint64_t)i + 11,
					      .next = i ? NULL : &rw[1],
					      .sg_list = &sg,
					      .num_sge = 1 };
	}
	case_name = "post in RESET";
	bad = NULL;
	rc = ibv_post_send(c.qp, w, &bad);
	CHECK(rc == EINVAL && bad == &w[0], "post_send: %s, bad_wr %s",
	      strerror(rc), bad == &w[0] ? "first" : "not the first");
	rbad = NULL;
	rc = ibv_post_recv(c.qp, rw, &rbad);
	CHECK(!rc, "post_recv in RESET must work (kept until INIT): %s",
	      strerror(rc));
	rw[0].wr_id += 2; /* 13, 14 in INIT */
	rw[1].wr_id += 2;

	case_name = "post in INIT";
	CHECK(!ibv_modify_qp(c.qp, &a,
			     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS),
	      "to INIT");
	bad = NULL;
	rc = ibv_post_send(c.qp, w, &bad);
	CHECK(rc == EINVAL && bad == &w[0], "post_send: %s, bad_wr %s",
	      strerror(rc), bad == &w[0] ? "first" : "not the first");
	rc = ibv_post_recv(c.qp, rw, &rbad);
	CHECK(!rc, "post_recv in INIT must work: %s", strerror(rc));

	case_name = "post in RTR";
	ask(&cm, &r);
	CHECK(!r.rc, "server NEWQP");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = dev.port.active_mtu;
	a.dest_qp_num = r.info.qpn;
	a.rq_psn = r.info.psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.grh.dgid.raw, r.info.gid, 16);
	rc = ibv_modify_qp(c.qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER);
	CHECK(!rc, "to RTR: %s", strerror(rc));
	bad = NULL;
	rc = ibv_post_send(c.qp, w, &bad);
	CHECK(rc == EINVAL && bad == &w[0], "post_send: %s, bad_wr %s",
	      strerror(rc), bad == &w[0] ? "first" : "not the first");

	case_name = "a bad WR in the middle of a list";
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = p.timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	rc = ibv_modify_qp(c.qp, &a,
			   IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				   IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(!rc, "to RTS: %s", strerror(rc));
	{
		struct vc_qpinfo mine;
		struct ibv_sge many[8];
		struct ibv_send_wr l[3];

		vc_qpinfo_of(&dev, c.qp, 0, &mine);
		cm = (struct cmd){ .op = C_CONNECT,
				   .access = QP_ALL,
				   .min_rnr = 1,
				   .nrecv = 4,
				   .recv_len = RSLOT,
				   .peer = mine };
		ask(&cm, &r);
		CHECK(!r.rc, "server CONNECT");
		for (int i = 0; i < 8; i++)
			many[i] = lsge((uint64_t)i * 64, 64);
		/* good, too many SGEs, good */
		for (int i = 0; i < 3; i++) {
			l[i] = (struct ibv_send_wr){
				.wr_id = 21 + (uint64_t)i,
				.next = i < 2 ? &l[i + 1] : NULL,
				.sg_list = many,
				.num_sge = i == 1 ?
						   (int)c.cap.max_send_sge + 1 :
						   1,
				.opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED,
			};
			l[i].wr.rdma.remote_addr = S.addr[M_ALL];
			l[i].wr.rdma.rkey = S.rkey[M_ALL];
		}
		bad = NULL;
		rc = ibv_post_send(c.qp, l, &bad);
		CHECK(rc == EINVAL && bad == &l[1],
		      "num_sge > max_send_sge: %s, bad_wr %s", strerror(rc),
		      bad == &l[1] ? "the second" : "not the second");
		/* opcode unknown; inline beyond max_inline_data; atomic
		 * target not 8-byte aligned; atomic SGE not 8 bytes */
		l[0].next = NULL;
		l[0].num_sge = 1;
		l[0].opcode = (enum ibv_wr_opcode)77;
		rc = ibv_post_send(c.qp, l, &bad);
		CHECK(rc == EINVAL && bad == &l[0], "opcode 77: %s",
		      strerror(rc));
		{
			struct ibv_sge big = lsge(0, c.cap.max_inline_data + 1);

			l[0].opcode = IBV_WR_SEND;
			l[0].sg_list = &big;
			l[0].send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
			rc = ibv_post_send(c.qp, l, &bad);
			CHECK(rc == EINVAL && bad == &l[0],
			      "inline of %u bytes (max %u): %s", big.length,
			      c.cap.max_inline_data, strerror(rc));
		}
		{
			struct ibv_sge eight = lsge(0, 8), four = lsge(0, 4);

			l[0].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			l[0].send_flags = IBV_SEND_SIGNALED;
			l[0].sg_list = &eight;
			l[0].wr.atomic.remote_addr = S.addr[M_ALL] + 4;
			l[0].wr.atomic.rkey = S.rkey[M_ALL];
			rc = ibv_post_send(c.qp, l, &bad);
			CHECK(rc == EINVAL, "atomic at remote + 4: %s",
			      strerror(rc));
			l[0].sg_list = &four;
			l[0].wr.atomic.remote_addr = S.addr[M_ALL];
			rc = ibv_post_send(c.qp, l, &bad);
			CHECK(rc == EINVAL, "atomic with a 4-byte SGE: %s",
			      strerror(rc));
		}
		/* what was posted completes: only WR 21 */
		n = poll_n(c.scq, wc, 1, 5);
		n += poll_n(c.scq, wc + n, 3, 0.2); /* and nothing more */
		CHECK(n == 1 && wc[0].wr_id == 21 &&
			      wc[0].status == IBV_WC_SUCCESS,
		      "%d completions, first wr_id %" PRIu64 " %s", n,
		      n ? wc[0].wr_id : 0, n ? vc_st(wc[0].status) : "-");
	}

	case_name = "post in ERROR";
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	CHECK(!ibv_modify_qp(c.qp, &a, IBV_QP_STATE), "to ERROR");
	/* the 2 receives posted in RESET and the 2 in INIT flush, in
	 * order */
	n = poll_n(c.rcq, wc, 4, 5);
	CHECK(n == 4 && wc[0].wr_id == 11 && wc[1].wr_id == 12 &&
		      wc[2].wr_id == 13 && wc[3].wr_id == 14 &&
		      wc[0].status == IBV_WC_WR_FLUSH_ERR &&
		      wc[3].status == IBV_WC_WR_FLUSH_ERR,
	      "receives posted in RESET and INIT: %d completions after "
	      "modify(ERROR)",
	      n);
	rc = ibv_post_send(c.qp, w, &bad);
	CHECK(!rc, "post_send in ERROR: %s", strerror(rc));
	rc = ibv_post_recv(c.qp, rw, &rbad);
	CHECK(!rc, "post_recv in ERROR: %s", strerror(rc));
	n = poll_n(c.scq, wc, 2, 5);
	CHECK(n == 2 && wc[0].wr_id == 1 && wc[1].wr_id == 2 &&
		      wc[0].status == IBV_WC_WR_FLUSH_ERR &&
		      wc[1].status == IBV_WC_WR_FLUSH_ERR,
	      "sends posted in ERROR: %d flushed", n);
	n = poll_n(c.rcq, wc, 2, 5);
	CHECK(n == 2 && wc[0].wr_id == 13 && wc[1].wr_id == 14 &&
		      wc[0].status == IBV_WC_WR_FLUSH_ERR,
	      "receives posted in ERROR: %d flushed", n);
	free_qp(&c);
	srv_simple(C_DESTROYQP);
	return 0;
}

/* more WRs than the queues hold */
static int case_queue_full(void)
{
	struct pairopt o = popt();
	struct cqp c;
	struct ibv_send_wr *w;
	struct ibv_recv_wr rw[80], *rbad;
	struct ibv_sge sg = lsge(0, 32);
	struct ibv_send_wr *bad;
	struct ibv_wc wc[128];
	uint32_t n;
	int rc, k;

	o.sq = 8;
	o.scqe = 128;
	CHECK(!pair(&c, &o), "setup");
	n = c.cap.max_send_wr;
	CHECK(n >= 8 && n < 120, "granted max_send_wr %u", n);
	w = calloc(n + 3, sizeof(*w));
	for (uint32_t i = 0; i < n + 3; i++) {
		w[i] = (struct ibv_send_wr){ .wr_id = 100 + i,
					     .next = i + 1 < n + 3 ? &w[i + 1] :
								     NULL,
					     .sg_list = &sg,
					     .num_sge = 1,
					     .opcode = IBV_WR_RDMA_WRITE,
					     .send_flags = IBV_SEND_SIGNALED };
		w[i].wr.rdma.remote_addr = S.addr[M_ALL];
		w[i].wr.rdma.rkey = S.rkey[M_ALL];
	}
	case_name = "send queue full";
	bad = NULL;
	rc = ibv_post_send(c.qp, w, &bad);
	CHECK(rc == ENOMEM && bad == &w[n],
	      "posting %u on a queue of %u: %s, bad_wr index %td", n + 3, n,
	      strerror(rc), bad ? bad - w : -1);
	k = poll_n(c.scq, wc, (int)n, 10);
	CHECK(k == (int)n, "%d of %u completions", k, n);
	for (int i = 0; i < k; i++)
		CHECK(wc[i].wr_id == 100 + (uint64_t)i &&
			      wc[i].status == IBV_WC_SUCCESS,
		      "completion %d: wr_id %" PRIu64 " %s", i, wc[i].wr_id,
		      vc_st(wc[i].status));
	/* room again */
	w[n].next = NULL;
	rc = ibv_post_send(c.qp, &w[n], &bad);
	CHECK(!rc, "post after polling: %s", strerror(rc));
	k = poll_n(c.scq, wc, 1, 5);
	CHECK(k == 1 && wc[0].status == IBV_WC_SUCCESS, "last WRITE");
	free(w);

	case_name = "receive queue full";
	n = c.cap.max_recv_wr;
	CHECK(n + 2 <= 80, "granted max_recv_wr %u", n);
	for (uint32_t i = 0; i < n + 2; i++)
		rw[i] = (struct ibv_recv_wr){ .wr_id = 200 + i,
					      .next = i + 1 < n + 2 ?
							      &rw[i + 1] :
							      NULL,
					      .sg_list = &sg,
					      .num_sge = 1 };
	rbad = NULL;
	rc = ibv_post_recv(c.qp, rw, &rbad);
	CHECK(rc == ENOMEM && rbad == &rw[n],
	      "posting %u receives on a queue of %u: %s, bad_wr index %td",
	      n + 2, n, strerror(rc), rbad ? rbad - rw : -1);
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		CHECK(!ibv_modify_qp(c.qp, &a, IBV_QP_STATE), "to ERROR");
	}
	k = poll_n(c.rcq, wc, (int)n, 5);
	k += poll_n(c.rcq, wc + k, 1, 0.2); /* and nothing more */
	CHECK(k == (int)n, "%d of %u receives flushed", k, n);
	for (int i = 0; i < k; i++)
		CHECK(wc[i].wr_id == 200 + (uint64_t)i &&
			      wc[i].status == IBV_WC_WR_FLUSH_ERR,
		      "receive %d: wr_id %" PRIu64 " %s", i, wc[i].wr_id,
		      vc_st(wc[i].status));
	free_qp(&c);
	return 0;
}

/* invalid modify_qp; ERROR flushes outstanding sends and receives */
static int case_modify(void)
{
	struct cqp c;
	struct ibv_qp_attr a;
	struct cmd cm = { .op = C_NEWQP };
	struct rep r;
	int rc;

	CHECK(!new_qp(&c, 64, 8, 8), "create_qp");
	case_name = "RESET -> RTS";
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	rc = ibv_modify_qp(c.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	CHECK(rc == EINVAL, "%s", strerror(rc));
	CHECK(vc_qp_state(c.qp) == IBV_QPS_RESET, "state changed");
	case_name = "RESET -> INIT without ACCESS_FLAGS";
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	rc = ibv_modify_qp(c.qp, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT);
	CHECK(rc == EINVAL, "%s", strerror(rc));
	case_name = "RESET -> INIT on port 2";
	a.port_num = 2;
	rc = ibv_modify_qp(c.qp, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS);
	CHECK(rc == EINVAL, "%s", strerror(rc));
	CHECK(vc_qp_state(c.qp) == IBV_QPS_RESET, "state changed");
	a.port_num = 1;
	a.qp_access_flags = QP_ALL;
	CHECK(!ibv_modify_qp(c.qp, &a,
			     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS),
	      "to INIT");
	ask(&cm, &r);
	CHECK(!r.rc, "server NEWQP");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = dev.port.active_mtu;
	a.dest_qp_num = r.info.qpn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.grh.dgid.raw, r.info.gid, 16);
	case_name = "INIT -> RTR without DEST_QPN";
	rc = ibv_modify_qp(c.qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER);
	CHECK(rc == EINVAL, "%s", strerror(rc));
	case_name = "INIT -> RTR with path_mtu 7";
	a.path_mtu = (enum ibv_mtu)7;
	rc = ibv_modify_qp(c.qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER);
	CHECK(rc == EINVAL, "%s", strerror(rc));
	case_name = "INIT -> RTR without a GID (is_global 0)";
	a.path_mtu = dev.port.active_mtu;
	a.ah_attr.is_global = 0;
	rc = ibv_modify_qp(c.qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER);
	CHECK(rc == EINVAL, "%s", strerror(rc));
	CHECK(vc_qp_state(c.qp) == IBV_QPS_INIT, "state changed");
	a.ah_attr.is_global = 1;
	CHECK(!ibv_modify_qp(c.qp, &a,
			     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER),
	      "to RTR");
	case_name = "RTR -> RTS without SQ_PSN";
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	rc = ibv_modify_qp(c.qp, &a,
			   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(rc == EINVAL, "%s", strerror(rc));
	case_name = "RTR -> RTS with retry_cnt 8";
	a.retry_cnt = 8;
	rc = ibv_modify_qp(c.qp, &a,
			   IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				   IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(rc == EINVAL, "%s", strerror(rc));
	CHECK(vc_qp_state(c.qp) == IBV_QPS_RTR, "state changed");
	case_name = "RTR -> INIT";
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	rc = ibv_modify_qp(c.qp, &a, IBV_QP_STATE);
	CHECK(rc == EINVAL, "%s", strerror(rc));
	free_qp(&c);
	srv_simple(C_DESTROYQP);

	/* ERROR flushes a SEND stuck on RNR and the posted receives */
	{
		struct pairopt o = popt();
		struct ibv_sge sg = lsge(0, 128);
		struct ibv_recv_wr rw[3], *rbad;
		struct ibv_wc wc[4];
		int n;

		case_name = "modify(ERROR) flushes";
		o.nrecv = 0; /* the SEND waits for a receive, forever */
		CHECK(!pair(&c, &o), "setup");
		for (int i = 0; i < 3; i++)
			rw[i] = (struct ibv_recv_wr){
				.wr_id = 31 + (uint64_t)i,
				.next = i < 2 ? &rw[i + 1] : NULL,
				.sg_list = &sg,
				.num_sge = 1
			};
		CHECK(!ibv_post_recv(c.qp, rw, &rbad), "post_recv");
		CHECK(!post1(c.qp, IBV_WR_SEND, 41, &sg, 1, 0, 0), "post SEND");
		n = poll_n(c.scq, wc, 1, 0.3);
		CHECK(n == 0, "the SEND completed (%s) with no receive posted",
		      vc_st(wc[0].status));
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_ERR;
		CHECK(!ibv_modify_qp(c.qp, &a, IBV_QP_STATE), "to ERROR");
		n = poll_n(c.scq, wc, 1, 5);
		CHECK(n == 1 && wc[0].wr_id == 41 &&
			      wc[0].status == IBV_WC_WR_FLUSH_ERR,
		      "the SEND: %d completions, %s", n,
		      n ? vc_st(wc[0].status) : "-");
		n = poll_n(c.rcq, wc, 3, 5);
		CHECK(n == 3, "%d of 3 receives flushed", n);
		for (int i = 0; i < 3; i++)
			CHECK(wc[i].wr_id == 31 + (uint64_t)i &&
				      wc[i].status == IBV_WC_WR_FLUSH_ERR,
			      "receive %d: wr_id %" PRIu64 " %s", i,
			      wc[i].wr_id, vc_st(wc[i].status));
		case_name = "ERROR -> RESET -> INIT again";
		a.qp_state = IBV_QPS_RESET;
		CHECK(!ibv_modify_qp(c.qp, &a, IBV_QP_STATE), "to RESET");
		CHECK(vc_qp_state(c.qp) == IBV_QPS_RESET, "not RESET");
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = QP_ALL;
		CHECK(!ibv_modify_qp(c.qp, &a,
				     IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
		      "to INIT after RESET");
		free_qp(&c);
	}
	return 0;
}

/* a CQ smaller than the completions outstanding */
static int case_cq_overflow(void)
{
	struct pairopt o = popt();
	struct cqp c;
	struct ibv_sge sg = lsge(0, 64);
	struct ibv_wc wc[32];
	struct ibv_async_event e;
	bool cq_err = false, qp_fatal = false;
	int n, cqe;
	double end;

	o.scqe = 1;
	case_name = "CQ overflow";
	CHECK(!pair(&c, &o), "setup");
	cqe = c.scq->cqe;
	printf("%s: send CQ asked for 1 entry, holds %d\n", vc_prog, cqe);
	CHECK(cqe >= 1 && cqe < 16, "cqe %d", cqe);
	for (int i = 0; i < 16; i++)
		CHECK(!post1(c.qp, IBV_WR_RDMA_WRITE, 500 + (uint64_t)i, &sg, 1,
			     S.addr[M_ALL], S.rkey[M_ALL]),
		      "post %d", i);
	/* the application is told: CQ_ERR for the CQ, QP_FATAL for the QP
	 * whose completions were lost */
	end = vc_now() + 5;
	while ((!cq_err || !qp_fatal) && vc_now() < end) {
		if (!vc_readable(dev.ctx->async_fd, 100))
			continue;
		if (ibv_get_async_event(dev.ctx, &e))
			continue;
		printf("%s: async event %s\n", vc_prog,
		       ibv_event_type_str(e.event_type));
		if (e.event_type == IBV_EVENT_CQ_ERR && e.element.cq == c.scq)
			cq_err = true;
		if (e.event_type == IBV_EVENT_QP_FATAL && e.element.qp == c.qp)
			qp_fatal = true;
		ibv_ack_async_event(&e);
	}
	CHECK(cq_err, "no IBV_EVENT_CQ_ERR for the CQ");
	CHECK(qp_fatal, "no IBV_EVENT_QP_FATAL for the QP");
	/* what the CQ holds is intact, in order */
	n = poll_n(c.scq, wc, 32, 0.5);
	CHECK(n >= 1 && n <= cqe, "%d completions in a CQ of %d", n, cqe);
	for (int i = 0; i < n; i++)
		CHECK(wc[i].wr_id == 500 + (uint64_t)i &&
			      wc[i].status == IBV_WC_SUCCESS,
		      "entry %d: wr_id %" PRIu64 " %s", i, wc[i].wr_id,
		      vc_st(wc[i].status));
	CHECK(vc_qp_state(c.qp) == IBV_QPS_ERR, "QP state %d, not ERROR",
	      vc_qp_state(c.qp));
	/* the QP works again after RESET */
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

		CHECK(!ibv_modify_qp(c.qp, &a, IBV_QP_STATE), "to RESET");
	}
	free_qp(&c);
	srv_simple(C_DESTROYQP);
	return 0;
}

/* objects in use */
static int case_destroy_busy(void)
{
	struct pairopt o = popt();
	struct cqp c;
	struct cmd cm;
	struct rep r;
	struct ibv_pd *pd2;
	struct ibv_mr *mr2;
	struct ibv_cq *cq2;
	struct ibv_qp *qp2;
	struct ibv_wc wc[64];
	int rc, n;

	case_name = "dealloc_pd with an MR";
	pd2 = ibv_alloc_pd(dev.ctx);
	CHECK(pd2, "alloc_pd");
	mr2 = ibv_reg_mr(pd2, lbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr2, "reg_mr");
	rc = ibv_dealloc_pd(pd2);
	CHECK(rc == EBUSY, "%s", strerror(rc));
	case_name = "dealloc_pd with a QP, destroy_cq with a QP";
	cq2 = ibv_create_cq(dev.ctx, 8, NULL, NULL, 0);
	CHECK(cq2, "create_cq");
	{
		struct ibv_qp_init_attr a = { .send_cq = cq2,
					      .recv_cq = cq2,
					      .qp_type = IBV_QPT_RC,
					      .cap = { .max_send_wr = 4,
						       .max_recv_wr = 4,
						       .max_send_sge = 1,
						       .max_recv_sge = 1 } };

		qp2 = ibv_create_qp(pd2, &a);
		CHECK(qp2, "create_qp");
	}
	CHECK(!ibv_dereg_mr(mr2), "dereg_mr");
	rc = ibv_dealloc_pd(pd2);
	CHECK(rc == EBUSY, "dealloc_pd with a QP: %s", strerror(rc));
	rc = ibv_destroy_cq(cq2);
	CHECK(rc == EBUSY, "destroy_cq with a QP: %s", strerror(rc));
	CHECK(!ibv_destroy_qp(qp2), "destroy_qp");
	CHECK(!ibv_destroy_cq(cq2), "destroy_cq once free");
	CHECK(!ibv_dealloc_pd(pd2), "dealloc_pd once free");

	case_name = "dereg_mr while the peer READs and WRITEs it";
	for (int round = 0; round < 2; round++) {
		bool read = round == 0;
		int ok = 0, acc = 0, fl = 0, other = 0;

		cm = (struct cmd){ .op = C_NEWVICTIM };
		ask(&cm, &r);
		CHECK(!r.rc, "server reg_mr: %s", strerror(r.rc));
		CHECK(!pair(&c, &o), "setup");
		/* 32 x 256 KB: tens of milliseconds through the testbed */
		for (int i = 0; i < 32; i++) {
			struct ibv_sge sg =
				lsge((uint64_t)(i % 4) * 262144, 262144);

			CHECK(!post1(c.qp,
				     read ? IBV_WR_RDMA_READ :
					    IBV_WR_RDMA_WRITE,
				     600 + (uint64_t)i, &sg, 1,
				     r.addr + (uint64_t)(i % 4) * 262144,
				     r.rkey),
			      "post");
		}
		n = poll_n(c.scq, wc, 1, 10); /* the first is under way */
		CHECK(n == 1, "the first transfer did not complete");
		cm = (struct cmd){ .op = C_DEREG_VICTIM };
		ask(&cm, &r);
		CHECK(!r.rc, "server dereg_mr: %s", strerror(r.rc));
		n += poll_n(c.scq, wc + 1, 31, 20);
		CHECK(n == 32, "%d of 32 completions", n);
		for (int i = 0; i < n; i++) {
			CHECK(wc[i].wr_id == 600 + (uint64_t)i,
			      "completion %d has wr_id %" PRIu64, i,
			      wc[i].wr_id);
			if (wc[i].status == IBV_WC_SUCCESS && !acc && !fl)
				ok++;
			else if (wc[i].status == IBV_WC_REM_ACCESS_ERR &&
				 !acc && !fl)
				acc++;
			else if (wc[i].status == IBV_WC_WR_FLUSH_ERR && acc)
				fl++;
			else
				other++;
		}
		printf("%s: %s during dereg_mr: %d succeeded, then %d REM_ACCESS_ERR, %d flushed\n",
		       vc_prog, read ? "READs" : "WRITEs", ok, acc, fl);
		if (other || acc != 1)
			for (int i = 0; i < n; i++)
				printf("%s:   wr_id %" PRIu64
				       ": %s (vendor_err 0x%x)\n",
				       vc_prog, wc[i].wr_id,
				       vc_st(wc[i].status), wc[i].vendor_err);
		CHECK(!other && acc == 1,
		      "%d completions out of the pattern SUCCESS* REM_ACCESS_ERR FLUSH*",
		      other);
		free_qp(&c);
		/* a fresh QP with the stale key */
		CHECK(!pair(&c, &o), "setup");
		{
			struct ibv_sge sg = lsge(0, 64);

			CHECK(!post1(c.qp, IBV_WR_RDMA_WRITE, 700, &sg, 1,
				     r.addr, r.rkey),
			      "post");
			n = poll_n(c.scq, wc, 1, 10);
			CHECK(n == 1 && wc[0].status == IBV_WC_REM_ACCESS_ERR,
			      "WRITE with a deregistered rkey: %s",
			      n ? vc_st(wc[0].status) : "nothing");
		}
		free_qp(&c);
	}

	case_name = "dereg_mr of a region a posted receive uses";
	{
		struct ibv_mr *mr3 = ibv_reg_mr(pd, lbuf + 8192, 4096,
						IBV_ACCESS_LOCAL_WRITE);
		struct ibv_sge sg;
		struct ibv_recv_wr rw = { .wr_id = 950, .num_sge = 1 }, *rbad;
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		CHECK(mr3, "reg_mr");
		sg = (struct ibv_sge){ (uintptr_t)(lbuf + 8192), 4096,
				       mr3->lkey };
		rw.sg_list = &sg;
		CHECK(!pair(&c, &o), "setup");
		CHECK(!ibv_post_recv(c.qp, &rw, &rbad), "post_recv");
		/* as hardware: the deregistration wins, the receive
		 * fails as one posted with a bad lkey */
		rc = ibv_dereg_mr(mr3);
		CHECK(!rc, "dereg_mr with a receive posted: %s", strerror(rc));
		CHECK(!ibv_modify_qp(c.qp, &a, IBV_QP_STATE), "to ERROR");
		n = poll_n(c.rcq, wc, 1, 5);
		CHECK(n == 1 && wc[0].wr_id == 950 &&
			      wc[0].status == IBV_WC_LOC_PROT_ERR,
		      "the receive completed %s, not LOC_PROT_ERR",
		      n ? vc_st(wc[0].status) : "nothing");
		free_qp(&c);
	}

	case_name = "destroy_qp with outstanding WRs";
	CHECK(!pair(&c, &o), "setup");
	for (int i = 0; i < 24; i++) {
		struct ibv_sge sg = lsge(0, 65536);

		CHECK(!post1(c.qp, i % 2 ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
			     800 + (uint64_t)i, &sg, 1, S.addr[M_ALL],
			     S.rkey[M_ALL]),
		      "post");
	}
	{
		struct ibv_recv_wr rw = { .wr_id = 900 }, *rbad;

		CHECK(!ibv_post_recv(c.qp, &rw, &rbad), "post_recv");
	}
	rc = ibv_destroy_qp(c.qp);
	CHECK(!rc, "destroy_qp with 24 WRs outstanding: %s", strerror(rc));
	c.qp = NULL;
	free_qp(&c);
	/* and the server's, with receives posted */
	srv_simple(C_DESTROYQP);
	return 0;
}

/* SEND with no receive posted: RNR */
static int case_rnr(void)
{
	for (int retry = 0; retry <= 7; retry++) {
		struct pairopt o = popt();
		struct ibv_sge sg = lsge(0, 256);
		struct ibv_wc wc;
		struct cqp c;
		double t0;
		int n;

		case_name = "RNR";
		o.nrecv = 0;
		o.min_rnr = 1; /* 0.01 ms */
		o.rnr_retry = (uint8_t)retry;
		CHECK(!pair(&c, &o), "setup");
		t0 = vc_now();
		CHECK(!post1(c.qp, IBV_WR_SEND, 1000 + (uint64_t)retry, &sg, 1,
			     0, 0),
		      "post");
		if (retry < 7) {
			n = poll_n(c.scq, &wc, 1, 10);
			CHECK(n == 1 && wc.status == IBV_WC_RNR_RETRY_EXC_ERR,
			      "rnr_retry %d: %s, expected %s", retry,
			      n ? vc_st(wc.status) : "nothing in 10 s",
			      vc_st(IBV_WC_RNR_RETRY_EXC_ERR));
			printf("%s: rnr_retry %d: RNR_RETRY_EXC_ERR after %.2f ms\n",
			       vc_prog, retry, (vc_now() - t0) * 1e3);
			CHECK(vc_qp_state(c.qp) == IBV_QPS_ERR, "not ERROR");
		} else {
			/* 7: retry forever, until a receive is posted */
			struct cmd cm = { .op = C_POSTRECV,
					  .nrecv = 1,
					  .recv_len = 1024 };
			struct rep r;

			n = poll_n(c.scq, &wc, 1, 0.3);
			CHECK(n == 0, "rnr_retry 7 gave up: %s",
			      vc_st(wc.status));
			ask(&cm, &r);
			n = poll_n(c.scq, &wc, 1, 10);
			CHECK(n == 1 && wc.status == IBV_WC_SUCCESS,
			      "rnr_retry 7, receive posted after 300 ms: %s",
			      n ? vc_st(wc.status) : "nothing in 10 s");
			srv_report(&r, 1, 3000);
			CHECK(r.nwc == 1 && r.wc[0].status == IBV_WC_SUCCESS &&
				      r.wc[0].byte_len == 256,
			      "the late receive: %s, %u bytes",
			      r.nwc ? vc_st(r.wc[0].status) : "nothing",
			      r.nwc ? r.wc[0].byte_len : 0);
			printf("%s: rnr_retry 7: delivered %.0f ms after the post, once a receive was there\n",
			       vc_prog, (vc_now() - t0) * 1e3);
		}
		free_qp(&c);
	}
	return 0;
}

/* a receive buffer too small for the SEND */
static int case_short_recv(void)
{
	struct pairopt o = popt();
	struct ibv_sge sg = lsge(0, 100);
	struct ibv_wc wc;
	struct cqp c;
	struct rep r;
	int n;
	bool ev = false;

	case_name = "receive buffer too small";
	o.nrecv = 1;
	o.recv_len = 16;
	CHECK(!pair(&c, &o), "setup");
	CHECK(!post1(c.qp, IBV_WR_SEND, 1100, &sg, 1, 0, 0), "post");
	n = poll_n(c.scq, &wc, 1, 10);
	CHECK(n == 1 && wc.status == IBV_WC_REM_INV_REQ_ERR,
	      "sender: %s, expected %s", n ? vc_st(wc.status) : "nothing",
	      vc_st(IBV_WC_REM_INV_REQ_ERR));
	srv_report(&r, 1, 3000);
	CHECK(r.nwc == 1 && r.wc[0].status == IBV_WC_LOC_LEN_ERR,
	      "receiver: %s, expected %s",
	      r.nwc ? vc_st(r.wc[0].status) : "nothing",
	      vc_st(IBV_WC_LOC_LEN_ERR));
	CHECK(r.qp_state == IBV_QPS_ERR, "receiver QP state %d", r.qp_state);
	for (uint32_t i = 0; i < r.nev; i++)
		ev |= r.ev[i] == IBV_EVENT_QP_REQ_ERR;
	CHECK(ev, "receiver did not get IBV_EVENT_QP_REQ_ERR");
	CHECK(vc_qp_state(c.qp) == IBV_QPS_ERR, "sender QP not in ERROR");
	free_qp(&c);
	return 0;
}

static int case_dmabuf(void)
{
	struct ibv_mr *mr;
	int fd;

	case_name = "reg_dmabuf_mr";
	errno = 0;
	mr = ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE);
	CHECK(!mr, "fd -1 registered");
	if (errno == EOPNOTSUPP) {
		printf("%s: case %d (%s): skipped: this provider does not implement ibv_reg_dmabuf_mr (libibverbs answers EOPNOTSUPP)\n",
		       vc_prog, ncase, case_name);
		return 0;
	}
	CHECK(errno == EBADF, "fd -1: %s, expected EBADF", strerror(errno));
	fd = open("/dev/null", O_RDONLY);
	errno = 0;
	mr = ibv_reg_dmabuf_mr(pd, 0, 4096, 0, fd, IBV_ACCESS_LOCAL_WRITE);
	close(fd);
	CHECK(!mr && errno == EOPNOTSUPP, "/dev/null: %s, expected EOPNOTSUPP",
	      mr ? "registered" : strerror(errno));
	return 0;
}

/* the device still works: WRITE, READ back, SEND, atomics */
/* UC QPs (docs/PROVIDER.md, "Unreliable connected QPs"): verbs' UC
 * table - RC's reliability attributes refused at RTR and RTS, EINVAL -
 * and READ, atomics and SEND_WITH_INV refused at posting, EINVAL with
 * *bad_wr naming the WR; the QP in RTS, its PSNs as set. */
static int case_uc(void)
{
	struct ibv_cq *cq = ibv_create_cq(dev.ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UC,
		.cap = { 8, 8, 1, 1, 0 },
	};
	struct ibv_sge sge = { (uintptr_t)lbuf, 8, lmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	static const enum ibv_wr_opcode refused[] = {
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND_WITH_INV
	};
	struct ibv_qp_init_attr qi;
	struct ibv_qp_attr a;
	struct ibv_qp *qp;
	int rc, ret = -1;

	CHECK(cq, "create_cq: %s", strerror(errno));
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp(pd, &ia);
	if (!qp) {
		ibv_destroy_cq(cq);
		CHECK(0, "create_qp UC: %s", strerror(errno));
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	case_name = "UC INIT with a Q_Key";
	rc = ibv_modify_qp(qp, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_QKEY);
	if (rc != EINVAL)
		goto out;
	rc = ibv_modify_qp(qp, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS);
	case_name = "UC to INIT";
	if (rc)
		goto out;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = dev.port.active_mtu;
	a.dest_qp_num = qp->qp_num; /* itself: never used */
	a.rq_psn = 0x123456;
	a.max_dest_rd_atomic = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.grh.dgid.raw, dev.gid.raw, 16);
	case_name = "UC RTR with MAX_DEST_RD_ATOMIC";
	rc = ibv_modify_qp(qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   IBV_QP_MAX_DEST_RD_ATOMIC);
	if (rc != EINVAL)
		goto out;
	case_name = "UC to RTR";
	rc = ibv_modify_qp(qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
	if (rc)
		goto out;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x654321;
	a.timeout = 14;
	a.retry_cnt = 7;
	case_name = "UC RTS with TIMEOUT and RETRY_CNT";
	rc = ibv_modify_qp(qp, &a,
			   IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				   IBV_QP_RETRY_CNT);
	if (rc != EINVAL)
		goto out;
	case_name = "UC to RTS";
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	if (rc)
		goto out;
	case_name = "UC query";
	rc = ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN,
			  &qi);
	if (rc || a.qp_state != IBV_QPS_RTS || a.sq_psn != 0x654321 ||
	    a.rq_psn != 0x123456 || qi.qp_type != IBV_QPT_UC) {
		rc = rc ? rc : -1;
		goto out;
	}
	for (unsigned int i = 0; i < 4; i++) {
		case_name = "UC READ / atomic / SEND_WITH_INV posted";
		wr.opcode = refused[i];
		bad = NULL;
		rc = ibv_post_send(qp, &wr, &bad);
		if (rc != EINVAL || bad != &wr) {
			rc = rc ? rc : -1;
			goto out;
		}
	}
	rc = 0;
	ret = 0;
out:
	if (ret)
		printf("%s: case %d (%s): FAIL: rc %d (%s)\n", vc_prog, ncase,
		       case_name, rc, rc > 0 ? strerror(rc) : "");
	if (ret)
		nfail++;
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	return ret;
}

static int case_good(void)
{
	struct pairopt o = popt();
	struct cqp c;
	struct ibv_sge sg = lsge(0, 1 << 19), rsg = lsge(1 << 19, 1 << 19);
	struct ibv_sge ssg = lsge(0, 4096), asg = lsge(2 * BUF_LEN - 8, 8);
	struct cmd cm;
	struct rep r;
	struct ibv_wc wc[4];
	uint64_t old;
	int n;

	case_name = "a good transfer after all that";
	CHECK(!pair(&c, &o), "setup");
	vc_fill(lbuf, 1 << 19, 42, 7);
	memset(lbuf + (1 << 19), 0, 1 << 19);
	CHECK(!post1(c.qp, IBV_WR_RDMA_WRITE, 1, &sg, 1, S.addr[M_ALL] + 4096,
		     S.rkey[M_ALL]),
	      "post WRITE");
	CHECK(!post1(c.qp, IBV_WR_RDMA_READ, 2, &rsg, 1, S.addr[M_ALL] + 4096,
		     S.rkey[M_ALL]),
	      "post READ");
	CHECK(!post1(c.qp, IBV_WR_SEND, 3, &ssg, 1, 0, 0), "post SEND");
	CHECK(!post1(c.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 4, &asg, 1,
		     S.addr[M_ALL] + BUF_LEN - 4096, S.rkey[M_ALL]),
	      "post FETCH_ADD");
	n = poll_n(c.scq, wc, 4, 20);
	CHECK(n == 4, "%d of 4 completions", n);
	for (int i = 0; i < 4; i++)
		CHECK(wc[i].status == IBV_WC_SUCCESS &&
			      wc[i].wr_id == (uint64_t)i + 1,
		      "completion %d: %s", i, vc_st(wc[i].status));
	CHECK(!memcmp(lbuf, lbuf + (1 << 19), 1 << 19),
	      "READ did not return what the WRITE wrote");
	memcpy(&old, lbuf + 2 * BUF_LEN - 8, 8);
	CHECK(old == 0x1111111111111111ull, "FETCH_ADD returned 0x%" PRIx64,
	      old);
	cm = (struct cmd){
		.op = C_CHECK, .off = 4096, .len = 1 << 19, .seed = 42
	};
	ask(&cm, &r);
	CHECK(!r.rc, "the server's memory differs from what was written");
	srv_report(&r, 1, 3000);
	CHECK(r.nwc == 1 && r.wc[0].status == IBV_WC_SUCCESS &&
		      r.wc[0].byte_len == 4096,
	      "the server's receive: %s", r.nwc ? vc_st(r.wc[0].status) : "-");
	free_qp(&c);
	srv_simple(C_DESTROYQP);
	return 0;
}

static int run_client(const char *addr, int port, int only)
{
	static const struct {
		int (*fn)(void);
		const char *name;
	} cases[] = {
		{ case_bad_rkey, "wrong rkey (WRITE, READ, atomic)" },
		{ case_remote_bounds, "remote address/length out of bounds" },
		{ case_remote_rights, "remote rights missing (MR, QP)" },
		{ case_local_prot, "local protection" },
		{ case_post_state, "posting in the wrong state, bad WRs" },
		{ case_queue_full, "queues full" },
		{ case_modify, "invalid modify_qp, ERROR flushes" },
		{ case_cq_overflow, "CQ overflow" },
		{ case_destroy_busy, "destroying what is in use" },
		{ case_rnr, "RNR, rnr_retry 0..7" },
		{ case_short_recv, "receive too small" },
		{ case_dmabuf, "reg_dmabuf_mr" },
		{ case_uc, "UC: modify table, READ and atomics refused" },
		{ case_good, "a good transfer" },
	};
	int ncases = (int)(sizeof(cases) / sizeof(cases[0]));
	struct cmd q = { .op = C_QUIT };
	double t0 = vc_now();

	pd = ibv_alloc_pd(dev.ctx);
	lbuf = aligned_alloc(4096, 2 * BUF_LEN);
	memset(lbuf, 0, 2 * BUF_LEN);
	lmr = pd ? ibv_reg_mr(pd, lbuf, 2 * BUF_LEN, QP_ALL) : NULL;
	if (!lmr)
		vc_die("alloc_pd / reg_mr: %s", strerror(errno));
	fcntl(dev.ctx->async_fd, F_SETFL,
	      fcntl(dev.ctx->async_fd, F_GETFL) | O_NONBLOCK);
	oob = vc_tcp_client(addr, port);
	vc_recv_must(oob, &S, sizeof(S));
	if (S.magic != MAGIC)
		vc_die("server speaks something else");
	for (int i = 0; i < ncases; i++) {
		double t;
		int before = nfail;

		if (only && i + 1 != only && i + 1 != ncases)
			continue;
		ncase = i + 1;
		case_name = cases[i].name;
		t = vc_now();
		cases[i].fn();
		drain_async(NULL, NULL, 0);
		printf("%s: case %d: %s: %s (%.2f s)\n", vc_prog, ncase,
		       cases[i].name, nfail == before ? "ok" : "FAILED",
		       vc_now() - t);
	}
	vc_send_all(oob, &q, sizeof(q));
	ibv_dereg_mr(lmr);
	if (ibv_dealloc_pd(pd))
		printf("%s: dealloc_pd at the end: %s\n", vc_prog,
		       strerror(errno));
	ibv_close_device(dev.ctx);
	if (nfail) {
		printf("%s: FAIL: %d checks failed\n", vc_prog, nfail);
		return 1;
	}
	printf("%s: PASS: %d cases in %.1f s\n", vc_prog, ncases,
	       vc_now() - t0);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "case", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	const char *devname = NULL, *addr = NULL;
	int port = 18690, c, only = 0;
	bool server;

	vc_prog = "verbs_abuse";
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
		switch (c) {
		case 'p':
			port = atoi(optarg);
			break;
		case 'd':
			devname = optarg;
			break;
		case 'c':
			only = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	vc_open(&dev, devname);
	return server ? run_server(port) : run_client(addr, port, only);
usage:
	fprintf(stderr,
		"usage: verbs_abuse server [-p PORT] [-d DEV]\n"
		"       verbs_abuse client ADDR [-p PORT] [-d DEV] [--case N]\n");
	return 2;
}
