// SPDX-License-Identifier: MIT
/*
 * verbs_mem: what memory registration must mean to an application, as a
 * plain libibverbs program sees it through a peer's RDMA READs and
 * WRITEs (docs/PROVIDER.md section 6, docs/SERVICE.md section 4).
 *
 *   verbs_mem server [-p PORT] [-d DEV]
 *   verbs_mem client ADDR [-p PORT] [-d DEV] [CASE...]
 *
 * The server (node 1) holds the memory under test and runs the cases;
 * the client (node 2) is the peer: on the server's word (over the TCP
 * connection that also carries the QP numbers) it RDMA WRITEs a pattern
 * from, or RDMA READs into, an ordinary malloc'd registered buffer of its
 * own and reports the completion (and the bytes read). An RC WRITE that
 * completed at the peer has been placed in the server's memory, so the
 * report is the server's cue to look. Every wait has a timeout: a case
 * that would hang reports FAIL instead.
 *
 * Cases (the client's CASE arguments choose them, default all; each
 * prints "verbs_mem: NAME: PASS|FAIL|SKIP: why", each on QPs of its own):
 *   memfd       one memfd mapped twice (A and B), A registered: stores
 *               through B are what the peer READs from A, what the peer
 *               WRITEs into A is what B reads;
 *   memfd-huge  the same on a MFD_HUGETLB memfd (one 2 MB page; SKIP
 *               when none is free);
 *   file        a MAP_SHARED mapping of a file in $TMPDIR (default
 *               /tmp), unlinked, registered: a peer WRITE is in the file
 *               (pread through a fresh fd), a pwrite into the file is
 *               what a peer READ returns;
 *   fork        MAP_SHARED anonymous memory shared with a child forked
 *               before the parent registered it: the child's stores are
 *               what the peer READs, the peer's WRITE is what the child
 *               reads;
 *   thread      a private buffer registered while another thread stores
 *               into the other half of each of its pages, the thread
 *               stopping at times spread over the registration: none of
 *               its stores is lost, and the peer READs what the
 *               application sees;
 *   dontneed    MADV_DONTNEED on a registered private range: the
 *               application and the peer read zeros, a later peer WRITE
 *               is what the application reads;
 *   munmap      a registered private range unmapped: a peer WRITE and a
 *               peer READ naming it complete with an error, and a QP
 *               opened before still transfers byte-exact;
 *   forkinit    ibv_fork_init() (in a fresh process: this program again
 *               as "verbs_mem forkinit-server OOBFD RESULTFD CASENO",
 *               started by the server, on the same connection), then a
 *               private buffer registered and a child forked: the child
 *               does not have the range (MADV_DONTFORK: mincore ENOMEM,
 *               loads fault), the peer's WRITE into the parent's MR is
 *               what the parent and a peer READ see, the child's own
 *               memory is untouched;
 *   forknoinit  without ibv_fork_init: a child forked after a private
 *               buffer (P) was registered stores Q into its copy: the
 *               parent and the peer's READ still see P; the peer WRITEs
 *               R: the parent sees R, the child still Q;
 *   huge1g      1 GiB private (SKIP below 3 GB MemAvailable or when the
 *               mmap fails): ibv_reg_mr and ibv_dereg_mr timed (printed,
 *               not judged), 64 KB peer WRITEs at 0, 512 MB and the last
 *               64 KB read back byte-exact by the application and the
 *               peer;
 *   madv        a page of a registered private buffer made PROT_READ:
 *               the peer READs it byte-exact; what a peer WRITE into it
 *               gives is printed, not judged; restored to read-write,
 *               the MR transfers both ways byte-exact;
 *   odp         on-demand paging (IBV_ACCESS_ON_DEMAND; SKIP when the
 *               device does not advertise it): the odp_caps of
 *               ibv_query_device_ex; a range with an unmapped hole
 *               registers (without ON_DEMAND: EFAULT); peer WRITEs and
 *               READs byte-exact where it is mapped, REM_ACCESS_ERR in
 *               the hole; memory mapped into the hole afterwards, and a
 *               memfd mapped over its first pages, are what the peer
 *               WRITEs into and READs: the region follows the address
 *               space, not the pages of registration time;
 *   odp-implicit ibv_reg_mr(pd, NULL, SIZE_MAX, ON_DEMAND | ...): one
 *               rkey reaches a heap buffer, a static array, a stack
 *               buffer, 1 MB of mmap'd memory at three offsets and a
 *               MAP_SHARED memfd, peer WRITEs and READs byte-exact with
 *               the bytes beside them untouched; an unmapped address
 *               gives REM_ACCESS_ERR;
 *   advise      ibv_advise_mr: PREFETCH_WRITE with FLUSH makes exactly
 *               the named pages resident (mincore), PREFETCH and
 *               PREFETCH_NO_FAULT succeed, also on the implicit region;
 *               the errors of ibv_advise_mr(3): an unknown advice
 *               EOPNOTSUPP; unknown flags, no SGE EINVAL; an unknown
 *               lkey, a region without ON_DEMAND or of another PD
 *               ENOENT; PREFETCH_WRITE of a region without LOCAL_WRITE
 *               EPERM; a range past either end of its region EFAULT;
 *               a range with an unmapped page EFAULT with FLUSH, 0
 *               without (best effort); a list with one bad SGE does
 *               nothing; the peer READs what was stored after a
 *               prefetch.
 *   file-path   file, the file left in place while registered: an
 *               ordinary user's client, which may not open
 *               /proc/self/map_files, opens it by its path.
 * Exit status: 0 when no case failed (SKIP is not a failure), 1 otherwise.
 */
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "verbs_common.h"

#define MAGIC 0x6f766d6du
#define PG 4096u
#define LEN (64u << 10) /* the buffer of most cases */
#define HUGE_SZ (2u << 20)
#define PEER_BUF (4u << 20) /* the client's buffer: the largest transfer */
#define OP_TIMEOUT_S 5.0 /* a peer operation's completion */
#define REPLY_MS 30000 /* the peer's report: its timeout and then some */
#define MAX_QP 4
#define TH_PAGES 256u /* case thread: 1 MB */
#define TH_TRIALS 64u

static const char *const case_names[] = {
	"memfd",	"memfd-huge", "file",	   "fork",
	"thread",	"dontneed",   "munmap",	   "forkinit",
	"forknoinit",	"huge1g",     "madv",	   "odp",
	"odp-implicit", "advise",     "file-path", "fence",
};
#define NCASES (sizeof(case_names) / sizeof(case_names[0]))

struct hello {
	uint32_t magic;
	uint32_t mask; /* bit i: case_names[i] */
};

/* the server's word to the client */
struct cmd {
	uint32_t type; /* C_* */
	uint32_t qp;
	uint64_t addr;
	uint64_t pat; /* WRITE: the data stream to send */
	uint32_t rkey, len;
	struct vc_qpinfo info; /* NEWQP: the server's QP */
};
enum { C_NEWQP = 1, C_FREEQP, C_WRITE, C_READ, C_END };

/* the client's report; READ: len bytes follow when status is SUCCESS */
struct rep {
	int32_t status; /* enum ibv_wc_status, or R_* */
	uint32_t vendor_err;
	struct vc_qpinfo info; /* NEWQP: the client's QP */
};
enum { R_TIMEOUT = -1, R_POST = -2, R_BAD = -3 };

static struct vc_dev dev;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qps[MAX_QP];
static int oob;
static uint64_t seed;

static struct ibv_qp *qp_create(void)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = { .max_send_wr = 8,
			 .max_recv_wr = 1,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &a);

	if (!qp)
		vc_die("ibv_create_qp: %s", strerror(errno));
	return qp;
}

static void setup(void)
{
	pd = ibv_alloc_pd(dev.ctx);
	cq = ibv_create_cq(dev.ctx, 64, NULL, NULL, 0);
	if (!pd || !cq)
		vc_die("alloc_pd / create_cq: %s", strerror(errno));
}

static const char *status_str(int32_t s)
{
	switch (s) {
	case R_TIMEOUT:
		return "no completion within the timeout";
	case R_POST:
		return "ibv_post_send refused the work request";
	case R_BAD:
		return "bad request";
	default:
		return vc_st((enum ibv_wc_status)s);
	}
}

/* ---- the client: the peer ------------------------------------------------- */

static int run_client(const char *addr, int port, uint32_t mask)
{
	struct hello h = { .magic = MAGIC, .mask = mask };
	struct vc_path path = vc_path_default();
	struct ibv_mr *mr;
	uint8_t *buf;
	uint64_t wrid = 0;
	struct cmd c;
	uint32_t nfail = 0;

	oob = vc_tcp_client(addr, port);
	setup();
	buf = aligned_alloc(PG, PEER_BUF);
	if (!buf)
		vc_die("out of memory");
	memset(buf, 0, PEER_BUF);
	mr = ibv_reg_mr(pd, buf, PEER_BUF,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ);
	if (!mr)
		vc_die("ibv_reg_mr: %s", strerror(errno));
	vc_send_all(oob, &h, sizeof(h));
	for (;;) {
		struct rep r = { .status = IBV_WC_SUCCESS };
		struct ibv_sge sg;
		struct ibv_send_wr wr = { 0 }, *bad;
		double t0;

		vc_recv_must(oob, &c, sizeof(c));
		if (c.type == C_END) {
			nfail = c.qp;
			break;
		}
		if (c.qp >= MAX_QP || c.len > PEER_BUF) {
			r.status = R_BAD;
			vc_send_all(oob, &r, sizeof(r));
			continue;
		}
		switch (c.type) {
		case C_NEWQP: {
			int rc;

			qps[c.qp] = qp_create();
			vc_qpinfo_of(&dev, qps[c.qp],
				     (uint32_t)vc_mix(seed + c.qp) & 0xffffff,
				     &r.info);
			rc = vc_connect(&dev, qps[c.qp], r.info.psn, &c.info,
					&path, true);
			if (rc)
				vc_die("connect QP %u: %s", c.qp, strerror(rc));
			vc_send_all(oob, &r, sizeof(r));
			continue;
		}
		case C_FREEQP:
			if (qps[c.qp] && ibv_destroy_qp(qps[c.qp]))
				vc_die("ibv_destroy_qp: %s", strerror(errno));
			qps[c.qp] = NULL;
			vc_send_all(oob, &r, sizeof(r));
			continue;
		case C_WRITE:
			vc_fill(buf, c.len, seed, c.pat);
			wr.opcode = IBV_WR_RDMA_WRITE;
			break;
		case C_READ:
			memset(buf, 0xee, c.len);
			wr.opcode = IBV_WR_RDMA_READ;
			break;
		default:
			vc_die("unknown command %u from the server", c.type);
		}
		sg = (struct ibv_sge){ .addr = (uintptr_t)buf,
				       .length = c.len,
				       .lkey = mr->lkey };
		wr.wr_id = ++wrid;
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = c.addr;
		wr.wr.rdma.rkey = c.rkey;
		r.status = R_TIMEOUT;
		if (!qps[c.qp] || ibv_post_send(qps[c.qp], &wr, &bad)) {
			r.status = R_POST;
		} else {
			/* completions of earlier operations that timed out
			 * are stale: only this wr_id answers */
			for (t0 = vc_now(); vc_now() - t0 < OP_TIMEOUT_S;) {
				struct ibv_wc wc;
				int n = ibv_poll_cq(cq, 1, &wc);

				if (n < 0)
					vc_die("ibv_poll_cq: %d", n);
				if (n == 1 && wc.wr_id == wrid) {
					r.status = wc.status;
					r.vendor_err = wc.vendor_err;
					break;
				}
				if (!n)
					usleep(20);
			}
		}
		vc_send_all(oob, &r, sizeof(r));
		if (c.type == C_READ && r.status == IBV_WC_SUCCESS)
			vc_send_all(oob, buf, c.len);
	}
	for (int q = 0; q < MAX_QP; q++)
		if (qps[q])
			ibv_destroy_qp(qps[q]);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(dev.ctx);
	if (nfail) {
		printf("%s: FAIL: %u case(s) failed (the server's log says which and why)\n",
		       vc_prog, nfail);
		return 1;
	}
	printf("%s: PASS: every case the server ran passed or was skipped\n",
	       vc_prog);
	return 0;
}

