-- cli_spec.lua — runs the built `keel` program and checks its output and exit codes.

local H = require "helper"
local ROOT, shell_quote, file_exists, slurp, spit, tmpdir, rmrf =
  H.ROOT, H.shell_quote, H.file_exists, H.slurp, H.spit, H.tmpdir, H.rmrf

local doc, entity_text, comp_text = H.doc, H.entity_text, H.comp_text
local doc_of, ent, comp, HEAD = H.doc_of, H.ent, H.comp, H.HEAD
local U1, U2, U3 = H.U1, H.U2, H.U3

local KEEL = H.find_keel()
local SCENES = ROOT .. "/scenes"
local FIXTURES = ROOT .. "/tests/fixtures"

-- The Lua face, to read back what the program wrote.
local keel_api = require "keel"

-- Runs the program: exit code, stdout, stderr.
local function keel(args, input, cwd) return H.run_keel(KEEL, args, input, cwd) end

-- A small JSON reader: enough for `keel kinds --json`.
local function json_decode(s)
  local pos = 1
  local function ws() pos = s:find("[^ \t\r\n]", pos) or #s + 1 end
  local value
  local function str()
    local out = {}
    pos = pos + 1
    while true do
      local c = s:sub(pos, pos)
      if c == '"' then pos = pos + 1 break end
      if c == "" then error("unterminated string") end
      if c == "\\" then
        local e = s:sub(pos + 1, pos + 1)
        local map = { n = "\n", t = "\t", r = "\r", b = "\b", f = "\f", ['"'] = '"', ["\\"] = "\\", ["/"] = "/" }
        if e == "u" then
          out[#out + 1] = utf8.char(tonumber(s:sub(pos + 2, pos + 5), 16))
          pos = pos + 6
        else
          out[#out + 1] = assert(map[e], "bad escape")
          pos = pos + 2
        end
      else
        out[#out + 1] = c
        pos = pos + 1
      end
    end
    return table.concat(out)
  end
  function value()
    ws()
    local c = s:sub(pos, pos)
    if c == "{" then
      local t = {}
      pos = pos + 1
      ws()
      if s:sub(pos, pos) == "}" then pos = pos + 1 return t end
      while true do
        ws()
        assert(s:sub(pos, pos) == '"', "object key expected at " .. pos)
        local k = str()
        ws()
        assert(s:sub(pos, pos) == ":", "':' expected at " .. pos)
        pos = pos + 1
        t[k] = value()
        ws()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == "}" then return t end
        assert(d == ",", "',' or '}' expected at " .. pos)
      end
    elseif c == "[" then
      local t = {}
      pos = pos + 1
      ws()
      if s:sub(pos, pos) == "]" then pos = pos + 1 return t end
      while true do
        t[#t + 1] = value()
        ws()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == "]" then return t end
        assert(d == ",", "',' or ']' expected at " .. pos)
      end
    elseif c == '"' then
      return str()
    elseif s:find("^true", pos) then pos = pos + 4 return true
    elseif s:find("^false", pos) then pos = pos + 5 return false
    elseif s:find("^null", pos) then pos = pos + 4 return nil
    else
      local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
      assert(num and #num > 0, "bad JSON at " .. pos)
      pos = pos + #num
      return tonumber(num)
    end
  end
  local v = value()
  ws()
  assert(pos > #s, "trailing text after JSON")
  return v
end

local BUNDLED = { "demo.yaml", "lighting_lab.yaml", "unknown_kind.yaml" }

describe("keel program", function()
  setup(function()
    assert(KEEL and file_exists(KEEL), "the keel program was not found: set KEEL_BIN or build into build*/")
    -- keel_api reads what the program wrote with the kinds the program starts with: the
    -- bundled ones (loaded already under `keel busted`, not under a stock lua5.4 busted)
    assert.are.equal(0, require("keel.kindfiles").load(ROOT .. "/lua/kinds"))
  end)

  -- a fresh directory for each test (some make their own)
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmrf(dir) end)

  describe("usage", function()
    it("exits 2 on an unknown option", function()
      local code, _, err = keel("--no-such-option")
      assert.are.equal(2, code)
      assert.truthy(err:find("unknown option", 1, true))
      assert.truthy(err:find("usage:", 1, true))
    end)

    it("exits 2 on an unknown option of a verb", function()
      local code, _, err = keel("check --bogus " .. shell_quote(SCENES .. "/demo.yaml"))
      assert.are.equal(2, code)
      assert.truthy(err:find("--bogus", 1, true))
    end)

    it("exits 2 when a verb lacks its arguments", function()
      assert.are.equal(2, (keel("check")))
      assert.are.equal(2, (keel("fmt")))
      assert.are.equal(2, (keel("cook " .. shell_quote(SCENES .. "/demo.yaml"))))
      assert.are.equal(2, (keel("dump")))
      assert.are.equal(2, (keel("run --frames")))
      assert.are.equal(2, (keel("run --frames ten")))
      assert.are.equal(2, (keel("run --dt -1")))
      assert.are.equal(2, (keel("kinds extra")))
    end)

    it("prints usage and exits 0 for --help", function()
      local code, out = keel("--help")
      assert.are.equal(0, code)
      assert.truthy(out:find("keel check FILE", 1, true))
    end)

    it("prints a verb's own usage for VERB --help, and on a usage error in that verb", function()
      for _, verb in ipairs({ "repl", "run", "check", "fmt", "cook", "dump", "kinds" }) do
        local code, out = keel(verb .. " --help")
        assert.are.equal(0, code, verb)
        assert.truthy(out:find("^usage: keel " .. verb .. " "), out)
        assert.falsy(out:find("keel SCRIPT.lua", 1, true), out) -- not the whole list
        assert.truthy(out:find("exit codes:", 1, true), out)
      end
      local code, out, err = keel("run --frame 3")
      assert.are.equal(2, code)
      assert.are.equal("", out)
      assert.truthy(err:find("^keel: unknown option %-%-frame\nusage: keel run %[SCENE%]"), err)
      assert.truthy(err:find("(default 600)", 1, true), err)
      code, _, err = keel("cook " .. shell_quote(SCENES .. "/demo.yaml"))
      assert.are.equal(2, code)
      assert.truthy(err:find("^keel: cook: expected SCENE %-o OUT%.keelc\nusage: keel cook SCENE"), err)
      assert.falsy(err:find("keel kinds", 1, true), err)
      _, out = keel("--help")
      assert.truthy(out:find("keel VERB --help", 1, true), out)
      code, out = keel("help cook")
      assert.are.equal(0, code)
      assert.truthy(out:find("^usage: keel cook SCENE"), out)
    end)

    it("exits 2 when a kinds directory is missing", function()
      local code, _, err = keel("--kinds /nonexistent/kinds kinds")
      assert.are.equal(2, code)
      assert.truthy(err:find("/nonexistent/kinds", 1, true))
    end)

    it("exists", function()
      assert.truthy(KEEL and file_exists(KEEL))
    end)

    it("exits 2 on usage errors", function()
      assert.are.equal(2, (keel("check")))
      assert.are.equal(2, (keel("fmt")))
      assert.are.equal(2, (keel("cook " .. shell_quote(ROOT .. "/scenes/demo.yaml"))))
      assert.are.equal(2, (keel("dump")))
      assert.are.equal(2, (keel("run --frames nope")))
      assert.are.equal(2, (keel("--no-such-flag")))
    end)

    it("check of a missing file is an environment error (2); usage errors are 2", function()
      assert.are.equal(2, (keel("check " .. shell_quote(dir .. "/none.yaml"))))
      assert.are.equal(2, (keel("check")))
      assert.are.equal(2, (keel("frobnicate")))
      assert.are.equal(2, (keel("check --bogus " .. shell_quote(SCENES .. "/demo.yaml"))))
    end)

    it("a scene where a script goes exits 2", function()
      assert.are.equal(2, (keel(shell_quote(SCENES .. "/demo.yaml"))))
    end)
  end)

  describe("check", function()
    for _, name in ipairs(BUNDLED) do
      it("passes the bundled " .. name, function()
        local code, out, err = keel("check " .. shell_quote(SCENES .. "/" .. name))
        assert.are.equal(0, code, err)
        assert.are.equal("", out)
        assert.falsy(err:find("error:", 1, true), err)
      end)
    end

    it("passes the asset manifest", function()
      local code, _, err = keel("check " .. shell_quote(SCENES .. "/assets.yaml"))
      assert.are.equal(0, code, err)
    end)

    it("reports each error as FILE:LINE:COL: error: CODE: message and exits 1", function()
      local dir = tmpdir()
      local path = dir .. "/broken.yaml"
      spit(path, table.concat({
        "keel: 1",
        "scene:",
        "  uuid: 550e8400-e29b-41d4-a716-446655440000",
        "  name: Broken",
        "entities:",
        "  - uuid: 11111111-1111-1111-1111-111111111111",
        "    name: A",
        "    components:",
        "      - kind: core:transform",
        "        version: 1",
        "        slot: 0",
        "        body:",
        "          position: [0, nope, 0]",
        "  - uuid: not-a-uuid",
        "    name: B",
        "    components: []",
        "",
      }, "\n"))
      local code, _, err = keel("check " .. shell_quote(path))
      rmrf(dir)
      assert.are.equal(1, code)
      local lines = {}
      for line in err:gmatch("[^\n]+") do
        if line:find(": error: ", 1, true) then lines[#lines + 1] = line end
      end
      assert.is_true(#lines >= 2, err) -- every problem, not only the first
      for _, line in ipairs(lines) do
        assert.truthy(line:match("^" .. path:gsub("%p", "%%%0") .. ":%d+:%d+: error: %u%a+: .+"), line)
      end
      assert.truthy(err:find("broken.yaml:13:%d+: error: InvalidArgument: "), err)
      assert.truthy(err:find("broken.yaml:14:%d+: error: ParseError: "), err)
    end)

    it("exits 1 on a document that is not YAML", function()
      local dir = tmpdir()
      spit(dir .. "/bad.yaml", "keel: [1\n")
      local code, _, err = keel("check " .. shell_quote(dir .. "/bad.yaml"))
      rmrf(dir)
      assert.are.equal(1, code)
      assert.truthy(err:find("bad.yaml:%d+:%d+: error: ParseError: "), err)
    end)

    it("exits 2 on a file that cannot be read", function()
      local code, _, err = keel("check /nonexistent/scene.yaml")
      assert.are.equal(2, code)
      assert.truthy(err:find("IOError", 1, true), err)
    end)

    it("makes a missing asset an error with --strict", function()
      local dir = tmpdir()
      local text = assert(slurp(SCENES .. "/demo.yaml"))
      spit(dir .. "/assets.yaml", "assets: []\n")
      spit(dir .. "/demo.yaml", text)
      local code1 = keel("check " .. shell_quote(dir .. "/demo.yaml"))
      local code2, _, err = keel("check --strict " .. shell_quote(dir .. "/demo.yaml"))
      rmrf(dir)
      assert.are.equal(0, code1)
      assert.are.equal(1, code2)
      assert.truthy(err:find(": error: ", 1, true), err)
    end)

    it("keel check prints FILE:LINE:COL: error: CODE: message and exits 1", function()
      local f = dir .. "/bad.yaml"
      spit(f, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0, "          position: [1, 2]"))))
      local code, out, err = keel("check " .. shell_quote(f))
      assert.are.equal(1, code)
      local text = (out or "") .. (err or "")
      assert.truthy(text:find(f .. ":%d+:%d+: error: InvalidArgument: "), text)
      local _, lerr = keel_api.load(f)
      local d1 = lerr.diagnostics[1]
      local line = ("%s:%d:%d: error: %s: %s (at %s)"):format(f, d1.line, d1.col, d1.code, d1.message, d1.path)
      assert.truthy(text:find(line, 1, true), text)
      local ok = dir .. "/ok.yaml"
      spit(ok, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0))))
      assert.are.equal(0, (keel("check " .. shell_quote(ok))))
      assert.are.equal(1, (keel("check " .. shell_quote(ok) .. " " .. shell_quote(f))))
    end)

    it("keel check warns about an enum choice no longer offered, and --strict makes it an error", function()
      local f = dir .. "/enum.yaml"
      spit(f, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. comp_text("core:camera", 1, 0, "          projection: fisheye"))))
      local code, out, err = keel("check " .. shell_quote(f))
      assert.are.equal(0, code)
      assert.truthy(((out or "") .. err):find(f .. ":%d+:%d+: warning: "))
      code, out, err = keel("check --strict " .. shell_quote(f))
      assert.are.equal(1, code)
      assert.truthy(((out or "") .. err):find(f .. ":%d+:%d+: error: InvalidArgument: "))
    end)

    it("keel check reports unknown kinds as a warning with a count", function()
      local code, out, err = keel("check " .. shell_quote(ROOT .. "/scenes/unknown_kind.yaml"))
      assert.are.equal(0, code)
      assert.truthy(((out or "") .. (err or "")):find("mod:winch is not declared: 3 components kept", 1, true))
    end)

    it("keel check --strict turns a missing asset into an error", function()
      local f = dir .. "/a.yaml"
      spit(f, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. comp_text("core:mesh_renderer", 1, 0, "          mesh: " .. U2))))
      spit(dir .. "/assets.yaml", "assets: []\n")
      assert.are.equal(0, (keel("check --assets " .. shell_quote(dir .. "/assets.yaml") .. " " .. shell_quote(f))))
      assert.are.equal(1, (keel("check --strict --assets " .. shell_quote(dir .. "/assets.yaml") .. " " .. shell_quote(f))))
    end)

    it("check: 0 for a good file, 1 with FILE:LINE:COL: error: CODE: message for a bad one", function()
      assert.are.equal(0, (keel("check " .. shell_quote(SCENES .. "/demo.yaml"))))
      local src = slurp(SCENES .. "/demo.yaml")
      local bad = src:gsub("fog_density: [%d.]+", "fog_density: yes", 1)
      spit(dir .. "/bad.yaml", bad)
      local code, out, err = keel("check bad.yaml", nil, dir)
      assert.are.equal(1, code)
      local text = out .. err
      local line = text:match("bad%.yaml:%d+:%d+: error: InvalidArgument: [^\n]+")
      assert.truthy(line, text)
      local ln = tonumber(line:match("^bad%.yaml:(%d+):"))
      local n = 0
      for l in (bad .. "\n"):gmatch("([^\n]*)\n") do
        n = n + 1
        if n == ln then assert.truthy(l:find("fog_density", 1, true), l) end
      end
    end)

    it("check reports every code with the documented prefix", function()
      local want = {
        ["bad_alias.yaml"] = "ParseError", ["bad_duplicate_uuid.yaml"] = "ParseError",
        ["bad_wrong_type.yaml"] = "InvalidArgument", ["bad_unknown_parent.yaml"] = "NotFound",
        ["bad_cycle.yaml"] = "InvalidOperation", ["bad_second_singleton.yaml"] = "InvalidOperation",
        ["bad_nan_float.yaml"] = "InvalidArgument", ["bad_rejected_pair.yaml"] = "InvalidOperation",
      }
      for f, code in pairs(want) do
        local rc, out, err = keel("check " .. shell_quote(FIXTURES .. "/" .. f))
        assert.are.equal(1, rc, f)
        assert.truthy((out .. err):find(f .. ":%d+:%d+: error: " .. code .. ": "), f .. ": " .. out .. err)
      end
    end)

    it("check --strict turns a stale enum into an error", function()
      local f = shell_quote(FIXTURES .. "/bad_enum.yaml")
      assert.are.equal(0, (keel("check " .. f)))
      local rc, out, err = keel("check --strict " .. f)
      assert.are.equal(1, rc)
      assert.truthy((out .. err):find(": error: InvalidArgument: ", 1, true))
    end)
  end)

  describe("fmt", function()
    for _, name in ipairs(BUNDLED) do
      it("finds the bundled " .. name .. " canonical", function()
        local code, out, err = keel("fmt --check " .. shell_quote(SCENES .. "/" .. name))
        assert.are.equal(0, code, err)
        assert.are.equal("", out)
      end)
    end

    it("rewrites a non-canonical file, and --check then finds it clean", function()
      local dir = tmpdir()
      local path = dir .. "/s.yaml"
      spit(path, "keel: 1\nscene: {uuid: 550e8400-e29b-41d4-a716-446655440000, name: S}\n"
        .. "entities:\n- uuid: 11111111-1111-1111-1111-111111111111\n  name: A\n"
        .. "  components:\n  - {kind: core:transform, version: 1, slot: 0, body: {position: [1, 2, 3]}}\n")
      local c1, out1 = keel("fmt --check " .. shell_quote(path))
      local c2 = keel("fmt " .. shell_quote(path))
      local once = slurp(path)
      local c3, out3 = keel("fmt --check " .. shell_quote(path))
      local c4 = keel("fmt " .. shell_quote(path))
      local twice = slurp(path)
      rmrf(dir)
      assert.are.equal(1, c1)
      assert.truthy(out1:find("s.yaml", 1, true))
      assert.are.equal(0, c2)
      assert.truthy(once:find("position: [1, 2, 3]", 1, true), once)
      assert.are.equal(0, c3)
      assert.are.equal("", out3)
      assert.are.equal(0, c4)
      assert.are.equal(once, twice)
    end)

    it("leaves a broken file alone and exits 1", function()
      local dir = tmpdir()
      local path = dir .. "/b.yaml"
      spit(path, "keel: 1\nscene: {uuid: nope}\n")
      local code, _, err = keel("fmt " .. shell_quote(path))
      local after = slurp(path)
      rmrf(dir)
      assert.are.equal(1, code)
      assert.truthy(err:find("error:", 1, true))
      assert.are.equal("keel: 1\nscene: {uuid: nope}\n", after)
    end)

    it("keel fmt rewrites in canonical form; --check only reports", function()
      local f = dir .. "/s.yaml"
      local w = assert(keel_api.load(ROOT .. "/tests/fixtures/good_design_example.yaml"))
      local canonical = w:dump()
      spit(f, slurp(ROOT .. "/tests/fixtures/good_design_example.yaml"))
      local code = keel("fmt --check " .. shell_quote(f))
      assert.are.equal(1, code)
      assert.are.equal(slurp(ROOT .. "/tests/fixtures/good_design_example.yaml"), slurp(f))
      assert.are.equal(0, (keel("fmt " .. shell_quote(f))))
      assert.are.equal(canonical, slurp(f))
      assert.are.equal(0, (keel("fmt --check " .. shell_quote(f))))
      assert.are.equal(canonical, slurp(f))
    end)

    it("keel fmt leaves a file with errors alone and exits 1", function()
      local f = dir .. "/bad.yaml"
      local text = doc(entity_text(U1, "E", "", "    parent: " .. U3 .. "\n"))
      spit(f, text)
      local code, out, err = keel("fmt " .. shell_quote(f))
      assert.are.equal(1, code)
      assert.are.equal(text, slurp(f))
      assert.truthy(((out or "") .. err):find(f .. ":%d+:%d+: error: NotFound: "))
    end)

    it("fmt --check of a canonical file is clean; fmt makes a file canonical and is idempotent", function()
      for _, f in ipairs { "demo.yaml", "lighting_lab.yaml", "unknown_kind.yaml",
                           "prefabs/drone.yaml", "prefabs/enemy.yaml" } do
        assert.are.equal(0, (keel("fmt --check " .. shell_quote(SCENES .. "/" .. f))), f)
      end
      local text = HEAD:gsub("scene:\n  uuid: (%S+)\n  name: T\n", "scene: {uuid: %1, name: T}\n") ..
        "entities:\n  - uuid: " .. U1 .. "\n    name: A\n    components:\n" ..
        "      - {kind: core:transform, version: 1, slot: 0, body: {position: [1.50, 0, 0]}}\n"
      spit(dir .. "/nc.yaml", text)
      assert.are.equal(1, (keel("fmt --check nc.yaml", nil, dir)))
      assert.are.equal(text, slurp(dir .. "/nc.yaml"))
      assert.are.equal(0, (keel("fmt nc.yaml", nil, dir)))
      local once = slurp(dir .. "/nc.yaml")
      assert.truthy(once:find("position: [1.5, 0, 0]", 1, true))
      assert.are.equal(0, (keel("fmt --check nc.yaml", nil, dir)))
      assert.are.equal(0, (keel("fmt nc.yaml", nil, dir)))
      assert.are.equal(once, slurp(dir .. "/nc.yaml"))
    end)

    it("fmt of a broken file exits 1 and leaves it alone", function()
      spit(dir .. "/b.yaml", "keel: [1\n")
      assert.are.equal(1, (keel("fmt b.yaml", nil, dir)))
      assert.are.equal("keel: [1\n", slurp(dir .. "/b.yaml"))
    end)
  end)

  describe("run", function()
    it("runs the bundled demo for 10 frames and prints a summary", function()
      local code, out, err = keel("run --frames 10")
      assert.are.equal(0, code, err)
      assert.truthy(out:find("10 frames", 1, true), out)
      assert.truthy(out:match("(%d+) entit"), out)
      assert.truthy(out:find("ms per frame", 1, true), out)
      assert.truthy(out:find("0 errors", 1, true), out)
      assert.falsy(out:find("\r", 1, true)) -- no progress line off a terminal
    end)

    it("saves the world with --save, and the output loads again", function()
      local dir = tmpdir()
      local out_path = dir .. "/after.yaml"
      local code, out, err = keel("run " .. shell_quote(SCENES .. "/demo.yaml") .. " --frames 120 --dt 0.0166 --save "
        .. shell_quote(out_path))
      assert.are.equal(0, code, err)
      local n = tonumber(out:match("(%d+) entit"))
      assert.truthy(file_exists(out_path))
      local c2, _, e2 = keel("check " .. shell_quote(out_path))
      assert.are.equal(0, c2, e2)
      local script = dir .. "/count.lua"
      spit(script, 'local keel = require "keel"\nlocal w = assert(keel.load(arg[1]))\nprint(w:count())\n')
      local c3, o3, e3 = keel(shell_quote(script) .. " " .. shell_quote(out_path))
      rmrf(dir)
      assert.are.equal(0, c3, e3)
      assert.are.equal(n, tonumber(o3:match("%d+")))
    end)

    it("plays the demo's gameplay: spawners stop at max_count, the match timer counts down", function()
      local dir = tmpdir()
      local out_path = dir .. "/played.yaml"
      local code, out, err = keel("run --frames 600 --save " .. shell_quote(out_path))
      local saved = slurp(out_path) or ""
      rmrf(dir)
      assert.are.equal(0, code, err)
      assert.truthy(out:find("600 frames, 15 entities", 1, true), out)
      assert.truthy(saved:find("name: Drone 4\n", 1, true))
      assert.truthy(saved:find("name: Scout 2\n", 1, true))
      assert.falsy(saved:find("name: Drone 5\n", 1, true))
      assert.falsy(saved:find("name: Scout 3\n", 1, true))
      -- 600 fixed steps of 1/60 s: 90 s - 10 s
      local remaining = tonumber(saved:match("remaining: ([%d%.e%-]+)"))
      assert.is_true(math.abs(remaining - 80) < 1e-6, tostring(remaining))
    end)

    it("reports callback failures and exits 1", function()
      local dir = tmpdir()
      os.execute("mkdir -p " .. shell_quote(dir .. "/kinds"))
      spit(dir .. "/kinds/bad.lua", 'require("keel").kind{ key = "test:bad", fields = { { "count", "int" } },\n'
        .. '  update = function(self) self.count = self.count + 1; if self.count > 2 then error("too many") end end }\n')
      spit(dir .. "/make.lua", 'local w = require("keel").world("Bad")\n'
        .. 'w:spawn{ name = "B", components = { "test:bad" } }\nassert(w:save(arg[1]))\n')
      local c1, _, e1 = keel("make.lua scene.yaml", nil, dir)
      local code, out, err = keel("run scene.yaml --frames 10 --save out.yaml", nil, dir)
      local saved = slurp(dir .. "/out.yaml") or ""
      rmrf(dir)
      assert.are.equal(0, c1, e1)
      assert.are.equal(1, code)
      assert.truthy(out:find("10 frames, 1 entity, ", 1, true), out)
      assert.truthy(out:find("1 error", 1, true), out)
      assert.truthy(err:find('scene.yaml: error: test:bad%[0%] on entity "B" %x+%-%x+%-%x+%-%x+%-%x+: '), err)
      assert.truthy(err:find("too many", 1, true), err)
      -- the failing call was rolled back: count stopped at 2
      assert.truthy(saved:find("count: 2\n", 1, true), saved)
    end)

    it("writes unknown components back unchanged", function()
      local dir = tmpdir()
      local out_path = dir .. "/u.yaml"
      local code, out, err = keel("run " .. shell_quote(SCENES .. "/unknown_kind.yaml") .. " --frames 5 --save "
        .. shell_quote(out_path))
      local saved = slurp(out_path)
      rmrf(dir)
      assert.are.equal(0, code, err)
      assert.truthy(err:find("mod:winch is not declared: 3 components kept", 1, true), err)
      assert.truthy(out:find("5 frames", 1, true), out)
      assert.are.equal(slurp(SCENES .. "/unknown_kind.yaml"), saved)
    end)

    it("exits 1 with diagnostics on a scene that does not load", function()
      local dir = tmpdir()
      spit(dir .. "/bad.yaml", "keel: 1\nscene: {uuid: nope, name: X}\n")
      local code, _, err = keel("run " .. shell_quote(dir .. "/bad.yaml") .. " --frames 1")
      rmrf(dir)
      assert.are.equal(1, code)
      assert.truthy(err:find("bad.yaml:%d+:%d+: error: ParseError: "), err)
    end)

    it("keel run --frames N --dt S --save OUT runs headless and saves", function()
      local out = dir .. "/out.yaml"
      local code = keel("run " .. shell_quote(ROOT .. "/scenes/demo.yaml") .. " --frames 5 --dt 0.1 --save " .. shell_quote(out))
      assert.are.equal(0, code)
      assert.truthy(keel_api.load(out))
      assert.are.equal(0, (keel("fmt --check " .. shell_quote(out))))
      assert.are.equal(0, (keel("run --frames 2", nil, dir)))
    end)

    it("run plays a scene headless, saves with --save, exits 1 when a callback failed", function()
      local code, out, err = keel("run " .. shell_quote(SCENES .. "/demo.yaml") .. " --frames 5 --dt 0.02 --save out.yaml", nil, dir)
      assert.are.equal(0, code, out .. err)
      assert.truthy(assert(keel_api.load(dir .. "/out.yaml")))
      assert.are.equal(0, (keel("run --frames 2", nil, dir)))
      os.execute("mkdir -p " .. shell_quote(dir .. "/kf"))
      spit(dir .. "/kf/f.lua", 'local keel = require "keel"\nkeel.kind{ key = "cxf:fail", fields = {}, update = function() error("no") end }\n')
      spit(dir .. "/f.yaml", doc_of(ent(U1, "A", nil, comp("cxf:fail", "{}"))))
      local c2 = keel("run f.yaml --frames 3 --kinds kf --save f_out.yaml", nil, dir)
      assert.are.equal(1, c2)
      assert.is_true(file_exists(dir .. "/f_out.yaml"))
      assert.are.equal(2, (keel("run f.yaml --frames x --kinds kf", nil, dir)))
      assert.are.equal(2, (keel("run none.yaml --frames 1", nil, dir)))
    end)

    it("unknown kinds survive `keel run --save` byte for byte", function()
      local code = keel("run " .. shell_quote(SCENES .. "/unknown_kind.yaml") .. " --frames 3 --save again.yaml", nil, dir)
      assert.are.equal(0, code)
      assert.are.equal(slurp(SCENES .. "/unknown_kind.yaml"), slurp(dir .. "/again.yaml"))
    end)
  end)

  describe("cook and dump", function()
    it("cooks the demo and dumps it back to the canonical YAML", function()
      local dir = tmpdir()
      local cooked = dir .. "/demo.keelc"
      local c1, _, e1 = keel("cook " .. shell_quote(SCENES .. "/demo.yaml") .. " -o " .. shell_quote(cooked))
      local head = slurp(cooked)
      local c2, yaml, e2 = keel("dump " .. shell_quote(cooked))
      local c3, _, e3 = keel("dump " .. shell_quote(cooked) .. " -o " .. shell_quote(dir .. "/back.yaml"))
      local back = slurp(dir .. "/back.yaml")
      rmrf(dir)
      assert.are.equal(0, c1, e1)
      assert.are.equal("KEELCOOK", head:sub(1, 8))
      assert.are.equal(0, c2, e2)
      assert.are.equal(0, c3, e3)
      assert.are.equal(yaml, back)
      assert.are.equal(slurp(SCENES .. "/demo.yaml"), yaml)
    end)

    it("dumps a cooked scene whose kinds are not declared byte for byte as its YAML", function()
      -- read with no kinds, every game component is unknown: its body comes from the cooked
      -- values, and strings are written as the canonical writer writes them (unquoted when plain)
      local dir = tmpdir()
      local cooked = dir .. "/demo.keelc"
      local c1, _, e1 = keel("cook " .. shell_quote(SCENES .. "/demo.yaml") .. " -o " .. shell_quote(cooked))
      lfs.mkdir(dir .. "/nokinds")
      local c2, bare, e2 = keel("dump " .. shell_quote(cooked) .. " --kinds " .. shell_quote(dir .. "/nokinds"))
      rmrf(dir)
      assert.are.equal(0, c1, e1)
      assert.are.equal(0, c2, e2)
      assert.are.equal(slurp(SCENES .. "/demo.yaml"), bare)
    end)

    it("refuses to cook a scene with unknown kinds (exit 1)", function()
      local dir = tmpdir()
      local code, _, err = keel("cook " .. shell_quote(SCENES .. "/unknown_kind.yaml") .. " -o "
        .. shell_quote(dir .. "/u.keelc"))
      local made = file_exists(dir .. "/u.keelc")
      rmrf(dir)
      assert.are.equal(1, code)
      assert.truthy(err:find("mod:winch", 1, true), err)
      assert.is_false(made)
    end)

    it("refuses a damaged cooked file (exit 1)", function()
      local dir = tmpdir()
      local cooked = dir .. "/demo.keelc"
      assert.are.equal(0, (keel("cook " .. shell_quote(SCENES .. "/demo.yaml") .. " -o " .. shell_quote(cooked))))
      local data = slurp(cooked)
      spit(cooked, data:sub(1, #data // 2))
      local code, out = keel("dump " .. shell_quote(cooked))
      rmrf(dir)
      assert.are.equal(1, code)
      assert.are.equal("", out)
    end)

    it("keel cook and keel dump round-trip to the canonical YAML; editor_only dropped by cooking", function()
      local kd = dir .. "/kinds"
      os.execute("mkdir -p " .. shell_quote(kd))
      spit(kd .. "/ed.lua", 'local keel = require "keel"\nkeel.kind{ key = "cli:gizmo", editor_only = true }\n')
      local src = dir .. "/s.yaml"
      local w = assert(keel_api.load(ROOT .. "/tests/fixtures/good_design_example.yaml"))
      local canonical = w:dump()
      spit(src, canonical)
      local cooked = dir .. "/s.keelc"
      assert.are.equal(0, (keel("cook " .. shell_quote(src) .. " -o " .. shell_quote(cooked))))
      assert.are.equal("KEELCOOK", slurp(cooked):sub(1, 8))
      local code, out = keel("dump " .. shell_quote(cooked))
      assert.are.equal(0, code)
      assert.are.equal(canonical, out)
      local ed = dir .. "/ed.yaml"
      spit(ed, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. comp_text("cli:gizmo", 1, 0))))
      assert.are.equal(0, (keel("--kinds " .. shell_quote(kd) .. " cook " .. shell_quote(ed) .. " -o " .. shell_quote(cooked))))
      code, out = keel("--kinds " .. shell_quote(kd) .. " dump " .. shell_quote(cooked))
      assert.are.equal(0, code)
      assert.falsy(out:find("cli:gizmo", 1, true))
      assert.truthy(out:find("core:transform", 1, true))
    end)

    it("keel cook fails on unknown kinds; a damaged cooked file is refused", function()
      local cooked = dir .. "/u.keelc"
      assert.are.equal(1, (keel("cook " .. shell_quote(ROOT .. "/scenes/unknown_kind.yaml") .. " -o " .. shell_quote(cooked))))
      local src = dir .. "/s.yaml"
      spit(src, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0))))
      assert.are.equal(0, (keel("cook " .. shell_quote(src) .. " -o " .. shell_quote(cooked))))
      local bytes = slurp(cooked)
      spit(cooked, bytes:sub(1, #bytes // 2))
      assert.are.equal(1, (keel("dump " .. shell_quote(cooked))))
    end)

    it("keel cook fails on a missing asset; a cooked file with one altered byte is refused", function()
      local src = dir .. "/s.yaml"
      spit(dir .. "/assets.yaml", "assets: []\n")
      spit(src, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. comp_text("core:mesh_renderer", 1, 0, "          mesh: " .. U2))))
      assert.are.equal(1, (keel("cook --assets " .. shell_quote(dir .. "/assets.yaml") .. " " .. shell_quote(src) .. " -o " .. shell_quote(dir .. "/x.keelc"))))
      spit(src, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0, "          position: [1, 2, 3]"))))
      local cooked = dir .. "/s.keelc"
      assert.are.equal(0, (keel("cook " .. shell_quote(src) .. " -o " .. shell_quote(cooked))))
      local bytes = slurp(cooked)
      local at = #bytes // 2
      spit(cooked, bytes:sub(1, at - 1) .. string.char((bytes:byte(at) + 1) % 256) .. bytes:sub(at + 1))
      local code, out = keel("dump " .. shell_quote(cooked))
      assert.are.equal(1, code)
      assert.falsy(out and out:find("entities:", 1, true))
    end)

    it("keel cook refuses a component written by a newer version, and says so", function()
      local src = dir .. "/newer.yaml"
      spit(src, doc(entity_text(U1, "E", comp_text("core:transform", 9, 0))))
      local code, out, err = keel("cook " .. shell_quote(src) .. " -o " .. shell_quote(dir .. "/n.keelc"))
      assert.are.equal(1, code)
      assert.truthy(((out or "") .. err):find("core:transform is written in version 9, newer than the declared 1", 1, true), err)
    end)

    it("cook then dump gives the canonical YAML; the cooked file starts with KEELCOOK", function()
      local scene = shell_quote(SCENES .. "/demo.yaml")
      local code, out, err = keel("cook " .. scene .. " -o demo.keelc", nil, dir)
      assert.are.equal(0, code, out .. err)
      local bin = slurp(dir .. "/demo.keelc")
      assert.are.equal("KEELCOOK", bin:sub(1, 8))
      local dcode, yaml = keel("dump demo.keelc", nil, dir)
      assert.are.equal(0, dcode)
      assert.are.equal(slurp(SCENES .. "/demo.yaml"), yaml)
      local w = assert(keel_api.load(dir .. "/demo.keelc"))
      assert.are.equal(yaml, w:dump())
    end)

    it("dump refuses truncated or altered cooked files with exit 1", function()
      assert.are.equal(0, (keel("cook " .. shell_quote(SCENES .. "/demo.yaml") .. " -o d.keelc", nil, dir)))
      local bin = slurp(dir .. "/d.keelc")
      spit(dir .. "/t.keelc", bin:sub(1, 100))
      local k = #bin // 2
      spit(dir .. "/f.keelc", bin:sub(1, k - 1) .. string.char(bin:byte(k) ~ 1) .. bin:sub(k + 1))
      spit(dir .. "/h.keelc", bin:sub(1, 8))
      for _, f in ipairs { "t.keelc", "f.keelc", "h.keelc" } do
        local code, out = keel("dump " .. f, nil, dir)
        assert.are.equal(1, code, f)
        assert.are.equal("", out)
        local w, err = keel_api.load(dir .. "/" .. f)
        assert.is_nil(w)
        assert.are.equal("ParseError", err.code)
      end
    end)

    it("cook refuses unknown kinds and missing assets (exit 1, no output file)", function()
      local code = keel("cook " .. shell_quote(SCENES .. "/unknown_kind.yaml") .. " -o u.keelc", nil, dir)
      assert.are.equal(1, code)
      assert.is_false(file_exists(dir .. "/u.keelc"))
      local src = slurp(SCENES .. "/demo.yaml")
      local asset = src:match("clip: (%x+%-[%x-]+)")
      assert.truthy(asset)
      local at = src:find(asset, 1, true)
      spit(dir .. "/ma.yaml", src:sub(1, at - 1) .. "0a55e700-0000-4000-8000-0000000000ff" .. src:sub(at + #asset))
      os.execute("cp " .. shell_quote(SCENES .. "/assets.yaml") .. " " .. shell_quote(dir .. "/assets.yaml"))
      assert.are.equal(1, (keel("cook ma.yaml -o ma.keelc", nil, dir)))
      assert.is_false(file_exists(dir .. "/ma.keelc"))
      assert.are.equal(0, (keel("check ma.yaml", nil, dir)))
      assert.are.equal(1, (keel("check --strict ma.yaml", nil, dir)))
    end)

    it("cook drops editor_only kinds; --kinds loads kind files", function()
      os.execute("mkdir -p " .. shell_quote(dir .. "/kinds_x"))
      spit(dir .. "/kinds_x/k.lua", 'local keel = require "keel"\n' ..
        'keel.kind{ key = "ed:gizmo", editor_only = true, fields = { { "size", "float", default = 2 } } }\n')
      spit(dir .. "/ed.yaml", doc_of(ent(U1, "A", nil, comp("ed:gizmo", "{size: 3}") .. comp("core:transform", "{}"))))
      assert.are.equal(0, (keel("check ed.yaml --kinds kinds_x", nil, dir)))
      assert.are.equal(0, (keel("cook ed.yaml -o ed.keelc --kinds kinds_x", nil, dir)))
      local _, y = keel("dump ed.keelc --kinds kinds_x", nil, dir)
      assert.falsy(y:find("ed:gizmo", 1, true))
      assert.truthy(y:find("core:transform", 1, true))
      local _, kinds = keel("kinds --kinds kinds_x", nil, dir)
      assert.truthy(kinds:find("ed:gizmo", 1, true))
    end)
  end)

  describe("kinds", function()
    it("lists kinds with --json, core:transform and the demo kinds among them", function()
      local code, out, err = keel("kinds --json")
      assert.are.equal(0, code, err)
      local list = json_decode(out)
      local by = {}
      for _, k in ipairs(list) do by[k.key] = k end
      local t = assert(by["core:transform"])
      assert.are.equal("one", t.multiplicity)
      assert.is_true(t.builtin)
      assert.are.same({ "position", "rotation", "scale" }, { t.fields[1].key, t.fields[2].key, t.fields[3].key })
      assert.are.equal("vec3", t.fields[1].type)
      local sp = assert(by["game:spawner"])
      assert.are.equal("many", sp.multiplicity)
      assert.are.equal(4, sp.max)
      assert.is_false(sp.builtin)
      assert.are.same({ "core:transform" }, sp.requires)
      local keys = {}
      for _, k in ipairs(list) do keys[#keys + 1] = k.key end
      local sorted = { table.unpack(keys) }
      table.sort(sorted)
      assert.are.same(sorted, keys)
    end)

    it("lists kinds as text", function()
      local code, out = keel("kinds")
      assert.are.equal(0, code)
      assert.truthy(out:find("core:transform", 1, true))
      assert.truthy(out:find("position", 1, true))
    end)

    it("loads only the given --kinds directories", function()
      local dir = tmpdir()
      spit(dir .. "/b.lua", 'require("keel").kind{ key = "test:b", fields = { { "x", "int" } } }\n')
      spit(dir .. "/a.lua", 'require("keel").kind{ key = "test:a", fields = { { "y", "float" } } }\n')
      local code, out, err = keel("kinds --json --kinds " .. shell_quote(dir))
      rmrf(dir)
      assert.are.equal(0, code, err)
      local by = {}
      for _, k in ipairs(json_decode(out)) do by[k.key] = k end
      assert.truthy(by["test:a"])
      assert.truthy(by["test:b"])
      assert.falsy(by["game:spawner"])
    end)

    it("loads ./kinds beside the bundled kinds by default", function()
      local dir = tmpdir()
      os.execute("mkdir -p " .. shell_quote(dir .. "/kinds"))
      spit(dir .. "/kinds/local.lua", 'require("keel").kind{ key = "test:local", fields = { { "n", "int" } } }\n')
      local code, out, err = keel("kinds --json", nil, dir)
      rmrf(dir)
      assert.are.equal(0, code, err)
      local by = {}
      for _, k in ipairs(json_decode(out)) do by[k.key] = k end
      assert.truthy(by["test:local"])
      assert.truthy(by["game:spawner"])
    end)

    it("names the kind file and line of a keel.kind{} that raises an error object", function()
      local dir = tmpdir()
      spit(dir .. "/typo.lua", 'local keel = require "keel"\n\n'
        .. 'keel.kind{ key = "test:typo", fields = { { "value", "flaot" } } }\n')
      local code, _, err = keel("kinds --kinds " .. shell_quote(dir))
      rmrf(dir)
      assert.are.equal(2, code)
      assert.truthy(err:find("keel: " .. dir .. "/typo.lua:3: InvalidArgument: ", 1, true), err)
      assert.truthy(err:find("'flaot'", 1, true), err)
    end)

    it("names the kind file whose requires names an undeclared kind", function()
      local dir = tmpdir()
      spit(dir .. "/x.lua", 'local keel = require "keel"\n'
        .. 'keel.kind{ key = "test:needy", requires = { "core:transfrom" }, fields = { { "v", "float" } } }\n')
      local code, _, err = keel("kinds --kinds " .. shell_quote(dir))
      rmrf(dir)
      assert.are.equal(2, code)
      assert.are.equal(dir .. "/x.lua: error: NotFound: test:needy requires 'core:transfrom', which is not declared "
        .. "(at requires)\nkeel: the kinds could not be loaded\n", err)
    end)

    it("exits 2 when a kind file fails", function()
      local dir = tmpdir()
      spit(dir .. "/broken.lua", "error('kind file broke')\n")
      local code, _, err = keel("kinds --kinds " .. shell_quote(dir))
      rmrf(dir)
      assert.are.equal(2, code)
      assert.truthy(err:find("kind file broke", 1, true))
    end)

    it("keel kinds lists kinds; --json is machine-readable", function()
      local code, out = keel("kinds")
      assert.are.equal(0, code)
      assert.truthy(out:find("core:transform", 1, true))
      code, out = keel("kinds --json")
      assert.are.equal(0, code)
      assert.truthy(out:find('"key": *"core:transform"'))
      assert.truthy(out:find('"multiplicity": *"many"'))
      assert.truthy(out:find('"fields"'))
      for _, name in ipairs{ "display", "category", "version", "max", "requires", "rejects", "builtin",
        "type", "default", "min", "choices", "transient", "readonly", "hidden" } do
        assert.truthy(out:find('"' .. name .. '":'), name)
      end
    end)

    it("--kinds DIR loads Lua kinds at start-up", function()
      local kd = dir .. "/kinds"
      os.execute("mkdir -p " .. shell_quote(kd))
      spit(kd .. "/thing.lua", 'local keel = require "keel"\nkeel.kind{ key = "cli:thing", fields = { { "x", "int" } } }\n')
      local code, out = keel("kinds --kinds " .. shell_quote(kd))
      assert.are.equal(0, code)
      assert.truthy(out:find("cli:thing", 1, true))
    end)

    it("takes --kinds DIR more than once", function()
      for _, n in ipairs{ "one", "two" } do
        os.execute("mkdir -p " .. shell_quote(dir .. "/" .. n))
        spit(dir .. "/" .. n .. "/k.lua", 'require("keel").kind{ key = "multi:' .. n .. '" }\n')
      end
      local code, out = keel("kinds --kinds " .. shell_quote(dir .. "/one") .. " --kinds " .. shell_quote(dir .. "/two"))
      assert.are.equal(0, code)
      assert.truthy(out:find("multi:one", 1, true))
      assert.truthy(out:find("multi:two", 1, true))
    end)

    it("loads ./kinds when present", function()
      os.execute("mkdir -p " .. shell_quote(dir .. "/kinds"))
      spit(dir .. "/kinds/local.lua", 'local keel = require "keel"\nkeel.kind{ key = "cwd:local" }\n')
      local code, out = keel("kinds", nil, dir)
      assert.are.equal(0, code)
      assert.truthy(out:find("cwd:local", 1, true))
      assert.truthy(out:find("game:health", 1, true))
    end)

    it("--kinds DIR replaces the default kinds directories and is repeatable", function()
      for _, d in ipairs { "k1", "k2" } do
        os.execute("mkdir -p " .. shell_quote(dir .. "/" .. d))
        spit(dir .. "/" .. d .. "/k.lua", 'local keel = require "keel"\nkeel.kind{ key = "cx' .. d .. ':thing", fields = {} }\n')
      end
      local code, out = keel("kinds --kinds k1 --kinds k2", nil, dir)
      assert.are.equal(0, code)
      assert.truthy(out:find("cxk1:thing", 1, true))
      assert.truthy(out:find("cxk2:thing", 1, true))
      assert.truthy(out:find("core:transform", 1, true))
      os.execute("mkdir -p " .. shell_quote(dir .. "/kinds"))
      spit(dir .. "/kinds/k.lua", 'local keel = require "keel"\nkeel.kind{ key = "cxlocal:thing", fields = {} }\n')
      local _, out2 = keel("kinds", nil, dir)
      assert.truthy(out2:find("cxlocal:thing", 1, true)) -- ./kinds when present
    end)

    it("kinds --json lists every kind with the documented keys", function()
      local code, out = keel("kinds --json")
      assert.are.equal(0, code)
      assert.are.equal("[", out:match("^%s*(.)"))
      for _, key in ipairs { '"key"', '"display"', '"category"', '"version"', '"multiplicity"', '"max"',
        '"requires"', '"rejects"', '"builtin"', '"fields"', '"type"', '"default"', '"min"', '"choices"',
        '"transient"', '"readonly"', '"hidden"' } do
        assert.truthy(out:find(key, 1, true), key)
      end
      assert.truthy(out:find('"core:audio_source"', 1, true))
      local code2, text = keel("kinds")
      assert.are.equal(0, code2)
      assert.truthy(text:find("core:transform", 1, true))
    end)

    it("a broken kind file makes verbs exit 2", function()
      os.execute("mkdir -p " .. shell_quote(dir .. "/kb"))
      spit(dir .. "/kb/b.lua", 'local keel = require "keel"\nkeel.kind{ key = "cxb:bad", fields = { { "x", "flaot" } } }\n')
      local code, _, err = keel("kinds --kinds kb", nil, dir)
      assert.are.equal(2, code)
      assert.truthy(err:find("flaot", 1, true))
    end)
  end)

  describe("repl", function()
    it("reads piped input and prints an entity readably", function()
      local code, out, err = keel("repl", table.concat({
        'e = world:spawn{ name = "Hero", components = { { "core:transform", position = { 1, 2, 3 } } } }',
        "e",
        "=1 + 1",
        "for i = 1, 2 do",
        "  print('line', i)",
        "end",
        "world",
        "",
      }, "\n"))
      assert.are.equal(0, code, err)
      assert.truthy(out:find('Entity "Hero" %x+%-%x+%-%x+%-%x+%-%x+'), out)
      assert.truthy(out:find("core:transform[0]", 1, true), out)
      assert.truthy(out:find("position%s*= {1, 2, 3}"), out)
      assert.truthy(out:find("\n2\n", 1, true), out)
      assert.truthy(out:find("line\t1\nline\t2\n", 1, true), out)
      assert.truthy(out:find('World "untitled"', 1, true), out)
      assert.falsy(out:find("> ", 1, true)) -- no prompt noise off a terminal
    end)

    it("prints a keel error object as Code: message and goes on (exit 1 once input is done)", function()
      local code, out, err = keel("repl", 'world:spawn("A"):add("core:world_settings")\nprint("after")\n')
      assert.are.equal(1, code)
      assert.truthy(err:find("ProtectedEntity: ", 1, true) or err:find("InvalidOperation: ", 1, true), err)
      assert.truthy(out:find("after", 1, true))
    end)

    it("binds world to the scene given", function()
      local code, out, err = keel("repl " .. shell_quote(SCENES .. "/demo.yaml"), "world.name\nworld:count() > 0\n")
      assert.are.equal(0, code, err)
      assert.truthy(out:find("Demo\ntrue\n", 1, true), out)
    end)

    it("completes names for the tab key", function()
      local code, out, err = keel("repl", table.concat({
        'c = require("keel.repl").complete',
        'table.concat(c("world:sp"), " ")',
        'table.concat(c("keel.pe"), " ")',
        '#c("nosuchname")',
        "",
      }, "\n"))
      assert.are.equal(0, code, err)
      assert.are.equal("world:spawn\nkeel.persist\n0\n", out)
    end)

    it("re-runs changed kind files on reload()", function()
      local dir = tmpdir()
      local file = dir .. "/k.lua"
      spit(file, 'require("keel").kind{ key = "test:hot", fields = { { "a", "int", default = 1 } } }\n')
      local code, out, err = keel("repl --kinds " .. shell_quote(dir), table.concat({
        'e = world:spawn{ name = "H", components = { "test:hot" } }',
        'print(e:get("test:hot").a)',
        'local f = io.open(' .. string.format("%q", file) .. ', "w") '
          .. 'f:write(\'require("keel").kind{ key = "test:hot", fields = { { "a", "int", default = 1 }, '
          .. '{ "b", "int", default = 7 } } }\\n\') f:close()',
        "#reload()",
        'print(e:get("test:hot").a, e:get("test:hot").b)',
        "",
      }, "\n"))
      rmrf(dir)
      assert.are.equal(0, code, err)
      assert.truthy(out:find("1\n1\n1\t7\n", 1, true), out .. err)
    end)

    it("keel repl [SCENE] binds the scene to `world`; bare keel binds an empty world", function()
      local script = dir .. "/in.txt"
      spit(script, "print('name=' .. world.name)\nprint('count=' .. world:count())\n")
      local code, out = keel("repl " .. shell_quote(ROOT .. "/tests/fixtures/good_design_example.yaml"), slurp(script))
      assert.are.equal(0, code)
      assert.truthy(out:find("name=MainLevel", 1, true), out)
      code, out = keel("", slurp(script))
      assert.are.equal(0, code)
      assert.truthy(out:find("count=0", 1, true), out)
    end)

    it("reload() in the REPL re-runs the kind files that changed (hot reload)", function()
      local kd = dir .. "/kinds"
      os.execute("mkdir -p " .. shell_quote(kd))
      local file = kd .. "/hot.lua"
      spit(file, 'require("keel").kind{ key = "cli:hot", fields = { { "a", "int" } } }\n')
      local input = dir .. "/in.txt"
      spit(input, table.concat({
        'f = io.open(' .. ("%q"):format(file) .. ', "w")',
        'f:write(\'require("keel").kind{ key = "cli:hot", fields = { { "a", "int" }, { "b", "int" } } }\\n\')',
        'f:close()',
        'os.execute("touch -d \'+5 seconds\' ' .. file .. '")',
        'reload()',
        'print("fields=" .. #require("keel").kind_info("cli:hot").fields)',
      }, "\n") .. "\n")
      local code, out, err = keel("repl --kinds " .. shell_quote(kd), slurp(input))
      assert.are.equal(0, code, err)
      assert.truthy(out:find("fields=2", 1, true), out .. err)
    end)

    it("the REPL binds an empty world to `world`", function()
      local code, out = keel("", "print(world:count(), world.root ~= nil)\n", dir)
      assert.are.equal(0, code)
      assert.truthy(out:find("0\ttrue", 1, true), out)
    end)

    it("repl SCENE loads the scene as world", function()
      local code, out = keel("repl " .. shell_quote(SCENES .. "/unknown_kind.yaml"), "print(world.name)\n", dir)
      assert.are.equal(0, code)
      assert.truthy(out:find("Harbour With A Mod", 1, true))
    end)
  end)

  describe("repl fixes", function()
    it("exits 1 after piped input in which a line failed, 0 when none did", function()
      local code, out, err = keel("", 'x = 1\nassert(x == 2, "x is not 2")\nprint("after")\n')
      assert.are.equal(1, code)
      assert.are.equal("after\n", out)
      assert.truthy(err:find("x is not 2", 1, true), err)
      code, out = keel("", 'for i = 1,\n')
      assert.are.equal(1, code) -- a syntax error is a failed line too
      code, out, err = keel("", 'x = 1\nprint(x)\n')
      assert.are.equal(0, code, err)
      assert.are.equal("1\n", out)
    end)

    it("says 1 entity, not 1 entities", function()
      local code, out, err = keel("repl", 'world:spawn("A")\nworld\nworld:spawn("B")\nworld\n')
      assert.are.equal(0, code, err)
      assert.truthy(out:find(": 1 entity, revision", 1, true), out)
      assert.truthy(out:find(": 2 entities, revision", 1, true), out)
    end)

    it("completes only methods after ':', properties too after '.'", function()
      local code, out, err = keel("repl " .. shell_quote(SCENES .. "/demo.yaml"), table.concat({
        'c = require("keel.repl").complete',
        'p = world:find("Player")',
        'table.concat(c("p:"), " ")',
        'table.concat(c("p.n"), " ")',
        'table.concat(c("keel:l"), " ")',
        "",
      }, "\n"))
      assert.are.equal(0, code, err)
      local methods, rest = out:match("^([^\n]*)\n(.*)$")
      for _, m in ipairs({ "p:add", "p:get", "p:destroy", "p:children" }) do
        assert.truthy((" " .. methods .. " "):find(" " .. m .. " ", 1, true), methods)
      end
      for _, prop in ipairs({ "p:name", "p:uuid", "p:enabled", "p:parent", "p:world" }) do
        assert.falsy((" " .. methods .. " "):find(" " .. prop .. " ", 1, true), methods)
      end
      assert.are.equal("p.name\nkeel:load\n", rest)
    end)

    it("has help()", function()
      local code, out, err = keel("repl", "help()\n")
      assert.are.equal(0, code, err)
      assert.truthy(out:find("^world%s+the World: world:spawn"), out)
      assert.truthy(out:find("reload()", 1, true), out)
    end)

    it("completes kind keys inside a string", function()
      local code, out, err = keel("repl", table.concat({
        'c = require("keel.repl").complete',
        'table.concat(c("game:h", \'p:get("\'), " ")',
        'table.concat(c("core:tr", "x = \'"), " ")',
        '#c("game:h", "p:get(")', -- not after a quote: a name, and there is no global game
        "",
      }, "\n"))
      assert.are.equal(0, code, err)
      assert.are.equal("game:health\ncore:transform\n0\n", out)
    end)

    it("shows an unknown component's kept body", function()
      local code, out, err = keel("repl " .. shell_quote(SCENES .. "/unknown_kind.yaml"),
        'world:find("Crane")\nworld:find("Crane"):get("mod:winch", 2)\n')
      assert.are.equal(0, code, err)
      assert.truthy(out:find("  mod:winch[0]  (not loaded: kind not declared, body kept)\n"
        .. "    motor       = {reversible = false, torque = 1200}\n    rope_length = 30\n", 1, true), out)
      assert.truthy(out:find('mod:winch[2]  (not loaded: kind not declared, body kept) on Entity "Crane" '
        .. "0c0c0c0c-0000-4000-8000-000000000002\n"
        .. '  label       = "aux: backup"\n  rope_length = 8\n', 1, true), out)
    end)

    it("lists an iterator's rows instead of printing a generic-for triple", function()
      local code, out, err = keel("repl " .. shell_quote(SCENES .. "/demo.yaml"),
        'world:each("game:health")\nworld:entities()\nworld:each("core:camera")\n')
      assert.are.equal(0, code, err)
      assert.truthy(out:find('^keel%.Query: 2 rows %(an iterator: use it in a for loop%)\n'
        .. '  <Entity "Player" [%x%-]+>  <game:health%[0%]>\n  <Entity "Chaser" [%x%-]+>  <game:health%[0%]>\n'
        .. 'keel%.Query: 9 rows'), out)
      assert.truthy(out:find('keel.Query: 1 row (an iterator: use it in a for loop)\n  <Entity "Camera"', 1, true), out)
      assert.falsy(out:find("function: ", 1, true), out)
    end)

    it("prints an error object's diagnostics with file, line, column and path", function()
      local dir = tmpdir()
      spit(dir .. "/bad.yaml", "keel: 1\nscene: {uuid: 550e8400-e29b-41d4-a716-446655440000, name: [S}\n")
      local code, out, err = keel("repl", 'select(2, keel.load("' .. dir .. '/bad.yaml"))\n'
        .. 'select(2, keel.load("' .. dir .. '/none.yaml"))\n')
      rmrf(dir)
      assert.are.equal(0, code, err)
      local first, rest = out:match("^(ParseError: [^\n]*)\n  ([^\n]*)\n(.*)$")
      assert.truthy(first, out)
      assert.truthy(rest:find("^" .. dir:gsub("%p", "%%%0") .. "/bad%.yaml:2:%d+: error: ParseError: "), out)
      -- nothing to add to an IOError's message: one line
      assert.are.equal("IOError: cannot open " .. dir .. "/none.yaml: No such file or directory\n",
        out:match("\n(IOError:.*)$"))
    end)

    it("says an asset manifest is not a scene", function()
      local code, out, err = keel("run " .. shell_quote(SCENES .. "/assets.yaml"))
      assert.are.equal(1, code)
      assert.are.equal("", out)
      assert.are.equal("keel: " .. SCENES .. "/assets.yaml is an asset manifest, not a scene "
        .. "(`keel check` validates it; it is used by the scenes beside it)\n", err)
    end)

    it("stops keel run after the current frame on SIGINT, prints the summary, and dies of the signal", function()
      local dir = tmpdir()
      -- the kind's 10th update sends keel (the process reading /proc/self) a
      -- SIGINT; through popen, as system() ignores SIGINT while it waits
      os.execute("mkdir " .. shell_quote(dir .. "/kinds"))
      spit(dir .. "/kinds/sigint.lua", 'local n = 0\n'
        .. 'local pid = io.open("/proc/self/stat"):read("l"):match("^(%d+)")\n'
        .. 'require("keel").kind{ key = "test:sigint", fields = { { "x", "int" } },\n'
        .. '  update = function() n = n + 1; if n == 10 then io.popen("kill -INT " .. pid):close() end end }\n')
      spit(dir .. "/s.yaml", "keel: 1\nscene: {uuid: 550e8400-e29b-41d4-a716-446655440000, name: S}\n"
        .. "entities:\n- uuid: 550e8400-e29b-41d4-a716-446655440001\n  name: A\n"
        .. "  components:\n  - kind: test:sigint\n    version: 1\n    body: {x: 1}\n")
      os.execute("cd " .. shell_quote(dir) .. " && (timeout 120 " .. H.NO_PRELOAD .. shell_quote(KEEL)
        .. " run s.yaml --frames 1000000 --save out.yaml >o.txt 2>e.txt; echo $? >rc.txt)")
      local out, err, rc = slurp(dir .. "/o.txt"), slurp(dir .. "/e.txt"), slurp(dir .. "/rc.txt")
      local saved = file_exists(dir .. "/out.yaml")
      rmrf(dir)
      assert.are.equal("130\n", rc, out .. err)
      assert.truthy(out:find("^s%.yaml: interrupted after 1%d of 1000000 frames, 1 entity, [%d.]+ ms per frame, 0 errors\n$"),
        out .. err)
      assert.are.equal("keel: run: interrupted: out.yaml not written\n", err)
      assert.falsy(saved)
    end)

    it("warns when two kind files declare the same key, and the later one wins", function()
      local dir = tmpdir()
      os.execute("mkdir " .. shell_quote(dir .. "/kinds"))
      spit(dir .. "/kinds/a.lua", 'require("keel").kind{ key = "test:twice", fields = { { "a", "int" } } }\n')
      spit(dir .. "/kinds/b.lua", 'require("keel").kind{ key = "test:twice", fields = { { "b", "int" } } }\n')
      local code, out, err = keel("kinds --kinds " .. shell_quote(dir .. "/kinds"))
      rmrf(dir)
      assert.are.equal(0, code, err)
      assert.truthy(err:find("b.lua: warning: test:twice was already declared by [^\n]*a.lua; "
        .. "this declaration replaces it\n", 1), err)
      assert.truthy(out:find("test:twice[^\n]*\n  b ", 1), out)
    end)

    it("stops w:run in a script after the current frame on SIGINT, blaming no callback", function()
      local dir = tmpdir()
      os.execute("mkdir " .. shell_quote(dir .. "/kinds"))
      spit(dir .. "/kinds/sigint.lua", 'local n = 0\n'
        .. 'local pid = io.open("/proc/self/stat"):read("l"):match("^(%d+)")\n'
        .. 'require("keel").kind{ key = "test:sigint", fields = { { "x", "int" } },\n'
        .. '  update = function(self) n = n + 1; self.x = n\n'
        .. '    if n == 10 then io.popen("kill -INT " .. pid):close() end end }\n')
      spit(dir .. "/s.lua", 'local keel = require "keel"\n'
        .. 'local w = keel.world("S")\n'
        .. 'local c = w:spawn("A"):add("test:sigint")\n'
        .. 'local ok, err = pcall(w.run, w, 1000000, 1 / 60)\n'
        .. 'print(ok, tostring(err):match("interrupted!") ~= nil, #w:errors(), c.x >= 10 and c.x < 20)\n')
      os.execute("cd " .. shell_quote(dir) .. " && (timeout 120 " .. H.NO_PRELOAD .. shell_quote(KEEL)
        .. " s.lua >o.txt 2>e.txt; echo $? >rc.txt)")
      local out, err, rc = slurp(dir .. "/o.txt"), slurp(dir .. "/e.txt"), slurp(dir .. "/rc.txt")
      rmrf(dir)
      assert.are.equal("0\n", rc, out .. err)
      assert.are.equal("false\ttrue\t0\ttrue\n", out, err)
    end)

    it("names the file and line when reload() meets a kind error", function()
      local dir = tmpdir()
      local file = dir .. "/k.lua"
      spit(file, 'require("keel").kind{ key = "test:hot2", fields = { { "a", "int" } } }\n')
      local code, out, err = keel("repl --kinds " .. shell_quote(dir), table.concat({
        'local f = io.open(' .. string.format("%q", file) .. ', "w") '
          .. 'f:write(\'local keel = require("keel")\\nkeel.kind{ key = "test:hot2", '
          .. 'fields = { { "a", "itn" } } }\\n\') f:close()',
        "#reload()",
        'print("after")',
        "",
      }, "\n"))
      rmrf(dir)
      assert.are.equal(0, code, err)
      assert.truthy(err:find("reload: " .. file .. ":2: InvalidArgument: ", 1, true), err)
      assert.truthy(out:find("0\nafter\n", 1, true), out)
    end)

    it("drops the line on ctrl-c at the prompt and goes on (on a terminal)", function()
      if not os.execute("command -v script >/dev/null 2>&1") then
        pending("needs script(1) for a terminal")
        return
      end
      local home = tmpdir()
      -- script(1) gives keel a terminal; the pauses let each prompt come up
      -- before the next keys, as a person types. `exec`: script runs the
      -- command through $SHELL, and a shell such as dash would stay in keel's
      -- process group, take the terminal's SIGINT itself and die of it.
      local cmd = "(sleep 2; printf 'x = 1 +'; sleep 1; printf '\\003'; sleep 1; "
        .. "printf 'print(\"alive\", x)\\n'; sleep 1; printf 'if true then\\n'; sleep 1; printf '\\003'; "
        .. "sleep 1; printf 'print(\"still\")\\n'; sleep 1; printf '\\004') | " .. H.NO_PRELOAD .. "HOME=" .. shell_quote(home)
        .. " script -qfec " .. shell_quote("exec " .. shell_quote(KEEL)) .. " /dev/null"
      local p = io.popen(cmd .. "; echo \"rc=$?\"")
      local out = p:read("a")
      p:close()
      rmrf(home)
      assert.truthy(out:find("help() to start", 1, true), out) -- the banner names help()
      assert.truthy(out:find("alive\tnil", 1, true), out)
      assert.truthy(out:find("still", 1, true), out)
      assert.truthy(out:find("rc=0", 1, true), out)
    end)
  end)

  describe("scripts", function()
    it("runs SCRIPT.lua with arg and ... set", function()
      local dir = tmpdir()
      local script = dir .. "/s.lua"
      spit(script, "#!/usr/bin/env keel\nlocal a, b = ...\nprint(arg[0], arg[1], arg[2], #arg, a, b)\n"
        .. 'print(type(require("keel").world))\n')
      local code, out, err = keel(shell_quote(script) .. " a b")
      rmrf(dir)
      assert.are.equal(0, code, err)
      assert.are.equal(script .. "\ta\tb\t2\ta\tb\nfunction\n", out)
    end)

    it("exits 1 when the script raises, with the message on stderr", function()
      local dir = tmpdir()
      spit(dir .. "/e.lua", "error('boom')\n")
      local code, _, err = keel(shell_quote(dir .. "/e.lua"))
      rmrf(dir)
      assert.are.equal(1, code)
      assert.truthy(err:find("boom", 1, true))
    end)

    it("puts the script's file and line before an error object it raised", function()
      local dir = tmpdir()
      spit(dir .. "/e.lua", 'local keel = require "keel"\nlocal w = keel.world("x")\n\n'
        .. 'w:spawn{ name = "A", components = { { "core:transform", scale = { 1, 2 } } } }\n')
      spit(dir .. "/h.lua", 'local history = require "keel.history"\nhistory.new(nil)\n')
      local code, _, err = keel(shell_quote(dir .. "/e.lua"))
      assert.are.equal(1, code)
      assert.are.equal("keel: " .. dir .. "/e.lua:4: InvalidArgument: vec3 'scale' needs 3 numbers, got 2\n", err)
      -- raised inside keel's own Lua modules: still the user's line
      code, _, err = keel(shell_quote(dir .. "/h.lua"))
      rmrf(dir)
      assert.are.equal(1, code)
      assert.truthy(err:find("^keel: " .. dir:gsub("%p", "%%%0") .. "/h%.lua:2: InvalidArgument: "), err)
      code, _, err = keel("", "x = 1\nfor i = 1, 2 do\n  world:spawn{ name = 3 }\nend\n")
      assert.are.equal(1, code)
      assert.are.equal("keel: stdin:2: InvalidArgument: spawn: name must be a string\n", err)
    end)

    it("says a scene given as a script is a scene, and a mistyped verb is no verb (exit 2)", function()
      local code, out, err = keel(shell_quote(SCENES .. "/demo.yaml"))
      assert.are.equal(2, code)
      assert.are.equal("", out)
      local s = SCENES .. "/demo.yaml"
      assert.are.equal("keel: " .. s .. " is a scene, not a Lua script: `keel run " .. s .. "` plays it, `keel repl "
        .. s .. "` opens it\n", err)
      code, _, err = keel("chek x.yaml")
      assert.are.equal(2, code)
      assert.truthy(err:find("^keel: no verb or script named 'chek' %(verbs: repl run check fmt cook dump kinds serve mcp merge uuid new%)\n"), err)
      -- a script from stdin, and one without an extension, still run
      code, out = keel("-", "print('from stdin')\n")
      assert.are.equal(0, code)
      assert.are.equal("from stdin\n", out)
      local dir = tmpdir()
      spit(dir .. "/tool", "print('no ext')\n")
      code, out = keel("tool", nil, dir)
      rmrf(dir)
      assert.are.equal(0, code)
      assert.are.equal("no ext\n", out)
    end)

    it("exits 2 when the script does not exist", function()
      local code, _, err = keel("/nonexistent/script.lua")
      assert.are.equal(2, code)
      assert.truthy(err:find("cannot open", 1, true), err)
    end)

    it("runs a Lua script with arg set and require 'keel' available", function()
      local script = dir .. "/s.lua"
      spit(script, 'local keel = require "keel"\nprint(arg[1], arg[2], keel.world("X").name)\n')
      local code, out = keel(shell_quote(script) .. " one two")
      assert.are.equal(0, code)
      assert.are.equal("one\ttwo\tX\n", out)
    end)

    it("runs a script like lua: ... holds the arguments, an error exits 1 with the message, os.exit keeps its code", function()
      local script = dir .. "/v.lua"
      spit(script, 'print(select("#", ...), ...)\n')
      local code, out = keel(shell_quote(script) .. " a b")
      assert.are.equal(0, code)
      assert.are.equal("2\ta\tb\n", out)
      spit(script, 'local keel = require "keel"\nerror(select(2, keel.parse("{")))\n')
      local code2, _, err = keel(shell_quote(script))
      assert.are.equal(1, code2)
      assert.truthy(err:find("ParseError: ", 1, true))
      spit(script, "os.exit(3)\n")
      assert.are.equal(3, (keel(shell_quote(script))))
    end)

    it("runs a script like lua, with arg and require 'keel'", function()
      spit(dir .. "/s.lua", 'local keel = require "keel"\nprint(arg[0], arg[1], arg[2], select("#", ...), type(keel.world))\n')
      local code, out = keel("s.lua x y", nil, dir)
      assert.are.equal(0, code)
      assert.are.equal("s.lua\tx\ty\t2\tfunction\n", out)
    end)

    it("a script that raises a keel error exits 1 with FILE:LINE: Code: message", function()
      spit(dir .. "/e.lua", 'local keel = require "keel"\nlocal w = keel.world("x")\nlocal e = w:spawn("a")\ne:add("core:transform").scale = {1, 2}\n')
      local code, _, err = keel("e.lua", nil, dir)
      assert.are.equal(1, code)
      assert.truthy(err:find("e.lua:4: InvalidArgument:", 1, true), err)
    end)
  end)
end)
