// SPDX-License-Identifier: MIT
/*
 * Two ovrdmad nodes, one application per node (here: one process with
 * two connections), RC traffic through the service: RDMA WRITE, SEND,
 * RDMA READ in both directions and atomics, every byte checked.
 *
 *   svc_xfer SOCK_A SOCK_B [MB_PER_OP] [DEV_A[,DEV_B]] [hold|qps N|cross|peerkill]
 *
 * qps N: N QPs on each side, every QP moving 64 KB each way at once.
 * cross: A and B are devices of different tenants (same vIPs): A's QP is
 * pointed at B's QPN and must not get through (retry-exceeded error,
 * nothing written), exit 0 when isolation held.
 * peerkill: A's side runs in a child that is killed with -9 mid-transfer;
 * B's outstanding work requests must complete with errors (peer_kill()).
 * Exit 0 when every transfer was byte-exact, 1 otherwise (with why).
 * With "hold" it repeats the transfers until something fails and exits 3
 * when that failure is an error the application was told about (a
 * service that died must give errors, never a hang: a hang is exit 1).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include <ovrdma/client.h>
#include <ovrdma/util.h>

#define CHUNK (1u << 20) /* bytes per work request */
#define DEPTH 64

struct node {
	const char *name;
	struct ovr_cl *cl;
	struct ovr_ctl_dev dev;
	uint32_t pd;
	struct ovr_cl_cq *cq;
	struct ovr_cl_qp *qp;
	uint8_t *buf;
	size_t len;
	struct ovr_cl_mr *mr;
	uint64_t *atom;
	struct ovr_cl_mr *amr;
};

static int hold;

static int fail(const char *what, int rc)
{
	fprintf(stderr, "svc_xfer: %s: %s\n", what,
		strerror(rc < 0 ? -rc : rc));
	exit(hold ? 3 : 1);
}

static double now_s(void)
{
	return (double)ovr_mono_ns() * 1e-9;
}

static void setup(struct node *n, const char *sock, const char *dev, size_t len)
{
	struct ovr_ctl_qp_cap cap = { .max_send_wr = DEPTH * 2,
				      .max_recv_wr = DEPTH * 2,
				      .max_send_sge = 2,
				      .max_recv_sge = 2,
				      .max_inline_data = 64 };
	int rc;

	n->cl = ovr_cl_connect(sock, "svc_xfer");
	if (!n->cl)
		fail(sock, errno);
	rc = ovr_cl_open(n->cl, dev, &n->dev);
	if (rc)
		fail("open", rc);
	rc = ovr_cl_alloc_pd(n->cl, &n->pd);
	if (rc)
		fail("alloc_pd", rc);
	n->cq = ovr_cl_create_cq(n->cl, 4 * DEPTH, OVR_CTL_NO_CHANNEL, 0);
	if (!n->cq)
		fail("create_cq", errno);
	n->qp = ovr_cl_create_qp(n->cl, n->pd, n->cq, n->cq, &cap, false, 0);
	if (!n->qp)
		fail("create_qp", errno);
	n->len = len;
	n->buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (n->buf == MAP_FAILED)
		fail("mmap", errno);
	n->mr = ovr_cl_reg_mr(n->cl, n->pd, n->buf, len, 0xf);
	if (!n->mr)
		fail("reg_mr", errno);
	n->atom = aligned_alloc(4096, 4096);
	n->amr = ovr_cl_reg_mr(n->cl, n->pd, n->atom, 64, 0xf);
	if (!n->amr)
		fail("reg_mr atomics", errno);
}

static void connect_to(struct node *n, uint32_t dqpn, uint32_t dvip)
{
	const char *what = NULL;
	int rc = ovr_cl_connect_rc(n->cl, n->qp, &n->dev, dqpn, dvip, 0xe,
				   &what);

	if (rc)
		fail(what, rc);
}

static void connect_qp(struct node *n, const struct node *peer)
{
	connect_to(n, ovr_cl_qp_num(peer->qp), peer->dev.vip);
}

