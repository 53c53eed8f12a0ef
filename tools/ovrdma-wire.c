// SPDX-License-Identifier: MIT
/*
 * ovrdma-wire: look at ovrdma PDUs.
 *
 *   ovrdma-wire decode HEX...   dissect PDUs given as hex (or '-': stdin,
 *                               one PDU per line)
 *   ovrdma-wire selftest        build a sample conversation of every
 *                               packet type, dissect it, check that it
 *                               round-trips and that damaged copies are
 *                               refused; exit 0 only if all holds
 *   ovrdma-wire corpus DIR      write the sample conversation as a seed
 *                               corpus for the fuzz target
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/wire_codec.h>

#define PDU_MAX OVR_WIRE_MAX_PDU

/* A short RC conversation between QP 0x11 (node A) and QP 0x22 (node B),
 * plus the control and datagram packets, in the order they could occur. */
struct sample {
	const char *what;
	struct ovr_wire_pkt pkt;
};

static uint8_t payload[8192];

static size_t make_samples(struct sample *s, size_t cap)
{
	const struct ovr_wire_pkt a2b = { .version = OVR_WIRE_VERSION,
					  .dqpn = 0x22,
					  .sqpn = 0x11,
					  .tsval = 1000 };
	const struct ovr_wire_pkt b2a = { .version = OVR_WIRE_VERSION,
					  .dqpn = 0x11,
					  .sqpn = 0x22,
					  .tsval = 5000 };
	size_t n = 0, i;

#define ADD(desc, base) (s[n].what = (desc), s[n].pkt = (base), &s[n++].pkt)
	struct ovr_wire_pkt *p;

	if (cap < 20)
		return 0;

	/* A writes 10000 bytes in three segments of at most 4096 */
	for (i = 0; i < 3; i++) {
		p = ADD("RDMA WRITE, segment", a2b);
		p->opcode = OVR_OP_WRITE;
		p->psn = 100 + (uint32_t)i;
		p->u.write.rkey = 0x8a3f0011;
		p->u.write.va = 0x7f3a5c000000ull;
		p->u.write.msg_len = 10000;
		p->u.write.mo = (uint32_t)i * 4096;
		p->payload = payload;
		p->payload_len = i < 2 ? 4096 : 10000 - 8192;
		if (i == 2)
			p->flags = OVR_F_LAST | OVR_F_ACKREQ;
	}
	p = ADD("WRITE with immediate, zero length (NCCL)", a2b);
	p->opcode = OVR_OP_WRITE_IMM;
	p->psn = 103;
	p->flags = OVR_F_LAST | OVR_F_SE;
	p->u.write.rkey = 0x8a3f0011;
	p->u.write.msn = 1;
	p->u.write.imm = 0x00c0ffee;

	p = ADD("ACK of 100..103 with SACK of 105..107", b2a);
	p->opcode = OVR_OP_ACK;
	p->flags = OVR_F_ACK | OVR_F_CREDIT;
	p->ack_psn = 104;
	p->tsecr = 1000;
	p->credit = 9;
	p->u.ack.nsack = 1;
	p->u.ack.sack[0].start = 105;
	p->u.ack.sack[0].end = 108;

	p = ADD("SEND with immediate, one segment", a2b);
	p->opcode = OVR_OP_SEND_IMM;
	p->psn = 104;
	p->flags = OVR_F_LAST | OVR_F_RETX | OVR_F_ACK;
	p->ack_psn = 7;
	p->tsecr = 5000;
	p->u.send.msn = 2;
	p->u.send.msg_len = 64;
	p->u.send.imm = 0x12345678;
	p->payload = payload;
	p->payload_len = 64;

	p = ADD("SEND with invalidate", a2b);
	p->opcode = OVR_OP_SEND_INV;
	p->psn = 105;
	p->flags = OVR_F_LAST;
	p->u.send.msn = 3;
	p->u.send.msg_len = 8;
	p->u.send.inv_rkey = 0x8a3f0011;
	p->payload = payload;
	p->payload_len = 8;

	p = ADD("plain SEND", a2b);
	p->opcode = OVR_OP_SEND;
	p->psn = 106;
	p->flags = OVR_F_LAST;
	p->u.send.msn = 4;
	p->u.send.msg_len = 1;
	p->payload = payload;
	p->payload_len = 1;

	p = ADD("RDMA READ request, 6000 bytes", a2b);
	p->opcode = OVR_OP_READ_REQ;
	p->psn = 107;
	p->flags = OVR_F_LAST;
	p->u.rreq.rkey = 0x51c00022;
	p->u.rreq.va = 0x7f99aa000100ull;
	p->u.rreq.len = 6000;
	p->u.rreq.msn = 1;

	for (i = 0; i < 2; i++) {
		p = ADD("READ response, segment", b2a);
		p->opcode = OVR_OP_READ_RESP;
		p->psn = 7 + (uint32_t)i;
		p->u.rresp.msn = 1;
		p->u.rresp.msg_len = 6000;
		p->u.rresp.mo = (uint32_t)i * 4096;
		p->payload = payload;
		p->payload_len = i ? 6000 - 4096 : 4096;
		p->flags = i ? OVR_F_LAST : 0;
	}

	p = ADD("ATOMIC compare-and-swap", a2b);
	p->opcode = OVR_OP_ATOMIC_CS;
	p->psn = 108;
	p->flags = OVR_F_LAST;
	p->u.areq.rkey = 0x51c00022;
	p->u.areq.va = 0x7f99aa000000ull;
	p->u.areq.msn = 2;
	p->u.areq.compare = 0;
	p->u.areq.swap_add = 1;

	p = ADD("ATOMIC fetch-and-add", a2b);
	p->opcode = OVR_OP_ATOMIC_FA;
	p->psn = 109;
	p->flags = OVR_F_LAST;
	p->u.areq.rkey = 0x51c00022;
	p->u.areq.va = 0x7f99aa000008ull;
	p->u.areq.msn = 3;
	p->u.areq.swap_add = 16;

	p = ADD("ATOMIC response", b2a);
	p->opcode = OVR_OP_ATOMIC_RESP;
	p->psn = 9;
	p->flags = OVR_F_LAST;
	p->u.aresp.msn = 2;
	p->u.aresp.orig = 0;

	p = ADD("NAK: receiver not ready", b2a);
	p->opcode = OVR_OP_NAK;
	p->flags = OVR_F_ACK;
	p->ack_psn = 106;
	p->tsecr = 1000;
	p->u.nak.code = OVR_NAK_RNR;
	p->u.nak.rnr_timer = 14;

	p = ADD("NAK: remote access error", b2a);
	p->opcode = OVR_OP_NAK;
	p->flags = OVR_F_ACK;
	p->ack_psn = 108;
	p->tsecr = 1000;
	p->u.nak.code = OVR_NAK_REM_ACCESS;

	p = ADD("congestion notification", b2a);
	p->opcode = OVR_OP_CNP;

	p = ADD("UD send with immediate", a2b);
	p->opcode = OVR_OP_UD_SEND_IMM;
	p->flags = OVR_F_LAST;
	p->u.ud.qkey = 0x11111111;
	p->u.ud.imm = 42;
	p->payload = payload;
	p->payload_len = 256;

	p = ADD("version reject (from a node speaking v1..v3)", b2a);
	p->opcode = OVR_OP_VERSION_REJECT;
	p->version = 3;
	p->tsval = 0;
	p->u.vrej.rejected = 4;
	p->u.vrej.min = 1;
	p->u.vrej.max = 3;

	/* after the others, so the corpus seeds keep their numbers */
	p = ADD("TERMINATE: B's QP was destroyed", b2a);
	p->opcode = OVR_OP_TERMINATE;
	p->u.term.reason = OVR_TERM_DESTROYED;
	p->u.term.psn = 10;
#undef ADD
	return n;
}