/* ---- the server: the memory under test ------------------------------------ */

static char why[1024]; /* why a case fails: every reason, in order */
static uint8_t *expect; /* a pattern's bytes */
static uint8_t *rdbuf; /* what a peer READ returned */

static int failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int failf(const char *fmt, ...)
{
	size_t n = strlen(why);
	va_list ap;

	/* one line shows each check that failed, not only the first */
	if (n && n + 8 < sizeof(why)) {
		strcpy(why + n, "; also: ");
		n += 8;
	}
	if (n + 1 < sizeof(why)) {
		va_start(ap, fmt);
		vsnprintf(why + n, sizeof(why) - n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static struct rep command(struct cmd *c)
{
	struct rep r;

	vc_send_all(oob, c, sizeof(*c));
	if (!vc_readable(oob, REPLY_MS))
		vc_die("the client did not answer command %u within %d ms",
		       c->type, REPLY_MS);
	vc_recv_must(oob, &r, sizeof(r));
	if (r.status == R_BAD)
		vc_die("the client refused command %u", c->type);
	return r;
}

static void qp_new(uint32_t q)
{
	struct vc_path path = vc_path_default();
	struct cmd c = { .type = C_NEWQP, .qp = q };
	struct rep r;
	int rc;

	qps[q] = qp_create();
	vc_qpinfo_of(&dev, qps[q], (uint32_t)vc_mix(seed + 100 + q) & 0xffffff,
		     &c.info);
	r = command(&c);
	rc = vc_connect(&dev, qps[q], c.info.psn, &r.info, &path, true);
	if (rc)
		vc_die("connect QP %u: %s", q, strerror(rc));
}

static void qps_free(void)
{
	for (uint32_t q = 0; q < MAX_QP; q++) {
		struct cmd c = { .type = C_FREEQP, .qp = q };

		if (!qps[q])
			continue;
		command(&c);
		if (ibv_destroy_qp(qps[q]))
			vc_die("ibv_destroy_qp: %s", strerror(errno));
		qps[q] = NULL;
	}
}

/* The peer RDMA WRITEs data stream @pat into [addr, addr + len). */
static struct rep peer_write(uint32_t q, void *addr, uint32_t len,
			     const struct ibv_mr *mr, uint64_t pat)
{
	struct cmd c = { .type = C_WRITE,
			 .qp = q,
			 .addr = (uintptr_t)addr,
			 .pat = pat,
			 .rkey = mr->rkey,
			 .len = len };

	return command(&c);
}

/* The peer RDMA READs [addr, addr + len); the bytes land in rdbuf. */
static struct rep peer_read(uint32_t q, const void *addr, uint32_t len,
			    const struct ibv_mr *mr)
{
	struct cmd c = { .type = C_READ,
			 .qp = q,
			 .addr = (uintptr_t)addr,
			 .rkey = mr->rkey,
			 .len = len };
	struct rep r = command(&c);

	if (r.status == IBV_WC_SUCCESS)
		vc_recv_must(oob, rdbuf, len);
	return r;
}

static void pat_fill(void *dst, size_t len, uint64_t pat)
{
	vc_fill(dst, len, seed, pat);
}

/* Does @got hold data stream @pat? (Records nothing.) */
static bool holds(const uint8_t *got, size_t len, uint64_t pat)
{
	uint8_t *want = malloc(len);
	bool same;

	if (!want)
		vc_die("out of memory");
	pat_fill(want, len, pat);
	same = !memcmp(got, want, len);
	free(want);
	return same;
}

/*
 * Does @got hold data stream @pat? If not, says where and what it holds
 * instead (@old: the stream the memory held before, recognised by name).
 */
static int check(const char *what, const uint8_t *got, size_t len, uint64_t pat,
		 uint64_t old)
{
	size_t first = len, ndiff = 0, nzero = 0, nold = 0;
	uint8_t *prev;

	pat_fill(expect, len, pat);
	for (size_t i = 0; i < len; i++)
		if (got[i] != expect[i]) {
			if (first == len)
				first = i;
			ndiff++;
		}
	if (!ndiff)
		return 0;
	prev = malloc(len);
	if (!prev)
		vc_die("out of memory");
	pat_fill(prev, len, old);
	for (size_t i = 0; i < len; i++) {
		nzero += !got[i];
		nold += got[i] == prev[i];
	}
	free(prev);
	return failf(
		"%s: %zu of %zu bytes differ, first at byte %zu (0x%02x, expected 0x%02x)%s",
		what, ndiff, len, first, got[first], expect[first],
		nzero == len ? "; it holds zeros" :
		nold == len  ? "; it holds the contents from before" :
			       "");
}

static struct ibv_mr *reg(void *addr, size_t len)
{
	struct ibv_mr *mr =
		ibv_reg_mr(pd, addr, len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);

	if (!mr)
		failf("ibv_reg_mr of %zu bytes at %p: %s", len, addr,
		      strerror(errno));
	return mr;
}

/* A transfer the peer must complete successfully. */
static int ok(const char *what, struct rep r)
{
	if (r.status == IBV_WC_SUCCESS)
		return 0;
	return failf("%s: %s (vendor_err %u)", what, status_str(r.status),
		     r.vendor_err);
}

/* Patterns (data streams) each case uses; distinct per case and step. */
#define PAT(c, step) (((uint64_t)(c) << 8) | (step))

/*
 * Memory reached through two mappings: @a registered, @b another view
 * of the same pages. Both directions, byte-exact.
 */
static int two_views(unsigned cn, uint8_t *a, uint8_t *b, size_t len)
{
	struct ibv_mr *mr;
	int bad = 0;

	pat_fill(b, len, PAT(cn, 1));
	mr = reg(a, len);
	if (!mr)
		return -1;
	qp_new(0);
	/* (a) the application stores through B after registration */
	pat_fill(b, len, PAT(cn, 2));
	if (ok("peer RDMA READ of A", peer_read(0, a, (uint32_t)len, mr)) ||
	    check("what the peer READ from A after stores through B", rdbuf,
		  len, PAT(cn, 2), PAT(cn, 1)))
		bad = -1;
	/* (b) the peer writes A, the application reads B */
	if (ok("peer RDMA WRITE into A",
	       peer_write(0, a, (uint32_t)len, mr, PAT(cn, 3))) ||
	    check("B after the peer's RDMA WRITE into A", b, len, PAT(cn, 3),
		  PAT(cn, 2)))
		bad = -1;
	if (ibv_dereg_mr(mr))
		bad = failf("ibv_dereg_mr: %s", strerror(errno));
	return bad;
}

static int case_memfd(unsigned cn)
{
	uint8_t *a, *b;
	int fd, rc;

	fd = memfd_create("verbs_mem", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, LEN))
		return failf("memfd_create / ftruncate: %s", strerror(errno));
	a = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	b = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (a == MAP_FAILED || b == MAP_FAILED)
		return failf("mmap of the memfd: %s", strerror(errno));
	rc = two_views(cn, a, b, LEN);
	munmap(a, LEN);
	munmap(b, LEN);
	close(fd);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"%u bytes stored through mapping B read by the peer from A, written by the peer into A read through B",
			LEN);
	return rc;
}

static long meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[128];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) &&
		    line[strlen(key)] == ':')
			v = strtol(line + strlen(key) + 1, NULL, 10);
	fclose(f);
	return v;
}

/* 1: skipped */
static int case_memfd_huge(unsigned cn)
{
	long free_pages = meminfo("HugePages_Free"),
	     total = meminfo("HugePages_Total"),
	     size_kb = meminfo("Hugepagesize");
	uint8_t *a, *b;
	int fd, rc;

	if (size_kb != 2048) {
		snprintf(why, sizeof(why),
			 "the default huge page is %ld kB, not 2 MB", size_kb);
		return 1;
	}
	if (free_pages < 1) {
		snprintf(why, sizeof(why),
			 "no free 2 MB page (HugePages_Free %ld of %ld)",
			 free_pages, total);
		return 1;
	}
	fd = memfd_create("verbs_mem_huge", MFD_CLOEXEC | MFD_HUGETLB);
	if (fd < 0) {
		snprintf(why, sizeof(why), "memfd_create(MFD_HUGETLB): %s",
			 strerror(errno));
		return 1;
	}
	if (ftruncate(fd, HUGE_SZ))
		return failf("ftruncate of the hugetlb memfd: %s",
			     strerror(errno));
	a = mmap(NULL, HUGE_SZ, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (a == MAP_FAILED) {
		/* the page went to someone else since /proc/meminfo */
		snprintf(why, sizeof(why),
			 "no free 2 MB page after all: mmap: %s",
			 strerror(errno));
		close(fd);
		return 1;
	}
	b = mmap(NULL, HUGE_SZ, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (b == MAP_FAILED)
		return failf("second mmap of the hugetlb memfd: %s",
			     strerror(errno));
	rc = two_views(cn, a, b, HUGE_SZ);
	munmap(a, HUGE_SZ);
	munmap(b, HUGE_SZ);
	close(fd);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"one 2 MB hugetlb page mapped twice: stores through B read by the peer from A, the peer's WRITE into A read through B");
	return rc;
}

/* cases file and file-path (@keep: the file keeps its name while
 * registered) */
static int file_case(unsigned cn, bool keep)
{
	const char *dir = getenv("TMPDIR");
	char path[PATH_MAX];
	struct ibv_mr *mr = NULL;
	uint8_t *m = MAP_FAILED, *got = NULL;
	int fd, fd2 = -1, rc = -1;

	snprintf(path, sizeof(path), "%s/verbs_mem.XXXXXX",
		 dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return failf("mkstemp %s: %s", path, strerror(errno));
	if (!keep)
		unlink(path); /* a fresh fd comes from /proc/self/fd */
	got = malloc(LEN);
	if (!got || ftruncate(fd, LEN)) {
		failf("ftruncate: %s", strerror(errno));
		goto out;
	}
	m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		failf("mmap of the file: %s", strerror(errno));
		goto out;
	}
	pat_fill(m, LEN, PAT(cn, 1));
	mr = reg(m, LEN);
	if (!mr)
		goto out;
	qp_new(0);
	rc = 0;
	/* the peer's WRITE must reach the file */
	if (ok("peer RDMA WRITE into the file mapping",
	       peer_write(0, m, LEN, mr, PAT(cn, 2)))) {
		rc = -1;
	} else {
		char p[64];

		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		fd2 = open(p, O_RDONLY | O_CLOEXEC);
		if (fd2 < 0 || pread(fd2, got, LEN, 0) != LEN)
			rc = failf("pread of the file: %s", strerror(errno));
		else if (check("the file (pread through a fresh fd) after the peer's RDMA WRITE",
			       got, LEN, PAT(cn, 2), PAT(cn, 1)))
			rc = -1;
	}
	/* what is written into the file must be what the peer READs */
	pat_fill(got, LEN, PAT(cn, 3));
	if (pwrite(fd, got, LEN, 0) != LEN)
		rc = failf("pwrite: %s", strerror(errno));
	else if (ok("peer RDMA READ of the file mapping",
		    peer_read(0, m, LEN, mr)) ||
		 check("what the peer READ after pwrite() into the file", rdbuf,
		       LEN, PAT(cn, 3), PAT(cn, 2)))
		rc = -1;
out:
	if (mr && ibv_dereg_mr(mr))
		rc = failf("ibv_dereg_mr: %s", strerror(errno));
	if (m != MAP_FAILED)
		munmap(m, LEN);
	if (fd2 >= 0)
		close(fd2);
	close(fd);
	if (keep)
		unlink(path);
	free(got);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"%u bytes%s: the peer's RDMA WRITE is in the file (pread), pwrite() into the file is what the peer READs",
			LEN, keep ? " of a file with its path" : "");
	return rc;
}

