// SPDX-License-Identifier: MIT
/*
 * verbs_api: what an application sees of the extended verbs and of the
 * data path, written against plain libibverbs (no ovrdma header), run on
 * two testbed nodes by verbs-api.sh (docs/PROVIDER.md section 6):
 *
 *   1. local checks: ibv_create_cq_ex refuses unknown comp_mask bits
 *      (EINVAL), completion fields and flags it cannot give (EOPNOTSUPP),
 *      cqe 0 (EINVAL); a CQ made with a completion channel holds the
 *      channel (destroy_comp_channel EBUSY until the CQ is gone);
 *      ibv_reg_dmabuf_mr with fd -1 is EBADF, with a file that is no
 *      dma-buf EOPNOTSUPP; create_qp accepts max_qp_wr and max_sge as
 *      the device reports them and refuses one more (EINVAL), its
 *      max_inline_data bound is found by bisection as libfabric does and
 *      one more is refused; create_cq above max_cqe is EINVAL;
 *      a CQ of max_cqe entries (millions) costs neither the
 *      application nor ovrdmad more than a few MB of shared memory
 *      (RssShmem) while completions pass through it; a receive-only QP
 *      (max_send_wr 0, qperf's server) and a send-only QP (max_recv_wr
 *      0) are granted 0 on that side, posting there is ENOMEM (a full
 *      queue), and a receive posted in RESET, before INIT, receives
 *      the send-only QP's SEND (the two connected to each other);
 *   2. one RC QP whose CQ is an ibv_cq_ex: a WRITE_WITH_IMM and a
 *      SEND_WITH_IMM (into receives the server posted in RESET, right
 *      after ibv_create_qp), their completions read through start_poll /
 *      read_opcode / read_byte_len / read_imm_data / read_qp_num /
 *      read_wc_flags on both sides, the data checked byte by byte;
 *   3. the data path: a stream of RDMA WRITEs (a window of them, three
 *      in four unsignaled, polled through the ibv_cq_ex interface) and a
 *      stream of SENDs (the receiver reposting its receives and polling
 *      with ibv_poll_cq), each between two getppid(2) calls that
 *      verbs-api.sh finds in strace's log: the application thread makes
 *      no system call between them. The WRITE stream ends with every
 *      slot of the target checked;
 *   4. completion events on the receiver's CQ (it has a completion
 *      channel): a solicited-only arm ignores receives the sender did
 *      not mark IBV_SEND_SOLICITED and fires for one it did (SEND and
 *      RDMA_WRITE_WITH_IMM); a plain arm fires for any receive; one
 *      event per arm;
 *   5. (`alone`, one process, both QPs on one node) the SRQ limit: a UD
 *      QP on an SRQ with 8 receives and limit 4 takes 5 datagrams from a
 *      second UD QP (ovrdmad's loopback); ibv_get_async_event reports
 *      IBV_EVENT_SRQ_LIMIT_REACHED once, for that SRQ, and the limit
 *      reads 0 again; then it waits in ibv_get_async_event until
 *      verbs-api.sh kills that node's ovrdmad with -9: DEVICE_FATAL
 *      must arrive, posts fail with EIO, polls return, and destroying
 *      everything and closing the device succeed.
 *
 * usage: verbs_api [-d DEV] [-p PORT] [-n COUNT] server
 *        verbs_api [-d DEV] [-p PORT] [-n COUNT] client SERVER_IP
 *        verbs_api [-d DEV] alone
 * Exit 0 when every check held; each failure is printed.
 */
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <sys/syscall.h>

#include "verbs_common.h"

#define SLOT 4096u
#define NSLOT 64u
#define SEND_SZ 256u
#define RQ_DEPTH 128u
#define SQ_DEPTH 128u
#define WINDOW 32u
#define SIG_EVERY 4u
#define IMM_WRITE 0xdeadbeefu
#define IMM_SEND 0x00c0ffeeu

static int failures;

#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "verbs_api: FAIL %s:%d: ", __func__, \
				__LINE__);                                   \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
			failures++;                                          \
		}                                                            \
	} while (0)

static void die(const char *what)
{
	vc_die("%s: %s", what, strerror(errno));
}

/* ---- out of band: one TCP connection (verbs_common.h) -------------------- */

/* What a side tells the other: its QP and the region WRITEs go to. */
struct peer_info {
	struct vc_qpinfo qp;
	uint32_t rkey, pad;
	uint64_t addr;
};

static void sync_byte(int fd, char c)
{
	char got;

	vc_send_all(fd, &c, 1);
	vc_recv_must(fd, &got, 1);
	if (got != c)
		vc_die("out of step with the peer (%c/%c)", c, got);
}

/* ---- 1. local checks ----------------------------------------------------- */

/* Creates an RC QP with @cap on a throwaway CQ; 0 or the errno. When it
 * succeeds, what it granted is in *@cap. */
static int try_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq, .cap = *cap
	};
	struct ibv_qp *qp;

	errno = 0;
	qp = ibv_create_qp(pd, &a);
	if (!qp)
		return errno ? errno : -1;
	*cap = a.cap;
	ibv_destroy_qp(qp);
	return 0;
}

/* The limits the device reports are the limits create_qp enforces, and
 * max_inline_data can be found the way libfabric's verbs provider finds
 * it: by bisecting what create_qp accepts. */
