// Small helpers shared by the pages: escaping, IDs, times, statuses.
export function esc(v) {
  return String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

// html is a tagged template that escapes every interpolated value except
// arrays (joined) and values wrapped with raw().
export function html(strings, ...vals) {
  let out = strings[0];
  vals.forEach((v, i) => { out += piece(v) + strings[i + 1]; });
  return new Raw(out);
}
class Raw { constructor(s) { this.s = s; } toString() { return this.s; } }
export const raw = (s) => new Raw(s);
function piece(v) {
  if (v instanceof Raw) return v.s;
  if (Array.isArray(v)) return v.map(piece).join('');
  if (v === null || v === undefined || v === false) return '';
  return esc(v);
}

export const short = (id) => (id || '').slice(0, 8);

// id renders a short monospace ID (full one on hover) with a copy button;
// href makes it a link.
export function id(full, href) {
  if (!full) return raw('<span class="muted">–</span>');
  const s = short(full);
  const label = href ? html`<a href="${href}">${s}</a>` : html`${s}`;
  return html`<span class="id" title="${full}">${label}<button class="copy" data-copy="${full}" title="Copy ${full}" aria-label="Copy ID"><svg viewBox="0 0 16 16" aria-hidden="true"><path fill="currentColor" d="M4 4V1.5C4 .7 4.7 0 5.5 0h9C15.3 0 16 .7 16 1.5v9c0 .8-.7 1.5-1.5 1.5H12v2.5c0 .8-.7 1.5-1.5 1.5h-9C.7 16 0 15.3 0 14.5v-9C0 4.7.7 4 1.5 4H4Zm1.5 0h5c.8 0 1.5.7 1.5 1.5v5h2.5v-9h-9V4Zm-4 1.5v9h9v-9h-9Z"/></svg></button></span>`;
}

// toDate accepts Nomad's nanosecond integers and RFC 3339 strings.
export function toDate(t) {
  if (t === null || t === undefined || t === 0 || t === '') return null;
  if (typeof t === 'number') return new Date(t > 1e14 ? t / 1e6 : t);
  const d = new Date(t);
  if (isNaN(d) || d.getFullYear() < 1971) return null;
  return d;
}

export function rel(d) {
  const s = Math.round((Date.now() - d.getTime()) / 1000);
  const a = Math.abs(s);
  let v;
  if (a < 5) return 'just now';
  if (a < 60) v = `${a}s`;
  else if (a < 3600) v = `${Math.floor(a / 60)}m`;
  else if (a < 86400) v = `${Math.floor(a / 3600)}h`;
  else v = `${Math.floor(a / 86400)}d`;
  return s >= 0 ? `${v} ago` : `in ${v}`;
}

// when renders a relative time with the exact one on hover; the shell
// refreshes every <time data-t> periodically.
export function when(t) {
  const d = toDate(t);
  if (!d) return raw('<span class="muted">–</span>');
  return html`<time data-t="${d.getTime()}" datetime="${d.toISOString()}" title="${d.toLocaleString()}">${rel(d)}</time>`;
}

export function status(s, extra = '') {
  const v = s || 'unknown';
  return html`<span class="badge st-${v.replace(/[^a-z0-9-]/gi, '')} ${extra}">${v}</span>`;
}

export function bytes(n) {
  if (!n && n !== 0) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${u[i]}`;
}

export function dur(ns) {
  if (!ns) return '0s';
  const s = ns / 1e9;
  if (s < 60) return `${+s.toFixed(1)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${Math.round(s % 60)}s`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

// jobHref is Nomad's job URL, <id>@<namespace>; the namespace is left out
// for "default" unless the ID has an "@" of its own (the page splits at the
// last one: "team@x" alone would read as job "team" in namespace "x").
export const jobHref = (jid, ns, tab) => {
  const withNS = (ns && ns !== 'default') || String(jid).includes('@');
  const base = `/ui/jobs/${encodeURIComponent(jid)}${withNS ? '@' + encodeURIComponent(ns || 'default') : ''}`;
  return tab ? `${base}/${tab}` : base;
};
export const allocHref = (aid) => `/ui/allocations/${aid}`;
export const nodeHref = (nid) => `/ui/clients/${nid}`;

// errText is an error's message; a refusal (403) says how to get past it.
export function errText(e) {
  const text = e.text || e.message || String(e);
  if (e.status !== 403) return html`${text}`;
  return html`${text}. <a href="/ui/settings/tokens">Sign in</a> with a token whose policies allow this.`;
}

export function errBox(e) {
  if (!e) return '';
  return html`<div class="error" role="alert">${errText(e)}</div>`;
}

// b64 encodes text as UTF-8 in base64 (btoa alone throws on any character
// outside Latin-1).
export function b64(s) {
  let bin = '';
  for (const c of new TextEncoder().encode(s)) bin += String.fromCharCode(c);
  return btoa(bin);
}

export function toast(msg) {
  const t = document.getElementById('toast');
  t.textContent = msg;
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 2500);
}

export function qs(obj) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(obj)) if (v !== undefined && v !== null && v !== '') p.set(k, v);
  const s = p.toString();
  return s ? `?${s}` : '';
}

export function sortBy(list, key) {
  return [...(list || [])].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

// set fills the element with id with content, if it is still on the page.
export function set(elID, content) {
  const el = document.getElementById(elID);
  if (el) el.innerHTML = String(content);
  return el;
}
