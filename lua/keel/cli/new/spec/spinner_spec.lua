-- spinner_spec.lua — `busted` runs it under keel (see .busted).
local keel = require "keel"
require("keel.kindfiles").load("kinds") -- the project's kinds (a no-op when keel loaded them)

describe("@NS@:spinner", function()
  it("turns by its speed each second, through the @NS@:spin system", function()
    local w = keel.world("test")
    local e = w:spawn{ name = "S", components = { "core:transform", { "@NS@:spinner", speed = 45 } } }
    w:run(60, 1 / 60)
    assert.is_near(45, e:get("@NS@:spinner").angle, 1e-6)
    w:close()
  end)

  it("loads in the project's scene", function()
    local w = assert(keel.load("scenes/main.yaml"))
    assert.are.equal(1, w:count("@NS@:spinner"))
    w:close()
  end)
end)
