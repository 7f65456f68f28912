/* SPDX-License-Identifier: MIT */
/* How often the kernel looks at CPU-time timers — its tick (HZ), which
 * ito's time slices are whole multiples of (upcall/preempt.c): a profiling
 * timer of 100 us is signalled once per look while the calling thread
 * computes for `ms` of CPU time. Call it before other threads compute (the
 * profiling timer counts the whole process's CPU time). Used by bench/wakeup
 * and tests/upcall/preempt_fairness; one includer per program. */
#ifndef ITO_BENCH_CPU_TIMER_TICK_H
#define ITO_BENCH_CPU_TIMER_TICK_H

#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t cpu_timer_signals;
static void cpu_timer_on_prof(int sig) { (void)sig; cpu_timer_signals++; }

static double cpu_timer_process_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The kernel's tick as CPU-time timers see it, in ms (0: not measured). */
static double cpu_timer_tick_ms(double ms)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = cpu_timer_on_prof;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, &old);
    struct itimerval it = { { 0, 100 }, { 0, 100 } }, off = { { 0, 0 }, { 0, 0 } };
    cpu_timer_signals = 0;
    double c0 = cpu_timer_process_ms(), c1 = c0;
    setitimer(ITIMER_PROF, &it, NULL);
    while (c1 - c0 < ms)
        c1 = cpu_timer_process_ms();
    setitimer(ITIMER_PROF, &off, NULL);
    sigaction(SIGPROF, &old, NULL);
    return cpu_timer_signals ? (c1 - c0) / cpu_timer_signals : 0;
}

#endif
