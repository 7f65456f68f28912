/* SPDX-License-Identifier: MIT */
/*
 * Crashes name the thread.
 *
 * A fatal signal in an ito thread — a bad access (SIGSEGV, SIGBUS), a
 * division by zero (SIGFPE), an illegal instruction (SIGILL), abort() —
 * kills the process with a core as before, but first says on stderr which
 * ito thread it hit (index, name, vproc) and where (its backtrace from the
 * signal's own context): the kernel only knows the kernel thread, and a
 * debugger on the core sees the activation, not the thread.
 *
 * Only signals whose action is the default one are watched, when ito starts
 * (a program's own handler is left alone); SIGSEGV and SIGBUS reach here
 * from the stack overflow handler (overflow.c), which watches them anyway.
 * The handler reports, puts the default action back (SA_RESETHAND) and
 * returns: a fault happens again, now fatal; a signal that was sent (kill,
 * raise, abort's) is sent again. The report uses write, open and read only
 * (base/backtrace.h): it runs where the program broke, with any lock held.
 */
#include "runtime/crash.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/backtrace.h"
#include "base/libc.h"
#include "runtime/deadlock.h"
#include "runtime/dump.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

void ito__crash_report(int sig, const siginfo_t *si, void *uc)
{
    struct ito__thread *t = ito__thread_self();
    if (!t)
        return;   /* not an ito thread: nothing to add */
    char line[256];
    size_t n = (size_t)snprintf(line, sizeof line, "ito: ");
    n += ito__dump_name(line + n, sizeof line - n, t);
    struct ito__vproc *vp = t->vp;
    int k = snprintf(line + n, sizeof line - n, " on vproc %d got %s", vp ? vp->index : -1,
                     sigabbrev_np(sig) ? sigabbrev_np(sig) : "a signal");
    n += k > 0 ? (size_t)k : 0;
    if (n < sizeof line && sig != SIGABRT && si->si_code > 0)
        n += (size_t)snprintf(line + n, sizeof line - n, " (at address %p)", si->si_addr);
    if (n > sizeof line - 3)
        n = sizeof line - 3;
    line[n++] = ':';
    line[n++] = '\n';
    ssize_t w = ito__sys_write(STDERR_FILENO, line, n);
    (void)w;
    ito__bt_write(STDERR_FILENO, uc, true, "    ");
}

static void on_crash(int sig, siginfo_t *si, void *uc)
{
    ito__crash_report(sig, si, uc);
    /* The default action is back (SA_RESETHAND): a fault repeats when the
     * instruction runs again; a signal that was sent must be sent again. */
    if (si->si_code <= 0 || sig == SIGABRT)
        syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), sig);   /* (the POSIX face's raise would route it) */
}

void ito__crash_install(void)
{
    static const int sigs[] = { SIGFPE, SIGILL, SIGABRT };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_crash;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESETHAND;
        /* No handler of the program's runs inside the report: one that
         * calls ito (or faults) again would report over it, or hang it. */
        sigfillset(&sa.sa_mask);
        if (sigaction(sigs[i], &sa, NULL) == 0)
            ito__deadlock_own_signal(sigs[i]);   /* not a program's handler */
    }
}
