-- init.lua — `require "keel"`: the Lua face of keel (the C module keel.core, re-exported).
-- Everything lives in keel.core; see DESIGN.md "The Lua face" and lua/keel/meta.lua.
local core = require "keel.core"
return core
