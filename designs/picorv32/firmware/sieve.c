/* Sieve of Eratosthenes below SIEVE_N; returns (prime count << 20) ^ (sum of primes).
   Written for rv32i: no multiply or divide (the inner loop steps by addition). */
#define SIEVE_N 1000

static unsigned char composite[SIEVE_N];

unsigned main(void)
{
	unsigned count = 0, sum = 0;
	for (unsigned i = 2; i < SIEVE_N; i++) {
		if (composite[i])
			continue;
		count++;
		sum += i;
		for (unsigned j = i + i; j < SIEVE_N; j += i)
			composite[j] = 1;
	}
	return (count << 20) ^ sum;
}
