// SPDX-License-Identifier: MIT
/*
 * Unit tests of the VPC tables: tenant isolation with overlapping vIP
 * ranges on the same hosts, anti-spoofing, security groups at connection
 * setup and per packet, moves, control-plane errors, counters, and
 * multicast (tenant host lists, ovr_vpc_tx_via, decap of frames to a
 * group).
 *
 * Two hosts, A and B, each with its own context (as two ovrdmad would
 * have), both knowing every binding; the test thread is a registered
 * reader of both. Frames travel from one context's ovr_vpc_tx() to the
 * other's ovr_vpc_decap(), or are forged with ovr_vpc_encap().
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ovrdma/vpc.h>

#define HA 0xc0a80001u /* 192.168.0.1 */
#define HB 0xc0a80002u /* 192.168.0.2 */
#define HC 0xc0a80003u /* 192.168.0.3: a third host, in no context here */
#define T1 100u
#define T2 200u
#define V(n) (0x0a000000u | (n)) /* 10.0.0.n */
#define NVIP 4
#define PDU 64u
#define BUF (OVR_WIRE_ENCAP_LEN + 2048)

/*
 * Both tenants use 10.0.0.1-4 on the same two hosts: V1 and V2 placed
 * crosswise (T1: V1 on A, V2 on B; T2: V1 on B, V2 on A), V3 on A and V4
 * on B in both. Device numbers say which tenant a delivery went to.
 */
struct place {
	uint32_t vni, vip, host;
	int32_t dev;
};
static const struct place places[] = {
	{ T1, V(1), HA, 11 }, { T1, V(2), HB, 12 }, { T1, V(3), HA, 13 },
	{ T1, V(4), HB, 14 }, { T2, V(1), HB, 21 }, { T2, V(2), HA, 22 },
	{ T2, V(3), HA, 23 }, { T2, V(4), HB, 24 },
};
#define NPLACE (sizeof(places) / sizeof(places[0]))

struct host {
	uint32_t ip;
	struct ovr_vpc *vpc;
	struct ovr_vpc_thread *t;
};

struct world {
	struct host a, b;
};

static void mac_of(uint32_t host, uint8_t mac[6])
{
	mac[0] = 0x02;
	mac[1] = 0x00;
	mac[2] = (uint8_t)(host >> 24);
	mac[3] = (uint8_t)(host >> 16);
	mac[4] = (uint8_t)(host >> 8);
	mac[5] = (uint8_t)host;
}

static const struct place *place_of(uint32_t vni, uint32_t vip)
{
	unsigned int i;

	for (i = 0; i < NPLACE; i++)
		if (places[i].vni == vni && places[i].vip == vip)
			return &places[i];
	fail_msg("no placement for %u/%08x", vni, vip);
	return &places[0];
}

static struct ovr_vpc_binding binding(const struct host *h, uint32_t host,
				      int32_t dev)
{
	struct ovr_vpc_binding b;

	memset(&b, 0, sizeof(b));
	b.host = host;
	b.dev = host == h->ip ? dev : OVR_VPC_DEV_NONE;
	mac_of(host, b.mac);
	return b;
}

static void host_init(struct host *h, uint32_t ip)
{
	static const struct ovr_vpc_sg_rule net = { V(0), 24 };
	struct ovr_vpc_config cfg;
	struct ovr_vpc_binding b;
	unsigned int i;

	memset(&cfg, 0, sizeof(cfg));
	cfg.local_host = ip;
	mac_of(ip, cfg.local_mac);
	h->ip = ip;
	h->vpc = ovr_vpc_create(&cfg);
	assert_non_null(h->vpc);
	assert_int_equal(ovr_vpc_tenant_add(h->vpc, T1), 0);
	assert_int_equal(ovr_vpc_tenant_add(h->vpc, T2), 0);
	for (i = 0; i < NPLACE; i++) {
		b = binding(h, places[i].host, places[i].dev);
		assert_int_equal(ovr_vpc_vip_add(h->vpc, places[i].vni,
						 places[i].vip, &b),
				 0);
	}
	assert_int_equal(ovr_vpc_sg_set(h->vpc, T1, &net, 1), 0);
	assert_int_equal(ovr_vpc_sg_set(h->vpc, T2, &net, 1), 0);
	h->t = ovr_vpc_thread_register(h->vpc);
	assert_non_null(h->t);
}

static int setup(void **state)
{
	struct world *w = calloc(1, sizeof(*w));

	assert_non_null(w);
	host_init(&w->a, HA);
	host_init(&w->b, HB);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;

	ovr_vpc_thread_unregister(w->a.t);
	ovr_vpc_thread_unregister(w->b.t);
	ovr_vpc_destroy(w->a.vpc);
	ovr_vpc_destroy(w->b.vpc);
	free(w);
	return 0;
}

static struct host *host_by_ip(struct world *w, uint32_t ip)
{
	return ip == HA ? &w->a : &w->b;
}

/* Send PDU bytes from @h over flow (vni, src -> dst); frame at buf. */
static int send_from(struct host *h, uint32_t vni, uint32_t src, uint32_t dst,
		     uint8_t *buf, size_t *len)
{
	struct ovr_vpc_flow f;
	int rc;

	ovr_vpc_flow_init(&f, vni, src, dst, 0x11, 0x22, 0);
	memset(buf + OVR_WIRE_ENCAP_LEN, 0x5a, PDU);
	rc = ovr_vpc_tx(h->t, &f, 0, buf + OVR_WIRE_ENCAP_LEN,
			OVR_WIRE_ENCAP_LEN, PDU);
	*len = OVR_WIRE_ENCAP_LEN + PDU;
	return rc;
}

/* A frame as any host could put it on the wire. */
static size_t forge(uint8_t *buf, uint32_t vni, uint32_t src_host,
		    uint32_t dst_host, uint32_t src_vip, uint32_t dst_vip)
{
	struct ovr_vpc_hdr h;

	memset(&h, 0, sizeof(h));
	h.src_host = src_host;
	h.dst_host = dst_host;
	h.vni = vni;
	h.src_vip = src_vip;
	h.dst_vip = dst_vip;
	h.sport = 50000;
	h.dport = OVR_WIRE_UDP_PORT;
	h.ecn = OVR_VPC_ECN_ECT0;
	mac_of(src_host, h.src_mac);
	mac_of(dst_host, h.dst_mac);
	memset(buf + OVR_WIRE_ENCAP_LEN, 0x33, PDU);
	assert_int_equal(ovr_vpc_encap(buf + OVR_WIRE_ENCAP_LEN,
				       OVR_WIRE_ENCAP_LEN, PDU, &h),
			 0);
	return OVR_WIRE_ENCAP_LEN + PDU;
}

static void set_vni(uint8_t *frame, uint32_t vni)
{
	frame[46] = (uint8_t)(vni >> 16);
	frame[47] = (uint8_t)(vni >> 8);
	frame[48] = (uint8_t)vni;
}

/* Exactly @n more drops than @before, all under @reason. */
static void assert_counted(struct ovr_vpc *vpc, const uint64_t *before,
			   unsigned int reason, uint64_t n)
{
	uint64_t now[OVR_VPC_NDROP];
	unsigned int r;

	ovr_vpc_drop_stats(vpc, now);
	for (r = 0; r < OVR_VPC_NDROP; r++)
		if (now[r] != before[r] + (r == reason ? n : 0))
			fail_msg("%s: %llu, want %llu", ovr_vpc_drop_name(r),
				 (unsigned long long)now[r],
				 (unsigned long long)(before[r] +
						      (r == reason ? n : 0)));
}

