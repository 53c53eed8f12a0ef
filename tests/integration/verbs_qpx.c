// SPDX-License-Identifier: MIT
/*
 * verbs_qpx: the extended QP API - ibv_create_qp_ex with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, ibv_qp_to_qp_ex and the ibv_wr_*
 * functions of ibv_wr_post(3) - between two nodes, every byte checked
 * (docs/PROVIDER.md, "The extended QP API"; issue 24). Plain libibverbs,
 * nothing of ovrdma.
 *
 *   verbs_qpx server [-p PORT] [-d DEV]
 *   verbs_qpx client ADDR [-p PORT] [-d DEV] [--seed N] [--no-ud]
 *             [--rounds N]
 *
 * The server holds a 4 MB region (RDMA target, READ source, atomic
 * words, a canary nobody may write), a small region the client
 * invalidates, receive buffers for its RC and UD QPs (made with
 * ibv_create_qp_ex too), and checks what the client tells it to expect
 * (struct item: bytes of the region, a receive completion and its data,
 * an atomic word, an untouched range, no receive) over the out-of-band
 * TCP connection, answering with a verdict. Every byte is a function of
 * the seed and a stream number (verbs_common.h), so neither side sends
 * data out of band. The client, all through the wr_* API:
 *
 *   create  refusals through libibverbs (TSO on RC; RDMA_WRITE,
 *           ATOMIC_WRITE, BIND_MW, LOCAL_INV on UD: EOPNOTSUPP), a plain
 *           QP has no ibv_qp_ex, the capabilities written back;
 *   ops     one WR per opcode: RDMA_WRITE (a 3-piece gather),
 *           WRITE_WITH_IMM, SEND (2 pieces), SEND_WITH_IMM with inline
 *           data from 3 buffers overwritten right after the setter,
 *           SEND_WITH_INV (the server's completion names the rkey),
 *           RDMA_READ (a 2-piece scatter between guard bytes),
 *           CMP_AND_SWP (a hit and a miss), FETCH_AND_ADD,
 *           ATOMIC_WRITE (its 8 bytes as they are; a misaligned
 *           target EINVAL at wr_complete, ibv_post_send's
 *           IBV_WR_ATOMIC_WRITE EINVAL);
 *   batch   12 WRs of four kinds in one wr_start / wr_complete,
 *           completions in order with their wr_ids;
 *   abort   a WRITE and a SEND built then aborted: no completion, the
 *           target untouched, no receive used;
 *   errors  an SGE list above max_send_sge, inline data above
 *           max_inline_data: wr_complete EINVAL, nothing done;
 *   full    a batch of max_send_wr + 1: ENOMEM, nothing done; then
 *           max_send_wr WRs posted with ibv_post_send and not polled: a
 *           batch of one is ENOMEM until they are polled;
 *   mixed   ibv_post_send, a batch, ibv_post_send: completions and
 *           deliveries in posting order;
 *   zero    a SEND without data and a zero-length WRITE;
 *   stream  --rounds (100) batches of 6 RDMA WRITEs and 2 SENDs of 1 B to
 *           64 KB, only the last WR of each signaled, round and round
 *           the send ring;
 *   quiet   200 batches of 8 WRITEs between two getppid(2) markers: the
 *           thread makes no other system call between them (checked by
 *           verbs-apps.sh under strace);
 *   ud      8 datagrams in one batch (SEND with an SGE, SEND_WITH_IMM
 *           with inline data, the address set before or after the
 *           data) and a WR without an address (EINVAL). Skipped with
 *           --no-ud (UD does not retransmit: the lossy runs).
 */
#include <getopt.h>
#include <sys/syscall.h>

#include "verbs_common.h"

#define MAGIC 0x6f767178u /* "ovqx" */
#define R_LEN (4u << 20)
#define R_READ (1u << 20) /* READ source: stream S_READ */
#define R_ATOM (2u << 20) /* atomic words */
#define R_CANARY (R_ATOM + 4096u) /* never written */
#define CANARY_LEN (64u << 10)
#define RSLOTS 16u
#define RSLOT (64u << 10)
#define USLOT (40u + 4096u)
#define L_LEN (4u << 20)
#define UD_QKEY 0x11111111u
#define ATOM0 0x1000u /* word 0's first value */
#define S_READ 100u
#define MAX_ITEMS 64u
#define WAIT_S 15

/* ---- protocol ---------------------------------------------------------- */

struct info {
	uint32_t magic;
	uint32_t rc_qpn, ud_qpn, psn;
	uint8_t gid[16];
	uint64_t seed; /* client -> server */
	uint64_t raddr, inv_addr; /* server -> client */
	uint32_t rkey, inv_rkey;
};

enum { K_MEM = 1, K_ZERO, K_RECV, K_UDRECV, K_WORD, K_NORECV, K_QUIT };

/* One thing the server must find. */
struct item {
	uint32_t kind;
	uint32_t opcode; /* K_RECV: enum ibv_wc_opcode */
	uint32_t len; /* bytes (K_RECV: byte_len; K_UDRECV: the payload's) */
	uint32_t imm; /* with IBV_WC_WITH_IMM: as sent; WITH_INV: the rkey */
	uint32_t wc_flags; /* WITH_IMM / WITH_INV expected */
	uint32_t pad;
	uint64_t off; /* K_MEM, K_ZERO, K_WORD: in the region */
	uint64_t stream; /* the data; 0: not checked */
	uint64_t value; /* K_WORD */
};

struct verdict {
	int32_t ok;
	char msg[252];
};

static struct vc_dev dev;
static uint64_t seed;
static int oob;

/* ---- both sides ----------------------------------------------------------- */

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq,
			      enum ibv_qp_type type, uint64_t ops,
			      struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = *cap,
		.qp_type = type,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = ops,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(dev.ctx, &a);

	if (!qp)
		vc_die("ibv_create_qp_ex %s: %s",
		       type == IBV_QPT_UD ? "UD" : "RC", strerror(errno));
	if (!ibv_qp_to_qp_ex(qp))
		vc_die("ibv_qp_to_qp_ex: NULL for a QP with SEND_OPS_FLAGS");
	*cap = a.cap;
	return qp;
}

static void ud_up(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qkey = UD_QKEY };

	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_QKEY))
		vc_die("UD to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		vc_die("UD to RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		vc_die("UD to RTS");
}

/* Waits for one completion of @cq (WAIT_S at most). */
static void wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, const char *what)
{
	double t0 = vc_now();
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0)
		if (vc_now() - t0 > WAIT_S)
			vc_die("%s: no completion in %d s", what, WAIT_S);
	if (n < 0)
		vc_die("%s: ibv_poll_cq %d", what, n);
}

/* ---- the server --------------------------------------------------------- */

static struct {
	struct ibv_pd *pd;
	struct ibv_cq *rcq, *ucq;
	struct ibv_qp *rc, *ud;
	struct ibv_mr *mr, *inv, *rb, *ub;
	uint8_t *r, *invbuf, *rbuf, *ubuf, *scratch;
	uint32_t nrecv, nud; /* receives taken so far */
	uint32_t client_ud;
} S;

