// SPDX-License-Identifier: MIT
/*
 * Unit tests of the ovrdma PDU codec: round trip of every packet type at
 * its field boundaries, and rejection of every malformed case with the
 * error that names it. Buffers handed to the parser are heap copies of the
 * exact length, so the sanitizer build catches any read past the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ovrdma/compiler.h>
#include <ovrdma/wire_codec.h>

#define BUF_MAX 65536

static const uint8_t all_opcodes[] = {
	OVR_OP_SEND,	    OVR_OP_SEND_IMM,
	OVR_OP_SEND_INV,    OVR_OP_WRITE,
	OVR_OP_WRITE_IMM,   OVR_OP_READ_REQ,
	OVR_OP_ATOMIC_CS,   OVR_OP_ATOMIC_FA,
	OVR_OP_READ_RESP,   OVR_OP_ATOMIC_RESP,
	OVR_OP_ACK,	    OVR_OP_NAK,
	OVR_OP_CNP,	    OVR_OP_UD_SEND,
	OVR_OP_UD_SEND_IMM, OVR_OP_VERSION_REJECT,
	OVR_OP_TERMINATE,   OVR_OP_ATOMIC_WR,
};
#define NOPS (sizeof(all_opcodes) / sizeof(all_opcodes[0]))

static uint8_t payload_src[BUF_MAX];

/* A valid packet of @opcode with distinctive values in every field. */
static void sample(struct ovr_wire_pkt *p, uint8_t opcode, uint32_t plen)
{
	memset(p, 0, sizeof(*p));
	p->version = OVR_WIRE_VERSION;
	p->opcode = opcode;
	p->dqpn = 0x123456;
	p->sqpn = 0xabcdef;
	p->tsval = 0xdeadbeef;
	p->path = 3;
	if (ovr_wire_opcode_is_sequenced(opcode)) {
		p->psn = 0x00fffff0;
		p->flags = OVR_F_ACK | OVR_F_CREDIT;
		p->ack_psn = 0x000010;
		p->tsecr = 0x01020304;
		p->credit = 77;
	}
	if (ovr_wire_opcode_has_payload(opcode)) {
		p->payload = payload_src;
		p->payload_len = plen;
	}

	switch (opcode) {
	case OVR_OP_SEND_IMM:
		p->u.send.imm = 0xcafef00d;
		ovr_fallthrough;
	case OVR_OP_SEND:
		p->u.send.msn = 42;
		p->u.send.mo = 4096;
		p->u.send.msg_len = 4096 + plen;
		p->flags |= OVR_F_LAST | OVR_F_SE;
		break;
	case OVR_OP_SEND_INV:
		/* first segment of a longer message; empty message if plen 0 */
		p->u.send.msn = 43;
		p->u.send.mo = 0;
		p->u.send.msg_len = plen ? plen + 1000 : 0;
		p->u.send.inv_rkey = 0x11223344;
		if (!plen)
			p->flags |= OVR_F_LAST;
		break;
	case OVR_OP_WRITE_IMM:
		p->u.write.msn = 44;
		p->u.write.imm = 0x0badc0de;
		ovr_fallthrough;
	case OVR_OP_WRITE:
		p->u.write.rkey = 0x55667788;
		p->u.write.va = 0x00007f0012345000ull;
		p->u.write.mo = 8192;
		p->u.write.msg_len = 8192 + plen;
		p->flags |= OVR_F_LAST | OVR_F_ACKREQ;
		break;
	case OVR_OP_READ_REQ:
		p->u.rreq.rkey = 0x99aabbcc;
		p->u.rreq.len = 1u << 20;
		p->u.rreq.va = 0x1000;
		p->u.rreq.msn = 7;
		p->flags |= OVR_F_LAST;
		break;
	case OVR_OP_READ_RESP:
		p->u.rresp.msn = 7;
		p->u.rresp.mo = 0;
		p->u.rresp.msg_len = plen;
		p->flags |= OVR_F_LAST | OVR_F_RETX;
		break;
	case OVR_OP_ATOMIC_CS:
		p->u.areq.compare = 0x0123456789abcdefull;
		ovr_fallthrough;
	case OVR_OP_ATOMIC_FA:
	case OVR_OP_ATOMIC_WR:
		p->u.areq.rkey = 0xddeeff00;
		p->u.areq.msn = 8;
		p->u.areq.va = 0x2000;
		p->u.areq.swap_add = 0xfedcba9876543210ull;
		p->flags |= OVR_F_LAST;
		break;
	case OVR_OP_ATOMIC_RESP:
		p->u.aresp.msn = 8;
		p->u.aresp.orig = 0x1122334455667788ull;
		p->flags |= OVR_F_LAST;
		break;
	case OVR_OP_ACK:
		p->flags = OVR_F_ACK | OVR_F_CREDIT;
		p->ack_psn = 0x00fffffe; /* blocks wrap through zero */
		p->tsecr = 99;
		p->credit = 5;
		p->u.ack.ce_count = 17;
		p->u.ack.nsack = 3;
		p->u.ack.sack[0].start = 0x00ffffff;
		p->u.ack.sack[0].end = 0x000002;
		p->u.ack.sack[1].start = 0x000005;
		p->u.ack.sack[1].end = 0x000009;
		p->u.ack.sack[2].start = 0x000100;
		p->u.ack.sack[2].end = 0x000101;
		break;
	case OVR_OP_NAK:
		p->flags = OVR_F_ACK;
		p->ack_psn = 1234;
		p->tsecr = 1;
		p->u.nak.code = OVR_NAK_RNR;
		p->u.nak.rnr_timer = 14;
		break;
	case OVR_OP_TERMINATE:
		p->u.term.reason = OVR_TERM_NO_QP_SEQ;
		p->u.term.psn = 0x00fedcba;
		break;
	case OVR_OP_UD_SEND_IMM:
		p->u.ud.imm = 0x76543210;
		ovr_fallthrough;
	case OVR_OP_UD_SEND:
		p->u.ud.qkey = 0x11111111;
		p->flags = OVR_F_LAST;
		break;
	case OVR_OP_VERSION_REJECT:
		p->tsval = 0;
		p->path = 0;
		p->version = 3;
		p->u.vrej.rejected = 9;
		p->u.vrej.min = 2;
		p->u.vrej.max = 3;
		break;
	}
}

/* Build @p into a fresh buffer; returns its length. */
static size_t build(const struct ovr_wire_pkt *p, uint8_t *buf)
{
	int n = ovr_wire_build(p, buf, BUF_MAX);

	if (n < 0)
		fail_msg("build %s: %s", ovr_wire_opcode_name(p->opcode),
			 ovr_wire_strerror(n));
	return (size_t)n;
}