/* Waits for @want completions on @n's CQ, all successful. */
static void reap(struct node *n, unsigned int want, const char *what)
{
	struct ovr_cl_wc wc[16];
	double t0 = now_s();

	while (want) {
		int k = ovr_cl_poll_cq(n->cq, want < 16 ? (int)want : 16, wc);

		if (k < 0)
			fail("poll_cq", k);
		for (int i = 0; i < k; i++)
			if (wc[i].status != OVR_WC_SUCCESS) {
				fprintf(stderr,
					"svc_xfer: %s: completion status %u "
					"vendor_err 0x%x\n",
					what, wc[i].status, wc[i].vendor_err);
				exit(hold ? 3 : 1);
			}
		want -= (unsigned int)k;
		if (!k && now_s() - t0 > 60) {
			fprintf(stderr, "svc_xfer: %s: no completion in 60 s\n",
				what);
			exit(1);
		}
	}
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, len - i < 8 ? len - i : 8);
	}
}

static void check(const uint8_t *a, const uint8_t *b, size_t len,
		  const char *what)
{
	if (memcmp(a, b, len)) {
		size_t i = 0;

		while (a[i] == b[i])
			i++;
		fprintf(stderr, "svc_xfer: %s: data differs at byte %zu\n",
			what, i);
		exit(1);
	}
}

/* Posts receives for chunks [*rposted, nchunks) while the RQ has room. */
static void post_recvs(struct node *d, unsigned int *rposted,
		       unsigned int nchunks)
{
	while (*rposted < nchunks) {
		struct ovr_cl_sge sg = {
			(uint64_t)(uintptr_t)(d->buf +
					      (size_t)*rposted * CHUNK),
			CHUNK, d->mr->lkey
		};
		struct ovr_cl_recv_wr rw = { *rposted, &sg, 1 };
		int rc = ovr_cl_post_recv(d->qp, &rw);

		if (rc == ENOMEM)
			return;
		if (rc)
			fail("post_recv", rc);
		(*rposted)++;
	}
}

/* Counts the receiver's completions without waiting (all successful, in
 * order: a SEND's receive completes in posting order). */
static unsigned int reap_recvs(struct node *d, unsigned int *rdone)
{
	struct ovr_cl_wc wc[16];
	int k = ovr_cl_poll_cq(d->cq, 16, wc);

	if (k < 0)
		fail("poll_cq", k);
	for (int i = 0; i < k; i++) {
		if (wc[i].status != OVR_WC_SUCCESS || wc[i].wr_id != *rdone ||
		    wc[i].byte_len != CHUNK) {
			fprintf(stderr,
				"svc_xfer: receive %u: status %u wr_id %llu "
				"byte_len %u\n",
				*rdone, wc[i].status,
				(unsigned long long)wc[i].wr_id,
				wc[i].byte_len);
			exit(hold ? 3 : 1);
		}
		(*rdone)++;
	}
	return (unsigned int)k;
}

/* @op over the whole buffer from @s to @d in CHUNK pieces; for SEND the
 * receiver keeps its queue topped up (it holds fewer WRs than chunks). */
