// scene.js — the top-down scene view: each entity with a core:transform drawn at its world (x, z),
// parents' transforms composed; drag pans, the wheel zooms, a click selects the nearest entity.

function qrot(q, v) { // rotates v by the unit quaternion q = [x, y, z, w]
  const [x, y, z, w] = q;
  const tx = 2 * (y * v[2] - z * v[1]), ty = 2 * (z * v[0] - x * v[2]), tz = 2 * (x * v[1] - y * v[0]);
  return [v[0] + w * tx + (y * tz - z * ty), v[1] + w * ty + (z * tx - x * tz), v[2] + w * tz + (x * ty - y * tx)];
}

function qmul(a, b) {
  return [
    a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1],
    a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0],
    a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3],
    a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2],
  ];
}

export class SceneView {
  constructor(canvas, { onSelect }) {
    this.canvas = canvas;
    this.onSelect = onSelect;
    this.nodes = new Map(); // uuid → { name, parent, t: {position, rotation, scale} }
    this.selected = null;
    this.view = null; // { cx, cz, scale } chosen by fit() on the first draw
    this.dirty = true;
    this.drawn = []; // [{uuid, x, y}] in canvas pixels, for picking
    let drag = null;
    canvas.addEventListener('pointerdown', (e) => { drag = { x: e.offsetX, y: e.offsetY, moved: false }; });
    canvas.addEventListener('pointermove', (e) => {
      if (!drag || !this.view) return;
      const dx = e.offsetX - drag.x, dy = e.offsetY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (!drag.moved) return;
      this.view.cx -= dx / this.view.scale;
      this.view.cz -= dy / this.view.scale;
      drag.x = e.offsetX;
      drag.y = e.offsetY;
      this.redraw();
    });
    canvas.addEventListener('pointerup', (e) => {
      if (drag && !drag.moved) this.click(e.offsetX, e.offsetY);
      drag = null;
    });
    canvas.addEventListener('wheel', (e) => {
      if (!this.view) return;
      e.preventDefault();
      this.view.scale *= e.deltaY < 0 ? 1.15 : 1 / 1.15;
      this.redraw();
    }, { passive: false });
    canvas.addEventListener('dblclick', () => { this.view = null; this.redraw(); });
    new ResizeObserver(() => this.redraw()).observe(canvas);
  }

  // What the view knows of an entity: any of name, parent, transform (a body) may be given.
  put(uuid, info) {
    const n = this.nodes.get(uuid) || { name: '', parent: null, t: null };
    if (info.name !== undefined) n.name = info.name;
    if (info.parent !== undefined) n.parent = info.parent;
    if (info.transform !== undefined) n.t = info.transform ? { ...n.t, ...info.transform } : null;
    this.nodes.set(uuid, n);
    this.redraw();
  }

  remove(uuid) {
    this.nodes.delete(uuid);
    this.redraw();
  }

  clear() { // a fresh snapshot follows: fit it
    this.nodes.clear();
    this.view = null;
    this.redraw();
  }

  select(uuid) {
    this.selected = uuid;
    this.redraw();
  }

  // World position of a node: its local TRS under its parents' (a parent without a transform
  // counts as the identity).
  world(uuid, memo, depth = 0) {
    if (memo.has(uuid)) return memo.get(uuid);
    const n = this.nodes.get(uuid);
    let r = { p: [0, 0, 0], q: [0, 0, 0, 1], s: [1, 1, 1] };
    if (n && depth < 256) {
      const parent = n.parent && n.parent !== 'root' ? this.world(n.parent, memo, depth + 1) : r;
      const t = n.t || {};
      const p = t.position || [0, 0, 0], q = t.rotation || [0, 0, 0, 1], s = t.scale || [1, 1, 1];
      const scaled = [p[0] * parent.s[0], p[1] * parent.s[1], p[2] * parent.s[2]];
      const off = qrot(parent.q, scaled);
      r = {
        p: [parent.p[0] + off[0], parent.p[1] + off[1], parent.p[2] + off[2]],
        q: qmul(parent.q, q),
        s: [parent.s[0] * s[0], parent.s[1] * s[1], parent.s[2] * s[2]],
      };
    }
    memo.set(uuid, r);
    return r;
  }