/* Parse exactly @len bytes from a heap copy of that size. */
static int parse_exact(const uint8_t *buf, size_t len, struct ovr_wire_pkt *p)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	assert_non_null(copy);
	memcpy(copy, buf, len);
	/* the parser fills only the union member of the opcode; zero the
	 * rest so that whole-struct comparisons are meaningful */
	memset(p, 0, sizeof(*p));
	rc = ovr_wire_parse(copy, len, p, NULL);
	if (rc == 0 && p->payload)
		p->payload = buf + (p->payload - copy); /* copy is freed */
	free(copy);
	return rc;
}

/* Recompute the CRC trailer after a deliberate mutation. */
static void reseal(uint8_t *buf, size_t len)
{
	ovr_wire_seal(buf, len - OVR_WIRE_CRC_LEN);
}

static void assert_same(const struct ovr_wire_pkt *a,
			const struct ovr_wire_pkt *b)
{
	struct ovr_wire_pkt x = *a, y = *b;

	assert_int_equal(x.payload_len, y.payload_len);
	if (x.payload_len)
		assert_memory_equal(x.payload, y.payload, x.payload_len);
	x.payload = y.payload = NULL;
	x.hdr_len = y.hdr_len = 0;
	/* SACK slots past nsack carry nothing */
	if (x.opcode == OVR_OP_ACK && x.u.ack.nsack <= OVR_WIRE_MAX_SACK) {
		size_t unused = OVR_WIRE_MAX_SACK - x.u.ack.nsack;

		memset(&x.u.ack.sack[x.u.ack.nsack], 0,
		       unused * sizeof(x.u.ack.sack[0]));
		memset(&y.u.ack.sack[x.u.ack.nsack], 0,
		       unused * sizeof(y.u.ack.sack[0]));
	}
	assert_memory_equal(&x, &y, sizeof(x));
}

/* Build, parse, compare, rebuild: the bytes must be identical. */
static void roundtrip(const struct ovr_wire_pkt *p)
{
	static uint8_t a[BUF_MAX], b[BUF_MAX];
	struct ovr_wire_pkt q;
	size_t n, m;
	int rc;

	n = build(p, a);
	rc = parse_exact(a, n, &q);
	if (rc)
		fail_msg("parse %s: %s", ovr_wire_opcode_name(p->opcode),
			 ovr_wire_strerror(rc));
	assert_int_equal(q.hdr_len, ovr_wire_hdr_len(p));
	assert_int_equal(n, q.hdr_len + q.payload_len + OVR_WIRE_CRC_LEN);
	assert_same(p, &q);
	m = build(&q, b);
	assert_int_equal(n, m);
	assert_memory_equal(a, b, n);
}

static void test_crc32c_vector(void **state)
{
	static const char v[] = "123456789";
	uint32_t s;
	size_t i;

	(void)state;
	assert_int_equal(ovr_wire_crc32c(v, 9), 0xe3069283u);
	assert_int_equal(ovr_wire_crc32c(v, 0), 0);
	/* Incremental over any split equals one shot. */
	for (i = 0; i <= 9; i++) {
		s = ovr_wire_crc_update(ovr_wire_crc_init(), v, i);
		s = ovr_wire_crc_update(s, v + i, 9 - i);
		assert_int_equal(ovr_wire_crc_final(s), 0xe3069283u);
	}
}

/* The short path (SSE4.2's instruction below 256 bytes) and ISA-L give
 * the same CRC for every length around the switch, alignment and state. */
static void test_crc32c_short_path(void **state)
{
	static uint8_t buf[1024 + 8];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	for (size_t len = 0; len <= 600; len++)
		for (size_t off = 0; off < 8; off++) {
			uint32_t st = off & 1 ? ovr_wire_crc_init() :
						(uint32_t)(x >> off);

			assert_int_equal(
				ovr_wire_crc_update(st, buf + off, len),
				ovr_wire_crc_update_isal(st, buf + off, len));
		}
	assert_int_equal(
		ovr_wire_crc_update_isal(ovr_wire_crc_init(), "123456789", 9),
		ovr_wire_crc_update(ovr_wire_crc_init(), "123456789", 9));
}

static void test_known_bytes(void **state)
{
	/* Golden encoding of one WRITE_IMM segment: catches any change of
	 * byte order or layout that a symmetric round trip would miss. */
	static const uint8_t want[] = {
		0x01, 0x05, 0x00, 0x13, /* v1 WRITE_IMM, ACK|CREDIT|LAST */
		0x00, 0x12, 0x34, 0x56, /* dqpn */
		0x00, 0xab, 0xcd, 0xef, /* sqpn */
		0x00, 0x00, 0x00, 0x07, /* psn */
		0x00, 0x00, 0x00, 0x09, /* ack_psn */
		0x00, 0x00, 0x00, 0x0b, /* credit */
		0xa1, 0xa2, 0xa3, 0xa4, /* tsval */
		0xb1, 0xb2, 0xb3, 0xb4, /* tsecr */
		0x00, 0x02, 0x05, 0x00, /* payload_len, path, rsvd */
		0x10, 0x20, 0x30, 0x40, /* rkey */
		0x00, 0x00, 0x00, 0x02, /* msg_len */
		0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00, /* va */
		0x00, 0x00, 0x00, 0x00, /* mo */
		0x00, 0x00, 0x00, 0x00, /* rsvd */
		0x00, 0x00, 0x00, 0x03, /* msn */
		0xfe, 0xed, 0xfa, 0xce, /* imm */
		0x5a, 0xa5, /* payload */
	};
	static const uint8_t data[2] = { 0x5a, 0xa5 };
	struct ovr_wire_pkt p = {
		.version = 1,
		.opcode = OVR_OP_WRITE_IMM,
		.flags = OVR_F_ACK | OVR_F_CREDIT | OVR_F_LAST,
		.dqpn = 0x123456,
		.sqpn = 0xabcdef,
		.psn = 7,
		.ack_psn = 9,
		.credit = 11,
		.tsval = 0xa1a2a3a4,
		.tsecr = 0xb1b2b3b4,
		.path = 5,
		.u.write = { .rkey = 0x10203040,
			     .msg_len = 2,
			     .va = 0x7f0000001000ull,
			     .mo = 0,
			     .msn = 3,
			     .imm = 0xfeedface },
		.payload = data,
		.payload_len = 2,
	};
	uint8_t buf[128];
	uint32_t crc = ovr_wire_crc32c(want, sizeof(want));
	int n;

	(void)state;
	n = ovr_wire_build(&p, buf, sizeof(buf));
	assert_int_equal(n, sizeof(want) + 4);
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(buf[n - 4], crc >> 24);
	assert_int_equal(buf[n - 3], (crc >> 16) & 0xff);
	assert_int_equal(buf[n - 2], (crc >> 8) & 0xff);
	assert_int_equal(buf[n - 1], crc & 0xff);
}

