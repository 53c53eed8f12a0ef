// SPDX-License-Identifier: MIT
/*
 * ovrdma-fabric: a lossy switch between DPDK ports (docs/FABRIC.md).
 *
 *   ovrdma-fabric [EAL args] -- [--seed N] [--link PORT|all:key=val,...]
 *                 [--route IP=PORT[,MAC]] [--ctl PATH] [--pidfile PATH]
 *                 [--arp-proxy] [--no-learn] [--max-frame N]
 *                 [--idle-us N] [--deep-idle-us N] [--spin-us N]
 *                 [--queues N] [--workers N]
 *   ovrdma-fabric ctl PATH COMMAND...     (a client of the control socket)
 *
 * Every ethdev the EAL arguments create is a port (e.g. one
 * --vdev=net_memifN,role=server,socket=...,id=0 per node, or
 * --vdev=net_af_packetN,iface=vethX). The switching and impairments are in
 * fabric.c; this file moves frames between the ports and that core in
 * polling threads, the workers (--workers, default 1), each of which sleeps
 * when idle: it spins for --spin-us, then waits in epoll on the Rx
 * interrupts of its queues where the ports have them (worker 0 also on the
 * control socket and the signals), for at most --idle-us (--deep-idle-us
 * after a long silence) when some queue must be polled, and never past the
 * time the next delayed frame falls due.
 *
 * Several workers (docs/FABRIC.md, "Workers"): worker w receives on queue q
 * of every port where q % workers == w, through a switching core of its
 * own (fabric.c is not thread-safe): its own egress links (each with its
 * own PRNG stream, the seed plus w; a link's rate and buffer are per
 * worker, so a port carries up to workers x rate) and its own copy of the
 * routes, which share what they learn through a log (learn_log). A frame
 * due leaves on the queue its outer source port names, whichever worker
 * owns it, the send under that queue's spinlock. The control socket
 * changes every worker's core alike, each under its worker's mutex, and
 * reads the counters as their sums.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_epoll.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_spinlock.h>

#include "fabric.h"

#include <ovrdma/util.h>
#include <ovrdma/vpc.h>

#define BURST 32
#define TXQ_MAX 64 /* frames waiting for a full Tx ring, per port */
#define TX_STUCK_NS 10000000 /* a ring full that long: discard */
#define NB_RXD 256
#define NB_TXD 256
#define MAX_QUEUES 16 /* --queues */
#define MAX_WORKERS MAX_QUEUES /* --workers: at most one per queue */
#define LEARN_LOG 4096 /* routes learned, kept for the other workers */
#define MAX_CLIENTS 16
#define CLIENT_BUF 4096

enum { TAG_SIGNAL = 1, TAG_LISTEN, TAG_DPDK, TAG_CLIENT, TAG_WAKE };

struct txq {
	struct rte_mbuf *m[TXQ_MAX];
	uint16_t n;
	uint64_t stuck_since; /* first failed send, 0 when sending */
	bool discard; /* the port takes nothing: drop what falls due */
};

struct client {
	int fd;
	uint32_t tag; /* TAG_CLIENT | index << 8 */
	size_t len;
	char buf[CLIENT_BUF];
};

struct opts {
	uint64_t seed;
	const char *ctl_path;
	const char *pidfile;
	bool arp_proxy;
	bool no_learn;
	uint32_t max_frame;
	uint32_t idle_us;
	uint32_t deep_idle_us;
	uint32_t spin_us;
	char **links;
	int nlinks;
	char **routes;
	int nroutes;
	uint32_t workers;
};

/*
 * A forwarding thread: the receive queues q of every port with q %
 * nworkers == idx, a switching core of its own, and the frames it has
 * taken out of that core for a port's transmit queue, waiting for the
 * ring (txqs[port][queue]: its own, whichever queue).
 */
struct worker {
	unsigned idx;
	struct ovr_fabric *fab;
	/* fab: held for each round, and by the control socket for a change */
	pthread_mutex_t lock;
	struct txq txqs[OVR_FABRIC_MAX_PORTS][MAX_QUEUES];
	int epfd; /* worker 0: the program's; others: dp_epfd and wake_fd */
	int dp_epfd; /* the Rx interrupts of its queues */
	int wake_fd; /* eventfd: stop (workers but 0) */
	bool all_intr; /* every queue it polls has Rx interrupts */
	uint64_t learn_seen; /* learn_log entries applied (learn_n) */
	uint8_t *scratch; /* linearised multi-segment frames */
	pthread_t thread;
	bool started;
};

static struct worker *workers;
static struct ovr_fabric *cores_of[MAX_WORKERS]; /* workers[w].fab, in order */
static uint32_t nworkers = 1;
static struct rte_mempool *pool;
static uint16_t nports;
static uint16_t port_ids[OVR_FABRIC_MAX_PORTS];
static bool port_intr[OVR_FABRIC_MAX_PORTS];
/* --queues: queue pairs per port; a frame leaves on the queue its outer
 * UDP source port names (frame_queue) */
static uint16_t nq = 1;
/* a transmit queue's sends, when several workers share it */
static rte_spinlock_t txlock[OVR_FABRIC_MAX_PORTS][MAX_QUEUES];
static int epfd = -1, sig_fd = -1, listen_fd = -1;
static struct client *clients[MAX_CLIENTS];
static atomic_bool stop;