static void move(struct node *s, struct node *d, uint32_t op, const char *what)
{
	unsigned int posted = 0, done = 0, rposted = 0, rdone = 0,
		     nchunks = (unsigned int)(s->len / CHUNK);
	double t0 = now_s(), t, idle = 0;
	bool send = op == OVR_WR_SEND;

	if (send)
		post_recvs(d, &rposted, nchunks);
	while (done < nchunks) {
		while (posted < nchunks && posted - done < DEPTH &&
		       (!send || posted < rposted)) {
			size_t off = (size_t)posted * CHUNK;
			struct ovr_cl_sge sg = {
				(uint64_t)(uintptr_t)((op == OVR_WR_RDMA_READ ?
							       d->buf :
							       s->buf) +
						      off),
				CHUNK,
				op == OVR_WR_RDMA_READ ? d->mr->lkey :
							 s->mr->lkey
			};
			struct ovr_cl_send_wr wr = {
				.wr_id = posted,
				.opcode = op,
				.send_flags = OVR_SEND_SIGNALED,
				.sg_list = &sg,
				.num_sge = 1,
				.rkey = op == OVR_WR_RDMA_READ ? s->mr->rkey :
								 d->mr->rkey,
				.remote_addr =
					(uint64_t)(uintptr_t)((op == OVR_WR_RDMA_READ ?
								       s->buf :
								       d->buf) +
							      off),
			};
			struct node *issuer = op == OVR_WR_RDMA_READ ? d : s;
			int rc = ovr_cl_post_send(issuer->qp, &wr);

			if (rc)
				fail("post_send", rc);
			posted++;
		}
		if (send) {
			/* the sender's completions, the receiver's, and
			 * room for more receives, without blocking on one */
			struct ovr_cl_wc wc[16];
			int k = ovr_cl_poll_cq(s->cq, 16, wc);

			if (k < 0)
				fail("poll_cq", k);
			for (int i = 0; i < k; i++)
				if (wc[i].status != OVR_WC_SUCCESS) {
					fprintf(stderr,
						"svc_xfer: %s: completion "
						"status %u vendor_err 0x%x\n",
						what, wc[i].status,
						wc[i].vendor_err);
					exit(hold ? 3 : 1);
				}
			done += (unsigned int)k;
			k += (int)reap_recvs(d, &rdone);
			post_recvs(d, &rposted, nchunks);
			if (k)
				idle = 0;
			else if (!idle)
				idle = now_s();
			else if (now_s() - idle > 60) {
				fprintf(stderr,
					"svc_xfer: %s: no completion in 60 s\n",
					what);
				exit(1);
			}
			continue;
		}
		reap(op == OVR_WR_RDMA_READ ? d : s, 1, what);
		done++;
	}
	while (send && rdone < nchunks) {
		double t1 = now_s();

		while (!reap_recvs(d, &rdone))
			if (now_s() - t1 > 60) {
				fprintf(stderr,
					"svc_xfer: receives: none in 60 s\n");
				exit(1);
			}
	}
	t = now_s() - t0;
	printf("%-22s %6zu MB %8.2f s %8.2f Gbit/s\n", what, s->len >> 20, t,
	       (double)s->len * 8 / t / 1e9);
	fflush(stdout);
}

static void round_trip(struct node *s, struct node *d, uint32_t op,
		       const char *what, uint32_t seed)
{
	fill(s->buf, s->len, seed);
	memset(d->buf, 0, d->len);
	move(s, d, op, what);
	check(s->buf, d->buf, s->len, what);
}

static void atomics(struct node *s, struct node *d)
{
	struct ovr_cl_sge sg = { (uint64_t)(uintptr_t)s->atom, 8,
				 s->amr->lkey };
	struct ovr_cl_send_wr wr = {
		.opcode = OVR_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sg,
		.num_sge = 1,
		.rkey = d->amr->rkey,
		.remote_addr = (uint64_t)(uintptr_t)d->atom,
	};
	int rc;

	d->atom[0] = 1000;
	for (int i = 0; i < 100; i++) {
		wr.compare_add = 3;
		rc = ovr_cl_post_send(s->qp, &wr);
		if (rc)
			fail("post atomic", rc);
		reap(s, 1, "fetch-add");
		if (s->atom[0] != 1000 + 3ull * (uint64_t)i) {
			fprintf(stderr, "svc_xfer: fetch-add returned %llu\n",
				(unsigned long long)s->atom[0]);
			exit(1);
		}
	}
	wr.opcode = OVR_WR_ATOMIC_CMP_AND_SWP;
	wr.compare_add = 1300;
	wr.swap = 7;
	rc = ovr_cl_post_send(s->qp, &wr);
	if (rc)
		fail("post cas", rc);
	reap(s, 1, "compare-swap");
	if (s->atom[0] != 1300 || d->atom[0] != 7) {
		fprintf(stderr,
			"svc_xfer: compare-swap: got %llu, target %llu\n",
			(unsigned long long)s->atom[0],
			(unsigned long long)d->atom[0]);
		exit(1);
	}
	printf("%-22s 101 operations, results exact\n", "atomics");
}

/*
 * @nq QP pairs (the first pair is a's and b's own), each QP writing
 * 64 KB to its peer at once; every byte checked.
 */
