// The shell: router (Nomad's /ui/ URLs), navigation, global search,
// copy buttons, relative-time refresh and keyboard navigation. Each page
// module renders into <main> and watches the API through ctx.watch; a
// navigation aborts the previous page's watches.
import { watch, get, APIError, token } from './api.js';
import { html, esc, set, errBox, errText, rel, toast, jobHref, allocHref, nodeHref } from './util.js';
import * as jobs from './jobs.js';
import * as job from './job.js';
import * as alloc from './alloc.js';
import * as nodes from './nodes.js';
import * as cluster from './cluster.js';
import * as vars from './vars.js';
import { refresh as refreshCaps, forget as forgetCaps, watchDOM } from './acl.js';

const routes = [
  [/^\/ui\/?$/, () => { navigate('/ui/jobs', true); }],
  [/^\/ui\/jobs\/?$/, jobs.list, 'jobs'],
  [/^\/ui\/jobs\/run\/?$/, job.run, 'run'],
  [/^\/ui\/jobs\/([^/]+)(?:\/(allocations|evaluations|deployments|versions|definition))?\/?$/, job.page, 'jobs'],
  [/^\/ui\/allocations\/([^/]+)\/?$/, alloc.page, 'jobs'],
  [/^\/ui\/allocations\/([^/]+)\/fs(\/.*)?$/, alloc.fs, 'jobs'],
  [/^\/ui\/allocations\/([^/]+)\/([^/]+)\/(logs|exec)\/?$/, alloc.task, 'jobs'],
  [/^\/ui\/allocations\/([^/]+)\/([^/]+)\/fs(\/.*)?$/, alloc.taskfs, 'jobs'],
  [/^\/ui\/allocations\/([^/]+)\/([^/]+)\/?$/, alloc.task, 'jobs'],
  [/^\/ui\/clients\/?$/, nodes.list, 'clients'],
  [/^\/ui\/clients\/([^/]+)\/?$/, nodes.page, 'clients'],
  [/^\/ui\/variables\/?$/, vars.list, 'variables'],
  [/^\/ui\/variables\/var\/(.+?)\/?$/, vars.page, 'variables'],
  [/^\/ui\/servers\/?$/, cluster.servers, 'servers'],
  [/^\/ui\/evaluations\/?$/, cluster.evals, 'evaluations'],
  [/^\/ui\/topology\/?$/, cluster.topology, 'topology'],
  [/^\/ui\/settings\/tokens\/?$/, cluster.tokens, 'tokens'],
];

let current = null; // {controller, actions}

// notFoundPage replaces the page with a clear "not found": a URL of a job,
// allocation or client that does not exist (or no longer does) is not a
// page of empty sections with an error retried for good.
function notFoundPage(main, title, detail) {
  main.innerHTML = String(html`<div class="notfound"><h1>${title}</h1><p class="muted">${detail}</p><p><a href="/ui/jobs">Jobs</a> · <a href="/ui/clients">Clients</a> · <a href="/ui/evaluations">Evaluations</a></p></div>`);
}

export function navigate(path, replace) {
  if (replace) history.replaceState(null, '', path); else history.pushState(null, '', path);
  render();
}

