-- mover.lua — game:mover: a velocity and the box it bounces in (data only: the game:movement system moves it).
local keel = require "keel"

keel.kind{
  key = "game:mover", display = "Mover", category = "Gameplay",
  version = 1, multiplicity = "one",
  requires = { "core:transform" },
  fields = {
    { "velocity", "vec3", default = { 0, 0, 0 } },
    { "bounds",   "float", default = 0, min = 0 },   -- half-extent of the box it stays in; 0: none
  },
}