static void test_overlapping_tenants(void **state)
{
	static const uint32_t vnis[2] = { T1, T2 };
	struct world *w = *state;
	struct ovr_vpc_tenant_stats s1a, s2a, s1b, s2b;
	uint64_t delivered[2] = { 0, 0 };
	const struct place *ps, *pd;
	struct host *from, *to, *other;
	struct ovr_vpc_rx rx;
	uint8_t buf[BUF];
	unsigned int k, i, j;
	size_t len;
	int rc;

	for (k = 0; k < 2; k++) {
		for (i = 1; i <= NVIP; i++) {
			for (j = 1; j <= NVIP; j++) {
				if (i == j)
					continue;
				ps = place_of(vnis[k], V(i));
				pd = place_of(vnis[k], V(j));
				from = host_by_ip(w, ps->host);
				to = host_by_ip(w, pd->host);
				other = to == &w->a ? &w->b : &w->a;
				assert_int_equal(send_from(from, vnis[k], V(i),
							   V(j), buf, &len),
						 0);
				/* delivered to that tenant's device only */
				assert_int_equal(
					ovr_vpc_decap(to->t, buf, len, &rx), 0);
				assert_int_equal(rx.vni, vnis[k]);
				assert_int_equal(rx.src_vip, V(i));
				assert_int_equal(rx.dst_vip, V(j));
				assert_int_equal(rx.dev, pd->dev);
				assert_int_equal(rx.pdu_len, PDU);
				delivered[k]++;
				/* the other host does not take it */
				assert_int_equal(ovr_vpc_decap(other->t, buf,
							       len, &rx),
						 -OVR_VPC_DROP_NOT_THIS_HOST);
				/*
				 * Relabelled with the other tenant's VNI
				 * (which only a host could do: hosts are
				 * trusted), it is judged by that tenant's
				 * bindings alone: refused where that tenant
				 * places the vIPs elsewhere, else delivered
				 * to that tenant's device, never this one's.
				 */
				set_vni(buf, vnis[!k]);
				rc = ovr_vpc_decap(to->t, buf, len, &rx);
				if (place_of(vnis[!k], V(j))->host != to->ip)
					assert_int_equal(
						rc,
						-OVR_VPC_DROP_DST_NOT_LOCAL);
				else if (place_of(vnis[!k], V(i))->host !=
					 from->ip)
					assert_int_equal(rc,
							 -OVR_VPC_DROP_SPOOF);
				else /* same placement: other tenant's dev */
					assert_true(rc == 0 &&
						    rx.dev == place_of(vnis[!k],
								       V(j))
								      ->dev);
			}
		}
	}

	/* per-tenant accounting on each host adds up to the deliveries */
	assert_int_equal(ovr_vpc_tenant_stats(w->a.vpc, T1, &s1a), 0);
	assert_int_equal(ovr_vpc_tenant_stats(w->a.vpc, T2, &s2a), 0);
	assert_int_equal(ovr_vpc_tenant_stats(w->b.vpc, T1, &s1b), 0);
	assert_int_equal(ovr_vpc_tenant_stats(w->b.vpc, T2, &s2b), 0);
	assert_int_equal(s1a.tx_pkts + s1b.tx_pkts, delivered[0]);
	assert_int_equal(s2a.tx_pkts + s2b.tx_pkts, delivered[1]);
	assert_int_equal(s1a.tx_bytes + s1b.tx_bytes,
			 delivered[0] * (OVR_WIRE_ENCAP_LEN + PDU));
	assert_true(s1a.rx_pkts + s1b.rx_pkts >= delivered[0]);
	assert_true(s2a.rx_pkts + s2b.rx_pkts >= delivered[1]);
	assert_int_equal(s1a.rx_bytes,
			 s1a.rx_pkts * (OVR_WIRE_ENCAP_LEN + PDU));
	assert_int_equal(ovr_vpc_tenant_stats(w->a.vpc, 999, &s1a), -ENOENT);
}

/* Same vIP, same host, two tenants: the VNI alone picks the device. */
static void test_same_placement(void **state)
{
	struct world *w = *state;
	struct ovr_vpc_rx rx;
	uint8_t buf[BUF];
	size_t len;

	/* V3 is on A and V4 on B in both tenants */
	assert_int_equal(send_from(&w->b, T1, V(4), V(3), buf, &len), 0);
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx), 0);
	assert_int_equal(rx.dev, 13);
	assert_int_equal(send_from(&w->b, T2, V(4), V(3), buf, &len), 0);
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx), 0);
	assert_int_equal(rx.dev, 23);
}

static void test_antispoof(void **state)
{
	struct world *w = *state;
	uint64_t before[OVR_VPC_NDROP];
	struct ovr_vpc_tenant_stats ts0, ts1;
	struct ovr_vpc *a = w->a.vpc;
	struct ovr_vpc_thread *t = w->a.t;
	struct ovr_vpc_rx rx;
	uint8_t buf[BUF];
	size_t len;

	/* the genuine article: T1 V2 lives on B */
	len = forge(buf, T1, HB, HA, V(2), V(1));
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx), 0);
	assert_int_equal(rx.dev, 11);

	assert_int_equal(ovr_vpc_tenant_stats(a, T1, &ts0), 0);
	ovr_vpc_drop_stats(a, before);
	/* right vIP, wrong host: C pretends to be V2 */
	len = forge(buf, T1, HC, HA, V(2), V(1));
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx), -OVR_VPC_DROP_SPOOF);
	assert_counted(a, before, OVR_VPC_DROP_SPOOF, 1);
	/* B sends as V3, which lives on A */
	len = forge(buf, T1, HB, HA, V(3), V(1));
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx), -OVR_VPC_DROP_SPOOF);
	assert_counted(a, before, OVR_VPC_DROP_SPOOF, 2);
	/* B sends as T2's V1 (on B) into T1, where V1 is on A */
	len = forge(buf, T1, HB, HA, V(1), V(3));
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx), -OVR_VPC_DROP_SPOOF);
	assert_counted(a, before, OVR_VPC_DROP_SPOOF, 3);
	/* a source that is no vIP of the tenant */
	ovr_vpc_drop_stats(a, before);
	len = forge(buf, T1, HB, HA, V(99), V(1));
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx),
			 -OVR_VPC_DROP_SRC_UNKNOWN);
	assert_counted(a, before, OVR_VPC_DROP_SRC_UNKNOWN, 1);
	/* destination served elsewhere, or nowhere */
	ovr_vpc_drop_stats(a, before);
	len = forge(buf, T1, HB, HA, V(4), V(2));
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx),
			 -OVR_VPC_DROP_DST_NOT_LOCAL);
	len = forge(buf, T1, HB, HA, V(4), V(77));
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx),
			 -OVR_VPC_DROP_DST_NOT_LOCAL);
	assert_counted(a, before, OVR_VPC_DROP_DST_NOT_LOCAL, 2);
	assert_int_equal(ovr_vpc_tenant_stats(a, T1, &ts1), 0);
	assert_int_equal(ts1.drops, ts0.drops + 6);
	assert_int_equal(ts1.rx_pkts, ts0.rx_pkts);
	/* unknown tenant; and a frame for another host */
	ovr_vpc_drop_stats(a, before);
	len = forge(buf, 300, HB, HA, V(4), V(1));
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx),
			 -OVR_VPC_DROP_UNKNOWN_VNI);
	assert_counted(a, before, OVR_VPC_DROP_UNKNOWN_VNI, 1);
	ovr_vpc_drop_stats(a, before);
	len = forge(buf, T1, HB, HC, V(4), V(1));
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx),
			 -OVR_VPC_DROP_NOT_THIS_HOST);
	assert_counted(a, before, OVR_VPC_DROP_NOT_THIS_HOST, 1);
}

