// SPDX-License-Identifier: MIT
/*
 * rdma_cm's error cases over ovrdma (docs/PROVIDER.md, "rdma_cm";
 * tests/integration/rdmacm.sh runs it on two testbed nodes):
 *
 *   cm_errors server PORT pdata|sidr|connerr|die|slow|reject-late|abandoned|
 *                         hold|hold-kill|cycles N|quiet S
 *   cm_errors client ADDR PORT pdata|sidr|connerr|query|rejected|peerdead|
 *                         owndead|local|expect EVENT SECONDS|cycles N
 *
 * server pdata      takes two requests: the first carries 56 bytes of
 *                   private data (checked), is accepted after an accept
 *                   with 197 bytes failed EINVAL, with 196 bytes; the
 *                   second is rejected after a reject with 149 bytes
 *                   failed EINVAL, with 148 bytes. Between the two, it
 *                   holds the first id after DISCONNECTED and wants
 *                   TIMEWAIT_EXIT for it, 0.4 to 3 s later.
 * client pdata      the other side: a connect with 57 bytes fails EINVAL,
 *                   with 56 it connects and reads the 196 bytes of the
 *                   REP, disconnects (DISCONNECTED, then TIMEWAIT_EXIT
 *                   0.4 to 3 s later); the second connect is REJECTED
 *                   (28) with the 148 bytes of the REJ.
 * server sidr       a UD (RDMA_PS_UDP) listener: its request carries 180
 *                   bytes of private data (checked); an accept with 137
 *                   bytes fails EINVAL, with 136 it answers.
 * client sidr       the other side: a UD connect with 181 bytes fails
 *                   EINVAL, with 180 it resolves: ESTABLISHED with the
 *                   136 bytes of the SIDR_REP, the peer's QPN and Q_Key.
 * client query      no peer needed: the ucma ABI written directly on a
 *                   channel's fd, as librdmacm would with AF_IB: an id
 *                   resolved to ADDR:PORT answers QUERY ADDR (its IPv4
 *                   addresses, GUID, port 1, P_Key), QUERY GID (AF_IB
 *                   addresses: the vIPs' GIDs and the ports' service IDs)
 *                   and QUERY PATH (no path before the route is
 *                   resolved, then one record whose fields are those
 *                   librdmacm gives an id resolved to the same address);
 *                   a response too short: ENOSPC; another option:
 *                   ENOSYS; a handle never issued: ENOENT.
 * client connerr    connects and moves its QP to ERROR before it reads
 *                   the reply: librdmacm cannot take the QP to RTR, so
 *                   the event is CONNECT_ERROR (status < 0); it then
 *                   destroys the id.
 * server connerr    accepts, and wants REJECTED 28 (the peer destroyed
 *                   its id before the RTU, as the kernel's CM says it)
 *                   within 20 s, never ESTABLISHED.
 * server quiet S    listens for S seconds and wants no event at all
 *                   (rdmacm.sh: a REQ refused before the listener came
 *                   up, its copies arriving after, must not reach it).
 * server die        killed (SIGKILL) at its first CONNECT_REQUEST.
 * server slow       accepts its first request 8 s after it came (the
 *                   peer waits, as the kernel's rdma_cm makes it with
 *                   MRA), then wants DISCONNECTED.
 * server reject-late
 *                   prints "request" at its first CONNECT_REQUEST,
 *                   rejects it 2 s later with 148 bytes of private data,
 *                   prints "rejected", destroys the id and then wants no
 *                   event for 5 s (rdmacm.sh drops the REJ on the way:
 *                   the client's next copy of the REQ must get the same
 *                   REJ, not reach the listener as a new request).
 * server abandoned  accepts its first request 5 s late, its client
 *                   having given up (exited) meanwhile: wants the accept
 *                   to fail (the client's REJ came first), or where
 *                   that REJ was lost, REJECTED after it.
 * client rejected   connects and wants REJECTED (28) with the 148 bytes
 *                   of private data, within 20 s.
 * server hold       accepts one connection and waits; hold-kill is killed
 *                   (SIGKILL) a second after ESTABLISHED.
 * client expect     connects and wants EVENT (an RDMA_CM_EVENT_ name less
 *                   the prefix; DISCONNECTED: after ESTABLISHED) within
 *                   SECONDS of the connect.
 * client peerdead   connects, then (its peer's ovrdmad killed meanwhile)
 *                   a SEND two seconds later must complete in error and
 *                   rdma_disconnect must give DISCONNECTED, all within
 *                   30 s.
 * client owndead   connects, prints "established", then (its own node's
 *                   ovrdmad killed meanwhile) waits in epoll on the
 *                   channel's fd: it must become readable (or hung up)
 *                   within 30 s and rdma_get_cm_event then fail EIO, as
 *                   a kernel's ucma would never let it block for ever.
 * client local      no peer needed: an IPv6 destination or source is
 *                   refused EAFNOSUPPORT (ovrdma's vIPs are IPv4); the
 *                   channel's fd, made O_NONBLOCK, gives EAGAIN with no
 *                   event pending and epoll says it is not readable;
 *                   rdma_resolve_addr to ADDR makes epoll report it
 *                   readable, and the event is ADDR_RESOLVED.
 * cycles N          N connections one after another: the client creates
 *                   an id, resolves, creates its QP, connects, sends 64
 *                   bytes (the server checks them), disconnects and
 *                   destroys QP and id; the server accepts each on a QP
 *                   of its own and destroys both at DISCONNECTED (which
 *                   comes without ESTABLISHED where the RTU was lost
 *                   and the client had sent and disconnected before its
 *                   retransmission: counted, as the kernel's CM gives
 *                   it to a program that does not rdma_notify()). Each
 *                   side checks that it has no more file descriptors
 *                   open after the last cycle than after the first, and
 *                   prints the cycles per second; the client prints the
 *                   setup latency (rdma_connect to ESTABLISHED) median
 *                   and p99. With CM_TIMES=FILE, each cycle's times
 *                   (CLOCK_MONOTONIC, s) are written there: the client
 *                   "i connect established", the server "i established"
 *                   (bench/cm-setup.sh joins them).
 *
 * Exit 0 when everything happened as wanted; each step is printed
 * (cycles: only the summary).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <sys/epoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "cm_raw.h"

#define PD_REQ 56
#define PD_REP 196
#define PD_REJ 148
#define PD_SIDR_REQ 180
#define PD_SIDR_REP 136

static struct rdma_event_channel *ch;
static int quiet; /* cycles: events not printed */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void pattern(uint8_t *p, unsigned int n, uint8_t seed)
{
	for (unsigned int k = 0; k < n; k++)
		p[k] = (uint8_t)(seed + k);
}

