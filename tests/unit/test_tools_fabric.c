// SPDX-License-Identifier: MIT
/*
 * Tests of ovrdma-fabric's switching core (tools/fabric/fabric.h) in
 * simulated time: forwarding by IPv4 destination, learning and static
 * routes, ARP flooding and proxying, the ECN rewrite of the outer header,
 * and that the impairments configured on a port are what comes out of it:
 * exactly where the model is deterministic (rate, queue, blackhole) and
 * within 4 standard deviations over 100 000 frames where it is random
 * (loss, Gilbert-Elliott bursts, duplication, reordering, corruption).
 * Every run is seeded, so a pass is a pass every time.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fabric.h"

#define MAXF 2048
#define NSTAT 100000

static const uint8_t MAC_A[6] = { 0x02, 0, 0, 0, 0, 0x0a };
static const uint8_t MAC_B[6] = { 0x02, 0, 0, 0, 0, 0x0b };
static const uint8_t MAC_C[6] = { 0x02, 0, 0, 0, 0, 0x0c };
static const uint8_t MAC_GW[6] = { 0x02, 0xfa, 0, 0, 0, 0x01 };
static const uint8_t MAC_BC[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
#define IP_A 0x0a000001u /* 10.0.0.1 */
#define IP_B 0x0a000002u
#define IP_C 0x0a000003u
#define IP_X 0x0a000063u /* nobody */

/* ---- Frames ----------------------------------------------------------- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint16_t ip_csum(const uint8_t *h)
{
	uint32_t s = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		s += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Ethernet + IPv4 (UDP, checksum right) + payload: a 4-byte id at 42
 * and bytes that depend on it, so that no two ids' frames are one bit
 * apart. */
static uint32_t ipv4(uint8_t *b, const uint8_t *dmac, const uint8_t *smac,
		     uint32_t sip, uint32_t dip, uint8_t tos, uint32_t len,
		     uint32_t id)
{
	uint8_t *ip = b + 14;
	uint32_t i;

	memcpy(b, dmac, 6);
	memcpy(b + 6, smac, 6);
	put16(b + 12, 0x0800);
	memset(ip, 0, 28);
	ip[0] = 0x45;
	ip[1] = tos;
	put16(ip + 2, (uint16_t)(len - 14));
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 17;
	put32(ip + 12, sip);
	put32(ip + 16, dip);
	put16(ip + 10, ip_csum(ip));
	put16(ip + 22, 4790);
	put16(ip + 24, (uint16_t)(len - 34));
	put32(b + 42, id);
	for (i = 46; i < len; i++)
		b[i] = (uint8_t)(id * 7 + i * 13);
	return len;
}

static uint32_t arp(uint8_t *b, uint16_t op, const uint8_t *dmac,
		    const uint8_t *sha, uint32_t spa, const uint8_t *tha,
		    uint32_t tpa)
{
	uint8_t *a = b + 14;

	memset(b, 0, 60);
	memcpy(b, dmac, 6);
	memcpy(b + 6, sha, 6);
	put16(b + 12, 0x0806);
	put16(a, 1);
	put16(a + 2, 0x0800);
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, op);
	memcpy(a + 8, sha, 6);
	put32(a + 14, spa);
	memcpy(a + 18, tha, 6);
	put32(a + 24, tpa);
	return 60;
}

/* ---- What comes out --------------------------------------------------- */

#define MAXREC 250000
struct sink {
	uint32_t n;
	uint32_t per_port[8];
	uint64_t bytes[8];
	uint16_t port[MAXREC];
	uint32_t id[MAXREC];
	uint8_t last[8][MAXF];
	uint32_t last_len[8];
	int refuse; /* the callback returns this */
};

static struct sink out;

static int collect(void *arg, uint16_t port, const void *frame, uint32_t len)
{
	struct sink *s = arg;

	assert_true(port < 8 && len <= MAXF);
	if (s->n < MAXREC) {
		s->port[s->n] = port;
		s->id[s->n] = len >= 46 ? get32((const uint8_t *)frame + 42) :
					  UINT32_MAX;
	}
	s->n++;
	s->per_port[port]++;
	s->bytes[port] += len;
	memcpy(s->last[port], frame, len);
	s->last_len[port] = len;
	return s->refuse;
}

static void sink_reset(void)
{
	memset(&out, 0, sizeof(out));
}

static struct ovr_fabric *mk(uint16_t nports, uint64_t seed)
{
	struct ovr_fabric *f = ovr_fabric_create(nports, seed, MAXF);

	assert_non_null(f);
	sink_reset();
	return f;
}

static void drain_all(struct ovr_fabric *f)
{
	ovr_fabric_drain(f, UINT64_MAX, collect, &out);
}

static struct ovr_fabric_port_stats pstats(struct ovr_fabric *f, uint16_t p)
{
	struct ovr_fabric_port_stats s;

	assert_int_equal(ovr_fabric_port_stats(f, p, &s), 0);
	return s;
}

/* |observed - expected| <= 4 sigma of a binomial(n, p) */
static void assert_binomial(uint64_t observed, uint64_t n, double p)
{
	double mean = (double)n * p, sd = sqrt((double)n * p * (1 - p));

	if (fabs((double)observed - mean) > 4 * sd + 1)
		fail_msg("observed %llu, expected %.1f +- %.1f",
			 (unsigned long long)observed, mean, 4 * sd);
}

/* A on port 0 and B on port 1, both static with their MACs; port 1's
 * link gets @spec. */
static struct ovr_fabric *two_hosts(uint64_t seed, const char *spec)
{
	struct ovr_fabric *f = mk(2, seed);
	struct ovr_link_cfg c = { 0 };
	char err[128];

	assert_int_equal(ovr_fabric_route_add(f, IP_A, 0, MAC_A), 0);
	assert_int_equal(ovr_fabric_route_add(f, IP_B, 1, MAC_B), 0);
	if (spec) {
		if (ovr_fabric_parse_link(&c, spec, err, sizeof(err)))
			fail_msg("%s: %s", spec, err);
		assert_int_equal(ovr_fabric_port_set(f, 1, &c), 0);
	}
	return f;
}

/* Send frames 0..n-1 (A -> B, @len bytes) every @gap_ns, draining as time
 * goes on, then everything. */
