// SPDX-License-Identifier: MIT
/*
 * Unit tests of the VPC frame layer: the outer encapsulation byte for byte
 * against docs/WIRE.md section 1 (checksums verified by an independent
 * implementation and a hand-checked golden), round trips, every malformed
 * header refused with the reason that names it (and counted under that
 * reason by ovr_vpc_decap), truncation at every length, and the MTU, GID
 * and flow-hash helpers. Frames handed to the parser are heap copies of
 * the exact length, so the sanitizer build catches any read past the end.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ovrdma/vpc.h>

#define HOST_A 0xc0a80101u /* 192.168.1.1 */
#define HOST_B 0xc0a80102u /* 192.168.1.2 */
#define VNI 0x123456u
#define VIP_1 0x0a000001u /* 10.0.0.1 */
#define VIP_2 0x0a000002u /* 10.0.0.2 */
#define PDU_LEN 100u
#define FRAME_LEN (OVR_WIRE_ENCAP_LEN + PDU_LEN)

static const uint8_t mac_a[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t mac_b[6] = { 0x02, 0, 0, 0, 0, 0x02 };

/* RFC 1071, written out independently of the library's (DPDK's) code. */
static uint16_t ref_csum_fold(const uint8_t *p, size_t n)
{
	uint32_t s = 0;
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* Set the checksum of the 20-byte IPv4 header at @ip. */
static void ref_csum_fix(uint8_t *ip)
{
	uint16_t c;

	ip[10] = ip[11] = 0;
	c = (uint16_t)~ref_csum_fold(ip, 20);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
}

static void fix_both_csums(uint8_t *frame)
{
	ref_csum_fix(frame + 14);
	ref_csum_fix(frame + 50);
}

static void sample_hdr(struct ovr_vpc_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->src_host = HOST_A;
	h->dst_host = HOST_B;
	h->vni = VNI;
	h->src_vip = VIP_1;
	h->dst_vip = VIP_2;
	h->sport = 0xc123;
	h->dport = OVR_WIRE_UDP_PORT;
	h->dscp = 26; /* AF31 */
	h->ecn = OVR_VPC_ECN_ECT0;
	memcpy(h->src_mac, mac_a, 6);
	memcpy(h->dst_mac, mac_b, 6);
}

/* A valid FRAME_LEN-byte frame in @frame, PDU bytes 0, 1, 2, ... */
static void sample_frame(uint8_t *frame)
{
	struct ovr_vpc_hdr h;
	unsigned int i;

	sample_hdr(&h);
	for (i = 0; i < PDU_LEN; i++)
		frame[OVR_WIRE_ENCAP_LEN + i] = (uint8_t)i;
	assert_int_equal(ovr_vpc_encap(frame + OVR_WIRE_ENCAP_LEN,
				       OVR_WIRE_ENCAP_LEN, PDU_LEN, &h),
			 0);
}

/* Parse exactly @len bytes from a heap copy of that size. */
static int parse_exact(const uint8_t *frame, size_t len, struct ovr_vpc_rx *rx)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	assert_non_null(copy);
	memcpy(copy, frame, len);
	rc = ovr_vpc_parse(copy, len, OVR_WIRE_UDP_PORT, rx);
	if (rc == 0) {
		assert_ptr_equal(rx->pdu, copy + OVR_WIRE_ENCAP_LEN);
		rx->pdu = frame + (rx->pdu - copy); /* copy is freed */
	}
	free(copy);
	return rc;
}

static void test_encap_golden(void **state)
{
	/* docs/WIRE.md 1.1-1.5, field by field, for sample_hdr() */
	static const uint8_t want[OVR_WIRE_ENCAP_LEN] = {
		/* 1.1 Ethernet */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02, /* next hop */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x01, /* sending port */
		0x08, 0x00, /* IPv4 */
		/* 1.2 outer IPv4 */
		0x45, 0x6a, /* no options; DSCP 26, ECT(0) */
		0x00, 0xa4, /* total length 164 = 100 + 64 */
		0x00, 0x00, 0x40, 0x00, /* id 0, DF */
		0x40, 0x11, /* TTL 64, UDP */
		0xb6, 0x8b, /* checksum (computed by hand) */
		0xc0, 0xa8, 0x01, 0x01, /* 192.168.1.1 */
		0xc0, 0xa8, 0x01, 0x02, /* 192.168.1.2 */
		/* 1.3 outer UDP */
		0xc1, 0x23, 0x12, 0xb6, /* flow port, 4790 */
		0x00, 0x90, 0x00, 0x00, /* length 144, checksum 0 */
		/* 1.4 VXLAN-GPE */
		0x0c, 0x00, 0x00, 0x01, /* I|P, reserved, IPv4 */
		0x12, 0x34, 0x56, 0x00, /* VNI, reserved */
		/* 1.5 inner IPv4 */
		0x45, 0x6a, 0x00, 0x80, /* total length 128 = 100 + 28 */
		0x00, 0x00, 0x40, 0x00, 0x40, 0x11, /* id 0, DF, TTL, UDP */
		0x26, 0x01, /* checksum (computed by hand) */
		0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, /* vIPs */
		/* 1.5 inner UDP */
		0xc1, 0x23, 0x12, 0xb9, /* flow port, 4793 */
		0x00, 0x6c, 0x00, 0x00, /* length 108, checksum 0 */
	};
	uint8_t frame[FRAME_LEN];
	unsigned int i;

	(void)state;
	sample_frame(frame);
	assert_memory_equal(frame, want, sizeof(want));
	/* the checksums are right by an independent computation too */
	assert_int_equal(ref_csum_fold(frame + 14, 20), 0xffff);
	assert_int_equal(ref_csum_fold(frame + 50, 20), 0xffff);
	/* the PDU was not touched */
	for (i = 0; i < PDU_LEN; i++)
		assert_int_equal(frame[OVR_WIRE_ENCAP_LEN + i], (uint8_t)i);
}

static void test_roundtrip(void **state)
{
	static const size_t lens[] = { 0,    1,	   2,	 35,
				       1436, 4168, 8936, OVR_VPC_MAX_PDU };
	static const uint8_t ecns[] = { OVR_VPC_ECN_NOT_ECT, OVR_VPC_ECN_ECT1,
					OVR_VPC_ECN_ECT0, OVR_VPC_ECN_CE };
	size_t cap = OVR_WIRE_ENCAP_LEN + OVR_VPC_MAX_PDU;
	uint8_t *buf = malloc(cap);
	struct ovr_vpc_hdr h;
	struct ovr_vpc_rx rx;
	unsigned int i, e;

	(void)state;
	assert_non_null(buf);
	memset(buf, 0xa5, cap);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (e = 0; e < 4; e++) {
			sample_hdr(&h);
			h.ecn = ecns[e];
			h.dscp = (uint8_t)(63 - e);
			h.vni = e == 3 ? OVR_VPC_VNI_MAX : e;
			h.sport = (uint16_t)(OVR_VPC_SPORT_MIN + i * 97 + e);
			assert_int_equal(ovr_vpc_encap(buf + OVR_WIRE_ENCAP_LEN,
						       OVR_WIRE_ENCAP_LEN,
						       lens[i], &h),
					 0);
			assert_int_equal(
				parse_exact(buf, OVR_WIRE_ENCAP_LEN + lens[i],
					    &rx),
				0);
			assert_ptr_equal(rx.pdu, buf + OVR_WIRE_ENCAP_LEN);
			assert_int_equal(rx.pdu_len, lens[i]);
			assert_int_equal(rx.vni, h.vni);
			assert_int_equal(rx.src_vip, VIP_1);
			assert_int_equal(rx.dst_vip, VIP_2);
			assert_int_equal(rx.src_host, HOST_A);
			assert_int_equal(rx.dst_host, HOST_B);
			assert_int_equal(rx.sport, h.sport);
			assert_int_equal(rx.dscp, h.dscp);
			assert_int_equal(rx.dev, OVR_VPC_DEV_NONE);
			assert_int_equal(rx.ce, ecns[e] == OVR_VPC_ECN_CE);
		}
	}
	free(buf);
}

