/* SPDX-License-Identifier: MIT */
/*
 * ovrdma wire format, version 1.
 *
 * This header is the single source of truth for every byte ovrdma puts on
 * the wire; docs/WIRE.md explains each field and the rules around it. The
 * layouts below are on-wire layouts: packed, every multi-byte field in
 * network byte order (big-endian), checked at compile time by the
 * static_asserts at the bottom of this file. Never read them in place
 * through a cast of an arbitrary buffer on a strict-alignment target: use
 * the codec (ovr_wire_parse/ovr_wire_build_hdr), which decodes into the
 * host-order struct ovr_wire_pkt.
 *
 * A frame on the underlay is:
 *
 *   Ethernet (14) | IPv4 (20) | UDP (8, dport 4790) | VXLAN-GPE (8, VNI)
 *   | inner IPv4 (20) | inner UDP (8, dport OVR_WIRE_UDP_PORT)
 *   | ovrdma PDU
 *
 * and the ovrdma PDU, the part this codec owns, is:
 *
 *   OTH (36) | extension header (by opcode, 0..72) | payload | CRC32C (4)
 *
 * The outer layers are built by vpc/; their constants live here so that
 * MTU arithmetic has one definition.
 */
#ifndef OVRDMA_WIRE_H
#define OVRDMA_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Outer encapsulation (built and checked by vpc/) ------------------- */

#define OVR_WIRE_ETH_HLEN 14u
#define OVR_WIRE_IPV4_HLEN 20u /* no options, ever: options are dropped */
#define OVR_WIRE_UDP_HLEN 8u
#define OVR_WIRE_VXLAN_HLEN 8u
/* IANA-assigned VXLAN-GPE port (draft-ietf-nvo3-vxlan-gpe): GPE carries
 * IPv4 directly, so no inner Ethernet header is spent on meaningless MACs. */
#define OVR_WIRE_VXLAN_GPE_PORT 4790u
#define OVR_WIRE_VXLAN_FLAG_I 0x08u /* VNI valid */
#define OVR_WIRE_VXLAN_FLAG_P 0x04u /* next-protocol field valid */
#define OVR_WIRE_VXLAN_NP_IPV4 0x01u
/*
 * Inner UDP destination port of ovrdma PDUs. Not IANA-assigned: it only
 * has to be unique inside a tenant's overlay, where ovrdmad owns the
 * address space. Configurable in ovrdmad; this is the default.
 */
#define OVR_WIRE_UDP_PORT 4793u

/* Bytes in front of the ovrdma PDU on the underlay (78). */
#define OVR_WIRE_ENCAP_LEN                                            \
	(OVR_WIRE_ETH_HLEN + OVR_WIRE_IPV4_HLEN + OVR_WIRE_UDP_HLEN + \
	 OVR_WIRE_VXLAN_HLEN + OVR_WIRE_IPV4_HLEN + OVR_WIRE_UDP_HLEN)
/* Bytes of an underlay IP packet (MTU-counted) that are not the PDU (64). */
#define OVR_WIRE_ENCAP_MTU_OVERHEAD (OVR_WIRE_ENCAP_LEN - OVR_WIRE_ETH_HLEN)

/* ---- Protocol constants ------------------------------------------------ */

/* Versions this build speaks. A node speaks every version in the range. */
#define OVR_WIRE_VERSION_MIN 1u
#define OVR_WIRE_VERSION_MAX 1u
#define OVR_WIRE_VERSION OVR_WIRE_VERSION_MAX

/* QPNs and PSNs are 24-bit, as in verbs (ibv_modify_qp masks sq_psn). */
#define OVR_WIRE_QPN_MASK 0x00ffffffu
#define OVR_WIRE_PSN_MASK 0x00ffffffu
/* Largest PSN distance that is "ahead" in serial arithmetic (2^23 - 1). */
#define OVR_WIRE_PSN_WINDOW 0x007fffffu

/* Largest RDMA message, as ibv_query_device's max_msg_sz reports (2 GiB). */
#define OVR_WIRE_MAX_MSG 0x80000000u
/* A PDU rides in one inner UDP datagram: 65535 - inner IPv4 - inner UDP. */
#define OVR_WIRE_MAX_PDU (65535u - OVR_WIRE_IPV4_HLEN - OVR_WIRE_UDP_HLEN)
/* Selective-ACK blocks an ACK may carry. */
#define OVR_WIRE_MAX_SACK 8u
/* Largest RNR NAK timer code (IB's 5-bit encoding, 0.01..655.36 ms). */
#define OVR_WIRE_RNR_TIMER_MAX 31u

