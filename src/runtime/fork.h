/* SPDX-License-Identifier: MIT */
/* A child process starts with the process's scheduling, not a carrier's.
 * See fork.c. */
#ifndef ITO_RUNTIME_FORK_H
#define ITO_RUNTIME_FORK_H

/* Once, at initialization. */
void ito__fork_init(void);

#endif
