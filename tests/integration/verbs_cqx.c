// SPDX-License-Identifier: MIT
/*
 * verbs_cqx: ibv_resize_cq and ibv_rereg_mr as an application sees them,
 * written against plain libibverbs, in one process on one testbed node
 * (two contexts, one RC QP each, connected through ovrdmad's loopback);
 * run by verbs-cqx.sh (docs/PROVIDER.md, "Re-registration and
 * resizing"). Cases, each printed with its verdict:
 *
 *   cqex       ibv_create_cq_ex with each wc_flags bit alone: every one
 *              made (the clock advertised: 1000 kHz, a 32-bit mask), an
 *              unknown bit EOPNOTSUPP; with all of them at once, a
 *              SEND_WITH_IMM's receive read through every read_* function
 *              (CVLAN, flow tag, TM info 0, no TM flags; its timestamp
 *              between ibv_query_rt_values_ex's raw clock before the post
 *              and after the poll, its wall-clock time between
 *              CLOCK_REALTIME's readings around them);
 *   resize     completions held across a grow and a shrink: below what
 *              the CQ holds is EINVAL and changes nothing, 0 and beyond
 *              max_cqe EINVAL; the CQ's cqe at least what was asked; every
 *              completion polled afterwards, in posting order, none lost;
 *   stream     2000 SENDs (16 in flight) while both sides resize their CQs
 *              between 16 and 1024 entries every few polls (the receive
 *              CQ an ibv_cq_ex, polled with start_poll / next_poll): each
 *              completion once, in order, each message byte-exact;
 *   access     CHANGE_ACCESS LOCAL_WRITE -> + REMOTE_WRITE: same lkey and
 *              rkey, a peer's WRITE lands byte-exact; back to LOCAL_WRITE:
 *              the same WRITE completes REM_ACCESS_ERR;
 *   pd         CHANGE_PD to another PD: same keys, a WRITE through them
 *              REM_ACCESS_ERR, a receive posted before the rereg takes a
 *              SEND as a bad receive (LOC_PROT_ERR, sender REM_OP_ERR);
 *              back to the QP's PD: works again;
 *   translate  CHANGE_TRANSLATION to private memory, then to a memfd
 *              (shared), with a new PD and rights at once: mr->addr and
 *              length follow, a WRITE through the new rkey lands
 *              byte-exact in the new range and nowhere else, the old
 *              rkey (when it changed) REM_ACCESS_ERR;
 *   errors     libibverbs' own refusal (access without CHANGE_ACCESS:
 *              IBV_REREG_MR_ERR_INPUT, the MR still works); the
 *              provider's (flags 0, REMOTE_WRITE without LOCAL_WRITE, a PD
 *              of another context, a range with nothing mapped:
 *              IBV_REREG_MR_ERR_CMD with errno EINVAL / EINVAL / EINVAL /
 *              EFAULT): the MR is then unusable - a peer's WRITE through
 *              its rkey REM_ACCESS_ERR, a local SGE LOC_PROT_ERR, another
 *              rereg fails - and ibv_dereg_mr still returns 0.
 *
 * usage: verbs_cqx [-d DEV] [CASE...]   (default: every case)
 * Exit 0 when every check held; each failure is printed.
 */
#include <getopt.h>
#include <sys/mman.h>

/* one process: the TCP exchange of verbs_common.h goes unused */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "verbs_common.h"

#define BUF 4096u
#define NMSG 2000u
#define WIN 16u
#define MSG 256u

static int failures;
static const char *devname;
/* wc_flags of the receive CQ side_open makes with ibv_create_cq_ex */
static uint64_t rcqx_flags = IBV_WC_STANDARD_FLAGS;

#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "verbs_cqx: FAIL %s:%d: ", __func__, \
				__LINE__);                                   \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
			failures++;                                          \
		}                                                            \
	} while (0)

/* One side: its own context (as rdma-core's tests), PD, CQs, QP. */
struct side {
	struct vc_dev d;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_cq_ex *rcqx; /* rcq made by ibv_create_cq_ex, or NULL */
	struct ibv_qp *qp;
	uint8_t *buf; /* BUF bytes, registered as mr */
	struct ibv_mr *mr;
};

