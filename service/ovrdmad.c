// SPDX-License-Identifier: MIT
/*
 * ovrdmad: the ovrdma node service (docs/SERVICE.md).
 *
 *   ovrdmad [EAL arguments] [-- [-c FILE] [--socket PATH] [--host IP]
 *           [--spin-us N] [--check]]
 *
 * A DPDK primary process with one port: whatever ethdev the EAL
 * arguments (or the configuration's `eal` key) create - a PCI NIC,
 * net_af_xdp on a cloud vNIC, net_memif or net_af_packet in the testbed.
 * The main lcore runs the dataplane, a control thread beside it the
 * control socket (svc_loop.c). SIGTERM and SIGINT stop
 * it cleanly; counters are also exported through DPDK telemetry
 * (/ovrdma/counters). Under systemd (Type=notify, ovrdmad.service) it
 * reports readiness, status and stopping through sd_notify.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_telemetry.h>

#ifdef OVRDMA_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include <ovrdma/wire.h>

#include "svc.h"

#define NB_MBUF 8191
#define NB_DESC 1024
#define TXQ_MAX 64

static struct svc svc;
static int svc_logtype;

#define LOG(level, ...) \
	rte_log(RTE_LOG_##level, svc_logtype, "ovrdmad: " __VA_ARGS__)

/* ---- systemd ------------------------------------------------------------- */

/*
 * sd_notify(3) for ovrdmad.service (Type=notify): READY=1 once the control
 * socket listens and the devices are published, STATUS= lines, STOPPING=1
 * when a signal ends the loop. A no-op outside systemd ($NOTIFY_SOCKET
 * unset) and in builds without libsystemd (-Dsystemd=disabled).
 */
#define STATUS_EVERY_NS 5000000000ull /* STATUS= at most this often */

static void notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void notify(const char *fmt, ...)
{
#ifdef OVRDMA_HAVE_LIBSYSTEMD
	char msg[256];
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sd_notify(0, msg);
	errno = saved;
#else
	(void)fmt;
#endif
}

/*
 * STATUS= for `systemctl status`: devices, contexts, QPs and the link.
 * Called from the dataplane thread's heartbeat tick (every few ms); sends
 * at most every STATUS_EVERY_NS and only what changed: one sendmsg(2)
 * then, never per packet.
 */
static void status_tick(uint64_t now, bool link_up)
{
	static uint64_t last;
	static char prev[160];
	struct ovr_eng_stats es;
	char cur[160];
	unsigned int ndev = 0;

	if (last && now - last < STATUS_EVERY_NS)
		return;
	last = now;
	for (int i = 0; i < SVC_MAX_DEVS; i++)
		ndev += svc.devs[i].used;
	svc_eng_stats(&svc, &es);
	snprintf(cur, sizeof(cur),
		 "STATUS=serving %u devices, %u contexts, %llu QPs; port %s",
		 ndev, svc.nctx, (unsigned long long)es.qps,
		 link_up ? "up" : "DOWN");
	if (strcmp(cur, prev)) {
		memcpy(prev, cur, sizeof(prev));
		notify("%s", cur);
	}
}

/* ---- the DPDK port ------------------------------------------------------- */

/* One queue pair's own: its dataplane core's alone. */
struct dport_q {
	struct rte_mbuf *txq[TXQ_MAX];
	unsigned int ntx;
	int intr_fd;
	uint64_t tx_dropped;
	uint64_t rx_multiseg;
} __rte_cache_aligned;

struct dport {
	uint16_t id;
	uint16_t nq; /* queue pairs: queue q is dataplane core q's */
	struct rte_mempool *mp;
	struct dport_q *q; /* [nq] */
	/* af_xdp (no receive interrupts in DPDK 22.11): its XDP socket,
	 * readable while frames wait in its ring, watched through an epoll
	 * set of our own (q[0].intr_fd) only while the loop sleeps; one
	 * queue */
	int xsk_fd;
	bool memif; /* a memif client (role=client, memif's default) */
	bool started; /* false after a restart that failed: no burst calls */
	uint64_t down_since;
};

static unsigned int p_rx(void *port, unsigned int q, void **bufs,
			 const uint8_t **frames, uint32_t *lens, unsigned int n)
{
	struct dport *p = port;
	struct rte_mbuf *m[32];
	unsigned int got, k = 0;

	if (!p->started)
		return 0;
	if (n > 32)
		n = 32;
	got = rte_eth_rx_burst(p->id, (uint16_t)q, m, (uint16_t)n);
	for (unsigned int i = 0; i < got; i++) {
		if (m[i]->nb_segs > 1 && rte_pktmbuf_linearize(m[i])) {
			p->q[q].rx_multiseg++;
			rte_pktmbuf_free(m[i]);
			continue;
		}
		bufs[k] = m[i];
		frames[k] = rte_pktmbuf_mtod(m[i], const uint8_t *);
		lens[k] = m[i]->data_len;
		k++;
	}
	return k;
}

