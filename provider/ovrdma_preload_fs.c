// SPDX-License-Identifier: MIT
/*
 * The tree's files under libibverbs' sysfs root (docs/PROVIDER.md,
 * "Discovery beside the kernel's RDMA stack").
 *
 * For a device it finds through netlink, libibverbs makes the paths
 * <root>/class/infiniband/<name> (ibdev_path: the provider's
 * ovrdma_socket, GIDs, GID types, P_Keys are read under it) and
 * <root>/class/infiniband_verbs/<uverbs> (dev_path), root being
 * SYSFS_PATH or /sys. Where the kernel has RDMA devices that root is
 * /sys (ovrdma_preload.c), and an ovrdma device's directory exists only
 * in ovrdmad's tree: these overrides open the tree's file instead, for
 * paths under <root> or /sys whose device directory the kernel does not
 * have and the tree does. Where it has none (SYSFS_PATH is the tree),
 * paths under /sys are served the same way: programs that read
 * /sys/class/infiniband/<dev>/... by that name (UCX, rdma-core's tests:
 * the GID type, device/net/<netdev>) find the tree's files. Everything
 * else, the kernel's devices included, is opened as asked.
 *
 * A GID's netdev (ports/P/gid_attrs/ndevs/N, the interface holding the
 * vIP in ovrdmad's network namespace) is hidden (ENOENT) from a program
 * in a namespace without an interface of that name: libibverbs'
 * ibv_query_gid_ex fails with if_nametoindex's error where the name
 * does not resolve, and reports ndev_ifindex 0 where the file is absent.
 *
 * Covered: open, openat, fopen, stat, lstat, statx, access, opendir (and
 * their 64-bit and _FORTIFY_SOURCE entry points): what libibverbs, the
 * provider, UCX, NCCL and ls use to read sysfs files. Not covered:
 * readlink, fstatat, and listing <root>/class/infiniband, which shows
 * the kernel's devices only.
 *
 * The same calls serve the files of an ovrdma device's PCI function
 * (ovrdma_preload_pci.c, where realpath is answered): the GPU's or the
 * parent's file opened instead, or the few made here (class, vendor,
 * ...) from a memfd.
 */
/* our own symbols are the plain and the 64-bit names, both */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ovrdma_preload.h"

/* glibc's _FORTIFY_SOURCE entry points (<bits/fcntl2.h>) */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

static void *next_open, *next_open64, *next_openat, *next_openat64,
	*next___open_2, *next___open64_2, *next___openat_2, *next___openat64_2,
	*next_fopen, *next_fopen64, *next_stat, *next_stat64, *next_lstat,
	*next_lstat64, *next_statx, *next_access, *next_opendir;

void ovrdma_fs_resolve(void)
{
	NEXT(open);
	NEXT(open64);
	NEXT(openat);
	NEXT(openat64);
	NEXT(__open_2);
	NEXT(__open64_2);
	NEXT(__openat_2);
	NEXT(__openat64_2);
	NEXT(fopen);
	NEXT(fopen64);
	NEXT(stat);
	NEXT(stat64);
	NEXT(lstat);
	NEXT(lstat64);
	NEXT(statx);
	NEXT(access);
	NEXT(opendir);
}

/* What follows "@prefix/" in @path, or NULL. */
static const char *under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(path, prefix, n) != 0 || path[n] != '/')
		return NULL;
	return path + n + 1;
}

/*
 * @path in the tree, written into @buf, or @path itself: when it is
 * <root or /sys>/class/{infiniband,infiniband_verbs}/<dir>[/...] and
 * <dir> is the tree's and not the kernel's.
 */
static const char *redirect(const char *path, char *buf, size_t cap)
{
	static const char *const classes[] = { "infiniband",
					       "infiniband_verbs" };
	const char *rest, *comp = NULL, *cls = NULL, *end;
	size_t n;
	int e;

	if (!path || path[0] != '/')
		return path;
	e = errno;
	switch (ovrdma_pci_file(path, buf, cap, &rest)) {
	case OVRDMA_PCI_DIR:
	case OVRDMA_PCI_REAL:
		errno = e;
		return buf;
	case OVRDMA_PCI_NONE:
		break;
	default:
		/* a made file (the caller took it: pci_data) or none: the
		 * kernel's ENOENT for the path that does not exist */
		errno = e;
		return path;
	}
	/* without redirection <root> is the tree itself */
	rest = ovrdma_where.redirect ? under(path, ovrdma_where.root) : NULL;
	if (!rest)
		rest = under(path, "/sys");
	if (!rest || strncmp(rest, "class/infiniband", 16) != 0)
		return path;
	for (unsigned int i = 0; i < 2 && !comp; i++) {
		n = strlen(classes[i]);
		if (strncmp(rest + 6, classes[i], n) == 0 &&
		    rest[6 + n] == '/') {
			cls = classes[i];
			comp = rest + 6 + n + 1;
		}
	}
	if (!comp)
		return path;
	end = strchrnul(comp, '/');
	n = (size_t)(end - comp);
	if (n == 0 || n >= OVRDMA_NL_NAME_MAX || comp[0] == '.')
		return path;
	e = errno;
	/* the kernel's own directory of that name: its files */
	if (snprintf(buf, cap, "%.*s", (int)(end - path), path) < (int)cap &&
	    NEXT(access)(buf, F_OK) == 0) {
		errno = e;
		return path;
	}
	if (snprintf(buf, cap, "%s/class/%s/%.*s", ovrdma_where.tree, cls,
		     (int)n, comp) >= (int)cap ||
	    NEXT(access)(buf, F_OK) != 0 ||
	    snprintf(buf, cap, "%s/class/%s/%s", ovrdma_where.tree, cls,
		     comp) >= (int)cap) {
		errno = e;
		return path;
	}
	errno = e;
	return buf;
}

