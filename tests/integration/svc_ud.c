// SPDX-License-Identifier: MIT
/*
 * UD QPs, SRQs and address handles through two ovrdmad nodes, at the
 * client-library level (docs/SERVICE.md section 8):
 *
 *   svc_ud SOCK_A SOCK_B DEV_A DEV_B DEV_B_OTHER
 *
 * DEV_A (node A) and DEV_B (node B) are devices of one tenant, DEV_B_OTHER
 * a device of another tenant on node B whose tenant has a vIP on node A
 * too. A's UD QP takes its receives from an SRQ armed at a limit:
 *   1. B sends datagrams to A: each arrives with byte_len 40 + payload,
 *      IBV_WC_GRH, src_qp = B's QPN and a GRH as RoCE v2 gives it for
 *      IPv4 GIDs (20 zero bytes, then an IPv4 header from B's vIP to A's
 *      with a valid checksum); the payload follows, byte-exact;
 *   2. the SRQ limit fires once: one SRQ_LIMIT_REACHED record with the
 *      SRQ's user handle on A's async fd, and QUERY_SRQ reads limit 0;
 *   3. a datagram for a QPN that does not exist on A, and one from the
 *      other tenant to A's QPN, are dropped (no completion) and counted
 *      (rx_no_qp, rx_ud_foreign on node A);
 *   4. DESTROY_SRQ is refused with EBUSY while the QP uses it;
 *   5. multicast: A's, B's and (another tenant) C's QPs attach to one
 *      group address; a datagram B sends to it (QPN 0xffffff) reaches A
 *      (GRH destination: the group) and B itself, never C; attached
 *      again with OVR_CTL_MCAST_NO_LOOPBACK, B no longer hears its own;
 *      once A detaches, A hears nothing and node A counts the datagram
 *      in rx_mcast_nomember. Attaching to a unicast GID and detaching
 *      from a group not joined are refused with EINVAL.
 * Exit 0 when all held, 1 otherwise (with why).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <ovrdma/client.h>

#define QKEY 0x11111111u
#define PAYLOAD 1000u
#define NRECV 8u
#define NSEND 6u
#define LIMIT 4u
#define SRQ_USER 0x5151abcdull
#define MCAST_QPN 0xffffffu /* a datagram to a group */

struct node {
	struct ovr_cl *cl;
	struct ovr_ctl_dev dev;
	uint32_t pd;
	struct ovr_cl_cq *cq;
	struct ovr_cl_qp *qp;
	struct ovr_cl_srq *srq;
	uint8_t *buf;
	struct ovr_cl_mr *mr;
	uint32_t ah;
};

static void die(const char *what, int rc)
{
	fprintf(stderr, "svc_ud: FAIL: %s: %s\n", what,
		rc ? strerror(rc < 0 ? -rc : rc) : "wrong");
	exit(1);
}

#define CHECK(cond, what)             \
	do {                          \
		if (!(cond))          \
			die(what, 0); \
	} while (0)

