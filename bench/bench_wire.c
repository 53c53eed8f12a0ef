// SPDX-License-Identifier: MIT
/*
 * bench-wire: cost of the PDU codec per packet on one core.
 *
 *   parse+CRC        ovr_wire_parse() of a WRITE segment: structural
 *                    checks, CRC32C over header and payload, field decode
 *                    and validation
 *   build+CRC        ovr_wire_build_hdr() + ovr_wire_seal(): the payload
 *                    is already in place (the dataplane copies it straight
 *                    from registered memory into the packet buffer)
 *   build+copy+CRC   ovr_wire_build(): the same plus the payload memcpy
 *
 * Payloads of 64 B, 4 KB and 8 KB; packets rotate over 64 buffers that
 * stay in cache, so this is the codec's own cost, not DRAM's. Each figure
 * is the median of REPS timed runs. Usage: bench-wire [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ovrdma/wire_codec.h>
#include <ovrdma/util.h>

#define NBUF 64
#define REPS 9
#define BUFSZ 9216

static uint8_t bufs[NBUF][BUFSZ];
static uint8_t src[BUFSZ];
static volatile uint64_t sink;

enum mode { PARSE, BUILD, BUILD_COPY };

static double now_ns(void)
{
	return (double)ovr_mono_ns();
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void segment(struct ovr_wire_pkt *p, uint32_t plen, uint32_t i)
{
	memset(p, 0, sizeof(*p));
	p->version = OVR_WIRE_VERSION;
	p->opcode = OVR_OP_WRITE;
	p->flags = OVR_F_ACK | OVR_F_CREDIT | OVR_F_LAST;
	p->dqpn = 0x22;
	p->sqpn = 0x11;
	p->psn = i & OVR_WIRE_PSN_MASK;
	p->ack_psn = 5;
	p->credit = 100;
	p->tsval = i;
	p->u.write.rkey = 0x1234;
	p->u.write.va = 0x7f0000000000ull;
	p->u.write.msg_len = plen;
	p->payload = src;
	p->payload_len = plen;
}

/* ns per packet for one timed run of @iters packets */
static double run(enum mode m, uint32_t plen, unsigned long iters)
{
	struct ovr_wire_pkt p, q;
	uint64_t acc = 0;
	unsigned long i;
	size_t len[NBUF];
	double t0;
	int n;

	segment(&p, plen, 0);
	for (i = 0; i < NBUF; i++)
		len[i] = (size_t)ovr_wire_build(&p, bufs[i], BUFSZ);

	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		uint8_t *b = bufs[i % NBUF];

		switch (m) {
		case PARSE:
			acc += (uint64_t)ovr_wire_parse(b, len[i % NBUF], &q,
							NULL);
			acc += q.psn;
			break;
		case BUILD:
			p.psn = (uint32_t)i & OVR_WIRE_PSN_MASK;
			n = ovr_wire_build_hdr(&p, b, BUFSZ);
			acc += ovr_wire_seal(b, (size_t)n + plen);
			break;
		case BUILD_COPY:
			p.psn = (uint32_t)i & OVR_WIRE_PSN_MASK;
			acc += (uint64_t)ovr_wire_build(&p, b, BUFSZ);
			break;
		}
	}
	sink += acc;
	return (now_ns() - t0) / (double)iters;
}

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = { 64, 4096, 8192 };
	static const char *const names[] = { "parse+CRC", "build+CRC",
					     "build+copy+CRC" };
	unsigned long iters = argc > 1 ? strtoul(argv[1], NULL, 0) : 200000;
	double t[REPS];
	size_t s, r;
	int m;

	if (!iters) {
		fprintf(stderr, "usage: bench-wire [iterations]\n");
		return 2;
	}
	for (s = 0; s < sizeof(src); s++)
		src[s] = (uint8_t)s;

	printf("ovrdma wire codec, one core, median of %d runs x %lu packets\n",
	       REPS, iters);
	printf("%-16s %8s %8s %10s %10s %10s\n", "operation", "payload",
	       "PDU B", "ns/pkt", "Mpps/core", "Gbit/s");
	for (m = PARSE; m <= BUILD_COPY; m++) {
		for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			struct ovr_wire_pkt p;
			double med;
			int hlen;

			segment(&p, sizes[s], 0);
			hlen = ovr_wire_hdr_len(&p);
			run((enum mode)m, sizes[s], iters / 10 + 1); /* warm */
			for (r = 0; r < REPS; r++)
				t[r] = run((enum mode)m, sizes[s], iters);
			qsort(t, REPS, sizeof(t[0]), cmp_double);
			med = t[REPS / 2];
			printf("%-16s %8u %8u %10.1f %10.2f %10.1f\n", names[m],
			       sizes[s],
			       (unsigned)(hlen + sizes[s] + OVR_WIRE_CRC_LEN),
			       med, 1e3 / med, sizes[s] * 8.0 / med);
		}
	}
	return 0;
}
