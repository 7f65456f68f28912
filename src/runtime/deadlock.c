/* SPDX-License-Identifier: MIT */
/*
 * Deadlock reports: "all N threads are asleep".
 *
 * Problem. A program whose threads all wait on each other hangs silently:
 * its vprocs sleep, it uses no CPU, and nothing says why. Go's runtime
 * says "all goroutines are asleep - deadlock!" and exits; so does ito.
 *
 * Detection, off the hot paths. ito knows the moment every vproc has gone to
 * sleep with nothing ahead (idle.c): the last vproc to sleep, when no timer
 * is pending, sleeps only ITO__DEADLOCK_GRACE_NS instead of for good. If it
 * wakes from that with nothing done meanwhile (no vproc picked a thread: the
 * sum of their pick counts stands still), it checks that no thread can ever
 * run again:
 *   - every vproc is asleep (or has no processor), and no timer is pending;
 *   - every ito thread is blocked on an ito object with no deadline (not in
 *     I/O, a sleep or a timed wait), or suspended; none is new, ready or
 *     running — a thread in a kernel call runs: the call may return;
 *   - every kernel thread of the process is ito's (an activation, or one of
 *     its own threads, all named "ito-..."): a kernel thread ito does not
 *     know could post a semaphore or unlock a mutex;
 *   - the program has no handler for a signal that may come from outside
 *     (synchronous faults, ito's own signals and the C library's internal
 *     ones aside): a handler may post a semaphore (sem_post is
 *     async-signal-safe).
 * Then it prints the report — the count, then each thread with what it waits
 * on and its backtrace (dump.c) — and ends the process with status 2, as Go
 * does (ITO_DEADLOCK=report, the default), or with abort() for a core file
 * (ITO_DEADLOCK=abort); ITO_DEADLOCK=off never checks.
 *
 * A check that finds a reason to wait on is not repeated until some vproc
 * has picked a thread since: none of the reasons goes away by itself, but
 * for a kernel thread outside ito that exits (then no report comes). The
 * grace period makes a snapshot of moving parts (threads read one by one)
 * safe: anything that changes a thread's state picks it on some vproc.
 *
 * Rejected: a watchdog thread polling for a silent process (a wake-up per
 * period in every program, and no moment when the state is known still);
 * counting threads asleep on every park and wake (a shared counter on the
 * hottest paths).
 */
#include "runtime/deadlock.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/env.h"
#include "base/libc.h"
#include "base/panic.h"
#include "runtime/dump.h"
#include "runtime/runtime.h"
#include "runtime/thread.h"
#include "runtime/timer.h"
#include "runtime/vproc.h"

/* How long the process must stay still before it is checked: longer than
 * any hand-over inside ito between two vprocs' picks (microseconds), short
 * beside a person waiting for a hung program. */
#define ITO__DEADLOCK_GRACE_NS 100000000u

enum { MODE_REPORT, MODE_ABORT, MODE_OFF };
static int mode = MODE_OFF;
static _Atomic uint64_t own_signals;        /* bit per signal ito itself handles */
static _Atomic bool checking;               /* one vproc checks at a time */
static _Atomic uint64_t cleared_ticks = UINT64_MAX; /* picks when a check last found a reason */

void ito__deadlock_init(void)
{
    const char *v = ito__env_str("ITO_DEADLOCK");
    mode = MODE_REPORT;
    if (!v || strcmp(v, "report") == 0)
        return;
    if (strcmp(v, "abort") == 0)
        mode = MODE_ABORT;
    else if (strcmp(v, "off") == 0)
        mode = MODE_OFF;
    else
        ito__warn("ignoring ITO_DEADLOCK='%s': not report, abort or off; using report", v);
}

void ito__deadlock_own_signal(int sig)
{
    if (sig > 0 && sig < 64)
        atomic_fetch_or_explicit(&own_signals, 1ull << sig, memory_order_relaxed);
}

static uint64_t picks(void)
{
    uint64_t sum = 0;
    for (int i = 0; i < ito__rt.nvprocs; i++)
        sum += atomic_load_explicit(&ito__rt.vprocs[i]->ticks, memory_order_relaxed);
    return sum;
}

