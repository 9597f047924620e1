// The jobs list: filter by status, type and namespace, search by name,
// paginated on the server (per_page/next_token) so 10,000 jobs stay fast;
// the page shown is a blocking query, so it updates live. Children of
// periodic and parameterized jobs are listed on their parent's page (as
// Nomad's UI does) unless asked for: a job launched every minute would
// otherwise push every other job off the first page within the hour.
import { get, anonymousRefused } from './api.js';
import { html, set, status, when, jobHref, qs } from './util.js';

const PER_PAGE = 50;

const userFilter = (f) => f.status || f.type || f.q;

function filterExpr(f) {
  const parts = [];
  if (!f.children) parts.push('ParentID == ""');
  if (f.status) parts.push(`Status == ${JSON.stringify(f.status)}`);
  if (f.type) parts.push(`Type == ${JSON.stringify(f.type)}`);
  if (f.q) parts.push(`(ID contains ${JSON.stringify(f.q)} or Name contains ${JSON.stringify(f.q)})`);
  return parts.join(' and ');
}

function summaryBar(s) {
  const t = { queued: 0, starting: 0, running: 0, failed: 0, lost: 0, complete: 0, unknown: 0 };
  for (const g of Object.values((s && s.Summary) || {})) {
    t.queued += g.Queued || 0; t.starting += g.Starting || 0; t.running += g.Running || 0;
    t.failed += g.Failed || 0; t.lost += g.Lost || 0; t.complete += g.Complete || 0; t.unknown += g.Unknown || 0;
  }
  const total = Object.values(t).reduce((a, b) => a + b, 0);
  if (!total) return html`<span class="muted">no allocations</span>`;
  const title = Object.entries(t).filter(([, v]) => v).map(([k, v]) => `${v} ${k}`).join(', ');
  return html`<div class="bar" title="${title}">${Object.entries(t).filter(([, v]) => v).map(([k, v]) => html`<span class="${k}" style="width:${(100 * v) / total}%"></span>`)}</div>`;
}

export function list(ctx) {
  const q = ctx.query;
  const f = { status: q.get('status') || '', type: q.get('type') || '', namespace: q.get('namespace') || '*', q: q.get('search') || '', next: q.get('next_token') || '', children: q.get('children') === '1' };
  // prev holds the tokens of the pages before this one ('-' is the first).
  const prev = (q.get('prev') || '').split(',').filter(Boolean).map((x) => (x === '-' ? '' : x));
  const toks = (l) => l.map((x) => x || '-').join(',');
  ctx.main.innerHTML = String(html`
    <h1>Jobs <span class="actions"><a class="btn" href="/ui/jobs/run" data-cap="submit-job" data-ns="${f.namespace}">Run job</a></span></h1>
    <div id="err"></div>
    <form class="filters" id="jobfilters">
      <input data-search name="search" placeholder="Filter by name" value="${f.q}" aria-label="Filter jobs by name">
      <select name="status" aria-label="Status">${['', 'pending', 'running', 'dead'].map((s) => html`<option value="${s}" ${s === f.status ? 'selected' : ''}>${s || 'Any status'}</option>`)}</select>
      <select name="type" aria-label="Type">${['', 'service', 'batch', 'system', 'sysbatch'].map((s) => html`<option value="${s}" ${s === f.type ? 'selected' : ''}>${s || 'Any type'}</option>`)}</select>
      <select name="namespace" id="nsselect" aria-label="Namespace"><option value="*">All namespaces</option>${f.namespace !== '*' ? html`<option selected>${f.namespace}</option>` : ''}</select>
      <label class="muted"><input type="checkbox" name="children" id="showchildren" value="1" ${f.children ? 'checked' : ''}> Child jobs</label>
    </form>
    <div class="tablewrap"><table class="nav" id="jobs"><thead><tr><th>Name</th><th>Status</th><th>Type</th><th class="hide-sm">Namespace</th><th class="hide-sm">Priority</th><th>Allocations</th><th class="hide-sm">Submitted</th></tr></thead><tbody id="jobrows"><tr><td colspan="7" class="muted">Loading…</td></tr></tbody></table></div>
    <div class="pager" id="pager"></div>`);
  const form = document.getElementById('jobfilters');
  const apply = () => {
    const d = Object.fromEntries(new FormData(form));
    ctx.navigate('/ui/jobs' + qs({ search: d.search, status: d.status, type: d.type, namespace: d.namespace === '*' ? '' : d.namespace, children: d.children }), true);
  };
  let t = 0;
  form.addEventListener('input', (e) => { clearTimeout(t); t = setTimeout(apply, e.target.tagName === 'INPUT' ? 250 : 0); });
  form.addEventListener('submit', (e) => { e.preventDefault(); apply(); });
  if (f.q) { const i = form.querySelector('input'); i.focus(); i.setSelectionRange(f.q.length, f.q.length); }
  get('/v1/namespaces').then((nss) => {
    const sel = document.getElementById('nsselect');
    if (!sel) return;
    sel.innerHTML = String(html`<option value="*">All namespaces</option>${(nss || []).map((n) => html`<option ${n.Name === f.namespace ? 'selected' : ''}>${n.Name}</option>`)}`);
  }).catch(() => {});

  const path = '/v1/jobs' + qs({ namespace: f.namespace, per_page: PER_PAGE, next_token: f.next, filter: filterExpr(f) });
  ctx.watch(path, (jobs, res) => {
    const rows = (jobs || []).map((j) => html`<tr data-job="${j.ID}">
      <td><a href="${jobHref(j.ID, j.Namespace)}">${j.Name || j.ID}</a>${j.ParentID ? html` <span class="muted">child</span>` : ''}${j.Periodic ? html` <span class="badge">periodic</span>` : ''}${j.ParameterizedJob ? html` <span class="badge">parameterized</span>` : ''}</td>
      <td>${status(j.Stop && j.Status !== 'dead' ? 'stopping' : j.Status)}</td><td>${j.Type}</td><td class="hide-sm">${j.Namespace}</td><td class="hide-sm">${j.Priority}</td>
      <td>${summaryBar(j.JobSummary)}</td><td class="hide-sm">${when(j.SubmitTime)}</td></tr>`);
    set('jobrows', rows.length ? html`${rows}` : html`<tr><td colspan="7" class="muted">${userFilter(f) ? 'No job matches these filters.' : 'No jobs yet. '}<a href="/ui/jobs/run" data-cap="submit-job" data-ns="${f.namespace}">Run one</a></td></tr>`);
    if (!rows.length) {
      anonymousRefused().then((refused) => {
        if (refused) set('jobrows', html`<tr><td colspan="7" class="muted" id="signin-hint">ACLs are enabled and no token is set: jobs an anonymous request may not read are hidden. <a href="/ui/settings/tokens">Sign in</a> with a token.</td></tr>`);
      });
    }
    const base = { search: f.q, status: f.status, type: f.type, namespace: f.namespace === '*' ? '' : f.namespace, children: f.children ? '1' : '' };
    const prevTok = prev.length ? prev[prev.length - 1] : null;
    set('pager', html`
      ${prev.length ? html`<a class="btn" href="${'/ui/jobs' + qs({ ...base, next_token: prevTok, prev: toks(prev.slice(0, -1)) })}">← Previous</a>` : ''}
      ${res.next ? html`<a class="btn" id="nextpage" href="${'/ui/jobs' + qs({ ...base, next_token: res.next, prev: toks([...prev, f.next]) })}">Next →</a>` : ''}
      <span class="muted">${(jobs || []).length} shown${res.next || prev.length ? `, page ${prev.length + 1}` : ''}</span>`);
  });
}