static int many_qps(struct node *a, struct node *b, unsigned int nq)
{
	const size_t piece = 64 * 1024;
	struct ovr_ctl_qp_cap cap = { .max_send_wr = 4,
				      .max_recv_wr = 1,
				      .max_send_sge = 1,
				      .max_recv_sge = 1 };
	struct node *side[2] = { a, b };
	struct ovr_cl_qp **qps[2];
	double t0, t;

	if ((size_t)nq * piece * 2 > a->len) {
		fprintf(stderr, "svc_xfer: qps %u needs %zu MB buffers\n", nq,
			((size_t)nq * piece * 2) >> 20);
		return 1;
	}
	for (int s = 0; s < 2; s++) {
		struct node *n = side[s];

		qps[s] = calloc(nq, sizeof(*qps[s]));
		n->cq = ovr_cl_create_cq(n->cl, 2 * nq + 8, OVR_CTL_NO_CHANNEL,
					 0);
		if (!n->cq)
			fail("create_cq", errno);
		for (unsigned int i = 1; i < nq; i++) {
			qps[s][i] = ovr_cl_create_qp(n->cl, n->pd, n->cq, n->cq,
						     &cap, false, i);
			if (!qps[s][i])
				fail("create_qp", errno);
		}
	}
	/* the first pair uses the new CQ too */
	for (int s = 0; s < 2; s++) {
		qps[s][0] = ovr_cl_create_qp(side[s]->cl, side[s]->pd,
					     side[s]->cq, side[s]->cq, &cap,
					     false, 0);
		if (!qps[s][0])
			fail("create_qp", errno);
	}
	for (unsigned int i = 0; i < nq; i++) {
		struct ovr_cl_qp *qa = qps[0][i], *qb = qps[1][i];

		a->qp = qa;
		b->qp = qb;
		connect_qp(a, b);
		connect_qp(b, a);
	}
	fill(a->buf, a->len, 11);
	fill(b->buf, b->len, 12);
	memset(a->buf + (size_t)nq * piece, 0, (size_t)nq * piece);
	memset(b->buf, 0, (size_t)nq * piece);
	t0 = now_s();
	for (unsigned int i = 0; i < nq; i++) {
		/* a writes its first half into b's first half, b its second
		 * half into a's second half */
		for (int s = 0; s < 2; s++) {
			struct node *n = side[s], *p = side[!s];
			size_t off = (size_t)(s ? nq + i : i) * piece;
			struct ovr_cl_sge sg = { (uint64_t)(uintptr_t)(n->buf +
								       off),
						 (uint32_t)piece, n->mr->lkey };
			struct ovr_cl_send_wr wr = {
				.wr_id = i,
				.opcode = OVR_WR_RDMA_WRITE,
				.send_flags = OVR_SEND_SIGNALED,
				.sg_list = &sg,
				.num_sge = 1,
				.rkey = p->mr->rkey,
				.remote_addr =
					(uint64_t)(uintptr_t)(p->buf + off),
			};
			int rc = ovr_cl_post_send(qps[s][i], &wr);

			if (rc)
				fail("post_send", rc);
		}
	}
	reap(a, nq, "many QPs A");
	reap(b, nq, "many QPs B");
	t = now_s() - t0;
	{
		uint8_t *ref = malloc(a->len);

		fill(ref, a->len, 11);
		check(ref, b->buf, (size_t)nq * piece, "many QPs A->B");
		fill(ref, b->len, 12);
		check(ref + (size_t)nq * piece, a->buf + (size_t)nq * piece,
		      (size_t)nq * piece, "many QPs B->A");
		free(ref);
	}
	printf("%u QPs each way, 64 KB each, all at once: %.2f s, "
	       "byte-exact\n",
	       nq, t);
	ovr_cl_close(a->cl);
	ovr_cl_close(b->cl);
	return 0;
}

/* What the two processes of peerkill tell each other. */
struct peer_info {
	uint32_t qpn, vip, rkey;
	uint64_t addr;
};

static void xread(int fd, void *p, size_t n)
{
	if (read(fd, p, n) != (ssize_t)n)
		fail("pipe read", EPIPE);
}

static void xwrite(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		fail("pipe write", EPIPE);
}

