/* SPDX-License-Identifier: MIT */
/*
 * Outer/inner header build and check, private to vpc/ (docs/WIRE.md 1).
 *
 * Inline so that the fast path (ovr_vpc_tx, ovr_vpc_decap in table.c) and
 * the exported pure functions (encap.c) share one definition without a
 * call per packet. Header layouts, byte-order helpers and the receive-side
 * IPv4 checksum (rte_raw_cksum) are DPDK's header-only pieces (rte_ip.h,
 * rte_udp.h, rte_vxlan.h), pulled in without linking any DPDK library.
 * Their structs are packed, so reading them at any address is defined;
 * the Ethernet header (rte_ether_hdr is 2-byte aligned, not packed) is
 * read with memcpy instead.
 */
#ifndef OVRDMA_VPC_FRAME_H
#define OVRDMA_VPC_FRAME_H

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>
#include <rte_vxlan.h>

#include <ovrdma/compiler.h>
#include <ovrdma/vpc.h>

/* Offsets in the frame (docs/WIRE.md 1). */
#define VPC_OFF_ETYPE 12u
#define VPC_OFF_OIP OVR_WIRE_ETH_HLEN /* 14 */
#define VPC_OFF_OUDP (VPC_OFF_OIP + OVR_WIRE_IPV4_HLEN) /* 34 */
#define VPC_OFF_GPE (VPC_OFF_OUDP + OVR_WIRE_UDP_HLEN) /* 42 */
#define VPC_OFF_IIP (VPC_OFF_GPE + OVR_WIRE_VXLAN_HLEN) /* 50 */
#define VPC_OFF_IUDP (VPC_OFF_IIP + OVR_WIRE_IPV4_HLEN) /* 70 */

/* Outer IPv4 total length minus the PDU: OVR_WIRE_ENCAP_MTU_OVERHEAD (64);
 * inner IPv4 total length minus the PDU (28). */
#define VPC_INNER_OVERHEAD (OVR_WIRE_IPV4_HLEN + OVR_WIRE_UDP_HLEN)
#define VPC_GPE_FLAGS (OVR_WIRE_VXLAN_FLAG_I | OVR_WIRE_VXLAN_FLAG_P)
#define VPC_IPV4_VHL 0x45u /* version 4, IHL 5: no options */

static_assert(sizeof(struct rte_ipv4_hdr) == OVR_WIRE_IPV4_HLEN, "IPv4");
static_assert(sizeof(struct rte_udp_hdr) == OVR_WIRE_UDP_HLEN, "UDP");
static_assert(sizeof(struct rte_vxlan_gpe_hdr) == OVR_WIRE_VXLAN_HLEN, "GPE");
static_assert(VPC_OFF_IUDP + OVR_WIRE_UDP_HLEN == OVR_WIRE_ENCAP_LEN,
	      "offsets");
static_assert(OVR_VPC_SPORT_MIN + OVR_VPC_SPORT_MASK == 65535, "sport range");

/*
 * RFC 1071 checksum of the header vpc_ipv4_build() writes, summed from the
 * field values rather than read back: reading 16-bit words just written
 * by narrower stores defeats store-to-load forwarding (summing in place
 * with rte_ipv4_cksum() made an encapsulation cost 19 ns instead of 6 on
 * the development machine). Decapsulation verifies with rte_raw_cksum().
 */
static inline rte_be16_t vpc_ipv4_csum(uint8_t tos, uint16_t total,
				       uint32_t src, uint32_t dst)
{
	uint32_t s = (VPC_IPV4_VHL << 8 | tos) + total + RTE_IPV4_HDR_DF_FLAG +
		     (OVR_VPC_TTL << 8 | IPPROTO_UDP) + (src >> 16) +
		     (src & 0xffff) + (dst >> 16) + (dst & 0xffff);

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return rte_cpu_to_be_16((uint16_t)~s);
}

static inline void vpc_ipv4_build(struct rte_ipv4_hdr *ip, uint8_t tos,
				  uint16_t total, uint32_t src, uint32_t dst)
{
	ip->version_ihl = VPC_IPV4_VHL;
	ip->type_of_service = tos;
	ip->total_length = rte_cpu_to_be_16(total);
	ip->packet_id = 0;
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = OVR_VPC_TTL;
	ip->next_proto_id = IPPROTO_UDP;
	ip->hdr_checksum = 0;
	ip->src_addr = rte_cpu_to_be_32(src);
	ip->dst_addr = rte_cpu_to_be_32(dst);
	ip->hdr_checksum = vpc_ipv4_csum(tos, total, src, dst);
}

static inline void vpc_udp_build(struct rte_udp_hdr *u, uint16_t sport,
				 uint16_t dport, uint16_t len)
{
	u->src_port = rte_cpu_to_be_16(sport);
	u->dst_port = rte_cpu_to_be_16(dport);
	u->dgram_len = rte_cpu_to_be_16(len);
	u->dgram_cksum = 0; /* allowed for IPv4; the PDU has its CRC32C */
}