static void side_open(struct side *s, bool rcq_ex, int cqe)
{
	struct ibv_qp_init_attr qa = { 0 };

	vc_open(&s->d, devname);
	s->pd = ibv_alloc_pd(s->d.ctx);
	s->scq = ibv_create_cq(s->d.ctx, cqe, NULL, NULL, 0);
	if (rcq_ex) {
		struct ibv_cq_init_attr_ex a = {
			.cqe = (uint32_t)cqe,
			.wc_flags = rcqx_flags,
		};

		s->rcqx = ibv_create_cq_ex(s->d.ctx, &a);
		s->rcq = s->rcqx ? ibv_cq_ex_to_cq(s->rcqx) : NULL;
	} else {
		s->rcq = ibv_create_cq(s->d.ctx, cqe, NULL, NULL, 0);
	}
	if (!s->pd || !s->scq || !s->rcq)
		vc_die("pd / cq: %s", strerror(errno));
	qa.send_cq = s->scq;
	qa.recv_cq = s->rcq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	s->qp = ibv_create_qp(s->pd, &qa);
	s->buf = aligned_alloc(4096, BUF);
	if (!s->qp || !s->buf)
		vc_die("qp: %s", strerror(errno));
	memset(s->buf, 0, BUF);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	if (!s->mr)
		vc_die("reg_mr: %s", strerror(errno));
}

static void side_close(struct side *s)
{
	if (s->mr && ibv_dereg_mr(s->mr))
		CHECK(0, "dereg_mr: %s", strerror(errno));
	ibv_destroy_qp(s->qp);
	ibv_destroy_cq(s->scq);
	ibv_destroy_cq(s->rcq);
	ibv_dealloc_pd(s->pd);
	ibv_close_device(s->d.ctx);
	free(s->buf);
}

/* Both QPs to RESET (forgetting their work and unpolled completions),
 * then connected to each other again. */
static void connect_pair(struct side *a, struct side *b)
{
	struct ibv_qp_attr r = { .qp_state = IBV_QPS_RESET };
	struct vc_path p = vc_path_default();
	struct vc_qpinfo ia, ib;

	if (ibv_modify_qp(a->qp, &r, IBV_QP_STATE) ||
	    ibv_modify_qp(b->qp, &r, IBV_QP_STATE))
		vc_die("modify to RESET: %s", strerror(errno));
	vc_qpinfo_of(&a->d, a->qp, 0, &ia);
	vc_qpinfo_of(&b->d, b->qp, 0, &ib);
	p.min_rnr_timer = 1;
	if (vc_connect(&a->d, a->qp, 0, &ib, &p, true) ||
	    vc_connect(&b->d, b->qp, 0, &ia, &p, true))
		vc_die("connect: %s", strerror(errno));
}

/* One completion of @cq within 5 s; false on timeout. */
static bool poll1(struct ibv_cq *cq, struct ibv_wc *wc)
{
	double t0 = vc_now();

	while (vc_now() - t0 < 5) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			vc_die("poll_cq: %d", n);
		if (n)
			return true;
	}
	return false;
}

static int post_send1(struct side *s, enum ibv_wr_opcode op, uint64_t wr_id,
		      void *addr, uint32_t len, uint32_t lkey, uint64_t raddr,
		      uint32_t rkey)
{
	struct ibv_sge g = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id,
				  .sg_list = &g,
				  .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(s->qp, &wr, &bad);
}

static int post_recv1(struct side *s, uint64_t wr_id, void *addr, uint32_t len,
		      uint32_t lkey)
{
	struct ibv_sge g = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &g, .num_sge = 1 },
			   *bad;

	return ibv_post_recv(s->qp, &wr, &bad);
}

/* A's WRITE of @len bytes from its buffer to (@raddr, @rkey): its
 * completion status (-1: none within 5 s). */
static int write_status(struct side *a, uint64_t raddr, uint32_t rkey,
			uint32_t len)
{
	struct ibv_wc wc;

	if (post_send1(a, IBV_WR_RDMA_WRITE, 7, a->buf, len, a->mr->lkey, raddr,
		       rkey))
		return -2;
	return poll1(a->scq, &wc) ? (int)wc.status : -1;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}

/* ---- the extended CQ ------------------------------------------------------ */

