// SPDX-License-Identifier: MIT
/*
 * fabric-gen: a DPDK traffic source and sink for ovrdma-fabric's
 * integration test and for measuring its forwarding rate. Its first port
 * is host A (10.99.0.1), its second host B (10.99.0.2); typically both are
 * memif clients of a fabric:
 *
 *   fabric-gen --no-huge --no-shconf --file-prefix gen -l 1 \
 *       --vdev=net_memif0,role=client,socket=DIR/n0.sock,id=0 \
 *       --vdev=net_memif1,role=client,socket=DIR/n1.sock,id=0 \
 *       -- --count 200000 --size 1000
 *
 * Each host first says hello (so that the fabric learns where it is), then
 * A sends --count numbered IPv4/UDP frames of --size bytes to B as fast as
 * the fabric takes them (or at --pps), and B counts what arrives until
 * nothing has for --quiet-ms. Prints "key value" lines: sent, received,
 * unique, duplicates, late (reordered), seconds (first to last arrival),
 * pps and gbps (of what arrived). Exits 0 once done, 1 on setup errors.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <ovrdma/util.h>

#define BURST 32
#define IP_A 0x0a630001u
#define IP_B 0x0a630002u

static const uint8_t mac_a[6] = { 0x02, 0x99, 0, 0, 0, 0x0a };
static const uint8_t mac_b[6] = { 0x02, 0x99, 0, 0, 0, 0x0b };

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* Ethernet, IPv4 (ECT(0), checksum right), UDP to 4790, id at 42. */
static void frame(uint8_t *b, uint32_t len, const uint8_t *dmac,
		  const uint8_t *smac, uint32_t sip, uint32_t dip, uint32_t id)
{
	uint8_t *ip = b + 14;
	uint32_t s = 0;
	int i;

	memset(b, 0, len);
	memcpy(b, dmac, 6);
	memcpy(b + 6, smac, 6);
	put16(b + 12, 0x0800);
	ip[0] = 0x45;
	ip[1] = 0x02;
	put16(ip + 2, (uint16_t)(len - 14));
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 17;
	put32(ip + 12, sip);
	put32(ip + 16, dip);
	for (i = 0; i < 20; i += 2)
		s += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	put16(ip + 10, (uint16_t)~s);
	put16(ip + 20, 49152);
	put16(ip + 22, 4790);
	put16(ip + 24, (uint16_t)(len - 34));
	put32(b + 42, id);
}

static int send_one(uint16_t port, struct rte_mempool *mp, uint32_t len,
		    const uint8_t *dmac, const uint8_t *smac, uint32_t sip,
		    uint32_t dip, uint32_t id)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);

	if (!m)
		return -1;
	frame(rte_pktmbuf_mtod(m, uint8_t *), len, dmac, smac, sip, dip, id);
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	if (rte_eth_tx_burst(port, 0, &m, 1) != 1) {
		rte_pktmbuf_free(m);
		return -1;
	}
	return 0;
}

