/* SPDX-License-Identifier: MIT */
/*
 * Preemption: the "processor preempted" event within the process.
 *
 * Problem. A thread that computes without calling ito keeps its vproc: the
 * threads queued behind it wait, however long. The kernel preempts the
 * activation, not the thread, and then runs it again with the same thread.
 *
 * Approach. Every activation owns a POSIX timer on its own CPU-time clock
 * (CLOCK_THREAD_CPUTIME_ID) that sends it the preemption signal (SIGURG by
 * default, ITO_PREEMPT_SIGNAL) once per time slice (ITO_TIMESLICE_US, 10 ms
 * by default) of CPU time it consumes. A CPU-time clock does not advance
 * while the activation sleeps, so an idle process takes no signals at all,
 * and a parked spare none either. The handler runs on the interrupted thread's
 * own stack and compares the vproc's pick counter with the one it saw at the
 * previous tick: unchanged means the same thread has run for the whole
 * period between. Once it has run nearly a slice, it yields right there,
 * from the handler (ito__preempt_switch, which also does the vproc's
 * periodic work: timers, completions), and the kernel's signal frame below
 * it holds the full register state, vector registers included, until the
 * thread resumes, possibly on another activation, and returns from the
 * handler.
 *
 * Slice length. The timer ticks four times a slice, and a thread is
 * switched out at the last tick before it would have run more than one
 * slice: a thread picked between two ticks is counted from the first tick
 * after its pick, the part before it taken as a whole period; one picked at
 * the tick that ended the previous thread's slice is counted from there.
 * With one tick a slice, a thread ran between one and two slices (Go's
 * sysmon has that bound), and 4 threads on one vproc waited 60 ms for their
 * turns with 10 ms slices. The kernel checks CPU-time timers at its own
 * tick (4 ms at 250 Hz) and reports the periods that went by meanwhile as
 * overruns: the handler counts them, so slices are whole kernel ticks, at
 * most one slice long where the slice is at least two kernel ticks (4 x
 * 10 ms: 28-36 ms of waiting at 250 Hz; with 2 ms slices 12 ms, one kernel
 * tick each).
 *
 * Safe points. The interrupted thread is switched out only where that is
 * safe; otherwise the slice's end is deferred or recovered:
 *   - inside one of ito's critical sections (runtime/critical.h): the handler
 *     sets the word's attention bit and the section yields when it ends —
 *     the recovery of [SA §3.3, §4.3] (critical.c);
 *   - inside the C library, the dynamic loader or a sanitizer runtime (their
 *     locks record the owning kernel thread; their code keeps addresses of
 *     the kernel thread's TLS in registers): deferred to the next tick —
 *     except in the C library's memory and string functions (memcpy,
 *     memset, strlen...: no lock, no TLS) called by the program itself and
 *     still at their entry's stack (in_leaf_call), where a thread that
 *     spends its time in memset would otherwise run on for seconds;
 *   - when a register points into the kernel thread's static TLS: the thread
 *     may be between computing the address of a __thread variable (errno,
 *     most often: `call __errno_location; mov (%rax)`) and using it; after a
 *     migration that address would name another kernel thread's variable.
 *     Deferred to the next tick, once per slice (a register that still holds
 *     such an address a tick later is most likely dead);
 *   - with less than ITO__STACK_MARGIN of stack left: deferred.
 * errno is saved on entry and restored, after any switch, into the errno of
 * the kernel thread that runs the thread then.
 *
 * The signal is installed with SA_RESTART (an interrupted system call that
 * can be restarted is) and SA_NODEFER: a handler that switches away does not
 * return for a while, and the activation must take the next tick meanwhile.
 * Signals of this number that no timer sent (si_code != SI_TIMER) go to the
 * handler that was installed before ito's.
 *
 * The same signal, queued with a tag (SI_QUEUE, ITO__CARRIER_POKE_TAG), makes a
 * carrier look at once rather than at its next tick: the allocator's agent
 * sends it when it takes the vproc's processor away, and a policy through
 * ito_policy_preempt when it has given the vproc a more urgent thread
 * (vp->displace). Either switches the thread out at the first safe point,
 * whatever is left of its slice. A policy asking its own vproc needs no
 * signal: the request is recovered like a slice that ended inside ito.
 * The monitor sends it too (vp->look, ito__vproc_look) when a timer of the
 * vproc is overdue, or threads from outside wait, while its thread computes:
 * the vproc does its periodic work and the thread gives way if that made a
 * thread ready. A look that finds the thread in the C library at depth 0 —
 * in a system call that completes, most often — does that work at once
 * (ito__look_unswitched: no switch is needed for it), and what it made
 * ready waits for the thread's next switch; one that finds it waiting in a
 * system call does nothing (a stall is the monitor's business). It leaves
 * no request in the section word: the monitor takes the vproc of a carrier
 * asleep in an unbracketed call only from a word at 0 (leaving one there
 * once hung 16 POSIX threads on a stdio lock).
 *
 * Charging. The periods since the last tick count for the thread the tick
 * interrupts (t->periods; ito_policy_node_slices gives them in slices),
 * whether or not the thread is switched out: a policy thus learns the CPU
 * time of threads that park just before their slices end, which the
 * switches alone would never show it.
 *
 * Under valgrind the handler never switches: valgrind's sigreturn puts back
 * the TLS base of the kernel thread that took the signal, so a thread
 * resumed from its handler on another kernel thread ran with the first one's
 * thread-local state (its "current thread" and section depth: a yield that
 * followed found itself inside a section, 2 runs in 40 of join_transparent).
 * There a thread gives way at its calls into ito only.
 *
 * The tick is also where a kernel thread that lost its vproc while asleep in
 * an unbracketed call (runtime/carrier.c) and then runs its thread's own code without
 * calling ito gives the thread up: at the same safe points.
 *
 * Rejected: one timer per vproc on the wall clock (it fires every slice even
 * while the vproc sleeps, and must follow the vproc from activation to
 * activation), and the monitor sending tgkill (a monitor that must run
 * every few milliseconds while any thread computes).
 */
