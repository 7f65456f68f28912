/* Preemption by time slices (preempt.c). */
#ifndef ITO_KERNEL_PREEMPT_H
#define ITO_KERNEL_PREEMPT_H

struct ito__activation;

/* Read ITO_TIMESLICE_US and ITO_PREEMPT_SIGNAL and install the handler
 * (before any activation starts). Sets ito__rt.timeslice_ns, 0 if off. */
void ito__preempt_init(void);
/* Start the calling activation's time-slice timer. */
void ito__preempt_start_self(struct ito__activation *a);

/* si_value of the time-slice signal that the allocator's agent sends to the
 * carrier of a vproc it revokes (src/alloc/agent.c), with SI_QUEUE. */
#define ITO_PREEMPT_REVOKE_TAG 0x69746f72   /* "itor" */

#endif
