-- spot.lua — game:spot: a spot light's cone, stored as the cosine a shader wants (cos_cone, what
-- systems read) and shown and saved in degrees (cone, a derived field: get/set, no storage).
local keel = require "keel"

keel.kind{
  key = "game:spot", display = "Spot Cone", category = "Rendering",
  tooltip = "A spot light's cone: edited in degrees, kept as the cosine of its half angle",
  fields = {
    { "cos_cone", "float", runtime = true, hidden = true,
      tooltip = "cos(cone / 2): what a shader compares against" },
    { "cone", "float", min = 1, max = 179, default = 45,
      tooltip = "Cone angle in degrees (1..179)",
      get = function(self) return math.deg(math.acos(self.cos_cone)) * 2 end,
      set = function(self, deg) self.cos_cone = math.cos(math.rad(deg / 2)) end },
  },
}