static void p_rx_done(void *port, void **bufs, unsigned int n)
{
	(void)port;
	rte_pktmbuf_free_bulk((struct rte_mbuf **)bufs, n);
}

static uint8_t *p_tx_alloc(void *port, uint32_t cap, void **buf)
{
	struct dport *p = port;
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->mp);

	if (!m)
		return NULL;
	if (rte_pktmbuf_headroom(m) < OVR_WIRE_ENCAP_LEN ||
	    rte_pktmbuf_tailroom(m) < cap) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	*buf = m;
	return rte_pktmbuf_mtod(m, uint8_t *);
}

static uint8_t *p_buf_data(void *port, void *buf)
{
	(void)port;
	return rte_pktmbuf_mtod((struct rte_mbuf *)buf, uint8_t *);
}

static void p_flush(void *port, unsigned int q)
{
	struct dport *p = port;
	struct dport_q *pq = &p->q[q];
	unsigned int sent = 0;

	/* a full TX ring: a few tries, then drop (the transport resends) */
	for (int tries = 0; p->started && sent < pq->ntx && tries < 4; tries++)
		sent += rte_eth_tx_burst(p->id, (uint16_t)q, pq->txq + sent,
					 (uint16_t)(pq->ntx - sent));
	if (sent < pq->ntx) {
		pq->tx_dropped += pq->ntx - sent;
		rte_pktmbuf_free_bulk(pq->txq + sent, pq->ntx - sent);
	}
	pq->ntx = 0;
}

static void p_tx(void *port, unsigned int q, void *buf, uint8_t *frame,
		 uint32_t len)
{
	struct dport *p = port;
	struct dport_q *pq = &p->q[q];
	struct rte_mbuf *m = buf;

	m->data_off = (uint16_t)(frame - (uint8_t *)m->buf_addr);
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	pq->txq[pq->ntx++] = m;
	if (pq->ntx == TXQ_MAX)
		p_flush(p, q);
}

static unsigned int p_queues(void *port)
{
	return ((struct dport *)port)->nq;
}

static void p_tx_free(void *port, void *buf)
{
	(void)port;
	rte_pktmbuf_free(buf);
}

static int p_rx_intr_fd(void *port, unsigned int q)
{
	return ((struct dport *)port)->q[q].intr_fd;
}

static void p_rx_intr(void *port, unsigned int q, bool enable)
{
	struct dport *p = port;

	if (p->xsk_fd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };

		epoll_ctl(p->q[0].intr_fd,
			  enable ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, p->xsk_fd,
			  &ev);
		return;
	}
	if (enable)
		rte_eth_dev_rx_intr_enable(p->id, (uint16_t)q);
	else
		rte_eth_dev_rx_intr_disable(p->id, (uint16_t)q);
}

/* A dataplane thread but the first: an lcore of its own, so that its
 * mbufs come from a mempool cache of its own (else it goes without). */
static void p_thread_init(void *port)
{
	(void)port;
	if (rte_thread_register())
		LOG(WARNING,
		    "dataplane thread: no lcore (%s): mbufs without "
		    "a cache\n",
		    rte_strerror(rte_errno));
}

static void p_rx_intr_ack(void *port, unsigned int q)
{
	struct dport *p = port;
	uint64_t junk;

	/* DPDK's interrupt eventfd counts; the XDP socket's set needs
	 * nothing (its readiness is the ring's, and it left the set) */
	if (p->xsk_fd < 0 && read(p->q[q].intr_fd, &junk, sizeof(junk)) < 0 &&
	    errno != EAGAIN)
		perror("ovrdmad: read");
}

/*
 * The XDP socket net_af_xdp made for the port's one queue: the only
 * AF_XDP socket of the process (ovrdmad drives one port). DPDK 22.11's
 * af_xdp has no receive interrupt, and no call that gives the socket,
 * which poll() reports readable while frames wait in its ring.
 */
static int find_xsk_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name), dom;
		socklen_t len = sizeof(dom);

		if (fd > 2 && fd != dirfd(d) &&
		    !getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) &&
		    dom == AF_XDP) {
			found = fd;
			break;
		}
	}
	closedir(d);
	return found;
}

/* Was this memif port made with role=server (its devargs)? */
static bool memif_server(const struct rte_device *dev)
{
	const struct rte_devargs *da = dev ? rte_dev_devargs(dev) : NULL;

	return da && da->args && strstr(da->args, "role=server");
}