static void stream(struct ovr_fabric *f, uint32_t n, uint32_t len,
		   uint64_t gap_ns)
{
	uint8_t b[MAXF];
	uint64_t t = 0;
	uint32_t i;

	for (i = 0; i < n; i++, t += gap_ns) {
		ipv4(b, MAC_B, MAC_A, IP_A, IP_B, 0x02, len, i);
		assert_int_equal(ovr_fabric_rx(f, 0, b, len, t), 1);
		if ((i & 255) == 255)
			ovr_fabric_drain(f, t, collect, &out);
	}
	drain_all(f);
}

/* ---- Forwarding ------------------------------------------------------- */

static void test_forward_and_learn(void **state)
{
	struct ovr_fabric *f = mk(3, 1);
	struct ovr_fabric_route r;
	uint8_t b[MAXF], want[MAXF];
	uint32_t len;

	(void)state;
	/* B unknown yet: dropped, but A is learned from it */
	len = ipv4(b, MAC_GW, MAC_A, IP_A, IP_B, 0, 100, 1);
	assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 0);
	assert_int_equal(pstats(f, 0).no_route, 1);
	assert_int_equal(ovr_fabric_route_get(f, IP_A, &r), 0);
	assert_int_equal(r.port, 0);
	assert_false(r.is_static);
	assert_memory_equal(r.mac, MAC_A, 6);

	/* B -> A goes out of port 0, to A's MAC */
	len = ipv4(b, MAC_GW, MAC_B, IP_B, IP_A, 0, 100, 2);
	assert_int_equal(ovr_fabric_rx(f, 1, b, len, 0), 1);
	drain_all(f);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.per_port[0], 1);
	ipv4(want, MAC_A, MAC_B, IP_B, IP_A, 0, 100, 2);
	assert_int_equal(out.last_len[0], len);
	assert_memory_equal(out.last[0], want, len);

	/* A -> B now known: port 1, only the destination MAC changed */
	len = ipv4(b, MAC_GW, MAC_A, IP_A, IP_B, 0, 200, 3);
	assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 1);
	drain_all(f);
	assert_int_equal(out.per_port[1], 1);
	ipv4(want, MAC_B, MAC_A, IP_A, IP_B, 0, 200, 3);
	assert_memory_equal(out.last[1], want, len);

	/* B moves to port 2 */
	len = ipv4(b, MAC_GW, MAC_B, IP_B, IP_A, 0, 100, 4);
	assert_int_equal(ovr_fabric_rx(f, 2, b, len, 0), 1);
	len = ipv4(b, MAC_GW, MAC_A, IP_A, IP_B, 0, 100, 5);
	assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 1);
	drain_all(f);
	assert_int_equal(out.per_port[2], 1);
	assert_int_equal(out.per_port[1], 1);
	assert_int_equal(pstats(f, 2).learned, 1);
	assert_int_equal(pstats(f, 1).learned, 1);

	/* to itself: not sent back */
	len = ipv4(b, MAC_GW, MAC_A, IP_A, IP_A, 0, 100, 6);
	assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 0);
	assert_int_equal(pstats(f, 0).same_port, 1);

	/* neither IPv4 nor ARP; runts; too big */
	len = ipv4(b, MAC_B, MAC_A, IP_A, IP_B, 0, 100, 7);
	put16(b + 12, 0x86dd);
	assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 0);
	assert_int_equal(pstats(f, 0).unsupported, 1);
	put16(b + 12, 0x0800);
	assert_int_equal(ovr_fabric_rx(f, 0, b, 20, 0), 0);
	assert_int_equal(ovr_fabric_rx(f, 0, b, 10, 0), 0);
	b[14] = 0x44; /* IHL 4 */
	assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 0);
	assert_int_equal(pstats(f, 0).malformed, 3);
	assert_int_equal(ovr_fabric_rx(f, 0, b, MAXF + 1, 0), 0);
	assert_int_equal(pstats(f, 0).too_big, 1);
	assert_int_equal(ovr_fabric_rx(f, 3, b, len, 0), -EINVAL);

	assert_int_equal(pstats(f, 0).rx, 9);
	assert_int_equal(pstats(f, 0).tx, 2);
	assert_int_equal(pstats(f, 0).tx_bytes, 200);
	ovr_fabric_destroy(f);
}

static void count_route(void *arg, const struct ovr_fabric_route *r)
{
	(void)r;
	(*(unsigned *)arg)++;
}

static void test_static_routes(void **state)
{
	struct ovr_fabric *f = mk(3, 1);
	struct ovr_fabric_route r;
	uint8_t b[MAXF];
	uint32_t len, i;
	unsigned n;

	(void)state;
	ovr_fabric_set_learning(f, false);
	len = ipv4(b, MAC_GW, MAC_A, IP_A, IP_B, 0, 100, 1);
	assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 0);
	assert_int_equal(ovr_fabric_route_get(f, IP_A, &r), -ENOENT);

	ovr_fabric_set_learning(f, true);
	assert_int_equal(ovr_fabric_route_add(f, IP_B, 1, NULL), 0);
	/* no MAC yet: the frame keeps its destination MAC */
	assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 1);
	drain_all(f);
	assert_memory_equal(out.last[1], MAC_GW, 6);
	/* B talking from another port neither moves it nor gives a MAC */
	len = ipv4(b, MAC_GW, MAC_C, IP_B, IP_A, 0, 100, 2);
	ovr_fabric_rx(f, 2, b, len, 0);
	assert_int_equal(ovr_fabric_route_get(f, IP_B, &r), 0);
	assert_int_equal(r.port, 1);
	assert_true(r.is_static);
	assert_false(r.has_mac);
	/* from its own port it lends its MAC */
	len = ipv4(b, MAC_GW, MAC_B, IP_B, IP_A, 0, 100, 3);
	ovr_fabric_rx(f, 1, b, len, 0);
	assert_int_equal(ovr_fabric_route_get(f, IP_B, &r), 0);
	assert_true(r.has_mac);
	assert_memory_equal(r.mac, MAC_B, 6);
	/* a MAC given with the route is never learned over */
	assert_int_equal(ovr_fabric_route_add(f, IP_C, 2, MAC_C), 0);
	len = ipv4(b, MAC_GW, MAC_A, IP_C, IP_A, 0, 100, 4);
	ovr_fabric_rx(f, 2, b, len, 0);
	assert_int_equal(ovr_fabric_route_get(f, IP_C, &r), 0);
	assert_memory_equal(r.mac, MAC_C, 6);
	assert_int_equal(ovr_fabric_route_add(f, 0, 1, NULL), -EINVAL);
	assert_int_equal(ovr_fabric_route_add(f, IP_X, 3, NULL), -EINVAL);

	/* many routes: the table grows, deletions keep the rest findable */
	for (i = 0; i < 5000; i++)
		assert_int_equal(ovr_fabric_route_add(f, 0x0b000000u + i * 17,
						      (uint16_t)(i % 3), NULL),
				 0);
	for (i = 0; i < 5000; i += 2)
		assert_int_equal(ovr_fabric_route_del(f, 0x0b000000u + i * 17),
				 0);
	for (i = 0; i < 5000; i++) {
		int rc = ovr_fabric_route_get(f, 0x0b000000u + i * 17, &r);

		if (i & 1) {
			assert_int_equal(rc, 0);
			assert_int_equal(r.port, i % 3);
		} else {
			assert_int_equal(rc, -ENOENT);
		}
	}
	assert_int_equal(ovr_fabric_route_del(f, IP_X), -ENOENT);
	/* A (learned), B, C and the 2500 left */
	n = 0;
	assert_int_equal(ovr_fabric_route_foreach(f, count_route, &n), 2503);
	assert_int_equal(n, 2503);
	ovr_fabric_destroy(f);
}

