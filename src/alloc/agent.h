/* The allocator's agent: this process's side of the allocation table. See
 * agent.c. */
#ifndef ITO_ALLOC_AGENT_H
#define ITO_ALLOC_AGENT_H

#include <stdbool.h>

/* A vproc asleep this long tells the allocator it is idle (seed 000 §4.2's
 * hysteresis; idle.c). */
#define ITO_ALLOC_IDLE_NS 2000000u
/* A thread ready this long on a busy vproc, while the process is short of
 * processors, is waiting for one; such waits adding up to ITO_ALLOC_IDLE_NS
 * within a time slice ask for more (agent.c). */
#define ITO_ALLOC_WAIT_NS 100000u

/* Read ITO_ALLOCATOR, ITO_ALLOC_DOMAIN, ITO_PRIORITY and open the table:
 * sets ito__rt.allocator. Before the activations start. */
void ito__agent_configure(void);
/* Join the table and start the agent thread, after the activations have
 * started. A failure leaves the process with every vproc (with a warning),
 * never fails initialization. */
void ito__agent_start(void);
/* A vproc became idle (true) or busy again (false) after declaring itself
 * idle: the process's demand changed (idle.c). */
void ito__agent_idle(bool idle);

#endif