static void case_cqex(void)
{
	const uint64_t others = IBV_WC_EX_WITH_CVLAN | IBV_WC_EX_WITH_FLOW_TAG |
				IBV_WC_EX_WITH_TM_INFO;
	struct side a = { 0 }, b = { 0 };
	struct ibv_device_attr_ex dx;
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_wc_tm_info tm;
	struct ibv_wc wc;
	struct ibv_cq_ex *cx = b.rcqx;
	struct ibv_sge g;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_values_ex v0 = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct ibv_values_ex v1 = v0;
	struct timespec w0, w1;
	int rc;

	rcqx_flags = IBV_WC_STANDARD_FLAGS | others |
		     IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
		     IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
	side_open(&a, false, 16);
	side_open(&b, true, 16);
	rcqx_flags = IBV_WC_STANDARD_FLAGS;
	cx = b.rcqx;
	CHECK(!ibv_query_device_ex(b.d.ctx, NULL, &dx) &&
		      dx.hca_core_clock == 1000 &&
		      dx.completion_timestamp_mask == UINT32_MAX,
	      "the clock: %" PRIu64 " kHz, mask %#" PRIx64, dx.hca_core_clock,
	      dx.completion_timestamp_mask);
	for (unsigned int bit = 0; bit < 13; bit++) {
		struct ibv_cq_init_attr_ex ca = { .cqe = 8,
						  .wc_flags = 1ull << bit };
		struct ibv_cq_ex *c = ibv_create_cq_ex(b.d.ctx, &ca);
		/* bits 0-11 are verbs' (11: the wall-clock timestamp) */
		bool known = bit < 12;

		CHECK(known ? c != NULL : !c && errno == EOPNOTSUPP,
		      "wc_flags %#llx: %p %s", (unsigned long long)ca.wc_flags,
		      (void *)c, strerror(errno));
		if (c)
			ibv_destroy_cq(ibv_cq_ex_to_cq(c));
	}
	connect_pair(&a, &b);
	post_recv1(&b, 42, b.buf, BUF, b.mr->lkey);
	g = (struct ibv_sge){ (uintptr_t)a.buf, 300, a.mr->lkey };
	wr.wr_id = 1;
	wr.sg_list = &g;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htonl(0x12345678);
	CHECK(!ibv_query_rt_values_ex(b.d.ctx, &v0) &&
		      v0.comp_mask == IBV_VALUES_MASK_RAW_CLOCK,
	      "query_rt_values_ex: %s", strerror(errno));
	clock_gettime(CLOCK_REALTIME, &w0);
	CHECK(!ibv_post_send(a.qp, &wr, &bad), "post");
	CHECK(poll1(a.scq, &wc) && wc.status == IBV_WC_SUCCESS, "send: %s",
	      vc_st(wc.status));
	for (double t0 = vc_now();
	     (rc = ibv_start_poll(cx, &pa)) == ENOENT && vc_now() - t0 < 5;)
		;
	CHECK(rc == 0, "start_poll: %d", rc);
	clock_gettime(CLOCK_REALTIME, &w1);
	CHECK(!ibv_query_rt_values_ex(b.d.ctx, &v1), "query_rt_values_ex");
	if (!rc) {
		unsigned int f = ibv_wc_read_wc_flags(cx);
		/* raw: microseconds modulo 2^32, so compared as distances */
		uint32_t t = (uint32_t)ibv_wc_read_completion_ts(cx);
		uint32_t t0 = (uint32_t)v0.raw_clock.tv_nsec;
		uint32_t t1 = (uint32_t)v1.raw_clock.tv_nsec;
		uint64_t wc_ns = ibv_wc_read_completion_wallclock_ns(cx);
		uint64_t n0 = (uint64_t)w0.tv_sec * 1000000000u +
			      (uint64_t)w0.tv_nsec;
		uint64_t n1 = (uint64_t)w1.tv_sec * 1000000000u +
			      (uint64_t)w1.tv_nsec;

		CHECK(t - t0 <= t1 - t0 && t1 - t0 < 5000000u,
		      "completion timestamp %u not in [%u, %u]", t, t0, t1);
		/* the wall clock to the microsecond (two truncations) */
		CHECK(wc_ns + 2000u >= n0 && wc_ns <= n1 + 2000u,
		      "wall-clock %" PRIu64 " not in [%" PRIu64 ", %" PRIu64
		      "]",
		      wc_ns, n0, n1);

		CHECK(cx->wr_id == 42 && cx->status == IBV_WC_SUCCESS,
		      "wr_id %" PRIu64 " status %d", cx->wr_id, cx->status);
		CHECK(ibv_wc_read_opcode(cx) == IBV_WC_RECV, "opcode %d",
		      ibv_wc_read_opcode(cx));
		CHECK(ibv_wc_read_byte_len(cx) == 300, "byte_len %u",
		      ibv_wc_read_byte_len(cx));
		CHECK((f & IBV_WC_WITH_IMM) &&
			      ntohl(ibv_wc_read_imm_data(cx)) == 0x12345678,
		      "imm");
		CHECK(ibv_wc_read_qp_num(cx) == b.qp->qp_num &&
			      ibv_wc_read_src_qp(cx) == a.qp->qp_num,
		      "qp_num / src_qp");
		CHECK(ibv_wc_read_slid(cx) == 0 && ibv_wc_read_sl(cx) == 0 &&
			      ibv_wc_read_dlid_path_bits(cx) == 0,
		      "slid / sl / dlid_path_bits");
		memset(&tm, 0xff, sizeof(tm));
		ibv_wc_read_tm_info(cx, &tm);
		CHECK(ibv_wc_read_cvlan(cx) == 0 &&
			      ibv_wc_read_flow_tag(cx) == 0 && tm.tag == 0 &&
			      tm.priv == 0 &&
			      !(f & (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID)),
		      "cvlan / flow tag / tm info");
		CHECK(ibv_next_poll(cx) == ENOENT, "one completion only");
		ibv_end_poll(cx);
	}
	side_close(&a);
	side_close(&b);
}