static void check_limits(const struct vc_dev *d, struct ibv_pd *pd)
{
	struct ibv_cq *cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
	struct ibv_qp_cap base = { 4, 4, 1, 1, 0 }, c;
	uint32_t lo = 0, hi = 1u << 20;
	int rc;

	if (!cq)
		die("ibv_create_cq");
	c = base;
	c.max_send_wr = (uint32_t)d->attr.max_qp_wr;
	rc = try_qp(pd, cq, &c);
	CHECK(rc == 0 && c.max_send_wr >= (uint32_t)d->attr.max_qp_wr,
	      "create_qp at max_send_wr = max_qp_wr %d: %s", d->attr.max_qp_wr,
	      strerror(rc));
	c = base;
	c.max_send_wr = (uint32_t)d->attr.max_qp_wr + 1;
	rc = try_qp(pd, cq, &c);
	CHECK(rc == EINVAL, "create_qp above max_qp_wr: %s", strerror(rc));
	c = base;
	c.max_recv_sge = c.max_send_sge = (uint32_t)d->attr.max_sge;
	rc = try_qp(pd, cq, &c);
	CHECK(rc == 0, "create_qp at max_sge %d: %s", d->attr.max_sge,
	      strerror(rc));
	c = base;
	c.max_send_sge = (uint32_t)d->attr.max_sge + 1;
	rc = try_qp(pd, cq, &c);
	CHECK(rc == EINVAL, "create_qp above max_sge: %s", strerror(rc));
	/* bisect max_inline_data: accepted below some bound, refused above */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;

		c = base;
		c.max_inline_data = mid;
		if (try_qp(pd, cq, &c) == 0) {
			CHECK(c.max_inline_data >= mid,
			      "create_qp granted max_inline_data %u < %u asked",
			      c.max_inline_data, mid);
			lo = mid;
		} else {
			hi = mid - 1;
		}
	}
	c = base;
	c.max_inline_data = lo + 1;
	rc = try_qp(pd, cq, &c);
	CHECK(lo >= 64 && rc == EINVAL,
	      "max_inline_data: %u accepted, %u refused with %s", lo, lo + 1,
	      strerror(rc));
	printf("verbs_api: create_qp limits: max_qp_wr %d, max_sge %d, "
	       "max_inline_data %u (bisected), one above each: EINVAL\n",
	       d->attr.max_qp_wr, d->attr.max_sge, lo);
	errno = 0;
	CHECK(!ibv_create_cq(d->ctx, d->attr.max_cqe + 1, NULL, NULL, 0) &&
		      errno == EINVAL,
	      "create_cq above max_cqe %d: %s", d->attr.max_cqe,
	      strerror(errno));
	ibv_destroy_cq(cq);
}

