// main.js — the inspector page: wires the hierarchy, the component forms, the scene view, the
// toolbar (pause/step/resume, undo/redo, save), the frame-time graph and the errors list to the channel.

import { call, watch, token } from './rpc.js';
import { Tree } from './tree.js';
import { SceneView } from './scene.js';
import { componentForm } from './components.js';
import { settingsPanel } from './settings.js';
import { Profiler } from './profiler.js';

const $ = (sel) => document.querySelector(sel);

const state = {
  kinds: new Map(),    // key → kind description (component.kinds)
  selected: null,      // uuid
  entity: null,        // object.get of the selected entity
  loading: null,       // the object.get in flight for it: { uuid, events } (events: the ones held meanwhile)
  events: 0,           // events received for the selected entity
  forms: new Map(),    // "kind#slot" → form
  selWatch: null,      // EventSource of the selected entity
  picking: null,       // a pending entity picker's callback
  errorsSeen: 0,
  frames: [],          // recent frame times (ms), for the graph
  lastFrame: null,     // { frame, t } of the last frame seen, when events carry no frame time
  playing: false,      // world.info's playing
  kept: new Set(),     // what play.keep marked while playing: "uuid|kind|slot" ("uuid||" the entity)
};

// ---- the status line ----

function say(text, isError) {
  const s = $('#message');
  s.textContent = text || '';
  s.classList.toggle('error', !!isError);
  clearTimeout(say.timer);
  if (text) say.timer = setTimeout(() => { s.textContent = ''; }, 6000);
}

async function act(method, params, done) {
  try {
    const r = await call(method, params);
    if (done) await done(r);
    return r;
  } catch (e) {
    say(`${method}: ${e.text || e.message}`, true);
    return undefined;
  }
}

// ---- world info, toolbar, frame graph ----

function showInfo(info) {
  $('#world-name').textContent = info.name || '(untitled)';
  $('#frame').textContent = `frame ${info.frame ?? '?'}`;
  $('#entity-count').textContent = `${info.entities ?? '?'} entities`;
  document.body.classList.toggle('paused', !!info.paused);
  $('#run-state').textContent = info.paused ? 'paused' : 'running';
  $('#pause').disabled = !!info.paused;
  $('#step').disabled = !info.paused;
  $('#resume').disabled = !info.paused;
  showPlaying(!!info.playing);
  noteFrame(info.frame, info.frame_ms);
  if ((info.errors ?? 0) > state.errorsSeen) loadErrors();
  // unsaved changes (the world's revision past its saved checkpoint): ● in the title, Save live
  const dirty = !!info.dirty;
  $('#dirty').hidden = !dirty;
  document.title = `${dirty ? '● ' : ''}${info.name || '(untitled)'} — keel inspector`;
  $('#save').disabled = info.dirty === false;
}

// The scene settings (settings.get): the scene view's grid and, with the root selected, its panel.
function applySettings(settings) {
  state.settings = settings;
  view.setGrid(settings.grid);
  if (state.settingsPanel) state.settingsPanel.update(settings.grid);
}

async function refreshSettings(revision) {
  if (revision !== undefined && revision === state.settingsRevision) return;
  const settings = await call('settings.get').catch(() => null);
  if (!settings) return;
  state.settingsRevision = revision;
  applySettings(settings);
}

async function refreshInfo() {
  const info = await call('world.info').catch((e) => { say(e.text || e.message, true); });
  if (info) showInfo(info);
  if (info) refreshSettings(info.revision);
  if (info) showConflicts(info.conflicts || []);
  return info;
}

// ---- the scene file's conflicts (keel serve --watch): world.info's list and SSE `conflict` ----

const show = (v) => (v === undefined || v === null ? '(absent)' : typeof v === 'object' ? JSON.stringify(v) : String(v));

