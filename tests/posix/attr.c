/* SPDX-License-Identifier: MIT */
/* Thread attributes: pthread_attr_init/destroy, every getter's default, the
 * set/get round trips and their specified errors, and the effect of the
 * attributes on created threads (detach state, caller-supplied stack, stack
 * size, guard size, signal mask), seen through pthread_getattr_np and
 * pthread_sigmask in the thread. Also pthread_attr_setaffinity_np/
 * getaffinity_np, pthread_attr_setsigmask_np/getsigmask_np (glibc >= 2.32),
 * pthread_getattr_np on main, and pthread_getattr_default_np/
 * pthread_setattr_default_np.
 *
 * The defaults checked here are glibc's documented ones (POSIX leaves the
 * inherit-scheduler, scope, policy and guard size defaults to the
 * implementation): PTHREAD_INHERIT_SCHED, PTHREAD_SCOPE_SYSTEM (Linux has no
 * PTHREAD_SCOPE_PROCESS), SCHED_OTHER with priority 0, one page of guard.
 *
 * No case is left out for a glibc deviation. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>

#include "conform.h"

#define MiB (1024u * 1024u)

/* A small caller-supplied stack for the attribute round trips. */
static _Alignas(64 * 1024) char small_stack[64 * 1024];

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* ---- what a thread sees of itself ---- */

/* Filled in by the thread from pthread_getattr_np(pthread_self()). */
struct self_view {
    uintptr_t local;      /* address of a local variable */
    uintptr_t stack_lo;   /* pthread_attr_getstack */
    size_t stack_size;
    size_t guard_size;
    int detach_state;
};

static void view_self(struct self_view *v)
{
    int local = 0;
    pthread_attr_t attr;
    void *lo;
    OK(pthread_getattr_np(pthread_self(), &attr));
    OK(pthread_attr_getstack(&attr, &lo, &v->stack_size));
    OK(pthread_attr_getguardsize(&attr, &v->guard_size));
    OK(pthread_attr_getdetachstate(&attr, &v->detach_state));
    OK(pthread_attr_destroy(&attr));
    v->stack_lo = (uintptr_t)lo;
    v->local = (uintptr_t)&local;
}

static void *view_self_thread(void *p)
{
    view_self(p);
    return NULL;
}

static int stack_holds(const struct self_view *v, uintptr_t addr)
{
    return addr >= v->stack_lo && addr < v->stack_lo + v->stack_size;
}

/* Create a thread with `attr`, let it look at itself, join it. */
static struct self_view run_view(const pthread_attr_t *attr)
{
    struct self_view v;
    memset(&v, 0, sizeof v);
    pthread_t t;
    OK(pthread_create(&t, attr, view_self_thread, &v));
    OK(pthread_join(t, NULL));
    return v;
}

/* ---- init / destroy and defaults ---- */

/* "A destroyed attr attributes object can be reinitialized using
 * pthread_attr_init()". */
static void attr_init_destroy_reinit(void)
{
    pthread_attr_t attr;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_destroy(&attr));
    OK(pthread_attr_init(&attr));
    int state;
    OK(pthread_attr_getdetachstate(&attr, &state));
    CHECK_EQ(state, PTHREAD_CREATE_JOINABLE);
    OK(pthread_attr_destroy(&attr));
}

static void attr_defaults(void)
{
    pthread_attr_t attr;
    int v;
    size_t size;
    struct sched_param sp = { .sched_priority = -1 };
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_getdetachstate(&attr, &v));
    CHECK_EQ(v, PTHREAD_CREATE_JOINABLE);
    OK(pthread_attr_getinheritsched(&attr, &v));
    CHECK_EQ(v, PTHREAD_INHERIT_SCHED);
    OK(pthread_attr_getscope(&attr, &v));
    CHECK_EQ(v, PTHREAD_SCOPE_SYSTEM);
    OK(pthread_attr_getschedpolicy(&attr, &v));
    CHECK_EQ(v, SCHED_OTHER);
    OK(pthread_attr_getschedparam(&attr, &sp));
    CHECK_EQ(sp.sched_priority, 0);
    OK(pthread_attr_getguardsize(&attr, &size));
    CHECK_EQ(size, page_size());
    OK(pthread_attr_getstacksize(&attr, &size));
    CHECK(size >= (size_t)PTHREAD_STACK_MIN);
    OK(pthread_attr_destroy(&attr));
}