/* Shared memory process @pid touched (RssShmem), in kB; -1 unknown. */
static long rss_shmem_kb(pid_t pid)
{
	char path[64], line[128];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssShmem: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* The ovrdmad behind @ctx: its sysfs tree names it (ovrdma_pid). */
static pid_t service_pid(struct ibv_context *ctx)
{
	char path[512];
	int pid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/ovrdma_pid", ctx->device->ibdev_path);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &pid) != 1)
		pid = -1;
	fclose(f);
	return pid;
}

static int poll_some(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	time_t t0 = time(NULL);
	int k = 0, rc;

	while (k < n && time(NULL) - t0 < 10) {
		rc = ibv_poll_cq(cq, n - k, wc + k);
		if (rc < 0)
			break;
		k += rc;
	}
	return k;
}

/*
 * A CQ of max_cqe entries and QPs with an empty side: the CQ's ring is
 * sized, not committed (a few MB of it at most touched here, by either
 * process, out of 48 bytes x max_cqe); a receive-only QP (max_send_wr 0)
 * and a send-only QP (max_recv_wr 0) are granted 0 there and find that
 * side full (ENOMEM), as mlx5 and rxe. The receive-only QP's receive is
 * posted in RESET, before INIT, and the send-only QP's SEND lands in it
 * (docs/PROVIDER.md, "Receives posted in RESET").
 */
static void check_queues(struct vc_dev *d, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr ro = { .qp_type = IBV_QPT_RC,
				       .cap = { 0, 4, 1, 1, 0 } },
				so = { .qp_type = IBV_QPT_RC,
				       .cap = { 4, 0, 1, 1, 0 } };
	pid_t svc = service_pid(d->ctx);
	long app0 = rss_shmem_kb(getpid()), svc0 = rss_shmem_kb(svc);
	long app1, svc1;
	static uint8_t buf[2][256];
	struct ibv_qp *rq, *sq;
	struct vc_qpinfo ri, si;
	struct vc_path p = vc_path_default();
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	int rc, n;

	cq = ibv_create_cq(d->ctx, d->attr.max_cqe, NULL, NULL, 0);
	CHECK(cq && cq->cqe >= d->attr.max_cqe, "create_cq at max_cqe %d: %s",
	      d->attr.max_cqe, cq ? "smaller" : strerror(errno));
	if (!cq)
		return;
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	ro.send_cq = ro.recv_cq = so.send_cq = so.recv_cq = cq;
	rq = ibv_create_qp(pd, &ro);
	sq = ibv_create_qp(pd, &so);
	CHECK(rq && ro.cap.max_send_wr == 0 && ro.cap.max_recv_wr >= 4,
	      "receive-only QP: %s, granted %u send %u recv WRs",
	      rq ? "ok" : strerror(errno), ro.cap.max_send_wr,
	      ro.cap.max_recv_wr);
	CHECK(sq && so.cap.max_recv_wr == 0 && so.cap.max_send_wr >= 4,
	      "send-only QP: %s, granted %u send %u recv WRs",
	      sq ? "ok" : strerror(errno), so.cap.max_send_wr,
	      so.cap.max_recv_wr);
	if (!rq || !sq)
		die("ibv_create_qp with an empty side");
	{
		struct ibv_sge sge = { (uintptr_t)buf[0], 256, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 7,
					  .sg_list = &sge,
					  .num_sge = 1 },
				   *bad = NULL;

		rc = ibv_post_recv(sq, &wr, &bad);
		CHECK(rc == ENOMEM && bad == &wr,
		      "post_recv on max_recv_wr 0: %s", strerror(rc));
		/* in RESET: kept until the QP leaves it */
		rc = ibv_post_recv(rq, &wr, &bad);
		CHECK(rc == 0, "post_recv in RESET: %s", strerror(rc));
	}
	vc_qpinfo_of(d, rq, 1, &ri);
	vc_qpinfo_of(d, sq, 2, &si);
	p.access = IBV_ACCESS_LOCAL_WRITE;
	if (vc_connect(d, rq, ri.psn, &si, &p, true) ||
	    vc_connect(d, sq, si.psn, &ri, &p, true))
		die("connect the receive-only and send-only QPs");
	{
		struct ibv_sge sge = { (uintptr_t)buf[1], 100, mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 8,
					  .sg_list = &sge,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad = NULL;

		memset(buf[1], 0x5a, 100);
		rc = ibv_post_send(rq, &wr, &bad);
		CHECK(rc == ENOMEM && bad == &wr,
		      "post_send on max_send_wr 0: %s", strerror(rc));
		rc = ibv_post_send(sq, &wr, &bad);
		CHECK(rc == 0, "post_send on the send-only QP: %s",
		      strerror(rc));
	}
	n = poll_some(cq, wc, 2);
	CHECK(n == 2 && wc[0].status == IBV_WC_SUCCESS &&
		      wc[1].status == IBV_WC_SUCCESS,
	      "%d of 2 completions (%s, %s)", n,
	      n > 0 ? vc_st(wc[0].status) : "-",
	      n > 1 ? vc_st(wc[1].status) : "-");
	for (int i = 0; i < n; i++)
		if (wc[i].opcode == IBV_WC_RECV)
			CHECK(wc[i].wr_id == 7 && wc[i].byte_len == 100 &&
				      wc[i].qp_num == rq->qp_num &&
				      buf[0][0] == 0x5a && buf[0][99] == 0x5a,
			      "the receive posted in RESET: wr_id %llu len %u",
			      (unsigned long long)wc[i].wr_id, wc[i].byte_len);
	app1 = rss_shmem_kb(getpid());
	svc1 = rss_shmem_kb(svc);
	CHECK(app0 >= 0 && app1 - app0 < 8192,
	      "a CQ of %d entries: the application's RssShmem grew %ld kB",
	      cq->cqe, app1 - app0);
	CHECK(svc0 >= 0 && svc1 - svc0 < 8192,
	      "a CQ of %d entries: ovrdmad's (pid %d) RssShmem grew %ld kB",
	      cq->cqe, (int)svc, svc1 - svc0);
	printf("verbs_api: a CQ of %d entries (%llu MB of ring): RssShmem "
	       "+%ld kB here, +%ld kB in ovrdmad; receive-only and send-only "
	       "QPs, a receive posted in RESET: ok\n",
	       cq->cqe, (unsigned long long)((uint64_t)cq->cqe * 48 >> 20),
	       app1 - app0, svc1 - svc0);
	CHECK(!ibv_destroy_qp(rq) && !ibv_destroy_qp(sq) &&
		      !ibv_destroy_cq(cq) && !ibv_dereg_mr(mr),
	      "destroying the QPs, the CQ, the MR");
}

static void check_local(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 16 };
	struct ibv_comp_channel *ch;
	struct ibv_cq_ex *cqx;
	struct ibv_mr *mr;
	int fd, rc;

	a.comp_mask = 1u << 7; /* no such attribute */
	errno = 0;
	cqx = ibv_create_cq_ex(ctx, &a);
	CHECK(!cqx && errno == EINVAL, "create_cq_ex comp_mask 0x80: %p %s",
	      (void *)cqx, strerror(errno));
	a.comp_mask = 0;
	a.wc_flags = 1ull << 20; /* no such completion field */
	errno = 0;
	cqx = ibv_create_cq_ex(ctx, &a);
	CHECK(!cqx && errno == EOPNOTSUPP,
	      "create_cq_ex with wc_flags bit 20: %p %s", (void *)cqx,
	      strerror(errno));
	a.wc_flags = IBV_WC_STANDARD_FLAGS;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = 1u << 5; /* no such flag */
	errno = 0;
	cqx = ibv_create_cq_ex(ctx, &a);
	CHECK(!cqx && errno == EOPNOTSUPP, "create_cq_ex flags 0x20: %p %s",
	      (void *)cqx, strerror(errno));
	a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	a.cqe = 0;
	errno = 0;
	cqx = ibv_create_cq_ex(ctx, &a);
	CHECK(!cqx && errno == EINVAL, "create_cq_ex cqe 0: %p %s", (void *)cqx,
	      strerror(errno));

	ch = ibv_create_comp_channel(ctx);
	if (!ch)
		die("ibv_create_comp_channel");
	a.cqe = 16;
	a.channel = ch;
	a.cq_context = &a;
	cqx = ibv_create_cq_ex(ctx, &a);
	CHECK(cqx, "create_cq_ex with a channel: %s", strerror(errno));
	if (cqx) {
		struct ibv_cq *cq = ibv_cq_ex_to_cq(cqx);

		CHECK(cq->context == ctx && cq->channel == ch &&
			      cq->cq_context == &a && cq->cqe >= 16,
		      "create_cq_ex's ibv_cq fields");
		CHECK(ibv_start_poll(cqx, &(struct ibv_poll_cq_attr){ 0 }) ==
			      ENOENT,
		      "start_poll on an empty CQ is not ENOENT");
		CHECK(ibv_req_notify_cq(cq, 0) == 0, "req_notify_cq");
		rc = ibv_destroy_comp_channel(ch);
		CHECK(rc == EBUSY, "destroy_comp_channel with a CQ: %d", rc);
		CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq of a cq_ex");
	}
	rc = ibv_destroy_comp_channel(ch);
	CHECK(rc == 0, "destroy_comp_channel: %d (%s)", rc, strerror(rc));

	errno = 0;
	mr = ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE);
	CHECK(!mr && errno == EBADF, "reg_dmabuf_mr fd -1: %p %s", (void *)mr,
	      strerror(errno));
	fd = open("/dev/null", O_RDWR);
	errno = 0;
	mr = ibv_reg_dmabuf_mr(pd, 0, 4096, 0, fd, IBV_ACCESS_LOCAL_WRITE);
	CHECK(!mr && errno == EOPNOTSUPP, "reg_dmabuf_mr of /dev/null: %p %s",
	      (void *)mr, strerror(errno));
	close(fd);
}

/*
 * Thread and parent domains (docs/PROVIDER.md "Parent and thread
 * domains"): the errors ibv_alloc_td(3) / ibv_alloc_parent_domain(3)
 * name, EBUSY for a thread or protection domain that a parent domain
 * names, and a parent domain standing for its protection domain: an MR
 * registered through one is used by a QP of the other (the data path of
 * phase 2 runs, on the server, on a parent domain built here). The
 * application's allocators are never called (ovrdma's rings are the
 * service's): counted.
 */
static unsigned int pd_alloc_calls, pd_free_calls;
static struct ibv_td *side_td;

static void *pd_alloc(struct ibv_pd *pd, void *pd_context, size_t size,
		      size_t alignment, uint64_t resource_type)
{
	(void)pd, (void)size, (void)alignment, (void)resource_type;
	CHECK(pd_context == &pd_alloc_calls, "allocator's pd_context");
	pd_alloc_calls++;
	return IBV_ALLOCATOR_USE_DEFAULT;
}

static void pd_free(struct ibv_pd *pd, void *pd_context, void *ptr,
		    uint64_t resource_type)
{
	(void)pd, (void)pd_context, (void)ptr, (void)resource_type;
	pd_free_calls++;
}

