-- movement.lua — game:movement: a system (a kind file may hold only systems) that moves every
-- entity with a game:mover and a core:transform by its velocity each update, bouncing inside bounds.
local keel = require "keel"

keel.system{
  name = "game:movement", phase = "update",
  query = { "game:mover", "core:transform" },
  writes = { "game:mover", "core:transform" }, -- what is read back after each batch
  -- one call per batch of entities: each kind's fields as arrays (mover.velocity[i]), then dt
  columns = function(n, mover, transform, dt)
    local position, velocity, bounds = transform.position, mover.velocity, mover.bounds
    for i = 1, n do
      local p, v, b = position[i], velocity[i], bounds[i]
      for k = 1, 3 do
        p[k] = p[k] + v[k] * dt
        if b > 0 and (p[k] > b or p[k] < -b) then
          p[k] = math.max(-b, math.min(b, p[k]))
          v[k] = -v[k]
        end
      end
    end
  end,
}
