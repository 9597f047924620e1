// Variables (Nomad's /ui/variables): the paths a token may list across
// namespaces, filtered by path prefix, and one variable's items with the
// values hidden until asked for. Reading only: variables are written with
// `drover var put` or the API.
import { html, set, when, qs } from './util.js';

// varHref is Nomad's variable URL, /ui/variables/var/<path>@<namespace>.
export const varHref = (path, ns) => `/ui/variables/var/${path.split('/').map(encodeURIComponent).join('/')}@${encodeURIComponent(ns || 'default')}`;

export function list(ctx) {
  const prefix = ctx.query.get('prefix') || '';
  ctx.main.innerHTML = String(html`<h1>Variables</h1><div id="err"></div>
    <form class="filters" id="varfilter"><input data-search name="prefix" placeholder="Filter by path prefix" value="${prefix}" aria-label="Filter variables by path prefix"></form>
    <div class="tablewrap"><table class="nav" id="vars"><thead><tr><th>Path</th><th>Namespace</th><th class="hide-sm">Modified</th></tr></thead><tbody id="varrows"><tr><td colspan="3" class="muted">Loading…</td></tr></tbody></table></div>`);
  const form = document.getElementById('varfilter');
  let t = 0;
  const apply = () => ctx.navigate('/ui/variables' + qs({ prefix: form.prefix.value.trim() }), true);
  form.addEventListener('input', () => { clearTimeout(t); t = setTimeout(apply, 250); });
  form.addEventListener('submit', (e) => { e.preventDefault(); apply(); });
  if (prefix) { const i = form.prefix; i.focus(); i.setSelectionRange(prefix.length, prefix.length); }
  ctx.watch('/v1/vars' + qs({ namespace: '*', prefix }), (l) => {
    const rows = [...(l || [])].sort((a, b) => (a.Path < b.Path ? -1 : a.Path > b.Path ? 1 : a.Namespace < b.Namespace ? -1 : 1));
    set('varrows', rows.length ? html`${rows.map((v) => html`<tr data-var="${v.Path}"><td><a href="${varHref(v.Path, v.Namespace)}">${v.Path}</a></td><td>${v.Namespace}</td><td class="hide-sm">${when(v.ModifyTime)}</td></tr>`)}`
      : html`<tr><td colspan="3" class="muted">${prefix ? `No variable path starts with ${prefix}.` : 'No variables (or none this token may list). Write one with drover var put <path> key=value.'}</td></tr>`);
  });
}

export function page(ctx, rawPath) {
  const at = rawPath.lastIndexOf('@');
  const [path, ns] = at > 0 ? [rawPath.slice(0, at), rawPath.slice(at + 1)] : [rawPath, 'default'];
  ctx.main.innerHTML = String(html`<div class="crumbs"><a href="/ui/variables">Variables</a> / ${ns}</div><h1>${path}</h1><div id="err"></div><div id="var"></div>`);
  let shown = false;
  let last = null;
  const draw = () => {
    const v = last;
    const items = Object.entries(v.Items || {}).sort();
    set('var', html`<div class="panel"><dl class="kv"><dt>Namespace</dt><dd>${v.Namespace}</dd><dt>Created</dt><dd>${when(v.CreateTime)}</dd><dt>Modified</dt><dd>${when(v.ModifyTime)}</dd><dt>Check-and-set index</dt><dd>${v.ModifyIndex}</dd></dl></div>
      <h2>Items <button data-act="showvals" id="showvals">${shown ? 'Hide values' : 'Show values'}</button></h2>
      <div class="tablewrap"><table id="varitems"><thead><tr><th>Key</th><th>Value</th></tr></thead><tbody>${items.map(([k, val]) => html`<tr data-key="${k}"><td class="id">${k}</td><td class="id" style="white-space:pre-wrap">${shown ? val : '••••••••'}</td></tr>`)}${items.length ? '' : html`<tr><td colspan="2" class="muted">No items.</td></tr>`}</tbody></table></div>`);
  };
  ctx.on('showvals', () => { shown = !shown; draw(); });
  ctx.watch(`/v1/var/${path.split('/').map(encodeURIComponent).join('/')}${qs({ namespace: ns })}`, (v) => { last = v; draw(); }, 'err',
    { notFound: 'Variable not found', detail: `No variable ${path} in namespace ${ns}.` });
}
