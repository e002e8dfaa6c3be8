// profiler_test.mjs — the inspector's Profiler tab in headless Chromium against a real `keel serve`
// of a scene whose kinds folder holds a deliberately slow system: opening the tab turns profiling
// on; after frames run, the chart is drawn (the canvas is not blank), the slow system heads the
// table sorted by time, sorting by calls reorders it, a `stats` event arrives on the stream, and
// clicking a kind's row selects an entity holding that kind. Leaving the tab turns profiling off.
//   node profiler_test.mjs KEEL [SCREENSHOT.png]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { check, click, freePort, openInspector, results, rpc, startServer, until } from './lib.mjs';

const [keelBin, shot] = process.argv.slice(2);
if (!keelBin) {
  console.error('usage: node profiler_test.mjs KEEL');
  process.exit(2);
}

const KIND = `local keel = require "keel"
keel.kind{ key = "prof:busy", fields = { { "n", "int" } }, update = function(self) self.n = self.n + 1 end }
keel.kind{ key = "prof:idle", fields = { { "n", "int" } } }
-- 3 ms for each entity: the costliest thing in every frame
keel.system{ name = "prof:slow", phase = "update", query = { "prof:busy" }, each = function()
  local t = os.clock()
  while os.clock() - t < 0.003 do end
end }
keel.system{ name = "prof:quick", phase = "update", query = { "prof:idle" }, each = function() end }
`;
const entity = (n, name, kind) => `- uuid: 3f1c1b6e-2f0a-4c4e-9a51-7d0f8e6b2a1${n}
  name: ${name}
  components:
  - kind: ${kind}
    version: 1
    slot: 0
    body:
      n: 0
`;
const SCENE = `keel: 1
scene:
  uuid: 3f1c1b6e-2f0a-4c4e-9a51-7d0f8e6b2a10
  name: Profiled
root: []
entities:
${entity(1, 'Idle1', 'prof:idle')}${entity(2, 'Busy1', 'prof:busy')}${entity(3, 'Busy2', 'prof:busy')}${entity(4, 'Idle2', 'prof:idle')}`;

const dir = mkdtempSync(join(tmpdir(), 'keel-profiler-'));
mkdirSync(join(dir, 'kinds'));
writeFileSync(join(dir, 'kinds', 'prof.lua'), KIND);
const file = join(dir, 'profiled.yaml');
writeFileSync(file, SCENE);

let server;
let browser;
try {
  server = startServer(keelBin, file, await freePort(), ['--kinds', join(dir, 'kinds')]);
  const url = await server.url;
  console.log(`server: ${url}`);
  check(!(await rpc(url, 'world.stats')).profiling, 'profiling is off before the tab opens');
  let page, pageErrors;
  ({ browser, page, pageErrors } = await openInspector(puppeteer, url));
  check(await page.$eval('#profiler', (e) => e.hidden), 'the Profiler tab is closed at first');
  // the stream's `stats` events, counted in the page
  await page.evaluate(() => {
    window.statsEvents = 0;
    const q = new URLSearchParams({ token: new URLSearchParams(location.hash.slice(1)).get('token'), kinds: 'prof:busy' });
    new EventSource(`events?${q}`).addEventListener('stats', () => { window.statsEvents++; });
  });

  await click(page, '#tabs button[data-tab="profiler"]');
  await until('profiling on', async () => (await rpc(url, 'world.stats')).profiling);
  check(!(await page.$eval('#profiler', (e) => e.hidden)), 'the Profiler tab shows');
  check(true, 'opening the tab turned profiling on (world.stats)');

  await rpc(url, 'world.pause').catch(() => {});
  await rpc(url, 'world.step', { frames: 20 });
  await until('the table rows', () => page.$$eval('#profiler tbody tr', (rs) => rs.length >= 3));
  const top = await page.$eval('#profiler tbody tr', (r) => r.dataset.name);
  check(top === 'prof:slow', `the slow system heads the table sorted by time (${top})`);
  const blank = await page.$eval('#profiler canvas', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let lit = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] !== 0x10 || d[i + 1] !== 0x13 || d[i + 2] !== 0x18) lit++;
    return { lit, w: c.width, h: c.height };
  });
  check(blank.w > 100 && blank.lit > 200, `the chart is drawn (${blank.lit} pixels lit on ${blank.w}x${blank.h})`);
  const stats = await rpc(url, 'world.stats');
  check(stats.history.length >= 20 && stats.systems[0].name === 'prof:slow' && stats.systems[0].entities === 2,
    `world.stats: ${stats.history.length} frames, ${stats.systems[0].name} first over ${stats.systems[0].entities} entities`);

  // sorting by calls: the update hook (2 calls a frame, as many as the slow system's) or quick
  await click(page, '#profiler th[data-sort="calls"]');
  const byCalls = await page.$$eval('#profiler tbody tr', (rs) => rs.map((r) => Number(r.cells[3].textContent)));
  check(byCalls.every((v, i) => i === 0 || byCalls[i - 1] >= v), `sorted by calls (${byCalls.join(', ')})`);
  await click(page, '#profiler th[data-sort="ms"]');

  // the stream: at least one `stats` event while profiling is on (the world runs)
  await rpc(url, 'world.resume');
  await until('a stats event', () => page.evaluate(() => window.statsEvents > 0), 15000);
  check(true, 'the event stream sent a `stats` event');

  // a kind's row selects an entity holding it
  await click(page, '#profiler tbody tr[data-name="prof:busy"]');
  const picked = await until('a selection', () => page.evaluate(() => window.keelInspector.state.selected));
  const obj = await rpc(url, 'object.get', { object: picked });
  const kinds = obj.components.map((c) => c.kind);
  check(kinds.includes('prof:busy'), `clicking prof:busy's row selected ${obj.name} (${kinds.join(', ')})`);

  if (shot) await page.screenshot({ path: shot });
  await click(page, '#tabs button[data-tab="scene"]');
  await until('profiling off', async () => !(await rpc(url, 'world.stats')).profiling);
  check(true, 'leaving the tab turned profiling off again');
  check(pageErrors.length === 0, `no errors in the page${pageErrors.length ? `: ${pageErrors.join(' | ')}` : ''}`);
} catch (e) {
  check(false, e.stack || String(e));
} finally {
  if (browser) await browser.close().catch(() => {});
  if (server) server.child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
