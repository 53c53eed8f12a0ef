// SPDX-License-Identifier: MIT
/*
 * An MPI program whose results are known in advance, for Open MPI over
 * UCX over ovrdma (tests/integration/mpi.sh, docs/PROVIDER.md):
 *
 *   mpirun -np 2 ... mpi_check [MB]
 *
 *   1. MPI_Allreduce (MPI_SUM, MPI_MAX) of ALLRED_N 64-bit integers whose
 *      sums and maxima every rank computes itself: checked exactly;
 *   2. rank 0 sends MB megabytes (default 256) to rank 1 as one message,
 *      then rank 1 sends its own MB back: each byte a function of the
 *      sender's rank and its offset, checked on the receiver byte for
 *      byte (the first difference is printed);
 *   3. a final MPI_Allreduce of every rank's verdict, so both ranks exit
 *      with the same status.
 *
 * Rank 0 prints "mpi_check: OK ..." with the bytes each way and the
 * rates. Exit 0 when all held, 1 otherwise (MPI_Abort on a broken
 * runtime). One buffer per rank: MB megabytes is what each rank holds.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define ALLRED_N 4096
#define TAG_DATA 7

/* splitmix64: a cheap bijective mix, so that every 8-byte word of the
 * pattern differs between ranks and offsets */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* the byte at @off of what rank @rank sends */
static uint8_t pattern_byte(int rank, size_t off)
{
	uint64_t w = mix(((uint64_t)rank << 48) ^ (off / 8));

	return (uint8_t)(w >> (8 * (off % 8)));
}

static void fill(uint8_t *buf, size_t len, int rank)
{
	size_t off = 0;

	for (; off + 8 <= len; off += 8) {
		uint64_t w = mix(((uint64_t)rank << 48) ^ (off / 8));

		memcpy(buf + off, &w, 8); /* little-endian: as pattern_byte */
	}
	for (; off < len; off++)
		buf[off] = pattern_byte(rank, off);
}

/* offset of the first byte that is not rank @rank's, or @len */
static size_t check(const uint8_t *buf, size_t len, int rank)
{
	size_t off = 0;

	for (; off + 8 <= len; off += 8) {
		uint64_t w = mix(((uint64_t)rank << 48) ^ (off / 8));

		if (memcmp(buf + off, &w, 8))
			break;
	}
	for (; off < len; off++)
		if (buf[off] != pattern_byte(rank, off))
			return off;
	return len;
}

static int allreduce_check(int rank, int size)
{
	static int64_t in[ALLRED_N], sum[ALLRED_N], max[ALLRED_N];
	int bad = 0;

	for (int i = 0; i < ALLRED_N; i++)
		in[i] = (int64_t)rank * 1000003 + i * (int64_t)(rank + 1);
	if (MPI_Allreduce(in, sum, ALLRED_N, MPI_INT64_T, MPI_SUM,
			  MPI_COMM_WORLD) != MPI_SUCCESS ||
	    MPI_Allreduce(in, max, ALLRED_N, MPI_INT64_T, MPI_MAX,
			  MPI_COMM_WORLD) != MPI_SUCCESS) {
		fprintf(stderr, "mpi_check: rank %d: MPI_Allreduce failed\n",
			rank);
		return 1;
	}
	for (int i = 0; i < ALLRED_N; i++) {
		/* sum over r < size of r * 1000003 + i * (r + 1) */
		int64_t s = (int64_t)size * (size - 1) / 2 * 1000003 +
			    (int64_t)i * size * (size + 1) / 2;
		int64_t m = (int64_t)(size - 1) * 1000003 + i * (int64_t)size;

		if (sum[i] != s || max[i] != m) {
			fprintf(stderr,
				"mpi_check: rank %d: allreduce element %d: sum %" PRId64
				" (want %" PRId64 "), max %" PRId64
				" (want %" PRId64 ")\n",
				rank, i, sum[i], s, max[i], m);
			bad = 1;
			break;
		}
	}
	return bad;
}

/* @from sends its pattern to @to; @to checks it. */
static int transfer(uint8_t *buf, size_t len, int rank, int from, int to,
		    double *secs)
{
	double t0;
	size_t off;

	if (rank == from)
		fill(buf, len, rank);
	else if (rank == to)
		memset(buf, 0, len);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	if (rank == from) {
		if (MPI_Send(buf, (int)len, MPI_BYTE, to, TAG_DATA,
			     MPI_COMM_WORLD) != MPI_SUCCESS)
			return 1;
	} else if (rank == to) {
		MPI_Status st;
		int n = -1;

		if (MPI_Recv(buf, (int)len, MPI_BYTE, from, TAG_DATA,
			     MPI_COMM_WORLD, &st) != MPI_SUCCESS)
			return 1;
		*secs = MPI_Wtime() - t0;
		MPI_Get_count(&st, MPI_BYTE, &n);
		if (n != (int)len) {
			fprintf(stderr,
				"mpi_check: rank %d: received %d bytes from %d, want %zu\n",
				rank, n, from, len);
			return 1;
		}
		off = check(buf, len, from);
		if (off != len) {
			fprintf(stderr,
				"mpi_check: rank %d: byte %zu from rank %d is 0x%02x, want 0x%02x\n",
				rank, off, from, buf[off],
				pattern_byte(from, off));
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	double t01 = 0, t10 = 0, rates[2];
	int rank, size, bad = 0, anybad = 0;
	size_t len;
	uint8_t *buf;
	long mb;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	mb = argc > 1 ? strtol(argv[1], NULL, 10) : 256;
	if (size < 2 || mb < 1 || mb > 2047) {
		if (rank == 0)
			fprintf(stderr,
				"usage: mpirun -np 2 mpi_check [MB 1..2047] (got %d ranks)\n",
				size);
		MPI_Finalize();
		return 1;
	}
	len = (size_t)mb << 20;
	buf = malloc(len);
	if (!buf) {
		fprintf(stderr, "mpi_check: rank %d: no memory for %zu bytes\n",
			rank, len);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}

	bad |= allreduce_check(rank, size);
	bad |= transfer(buf, len, rank, 0, 1, &t10);
	bad |= transfer(buf, len, rank, 1, 0, &t01);
	MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);

	/* rank 0 timed 1 -> 0, rank 1 timed 0 -> 1 */
	rates[0] = rank == 1 ? t10 : 0;
	rates[1] = rank == 0 ? t01 : 0;
	MPI_Allreduce(MPI_IN_PLACE, rates, 2, MPI_DOUBLE, MPI_MAX,
		      MPI_COMM_WORLD);
	if (rank == 0) {
		if (anybad)
			printf("mpi_check: FAILED (ranks %d)\n", size);
		else
			printf("mpi_check: OK ranks %d allreduce %d x int64 exact, p2p %zu bytes 0->1 in %.3f s (%.1f MB/s) and 1->0 in %.3f s (%.1f MB/s), byte-exact\n",
			       size, ALLRED_N, len, rates[0],
			       len / 1e6 / (rates[0] > 0 ? rates[0] : 1),
			       rates[1],
			       len / 1e6 / (rates[1] > 0 ? rates[1] : 1));
		fflush(stdout);
	}
	free(buf);
	MPI_Finalize();
	return anybad ? 1 : 0;
}