static void test_roundtrip_every_opcode(void **state)
{
	static const uint32_t plens[] = { 0, 1, 64, 4096, 8192 };
	struct ovr_wire_pkt p;
	size_t i, j;

	(void)state;
	for (i = 0; i < NOPS; i++) {
		for (j = 0; j < sizeof(plens) / sizeof(plens[0]); j++) {
			sample(&p, all_opcodes[i], plens[j]);
			roundtrip(&p);
		}
	}
}

static void test_roundtrip_boundaries(void **state)
{
	struct ovr_wire_pkt p;
	size_t i;
	int hlen;

	(void)state;
	for (i = 0; i < NOPS; i++) {
		uint8_t op = all_opcodes[i];

		if (op == OVR_OP_VERSION_REJECT)
			continue;
		/* every common field at its maximum */
		sample(&p, op, 16);
		p.dqpn = OVR_WIRE_QPN_MASK;
		p.sqpn = OVR_WIRE_QPN_MASK;
		p.tsval = UINT32_MAX;
		p.path = UINT8_MAX;
		if (ovr_wire_opcode_is_sequenced(op)) {
			p.psn = OVR_WIRE_PSN_MASK;
			p.ack_psn = OVR_WIRE_PSN_MASK;
			p.credit = UINT32_MAX;
			p.tsecr = UINT32_MAX;
			p.flags |= OVR_F_ACKREQ | OVR_F_RETX;
		}
		roundtrip(&p);
		/* ... and at zero */
		sample(&p, op, 0);
		p.dqpn = p.sqpn = p.tsval = p.path = 0;
		if (ovr_wire_opcode_is_sequenced(op))
			p.psn = p.ack_psn = p.credit = p.tsecr = 0;
		roundtrip(&p);
		/* largest payload a PDU can hold */
		if (ovr_wire_opcode_has_payload(op)) {
			sample(&p, op, 0);
			hlen = ovr_wire_hdr_len(&p);
			p.payload_len = OVR_WIRE_MAX_PDU - (uint32_t)hlen -
					OVR_WIRE_CRC_LEN;
			/* sample() with no payload made each segment the
			 * last one: keep it so */
			if (op == OVR_OP_SEND || op == OVR_OP_SEND_IMM ||
			    op == OVR_OP_SEND_INV)
				p.u.send.msg_len = p.u.send.mo + p.payload_len;
			if (op == OVR_OP_WRITE || op == OVR_OP_WRITE_IMM)
				p.u.write.msg_len =
					p.u.write.mo + p.payload_len;
			if (op == OVR_OP_READ_RESP)
				p.u.rresp.msg_len = p.payload_len;
			roundtrip(&p);
			p.payload_len++;
			if (op == OVR_OP_UD_SEND || op == OVR_OP_UD_SEND_IMM) {
				uint8_t *buf = malloc(BUF_MAX);

				assert_int_equal(ovr_wire_build(&p, buf,
								BUF_MAX),
						 -OVR_WIRE_ETOOLONG);
				free(buf);
			}
		}
	}

	/* message at the 2 GiB limit, last segment at its very end */
	sample(&p, OVR_OP_WRITE, 100);
	p.u.write.msg_len = OVR_WIRE_MAX_MSG;
	p.u.write.mo = OVR_WIRE_MAX_MSG - 100;
	p.u.write.va = UINT64_MAX - OVR_WIRE_MAX_MSG + 1; /* ends at 2^64 */
	p.u.write.rkey = UINT32_MAX;
	roundtrip(&p);
	sample(&p, OVR_OP_READ_REQ, 0);
	p.u.rreq.len = OVR_WIRE_MAX_MSG;
	p.u.rreq.va = UINT64_MAX - OVR_WIRE_MAX_MSG + 1;
	roundtrip(&p);
	p.u.rreq.len = 0; /* zero-length READ is legal verbs */
	p.u.rreq.va = UINT64_MAX;
	roundtrip(&p);
	/* zero-length WRITE_IMM with no SGE (NCCL) */
	sample(&p, OVR_OP_WRITE_IMM, 0);
	p.u.write.mo = 0;
	p.u.write.msg_len = 0;
	p.u.write.va = 0;
	p.u.write.imm = UINT32_MAX;
	p.u.write.msn = UINT32_MAX;
	roundtrip(&p);
	/* atomics at extreme operands */
	sample(&p, OVR_OP_ATOMIC_CS, 0);
	p.u.areq.va = UINT64_MAX - 7;
	p.u.areq.swap_add = UINT64_MAX;
	p.u.areq.compare = UINT64_MAX;
	roundtrip(&p);
	/* ACK: 0 and OVR_WIRE_MAX_SACK blocks, window edges */
	sample(&p, OVR_OP_ACK, 0);
	p.u.ack.nsack = 0;
	roundtrip(&p);
	p.ack_psn = 0;
	p.u.ack.nsack = OVR_WIRE_MAX_SACK;
	for (i = 0; i < OVR_WIRE_MAX_SACK; i++) {
		p.u.ack.sack[i].start = 1 + 10 * (uint32_t)i;
		p.u.ack.sack[i].end = 5 + 10 * (uint32_t)i;
	}
	p.u.ack.sack[7].start = OVR_WIRE_PSN_WINDOW - 1;
	p.u.ack.sack[7].end = OVR_WIRE_PSN_WINDOW;
	roundtrip(&p);
	/* NAK: every code; RNR timer at its maximum */
	for (i = 1; i <= OVR_NAK_CODE_MAX; i++) {
		sample(&p, OVR_OP_NAK, 0);
		p.u.nak.code = (uint8_t)i;
		p.u.nak.rnr_timer = i == OVR_NAK_RNR ? OVR_WIRE_RNR_TIMER_MAX :
						       0;
		roundtrip(&p);
	}
	/* VERSION_REJECT from a node speaking up to 255 */
	sample(&p, OVR_OP_VERSION_REJECT, 0);
	p.version = 255;
	p.u.vrej.min = 1;
	p.u.vrej.max = 255;
	p.u.vrej.rejected = 0;
	roundtrip(&p);
}