/* Is @path a GID's netdev file of the tree (ports/P/gid_attrs/ndevs/N)
 * naming an interface this process' network namespace does not have? */
static bool ndev_elsewhere(const char *path)
{
	const char *rest = under(path, ovrdma_where.tree);
	char name[IF_NAMESIZE + 1];
	ssize_t n;
	int fd, e = errno;
	bool hide;

	if (!rest || strncmp(rest, "class/infiniband/", 17) != 0 ||
	    !strstr(rest, "/gid_attrs/ndevs/"))
		return false;
	fd = NEXT(open)(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		errno = e;
		return false;
	}
	n = read(fd, name, sizeof(name) - 1);
	close(fd);
	name[n > 0 ? n : 0] = 0;
	name[strcspn(name, "\n")] = 0;
	hide = name[0] && if_nametoindex(name) == 0;
	errno = e;
	return hide;
}

/* *@path becomes the path to open (redirect(), in @buf or itself);
 * false, errno ENOENT, for a netdev file hidden (ndev_elsewhere). */
static bool resolve(const char **path, char *buf, size_t cap)
{
	*path = redirect(*path, buf, cap);
	if (*path && (*path)[0] == '/' && ndev_elsewhere(*path)) {
		errno = ENOENT;
		return false;
	}
	return true;
}

/*
 * A file of an ovrdma device's PCI function made here (class, vendor,
 * ...): a memfd holding its content, read-only as sysfs' files are;
 * -2 when @path is not one (errno kept).
 */
static int pci_data(const char *path, int flags)
{
	char buf[PATH_MAX];
	const char *data;
	size_t n;
	int fd, e = errno;

	if (!path || path[0] != '/' ||
	    ovrdma_pci_file(path, buf, sizeof(buf), &data) != OVRDMA_PCI_DATA) {
		errno = e;
		return -2;
	}
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC))) {
		errno = EACCES;
		return -1;
	}
	fd = memfd_create("ovrdma-pci", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
	if (fd < 0)
		return -1;
	n = strlen(data);
	if (write(fd, data, n) != (ssize_t)n || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		errno = EIO;
		return -1;
	}
	errno = e;
	return fd;
}

/* fopen's mode as open's flags: only reading is allowed (EACCES) */
static int fopen_flags(const char *mode)
{
	if (!mode || strpbrk(mode, "wa+"))
		return O_RDWR;
	return O_RDONLY | (strchr(mode, 'e') ? O_CLOEXEC : 0);
}

/* a made file in a stat or access call: its memfd's, or -2 */
#define PCI_STAT(path, st, fstatfn)                             \
	do {                                                    \
		int fd_ = pci_data(path, O_RDONLY | O_CLOEXEC); \
		if (fd_ == -1)                                  \
			return -1;                              \
		if (fd_ >= 0) {                                 \
			int rc_ = fstatfn(fd_, st);             \
			close(fd_);                             \
			if (rc_ == 0)                           \
				(st)->st_mode = S_IFREG | 0444; \
			return rc_;                             \
		}                                               \
	} while (0)

/* a made file opened: its memfd (or the error) */
#define PCI_OPEN(path, flags)                    \
	do {                                     \
		int fd_ = pci_data(path, flags); \
		if (fd_ != -2)                   \
			return fd_;              \
	} while (0)

/* open(2) takes a mode only with O_CREAT or O_TMPFILE (as glibc reads
 * its variadic argument). */
#define MODE_ARG(flags, mode)                                                \
	do {                                                                 \
		if (((flags)&O_CREAT) || ((flags)&O_TMPFILE) == O_TMPFILE) { \
			va_list ap_;                                         \
			va_start(ap_, flags);                                \
			mode = va_arg(ap_, mode_t);                          \
			va_end(ap_);                                         \
		}                                                            \
	} while (0)