static void post_rc_recv(uint32_t slot)
{
	struct ibv_sge sge = { (uintptr_t)(S.rbuf + (size_t)slot * RSLOT),
			       RSLOT, S.rb->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot,
				  .sg_list = &sge,
				  .num_sge = 1 },
			   *bad;

	if (ibv_post_recv(S.rc, &wr, &bad))
		vc_die("ibv_post_recv RC");
}

static void post_ud_recv(uint32_t slot)
{
	struct ibv_sge sge = { (uintptr_t)(S.ubuf + (size_t)slot * USLOT),
			       USLOT, S.ub->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot,
				  .sg_list = &sge,
				  .num_sge = 1 },
			   *bad;

	if (ibv_post_recv(S.ud, &wr, &bad))
		vc_die("ibv_post_recv UD");
}

/* Compares @len bytes at @p with stream @stream; 0 or a message. */
static int same(const uint8_t *p, uint32_t len, uint64_t stream, char *msg,
		size_t cap)
{
	vc_fill(S.scratch, len, seed, stream);
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != S.scratch[i]) {
			snprintf(msg, cap,
				 "stream %" PRIu64 ": byte %u of %u is 0x%02x, "
				 "want 0x%02x",
				 stream, i, len, p[i], S.scratch[i]);
			return -1;
		}
	return 0;
}

static int check_recv(const struct item *it, bool ud, char *msg, size_t cap)
{
	struct ibv_cq *cq = ud ? S.ucq : S.rcq;
	uint32_t slot = (ud ? S.nud : S.nrecv) % RSLOTS;
	uint32_t want_len = ud ? 40 + it->len : it->len;
	const uint8_t *data;
	struct ibv_wc wc;

	wait_wc(cq, &wc, ud ? "UD receive" : "RC receive");
	if (ud)
		S.nud++;
	else
		S.nrecv++;
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != slot) {
		snprintf(msg, cap, "receive: %s, wr_id %" PRIu64 " (want %u)",
			 vc_st(wc.status), wc.wr_id, slot);
		return -1;
	}
	if (wc.opcode != (enum ibv_wc_opcode)it->opcode ||
	    wc.byte_len != want_len ||
	    (wc.wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)) !=
		    it->wc_flags ||
	    (ud && (!(wc.wc_flags & IBV_WC_GRH) || wc.src_qp != S.client_ud))) {
		snprintf(msg, cap,
			 "receive: opcode %d byte_len %u wc_flags 0x%x src_qp "
			 "%u; want %u, %u, 0x%x, %u",
			 wc.opcode, wc.byte_len, wc.wc_flags, wc.src_qp,
			 it->opcode, want_len, it->wc_flags,
			 ud ? S.client_ud : wc.src_qp);
		return -1;
	}
	if ((it->wc_flags & IBV_WC_WITH_IMM) && wc.imm_data != it->imm) {
		snprintf(msg, cap, "receive: imm_data 0x%x, want 0x%x",
			 wc.imm_data, it->imm);
		return -1;
	}
	if ((it->wc_flags & IBV_WC_WITH_INV) &&
	    wc.invalidated_rkey != it->imm) {
		snprintf(msg, cap, "receive: invalidated_rkey 0x%x, want 0x%x",
			 wc.invalidated_rkey, it->imm);
		return -1;
	}
	data = ud ? S.ubuf + (size_t)slot * USLOT + 40 :
		    S.rbuf + (size_t)slot * RSLOT;
	if (it->stream && same(data, it->len, it->stream, msg, cap))
		return -1;
	if (ud)
		post_ud_recv(slot);
	else
		post_rc_recv(slot);
	return 0;
}

static int check(const struct item *it, char *msg, size_t cap)
{
	struct ibv_wc wc;
	uint64_t v;

	switch (it->kind) {
	case K_MEM:
		return same(S.r + it->off, it->len, it->stream, msg, cap);
	case K_ZERO:
		for (uint32_t i = 0; i < it->len; i++)
			if (S.r[it->off + i]) {
				snprintf(msg, cap,
					 "byte %" PRIu64 " written (0x%02x)",
					 it->off + i, S.r[it->off + i]);
				return -1;
			}
		return 0;
	case K_RECV:
		return check_recv(it, false, msg, cap);
	case K_UDRECV:
		return check_recv(it, true, msg, cap);
	case K_WORD:
		memcpy(&v, S.r + it->off, 8);
		if (v != it->value) {
			snprintf(msg, cap,
				 "word at %" PRIu64 ": 0x%" PRIx64
				 ", want 0x%" PRIx64,
				 it->off, v, it->value);
			return -1;
		}
		return 0;
	case K_NORECV:
		usleep(200000);
		if (ibv_poll_cq(S.rcq, 1, &wc)) {
			snprintf(msg, cap, "a receive completed (byte_len %u)",
				 wc.byte_len);
			return -1;
		}
		return 0;
	default:
		snprintf(msg, cap, "unknown check %u", it->kind);
		return -1;
	}
}

