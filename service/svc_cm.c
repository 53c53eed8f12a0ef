// SPDX-License-Identifier: MIT
/*
 * The connection manager (docs/PROVIDER.md, "rdma_cm"; wire format in
 * docs/WIRE.md, "Connection manager messages").
 *
 * librdmacm's event channel is a control connection (CM_OPEN) of the
 * interposer's; each ucma command it writes becomes one CM request here
 * and events go back on the channel's socket pair. The exchange between
 * nodes is IB CM's, reduced to what RC and UD over IPv4 vIPs need:
 *
 *   active                                passive
 *   CONNECT ----------- REQ ------------> listener: new id, CONNECT_REQUEST
 *           <---------- MRA -------------  (the application decides)
 *   CONNECT_RESPONSE <-- REP ------------ ACCEPT
 *   ACCEPT (librdmacm)- RTU ------------> ESTABLISHED
 *   DISCONNECT -------- DREQ -----------> DISCONNECTED
 *   DISCONNECTED <----- DREP -----------
 *   (an id still held CM_TW_EXIT_NS later: TIMEWAIT_EXIT, both sides)
 *   (UD) CONNECT ------ SIDR_REQ -------> CONNECT_REQUEST
 *   ESTABLISHED <------ SIDR_REP -------- ACCEPT
 *   REJECT / no listener: REJ ----------> REJECTED (status: the reason)
 *
 * Messages are datagrams between the nodes' QPN 1 in the tenant, from
 * the id's vIP to the peer's: the overlay's tables and security groups
 * judge them exactly as data. The sender of REQ, REP, DREQ and SIDR_REQ
 * retransmits (CM_RTO_NS, doubling, CM_TRIES); a REQ acknowledged by MRA
 * is resent every CM_MRA_RESEND_NS until CM_MRA_NS. Duplicates are
 * answered from the state they find; a refusal (REJ, SIDR_REP 1) is
 * sent once and kept, the id answering copies of the request with it
 * (lingering CM_REFUSED_NS after its owner destroyed it). An id whose owner destroyed it (or whose
 * channel closed) while connected lingers without an owner for
 * CM_TIMEWAIT_NS, sending DREQ and answering duplicates.
 *
 * Events go to the channel's socket, whose send buffer grows with the
 * ids the channel holds (so the application's fd is readable exactly
 * while an event is pending); what it still cannot take waits in the
 * channel's queue, in order, and goes out as the application reads
 * (EPOLLOUT). No event is dropped: an id has
 * at most SVC_CM_EVQ_PER_ID events undelivered at once (the queued
 * events of an id are dropped when it is destroyed, and with a
 * listener the ids of its CONNECT_REQUESTs still queued, as the
 * kernel's ucma does), so the queue is bounded by the ids the channel
 * holds.
 *
 * Never two threads at once: the dataplane (messages received, timers)
 * and the control thread (requests) with the dataplane parked
 * (svc_loop.c); ids in one list, O(N) lookups.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "svc.h"

#define CM_RTO_NS (50ull * 1000 * 1000) /* first retransmission: 50 ms */
#define CM_RTO_MAX_NS (800ull * 1000 * 1000)
#define CM_TRIES 10 /* sends of one message: about 5 s in all */
#define CM_TIMEWAIT_NS (2000ull * 1000 * 1000)
/* an id still held after DISCONNECTED gets TIMEWAIT_EXIT this long
 * after it: the kernel's IB CM timewait for a RoCE id (packet lifetime
 * 16 plus one, 4.096 us x 2^17, which its cm_convert_to_ms makes
 * 2^(17 - 8) ms) */
#define CM_TW_EXIT_NS (512ull * 1000 * 1000)
/* a refused REQ's retransmissions may follow it for CM_TRIES sends,
 * about 4.75 s (50 ms doubling to 800 ms): remembered a while longer */
#define CM_REFUSED_NS (6000ull * 1000 * 1000)
/* a REQ acknowledged by MRA waits this long for REP or REJ: the kernel's
 * rdma_cm sends MRA at every RC CONNECT_REQUEST it gives an application,
 * with a service timeout of 4.096 us x 2^24 (about 68 s). The REQ is
 * still resent, every CM_MRA_RESEND_NS, so that a REJ (or REP) lost on
 * the way is answered again by the passive id. */
#define CM_MRA_NS (60000ull * 1000 * 1000)
#define CM_MRA_RESEND_NS (1000ull * 1000 * 1000)
#define CM_MAX_IDS 65535u /* librdmacm's index map holds 0..65535 */
/* Events of one id undelivered at once: ADDR_RESOLVED, ROUTE_RESOLVED,
 * CONNECT_RESPONSE (or REJECTED / UNREACHABLE), DISCONNECTED,
 * TIMEWAIT_EXIT; a passive id: CONNECT_REQUEST, ESTABLISHED,
 * DISCONNECTED, TIMEWAIT_EXIT. More, for programs that resolve again
 * after an error. */
#define SVC_CM_EVQ_PER_ID 10u
/* What one event costs a Unix socket's send buffer: the 296-byte
 * message in an skb (measured: about 200 fit the default 212992 bytes
 * of net.core.wmem_default, so about 1 KiB); 2 KiB to be safe. */
#define CM_EV_TRUESIZE 2048u
#define CM_EPHEMERAL_LO 40000
#define CM_EPHEMERAL_HI 60999

/* Private data the application may give (IB CM's sizes less the 36
 * bytes rdma_cm's own header takes in REQ and SIDR_REQ). */
#define CM_PRIV_REQ 56
#define CM_PRIV_REP 196
#define CM_PRIV_REJ 148
#define CM_PRIV_RTU 224
#define CM_PRIV_DREQ 220
#define CM_PRIV_SIDR_REQ 180
#define CM_PRIV_SIDR_REP 136

enum cm_type {
	CM_REQ = 1,
	CM_REP = 2,
	CM_RTU = 3,
	CM_REJ = 4,
	CM_DREQ = 5,
	CM_DREP = 6,
	CM_SIDR_REQ = 7,
	CM_SIDR_REP = 8,
	CM_MRA = 9, /* REQ received: the application is deciding */
};

/* The message, big-endian; private data follows (docs/WIRE.md). */
struct cm_wire {
	uint8_t version; /* 1 */
	uint8_t type; /* enum cm_type */
	uint8_t reason; /* REJ: IB CM's reason; SIDR_REP: status */
	uint8_t pd_len; /* bytes of private data after the header */
	uint32_t local_id; /* the sender's communication id */
	uint32_t remote_id; /* the receiver's (0 in REQ, SIDR_REQ) */
	uint32_t qpn; /* REQ, REP, SIDR_REP: the sender's QP */
	uint32_t psn; /* REQ, REP: the sender's first PSN */
	uint32_t qkey; /* SIDR_REP: the QP's Q_Key */
	uint16_t src_port; /* the sender's rdma_cm port */
	uint16_t dst_port; /* the receiver's */
	uint8_t resp_res; /* REQ, REP: responder resources */
	uint8_t init_depth; /* REQ, REP: initiator depth */
	uint8_t retry; /* REQ, REP: retry_count << 4 | rnr_retry_count */
	uint8_t qp_type; /* REQ, SIDR_REQ: 2 RC, 4 UD */
	uint8_t pd[256];
};
#define CM_HDR_LEN 32u
_Static_assert(offsetof(struct cm_wire, pd) == CM_HDR_LEN, "cm header");