static bool all_asleep(void)
{
    return atomic_load_explicit(&ito__rt.nsleeping, memory_order_acquire) +
               atomic_load_explicit(&ito__rt.nrevoked, memory_order_acquire) ==
           ito__rt.nvprocs;
}

uint64_t ito__deadlock_suspect(uint64_t now)
{
    if (mode == MODE_OFF || !all_asleep() || ito__timers_earliest() != UINT64_MAX ||
        picks() == atomic_load_explicit(&cleared_ticks, memory_order_relaxed))
        return 0;
    return now + ITO__DEADLOCK_GRACE_NS;
}

/* Is t parked for good? Counts it. */
static bool stuck(struct ito__thread *t, void *arg)
{
    int st = ito__thread_state(t);
    if (st == ITO__TS_BLOCKED) {
        unsigned on = atomic_load_explicit(&t->wait_on, memory_order_relaxed);
        if (on == ITO__ON_IO || on == ITO__ON_SLEEP || on == ITO__ON_NOTHING ||
            __atomic_load_n(&t->wait.timed, __ATOMIC_RELAXED))
            return false;
    } else if (st != ITO__TS_SUSPENDED) {
        return false;   /* new, ready or running */
    }
    ++*(int *)arg;
    return true;
}

/* Every thread parked for good? Counts them in *n. */
static bool threads_stuck(int *n)
{
    *n = 0;
    return ito__threads_all(stuck, n) && *n > 0;
}

/* Is every kernel thread of the process one of ito's? */
static bool only_ito_kernel_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return false;
    bool ours = true;
    struct dirent *e;
    while (ours && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        pid_t tid = (pid_t)atoi(e->d_name);
        if (ito__activation_tid_known(tid))
            continue;
        char path[64], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t r = ito__sys_read(fd, comm, sizeof comm - 1);
            comm[r > 0 ? r : 0] = '\0';
            close(fd);
        }
        ours = strncmp(comm, "ito-", 4) == 0;
    }
    closedir(d);
    return ours;
}

/* Could a signal handler of the program's wake a thread? */
static bool program_handles_signals(void)
{
    uint64_t own = atomic_load_explicit(&own_signals, memory_order_relaxed);
    for (int sig = 1; sig < SIGRTMAX + 1; sig++) {
        switch (sig) {
        case SIGKILL: case SIGSTOP:
        /* Raised by a thread's own instruction: no thread runs. */
        case SIGSEGV: case SIGBUS: case SIGFPE: case SIGILL: case SIGTRAP: case SIGSYS:
            continue;
        }
        if (sig == 32 || sig == 33 || sig == ito__rt.preempt_signal || (sig < 64 && (own >> sig & 1)))
            continue;   /* the C library's internal signals (SIGCANCEL, SIGSETXID), ito's own */
        struct sigaction sa;
        if (sigaction(sig, NULL, &sa) != 0)
            continue;
        if ((sa.sa_flags & SA_SIGINFO) || (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN))
            return true;
    }
    return false;
}

/* The C library's buffered output, unless a parked thread holds its lock. */
static void flush_output(void)
{
    if (ftrylockfile(stdout) == 0) {
        fflush_unlocked(stdout);
        funlockfile(stdout);
    }
}

void ito__deadlock_check(void)
{
    bool no = false;
    if (!atomic_compare_exchange_strong(&checking, &no, true))
        return;
    uint64_t before = picks();
    int n;
    bool dead = all_asleep() && ito__timers_earliest() == UINT64_MAX && threads_stuck(&n) &&
                only_ito_kernel_threads() && !program_handles_signals() && all_asleep() && picks() == before;
    if (!dead) {
        atomic_store_explicit(&cleared_ticks, before, memory_order_relaxed);
        atomic_store(&checking, false);
        return;
    }
    flush_output();
    char line[96];
    int len = snprintf(line, sizeof line, "ito: deadlock: all %d thread%s asleep\n", n, n == 1 ? " is" : "s are");
    ssize_t w = ito__sys_write(STDERR_FILENO, line, (size_t)len);
    (void)w;
    ito__dump_threads(STDERR_FILENO);
    if (mode == MODE_ABORT)
        abort();
    _exit(2);
}
