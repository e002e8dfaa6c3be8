// copy_paste_test.mjs — the inspector's editing loop in headless Chromium against a real `keel serve`
// of a copy of the demo scene: Ctrl+C / Ctrl+V on the hierarchy copies and pastes the selected
// entity (a new one with a fresh UUID shows in the hierarchy), the title shows the unsaved marker
// ● after that edit, Save is disabled while clean, and Save makes the marker go.
//   node copy_paste_test.mjs KEEL SCENE
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { check, click, chromium, freePort, results, rpc, startServer as serveKeel, until } from './lib.mjs';

const [keelBin, demo] = process.argv.slice(2);
if (!keelBin || !demo) {
  console.error('usage: node copy_paste_test.mjs KEEL SCENE');
  process.exit(2);
}
const startServer = (port, file, extra = []) => serveKeel(keelBin, file, port, extra);

const servers = [];
const temps = [];
let browser;
try {
  // a copy: the test saves over it
  const dir = mkdtempSync(join(tmpdir(), 'keel-copy-paste-'));
  temps.push(dir);
  const scene = join(dir, 'demo.yaml');
  copyFileSync(demo, scene);
  const server = startServer(await freePort(), scene);
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
  await page.goto(url);
  await page.waitForSelector('body.ready', { timeout: 30000 });

  const title = () => page.title();
  check(!(await title()).includes('●'), `a freshly loaded world: no unsaved marker ("${await title()}")`);
  check(await page.$eval('#save', (e) => e.disabled), 'Save is disabled while the world is clean');

  const topRows = (name) => page.evaluate((n) => [...document.querySelectorAll('#tree .items > li > .row .name')]
    .filter((e) => e.textContent === n).length, name);
  check((await topRows('Sun')) === 1, 'the hierarchy lists one Sun');

  // select Sun in the hierarchy, then Ctrl+C, Ctrl+V
  await page.evaluate(() => {
    [...document.querySelectorAll('#tree .row')].find((r) => r.querySelector('.name').textContent === 'Sun').click();
  });
  await until('Sun selected', () => page.evaluate(() => window.keelInspector.state.entity?.name === 'Sun'));
  const sunUuid = await page.evaluate(() => window.keelInspector.state.selected);
  await page.keyboard.down('Control');
  await page.keyboard.press('c');
  await page.keyboard.up('Control');
  await until('the copy', () => page.evaluate(() => !!window.keelInspector.state.clipboard));
  check(true, 'Ctrl+C copied the selection (object.copy)');
  await page.keyboard.down('Control');
  await page.keyboard.press('v');
  await page.keyboard.up('Control');
  await until('the pasted Sun in the hierarchy', async () => (await topRows('Sun')) === 2);
  check(true, 'Ctrl+V pasted a second Sun, shown in the hierarchy');
  const pasted = await until('the paste selected', () => page.evaluate((u) => {
    const s = window.keelInspector.state.selected;
    return s && s !== u ? s : null;
  }, sunUuid));
  check(pasted !== sunUuid, `the paste is a new entity (${pasted}) with a fresh UUID`);
  const info = await rpc(url, 'world.info');
  check(info.dirty === true && info.entities >= 2, 'world.info says the world is dirty after the paste');

  await until('the unsaved marker', async () => (await title()).includes('●'));
  check(true, `the title shows ● after the edit ("${await title()}")`);
  check(!(await page.$eval('#save', (e) => e.disabled)), 'Save is enabled while dirty');

  await click(page, '#save');
  await until('the marker gone after Save', async () => !(await title()).includes('●'));
  check(true, `Save took the marker away ("${await title()}")`);
  check(await page.$eval('#save', (e) => e.disabled), 'Save is disabled again');
  check((await rpc(url, 'world.info')).dirty === false, 'world.info says clean after the save');
  const saved = readFileSync(scene, 'utf8');
  check(saved.includes(pasted), 'the scene file holds the pasted entity');

  // undo the paste: dirty again (the file has it), redo: clean again (back at the saved revision)
  await click(page, '#undo');
  await until('the marker after undo', async () => (await title()).includes('●'));
  check(true, 'undoing past the save shows the marker again');
  await click(page, '#redo');
  await until('no marker after redo', async () => !(await title()).includes('●'));
  check(true, 'redoing back to the saved revision makes it clean again');
  check(pageErrors.length === 0, `no errors in the page${pageErrors.length ? `: ${pageErrors.join(' | ')}` : ''}`);
} catch (e) {
  check(false, e.stack || String(e));
} finally {
  if (browser) await browser.close().catch(() => {});
  for (const s of servers) s.child.kill('SIGTERM');
  for (const d of temps) rmSync(d, { recursive: true, force: true });
}
console.log(`${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