enum cm_state {
	CMS_IDLE, /* created */
	CMS_BOUND, /* BIND */
	CMS_ADDR, /* RESOLVE_ADDR done: device and peer known */
	CMS_ROUTE, /* RESOLVE_ROUTE done */
	CMS_LISTEN,
	CMS_REQ_SENT, /* CONNECT: REQ out, waiting for REP or REJ */
	CMS_REP_RCVD, /* CONNECT_RESPONSE given, waiting for ACCEPT */
	CMS_REQ_RCVD, /* passive: CONNECT_REQUEST given, no answer yet */
	CMS_REP_SENT, /* passive: ACCEPT, REP out, waiting for RTU */
	CMS_ESTABLISHED,
	CMS_DREQ_SENT, /* DISCONNECT: DREQ out, waiting for DREP */
	CMS_DISCONNECTED, /* DISCONNECTED given; or rejected, unreachable */
	CMS_SIDR_SENT, /* UD CONNECT: SIDR_REQ out */
	CMS_UD_DONE, /* UD: resolved (ESTABLISHED given) or answered */
	CMS_TIMEWAIT, /* no owner: answers duplicates until it expires */
};

struct svc_cm_id {
	uint32_t id; /* handle and local communication id */
	uint32_t remote_id;
	struct svc_ctx *ctx; /* NULL: destroyed, lingering (TIMEWAIT) */
	uint8_t state; /* enum cm_state */
	uint8_t qp_type; /* enum ovr_qp_type */
	uint16_t ps; /* enum ovr_cm_ps */
	int dev; /* index in s->devs, -1 until known */
	uint32_t vni;
	uint32_t src_ip, dst_ip; /* host order */
	uint16_t src_port, dst_port;
	uint32_t listen_id; /* passive: the listener it came from */
	/* the connection */
	uint32_t qpn, psn, rqpn, rpsn, rqkey;
	uint8_t resp_res, init_depth, rresp_res, rinit_depth;
	uint8_t retry, rnr_retry;
	/* the message retransmitted, its deadline and sends left */
	struct cm_wire out;
	uint64_t at; /* 0: none */
	uint64_t rto;
	uint8_t tries;
	bool mra; /* REQ_SENT: the peer sent MRA (slow resends) */
	bool tw_exit; /* DISCONNECTED: TIMEWAIT_EXIT due at @at */
	uint64_t mra_until; /* ... until then */
	struct svc_cm_id *next, **pprev; /* s->cm_ids */
};

/* An event its channel's socket could not take yet. */
struct svc_cm_ev {
	struct svc_cm_ev *next;
	struct ovr_ctl_cm_event e;
};

/* ---- helpers ------------------------------------------------------------- */

static struct svc_cm_id *id_find(struct svc *s, uint32_t id)
{
	return s->cm_by_id && id <= CM_MAX_IDS ? s->cm_by_id[id] : NULL;
}

/*
 * A free id: librdmacm indexes its ids by the handle the kernel gives
 * (a table of 65535 entries), so handles are small; they are also the
 * local communication ids on the wire. Cyclic, so a number comes back
 * only after the others were used (and never while its id lingers).
 */
static uint32_t new_id(struct svc *s)
{
	uint32_t id;

	do {
		id = s->cm_next_id++;
		if (s->cm_next_id > CM_MAX_IDS)
			s->cm_next_id = 1;
	} while (!id || id_find(s, id));
	return id;
}

static struct svc_cm_id *id_of(struct svc *s, struct svc_ctx *c, uint32_t id)
{
	struct svc_cm_id *i = id_find(s, id);

	return i && i->ctx == c ? i : NULL;
}

static int dev_of(struct svc *s, uint32_t vni, uint32_t vip)
{
	for (int d = 0; d < SVC_MAX_DEVS; d++)
		if (s->devs[d].used && s->devs[d].d.vni == vni &&
		    s->devs[d].d.vip == vip)
			return d;
	return -1;
}

static void arm(struct svc *s, struct svc_cm_id *i, uint64_t at)
{
	i->at = at;
	if (at && at < s->cm_next_at)
		s->cm_next_at = at;
}

/* A new id, zeroed, with a free id number, in the list and the table;
 * NULL: none left, or no memory. */
static struct svc_cm_id *id_new(struct svc *s)
{
	struct svc_cm_id *i;

	if (!s->cm_by_id)
		s->cm_by_id = calloc(CM_MAX_IDS + 1, sizeof(*s->cm_by_id));
	if (!s->cm_by_id || s->cnt.cm_ids >= CM_MAX_IDS - 1 ||
	    !(i = calloc(1, sizeof(*i))))
		return NULL;
	i->id = new_id(s);
	s->cm_by_id[i->id] = i;
	i->next = s->cm_ids;
	if (i->next)
		i->next->pprev = &i->next;
	i->pprev = &s->cm_ids;
	s->cm_ids = i;
	s->cnt.cm_ids++;
	return i;
}

static void id_free(struct svc *s, struct svc_cm_id *i)
{
	*i->pprev = i->next;
	if (i->next)
		i->next->pprev = i->pprev;
	s->cm_by_id[i->id] = NULL;
	free(i);
	s->cnt.cm_ids--;
}

/* ---- the channel's queue -------------------------------------------------- */

/* Watches (or stops watching) @c's socket for room. */
static void q_watch(struct svc *s, struct svc_ctx *c, bool on)
{
	struct epoll_event ev = { .events = EPOLLOUT,
				  .data.u64 = (uint64_t)(uintptr_t)c |
					      SVC_EV_CMOUT };

	if (on)
		epoll_ctl(s->epfd, EPOLL_CTL_ADD, c->cm_ev_fd, &ev);
	else
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->cm_ev_fd, NULL);
}

/*
 * Room in @c's socket for the events its ids may have undelivered: its
 * send buffer grows (doubled, as root may: SO_SNDBUFFORCE) up to
 * SVC_CM_EVQ_PER_ID events of CM_EV_TRUESIZE bytes per id held, and at
 * most [limits] cm_channel_kb (64 MiB, 32768 events, unless configured
 * otherwise). So the events wait in the socket itself, and the
 * application's fd is readable exactly while one is pending; the queue
 * takes only what is past that. true: it grew.
 */
static bool room(struct svc *s, struct svc_ctx *c)
{
	uint64_t want =
		(uint64_t)SVC_CM_EVQ_PER_ID * c->cm_nids * CM_EV_TRUESIZE;
	int cur = 0, next;
	socklen_t len = sizeof(cur);

	if (want > s->conf.cm_channel_bytes)
		want = s->conf.cm_channel_bytes;
	/* Linux reports twice what was set, the bookkeeping included */
	if (getsockopt(c->cm_ev_fd, SOL_SOCKET, SO_SNDBUF, &cur, &len) ||
	    (uint64_t)cur >= want)
		return false;
	next = cur > INT32_MAX / 2 ? INT32_MAX : cur * 2;
	if ((uint64_t)next > want)
		next = (int)want;
	/* setsockopt sets twice what it is given */
	next /= 2;
	if (setsockopt(c->cm_ev_fd, SOL_SOCKET, SO_SNDBUFFORCE, &next,
		       sizeof(next)) &&
	    setsockopt(c->cm_ev_fd, SOL_SOCKET, SO_SNDBUF, &next, sizeof(next)))
		return false;
	len = sizeof(next);
	return !getsockopt(c->cm_ev_fd, SOL_SOCKET, SO_SNDBUF, &next, &len) &&
	       next > cur;
}

