// lib.mjs — what every browser test shares: the checks' tally, a free port, `keel serve` started
// and its URL awaited, a JSON-RPC call to it, and waiting for a condition.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';

export const chromium = process.env.KEEL_CHROMIUM || '/usr/bin/chromium';

// The tally a test exits by: results.failed > 0 fails it.
export const results = { passed: 0, failed: 0 };

export function check(ok, what) {
  if (ok) {
    results.passed++;
    console.log(`ok: ${what}`);
  } else {
    results.failed++;
    console.log(`FAILED: ${what}`);
  }
  return ok;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// Starts `keel ARGS...` and awaits the URL it prints (token included): { child, url }.
export function startKeel(keelBin, args, ms = 30000) {
  const child = spawn(keelBin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let seen = '';
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`keel ${args[0]} printed no URL in ${ms / 1000} s:\n${seen}`)), ms);
    const look = (chunk) => {
      seen += chunk;
      const m = seen.match(/(http:\/\/\S+#token=[\w.~-]+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`keel ${args[0]} exited (${code}):\n${seen}`)); });
  });
  return { child, url };
}

// Starts `keel serve FILE --port PORT EXTRA...`; `url` resolves with the URL it prints (token included).
export function startServer(keelBin, file, port, extra = []) {
  return startKeel(keelBin, ['serve', file, '--port', String(port), ...extra]);
}

export async function rpc(url, method, params) {
  const u = new URL(url);
  const token = new URLSearchParams(u.hash.slice(1)).get('token');
  const res = await fetch(new URL('/rpc', u), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const msg = await res.json();
  if (msg.error) throw new Error(`${method}: ${JSON.stringify(msg.error)}`);
  return msg.result;
}

export async function until(what, f, ms = 20000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    last = await f();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
}

// page.click(selector, options), taken again when the element was replaced between being found and
// clicked ("Node is detached from document"): the inspector redraws its panels on its own polls, so
// under load a row or button can be swapped for an identical new one in that window. The click
// itself never happened then, so taking it again is safe.
export async function click(page, selector, options) {
  for (let tries = 0; ; tries++) {
    try {
      return await page.click(selector, options);
    } catch (e) {
      if (tries >= 20 || !/detached|not clickable|No element found|No node found/i.test(String(e))) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

// Headless Chromium on the inspector at `url`, ready (body.ready): { browser, page, pageErrors },
// pageErrors collecting the page's uncaught errors and console errors for the final check.
export async function openInspector(puppeteer, url) {
  const browser = await puppeteer.launch({
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
  return { browser, page, pageErrors };
}