static int case_file(unsigned cn)
{
	return file_case(cn, false);
}

static int case_file_path(unsigned cn)
{
	return file_case(cn, true);
}

/* The fork case's child: stores or checks patterns on the parent's word. */
struct child_cmd {
	char op; /* 's' store, 'c' check, 'q' quit */
	uint64_t pat;
};

static void child_loop(uint8_t *shm, int in, int out)
{
	struct child_cmd c;
	int64_t res;

	while (read(in, &c, sizeof(c)) == sizeof(c) && c.op != 'q') {
		res = -1;
		if (c.op == 's') {
			pat_fill(shm, LEN, c.pat);
		} else {
			pat_fill(expect, LEN, c.pat);
			for (size_t i = 0; i < LEN; i++)
				if (shm[i] != expect[i]) {
					res = (int64_t)i;
					break;
				}
		}
		if (write(out, &res, sizeof(res)) != sizeof(res))
			break;
	}
	_exit(0);
}

static int case_fork(unsigned cn)
{
	struct child_cmd c;
	struct ibv_mr *mr;
	int to[2], from[2], rc = 0, st;
	int64_t res;
	uint8_t *shm;
	pid_t pid;

	shm = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED || pipe(to) || pipe(from))
		return failf("mmap / pipe: %s", strerror(errno));
	pat_fill(shm, LEN, PAT(cn, 1));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return failf("fork: %s", strerror(errno));
	if (!pid) {
		close(to[1]);
		close(from[0]);
		child_loop(shm, to[0], from[1]);
	}
	close(to[0]);
	close(from[1]);
	mr = reg(shm, LEN);
	if (!mr) {
		rc = -1;
		goto out;
	}
	qp_new(0);
	/* the child stores, the peer reads the parent's MR */
	c = (struct child_cmd){ 's', PAT(cn, 2) };
	if (write(to[1], &c, sizeof(c)) != sizeof(c) ||
	    read(from[0], &res, sizeof(res)) != sizeof(res)) {
		rc = failf("the child did not answer");
		goto out;
	}
	if (ok("peer RDMA READ of the parent's MR",
	       peer_read(0, shm, LEN, mr)) ||
	    check("what the peer READ from the parent's MR after the child's stores",
		  rdbuf, LEN, PAT(cn, 2), PAT(cn, 1)))
		rc = -1;
	/* the peer writes the parent's MR, the child reads */
	if (ok("peer RDMA WRITE into the parent's MR",
	       peer_write(0, shm, LEN, mr, PAT(cn, 3)))) {
		rc = -1;
	} else {
		c = (struct child_cmd){ 'c', PAT(cn, 3) };
		if (write(to[1], &c, sizeof(c)) != sizeof(c) ||
		    read(from[0], &res, sizeof(res)) != sizeof(res))
			rc = failf("the child did not answer");
		else if (res >= 0)
			rc = failf(
				"the child reads something else than the peer's RDMA WRITE into the parent's MR, from byte %" PRId64
				" on (parent sees %s)",
				res,
				holds(shm, LEN, PAT(cn, 3)) ?
					"the peer's data" :
					"something else too");
	}
out:
	c = (struct child_cmd){ 'q', 0 };
	if (write(to[1], &c, sizeof(c)) != sizeof(c))
		kill(pid, SIGKILL);
	close(to[1]);
	close(from[0]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		rc = failf("the child did not exit cleanly (status 0x%x)", st);
	if (mr && ibv_dereg_mr(mr))
		rc = failf("ibv_dereg_mr: %s", strerror(errno));
	munmap(shm, LEN);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"%u bytes of MAP_SHARED anonymous memory: the child's stores read by the peer from the parent's MR, the peer's WRITE read by the child",
			LEN);
	return rc;
}

/*
 * Case thread. Each page of the buffer: the first half is the
 * application's data, the second half the writer thread's, which stores
 * an increasing counter into one 8-byte slot after the other and
 * remembers what it stored last in each. It starts just before
 * ibv_reg_mr and stops on its own at a deadline; the deadlines of the
 * trials are spread from early in the registration to after it, so some
 * trial stops while the registration is under way, where a store the
 * registration loses is not written over again by a later one.
 */
struct writer {
	uint64_t *base;
	uint64_t *last; /* [page][slot] */
	_Atomic double deadline; /* set once the thread runs */
	atomic_bool running;
	uint64_t stores;
};

#define TH_SLOTS (PG / 2 / 8)

static void *writer_run(void *arg)
{
	struct writer *w = arg;
	uint64_t ctr = 0;

	for (;;)
		for (uint32_t s = 0; s < TH_SLOTS; s++) {
			for (uint32_t p = 0; p < TH_PAGES; p++) {
				volatile uint64_t *slot =
					w->base + p * (PG / 8) + TH_SLOTS + s;

				*slot = ++ctr;
				w->last[p * TH_SLOTS + s] = ctr;
			}
			atomic_store(&w->running, true);
			if (vc_now() >= atomic_load(&w->deadline)) {
				w->stores = ctr;
				return NULL;
			}
		}
}

static int case_thread(unsigned cn)
{
	size_t len = (size_t)TH_PAGES * PG;
	uint64_t *last = calloc(TH_PAGES * TH_SLOTS, 8);
	double t_reg = 1e9, sum_stores = 0;
	uint32_t lost_trials = 0;
	char lostwhy[384] = "";
	int rc = 0;

	if (!last)
		vc_die("out of memory");
	/* how long a registration of this size takes here */
	for (int i = 0; i < 3; i++) {
		uint8_t *b = aligned_alloc(PG, len);
		struct ibv_mr *mr;
		double t0;

		if (!b)
			vc_die("out of memory");
		memset(b, 1, len);
		t0 = vc_now();
		mr = reg(b, len);
		if (!mr)
			return -1;
		if (vc_now() - t0 < t_reg)
			t_reg = vc_now() - t0;
		ibv_dereg_mr(mr);
		free(b);
	}
	qp_new(0);
	for (uint32_t t = 0; t < TH_TRIALS; t++) {
		uint8_t *b = aligned_alloc(PG, len);
		struct writer w = { .last = last };
		struct ibv_mr *mr;
		pthread_t th;
		uint32_t lost = 0, touched = 0;
		char first[128] = "";
		double frac = 0.1 + 1.4 * t / (TH_TRIALS - 1);

		if (!b)
			vc_die("out of memory");
		pat_fill(b, len, PAT(cn, 1));
		w.base = (uint64_t *)(void *)b;
		memset(last, 0, TH_PAGES * TH_SLOTS * 8);
		atomic_init(&w.deadline, 1e300);
		atomic_init(&w.running, false);
		if (pthread_create(&th, NULL, writer_run, &w))
			vc_die("pthread_create failed");
		/* the thread is storing when the registration starts */
		while (!atomic_load(&w.running))
			;
		atomic_store(&w.deadline, vc_now() + frac * t_reg);
		mr = reg(b, len);
		pthread_join(th, NULL);
		sum_stores += (double)w.stores;
		if (!mr) {
			rc = -1;
			free(b);
			break;
		}
		/* a slot the thread never reached keeps the pattern */
		pat_fill(expect, len, PAT(cn, 1));
		for (uint32_t k = 0; k < TH_PAGES * TH_SLOTS; k++) {
			uint32_t p = k / TH_SLOTS, s = k % TH_SLOTS;
			size_t at = (size_t)p * PG + PG / 2 + s * 8;
			uint64_t v = w.base[at / 8], want = last[k];

			if (last[k])
				touched++;
			else
				memcpy(&want, expect + at, 8);
			if (v == want)
				continue;
			if (!lost++)
				snprintf(first, sizeof(first),
					 "page %u slot %u holds %" PRIu64
					 ", %s %" PRIu64,
					 p, s, v,
					 last[k] ? "the thread stored last" :
						   "untouched, it held",
					 want);
		}
		if (lost && !lost_trials++)
			snprintf(
				lostwhy, sizeof(lostwhy),
				"first in trial %u (thread stopped %.0f %% into the registration's %.2f ms): %u of the %u slots it stored into lost their last store (or changed), e.g. %s",
				t + 1, frac * 100, t_reg * 1e3, lost, touched,
				first);
		/* the application's halves are untouched */
		for (uint32_t p = 0; p < TH_PAGES; p++)
			if (memcmp(b + (size_t)p * PG, expect + (size_t)p * PG,
				   PG / 2)) {
				rc = failf(
					"trial %u: the application's half of page %u changed",
					t + 1, p);
				break;
			}
		/* the device sees what the application sees */
		if (ok("peer RDMA READ of the MR",
		       peer_read(0, b, (uint32_t)len, mr))) {
			rc = -1;
		} else if (memcmp(rdbuf, b, len)) {
			size_t i = 0;

			while (rdbuf[i] == b[i])
				i++;
			rc = failf(
				"trial %u: the peer READ byte %zu as 0x%02x, the application sees 0x%02x",
				t + 1, i, rdbuf[i], b[i]);
		}
		if (ibv_dereg_mr(mr))
			rc = failf("ibv_dereg_mr: %s", strerror(errno));
		free(b);
	}
	free(last);
	if (lost_trials)
		rc = failf(
			"stores of the other thread lost in %u of %u trials; %s",
			lost_trials, TH_TRIALS, lostwhy);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"%u trials, 1 MB each, thread stopping 10-150 %% into a %.2f ms registration (%.0f stores per trial on average): no store lost, peer READs what the application sees",
			TH_TRIALS, t_reg * 1e3, sum_stores / TH_TRIALS);
	return rc;
}