/* Steering: the core goes into bits 10..13 of the outer source port
 * only; the rest of the port, the inner one and the frame still parse
 * and read the same. */
static void test_steer(void **state)
{
	uint8_t frame[FRAME_LEN], ref[FRAME_LEN];
	struct ovr_vpc_rx rx;

	(void)state;
	sample_frame(ref);
	for (uint32_t core = 0; core < 16; core++) {
		memcpy(frame, ref, sizeof(frame));
		ovr_vpc_set_steer(frame, core);
		assert_int_equal(parse_exact(frame, FRAME_LEN, &rx), 0);
		assert_int_equal(rx.sport >> OVR_VPC_STEER_SHIFT &
					 OVR_VPC_STEER_MASK,
				 core);
		assert_int_equal(
			rx.sport & ~(OVR_VPC_STEER_MASK << OVR_VPC_STEER_SHIFT),
			0xc123 & ~(OVR_VPC_STEER_MASK << OVR_VPC_STEER_SHIFT));
		assert_true(rx.sport >= OVR_VPC_SPORT_MIN);
		assert_int_equal(rx.vni, VNI);
		assert_int_equal(rx.pdu_len, PDU_LEN);
		/* nothing else moved: bytes 34-35 only */
		assert_memory_equal(frame, ref, 34);
		assert_memory_equal(frame + 36, ref + 36, FRAME_LEN - 36);
	}
	/* a core beyond 15 keeps its low bits */
	memcpy(frame, ref, sizeof(frame));
	ovr_vpc_set_steer(frame, 17);
	assert_int_equal(parse_exact(frame, FRAME_LEN, &rx), 0);
	assert_int_equal(rx.sport >> OVR_VPC_STEER_SHIFT & OVR_VPC_STEER_MASK,
			 1);
}

