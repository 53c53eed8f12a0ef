/* SPDX-License-Identifier: MIT */
/* Compiler annotations shared by every component (gcc and clang). */
#ifndef OVRDMA_COMPILER_H
#define OVRDMA_COMPILER_H

#define ovr_likely(x) __builtin_expect(!!(x), 1)
#define ovr_unlikely(x) __builtin_expect(!!(x), 0)
/* Deliberate switch fall-through; clang ignores the comment form. */
#define ovr_fallthrough __attribute__((__fallthrough__))

#endif /* OVRDMA_COMPILER_H */