static int case_dontneed(unsigned cn)
{
	struct ibv_mr *mr;
	uint8_t *m;
	int rc = 0;

	m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (m == MAP_FAILED)
		return failf("mmap: %s", strerror(errno));
	pat_fill(m, LEN, PAT(cn, 1));
	mr = reg(m, LEN);
	if (!mr) {
		munmap(m, LEN);
		return -1;
	}
	qp_new(0);
	if (madvise(m, LEN, MADV_DONTNEED)) {
		rc = failf("madvise(MADV_DONTNEED): %s", strerror(errno));
		goto out;
	}
	memset(expect, 0, LEN);
	for (size_t i = 0; i < LEN; i++)
		if (m[i]) {
			rc = failf(
				"after MADV_DONTNEED the application reads 0x%02x at byte %zu, not zeros%s",
				m[i], i,
				holds(m, LEN, PAT(cn, 1)) ?
					" (it holds the contents from before)" :
					"");
			break;
		}
	if (ok("peer RDMA READ after MADV_DONTNEED", peer_read(0, m, LEN, mr)))
		rc = -1;
	else
		for (size_t i = 0; i < LEN; i++)
			if (rdbuf[i]) {
				rc = failf(
					"after MADV_DONTNEED the peer READs 0x%02x at byte %zu, not zeros",
					rdbuf[i], i);
				break;
			}
	if (ok("peer RDMA WRITE after MADV_DONTNEED",
	       peer_write(0, m, LEN, mr, PAT(cn, 2))) ||
	    check("the application's view after the peer's RDMA WRITE", m, LEN,
		  PAT(cn, 2), PAT(cn, 1)))
		rc = -1;
out:
	if (ibv_dereg_mr(mr))
		rc = failf("ibv_dereg_mr: %s", strerror(errno));
	munmap(m, LEN);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"%u bytes: zeros after MADV_DONTNEED for the application and the peer, the peer's later RDMA WRITE is what the application reads",
			LEN);
	return rc;
}

static int case_munmap(unsigned cn)
{
	struct ibv_mr *mr, *good;
	uint8_t *m, *g;
	struct rep r;
	char seen[256];
	int rc = 0;

	/* everything the case needs exists before the munmap, so that
	 * nothing is mapped into the hole meanwhile */
	g = aligned_alloc(PG, LEN);
	m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (!g || m == MAP_FAILED)
		return failf("allocating: %s", strerror(errno));
	pat_fill(m, LEN, PAT(cn, 1));
	memset(g, 0, LEN);
	mr = reg(m, LEN);
	good = reg(g, LEN);
	if (!mr || !good)
		return -1;
	qp_new(0); /* the WRITE to the hole */
	qp_new(1); /* the READ of it */
	qp_new(2); /* must not notice */
	if (munmap(m, LEN))
		return failf("munmap: %s", strerror(errno));

	r = peer_write(0, m, LEN, mr, PAT(cn, 2));
	if (r.status == IBV_WC_SUCCESS)
		rc = failf(
			"the peer's RDMA WRITE into the unmapped range completed successfully, expected an error completion");
	else if (r.status < 0)
		rc = failf("the peer's RDMA WRITE into the unmapped range: %s",
			   status_str(r.status));
	snprintf(seen, sizeof(seen), "WRITE: %s", status_str(r.status));
	r = peer_read(1, m, LEN, mr);
	if (r.status == IBV_WC_SUCCESS)
		rc = failf(
			"the peer's RDMA READ of the unmapped range completed successfully (%s), expected an error completion",
			holds(rdbuf, LEN, PAT(cn, 1)) ?
				"with the contents from before the munmap" :
			holds(rdbuf, LEN, PAT(cn, 2)) ?
				"with the data of the WRITE into the hole" :
				"with other data");
	else if (r.status < 0)
		rc = failf("the peer's RDMA READ of the unmapped range: %s",
			   status_str(r.status));
	snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), ", READ: %s",
		 status_str(r.status));
	printf("%s: munmap: completions the peer got: %s\n", vc_prog, seen);

	/* the service still works for the QP opened before */
	if (ok("peer RDMA WRITE on the other QP afterwards",
	       peer_write(2, g, LEN, good, PAT(cn, 3))) ||
	    check("the other QP's RDMA WRITE", g, LEN, PAT(cn, 3), 0))
		rc = -1;
	pat_fill(g, LEN, PAT(cn, 4));
	if (ok("peer RDMA READ on the other QP afterwards",
	       peer_read(2, g, LEN, good)) ||
	    check("what the peer READ on the other QP", rdbuf, LEN, PAT(cn, 4),
		  PAT(cn, 3)))
		rc = -1;
	if (ibv_dereg_mr(mr))
		rc = failf("ibv_dereg_mr of the unmapped range: %s",
			   strerror(errno));
	if (ibv_dereg_mr(good))
		rc = failf("ibv_dereg_mr: %s", strerror(errno));
	free(g);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"error completions (%s); a QP opened before then WRITEs and READs %u bytes byte-exact",
			seen, LEN);
	return rc;
}

/*
 * The forked child of cases forkinit and forknoinit: on the parent's word
 * it stores a pattern into, checks a pattern in, or probes one of its
 * areas (0: the parent's registered range, 1: memory nothing registered).
 * Every access to an area is guarded: a fault there is an answer
 * (KID_FAULT), not the child's death.
 */
struct kid_cmd {
	char op; /* 's' store, 'c' check, 'p' probe, 'q' quit */
	uint8_t area;
	uint64_t pat;
};
#define KID_OK (-1) /* check: the area holds the pattern */
#define KID_FAULT (-2) /* the access faulted */
#define KID_SILENT (-3) /* no answer within the timeout */
#define KID_MS 20000
/* probe's answer: bits set for what is there */
#define KID_MAPPED 1 /* mincore() over the area succeeded */
#define KID_LOADS 2 /* loads of its first and last byte did not fault */

struct kid {
	pid_t pid;
	int to, from;
};

static sigjmp_buf kid_jb;
static volatile sig_atomic_t kid_armed;

static void kid_segv(int sig)
{
	if (kid_armed)
		siglongjmp(kid_jb, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void kid_loop(uint8_t *const area[2], const size_t alen[2], int in,
		     int out)
{
	struct sigaction sa = { .sa_handler = kid_segv };
	struct kid_cmd c;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	while (read(in, &c, sizeof(c)) == sizeof(c) && c.op != 'q') {
		uint8_t *a = area[c.area & 1];
		size_t len = alen[c.area & 1];
		volatile int64_t res = KID_OK;

		if (c.op == 'p') {
			unsigned char vec[LEN / PG];

			res = 0;
			if (!mincore(a, len < LEN ? len : LEN, vec))
				res |= KID_MAPPED;
			if (!sigsetjmp(kid_jb, 1)) {
				kid_armed = 1;
				(void)*(volatile uint8_t *)a;
				(void)*(volatile uint8_t *)(a + len - 1);
				kid_armed = 0;
				res |= KID_LOADS;
			}
			kid_armed = 0;
		} else if (!sigsetjmp(kid_jb, 1)) {
			kid_armed = 1;
			if (c.op == 's') {
				pat_fill(a, len, c.pat);
			} else {
				pat_fill(expect, len, c.pat);
				for (size_t i = 0; i < len; i++)
					if (a[i] != expect[i]) {
						res = (int64_t)i;
						break;
					}
			}
			kid_armed = 0;
		} else {
			kid_armed = 0;
			res = KID_FAULT;
		}
		if (write(out, (const int64_t *)&res, sizeof(res)) !=
		    sizeof(res))
			break;
	}
	_exit(0);
}

/* Forks the child (areas as kid_loop takes them); -1 on failure. */
static int kid_start(struct kid *k, uint8_t *const area[2],
		     const size_t alen[2])
{
	int to[2], from[2];

	if (pipe(to) || pipe(from))
		return failf("pipe: %s", strerror(errno));
	fflush(stdout);
	k->pid = fork();
	if (k->pid < 0)
		return failf("fork: %s", strerror(errno));
	if (!k->pid) {
		close(to[1]);
		close(from[0]);
		kid_loop(area, alen, to[0], from[1]);
	}
	close(to[0]);
	close(from[1]);
	k->to = to[1];
	k->from = from[0];
	return 0;
}

static int64_t kid_ask(struct kid *k, char op, uint8_t area, uint64_t pat)
{
	struct kid_cmd c = { .op = op, .area = area, .pat = pat };
	int64_t res;

	if (write(k->to, &c, sizeof(c)) != sizeof(c) ||
	    !vc_readable(k->from, KID_MS) ||
	    read(k->from, &res, sizeof(res)) != sizeof(res))
		return KID_SILENT;
	return res;
}

/* Ends the child: 0, or -1 (recorded) when it did not exit cleanly. */
static int kid_end(struct kid *k)
{
	struct kid_cmd c = { .op = 'q' };
	int st = 0, rc = 0;
	pid_t w = 0;

	if (write(k->to, &c, sizeof(c)) != sizeof(c))
		kill(k->pid, SIGKILL);
	close(k->to);
	for (double t0 = vc_now(); vc_now() - t0 < KID_MS / 1e3;) {
		w = waitpid(k->pid, &st, WNOHANG);
		if (w)
			break;
		usleep(1000);
	}
	if (!w) {
		kill(k->pid, SIGKILL);
		waitpid(k->pid, &st, 0);
		rc = failf("the child did not exit within %d ms", KID_MS);
	} else if (w != k->pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		rc = failf("the child did not exit cleanly (status 0x%x)", st);
	}
	close(k->from);
	return rc;
}

static const char *kid_str(int64_t r)
{
	static char s[64];

	switch (r) {
	case KID_OK:
		return "the pattern";
	case KID_FAULT:
		return "a fault";
	case KID_SILENT:
		return "no answer";
	default:
		snprintf(s, sizeof(s), "other bytes from byte %" PRId64, r);
		return s;
	}
}

static const char *probe_str(int64_t r)
{
	if (r < 0)
		return kid_str(r);
	return r == 0	       ? "absent (mincore ENOMEM, loads fault)" :
	       r == KID_MAPPED ? "mapped, yet its loads fault" :
	       r == KID_LOADS  ? "loads succeed, yet mincore says unmapped" :
				 "mapped (mincore succeeds, loads do not fault)";
}

/*
 * Case forkinit, in a process of its own (verbs_mem forkinit-server,
 * started by case_forkinit below) that called ibv_fork_init() before any
 * other verb: registered private memory is MADV_DONTFORK, so a child
 * forked afterwards does not have it, while the parent's registration
 * goes on working.
 */
static int forkinit_body(unsigned cn)
{
	uint8_t *m, *other, *area[2];
	size_t alen[2] = { LEN, LEN };
	struct ibv_mr *mr;
	struct kid k;
	int64_t r;
	int rc = 0;

	m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	other = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || other == MAP_FAILED)
		return failf("mmap: %s", strerror(errno));
	pat_fill(m, LEN, PAT(cn, 1));
	pat_fill(other, LEN, PAT(cn, 5));
	mr = reg(m, LEN);
	if (!mr)
		return -1;
	qp_new(0);
	area[0] = m;
	area[1] = other;
	if (kid_start(&k, area, alen)) {
		ibv_dereg_mr(mr);
		return -1;
	}
	r = kid_ask(&k, 'p', 0, 0);
	if (r != 0)
		rc = failf(
			"the child forked after the registration: the registered range is %s, expected absent (MADV_DONTFORK)",
			probe_str(r));
	/* the parent's registration keeps working */
	if (ok("peer RDMA WRITE into the parent's MR",
	       peer_write(0, m, LEN, mr, PAT(cn, 2))) ||
	    check("the parent's view after the peer's RDMA WRITE", m, LEN,
		  PAT(cn, 2), PAT(cn, 1)))
		rc = -1;
	if (ok("peer RDMA READ of the parent's MR", peer_read(0, m, LEN, mr)) ||
	    check("what the peer READ from the parent's MR", rdbuf, LEN,
		  PAT(cn, 2), PAT(cn, 1)))
		rc = -1;
	/* the child is unaffected */
	r = kid_ask(&k, 'c', 1, PAT(cn, 5));
	if (r != KID_OK)
		rc = failf(
			"the child's own (unregistered) memory holds %s after the peer's WRITE, expected its contents",
			kid_str(r));
	r = kid_ask(&k, 'p', 0, 0);
	if (r != 0) {
		int64_t seen = kid_ask(&k, 'c', 0, PAT(cn, 2));

		rc = failf(
			"after the peer's WRITE the registered range in the child is %s%s",
			probe_str(r),
			seen == KID_OK ?
				", and the child reads the peer's WRITE into the parent's MR there" :
				"");
	}
	if (kid_end(&k))
		rc = -1;
	if (ibv_dereg_mr(mr))
		rc = failf("ibv_dereg_mr: %s", strerror(errno));
	munmap(m, LEN);
	munmap(other, LEN);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"ibv_fork_init, %u bytes private: absent in the child forked after registration; the peer's WRITE into the parent's MR read byte-exact by the parent and by a peer READ; the child's own memory untouched",
			LEN);
	return rc;
}

