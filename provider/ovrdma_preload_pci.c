// SPDX-License-Identifier: MIT
/*
 * An ovrdma device's PCI function, next to a GPU (docs/GPU.md, "NCCL
 * out of the box").
 *
 * NCCL places a NIC in its topology by the PCI function behind
 * /sys/class/infiniband/<dev>/device, and enables GPU Direct RDMA by
 * default only when that function and the GPU share a PCI switch
 * (distance PIX or PXB). An ovrdma device has no PCI function: NCCL
 * warns "Could not find real path", puts the NIC nowhere near the GPU,
 * and uses GPU Direct RDMA only with NCCL_NET_GDR_LEVEL=SYS. Yet
 * ovrdma's GPU registration reaches a GPU's memory as well from any
 * "distance" (ovrdmad copies through the GPU's copy engines).
 *
 * So the interposer answers for a virtual function:
 *
 *   GPU     <sys>/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0
 *   ovrdma0 <sys>/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:fe:00.0
 *           (same parent as the GPU; a bus number the kernel does not
 *           have, in the GPU's domain; device 00, function 0, so that
 *           NCCL's merging of ports and VFs - it zeroes the function
 *           and the device digits - leaves it as it is)
 *
 * Which GPU: the same in every process of the host, because NCCL's
 * ranks on one host must see one topology (each computes its rings from
 * its own view, src/graph/connect.cc: a NIC next to a different GPU in
 * each rank's view breaks them). The host's NVIDIA GPUs (vendor 0x10de,
 * class 0x03xxxx under <sys>/bus/pci/devices) in PCI address order,
 * the tree's devices in name order: device k sits next to GPU k modulo
 * their number - on a host with one GPU, the GPU every process uses;
 * with one device per GPU, one rail each. $OVRDMA_NCCL_PCI names the
 * function to sit next to instead, for every device ("none": no
 * answer).
 *
 * Only processes with a current CUDA context are answered (libcuda
 * found only if the process has loaded it: RTLD_NOLOAD, cuCtxGetDevice),
 * or any with $OVRDMA_NCCL_PCI: programs without CUDA (ibv_devinfo,
 * UCX on host memory) see what they saw before, no device path. A
 * device gets its function at its first question and keeps it.
 *
 * What NCCL (2.28, src/transport/net_ib.cc ncclIbGetPciPath, src/graph/
 * xml.cc) does with it, and what is answered:
 *   realpath(<sys>/class/infiniband/<dev>/device)      the function F
 *   realpath(F/subsystem)                              <sys>/bus/pci
 *   realpath(<sys>/class/pci_bus/D:B/../../D:B:00.0)   F
 *   F/class                                            0x020000 (Ethernet)
 *   F/vendor, device, subsystem_vendor, _device        0x0000 (no vendor)
 *   F/max_link_speed, max_link_width, current_link_*,
 *   F/numa_node, local_cpus, local_cpulist             the GPU's files
 *   F/../<file>                                        the parent's files
 *   <sys>/class/infiniband/<dev>/device/net/...        not answered: the
 *                                                      tree's (its netdev)
 * and <sys>/bus/pci/devices/D:B:00.0 resolves to F as well. Everything
 * else - the kernel's devices, every real path - passes through.
 *
 * Locking: the table below under pci_mu, held only around reading or
 * filling it, never across a call into CUDA (the driver may resolve
 * paths itself) or another interposed call.
 */
/* our own symbols are the plain names, both */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ovrdma_preload.h"

/* CUDA driver API (cuda.h not needed): CUresult cuCtxGetDevice(CUdevice *) */
typedef int pci_cu_get_device(int *dev);

/* glibc's _FORTIFY_SOURCE entry point (<bits/stdlib.h>) */
char *__realpath_chk(const char *path, char *resolved, size_t len);

#define PCI_FNS_MAX 8 /* devices answered; more: no path, as before */
#define PCI_LIST_MAX 64 /* GPUs and devices looked at */
#define PCI_BDF_LEN sizeof("0000:00:00.0")

struct pci_fn {
	char name[OVRDMA_NL_NAME_MAX]; /* the ovrdma device */
	char bdf[PCI_BDF_LEN]; /* its function: D:B:00.0 */
	char bus[sizeof("0000:00")]; /* D:B, its bus */
	char gpu[PATH_MAX]; /* the GPU's directory under <sys>/devices */
	char parent[PATH_MAX]; /* the one above it, and the function's */
};