static void test_encap_errors(void **state)
{
	uint8_t frame[FRAME_LEN];
	struct ovr_vpc_hdr h;
	uint8_t *pdu = frame + OVR_WIRE_ENCAP_LEN;

	(void)state;
	sample_hdr(&h);
	assert_int_equal(ovr_vpc_encap(pdu, OVR_WIRE_ENCAP_LEN - 1, 10, &h),
			 -ENOSPC);
	assert_int_equal(ovr_vpc_encap(pdu, OVR_WIRE_ENCAP_LEN,
				       OVR_VPC_MAX_PDU + 1, &h),
			 -EMSGSIZE);
	h.vni = OVR_VPC_VNI_MAX + 1;
	assert_int_equal(ovr_vpc_encap(pdu, OVR_WIRE_ENCAP_LEN, 10, &h),
			 -EINVAL);
	sample_hdr(&h);
	h.dscp = 64;
	assert_int_equal(ovr_vpc_encap(pdu, OVR_WIRE_ENCAP_LEN, 10, &h),
			 -EINVAL);
	sample_hdr(&h);
	h.ecn = 4;
	assert_int_equal(ovr_vpc_encap(pdu, OVR_WIRE_ENCAP_LEN, 10, &h),
			 -EINVAL);
}

/* ---- malformed frames ---------------------------------------------------- */

enum fix { FIX_NONE, FIX_CSUM };

struct mutation {
	const char *what;
	unsigned int off; /* byte to change */
	uint8_t value; /* its new value */
	enum fix fix; /* recompute both IPv4 checksums afterwards */
	int extra; /* bytes added at the end of the frame (trailing data) */
	enum ovr_vpc_drop want;
};

