-- builtins_spec.lua — the built-in core: kinds: declared as DESIGN.md's table says, with its
-- ranges, exclusive lights and world_settings on the root only.
local keel = require "keel"

local H = require "helper"
local code_of = H.code_of

describe("built-in kinds", function()
  local TABLE = {
    ["core:transform"] = { "one", {}, { "core:world_settings" }, { "position", "rotation", "scale" },
      { position = "vec3", rotation = "quat", scale = "vec3" } },
    ["core:mesh_renderer"] = { "one", { "core:transform" }, {}, { "mesh", "material", "visible", "casts_shadow", "color", "metallic", "roughness" },
      { mesh = "asset", material = "asset", color = "color" } },
    ["core:point_light"] = { "one", { "core:transform" }, { "core:spot_light", "core:directional_light" }, { "color", "intensity", "range" }, {} },
    ["core:spot_light"] = { "one", { "core:transform" }, { "core:point_light", "core:directional_light" },
      { "color", "intensity", "range", "inner_angle", "outer_angle" }, {} },
    ["core:directional_light"] = { "one", { "core:transform" }, { "core:point_light", "core:spot_light" }, { "color", "intensity" }, {} },
    ["core:reflection_probe"] = { "one", { "core:transform" }, {}, { "radius", "intensity", "box_projection" }, {} },
    ["core:camera"] = { "one", { "core:transform" }, {}, { "projection", "fov", "near", "far" }, { projection = "enum" } },
    ["core:audio_source"] = { "many", { "core:transform" }, {},
      { "clip", "bus", "volume", "pitch", "loop", "spatial", "min_distance", "max_distance", "play_on_start" }, { clip = "asset", bus = "enum" } },
    ["core:world_settings"] = { "one", {}, { "core:transform" }, { "ambient", "sky_color", "fog", "fog_density", "exposure" }, {} },
  }

  local function sorted(t)
    local c = { table.unpack(t) }
    table.sort(c)
    return c
  end

  for k, row in pairs(TABLE) do
    it(k .. " is declared as the table says", function()
      local info = keel.kind_info(k)
      assert.truthy(info, k)
      assert.is_true(info.builtin)
      assert.are.equal(row[1], info.multiplicity)
      assert.are.same(sorted(row[2]), sorted(info.requires))
      assert.are.same(sorted(row[3]), sorted(info.rejects))
      local keys = {}
      for i, f in ipairs(info.fields) do
        keys[i] = f.key
        if row[5][f.key] then assert.are.equal(row[5][f.key], f.type, k .. "." .. f.key) end
      end
      assert.are.same(row[4], keys)
    end)
  end

  it("core:audio_source offers the buses music, effects, ambience, voice", function()
    for _, f in ipairs(keel.kind_info("core:audio_source").fields) do
      if f.key == "bus" then assert.are.same({ "music", "effects", "ambience", "voice" }, f.choices) end
    end
  end)

  it("checks the documented ranges", function()
    local w = keel.world()
    local e = w:spawn{ name = "E", components = { "core:transform" } }
    local light = e:add("core:point_light")
    assert.are.equal("InvalidArgument", code_of(function() light.intensity = -1 end))
    assert.are.equal("InvalidArgument", code_of(function() light.range = 0 end))
    local cam = e:add("core:camera")
    assert.are.equal("InvalidArgument", code_of(function() cam.fov = 0.5 end))
    assert.are.equal("InvalidArgument", code_of(function() cam.fov = 180 end))
    cam.fov = 179
    assert.are.equal("InvalidArgument", code_of(function() cam.near = 0 end))
    assert.are.equal("InvalidArgument", code_of(function() cam.far = cam.near end))
    local f = w:spawn{ name = "F", components = { "core:transform" } }
    local spot = f:add("core:spot_light")
    spot.outer_angle = 40
    assert.error(function() spot.inner_angle = 50 end)
    spot.inner_angle = 40
    local probe = f:add("core:reflection_probe")
    assert.are.equal("InvalidArgument", code_of(function() probe.radius = 0 end))
  end)

  it("keeps the lights exclusive and world_settings on the root only", function()
    local w = keel.world()
    local e = w:spawn{ name = "E", components = { "core:transform", "core:spot_light" } }
    assert.are.equal("InvalidOperation", code_of(function() e:add("core:point_light") end))
    assert.are.equal("InvalidOperation", code_of(function() e:add("core:directional_light") end))
    assert.are.equal("InvalidOperation", code_of(function() w.root:add("core:transform") end) )
  end)

  it("built-in transform has position vec3, rotation quat, scale vec3", function()
    local f = keel.kind_info("core:transform").fields
    assert.are.same({ "position", "vec3" }, { f[1].key, f[1].type })
    assert.are.same({ "rotation", "quat" }, { f[2].key, f[2].type })
    assert.are.same({ "scale", "vec3" }, { f[3].key, f[3].type })
    assert.are.same({ 0, 0, 0, 1 }, f[2].default)
    assert.are.same({ 1, 1, 1 }, f[3].default)
  end)

  it("audio_source bus choices are music, effects, ambience, voice", function()
    for _, f in ipairs(keel.kind_info("core:audio_source").fields) do
      if f.key == "bus" then
        assert.are.equal("enum", f.type)
        assert.are.same({ "music", "effects", "ambience", "voice" }, f.choices)
      end
    end
  end)
end)