function showConflicts(list) {
  if (!Array.isArray(list)) list = []; // an empty Lua list comes as {}
  const banner = $('#conflicts'), ul = banner.querySelector('ul');
  banner.hidden = list.length === 0;
  ul.replaceChildren(...list.map((c) => {
    const li = document.createElement('li');
    li.dataset.path = c.path;
    const path = document.createElement('code');
    path.textContent = c.path;
    const vals = document.createElement('span');
    vals.className = 'dim';
    vals.textContent = ` mine ${show(c.ours)} · disk ${show(c.theirs)} · was ${show(c.base)} `;
    const mine = document.createElement('button');
    mine.type = 'button'; mine.className = 'keep-mine'; mine.textContent = 'keep mine';
    mine.onclick = () => resolve('ours', [c.path]);
    const disk = document.createElement('button');
    disk.type = 'button'; disk.className = 'take-disk'; disk.textContent = 'take disk';
    disk.onclick = () => resolve('theirs', [c.path]);
    li.append(path, vals, mine, disk);
    return li;
  }));
}

async function resolve(take, paths) {
  const params = paths ? { take, paths } : { take };
  const r = await act('world.resolve', params);
  if (!r) return;
  showConflicts(r.conflicts || []);
  if (r.merged) { say('merged the file on disk'); await resync(); }
}

// A frame time: the server's (how long the step took), else the wall time between frames seen.
function noteFrame(frame, ms) {
  if (typeof frame !== 'number') return;
  const now = performance.now();
  const last = state.lastFrame;
  if (typeof ms !== 'number' && last && frame > last.frame) ms = (now - last.t) / (frame - last.frame);
  if (!last || frame !== last.frame) state.lastFrame = { frame, t: now };
  if (typeof ms !== 'number' || !(frame > (last?.frame ?? -1))) return;
  state.frames.push(ms);
  if (state.frames.length > 120) state.frames.shift();
  drawGraph();
}

function drawGraph() {
  const c = $('#frame-graph'), g = c.getContext('2d');
  const w = c.width, h = c.height, data = state.frames;
  g.clearRect(0, 0, w, h);
  const max = Math.max(1, ...data) * 1.25;
  if (16.7 < max) { // 16.7 ms: a frame's whole budget at 60 frames a second
    g.strokeStyle = 'rgba(255,120,120,0.35)';
    const y60 = h - (16.7 / max) * h;
    g.beginPath(); g.moveTo(0, y60); g.lineTo(w, y60); g.stroke();
  }
  g.strokeStyle = '#7fdc9a';
  g.beginPath();
  data.forEach((v, i) => {
    const x = w - (data.length - 1 - i) * (w / 120), y = h - (v / max) * h;
    if (i) g.lineTo(x, y); else g.moveTo(x, y);
  });
  g.stroke();
  const lastMs = data[data.length - 1];
  $('#frame-ms').textContent = lastMs === undefined ? '– ms' : `${lastMs.toFixed(lastMs < 10 ? 2 : 1)} ms`;
}

// After anything that may have changed the world while it is paused (no frame, so maybe no event).
async function resync() {
  await refreshInfo();
  if (state.selected) await loadEntity(state.selected, true);
  tree.reload();
}

// ---- play mode: Play/Stop and the Keep toggles ----

function keepKey(uuid, kind, slot) { return `${uuid}|${kind ?? ''}|${kind ? (slot ?? 0) : ''}`; }

function showPlaying(on) {
  if (state.playing && !on) state.kept.clear(); // stopped elsewhere: nothing is marked any more
  state.playing = on;
  document.body.classList.toggle('playing', on);
  $('#play').disabled = on;
  $('#stop').disabled = !on;
  if (on) $('#run-state').textContent += ' · playing';
}

async function keep(uuid, kind, slot, on) {
  const params = { object: uuid, keep: on };
  if (kind) { params.kind = kind; params.slot = slot ?? 0; }
  const r = await act('play.keep', params);
  const k = keepKey(uuid, kind, slot);
  if (r && on) state.kept.add(k); else state.kept.delete(k);
  return r;
}

