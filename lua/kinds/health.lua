-- health.lua — game:health: hit points that regenerate over time (a `one` kind that requires a transform).
local keel = require "keel"

keel.kind{
  key = "game:health", display = "Health", category = "Gameplay",
  version = 1, multiplicity = "one",
  requires = { "core:transform" },
  fields = {
    { "value", "float", default = 100, min = 0, max = 10000 },
    { "max",   "float", default = 100, min = 1, max = 10000 },
    { "regen", "float", default = 0, min = 0, max = 1000 },   -- per second
    { "dead",  "bool", readonly = true },
  },
  -- value never exceeds max: a write that would is refused.
  validate = function(self, field)
    if field == "value" and self.value > self.max then
      return false, "value must not exceed max"
    end
    return true
  end,
  update = function(self, entity, dt)
    if self.dead then return end
    if self.regen > 0 and self.value < self.max then
      self.value = math.min(self.max, self.value + self.regen * dt)
    end
    if self.value <= 0 then self.dead = true end
  end,
}