static bool p_link_up(void *port)
{
	struct rte_eth_link link;

	return rte_eth_link_get_nowait(((struct dport *)port)->id, &link) ==
		       0 &&
	       link.link_status == RTE_ETH_LINK_UP;
}

/*
 * A memif client whose server went away (the peer node or the fabric
 * restarted) does not dial again on its own: restart the port after two
 * seconds without link so that it does. A server (the testbed's direct
 * wire) keeps listening: restarting it would close the socket its
 * client is dialling.
 */
static void p_tick(void *port, uint64_t now)
{
	struct dport *p = port;
	bool up = p_link_up(p);

	/* the loop's one periodic hook in ovrdmad: also systemd's status */
	status_tick(now, up);
	if (!p->memif || up) {
		p->down_since = 0;
		return;
	}
	if (!p->down_since) {
		p->down_since = now;
	} else if (now - p->down_since > 2000000000ull) {
		LOG(INFO, "port %u: link down for 2 s, restarting it\n", p->id);
		if (p->started)
			rte_eth_dev_stop(p->id);
		/* the peer may not listen yet: try again in 2 s */
		p->started = rte_eth_dev_start(p->id) == 0;
		p->down_since = now;
	}
}

static void p_stats(void *port, struct svc_port_stats *st)
{
	struct dport *p = port;
	struct rte_eth_stats es;

	st->tx_dropped = 0;
	for (unsigned int q = 0; q < p->nq; q++)
		st->tx_dropped += p->q[q].tx_dropped;
	if (rte_eth_stats_get(p->id, &es) == 0)
		st->rx_missed = es.imissed + es.rx_nombuf;
}

struct buf_mem_walk {
	int (*fn)(void *arg, void *addr, size_t len);
	void *arg;
	int rc;
};

static void buf_mem_chunk(struct rte_mempool *mp, void *opaque,
			  struct rte_mempool_memhdr *memhdr, unsigned int idx)
{
	struct buf_mem_walk *w = opaque;

	(void)mp;
	(void)idx;
	if (!w->rc)
		w->rc = w->fn(w->arg, memhdr->addr, memhdr->len);
}

/* The mbuf pool's memory chunks: every frame buffer, both ways. */
static int p_buf_mem(void *port, int (*fn)(void *arg, void *addr, size_t len),
		     void *arg)
{
	struct dport *p = port;
	struct buf_mem_walk w = { .fn = fn, .arg = arg };

	rte_mempool_mem_iter(p->mp, buf_mem_chunk, &w);
	return w.rc;
}

static const struct svc_port_ops dport_ops = {
	.buf_mem = p_buf_mem,
	.stats = p_stats,
	.link_up = p_link_up,
	.tick = p_tick,
	.rx = p_rx,
	.rx_done = p_rx_done,
	.tx_alloc = p_tx_alloc,
	.buf_data = p_buf_data,
	.tx = p_tx,
	.tx_free = p_tx_free,
	.flush = p_flush,
	.queues = p_queues,
	.rx_intr_fd = p_rx_intr_fd,
	.rx_intr = p_rx_intr,
	.rx_intr_ack = p_rx_intr_ack,
	.thread_init = p_thread_init,
};

/*
 * Steering on a NIC (docs/SERVICE.md section 5, "Port queues"): a flow
 * rule per queue q sends the ovrdma frames whose outer UDP source port
 * names core q in bits 10..13 (ovr_vpc_set_steer) to queue q, so that
 * each lands on the core serving its QP; the rest goes by RSS. Where the
 * driver has no such rules (memif, af_packet: the wire or the fabric
 * puts frames on their queue) the reason is logged and nothing else
 * changes. Not tried on a NIC yet: this machine has none.
 */
