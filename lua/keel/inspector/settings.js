// settings.js — the scene settings panel shown with the scene root (registry.md, "Grid and scene
// settings"): the grid's keys as fields, each edit one settings.set (one undo entry).
import { fieldWidget } from './components.js';

// The grid's keys described as component.kinds describes fields, so the same widgets serve.
const GRID_FIELDS = [
  { key: 'enabled', type: 'bool', tooltip: 'draw the grid' },
  { key: 'display', type: 'enum', choices: ['lines', 'dots', 'none'], tooltip: 'lines, dots at the crossings, or nothing' },
  { key: 'base_spacing', type: 'float', min: 0, min_exclusive: true, tooltip: 'distance between minor lines' },
  { key: 'major_line_every', type: 'int', min: 1, tooltip: 'a major line every N minor ones' },
  { key: 'minor_color', type: 'color', tooltip: 'colour of the minor lines' },
  { key: 'major_color', type: 'color', tooltip: 'colour of the major lines' },
  { key: 'u_color', type: 'color', tooltip: "colour of the grid's first axis line (x)" },
  { key: 'v_color', type: 'color', tooltip: "colour of the grid's second axis line (z)" },
  { key: 'fade', type: 'float', min: 0, tooltip: 'distance from the origin at which lines fade out; 0 = never' },
  { key: 'origin', type: 'vec3', tooltip: "the grid's origin" },
];

// `set(path, value)` sends one settings.set and resolves with the settings (or rejects).
// Returns { node, update(grid), error(text) }.
export function settingsPanel(grid, set) {
  const section = document.createElement('section');
  section.className = 'comp settings';
  section.dataset.kind = 'settings.grid';
  const head = document.createElement('header');
  head.innerHTML = '<span class="title">Grid</span><span class="key">scene settings</span>';
  const rows = document.createElement('div');
  rows.className = 'fields';
  const status = document.createElement('div');
  status.className = 'status';
  const widgets = new Map();
  let current = grid;
  const error = (text) => { status.textContent = text || ''; status.classList.toggle('error', !!text); };
  for (const f of GRID_FIELDS) {
    const w = fieldWidget(f, {
      edit: (value) => set(`grid.${f.key}`, value).then((s) => { error(''); update(s.grid); },
        (e) => { error(e.text || e.message); update(current); }),
    });
    widgets.set(f.key, w);
    const label = document.createElement('label');
    label.className = 'row';
    label.title = f.tooltip;
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = f.key;
    label.append(name, w.node);
    rows.append(label);
  }
  section.append(head, rows, status);
  function update(g) {
    current = g || current;
    for (const [key, w] of widgets) if (key in current) w.set(current[key]);
  }
  update(grid);
  return { node: section, update, error };
}