static int run_server(int port)
{
	struct ibv_qp_cap cap = { .max_send_wr = 4,
				  .max_recv_wr = RSLOTS,
				  .max_send_sge = 1,
				  .max_recv_sge = 1 };
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct info mine = { .magic = MAGIC, .psn = 0x1234 }, peer;
	struct vc_qpinfo me, them;
	struct vc_path path = vc_path_default();
	uint64_t w0 = ATOM0;
	int rc;

	S.pd = ibv_alloc_pd(dev.ctx);
	S.rcq = ibv_create_cq(dev.ctx, 256, NULL, NULL, 0);
	S.ucq = ibv_create_cq(dev.ctx, 256, NULL, NULL, 0);
	S.r = calloc(1, R_LEN);
	S.invbuf = calloc(1, 4096);
	S.rbuf = calloc(RSLOTS, RSLOT);
	S.ubuf = calloc(RSLOTS, USLOT);
	S.scratch = malloc(R_LEN);
	if (!S.pd || !S.rcq || !S.ucq || !S.r || !S.invbuf || !S.rbuf ||
	    !S.ubuf || !S.scratch)
		vc_die("PD, CQs, memory");
	S.mr = ibv_reg_mr(S.pd, S.r, R_LEN, access);
	S.inv = ibv_reg_mr(S.pd, S.invbuf, 4096, access);
	S.rb = ibv_reg_mr(S.pd, S.rbuf, (size_t)RSLOTS * RSLOT,
			  IBV_ACCESS_LOCAL_WRITE);
	S.ub = ibv_reg_mr(S.pd, S.ubuf, (size_t)RSLOTS * USLOT,
			  IBV_ACCESS_LOCAL_WRITE);
	if (!S.mr || !S.inv || !S.rb || !S.ub)
		vc_die("ibv_reg_mr: %s", strerror(errno));
	S.rc = make_qp(S.pd, S.rcq, IBV_QPT_RC, IBV_QP_EX_WITH_SEND, &cap);
	S.ud = make_qp(S.pd, S.ucq, IBV_QPT_UD, IBV_QP_EX_WITH_SEND, &cap);
	ud_up(S.ud);

	oob = vc_tcp_server(port);
	vc_recv_must(oob, &peer, sizeof(peer));
	if (peer.magic != MAGIC)
		vc_die("not a verbs_qpx client");
	seed = peer.seed;
	S.client_ud = peer.ud_qpn;
	printf("%s: seed %" PRIu64 " (from the client)\n", vc_prog, seed);
	vc_fill(S.r + R_READ, 1u << 20, seed, S_READ);
	memcpy(S.r + R_ATOM, &w0, 8);
	vc_qpinfo_of(&dev, S.rc, mine.psn, &me);
	mine.rc_qpn = S.rc->qp_num;
	mine.ud_qpn = S.ud->qp_num;
	memcpy(mine.gid, dev.gid.raw, 16);
	mine.raddr = (uintptr_t)S.r;
	mine.rkey = S.mr->rkey;
	mine.inv_addr = (uintptr_t)S.invbuf;
	mine.inv_rkey = S.inv->rkey;
	them = (struct vc_qpinfo){ .qpn = peer.rc_qpn, .psn = peer.psn };
	memcpy(them.gid, peer.gid, 16);
	rc = vc_connect(&dev, S.rc, mine.psn, &them, &path, true);
	if (rc)
		vc_die("connect RC: %s", strerror(rc));
	/* receives from INIT on; all posted before the client hears from
	 * us */
	for (uint32_t i = 0; i < RSLOTS; i++) {
		post_rc_recv(i);
		post_ud_recv(i);
	}
	vc_send_all(oob, &mine, sizeof(mine));

	for (;;) {
		struct verdict v = { .ok = 1 };
		uint32_t n;
		struct item it;

		if (vc_recv_all(oob, &n, sizeof(n)))
			vc_die("the client went away");
		if (n > MAX_ITEMS)
			vc_die("%u checks", n);
		for (uint32_t i = 0; i < n; i++) {
			vc_recv_must(oob, &it, sizeof(it));
			if (it.kind == K_QUIT) {
				printf("%s: PASS: %u RC and %u UD receives "
				       "checked\n",
				       vc_prog, S.nrecv, S.nud);
				return 0;
			}
			if (v.ok && check(&it, v.msg, sizeof(v.msg)))
				v.ok = 0;
		}
		vc_send_all(oob, &v, sizeof(v));
	}
}

/* ---- the client ------------------------------------------------------------ */

static struct {
	struct ibv_pd *pd;
	struct ibv_cq *cq, *ucq;
	struct ibv_qp *rc, *ud;
	struct ibv_qp_ex *x, *ux;
	struct ibv_qp_cap cap, ucap;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	uint8_t *l, *scratch;
	struct info peer;
	struct item items[MAX_ITEMS];
	uint32_t nitems;
	unsigned int steps, wrs;
} C;

static void expect(struct item it)
{
	if (C.nitems == MAX_ITEMS)
		vc_die("too many checks");
	C.items[C.nitems++] = it;
}

/* Sends the checks gathered since the last call; dies on a failure. */
static void verify_quiet(const char *step)
{
	struct verdict v;

	vc_send_all(oob, &C.nitems, sizeof(C.nitems));
	vc_send_all(oob, C.items, C.nitems * sizeof(C.items[0]));
	C.nitems = 0;
	vc_recv_must(oob, &v, sizeof(v));
	if (!v.ok)
		vc_die("%s: the server found %s", step, v.msg);
}

static void verify(const char *step)
{
	verify_quiet(step);
	C.steps++;
	printf("%s: %s ok\n", vc_prog, step);
}

/* Polls the next send completion: must be @wr_id, @opcode, success. */
static void sent(uint64_t wr_id, enum ibv_wc_opcode opcode, const char *what)
{
	struct ibv_wc wc;

	wait_wc(C.cq, &wc, what);
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != wr_id ||
	    wc.opcode != opcode)
		vc_die("%s: completion %s wr_id %" PRIu64 " opcode %d; want "
		       "success, %" PRIu64 ", %d",
		       what, vc_st(wc.status), wc.wr_id, wc.opcode, wr_id,
		       opcode);
	C.wrs++;
}

static void nothing_completes(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;

	usleep(200000);
	if (ibv_poll_cq(cq, 1, &wc))
		vc_die("%s: a completion came (wr_id %" PRIu64 ", %s)", what,
		       wc.wr_id, vc_st(wc.status));
}

/* Stream @stream of @len bytes spread over @n local pieces at @offs
 * (offsets in C.l), as one SGE list in @sge. */
static void pieces(uint64_t stream, uint32_t len, const uint32_t *offs,
		   const uint32_t *lens, int n, struct ibv_sge *sge)
{
	uint32_t at = 0;

	vc_fill(C.scratch, len, seed, stream);
	for (int i = 0; i < n; i++) {
		memcpy(C.l + offs[i], C.scratch + at, lens[i]);
		sge[i] = (struct ibv_sge){ (uintptr_t)(C.l + offs[i]), lens[i],
					   C.mr->lkey };
		at += lens[i];
	}
	if (at != len)
		vc_die("pieces: %u of %u bytes", at, len);
}

/* Stream @stream of @len bytes at local offset @off, as one SGE. */
static struct ibv_sge one(uint64_t stream, uint32_t len, uint32_t off)
{
	struct ibv_sge s;

	pieces(stream, len, &off, &len, 1, &s);
	return s;
}

static uint64_t raddr(uint64_t off)
{
	return C.peer.raddr + off;
}

static void complete_ok(struct ibv_qp_ex *x, const char *what)
{
	int rc = ibv_wr_complete(x);

	if (rc)
		vc_die("%s: ibv_wr_complete: %s", what, strerror(rc));
}

