/* A vproc whose processor the allocator took away: see revoke.c. */
#ifndef ITO_CORE_REVOKE_H
#define ITO_CORE_REVOKE_H

#include "core/vproc.h"

/* In act's scheduler context, vp->revoke set: give the vproc's threads
 * away, park until the processor is granted back, then return. */
void ito__revoke_park(struct ito__activation *act);
/* A thread was pushed into the inbox of vp, which is REVOKED: take the
 * inbox back to the global queue (any caller). */
void ito__revoke_rescue(struct ito__vproc *vp);
/* Pin the calling carrier of vp to the CPU the allocator gave it, if that
 * changed (the owner). */
void ito__vproc_repin(struct ito__vproc *vp);
/* Is vp's processor being taken away? One relaxed load, at every switch. */
static inline bool ito__vproc_revoked(const struct ito__vproc *vp)
{
    return ITO_UNLIKELY(atomic_load_explicit(&vp->revoke, memory_order_acquire) != 0);
}

#endif
