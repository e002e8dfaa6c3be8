-- spin.lua — @NS@:spin, an example system: each update turns every @NS@:spinner by its speed.
local keel = require "keel"

keel.system{
  name = "@NS@:spin", phase = "update",
  query = { "@NS@:spinner" },
  each = function(entity, spinner, dt)
    spinner.angle = (spinner.angle + spinner.speed * dt) % 360
  end,
}
