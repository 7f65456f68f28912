/* SPDX-License-Identifier: MIT */
/* A vproc whose processor the allocator took away: see revoke.c. */
#ifndef ITO_CPUSHARE_REVOKE_H
#define ITO_CPUSHARE_REVOKE_H

#include "runtime/vproc.h"

/* In act's scheduler context, vp->revoke set: give the vproc's threads
 * away, park until the processor is granted back, then return. */
void ito__revoke_park(struct ito__activation *act);
/* A thread was pushed into the inbox of vp, which is REVOKED: take the
 * inbox back to the global queue (any caller). */
void ito__revoke_rescue(struct ito__vproc *vp);
/* Pin the calling carrier of vp to the CPU the allocator gave it, if that
 * changed (the owner). */
void ito__revoke_repin(struct ito__vproc *vp);

#endif