static struct ibv_pd *check_domains(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_parent_domain_init_attr pa = { .pd = pd };
	struct ibv_td_init_attr ta = { .comp_mask = 1 };
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 16, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD
	};
	struct ibv_pd *par, *p2;
	struct ibv_cq_ex *cqx;
	struct ibv_td *td;
	int rc;

	errno = 0;
	td = ibv_alloc_td(ctx, &ta);
	CHECK(!td && errno == EINVAL, "alloc_td comp_mask 1: %p %s", (void *)td,
	      strerror(errno));
	ta.comp_mask = 0;
	td = ibv_alloc_td(ctx, &ta);
	if (!td)
		die("ibv_alloc_td");
	side_td = td;

	pa.pd = NULL;
	errno = 0;
	par = ibv_alloc_parent_domain(ctx, &pa);
	CHECK(!par && errno == EINVAL, "parent domain without a PD: %p %s",
	      (void *)par, strerror(errno));
	pa.pd = pd;
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	pa.alloc = pd_alloc; /* and no free */
	errno = 0;
	par = ibv_alloc_parent_domain(ctx, &pa);
	CHECK(!par && errno == EINVAL,
	      "parent domain, alloc without free: %p %s", (void *)par,
	      strerror(errno));
	pa.comp_mask = 1u << 5;
	errno = 0;
	par = ibv_alloc_parent_domain(ctx, &pa);
	CHECK(!par && errno == EINVAL, "parent domain comp_mask 0x20: %p %s",
	      (void *)par, strerror(errno));

	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
		       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa.free = pd_free;
	pa.pd_context = &pd_alloc_calls;
	pa.td = td;
	par = ibv_alloc_parent_domain(ctx, &pa);
	if (!par)
		die("ibv_alloc_parent_domain");
	CHECK(par->context == ctx && par->handle == pd->handle,
	      "a parent domain's ibv_pd fields");

	pa.pd = par;
	pa.td = NULL;
	errno = 0;
	p2 = ibv_alloc_parent_domain(ctx, &pa);
	CHECK(!p2 && errno == EINVAL, "parent domain of a parent domain: %p %s",
	      (void *)p2, strerror(errno));

	rc = ibv_dealloc_td(td);
	CHECK(rc == EBUSY, "dealloc_td under a parent domain: %d", rc);
	rc = ibv_dealloc_pd(pd);
	CHECK(rc == EBUSY, "dealloc_pd under a parent domain: %d", rc);

	ca.parent_domain = pd; /* a protection domain is not a parent */
	errno = 0;
	cqx = ibv_create_cq_ex(ctx, &ca);
	CHECK(!cqx && errno == EINVAL,
	      "create_cq_ex with a PD as parent: %p %s", (void *)cqx,
	      strerror(errno));
	ca.parent_domain = par;
	cqx = ibv_create_cq_ex(ctx, &ca);
	CHECK(cqx, "create_cq_ex with a parent domain: %s", strerror(errno));
	if (cqx)
		CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)) == 0,
		      "destroy_cq (parent domain's)");
	return par;
}

/* ---- 2. the QP ----------------------------------------------------------- */

struct side {
	struct vc_dev dev;
	struct ibv_pd *pd; /* the server's: a parent domain over @prot */
	struct ibv_pd *prot;
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq; /* the same CQ */
	struct ibv_comp_channel *ch; /* the CQ's */
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf; /* NSLOT slots, then RQ_DEPTH receive buffers */
	size_t len;
	struct peer_info me, peer;
};

static uint8_t pattern(uint64_t i, size_t k)
{
	return (uint8_t)((i * 131u + k * 7u + (k >> 8)) ^ (i >> 3));
}

static void post_recv(struct side *s, unsigned int i);

static void setup(struct side *s, const char *dev, bool server)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 2 * (SQ_DEPTH + RQ_DEPTH),
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
			    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP,
	};
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = SQ_DEPTH,
			 .max_recv_wr = RQ_DEPTH,
			 .max_send_sge = 1,
			 .max_recv_sge = 1,
			 .max_inline_data = 64 },
	};
	vc_open(&s->dev, dev);
	s->prot = s->pd = ibv_alloc_pd(s->dev.ctx);
	if (!s->pd)
		die("ibv_alloc_pd");
	check_local(s->dev.ctx, s->pd);
	check_limits(&s->dev, s->pd);
	check_queues(&s->dev, s->pd);
	if (server)
		s->pd = check_domains(s->dev.ctx, s->prot);

	s->ch = ibv_create_comp_channel(s->dev.ctx);
	if (!s->ch)
		die("ibv_create_comp_channel");
	ca.channel = s->ch;
	s->cqx = ibv_create_cq_ex(s->dev.ctx, &ca);
	if (!s->cqx)
		die("ibv_create_cq_ex");
	s->cq = ibv_cq_ex_to_cq(s->cqx);
	qa.send_cq = qa.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &qa);
	if (!s->qp)
		die("ibv_create_qp");
	s->len = NSLOT * SLOT + RQ_DEPTH * SEND_SZ;
	s->buf = aligned_alloc(4096, s->len);
	if (!s->buf)
		die("aligned_alloc");
	memset(s->buf, 0, s->len);
	/* (the server's QP is on the parent domain, its MR on the
	 * protection domain under it: one domain to the device) */
	s->mr = ibv_reg_mr(s->prot, s->buf, s->len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!s->mr)
		die("ibv_reg_mr");
	/* the QP is in RESET: phase 2's receives, posted before INIT */
	if (server) {
		post_recv(s, 0);
		post_recv(s, 1);
	}
	vc_qpinfo_of(&s->dev, s->qp, (uint32_t)getpid() & 0xffffff, &s->me.qp);
	s->me.rkey = s->mr->rkey;
	s->me.addr = (uintptr_t)s->buf;
}

/* RC towards the peer: WRITEs and SENDs only, fast RNR retries (the SEND
 * stream's receiver reposts as it goes) */
static void connect_qp(struct side *s)
{
	struct vc_path p = vc_path_default();

	p.min_rnr_timer = 1;
	p.rd_atomic = 1;
	p.access = IBV_ACCESS_REMOTE_WRITE;
	errno = vc_connect(&s->dev, s->qp, s->me.qp.psn, &s->peer.qp, &p, true);
	if (errno)
		die("connect the QP");
}

static uint8_t *rbuf(struct side *s, unsigned int i)
{
	return s->buf + NSLOT * SLOT + (size_t)(i % RQ_DEPTH) * SEND_SZ;
}

static void post_recv(struct side *s, unsigned int i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)rbuf(s, i),
			       .length = SEND_SZ,
			       .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1000000u + i,
				  .sg_list = &sge,
				  .num_sge = 1 },
			   *bad;

	if (ibv_post_recv(s->qp, &wr, &bad))
		die("ibv_post_recv");
}