/* Reference: any rule whose prefix covers @ip. */
static int ref_allows(const struct ovr_vpc_sg_rule *r, unsigned int n,
		      uint32_t ip)
{
	unsigned int i;
	uint32_t mask;

	for (i = 0; i < n; i++) {
		mask = r[i].len ? 0xffffffffu << (32 - r[i].len) : 0;
		if ((ip & mask) == r[i].prefix)
			return 1;
	}
	return 0;
}

static void test_sg_ranges(void **state)
{
	static const struct ovr_vpc_sg_rule rules[] = {
		{ 0x0a000000u, 25 }, /* 10.0.0.0/25 */
		{ 0x0a000080u, 25 }, /* 10.0.0.128/25: adjacent, merges */
		{ 0x0a000200u, 24 }, /* 10.0.2.0/24 */
		{ 0x0a000000u, 16 }, /* 10.0.0.0/16: covers the above */
		{ 0xc0a80707u, 32 }, /* 192.168.7.7/32 */
		{ 0x0b000000u,
		  8 }, /* 11.0.0.0/8: adjacent to 10.0.0.0/16? no */
		{ 0xfffffffeu, 31 }, /* the very top */
	};
	static const uint32_t probes[] = {
		0,	     0x09ffffffu, 0x0a000000u, 0x0a0000ffu, 0x0a000100u,
		0x0a00ffffu, 0x0a010000u, 0x0affffffu, 0x0b000000u, 0x0bffffffu,
		0x0c000000u, 0xc0a80706u, 0xc0a80707u, 0xc0a80708u, 0xfffffffdu,
		0xfffffffeu, 0xffffffffu,
	};
	struct world *w = *state;
	struct ovr_vpc_sg_rule any = { 0, 0 };
	unsigned int n = sizeof(rules) / sizeof(rules[0]);
	uint32_t x = 12345, ip;
	unsigned int i, k;

	for (k = 1; k <= n; k++) { /* every prefix of the rule list */
		assert_int_equal(ovr_vpc_sg_set(w->a.vpc, T2, rules, k), 0);
		for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
			assert_int_equal(ovr_vpc_sg_allows(w->a.t, T2,
							   probes[i]),
					 ref_allows(rules, k, probes[i]));
		for (i = 0; i < 20000; i++) {
			x = x * 1664525u + 1013904223u; /* LCG */
			ip = i & 1 ? x : (0x0a000000u | (x >> 14));
			assert_int_equal(ovr_vpc_sg_allows(w->a.t, T2, ip),
					 ref_allows(rules, k, ip));
		}
	}
	/* /0 is everything; no rules is nothing */
	assert_int_equal(ovr_vpc_sg_set(w->a.vpc, T2, &any, 1), 0);
	assert_true(ovr_vpc_sg_allows(w->a.t, T2, 0));
	assert_true(ovr_vpc_sg_allows(w->a.t, T2, 0xffffffffu));
	assert_int_equal(ovr_vpc_sg_set(w->a.vpc, T2, NULL, 0), 0);
	assert_false(ovr_vpc_sg_allows(w->a.t, T2, V(1)));
	assert_false(ovr_vpc_sg_allows(w->a.t, 999, V(1)));

	/* rules that mean nothing are refused, the old set stays */
	any.prefix = 0x0a000001u;
	any.len = 24;
	assert_int_equal(ovr_vpc_sg_set(w->a.vpc, T2, &any, 1), -EINVAL);
	any.len = 33;
	assert_int_equal(ovr_vpc_sg_set(w->a.vpc, T2, &any, 1), -EINVAL);
	assert_int_equal(ovr_vpc_sg_set(w->a.vpc, T2, NULL, 1), -EINVAL);
	assert_int_equal(ovr_vpc_sg_set(w->a.vpc, 999, rules, 1), -ENOENT);
	assert_int_equal(ovr_vpc_sg_set(w->a.vpc, T2, rules,
					OVR_VPC_SG_MAX_RULES + 1),
			 -EINVAL);
}

static void test_sg_enforced(void **state)
{
	static const struct ovr_vpc_sg_rule only3 = { V(3), 32 };
	static const struct ovr_vpc_sg_rule net = { V(0), 24 };
	struct world *w = *state;
	uint64_t before[OVR_VPC_NDROP];
	struct ovr_vpc *a = w->a.vpc;
	struct ovr_vpc_binding b;
	struct ovr_vpc_rx rx;
	uint8_t buf[BUF];
	size_t len;

	/* connection setup: allowed, then each refusal with its errno */
	assert_int_equal(ovr_vpc_may_connect(a, T1, V(1), V(2)), 0);
	assert_int_equal(ovr_vpc_may_connect(a, 999, V(1), V(2)), -ENOENT);
	assert_int_equal(ovr_vpc_may_connect(a, T1, V(2), V(1)),
			 -EADDRNOTAVAIL); /* V2 is B's */
	assert_int_equal(ovr_vpc_may_connect(a, T1, V(99), V(1)),
			 -EADDRNOTAVAIL);
	assert_int_equal(ovr_vpc_may_connect(a, T1, V(1), V(99)),
			 -EHOSTUNREACH);
	/* a vIP of the other tenant only is unreachable, never allowed */
	b = binding(&w->a, HB, 0);
	assert_int_equal(ovr_vpc_vip_add(a, T2, V(50), &b), 0);
	assert_int_equal(ovr_vpc_may_connect(a, T2, V(2), V(50)), 0);
	assert_int_equal(ovr_vpc_may_connect(a, T1, V(1), V(50)),
			 -EHOSTUNREACH);
	assert_int_equal(ovr_vpc_vip_del(a, T2, V(50)), 0);

	/* narrowed to V3: V2 refused at setup and per packet */
	len = forge(buf, T1, HB, HA, V(2), V(1));
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx), 0);
	assert_int_equal(ovr_vpc_sg_set(a, T1, &only3, 1), 0);
	assert_int_equal(ovr_vpc_may_connect(a, T1, V(1), V(2)), -EACCES);
	assert_int_equal(ovr_vpc_may_connect(a, T1, V(1), V(3)), 0);
	ovr_vpc_drop_stats(a, before);
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx),
			 -OVR_VPC_DROP_SG_DENY);
	assert_counted(a, before, OVR_VPC_DROP_SG_DENY, 1);
	/* default deny: a new tenant, and an emptied rule set */
	assert_int_equal(ovr_vpc_sg_set(a, T1, NULL, 0), 0);
	assert_int_equal(ovr_vpc_may_connect(a, T1, V(1), V(3)), -EACCES);
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx),
			 -OVR_VPC_DROP_SG_DENY);
	assert_int_equal(ovr_vpc_tenant_add(a, 77), 0);
	b = binding(&w->a, HA, 5);
	assert_int_equal(ovr_vpc_vip_add(a, 77, V(1), &b), 0);
	b = binding(&w->a, HB, 0);
	assert_int_equal(ovr_vpc_vip_add(a, 77, V(2), &b), 0);
	assert_int_equal(ovr_vpc_may_connect(a, 77, V(1), V(2)), -EACCES);
	len = forge(buf, 77, HB, HA, V(2), V(1));
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx),
			 -OVR_VPC_DROP_SG_DENY);
	assert_int_equal(ovr_vpc_sg_set(a, 77, &net, 1), 0);
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx), 0);
	assert_int_equal(rx.dev, 5);
	/* restored: V2 back in */
	assert_int_equal(ovr_vpc_sg_set(a, T1, &net, 1), 0);
	len = forge(buf, T1, HB, HA, V(2), V(1));
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx), 0);
}

