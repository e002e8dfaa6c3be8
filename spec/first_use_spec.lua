-- first_use_spec.lua — what a new user meets first: kinds found beside the scene, errors said
-- aloud in the REPL and `keel run`, spawn's argument errors, the scaffold, the small verbs.

local H = require "helper"
local ROOT, shell_quote, file_exists, slurp, spit, tmpdir, rmrf =
  H.ROOT, H.shell_quote, H.file_exists, H.slurp, H.spit, H.tmpdir, H.rmrf

local KEEL = H.find_keel()
local function keel(args, input, cwd) return H.run_keel(KEEL, args, input, cwd) end

-- A project: kinds/ with a counter kind that fails once per frame when told to, scenes/s.yaml.
local COUNTER = [[
local keel = require "keel"
keel.kind{ key = "proj:counter", version = 1, fields = { { "n", "int" }, { "fail", "bool" } },
  update = function(self) self.n = self.n + 1; if self.fail then error("boom") end end }
]]
local function scene_with(kind_body)
  return H.doc_of(H.ent("00000000-0000-4000-8000-000000000001", "A", nil, H.comp("proj:counter", kind_body)))
end
local function project(fail)
  local d = tmpdir()
  os.execute("mkdir -p " .. shell_quote(d .. "/kinds") .. " " .. shell_quote(d .. "/scenes/sub"))
  spit(d .. "/kinds/counter.lua", COUNTER)
  spit(d .. "/scenes/sub/s.yaml", scene_with(fail and "{ n: 0, fail: true }" or "{ n: 0 }"))
  return d
end

describe("keel run SCENE from another directory", function()
  it("finds the kinds in the nearest kinds/ above the scene", function()
    local d = project(false)
    local code, out, err = keel("run " .. shell_quote(d .. "/scenes/sub/s.yaml") .. " --frames 3 --save " ..
      shell_quote(d .. "/out.yaml"), nil, "/")
    assert.are.equal(0, code, err)
    assert.matches("3 frames", out)
    assert.matches("\"n\": 3", slurp(d .. "/out.yaml"))
    assert.is_nil(err:find("unknown kind", 1, true), err)
    rmrf(d)
  end)

  it("says in one line when the scene holds unknown kinds, and where kinds were looked for", function()
    local d = project(false)
    os.remove(d .. "/kinds/counter.lua")
    os.execute("rmdir " .. shell_quote(d .. "/kinds"))
    local code, _, err = keel("run " .. shell_quote(d .. "/scenes/sub/s.yaml") .. " --frames 1", nil, "/")
    assert.are.equal(0, code, err)
    local line = err:match("[^\n]*unknown kind[^\n]*")
    assert.is_truthy(line, err)
    assert.matches("1 component of 1 unknown kind", line, 1, true)
    assert.matches("proj:counter 1", line, 1, true)
    assert.matches("looked for in:", line, 1, true)
    assert.matches("./kinds (none)", line, 1, true)
    rmrf(d)
  end)
end)

describe("callback errors said aloud", function()
  it("the REPL prints a line's new w:errors() entries grouped, once", function()
    local d = project(true)
    local code, out, err = keel("repl scenes/sub/s.yaml", "world:run(30, 1/60)\nx = 1\nworld:step()\n", d)
    assert.are.equal(0, code, err)
    local _, n = out:gsub("new callback error", "")
    assert.are.equal(1, n, out) -- after the run, not again after `x = 1` (a faulted component is skipped)
    assert.matches("world: 1 new callback error", out, 1, true)
    assert.matches("  1 x proj:counter update: [^\n]*boom", out)
    rmrf(d)
  end)

  it("keel run prints the grouped lines after its summary", function()
    local d = project(true)
    local code, out, err = keel("run scenes/sub/s.yaml --frames 4", nil, d)
    assert.are.equal(1, code)
    assert.matches("1 error", out, 1, true)
    assert.matches("callback errors by kind, phase and message:\n  1 x proj:counter update: [^\n]*boom", err)
    rmrf(d)
  end)
end)

