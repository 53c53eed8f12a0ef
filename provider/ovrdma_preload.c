// SPDX-License-Identifier: MIT
/*
 * libovrdma-preload.so: what unmodified programs need of ovrdma devices
 * beyond the provider (docs/PROVIDER.md, "Discovery" and "Completion
 * channels"). ovrdma-run, /etc/profile.d/ovrdma.sh and the systemd
 * drop-in put it in LD_PRELOAD.
 *
 * Completion channels: libibverbs makes a completion channel itself,
 * by writing a uverbs command to the context's cmd_fd - a kernel object
 * that an ovrdma context does not have (its cmd_fd is /dev/null,
 * read-only, so the write fails with EBADF). The two overrides below
 * hand ovrdma contexts to the provider, which creates the channel
 * through ovrdmad (a pipe that receives the kernel's comp_event_desc
 * records, so ibv_get_cq_event works unchanged), and pass every other
 * context to libibverbs. The provider is a separate library loaded by
 * libibverbs with RTLD_LOCAL: it is reached through the hooks in its
 * device object.
 *
 * Discovery beside the kernel's RDMA stack: where the kernel answers
 * RDMA netlink, libibverbs lists what the kernel lists; the interposer
 * adds ovrdma's devices to those answers (ovrdma_preload_nl.c) and, when
 * libibverbs' sysfs root is not ovrdmad's tree, serves the tree's files
 * under that root (ovrdma_preload_fs.c). This file decides, once, where
 * the tree and the root are (ovrdma_preload.h), and sets the NCCL
 * settings ovrdma devices need where the user has set none.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ovrdma.h"
#include "ovrdma_preload.h"

/* Both are IBVERBS_1.0 symbols of libibverbs.so.1. */
#define IBVERBS_VERSION "IBVERBS_1.0"

typedef struct ibv_comp_channel *create_fn(struct ibv_context *);
typedef int destroy_fn(struct ibv_comp_channel *);

static void *next_symbol(const char *name)
{
	void *f = dlvsym(RTLD_NEXT, name, IBVERBS_VERSION);

	return f ? f : dlsym(RTLD_NEXT, name);
}

void *ovrdma_next(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!f) {
		/* racing threads find the same address */
		f = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}

static const struct ovrdma_hooks *hooks_of(struct ibv_context *ctx)
{
	struct ovrdma_device *od = ovrdma_device_of(ctx);

	if (!od || !od->hooks || od->hooks->version != OVRDMA_HOOKS_VERSION)
		return NULL;
	return od->hooks;
}

__attribute__((visibility("default"))) struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *ctx)
{
	const struct ovrdma_hooks *h = hooks_of(ctx);
	create_fn *next;

	if (h)
		return h->create_channel(ctx);
	next = (create_fn *)next_symbol("ibv_create_comp_channel");
	if (!next) {
		errno = ENOSYS;
		return NULL;
	}
	return next(ctx);
}

__attribute__((visibility("default"))) int
ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	const struct ovrdma_hooks *h = hooks_of(channel->context);
	destroy_fn *next;

	if (h)
		return h->destroy_channel(channel);
	next = (destroy_fn *)next_symbol("ibv_destroy_comp_channel");
	return next ? next(channel) : ENOSYS;
}

struct ovrdma_where ovrdma_where;

static void *next_open, *next_opendir;

/* @dst = @src without trailing slashes ("/" stays). */
static void set_path(char *dst, const char *src)
{
	size_t n;

	snprintf(dst, PATH_MAX, "%s", src);
	n = strlen(dst);
	while (n > 1 && dst[n - 1] == '/')
		dst[--n] = 0;
}

/* Does the kernel have RDMA devices (ib_core loaded, one registered)?
 * Then libibverbs finds them through netlink and their files under /sys. */
static bool kernel_has_devices(void)
{
	DIR *d = NEXT(opendir)("/sys/class/infiniband");
	struct dirent *e;
	bool any = false;

	if (!d)
		return false;
	while (!any && (e = readdir(d)))
		any = e->d_name[0] != '.';
	closedir(d);
	return any;
}