struct sub_result {
	int32_t rc;
	char why[sizeof(why)];
};

static const char *opt_dev; /* -d, for the forkinit-server */

/*
 * Case forkinit: ibv_fork_init() must come before any other verb, and
 * this process has used the verbs since main(): the case runs in a fresh
 * one, this program again (/proc/self/exe forkinit-server), which talks
 * to the client over the same connection while this one waits, and
 * hands back its verdict through a pipe.
 */
static int case_forkinit(unsigned cn)
{
	struct sub_result res = { 0 };
	char a_oob[16], a_res[16], a_cn[16];
	int p[2], st = 0;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return failf("pipe: %s", strerror(errno));
	snprintf(a_oob, sizeof(a_oob), "%d", oob);
	snprintf(a_res, sizeof(a_res), "%d", p[1]);
	snprintf(a_cn, sizeof(a_cn), "%u", cn);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return failf("fork: %s", strerror(errno));
	if (!pid) {
		fcntl(p[1], F_SETFD, 0);
		fcntl(oob, F_SETFD, 0);
		if (opt_dev)
			execl("/proc/self/exe", "verbs_mem", "forkinit-server",
			      a_oob, a_res, a_cn, "-d", opt_dev, (char *)NULL);
		else
			execl("/proc/self/exe", "verbs_mem", "forkinit-server",
			      a_oob, a_res, a_cn, (char *)NULL);
		res.rc = -1;
		snprintf(res.why, sizeof(res.why), "exec of /proc/self/exe: %s",
			 strerror(errno));
		if (write(p[1], &res, sizeof(res)) != sizeof(res))
			_exit(2);
		_exit(1);
	}
	close(p[1]);
	/* the subprocess's every step has a timeout of its own */
	if (!vc_readable(p[0], 4 * REPLY_MS) ||
	    read(p[0], &res, sizeof(res)) != sizeof(res)) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		close(p[0]);
		/* the connection's state is unknown now */
		vc_die("forkinit: the subprocess exited or ran past %d ms without a verdict (wait status 0x%x; its log above says why)",
		       4 * REPLY_MS, st);
	}
	close(p[0]);
	res.why[sizeof(res.why) - 1] = 0;
	memcpy(why, res.why, sizeof(why));
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		res.rc = failf(
			"the forkinit-server did not exit cleanly (status 0x%x)",
			st);
	return res.rc;
}

/* main() of the forkinit-server: argv after "forkinit-server". */
static int forkinit_server(int argc, char **argv)
{
	struct sub_result res = { 0 };
	int rfd, rc, fi;
	enum ibv_fork_status fs;

	if (argc < 3)
		vc_die("forkinit-server OOBFD RESULTFD CASENO [-d DEV]");
	/* before any other verb */
	fi = ibv_fork_init();
	fs = ibv_is_fork_initialized();
	oob = atoi(argv[0]);
	rfd = atoi(argv[1]);
	why[0] = 0;
	if (argc >= 5 && !strcmp(argv[3], "-d"))
		opt_dev = argv[4];
	vc_open(&dev, opt_dev);
	setup();
	expect = malloc(PEER_BUF);
	rdbuf = malloc(PEER_BUF);
	if (!expect || !rdbuf)
		vc_die("out of memory");
	if (fi) {
		rc = failf("ibv_fork_init: %s", strerror(fi));
	} else if (fs == IBV_FORK_UNNEEDED) {
		snprintf(
			why, sizeof(why),
			"the kernel copies DMA pages at fork (IBV_FORK_UNNEEDED): ibv_fork_init does not hide registered memory from children");
		rc = 1;
	} else if (fs != IBV_FORK_ENABLED) {
		rc = failf(
			"ibv_fork_init returned 0, yet ibv_is_fork_initialized says %d",
			fs);
	} else {
		rc = forkinit_body((unsigned)atoi(argv[2]));
	}
	qps_free();
	res.rc = rc;
	memcpy(res.why, why, sizeof(res.why));
	if (write(rfd, &res, sizeof(res)) != sizeof(res))
		vc_die("forkinit-server: writing the verdict: %s",
		       strerror(errno));
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(dev.ctx);
	return 0;
}

/*
 * Case forknoinit: without ibv_fork_init, a child forked after the
 * registration has its own copy of the registered private memory, as it
 * would without ovrdma: its stores stay its own, the device keeps
 * reaching the parent's pages.
 */
static int case_forknoinit(unsigned cn)
{
	uint8_t *m, *area[2];
	size_t alen[2] = { LEN, LEN };
	enum ibv_fork_status fs = ibv_is_fork_initialized();
	struct ibv_mr *mr;
	struct kid k;
	int64_t r;
	int rc = 0;

	if (fs == IBV_FORK_ENABLED) {
		snprintf(
			why, sizeof(why),
			"fork support is enabled in this process (RDMAV_FORK_SAFE?): registered memory is hidden from children");
		return 1;
	}
	m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (m == MAP_FAILED)
		return failf("mmap: %s", strerror(errno));
	pat_fill(m, LEN, PAT(cn, 1)); /* P */
	mr = reg(m, LEN);
	if (!mr) {
		munmap(m, LEN);
		return -1;
	}
	qp_new(0);
	area[0] = area[1] = m;
	if (kid_start(&k, area, alen)) {
		ibv_dereg_mr(mr);
		return -1;
	}
	/* the child stores Q into its copy */
	r = kid_ask(&k, 's', 0, PAT(cn, 2));
	if (r != KID_OK)
		rc = failf("the child's stores into its copy: %s", kid_str(r));
	if (holds(m, LEN, PAT(cn, 2)))
		rc = failf(
			"the parent reads the child's stores in its own buffer (the pages are shared, not copied)");
	else if (check("the parent's view after the child's stores", m, LEN,
		       PAT(cn, 1), PAT(cn, 1)))
		rc = -1;
	if (ok("peer RDMA READ of the parent's MR", peer_read(0, m, LEN, mr)))
		rc = -1;
	else if (holds(rdbuf, LEN, PAT(cn, 2)))
		rc = failf(
			"the peer READ the child's stores from the parent's MR, not the parent's contents");
	else if (check("what the peer READ from the parent's MR after the child's stores",
		       rdbuf, LEN, PAT(cn, 1), PAT(cn, 2)))
		rc = -1;
	/* the peer writes R into the parent's MR */
	if (ok("peer RDMA WRITE into the parent's MR",
	       peer_write(0, m, LEN, mr, PAT(cn, 3))) ||
	    check("the parent's view after the peer's RDMA WRITE", m, LEN,
		  PAT(cn, 3), PAT(cn, 1)))
		rc = -1;
	r = kid_ask(&k, 'c', 0, PAT(cn, 2));
	if (r != KID_OK) {
		bool sees_r = kid_ask(&k, 'c', 0, PAT(cn, 3)) == KID_OK;

		rc = failf(
			"after the peer's WRITE into the parent's MR the child's copy holds %s, expected the child's own stores%s",
			kid_str(r),
			sees_r ? " (it holds the peer's WRITE)" : "");
	}
	if (kid_end(&k))
		rc = -1;
	if (ibv_dereg_mr(mr))
		rc = failf("ibv_dereg_mr: %s", strerror(errno));
	munmap(m, LEN);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"%u bytes private, child forked after registration: its stores stay in its copy (the peer READs the parent's), the peer's WRITE reaches the parent only",
			LEN);
	return rc;
}

#define HUGE1G (1ul << 30)
#define HUGE1G_WIN (64u << 10)

/*
 * Case huge1g: a 1 GiB private region; the registration's and the
 * deregistration's times are printed (benchmarks judge them).
 */
static int case_huge1g(unsigned cn)
{
	const size_t offs[] = { 0, HUGE1G / 2, HUGE1G - HUGE1G_WIN };
	long avail = meminfo("MemAvailable");
	double t0, t_reg, t_dereg;
	struct ibv_mr *mr;
	uint8_t *m;
	int rc = 0;

	if (avail < (3l << 20)) {
		snprintf(why, sizeof(why), "MemAvailable is %ld MB, below 3 GB",
			 avail >> 10);
		return 1;
	}
	m = mmap(NULL, HUGE1G, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		snprintf(why, sizeof(why), "mmap of 1 GiB: %s",
			 strerror(errno));
		return 1;
	}
	memset(m, 0x5a, HUGE1G); /* the application's data, all of it */
	t0 = vc_now();
	mr = reg(m, HUGE1G);
	t_reg = vc_now() - t0;
	if (!mr) {
		munmap(m, HUGE1G);
		return -1;
	}
	qp_new(0);
	for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		uint8_t *w = m + offs[i];
		char what[128];

		snprintf(what, sizeof(what), "peer RDMA WRITE at %zu MB",
			 offs[i] >> 20);
		if (ok(what,
		       peer_write(0, w, HUGE1G_WIN, mr, PAT(cn, 1 + i)))) {
			rc = -1;
			continue;
		}
		snprintf(what, sizeof(what),
			 "the application's view of the WRITE at %zu MB",
			 offs[i] >> 20);
		if (check(what, w, HUGE1G_WIN, PAT(cn, 1 + i), 0))
			rc = -1;
		/* a page either side is untouched */
		for (int s = -1; s <= 1; s += 2) {
			uint8_t *g = s < 0 ? w - PG : w + HUGE1G_WIN;

			if (g < m || g + PG > m + HUGE1G)
				continue;
			for (unsigned j = 0; j < PG; j++)
				if (g[j] != 0x5a) {
					rc = failf(
						"the page %s the WRITE at %zu MB changed (byte %u: 0x%02x)",
						s < 0 ? "before" : "after",
						offs[i] >> 20, j, g[j]);
					break;
				}
		}
		snprintf(what, sizeof(what), "peer RDMA READ at %zu MB",
			 offs[i] >> 20);
		if (ok(what, peer_read(0, w, HUGE1G_WIN, mr))) {
			rc = -1;
			continue;
		}
		snprintf(what, sizeof(what), "what the peer READ at %zu MB",
			 offs[i] >> 20);
		if (check(what, rdbuf, HUGE1G_WIN, PAT(cn, 1 + i), 0))
			rc = -1;
	}
	t0 = vc_now();
	if (ibv_dereg_mr(mr))
		rc = failf("ibv_dereg_mr: %s", strerror(errno));
	t_dereg = vc_now() - t0;
	munmap(m, HUGE1G);
	printf("%s: huge1g: ibv_reg_mr of 1 GiB %.1f ms, ibv_dereg_mr %.1f ms\n",
	       vc_prog, t_reg * 1e3, t_dereg * 1e3);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"1 GiB private, populated: 64 KB peer WRITEs at 0, 512 MB and the last 64 KB read byte-exact by the application and by peer READs, the pages beside them untouched (ibv_reg_mr %.1f ms, ibv_dereg_mr %.1f ms)",
			t_reg * 1e3, t_dereg * 1e3);
	return rc;
}