#define EXPORT __attribute__((visibility("default")))

EXPORT int open(const char *path, int flags, ...)
{
	char buf[PATH_MAX];
	mode_t mode = 0;

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	MODE_ARG(flags, mode);
	if (!resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(open)(path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	char buf[PATH_MAX];
	mode_t mode = 0;

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	MODE_ARG(flags, mode);
	if (!resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(open64)(path, flags, mode);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	char buf[PATH_MAX];
	mode_t mode = 0;

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	MODE_ARG(flags, mode);
	if (!resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(openat)(dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	char buf[PATH_MAX];
	mode_t mode = 0;

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	MODE_ARG(flags, mode);
	if (!resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(openat64)(dirfd, path, flags, mode);
}

EXPORT int __open_2(const char *path, int flags)
{
	char buf[PATH_MAX];

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	if (!resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(__open_2)(path, flags);
}

EXPORT int __open64_2(const char *path, int flags)
{
	char buf[PATH_MAX];

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	if (!resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(__open64_2)(path, flags);
}

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	char buf[PATH_MAX];

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	if (!resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(__openat_2)(dirfd, path, flags);
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	char buf[PATH_MAX];

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	if (!resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(__openat64_2)(dirfd, path, flags);
}

/* A made file (pci_data) as a stream: true when @path is one, *@f
 * then the stream or NULL with errno; false when it is not one. */
static bool pci_fopen(const char *path, const char *mode, FILE **f)
{
	int fd = pci_data(path, fopen_flags(mode));

	if (fd == -2)
		return false;
	*f = fd >= 0 ? fdopen(fd, mode) : NULL;
	if (fd >= 0 && !*f)
		close(fd);
	return true;
}

EXPORT FILE *fopen(const char *path, const char *mode)
{
	char buf[PATH_MAX];
	FILE *f;

	if (pci_fopen(path, mode, &f))
		return f;
	if (!resolve(&path, buf, sizeof(buf)))
		return NULL;
	return NEXT(fopen)(path, mode);
}

EXPORT FILE *fopen64(const char *path, const char *mode)
{
	char buf[PATH_MAX];
	FILE *f;

	if (pci_fopen(path, mode, &f))
		return f;
	if (!resolve(&path, buf, sizeof(buf)))
		return NULL;
	return NEXT(fopen64)(path, mode);
}

EXPORT int stat(const char *path, struct stat *st)
{
	char buf[PATH_MAX];

	PCI_STAT(path, st, fstat);

	if (!resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(stat)(path, st);
}

EXPORT int stat64(const char *path, struct stat64 *st)
{
	char buf[PATH_MAX];

	PCI_STAT(path, st, fstat64);

	if (!resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(stat64)(path, st);
}

EXPORT int lstat(const char *path, struct stat *st)
{
	char buf[PATH_MAX];

	PCI_STAT(path, st, fstat);

	if (!resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(lstat)(path, st);
}

EXPORT int lstat64(const char *path, struct stat64 *st)
{
	char buf[PATH_MAX];

	PCI_STAT(path, st, fstat64);

	if (!resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(lstat64)(path, st);
}

/* An absolute path (statx's path is declared nonnull, but Linux 6.11 on
 * takes NULL with AT_EMPTY_PATH: checked here, out of that declaration's
 * sight) */
static bool absolute(const char *path)
{
	return path && path[0] == '/';
}

/* coreutils' ls and stat (9.x) look with statx. Paths relative to a
 * directory fd are passed as they are. */
EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask,
		 struct statx *stx)
{
	char buf[PATH_MAX];

	if (absolute(path)) {
		int fd = pci_data(path, O_RDONLY | O_CLOEXEC);

		if (fd == -1)
			return -1;
		if (fd >= 0) {
			int rc = NEXT(statx)(fd, "", AT_EMPTY_PATH, mask, stx);

			close(fd);
			if (rc == 0)
				stx->stx_mode = S_IFREG | 0444;
			return rc;
		}
	}
	if (absolute(path) && !resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(statx)(dirfd, path, flags, mask, stx);
}

EXPORT int access(const char *path, int how)
{
	char buf[PATH_MAX];
	int fd = pci_data(path, how & W_OK ? O_RDWR : O_RDONLY | O_CLOEXEC);

	if (fd == -1)
		return -1;
	if (fd >= 0)
		return close(fd);

	if (!resolve(&path, buf, sizeof(buf)))
		return -1;
	return NEXT(access)(path, how);
}

EXPORT DIR *opendir(const char *path)
{
	char buf[PATH_MAX];

	if (!resolve(&path, buf, sizeof(buf)))
		return NULL;
	return NEXT(opendir)(path);
}