static int post_send(struct side *s, enum ibv_wr_opcode op, uint64_t wr_id,
		     void *addr, uint32_t len, uint64_t raddr, uint32_t imm,
		     unsigned int flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr,
			       .length = len,
			       .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = op,
				  .send_flags = flags,
				  .imm_data = htonl(imm) },
			   *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = s->peer.rkey;
	return ibv_post_send(s->qp, &wr, &bad);
}

/* Waits for one completion through the ibv_cq_ex interface and copies
 * what the read_* functions say. */
struct cqe_ex {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len, qp_num;
	uint32_t imm; /* host order */
	unsigned int flags;
};

static void poll_ex(struct side *s, struct cqe_ex *e)
{
	struct ibv_poll_cq_attr pa = { 0 };
	time_t t0 = time(NULL);
	int rc;

	while ((rc = ibv_start_poll(s->cqx, &pa)) == ENOENT) {
		if (time(NULL) - t0 > 30) {
			fprintf(stderr, "verbs_api: no completion in 30 s\n");
			exit(1);
		}
	}
	if (rc)
		die("ibv_start_poll");
	e->wr_id = s->cqx->wr_id;
	e->status = s->cqx->status;
	e->opcode = ibv_wc_read_opcode(s->cqx);
	e->byte_len = ibv_wc_read_byte_len(s->cqx);
	e->qp_num = ibv_wc_read_qp_num(s->cqx);
	e->flags = ibv_wc_read_wc_flags(s->cqx);
	e->imm = (e->flags & IBV_WC_WITH_IMM) ?
			 ntohl(ibv_wc_read_imm_data(s->cqx)) :
			 0;
	ibv_end_poll(s->cqx);
}

static void phase_cq_ex(struct side *s, int fd, bool server)
{
	struct cqe_ex e;

	if (server) {
		/* receives 0 and 1 were posted in RESET (setup) */
		sync_byte(fd, 'a');
		poll_ex(s, &e);
		CHECK(e.status == IBV_WC_SUCCESS &&
			      e.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
			      e.wr_id == 1000000u && e.byte_len == SLOT &&
			      e.qp_num == s->qp->qp_num &&
			      (e.flags & IBV_WC_WITH_IMM) && e.imm == IMM_WRITE,
		      "WRITE_WITH_IMM completion: status %d opcode %d wr_id "
		      "%llu len %u qpn %u flags 0x%x imm 0x%x",
		      e.status, e.opcode, (unsigned long long)e.wr_id,
		      e.byte_len, e.qp_num, e.flags, e.imm);
		for (size_t k = 0; k < SLOT; k++)
			if (s->buf[k] != pattern(7, k)) {
				CHECK(0, "WRITE_WITH_IMM data differs at %zu",
				      k);
				break;
			}
		poll_ex(s, &e);
		CHECK(e.status == IBV_WC_SUCCESS && e.opcode == IBV_WC_RECV &&
			      e.wr_id == 1000001u && e.byte_len == 100 &&
			      (e.flags & IBV_WC_WITH_IMM) && e.imm == IMM_SEND,
		      "SEND_WITH_IMM completion: status %d opcode %d wr_id "
		      "%llu len %u flags 0x%x imm 0x%x",
		      e.status, e.opcode, (unsigned long long)e.wr_id,
		      e.byte_len, e.flags, e.imm);
		for (size_t k = 0; k < 100; k++)
			if (rbuf(s, 1)[k] != pattern(8, k)) {
				CHECK(0, "SEND_WITH_IMM data differs at %zu",
				      k);
				break;
			}
		sync_byte(fd, 'b');
		return;
	}
	for (size_t k = 0; k < SLOT; k++)
		s->buf[k] = pattern(7, k);
	for (size_t k = 0; k < 100; k++)
		s->buf[SLOT + k] = pattern(8, k);
	sync_byte(fd, 'a');
	if (post_send(s, IBV_WR_RDMA_WRITE_WITH_IMM, 1, s->buf, SLOT,
		      s->peer.addr, IMM_WRITE, IBV_SEND_SIGNALED) ||
	    post_send(s, IBV_WR_SEND_WITH_IMM, 2, s->buf + SLOT, 100, 0,
		      IMM_SEND, IBV_SEND_SIGNALED))
		die("ibv_post_send");
	poll_ex(s, &e);
	CHECK(e.status == IBV_WC_SUCCESS && e.opcode == IBV_WC_RDMA_WRITE &&
		      e.wr_id == 1 && e.qp_num == s->qp->qp_num,
	      "WRITE_WITH_IMM send completion: status %d opcode %d wr_id %llu",
	      e.status, e.opcode, (unsigned long long)e.wr_id);
	poll_ex(s, &e);
	CHECK(e.status == IBV_WC_SUCCESS && e.opcode == IBV_WC_SEND &&
		      e.wr_id == 2,
	      "SEND_WITH_IMM send completion: status %d opcode %d wr_id %llu",
	      e.status, e.opcode, (unsigned long long)e.wr_id);
	sync_byte(fd, 'b');
}

/* ---- 3. the data path ---------------------------------------------------- */

/* The markers verbs-api.sh looks for in strace's log. */
static void marker(void)
{
	syscall(SYS_getppid);
}

/* A WRITE stream: COUNT WRITEs of one slot each, WINDOW in flight, every
 * SIG_EVERY-th signaled (a signaled completion retires the unsignaled
 * ones before it), polled through the ibv_cq_ex interface. Only errors
 * are recorded inside; the caller reports them after the marker. */
static int write_stream(struct side *s, unsigned int count)
{
	unsigned int posted = 0, done = 0, bad = 0;
	struct ibv_poll_cq_attr pa = { 0 };

	while (done < count) {
		while (posted < count && posted - done < WINDOW) {
			unsigned int slot = posted % NSLOT;
			unsigned int fl =
				(posted % SIG_EVERY == SIG_EVERY - 1 ||
				 posted == count - 1) ?
					IBV_SEND_SIGNALED :
					0;

			if (post_send(s, IBV_WR_RDMA_WRITE, posted,
				      s->buf + (size_t)slot * SLOT, SLOT,
				      s->peer.addr + (uint64_t)slot * SLOT, 0,
				      fl))
				return -1;
			posted++;
		}
		if (ibv_start_poll(s->cqx, &pa) == 0) {
			do {
				if (s->cqx->status != IBV_WC_SUCCESS ||
				    s->cqx->wr_id < done)
					bad++;
				else
					done = (unsigned int)s->cqx->wr_id + 1;
			} while (ibv_next_poll(s->cqx) == 0);
			ibv_end_poll(s->cqx);
			if (bad)
				return -2;
		}
	}
	return 0;
}