#define OVR_WIRE_CRC_LEN 4u

/* ---- Opcodes ----------------------------------------------------------- */

/*
 * Three classes: sequenced (consume a PSN, delivered reliably and in order),
 * unsequenced control (ACK, NAK, CNP, TERMINATE: never acknowledged, never
 * retransmitted as such), datagram (UD, no reliability). VERSION_REJECT is outside every
 * version: its layout is frozen (struct ovr_wire_vrej).
 */
enum ovr_wire_opcode {
	/* sequenced, requester to responder */
	OVR_OP_SEND = 0x01,
	OVR_OP_SEND_IMM = 0x02,
	OVR_OP_SEND_INV = 0x03,
	OVR_OP_WRITE = 0x04,
	OVR_OP_WRITE_IMM = 0x05,
	OVR_OP_READ_REQ = 0x06,
	OVR_OP_ATOMIC_CS = 0x07,
	OVR_OP_ATOMIC_FA = 0x08,
	/* sequenced, responder to requester */
	OVR_OP_READ_RESP = 0x09,
	OVR_OP_ATOMIC_RESP = 0x0a,
	/* sequenced, requester to responder: an atomic's header, swap_add
	 * the 8 bytes stored (compare 0); answered with ATOMIC_RESP */
	OVR_OP_ATOMIC_WR = 0x0b,
	/* unsequenced control */
	OVR_OP_ACK = 0x10,
	OVR_OP_NAK = 0x11,
	OVR_OP_CNP = 0x12,
	OVR_OP_TERMINATE =
		0x13, /* the sender's QP is gone: struct ovr_wire_termh */
	/* datagram */
	OVR_OP_UD_SEND = 0x20,
	OVR_OP_UD_SEND_IMM = 0x21,
	/* version-invariant */
	OVR_OP_VERSION_REJECT = 0xff,
};

/* ---- Flags (OTH.flags) ------------------------------------------------- */

enum ovr_wire_flag {
	OVR_F_ACK = 1u << 0, /* ack_psn and tsecr are valid */
	OVR_F_CREDIT = 1u << 1, /* credit is valid */
	OVR_F_ACKREQ = 1u << 2, /* peer should acknowledge at once */
	OVR_F_SE = 1u << 3, /* solicited event */
	OVR_F_LAST = 1u << 4, /* last segment of its message */
	OVR_F_RETX = 1u << 5, /* this packet is a retransmission */
};
#define OVR_F_ALL                                                          \
	(OVR_F_ACK | OVR_F_CREDIT | OVR_F_ACKREQ | OVR_F_SE | OVR_F_LAST | \
	 OVR_F_RETX)

/* ---- NAK codes ----------------------------------------------------------- */

enum ovr_wire_nak_code {
	OVR_NAK_SEQ_ERR = 1, /* PSN outside the receive window */
	OVR_NAK_RNR = 2, /* receiver not ready: no receive posted */
	OVR_NAK_REM_ACCESS = 3, /* rkey, bounds, PD or access-flag violation */
	OVR_NAK_REM_OP = 4, /* responder could not execute the request */
	OVR_NAK_INV_REQ = 5, /* malformed request: bad length, alignment */
};
#define OVR_NAK_CODE_MAX OVR_NAK_INV_REQ

/* ---- TERMINATE reasons ------------------------------------------------- */

/*
 * Why a TERMINATE was sent, which also says what its psn field is and how
 * the receiver checks it (docs/WIRE.md §3.11).
 */
enum ovr_wire_term_reason {
	/* the sender's QP was destroyed; psn: the next PSN it would have
	 * sent (inside the receiver's receive window) */
	OVR_TERM_DESTROYED = 1,
	/* the sender's QP went to ERROR on its own side; psn as DESTROYED */
	OVR_TERM_ERROR = 2,
	/* no QP of that number: answers a sequenced packet; psn: that
	 * packet's PSN (inside the receiver's outstanding send range) */
	OVR_TERM_NO_QP_SEQ = 3,
	/* no QP of that number: answers an ACK; psn: that ACK's ack_psn
	 * (at most a window behind the receiver's cumulative ACK point) */
	OVR_TERM_NO_QP_ACK = 4,
};
#define OVR_TERM_REASON_MAX OVR_TERM_NO_QP_ACK

/* ---- On-wire layouts --------------------------------------------------- */

/*
 * Every version of the protocol starts with these 12 bytes, and a receiver
 * that does not speak a packet's version still reads them to answer with a
 * VERSION_REJECT. Changing this struct is not allowed, ever.
 */
