/* SPDX-License-Identifier: MIT */
/* futex(2): the kernel's wait queue keyed by a 32-bit word. Used where ito
 * must block a kernel thread: an idle vproc, a foreign kernel thread waiting
 * on an ito object. */
#ifndef ITO_BASE_FUTEX_H
#define ITO_BASE_FUTEX_H

#include <stdatomic.h>
#include <stdint.h>

/* Sleep while *word == expected, until woken or CLOCK_MONOTONIC reaches
 * deadline_ns (0: no deadline). Returns 0, or ETIMEDOUT, EAGAIN (value
 * differed), EINTR; callers recheck their condition in every case. */
int ito__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t deadline_ns);
/* Wake up to n kernel threads sleeping on word. */
void ito__futex_wake(_Atomic uint32_t *word, int n);
/* The same on a word in memory shared between processes (src/cpushare). */
int ito__futex_wait_shared(_Atomic uint32_t *word, uint32_t expected, uint64_t deadline_ns);
void ito__futex_wake_shared(_Atomic uint32_t *word, int n);

#endif
