/* SPDX-License-Identifier: MIT */
/* Thread pointers for ito threads: the C library's TLS block and thread
 * descriptor (tcb.c). */
#ifndef ITO_POSIX_TCB_H
#define ITO_POSIX_TCB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Find what the C library needs; 0 or an errno value (ENOSYS: not glibc,
 * with a message on stderr saying so). Once, before any thread pointer. */
int ito__tcb_init(void);

/* A new thread pointer: static TLS with every module's initial values, a
 * zeroed descriptor whose header matches the caller's, `self` stored in
 * libito-pthread's own slot. 0 if out of memory. */
uintptr_t ito__tcb_create(void *self);

/* Make a used thread pointer new again for the next thread: initial TLS
 * values for every module but the C library's, whose block (its malloc
 * cache, its locale pointers) stays with the thread pointer, as glibc keeps
 * it with a cached stack. false if out of memory (a library loaded with
 * dlopen since start: a new DTV is needed); tp is then as it was. */
bool ito__tcb_reset(uintptr_t tp);
/* The child of fork: take tp, the forking thread's, out of the lists glibc's
 * fork put it in (posix/fork.c). */
void ito__tcb_forked(uintptr_t tp);

/* The calling thread (the initial one) is `self`'s. */
void ito__tcb_adopt(void *self);

/* The C library's cancellation word in tp's descriptor (posix/cancel.c);
 * NULL if the C library does not say where it is. */
_Atomic int *ito__tcb_cancelhandling(uintptr_t tp);
/* The thread ID in tp's descriptor: ito's own, above any kernel thread's,
 * for a thread pointer ito made (0 if the C library does not say where). */
int ito__tcb_tid(uintptr_t tp);

/* A code address as the C library's setjmp stores it in a jmp_buf (pointer
 * mangling with the process's pointer guard), and where it stores the
 * program counter (x86-64: JB_PC). */
uintptr_t ito__tcb_mangle(uintptr_t p);
#define ITO__TCB_JMPBUF_PC 7

/* The slot libito-pthread keeps in every thread pointer (tcb.c). */
void *ito__tcb_self_of(uintptr_t tp);

/* A module's static TLS block: where it lies below the thread pointer, and
 * its initial image. */
struct ito__tls_block {
    size_t offset;
    const void *image;
    size_t filesz, memsz;
};

/* Give tp the block's initial values (posix/dlopen.c). */
void ito__tcb_fill_block(uintptr_t tp, const void *block);

/* dlopen loaded a module with TLS: reuse must rebuild the DTV from now on. */
void ito__tcb_modules_changed(void);

/* In the new thread, before its start routine: what glibc's own thread
 * start does (a reused block gets the global locale, a clean resolver state
 * and errno 0 back). */
void ito__tcb_thread_start(bool reused);

/* In the exiting thread: C++ thread_local destructors (__call_tls_dtors). */
void ito__tcb_thread_exit(void);

#endif
