-- match_timer.lua — game:match_timer: a scene-wide rule on the root that counts a match down in fixed steps.
local keel = require "keel"

keel.kind{
  key = "game:match_timer", display = "Match Timer", category = "Rules",
  version = 1, multiplicity = "one", root_only = true,
  fields = {
    { "duration",  "float", default = 120, min = 1, max = 86400 },
    { "remaining", "float", default = 120, min = 0, max = 86400 },
    { "running",   "bool", default = true },
    { "finished",  "bool", readonly = true },
  },
  start = function(self)
    if self.remaining > self.duration then self.remaining = self.duration end
  end,
  fixed_update = function(self, entity, dt)
    if not self.running or self.finished then return end
    self.remaining = math.max(0, self.remaining - dt)
    if self.remaining == 0 then
      self.finished = true
      self.running = false
    end
  end,
}
