/* ALU: add/sub/logic/compare, immediates, lui/auipc. Expected values from the RV32I spec. */
#include "test_macros.h"
TEST_BEGIN
  TEST_RR(1,  add,  0x00000003, 1, 2)
  TEST_RR(2,  add,  0x00000000, 0xffffffff, 1)
  TEST_RR(3,  add,  0x80000000, 0x7fffffff, 1)
  TEST_RR(4,  sub,  0xfffffffe, 1, 3)
  TEST_RR(5,  sub,  0x7fffffff, 0x80000000, 1)
  TEST_RR(6,  and,  0x0f00f000, 0xff00ff00, 0x0f0ff0f0)
  TEST_RR(7,  or,   0xff0ffff0, 0xff00ff00, 0x0f0ff0f0)
  TEST_RR(8,  xor,  0xf00f0ff0, 0xff00ff00, 0x0f0ff0f0)
  TEST_RR(9,  slt,  1, 0xffffffff, 0)
  TEST_RR(10, slt,  0, 0, 0xffffffff)
  TEST_RR(11, sltu, 0, 0xffffffff, 0)
  TEST_RR(12, sltu, 1, 0, 0xffffffff)
  TEST_RR(13, slt,  0, 5, 5)
  TEST_RI(14, addi, 0xfffff801, 1, -2048)
  TEST_RI(15, addi, 0x000007ff, 0, 2047)
  TEST_RI(16, andi, 0x00ff0f0f, 0x00ff0f0f, -241)
  TEST_RI(17, ori,  0xffffff0f, 0x0000000f, -256)
  TEST_RI(18, xori, 0xff00f00f, 0x00ff0ff0, -1)
  TEST_RI(19, slti, 1, 0xfffffff0, -1)
  TEST_RI(20, sltiu, 1, 5, -1)
  TEST_RI(21, sltiu, 0, 0xffffffff, 7)
  /* lui / auipc: auipc's result relative to a known label */
  li s11, 22
  lui t2, 0xabcde
  li t3, 0xabcde000
  bne t2, t3, fail
  addi s10, s10, 1
  li s11, 23
1: auipc t2, 0x1
  la t3, 1b
  sub t2, t2, t3
  li t3, 0x1000
  bne t2, t3, fail
  addi s10, s10, 1
  /* x0 stays zero */
  li s11, 24
  addi x0, x0, 5
  bne x0, zero, fail
  addi s10, s10, 1
TEST_END(24)
