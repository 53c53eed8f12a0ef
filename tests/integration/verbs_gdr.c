// SPDX-License-Identifier: MIT
/*
 * verbs_gdr: GPU memory through ovrdma, end to end, on the CUDA driver
 * $OVRDMA_LIBCUDA names: the fake (tests/fakecuda) in the integration
 * suite, libcuda.so.1 in the gpu suite (docs/GPU.md). Two processes
 * on two testbed nodes, every buffer "GPU" memory, only ever touched
 * through the driver's cuMemcpy:
 *   server: S1 (cuMemAlloc: exported as an IPC handle), S2 (cuMem with
 *           a POSIX fd handle: exported as an fd), a RECV posted into
 *           the tail of S1;
 *   client: C1 (cuMemAlloc) as the source, C2 (cuMem fd) as the READ
 *           target;
 *   1. RDMA WRITE C1[0, 3 MB) -> S1[0, 3 MB)
 *   2. RDMA READ  S2[0, 4 MB) -> C2
 *   3. SEND       C1[3 MB, 4 MB - 17) -> the RECV in S1[3 MB, 4 MB)
 *   4. small messages (where ovrdmad has GDRCopy, BAR copies: docs/GPU.md
 *      §1.2) between S3 and C3 (cuMemAlloc, 512 KiB each): WRITEs of 1 B
 *      to 30000 B, SENDs of 1 B to 20000 B into receives posted at the
 *      start, READs of 8 B to 3000 B; and a READ of 1000 B of S2 (cuMem
 *      made without gpuDirectRDMACapable: ovrdmad cannot map it, its
 *      copies take the streams);
 *   every byte checked through cuMemcpyDtoH on the side that received;
 *   5. a FETCH_ADD on S2: refused (IBV_WC_REM_OP_ERR).
 * Modes: server, client HOST; hold (registers GPU memory and host
 * memory of both routes, and waits to be killed: the service must
 * release the imports); badhandle (a forged
 * IPC handle and a forged fd sent straight through the control
 * protocol: errors, no crash); dmabuf (ibv_reg_dmabuf_mr's errors and
 * a window of a dma-buf; the client registers C2 through a dma-buf
 * too); otherdev (a GPU whose UUID ovrdmad does not know: ENODEV); nofd
 * (cuMem memory without a POSIX_FD
 * handle type: ibv_reg_mr fails with EOPNOTSUPP); pinned MB (ovrdmad's
 * pinned_mb_per_context is MB, at least 9: GPU registrations count
 * against it with host ones, in 64 KiB GPU pages: ENOMEM beyond).
 * hostsrv, hostcli HOST: pinned host memory (cuMemHostAlloc) registered
 * with ibv_reg_mr on the server, between the GPU's copies and the
 * client's READ and WRITE (pinned_server).
 * probe: exit 0 when the driver sees a device, 77 when not.
 * Exit 0 ok, 1 failure, 77 no driver.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <ovrdma/client.h>
#include <ovrdma/gdr.h>

#include "verbs_common.h"

#define MB (1ull << 20)
/* the exchange's TCP port: 18531, or $VERBS_GDR_PORT (two pairs at once) */
static int port(void)
{
	const char *e = getenv("VERBS_GDR_PORT");

	return e && *e ? atoi(e) : 18531;
}
#define SEND_LEN (MB - 17)

/* Step 4's buffers S3 and C3: WRITE targets and sources at SM_WR, the
 * receives (server) and SEND sources (client) at SM_RECV, RECV_SLOT
 * bytes each, the READ sources (server) at SM_RSRC, the READ targets
 * (client) at SM_RDST, the target of the READ of S2 at SM_S2. */
#define SMALL_LEN (512 * 1024)
#define SM_WR 0
#define SM_RECV (128 * 1024)
#define RECV_SLOT 20480
#define SM_RSRC (320 * 1024)
#define SM_RDST (384 * 1024)
#define SM_S2 (448 * 1024)
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
/* around the BAR limits' defaults, 16384 host to GPU, 2048 GPU to host */
static const uint32_t wr_len[] = { 1,	 17,   64,    1000,  2048, 2049,
				   4096, 9000, 16384, 16385, 30000 };
static const uint32_t send_len[] = { 1,	   100,	 1500,	2048,
				     3000, 8000, 16384, 20000 };
static const uint32_t rd_len[] = { 8, 1500, 2048, 3000 };

typedef int cures;
typedef unsigned long long dptr;
static struct {
	cures (*init)(unsigned int);
	cures (*retain)(void **, int);
	cures (*set)(void *);
	cures (*alloc)(dptr *, size_t);
	cures (*htod)(dptr, const void *, size_t);
	cures (*dtoh)(void *, dptr, size_t);
	cures (*create)(unsigned long long *, size_t, const void *,
			unsigned long long);
	cures (*reserve)(dptr *, size_t, size_t, dptr, unsigned long long);
	cures (*map)(dptr, size_t, size_t, unsigned long long,
		     unsigned long long);
	cures (*access)(dptr, size_t, const void *, size_t);
	cures (*dmabuf)(void *, dptr, size_t, int, unsigned long long);
	cures (*hostalloc)(void **, size_t, unsigned int);
	cures (*freehost)(void *);
} cu;

