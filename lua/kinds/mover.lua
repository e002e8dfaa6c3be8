-- mover.lua — game:mover: moves the entity's core:transform by a velocity every update, bouncing inside bounds.
local keel = require "keel"

keel.kind{
  key = "game:mover", display = "Mover", category = "Gameplay",
  version = 1, multiplicity = "one",
  requires = { "core:transform" },
  fields = {
    { "velocity", "vec3", default = { 0, 0, 0 } },
    { "bounds",   "float", default = 0, min = 0 },   -- half-extent of the box it stays in; 0: none
  },
  update = function(self, entity, dt)
    local t = entity:get("core:transform")
    local p, v = t.position, self.velocity
    local b = self.bounds
    local bounced = false
    for i = 1, 3 do
      p[i] = p[i] + v[i] * dt
      if b > 0 and (p[i] > b or p[i] < -b) then
        p[i] = math.max(-b, math.min(b, p[i]))
        v[i] = -v[i]
        bounced = true
      end
    end
    t.position = p
    if bounced then self.velocity = v end
  end,
}