describe("w:spawn's argument forms", function()
  local keel = require "keel"
  it("takes a body written as a nested table, never drops it", function()
    local w = keel.world("t")
    local e = w:spawn{ components = { { "core:transform", { position = { 5, 5, 5 } } } } }
    local p = e:get("core:transform").position
    assert.are.same({ 5, 5, 5 }, { p[1], p[2], p[3] })
    -- both forms at once, or anything else at [2]: refused, nothing spawned
    local err = H.fails("InvalidArgument", w.spawn, w,
      { components = { { "core:transform", { position = { 1, 1, 1 } }, scale = { 2, 2, 2 } } } })
    assert.matches("components[1]: a body is", err.message, 1, true)
    H.fails("InvalidArgument", w.spawn, w, { components = { { "core:transform", 5 } } })
    H.fails("InvalidArgument", w.spawn, w, { components = { { "core:transform", { scale = { 2, 2, 2 } }, {} } } })
    assert.are.equal(1, w:count())
    w:close()
  end)

  it("names a positional entry and says what it accepts", function()
    local w = keel.world("t")
    local err = H.fails("InvalidArgument", w.spawn, w, { "Bob", components = {} })
    assert.matches('positional entry [1] "Bob"', err.message, 1, true)
    assert.matches("name = ", err.message, 1, true)
    assert.matches("name, parent, enabled, components", err.message, 1, true)
    err = H.fails("InvalidArgument", w.spawn, w, { nmae = "Bob" })
    assert.matches("unknown key 'nmae' (it takes name, parent, enabled, components)", err.message, 1, true)
    w:close()
  end)
end)

describe("cook and fmt --check say what they did", function()
  it("keel cook prints the path, entities and bytes written", function()
    local d = tmpdir()
    local out_path = d .. "/demo.keelc"
    local code, out, err = keel("cook " .. shell_quote(ROOT .. "/scenes/demo.yaml") .. " -o " .. shell_quote(out_path))
    assert.are.equal(0, code, err)
    local size = #slurp(out_path)
    assert.are.equal("wrote " .. out_path .. ": 9 entities, " .. size .. " bytes\n", out)
    rmrf(d)
  end)

  it("keel fmt --check prints a unified diff of what fmt would change", function()
    local d = tmpdir()
    local text = slurp(ROOT .. "/scenes/demo.yaml")
    spit(d .. "/s.yaml", (text:gsub("exposure: 1.2\n", "exposure: 1.20\n")))
    local code, out = keel("fmt --check s.yaml", nil, d)
    assert.are.equal(1, code)
    assert.matches("--- s.yaml\n+++ s.yaml (keel fmt)\n@@ ", out, 1, true)
    assert.matches("\n-    exposure: 1.20\n+    exposure: 1.2\n", out, 1, true)
    assert.are.equal(text:gsub("exposure: 1.2\n", "exposure: 1.20\n"), slurp(d .. "/s.yaml")) -- untouched
    rmrf(d)
  end)
end)

describe("ctrl-c", function()
  it("stops a script's w:run quietly: where, the frame, exit 130, no traceback", function()
    local d = tmpdir()
    os.execute("mkdir " .. shell_quote(d .. "/kinds"))
    -- the 10th update sends keel a SIGINT (through popen: system() ignores SIGINT while it waits)
    spit(d .. "/kinds/sigint.lua", 'local n = 0\n'
      .. 'local pid = io.open("/proc/self/stat"):read("l"):match("^(%d+)")\n'
      .. 'require("keel").kind{ key = "test:sigint", fields = { { "x", "int" } },\n'
      .. '  update = function() n = n + 1; if n == 10 then io.popen("kill -INT " .. pid):close() end end }\n')
    spit(d .. "/s.yaml", H.doc_of(H.ent(H.U1, "A", nil, H.comp("test:sigint", "{ x: 1 }"))))
    spit(d .. "/game.lua", 'local w = assert(require("keel").load("s.yaml"))\nw:run(1000000, 1/60)\n')
    os.execute("cd " .. shell_quote(d) .. " && (timeout 120 " .. H.NO_PRELOAD .. shell_quote(KEEL)
      .. " game.lua >o.txt 2>e.txt; echo $? >rc.txt)")
    local err, rc = slurp(d .. "/e.txt"), slurp(d .. "/rc.txt")
    rmrf(d)
    assert.are.equal("130\n", rc, err)
    assert.are.equal("keel: game.lua:2: interrupted! (after frame 10)\n", err)
  end)
end)