/* ---- resize -------------------------------------------------------------- */

/* Waits until B received @n SENDs (its receive CQ), then a little more
 * for A's completions, which follow the ACKs. */
static void recv_n(struct side *b, unsigned int n)
{
	struct ibv_wc wc;

	for (unsigned int i = 0; i < n; i++)
		if (!poll1(b->rcq, &wc) || wc.status != IBV_WC_SUCCESS)
			vc_die("receive %u: %s", i, vc_st(wc.status));
	usleep(200000);
}

static void case_resize(void)
{
	struct side a = { 0 }, b = { 0 };
	struct ibv_wc wc;
	unsigned int posted = 0, polled = 0;
	int rc;

	side_open(&a, false, 4);
	side_open(&b, false, 64);
	connect_pair(&a, &b);
	CHECK(a.scq->cqe >= 4, "cqe %d", a.scq->cqe);
	for (unsigned int i = 0; i < 60; i++)
		post_recv1(&b, i, b.buf, BUF, b.mr->lkey);
	/* 3 completions held by a CQ of 4 */
	for (; posted < 3; posted++)
		post_send1(&a, IBV_WR_SEND, posted, a.buf, 64, a.mr->lkey, 0,
			   0);
	recv_n(&b, 3);
	rc = ibv_resize_cq(a.scq, 2);
	CHECK(rc == EINVAL, "shrink below 3 held: %d (want EINVAL)", rc);
	CHECK(ibv_resize_cq(a.scq, 0) == EINVAL, "resize to 0");
	CHECK(ibv_resize_cq(a.scq, a.d.attr.max_cqe + 1) == EINVAL,
	      "resize beyond max_cqe");
	rc = ibv_resize_cq(a.scq, 3);
	CHECK(!rc && a.scq->cqe >= 3,
	      "shrink to exactly what it holds: %d, cqe %d", rc, a.scq->cqe);
	/* grow with them held, add 50 more */
	rc = ibv_resize_cq(a.scq, 100);
	CHECK(!rc && a.scq->cqe >= 100, "grow to 100: %d, cqe %d", rc,
	      a.scq->cqe);
	for (; posted < 53; posted++)
		post_send1(&a, IBV_WR_SEND, posted, a.buf, 64, a.mr->lkey, 0,
			   0);
	recv_n(&b, 50);
	rc = ibv_resize_cq(a.scq, 52);
	CHECK(rc == EINVAL, "shrink below 53 held: %d", rc);
	rc = ibv_resize_cq(a.scq, 53);
	CHECK(!rc && a.scq->cqe >= 53 && a.scq->cqe < 100,
	      "shrink 128 -> 53 with 53 held: %d, cqe %d", rc, a.scq->cqe);
	while (polled < posted && poll1(a.scq, &wc)) {
		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND,
		      "completion %u: %s", polled, vc_st(wc.status));
		CHECK(wc.wr_id == polled, "completion %u is wr_id %" PRIu64,
		      polled, wc.wr_id);
		polled++;
	}
	CHECK(polled == posted, "%u of %u completions", polled, posted);
	CHECK(ibv_poll_cq(a.scq, 1, &wc) == 0, "a completion too many");
	/* empty again: any size down to 1 */
	CHECK(!ibv_resize_cq(a.scq, 1) && a.scq->cqe >= 1, "shrink empty");
	side_close(&a);
	side_close(&b);
}

