/* SPDX-License-Identifier: MIT */
/* Fault injection for tests: the program's own malloc, calloc and realloc,
 * which fail (NULL, ENOMEM) while malloc_fail_on is set, and otherwise are the
 * C library's. Defining them in the program replaces the C library's for
 * everything in the process (glibc allows it, and its dynamic linker then
 * uses them too), ito included; free and the aligned allocators stay the C
 * library's, which take what these return. Include it in one file of a
 * program. Not for sanitizer builds: they replace the allocator themselves. */
#ifndef ITO_TESTS_MALLOC_FAIL_H
#define ITO_TESTS_MALLOC_FAIL_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);

static _Atomic bool malloc_fail_on;
static _Atomic long malloc_fail_refused;   /* how many allocations failed */

static inline void malloc_fail(bool on) { atomic_store(&malloc_fail_on, on); }

static inline bool malloc_fail_now(void)
{
    if (!atomic_load_explicit(&malloc_fail_on, memory_order_relaxed))
        return false;
    atomic_fetch_add_explicit(&malloc_fail_refused, 1, memory_order_relaxed);
    errno = ENOMEM;
    return true;
}

void *malloc(size_t n) { return malloc_fail_now() ? NULL : __libc_malloc(n); }
void *calloc(size_t n, size_t size) { return malloc_fail_now() ? NULL : __libc_calloc(n, size); }
void *realloc(void *p, size_t n)
{
    if (n && malloc_fail_now())
        return NULL;   /* (p stays the caller's) */
    return __libc_realloc(p, n);
}

#endif