static void test_route_foreach(void **state)
{
	struct ovr_fabric *f = mk(2, 1);
	unsigned n = 0, i;

	(void)state;
	for (i = 1; i <= 300; i++)
		assert_int_equal(
			ovr_fabric_route_add(f, i, (uint16_t)(i & 1), NULL), 0);
	for (i = 1; i <= 300; i += 3)
		assert_int_equal(ovr_fabric_route_del(f, i), 0);
	assert_int_equal(ovr_fabric_route_foreach(f, count_route, &n), 200);
	assert_int_equal(n, 200);
	ovr_fabric_destroy(f);
}

static void test_arp_flood_and_reply(void **state)
{
	struct ovr_fabric *f = mk(3, 1);
	uint8_t b[MAXF], req[MAXF];
	uint32_t len;

	(void)state;
	/* A asks who has B: flooded to 1 and 2, not back to 0 */
	len = arp(req, 1, MAC_BC, MAC_A, IP_A, (const uint8_t[6]){ 0 }, IP_B);
	assert_int_equal(ovr_fabric_rx(f, 0, req, len, 0), 2);
	drain_all(f);
	assert_int_equal(out.per_port[0], 0);
	assert_int_equal(out.per_port[1], 1);
	assert_int_equal(out.per_port[2], 1);
	assert_memory_equal(out.last[1], req, len);
	assert_memory_equal(out.last[2], req, len);
	assert_int_equal(pstats(f, 0).flooded, 1);
	assert_int_equal(pstats(f, 0).arp, 1);

	/* B answers A (unicast): to port 0 only, by the target address */
	sink_reset();
	len = arp(b, 2, MAC_A, MAC_B, IP_B, MAC_A, IP_A);
	assert_int_equal(ovr_fabric_rx(f, 1, b, len, 0), 1);
	drain_all(f);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.per_port[0], 1);
	assert_memory_equal(out.last[0], b, len);

	/* both learned: IPv4 flows either way */
	len = ipv4(b, MAC_B, MAC_A, IP_A, IP_B, 0, 100, 1);
	assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 1);
	drain_all(f);
	assert_int_equal(out.per_port[1], 1);

	/* an IPv4 broadcast is flooded too, and a unicast ARP probe for an
	 * address the fabric does not know; unknown IPv4 is not */
	len = ipv4(b, MAC_BC, MAC_A, IP_A, 0x0a0000ffu, 0, 100, 2);
	assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 2);
	len = arp(b, 1, MAC_C, MAC_A, IP_A, MAC_C, IP_X);
	assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 2);
	assert_int_equal(pstats(f, 0).flooded, 3);
	len = ipv4(b, MAC_C, MAC_A, IP_A, IP_X, 0, 100, 3);
	assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 0);
	assert_int_equal(pstats(f, 0).no_route, 1);
	len = arp(b, 1, MAC_C, MAC_A, IP_A, MAC_C, IP_X);
	/* bad ARP */
	b[14 + 4] = 8;
	assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 0);
	assert_int_equal(pstats(f, 0).malformed, 1);
	ovr_fabric_destroy(f);
}

static void test_arp_proxy(void **state)
{
	struct ovr_fabric *f = mk(3, 1);
	uint8_t req[MAXF], want[MAXF];
	uint32_t len;

	(void)state;
	ovr_fabric_set_arp_proxy(f, true);
	assert_int_equal(ovr_fabric_route_add(f, IP_B, 1, MAC_B), 0);
	len = arp(req, 1, MAC_BC, MAC_A, IP_A, (const uint8_t[6]){ 0 }, IP_B);
	assert_int_equal(ovr_fabric_rx(f, 0, req, len, 0), 1);
	drain_all(f);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.per_port[0], 1);
	arp(want, 2, MAC_A, MAC_B, IP_B, MAC_A, IP_A);
	assert_int_equal(out.last_len[0], 60);
	assert_memory_equal(out.last[0], want, 60);
	assert_int_equal(pstats(f, 0).arp_proxied, 1);
	/* unknown target: flooded as usual */
	len = arp(req, 1, MAC_BC, MAC_A, IP_A, (const uint8_t[6]){ 0 }, IP_C);
	assert_int_equal(ovr_fabric_rx(f, 0, req, len, 0), 2);
	ovr_fabric_destroy(f);
}

/* ---- ECN -------------------------------------------------------------- */

