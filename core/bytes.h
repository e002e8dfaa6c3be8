/* bytes.h — little-endian buffers for the binary formats (cooked scenes, slot files). */
#ifndef KEEL_BYTES_H
#define KEEL_BYTES_H

#include <stddef.h>
#include <stdint.h>

typedef struct keel__buf {
    uint8_t *p;
    size_t len, cap;
} keel__buf;
uint8_t *keel__buf_grow(keel__buf *b, size_t n); /* returns where the n new bytes go */
void keel__buf_u8(keel__buf *b, uint8_t v);
void keel__buf_u32(keel__buf *b, uint32_t v);
void keel__buf_u64(keel__buf *b, uint64_t v);
void keel__buf_f64(keel__buf *b, double d);
void keel__buf_bytes(keel__buf *b, const void *p, size_t n);
void keel__put_u32(uint8_t *at, uint32_t v);
uint32_t keel__get_u32(const uint8_t *p);
uint64_t keel__get_u64(const uint8_t *p);

#endif
