-- match_timer.lua — game:match_timer: a scene-wide rule on the root that ends the match after its
-- duration: a world timer (w:after) broadcasts "match_over"; `remaining` counts down in fixed steps.
local keel = require "keel"

keel.kind{
  key = "game:match_timer", display = "Match Timer", category = "Rules",
  version = 1, multiplicity = "one", root_only = true,
  fields = {
    { "duration",  "float", default = 120, min = 1, max = 86400 },
    { "remaining", "float", default = 120, min = 0, max = 86400 },  -- what a HUD shows and a save keeps
    { "running",   "bool", default = true },   -- false: the match has not begun (nothing counts, nothing ends it)
    { "finished",  "bool", readonly = true },
  },
  -- A timer is not saved (a Lua function cannot be): the field is, and a resumed game arms a
  -- new timer from what it says.
  start = function(self, entity)
    if self.remaining > self.duration then self.remaining = self.duration end
    if not self.running or self.finished then return end
    local duration = self.duration -- self is only valid during this call: the timer keeps a copy
    entity.world:after(self.remaining, function(w)
      w:broadcast("match_over", { duration = duration })
    end)
  end,
  fixed_update = function(self, entity, dt)
    if not self.running or self.finished then return end
    self.remaining = math.max(0, self.remaining - dt)
  end,
  -- every component with on_message hears the broadcast, this one too: only a hook of the kind
  -- may write its readonly `finished`
  on_message = function(self, entity, name)
    if name == "match_over" then
      self.finished = true
      self.running = false
      self.remaining = 0
    end
  end,
}
