// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the VPC receive path: ovr_vpc_parse() and
 * ovr_vpc_decap() against a small fixed table (tenant 0x123456: 10.0.0.1
 * on 192.168.0.1, 10.0.0.2 served here on 192.168.0.2 as device 3, 10.0.1.1
 * on 192.168.0.1 but outside the security group 10.0.0.0/24).
 *
 * Input: one mode byte, then the frame. Mode bits, applied in this order,
 * let the fuzzer past the checks random bytes almost never satisfy:
 *   bit 2: rewrite the four length fields to agree with the input length;
 *   bit 0: recompute the outer IPv4 header checksum;
 *   bit 1: recompute the inner IPv4 header checksum.
 *
 * Properties checked (abort on violation):
 *   - reads stay inside the frame (exact-size heap copy, ASan);
 *   - both return 0 or a known negative reason, parse only header reasons;
 *   - decap refuses everything parse refuses, for the same reason, and
 *     otherwise adds only table reasons; when both accept, they agree;
 *   - an accepted frame's PDU is exactly the bytes after the 78 of
 *     encapsulation, and re-encapsulating what was parsed gives a frame
 *     that parses to the same thing.
 *
 * Built with -DOVR_VPC_FUZZ_GEN the same file is the seed generator:
 *   gen-vpc-decap-corpus DIR          writes tests/fuzz/corpus/vpc_decap
 *   gen-vpc-decap-corpus --check DIR  fails if DIR lacks a seed or holds a
 *                                     different one (the unit suite runs
 *                                     this, so seeds follow code changes)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/vpc.h>

#define FUZZ_VNI 0x123456u
#define FUZZ_HOST_PEER 0xc0a80001u /* 192.168.0.1 */
#define FUZZ_HOST_LOCAL 0xc0a80002u /* 192.168.0.2 */
#define FUZZ_VIP_PEER 0x0a000001u /* 10.0.0.1 */
#define FUZZ_VIP_LOCAL 0x0a000002u /* 10.0.0.2 */
#define FUZZ_VIP_DENIED 0x0a000101u /* 10.0.1.1 */
#define FUZZ_DEV 3

#define MODE_FIX_OUTER 0x01u
#define MODE_FIX_INNER 0x02u
#define MODE_FIX_LENGTHS 0x04u

static void put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* RFC 1071 over the 20 bytes at @ip, written into its checksum field. */
static void fix_csum(uint8_t *ip)
{
	uint32_t s = 0;
	unsigned int i;

	ip[10] = ip[11] = 0;
	for (i = 0; i < 20; i += 2)
		s += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	put16(ip + 10, (uint16_t)~s);
}

static void apply_mode(uint8_t mode, uint8_t *f, size_t len)
{
	if ((mode & MODE_FIX_LENGTHS) && len >= OVR_WIRE_ENCAP_LEN &&
	    len - OVR_WIRE_ETH_HLEN <= 65535) {
		put16(f + 16, len - 14); /* outer IPv4 total length */
		put16(f + 38, len - 34); /* outer UDP length */
		put16(f + 52, len - 50); /* inner IPv4 total length */
		put16(f + 74, len - 70); /* inner UDP length */
	}
	if ((mode & MODE_FIX_OUTER) && len >= 34)
		fix_csum(f + 14);
	if ((mode & MODE_FIX_INNER) && len >= 70)
		fix_csum(f + 50);
}

static struct ovr_vpc_thread *fuzz_reader(void)
{
	static const struct ovr_vpc_sg_rule net = { 0x0a000000u, 24 };
	static struct ovr_vpc_thread *t;
	struct ovr_vpc_config cfg;
	struct ovr_vpc_binding peer = { .host = FUZZ_HOST_PEER,
					.dev = OVR_VPC_DEV_NONE,
					.mac = { 2, 0, 0, 0, 0, 1 } };
	struct ovr_vpc_binding local = { .host = FUZZ_HOST_LOCAL,
					 .dev = FUZZ_DEV,
					 .mac = { 2, 0, 0, 0, 0, 2 } };
	struct ovr_vpc *vpc;