static void test_ecn_rewrite(void **state)
{
	/* 1 Gbit/s, 1000-byte frames offered at once: frame i finds i * 1000
	 * bytes ahead of it; CE above 3000 marks frames 4..9 */
	struct ovr_fabric *f = two_hosts(1, "rate=1g,ecn=3000b");
	static const uint8_t tos[10] = {
		2, 1, 0, 3, 2, 1, 0, 3, 0xb8 | 2, 0xb8
	};
	uint8_t b[MAXF];
	uint32_t i, len, k;
	struct ovr_fabric_port_stats s;

	(void)state;
	for (i = 0; i < 10; i++) {
		len = ipv4(b, MAC_B, MAC_A, IP_A, IP_B, tos[i], 1000, i);
		assert_int_equal(ovr_fabric_rx(f, 0, b, len, 0), 1);
	}
	for (k = 0; k < 10; k++) {
		uint8_t want = tos[k];

		assert_int_equal(ovr_fabric_recv(f, 1, UINT64_MAX, b, sizeof(b),
						 &len),
				 1);
		assert_int_equal(get32(b + 42), k);
		if (k >= 4 && (tos[k] & 3))
			want |= 3;
		assert_int_equal(b[15], want);
		assert_int_equal(ip_csum(b + 14), 0); /* checksum still right */
	}
	s = pstats(f, 1);
	assert_int_equal(s.ce_marked, 6);
	assert_int_equal(s.ce_not_ect, 2); /* frames 6 and 9 */
	assert_int_equal(ovr_fabric_recv(f, 1, UINT64_MAX, b, 10, &len), 0);
	ovr_fabric_destroy(f);
}

/* ---- Impairments, statistically --------------------------------------- */

static void copies_of(uint32_t n, uint32_t *copies)
{
	uint32_t k;

	memset(copies, 0, n * sizeof(*copies));
	for (k = 0; k < out.n; k++) {
		assert_true(out.id[k] < n);
		copies[out.id[k]]++;
	}
}

static void test_loss_rate(void **state)
{
	static uint32_t copies[NSTAT];
	struct ovr_fabric *f = two_hosts(7, "loss=2%");
	struct ovr_fabric_port_stats s;
	uint32_t i, lost = 0;

	(void)state;
	stream(f, NSTAT, 128, 1000);
	copies_of(NSTAT, copies);
	for (i = 0; i < NSTAT; i++) {
		assert_true(copies[i] <= 1);
		lost += !copies[i];
	}
	s = pstats(f, 1);
	assert_int_equal(s.loss, lost);
	assert_int_equal(s.ge_loss, 0);
	assert_int_equal(s.offered, NSTAT);
	assert_int_equal(s.tx, NSTAT - lost);
	assert_int_equal(s.tx_bytes, (uint64_t)(NSTAT - lost) * 128);
	assert_int_equal(pstats(f, 0).rx, NSTAT);
	assert_binomial(lost, NSTAT, 0.02);
	ovr_fabric_destroy(f);
}

static void test_ge_bursts(void **state)
{
	static uint32_t copies[NSTAT];
	/* stationary loss p / (p + r) = 3.85 %, mean burst 1 / r = 4 */
	struct ovr_fabric *f = two_hosts(11, "ge=0.01/0.25/1");
	struct ovr_fabric_port_stats s;
	uint32_t i, lost = 0, bursts = 0;
	double rate, mean;

	(void)state;
	stream(f, NSTAT, 128, 1000);
	copies_of(NSTAT, copies);
	for (i = 0; i < NSTAT; i++) {
		if (!copies[i]) {
			lost++;
			bursts += i == 0 || copies[i - 1];
		}
	}
	s = pstats(f, 1);
	assert_int_equal(s.ge_loss, lost);
	assert_int_equal(s.loss, 0);
	rate = (double)lost / NSTAT;
	mean = (double)lost / bursts;
	/* ~960 bursts, geometric (sd 3.5): 4 sigma of the mean is 0.45 */
	if (fabs(rate - 0.01 / 0.26) > 0.006 || fabs(mean - 4.0) > 0.45)
		fail_msg("loss %.4f (want 0.0385), mean burst %.2f (want 4)",
			 rate, mean);
	ovr_fabric_destroy(f);
}

static void test_dup_rate(void **state)
{
	static uint32_t copies[NSTAT];
	struct ovr_fabric *f = two_hosts(3, "dup=0.05,jitter=1us");
	uint32_t i, twice = 0;

	(void)state;
	stream(f, NSTAT, 128, 1000);
	copies_of(NSTAT, copies);
	for (i = 0; i < NSTAT; i++) {
		assert_true(copies[i] == 1 || copies[i] == 2);
		twice += copies[i] == 2;
	}
	assert_int_equal(out.n, NSTAT + twice);
	assert_int_equal(pstats(f, 1).dup, twice);
	assert_int_equal(pstats(f, 1).tx, NSTAT + twice);
	assert_binomial(twice, NSTAT, 0.05);
	ovr_fabric_destroy(f);
}

static void test_reorder_rate(void **state)
{
	/* a frame every 1 us; 2 % held back 10 us: each is overtaken */
	struct ovr_fabric *f = two_hosts(5, "reorder=0.02/10us,delay=5us");
	uint32_t k, late = 0, maxseen = 0;

	(void)state;
	stream(f, NSTAT, 128, 1000);
	assert_int_equal(out.n, NSTAT);
	for (k = 0; k < out.n; k++) {
		if (k && out.id[k] < maxseen)
			late++;
		if (out.id[k] > maxseen)
			maxseen = out.id[k];
	}
	assert_int_equal(pstats(f, 1).reordered, late);
	assert_binomial(late, NSTAT, 0.02);
	ovr_fabric_destroy(f);
}

static uint32_t corrupt_bits[3];
static uint32_t corrupt_k;

static int check_corrupt(void *arg, uint16_t port, const void *frame,
			 uint32_t len)
{
	uint8_t want[MAXF];
	const uint8_t *got = frame;
	uint32_t i, bits = 0;

	(void)arg;
	assert_int_equal(port, 1);
	/* no loss, no reordering: the k-th frame out is frame k */
	ipv4(want, MAC_B, MAC_A, IP_A, IP_B, 0x02, len, corrupt_k++);
	for (i = 0; i < len; i++)
		bits += (uint32_t)__builtin_popcount(got[i] ^ want[i]);
	assert_true(bits <= 1);
	corrupt_bits[bits]++;
	return 0;
}

