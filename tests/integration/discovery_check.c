// SPDX-License-Identifier: MIT
/*
 * discovery_check: what a program sees of the devices libibverbs finds
 * (tests/integration/discovery.sh, docs/PROVIDER.md "Discovery beside
 * the kernel's RDMA stack"). Plain libibverbs (and librdmacm where it
 * was found at build time), nothing of ovrdma.
 *
 *   discovery_check list         one line per device: name, kernel
 *                                index (ibv_get_device_index: -1 when
 *                                found by the sysfs scan), node GUID,
 *                                ibdev_path; then SYSFS_PATH as the
 *                                program has it
 *   discovery_check read DEV F   the file F under DEV's ibdev_path, as
 *                                the program reads it (open(2))
 *   discovery_check open DEV     opens DEV, queries port 1 and GID 0
 *                                (ibv_query_gid and ibv_query_gid_ex:
 *                                "... gid0 GID ndev IFINDEX")
 *   discovery_check rdmacm       librdmacm's rdma_get_devices(): the
 *                                devices it opened
 *   discovery_check nlraw SIZE [peek]
 *                                the RDMA netlink device dump, by hand:
 *                                datagrams read into SIZE bytes (with
 *                                "peek", into as many as a MSG_PEEK |
 *                                MSG_TRUNC of 16 bytes said, as libnl
 *                                does); one line per device and
 *                                per datagram, every message whole, of
 *                                the dump's sequence number, DONE last
 *   discovery_check pci DEV      what NCCL 2.28 reads of DEV's PCI
 *                                function (ncclIbGetPciPath, xml.cc):
 *                                "pci PATH subsystem S class C numa N
 *                                speed S/S' width W/W' parent P", or
 *                                "pci none errno E" without a path
 * Exit 0, or 1 with a message.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#ifdef HAVE_RDMACM
#include <rdma/rdma_cma.h>
#endif

static struct ibv_device *find(struct ibv_device **list, const char *name)
{
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			return list[i];
	fprintf(stderr, "discovery_check: no device %s\n", name);
	return NULL;
}

static int list(struct ibv_device **devs)
{
	const char *sysfs = getenv("SYSFS_PATH");

	for (int i = 0; devs[i]; i++)
		printf("dev %s index %d guid %016" PRIx64 " path %s\n",
		       ibv_get_device_name(devs[i]),
		       ibv_get_device_index(devs[i]),
		       be64toh(ibv_get_device_guid(devs[i])),
		       devs[i]->ibdev_path);
	printf("SYSFS_PATH %s\n", sysfs ? sysfs : "unset");
	return 0;
}

static int read_file(struct ibv_device *dev, const char *file)
{
	char path[512], buf[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dev->ibdev_path, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		perror(path);
		return 1;
	}
	buf[n] = 0;
	fputs(buf, stdout);
	return 0;
}

static int open_dev(struct ibv_device *dev)
{
	struct ibv_context *ctx = ibv_open_device(dev);
	struct ibv_port_attr port;
	char gid_str[INET6_ADDRSTRLEN];
	struct ibv_gid_entry entry;
	union ibv_gid gid;

	if (!ctx) {
		perror("ibv_open_device");
		return 1;
	}
	if (ibv_query_port(ctx, 1, &port) || ibv_query_gid(ctx, 1, 0, &gid)) {
		perror("ibv_query_port/gid");
		ibv_close_device(ctx);
		return 1;
	}
	/* libibverbs' sysfs fallback: ndev_ifindex is if_nametoindex of
	 * gid_attrs/ndevs/0, 0 without the file */
	int rc = ibv_query_gid_ex(ctx, 1, 0, &entry, 0);

	if (rc) {
		fprintf(stderr, "ibv_query_gid_ex: %s\n", strerror(rc));
		ibv_close_device(ctx);
		return 1;
	}
	inet_ntop(AF_INET6, gid.raw, gid_str, sizeof(gid_str));
	printf("opened %s state %d gid0 %s ndev %u\n", ibv_get_device_name(dev),
	       port.state, gid_str, entry.ndev_ifindex);
	return ibv_close_device(ctx) ? 1 : 0;
}

