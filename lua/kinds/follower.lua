-- follower.lua — game:follower: after everything moved (late_update), steps toward a target entity;
-- once a second (a timer the entity owns), bites a target within reach by sending it "damage".
local keel = require "keel"

local REACH = 0.5 -- how much farther than `distance` a bite reaches

-- The timer's callback: it gets the entity, not the component (a timer is not a hook).
local function bite(entity)
  local f = entity:get("game:follower")
  if not f or not f.enabled or f.bite <= 0 then return end
  local target = f.target
  local tt = target and target:get("core:transform")
  if not tt then return end
  local p, q = entity:get("core:transform").position, tt.position
  local dx, dy, dz = q.x - p.x, q.y - p.y, q.z - p.z
  if dx * dx + dy * dy + dz * dz <= (f.distance + REACH) ^ 2 then
    target:send("damage", { amount = f.bite, from = entity }) -- delivered at the end of this phase
  end
end

keel.kind{
  key = "game:follower", display = "Follower", category = "Gameplay",
  version = 1, multiplicity = "one",
  requires = { "core:transform" },
  fields = {
    { "target",   "entity" },
    { "speed",    "float", default = 2, min = 0, max = 100 },
    { "distance", "float", default = 1, min = 0, max = 1000 },  -- stops this close
    { "bite",     "float", default = 0, min = 0, max = 1000 },  -- damage per second to a target in reach
  },
  -- Timers are runtime state (never saved): each run arms its own, here.
  start = function(self, entity)
    entity:every(1, bite) -- owned by the entity: cancelled when it is destroyed
  end,
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