/* ---- round trips and errors ---- */

/* setdetachstate "shall fail if: [EINVAL] The value of detachstate was not
 * valid". */
static void detachstate_round_trip(void)
{
    pthread_attr_t attr;
    int v;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED));
    OK(pthread_attr_getdetachstate(&attr, &v));
    CHECK_EQ(v, PTHREAD_CREATE_DETACHED);
    OK(pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_JOINABLE));
    OK(pthread_attr_getdetachstate(&attr, &v));
    CHECK_EQ(v, PTHREAD_CREATE_JOINABLE);
    FAILS(pthread_attr_setdetachstate(&attr, 12345), EINVAL);
    OK(pthread_attr_destroy(&attr));
}

/* setscope "shall fail if: [ENOTSUP] An attempt was made to set the attribute
 * to an unsupported value" (Linux has no PTHREAD_SCOPE_PROCESS); glibc's
 * pthread_attr_setscope(3) lists EINVAL for an invalid value. */
static void scope_round_trip(void)
{
    pthread_attr_t attr;
    int v;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setscope(&attr, PTHREAD_SCOPE_SYSTEM));
    OK(pthread_attr_getscope(&attr, &v));
    CHECK_EQ(v, PTHREAD_SCOPE_SYSTEM);
    FAILS(pthread_attr_setscope(&attr, PTHREAD_SCOPE_PROCESS), ENOTSUP);
    FAILS(pthread_attr_setscope(&attr, 12345), EINVAL);
    OK(pthread_attr_getscope(&attr, &v));
    CHECK_EQ(v, PTHREAD_SCOPE_SYSTEM);
    OK(pthread_attr_destroy(&attr));
}

/* glibc's pthread_attr_setinheritsched(3): "EINVAL Invalid value in
 * inheritsched". */
static void inheritsched_round_trip(void)
{
    pthread_attr_t attr;
    int v;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED));
    OK(pthread_attr_getinheritsched(&attr, &v));
    CHECK_EQ(v, PTHREAD_EXPLICIT_SCHED);
    OK(pthread_attr_setinheritsched(&attr, PTHREAD_INHERIT_SCHED));
    OK(pthread_attr_getinheritsched(&attr, &v));
    CHECK_EQ(v, PTHREAD_INHERIT_SCHED);
    FAILS(pthread_attr_setinheritsched(&attr, 12345), EINVAL);
    OK(pthread_attr_destroy(&attr));
}

/* Setting a policy in an attributes object needs no privilege; glibc's
 * pthread_attr_setschedpolicy(3): "EINVAL Invalid value in policy". */
static void schedpolicy_round_trip(void)
{
    static const int policies[] = { SCHED_FIFO, SCHED_RR, SCHED_OTHER };
    pthread_attr_t attr;
    int v;
    OK(pthread_attr_init(&attr));
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
        OK(pthread_attr_setschedpolicy(&attr, policies[i]));
        OK(pthread_attr_getschedpolicy(&attr, &v));
        CHECK_EQ(v, policies[i]);
    }
    FAILS(pthread_attr_setschedpolicy(&attr, 12345), EINVAL);
    OK(pthread_attr_destroy(&attr));
}

/* glibc's pthread_attr_setschedparam(3): "EINVAL The priority specified in
 * param does not make sense for the current scheduling policy of attr". */