/* A SEND stream, sender side: sequence number in the first 4 bytes. */
static int send_stream(struct side *s, unsigned int count)
{
	unsigned int posted = 0, done = 0;
	struct ibv_wc wc[16];
	uint8_t *src = s->buf;

	while (done < count) {
		while (posted < count && posted - done < WINDOW) {
			uint8_t *m = src + (size_t)(posted % WINDOW) * SEND_SZ;

			memcpy(m, &posted, 4);
			if (post_send(s, IBV_WR_SEND, posted, m, SEND_SZ, 0, 0,
				      IBV_SEND_SIGNALED))
				return -1;
			posted++;
		}
		int n = ibv_poll_cq(s->cq, 16, wc);

		if (n < 0)
			return -2;
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS ||
			    wc[i].wr_id != done)
				return -3;
			done++;
		}
	}
	return 0;
}

/* The receiving side: reposts each receive as soon as it is consumed. */
static int recv_stream(struct side *s, unsigned int count)
{
	unsigned int got = 0;
	struct ibv_wc wc[16];

	while (got < count) {
		int n = ibv_poll_cq(s->cq, 16, wc);

		if (n < 0)
			return -2;
		for (int i = 0; i < n; i++) {
			unsigned int seq;
			uint8_t *m = rbuf(s, got);

			if (wc[i].status != IBV_WC_SUCCESS ||
			    wc[i].opcode != IBV_WC_RECV ||
			    wc[i].byte_len != SEND_SZ ||
			    wc[i].wr_id != 1000000u + got)
				return -3;
			memcpy(&seq, m, 4);
			if (seq != got)
				return -4;
			post_recv(s, got + RQ_DEPTH);
			got++;
		}
	}
	return 0;
}

static void phase_data_path(struct side *s, int fd, bool server,
			    unsigned int count)
{
	int rc;

	if (server) {
		/* the WRITE stream lands in the slots: checked at its end */
		sync_byte(fd, 'c');
		sync_byte(fd, 'd');
		for (unsigned int slot = 0; slot < NSLOT && slot < count;
		     slot++) {
			/* the last WRITE into this slot */
			unsigned int i =
				slot + (count - 1 - slot) / NSLOT * NSLOT;

			for (size_t k = 0; k < SLOT; k++)
				if (s->buf[(size_t)slot * SLOT + k] !=
				    pattern(1000 + i, k)) {
					CHECK(0,
					      "WRITE stream: slot %u (WRITE %u) "
					      "differs at byte %zu",
					      slot, i, k);
					break;
				}
		}
		for (unsigned int i = 0; i < RQ_DEPTH; i++)
			post_recv(s, i);
		sync_byte(fd, 'e');
		marker();
		rc = recv_stream(s, count);
		marker();
		CHECK(rc == 0, "SEND stream, receiver: error %d", rc);
		sync_byte(fd, 'f');
		return;
	}
	/* each slot's content is that of the last WRITE into it: the
	 * source slots change between WRITEs only outside the loop, so
	 * write them all first, the last pattern of each slot */
	for (unsigned int slot = 0; slot < NSLOT && slot < count; slot++) {
		unsigned int i = slot + (count - 1 - slot) / NSLOT * NSLOT;

		for (size_t k = 0; k < SLOT; k++)
			s->buf[(size_t)slot * SLOT + k] = pattern(1000 + i, k);
	}
	sync_byte(fd, 'c');
	marker();
	rc = write_stream(s, count);
	marker();
	CHECK(rc == 0, "WRITE stream: error %d", rc);
	sync_byte(fd, 'd');
	sync_byte(fd, 'e');
	marker();
	rc = send_stream(s, count);
	marker();
	CHECK(rc == 0, "SEND stream, sender: error %d", rc);
	sync_byte(fd, 'f');
}

/* ---- 4. completion events ----------------------------------------------- */

/* One step: the receiver arms (solicited-only or not) unless it is still
 * armed from the step before, the sender posts one message, the receiver
 * polls its receive completion and then looks for an event. */
struct ev_step {
	enum ibv_wr_opcode op; /* SEND or RDMA_WRITE_WITH_IMM */
	bool solicited; /* IBV_SEND_SOLICITED */
	int arm; /* -1: still armed; else solicited_only */
	bool event; /* the channel must (not) have an event */
};

static const struct ev_step ev_steps[] = {
	{ IBV_WR_SEND, false, 1, false },
	{ IBV_WR_SEND, true, -1, true },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, false, 1, false },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, true, -1, true },
	{ IBV_WR_SEND, false, 0, true },
	{ IBV_WR_SEND, true, 0, true },
};

