-- progress_spec.lua — the status line of a long load: shown on a terminal (or with
-- KEEL_PROGRESS=1) by check, cook, run and keel.load; never when stderr is not a terminal.

local H = require "helper"
local shell_quote, slurp, spit, tmpdir, rmrf = H.shell_quote, H.slurp, H.spit, H.tmpdir, H.rmrf

local KEEL = H.find_keel()

-- The keel program with `env` (VAR=value ...) in `cwd`; returns exit code, stdout, stderr.
local function keel_env(env, args, cwd)
  local out, err = os.tmpname(), os.tmpname()
  local _, _, code = os.execute("cd " .. shell_quote(cwd) .. " && " .. env .. " " .. H.NO_PRELOAD
    .. shell_quote(KEEL) .. " " .. args .. " >" .. out .. " 2>" .. err .. " </dev/null")
  local o, e = slurp(out) or "", slurp(err) or ""
  os.remove(out)
  os.remove(err)
  return code, o, e
end

-- As a terminal sees it: `keel ARGS` under script(1), stdout and stderr together.
local function keel_tty(env, args, cwd)
  local ok = os.execute("cd " .. shell_quote(cwd) .. " && " .. H.NO_PRELOAD .. "script -qec "
    .. shell_quote(env .. " " .. shell_quote(KEEL) .. " " .. args) .. " /dev/null >tty.txt 2>&1")
  local text = slurp(cwd .. "/tty.txt")
  assert.is_true(ok == true or ok == 0, text)
  return text
end

-- 3,000 entities as keel writes them (the root first, so each is built as it is read): ~400 KB.
local function mid_scene(d)
  local ents = {}
  for i = 1, 3000 do
    ents[i] = H.ent(string.format("00000000-0000-4000-8000-%012d", i), "E" .. i, nil,
      H.comp("core:transform", "{ position: [1, 2, 3] }"))
  end
  spit(d .. "/mid.yaml", H.HEAD .. "root: []\nentities:\n" .. table.concat(ents))
end

local LIVE = "\r\27%[Kreading mid%.yaml: ([%d.]+) of ([%d.]+) MB %((%d+)%%%), (%d+) entities, [%d.]+ MB/s"
local FINAL = "\r\27%[Kmid%.yaml: 0%.%d MB read in [%d.]+ s %([%d.]+ MB/s%), 3000 entities\n"

-- The lines a load drew: the start, live lines with percents that only go up, the end.
local function check_lines(err)
  assert.matches("\rreading mid.yaml (0.", err, 1, true)
  local percents, entities = {}, {}
  for _, _, p, e in err:gmatch(LIVE) do
    percents[#percents + 1] = tonumber(p)
    entities[#entities + 1] = tonumber(e)
  end
  assert.is_true(#percents >= 3, err)
  for i = 2, #percents do
    assert.is_true(percents[i] > percents[i - 1], err)
    assert.is_true(entities[i] >= entities[i - 1], err)
  end
  assert.is_true(percents[#percents] < 100 and entities[#entities] > 0 and entities[#entities] < 3000, err)
  assert.matches(FINAL, err)
  assert.are.equal(#err, select(2, err:find(FINAL))) -- the end line is the last thing written
end

describe("the load status line", function()
  local d
  before_each(function()
    d = tmpdir()
    mid_scene(d)
  end)
  after_each(function() rmrf(d) end)

  it("keel check: bytes read of the total, percent, entities built and rate, redrawn in place", function()
    local code, out, err = keel_env("KEEL_PROGRESS=1", "check mid.yaml", d)
    assert.are.equal(0, code, err)
    assert.are.equal("", out)
    check_lines(err)
  end)

  it("keel cook, keel run and keel.load in a script show it too", function()
    local code, out, err = keel_env("KEEL_PROGRESS=1", "cook mid.yaml -o mid.keelc", d)
    assert.are.equal(0, code, err)
    assert.matches("wrote mid.keelc: 3000 entities", out, 1, true)
    check_lines(err)
    code, out, err = keel_env("KEEL_PROGRESS=1", "run mid.yaml --frames 1", d)
    assert.are.equal(0, code, err)
    check_lines(err)
    spit(d .. "/load.lua", 'local w = assert(require("keel").load("mid.yaml"))\nprint("loaded")\n')
    code, out, err = keel_env("KEEL_PROGRESS=1", "load.lua", d)
    assert.are.equal(0, code, err)
    assert.are.equal("loaded\n", out)
    check_lines(err)
    -- a cooked file: its start and its end, no live line
    code, out, err = keel_env("KEEL_PROGRESS=1", "check mid.keelc", d)
    assert.are.equal(0, code, err)
    assert.matches("\rreading mid.keelc (", err, 1, true)
    assert.matches("\r\27%[Kmid%.keelc: [%d.]+ MB read in [%d.]+ s %([%d.]+ MB/s%), 3000 entities\n$", err)
  end)

  it("a load that fails ends its line before the diagnostics", function()
    local text = slurp(d .. "/mid.yaml")
    spit(d .. "/mid.yaml", text .. "  - uuid: nope\n")
    local code, _, err = keel_env("KEEL_PROGRESS=1", "check mid.yaml", d)
    assert.are.equal(1, code, err)
    local final = err:find("\r\27[Kmid.yaml: 0.", 1, true)
    local diag = err:find("mid.yaml:%d+:%d+: error")
    assert.is_truthy(final, err)
    assert.is_truthy(diag, err)
    assert.is_true(final < diag, err)
  end)

  it("is never shown when stderr is not a terminal, nor with KEEL_PROGRESS=0", function()
    for _, args in ipairs{ "check mid.yaml", "cook mid.yaml -o mid.keelc", "run mid.yaml --frames 1" } do
      local code, _, err = keel_env("", args, d)
      assert.are.equal(0, code, err)
      assert.is_nil(err:find("reading", 1, true), err)
      assert.is_nil(err:find("\r", 1, true), err)
    end
    -- a terminal, a big file, and KEEL_PROGRESS=0: still nothing
    local pad = ("# " .. ("x"):rep(98) .. "\n"):rep(110000) -- 11 MB of comments: quick to read
    spit(d .. "/big.yaml", pad .. slurp(d .. "/mid.yaml"))
    local tty = keel_tty("KEEL_PROGRESS=0", "check big.yaml", d)
    assert.is_nil(tty:find("reading", 1, true), tty)
    -- and without it, the live line on the terminal
    tty = keel_tty("", "check big.yaml", d)
    assert.matches("\rreading big.yaml (11.", tty, 1, true)
    assert.matches("\r\27%[Kreading big%.yaml: [%d.]+ of 11%.%d MB %(%d+%%%), %d+ entities", tty)
    assert.matches("big%.yaml: 11%.%d MB read in [%d.]+ s %([%d.]+ MB/s%), 3000 entities", tty)
  end)
end)
