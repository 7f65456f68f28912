/* SPDX-License-Identifier: MIT */
/* The process-wide runtime state, and the table of the runtime's calls up
 * into the layers above it (hooks.h) with their do-nothing defaults. */
#include "runtime/runtime.h"

#include "runtime/hooks.h"

struct ito__runtime ito__rt = {
    .gq_lock = ITO__SPINLOCK_INITIALIZER(ITO__LOCK_GLOBAL_QUEUE),
    .spare_lock = ITO__SPINLOCK_INITIALIZER(ITO__LOCK_SPARES),
};

static void no_activation(struct ito__activation *a) { (void)a; }
static void no_demand(void) {}
static void no_vproc(struct ito__vproc *vp) { (void)vp; }
static void no_idle(bool idle) { (void)idle; }
static void no_fork(pid_t parent_tid) { (void)parent_tid; }
static void nothing(void) {}
static uintptr_t no_tp(void) { return 0; }
static void no_tp_done(uintptr_t tp) { (void)tp; }

struct ito__hooks ito__hooks = {
    .activation_started = no_activation,
    .backlog = no_demand,
    .backlog_end = no_vproc,
    .want_more = no_demand,
    .idle = no_idle,
    .revoked = no_activation,
    .rescue = no_vproc,
    .repin = no_vproc,
    .forked = no_fork,
    .posix_forked = nothing,
    .posix_resumed = nothing,
    .tp_new = no_tp,
    .tp_done = no_tp_done,
};