describe("writing entities by hand", function()
  it("every missing key is reported in one pass, an entity's uuid and its components' version alike", function()
    local d = tmpdir()
    spit(d .. "/s.yaml", H.HEAD .. "entities:\n- name: A\n  components:\n  - kind: core:transform\n    body: {}\n"
      .. "- name: B\n  components:\n  - kind: core:transform\n")
    local code, _, err = keel("check s.yaml", nil, d)
    assert.are.equal(1, code)
    local _, uuids = err:gsub("missing key 'uuid'", "")
    local _, versions = err:gsub("missing key 'version'", "")
    assert.are.equal(2, uuids, err)
    assert.are.equal(2, versions, err)
    assert.matches("s.yaml:8:5: error: ParseError: missing key 'version' (at entities[0].components[0])", err, 1, true)
    rmrf(d)
  end)

  it("keel uuid [N] prints fresh v4 UUIDs, one a line", function()
    local code, out = keel("uuid")
    assert.are.equal(0, code)
    assert.matches(H.UUID_PATTERN:sub(1, -2) .. "\n$", out)
    code, out = keel("uuid 5")
    assert.are.equal(0, code)
    local seen, n = {}, 0
    for line in out:gmatch("[^\n]+") do
      assert.matches(H.UUID_PATTERN, line)
      assert.are.equal("4", line:sub(15, 15)) -- version 4
      assert.is_nil(seen[line])
      seen[line], n = true, n + 1
    end
    assert.are.equal(5, n)
    local c2, _, err = keel("uuid nope")
    assert.are.equal(2, c2)
    assert.matches("^keel: uuid: N must be a whole number", err)
  end)
end)

describe("kind files sharing code", function()
  local lfs = require "lfs"
  local keel = require "keel"
  local kf, saved, d, path_before

  before_each(function()
    saved = package.loaded["keel.kindfiles"]
    package.loaded["keel.kindfiles"] = nil
    kf = require "keel.kindfiles"
    kf.stderr = { write = function() end }
    path_before = package.path
    d = tmpdir()
    os.execute("mkdir -p " .. shell_quote(d .. "/kinds") .. " " .. shell_quote(d .. "/lib"))
  end)

  after_each(function()
    package.loaded["keel.kindfiles"] = saved
    package.path = path_before
    package.loaded.nc_shared, package.loaded.nc_top = nil, nil
    rmrf(d)
  end)

  it("a kind file requires the project's ?.lua and lib/?.lua; reload() follows a changed module", function()
    spit(d .. "/lib/nc_shared.lua", "return { speed = 3 }\n")
    spit(d .. "/nc_top.lua", 'return { speed = require("nc_shared").speed * 2 }\n')
    spit(d .. "/kinds/a.lua", 'local top = require "nc_top"\n'
      .. 'require("keel").kind{ key = "nc:shared", fields = { { "speed", "float", default = top.speed } } }\n')
    spit(d .. "/kinds/b.lua", 'require("keel").kind{ key = "nc:alone", fields = { { "x", "int" } } }\n')
    assert.are.equal(0, kf.load(d .. "/kinds"))
    assert.are.equal(6, keel.kind_info("nc:shared").fields[1].default)
    assert.are.same({}, kf.reload())
    -- the module two requires down changes (same size, same second): its user runs again, the other not
    local t = lfs.attributes(d .. "/lib/nc_shared.lua", "modification")
    spit(d .. "/lib/nc_shared.lua", "return { speed = 5 }\n")
    lfs.touch(d .. "/lib/nc_shared.lua", t)
    assert.are.same({ d .. "/kinds/a.lua" }, kf.reload())
    assert.are.equal(10, keel.kind_info("nc:shared").fields[1].default)
    assert.are.same({}, kf.reload())
  end)

  it("load(dir) of a directory already loaded runs nothing again (a spec under the keel program)", function()
    spit(d .. "/kinds/c.lua", "NC_RUNS = (NC_RUNS or 0) + 1\n")
    assert.are.equal(0, kf.load(d .. "/kinds"))
    assert.are.equal(0, kf.load(d .. "/kinds/"))
    assert.are.equal(1, NC_RUNS)
    NC_RUNS = nil
  end)
end)

