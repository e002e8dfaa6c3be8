// watch_test.mjs — `keel serve SCENE --watch` with the inspector open in headless Chromium: the
// scene file edited on disk reaches the page; a live edit and a disk edit of the same field make
// a conflict, which the banner lists and "take disk" resolves.
//   node watch_test.mjs KEEL
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { check, click, chromium, freePort, results, rpc, startServer as serveKeel, until } from './lib.mjs';

const [keelBin] = process.argv.slice(2);
if (!keelBin) {
  console.error('usage: node watch_test.mjs KEEL');
  process.exit(2);
}
const startServer = (port, file) => serveKeel(keelBin, file, port, ['--watch']);

const UUID = '5dc7c982-acd0-474b-bb4b-95d120079e11';
const sceneText = (x) => `keel: 1
scene:
  uuid: b6c5145d-07d9-419d-9626-ead6cc88ef91
  name: Watch
root: []
entities:
- uuid: ${UUID}
  name: Lamp
  components:
  - kind: core:transform
    version: 1
    slot: 0
    body:
      position: [${x}, 2, 3]
`;
const lampX = async (url) => (await rpc(url, 'component.get', { object: 'Lamp', kind: 'core:transform' })).body.position[0];

const dir = mkdtempSync(join(tmpdir(), 'keel-watch-'));
const file = join(dir, 'watch.yaml');
writeFileSync(file, sceneText(1));
let server;
let browser;
try {
  server = startServer(await freePort(), file);
  const url = await server.url;
  console.log(`server: ${url}`);
  browser = await puppeteer.launch({ executablePath: chromium, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.setViewport({ width: 1400, height: 820 });
  await page.goto(url);
  await page.waitForSelector('body.ready', { timeout: 30000 });
  check(await page.$eval('#conflicts', (e) => e.hidden), 'no conflicts banner at first');

  await page.$eval('#tree input[type=search]', (e) => { e.value = 'Lamp'; e.dispatchEvent(new Event('input')); });
  await until('the search result', () => page.$$eval('#tree .row .name', (ns) => ns.length === 1 && ns[0].textContent === 'Lamp'));
  await click(page, '#tree .row');
  const field = 'section.comp[data-kind="core:transform"] input[data-field="position"]';
  await page.waitForSelector(field, { timeout: 20000 });
  check((await page.$eval(field, (e) => e.value)) === '1', 'the form shows position x = 1');

  // the file edited on disk: the world and the page follow
  writeFileSync(file, sceneText(5));
  await until('the disk edit to reach the world', async () => (await lampX(url)) === 5);
  check(true, 'the file edited on disk reached the world (x = 5)');
  await until('the page to show it', () => page.$eval(field, (e) => e.value === '5'));
  check(true, 'the page shows the value from disk');

  // a live edit, then the same field on disk: a conflict, nothing applied
  await click(page, field, { clickCount: 3 });
  await page.keyboard.type('7');
  await page.keyboard.press('Tab');
  await until('the live edit', async () => (await lampX(url)) === 7);
  writeFileSync(file, sceneText(9));
  await until('the banner', () => page.$eval('#conflicts', (e) => !e.hidden));
  const paths = await page.$$eval('#conflicts li', (l) => l.map((li) => li.dataset.path));
  check(paths.length === 1 && paths[0].startsWith(`${UUID}/core:transform[0]/position`),
    `the banner lists the conflict (${paths.join(', ')})`);
  check((await lampX(url)) === 7, 'nothing was applied while in conflict');

  await click(page, '#conflicts li .take-disk');
  await until('take disk to reach the world', async () => (await lampX(url)) === 9);
  check(true, '"take disk" applied the file\'s value');
  await until('the banner to go', () => page.$eval('#conflicts', (e) => e.hidden));
  check(true, 'the banner is gone once resolved');
  check(readFileSync(file, 'utf8').includes('[9, 2, 3]'), 'the file is left as it was');
  check(pageErrors.length === 0, `no page errors (${pageErrors.join('; ')})`);
} catch (e) {
  results.failed++;
  console.log(`FAILED: ${e.stack || e}`);
} finally {
  if (browser) await browser.close();
  if (server) server.child.kill('SIGINT');
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
