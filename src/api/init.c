/* SPDX-License-Identifier: MIT */
/*
 * Initialization: ito_init, the implicit first-call initialization, and the
 * runtime's configuration (ito_config_t fields, then environment variables,
 * then defaults).
 *
 * The initializing kernel thread becomes an ito thread on vproc 0 (its
 * activation) when it is the main thread or when it calls ito_init
 * explicitly; otherwise — a pthread that happens to make the first ito call —
 * it stays a foreign kernel thread, because its exit would take vproc 0 with
 * it, and vproc 0 gets an activation of its own.
 */
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ito.h>

#include "base/backtrace.h"
#include "base/libc.h"
#include "base/env.h"
#include "base/kthread.h"
#include "base/panic.h"
#include "runtime/crash.h"
#include "runtime/deadlock.h"
#include "runtime/dump.h"
#include "runtime/event.h"
#include "runtime/fork.h"
#include "api/init.h"
#include "api/owner.h"
#include "api/view.h"
#include "policy/registry.h"
#include "runtime/runtime.h"
#include "runtime/sched.h"
#include "runtime/sigmask.h"
#include "runtime/stack.h"
#include "runtime/trace.h"
#include "runtime/vproc.h"
#include "cpushare/agent.h"
#include "cpushare/revoke.h"
#include "cpushare/weight.h"
#include "runtime/context.h"
#include "runtime/hooks.h"
#include "upcall/doorbell.h"
#include "upcall/monitor.h"
#include "upcall/preempt.h"
#include "upcall/longrun.h"
#include "runtime/ring.h"

#define ITO__IDLE_SPIN_DEFAULT_US 50

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static bool start_in_progress;   /* init_lock; start() runs (for a fork meanwhile) */



static int validate(const ito_config_t *c)
{
    if (c->vprocs < 0 || c->vprocs > ITO__VPROCS_MAX)
        return EINVAL;
    if (c->stack_size && (c->stack_size < ITO_STACK_MIN || c->stack_size > ITO_STACK_MAX))
        return EINVAL;
    if (c->idle_spin_us < -1 || c->idle_spin_us > 1000000)
        return EINVAL;
    if (c->pin < -1 || c->pin > 1)
        return EINVAL;
    if (c->policy && !ito__policy_find(c->policy))
        return EINVAL;
    return 0;
}

/* The child of fork, at once (runtime/fork.c): the parent's kernel threads
 * and locks are not this process's. */
static void forked(pid_t parent_tid)
{
    init_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    if (start_in_progress) {
        /* Another kernel thread was starting ito: half of it is built, by a
         * thread that is not here. */
        start_in_progress = false;
        ito__rt.init_error = EAGAIN;
        atomic_store_explicit(&ito__rt.state, ITO__RT_FAILED, memory_order_relaxed);
        ito__warn("this process is the child of a fork made while another thread was starting ito; "
                  "ito cannot start here (its calls fail with EAGAIN): start ito before forking");
    }
    ito__weight_forked(parent_tid);
    ito__agent_forked();
    ito__policies_forked();
    ito__view_forked();
}

/* From the moment the library is loaded: a fork may happen while ito
 * starts (runtime/fork.c registers its handlers then too). */
__attribute__((constructor)) static void fork_hook(void) { ito__hooks.forked = forked; }

/* The child of fork, at its first call through the gate: the rest of its
 * runtime, in start()'s order. */
static int resume_forked(void)
{
    int e = ito__fork_resume();
    if (!e)
        e = ito__monitor_init();
    if (!e)
        e = ito__doorbell_init();
    if (!e) {
        ito__agent_start();
        ito__dump_signal_forked();
        ito__schedtrace_start();
        ito__longrun_start();
        ito__view_start();
        ito__hooks.posix_resumed();
    }
    return e;
}

/* The lower layers' calls up (runtime/hooks.h, the trampoline's report):
 * before anything of the runtime runs. */