static void port_flows(struct dport *p, const char *driver)
{
	struct rte_flow_error err = { 0 };
	uint16_t q;

	for (q = 0; q < p->nq; q++) {
		const struct rte_flow_attr attr = { .ingress = 1 };
		const struct rte_flow_item_udp spec = {
			.hdr.src_port = rte_cpu_to_be_16(
				(uint16_t)(q << OVR_VPC_STEER_SHIFT)),
			.hdr.dst_port =
				rte_cpu_to_be_16(OVR_WIRE_VXLAN_GPE_PORT),
		};
		const struct rte_flow_item_udp mask = {
			.hdr.src_port = rte_cpu_to_be_16(
				(uint16_t)(OVR_VPC_STEER_MASK
					   << OVR_VPC_STEER_SHIFT)),
			.hdr.dst_port = rte_cpu_to_be_16(0xffff),
		};
		const struct rte_flow_item pattern[] = {
			{ .type = RTE_FLOW_ITEM_TYPE_ETH },
			{ .type = RTE_FLOW_ITEM_TYPE_IPV4 },
			{ .type = RTE_FLOW_ITEM_TYPE_UDP,
			  .spec = &spec,
			  .mask = &mask },
			{ .type = RTE_FLOW_ITEM_TYPE_END },
		};
		const struct rte_flow_action_queue qa = { .index = q };
		const struct rte_flow_action actions[] = {
			{ .type = RTE_FLOW_ACTION_TYPE_QUEUE, .conf = &qa },
			{ .type = RTE_FLOW_ACTION_TYPE_END },
		};

		if (rte_flow_validate(p->id, &attr, pattern, actions, &err) ||
		    !rte_flow_create(p->id, &attr, pattern, actions, &err))
			break;
	}
	if (q == p->nq) {
		LOG(INFO,
		    "port %u: a flow rule per queue: frames steered to "
		    "the core serving their QP\n",
		    p->id);
		return;
	}
	rte_flow_flush(p->id, NULL);
	LOG(INFO,
	    "port %u (%s): no steering rules (%s): frames land on the queue "
	    "the driver or the wire picks (their core's where the wire "
	    "steers, as the fabric does; else they are handed over)\n",
	    p->id, driver, err.message ? err.message : rte_strerror(rte_errno));
}

/*
 * The port, with @nq queue pairs asked for (@automatic: the dataplane
 * cores', taken only where the driver hashes over UDP ports, a NIC: a
 * memif's peer must have as many, so it gets them only when asked) (port_queues, at most the
 * dataplane cores): as many as the driver has, one for af_xdp (its one
 * XDP socket). Several: RSS over the outer UDP ports where the driver
 * hashes (a NIC; the per-QP flow hash sets the source port), else the
 * driver's own spread (memif: the peer's queue q lands on ours).
 */
