/* SPDX-License-Identifier: MIT */
/* The init gate every public call that may come first passes (init.c). */
#ifndef ITO_API_INIT_H
#define ITO_API_INIT_H

#include <stdbool.h>

#include <ito.h>

#include "base/compiler.h"
#include "runtime/runtime.h"

/* Initialize ito (once, under a lock): cfg or the environment's settings;
 * an explicit call (ito_init) adopts the caller as an ito thread. */
int ito__init_slow(const ito_config_t *cfg, bool explicit_call);

/* The gate: one acquire load on the fast path. Pairs with the release
 * store of ITO__RT_READY at the end of initialization. */
static inline int ito__ensure_init(void)
{
    int s = atomic_load_explicit(&ito__rt.state, memory_order_acquire);
    if (ITO_LIKELY(s == ITO__RT_READY))
        return 0;
    return ito__init_slow(NULL, false);
}

/* ITO_SCHEDTRACE: start the scheduler trace's kernel thread (schedtrace.c);
 * at start and in the child of fork. */
void ito__schedtrace_start(void);

#endif
