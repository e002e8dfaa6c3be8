-- persist_hooks_spec.lua — keel.persist.load runs Lua code: awake of restored components and
-- Lua migrations of bodies saved by an older kind version.
local keel = require "keel"

local SCENE = [[
keel: 1
scene:
  uuid: 5a5e0000-0000-4000-8000-0000000000bb
  name: Hooks
entities:
  - uuid: 00000000-0000-4000-8000-0000000000b1
    name: Player
    components: []
]]

local woke = {}
keel.kind{ key = "ph:waker", fields = { { "tag", "string" } },
  awake = function(self, e) woke[#woke + 1] = self.tag .. "@" .. e.name end }

local function fresh()
  local w, err = keel.parse(SCENE)
  assert(w, err and tostring(err))
  return w
end

describe("keel.persist.load", function()
  local path
  before_each(function() path = os.tmpname() .. ".sav" end)
  after_each(function() os.remove(path) end)

  it("runs awake of the Lua kinds' components it restores", function()
    local w = fresh()
    local base = keel.persist.baseline(w)
    w:find("Player"):add("ph:waker", { tag = "saved" })
    assert.is_true(keel.persist.save(w, base, path))
    woke = {}
    local w2 = fresh()
    assert.is_true(keel.persist.load(w2, path))
    assert.are.same({ "saved@Player" }, woke)
    assert.are.equal("saved", w2:find("Player"):get("ph:waker").tag)
  end)

  it("runs a Lua migration on a body saved by an older version of the kind", function()
    keel.kind{ key = "ph:speed", version = 1, fields = { { "old", "float", default = 0 } } }
    local w = fresh()
    local base = keel.persist.baseline(w)
    w:find("Player"):add("ph:speed", { old = 3 })
    assert.is_true(keel.persist.save(w, base, path))
    local ran = 0
    keel.kind{ key = "ph:speed", version = 2, fields = { { "speed", "float", default = 0 } },
      migrate = { [2] = function(b) ran = ran + 1; return { speed = b.old * 2 } end } }
    local w2 = fresh()
    local ok, err = keel.persist.load(w2, path)
    assert.is_true(ok, err and tostring(err))
    assert.are.equal(1, ran)
    assert.are.equal(6, w2:find("Player"):get("ph:speed").speed)
  end)

  it("fails whole when a Lua migration raises, with the migration's message", function()
    keel.kind{ key = "ph:bad", version = 1, fields = { { "n", "int", default = 0 } } }
    local w = fresh()
    local base = keel.persist.baseline(w)
    w:find("Player"):add("ph:bad", { n = 1 })
    assert.is_true(keel.persist.save(w, base, path))
    keel.kind{ key = "ph:bad", version = 2, fields = { { "n", "int", default = 0 } },
      migrate = { [2] = function(b) error("cannot migrate") end } }
    local w2 = fresh()
    local ok, err = keel.persist.load(w2, path)
    assert.is_nil(ok)
    assert.truthy(tostring(err):match("cannot migrate"))
    assert.is_nil(w2:find("Player"):get("ph:bad"))
  end)
end)
