-- registry_spec.lua — what the registry owes its readers (DESIGN registry.md): tooltips, derived
-- fields of Lua kinds (get/set through every write and every file), rotations in degrees,
-- per-kind policies (sync.radius, summon = false, renames), the features header and the
-- counted skipped-field warnings.
local keel = require "keel"
local json = require "keel.json"
local channel = require "keel.channel"
local history = require "keel.history"
local H = require "helper"

local HEAD = "keel: 1\nscene:\n  uuid: 8135d215-5bf0-4c91-89ed-6a88c0d55267\n  name: t\n"

local SPOT = [[
keel.kind{ key = "reg:spot", tooltip = "A spot light", fields = {
  { "cos_cone", "float", runtime = true, hidden = true },
  { "cone", "float", min = 1, max = 179, default = 45, tooltip = "Cone angle in degrees",
    get = function(self) return math.deg(math.acos(self.cos_cone)) * 2 end,
    set = function(self, deg)
      self.cos_cone = math.cos(math.rad(deg / 2))
      if deg == 33 then error("the lamp refuses 33") end
    end },
}}
]]
assert(load(SPOT, "spot", "t", { keel = keel, math = math, error = error }))()

local function near(a, b) return math.abs(a - b) < 1e-9 end

local function spot_world()
  local w = keel.world("R")
  local e = w:spawn{ name = "Lamp", components = { "reg:spot" } }
  return w, e, e:get("reg:spot")
end

