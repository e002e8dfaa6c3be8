-- spinner.lua — @NS@:spinner, an example kind: data only (the @NS@:spin system turns it).
local keel = require "keel"

keel.kind{
  key = "@NS@:spinner", display = "Spinner", category = "Gameplay",
  version = 1, multiplicity = "one",
  requires = { "core:transform" },
  fields = {
    { "speed", "float", default = 90 },  -- degrees per second
    { "angle", "float", default = 0 },   -- degrees, in [0, 360)
  },
}