/* the ibv_cq_ex's next completion: wr_id, status, byte_len */
static bool pollx(struct ibv_cq_ex *cq, bool *started, uint64_t *wr_id,
		  int *status, uint32_t *len)
{
	struct ibv_poll_cq_attr pa = { 0 };
	int rc = *started ? ibv_next_poll(cq) : ibv_start_poll(cq, &pa);

	if (rc == ENOENT) {
		if (*started)
			ibv_end_poll(cq);
		*started = false;
		return false;
	}
	if (rc)
		vc_die("start/next_poll: %d", rc);
	*started = true;
	*wr_id = cq->wr_id;
	*status = cq->status;
	*len = ibv_wc_read_byte_len(cq);
	return true;
}

static void case_stream(void)
{
	struct side a = { 0 }, b = { 0 };
	static const int sizes[] = { 16, 1024, 40, 200, 17, 600 };
	unsigned int sent = 0, sdone = 0, rposted = 0, rdone = 0, k = 0;
	bool started = false;
	double t0 = vc_now();

	side_open(&a, false, 16);
	side_open(&b, true, 16);
	connect_pair(&a, &b);
	for (; rposted < WIN; rposted++)
		post_recv1(&b, rposted, b.buf + (rposted % WIN) * MSG, MSG,
			   b.mr->lkey);
	while ((sdone < NMSG || rdone < NMSG) && vc_now() - t0 < 60) {
		struct ibv_wc wc;
		uint64_t id;
		uint32_t len;
		int st;

		while (sent < NMSG && sent - sdone < WIN) {
			uint8_t *p = a.buf + (sent % WIN) * MSG;

			fill(p, MSG, sent);
			if (post_send1(&a, IBV_WR_SEND, sent, p, MSG,
				       a.mr->lkey, 0, 0))
				vc_die("post_send %u", sent);
			sent++;
		}
		if (ibv_poll_cq(a.scq, 1, &wc) == 1) {
			CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == sdone,
			      "send completion %u: wr_id %" PRIu64 " %s", sdone,
			      wc.wr_id, vc_st(wc.status));
			sdone++;
		}
		while (pollx(b.rcqx, &started, &id, &st, &len)) {
			uint8_t want[MSG];

			fill(want, MSG, rdone);
			CHECK(st == IBV_WC_SUCCESS && id == rdone && len == MSG,
			      "receive %u: wr_id %" PRIu64 " status %d len %u",
			      rdone, id, st, len);
			CHECK(!memcmp(b.buf + (id % WIN) * MSG, want, MSG),
			      "message %u differs", rdone);
			rdone++;
			if (rposted < NMSG) {
				/* end the poll before posting: the buffer
				 * is read, the receive may be reused */
				ibv_end_poll(b.rcqx);
				started = false;
				post_recv1(&b, rposted,
					   b.buf + (rposted % WIN) * MSG, MSG,
					   b.mr->lkey);
				rposted++;
			}
		}
		if (++k % 7 == 0) {
			int n = sizes[(k / 7) % 6];

			/* never below what either CQ may hold: WIN */
			CHECK(!ibv_resize_cq(a.scq, n) && a.scq->cqe >= n,
			      "resize send CQ to %d", n);
			CHECK(!ibv_resize_cq(b.rcq, n) && b.rcq->cqe >= n,
			      "resize receive CQ to %d", n);
		}
	}
	if (started)
		ibv_end_poll(b.rcqx);
	CHECK(sdone == NMSG && rdone == NMSG, "%u sends, %u receives of %u",
	      sdone, rdone, NMSG);
	printf("verbs_cqx: stream: %u messages, %u resizes of each CQ\n", rdone,
	       k / 7);
	side_close(&a);
	side_close(&b);
}

