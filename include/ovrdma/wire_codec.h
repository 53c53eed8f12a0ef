/* SPDX-License-Identifier: MIT */
/*
 * Codec for the ovrdma PDU (include/ovrdma/wire.h, docs/WIRE.md).
 *
 * The parser never trusts its input: it reads nothing outside [buf, buf+len),
 * checks every length, offset, opcode, flag and reserved field, verifies the
 * CRC32C trailer, and on failure returns a negative enum ovr_wire_err that
 * names the first thing found wrong. The builder runs the very same field
 * validation, so it cannot emit a PDU the parser would refuse; and because
 * every bit of a version-1 PDU is defined, the encoding is canonical:
 * parse(x) == p implies build(p) == x byte for byte.
 *
 * No allocation, no locks, no I/O; counters are plain (single writer: keep
 * one struct ovr_wire_counters per thread).
 */
#ifndef OVRDMA_WIRE_CODEC_H
#define OVRDMA_WIRE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ovrdma/wire.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parse and build errors, returned negated. Values are stable (counters). */
enum ovr_wire_err {
	OVR_WIRE_OK = 0,
	OVR_WIRE_ETRUNC, /* shorter than the headers/payload/CRC it declares */
	OVR_WIRE_ETOOLONG, /* trailing bytes, or longer than OVR_WIRE_MAX_PDU */
	OVR_WIRE_EVERSION, /* a version this node does not speak */
	OVR_WIRE_EOPCODE, /* unknown opcode */
	OVR_WIRE_ECRC, /* CRC32C trailer does not match */
	OVR_WIRE_EFLAGS, /* unknown flag, or flag not allowed/required */
	OVR_WIRE_ERSVD, /* reserved or unused field is not zero */
	OVR_WIRE_EQPN, /* QPN wider than 24 bits */
	OVR_WIRE_EPSN, /* PSN wider than 24 bits, or set when unsequenced */
	OVR_WIRE_ELEN, /* payload or message length not allowed for opcode */
	OVR_WIRE_ESEGMENT, /* offset/length/LAST of a segment inconsistent */
	OVR_WIRE_ERANGE, /* va + length wraps the 64-bit address space */
	OVR_WIRE_ESACK, /* too many SACK blocks, or a block outside window */
	OVR_WIRE_ENAK, /* unknown NAK code or misused RNR timer */
	OVR_WIRE_EVREJ, /* malformed VERSION_REJECT */
	OVR_WIRE_ENOSPC, /* build: output buffer too small */
	OVR_WIRE_ETERM, /* unknown TERMINATE reason */
	OVR_WIRE_NERR
};

/* A decoded PDU, host byte order. Which union member is valid: opcode. */
struct ovr_wire_pkt {
	uint8_t version;
	uint8_t opcode; /* enum ovr_wire_opcode */
	uint16_t flags; /* enum ovr_wire_flag */
	uint32_t dqpn;
	uint32_t sqpn;
	uint32_t psn;
	uint32_t ack_psn;
	uint32_t credit;
	uint32_t tsval;
	uint32_t tsecr;
	uint8_t path;

	union {
		/* SEND, SEND_IMM, SEND_INV */
		struct {
			uint32_t msn;
			uint32_t mo;
			uint32_t msg_len;
			uint32_t imm; /* SEND_IMM only */
			uint32_t inv_rkey; /* SEND_INV only */
		} send;
		/* WRITE, WRITE_IMM */
		struct {
			uint32_t rkey;
			uint32_t msg_len;
			uint64_t va;
			uint32_t mo;
			uint32_t msn; /* WRITE_IMM only */
			uint32_t imm; /* WRITE_IMM only */
		} write;
		/* READ_REQ */
		struct {
			uint32_t rkey;
			uint32_t len;
			uint64_t va;
			uint32_t msn;
		} rreq;
		/* READ_RESP */
		struct {
			uint32_t msn;
			uint32_t mo;
			uint32_t msg_len;
		} rresp;
		/* ATOMIC_CS, ATOMIC_FA */
		struct {
			uint32_t rkey;
			uint32_t msn;
			uint64_t va;
			uint64_t swap_add;
			uint64_t compare; /* CS only */
		} areq;
		/* ATOMIC_RESP */
		struct {
			uint32_t msn;
			uint64_t orig;
		} aresp;
		/* ACK */
		struct {
			uint32_t ce_count;
			uint8_t nsack;
			struct {
				uint32_t start;
				uint32_t end;
			} sack[OVR_WIRE_MAX_SACK];
		} ack;
		/* NAK */
		struct {
			uint8_t code;
			uint8_t rnr_timer;
		} nak;
		/* TERMINATE */
		struct {
			uint8_t reason; /* enum ovr_wire_term_reason */
			uint32_t psn;
		} term;
		/* UD_SEND, UD_SEND_IMM */
		struct {
			uint32_t qkey;
			uint32_t imm; /* UD_SEND_IMM only */
		} ud;
		/* VERSION_REJECT */
		struct {
			uint8_t rejected;
			uint8_t min;
			uint8_t max;
		} vrej;
	} u;