static int port_setup(struct dport *p, uint32_t frame_max, bool intr,
		      uint32_t nq, bool automatic)
{
	struct rte_eth_conf conf = { 0 };
	struct rte_eth_dev_info info;
	uint32_t room;
	int rc;

	if (rte_eth_dev_count_avail() < 1) {
		LOG(ERR, "no port: give one with EAL arguments, e.g. "
			 "--vdev=net_memif0,socket=/run/ovrdma/n0.sock "
			 "or a PCI address\n");
		return -ENODEV;
	}
	p->xsk_fd = -1;
	p->id = (uint16_t)rte_eth_find_next(0);
	rc = rte_eth_dev_info_get(p->id, &info);
	if (rc)
		return rc;
	/* af_packet wants room for its whole frame slot (framesz, 2 KB by
	 * default, 9216 for jumbo frames): round up to whole kilobytes */
	room = (frame_max + 256 + 1023) & ~1023u;
	if (room < 2048)
		room = 2048;
	if (!strcmp(info.driver_name, "net_af_xdp")) {
		/* af_xdp lays its umem over the pool, one object per 4 KiB
		 * page (the kernel's largest chunk): a frame then gets what
		 * the object leaves, less XDP's own 256-byte headroom */
		struct rte_mempool_objsz sz;
		const uint32_t fixed = (uint32_t)sizeof(struct rte_mbuf) +
				       RTE_PKTMBUF_HEADROOM;

		for (room = 4096 - fixed; room > 1024; room -= 64)
			if (rte_mempool_calc_obj_size(fixed + room, 0, &sz) <=
			    4096)
				break;
		if (frame_max > room - 256)
			LOG(WARNING,
			    "af_xdp: frames of %u bytes, the port takes %u: "
			    "set underlay_mtu to %u at most\n",
			    frame_max, room - 256, room - 256 - 14);
	}
	if (automatic &&
	    !(info.flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV4_UDP))
		nq = 1;
	if (nq > info.max_rx_queues)
		nq = info.max_rx_queues;
	if (nq > info.max_tx_queues)
		nq = info.max_tx_queues;
	if (nq > 1 && !strcmp(info.driver_name, "net_af_xdp")) {
		LOG(INFO, "af_xdp: one port queue (port_queues %u asked)\n",
		    nq);
		nq = 1;
	}
	if (nq < 1)
		nq = 1;
	p->nq = (uint16_t)nq;
	p->q = aligned_alloc(RTE_CACHE_LINE_SIZE, nq * sizeof(*p->q));
	if (!p->q)
		return -ENOMEM;
	memset(p->q, 0, nq * sizeof(*p->q));
	for (unsigned int q = 0; q < nq; q++)
		p->q[q].intr_fd = -1;
	/* every queue's rings full, both ways, and the frames in flight */
	p->mp = rte_pktmbuf_pool_create(
		"ovrdma_mbuf", NB_MBUF + (nq - 1) * 2 * NB_DESC, 256, 0,
		(uint16_t)(RTE_PKTMBUF_HEADROOM + room), (int)rte_socket_id());
	if (!p->mp) {
		LOG(ERR, "mbuf pool: %s\n", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	conf.intr_conf.rxq = intr ? 1 : 0;
	if (nq > 1 &&
	    (info.flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV4_UDP)) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf =
			info.flow_type_rss_offloads &
			(RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_IPV4);
	}
	rc = rte_eth_dev_configure(p->id, p->nq, p->nq, &conf);
	if (rc && intr) {
		conf.intr_conf.rxq = 0;
		rc = rte_eth_dev_configure(p->id, p->nq, p->nq, &conf);
	}
	if (rc)
		return rc;
	if (rte_eth_dev_set_mtu(p->id, (uint16_t)(frame_max - 14)))
		LOG(INFO,
		    "port MTU %u not accepted (driver %s): frames "
		    "larger than the port's may be dropped\n",
		    frame_max - 14, info.driver_name);
	rc = 0;
	for (uint16_t q = 0; q < p->nq && !rc; q++) {
		rc = rte_eth_rx_queue_setup(
			p->id, q, NB_DESC,
			(unsigned int)rte_eth_dev_socket_id(p->id), NULL,
			p->mp);
		if (!rc)
			rc = rte_eth_tx_queue_setup(
				p->id, q, NB_DESC,
				(unsigned int)rte_eth_dev_socket_id(p->id),
				NULL);
	}
	if (!rc)
		rc = rte_eth_dev_start(p->id);
	if (rc)
		return rc;
	p->started = true;
	if (p->nq > 1)
		port_flows(p, info.driver_name);
	rte_eth_promiscuous_enable(p->id);
	p->memif = !strcmp(info.driver_name, "net_memif") &&
		   !memif_server(info.device);
	if (intr && !strcmp(info.driver_name, "net_af_xdp")) {
		p->xsk_fd = find_xsk_fd();
		if (p->xsk_fd >= 0)
			p->q[0].intr_fd = epoll_create1(EPOLL_CLOEXEC);
		if (p->q[0].intr_fd < 0)
			p->xsk_fd = -1;
	} else if (conf.intr_conf.rxq) {
		for (uint16_t q = 0; q < p->nq; q++) {
			int fd = rte_eth_dev_rx_intr_ctl_q_get_fd(p->id, q);

			if (fd >= 0 &&
			    rte_eth_dev_rx_intr_enable(p->id, q) == 0) {
				rte_eth_dev_rx_intr_disable(p->id, q);
				p->q[q].intr_fd = fd;
			}
		}
	}
	LOG(INFO, "port %u (%s): %u queue pair%s%s, receive interrupts %s\n",
	    p->id, info.driver_name, p->nq, p->nq > 1 ? "s" : "",
	    p->nq < 2				     ? "" :
	    conf.rxmode.mq_mode == RTE_ETH_MQ_RX_RSS ? " (RSS)" :
						       " (the driver's spread)",
	    p->xsk_fd >= 0	 ? "on (its XDP socket)" :
	    p->q[0].intr_fd >= 0 ? "on" :
				   "off (idle naps of at most 1 ms)");
	return 0;
}

/* ---- telemetry ----------------------------------------------------------- */

/* Per-QP state is read with the dataplane parked (svc_qp_snapshot): the
 * telemetry thread never reads the engine while it runs. */
#define TEL_MAX_QPS 512 /* RTE_TEL_MAX_ARRAY_ENTRIES */

static int tel_qps(const char *cmd, const char *params, struct rte_tel_data *d)
{
	static struct svc_qp_snap snap[TEL_MAX_QPS];
	int n = svc_qp_snapshot(&svc, 0, snap, TEL_MAX_QPS, 500);

	(void)cmd;
	(void)params;
	if (n < 0)
		return n;
	rte_tel_data_start_array(d, RTE_TEL_U64_VAL);
	for (int i = 0; i < n; i++)
		rte_tel_data_add_array_u64(d, snap[i].qpn);
	return 0;
}

static int tel_qp(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct svc_qp_snap q;
	char *end;
	unsigned long qpn;
	int n;

	(void)cmd;
	if (!params || !*params)
		return -EINVAL;
	qpn = strtoul(params, &end, 0);
	if (*end || qpn == 0 || qpn > 0xffffff)
		return -EINVAL;
	n = svc_qp_snapshot(&svc, (uint32_t)qpn, &q, 1, 500);
	if (n <= 0)
		return n < 0 ? n : -ENOENT;
	rte_tel_data_start_dict(d);
#define Q(name, v) rte_tel_data_add_dict_u64(d, name, (uint64_t)(v))
	Q("context", q.ctx);
	Q("qpn", q.qpn);
	Q("dest_qpn", q.dest_qpn);
	Q("peer_vip", q.peer_vip);
	Q("state", q.st.state);
	Q("snd_una", q.st.snd_una);
	Q("snd_nxt", q.st.snd_nxt);
	Q("rcv_nxt", q.st.rcv_nxt);
	Q("inflight_pkts", q.st.inflight_pkts);
	Q("cwnd_bytes", q.st.cwnd_bytes);
	Q("srtt_ns", q.st.srtt_ns);
	Q("rto_ns", q.st.rto_ns);
	Q("tx_pkts", q.st.tx_pkts);
	Q("tx_bytes", q.st.tx_bytes);
	Q("rx_pkts", q.st.rx_pkts);
	Q("rx_bytes", q.st.rx_bytes);
	Q("retx_pkts", q.st.retx_pkts);
	Q("rto_count", q.st.rto_count);
	Q("tlp_count", q.st.tlp_count);
	Q("resp_probes", q.st.resp_probes);
	Q("resp_resend_revoked", q.st.resp_resend_revoked);
	Q("rack_lost", q.st.rack_lost);
	Q("rx_dup", q.st.rx_dup);
	Q("rx_ooo", q.st.rx_ooo);
	Q("rnr_naks_sent", q.st.rnr_naks_sent);
	Q("rnr_naks_rcvd", q.st.rnr_naks_rcvd);
#undef Q
	return 0;
}

static int tel_counters(const char *cmd, const char *params,
			struct rte_tel_data *d)
{
	struct svc_counters sum;
	const struct svc_counters *k = &sum;

	(void)cmd;
	(void)params;
	svc_counters_sum(&svc, &sum);
	rte_tel_data_start_dict(d);
#define T(f) rte_tel_data_add_dict_u64(d, #f, k->f)
	T(rx_frames);
	T(rx_bytes);
	T(tx_frames);
	T(tx_bytes);
	T(rx_dropped_vpc);
	T(rx_short_pdu);
	T(rx_no_qp);
	T(rx_foreign);
	T(tx_no_route);
	T(tx_answers);
	T(tx_loopback);
	T(tx_loopback_full);
	T(tx_nobuf);
	T(wqe_bad);
	T(cq_overflows);
	T(sleeps);
	T(wakeups);
	T(busy_rounds);
	T(busy_ns);
	T(poll_ns);
	T(busy_smp_ns);
	T(busy_smp_cpu_ns);
	T(poll_smp_ns);
	T(poll_smp_cpu_ns);
	T(ctx_opened);
	T(ctx_closed);
#undef T
	rte_tel_data_add_dict_u64(d, "contexts", svc.nctx);
	return 0;
}

/* ---- main ---------------------------------------------------------------- */

static void on_signal(int sig)
{
	(void)sig;
	svc.stop = 1;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ovrdmad [EAL arguments] -- [-c FILE] [--socket PATH] "
		"[--host IP] [--spin-us N] [--check]\n"
		"  -c, --config FILE  configuration (default "
		"/etc/ovrdma/ovrdmad.conf; docs/SERVICE.md)\n"
		"  --socket PATH      control socket (overrides the file)\n"
		"  --host IP          underlay address (overrides the file)\n"
		"  --spin-us N        busy-poll this long before sleeping\n"
		"  --check            check the configuration and exit\n");
}