/* ---- rereg --------------------------------------------------------------- */

static void case_access(void)
{
	struct side a = { 0 }, b = { 0 };
	uint32_t lkey, rkey;
	int rc, st;

	side_open(&a, false, 64);
	side_open(&b, false, 64);
	connect_pair(&a, &b);
	/* B's region: LOCAL_WRITE only, then REMOTE_WRITE added */
	CHECK(!ibv_rereg_mr(b.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			    IBV_ACCESS_LOCAL_WRITE),
	      "rereg to LOCAL_WRITE: %s", strerror(errno));
	st = write_status(&a, (uintptr_t)b.buf, b.mr->rkey, 512);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE without REMOTE_WRITE: %d",
	      st);
	connect_pair(&a, &b);
	lkey = b.mr->lkey;
	rkey = b.mr->rkey;
	rc = ibv_rereg_mr(b.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(!rc, "rereg + REMOTE_WRITE: %d %s", rc, strerror(errno));
	CHECK(b.mr->lkey == lkey && b.mr->rkey == rkey,
	      "keys changed: %#x/%#x -> %#x/%#x", lkey, rkey, b.mr->lkey,
	      b.mr->rkey);
	fill(a.buf, BUF, 1);
	st = write_status(&a, (uintptr_t)b.buf + 100, rkey, 3000);
	CHECK(st == IBV_WC_SUCCESS, "WRITE after rereg: %d", st);
	CHECK(!memcmp(b.buf + 100, a.buf, 3000), "WRITE's bytes differ");
	side_close(&a);
	side_close(&b);
}

static void case_pd(void)
{
	struct side a = { 0 }, b = { 0 };
	struct ibv_pd *pd2;
	struct ibv_wc wc;
	uint32_t rkey;
	int st;

	side_open(&a, false, 64);
	side_open(&b, false, 64);
	connect_pair(&a, &b);
	pd2 = ibv_alloc_pd(b.d.ctx);
	rkey = b.mr->rkey;
	/* a receive posted before the rereg is checked again; one posted
	 * after is refused as it comes */
	for (uint64_t id = 1; id <= 2; id++) {
		post_recv1(&b, id, b.buf, BUF, b.mr->lkey);
		if (id == 1) {
			CHECK(!ibv_rereg_mr(b.mr, IBV_REREG_MR_CHANGE_PD, pd2,
					    NULL, 0, 0),
			      "rereg to pd2: %s", strerror(errno));
			CHECK(b.mr->pd == pd2 && b.mr->rkey == rkey,
			      "pd or keys not as kept");
			CHECK(ibv_dealloc_pd(pd2) == EBUSY,
			      "pd2 in use by the MR");
		}
		CHECK(!post_send1(&a, IBV_WR_SEND, id, a.buf, 64, a.mr->lkey, 0,
				  0),
		      "post SEND");
		CHECK(poll1(a.scq, &wc) && wc.status == IBV_WC_REM_OP_ERR,
		      "SEND into receive %" PRIu64 " of the other PD: %s", id,
		      vc_st(wc.status));
		CHECK(poll1(b.rcq, &wc) && wc.wr_id == id &&
			      wc.status == IBV_WC_LOC_PROT_ERR,
		      "receive %" PRIu64 ": %s", id, vc_st(wc.status));
		connect_pair(&a, &b);
	}
	st = write_status(&a, (uintptr_t)b.buf, rkey, 64);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE into a region of pd2: %d",
	      st);
	connect_pair(&a, &b);
	CHECK(!ibv_rereg_mr(b.mr, IBV_REREG_MR_CHANGE_PD, b.pd, NULL, 0, 0),
	      "rereg back: %s", strerror(errno));
	fill(a.buf, BUF, 2);
	st = write_status(&a, (uintptr_t)b.buf, b.mr->rkey, BUF);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(a.buf, b.buf, BUF),
	      "WRITE back in the QP's PD: %d", st);
	CHECK(!ibv_dealloc_pd(pd2), "pd2 free again");
	side_close(&a);
	side_close(&b);
}

