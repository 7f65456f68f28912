/* SPDX-License-Identifier: MIT */
/* The doorbell: the kernel thread that turns an I/O completion on the ring
 * of a vproc whose thread computes into a look at once. See doorbell.c. */
#ifndef ITO_UPCALL_DOORBELL_H
#define ITO_UPCALL_DOORBELL_H

/* Start it where the vprocs have rings and activations are on (after the
 * monitor, which rings its bells). 0, or an error code. */
int ito__doorbell_init(void);

#endif