function render() {
  if (current) current.controller.abort();
  const controller = new AbortController();
  const main = document.getElementById('main');
  const path = location.pathname;
  const ctx = {
    main, signal: controller.signal, actions: {}, query: new URLSearchParams(location.search), navigate,
    // watch keeps the element errID showing the latest error of this
    // watch (cleared on the next success). With opts.notFound (the page's
    // own object: a job, an allocation, a client), a 404 ends the page's
    // queries and shows that title instead of retrying.
    watch(p, onData, errID = 'err', opts = {}) {
      watch(p, (d, res) => {
        // An action's error stays until the next action; a watch clears
        // only its own.
        const box = document.getElementById(errID);
        if (box && !box.querySelector('.act-error')) box.innerHTML = '';
        try { onData(d, res); } catch (e) { console.error(e); set(errID, errBox(e)); }
        ctx.refreshAll();
      }, (e) => {
        if (opts.notFound && e.status === 404) { ctx.notFound(opts.notFound, opts.detail || e.text); return; }
        set(errID, errBox(e));
      }, controller.signal);
    },
    notFound(title, detail) {
      controller.abort();
      notFoundPage(main, title, detail);
    },
    // refresh reads p once now and again whenever one of the page's watches
    // moves (or refreshAll is called after an action). A browser keeps six
    // connections per host: each page holds at most three blocking queries
    // and derives the rest from them.
    refreshers: [],
    refresh(p, onData, errID = 'err') {
      const run = () => get(p, { signal: controller.signal }).then((d) => { if (!controller.signal.aborted) onData(d); }, (e) => { if (!controller.signal.aborted) set(errID, errBox(e)); });
      ctx.refreshers.push(run);
      run();
    },
    refreshAll() {
      clearTimeout(ctx.refreshTimer);
      ctx.refreshTimer = setTimeout(() => ctx.refreshers.forEach((f) => f()), 50);
    },
    on(name, fn) { this.actions[name] = fn; },
  };
  current = { controller, actions: ctx.actions, refreshAll: () => ctx.refreshAll() };
  let nav = '';
  let matched = false;
  for (const [re, fn, n] of routes) {
    const m = path.match(re);
    if (!m) continue;
    matched = true;
    // A redirect (/ui/ → /ui/jobs) rendered the page it leads to: what
    // follows would undo that page's navigation highlight.
    if (!n) { fn(ctx); return; }
    nav = n;
    main.innerHTML = '';
    try { fn(ctx, ...m.slice(1).map((x) => (x === undefined ? undefined : decodeURIComponent(x)))); } catch (e) { main.innerHTML = String(errBox(e)); }
    break;
  }
  if (!matched) notFoundPage(main, 'Not found', `No page at ${path}.`);
  document.querySelectorAll('#nav a').forEach((a) => a.classList.toggle('active', a.dataset.nav === nav));
  document.getElementById('token-link').textContent = token.get() ? 'Token set' : 'Sign in';
  selected = -1;
  refreshCaps();
}

// Links inside the app navigate without reloading.
document.addEventListener('click', async (ev) => {
  const copy = ev.target.closest('[data-copy]');
  if (copy) {
    ev.preventDefault();
    try { await navigator.clipboard.writeText(copy.dataset.copy); toast('Copied ' + copy.dataset.copy); } catch (e) { toast(copy.dataset.copy); }
    return;
  }
  const act = ev.target.closest('[data-act]');
  if (act && current && current.actions[act.dataset.act]) {
    ev.preventDefault();
    if (act.dataset.confirm && !confirm(act.dataset.confirm)) return;
    act.disabled = true;
    const page = current;
    const box = document.getElementById(act.dataset.err || 'err');
    if (box && box.querySelector('.act-error')) box.innerHTML = '';
    try { await current.actions[act.dataset.act](act, ev); if (page.refreshAll) page.refreshAll(); } catch (e) {
      // A refusal means the token's rights are not what the page thought.
      if (e.status === 403) { forgetCaps(); refreshCaps(); }
      if (box) box.innerHTML = String(html`<div class="error act-error" role="alert">${act.textContent.trim()}: ${errText(e)}</div>`); else toast(e.message);
    } finally { act.disabled = false; }
    return;
  }
  const a = ev.target.closest('a[href]');
  if (a && a.getAttribute('href').startsWith('/ui/') && !ev.metaKey && !ev.ctrlKey && !ev.shiftKey && a.target !== '_blank') {
    ev.preventDefault();
    document.getElementById('search-results').hidden = true;
    navigate(a.getAttribute('href'));
  }
});
window.addEventListener('popstate', render);
// Leaving the document ends its blocking queries and streams at once, so
// they do not hold the browser's connections to the agent.
window.addEventListener('pagehide', () => { if (current) current.controller.abort(); });

// Relative times stay current.
setInterval(() => {
  document.querySelectorAll('time[data-t]').forEach((t) => { t.textContent = rel(new Date(Number(t.dataset.t))); });
}, 10000);

