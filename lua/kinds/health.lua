-- health.lua — game:health: hit points that regenerate over time and react to "damage" and "heal"
-- messages (a `one` kind that requires a transform); a death is broadcast as "died".
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
    if self.value <= 0 then -- written to 0 directly (a console, another kind): the same news
      self.dead = true
      entity.world:broadcast("died", { entity = entity })
    end
  end,
  -- e:send("damage", { amount = 5, from = attacker }) / e:send("heal", { amount = 5 })
  on_message = function(self, entity, name, data)
    if self.dead or type(data) ~= "table" or type(data.amount) ~= "number" then return end
    if name == "damage" then
      self.value = math.max(0, self.value - data.amount)
      if self.value == 0 then
        self.dead = true
        entity.world:broadcast("died", { entity = entity, by = data.from })
      end
    elseif name == "heal" then
      self.value = math.min(self.max, self.value + data.amount)
    end
  end,
}
