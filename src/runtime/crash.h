/* SPDX-License-Identifier: MIT */
/* Crashes name the thread (crash.c). */
#ifndef ITO_RUNTIME_CRASH_H
#define ITO_RUNTIME_CRASH_H

#include <signal.h>

/* In a handler of a fatal signal: if an ito thread took it, say which and
 * where (from the signal's context uc) on stderr. */
void ito__crash_report(int sig, const siginfo_t *si, void *uc);
/* Watch SIGFPE, SIGILL and SIGABRT where their action is the default. */
void ito__crash_install(void);

#endif
