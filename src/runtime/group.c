/* SPDX-License-Identifier: MIT */
/*
 * Thread groups: membership.
 *
 * A group is caller-owned storage (ito_group_t) holding a magic number, its
 * flags, a count of member threads and the policy's words. A thread's
 * membership is t->group, written under t->lk (spawn: before the thread is
 * published) and read by policies without a lock (ito_policy_node_group): a
 * stale read makes one placement use the old group, nothing worse, since a
 * group stays valid while it has members.
 *
 * The member count decides whether the group may be destroyed. Joining and
 * destroying race on it with CAS: destroy turns 0 into ITO__GROUP_DEAD, a
 * join increments anything but DEAD, so a thread can never join a group that
 * destroy has let go of. A thread leaves at exit (ito__group_leave), under
 * t->lk, and marks itself GONE so that a late ito_group_add cannot enrol a
 * thread that will never leave again.
 */
#include "runtime/group.h"

#include <errno.h>
#include <string.h>

#include "runtime/runtime.h"
#include "runtime/sched.h"
#include "runtime/thread.h"

#define ITO__GROUP_MAGIC 0x69746f67u   /* "itog" */

_Static_assert(sizeof(struct ito__group) <= sizeof(ito_group_t), "ito_group_t too small");
_Static_assert(_Alignof(struct ito__group) <= _Alignof(ito_group_t), "ito_group_t misaligned");

static struct ito__group *G(ito_group_t *g) { return (struct ito__group *)(void *)g; }

static bool live(const struct ito__group *g)
{
    return g && g->magic == ITO__GROUP_MAGIC &&
           atomic_load_explicit(&((struct ito__group *)g)->members, memory_order_relaxed) != ITO__GROUP_DEAD;
}

/* One more member, unless g has been destroyed. */
static bool enrol(struct ito__group *g)
{
    uint32_t n = atomic_load_explicit(&g->members, memory_order_relaxed);
    do {
        if (n == ITO__GROUP_DEAD)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&g->members, &n, n + 1, memory_order_relaxed,
                                                    memory_order_relaxed));
    return true;
}

static void discharge(struct ito__group *g)
{
    atomic_fetch_sub_explicit(&g->members, 1, memory_order_release);   /* pairs with destroy's CAS */
}

static void set_group(struct ito__thread *t, struct ito__group *g)
{
    __atomic_store_n(&t->group, g, __ATOMIC_RELAXED);   /* policies read it without t->lk */
}

ITO_API int ito_group_create(ito_group_t *gp, unsigned flags)
{
    if (!gp || (flags & ~ITO_GROUP_PINNED))
        return EINVAL;
    memset(gp, 0, sizeof *gp);
    struct ito__group *g = G(gp);
    g->magic = ITO__GROUP_MAGIC;
    g->flags = flags;
    atomic_init(&g->members, 0);
    return 0;
}

ITO_API int ito_group_destroy(ito_group_t *gp)
{
    struct ito__group *g = G(gp);
    if (!gp || g->magic != ITO__GROUP_MAGIC)
        return EINVAL;
    uint32_t n = 0;
    /* Acquire pairs with the release of the last member's discharge: its
     * policy's last use of the group happened before. */
    if (!atomic_compare_exchange_strong_explicit(&g->members, &n, ITO__GROUP_DEAD, memory_order_acquire,
                                                 memory_order_relaxed))
        return n == ITO__GROUP_DEAD ? EINVAL : EBUSY;
    g->magic = 0;
    return 0;
}

struct ito__group *ito__group_enrol(ito_group_t *gp)
{
    struct ito__group *g = G(gp);
    return gp && g->magic == ITO__GROUP_MAGIC && enrol(g) ? g : NULL;
}

void ito__group_discharge(struct ito__group *g) { discharge(g); }
bool ito__group_live(ito_group_t *gp) { return live(G(gp)); }

/* (Called only with a group set: a thread that never joined one keeps NULL,
 * which nobody else writes but add, under lk.) */
void ito__group_leave(struct ito__thread *t)
{
    ito__spin_lock(&t->lk);
    struct ito__group *g = ito__group_of(t);
    set_group(t, ITO__GROUP_GONE);
    ito__spin_unlock(&t->lk);
    if (g && g != ITO__GROUP_GONE)
        discharge(g);
}

/* t, named by th, locked and not exited: NULL for ESRCH. */
static struct ito__thread *lock_member(ito_thread_t th)
{
    struct ito__thread *t = ito__thread_lock_handle(th);
    if (!t)
        return NULL;
    if (ito__group_of(t) == ITO__GROUP_GONE ||
        (atomic_load_explicit(&t->ctl, memory_order_relaxed) & ITO__CTL_EXITED)) {
        ito__spin_unlock(&t->lk);
        return NULL;
    }
    return t;
}

ITO_API int ito_group_add(ito_group_t *gp, ito_thread_t th)
{
    struct ito__group *g = G(gp);
    if (!live(g))
        return EINVAL;
    struct ito__thread *t = lock_member(th);
    if (!t)
        return ESRCH;
    struct ito__group *old = ito__group_of(t);
    if (old == g) {
        ito__spin_unlock(&t->lk);
        return 0;
    }
    if (!enrol(g)) {
        ito__spin_unlock(&t->lk);
        return EINVAL;   /* destroyed meanwhile */
    }
    set_group(t, g);
    ito__spin_unlock(&t->lk);
    if (old)
        discharge(old);
    /* The caller moves now: its policy places it where g runs. */
    if (t == ito__thread_self())
        ito__yield();
    return 0;
}

ITO_API int ito_group_remove(ito_thread_t th)
{
    struct ito__thread *t = lock_member(th);
    if (!t)
        return ESRCH;
    struct ito__group *old = ito__group_of(t);
    set_group(t, NULL);
    ito__spin_unlock(&t->lk);
    if (!old)
        return EINVAL;
    discharge(old);
    return 0;
}

ITO_API int ito_group_get(ito_thread_t th, ito_group_t **gp)
{
    if (!gp)
        return EINVAL;
    struct ito__thread *t = lock_member(th);
    if (!t)
        return ESRCH;
    *gp = (ito_group_t *)(void *)ito__group_of(t);
    ito__spin_unlock(&t->lk);
    return 0;
}