static void step_create(void)
{
	static const struct {
		enum ibv_qp_type type;
		uint64_t ops;
		const char *name;
	} refused[] = {
		{ IBV_QPT_RC, IBV_QP_EX_WITH_TSO, "RC TSO" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_ATOMIC_WRITE, "UD ATOMIC_WRITE" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE, "UD RDMA_WRITE" },
		/* memory windows: RC only (docs/PROVIDER.md, "Memory
		 * windows") */
		{ IBV_QPT_UD, IBV_QP_EX_WITH_BIND_MW, "UD BIND_MW" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_LOCAL_INV, "UD LOCAL_INV" },
	};
	struct ibv_qp_init_attr plain = {
		.send_cq = C.cq,
		.recv_cq = C.cq,
		.cap = { .max_send_wr = 1,
			 .max_recv_wr = 1,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp;

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct ibv_qp_init_attr_ex a = {
			.send_cq = C.cq,
			.recv_cq = C.cq,
			.cap = plain.cap,
			.qp_type = refused[i].type,
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = C.pd,
			.send_ops_flags = IBV_QP_EX_WITH_SEND | refused[i].ops,
		};

		errno = 0;
		qp = ibv_create_qp_ex(dev.ctx, &a);
		if (qp || errno != EOPNOTSUPP)
			vc_die("ibv_create_qp_ex %s: %s, errno %s (want "
			       "EOPNOTSUPP)",
			       refused[i].name, qp ? "a QP" : "NULL",
			       strerror(errno));
	}
	qp = ibv_create_qp(C.pd, &plain);
	if (!qp)
		vc_die("ibv_create_qp: %s", strerror(errno));
	if (ibv_qp_to_qp_ex(qp))
		vc_die("ibv_qp_to_qp_ex of a plain QP is not NULL");
	if (ibv_destroy_qp(qp))
		vc_die("ibv_destroy_qp");
	printf("%s: create ok (RC: max_send_wr %u, max_send_sge %u, "
	       "max_inline_data %u)\n",
	       vc_prog, C.cap.max_send_wr, C.cap.max_send_sge,
	       C.cap.max_inline_data);
	C.steps++;
}

static void step_ops(void)
{
	static const uint32_t w_off[3] = { 0, 100000, 200000 };
	static const uint32_t w_len[3] = { 20000, 30000, 15536 };
	static const uint32_t s_off[2] = { 250000, 270000 };
	static const uint32_t s_len[2] = { 3000, 5000 };
	static const uint32_t r_off[2] = { 400000, 500000 };
	static const uint32_t r_len[2] = { 10000, 22768 };
	struct ibv_qp_ex *x = C.x;
	struct ibv_sge sge[3], s;
	uint8_t inl[200];
	struct ibv_data_buf bufs[3] = { { inl, 10 },
					{ inl + 10, 50 },
					{ inl + 60, 140 } };
	uint64_t old;

	/* RDMA_WRITE: 64 KB gathered from three pieces */
	pieces(1, 65536, w_off, w_len, 3, sge);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, C.peer.rkey, raddr(0));
	ibv_wr_set_sge_list(x, 3, sge);
	complete_ok(x, "RDMA_WRITE");
	sent(1, IBV_WC_RDMA_WRITE, "RDMA_WRITE");
	expect((struct item){ .kind = K_MEM, .len = 65536, .stream = 1 });
	verify("ops: RDMA_WRITE (3 SGEs)");

	/* RDMA_WRITE_WITH_IMM */
	s = one(2, 4096, 300000);
	ibv_wr_start(x);
	x->wr_id = 2;
	ibv_wr_rdma_write_imm(x, C.peer.rkey, raddr(65536), htonl(0xabc));
	ibv_wr_set_sge(x, s.lkey, s.addr, s.length);
	complete_ok(x, "RDMA_WRITE_WITH_IMM");
	sent(2, IBV_WC_RDMA_WRITE, "RDMA_WRITE_WITH_IMM");
	expect((struct item){
		.kind = K_MEM, .off = 65536, .len = 4096, .stream = 2 });
	expect((struct item){ .kind = K_RECV,
			      .opcode = IBV_WC_RECV_RDMA_WITH_IMM,
			      .len = 4096,
			      .imm = htonl(0xabc),
			      .wc_flags = IBV_WC_WITH_IMM });
	verify("ops: RDMA_WRITE_WITH_IMM");

	/* SEND: 8000 bytes from two pieces */
	pieces(3, 8000, s_off, s_len, 2, sge);
	ibv_wr_start(x);
	x->wr_id = 3;
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 2, sge);
	memset(sge, 0, sizeof(sge)); /* the list was copied */
	complete_ok(x, "SEND");
	sent(3, IBV_WC_SEND, "SEND");
	expect((struct item){ .kind = K_RECV,
			      .opcode = IBV_WC_RECV,
			      .len = 8000,
			      .stream = 3 });
	verify("ops: SEND (2 SGEs)");

	/* SEND_WITH_IMM, inline from three buffers, reused at once */
	vc_fill(inl, sizeof(inl), seed, 4);
	ibv_wr_start(x);
	x->wr_id = 4;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	ibv_wr_send_imm(x, htonl(0x4444));
	ibv_wr_set_inline_data_list(x, 3, bufs);
	memset(inl, 0x5a, sizeof(inl));
	complete_ok(x, "SEND_WITH_IMM inline");
	sent(4, IBV_WC_SEND, "SEND_WITH_IMM inline");
	x->wr_flags = IBV_SEND_SIGNALED;
	expect((struct item){ .kind = K_RECV,
			      .opcode = IBV_WC_RECV,
			      .len = sizeof(inl),
			      .imm = htonl(0x4444),
			      .wc_flags = IBV_WC_WITH_IMM,
			      .stream = 4 });
	verify("ops: SEND_WITH_IMM (inline, 3 buffers)");

	/* SEND_WITH_INV of the server's second region */
	s = one(5, 1000, 320000);
	ibv_wr_start(x);
	x->wr_id = 5;
	ibv_wr_send_inv(x, C.peer.inv_rkey);
	ibv_wr_set_sge(x, s.lkey, s.addr, s.length);
	complete_ok(x, "SEND_WITH_INV");
	sent(5, IBV_WC_SEND, "SEND_WITH_INV");
	expect((struct item){ .kind = K_RECV,
			      .opcode = IBV_WC_RECV,
			      .len = 1000,
			      .imm = C.peer.inv_rkey,
			      .wc_flags = IBV_WC_WITH_INV,
			      .stream = 5 });
	verify("ops: SEND_WITH_INV");

	/* RDMA_READ: 32 KB into two pieces between guard bytes */
	memset(C.l + r_off[0] - 256, 0xee, r_len[0] + 512);
	memset(C.l + r_off[1] - 256, 0xee, r_len[1] + 512);
	sge[0] = (struct ibv_sge){ (uintptr_t)(C.l + r_off[0]), r_len[0],
				   C.mr->lkey };
	sge[1] = (struct ibv_sge){ (uintptr_t)(C.l + r_off[1]), r_len[1],
				   C.mr->lkey };
	ibv_wr_start(x);
	x->wr_id = 6;
	ibv_wr_rdma_read(x, C.peer.rkey, raddr(R_READ + 512));
	ibv_wr_set_sge_list(x, 2, sge);
	complete_ok(x, "RDMA_READ");
	sent(6, IBV_WC_RDMA_READ, "RDMA_READ");
	vc_fill(C.scratch, 1u << 20, seed, S_READ);
	if (memcmp(C.l + r_off[0], C.scratch + 512, r_len[0]) ||
	    memcmp(C.l + r_off[1], C.scratch + 512 + r_len[0], r_len[1]))
		vc_die("RDMA_READ: the data differ");
	for (int i = 0; i < 2; i++)
		for (uint32_t g = 0; g < 256; g++)
			if (C.l[r_off[i] - 256 + g] != 0xee ||
			    C.l[r_off[i] + r_len[i] + g] != 0xee)
				vc_die("RDMA_READ: a guard byte written");
	C.steps++;
	printf("%s: ops: RDMA_READ (2 SGEs) ok\n", vc_prog);

	/* CMP_AND_SWP: a hit, then a miss; FETCH_AND_ADD */
	ibv_wr_start(x);
	x->wr_id = 7;
	ibv_wr_atomic_cmp_swp(x, C.peer.rkey, raddr(R_ATOM), ATOM0, 0x2000);
	ibv_wr_set_sge(x, C.mr->lkey, (uintptr_t)(C.l + 600000), 8);
	x->wr_id = 8;
	ibv_wr_atomic_cmp_swp(x, C.peer.rkey, raddr(R_ATOM), 0x1234, 0x3000);
	ibv_wr_set_sge(x, C.mr->lkey, (uintptr_t)(C.l + 600008), 8);
	x->wr_id = 9;
	ibv_wr_atomic_fetch_add(x, C.peer.rkey, raddr(R_ATOM), 5);
	ibv_wr_set_sge(x, C.mr->lkey, (uintptr_t)(C.l + 600016), 8);
	complete_ok(x, "atomics");
	sent(7, IBV_WC_COMP_SWAP, "CMP_AND_SWP");
	sent(8, IBV_WC_COMP_SWAP, "CMP_AND_SWP");
	sent(9, IBV_WC_FETCH_ADD, "FETCH_AND_ADD");
	memcpy(&old, C.l + 600000, 8);
	if (old != ATOM0)
		vc_die("CMP_AND_SWP hit returned 0x%" PRIx64, old);
	memcpy(&old, C.l + 600008, 8);
	if (old != 0x2000)
		vc_die("CMP_AND_SWP miss returned 0x%" PRIx64, old);
	memcpy(&old, C.l + 600016, 8);
	if (old != 0x2000)
		vc_die("FETCH_AND_ADD returned 0x%" PRIx64, old);
	expect((struct item){ .kind = K_WORD, .off = R_ATOM, .value = 0x2005 });
	verify("ops: CMP_AND_SWP, FETCH_AND_ADD");

	/* ATOMIC_WRITE: 8 bytes stored as they are, nothing returned */
	{
		static const uint8_t aw[8] = { 0xef, 0xcd, 0xab, 0x89,
					       0x67, 0x45, 0x23, 0x01 };
		struct ibv_send_wr pw = { .wr_id = 12,
					  .opcode = IBV_WR_ATOMIC_WRITE,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		uint64_t want;
		int rc;

		memcpy(&want, aw, 8);
		ibv_wr_start(x);
		x->wr_id = 10;
		ibv_wr_atomic_write(x, C.peer.rkey, raddr(R_ATOM + 16), aw);
		complete_ok(x, "atomic write");
		sent(10, IBV_WC_ATOMIC_WRITE, "ATOMIC_WRITE");
		ibv_wr_start(x);
		x->wr_id = 11;
		ibv_wr_atomic_write(x, C.peer.rkey, raddr(R_ATOM + 20), aw);
		rc = ibv_wr_complete(x);
		if (rc != EINVAL)
			vc_die("ATOMIC_WRITE to a misaligned target: "
			       "wr_complete %s, want EINVAL",
			       strerror(rc));
		pw.wr.rdma.remote_addr = raddr(R_ATOM + 16);
		pw.wr.rdma.rkey = C.peer.rkey;
		rc = ibv_post_send(C.rc, &pw, &bad);
		if (rc != EINVAL)
			vc_die("ibv_post_send IBV_WR_ATOMIC_WRITE: %s, want "
			       "EINVAL",
			       strerror(rc));
		nothing_completes(C.cq, "ATOMIC_WRITE refused");
		expect((struct item){
			.kind = K_WORD, .off = R_ATOM + 16, .value = want });
		verify("ops: ATOMIC_WRITE");
	}
}