function wirePlay() {
  $('#play').onclick = () => act('world.play', undefined, () => { state.kept.clear(); return resync(); });
  $('#stop').onclick = () => act('world.stop', undefined, (r) => {
    state.kept.clear();
    const refused = (r && r.refused) || [];
    if (refused.length) say(`not kept: ${refused.map((x) => `${x.path}: ${x.message}`).join('; ')}`, true);
    else say('stopped');
    return resync();
  });
  $('#keep-entity').onchange = (e) => { if (state.entity) keep(state.entity.uuid, null, null, e.target.checked); };
}

function wireToolbar() {
  wirePlay();
  $('#keep-all-mine').onclick = () => resolve('ours');
  $('#take-all-disk').onclick = () => resolve('theirs');
  $('#pause').onclick = () => act('world.pause', undefined, refreshInfo);
  $('#resume').onclick = () => act('world.resume', undefined, refreshInfo);
  $('#step').onclick = () => act('world.step', { frames: 1 }, resync);
  $('#undo').onclick = () => act('history.undo', undefined, (r) => { if (r === false) say('nothing to undo'); return resync(); });
  $('#redo').onclick = () => act('history.redo', undefined, (r) => { if (r === false) say('nothing to redo'); return resync(); });
  $('#save').onclick = () => act('world.save', undefined, (r) => { say(`saved ${r?.path ?? r}`); return refreshInfo(); });
  document.addEventListener('keydown', (e) => {
    if (!(e.ctrlKey || e.metaKey) || e.target.matches('input, select, textarea')) return;
    if (e.key === 'z' && !e.shiftKey) { e.preventDefault(); $('#undo').click(); }
    if (e.key === 'y' || (e.key === 'Z' && e.shiftKey)) { e.preventDefault(); $('#redo').click(); }
    // Ctrl+C with text selected on the page copies that text, as usual
    if (e.key === 'c' && state.selected && !String(window.getSelection() || '')) { e.preventDefault(); copySelection(); }
    if (e.key === 'v' && state.clipboard) { e.preventDefault(); pasteClipboard(); }
  });
}

// Ctrl+C / Ctrl+V: the selected entity and its subtree as a scene fragment (object.copy), pasted
// beside the selection (under its parent) as copies with fresh UUIDs (object.paste, undoable).
async function copySelection() {
  const uuid = state.selected;
  await act('object.copy', { object: uuid }, (r) => {
    state.clipboard = r.text;
    navigator.clipboard?.writeText(r.text).catch(() => {}); // the page's own copy is enough
    say(`copied ${tree.names.get(uuid) || uuid}`);
  });
}

async function pasteClipboard() {
  const parent = state.entity && state.entity.uuid === state.selected ? state.entity.parent : undefined;
  await act('object.paste', { text: state.clipboard, parent: parent || undefined }, async (r) => {
    await resync();
    const first = r && r.uuids && r.uuids[0];
    if (first) await select(first);
  });
}

// ---- errors ----

async function loadErrors() {
  if (state.loadingErrors) return; // one at a time: `since` moves only when the answer is in
  state.loadingErrors = true;
  const r = await call('world.errors', { since: state.errorsSeen }).catch(() => null);
  state.loadingErrors = false;
  if (!r) return;
  const entries = Array.isArray(r) ? r : (r.entries || r.errors || []);
  const list = $('#errors ul');
  for (const e of entries) {
    const li = document.createElement('li');
    const where = [e.phase, e.kind, e.slot ? `#${e.slot}` : ''].filter(Boolean).join(' ');
    li.innerHTML = '<span class="where"></span><span class="msg"></span>';
    li.querySelector('.where').textContent = `${tree.names.get(e.entity) || (e.entity ? e.entity.slice(0, 8) : 'root')} · ${where}`;
    li.querySelector('.msg').textContent = e.message;
    if (e.entity) { li.classList.add('link'); li.onclick = () => select(e.entity); }
    list.prepend(li);
  }
  state.errorsSeen += entries.length;
  $('#errors .count').textContent = String(state.errorsSeen);
  $('#errors').classList.toggle('has', state.errorsSeen > 0);
}

