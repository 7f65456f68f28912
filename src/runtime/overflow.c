/* SPDX-License-Identifier: MIT */
/*
 * Stack overflow reports.
 *
 * A thread that runs off the bottom of its stack touches the guard page below
 * it (or, for a stack without one of ours — main's, whose growth the kernel
 * stops at RLIMIT_STACK, or a pooled stack past the guard-page budget — the
 * memory just below) and the kernel sends SIGSEGV. The signal cannot be handled on the
 * overflowed stack, so every activation has an alternate signal stack
 * (sigaltstack) and ito's handler runs there (SA_ONSTACK). If the faulting
 * address is in the guard page of the running thread's stack (or of the
 * activation's scheduler stack), the handler prints which thread overflowed,
 * its stack size and how to raise it, then aborts. Any other fault is passed
 * on to the handler that was installed before ito's, or, where that is the
 * default action, reported with the thread it hit (crash.c), then the
 * default restored and the handler returns, so that the fault repeats.
 *
 * Only calls a signal handler may make: write(2), open(2), read(2),
 * sigaction(2), abort(3).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/libc.h"
#include "runtime/crash.h"
#include "runtime/runtime.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

static struct sigaction prev_segv, prev_bus;

static size_t put_str(char *buf, size_t at, size_t cap, const char *s)
{
    while (*s && at < cap)
        buf[at++] = *s++;
    return at;
}

static size_t put_num(char *buf, size_t at, size_t cap, unsigned long long v, int base)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v % (unsigned)base];
        v /= (unsigned)base;
    } while (v);
    while (n && at < cap)
        buf[at++] = tmp[--n];
    return at;
}

static void report(const char *who, unsigned idx, const char *name, size_t size, void *addr)
{
    char buf[512];
    size_t n = 0, cap = sizeof buf;
    n = put_str(buf, n, cap, "ito: ");
    n = put_str(buf, n, cap, who);
    if (name) {
        n = put_num(buf, n, cap, idx, 10);
        if (*name) {
            n = put_str(buf, n, cap, " \"");
            n = put_str(buf, n, cap, name);
            n = put_str(buf, n, cap, "\"");
        }
    }
    n = put_str(buf, n, cap, " overflowed its stack of ");
    n = put_num(buf, n, cap, size, 10);
    n = put_str(buf, n, cap, " bytes (fault at 0x");
    n = put_num(buf, n, cap, (uintptr_t)addr, 16);
    n = put_str(buf, n, cap, ")\nito: give it a larger stack with ito_attr_set_stack_size(), "
                             "or set ITO_STACK_SIZE=<bytes> (default ");
    n = put_num(buf, n, cap, ito__rt.stack_size, 10);
    n = put_str(buf, n, cap, ")\n");
    ssize_t w = ito__sys_write(STDERR_FILENO, buf, n);
    (void)w;
}

static void chain(struct sigaction *prev, int sig, siginfo_t *si, void *uc)
{
    if (prev->sa_flags & SA_SIGINFO) {
        if (prev->sa_sigaction) {
            prev->sa_sigaction(sig, si, uc);
            return;
        }
    } else if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
        prev->sa_handler(sig);
        return;
    }
    /* Default action: say which thread it hit (crash.c), restore it and
     * return; the faulting instruction runs again and the fault now kills
     * the process (with a core dump). */
    ito__crash_report(sig, si, uc);
    signal(sig, SIG_DFL);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    /* A handler runs on the interrupted kernel thread: nothing migrates here. */
    struct ito__activation *act = ito__arch_activation();
    uintptr_t addr = (uintptr_t)si->si_addr;
    if (act && act->vp) {
        struct ito__thread *t = ito__thread_self();
        if (t && ito__stack_overflow_fault(&t->stack, addr, ito__rt.page)) {
            report("thread ", t->index, t->name, t->stack_size, si->si_addr);
            abort();
        }
        if (ito__stack_overflow_fault(&act->sched_stack, addr, ito__rt.page)) {
            report("the scheduler context of an activation", 0, NULL, act->sched_stack.size,
                   si->si_addr);
            abort();
        }
    }
    chain(sig == SIGBUS ? &prev_bus : &prev_segv, sig, si, uc);
}

void ito__overflow_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &prev_segv);
    sigaction(SIGBUS, &sa, &prev_bus);
}