describe("tooltips", function()
  it("are shown by keel.kind_info on the kind and the field", function()
    local k = keel.kind_info("reg:spot")
    assert.are.equal("A spot light", k.tooltip)
    assert.are.equal("Cone angle in degrees", k.fields[2].tooltip)
    assert.is_nil(k.fields[1].tooltip)
  end)

  it("are text of at most 1 KiB without NUL, else InvalidArgument", function()
    H.fails("InvalidArgument", keel.kind, { key = "reg:t1", tooltip = ("x"):rep(1025) })
    H.fails("InvalidArgument", keel.kind, { key = "reg:t2", fields = { { "a", "int", tooltip = "a\0b" } } })
    H.fails("InvalidArgument", keel.kind, { key = "reg:t3", fields = { { "a", "int", tooltip = 5 } } })
    H.fails("InvalidArgument", keel.kind, { key = "reg:t4", tooltip = "\255\254" })
    assert.is_nil(keel.kind_info("reg:t1"))
    keel.kind{ key = "reg:t5", tooltip = ("é"):rep(512) } -- 1024 bytes: the limit itself
    assert.are.equal(1024, #keel.kind_info("reg:t5").tooltip)
  end)

  it("reach component.kinds and the MCP tool schemas", function()
    local w = keel.world("T")
    local ch = channel.new(w)
    local spot
    for _, k in ipairs(ch:call("component.kinds")) do if k.key == "reg:spot" then spot = k end end
    assert.are.equal("A spot light", spot.tooltip)
    assert.are.equal("Cone angle in degrees", spot.fields[2].tooltip)
    assert.is_true(spot.fields[2].derived)
    local mcp = require "keel.mcp"
    local schema = mcp.params_schema("component.set", channel.methods["component.set"].params)
    local found
    for _, v in ipairs(schema.properties.fields.anyOf) do
      if v.title == "reg:spot" then found = v end
    end
    assert.truthy(found.description:find("A spot light", 1, true))
    assert.truthy(found.properties.cone.description:find("Cone angle in degrees", 1, true))
    w:close()
  end)

  it("reach keel kinds, --json and the --meta stubs (as comments)", function()
    local dir = H.tmpdir()
    os.execute("mkdir -p " .. H.shell_quote(dir .. "/kinds"))
    H.spit(dir .. "/kinds/spot.lua", 'local keel = require "keel"\n' .. SPOT)
    local bin = H.find_keel()
    local code, out = H.run_keel(bin, "kinds", nil, dir)
    assert.are.equal(0, code)
    assert.truthy(out:find("-- Cone angle in degrees", 1, true), out)
    code, out = H.run_keel(bin, "kinds --json", nil, dir)
    assert.are.equal(0, code)
    local spot
    for _, k in ipairs(json.decode(out)) do if k.key == "reg:spot" then spot = k end end
    assert.are.equal("A spot light", spot.tooltip)
    assert.are.equal("Cone angle in degrees", spot.fields[2].tooltip)
    code, out = H.run_keel(bin, "kinds --meta", nil, dir)
    assert.are.equal(0, code)
    assert.truthy(out:find("---@meta", 1, true))
    assert.truthy(out:find("---A spot light\n---@class reg.spot : KeelComponent\n", 1, true), out)
    assert.truthy(out:find("---@field cone number # float: Cone angle in degrees", 1, true), out)
    H.rmrf(dir)
  end)
end)

describe("derived fields", function()
  it("need both get and set, on a plain value type", function()
    local f = function() end
    H.fails("InvalidArgument", keel.kind, { key = "reg:d1", fields = { { "a", "float", get = f } } })
    H.fails("InvalidArgument", keel.kind, { key = "reg:d2", fields = { { "a", "float", set = f } } })
    H.fails("InvalidArgument", keel.kind, { key = "reg:d3", fields = { { "a", "string", get = f, set = f } } })
    H.fails("InvalidArgument", keel.kind, { key = "reg:d4", fields = { { "a", "entity", get = f, set = f } } })
    H.fails("InvalidArgument", keel.kind, { key = "reg:d5", fields = { { "a", "float", get = 1, set = f } } })
    assert.is_nil(keel.kind_info("reg:d1"))
  end)

  it("read through get, write through the range check then set; defaults apply through set", function()
    local w, _, c = spot_world()
    assert.is_true(near(c.cone, 45))
    assert.is_true(near(c.cos_cone, math.cos(math.rad(22.5))))
    c.cone = 90
    assert.is_true(near(c.cos_cone, math.cos(math.rad(45))))
    assert.is_true(near(c.cone, 90))
    H.fails("InvalidArgument", function() c.cone = 200 end)
    assert.is_true(near(c.cone, 90))
    c.cos_cone = 0.5
    assert.is_true(near(c.cone, 120))
    w:close()
  end)

  it("roll back a set that fails, with what it wrote", function()
    local w, _, c = spot_world()
    c.cone = 60
    local err = H.fails("InvalidOperation", function() c.cone = 33 end) -- a callback that raised
    assert.truthy(tostring(err):find("the lamp refuses 33", 1, true))
    assert.is_true(near(c.cone, 60))
    assert.is_true(near(c.cos_cone, math.cos(math.rad(30))))
    w:close()
  end)

  it("write inside the writer's transaction: a failing hook takes the derived write back", function()
    keel.kind{ key = "reg:dimmer", fields = { { "fail", "bool" } }, update = function(self)
      local lamp = self.entity:get("reg:spot")
      lamp.cone = 10
      if self.fail then error("dimmer broke") end
    end }
    local w, e, c = spot_world()
    c.cone = 80
    e:add("reg:dimmer", { fail = true })
    pcall(w.step, w, 1 / 60)
    assert.is_true(near(c.cone, 80))
    assert.is_true(near(c.cos_cone, math.cos(math.rad(40))))
    w:close()
    local w2, e2, c2 = spot_world() -- the same hook, not failing: its write stands
    e2:add("reg:dimmer", { fail = false })
    w2:step(1 / 60)
    assert.is_true(near(c2.cone, 10))
    w2:close()
  end)

  it("written by the kind's own hook through self, either way round", function()
    local mode
    keel.kind{ key = "reg:beam", fields = {
      { "cos_cone", "float", hidden = true },
      { "cone", "float", min = 1, max = 179, default = 45,
        get = function(self) return math.deg(math.acos(self.cos_cone)) * 2 end,
        set = function(self, deg) self.cos_cone = math.cos(math.rad(deg / 2)) end } },
      update = function(self)
        if mode == "stored" then self.cos_cone = 0.5 else self.cone = 90 end
      end }
    local w = keel.world("B")
    local c = w:spawn{ name = "Beam", components = { "reg:beam" } }:get("reg:beam")
    mode = "stored"
    w:step(1 / 60)
    assert.is_true(near(c.cone, 120))
    mode = "derived"
    w:step(1 / 60)
    assert.is_true(near(c.cone, 90))
    assert.is_true(near(c.cos_cone, math.cos(math.rad(45))))
    w:close()
  end)

  it("are undone and redone by keel.history", function()
    local w, _, c = spot_world()
    local h = history.new(w)
    h:set(c, "cone", 100)
    assert.is_true(near(c.cone, 100))
    assert.is_true(h:undo())
    assert.is_true(near(c.cone, 45))
    assert.is_true(h:redo())
    assert.is_true(near(c.cone, 100))
    w:close()
  end)

  it("are stored in the derived form: dump, YAML round trip and the channel", function()
    local w, e, c = spot_world()
    c.cone = 70
    local text = w:dump()
    assert.truthy(text:find("cone: 70", 1, true), text)
    assert.falsy(text:find("cos_cone", 1, true))
    local y = assert(keel.parse(text))
    local yc = y:find(e.uuid):get("reg:spot")
    assert.is_true(near(yc.cone, 70))
    assert.is_true(near(yc.cos_cone, math.cos(math.rad(35))))
    -- a file's value out of range is refused before set runs
    local bad = text:gsub("cone: 70", "cone: 500")
    local nw, err = keel.parse(bad)
    assert.is_nil(nw)
    assert.are.equal("InvalidArgument", err.code)
    local ch = channel.new(w)
    local got = ch:call("component.get", { object = e.uuid, kind = "reg:spot" })
    assert.is_true(near(got.body.cone, 70))
    ch:call("component.set", { object = e.uuid, kind = "reg:spot", fields = { cone = 50 } })
    assert.is_true(near(c.cos_cone, math.cos(math.rad(25))))
    assert.is_true(ch:call("history.undo") ~= nil)
    assert.is_true(near(c.cone, 70))
    w:close()
    y:close()
  end)

  it("round-trip through cooked files and save games", function()
    local dir = H.tmpdir()
    os.execute("mkdir -p " .. H.shell_quote(dir .. "/kinds"))
    H.spit(dir .. "/kinds/spot.lua", 'local keel = require "keel"\n' .. SPOT)
    local w, e, c = spot_world()
    c.cone = 64
    assert(w:save(dir .. "/s.yaml"))
    local code, _, err = H.run_keel(H.find_keel(), "cook s.yaml -o s.keelc", nil, dir)
    assert.are.equal(0, code, err)
    local k = assert(keel.load(dir .. "/s.keelc"))
    local kc = k:find(e.uuid):get("reg:spot")
    assert.is_true(near(kc.cone, 64))
    assert.is_true(near(kc.cos_cone, math.cos(math.rad(32))))
    local base = keel.persist.baseline(k)
    kc.cone = 110
    assert(keel.persist.save(k, base, dir .. "/slot.save", { title = "t" }))
    local fresh = assert(keel.load(dir .. "/s.keelc"))
    assert(keel.persist.load(fresh, dir .. "/slot.save"))
    local fc = fresh:find(e.uuid):get("reg:spot")
    assert.is_true(near(fc.cone, 110))
    assert.is_true(near(fc.cos_cone, math.cos(math.rad(55))))
    w:close(); k:close(); fresh:close()
    H.rmrf(dir)
  end)
end)

describe("rotations in degrees", function()
  it("from_euler applies Z, then X, then Y (q = qY·qX·qZ), to_euler reads it back", function()
    local q = keel.quat.from_euler(90, 0, 0)
    assert.is_true(near(q[1], math.sqrt(0.5)) and near(q[4], math.sqrt(0.5)))
    q = keel.quat.from_euler(30, 45, 60)
    -- Unity's Quaternion.Euler(30, 45, 60)
    assert.is_true(math.abs(q[1] - 0.3919038) < 1e-6 and math.abs(q[2] - 0.2005621) < 1e-6)
    assert.is_true(math.abs(q[3] - 0.3604234) < 1e-6 and math.abs(q[4] - 0.8223632) < 1e-6)
    local x, y, z = keel.quat.to_euler(q)
    assert.is_true(near(x, 30) and near(y, 45) and near(z, 60))
    x, y, z = keel.quat.to_euler(keel.quat.from_euler(-20, 170, -100))
    assert.is_true(near(x, -20) and near(y, 170) and near(z, -100))
    local neg = keel.quat.from_euler(0, 350, 0)
    assert.is_true(neg[4] >= 0)
    H.fails("InvalidArgument", keel.quat.from_euler, 1, "a", 2)
    H.fails("InvalidArgument", keel.quat.to_euler, { 0, 0, 0, 0 })
  end)

  it("are saved canonical: a quaternion read with w < 0 is negated on load", function()
    local text = HEAD .. "entities:\n- uuid: 00000000-0000-4000-8000-000000000001\n  name: A\n  components:\n"
      .. "  - kind: core:transform\n    version: 1\n    slot: 0\n    body:\n      rotation: [0, -0.6, 0, -0.8]\n"
    local w = assert(keel.parse(text))
    local r = w:find("A"):get("core:transform").rotation
    assert.is_true(near(r[2], 0.6) and near(r[4], 0.8))
    assert.truthy(w:dump():find("rotation: [0, 0.6, 0, 0.8]", 1, true))
    w:close()
  end)
end)

describe("per-kind policies", function()
  it("sync.radius is finite, > 0 and at most 10,000; kind_info shows it", function()
    for _, r in ipairs { 0, -1, 1 / 0, 0 / 0, 10001, "far" } do
      H.fails("InvalidArgument", keel.kind, { key = "reg:r", sync = { radius = r }, fields = { { "x", "int", sync = true } } })
    end
    keel.kind{ key = "reg:r", sync = { interval = 2, radius = 25 }, fields = { { "x", "int", sync = true } } }
    assert.are.same({ interval = 2, radius = 25 }, keel.kind_info("reg:r").sync)
  end)

  it("a kind's radius narrows how far a client follows an entity holding it", function()
    local w0 = keel.world("probe")
    local ok, err = pcall(keel.net.host, w0, { port = 0 })
    if not ok and err.code == "Unsupported" then return end -- a build without replication
    err:close()
    w0:close()
    keel.kind{ key = "reg:near", sync = { radius = 10 }, fields = { { "x", "int", sync = true } } }
    local w = keel.world("N")
    local focus = w:spawn{ name = "F", components = { "core:transform" } }
    local far_near = w:spawn{ name = "A", components = { { "core:transform", position = { 50, 0, 0 } }, "reg:near" } }
    local far_plain = w:spawn{ name = "B", components = { { "core:transform", position = { 50, 0, 0 } } } }
    local close_near = w:spawn{ name = "C", components = { { "core:transform", position = { 5, 0, 0 } }, "reg:near" } }
    local host = keel.net.host(w, { port = 0, interest = { radius = 100 } })
    local cl = keel.net.connect("127.0.0.1", host:port(), { name = "p1" })
    for _ = 1, 100 do host:service(); cl:service(); if #host:clients() > 0 then break end end
    host:focus(host:clients()[1], focus)
    for _ = 1, 200 do host:service(); cl:service() end
    assert.is_not_nil(cl.world:find(far_plain.uuid)) -- 50 away, the host's 100
    assert.is_not_nil(cl.world:find(close_near.uuid)) -- 5 away, its kind's 10
    assert.is_nil(cl.world:find(far_near.uuid)) -- 50 away, its kind's 10
    cl:close()
    host:close()
    w:close()
  end)

  it("a host refuses a max_radius below a kind's radius, and its own radius above it", function()
    keel.kind{ key = "reg:r2", sync = { radius = 500 }, fields = { { "x", "int", sync = true } } }
    local w = keel.world("N")
    H.fails("InvalidArgument", keel.net.host, w, { port = 0, max_radius = 100 })
    H.fails("InvalidArgument", keel.net.host, w, { port = 0, interest = { radius = 20000 } })
    H.fails("InvalidArgument", keel.net.host, w, { port = 0, max_radius = -5 })
    w:close()
  end)

  it("summon = false: refused by the channel's component.add and object.spawn, added from Lua", function()
    keel.kind{ key = "reg:boss", summon = false, fields = { { "hp", "int", default = 9 } } }
    assert.is_false(keel.kind_info("reg:boss").summon)
    H.fails("InvalidArgument", keel.kind, { key = "reg:b2", summon = "no" })
    local w = keel.world("S")
    local e = w:spawn{ name = "Arena" }
    local ch = channel.new(w)
    local err = H.raises(ch.call, ch, "component.add", { object = e.uuid, kind = "reg:boss" })
    assert.are.equal("InvalidOperation", err.code)
    assert.are.equal("kind reg:boss cannot be summoned", err.message)
    err = H.raises(ch.call, ch, "object.spawn", { name = "B", components = channel.array { "reg:boss" } })
    assert.are.equal("InvalidOperation", err.code)
    err = H.raises(ch.call, ch, "object.spawn", { name = "B", components = channel.array { { kind = "reg:boss" } } })
    assert.are.equal("InvalidOperation", err.code)
    assert.are.equal(1, w:count()) -- nothing spawned
    local mcp = require "keel.mcp"
    local schema = mcp.params_schema("component.add", channel.methods["component.add"].params)
    for _, key in ipairs(schema.properties.kind.enum) do assert.are_not.equal("reg:boss", key) end
    assert.are.equal(9, e:add("reg:boss").hp) -- the game itself may
    w:close()
  end)

  it("renames move a field to its new name before that version's migrate", function()
    local seen
    keel.kind{ key = "reg:mover", version = 3, fields = { { "speed", "float" }, { "turn", "float" } },
      renames = { [2] = { velocity = "speed" }, [3] = { spin = "turn" } },
      migrate = { [2] = function(body) seen = body.speed; return body end } }
    local text = HEAD .. "entities:\n- uuid: 00000000-0000-4000-8000-000000000001\n  name: A\n  components:\n"
      .. "  - kind: reg:mover\n    version: 1\n    slot: 0\n    body: { velocity: 4, spin: 2 }\n"
    local w = assert(keel.parse(text))
    local c = w:find("A"):get("reg:mover")
    assert.are.equal(4, c.speed)
    assert.are.equal(2, c.turn)
    assert.are.equal(4, tonumber(seen))
    H.fails("InvalidArgument", keel.kind, { key = "reg:m2", version = 2, renames = { [3] = { a = "b" } } })
    H.fails("InvalidArgument", keel.kind, { key = "reg:m2", version = 2, renames = { [2] = { a = 1 } } })
    w:close()
  end)
end)

describe("files", function()
  local function comps(n, body)
    local t = { "entities:" }
    for i = 1, n do
      t[#t + 1] = ("- uuid: 00000000-0000-4000-8000-%012d\n  name: e%d\n  components:\n  - kind: reg:spot\n"
        .. "    version: 1\n    slot: 0\n    body: %s"):format(i, i, body)
    end
    return table.concat(t, "\n") .. "\n"
  end

  it("refuse a scene whose features keel does not know, naming it", function()
    local w, err = keel.parse(HEAD .. "features: [canonical_quaternions, hover_cars]\n" .. comps(1, "{ cone: 40 }"))
    assert.is_nil(w)
    assert.are.equal("Unsupported", err.code)
    assert.truthy(err.message:find("hover_cars", 1, true))
    assert.are.equal("features[1]", err.diagnostics[1].path)
    local ok = assert(keel.parse(HEAD .. "features: [canonical_quaternions]\n" .. comps(1, "{ cone: 40 }")))
    assert.truthy(ok:dump():find("features: [canonical_quaternions]", 1, true))
    ok:close()
  end)

  it("warn once per (kind, field) skipped, with a count", function()
    keel.kind{ key = "reg:tr", fields = { { "t", "float", transient = true } } }
    local text = HEAD .. comps(3, "{ cone: 40, glow: 2 }")
    local w = assert(keel.parse(text))
    local glow = {}
    for _, d in ipairs(w:warnings()) do
      if d.message:find("'glow'", 1, true) then glow[#glow + 1] = d end
    end
    assert.are.equal(1, #glow)
    assert.truthy(glow[1].message:find("(3 components)", 1, true), glow[1].message)
    w:close()
  end)
end)