static int pattern_ok(const void *p, unsigned int n, uint8_t seed)
{
	const uint8_t *b = p;

	for (unsigned int k = 0; k < n; k++)
		if (b[k] != (uint8_t)(seed + k))
			return 0;
	return 1;
}

/* The next event (copied; acknowledged), or exit after @secs. */
static struct rdma_cm_event next_event(double deadline)
{
	struct rdma_cm_event *e, copy;
	static uint8_t pd[256];

	for (;;) {
		struct timeval tv;
		fd_set fds;
		double left = deadline - now_s();

		if (left <= 0)
			FAIL("no event in time");
		FD_ZERO(&fds);
		FD_SET(ch->fd, &fds);
		tv.tv_sec = (time_t)left;
		tv.tv_usec = (suseconds_t)((left - (double)tv.tv_sec) * 1e6);
		if (select(ch->fd + 1, &fds, NULL, NULL, &tv) <= 0)
			continue;
		if (rdma_get_cm_event(ch, &e))
			FAIL("rdma_get_cm_event: %s", strerror(errno));
		copy = *e;
		if (e->param.conn.private_data_len) {
			memcpy(pd, e->param.conn.private_data,
			       e->param.conn.private_data_len);
			copy.param.conn.private_data = pd;
		}
		if (!quiet)
			printf("event %s status %d pd %u\n",
			       rdma_event_str(e->event), e->status,
			       e->param.conn.private_data_len);
		rdma_ack_cm_event(e);
		return copy;
	}
}

static void want(struct rdma_cm_event *e, enum rdma_cm_event_type t)
{
	if (e->event != t)
		FAIL("%s, want %s", rdma_event_str(e->event),
		     rdma_event_str(t));
}

static void make_qp_type(struct rdma_cm_id *id, enum ibv_qp_type t)
{
	struct ibv_qp_init_attr a = {
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = t,
		.sq_sig_all = 1,
	};

	if (rdma_create_qp(id, NULL, &a))
		FAIL("rdma_create_qp: %s", strerror(errno));
}

static void make_qp(struct rdma_cm_id *id)
{
	make_qp_type(id, IBV_QPT_RC);
}

static struct rdma_cm_id *resolve_ps(const char *addr, const char *port,
				     enum rdma_port_space ps)
{
	struct addrinfo *ai, hints = { .ai_family = AF_INET };
	struct rdma_cm_id *id;
	struct rdma_cm_event e;
	double dl = now_s() + 10;

