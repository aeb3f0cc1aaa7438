/* Test I/O of our firmware oracles (served by oracles/picorv32/memory.py).
   A program ends by storing its result word to IO_RESULT and then anything to IO_DONE.
   Self-checking assembly tests store PASS_CODE(n) (n checks passed) or FAIL_CODE(case). */
#ifndef CLOSER_PICORV32_IO_H
#define CLOSER_PICORV32_IO_H
#define IO_BASE   0x10000000
#define IO_RESULT 0x10000000
#define IO_DONE   0x10000004
#define PASS_BASE 0x600D0000
#define FAIL_BASE 0xBAD00000
#endif
