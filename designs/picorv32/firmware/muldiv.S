/* M extension (config rv32im): mul/mulh/mulhsu/mulhu/div/divu/rem/remu with the spec's
   divide-by-zero and overflow results. */
#include "test_macros.h"
TEST_BEGIN
  TEST_RR(1,  mul,    0x00000f0f, 0x101, 0xf)
  TEST_RR(2,  mul,    0xfffffffa, 0xfffffffe, 3)
  TEST_RR(3,  mulh,   0xffffffff, 0xfffffffe, 3)
  TEST_RR(4,  mulhu,  0x00000002, 0xfffffffe, 3)
  TEST_RR(5,  mulhsu, 0xffffffff, 0xfffffffe, 3)
  TEST_RR(6,  mulh,   0x40000000, 0x80000000, 0x80000000)
  TEST_RR(7,  mulhu,  0xfffffffe, 0xffffffff, 0xffffffff)
  TEST_RR(8,  div,    0xfffffffd, 20, 0xfffffffa)
  TEST_RR(9,  divu,   0x00000000, 20, 0xfffffffa)
  TEST_RR(10, rem,    0x00000002, 20, 0xfffffffa)
  TEST_RR(11, remu,   0x00000014, 20, 0xfffffffa)
  TEST_RR(12, div,    0xffffffff, 7, 0)
  TEST_RR(13, divu,   0xffffffff, 7, 0)
  TEST_RR(14, rem,    0x00000007, 7, 0)
  TEST_RR(15, div,    0x80000000, 0x80000000, 0xffffffff)
  TEST_RR(16, rem,    0x00000000, 0x80000000, 0xffffffff)
  TEST_RR(17, rem,    0xfffffffe, 0xfffffff8, 3)
TEST_END(17)