	if (getaddrinfo(addr, port, &hints, &ai))
		FAIL("getaddrinfo %s", addr);
	if (rdma_create_id(ch, &id, NULL, ps))
		FAIL("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, 2000))
		FAIL("rdma_resolve_addr: %s", strerror(errno));
	freeaddrinfo(ai);
	e = next_event(dl);
	want(&e, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (rdma_resolve_route(id, 2000))
		FAIL("rdma_resolve_route: %s", strerror(errno));
	e = next_event(dl);
	want(&e, RDMA_CM_EVENT_ROUTE_RESOLVED);
	make_qp_type(id, ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC);
	return id;
}

static struct rdma_cm_id *resolve(const char *addr, const char *port)
{
	return resolve_ps(addr, port, RDMA_PS_TCP);
}

static int connect_pd(struct rdma_cm_id *id, unsigned int len)
{
	static uint8_t pd[256];
	struct rdma_conn_param p = { .responder_resources = 1,
				     .initiator_depth = 1,
				     .retry_count = 7,
				     .rnr_retry_count = 7 };

	pattern(pd, len, 1);
	p.private_data = pd;
	p.private_data_len = (uint8_t)len;
	return rdma_connect(id, &p);
}

/* After DISCONNECTED, an id still held: TIMEWAIT_EXIT when the
 * timewait ends (the kernel's, for RoCE: about 0.5 s). */
static void timewait_exit(void)
{
	double t0 = now_s();
	struct rdma_cm_event e = next_event(t0 + 3);

	want(&e, RDMA_CM_EVENT_TIMEWAIT_EXIT);
	if (now_s() - t0 < 0.4)
		FAIL("TIMEWAIT_EXIT after %.0f ms", (now_s() - t0) * 1e3);
	printf("TIMEWAIT_EXIT after %.0f ms\n", (now_s() - t0) * 1e3);
}

/* Connects and wants REJECTED 28 with the PD_REJ bytes of pattern 3. */
static int client_rejected(const char *addr, const char *port, double dl)
{
	struct rdma_cm_id *id = resolve(addr, port);
	struct rdma_cm_event e;

	if (connect_pd(id, PD_REQ))
		FAIL("rdma_connect: %s", strerror(errno));
	e = next_event(dl);
	want(&e, RDMA_CM_EVENT_REJECTED);
	if (e.status != 28)
		FAIL("REJECTED status %d, want 28", e.status);
	if (e.param.conn.private_data_len < PD_REJ ||
	    !pattern_ok(e.param.conn.private_data, PD_REJ, 3))
		FAIL("REJ's private data");
	printf("REJ private data: %d bytes verified\n", PD_REJ);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return 0;
}

static int client_pdata(const char *addr, const char *port)
{
	struct rdma_cm_id *id = resolve(addr, port);
	struct rdma_cm_event e;
	double dl = now_s() + 20;

	if (!connect_pd(id, PD_REQ + 1) || errno != EINVAL)
		FAIL("connect with %d bytes: not EINVAL", PD_REQ + 1);
	printf("connect with %d bytes: EINVAL\n", PD_REQ + 1);
	if (connect_pd(id, PD_REQ))
		FAIL("rdma_connect: %s", strerror(errno));
	e = next_event(dl);
	want(&e, RDMA_CM_EVENT_ESTABLISHED);
	if (e.param.conn.private_data_len < PD_REP ||
	    !pattern_ok(e.param.conn.private_data, PD_REP, 2))
		FAIL("REP's private data");
	printf("REP private data: %d bytes verified\n", PD_REP);
	if (rdma_disconnect(id))
		FAIL("rdma_disconnect: %s", strerror(errno));
	e = next_event(dl);
	want(&e, RDMA_CM_EVENT_DISCONNECTED);
	timewait_exit();
	rdma_destroy_qp(id);
	rdma_destroy_id(id);

	return client_rejected(addr, port, dl);
}

/* client query: the ucma ABI written directly (cm_raw.c), its PATH
 * record checked against librdmacm's route of the same address. */
static int client_query(const char *addr, const char *port)
{
	struct rdma_event_channel *rch = rdma_create_event_channel();
	struct ibv_sa_path_rec *ls;
	struct rdma_cm_id *ref;
	uint8_t rec[64];

	if (!rch)
		FAIL("rdma_create_event_channel: %s", strerror(errno));
	cm_raw_query(rch->fd, addr, (uint16_t)atoi(port), rec);
	ref = resolve(addr, port);
	ls = ref->route.path_rec;
	if (!ls || ref->route.num_paths != 1)
		FAIL("librdmacm's route: %d paths", ref->route.num_paths);
	if (memcmp(rec + 8, ls->dgid.raw, 16) ||
	    memcmp(rec + 24, ls->sgid.raw, 16) || rec[47] != ls->hop_limit ||
	    (rec[50] << 8 | rec[51]) != be16toh(ls->pkey) ||
	    (rec[54] & 63) != ls->mtu || rec[54] >> 6 != ls->mtu_selector ||
	    (rec[55] & 63) != ls->rate || rec[55] >> 6 != ls->rate_selector ||
	    (rec[56] & 63) != ls->packet_life_time ||
	    rec[56] >> 6 != ls->packet_life_time_selector)
		FAIL("QUERY PATH: the record is not librdmacm's route");
	printf("QUERY PATH: ok (mtu %u, rate %u, lifetime %u, hop limit "
	       "%u)\n",
	       ls->mtu, ls->rate, ls->packet_life_time, ls->hop_limit);
	rdma_destroy_qp(ref);
	rdma_destroy_id(ref);
	rdma_destroy_event_channel(rch);
	return 0;
}

/* Connects, moves the QP to ERROR before the reply is read: librdmacm
 * cannot take it to RTR, CONNECT_ERROR. */
static int client_connerr(const char *addr, const char *port)
{
	struct rdma_cm_id *id = resolve(addr, port);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct rdma_cm_event e;

	if (connect_pd(id, 0))
		FAIL("rdma_connect: %s", strerror(errno));
	if (ibv_modify_qp(id->qp, &a, IBV_QP_STATE))
		FAIL("ibv_modify_qp ERR: %s", strerror(errno));
	e = next_event(now_s() + 20);
	want(&e, RDMA_CM_EVENT_CONNECT_ERROR);
	if (e.status >= 0)
		FAIL("CONNECT_ERROR status %d, want < 0", e.status);
	printf("CONNECT_ERROR status %d\n", e.status);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return 0;
}

/* A UD id: SIDR_REQ and SIDR_REP's private data at their limits. */
static int client_sidr(const char *addr, const char *port)
{
	struct rdma_cm_id *id = resolve_ps(addr, port, RDMA_PS_UDP);
	struct rdma_cm_event e;

	if (!connect_pd(id, PD_SIDR_REQ + 1) || errno != EINVAL)
		FAIL("UD connect with %d bytes: not EINVAL", PD_SIDR_REQ + 1);
	printf("UD connect with %d bytes: EINVAL\n", PD_SIDR_REQ + 1);
	if (connect_pd(id, PD_SIDR_REQ))
		FAIL("rdma_connect: %s", strerror(errno));
	e = next_event(now_s() + 20);
	want(&e, RDMA_CM_EVENT_ESTABLISHED);
	if (e.param.ud.private_data_len < PD_SIDR_REP ||
	    !pattern_ok(e.param.ud.private_data, PD_SIDR_REP, 5))
		FAIL("SIDR_REP's private data");
	if (!e.param.ud.qp_num || e.param.ud.qkey != RDMA_UDP_QKEY)
		FAIL("SIDR_REP: QPN %u Q_Key %#x", e.param.ud.qp_num,
		     e.param.ud.qkey);
	printf("SIDR_REP private data: %d bytes verified\n", PD_SIDR_REP);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return 0;
}

static int client_expect(const char *addr, const char *port, const char *ev,
			 double secs)
{
	struct rdma_cm_id *id = resolve(addr, port);
	double t0 = now_s();
	struct rdma_cm_event e;
	char name[64];

	if (connect_pd(id, 0))
		FAIL("rdma_connect: %s", strerror(errno));
	snprintf(name, sizeof(name), "RDMA_CM_EVENT_%s", ev);
	e = next_event(t0 + secs);
	if (!strcmp(ev, "DISCONNECTED")) {
		want(&e, RDMA_CM_EVENT_ESTABLISHED);
		e = next_event(t0 + secs);
	}
	if (strcmp(rdma_event_str(e.event), name))
		FAIL("%s, want %s", rdma_event_str(e.event), name);
	printf("%s status %d after %.0f ms\n", name, e.status,
	       (now_s() - t0) * 1e3);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return 0;
}

/* Resolves, connects and waits for ESTABLISHED (10 s); says "established". */
static struct rdma_cm_id *connected(const char *addr, const char *port)
{
	struct rdma_cm_id *id = resolve(addr, port);
	struct rdma_cm_event e;

	if (connect_pd(id, 0))
		FAIL("rdma_connect: %s", strerror(errno));
	e = next_event(now_s() + 10);
	want(&e, RDMA_CM_EVENT_ESTABLISHED);
	printf("established\n");
	fflush(stdout);
	return id;
}

static int client_peerdead(const char *addr, const char *port)
{
	struct rdma_cm_id *id = connected(addr, port);
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	static char buf[64];
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct rdma_cm_event e;
	double t0, dl;
	int n;

	sleep(2); /* the peer's ovrdmad is killed meanwhile */
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), 0);
	if (!mr)
		FAIL("ibv_reg_mr: %s", strerror(errno));
	sge = (struct ibv_sge){ (uintptr_t)buf, sizeof(buf), mr->lkey };
	t0 = now_s();
	dl = t0 + 30;
	if (ibv_post_send(id->qp, &wr, &bad))
		FAIL("ibv_post_send");
	while ((n = ibv_poll_cq(id->send_cq, 1, &wc)) == 0 && now_s() < dl)
		usleep(1000);
	if (n != 1 || wc.status == IBV_WC_SUCCESS)
		FAIL("the SEND did not fail in time");
	printf("SEND: %s after %.0f ms\n", ibv_wc_status_str(wc.status),
	       (now_s() - t0) * 1e3);
	if (rdma_disconnect(id))
		FAIL("rdma_disconnect: %s", strerror(errno));
	e = next_event(dl);
	want(&e, RDMA_CM_EVENT_DISCONNECTED);
	printf("DISCONNECTED after %.0f ms\n", (now_s() - t0) * 1e3);
	return 0;
}

