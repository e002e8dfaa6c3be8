-- meta_spec.lua — lua/keel/meta.lua annotates every public function of the Lua face.
local keel = require "keel"

local function annotated()
  local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
  local f = assert(io.open(here .. "../lua/keel/meta.lua"))
  local text = f:read("a")
  f:close()
  local names = {}
  for owner, sep, name in text:gmatch("\nfunction ([%w_]+)([.:])([%w_]+)%(") do
    names[owner] = names[owner] or {}
    names[owner][name] = sep
  end
  return names
end

local function public_functions(t)
  local out = {}
  for k, v in pairs(t) do
    if type(k) == "string" and not k:match("^_") and type(v) == "function" then out[k] = true end
  end
  return out
end

local function methods_of(obj)
  local mt = getmetatable(obj)
  if type(mt) ~= "table" then return nil end
  if type(mt.__index) == "table" then return mt.__index end
  -- a C __index that serves fields first keeps its method table as an upvalue
  if type(mt.__index) == "function" then
    for i = 1, 4 do
      local _, v = debug.getupvalue(mt.__index, i)
      if type(v) == "table" then return v end
    end
  end
  return nil
end

describe("lua/keel/meta.lua", function()
  local names = annotated()

  it("annotates every function of the keel module", function()
    for name in pairs(public_functions(keel)) do
      assert.is_truthy(names.keel[name], "keel." .. name .. " has no annotation")
    end
    for name in pairs(names.keel) do
      assert.are.equal("function", type(keel[name]), "keel." .. name .. " is annotated but missing")
    end
  end)

  it("annotates every function of keel.persist", function()
    for name in pairs(public_functions(keel.persist)) do
      assert.is_truthy(names.persist[name], "keel.persist." .. name .. " has no annotation")
    end
    for name in pairs(names.persist) do
      assert.are.equal("function", type(keel.persist[name]), "keel.persist." .. name .. " is missing")
    end
  end)

  it("annotates every function of keel.quat", function()
    for name in pairs(public_functions(keel.quat)) do
      assert.is_truthy(names.quat and names.quat[name], "keel.quat." .. name .. " has no annotation")
    end
    for name in pairs(names.quat) do
      assert.are.equal("function", type(keel.quat[name]), "keel.quat." .. name .. " is missing")
    end
  end)

  it("annotates every function of keel.history", function()
    local mod = require "keel.history"
    for name in pairs(public_functions(mod)) do
      assert.is_truthy(names.history and names.history[name], "history." .. name .. " has no annotation")
    end
    for name in pairs(names.history) do
      assert.are.equal("function", type(mod[name]), "history." .. name .. " is annotated but missing")
    end
  end)

  it("annotates the methods of worlds, entities, components and histories", function()
    keel.kind{ key = "meta:probe", fields = { { "x", "float" } } }
    local w = keel.world("Meta")
    local e = w:spawn("E")
    local c = e:add("meta:probe")
    local h = require("keel.history").new(w)
    for owner, obj in pairs{ World = w, Entity = e, Component = c, History = h } do
      for name in pairs(names[owner]) do
        assert.are.equal("function", type(obj[name]), owner .. ":" .. name .. " is annotated but missing")
      end
      local methods = methods_of(obj)
      if methods then
        for name in pairs(public_functions(methods)) do
          assert.is_truthy(names[owner][name], owner .. ":" .. name .. " has no annotation")
        end
      end
    end
  end)
end)