/* CUmemAllocationProp and CUmemAccessDesc, as the driver lays them out */
struct prop {
	int type, handle_types, loc_type, loc_id;
	void *win32;
	unsigned char flags[8];
};
struct accdesc {
	int loc_type, loc_id, flags;
};

static void cuda_up(void)
{
	const char *path = getenv("OVRDMA_LIBCUDA");
	void *lib = path ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
	void *ctx;

	if (!lib) {
		printf("verbs_gdr: no fake CUDA driver ($OVRDMA_LIBCUDA): %s\n",
		       path ? dlerror() : "unset");
		exit(77);
	}
	*(void **)&cu.init = dlsym(lib, "cuInit");
	*(void **)&cu.retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
	*(void **)&cu.set = dlsym(lib, "cuCtxSetCurrent");
	*(void **)&cu.alloc = dlsym(lib, "cuMemAlloc_v2");
	*(void **)&cu.htod = dlsym(lib, "cuMemcpyHtoD_v2");
	*(void **)&cu.dtoh = dlsym(lib, "cuMemcpyDtoH_v2");
	*(void **)&cu.create = dlsym(lib, "cuMemCreate");
	*(void **)&cu.reserve = dlsym(lib, "cuMemAddressReserve");
	*(void **)&cu.map = dlsym(lib, "cuMemMap");
	*(void **)&cu.access = dlsym(lib, "cuMemSetAccess");
	*(void **)&cu.dmabuf = dlsym(lib, "cuMemGetHandleForAddressRange");
	*(void **)&cu.hostalloc = dlsym(lib, "cuMemHostAlloc");
	*(void **)&cu.freehost = dlsym(lib, "cuMemFreeHost");
	if (!cu.access || !cu.dmabuf || cu.init(0) || cu.retain(&ctx, 0) ||
	    cu.set(ctx))
		vc_die("fake CUDA driver unusable");
}

/* Is there a driver with a device? 0 yes, 77 no (the gpu suite's skip). */
static int probe(void)
{
	const char *path = getenv("OVRDMA_LIBCUDA");
	void *lib = dlopen(path ? path : "libcuda.so.1", RTLD_NOW);
	cures (*count)(int *);
	int n = 0;

	if (!lib) {
		printf("verbs_gdr: no CUDA driver: %s\n", dlerror());
		return 77;
	}
	*(void **)&cu.init = dlsym(lib, "cuInit");
	*(void **)&count = dlsym(lib, "cuDeviceGetCount");
	if (!cu.init || !count || cu.init(0) || count(&n) || n < 1) {
		printf("verbs_gdr: the CUDA driver sees no device\n");
		return 77;
	}
	printf("verbs_gdr: %d CUDA device(s)\n", n);
	return 0;
}

static dptr gpu_alloc(size_t len)
{
	dptr d;

	if (cu.alloc(&d, len))
		vc_die("cuMemAlloc");
	return d;
}

/* A cuMem allocation mapped and accessible (@fd: POSIX_FD handle type). */
static dptr gpu_vmm(size_t len, int fd)
{
	struct prop p = { .type = 1, .handle_types = fd, .loc_type = 1 };
	struct accdesc a = { .loc_type = 1, .flags = 3 };
	unsigned long long h;
	dptr d;

	if (cu.create(&h, len, &p, 0) || cu.reserve(&d, len, 0, 0, 0) ||
	    cu.map(d, len, 0, h, 0) || cu.access(d, len, &a, 1))
		vc_die("cuMem allocation");
	return d;
}

static void gpu_fill(dptr d, size_t len, uint64_t seed)
{
	uint8_t *b = malloc(len);

	if (!b)
		vc_die("malloc");
	vc_fill(b, len, seed, 0);
	if (cu.htod(d, b, len))
		vc_die("cuMemcpyHtoD");
	free(b);
}

/* Bytes of GPU [d, d + len) that differ from pattern @seed at @at. */
static size_t gpu_diff(dptr d, size_t len, uint64_t seed, size_t at)
{
	uint8_t *got = malloc(len), *want = malloc(at + len);
	size_t bad = 0;

	if (!got || !want || cu.dtoh(got, d, len))
		vc_die("cuMemcpyDtoH");
	vc_fill(want, at + len, seed, 0);
	for (size_t i = 0; i < len; i++)
		bad += got[i] != want[at + i];
	free(got);
	free(want);
	return bad;
}

