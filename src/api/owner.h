/* SPDX-License-Identifier: MIT */
/* Who is calling, as lock owners record it: the ito thread's descriptor, or
 * for a foreign kernel thread the address of a variable of its own TLS, tagged
 * so that it is never mistaken for a descriptor. Never 0; bits 0-1 are free
 * for the lock words' flags. */
#ifndef ITO_API_OWNER_H
#define ITO_API_OWNER_H

#include <stdint.h>

#include "runtime/thread.h"

#define ITO__OWNER_FOREIGN ((uintptr_t)4)

uintptr_t ito__owner_foreign(void);
/* runtime/hooks.h's lock_owner (mutex.c). */
struct ito__thread *ito__lock_owner(int on, const void *obj, bool *foreign);

static inline uintptr_t ito__owner_self(void)
{
    struct ito__thread *t = ito__thread_self();
    return t ? (uintptr_t)t : ito__owner_foreign();
}

/* Is the owner an ito thread that is running right now (worth spinning on)? */
static inline bool ito__owner_running(uintptr_t owner)
{
    if (owner & ITO__OWNER_FOREIGN)
        return true;   /* a kernel thread: assume it runs */
    /* Descriptors are type-stable: reading a stale one is safe. */
    return ito__thread_state((struct ito__thread *)owner) == ITO__TS_RUNNING;
}

#endif
