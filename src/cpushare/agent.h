/* SPDX-License-Identifier: MIT */
/* The allocator's agent: this process's side of the allocation table. See
 * agent.c. */
#ifndef ITO_CPUSHARE_AGENT_H
#define ITO_CPUSHARE_AGENT_H

#include <stdbool.h>

#include <ito.h>

#include "runtime/hooks.h"   /* ITO__ALLOC_IDLE_NS */

struct ito__vproc;

/* A thread ready this long on a busy vproc, while the process is short of
 * processors, is waiting for one; such waits adding up to ITO__ALLOC_IDLE_NS
 * within a time slice ask for more (agent.c). */
#define ITO__ALLOC_WAIT_NS 100000u

/* Read ITO_ALLOCATOR, ITO_ALLOC_DOMAIN, ITO_PRIORITY and open the table:
 * sets ito__rt.allocator. Before the activations start. */
void ito__agent_configure(void);
/* Join the table and start the agent thread, after the activations have
 * started. A failure leaves the process with every vproc (with a warning),
 * never fails initialization. */
void ito__agent_start(void);
/* The child of fork: forget the parent's place in the table (at once; the
 * agent starts again with the rest of the child's runtime). */
void ito__agent_forked(void);
/* A vproc became idle (true) or busy again (false) after declaring itself
 * idle: the process's demand changed (idle.c). */
void ito__agent_idle(bool idle);
/* The runtime's demand hooks (runtime/hooks.h): this process could use more
 * processors (some of its vprocs have none): a time slice ended while
 * another thread waited (ito__agent_more), or work was made ready with no
 * vproc free (ito__agent_backlog, which weighs that first). */
void ito__agent_more(void);
void ito__agent_backlog(void);
/* vp picks while threads have waited for it since ito__agent_backlog timed
 * them (vp->backlog_since): their wait may be demand. vp's owner. */
void ito__agent_backlog_end(struct ito__vproc *vp);
/* ito_alloc_info's and ito_alloc_set_priority's work (api/alloc.c checks
 * the arguments and initializes first). */
void ito__agent_info(ito_alloc_info_t *info);
void ito__agent_set_priority(int priority);

#endif
