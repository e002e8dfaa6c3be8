// components.js — the selected entity's components as forms generated from component.kinds.
// Each field widget is an element with data-field (and data-index for a vector's members);
// edits are reported as whole field values, live values are written back unless being edited.

const VEC_WIDTH = { vec2: 2, vec3: 3, vec4: 4, quat: 4, color: 4 };
const AXES = ['x', 'y', 'z', 'w'];

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function fmtNum(v) {
  if (typeof v !== 'number') return '';
  return String(Math.round(v * 1e6) / 1e6);
}

function rangeTitle(f) {
  const parts = [];
  if (f.min !== null && f.min !== undefined) parts.push(`${f.min_exclusive ? '>' : '≥'} ${f.min}`);
  if (f.max !== null && f.max !== undefined) parts.push(`${f.max_exclusive ? '<' : '≤'} ${f.max}`);
  const t = [f.tooltip, parts.join(', ')].filter(Boolean).join(' — ');
  return t || undefined;
}

function toHex(rgb) {
  return '#' + rgb.slice(0, 3).map((c) => {
    const v = Math.max(0, Math.min(255, Math.round((c ?? 0) * 255)));
    return v.toString(16).padStart(2, '0');
  }).join('');
}

function fromHex(hex) {
  return [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255);
}

// Rotations in degrees, as keel.quat does (lua/keel/quat.lua): Z, then X, then Y about fixed
// axes (Unity's order), q = qY·qX·qZ; quaternions { x, y, z, w } with w >= 0.
function quatMul(a, b) {
  return [
    a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1],
    a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0],
    a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3],
    a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2],
  ];
}

export function quatFromEuler(ex, ey, ez) {
  const h = (d) => (d * Math.PI) / 360;
  const qx = [Math.sin(h(ex)), 0, 0, Math.cos(h(ex))];
  const qy = [0, Math.sin(h(ey)), 0, Math.cos(h(ey))];
  const qz = [0, 0, Math.sin(h(ez)), Math.cos(h(ez))];
  const q = quatMul(quatMul(qy, qx), qz);
  const len = Math.hypot(...q) * (q[3] < 0 ? -1 : 1);
  return q.map((c) => c / len);
}

export function eulerFromQuat(q) {
  const len = Math.hypot(...q) || 1;
  const [x, y, z, w] = q.map((c) => c / len);
  const s = Math.max(-1, Math.min(1, -2 * (y * z - x * w)));
  const deg = (r) => { const d = (r * 180) / Math.PI; return d <= -180 ? d + 360 : d; };
  if (Math.abs(s) > 1 - 1e-9) {
    return [deg(Math.asin(s)), deg(Math.atan2(-2 * (x * z - y * w), 1 - 2 * (y * y + z * z))), 0];
  }
  return [deg(Math.asin(s)), deg(Math.atan2(2 * (x * z + y * w), 1 - 2 * (x * x + y * y))),
    deg(Math.atan2(2 * (x * y + z * w), 1 - 2 * (x * x + z * z)))];
}