/*
 * Case madv: a page of a registered private buffer made read-only after
 * the registration: the peer still READs it byte-exact; what a peer
 * WRITE into it gives is printed, not judged; once the protection is
 * back the MR transfers both ways.
 */
static int case_madv(unsigned cn)
{
	struct rep r = { .status = R_TIMEOUT };
	struct ibv_mr *mr;
	uint8_t *m, *pg;
	int rc = 0;

	m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (m == MAP_FAILED)
		return failf("mmap: %s", strerror(errno));
	pg = m + PG;
	pat_fill(m, LEN, PAT(cn, 1));
	pat_fill(pg, PG, PAT(cn, 2));
	mr = reg(m, LEN);
	if (!mr) {
		munmap(m, LEN);
		return -1;
	}
	qp_new(0); /* the READ, and the transfers after */
	qp_new(1); /* the WRITE into the read-only page */
	if (mprotect(pg, PG, PROT_READ)) {
		rc = failf("mprotect(PROT_READ): %s", strerror(errno));
		goto out;
	}
	if (ok("peer RDMA READ of the read-only page",
	       peer_read(0, pg, PG, mr)) ||
	    check("what the peer READ from the read-only page", rdbuf, PG,
		  PAT(cn, 2), PAT(cn, 1)))
		rc = -1;
	r = peer_write(1, pg, PG, mr, PAT(cn, 3));
	printf("%s: madv: a peer RDMA WRITE into the read-only page: %s (vendor_err %u); the page then holds %s\n",
	       vc_prog, status_str(r.status), r.vendor_err,
	       holds(pg, PG, PAT(cn, 3)) ? "the peer's data" :
	       holds(pg, PG, PAT(cn, 2)) ? "its contents from before" :
					   "other bytes");
	if (mprotect(pg, PG, PROT_READ | PROT_WRITE)) {
		rc = failf("mprotect(PROT_READ | PROT_WRITE): %s",
			   strerror(errno));
		goto out;
	}
	if (ok("peer RDMA WRITE after the protection was restored",
	       peer_write(0, m, LEN, mr, PAT(cn, 4))) ||
	    check("the application's view of that WRITE", m, LEN, PAT(cn, 4),
		  PAT(cn, 1)))
		rc = -1;
	pat_fill(m, LEN, PAT(cn, 5));
	if (ok("peer RDMA READ after the protection was restored",
	       peer_read(0, m, LEN, mr)) ||
	    check("what the peer READ after the protection was restored", rdbuf,
		  LEN, PAT(cn, 5), PAT(cn, 4)))
		rc = -1;
out:
	if (ibv_dereg_mr(mr))
		rc = failf("ibv_dereg_mr: %s", strerror(errno));
	munmap(m, LEN);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"a page made PROT_READ after registration: the peer READs it byte-exact (the WRITE into it: %s); restored, %u bytes WRITTEN and READ byte-exact",
			status_str(r.status), LEN);
	return rc;
}

/* ---- on-demand paging ------------------------------------------------------ */

#define ODP_ACC                                              \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |  \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
	 IBV_ACCESS_ON_DEMAND)
#define ODP_RC_ALL                                                             \
	(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | \
	 IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |                       \
	 IBV_ODP_SUPPORT_SRQ_RECV)

/* 0: the device advertises ODP as ovrdma does; 1 (why set): SKIP */
static int odp_caps_check(void)
{
	struct ibv_device_attr_ex a;
	const struct ibv_odp_caps *o = &a.odp_caps;

	if (ibv_query_device_ex(dev.ctx, NULL, &a))
		return failf("ibv_query_device_ex: %s", strerror(errno));
	if (!(o->general_caps & IBV_ODP_SUPPORT)) {
		snprintf(why, sizeof(why),
			 "the device does not advertise IBV_ODP_SUPPORT");
		return 1;
	}
	if (o->general_caps != (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT) ||
	    o->per_transport_caps.rc_odp_caps != ODP_RC_ALL ||
	    o->per_transport_caps.ud_odp_caps !=
		    (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV) ||
	    o->per_transport_caps.uc_odp_caps || a.xrc_odp_caps)
		return failf(
			"odp_caps: general 0x%" PRIx64
			" rc 0x%x ud 0x%x uc 0x%x xrc 0x%x, expected 0x3 0x3f 0x3 0 0",
			o->general_caps, o->per_transport_caps.rc_odp_caps,
			o->per_transport_caps.ud_odp_caps,
			o->per_transport_caps.uc_odp_caps, a.xrc_odp_caps);
	return 0;
}

/* A peer RDMA WRITE that must fail with REM_ACCESS_ERR (@q is spent). */
static int must_refuse(const char *what, struct rep r)
{
	if (r.status == IBV_WC_REM_ACCESS_ERR)
		return 0;
	return failf("%s: %s, expected REM_ACCESS_ERR", what,
		     status_str(r.status));
}

/* Peer WRITE then READ of [p, p + len) through @mr, byte-exact both
 * ways, with @pat and @pat + 1. */
static int both_ways(const char *where, uint32_t q, uint8_t *p, uint32_t len,
		     const struct ibv_mr *mr, uint64_t pat)
{
	char what[160];
	int rc = 0;

	snprintf(what, sizeof(what), "peer RDMA WRITE into %s", where);
	if (ok(what, peer_write(q, p, len, mr, pat)))
		return -1;
	snprintf(what, sizeof(what), "the application's view of %s", where);
	if (check(what, p, len, pat, pat + 1))
		rc = -1;
	pat_fill(p, len, pat + 1);
	snprintf(what, sizeof(what), "peer RDMA READ of %s", where);
	if (ok(what, peer_read(q, p, len, mr)))
		return -1;
	snprintf(what, sizeof(what), "what the peer READ of %s", where);
	if (check(what, rdbuf, len, pat + 1, pat))
		rc = -1;
	return rc;
}

static int case_odp(unsigned cn)
{
	size_t len = 8 * PG;
	struct ibv_mr *mr;
	uint8_t *m, *hole, *v;
	int rc = odp_caps_check(), fd;

	if (rc)
		return rc;
	/* what the case needs exists before the hole is made, so that
	 * nothing (a QP's rings) is mapped into it meanwhile */
	qp_new(0); /* transfers that must succeed */
	qp_new(1); /* the WRITE into the hole */
	/* pages 4..7 are a hole at registration */
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (m == MAP_FAILED)
		return failf("mmap: %s", strerror(errno));
	hole = m + 4 * PG;
	munmap(hole, 4 * PG);
	mr = ibv_reg_mr(pd, m, len, ODP_ACC & ~IBV_ACCESS_ON_DEMAND);
	if (mr || errno != EFAULT) {
		rc = failf(
			"ibv_reg_mr without ON_DEMAND over a hole: %s, expected EFAULT",
			mr ? "registered" : strerror(errno));
		if (mr)
			ibv_dereg_mr(mr);
	}
	mr = ibv_reg_mr(pd, m, len, ODP_ACC);
	if (!mr) {
		failf("ibv_reg_mr(ON_DEMAND) over a hole: %s", strerror(errno));
		munmap(m, 4 * PG);
		return -1;
	}
	if (both_ways("the mapped pages", 0, m, 4 * PG, mr, PAT(cn, 1)))
		rc = -1;
	if (must_refuse("peer RDMA WRITE into the hole",
			peer_write(1, hole, PG, mr, PAT(cn, 3))))
		rc = -1;
	/* memory mapped into the hole since registration (NOREPLACE:
	 * should anything else have landed there, the case fails, not
	 * that) */
	v = mmap(hole, 4 * PG, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (v != hole) {
		rc = failf("mmap into the hole: %s", strerror(errno));
	} else if (both_ways("memory mapped into the hole after registration",
			     0, hole, 4 * PG, mr, PAT(cn, 4))) {
		rc = -1;
	}
	/* a memfd mapped over the first two pages: the region reaches
	 * the memfd, not the pages it replaced */
	fd = memfd_create("verbs_mem_odp", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 2 * PG)) {
		rc = failf("memfd: %s", strerror(errno));
	} else {
		uint8_t *b = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE,
				  MAP_SHARED, fd, 0);

		v = mmap(m, 2 * PG, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0);
		if (b == MAP_FAILED || v != m) {
			rc = failf("mapping the memfd: %s", strerror(errno));
		} else {
			pat_fill(b, 2 * PG, PAT(cn, 6));
			if (ok("peer RDMA READ of the memfd mapped over the region",
			       peer_read(0, m, 2 * PG, mr)) ||
			    check("what the peer READ where the memfd is mapped now",
				  rdbuf, 2 * PG, PAT(cn, 6), PAT(cn, 2)))
				rc = -1;
			if (ok("peer RDMA WRITE into the memfd mapped over the region",
			       peer_write(0, m, 2 * PG, mr, PAT(cn, 7))) ||
			    check("the memfd (its other mapping) after the peer's WRITE",
				  b, 2 * PG, PAT(cn, 7), PAT(cn, 6)))
				rc = -1;
		}
		if (b != MAP_FAILED)
			munmap(b, 2 * PG);
	}
	if (fd >= 0)
		close(fd);
	if (ibv_dereg_mr(mr))
		rc = failf("ibv_dereg_mr: %s", strerror(errno));
	munmap(m, len);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"odp_caps as advertised; 32 KB with a 16 KB hole registered (EFAULT without ON_DEMAND): byte-exact both ways where mapped, REM_ACCESS_ERR in the hole, then byte-exact into memory mapped into the hole and through a memfd mapped over the region");
	return rc;
}

static uint8_t odp_static[3 * PG]; /* .bss, for odp-implicit */