#include "base/libc.h"
#include "upcall/preempt.h"
#include "upcall/longrun.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <ito/policy.h>

#include "base/env.h"
#include "base/panic.h"
#include "runtime/carrier.h"
#include "runtime/event.h"
#include "runtime/hooks.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer.h"
#include "runtime/sched.h"
#include "runtime/stack.h"
#include "runtime/stats.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"
#include "runtime/sigmask.h"

#define ITO__TIMESLICE_DEFAULT_US 10000
/* Above the C library's descriptor (struct pthread, ~2.3 KiB in glibc 2.36). */
#define TCB_SPAN 4096

/* Code where a thread is never switched out; within it, the C library's;
 * and the code of the other modules loaded at start, the program's (all
 * read-only after init). */
#define MAX_RANGES 32
struct range { uintptr_t lo, hi; };
static struct range ranges[MAX_RANGES], libc_ranges[MAX_RANGES], code_ranges[MAX_RANGES];
static int nranges, nlibc_ranges, ncode_ranges;
static size_t tls_span;   /* static TLS below the thread pointer, rounded up */
static struct sigaction prev_action;

static bool is_runtime_library(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    static const char *const names[] = { "libc.so", "ld-linux", "ld64.so", "libpthread.so",
                                         "libasan.so", "libtsan.so", "libubsan.so", "liblsan.so" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strncmp(base, names[i], strlen(names[i])) == 0)
            return true;
    return false;
}

static int collect(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    bool runtime = info->dlpi_name && is_runtime_library(info->dlpi_name);
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    bool libc = runtime && strncmp(base ? base + 1 : info->dlpi_name, "libc.so", 7) == 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_TLS)
            tls_span += (ph->p_memsz + ph->p_align + 63) & ~(size_t)63;
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        struct range r = { info->dlpi_addr + ph->p_vaddr, info->dlpi_addr + ph->p_vaddr + ph->p_memsz };
        if (runtime && nranges < MAX_RANGES)
            ranges[nranges++] = r;
        if (libc && nlibc_ranges < MAX_RANGES)
            libc_ranges[nlibc_ranges++] = r;
        if (!runtime && ncode_ranges < MAX_RANGES)
            code_ranges[ncode_ranges++] = r;
    }
    return 0;
}