// One field's widget. `ctx.edit(value)` commits; `ctx.entities` resolves entity fields.
// Returns { node, set(value) } where set shows a live value.
export function fieldWidget(f, ctx) {
  const ro = f.readonly || ctx.readonly;
  const common = { 'data-field': f.key, disabled: ro, title: rangeTitle(f) };
  const width = VEC_WIDTH[f.type];

  if (f.type === 'bool') {
    const input = el('input', { type: 'checkbox', ...common, onchange: () => ctx.edit(input.checked) });
    return { node: input, set: (v) => { input.checked = !!v; } };
  }
  if (f.type === 'int' || f.type === 'float') {
    const input = el('input', {
      type: 'number', ...common, step: f.type === 'int' ? '1' : 'any',
      min: f.min ?? undefined, max: f.max ?? undefined,
      onchange: () => {
        if (input.value === '') return;
        ctx.edit(f.type === 'int' ? parseInt(input.value, 10) : parseFloat(input.value));
      },
    });
    return { node: input, set: (v) => { input.value = f.type === 'int' ? String(v ?? '') : fmtNum(v); } };
  }
  if (f.type === 'enum') {
    const select = el('select', { ...common, onchange: () => ctx.edit(select.value) },
      ...(f.choices || []).map((c) => el('option', { value: c }, c)));
    return { node: select, set: (v) => { select.value = v; } };
  }
  if (f.type === 'color') {
    let current = [1, 1, 1, 1];
    const picker = el('input', {
      type: 'color', ...common,
      onchange: () => ctx.edit([...fromHex(picker.value), alpha.valueAsNumber]),
    });
    const alpha = el('input', {
      type: 'number', 'data-field': f.key, 'data-index': '3', disabled: ro, step: 'any', min: 0, max: 1,
      title: 'alpha', class: 'alpha',
      onchange: () => ctx.edit([...current.slice(0, 3), parseFloat(alpha.value)]),
    });
    return {
      node: el('span', { class: 'color' }, picker, alpha),
      set: (v) => { current = v || current; picker.value = toHex(current); alpha.value = fmtNum(current[3] ?? 1); },
    };
  }
  if (f.type === 'quat') {
    // three angles in degrees; what is sent is the quaternion they make
    let angles = [0, 0, 0];
    const inputs = [];
    for (let i = 0; i < 3; i++) {
      const input = el('input', {
        type: 'number', step: 'any', 'data-field': f.key, 'data-index': String(i), class: 'degrees',
        disabled: ro, title: `${AXES[i]} (degrees)`, placeholder: `${AXES[i]}°`,
        onchange: () => {
          const v = parseFloat(input.value);
          if (!Number.isFinite(v)) return;
          const next = angles.slice();
          next[i] = v;
          angles = next;
          ctx.edit(quatFromEuler(next[0], next[1], next[2]));
        },
      });
      inputs.push(input);
    }
    return {
      node: el('span', { class: 'vec vec3 rotation', title: rangeTitle(f) }, ...inputs),
      set: (v) => {
        if (!Array.isArray(v) || v.length !== 4) return;
        angles = eulerFromQuat(v);
        inputs.forEach((inp, i) => { inp.value = fmtNum(Math.round(angles[i] * 1e4) / 1e4); });
      },
    };
  }
  if (width) {
    let current = new Array(width).fill(0);
    const inputs = [];
    for (let i = 0; i < width; i++) {
      const input = el('input', {
        type: 'number', step: 'any', 'data-field': f.key, 'data-index': String(i),
        disabled: ro, title: AXES[i], placeholder: AXES[i],
        onchange: () => {
          const v = parseFloat(input.value);
          if (Number.isNaN(v)) return;
          const next = current.slice();
          next[i] = v;
          ctx.edit(next);
        },
      });
      inputs.push(input);
    }
    return {
      node: el('span', { class: `vec vec${width}` }, ...inputs),
      set: (v) => { current = (v || current).slice(); inputs.forEach((inp, i) => { inp.value = fmtNum(current[i]); }); },
    };
  }
  if (f.type === 'entity') {
    // An entity picker: type a name (suggested from the hierarchy) or a UUID, or press pick
    // then click an entity in the hierarchy or the scene view; empty clears it.
    const input = el('input', {
      type: 'text', list: 'entity-names', ...common, placeholder: '(none)', class: 'entity-ref',
      onchange: async () => {
        const text = input.value.trim();
        ctx.edit(text === '' ? null : await ctx.entities.resolve(text));
      },
    });
    const pick = el('button', {
      type: 'button', class: 'pick', title: 'pick an entity in the hierarchy or the scene view', disabled: ro,
      onclick: () => ctx.entities.pick((uuid) => ctx.edit(uuid)),
    }, 'pick');
    return {
      node: el('span', { class: 'entity' }, input, pick),
      set: (v) => { input.value = v ? ctx.entities.label(v) : ''; input.dataset.uuid = v || ''; },
    };
  }
  // string, asset and anything newer: text
  const input = el('input', {
    type: 'text', ...common, placeholder: f.type === 'asset' ? '(no asset)' : '',
    onchange: () => ctx.edit(f.type === 'asset' && input.value.trim() === '' ? null : input.value),
  });
  return { node: input, set: (v) => { input.value = v ?? ''; } };
}