static void test_truncated_at_every_byte(void **state)
{
	static uint8_t buf[BUF_MAX];
	struct ovr_wire_pkt p, q;
	size_t i, n, k;

	(void)state;
	for (i = 0; i < NOPS; i++) {
		sample(&p, all_opcodes[i], 37);
		n = build(&p, buf);
		for (k = 0; k < n; k++) {
			int rc = parse_exact(buf, k, &q);

			if (rc != -OVR_WIRE_ETRUNC)
				fail_msg("%s cut to %zu/%zu: got %s",
					 ovr_wire_opcode_name(p.opcode), k, n,
					 ovr_wire_strerror(rc));
		}
		assert_int_equal(parse_exact(buf, n, &q), 0);
	}
}

static void test_trailing_bytes(void **state)
{
	static uint8_t buf[BUF_MAX];
	struct ovr_wire_pkt p, q;
	size_t i, n;

	(void)state;
	for (i = 0; i < NOPS; i++) {
		sample(&p, all_opcodes[i], 10);
		n = build(&p, buf);
		buf[n] = 0;
		assert_int_equal(parse_exact(buf, n + 1, &q),
				 -OVR_WIRE_ETOOLONG);
		assert_int_equal(parse_exact(buf, n + 60, &q),
				 -OVR_WIRE_ETOOLONG);
	}
}

static void test_bad_version(void **state)
{
	static const uint8_t bad[] = { 0, 2, 3, 0x7f, 0xfe, 0xff };
	uint8_t buf[256];
	struct ovr_wire_pkt p, q;
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(bad); i++) {
		sample(&p, OVR_OP_SEND, 8);
		n = build(&p, buf);
		buf[0] = bad[i];
		reseal(buf, n);
		assert_int_equal(parse_exact(buf, n, &q), -OVR_WIRE_EVERSION);
		/* the version is decided before the length: a v2 PDU of any
		 * length is a version error, not a length error */
		assert_int_equal(parse_exact(buf, 12, &q), -OVR_WIRE_EVERSION);
		/* the builder refuses too */
		p.version = bad[i];
		assert_int_equal(ovr_wire_build(&p, buf, sizeof(buf)),
				 -OVR_WIRE_EVERSION);
	}
}

static void test_bad_opcode(void **state)
{
	uint8_t buf[256];
	struct ovr_wire_pkt p, q;
	unsigned int op;
	size_t n;

	(void)state;
	for (op = 0; op < 256; op++) {
		bool known = memchr(all_opcodes, (int)op, NOPS) != NULL;

		sample(&p, OVR_OP_CNP, 0);
		n = build(&p, buf);
		if (known)
			continue;
		buf[1] = (uint8_t)op;
		reseal(buf, n);
		assert_int_equal(parse_exact(buf, n, &q), -OVR_WIRE_EOPCODE);
		assert_string_equal(ovr_wire_opcode_name(op), "?");
		p.opcode = (uint8_t)op;
		assert_int_equal(ovr_wire_build(&p, buf, sizeof(buf)),
				 -OVR_WIRE_EOPCODE);
	}
}

/* Every single-bit error is caught; away from the bytes that decide the
 * PDU's shape, it is caught by the CRC. */
static void test_bad_crc_every_bit(void **state)
{
	static uint8_t buf[BUF_MAX];
	struct ovr_wire_pkt p, q;
	size_t i, n, byte;
	unsigned int bit;

	(void)state;
	for (i = 0; i < NOPS; i++) {
		sample(&p, all_opcodes[i], 24);
		n = build(&p, buf);
		for (byte = 0; byte < n; byte++) {
			bool shape = byte <= 1 ||
				     (p.opcode != OVR_OP_VERSION_REJECT &&
				      (byte == 32 || byte == 33 ||
				       (p.opcode == OVR_OP_ACK && byte == 40)));

			for (bit = 0; bit < 8; bit++) {
				int rc;

				buf[byte] ^= (uint8_t)(1u << bit);
				rc = parse_exact(buf, n, &q);
				buf[byte] ^= (uint8_t)(1u << bit);
				assert_true(rc < 0);
				if (!shape && rc != -OVR_WIRE_ECRC)
					fail_msg("%s byte %zu bit %u: %s",
						 ovr_wire_opcode_name(p.opcode),
						 byte, bit,
						 ovr_wire_strerror(rc));
			}
		}
	}
}

/* Mutate a built packet at byte @off, reseal, expect @err. */
static void expect_mutation(uint8_t opcode, size_t off, uint8_t value, int err)
{
	static uint8_t buf[BUF_MAX];
	struct ovr_wire_pkt p, q;
	size_t n;
	int rc;

	sample(&p, opcode, 8);
	n = build(&p, buf);
	assert_true(off < n - OVR_WIRE_CRC_LEN);
	buf[off] = value;
	reseal(buf, n);
	rc = parse_exact(buf, n, &q);
	if (rc != err)
		fail_msg("%s byte %zu = 0x%02x: want %s, got %s",
			 ovr_wire_opcode_name(opcode), off, value,
			 ovr_wire_strerror(err), ovr_wire_strerror(rc));
}

/* Build @p, expecting @err from the builder; then force the same bytes on
 * the wire (built valid, then patched) where the caller did. */
static void expect_build(const struct ovr_wire_pkt *p, int err)
{
	static uint8_t buf[BUF_MAX];
	int rc = ovr_wire_build(p, buf, BUF_MAX);

	if (rc != err)
		fail_msg("build %s: want %s, got %s",
			 ovr_wire_opcode_name(p->opcode),
			 ovr_wire_strerror(err),
			 rc < 0 ? ovr_wire_strerror(rc) : "success");
}

#define OTH sizeof(struct ovr_wire_oth)