static void setup(struct node *n, const char *sock, const char *dev,
		  bool with_srq)
{
	struct ovr_ctl_qp_cap cap = { .max_send_wr = 16,
				      .max_recv_wr = 16,
				      .max_send_sge = 1,
				      .max_recv_sge = 1 };
	struct ovr_ctl_qp_attr a = { 0 };
	int rc;

	n->cl = ovr_cl_connect(sock, "svc_ud");
	if (!n->cl)
		die("connect", errno);
	rc = ovr_cl_open(n->cl, dev, &n->dev);
	if (rc)
		die("open", rc);
	CHECK(n->dev.max_srq > 0 && n->dev.max_srq_wr >= 1024 &&
		      n->dev.max_srq_sge > 0 && n->dev.max_ah > 0,
	      "device limits for SRQs and AHs");
	rc = ovr_cl_alloc_pd(n->cl, &n->pd);
	if (rc)
		die("alloc_pd", rc);
	n->buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(n->buf != MAP_FAILED, "mmap");
	n->mr = ovr_cl_reg_mr(n->cl, n->pd, n->buf, 1 << 20,
			      OVR_ACCESS_LOCAL_WRITE);
	if (!n->mr)
		die("reg_mr", errno);
	n->cq = ovr_cl_create_cq(n->cl, 64, OVR_CTL_NO_CHANNEL, 0);
	if (!n->cq)
		die("create_cq", errno);
	if (with_srq) {
		struct ovr_ctl_srq_attr sa = { .max_wr = 16, .max_sge = 1 };

		n->srq = ovr_cl_create_srq(n->cl, n->pd, &sa, SRQ_USER);
		if (!n->srq)
			die("create_srq", errno);
		ovr_cl_srq_attr(n->srq, &sa);
		CHECK(sa.max_wr >= 16 && sa.max_sge == 1, "srq attr granted");
	}
	n->qp = ovr_cl_create_qp_ex(n->cl, n->pd, n->cq, n->cq, n->srq,
				    OVR_QPT_UD, &cap, false, 0x77);
	if (!n->qp)
		die("create_qp UD", errno);
	a.qp_state = OVR_QPS_INIT;
	a.qkey = QKEY;
	a.port_num = 1;
	rc = ovr_cl_modify_qp(n->cl, n->qp, &a,
			      OVR_QP_STATE | OVR_QP_PKEY_INDEX | OVR_QP_PORT |
				      OVR_QP_QKEY);
	if (rc)
		die("modify INIT", rc);
	/* a UD QP takes no address vector */
	a.qp_state = OVR_QPS_RTR;
	a.dest_qp_num = 5;
	CHECK(ovr_cl_modify_qp(n->cl, n->qp, &a,
			       OVR_QP_STATE | OVR_QP_AV | OVR_QP_DEST_QPN) ==
		      -EINVAL,
	      "RTR with an AV refused on UD");
	rc = ovr_cl_modify_qp(n->cl, n->qp, &a, OVR_QP_STATE);
	if (rc)
		die("modify RTR", rc);
	a.qp_state = OVR_QPS_RTS;
	a.sq_psn = 0;
	rc = ovr_cl_modify_qp(n->cl, n->qp, &a, OVR_QP_STATE | OVR_QP_SQ_PSN);
	if (rc)
		die("modify RTS", rc);
	rc = ovr_cl_query_qp(n->cl, n->qp, &a);
	if (rc)
		die("query_qp", rc);
	CHECK(a.qkey == QKEY && a.qp_state == OVR_QPS_RTS, "query qkey");
}

static void gid_of(uint32_t ip, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	for (int i = 0; i < 4; i++)
		gid[12 + i] = (uint8_t)(ip >> (24 - 8 * i));
}

static void post_recvs(struct node *n, uint32_t first, uint32_t k)
{
	for (uint32_t i = first; i < first + k; i++) {
		struct ovr_cl_sge sg = {
			.addr = (uint64_t)(uintptr_t)(n->buf + i * 2048),
			.length = 2048,
			.lkey = n->mr->lkey
		};
		struct ovr_cl_recv_wr wr = { .wr_id = 1000 + i,
					     .sg_list = &sg,
					     .num_sge = 1 };
		int rc = n->srq ? ovr_cl_post_srq_recv(n->srq, &wr) :
				  ovr_cl_post_recv(n->qp, &wr);

		if (rc)
			die("post receive", rc);
	}
}

static void make_ah(struct node *n, uint32_t vip)
{
	struct ovr_ctl_create_ah_req q = {
		.pd = n->pd, .is_global = 1, .port_num = 1, .hop_limit = 1
	};
	int rc;

	q.dgid[10] = q.dgid[11] = 0xff;
	for (int i = 0; i < 4; i++)
		q.dgid[12 + i] = (uint8_t)(vip >> (24 - 8 * i));
	rc = ovr_cl_create_ah(n->cl, &q, &n->ah);
	if (rc)
		die("create_ah", rc);
}