// Being typed in: a text or number input (or a select) that has the focus. A focused button or
// checkbox holds nothing unsent, so live values still reach it.
function isFocused(node) {
  const a = document.activeElement;
  if (!a || !(node === a || node.contains(a))) return false;
  return a.tagName === 'SELECT' || (a.tagName === 'INPUT' && !['checkbox', 'color', 'button'].includes(a.type));
}

// The form of one component. `api` = { set(fields), enable(on), remove(), keep(on), kept, entities }.
// Returns { node, update(body, version), error(text) }.
export function componentForm(comp, kind, api) {
  const unknown = comp.loaded === false || !kind;
  const title = unknown ? comp.kind : (kind.display || comp.kind);
  const status = el('div', { class: 'status' });
  const enabled = el('input', {
    type: 'checkbox', class: 'enabled', title: 'enabled', disabled: unknown,
    onchange: () => api.enable(enabled.checked),
  });
  enabled.checked = comp.enabled !== false;
  const version = el('span', { class: 'version' });
  // an unknown kind cannot change in play: nothing of it to keep
  const keep = el('input', { type: 'checkbox', disabled: unknown, onchange: () => api.keep && api.keep(keep.checked) });
  keep.checked = !!api.kept;
  const head = el('header', {},
    enabled,
    el('span', { class: 'title' }, title),
    el('span', { class: 'key' }, unknown ? 'not declared here' : (comp.slot ? `${comp.kind} #${comp.slot}` : comp.kind)),
    version,
    el('label', { class: 'keep', title: "keep this component's play-mode state when play stops" }, keep, 'Keep'),
    el('button', { type: 'button', class: 'remove', title: 'remove this component', onclick: () => api.remove() }, '×'));
  const section = el('section', {
    class: unknown ? 'comp unknown' : 'comp', 'data-kind': comp.kind, 'data-slot': String(comp.slot ?? 0),
  }, head);

  const widgets = new Map();
  let body = comp.body || {};
  if (unknown) {
    // Not declared in this process: shown as read, never written.
    const pre = el('pre', { class: 'body' });
    section.append(el('div', { class: 'note' }, 'unknown kind — read-only, kept as loaded'), pre);
    widgets.set('*', { set: () => { pre.textContent = JSON.stringify(body, null, 2); } });
  } else {
    const rows = el('div', { class: 'fields' });
    for (const f of kind.fields || []) {
      if (f.hidden) continue;
      const w = fieldWidget(f, {
        readonly: false,
        entities: api.entities,
        edit: (value) => api.set({ [f.key]: value }),
      });
      widgets.set(f.key, w);
      rows.append(el('label', { class: f.readonly ? 'row readonly' : 'row', title: rangeTitle(f) },
        el('span', { class: 'name', title: rangeTitle(f) }, f.key), w.node));
    }
    section.append(rows);
  }
  section.append(status);

  function update(newBody, newVersion, partial, force) {
    body = partial ? { ...body, ...newBody } : (newBody || {});
    if (newVersion !== undefined) version.textContent = `v${newVersion}`;
    for (const [key, w] of widgets) {
      if (key === '*') { w.set(); continue; }
      if (!(key in body)) continue;
      if (!force && w.node && isFocused(w.node)) continue; // the user is typing here
      w.set(body[key]);
    }
  }
  update(body, comp.version);
  return {
    node: section,
    update,
    setEnabled: (on) => { enabled.checked = on !== false; },
    setKept: (on) => { keep.checked = !!on; },
    error: (text) => { status.textContent = text || ''; status.classList.toggle('shown', !!text); },
    refresh: () => update(body, undefined, false, true), // the last known values back after a refused edit
  };
}
