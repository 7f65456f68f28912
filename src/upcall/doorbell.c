/* SPDX-License-Identifier: MIT */
/*
 * The doorbell: an I/O completion while the vproc computes.
 *
 * Problem. A thread parked in an I/O call is made ready when its vproc
 * reaps the completion: between threads (sched.c: periodic) or when idle.
 * A vproc whose thread computes reaps nothing until the slice ends; the
 * monitor looks at such rings every millisecond (monitor.c), so an urgent
 * thread woken by its I/O ran about a millisecond late (p99 1.3 ms beside
 * computing threads on every vproc, against 100 µs for the other paths).
 *
 * Approach. Every ring has a second eventfd registered as its completion
 * eventfd (io_uring_register_eventfd), off at start (the CQ's
 * IORING_CQ_EVENTFD_DISABLED flag: a store in the ring's shared memory, no
 * system call). The monitor turns a vproc's bell on while its thread
 * computes (few picks since the last scan, the carrier running: a ring
 * without parked threads has nearly no completions) and off otherwise, so a
 * vproc that switches
 * often — an echo server, which reaps at its picks — never rings: a bell at
 * every park cost such a server 8 % of its throughput. This thread polls
 * every bell; when one rings, it drains the eventfd and asks that vproc to
 * look (ito__vproc_look: the poke), which reaps the ring from its time-slice
 * handler and lets the woken thread displace the computing one where the
 * policy says so. It runs at the monitor's real-time priority where the
 * process may (ITO_MONITOR_RT), for the same reason: with every CPU
 * computing, a normal-priority wake-up waits milliseconds.
 *
 * The monitor's millisecond look stays: a completion posted before the bell
 * was on, or while it is off, is found there.
 *
 * In a program run through the POSIX face, a poke may land in an event
 * loop's epoll_wait, a wait in the kernel there: posix/kernel_wait.c waits
 * again after such an EINTR of ito's.
 *
 * Rejected: the monitor polling the bells itself (it sleeps on a futex that
 * every blocking call may wake; a poll would need an eventfd write per
 * call); a bell per park (above); a signal from the eventfd (eventfd has no
 * asynchronous notification).
 */
#include "upcall/doorbell.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/env.h"
#include "base/kthread.h"
#include "base/libc.h"
#include "base/procstat.h"
#include "runtime/ring.h"
#include "runtime/runtime.h"
#include "runtime/sched.h"

/* A poked vproc that has not picked since is poked again this often, at
 * most this many times (then its next tick sees to it). */
#define ITO__DOORBELL_AGAIN_NS 100000L
#define ITO__DOORBELL_AGAIN_MAX 3

static struct pollfd *bells;   /* one per vproc, in vproc order */
struct poked {
    uint64_t ticks;            /* vp->ticks when poked */
    int again;                 /* pokes left (0: not waiting) */
};
static struct poked *poked;

/* Does vp's carrier run (or wait for a CPU), rather than sleep in the
 * kernel? Asked of the kernel (/proc: a few microseconds, once a ring). */
static bool carrier_runs(struct ito__vproc *vp)
{
    pid_t tid = ito__vproc_carrier_tid(vp);
    return tid && !ito__procstat_asleep(tid);
}

static void *doorbell_main(void *arg)
{
    (void)arg;
    if (ito__env_int("ITO_MONITOR_RT", 1, 0, 1, false)) {
        struct sched_param rt = { .sched_priority = 1 };
        ito__sys_sched_setscheduler(0, SCHED_FIFO, &rt);   /* (EPERM: stays as it was) */
    }
    int n = ito__rt.nvprocs, waiting = 0;
    for (;;) {
        /* (The system call itself: the POSIX face's poll would park.) */
        struct timespec again = { 0, ITO__DOORBELL_AGAIN_NS };
        int r = (int)syscall(SYS_ppoll, bells, (nfds_t)n, waiting ? &again : NULL, NULL, (size_t)8);
        if (r < 0)
            continue;   /* EINTR */
        waiting = 0;
        for (int i = 0; i < n; i++) {
            struct ito__vproc *vp = ito__rt.vprocs[i];
            struct poked *p = &poked[i];
            if (bells[i].revents & POLLIN) {
                uint64_t count;
                while (ito__libc_read(bells[i].fd, &count, sizeof count) == sizeof count)
                    ;   /* drained: it rings again at the next completion */
                /* The vproc may have reaped meanwhile, at a pick; and its
                 * carrier may be asleep in a system call nobody bracketed
                 * (an event loop's epoll_wait), which the poke would end
                 * with EINTR for nothing: a stall is the monitor's. */
                if (ito__ring_waiters(vp->ring) && ito__ring_ready(vp->ring) && carrier_runs(vp)) {
                    *p = (struct poked){ atomic_load_explicit(&vp->ticks, memory_order_relaxed),
                                         ITO__DOORBELL_AGAIN_MAX };
                    ito__vproc_look(vp);
                    waiting++;
                    continue;
                }
            }
            if (!p->again)
                continue;
            if (atomic_load_explicit(&vp->ticks, memory_order_relaxed) != p->ticks) {
                p->again = 0;   /* it picked: what the look made ready runs */
                continue;
            }
            /* The first poke found its thread where it may not be switched
             * out (preempt.c: a register that may hold a TLS address gets a
             * tick, and what the look made ready waits for the thread's
             * next switch): ask again. */
            if (r == 0) {
                p->again--;
                ito__vproc_look_again(vp);
            }
            waiting += p->again > 0;
        }
    }
    return NULL;
}

int ito__doorbell_init(void)
{
    if (!ito__rt.activations || !ito__rings_on)
        return 0;
    free(bells);   /* the child of fork starts one again, with its own rings */
    free(poked);
    bells = calloc((size_t)ito__rt.nvprocs, sizeof *bells);
    poked = calloc((size_t)ito__rt.nvprocs, sizeof *poked);
    if (!bells || !poked)
        return ENOMEM;
    for (int i = 0; i < ito__rt.nvprocs; i++)
        bells[i] = (struct pollfd){ .fd = ito__rt.vprocs[i]->ring->bell, .events = POLLIN };
    return ito__kthread_start("ito-doorbell", 64 * 1024, doorbell_main, NULL, NULL);
}
