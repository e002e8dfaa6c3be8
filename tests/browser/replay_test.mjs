// replay_test.mjs — a served replay's timeline in headless Chromium (design/replay.md): record the
// demo, `keel replay FILE --serve`, scrub the slider to a past frame and see that frame's values in
// the component form, branch and edit the live world; then a recording of a kind that reads
// os.clock(): the timeline marks in red where verification failed.
//   node replay_test.mjs KEEL DEMO_SCENE
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { check, click, chromium, freePort, results, rpc, startKeel, until } from './lib.mjs';

const [keelBin, scene] = process.argv.slice(2);
if (!keelBin || !scene) {
  console.error('usage: node replay_test.mjs KEEL DEMO_SCENE');
  process.exit(2);
}

function serveReplay(file, port, extra = []) {
  return startKeel(keelBin, ['replay', file, '--serve', String(port), ...extra], 60000);
}

const dir = mkdtempSync(join(tmpdir(), 'keel-replay-'));
const servers = [];
let browser;
const position = 'section.comp[data-kind="core:transform"] input[data-field="position"]';
try {
  const rec = join(dir, 'demo.keelrec');
  execFileSync(keelBin, ['run', scene, '--frames', '300', '--record', rec, '--keyframe-every', '100']);
  const server = serveReplay(rec, await freePort());
  servers.push(server);
  const url = await server.url;
  browser = await puppeteer.launch({ executablePath: chromium, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.setViewport({ width: 1400, height: 820 });
  await page.goto(url);
  await page.waitForSelector('body.ready', { timeout: 30000 });
  await until('the timeline', () => page.$eval('#timeline', (e) => !e.hidden));
  check(true, 'a served replay shows its timeline');
  const keys = await page.$$eval('#timeline .marks .key', (l) => l.length);
  check(keys === 4, `the keyframes are marked (${keys}: 0, 100, 200, 300)`);

  // select the Player, whose position moves every frame
  await page.$eval('#tree input[type=search]', (e) => { e.value = 'Player'; e.dispatchEvent(new Event('input')); });
  await until('the search result', () => page.$$eval('#tree .row .name', (ns) => ns.length === 1 && ns[0].textContent === 'Player'));
  await page.evaluate(() => document.querySelector('#tree .row').click());
  await page.waitForSelector(position, { timeout: 20000 });

  const scrub = async (frame) => {
    await page.$eval('#timeline input[type=range]', (e, f) => { e.value = String(f); e.dispatchEvent(new Event('change')); }, frame);
    await until(`the replay at frame ${frame}`, async () => (await rpc(url, 'replay.info')).frame === frame);
    const want = (await rpc(url, 'component.get', { object: 'Player', kind: 'core:transform' })).body.position[0];
    await until(`the form at frame ${frame}`, () => page.$eval(position, (e, v) => Math.abs(Number(e.value) - v) < 1e-3, want));
    return want;
  };
  const at240 = await scrub(240);
  const at120 = await scrub(120);
  check(at120 !== at240, `scrubbing back to frame 120 shows its value (${at120}, at 240: ${at240})`);
  check((await page.$eval('#timeline .frame', (e) => e.textContent)) === 'frame 120 / 300', 'the timeline says frame 120');
  check(await scrub(240) === at240 && await scrub(120) === at120, 'the same frame shows the same values again');

  // branch: the served world becomes live at frame 120
  await click(page, '#timeline .branch');
  await until('the timeline to go', () => page.$eval('#timeline', (e) => e.hidden));
  await rpc(url, 'component.set', { object: 'Player', kind: 'game:health', fields: { value: 7 } });
  const hp = (await rpc(url, 'component.get', { object: 'Player', kind: 'game:health' })).body.value;
  check(hp === 7, 'the branch takes edits');
  check(pageErrors.length === 0, `no page errors (${pageErrors.join('; ')})`);

  // a diverging recording: the red mark
  const kinds = join(dir, 'kinds');
  mkdirSync(kinds);
  writeFileSync(join(kinds, 'clocky.lua'), `local keel = require "keel"
keel.kind{ key = "br:clocky", version = 1, multiplicity = "one", fields = { { "t", "float" }, { "v", "float" } },
  update = function(self, e, dt) self.t = self.t + dt; if self.t > 1 then self.v = os.clock() end end }
`);
  writeFileSync(join(dir, 'clock.yaml'), `keel: 1
scene:
  uuid: 0b0b0b0b-0000-4000-8000-000000000001
  name: Clock
root: []
entities:
  - uuid: 0b0b0b0b-0000-4000-8000-000000000002
    name: Clock
    components:
      - kind: br:clocky
        version: 1
        slot: 0
        body: {}
`);
  const crec = join(dir, 'clock.keelrec');
  execFileSync(keelBin, ['run', join(dir, 'clock.yaml'), '--kinds', kinds, '--frames', '120', '--record', crec]);
  const s2 = serveReplay(crec, await freePort(), ['--kinds', kinds]);
  servers.push(s2);
  const url2 = await s2.url;
  await page.goto(url2);
  await until('the timeline', () => page.$eval('#timeline', (e) => !e.hidden));
  // frame 100 is re-simulated from keyframe 0 (the next one is the last frame's): verified on the way
  await page.$eval('#timeline input[type=range]', (e) => { e.value = '100'; e.dispatchEvent(new Event('change')); });
  await until('the divergence mark', () => page.$$eval('#timeline .marks .diverged', (l) => l.length === 1));
  const info = await rpc(url2, 'replay.info');
  check(info.diverged === 60, `verification failed at frame 60 (t passes 1 at the 60th step) (${info.diverged})`);
  const title = await page.$eval('#timeline .marks .diverged', (e) => e.title);
  check(title.includes('60'), `the red mark says where ("${title}")`);
  const status = await page.$eval('#timeline .status', (e) => e.textContent);
  check(/Diverged/.test(status) && status.includes('br:clocky.v'), `the timeline names the component ("${status}")`);
} catch (e) {
  console.log(`FAILED: ${e.stack || e}`);
  results.failed++;
} finally {
  if (browser) await browser.close();
  for (const s of servers) s.child.kill();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