// Global search: /v1/search/fuzzy across jobs, nodes, allocations, evals.
const search = document.getElementById('search');
const results = document.getElementById('search-results');
let searchTimer = 0;
search.addEventListener('input', () => {
  clearTimeout(searchTimer);
  const text = search.value.trim();
  if (text.length < 2) { results.hidden = true; return; }
  searchTimer = setTimeout(async () => {
    try {
      const r = await fetch('/v1/search/fuzzy', { method: 'POST', headers: token.get() ? { 'X-Nomad-Token': token.get() } : {}, body: JSON.stringify({ Text: text, Context: 'all', Namespace: '*' }) });
      if (!r.ok) throw new APIError(r.status, await r.text(), '/v1/search/fuzzy');
      const res = await r.json();
      const m = res.Matches || {};
      const sec = (title, list, href) => (list && list.length ? html`<h4>${title}</h4>${list.slice(0, 8).map((x) => html`<a href="${href(x)}">${x.ID}${x.Scope && x.Scope.length ? html` <span class="muted">${x.Scope.join(' / ')}</span>` : ''}</a>`)}` : '');
      const out = html`${sec('Jobs', m.jobs, (x) => jobHref(x.ID, x.Scope && x.Scope[0]))}${sec('Clients', m.nodes, (x) => nodeHref(x.Scope && x.Scope[0] || x.ID))}${sec('Allocations', m.allocs, (x) => allocHref(x.Scope && x.Scope[1] || x.ID))}${sec('Task groups', m.groups, (x) => jobHref(x.Scope[1], x.Scope[0]))}${sec('Tasks', m.tasks, (x) => jobHref(x.Scope[1], x.Scope[0]))}${sec('Images', m.images, (x) => jobHref(x.Scope[1], x.Scope[0]))}${sec('Commands', m.commands, (x) => jobHref(x.Scope[1], x.Scope[0]))}`;
      results.innerHTML = String(out) || '<p class="muted" style="padding:6px 10px">No matches</p>';
      results.hidden = false;
    } catch (e) { results.innerHTML = String(errBox(e)); results.hidden = false; }
  }, 150);
});
search.addEventListener('keydown', (e) => {
  if (e.key === 'Escape') { search.blur(); results.hidden = true; }
  if (e.key === 'Enter') { const a = results.querySelector('a'); if (a) { results.hidden = true; search.value = ''; navigate(a.getAttribute('href')); } }
});
document.addEventListener('click', (e) => { if (!e.target.closest('.searchbox')) results.hidden = true; });

// Keyboard: / focuses search (or the page's filter), j/k move in the
// first navigable table, enter opens the row, g then j/c/s/e/t goes.
let selected = -1;
let gPending = 0;
document.addEventListener('keydown', (e) => {
  const tag = (e.target.tagName || '').toLowerCase();
  if (tag === 'input' || tag === 'textarea' || tag === 'select' || e.target.isContentEditable || (e.target.classList && e.target.classList.contains('term')) || e.metaKey || e.ctrlKey || e.altKey) return;
  if (e.key === '/') { e.preventDefault(); (document.querySelector('main [data-search]') || search).focus(); return; }
  if (gPending && Date.now() - gPending < 1500) {
    gPending = 0;
    const to = { j: '/ui/jobs', c: '/ui/clients', v: '/ui/variables', s: '/ui/servers', e: '/ui/evaluations', t: '/ui/topology', r: '/ui/jobs/run' }[e.key];
    if (to) { e.preventDefault(); navigate(to); }
    return;
  }
  if (e.key === 'g') { gPending = Date.now(); return; }
  const rows = [...document.querySelectorAll('main table.nav tbody tr')];
  if (!rows.length) return;
  if (e.key === 'j' || e.key === 'k') {
    selected = Math.max(0, Math.min(rows.length - 1, selected + (e.key === 'j' ? 1 : -1)));
    rows.forEach((r, i) => r.classList.toggle('sel', i === selected));
    rows[selected].scrollIntoView({ block: 'nearest' });
  } else if (e.key === 'Enter' && selected >= 0 && rows[selected]) {
    const a = rows[selected].querySelector('a[href]');
    if (a) navigate(a.getAttribute('href'));
  }
});

export { esc, get };
watchDOM();
render();