// ---- entity references in forms ----

const entities = {
  label: (uuid) => state.names.get(uuid) || uuid,
  async resolve(text) {
    if (/^[0-9a-f-]{36}$/i.test(text)) return text;
    // the name filter matches parts of names: an exact match first, else the first found
    const r = await call('object.list', { name: text, limit: 50 }).catch(() => null);
    const hit = r && (r.entities.find((o) => o.name === text) || r.entities[0]);
    return hit ? hit.uuid : text; // an unknown name: the server says why
  },
  pick(cb) {
    state.picking = cb;
    document.body.classList.add('picking');
    say('pick: click an entity in the hierarchy or the scene view (Esc cancels)');
  },
};

function updateNameList() {
  const dl = $('#entity-names');
  const seen = [...state.names.entries()].slice(0, 500);
  dl.replaceChildren(...seen.map(([uuid, name]) => {
    const o = document.createElement('option');
    o.value = name || uuid;
    o.label = uuid;
    return o;
  }));
}

// ---- the selected entity ----

function formKey(kind, slot) { return `${kind}#${slot ?? 0}`; }

async function select(uuid) {
  if (state.picking) {
    const cb = state.picking;
    state.picking = null;
    document.body.classList.remove('picking');
    say('');
    cb(uuid);
    return;
  }
  state.selected = uuid;
  tree.select(uuid);
  view.select(uuid);
  if (state.selWatch) state.selWatch.close();
  // watched from now on, so nothing that changes it from here on goes unseen: what arrives while
  // its object.get is in flight is held and applied after the answer when newer (loadEntity)
  state.selWatch = watch({ entities: uuid }, (type, data) => onEntityEvent(uuid, type, data));
  await loadEntity(uuid);
}

// Draws the selected entity from object.get. Events for it that arrive while the call is in
// flight are held, then those newer than the answer (by the world's revision) are applied: the
// answer and the event stream come over different connections, in either order.
async function loadEntity(uuid, keepForms) {
  // a call still in flight is superseded: what it held arrived before this one was sent
  const loading = { uuid, events: [] };
  state.loading = loading;
  let ent;
  try {
    ent = await call('object.get', { object: uuid });
  } catch (e) {
    if (state.loading !== loading) return;
    state.loading = null;
    if (state.selected === uuid) showEntity(null, e.text || e.message);
    return;
  }
  if (state.loading !== loading) return; // a later call's answer is the one drawn
  state.loading = null;
  if (state.selected !== uuid) return;
  drawEntity(ent, keepForms);
  for (const { type, data } of loading.events) {
    if (state.loading) break; // one of them called object.get again: its answer covers the rest
    // an answer without a revision (an older server): every held event, in order
    if (typeof ent.revision === 'number' && typeof data.revision === 'number' && data.revision <= ent.revision) continue;
    applyEntityEvent(uuid, type, data);
  }
}

function drawEntity(ent, keepForms) {
  const sameShape = keepForms && state.entity && state.entity.uuid === ent.uuid
    && state.entity.components.length === ent.components.length
    && ent.components.every((c) => state.forms.has(formKey(c.kind, c.slot)));
  if (sameShape) {
    for (const c of ent.components) {
      const f = state.forms.get(formKey(c.kind, c.slot));
      f.error(''); // an earlier refusal no longer applies once the world moved on
      f.update(c.body, c.version);
      f.setEnabled(c.enabled);
      f.setKept(state.kept.has(keepKey(ent.uuid, c.kind, c.slot)));
    }
    $('#keep-entity').checked = state.kept.has(keepKey(ent.uuid));
    state.entity = ent;
    $('#entity-name').value = ent.name || '';
  } else {
    showEntity(ent);
  }
  const t = ent.components.find((c) => c.kind === 'core:transform');
  view.put(ent.uuid, { name: ent.name, parent: ent.parent ?? null, transform: t ? t.body : null });
}