static void test_corrupt_rate(void **state)
{
	struct ovr_fabric *f = two_hosts(9, "corrupt=0.01");
	uint8_t b[MAXF];
	uint32_t i;

	(void)state;
	corrupt_k = 0;
	memset(corrupt_bits, 0, sizeof(corrupt_bits));
	for (i = 0; i < NSTAT; i++) {
		ipv4(b, MAC_B, MAC_A, IP_A, IP_B, 0x02, 128, i);
		assert_int_equal(ovr_fabric_rx(f, 0, b, 128, i * 1000ull), 1);
	}
	ovr_fabric_drain(f, UINT64_MAX, check_corrupt, NULL);
	assert_int_equal(corrupt_k, NSTAT);
	assert_int_equal(pstats(f, 1).corrupt, corrupt_bits[1]);
	assert_binomial(corrupt_bits[1], NSTAT, 0.01);
	ovr_fabric_destroy(f);
}

/* ---- Rate, buffer, blackhole, run-time changes ----------------------- */

static void test_rate_limit(void **state)
{
	/* 1 Gbit/s offered 2 Gbit/s (1000 bytes every 4 us) for 10 ms, no
	 * buffer limit: at any time t, what left is t * 1 Gbit/s to within
	 * one frame */
	struct ovr_fabric *f = two_hosts(1, "rate=1g");
	uint8_t b[MAXF];
	uint64_t t, sent_until = 0;
	uint32_t i = 0;

	(void)state;
	for (t = 0; t <= 20000000; t += 100000) {
		double want = (double)t / 8; /* bytes at 1 Gbit/s */

		for (; sent_until <= t && sent_until < 10000000;
		     sent_until += 4000, i++) {
			ipv4(b, MAC_B, MAC_A, IP_A, IP_B, 0, 1000, i);
			assert_int_equal(
				ovr_fabric_rx(f, 0, b, 1000, sent_until), 1);
		}
		ovr_fabric_drain(f, t, collect, &out);
		if (want > 2500 * 1000.0)
			want = 2500 * 1000.0; /* all of it */
		if (fabs((double)out.bytes[1] - want) > 1000 + 1e-9)
			fail_msg("at %llu ns: %llu bytes out, want %.0f",
				 (unsigned long long)t,
				 (unsigned long long)out.bytes[1], want);
	}
	assert_int_equal(out.per_port[1], 2500);
	assert_int_equal(pstats(f, 1).queue_drop, 0);
	ovr_fabric_destroy(f);

	/* the same with a 50 kB buffer: half is dropped, the rate holds */
	f = two_hosts(1, "rate=1g,queue=50000b");
	for (i = 0; i < 2500; i++) {
		ipv4(b, MAC_B, MAC_A, IP_A, IP_B, 0, 1000, i);
		ovr_fabric_rx(f, 0, b, 1000, i * 4000ull);
	}
	ovr_fabric_drain(f, 5000000, collect, &out);
	/* 5 ms at 1 Gbit/s: 625 frames, within one */
	assert_true(out.per_port[1] >= 624 && out.per_port[1] <= 626);
	drain_all(f);
	assert_int_equal(out.per_port[1] + pstats(f, 1).queue_drop, 2500);
	assert_true(pstats(f, 1).queue_drop > 1150 &&
		    pstats(f, 1).queue_drop < 1300);
	ovr_fabric_destroy(f);
}

static void test_blackhole_and_runtime_change(void **state)
{
	struct ovr_fabric *f = two_hosts(1, "delay=100us");
	struct ovr_link_cfg c;
	uint8_t b[MAXF];
	uint32_t i;
	char err[64];

	(void)state;
	/* 10 in flight when the link starts losing everything: they still
	 * arrive; the next 10 do not */
	for (i = 0; i < 10; i++) {
		ipv4(b, MAC_B, MAC_A, IP_A, IP_B, 0, 100, i);
		ovr_fabric_rx(f, 0, b, 100, i * 1000ull);
	}
	assert_int_equal(ovr_fabric_next_ns(f), 100000);
	assert_int_equal(ovr_fabric_port_next_ns(f, 1), 100000);
	assert_int_equal(ovr_fabric_port_next_ns(f, 0), UINT64_MAX);
	assert_int_equal(pstats(f, 1).inflight, 10);
	ovr_fabric_port_get(f, 1, &c);
	assert_int_equal(ovr_fabric_parse_link(&c, "loss=1", err, sizeof(err)),
			 0);
	assert_int_equal(ovr_fabric_port_set(f, 1, &c), 0);
	for (i = 10; i < 20; i++) {
		ipv4(b, MAC_B, MAC_A, IP_A, IP_B, 0, 100, i);
		ovr_fabric_rx(f, 0, b, 100, 20000 + i * 1000ull);
	}
	ovr_fabric_drain(f, 99999, collect, &out);
	assert_int_equal(out.n, 0);
	drain_all(f);
	assert_int_equal(out.n, 10);
	assert_int_equal(pstats(f, 1).loss, 10);

	/* black hole: counted as such, nothing lost "on the wire" */
	assert_int_equal(ovr_fabric_parse_link(&c, "loss=0,blackhole=1", err,
					       sizeof(err)),
			 0);
	assert_int_equal(ovr_fabric_port_set(f, 1, &c), 0);
	for (i = 0; i < 1000; i++) {
		ipv4(b, MAC_B, MAC_A, IP_A, IP_B, 0, 100, i);
		ovr_fabric_rx(f, 0, b, 100, 1000000 + i * 1000ull);
	}
	drain_all(f);
	assert_int_equal(out.n, 10);
	assert_int_equal(pstats(f, 1).blackhole, 1000);
	assert_int_equal(pstats(f, 1).loss, 10);
	/* and back */
	assert_int_equal(
		ovr_fabric_parse_link(&c, "blackhole=0", err, sizeof(err)), 0);
	assert_int_equal(ovr_fabric_port_set(f, 1, &c), 0);
	ovr_fabric_rx(f, 0, b, 100, 3000000);
	drain_all(f);
	assert_int_equal(out.n, 11);
	/* a port that refuses what it is given */
	out.refuse = 1;
	ovr_fabric_rx(f, 0, b, 100, 4000000);
	drain_all(f);
	assert_int_equal(pstats(f, 1).tx_drop, 1);
	assert_int_equal(pstats(f, 1).tx, 11);
	c.loss = 2;
	assert_int_equal(ovr_fabric_port_set(f, 1, &c), -EINVAL);
	assert_int_equal(ovr_fabric_port_set(f, 2, &c), -EINVAL);
	ovr_fabric_destroy(f);
}

