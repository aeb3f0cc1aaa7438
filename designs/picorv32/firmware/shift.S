/* Shifts: sll/srl/sra and immediates, including shift amounts >= 16 and the 5-bit mask. */
#include "test_macros.h"
TEST_BEGIN
  TEST_RR(1,  sll, 0x00000080, 1, 7)
  TEST_RR(2,  sll, 0x80000000, 1, 31)
  TEST_RR(3,  sll, 0x00000002, 1, 33)         /* only rs2[4:0] counts */
  TEST_RR(4,  srl, 0x00ffffff, 0xffffffff, 8)
  TEST_RR(5,  srl, 0x00000001, 0x80000000, 31)
  TEST_RR(6,  sra, 0xffffffff, 0x80000000, 31)
  TEST_RR(7,  sra, 0xfff00000, 0x80000000, 11)
  TEST_RR(8,  sra, 0x01234567, 0x01234567, 0)
  TEST_RR(9,  sra, 0x00048d15, 0x01234567, 6)
  TEST_RI(10, slli, 0x12345670, 0x01234567, 4)
  TEST_RI(11, srli, 0x0000ffff, 0xffff0000, 16)
  TEST_RI(12, srai, 0xffffff00, 0x80000000, 23)
  TEST_RI(13, srai, 0x00007f00, 0x7f00ffff, 16)
  TEST_RI(14, srli, 0x00000001, 0x80000000, 31)
TEST_END(14)