static struct {
	unsigned int n;
	struct pci_fn fn[PCI_FNS_MAX]; /* appended, never changed */
} pci;
static pthread_mutex_t pci_mu = PTHREAD_MUTEX_INITIALIZER;
/* pci.n, read without the lock: 0 while nothing is answered */
static unsigned int pci_fns;

static void *next_realpath, *next___realpath_chk, *next_access, *next_open,
	*next_opendir;

void ovrdma_pci_resolve(void)
{
	NEXT(realpath);
	NEXT(__realpath_chk);
	NEXT(access);
	NEXT(open);
	NEXT(opendir);
}

/* What follows "@prefix/" in @path, or NULL. */
static const char *after(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(path, prefix, n) != 0 || path[n] != '/')
		return NULL;
	return path + n + 1;
}

/* "dddd:bb:dd.f" (or "bb:dd.f", or the driver's 8-digit domain) into
 * its parts; false when it is not one. */
static bool parse_bdf(const char *s, unsigned int *dom, unsigned int *bus,
		      unsigned int *dev, unsigned int *fn)
{
	unsigned int d = 0, b, v, f;
	int end = -1;

	if (sscanf(s, "%x:%x:%x.%x%n", &d, &b, &v, &f, &end) != 4 ||
	    (size_t)end != strlen(s)) {
		d = 0;
		end = -1;
		if (sscanf(s, "%x:%x.%x%n", &b, &v, &f, &end) != 3 ||
		    (size_t)end != strlen(s))
			return false;
	}
	if (d > 0xffff || b > 0xff || v > 0x1f || f > 7)
		return false;
	*dom = d;
	*bus = b;
	*dev = v;
	*fn = f;
	return true;
}

/* Has the calling thread a current CUDA context (libcuda loaded by the
 * process, not by us)? */
static bool cuda_current(void)
{
	const char *lib = getenv("OVRDMA_LIBCUDA");
	pci_cu_get_device *get_device;
	bool yes = false;
	int dev;
	void *h;

	if (!lib || !*lib)
		lib = "libcuda.so.1";
	h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
	if (!h)
		return false;
	*(void **)&get_device = dlsym(h, "cuCtxGetDevice");
	yes = get_device && get_device(&dev) == 0;
	dlclose(h); /* the reference RTLD_NOLOAD took */
	return yes;
}