static void schedparam_round_trip(void)
{
    pthread_attr_t attr;
    struct sched_param sp = { .sched_priority = 0 };
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setschedparam(&attr, &sp));
    sp.sched_priority = -1;
    OK(pthread_attr_getschedparam(&attr, &sp));
    CHECK_EQ(sp.sched_priority, 0);
    sp.sched_priority = 5;
    FAILS(pthread_attr_setschedparam(&attr, &sp), EINVAL); /* SCHED_OTHER: 0 only */

    int lo = sched_get_priority_min(SCHED_FIFO), hi = sched_get_priority_max(SCHED_FIFO);
    CHECK(lo >= 0 && hi > lo);
    OK(pthread_attr_setschedpolicy(&attr, SCHED_FIFO));
    sp.sched_priority = (lo + hi) / 2;
    OK(pthread_attr_setschedparam(&attr, &sp));
    sp.sched_priority = -1;
    OK(pthread_attr_getschedparam(&attr, &sp));
    CHECK_EQ(sp.sched_priority, (lo + hi) / 2);
    OK(pthread_attr_destroy(&attr));
}

/* setstacksize "shall fail if: [EINVAL] The value of stacksize is less than
 * {PTHREAD_STACK_MIN} ..." */
static void stacksize_round_trip(void)
{
    pthread_attr_t attr;
    size_t size;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setstacksize(&attr, 1 * MiB));
    OK(pthread_attr_getstacksize(&attr, &size));
    CHECK_EQ(size, 1 * MiB);
    OK(pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN));
    OK(pthread_attr_getstacksize(&attr, &size));
    CHECK_EQ(size, PTHREAD_STACK_MIN);
    FAILS(pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN - 1), EINVAL);
    FAILS(pthread_attr_setstacksize(&attr, 0), EINVAL);
    OK(pthread_attr_destroy(&attr));
}

/* setstack "shall fail if: [EINVAL] The value of stacksize is less than
 * {PTHREAD_STACK_MIN} ..." */
static void stack_round_trip(void)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    CHECK(sizeof small_stack >= (size_t)PTHREAD_STACK_MIN);
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setstack(&attr, small_stack, sizeof small_stack));
    OK(pthread_attr_getstack(&attr, &addr, &size));
    CHECK(addr == small_stack);
    CHECK_EQ(size, sizeof small_stack);
    OK(pthread_attr_getstacksize(&attr, &size));
    CHECK_EQ(size, sizeof small_stack);
    FAILS(pthread_attr_setstack(&attr, small_stack, PTHREAD_STACK_MIN - 1), EINVAL);
    OK(pthread_attr_destroy(&attr));
}

/* POSIX: getguardsize returns "the guardsize specified in the previous
 * pthread_attr_setguardsize() function call" (before any rounding). */
static void guardsize_round_trip(void)
{
    pthread_attr_t attr;
    size_t size;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setguardsize(&attr, 0));
    OK(pthread_attr_getguardsize(&attr, &size));
    CHECK_EQ(size, 0);
    OK(pthread_attr_setguardsize(&attr, 3 * page_size()));
    OK(pthread_attr_getguardsize(&attr, &size));
    CHECK_EQ(size, 3 * page_size());
    OK(pthread_attr_destroy(&attr));
}

static void affinity_round_trip(void)
{
    cpu_set_t allowed, set, got;
    OK(sched_getaffinity(0, sizeof allowed, &allowed));
    int cpu = 0;
    while (!CPU_ISSET(cpu, &allowed))
        cpu++;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_attr_t attr;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setaffinity_np(&attr, sizeof set, &set));
    CPU_ZERO(&got);
    OK(pthread_attr_getaffinity_np(&attr, sizeof got, &got));
    CHECK(CPU_EQUAL(&set, &got));
    OK(pthread_attr_destroy(&attr));
}

/* pthread_attr_getsigmask_np(3): "If the signal mask attribute is currently
 * unset, then this function returns the special value
 * PTHREAD_ATTR_NO_SIGMASK_NP"; a NULL mask unsets it. */
