/* Bitwise CRC-32 (IEEE 802.3, reflected, init and final xor 0xffffffff) of CRC_LEN bytes
   b[i] = (i * 7 + 3) mod 256, built by addition so rv32i needs no multiply. */
#define CRC_LEN 256

static unsigned char data[CRC_LEN];

unsigned main(void)
{
	unsigned char b = 3;
	for (unsigned i = 0; i < CRC_LEN; i++) {
		data[i] = b;
		b += 7;
	}
	unsigned crc = 0xffffffffu;
	for (unsigned i = 0; i < CRC_LEN; i++) {
		crc ^= data[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1u));
	}
	return ~crc;
}