/* 0 sent, 1 the socket is full, -1 the channel is gone (the
 * application closed its end: the context follows). */
static int q_send(struct svc *s, struct svc_ctx *c,
		  const struct ovr_ctl_cm_event *e)
{
	do {
		if (send(c->cm_ev_fd, e, sizeof(*e),
			 MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof(*e))
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS)
			return -1;
	} while (room(s, c));
	return 1;
}

static void q_free(struct svc *s, struct svc_ctx *c)
{
	struct svc_cm_ev *q, *n;

	if (c->cm_q)
		q_watch(s, c, false);
	for (q = c->cm_q; q; q = n) {
		n = q->next;
		free(q);
	}
	c->cm_q = NULL;
	c->cm_q_tail = &c->cm_q;
	c->cm_q_n = 0;
}

void svc_cm_flush(struct svc *s, struct svc_ctx *c)
{
	struct svc_cm_ev *q;
	int rc = 0;

	while ((q = c->cm_q) && !(rc = q_send(s, c, &q->e))) {
		c->cm_q = q->next;
		c->cm_q_n--;
		free(q);
	}
	if (!c->cm_q) {
		c->cm_q_tail = &c->cm_q;
		q_watch(s, c, false);
	} else if (rc < 0) {
		q_free(s, c);
	}
}

/* @q behind the events queued for @c (its socket's room watched from
 * the first on) */
static void q_link(struct svc *s, struct svc_ctx *c, struct svc_cm_ev *q)
{
	q->next = NULL;
	if (!c->cm_q) {
		c->cm_q_tail = &c->cm_q;
		q_watch(s, c, true);
	}
	*c->cm_q_tail = q;
	c->cm_q_tail = &q->next;
	c->cm_q_n++;
}

/* Queues @e behind the others of @c; the bound is the ids it holds. */
static void q_add(struct svc *s, struct svc_ctx *c,
		  const struct ovr_ctl_cm_event *e)
{
	struct svc_cm_ev *q = NULL;

	if (c->cm_q_n < SVC_CM_EVQ_PER_ID * c->cm_nids)
		q = malloc(sizeof(*q));
	if (!q) {
		s->cnt.cm_ev_dropped++;
		return;
	}
	q->e = *e;
	q_link(s, c, q);
	s->cnt.cm_ev_queued++;
}

static void id_release(struct svc *s, struct svc_cm_id *i, uint64_t now);

/*
 * @i goes from its channel: its queued events go with it; a listener's
 * queued CONNECT_REQUESTs take their new ids along (rejected), as the
 * kernel's ucma destroys them with the listener.
 */
static void q_forget(struct svc *s, struct svc_ctx *c, struct svc_cm_id *i,
		     uint64_t now)
{
	struct svc_cm_ev **pp = &c->cm_q, *q;

	while ((q = *pp)) {
		struct svc_cm_id *child = NULL;

		if (q->e.id != i->id &&
		    !(q->e.event == OVR_CM_EV_CONNECT_REQUEST &&
		      q->e.listen_id == i->id)) {
			pp = &q->next;
			continue;
		}
		if (q->e.id != i->id)
			child = id_of(s, c, q->e.id);
		*pp = q->next;
		c->cm_q_n--;
		free(q);
		if (child)
			id_release(s, child, now); /* may take more: restart */
		pp = &c->cm_q;
	}
	c->cm_q_tail = &c->cm_q;
	for (q = c->cm_q; q; q = q->next)
		c->cm_q_tail = &q->next;
	if (!c->cm_q)
		q_watch(s, c, false);
}

/* @i now belongs to @c (NULL: to nobody). */
static void own(struct svc_cm_id *i, struct svc_ctx *c)
{
	if (i->ctx)
		i->ctx->cm_nids--;
	i->ctx = c;
	if (c)
		c->cm_nids++;
}

static void event(struct svc *s, struct svc_cm_id *i, uint32_t ev,
		  int32_t status, const struct cm_wire *m)
{
	struct ovr_ctl_cm_event e = { .id = i->id,
				      .event = ev,
				      .status = status };

	if (!i->ctx)
		return;
	if (ev == OVR_CM_EV_CONNECT_REQUEST)
		e.listen_id = i->listen_id;
	if (m) {
		e.conn.qp_num = ntohl(m->qpn);
		e.conn.qkey = ntohl(m->qkey);
		e.conn.private_data_len = m->pd_len;
		memcpy(e.conn.private_data, m->pd, m->pd_len);
		e.conn.responder_resources = m->resp_res;
		e.conn.initiator_depth = m->init_depth;
		e.conn.retry_count = m->retry >> 4;
		e.conn.rnr_retry_count = m->retry & 15;
	}
	if (i->qp_type == OVR_QPT_UD)
		e.ud_vip = i->dst_ip;
	/* behind the queued ones, if any: events keep their order */
	if (i->ctx->cm_q || q_send(s, i->ctx, &e) == 1)
		q_add(s, i->ctx, &e);
}

/* A connection ends: DISCONNECTED now, TIMEWAIT_EXIT when the timewait
 * ends if the id is still held then (as the kernel's rdma_cm: only an
 * id that was given DISCONNECTED gets it). */
static void disconnected(struct svc *s, struct svc_cm_id *i,
			 const struct cm_wire *m, uint64_t now)
{
	i->state = CMS_DISCONNECTED;
	event(s, i, OVR_CM_EV_DISCONNECTED, 0, m);
	i->tw_exit = true;
	arm(s, i, now + CM_TW_EXIT_NS);
}

static void xmit(struct svc *s, uint32_t vni, uint32_t src, uint32_t dst,
		 const struct cm_wire *m)
{
	if (!svc_dp_send_dgram(s, vni, src, dst, SVC_CM_QPN, SVC_CM_QPN,
			       SVC_CM_QKEY, m, CM_HDR_LEN + m->pd_len))
		s->cnt.cm_tx++;
}

/* A message of @i to its peer, filled from the id. */
static void msg_init(const struct svc_cm_id *i, struct cm_wire *m, uint8_t type)
{
	memset(m, 0, CM_HDR_LEN);
	m->version = 1;
	m->type = type;
	m->local_id = htonl(i->id);
	m->remote_id = htonl(i->remote_id);
	m->qpn = htonl(i->qpn);
	m->psn = htonl(i->psn);
	m->src_port = htons(i->src_port);
	m->dst_port = htons(i->dst_port);
	m->resp_res = i->resp_res;
	m->init_depth = i->init_depth;
	m->retry = (uint8_t)(i->retry << 4 | (i->rnr_retry & 15));
	m->qp_type = i->qp_type;
}

/* Sends @i's message now and keeps it for retransmission. */
static void send_reliable(struct svc *s, struct svc_cm_id *i, uint64_t now)
{
	i->tries = 1;
	i->rto = CM_RTO_NS;
	xmit(s, i->vni, i->src_ip, i->dst_ip, &i->out);
	arm(s, i, now + i->rto);
}

static void send_once(struct svc *s, struct svc_cm_id *i, uint8_t type,
		      uint8_t reason, const uint8_t *pd, uint8_t pd_len)
{
	struct cm_wire m;

	msg_init(i, &m, type);
	m.reason = reason;
	m.pd_len = pd_len;
	if (pd_len)
		memcpy(m.pd, pd, pd_len);
	xmit(s, i->vni, i->src_ip, i->dst_ip, &m);
}

/* Answers @m (from @peer to @us) with a bare @type carrying @reason, for
 * which no id of ours stands: ids and ports are @m's, swapped. */
