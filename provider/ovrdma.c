// SPDX-License-Identifier: MIT
/*
 * libovrdma-rdmav<PABI>.so: the ovrdma verbs provider, registration and
 * device/context objects (docs/PROVIDER.md). libibverbs loads it through
 * /etc/libibverbs.d/ovrdma.driver or RDMAV_DRIVERS; its constructor
 * checks the libibverbs it was loaded into and registers; the devices
 * are the ones ovrdmad publishes in the synthetic sysfs tree (their
 * directory names the service's socket in ovrdma_socket).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ovrdma.h"
#include "ovrdma_verbs.h"

static void ovrdma_free_context(struct ibv_context *ibctx);

/* The verbs (ovrdma_verbs.h); libibverbs answers the others with
 * EOPNOTSUPP (or ENOSYS). */
static const struct verbs_context_ops ovrdma_ctx_ops = {
	.advise_mr = ovrdma_advise_mr,
	.alloc_mw = ovrdma_alloc_mw,
	.alloc_parent_domain = ovrdma_alloc_parent_domain,
	.alloc_pd = ovrdma_alloc_pd,
	.alloc_td = ovrdma_alloc_td,
	.attach_mcast = ovrdma_attach_mcast,
	.bind_mw = ovrdma_bind_mw,
	.create_ah = ovrdma_create_ah,
	.create_cq = ovrdma_create_cq,
	.create_cq_ex = ovrdma_create_cq_ex,
	.create_qp = ovrdma_create_qp,
	.create_qp_ex = ovrdma_create_qp_ex,
	.create_srq = ovrdma_create_srq,
	.dealloc_mw = ovrdma_dealloc_mw,
	.dealloc_pd = ovrdma_dealloc_pd,
	.dealloc_td = ovrdma_dealloc_td,
	.dereg_mr = ovrdma_dereg_mr,
	.detach_mcast = ovrdma_detach_mcast,
	.destroy_ah = ovrdma_destroy_ah,
	.destroy_cq = ovrdma_destroy_cq,
	.destroy_qp = ovrdma_destroy_qp,
	.destroy_srq = ovrdma_destroy_srq,
	.free_context = ovrdma_free_context,
	.modify_qp = ovrdma_modify_qp,
	.modify_srq = ovrdma_modify_srq,
	.poll_cq = ovrdma_poll_cq,
	.post_recv = ovrdma_post_recv,
	.post_send = ovrdma_post_send,
	.post_srq_recv = ovrdma_post_srq_recv,
	.query_device_ex = ovrdma_query_device_ex,
	.query_port = ovrdma_query_port,
	.query_qp = ovrdma_query_qp,
	.query_rt_values = ovrdma_query_rt_values,
	.query_srq = ovrdma_query_srq,
	.reg_dmabuf_mr = ovrdma_reg_dmabuf_mr,
	.reg_mr = ovrdma_reg_mr,
	.req_notify_cq = ovrdma_req_notify_cq,
	.rereg_mr = ovrdma_rereg_mr,
	.resize_cq = ovrdma_resize_cq,
};

static const struct ovrdma_hooks hooks = {
	.version = OVRDMA_HOOKS_VERSION,
	.create_channel = ovrdma_create_channel,
	.destroy_channel = ovrdma_destroy_channel,
};

