-- init.lua — `require "keel"`: the Lua face of keel (the C module keel.core, re-exported).
-- Everything lives in keel.core; DESIGN.md "The Lua face" is the reference and
-- lua/keel/meta.lua annotates it. Notes that the reference leaves to the binding:
--
-- * `self` in a hook (awake, start, fixed_update, update, late_update, on_destroy,
--   validate) is a plain table reused from call to call: the component's fields are
--   copied into it before the call and the ones that changed are written back through
--   the registry afterwards (checked, validated, versioned, rolled back on error).
--   It is only valid during the callback: keep the component with `e:get(kind, slot)`
--   (or `self.entity`, `self.kind`, `self.slot`) instead. Assigning a key that is not a
--   field raises NotFound; self:set{}, self:body(), self:reset(), self:unpack() work.
-- * Outside hooks, `e:get(kind)` returns a keel.Component handle whose field reads and
--   writes go straight through the registry.
-- * `w:warnings()` lists the warning diagnostics of the load that made the world (an
--   array of { code, message, path, file, line, col, severity = "warning" }; empty for
--   keel.world()).
-- * keel.kind{} returns the kind key. Redeclaring a key replaces its behaviour (hot
--   reload) and adopts unknown components held under it.
-- * Iterators (w:entities(), w:each(), w:query()) walk a snapshot taken when the loop
--   starts, skip entities that died meanwhile, and are to-be-closed.
-- * Handles held before a destroy stay stale after an undo restores the entity (same
--   UUID, new handle): look it up again with w:find(uuid).
local core = require "keel.core"
if not core.system then -- keel.system{}, keel.systems(), keel.system_reset(): lua/keel/system.lua
  local system = require "keel.system"
  core.system, core.systems, core.system_reset = system.system, system.systems, system.system_reset
end
-- keel.serve(w, opts): the live channel over HTTP (lua/keel/serve.lua)
if not core.serve then core.serve = function(...) return require "keel.serve".serve(...) end end
-- keel.quat.from_euler / to_euler: rotations in degrees (lua/keel/quat.lua)
if not core.quat then core.quat = require "keel.quat" end
return core
