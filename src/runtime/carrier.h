/* SPDX-License-Identifier: MIT */
/* The carrier protocol: which activation runs a vproc, and the hand-off of a
 * vproc whose carrier sleeps in the kernel. See carrier.c. */
#ifndef ITO_RUNTIME_CARRIER_H
#define ITO_RUNTIME_CARRIER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ito__activation;
struct ito__thread;
struct ito__vproc;

/* vp->kstate: the carrier's activation address | one of these. */
enum { ITO__KS_RUN = 0, ITO__KS_KERNEL = 1, ITO__KS_STEAL = 2, ITO__KS_MASK = 3 };

/* The activation named by a kstate value. */
static inline struct ito__activation *ito__ks_carrier(uintptr_t ks)
{
    return (struct ito__activation *)(ks & ~(uintptr_t)ITO__KS_MASK);
}

/* Carrier side. a carries vp from now on (at its start). */
void ito__carrier_adopt(struct ito__vproc *vp, struct ito__activation *a);
/* With the attention bit seen: has the monitor taken a's vproc? Waits out a
 * decision in progress. */
bool ito__carrier_lost(struct ito__activation *a);
/* a lost its vproc; t, its RUNNING thread, is at a safe point: t goes back
 * to a ready queue and a parks. Returns when t runs again, on another
 * activation. */
void ito__carrier_leave(struct ito__activation *a, struct ito__thread *t);

/* Monitor side. The CPU time a's kernel thread has used (false: unknown). */
bool ito__carrier_cpu_time(const struct ito__activation *a, uint64_t *ns);
/* vp's carrier is in a bracketed call (kstate == mark): give vp to the
 * spare s. False if the call returned meanwhile (s is still the caller's). */
bool ito__carrier_hand_off(struct ito__vproc *vp, uintptr_t mark, struct ito__activation *s);
/* vp, carried by `carrier`, has picked nothing for a while: if the carrier
 * sleeps in the kernel outside any critical section, give vp to the spare
 * s. False if not (s is still the caller's). */
bool ito__carrier_steal(struct ito__vproc *vp, struct ito__activation *carrier, struct ito__activation *s);

/* Doorbells of the monitor (ito__rt.monitor_asleep): awake (0), asleep for
 * a while (ASLEEP), asleep until woken because every vproc is idle
 * (ASLEEP_LONG), woken from that by a vproc that got busy (WOKEN_BUSY), woken
 * by a timer armed before the end of its sleep (WOKEN_TIMER). */
enum { ITO__MONITOR_ASLEEP = 1, ITO__MONITOR_ASLEEP_LONG = 2, ITO__MONITOR_WOKEN_BUSY = 3, ITO__MONITOR_WOKEN_TIMER = 4 };
/* A timer overdue by this much on a vproc that computes, while no vproc is
 * idle to run it, makes the monitor ask that vproc to look (ito__vproc_look)
 * — at once, if the vproc has run one thread this long already; so do
 * threads left this long in the global queue. */
#define ITO__LOOK_LATE_NS 200000u
/* A timer was armed (after publishing it in its heap): wake the monitor if
 * it sleeps past deadline + ITO__LOOK_LATE_NS (ito__rt.monitor_until). */
void ito__carrier_timer_armed(uint64_t deadline);
/* A blocking call began while the monitor sleeps: wake it (it looks again
 * at its fastest pace). */
void ito__carrier_wake_monitor(void);
/* A vproc got busy while the monitor sleeps until woken: wake it (to watch
 * for stalls; a blocking call would wake it by itself). */
void ito__carrier_wake_monitor_busy(void);

/* si_value of the time-slice signal sent with SI_QUEUE to make a carrier
 * look at its vproc's requests now: revoked (cpushare/agent.c) or asked to
 * give way (ito_policy_preempt). */
#define ITO__CARRIER_POKE_TAG 0x69746f72   /* "itor" */
/* Send it to the kernel thread tid (nothing without time slicing). */
void ito__carrier_poke(pid_t tid);

#endif
