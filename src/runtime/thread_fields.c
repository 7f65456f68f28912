/* SPDX-License-Identifier: MIT */
/*
 * A thread's own fields, through its handle: priority, data, name.
 *
 * Each call looks the handle up and holds the descriptor's lock while it
 * uses the descriptor (ito__thread_lock_handle re-checks the generation
 * under it), so a stale handle gets ESRCH and never touches a descriptor
 * reused for another thread. The calling thread's own data and name need
 * no lock: nobody else frees it while it runs. Policies read the priority
 * without the lock; a change to a ready thread's is passed to the policy
 * (priority_changed), which moves it in its queues.
 */
#include <errno.h>
#include <string.h>

#include <ito.h>
#include <ito/policy.h>

#include "runtime/critical.h"
#include "runtime/runtime.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

ITO_API int ito_set_priority(ito_thread_t th, int prio)
{
    if (prio < 0 || prio > ITO_PRIO_MAX)
        return EINVAL;
    struct ito__thread *t = ito__thread_lock_handle(th);
    if (!t)
        return ESRCH;
    __atomic_store_n(&t->prio, prio, __ATOMIC_RELAXED);   /* policies read it without t->lk */
    int st = ito__thread_state(t);
    bool ready = st == ITO__TS_READY || st == ITO__TS_NEW;
    ito__spin_unlock(&t->lk);
    /* A ready thread waits at its old priority unless the policy moves it.
     * Its descriptor stays mapped if it runs and exits meanwhile: the
     * policy looks at the node under its own lock. */
    if (ready && ito__rt.policy->priority_changed) {
        ito__critical_enter();
        struct ito__vproc *vp = ito__vproc_self();
        ito__rt.policy->priority_changed(&(vp ? vp : ito__rt.vprocs[0])->pv, &t->node);
        ito__critical_exit();
    }
    return 0;
}

ITO_API int ito_get_priority(ito_thread_t th, int *prio)
{
    if (!prio)
        return EINVAL;
    struct ito__thread *t = ito__thread_lock_handle(th);
    if (!t)
        return ESRCH;
    *prio = __atomic_load_n(&t->prio, __ATOMIC_RELAXED);
    ito__spin_unlock(&t->lk);
    return 0;
}

ITO_API int ito_set_data(ito_thread_t th, void *data)
{
    struct ito__thread *self = ito__thread_self();
    if (self && th.id == ito__thread_id(self, atomic_load_explicit(&self->ctl, memory_order_relaxed))) {
        self->data = data;   /* a running thread cannot be freed: no lock */
        return 0;
    }
    struct ito__thread *t = ito__thread_lock_handle(th);
    if (!t)
        return ESRCH;
    t->data = data;
    ito__spin_unlock(&t->lk);
    return 0;
}

ITO_API void *ito_get_data(ito_thread_t th)
{
    struct ito__thread *self = ito__thread_self();
    if (self && th.id == ito__thread_id(self, atomic_load_explicit(&self->ctl, memory_order_relaxed)))
        return self->data;
    struct ito__thread *t = ito__thread_lock_handle(th);
    if (!t)
        return NULL;
    void *d = t->data;
    ito__spin_unlock(&t->lk);
    return d;
}

ITO_API int ito_set_name(ito_thread_t th, const char *name)
{
    if (!name)
        return EINVAL;
    size_t n = strlen(name);
    if (n >= ITO_NAME_MAX)
        return ERANGE;
    struct ito__thread *t = ito__thread_lock_handle(th);
    if (!t)
        return ESRCH;
    memcpy(t->name, name, n + 1);
    ito__spin_unlock(&t->lk);
    return 0;
}

ITO_API int ito_get_name(ito_thread_t th, char *buf, size_t len)
{
    if (!buf)
        return EINVAL;
    struct ito__thread *t = ito__thread_lock_handle(th);
    if (!t)
        return ESRCH;
    size_t n = strlen(t->name);
    int e = 0;
    if (n + 1 > len)
        e = ERANGE;
    else
        memcpy(buf, t->name, n + 1);
    ito__spin_unlock(&t->lk);
    return e;
}