static int case_odp_implicit(unsigned cn)
{
	const size_t offs[] = { 0, 512u << 10, (1u << 20) - 3 * PG };
	uint8_t stack[3 * PG], *heap, *big, *sh, *gone;
	struct ibv_mr *mr;
	int rc = odp_caps_check(), fd = -1;

	if (rc)
		return rc;
	mr = ibv_reg_mr(pd, NULL, SIZE_MAX, ODP_ACC);
	if (!mr)
		return failf("ibv_reg_mr(NULL, SIZE_MAX, ON_DEMAND): %s",
			     strerror(errno));
	if (mr->addr || mr->length != SIZE_MAX)
		rc = failf("the implicit MR says addr %p length %zu", mr->addr,
			   mr->length);
	heap = malloc(3 * PG);
	big = mmap(NULL, 1u << 20, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	gone = mmap(NULL, PG, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fd = memfd_create("verbs_mem_implicit", MFD_CLOEXEC);
	sh = fd < 0 || ftruncate(fd, 3 * PG) ?
		     MAP_FAILED :
		     mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			  0);
	if (!heap || big == MAP_FAILED || gone == MAP_FAILED ||
	    sh == MAP_FAILED) {
		rc = failf("allocating: %s", strerror(errno));
		goto out;
	}
	qp_new(0);
	qp_new(1);
	munmap(gone, PG); /* last: nothing is mapped there meanwhile */
	{
		struct {
			const char *name;
			uint8_t *base; /* 3 pages: the middle one is used */
		} at[] = {
			{ "a heap buffer", heap },
			{ "a static array", odp_static },
			{ "a stack buffer", stack },
			{ "a MAP_SHARED memfd", sh },
		};

		for (unsigned i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
			uint8_t *b = at[i].base;

			memset(b, 0xa5, 3 * PG);
			if (both_ways(at[i].name, 0, b + PG, PG, mr,
				      PAT(cn, 10 + 2 * i)))
				rc = -1;
			for (unsigned j = 0; j < PG; j++)
				if (b[j] != 0xa5 || b[2 * PG + j] != 0xa5) {
					rc = failf(
						"%s: the bytes beside the transfer changed",
						at[i].name);
					break;
				}
		}
	}
	for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		char where[64];

		snprintf(where, sizeof(where),
			 "1 MB of mmap'd memory at %zu KB", offs[i] >> 10);
		if (both_ways(where, 0, big + offs[i], 3 * PG, mr,
			      PAT(cn, 20 + 2 * i)))
			rc = -1;
	}
	if (must_refuse("peer RDMA WRITE to an unmapped address",
			peer_write(1, gone, 64, mr, PAT(cn, 30))))
		rc = -1;
out:
	if (ibv_dereg_mr(mr))
		rc = failf("ibv_dereg_mr: %s", strerror(errno));
	free(heap);
	if (big != MAP_FAILED)
		munmap(big, 1u << 20);
	if (sh != MAP_FAILED)
		munmap(sh, 3 * PG);
	if (fd >= 0)
		close(fd);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"one implicit rkey: peer WRITE and READ byte-exact into a heap buffer, a static array, a stack buffer, a MAP_SHARED memfd and mmap'd memory at 0, 512 KB and 1 MB - 12 KB, neighbours untouched; an unmapped address REM_ACCESS_ERR");
	return rc;
}

/* Pages of [p, p + n pages) resident now, as a bit mask (n <= 32). */
static uint32_t resident(const uint8_t *p, unsigned n)
{
	unsigned char vec[32];
	uint32_t m = 0;

	if (mincore((void *)p, (size_t)n * PG, vec))
		return UINT32_MAX;
	for (unsigned i = 0; i < n; i++)
		m |= (uint32_t)(vec[i] & 1) << i;
	return m;
}

static int advise1(struct ibv_pd *on, enum ibv_advise_mr_advice adv,
		   uint32_t flags, const void *addr, uint32_t len,
		   uint32_t lkey)
{
	struct ibv_sge sg = { (uintptr_t)addr, len, lkey };

	return ibv_advise_mr(on, adv, flags, &sg, 1);
}

static int case_advise(unsigned cn)
{
	const enum ibv_advise_mr_advice
		PF = IBV_ADVISE_MR_ADVICE_PREFETCH,
		PFW = IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		PFN = IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	const uint32_t FL = IBV_ADVISE_MR_FLAG_FLUSH;
	struct ibv_mr *mr = NULL, *ro = NULL, *plain = NULL, *other = NULL,
		      *imp = NULL;
	struct ibv_pd *pd2 = NULL;
	uint8_t *m, *h = NULL;
	uint32_t res;
	int rc = odp_caps_check(), e;

	if (rc)
		return rc;
	/* 16 fresh pages: none resident yet */
	m = mmap(NULL, 16 * PG, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return failf("mmap: %s", strerror(errno));
	pd2 = ibv_alloc_pd(dev.ctx);
	h = aligned_alloc(PG, 4 * PG);
	mr = ibv_reg_mr(pd, m, 16 * PG, ODP_ACC);
	ro = ibv_reg_mr(pd, m, 16 * PG,
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND);
	plain = ibv_reg_mr(pd, h, 4 * PG, IBV_ACCESS_LOCAL_WRITE);
	other = pd2 ? ibv_reg_mr(pd2, m, 16 * PG, ODP_ACC) : NULL;
	imp = ibv_reg_mr(pd, NULL, SIZE_MAX, ODP_ACC);
	if (!pd2 || !h || !mr || !ro || !plain || !other || !imp) {
		rc = failf("setting up: %s", strerror(errno));
		goto out;
	}
	qp_new(0); /* before page 11 is unmapped: nothing lands there */
	res = resident(m, 16);
	if (res)
		rc = failf("fresh pages resident before any prefetch: 0x%x",
			   res);
	/* PREFETCH_WRITE + FLUSH: exactly pages 2..5 become resident */
	e = advise1(pd, PFW, FL, m + 2 * PG + 100, 4 * PG - 200, mr->lkey);
	res = resident(m, 16);
	if (e || res != 0x3cu)
		rc = failf(
			"PREFETCH_WRITE|FLUSH of pages 2..5: %s, resident pages 0x%x, expected 0x3c",
			strerror(e), res);
	/* the others succeed; NO_FAULT faults nothing in */
	if ((e = advise1(pd, PF, 0, m + 8 * PG, PG, mr->lkey)) ||
	    (e = advise1(pd, PF, FL, m + 8 * PG, PG, ro->lkey)) ||
	    (e = advise1(pd, PFW, 0, m + 9 * PG, PG, mr->lkey)))
		rc = failf("PREFETCH / PREFETCH_WRITE: %s", strerror(e));
	if ((e = advise1(pd, PFN, FL, m + 12 * PG, PG, mr->lkey)) ||
	    (e = advise1(pd, PFN, 0, m + 12 * PG, PG, mr->lkey)))
		rc = failf("PREFETCH_NO_FAULT: %s", strerror(e));
	else if (resident(m + 12 * PG, 1))
		rc = failf("PREFETCH_NO_FAULT made a page resident");
	if ((e = advise1(pd, PFW, FL, h, 4 * PG, imp->lkey)))
		rc = failf("PREFETCH_WRITE on the implicit region: %s",
			   strerror(e));
	/* the errors */
	{
		struct ibv_sge two[2] = {
			{ (uintptr_t)(m + 14 * PG), PG, mr->lkey },
			{ (uintptr_t)m, PG, mr->lkey + 1 },
		};
		struct {
			const char *what;
			int got, want;
		} t[] = {
			{ "an unknown advice",
			  advise1(pd, 99, FL, m, PG, mr->lkey), EOPNOTSUPP },
			{ "unknown flags", advise1(pd, PF, 2, m, PG, mr->lkey),
			  EINVAL },
			{ "no SGE", ibv_advise_mr(pd, PF, FL, two, 0), EINVAL },
			{ "an unknown lkey",
			  advise1(pd, PF, FL, m, PG, mr->lkey + 1), ENOENT },
			{ "a region without ON_DEMAND",
			  advise1(pd, PF, FL, h, PG, plain->lkey), ENOENT },
			{ "a region of another PD",
			  advise1(pd, PF, FL, m, PG, other->lkey), ENOENT },
			{ "PREFETCH_WRITE without LOCAL_WRITE",
			  advise1(pd, PFW, FL, m, PG, ro->lkey), EPERM },
			{ "a range past the region's end",
			  advise1(pd, PF, FL, m + 15 * PG, PG + 1, mr->lkey),
			  EFAULT },
			{ "a range before the region",
			  advise1(pd, PF, FL, m - 1, PG, mr->lkey), EFAULT },
			{ "a list with a bad second SGE",
			  ibv_advise_mr(pd, PFW, FL, two, 2), ENOENT },
		};

		for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++)
			if (t[i].got != t[i].want)
				rc = failf(
					"ibv_advise_mr with %s: %s, expected %s",
					t[i].what, strerror(t[i].got),
					strerror(t[i].want));
		if (resident(m + 14 * PG, 1))
			rc = failf(
				"the list refused for its second SGE prefetched its first");
	}
	/* an unmapped page in the range: EFAULT with FLUSH only */
	munmap(m + 11 * PG, PG);
	if ((e = advise1(pd, PFW, FL, m + 10 * PG, 3 * PG, mr->lkey)) != EFAULT)
		rc = failf(
			"PREFETCH_WRITE|FLUSH over an unmapped page: %s, expected EFAULT",
			strerror(e));
	if ((e = advise1(pd, PFW, 0, m + 10 * PG, 3 * PG, mr->lkey)))
		rc = failf(
			"PREFETCH_WRITE (no FLUSH) over an unmapped page: %s, expected 0 (best effort)",
			strerror(e));
	if ((e = advise1(pd, PF, FL, m + 11 * PG, 8, imp->lkey)) != EFAULT)
		rc = failf(
			"PREFETCH|FLUSH of an unmapped page through the implicit region: %s, expected EFAULT",
			strerror(e));
	/* prefetched pages work as any */
	pat_fill(m + 2 * PG, 4 * PG, PAT(cn, 1));
	if (ok("peer RDMA READ of prefetched pages",
	       peer_read(0, m + 2 * PG, 4 * PG, mr)) ||
	    check("what the peer READ of prefetched pages", rdbuf, 4 * PG,
		  PAT(cn, 1), 0))
		rc = -1;
out:
	if (imp)
		ibv_dereg_mr(imp);
	if (other)
		ibv_dereg_mr(other);
	if (plain)
		ibv_dereg_mr(plain);
	if (ro)
		ibv_dereg_mr(ro);
	if (mr && ibv_dereg_mr(mr))
		rc = failf("ibv_dereg_mr: %s", strerror(errno));
	if (pd2)
		ibv_dealloc_pd(pd2);
	free(h);
	munmap(m, 16 * PG);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"PREFETCH_WRITE|FLUSH made exactly the named pages resident; PREFETCH, NO_FAULT, the implicit region fine; EOPNOTSUPP, EINVAL x2, ENOENT x4, EPERM, EFAULT x4 where ibv_advise_mr(3) says; best effort without FLUSH; the peer READs prefetched pages byte-exact");
	return rc;
}

/* ---- a fenced WR's source brought by the READ before it ------------------- */

#define FENCE_ROUNDS 300u
#define FENCE_MAX 2048u

/* The next @want completions of the CQ, all successful, within the
 * timeout; else why not (round @round, @what). */
static int reap(uint32_t want, uint32_t round, const char *what)
{
	uint32_t got = 0;

	for (double t0 = vc_now();
	     got < want && vc_now() - t0 < OP_TIMEOUT_S;) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			return failf("ibv_poll_cq: %d", n);
		if (n && wc.status != IBV_WC_SUCCESS)
			return failf("round %u (%s): WR %llu: %s", round, what,
				     (unsigned long long)wc.wr_id,
				     vc_st(wc.status));
		got += (uint32_t)n;
	}
	if (got < want)
		return failf(
			"round %u (%s): %u of %u completions within %.0f s",
			round, what, got, want, OP_TIMEOUT_S);
	return 0;
}

/*
 * Private memory (the process route), two QPs of this process connected
 * to each other: each round posts, in one list, an RDMA READ of a fresh
 * pattern in @src into @mid and a fenced RDMA WRITE (or SEND) of @mid
 * into @dst, 8 B to 2 KB. The WRITE is taken from the ring with the
 * READ, before the READ's bytes are in @mid: what it carries must be
 * those bytes (IBV_SEND_FENCE), never what @mid held when it was posted
 * (ovrdmad reads small sends' sources when it takes them, docs/SERVICE.md
 * 4.2).
 */
