/* SPDX-License-Identifier: MIT */
/* Telling sanitizers and valgrind about stack switches. Without this,
 * AddressSanitizer reports false stack-buffer errors after a switch and
 * ThreadSanitizer attributes a thread's accesses to the wrong history. All of
 * it compiles to nothing in ordinary builds. */
#ifndef ITO_RUNTIME_SANITIZER_H
#define ITO_RUNTIME_SANITIZER_H

#include <stdbool.h>
#include <stddef.h>
#include "base/compiler.h"

#ifdef ITO_TSAN
#define ITO_TSAN_BUILD 1
#else
#define ITO_TSAN_BUILD 0
#endif

#ifdef ITO_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old, size_t *size_old);
/* Before switching to a context whose stack is [bottom, bottom+size).
 * save: where the current context keeps its fake stack (NULL if it dies). */
static inline void ito__san_start(void **save, const void *bottom, size_t size)
{
    __sanitizer_start_switch_fiber(save, bottom, size);
}
/* First thing after a context resumes (or starts: save == NULL). */
static inline void ito__san_finish(void *save)
{
    const void *b;
    size_t s;
    __sanitizer_finish_switch_fiber(save, &b, &s);
}
void __asan_unpoison_memory_region(const volatile void *addr, size_t size);
void __asan_handle_no_return(void);
/* Frames dropped without returning leave poisoned red zones behind: clear
 * them before the memory is used as a stack again. */
static inline void ito__san_unpoison(const void *lo, size_t size) { __asan_unpoison_memory_region(lo, size); }
/* Before a jump that abandons frames of the current stack. */
static inline void ito__san_no_return(void) { __asan_handle_no_return(); }
void __lsan_register_root_region(const void *p, size_t size);
void __lsan_unregister_root_region(const void *p, size_t size);
/* LeakSanitizer scans malloc'd memory, globals and each kernel thread's stack
 * (from its current stack pointer up) for pointers. It knows nothing of the
 * stacks of parked ito threads, so every stack ito maps is registered as a
 * root region, as is the rest of our own mmap'd memory that holds pointers. */
static inline void ito__lsan_root(const void *p, size_t size) { __lsan_register_root_region(p, size); }
static inline void ito__lsan_unroot(const void *p, size_t size) { __lsan_unregister_root_region(p, size); }
#else
static inline void ito__lsan_root(const void *p, size_t size) { (void)p; (void)size; }
static inline void ito__lsan_unroot(const void *p, size_t size) { (void)p; (void)size; }
static inline void ito__san_unpoison(const void *lo, size_t size) { (void)lo; (void)size; }
static inline void ito__san_no_return(void) {}
static inline void ito__san_start(void **save, const void *bottom, size_t size) { (void)save; (void)bottom; (void)size; }
static inline void ito__san_finish(void *save) { (void)save; }
#endif

#ifdef ITO_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
void __tsan_set_fiber_name(void *fiber, const char *name);
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
/* The store of a context's stack pointer happens in assembly (context.S),
 * out of TSan's sight: these mark it as the release it is, and the load that
 * sees it as the acquire. */
static inline void ito__tsan_release(void *addr) { __tsan_release(addr); }
static inline void ito__tsan_acquire(void *addr) { __tsan_acquire(addr); }
static inline void *ito__tsan_current(void) { return __tsan_get_current_fiber(); }
static inline void *ito__tsan_create(void) { return __tsan_create_fiber(0); }
static inline void ito__tsan_destroy(void *f) { if (f) __tsan_destroy_fiber(f); }
static inline void ito__tsan_switch(void *f) { __tsan_switch_to_fiber(f, 0); }
/* The reports that show other threads' state (dump.c, api/schedtrace.c,
 * upcall/longrun.c) read it as it is, racing on purpose: what they print is
 * a moment, never acted on. Their reads are hidden from TSan. */
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
#define ito__tsan_reads_begin() AnnotateIgnoreReadsBegin(__FILE__, __LINE__)
#define ito__tsan_reads_end() AnnotateIgnoreReadsEnd(__FILE__, __LINE__)
#else
#define ito__tsan_reads_begin() ((void)0)
#define ito__tsan_reads_end() ((void)0)
static inline void ito__tsan_release(void *addr) { (void)addr; }
static inline void ito__tsan_acquire(void *addr) { (void)addr; }
static inline void *ito__tsan_current(void) { return NULL; }
static inline void *ito__tsan_create(void) { return NULL; }
static inline void ito__tsan_destroy(void *f) { (void)f; }
static inline void ito__tsan_switch(void *f) { (void)f; }
#endif

#if defined(ITO_HAVE_VALGRIND_H)
#include <valgrind/valgrind.h>
static inline unsigned ito__vg_stack_register(void *lo, void *hi)
{
    return VALGRIND_STACK_REGISTER(lo, hi);
}
static inline void ito__vg_stack_deregister(unsigned id) { VALGRIND_STACK_DEREGISTER(id); }
static inline bool ito__running_on_valgrind(void) { return RUNNING_ON_VALGRIND != 0; }
#else
static inline unsigned ito__vg_stack_register(void *lo, void *hi) { (void)lo; (void)hi; return 0; }
static inline void ito__vg_stack_deregister(unsigned id) { (void)id; }
static inline bool ito__running_on_valgrind(void) { return false; }
#endif

#endif