	if (t)
		return t;
	memset(&cfg, 0, sizeof(cfg));
	cfg.local_host = FUZZ_HOST_LOCAL;
	vpc = ovr_vpc_create(&cfg);
	if (!vpc || ovr_vpc_tenant_add(vpc, FUZZ_VNI) ||
	    ovr_vpc_vip_add(vpc, FUZZ_VNI, FUZZ_VIP_PEER, &peer) ||
	    ovr_vpc_vip_add(vpc, FUZZ_VNI, FUZZ_VIP_LOCAL, &local) ||
	    ovr_vpc_vip_add(vpc, FUZZ_VNI, FUZZ_VIP_DENIED, &peer) ||
	    ovr_vpc_sg_set(vpc, FUZZ_VNI, &net, 1))
		abort();
	/* lives for the process: the fuzzer never stops calling */
	t = ovr_vpc_thread_register(vpc);
	if (!t)
		abort();
	return t;
}

static int same_rx(const struct ovr_vpc_rx *a, const struct ovr_vpc_rx *b)
{
	return a->pdu_len == b->pdu_len && a->vni == b->vni &&
	       a->src_vip == b->src_vip && a->dst_vip == b->dst_vip &&
	       a->src_host == b->src_host && a->dst_host == b->dst_host &&
	       a->sport == b->sport && a->dscp == b->dscp && a->ce == b->ce;
}

/* Encapsulate @rx's PDU again from what was parsed; must parse the same. */
static void reencap(const uint8_t *f, const struct ovr_vpc_rx *rx)
{
	struct ovr_vpc_rx again;
	struct ovr_vpc_hdr h;
	uint8_t *out;

	memset(&h, 0, sizeof(h));
	h.src_host = rx->src_host;
	h.dst_host = rx->dst_host;
	h.vni = rx->vni;
	h.src_vip = rx->src_vip;
	h.dst_vip = rx->dst_vip;
	h.sport = rx->sport;
	h.dport = OVR_WIRE_UDP_PORT;
	h.dscp = rx->dscp;
	h.ecn = f[15] & 3;
	memcpy(h.dst_mac, f, 6);
	memcpy(h.src_mac, f + 6, 6);
	out = malloc(OVR_WIRE_ENCAP_LEN + rx->pdu_len);
	if (!out)
		abort();
	memcpy(out + OVR_WIRE_ENCAP_LEN, rx->pdu, rx->pdu_len);
	if (ovr_vpc_encap(out + OVR_WIRE_ENCAP_LEN, OVR_WIRE_ENCAP_LEN,
			  rx->pdu_len, &h) ||
	    ovr_vpc_parse(out, OVR_WIRE_ENCAP_LEN + rx->pdu_len,
			  OVR_WIRE_UDP_PORT, &again) ||
	    !same_rx(rx, &again) || again.pdu != out + OVR_WIRE_ENCAP_LEN ||
	    memcmp(again.pdu, rx->pdu, rx->pdu_len) != 0)
		abort();
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ovr_vpc_thread *t = fuzz_reader();
	struct ovr_vpc_rx prx, drx;
	int rc_p, rc_d;
	uint8_t *buf;
	size_t len;

	if (size < 1)
		return 0;
	len = size - 1;
	buf = malloc(len ? len : 1);
	if (!buf)
		abort();
	memcpy(buf, data + 1, len);
	apply_mode(data[0], buf, len);

	rc_p = ovr_vpc_parse(buf, len, OVR_WIRE_UDP_PORT, &prx);
	rc_d = ovr_vpc_decap(t, buf, len, &drx);
	if (rc_p > 0 || rc_p < -OVR_VPC_DROP_INNER_UDP_LEN)
		abort();
	if (rc_d > 0 || rc_d < -OVR_VPC_DROP_SG_DENY)
		abort();
	if (rc_p) {
		if (rc_d != rc_p)
			abort();
	} else {
		if (prx.pdu != buf + OVR_WIRE_ENCAP_LEN ||
		    prx.pdu_len != len - OVR_WIRE_ENCAP_LEN ||
		    prx.vni > OVR_VPC_VNI_MAX || prx.dev != OVR_VPC_DEV_NONE)
			abort();
		if (rc_d == 0) {
			/* to the local vIP's device, or to a group (no
			 * device: its members are the caller's) */
			if (!same_rx(&prx, &drx) || drx.pdu != prx.pdu ||
			    drx.vni != FUZZ_VNI ||
			    (ovr_vpc_is_mcast(drx.dst_vip) ?
				     drx.dev != OVR_VPC_DEV_NONE :
				     drx.dev != FUZZ_DEV ||
					     drx.dst_vip != FUZZ_VIP_LOCAL))
				abort();
		} else if (rc_d > -OVR_VPC_DROP_NOT_THIS_HOST) {
			abort();
		}
		reencap(buf, &prx);
	}
	ovr_vpc_quiescent(); /* once per "poll loop", as a dataplane would */
	free(buf);
	return 0;
}