#define ACC_ALL                                             \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static struct ibv_mr *reg(struct ibv_pd *pd, dptr d, size_t len)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, (void *)(uintptr_t)d, len, ACC_ALL);

	if (!mr)
		vc_die("ibv_reg_mr of GPU memory: %s", strerror(errno));
	return mr;
}

/* A dma-buf fd of GPU [d, d + len), as NCCL makes one; -1: the driver
 * has no dma-buf support (CUDA_ERROR_NOT_SUPPORTED; real GPUs only). */
static int gpu_dmabuf(dptr d, size_t len)
{
	int fd = -1;
	cures rc = cu.dmabuf(&fd, d, len, 1, 0);

	if (rc == 801) {
		printf("verbs_gdr: this GPU driver makes no dma-bufs\n");
		return -1;
	}
	if (rc)
		vc_die("cuMemGetHandleForAddressRange: %d", rc);
	return fd;
}

/* [d, d + len) registered as NCCL does with dma-buf support: an fd for
 * the range, iova = the GPU address, offset 0. */
static struct ibv_mr *reg_dmabuf(struct ibv_pd *pd, dptr d, size_t len)
{
	int fd = gpu_dmabuf(d, len);
	struct ibv_mr *mr;

	if (fd < 0)
		return reg(pd, d, len);
	mr = ibv_reg_dmabuf_mr(pd, 0, len, d, fd, ACC_ALL);
	if (!mr)
		vc_die("ibv_reg_dmabuf_mr of GPU memory: %s", strerror(errno));
	close(fd); /* the registration does not keep it */
	return mr;
}

struct hello {
	struct vc_qpinfo qp;
	uint64_t s1, s2, s3;
	uint32_t rk1, rk2, rk3;
};

struct side {
	struct vc_dev d;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static void side_up(struct side *s)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16,
			 .max_recv_wr = 16,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	vc_open(&s->d, NULL);
	s->pd = ibv_alloc_pd(s->d.ctx);
	s->cq = s->pd ? ibv_create_cq(s->d.ctx, 64, NULL, NULL, 0) : NULL;
	ia.send_cq = ia.recv_cq = s->cq;
	s->qp = s->cq ? ibv_create_qp(s->pd, &ia) : NULL;
	if (!s->qp)
		vc_die("pd/cq/qp: %s", strerror(errno));
}

/* RTR and RTS towards @peer, our first PSN @psn, every access allowed */
static void side_connect(struct side *s, uint32_t psn,
			 const struct vc_qpinfo *peer)
{
	if (vc_connect(&s->d, s->qp, psn, peer,
		       &(struct vc_path){ 14, 7, 7, 12, 16, ACC_ALL }, true))
		vc_die("connect");
}

static struct ibv_wc wait_wc(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	double t0 = vc_now();
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		if (vc_now() - t0 > 60)
			vc_die("no completion in 60 s");
	if (n < 0)
		vc_die("ibv_poll_cq");
	return wc;
}

static void post(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_mr *mr,
		 uint64_t laddr, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = laddr, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = op,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
	}
	if (ibv_post_send(qp, &wr, &bad))
		vc_die("ibv_post_send: %s", strerror(errno));
}