/* Does @file set @key (NCCL's format: "KEY=value" lines, '#' comments)? */
static bool conf_sets(const char *file, const char *key)
{
	FILE *f = fopen(file, "re");
	size_t n = strlen(key), cap = 0;
	char *line = NULL;
	bool yes = false;

	if (!f)
		return false;
	while (!yes && getline(&line, &cap, f) >= 0)
		yes = strncmp(line, key, n) == 0 && line[n] == '=';
	free(line);
	fclose(f);
	return yes;
}

/* Has the kernel an mlx5 RDMA device (a name mlx5_*, or the driver)? */
static bool kernel_has_mlx5(void)
{
	char path[PATH_MAX], link[PATH_MAX];
	DIR *d;
	struct dirent *e;
	const char *base;
	ssize_t n;
	bool any = false;

	if (snprintf(path, sizeof(path), "%s/class/infiniband",
		     ovrdma_where.sys) >= (int)sizeof(path))
		return false;
	d = NEXT(opendir)(path);
	if (!d)
		return false;
	while (!any && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		any = strncmp(e->d_name, "mlx5", 4) == 0;
		if (any ||
		    snprintf(path, sizeof(path),
			     "%s/class/infiniband/%s/device/driver",
			     ovrdma_where.sys, e->d_name) >= (int)sizeof(path))
			continue;
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		base = strrchr(link, '/');
		any = strcmp(base ? base + 1 : link, "mlx5_core") == 0;
	}
	closedir(d);
	return any;
}

/*
 * NCCL's settings that ovrdma devices need, where the user has set
 * none - in the environment, $NCCL_CONF_FILE or ~/.nccl.conf, or
 * /etc/nccl.conf, the order NCCL reads them in (src/misc/param.cc;
 * $HOME for NCCL's getpwuid()) - so that they apply to the programs
 * that use ovrdma and to no other (docs/GPU.md, "NCCL out of the box"):
 *
 *   NCCL_GIN_TYPE=2 (GIN through the proxy) where the kernel has no
 *   mlx5 device: NCCL 2.28.7 and 2.28.9 otherwise probe GDAKI, find no
 *   mlx5 device, and call through an unset GIN pointer in
 *   ncclNetPluginInit (src/plugin/net.cc:216) - a segfault. 2.29 falls
 *   back to the proxy itself (the same choice), older NCCL ignores it;
 *   beside mlx5 devices GDAKI is found and NCCL is left alone.
 *
 * $OVRDMA_NCCL_DEFAULTS=0 sets nothing.
 */
static void nccl_defaults(void)
{
	static const char key[] = "NCCL_GIN_TYPE";
	const char *conf = getenv("NCCL_CONF_FILE"), *home = getenv("HOME");
	const char *off = getenv("OVRDMA_NCCL_DEFAULTS");
	char path[PATH_MAX];

	if ((off && strcmp(off, "0") == 0) || getenv(key))
		return;
	if (conf && conf[0]) {
		if (conf_sets(conf, key))
			return;
	} else if (home && home[0] &&
		   snprintf(path, sizeof(path), "%s/.nccl.conf", home) <
			   (int)sizeof(path) &&
		   conf_sets(path, key)) {
		return;
	}
	if (conf_sets("/etc/nccl.conf", key) || kernel_has_mlx5())
		return;
	setenv(key, "2", 0);
}

/*
 * Where the devices are, decided before main() (and any thread: the
 * environment is changed here only). libibverbs reads SYSFS_PATH once,
 * at its first ibv_get_device_list(), for every device: where the kernel
 * has RDMA devices, their files are under /sys, so SYSFS_PATH naming
 * ovrdmad's tree (as ovrdma-run, the profile script and the drop-in set
 * it, for hosts without) is dropped, and the tree's files are served
 * under /sys instead (and the tree named in OVRDMA_SYSFS, for the
 * programs this one runs). A SYSFS_PATH that names another directory is
 * the user's and stays.
 */
