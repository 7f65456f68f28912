/* Preemption by time slices (preempt.c). */
#ifndef ITO_KERNEL_PREEMPT_H
#define ITO_KERNEL_PREEMPT_H

#include <sys/types.h>

struct ito__activation;

/* Read ITO_TIMESLICE_US and ITO_PREEMPT_SIGNAL and install the handler
 * (before any activation starts). Sets ito__rt.timeslice_ns, 0 if off. */
void ito__preempt_init(void);
/* Start the calling activation's time-slice timer. */
void ito__preempt_start_self(struct ito__activation *a);

/* si_value of the time-slice signal sent with SI_QUEUE to make a carrier
 * look at its vproc's requests now: revoked (src/alloc/agent.c) or asked to
 * give way (ito_policy_preempt). */
#define ITO_PREEMPT_POKE_TAG 0x69746f72   /* "itor" */

/* Send it to the kernel thread tid (nothing without time slicing). */
void ito__preempt_poke(pid_t tid);

#endif