/* Waits up to @ms for an event on the CQ's channel; takes and acks it. */
static bool take_event(struct side *s, int ms)
{
	struct pollfd pfd = { .fd = s->ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *cq_ctx;

	if (poll(&pfd, 1, ms) != 1)
		return false;
	if (ibv_get_cq_event(s->ch, &cq, &cq_ctx))
		die("ibv_get_cq_event");
	CHECK(cq == s->cq, "the event names another CQ");
	ibv_ack_cq_events(cq, 1);
	return true;
}

static void phase_events(struct side *s, int fd, bool server,
			 unsigned int count)
{
	/* the receiver still has RQ_DEPTH receives posted by recv_stream,
	 * wr_id 1000000 + count onwards */
	unsigned int next = count;
	bool sol_only = false;

	for (size_t i = 0; i < sizeof(ev_steps) / sizeof(ev_steps[0]); i++) {
		const struct ev_step *st = &ev_steps[i];
		struct ibv_wc wc;
		time_t t0;
		int n;

		if (!server) {
			sync_byte(fd, 'g');
			if (post_send(s, st->op, 5000 + i, s->buf + SLOT, 64,
				      s->peer.addr, (uint32_t)i,
				      IBV_SEND_SIGNALED |
					      (st->solicited ?
						       IBV_SEND_SOLICITED :
						       0)))
				die("ibv_post_send");
			t0 = time(NULL);
			while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0 &&
			       time(NULL) - t0 < 30)
				;
			CHECK(n == 1 && wc.status == IBV_WC_SUCCESS &&
				      wc.wr_id == 5000 + i,
			      "event step %zu: send completion %d status %d", i,
			      n, n == 1 ? (int)wc.status : -1);
			sync_byte(fd, 'h');
			continue;
		}
		if (st->arm >= 0) {
			if (ibv_req_notify_cq(s->cq, st->arm))
				die("ibv_req_notify_cq");
			sol_only = st->arm;
		}
		sync_byte(fd, 'g');
		t0 = time(NULL);
		while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0 &&
		       time(NULL) - t0 < 30)
			;
		CHECK(n == 1 && wc.status == IBV_WC_SUCCESS &&
			      wc.wr_id == 1000000u + next &&
			      (st->op == IBV_WR_SEND ?
				       wc.opcode == IBV_WC_RECV :
				       wc.opcode ==
					       IBV_WC_RECV_RDMA_WITH_IMM) &&
			      wc.wc_flags ==
				      (st->op == IBV_WR_SEND ?
					       0u :
					       (unsigned)IBV_WC_WITH_IMM),
		      "event step %zu: receive %d status %d wr_id %llu "
		      "opcode %d flags 0x%x",
		      i, n, n == 1 ? (int)wc.status : -1,
		      n == 1 ? (unsigned long long)wc.wr_id : 0ull,
		      n == 1 ? (int)wc.opcode : -1, n == 1 ? wc.wc_flags : 0u);
		next++;
		/* an event comes with the CQE it is for: a missing one is
		 * given 10 s, an unwanted one half a second */
		bool got = take_event(s, st->event ? 10000 : 500);

		CHECK(got == st->event, "event step %zu (%s%s, %s arm): %s", i,
		      st->op == IBV_WR_SEND ? "SEND" : "WRITE_WITH_IMM",
		      st->solicited ? " solicited" : "",
		      sol_only ? "solicited-only" : "plain",
		      got ? "an event it should not have" : "no event");
		/* one event per arm: nothing more */
		CHECK(!take_event(s, 0), "event step %zu: a second event", i);
		sync_byte(fd, 'h');
	}
}

/* ---- 5. alone: the SRQ limit and the service's death ------------------- */

#define UD_QKEY 0x11111111u
#define UD_MSG 64u
#define SRQ_POSTED 8u
#define SRQ_LIMIT 4u
#define UD_SENDS 5u

/* Waits up to @ms for one asynchronous event; false if none came. */
static bool async_event(struct ibv_context *ctx, int ms,
			struct ibv_async_event *e)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&pfd, 1, ms) != 1)
		return false;
	if (ibv_get_async_event(ctx, e))
		die("ibv_get_async_event");
	return true;
}

static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq,
			    struct ibv_srq *srq)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.send_cq = cq,
		.recv_cq = cq,
		.srq = srq,
		.cap = { .max_send_wr = 16,
			 .max_recv_wr = srq ? 0 : 16,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qkey = UD_QKEY };
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);

	if (!qp)
		die("ibv_create_qp UD");
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_QKEY))
		die("UD to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("UD to RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD to RTS");
	return qp;
}

