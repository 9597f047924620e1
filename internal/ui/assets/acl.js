// What the signed-in token may do, so pages offer only the actions it
// allows (as Nomad's UI does) instead of buttons that answer "Permission
// denied". An element that needs a capability says so:
//   data-cap="submit-job" data-ns="prod"   a namespace capability there
//   data-cap="scale-job|submit-job"        any one of them
//   data-ns="*" (or none)                  in at least one namespace
//   data-cap="node-write"                  the node block's write level
// An element the token may not use gets data-denied (hidden by the style
// sheet); until the answer is known every data-cap element is hidden
// (body[data-caps="pending"]). The server still decides: when the token's
// rights cannot be read (no RulesJSON, an unreachable server, a token the
// agent refuses) everything is offered and a refusal shows as before.
import { req, token } from './api.js';

const ALL = { all: true };
let cached = null; // {tok, at, promise}
let current = null;

// abilities resolves what the stored token may do; the answer is kept for
// 30 s per token (sign in and sign out change the token, so the key).
export function abilities() {
  const t = token.get();
  if (cached && cached.tok === t && Date.now() - cached.at < 30000) return cached.promise;
  const promise = resolve().catch(() => ALL);
  cached = { tok: t, at: Date.now(), promise };
  promise.then((ab) => { if (cached && cached.promise === promise) { current = ab; apply(); } });
  return promise;
}

// forget drops the kept answer (after a refusal: the policies changed).
export function forget() { cached = null; }

async function resolve() {
  let self = null;
  try {
    self = (await req('GET', '/v1/acl/token/self')).data;
  } catch (e) {
    if (e.status === 400) return ALL; // ACLs are disabled: everything is allowed
    if (e.status !== 403 || token.get()) return ALL; // cannot tell: the server decides
    // Anonymous with ACLs on: the anonymous policy's rules apply.
  }
  if (self && self.Type === 'management') return ALL;
  // A token reads the policies it holds (roles' included); the anonymous
  // request lists the anonymous policy, if there is one.
  const list = (await req('GET', '/v1/acl/policies')).data || [];
  const pols = await Promise.all(list.map((p) => req('GET', `/v1/acl/policy/${encodeURIComponent(p.Name)}`).then((r) => r.data)));
  if (pols.some((p) => !p || !p.RulesJSON)) return ALL;
  return compile(pols.map((p) => p.RulesJSON));
}

const RANK = { '': 0, list: 1, read: 2, write: 3 };
const literal = (p) => p.replace(/\*/g, '').length;

// compile merges the policies as the server does: a namespace's
// capabilities are the union of its blocks' across policies; a name is
// looked up exactly, else in the matching glob with the most literal
// characters; a deny there denies everything. Of the simple blocks the
// strongest level wins unless one denies.
export function compile(rules) {
  const ns = new Map();
  let node = '';
  for (const r of rules) {
    for (const n of r.Namespaces || []) {
      if (!ns.has(n.Name)) ns.set(n.Name, new Set());
      for (const c of n.Capabilities || []) ns.get(n.Name).add(c);
    }
    const p = r.Node && r.Node.Policy;
    if (p && node !== 'deny') node = p === 'deny' ? 'deny' : (RANK[p] > RANK[node] ? p : node);
  }
  const globs = [...ns.keys()].filter((k) => k.includes('*'))
    .sort((a, b) => literal(b) - literal(a) || (a < b ? -1 : a > b ? 1 : 0))
    .map((g) => [new RegExp('^' + g.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*') + '$'), ns.get(g)]);
  return { all: false, ns, globs, node };
}

function capsIn(ab, name) {
  if (ab.ns.has(name) && !name.includes('*')) return ab.ns.get(name);
  for (const [re, caps] of ab.globs) if (re.test(name)) return caps;
  return null;
}

// can reports whether ab allows cap in namespace ns ('*' or empty: in any).
export function can(ab, cap, ns) {
  if (!ab || ab.all) return true;
  if (cap === 'node-write') return ab.node === 'write';
  if (!ns || ns === '*') return [...ab.ns.values()].some((s) => s.has(cap) && !s.has('deny'));
  const s = capsIn(ab, ns);
  return !!s && !s.has('deny') && s.has(cap);
}

// apply marks every data-cap element under root allowed or denied.
export function apply(root = document) {
  if (!current) { document.body.dataset.caps = 'pending'; return; }
  for (const el of root.querySelectorAll('[data-cap]')) {
    const ok = el.dataset.cap.split('|').some((c) => can(current, c, el.dataset.ns));
    el.toggleAttribute('data-denied', !ok);
  }
  for (const el of root.querySelectorAll('[data-cap-note]')) {
    const ok = can(current, el.dataset.capNote, el.dataset.ns);
    const text = ok ? '' : 'Read only: your token may not submit jobs here.';
    if (el.textContent !== text) el.textContent = text;
  }
  document.body.dataset.caps = 'ready';
}

// watchDOM applies the answer to every element as pages render them.
export function watchDOM() {
  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    queueMicrotask(() => { queued = false; apply(); });
  }).observe(document.body, { childList: true, subtree: true, attributes: true, attributeFilter: ['data-cap', 'data-ns'] });
}

// refresh is called on each navigation: the answer is read again when the
// token changed or the kept one is old; the old answer applies meanwhile
// unless the token changed.
export function refresh() {
  const t = token.get();
  if (!cached || cached.tok !== t) { current = null; apply(); }
  return abilities();
}
