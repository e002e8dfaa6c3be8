/* verb_uuid.c — `keel uuid [N]`: fresh version-4 UUIDs, one a line, for entities written by hand. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

int keel_cli_uuid(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    (void)L;
    int n = keel_cli_parse(cli, argc, argv, NULL, 0);
    if (n < 0) return KEEL_EXIT_USAGE;
    long count = 1;
    if (n > 1) {
        keel_cli_usage_error(cli, "uuid: expected at most one N");
        return KEEL_EXIT_USAGE;
    }
    if (n == 1) {
        char *end;
        count = strtol(argv[0], &end, 10);
        if (*argv[0] == '\0' || *end != '\0' || count < 1 || count > 1000000) {
            keel_cli_usage_error(cli, "uuid: N must be a whole number from 1 to 1000000, not '%s'", argv[0]);
            return KEEL_EXIT_USAGE;
        }
    }
    for (long i = 0; i < count; i++) {
        char text[37];
        keel_uuid_format(keel_uuid_v4(), text);
        puts(text);
    }
    return fflush(stdout) == 0 ? KEEL_EXIT_OK : KEEL_EXIT_USAGE;
}
