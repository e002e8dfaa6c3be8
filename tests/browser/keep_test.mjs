// keep_test.mjs — play mode's Keep toggle in headless Chromium against a real `keel serve`:
// press Play, change a component's value in its form, toggle Keep on that component, press
// Stop: the kept value stays in the world put back (and the form shows it); a value changed in
// play without Keep does not.
//   node keep_test.mjs KEEL SCENE
import puppeteer from 'puppeteer-core';
import { check, click, chromium, freePort, results, rpc, startServer as serveKeel, until } from './lib.mjs';

const [keelBin, scene] = process.argv.slice(2);
if (!keelBin || !scene) {
  console.error('usage: node keep_test.mjs KEEL SCENE');
  process.exit(2);
}
const startServer = (port) => serveKeel(keelBin, scene, port);

const component = (url, object, kind) => rpc(url, 'component.get', { object, kind });

let server;
let browser;
try {
  server = startServer(await freePort());
  const url = await server.url;
  console.log(`server: ${url}`);
  await rpc(url, 'world.pause'); // the demo's health ticks while running: held still, the values are the edits'
  browser = await puppeteer.launch({
    executablePath: chromium, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });
  await page.setViewport({ width: 1400, height: 820 });
  await page.goto(url);
  await page.waitForSelector('body.ready', { timeout: 30000 });

  check(await page.$eval('#stop', (e) => e.disabled) && !(await page.$eval('#play', (e) => e.disabled)),
    'before play: Play is enabled, Stop is not');

  // select Player: no Keep toggle outside play mode
  await page.$eval('#tree input[type=search]', (e) => { e.value = 'Player'; e.dispatchEvent(new Event('input')); });
  await until('the search result', () => page.$$eval('#tree .row .name', (ns) => ns.length === 1 && ns[0].textContent === 'Player'));
  await click(page, '#tree .row');
  const health = 'section.comp[data-kind="game:health"]';
  const field = `${health} input[data-field="value"]`;
  const keepBox = `${health} label.keep input`;
  await page.waitForSelector(field, { timeout: 20000 });
  check(!(await page.$eval(`${health} label.keep`, (e) => e.offsetParent !== null)), 'no Keep toggle while not playing');
  const before = (await component(url, 'Player', 'game:health')).body.value;
  const transformBefore = (await component(url, 'Player', 'core:transform')).body.position;

  // Play: the world plays, the Keep toggles show
  await click(page, '#play');
  await until('play mode', async () => (await rpc(url, 'world.info')).playing);
  check(true, 'Play put the world in play mode');
  await until('the Keep toggle', () => page.$eval(`${health} label.keep`, (e) => e.offsetParent !== null));
  check(await page.$eval('#keep-entity', (e) => e.offsetParent !== null), 'the entity header has a Keep toggle too');

  // edit the value in play, and keep it
  const kept = before === 61.5 ? 62.5 : 61.5;
  await click(page, field, { clickCount: 3 });
  await page.keyboard.type(String(kept));
  await page.keyboard.press('Tab');
  await until('the edit to reach the world', async () => (await component(url, 'Player', 'game:health')).body.value === kept);
  check(true, `editing in play changed the world (${before} -> ${kept})`);
  await click(page, keepBox);
  await until('the keep', () => page.evaluate(() => window.keelInspector.state.kept.size === 1));
  check(true, 'the Keep toggle marked the component (play.keep)');

  // a change not kept: the transform
  await rpc(url, 'component.set', { object: 'Player', kind: 'core:transform', fields: { position: [99, 0, 99] } });

  // Stop: the kept value stays, the rest is put back
  await click(page, '#stop');
  await until('play mode to end', async () => !(await rpc(url, 'world.info')).playing);
  const after = (await component(url, 'Player', 'game:health')).body.value;
  check(after === kept, `the kept value stayed after Stop (${after})`);
  const transformAfter = (await component(url, 'Player', 'core:transform')).body.position;
  check(JSON.stringify(transformAfter) === JSON.stringify(transformBefore),
    `a change not kept was put back (${JSON.stringify(transformAfter)})`);
  await until('the form to show the kept value', () => page.$eval(field, (e, v) => e.value === v, String(kept)));
  check(true, 'the form shows the kept value');
  check(!(await page.$eval(`${health} label.keep`, (e) => e.offsetParent !== null)), 'the Keep toggles are gone after Stop');

  // one undo takes the kept change back
  await click(page, '#undo');
  await until('the undo', async () => (await component(url, 'Player', 'game:health')).body.value === before);
  check(true, `Undo took the kept change back (${before})`);
  check(pageErrors.length === 0, `no errors in the page${pageErrors.length ? `: ${pageErrors.join(' | ')}` : ''}`);
} catch (e) {
  check(false, e.stack || String(e));
} finally {
  if (browser) await browser.close().catch(() => {});
  if (server) server.child.kill('SIGTERM');
}
console.log(`${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