static bool in_ranges(const struct range *r, int n, uintptr_t x)
{
    for (int i = 0; i < n; i++)
        if (x >= r[i].lo && x < r[i].hi)
            return true;
    return false;
}

/* The C library's memory and string functions, which take no lock and use
 * no thread-local variable: each implementation the dynamic linker chose
 * (dlsym gives the one an IFUNC resolved to) up to the next of them, at most
 * LEAF_SPAN bytes on (the implementations are not in the dynamic symbol
 * table, so their sizes are not known; the C library keeps its string
 * functions together). Read-only after init. */
#define LEAF_SPAN 4096
static const char *const leaf_names[] = { "memcpy", "memmove", "mempcpy", "memset", "memcmp", "bcmp",
                                          "memchr", "memrchr", "rawmemchr", "strlen", "strnlen", "strchr",
                                          "strchrnul", "strrchr", "strcmp", "strncmp", "strcpy", "stpcpy",
                                          "strncpy", "strcat", "wmemset", "wcslen" };
static struct range leaves[sizeof leaf_names / sizeof leaf_names[0]];
static int nleaves;

static int by_lo(const void *a, const void *b)
{
    uintptr_t x = ((const struct range *)a)->lo, y = ((const struct range *)b)->lo;
    return x < y ? -1 : x > y;
}

static void find_leaves(void)
{
    for (size_t i = 0; i < sizeof leaf_names / sizeof leaf_names[0]; i++) {
        uintptr_t f = (uintptr_t)dlsym(RTLD_DEFAULT, leaf_names[i]);
        if (f && in_ranges(libc_ranges, nlibc_ranges, f))   /* (not a sanitizer's interceptor) */
            leaves[nleaves++] = (struct range){ f, f + LEAF_SPAN };
    }
    qsort(leaves, (size_t)nleaves, sizeof leaves[0], by_lo);
    for (int i = 0; i + 1 < nleaves; i++)
        if (leaves[i].hi > leaves[i + 1].lo)
            leaves[i].hi = leaves[i + 1].lo > leaves[i].lo ? leaves[i + 1].lo : leaves[i].lo + 1;
}

/* Interrupted in one of those functions, called by the program, which has
 * not pushed anything (they use no stack): the word at the stack pointer is
 * a return address into the program's code, right after a call. The
 * registers that could hold a TLS address are checked as for any thread:
 * it may be switched out there. Without this, a thread that spends most of
 * its time in memset was switched out only when a tick fell in its own
 * code: a thread beside it that slept 1 ms woke 1.5 s late on average. */
static bool in_leaf_call(const ucontext_t *uc)
{
    if (!in_ranges(leaves, nleaves, ITO_ARCH_UC_PC(uc)))
        return false;
    uintptr_t ret = *(const uintptr_t *)ITO_ARCH_UC_SP(uc);
    return in_ranges(code_ranges, ncode_ranges, ret) && in_ranges(code_ranges, ncode_ranges, ret - 6) &&
           ito__arch_after_call(ret);
}

static bool in_runtime_library(uintptr_t pc) { return in_ranges(ranges, nranges, pc); }

/* Does a register of the interrupted context point into this kernel
 * thread's static TLS or its C library descriptor? */
static bool holds_tls_address(const ucontext_t *uc)
{
    uintptr_t tp = ito__arch_thread_pointer();
    uintptr_t lo = tp - tls_span, hi = tp + TCB_SPAN;
    for (int i = 0; i < ITO__ARCH_UC_NGPR; i++) {
        uintptr_t r = ITO_ARCH_UC_GPR(uc, i);
        if (r >= lo && r < hi)
            return true;
    }
    return false;
}