static void fill_hooks(void)
{
    ito__ctx_on_return = ito__ctx_returned;
    ito__hooks.activation_started = ito__preempt_start_self;
    ito__hooks.backlog = ito__agent_backlog;
    ito__hooks.backlog_end = ito__agent_backlog_end;
    ito__hooks.want_more = ito__agent_more;
    ito__hooks.idle = ito__agent_idle;
    ito__hooks.revoked = ito__revoke_park;
    ito__hooks.rescue = ito__revoke_rescue;
    ito__hooks.repin = ito__revoke_repin;
    ito__hooks.lock_owner = ito__lock_owner;
    /* tp_new, tp_done and preempted_resume are the posix layer's (src/posix), if any. */
    ito__arch_tp_init();
}

static int start(const ito_config_t *c, bool adopt)
{
    fill_hooks();
    ito__rt.page = (size_t)sysconf(_SC_PAGESIZE);
    ito__kthread_policy_save();   /* ito's kernel threads run as the caller does */

    int n = c->vprocs;
    if (!n) {
        /* One per usable CPU unless ITO_VPROCS says otherwise; a bad value
         * is reported with the number used instead. */
        int cpus[CPU_SETSIZE];
        n = (int)ito__env_int("ITO_VPROCS", ito__cpus_usable(cpus, CPU_SETSIZE), 1, ITO__VPROCS_MAX, false);
    }
    size_t stack = c->stack_size ? c->stack_size : ito__default_stack_size();
    long long spin = c->idle_spin_us >= 0 ? c->idle_spin_us
                                          : ito__env_int("ITO_IDLE_SPIN_US", ITO__IDLE_SPIN_DEFAULT_US, 0, 1000000, false);
    int pin = c->pin >= 0 ? c->pin : (int)ito__env_int("ITO_PIN", 1, 0, 1, false);
    const ito_policy_ops_t *pol = NULL;
    if (c->policy) {
        pol = ito__policy_find(c->policy);
    } else if (ito__env_str("ITO_POLICY")) {
        pol = ito__policy_find(ito__env_str("ITO_POLICY"));
        if (!pol) {
            /* The registry's names: the built-in policies and any the
             * application registered before ito started. A policy name is
             * shorter than ITO_POLICY_NAME_MAX: a longer value is cut. */
            char names[ITO_POLICIES_MAX * (ITO_POLICY_NAME_MAX + 2)];
            ito__policy_names(names, sizeof names);
            const char *v = ito__env_str("ITO_POLICY");
            ito__warn("ignoring ITO_POLICY='%.*s%s': no such policy; accepted: %s; using ws",
                      ITO_POLICY_NAME_MAX, v, strlen(v) > ITO_POLICY_NAME_MAX ? "..." : "", names);
        }
    }
    if (!pol)
        pol = ito__policy_find("ws");

    ito__rt.nvprocs = n;
    ito__rt.idle_spin_ns = (uint64_t)spin * 1000u;
    ito__rt.pin = pin;
    ito__rt.policy = pol;
    ito__rt.stats_cycles = ito__env_int("ITO_STATS_CYCLES", 0, 0, 1, false) != 0;
    /* Hand-offs of blocked carriers (the monitor) and time slices. */
    ito__rt.activations = ito__env_int("ITO_ACTIVATIONS", 1, 0, 1, false) != 0;

    int e = ito__stacks_init(stack);
    if (e)
        return e;
    ito__rt.stack_size = ito__stack_round(stack);
    ito__idle_init();
    ito__deadlock_init();
    ito__bt_init();
    ito__trace_init();   /* ITO_TRACE (runtime/trace.c) */
    if ((e = ito__vprocs_create(n, pin)))
        return e;
    /* Before the policy's init: a policy may read the slice length there
     * (ws's next-slot rule depends on whether slices are on). */
    ito__preempt_init();
    void *shared = NULL;
    if (pol->init && (e = pol->init(n, &shared)))
        return e;
    for (int i = 0; i < n; i++) {
        ito__rt.vprocs[i]->pv.shared = shared;
        if (pol->vproc_init && (e = pol->vproc_init(&ito__rt.vprocs[i]->pv)))
            return e;
    }
    ito__rings_init();
    ito__overflow_install();
    ito__crash_install();
    ito__dump_signal_init();
    ito__sigmask_init();
    ito__agent_configure();
    if (adopt && (e = ito__activation_adopt(ito__rt.vprocs[0])))
        return e;
    for (int i = adopt ? 1 : 0; i < n; i++)
        if ((e = ito__activation_start(ito__rt.vprocs[i])))
            return e;
    if ((e = ito__monitor_init()))
        return e;
    if ((e = ito__doorbell_init()))
        return e;
    ito__agent_start();
    ito__schedtrace_start();
    ito__longrun_start();
    ito__view_start();
    return 0;
}