/* The command line: ovrdmad [EAL arguments] [-- our options]. */
struct args {
	const char *conf_path;
	bool conf_given, check;
	const char *sock, *host, *spin;
	int dash; /* argv[dash] is "--", or argc */
};

/* -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option lo[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "host", required_argument, NULL, 'H' },
		{ "spin-us", required_argument, NULL, 'S' },
		{ "check", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int oargc, o;
	char **oargv;

	a->dash = argc;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			a->dash = i;
			break;
		}
	oargc = argc - a->dash;
	oargv = argv + a->dash;
	oargv[0] = argv[0];
	optind = 1;
	while (oargc > 1 &&
	       (o = getopt_long(oargc, oargv, "c:h", lo, NULL)) != -1) {
		switch (o) {
		case 'c':
			a->conf_path = optarg;
			a->conf_given = true;
			break;
		case 's':
			a->sock = optarg;
			break;
		case 'H':
			a->host = optarg;
			break;
		case 'S':
			a->spin = optarg;
			break;
		case 'k':
			a->check = true;
			break;
		default:
			usage();
			return o == 'h' ? 0 : 2;
		}
	}
	if (oargc > 1 && optind < oargc) {
		usage();
		return 2;
	}
	return -1;
}

/* The configuration file, then the command line's overrides: -1 to go
 * on, else the exit status. */
