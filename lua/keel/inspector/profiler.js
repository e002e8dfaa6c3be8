// profiler.js — the inspector's Profiler tab (design/profiler.md): world.stats turns collecting on
// while the tab is open; the `stats` event (one a second) and a refresh each second redraw a
// chart of the last 300 frames stacked by phase (the 16.7 ms budget drawn as a line) and a table
// of systems and kind hooks sortable by time, calls and entities. Clicking a kind's row selects
// an entity holding that kind.

const PHASES = ['start', 'fixed_update', 'update', 'late_update'];
const COLORS = { start: '#c792ea', fixed_update: '#7fdc9a', update: '#7fb4ff', late_update: '#ffd34d', other: '#5a6272' };
const BUDGET_MS = 1000 / 60;
const SORTS = { ms: 'time', calls: 'calls', entities: 'entities' };

export class Profiler {
  // root: the tab's section; call(method, params); select(uuid); say(text, isError)
  constructor(root, { call, select, say }) {
    this.root = root;
    this.call = call;
    this.selectEntity = select;
    this.say = say;
    this.canvas = root.querySelector('canvas');
    this.table = root.querySelector('table');
    this.sortKey = 'ms';
    this.stats = null;
    this.open = false;
    this.turnedOn = false; // collecting was off when the tab opened: it goes off again when it closes
    for (const th of this.table.querySelectorAll('th[data-sort]')) {
      th.onclick = () => { this.sortKey = th.dataset.sort; this.render(); };
    }
    window.addEventListener('resize', () => this.open && this.draw());
  }

  async show(on) {
    this.open = on;
    this.root.hidden = !on;
    clearInterval(this.timer);
    if (!on) {
      if (this.turnedOn) await this.call('world.stats', { profiling: false }).catch(() => {});
      this.turnedOn = false;
      return;
    }
    try {
      const before = await this.call('world.stats');
      if (!before.profiling) this.turnedOn = true;
      this.update(await this.call('world.stats', { profiling: true }));
    } catch (e) {
      this.say(`world.stats: ${e.text || e.message}`, true);
    }
    // a paused world sends no events: refresh by hand as well
    this.timer = setInterval(() => this.refresh(), 1000);
  }

  async refresh() {
    if (!this.open) return;
    try { this.update(await this.call('world.stats')); } catch (e) { /* offline: the next one */ }
  }

  // An event stream: its `stats` events update the tab while it is open.
  listen(es) {
    es.addEventListener('stats', (e) => { if (this.open) this.update(JSON.parse(e.data)); });
  }

  update(stats) {
    this.stats = stats;
    this.render();
  }

  render() {
    this.draw();
    this.fill();
  }

  draw() {
    const c = this.canvas, s = this.stats;
    const w = c.clientWidth || 600, h = c.clientHeight || 160;
    if (c.width !== w) c.width = w;
    if (c.height !== h) c.height = h;
    const g = c.getContext('2d');
    g.fillStyle = '#101318';
    g.fillRect(0, 0, w, h);
    const hist = (s && s.history) || [];
    const max = Math.max(BUDGET_MS * 1.5, ...hist.map((v) => v * 1.1));
    const y = (ms) => h - (ms / max) * (h - 4);
    const bw = w / 300;
    hist.forEach((frame, i) => {
      const x = w - (hist.length - i) * bw;
      let base = 0;
      for (const p of [...PHASES, 'other']) {
        const series = p === 'other' ? null : s.phase_history && s.phase_history[p];
        const v = series ? series[i] || 0 : Math.max(0, frame - base);
        if (v <= 0) continue;
        g.fillStyle = COLORS[p];
        g.fillRect(x, y(base + v), Math.max(1, bw - 0.5), y(base) - y(base + v));
        base += v;
      }
    });
    g.strokeStyle = '#ff7b7b';
    g.setLineDash([4, 3]);
    g.beginPath();
    g.moveTo(0, Math.round(y(BUDGET_MS)) + 0.5);
    g.lineTo(w, Math.round(y(BUDGET_MS)) + 0.5);
    g.stroke();
    g.setLineDash([]);
    g.fillStyle = '#8a93a3';
    g.font = '11px system-ui, sans-serif';
    g.fillText('16.7 ms', 4, y(BUDGET_MS) - 3);
    const legend = this.root.querySelector('.legend');
    if (legend && s) {
      legend.textContent = `frame ${s.frame} · ${s.frame_ms.toFixed(2)} ms · messages ${s.messages} · timers ${s.timers}`
        + ` · spawned ${s.spawned} · destroyed ${s.destroyed} · faults ${s.faults} · Lua ${Math.round(s.lua_kb)} KB`;
      const key = document.createElement('span'); // the chart's colours
      key.className = 'key';
      for (const p of [...PHASES, 'other']) {
        const i = document.createElement('i');
        i.style.background = COLORS[p];
        key.append(i, p);
      }
      legend.append(key);
    }
  }

  rows() {
    const s = this.stats;
    if (!s) return [];
    const out = [];
    for (const r of s.systems || []) out.push({ name: r.name, what: 'system', ms: r.ms, calls: r.calls, entities: r.entities });
    // a hook call is one component's: its entities are its calls
    for (const r of s.kinds || []) out.push({ name: r.kind, what: r.phase, kind: r.kind, ms: r.ms, calls: r.calls, entities: r.calls });
    const k = this.sortKey;
    return out.sort((a, b) => b[k] - a[k] || b.ms - a.ms || a.name.localeCompare(b.name));
  }

  fill() {
    for (const th of this.table.querySelectorAll('th[data-sort]')) {
      th.classList.toggle('sorted', th.dataset.sort === this.sortKey);
      th.title = `sort by ${SORTS[th.dataset.sort]}`;
    }
    const body = this.table.tBodies[0];
    body.textContent = '';
    for (const r of this.rows()) {
      const tr = body.insertRow();
      tr.dataset.name = r.name;
      for (const v of [r.name, r.what, r.ms.toFixed(3), r.calls, r.entities]) tr.insertCell().textContent = v;
      if (r.kind) {
        tr.classList.add('link');
        tr.title = `select an entity holding ${r.kind}`;
        tr.onclick = () => this.pick(r.kind);
      }
    }
  }

  async pick(kind) {
    try {
      const r = await this.call('object.list', { kind, limit: 1 });
      const e = r.entities && r.entities[0];
      if (e) await this.selectEntity(e.uuid);
      else this.say(`no entity holds ${kind}`);
    } catch (e) {
      this.say(`object.list: ${e.text || e.message}`, true);
    }
  }
}
