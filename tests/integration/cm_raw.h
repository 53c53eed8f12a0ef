/* SPDX-License-Identifier: MIT */
/* The ucma ABI written directly on a channel's fd (cm_raw.c), and the
 * tests' FAIL. */
#ifndef OVRDMA_TESTS_CM_RAW_H
#define OVRDMA_TESTS_CM_RAW_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A step did not happen as wanted: say which, exit 1. */
#define FAIL(...)                                      \
	do {                                           \
		fprintf(stderr, "FAIL: " __VA_ARGS__); \
		fprintf(stderr, "\n");                 \
		exit(1);                               \
	} while (0)

/*
 * On @fd (an rdma_cm channel's): an id resolved to ADDR:@port through
 * RESOLVE_IP and RESOLVE_ROUTE, QUERY ADDR, GID and PATH checked, the
 * errors (ENOSPC, ENOSYS, ENOENT) checked; prints a line each; exits 1
 * on a failure. @rec: QUERY PATH's record, for the caller to compare.
 */
void cm_raw_query(int fd, const char *addr, uint16_t port, uint8_t rec[64]);

#endif
