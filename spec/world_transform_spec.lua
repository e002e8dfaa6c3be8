-- world_transform_spec.lua — e:world_transform() and w:snapshot(): what the C render snapshot
-- composes, read from Lua.
local keel = require "keel"

local H = require "helper"
local fails = H.fails

local S = math.sqrt(0.5)
local EPS = 1e-9

-- Column-major 4x4 of a position, rotation (x y z w) and scale, as the core builds a local one.
local function trs(p, q, s)
  local x, y, z, w = q[1], q[2], q[3], q[4]
  local r = {
    1 - 2 * (y * y + z * z), 2 * (x * y + z * w), 2 * (x * z - y * w),
    2 * (x * y - z * w), 1 - 2 * (x * x + z * z), 2 * (y * z + x * w),
    2 * (x * z + y * w), 2 * (y * z - x * w), 1 - 2 * (x * x + y * y),
  }
  local m = {}
  for c = 0, 2 do
    for k = 0, 2 do m[c * 4 + k + 1] = r[c * 3 + k + 1] * s[c + 1] end
    m[c * 4 + 4] = 0
  end
  m[13], m[14], m[15], m[16] = p[1], p[2], p[3], 1
  return m
end

local function qmul(a, b)
  return {
    a[4] * b[1] + b[4] * a[1] + a[2] * b[3] - a[3] * b[2],
    a[4] * b[2] + b[4] * a[2] + a[3] * b[1] - a[1] * b[3],
    a[4] * b[3] + b[4] * a[3] + a[1] * b[2] - a[2] * b[1],
    a[4] * b[4] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
  }
end

