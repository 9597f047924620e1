// The public HTTP API, nothing else: requests carry the token from
// localStorage as X-Nomad-Token; watch() is the blocking-query loop.
const TOKEN_KEY = 'drover.token';

export const token = {
  get: () => localStorage.getItem(TOKEN_KEY) || '',
  set: (v) => v ? localStorage.setItem(TOKEN_KEY, v) : localStorage.removeItem(TOKEN_KEY),
};

export class APIError extends Error {
  constructor(status, text, path) {
    super(`${status}: ${text}`);
    this.status = status; this.text = text; this.path = path;
  }
}

function headers(json) {
  const h = {};
  const t = token.get();
  if (t) h['X-Nomad-Token'] = t;
  if (json) h['Content-Type'] = 'application/json';
  return h;
}

// req sends one request; it resolves to {data, index, next} or throws an
// APIError carrying the server's plain-text message.
export async function req(method, path, body, opts = {}) {
  const r = await fetch(path, {
    method, headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: opts.signal,
  });
  if (!r.ok) {
    const text = (await r.text()).trim();
    throw new APIError(r.status, text || r.statusText, path);
  }
  if (opts.raw) return r;
  const ct = r.headers.get('Content-Type') || '';
  const text = await r.text();
  let data = text;
  if (ct.includes('json') || /^[\[{]/.test(text)) {
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = text; }
  }
  return {
    data,
    index: Number(r.headers.get('X-Nomad-Index') || 0),
    next: r.headers.get('X-Nomad-NextToken') || '',
  };
}

export const get = (p, o) => req('GET', p, undefined, o).then((r) => r.data);
export const put = (p, b, o) => req('PUT', p, b === undefined ? {} : b, o).then((r) => r.data);
export const del = (p, o) => req('DELETE', p, undefined, o).then((r) => r.data);

// anonymousRefused resolves to true when ACLs are on and no token is set:
// lists then hide what an anonymous request may not read, and a page says
// so instead of "nothing here". (/v1/acl/token/self answers 400 when ACLs
// are off, 403 for an anonymous request when they are on.)
export function anonymousRefused() {
  if (token.get()) return Promise.resolve(false);
  return req('GET', '/v1/acl/token/self').then(() => false, (e) => e.status === 403);
}

const sleep = (ms, signal) => new Promise((res) => {
  const t = setTimeout(res, ms);
  signal && signal.addEventListener('abort', () => { clearTimeout(t); res(); }, { once: true });
});

// watch calls onData with the first answer and again each time the
// endpoint's index moves (a blocking query with ?index=N waits on the
// server for a change). An index that goes back (snapshot restore) starts
// over. Endpoints without an index are polled every pollMs. Errors go to
// onError and are retried with backoff; onData is called again on recovery.
export function watch(path, onData, onError, signal, pollMs = 3000) {
  let index = 0;
  let failed = false;
  (async () => {
    let backoff = 500;
    let first = true;
    while (!signal.aborted) {
      try {
        const sep = path.includes('?') ? '&' : '?';
        const url = index ? `${path}${sep}index=${index}&wait=60s` : path;
        const res = await req('GET', url, undefined, { signal });
        backoff = 500;
        if (res.index < index) index = 0;
        if (first || failed || res.index !== index) {
          first = false; failed = false;
          index = res.index;
          onData(res.data, res);
        }
        if (!res.index) await sleep(pollMs, signal);
      } catch (e) {
        if (signal.aborted) return;
        failed = true;
        onError(e);
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, 10000);
      }
    }
  })();
}