/* The first line of @dir/@name into @buf (newline cut); 0 or -1. */
static int read_line(const char *dir, const char *name, char *buf, size_t cap)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return -1;
	fd = NEXT(open)(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

static int by_version(const void *a, const void *b)
{
	return strverscmp((const char *)a, (const char *)b);
}

/* The host's NVIDIA GPUs' bus ids, in order; how many. */
static unsigned int host_gpus(char (*bdf)[PCI_BDF_LEN])
{
	char dir[PATH_MAX], path[PATH_MAX], v[32], c[32];
	unsigned int n = 0;
	struct dirent *e;
	DIR *d;

	if (snprintf(dir, sizeof(dir), "%s/bus/pci/devices",
		     ovrdma_where.sys) >= (int)sizeof(dir))
		return 0;
	d = NEXT(opendir)(dir);
	if (!d)
		return 0;
	while (n < PCI_LIST_MAX && (e = readdir(d))) {
		if (strlen(e->d_name) != PCI_BDF_LEN - 1 ||
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >=
			    (int)sizeof(path) ||
		    read_line(path, "vendor", v, sizeof(v)) ||
		    read_line(path, "class", c, sizeof(c)) ||
		    strcmp(v, "0x10de") != 0 || strncmp(c, "0x03", 4) != 0)
			continue;
		strcpy(bdf[n++], e->d_name);
	}
	closedir(d);
	qsort(bdf, n, sizeof(bdf[0]), by_name);
	return n;
}

/* Is @name (length @n) a device of ovrdmad's tree that the kernel does
 * not have? */
static bool tree_dev(const char *name, size_t n)
{
	char path[PATH_MAX];
	int e = errno;
	bool yes;

	if (n == 0 || n >= OVRDMA_NL_NAME_MAX || name[0] == '.' ||
	    memchr(name, '/', n))
		return false;
	yes = snprintf(path, sizeof(path),
		       "%s/class/infiniband/%.*s/ovrdma_socket",
		       ovrdma_where.tree, (int)n, name) < (int)sizeof(path) &&
	      NEXT(access)(path, F_OK) == 0 &&
	      snprintf(path, sizeof(path), "%s/class/infiniband/%.*s",
		       ovrdma_where.sys, (int)n, name) < (int)sizeof(path) &&
	      NEXT(access)(path, F_OK) != 0;
	errno = e;
	return yes;
}

/* @name's place among the tree's devices in name order (ovrdma2 before
 * ovrdma10). */
static unsigned int dev_index(const char *name)
{
	char dir[PATH_MAX], (*names)[OVRDMA_NL_NAME_MAX];
	unsigned int n = 0, k = 0;
	struct dirent *e;
	DIR *d;

	if (snprintf(dir, sizeof(dir), "%s/class/infiniband",
		     ovrdma_where.tree) >= (int)sizeof(dir))
		return 0;
	names = malloc(PCI_LIST_MAX * sizeof(*names));
	d = names ? NEXT(opendir)(dir) : NULL;
	while (d && n < PCI_LIST_MAX && (e = readdir(d)))
		if (strlen(e->d_name) < OVRDMA_NL_NAME_MAX &&
		    tree_dev(e->d_name, strlen(e->d_name)))
			strcpy(names[n++], e->d_name);
	if (d)
		closedir(d);
	if (names) {
		qsort(names, n, sizeof(names[0]), by_version);
		while (k < n && strcmp(names[k], name) != 0)
			k++;
	}
	free(names);
	return k < n ? k : 0;
}

/*
 * The function the device of index @k sits next to, into @gpu and
 * @parent (PATH_MAX each), and its PCI domain. No lock held: this may
 * call into CUDA.
 */
static int find_anchor(unsigned int k, unsigned int *domain, char *gpu,
		       char *parent)
{
	const char *want = getenv("OVRDMA_NCCL_PCI");
	char(*gpus)[PCI_BDF_LEN];
	unsigned int d, b, v, f, n;
	char id[64], path[PATH_MAX];
	char *slash;

	if (want && strcmp(want, "none") == 0)
		return -ENOENT;
	if (want && *want) {
		if (strlen(want) >= sizeof(id))
			return -EINVAL;
		strcpy(id, want);
	} else {
		if (!cuda_current())
			return -ENOENT;
		gpus = malloc(PCI_LIST_MAX * sizeof(*gpus));
		if (!gpus)
			return -ENOMEM;
		n = host_gpus(gpus);
		if (n)
			strcpy(id, gpus[k % n]);
		free(gpus);
		if (!n)
			return -ENODEV;
	}
	if (!parse_bdf(id, &d, &b, &v, &f))
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s/bus/pci/devices/%04x:%02x:%02x.%x",
		     ovrdma_where.sys, d, b, v, f) >= (int)sizeof(path) ||
	    !NEXT(realpath)(path, gpu))
		return -ENOENT;
	slash = strrchr(gpu, '/');
	if (!slash || slash == gpu)
		return -ENOENT;
	memcpy(parent, gpu, (size_t)(slash - gpu));
	parent[slash - gpu] = 0;
	*domain = d;
	return 0;
}

/* The index of device @name's function, or -1; must hold pci_mu */
static int fn_find(const char *name, size_t n)
{
	for (unsigned int i = 0; i < pci.n; i++)
		if (strlen(pci.fn[i].name) == n &&
		    strncmp(pci.fn[i].name, name, n) == 0)
			return (int)i;
	return -1;
}

/* The function of device @name (length @n), made now if it has none
 * and it has a GPU to sit next to; its index, or -1. */