#ifdef OVR_VPC_FUZZ_GEN
/* ---- seed generator ------------------------------------------------------ */

#define GEN_MAX (1 + OVR_WIRE_ENCAP_LEN + 1436 + 8)

struct seed {
	const char *name;
	uint8_t mode;
	uint32_t vni, src_host, dst_host, src_vip, dst_vip;
	uint16_t pdu_len;
	uint8_t ecn;
	int off; /* -1, or a byte of the frame to set to val */
	uint8_t val;
	int adj; /* bytes added to (> 0) or cut from (< 0) the end */
	enum ovr_vpc_drop want; /* what ovr_vpc_decap says */
};

#define HOSTS_OK FUZZ_VNI, FUZZ_HOST_PEER, FUZZ_HOST_LOCAL
#define P2L FUZZ_VIP_PEER, FUZZ_VIP_LOCAL
#define FIX (MODE_FIX_OUTER | MODE_FIX_INNER | MODE_FIX_LENGTHS)
#define CSUMS (MODE_FIX_OUTER | MODE_FIX_INNER)

/* One seed per outcome: delivery, and every drop reason of decap. */
static const struct seed seeds[] = {
	{ "ok-empty", 0, HOSTS_OK, P2L, 0, 2, -1, 0, 0, OVR_VPC_OK },
	{ "ok-cnp", 0, HOSTS_OK, P2L, 40, 2, -1, 0, 0, OVR_VPC_OK },
	{ "ok-write", 0, HOSTS_OK, P2L, 124, 2, -1, 0, 0, OVR_VPC_OK },
	{ "ok-mtu1500", 0, HOSTS_OK, P2L, 1436, 2, -1, 0, 0, OVR_VPC_OK },
	{ "ok-ce", 0, HOSTS_OK, P2L, 64, 3, -1, 0, 0, OVR_VPC_OK },
	{ "ok-fix-all", FIX, HOSTS_OK, P2L, 64, 2, -1, 0, 0, OVR_VPC_OK },
	{ "truncated", 0, HOSTS_OK, P2L, 64, 2, -1, 0, -10,
	  OVR_VPC_DROP_TRUNC },
	{ "not-ipv4", 0, HOSTS_OK, P2L, 64, 2, 12, 0x86, 0,
	  OVR_VPC_DROP_NOT_IPV4 },
	{ "ip-options", FIX, HOSTS_OK, P2L, 64, 2, 14, 0x46, 0,
	  OVR_VPC_DROP_IP_OPTIONS },
	{ "ip-csum", 0, HOSTS_OK, P2L, 64, 2, 22, 0x3f, 0,
	  OVR_VPC_DROP_IP_CSUM },
	{ "fragment", FIX, HOSTS_OK, P2L, 64, 2, 20, 0x20, 0,
	  OVR_VPC_DROP_FRAGMENT },
	{ "ip-len", 0, HOSTS_OK, P2L, 64, 2, -1, 0, 1, OVR_VPC_DROP_IP_LEN },
	{ "not-udp", FIX, HOSTS_OK, P2L, 64, 2, 23, 6, 0,
	  OVR_VPC_DROP_NOT_UDP },
	{ "udp-port", FIX, HOSTS_OK, P2L, 64, 2, 37, 0xb5, 0,
	  OVR_VPC_DROP_UDP_PORT },
	{ "udp-len", 0, HOSTS_OK, P2L, 64, 2, 39, 0, 0, OVR_VPC_DROP_UDP_LEN },
	{ "gpe-flags", FIX, HOSTS_OK, P2L, 64, 2, 42, 0x08, 0,
	  OVR_VPC_DROP_GPE_FLAGS },
	{ "gpe-proto", FIX, HOSTS_OK, P2L, 64, 2, 45, 3, 0,
	  OVR_VPC_DROP_GPE_PROTO },
	{ "gpe-rsvd", FIX, HOSTS_OK, P2L, 64, 2, 49, 1, 0,
	  OVR_VPC_DROP_GPE_RSVD },
	{ "inner-not-ipv4", FIX, HOSTS_OK, P2L, 64, 2, 50, 0x65, 0,
	  OVR_VPC_DROP_INNER_NOT_IPV4 },
	{ "inner-options", FIX, HOSTS_OK, P2L, 64, 2, 50, 0x47, 0,
	  OVR_VPC_DROP_INNER_IP_OPTIONS },
	{ "inner-csum", 0, HOSTS_OK, P2L, 64, 2, 59, 6, 0,
	  OVR_VPC_DROP_INNER_IP_CSUM },
	{ "inner-fragment", FIX, HOSTS_OK, P2L, 64, 2, 57, 1, 0,
	  OVR_VPC_DROP_INNER_FRAGMENT },
	{ "inner-ip-len", CSUMS, HOSTS_OK, P2L, 64, 2, 53, 0, 0,
	  OVR_VPC_DROP_INNER_IP_LEN },
	{ "inner-not-udp", FIX, HOSTS_OK, P2L, 64, 2, 59, 6, 0,
	  OVR_VPC_DROP_INNER_NOT_UDP },
	{ "inner-udp-port", FIX, HOSTS_OK, P2L, 64, 2, 73, 0xb7, 0,
	  OVR_VPC_DROP_INNER_UDP_PORT },
	{ "inner-udp-len", 0, HOSTS_OK, P2L, 64, 2, 75, 0, 0,
	  OVR_VPC_DROP_INNER_UDP_LEN },
	{ "not-this-host", 0, FUZZ_VNI, FUZZ_HOST_PEER, 0xc0a80009u, P2L, 64, 2,
	  -1, 0, 0, OVR_VPC_DROP_NOT_THIS_HOST },
	{ "unknown-vni", 0, 0x000777, FUZZ_HOST_PEER, FUZZ_HOST_LOCAL, P2L, 64,
	  2, -1, 0, 0, OVR_VPC_DROP_UNKNOWN_VNI },
	{ "dst-not-local", 0, HOSTS_OK, FUZZ_VIP_PEER, FUZZ_VIP_DENIED, 64, 2,
	  -1, 0, 0, OVR_VPC_DROP_DST_NOT_LOCAL },
	{ "src-unknown", 0, HOSTS_OK, 0x0a000063u, FUZZ_VIP_LOCAL, 64, 2, -1, 0,
	  0, OVR_VPC_DROP_SRC_UNKNOWN },
	{ "spoof", 0, FUZZ_VNI, 0xc0a80009u, FUZZ_HOST_LOCAL, P2L, 64, 2, -1, 0,
	  0, OVR_VPC_DROP_SPOOF },
	{ "sg-deny", 0, HOSTS_OK, FUZZ_VIP_DENIED, FUZZ_VIP_LOCAL, 64, 2, -1, 0,
	  0, OVR_VPC_DROP_SG_DENY },
};