static void answer(struct svc *s, uint32_t vni, uint32_t us, uint32_t peer,
		   const struct cm_wire *m, uint8_t type, uint8_t reason)
{
	struct cm_wire r;

	memset(&r, 0, CM_HDR_LEN);
	r.version = 1;
	r.type = type;
	r.reason = reason;
	r.local_id = m->remote_id;
	r.remote_id = m->local_id;
	r.src_port = m->dst_port;
	r.dst_port = m->src_port;
	xmit(s, vni, us, peer, &r);
}

static uint32_t rand24(void)
{
	return (uint32_t)(random() ^ svc_now()) & 0xffffffu;
}

static bool port_used(struct svc *s, uint16_t ps, uint32_t ip, uint16_t port)
{
	for (struct svc_cm_id *i = s->cm_ids; i; i = i->next)
		if (i->ctx && i->ps == ps && i->src_port == port &&
		    (i->state == CMS_LISTEN || i->state == CMS_BOUND) &&
		    (!i->src_ip || !ip || i->src_ip == ip))
			return true;
	return false;
}

static uint16_t ephemeral(struct svc *s, uint16_t ps, uint32_t ip)
{
	for (int k = 0; k < CM_EPHEMERAL_HI - CM_EPHEMERAL_LO; k++) {
		uint16_t p = s->cm_next_port++;

		if (s->cm_next_port > CM_EPHEMERAL_HI)
			s->cm_next_port = CM_EPHEMERAL_LO;
		if (p >= CM_EPHEMERAL_LO && !port_used(s, ps, ip, p))
			return p;
	}
	return 0;
}

/* ---- requests ------------------------------------------------------------ */

static int do_bind(struct svc *s, struct svc_cm_id *i,
		   const struct ovr_ctl_cm_req *q)
{
	if (i->state != CMS_IDLE)
		return -EINVAL;
	if (q->src.ip) {
		int dev = -1;

		for (int d = 0; d < SVC_MAX_DEVS && dev < 0; d++)
			if (s->devs[d].used && s->devs[d].d.vip == q->src.ip)
				dev = d;
		/* as the kernel's: an address no interface has is not
		 * available; a loopback address is (lo), but no RDMA port
		 * has its GID (cma_acquire_dev_by_src_ip: ENODEV) */
		if (dev < 0)
			return (q->src.ip >> 24) == 127 ? -ENODEV :
							  -EADDRNOTAVAIL;
		i->dev = dev;
		i->vni = s->devs[dev].d.vni;
	}
	if (q->src.port && port_used(s, i->ps, q->src.ip, q->src.port))
		return -EADDRINUSE;
	i->src_ip = q->src.ip;
	/* port 0: one is chosen now, as the kernel does, so that
	 * rdma_get_src_port() after rdma_bind_addr() tells it (qperf sends
	 * it to its client before rdma_listen) */
	i->src_port = q->src.port ? q->src.port :
				    ephemeral(s, i->ps, q->src.ip);
	if (!i->src_port)
		return -EADDRNOTAVAIL;
	i->state = CMS_BOUND;
	return 0;
}

/* The device that reaches @dst: the bound one, else the first device
 * whose tenant lets it connect to @dst. */
static int do_resolve_addr(struct svc *s, struct svc_cm_id *i,
			   const struct ovr_ctl_cm_req *q)
{
	int rc = -EHOSTUNREACH, dev = -1;

	if (i->state != CMS_IDLE && i->state != CMS_BOUND)
		return -EINVAL;
	if (!q->dst.set)
		return -EINVAL;
	if (i->state == CMS_IDLE && q->src.set) {
		rc = do_bind(s, i, q);
		if (rc)
			return rc;
		rc = -EHOSTUNREACH;
	}
	for (int d = 0; d < SVC_MAX_DEVS && dev < 0; d++) {
		const struct ovr_ctl_dev *v = &s->devs[d].d;
		int r;

		if (!s->devs[d].used || (i->dev >= 0 && d != i->dev))
			continue;
		/* a multicast group (to JOIN_MCAST next): any device of
		 * the tenant reaches it, as a route to a multicast
		 * address names an interface */
		r = ovr_vpc_is_mcast(q->dst.ip) ?
			    0 :
			    ovr_vpc_may_connect(s->vpc, v->vni, v->vip,
						q->dst.ip);
		if (!r)
			dev = d;
		else if (rc == -EHOSTUNREACH)
			rc = r;
	}
	i->state = CMS_ADDR;
	i->dst_ip = q->dst.ip;
	i->dst_port = q->dst.port;
	if (dev < 0) {
		event(s, i, OVR_CM_EV_ADDR_ERROR, rc, NULL);
		return 0;
	}
	i->dev = dev;
	i->vni = s->devs[dev].d.vni;
	i->src_ip = s->devs[dev].d.vip;
	if (!i->src_port)
		i->src_port = ephemeral(s, i->ps, i->src_ip);
	event(s, i, OVR_CM_EV_ADDR_RESOLVED, 0, NULL);
	return 0;
}

/*
 * JOIN_MCAST: the id (bound to a device, of a datagram port space) joins
 * group q->dst.ip: the answer is the MULTICAST_JOIN event naming q->arg2,
 * with what the application's QP needs - the group's address vector,
 * QPN 0xffffff and the port space's Q_Key. librdmacm then attaches the
 * id's QP (ibv_attach_mcast), which is what makes its QP a member: the
 * service keeps no membership here (docs/PROVIDER.md, "Multicast").
 */
static int do_join(struct svc *s, struct svc_cm_id *i,
		   const struct ovr_ctl_cm_req *q)
{
	struct ovr_ctl_cm_event e = { .id = q->arg2,
				      .event = OVR_CM_EV_MULTICAST_JOIN };

	if (i->dev < 0 || !i->ctx || i->qp_type != OVR_QPT_UD ||
	    (i->state != CMS_BOUND && i->state != CMS_ADDR &&
	     i->state != CMS_ROUTE && i->state != CMS_UD_DONE))
		return -EINVAL;
	/* RDMA_MC_JOIN_FLAG_FULLMEMBER (0), _SENDONLY_FULLMEMBER (1) */
	if (!q->dst.set || !ovr_vpc_is_mcast(q->dst.ip) || q->arg > 1)
		return -EINVAL;
	e.conn.qp_num = OVR_UD_MCAST_QPN;
	e.conn.qkey = OVR_CM_UDP_QKEY;
	e.ud_vip = q->dst.ip;
	s->cnt.cm_mcast_joins++;
	if (i->ctx->cm_q || q_send(s, i->ctx, &e) == 1)
		q_add(s, i->ctx, &e);
	return 0;
}

static int do_listen(struct svc *s, struct svc_cm_id *i)
{
	if (i->state == CMS_LISTEN)
		return 0;
	if (i->state != CMS_IDLE && i->state != CMS_BOUND)
		return -EINVAL;
	if (!i->src_port)
		i->src_port = ephemeral(s, i->ps, i->src_ip);
	else if (i->state == CMS_IDLE &&
		 port_used(s, i->ps, i->src_ip, i->src_port))
		return -EADDRINUSE;
	i->state = CMS_LISTEN;
	return 0;
}

