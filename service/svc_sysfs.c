// SPDX-License-Identifier: MIT
/*
 * Device publication (docs/PROVIDER.md section 1): for every local
 * binding (device ovrdmaN) ovrdmad writes the synthetic sysfs tree that
 * libibverbs scans when the host has no RDMA netlink, under
 * conf.sysfs (default /run/ovrdma/sysfs, the directory applications get
 * as SYSFS_PATH), and the /dev/infiniband node it opens:
 *
 *   DIR/class/infiniband_verbs/abi_version          "6"
 *   DIR/class/infiniband_verbs/U/{ibdev,dev}         U -> device N
 *   DIR/class/infiniband/N/{node_type,node_guid,...,ovrdma_socket,
 *                           ovrdma_pid}
 *   DIR/class/infiniband/N/ports/1/{state,link_layer,gids/0,
 *                           gid_attrs/types/0,pkeys/0,...}
 *   DIR/class/infiniband/N/ports/1/gid_attrs/ndevs/0  IF    } when an
 *   DIR/class/infiniband/N/device/net/IF/{ifindex,address} } IF holds vIP
 *   /dev/infiniband/U -> /dev/null
 *
 * U is "uverbs-<hash>-N", the hash taken over DIR and N: several ovrdmad
 * on one machine (one per network namespace, one filesystem) each have
 * their own DIR but share /dev/infiniband, so their nodes never collide,
 * and a restarted ovrdmad finds the same name again.
 *
 * Ownership: ovrdma_pid names the ovrdmad that wrote a device. A tree
 * whose writer is gone (crash, kill -9) is stale and replaced; one whose
 * writer still runs is left alone and the binding is not published
 * (give each node its own sysfs= directory).
 *
 * Order: the device directory and the /dev node are written first and
 * the uverbs directory is renamed into place last, so a scan never sees
 * half a device; removal goes the other way round. Publication failures
 * are logged and do not stop the service: the client library reaches a
 * device without sysfs.
 *
 * The netdev: IF is the interface that holds the device's vIP in
 * ovrdmad's network namespace (getifaddrs; the VM's interface with the
 * tenant address, vip0 in the testbed), as the kernel reports a RoCE
 * GID's netdev. It is looked up when the device is published and again
 * whenever the kernel reports an IPv4 address or a link added, changed
 * or removed (an rtnetlink socket in the loop's epoll set, read by the
 * control side like a control socket; nothing per round); entries that
 * no longer hold are replaced or removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <ifaddrs.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netpacket/packet.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "svc.h"

#define CDEV_DIR "/dev/infiniband"
/* What libibverbs accepts in class/infiniband_verbs/abi_version: 3..6. */
#define UVERBS_ABI "6"

static char self_comm[32];

