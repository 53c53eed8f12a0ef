// SPDX-License-Identifier: MIT
/*
 * Per-application limits of ovrdmad ([limits] in its configuration):
 *
 *   svc_limits SOCK PD MR PINNED_MB CQ QP [CQ_MB]
 *
 * with the values the service was configured with. One application
 * allocates PDs, CQs, QPs and MRs until each is refused, checks that
 * exactly the configured number succeeded, that the refusal is the
 * documented errno (ENOSPC for counts, ENOMEM for pinned memory), that
 * the device reports the limits it enforces, that freeing one makes room
 * for one more, that on-demand registrations (implicit included) are
 * not counted as pinned, that max_cqe is the largest CQ whose ring
 * cq_mb_per_context holds and a second one is refused with ENOMEM, and that a second application on the same
 * device is not affected by the first one's use. Exit 0 when all held.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <ovrdma/client.h>

#define MAXOBJ 4096

static int failures;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "svc_limits: FAIL: " __VA_ARGS__); \
			fputc('\n', stderr);                               \
			failures++;                                        \
		}                                                          \
	} while (0)

static struct ovr_cl *open_app(const char *sock, struct ovr_ctl_dev *dev)
{
	struct ovr_cl *cl = ovr_cl_connect(sock, "svc_limits");
	int rc;

	if (!cl) {
		perror("svc_limits: connect");
		exit(1);
	}
	rc = ovr_cl_open(cl, "ovrdma0", dev);
	if (rc) {
		fprintf(stderr, "svc_limits: open: %s\n", strerror(-rc));
		exit(1);
	}
	return cl;
}

int main(int argc, char **argv)
{
	static uint32_t pds[MAXOBJ];
	static struct ovr_cl_cq *cqs[MAXOBJ];
	static struct ovr_cl_qp *qps[MAXOBJ];
	static struct ovr_cl_mr *mrs[MAXOBJ];
	struct ovr_ctl_qp_cap cap = { .max_send_wr = 4,
				      .max_recv_wr = 4,
				      .max_send_sge = 1,
				      .max_recv_sge = 1 };
	struct ovr_ctl_dev dev, dev2;
	struct ovr_cl *cl, *cl2;
	unsigned int lim_pd, lim_mr, lim_cq, lim_qp, n;
	size_t pinned, page = 4096;
	uint8_t *buf, *big;
	uint32_t pd2;
	int rc = 0;

	if (argc != 7 && argc != 8) {
		fprintf(stderr, "usage: svc_limits SOCK PD MR PINNED_MB CQ QP "
				"[CQ_MB]\n");
		return 2;
	}
	lim_pd = (unsigned int)atoi(argv[2]);
	lim_mr = (unsigned int)atoi(argv[3]);
	pinned = (size_t)atoi(argv[4]) << 20;
	lim_cq = (unsigned int)atoi(argv[5]);
	lim_qp = (unsigned int)atoi(argv[6]);
	if (lim_pd >= MAXOBJ || lim_mr >= MAXOBJ || lim_cq >= MAXOBJ ||
	    lim_qp >= MAXOBJ) {
		fprintf(stderr, "svc_limits: limits above %d\n", MAXOBJ);
		return 2;
	}
	cl = open_app(argv[1], &dev);
	CHECK(dev.max_pd == lim_pd && dev.max_mr == lim_mr &&
		      dev.max_cq == lim_cq && dev.max_qp == lim_qp,
	      "device reports pd %u mr %u cq %u qp %u, configured %u %u %u %u",
	      dev.max_pd, dev.max_mr, dev.max_cq, dev.max_qp, lim_pd, lim_mr,
	      lim_cq, lim_qp);

	/* PDs */
	for (n = 0; n < MAXOBJ; n++) {
		rc = ovr_cl_alloc_pd(cl, &pds[n]);
		if (rc)
			break;
	}
	CHECK(n == lim_pd && rc == -ENOSPC,
	      "%u PDs before refusal (%s), limit %u", n, strerror(-rc), lim_pd);
	rc = ovr_cl_dealloc_pd(cl, pds[--n]);
	CHECK(rc == 0, "dealloc_pd: %s", strerror(-rc));
	rc = ovr_cl_alloc_pd(cl, &pds[n]);
	CHECK(rc == 0, "a PD after freeing one: %s", strerror(-rc));

	/* CQs */
	for (n = 0; n < MAXOBJ; n++) {
		cqs[n] = ovr_cl_create_cq(cl, 16, OVR_CTL_NO_CHANNEL, n);
		if (!cqs[n])
			break;
	}
	rc = errno;
	CHECK(n == lim_cq && rc == ENOSPC,
	      "%u CQs before refusal (%s), limit %u", n, strerror(rc), lim_cq);
	if (argc == 8 && n >= 2) {
		/* the largest CQ the rings' limit holds (48-byte entries,
		 * a power of two of them, a 128-byte header, whole pages),
		 * then a second one: ENOMEM */
		uint64_t lim = (uint64_t)atoi(argv[7]) << 20, depth = 1u << 22;
		struct ovr_cl_cq *a, *b;

		while (depth > 2 &&
		       ((128 + depth * 48 + 4095) & ~4095ull) > lim)
			depth >>= 1;
		CHECK(dev.max_cqe == depth - 1,
		      "max_cqe %u with cq_mb_per_context %s, expected %llu",
		      dev.max_cqe, argv[7], (unsigned long long)depth - 1);
		ovr_cl_destroy_cq(cl, cqs[--n], NULL);
		ovr_cl_destroy_cq(cl, cqs[--n], NULL);
		a = ovr_cl_create_cq(cl, dev.max_cqe, OVR_CTL_NO_CHANNEL, 0);
		CHECK(a && ovr_cl_cq_depth(a) == depth,
		      "a CQ of max_cqe %u: %s", dev.max_cqe,
		      a ? "wrong depth" : strerror(errno));
		b = ovr_cl_create_cq(cl, dev.max_cqe, OVR_CTL_NO_CHANNEL, 0);
		rc = errno;
		CHECK(!b && rc == ENOMEM,
		      "a second CQ of max_cqe past cq_mb_per_context: %s",
		      b ? "created" : strerror(rc));
		if (a)
			ovr_cl_destroy_cq(cl, a, NULL);
		b = ovr_cl_create_cq(cl, dev.max_cqe, OVR_CTL_NO_CHANNEL, 0);
		CHECK(b != NULL, "a CQ of max_cqe once the first is gone: %s",
		      strerror(errno));
		if (b)
			ovr_cl_destroy_cq(cl, b, NULL);
	}

	/* QPs */
	for (n = 0; n < MAXOBJ; n++) {
		qps[n] = ovr_cl_create_qp(cl, pds[0], cqs[0], cqs[0], &cap,
					  false, n);
		if (!qps[n])
			break;
	}
	rc = errno;
	CHECK(n == lim_qp && rc == ENOSPC,
	      "%u QPs before refusal (%s), limit %u", n, strerror(rc), lim_qp);
	rc = ovr_cl_destroy_qp(cl, qps[--n], NULL);
	CHECK(rc == 0, "destroy_qp: %s", strerror(-rc));
	qps[n] = ovr_cl_create_qp(cl, pds[0], cqs[0], cqs[0], &cap, false, n);
	CHECK(qps[n] != NULL, "a QP after destroying one: %s", strerror(errno));

	/* MRs: the count, then pinned memory */
	buf = mmap(NULL, (size_t)lim_mr * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("svc_limits: mmap");
		return 1;
	}
	for (n = 0; n < lim_mr + 1 && n < MAXOBJ; n++) {
		mrs[n] = ovr_cl_reg_mr(cl, pds[0],
				       buf + (size_t)(n % lim_mr) * page, page,
				       0xf);
		if (!mrs[n])
			break;
	}
	rc = errno;
	CHECK(n == lim_mr && rc == ENOSPC,
	      "%u MRs before refusal (%s), limit %u", n, strerror(rc), lim_mr);
	for (unsigned int i = 0; i < n; i++)
		ovr_cl_dereg_mr(cl, mrs[i]);
	big = mmap(NULL, pinned + page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (big == MAP_FAILED) {
		perror("svc_limits: mmap");
		return 1;
	}
	memset(big, 0x33, pinned + page);
	mrs[0] = ovr_cl_reg_mr(cl, pds[0], big, pinned + page, 0xf);
	rc = errno;
	CHECK(!mrs[0] && rc == ENOMEM, "an MR above pinned_mb_per_context: %s",
	      mrs[0] ? "registered" : strerror(rc));
	mrs[0] = ovr_cl_reg_mr(cl, pds[0], big, pinned, 0xf);
	CHECK(mrs[0] != NULL, "an MR of exactly pinned_mb_per_context: %s",
	      strerror(errno));
	/* the registration moved the pages: the data must still be there */
	for (size_t i = 0; i < pinned + page; i += page)
		if (big[i] != 0x33) {
			CHECK(0, "byte %zu changed by a refused registration",
			      i);
			break;
		}

	/* on demand nothing counts as pinned (the limit is used up now):
	 * the same range and more, the whole address space; the OPEN
	 * reply said it may */
	CHECK(dev.caps & OVR_CTL_DEV_ODP, "OPEN's caps 0x%x lack ODP",
	      dev.caps);
	mrs[1] = ovr_cl_reg_mr(cl, pds[0], big, pinned + page,
			       0xf | OVR_ACCESS_ON_DEMAND);
	CHECK(mrs[1] != NULL, "an on-demand MR past pinned_mb_per_context: %s",
	      strerror(errno));
	mrs[2] = ovr_cl_reg_mr(cl, pds[0], NULL, SIZE_MAX,
			       0xf | OVR_ACCESS_ON_DEMAND);
	CHECK(mrs[2] != NULL, "an implicit on-demand MR: %s", strerror(errno));
	mrs[3] = ovr_cl_reg_mr(cl, pds[0], big, page, 0xf);
	rc = errno;
	CHECK(!mrs[3] && rc == ENOMEM,
	      "a pinned page past the limit beside on-demand MRs: %s",
	      mrs[3] ? "registered" : strerror(rc));
	for (int i = 1; i < 3; i++)
		if (mrs[i])
			ovr_cl_dereg_mr(cl, mrs[i]);

	/* a second application is not limited by the first one's use */
	cl2 = open_app(argv[1], &dev2);
	rc = ovr_cl_alloc_pd(cl2, &pd2);
	CHECK(rc == 0, "second application's PD: %s", strerror(-rc));
	CHECK(ovr_cl_create_cq(cl2, 16, OVR_CTL_NO_CHANNEL, 0) != NULL,
	      "second application's CQ: %s", strerror(errno));
	ovr_cl_close(cl2);
	ovr_cl_close(cl);
	if (failures)
		return 1;
	printf("svc_limits: pd %u, mr %u, pinned %zu MB, cq %u, qp %u%s%s%s: "
	       "each enforced with the documented error; on-demand MRs not "
	       "counted as pinned\n",
	       lim_pd, lim_mr, pinned >> 20, lim_cq, lim_qp,
	       argc == 8 ? ", CQ rings " : "", argc == 8 ? argv[7] : "",
	       argc == 8 ? " MB" : "");
	return 0;
}