static int alone(const char *devname)
{
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 16,
						   .max_sge = 1 } };
	struct ibv_srq_attr sa = { .srq_limit = SRQ_LIMIT };
	struct ibv_async_event ev;
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_wc wc[16];
	struct vc_dev d;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *rq, *sq;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	uint8_t *buf;
	unsigned int recvs = 0, sends = 0;
	time_t t0;
	int rc;

	vc_open(&d, devname);
	pd = ibv_alloc_pd(d.ctx);
	cq = ibv_create_cq(d.ctx, 64, NULL, NULL, 0);
	srq = ibv_create_srq(pd, &sia);
	buf = calloc(SRQ_POSTED + 1, 40 + UD_MSG);
	if (!pd || !cq || !srq || !buf)
		die("PD, CQ, SRQ");
	mr = ibv_reg_mr(pd, buf, (SRQ_POSTED + 1) * (40 + UD_MSG),
			IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	rq = ud_qp(pd, cq, srq);
	sq = ud_qp(pd, cq, NULL);
	for (unsigned int i = 0; i < SRQ_POSTED; i++) {
		struct ibv_sge sge = { (uintptr_t)(buf + i * (40 + UD_MSG)),
				       40 + UD_MSG, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 100 + i,
					  .sg_list = &sge,
					  .num_sge = 1 },
				   *bad;

		if (ibv_post_srq_recv(srq, &wr, &bad))
			die("ibv_post_srq_recv");
	}
	if (ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT))
		die("ibv_modify_srq limit");
	CHECK(!async_event(d.ctx, 200, &ev), "an event before the limit");

	memcpy(aa.grh.dgid.raw, d.gid.raw, 16);
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		die("ibv_create_ah to our own GID");
	for (unsigned int i = 0; i < UD_SENDS; i++) {
		uint8_t *m = buf + SRQ_POSTED * (40 + UD_MSG);
		struct ibv_sge sge = { (uintptr_t)m, UD_MSG, mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i,
					  .sg_list = &sge,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		memset(m, 0xa0 + i, UD_MSG);
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = rq->qp_num;
		wr.wr.ud.remote_qkey = UD_QKEY;
		if (ibv_post_send(sq, &wr, &bad))
			die("ibv_post_send UD");
		/* one at a time: the five land in five receives, in order */
		for (t0 = time(NULL); time(NULL) - t0 < 30;) {
			rc = ibv_poll_cq(cq, 16, wc);
			for (int k = 0; k < rc; k++) {
				CHECK(wc[k].status == IBV_WC_SUCCESS,
				      "UD completion %s", vc_st(wc[k].status));
				if (wc[k].opcode == IBV_WC_RECV) {
					const uint8_t *r =
						buf + (wc[k].wr_id - 100) *
							      (40 + UD_MSG);

					CHECK(wc[k].wr_id == 100 + recvs &&
						      wc[k].byte_len ==
							      40 + UD_MSG &&
						      wc[k].qp_num ==
							      rq->qp_num &&
						      wc[k].src_qp ==
							      sq->qp_num &&
						      r[40] == 0xa0 + recvs &&
						      r[40 + UD_MSG - 1] ==
							      0xa0 + recvs,
					      "UD receive %u: wr_id %llu len %u",
					      recvs,
					      (unsigned long long)wc[k].wr_id,
					      wc[k].byte_len);
					recvs++;
				} else {
					sends++;
				}
			}
			if (recvs == i + 1 && sends == i + 1)
				break;
		}
		CHECK(recvs == i + 1 && sends == i + 1,
		      "datagram %u: %u receives, %u sends completed", i, recvs,
		      sends);
	}
	/* 8 posted, 5 taken: 3 < the limit of 4 */
	if (async_event(d.ctx, 10000, &ev)) {
		CHECK(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
			      ev.element.srq == srq,
		      "event %s for %p, not SRQ_LIMIT_REACHED for the SRQ",
		      ibv_event_type_str(ev.event_type),
		      (void *)ev.element.srq);
		ibv_ack_async_event(&ev);
	} else {
		CHECK(0, "no SRQ_LIMIT_REACHED in 10 s");
	}
	CHECK(!async_event(d.ctx, 200, &ev), "a second event after the limit");
	memset(&sa, 0xff, sizeof(sa));
	CHECK(ibv_query_srq(srq, &sa) == 0 && sa.srq_limit == 0,
	      "the limit reads %u after it fired, not 0", sa.srq_limit);
	printf("verbs_api: alone: SRQ_LIMIT_REACHED once after %u of %u "
	       "receives\n",
	       recvs, SRQ_POSTED);

	/* the service dies under us */
	printf("verbs_api: alone: waiting for DEVICE_FATAL\n");
	fflush(stdout);
	if (async_event(d.ctx, 30000, &ev)) {
		CHECK(ev.event_type == IBV_EVENT_DEVICE_FATAL,
		      "event %s, not DEVICE_FATAL",
		      ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
		printf("verbs_api: alone: %s\n",
		       ibv_event_type_str(ev.event_type));
	} else {
		CHECK(0, "no DEVICE_FATAL within 30 s");
	}
	{
		struct ibv_sge sge = { (uintptr_t)buf, UD_MSG, mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 99,
					  .sg_list = &sge,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND },
				   *bad = NULL;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = rq->qp_num;
		wr.wr.ud.remote_qkey = UD_QKEY;
		rc = ibv_post_send(sq, &wr, &bad);
		CHECK(rc == EIO && bad == &wr,
		      "post_send after the service died: %d (%s)", rc,
		      strerror(rc));
	}
	/* the SRQ's receives still posted (100 + recvs .. 107) complete
	 * WR_FLUSH_ERR on the receiving QP's CQ, in the order posted, once
	 * (two at a time: a poll that stops short leaves the rest for the
	 * next) */
	{
		unsigned int flushed = 0, polls = 0;

		do {
			rc = ibv_poll_cq(cq, 2, wc);
			CHECK(rc >= 0, "poll_cq after the service died: %d",
			      rc);
			for (int k = 0; k < rc; k++) {
				CHECK(wc[k].status == IBV_WC_WR_FLUSH_ERR &&
					      wc[k].opcode == IBV_WC_RECV &&
					      wc[k].qp_num == rq->qp_num &&
					      wc[k].wr_id ==
						      100 + recvs + flushed,
				      "after the service died: wr_id %llu "
				      "%s, not receive %u flushed",
				      (unsigned long long)wc[k].wr_id,
				      vc_st(wc[k].status),
				      100 + recvs + flushed);
				flushed++;
			}
		} while (rc > 0 && ++polls < 16);
		CHECK(flushed == SRQ_POSTED - recvs,
		      "%u SRQ receives flushed after the service died, not %u",
		      flushed, SRQ_POSTED - recvs);
		CHECK(ibv_poll_cq(cq, 16, wc) == 0,
		      "completions after the flush");
		printf("verbs_api: alone: %u SRQ receives flushed\n", flushed);
	}
	CHECK(ibv_destroy_qp(sq) == 0 && ibv_destroy_qp(rq) == 0,
	      "destroy_qp after the service died");
	CHECK(ibv_destroy_ah(ah) == 0, "destroy_ah after the service died");
	CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq after the service died");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq after the service died");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr after the service died");
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd after the service died");
	CHECK(ibv_close_device(d.ctx) == 0,
	      "close_device after the service died");
	free(buf);
	printf("verbs_api: alone: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int port = 18516;
	unsigned int count = 2000;
	struct side s = { 0 };
	bool server;
	int fd, c;

	while ((c = getopt(argc, argv, "d:p:n:")) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'n':
			count = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			goto usage;
		}
	}
	if (optind >= argc || count == 0)
		goto usage;
	vc_prog = "verbs_api";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[optind], "alone"))
		return alone(dev);
	server = !strcmp(argv[optind], "server");
	if (!server && (strcmp(argv[optind], "client") || optind + 1 >= argc))
		goto usage;
	setvbuf(stdout, NULL, _IOLBF, 0);

	setup(&s, dev, server);
	fd = server ? vc_tcp_server(port) :
		      vc_tcp_client(argv[optind + 1], port);
	vc_send_all(fd, &s.me, sizeof(s.me));
	vc_recv_must(fd, &s.peer, sizeof(s.peer));
	connect_qp(&s);
	sync_byte(fd, 'r');
	phase_cq_ex(&s, fd, server);
	phase_data_path(&s, fd, server, count);
	phase_events(&s, fd, server, count);

	close(fd);
	CHECK(ibv_destroy_qp(s.qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(s.cq) == 0, "destroy_cq");
	CHECK(ibv_destroy_comp_channel(s.ch) == 0, "destroy_comp_channel");
	CHECK(ibv_dereg_mr(s.mr) == 0, "dereg_mr");
	if (s.pd != s.prot) {
		CHECK(pd_alloc_calls == 0 && pd_free_calls == 0,
		      "a parent domain's allocators called: %u, %u",
		      pd_alloc_calls, pd_free_calls);
		CHECK(ibv_dealloc_pd(s.pd) == 0, "dealloc_pd (parent domain)");
		CHECK(ibv_dealloc_td(side_td) == 0, "dealloc_td");
	}
	CHECK(ibv_dealloc_pd(s.prot) == 0, "dealloc_pd");
	CHECK(ibv_close_device(s.dev.ctx) == 0, "close_device");
	free(s.buf);
	printf("verbs_api: %s: %s (%u WRITEs, %u SENDs, %zu event steps)\n",
	       server ? "server" : "client", failures ? "FAILED" : "ok", count,
	       count, sizeof(ev_steps) / sizeof(ev_steps[0]));
	return failures ? 1 : 0;
usage:
	fprintf(stderr, "usage: verbs_api [-d DEV] [-p PORT] [-n COUNT] "
			"server | client SERVER_IP\n");
	return 2;
}