static void test_bad_lengths(void **state)
{
	static uint8_t buf[BUF_MAX];
	struct ovr_wire_pkt p, q;
	size_t n;

	(void)state;
	/* payload_len larger / smaller than the bytes present */
	sample(&p, OVR_OP_SEND, 8);
	n = build(&p, buf);
	buf[33] = 9;
	reseal(buf, n);
	assert_int_equal(parse_exact(buf, n, &q), -OVR_WIRE_ETRUNC);
	buf[33] = 7;
	reseal(buf, n);
	assert_int_equal(parse_exact(buf, n, &q), -OVR_WIRE_ETOOLONG);
	buf[32] = 0xff;
	buf[33] = 0xff;
	reseal(buf, n);
	assert_int_equal(parse_exact(buf, n, &q), -OVR_WIRE_ETRUNC);

	/* payload on opcodes that carry none: header says 4 bytes, and
	 * they are there */
	{
		static const uint8_t none[] = {
			OVR_OP_READ_REQ,    OVR_OP_ATOMIC_CS, OVR_OP_ATOMIC_FA,
			OVR_OP_ATOMIC_RESP, OVR_OP_ACK,	      OVR_OP_NAK,
			OVR_OP_CNP
		};
		size_t i;

		for (i = 0; i < sizeof(none); i++) {
			sample(&p, none[i], 0);
			n = build(&p, buf);
			n -= OVR_WIRE_CRC_LEN;
			memset(buf + n, 0xab, 4);
			buf[33] = 4;
			n = ovr_wire_seal(buf, n + 4);
			assert_int_equal(parse_exact(buf, n, &q),
					 -OVR_WIRE_ELEN);
			p.payload = payload_src;
			p.payload_len = 4;
			expect_build(&p, -OVR_WIRE_ELEN);
		}
	}

	/* a whole PDU over the inner-UDP limit */
	sample(&p, OVR_OP_ACK, 0);
	p.u.ack.nsack = 0;
	n = build(&p, buf);
	{
		size_t big = OVR_WIRE_MAX_PDU + 1;
		uint32_t plen = (uint32_t)(big - n);

		buf[32] = (uint8_t)(plen >> 8);
		buf[33] = (uint8_t)plen;
		memset(buf + n - OVR_WIRE_CRC_LEN, 0, plen);
		ovr_wire_seal(buf, big - OVR_WIRE_CRC_LEN);
		assert_int_equal(parse_exact(buf, big, &q), -OVR_WIRE_ETOOLONG);
	}

	/* message lengths */
	sample(&p, OVR_OP_SEND, 8);
	p.u.send.msg_len = OVR_WIRE_MAX_MSG + 1;
	expect_build(&p, -OVR_WIRE_ELEN);
	expect_mutation(OVR_OP_SEND, OTH + 8, 0x80, -OVR_WIRE_ELEN);
	sample(&p, OVR_OP_READ_REQ, 0);
	p.u.rreq.len = OVR_WIRE_MAX_MSG + 1;
	expect_build(&p, -OVR_WIRE_ELEN);
	expect_mutation(OVR_OP_READ_REQ, OTH + 4, 0x81, -OVR_WIRE_ELEN);
	sample(&p, OVR_OP_WRITE, 8);
	p.u.write.msg_len = UINT32_MAX;
	p.u.write.mo = UINT32_MAX - 8;
	p.flags |= OVR_F_LAST;
	expect_build(&p, -OVR_WIRE_ELEN);

	/* output buffer too small by one byte */
	sample(&p, OVR_OP_SEND, 8);
	n = build(&p, buf);
	assert_int_equal(ovr_wire_build(&p, buf, n - 1), -OVR_WIRE_ENOSPC);
	assert_int_equal(ovr_wire_build(&p, buf, n), (int)n);
}

static void test_bad_segments(void **state)
{
	struct ovr_wire_pkt p;

	(void)state;
	/* past the end of the message */
	sample(&p, OVR_OP_SEND, 8);
	p.u.send.msg_len = p.u.send.mo + 7;
	expect_build(&p, -OVR_WIRE_ESEGMENT);
	expect_mutation(OVR_OP_SEND, OTH + 11, 0x07, -OVR_WIRE_ESEGMENT);
	/* LAST missing on the final segment */
	sample(&p, OVR_OP_WRITE, 8);
	p.flags &= (uint16_t)~OVR_F_LAST;
	expect_build(&p, -OVR_WIRE_ESEGMENT);
	expect_mutation(OVR_OP_WRITE, 3, OVR_F_ACK | OVR_F_CREDIT,
			-OVR_WIRE_ESEGMENT);
	/* LAST on a segment that is not final */
	sample(&p, OVR_OP_SEND_INV, 8);
	p.flags |= OVR_F_LAST;
	expect_build(&p, -OVR_WIRE_ESEGMENT);
	/* empty segment that is not the last */
	sample(&p, OVR_OP_READ_RESP, 0);
	p.u.rresp.msg_len = 10;
	p.flags &= (uint16_t)~OVR_F_LAST;
	expect_build(&p, -OVR_WIRE_ESEGMENT);
	/* mo beyond msg_len on the wire */
	expect_mutation(OVR_OP_READ_RESP, OTH + 4, 0x01, -OVR_WIRE_ESEGMENT);
	/* target range wrapping the address space */
	sample(&p, OVR_OP_WRITE, 8);
	p.u.write.va = UINT64_MAX - p.u.write.msg_len + 2;
	expect_build(&p, -OVR_WIRE_ERANGE);
	expect_mutation(OVR_OP_WRITE, OTH + 8, 0xff, 0); /* still fits */
	sample(&p, OVR_OP_WRITE, 8); /* last byte at 2^64 - 1 is fine */
	p.u.write.va = UINT64_MAX - p.u.write.msg_len + 1;
	expect_build(&p, (int)(OTH + 24 + 8 + OVR_WIRE_CRC_LEN));
	sample(&p, OVR_OP_READ_REQ, 0);
	p.u.rreq.va = UINT64_MAX;
	expect_build(&p, -OVR_WIRE_ERANGE);
}