/* ---- a reader's cached verdicts see other threads' updates ------------------ */

struct upd {
	struct ovr_vpc *vpc;
	int what; /* 0: SG to V3 only, 1: SG back, 2: V2 deleted, 3: back */
	struct ovr_vpc_binding b;
	int rc;
};

static void *upd_main(void *arg)
{
	static const struct ovr_vpc_sg_rule only3 = { V(3), 32 };
	static const struct ovr_vpc_sg_rule net = { V(0), 24 };
	struct upd *u = arg;

	switch (u->what) {
	case 0:
		u->rc = ovr_vpc_sg_set(u->vpc, T1, &only3, 1);
		break;
	case 1:
		u->rc = ovr_vpc_sg_set(u->vpc, T1, &net, 1);
		break;
	case 2:
		u->rc = ovr_vpc_vip_del(u->vpc, T1, V(2));
		break;
	default:
		u->rc = ovr_vpc_vip_add(u->vpc, T1, V(2), &u->b);
	}
	return NULL;
}

static void update_from_thread(struct world *w, int what)
{
	struct upd u = { .vpc = w->a.vpc, .what = what };
	pthread_t th;

	u.b = binding(&w->a, HB, 0);
	assert_int_equal(pthread_create(&th, NULL, upd_main, &u), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(u.rc, 0);
}

/*
 * ovr_vpc_decap and ovr_vpc_tx keep the verdict of the flow before
 * until the thread's next quiescent state: an update by another thread
 * (a control thread) takes effect at that state at the latest, as for
 * any RCU reader - the same flow refused (SG), unroutable (vIP gone),
 * then allowed again.
 */
static void test_cached_verdicts(void **state)
{
	struct world *w = *state;
	static uint8_t txb[OVR_WIRE_ENCAP_LEN + 200];
	struct ovr_vpc_flow f;
	struct ovr_vpc_rx rx;
	uint8_t buf[BUF];
	size_t len;

	len = forge(buf, T1, HB, HA, V(2), V(1));
	for (int k = 0; k < 3; k++) /* the verdict cached, used */
		assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx), 0);
	update_from_thread(w, 0);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx),
			 -OVR_VPC_DROP_SG_DENY);
	update_from_thread(w, 1);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx), 0);

	ovr_vpc_flow_init(&f, T1, V(1), V(2), 1, 2, 0);
	for (int k = 0; k < 3; k++)
		assert_int_equal(ovr_vpc_tx(w->a.t, &f, 0,
					    txb + OVR_WIRE_ENCAP_LEN,
					    OVR_WIRE_ENCAP_LEN, 100),
				 0);
	update_from_thread(w, 2);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_tx(w->a.t, &f, 0, txb + OVR_WIRE_ENCAP_LEN,
				    OVR_WIRE_ENCAP_LEN, 100),
			 -EHOSTUNREACH);
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx),
			 -OVR_VPC_DROP_SRC_UNKNOWN);
	update_from_thread(w, 3);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_tx(w->a.t, &f, 0, txb + OVR_WIRE_ENCAP_LEN,
				    OVR_WIRE_ENCAP_LEN, 100),
			 0);
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx), 0);
}

static void test_move(void **state)
{
	struct world *w = *state;
	struct ovr_vpc *a = w->a.vpc;
	const struct ovr_vpc_vip *old, *cur;
	struct ovr_vpc_info i0, i1;
	struct ovr_vpc_binding b;
	struct ovr_vpc_rx rx;
	uint8_t buf[BUF], mac[6];
	size_t len;

	/* A sends to T1 V2 on B */
	assert_int_equal(send_from(&w->a, T1, V(1), V(2), buf, &len), 0);
	assert_int_equal(ovr_vpc_parse(buf, len, OVR_WIRE_UDP_PORT, &rx), 0);
	assert_int_equal(rx.dst_host, HB);
	mac_of(HB, mac);
	assert_memory_equal(buf, mac, 6);
	old = ovr_vpc_lookup(w->a.t, T1, V(2));
	assert_non_null(old);
	assert_int_equal(old->host, HB);

	/* V2 moves to C: the next packet goes there */
	ovr_vpc_info(a, &i0);
	b = binding(&w->a, HC, 0);
	assert_int_equal(ovr_vpc_vip_move(a, T1, V(2), &b), 0);
	assert_int_equal(send_from(&w->a, T1, V(1), V(2), buf, &len), 0);
	assert_int_equal(ovr_vpc_parse(buf, len, OVR_WIRE_UDP_PORT, &rx), 0);
	assert_int_equal(rx.dst_host, HC);
	mac_of(HC, mac);
	assert_memory_equal(buf, mac, 6);
	cur = ovr_vpc_lookup(w->a.t, T1, V(2));
	assert_non_null(cur);
	assert_ptr_not_equal(cur, old);
	assert_int_equal(cur->host, HC);
	/* no quiescent state yet: what we hold is the old binding, intact */
	assert_int_equal(old->host, HB);
	assert_int_equal(old->vip, V(2));
	assert_int_equal(old->vni, T1);
	/* receive side: V2 from B is now a spoof, from C it is genuine */
	len = forge(buf, T1, HB, HA, V(2), V(1));
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx),
			 -OVR_VPC_DROP_SPOOF);
	len = forge(buf, T1, HC, HA, V(2), V(1));
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx), 0);

	/* after our quiescent state the old binding is freed, and the
	 * tenant's old host list (C is a host of T1 now) */
	ovr_vpc_quiescent();
	ovr_vpc_barrier(a);
	ovr_vpc_info(a, &i1);
	assert_int_equal(i1.retired, i0.retired + 2);
	assert_int_equal(i1.freed, i1.retired);
	assert_int_equal(i1.vips, i0.vips);

	/* V2 moves here: delivered locally to its device */
	b = binding(&w->a, HA, 42);
	assert_int_equal(ovr_vpc_vip_move(a, T1, V(2), &b), 0);
	len = forge(buf, T1, HB, HA, V(4), V(2));
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx), 0);
	assert_int_equal(rx.dev, 42);
	assert_int_equal(ovr_vpc_may_connect(a, T1, V(2), V(4)), 0);

	/* and back to B */
	b = binding(&w->a, HB, 12);
	assert_int_equal(ovr_vpc_vip_move(a, T1, V(2), &b), 0);
	assert_int_equal(ovr_vpc_decap(w->a.t, buf, len, &rx),
			 -OVR_VPC_DROP_DST_NOT_LOCAL);

	/* errors */
	assert_int_equal(ovr_vpc_vip_move(a, T1, V(99), &b), -ENOENT);
	assert_int_equal(ovr_vpc_vip_move(a, 999, V(2), &b), -ENOENT);
	b.host = HA;
	b.dev = OVR_VPC_DEV_NONE; /* here, but on no device */
	assert_int_equal(ovr_vpc_vip_move(a, T1, V(2), &b), -EINVAL);
	cur = ovr_vpc_lookup(w->a.t, T1, V(2));
	assert_non_null(cur);
	assert_int_equal(cur->host, HB); /* refused moves change nothing */
}

