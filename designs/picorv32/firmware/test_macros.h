/* Self-checking test macros for our assembly firmware (written for closer; not riscv-tests).
   Registers: t0/t1 operands, t2 result, t3 expected, s11 current case number, s10 cases passed.
   The harness itself uses only li/lui/addi/sw/bne/jal, so a test of another instruction does not
   depend on that instruction to report. */
#include "io.h"

#define TEST_BEGIN              \
  .section .text.start;         \
  .globl _start;                \
_start:                         \
  li s10, 0;                    \
  li s11, 0;

#define CHECK(n, got, expect)   \
  li s11, n;                    \
  li t3, expect;                \
  bne got, t3, fail;            \
  addi s10, s10, 1;

/* register-register op: rd = a op b */
#define TEST_RR(n, op, expect, a, b) \
  li t0, a; li t1, b; op t2, t0, t1; CHECK(n, t2, expect)

/* register-immediate op */
#define TEST_RI(n, op, expect, a, imm) \
  li t0, a; op t2, t0, imm; CHECK(n, t2, expect)

/* conditional branch that must be taken / must not be taken */
#define TEST_BR_TAKEN(n, br, a, b) \
  li s11, n; li t0, a; li t1, b; br t0, t1, 1f; j fail; 1: addi s10, s10, 1;
#define TEST_BR_NOT_TAKEN(n, br, a, b) \
  li s11, n; li t0, a; li t1, b; br t0, t1, fail; addi s10, s10, 1;

#define TEST_END(count)         \
  li s11, 0;                    \
  li t3, count;                 \
  bne s10, t3, fail;            \
  li t4, PASS_BASE + count;     \
  j report;                     \
fail:                           \
  li t4, FAIL_BASE;             \
  add t4, t4, s11;              \
report:                         \
  li t5, IO_BASE;               \
  sw t4, 0(t5);                 \
  sw t4, 4(t5);                 \
spin:                           \
  j spin;
