-- stamina.lua — game:stamina, as DESIGN.md declares it: drains while sprinting.
local keel = require "keel"

keel.kind{
  key = "game:stamina", display = "Stamina", category = "Gameplay",
  version = 1, multiplicity = "one",
  requires = { "core:transform" }, rejects = {},
  fields = {
    { "value", "float", default = 100, min = 0, max = 100 },
    { "max",   "float", default = 100, min = 1, max = 500 },
    { "sprinting", "bool" },
    { "mode", "enum", choices = { "walk", "run" }, default = "walk" },
  },
  update = function(self, entity, dt)
    if self.sprinting then
      self.value = math.max(0, self.value - 20 * dt)
      if self.value == 0 then self.sprinting = false end
    elseif self.value < self.max then
      self.value = math.min(self.max, self.value + 10 * dt)
    end
  end,
}