static void step_batch(void)
{
	struct ibv_qp_ex *x = C.x;
	enum ibv_wc_opcode op[12];
	uint64_t got;

	ibv_wr_start(x);
	for (uint32_t i = 0; i < 12; i++) {
		x->wr_id = 900 + i;
		if (i % 2 == 0) {
			struct ibv_sge s = one(200 + i, 1000 * (i + 1),
					       700000 + i * 16384);

			ibv_wr_rdma_write(x, C.peer.rkey,
					  raddr(131072 + i * 16384));
			ibv_wr_set_sge(x, s.lkey, s.addr, s.length);
			op[i] = IBV_WC_RDMA_WRITE;
			expect((struct item){ .kind = K_MEM,
					      .off = 131072 + i * 16384,
					      .len = 1000 * (i + 1),
					      .stream = 200 + i });
		} else if (i % 4 == 1) {
			struct ibv_sge s =
				one(200 + i, 500, 700000 + i * 16384);

			ibv_wr_send(x);
			ibv_wr_set_sge_list(x, 1, &s);
			op[i] = IBV_WC_SEND;
			expect((struct item){ .kind = K_RECV,
					      .opcode = IBV_WC_RECV,
					      .len = 500,
					      .stream = 200 + i });
		} else {
			ibv_wr_atomic_fetch_add(x, C.peer.rkey,
						raddr(R_ATOM + 8), 1);
			ibv_wr_set_sge(x, C.mr->lkey,
				       (uintptr_t)(C.l + 610000 + i * 8), 8);
			op[i] = IBV_WC_FETCH_ADD;
		}
	}
	complete_ok(x, "batch of 12");
	for (uint32_t i = 0; i < 12; i++)
		sent(900 + i, op[i], "batch of 12");
	for (uint32_t i = 3, k = 0; i < 12; i += 4, k++) {
		memcpy(&got, C.l + 610000 + i * 8, 8);
		if (got != k)
			vc_die("batch: FETCH_AND_ADD %u returned %" PRIu64, i,
			       got);
	}
	expect((struct item){ .kind = K_WORD, .off = R_ATOM + 8, .value = 3 });
	verify("batch: 12 WRs in one wr_start / wr_complete");
}

static void step_abort(void)
{
	struct ibv_qp_ex *x = C.x;
	struct ibv_sge s = one(300, 4096, 900000);
	struct ibv_sge m = one(301, 100, 910000);

	ibv_wr_start(x);
	x->wr_id = 30;
	ibv_wr_rdma_write(x, C.peer.rkey, raddr(R_CANARY));
	ibv_wr_set_sge(x, s.lkey, s.addr, s.length);
	x->wr_id = 31;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, m.lkey, m.addr, m.length);
	ibv_wr_abort(x);
	nothing_completes(C.cq, "abort");
	expect((struct item){
		.kind = K_ZERO, .off = R_CANARY, .len = CANARY_LEN });
	expect((struct item){ .kind = K_NORECV });
	verify("abort: nothing sent");
	/* the next batch uses the slots: its SEND takes the next receive */
	m = one(302, 64, 920000);
	ibv_wr_start(x);
	x->wr_id = 32;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, m.lkey, m.addr, m.length);
	complete_ok(x, "after abort");
	sent(32, IBV_WC_SEND, "after abort");
	expect((struct item){ .kind = K_RECV,
			      .opcode = IBV_WC_RECV,
			      .len = 64,
			      .stream = 302 });
	verify("abort: the next batch");
}