/* Copies the application's parameters of CONNECT / ACCEPT into @i. */
static int take_conn(struct svc_cm_id *i, const struct ovr_ctl_cm_conn *c,
		     unsigned int pd_max, struct cm_wire *m)
{
	if (c->private_data_len > pd_max)
		return -EINVAL;
	i->qpn = c->qp_num & 0xffffffu;
	i->resp_res = c->responder_resources;
	i->init_depth = c->initiator_depth;
	i->retry = c->retry_count > 7 ? 7 : c->retry_count;
	i->rnr_retry = c->rnr_retry_count > 7 ? 7 : c->rnr_retry_count;
	m->pd_len = c->private_data_len;
	memcpy(m->pd, c->private_data, c->private_data_len);
	return 0;
}

static int do_connect(struct svc *s, struct svc_cm_id *i,
		      const struct ovr_ctl_cm_req *q, uint64_t now)
{
	bool ud = i->qp_type == OVR_QPT_UD;
	int rc;

	if (i->state != CMS_ROUTE && !(ud && i->state == CMS_ADDR))
		return -EINVAL;
	rc = take_conn(i, &q->conn, ud ? CM_PRIV_SIDR_REQ : CM_PRIV_REQ,
		       &i->out);
	if (rc)
		return rc;
	i->psn = rand24();
	msg_init(i, &i->out, ud ? CM_SIDR_REQ : CM_REQ);
	i->out.pd_len = q->conn.private_data_len;
	i->state = ud ? CMS_SIDR_SENT : CMS_REQ_SENT;
	i->mra = false;
	send_reliable(s, i, now);
	return 0;
}

static int do_accept(struct svc *s, struct svc_cm_id *i,
		     const struct ovr_ctl_cm_req *q, uint64_t now)
{
	int rc;

	if (i->state == CMS_REP_RCVD) { /* the active side's RTU */
		struct cm_wire m;

		if (q->conn.private_data_len > CM_PRIV_RTU)
			return -EINVAL;
		msg_init(i, &m, CM_RTU);
		m.pd_len = q->conn.private_data_len;
		memcpy(m.pd, q->conn.private_data, m.pd_len);
		xmit(s, i->vni, i->src_ip, i->dst_ip, &m);
		i->state = CMS_ESTABLISHED;
		arm(s, i, 0);
		return 0;
	}
	if (i->state != CMS_REQ_RCVD)
		return -EINVAL;
	if (i->qp_type == OVR_QPT_UD) {
		rc = take_conn(i, &q->conn, CM_PRIV_SIDR_REP, &i->out);
		if (rc)
			return rc;
		msg_init(i, &i->out, CM_SIDR_REP);
		i->out.pd_len = q->conn.private_data_len;
		i->out.qkey =
			htonl(q->conn.qkey ? q->conn.qkey : OVR_CM_UDP_QKEY);
		xmit(s, i->vni, i->src_ip, i->dst_ip, &i->out);
		i->state = CMS_UD_DONE;
		return 0;
	}
	rc = take_conn(i, &q->conn, CM_PRIV_REP, &i->out);
	if (rc)
		return rc;
	msg_init(i, &i->out, CM_REP);
	i->out.pd_len = q->conn.private_data_len;
	i->state = CMS_REP_SENT;
	send_reliable(s, i, now);
	return 0;
}

/*
 * The refusal @i sends (REJ; SIDR_REP with status 1 for UD), sent once
 * and kept in i->out: a copy of the request that arrives later (the
 * refusal was lost, so the peer resends) is answered with it again -
 * reason and private data - also after the owner destroyed the id,
 * which then lingers (id_release) as long as the peer may resend.
 */
static void refuse(struct svc *s, struct svc_cm_id *i, uint8_t reason,
		   const uint8_t *pd, uint8_t pd_len)
{
	bool ud = i->qp_type == OVR_QPT_UD;

	msg_init(i, &i->out, ud ? CM_SIDR_REP : CM_REJ);
	i->out.reason = ud ? 1 : reason;
	i->out.pd_len = pd_len;
	if (pd_len)
		memcpy(i->out.pd, pd, pd_len);
	xmit(s, i->vni, i->src_ip, i->dst_ip, &i->out);
	i->state = CMS_DISCONNECTED;
	arm(s, i, 0);
}

/* Whether @i is a refusal kept for answering copies (refuse()). */
static bool refusal_kept(const struct svc_cm_id *i)
{
	return (i->state == CMS_DISCONNECTED || i->state == CMS_TIMEWAIT) &&
	       (i->out.type == CM_REJ ||
		(i->out.type == CM_SIDR_REP && i->out.reason));
}

static int do_reject(struct svc *s, struct svc_cm_id *i,
		     const struct ovr_ctl_cm_req *q)
{
	if (q->conn.private_data_len > CM_PRIV_REJ)
		return -EINVAL;
	if (i->state != CMS_REQ_RCVD &&
	    (i->state != CMS_REP_RCVD || i->qp_type == OVR_QPT_UD))
		return -EINVAL;
	refuse(s, i, q->arg ? (uint8_t)q->arg : OVR_CM_REJ_CONSUMER,
	       q->conn.private_data, q->conn.private_data_len);
	return 0;
}

static void start_dreq(struct svc *s, struct svc_cm_id *i, uint64_t now)
{
	msg_init(i, &i->out, CM_DREQ);
	i->state = CMS_DREQ_SENT;
	send_reliable(s, i, now);
}

static int do_disconnect(struct svc *s, struct svc_cm_id *i, uint64_t now)
{
	switch (i->state) {
	case CMS_ESTABLISHED:
	case CMS_REP_SENT:
	case CMS_REP_RCVD:
		start_dreq(s, i, now);
		return 0;
	case CMS_DREQ_SENT:
	case CMS_DISCONNECTED:
		return 0;
	default:
		return -EINVAL;
	}
}

/* What rdma_init_qp_attr() needs for @state (verbs' required sets for
 * RC and UD; the kernel's rdma_cm values where verbs leaves a choice). */
static int do_init_qp_attr(struct svc *s, struct svc_cm_id *i, uint32_t state,
			   struct ovr_ctl_cm_qp_attr *a)
{
	bool ud = i->qp_type == OVR_QPT_UD;

	if (i->dev < 0)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->state = state;
	a->port_num = 1;
	switch (state) {
	case OVR_QPS_INIT:
		a->mask = OVR_QP_STATE | OVR_QP_PKEY_INDEX | OVR_QP_PORT;
		if (ud) {
			a->mask |= OVR_QP_QKEY;
			a->qkey = OVR_CM_UDP_QKEY;
		} else {
			a->mask |= OVR_QP_ACCESS_FLAGS;
			a->access = OVR_ACCESS_REMOTE;
		}
		return 0;
	case OVR_QPS_RTR:
		a->mask = OVR_QP_STATE;
		if (ud)
			return 0;
		if (i->state != CMS_REQ_RCVD && i->state != CMS_REP_RCVD &&
		    i->state != CMS_REP_SENT && i->state != CMS_ESTABLISHED)
			return -EINVAL;
		a->mask |= OVR_QP_AV | OVR_QP_PATH_MTU | OVR_QP_DEST_QPN |
			   OVR_QP_RQ_PSN | OVR_QP_MAX_DEST_RD_ATOMIC |
			   OVR_QP_MIN_RNR_TIMER;
		a->dgid_vip = i->dst_ip;
		a->hop_limit = 64;
		a->path_mtu = (uint8_t)s->devs[i->dev].d.active_mtu;
		a->dest_qpn = i->rqpn;
		a->rq_psn = i->rpsn;
		a->max_dest_rd_atomic = i->resp_res ? i->resp_res : 1;
		a->min_rnr_timer = 12; /* 0.64 ms (IB's encoding) */
		return 0;
	case OVR_QPS_RTS:
		a->mask = OVR_QP_STATE | OVR_QP_SQ_PSN;
		if (ud)
			return 0;
		if (i->state != CMS_REP_RCVD && i->state != CMS_REP_SENT &&
		    i->state != CMS_REQ_RCVD && i->state != CMS_ESTABLISHED)
			return -EINVAL;
		a->mask |= OVR_QP_TIMEOUT | OVR_QP_RETRY_CNT |
			   OVR_QP_RNR_RETRY | OVR_QP_MAX_QP_RD_ATOMIC;
		a->sq_psn = i->psn;
		a->timeout = 14; /* 67 ms (4.096 us << 14) */
		a->retry_cnt = i->retry;
		a->rnr_retry = i->rnr_retry;
		a->max_rd_atomic = i->init_depth ? i->init_depth : 1;
		if (i->rresp_res && a->max_rd_atomic > i->rresp_res)
			a->max_rd_atomic = i->rresp_res;
		return 0;
	default:
		return -EINVAL;
	}
}

