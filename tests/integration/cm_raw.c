// SPDX-License-Identifier: MIT
/*
 * The ucma ABI written directly on an rdma_cm channel's fd, as librdmacm
 * writes it (and as it would for QUERY GID and PATH with AF_IB, which
 * ovrdma does not offer, so librdmacm itself never asks): a separate
 * file because the kernel's ABI header and librdmacm's rdma_cma.h
 * declare the same enumerators.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/ib.h>
#include <rdma/ib_user_sa.h>
#include <rdma/rdma_user_cm.h>

#include "cm_raw.h"

/* One command on @fd: 0, or -errno. */
static int raw(int fd, uint32_t cmd, const void *body, uint16_t in,
	       uint16_t out)
{
	struct {
		struct rdma_ucm_cmd_hdr h;
		uint8_t b[512];
	} m = { .h = { .cmd = cmd, .in = in, .out = out } };
	size_t len = sizeof(m.h) + in;

	memcpy(m.b, body, in);
	return write(fd, &m, len) == (ssize_t)len ? 0 : -errno;
}

static uint32_t raw_event(int fd)
{
	struct rdma_ucm_event_resp r;
	struct rdma_ucm_get_event g = { .response = (uintptr_t)&r };
	int rc = raw(fd, RDMA_USER_CM_CMD_GET_EVENT, &g, sizeof(g), sizeof(r));

	if (rc)
		FAIL("GET_EVENT: %s", strerror(-rc));
	if (r.status)
		FAIL("event %u status %d", r.event, r.status);
	return r.event;
}

static int raw_query(int fd, uint32_t id, uint32_t option, void *resp,
		     uint16_t out)
{
	struct rdma_ucm_query q = { .response = (uintptr_t)resp,
				    .id = id,
				    .option = option };

	return raw(fd, RDMA_USER_CM_CMD_QUERY, &q, sizeof(q), out);
}

static void want_gid(const uint8_t *gid, uint32_t ip_be, const char *what)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };

	if (memcmp(gid, v4, 12) || memcmp(gid + 12, &ip_be, 4))
		FAIL("%s: not the GID of the vIP", what);
}

static uint64_t sid_of(uint16_t port)
{
	return ((uint64_t)RDMA_PS_TCP << 16) + port;
}