static int load_conf(const struct args *a)
{
	svc_conf_default(&svc.conf);
	if ((a->conf_given || access(a->conf_path, F_OK) == 0) &&
	    svc_conf_load(&svc.conf, a->conf_path))
		return 1;
	if (a->sock)
		snprintf(svc.conf.socket, sizeof(svc.conf.socket), "%s",
			 a->sock);
	if (a->host && svc_parse_ipv4(a->host, &svc.conf.host)) {
		fprintf(stderr, "ovrdmad: --host: not an IPv4 address\n");
		return 2;
	}
	if (a->spin)
		svc.conf.spin_us = (uint32_t)strtoul(a->spin, NULL, 0);
	if (!svc.conf.host) {
		fprintf(stderr, "ovrdmad: no underlay address: set host= in "
				"[service] or --host\n");
		return 1;
	}
	if (ovr_vpc_pdu_mtu(svc.conf.underlay_mtu) <
	    (int)(256 + OVR_VPC_PDU_DATA_OVERHEAD)) {
		fprintf(stderr, "ovrdmad: underlay_mtu %u is too small\n",
			svc.conf.underlay_mtu);
		return 1;
	}
	if (a->check) {
		printf("ovrdmad: %s: OK\n", a->conf_path);
		return 0;
	}
	return -1;
}

/* EAL: argv[0], the configuration's eal words, then ours (before "--");
 * *@ealbuf holds the words until the end. */
static int eal_start(char **argv, int dash, char **ealbuf)
{
	char *eal_argv[128], *save = NULL;
	int eal_argc = 0;

	eal_argv[eal_argc++] = argv[0];
	*ealbuf = strdup(svc.conf.eal);
	for (char *t = strtok_r(*ealbuf, " \t", &save); t && eal_argc < 100;
	     t = strtok_r(NULL, " \t", &save))
		eal_argv[eal_argc++] = t;
	for (int i = 1; i < dash && eal_argc < 127; i++)
		eal_argv[eal_argc++] = argv[i];
	eal_argv[eal_argc] = NULL;
	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		fprintf(stderr, "ovrdmad: EAL: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	svc_logtype = rte_log_register_type_and_pick_level("ovrdma.svc",
							   RTE_LOG_INFO);
	if (svc_logtype < 0)
		svc_logtype = RTE_LOGTYPE_USER1;
	return 0;
}

/* One dataplane core's figures (as ovrdmactl show cores), read while it
 * runs: 64-bit words, each whole. Parameter: the core's number. */
static int tel_core(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct svc_core *k;
	struct ovr_eng_stats es;
	char *end;
	unsigned long i;

	(void)cmd;
	if (!params || !*params)
		return -EINVAL;
	i = strtoul(params, &end, 0);
	if (*end || i >= svc.ncores)
		return -EINVAL;
	k = &svc.core[i];
	ovr_eng_get_stats(k->eng, &es);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "core", i);
	rte_tel_data_add_dict_u64(d, "contexts", k->nctx);
	rte_tel_data_add_dict_u64(d, "qps", es.qps);
	rte_tel_data_add_dict_u64(d, "busy_rounds", k->cnt.busy_rounds);
	rte_tel_data_add_dict_u64(d, "busy_ns", k->cnt.busy_ns);
	rte_tel_data_add_dict_u64(d, "poll_ns", k->cnt.poll_ns);
	rte_tel_data_add_dict_u64(d, "rx_frames", k->cnt.rx_frames);
	rte_tel_data_add_dict_u64(d, "tx_frames", k->cnt.tx_frames);
	rte_tel_data_add_dict_u64(d, "engine_tx_pkts", es.tx_pkts);
	rte_tel_data_add_dict_u64(d, "engine_rx_pkts", es.rx_pkts);
	rte_tel_data_add_dict_u64(d, "xcore_frames", k->cnt.xcore_frames);
	rte_tel_data_add_dict_u64(d, "xcore_full", k->cnt.xcore_full);
	rte_tel_data_add_dict_u64(d, "sleeps", k->cnt.sleeps);
	rte_tel_data_add_dict_u64(d, "engine_dev_copies", es.dev_copies);
	return 0;
}

