// rpc.js — the live channel from the page: JSON-RPC calls on /rpc and the event stream on /events.
// The token comes from the URL fragment (#token=...), which the browser never sends to the server.

export const token = new URLSearchParams(location.hash.slice(1)).get('token') || '';

// A JSON-RPC error answer (or an HTTP refusal) as an exception: code, message, data as sent.
export class RpcError extends Error {
  constructor(err) {
    super(err.message || 'request failed');
    this.code = err.code;
    this.data = err.data;
  }
  // "NotFound: no entity named ..." for keel failures, the message otherwise.
  get text() {
    const code = this.data && this.data.code;
    return code ? `${code}: ${this.message}` : this.message;
  }
}

let nextId = 1;

export async function call(method, params) {
  const req = { jsonrpc: '2.0', id: nextId++, method };
  if (params !== undefined) req.params = params;
  let res;
  try {
    res = await fetch('rpc', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
      body: JSON.stringify(req),
    });
  } catch (e) {
    throw new RpcError({ code: 0, message: `the server is not answering (${e.message})` });
  }
  if (res.status !== 200) {
    const why = res.status === 401 ? 'the token is missing or wrong: open the URL keel printed' : await res.text();
    throw new RpcError({ code: res.status, message: `HTTP ${res.status}: ${why}` });
  }
  const msg = await res.json();
  if (msg.error) throw new RpcError(msg.error);
  return msg.result;
}

// Watches what `query` names ({entities, kinds}, comma-separated): onEvent(type, data) for each
// `snapshot` and `delta`, and the scene file watcher's `conflict` and `watch_error`. Returns the EventSource (close() it to stop watching).
export function watch(query, onEvent, onState) {
  const q = new URLSearchParams({ token });
  for (const [k, v] of Object.entries(query || {})) if (v) q.set(k, v);
  const es = new EventSource(`events?${q}`);
  for (const type of ['snapshot', 'delta', 'conflict', 'watch_error']) {
    es.addEventListener(type, (e) => onEvent(type, JSON.parse(e.data)));
  }
  if (onState) {
    es.onopen = () => onState(true);
    es.onerror = () => onState(false);
  }
  return es;
}