/* FNV-1a, 32 bits: short, stable names (not a security property). */
static uint32_t fnv1a(const char *a, const char *b)
{
	uint32_t h = 2166136261u;

	for (const char *p = a; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	h = (h ^ '/') * 16777619u;
	for (const char *p = b; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return h;
}

static void uverbs_name(const struct svc *s, const char *dev, char *out,
			size_t cap)
{
	snprintf(out, cap, "uverbs-%08x-%s", fnv1a(s->conf.sysfs, dev), dev);
}

/* @out = @a "/" @b; -ENAMETOOLONG when it does not fit. */
static int join(char *out, size_t cap, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la + 1 + lb >= cap)
		return -ENAMETOOLONG;
	memmove(out, a, la); /* @out may be @a */
	out[la] = '/';
	memcpy(out + la + 1, b, lb + 1);
	return 0;
}

static int put(const char *dir, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Writes one attribute file DIR/NAME (NAME may hold slashes). */
static int put(const char *dir, const char *name, const char *fmt, ...)
{
	char path[PATH_MAX], buf[256];
	va_list ap;
	int fd, n;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(buf))
		return -EINVAL;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	/* every user reads the tree, whatever ovrdmad's umask */
	if (fchmod(fd, 0644) || write(fd, buf, (size_t)n) != n) {
		int e = errno ? errno : EIO;

		close(fd);
		return -e;
	}
	close(fd);
	return 0;
}

/* Reads DIR/NAME into @buf (NUL-terminated, trailing newline cut). */
static int get(const char *dir, const char *name, char *buf, size_t cap)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	join(path, sizeof(path), dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return 0;
}

/* A directory every user may enter and list, whatever ovrdmad's umask
 * (libibverbs reads the tree as the application); one that is there
 * already is left as it is. */
int svc_mkdir_pub(const char *p)
{
	if (!mkdir(p, 0755))
		return chmod(p, 0755) ? -errno : 0;
	return errno == EEXIST ? 0 : -errno;
}

static int mkdirs(const char *path)
{
	char p[PATH_MAX];
	int rc;

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	for (char *c = p + 1; *c; c++)
		if (*c == '/') {
			*c = 0;
			rc = svc_mkdir_pub(p);
			if (rc)
				return rc;
			*c = '/';
		}
	return svc_mkdir_pub(p);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int path_of(char *out, size_t cap, const struct svc *s,
		   const char *class, const char *name)
{
	if (snprintf(out, cap, "%s/class/%s%s%s", s->conf.sysfs, class,
		     name ? "/" : "", name ? name : "") >= (int)cap)
		return -ENAMETOOLONG;
	return 0;
}

/* Is the ovrdmad that wrote device directory @ibdev still running (and
 * not us)? Returns its pid, or 0. */
static pid_t live_owner(const char *ibdev)
{
	char buf[32], path[64], comm[32];
	long pid;

	if (get(ibdev, "ovrdma_pid", buf, sizeof(buf)))
		return 0;
	pid = strtol(buf, NULL, 10);
	if (pid <= 0 || pid == getpid())
		return 0;
	/* the pid may have been reused by something else since */
	snprintf(path, sizeof(path), "/proc/%ld", pid);
	if (get(path, "comm", comm, sizeof(comm)) ||
	    strcmp(comm, self_comm) != 0)
		return 0;
	return (pid_t)pid;
}

/* Removes /dev/infiniband/@u if it is one of our links. */
static void unlink_cdev(const char *u)
{
	char path[PATH_MAX], target[64];
	ssize_t n;

	join(path, sizeof(path), CDEV_DIR, u);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return;
	target[n] = 0;
	if (!strcmp(target, "/dev/null"))
		unlink(path);
}

/* Removes every uverbs entry of DIR that names device @dev (or, with
 * @dev NULL, whose device directory is gone), with its /dev node. */
static void drop_uverbs(const struct svc *s, const char *dev)
{
	char dir[PATH_MAX], uv[PATH_MAX], ibdev[64], ibpath[PATH_MAX];
	struct dirent *e;
	DIR *d;

	if (path_of(dir, sizeof(dir), s, "infiniband_verbs", NULL))
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		bool drop;

		if (e->d_name[0] == '.' && strcmp(e->d_name, ".") &&
		    strcmp(e->d_name, "..")) {
			/* a half-built entry of an earlier run */
			join(uv, sizeof(uv), dir, e->d_name);
			rm_tree(uv);
			continue;
		}
		if (strncmp(e->d_name, "uverbs-", 7))
			continue;
		join(uv, sizeof(uv), dir, e->d_name);
		if (get(uv, "ibdev", ibdev, sizeof(ibdev)))
			continue;
		if (dev) {
			drop = !strcmp(ibdev, dev);
		} else {
			path_of(ibpath, sizeof(ibpath), s, "infiniband", ibdev);
			drop = access(ibpath, F_OK) != 0;
		}
		if (!drop)
			continue;
		rm_tree(uv);
		unlink_cdev(e->d_name);
	}
	closedir(d);
}

static void unpublish(struct svc *s, const char *name)
{
	char ibdev[PATH_MAX], u[96];

	drop_uverbs(s, name);
	/* the node too when the tree was deleted under us */
	uverbs_name(s, name, u, sizeof(u));
	unlink_cdev(u);
	if (!path_of(ibdev, sizeof(ibdev), s, "infiniband", name))
		rm_tree(ibdev);
}

static void guid_text(uint64_t g, char *out, size_t cap)
{
	snprintf(out, cap, "%04x:%04x:%04x:%04x", (unsigned)(g >> 48) & 0xffff,
		 (unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff,
		 (unsigned)g & 0xffff);
}

/* The device directory class/infiniband/N. */
static int write_ibdev(struct svc *s, const struct ovr_ctl_dev *d,
		       const char *ibdev)
{
	char guid[32], sock[PATH_MAX], host[64] = "";
	unsigned int gbps = (unsigned int)(d->rate_bps / 1000000000ull);
	int rc;

	if (s->conf.socket[0] == '/') {
		snprintf(sock, sizeof(sock), "%s", s->conf.socket);
	} else {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		join(sock, sizeof(sock), cwd, s->conf.socket);
	}
	gethostname(host, sizeof(host) - 1);
	guid_text(d->guid, guid, sizeof(guid));
	rc = mkdirs(ibdev);
	/* first: who owns this directory */
	rc = rc ? rc : put(ibdev, "ovrdma_pid", "%d\n", (int)getpid());
	rc = rc ? rc : put(ibdev, "ovrdma_socket", "%s\n", sock);
	rc = rc ? rc : put(ibdev, "node_type", "1: CA\n");
	rc = rc ? rc : put(ibdev, "node_guid", "%s\n", guid);
	rc = rc ? rc : put(ibdev, "sys_image_guid", "%s\n", guid);
	rc = rc ? rc : put(ibdev, "board_id", "OVRDMA\n");
	rc = rc ? rc : put(ibdev, "fw_ver", "%s\n", OVR_CTL_DEV_FW_VER);
	rc = rc ? rc : put(ibdev, "hw_rev", "%u\n", OVR_CTL_DEV_HW_VER);
	rc = rc ? rc : put(ibdev, "hca_type", "ovrdma\n");
	rc = rc ? rc :
		  put(ibdev, "node_desc", "ovrdma %s vni %u\n", host, d->vni);
	if (rc)
		return rc;
	char port[PATH_MAX];

	join(port, sizeof(port), ibdev, "ports/1");
	rc = mkdirs(port);
	rc = rc ? rc : put(port, "state", "4: ACTIVE\n");
	rc = rc ? rc : put(port, "phys_state", "5: LinkUp\n");
	rc = rc ? rc : put(port, "link_layer", "Ethernet\n");
	rc = rc ? rc : put(port, "rate", "%u Gb/sec\n", gbps ? gbps : 1);
	rc = rc ? rc : put(port, "lid", "0x0\n");
	rc = rc ? rc : put(port, "sm_lid", "0x0\n");
	rc = rc ? rc : put(port, "lid_mask_count", "0\n");
	rc = rc ? rc : put(port, "sm_sl", "0\n");
	rc = rc ? rc : put(port, "cap_mask", "0x04010000\n");
	if (rc)
		return rc;
	/* GID table of one entry, RoCE v2, IPv4-mapped tenant vIP; if
	 * gid_attrs/ exists libibverbs wants types/N for every gids/N */
	char sub[PATH_MAX];

	join(sub, sizeof(sub), port, "gids");
	rc = mkdirs(sub);
	rc = rc ? rc :
		  put(sub, "0", "0000:0000:0000:0000:0000:ffff:%04x:%04x\n",
		      d->vip >> 16, d->vip & 0xffff);
	join(sub, sizeof(sub), port, "gid_attrs/types");
	rc = rc ? rc : mkdirs(sub);
	rc = rc ? rc : put(sub, "0", "RoCE v2\n");
	join(sub, sizeof(sub), port, "pkeys");
	rc = rc ? rc : mkdirs(sub);
	rc = rc ? rc : put(sub, "0", "0xffff\n");
	return rc;
}

/* The interface holding @vip (host order) in this network namespace:
 * its name (a label "vip0:1" cut to the device's name), index and MAC
 * in @nd; -ENOENT when none holds it. */
struct ndev {
	char name[IF_NAMESIZE];
	unsigned int index;
	uint8_t mac[6];
};

static int vip_ndev(uint32_t vip, struct ndev *nd)
{
	struct ifaddrs *all, *a;
	int rc = -ENOENT;

	memset(nd, 0, sizeof(*nd));
	if (getifaddrs(&all))
		return -errno;
	for (a = all; a && rc; a = a->ifa_next) {
		const struct sockaddr_in *sin = (void *)a->ifa_addr;

		if (!sin || sin->sin_family != AF_INET ||
		    ntohl(sin->sin_addr.s_addr) != vip)
			continue;
		snprintf(nd->name, sizeof(nd->name), "%.*s",
			 (int)strcspn(a->ifa_name, ":"), a->ifa_name);
		nd->index = if_nametoindex(nd->name);
		rc = nd->index ? 0 : -ENOENT;
	}
	for (a = all; a && !rc; a = a->ifa_next) {
		const struct sockaddr_ll *ll = (void *)a->ifa_addr;

		if (ll && ll->sll_family == AF_PACKET &&
		    (unsigned int)ll->sll_ifindex == nd->index &&
		    ll->sll_halen == 6) {
			memcpy(nd->mac, ll->sll_addr, 6);
			break;
		}
	}
	freeifaddrs(all);
	return rc;
}

/*
 * The device's netdev entries as @nd says (NULL: none): ndevs/0, which
 * libibverbs' ibv_query_gid_ex reads for the GID's ndev_ifindex
 * (if_nametoindex of the name), and device/net/IF/, where programs
 * (rdma-core's tests, UCX) look for the device's interface. Unchanged
 * entries are left as they are; readers see the old or the new name.
 */
static int write_ndev(const char *ibdev, const struct ndev *nd)
{
	char dir[PATH_MAX], cur[IF_NAMESIZE + 1] = "", idx[16] = "";
	int rc;

	if (get(ibdev, "ports/1/gid_attrs/ndevs/0", cur, sizeof(cur)) == 0 &&
	    nd && strcmp(cur, nd->name) == 0 &&
	    snprintf(dir, sizeof(dir), "device/net/%s/ifindex", cur) > 0 &&
	    get(ibdev, dir, idx, sizeof(idx)) == 0 &&
	    strtoul(idx, NULL, 10) == nd->index)
		return 0;
	if (!nd && !cur[0])
		return 0;
	join(dir, sizeof(dir), ibdev, "device");
	rm_tree(dir);
	join(dir, sizeof(dir), ibdev, "ports/1/gid_attrs/ndevs");
	rm_tree(dir);
	if (!nd)
		return 0;
	rc = mkdirs(dir);
	rc = rc ? rc : put(dir, "0", "%s\n", nd->name);
	if (snprintf(dir, sizeof(dir), "%s/device/net/%s", ibdev, nd->name) >=
	    (int)sizeof(dir))
		return -ENAMETOOLONG;
	rc = rc ? rc : mkdirs(dir);
	rc = rc ? rc : put(dir, "ifindex", "%u\n", nd->index);
	rc = rc ? rc :
		  put(dir, "address", "%02x:%02x:%02x:%02x:%02x:%02x\n",
		      nd->mac[0], nd->mac[1], nd->mac[2], nd->mac[3],
		      nd->mac[4], nd->mac[5]);
	return rc;
}

/* Looks up device @d's netdev and writes its entries. */
static int publish_ndev(struct svc *s, const struct ovr_ctl_dev *d)
{
	char ibdev[PATH_MAX];
	struct ndev nd;
	int rc;

	if (path_of(ibdev, sizeof(ibdev), s, "infiniband", d->name))
		return -ENAMETOOLONG;
	rc = vip_ndev(d->vip, &nd);
	if (rc && rc != -ENOENT)
		return rc;
	rc = write_ndev(ibdev, rc ? NULL : &nd);
	if (rc)
		fprintf(stderr, "ovrdmad: sysfs: %s's netdev %s: %s\n", d->name,
			nd.name, strerror(-rc));
	return rc;
}

/* /dev/infiniband/@u: a link to /dev/null (what libibverbs opens as the
 * command fd; the provider never writes a command to it). */
static int make_cdev(const char *u)
{
	char path[PATH_MAX], target[64];
	ssize_t n;

	int rc = svc_mkdir_pub(CDEV_DIR);

	if (rc)
		return rc;
	join(path, sizeof(path), CDEV_DIR, u);
	if (!symlink("/dev/null", path))
		return 0;
	if (errno != EEXIST)
		return -errno;
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return -EEXIST; /* something else by that name: not ours */
	target[n] = 0;
	return strcmp(target, "/dev/null") ? -EEXIST : 0;
}

static int publish(struct svc *s, const struct ovr_ctl_dev *d)
{
	char ibdev[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX], uv[PATH_MAX];
	char u[96];
	struct stat null_st;
	pid_t owner;
	int rc;

	if (path_of(ibdev, sizeof(ibdev), s, "infiniband", d->name) ||
	    path_of(dir, sizeof(dir), s, "infiniband_verbs", NULL))
		return -ENAMETOOLONG;
	owner = live_owner(ibdev);
	if (owner) {
		fprintf(stderr,
			"ovrdmad: sysfs: %s belongs to the running ovrdmad "
			"%d: %s not published (give each node its own "
			"sysfs = directory)\n",
			ibdev, (int)owner, d->name);
		return -EADDRINUSE;
	}
	unpublish(s, d->name); /* a stale tree of an earlier run */
	uverbs_name(s, d->name, u, sizeof(u));
	join(uv, sizeof(uv), dir, u);
	{
		char dot[sizeof(u) + 1];

		snprintf(dot, sizeof(dot), ".%s", u);
		if (join(tmp, sizeof(tmp), dir, dot))
			return -ENAMETOOLONG;
	}
	if (stat("/dev/null", &null_st))
		return -errno;
	rc = write_ibdev(s, d, ibdev);
	if (!rc)
		publish_ndev(s, d); /* logged; the device is there without */
	if (!rc)
		rc = make_cdev(u);
	if (!rc) {
		rm_tree(tmp);
		rc = mkdirs(tmp);
	}
	rc = rc ? rc : put(tmp, "ibdev", "%s\n", d->name);
	rc = rc ? rc :
		  put(tmp, "dev", "%u:%u\n", major(null_st.st_rdev),
		      minor(null_st.st_rdev));
	if (!rc && rename(tmp, uv))
		rc = -errno;
	if (rc) {
		fprintf(stderr, "ovrdmad: sysfs: publishing %s under %s: %s\n",
			d->name, s->conf.sysfs, strerror(-rc));
		rm_tree(tmp);
		unpublish(s, d->name);
	}
	return rc;
}

/* The kernel's reports of IPv4 addresses and links (rtnetlink
 * multicast groups) in the loop's epoll set: -errno when it cannot be
 * opened (logged; the netdev is then looked up at publication only). */
static int ndev_watch(struct svc *s)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
				  .nl_groups = RTMGRP_LINK |
					       RTMGRP_IPV4_IFADDR };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = SVC_EV_NDEV };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
			NETLINK_ROUTE);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (s->epfd >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev))) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		fprintf(stderr,
			"ovrdmad: sysfs: watching addresses: %s (netdevs "
			"looked up at publication only)\n",
			strerror(e));
		return -e;
	}
	s->ndev_fd = fd;
	return 0;
}

