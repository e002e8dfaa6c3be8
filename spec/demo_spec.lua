-- demo_spec.lua — the bundled demo kinds (lua/kinds) and scenes: the gameplay `keel run` shows
-- (a system, messages, timers, a prefab), played in-process.
local keel = require "keel"
local H = require "helper"

local SCENES = H.ROOT .. "/scenes"

-- `keel busted` has loaded the bundled kinds already; a stock busted has not.
if not pcall(keel.kind_info, "game:spawner") or not keel.kind_info("game:spawner") then
  assert(require("keel.kindfiles").load(H.ROOT .. "/lua/kinds") == 0)
end

local function demo() return assert(keel.load(SCENES .. "/demo.yaml")) end

local function near(a, b) return math.abs(a - b) < 1e-9 end

-- the entities named `prefix <n>`, by n
local function named(w, prefix)
  local out = {}
  for e in w:entities() do
    local n = e.name:match("^" .. prefix .. " (%d+)$")
    if n then out[tonumber(n)] = e end
  end
  return out
end

local function errors_text(w)
  local t = {}
  for _, e in ipairs(w:errors()) do t[#t + 1] = tostring(e.message) end
  return table.concat(t, "\n")
end

describe("the demo scene", function()
  it("loads cleanly and plays ten seconds without an error", function()
    local w = demo()
    assert.are.same({}, w:warnings())
    w:run(600, 1 / 60)
    assert.are.equal(0, #w:errors(), errors_text(w))
    assert.are.equal(15, w:count())
  end)

  it("spawners instantiate prefabs/drone.yaml on their timers, up to max_count", function()
    local w = demo()
    w:run(600, 1 / 60)
    local drones, scouts = named(w, "Drone"), named(w, "Scout")
    assert.are.equal(4, #drones)
    assert.are.equal(2, #scouts)
    local player = w:find("Player")
    for _, d in ipairs(drones) do
      -- a copy of the prefab: its renderer and health, with the spawner's values set
      assert.truthy(d:get("core:mesh_renderer"))
      assert.are.equal(20, d:get("game:health").max)
      assert.are.equal(player, d:get("game:follower").target)
      assert.are.equal(1.5, d:get("game:follower").speed)
    end
    for _, s in ipairs(scouts) do assert.is_nil(s:get("game:follower").target) end
    local spawner = w:find("Spawner")
    assert.are.equal(4, spawner:get("game:spawner", 0).spawned)
    assert.are.equal(2, spawner:get("game:spawner", 1).spawned)
    -- the timers stopped at max_count: no fifth drone however long it runs
    w:run(600, 1 / 60)
    assert.are.equal(15, w:count())
  end)

  it("followers' bites reach the Player as damage messages", function()
    local w = demo()
    local hp = w:find("Player"):get("game:health")
    -- alone, regen (2/s from 80) would fill it to 100 in ten seconds
    w:run(600, 1 / 60)
    assert.is_true(hp.value < 99, tostring(hp.value))
  end)

  it("the match timer ends the match at its duration, with a world timer (not the fixed countdown)", function()
    local w = demo()
    local m = w.root:get("game:match_timer")
    -- one-second steps: fixed_update's countdown (8 steps of 1/60 s at most per step) lags far behind
    w:run(89, 1)
    assert.is_false(m.finished)
    assert.is_true(m.remaining > 60)
    w:run(1, 1)
    assert.is_true(m.finished)
    assert.is_false(m.running)
    assert.are.equal(0, m.remaining)
    assert.are.equal(0, #w:errors(), errors_text(w))
  end)

  it("stop after play puts the demo back as loaded, its timers cancelled", function()
    local w = demo()
    local before = w:dump()
    w:play()
    w:run(300, 1 / 60)
    w:stop()
    assert.are.equal(before, w:dump())
    w:run(60, 1 / 60) -- start runs again and arms new timers: no error from the old ones
    assert.are.equal(0, #w:errors(), errors_text(w))
  end)

  it("a game saved mid-wave resumes counting from its fields (timers are not saved)", function()
    local dir = H.tmpdir()
    local w = demo()
    w:run(200, 1 / 60) -- 3.3 s: two drones, one scout
    assert.are.equal(2, #named(w, "Drone"))
    assert(w:save(dir .. "/mid.yaml"))
    local again = assert(keel.load(dir .. "/mid.yaml"))
    H.rmrf(dir)
    again:run(600, 1 / 60)
    local drones = named(again, "Drone")
    assert.are.equal(4, #drones)
    assert.are.equal(2, #named(again, "Scout"))
    assert.are.equal(0, #again:errors(), errors_text(again))
  end)
end)

describe("game:movement (a system)", function()
  it("is declared for the update phase over game:mover + core:transform", function()
    local found
    for _, s in ipairs(keel.systems()) do if s.name == "game:movement" then found = s end end
    assert.truthy(found)
    assert.are.equal("update", found.phase)
    assert.are.same({ "game:mover", "core:transform" }, found.query)
  end)

  it("moves each mover by its velocity and bounces it inside its bounds", function()
    local w = keel.world("M")
    local e = w:spawn{ name = "M", components = { "core:transform",
      { "game:mover", velocity = { 4, 0, -1 }, bounds = 3 } } }
    w:run(2, 0.5)
    local p = e:get("core:transform").position
    assert.are.same({ 3, 0, -1 }, { p[1], p[2], p[3] }) -- x clamped to 3 after 4 * 1 s
    assert.are.same({ -4, 0, -1 }, { table.unpack(e:get("game:mover").velocity) })
    w:step(0.5)
    assert.are.equal(1, e:get("core:transform").position.x)
  end)

  it("skips a disabled mover", function()
    local w = keel.world("M")
    local e = w:spawn{ name = "M", components = { "core:transform", { "game:mover", velocity = { 1, 0, 0 } } } }
    e:get("game:mover").enabled = false
    w:run(2, 0.5)
    assert.are.equal(0, e:get("core:transform").position.x)
  end)
end)

describe("game:health (messages)", function()
  local w, e, hp, deaths
  before_each(function()
    w = keel.world("H")
    deaths = {}
    e = w:spawn{ name = "E", components = { "core:transform", { "game:health", value = 30, max = 40 } } }
    hp = e:get("game:health")
  end)

  it("takes damage and heal messages, clamped to 0 and max", function()
    e:send("damage", { amount = 12 })
    w:step(0.1)
    assert.are.equal(18, hp.value)
    e:send("heal", { amount = 100 })
    w:step(0.1)
    assert.are.equal(40, hp.value)
  end)

  it("dies at 0 and broadcasts died with the entity and the attacker; a dead one ignores the rest", function()
    local kind = "demo_spec:listener"
    keel.kind{ key = kind, fields = { { "who", "entity" }, { "by", "entity" }, { "heard", "int" } },
      on_message = function(self, _, name, data)
        if name == "died" then self.who, self.by, self.heard = data.entity, data.by, self.heard + 1 end
      end }
    local ear = w:spawn{ name = "Ear", components = { kind } }
    local foe = w:spawn("Foe")
    e:send("damage", { amount = 50, from = foe })
    e:send("damage", { amount = 5, from = foe })
    w:step(0.1)
    assert.are.equal(0, hp.value)
    assert.is_true(hp.dead)
    local l = ear:get(kind)
    assert.are.equal(1, l.heard)
    assert.are.equal(e, l.who)
    assert.are.equal(foe, l.by)
    e:send("heal", { amount = 10 })
    w:step(0.1)
    assert.are.equal(0, hp.value)
  end)

  it("a value written to 0 directly dies in the next update, with the same broadcast", function()
    local kind = "demo_spec:counter"
    local heard = 0
    keel.kind{ key = kind, fields = {}, on_message = function(_, _, name) if name == "died" then heard = heard + 1 end end }
    w:spawn{ name = "Ear", components = { kind } }
    hp.value = 0
    w:step(0.1)
    assert.is_true(hp.dead)
    assert.are.equal(1, heard)
    w:step(0.1)
    assert.are.equal(1, heard)
  end)

  it("ignores messages that are not its own or carry no amount", function()
    e:send("damage", { much = true })
    e:send("greet", { amount = 10 })
    w:step(0.1)
    assert.are.equal(30, hp.value)
    assert.are.equal(0, #w:errors())
  end)
end)

describe("game:follower (an owned timer)", function()
  local function arena(distance_apart)
    local w = keel.world("F")
    local target = w:spawn{ name = "T", components = { { "core:transform", position = { distance_apart, 0, 0 } },
      { "game:health", value = 100 } } }
    local biter = w:spawn{ name = "B", components = { "core:transform",
      { "game:follower", target = target, speed = 0, distance = 1, bite = 7 } } }
    return w, target:get("game:health"), biter
  end

  it("bites a target within reach once a second", function()
    local w, hp = arena(1.2)
    w:run(3, 0.5) -- 1.5 s: one bite
    assert.are.equal(93, hp.value)
    w:run(2, 0.5)
    assert.are.equal(86, hp.value)
  end)

  it("does not bite out of reach, nor once destroyed", function()
    local w, hp = arena(5)
    w:run(4, 0.5)
    assert.are.equal(100, hp.value)
    local w2, hp2, biter = arena(1)
    biter:destroy()
    w2:run(4, 0.5)
    assert.are.equal(100, hp2.value)
  end)
end)

describe("game:spawner (a prefab on a timer)", function()
  local function world_with(body)
    local w = keel.world("S")
    local comp = { "game:spawner" }
    for k, v in pairs(body) do comp[k] = v end
    return w, w:spawn{ name = "S", components = { "core:transform", comp } }
  end

  it("names the copies after its label and stops at max_count", function()
    local w = world_with{ label = "Bee", interval = 0.5, max_count = 3 }
    w:run(10, 0.5)
    local bees = named(w, "Bee")
    assert.are.equal(3, #bees)
    assert.are.equal(4, w:count())
    assert.truthy(bees[1]:get("game:mover"))
  end)

  it("stops when its component is removed", function()
    local w, e = world_with{ interval = 0.5, max_count = 10 }
    w:run(2, 0.5) -- armed in start at world time 0: due at 0.5 and 1
    assert.are.equal(3, w:count())
    e:remove("game:spawner", 0)
    w:run(4, 0.5)
    assert.are.equal(3, w:count())
    assert.are.equal(0, #w:errors())
  end)

  it("a prefab that cannot be found is an error in w:errors(), and nothing is spawned", function()
    local w = world_with{ prefab = "prefabs/no_such.yaml", interval = 0.5 }
    w:run(4, 0.5)
    assert.are.equal(1, w:count())
    assert.are.equal(1, #w:errors())
    assert.truthy(w:errors()[1].message:find("prefabs/no_such.yaml not found", 1, true))
  end)

  it("migrates a version 1 body: its prefab name becomes the label", function()
    local v1 = "keel: 1\nscene: {uuid: " .. H.SCENE_UUID .. ", name: T}\nentities:\n"
      .. "- uuid: 5a000000-0000-4000-8000-000000000001\n  name: S\n  components:\n"
      .. "  - {kind: core:transform, version: 1, slot: 0, body: {}}\n"
      .. "  - {kind: game:spawner, version: 1, slot: 0, body: {prefab: Scout, interval: 2}}\n"
    local w = assert(keel.parse(v1))
    local s = w:find("S"):get("game:spawner")
    assert.are.equal("Scout", s.label)
    assert.are.equal("prefabs/drone.yaml", s.prefab)
    assert.are.equal(2, s.interval)
    assert.truthy(w:dump():find("kind: game:spawner\n    version: 2\n", 1, true))
  end)
end)