/* What the workers' cores learned (ovr_fabric_set_learn_hook), for the
 * others: a ring; a worker more than LEARN_LOG behind skips the oldest */
struct learn_ent {
	uint32_t ip;
	uint16_t port;
	uint8_t mac[6];
	unsigned from; /* the worker that learned it */
};
static struct learn_ent learn_log[LEARN_LOG];
static _Atomic uint64_t learn_n;
static pthread_mutex_t learn_lock = PTHREAD_MUTEX_INITIALIZER;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ovrdma-fabric [EAL args] -- [options]\n"
		"       ovrdma-fabric ctl PATH COMMAND...\n"
		"Every port the EAL arguments create (--vdev=net_memif..., "
		"net_af_packet...) is a fabric port.\n"
		"  --seed N              impairment seed (default 1)\n"
		"  --link PORT|all:SPEC  egress link of PORT, SPEC key=val,...:\n"
		"      rate=10g delay=5us jitter=1us fifo=0|1 queue=1m ecn=100k\n"
		"      loss=0.01 ge=P/R[/LOSS_BAD] reorder=P/TIME dup=P\n"
		"      corrupt=P blackhole=0|1 reset\n"
		"  --route IP=PORT[,MAC] static route\n"
		"  --ctl PATH            control socket (see docs/FABRIC.md)\n"
		"  --pidfile PATH        written once the ports are up\n"
		"  --arp-proxy           answer ARP requests for known hosts\n"
		"  --no-learn            static routes only\n"
		"  --max-frame N         largest frame in bytes (default 9216)\n"
		"  --idle-us N           longest idle sleep when polling "
		"(default 100)\n"
		"  --deep-idle-us N      the same after a long silence "
		"(default 1000)\n"
		"  --spin-us N           busy polling after the last frame "
		"(default 20)\n"
		"  --queues N            queue pairs per port, 1..16 (default "
		"1): a frame\n"
		"      leaves on queue (outer UDP source port >> 10) %% N, "
		"the bits\n"
		"      ovrdmad steers by (docs/SERVICE.md section 5)\n"
		"  --workers N           forwarding threads, 1..queues (default "
		"1): worker w\n"
		"      receives on the queues q with q %% N == w (docs/FABRIC.md)"
		"\n");
}

/* ---- Control client: ovrdma-fabric ctl PATH COMMAND... ---------------- */

static int ctl_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "ovrdma-fabric: socket path too long\n");
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "ovrdma-fabric: %s: %s\n", path,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int ctl_client(int argc, char **argv)
{
	char cmd[4096], reply[8192], line[256];
	size_t used = 0, ll = 0;
	bool ok = false;
	ssize_t n;
	int fd, i, rc;

	if (argc < 4) {
		usage(stderr);
		return 2;
	}
	for (i = 3; i < argc; i++) {
		rc = snprintf(cmd + used, sizeof(cmd) - used, "%s%s", argv[i],
			      i + 1 < argc ? " " : "\n");
		if (rc < 0 || (size_t)rc >= sizeof(cmd) - used) {
			fprintf(stderr, "ovrdma-fabric: command too long\n");
			return 2;
		}
		used += (size_t)rc;
	}
	fd = ctl_connect(argv[2]);
	if (fd < 0)
		return 1;
	if (write(fd, cmd, used) != (ssize_t)used) {
		perror("ovrdma-fabric: write");
		close(fd);
		return 1;
	}
	shutdown(fd, SHUT_WR);
	while ((n = read(fd, reply, sizeof(reply))) > 0) {
		fwrite(reply, 1, (size_t)n, stdout);
		/* the answer's last line says "ok" or "error: ..." */
		for (i = 0; i < n; i++) {
			if (reply[i] == '\n') {
				line[ll] = '\0';
				ok = !strcmp(line, "ok");
				ll = 0;
			} else if (ll + 1 < sizeof(line)) {
				line[ll++] = reply[i];
			}
		}
	}
	close(fd);
	return ok ? 0 : 1;
}

/* ---- Options ---------------------------------------------------------- */

