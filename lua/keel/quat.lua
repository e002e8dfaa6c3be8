-- quat.lua — keel.quat: rotations in degrees. Euler angles are applied in Z, X, Y order about
-- fixed axes, as Unity's inspector shows them: q = qY * qX * qZ. Quaternions are { x, y, z, w }
-- arrays (what a quat field reads as), returned canonical (unit length, w >= 0).
require "keel.core" -- which registers keel.core.errors
local invalid = require "keel.core.errors".invalid
local M = {}

local rad, deg = math.rad, math.deg
local sin, cos, asin, atan, sqrt, abs = math.sin, math.cos, math.asin, math.atan, math.sqrt, math.abs

local function mul(a, b)
  return {
    a[4] * b[1] + a[1] * b[4] + a[2] * b[3] - a[3] * b[2],
    a[4] * b[2] - a[1] * b[3] + a[2] * b[4] + a[3] * b[1],
    a[4] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[4],
    a[4] * b[4] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
  }
end

local function bad(msg) invalid("quat: " .. msg) end

local function finite(v) return type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge end

-- A quaternion at unit length with w >= 0 (q and -q are the same rotation; files keep one).
function M.canonical(q)
  if type(q) ~= "table" then bad("a quaternion { x, y, z, w } expected, got " .. type(q)) end
  local x, y, z, w = q[1] or q.x, q[2] or q.y, q[3] or q.z, q[4] or q.w
  for _, v in ipairs { x or false, y or false, z or false, w or false } do
    if not finite(v) then bad("a quaternion needs four finite numbers") end
  end
  local len = sqrt(x * x + y * y + z * z + w * w)
  if not (len > 0) then bad("a zero quaternion cannot be normalized") end
  if w < 0 or (w == 0 and 1 / w < 0) then len = -len end
  return { x / len, y / len, z / len, w / len }
end

-- keel.quat.from_euler(x, y, z) (or one table { x, y, z }): degrees -> quaternion.
function M.from_euler(x, y, z)
  if type(x) == "table" then x, y, z = x[1] or x.x, x[2] or x.y, x[3] or x.z end
  if not (finite(x) and finite(y) and finite(z)) then bad("from_euler: three finite angles in degrees expected") end
  local hx, hy, hz = rad(x) / 2, rad(y) / 2, rad(z) / 2
  local qx = { sin(hx), 0, 0, cos(hx) }
  local qy = { 0, sin(hy), 0, cos(hy) }
  local qz = { 0, 0, sin(hz), cos(hz) }
  return M.canonical(mul(mul(qy, qx), qz))
end

-- keel.quat.to_euler(q) -> x, y, z in degrees (x in [-90, 90], y and z in (-180, 180]); at
-- x = ±90 (gimbal lock) z is 0 and y carries the rest.
function M.to_euler(q)
  q = M.canonical(q)
  local x, y, z, w = q[1], q[2], q[3], q[4]
  local m12 = 2 * (y * z - x * w)
  local m02, m22 = 2 * (x * z + y * w), 1 - 2 * (x * x + y * y)
  local m10, m11 = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z)
  local m00, m20 = 1 - 2 * (y * y + z * z), 2 * (x * z - y * w)
  local s = -m12
  if s > 1 then s = 1 elseif s < -1 then s = -1 end
  local ax, ay, az
  if abs(s) > 1 - 1e-9 then
    ax, ay, az = asin(s), atan(-m20, m00), 0
  else
    ax, ay, az = asin(s), atan(m02, m22), atan(m10, m11)
  end
  local function clean(a) -- -0 and -180 print as 0 and 180
    a = deg(a)
    if a == 0 then a = 0.0 end
    if a <= -180 then a = a + 360 end
    return a
  end
  return clean(ax), clean(ay), clean(az)
end

return M
