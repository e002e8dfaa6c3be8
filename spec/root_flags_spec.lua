-- root_flags_spec.lua — where a kind may live is kind metadata (root_only, not_on_root), not a special case.
local keel = require "keel"

local H = require "helper"
local code_of = H.code_of
local key = H.key_maker("placement")

describe("kind placement flags", function()
  it("not_on_root keeps a kind off the scene root and nowhere else", function()
    keel.kind{ key = "rf:spatial", not_on_root = true, fields = { { "x", "float" } } }
    local w = keel.world("RF")
    local ok, err = pcall(function() w.root:add("rf:spatial") end)
    assert.is_false(ok)
    assert.are.equal("InvalidOperation", err.code)
    assert.are.equal(H.here(-3) .. ": InvalidOperation: the scene root cannot hold rf:spatial", tostring(err))
    assert.are.equal(0, #w.root:components())
    assert.is_truthy(w:spawn("E"):add("rf:spatial"))
  end)

  it("core:transform is kept off the root by that flag, with the same message", function()
    local w = keel.world("RF")
    local ok, err = pcall(function() w.root:add("core:transform") end)
    assert.is_false(ok)
    assert.are.equal(H.here(-2) .. ": InvalidOperation: the scene root cannot hold core:transform", tostring(err))
  end)

  it("a kind without the flag may live on the root", function()
    keel.kind{ key = "rf:rule", fields = { { "n", "int" } } }
    local w = keel.world("RF")
    assert.are.equal("rf:rule", w.root:add("rf:rule").kind)
  end)

  it("honours root_only: the kind goes on the scene root and nowhere else", function()
    local k = key("rootonly")
    keel.kind{ key = k, root_only = true }
    local w = keel.world()
    assert.are.equal("InvalidOperation", code_of(function() w:spawn("E"):add(k) end))
    assert.are.equal(k, w.root:add(k).kind)
  end)
end)

describe("keel.kind_info placement flags", function()
  it("tells an inspector where a kind may go", function()
    local ws, tr = keel.kind_info("core:world_settings"), keel.kind_info("core:transform")
    assert.is_true(ws.root_only)
    assert.is_false(ws.not_on_root)
    assert.is_false(tr.root_only)
    assert.is_true(tr.not_on_root)
    keel.kind{ key = "rf:free" }
    local free = keel.kind_info("rf:free")
    assert.is_false(free.root_only)
    assert.is_false(free.not_on_root)
  end)
end)
