// inspector_test.mjs — the inspector page in headless Chromium against a real `keel serve`:
// select an entity, edit a float field, check the world's value through the channel, undo it,
// check it reverted, and save a screenshot.
// Then a scene with a component of an unknown kind: shown read-only.
//   node inspector_test.mjs KEEL SCENE UNKNOWN_KIND_SCENE SCREENSHOT.png [DOCS_COPY.png]
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { check, click, chromium, freePort, results, rpc, startServer as serveKeel, until } from './lib.mjs';

const [keelBin, scene, unknownScene, shotPath, docsCopy] = process.argv.slice(2);
if (!keelBin || !scene || !unknownScene || !shotPath) {
  console.error('usage: node inspector_test.mjs KEEL SCENE UNKNOWN_KIND_SCENE SCREENSHOT.png [DOCS_COPY.png]');
  process.exit(2);
}
const startServer = (port, file = scene, extra = []) => serveKeel(keelBin, file, port, extra);

const healthValue = async (url) => (await rpc(url, 'component.get', { object: 'Player', kind: 'game:health' })).body.value;

const servers = [];
const temps = [];
let browser;
try {
  const server = startServer(await freePort());
  servers.push(server);
  const url = await server.url;
  console.log(`server: ${url}`);
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });
  await page.setViewport({ width: 1400, height: 820 });

  // without the token the page says what to do and calls nothing
  await page.goto(new URL('/', url).href);
  const noToken = await page.$eval('#message', (e) => e.textContent);
  check(/no token/.test(noToken), `without #token the page says so ("${noToken}")`);

  await page.goto('about:blank');
  await page.goto(url);
  await page.waitForSelector('body.ready', { timeout: 30000 });
  check((await page.$eval('#world-name', (e) => e.textContent)) === 'Demo', 'the bar names the world');
  const rows = await page.$$eval('#tree .row .name', (ns) => ns.map((n) => n.textContent));
  check(rows.length > 0, `the hierarchy lists the top level (${rows.join(', ')})`);

  // the scene view drew the transforms
  await until('the scene view', () => page.evaluate(() => document.querySelector('#view').width > 0));

  // select Player through the search box
  await page.$eval('#tree input[type=search]', (e) => { e.value = 'Player'; e.dispatchEvent(new Event('input')); });
  await until('the search result', () => page.$$eval('#tree .row .name', (ns) => ns.length === 1 && ns[0].textContent === 'Player'));
  await click(page, '#tree .row');
  const field = 'section.comp[data-kind="game:health"] input[data-field="value"]';
  await page.waitForSelector(field, { timeout: 20000 });
  check((await page.$eval('#entity-name', (e) => e.value)) === 'Player', 'the inspector shows the selected entity');
  const before = await healthValue(url);
  check((await page.$eval(field, (e) => e.value)) === String(before), `the form shows the world's value (${before})`);
  check(await page.$eval(field, (e) => e.type === 'number' && e.min === '0' && e.max === '10000'),
    'a float field is a number input with its range');
  check(await page.$eval('section.comp[data-kind="game:health"] input[data-field="dead"]', (e) => e.type === 'checkbox' && e.disabled),
    'a readonly bool is a disabled checkbox');
  check(await page.$$eval('section.comp[data-kind="core:transform"] input[data-field="position"]', (l) => l.length === 3),
    'a vec3 is three number inputs');

  // edit the float: the world changes
  await click(page, field, { clickCount: 3 });
  await page.keyboard.type('42.5');
  await page.keyboard.press('Tab');
  const edited = await until('the edit to reach the world', async () => (await healthValue(url)) === 42.5);
  check(edited, 'editing the field changed the world (component.get reads 42.5)');

  // a refused value: the form says why and the world keeps its value
  await click(page, field, { clickCount: 3 });
  await page.keyboard.type('20000');
  await page.keyboard.press('Tab');
  await page.waitForSelector('section.comp[data-kind="game:health"] .status.shown', { timeout: 20000 });
  const why = await page.$eval('section.comp[data-kind="game:health"] .status', (e) => e.textContent);
  check(why.length > 0 && (await healthValue(url)) === 42.5, `an out-of-range value is refused and shown ("${why}")`);
  check((await page.$eval(field, (e) => e.value)) === '42.5', 'the refused field shows the value kept');

  // undo: the world and the form go back
  await click(page, '#undo');
  await until('the undo to reach the world', async () => (await healthValue(url)) === before);
  check(true, `undo put the value back (${before})`);
  await until('the form to show the undone value', () => page.$eval(field, (e, v) => e.value === v, String(before)));
  check(true, 'the form shows the undone value');

  // step: the frame advances
  const f0 = (await rpc(url, 'world.info')).frame;
  await click(page, '#step');
  await until('the step', async () => (await rpc(url, 'world.info')).frame === f0 + 1);
  check(true, 'Step ran one frame');

  // resume: frames run in real time, live values reach the form through the event stream and
  // the frame-time graph fills; pause stops them
  const shown = await page.$eval(field, (e) => e.value);
  await click(page, '#resume');
  const running = await until('the world to run', async () => {
    const info = await rpc(url, 'world.info');
    return !info.paused && info.frame > f0 + 10 && info;
  });
  check(!!running, `Resume let the world run (frame ${running.frame})`);
  await until('the frame-time graph', () => page.$eval('#frame-ms', (e) => /\d ms$/.test(e.textContent)));
  check(true, `the frame time is shown (${await page.$eval('#frame-ms', (e) => e.textContent)})`);
  await until('a live value', () => page.$eval(field, (e, v) => e.value !== v, shown));
  check(true, `the running world's values reach the form live (health ${shown} -> ${await page.$eval(field, (e) => e.value)})`);
  await until('frame samples', () => page.evaluate(() => window.keelInspector.state.frames.length >= 10));
  check(true, 'the graph has a sample per frame');
  await new Promise((r) => setTimeout(r, 1000));
  await click(page, '#pause');
  await until('the pause', async () => (await rpc(url, 'world.info')).paused);
  await until('the bar to say paused', () => page.$eval('#run-state', (e) => e.textContent === 'paused'));
  check(true, 'Pause stopped the world and the bar says so');

  // the scene view: a click on an entity's dot selects it
  await page.$eval('#tree input[type=search]', (e) => { e.value = ''; e.dispatchEvent(new Event('input')); });
  await until('the whole top level again', () => page.$$eval('#tree .row .name', (ns) => ns.length > 1));

  // the scene root: its root-only components (world settings) are inspected like any entity's
  await page.evaluate(() => document.querySelector('#tree li.root > .row').click());
  const exposure = 'section.comp[data-kind="core:world_settings"] input[data-field="exposure"]';
  await page.waitForSelector(exposure, { timeout: 20000 });
  const rootSettings = await rpc(url, 'component.get', { object: 'root', kind: 'core:world_settings' });
  check((await page.$eval(exposure, (e) => e.value)) === String(rootSettings.body.exposure),
    `the scene root shows its world settings (exposure ${rootSettings.body.exposure})`);
  check(await page.$eval('section.comp[data-kind="core:world_settings"] input[type=color][data-field="ambient"]', (e) => /^#[0-9a-f]{6}$/.test(e.value)),
    'a colour field is a colour picker');
  const chaser = await until('Chaser in the scene view', () => page.evaluate(() => {
    const { view, state } = window.keelInspector;
    const uuid = [...state.names].find(([, n]) => n === 'Chaser')?.[0];
    const d = view.drawn.find((p) => p.uuid === uuid);
    return d && { x: d.x, y: d.y };
  }));
  const box = await (await page.$('#view')).boundingBox();
  await page.mouse.click(box.x + chaser.x, box.y + chaser.y);
  await until('Chaser selected', () => page.$eval('#entity-name', (e) => e.value === 'Chaser'));
  check(true, 'a click in the scene view selects the entity drawn there');

  // an entity field: shown by name; "pick" then a click in the hierarchy sets it
  const target = 'section.comp[data-kind="game:follower"] input[data-field="target"]';
  await page.waitForSelector(target);
  const targetOf = async () => (await rpc(url, 'component.get', { object: 'Chaser', kind: 'game:follower' })).body.target;
  const playerUuid = await targetOf();
  check((await page.$eval(target, (e) => e.value)) === 'Player', 'an entity field shows its target by name');
  await click(page, 'section.comp[data-kind="game:follower"] button.pick');
  await page.evaluate(() => {
    [...document.querySelectorAll('#tree .row')].find((r) => r.querySelector('.name').textContent === 'Sun').click();
  });
  const sunUuid = (await rpc(url, 'object.get', { object: 'Sun' })).uuid;
  await until('the picked target to reach the world', async () => (await targetOf()) === sunUuid);
  check((await page.$eval('#entity-name', (e) => e.value)) === 'Chaser', 'picking set the field and kept the selection');
  await until('the form to show the picked target', () => page.$eval(target, (e) => e.value === 'Sun'));
  await click(page, '#undo');
  await until('the undone target', async () => (await targetOf()) === playerUuid);
  check(true, 'the picked entity reached the world, and undo put the old one back');

  // back to Player, with Arena's children shown, for the screenshot
  await page.evaluate(() => {
    const rows = [...document.querySelectorAll('#tree li')];
    rows.find((li) => li.querySelector('.name').textContent === 'Arena')?.querySelector('.toggle').click();
  });
  await until("Arena's children", () => page.$$eval('#tree ul ul .row', (l) => l.length > 0));
  // another client's edit made the moment Player is selected (its object.get perhaps in flight,
  // its event stream perhaps not open yet) reaches the form
  const audioEnabled = 'section.comp[data-kind="core:audio_source"] input.enabled';
  await page.evaluate(() => {
    [...document.querySelectorAll('#tree .row')].find((r) => r.querySelector('.name').textContent === 'Player').click();
  });
  await rpc(url, 'component.enable', { object: 'Player', kind: 'core:audio_source', enabled: false });
  await until('Player selected', () => page.$eval('#entity-name', (e) => e.value === 'Player'));
  await until('the component to show disabled', () => page.$$eval(audioEnabled, (l) => l.length === 1 && !l[0].checked));
  await rpc(url, 'history.undo');
  await until('the component to show enabled', () => page.$eval(audioEnabled, (e) => e.checked));
  check(true, "another client's enable/disable made as the entity is selected reaches the form live");

  // the page's object.get answered before another client's edit but delivered after the edit's
  // event: the form shows the edit, not the older answer
  // every other request goes on while interception is on, the ones after the held one too (a
  // request left unanswered there would stall the page's later calls)
  let holding = true;
  let onRequest;
  const held = new Promise((resolve) => {
    onRequest = async (req) => {
      const body = req.method() === 'POST' ? req.postData() || '' : '';
      if (!holding || !/"object\.get"/.test(body)) { req.continue(); return; }
      holding = false;
      const answer = await fetch(req.url(), {
        method: 'POST', body, headers: { 'Content-Type': 'application/json', Authorization: req.headers().authorization },
      }).then((r) => r.text());
      resolve({ req, answer });
    };
    page.on('request', onRequest);
  });
  await page.setRequestInterception(true);
  await click(page, '#step'); // step, then world.info, then object.get of the selection
  const { req, answer } = await held;
  check(JSON.parse(answer).result.components.find((c) => c.kind === 'core:audio_source').enabled === true,
    'the held object.get answer says enabled');
  await rpc(url, 'component.enable', { object: 'Player', kind: 'core:audio_source', enabled: false });
  // the event arrived: held for after the answer (or, by a page without that, drawn at once)
  await until("the edit's event at the page", () => page.evaluate((sel) => document.querySelector(sel).checked === false
    || (window.keelInspector.state.loading?.events || [])
      .some((ev) => (ev.data.changed || []).some((c) => c.kind === 'core:audio_source' && c.enabled === false)), audioEnabled));
  await req.respond({ status: 200, contentType: 'application/json', body: answer });
  await until('the held answer drawn', () => page.evaluate(() => !window.keelInspector.state.loading));
  await new Promise((r) => setTimeout(r, 300));
  check(await page.$eval(audioEnabled, (e) => !e.checked), 'an event that came while object.get was in flight is applied after its older answer');
  await page.setRequestInterception(false);
  page.off('request', onRequest);
  await rpc(url, 'history.undo');
  await until('the component to show enabled', () => page.$eval(audioEnabled, (e) => e.checked));
  // another client's rename reaches the hierarchy live
  const pillarRow = () => page.$$eval('#tree .row .name', (ns) => ns.map((n) => n.textContent));
  await rpc(url, 'object.rename', { object: 'Pillar', name: 'Tall Pillar' });
  await until('the renamed row', async () => (await pillarRow()).includes('Tall Pillar'));
  await rpc(url, 'history.undo');
  await until('the name back', async () => (await pillarRow()).includes('Pillar'));
  check(true, "another client's rename reaches the hierarchy live");

  check(pageErrors.length === 0, `no errors in the page${pageErrors.length ? `: ${pageErrors.join(' | ')}` : ''}`);
  await new Promise((r) => setTimeout(r, 300));
  await page.screenshot({ path: shotPath });
  console.log(`screenshot: ${shotPath}`);
  if (docsCopy) copyFileSync(shotPath, docsCopy);

  // a component of a kind this process does not know: its body, read-only
  // (served with one more kind, whose update always fails, for the errors list)
  const kindsDir = mkdtempSync(join(tmpdir(), 'keel-inspector-'));
  writeFileSync(join(kindsDir, 'faulty.lua'), `local keel = require "keel"
keel.kind{ key = "test:faulty", fields = { { "level", "int", default = 1 } },
  update = function() error("the faulty kind fails on purpose") end }
`);
  const other = startServer(await freePort(), unknownScene, ['--kinds', kindsDir]);
  temps.push(kindsDir);
  servers.push(other);
  const otherUrl = await other.url;
  const page2 = await browser.newPage();
  page2.on('pageerror', (e) => pageErrors.push(e.message));
  await page2.goto(otherUrl);
  await page2.waitForSelector('body.ready', { timeout: 30000 });
  await page2.evaluate(() => {
    [...document.querySelectorAll('#tree .row')].find((r) => r.querySelector('.name').textContent === 'Dock').click();
  });
  const unknown = 'section.comp.unknown[data-kind="mod:winch"]';
  await page2.waitForSelector(unknown, { timeout: 20000 });
  const body = await page2.$eval(`${unknown} pre.body`, (e) => e.textContent);
  check(/rope_length/.test(body) && /torque/.test(body), 'an unknown component shows its body as read');
  check(await page2.$$eval(`${unknown} input:not([disabled]), ${unknown} select`, (l) => l.length === 0),
    'an unknown component has no field to edit');
  // the errors list: a callback failure shows up (the page polls world.info) and names its entity
  await rpc(otherUrl, 'component.add', { object: 'Dock', kind: 'test:faulty' });
  await rpc(otherUrl, 'world.step', { frames: 1 });
  await page2.waitForSelector('#errors li', { timeout: 20000 });
  const shownError = await page2.$eval('#errors li', (e) => e.textContent);
  check(/fails on purpose/.test(shownError) && /Dock/.test(shownError) && /test:faulty/.test(shownError),
    `a callback failure is listed with its entity and kind ("${shownError}")`);
  check((await page2.$eval('#errors .count', (e) => e.textContent)) === '1', 'the errors list counts it');

  // paging: 120 matches for a search are shown 100 at a time
  for (let i = 0; i < 120; i++) {
    await rpc(otherUrl, 'object.spawn', { name: `Crate ${i}`, components: [{ kind: 'core:transform', body: { position: [i % 12, 0, Math.floor(i / 12)] } }] });
  }
  await page2.$eval('#tree input[type=search]', (e) => { e.value = 'Crate'; e.dispatchEvent(new Event('input')); });
  await until('the first page', () => page2.$eval('#tree .range', (e) => e.textContent === '1–100 of 120'));
  check((await page2.$$('#tree .items > li')).length === 100, 'a search lists its first 100 matches, out of 120');
  await page2.click('#tree .next');
  await until('the second page', () => page2.$eval('#tree .range', (e) => e.textContent === '101–120 of 120'));
  check((await page2.$$('#tree .items > li')).length === 20, 'Next shows the other 20');
  check(await page2.$eval('#tree .next', (e) => e.disabled), 'Next is disabled on the last page');
  check(pageErrors.length === 0, `no errors in the second page${pageErrors.length ? `: ${pageErrors.join(' | ')}` : ''}`);
} catch (e) {
  check(false, e.stack || String(e));
} finally {
  if (browser) await browser.close().catch(() => {});
  for (const s of servers) s.child.kill('SIGTERM');
  for (const d of temps) rmSync(d, { recursive: true, force: true });
}
console.log(`${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
