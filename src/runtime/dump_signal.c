/* SPDX-License-Identifier: MIT */
/*
 * The thread dump on demand: with ITO_DUMP_SIGNAL=SIGQUIT (or another
 * signal), `kill -QUIT <pid>` prints every ito thread — state, name, what it
 * waits on, backtrace (dump.h) — and writes the timeline if ITO_TRACE is
 * set, and the program goes on.
 *
 * Where the dump runs. A signal for the process goes to a kernel thread that
 * does not block it. While every vproc sleeps, every activation blocks all
 * signals (runtime/sigmask.c), so a handler alone would not run until some
 * thread does — just when a hung program is dumped. So a kernel thread of
 * ito's, "ito-dump", waits for the signal in sigwaitinfo: a signal that no
 * activation accepts is left pending for the process and it takes it. Where
 * an activation running a thread accepts it, the handler runs there and
 * only sends it on to ito-dump (tgkill). The dump itself runs on ito-dump,
 * a normal context, while the threads go on: a thread that runs while its
 * stack is read gets a backtrace of whatever its stack holds then (never a
 * fault: stacks stay mapped while their thread lives), and a running one is
 * named with its vproc, without a backtrace.
 */
#include "runtime/dump.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/env.h"
#include "base/kthread.h"
#include "base/libc.h"
#include "base/panic.h"
#include "runtime/deadlock.h"
#include "runtime/runtime.h"
#include "runtime/trace.h"

static int dump_sig;
static _Atomic pid_t dump_tid;

static void on_dump_signal(int sig)
{
    int saved = errno;
    pid_t tid = atomic_load_explicit(&dump_tid, memory_order_relaxed);
    if (tid)
        syscall(SYS_tgkill, getpid(), tid, sig);
    errno = saved;
}

static void *dumper(void *arg)
{
    (void)arg;
    atomic_store_explicit(&dump_tid, (pid_t)syscall(SYS_gettid), memory_order_relaxed);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, dump_sig);
    for (;;) {
        /* The kernel's call: the POSIX face's sigwaitinfo is for its threads. */
        if (syscall(SYS_rt_sigtimedwait, &set, NULL, NULL, _NSIG / 8) != dump_sig)
            continue;
        char line[96];
        int n = snprintf(line, sizeof line, "ito: thread dump (SIG%s):\n", sigabbrev_np(dump_sig) ? sigabbrev_np(dump_sig) : "?");
        ssize_t w = ito__sys_write(STDERR_FILENO, line, (size_t)n);
        int count = ito__dump_threads(STDERR_FILENO);
        n = snprintf(line, sizeof line, "ito: end of thread dump (%d threads)\n", count);
        w = ito__sys_write(STDERR_FILENO, line, (size_t)n);
        (void)w;
        ito__trace_write();
    }
    return NULL;
}

void ito__dump_signal_init(void)
{
    const char *v = ito__env_str("ITO_DUMP_SIGNAL");
    if (!v)
        return;
    int sig = ito__signal_parse(v);
    if (sig < 0 || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE ||
        sig == SIGILL || sig == SIGABRT || sig == ito__rt.preempt_signal || sig == 32 || sig == 33) {
        ito__warn("ignoring ITO_DUMP_SIGNAL='%s': not a signal ito can take (use SIGQUIT, SIGUSR1, SIGUSR2, "
                  "SIGRTMIN+n or another that the program does not use, other than the time-slice signal); "
                  "no thread dump on demand", v);
        return;
    }
    dump_sig = sig;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_dump_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    int e = ito__kthread_start("ito-dump", 256 * 1024, dumper, NULL, NULL);
    if (e || sigaction(sig, &sa, NULL) != 0) {
        ito__warn("ITO_DUMP_SIGNAL: cannot set up the thread dump (%s)", strerror(e ? e : errno));
        return;
    }
    ito__deadlock_own_signal(sig);
}

void ito__dump_signal_forked(void)
{
    if (!dump_sig)
        return;
    atomic_store_explicit(&dump_tid, 0, memory_order_relaxed);   /* the parent's */
    if (ito__kthread_start("ito-dump", 256 * 1024, dumper, NULL, NULL) != 0)
        ito__warn("ITO_DUMP_SIGNAL: cannot start the thread dump in the child of fork");
}