static void telemetry_register(void)
{
	rte_telemetry_register_cmd("/ovrdma/core", tel_core,
				   "One dataplane core's figures. Parameter: "
				   "core number (0 .. dataplane_cores - 1)");
	rte_telemetry_register_cmd("/ovrdma/counters", tel_counters,
				   "ovrdmad counters. No parameters");
	rte_telemetry_register_cmd("/ovrdma/qps", tel_qps,
				   "QP numbers of every QP. No parameters");
	rte_telemetry_register_cmd("/ovrdma/qp", tel_qp,
				   "One QP's state and counters. Parameter: "
				   "QP number");
}

int main(int argc, char **argv)
{
	struct args a = { .conf_path = "/etc/ovrdma/ovrdmad.conf" };
	char *ealbuf = NULL;
	struct dport port = { 0 };
	struct rte_ether_addr mac;
	struct sigaction sa = { .sa_handler = on_signal };
	cpu_set_t given, main_cpus;
	int rc;

	rc = parse_args(argc, argv, &a);
	if (rc < 0)
		rc = load_conf(&a);
	if (rc >= 0)
		return rc;
	/* the CPUs ovrdmad is given: before EAL pins this thread */
	CPU_ZERO(&given);
	if (sched_getaffinity(0, sizeof(given), &given))
		CPU_ZERO(&given);
	if (!svc.conf.dp_cores)
		svc.conf.dp_cores = svc_cores_auto(&given);
	if (eal_start(argv, a.dash, &ealbuf))
		return 1;

	/* a pair per core, or one per pair of cores to steer (svc.h) */
	rc = port_setup(
		&port, svc.conf.underlay_mtu + 14, true,
		!svc.conf.port_queues ? svc.conf.dp_cores :
		svc.conf.port_queues < svc.conf.dp_cores * svc.conf.dp_cores ?
					svc.conf.port_queues :
					svc.conf.dp_cores * svc.conf.dp_cores,
		!svc.conf.port_queues);
	if (rc) {
		LOG(ERR, "port setup: %s\n", strerror(rc < 0 ? -rc : rc));
		rte_eal_cleanup();
		return 1;
	}
	rte_eth_macaddr_get(port.id, &mac);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	rc = svc_init(&svc, &dport_ops, &port, mac.addr_bytes);
	if (rc) {
		LOG(ERR, "start: %s\n", strerror(-rc));
		svc_fini(&svc);
		rte_eal_cleanup();
		return 1;
	}
	/* the threads' CPUs (svc_cpu.c): core 0 where EAL pinned it */
	if (CPU_COUNT(&given)) {
		int cpus[SVC_MAX_CORES];
		char gl[256], ml[256];

		CPU_ZERO(&main_cpus);
		if (sched_getaffinity(0, sizeof(main_cpus), &main_cpus))
			CPU_ZERO(&main_cpus);
		svc.cpus = given;
		svc_cpu_plan(svc.ncores, &given, &main_cpus, cpus,
			     &svc.ctl_cpu);
		for (uint32_t i = 0; i < svc.ncores; i++)
			svc.core[i].cpu = cpus[i];
		svc_cpu_list(&given, gl, sizeof(gl));
		svc_cpu_list(&main_cpus, ml, sizeof(ml));
		LOG(INFO,
		    "%u dataplane cores on CPUs %s (core 0 on %s), control "
		    "thread on %d (-1: any)\n",
		    svc.ncores, gl, ml, svc.ctl_cpu);
	}
	telemetry_register();
	LOG(INFO, "serving %s (host %u.%u.%u.%u, underlay MTU %u, cc %s)\n",
	    svc.conf.socket, svc.conf.host >> 24, (svc.conf.host >> 16) & 255,
	    (svc.conf.host >> 8) & 255, svc.conf.host & 255,
	    svc.conf.underlay_mtu, svc.conf.cc);
	notify("READY=1\nSTATUS=serving %s", svc.conf.socket);
	svc_run(&svc);
	notify("STOPPING=1\nSTATUS=stopping: closing %u contexts", svc.nctx);
	LOG(INFO, "stopping: %u contexts closed\n", svc.nctx);
	svc_fini(&svc);
	if (port.started)
		rte_eth_dev_stop(port.id);
	rte_eth_dev_close(port.id);
	if (port.xsk_fd >= 0)
		close(port.q[0].intr_fd);
	free(port.q);
	/*
	 * memif finishes tearing down its control channel from the EAL
	 * interrupt thread; rte_eal_cleanup() (22.11) unmaps memory without
	 * waiting for that thread, which then crashes. Let it finish first.
	 */
	usleep(100000);
	rte_eal_cleanup();
	free(ealbuf);
	return 0;
}