static void send_one(struct node *n, uint32_t qpn, uint8_t seed)
{
	struct ovr_cl_sge sg = { .addr = (uint64_t)(uintptr_t)n->buf,
				 .length = PAYLOAD,
				 .lkey = n->mr->lkey };
	struct ovr_cl_send_wr wr = { .wr_id = seed,
				     .opcode = OVR_WR_SEND,
				     .send_flags = OVR_SEND_SIGNALED,
				     .sg_list = &sg,
				     .num_sge = 1,
				     .ud_peer = n->ah,
				     .remote_qpn = qpn,
				     .remote_qkey = QKEY };
	struct ovr_cl_wc wc;
	int rc, k;
	time_t t0 = time(NULL);

	for (uint32_t i = 0; i < PAYLOAD; i++)
		n->buf[i] = (uint8_t)(seed * 7 + i);
	rc = ovr_cl_post_send(n->qp, &wr);
	if (rc)
		die("post_send UD", rc);
	while ((k = ovr_cl_poll_cq(n->cq, 1, &wc)) == 0 && time(NULL) - t0 < 5)
		;
	CHECK(k == 1 && wc.status == OVR_WC_SUCCESS && wc.wr_id == seed,
	      "UD send completion");
}

/* Up to @max receive completions within @ms. */
static int reap(struct node *n, struct ovr_cl_wc *wc, int max, int ms)
{
	struct timespec t0, t;
	int got = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		got += ovr_cl_poll_cq(n->cq, max - got, wc + got);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (got < max &&
		 (t.tv_sec - t0.tv_sec) * 1000 +
				 (t.tv_nsec - t0.tv_nsec) / 1000000 <
			 ms);
	return got;
}

/* ovrdmactl show @what at @sock, as text */
static char *show(const char *sock, const char *what)
{
	struct ovr_cl *adm = ovr_cl_connect(sock, "svc_ud-adm");
	struct ovr_ctl_adm_show_req q = { 0 };
	static char text[OVR_CTL_MSG_MAX];
	int n;

	if (!adm)
		die("admin connect", errno);
	snprintf(q.what, sizeof(q.what), "%s", what);
	n = ovr_cl_request(adm, OVR_CTL_ADM_SHOW, &q, sizeof(q), text,
			   sizeof(text) - 1);
	if (n < 0)
		die("show", n);
	text[n] = 0;
	ovr_cl_close(adm);
	return text;
}

/* lines of @text containing @s */
static int lines_with(const char *text, const char *s)
{
	int k = 0;

	for (const char *p = text; (p = strstr(p, s)); p += strlen(s))
		k++;
	return k;
}

static uint64_t counter(const char *sock, const char *name)
{
	char *text = show(sock, "counters");
	unsigned long long v = 0;

	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		char k[64];

		if (sscanf(l, "%63s %llu", k, &v) == 2 && !strcmp(k, name))
			break;
		v = 0;
	}
	return v;
}

