-- errors_spec.lua — error objects: shape, __tostring, and one case per code.
local keel = require "keel"

local function catch(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return err
end

keel.kind{ key = "sx:one", fields = { { "n", "int", min = 0, max = 5 }, { "ro", "int", readonly = true } } }
keel.kind{ key = "sx:needs", requires = { "sx:one" }, fields = {} }

describe("errors", function()
  it("are tables with code, message, diagnostics and a __tostring", function()
    local w = keel.world("E")
    local c = w:spawn("e"):add("sx:one")
    local err = catch(function() c.n = 9 end)
    assert.are.equal("InvalidArgument", err.code)
    assert.are.equal("string", type(err.message))
    assert.are.equal(err.code .. ": " .. err.message, tostring(err))
    assert.are.equal(1, #err.diagnostics)
    local d = err.diagnostics[1]
    assert.are.equal("InvalidArgument", d.code)
    assert.are.equal("error", d.severity)
    assert.are.equal("string", type(d.path))
    assert.are.equal(getmetatable(err), getmetatable(catch(function() c.n = -1 end)))
  end)

  it("carry file, line and column from documents", function()
    local w, err = keel.parse("keel: 1\nscene:\n  uuid: not-a-uuid\n  name: X\nentities: []\n")
    assert.is_nil(w)
    assert.are.equal("ParseError", err.code)
    local d = err.diagnostics[1]
    assert.are.equal(3, d.line)
    assert.is_true(d.col > 0)
  end)

  local cases = {
    NotFound = function(w)
      local e = w:spawn("e")
      local c = e:add("sx:one")
      e:remove("sx:one")
      c.n = 1
    end,
    Unsupported = function(w) w:spawn("e"):add("sx:one").ro = 1 end,
    ProtectedEntity = function(w) w.root:destroy() end,
    InvalidOperation = function(w) w:spawn("e"):add("sx:needs") end,
    InvalidArgument = function(w) w:spawn("e"):add("sx:one", { n = true }) end,
    LimitExceeded = function(w)
      local t, e = keel.parse(w:dump(), { limits = { document_size = 10 } })
      error(e)
    end,
    ParseError = function() local _, e = keel.parse("{{{"); error(e) end,
    IOError = function() local _, e = keel.load("/nonexistent/x.yaml"); error(e) end,
  }
  for code, f in pairs(cases) do
    it("raises " .. code, function()
      local err = catch(f, keel.world("C"))
      assert.are.equal("table", type(err), tostring(err))
      assert.are.equal(code, err.code, tostring(err))
      assert.truthy(tostring(err):match("^" .. code .. ": "))
    end)
  end

  it("misuse with wrong Lua types raises InvalidArgument objects", function()
    local w = keel.world("M")
    local e = w:spawn("e")
    for _, f in ipairs{
      function() w:step("fast") end,
      function() w:count(7) end,
      function() e:add({}) end,
      function() e.parent = 5 end,
      function() keel.load(5) end,
      function() keel.parse("x", 5) end,
      function() keel.kind_info(3) end,
      function() w.spawn(e, "x") end,
      function() e.alive(w) end,
      function() w.close(e) end,
      function() keel.world({}) end,
    } do
      local err = catch(f)
      assert.are.equal("InvalidArgument", err.code, tostring(err))
    end
  end)
end)
