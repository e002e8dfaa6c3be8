-- spawner.lua — game:spawner: spawns entities on a timer up to a count (a `many` kind with an entity field).
local keel = require "keel"

keel.kind{
  key = "game:spawner", display = "Spawner", category = "Gameplay",
  version = 1, multiplicity = "many", max = 4,
  requires = { "core:transform" },
  fields = {
    { "prefab",    "string", default = "Drone" },          -- name given to what it spawns
    { "interval",  "float", default = 1, min = 0.01, max = 3600 },
    { "max_count", "int", default = 5, min = 0, max = 10000 },
    { "speed",     "float", default = 2, min = 0, max = 100 },
    { "target",    "entity" },                             -- what the spawned followers chase
    { "spawned",   "int", default = 0, min = 0, readonly = true },
    { "timer",     "float", default = 0, transient = true, hidden = true },
  },
  update = function(self, entity, dt)
    if self.spawned >= self.max_count then return end
    self.timer = self.timer + dt
    if self.timer < self.interval then return end
    self.timer = self.timer - self.interval
    self.spawned = self.spawned + 1
    local here = entity:get("core:transform").position
    -- A fixed direction per spawn: runs are deterministic.
    local a = self.spawned * 2.399963 -- the golden angle
    local spec = {
      name = string.format("%s %d", self.prefab, self.spawned),
      components = {
        { "core:transform", position = here },
        { "game:mover", velocity = { math.cos(a) * self.speed, 0, math.sin(a) * self.speed }, bounds = 20 },
      },
    }
    if self.target then
      spec.components[#spec.components + 1] = { "game:follower", target = self.target, speed = self.speed }
    end
    entity.world:spawn(spec)
  end,
}