static void check_grh(const uint8_t *g, uint32_t src, uint32_t dst)
{
	uint32_t sum = 0;

	for (int i = 0; i < 20; i++)
		CHECK(g[i] == 0, "GRH bytes 0..19 zero");
	CHECK(g[20] == 0x45 && g[29] == 17 && g[28] == 64,
	      "GRH: IPv4 header, UDP, TTL 64");
	for (int i = 0; i < 4; i++) {
		CHECK(g[32 + i] == (uint8_t)(src >> (24 - 8 * i)),
		      "GRH: source address is the sender's vIP");
		CHECK(g[36 + i] == (uint8_t)(dst >> (24 - 8 * i)),
		      "GRH: destination address is the receiver's vIP");
	}
	for (int i = 20; i < 40; i += 2)
		sum += (uint32_t)g[i] << 8 | g[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	CHECK(sum == 0xffff, "GRH: IPv4 header checksum");
	CHECK(((uint32_t)g[22] << 8 | g[23]) > 20 + 8 + PAYLOAD,
	      "GRH: IPv4 total length");
}

int main(int argc, char **argv)
{
	struct node a = { 0 }, b = { 0 }, c = { 0 };
	struct ovr_cl_wc wc[NRECV];
	struct ovr_ctl_srq_attr sa = { .srq_limit = LIMIT };
	struct ovr_ctl_async_event ev;
	struct pollfd pfd;
	uint64_t no_qp0, foreign0;
	int rc, got;

	if (argc != 6) {
		fprintf(stderr,
			"usage: svc_ud SOCK_A SOCK_B DEV_A DEV_B DEV_B_OTHER\n");
		return 2;
	}
	setup(&a, argv[1], argv[3], true);
	setup(&b, argv[2], argv[4], false);
	setup(&c, argv[2], argv[5], false);
	make_ah(&b, a.dev.vip);
	make_ah(&c, a.dev.vip); /* the same address, in c's tenant */

	/* receives on A's SRQ, each 40 + PAYLOAD bytes apart */
	for (uint32_t i = 0; i < NRECV; i++) {
		struct ovr_cl_sge sg = {
			.addr = (uint64_t)(uintptr_t)(a.buf + i * 2048),
			.length = 2048,
			.lkey = a.mr->lkey
		};
		struct ovr_cl_recv_wr wr = { .wr_id = 1000 + i,
					     .sg_list = &sg,
					     .num_sge = 1 };
		struct ovr_cl_recv_wr bad = { .wr_id = 1, .num_sge = 0 };

		rc = ovr_cl_post_srq_recv(a.srq, &wr);
		if (rc)
			die("post_srq_recv", rc);
		if (!i)
			CHECK(ovr_cl_post_recv(a.qp, &bad) == EINVAL,
			      "post_recv on a QP with an SRQ refused");
	}
	rc = ovr_cl_modify_srq(a.cl, a.srq, &sa, OVR_SRQ_LIMIT);
	if (rc)
		die("modify_srq limit", rc);
	rc = ovr_cl_query_srq(a.cl, a.srq, &sa);
	CHECK(!rc && sa.srq_limit == LIMIT && sa.max_sge == 1,
	      "query_srq after arming");
	CHECK(ovr_cl_destroy_srq(a.cl, a.srq, NULL) == -EBUSY,
	      "destroy_srq refused while a QP uses it");

	/* 1. datagrams B -> A */
	for (uint32_t i = 0; i < NSEND; i++)
		send_one(&b, ovr_cl_qp_num(a.qp), (uint8_t)(i + 1));
	got = reap(&a, wc, NSEND, 5000);
	CHECK(got == NSEND, "every datagram received");
	for (int i = 0; i < got; i++) {
		const uint8_t *p;
		uint32_t slot;

		CHECK(wc[i].status == OVR_WC_SUCCESS &&
			      wc[i].opcode == OVR_WC_RECV,
		      "receive completion status");
		CHECK(wc[i].wr_id >= 1000 && wc[i].wr_id < 1000 + NRECV,
		      "receive wr_id from the SRQ");
		CHECK(wc[i].qp_num == ovr_cl_qp_num(a.qp) &&
			      wc[i].qp_user == 0x77,
		      "completion names the QP that took the receive");
		CHECK(wc[i].src_qp == ovr_cl_qp_num(b.qp), "src_qp");
		CHECK(wc[i].byte_len == 40 + PAYLOAD,
		      "byte_len = 40 + payload");
		CHECK(wc[i].wc_flags & OVR_WC_GRH, "IBV_WC_GRH");
		slot = (uint32_t)(wc[i].wr_id - 1000);
		p = a.buf + slot * 2048;
		check_grh(p, b.dev.vip, a.dev.vip);
		/* the sends carried seeds 1..NSEND in posting order, and
		 * the SRQ hands out receives in posting order */
		for (uint32_t k = 0; k < PAYLOAD; k++)
			CHECK(p[40 + k] == (uint8_t)((i + 1) * 7 + k),
			      "payload byte-exact");
	}
	printf("svc_ud: %u datagrams: src_qp, GRH (IPv4 %u.%u.%u.%u -> "
	       "%u.%u.%u.%u), payload OK\n",
	       NSEND, b.dev.vip >> 24, (b.dev.vip >> 16) & 255,
	       (b.dev.vip >> 8) & 255, b.dev.vip & 255, a.dev.vip >> 24,
	       (a.dev.vip >> 16) & 255, (a.dev.vip >> 8) & 255,
	       a.dev.vip & 255);

	/* 2. the limit fired, once */
	pfd = (struct pollfd){ .fd = ovr_cl_async_fd(a.cl), .events = POLLIN };
	CHECK(poll(&pfd, 1, 2000) == 1, "an async event");
	CHECK(read(pfd.fd, &ev, sizeof(ev)) == (ssize_t)sizeof(ev),
	      "async event record");
	CHECK(ev.event_type == OVR_EV_SRQ_LIMIT_REACHED &&
		      ev.element == SRQ_USER,
	      "SRQ_LIMIT_REACHED with the SRQ's user handle");
	CHECK(poll(&pfd, 1, 200) == 0, "one limit event only");
	rc = ovr_cl_query_srq(a.cl, a.srq, &sa);
	CHECK(!rc && sa.srq_limit == 0, "limit disarmed after firing");
	printf("svc_ud: SRQ_LIMIT_REACHED once, element %#llx\n",
	       (unsigned long long)ev.element);

	/* 3. drops: unknown QPN, another tenant */
	no_qp0 = counter(argv[1], "rx_no_qp");
	foreign0 = counter(argv[1], "rx_ud_foreign");
	send_one(&b, ovr_cl_qp_num(a.qp) ^ 0x400000u, 50);
	send_one(&c, ovr_cl_qp_num(a.qp), 51);
	CHECK(reap(&a, wc, 1, 500) == 0, "a dropped datagram completed");
	CHECK(counter(argv[1], "rx_no_qp") > no_qp0,
	      "datagram for an unknown QPN not counted in rx_no_qp");
	CHECK(counter(argv[1], "rx_ud_foreign") > foreign0,
	      "datagram from another tenant not counted in rx_ud_foreign");
	printf("svc_ud: unknown QPN and other tenant: dropped and counted\n");

	/* 5. multicast */
	{
		const uint32_t grp = 0xef010203u; /* 239.1.2.3 */
		uint8_t g[16], uni[16];
		uint64_t nomember0;

		gid_of(grp, g);
		gid_of(a.dev.vip, uni);
		CHECK(ovr_cl_mcast(a.cl, a.qp, true, uni, 0) == -EINVAL,
		      "attach to a unicast GID refused");
		CHECK(ovr_cl_mcast(a.cl, a.qp, false, g, 0) == -EINVAL,
		      "detach from a group not joined refused");
		CHECK(ovr_cl_mcast(a.cl, a.qp, true, g, 0) == 0 &&
			      ovr_cl_mcast(a.cl, a.qp, true, g, 0) == 0 &&
			      ovr_cl_mcast(b.cl, b.qp, true, g, 0) == 0 &&
			      ovr_cl_mcast(c.cl, c.qp, true, g, 0) == 0,
		      "attach");
		CHECK(lines_with(show(argv[1], "mcast"), " 239.1.2.3 ") == 1 &&
			      lines_with(show(argv[2], "mcast"),
					 " 239.1.2.3 ") == 2,
		      "show mcast: one member on node A, two on node B "
		      "(two tenants)");
		post_recvs(&a, 0, 4);
		post_recvs(&b, 64, 4);
		post_recvs(&c, 64, 4);
		CHECK(ovr_cl_destroy_ah(b.cl, b.ah) == 0, "destroy_ah");
		make_ah(&b, grp);
		send_one(&b, MCAST_QPN, 60);
		got = reap(&a, wc, 2, 2000);
		CHECK(got == 1 && wc[0].status == OVR_WC_SUCCESS &&
			      wc[0].byte_len == 40 + PAYLOAD &&
			      wc[0].src_qp == ovr_cl_qp_num(b.qp),
		      "the group's datagram reached A once");
		check_grh(a.buf + (wc[0].wr_id - 1000) * 2048, b.dev.vip, grp);
		for (uint32_t k = 0; k < PAYLOAD; k++)
			CHECK(a.buf[(wc[0].wr_id - 1000) * 2048 + 40 + k] ==
				      (uint8_t)(60 * 7 + k),
			      "multicast payload byte-exact");
		got = reap(&b, wc, 2, 1000);
		CHECK(got == 1 && wc[0].status == OVR_WC_SUCCESS &&
			      wc[0].opcode == OVR_WC_RECV,
		      "the sender, attached, hears its own datagram");
		CHECK(ovr_cl_mcast(b.cl, b.qp, true, g,
				   OVR_CTL_MCAST_NO_LOOPBACK) == 0,
		      "attach again, without loopback");
		send_one(&b, MCAST_QPN, 61);
		CHECK(reap(&a, wc, 2, 2000) == 1, "A heard the second");
		CHECK(reap(&b, wc, 1, 500) == 0,
		      "NO_LOOPBACK: the sender did not hear itself");
		CHECK(ovr_cl_mcast(a.cl, a.qp, false, g, 0) == 0 &&
			      ovr_cl_mcast(a.cl, a.qp, false, g, 0) == -EINVAL,
		      "detach once, then EINVAL");
		nomember0 = counter(argv[1], "rx_mcast_nomember");
		send_one(&b, MCAST_QPN, 62);
		CHECK(reap(&a, wc, 1, 500) == 0, "A detached: nothing");
		CHECK(counter(argv[1], "rx_mcast_nomember") > nomember0,
		      "node A counted a group without members");
		CHECK(reap(&c, wc, 1, 200) == 0,
		      "another tenant's member never heard the group");
		printf("svc_ud: multicast: delivered to the members, GRH "
		       "to the group, loopback and NO_LOOPBACK, detach, "
		       "tenants apart\n");
	}

	/* 6. the AH destroyed right after sends that name it were posted,
	 * before any completion (rdmacm-utils' mckey does so): they still
	 * go out to its address, as a NIC's WQE carries a copy of it */
	{
		struct ovr_cl_sge sg = { .addr = (uint64_t)(uintptr_t)b.buf,
					 .length = PAYLOAD,
					 .lkey = b.mr->lkey };
		struct ovr_cl_send_wr wr = { .opcode = OVR_WR_SEND,
					     .sg_list = &sg,
					     .num_sge = 1,
					     .remote_qpn = ovr_cl_qp_num(a.qp),
					     .remote_qkey = QKEY };
		int ok = 0;

		post_recvs(&a, 100, NRECV);
		CHECK(ovr_cl_destroy_ah(b.cl, b.ah) == 0, "destroy_ah");
		make_ah(&b, a.dev.vip);
		wr.ud_peer = b.ah;
		for (uint32_t i = 0; i < PAYLOAD; i++)
			b.buf[i] = (uint8_t)(70 * 7 + i);
		ovr_cl_send_start(b.qp);
		for (uint32_t i = 0; i < NRECV; i++) {
			wr.wr_id = 700 + i;
			CHECK(ovr_cl_send_add(b.qp, &wr) == 0, "send_add");
		}
		ovr_cl_send_complete(b.qp);
		CHECK(ovr_cl_destroy_ah(b.cl, b.ah) == 0,
		      "destroy_ah with its sends posted");
		got = reap(&a, wc, NRECV, 3000);
		for (int i = 0; i < got; i++)
			ok += wc[i].status == OVR_WC_SUCCESS &&
			      wc[i].byte_len == 40 + PAYLOAD &&
			      a.buf[(wc[i].wr_id - 1000) * 2048 + 40 + 7] ==
				      (uint8_t)(70 * 7 + 7);
		CHECK(got == (int)NRECV && ok == (int)NRECV,
		      "every send posted before destroy_ah arrived");
		CHECK(ovr_cl_poll_cq(b.cq, 1, wc) == 0,
		      "no error completion at the sender");
		make_ah(&b, a.dev.vip);
		printf("svc_ud: AH destroyed with its sends posted: %d of %u "
		       "arrived\n",
		       got, NRECV);
	}

	/* teardown in order; closing reclaims the rest */
	CHECK(ovr_cl_destroy_ah(b.cl, b.ah) == 0, "destroy_ah");
	CHECK(ovr_cl_destroy_qp(a.cl, a.qp, NULL) == 0, "destroy_qp");
	CHECK(ovr_cl_destroy_srq(a.cl, a.srq, NULL) == 0, "destroy_srq");
	ovr_cl_close(a.cl);
	ovr_cl_close(b.cl);
	ovr_cl_close(c.cl);
	printf("svc_ud: OK\n");
	return 0;
}
