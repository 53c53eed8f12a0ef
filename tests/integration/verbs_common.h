/* SPDX-License-Identifier: MIT */
/*
 * What every small RDMA program carries, for verbs_integrity.c and
 * verbs_abuse.c: plain libibverbs (nothing of ovrdma), the out-of-band
 * exchange over a TCP socket as ibv_rc_pingpong does it, the RoCE
 * connect sequence (INIT, RTR, RTS towards the peer's GID), a seeded
 * random generator and the deterministic byte streams both sides derive
 * from it.
 */
#ifndef VERBS_COMMON_H
#define VERBS_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static const char *vc_prog = "verbs";

static void vc_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
static void vc_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: FAIL: ", vc_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stdout);
	exit(1);
}

static inline double vc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- random numbers ------------------------------------------------------ */

/* splitmix64: a seed and a stream number give a reproducible stream */
static inline uint64_t vc_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct vc_rng {
	uint64_t s;
};

static inline void vc_rng_init(struct vc_rng *r, uint64_t seed, uint64_t stream)
{
	r->s = vc_mix(seed ^ vc_mix(stream + 0x1234567ull));
}

static inline uint64_t vc_next(struct vc_rng *r)
{
	r->s += 0x9e3779b97f4a7c15ull;
	return vc_mix(r->s);
}

/* uniform in [lo, hi] */
static inline uint64_t vc_range(struct vc_rng *r, uint64_t lo, uint64_t hi)
{
	return lo + vc_next(r) % (hi - lo + 1);
}

/* Byte @i of data stream @id: what both sides compute without talking. */
static inline void vc_fill(uint8_t *dst, size_t len, uint64_t seed, uint64_t id)
{
	uint64_t x = vc_mix(seed ^ vc_mix(id));
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		x = vc_mix(x);
		memcpy(dst + i, &x, 8);
	}
	if (i < len) {
		x = vc_mix(x);
		memcpy(dst + i, &x, len - i);
	}
}

/* ---- the out-of-band channel ------------------------------------------ */

static void vc_send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			vc_die("out-of-band send: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

/* 0, or -1 when the peer closed before anything came */
static int vc_recv_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, p + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 && got == 0)
			return -1;
		if (n <= 0)
			vc_die("out-of-band receive: %s",
			       n ? strerror(errno) : "peer closed");
		got += (size_t)n;
	}
	return 0;
}

static void vc_recv_must(int fd, void *buf, size_t len)
{
	if (vc_recv_all(fd, buf, len))
		vc_die("out-of-band receive: the peer closed the connection");
}

/* Is a message waiting (within @ms)? */
static inline bool vc_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

static int vc_tcp_server(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port) };
	int one = 1, l, fd;

	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0)
		vc_die("socket: %s", strerror(errno));
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1))
		vc_die("listen on port %d: %s", port, strerror(errno));
	printf("%s: listening on port %d\n", vc_prog, port);
	fflush(stdout);
	fd = accept(l, NULL, NULL);
	if (fd < 0)
		vc_die("accept: %s", strerror(errno));
	close(l);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int vc_tcp_client(const char *host, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port) };
	int one = 1, fd = -1;

	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		vc_die("not an IPv4 address: %s", host);
	/* the server may not listen yet: try for 10 s */
	for (int i = 0; i < 100; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			vc_die("socket: %s", strerror(errno));
		if (!connect(fd, (struct sockaddr *)&a, sizeof(a)))
			break;
		close(fd);
		fd = -1;
		usleep(100000);
	}
	if (fd < 0)
		vc_die("connect to %s:%d: %s", host, port, strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* ---- device and connection ------------------------------------------- */

struct vc_dev {
	struct ibv_context *ctx;
	struct ibv_device_attr attr;
	struct ibv_port_attr port;
	union ibv_gid gid;
};

static void vc_open(struct vc_dev *d, const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	char gid[INET6_ADDRSTRLEN];

	if (!list || !list[0])
		vc_die("no RDMA device");
	for (int i = 0; list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name)) {
			dev = list[i];
			break;
		}
	if (!dev)
		vc_die("no device %s", name);
	d->ctx = ibv_open_device(dev);
	if (!d->ctx)
		vc_die("ibv_open_device %s: %s", ibv_get_device_name(dev),
		       strerror(errno));
	if (ibv_query_device(d->ctx, &d->attr) ||
	    ibv_query_port(d->ctx, 1, &d->port) ||
	    ibv_query_gid(d->ctx, 1, 0, &d->gid))
		vc_die("query device/port/gid: %s", strerror(errno));
	inet_ntop(AF_INET6, d->gid.raw, gid, sizeof(gid));
	printf("%s: device %s, GID %s, active MTU %d, max_sge %d, max_qp_wr %d\n",
	       vc_prog, ibv_get_device_name(dev), gid,
	       128 << d->port.active_mtu, d->attr.max_sge, d->attr.max_qp_wr);
	ibv_free_device_list(list);
}

/* What a side tells the other about one QP. */
struct vc_qpinfo {
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
};

struct vc_path {
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t rd_atomic;
	int access;
};

static inline struct vc_path vc_path_default(void)
{
	return (struct vc_path){ .timeout = 14,
				 .retry_cnt = 7,
				 .rnr_retry = 7,
				 .min_rnr_timer = 12,
				 .rd_atomic = 16,
				 .access = IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ |
					   IBV_ACCESS_REMOTE_ATOMIC };
}

/* RESET -> INIT -> RTR -> RTS towards @peer; 0 or the failing errno */
static int vc_connect(struct vc_dev *d, struct ibv_qp *qp, uint32_t my_psn,
		      const struct vc_qpinfo *peer, const struct vc_path *p,
		      bool rts)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .pkey_index = 0,
				 .port_num = 1,
				 .qp_access_flags = p->access };
	int rc;

	rc = ibv_modify_qp(qp, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = d->port.active_mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = p->rd_atomic;
	a.min_rnr_timer = p->min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = 0;
	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	/* UC: no responder resources and no RNR (verbs' UC table) */
	rc = ibv_modify_qp(qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				   (qp->qp_type == IBV_QPT_UC ?
					    0 :
					    IBV_QP_MAX_DEST_RD_ATOMIC |
						    IBV_QP_MIN_RNR_TIMER));
	if (rc || !rts)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = my_psn;
	a.timeout = p->timeout;
	a.retry_cnt = p->retry_cnt;
	a.rnr_retry = p->rnr_retry;
	a.max_rd_atomic = p->rd_atomic;
	/* UC: nothing acknowledged, so no timeout, retries, READ depth */
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_SQ_PSN |
				     (qp->qp_type == IBV_QPT_UC ?
					      0 :
					      IBV_QP_TIMEOUT |
						      IBV_QP_RETRY_CNT |
						      IBV_QP_RNR_RETRY |
						      IBV_QP_MAX_QP_RD_ATOMIC));
}

static inline void vc_qpinfo_of(const struct vc_dev *d, const struct ibv_qp *qp,
				uint32_t psn, struct vc_qpinfo *out)
{
	out->qpn = qp->qp_num;
	out->psn = psn;
	memcpy(out->gid, d->gid.raw, 16);
}

static inline enum ibv_qp_state vc_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		vc_die("ibv_query_qp: %s", strerror(errno));
	return a.qp_state;
}

static inline const char *vc_st(enum ibv_wc_status s)
{
	return ibv_wc_status_str(s);
}

#endif