static void step_errors(void)
{
	struct ibv_qp_ex *x = C.x;
	struct ibv_sge *list = calloc(C.cap.max_send_sge + 1, sizeof(*list));
	uint8_t *big = calloc(1, C.cap.max_inline_data + 1);
	int rc;

	if (!list || !big)
		vc_die("memory");
	for (uint32_t i = 0; i <= C.cap.max_send_sge; i++)
		list[i] = one(310, 8, 930000 + i * 64);
	ibv_wr_start(x);
	x->wr_id = 40;
	ibv_wr_rdma_write(x, C.peer.rkey, raddr(R_CANARY));
	ibv_wr_set_sge_list(x, C.cap.max_send_sge + 1, list);
	rc = ibv_wr_complete(x);
	if (rc != EINVAL)
		vc_die("%u SGEs (max_send_sge %u): wr_complete %s, want EINVAL",
		       C.cap.max_send_sge + 1, C.cap.max_send_sge,
		       strerror(rc));
	ibv_wr_start(x);
	x->wr_id = 41;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, list[0].lkey, list[0].addr, list[0].length);
	x->wr_id = 42;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, big, C.cap.max_inline_data + 1);
	rc = ibv_wr_complete(x);
	if (rc != EINVAL)
		vc_die("inline %u bytes (max_inline_data %u): wr_complete %s, "
		       "want EINVAL",
		       C.cap.max_inline_data + 1, C.cap.max_inline_data,
		       strerror(rc));
	nothing_completes(C.cq, "errors");
	expect((struct item){
		.kind = K_ZERO, .off = R_CANARY, .len = CANARY_LEN });
	expect((struct item){ .kind = K_NORECV });
	verify("errors: EINVAL, nothing sent");
	free(list);
	free(big);
}

static void step_full(void)
{
	struct ibv_qp_ex *x = C.x;
	uint32_t n = C.cap.max_send_wr;
	struct ibv_send_wr *wr = calloc(n, sizeof(*wr)), *bad;
	struct ibv_sge *sge = calloc(n, sizeof(*sge));
	struct ibv_sge s;
	int rc;

	if (!wr || !sge)
		vc_die("memory");
	/* max_send_wr + 1 in one batch */
	s = one(400, 64, 950000);
	ibv_wr_start(x);
	for (uint32_t i = 0; i <= n; i++) {
		x->wr_id = 1000 + i;
		ibv_wr_rdma_write(x, C.peer.rkey, raddr(R_CANARY + i * 64));
		ibv_wr_set_sge(x, s.lkey, s.addr, s.length);
	}
	rc = ibv_wr_complete(x);
	if (rc != ENOMEM)
		vc_die("%u WRs (max_send_wr %u): wr_complete %s, want ENOMEM",
		       n + 1, n, strerror(rc));
	nothing_completes(C.cq, "full");
	expect((struct item){
		.kind = K_ZERO, .off = R_CANARY, .len = CANARY_LEN });
	verify("full: max_send_wr + 1 in a batch, ENOMEM");

	/* max_send_wr outstanding from ibv_post_send, not polled */
	for (uint32_t i = 0; i < n; i++) {
		sge[i] = one(401, 64, 960000);
		wr[i] = (struct ibv_send_wr){ .wr_id = 2000 + i,
					      .next = i + 1 < n ? &wr[i + 1] :
								  NULL,
					      .sg_list = &sge[i],
					      .num_sge = 1,
					      .opcode = IBV_WR_RDMA_WRITE,
					      .send_flags = IBV_SEND_SIGNALED };
		wr[i].wr.rdma.rkey = C.peer.rkey;
		wr[i].wr.rdma.remote_addr = raddr(262144 + 65536 + i * 64);
	}
	if ((rc = ibv_post_send(C.rc, wr, &bad)))
		vc_die("ibv_post_send of %u: %s", n, strerror(rc));
	ibv_wr_start(x);
	x->wr_id = 3000;
	ibv_wr_rdma_write(x, C.peer.rkey, raddr(R_CANARY));
	ibv_wr_set_sge(x, s.lkey, s.addr, s.length);
	rc = ibv_wr_complete(x);
	if (rc != ENOMEM)
		vc_die("a batch behind %u outstanding: %s, want ENOMEM", n,
		       strerror(rc));
	for (uint32_t i = 0; i < n; i++)
		sent(2000 + i, IBV_WC_RDMA_WRITE, "outstanding WRITEs");
	s = one(402, 64, 970000);
	ibv_wr_start(x);
	x->wr_id = 3001;
	ibv_wr_rdma_write(x, C.peer.rkey, raddr(262144));
	ibv_wr_set_sge(x, s.lkey, s.addr, s.length);
	complete_ok(x, "after the queue drained");
	sent(3001, IBV_WC_RDMA_WRITE, "after the queue drained");
	for (uint32_t i = 0; i < n; i++)
		expect((struct item){ .kind = K_MEM,
				      .off = 262144 + 65536 + i * 64,
				      .len = 64,
				      .stream = 401 });
	expect((struct item){
		.kind = K_MEM, .off = 262144, .len = 64, .stream = 402 });
	expect((struct item){
		.kind = K_ZERO, .off = R_CANARY, .len = CANARY_LEN });
	verify("full: ENOMEM behind max_send_wr outstanding, room after polling");
	free(wr);
	free(sge);
}

static void step_mixed(void)
{
	struct ibv_qp_ex *x = C.x;
	struct ibv_sge s1 = one(500, 2000, 1000000);
	struct ibv_sge s2 = one(501, 300, 1010000);
	struct ibv_sge s3 = one(502, 700, 1020000);
	struct ibv_sge s4 = one(503, 900, 1030000);
	struct ibv_send_wr w1 = { .wr_id = 51,
				  .sg_list = &s1,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED },
			   w4 = { .wr_id = 54,
				  .sg_list = &s4,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	int rc;

	w1.wr.rdma.rkey = C.peer.rkey;
	w1.wr.rdma.remote_addr = raddr(819200);
	if ((rc = ibv_post_send(C.rc, &w1, &bad)))
		vc_die("ibv_post_send: %s", strerror(rc));
	ibv_wr_start(x);
	x->wr_id = 52;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, s2.lkey, s2.addr, s2.length);
	x->wr_id = 53;
	ibv_wr_rdma_write_imm(x, C.peer.rkey, raddr(829440), htonl(53));
	ibv_wr_set_sge(x, s3.lkey, s3.addr, s3.length);
	complete_ok(x, "mixed");
	if ((rc = ibv_post_send(C.rc, &w4, &bad)))
		vc_die("ibv_post_send: %s", strerror(rc));
	sent(51, IBV_WC_RDMA_WRITE, "mixed");
	sent(52, IBV_WC_SEND, "mixed");
	sent(53, IBV_WC_RDMA_WRITE, "mixed");
	sent(54, IBV_WC_SEND, "mixed");
	expect((struct item){
		.kind = K_MEM, .off = 819200, .len = 2000, .stream = 500 });
	expect((struct item){ .kind = K_RECV,
			      .opcode = IBV_WC_RECV,
			      .len = 300,
			      .stream = 501 });
	expect((struct item){ .kind = K_RECV,
			      .opcode = IBV_WC_RECV_RDMA_WITH_IMM,
			      .len = 700,
			      .imm = htonl(53),
			      .wc_flags = IBV_WC_WITH_IMM });
	expect((struct item){
		.kind = K_MEM, .off = 829440, .len = 700, .stream = 502 });
	expect((struct item){ .kind = K_RECV,
			      .opcode = IBV_WC_RECV,
			      .len = 900,
			      .stream = 503 });
	verify("mixed: ibv_post_send, a batch, ibv_post_send in order");
}