/* One case per check, each reaching that check and only it. */
static const struct mutation mutations[] = {
	{ "EtherType 0x8600", 12, 0x86, FIX_NONE, 0, OVR_VPC_DROP_NOT_IPV4 },
	{ "EtherType 0x0806 (ARP)", 13, 0x06, FIX_NONE, 0,
	  OVR_VPC_DROP_NOT_IPV4 },
	{ "outer version 6", 14, 0x65, FIX_CSUM, 0, OVR_VPC_DROP_NOT_IPV4 },
	{ "outer IHL 6", 14, 0x46, FIX_CSUM, 0, OVR_VPC_DROP_IP_OPTIONS },
	{ "outer IHL 4", 14, 0x44, FIX_CSUM, 0, OVR_VPC_DROP_IP_OPTIONS },
	{ "outer checksum", 25, 0x8c, FIX_NONE, 0, OVR_VPC_DROP_IP_CSUM },
	{ "outer TTL, stale checksum", 22, 0x3f, FIX_NONE, 0,
	  OVR_VPC_DROP_IP_CSUM },
	{ "outer MF", 20, 0x60, FIX_CSUM, 0, OVR_VPC_DROP_FRAGMENT },
	{ "outer offset", 21, 0x01, FIX_CSUM, 0, OVR_VPC_DROP_FRAGMENT },
	{ "outer offset high", 20, 0x50, FIX_CSUM, 0, OVR_VPC_DROP_FRAGMENT },
	{ "outer total length + 1", 17, 0xa5, FIX_CSUM, 0, OVR_VPC_DROP_TRUNC },
	{ "outer total length - 1", 17, 0xa3, FIX_CSUM, 0,
	  OVR_VPC_DROP_IP_LEN },
	{ "trailing byte", 0, 0x02, FIX_NONE, 1, OVR_VPC_DROP_IP_LEN },
	{ "trailing FCS", 0, 0x02, FIX_NONE, 4, OVR_VPC_DROP_IP_LEN },
	{ "outer protocol TCP", 23, 0x06, FIX_CSUM, 0, OVR_VPC_DROP_NOT_UDP },
	{ "outer dport 4789 (VXLAN)", 37, 0xb5, FIX_NONE, 0,
	  OVR_VPC_DROP_UDP_PORT },
	{ "outer dport high byte", 36, 0x13, FIX_NONE, 0,
	  OVR_VPC_DROP_UDP_PORT },
	{ "outer UDP length + 1", 39, 0x91, FIX_NONE, 0, OVR_VPC_DROP_UDP_LEN },
	{ "outer UDP length - 1", 39, 0x8f, FIX_NONE, 0, OVR_VPC_DROP_UDP_LEN },
	{ "GPE flags I only", 42, 0x08, FIX_NONE, 0, OVR_VPC_DROP_GPE_FLAGS },
	{ "GPE flags P only", 42, 0x04, FIX_NONE, 0, OVR_VPC_DROP_GPE_FLAGS },
	{ "GPE flag O (OAM)", 42, 0x0d, FIX_NONE, 0, OVR_VPC_DROP_GPE_FLAGS },
	{ "GPE flag B (BUM)", 42, 0x0e, FIX_NONE, 0, OVR_VPC_DROP_GPE_FLAGS },
	{ "GPE version 1", 42, 0x1c, FIX_NONE, 0, OVR_VPC_DROP_GPE_FLAGS },
	{ "GPE next protocol Ethernet", 45, 0x03, FIX_NONE, 0,
	  OVR_VPC_DROP_GPE_PROTO },
	{ "GPE next protocol IPv6", 45, 0x02, FIX_NONE, 0,
	  OVR_VPC_DROP_GPE_PROTO },
	{ "GPE reserved 1", 43, 0x01, FIX_NONE, 0, OVR_VPC_DROP_GPE_RSVD },
	{ "GPE reserved 2", 44, 0x80, FIX_NONE, 0, OVR_VPC_DROP_GPE_RSVD },
	{ "GPE reserved after VNI", 49, 0x01, FIX_NONE, 0,
	  OVR_VPC_DROP_GPE_RSVD },
	{ "inner version 6", 50, 0x65, FIX_CSUM, 0,
	  OVR_VPC_DROP_INNER_NOT_IPV4 },
	{ "inner IHL 7", 50, 0x47, FIX_CSUM, 0, OVR_VPC_DROP_INNER_IP_OPTIONS },
	{ "inner checksum", 61, 0x02, FIX_NONE, 0, OVR_VPC_DROP_INNER_IP_CSUM },
	{ "inner source, stale checksum", 65, 0x09, FIX_NONE, 0,
	  OVR_VPC_DROP_INNER_IP_CSUM },
	{ "inner MF", 56, 0x20, FIX_CSUM, 0, OVR_VPC_DROP_INNER_FRAGMENT },
	{ "inner offset", 57, 0x08, FIX_CSUM, 0, OVR_VPC_DROP_INNER_FRAGMENT },
	{ "inner total length + 1", 53, 0x81, FIX_CSUM, 0,
	  OVR_VPC_DROP_INNER_IP_LEN },
	{ "inner total length - 1", 53, 0x7f, FIX_CSUM, 0,
	  OVR_VPC_DROP_INNER_IP_LEN },
	{ "inner protocol TCP", 59, 0x06, FIX_CSUM, 0,
	  OVR_VPC_DROP_INNER_NOT_UDP },
	{ "inner dport 4791 (RoCEv2)", 73, 0xb7, FIX_NONE, 0,
	  OVR_VPC_DROP_INNER_UDP_PORT },
	{ "inner UDP length + 1", 75, 0x6d, FIX_NONE, 0,
	  OVR_VPC_DROP_INNER_UDP_LEN },
	{ "inner UDP length - 1", 75, 0x6b, FIX_NONE, 0,
	  OVR_VPC_DROP_INNER_UDP_LEN },
};
#define NMUT (sizeof(mutations) / sizeof(mutations[0]))