function showEntity(ent, why) {
  state.entity = ent;
  state.forms.clear();
  const list = $('#components');
  list.replaceChildren();
  $('#inspector').classList.toggle('empty', !ent);
  if (!ent) {
    $('#entity-name').value = '';
    $('#entity-uuid').textContent = why || 'select an entity';
    return;
  }
  state.names.set(ent.uuid, ent.name || '');
  $('#entity-name').value = ent.name || '';
  $('#entity-uuid').textContent = ent.uuid;
  $('#keep-entity').checked = state.kept.has(keepKey(ent.uuid));
  for (const c of ent.components) {
    const kind = c.loaded === false ? null : state.kinds.get(c.kind);
    const target = { object: ent.uuid, kind: c.kind, slot: c.slot ?? 0 };
    let form;
    const after = async (r) => { form.error(''); await loadEntity(ent.uuid, true); return r; };
    const fail = (e) => { form.error(e.text || e.message); form.refresh(); };
    form = componentForm(c, kind, {
      entities,
      set: (fields) => call('component.set', { ...target, fields }).then(after, fail),
      enable: (on) => call('component.enable', { ...target, enabled: on }).then(after, fail),
      remove: () => call('component.remove', target).then(() => loadEntity(ent.uuid), fail),
      keep: (on) => keep(ent.uuid, c.kind, c.slot, on),
      kept: state.kept.has(keepKey(ent.uuid, c.kind, c.slot)),
    });
    state.forms.set(formKey(c.kind, c.slot), form);
    list.append(form.node);
  }
  state.settingsPanel = null;
  if (state.selected === 'root' && state.settings) { // the root's panel: the scene settings too
    const set = (path, value) => call('settings.set', { path, value }).then((s) => { applySettings(s); return s; });
    state.settingsPanel = settingsPanel(state.settings.grid, set);
    list.append(state.settingsPanel.node);
  }
  // the kinds that may be added here (root-only ones are not)
  const add = $('#add-kind');
  const have = new Set(ent.components.map((c) => c.kind));
  add.replaceChildren(new Option('add component…', ''), ...[...state.kinds.values()]
    .filter((k) => !(k.flags || []).includes('root_only') && !(k.multiplicity !== 'many' && have.has(k.key)))
    .map((k) => new Option(`${k.display || k.key} (${k.key})`, k.key)));
}

// An event of the selected entity's stream: held while its object.get is in flight.
function onEntityEvent(uuid, type, data) {
  if (uuid !== state.selected) return;
  state.events++; // (read by the browser test)
  if (state.loading && state.loading.uuid === uuid) {
    state.loading.events.push({ type, data });
    return;
  }
  applyEntityEvent(uuid, type, data);
}

function applyEntityEvent(uuid, type, data) {
  if (type === 'snapshot' || (data.added && data.added.length) || (data.removed && data.removed.length)
      || (data.destroyed && data.destroyed.length)) {
    loadEntity(uuid, true);
    return;
  }
  const id = state.entity ? state.entity.uuid : uuid; // "root" is named by its UUID in events
  for (const ch of data.changed || []) {
    if (ch.entity !== uuid && ch.entity !== id) continue;
    const f = state.forms.get(formKey(ch.kind, ch.slot));
    if (!f) continue;
    f.update(ch.fields || {}, ch.version, true);
    if (ch.enabled !== undefined) f.setEnabled(ch.enabled);
  }
  for (const u of data.updated || []) { // renamed, reparented, (dis)abled
    const input = $('#entity-name');
    if ((u.uuid === uuid || u.uuid === id) && document.activeElement !== input) input.value = u.name || '';
  }
}