static void step_zero(void)
{
	struct ibv_qp_ex *x = C.x;

	ibv_wr_start(x);
	x->wr_id = 60;
	ibv_wr_send(x);
	ibv_wr_set_sge_list(x, 0, NULL);
	x->wr_id = 61;
	ibv_wr_rdma_write(x, C.peer.rkey, raddr(R_CANARY));
	ibv_wr_set_sge(x, C.mr->lkey, (uintptr_t)C.l, 0);
	complete_ok(x, "zero length");
	sent(60, IBV_WC_SEND, "zero-length SEND");
	sent(61, IBV_WC_RDMA_WRITE, "zero-length WRITE");
	expect((struct item){ .kind = K_RECV, .opcode = IBV_WC_RECV });
	expect((struct item){
		.kind = K_ZERO, .off = R_CANARY, .len = CANARY_LEN });
	verify("zero: a SEND without data, a zero-length WRITE");
}

/* @rounds batches of 8: 6 RDMA WRITEs and 2 SENDs of random sizes, only
 * the last WR signaled (the others complete with it: RC completes in
 * order), many times round the send ring. */
static void step_stream(unsigned int rounds)
{
	struct ibv_qp_ex *x = C.x;
	struct vc_rng g;
	uint64_t bytes = 0;
	char what[64];

	vc_rng_init(&g, seed, 0x5157);
	for (unsigned int r = 0; r < rounds; r++) {
		ibv_wr_start(x);
		for (uint32_t i = 0; i < 8; i++) {
			uint64_t stream = 10000 + (uint64_t)r * 8 + i;
			uint32_t len = (uint32_t)vc_range(&g, 1, 65536);
			struct ibv_sge s =
				one(stream, len, 1200000 + i * 65536);

			x->wr_id = stream;
			x->wr_flags = i == 7 ? IBV_SEND_SIGNALED : 0;
			if (i % 4 == 3) {
				ibv_wr_send(x);
				expect((struct item){ .kind = K_RECV,
						      .opcode = IBV_WC_RECV,
						      .len = len,
						      .stream = stream });
			} else {
				ibv_wr_rdma_write(x, C.peer.rkey,
						  raddr((uint64_t)i * 131072));
				expect((struct item){ .kind = K_MEM,
						      .off = (uint64_t)i *
							     131072,
						      .len = len,
						      .stream = stream });
			}
			ibv_wr_set_sge(x, s.lkey, s.addr, s.length);
			bytes += len;
		}
		complete_ok(x, "stream");
		sent(10000 + (uint64_t)r * 8 + 7, IBV_WC_SEND, "stream");
		C.wrs += 7; /* completed with the signaled one */
		snprintf(what, sizeof(what), "stream round %u", r);
		verify_quiet(what);
	}
	x->wr_flags = IBV_SEND_SIGNALED;
	C.steps++;
	printf("%s: stream: %u batches of 8 (%" PRIu64 " bytes, one "
	       "signaled WR each) ok\n",
	       vc_prog, rounds, bytes);
}

/* 200 batches of 8 RDMA WRITEs of 4 KB, the last of each signaled and
 * polled, between two getppid(2) markers: verbs-apps.sh runs the client
 * under strace and the thread must make no other system call between
 * them (nothing prints in between). A first batch before the markers
 * wakes ovrdmad up; the testbed keeps it spinning (--spin-us). */
static void step_quiet(void)
{
	struct ibv_qp_ex *x = C.x;
	struct ibv_sge s[8];
	struct ibv_wc wc;
	const unsigned int rounds = 200;

	for (uint32_t i = 0; i < 8; i++)
		s[i] = one(20000 + i, 4096, 2200000 + i * 4096);
	for (unsigned int r = 0; r <= rounds; r++) {
		if (r == 1)
			syscall(SYS_getppid);
		ibv_wr_start(x);
		for (uint32_t i = 0; i < 8; i++) {
			x->wr_id = (uint64_t)r * 8 + i;
			x->wr_flags = i == 7 ? IBV_SEND_SIGNALED : 0;
			ibv_wr_rdma_write(x, C.peer.rkey,
					  raddr((uint64_t)i * 4096));
			ibv_wr_set_sge(x, s[i].lkey, s[i].addr, s[i].length);
		}
		if (ibv_wr_complete(x))
			vc_die("quiet: ibv_wr_complete");
		while (!ibv_poll_cq(C.cq, 1, &wc))
			;
		if (wc.status != IBV_WC_SUCCESS ||
		    wc.wr_id != (uint64_t)r * 8 + 7)
			vc_die("quiet: %s, wr_id %" PRIu64, vc_st(wc.status),
			       wc.wr_id);
	}
	syscall(SYS_getppid);
	x->wr_flags = IBV_SEND_SIGNALED;
	C.wrs += (rounds + 1) * 8;
	for (uint32_t i = 0; i < 8; i++)
		expect((struct item){ .kind = K_MEM,
				      .off = (uint64_t)i * 4096,
				      .len = 4096,
				      .stream = 20000 + i });
	verify("quiet: 200 batches of 8 WRITEs between the syscall markers");
}