/* The interrupted thread t may be switched out right here. */
static bool safe_point(struct ito__activation *a, struct ito__thread *t, const ucontext_t *uc)
{
    if (ito__thread_state(t) != ITO__TS_RUNNING)
        return false;   /* on its way to block (after its section): it switches soon */
    if (ito__running_on_valgrind())
        return false;   /* no switch in a handler there: see the essay */
    if (in_runtime_library(ITO_ARCH_UC_PC(uc)) && !in_leaf_call(uc))
        return false;
    /* A TLS address in use lives for a few instructions; one that is still
     * there a tick later is a dead register that happens to hold one (or a
     * loop over __thread data, which migration breaks anyway): defer once. */
    if (!a->slice_deferred && holds_tls_address(uc)) {
        a->slice_deferred = true;
        return false;
    }
    uintptr_t sp = ITO_ARCH_UC_SP(uc), lo = (uintptr_t)t->stack.lo;
    if (t->stack.lo && sp >= lo && sp < lo + t->stack.size && sp - lo < ITO__STACK_MARGIN)
        return false;
    return true;
}

/* Where a look (vp->look) may do the vproc's periodic work without a switch,
 * though not at a safe point: the thread runs (not on its way to block, when
 * that work could make it ready while it still runs here), has the stack the
 * work needs, and computes — in the C library, but not waiting in a system
 * call (a stall is the monitor's, and the wait must not end in a switch). */
static bool may_look_here(struct ito__thread *t, const ucontext_t *uc)
{
    if (ito__thread_state(t) != ITO__TS_RUNNING || ito__arch_uc_in_syscall_wait(uc))
        return false;
    uintptr_t sp = ITO_ARCH_UC_SP(uc), lo = (uintptr_t)t->stack.lo;
    return !(t->stack.lo && sp >= lo && sp < lo + t->stack.size && sp - lo < ITO__STACK_MARGIN);
}

/* After a switch the thread may return from the handler on another kernel
 * thread; the kernel's sigreturn would install the alternate signal stack
 * recorded in the frame — the first activation's. Record this one's. */
static void fix_frame(ucontext_t *uc, struct ito__activation *now)
{
    if (now->altstack && now->altstack != MAP_FAILED) {
        uc->uc_stack.ss_sp = now->altstack;
        uc->uc_stack.ss_size = now->altstack_size;
        uc->uc_stack.ss_flags = 0;
    }
}

static void chain(int sig, siginfo_t *si, void *uc)
{
    if (prev_action.sa_flags & SA_SIGINFO) {
        if (prev_action.sa_sigaction)
            prev_action.sa_sigaction(sig, si, uc);
    } else if (prev_action.sa_handler != SIG_DFL && prev_action.sa_handler != SIG_IGN) {
        prev_action.sa_handler(sig);
    }
}