/* Run a mix of everything random on ports 1 and 2 and fingerprint the
 * output. */
static uint64_t fingerprint(uint64_t seed)
{
	struct ovr_fabric *f = mk(3, seed);
	struct ovr_link_cfg c = { 0 };
	uint8_t b[MAXF];
	uint64_t h = 1469598103934665603ull;
	uint32_t i, k;
	char err[64];

	ovr_fabric_route_add(f, IP_B, 1, MAC_B);
	ovr_fabric_route_add(f, IP_C, 2, MAC_C);
	assert_int_equal(
		ovr_fabric_parse_link(
			&c,
			"loss=0.05 dup=0.05 reorder=0.05/5us jitter=3us "
			"corrupt=0.05 ge=0.01/0.3/0.5 rate=10g ecn=2k",
			err, sizeof(err)),
		0);
	ovr_fabric_port_set(f, 1, &c);
	ovr_fabric_port_set(f, 2, &c);
	for (i = 0; i < 20000; i++) {
		ipv4(b, MAC_B, MAC_A, IP_A, (i & 1) ? IP_C : IP_B, 2, 300, i);
		ovr_fabric_rx(f, 0, b, 300, i * 100ull);
	}
	drain_all(f);
	for (k = 0; k < out.n; k++)
		h = (h ^ ((uint64_t)out.port[k] << 32 | out.id[k])) *
		    1099511628211ull;
	/* the two ports draw from streams of their own */
	assert_int_not_equal(pstats(f, 1).loss + pstats(f, 1).ge_loss,
			     pstats(f, 2).loss + pstats(f, 2).ge_loss);
	ovr_fabric_destroy(f);
	return h;
}

static void test_seeded(void **state)
{
	(void)state;
	assert_int_equal(fingerprint(42), fingerprint(42));
	assert_int_not_equal(fingerprint(42), fingerprint(43));
}

/* ---- Text configuration and control ---------------------------------- */

