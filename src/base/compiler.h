/* SPDX-License-Identifier: MIT */
/* Compiler helpers used everywhere in ito's sources. */
#ifndef ITO_BASE_COMPILER_H
#define ITO_BASE_COMPILER_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdatomic.h>

#define ITO_LIKELY(x) __builtin_expect(!!(x), 1)
#define ITO_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ITO_NOINLINE __attribute__((noinline))
#define ITO_INLINE static inline __attribute__((always_inline))
#define ITO_COLD __attribute__((cold, noinline))
#define ITO_UNUSED __attribute__((unused))
#define ITO_WARN_UNUSED __attribute__((warn_unused_result))

/* One cache line (x86-64); used to keep fields written by different vprocs apart. */
#define ITO_CACHELINE 64
#define ITO_ALIGNED_CACHELINE __attribute__((aligned(ITO_CACHELINE)))

#define ITO_CONTAINER_OF(ptr, type, member) \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define ITO_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* libito-pthread.so is built with ITO_OWN_TLS=1: every ito thread runs with
 * its own thread pointer, TLS block and C-library descriptor (src/posix/tcb.c;
 * the switch in runtime/sched.c). libito.so leaves the thread pointer alone. */
#ifndef ITO_OWN_TLS
#define ITO_OWN_TLS 0
#endif

/* Compiler-only barrier. */
#define ITO_COMPILER_BARRIER() __asm__ __volatile__("" ::: "memory")

/* Sanitizer detection (GCC and clang spell it differently). */
#if defined(__SANITIZE_ADDRESS__)
#define ITO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ITO_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define ITO_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ITO_TSAN 1
#endif
#endif

/* A full (seq_cst) fence. ThreadSanitizer does not model standalone fences
 * and warns about them; in TSan builds the fence is a seq_cst read-modify-
 * write of a dummy word instead — a full barrier on x86 all the same. No
 * happens-before edge that TSan needs goes through these fences: data is
 * always published by release/acquire pairs of its own. */
#ifdef ITO_TSAN
extern _Atomic int ito__fence_word;
#define ITO_FENCE() ((void)atomic_fetch_add_explicit(&ito__fence_word, 0, memory_order_seq_cst))
#else
#define ITO_FENCE() atomic_thread_fence(memory_order_seq_cst)
#endif

#endif