static inline int vpc_encap(uint8_t *pdu, size_t headroom, size_t pdu_len,
			    const struct ovr_vpc_hdr *h)
{
	uint16_t etype = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	struct rte_vxlan_gpe_hdr *gpe;
	uint16_t olen, ilen;
	uint8_t *f, tos;

	if (ovr_unlikely(headroom < OVR_WIRE_ENCAP_LEN))
		return -ENOSPC;
	if (ovr_unlikely(pdu_len > OVR_VPC_MAX_PDU))
		return -EMSGSIZE;
	if (ovr_unlikely(h->vni > OVR_VPC_VNI_MAX || h->dscp > 63 ||
			 h->ecn > OVR_VPC_ECN_CE))
		return -EINVAL;

	f = pdu - OVR_WIRE_ENCAP_LEN;
	tos = (uint8_t)(h->dscp << 2 | h->ecn);
	olen = (uint16_t)(pdu_len + OVR_WIRE_ENCAP_MTU_OVERHEAD);
	ilen = (uint16_t)(pdu_len + VPC_INNER_OVERHEAD);

	memcpy(f, h->dst_mac, RTE_ETHER_ADDR_LEN);
	memcpy(f + RTE_ETHER_ADDR_LEN, h->src_mac, RTE_ETHER_ADDR_LEN);
	memcpy(f + VPC_OFF_ETYPE, &etype, sizeof(etype));
	vpc_ipv4_build((struct rte_ipv4_hdr *)(f + VPC_OFF_OIP), tos, olen,
		       h->src_host, h->dst_host);
	vpc_udp_build((struct rte_udp_hdr *)(f + VPC_OFF_OUDP), h->sport,
		      OVR_WIRE_VXLAN_GPE_PORT,
		      (uint16_t)(olen - OVR_WIRE_IPV4_HLEN));
	gpe = (struct rte_vxlan_gpe_hdr *)(f + VPC_OFF_GPE);
	gpe->vx_flags = VPC_GPE_FLAGS;
	gpe->reserved[0] = 0;
	gpe->reserved[1] = 0;
	gpe->proto = OVR_WIRE_VXLAN_NP_IPV4;
	gpe->vx_vni = rte_cpu_to_be_32(h->vni << 8); /* low byte reserved */
	/* Inner TOS = outer TOS: what docs/WIRE.md 1.5 calls ECN "copied". */
	vpc_ipv4_build((struct rte_ipv4_hdr *)(f + VPC_OFF_IIP), tos, ilen,
		       h->src_vip, h->dst_vip);
	vpc_udp_build((struct rte_udp_hdr *)(f + VPC_OFF_IUDP), h->sport,
		      h->dport, (uint16_t)(ilen - OVR_WIRE_IPV4_HLEN));
	return 0;
}

/* True when the 20-byte header's ones'-complement sum is 0xffff. */
static inline bool vpc_ipv4_csum_ok(const struct rte_ipv4_hdr *ip)
{
	return rte_raw_cksum(ip, OVR_WIRE_IPV4_HLEN) == 0xffff;
}

static inline bool vpc_ipv4_is_fragment(const struct rte_ipv4_hdr *ip)
{
	return (ip->fragment_offset &
		rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG |
				 RTE_IPV4_HDR_OFFSET_MASK)) != 0;
}

/*
 * The checks of docs/VPC.md "Drop reasons", in that order. Cost: two
 * 20-byte checksums and about 25 compares, all in the first two cache
 * lines of the frame.
 */
static inline int vpc_parse(const uint8_t *f, size_t len, uint16_t dport,
			    struct ovr_vpc_rx *rx)
{
	const struct rte_ipv4_hdr *oip, *iip;
	const struct rte_udp_hdr *oudp, *iudp;
	const struct rte_vxlan_gpe_hdr *gpe;
	uint16_t etype, olen;
	uint32_t vni;

	/* Every fixed header must be there before any of it is read. */
	if (ovr_unlikely(len < OVR_WIRE_ENCAP_LEN))
		return -OVR_VPC_DROP_TRUNC;
	oip = (const struct rte_ipv4_hdr *)(f + VPC_OFF_OIP);
	oudp = (const struct rte_udp_hdr *)(f + VPC_OFF_OUDP);
	gpe = (const struct rte_vxlan_gpe_hdr *)(f + VPC_OFF_GPE);
	iip = (const struct rte_ipv4_hdr *)(f + VPC_OFF_IIP);
	iudp = (const struct rte_udp_hdr *)(f + VPC_OFF_IUDP);