static void test_ctl_errors(void **state)
{
	struct world *w = *state;
	struct ovr_vpc *a = w->a.vpc;
	struct ovr_vpc_info i0, i1;
	struct ovr_vpc_binding b;

	ovr_vpc_info(a, &i0);
	assert_int_equal(i0.tenants, 2);
	assert_int_equal(i0.vips, NPLACE);

	assert_int_equal(ovr_vpc_tenant_add(a, T1), -EEXIST);
	assert_int_equal(ovr_vpc_tenant_add(a, OVR_VPC_VNI_MAX + 1), -EINVAL);
	assert_int_equal(ovr_vpc_tenant_del(a, 999), -ENOENT);
	assert_int_equal(ovr_vpc_tenant_del(a, T1), -EBUSY);

	b = binding(&w->a, HB, 0);
	assert_int_equal(ovr_vpc_vip_add(a, T1, V(1), &b), -EEXIST);
	assert_int_equal(ovr_vpc_vip_add(a, 999, V(1), &b), -ENOENT);
	assert_int_equal(ovr_vpc_vip_add(a, T1, 0, &b), -EINVAL);
	assert_int_equal(ovr_vpc_vip_add(a, T1, 0xe0000001u, &b), -EINVAL);
	assert_int_equal(ovr_vpc_vip_add(a, T1, 0xffffffffu, &b), -EINVAL);
	assert_int_equal(ovr_vpc_vip_add(a, OVR_VPC_VNI_MAX + 1, V(9), &b),
			 -EINVAL);
	assert_int_equal(ovr_vpc_vip_add(a, T1, V(9), NULL), -EINVAL);
	b.dev = 3; /* a device, but another host */
	assert_int_equal(ovr_vpc_vip_add(a, T1, V(9), &b), -EINVAL);
	b.host = 0;
	b.dev = OVR_VPC_DEV_NONE;
	assert_int_equal(ovr_vpc_vip_add(a, T1, V(9), &b), -EINVAL);
	b.host = HA;
	b.dev = -2;
	assert_int_equal(ovr_vpc_vip_add(a, T1, V(9), &b), -EINVAL);
	assert_int_equal(ovr_vpc_vip_del(a, T1, V(9)), -ENOENT);
	assert_int_equal(ovr_vpc_vip_del(a, 999, V(1)), -ENOENT);

	/* a tenant comes and goes */
	assert_int_equal(ovr_vpc_tenant_add(a, 500), 0);
	b = binding(&w->a, HA, 1);
	assert_int_equal(ovr_vpc_vip_add(a, 500, V(1), &b), 0);
	assert_non_null(ovr_vpc_lookup(w->a.t, 500, V(1)));
	assert_int_equal(ovr_vpc_tenant_del(a, 500), -EBUSY);
	assert_int_equal(ovr_vpc_vip_del(a, 500, V(1)), 0);
	assert_null(ovr_vpc_lookup(w->a.t, 500, V(1)));
	assert_int_equal(ovr_vpc_tenant_del(a, 500), 0);
	assert_int_equal(ovr_vpc_tenant_del(a, 500), -ENOENT);
	ovr_vpc_info(a, &i1);
	assert_int_equal(i1.tenants, i0.tenants);
	assert_int_equal(i1.vips, i0.vips);
	/* the binding, the host list the delete emptied, the tenant */
	assert_int_equal(i1.retired, i0.retired + 3);
	/* the other tenant and host did not notice */
	assert_non_null(ovr_vpc_lookup(w->a.t, T1, V(1)));
	assert_null(ovr_vpc_lookup(w->b.t, 500, V(1)));

	/* bad configurations */
	{
		struct ovr_vpc_config cfg = { .local_host = 0 };

		errno = 0;
		assert_null(ovr_vpc_create(&cfg));
		assert_int_equal(errno, EINVAL);
		cfg.local_host = HA;
		cfg.underlay_mtu = 67;
		assert_null(ovr_vpc_create(&cfg));
		cfg.underlay_mtu = 65536;
		assert_null(ovr_vpc_create(&cfg));
		assert_null(ovr_vpc_create(NULL));
	}
}

static void test_tx_errors(void **state)
{
	struct world *w = *state;
	uint64_t before[OVR_VPC_NDROP];
	struct ovr_vpc_flow f;
	struct ovr_vpc_rx rx;
	static uint8_t buf[OVR_WIRE_ENCAP_LEN + 2000];
	uint8_t *pdu = buf + OVR_WIRE_ENCAP_LEN;

	ovr_vpc_flow_init(&f, T1, V(1), V(2), 1, 2, 10);
	/* 1500-byte underlay (the default): 1436-byte PDUs and no more */
	assert_int_equal(
		ovr_vpc_tx(w->a.t, &f, 3, pdu, OVR_WIRE_ENCAP_LEN, 1436), 0);
	assert_int_equal(
		ovr_vpc_decap(w->b.t, buf, OVR_WIRE_ENCAP_LEN + 1436, &rx), 0);
	assert_int_equal(rx.sport, ovr_vpc_flow_sport(f.hash, 3));
	assert_int_equal(rx.dscp, 10);
	assert_false(rx.ce);
	ovr_vpc_drop_stats(w->a.vpc, before);
	assert_int_equal(ovr_vpc_tx(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
				    1437),
			 -EMSGSIZE);
	assert_counted(w->a.vpc, before, OVR_VPC_DROP_TX_MTU, 1);
	ovr_vpc_drop_stats(w->a.vpc, before);
	f.dst_vip = V(99);
	assert_int_equal(ovr_vpc_tx(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
				    100),
			 -EHOSTUNREACH);
	f.vni = 999;
	assert_int_equal(ovr_vpc_tx(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
				    100),
			 -EHOSTUNREACH);
	assert_counted(w->a.vpc, before, OVR_VPC_DROP_TX_NO_ROUTE, 2);
	ovr_vpc_drop_stats(w->a.vpc, before);
	f.vni = T1;
	f.dst_vip = V(2);
	assert_int_equal(ovr_vpc_tx(w->a.t, &f, 0, pdu, 10, 100), -ENOSPC);
	assert_counted(w->a.vpc, before, 0, 0); /* caller bugs: not drops */
}

/* ---- multicast ------------------------------------------------------------- */

#define HD 0xc0a80004u /* 192.168.0.4: a fourth host */
#define G1 0xe0000101u /* 224.0.1.1 */
#define G2 0xeffffffeu /* 239.255.255.254 */

static void test_mcast_addr(void **state)
{
	(void)state;
	assert_false(ovr_vpc_is_mcast(0));
	assert_false(ovr_vpc_is_mcast(V(1)));
	assert_false(ovr_vpc_is_mcast(0xdfffffffu));
	assert_true(ovr_vpc_is_mcast(0xe0000000u));
	assert_true(ovr_vpc_is_mcast(G1));
	assert_true(ovr_vpc_is_mcast(0xefffffffu));
	assert_false(ovr_vpc_is_mcast(0xf0000000u));
	assert_false(ovr_vpc_is_mcast(0xffffffffu));
}

/* Entry @i of @h is @host with @mac (reserved bytes zero). */
static void assert_host(const struct ovr_vpc_host *h, unsigned int i,
			uint32_t host, const uint8_t mac[6])
{
	assert_int_equal(h[i].host, host);
	assert_memory_equal(h[i].mac, mac, 6);
	assert_int_equal(h[i].rsvd[0], 0);
	assert_int_equal(h[i].rsvd[1], 0);
}