static int parse_uint(const char *s, uint64_t max, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return (errno || end == s || *end || *v > max) ? -1 : 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "link", required_argument, NULL, 'l' },
		{ "route", required_argument, NULL, 'r' },
		{ "ctl", required_argument, NULL, 'c' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "arp-proxy", no_argument, NULL, 'a' },
		{ "no-learn", no_argument, NULL, 'n' },
		{ "max-frame", required_argument, NULL, 'm' },
		{ "idle-us", required_argument, NULL, 'i' },
		{ "deep-idle-us", required_argument, NULL, 'D' },
		{ "spin-us", required_argument, NULL, 'S' },
		{ "queues", required_argument, NULL, 'q' },
		{ "workers", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	o->links = calloc((size_t)argc, sizeof(char *));
	o->routes = calloc((size_t)argc, sizeof(char *));
	if (!o->links || !o->routes)
		return -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_uint(optarg, UINT64_MAX, &o->seed))
				goto bad;
			break;
		case 'l':
			o->links[o->nlinks++] = optarg;
			break;
		case 'r':
			o->routes[o->nroutes++] = optarg;
			break;
		case 'c':
			o->ctl_path = optarg;
			break;
		case 'p':
			o->pidfile = optarg;
			break;
		case 'a':
			o->arp_proxy = true;
			break;
		case 'n':
			o->no_learn = true;
			break;
		case 'm':
			if (parse_uint(optarg, 65535, &v) || v < 64)
				goto bad;
			o->max_frame = (uint32_t)v;
			break;
		case 'i':
			if (parse_uint(optarg, 1000000, &v) || !v)
				goto bad;
			o->idle_us = (uint32_t)v;
			break;
		case 'D':
			if (parse_uint(optarg, 1000000, &v) || !v)
				goto bad;
			o->deep_idle_us = (uint32_t)v;
			break;
		case 'S':
			if (parse_uint(optarg, 1000000, &v))
				goto bad;
			o->spin_us = (uint32_t)v;
			break;
		case 'q':
			if (parse_uint(optarg, MAX_QUEUES, &v) || !v)
				goto bad;
			nq = (uint16_t)v;
			break;
		case 'w':
			if (parse_uint(optarg, MAX_WORKERS, &v) || !v)
				goto bad;
			o->workers = (uint32_t)v;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ovrdma-fabric: unexpected '%s'\n",
			argv[optind]);
		return -1;
	}
	if (o->workers > nq) {
		fprintf(stderr,
			"ovrdma-fabric: --workers %u: at most --queues (%u): a "
			"worker polls queues of its own\n",
			o->workers, nq);
		return -1;
	}
	return 0;
bad:
	fprintf(stderr, "ovrdma-fabric: bad value '%s'\n", optarg);
	return -1;
}

/* "PORT|all:key=val,..." */
static int apply_link(const char *arg)
{
	char portstr[16], err[160];
	const char *colon = strchr(arg, ':');
	struct ovr_link_cfg c;
	uint16_t port, q;

	if (!colon || (size_t)(colon - arg) >= sizeof(portstr)) {
		fprintf(stderr, "ovrdma-fabric: --link PORT|all:SPEC\n");
		return -1;
	}
	memcpy(portstr, arg, (size_t)(colon - arg));
	portstr[colon - arg] = '\0';
	if (ovr_fabric_parse_port(cores_of[0], portstr, &port)) {
		fprintf(stderr, "ovrdma-fabric: --link: no port '%s' (0-%u)\n",
			portstr, nports - 1);
		return -1;
	}
	for (q = 0; q < nports; q++) {
		if (port != OVR_FABRIC_ALL && q != port)
			continue;
		ovr_fabric_port_get(cores_of[0], q, &c);
		if (ovr_fabric_parse_link(&c, colon + 1, err, sizeof(err))) {
			fprintf(stderr, "ovrdma-fabric: --link: %s\n", err);
			return -1;
		}
		/* every worker's link alike (each keeps its own stream) */
		for (uint32_t w = 0; w < nworkers; w++) {
			if (ovr_fabric_port_set(cores_of[w], q, &c)) {
				fprintf(stderr,
					"ovrdma-fabric: --link %s: invalid\n",
					arg);
				return -1;
			}
		}
	}
	return 0;
}

/* "IP=PORT[,MAC]": the control command "route IP PORT [MAC]" */
static int apply_route(const char *arg)
{
	char line[128];
	FILE *devnull;
	char *p;
	int rc;

	if (snprintf(line, sizeof(line), "route %s", arg) >= (int)sizeof(line))
		return -1;
	for (p = line; *p; p++)
		if (*p == '=' || *p == ',')
			*p = ' ';
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		return -1;
	rc = ovr_fabric_ctl_n(cores_of, nworkers, line, devnull);
	fclose(devnull);
	if (rc)
		fprintf(stderr, "ovrdma-fabric: --route IP=PORT[,MAC]: '%s'\n",
			arg);
	return rc ? -1 : 0;
}

/* ---- Ports ------------------------------------------------------------ */

static int port_setup(uint16_t pid, uint16_t idx)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	uint16_t nb_rxd = NB_RXD, nb_txd = NB_TXD;
	int rc, attempt;

	rc = rte_eth_dev_info_get(pid, &info);
	if (rc)
		return rc;
	/* with Rx interrupts if the driver takes them, else without */
	for (attempt = 0; attempt < 2; attempt++) {
		memset(&conf, 0, sizeof(conf));
		conf.intr_conf.rxq = attempt == 0;
		rc = rte_eth_dev_configure(pid, nq, nq, &conf);
		if (rc)
			continue;
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(pid, &nb_rxd, &nb_txd);
		for (uint16_t q = 0; q < nq && !rc; q++) {
			rc = rte_eth_rx_queue_setup(pid, q, nb_rxd,
						    rte_eth_dev_socket_id(pid),
						    NULL, pool);
			if (!rc)
				rc = rte_eth_tx_queue_setup(
					pid, q, nb_txd,
					rte_eth_dev_socket_id(pid), NULL);
		}
		if (!rc)
			rc = rte_eth_dev_start(pid);
		if (!rc)
			break;
		rte_eth_dev_stop(pid);
	}
	if (rc)
		return rc;
	rte_eth_promiscuous_enable(pid); /* not every driver can: fine */
	if (conf.intr_conf.rxq) {
		/* a driver without Rx interrupts makes ethdev log an error:
		 * expected here, so not shown */
		int lt = rte_log_register("lib.ethdev");
		int lvl = lt >= 0 ? rte_log_get_level((uint32_t)lt) : -1;

		if (lvl >= 0)
			rte_log_set_level((uint32_t)lt, RTE_LOG_CRIT);
		port_intr[idx] = true;
		for (uint16_t q = 0; q < nq; q++)
			port_intr[idx] &=
				rte_eth_dev_rx_intr_ctl_q(
					pid, q, workers[q % nworkers].dp_epfd,
					RTE_INTR_EVENT_ADD, NULL) == 0;
		if (lvl >= 0)
			rte_log_set_level((uint32_t)lt, (uint32_t)lvl);
	}
	printf("ovrdma-fabric: port %u: %s (%s), %s\n", idx,
	       rte_dev_name(info.device), info.driver_name,
	       port_intr[idx] ? "Rx interrupts" : "polled");
	return 0;
}