/* Apply @m to a fresh sample frame in @frame; returns the frame length. */
static size_t mutate(const struct mutation *m, uint8_t *frame)
{
	sample_frame(frame);
	if (m->extra) {
		memset(frame + FRAME_LEN, 0xee, (size_t)m->extra);
		return FRAME_LEN + (size_t)m->extra;
	}
	assert_int_not_equal(frame[m->off], m->value); /* a real change */
	frame[m->off] = m->value;
	if (m->fix == FIX_CSUM)
		fix_both_csums(frame);
	return FRAME_LEN;
}

static void test_malformed_parse(void **state)
{
	uint8_t frame[FRAME_LEN + 8];
	struct ovr_vpc_rx rx;
	unsigned int i;
	size_t len;
	int rc;

	(void)state;
	for (i = 0; i < NMUT; i++) {
		len = mutate(&mutations[i], frame);
		rc = parse_exact(frame, len, &rx);
		if (rc != -(int)mutations[i].want)
			fail_msg("%s: got %s, want %s", mutations[i].what,
				 ovr_vpc_drop_name((unsigned int)-rc),
				 ovr_vpc_drop_name(mutations[i].want));
	}
}

static void test_truncated_every_length(void **state)
{
	uint8_t frame[FRAME_LEN];
	struct ovr_vpc_rx rx;
	size_t len;

	(void)state;
	sample_frame(frame);
	assert_int_equal(parse_exact(frame, FRAME_LEN, &rx), 0);
	for (len = 0; len < FRAME_LEN; len++)
		if (parse_exact(frame, len, &rx) != -OVR_VPC_DROP_TRUNC)
			fail_msg("%zu of %u bytes not refused as truncated",
				 len, FRAME_LEN);
}

/*
 * Flipping any single bit of the headers is refused, except in the fields
 * that ovr_vpc_parse() does not judge: MACs, UDP source ports and
 * checksums (docs/VPC.md), and the VNI, which no checksum covers and the
 * tables judge (unknown_vni, spoof).
 */