/* Reads the one-line file DIR/NAME into @buf without its newline. */
static int read_attr(const char *dir, const char *name, char *buf, size_t cap)
{
	char path[OVRDMA_SYSFS_PATH_MAX + 32];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ENODATA;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* A device is ours when ovrdmad wrote it: its directory names a socket. */
static bool ovrdma_match_device(struct verbs_sysfs_dev *sd)
{
	char sock[PATH_MAX];

	return read_attr(sd->ibdev_path, "ovrdma_socket", sock, sizeof(sock)) ==
	       0;
}

static struct verbs_device *ovrdma_alloc_device(struct verbs_sysfs_dev *sd)
{
	struct ovrdma_device *od = calloc(1, sizeof(*od));

	if (!od)
		return NULL;
	od->magic = OVRDMA_DEVICE_MAGIC;
	od->hooks = &hooks;
	if (read_attr(sd->ibdev_path, "ovrdma_socket", od->socket,
		      sizeof(od->socket)))
		od->socket[0] = 0;
	return &od->vdev;
}

static void ovrdma_uninit_device(struct verbs_device *vd)
{
	struct ovrdma_device *od = container_of(vd, struct ovrdma_device, vdev);

	od->magic = 0;
	free(od);
}

/*
 * cmd_fd is /dev/null opened read-write: libibverbs' kernel-only
 * paths (a uverbs write, as ibv_create_comp_channel without the
 * interposer) would "succeed" on it and leave garbage. Read-only,
 * they fail with EBADF instead. 0 or a positive errno.
 */
static int cmd_fd_read_only(int cmd_fd)
{
	int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int err = 0;

	if (null_fd < 0)
		return errno;
	if (dup3(null_fd, cmd_fd, O_CLOEXEC) < 0)
		err = errno;
	close(null_fd);
	return err;
}

/* The connection to ovrdmad: $OVRDMA_SOCKET, else the socket the device's
 * directory names, else the default. NULL with errno, and a message. */
static struct ovr_cl *connect_service(struct ibv_device *ibdev,
				      const struct ovrdma_device *od)
{
	const char *sock = getenv("OVRDMA_SOCKET");
	struct ovr_cl *cl;
	int err;

	if (!sock || !sock[0])
		sock = od->socket[0] ? od->socket : NULL;
	cl = ovr_cl_connect(sock, program_invocation_short_name);
	if (cl)
		return cl;
	err = errno;
	/* what the application will only report as "failed to open
	 * the device", and what the operator fixes: which socket, why
	 * (docs/OPERATIONS.md, troubleshooting) */
	fprintf(stderr, "ovrdma: %s: cannot reach ovrdmad at %s: %s%s\n",
		ibdev->name, sock ? sock : OVR_CTL_SOCK_DEFAULT, strerror(err),
		err == EACCES ? " (not a member of the socket's group?)" :
		err == EPROTO ? " (ovrdmad and this provider are of "
				"different versions: upgrade both)" :
				"");
	errno = err;
	return NULL;
}

static struct verbs_context *
ovrdma_alloc_context(struct ibv_device *ibdev, int cmd_fd, void *private_data)
{
	struct ovrdma_context *ctx;
	int err, rc;

	(void)private_data;
	ctx = OVRDMA_ALLOC_CONTEXT(ibdev, cmd_fd, struct ovrdma_context, vctx);
	if (!ctx)
		return NULL;
	err = cmd_fd_read_only(cmd_fd);
	if (err)
		goto err_uninit;
	pthread_mutex_init(&ctx->zlock, NULL);
	pthread_mutex_init(&ctx->odp_lock, NULL);
	ctx->cl = connect_service(ibdev, to_odev(ibdev));
	if (!ctx->cl) {
		err = errno;
		goto err_uninit;
	}
	rc = ovr_cl_open(ctx->cl, ibdev->name, &ctx->dev);
	if (rc) {
		err = -rc;
		goto err_close;
	}
	/* libibverbs closes async_fd at close_device: give it its own fd */
	ctx->vctx.context.async_fd =
		fcntl(ovr_cl_async_fd(ctx->cl), F_DUPFD_CLOEXEC, 0);
	if (ctx->vctx.context.async_fd < 0) {
		err = errno;
		goto err_close;
	}
	ctx->vctx.context.num_comp_vectors = (int)ctx->dev.num_comp_vectors;
	verbs_set_ops(&ctx->vctx, &ovrdma_ctx_ops);
	return &ctx->vctx;

err_close:
	ovr_cl_close(ctx->cl);
err_uninit:
	pthread_mutex_destroy(&ctx->odp_lock);
	pthread_mutex_destroy(&ctx->zlock);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = err;
	return NULL;
}

static void ovrdma_free_context(struct ibv_context *ibctx)
{
	struct ovrdma_context *ctx = to_octx(ibctx);

	/* closing the connection makes the service destroy what is left */
	ovr_cl_close(ctx->cl);
	ovrdma_reap(ctx, true);
	pthread_mutex_destroy(&ctx->odp_lock);
	pthread_mutex_destroy(&ctx->zlock);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

/*
 * Empty: a device is ours by ovrdma_match_device(), not by PCI ID, name
 * or driver ID. It must exist all the same: libibverbs (rdma-core 44)
 * walks every provider's table, unchecked, for a device the kernel
 * reports with a driver ID (every kernel device found through netlink),
 * and a NULL table crashed ibv_get_device_list() on hosts with mlx5 or
 * rxe wherever ovrdma's provider was loaded before theirs.
 */
static const struct verbs_match_ent ovrdma_match_table[] = {
	{ .kind = OVRDMA_MATCH_END },
};

static const struct verbs_device_ops ovrdma_dev_ops = {
	.name = OVRDMA_PROVIDER_NAME,
	/* class/infiniband_verbs/X/abi_version is not written: 0 */
	.match_min_abi_version = 0,
	.match_max_abi_version = 0,
	.match_table = ovrdma_match_table,
	.match_device = ovrdma_match_device,
	.alloc_context = ovrdma_alloc_context,
	.alloc_device = ovrdma_alloc_device,
	.uninit_device = ovrdma_uninit_device,
};

/*
 * The rdma-core release of the libibverbs this process runs: its file
 * is libibverbs.so.1.<abi>.<release>[.<minor>] (e.g. 1.14.44.0 for
 * rdma-core 44.0). 0 when it cannot be told.
 */
static int ibverbs_release(char *path, size_t cap)
{
	Dl_info info;
	char *real, *p;
	int rel = 0;

	if (!dladdr((void *)ibv_get_device_list, &info) || !info.dli_fname)
		return 0;
	real = realpath(info.dli_fname, NULL);
	snprintf(path, cap, "%s", real ? real : info.dli_fname);
	p = strstr(path, ".so.1.");
	if (p) {
		unsigned int abi, r;

		if (sscanf(p, ".so.1.%u.%u", &abi, &r) == 2)
			rel = (int)r;
	}
	free(real);
	return rel;
}

static __attribute__((constructor)) void ovrdma_register(void)
{
	char path[PATH_MAX] = "libibverbs";
	int rel = ibverbs_release(path, sizeof(path));

	if (rel < OVRDMA_IBVERBS_MIN || rel > OVRDMA_IBVERBS_MAX) {
		fprintf(stderr,
			"ovrdma: %s is %s%d; this provider declares the "
			"private ABI of rdma-core %d..%d and stays out "
			"(no ovrdma device): rebuild it for this "
			"libibverbs\n",
			path, rel ? "rdma-core " : "of unknown release ", rel,
			OVRDMA_IBVERBS_MIN, OVRDMA_IBVERBS_MAX);
		return;
	}
	verbs_register_driver(&ovrdma_dev_ops);
}