static int port_init(uint16_t port, struct rte_mempool *mp)
{
	struct rte_eth_conf conf;
	uint16_t nrx = 1024, ntx = 1024;

	memset(&conf, 0, sizeof(conf));
	if (rte_eth_dev_configure(port, 1, 1, &conf) ||
	    rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx) ||
	    rte_eth_rx_queue_setup(port, 0, nrx, rte_eth_dev_socket_id(port),
				   NULL, mp) ||
	    rte_eth_tx_queue_setup(port, 0, ntx, rte_eth_dev_socket_id(port),
				   NULL) ||
	    rte_eth_dev_start(port))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "count", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 's' },
		{ "pps", required_argument, NULL, 'p' },
		{ "quiet-ms", required_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t count = 100000, size = 256, quiet_ms = 300, pps = 0;
	uint64_t sent = 0, rcvd = 0, uniq = 0, dups = 0, late = 0, bytes = 0;
	uint64_t t_first = 0, t_last = 0, t0, t, deadline;
	struct rte_mbuf *bufs[BURST];
	struct rte_mempool *mp;
	struct rte_eth_link link;
	uint32_t maxid = 0;
	uint8_t *seen;
	int rc, c, i;
	uint16_t n, k;

	rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		fprintf(stderr, "fabric-gen: EAL init failed\n");
		return 1;
	}
	argc -= rc;
	argv += rc;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			count = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 's':
			size = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			pps = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'q':
			quiet_ms = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		default:
			return 1;
		}
	}
	if (size < 64 || size > 9000 || rte_eth_dev_count_avail() < 2) {
		fprintf(stderr, "fabric-gen: two ports, --size 64..9000\n");
		return 1;
	}
	/* one segment per frame: jumbo frames get mbufs that hold them */
	mp = rte_pktmbuf_pool_create(
		"gen", 8191, 256, 0,
		size + RTE_PKTMBUF_HEADROOM > RTE_MBUF_DEFAULT_BUF_SIZE ?
			(uint16_t)(size + RTE_PKTMBUF_HEADROOM) :
			RTE_MBUF_DEFAULT_BUF_SIZE,
		rte_socket_id());
	seen = calloc(count, 1);
	if (!mp || !seen || port_init(0, mp) || port_init(1, mp)) {
		fprintf(stderr, "fabric-gen: port setup failed\n");
		return 1;
	}
	/* memif: wait for the fabric to accept both connections */
	deadline = ovr_mono_ns() + 10000000000ull;
	for (i = 0; i < 2; i++) {
		do {
			rte_eth_link_get_nowait((uint16_t)i, &link);
			if (link.link_status)
				break;
			usleep(10000);
		} while (ovr_mono_ns() < deadline);
		if (!link.link_status) {
			fprintf(stderr, "fabric-gen: port %d: no link\n", i);
			return 1;
		}
	}
	/* hellos, until B hears A (both learned) */
	deadline = ovr_mono_ns() + 5000000000ull;
	for (;;) {
		bool heard = false;

		send_one(1, mp, 64, mac_a, mac_b, IP_B, IP_A, UINT32_MAX);
		send_one(0, mp, 64, mac_b, mac_a, IP_A, IP_B, UINT32_MAX);
		usleep(20000);
		for (i = 0; i < 2; i++) {
			n = rte_eth_rx_burst((uint16_t)i, 0, bufs, BURST);
			heard |= i == 1 && n > 0;
			rte_pktmbuf_free_bulk(bufs, n);
		}
		if (heard)
			break;
		if (ovr_mono_ns() > deadline) {
			fprintf(stderr, "fabric-gen: B never hears A\n");
			return 1;
		}
	}

	t0 = ovr_mono_ns();
	t = t0;
	deadline = t0;
	while (sent < count ||
	       ovr_mono_ns() - deadline < quiet_ms * 1000000ull) {
		t = ovr_mono_ns();
		if (sent < count &&
		    (!pps || sent < (t - t0) * (uint64_t)pps / 1000000000ull)) {
			uint16_t want = count - sent < BURST ?
						(uint16_t)(count - sent) :
						BURST;

			if (rte_pktmbuf_alloc_bulk(mp, bufs, want) == 0) {
				for (k = 0; k < want; k++) {
					frame(rte_pktmbuf_mtod(bufs[k],
							       uint8_t *),
					      size, mac_b, mac_a, IP_A, IP_B,
					      (uint32_t)(sent + k));
					bufs[k]->data_len = (uint16_t)size;
					bufs[k]->pkt_len = size;
				}
				n = rte_eth_tx_burst(0, 0, bufs, want);
				sent += n;
				if (n < want)
					rte_pktmbuf_free_bulk(bufs + n,
							      want - n);
			}
			if (sent == count)
				deadline = ovr_mono_ns();
		}
		n = rte_eth_rx_burst(1, 0, bufs, BURST);
		for (k = 0; k < n; k++) {
			const uint8_t *p = rte_pktmbuf_mtod(bufs[k], uint8_t *);
			uint32_t id;

			if (bufs[k]->pkt_len < 46)
				continue;
			id = (uint32_t)p[42] << 24 | (uint32_t)p[43] << 16 |
			     (uint32_t)p[44] << 8 | p[45];
			if (id >= count)
				continue; /* a hello */
			if (!t_first)
				t_first = t;
			t_last = t;
			rcvd++;
			bytes += bufs[k]->pkt_len;
			if (seen[id]) {
				dups++;
			} else {
				seen[id] = 1;
				uniq++;
			}
			if (id < maxid)
				late++;
			else
				maxid = id;
		}
		if (n) {
			rte_pktmbuf_free_bulk(bufs, n);
			if (sent == count)
				deadline = ovr_mono_ns();
		}
		/* port 0 may get frames back (nothing here sends them) */
		n = rte_eth_rx_burst(0, 0, bufs, BURST);
		rte_pktmbuf_free_bulk(bufs, n);
	}
	printf("sent %" PRIu64 "\nreceived %" PRIu64 "\nunique %" PRIu64
	       "\nduplicates %" PRIu64 "\nlate %" PRIu64 "\n",
	       sent, rcvd, uniq, dups, late);
	if (t_last > t_first) {
		double s = (double)(t_last - t_first) / 1e9;

		printf("seconds %.6f\npps %.0f\ngbps %.6f\n", s,
		       (double)(rcvd - 1) / s, (double)bytes * 8 / s / 1e9);
	}
	rte_eth_dev_stop(0);
	rte_eth_dev_stop(1);
	rte_eth_dev_close(0);
	rte_eth_dev_close(1);
	free(seen);
	rte_eal_cleanup();
	return 0;
}
