// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the PDU parser.
 *
 * Input: one mode byte, then the bytes handed to the parser. Mode bit 0
 * recomputes the CRC trailer first, so that the fuzzer gets past the CRC
 * and explores the field checks behind it; otherwise random bytes almost
 * never survive the CRC.
 *
 * Properties checked (abort on violation):
 *   - the parser reads only inside the buffer (exact-size heap copy, ASan);
 *   - it returns 0 or a known negative error;
 *   - whatever it accepts is canonical: building the decoded packet gives
 *     back the same bytes;
 *   - a VERSION_REJECT built in answer to an unknown version parses.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/wire_codec.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[OVR_WIRE_MAX_PDU + 64];
	struct ovr_wire_pkt pkt, again;
	uint8_t mode, *buf;
	char line[512];
	size_t len;
	int rc, n;

	if (size < 1)
		return 0;
	mode = data[0];
	len = size - 1;
	buf = malloc(len ? len : 1);
	if (!buf)
		abort();
	memcpy(buf, data + 1, len);
	if ((mode & 1) && len >= OVR_WIRE_CRC_LEN)
		ovr_wire_seal(buf, len - OVR_WIRE_CRC_LEN);

	rc = ovr_wire_parse(buf, len, &pkt, NULL);
	if (rc > 0 || rc <= -OVR_WIRE_NERR)
		abort();
	if (rc == 0) {
		n = ovr_wire_build(&pkt, out, sizeof(out));
		if (n < 0 || (size_t)n != len || memcmp(out, buf, len) != 0)
			abort();
		if (ovr_wire_format(&pkt, line, sizeof(line)) <= 0)
			abort();
	} else if (rc == -OVR_WIRE_EVERSION) {
		n = ovr_wire_build_reject(buf, len, out, sizeof(out));
		if (n > 0 && ovr_wire_parse(out, (size_t)n, &again, NULL) != 0)
			abort();
	}
	free(buf);
	return 0;
}