void cm_raw_query(int fd, const char *addr, uint16_t port, uint8_t rec[64])
{
	struct rdma_ucm_create_id_resp cr;
	struct rdma_ucm_create_id c = { .uid = 7,
					.response = (uintptr_t)&cr,
					.ps = RDMA_PS_TCP,
					.qp_type = 2 /* IBV_QPT_RC */ };
	struct rdma_ucm_resolve_ip ri = { .timeout_ms = 2000 };
	struct rdma_ucm_resolve_route rr = { .timeout_ms = 2000 };
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_port = htons(port) },
			   src;
	struct rdma_ucm_destroy_id_resp dr;
	struct rdma_ucm_destroy_id d = { .response = (uintptr_t)&dr };
	struct rdma_ucm_query_addr_resp a;
	/* the response and room for two records (the header ends in a
	 * flexible array: a buffer, not a struct around it) */
	union {
		struct rdma_ucm_query_path_resp h;
		uint8_t b[sizeof(struct rdma_ucm_query_path_resp) +
			  2 * sizeof(struct ib_path_rec_data)];
	} path;
	struct ib_path_rec_data p0;
	struct sockaddr_ib gs, gd;
	const uint8_t *r;
	uint64_t sid;
	int rc;

	if (inet_pton(AF_INET, addr, &dst.sin_addr) != 1)
		FAIL("address %s", addr);
	rc = raw(fd, RDMA_USER_CM_CMD_CREATE_ID, &c, sizeof(c), sizeof(cr));
	if (rc)
		FAIL("CREATE_ID: %s", strerror(-rc));
	ri.id = rr.id = d.id = cr.id;
	memcpy(&ri.dst_addr, &dst, sizeof(dst));
	rc = raw(fd, RDMA_USER_CM_CMD_RESOLVE_IP, &ri, sizeof(ri), 0);
	if (rc)
		FAIL("RESOLVE_IP: %s", strerror(-rc));
	if (raw_event(fd) != 0 /* ADDR_RESOLVED */)
		FAIL("not ADDR_RESOLVED");
	/* no path before the route is resolved */
	memset(&path, 0xa5, sizeof(path));
	rc = raw_query(fd, cr.id, RDMA_USER_CM_QUERY_PATH, &path, sizeof(path));
	if (rc || path.h.num_paths != 0)
		FAIL("QUERY PATH before the route: %s, %u paths", strerror(-rc),
		     path.h.num_paths);
	rc = raw(fd, RDMA_USER_CM_CMD_RESOLVE_ROUTE, &rr, sizeof(rr), 0);
	if (rc)
		FAIL("RESOLVE_ROUTE: %s", strerror(-rc));
	if (raw_event(fd) != 2 /* ROUTE_RESOLVED */)
		FAIL("not ROUTE_RESOLVED");

	/* ADDR: the IPv4 addresses and the device */
	memset(&a, 0xa5, sizeof(a));
	rc = raw_query(fd, cr.id, RDMA_USER_CM_QUERY_ADDR, &a, sizeof(a));
	if (rc)
		FAIL("QUERY ADDR: %s", strerror(-rc));
	memcpy(&src, &a.src_addr, sizeof(src));
	if (a.src_size != sizeof(src) || src.sin_family != AF_INET ||
	    !src.sin_addr.s_addr || !src.sin_port ||
	    a.dst_size != sizeof(dst) ||
	    memcmp(&a.dst_addr, &dst, sizeof(dst)) || !a.node_guid ||
	    a.port_num != 1 || a.pkey != htobe16(0xffff))
		FAIL("QUERY ADDR: sizes %u %u, port %u, pkey %#x", a.src_size,
		     a.dst_size, a.port_num, a.pkey);
	printf("QUERY ADDR: ok\n");

	/* GID: AF_IB addresses - the vIPs' GIDs, the ports' service IDs */
	memset(&a, 0xa5, sizeof(a));
	rc = raw_query(fd, cr.id, RDMA_USER_CM_QUERY_GID, &a, sizeof(a));
	if (rc)
		FAIL("QUERY GID: %s", strerror(-rc));
	memcpy(&gs, &a.src_addr, sizeof(gs));
	memcpy(&gd, &a.dst_addr, sizeof(gd));
	if (a.src_size != sizeof(gs) || a.dst_size != sizeof(gd) ||
	    gs.sib_family != AF_IB || gd.sib_family != AF_IB ||
	    gs.sib_pkey != htobe16(0xffff) || gd.sib_pkey != htobe16(0xffff))
		FAIL("QUERY GID: sizes %u %u, families %u %u", a.src_size,
		     a.dst_size, gs.sib_family, gd.sib_family);
	want_gid(gs.sib_addr.sib_raw, src.sin_addr.s_addr, "QUERY GID source");
	want_gid(gd.sib_addr.sib_raw, dst.sin_addr.s_addr,
		 "QUERY GID destination");
	if (be64toh(gs.sib_sid) != sid_of(ntohs(src.sin_port)) ||
	    be64toh(gd.sib_sid) != sid_of(port))
		FAIL("QUERY GID: service IDs %#llx %#llx",
		     (unsigned long long)be64toh(gs.sib_sid),
		     (unsigned long long)be64toh(gd.sib_sid));
	printf("QUERY GID: ok\n");

	/* PATH: one record (its fields: the caller compares them) */
	memset(&path, 0xa5, sizeof(path));
	rc = raw_query(fd, cr.id, RDMA_USER_CM_QUERY_PATH, &path, sizeof(path));
	if (rc)
		FAIL("QUERY PATH: %s", strerror(-rc));
	memcpy(&p0, path.b + sizeof(path.h), sizeof(p0));
	if (path.h.num_paths != 1 ||
	    p0.flags != (IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL))
		FAIL("QUERY PATH: %u paths, flags %#x", path.h.num_paths,
		     p0.flags);
	r = (const uint8_t *)p0.path_rec;
	memcpy(&sid, r, 8);
	want_gid(r + 8, dst.sin_addr.s_addr, "QUERY PATH DGID");
	want_gid(r + 24, src.sin_addr.s_addr, "QUERY PATH SGID");
	if (be64toh(sid) != sid_of(port) || r[49] != 0x81 /* reversible, 1 */)
		FAIL("QUERY PATH: service ID %#llx, byte 49 %#x",
		     (unsigned long long)be64toh(sid), r[49]);
	memcpy(rec, r, 64);

	/* errors, as the kernel's ucma */
	if (raw_query(fd, cr.id, RDMA_USER_CM_QUERY_ADDR, &a, 8) != -ENOSPC ||
	    raw_query(fd, cr.id, RDMA_USER_CM_QUERY_PATH, &path, 4) != -ENOSPC)
		FAIL("a short response: not ENOSPC");
	if (raw_query(fd, cr.id, 9, &a, sizeof(a)) != -ENOSYS)
		FAIL("option 9: not ENOSYS");
	if (raw_query(fd, 0xfffff, RDMA_USER_CM_QUERY_ADDR, &a, sizeof(a)) !=
	    -ENOENT)
		FAIL("a handle never issued: not ENOENT");
	printf("errors: ENOSPC, ENOSYS, ENOENT\n");
	rc = raw(fd, RDMA_USER_CM_CMD_DESTROY_ID, &d, sizeof(d), sizeof(dr));
	if (rc)
		FAIL("DESTROY_ID: %s", strerror(-rc));
}
