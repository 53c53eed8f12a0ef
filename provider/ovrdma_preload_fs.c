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
 * have and the tree does. Everything else, the kernel's devices
 * included, is opened as asked.
 *
 * Covered: open, openat, fopen, stat, lstat, access, opendir (and their
 * 64-bit and _FORTIFY_SOURCE entry points): what libibverbs, the
 * provider, UCX and NCCL use to read sysfs files. Not covered: readlink,
 * statx, fstatat, and listing <root>/class/infiniband, which shows the
 * kernel's devices only.
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
	*next_lstat64, *next_access, *next_opendir;

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
	if (!ovrdma_where.redirect)
		return path;
	rest = under(path, ovrdma_where.root);
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
	return NEXT(open)(redirect(path, buf, sizeof(buf)), flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	char buf[PATH_MAX];
	mode_t mode = 0;

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	MODE_ARG(flags, mode);
	return NEXT(open64)(redirect(path, buf, sizeof(buf)), flags, mode);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	char buf[PATH_MAX];
	mode_t mode = 0;

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	MODE_ARG(flags, mode);
	return NEXT(openat)(dirfd, redirect(path, buf, sizeof(buf)), flags,
			    mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	char buf[PATH_MAX];
	mode_t mode = 0;

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	MODE_ARG(flags, mode);
	return NEXT(openat64)(dirfd, redirect(path, buf, sizeof(buf)), flags,
			      mode);
}

EXPORT int __open_2(const char *path, int flags)
{
	char buf[PATH_MAX];

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	return NEXT(__open_2)(redirect(path, buf, sizeof(buf)), flags);
}

EXPORT int __open64_2(const char *path, int flags)
{
	char buf[PATH_MAX];

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	return NEXT(__open64_2)(redirect(path, buf, sizeof(buf)), flags);
}

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	char buf[PATH_MAX];

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	return NEXT(__openat_2)(dirfd, redirect(path, buf, sizeof(buf)), flags);
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	char buf[PATH_MAX];

	if (ovrdma_cm_is_dev(path))
		return ovrdma_cm_open(flags);
	PCI_OPEN(path, flags);

	return NEXT(__openat64_2)(dirfd, redirect(path, buf, sizeof(buf)),
				  flags);
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
	return NEXT(fopen)(redirect(path, buf, sizeof(buf)), mode);
}

EXPORT FILE *fopen64(const char *path, const char *mode)
{
	char buf[PATH_MAX];
	FILE *f;

	if (pci_fopen(path, mode, &f))
		return f;
	return NEXT(fopen64)(redirect(path, buf, sizeof(buf)), mode);
}

EXPORT int stat(const char *path, struct stat *st)
{
	char buf[PATH_MAX];

	PCI_STAT(path, st, fstat);

	return NEXT(stat)(redirect(path, buf, sizeof(buf)), st);
}

EXPORT int stat64(const char *path, struct stat64 *st)
{
	char buf[PATH_MAX];

	PCI_STAT(path, st, fstat64);

	return NEXT(stat64)(redirect(path, buf, sizeof(buf)), st);
}

EXPORT int lstat(const char *path, struct stat *st)
{
	char buf[PATH_MAX];

	PCI_STAT(path, st, fstat);

	return NEXT(lstat)(redirect(path, buf, sizeof(buf)), st);
}

EXPORT int lstat64(const char *path, struct stat64 *st)
{
	char buf[PATH_MAX];

	PCI_STAT(path, st, fstat64);

	return NEXT(lstat64)(redirect(path, buf, sizeof(buf)), st);
}

EXPORT int access(const char *path, int how)
{
	char buf[PATH_MAX];
	int fd = pci_data(path, how & W_OK ? O_RDWR : O_RDONLY | O_CLOEXEC);

	if (fd == -1)
		return -1;
	if (fd >= 0)
		return close(fd);

	return NEXT(access)(redirect(path, buf, sizeof(buf)), how);
}

EXPORT DIR *opendir(const char *path)
{
	char buf[PATH_MAX];

	return NEXT(opendir)(redirect(path, buf, sizeof(buf)));
}