/* Whether @fd is readable (or hung up) within @ms, through epoll. */
static int epoll_ready(int fd, int ms)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(EPOLL_CLOEXEC), n;

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		FAIL("epoll: %s", strerror(errno));
	do
		n = epoll_wait(ep, &ev, 1, ms);
	while (n < 0 && errno == EINTR);
	close(ep);
	if (n < 0)
		FAIL("epoll_wait: %s", strerror(errno));
	return n == 1 && (ev.events & (EPOLLIN | EPOLLHUP | EPOLLERR));
}

static int client_owndead(const char *addr, const char *port)
{
	struct rdma_cm_event *ev;
	double t0;

	connected(addr, port);
	t0 = now_s();
	/* this node's ovrdmad is killed meanwhile */
	if (!epoll_ready(ch->fd, 30000))
		FAIL("the channel not readable 30 s after: a hang");
	if (!rdma_get_cm_event(ch, &ev))
		FAIL("an event (%s), want EIO", rdma_event_str(ev->event));
	if (errno != EIO)
		FAIL("rdma_get_cm_event: %s, want EIO", strerror(errno));
	printf("rdma_get_cm_event: EIO after %.0f ms\n", (now_s() - t0) * 1e3);
	return 0;
}

static int client_local(const char *addr)
{
	struct sockaddr_in6 six = { .sin6_family = AF_INET6,
				    .sin6_port = htons(7470) };
	struct addrinfo *ai, hints = { .ai_family = AF_INET };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct rdma_cm_event e;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		FAIL("rdma_create_id: %s", strerror(errno));
	/* IPv6: refused, clearly, whether destination or source */
	inet_pton(AF_INET6, "fd00::1", &six.sin6_addr);
	errno = 0;
	if (!rdma_resolve_addr(id, NULL, (struct sockaddr *)&six, 2000) ||
	    errno != EAFNOSUPPORT)
		FAIL("rdma_resolve_addr to fd00::1: %s, want EAFNOSUPPORT",
		     strerror(errno));
	errno = 0;
	if (!rdma_bind_addr(id, (struct sockaddr *)&six) ||
	    errno != EAFNOSUPPORT)
		FAIL("rdma_bind_addr to fd00::1: %s, want EAFNOSUPPORT",
		     strerror(errno));
	printf("IPv6: EAFNOSUPPORT (resolve, bind)\n");
	/* no event pending: O_NONBLOCK gives EAGAIN, epoll nothing */
	if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK))
		FAIL("O_NONBLOCK: %s", strerror(errno));
	errno = 0;
	if (!rdma_get_cm_event(ch, &ev) || errno != EAGAIN)
		FAIL("rdma_get_cm_event with nothing pending: %s, want EAGAIN",
		     strerror(errno));
	if (epoll_ready(ch->fd, 200))
		FAIL("epoll: readable with no event pending");
	printf("nothing pending: EAGAIN, epoll not readable\n");
	/* an event: readable, and it is the one */
	if (getaddrinfo(addr, "7470", &hints, &ai))
		FAIL("getaddrinfo %s", addr);
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, 2000))
		FAIL("rdma_resolve_addr: %s", strerror(errno));
	freeaddrinfo(ai);
	if (!epoll_ready(ch->fd, 5000))
		FAIL("epoll: not readable with ADDR_RESOLVED pending");
	if (rdma_get_cm_event(ch, &ev))
		FAIL("rdma_get_cm_event: %s", strerror(errno));
	e = *ev;
	rdma_ack_cm_event(ev);
	want(&e, RDMA_CM_EVENT_ADDR_RESOLVED);
	printf("epoll readable: ADDR_RESOLVED\n");
	rdma_destroy_id(id);
	return 0;
}