function wireEntityPanel() {
  $('#entity-name').addEventListener('change', (e) => {
    if (!state.selected) return;
    act('object.rename', { object: state.selected, name: e.target.value }, resync);
  });
  $('#add-kind').addEventListener('change', (e) => {
    const kind = e.target.value;
    e.target.value = '';
    if (state.selected && kind) act('component.add', { object: state.selected, kind }, () => loadEntity(state.selected));
  });
  $('#destroy').onclick = () => {
    const uuid = state.selected;
    if (!uuid) return;
    act('object.destroy', { object: uuid }, () => {
      if (state.selWatch) state.selWatch.close();
      state.selWatch = null;
      state.selected = null;
      view.remove(uuid);
      showEntity(null);
      return resync();
    });
  };
  $('#spawn').onclick = () => act('object.spawn', {
    name: 'Entity', parent: state.selected || undefined,
    components: [{ kind: 'core:transform' }],
  }, async (r) => { await resync(); if (r && r.uuid) select(r.uuid); });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && state.picking) {
      state.picking = null;
      document.body.classList.remove('picking');
      say('');
    }
  });
}

// ---- the scene view's transforms ----

function onSceneEvent(type, data) {
  if (type === 'conflict') { showConflicts(data.conflicts || []); return; }
  if (type === 'watch_error') {
    const e = (data.errors || [])[0];
    say(`scene file: ${e ? `${e.code}: ${e.message}` : 'cannot be read'}`, true);
    return;
  }
  if (type === 'snapshot') view.clear();
  noteFrame(data.frame, data.frame_ms);
  if (typeof data.frame === 'number') $('#frame').textContent = `frame ${data.frame}`;
  for (const o of data.entities || []) { // a snapshot: every watched entity with its components
    state.names.set(o.uuid, o.name || '');
    const t = (o.components || []).find((c) => c.kind === 'core:transform');
    view.put(o.uuid, { name: o.name, parent: o.parent ?? null, transform: t ? t.body : null });
  }
  for (const o of data.spawned || []) {
    const uuid = typeof o === 'string' ? o : o.uuid;
    view.put(uuid, typeof o === 'string' ? {} : { name: o.name, parent: o.parent ?? null });
  }
  for (const ch of data.changed || []) {
    if (ch.kind === 'core:transform') view.put(ch.entity, { transform: ch.fields || {} });
  }
  for (const a of data.added || []) {
    if (a.kind === 'core:transform') view.put(a.entity, { transform: a.body || a.fields || {} });
  }
  for (const r of data.removed || []) {
    if (r.kind === 'core:transform') view.put(r.entity, { transform: null });
  }
  for (const d of data.destroyed || []) view.remove(typeof d === 'string' ? d : d.uuid);
  for (const u of data.updated || []) {
    state.names.set(u.uuid, u.name || '');
    view.put(u.uuid, { name: u.name, parent: u.parent ?? null });
    tree.update(u);
  }
  if (type === 'snapshot') updateNameList();
}

// ---- start ----

const tree = new Tree($('#tree'), { onSelect: select, onError: (t) => say(t, true) });
const view = new SceneView($('#view'), { onSelect: select });
state.names = tree.names;
const profiler = new Profiler($('#profiler'), { call, select, say });
for (const b of document.querySelectorAll('#tabs button')) { // Scene | Profiler
  b.onclick = () => {
    for (const o of document.querySelectorAll('#tabs button')) o.classList.toggle('on', o === b);
    profiler.show(b.dataset.tab === 'profiler');
  };
}
window.keelInspector = { state, tree, view, profiler }; // for the browser test and the console

async function start() {
  window.addEventListener('hashchange', () => location.reload()); // a token pasted in: start over with it
  wireToolbar();
  wireEntityPanel();
  if (!token) {
    say('no token: open the URL that keel printed (…/#token=…)', true);
    return;
  }
  let kinds;
  try {
    kinds = await call('component.kinds');
  } catch (e) {
    say(e.text || e.message, true);
    return;
  }
  for (const k of Array.isArray(kinds) ? kinds : kinds.kinds || []) state.kinds.set(k.key, k);
  await refreshInfo();
  await tree.reload();
  updateNameList();
  profiler.listen(watch({ kinds: 'core:transform' }, onSceneEvent, (up) => document.body.classList.toggle('offline', !up)));
  await loadErrors();
  setInterval(refreshInfo, 1000);
  document.body.classList.add('ready');
}

start();