	memcpy(&etype, f + VPC_OFF_ETYPE, sizeof(etype));
	if (ovr_unlikely(etype != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
			 (oip->version_ihl >> 4) != 4))
		return -OVR_VPC_DROP_NOT_IPV4;
	if (ovr_unlikely(oip->version_ihl != VPC_IPV4_VHL))
		return -OVR_VPC_DROP_IP_OPTIONS;
	/* Checksum before any other field: damage is reported as damage. */
	if (ovr_unlikely(!vpc_ipv4_csum_ok(oip)))
		return -OVR_VPC_DROP_IP_CSUM;
	if (ovr_unlikely(vpc_ipv4_is_fragment(oip)))
		return -OVR_VPC_DROP_FRAGMENT;
	olen = rte_be_to_cpu_16(oip->total_length);
	if (ovr_unlikely(olen > len - OVR_WIRE_ETH_HLEN))
		return -OVR_VPC_DROP_TRUNC;
	/*
	 * Trailing bytes: every ovrdma frame exceeds Ethernet's 60-byte
	 * minimum, so there is no padding to allow for, and the port strips
	 * the FCS (DPDK's default).
	 */
	if (ovr_unlikely(olen < len - OVR_WIRE_ETH_HLEN))
		return -OVR_VPC_DROP_IP_LEN;
	if (ovr_unlikely(oip->next_proto_id != IPPROTO_UDP))
		return -OVR_VPC_DROP_NOT_UDP;
	if (ovr_unlikely(oudp->dst_port !=
			 rte_cpu_to_be_16(OVR_WIRE_VXLAN_GPE_PORT)))
		return -OVR_VPC_DROP_UDP_PORT;
	/* The UDP checksum is not checked: zero, or whatever a NIC wrote. */
	if (ovr_unlikely(rte_be_to_cpu_16(oudp->dgram_len) !=
			 olen - OVR_WIRE_IPV4_HLEN))
		return -OVR_VPC_DROP_UDP_LEN;
	if (ovr_unlikely(gpe->vx_flags != VPC_GPE_FLAGS))
		return -OVR_VPC_DROP_GPE_FLAGS;
	if (ovr_unlikely(gpe->proto != OVR_WIRE_VXLAN_NP_IPV4))
		return -OVR_VPC_DROP_GPE_PROTO;
	vni = rte_be_to_cpu_32(gpe->vx_vni);
	if (ovr_unlikely(gpe->reserved[0] | gpe->reserved[1] | (vni & 0xff)))
		return -OVR_VPC_DROP_GPE_RSVD;

	if (ovr_unlikely((iip->version_ihl >> 4) != 4))
		return -OVR_VPC_DROP_INNER_NOT_IPV4;
	if (ovr_unlikely(iip->version_ihl != VPC_IPV4_VHL))
		return -OVR_VPC_DROP_INNER_IP_OPTIONS;
	if (ovr_unlikely(!vpc_ipv4_csum_ok(iip)))
		return -OVR_VPC_DROP_INNER_IP_CSUM;
	if (ovr_unlikely(vpc_ipv4_is_fragment(iip)))
		return -OVR_VPC_DROP_INNER_FRAGMENT;
	if (ovr_unlikely(
		    rte_be_to_cpu_16(iip->total_length) !=
		    olen - (OVR_WIRE_ENCAP_MTU_OVERHEAD - VPC_INNER_OVERHEAD)))
		return -OVR_VPC_DROP_INNER_IP_LEN;
	if (ovr_unlikely(iip->next_proto_id != IPPROTO_UDP))
		return -OVR_VPC_DROP_INNER_NOT_UDP;
	if (ovr_unlikely(iudp->dst_port != rte_cpu_to_be_16(dport)))
		return -OVR_VPC_DROP_INNER_UDP_PORT;
	if (ovr_unlikely(
		    rte_be_to_cpu_16(iudp->dgram_len) !=
		    olen - (OVR_WIRE_ENCAP_MTU_OVERHEAD - OVR_WIRE_UDP_HLEN)))
		return -OVR_VPC_DROP_INNER_UDP_LEN;

	rx->pdu = f + OVR_WIRE_ENCAP_LEN;
	rx->pdu_len = (uint32_t)(olen - OVR_WIRE_ENCAP_MTU_OVERHEAD);
	rx->vni = vni >> 8;
	rx->src_vip = rte_be_to_cpu_32(iip->src_addr);
	rx->dst_vip = rte_be_to_cpu_32(iip->dst_addr);
	rx->src_host = rte_be_to_cpu_32(oip->src_addr);
	rx->dst_host = rte_be_to_cpu_32(oip->dst_addr);
	rx->dev = OVR_VPC_DEV_NONE;
	rx->sport = rte_be_to_cpu_16(oudp->src_port);
	rx->dscp = (uint8_t)(oip->type_of_service >> 2);
	rx->ce = (oip->type_of_service & RTE_IPV4_HDR_ECN_MASK) ==
		 RTE_IPV4_HDR_ECN_CE;
	return 0;
}

#endif /* OVRDMA_VPC_FRAME_H */
