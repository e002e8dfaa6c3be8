// registry_test.mjs — the registry in the inspector, in headless Chromium against a real
// `keel serve`: a field's label shows its tooltip on hover, and a rotation is edited as three
// angles in degrees, the quaternion read back through /rpc.
//   node registry_test.mjs KEEL SCENE
import puppeteer from 'puppeteer-core';
import { check, click, freePort, openInspector, results, rpc, startServer, until } from './lib.mjs';

const [keelBin, scene] = process.argv.slice(2);
if (!keelBin || !scene) {
  console.error('usage: node registry_test.mjs KEEL SCENE');
  process.exit(2);
}

const near = (a, b) => Math.abs(a - b) < 1e-4;

let server;
let browser;
try {
  server = startServer(keelBin, scene, await freePort());
  const url = await server.url;
  console.log(`server: ${url}`);
  await rpc(url, 'world.pause');
  // the bundled game:spot (a derived cone) on a new entity
  await rpc(url, 'object.spawn', { name: 'Beacon', components: ['core:transform', { kind: 'game:spot', body: { cone: 60 } }] });
  const kinds = await rpc(url, 'component.kinds');
  const spot = kinds.find((k) => k.key === 'game:spot');
  const tip = spot.fields.find((f) => f.key === 'cone').tooltip;
  check(typeof tip === 'string' && tip.length > 0, `component.kinds carries the field's tooltip (${tip})`);

  let page, pageErrors;
  ({ browser, page, pageErrors } = await openInspector(puppeteer, url));

  await page.$eval('#tree input[type=search]', (e) => { e.value = 'Beacon'; e.dispatchEvent(new Event('input')); });
  await until('the search result', () => page.$$eval('#tree .row .name', (ns) => ns.length === 1 && ns[0].textContent === 'Beacon'));
  await click(page, '#tree .row');
  const spotForm = 'section.comp[data-kind="game:spot"]';
  await page.waitForSelector(`${spotForm} input[data-field="cone"]`, { timeout: 20000 });

  // hover the label of the cone field: the text under the pointer carries the tooltip
  const label = await page.evaluateHandle((sel) => [...document.querySelectorAll(`${sel} label.row .name`)]
    .find((n) => n.textContent === 'cone'), spotForm);
  await label.hover();
  const hovered = await page.evaluate((n) => {
    const r = n.getBoundingClientRect();
    const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    const withTitle = at && at.closest('[title]');
    return {
      text: at ? at.textContent : null, tag: at ? at.tagName : null, hovered: n.matches(':hover'),
      title: withTitle ? withTitle.getAttribute('title') : null,
    };
  }, label);
  check(hovered.hovered, 'the cone label is under the pointer (:hover)');
  check(hovered.text === 'cone', `the element at the label is its text (${hovered.tag}: ${hovered.text})`);
  check(hovered.title && hovered.title.includes(tip), `its hover text is the tooltip (${hovered.title})`);
  check(await page.$eval(`${spotForm} input[data-field="cone"]`, (e) => Math.abs(parseFloat(e.value) - 60) < 1e-6),
    'the derived cone shows in degrees (60)');
  check(!(await page.$(`${spotForm} input[data-field="cos_cone"]`)), 'the hidden stored field is not shown');

  // the rotation: three angles in degrees
  const rot = 'section.comp[data-kind="core:transform"] input[data-field="rotation"]';
  const count = await page.$$eval(rot, (ns) => ns.length);
  check(count === 3, `a rotation is three inputs (${count})`);
  await click(page, `${rot}[data-index="1"]`, { clickCount: 3 });
  await page.keyboard.type('90');
  await page.keyboard.press('Tab');
  const q = await until('the rotation to reach the world', async () => {
    const r = (await rpc(url, 'component.get', { object: 'Beacon', kind: 'core:transform' })).body.rotation;
    return near(r[1], Math.SQRT1_2) ? r : null;
  });
  check(near(q[0], 0) && near(q[1], Math.SQRT1_2) && near(q[2], 0) && near(q[3], Math.SQRT1_2),
    `90° about y is the quaternion [0, 0.7071, 0, 0.7071] (${JSON.stringify(q)})`);
  await click(page, `${rot}[data-index="0"]`, { clickCount: 3 });
  await page.keyboard.type('30');
  await page.keyboard.press('Tab');
  const q2 = await until('the second edit', async () => {
    const r = (await rpc(url, 'component.get', { object: 'Beacon', kind: 'core:transform' })).body.rotation;
    return near(r[0], 0.1830127) ? r : null;
  });
  // Unity's Quaternion.Euler(30, 90, 0): (0.1830, 0.6830, -0.1830, 0.6830)
  check(near(q2[1], 0.6830127) && near(q2[2], -0.1830127) && near(q2[3], 0.6830127),
    `x 30°, y 90° applies Z, X then Y (${JSON.stringify(q2)})`);
  const shown = await page.$$eval(rot, (ns) => ns.map((n) => parseFloat(n.value)));
  check(near(shown[0], 30) && near(shown[1], 90) && near(shown[2], 0), `the form shows the angles back (${shown})`);

  // the derived cone edited from the form: the stored cosine follows (read through /rpc)
  await click(page, `${spotForm} input[data-field="cone"]`, { clickCount: 3 });
  await page.keyboard.type('90');
  await page.keyboard.press('Tab');
  await until('the cone edit', async () => near((await rpc(url, 'component.get', { object: 'Beacon', kind: 'game:spot' })).body.cone, 90));
  check(true, 'editing the derived cone wrote it through set');
  check(pageErrors.length === 0, `no errors in the page${pageErrors.length ? `: ${pageErrors.join(' | ')}` : ''}`);
} catch (e) {
  check(false, e.stack || String(e));
} finally {
  if (browser) await browser.close().catch(() => {});
  if (server) server.child.kill('SIGTERM');
}
console.log(`${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
