/* Branches (taken and not taken, signed and unsigned) and jumps (jal, jalr with LSB cleared). */
#include "test_macros.h"
TEST_BEGIN
  TEST_BR_TAKEN(1,      beq,  7, 7)
  TEST_BR_NOT_TAKEN(2,  beq,  7, 8)
  TEST_BR_TAKEN(3,      bne,  7, 8)
  TEST_BR_NOT_TAKEN(4,  bne,  0xffffffff, 0xffffffff)
  TEST_BR_TAKEN(5,      blt,  0xffffffff, 0)
  TEST_BR_NOT_TAKEN(6,  blt,  0, 0xffffffff)
  TEST_BR_NOT_TAKEN(7,  blt,  3, 3)
  TEST_BR_TAKEN(8,      bge,  3, 3)
  TEST_BR_TAKEN(9,      bge,  0, 0x80000000)
  TEST_BR_NOT_TAKEN(10, bge,  0x80000000, 0)
  TEST_BR_TAKEN(11,     bltu, 0, 0xffffffff)
  TEST_BR_NOT_TAKEN(12, bltu, 0xffffffff, 0)
  TEST_BR_TAKEN(13,     bgeu, 0xffffffff, 0)
  TEST_BR_NOT_TAKEN(14, bgeu, 0x7fffffff, 0x80000000)
  TEST_BR_TAKEN(15,     bgeu, 5, 5)
  /* backward branch loop: 10 iterations */
  li s11, 16
  li t0, 0
  li t1, 10
2: addi t0, t0, 1
  blt t0, t1, 2b
  li t3, 10
  bne t0, t3, fail
  addi s10, s10, 1
  /* jal links to the next instruction */
  li s11, 17
  jal t2, 3f
4: j fail
3: la t3, 4b
  bne t2, t3, fail
  addi s10, s10, 1
  /* jalr: target = (rs1 + imm) & ~1, link = pc + 4 */
  li s11, 18
  la t0, 5f
  jalr t2, 1(t0)
6: j fail
5: la t3, 6b
  bne t2, t3, fail
  addi s10, s10, 1
  /* jalr with rd == rs1 uses the old rs1 */
  li s11, 19
  la t0, 7f
  jalr t0, 0(t0)
8: j fail
7: la t3, 8b
  bne t0, t3, fail
  addi s10, s10, 1
TEST_END(19)