static int rdmacm(void)
{
#ifdef HAVE_RDMACM
	int n = 0;
	struct ibv_context **ctxs = rdma_get_devices(&n);

	if (!ctxs) {
		perror("rdma_get_devices");
		return 1;
	}
	for (int i = 0; i < n; i++)
		printf("rdmacm %s\n", ibv_get_device_name(ctxs[i]->device));
	rdma_free_devices(ctxs);
	return 0;
#else
	fprintf(stderr, "discovery_check: built without librdmacm\n");
	return 77;
#endif
}

/* The device messages of one datagram; 1 at NLMSG_DONE, -1 on error. */
static int nl_walk(const unsigned char *buf, int len, uint32_t seq)
{
	const struct nlmsghdr *h = (const struct nlmsghdr *)buf;

	for (; (len >= (int)sizeof(*h) && h->nlmsg_len >= sizeof(*h) &&
		h->nlmsg_len <= (unsigned int)len);
	     h = NLMSG_NEXT(h, len)) {
		const struct nlattr *a = NLMSG_DATA(h);
		int left = (int)(h->nlmsg_len - NLMSG_HDRLEN);
		uint32_t index = 0;
		const char *name = "?";

		if (h->nlmsg_seq != seq) {
			fprintf(stderr, "nlraw: sequence %u, not %u\n",
				h->nlmsg_seq, seq);
			return -1;
		}
		if (h->nlmsg_type == NLMSG_DONE)
			return 1;
		if (h->nlmsg_type == NLMSG_ERROR ||
		    !(h->nlmsg_flags & NLM_F_MULTI)) {
			fprintf(stderr, "nlraw: type %u flags 0x%x\n",
				h->nlmsg_type, h->nlmsg_flags);
			return -1;
		}
		for (; NLA_ALIGN(sizeof(*a)) <= (size_t)left &&
		       a->nla_len >= sizeof(*a) && a->nla_len <= left;
		     left -= NLA_ALIGN(a->nla_len),
		     a = (const void *)((const char *)a +
					NLA_ALIGN(a->nla_len))) {
			if (a->nla_type == RDMA_NLDEV_ATTR_DEV_INDEX)
				memcpy(&index, a + 1, sizeof(index));
			if (a->nla_type == RDMA_NLDEV_ATTR_DEV_NAME)
				name = (const char *)(a + 1);
		}
		printf("nl %s %u\n", name, index);
	}
	if (len != 0) {
		fprintf(stderr, "nlraw: %d bytes of a partial message\n", len);
		return -1;
	}
	return 0;
}

static int nlraw(size_t size, int peek)
{
	struct {
		struct nlmsghdr h;
	} req = { .h = {
			  .nlmsg_len = NLMSG_LENGTH(0),
			  .nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV,
							 RDMA_NLDEV_CMD_GET),
			  .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			  .nlmsg_seq = 77,
		  } };
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	unsigned char *buf = malloc(size);
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	int rc = -1, done = 0;

	if (fd < 0 || !buf ||
	    sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) < 0) {
		perror("nlraw");
		return 1;
	}
	while (!done) {
		struct iovec iov = { .iov_base = buf, .iov_len = size };
		struct sockaddr_nl from;
		struct msghdr m = { .msg_name = &from,
				    .msg_namelen = sizeof(from),
				    .msg_iov = &iov,
				    .msg_iovlen = 1 };
		ssize_t n;

		if (peek) {
			unsigned char small[16];
			struct iovec piov = { .iov_base = small,
					      .iov_len = sizeof(small) };
			struct msghdr pm = { .msg_iov = &piov,
					     .msg_iovlen = 1 };

			/* as libnl: the length, then a buffer of it */
			n = recvmsg(fd, &pm, MSG_PEEK | MSG_TRUNC);
			if (n <= 0 || !(pm.msg_flags & MSG_TRUNC) ||
			    !(buf = realloc(buf, (size_t)n))) {
				fprintf(stderr, "nlraw: peek %zd\n", n);
				break;
			}
			iov.iov_base = buf;
			iov.iov_len = size = (size_t)n;
		}
		n = recvmsg(fd, &m, 0);
		if (n <= 0 || (m.msg_flags & MSG_TRUNC) ||
		    m.msg_namelen != sizeof(from) || from.nl_pid != 0) {
			fprintf(stderr, "nlraw: read %zd flags 0x%x\n", n,
				m.msg_flags);
			break;
		}
		printf("datagram %zd\n", n);
		rc = nl_walk(buf, (int)n, 77);
		if (rc < 0)
			break;
		done = rc;
	}
	close(fd);
	free(buf);
	return done ? 0 : 1;
}