static void test_bad_flags(void **state)
{
	struct ovr_wire_pkt p;
	unsigned int bit;
	size_t i;

	(void)state;
	/* undefined flag bits, on every opcode */
	for (i = 0; i < NOPS; i++) {
		for (bit = 6; bit < 16; bit++) {
			sample(&p, all_opcodes[i], 8);
			p.flags |= (uint16_t)(1u << bit);
			expect_build(&p, -OVR_WIRE_EFLAGS);
		}
	}
	expect_mutation(OVR_OP_SEND, 2, 0x80, -OVR_WIRE_EFLAGS);
	expect_mutation(OVR_OP_SEND, 3, 0xff, -OVR_WIRE_EFLAGS);
	/* SE only on what can raise a solicited event */
	sample(&p, OVR_OP_WRITE, 8);
	p.flags |= OVR_F_SE;
	expect_build(&p, -OVR_WIRE_EFLAGS);
	sample(&p, OVR_OP_READ_RESP, 8);
	p.flags |= OVR_F_SE;
	expect_build(&p, -OVR_WIRE_EFLAGS);
	/* single-packet requests must say LAST */
	sample(&p, OVR_OP_READ_REQ, 0);
	p.flags &= (uint16_t)~OVR_F_LAST;
	expect_build(&p, -OVR_WIRE_EFLAGS);
	sample(&p, OVR_OP_ATOMIC_RESP, 0);
	p.flags &= (uint16_t)~OVR_F_LAST;
	expect_build(&p, -OVR_WIRE_EFLAGS);
	/* ACK and NAK must carry F_ACK; CNP carries no flag */
	expect_mutation(OVR_OP_ACK, 3, OVR_F_CREDIT, -OVR_WIRE_EFLAGS);
	expect_mutation(OVR_OP_NAK, 3, 0, -OVR_WIRE_EFLAGS);
	expect_mutation(OVR_OP_CNP, 3, OVR_F_ACKREQ, -OVR_WIRE_EFLAGS);
	sample(&p, OVR_OP_ACK, 0);
	p.flags |= OVR_F_RETX;
	expect_build(&p, -OVR_WIRE_EFLAGS);
	/* UD is unreliable: no ACK fields */
	sample(&p, OVR_OP_UD_SEND, 8);
	p.flags |= OVR_F_ACK;
	expect_build(&p, -OVR_WIRE_EFLAGS);
}

static void test_bad_reserved(void **state)
{
	struct ovr_wire_pkt p;

	(void)state;
	expect_mutation(OVR_OP_SEND, 35, 1, -OVR_WIRE_ERSVD); /* OTH rsvd */
	expect_mutation(OVR_OP_WRITE, OTH + 20, 1, -OVR_WIRE_ERSVD);
	expect_mutation(OVR_OP_READ_REQ, OTH + 23, 1, -OVR_WIRE_ERSVD);
	expect_mutation(OVR_OP_READ_RESP, OTH + 12, 1, -OVR_WIRE_ERSVD);
	expect_mutation(OVR_OP_ATOMIC_RESP, OTH + 4, 1, -OVR_WIRE_ERSVD);
	expect_mutation(OVR_OP_ACK, OTH + 5, 1, -OVR_WIRE_ERSVD);
	expect_mutation(OVR_OP_ACK, OTH + 7, 1, -OVR_WIRE_ERSVD);
	expect_mutation(OVR_OP_NAK, OTH + 3, 1, -OVR_WIRE_ERSVD);
	/* aux of a plain SEND; compare of fetch-add; imm of UD_SEND */
	expect_mutation(OVR_OP_SEND, OTH + 15, 1, -OVR_WIRE_ERSVD);
	expect_mutation(OVR_OP_ATOMIC_FA, OTH + 31, 1, -OVR_WIRE_ERSVD);
	expect_mutation(OVR_OP_UD_SEND, OTH + 7, 1, -OVR_WIRE_ERSVD);
	/* ACK fields without F_ACK, credit without F_CREDIT */
	expect_mutation(OVR_OP_CNP, 19, 1, -OVR_WIRE_ERSVD);
	expect_mutation(OVR_OP_CNP, 31, 1, -OVR_WIRE_ERSVD);
	expect_mutation(OVR_OP_CNP, 23, 1, -OVR_WIRE_ERSVD);
	sample(&p, OVR_OP_WRITE, 8);
	p.u.write.imm = 1; /* imm on a plain WRITE */
	expect_build(&p, -OVR_WIRE_ERSVD);
	sample(&p, OVR_OP_SEND_IMM, 8);
	p.u.send.inv_rkey = 1;
	expect_build(&p, -OVR_WIRE_ERSVD);
}

static void test_bad_qpn_psn(void **state)
{
	struct ovr_wire_pkt p;

	(void)state;
	expect_mutation(OVR_OP_SEND, 4, 1, -OVR_WIRE_EQPN);
	expect_mutation(OVR_OP_ACK, 8, 0x80, -OVR_WIRE_EQPN);
	expect_mutation(OVR_OP_SEND, 12, 1, -OVR_WIRE_EPSN);
	expect_mutation(OVR_OP_SEND, 16, 1, -OVR_WIRE_EPSN);
	/* unsequenced packets carry no PSN */
	expect_mutation(OVR_OP_ACK, 15, 1, -OVR_WIRE_EPSN);
	expect_mutation(OVR_OP_UD_SEND, 14, 1, -OVR_WIRE_EPSN);
	sample(&p, OVR_OP_SEND, 8);
	p.dqpn = 1u << 24;
	expect_build(&p, -OVR_WIRE_EQPN);
	sample(&p, OVR_OP_SEND, 8);
	p.psn = 1u << 24;
	expect_build(&p, -OVR_WIRE_EPSN);
}

static void test_bad_sack(void **state)
{
	struct ovr_wire_pkt p;

	(void)state;
	/* too many blocks: refused before any block is read */
	expect_mutation(OVR_OP_ACK, OTH + 4, OVR_WIRE_MAX_SACK + 1,
			-OVR_WIRE_ESACK);
	expect_mutation(OVR_OP_ACK, OTH + 4, 0xff, -OVR_WIRE_ESACK);
	sample(&p, OVR_OP_ACK, 0);
	p.u.ack.nsack = OVR_WIRE_MAX_SACK + 1;
	expect_build(&p, -OVR_WIRE_ESACK);
	/* a block starting at the cumulative point */
	sample(&p, OVR_OP_ACK, 0);
	p.u.ack.sack[1].start = p.ack_psn;
	expect_build(&p, -OVR_WIRE_ESACK);
	/* empty and inverted blocks */
	sample(&p, OVR_OP_ACK, 0);
	p.u.ack.sack[1].end = p.u.ack.sack[1].start;
	expect_build(&p, -OVR_WIRE_ESACK);
	sample(&p, OVR_OP_ACK, 0);
	p.u.ack.sack[1].end = p.u.ack.sack[1].start - 1;
	expect_build(&p, -OVR_WIRE_ESACK);
	/* behind the cumulative ACK, or past the window */
	sample(&p, OVR_OP_ACK, 0);
	p.ack_psn = 100;
	p.u.ack.nsack = 1;
	p.u.ack.sack[0].start = 50;
	p.u.ack.sack[0].end = 60;
	expect_build(&p, -OVR_WIRE_ESACK);
	p.u.ack.sack[0].start = 101;
	p.u.ack.sack[0].end = 100 + OVR_WIRE_PSN_WINDOW + 1;
	expect_build(&p, -OVR_WIRE_ESACK);
	/* block wider than 24 bits, on the wire */
	expect_mutation(OVR_OP_ACK, OTH + 8, 1, -OVR_WIRE_ESACK);
	expect_mutation(OVR_OP_ACK, OTH + 12 + 8, 0x40, -OVR_WIRE_ESACK);
}