describe("keel new NAME", function()
  it("makes a project whose own spec passes under busted and whose scene runs", function()
    local d = tmpdir()
    local code, out, err = keel("new my-game", nil, d)
    assert.are.equal(0, code, err)
    assert.matches("created my-game/", out, 1, true)
    local p = d .. "/my-game"
    for _, f in ipairs{ "kinds/spinner.lua", "kinds/spin.lua", "scenes/main.yaml", "spec/spinner_spec.lua",
                        ".busted", ".gitattributes", "README.md" } do
      assert.is_true(file_exists(p .. "/" .. f), f)
    end
    assert.matches("*.yaml merge=keel", slurp(p .. "/.gitattributes"), 1, true)
    local readme = slurp(p .. "/README.md")
    for _, c in ipairs{ "keel run scenes/main.yaml", "busted", "keel repl scenes/main.yaml" } do
      assert.matches(c, readme, 1, true)
    end
    -- the scaffold's own spec, through its .busted (busted re-runs itself under keel)
    local bindir = KEEL:match("^(.*)/[^/]+$")
    local ok = os.execute("cd " .. shell_quote(p) .. " && PATH=" .. shell_quote(bindir) .. ":\"$PATH\" "
      .. H.NO_PRELOAD .. "busted -o TAP >busted.txt 2>&1")
    local tap = slurp(p .. "/busted.txt")
    assert.is_true(ok == true or ok == 0, tap)
    assert.matches("ok 2 ", tap, 1, true)
    code, out, err = keel("run scenes/main.yaml --frames 60", nil, p)
    assert.are.equal(0, code, err)
    assert.matches("60 frames, 1 entity", out, 1, true)
    assert.are.equal(0, (keel("fmt --check scenes/main.yaml", nil, p))) -- canonical as written
    -- an existing NAME is left alone
    code, _, err = keel("new my-game", nil, d)
    assert.are.equal(2, code)
    assert.matches("already exists", err, 1, true)
    rmrf(d)
  end)
end)

describe("the reference a newcomer reads", function()
  local readme = slurp(ROOT .. "/README.md")

  it("names no DESIGN.md (not in the repository); documents JOBS, query rows and keel.repl.format", function()
    assert.is_nil(readme:find("DESIGN", 1, true))
    assert.matches("make test JOBS=1", readme, 1, true)
    assert.matches("A query row:", readme, 1, true)
    assert.matches('require("keel.repl").format(v)', readme, 1, true)
    assert.are.equal("function", type(require("keel.repl").format))
  end)

  it("has a row in the field types table for every type keel.kind accepts", function()
    local keel = require "keel"
    for _, t in ipairs{ "bool", "int", "float", "vec2", "vec3", "vec4", "quat", "color", "enum", "string",
                        "asset", "entity" } do
      local spec = { key = "nc:t_" .. t, fields = { { "f", t, choices = t == "enum" and { "a", "b" } or nil } } }
      assert.is_truthy(pcall(keel.kind, spec), t) -- a real type
      assert.is_truthy(readme:find("\n  | `" .. t .. "`", 1, true) or readme:find("`, `" .. t .. "`", 1, true)
        or readme:find("| `" .. t .. "`,", 1, true), t)
    end
  end)

  it("the REPL's help() names undo and format; print() and the printout agree on floats", function()
    local help = require("keel.repl").help()
    assert.matches('require("keel.history").new(world)', help, 1, true)
    assert.matches('require("keel.repl").format', help, 1, true)
    local code, out, err = keel("", 'c = world:spawn{ components = { { "core:transform", position = { 80.00000000000028, 0.1 + 0.2, 80 } } } }:get("core:transform")\n'
      .. "print(c.position[1], c.position[2], c.position[3])\n=c\n")
    assert.are.equal(0, code, err)
    assert.matches("80.00000000000028\t0.30000000000000004\t80\n", out, 1, true)
    assert.matches("position = {80.00000000000028, 0.30000000000000004, 80}", out, 1, true)
  end)
end)

describe("long work on a terminal", function()
  it("a scene of 10 MB or more shows a status line and its time on a TTY, nothing otherwise", function()
    local d = tmpdir()
    local pad = ("# " .. ("x"):rep(98) .. "\n"):rep(110000) -- 11 MB of comments: quick to read, big to stat
    spit(d .. "/big.yaml", pad .. H.doc_of(H.ent(H.U1, "A")))
    local code, out, err = keel("check big.yaml", nil, d)
    assert.are.equal(0, code, err)
    assert.are.equal("", out .. err) -- not a terminal
    local ok = os.execute("cd " .. shell_quote(d) .. " && " .. H.NO_PRELOAD .. "script -qec "
      .. shell_quote(shell_quote(KEEL) .. " check big.yaml") .. " /dev/null >tty.txt 2>&1")
    local tty = slurp(d .. "/tty.txt")
    rmrf(d)
    assert.is_true(ok == true or ok == 0, tty)
    assert.matches("reading big.yaml (11.", tty, 1, true)
    assert.matches("big.yaml: 11.%d MB read in [%d.]+ s %([%d.]+ MB/s%)", tty)
  end)
end)