  fit(points) {
    let minx = Infinity, maxx = -Infinity, minz = Infinity, maxz = -Infinity;
    for (const { p } of points) {
      minx = Math.min(minx, p[0]); maxx = Math.max(maxx, p[0]);
      minz = Math.min(minz, p[2]); maxz = Math.max(maxz, p[2]);
    }
    if (!points.length) { minx = minz = -10; maxx = maxz = 10; }
    const w = this.canvas.clientWidth || 1, h = this.canvas.clientHeight || 1;
    const span = Math.max(maxx - minx, maxz - minz, 1) * 1.3;
    this.view = { cx: (minx + maxx) / 2, cz: (minz + maxz) / 2, scale: Math.min(w, h) / span };
  }

  redraw() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.draw(); });
  }

  draw() {
    const c = this.canvas, dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth, h = c.clientHeight;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
    }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const memo = new Map();
    const points = [];
    for (const [uuid, n] of this.nodes) if (n.t) points.push({ uuid, n, ...this.world(uuid, memo) });
    // fitted to what is known until there is something to fit (then kept: the user pans and zooms)
    if (!this.view) this.fit(points);
    const { cx, cz, scale } = this.view;
    if (!points.length) this.view = null;
    const sx = (x) => w / 2 + (x - cx) * scale, sy = (z) => h / 2 + (z - cz) * scale;

    this.drawGrid(g, w, h, sx, sy, cx, cz, scale);

    this.drawn = [];
    const labels = points.length <= 200;
    const spots = new Map(); // label position → names there
    g.font = '11px system-ui, sans-serif';
    for (const pt of points) {
      const x = sx(pt.p[0]), y = sy(pt.p[2]);
      this.drawn.push({ uuid: pt.uuid, x, y });
      const sel = pt.uuid === this.selected;
      // heading: the transform's forward (-z) turned by its world rotation
      const f = qrot(pt.q, [0, 0, -1]);
      const len = Math.hypot(f[0], f[2]);
      if (len > 1e-3) {
        g.strokeStyle = sel ? '#ffd34d' : 'rgba(150,200,255,0.6)';
        g.beginPath(); g.moveTo(x, y); g.lineTo(x + (f[0] / len) * 12, y + (f[2] / len) * 12); g.stroke();
      }
      g.fillStyle = sel ? '#ffd34d' : '#7fb4ff';
      g.beginPath(); g.arc(x, y, sel ? 6 : 4, 0, Math.PI * 2); g.fill();
      if (labels || sel) { // entities at the same spot share one label
        const key = `${Math.round(x / 6)},${Math.round(y / 6)}`;
        const at = spots.get(key) || { x, y, names: [], sel: false };
        at.names.push(pt.n.name || pt.uuid.slice(0, 8));
        at.sel = at.sel || sel;
        spots.set(key, at);
      }
    }
    const placed = []; // label boxes drawn so far: a label that would cover one moves down a line
    for (const at of spots.values()) {
      const more = at.names.length > 3 ? ` +${at.names.length - 3}` : '';
      const text = at.names.slice(0, 3).join(', ') + more;
      const lw = g.measureText(text).width;
      let ly = at.y - 6;
      for (let tries = 0; tries < 6 && placed.some((b) => at.x + 8 < b.x + b.w && b.x < at.x + 8 + lw && Math.abs(b.y - ly) < 12); tries++) ly += 12;
      placed.push({ x: at.x + 8, y: ly, w: lw });
      g.fillStyle = at.sel ? '#ffe9a8' : 'rgba(220,230,245,0.8)';
      g.fillText(text, at.x + 8, ly);
    }
  }

  // The scene's grid settings (settings.get's grid): drawn from the next frame on.
  setGrid(grid) {
    this.grid = grid;
    this.redraw();
  }

  // The grid's x/z plane seen from above, at its origin, in its own spacing and colours
  // (orientation is not drawn: the view is top-down). Minor lines every base_spacing (grown by
  // major_line_every while closer than 8 px), major ones every major_line_every of them, the two
  // axis lines through the origin; with fade > 0 lines thin out to nothing that far from it.
  drawGrid(g, w, h, sx, sy, cx, cz, scale) {
    const s = this.grid || { enabled: true, display: 'lines', base_spacing: 1, major_line_every: 10, origin: [0, 0, 0],
      minor_color: [0.5, 0.5, 0.5, 0.25], major_color: [0.5, 0.5, 0.5, 0.6], u_color: [0.9, 0.3, 0.3, 0.9],
      v_color: [0.3, 0.5, 0.9, 0.9], fade: 0 };
    if (!s.enabled || s.display === 'none') return;
    const rgba = (c, k) => `rgba(${Math.round(c[0] * 255)},${Math.round(c[1] * 255)},${Math.round(c[2] * 255)},${c[3] * k})`;
    const ox = s.origin[0], oz = s.origin[2];
    const fadeAt = (d) => (s.fade > 0 ? Math.max(0, 1 - Math.abs(d) / s.fade) : 1);
    const grow = s.major_line_every > 1 ? s.major_line_every : 10;
    let step = s.base_spacing;
    for (let i = 0; i < 12 && step * scale < 8; i++) step *= grow;
    const major = step * s.major_line_every;
    const x0 = cx - w / 2 / scale, x1 = cx + w / 2 / scale, z0 = cz - h / 2 / scale, z1 = cz + h / 2 / scale;
    const first = (lo, o, every) => o + Math.floor((lo - o) / every) * every;
    const isMajor = (v, o) => Math.abs(Math.round((v - o) / major) * major - (v - o)) < step / 2;
    g.lineWidth = 1;
    if (s.display === 'dots') {
      if ((x1 - x0) / step * ((z1 - z0) / step) > 40000) return; // too dense to mean anything
      for (let x = first(x0, ox, step); x <= x1; x += step) {
        for (let z = first(z0, oz, step); z <= z1; z += step) {
          const big = isMajor(x, ox) && isMajor(z, oz);
          g.fillStyle = rgba(big ? s.major_color : s.minor_color, fadeAt(Math.hypot(x - ox, z - oz)));
          g.fillRect(Math.round(sx(x)) - (big ? 1.5 : 1), Math.round(sy(z)) - (big ? 1.5 : 1), big ? 3 : 2, big ? 3 : 2);
        }
      }
    } else {
      for (let x = first(x0, ox, step); x <= x1; x += step) {
        g.strokeStyle = rgba(isMajor(x, ox) ? s.major_color : s.minor_color, fadeAt(x - ox));
        g.beginPath(); g.moveTo(Math.round(sx(x)) + 0.5, 0); g.lineTo(Math.round(sx(x)) + 0.5, h); g.stroke();
      }
      for (let z = first(z0, oz, step); z <= z1; z += step) {
        g.strokeStyle = rgba(isMajor(z, oz) ? s.major_color : s.minor_color, fadeAt(z - oz));
        g.beginPath(); g.moveTo(0, Math.round(sy(z)) + 0.5); g.lineTo(w, Math.round(sy(z)) + 0.5); g.stroke();
      }
    }
    g.strokeStyle = rgba(s.u_color, 1); // the grid's u axis (x)
    g.beginPath(); g.moveTo(0, sy(oz)); g.lineTo(w, sy(oz)); g.stroke();
    g.strokeStyle = rgba(s.v_color, 1); // its v axis (z)
    g.beginPath(); g.moveTo(sx(ox), 0); g.lineTo(sx(ox), h); g.stroke();
  }

  click(x, y) {
    let best = null, bestD = 12 * 12;
    for (const d of this.drawn) {
      const dd = (d.x - x) ** 2 + (d.y - y) ** 2;
      if (dd <= bestD) { best = d; bestD = dd; }
    }
    if (best) this.onSelect(best.uuid);
  }
}