void svc_sysfs_ndev_event(struct svc *s)
{
	char buf[8192];
	ssize_t n;

	/* what changed does not matter: every device is looked at again
	 * (a few devices, one getifaddrs each); an overrun (ENOBUFS) too */
	do
		n = recv(s->ndev_fd, buf, sizeof(buf), 0);
	while (n > 0 || (n < 0 && errno == ENOBUFS));
	if (!s->sysfs_ready)
		return;
	for (int i = 0; i < SVC_MAX_DEVS; i++) {
		char ibdev[PATH_MAX];

		if (!s->devs[i].used ||
		    path_of(ibdev, sizeof(ibdev), s, "infiniband",
			    s->devs[i].d.name) ||
		    live_owner(ibdev) || access(ibdev, F_OK))
			continue; /* another's, or not published */
		publish_ndev(s, &s->devs[i].d);
	}
}

int svc_sysfs_init(struct svc *s)
{
	char dir[PATH_MAX], ibdev[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int rc;

	if (!s->conf.sysfs[0])
		return 0;
	if (get("/proc/self", "comm", self_comm, sizeof(self_comm)))
		snprintf(self_comm, sizeof(self_comm), "ovrdmad");
	path_of(dir, sizeof(dir), s, "infiniband", NULL);
	rc = mkdirs(dir);
	if (!rc) {
		path_of(dir, sizeof(dir), s, "infiniband_verbs", NULL);
		rc = mkdirs(dir);
	}
	if (!rc)
		rc = put(dir, "abi_version", UVERBS_ABI "\n");
	if (rc) {
		fprintf(stderr, "ovrdmad: sysfs: %s: %s\n", s->conf.sysfs,
			strerror(-rc));
		return rc;
	}
	/* stale devices of ovrdmads that are gone */
	path_of(dir, sizeof(dir), s, "infiniband", NULL);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		join(ibdev, sizeof(ibdev), dir, e->d_name);
		if (access(ibdev, F_OK) || live_owner(ibdev))
			continue;
		char buf[16];

		if (get(ibdev, "ovrdma_pid", buf, sizeof(buf)))
			continue; /* not written by an ovrdmad */
		unpublish(s, e->d_name);
	}
	if (d)
		closedir(d);
	drop_uverbs(s, NULL);
	ndev_watch(s);
	s->sysfs_ready = true;
	for (int i = 0; i < SVC_MAX_DEVS; i++)
		if (s->devs[i].used)
			publish(s, &s->devs[i].d);
	return 0;
}