static struct rdma_cm_id *listen_ps(const char *port, enum rdma_port_space ps)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons((uint16_t)atoi(port)) };
	struct rdma_cm_id *l;

	if (rdma_create_id(ch, &l, NULL, ps) ||
	    rdma_bind_addr(l, (struct sockaddr *)&sin) || rdma_listen(l, 8))
		FAIL("listen: %s", strerror(errno));
	printf("listening\n");
	fflush(stdout);
	return l;
}

static struct rdma_cm_id *listen_on(const char *port)
{
	return listen_ps(port, RDMA_PS_TCP);
}

/* The passive side of client_sidr. */
static int server_sidr(const char *port)
{
	struct rdma_conn_param p = { 0 };
	static uint8_t pd[256];
	struct rdma_cm_event e;

	listen_ps(port, RDMA_PS_UDP);
	e = next_event(now_s() + 50);
	want(&e, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (e.param.ud.private_data_len < PD_SIDR_REQ ||
	    !pattern_ok(e.param.ud.private_data, PD_SIDR_REQ, 1))
		FAIL("SIDR_REQ's private data");
	printf("SIDR_REQ private data: %d bytes verified\n", PD_SIDR_REQ);
	make_qp_type(e.id, IBV_QPT_UD);
	pattern(pd, PD_SIDR_REP + 1, 5);
	p.private_data = pd;
	p.private_data_len = PD_SIDR_REP + 1;
	if (!rdma_accept(e.id, &p) || errno != EINVAL)
		FAIL("UD accept with %d bytes: not EINVAL", PD_SIDR_REP + 1);
	printf("UD accept with %d bytes: EINVAL\n", PD_SIDR_REP + 1);
	p.private_data_len = PD_SIDR_REP;
	if (rdma_accept(e.id, &p))
		FAIL("rdma_accept: %s", strerror(errno));
	/* the SIDR_REP is sent once; a lost one is answered again when
	 * the request's copy comes: keep the id a while */
	sleep(6);
	rdma_destroy_qp(e.id);
	rdma_destroy_id(e.id);
	return 0;
}

static int server_quiet(const char *port, double secs);

static int server(const char *port, const char *mode)
{
	struct rdma_cm_id *id;
	struct rdma_conn_param p = { .responder_resources = 1,
				     .initiator_depth = 1,
				     .rnr_retry_count = 7 };
	static uint8_t pd[256];
	struct rdma_cm_event e;
	double dl = now_s() + 50;

	listen_on(port);
	e = next_event(dl);
	want(&e, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = e.id;
	if (!strcmp(mode, "die"))
		raise(SIGKILL);
	if (!strcmp(mode, "reject-late")) {
		printf("request\n");
		fflush(stdout);
		sleep(2);
		pattern(pd, PD_REJ, 3);
		if (rdma_reject(id, pd, PD_REJ))
			FAIL("rdma_reject: %s", strerror(errno));
		printf("rejected\n");
		fflush(stdout);
		rdma_destroy_id(id);
		return server_quiet(NULL, 5);
	}
	if (!strcmp(mode, "abandoned")) {
		/* the client gives up while we decide: our accept fails (its
		 * REJ came first, as with the kernel's CM, which gives no
		 * event before the accept) - or, where that REJ was lost,
		 * the REP is refused: REJECTED, never ESTABLISHED */
		make_qp(id);
		sleep(5);
		if (rdma_accept(id, &p)) {
			printf("rdma_accept: %s\n", strerror(errno));
		} else {
			e = next_event(now_s() + 15);
			want(&e, RDMA_CM_EVENT_REJECTED);
			printf("accepted, then REJECTED status %d\n", e.status);
		}
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
		return 0;
	}
	if (!strcmp(mode, "pdata")) {
		if (e.param.conn.private_data_len < PD_REQ ||
		    !pattern_ok(e.param.conn.private_data, PD_REQ, 1))
			FAIL("REQ's private data");
		printf("REQ private data: %d bytes verified\n", PD_REQ);
	}
	make_qp(id);
	if (!strcmp(mode, "slow")) {
		sleep(8);
		printf("accepting 8 s after the request\n");
	}
	p.private_data = pd;
	if (!strcmp(mode, "pdata")) {
		pattern(pd, PD_REP + 1, 2);
		p.private_data_len = PD_REP + 1;
		if (!rdma_accept(id, &p) || errno != EINVAL)
			FAIL("accept with %d bytes: not EINVAL", PD_REP + 1);
		printf("accept with %d bytes: EINVAL\n", PD_REP + 1);
		/* librdmacm moved the QP to ERROR when ACCEPT failed */
		rdma_destroy_qp(id);
		make_qp(id);
		p.private_data_len = PD_REP;
	}
	if (rdma_accept(id, &p))
		FAIL("rdma_accept: %s", strerror(errno));
	if (!strcmp(mode, "connerr")) {
		e = next_event(now_s() + 20);
		want(&e, RDMA_CM_EVENT_REJECTED);
		if (e.status != 28)
			FAIL("REJECTED status %d, want 28", e.status);
		printf("REJECTED status %d\n", e.status);
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
		return 0;
	}
	e = next_event(dl);
	want(&e, RDMA_CM_EVENT_ESTABLISHED);
	if (!strcmp(mode, "hold-kill")) {
		sleep(1);
		raise(SIGKILL);
	}
	if (!strcmp(mode, "hold")) {
		/* until the process is killed, or its ovrdmad is */
		struct rdma_cm_event *ev;

		while (!rdma_get_cm_event(ch, &ev))
			rdma_ack_cm_event(ev);
		printf("rdma_get_cm_event: %s\n", strerror(errno));
		return 0;
	}
	e = next_event(dl);
	want(&e, RDMA_CM_EVENT_DISCONNECTED);
	if (!strcmp(mode, "pdata"))
		timewait_exit();
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	if (strcmp(mode, "pdata"))
		return 0;

	e = next_event(dl);
	want(&e, RDMA_CM_EVENT_CONNECT_REQUEST);
	pattern(pd, PD_REJ + 1, 3);
	if (!rdma_reject(e.id, pd, PD_REJ + 1) || errno != EINVAL)
		FAIL("reject with %d bytes: not EINVAL", PD_REJ + 1);
	printf("reject with %d bytes: EINVAL\n", PD_REJ + 1);
	if (rdma_reject(e.id, pd, PD_REJ))
		FAIL("rdma_reject: %s", strerror(errno));
	rdma_destroy_id(e.id);
	return 0;
}

static int server_quiet(const char *port, double secs)
{
	double dl = now_s() + secs;
	struct rdma_cm_event e;

	if (port) /* else: listening already */
		listen_on(port);
	for (;;) {
		double left = dl - now_s();
		struct timeval tv;
		fd_set fds;

		if (left <= 0)
			break;
		FD_ZERO(&fds);
		FD_SET(ch->fd, &fds);
		tv.tv_sec = (time_t)left;
		tv.tv_usec = (suseconds_t)((left - (double)tv.tv_sec) * 1e6);
		if (select(ch->fd + 1, &fds, NULL, NULL, &tv) > 0) {
			e = next_event(dl + 1);
			FAIL("%s on a listener nobody connected to",
			     rdma_event_str(e.event));
		}
	}
	printf("no event in %.0f s\n", secs);
	return 0;
}

/* ---- cycles ------------------------------------------------------------- */

#define CYC_MSG 64

static int open_fds(void)
{
	char p[64];
	int n = 0;

	for (int fd = 0; fd < 4096; fd++) {
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		if (!access(p, F_OK))
			n++;
	}
	return n;
}

/* More fds open than after the first cycle is a leak; one fewer can be
 * what the first cycle had open for a moment (librdmacm's and the
 * provider's own). */
static void no_fd_leak(int fds1)
{
	if (open_fds() > fds1)
		FAIL("%d fds open after the last cycle, %d after the first",
		     open_fds(), fds1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static FILE *times_file(void)
{
	const char *p = getenv("CM_TIMES");
	FILE *f = p ? fopen(p, "w") : NULL;

	if (p && !f)
		FAIL("CM_TIMES %s: %s", p, strerror(errno));
	return f;
}

/* One 64-byte message on @id's QP: sent and completed, or a receive
 * posted (its region returned, for after the completion). */
static struct ibv_mr *cyc_msg(struct rdma_cm_id *id, int send, uint8_t seed)
{
	static uint8_t buf[CYC_MSG];
	struct ibv_sge sge;
	struct ibv_send_wr swr = { .sg_list = &sge,
				   .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED },
			   *sbad;
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_cq *cq = send ? id->send_cq : id->recv_cq;
	struct ibv_mr *mr =
		ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	double dl = now_s() + 10;
	struct ibv_wc wc;
	int n;

	if (!mr)
		FAIL("ibv_reg_mr: %s", strerror(errno));
	sge = (struct ibv_sge){ (uintptr_t)buf, sizeof(buf), mr->lkey };
	if (send) {
		pattern(buf, sizeof(buf), seed);
		if (ibv_post_send(id->qp, &swr, &sbad))
			FAIL("ibv_post_send");
	} else {
		memset(buf, 0, sizeof(buf));
		if (ibv_post_recv(id->qp, &rwr, &rbad))
			FAIL("ibv_post_recv");
	}
	if (!send)
		return mr; /* completed by the caller */
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && now_s() < dl)
		;
	if (n != 1 || wc.status != IBV_WC_SUCCESS)
		FAIL("SEND: %s",
		     n == 1 ? ibv_wc_status_str(wc.status) : "no completion");
	ibv_dereg_mr(mr);
	return NULL;
}

static int client_cycles(const char *addr, const char *port, int n)
{
	double *lat = calloc((size_t)n, sizeof(double)), t0, t1, start;
	FILE *tf = times_file();
	int fds1 = 0;

	if (!lat)
		FAIL("calloc");
	quiet = 1;
	start = now_s();
	for (int i = 0; i < n; i++) {
		struct rdma_cm_id *id = resolve(addr, port);
		struct rdma_cm_event e;

		t0 = now_s();
		if (connect_pd(id, 0))
			FAIL("cycle %d: rdma_connect: %s", i, strerror(errno));
		e = next_event(t0 + 20);
		t1 = now_s();
		if (e.event != RDMA_CM_EVENT_ESTABLISHED)
			FAIL("cycle %d: %s (status %d), want ESTABLISHED", i,
			     rdma_event_str(e.event), e.status);
		lat[i] = t1 - t0;
		if (tf)
			fprintf(tf, "%d %.9f %.9f\n", i, t0, t1);
		cyc_msg(id, 1, (uint8_t)i);
		if (rdma_disconnect(id))
			FAIL("cycle %d: rdma_disconnect: %s", i,
			     strerror(errno));
		e = next_event(now_s() + 20);
		want(&e, RDMA_CM_EVENT_DISCONNECTED);
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
		if (i == 0)
			fds1 = open_fds();
	}
	t1 = now_s();
	if (tf)
		fclose(tf);
	no_fd_leak(fds1);
	qsort(lat, (size_t)n, sizeof(*lat), cmp_double);
	printf("cycles %d: %.0f per second, setup median %.0f us, "
	       "p99 %.0f us, fds %d\n",
	       n, n / (t1 - start), lat[n / 2] * 1e6,
	       lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] * 1e6, fds1);
	free(lat);
	return 0;
}

static int server_cycles(const char *port, int n)
{
	struct rdma_conn_param p = { .responder_resources = 1,
				     .initiator_depth = 1,
				     .rnr_retry_count = 7 };
	FILE *tf = times_file();
	double start = 0;
	int fds1 = 0, rtu_lost = 0;

	quiet = 1;
	listen_on(port);
	for (int i = 0; i < n; i++) {
		struct rdma_cm_event e = next_event(now_s() + 60);
		struct rdma_cm_id *id;
		struct ibv_mr *mr;
		struct ibv_wc wc;
		double dl;
		int k;

		want(&e, RDMA_CM_EVENT_CONNECT_REQUEST);
		if (!i)
			start = now_s();
		id = e.id;
		make_qp(id);
		mr = cyc_msg(id, 0, 0); /* the receive, before the accept */
		if (rdma_accept(id, &p))
			FAIL("cycle %d: rdma_accept: %s", i, strerror(errno));
		e = next_event(now_s() + 20);
		/* the RTU lost (at loss), the peer may have sent and
		 * disconnected before its retransmission: DISCONNECTED
		 * comes instead, as from the kernel's CM, for a program
		 * that does not rdma_notify() IBV_EVENT_COMM_EST */
		if (e.event == RDMA_CM_EVENT_DISCONNECTED) {
			rtu_lost++;
		} else {
			want(&e, RDMA_CM_EVENT_ESTABLISHED);
			if (tf)
				fprintf(tf, "%d %.9f\n", i, now_s());
		}
		dl = now_s() + 10;
		while ((k = ibv_poll_cq(id->recv_cq, 1, &wc)) == 0 &&
		       now_s() < dl)
			;
		if (k != 1 || wc.status != IBV_WC_SUCCESS ||
		    wc.byte_len != CYC_MSG)
			FAIL("cycle %d: the message did not arrive", i);
		ibv_dereg_mr(mr);
		if (e.event != RDMA_CM_EVENT_DISCONNECTED) {
			e = next_event(now_s() + 20);
			want(&e, RDMA_CM_EVENT_DISCONNECTED);
		}
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
		if (i == 0)
			fds1 = open_fds();
	}
	if (tf)
		fclose(tf);
	no_fd_leak(fds1);
	printf("cycles %d: %.0f per second, fds %d, DISCONNECTED before "
	       "ESTABLISHED (RTU lost) %d\n",
	       n, n / (now_s() - start), fds1, rtu_lost);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	ch = rdma_create_event_channel();
	if (!ch)
		FAIL("rdma_create_event_channel: %s", strerror(errno));
	if (argc == 5 && !strcmp(argv[1], "server") &&
	    !strcmp(argv[3], "cycles") && atoi(argv[4]) > 0)
		return server_cycles(argv[2], atoi(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "server") &&
	    !strcmp(argv[3], "quiet") && atof(argv[4]) > 0)
		return server_quiet(argv[2], atof(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "server") && !strcmp(argv[3], "sidr"))
		return server_sidr(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if (argc >= 5 && !strcmp(argv[1], "client")) {
		if (!strcmp(argv[4], "pdata"))
			return client_pdata(argv[2], argv[3]);
		if (!strcmp(argv[4], "sidr"))
			return client_sidr(argv[2], argv[3]);
		if (!strcmp(argv[4], "connerr"))
			return client_connerr(argv[2], argv[3]);
		if (!strcmp(argv[4], "query"))
			return client_query(argv[2], argv[3]);
		if (!strcmp(argv[4], "rejected"))
			return client_rejected(argv[2], argv[3], now_s() + 20);
		if (!strcmp(argv[4], "peerdead"))
			return client_peerdead(argv[2], argv[3]);
		if (!strcmp(argv[4], "owndead"))
			return client_owndead(argv[2], argv[3]);
		if (!strcmp(argv[4], "local"))
			return client_local(argv[2]);
		if (argc == 6 && !strcmp(argv[4], "cycles") &&
		    atoi(argv[5]) > 0)
			return client_cycles(argv[2], argv[3], atoi(argv[5]));
		if (argc == 7 && !strcmp(argv[4], "expect"))
			return client_expect(argv[2], argv[3], argv[5],
					     atof(argv[6]));
	}
	fprintf(stderr,
		"usage: cm_errors server PORT "
		"pdata|sidr|connerr|die|slow|reject-late|abandoned|hold|"
		"hold-kill|cycles N|quiet S\n"
		"       cm_errors client ADDR PORT pdata|sidr|connerr|query|"
		"rejected|"
		"peerdead|owndead|local|"
		"expect EVENT SECONDS|cycles N\n");
	return 2;
}