static __attribute__((constructor)) void ovrdma_preload_init(void)
{
	const char *tree = getenv("OVRDMA_SYSFS");
	const char *sysfs = getenv("SYSFS_PATH");
	char path[PATH_MAX];

	const char *sys = getenv("OVRDMA_SYS_ROOT");
	bool setuid = getuid() != geteuid();

	ovrdma_fs_resolve();
	ovrdma_cm_resolve();
	ovrdma_nl_resolve();
	ovrdma_pci_resolve();
	/* libibverbs ignores SYSFS_PATH in setuid programs */
	if (setuid)
		sysfs = sys = NULL;
	/* the kernel's sysfs; another only for tests (a fake PCI tree) */
	set_path(ovrdma_where.sys, sys && sys[0] == '/' ? sys : "/sys");
	if (!tree || !tree[0])
		tree = sysfs && sysfs[0] ? sysfs : OVR_CTL_SYSFS_DEFAULT;
	set_path(ovrdma_where.tree, tree);
	if (sysfs && sysfs[0]) {
		set_path(path, sysfs);
		if (strcmp(path, ovrdma_where.tree) == 0 &&
		    kernel_has_devices()) {
			/* the tree stays known to the programs this one
			 * runs (timeout, mpirun, a shell) */
			setenv("OVRDMA_SYSFS", ovrdma_where.tree, 0);
			unsetenv("SYSFS_PATH");
			sysfs = NULL;
		}
	}
	set_path(ovrdma_where.root, sysfs && sysfs[0] ? sysfs : "/sys");
	ovrdma_where.redirect = strcmp(ovrdma_where.root, ovrdma_where.tree) !=
				0;
	if (!setuid)
		nccl_defaults();
}

/* Reads the one-line file DIR/NAME into @buf (newline cut). */
static int read_line(const char *dir, const char *name, char *buf, size_t cap)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = NEXT(open)(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* "0200:0064:c0a8:0101" (sysfs' node_guid) as the kernel's u64. */
static uint64_t read_guid(const char *dir, const char *name)
{
	unsigned int p[4];
	char buf[64];

	if (read_line(dir, name, buf, sizeof(buf)) ||
	    sscanf(buf, "%x:%x:%x:%x", &p[0], &p[1], &p[2], &p[3]) != 4)
		return 0;
	return (uint64_t)p[0] << 48 | (uint64_t)p[1] << 32 |
	       (uint64_t)p[2] << 16 | p[3];
}

/* class/infiniband_verbs/@uverbs of the tree, as a device; false when it
 * is not one of ovrdmad's (no ovrdma_socket) or is incomplete. */
static bool tree_dev(const char *uverbs, struct ovrdma_nl_dev *d)
{
	char udir[PATH_MAX], ddir[PATH_MAX], buf[64];
	unsigned int major, minor;

	memset(d, 0, sizeof(*d));
	if (snprintf(udir, sizeof(udir), "%s/class/infiniband_verbs/%s",
		     ovrdma_where.tree, uverbs) >= (int)sizeof(udir) ||
	    snprintf(d->uverbs, sizeof(d->uverbs), "%s", uverbs) >=
		    (int)sizeof(d->uverbs) ||
	    read_line(udir, "ibdev", d->name, sizeof(d->name)) || !d->name[0] ||
	    read_line(udir, "dev", buf, sizeof(buf)) ||
	    sscanf(buf, "%u:%u", &major, &minor) != 2)
		return false;
	if (snprintf(ddir, sizeof(ddir), "%s/class/infiniband/%s",
		     ovrdma_where.tree, d->name) >= (int)sizeof(ddir) ||
	    read_line(ddir, "ovrdma_socket", buf, sizeof(buf)) == -ENOENT)
		return false;
	d->cdev = ovrdma_nl_encode_dev(major, minor);
	d->node_guid = read_guid(ddir, "node_guid");
	d->sys_image_guid = read_guid(ddir, "sys_image_guid");
	d->node_type = 1; /* "1: CA" */
	if (!read_line(ddir, "node_type", buf, sizeof(buf)))
		d->node_type = (uint8_t)strtoul(buf, NULL, 10);
	if (read_line(ddir, "fw_ver", d->fw_ver, sizeof(d->fw_ver)))
		d->fw_ver[0] = 0;
	return true;
}

void ovrdma_tree_devs(struct ovrdma_nl_devs *devs)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *dir;

	devs->n = 0;
	if (snprintf(path, sizeof(path), "%s/class/infiniband_verbs",
		     ovrdma_where.tree) >= (int)sizeof(path))
		return;
	dir = NEXT(opendir)(path);
	if (!dir)
		return;
	while (devs->n < OVRDMA_NL_DEVS_MAX && (e = readdir(dir)))
		if (e->d_name[0] != '.' &&
		    strcmp(e->d_name, "abi_version") != 0 &&
		    tree_dev(e->d_name, &devs->dev[devs->n]))
			devs->n++;
	closedir(dir);
}
