/* SPDX-License-Identifier: MIT */
/* Fatal errors, invariant checks and one-time warnings.
 *
 * ITO_BUG_ON(cond) is always on: a broken invariant in a threads library means
 * corrupted memory or lost work, so it aborts with the file, line and values.
 * ITO_ASSERT(cond) checks cheap-to-state but hot invariants in debug builds
 * (ITO_DEBUG). ito__panic is for misuse that cannot be reported as an errno
 * value: it prints what went wrong and how to fix it, then aborts. */
#ifndef ITO_BASE_PANIC_H
#define ITO_BASE_PANIC_H

#include "base/compiler.h"

_Noreturn void ito__panic(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));
void ito__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));

/* Print a warning the first time this call site is reached. */
#define ITO_WARN_ONCE(...)                                                      \
    do {                                                                        \
        static int ito_warned_;                                                 \
        if (!__atomic_exchange_n(&ito_warned_, 1, __ATOMIC_RELAXED))           \
            ito__warn(__VA_ARGS__);                                             \
    } while (0)

#define ITO_BUG_ON(cond)                                                        \
    do {                                                                        \
        if (ITO_UNLIKELY(cond))                                                 \
            ito__panic("internal error: %s (%s:%d); please report it", #cond,   \
                       __FILE__, __LINE__);                                     \
    } while (0)

#ifdef ITO_DEBUG
#define ITO_ASSERT(cond) ITO_BUG_ON(!(cond))
#else
#define ITO_ASSERT(cond) ((void)0)
#endif

#endif
