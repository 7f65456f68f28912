/* SPDX-License-Identifier: MIT */
/* The child of fork: a working ito process whose one thread is the one that
 * forked. See fork.c. */
#ifndef ITO_RUNTIME_FORK_H
#define ITO_RUNTIME_FORK_H

/* In the child, state FORKED, under the init lock (api/init.c): make the
 * rings and start the other vprocs' activations. The monitor and the agent
 * are the caller's to start. */
int ito__fork_resume(void);

#endif