local function near(want, got, what)
  assert.are.equal(#want, #got, what)
  for i = 1, #want do
    assert.is_true(math.abs(want[i] - got[i]) < EPS,
      ("%s[%d]: want %.12g, got %.12g"):format(what or "", i, want[i], got[i]))
  end
end

-- Quaternions q and -q are one rotation; world_transform answers the one with w >= 0.
local function near_rotation(want, got, what)
  if want[4] < 0 then want = { -want[1], -want[2], -want[3], -want[4] } end
  near(want, got, what)
end

local function node(w, name, parent, p, q, s)
  local e = w:spawn(name)
  if parent then e.parent = parent end
  e:add("core:transform", { position = p, rotation = q, scale = s })
  e:add("core:mesh_renderer")
  return e
end

-- Three deep: A turned 90 degrees about z and scaled 2, B under it turned 90 about x and
-- scaled 0.5, C under B turned 45 about y with a non-uniform scale of its own.
local QA, QB, QC = { 0, 0, S, S }, { S, 0, 0, S }, { 0, math.sin(math.pi / 8), 0, math.cos(math.pi / 8) }
local function tank(w)
  local a = node(w, "A", nil, { 10, 0, 0 }, QA, { 2, 2, 2 })
  local b = node(w, "B", a, { 1, 0, 0 }, QB, { 0.5, 0.5, 0.5 })
  local c = node(w, "C", b, { 0, 2, 0 }, QC, { 1, 2, 3 })
  return a, b, c
end

describe("e:world_transform()", function()
  it("composes the parents' transforms: hand-computed for three levels", function()
    local w = keel.world("T")
    local a, b, c = tank(w)
    local p, q, s = a:world_transform()
    near({ 10, 0, 0 }, p, "A position")
    near_rotation(QA, q, "A rotation")
    near({ 2, 2, 2 }, s, "A scale")
    -- B: A's origin + Rz90 * 2 * (1,0,0); rotation Rz90 * Rx90; scale 2 * 0.5
    p, q, s = b:world_transform()
    near({ 10, 2, 0 }, p, "B position")
    near_rotation({ 0.5, 0.5, 0.5, 0.5 }, q, "B rotation")
    near({ 1, 1, 1 }, s, "B scale")
    -- C: B's origin + Rz90 * Rx90 * (0,2,0) = (10,2,0) + (0,0,2)
    p, q, s = c:world_transform()
    near({ 10, 2, 2 }, p, "C position")
    near_rotation(qmul(qmul(QA, QB), QC), q, "C rotation")
    near({ 1, 2, 3 }, s, "C scale")
  end)

  it("answers vectors shaped like core:transform's fields", function()
    local w = keel.world("T")
    local e = node(w, "E", nil, { 1, 2, 3 }, { 0, 0, 0, 1 }, { 4, 5, 6 })
    local p, q, s = e:world_transform()
    local own = e:get("core:transform")
    assert.are.same(own.position, p)
    assert.are.same(own.rotation, q)
    assert.are.same(own.scale, s)
    assert.are.equal(getmetatable(own.position), getmetatable(p))
    assert.are.equal(2, p.y)
    assert.are.equal(1, q.w)
    assert.are.equal(6, s.z)
  end)

  it("matches the C snapshot's matrices", function()
    local w = keel.world("T")
    local ents = { tank(w) }
    local snap = w:snapshot()
    assert.are.equal(3, #snap.drawables)
    for i, e in ipairs(ents) do
      local d = snap.drawables[i]
      assert.are.equal(e, d.entity)
      local m = {}
      for k = 1, 16 do m[k] = d.world[k] end
      near(m, trs(e:world_transform()), e.name)
    end
  end)

  it("counts a parent without a transform as none, and a mirror in scale x", function()
    local w = keel.world("T")
    local bare = w:spawn("bare")
    local e = node(w, "E", bare, { 1, 2, 3 }, { 0, 0, 0, 1 }, { 1, 1, 1 })
    near({ 1, 2, 3 }, (e:world_transform()), "under a bare parent")
    local m = node(w, "M", nil, { 0, 0, 0 }, { 0, 0, 0, 1 }, { -1, 2, 2 })
    local _, q, s = m:world_transform()
    near({ -1, 2, 2 }, s, "mirrored scale")
    near({ 0, 0, 0, 1 }, q, "mirrored rotation")
  end)

  it("is nil without a core:transform of its own, even under a parent with one", function()
    local w = keel.world("T")
    local a = node(w, "A", nil, { 1, 0, 0 }, { 0, 0, 0, 1 }, { 1, 1, 1 })
    local bare = w:spawn("bare")
    assert.is_nil(bare:world_transform())
    assert.are.equal(1, select("#", bare:world_transform()))
    bare.parent = a
    assert.is_nil(bare:world_transform())
    assert.is_nil(w.root:world_transform())
  end)

  it("raises NotFound on a stale handle", function()
    local w = keel.world("T")
    local e = node(w, "E", nil, { 1, 0, 0 }, { 0, 0, 0, 1 }, { 1, 1, 1 })
    e:destroy()
    local err = fails("NotFound", function() return e:world_transform() end)
    assert.truthy(err.message:find("stale handle", 1, true))
  end)
end)

describe("w:snapshot()", function()
  it("holds drawables, lights, the camera and the ambient of the C snapshot", function()
    local w = keel.world("S")
    local a = node(w, "A", nil, { 1, 2, 3 }, { 0, 0, 0, 1 }, { 1, 1, 1 })
    a:get("core:mesh_renderer").metallic = 0.25
    local hidden = node(w, "hidden", nil, { 0, 0, 0 }, { 0, 0, 0, 1 }, { 1, 1, 1 })
    hidden:get("core:mesh_renderer").visible = false
    local lamp = w:spawn("lamp")
    lamp:add("core:transform", { position = { 0, 5, 0 } })
    lamp:add("core:spot_light", { intensity = 7 })
    local cam = w:spawn("cam")
    cam:add("core:transform")
    cam:add("core:camera", { projection = "orthographic", fov = 40 })
    local s = w:snapshot()
    assert.are.equal(1, #s.drawables)
    local d = s.drawables[1]
    assert.are.equal(a, d.entity)
    assert.are.equal(0.25, d.metallic)
    assert.are.equal(true, d.casts_shadow)
    assert.are.equal(16, #d.world)
    assert.are.same({ 1, 2, 3 }, { d.world[13], d.world[14], d.world[15] })
    assert.are.equal(4, #d.color)
    assert.are.equal(1, #s.lights)
    assert.are.equal("spot", s.lights[1].type)
    assert.are.equal(lamp, s.lights[1].entity)
    assert.are.equal(7, s.lights[1].intensity)
    assert.are.equal(5, s.lights[1].world[14])
    assert.are.equal(cam, s.camera.entity)
    assert.are.equal("orthographic", s.camera.projection)
    assert.are.equal(40, s.camera.fov)
    assert.are.equal(4, #s.ambient)
    local keys = {}
    for k in pairs(s.camera) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "entity", "far", "fov", "near", "projection", "world" }, keys)
    local n = 0
    for _, item in ipairs(s.drawables) do n = n + 1 assert.are.equal(a, item.entity) end
    assert.are.equal(1, n)
  end)

  it("has no camera and no items in an empty world", function()
    local s = keel.world("E"):snapshot()
    assert.is_nil(s.camera)
    assert.are.equal(0, #s.drawables)
    assert.are.equal(0, #s.lights)
  end)

  it("is read-only at every depth, and stays what it was when taken", function()
    local w = keel.world("S")
    local a = node(w, "A", nil, { 1, 2, 3 }, { 0, 0, 0, 1 }, { 1, 1, 1 })
    local s = w:snapshot()
    fails("Unsupported", function() s.drawables = {} end)
    fails("Unsupported", function() s.extra = 1 end)
    fails("Unsupported", function() s.drawables[2] = {} end)
    fails("Unsupported", function() s.drawables[1].metallic = 1 end)
    fails("Unsupported", function() s.drawables[1].world[13] = 0 end)
    fails("Unsupported", function() s.ambient[1] = 0 end)
    a:get("core:transform").position = { 9, 9, 9 }
    a:destroy()
    assert.are.equal(1, s.drawables[1].world[13])
    assert.are.equal("keel.Snapshot (read-only)", tostring(s))
  end)

  it("refuses a closed world", function()
    local w = keel.world("S")
    w:close()
    fails("NotFound", function() return w:snapshot() end)
  end)
end)
