// SPDX-License-Identifier: MIT
/*
 * libovrdma-preload.so: completion channels for ovrdma devices in
 * unmodified programs (docs/PROVIDER.md section 3). ovrdma-run puts it
 * in LD_PRELOAD.
 *
 * libibverbs makes a completion channel itself, by writing a uverbs
 * command to the context's cmd_fd - a kernel object that an ovrdma
 * context does not have (its cmd_fd is /dev/null, read-only, so the
 * write fails with EBADF). These two overrides hand ovrdma contexts to
 * the provider, which creates the channel through ovrdmad (a pipe that
 * receives the kernel's comp_event_desc records, so ibv_get_cq_event
 * works unchanged), and pass every other context to libibverbs.
 *
 * The provider is a separate library loaded by libibverbs with
 * RTLD_LOCAL: it is reached through the hooks in its device object.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

#include "ovrdma.h"

/* Both are IBVERBS_1.0 symbols of libibverbs.so.1. */
#define IBVERBS_VERSION "IBVERBS_1.0"

typedef struct ibv_comp_channel *create_fn(struct ibv_context *);
typedef int destroy_fn(struct ibv_comp_channel *);

static void *next_symbol(const char *name)
{
	void *f = dlvsym(RTLD_NEXT, name, IBVERBS_VERSION);

	return f ? f : dlsym(RTLD_NEXT, name);
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