/*
 * peerkill: the application on node A (a child process) is killed with
 * -9 while node B's application has RDMA WRITEs and READs to it in
 * flight. B's work requests must complete with errors (the first with
 * the real error, the rest flushed), within the retry timeout at worst;
 * exit 0 then, 1 on a hang or a success after the kill.
 */
static int peer_kill(const char *sock_a, const char *sock_b, const char *dev_a,
		     const char *dev_b, size_t len)
{
	struct node a = { .name = "A" }, b = { .name = "B" };
	struct peer_info ia, ib;
	int up[2], down[2];
	unsigned int posted = 0, done = 0, errors = 0, first = 0;
	double t_kill = 0, t_err = 0, t0;
	pid_t pid;
	char ready;

	if (pipe(up) || pipe(down))
		fail("pipe", errno);
	pid = fork();
	if (pid < 0)
		fail("fork", errno);
	if (pid == 0) { /* the victim */
		setup(&a, sock_a, dev_a, len);
		ia = (struct peer_info){ ovr_cl_qp_num(a.qp), a.dev.vip,
					 a.mr->rkey,
					 (uint64_t)(uintptr_t)a.buf };
		xwrite(up[1], &ia, sizeof(ia));
		xread(down[0], &ib, sizeof(ib));
		connect_to(&a, ib.qpn, ib.vip);
		xwrite(up[1], "R", 1);
		for (;;)
			pause();
	}
	setup(&b, sock_b, dev_b, len);
	xread(up[0], &ia, sizeof(ia));
	ib = (struct peer_info){ ovr_cl_qp_num(b.qp), b.dev.vip, b.mr->rkey,
				 (uint64_t)(uintptr_t)b.buf };
	xwrite(down[1], &ib, sizeof(ib));
	connect_to(&b, ia.qpn, ia.vip);
	xread(up[0], &ready, 1);
	t0 = now_s();
	for (;;) {
		struct ovr_cl_wc wc[16];
		int k;

		while (!t_kill && posted - done < DEPTH) {
			size_t off = (size_t)(posted % (len / CHUNK)) * CHUNK;
			struct ovr_cl_sge sg = { (uint64_t)(uintptr_t)b.buf +
							 off,
						 CHUNK, b.mr->lkey };
			struct ovr_cl_send_wr wr = {
				.wr_id = posted,
				.opcode = posted % 2 ? OVR_WR_RDMA_READ :
						       OVR_WR_RDMA_WRITE,
				.send_flags = OVR_SEND_SIGNALED,
				.sg_list = &sg,
				.num_sge = 1,
				.rkey = ia.rkey,
				.remote_addr = ia.addr + off,
			};
			int rc = ovr_cl_post_send(b.qp, &wr);

			if (rc)
				fail("post_send", rc);
			posted++;
		}
		if (!t_kill && now_s() - t0 > 1.0) {
			if (done == 0) {
				fprintf(stderr, "peerkill: nothing completed "
						"before the kill\n");
				kill(pid, SIGKILL);
				return 1;
			}
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			t_kill = now_s();
		}
		k = ovr_cl_poll_cq(b.cq, 16, wc);
		if (k < 0)
			fail("poll_cq", k);
		for (int i = 0; i < k; i++, done++) {
			if (wc[i].status == OVR_WC_SUCCESS) {
				if (errors) {
					fprintf(stderr,
						"peerkill: WR %llu succeeded "
						"after an error\n",
						(unsigned long long)wc[i].wr_id);
					return 1;
				}
				continue;
			}
			if (!errors++) {
				first = wc[i].status;
				t_err = now_s();
			}
		}
		if (t_kill && done == posted)
			break;
		if (t_kill && now_s() - t_kill > 60) {
			fprintf(stderr,
				"peerkill: %u of %u WRs still outstanding 60 s "
				"after the peer died\n",
				posted - done, posted);
			return 1;
		}
	}
	if (!errors) {
		fprintf(stderr, "peerkill: every WR succeeded, peer killed "
				"after they completed?\n");
		return 1;
	}
	printf("peer killed: %u WRs before it done, the first outstanding "
	       "failed with status %u %.3f s after the kill, %u completed "
	       "with errors\n",
	       done - errors, first, t_err - t_kill, errors);
	ovr_cl_close(b.cl);
	return 0;
}