static void test_bad_nak(void **state)
{
	struct ovr_wire_pkt p;

	(void)state;
	expect_mutation(OVR_OP_NAK, OTH, 0, -OVR_WIRE_ENAK);
	expect_mutation(OVR_OP_NAK, OTH, OVR_NAK_CODE_MAX + 1, -OVR_WIRE_ENAK);
	expect_mutation(OVR_OP_NAK, OTH + 1, OVR_WIRE_RNR_TIMER_MAX + 1,
			-OVR_WIRE_ENAK);
	sample(&p, OVR_OP_NAK, 0);
	p.u.nak.code = OVR_NAK_REM_ACCESS; /* timer is for RNR only */
	expect_build(&p, -OVR_WIRE_ENAK);
}

static void test_terminate(void **state)
{
	/* golden encoding: every byte of a TERMINATE is defined */
	static const uint8_t want[] = {
		0x01, 0x13, 0x00, 0x00, /* v1 TERMINATE, no flags */
		0x00, 0x00, 0x00, 0x22, /* dqpn */
		0x00, 0x00, 0x00, 0x11, /* sqpn */
		0x00, 0x00, 0x00, 0x00, /* psn: unsequenced */
		0x00, 0x00, 0x00, 0x00, /* ack_psn */
		0x00, 0x00, 0x00, 0x00, /* credit */
		0x00, 0x00, 0x13, 0x89, /* tsval */
		0x00, 0x00, 0x00, 0x00, /* tsecr */
		0x00, 0x00, 0x00, 0x00, /* payload_len, path, rsvd */
		0x01, 0x00, 0x00, 0x00, /* reason DESTROYED, rsvd */
		0x00, 0x12, 0x34, 0x56, /* psn */
	};
	struct ovr_wire_pkt p = {
		.version = 1,
		.opcode = OVR_OP_TERMINATE,
		.dqpn = 0x22,
		.sqpn = 0x11,
		.tsval = 5001,
		.u.term = { .reason = OVR_TERM_DESTROYED, .psn = 0x123456 },
	};
	uint8_t buf[128];
	char line[256];
	int n;

	(void)state;
	n = ovr_wire_build(&p, buf, sizeof(buf));
	assert_int_equal(n, sizeof(want) + 4);
	assert_memory_equal(buf, want, sizeof(want));
	ovr_wire_format(&p, line, sizeof(line));
	assert_string_equal(line, "v1 TERMINATE qp 17->34 ts=5001 path=0 "
				  "reason=DESTROYED psn=1193046");
	/* reasons 1..4; reserved bytes zero; a 24-bit PSN; no flag but
	 * F_ACK (a TERMINATE from a QP acknowledges what it received) */
	expect_mutation(OVR_OP_TERMINATE, OTH, 0, -OVR_WIRE_ETERM);
	expect_mutation(OVR_OP_TERMINATE, OTH, OVR_TERM_REASON_MAX + 1,
			-OVR_WIRE_ETERM);
	for (size_t i = 1; i < 4; i++)
		expect_mutation(OVR_OP_TERMINATE, OTH + i, 1, -OVR_WIRE_ERSVD);
	expect_mutation(OVR_OP_TERMINATE, OTH + 4, 1, -OVR_WIRE_EPSN);
	expect_mutation(OVR_OP_TERMINATE, 3, OVR_F_ACK, 0);
	expect_mutation(OVR_OP_TERMINATE, 3, OVR_F_CREDIT, -OVR_WIRE_EFLAGS);
	expect_mutation(OVR_OP_TERMINATE, 3, OVR_F_LAST, -OVR_WIRE_EFLAGS);
	expect_mutation(OVR_OP_TERMINATE, 15, 1, -OVR_WIRE_EPSN);
	p.u.term.psn = 1u << 24;
	expect_build(&p, -OVR_WIRE_EPSN);
	p.u.term.psn = 0;
	p.u.term.reason = 9;
	expect_build(&p, -OVR_WIRE_ETERM);
	p.u.term.reason = OVR_TERM_ERROR;
	p.payload_len = 1;
	p.payload = buf;
	expect_build(&p, -OVR_WIRE_ELEN);
	assert_string_equal(ovr_wire_term_name(OVR_TERM_NO_QP_ACK),
			    "NO_QP_ACK");
	assert_string_equal(ovr_wire_term_name(0), "?");
}

static void test_version_reject(void **state)
{
	static uint8_t rx[256], tx[64];
	struct ovr_wire_pkt p, q;
	size_t n;
	int m;

	(void)state;
	/* a v7 packet from QP 0xabcdef to our QP 0x123456 */
	sample(&p, OVR_OP_SEND, 8);
	n = build(&p, rx);
	rx[0] = 7;
	reseal(rx, n);
	assert_int_equal(parse_exact(rx, n, &q), -OVR_WIRE_EVERSION);
	m = ovr_wire_build_reject(rx, n, tx, sizeof(tx));
	assert_int_equal(m, sizeof(struct ovr_wire_vrej) + OVR_WIRE_CRC_LEN);
	assert_int_equal(parse_exact(tx, (size_t)m, &q), 0);
	assert_int_equal(q.opcode, OVR_OP_VERSION_REJECT);
	assert_int_equal(q.version, OVR_WIRE_VERSION_MAX);
	assert_int_equal(q.dqpn, 0xabcdef);
	assert_int_equal(q.sqpn, 0x123456);
	assert_int_equal(q.u.vrej.rejected, 7);
	assert_int_equal(q.u.vrej.min, OVR_WIRE_VERSION_MIN);
	assert_int_equal(q.u.vrej.max, OVR_WIRE_VERSION_MAX);
	/* the sender learns there is no common version above 1 */
	assert_int_equal(ovr_wire_version_select(q.u.vrej.min, q.u.vrej.max),
			 1);

	/* rejects are never answered; nor are packets we understand */
	assert_true(ovr_wire_build_reject(tx, (size_t)m, rx, sizeof(rx)) < 0);
	sample(&p, OVR_OP_SEND, 8);
	n = build(&p, rx);
	assert_true(ovr_wire_build_reject(rx, n, tx, sizeof(tx)) < 0);
	assert_int_equal(ovr_wire_build_reject(rx, 11, tx, sizeof(tx)),
			 -OVR_WIRE_ETRUNC);
	/* reserved QPN bits of the untrusted input do not leak out */
	rx[0] = 9;
	rx[8] = 0xff;
	m = ovr_wire_build_reject(rx, n, tx, sizeof(tx));
	assert_true(m > 0);
	assert_int_equal(parse_exact(tx, (size_t)m, &q), 0);
	assert_int_equal(q.dqpn, 0xabcdef);
	assert_int_equal(ovr_wire_build_reject(rx, n, tx, 19),
			 -OVR_WIRE_ENOSPC);

	/* malformed rejects */
	expect_mutation(OVR_OP_VERSION_REJECT, 13, 0, -OVR_WIRE_EVREJ);
	expect_mutation(OVR_OP_VERSION_REJECT, 13, 4, -OVR_WIRE_EVREJ);
	expect_mutation(OVR_OP_VERSION_REJECT, 12, 2, -OVR_WIRE_EVREJ);
	expect_mutation(OVR_OP_VERSION_REJECT, 0, 2, -OVR_WIRE_EVREJ);
	expect_mutation(OVR_OP_VERSION_REJECT, 15, 1, -OVR_WIRE_ERSVD);
	expect_mutation(OVR_OP_VERSION_REJECT, 3, OVR_F_ACK, -OVR_WIRE_EFLAGS);
	expect_mutation(OVR_OP_VERSION_REJECT, 4, 1, -OVR_WIRE_EQPN);
}