static void test_mcast_tenant_hosts(void **state)
{
	static const uint8_t local_mac[6] = { 0x02, 0xaa, 0, 0, 0, 0x01 };
	static const uint8_t other_mac[6] = { 0x02, 0xbb, 0, 0, 0, 0x02 };
	struct ovr_vpc_config cfg;
	struct ovr_vpc_host h[4];
	struct ovr_vpc_binding b;
	struct ovr_vpc_info i0, i1;
	struct ovr_vpc_thread *t;
	struct ovr_vpc *vpc;
	uint8_t mb[6], mc[6], md[6];

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.local_host = HA;
	memcpy(cfg.local_mac, local_mac, 6);
	vpc = ovr_vpc_create(&cfg);
	assert_non_null(vpc);
	t = ovr_vpc_thread_register(vpc);
	assert_non_null(t);
	mac_of(HB, mb);
	mac_of(HC, mc);
	mac_of(HD, md);

	/* unknown tenant, then a tenant without vIPs */
	memset(h, 0x77, sizeof(h));
	assert_int_equal(ovr_vpc_tenant_hosts(t, T1, h, 4), 0);
	assert_int_equal(h[0].host, 0x77777777u); /* nothing written */
	assert_int_equal(ovr_vpc_tenant_add(vpc, T1), 0);
	assert_int_equal(ovr_vpc_tenant_add(vpc, T2), 0);
	assert_int_equal(ovr_vpc_tenant_hosts(t, T1, h, 4), 0);

	/* one host */
	b = binding(&(struct host){ .ip = HA }, HB, 0);
	assert_int_equal(ovr_vpc_vip_add(vpc, T1, V(1), &b), 0);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_tenant_hosts(t, T1, h, 4), 1);
	assert_host(h, 0, HB, mb);

	/* three hosts, one of them this one (with local_mac, not the
	 * binding's), B twice: collapsed; ascending order */
	b = binding(&(struct host){ .ip = HA }, HC, 0);
	assert_int_equal(ovr_vpc_vip_add(vpc, T1, V(2), &b), 0);
	b = binding(&(struct host){ .ip = HA }, HB, 0);
	assert_int_equal(ovr_vpc_vip_add(vpc, T1, V(3), &b), 0);
	b = binding(&(struct host){ .ip = HA }, HA, 7);
	assert_int_equal(ovr_vpc_vip_add(vpc, T1, V(4), &b), 0);
	ovr_vpc_quiescent();
	memset(h, 0x77, sizeof(h));
	assert_int_equal(ovr_vpc_tenant_hosts(t, T1, h, 4), 3);
	assert_host(h, 0, HA, local_mac);
	assert_host(h, 1, HB, mb);
	assert_host(h, 2, HC, mc);
	assert_int_equal(h[3].host, 0x77777777u);
	/* the other tenant has none */
	assert_int_equal(ovr_vpc_tenant_hosts(t, T2, h, 4), 0);

	/* cap smaller than n: the first cap entries, n returned */
	memset(h, 0x77, sizeof(h));
	assert_int_equal(ovr_vpc_tenant_hosts(t, T1, h, 2), 3);
	assert_host(h, 0, HA, local_mac);
	assert_host(h, 1, HB, mb);
	assert_int_equal(h[2].host, 0x77777777u);
	assert_int_equal(ovr_vpc_tenant_hosts(t, T1, NULL, 0), 3);

	/* another vIP on a host already listed: the list stays, nothing is
	 * retired */
	ovr_vpc_info(vpc, &i0);
	b = binding(&(struct host){ .ip = HA }, HB, 0);
	assert_int_equal(ovr_vpc_vip_add(vpc, T1, V(5), &b), 0);
	ovr_vpc_info(vpc, &i1);
	assert_int_equal(i1.retired, i0.retired);

	/* deletes: B stays while one of its three vIPs does */
	assert_int_equal(ovr_vpc_vip_del(vpc, T1, V(1)), 0);
	assert_int_equal(ovr_vpc_vip_del(vpc, T1, V(3)), 0);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_tenant_hosts(t, T1, h, 4), 3);
	assert_host(h, 1, HB, mb);
	assert_int_equal(ovr_vpc_vip_del(vpc, T1, V(5)), 0);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_tenant_hosts(t, T1, h, 4), 2);
	assert_host(h, 0, HA, local_mac);
	assert_host(h, 1, HC, mc);

	/* moves: V2 from C to B (C gone, B back), V4 from here to D (this
	 * host gone) */
	b = binding(&(struct host){ .ip = HA }, HB, 0);
	assert_int_equal(ovr_vpc_vip_move(vpc, T1, V(2), &b), 0);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_tenant_hosts(t, T1, h, 4), 2);
	assert_host(h, 0, HA, local_mac);
	assert_host(h, 1, HB, mb);
	b = binding(&(struct host){ .ip = HA }, HD, 0);
	assert_int_equal(ovr_vpc_vip_move(vpc, T1, V(4), &b), 0);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_tenant_hosts(t, T1, h, 4), 2);
	assert_host(h, 0, HB, mb);
	assert_host(h, 1, HD, md);

	/* a new next hop towards B (a move on the same host): the list
	 * follows the binding added or moved last */
	b = binding(&(struct host){ .ip = HA }, HB, 0);
	memcpy(b.mac, other_mac, 6);
	assert_int_equal(ovr_vpc_vip_move(vpc, T1, V(2), &b), 0);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_tenant_hosts(t, T1, h, 4), 2);
	assert_host(h, 0, HB, other_mac);

	/* the last vIPs go: empty again; then the tenant */
	assert_int_equal(ovr_vpc_vip_del(vpc, T1, V(2)), 0);
	assert_int_equal(ovr_vpc_vip_del(vpc, T1, V(4)), 0);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_tenant_hosts(t, T1, h, 4), 0);
	assert_int_equal(ovr_vpc_tenant_del(vpc, T1), 0);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_tenant_hosts(t, T1, h, 4), 0);

	/* a tenant destroyed with vIPs frees its list with it */
	b = binding(&(struct host){ .ip = HA }, HC, 0);
	assert_int_equal(ovr_vpc_vip_add(vpc, T2, V(1), &b), 0);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_tenant_hosts(t, T2, h, 4), 1);
	assert_host(h, 0, HC, mc);
	ovr_vpc_barrier(vpc);
	ovr_vpc_info(vpc, &i1);
	assert_int_equal(i1.freed, i1.retired);
	ovr_vpc_thread_unregister(t);
	ovr_vpc_destroy(vpc);
}