static void test_parse_link(void **state)
{
	struct ovr_link_cfg c = { .seed = 5 };
	char err[128];

	(void)state;
	assert_int_equal(
		ovr_fabric_parse_link(
			&c,
			"rate=10g,delay=5us jitter=1.5ms,fifo=1,queue=1m,"
			"ecn=100k,loss=1%,ge=0.001/0.3,reorder=0.01/20us,"
			"dup=0.002,corrupt=1e-4,blackhole=on",
			err, sizeof(err)),
		0);
	assert_int_equal(c.rate_bps, 10000000000ull);
	assert_int_equal(c.delay_ns, 5000);
	assert_int_equal(c.jitter_ns, 1500000);
	assert_true(c.jitter_fifo);
	assert_int_equal(c.queue_bytes, 1 << 20);
	assert_int_equal(c.ecn_bytes, 100 << 10);
	assert_true(fabs(c.loss - 0.01) < 1e-12);
	assert_true(fabs(c.ge_p - 0.001) < 1e-12);
	assert_true(fabs(c.ge_r - 0.3) < 1e-12);
	assert_true(c.ge_loss_bad == 1.0);
	assert_true(fabs(c.reorder - 0.01) < 1e-12);
	assert_int_equal(c.reorder_ns, 20000);
	assert_true(fabs(c.dup - 0.002) < 1e-12);
	assert_true(fabs(c.corrupt - 1e-4) < 1e-12);
	assert_true(c.blackhole);
	assert_int_equal(ovr_fabric_parse_link(&c, "rate=100M delay=7 ge=0",
					       err, sizeof(err)),
			 0);
	assert_int_equal(c.rate_bps, 100000000);
	assert_int_equal(c.delay_ns, 7000); /* bare: microseconds */
	assert_true(c.ge_p == 0);
	assert_int_equal(ovr_fabric_parse_link(&c, "reset", err, sizeof(err)),
			 0);
	assert_int_equal(c.rate_bps, 0);
	assert_int_equal(c.seed, 5);

	static const char *const bad[] = {
		"loss=1.5",    "loss=-0.1",	"loss=x",      "rate=10q",
		"delay=5xs",   "ge=0.1",	"ge=0.1/0",    "ge=1/2/3/4",
		"reorder=0.1", "reorder=a/5us", "blackhole=2", "queue=5g",
		"colour=red",  "loss",		"loss=",       "dup=nan",
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (ovr_fabric_parse_link(&c, bad[i], err, sizeof(err)) !=
		    -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		assert_true(err[0] != '\0');
	}
}

static void test_parse_port_ip(void **state)
{
	struct ovr_fabric *f = mk(4, 1);
	uint16_t p;
	uint32_t ip;

	(void)state;
	assert_int_equal(ovr_fabric_parse_port(f, "3", &p), 0);
	assert_int_equal(p, 3);
	assert_int_equal(ovr_fabric_parse_port(f, "all", &p), 0);
	assert_int_equal(p, OVR_FABRIC_ALL);
	assert_int_equal(ovr_fabric_parse_port(f, "4", &p), -EINVAL);
	assert_int_equal(ovr_fabric_parse_port(f, "-1", &p), -EINVAL);
	assert_int_equal(ovr_fabric_parse_port(f, "1x", &p), -EINVAL);
	assert_int_equal(ovr_fabric_parse_ip("10.1.2.3", &ip), 0);
	assert_int_equal(ip, 0x0a010203);
	assert_int_equal(ovr_fabric_parse_ip("10.1.2", &ip), -EINVAL);
	assert_int_equal(ovr_fabric_parse_ip("10.1.2.256", &ip), -EINVAL);
	assert_int_equal(ovr_fabric_parse_ip("10.1.2.3x", &ip), -EINVAL);
	ovr_fabric_destroy(f);
}

/* Run one control command; its output in @buf. */
static int ctl(struct ovr_fabric *f, const char *cmd, char *buf, size_t cap)
{
	FILE *m = fmemopen(buf, cap, "w");
	int rc;

	assert_non_null(m);
	rc = ovr_fabric_ctl(f, cmd, m);
	fclose(m);
	return rc;
}

static void test_ctl(void **state)
{
	struct ovr_fabric *f = mk(3, 1);
	struct ovr_link_cfg c;
	struct ovr_fabric_route r;
	static char buf[65536];
	uint8_t b[MAXF];

	(void)state;
	assert_int_equal(
		ctl(f, "set all loss=0.1 delay=5us\n", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "ok\n");
	for (uint16_t q = 0; q < 3; q++) {
		ovr_fabric_port_get(f, q, &c);
		assert_true(fabs(c.loss - 0.1) < 1e-12);
		assert_int_equal(c.delay_ns, 5000);
	}
	assert_int_equal(ctl(f, "set 1 rate=10g,queue=64k", buf, sizeof(buf)),
			 0);
	ovr_fabric_port_get(f, 1, &c);
	assert_int_equal(c.rate_bps, 10000000000ull);
	assert_true(fabs(c.loss - 0.1) < 1e-12); /* the rest is kept */
	ovr_fabric_port_get(f, 2, &c);
	assert_int_equal(c.rate_bps, 0);

	/* all or nothing */
	assert_true(ctl(f, "set all loss=0 colour=red", buf, sizeof(buf)) < 0);
	assert_non_null(strstr(buf, "error: unknown key 'colour'"));
	ovr_fabric_port_get(f, 0, &c);
	assert_true(fabs(c.loss - 0.1) < 1e-12);
	assert_true(ctl(f, "set 3 loss=0", buf, sizeof(buf)) < 0);
	assert_true(ctl(f, "set 1", buf, sizeof(buf)) < 0);

	/* show prints what parse reads back */
	assert_int_equal(ctl(f, "show 1", buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "port 1 rate=10000000000 delay=5000ns"));
	assert_non_null(strstr(buf, "queue=65536"));
	{
		struct ovr_link_cfg c2 = { 0 };
		char err[64], *line = strstr(buf, "rate=");

		*strchr(line, '\n') = '\0';
		assert_int_equal(
			ovr_fabric_parse_link(&c2, line, err, sizeof(err)), 0);
		ovr_fabric_port_get(f, 1, &c);
		c2.seed = c.seed;
		assert_memory_equal(&c, &c2, sizeof(c));
	}

	/* routes */
	assert_int_equal(ctl(f, "route 10.0.0.2 1 02:00:00:00:00:0b", buf,
			     sizeof(buf)),
			 0);
	assert_int_equal(ovr_fabric_route_get(f, IP_B, &r), 0);
	assert_int_equal(r.port, 1);
	assert_memory_equal(r.mac, MAC_B, 6);
	assert_int_equal(ctl(f, "route 10.0.0.3 2", buf, sizeof(buf)), 0);
	assert_int_equal(ctl(f, "routes", buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "10.0.0.2 port 1 mac 02:00:00:00:00:0b "
				    "static\n"));
	assert_non_null(strstr(buf, "10.0.0.3 port 2 static\n"));
	assert_int_equal(ctl(f, "route del 10.0.0.3", buf, sizeof(buf)), 0);
	assert_true(ctl(f, "route del 10.0.0.3", buf, sizeof(buf)) < 0);
	assert_true(ctl(f, "route 10.0.0.3 all", buf, sizeof(buf)) < 0);
	assert_true(ctl(f, "route 10.0.0 1", buf, sizeof(buf)) < 0);

	/* stats: one port, or sums and every port */
	ipv4(b, MAC_B, MAC_A, IP_A, IP_B, 0, 100, 1);
	ovr_fabric_rx(f, 0, b, 100, 0);
	assert_int_equal(ctl(f, "stats 0", buf, sizeof(buf)), 0);
	assert_int_equal(strncmp(buf, "rx 1\nrx_bytes 100\n", 18), 0);
	assert_null(strstr(buf, "p0."));
	assert_int_equal(ctl(f, "stats", buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "\noffered 1\n"));
	assert_non_null(strstr(buf, "\np1.offered 1\n"));
	assert_non_null(strstr(buf, "\np2.inflight 0\nok\n"));

	assert_true(ctl(f, "stats 9", buf, sizeof(buf)) < 0);
	assert_true(ctl(f, "frobnicate", buf, sizeof(buf)) < 0);
	assert_non_null(strstr(buf, "error: unknown command"));
	assert_true(ctl(f, "", buf, sizeof(buf)) < 0);
	assert_int_equal(ctl(f, "help", buf, sizeof(buf)), 0);
	assert_int_equal(ctl(f, "quit", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "ok\n");
	ovr_fabric_destroy(f);
}

/* ---- Several fabrics for the same ports (ovrdma-fabric --workers) ---- */

/* every learned route told goes to the other fabrics, as the program's
 * learn log does */
struct learn_bus {
	struct ovr_fabric *f[3];
	unsigned n, told;
};

static struct learn_bus bus;

static void tell(void *arg, uint32_t ip, uint16_t port, const uint8_t mac[6])
{
	struct ovr_fabric *from = arg;

	bus.told++;
	for (unsigned i = 0; i < bus.n; i++)
		if (bus.f[i] != from)
			assert_int_equal(
				ovr_fabric_learn(bus.f[i], ip, port, mac), 0);
}

static void test_workers(void **state)
{
	struct ovr_fabric_route r;
	uint8_t b[MAXF];
	static char buf[65536];
	FILE *m;
	uint32_t len;
	(void)state;

	memset(&bus, 0, sizeof(bus));
	bus.n = 3;
	for (unsigned i = 0; i < bus.n; i++) {
		bus.f[i] = ovr_fabric_create(3, 1 + i, MAXF);
		assert_non_null(bus.f[i]);
		ovr_fabric_set_learn_hook(bus.f[i], tell, bus.f[i]);
	}
	sink_reset();
	/* A speaks through fabric 0 only, B through fabric 1 only: each
	 * fabric learns one, and is told the other */
	len = ipv4(b, MAC_BC, MAC_A, IP_A, 0xffffffffu, 0, 64, 1);
	assert_true(ovr_fabric_rx(bus.f[0], 0, b, len, 0) >= 1);
	len = ipv4(b, MAC_BC, MAC_B, IP_B, 0xffffffffu, 0, 64, 2);
	assert_true(ovr_fabric_rx(bus.f[1], 1, b, len, 0) >= 1);
	assert_int_equal(bus.told, 2);
	for (unsigned i = 0; i < bus.n; i++) {
		assert_int_equal(ovr_fabric_route_get(bus.f[i], IP_A, &r), 0);
		assert_int_equal(r.port, 0);
		assert_memory_equal(r.mac, MAC_A, 6);
		assert_false(r.is_static);
		assert_int_equal(ovr_fabric_route_get(bus.f[i], IP_B, &r), 0);
		assert_int_equal(r.port, 1);
		ovr_fabric_drain(bus.f[i], UINT64_MAX, collect, &out);
	}
	/* so fabric 2, which saw neither, forwards A -> B */
	sink_reset();
	len = ipv4(b, MAC_GW, MAC_A, IP_A, IP_B, 0, 100, 7);
	assert_int_equal(ovr_fabric_rx(bus.f[2], 0, b, len, 0), 1);
	ovr_fabric_drain(bus.f[2], UINT64_MAX, collect, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.port[0], 1);
	assert_int_equal(out.id[0], 7);
	/* counted where it was learned, once; told routes not told on */
	assert_int_equal(pstats(bus.f[0], 0).learned, 1);
	assert_int_equal(pstats(bus.f[2], 0).learned, 0);
	assert_int_equal(bus.told, 2);
	/* a route moves: told again; a static route keeps its port */
	assert_int_equal(ovr_fabric_route_add(bus.f[2], IP_C, 2, MAC_C), 0);
	len = ipv4(b, MAC_GW, MAC_A, IP_A, IP_B, 0, 100, 8);
	assert_int_equal(ovr_fabric_rx(bus.f[1], 2, b, len, 0), 1);
	assert_int_equal(bus.told, 3);
	assert_int_equal(ovr_fabric_route_get(bus.f[0], IP_A, &r), 0);
	assert_int_equal(r.port, 2);
	assert_int_equal(ovr_fabric_learn(bus.f[2], IP_C, 1, MAC_A), 0);
	assert_int_equal(ovr_fabric_route_get(bus.f[2], IP_C, &r), 0);
	assert_int_equal(r.port, 2);
	assert_int_equal(ovr_fabric_learn(bus.f[2], IP_C, 9, MAC_A), -EINVAL);
	/* learning off: nothing told is taken */
	ovr_fabric_set_learning(bus.f[0], false);
	assert_int_equal(ovr_fabric_learn(bus.f[0], 0x0a000063, 1, MAC_B), 0);
	assert_int_equal(ovr_fabric_route_get(bus.f[0], 0x0a000063, &r),
			 -ENOENT);

	/* control: set changes every fabric, stats are the sums */
	m = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(ovr_fabric_ctl_n(bus.f, bus.n, "set 1 loss=0.5", m),
			 0);
	fclose(m);
	assert_string_equal(buf, "ok\n");
	for (unsigned i = 0; i < bus.n; i++) {
		struct ovr_link_cfg c;

		assert_int_equal(ovr_fabric_port_get(bus.f[i], 1, &c), 0);
		assert_true(c.loss > 0.49 && c.loss < 0.51);
	}
	m = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(ovr_fabric_ctl_n(bus.f, bus.n, "set 7 loss=0.5", m),
			 -EINVAL);
	fclose(m);
	assert_non_null(strstr(buf, "error"));
	m = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(ovr_fabric_ctl_n(bus.f, bus.n, "stats", m), 0);
	fclose(m);
	{
		uint64_t rx = 0, p0 = 0, p2 = 0, want0 = 0, want2 = 0;
		char *l;

		for (unsigned i = 0; i < bus.n; i++) {
			want0 += pstats(bus.f[i], 0).rx;
			want2 += pstats(bus.f[i], 2).rx;
		}
		/* the sums first: "rx" is the first line */
		assert_int_equal(
			sscanf(buf, "rx %llu", (unsigned long long *)&rx), 1);
		assert_non_null(l = strstr(buf, "p0.rx "));
		sscanf(l, "p0.rx %llu", (unsigned long long *)&p0);
		assert_non_null(l = strstr(buf, "p2.rx "));
		sscanf(l, "p2.rx %llu", (unsigned long long *)&p2);
		assert_int_equal(p0, want0);
		assert_int_equal(p2, want2);
		assert_int_equal(rx, 4); /* 2 broadcasts, A -> B twice */
		assert_int_equal(rx, want0 + want2 + pstats(bus.f[1], 1).rx);
		assert_non_null(strstr(buf, "ok\n"));
	}
	m = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(ovr_fabric_ctl_n(bus.f, bus.n, "stats 0 1", m),
			 -EINVAL);
	fclose(m);
	for (unsigned i = 0; i < bus.n; i++)
		ovr_fabric_destroy(bus.f[i]);
}

static void test_create_args(void **state)
{
	(void)state;
	assert_null(ovr_fabric_create(0, 1, 1500));
	assert_int_equal(errno, EINVAL);
	assert_null(ovr_fabric_create(OVR_FABRIC_MAX_PORTS + 1, 1, 1500));
	assert_null(ovr_fabric_create(2, 1, 63));
	ovr_fabric_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forward_and_learn),
		cmocka_unit_test(test_static_routes),
		cmocka_unit_test(test_route_foreach),
		cmocka_unit_test(test_arp_flood_and_reply),
		cmocka_unit_test(test_arp_proxy),
		cmocka_unit_test(test_ecn_rewrite),
		cmocka_unit_test(test_loss_rate),
		cmocka_unit_test(test_ge_bursts),
		cmocka_unit_test(test_dup_rate),
		cmocka_unit_test(test_reorder_rate),
		cmocka_unit_test(test_corrupt_rate),
		cmocka_unit_test(test_rate_limit),
		cmocka_unit_test(test_blackhole_and_runtime_change),
		cmocka_unit_test(test_seeded),
		cmocka_unit_test(test_parse_link),
		cmocka_unit_test(test_parse_port_ip),
		cmocka_unit_test(test_ctl),
		cmocka_unit_test(test_create_args),
		cmocka_unit_test(test_workers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