static size_t gen_one(const struct seed *s, uint8_t *out)
{
	struct ovr_vpc_hdr h;
	unsigned int i;

	memset(&h, 0, sizeof(h));
	h.src_host = s->src_host;
	h.dst_host = s->dst_host;
	h.vni = s->vni;
	h.src_vip = s->src_vip;
	h.dst_vip = s->dst_vip;
	h.sport = 0xc001;
	h.dport = OVR_WIRE_UDP_PORT;
	h.dscp = 26;
	h.ecn = s->ecn;
	memcpy(h.dst_mac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(h.src_mac, "\x02\x00\x00\x00\x00\x01", 6);
	out[0] = s->mode;
	for (i = 0; i < s->pdu_len; i++) /* version 1, then a pattern */
		out[1 + OVR_WIRE_ENCAP_LEN + i] = i ? (uint8_t)(i * 7) : 1;
	if (ovr_vpc_encap(out + 1 + OVR_WIRE_ENCAP_LEN, OVR_WIRE_ENCAP_LEN,
			  s->pdu_len, &h))
		abort();
	if (s->off >= 0)
		out[1 + s->off] = s->val;
	if (s->adj > 0)
		memset(out + 1 + OVR_WIRE_ENCAP_LEN + s->pdu_len, 0xee,
		       (size_t)s->adj);
	return (size_t)((int)(1 + OVR_WIRE_ENCAP_LEN + s->pdu_len) + s->adj);
}

/* What ovr_vpc_decap() makes of seed @buf (mode byte first). */
static int gen_outcome(const uint8_t *buf, size_t n)
{
	static uint8_t f[GEN_MAX];
	struct ovr_vpc_rx rx;

	memcpy(f, buf + 1, n - 1);
	apply_mode(buf[0], f, n - 1);
	return ovr_vpc_decap(fuzz_reader(), f, n - 1, &rx);
}

int main(int argc, char **argv)
{
	static uint8_t buf[GEN_MAX], old[GEN_MAX + 1];
	int check = argc == 3 && strcmp(argv[1], "--check") == 0;
	const char *dir = argv[argc - 1];
	char path[4096];
	unsigned int i;
	int bad = 0;
	size_t n, m;
	FILE *f;

	if (argc != 2 && !check) {
		fprintf(stderr, "usage: %s [--check] DIR\n", argv[0]);
		return 2;
	}
	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		n = gen_one(&seeds[i], buf);
		snprintf(path, sizeof(path), "%s/seed-%02u-%s", dir, i,
			 seeds[i].name);
		f = fopen(path, check ? "rb" : "wb");
		if (!f) {
			perror(path);
			bad = 1;
			continue;
		}
		if (check) {
			m = fread(old, 1, sizeof(old), f);
			if (m != n || memcmp(old, buf, n) != 0) {
				fprintf(stderr,
					"%s: stale, regenerate with "
					"%s DIR\n",
					path, argv[0]);
				bad = 1;
			}
		} else if (fwrite(buf, 1, n, f) != n) {
			perror(path);
			bad = 1;
		}
		fclose(f);
		if (gen_outcome(buf, n) != -(int)seeds[i].want) {
			fprintf(stderr, "%s: decap gives %s, want %s\n", path,
				ovr_vpc_drop_name(
					(unsigned int)-gen_outcome(buf, n)),
				ovr_vpc_drop_name(seeds[i].want));
			bad = 1;
		}
		/* and every seed passes the harness's own checks */
		LLVMFuzzerTestOneInput(buf, n);
	}
	if (!bad)
		printf("%s %u seeds in %s\n", check ? "checked" : "wrote", i,
		       dir);
	return bad;
}
#endif /* OVR_VPC_FUZZ_GEN */