static void test_bitflips(void **state)
{
	uint8_t frame[FRAME_LEN], good[FRAME_LEN];
	struct ovr_vpc_rx rx, ref;
	unsigned int off, bit;
	int rc;

	(void)state;
	sample_frame(good);
	assert_int_equal(parse_exact(good, FRAME_LEN, &ref), 0);
	for (off = 0; off < OVR_WIRE_ENCAP_LEN; off++) {
		for (bit = 0; bit < 8; bit++) {
			memcpy(frame, good, FRAME_LEN);
			frame[off] ^= (uint8_t)(1u << bit);
			rc = parse_exact(frame, FRAME_LEN, &rx);
			if (rc == 0) {
				if (!(off < 12 || (off >= 34 && off < 36) ||
				      (off >= 40 && off < 42) ||
				      (off >= 46 && off < 49) ||
				      (off >= 70 && off < 72) || off >= 76))
					fail_msg("flip of byte %u bit %u "
						 "accepted",
						 off, bit);
			}
		}
	}
}

/* ---- counted by reason through ovr_vpc_decap ------------------------------ */

struct ctx {
	struct ovr_vpc *vpc;
	struct ovr_vpc_thread *t;
};

static int ctx_setup(void **state)
{
	static const struct ovr_vpc_sg_rule all = { 0, 0 };
	struct ovr_vpc_config cfg = { .local_host = HOST_B };
	struct ovr_vpc_binding b1 = { .host = HOST_A, .dev = OVR_VPC_DEV_NONE };
	struct ovr_vpc_binding b2 = { .host = HOST_B, .dev = 3 };
	struct ctx *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	c->vpc = ovr_vpc_create(&cfg);
	assert_non_null(c->vpc);
	assert_int_equal(ovr_vpc_tenant_add(c->vpc, VNI), 0);
	assert_int_equal(ovr_vpc_vip_add(c->vpc, VNI, VIP_1, &b1), 0);
	assert_int_equal(ovr_vpc_vip_add(c->vpc, VNI, VIP_2, &b2), 0);
	assert_int_equal(ovr_vpc_sg_set(c->vpc, VNI, &all, 1), 0);
	c->t = ovr_vpc_thread_register(c->vpc);
	assert_non_null(c->t);
	*state = c;
	return 0;
}

static int ctx_teardown(void **state)
{
	struct ctx *c = *state;

	ovr_vpc_thread_unregister(c->t);
	ovr_vpc_destroy(c->vpc);
	free(c);
	return 0;
}

static int decap_exact(struct ctx *c, const uint8_t *frame, size_t len,
		       struct ovr_vpc_rx *rx)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	assert_non_null(copy);
	memcpy(copy, frame, len);
	rc = ovr_vpc_decap(c->t, copy, len, rx);
	free(copy);
	return rc;
}

/* Exactly @n more drops than @before, all of them under @reason. */
static void assert_counted(struct ctx *c, const uint64_t *before,
			   unsigned int reason, uint64_t n, const char *what)
{
	uint64_t now[OVR_VPC_NDROP];
	unsigned int r;

	ovr_vpc_drop_stats(c->vpc, now);
	for (r = 0; r < OVR_VPC_NDROP; r++) {
		uint64_t want = before[r] + (r == reason ? n : 0);

		if (now[r] != want)
			fail_msg("%s: %s counted %llu, want %llu", what,
				 ovr_vpc_drop_name(r),
				 (unsigned long long)now[r],
				 (unsigned long long)want);
	}
}

static void test_malformed_counted(void **state)
{
	struct ctx *c = *state;
	uint64_t before[OVR_VPC_NDROP];
	struct ovr_vpc_tenant_stats ts;
	uint8_t frame[FRAME_LEN + 8];
	struct ovr_vpc_rx rx;
	unsigned int i;
	size_t len;

	/* the unmodified frame is delivered: the checks below are real */
	sample_frame(frame);
	assert_int_equal(decap_exact(c, frame, FRAME_LEN, &rx), 0);
	assert_int_equal(rx.dev, 3);
	assert_int_equal(rx.pdu_len, PDU_LEN);

	for (i = 0; i < NMUT; i++) {
		ovr_vpc_drop_stats(c->vpc, before);
		len = mutate(&mutations[i], frame);
		assert_int_equal(decap_exact(c, frame, len, &rx),
				 -(int)mutations[i].want);
		assert_counted(c, before, mutations[i].want, 1,
			       mutations[i].what);
	}

	ovr_vpc_drop_stats(c->vpc, before);
	sample_frame(frame);
	for (len = 0; len < FRAME_LEN; len++)
		assert_int_equal(decap_exact(c, frame, len, &rx),
				 -OVR_VPC_DROP_TRUNC);
	assert_counted(c, before, OVR_VPC_DROP_TRUNC, FRAME_LEN, "truncated");

	/* header drops happen before the tenant is known: not the tenant's */
	assert_int_equal(ovr_vpc_tenant_stats(c->vpc, VNI, &ts), 0);
	assert_int_equal(ts.rx_pkts, 1);
	assert_int_equal(ts.rx_bytes, FRAME_LEN);
	assert_int_equal(ts.drops, 0);
}