/* NCCL's ncclTopoGetStrFromSys: the file's bytes, the last one cut;
 * "-" when it cannot be read. */
static void sys_str(const char *dir, const char *name, char *out, size_t cap)
{
	char path[PATH_MAX];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (f) {
		n = fread(out, 1, cap - 1, f);
		fclose(f);
	}
	if (n == 0)
		snprintf(out, cap, "-");
	else
		out[n - 1] = 0;
}

/* What NCCL 2.28 does with /sys/class/infiniband/DEV/device. */
static int pci(const char *dev)
{
	char path[PATH_MAX], cls[64], numa[64], sp[64], psp[64], w[64], pw[64];
	char *p, *sub, *q, *slash;
	size_t n;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device", dev);
	p = realpath(path, NULL);
	if (!p) {
		printf("pci none errno %d\n", errno);
		return 0;
	}
	/* ncclIbGetPciPath: ports and VFs merged */
	n = strlen(p);
	if (n < 5) {
		fprintf(stderr, "pci: path too short: %s\n", p);
		return 1;
	}
	p[n - 1] = '0';
	p[n - 3] = p[n - 4] = '0';
	/* ncclTopoGetSubsystem, then xml.cc's getPciPath of the bus id */
	snprintf(path, sizeof(path), "%s/subsystem", p);
	sub = realpath(path, NULL);
	slash = strrchr(p, '/');
	snprintf(path, sizeof(path), "/sys/class/pci_bus/%.7s/../../%s",
		 slash + 1, slash + 1);
	q = realpath(path, NULL);
	if (!q || strcmp(q, p) != 0) {
		fprintf(stderr, "pci: %s is %s, not %s\n", path,
			q ? q : strerror(errno), p);
		return 1;
	}
	sys_str(q, "class", cls, sizeof(cls));
	sys_str(q, "numa_node", numa, sizeof(numa));
	sys_str(q, "max_link_speed", sp, sizeof(sp));
	sys_str(q, "../max_link_speed", psp, sizeof(psp));
	sys_str(q, "max_link_width", w, sizeof(w));
	sys_str(q, "../max_link_width", pw, sizeof(pw));
	*strrchr(q, '/') = 0;
	printf("pci %s subsystem %s class %s numa %s speed %s/%s width %s/%s "
	       "parent %s\n",
	       p, sub ? strrchr(sub, '/') + 1 : "-", cls, numa, sp, psp, w, pw,
	       strrchr(q, '/') + 1);
	free(sub);
	free(q);
	free(p);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_device **devs, *dev = NULL;
	int rc = 1;

	if (argc < 2) {
		fprintf(stderr, "usage: discovery_check list|read DEV FILE|"
				"open DEV|rdmacm|nlraw SIZE [peek]|pci DEV\n");
		return 2;
	}
	if (!strcmp(argv[1], "rdmacm"))
		return rdmacm();
	if (!strcmp(argv[1], "pci") && argc == 3)
		return pci(argv[2]);
	if (!strcmp(argv[1], "nlraw") && argc >= 3)
		return nlraw(strtoul(argv[2], NULL, 0),
			     argc > 3 && !strcmp(argv[3], "peek"));
	devs = ibv_get_device_list(NULL);
	if (!devs) {
		perror("ibv_get_device_list");
		return 1;
	}
	if (!strcmp(argv[1], "list"))
		rc = list(devs);
	else if (argc >= 3 && !(dev = find(devs, argv[2])))
		rc = 1;
	else if (!strcmp(argv[1], "read") && argc == 4)
		rc = read_file(dev, argv[3]);
	else if (!strcmp(argv[1], "open") && argc == 3)
		rc = open_dev(dev);
	else
		fprintf(stderr, "discovery_check: bad arguments\n");
	ibv_free_device_list(devs);
	return rc;
}
