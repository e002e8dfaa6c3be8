-- verbs_lua_kinds_spec.lua — every verb of the `keel` program that loads a scene runs the game's
-- own Lua kinds: a versioned kind's migrate and a validating kind's validate, in check, cook, fmt,
-- dump, run, the REPL and a cooked load, with the same code as keel.load.

local H = require "helper"
local q, spit, slurp = H.shell_quote, H.spit, H.slurp

local KEEL = H.find_keel()
-- kinds/v.lua: game:v at version 2; version 1 stored `old`, migrate[2] renames it to `x`; validate
-- refuses x > 5. lax/v.lua: the same kind without validate (a cooked file made by another build).
local KIND = [[
local keel = require "keel"
keel.kind{
  key = "game:v", version = 2, multiplicity = "one",
  fields = { { "x", "int", default = 0 } },
  migrate = { [2] = function(b) return { x = b.old or 0 } end },
  %s
}
]]
local VALIDATE = [[validate = function(self, field) if self.x > 5 then return false, "x too big" end return true end,]]

local function scene(body_line)
  return H.HEAD .. "entities:\n  - uuid: " .. H.U1 .. "\n    name: a\n    components:\n"
    .. "      - {kind: game:v, " .. body_line .. "}\n"
end
local V1 = scene("version: 1, body: {old: 3}")       -- migrates to x: 3
local BAD = scene("version: 2, body: {x: 9}")        -- validate refuses it
local V1_BAD = scene("version: 1, body: {old: 7}")   -- migrates to x: 7, then refused

local dir
local function run(args) return H.run_keel(KEEL, args, nil, dir) end

-- The refusal every verb prints: at the body field, where the file says it, with validate's message.
local function refused(code, err, file, line)
  assert.are.equal(1, code, err)
  assert.matches(file .. ":" .. line .. ":%d+: error: InvalidArgument: game:v.x: x too big", err)
  assert.matches("entities%[0%]%.components%[0%]%.body%.x", err)
end

describe("the keel program's verbs with a versioned, validating Lua kind", function()
  setup(function()
    dir = H.tmpdir()
    assert(os.execute("mkdir -p " .. q(dir .. "/kinds") .. " " .. q(dir .. "/lax")))
    spit(dir .. "/kinds/v.lua", KIND:format(VALIDATE))
    spit(dir .. "/lax/v.lua", KIND:format(""))
    spit(dir .. "/v1.yaml", V1)
    spit(dir .. "/bad.yaml", BAD)
    spit(dir .. "/v1bad.yaml", V1_BAD)
    -- a cooked file holding what validate refuses, written with the lax kinds
    local code, _, err = run("cook --kinds lax bad.yaml -o bad.keelc")
    assert.are.equal(0, code, err)
  end)
  teardown(function() H.rmrf(dir) end)

  it("check runs migrate and validate", function()
    local code, _, err = run("check v1.yaml")
    assert.are.equal(0, code, err)
    code, _, err = run("check bad.yaml")
    refused(code, err, "bad.yaml", 9)
    code, _, err = run("check v1bad.yaml")
    refused(code, err, "v1bad.yaml", 9)
  end)

  it("cook refuses what keel.load refuses, and cooks the migrated body", function()
    local code, _, err = run("cook bad.yaml -o out.keelc")
    refused(code, err, "bad.yaml", 9)
    assert.is_nil(io.open(dir .. "/out.keelc"))
    code, _, err = run("cook v1.yaml -o good.keelc")
    assert.are.equal(0, code, err)
    local out
    code, out, err = run("dump good.keelc")
    assert.are.equal(0, code, err)
    assert.matches("version: 2\n%s+slot: 0\n%s+body:\n%s+x: 3\n", out)
  end)

  it("a cooked load runs validate as the YAML load does: dump, check, run", function()
    for _, verb in ipairs { "dump bad.keelc", "check bad.keelc", "run bad.keelc --frames 1" } do
      local code, _, err = run(verb)
      assert.are.equal(1, code, verb .. ": " .. err)
      assert.matches("bad%.keelc: error: InvalidArgument: game:v%.x: x too big %(at entities%[0%]%.components%[0%]%.body%.x%)", err)
    end
  end)

  it("merge checks each side and its result through the same kinds", function()
    spit(dir .. "/ours.yaml", (V1:gsub("name: a", "name: b")))
    local code, _, err = run("merge v1.yaml ours.yaml bad.yaml -o out.yaml")
    assert.are.equal(2, code, err)
    assert.matches("bad%.yaml:9:%d+: error: InvalidArgument: game:v%.x: x too big", err)
    assert.is_nil(io.open(dir .. "/out.yaml"))
    code, _, err = run("merge v1.yaml ours.yaml v1.yaml -o out.yaml")
    assert.are.equal(0, code, err)
    assert.matches("name: b\n.-version: 2\n%s+slot: 0\n%s+body:\n%s+x: 3\n", slurp(dir .. "/out.yaml"))
  end)

  it("fmt writes the migrated body, and refuses a value validate refuses", function()
    spit(dir .. "/f.yaml", V1)
    local code, _, err = run("fmt f.yaml")
    assert.are.equal(0, code, err)
    assert.matches("version: 2\n%s+slot: 0\n%s+body:\n%s+x: 3\n", slurp(dir .. "/f.yaml"))
    spit(dir .. "/g.yaml", BAD)
    code, _, err = run("fmt g.yaml")
    refused(code, err, "g.yaml", 9)
    assert.are.equal(BAD, slurp(dir .. "/g.yaml")) -- left as it was
  end)

  it("run, serve, mcp and the REPL load through the same Lua kinds", function()
    local code, _, err = run("run v1.yaml --frames 2")
    assert.are.equal(0, code, err)
    code, _, err = run("run bad.yaml --frames 2")
    refused(code, err, "bad.yaml", 9)
    for _, verb in ipairs { "serve bad.yaml --port 0", "mcp bad.yaml" } do
      code, _, err = run(verb)
      refused(code, err, "bad.yaml", 9)
    end
    code, _, err = run("mcp v1.yaml") -- no requests on stdin: it loads, then ends
    assert.are.equal(0, code, err)
    local out
    code, out, err = H.run_keel(KEEL, "repl v1.yaml", "print(world:find('a'):get('game:v').x)\n", dir)
    assert.are.equal(0, code, err)
    assert.matches("\n?3\n", out)
  end)
end)
