-- mcp_spec.lua — `keel mcp SCENE`: the live channel as MCP tools, driven over the program's stdin/stdout.

local H = require "helper"
local json = require "keel.json"

local KEEL = H.find_keel()
local DEMO = H.ROOT .. "/scenes/demo.yaml"
local null = json.null

local function encode(t) return json.encode(t) end
local function decode(s)
  local v, err = json.decode(s)
  if v == nil then error("not JSON: " .. tostring(err) .. ": " .. s) end
  return v
end

-- Feeds the lines to `keel mcp SCENE` and returns its exit code, the decoded answers (one per
-- stdout line, in order) and stderr.
local function session(lines, scene)
  local input = {}
  for i, l in ipairs(lines) do input[i] = type(l) == "string" and l or encode(l) end
  local code, out, err = H.run_keel(KEEL, "mcp " .. H.shell_quote(scene or DEMO), table.concat(input, "\n") .. "\n")
  local answers = {}
  for line in out:gmatch("[^\n]+") do answers[#answers + 1] = decode(line) end
  return code, answers, err
end

local function req(id, method, params) return { jsonrpc = "2.0", id = id, method = method, params = params } end
local function call(id, name, args) return req(id, "tools/call", { name = name, arguments = args }) end
local INIT = req(0, "initialize", { protocolVersion = "2025-06-18", capabilities = {},
  clientInfo = { name = "spec", version = "1" } })
local INITIALIZED = { jsonrpc = "2.0", method = "notifications/initialized" }

-- A tool answer's one text content, decoded.
local function content(answer)
  assert.is_table(answer.result, "a result expected: " .. encode(answer))
  local c = answer.result.content
  assert.are.equal(1, #c)
  assert.are.equal("text", c[1].type)
  return decode(c[1].text), answer.result.isError
end

local function tool(tools, name)
  for _, t in ipairs(tools) do if t.name == name then return t end end
end

local function variant(schema, kind)
  for _, v in ipairs(schema.anyOf or {}) do if v.title == kind then return v end end
end

describe("keel mcp", function()
  it("initializes: the client's protocol version when supported, tools, serverInfo; notifications get no answer", function()
    local code, a = session({ INIT, INITIALIZED, req(1, "ping"),
      req(2, "initialize", { protocolVersion = "1999-01-01", capabilities = {}, clientInfo = { name = "x", version = "1" } }) })
    assert.are.equal(0, code)
    assert.are.equal(3, #a) -- nothing for the notification
    assert.are.equal(0, a[1].id)
    assert.are.equal("2025-06-18", a[1].result.protocolVersion)
    assert.is_table(a[1].result.capabilities.tools)
    assert.are.equal("keel", a[1].result.serverInfo.name)
    assert.is_string(a[1].result.serverInfo.version)
    assert.are.equal(1, a[2].id)
    assert.are.same({}, a[2].result)
    -- an unknown version: the server answers with the newest it speaks
    assert.are.equal("2025-11-25", a[3].result.protocolVersion)
  end)

  it("lists one tool per channel method, named with _ for ., each with an object inputSchema", function()
    local _, a = session({ INIT, INITIALIZED, req(1, "tools/list") })
    local tools = a[2].result.tools
    for _, m in ipairs { "world.info", "object.list", "object.get", "component.kinds", "component.get",
      "component.set", "component.add", "component.remove", "component.enable", "object.spawn", "object.destroy",
      "object.reparent", "object.rename", "history.undo", "history.redo", "world.pause", "world.resume",
      "world.step", "world.save", "world.errors" } do
      local t = tool(tools, (m:gsub("%.", "_")))
      assert.is_table(t, "no tool for " .. m)
      assert.is_string(t.description)
      assert.are.equal("object", t.inputSchema.type)
      assert.is_false(t.inputSchema.additionalProperties)
    end
    assert.is_true(tool(tools, "object_list").annotations.readOnlyHint)
    assert.is_false(tool(tools, "component_set").annotations.readOnlyHint)
    assert.is_true(tool(tools, "object_destroy").annotations.destructiveHint)
    local list = tool(tools, "object_list").inputSchema
    assert.are.equal("integer", list.properties.limit.type)
    assert.are.equal(1000, list.properties.limit.maximum)
    assert.are.equal("string", list.properties.parent.type)
    assert.are.same({}, list.required)
    assert.are.same({ "object" }, tool(tools, "object_get").inputSchema.required)
  end)

  it("builds component_set's schema from the kinds' fields: types, ranges, enum choices, vectors", function()
    local _, a = session({ INIT, req(1, "tools/list") })
    local set = tool(a[2].result.tools, "component_set").inputSchema
    table.sort(set.required)
    assert.are.same({ "fields", "kind", "object" }, set.required)
    local kinds = {}
    for _, k in ipairs(set.properties.kind.enum) do kinds[k] = true end
    assert.is_true(kinds["game:health"] and kinds["core:transform"])

    local health = assert(variant(set.properties.fields, "game:health"))
    assert.are.same({ type = "number", minimum = 0, maximum = 10000, default = 100 }, health.properties.value)
    assert.is_nil(health.properties.dead) -- readonly: never writable
    assert.is_false(health.additionalProperties)

    local light = assert(variant(set.properties.fields, "core:point_light"))
    assert.are.equal(0, light.properties.range.exclusiveMinimum) -- range > 0
    assert.is_nil(light.properties.range.minimum)
    assert.are.equal(0, light.properties.intensity.minimum)
    assert.are.equal("number", light.properties.color.items.type)
    assert.are.equal(0, light.properties.color.items.minimum) -- a vector's bounds hold for each member
    assert.are.equal(4, light.properties.color.minItems)

    local audio = assert(variant(set.properties.fields, "core:audio_source"))
    assert.are.equal("string", audio.properties.bus.type)
    assert.is_true(#audio.properties.bus.enum > 1)
    assert.are.same({ "string", "null" }, audio.properties.clip.type)

    local t = assert(variant(set.properties.fields, "core:transform"))
    assert.are.same({ type = "array", items = { type = "number" }, minItems = 3, maxItems = 3, default = { 0, 0, 0 } },
      t.properties.position)
    -- component_add's body: the same schemas
    local add = tool(a[2].result.tools, "component_add").inputSchema
    assert.is_table(variant(add.properties.body, "game:health"))
  end)

  it("calls tools: results as JSON text, edits recorded for undo", function()
    local code, a = session({ INIT, INITIALIZED,
      call(1, "object_list", { name = "Player" }),
      call(8, "component_get", { object = "Player", kind = "game:health" }),
      call(2, "component_set", { object = "Player", kind = "game:health", fields = { value = 42.5 } }),
      call(3, "component_get", { object = "Player", kind = "game:health" }),
      call(4, "history_undo"),
      call(5, "component_get", { object = "Player", kind = "game:health" }),
      call(6, "history_undo"),
      call(7, "world_info", null),
    })
    assert.are.equal(0, code)
    local list, err = content(a[2])
    assert.is_false(err)
    assert.are.equal(1, list.total)
    assert.are.equal("Player", list.entities[1].name)
    assert.are.equal(1, a[2].id)
    local before = content(a[3]).body.value
    assert.are_not.equal(42.5, before)
    local set = content(a[4])
    assert.is_number(set.version)
    assert.are.equal(42.5, content(a[5]).body.value)
    local undone = content(a[6])
    assert.is_truthy(undone)
    assert.are.equal(before, content(a[7]).body.value)
    assert.is_false(content(a[8])) -- nothing left to undo
    local info = content(a[9])
    assert.are.equal("Demo", info.name)
    assert.is_true(info.paused)
  end)

  it("reports a failing call as isError with the channel's error (code, message, data.code)", function()
    local _, a = session({ INIT,
      call(0, "component_get", { object = "Player", kind = "game:health" }),
      call(1, "component_set", { object = "Player", kind = "game:health", fields = { value = 20000 } }),
      call(2, "object_get", { object = "Nobody" }),
      call(3, "object_list", { limit = 5000 }),
      call(4, "object_get", {}),
      call(5, "component_get", { object = "Player", kind = "game:health" }),
    })
    local before = content(a[2]).body.value
    local range, isError = content(a[3])
    assert.is_true(isError)
    assert.are.equal(-32000, range.code)
    assert.are.equal("InvalidArgument", range.data.code)
    assert.is_string(range.message)
    local missing, isError2 = content(a[4])
    assert.is_true(isError2)
    assert.are.equal("NotFound", missing.data.code)
    local limit, isError3 = content(a[5])
    assert.is_true(isError3)
    assert.are.equal(-32602, limit.code)
    assert.are.equal(-32602, (content(a[6])).code)
    assert.are.equal(before, content(a[7]).body.value) -- the refused write changed nothing
  end)

  it("answers protocol errors as JSON-RPC errors: unknown tool, unknown method, parse error, bad request", function()
    local code, a = session({ INIT,
      call(1, "no_such_tool", {}),
      req(2, "resources/list"),
      "{not json",
      encode({ jsonrpc = "1.0", id = 3, method = "tools/list" }),
      req(4, "tools/call", { arguments = {} }),
      encode({ jsonrpc = "2.0", id = 9, result = {} }), -- a client's answer: nothing to say
    })
    assert.are.equal(0, code)
    assert.are.equal(6, #a)
    assert.are.equal(1, a[2].id)
    assert.are.equal(-32602, a[2].error.code)
    assert.are.equal(-32601, a[3].error.code)
    assert.are.equal(-32700, a[4].error.code)
    assert.are.equal(null, a[4].id)
    assert.are.equal(-32600, a[5].error.code)
    assert.are.equal(-32602, a[6].error.code)
  end)

  it("refuses an id that is an object or a boolean, and JSON nested too deep (-32600)", function()
    local code, a = session({ INIT,
      '{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}',
      '{"jsonrpc":"2.0","id":true,"method":"ping"}',
      req(5, "ping"),
      '{"jsonrpc":"2.0","id":6,"method":"ping","params":{"a":' .. ("["):rep(200) .. ("]"):rep(200) .. '}}',
    })
    assert.are.equal(0, code)
    assert.are.equal(5, #a)
    assert.are.equal(-32600, a[5].error.code)
    assert.truthy(a[5].error.message:find("nesting too deep", 1, true), a[5].error.message)
    for i = 2, 3 do
      assert.are.equal(-32600, a[i].error.code)
      assert.are.equal(null, a[i].id)
    end
    assert.are.equal(5, a[4].id)
  end)

  it("steps the paused world only when asked", function()
    local _, a = session({ INIT,
      call(1, "world_info"), call(2, "world_step", { frames = 3 }), call(3, "world_info"),
      call(4, "world_step", { frames = 0 }),
    })
    assert.are.equal(0, content(a[2]).frame)
    assert.are.equal(3, content(a[3]).frame)
    assert.are.equal(3, content(a[4]).frame)
    assert.is_nil(content(a[2]).frame_ms) -- no step yet
    assert.is_true(content(a[4]).frame_ms >= 0) -- how long the last step took, in ms
    local _, isError = content(a[5])
    assert.is_true(isError)
  end)

  it("keeps stdout for the protocol: what the world's scripts print goes to stderr", function()
    local dir = H.tmpdir()
    os.execute("mkdir " .. H.shell_quote(dir .. "/kinds"))
    H.spit(dir .. "/kinds/noisy.lua", [[
local keel = require "keel"
keel.kind{ key = "spec:noisy", fields = { { "n", "int" } },
  update = function(self) print("noisy update", self.n); io.write("written\n"); self.n = self.n + 1 end }
]])
    H.spit(dir .. "/noisy.yaml", H.doc_of(H.ent(H.U1, "Talker", nil, H.comp("spec:noisy", "{n: 0}"))))
    local code, out, err = H.run_keel(KEEL, "mcp --kinds " .. H.shell_quote(dir .. "/kinds") .. " "
      .. H.shell_quote(dir .. "/noisy.yaml"), table.concat({ encode(INIT),
        encode(call(1, "world_step", { frames = 2 })),
        encode(call(2, "component_get", { object = "Talker", kind = "spec:noisy" })) }, "\n") .. "\n")
    H.rmrf(dir)
    assert.are.equal(0, code)
    local lines = {}
    for line in out:gmatch("[^\n]+") do lines[#lines + 1] = decode(line) end
    assert.are.equal(3, #lines) -- nothing but the answers
    assert.are.equal(2, content(lines[3]).body.n)
    assert.matches("noisy update\t0\nwritten\nnoisy update\t1\nwritten\n", err)
  end)

  it("needs exactly one scene, and says so on stderr with exit code 2", function()
    local code, out, err = H.run_keel(KEEL, "mcp", "")
    assert.are.equal(2, code)
    assert.are.equal("", out)
    assert.matches("mcp: expected one SCENE", err)
    code, out, err = H.run_keel(KEEL, "mcp a.yaml b.yaml", "")
    assert.are.equal(2, code)
    assert.matches("mcp: expected one SCENE", err)
    -- a scene that cannot be loaded: said on stderr, nothing on stdout
    code, out, err = H.run_keel(KEEL, "mcp " .. H.shell_quote(H.ROOT .. "/no/such/scene.yaml"), "")
    assert.are_not.equal(0, code)
    assert.are.equal("", out)
    assert.matches("scene.yaml", err)
  end)
end)
