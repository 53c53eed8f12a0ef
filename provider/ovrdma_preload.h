/* SPDX-License-Identifier: MIT */
/*
 * The interposer's pieces (libovrdma-preload.so, docs/PROVIDER.md):
 *   ovrdma_preload.c     completion channels; where the devices are
 *                        (the tree, libibverbs' sysfs root), decided once
 *                        in the constructor; the tree's devices read
 *   ovrdma_preload_nl.c  NETLINK_RDMA sockets: ovrdma's devices in the
 *                        kernel's answers (ovrdma_nl.c)
 *   ovrdma_preload_fs.c  the tree's files under libibverbs' sysfs root,
 *                        for devices found through netlink
 *   ovrdma_preload_cm.c  librdmacm's rdma_cm device: the ucma commands,
 *                        carried to ovrdmad's connection manager
 *   ovrdma_preload_pci.c a PCI function for each ovrdma device, next to
 *                        the process's GPU (NCCL's topology)
 */
#ifndef OVRDMA_PRELOAD_H
#define OVRDMA_PRELOAD_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "ovrdma_nl.h"

/*
 * Set by the constructor, before main() and before any thread, then
 * only read.
 */
struct ovrdma_where {
	/* ovrdmad's tree: $OVRDMA_SYSFS, else $SYSFS_PATH, else the
	 * service's default; no trailing slash */
	char tree[PATH_MAX];
	/* libibverbs' sysfs root: $SYSFS_PATH as the constructor leaves
	 * it, else /sys */
	char root[PATH_MAX];
	/* root is not the tree: the files of devices announced through
	 * netlink are served from the tree (ovrdma_preload_fs.c) */
	bool redirect;
	/* the kernel's sysfs, where the PCI functions are placed
	 * (ovrdma_preload_pci.c): /sys, or $OVRDMA_SYS_ROOT (tests) */
	char sys[PATH_MAX];
};

extern struct ovrdma_where ovrdma_where;

/* Reads the devices of the tree (indices not yet assigned). */
void ovrdma_tree_devs(struct ovrdma_nl_devs *devs);

/* The next definition of @name after the interposer's (libc's, or a
 * test's stand-in): dlsym(RTLD_NEXT), resolved once. */
void *ovrdma_next(void **slot, const char *name);

#define NEXT(fn) ((__typeof__(&fn))ovrdma_next(&next_##fn, #fn))

/* Each file's NEXT()s, resolved in the constructor: before main(), not
 * in the middle of a call (a malloc that opens files while it starts,
 * as jemalloc's, would meet dlsym's own allocation). */
void ovrdma_fs_resolve(void);
void ovrdma_cm_resolve(void);

/* rdma_cm (ovrdma_preload_cm.c): is @path librdmacm's device; open it
 * (an fd, or -1 and errno); forget the channel on @fd if it is one
 * (close() calls it before closing the fd). */
bool ovrdma_cm_is_dev(const char *path);
int ovrdma_cm_open(int flags);
void ovrdma_cm_close(int fd);
void ovrdma_nl_resolve(void);
void ovrdma_pci_resolve(void);

/*
 * ovrdma_preload_pci.c: is @path a file of an ovrdma device's PCI
 * function? NONE: no, pass it on; DIR: the function's directory; REAL:
 * open @buf instead (the GPU's or the parent's file); DATA: its content
 * is *@data; ERR: fail with errno (no such file, too long).
 */
enum {
	OVRDMA_PCI_NONE,
	OVRDMA_PCI_DIR,
	OVRDMA_PCI_REAL,
	OVRDMA_PCI_DATA,
	OVRDMA_PCI_ERR,
};
int ovrdma_pci_file(const char *path, char *buf, size_t cap, const char **data);

#endif /* OVRDMA_PRELOAD_H */