static void on_tick(int sig, siginfo_t *si, void *ucv)
{
    /* Ours: a tick of an activation's timer, or the allocator's agent
     * telling a carrier that its vproc loses its processor. */
    if (ITO_UNLIKELY(ito__longrun_signal(si, ucv)))
        return;   /* a long-running thread's report (longrun.c) */
    bool poke = si->si_code == SI_QUEUE && si->si_pid == getpid() &&
                si->si_value.sival_int == ITO__CARRIER_POKE_TAG;
    if (si->si_code != SI_TIMER && !poke) {
        chain(sig, si, ucv);
        return;
    }
    ito__sigmask_interrupted();   /* (a wait in the kernel it ends waits again) */
    /* Until it switches, the handler runs on the interrupted kernel thread:
     * its activation, vproc and thread stay put. */
    struct ito__activation *a = ito__arch_activation();
    if (!a)
        return;
    int saved_errno = *ito__errno_ptr(a);
    /* No thread: a scheduler context — perhaps a parked spare, whose `vp` the
     * monitor writes. With a thread, only this activation writes `vp`. */
    struct ito__thread *t = ito__thread_self();
    if (!t || !a->vp)
        goto out;   /* its scheduler context, or a carrier that lost its vproc */
    /* Periods of CPU time since the last tick: more than one where the
     * kernel checks CPU-time timers less often than the period (at its own
     * tick: 4 ms at 250 Hz), which it reports as overruns. */
    uint32_t periods = 0;
    if (!poke) {
        /* They count for the thread it found running (charged per
         * thread: charging a whole slice to the thread found running
         * every fourth period would miss the same thread each round where
         * slices and charges fall into step). */
        periods = 1u + (uint32_t)(si->si_overrun > 0 ? (si->si_overrun < 1000 ? si->si_overrun : 1000) : 0);
        atomic_store_explicit(&t->periods, atomic_load_explicit(&t->periods, memory_order_relaxed) + periods,
                              memory_order_relaxed);
    }
    uint32_t word = ito__arch_critical_get(), depth = word & ITO__CRITICAL_DEPTH;
    if (word & ITO__CRITICAL_ATTENTION) {
        /* A slice that ended inside a section, or the monitor's mark
         * (runtime/carrier.c): the vproc is gone, or the steal was called off. */
        if (ito__carrier_lost(a)) {
            if (depth == 0 && safe_point(a, t, ucv)) {
                ito__critical_restore(0);
                ito__carrier_leave(a, t);
                a = ito__arch_activation();   /* resumed elsewhere */
                fix_frame(ucv, a);
            }
            goto out;   /* otherwise at its next section, or the next tick */
        }
        if (!a->slice_pending)
            ito__critical_restore(depth);   /* a steal called off */
    }
    /* Owner-written; this is the owner. */
    struct ito__vproc *vp = a->vp;
    uint64_t ticks = atomic_load_explicit(&vp->ticks, memory_order_relaxed);
    /* A vproc losing its processor, or a thread asked to give way, switches
     * out now, whatever its slice. Acquire pairs with the release store in
     * ito_policy_preempt. */
    bool now = ito__vproc_revoked(vp) || atomic_load_explicit(&vp->displace, memory_order_acquire) ||
               atomic_load_explicit(&vp->look, memory_order_relaxed);
    if (!now) {
        if (ticks != a->slice_ticks) {
            /* It picked since the last tick: a new slice, of which a part
             * of a period (unknown) has gone by. */
            a->slice_ticks = ticks;
            a->slice_periods = 0;
            a->slice_from_tick = false;
            a->slice_deferred = false;
            goto out;
        }
        /* The same thread since the last tick: it ran `periods` more. Its
         * slice ends here if waiting for the next tick, as far again,
         * would take it past one slice (counting the part before the
         * first tick as a whole period, unless it was picked at a tick). */
        a->slice_periods += periods;
        if (a->slice_periods + periods + (a->slice_from_tick ? 0u : 1u) <= ITO__SLICE_PERIODS)
            goto out;
    }
    if (depth > 0) {
        a->slice_pending = true;
        ito__arch_critical_or(ITO__CRITICAL_ATTENTION);   /* recovered when the section ends */
        goto out;
    }
    if (!safe_point(a, t, ucv)) {
        /* Deferred: the next tick looks again. But a thread that spends
         * most of its time in the C library (short system calls) would keep
         * a look waiting for a slice: its work, which needs no switch to
         * begin with, is done now — not with a user's event hook, which
         * might not expect to run inside a C library call. */
        if (depth == 0 && atomic_load_explicit(&vp->look, memory_order_relaxed) && !ito__vproc_revoked(vp) &&
            !atomic_load_explicit(&vp->displace, memory_order_relaxed) && !ito__event_hooked() &&
            may_look_here(t, ucv))
            ito__look_unswitched();
        goto out;
    }
    a->slice_pending = false;
    if (!atomic_load_explicit(&vp->displace, memory_order_relaxed) && !atomic_load_explicit(&vp->look, memory_order_relaxed))
        ITO_STAT_INC(vp, preemptions);
    /* The thread the vproc picks next (ticks + 1) starts its slice at this
     * tick: it is counted whole. Not after a look, which returns without a
     * pick when it made nothing ready: the thread goes on with its slice. */
    if (!atomic_load_explicit(&vp->look, memory_order_relaxed)) {
        a->slice_ticks = ticks + 1;
        a->slice_periods = 0;
        a->slice_from_tick = true;
        a->slice_deferred = false;
    }
    ito__preempt_switch(t);
    /* Resumed, perhaps on another activation. */
    a = ito__arch_activation();
    fix_frame(ucv, a);
    if (ito__hooks.preempted_resume) {
        *ito__errno_ptr(a) = saved_errno;
        ito__hooks.preempted_resume();   /* may not return (posix: cancellation) */
        a = ito__arch_activation();
    }
out:
    *ito__errno_ptr(a) = saved_errno;
}

