/* x86-64 specifics used by the core: the CPU pause hint, the cycle counter,
 * reading ito's one thread-local variable, and the saved-frame layout of a
 * context (see context.S). A port provides the same names in
 * src/arch/<arch>/arch.h and context.S; the core has no #ifdef on the arch. */
#ifndef ITO_ARCH_H
#define ITO_ARCH_H

#include <stdint.h>

/* Spin-wait hint. */
static inline void ito__cpu_relax(void) { __asm__ __volatile__("pause" ::: "memory"); }

/* Time-stamp counter (constant rate on current x86-64). */
static inline uint64_t ito__cycles(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* ito's thread-local variable: the activation (kernel thread) running the
 * caller, NULL on a foreign kernel thread. It is read with a volatile asm
 * statement on purpose: an ito thread may resume on another kernel thread
 * after any call that may switch, and the compiler would otherwise be free to
 * keep the thread pointer (%fs base) or the variable's address in a register
 * across such a call (initial-exec TLS, no __tls_get_addr). */
struct ito__activation;
extern __thread struct ito__activation *ito__tls_act __attribute__((tls_model("initial-exec")));

static inline struct ito__activation *ito__arch_activation(void)
{
    struct ito__activation *a;
    __asm__ __volatile__("movq ito__tls_act@gottpoff(%%rip), %0\n\t"
                         "movq %%fs:(%0), %0"
                         : "=r"(a)
                         :
                         : "memory");
    return a;
}

/* The FP control state that travels with a context: MXCSR (low 32 bits) and
 * the x87 control word (bits 32..47), as stored in a saved frame. */
static inline uint64_t ito__arch_fpctl(void)
{
    uint32_t mxcsr;
    uint16_t cw;
    __asm__ __volatile__("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(cw));
    return (uint64_t)mxcsr | ((uint64_t)cw << 32);
}

/* The current stack pointer. */
static inline void *ito__arch_sp(void)
{
    void *sp;
    __asm__ __volatile__("movq %%rsp, %0" : "=r"(sp));
    return sp;
}

/* Bytes below the stack pointer that a leaf function may use without moving
 * it (the SysV red zone). */
#define ITO_ARCH_RED_ZONE 128

/* Size of the frame ito__ctx_make builds below the top of a stack. */
#define ITO_ARCH_INITIAL_FRAME 72
/* Stacks grow down. */
#define ITO_ARCH_STACK_GROWS_DOWN 1

#endif
