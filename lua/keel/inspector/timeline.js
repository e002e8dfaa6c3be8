// timeline.js — a served replay's timeline under the scene view (design/replay.md): a slider over
// the recorded frames, play/pause, step back and forward, keyframes marked, and a red mark where
// verification failed. It asks replay.info once; a world that is not a replay keeps it hidden.
// Seeks restore the served world in place: the rest of the page follows it through its events.

import { call, token } from './rpc.js';

const el = document.getElementById('timeline');
const $t = (sel) => el.querySelector(sel);
const tl = { info: null, playing: null, busy: false };
window.keelTimeline = tl; // for the browser test and the console

function mark(cls, frame, frames, title) {
  const m = document.createElement('span');
  m.className = cls;
  m.style.left = `${frames ? (100 * frame) / frames : 0}%`;
  m.title = title;
  $t('.marks').appendChild(m);
}

function show(info) {
  tl.info = info;
  el.hidden = false;
  const slider = $t('input[type=range]');
  slider.max = String(info.frames);
  slider.value = String(info.frame);
  $t('.frame').textContent = `frame ${info.frame} / ${info.frames}`;
  $t('.marks').textContent = '';
  for (const k of info.keyframes || []) mark('key', k, info.frames, `keyframe ${k}`);
  if (info.diverged) {
    mark('diverged', info.diverged, info.frames, `verification failed at frame ${info.diverged}`);
    const d = (info.differences || [])[0];
    $t('.status').textContent = `Diverged at frame ${info.diverged}` +
      (d ? `: ${d.kind || 'entity'}${d.field ? '.' + d.field : ''} recorded ${d.recorded}, replayed ${d.replayed}` : '');
  }
  $t('.back').disabled = info.frame <= 0;
  $t('.fwd').disabled = info.frame >= info.frames;
}

async function run(method, params) {
  if (tl.busy) return;
  tl.busy = true;
  try {
    show(await call(method, params));
  } catch (e) {
    stop();
    $t('.status').textContent = e.text || e.message;
    try { show(await call('replay.info')); } catch (_) { /* branched meanwhile */ }
  } finally {
    tl.busy = false;
  }
}

function stop() {
  clearInterval(tl.playing);
  tl.playing = null;
  $t('.play').textContent = 'Play';
}

export async function start() {
  if (!token) return; // the page says what to do (main.js); nothing is asked without one
  let info;
  try { info = await call('replay.info'); } catch (_) { return; } // not a replay
  $t('input[type=range]').addEventListener('change', (e) => run('replay.seek', { frame: Number(e.target.value) }));
  $t('.back').addEventListener('click', () => run('replay.seek', { frame: Math.max(0, tl.info.frame - 1) }));
  $t('.fwd').addEventListener('click', () => run('replay.step', { frames: 1 }));
  $t('.play').addEventListener('click', () => {
    if (tl.playing) return stop();
    $t('.play').textContent = 'Pause';
    tl.playing = setInterval(() => {
      if (tl.info.frame >= tl.info.frames) return stop();
      run('replay.step', { frames: 1 });
    }, 1000 / 30);
  });
  $t('.branch').addEventListener('click', async () => {
    stop();
    try {
      const b = await call('replay.branch');
      el.hidden = true;
      document.getElementById('message').textContent = `live branch from frame ${b.frame}: edits and steps apply to it`;
    } catch (e) { $t('.status').textContent = e.text || e.message; }
  });
  show(info);
}

start();
