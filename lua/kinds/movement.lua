-- movement.lua — game:movement: a system (a kind file may hold only systems) that moves every
-- entity with a game:mover and a core:transform by its velocity each update, bouncing inside bounds.
local keel = require "keel"

keel.system{
  name = "game:movement", phase = "update",
  query = { "game:mover", "core:transform" },
  -- one call per matching entity, in run order; the components in query order, then dt
  each = function(entity, mover, transform, dt)
    local p, v = transform.position, mover.velocity
    local b = mover.bounds
    local bounced = false
    for i = 1, 3 do
      p[i] = p[i] + v[i] * dt
      if b > 0 and (p[i] > b or p[i] < -b) then
        p[i] = math.max(-b, math.min(b, p[i]))
        v[i] = -v[i]
        bounced = true
      end
    end
    transform.position = p
    if bounced then mover.velocity = v end
  end,
}