static void test_mcast_tx_via(void **state)
{
	static const uint8_t via_mac[6] = { 0x02, 0x99, 0, 0, 0, 0x02 };
	struct world *w = *state;
	uint64_t before[OVR_VPC_NDROP];
	struct ovr_vpc_tenant_stats ta0, ta1, tb0, tb1;
	struct ovr_vpc_host via;
	struct ovr_vpc_flow f;
	struct ovr_vpc_rx rx;
	static uint8_t buf[OVR_WIRE_ENCAP_LEN + 2000];
	uint8_t *pdu = buf + OVR_WIRE_ENCAP_LEN, mac[6];

	memset(&via, 0, sizeof(via));
	via.host = HB;
	memcpy(via.mac, via_mac, 6);
	ovr_vpc_flow_init(&f, T1, V(1), G1, 0x11, 0xffffff, 10);
	assert_int_equal(ovr_vpc_tenant_stats(w->a.vpc, T1, &ta0), 0);
	assert_int_equal(ovr_vpc_tenant_stats(w->b.vpc, T1, &tb0), 0);
	ovr_vpc_drop_stats(w->a.vpc, before);
	memset(pdu, 0x5a, PDU);
	assert_int_equal(ovr_vpc_tx_via(w->a.t, &f, 2, pdu, OVR_WIRE_ENCAP_LEN,
					PDU, &via),
			 0);
	/* outer: to @via, host and MAC; inner: to the group */
	assert_memory_equal(buf, via_mac, 6);
	mac_of(HA, mac);
	assert_memory_equal(buf + 6, mac, 6);
	assert_int_equal(ovr_vpc_parse(buf, OVR_WIRE_ENCAP_LEN + PDU,
				       OVR_WIRE_UDP_PORT, &rx),
			 0);
	assert_int_equal(rx.dst_host, HB);
	assert_int_equal(rx.src_host, HA);
	assert_int_equal(rx.vni, T1);
	assert_int_equal(rx.src_vip, V(1));
	assert_int_equal(rx.dst_vip, G1);
	assert_int_equal(rx.sport, ovr_vpc_flow_sport(f.hash, 2));
	assert_int_equal(rx.dscp, 10);
	assert_int_equal(rx.pdu_len, PDU);
	assert_int_equal(rx.dev, OVR_VPC_DEV_NONE);
	/* counted as sent by the tenant, nothing dropped */
	assert_int_equal(ovr_vpc_tenant_stats(w->a.vpc, T1, &ta1), 0);
	assert_int_equal(ta1.tx_pkts, ta0.tx_pkts + 1);
	assert_int_equal(ta1.tx_bytes, ta0.tx_bytes + OVR_WIRE_ENCAP_LEN + PDU);
	assert_counted(w->a.vpc, before, 0, 0);
	/* and B takes it: no device, the group as destination */
	assert_int_equal(
		ovr_vpc_decap(w->b.t, buf, OVR_WIRE_ENCAP_LEN + PDU, &rx), 0);
	assert_int_equal(rx.dev, OVR_VPC_DEV_NONE);
	assert_int_equal(rx.dst_vip, G1);
	assert_int_equal(rx.src_vip, V(1));
	assert_int_equal(ovr_vpc_tenant_stats(w->b.vpc, T1, &tb1), 0);
	assert_int_equal(tb1.rx_pkts, tb0.rx_pkts + 1);
	assert_int_equal(tb1.rx_bytes, tb0.rx_bytes + OVR_WIRE_ENCAP_LEN + PDU);

	/* another copy: another host, a group at the top of 224/4 */
	via.host = HC;
	f.dst_vip = G2;
	assert_int_equal(ovr_vpc_tx_via(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
					PDU, &via),
			 0);
	assert_int_equal(ovr_vpc_parse(buf, OVR_WIRE_ENCAP_LEN + PDU,
				       OVR_WIRE_UDP_PORT, &rx),
			 0);
	assert_int_equal(rx.dst_host, HC);
	assert_int_equal(rx.dst_vip, G2);

	/* a unicast destination, no host: caller bugs, not counted */
	ovr_vpc_drop_stats(w->a.vpc, before);
	f.dst_vip = V(2);
	assert_int_equal(ovr_vpc_tx_via(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
					PDU, &via),
			 -EINVAL);
	f.dst_vip = 0xf0000001u; /* class E: not multicast */
	assert_int_equal(ovr_vpc_tx_via(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
					PDU, &via),
			 -EINVAL);
	f.dst_vip = G1;
	assert_int_equal(ovr_vpc_tx_via(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
					PDU, NULL),
			 -EINVAL);
	via.host = 0;
	assert_int_equal(ovr_vpc_tx_via(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
					PDU, &via),
			 -EINVAL);
	via.host = HB;
	assert_int_equal(ovr_vpc_tx_via(w->a.t, &f, 0, pdu, 10, PDU, &via),
			 -ENOSPC);
	assert_counted(w->a.vpc, before, 0, 0);
	/* too large for the underlay: counted tx_mtu */
	assert_int_equal(ovr_vpc_tx_via(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
					1437, &via),
			 -EMSGSIZE);
	assert_counted(w->a.vpc, before, OVR_VPC_DROP_TX_MTU, 1);
	assert_int_equal(ovr_vpc_tx_via(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
					1436, &via),
			 0);
	/* unknown tenant: counted tx_no_route */
	ovr_vpc_drop_stats(w->a.vpc, before);
	f.vni = 999;
	assert_int_equal(ovr_vpc_tx_via(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
					PDU, &via),
			 -ENOENT);
	assert_counted(w->a.vpc, before, OVR_VPC_DROP_TX_NO_ROUTE, 1);
	/* the tenant went away since the last copy (cached): seen after the
	 * quiescent state */
	f.vni = 500;
	assert_int_equal(ovr_vpc_tenant_add(w->a.vpc, 500), 0);
	assert_int_equal(ovr_vpc_tx_via(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
					PDU, &via),
			 0);
	assert_int_equal(ovr_vpc_tenant_del(w->a.vpc, 500), 0);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_tx_via(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
					PDU, &via),
			 -ENOENT);
	/* ovr_vpc_tx has no route to a group */
	f.vni = T1;
	assert_int_equal(ovr_vpc_tx(w->a.t, &f, 0, pdu, OVR_WIRE_ENCAP_LEN,
				    PDU),
			 -EHOSTUNREACH);
}

