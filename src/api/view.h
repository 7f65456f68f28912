/* SPDX-License-Identifier: MIT */
/*
 * The live view: what each ito process tells ito-ctl (view.c serves it,
 * tools/ito-ctl.c reads it).
 *
 * Every ito process listens on a Unix stream socket in the abstract
 * namespace named ITO__VIEW_NAME with its user and pid; ito-ctl finds the
 * names in /proc/net/unix. A client of the same user (or root) that
 * connects gets one snapshot (snapshot.h) as text, and the connection is
 * closed:
 *
 *   ito-view 1
 *   pid 4242
 *   program echo_server
 *   policy ws
 *   taken_ns 81234567890               CLOCK_MONOTONIC, for rates
 *   alloc SHARING HELD WANT PRIORITY   SHARING 0: not in the allocation (HELD = WANT = vprocs)
 *   activations ACTIVATIONS SPARES
 *   threads RUNNING READY BLOCKED
 *   vp INDEX DOING CPU QUEUED SWITCHES STEALS HANDOFFS SLICES THREAD NAME
 *   ...                                one line per vproc; NAME (the rest of the line) may be empty
 *   end
 *
 * Counters are cumulative. A reader ignores lines it does not know; a
 * change that would mislead an older reader bumps the version, which is in
 * the name too.
 */
#ifndef ITO_API_VIEW_H
#define ITO_API_VIEW_H

#include <stdio.h>
#include <sys/types.h>

#define ITO__VIEW_VERSION 1
/* The socket's name, after the abstract namespace's NUL byte: user, pid. */
#define ITO__VIEW_NAME "ito-view-v1-%u-%d"

/* ITO_VIEW (default 1): start serving the view (at start, and in the child
 * of fork when it resumes ito). */
void ito__view_start(void);
/* The child of fork, at once: the parent's socket is not this process's. */
void ito__view_forked(void);

#endif