/* Whether ITO_PREEMPT_SIGNAL may name s: a signal whose default action
 * nobody relies on (SIGTERM, SIGINT, SIGHUP, SIGALRM... end or stop the
 * program, or are its own: a time-slice handler would swallow them), or a
 * real-time one above those the C library keeps (32 and 33 in glibc). */
static bool takeable(int s)
{
    return s == SIGURG || s == SIGUSR1 || s == SIGUSR2 || s == SIGVTALRM || s == SIGPROF || s == SIGWINCH ||
           s == SIGPWR || (s >= SIGRTMIN && s <= SIGRTMAX);
}

void ito__preempt_init(void)
{
    long long us = ito__env_int("ITO_TIMESLICE_US", ITO__TIMESLICE_DEFAULT_US, 0, 10000000, false);
    if (!ito__rt.activations)
        return;   /* ITO_ACTIVATIONS=0 turns preemption off too */
    /* With slices off (us == 0) the handler is still installed, without
     * timers: a poke (a suspension, a more urgent thread, a processor taken
     * away) still stops a thread that computes without calling ito. */
    int sig = SIGURG;
    const char *name = ito__env_str("ITO_PREEMPT_SIGNAL");
    if (name) {
        int s = ito__signal_parse(name);
        if (takeable(s)) {
            sig = s;
        } else {
            char why[96];
            if (s < 0)
                snprintf(why, sizeof why, "not a signal");
            else if (s >= 32)   /* below SIGRTMIN */
                snprintf(why, sizeof why, "signal %d is the C library's own", s);
            else
                snprintf(why, sizeof why, "SIG%s is not free for ito to take over (the program or the "
                         "system relies on it)", sigabbrev_np(s) ? sigabbrev_np(s) : "?");
            ito__warn("ignoring ITO_PREEMPT_SIGNAL='%.64s': %s; accepted: SIGURG, SIGUSR1, SIGUSR2, SIGVTALRM, "
                      "SIGPROF, SIGWINCH, SIGPWR, SIGRTMIN+n up to SIGRTMAX (with or without SIG, or their "
                      "numbers); using SIGURG", name, why);
        }
    }
    dl_iterate_phdr(collect, NULL);
    find_leaves();
    tls_span = (tls_span + 2048 + 4095) & ~(size_t)4095;   /* plus the loader's surplus */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_tick;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &prev_action) != 0) {
        ito__warn("cannot install the preemption signal handler (%s): threads are not time-sliced",
                  strerror(errno));
        return;
    }
    ito__rt.timeslice_ns = (uint64_t)us * 1000u;
    ito__rt.preempt_signal = sig;
}

void ito__preempt_start_self(struct ito__activation *a)
{
    if (!ito__rt.preempt_signal)
        return;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, ito__rt.preempt_signal);
    ito__libc_pthread_sigmask(SIG_UNBLOCK, &set, NULL);   /* an inherited mask must not mute the ticks */
    if (!ito__rt.timeslice_ns)
        return;   /* slices off: pokes only */
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = ito__rt.preempt_signal;
    ev._sigev_un._tid = a->tid;
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &a->slice_timer) != 0) {
        ito__warn("cannot create a time-slice timer (%s): threads on one vproc are not "
                  "time-sliced", strerror(errno));
        return;
    }
    struct itimerspec its;
    uint64_t period_ns = ito__rt.timeslice_ns / ITO__SLICE_PERIODS;   /* (a slice is 1 us at least) */
    its.it_value.tv_sec = (time_t)(period_ns / 1000000000u);
    its.it_value.tv_nsec = (long)(period_ns % 1000000000u);
    its.it_interval = its.it_value;
    timer_settime(a->slice_timer, 0, &its, NULL);
}