static void test_mcast_decap(void **state)
{
	struct world *w = *state;
	struct ovr_vpc *a = w->a.vpc;
	struct ovr_vpc_thread *t = w->a.t;
	uint64_t before[OVR_VPC_NDROP];
	struct ovr_vpc_tenant_stats ts0, ts1;
	struct ovr_vpc_binding b;
	struct ovr_vpc_rx rx;
	uint8_t buf[BUF];
	size_t len;

	/* T1: V1, V3 here (A); V2, V4 on B. From V2 on B to a group: taken,
	 * no device; again from the verdict cache */
	assert_int_equal(ovr_vpc_tenant_stats(a, T1, &ts0), 0);
	ovr_vpc_drop_stats(a, before);
	len = forge(buf, T1, HB, HA, V(2), G1);
	for (int k = 0; k < 3; k++) {
		memset(&rx, 0, sizeof(rx));
		rx.dev = 99;
		assert_int_equal(ovr_vpc_decap(t, buf, len, &rx), 0);
		assert_int_equal(rx.dev, OVR_VPC_DEV_NONE);
		assert_int_equal(rx.vni, T1);
		assert_int_equal(rx.src_vip, V(2));
		assert_int_equal(rx.dst_vip, G1);
		assert_int_equal(rx.src_host, HB);
		assert_int_equal(rx.pdu_len, PDU);
		assert_ptr_equal(rx.pdu, buf + OVR_WIRE_ENCAP_LEN);
	}
	assert_counted(a, before, 0, 0);
	assert_int_equal(ovr_vpc_tenant_stats(a, T1, &ts1), 0);
	assert_int_equal(ts1.rx_pkts, ts0.rx_pkts + 3);
	assert_int_equal(ts1.rx_bytes, ts0.rx_bytes + 3 * len);
	assert_int_equal(ts1.drops, ts0.drops);
	/* the same flow to a unicast vIP right after: its own verdict */
	len = forge(buf, T1, HB, HA, V(2), V(1));
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx), 0);
	assert_int_equal(rx.dev, 11);
	len = forge(buf, T1, HB, HA, V(2), G2);
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx), 0);
	assert_int_equal(rx.dev, OVR_VPC_DEV_NONE);
	/* from a vIP of this host (the copy a node sends itself) */
	len = forge(buf, T1, HA, HA, V(1), G1);
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx), 0);
	assert_int_equal(rx.dev, OVR_VPC_DEV_NONE);
	/* the VNI picks the tenant: T2's V1 lives on B */
	len = forge(buf, T2, HB, HA, V(1), G1);
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx), 0);
	assert_int_equal(rx.vni, T2);

	/* the drops, each under its reason */
	assert_int_equal(ovr_vpc_tenant_stats(a, T1, &ts0), 0);
	ovr_vpc_drop_stats(a, before);
	len = forge(buf, T1, HB, HC, V(2), G1);
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx),
			 -OVR_VPC_DROP_NOT_THIS_HOST);
	assert_counted(a, before, OVR_VPC_DROP_NOT_THIS_HOST, 1);
	ovr_vpc_drop_stats(a, before);
	len = forge(buf, 999, HB, HA, V(2), G1);
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx),
			 -OVR_VPC_DROP_UNKNOWN_VNI);
	assert_counted(a, before, OVR_VPC_DROP_UNKNOWN_VNI, 1);
	ovr_vpc_drop_stats(a, before);
	len = forge(buf, T1, HB, HA, V(99), G1);
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx),
			 -OVR_VPC_DROP_SRC_UNKNOWN);
	assert_counted(a, before, OVR_VPC_DROP_SRC_UNKNOWN, 1);
	/* a multicast source is never a vIP: dropped, to a group or not */
	ovr_vpc_drop_stats(a, before);
	len = forge(buf, T1, HB, HA, G2, G1);
	assert_int_equal(ovr_vpc_parse(buf, len, OVR_WIRE_UDP_PORT, &rx), 0);
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx),
			 -OVR_VPC_DROP_SRC_UNKNOWN);
	len = forge(buf, T1, HB, HA, G2, V(1));
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx),
			 -OVR_VPC_DROP_SRC_UNKNOWN);
	assert_counted(a, before, OVR_VPC_DROP_SRC_UNKNOWN, 2);
	/* V2 lives on B, not C; V1 lives here, not on B */
	ovr_vpc_drop_stats(a, before);
	len = forge(buf, T1, HC, HA, V(2), G1);
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx), -OVR_VPC_DROP_SPOOF);
	len = forge(buf, T1, HB, HA, V(1), G1);
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx), -OVR_VPC_DROP_SPOOF);
	assert_counted(a, before, OVR_VPC_DROP_SPOOF, 2);
	/* a vIP of the tenant outside its security group (10.0.0.0/24) */
	b = binding(&w->a, HB, 0);
	assert_int_equal(ovr_vpc_vip_add(a, T1, 0x0a000105u, &b), 0);
	ovr_vpc_drop_stats(a, before);
	len = forge(buf, T1, HB, HA, 0x0a000105u, G1);
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx),
			 -OVR_VPC_DROP_SG_DENY);
	assert_counted(a, before, OVR_VPC_DROP_SG_DENY, 1);
	assert_int_equal(ovr_vpc_tenant_stats(a, T1, &ts1), 0);
	assert_int_equal(ts1.drops, ts0.drops + 6); /* tenant known: 6 */
	assert_int_equal(ts1.rx_pkts, ts0.rx_pkts);
	/* the group rule follows a security-group change after the
	 * quiescent state, as unicast does (cached verdict first) */
	len = forge(buf, T1, HB, HA, V(2), G1);
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx), 0);
	assert_int_equal(ovr_vpc_sg_set(a, T1, NULL, 0), 0);
	ovr_vpc_quiescent();
	assert_int_equal(ovr_vpc_decap(t, buf, len, &rx),
			 -OVR_VPC_DROP_SG_DENY);
}

/* ---- counters from several reader threads ---------------------------------- */

struct worker {
	struct ovr_vpc *vpc;
	const uint8_t *good, *bad;
	size_t good_len, bad_len;
	unsigned int n;
	int failed;
};

static void *worker_main(void *arg)
{
	struct worker *k = arg;
	struct ovr_vpc_thread *t = ovr_vpc_thread_register(k->vpc);
	struct ovr_vpc_rx rx;
	unsigned int i;

	if (!t) {
		k->failed = 1;
		return NULL;
	}
	for (i = 0; i < k->n; i++) {
		if (ovr_vpc_decap(t, k->good, k->good_len, &rx) != 0 ||
		    ovr_vpc_decap(t, k->bad, k->bad_len, &rx) !=
			    -OVR_VPC_DROP_TRUNC)
			k->failed = 1;
		ovr_vpc_quiescent();
	}
	ovr_vpc_thread_unregister(t);
	return NULL;
}

static void test_counters_threads(void **state)
{
	struct world *w = *state;
	uint64_t before[OVR_VPC_NDROP];
	struct ovr_vpc_tenant_stats s0, s1;
	struct worker k[3];
	pthread_t th[3];
	uint8_t good[BUF];
	size_t len;
	unsigned int i;

	len = forge(good, T1, HB, HA, V(2), V(1));
	assert_int_equal(ovr_vpc_tenant_stats(w->a.vpc, T1, &s0), 0);
	ovr_vpc_drop_stats(w->a.vpc, before);
	/* the main thread goes offline while it waits: it delays no one */
	ovr_vpc_thread_offline();
	for (i = 0; i < 3; i++) {
		k[i].vpc = w->a.vpc;
		k[i].good = good;
		k[i].good_len = len;
		k[i].bad = good;
		k[i].bad_len = 40;
		k[i].n = 1000 * (i + 1);
		k[i].failed = 0;
		assert_int_equal(
			pthread_create(&th[i], NULL, worker_main, &k[i]), 0);
	}
	for (i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(k[i].failed, 0);
	}
	ovr_vpc_thread_online();
	/* 1000 + 2000 + 3000 of each, whoever counted them */
	assert_int_equal(ovr_vpc_tenant_stats(w->a.vpc, T1, &s1), 0);
	assert_int_equal(s1.rx_pkts - s0.rx_pkts, 6000);
	assert_int_equal(s1.rx_bytes - s0.rx_bytes, 6000 * len);
	assert_int_equal(s1.drops, s0.drops); /* truncated: not attributable */
	assert_counted(w->a.vpc, before, OVR_VPC_DROP_TRUNC, 6000);
}

static void test_max_threads(void **state)
{
	struct ovr_vpc_config cfg = { .local_host = HA, .max_threads = 2 };
	struct ovr_vpc_thread *t1, *t2, *t3;
	struct ovr_vpc *vpc = ovr_vpc_create(&cfg);

	(void)state;
	assert_non_null(vpc);
	t1 = ovr_vpc_thread_register(vpc);
	t2 = ovr_vpc_thread_register(vpc);
	assert_non_null(t1);
	assert_non_null(t2);
	errno = 0;
	t3 = ovr_vpc_thread_register(vpc);
	assert_null(t3);
	assert_int_equal(errno, ENOSPC);
	ovr_vpc_thread_unregister(t1);
	t3 = ovr_vpc_thread_register(vpc);
	assert_non_null(t3);
	ovr_vpc_thread_unregister(t2);
	ovr_vpc_thread_unregister(t3);
	ovr_vpc_destroy(vpc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_overlapping_tenants, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_same_placement, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_antispoof, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sg_ranges, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sg_enforced, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cached_verdicts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_move, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ctl_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tx_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_counters_threads, setup,
						teardown),
		cmocka_unit_test(test_mcast_addr),
		cmocka_unit_test(test_mcast_tenant_hosts),
		cmocka_unit_test_setup_teardown(test_mcast_tx_via, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mcast_decap, setup,
						teardown),
		cmocka_unit_test(test_max_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