static void step_ud(void)
{
	struct ibv_qp_ex *x = C.ux;
	uint8_t inl[200];
	struct ibv_wc wc;
	int rc;

	ibv_wr_start(x);
	for (uint32_t i = 0; i < 8; i++) {
		x->wr_id = 700 + i;
		x->wr_flags = IBV_SEND_SIGNALED;
		if (i % 2 == 0) {
			struct ibv_sge s =
				one(600 + i, 1000, 1100000 + i * 4096);

			ibv_wr_send(x);
			if (i % 4 == 0)
				ibv_wr_set_ud_addr(x, C.ah, C.peer.ud_qpn,
						   UD_QKEY);
			ibv_wr_set_sge(x, s.lkey, s.addr, s.length);
			if (i % 4 == 2)
				ibv_wr_set_ud_addr(x, C.ah, C.peer.ud_qpn,
						   UD_QKEY);
			expect((struct item){ .kind = K_UDRECV,
					      .opcode = IBV_WC_RECV,
					      .len = 1000,
					      .stream = 600 + i });
		} else {
			vc_fill(inl, sizeof(inl), seed, 600 + i);
			ibv_wr_send_imm(x, htonl(0x600 + i));
			ibv_wr_set_inline_data(x, inl, sizeof(inl));
			memset(inl, 0, sizeof(inl));
			ibv_wr_set_ud_addr(x, C.ah, C.peer.ud_qpn, UD_QKEY);
			expect((struct item){ .kind = K_UDRECV,
					      .opcode = IBV_WC_RECV,
					      .len = sizeof(inl),
					      .imm = htonl(0x600 + i),
					      .wc_flags = IBV_WC_WITH_IMM,
					      .stream = 600 + i });
		}
	}
	complete_ok(x, "UD batch of 8");
	for (uint32_t i = 0; i < 8; i++) {
		wait_wc(C.ucq, &wc, "UD send");
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 700 + i ||
		    wc.opcode != IBV_WC_SEND)
			vc_die("UD send: %s wr_id %" PRIu64 ", want %u",
			       vc_st(wc.status), wc.wr_id, 700 + i);
		C.wrs++;
	}
	verify("ud: 8 datagrams in one batch");
	/* a UD WR without an address */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, inl, 8);
	rc = ibv_wr_complete(x);
	if (rc != EINVAL)
		vc_die("UD WR without wr_set_ud_addr: %s, want EINVAL",
		       strerror(rc));
	nothing_completes(C.ucq, "UD without an address");
	C.steps++;
	printf("%s: ud: no address, EINVAL ok\n", vc_prog);
}

static int run_client(const char *host, int port, bool ud, unsigned int rounds)
{
	struct info mine = { .magic = MAGIC, .psn = 0x4321, .seed = seed };
	struct vc_qpinfo them;
	struct vc_path path = vc_path_default();
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	double t0 = vc_now();
	uint32_t quit = 1;
	struct item q = { .kind = K_QUIT };
	int rc;

	printf("%s: seed %" PRIu64 "\n", vc_prog, seed);
	C.pd = ibv_alloc_pd(dev.ctx);
	C.cq = ibv_create_cq(dev.ctx, 512, NULL, NULL, 0);
	C.ucq = ibv_create_cq(dev.ctx, 64, NULL, NULL, 0);
	C.l = calloc(1, L_LEN);
	C.scratch = malloc(R_LEN);
	if (!C.pd || !C.cq || !C.ucq || !C.l || !C.scratch)
		vc_die("PD, CQs, memory");
	C.mr = ibv_reg_mr(C.pd, C.l, L_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!C.mr)
		vc_die("ibv_reg_mr: %s", strerror(errno));
	C.cap = (struct ibv_qp_cap){ .max_send_wr = 32,
				     .max_recv_wr = 1,
				     .max_send_sge = 4,
				     .max_recv_sge = 1,
				     .max_inline_data = 256 };
	C.rc = make_qp(
		C.pd, C.cq, IBV_QPT_RC,
		IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			IBV_QP_EX_WITH_SEND_WITH_INV |
			IBV_QP_EX_WITH_RDMA_READ |
			IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
			IBV_QP_EX_WITH_ATOMIC_WRITE,
		&C.cap);
	C.ucap = (struct ibv_qp_cap){ .max_send_wr = 16,
				      .max_recv_wr = 1,
				      .max_send_sge = 1,
				      .max_recv_sge = 1,
				      .max_inline_data = 256 };
	C.ud = make_qp(C.pd, C.ucq, IBV_QPT_UD,
		       IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM,
		       &C.ucap);
	C.x = ibv_qp_to_qp_ex(C.rc);
	C.ux = ibv_qp_to_qp_ex(C.ud);
	ud_up(C.ud);
	step_create();

	oob = vc_tcp_client(host, port);
	mine.rc_qpn = C.rc->qp_num;
	mine.ud_qpn = C.ud->qp_num;
	memcpy(mine.gid, dev.gid.raw, 16);
	vc_send_all(oob, &mine, sizeof(mine));
	vc_recv_must(oob, &C.peer, sizeof(C.peer));
	if (C.peer.magic != MAGIC)
		vc_die("not a verbs_qpx server");
	them = (struct vc_qpinfo){ .qpn = C.peer.rc_qpn, .psn = C.peer.psn };
	memcpy(them.gid, C.peer.gid, 16);
	rc = vc_connect(&dev, C.rc, mine.psn, &them, &path, true);
	if (rc)
		vc_die("connect RC: %s", strerror(rc));
	memcpy(aa.grh.dgid.raw, C.peer.gid, 16);
	aa.grh.hop_limit = 64;
	C.ah = ibv_create_ah(C.pd, &aa);
	if (!C.ah)
		vc_die("ibv_create_ah: %s", strerror(errno));

	step_ops();
	step_batch();
	step_abort();
	step_errors();
	step_full();
	step_mixed();
	step_zero();
	step_stream(rounds);
	step_quiet();
	if (ud)
		step_ud();
	vc_send_all(oob, &quit, sizeof(quit));
	vc_send_all(oob, &q, sizeof(q));
	printf("%s: PASS: seed %" PRIu64 ", %u steps, %u WRs through the "
	       "wr_* API checked%s, %.2f s\n",
	       vc_prog, seed, C.steps, C.wrs, ud ? "" : " (no UD)",
	       vc_now() - t0);
	ibv_destroy_ah(C.ah);
	ibv_destroy_qp(C.ud);
	ibv_destroy_qp(C.rc);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "no-ud", no_argument, NULL, 'u' },
		{ "rounds", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *devname = NULL, *addr = NULL;
	int port = 18760, c;
	bool server, ud = true;
	unsigned int rounds = 100;

	vc_prog = "verbs_qpx";
	setvbuf(stdout, NULL, _IOLBF, 0);
	seed = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
	if (argc < 2 ||
	    (strcmp(argv[1], "server") && strcmp(argv[1], "client")))
		goto usage;
	server = !strcmp(argv[1], "server");
	if (!server) {
		if (argc < 3)
			goto usage;
		addr = argv[2];
	}
	optind = server ? 2 : 3;
	while ((c = getopt_long(argc, argv, "p:d:", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			port = atoi(optarg);
			break;
		case 'd':
			devname = optarg;
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'u':
			ud = false;
			break;
		case 'r':
			rounds = (unsigned int)atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	vc_open(&dev, devname);
	return server ? run_server(port) : run_client(addr, port, ud, rounds);
usage:
	fprintf(stderr,
		"usage: verbs_qpx server [-p PORT] [-d DEV]\n"
		"       verbs_qpx client ADDR [-p PORT] [-d DEV] [--seed N] "
		"[--no-ud] [--rounds N]\n");
	return 2;
}