/* ---- Control socket --------------------------------------------------- */

static int ep_add(int fd, uint32_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int ctl_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "ovrdma-fabric: --ctl path too long\n");
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 8) ||
	    ep_add(fd, TAG_LISTEN)) {
		fprintf(stderr, "ovrdma-fabric: %s: %s\n", path,
			strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void client_close(unsigned i)
{
	close(clients[i]->fd); /* leaves the epoll set too */
	free(clients[i]);
	clients[i] = NULL;
}

static void client_accept(void)
{
	struct timeval tv = { .tv_sec = 1 };
	unsigned i;
	int fd;

	while ((fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		for (i = 0; i < MAX_CLIENTS && clients[i]; i++)
			;
		if (i == MAX_CLIENTS) {
			close(fd);
			continue;
		}
		clients[i] = calloc(1, sizeof(*clients[i]));
		if (!clients[i]) {
			close(fd);
			continue;
		}
		clients[i]->fd = fd;
		clients[i]->tag = TAG_CLIENT | i << 8;
		/* replies are written blocking, but a client that does not
		 * read cannot hold the fabric up for more than a second */
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (ep_add(fd, clients[i]->tag))
			client_close(i);
	}
}

static void client_command(struct client *c, const char *line)
{
	char *reply = NULL;
	size_t len = 0, off = 0;
	FILE *out = open_memstream(&reply, &len);
	ssize_t n;

	if (!out)
		return;
	/* every worker's core between two of its rounds */
	for (uint32_t w = 0; w < nworkers; w++)
		pthread_mutex_lock(&workers[w].lock);
	if (ovr_fabric_ctl_n(cores_of, nworkers, line, out) == 1)
		stop = true;
	for (uint32_t w = nworkers; w-- > 0;)
		pthread_mutex_unlock(&workers[w].lock);
	fclose(out);
	while (off < len) {
		n = write(c->fd, reply + off, len - off);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	free(reply);
}

static void client_read(unsigned i)
{
	struct client *c = clients[i];
	char *nl;
	ssize_t n;

	n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len,
		 MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0)
		c->len += (size_t)n;
	c->buf[c->len] = '\0';
	while ((nl = strchr(c->buf, '\n'))) {
		*nl = '\0';
		client_command(c, c->buf);
		c->len -= (size_t)(nl + 1 - c->buf);
		memmove(c->buf, nl + 1, c->len + 1);
	}
	if (n <= 0) { /* end of the commands, or an error */
		if (c->len)
			client_command(c, c->buf);
		client_close(i);
	} else if (c->len == sizeof(c->buf) - 1) {
		client_command(c, "error-line-too-long");
		client_close(i);
	}
}

/* ---- Data path -------------------------------------------------------- */

/* learned in @arg's core (a worker): for the others (learn_log) */
static void learn_tell(void *arg, uint32_t ip, uint16_t port,
		       const uint8_t mac[6])
{
	const struct worker *w = arg;
	struct learn_ent *e;
	uint64_t n;

	pthread_mutex_lock(&learn_lock);
	n = atomic_load_explicit(&learn_n, memory_order_relaxed);
	e = &learn_log[n % LEARN_LOG];
	*e = (struct learn_ent){ .ip = ip, .port = port, .from = w->idx };
	memcpy(e->mac, mac, 6);
	atomic_store_explicit(&learn_n, n + 1, memory_order_release);
	pthread_mutex_unlock(&learn_lock);
}

/* what the other workers learned since @w last looked (its lock held) */
static void learn_catch_up(struct worker *w)
{
	uint64_t n = atomic_load_explicit(&learn_n, memory_order_acquire);

	if (n == w->learn_seen)
		return;
	pthread_mutex_lock(&learn_lock);
	n = atomic_load_explicit(&learn_n, memory_order_relaxed);
	if (n - w->learn_seen > LEARN_LOG)
		w->learn_seen = n - LEARN_LOG;
	for (; w->learn_seen < n; w->learn_seen++) {
		const struct learn_ent *e =
			&learn_log[w->learn_seen % LEARN_LOG];

		if (e->from != w->idx)
			ovr_fabric_learn(w->fab, e->ip, e->port, e->mac);
	}
	pthread_mutex_unlock(&learn_lock);
}

static unsigned poll_rx(struct worker *w, uint64_t now)
{
	struct rte_mbuf *bufs[BURST];
	unsigned total = 0;
	uint16_t i, k, n;

	for (i = 0; i < nports; i++) {
		for (uint16_t q = (uint16_t)w->idx; q < nq;
		     q = (uint16_t)(q + nworkers)) {
			n = rte_eth_rx_burst(port_ids[i], q, bufs, BURST);
			for (k = 0; k < n; k++) {
				struct rte_mbuf *m = bufs[k];
				uint32_t len = rte_pktmbuf_pkt_len(m);
				const void *data =
					rte_pktmbuf_mtod(m, const void *);

				if (m->nb_segs > 1) {
					data = len <= ovr_fabric_max_frame(
							      w->fab) ?
						       rte_pktmbuf_read(
							       m, 0, len,
							       w->scratch) :
						       w->scratch;
				}
				ovr_fabric_rx(w->fab, i, data, len, now);
			}
			if (n)
				rte_pktmbuf_free_bulk(bufs, n);
			total += n;
		}
	}
	return total;
}

static void txq_drop(struct worker *w, uint16_t i, uint16_t q)
{
	struct txq *t = &w->txqs[i][q];
	uint64_t bytes = 0;
	uint16_t k;

	for (k = 0; k < t->n; k++)
		bytes += rte_pktmbuf_pkt_len(t->m[k]);
	ovr_fabric_tx_dropped(w->fab, i, t->n, bytes);
	rte_pktmbuf_free_bulk(t->m, t->n);
	t->n = 0;
	t->stuck_since = 0;
}

/*
 * A port whose Tx ring is full keeps its frames waiting (here and, behind
 * them, in the fabric) for up to TX_STUCK_NS; after that, or when it is
 * gone (a memif peer that left), it is in discard mode: whatever falls due
 * for it is dropped and counted in tx_drop until a send succeeds again.
 * With several workers, a queue's sends take its spinlock.
 */
static void txq_flush(struct worker *w, uint16_t i, uint16_t q, uint64_t now)
{
	struct txq *t = &w->txqs[i][q];
	uint16_t sent;

	if (!t->n)
		return;
	if (nworkers > 1) {
		rte_spinlock_lock(&txlock[i][q]);
		sent = rte_eth_tx_burst(port_ids[i], q, t->m, t->n);
		rte_spinlock_unlock(&txlock[i][q]);
	} else {
		sent = rte_eth_tx_burst(port_ids[i], q, t->m, t->n);
	}
	if (sent) {
		t->n -= sent;
		memmove(t->m, t->m + sent, t->n * sizeof(t->m[0]));
		t->stuck_since = t->n ? now : 0;
		t->discard = false;
		return;
	}
	if (!t->stuck_since)
		t->stuck_since = now;
	if (t->discard || now - t->stuck_since > TX_STUCK_NS) {
		t->discard = true;
		txq_drop(w, i, q);
	}
}

/*
 * The queue a frame leaves on: bits 10..13 of its outer UDP source port,
 * where ovrdmad with several cores puts the core that serves the
 * destination QP (ovr_vpc_set_steer; the rest is its flow hash), modulo
 * the queues; queue 0 for anything else. A NIC does the same with a
 * flow rule.
 */
static uint16_t frame_queue(const uint8_t *b, uint32_t len)
{
	uint32_t l4;

	if (nq == 1 || len < 14 + 20 + 8 || b[12] != 0x08 || b[13] != 0 ||
	    b[14] >> 4 != 4 || b[14 + 9] != 17)
		return 0;
	l4 = 14 + 4u * (b[14] & 0xf);
	if (len < l4 + 8)
		return 0;
	return (uint16_t)(((b[l4] << 8 | b[l4 + 1]) >> OVR_VPC_STEER_SHIFT &
			   OVR_VPC_STEER_MASK) %
			  nq);
}

/* Several queues: each frame due goes on its queue, or is dropped when
 * that queue's ring stays full (the transport recovers). */
static unsigned poll_tx_queues(struct worker *w, uint16_t i, uint64_t now)
{
	uint32_t len;
	unsigned total = 0;
	uint16_t q;

	for (q = 0; q < nq; q++)
		txq_flush(w, i, q, now);
	while (ovr_fabric_port_next_ns(w->fab, i) <= now) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
		struct txq *t;

		if (!m)
			break; /* try again on the next round */
		if (ovr_fabric_recv(w->fab, i, now, rte_pktmbuf_mtod(m, void *),
				    rte_pktmbuf_tailroom(m), &len) != 1) {
			rte_pktmbuf_free(m);
			break;
		}
		total++;
		q = frame_queue(rte_pktmbuf_mtod(m, const uint8_t *), len);
		t = &w->txqs[i][q];
		if (t->n == TXQ_MAX)
			txq_flush(w, i, q, now);
		if (t->n == TXQ_MAX) {
			ovr_fabric_tx_dropped(w->fab, i, 1, len);
			rte_pktmbuf_free(m);
			continue;
		}
		m->data_len = (uint16_t)len;
		m->pkt_len = len;
		t->m[t->n++] = m;
	}
	for (q = 0; q < nq; q++)
		txq_flush(w, i, q, now);
	return total;
}

/* Frames due by @now from @w's core to the ports. */
static unsigned poll_tx(struct worker *w, uint64_t now)
{
	uint32_t cap = ovr_fabric_max_frame(w->fab), len;
	unsigned total = 0;
	uint16_t i;

	for (i = 0; i < nports; i++) {
		struct txq *t = &w->txqs[i][0];

		if (nq > 1) {
			total += poll_tx_queues(w, i, now);
			continue;
		}
		txq_flush(w, i, 0, now);
		while (t->n < TXQ_MAX &&
		       ovr_fabric_port_next_ns(w->fab, i) <= now) {
			struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

			if (!m)
				break; /* try again on the next round */
			if (ovr_fabric_recv(
				    w->fab, i, now, rte_pktmbuf_mtod(m, void *),
				    rte_pktmbuf_tailroom(m), &len) != 1) {
				rte_pktmbuf_free(m);
				break;
			}
			m->data_len = (uint16_t)len;
			m->pkt_len = len;
			t->m[t->n++] = m;
			total++;
		}
		txq_flush(w, i, 0, now);
		while (t->discard &&
		       ovr_fabric_port_next_ns(w->fab, i) <= now &&
		       ovr_fabric_recv(w->fab, i, now, w->scratch, cap, &len) ==
			       1) {
			ovr_fabric_tx_dropped(w->fab, i, 1, len);
			total++;
		}
	}
	return total;
}

static bool tx_waiting(const struct worker *w)
{
	uint16_t i;

	for (i = 0; i < nports; i++)
		for (uint16_t q = 0; q < nq; q++)
			if (w->txqs[i][q].n)
				return true;
	return false;
}

static void intr_enable(const struct worker *w, bool on)
{
	uint16_t i;

	for (i = 0; i < nports; i++) {
		if (!port_intr[i])
			continue;
		for (uint16_t q = (uint16_t)w->idx; q < nq;
		     q = (uint16_t)(q + nworkers)) {
			if (on)
				rte_eth_dev_rx_intr_enable(port_ids[i], q);
			else
				rte_eth_dev_rx_intr_disable(port_ids[i], q);
		}
	}
}

static void handle_events(struct worker *w, int timeout_ns)
{
	struct epoll_event ev[8];
	struct timespec ts = { .tv_sec = timeout_ns / 1000000000,
			       .tv_nsec = timeout_ns % 1000000000 };
	int n, k;

	n = epoll_pwait2(w->epfd, ev, 8, &ts, NULL);
	for (k = 0; k < n; k++) {
		uint32_t tag = ev[k].data.u32;

		switch (tag & 0xff) {
		case TAG_SIGNAL: {
			struct signalfd_siginfo si;

			if (read(sig_fd, &si, sizeof(si)) == sizeof(si))
				stop = true;
			break;
		}
		case TAG_LISTEN:
			client_accept();
			break;
		case TAG_DPDK: {
			struct rte_epoll_event rev[8];

			/* lets DPDK clear the interrupt sources */
			rte_epoll_wait(w->dp_epfd, rev, 8, 0);
			break;
		}
		case TAG_CLIENT:
			if (clients[tag >> 8])
				client_read(tag >> 8);
			break;
		case TAG_WAKE: {
			uint64_t v;

			if (read(w->wake_fd, &v, sizeof(v)) < 0)
				break; /* nothing to take */
			break;
		}
		}
	}
}

/* one round of @w: what arrived into its core, what is due out of it */
static unsigned round_of(struct worker *w, uint64_t now)
{
	unsigned work;

	pthread_mutex_lock(&w->lock);
	if (nworkers > 1)
		learn_catch_up(w);
	work = poll_rx(w, now);
	work += poll_tx(w, now);
	pthread_mutex_unlock(&w->lock);
	return work;
}

static void run(struct worker *w, const struct opts *o)
{
	const uint64_t spin_ns = (uint64_t)o->spin_us * 1000;
	const uint64_t idle_max_ns = (uint64_t)o->idle_us * 1000;
	const uint64_t deep_max_ns = (uint64_t)o->deep_idle_us * 1000;
	uint64_t now, last_work = ovr_mono_ns(), last_events = 0, sleep_ns = 0;
	uint64_t next, t, cap;
	unsigned work;
	unsigned got;

	while (!stop) {
		now = ovr_mono_ns();
		work = round_of(w, now);
		if (work) {
			last_work = now;
			sleep_ns = 0;
		}
		/* control socket and signals, also when busy */
		if (now - last_events > 1000000) {
			last_events = now;
			handle_events(w, 0);
		}
		if (work || now - last_work < spin_ns)
			continue;

		/* idle: sleep until the next frame is due, an interrupt, a
		 * command or a signal; poll the queues without interrupts
		 * with a period that doubles up to --idle-us, and beyond it
		 * up to --deep-idle-us as the silence lasts (at most 1 % of
		 * the silence so far: every wake-up costs some 10-20 us of
		 * CPU in a VM) */
		pthread_mutex_lock(&w->lock);
		next = ovr_fabric_next_ns(w->fab);
		pthread_mutex_unlock(&w->lock);
		cap = (now - last_work) / 100;
		cap = cap < idle_max_ns ? idle_max_ns :
		      cap > deep_max_ns ? deep_max_ns :
					  cap;
		sleep_ns = sleep_ns ? sleep_ns * 2 : 2000;
		if (sleep_ns > cap)
			sleep_ns = cap;
		t = w->all_intr ? 1000000000ull : sleep_ns;
		if (tx_waiting(w) && t > 10000)
			t = 10000;
		/* another worker's learning waits for a round: not long */
		if (nworkers > 1 && t > idle_max_ns)
			t = idle_max_ns;
		if (next != UINT64_MAX)
			t = next > now ? (next - now < t ? next - now : t) : 0;
		if (t < 1000)
			continue; /* due any moment: keep spinning */
		intr_enable(w, true);
		pthread_mutex_lock(&w->lock);
		got = poll_rx(w, ovr_mono_ns());
		pthread_mutex_unlock(&w->lock);
		if (got) { /* arrived before the interrupt was on */
			intr_enable(w, false);
			last_work = ovr_mono_ns();
			sleep_ns = 0;
			continue;
		}
		handle_events(w, (int)t);
		intr_enable(w, false);
		last_events = ovr_mono_ns();
	}
}

static struct opts *run_opts;

/* workers but 0: a thread each, a DPDK lcore for the mempool's cache */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char name[16];

	snprintf(name, sizeof(name), "fabric-w%u", w->idx);
	pthread_setname_np(pthread_self(), name);
	if (rte_thread_register())
		fprintf(stderr,
			"ovrdma-fabric: worker %u: no lcore (%s): no mempool "
			"cache\n",
			w->idx, rte_strerror(rte_errno));
	run(w, run_opts);
	rte_thread_unregister();
	return NULL;
}

/* the workers' epoll sets, cores and locks (before the ports: their Rx
 * interrupts go to their owner's set) */
static int workers_init(void)
{
	workers = calloc(nworkers, sizeof(*workers));
	if (!workers)
		return -1;
	for (uint32_t i = 0; i < nports; i++)
		for (uint32_t q = 0; q < MAX_QUEUES; q++)
			rte_spinlock_init(&txlock[i][q]);
	for (uint32_t k = 0; k < nworkers; k++) {
		struct worker *w = &workers[k];
		struct epoll_event ev = { .events = EPOLLIN };

		w->idx = k;
		w->wake_fd = -1;
		pthread_mutex_init(&w->lock, NULL);
		w->dp_epfd = epoll_create1(EPOLL_CLOEXEC);
		w->epfd = k ? epoll_create1(EPOLL_CLOEXEC) : epfd;
		if (w->dp_epfd < 0 || w->epfd < 0)
			return -1;
		ev.data.u32 = TAG_DPDK;
		if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->dp_epfd, &ev))
			return -1;
		if (k) {
			w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
			ev.data.u32 = TAG_WAKE;
			if (w->wake_fd < 0 ||
			    epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wake_fd, &ev))
				return -1;
		}
	}
	return 0;
}

