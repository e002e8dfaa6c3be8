-- helper.lua — file and process helpers shared by the specs (not a spec: busted runs *_spec.lua).
-- Load it with: dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helper.lua")
local H = {}

-- The repository root: this file lives in <root>/spec/.
local ROOT = (debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$")) or "."
if ROOT:sub(1, 1) ~= "/" then
  local pwd = os.getenv("PWD") or "."
  ROOT = (ROOT == "." and pwd) or (pwd .. "/" .. ROOT)
end
H.ROOT = ROOT

function H.shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

function H.file_exists(p)
  local f = io.open(p, "rb")
  if f then f:close() return true end
  return false
end

-- KEEL_BIN, else the keel program running this spec (`keel busted spec`:
-- arg[-1]), else the newest build*/keel.
function H.find_keel()
  local bin = os.getenv("KEEL_BIN")
  if bin and bin ~= "" then return bin end
  local self = rawget(_G, "arg") and arg[-1]
  if type(self) == "string" and self:match("/keel$") and H.file_exists(self) then
    -- absolute: specs run it from other directories
    if self:sub(1, 1) ~= "/" then self = os.getenv("PWD") .. "/" .. self end
    return self
  end
  local p = io.popen("ls -1t " .. H.shell_quote(ROOT) .. "/build*/keel 2>/dev/null")
  local found = p:read("l")
  p:close()
  return found
end

function H.slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

function H.spit(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

function H.tmpdir()
  local p = io.popen("mktemp -d")
  local d = p:read("l")
  p:close()
  return d
end

function H.rmrf(d)
  if d and d:match("^/tmp/") then os.execute("rm -rf " .. H.shell_quote(d)) end
end

-- Runs f and checks it raised a keel error object with this code; returns the object.
local assert = require "luassert"
-- Runs the keel program `bin` with `args` (a shell-quoted string built by the
-- caller), stdin from `input` when given, in `cwd` when given.
-- Returns exit code, stdout, stderr.
function H.run_keel(bin, args, input, cwd)
  local out, err = os.tmpname(), os.tmpname()
  local cmd = H.shell_quote(bin) .. " " .. args .. " >" .. out .. " 2>" .. err
  local inp
  if input then
    inp = os.tmpname()
    H.spit(inp, input)
    cmd = cmd .. " <" .. inp
  else
    cmd = cmd .. " </dev/null"
  end
  if cwd then cmd = "cd " .. H.shell_quote(cwd) .. " && " .. cmd end
  local _, _, code = os.execute(cmd)
  local o, e = H.slurp(out) or "", H.slurp(err) or ""
  os.remove(out)
  os.remove(err)
  if inp then os.remove(inp) end
  return code, o, e
end

function H.fails(code, f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected a " .. code .. " error")
  assert.are.equal("table", type(err), "error objects are tables: " .. tostring(err))
  assert.are.equal(code, err.code, tostring(err))
  return err
end

return H
