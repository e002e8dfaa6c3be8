// tree.js — the hierarchy: children listed a page at a time through object.list (offset/limit),
// expanded on demand; a search box lists entities by name instead.

import { call } from './rpc.js';

const PAGE = 100;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

export class Tree {
  // `onSelect(uuid)`; `onError(text)`; names seen are kept in `names` (uuid → name) for labels.
  constructor(root, { onSelect, onError }) {
    this.root = root;
    this.onSelect = onSelect;
    this.onError = onError;
    this.names = new Map();
    this.expanded = new Set(); // nodes kept open across reloads
    this.selected = null;
    this.query = '';
    this.offset = 0;
    this.total = 0;
    this.list = root.querySelector('.items');
    this.pager = root.querySelector('.pager');
    this.search = root.querySelector('input[type=search]');
    let timer = null;
    this.search.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => { this.query = this.search.value.trim(); this.offset = 0; this.reload(); }, 200);
    });
    root.querySelector('.prev').addEventListener('click', () => this.page(-1));
    root.querySelector('.next').addEventListener('click', () => this.page(1));
  }

  page(dir) {
    const next = this.offset + dir * PAGE;
    if (next < 0 || next >= this.total) return;
    this.offset = next;
    this.reload();
  }

  // The top level (children of the root), or the search's matches, at the current offset.
  async reload() {
    const params = { offset: this.offset, limit: PAGE };
    if (this.query) params.name = this.query;
    else params.parent = 'root';
    const seq = (this.seq = (this.seq || 0) + 1);
    let res;
    try {
      res = await call('object.list', params);
    } catch (e) {
      this.onError(e.text || e.message);
      return;
    }
    if (seq !== this.seq) return; // a later reload (another search) was asked meanwhile
    this.total = res.total ?? res.entities.length;
    const items = res.entities.map((o) => this.item(o, !this.query));
    if (!this.query && this.offset === 0) items.unshift(this.rootItem());
    this.list.replaceChildren(...items);
    const last = Math.min(this.offset + res.entities.length, this.total);
    this.pager.querySelector('.range').textContent =
      this.total ? `${this.offset + 1}–${last} of ${this.total}` : (this.query ? 'no match' : 'empty');
    this.pager.querySelector('.prev').disabled = this.offset === 0;
    this.pager.querySelector('.next').disabled = last >= this.total;
  }

  // The scene root (world settings and other root-only components), first on the first page.
  rootItem() {
    const li = el('li', 'root');
    li.dataset.uuid = 'root';
    const row = el('div', 'row');
    row.append(el('span', 'toggle'), el('span', 'name', 'Scene root'), el('span', 'kinds', 'world settings'));
    if (this.selected === 'root') row.classList.add('selected');
    row.addEventListener('click', () => this.onSelect('root'));
    li.append(row);
    return li;
  }

  item(o, expandable) {
    this.names.set(o.uuid, o.name || '');
    const li = el('li');
    li.dataset.uuid = o.uuid;
    const row = el('div', 'row');
    const count = o.children ?? o.child_count ?? 0;
    const toggle = el('button', 'toggle', expandable && count > 0 ? '▸' : '');
    toggle.type = 'button';
    toggle.disabled = !(expandable && count > 0);
    const name = el('span', 'name', o.name || '(unnamed)');
    if (o.enabled === false) row.classList.add('disabled');
    const kinds = el('span', 'kinds', (o.kinds || []).map((k) => k.replace(/^core:/, '')).join(' '));
    row.append(toggle, name, kinds);
    if (o.uuid === this.selected) row.classList.add('selected');
    row.addEventListener('click', (ev) => {
      if (ev.target === toggle) return;
      this.onSelect(o.uuid);
    });
    toggle.addEventListener('click', () => this.expand(li, o, toggle));
    li.append(row);
    if (!toggle.disabled && this.expanded.has(o.uuid)) queueMicrotask(() => this.expand(li, o, toggle));
    return li;
  }

  async expand(li, o, toggle, offset = 0) {
    let ul = li.querySelector(':scope > ul');
    if (ul && offset === 0) { // collapse
      ul.remove();
      toggle.textContent = '▸';
      this.expanded.delete(o.uuid);
      return;
    }
    this.expanded.add(o.uuid);
    let res;
    try {
      res = await call('object.list', { parent: o.uuid, offset, limit: PAGE });
    } catch (e) {
      this.onError(e.text || e.message);
      return;
    }
    if (!ul) {
      ul = el('ul');
      li.append(ul);
    }
    ul.querySelector(':scope > li.more')?.remove();
    for (const c of res.entities) ul.append(this.item(c, true));
    const shown = offset + res.entities.length;
    if (shown < (res.total ?? 0)) {
      const more = el('li', 'more', `${res.total - shown} more…`);
      more.addEventListener('click', () => this.expand(li, o, toggle, shown));
      ul.append(more);
    }
    toggle.textContent = '▾';
  }

  // An entity renamed or (dis)abled elsewhere: its rows say so (a move shows at the next reload).
  update(o) {
    this.names.set(o.uuid, o.name || '');
    for (const li of this.root.querySelectorAll('li[data-uuid]')) {
      if (li.dataset.uuid !== o.uuid) continue;
      const row = li.querySelector(':scope > .row');
      row.querySelector('.name').textContent = o.name || '(unnamed)';
      row.classList.toggle('disabled', o.enabled === false);
    }
  }

  select(uuid) {
    this.selected = uuid;
    for (const row of this.root.querySelectorAll('.row.selected')) row.classList.remove('selected');
    for (const li of this.root.querySelectorAll('li[data-uuid]')) {
      if (li.dataset.uuid === uuid) li.querySelector(':scope > .row').classList.add('selected');
    }
  }
}