/* ---- Main --------------------------------------------------------------- */

static void print_eth_stats(void)
{
	struct rte_eth_stats es;
	uint16_t i;

	for (i = 0; i < nports; i++) {
		if (rte_eth_stats_get(port_ids[i], &es))
			continue;
		printf("p%u.eth_ipackets %" PRIu64 "\np%u.eth_opackets %" PRIu64
		       "\np%u.eth_imissed %" PRIu64 "\np%u.eth_ierrors %" PRIu64
		       "\np%u.eth_oerrors %" PRIu64 "\n",
		       i, es.ipackets, i, es.opackets, i, es.imissed, i,
		       es.ierrors, i, es.oerrors);
	}
}

static int write_pidfile(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f)) {
		fprintf(stderr, "ovrdma-fabric: %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .seed = 1,
			  .max_frame = 9216,
			  .idle_us = 100,
			  .deep_idle_us = 1000,
			  .spin_us = 20,
			  .workers = 1 };
	uint32_t nb_mbufs;
	sigset_t sigs;
	uint16_t pid;
	int rc, i, status = 1;

	if (argc > 1 && !strcmp(argv[1], "ctl"))
		return ctl_client(argc, argv);

	/* SIGINT/SIGTERM come through a signalfd; blocked before the EAL
	 * starts its threads so that they inherit the mask */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		fprintf(stderr, "ovrdma-fabric: EAL init failed: %s\n",
			rte_strerror(rte_errno));
		return 1;
	}
	argc -= rc;
	argv += rc;
	if (parse_opts(argc, argv, &o))
		goto out_eal;
	nworkers = o.workers;
	run_opts = &o;
	if (o.deep_idle_us < o.idle_us)
		o.deep_idle_us = o.idle_us;

	RTE_ETH_FOREACH_DEV(pid)
	{
		if (nports == OVR_FABRIC_MAX_PORTS) {
			fprintf(stderr, "ovrdma-fabric: more than %d ports\n",
				OVR_FABRIC_MAX_PORTS);
			goto out_eal;
		}
		port_ids[nports++] = pid;
	}
	if (!nports) {
		fprintf(stderr, "ovrdma-fabric: no ports; give some with "
				"--vdev=net_memif0,... or "
				"--vdev=net_af_packet0,iface=...\n");
		goto out_eal;
	}

	/* precise sleeps: the default 50 us timer slack would delay every
	 * wake-up for a frame that falls due */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	sig_fd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (epfd < 0 || sig_fd < 0 || ep_add(sig_fd, TAG_SIGNAL) ||
	    workers_init()) {
		perror("ovrdma-fabric: epoll");
		goto out_eal;
	}

	nb_mbufs =
		nports * nq * (NB_RXD + NB_TXD + TXQ_MAX * nworkers + BURST) +
		1024 * nworkers;
	pool = rte_pktmbuf_pool_create(
		"fabric", nb_mbufs, 256, 0,
		(uint16_t)(RTE_PKTMBUF_HEADROOM + o.max_frame),
		rte_socket_id());
	for (uint32_t k = 0; k < nworkers; k++)
		if (!(workers[k].scratch = malloc(o.max_frame)))
			pool = NULL;
	if (!pool) {
		fprintf(stderr,
			"ovrdma-fabric: no memory for %u mbufs of %u bytes: %s "
			"(give the EAL more with -m)\n",
			nb_mbufs, o.max_frame, rte_strerror(rte_errno));
		goto out_eal;
	}
	for (i = 0; i < nports; i++) {
		rc = port_setup(port_ids[i], (uint16_t)i);
		if (rc) {
			fprintf(stderr, "ovrdma-fabric: port %d: %s\n", i,
				rte_strerror(-rc));
			goto out_ports;
		}
	}

	/* a core per worker, each link with a stream of its own */
	for (uint32_t k = 0; k < nworkers; k++) {
		struct worker *w = &workers[k];

		w->fab = cores_of[k] =
			ovr_fabric_create(nports, o.seed + k, o.max_frame);
		if (!w->fab) {
			perror("ovrdma-fabric");
			goto out_fab;
		}
		ovr_fabric_set_learning(w->fab, !o.no_learn);
		ovr_fabric_set_arp_proxy(w->fab, o.arp_proxy);
		if (nworkers > 1)
			ovr_fabric_set_learn_hook(w->fab, learn_tell, w);
		w->all_intr = true;
		for (i = 0; i < nports; i++)
			w->all_intr &= port_intr[i];
	}
	for (i = 0; i < o.nlinks; i++)
		if (apply_link(o.links[i]))
			goto out_fab;
	for (i = 0; i < o.nroutes; i++)
		if (apply_route(o.routes[i]))
			goto out_fab;
	if (o.ctl_path) {
		listen_fd = ctl_listen(o.ctl_path);
		if (listen_fd < 0)
			goto out_fab;
	}
	if (o.pidfile && write_pidfile(o.pidfile))
		goto out_ctl;
	for (uint32_t k = 1; k < nworkers; k++) {
		rc = pthread_create(&workers[k].thread, NULL, worker_main,
				    &workers[k]);
		if (rc) {
			fprintf(stderr, "ovrdma-fabric: worker %u: %s\n", k,
				strerror(rc));
			stop = true;
			break;
		}
		workers[k].started = true;
	}
	printf("ovrdma-fabric: %u ports, %u queue%s, %u worker%s, seed %" PRIu64
	       ", ready\n",
	       nports, nq, nq > 1 ? "s" : "", nworkers, nworkers > 1 ? "s" : "",
	       o.seed);
	fflush(stdout);

	run(&workers[0], &o);

	for (uint32_t k = 1; k < nworkers; k++) {
		uint64_t one = 1;

		if (!workers[k].started)
			continue;
		if (write(workers[k].wake_fd, &one, sizeof(one)) < 0)
			perror("ovrdma-fabric: wake a worker");
		pthread_join(workers[k].thread, NULL);
	}
	printf("ovrdma-fabric: stopping\n");
	ovr_fabric_print_stats_n(cores_of, nworkers, OVR_FABRIC_ALL, stdout);
	print_eth_stats();
	status = 0;
	if (o.pidfile)
		unlink(o.pidfile);