static int server(void)
{
	struct side s;
	struct hello h = { 0 }, peer;
	dptr s1 = gpu_alloc(4 * MB), s2 = gpu_vmm(4 * MB, 1);
	dptr s3 = gpu_alloc(SMALL_LEN);
	struct ibv_mr *m1, *m2, *m3;
	int fd;
	size_t bad, off;
	char c;

	side_up(&s);
	gpu_fill(s1, 4 * MB, 0); /* overwritten by the transfers */
	gpu_fill(s2, 4 * MB, 22);
	gpu_fill(s3, SMALL_LEN, 44);
	m1 = reg(s.pd, s1, 4 * MB);
	m2 = reg(s.pd, s2, 4 * MB);
	m3 = reg(s.pd, s3, SMALL_LEN);
	vc_qpinfo_of(&s.d, s.qp, 100, &h.qp);
	h.s1 = s1;
	h.s2 = s2;
	h.s3 = s3;
	h.rk1 = m1->rkey;
	h.rk2 = m2->rkey;
	h.rk3 = m3->rkey;
	fd = vc_tcp_server(port()); /* listens and accepts one */
	vc_recv_must(fd, &peer, sizeof(peer));
	vc_send_all(fd, &h, sizeof(h));
	side_connect(&s, 100, &peer.qp);
	/* the RECV the client's SEND lands in (the QP is in RTS now) */
	{
		struct ibv_sge sge = { .addr = s1 + 3 * MB,
				       .length = MB,
				       .lkey = m1->lkey };
		struct ibv_recv_wr wr = { .wr_id = 7,
					  .sg_list = &sge,
					  .num_sge = 1 },
				   *badwr;

		if (ibv_post_recv(s.qp, &wr, &badwr))
			vc_die("ibv_post_recv");
	}
	/* step 4's receives, after it */
	for (unsigned int j = 0; j < NELEM(send_len); j++) {
		struct ibv_sge sge = { .addr = s3 + SM_RECV + j * RECV_SLOT,
				       .length = RECV_SLOT,
				       .lkey = m3->lkey };
		struct ibv_recv_wr wr = { .wr_id = 100 + j,
					  .sg_list = &sge,
					  .num_sge = 1 },
				   *badwr;

		if (ibv_post_recv(s.qp, &wr, &badwr))
			vc_die("ibv_post_recv");
	}
	vc_recv_must(fd, &c, 1); /* WRITE, READ, SEND and step 4 done */
	{
		struct ibv_wc wc = wait_wc(s.cq);

		if (wc.status != IBV_WC_SUCCESS || wc.byte_len != SEND_LEN ||
		    wc.opcode != IBV_WC_RECV)
			vc_die("RECV: %s, %u bytes", vc_st(wc.status),
			       wc.byte_len);
	}
	/* after the completion: the SEND's bytes are in GPU memory */
	bad = gpu_diff(s1, 3 * MB, 11, 0);
	printf("verbs_gdr: server: WRITE into GPU memory (IPC): %zu of %llu bytes differ\n",
	       bad, 3 * MB);
	{
		size_t b2 = gpu_diff(s1 + 3 * MB, SEND_LEN, 11, 3 * MB);

		printf("verbs_gdr: server: SEND into GPU memory (IPC): %zu of %llu bytes differ\n",
		       b2, SEND_LEN);
		bad += b2;
	}
	/* step 4: the small SENDs' receives, in order, then the bytes */
	for (unsigned int j = 0; j < NELEM(send_len); j++) {
		struct ibv_wc wc = wait_wc(s.cq);

		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 100 + j ||
		    wc.byte_len != send_len[j] || wc.opcode != IBV_WC_RECV)
			vc_die("small RECV %u: %s, wr_id %llu, %u bytes", j,
			       vc_st(wc.status), (unsigned long long)wc.wr_id,
			       wc.byte_len);
	}
	{
		size_t b3 = 0, n = 0;

		off = SM_WR;
		for (unsigned int i = 0; i < NELEM(wr_len); i++) {
			b3 += gpu_diff(s3 + off, wr_len[i], 33, off);
			n += wr_len[i];
			off += wr_len[i] + 7;
		}
		for (unsigned int j = 0; j < NELEM(send_len); j++) {
			off = SM_RECV + j * RECV_SLOT;
			b3 += gpu_diff(s3 + off, send_len[j], 33, off);
			n += send_len[j];
		}
		printf("verbs_gdr: server: %zu small WRITEs and %zu SENDs into GPU memory (IPC): %zu of %zu bytes differ\n",
		       NELEM(wr_len), NELEM(send_len), b3, n);
		bad += b3;
	}
	c = bad ? 'F' : 'K';
	vc_send_all(fd, &c, 1);
	vc_recv_must(fd, &c, 1); /* the atomic was tried */
	return bad ? 1 : 0;
}