void svc_sysfs_add(struct svc *s, const struct ovr_ctl_dev *d)
{
	if (s->sysfs_ready)
		publish(s, d);
}

void svc_sysfs_del(struct svc *s, const struct ovr_ctl_dev *d)
{
	char ibdev[PATH_MAX];

	if (!s->sysfs_ready ||
	    path_of(ibdev, sizeof(ibdev), s, "infiniband", d->name))
		return;
	/* never remove what another running ovrdmad published */
	if (!live_owner(ibdev))
		unpublish(s, d->name);
}

void svc_sysfs_fini(struct svc *s)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct dirent *e;
	bool empty = true;
	DIR *d;

	if (s->ndev_fd >= 0)
		close(s->ndev_fd); /* closing drops it from the epoll set */
	s->ndev_fd = -1;
	if (!s->sysfs_ready)
		return;
	for (int i = 0; i < SVC_MAX_DEVS; i++)
		if (s->devs[i].used)
			svc_sysfs_del(s, &s->devs[i].d);
	s->sysfs_ready = false;
	/* the skeleton goes too when no other ovrdmad uses it */
	path_of(dir, sizeof(dir), s, "infiniband_verbs", NULL);
	d = opendir(dir);
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strcmp(e->d_name, "abi_version"))
			empty = false;
	if (d)
		closedir(d);
	if (!empty)
		return;
	join(path, sizeof(path), dir, "abi_version");
	unlink(path);
	rmdir(dir);
	path_of(dir, sizeof(dir), s, "infiniband", NULL);
	rmdir(dir);
	join(path, sizeof(path), s->conf.sysfs, "class");
	rmdir(path);
	rmdir(s->conf.sysfs);
}