static void sigmask_np_round_trip(void)
{
    pthread_attr_t attr;
    sigset_t set, got;
    OK(pthread_attr_init(&attr));
    CHECK_EQ(pthread_attr_getsigmask_np(&attr, &got), PTHREAD_ATTR_NO_SIGMASK_NP);
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    OK(pthread_attr_setsigmask_np(&attr, &set));
    sigemptyset(&got);
    OK(pthread_attr_getsigmask_np(&attr, &got));
    CHECK_EQ(sigismember(&got, SIGUSR1), 1);
    CHECK_EQ(sigismember(&got, SIGUSR2), 0);
    OK(pthread_attr_setsigmask_np(&attr, NULL));
    CHECK_EQ(pthread_attr_getsigmask_np(&attr, &got), PTHREAD_ATTR_NO_SIGMASK_NP);
    OK(pthread_attr_destroy(&attr));
}

/* ---- the attributes' effect on created threads ---- */

static void *report_sigmask(void *p)
{
    OK(pthread_sigmask(SIG_BLOCK, NULL, p));
    return NULL;
}

static sigset_t sigmask_of_new_thread(const pthread_attr_t *attr)
{
    sigset_t mask;
    pthread_t t;
    sigemptyset(&mask);
    OK(pthread_create(&t, attr, report_sigmask, &mask));
    OK(pthread_join(t, NULL));
    return mask;
}

/* With a signal mask attribute the new thread starts with that mask, not the
 * creator's; without one, "The signal mask shall be inherited from the
 * creating thread" (pthread_create). */
static void sigmask_np_sets_new_thread_mask(void)
{
    sigset_t usr1, usr2, saved, set, mask;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    OK(pthread_sigmask(SIG_BLOCK, &usr2, &saved)); /* the creator: USR2 only */
    OK(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL));

    mask = sigmask_of_new_thread(NULL);
    CHECK_EQ(sigismember(&mask, SIGUSR2), 1);
    CHECK_EQ(sigismember(&mask, SIGUSR1), 0);

    pthread_attr_t attr;
    OK(pthread_attr_init(&attr));
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    OK(pthread_attr_setsigmask_np(&attr, &set));
    mask = sigmask_of_new_thread(&attr);
    CHECK_EQ(sigismember(&mask, SIGUSR1), 1);
    CHECK_EQ(sigismember(&mask, SIGUSR2), 0);
    OK(pthread_attr_destroy(&attr));

    OK(pthread_sigmask(SIG_SETMASK, &saved, NULL));
}

static struct sync detached_seen;
static struct self_view detached_view;

static void *view_then_signal(void *p)
{
    view_self(&detached_view);
    sync_add(&detached_seen, 1);
    return NULL;
}

/* A thread created PTHREAD_CREATE_DETACHED is not joinable: its own
 * pthread_getattr_np says so (joining it would be undefined). */
static void detached_thread_is_detached(void)
{
    pthread_attr_t attr;
    pthread_t t;
    sync_init(&detached_seen);
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED));
    OK(pthread_create(&t, &attr, view_then_signal, NULL));
    OK(pthread_attr_destroy(&attr));
    sync_wait(&detached_seen, 1);
    CHECK_EQ(detached_view.detach_state, PTHREAD_CREATE_DETACHED);
    /* detached_seen stays: the thread may still be unlocking it */
}

/* "If the attributes specified by attr are modified later, the thread's
 * attributes shall not be affected" (pthread_create). */
static void attr_changes_after_create_do_not_apply(void)
{
    static struct self_view v;
    pthread_attr_t attr;
    pthread_t t;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setstacksize(&attr, 2 * MiB));
    OK(pthread_create(&t, &attr, view_self_thread, &v));
    OK(pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED));
    OK(pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN));
    OK(pthread_attr_destroy(&attr));
    OK(pthread_join(t, NULL));
    CHECK_EQ(v.detach_state, PTHREAD_CREATE_JOINABLE);
    CHECK(v.stack_size >= 2 * MiB);
}