static int client(const char *host)
{
	struct side s;
	struct hello h = { 0 }, peer;
	dptr c1 = gpu_alloc(4 * MB), c2 = gpu_vmm(4 * MB, 1);
	dptr c3 = gpu_alloc(SMALL_LEN);
	struct ibv_mr *m1, *m2, *m3;
	struct ibv_wc wc;
	size_t bad, b4 = 0, n4 = 0, off;
	int fd;
	char c;

	side_up(&s);
	gpu_fill(c1, 4 * MB, 11);
	gpu_fill(c2, 4 * MB, 0);
	gpu_fill(c3, SMALL_LEN, 33);
	m1 = reg(s.pd, c1, 4 * MB);
	m2 = reg_dmabuf(s.pd, c2, 4 * MB); /* the READ's target */
	m3 = reg(s.pd, c3, SMALL_LEN);
	vc_qpinfo_of(&s.d, s.qp, 200, &h.qp);
	fd = vc_tcp_client(host, port());
	vc_send_all(fd, &h, sizeof(h));
	vc_recv_must(fd, &peer, sizeof(peer));
	side_connect(&s, 200, &peer.qp);
	sleep(1); /* the server's RTR */
	post(s.qp, IBV_WR_RDMA_WRITE, m1, c1, 3 * MB, peer.s1, peer.rk1);
	if ((wc = wait_wc(s.cq)).status)
		vc_die("WRITE: %s", vc_st(wc.status));
	post(s.qp, IBV_WR_RDMA_READ, m2, c2, 4 * MB, peer.s2, peer.rk2);
	if ((wc = wait_wc(s.cq)).status)
		vc_die("READ: %s", vc_st(wc.status));
	/* after the completion: the READ's bytes are in GPU memory */
	bad = gpu_diff(c2, 4 * MB, 22, 0);
	printf("verbs_gdr: client: READ from GPU (fd) into GPU memory (fd): %zu of %llu bytes differ\n",
	       bad, 4 * MB);
	post(s.qp, IBV_WR_SEND, m1, c1 + 3 * MB, SEND_LEN, 0, 0);
	if ((wc = wait_wc(s.cq)).status)
		vc_die("SEND: %s", vc_st(wc.status));
	/* step 4: small messages, one at a time (each its own round trip:
	 * what a BAR copy shortens) */
	off = SM_WR;
	for (unsigned int i = 0; i < NELEM(wr_len); i++) {
		post(s.qp, IBV_WR_RDMA_WRITE, m3, c3 + off, wr_len[i],
		     peer.s3 + off, peer.rk3);
		if ((wc = wait_wc(s.cq)).status)
			vc_die("small WRITE of %u: %s", wr_len[i],
			       vc_st(wc.status));
		off += wr_len[i] + 7;
	}
	for (unsigned int j = 0; j < NELEM(send_len); j++) {
		post(s.qp, IBV_WR_SEND, m3, c3 + SM_RECV + j * RECV_SLOT,
		     send_len[j], 0, 0);
		if ((wc = wait_wc(s.cq)).status)
			vc_die("small SEND of %u: %s", send_len[j],
			       vc_st(wc.status));
	}
	off = 0;
	for (unsigned int i = 0; i < NELEM(rd_len); i++) {
		post(s.qp, IBV_WR_RDMA_READ, m3, c3 + SM_RDST + off, rd_len[i],
		     peer.s3 + SM_RSRC + off, peer.rk3);
		if ((wc = wait_wc(s.cq)).status)
			vc_die("small READ of %u: %s", rd_len[i],
			       vc_st(wc.status));
		b4 += gpu_diff(c3 + SM_RDST + off, rd_len[i], 44,
			       SM_RSRC + off);
		n4 += rd_len[i];
		off += rd_len[i] + 5;
	}
	post(s.qp, IBV_WR_RDMA_READ, m3, c3 + SM_S2, 1000, peer.s2 + 4096,
	     peer.rk2);
	if ((wc = wait_wc(s.cq)).status)
		vc_die("small READ of S2: %s", vc_st(wc.status));
	b4 += gpu_diff(c3 + SM_S2, 1000, 22, 4096);
	n4 += 1000;
	printf("verbs_gdr: client: %zu small READs from GPU (IPC, fd) into GPU memory (IPC): %zu of %zu bytes differ\n",
	       NELEM(rd_len) + 1, b4, n4);
	bad += b4;
	c = 'D';
	vc_send_all(fd, &c, 1);
	vc_recv_must(fd, &c, 1);
	if (c != 'K')
		bad++;
	/* atomics on GPU memory are refused by the responder */
	post(s.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, m2, c2, 8, peer.s2, peer.rk2);
	wc = wait_wc(s.cq);
	printf("verbs_gdr: client: FETCH_ADD on GPU memory: %s\n",
	       vc_st(wc.status));
	if (wc.status != IBV_WC_REM_OP_ERR)
		bad++;
	vc_send_all(fd, &c, 1);
	printf("verbs_gdr: client: %s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}

#define PIN_LEN MB

/* Bytes of host [p, p + len) that differ from pattern @seed. */
static size_t host_diff(const uint8_t *p, size_t len, uint64_t seed)
{
	uint8_t *want = malloc(len);
	size_t bad = 0;

	if (!want)
		vc_die("malloc");
	vc_fill(want, len, seed, 0);
	for (size_t i = 0; i < len; i++)
		bad += p[i] != want[i];
	free(want);
	return bad;
}

/*
 * Pinned host memory (cuMemHostAlloc), registered with plain
 * ibv_reg_mr, between the GPU and the network. The fake GPU reaches it
 * through its own mapping of the pages (tests/fakecuda), so a
 * registration that moved the application's addresses onto other pages
 * fails here. After the registration: the GPU copies pattern 55 into it
 * (cuMemcpyDtoH), the peer READs it; the peer WRITEs pattern 66 into
 * it, the GPU copies it out (cuMemcpyHtoD) and the device buffer is
 * read back through the driver.
 */
static int pinned_server(void)
{
	struct side s;
	struct hello h = { 0 }, peer;
	dptr d = gpu_alloc(PIN_LEN), d2 = gpu_alloc(PIN_LEN);
	struct ibv_mr *mr;
	uint8_t *p = NULL;
	size_t bad, cpu;
	int fd;
	char c;

	if (!cu.hostalloc || !cu.freehost ||
	    cu.hostalloc((void **)&p, PIN_LEN, 0))
		vc_die("cuMemHostAlloc");
	side_up(&s);
	memset(p, 0, PIN_LEN);
	mr = ibv_reg_mr(s.pd, p, PIN_LEN, ACC_ALL);
	if (!mr)
		vc_die("ibv_reg_mr of pinned host memory: %s", strerror(errno));
	/* the GPU writes the pages after the registration */
	gpu_fill(d, PIN_LEN, 55);
	if (cu.dtoh(p, d, PIN_LEN))
		vc_die("cuMemcpyDtoH into pinned host memory");
	cpu = host_diff(p, PIN_LEN, 55);
	printf("verbs_gdr: hostmem: GPU copy into pinned host memory: %zu of %llu bytes differ as the CPU reads them\n",
	       cpu, PIN_LEN);
	vc_qpinfo_of(&s.d, s.qp, 300, &h.qp);
	h.s1 = (uintptr_t)p;
	h.rk1 = mr->rkey;
	fd = vc_tcp_server(port());
	vc_recv_must(fd, &peer, sizeof(peer));
	vc_send_all(fd, &h, sizeof(h));
	side_connect(&s, 300, &peer.qp);
	vc_recv_must(fd, &c, 1); /* the peer's READ and WRITE are done */
	if (cu.htod(d2, p, PIN_LEN))
		vc_die("cuMemcpyHtoD from pinned host memory");
	bad = gpu_diff(d2, PIN_LEN, 66, 0);
	printf("verbs_gdr: hostmem: the peer's WRITE as the GPU copies it out: %zu of %llu bytes differ\n",
	       bad, PIN_LEN);
	c = bad || cpu ? 'F' : 'K';
	vc_send_all(fd, &c, 1);
	ibv_dereg_mr(mr);
	cu.freehost(p);
	return c == 'K' ? 0 : 1;
}

static int pinned_client(const char *host)
{
	struct side s;
	struct hello h = { 0 }, peer;
	uint8_t *buf = aligned_alloc(4096, PIN_LEN);
	struct ibv_mr *mr;
	struct ibv_wc wc;
	size_t bad;
	int fd;
	char c;

	if (!buf)
		vc_die("malloc");
	memset(buf, 0, PIN_LEN);
	side_up(&s);
	mr = ibv_reg_mr(s.pd, buf, PIN_LEN, ACC_ALL);
	if (!mr)
		vc_die("ibv_reg_mr: %s", strerror(errno));
	vc_qpinfo_of(&s.d, s.qp, 400, &h.qp);
	fd = vc_tcp_client(host, port());
	vc_send_all(fd, &h, sizeof(h));
	vc_recv_must(fd, &peer, sizeof(peer));
	side_connect(&s, 400, &peer.qp);
	sleep(1); /* the server's RTR */
	post(s.qp, IBV_WR_RDMA_READ, mr, (uintptr_t)buf, PIN_LEN, peer.s1,
	     peer.rk1);
	if ((wc = wait_wc(s.cq)).status)
		vc_die("READ: %s", vc_st(wc.status));
	bad = host_diff(buf, PIN_LEN, 55);
	printf("verbs_gdr: hostmem: READ of what the GPU copied into pinned host memory: %zu of %llu bytes differ\n",
	       bad, PIN_LEN);
	vc_fill(buf, PIN_LEN, 66, 0);
	post(s.qp, IBV_WR_RDMA_WRITE, mr, (uintptr_t)buf, PIN_LEN, peer.s1,
	     peer.rk1);
	if ((wc = wait_wc(s.cq)).status)
		vc_die("WRITE: %s", vc_st(wc.status));
	c = 'D';
	vc_send_all(fd, &c, 1);
	vc_recv_must(fd, &c, 1);
	printf("verbs_gdr: hostmem: %s\n", bad || c != 'K' ? "FAILED" : "ok");
	return bad || c != 'K' ? 1 : 0;
}

/* Registers GPU memory both ways, and host memory of both routes for
 * ovrdmactl show mrs (private: process; shared: object), and waits to
 * be killed. */
static int hold(void)
{
	struct side s;
	void *priv = aligned_alloc(4096, 65536);
	void *shm = mmap(NULL, 65536, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (!priv || shm == MAP_FAILED)
		vc_die("host memory");
	side_up(&s);
	reg(s.pd, gpu_alloc(2 * MB), 2 * MB);
	reg(s.pd, gpu_vmm(2 * MB, 1), 2 * MB);
	if (!ibv_reg_mr(s.pd, priv, 65536, ACC_ALL) ||
	    !ibv_reg_mr(s.pd, shm, 65536, IBV_ACCESS_LOCAL_WRITE))
		vc_die("ibv_reg_mr of host memory: %s", strerror(errno));
	printf("verbs_gdr: hold: registered\n");
	fflush(stdout);
	pause();
	return 0;
}

/* Forged handles straight through the control protocol. */
static int badhandle(void)
{
	struct ovr_cl *cl = ovr_cl_connect(NULL, "verbs_gdr");
	struct ovr_gdr_export ex = { .base = 1 << 30,
				     .size = 2 * MB,
				     .kind = OVR_GDR_KIND_IPC,
				     .fd = -1 };
	struct ovr_ctl_dev dev;
	uint32_t pd;
	int fails = 0;

	if (!cl || ovr_cl_open(cl, "ovrdma0", &dev) || ovr_cl_alloc_pd(cl, &pd))
		vc_die("client library: %s", strerror(errno));
	memcpy(ex.ipc, "FAKECUDA", 8); /* the fake's magic, nonsense after */
	memset(ex.ipc + 8, 0x77, sizeof(ex.ipc) - 8);
	if (ovr_cl_reg_mr_gpu(cl, pd, 1 << 30, MB, 1, &ex, 0) ||
	    errno != EINVAL) {
		printf("verbs_gdr: forged IPC handle: not EINVAL (%s)\n",
		       strerror(errno));
		fails++;
	} else {
		printf("verbs_gdr: forged IPC handle: EINVAL\n");
	}
	ex.kind = OVR_GDR_KIND_FD;
	ex.fd = open("/dev/null", O_RDONLY);
	if (ovr_cl_reg_mr_gpu(cl, pd, 1 << 30, MB, 1, &ex, 0) ||
	    errno != EINVAL) {
		printf("verbs_gdr: /dev/null as an allocation: not EINVAL (%s)\n",
		       strerror(errno));
		fails++;
	} else {
		printf("verbs_gdr: /dev/null as an allocation: EINVAL\n");
	}
	ex.kind = 9;
	if (ovr_cl_reg_mr_gpu(cl, pd, 1 << 30, MB, 1, &ex, 0) ||
	    errno != EINVAL)
		fails++;
	ovr_cl_close(cl);
	return fails ? 1 : 0;
}

/* ibv_reg_dmabuf_mr's answers, each as a client would meet it. */
static int dmabuf(void)
{
	struct side s;
	dptr d = gpu_alloc(4 * MB);
	int fd = gpu_dmabuf(d, 4 * MB), gone, fails = 0;
	static char host[8192] __attribute__((aligned(4096)));
	struct ibv_mr *mr;
	struct {
		const char *what;
		uint64_t off, len, iova;
		int fd, err;
	} t[] = {
		{ "NCCL's probe (fd -1)", 0, 0, 0, -1, EBADF },
		{ "a closed fd", 0, MB, d, 0, EBADF },
		{ "host memory at iova", 0, 4096, (uintptr_t)host, fd,
		  EOPNOTSUPP },
		{ "offset + length past the dma-buf", MB, 4 * MB, d, fd,
		  EINVAL },
		{ "iova range past the allocation", 0, 2 * MB, d + 3 * MB, fd,
		  EINVAL },
		{ "remote write without local write", 0, MB, d, fd, EINVAL },
	};

	if (fd < 0)
		return 0; /* nothing to register through */
	side_up(&s);
	gone = dup(fd);
	close(gone);
	t[1].fd = gone;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int acc = i == 5 ? IBV_ACCESS_REMOTE_WRITE : ACC_ALL;

		errno = 0;
		mr = ibv_reg_dmabuf_mr(s.pd, t[i].off, t[i].len, t[i].iova,
				       t[i].fd, acc);
		printf("verbs_gdr: dmabuf: %s: %s\n", t[i].what,
		       mr ? "registered" : strerror(errno));
		if (mr || errno != t[i].err)
			fails++;
		if (mr)
			ibv_dereg_mr(mr);
	}
	/* a window of the dma-buf, as UCX registers one: offset = where
	 * iova lies in it */
	mr = ibv_reg_dmabuf_mr(s.pd, MB, 2 * MB, d + MB, fd, ACC_ALL);
	printf("verbs_gdr: dmabuf: [1 MB, 3 MB) of it: %s\n",
	       mr ? "registered" : strerror(errno));
	if (!mr || mr->length != 2 * MB || ibv_dereg_mr(mr))
		fails++;
	close(fd);
	return fails ? 1 : 0;
}

/* GPU memory of a device ovrdmad does not see (another UUID, as when
 * CUDA_VISIBLE_DEVICES differs): ENODEV, not another GPU's memory. */
static int otherdev(void)
{
	struct side s;
	dptr d = gpu_alloc(2 * MB);
	struct ibv_mr *mr;

	side_up(&s);
	mr = ibv_reg_mr(s.pd, (void *)(uintptr_t)d, MB, IBV_ACCESS_LOCAL_WRITE);
	printf("verbs_gdr: GPU unknown to ovrdmad: %s\n",
	       mr ? "registered?" : strerror(errno));
	return !mr && errno == ENODEV ? 0 : 1;
}

/* cuMem memory not exportable as an fd: the provider says no. */
static int nofd(void)
{
	struct side s;
	dptr d = gpu_vmm(2 * MB, 0);
	struct ibv_mr *mr;

	side_up(&s);
	mr = ibv_reg_mr(s.pd, (void *)(uintptr_t)d, MB, IBV_ACCESS_LOCAL_WRITE);
	printf("verbs_gdr: cuMem without POSIX_FD: %s\n",
	       mr ? "registered?" : strerror(errno));
	return !mr && errno == EOPNOTSUPP ? 0 : 1;
}

/* Is @mr NULL with errno ENOMEM (the pinned limit)? Says so either way. */
static int want_enomem(const char *what, struct ibv_mr *mr)
{
	printf("verbs_gdr: pinned: %s: %s\n", what,
	       mr ? "registered" : strerror(errno));
	return !mr && errno == ENOMEM ? 0 : 1;
}

static int want_mr(const char *what, struct ibv_mr *mr)
{
	printf("verbs_gdr: pinned: %s: %s\n", what,
	       mr ? "registered" : strerror(errno));
	return mr ? 0 : 1;
}

/*
 * pinned_mb_per_context = @limit_mb: 4 MB + 4 MB of GPU memory fit, a
 * third 4 MB does not (ENOMEM), 64 KiB at an offset of 4 KiB (two GPU
 * pages, 128 KiB) does, 4 MB of host memory then does not; with one
 * GPU registration gone the host one fits, and the GPU 4 MB still not.
 */
static int pinned(unsigned int limit_mb)
{
	const size_t len = 4 * MB;
	dptr a = gpu_alloc(len), b = gpu_vmm(len, 1), c = gpu_alloc(len);
	void *host = aligned_alloc(4096, len);
	struct ibv_mr *ma, *mb, *mc, *mh;
	struct side s;
	int bad = 0;

	if (!host || limit_mb < 9 || limit_mb >= 12)
		vc_die("pinned: needs 9 <= MB < 12 and 4 MB of memory");
	memset(host, 0, len);
	side_up(&s);
	ma = ibv_reg_mr(s.pd, (void *)(uintptr_t)a, len, ACC_ALL);
	bad += want_mr("GPU 4 MB (cuMemAlloc)", ma);
	mb = ibv_reg_mr(s.pd, (void *)(uintptr_t)b, len, ACC_ALL);
	bad += want_mr("GPU 4 MB more (cuMem)", mb);
	bad += want_enomem("GPU 4 MB beyond the limit",
			   ibv_reg_mr(s.pd, (void *)(uintptr_t)c, len,
				      ACC_ALL));
	mc = ibv_reg_mr(s.pd, (void *)(uintptr_t)(c + 4096), 64 * 1024,
			ACC_ALL);
	bad += want_mr("GPU 64 KiB at 4 KiB (two GPU pages)", mc);
	bad += want_enomem("host 4 MB beyond the limit",
			   ibv_reg_mr(s.pd, host, len, ACC_ALL));
	if (ma && ibv_dereg_mr(ma))
		bad++;
	mh = ibv_reg_mr(s.pd, host, len, ACC_ALL);
	bad += want_mr("host 4 MB once a GPU registration is gone", mh);
	bad += want_enomem("GPU 4 MB still beyond the limit",
			   ibv_reg_mr(s.pd, (void *)(uintptr_t)c, len,
				      ACC_ALL));
	printf("verbs_gdr: pinned: %s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	vc_prog = "verbs_gdr";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		vc_die("usage: verbs_gdr server|client HOST|hold|badhandle|dmabuf|otherdev|nofd|pinned MB|hostsrv|hostcli HOST|probe");
	if (!strcmp(argv[1], "badhandle"))
		return badhandle();
	if (!strcmp(argv[1], "probe"))
		return probe();
	cuda_up();
	if (!strcmp(argv[1], "server"))
		return server();
	if (!strcmp(argv[1], "client") && argc > 2)
		return client(argv[2]);
	if (!strcmp(argv[1], "hold"))
		return hold();
	if (!strcmp(argv[1], "dmabuf"))
		return dmabuf();
	if (!strcmp(argv[1], "otherdev"))
		return otherdev();
	if (!strcmp(argv[1], "nofd"))
		return nofd();
	if (!strcmp(argv[1], "pinned") && argc > 2)
		return pinned((unsigned int)strtoul(argv[2], NULL, 10));
	if (!strcmp(argv[1], "hostsrv"))
		return pinned_server();
	if (!strcmp(argv[1], "hostcli") && argc > 2)
		return pinned_client(argv[2]);
	vc_die("unknown mode %s", argv[1]);
	return 1;
}