	/* parse: points into the parsed buffer; build: source to copy from */
	const uint8_t *payload;
	uint32_t payload_len;
	/* parse: bytes of OTH + extension header (output only) */
	uint32_t hdr_len;
};

/* Per-thread parse counters; indexes are enum ovr_wire_err. */
struct ovr_wire_counters {
	uint64_t rx_ok;
	uint64_t rx_err[OVR_WIRE_NERR];
};

/*
 * Parse one PDU occupying exactly @len bytes at @buf.
 * Returns 0 and fills @pkt, or a negative enum ovr_wire_err (and @pkt is
 * unspecified). If @cnt is not NULL the outcome is counted there.
 */
int ovr_wire_parse(const void *buf, size_t len, struct ovr_wire_pkt *pkt,
		   struct ovr_wire_counters *cnt);

/* Header length (OTH + extension) @pkt will need, or negative error. */
int ovr_wire_hdr_len(const struct ovr_wire_pkt *pkt);

/*
 * Validate @pkt (with pkt->payload_len) and write its headers at @buf.
 * Returns the header length; the caller places payload_len bytes right
 * after it and calls ovr_wire_seal(). Negative enum ovr_wire_err on error.
 * VERSION_REJECT is complete after this call except for ovr_wire_seal().
 */
int ovr_wire_build_hdr(const struct ovr_wire_pkt *pkt, void *buf, size_t cap);

/*
 * Append the CRC32C trailer over the first @pdu_len bytes of @buf (headers
 * and payload). @buf must have room for 4 more bytes. Returns the PDU's
 * total length (pdu_len + 4).
 */
size_t ovr_wire_seal(void *buf, size_t pdu_len);

/* Headers + copy of pkt->payload + CRC. Returns total length or -error. */
int ovr_wire_build(const struct ovr_wire_pkt *pkt, void *buf, size_t cap);

/* Field validation shared by builder and parser: 0 or negative error. */
int ovr_wire_validate(const struct ovr_wire_pkt *pkt);

/*
 * Build a VERSION_REJECT answering the received bytes @rx (which failed to
 * parse with -OVR_WIRE_EVERSION). Returns its length, or a negative error
 * when no reject must be sent (unreadable prefix, or @rx is itself a
 * reject: rejects are never answered).
 */
int ovr_wire_build_reject(const void *rx, size_t rxlen, void *buf, size_t cap);

/*
 * Highest version spoken by both this node and a peer speaking
 * [@peer_min, @peer_max], or -OVR_WIRE_EVERSION when there is none.
 */
int ovr_wire_version_select(unsigned int peer_min, unsigned int peer_max);

/* CRC-32C (Castagnoli, as iSCSI and iWARP MPA): incremental form. */
uint32_t ovr_wire_crc_update(uint32_t state, const void *buf, size_t len);
static inline uint32_t ovr_wire_crc_init(void)
{
	return 0xffffffffu;
}
static inline uint32_t ovr_wire_crc_final(uint32_t state)
{
	return ~state;
}
/* One-shot CRC-32C of @len bytes: crc("123456789") == 0xe3069283. */
uint32_t ovr_wire_crc32c(const void *buf, size_t len);
/* ovr_wire_crc_update through ISA-L whatever the length (the short path's
 * yardstick in test_engine_wire) */
uint32_t ovr_wire_crc_update_isal(uint32_t state, const void *buf, size_t len);

/* Serial-number arithmetic on 24-bit PSNs: a - b in [-2^23, 2^23). */
static inline int32_t ovr_wire_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(((a - b) & OVR_WIRE_PSN_MASK) << 8) >> 8;
}

/* Names, for logs and tools. Unknown values give "?" / "unknown error". */
const char *ovr_wire_strerror(int err);
const char *ovr_wire_opcode_name(unsigned int opcode);
const char *ovr_wire_nak_name(unsigned int code);
const char *ovr_wire_term_name(unsigned int reason);
/* Number of payload-carrying message bytes an opcode may have (bool). */
bool ovr_wire_opcode_has_payload(unsigned int opcode);
bool ovr_wire_opcode_is_sequenced(unsigned int opcode);

/*
 * One-line human-readable rendering of @pkt (the dissector's format), at
 * most @cap bytes including the NUL. Returns what snprintf returns.
 */
int ovr_wire_format(const struct ovr_wire_pkt *pkt, char *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* OVRDMA_WIRE_CODEC_H */
