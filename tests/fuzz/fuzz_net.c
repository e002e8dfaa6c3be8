/* fuzz_net.c — libFuzzer target for the replication packet decoder (core/net_wire.c): any input
 * decodes whole or is refused with a reason, nothing read past the packet, nothing leaked, and a
 * decoded packet's records only point at values it holds. The first byte picks whether the
 * connection has its kind table yet (component records need one). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const keel__wire_kind kinds[] = {
    { .many = false, .nsync = 3, .types = { KEEL_T_VEC3, KEEL_T_QUAT, KEEL_T_VEC3 } },
    { .many = false,
      .nsync = 6,
      .types = { KEEL_T_INT, KEEL_T_STRING, KEEL_T_ENUM, KEEL_T_ENTITY, KEEL_T_BOOL, KEEL_T_FLOAT },
      .choices = { 0, 0, 3 } },
    { .many = true, .nsync = 1, .types = { KEEL_T_COLOR } },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    keel__wire_schema schema = { kinds, 3 };
    keel__wire_msg m;
    char err[160];
    /* an exact-size copy: ASan sees any read past the end */
    uint8_t *p = malloc(size - 1 ? size - 1 : 1);
    memcpy(p, data + 1, size - 1);
    if (keel__wire_decode(p, size - 1, data[0] & 1 ? &schema : NULL, &m, err, sizeof err)) {
        for (size_t i = 0; i < m.nrec; i++)
            if (m.recs[i].val0 > m.nval) abort();
        for (size_t i = 0; i < m.nval; i++)
            if (m.vals[i].type == KEEL_T_STRING && !m.vals[i].as.s) abort();
        keel__wire_msg_free(&m);
    } else if (!err[0] || m.nrec || m.recs) abort();
    free(p);
    return 0;
}
