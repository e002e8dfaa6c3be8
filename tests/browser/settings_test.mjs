// settings_test.mjs — the scene settings in headless Chromium against a real `keel serve` of the
// demo: selecting the scene root shows the Grid panel; changing a grid colour there reaches the
// world (read back through /rpc settings.get) and the scene view's grid; Undo takes it back.
//   node settings_test.mjs KEEL SCENE
import puppeteer from 'puppeteer-core';
import { check, click, freePort, openInspector, results, rpc, startServer, until } from './lib.mjs';

const [keelBin, demo] = process.argv.slice(2);
if (!keelBin || !demo) {
  console.error('usage: node settings_test.mjs KEEL SCENE');
  process.exit(2);
}

let server;
let browser;
try {
  server = startServer(keelBin, demo, await freePort());
  const url = await server.url;
  let page, pageErrors;
  ({ browser, page, pageErrors } = await openInspector(puppeteer, url));
  await until('the settings loaded', () => page.evaluate(() => !!window.keelInspector.state.settings));

  await click(page, '#tree li.root > .row');
  await page.waitForSelector('section.settings [data-field="major_color"]', { timeout: 15000 });
  check(true, "the scene root's panel shows the Grid settings");
  const tip = await page.$eval('section.settings label.row:has([data-field="fade"])', (e) => e.title);
  check(/fade out/.test(tip), `a grid setting's label has a tooltip ("${tip}")`);

  // a new major line colour from the panel's picker
  await page.$eval('section.settings input[type=color][data-field="major_color"]', (e) => {
    e.value = '#ff0000';
    e.dispatchEvent(new Event('change', { bubbles: true }));
  });
  const got = await until('the colour in the world', async () => {
    const s = await rpc(url, 'settings.get');
    return s.grid.major_color[0] === 1 && s.grid.major_color[1] === 0 ? s : null;
  });
  check(got.grid.major_color[2] === 0, `settings.get reads the new major_color ${JSON.stringify(got.grid.major_color)}`);
  // the scene view's major lines in that colour: a pixel of pure red across the middle row
  const red = await until('a red grid line drawn', () => page.evaluate(() => {
    const c = document.querySelector('#view');
    const d = c.getContext('2d').getImageData(0, Math.floor(c.height / 2) + 3, c.width, 1).data;
    for (let x = 0; x < c.width; x++) if (d[4 * x] === 255 && d[4 * x + 1] === 0 && d[4 * x + 2] === 0 && d[4 * x + 3] > 0) return x + 1;
    return null;
  }));
  check(red > 0, `the scene view draws the major lines in the new colour (at x = ${red - 1})`);

  await page.$eval('section.settings select[data-field="display"]', (e) => {
    e.value = 'dots';
    e.dispatchEvent(new Event('change', { bubbles: true }));
  });
  await until('display dots', async () => (await rpc(url, 'settings.get')).grid.display === 'dots');
  check(true, 'the display choice reaches the world');

  // a refused value shows its error in the panel and changes nothing
  await page.$eval('section.settings input[data-field="base_spacing"]', (e) => {
    e.value = '-1';
    e.dispatchEvent(new Event('change', { bubbles: true }));
  });
  await until('the refusal shown', () => page.$eval('section.settings .status', (e) => e.textContent.includes('base_spacing')));
  check((await rpc(url, 'settings.get')).grid.base_spacing === 1, 'a refused base_spacing changes nothing');

  await click(page, '#undo');
  await until('display back to lines', async () => (await rpc(url, 'settings.get')).grid.display === 'lines');
  await click(page, '#undo');
  await until('the colour undone', async () => (await rpc(url, 'settings.get')).grid.major_color[0] === 0.5);
  check(true, 'Undo takes back each settings edit, one at a time');
  check(pageErrors.length === 0, `no errors in the page${pageErrors.length ? `: ${pageErrors.join(' | ')}` : ''}`);
} catch (e) {
  check(false, e.stack || String(e));
} finally {
  if (browser) await browser.close().catch(() => {});
  if (server) server.child.kill('SIGTERM');
}
console.log(`${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
