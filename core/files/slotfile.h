/* slotfile.h — the save slot file's frame (see slotfile.c). */
#ifndef KEEL_SLOTFILE_H
#define KEEL_SLOTFILE_H

#include "keel.h"
#include "base/bytes.h"

/* Writes a slot file at path atomically: the details (info; refused when malformed), then
 * `state` compressed, and a CRC of it all. LimitExceeded past the state bound or details over
 * 1 MiB (keel_persist_info's bound), IOError. */
keel_status keel__slot_write(const char *path, const keel_slot_info *info, const keel__buf *state, keel_diags *d);
/* Reads and verifies a slot file whole (magic, version, CRC, details, sizes) and returns its
 * inflated state (malloc'd, the caller frees). ParseError naming path, or IOError. */
keel_status keel__slot_read(const char *path, uint8_t **state, size_t *state_len, keel_diags *d);

/* The checks keel__slot_write makes of the details before writing (InvalidArgument, LimitExceeded). */
keel_status keel__slot_info_check(const keel_slot_info *info, keel_diags *d);

#endif