struct ovr_wire_prefix {
	uint8_t version;
	uint8_t opcode;
	uint16_t flags;
	uint32_t dqpn; /* [31:24] zero, [23:0] destination QP */
	uint32_t sqpn; /* [31:24] zero, [23:0] source QP */
} __attribute__((packed));

/* ovrdma transport header: the first 36 bytes of every version-1 PDU. */
struct ovr_wire_oth {
	struct ovr_wire_prefix p;
	uint32_t psn; /* [31:24] zero; zero for unsequenced opcodes */
	uint32_t ack_psn; /* [31:24] zero; next PSN expected (F_ACK) */
	uint32_t credit; /* queue-0 MSN limit (F_CREDIT), else zero */
	uint32_t tsval; /* sender clock, ns mod 2^32 */
	uint32_t tsecr; /* echoed tsval (F_ACK), else zero */
	uint16_t payload_len; /* bytes between headers and CRC */
	uint8_t path; /* sender's path index; ACK: path being acked */
	uint8_t rsvd; /* zero */
} __attribute__((packed));

/* Untagged segment header: SEND, SEND_IMM, SEND_INV (16 bytes). */
struct ovr_wire_uth {
	uint32_t msn; /* queue-0 message sequence number */
	uint32_t mo; /* offset of this segment in the message */
	uint32_t msg_len; /* total message length */
	uint32_t aux; /* SEND_IMM: immediate; SEND_INV: rkey; SEND: zero */
} __attribute__((packed));

/* Tagged segment header: WRITE, WRITE_IMM (24 bytes). */
struct ovr_wire_tth {
	uint32_t rkey; /* STag of the target region */
	uint32_t msg_len; /* total message length */
	uint64_t va; /* target address of the message's first byte */
	uint32_t mo; /* offset of this segment in the message */
	uint32_t rsvd; /* zero */
} __attribute__((packed));

/* Follows the TTH of WRITE_IMM only (8 bytes). */
struct ovr_wire_immh {
	uint32_t msn; /* queue-0 MSN: WRITE_IMM consumes a receive */
	uint32_t imm;
} __attribute__((packed));

/* RDMA READ request (24 bytes, no payload). */
struct ovr_wire_rreq {
	uint32_t rkey; /* STag of the source region at the responder */
	uint32_t len; /* bytes to read */
	uint64_t va; /* source address */
	uint32_t msn; /* queue-1 (ordered request) MSN */
	uint32_t rsvd;
} __attribute__((packed));

/* RDMA READ response segment (16 bytes). */
struct ovr_wire_rresp {
	uint32_t msn; /* queue-1 MSN of the request it answers */
	uint32_t mo;
	uint32_t msg_len; /* equals the request's len */
	uint32_t rsvd;
} __attribute__((packed));

/* Atomic request: ATOMIC_CS and ATOMIC_FA (32 bytes, no payload). */
struct ovr_wire_areq {
	uint32_t rkey;
	uint32_t msn; /* queue-1 MSN */
	uint64_t va; /* 8-byte aligned (the responder checks, NAK INV_REQ) */
	uint64_t swap_add; /* CS: swap value; FA: addend */
	uint64_t compare; /* CS: compare value; FA: zero */
} __attribute__((packed));

/* Atomic response (16 bytes, no payload). */
struct ovr_wire_aresp {
	uint32_t msn; /* queue-1 MSN of the request */
	uint32_t rsvd;
	uint64_t orig; /* value at va before the operation */
} __attribute__((packed));

/* ACK extension: 8 bytes + nsack blocks. */
struct ovr_wire_sack {
	uint32_t start; /* [31:24] zero; first PSN received */
	uint32_t end; /* [31:24] zero; one past the last PSN received */
} __attribute__((packed));

struct ovr_wire_ackh {
	uint32_t ce_count; /* CE-marked packets received on this QP, mod 2^32 */
	uint8_t nsack; /* <= OVR_WIRE_MAX_SACK */
	uint8_t rsvd[3];
	struct ovr_wire_sack sack[];
} __attribute__((packed));

/* NAK extension (4 bytes). OTH.ack_psn is the PSN being refused. */
struct ovr_wire_nakh {
	uint8_t code; /* enum ovr_wire_nak_code */
	uint8_t rnr_timer; /* RNR only: IB timer code 0..31; else zero */
	uint16_t rsvd;
} __attribute__((packed));

/* TERMINATE extension (8 bytes). */
struct ovr_wire_termh {
	uint8_t reason; /* enum ovr_wire_term_reason */
	uint8_t rsvd[3]; /* zero */
	uint32_t psn; /* [31:24] zero; meaning set by reason */
} __attribute__((packed));