/* A caller-supplied stack: the thread's local variables lie inside it. */
static void user_stack_holds_locals(void)
{
    const size_t size = 1 * MiB;
    void *region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(region != MAP_FAILED);
    pthread_attr_t attr;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setstack(&attr, region, size));
    struct self_view v = run_view(&attr);
    OK(pthread_attr_destroy(&attr));
    uintptr_t lo = (uintptr_t)region;
    CHECK(v.local >= lo && v.local < lo + size);
    /* What pthread_getattr_np reports holds the local and lies in the region. */
    CHECK(stack_holds(&v, v.local));
    CHECK(v.stack_lo >= lo && v.stack_lo + v.stack_size <= lo + size);
    CHECK_EQ(munmap(region, size), 0);
}

/* The stack size attribute is honoured: pthread_getattr_np(3) may report it
 * aligned upward, never smaller. (12 MiB: more than glibc's usual default.) */
static void stacksize_honoured(void)
{
    pthread_attr_t attr;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setstacksize(&attr, 12 * MiB));
    struct self_view v = run_view(&attr);
    OK(pthread_attr_destroy(&attr));
    CHECK(v.stack_size >= 12 * MiB);
    CHECK(stack_holds(&v, v.local));
}

static void *noop(void *p)
{
    return p;
}

/* The smallest allowed stack runs a thread. */
static void stack_min_runs(void)
{
    pthread_attr_t attr;
    OK(pthread_attr_init(&attr));
#ifndef __SANITIZE_THREAD__ /* ThreadSanitizer needs more stack than this */
    OK(pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN));
#endif
    pthread_t t;
    OK(pthread_create(&t, &attr, noop, NULL));
    OK(pthread_join(t, NULL));
    OK(pthread_attr_destroy(&attr));
}

/* Recurse with 1 KiB frames until `depth_bytes` of stack lie below `top`. */
static size_t dig(uintptr_t top, size_t depth_bytes)
{
    volatile char frame[1024];
    frame[0] = 1;
    frame[sizeof frame - 1] = 1;
    if (top - (uintptr_t)frame >= depth_bytes)
        return frame[0];
    return dig(top, depth_bytes) + frame[sizeof frame - 1];
}

static void *dig_6mib(void *p)
{
    int top;
    return (void *)dig((uintptr_t)&top, 6 * MiB);
}

/* A thread can use most of a large requested stack. */
static void large_stack_usable(void)
{
    pthread_attr_t attr;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setstacksize(&attr, 8 * MiB));
    pthread_t t;
    void *frames;
    OK(pthread_create(&t, &attr, dig_6mib, NULL));
    OK(pthread_join(t, &frames));
    CHECK((size_t)frames > 1000);
    OK(pthread_attr_destroy(&attr));
}

/* pthread_getattr_np(3): the guard size "may be rounded upward to a multiple
 * of the page size" (it may be ignored only for a caller-supplied stack). */
static void guardsize_honoured(void)
{
    pthread_attr_t attr;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setguardsize(&attr, 2 * page_size()));
    struct self_view v = run_view(&attr);
    OK(pthread_attr_destroy(&attr));
    CHECK(v.guard_size >= 2 * page_size());
}

/* ---- pthread_getattr_np ---- */

struct parked {
    struct self_view view;
    struct sync viewed, go;
};

static void *view_then_park(void *p)
{
    struct parked *k = p;
    view_self(&k->view);
    sync_add(&k->viewed, 1);
    sync_wait(&k->go, 1);
    return NULL;
}

/* Another thread's pthread_getattr_np on a running thread sees its real
 * stack and detach state. */
static void getattr_np_running_thread(void)
{
    static struct parked k;
    sync_init(&k.viewed);
    sync_init(&k.go);
    pthread_t t;
    OK(pthread_create(&t, NULL, view_then_park, &k));
    sync_wait(&k.viewed, 1);

    pthread_attr_t attr;
    void *lo;
    size_t size;
    int state;
    OK(pthread_getattr_np(t, &attr));
    OK(pthread_attr_getstack(&attr, &lo, &size));
    OK(pthread_attr_getdetachstate(&attr, &state));
    OK(pthread_attr_destroy(&attr));
    CHECK_EQ(state, PTHREAD_CREATE_JOINABLE);
    CHECK(k.view.local >= (uintptr_t)lo && k.view.local < (uintptr_t)lo + size);
    CHECK(stack_holds(&k.view, k.view.local));

    /* After pthread_detach, the running thread reports itself detached. */
    OK(pthread_detach(t));
    OK(pthread_getattr_np(t, &attr));
    OK(pthread_attr_getdetachstate(&attr, &state));
    OK(pthread_attr_destroy(&attr));
    CHECK_EQ(state, PTHREAD_CREATE_DETACHED);
    sync_add(&k.go, 1);
    /* k stays: the detached thread may still be using it */
}

