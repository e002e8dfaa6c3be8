-- watch_delta_spec.lua — the exact JSON text of an event-stream delta's "changed" list (written
-- straight into a buffer by bindings/channel/lua_watch.c): key order, numbers as the rest of the
-- stream writes them (integral floats as integers, other reals with 17 digits, no inf or nan),
-- string escapes, a toggled component's "enabled", nothing when nothing changed.
local keel = require "keel"
local json = require "keel.json"
local new_watcher = require "keel.core.channel".watcher

keel.kind{ key = "wd:all", fields = {
  { "b", "bool", default = false }, { "i", "int", default = 0 }, { "f", "float", default = 0 },
  { "v", "vec3" }, { "en", "enum", choices = { "walk", "say \"run\"" }, default = "walk" },
  { "s", "string", default = "" }, { "ref", "entity" } } }

describe("a watcher's delta text", function()
  local w, e, c, wt, uuid
  before_each(function()
    w = keel.world("Delta")
    e = w:spawn{ name = "A", components = { "wd:all" } }
    c = e:get("wd:all")
    uuid = tostring(e.uuid)
    wt = new_watcher(w, { kinds = { "wd:all" } })
    wt:snapshot(1)
  end)
  after_each(function() w:close() end)

  local function head(version)
    return ('{"entity":"%s","kind":"wd:all","slot":0,"version":%d,"fields":{'):format(uuid, version)
  end

  it("lists only the fields that differ, in field order, with the stream's number text", function()
    local v0 = c.version
    c.f = 0.1
    c.i = -7
    c.v = { 1 / 3, 2, -1.5e20 }
    local text = wt:delta(2)
    local want = '{"revision":' .. w.revision .. ',"frame":2,"changed":[' .. head(c.version)
      .. '"i":-7,"f":0.10000000000000001,"v":[0.33333333333333331,2,-1.5e20]}}],'
      .. '"added":[],"removed":[],"spawned":[],"destroyed":[],"updated":[]}'
    assert.are.equal(want, text)
    assert.is_true(c.version > v0)
    assert.are.same({ 1 / 3, 2, -1.5e20 }, json.decode(text).changed[1].fields.v)
  end)

  it("escapes strings as JSON and writes enums by name, entities by UUID", function()
    local other = w:spawn("B")
    c.s = 'say "hi"\\ \n\t\1 / é'
    c.en = 'say "run"'
    c.ref = other
    c.b = true
    local text = wt:delta(3)
    assert.truthy(text:find(head(c.version) .. '"b":true,"en":"say \\"run\\"","s":"say \\"hi\\"\\\\ \\n\\t\\u0001 / é","ref":"'
      .. tostring(other.uuid) .. '"}}', 1, true), text)
    local d = json.decode(text).changed[1].fields
    assert.are.equal('say "hi"\\ \n\t\1 / é', d.s)
    c.ref = nil
    assert.truthy(wt:delta(4):find('"fields":{"ref":null}}', 1, true))
  end)

  it("sends a toggled component with empty fields and its flag", function()
    c.enabled = false
    local text = wt:delta(5)
    assert.truthy(text:find(head(c.version) .. '},"enabled":false}]', 1, true), text)
  end)

  it("says nothing when nothing differs, and leaves out a frame time that is not finite", function()
    assert.is_nil(wt:delta(6))
    c.i = 3
    c.i = 0 -- back to what was sent: the version moved, the value did not
    assert.is_nil(wt:delta(7))
    c.i = 4
    local text = wt:delta(8, 1 / 0)
    assert.is_nil(text:find("frame_ms", 1, true))
    c.i = 5
    assert.truthy(wt:delta(9, 2.5):find('"frame":9,"frame_ms":2.5,"changed":[', 1, true))
  end)

  it("separates the items of several changed components", function()
    local b = w:spawn{ name = "B", components = { "wd:all" } }
    wt:snapshot(10)
    c.i = 1
    b:get("wd:all").i = 2
    local d = json.decode(wt:delta(11))
    assert.are.equal(2, #d.changed)
    assert.are.equal(1, d.changed[1].fields.i)
    assert.are.equal(2, d.changed[2].fields.i)
  end)
end)
