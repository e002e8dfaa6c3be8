/* verb_new.c — `keel new NAME`: a project scaffold (kinds, a scene, a spec, .busted, .gitattributes, README). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>

#include "cli.h"

/* The files, relative to NAME/. In the texts @NS@ is the kind namespace (NAME made a valid
 * one), @NAME@ the project's name, @U1@.. fresh UUIDs. */
static const struct { const char *path, *text; } files[] = {
    { "kinds/spinner.lua",
      "-- spinner.lua — @NS@:spinner, an example kind: data only (the @NS@:spin system turns it).\n"
      "local keel = require \"keel\"\n"
      "\n"
      "keel.kind{\n"
      "  key = \"@NS@:spinner\", display = \"Spinner\", category = \"Gameplay\",\n"
      "  version = 1, multiplicity = \"one\",\n"
      "  requires = { \"core:transform\" },\n"
      "  fields = {\n"
      "    { \"speed\", \"float\", default = 90 },  -- degrees per second\n"
      "    { \"angle\", \"float\", default = 0 },   -- degrees, in [0, 360)\n"
      "  },\n"
      "}\n" },
    { "kinds/spin.lua",
      "-- spin.lua — @NS@:spin, an example system: each update turns every @NS@:spinner by its speed.\n"
      "local keel = require \"keel\"\n"
      "\n"
      "keel.system{\n"
      "  name = \"@NS@:spin\", phase = \"update\",\n"
      "  query = { \"@NS@:spinner\" },\n"
      "  each = function(entity, spinner, dt)\n"
      "    spinner.angle = (spinner.angle + spinner.speed * dt) % 360\n"
      "  end,\n"
      "}\n" },
    { "scenes/main.yaml",
      "keel: 1\n"
      "scene:\n"
      "  uuid: @U1@\n"
      "  name: @NAME@\n"
      "settings:\n"
      "  grid:\n"
      "    enabled: true\n"
      "    origin: [0, 0, 0]\n"
      "    orientation: [0, 0, 0, 1]\n"
      "    base_spacing: 1\n"
      "    major_line_every: 10\n"
      "root: []\n"
      "entities:\n"
      "- uuid: @U2@\n"
      "  name: Spinner\n"
      "  components:\n"
      "  - kind: core:transform\n"
      "    version: 1\n"
      "    slot: 0\n"
      "    body:\n"
      "      position: [0, 0, 0]\n"
      "      rotation: [0, 0, 0, 1]\n"
      "      scale: [1, 1, 1]\n"
      "  - kind: @NS@:spinner\n"
      "    version: 1\n"
      "    slot: 0\n"
      "    body:\n"
      "      speed: 90\n"
      "      angle: 0\n" },
    { "spec/spinner_spec.lua",
      "-- spinner_spec.lua — `busted` runs it under keel (see .busted).\n"
      "local keel = require \"keel\"\n"
      "require(\"keel.kindfiles\").load(\"kinds\") -- the project's kinds (a no-op when keel loaded them)\n"
      "\n"
      "describe(\"@NS@:spinner\", function()\n"
      "  it(\"turns by its speed each second, through the @NS@:spin system\", function()\n"
      "    local w = keel.world(\"test\")\n"
      "    local e = w:spawn{ name = \"S\", components = { \"core:transform\", { \"@NS@:spinner\", speed = 45 } } }\n"
      "    w:run(60, 1 / 60)\n"
      "    assert.is_near(45, e:get(\"@NS@:spinner\").angle, 1e-6)\n"
      "    w:close()\n"
      "  end)\n"
      "\n"
      "  it(\"loads in the project's scene\", function()\n"
      "    local w = assert(keel.load(\"scenes/main.yaml\"))\n"
      "    assert.are.equal(1, w:count(\"@NS@:spinner\"))\n"
      "    w:close()\n"
      "  end)\n"
      "end)\n" },
    { ".busted",
      "-- busted runs the specs through the keel program: keel.core preloaded, ./kinds loaded.\n"
      "return {\n"
      "  default = {\n"
      "    lua = \"keel\",\n"
      "    ROOT = { \"spec\" },\n"
      "  },\n"
      "}\n" },
    { ".gitattributes",
      "# Scenes merge entity by entity with `keel merge` once git knows the driver:\n"
      "#   git config merge.keel.driver \"keel merge %O %A %B\"\n"
      "# (until then git merges them as text).\n"
      "*.yaml merge=keel\n" },
    { ".gitignore", "*.keelc\n*.save\n" },
    { "README.md",
      "# @NAME@\n"
      "\n"
      "A keel project: kinds in `kinds/` (`@NS@:spinner`, data, and the `@NS@:spin`\n"
      "system that turns it), the scene `scenes/main.yaml`, specs in `spec/`.\n"
      "\n"
      "```sh\n"
      "keel run scenes/main.yaml     # run the game headless (600 frames), then a summary\n"
      "busted                        # run the specs, under keel (see .busted)\n"
      "keel repl scenes/main.yaml    # a REPL with the scene as `world`; help() to start\n"
      "```\n"
      "\n"
      "`keel uuid` prints fresh UUIDs for entities written by hand; `keel check` and\n"
      "`keel fmt` validate and tidy scenes.\n" },
};