int main(int argc, char **argv)
{
	struct node a = { .name = "A" }, b = { .name = "B" };
	size_t mb = argc > 3 ? strtoul(argv[3], NULL, 0) : 64;
	char devs[64], *dev_b;
	const char *mode = argc > 5 ? argv[5] : "";
	unsigned int nqps = 0;
	bool cross = !strcmp(mode, "cross");

	snprintf(devs, sizeof(devs), "%s", argc > 4 ? argv[4] : "ovrdma0");
	dev_b = strchr(devs, ',');
	if (dev_b)
		*dev_b++ = 0;
	else
		dev_b = devs;
	hold = !strcmp(mode, "hold");
	if (!strcmp(mode, "qps"))
		nqps = argc > 6 ? (unsigned int)strtoul(argv[6], NULL, 0) : 0;

	if (argc < 3) {
		fprintf(stderr, "usage: svc_xfer SOCK_A SOCK_B [MB] [DEV]\n");
		return 2;
	}
	if (!strcmp(mode, "peerkill"))
		return peer_kill(argv[1], argv[2], devs, dev_b, mb << 20);
	setup(&a, argv[1], devs, mb << 20);
	setup(&b, argv[2], dev_b, mb << 20);
	connect_qp(&a, &b);
	connect_qp(&b, &a);
	if (cross) {
		/* the peer is another tenant's QP at the same vIP, connected
		 * back to us: QPNs and vIPs match, only the tenant differs,
		 * and no packet may get through */
		memset(b.buf, 0x5a, b.len);
		fill(a.buf, CHUNK, 9);
		{
			struct ovr_cl_sge sg = { (uint64_t)(uintptr_t)a.buf,
						 CHUNK, a.mr->lkey };
			struct ovr_cl_send_wr wr = {
				.opcode = OVR_WR_RDMA_WRITE,
				.send_flags = OVR_SEND_SIGNALED,
				.sg_list = &sg,
				.num_sge = 1,
				.rkey = b.mr->rkey,
				.remote_addr = (uint64_t)(uintptr_t)b.buf,
			};
			struct ovr_cl_wc wc;
			int rc = ovr_cl_post_send(a.qp, &wr), k = 0;
			double t0 = now_s();

			if (rc)
				fail("post", rc);
			while (k == 0 && now_s() - t0 < 60)
				k = ovr_cl_poll_cq(a.cq, 1, &wc);
			if (k != 1 || wc.status == OVR_WC_SUCCESS) {
				fprintf(stderr,
					"svc_xfer: cross-tenant WRITE "
					"%s\n",
					k ? "succeeded" : "never completed");
				return 1;
			}
			for (size_t i = 0; i < b.len; i++)
				if (b.buf[i] != 0x5a) {
					fprintf(stderr,
						"svc_xfer: cross-tenant "
						"WRITE changed byte %zu\n",
						i);
					return 1;
				}
			printf("cross-tenant WRITE refused: status %u, nothing "
			       "written\n",
			       wc.status);
		}
		ovr_cl_close(a.cl);
		ovr_cl_close(b.cl);
		return 0;
	}
	if (nqps)
		return many_qps(&a, &b, nqps);
	if (hold) {
		printf("svc_xfer: connected, holding\n");
		fflush(stdout);
		for (uint32_t i = 0;; i++)
			round_trip(&a, &b, OVR_WR_RDMA_WRITE, "WRITE A->B", i);
	}
	round_trip(&a, &b, OVR_WR_RDMA_WRITE, "WRITE A->B", 1);
	round_trip(&b, &a, OVR_WR_RDMA_WRITE, "WRITE B->A", 2);
	round_trip(&a, &b, OVR_WR_SEND, "SEND A->B", 3);
	round_trip(&b, &a, OVR_WR_SEND, "SEND B->A", 4);
	round_trip(&a, &b, OVR_WR_RDMA_READ, "READ by B from A", 5);
	round_trip(&b, &a, OVR_WR_RDMA_READ, "READ by A from B", 6);
	atomics(&a, &b);
	atomics(&b, &a);
	ovr_cl_close(a.cl);
	ovr_cl_close(b.cl);
	printf("svc_xfer: OK\n");
	return 0;
}