static void test_drop_names(void **state)
{
	unsigned int r, s;

	(void)state;
	for (r = 1; r < OVR_VPC_NDROP; r++) {
		const char *n = ovr_vpc_drop_name(r);

		assert_string_not_equal(n, "?");
		assert_true(strlen(n) > 0);
		for (s = 1; s < r; s++)
			assert_string_not_equal(n, ovr_vpc_drop_name(s));
	}
	assert_string_equal(ovr_vpc_drop_name(OVR_VPC_DROP_SPOOF), "spoof");
	assert_string_equal(ovr_vpc_drop_name(OVR_VPC_NDROP), "?");
}

/* ---- helpers ------------------------------------------------------------- */

static void test_mtu(void **state)
{
	(void)state;
	/* docs/WIRE.md 1: 1500 gives 1436, 9000 gives 8936 */
	assert_int_equal(ovr_vpc_pdu_mtu(1500), 1436);
	assert_int_equal(ovr_vpc_pdu_mtu(9000), 8936);
	assert_int_equal(ovr_vpc_pdu_mtu(65535), OVR_VPC_MAX_PDU);
	assert_int_equal(ovr_vpc_pdu_mtu(100000), OVR_VPC_MAX_PDU);
	assert_int_equal(OVR_VPC_PDU_DATA_OVERHEAD, 72);
	assert_int_equal(ovr_vpc_pdu_mtu(64 + 72), 72);
	assert_int_equal(ovr_vpc_pdu_mtu(64 + 71), -EINVAL);
	assert_int_equal(ovr_vpc_pdu_mtu(0), -EINVAL);

	/* enum ibv_mtu: 1 = 256 ... 5 = 4096; a step at payload + 72 + 64 */
	assert_int_equal(ovr_vpc_active_mtu(1500), 3);
	assert_int_equal(ovr_vpc_active_mtu(9000), 5);
	assert_int_equal(ovr_vpc_active_mtu(4096 + 72 + 64), 5);
	assert_int_equal(ovr_vpc_active_mtu(4096 + 72 + 63), 4);
	assert_int_equal(ovr_vpc_active_mtu(4200),
			 4); /* not 4096: see VPC.md */
	assert_int_equal(ovr_vpc_active_mtu(2048 + 136), 4);
	assert_int_equal(ovr_vpc_active_mtu(2048 + 135), 3);
	assert_int_equal(ovr_vpc_active_mtu(1024 + 136), 3);
	assert_int_equal(ovr_vpc_active_mtu(1024 + 135), 2);
	assert_int_equal(ovr_vpc_active_mtu(512 + 136), 2);
	assert_int_equal(ovr_vpc_active_mtu(256 + 136), 1);
	assert_int_equal(ovr_vpc_active_mtu(256 + 135), -EINVAL);
	assert_int_equal(ovr_vpc_ib_mtu_bytes(1), 256);
	assert_int_equal(ovr_vpc_ib_mtu_bytes(5), 4096);
}

