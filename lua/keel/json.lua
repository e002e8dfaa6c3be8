-- json.lua — `require "keel.json"` before keel.core is loaded. The codec is C (bindings/channel/
-- lua_json.c): loading keel.core registers keel.json in package.preload, which require then
-- finds before this file; this file only covers the first require coming first.
require "keel.core"
return package.preload["keel.json"]("keel.json", ":preload:")