static int fence_round(struct ibv_qp *a, struct ibv_qp *b, struct ibv_mr *mr,
		       uint8_t *src, uint8_t *mid, uint8_t *dst, uint32_t len,
		       bool send, uint64_t pat, uint32_t round)
{
	struct ibv_sge rs = { (uintptr_t)mid, len, mr->lkey },
		       ws = { (uintptr_t)mid, len, mr->lkey },
		       rv = { (uintptr_t)dst, FENCE_MAX, mr->lkey };
	struct ibv_send_wr w = { .wr_id = 2,
				 .sg_list = &ws,
				 .num_sge = 1,
				 .opcode = send ? IBV_WR_SEND :
						  IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED |
					       IBV_SEND_FENCE },
			   r = { .wr_id = 1,
				 .next = &w,
				 .sg_list = &rs,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_READ,
				 .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_recv_wr rw = { .wr_id = 3, .sg_list = &rv, .num_sge = 1 },
			   *rbad;
	r.wr.rdma.remote_addr = (uintptr_t)src;
	r.wr.rdma.rkey = mr->rkey;
	w.wr.rdma.remote_addr = (uintptr_t)dst;
	w.wr.rdma.rkey = mr->rkey;
	pat_fill(src, len, pat);
	pat_fill(mid, len, pat + 1); /* what a stale read would carry */
	memset(dst, 0, len);
	if (send && ibv_post_recv(b, &rw, &rbad))
		return failf("round %u: ibv_post_recv: %s", round,
			     strerror(errno));
	if (ibv_post_send(a, &r, &bad))
		return failf("round %u: ibv_post_send: %s", round,
			     strerror(errno));
	if (reap(send ? 3 : 2, round, send ? "READ, SEND" : "READ, WRITE"))
		return -1;
	if (!holds(dst, len, pat)) {
		char what[96];

		snprintf(what, sizeof(what),
			 "round %u: the fenced %u B %s after the READ", round,
			 len, send ? "SEND" : "WRITE");
		return check(what, dst, len, pat, pat + 1);
	}
	return 0;
}

/*
 * Each round refills @big (LEN bytes) and posts, in one list, a WRITE of
 * its first page (read when ovrdmad takes it from the ring) and a WRITE
 * of all of it into @dst (read ahead as its packets go): the big
 * one must carry this round's bytes, never what an earlier round's
 * read-ahead of the same addresses held.
 */
static int readahead_round(struct ibv_qp *a, struct ibv_mr *mr, uint8_t *big,
			   uint8_t *dst, uint64_t pat, uint32_t round)
{
	struct ibv_sge s8 = { (uintptr_t)big, PG, mr->lkey },
		       sb = { (uintptr_t)big, LEN, mr->lkey };
	struct ibv_send_wr w2 = { .wr_id = 5,
				  .sg_list = &sb,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED },
			   w1 = { .wr_id = 4,
				  .next = &w2,
				  .sg_list = &s8,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	w1.wr.rdma.remote_addr = (uintptr_t)dst + LEN;
	w1.wr.rdma.rkey = mr->rkey;
	w2.wr.rdma.remote_addr = (uintptr_t)dst;
	w2.wr.rdma.rkey = mr->rkey;
	pat_fill(big, LEN, pat);
	if (ibv_post_send(a, &w1, &bad))
		return failf("round %u: ibv_post_send: %s", round,
			     strerror(errno));
	if (reap(2, round, "WRITEs"))
		return -1;
	if (!holds(dst, LEN, pat))
		return check(
			"a 64 KB WRITE posted with a 4 KB one from its start",
			dst, LEN, pat, pat - 1);
	return 0;
}

/*
 * Two QPs of one context, each WRITEing from one of two buffers @x and
 * @y far apart (its own span of what ovrdmad reads at the drain), which
 * swap each round and are refilled before it; each WR posted alone, 8 B
 * to 8 KB (longer than 4 KB: not read at the drain, so an earlier span
 * over its first page must go): what lands must be this round's bytes,
 * never a span read for the other QP or an earlier round.
 */
static int twoqp_round(struct ibv_qp *a, struct ibv_qp *b, struct ibv_mr *mr,
		       uint8_t *x, uint8_t *y, uint8_t *dst, uint32_t len,
		       uint64_t pat, uint32_t round)
{
	uint8_t *src[2] = { round & 1 ? y : x, round & 1 ? x : y };
	struct ibv_qp *qp[2] = { a, b };

	pat_fill(x, 2 * PG, pat);
	pat_fill(y, 2 * PG, pat + 1);
	for (int i = 0; i < 2; i++) {
		struct ibv_sge sg = { (uintptr_t)src[i], len, mr->lkey };
		struct ibv_send_wr w = { .wr_id = 6 + (uint64_t)i,
					 .sg_list = &sg,
					 .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE,
					 .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		w.wr.rdma.remote_addr = (uintptr_t)dst + (uint64_t)i * 2 * PG;
		w.wr.rdma.rkey = mr->rkey;
		if (ibv_post_send(qp[i], &w, &bad))
			return failf("round %u: ibv_post_send: %s", round,
				     strerror(errno));
	}
	if (reap(2, round, "WRITEs"))
		return -1;
	for (int i = 0; i < 2; i++) {
		uint64_t want = src[i] == x ? pat : pat + 1;

		if (!holds(dst + (size_t)i * 2 * PG, len, want)) {
			char what[96];

			snprintf(what, sizeof(what),
				 "round %u: QP %d's %u B WRITE", round, i, len);
			return check(what, dst + (size_t)i * 2 * PG, len, want,
				     want - 2);
		}
	}
	return 0;
}

static int case_fence(unsigned cn)
{
	struct vc_path path = vc_path_default();
	struct vc_qpinfo ia, ib;
	struct ibv_qp *a, *b;
	struct ibv_mr *mr;
	uint8_t *m;
	int rc = 0, e;

	if (posix_memalign((void **)&m, PG, 3 * PG + 3 * LEN))
		return failf("posix_memalign: out of memory");
	memset(m, 0, 3 * PG + 3 * LEN);
	mr = reg(m, 3 * PG + 3 * LEN);
	if (!mr) {
		free(m);
		return -1;
	}
	a = qp_create();
	b = qp_create();
	vc_qpinfo_of(&dev, a, 0x100 + cn, &ia);
	vc_qpinfo_of(&dev, b, 0x200 + cn, &ib);
	e = vc_connect(&dev, a, ia.psn, &ib, &path, true);
	e = e ? e : vc_connect(&dev, b, ib.psn, &ia, &path, true);
	if (e) {
		rc = failf("connecting two QPs of this process: %s",
			   strerror(e));
		goto out;
	}
	for (uint32_t i = 0; i < FENCE_ROUNDS && !rc; i++) {
		uint32_t len = 8u << (i % 9); /* 8 B .. 2 KB */

		rc = fence_round(a, b, mr, m, m + PG, m + 2 * PG,
				 len > FENCE_MAX ? FENCE_MAX : len, i & 1,
				 PAT(cn, 16 + 2 * i), i);
	}
	for (uint32_t i = 0; i < FENCE_ROUNDS / 10 && !rc; i++)
		rc = readahead_round(a, mr, m + 3 * PG, m + 3 * PG + LEN,
				     PAT(cn, 1024 + i), i);
	/* x and y 32 KB apart, the destinations past them */
	for (uint32_t i = 0; i < FENCE_ROUNDS && !rc; i++)
		rc = twoqp_round(a, b, mr, m + 3 * PG, m + 3 * PG + 8 * PG,
				 m + 3 * PG + 2 * LEN, 8u << (i % 11),
				 PAT(cn, 4096 + 2 * i), i);
out:
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	if (ibv_dereg_mr(mr))
		rc = failf("ibv_dereg_mr: %s", strerror(errno));
	free(m);
	if (!rc)
		snprintf(
			why, sizeof(why),
			"%u rounds of an RDMA READ and a fenced WRITE or SEND of what it read, posted together, 8 B to 2 KB of private memory: each carried the READ's bytes; %u rounds of a 4 KB and a 64 KB WRITE of a refilled buffer posted together: the 64 KB one carried the new bytes; %u rounds of two QPs WRITEing 8 B to 8 KB from two refilled buffers that swap: each carried its buffer's new bytes",
			FENCE_ROUNDS, FENCE_ROUNDS / 10, FENCE_ROUNDS);
	return rc;
}

static int (*const case_fn[NCASES])(unsigned) = {
	case_memfd,	   case_memfd_huge, case_file,	    case_fork,
	case_thread,	   case_dontneed,   case_munmap,    case_forkinit,
	case_forknoinit,   case_huge1g,	    case_madv,	    case_odp,
	case_odp_implicit, case_advise,	    case_file_path, case_fence,
};

static int run_server(int port)
{
	struct hello h;
	struct cmd c = { .type = C_END };
	uint32_t npass = 0, nfail = 0, nskip = 0;

	oob = vc_tcp_server(port);
	vc_recv_must(oob, &h, sizeof(h));
	if (h.magic != MAGIC)
		vc_die("the client speaks something else");
	setup();
	expect = malloc(PEER_BUF);
	rdbuf = malloc(PEER_BUF);
	if (!expect || !rdbuf)
		vc_die("out of memory");
	for (unsigned i = 0; i < NCASES; i++) {
		double t0 = vc_now();
		int rc;

		if (!(h.mask & (1u << i)))
			continue;
		why[0] = 0;
		rc = case_fn[i](i + 1);
		qps_free();
		if (rc > 0)
			nskip++;
		else if (rc)
			nfail++;
		else
			npass++;
		printf("%s: %s: %s: %s (%.2f s)\n", vc_prog, case_names[i],
		       rc > 0 ? "SKIP" :
		       rc     ? "FAIL" :
				"PASS",
		       why[0] ? why : "(no reason recorded)", vc_now() - t0);
	}
	c.qp = nfail;
	vc_send_all(oob, &c, sizeof(c));
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(dev.ctx);
	printf("%s: %s: %u passed, %u failed, %u skipped\n", vc_prog,
	       nfail ? "FAIL" : "PASS", npass, nfail, nskip);
	return nfail ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: verbs_mem server [-p PORT] [-d DEV]\n"
		"       verbs_mem client ADDR [-p PORT] [-d DEV] [CASE...]\n"
		"cases (default all):");
	for (unsigned i = 0; i < NCASES; i++)
		fprintf(stderr, " %s", case_names[i]);
	fputc('\n', stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *devname = NULL, *addr = NULL;
	int port = 18660, c;
	uint32_t mask = 0;
	bool server;

	vc_prog = "verbs_mem";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		usage();
	seed = 0x766d656dull; /* patterns need not vary: both sides know it */
	if (!strcmp(argv[1], "forkinit-server"))
		return forkinit_server(argc - 2, argv + 2);
	server = !strcmp(argv[1], "server");
	if (!server && strcmp(argv[1], "client"))
		usage();
	if (!server) {
		if (argc < 3)
			usage();
		addr = argv[2];
	}
	optind = server ? 2 : 3;
	while ((c = getopt(argc, argv, "p:d:")) != -1) {
		switch (c) {
		case 'p':
			port = atoi(optarg);
			break;
		case 'd':
			devname = optarg;
			break;
		default:
			usage();
		}
	}
	for (; optind < argc; optind++) {
		unsigned i = 0;

		if (server)
			usage();
		while (i < NCASES && strcmp(argv[optind], case_names[i]))
			i++;
		if (i == NCASES)
			usage();
		mask |= 1u << i;
	}
	if (!mask)
		mask = (1u << NCASES) - 1;
	opt_dev = devname;
	vc_open(&dev, devname);
	return server ? run_server(port) : run_client(addr, port, mask);
}