static void test_gid(void **state)
{
	static const uint8_t want[16] = { 0, 0, 0,    0,    0,	0, 0, 0,
					  0, 0, 0xff, 0xff, 10, 1, 2, 3 };
	uint8_t gid[16];
	uint32_t vip = 0;

	(void)state;
	ovr_vpc_vip_to_gid(0x0a010203u, gid);
	assert_memory_equal(gid, want, 16);
	assert_int_equal(ovr_vpc_gid_to_vip(gid, &vip), 0);
	assert_int_equal(vip, 0x0a010203u);

	/* not IPv4-mapped: link-local, v4-compatible, NAT64, 0xfffe */
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	assert_int_equal(ovr_vpc_gid_to_vip(gid, &vip), -EINVAL);
	memcpy(gid, want, 16);
	gid[10] = gid[11] = 0;
	assert_int_equal(ovr_vpc_gid_to_vip(gid, &vip), -EINVAL);
	memcpy(gid, want, 16);
	gid[0] = 0x00;
	gid[1] = 0x64;
	gid[2] = 0xff;
	gid[3] = 0x9b;
	assert_int_equal(ovr_vpc_gid_to_vip(gid, &vip), -EINVAL);
	memcpy(gid, want, 16);
	gid[11] = 0xfe;
	assert_int_equal(ovr_vpc_gid_to_vip(gid, &vip), -EINVAL);
	assert_int_equal(vip, 0x0a010203u); /* untouched on failure */
}

static void test_flow_hash(void **state)
{
	uint8_t seen[OVR_VPC_SPORT_MASK + 1];
	struct ovr_vpc_flow f;
	uint32_t h, q;
	unsigned int p;
	uint16_t sp;

	(void)state;
	h = ovr_vpc_flow_hash(VNI, VIP_1, VIP_2, 0x10, 0x20);
	assert_int_equal(h, ovr_vpc_flow_hash(VNI, VIP_1, VIP_2, 0x10, 0x20));
	/* every input matters, including direction */
	assert_int_not_equal(h, ovr_vpc_flow_hash(VNI + 1, VIP_1, VIP_2, 0x10,
						  0x20));
	assert_int_not_equal(h,
			     ovr_vpc_flow_hash(VNI, VIP_2, VIP_1, 0x10, 0x20));
	assert_int_not_equal(h,
			     ovr_vpc_flow_hash(VNI, VIP_1, VIP_2, 0x20, 0x10));
	assert_int_not_equal(h,
			     ovr_vpc_flow_hash(VNI, VIP_1, VIP_2, 0x10, 0x21));

	/* all 256 paths of a flow get distinct ports in 49152..65535 */
	for (q = 0; q < 64; q++) {
		h = ovr_vpc_flow_hash(VNI, VIP_1, VIP_2, q, 7);
		memset(seen, 0, sizeof(seen));
		for (p = 0; p < 256; p++) {
			sp = ovr_vpc_flow_sport(h, (uint8_t)p);
			assert_true(sp >= OVR_VPC_SPORT_MIN);
			assert_int_equal(seen[sp - OVR_VPC_SPORT_MIN], 0);
			seen[sp - OVR_VPC_SPORT_MIN] = 1;
		}
	}
	/* extremes of the hash still land in range */
	assert_int_equal(ovr_vpc_flow_sport(0, 0), 49152);
	assert_int_equal(ovr_vpc_flow_sport(0xffffffffu, 0), 65535);

	ovr_vpc_flow_init(&f, VNI, VIP_1, VIP_2, 0x10, 0x20, 0xff);
	assert_int_equal(f.hash,
			 ovr_vpc_flow_hash(VNI, VIP_1, VIP_2, 0x10, 0x20));
	assert_int_equal(f.ecn, OVR_VPC_ECN_ECT0);
	assert_int_equal(f.dscp, 63);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encap_golden),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_steer),
		cmocka_unit_test(test_encap_errors),
		cmocka_unit_test(test_malformed_parse),
		cmocka_unit_test(test_truncated_every_length),
		cmocka_unit_test(test_bitflips),
		cmocka_unit_test_setup_teardown(test_malformed_counted,
						ctx_setup, ctx_teardown),
		cmocka_unit_test(test_drop_names),
		cmocka_unit_test(test_mtu),
		cmocka_unit_test(test_gid),
		cmocka_unit_test(test_flow_hash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