/* @i's owner lets it go: peers are told, a connection lingers. */
static void id_release(struct svc *s, struct svc_cm_id *i, uint64_t now)
{
	struct svc_ctx *c = i->ctx;

	own(i, NULL);
	if (c && c->cm_q)
		q_forget(s, c, i, now);
	switch (i->state) {
	case CMS_REQ_RCVD:
		/* unanswered: refused, and the refusal kept for copies */
		refuse(s, i, OVR_CM_REJ_CONSUMER, NULL, 0);
		i->state = CMS_TIMEWAIT;
		arm(s, i, now + CM_REFUSED_NS);
		return;
	case CMS_DISCONNECTED:
		if (!refusal_kept(i)) {
			id_free(s, i);
			return;
		}
		/* rejected by its application: answers copies of the
		 * request (the REP) a while longer */
		i->state = CMS_TIMEWAIT;
		arm(s, i, now + CM_REFUSED_NS);
		return;
	case CMS_REQ_SENT:
		send_once(s, i, CM_REJ, OVR_CM_REJ_TIMEOUT, NULL, 0);
		break;
	case CMS_REP_RCVD:
		/* given the REP, gone before its RTU (CONNECT_ERROR, or
		 * destroyed): REJ, as the kernel's CM sends from REP_RCVD,
		 * kept for copies of the REP */
		refuse(s, i, OVR_CM_REJ_CONSUMER, NULL, 0);
		i->state = CMS_TIMEWAIT;
		arm(s, i, now + CM_REFUSED_NS);
		return;
	case CMS_ESTABLISHED:
	case CMS_REP_SENT:
		start_dreq(s, i, now);
		i->state = CMS_TIMEWAIT;
		return;
	case CMS_DREQ_SENT:
		i->state = CMS_TIMEWAIT;
		return; /* its DREQ goes on */
	default:
		id_free(s, i);
		return;
	}
	i->state = CMS_TIMEWAIT;
	arm(s, i, now + CM_TIMEWAIT_NS);
}

static void fill_rep(struct svc *s, const struct svc_cm_id *i,
		     struct ovr_ctl_cm_rep *rep)
{
	rep->id = i->id;
	rep->ps = i->ps;
	rep->routed = i->dst_ip && i->state >= CMS_ROUTE &&
		      i->state != CMS_LISTEN;
	rep->guid = i->dev >= 0 ? s->devs[i->dev].d.guid : 0;
	rep->src = (struct ovr_ctl_cm_addr){ i->src_ip, i->src_port, 1 };
	if (i->dst_ip)
		rep->dst =
			(struct ovr_ctl_cm_addr){ i->dst_ip, i->dst_port, 1 };
}

int svc_do_cm_open(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	(void)s;
	if (c->cm_ev_fd >= 0)
		return svc_status(c, r->h, -EALREADY);
	if (r->nfds != 1)
		return svc_status(c, r->h, -EINVAL);
	c->cm_ev_fd = svc_take_fd(r, 0);
	c->cm_q = NULL;
	c->cm_q_tail = &c->cm_q;
	return svc_status(c, r->h, 0);
}

/*
 * rdma_migrate_id: @i's events go to channel @c from now on. Only
 * between two channels of one process (the kernel's file descriptors
 * are the process's); those still in the old channel's queue move
 * along, those already in its socket stay there (the interposer drops
 * them, the id being gone from it).
 */
static int migrate(struct svc *s, struct svc_ctx *c, struct svc_cm_id *i)
{
	struct svc_ctx *old;
	struct svc_cm_ev **pp, *q;

	if (!i || !i->ctx || c->cm_ev_fd < 0)
		return -EINVAL;
	if (i->ctx->pid != c->pid || i->ctx->uid != c->uid)
		return -EINVAL;
	old = i->ctx;
	own(i, c);
	if (old == c)
		return 0;
	/* its events still queued here move along, in order */
	for (pp = &old->cm_q; (q = *pp);) {
		if (q->e.id != i->id) {
			pp = &q->next;
			continue;
		}
		*pp = q->next;
		old->cm_q_n--;
		q_link(s, c, q);
	}
	old->cm_q_tail = &old->cm_q;
	for (q = old->cm_q; q; q = q->next)
		old->cm_q_tail = &q->next;
	if (!old->cm_q)
		q_watch(s, old, false);
	return 0;
}

