/* SPDX-License-Identifier: MIT */
/*
 * Thread groups ([SKY §2.2]): the core keeps the membership; a policy
 * that honours groups ("affinity") keeps its placement in the group's
 * policy words (ito_policy_group_t).
 */
#ifndef ITO_RUNTIME_GROUP_H
#define ITO_RUNTIME_GROUP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <ito.h>
#include <ito/policy.h>

#include "runtime/thread.h"

struct ito__thread;

struct ito__group {
    uint32_t magic;                  /* ITO__GROUP_MAGIC while live */
    uint32_t flags;                  /* ITO_GROUP_* */
    _Atomic uint32_t members;        /* live member threads; ITO__GROUP_DEAD once destroyed */
    uint32_t pad_;
    ito_policy_group_t pg;           /* the policy's */
};

#define ITO__GROUP_DEAD UINT32_MAX
/* t->group of a thread that has exited: it joins no group any more. */
#define ITO__GROUP_GONE ((struct ito__group *)1)

/* A thread about to be spawned into g counts as a member: g, or NULL if g
 * is not a live group. ito__group_discharge undoes it (a spawn that failed). */
struct ito__group *ito__group_enrol(ito_group_t *g);
void ito__group_discharge(struct ito__group *g);
/* Whether g is a group that has been created and not destroyed. */
bool ito__group_live(ito_group_t *g);
/* ito__group_exit's work for a thread that has a group. */
void ito__group_leave(struct ito__thread *t);
/* t's group: NULL, a live group, or ITO__GROUP_GONE (read relaxed: others
 * read it while t's owner changes it). */
#define ito__group_of(t) (__atomic_load_n(&(t)->group, __ATOMIC_RELAXED))

/* t is exiting: it leaves its group (a test when it has none). */
static inline void ito__group_exit(struct ito__thread *t)
{
    if (ito__group_of(t))
        ito__group_leave(t);
}

#endif