/* This kernel thread is inside start(): a call back into ito from there (a
 * library ito uses while it starts, a policy's init) would wait for
 * init_lock, which this thread holds, for ever. */
static __thread bool initializing;

static _Noreturn void init_recursion(void)
{
    void *frames[48];
    int n = backtrace(frames, 48);
    backtrace_symbols_fd(frames, n, 2);
    ito__panic("ito was called while it initializes, on the thread that initializes it (the calls above "
               "led there): a policy's init (or a library ito uses at start) called back into ito, which "
               "cannot work before ito has started; a policy's init must not call ito");
}

/* The end of a start or a resume: READY, or FAILED with its error (and a
 * warning: what failed). Release: everything set up before is visible to
 * whoever passes ito__ensure_init (acquire). */
static void publish(int e, const char *what)
{
    if (e) {
        ito__rt.init_error = e;
        atomic_store_explicit(&ito__rt.state, ITO__RT_FAILED, memory_order_release);
        ito__warn("%s: %s", what, strerror(e));
    } else {
        atomic_store_explicit(&ito__rt.state, ITO__RT_READY, memory_order_release);
    }
}

int ito__init_slow(const ito_config_t *cfg, bool explicit_call)
{
    if (ITO_UNLIKELY(initializing))
        init_recursion();
    int saved_errno = errno;   /* the caller's errno survives initialization */
    ito__policies_builtin();
    ito__libc_pthread_mutex_lock(&init_lock);
    int s = atomic_load_explicit(&ito__rt.state, memory_order_acquire);
    int e;
    if (s == ITO__RT_READY) {
        e = explicit_call && cfg ? EBUSY : 0;
    } else if (s == ITO__RT_FORKED) {
        e = resume_forked();
        publish(e, "the child of fork could not start its runtime");
        if (explicit_call && cfg && !e)
            e = EBUSY;
    } else if (s == ITO__RT_FAILED) {
        e = ito__rt.init_error;
    } else {
        ito_config_t dflt = ITO_CONFIG_INIT;
        const ito_config_t *c = cfg ? cfg : &dflt;
        e = validate(c);
        if (!e) {
            bool adopt = explicit_call || gettid() == getpid();
            initializing = true;
            start_in_progress = true;
            e = start(c, adopt);
            start_in_progress = false;
            initializing = false;
            publish(e, "initialization failed");
        }
    }
    ito__libc_pthread_mutex_unlock(&init_lock);
    if (s != ITO__RT_READY && s != ITO__RT_FAILED && !e && ito__on_activation()) {
        /* This kernel thread now carries vproc 0: report it, outside the
         * lock (a hook may call ito). The others report from their own
         * activations (activation.c). */
        ito__critical_enter();
        ito__event(ITO_EVENT_VPROC_ADDED, ito__vproc_self(), 0);
        ito__critical_exit();
    }
    /* Not `errno = ...`: once adopted, this thread may have been switched
     * to another kernel thread since errno's address was taken above. */
    ito__errno_set(saved_errno);
    return e;
}

ITO_API int ito_init(const ito_config_t *cfg) { return ito__init_slow(cfg, true); }

ITO_API int ito_vproc_count(void)
{
    if (ito__ensure_init())
        return 0;
    return ito__rt.nvprocs;
}

ITO_API int ito_vproc_self(void)
{
    ito__ensure_init();
    ito__critical_enter();
    struct ito__vproc *vp = ito__vproc_self();
    int i = vp ? vp->index : -1;
    ito__critical_exit();
    return i;
}

ITO_API const char *ito_policy_name(void)
{
    if (ito__ensure_init())
        return NULL;
    return ito__rt.policy->name;
}