static int fn_of(const char *name, size_t n)
{
	char gpu[PATH_MAX], parent[PATH_MAX], path[PATH_MAX];
	char copy[OVRDMA_NL_NAME_MAX];
	unsigned int domain = 0, k, skip;
	struct pci_fn *fn;
	int found, e = errno;
	bool used;

	pthread_mutex_lock(&pci_mu);
	found = fn_find(name, n);
	pthread_mutex_unlock(&pci_mu);
	if (found >= 0)
		return found;
	snprintf(copy, sizeof(copy), "%.*s", (int)n, name);
	k = dev_index(copy);
	skip = k;
	if (find_anchor(k, &domain, gpu, parent) != 0) {
		errno = e;
		return -1;
	}
	pthread_mutex_lock(&pci_mu);
	/* another thread may have made it meanwhile */
	found = fn_find(name, n);
	/*
	 * A bus the kernel does not have, from the top down: the device's
	 * k-th, so that every process of the host gives it the same one
	 * whatever the order of the questions (another function on it: the
	 * next free one, the tree changed meanwhile).
	 */
	for (unsigned int b = 0xff; found < 0 && pci.n < PCI_FNS_MAX && b > 0;
	     b--) {
		char bus[sizeof(pci.fn[0].bus)];

		snprintf(bus, sizeof(bus), "%04x:%02x", domain, b);
		if (snprintf(path, sizeof(path), "%s/class/pci_bus/%s",
			     ovrdma_where.sys, bus) >= (int)sizeof(path) ||
		    NEXT(access)(path, F_OK) == 0)
			continue;
		if (skip) {
			skip--;
			continue;
		}
		used = false;
		for (unsigned int i = 0; i < pci.n; i++)
			used |= strcmp(pci.fn[i].bus, bus) == 0;
		if (used)
			continue;
		found = (int)pci.n;
		fn = &pci.fn[found];
		strcpy(fn->name, copy);
		strcpy(fn->bus, bus);
		snprintf(fn->bdf, sizeof(fn->bdf), "%s:00.0", bus);
		strcpy(fn->gpu, gpu);
		strcpy(fn->parent, parent);
		pci.n++;
		__atomic_store_n(&pci_fns, pci.n, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&pci_mu);
	errno = e;
	return found;
}

/* The function whose bus id is the first @n bytes of @bdf (any case). */
static int fn_by_bdf(const char *bdf, size_t n)
{
	int found = -1;

	if (n != PCI_BDF_LEN - 1)
		return -1;
	pthread_mutex_lock(&pci_mu);
	for (int i = 0; i < (int)pci.n && found < 0; i++)
		if (strncasecmp(pci.fn[i].bdf, bdf, n) == 0)
			found = i;
	pthread_mutex_unlock(&pci_mu);
	return found;
}

/* @path as a function's directory F: "F" or "F/rest"; the rest, and
 * the function in *@i. */
static const char *under_fn(const char *path, int *i)
{
	unsigned int n = __atomic_load_n(&pci_fns, __ATOMIC_ACQUIRE);
	const char *r;

	for (unsigned int k = 0; k < n; k++) {
		r = after(path, pci.fn[k].parent);
		if (r && strncmp(r, pci.fn[k].bdf, PCI_BDF_LEN - 1) == 0 &&
		    (r[PCI_BDF_LEN - 1] == 0 || r[PCI_BDF_LEN - 1] == '/')) {
			*i = (int)k;
			return r + PCI_BDF_LEN - 1;
		}
	}
	return NULL;
}

/*
 * Which function @path names, and the rest of it after the function's
 * directory ("" or "/..."): the forms in the header. -1 when none.
 */
static int match(const char *path, const char **rest)
{
	const char *r, *end;
	int i;

	if (!path || path[0] != '/')
		return -1;
	r = after(path, ovrdma_where.sys);
	if (r && strncmp(r, "class/infiniband/", 17) == 0) {
		r += 17;
		end = strchrnul(r, '/');
		if (strncmp(end, "/device", 7) != 0 ||
		    (end[7] != 0 && end[7] != '/') ||
		    !tree_dev(r, (size_t)(end - r)))
			return -1;
		/* device/net/: the tree's (its netdev), not the function's */
		if (strncmp(end + 7, "/net", 4) == 0 &&
		    (end[11] == 0 || end[11] == '/'))
			return -1;
		i = fn_of(r, (size_t)(end - r));
		*rest = end + 7;
		return i;
	}
	if (!__atomic_load_n(&pci_fns, __ATOMIC_ACQUIRE))
		return -1;
	if (r && strncmp(r, "class/pci_bus/", 14) == 0) {
		/* D:B/../../D:B:dd.f, as NCCL's getPciPath writes it */
		r += 14;
		end = strchrnul(r, '/');
		if (strncmp(end, "/../../", 7) != 0)
			return -1;
		i = fn_by_bdf(end + 7, strcspn(end + 7, "/"));
		if (i < 0 || strncasecmp(r, pci.fn[i].bus, (size_t)(end - r)) ||
		    end - r != 7)
			return -1;
		*rest = end + 7 + PCI_BDF_LEN - 1;
		return i;
	}
	if (r && strncmp(r, "bus/pci/devices/", 16) == 0) {
		r += 16;
		i = fn_by_bdf(r, strcspn(r, "/"));
		if (i >= 0)
			*rest = r + PCI_BDF_LEN - 1;
		return i;
	}
	r = under_fn(path, &i);
	if (!r)
		return -1;
	*rest = r;
	return i;
}

/* The files of a function made here, and those it shares with the GPU */
static const struct {
	const char *name, *data;
} made[] = {
	{ "class", "0x020000\n" }, /* Ethernet controller: RoCE-like */
	{ "vendor", "0x0000\n" }, /* a software device: no vendor */
	{ "device", "0x0000\n" }, /* nor a device id */
	{ "subsystem_vendor", "0x0000\n" }, /* nor a subsystem */
	{ "subsystem_device", "0x0000\n" },
};
static const char *const gpus[] = {
	"max_link_speed", /* NCCL: the link's bandwidth, with ".." */
	"max_link_width", /* the same */
	"current_link_speed", /* what lspci-like readers want */
	"current_link_width", /* the same */
	"numa_node", /* NCCL: the CPU above a root port */
	"local_cpus", /* the GPU's CPUs */
	"local_cpulist", /* the same, as a list */
};

int ovrdma_pci_file(const char *path, char *buf, size_t cap, const char **data)
{
	const struct pci_fn *fn;
	const char *rest;
	int i = match(path, &rest);
	int e = errno;

	if (i < 0)
		return OVRDMA_PCI_NONE;
	fn = &pci.fn[i];
	if (rest[0] == 0 || strcmp(rest, "/") == 0) {
		/* a directory that exists: the GPU's */
		snprintf(buf, cap, "%s", fn->gpu);
		return strlen(fn->gpu) < cap ? OVRDMA_PCI_DIR : OVRDMA_PCI_ERR;
	}
	if (strncmp(rest, "/../", 4) == 0) {
		if (snprintf(buf, cap, "%s/%s", fn->parent, rest + 4) >=
		    (int)cap) {
			errno = ENAMETOOLONG;
			return OVRDMA_PCI_ERR;
		}
		errno = e;
		return OVRDMA_PCI_REAL;
	}
	for (size_t k = 0; k < sizeof(made) / sizeof(made[0]); k++)
		if (strcmp(rest + 1, made[k].name) == 0) {
			*data = made[k].data;
			return OVRDMA_PCI_DATA;
		}
	for (size_t k = 0; k < sizeof(gpus) / sizeof(gpus[0]); k++)
		if (strcmp(rest + 1, gpus[k]) == 0) {
			if (snprintf(buf, cap, "%s/%s", fn->gpu, gpus[k]) >=
			    (int)cap) {
				errno = ENAMETOOLONG;
				return OVRDMA_PCI_ERR;
			}
			return OVRDMA_PCI_REAL;
		}
	errno = ENOENT;
	return OVRDMA_PCI_ERR;
}

/* realpath of one of ours into @out (PATH_MAX): 1; not ours: 0; an
 * error: -1 and errno. */
static int answer(const char *path, char *out)
{
	const char *rest, *data;
	char buf[PATH_MAX];
	int i = match(path, &rest), n;

	if (i < 0)
		return 0;
	if (strcmp(rest, "/subsystem") == 0)
		n = snprintf(out, PATH_MAX, "%s/bus/pci", ovrdma_where.sys);
	else if (strncmp(rest, "/../", 4) == 0 || strcmp(rest, "/..") == 0) {
		n = snprintf(buf, sizeof(buf), "%s%s", pci.fn[i].parent,
			     rest + 3);
		if (n >= (int)sizeof(buf)) {
			errno = ENAMETOOLONG;
			return -1;
		}
		return NEXT(realpath)(buf, out) ? 1 : -1;
	} else {
		switch (ovrdma_pci_file(path, buf, sizeof(buf), &data)) {
		case OVRDMA_PCI_DIR:
			rest = "";
			break;
		case OVRDMA_PCI_DATA:
		case OVRDMA_PCI_REAL:
			break;
		default:
			return -1;
		}
		n = snprintf(out, PATH_MAX, "%s/%s%s", pci.fn[i].parent,
			     pci.fn[i].bdf, rest);
	}
	if (n >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 1;
}

#define EXPORT __attribute__((visibility("default")))

EXPORT char *realpath(const char *path, char *resolved)
{
	char out[PATH_MAX];
	int rc = answer(path, out);

	if (rc == 0)
		return NEXT(realpath)(path, resolved);
	if (rc < 0)
		return NULL;
	if (resolved)
		return strcpy(resolved, out);
	return strdup(out);
}

/* _FORTIFY_SOURCE's entry point, where the caller's buffer size is
 * known: glibc's checks the size (and aborts below PATH_MAX) */
EXPORT char *__realpath_chk(const char *path, char *resolved, size_t len)
{
	char out[PATH_MAX];
	int rc = len < PATH_MAX ? 0 : answer(path, out);

	if (rc == 0)
		return NEXT(__realpath_chk)(path, resolved, len);
	if (rc < 0)
		return NULL;
	return strcpy(resolved, out);
}

EXPORT char *canonicalize_file_name(const char *path)
{
	return realpath(path, NULL);
}
