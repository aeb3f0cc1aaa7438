/* Loads and stores: word, halfword, byte, signed/unsigned, positive/negative offsets. */
#include "test_macros.h"
#define TEST_LD(n, ld, expect, off) la t0, buf; ld t2, off(t0); CHECK(n, t2, expect)
TEST_BEGIN
  la t0, buf
  li t1, 0x8070fe01
  sw t1, 0(t0)
  li t1, 0x11223344
  sw t1, 4(t0)
  sw zero, 8(t0)
  TEST_LD(1,  lw,  0x8070fe01, 0)
  TEST_LD(2,  lb,  0x00000001, 0)
  TEST_LD(3,  lb,  0xfffffffe, 1)
  TEST_LD(4,  lbu, 0x000000fe, 1)
  TEST_LD(5,  lbu, 0x00000080, 3)
  TEST_LD(6,  lb,  0xffffff80, 3)
  TEST_LD(7,  lh,  0xfffffe01, 0)
  TEST_LD(8,  lhu, 0x0000fe01, 0)
  TEST_LD(9,  lh,  0xffff8070, 2)
  TEST_LD(10, lhu, 0x00008070, 2)
  TEST_LD(11, lw,  0x11223344, 4)
  /* byte and halfword stores touch only their lanes */
  la t0, buf
  li t1, 0xaabbccdd
  sb t1, 9(t0)
  TEST_LD(12, lw,  0x0000dd00, 8)
  la t0, buf
  sh t1, 10(t0)
  TEST_LD(13, lw,  0xccdddd00, 8)
  la t0, buf
  sb t1, 8(t0)
  TEST_LD(14, lw,  0xccdddddd, 8)
  la t0, buf + 12
  sh t1, -4(t0)
  TEST_LD(15, lw,  0xccddccdd, 8)
  la t0, buf + 16
  lw t2, -12(t0)
  CHECK(16, t2, 0x11223344)
TEST_END(16)
  .section .bss
  .align 4
buf: .space 16