static void case_translate(void)
{
	struct side a = { 0 }, b = { 0 };
	size_t len = 3 * 4096;
	uint8_t *priv = mmap(NULL, len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int mfd = memfd_create("verbs_cqx", 0);
	uint8_t *shm;
	uint8_t old[BUF];
	uint32_t rkey;
	struct ibv_pd *pd2;
	int st;

	if (priv == MAP_FAILED || mfd < 0 || ftruncate(mfd, (off_t)len))
		vc_die("memory: %s", strerror(errno));
	shm = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (shm == MAP_FAILED)
		vc_die("mmap memfd: %s", strerror(errno));
	side_open(&a, false, 64);
	side_open(&b, false, 64);
	connect_pair(&a, &b);
	memset(priv, 0x11, len);
	memset(shm, 0x22, len);
	fill(b.buf, BUF, 9);
	memcpy(old, b.buf, BUF);
	rkey = b.mr->rkey;
	CHECK(!ibv_rereg_mr(b.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			    priv + 100, len - 200, 0),
	      "rereg to private memory: %s", strerror(errno));
	CHECK(b.mr->addr == priv + 100 && b.mr->length == len - 200,
	      "addr / length not the new range");
	fill(a.buf, BUF, 3);
	st = write_status(&a, (uintptr_t)priv + 100, b.mr->rkey, BUF);
	CHECK(st == IBV_WC_SUCCESS, "WRITE into the new range: %d", st);
	CHECK(!memcmp(priv + 100, a.buf, BUF) && priv[99] == 0x11 &&
		      priv[100 + BUF] == 0x11,
	      "new range's bytes");
	CHECK(!memcmp(b.buf, old, BUF), "the old range was written");
	if (b.mr->rkey != rkey) {
		st = write_status(&a, (uintptr_t)b.buf, rkey, 64);
		CHECK(st == IBV_WC_REM_ACCESS_ERR, "old rkey: %d", st);
		connect_pair(&a, &b);
	}
	/* to shared memory, with another PD and fewer rights at once:
	 * the QP's PD is b.pd, so first keep it, then move it */
	pd2 = ibv_alloc_pd(b.d.ctx);
	CHECK(!ibv_rereg_mr(b.mr,
			    IBV_REREG_MR_CHANGE_TRANSLATION |
				    IBV_REREG_MR_CHANGE_ACCESS,
			    NULL, shm, len,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
	      "rereg to a memfd: %s", strerror(errno));
	fill(a.buf, BUF, 4);
	st = write_status(&a, (uintptr_t)shm + 4096, b.mr->rkey, BUF);
	CHECK(st == IBV_WC_SUCCESS && !memcmp(shm + 4096, a.buf, BUF) &&
		      shm[4095] == 0x22 && shm[2 * 4096] == 0x22,
	      "WRITE into the memfd: %d", st);
	CHECK(priv[100] != 0x22, "private memory untouched");
	CHECK(!ibv_rereg_mr(b.mr,
			    IBV_REREG_MR_CHANGE_TRANSLATION |
				    IBV_REREG_MR_CHANGE_PD,
			    pd2, shm, 4096, 0),
	      "rereg to a page with pd2: %s", strerror(errno));
	CHECK(b.mr->pd == pd2, "pd2");
	st = write_status(&a, (uintptr_t)shm, b.mr->rkey, 64);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "WRITE, region of pd2: %d", st);
	CHECK(!ibv_dereg_mr(b.mr), "dereg");
	b.mr = NULL;
	ibv_dealloc_pd(pd2);
	side_close(&a);
	side_close(&b);
	munmap(shm, len);
	close(mfd);
	munmap(priv, len);
}

/* @mr after a failed rereg: unusable through its keys, deregistered
 * with 0. */
static void check_dead(struct side *a, struct side *b, const char *what)
{
	struct ibv_wc wc;
	int st;

	st = write_status(a, (uintptr_t)b->buf, b->mr->rkey, 64);
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "%s: peer's WRITE: %d", what, st);
	connect_pair(a, b);
	CHECK(!post_send1(b, IBV_WR_SEND, 5, b->buf, 64, b->mr->lkey, 0, 0),
	      "%s: post", what);
	CHECK(poll1(b->scq, &wc) && wc.status == IBV_WC_LOC_PROT_ERR,
	      "%s: local SGE: %s", what, vc_st(wc.status));
	connect_pair(a, b);
	CHECK(ibv_rereg_mr(b->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE) == IBV_REREG_MR_ERR_CMD,
	      "%s: a later rereg", what);
	CHECK(!ibv_dereg_mr(b->mr), "%s: dereg: %s", what, strerror(errno));
	b->mr = ibv_reg_mr(b->pd, b->buf, BUF,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!b->mr)
		vc_die("reg_mr: %s", strerror(errno));
}