out_ctl:
	for (i = 0; i < MAX_CLIENTS; i++)
		if (clients[i])
			client_close((unsigned)i);
	if (listen_fd >= 0) {
		close(listen_fd);
		unlink(o.ctl_path);
	}
out_fab:
	for (uint32_t k = 0; k < nworkers; k++) {
		struct worker *w = &workers[k];

		for (i = 0; i < nports; i++)
			for (uint16_t q = 0; q < nq; q++)
				if (w->txqs[i][q].n)
					rte_pktmbuf_free_bulk(w->txqs[i][q].m,
							      w->txqs[i][q].n);
		if (w->fab)
			ovr_fabric_destroy(w->fab);
	}
out_ports:
	for (i = 0; i < nports; i++) {
		rte_eth_dev_stop(port_ids[i]);
		rte_eth_dev_close(port_ids[i]);
	}
out_eal:
	fflush(stdout);
	for (uint32_t k = 0; workers && k < nworkers; k++) {
		free(workers[k].scratch);
		if (workers[k].dp_epfd > 0)
			close(workers[k].dp_epfd);
		if (k && workers[k].epfd > 0)
			close(workers[k].epfd);
		if (workers[k].wake_fd >= 0)
			close(workers[k].wake_fd);
	}
	free(workers);
	free(o.links);
	free(o.routes);
	rte_eal_cleanup();
	return status;
}
