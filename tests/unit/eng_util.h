/* SPDX-License-Identifier: MIT */
/* Helpers shared by the transport engine tests. */
#ifndef OVR_TEST_ENG_UTIL_H
#define OVR_TEST_ENG_UTIL_H

#include <stdint.h>
#include <string.h>

#include "engpair.h"

/* Post one work request on node @n with a single SGE on its arena. */
static inline int post_one(struct ovr_pair *p, int n, uint32_t qpn,
			   uint32_t opcode, uint64_t wr_id, size_t loff,
			   uint32_t len, size_t roff, uint32_t flags)
{
	struct ovr_eng_sge sge = {
		.addr = ovr_pair_va(p, n, loff),
		.length = len,
		.lkey = p->n[n].key,
	};
	struct ovr_eng_send_wr wr = {
		.wr_id = wr_id,
		.opcode = opcode,
		.send_flags = flags,
		.sg_list = &sge,
		.num_sge = len || opcode >= OVR_WR_ATOMIC_CMP_AND_SWP ? 1 : 0,
		.rkey = p->n[1 - n].key,
		.remote_addr = ovr_pair_va(p, 1 - n, roff),
	};

	return ovr_eng_post_send(p->n[n].eng, qpn, &wr, p->now);
}

static inline int post_recv_one(struct ovr_pair *p, int n, uint32_t qpn,
				uint64_t wr_id, size_t off, uint32_t len)
{
	struct ovr_eng_sge sge = {
		.addr = ovr_pair_va(p, n, off),
		.length = len,
		.lkey = p->n[n].key,
	};
	struct ovr_eng_recv_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = len ? 1 : 0,
	};

	return ovr_eng_post_recv(p->n[n].eng, qpn, &wr, p->now);
}

struct cq_wait {
	int node;
	uint32_t cq;
	size_t want;
};

static inline bool cq_has(struct ovr_pair *p, void *ctx)
{
	const struct cq_wait *w = ctx;

	return ovr_pair_cq_len(p, w->node, w->cq) >= w->want;
}

/* Run until node @n's @cq holds @want completions (or 10 s pass). */
static inline bool wait_cq(struct ovr_pair *p, int n, uint32_t cq, size_t want)
{
	struct cq_wait w = { n, cq, want };

	return ovr_pair_run(p, cq_has, &w, p->now + 10000000000ull);
}

static inline void fill_pattern(uint8_t *b, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)x;
	}
}

#endif