static void case_errors(void)
{
	struct side a = { 0 }, b = { 0 };
	struct vc_dev other;
	struct ibv_pd *opd;
	void *hole;
	int rc, st;

	side_open(&a, false, 64);
	side_open(&b, false, 64);
	connect_pair(&a, &b);
	/* libibverbs refuses, the MR stays valid */
	errno = 0;
	rc = ibv_rereg_mr(b.mr, IBV_REREG_MR_CHANGE_PD, b.pd, NULL, 0,
			  IBV_ACCESS_LOCAL_WRITE);
	CHECK(rc == IBV_REREG_MR_ERR_INPUT && errno == EINVAL,
	      "access without CHANGE_ACCESS: %d %s", rc, strerror(errno));
	st = write_status(&a, (uintptr_t)b.buf, b.mr->rkey, 64);
	CHECK(st == IBV_WC_SUCCESS, "MR valid after ERR_INPUT: %d", st);

	errno = 0;
	rc = ibv_rereg_mr(b.mr, 0, NULL, NULL, 0, 0);
	CHECK(rc == IBV_REREG_MR_ERR_CMD && errno == EINVAL, "flags 0: %d %s",
	      rc, strerror(errno));
	check_dead(&a, &b, "flags 0");

	errno = 0;
	rc = ibv_rereg_mr(b.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			  IBV_ACCESS_REMOTE_WRITE);
	CHECK(rc == IBV_REREG_MR_ERR_CMD && errno == EINVAL,
	      "REMOTE_WRITE without LOCAL_WRITE: %d %s", rc, strerror(errno));
	check_dead(&a, &b, "REMOTE_WRITE alone");

	vc_open(&other, devname);
	opd = ibv_alloc_pd(other.ctx);
	errno = 0;
	rc = ibv_rereg_mr(b.mr, IBV_REREG_MR_CHANGE_PD, opd, NULL, 0, 0);
	CHECK(rc == IBV_REREG_MR_ERR_CMD && errno == EINVAL,
	      "PD of another context: %d %s", rc, strerror(errno));
	check_dead(&a, &b, "other context's PD");
	ibv_dealloc_pd(opd);
	ibv_close_device(other.ctx);

	hole = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(hole, 8192);
	errno = 0;
	rc = ibv_rereg_mr(b.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, hole,
			  8192, 0);
	CHECK(rc == IBV_REREG_MR_ERR_CMD && errno == EFAULT,
	      "nothing mapped: %d %s", rc, strerror(errno));
	/* deregistered by the attempt: the old rkey is gone */
	check_dead(&a, &b, "nothing mapped");
	side_close(&a);
	side_close(&b);
}

static const struct {
	const char *name;
	void (*run)(void);
} cases[] = {
	{ "cqex", case_cqex },	   { "resize", case_resize },
	{ "stream", case_stream }, { "access", case_access },
	{ "pd", case_pd },	   { "translate", case_translate },
	{ "errors", case_errors },
};

int main(int argc, char **argv)
{
	int opt, ran = 0;

	vc_prog = "verbs_cqx";
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:")) != -1)
		if (opt == 'd')
			devname = optarg;
		else
			vc_die("usage: verbs_cqx [-d DEV] [CASE...]");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool want = optind == argc;
		int before = failures;

		for (int j = optind; j < argc; j++)
			want |= !strcmp(argv[j], cases[i].name);
		if (!want)
			continue;
		cases[i].run();
		ran++;
		printf("verbs_cqx: %s: %s\n", cases[i].name,
		       failures == before ? "ok" : "FAIL");
	}
	if (!ran)
		vc_die("no such case");
	printf("verbs_cqx: %s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