/* Datagram extension: UD_SEND, UD_SEND_IMM (8 bytes). */
struct ovr_wire_deth {
	uint32_t qkey;
	uint32_t imm; /* UD_SEND_IMM only, else zero */
} __attribute__((packed));

/* VERSION_REJECT: frozen in every version (prefix + 4 bytes + CRC). */
struct ovr_wire_vrej {
	struct ovr_wire_prefix p; /* version = rejecter's highest */
	uint8_t rejected; /* the version that was refused */
	uint8_t min; /* lowest version the rejecter speaks */
	uint8_t max; /* highest version the rejecter speaks */
	uint8_t rsvd;
} __attribute__((packed));

static_assert(sizeof(struct ovr_wire_prefix) == 12, "prefix is frozen");
static_assert(offsetof(struct ovr_wire_prefix, opcode) == 1, "layout");
static_assert(offsetof(struct ovr_wire_prefix, flags) == 2, "layout");
static_assert(offsetof(struct ovr_wire_prefix, dqpn) == 4, "layout");
static_assert(offsetof(struct ovr_wire_prefix, sqpn) == 8, "layout");
static_assert(sizeof(struct ovr_wire_oth) == 36, "OTH is 36 bytes");
static_assert(offsetof(struct ovr_wire_oth, psn) == 12, "layout");
static_assert(offsetof(struct ovr_wire_oth, ack_psn) == 16, "layout");
static_assert(offsetof(struct ovr_wire_oth, credit) == 20, "layout");
static_assert(offsetof(struct ovr_wire_oth, tsval) == 24, "layout");
static_assert(offsetof(struct ovr_wire_oth, tsecr) == 28, "layout");
static_assert(offsetof(struct ovr_wire_oth, payload_len) == 32, "layout");
static_assert(offsetof(struct ovr_wire_oth, path) == 34, "layout");
static_assert(sizeof(struct ovr_wire_uth) == 16, "layout");
static_assert(offsetof(struct ovr_wire_uth, aux) == 12, "layout");
static_assert(sizeof(struct ovr_wire_tth) == 24, "layout");
static_assert(offsetof(struct ovr_wire_tth, va) == 8, "layout");
static_assert(offsetof(struct ovr_wire_tth, mo) == 16, "layout");
static_assert(sizeof(struct ovr_wire_immh) == 8, "layout");
static_assert(sizeof(struct ovr_wire_rreq) == 24, "layout");
static_assert(offsetof(struct ovr_wire_rreq, va) == 8, "layout");
static_assert(offsetof(struct ovr_wire_rreq, msn) == 16, "layout");
static_assert(sizeof(struct ovr_wire_rresp) == 16, "layout");
static_assert(sizeof(struct ovr_wire_areq) == 32, "layout");
static_assert(offsetof(struct ovr_wire_areq, va) == 8, "layout");
static_assert(offsetof(struct ovr_wire_areq, swap_add) == 16, "layout");
static_assert(offsetof(struct ovr_wire_areq, compare) == 24, "layout");
static_assert(sizeof(struct ovr_wire_aresp) == 16, "layout");
static_assert(offsetof(struct ovr_wire_aresp, orig) == 8, "layout");
static_assert(sizeof(struct ovr_wire_sack) == 8, "layout");
static_assert(sizeof(struct ovr_wire_ackh) == 8, "layout");
static_assert(offsetof(struct ovr_wire_ackh, sack) == 8, "layout");
static_assert(sizeof(struct ovr_wire_nakh) == 4, "layout");
static_assert(sizeof(struct ovr_wire_termh) == 8, "layout");
static_assert(offsetof(struct ovr_wire_termh, psn) == 4, "layout");
static_assert(sizeof(struct ovr_wire_deth) == 8, "layout");
static_assert(sizeof(struct ovr_wire_vrej) == 16, "layout");
static_assert(OVR_WIRE_ENCAP_LEN == 78, "encapsulation overhead");

/* Longest header a version-1 PDU can have: OTH + ACK with 8 SACK blocks. */
#define OVR_WIRE_MAX_HDR                                              \
	(sizeof(struct ovr_wire_oth) + sizeof(struct ovr_wire_ackh) + \
	 OVR_WIRE_MAX_SACK * sizeof(struct ovr_wire_sack))
static_assert(OVR_WIRE_MAX_HDR == 108, "largest header");

#ifdef __cplusplus
}
#endif
#endif /* OVRDMA_WIRE_H */