static void getattr_np_main(void)
{
    struct self_view v;
    view_self(&v);
    CHECK_EQ(v.detach_state, PTHREAD_CREATE_JOINABLE);
    CHECK(v.stack_size > 0);
    CHECK(stack_holds(&v, v.local));
}

/* ---- pthread_getattr_default_np / pthread_setattr_default_np ---- */

/* pthread_setattr_default_np(3): the defaults are "the attributes that are
 * used when pthread_create(3) is called with a second argument that is
 * NULL"; "EINVAL ... the stack address attribute is set in attr". */
static void default_attr_round_trip(void)
{
    pthread_attr_t saved, attr;
    size_t old_size, size;
    OK(pthread_getattr_default_np(&saved));
    OK(pthread_attr_getstacksize(&saved, &old_size));
    CHECK(old_size >= (size_t)PTHREAD_STACK_MIN);

    /* Larger than the old default, so that no cached stack of the old
     * default size can serve the new thread. */
    size_t want = ((old_size + page_size() - 1) & ~(page_size() - 1)) + 4 * MiB;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setstacksize(&attr, want));
    OK(pthread_setattr_default_np(&attr));
    OK(pthread_attr_destroy(&attr));

    OK(pthread_getattr_default_np(&attr));
    OK(pthread_attr_getstacksize(&attr, &size));
    OK(pthread_attr_destroy(&attr));
    CHECK_EQ(size, want);
    /* A thread created with NULL attributes gets the new default. */
    struct self_view v = run_view(NULL);
    CHECK(v.stack_size >= want);

    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setstack(&attr, small_stack, sizeof small_stack));
    FAILS(pthread_setattr_default_np(&attr), EINVAL);
    OK(pthread_attr_destroy(&attr));

    OK(pthread_setattr_default_np(&saved));
    OK(pthread_attr_destroy(&saved));
    OK(pthread_getattr_default_np(&attr));
    OK(pthread_attr_getstacksize(&attr, &size));
    OK(pthread_attr_destroy(&attr));
    CHECK_EQ(size, old_size);
}

int main(void)
{
    RUN_CASE(attr_init_destroy_reinit, 10);
    RUN_CASE(attr_defaults, 10);
    RUN_CASE(detachstate_round_trip, 10);
    RUN_CASE(scope_round_trip, 10);
    RUN_CASE(inheritsched_round_trip, 10);
    RUN_CASE(schedpolicy_round_trip, 10);
    RUN_CASE(schedparam_round_trip, 10);
    RUN_CASE(stacksize_round_trip, 10);
    RUN_CASE(stack_round_trip, 10);
    RUN_CASE(guardsize_round_trip, 10);
    RUN_CASE(affinity_round_trip, 10);
    RUN_CASE(sigmask_np_round_trip, 10);
    RUN_CASE(sigmask_np_sets_new_thread_mask, 10);
    RUN_CASE(detached_thread_is_detached, 10);
    RUN_CASE(attr_changes_after_create_do_not_apply, 10);
    RUN_CASE(user_stack_holds_locals, 10);
    RUN_CASE(stacksize_honoured, 10);
    RUN_CASE(stack_min_runs, 10);
    RUN_CASE(large_stack_usable, 10);
    RUN_CASE(guardsize_honoured, 10);
    RUN_CASE(getattr_np_running_thread, 10);
    RUN_CASE(getattr_np_main, 10);
    RUN_CASE(default_attr_round_trip, 10);
    return 0;
}