static void test_version_select(void **state)
{
	(void)state;
	assert_int_equal(ovr_wire_version_select(1, 1), 1);
	assert_int_equal(ovr_wire_version_select(1, 200), 1);
	assert_int_equal(ovr_wire_version_select(0, 1), 1);
	assert_int_equal(ovr_wire_version_select(2, 5), -OVR_WIRE_EVERSION);
	assert_int_equal(ovr_wire_version_select(0, 0), -OVR_WIRE_EVERSION);
	assert_int_equal(ovr_wire_version_select(3, 1), -OVR_WIRE_EVERSION);
}

static void test_counters(void **state)
{
	static uint8_t buf[256];
	struct ovr_wire_counters c;
	struct ovr_wire_pkt p, q;
	size_t n;

	(void)state;
	memset(&c, 0, sizeof(c));
	sample(&p, OVR_OP_SEND_IMM, 8);
	n = build(&p, buf);
	assert_int_equal(ovr_wire_parse(buf, n, &q, &c), 0);
	assert_int_equal(ovr_wire_parse(buf, n - 1, &q, &c), -OVR_WIRE_ETRUNC);
	buf[n - 1] ^= 1;
	assert_int_equal(ovr_wire_parse(buf, n, &q, &c), -OVR_WIRE_ECRC);
	assert_int_equal(ovr_wire_parse(buf, n, &q, &c), -OVR_WIRE_ECRC);
	assert_int_equal(c.rx_ok, 1);
	assert_int_equal(c.rx_err[OVR_WIRE_ETRUNC], 1);
	assert_int_equal(c.rx_err[OVR_WIRE_ECRC], 2);
	assert_int_equal(c.rx_err[OVR_WIRE_EVERSION], 0);
}

static void test_psn_arith(void **state)
{
	(void)state;
	assert_int_equal(ovr_wire_psn_diff(5, 3), 2);
	assert_int_equal(ovr_wire_psn_diff(3, 5), -2);
	assert_int_equal(ovr_wire_psn_diff(1, OVR_WIRE_PSN_MASK), 2);
	assert_int_equal(ovr_wire_psn_diff(OVR_WIRE_PSN_MASK, 1), -2);
	assert_int_equal(ovr_wire_psn_diff(OVR_WIRE_PSN_WINDOW, 0),
			 (int32_t)OVR_WIRE_PSN_WINDOW);
	assert_int_equal(ovr_wire_psn_diff(OVR_WIRE_PSN_WINDOW + 1, 0),
			 -(int32_t)OVR_WIRE_PSN_WINDOW - 1);
}

static void test_format_and_names(void **state)
{
	struct ovr_wire_pkt p;
	char line[512];
	size_t i;
	int n;

	(void)state;
	sample(&p, OVR_OP_WRITE_IMM, 64);
	n = ovr_wire_format(&p, line, sizeof(line));
	assert_true(n > 0 && (size_t)n < sizeof(line));
	assert_string_equal(
		line,
		"v1 WRITE_IMM qp 11259375->1193046 psn=16777200 ack=16 "
		"tsecr=16909060 credit=77 ts=3735928559 path=3 "
		"rkey=0x55667788 va=0x00007f0012345000 mo=8192 msg_len=8256 "
		"msn=44 imm=0x0badc0de len=64 [ACK,CREDIT,ACKREQ,LAST]");
	/* truncation behaves like snprintf */
	assert_int_equal(ovr_wire_format(&p, line, 8), n);
	assert_string_equal(line, "v1 WRIT");
	for (i = 0; i < NOPS; i++)
		assert_string_not_equal(ovr_wire_opcode_name(all_opcodes[i]),
					"?");
	for (i = 0; i < OVR_WIRE_NERR; i++)
		assert_non_null(ovr_wire_strerror(-(int)i));
	assert_string_equal(ovr_wire_strerror(-OVR_WIRE_ECRC),
			    "CRC32C mismatch");
	assert_string_equal(ovr_wire_strerror(1000), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_vector),
		cmocka_unit_test(test_crc32c_short_path),
		cmocka_unit_test(test_known_bytes),
		cmocka_unit_test(test_roundtrip_every_opcode),
		cmocka_unit_test(test_roundtrip_boundaries),
		cmocka_unit_test(test_truncated_at_every_byte),
		cmocka_unit_test(test_trailing_bytes),
		cmocka_unit_test(test_bad_version),
		cmocka_unit_test(test_bad_opcode),
		cmocka_unit_test(test_bad_crc_every_bit),
		cmocka_unit_test(test_bad_lengths),
		cmocka_unit_test(test_bad_segments),
		cmocka_unit_test(test_bad_flags),
		cmocka_unit_test(test_bad_reserved),
		cmocka_unit_test(test_bad_qpn_psn),
		cmocka_unit_test(test_bad_sack),
		cmocka_unit_test(test_bad_nak),
		cmocka_unit_test(test_terminate),
		cmocka_unit_test(test_version_reject),
		cmocka_unit_test(test_version_select),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_psn_arith),
		cmocka_unit_test(test_format_and_names),
	};

	return cmocka_run_group_tests_name("engine_wire", tests, NULL, NULL);
}