/* NAME as a kind namespace ([a-z0-9_]+, lower case): other characters become '_'. */
static void namespace_of(const char *name, char *out, size_t cap)
{
    const char *base = strrchr(name, '/');
    base = base && base[1] ? base + 1 : name;
    size_t n = 0;
    for (const char *p = base; *p && n + 1 < cap; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '/') break;
        out[n++] = isalnum(c) ? (char)tolower(c) : '_';
    }
    out[n] = '\0';
    if (n == 0) snprintf(out, cap, "game");
}

static bool make_dir(const keel_cli *cli, const char *path)
{
    if (mkdir(path, 0777) == 0) return true;
    fprintf(stderr, "%s: new: cannot create %s: %s\n", cli->progname, path, strerror(errno));
    return false;
}

int keel_cli_new(lua_State *L, keel_cli *cli, int argc, char **argv)
{
    int n = keel_cli_parse(cli, argc, argv, NULL, 0);
    if (n < 0) return KEEL_EXIT_USAGE;
    if (n != 1 || argv[0][0] == '\0') {
        keel_cli_usage_error(cli, "new: expected one NAME");
        return KEEL_EXIT_USAGE;
    }
    const char *dir = argv[0];
    struct stat st;
    if (stat(dir, &st) == 0) {
        fprintf(stderr, "%s: new: %s already exists: nothing written\n", cli->progname, dir);
        return KEEL_EXIT_USAGE;
    }
    char ns[64];
    namespace_of(dir, ns, sizeof ns);
    const char *name = strrchr(dir, '/');
    name = name && name[1] ? name + 1 : dir;
    char uuids[3][37];
    for (int i = 0; i < 3; i++) keel_uuid_format(keel_uuid_v4(), uuids[i]);

    static const char *const subdirs[] = { "", "/kinds", "/scenes", "/spec" };
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
        lua_pushfstring(L, "%s%s", dir, subdirs[i]);
        bool ok = make_dir(cli, lua_tostring(L, -1));
        lua_pop(L, 1);
        if (!ok) return KEEL_EXIT_USAGE;
    }
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        /* the placeholders through string.gsub: the texts are ours, the values plain */
        lua_getglobal(L, "string");
        lua_getfield(L, -1, "gsub");
        lua_remove(L, -2);
        lua_pushstring(L, files[i].text);
        lua_pushliteral(L, "@(%w+)@");
        lua_createtable(L, 0, 5);
        lua_pushstring(L, ns);
        lua_setfield(L, -2, "NS");
        lua_pushstring(L, name);
        lua_setfield(L, -2, "NAME");
        for (int u = 0; u < 3; u++) {
            lua_pushstring(L, uuids[u]);
            lua_setfield(L, -2, u == 0 ? "U1" : u == 1 ? "U2" : "U3");
        }
        lua_call(L, 3, 1);
        size_t len;
        const char *text = lua_tolstring(L, -1, &len);
        const char *path = lua_pushfstring(L, "%s/%s", dir, files[i].path);
        keel_diags d;
        keel_diags_init(&d);
        keel_status s = keel_write_atomic(path, text, len, &d);
        keel_cli_print_diags(&d, path);
        keel_diags_free(&d);
        lua_pop(L, 2);
        if (s != KEEL_OK) return KEEL_EXIT_USAGE;
    }
    printf("created %s/: kinds/ (%s:spinner, the %s:spin system), scenes/main.yaml, spec/, .busted, "
           ".gitattributes, README.md\n"
           "  cd %s\n"
           "  keel run scenes/main.yaml     # run it\n"
           "  busted                        # its specs, under keel\n"
           "  keel repl scenes/main.yaml    # the REPL\n",
           dir, ns, ns, dir);
    return KEEL_EXIT_OK;
}