int svc_do_cm(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_cm_req *q = SVC_BODY(c, r, struct ovr_ctl_cm_req);
	struct ovr_ctl_cm_rep rep = { 0 };
	uint64_t now = svc_now();
	struct svc_cm_id *i = NULL;
	int rc = 0;

	if (q->cmd == OVR_CM_MIGRATE) {
		i = id_find(s, q->id);
		rc = migrate(s, c, i);
		if (rc)
			return svc_status(c, r->h, rc);
	} else if (q->cmd != OVR_CM_CREATE_ID) {
		i = id_of(s, c, q->id);
		if (!i) /* as the kernel's ucma: another file's, or none */
			return svc_status(
				c, r->h, id_find(s, q->id) ? -EINVAL : -ENOENT);
	}
	switch (q->cmd) {
	case OVR_CM_CREATE_ID:
		if ((q->arg != OVR_CM_PS_TCP && q->arg != OVR_CM_PS_UDP &&
		     q->arg != OVR_CM_PS_IB) ||
		    (q->arg2 != OVR_QPT_RC && q->arg2 != OVR_QPT_UD))
			return svc_status(c, r->h, -EINVAL);
		i = id_new(s);
		if (!i)
			return svc_status(c, r->h, -ENOMEM);
		own(i, c);
		i->ps = (uint16_t)q->arg;
		i->qp_type = (uint8_t)q->arg2;
		i->dev = -1;
		break;
	case OVR_CM_DESTROY_ID:
		id_release(s, i, now);
		return svc_status(c, r->h, 0);
	case OVR_CM_BIND:
		rc = do_bind(s, i, q);
		break;
	case OVR_CM_RESOLVE_ADDR:
		rc = do_resolve_addr(s, i, q);
		break;
	case OVR_CM_RESOLVE_ROUTE:
		if (i->state != CMS_ADDR || i->dev < 0)
			rc = -EINVAL;
		else {
			i->state = CMS_ROUTE;
			event(s, i, OVR_CM_EV_ROUTE_RESOLVED, 0, NULL);
		}
		break;
	case OVR_CM_QUERY:
	case OVR_CM_MIGRATE:
		break;
	case OVR_CM_LISTEN:
		rc = do_listen(s, i);
		break;
	case OVR_CM_CONNECT:
		rc = do_connect(s, i, q, now);
		break;
	case OVR_CM_ACCEPT:
		rc = do_accept(s, i, q, now);
		break;
	case OVR_CM_REJECT:
		rc = do_reject(s, i, q);
		break;
	case OVR_CM_DISCONNECT:
		rc = do_disconnect(s, i, now);
		break;
	case OVR_CM_INIT_QP_ATTR:
		rc = do_init_qp_attr(s, i, q->arg, &rep.qp);
		break;
	case OVR_CM_JOIN_MCAST:
		rc = do_join(s, i, q);
		break;
	case OVR_CM_NOTIFY:
		/* the QP saw traffic before the RTU: established */
		if (i->state == CMS_REP_SENT && q->arg == OVR_EV_COMM_EST) {
			i->state = CMS_ESTABLISHED;
			arm(s, i, 0);
			event(s, i, OVR_CM_EV_ESTABLISHED, 0, NULL);
		}
		break;
	default:
		rc = -EOPNOTSUPP;
	}
	if (rc)
		return svc_status(c, r->h, rc);
	fill_rep(s, i, &rep);
	return svc_reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

uint64_t svc_cm_listening(const struct svc *s)
{
	uint64_t n = 0;

	for (const struct svc_cm_id *i = s->cm_ids; i; i = i->next)
		n += i->state == CMS_LISTEN;
	return n;
}

void svc_cm_ctx_gone(struct svc *s, struct svc_ctx *c)
{
	uint64_t now = svc_now();
	struct svc_cm_id *i = s->cm_ids, *n;

	q_free(s, c); /* nobody reads them now */
	for (; i; i = n) {
		n = i->next;
		if (i->ctx == c)
			id_release(s, i, now);
	}
}

/* ---- messages from peers ------------------------------------------------- */

/* A REQ or SIDR_REQ: a new id of the listener of that port. */
/*
 * A REQ (SIDR_REQ) refused for want of a listener: its sender
 * retransmits it until our REJ arrives, so copies may come after a
 * listener appeared - the kernel's CM would hand such a copy to the
 * listener, a connection to an id that has already given up (the
 * listener's one accept spent on it: perftest's server then waits for
 * ever). Remembered (the message's identity: ids, ports, QPN, PSN) for
 * CM_REFUSED_NS, the refusal repeated for every copy. With @add,
 * remembers @m (the oldest entry makes room); else whether it is
 * remembered. Bounded: a flood of refused REQs only forgets early.
 */
static bool refused(struct svc *s, uint32_t vni, uint32_t src, uint32_t dst,
		    const struct cm_wire *m, bool add)
{
	uint64_t now = svc_now();
	struct svc_cm_refused *r;

	for (unsigned int k = 0; k < SVC_CM_REFUSED; k++) {
		r = &s->cm_refused[k];
		if (r->until > now && r->vni == vni && r->src == src &&
		    r->dst == dst && r->id == m->local_id && r->qpn == m->qpn &&
		    r->psn == m->psn && r->sport == m->src_port &&
		    r->dport == m->dst_port && r->type == m->type) {
			r->until = now + CM_REFUSED_NS;
			return true;
		}
	}
	if (!add)
		return false;
	r = &s->cm_refused[s->cm_refused_next++ % SVC_CM_REFUSED];
	*r = (struct svc_cm_refused){ .until = now + CM_REFUSED_NS,
				      .vni = vni,
				      .src = src,
				      .dst = dst,
				      .id = m->local_id,
				      .qpn = m->qpn,
				      .psn = m->psn,
				      .sport = m->src_port,
				      .dport = m->dst_port,
				      .type = m->type };
	return true;
}

static void rx_req(struct svc *s, uint32_t vni, uint32_t src, uint32_t dst,
		   const struct cm_wire *m)
{
	struct svc_cm_id *l = NULL, *i;
	uint16_t port = ntohs(m->dst_port);
	bool ud = m->type == CM_SIDR_REQ;
	int dev = dev_of(s, vni, dst);

	if (dev < 0)
		return;
	/* a duplicate: answered by the state it finds */
	for (i = s->cm_ids; i; i = i->next)
		if (i->remote_id == ntohl(m->local_id) && i->dst_ip == src &&
		    i->vni == vni && i->listen_id) {
			if (i->state == CMS_REQ_RCVD && !ud)
				send_once(s, i, CM_MRA, 0, NULL, 0);
			else if (i->state == CMS_REP_SENT ||
				 i->state == CMS_UD_DONE)
				xmit(s, vni, dst, src, &i->out);
			else if (refusal_kept(i)) {
				xmit(s, vni, dst, src, &i->out);
				/* lingering: stays while copies come */
				if (i->state == CMS_TIMEWAIT)
					arm(s, i, svc_now() + CM_REFUSED_NS);
			} else if (i->state == CMS_TIMEWAIT ||
				   i->state == CMS_DISCONNECTED)
				send_once(s, i, CM_REJ, OVR_CM_REJ_STALE_CONN,
					  NULL, 0);
			return;
		}
	for (i = s->cm_ids; i && !l; i = i->next)
		if (i->ctx && i->state == CMS_LISTEN && i->src_port == port &&
		    (i->qp_type == OVR_QPT_UD) == ud &&
		    (i->dev < 0 || i->dev == dev))
			l = i;
	if (l && refused(s, vni, src, dst, m, false))
		l = NULL; /* a copy of a REQ refused before: refused again */
	if (!l || !(i = id_new(s))) {
		if (!l)
			refused(s, vni, src, dst, m, true);
		answer(s, vni, dst, src, m, ud ? CM_SIDR_REP : CM_REJ,
		       ud ? 1 : OVR_CM_REJ_INVALID_SERVICE_ID);
		return;
	}
	own(i, l->ctx);
	i->ps = l->ps;
	i->qp_type = l->qp_type;
	i->dev = dev;
	i->vni = vni;
	i->src_ip = dst;
	i->src_port = port;
	i->dst_ip = src;
	i->dst_port = ntohs(m->src_port);
	i->listen_id = l->id;
	i->remote_id = ntohl(m->local_id);
	i->rqpn = ntohl(m->qpn) & 0xffffffu;
	i->rpsn = ntohl(m->psn) & 0xffffffu;
	i->rresp_res = m->resp_res;
	i->rinit_depth = m->init_depth;
	/* the passive side's defaults until ACCEPT says otherwise */
	i->resp_res = m->init_depth;
	i->init_depth = m->resp_res;
	i->retry = m->retry >> 4;
	i->rnr_retry = m->retry & 15;
	/* librdmacm moves the QP to RTS before it writes ACCEPT */
	i->psn = rand24();
	i->state = CMS_REQ_RCVD;
	event(s, i, OVR_CM_EV_CONNECT_REQUEST, 0, m);
	/* the application decides: the peer waits for it (CM_MRA_NS) */
	if (!ud)
		send_once(s, i, CM_MRA, 0, NULL, 0);
}

void svc_cm_rx(struct svc *s, uint32_t vni, uint32_t src_vip, uint32_t dst_vip,
	       const uint8_t *msg, uint32_t len)
{
	struct cm_wire m;
	struct svc_cm_id *i;

	if (len < CM_HDR_LEN || len > sizeof(m)) {
		s->cnt.cm_rx_bad++;
		return;
	}
	memcpy(&m, msg, len);
	if (m.version != 1 || CM_HDR_LEN + m.pd_len != len || !m.type ||
	    m.type > CM_MRA) {
		s->cnt.cm_rx_bad++;
		return;
	}
	s->cnt.cm_rx++;
	if (m.type == CM_REQ || m.type == CM_SIDR_REQ) {
		rx_req(s, vni, src_vip, dst_vip, &m);
		return;
	}
	i = id_find(s, ntohl(m.remote_id));
	if (i &&
	    (i->vni != vni || i->src_ip != dst_vip || i->dst_ip != src_vip))
		i = NULL;
	/* a reply to REQ / SIDR_REQ names our id; afterwards both ids */
	if (i && i->remote_id && i->remote_id != ntohl(m.local_id))
		i = NULL;
	/* the REJ of an active id that gave up its REQ before any REP
	 * (destroyed, its program gone) names only itself: the passive id
	 * of that request, whose application may still be deciding */
	if (!i && !m.remote_id && m.local_id && m.type == CM_REJ)
		for (i = s->cm_ids; i; i = i->next)
			if (i->listen_id && i->remote_id == ntohl(m.local_id) &&
			    i->vni == vni && i->src_ip == dst_vip &&
			    i->dst_ip == src_vip)
				break;
	if (!i ||
	    (m.type == CM_REP && !i->remote_id && i->state != CMS_REQ_SENT)) {
		/* a REP for an id that is gone, or that gave up its REQ
		 * (rejected, timed out): REJ, so the peer's application
		 * learns now that nobody will use its connection */
		if (m.type == CM_REP)
			answer(s, vni, dst_vip, src_vip, &m, CM_REJ,
			       OVR_CM_REJ_STALE_CONN);
		/* the id is gone: a DREQ still deserves its DREP */
		if (m.type == CM_DREQ)
			answer(s, vni, dst_vip, src_vip, &m, CM_DREP, 0);
		return;
	}
	switch (m.type) {
	case CM_REP:
		if (i->state == CMS_REQ_SENT) {
			i->remote_id = ntohl(m.local_id);
			i->rqpn = ntohl(m.qpn) & 0xffffffu;
			i->rpsn = ntohl(m.psn) & 0xffffffu;
			i->rresp_res = m.resp_res;
			i->rinit_depth = m.init_depth;
			i->state = CMS_REP_RCVD;
			arm(s, i, 0);
			event(s, i, OVR_CM_EV_CONNECT_RESPONSE, 0, &m);
		} else if (i->state == CMS_ESTABLISHED) {
			send_once(s, i, CM_RTU, 0, NULL, 0); /* RTU lost */
		} else if (refusal_kept(i)) {
			xmit(s, vni, dst_vip, src_vip, &i->out); /* REJ lost */
		}
		break;
	case CM_MRA:
		if (i->state == CMS_REQ_SENT && !i->mra) {
			uint64_t now = svc_now();

			i->mra = true;
			i->mra_until = now + CM_MRA_NS;
			arm(s, i, now + CM_MRA_RESEND_NS);
		}
		break;
	case CM_RTU:
		if (i->state == CMS_REP_SENT) {
			i->state = CMS_ESTABLISHED;
			arm(s, i, 0);
			event(s, i, OVR_CM_EV_ESTABLISHED, 0, &m);
		}
		break;
	case CM_REJ:
		if (i->state == CMS_REQ_SENT || i->state == CMS_REP_SENT ||
		    i->state == CMS_REP_RCVD ||
		    (i->state == CMS_REQ_RCVD && i->qp_type != OVR_QPT_UD)) {
			i->state = CMS_DISCONNECTED;
			arm(s, i, 0);
			event(s, i, OVR_CM_EV_REJECTED, m.reason, &m);
		}
		break;
	case CM_DREQ:
		send_once(s, i, CM_DREP, 0, NULL, 0);
		if (i->state == CMS_ESTABLISHED || i->state == CMS_REP_SENT ||
		    i->state == CMS_REP_RCVD || i->state == CMS_DREQ_SENT)
			disconnected(s, i, &m, svc_now());
		break;
	case CM_DREP:
		if (i->state == CMS_DREQ_SENT) {
			disconnected(s, i, NULL, svc_now());
		} else if (i->state == CMS_TIMEWAIT) {
			id_free(s, i);
		}
		break;
	case CM_SIDR_REP:
		if (i->state != CMS_SIDR_SENT)
			break;
		arm(s, i, 0);
		if (m.reason) {
			i->state = CMS_DISCONNECTED;
			event(s, i, OVR_CM_EV_UNREACHABLE, -ECONNREFUSED, &m);
			break;
		}
		i->remote_id = ntohl(m.local_id);
		i->state = CMS_UD_DONE;
		event(s, i, OVR_CM_EV_ESTABLISHED, 0, &m);
		break;
	default:
		break;
	}
}

/* ---- timers -------------------------------------------------------------- */

/* @i's timer ran out: its message went unanswered CM_TRIES times, or
 * its timewait (or the time a lingering id is kept) ended. */
static void gave_up(struct svc *s, struct svc_cm_id *i, uint64_t now)
{
	uint8_t st = i->state;

	i->at = 0;
	if (!i->ctx) {
		id_free(s, i);
		return;
	}
	i->state = CMS_DISCONNECTED;
	switch (st) {
	case CMS_REQ_SENT:
	case CMS_SIDR_SENT:
	case CMS_REP_SENT:
		event(s, i, OVR_CM_EV_UNREACHABLE, -ETIMEDOUT, NULL);
		break;
	case CMS_DREQ_SENT:
		disconnected(s, i, NULL, now);
		break;
	case CMS_DISCONNECTED:
		if (i->tw_exit) {
			i->tw_exit = false;
			event(s, i, OVR_CM_EV_TIMEWAIT_EXIT, 0, NULL);
		}
		break;
	default:
		break;
	}
}

uint64_t svc_cm_poll(struct svc *s, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	struct svc_cm_id *i = s->cm_ids, *n;

	for (; i; i = n) {
		n = i->next;
		if (!i->at)
			continue;
		if (i->at <= now && i->state == CMS_REQ_SENT && i->mra) {
			/* acknowledged: resent slowly until the deadline */
			if (now >= i->mra_until) {
				gave_up(s, i, now);
				continue;
			}
			s->cnt.cm_retx++;
			xmit(s, i->vni, i->src_ip, i->dst_ip, &i->out);
			i->at = now + CM_MRA_RESEND_NS < i->mra_until ?
					now + CM_MRA_RESEND_NS :
					i->mra_until;
		} else if (i->at <= now) {
			bool resend = i->state == CMS_REQ_SENT ||
				      i->state == CMS_SIDR_SENT ||
				      i->state == CMS_REP_SENT ||
				      i->state == CMS_DREQ_SENT ||
				      (i->state == CMS_TIMEWAIT &&
				       i->out.type == CM_DREQ && i->tries);

			if (!resend || i->tries >= CM_TRIES) {
				gave_up(s, i, now);
				continue;
			}
			i->tries++;
			s->cnt.cm_retx++;
			xmit(s, i->vni, i->src_ip, i->dst_ip, &i->out);
			i->rto = i->rto * 2 > CM_RTO_MAX_NS ? CM_RTO_MAX_NS :
							      i->rto * 2;
			i->at = now + i->rto;
		}
		if (i->at < next)
			next = i->at;
	}
	s->cm_next_at = next;
	return next;
}
