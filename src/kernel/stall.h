/* Stalls: a carrier asleep in a call that nobody bracketed (stall.c). */
#ifndef ITO_KERNEL_STALL_H
#define ITO_KERNEL_STALL_H

#include <stdbool.h>
#include <stdint.h>

struct ito__activation;
struct ito__thread;
struct ito__vproc;

/* Monitor side. The CPU time a's kernel thread has used (false: unknown). */
bool ito__stall_cpu_time(const struct ito__activation *a, uint64_t *ns);
/* vp, carried by `carrier`, has picked nothing for a while: if the carrier
 * sleeps in the kernel outside any critical section, make `spare` its
 * carrier (kstate spare|RUN) and return true; the caller hands vp over. */
bool ito__stall_take(struct ito__vproc *vp, struct ito__activation *carrier, struct ito__activation *spare);

/* Carrier side, with the attention bit seen. Has the monitor taken a's
 * vproc? Waits out a decision in progress. */
bool ito__stall_lost(struct ito__activation *a);
/* a lost its vproc; t, its RUNNING thread, is at a safe point: t goes back
 * to a ready queue and a parks. Returns when t runs again, on another
 * activation. */
void ito__stall_leave(struct ito__activation *a, struct ito__thread *t);

#endif
