/* Preemption by time slices (preempt.c). */
#ifndef ITO_KERNEL_PREEMPT_H
#define ITO_KERNEL_PREEMPT_H

struct ito__activation;
struct ito__vproc;

/* Read ITO_TIMESLICE_US and ITO_PREEMPT_SIGNAL and install the handler
 * (before any activation starts). Sets ito__rt.timeslice_ns, 0 if off. */
void ito__preempt_init(void);
/* Start the calling activation's time-slice timer. */
void ito__preempt_start_self(struct ito__activation *a);

/* Threads wait for vp, on its own kernel thread, with no vproc free and
 * some without a processor (ito__agent_backlog); its next pick ends the
 * wait. Their time counts as demand at the next tick (alloc/agent.c). */
void ito__backlog_begin(struct ito__vproc *vp);
void ito__backlog_end(struct ito__vproc *vp);

/* si_value of the time-slice signal that the allocator's agent sends to the
 * carrier of a vproc it revokes (src/alloc/agent.c), with SI_QUEUE. */
#define ITO_PREEMPT_REVOKE_TAG 0x69746f72   /* "itor" */

#endif