static void print_pkt(const struct ovr_wire_pkt *p, size_t len)
{
	char line[512];

	ovr_wire_format(p, line, sizeof(line));
	printf("  %5zu B  %s\n", len, line);
}

static int selftest(void)
{
	static uint8_t buf[PDU_MAX], again[PDU_MAX];
	struct ovr_wire_counters cnt = { 0 };
	struct sample s[32];
	struct ovr_wire_pkt q;
	size_t i, ns, refused = 0, damaged = 0;
	int n, rc, bad = 0;

	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	if (ovr_wire_crc32c("123456789", 9) != 0xe3069283u) {
		printf("FAIL: CRC32C check value\n");
		return 1;
	}
	ns = make_samples(s, sizeof(s) / sizeof(s[0]));
	printf("ovrdma wire v%u self-check: %zu packets, dissected\n",
	       OVR_WIRE_VERSION, ns);
	for (i = 0; i < ns; i++) {
		n = ovr_wire_build(&s[i].pkt, buf, sizeof(buf));
		if (n < 0) {
			printf("FAIL: build %s: %s\n", s[i].what,
			       ovr_wire_strerror(n));
			bad++;
			continue;
		}
		rc = ovr_wire_parse(buf, (size_t)n, &q, &cnt);
		if (rc || ovr_wire_build(&q, again, sizeof(again)) != n ||
		    memcmp(buf, again, (size_t)n) ||
		    (q.payload_len &&
		     memcmp(q.payload, s[i].pkt.payload, q.payload_len))) {
			printf("FAIL: round trip of %s: %s\n", s[i].what,
			       ovr_wire_strerror(rc));
			bad++;
			continue;
		}
		printf("# %s\n", s[i].what);
		print_pkt(&q, (size_t)n);

		/* every truncation and every single-bit error is refused */
		for (size_t k = 0; k < (size_t)n; k++) {
			damaged++;
			if (ovr_wire_parse(buf, k, &q, &cnt) == 0)
				bad++;
			else
				refused++;
			buf[k] ^= 0x10;
			damaged++;
			if (ovr_wire_parse(buf, (size_t)n, &q, &cnt) == 0)
				bad++;
			else
				refused++;
			buf[k] ^= 0x10;
		}
	}
	printf("\nparsed ok: %llu; damaged copies refused: %zu of %zu\n",
	       (unsigned long long)cnt.rx_ok, refused, damaged);
	for (i = 1; i < OVR_WIRE_NERR; i++)
		if (cnt.rx_err[i])
			printf("  %-40s %llu\n", ovr_wire_strerror(-(int)i),
			       (unsigned long long)cnt.rx_err[i]);
	printf("%s\n", bad ? "SELF-CHECK FAILED" : "SELF-CHECK PASSED");
	return bad ? 1 : 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decode hex (whitespace and ':' ignored) into @out; -1 on bad input. */
static long unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1, v;

	for (; *s; s++) {
		if (isspace((unsigned char)*s) || *s == ':')
			continue;
		v = hexval((unsigned char)*s);
		if (v < 0)
			return -1;
		if (hi < 0) {
			hi = v;
			continue;
		}
		if (n == cap)
			return -1;
		out[n++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	return hi < 0 ? (long)n : -1;
}

static int decode_one(const char *hex)
{
	static uint8_t buf[PDU_MAX];
	struct ovr_wire_pkt p;
	long n = unhex(hex, buf, sizeof(buf));
	int rc;

	if (n < 0) {
		printf("not hex, or longer than %u bytes\n", PDU_MAX);
		return 1;
	}
	rc = ovr_wire_parse(buf, (size_t)n, &p, NULL);
	if (rc) {
		printf("  %5ld B  invalid: %s\n", n, ovr_wire_strerror(rc));
		return 1;
	}
	print_pkt(&p, (size_t)n);
	return 0;
}

static int decode(int argc, char **argv)
{
	static char line[2 * PDU_MAX + 2];
	int i, bad = 0;

	if (argc == 1 && strcmp(argv[0], "-") == 0) {
		while (fgets(line, sizeof(line), stdin))
			if (line[0] != '\n')
				bad |= decode_one(line);
		return bad;
	}
	for (i = 0; i < argc; i++)
		bad |= decode_one(argv[i]);
	return bad;
}

static int corpus(const char *dir)
{
	static uint8_t buf[PDU_MAX + 1];
	struct sample s[32];
	char path[4096];
	size_t i, ns;
	FILE *f;
	int n;

	ns = make_samples(s, sizeof(s) / sizeof(s[0]));
	for (i = 0; i < ns; i++) {
		/* byte 0 is the fuzz target's mode byte: 0 = bytes as is */
		buf[0] = 0;
		n = ovr_wire_build(&s[i].pkt, buf + 1, sizeof(buf) - 1);
		if (n < 0)
			return 1;
		snprintf(path, sizeof(path), "%s/seed-%02zu-%s", dir, i,
			 ovr_wire_opcode_name(s[i].pkt.opcode));
		f = fopen(path, "wb");
		if (!f || fwrite(buf, 1, (size_t)n + 1, f) != (size_t)n + 1) {
			fprintf(stderr, "%s: %s\n", path, strerror(errno));
			if (f)
				fclose(f);
			return 1;
		}
		fclose(f);
	}
	printf("wrote %zu seeds to %s\n", ns, dir);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ovrdma-wire decode HEX... | decode -\n"
		   "       ovrdma-wire selftest\n"
		   "       ovrdma-wire corpus DIR\n");
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "decode") == 0)
		return decode(argc - 2, argv + 2);
	if (argc == 2 && strcmp(argv[1], "selftest") == 0)
		return selftest();
	if (argc == 3 && strcmp(argv[1], "corpus") == 0)
		return corpus(argv[2]);
	if (argc == 2 &&
	    (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
