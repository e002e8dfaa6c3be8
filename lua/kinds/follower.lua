-- follower.lua — game:follower: after everything moved (late_update), steps toward a target entity.
local keel = require "keel"

keel.kind{
  key = "game:follower", display = "Follower", category = "Gameplay",
  version = 1, multiplicity = "one",
  requires = { "core:transform" },
  fields = {
    { "target",   "entity" },
    { "speed",    "float", default = 2, min = 0, max = 100 },
    { "distance", "float", default = 1, min = 0, max = 1000 },  -- stops this close
  },
  late_update = function(self, entity, dt)
    local target = self.target
    if not target then return end
    local tt = target:get("core:transform")
    if not tt then return end
    local t = entity:get("core:transform")
    local p, q = t.position, tt.position
    local dx, dy, dz = q[1] - p[1], q[2] - p[2], q[3] - p[3]
    local d = math.sqrt(dx * dx + dy * dy + dz * dz)
    if d <= self.distance or d == 0 then return end
    local s = math.min(self.speed * dt, d - self.distance) / d
    t.position = { p[1] + dx * s, p[2] + dy * s, p[3] + dz * s }
  end,
}
